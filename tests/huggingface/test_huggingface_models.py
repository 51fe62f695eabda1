"""tokenizer.json files shaped as today's models ship them (Qwen 2, Llama 3, DeepSeek, GLM),
built with the tokenizers library on a small vocabulary: from_huggingface gives Hugging
Face's ids on hostile text, by both comparisons (encode_ordinary against
encode_special_tokens=True, and encode with the specials allowed), and writes them back."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from bpe import BPETokenizer

ROOT = Path(__file__).resolve().parents[2]

tokenizers = pytest.importorskip("tokenizers")
from tokenizers import AddedToken, Regex, Tokenizer, models, normalizers, pre_tokenizers, processors, trainers  # noqa

# Published pre-tokenizer regexes (as their tokenizer.json files carry them).
QWEN2 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"
         r"|\s+(?!\S)|\s+")
LLAMA3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"
          r"|\s+(?!\S)|\s+")
# DeepSeek's Sequence of Splits, its letter class shortened to a few of its ranges.
DEEPSEEK = [r"[\r\n]", r"\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓΆΈ-ΊΌΎ-ΡΣ-ϵＡ-Ｚａ-ｚ]+", r"\s?[!-/:-~！-／：-～‘-‟　-。]+",
            r"\s+$", r"[一-龥ࠀ-一가-퟿]+", r"\p{N}+"]
GLM4 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"
        r"|\s+(?!\S)|\s+")

CORPUS = ["Once upon a time, a little girl named Lily found 12345 shiny stones in the garden.",
          "She said: \"Hello, world!\" and ran home.\r\nThe end.\n\n", "Ça été très élevé. Hôtel à côté.",
          "数字 1234567890 与中文混合，还有emoji 😀👍🏽。", "한국어 텍스트와 숫자 42", "def f(x):\n    return x ** 2\t# comment",
          "it's we're they've I'm you'll he'd IT'S", "<think> reasoning </think> answer"] * 3

HOSTILE = ["", " ", "a", "Hello world", "  leading and trailing  ", "e\u0301te\u0301 cafe\u0301 Ame\u0301lie",
           "\u1100\u1161\u11a8 \u1112\u1161\u11ab\u1100\u1173\u11af", "한국어", "line\r\nnext\rcr\n\r\nmix \r\n  ",
           "1234567890 12 3.14159 ٣٤٥ ½ 2²", "数字1234与中文，混合。", "emoji 😀👍🏽 👨‍👩‍👧 🇫🇷!", "it's IT'S we'VE",
           "<|endoftext|>", "x<|endoftext|>y", "<|endoftext|><|endoftext|>", "<think>why</think>so",
           "a<think>b", "<think><think>", "<|im_start|>user\nhi<|im_end|>", "<|im_start|><|im_end|>",
           "  <|im_end|>  x", "word<fim>word <fim> <fim>", "<|endoftext|", "|endoftext|>", "<<think>>",
           "tab\tsep\u00a0nbsp\u2028ls", "ΑΒΓ Straße ǅ", "\U0010ffff\x00\x7f"]


def train(pre, normalizer=None, ignore_merges=False, vocab_size=420):
    model = models.BPE(ignore_merges=ignore_merges)
    tk = Tokenizer(model)
    if normalizer is not None:
        tk.normalizer = normalizer
    tk.pre_tokenizer = pre
    tk.decoder = tokenizers.decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tk.train_from_iterator(CORPUS, trainer)
    return tk


def qwen_added(tk):
    """Qwen's shape: special tokens, and non-special ones (<think>) matched in every text."""
    tk.add_special_tokens([AddedToken(t, special=True, normalized=False)
                           for t in ("<|endoftext|>", "<|im_start|>", "<|im_end|>")])
    tk.add_tokens([AddedToken(t, special=False, normalized=False) for t in ("<think>", "</think>", "<fim>")])


def split(regex, behavior="isolated", invert=False):
    return pre_tokenizers.Split(Regex(regex), behavior=behavior, invert=invert)


def byte_level(use_regex=False, add_prefix_space=False):
    return pre_tokenizers.ByteLevel(add_prefix_space=add_prefix_space, use_regex=use_regex)


