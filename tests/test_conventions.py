"""tiktoken's and Hugging Face's conventions in full: every public method of
tiktoken.Encoding is here (or left out in docs/library.md, with the reason), specials
numbered as tiktoken numbers them, character offsets that equal Hugging Face's, a
streaming decoder, an export that transformers loads and pads with, and clear messages
where the library used to be silent.

tiktoken, tokenizers and transformers are optional (requirements-bench.txt); GPT-2's
files come from ../shared; each test that needs one of them skips without it, and the
others use vocabularies made here.
"""
import inspect
import json
import pickle
import random
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bpe_reference as ref
import sample
from bpe import BPETokenizer, formats
from sample_text import sample_bytes
from vocabularies import cl100k_path, gpt2_files

ROOT = Path(__file__).resolve().parent.parent
END_OF_TEXT, PAD = "<|endoftext|>", "<|pad|>"
STORIES = sample_bytes(150_000).decode("utf-8", errors="ignore")
# Emoji with joiners, skin tones and flags, CJK, combining marks (several on one
# letter), Hangul jamo, right-to-left text, a real U+FFFD, odd spaces, specials.
HOSTILE = ("a 👩\u200d👩\u200d👧\u200d👦 👍🏽 🇯🇵🇫🇷 猫が好き 日本語のテキスト。 e\u0301\u0302x n\u0303 "
           "\u1100\u1161\u11a8 \u05e9\u05dc\u05d5\u05dd \ufffd! Tom's\u00a0x\u2028y  \t\n\n"
           "Zorblax" + " " * 9 + "1234567 ٣٤٥<|endoftext|>end")


@pytest.fixture(scope="module")
def trained():
    """A vocabulary made here, with the pipeline's two specials."""
    return BPETokenizer.train([STORIES, HOSTILE * 5], vocab_size=800, pattern="gpt2", special_tokens=[PAD, END_OF_TEXT])


@pytest.fixture(scope="module")
def gpt2():
    return BPETokenizer.from_gpt2(*gpt2_files())


def tiktoken_of(tok: BPETokenizer, tmp_path):
    """The same tokenizer as a tiktoken.Encoding, through our tiktoken export."""
    tiktoken = pytest.importorskip("tiktoken")
    from tiktoken.load import load_tiktoken_bpe

    tok.save_tiktoken(tmp_path / "ours.tiktoken")
    return tiktoken.Encoding("ours", pat_str=formats.TIKTOKEN_PATTERNS[tok.pattern],
                             mergeable_ranks=load_tiktoken_bpe(str(tmp_path / "ours.tiktoken")),
                             special_tokens=tok.special_ids)


# --- 1. tiktoken's names -----------------------------------------------------------------

def left_out_of_tiktoken() -> dict:
    """docs/library.md's list of tiktoken's names left out, as {name: reason}."""
    text = (ROOT / "docs" / "library.md").read_text(encoding="utf-8")
    section = text.split("### Left out of tiktoken's API, and why", 1)
    assert len(section) == 2, "docs/library.md has no list of what is left out of tiktoken's API"
    body = re.split(r"\n#+ ", section[1], maxsplit=1)[0]
    return dict(re.findall(r"^- `(\w+)`: (\S.*)$", body, flags=re.M))


def tiktoken_public_names() -> set:
    """The public names of tiktoken.Encoding: its methods and properties, read at run
    time, and the attributes an instance sets (name, max_token_value)."""
    tiktoken = pytest.importorskip("tiktoken")
    instance = tiktoken.Encoding("x", pat_str=r"\S+|\s+", mergeable_ranks={bytes([b]): b for b in range(256)},
                                 special_tokens={END_OF_TEXT: 256})
    return {n for n in dir(tiktoken.Encoding) if not n.startswith("_")} | \
        {n for n in vars(instance) if not n.startswith("_")}


def test_every_public_name_of_tiktoken_is_here_or_left_out_with_a_reason():
    names = tiktoken_public_names()
    assert {"encode", "decode_with_offsets", "name", "max_token_value"} <= names  # the reading works
    left_out = left_out_of_tiktoken()
    ours = BPETokenizer([], special_tokens=[END_OF_TEXT])  # an instance: name is set on it, as in tiktoken
    missing = sorted(n for n in names if not hasattr(ours, n) and n not in left_out)
    assert not missing, f"tiktoken has {missing}, which BPETokenizer neither has nor lists as left out"
    assert all(len(reason) > 20 for reason in left_out.values())
    # The list names only what is really missing here.
    assert not [n for n in left_out if hasattr(ours, n)]
    assert set(left_out) <= names


