"""The gpt2 and gpt4 split patterns of the C++ engine against bpe_reference.pretokenize:
the chunks must be identical on any text.

The reference runs the published patterns with the `regex` module, hiding from it the
letters and numbers of Unicode 17, which tiktoken's engine (Unicode 16.0) does not
know (bpe_reference.py says why). The C++ splitters (bpe/split_unicode.h) are written
by hand from the patterns, with character classes read from tiktoken
(bpe/make_unicode_tables.py), so these tests look hardest where the two could part:
every general category, letters and digits of other scripts and of Unicode 17,
combining marks, whitespace that is not ASCII, CR/LF mixes, contractions in every case
(and U+017F long s, which both engines fold to s), long runs, and every code point in
a few contexts.
"""
import itertools
from pathlib import Path

import pytest
from hypothesis import example, given, settings, strategies as st

import regex

import bpe
import bpe_reference as ref

SHARED_DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
PATTERNS = {"gpt2": ref.GPT2_SPLIT_PATTERN, "gpt4": ref.GPT4_SPLIT_PATTERN}


def has_patterns() -> bool:
    try:
        bpe.pretokenize(b"a", pattern="gpt2")
    except TypeError:
        return False
    return True


pytestmark = pytest.mark.skipif(not has_patterns(), reason="bpe.pretokenize does not take pattern= yet (issue 6)")


def splits(text: str, pattern: str) -> list[bytes]:
    return [bytes(chunk) for chunk in bpe.pretokenize(text.encode("utf-8"), pattern=pattern)]


def assert_splits_like_reference(text: str):
    for name in PATTERNS:
        assert splits(text, name) == ref.pretokenize(text.encode("utf-8"), name), f"{name} splits {text!r} differently"


# --- random text -------------------------------------------------------------------

# Pieces where the patterns' corners are: contractions in all cases (with the Kelvin
# sign, which stands for k but no contraction has a k, and long s, which stands for
# s), every kind of whitespace, digits of other scripts and other numbers, marks,
# emoji, punctuation, and letters and numbers of Unicode 17, "other" to tiktoken.
PIECES = [
    "'", "s", "S", "\u017f", "\u212a", "l", "L", "v", "V", "e", "E", "r", "R", "d", "D", "m", "M", "t", "T",
    "'s", "'S", "'LL", "'Ve", "'rE", "'ll", "'\u017f", "'\u212a", "'x", "''", "\u2019s",
    " ", "  ", "\t", "\n", "\r", "\r\n", "\n\n", "\x0b", "\x0c", "\x1c", "\x1f",
    "\u00a0", "\u0085", "\u1680", "\u2028", "\u2029", "\u202f", "\u3000", "\u200b", "\u180e", "\ufeff",
    "0", "7", "123", "1234567", "\u0663", "\u096b", "\uff19", "\u00bd", "\u00b2", "\u2167", "\u3007", "\U0001d7ce",
    "a", "Z", "\u00e9", "\u00df", "\u65e5\u672c", "\ud55c", "\u0627",
    "\U00011de0", "\U00011de1\U00011de2", "\U000323b0", "\u088f", "\U00016ff2", "\U00016ff4", "\U00010940",
    "\u0301", "\u0308", "\u093f", "\u200d", "\ufe0f",
    "\U0001f609", "\U0001f468\u200d\U0001f469", "!", ".", "-", "(", "\"", "#", "\u00a9", "\ue000", "\U000e0041",
    "\x00", "\x7f", "\u0080", "\u00ad",
]
CATEGORIES = ["Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No", "Pc", "Pd", "Ps", "Pe", "Pi",
              "Pf", "Po", "Sm", "Sc", "Sk", "So", "Zs", "Zl", "Zp", "Cc", "Cf", "Co", "Cn"]

