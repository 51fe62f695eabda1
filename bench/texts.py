"""The benchmark's texts: distinct, never a text repeated (the held-out stories, Python
source files of this interpreter, generated words), and cut only at places where no
chunk of any split rule here crosses."""
import hashlib
import random
import sys
import sysconfig
from pathlib import Path


def shared_file(data: Path, *parts) -> Path:
    path = data.joinpath(*parts)
    if not path.exists():
        sys.exit(f"{path} is missing: the benchmark needs the project's shared data folder "
                 "(pass --data DIR, or set BPE_SHARED_DATA)")
    return path


def stories(data: Path) -> dict:
    """The training stories (what our vocabulary learns from) and the held-out ones."""
    folder = ("tinystories",)
    return {"train": shared_file(data, *folder, "train-sample-lowercase.txt").read_text(encoding="utf-8"),
            "valid": shared_file(data, *folder, "valid-sample.txt").read_text(encoding="utf-8")}


# Text that any of the vocabularies would read as a special token: a source file that
# holds it is left out, so that encode (which refuses special-token text) and the peers'
# ordinary encoders see the same ordinary text.
SPECIAL_TEXT = ("<|endoftext|>", "<|pad|>", "<|fim_", "<|endofprompt|>")


def source_files():
    """This interpreter's Python files: the standard library, then site-packages, each
    in sorted order, so that the same installation gives the same text."""
    paths = sysconfig.get_paths()
    stdlib, purelib = Path(paths["stdlib"]), Path(paths["purelib"])
    yield from sorted(p for p in stdlib.rglob("*.py") if purelib not in p.parents)
    yield from sorted(purelib.rglob("*.py"))


