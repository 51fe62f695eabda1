"""The one safe-cut rule (csrc/split.h, is_safe_cut, with why it is safe): a text cut just
before a space that follows an ASCII letter splits into exactly the chunks of the whole,
under every split pattern. The library cuts there (the encoder's threads, a long str in
ChunkCounter.add, bpe.sources' files) and so does the benchmark (bench/texts.py), all
through the core: bpe._core.safe_cut for a str.

Here: the places safe_cut gives are the rule's; cutting a text at every one of them
changes no chunk, for each pattern (default, gpt2, gpt4, which is cl100k_base's, and
two cl100k-like patterns the project does not split with: rustbpe's, with digits in
twos, and o200k_base's), on text full of new lines and spaces, by the C++ split and by
the reference's regexes; and the benchmark's texts have places to cut enough without the
wider rule it once had (a cut after a lone new line before a letter as well)."""
import itertools
import string

import pytest
import regex
from hypothesis import example, given, settings, strategies as st

import bpe_reference as ref
from sample_text import made_up_stories
from vocabularies import SHARED_DATA

bpe = pytest.importorskip("bpe")
core = bpe.load_core()
from bpe import registry  # noqa: E402 (after the skip above)

# Patterns run by the `regex` module alone here (the C++ has no fast split for them), but
# the rule's argument holds for them too (a letter's chunk ends before a space).
RUSTBPE_PATTERN = ref.GPT4_SPLIT_PATTERN.replace(r"\p{N}{1,3}", r"\p{N}{1,2}")
O200K_PATTERN = registry.O200K_PAT_STR  # GPT-4o's, as tiktoken's registry has it
REGEX_ONLY = {"rustbpe": regex.compile(RUSTBPE_PATTERN), "o200k": regex.compile(O200K_PATTERN)}
PATTERNS = ["default", "gpt2", "gpt4"]


def split(text: str, pattern: str, engine: str) -> list[bytes]:
    if engine == "regex":
        return [m.group().encode("utf-8") for m in REGEX_ONLY[pattern].finditer(text)]
    if engine == "reference":
        return ref.pretokenize(text.encode("utf-8"), pattern)
    return bpe.pretokenize(text.encode("utf-8"), pattern)


SPLITS = [(p, e) for p in PATTERNS for e in ("C++", "reference")] + [(p, "regex") for p in REGEX_ONLY]


def all_safe_cuts(text: str, special_tokens=()) -> list[int]:
    cuts, p = [], 0
    while (p := core.safe_cut(text, list(special_tokens), p + 1, last=False)) != 0:
        cuts.append(p)
    return cuts


def cut_at(text: str, cuts: list[int]) -> list[str]:
    points = [0, *cuts, len(text)]
    return [text[a:b] for a, b in zip(points, points[1:])]


def assert_cuts_change_no_chunk(text: str):
    cuts = all_safe_cuts(text)
    assert cuts == [p for p in range(1, len(text)) if text[p] == " " and text[p - 1] in string.ascii_letters]
    pieces = cut_at(text, cuts)
    for pattern, engine in SPLITS:
        whole = split(text, pattern, engine)
        assert [c for piece in pieces for c in split(piece, pattern, engine)] == whole, (pattern, engine, text)


# Text full of new lines and spaces: runs of them, CR LF, blanks before and after new
# lines, whitespace that is not ASCII, and the letters, digits, contractions and
# punctuation beside which a pattern's chunks could reach across a space or a new line.
FRAGMENTS = [
    " ", " ", "  ", "   ", "\n", "\n", "\n\n", "\r\n", "\r", "\t", " \n", "\n ", " \n\n ", "\x0b", "\x0c",
    "\u00a0", "\u3000", "\u2028", "\u0085", "a", "Z", "ab", "The", "x", "s", "'", "'s", "'LL", "'ve",
    "1", "123", "12345", ".", ",", "!", "?\n", ".\n\n", "-", "é", "ß", "東京", "\u0301", "🙂",
]
texts = st.lists(st.sampled_from(FRAGMENTS), max_size=60).map("".join)


@settings(max_examples=400, deadline=None)
@given(texts)
@example("Once upon a time.\nThe end.\n\nHe said: 'hi'\r\nit's 12345 o'clock  \n  x = f(1, 2)\n")
@example("a \n b  \n\n c\t \r\n d \u00a0 e \u3000\n f ")
@example("said:\n\nOnce upon\nA\nb\n\n x y\n")
def test_cutting_at_every_safe_cut_changes_no_chunk(text):
    assert_cuts_change_no_chunk(text)


def test_every_short_string_of_spaces_new_lines_and_letters():
    alphabet = ["a", "Z", " ", "\n", "\r", "\t", ".", "1", "'", "s", "\u00a0"]
    for length in range(1, 5):
        for chars in itertools.product(alphabet, repeat=length):
            assert_cuts_change_no_chunk("".join(chars))


def test_safe_cut_finds_the_last_or_the_first_place():
    text = "Once upon a time 東京 x"
    assert all_safe_cuts(text) == [4, 9, 11, 16]
    assert core.safe_cut(text) == 16
    assert core.safe_cut(text, end=16) == 11  # places before end
    assert core.safe_cut(text, start=5, end=9) == 0
    assert core.safe_cut(text, start=5, last=False) == 9
    assert core.safe_cut(text, start=17, last=False) == 0
    assert core.safe_cut("") == core.safe_cut("", last=False) == core.safe_cut("a b", start=99) == 0
    assert core.safe_cut("a b", start=0, last=False) == 1  # 0 is never a place: nothing is before it


def test_never_inside_a_special_token():
    token = "<|end of text|>"  # a special token may hold a letter and a space
    text = f"ab {token} cd"
    assert all_safe_cuts(text) == [2, text.index(" of"), text.index(" text")]
    assert all_safe_cuts(text, [token]) == [2]
    assert core.safe_cut(text, [token]) == 2
    assert core.safe_cut(text, [token], 3) == 0


def test_bad_arguments_are_refused():
    with pytest.raises(TypeError, match="text must be str, not bytes"):
        core.safe_cut(b"a b")
    with pytest.raises(ValueError, match="start and end"):
        core.safe_cut("a b", start=-1)
    with pytest.raises(TypeError, match="special_tokens must be a list of str"):
        core.safe_cut("a b", "<|endoftext|>")


# The benchmark's texts: the benchmark once cut after a lone new line before a letter
# as well. With the core's rule alone, no stretch of them without a place to cut comes
# near the smallest pieces the benchmark asks for (bench/peers.py: 1 << 16 characters).
SMALLEST_PIECE = 1 << 16


def longest_stretch_without_a_cut(text: str) -> int:
    points = [0, *all_safe_cuts(text), len(text)]
    return max(b - a for a, b in zip(points, points[1:]))


@pytest.mark.parametrize("kind", ["made-up stories", "generated words", "shared stories"])
def test_the_benchmarks_texts_need_no_wider_rule(kind):
    from bench.texts import generated_words

    if kind == "shared stories":
        path = SHARED_DATA / "tinystories" / "valid-sample.txt"
        if not path.exists():
            pytest.skip(f"{path} is missing")
        text = path.read_text(encoding="utf-8")
    else:
        text = made_up_stories(1_000_000) if kind == "made-up stories" else generated_words(1_000_000)
    assert longest_stretch_without_a_cut(text) < SMALLEST_PIECE // 16
