"""The compiled core's boundary (bpe._core, through bpe.Encoder and BPETokenizer): every
argument is checked before it is used. token_ids of the wrong length, ids that would size
an allocation, ids or sizes given as numpy integers, bools or huge ints, and unordered
collections where an order is meant, each a clear exception naming the argument.
(Threads, fork and signals at the same boundary: test_threads.py.)
"""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import bpe
from bpe import BPETokenizer

ROOT = Path(__file__).resolve().parents[2]
SANITIZED = os.environ.get("BPE_VARIANT") in ("address", "thread")


# --- 1. token_ids must give an id to every token ----------------------------------------

@pytest.mark.parametrize("token_ids", [[], [0, 1], list(range(256)), list(range(257)), list(range(300))])
def test_token_ids_of_the_wrong_length_are_refused(token_ids):
    # 256 bytes + 1 merge + 1 special = 258 tokens; an identity prefix was accepted.
    with pytest.raises(ValueError, match=r"token_ids has \d+ ids, but there are 258 tokens"):
        BPETokenizer([(97, 98)], special_tokens=["<x>"], token_ids=token_ids)
    with pytest.raises(ValueError, match=r"token_ids has \d+ ids"):
        bpe.Encoder([(97, 98)], special_tokens=["<x>"], token_ids=token_ids)


def test_token_ids_of_the_wrong_length_are_refused_when_loading(tmp_path):
    tok = BPETokenizer([(97, 98)], special_tokens=["<x>"], token_ids=list(range(258)))
    assert tok.token_ids is None  # the identity, written as null
    state = tok.state()
    for token_ids in ([], [0, 1], list(range(257))):
        with pytest.raises(ValueError, match=r"token_ids has \d+ ids, but there are 258 tokens"):
            BPETokenizer.from_state({**state, "token_ids": token_ids})
        path = tmp_path / "bad.bpe"
        tok.save(path)
        path.write_text(path.read_text().replace('"token_ids": null', f'"token_ids": {token_ids}'))
        with pytest.raises(ValueError, match=r"bad\.bpe.*token_ids has \d+ ids"):
            BPETokenizer.load(path)


# --- 2. nothing allocated by the size of the input before its ids are checked ------------

@pytest.mark.skipif(SANITIZED, reason="the sanitizers reserve terabytes of address space")
def test_decode_checks_ids_before_allocating_for_them():
    # decode(range(10**9)) reserved 4 GB before it looked at an id; a uint16 array was
    # copied to int64 (4 times its size) first. Under an address-space limit of 300 MB
    # more than now, both must be a ValueError, not MemoryError.
    code = """
import resource, numpy as np
from bpe import BPETokenizer
tok = BPETokenizer([(97, 98)])
array = np.zeros(60_000_000, dtype=np.uint16)  # 120 MB
array[-1] = 60_000
with open("/proc/self/statm") as f:
    size = int(f.read().split()[0]) * resource.getpagesize()
resource.setrlimit(resource.RLIMIT_AS, (size + (300 << 20), resource.RLIM_INFINITY))
for ids in (range(10**9), array, range(10**18, 10**18 + 10**9)):
    for call in (tok.decode, tok.decode_bytes, tok._encoder.decode_bytes):
        try:
            call(ids)
        except ValueError as e:
            assert "outside the vocabulary" in str(e), e
        else:
            raise AssertionError("no error")
print("ok")
"""
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr[-2000:]


# --- 3. ids and sizes: numpy integers yes, bools and floats no, huge ints named ---------

@pytest.fixture(scope="module")
def tok():
    return BPETokenizer.train("the cat sat on the mat " * 50, 300, special_tokens=["<|endoftext|>"])


@pytest.mark.parametrize("kind", [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64])
def test_numpy_integers_are_ids(tok, kind):
    ids = [i for i in tok.encode("the cat") if i <= np.iinfo(kind).max] + [ord("t")]
    assert [tok.id_to_token(kind(i)) for i in ids] == [tok.id_to_token(i) for i in ids]
    assert tok.decode_single_token_bytes(kind(ids[0])) == tok.decode_single_token_bytes(ids[0])
    assert tok.decode([kind(i) for i in ids]) == tok.decode(ids)


def test_ids_from_encode_array_work_everywhere(tok):
    array = tok.encode_array("the cat sat")
    assert "".join(tok.id_to_token(i) for i in array) == "the cat sat"
    assert tok.decode(list(array)) == "the cat sat"


def test_encode_array_writes_the_dtype_asked_for(tok):
    short = "the cat sat<|endoftext|> on the mat " * 40
    # numpy's own array; the kept output blocks (from 1 MB of uint32); converted (from 1 MB of text)
    for text, threads in ((short, 1), (short, 2), (short * 200, 2), (short * 1000, 2)):
        narrow = tok.encode_array(text, allowed_special="all", threads=threads)
        assert narrow.dtype == np.uint16
        for dtype in (np.uint32, "uint32", np.dtype("<u4"), np.uint16, np.int16, np.int32, np.int64, np.uint64):
            ids = tok.encode_array(text, allowed_special="all", threads=threads, dtype=dtype)
            assert ids.dtype == np.dtype(dtype) and ids.tolist() == narrow.tolist()
    assert tok.encode_to_numpy(short, allowed_special="all").dtype == np.uint32
    for dtype in (np.uint8, np.int8, np.float32, ">u4", ">i8", bool):
        with pytest.raises(TypeError, match="dtype must be an integer type of 16, 32 or 64 bits"):
            tok.encode_array("the cat", dtype=dtype)
    large = bpe.Encoder([], special_tokens=["<|x|>"], token_ids=list(range(256)) + [70_000])
    for dtype in (np.uint16, np.int16):
        with pytest.raises(ValueError, match=r"cannot hold the id 70000 \(the vocabulary's largest\)"):
            large.encode_array(b"a", dtype=dtype)
    for dtype in (None, np.uint32, np.int32, np.int64):
        assert large.encode_array(b"a<|x|>", allowed_special="all", dtype=dtype).tolist() == [97, 70_000]


