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

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bpe_reference as ref
from bpe import BPETokenizer
from bpe.formats import byte_alphabet
from sample_text import SCRIPTS_AND_EMOJI, TRICKY_TEXT, sample_bytes
from vocabularies import (CS336, END_OF_TEXT, PAD, cl100k_path, gpt2_files, merges_for, small_gpt2_vocabulary,
                          trained_with_two_specials)

STORIES = sample_bytes(150_000).decode("utf-8", errors="ignore")


@pytest.fixture(scope="module")
def small():
    return small_gpt2_vocabulary()


@pytest.fixture(scope="module")
def trained():
    return trained_with_two_specials()


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


# Templates, added-token flags, non-special added tokens, padding and truncation now load
# with Hugging Face's ids (tests/huggingface/test_huggingface_models.py); a Lowercase normalizer is
# still refused.
@pytest.mark.parametrize("change, field", [(_normalizer, "normalizer")], ids=["normalizer"])
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
    # Hugging Face does not read an added token's id from the file: it
    # numbers <|pad|> after the vocabulary, and so does from_huggingface.
    tokenizers = pytest.importorskip("tokenizers")
    ours, theirs = BPETokenizer.from_huggingface(path), tokenizers.Tokenizer.from_file(str(path))
    assert ours.special_ids["<|pad|>"] == theirs.token_to_id("<|pad|>") != 5



@pytest.mark.parametrize("merge, message", [
    (["\u0120", "nosuchtoken"], "merge 0: \u0120 nosuchtoken uses 'nosuchtoken', which is not in the vocabulary"),
    ("nosuchtoken \u0120", "merge 0: nosuchtoken \u0120 uses 'nosuchtoken', which is not in the vocabulary"),
    ("\u0120 x y", "merge 0: expected two tokens, got '\u0120 x y'"),
    (["\u0120"], "merge 0: expected two tokens, got list"),
    # An empty side names no token, even where the vocabulary has "" (JSON allows it).
    (" \u0120", "merge 0: expected two tokens, got ' \u0120'"),
    ("\u0120 ", "merge 0: expected two tokens, got '\u0120 '"),
    (["", "\u0120"], "merge 0: expected two tokens, got ['', '\u0120']"),
    (["\u0120", "\u4e2d"], "merge 0: \u0120 \u4e2d has '\u4e2d', which is not in the byte alphabet"),
    (["x", "q"], "merge 0: x q makes 'xq', which is not in the vocabulary")])
def test_a_bad_merge_is_a_value_error_that_names_it(small, tmp_path, merge, message):
    tok, _, _ = small
    path = tok.save_huggingface(tmp_path / "tokenizer.json")
    document = json.loads(path.read_text(encoding="utf-8"))
    document["model"]["merges"].insert(0, merge)
    path.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(ValueError) as e:
        BPETokenizer.from_huggingface(path)
    assert str(e.value).startswith(f"{path}, ") and message in str(e.value)


def test_bytes_that_utf8_never_holds_may_have_no_token(small, tmp_path):
    # DeepSeek's first vocabularies leave out 0xC0, 0xC1 and 0xF5 to 0xFF, which no UTF-8
    # text holds; any other byte must have a token.
    tokenizers = pytest.importorskip("tokenizers")
    tok, _, _ = small
    path = tok.save_huggingface(tmp_path / "tokenizer.json")
    document = json.loads(path.read_text(encoding="utf-8"))
    vocab = document["model"]["vocab"]
    never = {"\u00c0", "\u00c1", *map(chr, range(0xF5, 0x100))}
    left_out = never - {c for merge in document["model"]["merges"] for part in merge for c in part}
    assert left_out
    kept = sorted((i, t) for t, i in vocab.items() if t not in left_out)
    document["model"]["vocab"] = {t: k for k, (_, t) in enumerate(kept)}
    document["added_tokens"] = [{**a, "id": len(kept)} for a in document["added_tokens"]]
    path.write_text(json.dumps(document), encoding="utf-8")
    ours, theirs = BPETokenizer.from_huggingface(path), tokenizers.Tokenizer.from_file(str(path))
    for text in TEXTS + [TRICKY_TEXT]:
        assert ours.encode(text, allowed_special="all") == theirs.encode(text).ids, text
    document["model"]["vocab"].pop("A")
    path.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(ValueError, match="the byte 65 has no token"):
        BPETokenizer.from_huggingface(path)