def shape(name, vocab_size=420):
    """A tokenizers.Tokenizer of the named shape."""
    def train(*args, **kwargs):
        return globals()["train"](*args, **kwargs, vocab_size=vocab_size)
    seq = pre_tokenizers.Sequence
    if name == "qwen2":
        tk = train(seq([split(QWEN2), byte_level()]), normalizers.NFC())
        qwen_added(tk)
    elif name == "llama3":
        tk = train(seq([split(LLAMA3), byte_level()]), ignore_merges=True)
        tk.add_special_tokens([AddedToken("<|begin_of_text|>", special=True, normalized=False),
                               AddedToken("<|eot_id|>", special=True, normalized=False)])
        tk.post_processor = processors.Sequence([
            processors.ByteLevel(trim_offsets=False),
            processors.TemplateProcessing(single="<|begin_of_text|> $A", pair="<|begin_of_text|> $A $B",
                                          special_tokens=[("<|begin_of_text|>", tk.token_to_id("<|begin_of_text|>"))])])
    elif name == "deepseek":
        tk = train(seq([split(r, "isolated") for r in DEEPSEEK] + [byte_level()]), normalizers.Sequence([]))
        tk.add_special_tokens([AddedToken("<｜begin▁of▁sentence｜>", special=True, normalized=False)])
        tk.add_tokens([AddedToken("<think>", special=False, normalized=True)])
        tk.post_processor = processors.TemplateProcessing(
            single="<｜begin▁of▁sentence｜> $A", special_tokens=[("<｜begin▁of▁sentence｜>",
                                                               tk.token_to_id("<｜begin▁of▁sentence｜>"))])
    elif name == "minimax":  # one Split that keeps only its matches (Removed, inverted), NFC
        tk = train(seq([split(QWEN2, "removed", invert=True), byte_level()]), normalizers.NFC())
        tk.add_special_tokens([AddedToken("]~!b[", special=True, normalized=False),
                               AddedToken("[e~[", special=True, normalized=False)])
    elif name == "janus":  # four Splits, the last `\s+$`
        tk = train(seq([split(r, "isolated") for r in DEEPSEEK[:4]] + [byte_level()]))
        tk.add_special_tokens([AddedToken("<｜begin▁of▁sentence｜>", special=True, normalized=False)])
    elif name == "glm4":
        tk = train(seq([split(GLM4), byte_level()]), ignore_merges=True)
        tk.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in ("<|endoftext|>", "[gMASK]")])
        tk.enable_padding(pad_id=0, pad_token="!", length=64)
        tk.enable_truncation(max_length=512)
    elif name == "digits":
        tk = train(seq([pre_tokenizers.Digits(individual_digits=True), split(r"\p{L}+|\s+", "isolated"),
                        byte_level()]))
    elif name == "digits-contiguous":
        tk = train(seq([pre_tokenizers.Digits(individual_digits=False), byte_level(use_regex=True)]))
    elif name.startswith("split-"):
        behavior, _, inv = name[len("split-"):].partition("-")
        tk = train(seq([split(r"\s+|\p{N}+", behavior, invert=inv == "invert"), byte_level()]))
    elif name == "bytelevel-prefix":
        tk = train(byte_level(use_regex=True, add_prefix_space=True))
    elif name == "added-flags":
        tk = train(seq([split(QWEN2), byte_level()]), normalizers.NFC())
        tk.add_special_tokens([AddedToken("<|endoftext|>", special=True, normalized=False, lstrip=True),
                               AddedToken("<|im_end|>", special=True, normalized=False, rstrip=True)])
        tk.add_tokens([AddedToken("<think>", special=False, normalized=True, single_word=True),
                       AddedToken("<fim>", special=False, normalized=False, lstrip=True, rstrip=True),
                       AddedToken("café", special=False, normalized=True),
                       AddedToken("<thi", special=False, normalized=False)])
    elif name == "gpt4-template":  # one of our split patterns, plain special tokens and a template
        tk = train(seq([split(LLAMA3), byte_level()]))
        tk.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in ("<|endoftext|>", "<|pad|>")])
        tk.post_processor = processors.TemplateProcessing(
            single="$A <|endoftext|>", special_tokens=[("<|endoftext|>", tk.token_to_id("<|endoftext|>"))])
    else:
        raise KeyError(name)
    return tk


