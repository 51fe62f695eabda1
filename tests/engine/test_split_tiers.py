"""Every SIMD tier of the split (csrc/split_simd.h) cuts exactly as the portable tier,
the chunk-at-a-time loops of csrc/split_bytes.h and split_unicode.h, and as the regexes that define the rules.

Each tier runs in its own process, since BPE_SIMD is read once, at import. The texts
are made to hit what a 64-byte block can get wrong: chunks and runs that cross a
block's edge, runs longer than a block, apostrophes, CR/LF and non-ASCII characters at
every offset around an edge, whitespace runs with newlines in them, long digit runs.
"""
import os
import pickle
import random
import subprocess
import sys
from pathlib import Path

import pytest

import bpe_reference as ref

REPO = Path(__file__).resolve().parents[2]
TIERS = ("portable", "sse2", "avx2", "avx512")
PATTERNS = ("default", "gpt2", "gpt4", "qwen2", "o200k")
# The regex that defines each rule, for the reference (a name it knows, or the text).
QWEN2 = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
ORACLE = {"default": "default", "gpt2": "gpt2", "gpt4": "gpt4", "qwen2": QWEN2, "o200k": "o200k"}

# Pieces of every class the rules tell apart, ASCII and not.
PIECES = [
    "a", "Z", "word", "Hello", "x" * 70, "7", "42", "1234567", "9" * 70, " ", "  ", " " * 70, "\t", "\n", "\r",
    "\r\n", "\n\n", "\v", "\f", " \n ", "\n   ", "\t\n\t", ".", ",", "...", "-" * 70, "(", "'", "''", "'s", "'S",
    "'t", "'d", "'m", "'ll", "'LL", "'Ll", "'ve", "'VE", "'re", "'rE", "'x", "'l", "'v", "\"", "é", "ſ", "'ſ",
    "\u00a0", "\u3000", "\u2028", "日本", "٣", "Ⅻ", "😀", "\u0301", "ß", "ǅ", "\U00011de0",
    # o200k's: case runs, contractions after letters, [\r\n/]* after punctuation
    "HTMLParser", "aB", "Ab", "it's", "IT'LL", "x's's", "/", "//", "!\n/", "\n/", "\r\n//x", "ʰ", "Ǆ",
]
FILLERS = [" ", "a", "1", ".", "\n", "\t"]


def hostile_texts(seed: int = 18) -> list[str]:
    rng = random.Random(seed)
    texts = []
    # Each piece at every offset around the first and second block edges, after a
    # filler run and before a few random pieces.
    for piece in PIECES:
        filler = rng.choice(FILLERS)
        for offset in range(54, 76):
            texts.append(filler * offset + piece + "".join(rng.choice(PIECES) for _ in range(3)))
        texts.append("b" * 120 + piece + " " + piece)
    # Random mixes, short and long, ASCII-heavy and not.
    ascii_pieces = [p for p in PIECES if p.isascii()]
    for k in range(400):
        pool = ascii_pieces if k % 2 else PIECES
        texts.append("".join(rng.choice(pool) for _ in range(rng.randrange(1, 120))))
    # Whitespace runs with newlines in them, of every length around a block.
    for k in range(300):
        run = "".join(rng.choice(" \t\n\r\v") for _ in range(rng.randrange(1, 140)))
        texts.append(rng.choice(["x", ".", "'", "1", ""]) * rng.randrange(0, 70) + run + rng.choice(PIECES))
    # A block keeps the starts its formulas decide before its first byte >= 0x80:
    # that byte at places all through a block and across its edge, after runs of
    # whitespace, contractions and digits that reach it, and what may follow it.
    for high in ("é", "\u00a0", "\u3000", "\u2028", "ſ", "٣", "😀", "\u0301"):
        for lead in ("", " ", "  ", "      ", "\n ", "\n      ", " \r\n", " \n    ", "\t\t\t", "'ll", "'s", "'", "12345", "ab'", "."):
            for offset in list(range(0, 9)) + list(range(54, 72)):
                texts.append("x" * offset + lead + high + rng.choice(["", "\n", " a", "s", "1", "  \n", "'ve"]))
    # Texts that end at, just before and just after a block's edge.
    for size in (0, 1, 2, 3, 62, 63, 64, 65, 66, 67, 127, 128, 129, 191, 192, 193):
        for piece in FILLERS + ["'s", "\r\n", "x'", "ab ", " \n"]:
            texts.append((piece * size)[:size])
            texts.append("q" * max(0, size - len(piece)) + piece)
    return texts


