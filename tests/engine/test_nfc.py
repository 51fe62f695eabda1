"""NFC in C++ (csrc/normalize.h) against Hugging Face's tokenizers, whose NFC is what a
tokenizer.json's normalizer means, and against Python's unicodedata.

tokenizers' engine knows Unicode 9.0, unicodedata here a newer one: on characters added
since (marks that tokenizers takes for starters, the Dives Akuru composite U+11938) the
two disagree, and these tests follow tokenizers; they check that unicodedata agrees
everywhere else, and that where it does not, the text holds such a newer character.

The origin map is checked against tokenizers' offsets: a Tokenizer with only an NFC
normalizer and a pre-tokenizer that isolates every character gives, for each character
of the normalized text, the range of the text as given that Hugging Face maps it to.
"""
import random
import subprocess
import sys
import time
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

core = pytest.importorskip("bpe._core", reason="the core is not built")
tokenizers = pytest.importorskip("tokenizers")
from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers  # noqa: E402

HF_NFC = normalizers.NFC()
HF_NFD = normalizers.NFD()

ALL = [cp for cp in range(0x110000) if not 0xD800 <= cp <= 0xDFFF]


def per_character_tokenizer() -> Tokenizer:
    tokenizer = Tokenizer(models.WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.NFC()
    tokenizer.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), "isolated")
    return tokenizer


HF_TOKENIZER = per_character_tokenizer()


ROOT = Path(__file__).resolve().parents[2]