def saved_document(tmp_path):
    """A small tokenizer's tokenizer.json, saved, and its JSON to edit and write back."""
    path = BPETokenizer.train(STORIES, 600, pattern="gpt2").save_huggingface(tmp_path / "tokenizer.json")
    return path, json.loads(path.read_text(encoding="utf-8"))

def test_a_second_merge_of_a_token_is_ranked_as_hugging_face_ranks_it(tmp_path):
    # Hugging Face takes any merges: a second split of a token is ranked by its place in
    # the file, even where the file has no more merges than tokens to make.
    tokenizers = pytest.importorskip("tokenizers")
    path, document = saved_document(tmp_path)
    merges, vocab = document["model"]["merges"], document["model"]["vocab"]
    made = {a + b for a, b in merges}
    second = next([t[:k], t[k:]] for t in sorted(made, key=len, reverse=True) for k in range(1, len(t))
                  if t[:k] in vocab and t[k:] in vocab and [t[:k], t[k:]] not in merges)
    merges.insert(len(merges) // 2, second)
    vocab["<|spare|>"] = len(vocab)  # a token no merge makes: as many merges as tokens to make
    path.write_text(json.dumps(document), encoding="utf-8")
    ours, theirs = BPETokenizer.from_huggingface(path), tokenizers.Tokenizer.from_file(str(path))
    texts = TEXTS + [TRICKY_TEXT, STORIES[:20_000], "".join(second).replace("\u0120", " ") * 3]
    for text in texts:
        assert ours.encode(text, allowed_special="all") == theirs.encode(text).ids, text[:80]


def test_a_merge_before_the_merge_of_its_part_is_ranked_as_hugging_face_ranks_it(tmp_path):
    # Llama 3's second merge is "\u0120 \u0120\u0120\u0120", whose right part a later merge
    # makes: Hugging Face ranks pairs, and so merges by it once that part is there.
    tokenizers = pytest.importorskip("tokenizers")
    path, document = saved_document(tmp_path)
    merges = document["model"]["merges"]
    made_at = {a + b: k for k, (a, b) in enumerate(merges)}
    j = next(j for j in range(len(merges) - 1, 0, -1) if made_at.get(merges[j][0], -1) > 0)
    merges.insert(made_at[merges[j][0]] - 1, merges.pop(j))  # before the merge that makes its left part
    path.write_text(json.dumps(document), encoding="utf-8")
    ours, theirs = BPETokenizer.from_huggingface(path), tokenizers.Tokenizer.from_file(str(path))
    assert ours.rules["ranked_merges"] is not None
    for text in TEXTS + [TRICKY_TEXT, STORIES[:20_000]]:
        assert ours.encode(text, allowed_special="all") == theirs.encode(text).ids, text[:80]
    # The loader's ranked merges are an array the tokenizer keeps; what it shows and saves
    # are lists, which load back to an equal tokenizer with the same ids.
    shown = ours.rules["ranked_merges"]
    assert isinstance(shown, list) and all(isinstance(m, list) and len(m) == 3 for m in shown)
    again = BPETokenizer.load(ours.save(tmp_path / "again.bpe"))
    assert again == ours and again.rules == ours.rules
    assert again.encode(STORIES[:20_000], allowed_special="all") == ours.encode(STORIES[:20_000], allowed_special="all")


def test_tokens_no_merge_makes_load_and_decode_to_their_bytes(tmp_path):
    # Qwen 3.6's vocabulary has tokens that no two tokens make ("\u4ff1\u4e50\u90e8"): no
    # merge makes them, and a merge that uses one never applies; Hugging Face loads both.
    tokenizers = pytest.importorskip("tokenizers")
    path, document = saved_document(tmp_path)
    vocab, merges = document["model"]["vocab"], document["model"]["merges"]
    unmade = "".join(byte_alphabet()[b] for b in "\u4ff1\u4e50\u90e8".encode("utf-8"))
    for token in (unmade, "x" + unmade):
        vocab[token] = len(vocab)
    merges.append(["x", unmade])  # never applies: no chunk holds the token it uses
    path.write_text(json.dumps(document, ensure_ascii=False), encoding="utf-8")
    ours, theirs = BPETokenizer.from_huggingface(path), tokenizers.Tokenizer.from_file(str(path))
    token_id = theirs.token_to_id(unmade)
    assert ours.decode([token_id]) == "\u4ff1\u4e50\u90e8" == theirs.decode([token_id])
    assert ours.decode_single_token_bytes(token_id) == "\u4ff1\u4e50\u90e8".encode("utf-8")
    for text in TEXTS + [TRICKY_TEXT, "x\u4ff1\u4e50\u90e8 \u4ff1\u4e50\u90e8"]:
        assert ours.encode(text, allowed_special="all") == theirs.encode(text).ids, text[:80]


def test_many_reserved_tokens_no_merge_makes_load_but_a_cut_merges_list_is_refused(tmp_path):
    # Reserved tokens in the vocabulary, not added tokens: no two tokens make them, so they
    # are not what a cut merges list leaves (tokens that two made tokens would make).
    tokenizers = pytest.importorskip("tokenizers")
    path, document = saved_document(tmp_path)
    vocab, merges = document["model"]["vocab"], document["model"]["merges"]
    for k in range(100):
        vocab[f"<|reserved_{k}|>"] = len(vocab)
    path.write_text(json.dumps(document), encoding="utf-8")
    ours, theirs = BPETokenizer.from_huggingface(path), tokenizers.Tokenizer.from_file(str(path))
    for text in TEXTS + ["<|reserved_7|> x"]:
        assert ours.encode_ordinary(text) == theirs.encode(text).ids, text
    del merges[-40:]
    path.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(ValueError, match="no merge makes 40 .* truncated"):
        BPETokenizer.from_huggingface(path)


_PIECE = st.text(alphabet=["a", "b", "\u0120", " ", "\u4e2d"], max_size=4)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(_PIECE, st.lists(st.one_of(_PIECE, st.integers(), st.none()), max_size=3), st.integers(),
                          st.none()), max_size=8),
       st.dictionaries(_PIECE, st.one_of(st.integers(-2, 300), st.booleans(), st.floats()), max_size=6))
