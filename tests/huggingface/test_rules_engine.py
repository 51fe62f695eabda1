"""The engine's path for a tokenizer.json's rules (csrc/pretokenizer.h, the Encoder's rules
path, csrc/py_rules.h), run on _core.Encoder directly with a rules dict written here from
the file's own parameters: its ids and offsets are Hugging Face's (`tokenizers`, the
oracle) on every shape of test_huggingface_models, on hostile text and stories, on one
thread and two and in batches; and a rules dict is read strictly."""
import json
import os
import sys
from pathlib import Path

import pytest

tokenizers = pytest.importorskip("tokenizers")
from tokenizers import Tokenizer  # noqa: E402

from bpe import _core  # noqa: E402
from bpe.huggingface import read_huggingface  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_huggingface_models import CORPUS, HOSTILE, QWEN2, SHAPES, shape  # noqa: E402


def stories():
    path = Path(os.environ.get("BPE_SHARED_DATA", "/nonexistent")) / "cs336" / "tinystories_sample.txt"
    if path.exists():
        return path.read_text(encoding="utf-8")
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from sample_text import made_up_stories
    return made_up_stories(4000)


STORIES = stories()
TEXTS = HOSTILE + CORPUS[:8] + [STORIES, "a\nb\nc", "word\n", "x  \n\n  y  ", " é", "\u00a0 x"]


def _steps(pre):
    """The file's pre_tokenizer as our list of steps."""
    if pre is None:
        return []
    if pre["type"] == "Sequence":
        return [step for p in pre["pretokenizers"] for step in _steps(p)]
    if pre["type"] == "Split":
        behavior = {"isolated": "Isolated", "removed": "Removed", "merged_with_previous": "MergedWithPrevious",
                    "merged_with_next": "MergedWithNext", "contiguous": "Contiguous"}.get(pre["behavior"],
                                                                                         pre["behavior"])
        return [{"type": "Split", "pattern": pre["pattern"]["Regex"], "behavior": behavior, "invert": pre["invert"]}]
    if pre["type"] == "Digits":
        return [{"type": "Digits", "individual_digits": pre["individual_digits"]}]
    if pre["type"] == "ByteLevel":
        return [{"type": "ByteLevel", "use_regex": pre.get("use_regex", True),
                 "add_prefix_space": pre["add_prefix_space"], "trim_offsets": False}]
    raise KeyError(pre["type"])


def _trimming(post):
    """The ByteLevel post-processor that trims offsets (alone or in a Sequence), or None."""
    if post is None:
        return None
    if post["type"] == "Sequence":
        return next((p for p in map(_trimming, post["processors"]) if p), None)
    return post if post["type"] == "ByteLevel" and post["trim_offsets"] else None


def rules_of(document):
    """Our rules dict from a tokenizer.json's parameters."""
    normalizer = document["normalizer"]
    if normalizer is not None and normalizer["type"] == "Sequence":
        assert all(n["type"] == "NFC" for n in normalizer["normalizers"])
        normalizer = normalizer["normalizers"][0] if normalizer["normalizers"] else None
    steps = _steps(document["pre_tokenizer"])
    trimming = _trimming(document["post_processor"])
    steps[-1]["trim_offsets"] = trimming is not None
    if trimming is not None:
        steps[-1]["trim_prefix_space"] = trimming["add_prefix_space"]
    return {"normalizer": None if normalizer is None else normalizer["type"],
            "pre_tokenizer": steps,
            "added_tokens": [{k: t[k] for k in ("content", "id", "special", "normalized", "lstrip", "rstrip",
                                                "single_word")} for t in document["added_tokens"]],
            "ignore_merges": document["model"].get("ignore_merges", False)}


def encoder_of(path, rules=None):
    args = read_huggingface(path)
    if rules is None:
        rules = rules_of(json.loads(Path(path).read_text(encoding="utf-8")))
    return _core.Encoder(args["merges"], special_tokens=args["special_tokens"], token_ids=args["token_ids"],
                         rules=rules)


