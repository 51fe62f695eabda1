"""Text for the tests: the training stories when data/ has them, made-up stories otherwise.

A user's clone has no data until data.py runs, and the tests must pass there too, so
the made-up stories are varied enough to give a thousand merges and more.
"""
import random
from pathlib import Path

TRAIN_STORIES = Path(__file__).resolve().parent.parent / "data" / "train.txt"

NAMES = ["Lily", "Tom", "Ben", "Mia", "Sam", "Anna", "Max", "Zoé", "Kenji", "Ava"]
SYLLABLES = ["ba", "lo", "mi", "ta", "ri", "sun", "fle", "pa", "do", "ke", "ni", "gro", "wa", "che", "st"]
COMMON = ["the", "a", "and", "was", "to", "she", "he", "they", "it", "said", "day", "big", "little",
          "happy", "friend", "play", "park", "tree", "dog", "cat", "ball", "saw", "wanted", "very"]


def made_up_stories(size: int, seed: int = 0) -> str:
    """About `size` characters of stories: common words, invented words, names, numbers,
    punctuation, quotes, new lines and now and then an accent, a tab or an emoji."""
    rng = random.Random(seed)
    rare = ["".join(rng.choice(SYLLABLES) for _ in range(rng.randint(1, 4))) for _ in range(3000)]
    stories, total = [], 0
    while total < size:
        sentences = []
        for _ in range(rng.randint(2, 8)):
            words = [rng.choice(COMMON) if rng.random() < 0.6 else rng.choice(rare) for _ in range(rng.randint(3, 14))]
            if rng.random() < 0.3:
                words.insert(rng.randrange(len(words)), rng.choice(NAMES))
            if rng.random() < 0.1:
                words.append(str(rng.randint(0, 2024)))
            sentence = " ".join(words).capitalize() + rng.choice([".", ".", "!", "?", "..."])
            if rng.random() < 0.2:
                sentence = f'"{sentence}" said {rng.choice(NAMES)}.'
            if rng.random() < 0.03:
                sentence += rng.choice([" 🙂", " café", "\tthe end", "  twice", " 猫が好き"])
            sentences.append(sentence)
        story = " ".join(sentences)
        stories.append(story)
        total += len(story) + 2
    return "\n\n".join(stories)[:size]


def sample_bytes(size: int, offset: int = 0) -> bytes:
    """`size` bytes of stories, from `offset` in the training stories if they are there."""
    if TRAIN_STORIES.exists():
        with open(TRAIN_STORIES, "rb") as f:
            f.seek(offset)
            data = f.read(size)
        if len(data) == size:
            return data
    return made_up_stories(offset + size).encode("utf-8")[offset:offset + size]


# Emoji with joiners, skin tones and flags, CJK, combining marks (several on one
# letter), Hangul jamo, right-to-left text, a real U+FFFD, odd spaces, specials.
SCRIPTS_AND_EMOJI = ("a 👩\u200d👩\u200d👧\u200d👦 👍🏽 🇯🇵🇫🇷 猫が好き 日本語のテキスト。 e\u0301\u0302x n\u0303 "
                     "\u1100\u1161\u11a8 \u05e9\u05dc\u05d5\u05dd \ufffd! Tom's\u00a0x\u2028y  \t\n\n"
                     "Zorblax" + " " * 9 + "1234567 ٣٤٥<|endoftext|>end")


# Text where the split rules and the specials have their corners: special tokens,
# emoji (with joiners), CJK, combining marks, long runs of spaces, tabs and new lines.
SPLIT_CORNERS = ("<|endoftext|>Tom's 🐱 and 👩\u200d👩\u200d👧 said \"日本語のテキスト\"!<|user|>  \t\n\n"
                 "e\u0301 n\u0303 a\u0308\u0301 Zorblax" + " " * 40 + "x\r\n<|endoftext|><|user|>ſ'S 'LL 1234567 ٣٤\u00a0x"
                 "<|endo" + "\n" * 5 + "<|user|><|endoftext|>")


# Accents, Japanese, emoji with joiners, tabs, runs of spaces, CR/LF, contractions in
# every case, odd spaces and digits of other scripts.
TRICKY_TEXT = ("Café, naïve, Zoë; 日本語のテキスト。 emoji 🐱 👩‍👩‍👧!\n\n\tTabs  and   spaces \r\n"
               "HOW'S it ſ'S 'LL \u00a0x\u2028y  1234567 ٣٤٥ ")

# Text where splitting, UTF-8 and the specials have their corners (a special token, \r\n,
# apostrophes, digits, no-break and line-separator spaces, a combining mark, a run of spaces).
SPECIAL_CORNERS = ("Café, naïve; 日本語のテキスト。 emoji 🐱 👩\u200d👩\u200d👧!\r\n\n\tTabs  and   spaces "
          "<|endoftext|>"
          "HOW'S ſ'S 'LL 1234567 ٣٤٥\u00a0x\u2028y |pipes| e\u0301 " + " " * 30 + "end\n")