def test_any_merges_give_the_cores_tokens_or_a_value_error(merges, extra_vocab):
    # The C++ reader of a tokenizer.json's merges (bpe._core.huggingface_merges) meets
    # whatever a file holds: never a crash, a ValueError for what is wrong.
    from bpe import load_core
    alphabet = byte_alphabet()
    vocab = {c: b for b, c in alphabet.items()}
    vocab.update(extra_vocab)
    try:
        core_merges, ids, unmade, pairs = load_core().huggingface_merges(vocab, merges, "".join(alphabet.values()))
    except ValueError:
        return
    assert len(ids) == 256 + len(core_merges) and all(0 <= left < 256 + k and 0 <= right < 256 + k
                                                        for k, (left, right) in enumerate(core_merges))

# --- character offsets, as Hugging Face gives them ----------------------------------------

@pytest.fixture(scope="module")
def gpt2():
    return BPETokenizer.from_gpt2(*gpt2_files())


def spans_by_bytes(tok: BPETokenizer, text: str, ids) -> list:
    """The oracle's spans (bpe_reference.char_spans) from the bytes of the tokens."""
    return ref.char_spans(text, tok.decode_tokens_bytes(ids))


def test_offsets_equal_huggingface_on_gpt2(gpt2, tmp_path):
    # Hugging Face's byte-level offsets, with trim_offsets=False in both the pre-tokenizer
    # and the decoder (what save_huggingface writes: a token keeps its leading space).
    tokenizers = pytest.importorskip("tokenizers")
    theirs = tokenizers.Tokenizer.from_file(str(gpt2.save_huggingface(tmp_path / "tokenizer.json")))
    document = json.loads((tmp_path / "tokenizer.json").read_text(encoding="utf-8"))
    assert document["pre_tokenizer"]["pretokenizers"][1]["trim_offsets"] is False
    for text in [SCRIPTS_AND_EMOJI, STORIES[:30_000], "👩\u200d👩\u200d👧", "e\u0301\u0301\u0301", "猫", ""]:
        ids, offsets = gpt2.encode_with_offsets(text, allowed_special="all")
        encoding = theirs.encode(text)
        assert ids == encoding.ids
        assert offsets.dtype == np.int64 and offsets.shape == (len(ids), 2)
        assert list(map(tuple, offsets.tolist())) == encoding.offsets, text[:40]


