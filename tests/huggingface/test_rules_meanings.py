"""A tokenizer.json's rules mean what Hugging Face's tokenizers makes of them (Rust's
char::is_whitespace, Oniguruma's regexes), not what Python would: each case here is a file
built with tokenizers, whose ids are the oracle. A file tokenizers refuses is refused too,
by a ValueError that names the field."""
import json

import pytest

from bpe import BPETokenizer

tokenizers = pytest.importorskip("tokenizers")
from tokenizers import AddedToken, Tokenizer, pre_tokenizers, processors  # noqa: E402

from test_huggingface_models import byte_level, split, train  # noqa: E402


def _pair(tmp_path, tk, name="tokenizer.json"):
    path = tmp_path / name
    tk.save(str(path))
    theirs = Tokenizer.from_file(str(path))
    theirs.no_padding()
    theirs.no_truncation()
    return BPETokenizer.from_huggingface(path), theirs


def _ids(theirs, text, special=True):
    theirs.encode_special_tokens = not special
    return theirs.encode(text, add_special_tokens=False).ids


def _same(ours, theirs, texts):
    for text in texts:
        assert ours.encode(text, allowed_special="all") == _ids(theirs, text, True), text
        assert ours.encode_ordinary(text) == _ids(theirs, text, False), text


def _plain(regex=r"\p{L}+|\p{N}+|\s+|[^\s\p{L}\p{N}]+", behavior="isolated"):
    return pre_tokenizers.Sequence([split(regex, behavior), byte_level()])


# --- added tokens: Rust's whitespace and word boundaries -------------------------------------

def test_single_word_token_after_a_word_and_a_new_line(tmp_path):
    # Python's `$` matches before a final new line: "word\n" ends with a word there, not in Rust.
    tk = train(_plain())
    tk.add_tokens([AddedToken("<w>", single_word=True, normalized=False, special=False)])
    ours, theirs = _pair(tmp_path, tk)
    _same(ours, theirs, ["word\n<w>", "word\n<w> x", "word<w>", "word <w>", "<w>word", "\n<w>\n", "a\n\n<w>"])


@pytest.mark.parametrize("flag", ["lstrip", "rstrip"])
def test_strip_keeps_the_separators_rust_does_not_call_space(tmp_path, flag):
    # U+001C-U+001F are space to Python's str.isspace, not to Rust's char::is_whitespace.
    tk = train(_plain())
    tk.add_special_tokens([AddedToken("<s>", special=True, normalized=False, **{flag: True})])
    ours, theirs = _pair(tmp_path, tk)
    texts = [f"a{c}<s>{c}b" for c in "\x1c\x1d\x1e\x1f \t\n\u00a0\u2028\u3000\x85"]
    _same(ours, theirs, texts)
    for text in texts:
        assert ours.decode(ours.encode_ordinary(text)) == text


def test_rstrip_space_that_holds_an_lstrip_token(tmp_path):
    # The rstrip token's stripped spaces hold the lstrip one: Hugging Face drops the empty match.
    tk = train(_plain())
    tk.add_special_tokens([AddedToken("<r>", special=True, normalized=False, rstrip=True),
                           AddedToken("<l>", special=True, normalized=False, lstrip=True)])
    ours, theirs = _pair(tmp_path, tk)
    _same(ours, theirs, ["<r>  <l>", "<r> <l> x", "a<r><l>", "<r>\t\t<l>b", "x <r>\t y", "<l> <r>  <l>"])


# --- Split regexes: Oniguruma's meanings --------------------------------------------------------

ONIGURUMA = [
    (r"[^\n]+$", ["a\nb\nc", "a\nb\nc\n", "one line", "x\r\ny\n\nz"]),
    (r"\w+$", ["ab\ncd\nef", "ab \ncd\n", "end"]),
    (r"\s+$", ["a  \nb \n", "  \n  \n", "x \t\ny"]),
    (r"(?m)^.", ["ab\ncd\nef", "\n\nx", "a.b\n.c"]),
    (r"\w+\Z", ["ab\ncd", "ab\ncd\n", "ab cd \n"]),
    (r"\h+", ["a \t b\u00a0c\u3000d", "0x1F af", "tab\t\tx"]),
    (r"(?i:\p{Lu})", ["ABC abc ǅ ǆ Σσς", "Straße STRASSE", "ÉéÈè"]),
]