pieces = st.lists(st.sampled_from(PIECES), max_size=40).map("".join)
any_unicode = st.text(st.characters(codec="utf-8"), max_size=60)
one_category = st.sampled_from(CATEGORIES).flatmap(
    lambda cat: st.text(st.characters(categories=[cat], codec="utf-8"), min_size=1, max_size=4)
)
by_category = st.lists(one_category, max_size=20).map("".join)
mixed = st.lists(st.one_of(pieces, any_unicode, by_category), max_size=4).map("".join)


@settings(max_examples=400, deadline=None)
@given(pieces)
@example("")
@example("HOW'S it going? I'LL say 'Ve 're 'd 'M 'T, \u017f'\u017f '\u212a")
@example("  \n\t \r\n x\u00a0\u00a0y \u3000\u3000z\u2028\u0085 ")
@example("1234567 \u0661\u0662\u0663\u0664 \uff11\uff12\uff13\uff14 x\u0301\u0301 !!!\r\n\r\n...")
@example("\U00011de0123 x\U000323b0y \U00011de0\U00011de01 \u088f!")
def test_tricky_pieces(text):
    assert_splits_like_reference(text)


@settings(max_examples=300, deadline=None)
@given(any_unicode)
def test_any_unicode(text):
    assert_splits_like_reference(text)


@settings(max_examples=150, deadline=None)
@given(by_category)
def test_every_general_category(text):
    assert_splits_like_reference(text)


@settings(max_examples=150, deadline=None)
@given(mixed)
def test_mixed_text(text):
    assert_splits_like_reference(text)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(PIECES), st.integers(1, 2000), st.sampled_from(PIECES))
def test_long_runs(piece, repeat, other):
    assert_splits_like_reference(piece * repeat + other + piece * repeat)


def test_short_strings_exhaustively():
    alphabet = ["'", "s", "L", "e", "\u017f", " ", "\t", "\n", "\r", "\u00a0", "1", "\u0663", "!", "\u0301",
                "\U00011de0", "\U000323b0"]
    for length in (1, 2, 3):
        for chars in itertools.product(alphabet, repeat=length):
            assert_splits_like_reference("".join(chars))


def test_every_code_point_in_context():
    """Each code point beside a letter, a space and a digit, where its class shows. Past
    U+34000 (the tables end before, and so do the characters of Unicode 17) every code
    point is "other"; a sample of them suffices."""
    code_points = [cp for cp in range(0x34000) if not 0xD800 <= cp <= 0xDFFF] + list(range(0x34000, 0x110000, 97))
    for start in range(0, len(code_points), 50_000):
        assert_splits_like_reference("".join(f"{c}a{c} {c}1" for c in map(chr, code_points[start:start + 50_000])))


# --- real text ----------------------------------------------------------------------

SHARED_TEXTS = ["cs336/corpus.en", "cs336/german.txt", "cs336/address.txt", "cs336/tinystories_sample.txt",
                "tinystories/valid-sample.txt"]


@pytest.mark.parametrize("name", SHARED_TEXTS)
def test_shared_texts(name):
    path = SHARED_DATA / name
    if not path.exists():
        pytest.skip(f"{path} is not here (it comes with the project's shared folder)")
    assert_splits_like_reference(path.read_text(encoding="utf-8")[:300_000])


# --- the rest of the contract -------------------------------------------------------

def test_default_pattern_is_unchanged():
    text = "Once upon a time, Zo\u00eb's cat  said: \"meow!\"\n\n\t1234 \u65e5\u672c".encode("utf-8")
    assert bpe.pretokenize(text, pattern="default") == bpe.pretokenize(text)


@pytest.mark.parametrize("pattern", ["gpt2", "gpt4"])
@pytest.mark.parametrize("data", [b"\xff", b"abc\xc3", b"\xed\xa0\x80", b"\xc0\x80", b"ok \xf4\x90\x80\x80"])
def test_invalid_utf8_is_refused(pattern, data):
    with pytest.raises(ValueError):
        bpe.pretokenize(data, pattern=pattern)


def test_unknown_pattern_is_refused():
    with pytest.raises(ValueError):
        bpe.pretokenize(b"text", pattern="gpt5")
