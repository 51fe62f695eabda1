"""Counts as data: a ChunkCounter's counts leave it as buffers, pickle, and merge with
another counter's, so that shards of a corpus counted apart (on other processes or
machines) train to the merges of the whole."""
import pickle
import random

import numpy as np
import pytest

import bpe
import bpe_reference as ref
from bpe import BPETokenizer

SPECIALS = ["<|endoftext|>", "<|pad|>"]


def documents(seed, count=60):
    rng = random.Random(seed)
    words = ["".join(rng.choice("abcdeéxyz ") for _ in range(rng.randint(1, 9))) for _ in range(300)]
    words += ["Once", " upon", " a time", "  ", "123", "4567", "!!", "\n\n", "don't", "I'm"]
    docs = []
    for _ in range(count):
        doc = "".join(rng.choice(words) for _ in range(rng.randint(5, 60)))
        if rng.random() < 0.5:
            doc += rng.choice(SPECIALS) + doc[: rng.randint(0, 10)]
        docs.append(doc.encode())
    return docs


def counted(docs, pattern, specials=SPECIALS, max_memory=None):
    counter = bpe.ChunkCounter(pattern, specials, max_memory=max_memory)
    for doc in docs:
        counter.add(doc, threads=1)
    return counter


def as_dict(counter):
    chunks, offsets, counts = counter.counts()
    return {chunks[offsets[k]:offsets[k + 1]]: int(counts[k]) for k in range(len(counts))}


@pytest.mark.parametrize("pattern", ["default", "gpt2", "gpt4"])
def test_shards_counted_apart_and_merged_train_as_one(pattern):
    docs = documents(1)
    num_merges = 250
    expected = ref.train_on_texts(docs, num_merges, [s.encode() for s in SPECIALS], pattern)
    whole = counted(docs, pattern)
    shards = [counted(docs[k::4], pattern) for k in range(4)]
    # A tree of merges, as the cluster does it: (0 + 1) + (2 + 3).
    shards[0].merge(shards[1])
    shards[2].merge(shards[3])
    shards[0].merge(shards[2])
    assert as_dict(shards[0]) == as_dict(whole)
    assert shards[0].train(num_merges) == expected
    assert whole.train(num_merges) == expected


@pytest.mark.parametrize("pattern", ["default", "gpt4"])
def test_counts_taken_in_as_buffers(pattern):
    docs = documents(2)
    halves = [counted(docs[:30], pattern), counted(docs[30:], pattern)]
    merged = bpe.ChunkCounter(pattern, SPECIALS)
    for half in halves:
        chunks, offsets, counts = half.counts()
        assert isinstance(chunks, bytes)
        assert offsets.dtype == np.int64 and counts.dtype == np.int64
        assert len(offsets) == len(counts) + 1 and offsets[0] == 0 and offsets[-1] == len(chunks)
        merged.add_counts(chunks, offsets, counts)
    expected = ref.train_on_texts(docs, 200, [s.encode() for s in SPECIALS], pattern)
    assert merged.train(200) == expected


def test_pickle_round_trip_is_exact():
    docs = documents(3)
    counter = counted(docs, "gpt2", max_memory=1 << 30)
    copy = pickle.loads(pickle.dumps(counter))
    assert copy.pattern == "gpt2" and copy.special_tokens == SPECIALS and copy.max_memory == 1 << 30
    assert copy.pruned == counter.pruned
    assert as_dict(copy) == as_dict(counter) and len(copy) == len(counter)
    assert copy.train(300) == counter.train(300)
    empty = pickle.loads(pickle.dumps(bpe.ChunkCounter()))
    assert len(empty) == 0 and empty.max_memory is None and empty.special_tokens == []


# A counter's state, field by field: (version, pattern, special tokens, max_memory, chunks,
# offsets, counts, pruned chunks, pruned threshold).
FIELDS = {3: "max_memory", 7: "pruned", 8: "pruned"}


@pytest.mark.parametrize("field, value, error", [
    (3, -1, ValueError), (3, 0, ValueError), (3, "1GB", TypeError), (3, 1.5, TypeError),
    (7, -1, ValueError), (7, 2**70, ValueError), (7, "x", TypeError),
    (8, -5, ValueError), (8, 2**70, ValueError), (8, None, TypeError),
    (1, 5, TypeError), (1, b"gpt2", TypeError),
])
def test_a_malformed_state_is_an_error_that_names_its_field(field, value, error):
    """A pickle is input: a field out of range or of the wrong type is refused by name,
    never as the binding library's "Unable to cast" (nor taken: a negative threshold)."""
    counter = counted(documents(3), "gpt2", max_memory=1 << 30)
    state = list(counter.__getstate__())
    state[field] = value
    fresh = bpe.ChunkCounter.__new__(bpe.ChunkCounter)
    with pytest.raises(error) as raised:
        fresh.__setstate__(tuple(state))
    message = str(raised.value)
    assert "cast" not in message and FIELDS.get(field, "pattern") in message, message
    # the good state still loads
    state = list(counter.__getstate__())
    fresh.__setstate__(tuple(state))
    assert as_dict(fresh) == as_dict(counter)


def test_counters_of_different_rules_are_not_merged():
    a = bpe.ChunkCounter("gpt2", SPECIALS)
    with pytest.raises(ValueError, match="pattern"):
        a.merge(bpe.ChunkCounter("gpt4", SPECIALS))
    with pytest.raises(ValueError, match="special tokens"):
        a.merge(bpe.ChunkCounter("gpt2", ["<|endoftext|>"]))
    with pytest.raises(TypeError):
        a.merge("not a counter")