SHAPES = ["qwen2", "llama3", "deepseek", "minimax", "janus", "glm4", "digits", "digits-contiguous", "split-isolated", "split-removed",
          "split-merged_with_previous", "split-merged_with_next", "split-contiguous", "split-isolated-invert",
          "split-removed-invert", "split-merged_with_next-invert", "bytelevel-prefix", "added-flags", "gpt4-template"]


def theirs_ids(tk, text, special):
    tk.encode_special_tokens = not special
    return tk.encode(text, add_special_tokens=False).ids


@pytest.fixture(scope="module", params=SHAPES)
def pair(request, tmp_path_factory):
    tk = shape(request.param)
    path = tmp_path_factory.mktemp(request.param) / "tokenizer.json"
    tk.save(str(path))
    ours = BPETokenizer.from_huggingface(path)
    theirs = Tokenizer.from_file(str(path))
    theirs.no_padding()
    theirs.no_truncation()
    return request.param, path, ours, theirs


def test_encode_ordinary_is_huggingfaces_ids_without_special_tokens(pair):
    name, _, ours, theirs = pair
    for text in HOSTILE + CORPUS[:8]:
        assert ours.encode_ordinary(text) == theirs_ids(theirs, text, special=False), (name, text)


def test_encode_with_all_specials_is_huggingfaces_ids(pair):
    name, _, ours, theirs = pair
    for text in HOSTILE + CORPUS[:8]:
        assert ours.encode(text, allowed_special="all") == theirs_ids(theirs, text, special=True), (name, text)


def test_encode_with_template_is_huggingfaces_default_ids(pair):
    name, _, ours, theirs = pair
    theirs.encode_special_tokens = False
    for text in HOSTILE:
        assert ours.encode_with_template(text) == theirs.encode(text).ids, (name, text)


def test_save_huggingface_keeps_template_padding_truncation(pair, tmp_path):
    # Written from the rules: Hugging Face reads the same ids, template, padding and truncation back.
    name, path, ours, _ = pair
    out = ours.save_huggingface(tmp_path / "again.json")
    before, after = json.loads(path.read_text(encoding="utf-8")), json.loads(out.read_text(encoding="utf-8"))
    for key in ("padding", "truncation"):
        assert after[key] == before[key], key
    again = Tokenizer.from_file(str(out))
    again.no_padding()
    again.no_truncation()
    for text in HOSTILE:
        assert theirs_ids(again, text, True) == ours.encode(text, allowed_special="all"), (name, text)
        assert theirs_ids(again, text, False) == ours.encode_ordinary(text), (name, text)
        again.encode_special_tokens = False
        assert again.encode(text).ids == ours.encode_with_template(text), (name, text)


def test_disallowed_special_raises_as_in_tiktoken(pair):
    name, _, ours, _ = pair
    specials = ([t["content"] for t in ours.rules["added_tokens"] if t["special"]] if ours.rules is not None
                else ours.special_tokens)
    for special in specials:
        with pytest.raises(ValueError):
            ours.encode(f"a{special}b")



# The pattern each shape's tokenizer reports: a one-Split pre-tokenizer whose regex is the
# published text of a named rule is named for it (Llama 3's and GLM-4's text is cl100k's
# rule, gpt4); another one Split is its regex; any other pre-tokenizer its steps in a word.
ONE_PATTERN = {"qwen2": "qwen2", "llama3": "gpt4", "glm4": "gpt4", "split-isolated": r"\s+|\p{N}+",
               "added-flags": "qwen2", "gpt4-template": "gpt4"}


def test_the_pattern_says_what_the_pre_tokenizer_is(pair):
    name, path, ours, _ = pair
    steps = json.loads(path.read_text(encoding="utf-8"))["pre_tokenizer"]
    steps = steps.get("pretokenizers", [steps])
    assert type(ours) is BPETokenizer
    assert ours.pattern == ONE_PATTERN.get(name, ", ".join(s["type"] for s in steps)), name


def test_a_regex_the_engine_cannot_run_is_refused_at_load_naming_it(tmp_path):
    # A lookbehind: Hugging Face's engine takes it, ours does not, and says so when the file loads.
    regex = r"(?<=[a-z])\d|\p{L}+|\p{N}|\s+|[^\s\p{L}\p{N}]+"
    tk = train(pre_tokenizers.Sequence([split(regex), byte_level()]))
    path = tmp_path / "tokenizer.json"
    tk.save(str(path))
    with pytest.raises(ValueError, match=r"(?i)look-?behind|\(\?<="):
        BPETokenizer.from_huggingface(path)