def python_source(size: int) -> tuple[str, dict]:
    """About `size` bytes of real code: whole .py files joined by a new line, each file
    once (copies of a file are skipped), UTF-8 only, no special-token text."""
    seen, parts, total = set(), [], 0
    for path in source_files():
        if total >= size:
            break
        try:
            data = path.read_bytes()
            text = data.decode("utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        digest = hashlib.sha256(data).digest()
        if digest in seen or not text.strip() or any(s in text for s in SPECIAL_TEXT):
            continue
        seen.add(digest)
        parts.append(text)
        total += len(data) + 1
    text = "\n".join(parts)
    if total < size:
        print(f"note: only {total / 1e6:.1f} MB of distinct Python source here, not {size / 1e6:.1f} MB")
    return text, {"files": len(parts)}


# Pronounceable syllables for generated words: onset, vowel, coda.
ONSETS = ["", "b", "c", "d", "f", "g", "h", "j", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "z",
          "bl", "br", "ch", "cl", "cr", "dr", "fl", "fr", "gl", "gr", "kr", "pl", "pr", "sh", "sk", "sl", "sp", "st",
          "th", "tr"]
VOWELS = ["a", "e", "i", "o", "u", "ai", "ea", "ee", "oo", "ou", "y"]
CODAS = ["", "", "", "n", "r", "s", "t", "l", "m", "nd", "ng", "rk", "st", "x"]


def generated_words(size: int, seed: int = 2024) -> str:
    """About `size` characters of made-up text with many distinct chunks, the same for
    the same seed: lines of prose (pronounceable words, nine in ten never seen before,
    the rest from a common stock with a few very frequent), lines of code-like
    assignments (snake_case and camelCase identifiers, numbers) and lines of numbers."""
    rng = random.Random(seed)
    syllables = [o + v + c for o in ONSETS for v in VOWELS for c in CODAS]

    def new_word():
        return "".join(rng.choices(syllables, k=rng.choice((2, 2, 3, 3))))

    common = [new_word() for _ in range(100_000)]

    def word():
        if rng.random() < 0.9:
            return new_word()
        return common[int(len(common) ** rng.random()) - 1]  # log-uniform: a few words very often

    def identifier():
        parts = [word() for _ in range(rng.choice((1, 2, 2, 3)))]
        name = "_".join(parts) if rng.random() < 0.5 else parts[0] + "".join(p.capitalize() for p in parts[1:])
        return name + (str(rng.randrange(100)) if rng.random() < 0.2 else "")

    def number():
        if rng.random() < 0.8:
            return str(int(10 ** (rng.random() * 9)))
        return f"{rng.random() * 1000:.{rng.randint(1, 6)}f}"

    lines, total = [], 0
    while total < size:
        kind = rng.random()
        if kind < 0.5:
            words = [word() for _ in range(rng.randint(4, 14))]
            line = " ".join([words[0].capitalize(), *words[1:]]) + rng.choice((".", ".", ",", "?", "!", ""))
        elif kind < 0.85:
            line = "    " * rng.randint(0, 3) + f"{identifier()} = {identifier()}({number()}, {identifier()})"
        else:
            line = " ".join(number() for _ in range(rng.randint(2, 8)))
        lines.append(line)
        total += len(line) + 1
    return "\n".join(lines)


def cut_to(text: str, size: int) -> str:
    """The text up to `size` bytes of UTF-8, cut at a safe place (see pieces)."""
    if len(text.encode("utf-8")) <= size:
        return text
    head = text.encode("utf-8")[:size].decode("utf-8", errors="ignore")
    cut = last_safe_cut(head)
    return head[:cut] if cut > 0 else head


# Safe places are the library's own (bpe._core.safe_cut; csrc/split.h, is_safe_cut, says
# why they are safe): before a space that follows an ASCII letter, where every split rule
# here (ours, GPT-2's, GPT-4's) ends a chunk, so that cutting the text changes no chunk,
# and so no id. The benchmark once cut after a lone new line before a letter as well;
# its texts have no need of that. tests/engine/test_safe_cut.py checks that the stories and the
# generated words have a place at least every 4,096 characters; in 10 MB of the Python
# source that python_source read here, the longest stretch without one was 57,213
# characters (57,199 with the lone new lines), below the 65,536 of the smallest pieces
# the benchmark asks for (bench/peers.py).
def _core():
    import bpe

    return bpe.load_core()


def last_safe_cut(text: str) -> int:
    """Where the last safe place of the text is (0: it has none)."""
    return _core().safe_cut(text)


def pieces(text: str, size: int) -> list[str]:
    """The text in pieces of about `size` characters, cut only at safe places: for the
    libraries that take a list (training in parallel) or refuse long texts."""
    core = _core()
    out, start = [], 0
    while len(text) - start > size:
        cut = core.safe_cut(text, start=start + 1, end=start + size)
        if cut == 0:  # no safe place in this stretch: take the next one after it
            cut = core.safe_cut(text, start=start + size, last=False)
            if cut == 0:
                break
        out.append(text[start:cut])
        start = cut
    out.append(text[start:])
    return [p for p in out if p]


def halves(text: str) -> tuple[str, str]:
    """The text in two at its last safe place before the middle: the two halves' ids,
    one after the other, are the whole text's."""
    cut = _core().safe_cut(text, start=1, end=len(text) // 2)
    return text[:cut], text[cut:]


def describe(text: str) -> dict:
    data = text.encode("utf-8")
    return {"bytes": len(data), "chars": len(text), "sha256": hashlib.sha256(data).hexdigest()}



def distinct_text(story_texts, size: int) -> tuple[str, str]:
    """`size` bytes of distinct real text: the stories, then Python source; and what it is."""
    text = story_texts["train"] + "\n" + story_texts["valid"]
    have = len(text.encode("utf-8"))
    if have >= size:
        return cut_to(text, size), "stories"
    source = python_source(size - have)[0]
    return cut_to(text + "\n" + source, size), f"stories ({have / 1e6:.1f} MB) + Python source"



def held_out_and_warm_up_source(size: int, warm_size: int) -> tuple[str, str, dict]:
    """About `size` bytes of Python source to time on, and about `warm_size` bytes of
    other source files after it (each file once) for a warm tokenizer to have seen."""
    text, facts = python_source(size + warm_size)
    held_out = cut_to(text, size)
    return held_out, cut_to(text[len(held_out):].lstrip("\n"), warm_size), facts


def held_out_texts(args, report) -> dict[str, tuple[str, str]]:
    """The encode and split benches' two texts, each with its warm-up text of the same
    kind: the held-out stories (after the training ones) and Python source (after other
    source files), of the sizes the options ask; described in the report's data."""
    story_texts = stories(args.data)
    warm_size = int(args.warm_mb * 1e6)
    source, warm_source, source_facts = held_out_and_warm_up_source(int(args.source_mb * 1e6), warm_size)
    texts = {"held-out stories": (cut_to(story_texts["valid"], int(args.stories_mb * 1e6)),
                                  cut_to(story_texts["train"], warm_size)),
             "Python source": (source, warm_source)}
    report.data["texts"] = {name: {**describe(t), "warm_up": describe(w)} for name, (t, w) in texts.items()}
    report.data["texts"]["Python source"].update(source_facts)
    return texts