def test_bad_buffers_are_refused():
    counter = bpe.ChunkCounter()
    ok = (b"abcd", np.array([0, 2, 4], np.int64), np.array([3, 1], np.int64))
    with pytest.raises(ValueError, match="offsets"):
        counter.add_counts(ok[0], np.array([0, 3], np.int64), ok[2])  # one offset too few
    with pytest.raises(ValueError, match="offsets"):
        counter.add_counts(ok[0], np.array([0, 3, 2], np.int64), ok[2])  # going back
    with pytest.raises(ValueError, match="offsets"):
        counter.add_counts(ok[0], np.array([0, 2, 9], np.int64), ok[2])  # past the bytes
    with pytest.raises(ValueError, match="count"):
        counter.add_counts(ok[0], ok[1], np.array([3, 0], np.int64))
    with pytest.raises(TypeError):
        counter.add_counts(ok[0], ok[1], np.array([3.0, 1.0]))
    assert len(counter) == 0  # nothing taken in from a refused call
    counter.add_counts(*ok)
    assert as_dict(counter) == {b"ab": 3, b"cd": 1}


def test_merge_keeps_to_the_budget_with_the_counters_own_pruning():
    rng = random.Random(4)
    words = ["".join(rng.choice("abcdefghijklmnop") for _ in range(rng.randint(4, 12))) for _ in range(40_000)]
    a = bpe.ChunkCounter("default", max_memory=4 << 20)
    b = bpe.ChunkCounter("default")
    b.add(" ".join(words).encode())
    assert b.estimated_memory > 4 << 20
    with pytest.warns(RuntimeWarning, match="max_memory"):
        a.merge(b)
    assert a.pruned[0] > 0 and a.estimated_memory <= 4 << 20
    # What was dropped travels with the counts.
    copy = pickle.loads(pickle.dumps(a))
    assert copy.pruned == a.pruned and as_dict(copy) == as_dict(a) and copy.max_memory == 4 << 20


def test_train_from_counts():
    docs = [d.decode() for d in documents(5)]
    expected = BPETokenizer.train(docs, 256 + 200 + 2, pattern="gpt4", special_tokens=SPECIALS, progress=False)
    counter = bpe.ChunkCounter("gpt4", SPECIALS)
    counter.add(docs, threads=1)
    buffers = counter.counts()
    from_counter = BPETokenizer.train_from_counts(counter, 256 + 200 + 2, progress=False)
    assert from_counter.merges == expected.merges and from_counter == expected
    from_buffers = BPETokenizer.train_from_counts(buffers, 256 + 200 + 2, pattern="gpt4", special_tokens=SPECIALS,
                                                  progress=False)
    assert from_buffers == expected
    with pytest.raises(ValueError, match="pattern"):
        BPETokenizer.train_from_counts(bpe.ChunkCounter("gpt4", SPECIALS), 300, pattern="gpt2")


def test_pretrain_reads_a_token_folder_as_one_token_file(tmp_path):
    # The pipeline's loader takes a folder of shards (as bpe.ray_data writes them) where it
    # took one .bin: the same length, and windows that cross from one shard into the next.
    import data
    import pretrain
    import torch
    from bpe.token_files import write_manifest, write_token_file

    tok = BPETokenizer.train([d.decode() for d in documents(6)], 400, special_tokens=SPECIALS, progress=False)
    texts = [d.decode() for d in documents(7, count=30)]
    ids = [tok.encode_array(t, allowed_special="all") for t in texts]
    folder = tmp_path / "train-bpe"
    folder.mkdir()
    shards = []
    for k in range(3):
        name = f"shard-{k:06d}.bin"
        shards.append((name, write_token_file(folder / name, ids[k::3], tok)))
    write_manifest(folder, shards, tok)
    assert data.token_source(tmp_path, "train", True) == folder
    assert data.token_source(tmp_path, "valid", True) == tmp_path / "valid-bpe.bin"
    whole = np.concatenate([np.concatenate(ids[k::3]) for k in range(3)])
    tokens = data.load_tokens(folder, tok)
    assert len(tokens) == len(whole)
    for start, stop in ((0, 5), (len(ids[0]) - 3, len(ids[0]) + 40), (len(whole) - 7, len(whole)), (3, 3)):
        assert np.array_equal(tokens[start:stop], whole[start:stop])
    g1, g2 = torch.Generator().manual_seed(1), torch.Generator().manual_seed(1)
    x1, y1 = pretrain.get_batch(tokens, 8, 64, g1, "cpu")
    x2, y2 = pretrain.get_batch(whole, 8, 64, g2, "cpu")
    assert torch.equal(x1, x2) and torch.equal(y1, y2)

    # A shard that changed since is refused, by name, as the pipeline's DataError.
    (folder / "shard-000001.bin").write_bytes(b"\0\0")
    with pytest.raises(data.DataError, match="shard-000001.bin"):
        data.load_tokens(folder, tok)


@pytest.mark.parametrize("version", [10**30, True, 2, "1", None])
def test_a_state_of_another_version_is_refused_by_name(version):
    counter = counted(documents(3), "gpt2")
    state = list(counter.__getstate__())
    state[0] = version
    fresh = bpe.ChunkCounter.__new__(bpe.ChunkCounter)
    with pytest.raises(ValueError, match="not the state of a ChunkCounter of this version"):
        fresh.__setstate__(tuple(state))