# --- what is refused, and the edges of the file ---------------------------------------------

def _document(name="qwen2", vocab_size=420):
    tk = shape(name, vocab_size)
    return json.loads(tk.to_str())


def _write(tmp_path, document, name="tokenizer.json"):
    path = tmp_path / name
    path.write_text(json.dumps(document, ensure_ascii=False), encoding="utf-8")
    return path


def test_an_added_tokens_id_is_huggingfaces_not_the_files(tmp_path):
    # Hugging Face ignores the file's id of an added token the vocabulary lacks: it numbers
    # it after the vocabulary (then after the added ids past it), in the file's order.
    document = _document()
    for k, added in enumerate(document["added_tokens"]):
        added["id"] = 5001 + 7 * k
    path = _write(tmp_path, document)
    ours, theirs = BPETokenizer.from_huggingface(path), Tokenizer.from_file(str(path))
    size = len(document["model"]["vocab"])
    assert [theirs.token_to_id(a["content"]) for a in document["added_tokens"]] == \
        list(range(size, size + len(document["added_tokens"])))
    for added in document["added_tokens"]:
        text = f"a{added['content']}b"
        assert ours.encode(text, allowed_special="all") == theirs_ids(theirs, text, special=True)
    assert ours.n_vocab == theirs.get_vocab_size(with_added_tokens=True)


def test_an_added_token_numbered_onto_another_token_is_refused(tmp_path):
    document = _document()
    vocab = document["model"]["vocab"]
    # A gap in the vocabulary's ids: Hugging Face would number the first added token
    # len(vocab), which is now the id of the vocabulary's last token.
    last = max(vocab, key=vocab.get)
    vocab[last] = len(vocab)
    with pytest.raises(ValueError, match="ambiguous"):
        BPETokenizer.from_huggingface(_write(tmp_path, document))


@pytest.mark.parametrize("where", ["top", "pre_tokenizer", "normalizer", "decoder", "merges"])
def test_json_nested_100000_deep_is_a_value_error(tmp_path, where):
    deep = "[" * 100_000 + "]" * 100_000
    if where == "top":
        text = deep
    elif where == "merges":
        text = json.dumps(_document()).replace('"merges": [', f'"merges": [{deep}, ', 1)
    else:
        text = json.dumps(_document()).replace(f'"{where}":', f'"{where}": {deep}, "x":', 1)
    path = tmp_path / "tokenizer.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError):
        BPETokenizer.from_huggingface(path)


def test_objects_and_lists_nested_50000_deep_are_a_value_error_not_a_crash(tmp_path):
    # Objects within lists, 50,000 deep: a JSON parser that recursed without a limit
    # would crash the process here, so the load runs in one of its own.
    deep = '{"a": [' * 50_000 + "{}" + "]}" * 50_000
    text = json.dumps(_document()).replace('"normalizer":', f'"normalizer": {deep}, "x":', 1)
    path = tmp_path / "tokenizer.json"
    path.write_text(text, encoding="utf-8")
    code = ("import sys; from bpe import BPETokenizer\n"
            "try:\n    BPETokenizer.from_huggingface(sys.argv[1])\n"
            "except ValueError as e:\n    print('ValueError', e)\n")
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=120,
                          cwd=ROOT)
    assert done.returncode == 0, done.stderr[-500:]
    assert done.stdout.startswith("ValueError") and "nested" in done.stdout


def test_pretokenizers_null_is_named(tmp_path):
    document = _document()
    document["pre_tokenizer"]["pretokenizers"] = None
    with pytest.raises(ValueError, match="pretokenizers"):
        BPETokenizer.from_huggingface(_write(tmp_path, document))