def test_numpy_integers_are_sizes():
    tok = BPETokenizer.train("the cat sat on the mat " * 50, np.int64(300), threads=np.int64(2))
    assert tok.n_vocab == BPETokenizer.train("the cat sat on the mat " * 50, 300).n_vocab
    assert tok.encode_array("the cat", threads=np.uint8(2)).tolist() == tok.encode("the cat")
    assert tok.encode_batch(["the cat"], threads=np.int32(2)) == [tok.encode("the cat")]


@pytest.mark.parametrize("bad", [True, False, np.True_, 1.0, "1", None])
def test_bools_and_other_types_are_not_ids(tok, bad):
    with pytest.raises(TypeError, match="id"):
        tok.decode([bad])
    with pytest.raises(TypeError, match="id"):
        tok.decode_single_token_bytes(bad)
    with pytest.raises(TypeError, match="id"):
        tok.id_to_token(bad)


@pytest.mark.parametrize("bad", [True, False, 300.0, "300", None])
def test_bools_and_other_types_are_not_sizes(tok, bad):
    with pytest.raises(TypeError, match="vocab_size"):
        BPETokenizer.train("ab ab", bad)
    if bad is not None:
        with pytest.raises(TypeError, match="threads"):
            BPETokenizer.train("ab ab", 300, threads=bad)
        with pytest.raises(TypeError, match="threads"):
            tok.encode_array("ab", threads=bad)
        with pytest.raises(TypeError, match="threads"):
            tok.encode_batch(["ab"], threads=bad)
        with pytest.raises(TypeError, match="threads"):
            bpe.ChunkCounter().add(b"ab", threads=bad)


@pytest.mark.parametrize("huge", [10**30, -10**30, 2**63, 2**64 - 1])
def test_out_of_range_sizes_are_value_errors_naming_the_argument(tok, huge):
    with pytest.raises(ValueError, match="vocab_size"):
        BPETokenizer.train("ab ab", huge)
    with pytest.raises(ValueError, match="threads"):
        BPETokenizer.train("ab ab", 300, threads=huge)
    with pytest.raises(ValueError, match="threads"):
        tok.encode_array("ab", threads=huge)
    with pytest.raises(ValueError, match="threads"):
        tok.encode_batch(["ab"], threads=huge)
    with pytest.raises(ValueError, match="threads"):
        bpe.train(b"ab ab", 10, threads=huge)
    with pytest.raises(ValueError, match="num_merges"):
        bpe.train(b"ab ab", huge)
    with pytest.raises(ValueError, match="num_merges"):
        bpe.ChunkCounter().train(huge)
    with pytest.raises(ValueError, match="outside the vocabulary"):
        tok.decode([huge])
    with pytest.raises(ValueError, match="outside the vocabulary"):
        tok.id_to_token(huge)


def test_vocab_size_too_small_names_the_smallest(tok):
    with pytest.raises(ValueError, match="vocab_size must be at least 257"):
        BPETokenizer.train("ab ab", 256, special_tokens=["<x>"])
    assert BPETokenizer.train("ab ab", 257, special_tokens=["<x>"]).n_vocab == 257


@pytest.mark.parametrize("kind, value", [(np.uint64, 2**64 - 1), (np.uint64, 2**63), (np.int64, -1),
                                         (np.uint32, 2**32 - 1), (np.int8, -5)])
def test_messages_show_the_id_as_given(tok, kind, value):
    with pytest.raises(ValueError, match=rf"token id {value} is outside the vocabulary"):
        tok.decode(np.array([1, value], dtype=kind))
    with pytest.raises(ValueError, match=rf"token id {value} is outside the vocabulary"):
        tok.decode([1, kind(value)])
    with pytest.raises(ValueError, match=rf"token id {value} is outside the vocabulary"):
        tok.id_to_token(kind(value))


# Merges and special tokens are numbered in the order given; a set (or a dict's keys)
# has no order of the caller's, and a set of str changes its order from run to run, so
# the ids would too. Refused, naming the argument, rather than numbered by chance.
@pytest.mark.parametrize("argument, value", [
    ("merges", {(104, 105), (105, 106)}),
    ("merges", frozenset({(104, 105)})),
    ("special_tokens", {"<|a|>", "<|b|>"}),
    ("special_tokens", {"<|a|>": 0}),
    ("token_ids", set(range(258))),
])
def test_unordered_collections_are_not_merges_special_tokens_or_ids(argument, value):
    given = {"merges": [(104, 105)], argument: value}
    if argument == "token_ids":
        given["merges"] = [(104, 105), (105, 106)]
    with pytest.raises(TypeError, match=argument):
        bpe.Encoder(**given)


def test_a_set_of_special_tokens_is_refused_by_the_counter_and_the_trainer():
    with pytest.raises(TypeError, match="special_tokens"):
        bpe.ChunkCounter("gpt4", {"<|a|>", "<|b|>"})
    with pytest.raises(TypeError, match="special_tokens"):
        BPETokenizer.train("a cat sat on a mat " * 50, 260, special_tokens={"<|a|>", "<|b|>"})
