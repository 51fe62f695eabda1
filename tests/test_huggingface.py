"""Hugging Face's tokenizer.json (bpe/huggingface.py): from_huggingface and
save_huggingface. A tokenizer.json gives Hugging Face's ids, or what would change them is
refused by name; merges we train, exported, give our ids in Hugging Face tokenizers and
load back equal; character offsets equal Hugging Face's; transformers loads the export
and pads with it.

tokenizers and transformers are optional (requirements-bench.txt), and so are GPT-2's
files (../shared/data/cs336); a test that needs one that is missing is skipped, and the
others use vocabularies made here.
"""
import json
from pathlib import Path

import pytest

from bpe import BPETokenizer
from vocabularies import END_OF_TEXT, gpt2_files, small_gpt2_vocabulary


@pytest.fixture(scope="module")
def small():
    return small_gpt2_vocabulary()


# --- tokenizer.json: what changes the ids is honoured or refused ---------------------------


def huggingface_file(path: Path, vocab: dict, pairs, change=None) -> Path:
    """A tokenizer.json made by Hugging Face tokenizers, as GPT-2's is: a ByteLevel pre-
    tokenizer, decoder and post-processor, <|endoftext|> added as special and normalized;
    change(tokenizer) alters it first."""
    tokenizers = pytest.importorskip("tokenizers")
    model = tokenizers.models.BPE(vocab={t: i for t, i in vocab.items() if t != END_OF_TEXT}, merges=list(pairs))
    tk = tokenizers.Tokenizer(model)
    tk.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = tokenizers.decoders.ByteLevel()
    tk.post_processor = tokenizers.processors.ByteLevel(trim_offsets=False)
    tk.add_special_tokens([tokenizers.AddedToken(END_OF_TEXT, special=True, normalized=True)])
    if change is not None:
        change(tk)
    tk.save(str(path))
    return path


TEXTS = ["hello world", "Hello <|endoftext|> world", "Once upon a time, Tom said hello!<|endoftext|>  x\n\n",
         "Café 日本 🐱 1234567", ""]


def test_gpt2_shaped_tokenizer_json_loads_and_gives_huggingfaces_ids(small, tmp_path):
    tokenizers = pytest.importorskip("tokenizers")
    tok, vocab, pairs = small
    path = huggingface_file(tmp_path / "tokenizer.json", vocab, pairs)
    document = json.loads(path.read_text(encoding="utf-8"))
    assert document["post_processor"]["type"] == "ByteLevel" and document["added_tokens"][0]["normalized"]
    ours, theirs = BPETokenizer.from_huggingface(path), tokenizers.Tokenizer.from_file(str(path))
    assert ours == tok
    for text in TEXTS:
        assert ours.encode(text, allowed_special="all") == theirs.encode(text).ids, text


def test_gpt2s_own_tokenizer_json_loads_and_gives_huggingfaces_ids(tmp_path):
    tokenizers = pytest.importorskip("tokenizers")
    vocab_path, merges_path = gpt2_files()
    vocab = json.loads(vocab_path.read_text(encoding="utf-8"))
    with open(merges_path, encoding="utf-8") as f:
        pairs = [tuple(line.rstrip("\n").split(" ")) for line in f if line.strip() and not line.startswith("#version")]
    path = huggingface_file(tmp_path / "tokenizer.json", vocab, pairs)
    ours, theirs = BPETokenizer.from_huggingface(path), tokenizers.Tokenizer.from_file(str(path))
    assert ours.encode("hello world") == theirs.encode("hello world").ids == [31373, 995]
    for text in TEXTS:
        assert ours.encode(text, allowed_special="all") == theirs.encode(text).ids, text


def _template(tk):
    import tokenizers
    tk.post_processor = tokenizers.processors.TemplateProcessing(
        single=f"{END_OF_TEXT} $A", special_tokens=[(END_OF_TEXT, tk.token_to_id(END_OF_TEXT))])


def _added(**flags):
    def change(tk):
        import tokenizers
        tk.add_special_tokens([tokenizers.AddedToken(END_OF_TEXT, special=True, normalized=True, **flags)])
    return change


def _plain_added(tk):
    import tokenizers
    tk.add_tokens([tokenizers.AddedToken("<|user|>", special=False)])


def _normalizer(tk):
    import tokenizers
    tk.normalizer = tokenizers.normalizers.Lowercase()


def _padding(tk):
    tk.enable_padding(pad_id=0, pad_token="!", length=64)


def _truncation(tk):
    tk.enable_truncation(max_length=3)


@pytest.mark.parametrize("change, field", [
    (_template, "post_processor"), (_added(lstrip=True), "lstrip"), (_added(rstrip=True), "rstrip"),
    (_added(single_word=True), "single_word"), (_plain_added, "special"), (_normalizer, "normalizer"),
    (_padding, "padding"), (_truncation, "truncation"),
], ids=["template", "lstrip", "rstrip", "single_word", "not-special", "normalizer", "padding", "truncation"])
def test_fields_that_change_huggingfaces_ids_are_refused_by_name(small, tmp_path, change, field):
    tokenizers = pytest.importorskip("tokenizers")
    tok, vocab, pairs = small
    path = huggingface_file(tmp_path / "tokenizer.json", vocab, pairs, change)
    theirs = tokenizers.Tokenizer.from_file(str(path))
    # What the field does: Hugging Face's ids differ from ours somewhere.
    texts = TEXTS + ["a <|user|> b", "HELLO", "x<|endoftext|>y"]
    assert any(theirs.encode(t).ids != tok.encode(t, allowed_special="all") for t in texts)
    with pytest.raises(ValueError, match=field):
        BPETokenizer.from_huggingface(path)


def test_tokenizer_json_with_a_truncated_model_or_clashing_ids_is_refused(small, tmp_path):
    tok, vocab, pairs = small
    path = tmp_path / "tokenizer.json"
    tok.save_huggingface(path)
    document = json.loads(path.read_text(encoding="utf-8"))
    cut = json.loads(json.dumps(document))
    cut["model"]["merges"] = cut["model"]["merges"][:10]
    path.write_text(json.dumps(cut), encoding="utf-8")
    with pytest.raises(ValueError, match="no merge makes.*truncated"):
        BPETokenizer.from_huggingface(path)
    clash = json.loads(json.dumps(document))
    clash["added_tokens"].append({"id": 5, "content": "<|pad|>", "single_word": False, "lstrip": False,
                                  "rstrip": False, "normalized": False, "special": True})
    path.write_text(json.dumps(clash), encoding="utf-8")
    with pytest.raises(ValueError, match="<\\|pad\\|>.*id 5"):
        BPETokenizer.from_huggingface(path)