def extra_shape(name):
    """Shapes beyond the models': ByteLevel's space put before every piece a Split leaves,
    with and without its regex, and offsets trimmed by the ByteLevel post-processor."""
    from test_huggingface_models import byte_level, split, train
    seq, post = tokenizers.pre_tokenizers.Sequence, tokenizers.processors
    if name == "split-prefix-regex":
        tk = train(seq([split(r"\s+|\p{N}+", "isolated"), byte_level(use_regex=True, add_prefix_space=True)]))
    elif name == "named-prefix":  # a named rule's Split, then ByteLevel's space before each of its chunks
        tk = train(seq([split(QWEN2, "isolated"), byte_level(add_prefix_space=True)]),
                   tokenizers.normalizers.NFC())
    elif name == "split-prefix":
        tk = train(seq([split(r"\s+|\p{N}+", "removed"), byte_level(add_prefix_space=True)]))
    elif name == "prefix-trimmed":
        tk = train(byte_level(use_regex=True, add_prefix_space=True))
        tk.post_processor = post.ByteLevel(trim_offsets=True)
    elif name == "trimmed-nfc":
        tk = train(seq([split(r"\s+|\p{N}+", "merged_with_next"), byte_level(use_regex=True)]),
                   tokenizers.normalizers.NFC())
        tk.post_processor = post.ByteLevel(trim_offsets=True)
        tk.add_tokens([tokenizers.AddedToken(" x", special=False, normalized=True),
                       tokenizers.AddedToken("cafe\u0301", special=False, normalized=True),
                       tokenizers.AddedToken("Ame\u0301", special=False, normalized=False)])
    elif name.startswith("named-"):  # a named rule's regex under each behaviour (MiniMax: removed, inverted)
        behavior, _, inv = name[len("named-"):].partition("-")
        tk = train(seq([split(QWEN2, behavior, invert=inv == "invert"), byte_level()]),
                   tokenizers.normalizers.NFC())
    else:
        raise KeyError(name)
    return tk


EXTRA = ["split-prefix-regex", "split-prefix", "named-prefix", "prefix-trimmed", "trimmed-nfc"] + [
    f"named-{b}{i}" for b in ("isolated", "removed", "merged_with_previous", "merged_with_next", "contiguous")
    for i in ("", "-invert")]


@pytest.fixture(scope="module", params=SHAPES + EXTRA)
def pair(request, tmp_path_factory):
    tk = extra_shape(request.param) if request.param in EXTRA else shape(request.param)
    path = tmp_path_factory.mktemp(request.param) / "tokenizer.json"
    tk.save(str(path))
    theirs = Tokenizer.from_file(str(path))
    theirs.no_padding()
    theirs.no_truncation()
    return request.param, path, encoder_of(path), theirs


def theirs_encoding(tk, text, special):
    tk.encode_special_tokens = not special
    return tk.encode(text, add_special_tokens=False)


def test_ordinary_ids_are_huggingfaces_without_special_tokens(pair):
    name, _, ours, theirs = pair
    for text in TEXTS:
        assert ours.encode(text, (), ()) == theirs_encoding(theirs, text, False).ids, (name, text)


def test_ids_with_all_specials_are_huggingfaces(pair):
    name, _, ours, theirs = pair
    for text in TEXTS:
        assert ours.encode(text, "all", ()) == theirs_encoding(theirs, text, True).ids, (name, text)


def test_offsets_are_huggingfaces(pair):
    name, _, ours, theirs = pair
    for text in TEXTS:
        ids, spans = ours.encode_with_offsets(text, "all", ())
        encoding = theirs_encoding(theirs, text, True)
        assert ids == encoding.ids, (name, text)
        assert [tuple(s) for s in spans.tolist()] == encoding.offsets, (name, text)


def test_threads_arrays_and_batches_give_one_threads_ids(pair):
    name, _, ours, theirs = pair
    texts = TEXTS * 3
    expected = [theirs_encoding(theirs, t, True).ids for t in texts]
    for threads in (1, 2):
        assert ours.encode_batch(texts, "all", (), threads) == expected, (name, threads)
        flat, ends = ours.encode_batch_flat(texts, "all", (), threads)
        assert list(flat) == [i for ids in expected for i in ids]
        assert list(ours.count_batch(texts, "all", (), threads)) == [len(ids) for ids in expected]
    whole = "\n".join(texts)
    want = theirs_encoding(theirs, whole, True).ids
    for threads in (1, 2):
        assert list(ours.encode_array(whole, "all", (), threads)) == want, (name, threads)
        assert ours.count(whole, "all", (), threads) == len(want)
    assert ours.encode(whole.encode(), "all", ()) == want


def test_a_special_token_not_allowed_is_refused_as_tiktoken_does(tmp_path):
    path = tmp_path / "tokenizer.json"
    shape("qwen2").save(str(path))
    ours = encoder_of(path)
    with pytest.raises(ValueError, match="disallowed"):
        ours.encode("x<|endoftext|>", (), "all")
    assert ours.encode("x<|im_end|>", {"<|im_end|>"}, "all")[-1] == Tokenizer.from_file(str(path)).token_to_id(
        "<|im_end|>")


def _byte_alphabet():
    """GPT-2's byte alphabet: the character each byte stands for in a byte-level piece."""
    kept = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    chars, n = {}, 0
    for b in range(256):
        if b in kept:
            chars[chr(b)] = b
        else:
            chars[chr(256 + n)] = b
            n += 1
    return chars


def test_byte_levels_regex_is_the_gpt2_rule():
    """ByteLevel's use_regex splits as the named rule gpt2, which the rules path runs for it."""
    byte_level = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
    pre = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    alphabet = _byte_alphabet()
    for text in TEXTS:
        theirs = [bytes(alphabet[c] for c in piece) for piece, _ in pre.pre_tokenize_str(text)]
        assert _core.pretokenize(text.encode(), "gpt2") == theirs, text
        assert _core.pretokenize(text.encode(), byte_level) == theirs, text


