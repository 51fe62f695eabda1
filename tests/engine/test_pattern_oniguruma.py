"""The Oniguruma dialect of the regex engine (csrc/pattern.h, Dialect::kOniguruma): a Hugging
Face `Split` regex read with Oniguruma's meanings, as `tokenizers` reads it (onig with Ruby
syntax and no options). The oracle is `tokenizers` itself: Split(Regex(p), "isolated") keeps
the text between matches as pieces, exactly as the engine's split keeps it as chunks.
"""
import os
import random
import time

import pytest

tokenizers = pytest.importorskip("tokenizers")
from tokenizers import Regex, pre_tokenizers  # noqa: E402

from bpe import core  # noqa: E402

_core = core.load_core()


def hugging_face(pattern, text):
    return [piece for piece, _ in pre_tokenizers.Split(Regex(pattern), "isolated").pre_tokenize_str(text)]


def ours(pattern, text):
    return [chunk.decode() for chunk in _core.pretokenize(text.encode(), pattern, dialect="oniguruma")]


# The hostile round's findings: each a place where Python's meaning was used for a Split.
FINDINGS = [
    (r"[^\n]+$", "a\nb\nc"),  # $ is a line end
    (r"\w+$", "ab\ncd\nef"),
    (r"\s+$", " a \n b \n"),
    (r"(?m)^.", "a\nb\nc"),  # ^ is a line start; (?m) is Ruby's dotall
    (r"(?m).", "a\nb"),
    (r"\w+\Z", "ab\ncd\n"),  # \Z: the end, or before a final new line
    (r"\h+", "0aGg\t xF9"),  # \h: a hex digit
    (r"(?i:\p{Lu})", "aAbßſ\u212aǅ"),  # a category is not widened to every cased letter
]


@pytest.mark.parametrize("pattern, text", FINDINGS)
def test_hostile_findings_split_as_hugging_face(pattern, text):
    assert ours(pattern, text) == hugging_face(pattern, text)