def test_the_tables_are_what_the_generator_writes_from_this_tokenizers():
    run = subprocess.run([sys.executable, str(ROOT / "tools" / "make_nfc_tables.py"), "--check"],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr


def newer_than_tokenizers() -> set[str]:
    """The characters whose normalization unicodedata knows and tokenizers does not: a
    decomposition it leaves alone, or a mark it does not reorder (behind U+0345, of class
    240, every other mark moves; U+0345 itself moves behind U+0334, of class 1)."""
    decomposed = [chr(cp) for cp in ALL if cp != 0x0A and unicodedata.decomposition(chr(cp))
                  and not unicodedata.decomposition(chr(cp)).startswith("<")]
    hf = HF_NFD.normalize_str("\n".join(decomposed)).split("\n")
    newer = {c for c, d in zip(decomposed, hf) if d == c}
    marks = [chr(cp) for cp in ALL if unicodedata.combining(chr(cp))]
    probes = ["\u0345" + m if unicodedata.combining(m) < 240 else m + "\u0334" for m in marks]
    hf = HF_NFD.normalize_str("\n".join(probes)).split("\n")
    newer |= {m for m, p, d in zip(marks, probes, hf) if d == p}
    return newer


NEWER = newer_than_tokenizers()


def test_the_newer_characters_are_those_of_unicode_10_and_after():
    # A few that Unicode 10.0 to 14.0 added: tokenizers leaves them as they are.
    for c in ("\U00011938", "\u1df6", "\U00011d42", "\U0001e130"):
        assert c in NEWER
        assert HF_NFC.normalize_str("a\u0316" + c + "\u0316") == "a\u0316" + c + "\u0316"
    # Unicode 9.0's Adlam marks and the older ones, it knows.
    assert not {"\U0001e944", "\u0301", "\u0958", "\uf900"} & NEWER
    assert core.nfc("\U00011935\U00011930")[0] == HF_NFC.normalize_str("\U00011935\U00011930") == "\U00011935\U00011930"
    assert unicodedata.normalize("NFC", "\U00011935\U00011930") == "\U00011938"


def expected(text: str) -> str:
    """tokenizers' NFC, after checking that unicodedata agrees where it knows no newer character."""
    hf = HF_NFC.normalize_str(text)
    py = unicodedata.normalize("NFC", text)
    if py != hf:
        assert set(text) & NEWER, f"unicodedata and tokenizers differ on {text!r} without a newer character"
    return hf


def char_offsets(text: str, normalized: str, origin: list[int]) -> list[tuple[int, int]]:
    """Each character of the normalized text's range in `text`, in characters, from the
    origin map (which is in bytes): its first byte's origin to the end of the input
    character at its last byte's origin."""
    starts = {}
    position = 0
    for index, c in enumerate(text):
        starts[position] = index
        position += len(c.encode())
    starts[position] = len(text)
    offsets, position = [], 0
    for c in normalized:
        size = len(c.encode())
        first, last = origin[position], origin[position + size - 1]
        assert len(set(origin[position:position + size])) == 1, "the bytes of one character map apart"
        offsets.append((starts[first], starts[last] + 1))
        position += size
    return offsets


def check(text: str):
    normalized, origin = core.nfc(text)
    assert normalized == expected(text), text
    assert core.is_nfc(text) == (normalized == text), text
    assert len(origin) == len(normalized.encode()) + 1 and origin[-1] == len(text.encode())
    assert origin == sorted(origin)
    encoding = HF_TOKENIZER.encode(text)
    assert len(encoding.offsets) == len(normalized)
    assert char_offsets(text, normalized, origin) == encoding.offsets, text


def check_many(texts: list[str]):
    """check() on each text, but the normalizations of all in one call each: joined by a new
    line, which nothing reorders or composes across, as each alone."""
    joined = "\n".join(texts)
    normalized, _ = core.nfc(joined)
    if normalized != expected(joined):
        for text in texts:
            assert core.nfc(text)[0] == expected(text), ascii(text)
    assert normalized == expected(joined)
    for text in texts:
        assert core.is_nfc(text) == (core.nfc(text)[0] == text), ascii(text)


def interesting() -> list[str]:
    """The characters with something to normalize: a combining class, a canonical
    decomposition, or a part in a composition (those that are a decomposition's part)."""
    out = set()
    for cp in ALL:
        c = chr(cp)
        d = unicodedata.decomposition(c)
        if unicodedata.combining(c) or (d and not d.startswith("<")):
            out.add(c)
            if d and not d.startswith("<"):
                out |= {chr(int(h, 16)) for h in d.split()}
    out |= {chr(cp) for cp in range(0x1100, 0x1200)}  # Hangul jamo
    out |= {chr(cp) for cp in range(0xAC00, 0xAC00 + 11172, 7)}
    return sorted(out)


INTERESTING = interesting()
CONTEXTS = ["{}", "a{}", "{}\u0301", "{}\u0323", "\u0301{}", "{}\u0316\u0301", "e\u0316{}", "{}\u1161",
            "\u1100{}", "\uac00{}\u11a8", "{}{}", "\u0915{}\u093c", "{}\u0345\u0334"]


def test_every_code_point_alone_and_between_new_lines():
    texts = [chr(cp) for cp in ALL if cp != 0x0A]
    check_many(texts)
    for c in ("a", "\u00e9", "\u0301", "\uf900", "\u0958", "\uac01", "\u1100", "\U0002f800"):
        check(c)


@pytest.mark.parametrize("context", CONTEXTS)
def test_each_interesting_character_in_contexts(context):
    texts = [context.format(c, c) for c in INTERESTING]
    check_many(texts)


@pytest.mark.parametrize("context", CONTEXTS)
def test_offsets_of_each_interesting_character_in_contexts(context):
    # One text holds them all, a space between: the offsets of every character at once.
    text = " ".join(context.format(c, c) for c in INTERESTING)
    check(text)


SCRIPTS = {
    "hangul": [chr(cp) for cp in range(0x1100, 0x1200)] + [chr(cp) for cp in range(0xAC00, 0xD7A4, 37)],
    "latin": list("aeiouyncsAEIOUCN") + [chr(cp) for cp in range(0x300, 0x370)] + list("\u00e9\u00c5\u1e0b\u1e0d"),
    "greek": [chr(cp) for cp in range(0x391, 0x3CF)] + ["\u0301", "\u0308", "\u0313", "\u0314", "\u0342", "\u0345",
                                                        "\u0344", "\u0340", "\u1f00", "\u1fb7"],
    "vietnamese": list("aăâeêioôơuưy") + ["\u0300", "\u0301", "\u0303", "\u0309", "\u0323", "\u1ea1", "\u1ec7"],
    "arabic": [chr(cp) for cp in range(0x621, 0x64B)] + [chr(cp) for cp in range(0x64B, 0x660)] + ["\u0670", "\u0653",
                                                                                                  "\u0654", "\u0655"],
    "devanagari": [chr(cp) for cp in range(0x900, 0x980)],
    "cjk_compatibility": [chr(cp) for cp in range(0xF900, 0xFB00, 3)] + [chr(cp) for cp in range(0x2F800, 0x2FA1E, 5)]
                         + ["\u4e00", "\u8c48"],
    "exclusions": [chr(cp) for cp in range(0x958, 0x960)] + ["\u09dc", "\u09dd", "\u0a33", "\ufb1d", "\ufb2a",
                                                            "\u0f43", "\u2adc", "\U0001d15e", "\u0f73", "\u0344"],
    "newer": ["\U00011935", "\U00011930", "\U00011938", "\u1df6", "\U00011d42", "\u0898", "\u1ac0"],
    "tibetan_and_hebrew": [chr(cp) for cp in range(0xF71, 0xF85)] + [chr(cp) for cp in range(0x5B0, 0x5C8)]
                          + list("\u05d0\u05e9\u0f40"),
}


@pytest.mark.parametrize("seed", range(6))
def test_random_strings_of_mixed_scripts(seed):
    rng = random.Random(seed)
    pool = [c for chars in SCRIPTS.values() for c in chars] + list("ab \n")
    texts = []
    for _ in range(400):
        script = rng.choice(list(SCRIPTS))
        mine = SCRIPTS[script] + list(" a")
        texts.append("".join(rng.choice(mine if rng.random() < 0.8 else pool) for _ in range(rng.randint(1, 30))))
    check_many(texts)
    for text in texts[:150]:
        check(text)


@given(st.text(max_size=40))
@settings(max_examples=400, deadline=None)
def test_hypothesis_text(text):
    check(text)


MARKY = st.sampled_from([c for chars in SCRIPTS.values() for c in chars] + ["a", " ", "\u0316", "\u031b", "\u1161"])


@given(st.lists(MARKY, max_size=30).map("".join))
@settings(max_examples=600, deadline=None)
def test_hypothesis_marks_and_composites(text):
    check(text)


def test_long_runs_of_marks_are_exact_and_fast():
    rng = random.Random(7)
    marks = [chr(cp) for cp in range(0x300, 0x370)] + ["\u0f71", "\u0f72", "\u0f74", "\u05b0", "\u05bc", "\u0345"]
    for base in ("a", "\u1e0b", "", "\u1100"):
        text = base + "".join(rng.choice(marks) for _ in range(10_000)) + "b"
        check(text)
    # Every order of class sorted, and 200,000 marks in one run: a sort that went
    # quadratic on a run would take minutes here.
    text = "e" + "".join(rng.choice(marks) for _ in range(200_000))
    started = time.perf_counter()
    normalized, origin = core.nfc(text)
    answer = core.is_nfc(text)
    elapsed = time.perf_counter() - started
    assert normalized == HF_NFC.normalize_str(text)
    assert answer is False
    assert elapsed < 5, f"{elapsed:.1f} s for 200,000 marks"


def test_is_nfc_on_nfc_text_and_on_maybe_characters():
    assert core.is_nfc("")
    assert core.is_nfc("plain ASCII text, long enough to be skipped sixteen bytes at a time")
    assert core.is_nfc("caf\u00e9 \uac01\u11a8")  # an LVT syllable takes no more T
    assert not core.is_nfc("\uac00\u11a8")  # an LV syllable and a T compose
    assert not core.is_nfc("cafe\u0301")  # Maybe, and it composes
    assert core.is_nfc("\u1e0d\u0307")  # Maybe, and it does not compose: still NFC
    assert not core.is_nfc("a\u0301\u0316")  # out of order
    assert not core.is_nfc("\u0958")  # excluded: No
    assert not core.is_nfc("\uf900")  # singleton: No


def split_invalid(data: bytes) -> list[str]:
    """data's valid runs and invalid bytes (each a surrogate of surrogateescape), in order."""
    runs = []
    for c in data.decode("utf-8", "surrogateescape"):
        invalid = "\udc80" <= c <= "\udcff"
        if invalid or not runs or "\udc80" <= runs[-1][-1] <= "\udcff":
            runs.append(c)
        else:
            runs[-1] += c
    return runs


def test_invalid_utf8_is_left_as_it_is_and_never_read_past():
    rng = random.Random(3)
    pieces = [b"\xff", b"\xc3", b"\xe1\x84", b"\xf0\x9f", b"\xed\xa0\x80", b"\xc0\xaf", b"\x80", "e\u0301".encode(),
              b"a", "\u0958".encode(), "\u1100\u1161".encode()]
    for _ in range(2000):
        data = b"".join(rng.choice(pieces) for _ in range(rng.randint(0, 12)))
        out, origin = core.nfc(data)
        assert len(origin) == len(out) + 1 and origin[-1] == len(data)
        assert origin == sorted(origin)
        assert core.is_nfc(data) == (out == data)
        # The valid parts are normalized as text; each invalid byte stays, a starter.
        assert out == b"".join(HF_NFC.normalize_str(run).encode() if run and not "\udc80" <= run[0] <= "\udcff"
                               else run.encode("utf-8", "surrogateescape") for run in split_invalid(data))
    for truncated in (b"e\xcc", b"\xe0\xa5", b"\xf0\x9d\x85"):
        assert core.nfc(truncated)[0] == truncated


def test_bad_arguments_are_python_errors():
    with pytest.raises(TypeError, match="str or bytes"):
        core.nfc(3)
    with pytest.raises(UnicodeEncodeError):
        core.nfc("a\ud800")
    with pytest.raises(TypeError, match="str or bytes"):
        core.is_nfc(None)