def test_tiktoken_keyword_arguments_are_accepted():
    tiktoken = pytest.importorskip("tiktoken")
    for name in tiktoken_public_names():
        theirs = getattr(tiktoken.Encoding, name, None)
        ours = getattr(BPETokenizer, name, None)
        if not callable(theirs) or ours is None:
            continue
        keywords = {p.name for p in inspect.signature(theirs).parameters.values() if p.kind is p.KEYWORD_ONLY}
        accepted = set(inspect.signature(ours).parameters)
        assert keywords <= accepted, f"{name}: tiktoken takes {sorted(keywords - accepted)} by keyword, we do not"


def test_special_tokens_as_a_dict_are_numbered_as_given():
    merges = BPETokenizer.train(STORIES, vocab_size=400).merges
    # tiktoken's own way of numbering specials, which was refused with a TypeError.
    tok = BPETokenizer(merges, special_tokens={END_OF_TEXT: 50256, PAD: 50300})
    assert tok.special_tokens == (END_OF_TEXT, PAD)
    assert tok.special_ids == {END_OF_TEXT: 50256, PAD: 50300}
    assert tok.eot_token == 50256 and tok.n_vocab == 50301 and tok.max_token_value == 50300
    assert tok.encode("hi<|pad|><|endoftext|>", allowed_special="all")[-2:] == [50300, 50256]
    # The same tokenizer as a list and every id, so equal, and its file loads back to it.
    as_list = BPETokenizer(merges, special_tokens=[END_OF_TEXT, PAD],
                           token_ids=list(range(256 + len(merges))) + [50256, 50300])
    assert tok == as_list
    assert BPETokenizer.from_state(tok.state()) == tok
    # With the ordinary tokens' own numbering beside it, as formats' loaders give it.
    ids = list(range(256 + len(merges)))[::-1]
    shuffled = BPETokenizer(merges, special_tokens={END_OF_TEXT: 9000}, token_ids=ids)
    assert list(shuffled.token_ids) == ids + [9000] and shuffled.special_ids == {END_OF_TEXT: 9000}
    for bad, message in [({END_OF_TEXT: "1"}, "int"), ({END_OF_TEXT: True}, "int"), ({1: 300}, "str"),
                         ({END_OF_TEXT: 7}, "two tokens have the id 7")]:
        with pytest.raises((TypeError, ValueError), match=message):
            BPETokenizer(merges, special_tokens=bad)


def test_tiktoken_methods_agree_with_tiktoken(trained, tmp_path):
    theirs = tiktoken_of(trained, tmp_path)
    text = STORIES[:20_000] + HOSTILE
    ids = trained.encode(text, allowed_special="all")
    assert ids == theirs.encode(text, allowed_special="all")
    assert trained.decode_tokens_bytes(ids) == theirs.decode_tokens_bytes(ids)
    assert trained.decode_with_offsets(ids) == theirs.decode_with_offsets(ids)
    assert trained.token_byte_values() == theirs.token_byte_values()
    assert trained.max_token_value == theirs.max_token_value and trained.n_vocab == theirs.n_vocab
    for token in [b"the", " the", "e", END_OF_TEXT, b"\xe7\x8c"]:
        try:
            expected = theirs.encode_single_token(token)
        except KeyError:
            with pytest.raises(KeyError):
                trained.encode_single_token(token)
        else:
            assert trained.encode_single_token(token) == expected
    assert [trained.is_special_token(i) for i in ids[-3:]] == [theirs.is_special_token(i) for i in ids[-3:]]
    array = trained.encode_to_numpy(text, allowed_special="all")
    assert array.dtype == theirs.encode_to_numpy(text, allowed_special="all").dtype == np.uint32
    assert array.tolist() == ids
    assert trained.encode_array(text, allowed_special="all").dtype == np.uint16  # encode_array stays compact
    batch = [STORIES[:500], HOSTILE]
    assert trained.encode_batch(batch, num_threads=2, allowed_special="all") == \
        theirs.encode_batch(batch, num_threads=2, allowed_special="all")
    assert trained.encode_ordinary_batch(batch, num_threads=1) == theirs.encode_ordinary_batch(batch, num_threads=1)
    coded = theirs.encode_batch(batch, allowed_special="all")
    assert trained.decode_batch(coded, num_threads=2) == theirs.decode_batch(coded, num_threads=2)
    assert trained.decode_bytes_batch(coded, num_threads=2) == theirs.decode_bytes_batch(coded, num_threads=2)
    with pytest.raises(TypeError, match="threads"):
        trained.encode_batch(batch, threads=1, num_threads=2)