@pytest.mark.parametrize("pattern, text", [
    (r"^|a", "aa\na"), (r"\n^|.", "a\n"), (r"\n^|.", "a\n\nb"), (r"[\s]{2}^|\Z\p{N}?", "Q42\r\n"), (r"\Aa|.", "aa"), (r"a\z|.", "a\na"), (r"\Z|a", "a\n"), (r"$|\n", "a\n"), (r"x*", "bb"),
    (r"x*|b", "bb"), (r"(?=b)|b", "bab"), (r"\w+?$", "ab\ncd"), (r".", "a\rb\n\u2028\x85"), (r"\H+", "0aGg\t xF9"),
    (r"[\h]+", "0aGg\t xF9"), (r"\w", "a\u00b2\u200c_\u00bd"), (r"[\w]", "a\u00b2\u200c_\u00bd"),
    (r"\W", "a\u00b2\u200c-"), (r"[\W]", "a\u00b2\u200c-"), (r"[^\w]", "a\u00b2\u200c-"),
    (r"a(?i)b|c", "CaBcab"), (r"(?i:a(?-i)b)", "AB Ab"), (r"(?im).", "\nA"), (r"(?i)[a-z]+", "K\u212aſßAb"),
    (r"(?i)[^a-z]", "Kſß\u212aAb"), (r"(?i)k", "kK\u212a"), (r"(?i)i", "iI\u0130\u0131"),
    (r"(?i:[\p{Lu}])", "aAbK"), (r"(?i:[^\p{Lu}])", "aAbK"), (r"(?i:\P{Lu})", "aAbK"),
    (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+", "I'LL he'S we'ſ"),
])
def test_meanings_split_as_hugging_face(pattern, text):
    assert ours(pattern, text) == hugging_face(pattern, text)


@pytest.mark.parametrize("pattern, construct", [
    (r"(?i)ß", "ß"), (r"(?i)ss", "ss"), (r"(?i)[\x{80}-\x{FF}]", "ß"), (r"(?x)a", "(?x"), (r"\pL", "'\\p' without braces"),
    (r"a{1,2}+", "a quantifier after a quantifier"), (r"\U00000041", "\\U"),
    (r"(?:\Ab?){2,3}", "a repeated group that may match nothing"), (r"(?:(\Aa?)){2}", "a repeated group"),
])
def test_constructs_read_otherwise_are_refused(pattern, construct):
    with pytest.raises(ValueError, match="split pattern") as error:
        _core.pretokenize(b"ab", pattern, dialect="oniguruma")
    assert construct in str(error.value)


def test_the_python_dialect_is_unchanged():
    assert _core.pretokenize(b"a\nb\nc", r"[^\n]+$") == [b"a\nb\n", b"c"]
    assert _core.pretokenize(b"a\nb\nc", r"[^\n]+$", dialect="python") == [b"a\nb\n", b"c"]
    with pytest.raises(ValueError, match=r"'\^'"):
        _core.pretokenize(b"a", r"^a", dialect="python")


def test_an_unknown_dialect_is_a_value_error_naming_the_choices():
    for call in (_core.pretokenize, _core.count_chunks):
        with pytest.raises(ValueError, match="'python' or 'oniguruma'"):
            call(b"a", r"a", dialect="perl")


def test_count_chunks_takes_the_dialect():
    assert _core.count_chunks(b"a\nb\nc", r"[^\n]+$", dialect="oniguruma") == 5
    assert _core.count_chunks(b"a\nb\nc", r"[^\n]+$") == 2


# --- no recursion an input deepens ---------------------------------------------------------

LETTERS_AND_MARKS = r"(?:\p{L}\p{M}*)+|\s+|."


def test_a_repeated_group_takes_any_length_of_input():
    assert _core.count_chunks(b"a" * 100_000, LETTERS_AND_MARKS, dialect="oniguruma") == 1
    assert _core.count_chunks(b"a" * 100_000, LETTERS_AND_MARKS) == 1
    text = "e\u0301" * 5_000
    assert ours(LETTERS_AND_MARKS, text) == hugging_face(LETTERS_AND_MARKS, text) == [text]


def test_runaway_shapes_still_end_with_the_documented_error():
    for pattern, text in [(r"(?:a+)+b", "a" * 5_000), (r"\p{L}*\d|\p{L}", "a" * 20_000), (r"(?:a|a)+b", "a" * 40)]:
        for dialect in ("python", "oniguruma"):
            start = time.perf_counter()
            with pytest.raises(RuntimeError, match="backtracked too much"):
                _core.pretokenize(text.encode(), pattern, dialect=dialect)
            assert time.perf_counter() - start < 10


# --- a random comparison with Hugging Face ----------------------------------------------------

TEXT_PIECES = ["a", "b", "z", "B", "Q", "é", "É", "e\u0301", "ʰ", "日本", "ひら", "Жж", "ع", "1", "42", "٣", "½", "²",
               " ", "  ", "\t", "\n", "\n\n", "\r", "\r\n", "\u00a0", "'", "'s", "!", "/", "_", "-", "😀", "\u0301"]
LITERALS = ["a", "b", "B", "s", "1", "'", " ", "é", r"\n", r"\r", r"\t", r"\.", r"\-", "/", "_", r"\x41", r"\u00e9"]
CLASSES = [r"\p{L}", r"\p{Lu}", r"\p{Ll}", r"\p{N}", r"\p{M}", r"\p{P}", r"\P{L}", r"\s", r"\S", r"\d", r"\D",
           r"\w", r"\W", r"\h", "."]
SET_ITEMS = ["a-z", "A-Z", "0-9", r"\p{L}", r"\p{N}", r"\p{M}", r"\s", r"\d", r"\w", "'", "_", r"\r\n", r"\n",
             r"\u4e00-\u9fff", r"\u3040-\u30ff"]
ANCHORS = ["$", "^", r"\Z", r"\z", r"\A"]
QUANTIFIERS = ["", "", "", "?", "*", "+", "??", "*?", "+?", "{1,3}", "{0,2}", "{2}", "{2,}", "{1,3}?", "++", "*+"]


def random_pattern(rng, depth=0):
    def atom():
        roll = rng.random()
        if roll < 0.3:
            return rng.choice(LITERALS)
        if roll < 0.6:
            return rng.choice(CLASSES)
        if roll < 0.8:
            return "[" + ("^" if rng.random() < 0.3 else "") + "".join(rng.sample(SET_ITEMS, rng.randint(1, 3))) + "]"
        if depth < 2:
            inner = random_pattern(rng, depth + 1)
            return rng.choice(["(?:", "(", "(?=", "(?!", "(?i:", "(?m:"]) + inner + ")"
        return rng.choice(CLASSES)

    branches = []
    for _ in range(rng.randint(1, 3)):
        items = []
        for _ in range(rng.randint(1, 3)):
            if rng.random() < 0.12:
                items.append(rng.choice(ANCHORS))
                continue
            a = atom()
            q = rng.choice(QUANTIFIERS)
            if a.startswith("(?=") or a.startswith("(?!"):
                q = ""
            items.append(a + q)
        branches.append("".join(items))
    pattern = "|".join(branches)
    return ("(?i)" if depth == 0 and rng.random() < 0.1 else "") + pattern


def random_text(rng):
    return "".join(rng.choice(TEXT_PIECES) for _ in range(rng.randint(0, 12)))


EXPECTED_REFUSALS = ("a repeated group that may match nothing", "a quantifier on a lookahead or anchor")
RANDOM_PATTERNS = int(os.environ.get("BPE_RANDOM_PATTERNS", "1500"))


def test_random_patterns_split_as_hugging_face():
    rng = random.Random(int(os.environ.get("BPE_RANDOM_SEED", "20261205")))
    compared = refused = runaway = 0
    for _ in range(RANDOM_PATTERNS):
        pattern = random_pattern(rng)
        try:
            _core.pretokenize(b"", pattern, dialect="oniguruma")
        except ValueError as error:
            # The grammar makes these two often; any other refusal is counted.
            if not any(what in str(error) for what in EXPECTED_REFUSALS):
                refused += 1
            continue
        for _ in range(3):
            text = random_text(rng)
            try:
                expected = hugging_face(pattern, text)
            except BaseException as error:  # noqa: BLE001 - Oniguruma's own limits panic in Rust
                if isinstance(error, KeyboardInterrupt):
                    raise
                break
            try:
                got = ours(pattern, text)
            except RuntimeError:  # a repeat of a repeat past the step budget (Oniguruma's retry limit is higher)
                runaway += 1
                continue
            assert got == expected, (pattern, text)
            compared += 1
    assert compared > 2 * RANDOM_PATTERNS and refused < RANDOM_PATTERNS // 50 and runaway < compared // 500, \
        (compared, refused, runaway)


# --- the named rules, found by their texts in both dialects ----------------------------------

NAMED_PIECES = list("aZ09 \t\r\n'!?.,-_/\\\"#()[]{}<>|~") + [
    "\u0301", "\u1100", "\uac00", "\u4e00", "\u3042", "\uff01", "\u3000", "\u2018", "\U0001F600", "\u200d", "\u0663",
    "\u00b2", "\u00e9", "\u03a3", "\u00a0", "\u0e01", "\u0915", "\u093f", "'s", "'LL", "'ſ", "'S", "'T", "'\u212a",
    "ı", "İ", "123456", "  ", "\r\n", "\n\n", "Ab", "aB", "\x1c", "\u2028", "\x85", "\u200c"]


@pytest.mark.parametrize("rule", [r for r in _core.split_rules() if r[0] != "default"], ids=lambda r: r[0])
def test_a_named_rules_texts_split_as_hugging_face_reads_them(rule):
    # Oniguruma's dialect runs a rule's texts on its hand-written splitter: they must
    # split as Hugging Face splits them.
    name, _, _, texts = rule
    rng = random.Random(5)
    samples = ["".join(rng.choice(NAMED_PIECES) for _ in range(rng.randint(0, 30))) for _ in range(400)]
    for text in set(texts) | {rule[2]}:
        assert _core.count_chunks(b"x", text, dialect="oniguruma") == 1
        for sample in samples:
            assert ours(text, sample) == hugging_face(text, sample), (text, sample)
            assert ours(text, sample) == [c.decode() for c in _core.pretokenize(sample.encode(), name)]


def test_a_name_is_a_regex_in_the_oniguruma_dialect():
    assert ours("gpt2", "a gpt2 b") == ["a ", "gpt2", " b"] == hugging_face("gpt2", "a gpt2 b")
    assert ours(".", "ab") == ["a", "b"]


# --- the classes, over the code points ------------------------------------------------------

CODE_POINTS = "\x01".join(chr(c) for c in [*range(0x20, 0x3400), *range(0x3400, 0x110000, 61)]
                          if not 0xD800 <= c < 0xE000)


@pytest.mark.parametrize("pattern", [
    r"\w", r"\W", r"[\w]", r"[\W]", r"[^\w]", r"[\w\W]", r"\s", r"[\s]", r"\S", r"[^\s]", r"\d", r"[\d]", r"\D",
    r"\h", r"\H", r"[\h]", r"[\H]", r"[^\h]", r".", r"(?m).", r"\p{L}", r"[\p{N}]", r"\p{M}", r"\P{L}",
    r"(?i)[a-z]", r"(?i)[^a-z]", r"(?i:[\p{Lu}])", r"(?i:[^\p{Ll}])", r"(?i:\p{Lu})", r"(?i:\P{Ll})", r"(?i)k",
    r"(?i)s", r"(?i)i", r"(?i)[\x{131}-\x{148}]", r"(?i)[\x{391}-\x{3AF}\x{400}-\x{52F}]", r"(?i)[\x{10400}-\x{1044F}]",
    r"(?i)\w", r"(?i)[\w]",
])
def test_a_class_matches_the_code_points_oniguruma_matches(pattern):
    # Every code point below U+3400 and every 61st above, each between separators the
    # class does not match: the pieces tell which ones it matches.
    assert ours(pattern, CODE_POINTS) == hugging_face(pattern, CODE_POINTS)


# --- a split step of one repeated class -------------------------------------------------------

@pytest.mark.parametrize("pattern", [r"\p{N}{1,3}", "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+", r"\p{N}+",
                                     r"[acegikmoqsuwy02468!#%]+", r"[^a-z\s]{2}", r"\d"])
def test_a_step_of_one_repeated_class_splits_as_hugging_face(pattern):
    # Such a step skips the ASCII text outside its class 16 bytes at a time.
    rng = random.Random(11)
    pieces = ["a", "b", "q", "Z", " ", "\n", "1", "22", "333", "٣", "日本", "ひら", "カナ", "é", "!", "%", "😀"]
    for length in (0, 1, 15, 16, 17, 40, 300):
        for _ in range(20):
            text = "".join(rng.choice(pieces) for _ in range(length))
            assert ours(pattern, text) == hugging_face(pattern, text), text
            assert _core.pretokenize(text.encode(), pattern) == [c.encode() for c in hugging_face(pattern, text)]