def hostile_bytes(seed: int = 18) -> list[bytes]:
    """For the default rule, which takes any bytes: random bytes, and runs of them."""
    rng = random.Random(seed)
    alphabet = b" \t\n\r\x0b\x0caZ09.'-\x80\xc3\xa9\xff"
    out = [bytes(rng.randrange(256) for _ in range(rng.randrange(1, 300))) for _ in range(200)]
    out += [bytes(rng.choice(alphabet) for _ in range(rng.randrange(1, 300))) for _ in range(300)]
    return out


CHILD = """
import pickle, sys
import bpe
texts, raw = pickle.load(open(sys.argv[1], "rb"))
PATTERNS = ("default", "gpt2", "gpt4", "qwen2", "o200k")
out = {p: [bpe.pretokenize(t, p) for t in texts] for p in PATTERNS}
out["raw"] = [bpe.pretokenize(t) for t in raw]
out["counts"] = {p: [bpe.count_chunks(t, p) for t in texts] for p in PATTERNS}
pickle.dump((bpe.simd_tier(), out), sys.stdout.buffer)
"""


def cpu_flags() -> set:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def expected_available(tier: str) -> bool:
    """Whether this machine and build should run the tier (a portable build has only that)."""
    if tier == "portable":
        return True
    if os.environ.get("BPE_VARIANT") == "portable" or os.uname().machine not in ("x86_64", "AMD64"):
        return False
    flags = cpu_flags()
    return {"sse2": {"sse2"}, "avx2": {"avx2"}, "avx512": {"avx512f", "avx512bw", "avx512dq"}}[tier] <= flags


def run_tier(tier: str, data_path: Path):
    env = dict(os.environ, BPE_SIMD=tier, PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, "-c", CHILD, str(data_path)], env=env, capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr.decode()
    return pickle.loads(done.stdout), done.stderr.decode()


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    texts = [t.encode() for t in hostile_texts()]
    raw = hostile_bytes()
    path = tmp_path_factory.mktemp("tiers") / "texts.pickle"
    path.write_bytes(pickle.dumps((texts, raw)))
    return texts, raw, {tier: run_tier(tier, path) for tier in TIERS}


@pytest.mark.parametrize("tier", TIERS)
def test_tier_reports_what_was_asked(results, tier):
    _, _, by_tier = results
    (reported, _), stderr = by_tier[tier]
    if expected_available(tier):
        assert reported == tier, stderr
        assert "BPE_SIMD" not in stderr
    else:
        assert reported != tier and "cannot run that tier" in stderr


@pytest.mark.parametrize("tier", TIERS)
@pytest.mark.parametrize("pattern", PATTERNS)
def test_tier_cuts_as_portable_and_the_regex(results, tier, pattern):
    texts, _, by_tier = results
    (_, got), _ = by_tier[tier]
    (_, portable), _ = by_tier["portable"]
    for k, text in enumerate(texts):
        expected = ref.pretokenize(text, ORACLE[pattern])
        assert portable[pattern][k] == expected, (pattern, text)
        assert got[pattern][k] == expected, (tier, pattern, text)
        assert got["counts"][pattern][k] == len(expected)


@pytest.mark.parametrize("tier", TIERS)
def test_tier_cuts_any_bytes_by_the_default_rule(results, tier):
    _, raw, by_tier = results
    (_, got), _ = by_tier[tier]
    for k, text in enumerate(raw):
        assert got["raw"][k] == ref.pretokenize(text), (tier, text)


def test_unknown_tier_warns_and_uses_another(tmp_path):
    env = dict(os.environ, BPE_SIMD="avx9000", PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, "-c", "import bpe; print(bpe.simd_tier())"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "BPE_SIMD=avx9000 is not a tier" in done.stderr
    assert done.stdout.strip() in TIERS


def test_count_chunks_checks_its_input():
    import bpe
    assert bpe.count_chunks(b"a b  c") == len(bpe.pretokenize(b"a b  c"))
    with pytest.raises(ValueError, match="UTF-8"):
        bpe.count_chunks(b"\xff", "gpt2")
    with pytest.raises(TypeError):
        bpe.count_chunks("text")
    with pytest.raises(ValueError, match="pattern"):
        bpe.count_chunks(b"x", "gpt5")