@pytest.mark.parametrize("pattern", ["default", "gpt2", "gpt4"])
def test_offsets_equal_huggingface_on_a_vocabulary_made_here(pattern, tmp_path):
    tokenizers = pytest.importorskip("tokenizers")
    tok = BPETokenizer.train([STORIES[:60_000], SCRIPTS_AND_EMOJI * 3], vocab_size=700, pattern=pattern,
                             special_tokens=[PAD, END_OF_TEXT])
    theirs = tokenizers.Tokenizer.from_file(str(tok.save_huggingface(tmp_path / "tokenizer.json")))
    ids, offsets = tok.encode_with_offsets(SCRIPTS_AND_EMOJI, allowed_special="all")
    assert ids == tok.encode(SCRIPTS_AND_EMOJI, allowed_special="all") == theirs.encode(SCRIPTS_AND_EMOJI).ids
    offsets = list(map(tuple, offsets.tolist()))
    assert offsets == theirs.encode(SCRIPTS_AND_EMOJI).offsets == spans_by_bytes(tok, SCRIPTS_AND_EMOJI, ids)
    assert SCRIPTS_AND_EMOJI[offsets[-2][0]:offsets[-2][1]] == END_OF_TEXT


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=60))
def test_offsets_equal_the_oracle_on_any_text(trained, text):
    ids, offsets = trained.encode_with_offsets(text, disallowed_special=())
    assert ids == trained.encode_ordinary(text)
    assert list(map(tuple, offsets.tolist())) == spans_by_bytes(trained, text, ids)


def test_offsets_follow_the_encode_arguments(trained):
    with pytest.raises(ValueError, match="disallowed"):
        trained.encode_with_offsets("a<|endoftext|>")
    assert trained.encode_with_offsets("a<|endoftext|>", disallowed_special=())[0] == trained.encode_ordinary("a<|endoftext|>")
    with pytest.raises(TypeError, match="str"):
        trained.encode_with_offsets(b"abc")


# --- the export, for real: a folder transformers loads --------------------------------------

def test_save_huggingface_writes_a_folder_with_its_config(trained, tmp_path):
    folder = trained.save_huggingface(tmp_path / "export")
    assert folder == tmp_path / "export"
    assert sorted(p.name for p in folder.iterdir()) == ["special_tokens_map.json", "tokenizer.json",
                                                         "tokenizer_config.json"]
    config = json.loads((folder / "tokenizer_config.json").read_text())
    assert config["tokenizer_class"] == "PreTrainedTokenizerFast"
    assert (config["eos_token"], config["bos_token"], config["pad_token"]) == (END_OF_TEXT, END_OF_TEXT, PAD)
    assert config["added_tokens_decoder"][str(trained.eot_token)]["content"] == END_OF_TEXT
    # A path ending in .json is still one file; from_huggingface takes either.
    single = trained.save_huggingface(tmp_path / "one.json")
    assert single == tmp_path / "one.json" and sorted(p.name for p in tmp_path.iterdir()) == ["export", "one.json"]
    assert BPETokenizer.from_huggingface(folder) == BPETokenizer.from_huggingface(single) == trained
    with pytest.raises(ValueError, match="no tokenizer.json"):
        BPETokenizer.from_huggingface(tmp_path)


def test_transformers_loads_the_export_and_pads_a_batch(trained, tmp_path):
    transformers = pytest.importorskip("transformers")
    tokenizers = pytest.importorskip("tokenizers")
    folder = trained.save_huggingface(tmp_path / "export")
    theirs = transformers.AutoTokenizer.from_pretrained(str(folder))
    assert (theirs.eos_token, theirs.pad_token, theirs.bos_token) == (END_OF_TEXT, PAD, END_OF_TEXT)
    assert (theirs.eos_token_id, theirs.pad_token_id) == (trained.eot_token, trained.special_ids[PAD])
    batch = ["Once upon a time", SCRIPTS_AND_EMOJI]
    padded = theirs(batch, padding=True)
    longest = max(len(trained.encode(t, allowed_special="all")) for t in batch)
    for text, ids, mask in zip(batch, padded["input_ids"], padded["attention_mask"]):
        ours = trained.encode(text, allowed_special="all")
        assert ids == ours + [trained.special_ids[PAD]] * (longest - len(ours))
        assert mask == [1] * len(ours) + [0] * (longest - len(ours))
    assert theirs.decode(padded["input_ids"][1], skip_special_tokens=False) == SCRIPTS_AND_EMOJI
    assert tokenizers.Tokenizer.from_file(str(folder / "tokenizer.json")).encode(SCRIPTS_AND_EMOJI).ids == \
        trained.encode(SCRIPTS_AND_EMOJI, allowed_special="all")