# --- the rules dict, read strictly ---

def _base(tmp_path):
    path = tmp_path / "tokenizer.json"
    shape("qwen2").save(str(path))
    args = read_huggingface(path)
    return args, rules_of(json.loads(Path(path).read_text(encoding="utf-8")))


def _build(args, rules):
    return _core.Encoder(args["merges"], special_tokens=args["special_tokens"], token_ids=args["token_ids"],
                         rules=rules)


@pytest.mark.parametrize("where", ["invert", "add_prefix_space", "special", "lstrip", "individual_digits",
                                   "ignore_merges", "use_regex"])
def test_a_bool_written_as_a_str_is_a_value_error_naming_it(tmp_path, where):
    args, rules = _base(tmp_path)
    if where == "invert":
        rules["pre_tokenizer"][0]["invert"] = "false"
    elif where in ("add_prefix_space", "use_regex"):
        rules["pre_tokenizer"][-1][where] = "false"
    elif where in ("special", "lstrip"):
        rules["added_tokens"][0][where] = "false"
    elif where == "individual_digits":
        rules["pre_tokenizer"].insert(0, {"type": "Digits", "individual_digits": "false"})
    else:
        rules[where] = "false"
    with pytest.raises(ValueError, match=f"'{where}'.*must be True or False"):
        _build(args, rules)


@pytest.mark.parametrize("change, named", [
    (lambda r: r["pre_tokenizer"].insert(0, {"type": "Whitespace"}), "Whitespace"),
    (lambda r: r["pre_tokenizer"][0].update(behavior="Sideways"), "Sideways"),
    (lambda r: r["pre_tokenizer"][0].update(pattern="(?<=a)b"), "pattern"),
    (lambda r: r["pre_tokenizer"][0].update(pattern=r"\bx"), "word boundary"),
    (lambda r: r.update(normalizer="NFKC"), "NFKC"),
    (lambda r: r.update(pre_tokenizer="ByteLevel"), "pre_tokenizer"),
    (lambda r: r["pre_tokenizer"].append({"type": "Digits", "individual_digits": True}), "after ByteLevel"),
    (lambda r: r["pre_tokenizer"].pop(), "no ByteLevel"),
    (lambda r: r["added_tokens"][0].update(id="7"), "'id'"),
    (lambda r: r["added_tokens"][0].update(content=""), "'content'"),
    (lambda r: r["pre_tokenizer"][0].update(extra=1), "extra"),
    (lambda r: r.update(surprise=1), "surprise"),
    (lambda r: r.update(pre_tokenizer=None), "needed with normalizer"),
])
def test_a_rule_the_engine_cannot_run_is_a_value_error_naming_it(tmp_path, change, named):
    args, rules = _base(tmp_path)
    change(rules)
    with pytest.raises(ValueError, match=named):
        _build(args, rules)


def test_a_regex_with_a_repeated_group_runs_on_long_text(tmp_path):
    path = tmp_path / "tokenizer.json"
    shape("qwen2").save(str(path))
    document = json.loads(path.read_text())
    document["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = r"(?:\p{L}\p{M}*)+|\s+|."
    path.write_text(json.dumps(document))
    ours, theirs = encoder_of(path), Tokenizer.from_file(str(path))
    text = "a" * 999 + " é" * 50
    assert ours.encode(text, (), ()) == theirs_encoding(theirs, text, False).ids


@pytest.mark.parametrize("regex", [r"[^\n]+$", r"\w+$", r"\s+$", r"(?m)^.", r"\w+\Z", r"\h+", r"(?i:\p{Lu})",
                                   r"\s*", r"a*|b", r"$", r"^", r"(?=\s)", "gpt2"])
@pytest.mark.parametrize("behavior", ["isolated", "removed", "merged_with_previous", "merged_with_next", "contiguous"])
def test_a_split_reads_its_regex_as_oniguruma_and_cuts_at_empty_matches(tmp_path, regex, behavior):
    from test_huggingface_models import byte_level, split, train
    tk = train(tokenizers.pre_tokenizers.Sequence([split(regex, behavior), byte_level()]))
    path = tmp_path / "tokenizer.json"
    tk.save(str(path))
    ours = encoder_of(path)
    for text in ["a\nb\nc", "word\n", "Ab CD ef\n\n x ", "  ", "", "bab aab\n", "ABC def 0x1F ff", "a gpt2 b"] + HOSTILE[:12]:
        encoding = theirs_encoding(tk, text, False)
        ids, spans = ours.encode_with_offsets(text, (), ())
        assert ids == encoding.ids, text
        assert [tuple(s) for s in spans.tolist()] == encoding.offsets, text