@pytest.mark.parametrize("behavior", ["isolated", "removed"])
@pytest.mark.parametrize("regex, texts", ONIGURUMA, ids=[r for r, _ in ONIGURUMA])
def test_split_regex_has_onigurumas_meaning(tmp_path, regex, texts, behavior):
    # Removed drops what the regex matches, so each difference of meaning shows in the ids.
    tk = train(pre_tokenizers.Sequence([split(regex, behavior), byte_level()]))
    ours, theirs = _pair(tmp_path, tk)
    _same(ours, theirs, texts)


def test_the_dollar_line_split_keeps_every_line(tmp_path):
    # Oniguruma's `$` is at every line end: Removed leaves the two new lines alone.
    tk = train(pre_tokenizers.Sequence([split(r"[^\n]+$", "removed"), byte_level()]), vocab_size=257)
    ours, theirs = _pair(tmp_path, tk)
    assert len(_ids(theirs, "a\nb\nc")) == 2
    assert ours.encode_ordinary("a\nb\nc") == _ids(theirs, "a\nb\nc", False)


def test_a_repeated_group_on_a_long_word_encodes(tmp_path):
    # No recursion whose depth the text chooses: 999 letters and more encode.
    tk = train(pre_tokenizers.Sequence([split(r"(?:\p{L}\p{M}*)+|\s+|.", "isolated"), byte_level()]))
    ours, theirs = _pair(tmp_path, tk)
    _same(ours, theirs, ["a" * 999, "e\u0301" * 5000, ("word " * 50 + "x" * 20000)])


# --- added tokens that are vocabulary tokens, templates ------------------------------------------

def test_a_special_token_that_is_a_vocabulary_token(tmp_path):
    # On a file whose split is one of our named rules: it once loaded as a plain tokenizer without it.
    from bpe import formats
    tk = train(pre_tokenizers.Sequence([split(formats.ONIGURUMA_PATTERNS["gpt4"]), byte_level()]))
    assert tk.token_to_id("e") is not None
    tk.add_special_tokens([AddedToken("e", special=True, normalized=False)])
    ours, theirs = _pair(tmp_path, tk)
    _same(ours, theirs, ["the tree", "e", "eee", "Once upon a time"])
    assert ours.encode("the", allowed_special="all") != ours.encode_ordinary("the")


def test_a_template_is_kept_on_a_file_of_one_split(tmp_path):
    # A file whose rules are otherwise one of our split patterns keeps its template.
    from bpe import formats
    tk = train(pre_tokenizers.Sequence([split(formats.ONIGURUMA_PATTERNS["gpt4"]), byte_level()]))
    tk.add_special_tokens([AddedToken("<s>", special=True, normalized=False)])
    tk.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", tk.token_to_id("<s>"))])
    ours, theirs = _pair(tmp_path, tk)
    theirs.encode_special_tokens = False
    for text in ["Once upon a time", "", "a<s>b"]:
        assert ours.encode_with_template(text) == theirs.encode(text).ids


# --- what Hugging Face refuses is refused, by a ValueError naming the field -----------------------

def _document():
    tk = train(_plain())
    tk.add_special_tokens([AddedToken("<s>", special=True, normalized=False)])
    tk.add_tokens([AddedToken("<t>", special=False, normalized=True)])
    return json.loads(tk.to_str())


def _digits(document):
    document["pre_tokenizer"]["pretokenizers"].insert(0, {"type": "Digits", "individual_digits": False})


BAD = {
    "pre_tokenizer": lambda d: d.__setitem__("pre_tokenizer", "ByteLevel"),
    "invert": lambda d: d["pre_tokenizer"]["pretokenizers"][0].__setitem__("invert", "false"),
    "add_prefix_space": lambda d: d["pre_tokenizer"]["pretokenizers"][1].__setitem__("add_prefix_space", "false"),
    "use_regex": lambda d: d["pre_tokenizer"]["pretokenizers"][1].__setitem__("use_regex", "false"),
    "trim_offsets": lambda d: d["pre_tokenizer"]["pretokenizers"][1].__setitem__("trim_offsets", "false"),
    "ignore_merges": lambda d: d["model"].__setitem__("ignore_merges", "false"),
    "special": lambda d: d["added_tokens"][0].__setitem__("special", "false"),
    "lstrip": lambda d: d["added_tokens"][0].__setitem__("lstrip", "false"),
    "rstrip": lambda d: d["added_tokens"][1].__setitem__("rstrip", "false"),
    "single_word": lambda d: d["added_tokens"][1].__setitem__("single_word", "false"),
    "normalized": lambda d: d["added_tokens"][1].__setitem__("normalized", "false"),
    "individual_digits": lambda d: (_digits(d), d["pre_tokenizer"]["pretokenizers"][0].__setitem__(
        "individual_digits", "false")),
    "normalizer": lambda d: d.__setitem__("normalizer", "NFC"),
    "post_processor": lambda d: d.__setitem__("post_processor", "ByteLevel"),
}