def test_decode_with_offsets_equals_tiktoken_on_gpt4():
    tiktoken = pytest.importorskip("tiktoken")
    gpt4 = BPETokenizer.from_tiktoken(cl100k_path())
    theirs = tiktoken.Encoding("cl100k", pat_str=formats.TIKTOKEN_PATTERNS["gpt4"],
                               mergeable_ranks=formats.read_tiktoken(cl100k_path()),
                               special_tokens=formats.CL100K_SPECIAL_IDS)
    ids = gpt4.encode(HOSTILE, allowed_special="all")
    assert gpt4.decode_with_offsets(ids) == theirs.decode_with_offsets(ids)
    assert gpt4.token_byte_values() == theirs.token_byte_values()
    assert gpt4.max_token_value == theirs.max_token_value == 100276


def test_name_is_kept_in_the_file_but_not_in_equality(tmp_path):
    merges = BPETokenizer.train(STORIES, vocab_size=300).merges
    named = BPETokenizer(merges, special_tokens=[END_OF_TEXT], name="stories-300")
    plain = BPETokenizer(merges, special_tokens=[END_OF_TEXT])
    assert named.name == "stories-300" and plain.name is None
    assert named == plain
    assert BPETokenizer.load(named.save(tmp_path / "named.bpe")).name == "stories-300"
    assert pickle.loads(pickle.dumps(named)).name == "stories-300"
    # A file without a name (every file written before) loads, and one written without
    # a name is the same bytes as before.
    text = plain.save(tmp_path / "plain.bpe").read_text()
    assert '"name"' not in text and BPETokenizer.load(tmp_path / "plain.bpe").name is None
    with pytest.raises(TypeError, match="name"):
        BPETokenizer(merges, name=3)


# --- 2. offsets ------------------------------------------------------------------------------

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
    for text in [HOSTILE, STORIES[:30_000], "👩\u200d👩\u200d👧", "e\u0301\u0301\u0301", "猫", ""]:
        ids, offsets = gpt2.encode_with_offsets(text, allowed_special="all")
        encoding = theirs.encode(text)
        assert ids == encoding.ids
        assert offsets.dtype == np.int64 and offsets.shape == (len(ids), 2)
        assert list(map(tuple, offsets.tolist())) == encoding.offsets, text[:40]


@pytest.mark.parametrize("pattern", ["default", "gpt2", "gpt4"])
def test_offsets_equal_huggingface_on_a_vocabulary_made_here(pattern, tmp_path):
    tokenizers = pytest.importorskip("tokenizers")
    tok = BPETokenizer.train([STORIES[:60_000], HOSTILE * 3], vocab_size=700, pattern=pattern,
                             special_tokens=[PAD, END_OF_TEXT])
    theirs = tokenizers.Tokenizer.from_file(str(tok.save_huggingface(tmp_path / "tokenizer.json")))
    ids, offsets = tok.encode_with_offsets(HOSTILE, allowed_special="all")
    assert ids == tok.encode(HOSTILE, allowed_special="all") == theirs.encode(HOSTILE).ids
    offsets = list(map(tuple, offsets.tolist()))
    assert offsets == theirs.encode(HOSTILE).offsets == spans_by_bytes(tok, HOSTILE, ids)
    assert HOSTILE[offsets[-2][0]:offsets[-2][1]] == END_OF_TEXT


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


# --- 3. a streaming decoder ------------------------------------------------------------

def test_stream_decoder_gives_text_as_soon_as_it_is_whole(trained):
    decoder = trained.decoder()
    pieces = [decoder.add(i) for i in trained.encode("猫 🐱")]
    assert "".join(pieces) + decoder.flush() == "猫 🐱"
    # No piece holds half a character, and each whole character comes out at the token
    # that completes it.
    assert "\ufffd" not in "".join(pieces)
    data = b""
    for i, piece in zip(trained.encode("猫 🐱"), pieces):
        data += trained.decode_single_token_bytes(i)
        assert piece == "" or data.decode("utf-8", errors="ignore").endswith(piece)
    # A real U+FFFD is text like any other: out at once, not held back.
    decoder = trained.decoder()
    assert "".join(decoder.add(i) for i in trained.encode("a\ufffd")) == "a\ufffd"


def test_stream_decoder_equals_decode_on_random_ids_invalid_bytes_too(trained):
    rng = random.Random(0)
    ordinary = [i for i in range(trained.n_vocab) if not trained.is_special_token(i)]
    for _ in range(200):
        ids = [rng.choice(ordinary) for _ in range(rng.randint(0, 12))]
        if rng.random() < 0.3:
            ids.insert(rng.randint(0, len(ids)), trained.eot_token)
        decoder = trained.decoder()
        streamed = "".join(decoder.add(i) for i in ids) + decoder.flush()
        assert streamed == trained.decode(ids), ids
    decoder = trained.decoder()
    with pytest.raises(ValueError, match="outside the vocabulary"):
        decoder.add(trained.n_vocab)
    # After flush the decoder starts afresh.
    decoder.add(0xe7)
    assert decoder.flush() == "\ufffd" and decoder.add(ord("a")) == "a"