def _refusal(kind):
    document = _document()
    model = document["model"]
    if kind in ("Unigram", "WordPiece", "WordLevel"):
        model["type"] = kind
    elif kind == "byte_fallback":
        model["byte_fallback"] = True
    elif kind == "unk_token":
        model["unk_token"] = "<unk>"
    elif kind == "Metaspace":
        document["pre_tokenizer"] = {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always",
                                     "split": True}
    elif kind == "Lowercase":
        document["normalizer"] = {"type": "Lowercase"}
    elif kind == "BertProcessing":
        document["post_processor"] = {"type": "BertProcessing", "sep": ["</s>", 2], "cls": ["<s>", 0]}
    elif kind == "Whitespace":
        document["pre_tokenizer"] = {"type": "Whitespace"}
    elif kind == "no ByteLevel":
        document["pre_tokenizer"] = {"type": "Split", "pattern": {"Regex": r"\s+"}, "behavior": "Isolated",
                                     "invert": False}
    elif kind == "dropout":
        model["dropout"] = 0.1
    return document


@pytest.mark.parametrize("kind, named", [
    ("Unigram", "Unigram"), ("WordPiece", "WordPiece"), ("WordLevel", "WordLevel"), ("byte_fallback", "byte_fallback"),
    ("unk_token", "unk_token"), ("Metaspace", "Metaspace"), ("Lowercase", "Lowercase"),
    ("BertProcessing", "BertProcessing"), ("Whitespace", "Whitespace"), ("no ByteLevel", "ByteLevel"),
    ("dropout", "dropout")])
def test_what_would_change_the_ids_is_refused_by_name(tmp_path, kind, named):
    with pytest.raises(ValueError, match=named):
        BPETokenizer.from_huggingface(_write(tmp_path, _refusal(kind)))


def test_our_file_keeps_the_rules_and_tiktoken_refuses_them_in_one_line(tmp_path):
    ours = BPETokenizer.from_huggingface(_write(tmp_path, _document()))
    again = BPETokenizer.load(ours.save(tmp_path / "x.bpe"))
    assert again == ours and again.rules == ours.rules
    for text in HOSTILE:
        assert again.encode(text, allowed_special="all") == ours.encode(text, allowed_special="all")
    with pytest.raises(ValueError, match="normalizer") as refused:
        ours.save_tiktoken(tmp_path / "x.tiktoken")
    assert "\n" not in str(refused.value)


def test_our_own_files_still_load_as_plain_tokenizers(tmp_path):
    tok = BPETokenizer.train(CORPUS, 300, pattern="gpt4", special_tokens=["<|endoftext|>"])
    path = tok.save_huggingface(tmp_path / "ours.json")
    assert BPETokenizer.from_huggingface(path) == tok


# --- the bpe command: info shows the rules, convert keeps them ---------------------------

def _bpe(*args):
    import subprocess
    import sys
    return subprocess.run([sys.executable, "-m", "bpe", *map(str, args)], capture_output=True, text=True, timeout=120)


def test_bpe_info_shows_pattern_normalizer_added_tokens_and_template(tmp_path):
    path = tmp_path / "tokenizer.json"
    shape("deepseek").save(str(path))
    result = _bpe("info", path)
    assert result.returncode == 0, result.stderr
    for shown in ["Split Isolated: " + DEEPSEEK[1], "normalizer: none", "'<think>'  ordinary text (normalized)",
                  "'<｜begin▁of▁sentence｜>'  special", "template (encode_with_template): [",
                  "run by the compiled core", "Split Isolated: [\\r\\n]"]:
        assert shown in result.stdout, shown
    path = tmp_path / "qwen.json"
    shape("qwen2").save(str(path))
    shown = _bpe("info", path).stdout
    assert "normalizer: NFC" in shown and "run by the compiled core" in shown


def test_bpe_convert_keeps_the_rules_or_refuses_in_one_line(tmp_path):
    path, out = tmp_path / "tokenizer.json", tmp_path / "out.json"
    shape("llama3").save(str(path))
    result = _bpe("convert", path, out, "--to", "huggingface")
    assert result.returncode == 0, result.stderr
    ours, again = BPETokenizer.from_huggingface(path), Tokenizer.from_file(str(out))
    for text in HOSTILE:
        assert theirs_ids(again, text, special=True) == ours.encode(text, allowed_special="all"), text
    result = _bpe("convert", path, tmp_path / "out.bpe", "--to", "bpe")
    assert result.returncode == 0, result.stderr
    assert BPETokenizer.load(tmp_path / "out.bpe") == ours
    result = _bpe("convert", path, tmp_path / "out.tiktoken", "--to", "tiktoken")
    assert result.returncode == 1 and "Traceback" not in result.stderr and "ignore_merges" in result.stderr