@pytest.mark.parametrize("field", list(BAD))
def test_what_hugging_face_refuses_is_refused_naming_the_field(tmp_path, field):
    document = _document()
    BAD[field](document)
    text = json.dumps(document, ensure_ascii=False)
    with pytest.raises(Exception):  # the oracle: Hugging Face refuses the file
        Tokenizer.from_str(text)
    path = tmp_path / "tokenizer.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=field):
        BPETokenizer.from_huggingface(path)


def test_a_normalized_added_token_is_matched_as_its_content_normalized(tmp_path):
    # Hugging Face normalizes a normalized added token's content before matching it: a
    # decomposed "e\u0301" token is found where the NFC text holds "é" (and decodes to its content).
    from tokenizers import normalizers
    tk = train(_plain(), normalizers.NFC())
    tk.add_tokens([AddedToken("e\u0301", special=False, normalized=True)])
    ours, theirs = _pair(tmp_path, tk)
    _same(ours, theirs, ["\u00e9", "e\u0301", "caf\u00e9!", "cafe\u0301 x", "ee\u0301e"])


PADDING = {"strategy": "BatchLongest", "direction": "Right", "pad_to_multiple_of": None, "pad_id": 0,
           "pad_type_id": 0, "pad_token": "<p>"}
TRUNCATION = {"direction": "Right", "max_length": 5, "strategy": "LongestFirst", "stride": 0}
# (which, the field changed, its value; absent: the field left out)
PAD_CASES = ([("padding", key, "absent") for key in PADDING] + [("truncation", key, "absent") for key in TRUNCATION]
             + [("padding", "strategy", {"Fixed": 8}), ("padding", "strategy", {"Fixed": -1}),
                ("padding", "strategy", "Fixed"), ("padding", "strategy", {"Fixed": 8, "x": 1}),
                ("padding", "direction", "left"), ("padding", "pad_to_multiple_of", 8),
                ("padding", "pad_to_multiple_of", 1.0), ("padding", "pad_id", 2 ** 32), ("padding", "pad_id", -1),
                ("padding", "pad_id", True), ("padding", "pad_type_id", 3.0), ("padding", "pad_token", 5),
                ("padding", "bogus", 1), ("truncation", "strategy", "OnlySecond"),
                ("truncation", "strategy", "longest_first"), ("truncation", "max_length", 2 ** 64 - 1),
                ("truncation", "stride", -1), ("truncation", "direction", "Left"),
                ("truncation", "direction", None)])


@pytest.mark.parametrize("which,key,value", PAD_CASES)
def test_padding_and_truncation_are_read_as_hugging_face_reads_them(tmp_path, which, key, value):
    document = _document()
    params = dict(PADDING if which == "padding" else TRUNCATION)
    if value == "absent":
        del params[key]
    else:
        params[key] = value
    document[which] = params
    text = json.dumps(document, ensure_ascii=False)
    path = tmp_path / "tokenizer.json"
    path.write_text(text, encoding="utf-8")
    try:
        Tokenizer.from_str(text)
    except Exception:
        with pytest.raises(ValueError, match=f"{which}.*{key}"):
            BPETokenizer.from_huggingface(path)
        # And the same rules given to BPETokenizer itself (a tampered state).
        good = document.copy()
        good[which] = None
        path.write_text(json.dumps(good, ensure_ascii=False), encoding="utf-8")
        state = BPETokenizer.from_huggingface(path).state()
        state["rules"][which] = params
        with pytest.raises(ValueError, match=f"{which}.*{key}"):
            BPETokenizer.from_state(state)
        return
    assert BPETokenizer.from_huggingface(path).rules[which] == params