def test_story_printer_streams_without_decoding_the_story_again(trained, monkeypatch):
    class Out:
        def __init__(self):
            self.writes = []

        def write(self, s):
            self.writes.append(s)

        def flush(self):
            pass

    text = "Once 猫 \ufffd and 🐱!"
    ids = trained.encode(text)
    monkeypatch.setattr(BPETokenizer, "decode", lambda *a, **k: pytest.fail("the printer decoded all the ids"))
    out = Out()
    printer = sample.StoryPrinter(trained, [], out=out)
    for n, i in enumerate(ids):
        printer.add(i)
        if trained.decode_single_token_bytes(i) == "\ufffd".encode():
            assert out.writes[-1].endswith("\ufffd")  # a real U+FFFD is printed at once
    printer.finish()
    assert "".join(out.writes) == text + "\n"


# --- 4. Hugging Face, for real -------------------------------------------------------------

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
    batch = ["Once upon a time", HOSTILE]
    padded = theirs(batch, padding=True)
    longest = max(len(trained.encode(t, allowed_special="all")) for t in batch)
    for text, ids, mask in zip(batch, padded["input_ids"], padded["attention_mask"]):
        ours = trained.encode(text, allowed_special="all")
        assert ids == ours + [trained.special_ids[PAD]] * (longest - len(ours))
        assert mask == [1] * len(ours) + [0] * (longest - len(ours))
    assert theirs.decode(padded["input_ids"][1], skip_special_tokens=False) == HOSTILE
    assert tokenizers.Tokenizer.from_file(str(folder / "tokenizer.json")).encode(HOSTILE).ids == \
        trained.encode(HOSTILE, allowed_special="all")


def test_pickling_twice_gives_the_same_bytes(trained):
    # datasets.map fingerprints its function by pickling it: the same tokenizer must
    # pickle to the same bytes, before and after it has been used, and after a round trip.
    first = pickle.dumps(trained)
    trained.encode(HOSTILE, allowed_special="all")
    trained.token_to_id("the")  # fills a lookup table
    assert pickle.dumps(trained) == first
    assert pickle.dumps(pickle.loads(first)) == first


def test_datasets_fingerprint_of_a_tokenizer_is_stable(trained):
    # datasets (not in CI: pyarrow and pandas are large) hashes with its own pickler.
    pytest.importorskip("datasets")
    from datasets.fingerprint import Hasher

    assert Hasher.hash(trained) == Hasher.hash(pickle.loads(pickle.dumps(trained))) == \
        Hasher.hash(BPETokenizer.from_state(trained.state()))


# --- 5. clear where it was silent ------------------------------------------------------------

def test_an_empty_file_has_its_own_message(tmp_path):
    for content in ["", "\n  \n"]:
        (tmp_path / "empty.bpe").write_text(content)
        for pattern in [None, "default"]:
            # Was "a merges.txt from an earlier version ...: load it with pattern='default'",
            # and with it, a tokenizer of 0 merges.
            with pytest.raises(ValueError, match="empty.bpe is empty") as caught:
                BPETokenizer.load(tmp_path / "empty.bpe", pattern=pattern)
            assert "merges.txt" not in str(caught.value)


def test_a_truncated_file_says_it_is_truncated(trained, tmp_path):
    text = trained.save(tmp_path / "tok.bpe").read_text()
    for cut in [1, len(text) // 3, len(text) - 3]:
        (tmp_path / "tok.bpe").write_text(text[:cut])
        with pytest.raises(ValueError, match=r"tok.bpe is not a readable tokenizer file: it is truncated \(it ends at byte \d+, before its JSON"):
            BPETokenizer.load(tmp_path / "tok.bpe")


def test_train_warns_when_it_stops_below_vocab_size():
    with pytest.warns(UserWarning, match=r"n_vocab is 2\d\d, not the 300 asked for: training stopped after "
                                         r"\d+ of 43 merges, as no pair of tokens was left to merge"):
        tok = BPETokenizer.train("abcabc abd", vocab_size=300, special_tokens=[END_OF_TEXT])
    assert tok.n_vocab < 300
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert BPETokenizer.train(STORIES, vocab_size=300).n_vocab == 300