def test_a_huggingface_file_says_which_loader_to_use(tmp_path):
    tok = BPETokenizer.train([d for d in STORIES.split("\n") if d], vocab_size=300, special_tokens=[END_OF_TEXT])
    tok.save_huggingface(tmp_path / "tokenizer.json")
    with pytest.raises(ValueError, match="from_huggingface"):
        BPETokenizer.load(tmp_path / "tokenizer.json")
    assert BPETokenizer.from_huggingface(tmp_path / "tokenizer.json") == tok


# --- GPT-2's ids, and our merges exported, as Hugging Face tokenizers gives them ------------

def test_gpt2_ids_equal_huggingface():
    tokenizers = pytest.importorskip("tokenizers")
    vocab, merges = gpt2_files()
    gpt2 = BPETokenizer.from_gpt2(vocab, merges)
    reference = tokenizers.Tokenizer(tokenizers.models.BPE.from_file(str(vocab), str(merges)))
    reference.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    texts = [p.read_text(encoding="utf-8") for p in sorted(CS336.glob("*.txt")) if "merges" not in p.name]
    texts += [(CS336 / "corpus.en").read_text(encoding="utf-8"), TRICKY_TEXT]
    for text in texts:
        ids = gpt2.encode_ordinary(text)
        assert ids == reference.encode(text).ids
        assert gpt2.decode(ids) == text
        # Each token's bytes, looked up by its id (GPT-2's "!" is id 0, and came back
        # as b"\x00", our byte 0, when looked up by our number).
        assert b"".join(gpt2.decode_single_token_bytes(i) for i in ids) == text.encode("utf-8")
    assert gpt2.decode_single_token_bytes(gpt2.encode("!")[0]) == b"!"
    assert gpt2.eot_token == 50256 and len(gpt2) == 50257
    assert gpt2.encode("a<|endoftext|>", allowed_special="all") == gpt2.encode("a") + [50256]


@pytest.mark.parametrize("pattern", ["default", "gpt2", "gpt4"])
def test_exported_merges_give_our_ids_in_huggingface(pattern, tmp_path):
    tokenizers = pytest.importorskip("tokenizers")
    merges, held_out = merges_for(pattern)
    ours = BPETokenizer(merges, pattern=pattern, special_tokens=["<|pad|>", END_OF_TEXT])
    ours.save_huggingface(tmp_path / "tokenizer.json")
    theirs = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    ids = theirs.encode(held_out + END_OF_TEXT).ids
    assert ids == ours.encode(held_out + END_OF_TEXT, allowed_special="all")
    assert theirs.decode(ids, skip_special_tokens=False) == held_out + END_OF_TEXT
    assert BPETokenizer.from_huggingface(tmp_path / "tokenizer.json") == ours


@pytest.mark.parametrize("case", ["gap", "swapped", "gpt4"])
def test_special_ids_survive_huggingface(case, tmp_path):
    # Hugging Face numbers an added token after the vocabulary, whatever id the file
    # gives it, unless the vocabulary has it: {"<|endoftext|>": 300} on 257 tokens came
    # back as 257, {eot: 258, pad: 257} swapped, and GPT-4's <|endofprompt|> was 100260.
    tokenizers = pytest.importorskip("tokenizers")
    if case == "gpt4":
        ours = BPETokenizer.from_tiktoken(cl100k_path())
    else:
        specials, ids = ([END_OF_TEXT], [300]) if case == "gap" else ([END_OF_TEXT, "<|pad|>"], [258, 257])
        ours = BPETokenizer([], special_tokens=specials, token_ids=list(range(256)) + ids)
    ours.save_huggingface(tmp_path / "tokenizer.json")
    theirs = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    for token, i in ours.special_ids.items():
        assert theirs.token_to_id(token) == i
        assert theirs.encode(f"a{token}b").ids == ours.encode(f"a{token}b", allowed_special="all")
    assert BPETokenizer.from_huggingface(tmp_path / "tokenizer.json") == ours