# --- merges as files converted from tiktoken's ranks hold them: every split of a token ----

def _every_split(document):
    """The merges as Hugging Face's converter from tiktoken writes them (Llama 3's, GLM's
    files): every split of a token into two tokens of lower id, ranked by the token made,
    then by its parts' ids. Several merges then make one token."""
    vocab = document["model"]["vocab"]
    merges = []
    for token, i in sorted(vocab.items(), key=lambda item: item[1]):
        splits = [(token[:k], token[k:]) for k in range(1, len(token))
                  if vocab.get(token[:k], i) < i and vocab.get(token[k:], i) < i]
        merges.extend(sorted(splits, key=lambda s: (vocab[s[0]], vocab[s[1]])))
    document["model"]["merges"] = [list(m) for m in merges]
    return document


@pytest.mark.parametrize("name", ["llama3", "qwen2", "glm4"])
def test_several_merges_per_token_give_huggingfaces_ids(tmp_path, name):
    document = _every_split(_document(name, vocab_size=2000))
    assert len(document["model"]["merges"]) > len(document["model"]["vocab"]) - 256  # some token has two
    path = _write(tmp_path, document)
    ours, theirs = BPETokenizer.from_huggingface(path), Tokenizer.from_file(str(path))
    theirs.no_padding()
    theirs.no_truncation()
    for text in HOSTILE + CORPUS[:8]:
        assert ours.encode_ordinary(text) == theirs_ids(theirs, text, special=False), text
        assert ours.encode(text, allowed_special="all") == theirs_ids(theirs, text, special=True), text


def test_tokens_no_merge_makes_are_kept_as_hugging_face_keeps_them(tmp_path):
    # An unmade ASCII token in the vocabulary (files converted from tiktoken have some):
    # ignore_merges reaches it when a chunk is exactly it.
    document = _document("llama3")
    vocab = document["model"]["vocab"]
    for k, added in enumerate(document["added_tokens"]):
        added["id"] += 1
    vocab["Zorblax"] = len(vocab)
    path = _write(tmp_path, document)
    ours, theirs = BPETokenizer.from_huggingface(path), Tokenizer.from_file(str(path))
    for text in ["Zorblax", "a Zorblax b", "Zorblaxes"] + HOSTILE:
        assert ours.encode_ordinary(text) == theirs_ids(theirs, text, special=False), text
    assert vocab["Zorblax"] in ours.encode_ordinary("Zorblax")


def test_save_huggingface_folder_loads_in_transformers_shape(tmp_path):
    path = tmp_path / "tokenizer.json"
    shape("qwen2").save(str(path))
    ours = BPETokenizer.from_huggingface(path)
    folder = ours.save_huggingface(tmp_path / "folder")
    assert {p.name for p in folder.iterdir()} >= {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"}
    again = BPETokenizer.from_huggingface(folder)
    for text in HOSTILE:
        assert again.encode(text, allowed_special="all") == ours.encode(text, allowed_special="all")


def test_every_command_takes_a_tokenizer_json_with_rules(tmp_path):
    import subprocess
    import sys
    path, text = tmp_path / "tokenizer.json", tmp_path / "t.txt"
    shape("deepseek").save(str(path))
    text.write_text("Once upon a time <think> 12345\nthe end  \n", encoding="utf-8")
    ours = BPETokenizer.from_huggingface(path)
    ids = ours.encode_ordinary(text.read_text(encoding="utf-8"))
    assert _bpe("encode", "-t", path, text).stdout.split() == [str(i) for i in ids]
    assert _bpe("count", "-t", path, text).stdout.split()[0] == str(len(ids))
    decoded = subprocess.run([sys.executable, "-m", "bpe", "decode", "-t", str(path)], input=" ".join(map(str, ids)),
                             capture_output=True, text=True, timeout=120)
    assert decoded.returncode == 0 and decoded.stdout.rstrip("\n") == ours.decode(ids).rstrip("\n")
    assert _bpe("show", "-t", path, "Once <think>").returncode == 0
    assert _bpe("info", "-t", path).returncode == 0
    refused = _bpe("explain", "-t", path, " upon")
    assert refused.returncode == 1 and "Traceback" not in refused.stderr and len(refused.stderr.splitlines()) == 1
