"""Batches of documents: encode_batch_flat and encode_ordinary_batch_flat,
one flat array of ids and an array of offsets for a whole batch, and encode_batch's
lists, which go through the same per-batch path (csrc/_core.cpp: encode_batch_ids,
Encoder::encode_many). A batch's ids are each document's own, as encode gives them,
on any number of threads; its mistakes name the document."""
import numpy as np
import pytest

import bpe
from bpe import BPETokenizer
from sample_text import SCRIPTS_AND_EMOJI, SPLIT_CORNERS, sample_bytes
from vocabularies import END_OF_TEXT, PAD, cl100k_path, trained_with_two_specials, with_nfc_normalizer

STORIES = sample_bytes(120_000).decode("utf-8", errors="ignore")
DOCUMENTS = [d for d in STORIES.split("\n\n") if d]


@pytest.fixture(scope="module")
def tok():
    return trained_with_two_specials()


def per_document(tok, docs, **kwargs):
    return [tok.encode(d, **kwargs) for d in docs]


def check_flat(result, lists, dtype):
    ids, offsets = result
    assert isinstance(ids, np.ndarray) and ids.dtype == dtype and ids.ndim == 1
    assert isinstance(offsets, np.ndarray) and offsets.dtype == np.int64 and offsets.shape == (len(lists) + 1,)
    assert offsets[0] == 0 and offsets[-1] == len(ids)
    assert [ids[offsets[i]:offsets[i + 1]].tolist() for i in range(len(lists))] == lists
    assert ids.tolist() == [i for ids in lists for i in ids]


def test_flat_batch_is_each_document_encoded_end_to_end(tok):
    docs = DOCUMENTS[:300] + [SPLIT_CORNERS, SCRIPTS_AND_EMOJI]
    expected = per_document(tok, docs, allowed_special="all")
    check_flat(tok.encode_batch_flat(docs, allowed_special="all"), expected, np.uint16)
    check_flat(tok.encode_ordinary_batch_flat(docs), [tok.encode_ordinary(d) for d in docs], np.uint16)
    assert tok.encode_batch(docs, allowed_special="all") == expected
    assert tok.encode_ordinary_batch(docs) == [tok.encode_ordinary(d) for d in docs]


def test_no_chunk_crosses_two_documents(tok):
    # "ab" + "c" is not "abc": each document is split on its own.
    docs = ["Once upon", " a time", "", "the", "re was", " ", " a cat"]
    check_flat(tok.encode_batch_flat(docs), per_document(tok, docs), np.uint16)


def test_document_ends_land_after_their_own_ids(tok):
    # A document's end is noted when the block of chunks that holds its last ones is
    # looked up, which may be after the next documents are split (encoder.h): empty
    # documents in a row, a special token that opens or ends one, documents of more
    # chunks than a block (128) and of fewer, each still ends where its own ids do.
    long = " ".join(["word"] * 300)
    docs = ["Once upon a time", "", "", END_OF_TEXT + " there was", "", "a cat" + END_OF_TEXT, "", PAD, "",
            long, "", "x", long + " end", "", ""]
    expected = per_document(tok, docs, allowed_special="all")
    check_flat(tok.encode_batch_flat(docs, allowed_special="all"), expected, np.uint16)
    assert tok.encode_batch(docs, allowed_special="all") == expected
    assert tok.count_batch(docs, allowed_special="all").tolist() == [len(ids) for ids in expected]


def test_empty_batch_and_empty_documents(tok):
    ids, offsets = tok.encode_batch_flat([])
    assert ids.size == 0 and ids.dtype == np.uint16 and offsets.tolist() == [0]
    assert tok.encode_batch([]) == []
    ids, offsets = tok.encode_batch_flat(["", "", ""])
    assert ids.size == 0 and offsets.tolist() == [0, 0, 0, 0]
    assert tok.encode_batch(["", "hi", ""]) == [[], tok.encode("hi"), []]


def test_specials_allowed_and_disallowed(tok):
    docs = ["hello" + END_OF_TEXT, "plain text", PAD + " padded " + END_OF_TEXT]
    for allowed in ("all", {END_OF_TEXT, PAD}):
        check_flat(tok.encode_batch_flat(docs, allowed_special=allowed),
                   per_document(tok, docs, allowed_special=allowed), np.uint16)
    ids, offsets = tok.encode_batch_flat(docs, allowed_special="all")
    assert ids[offsets[1] - 1] == tok.eot_token
    # Neither allowed nor disallowed: ordinary text.
    check_flat(tok.encode_batch_flat(docs, disallowed_special=()),
               per_document(tok, docs, disallowed_special=()), np.uint16)
    check_flat(tok.encode_ordinary_batch_flat(docs), [tok.encode_ordinary(d) for d in docs], np.uint16)
    # Disallowed: the first document that holds one is named.
    with pytest.raises(ValueError, match=r"text 0 holds the special token '<\|endoftext\|>', which is disallowed"):
        tok.encode_batch_flat(docs)
    with pytest.raises(ValueError, match=r"text 2 holds the special token '<\|pad\|>'"):
        tok.encode_batch(docs, allowed_special={END_OF_TEXT})
    with pytest.raises(ValueError, match="not a special token of this encoder"):
        tok.encode_batch_flat(docs, allowed_special={"<|nope|>"})


def test_a_list_a_tuple_and_another_sequence_give_the_same_ids_and_keep_every_count(tok):
    # A list's items are held by a loop of our own (py_text.h: TextBatch::held_items),
    # anything else through PySequence_Tuple: the same ids, and no text's reference
    # count left changed by the call.
    import collections.abc
    import sys

    class Texts(collections.abc.Sequence):
        def __init__(self, items):
            self.items = items

        def __len__(self):
            return len(self.items)

        def __getitem__(self, i):
            return self.items[i]

    docs = [d + " " + str(k) for k, d in enumerate(DOCUMENTS[:40])]  # strs of this test's own
    before = [sys.getrefcount(d) for d in docs]
    expected = per_document(tok, docs)
    for texts in (docs, tuple(docs), Texts(docs)):
        check_flat(tok.encode_batch_flat(texts), expected, np.uint16)
        assert tok.encode_batch(texts) == expected
    assert [sys.getrefcount(d) for d in docs] == before


def test_bytes_and_str_give_the_same_ids(tok):
    docs = DOCUMENTS[:50] + [SCRIPTS_AND_EMOJI]
    encoder = tok._encoder
    from_str = encoder.encode_batch_flat(docs, "all")
    from_bytes = encoder.encode_batch_flat([d.encode("utf-8") for d in docs], "all")
    from_buffers = encoder.encode_batch_flat([bytearray(d.encode("utf-8")) for d in docs], "all")
    for got in (from_bytes, from_buffers):
        assert got[0].tolist() == from_str[0].tolist() and got[1].tolist() == from_str[1].tolist()
    check_flat(from_str, per_document(tok, docs, allowed_special="all"), np.uint16)


def test_a_str_whose_utf8_python_made_is_read_as_the_same_text(tok):
    # A str that keeps its UTF-8 (made by CPython for another caller) is read from it;
    # a str kept that way is no different to the ids.
    docs = ["naïve café " + str(i) + " 😀 漢字" for i in range(20)]
    cached = [d.encode("utf-8").decode("utf-8") for d in docs]
    import ctypes
    as_utf8 = ctypes.pythonapi.PyUnicode_AsUTF8
    as_utf8.restype, as_utf8.argtypes = ctypes.c_char_p, [ctypes.py_object]
    for d in cached:
        as_utf8(d)
    assert tok.encode_batch(cached) == per_document(tok, docs)
    assert [tok.encode(d) for d in cached] == per_document(tok, docs)


def test_one_thread_and_several_give_the_same_ids(tok):
    # Documents of all lengths, so that runs of equal bytes hold different counts of them.
    docs = [STORIES[:40_000], *DOCUMENTS[:200], STORIES[40_000:41_000] * 30, "", *DOCUMENTS[200:260]]
    one = tok.encode_batch_flat(docs, threads=1)
    for threads in (2, 3, 7):
        got = tok.encode_batch_flat(docs, threads=threads)
        assert got[0].tolist() == one[0].tolist() and got[1].tolist() == one[1].tolist()
        assert tok.encode_batch(docs, threads=threads) == per_document(tok, docs)
    assert tok.encode_batch_flat(docs, num_threads=2)[1].tolist() == one[1].tolist()
    # More threads than documents: fewer are started.
    assert tok.encode_batch_flat(docs[:2], threads=bpe.MAX_THREADS)[0].tolist() == \
        tok.encode_batch_flat(docs[:2], threads=1)[0].tolist()


def test_batches_longer_than_a_group_and_documents_longer_than_one(tok):
    # The encoder takes small documents a group of about 1 MB at a time, and a document
    # of 1 MB or more alone (Encoder::encode_many): the ids are each document's all the same.
    long = (STORIES * 10)[:1_100_000]
    docs = DOCUMENTS * 12 + [long, "", long[:5000]] + DOCUMENTS * 8 + [long + "<|endoftext|>"]
    expected = per_document(tok, docs, allowed_special="all")
    for threads in (1, 2):
        check_flat(tok.encode_batch_flat(docs, allowed_special="all", threads=threads), expected, np.uint16)


def test_any_iterable_of_str_is_taken(tok):
    docs = DOCUMENTS[:20]
    expected = tok.encode_batch_flat(docs)[0].tolist()
    assert tok.encode_batch_flat(tuple(docs))[0].tolist() == expected
    assert tok.encode_batch_flat(iter(docs))[0].tolist() == expected
    assert tok.encode_batch_flat(d for d in docs)[0].tolist() == expected


def test_bad_input_is_a_clear_error(tok):
    with pytest.raises(TypeError, match="texts must be a list of str, not str"):
        tok.encode_batch_flat("one text")
    with pytest.raises(TypeError, match="texts must be a list of str, not int"):
        tok.encode_batch_flat(3)
    with pytest.raises(TypeError, match="text 0 must be str, not bytes: decode it first"):
        tok.encode_batch_flat([b"bytes first"])
    with pytest.raises(TypeError, match="text 0 must be str, not NoneType"):
        tok.encode_ordinary_batch([None, "a"])
    with pytest.raises(TypeError, match="text 2 must be str, not int, as the first text is"):
        tok.encode_batch_flat(["a", "b", 3])
    with pytest.raises(TypeError, match="text 1 must be str, not bytes, as the first text is"):
        tok.encode_batch(["a", b"b"])
    with pytest.raises(ValueError, match="text 1 cannot be encoded as UTF-8: a lone surrogate at position 3"):
        tok.encode_ordinary_batch_flat(["ok", "ok \ud800 no"])
    encoder = tok._encoder
    with pytest.raises(TypeError, match="texts must be a list of str or a list of bytes, not bytes"):
        encoder.encode_batch_flat(b"one text")
    with pytest.raises(TypeError, match="text 1 must be bytes, not str, as the first text is"):
        encoder.encode_batch_flat([b"a", "b"])
    with pytest.raises(TypeError, match="text 1 must be str or bytes, not NoneType"):
        encoder.encode_batch_flat([b"a", None])
    with pytest.raises(ValueError, match="text 1 is not valid UTF-8"):
        encoder.encode_batch_flat([b"a", b"\xff"])  # the gpt2 pattern splits characters
    with pytest.raises(ValueError, match="threads must be 0"):
        tok.encode_batch_flat(["a"], threads=-1)


def test_the_type_of_ids_follows_n_vocab():
    tok = BPETokenizer.from_tiktoken(cl100k_path())
    docs = DOCUMENTS[:30]
    ids, offsets = tok.encode_ordinary_batch_flat(docs, threads=2)
    assert ids.dtype == np.uint32
    check_flat((ids, offsets), [tok.encode_ordinary(d) for d in docs], np.uint32)


@pytest.mark.parametrize("wide", ["é", "€", "😀"])  # a str of 1, 2 and 4 bytes a character
def test_a_str_is_read_as_its_utf8_wherever_its_wide_characters_are(tok, wide):
    # The writer takes 32 ASCII characters at once, and a block holding any other one a
    # character at a time (csrc/py_text.h: transcode_utf8): every place in and around a
    # block, one text at a time and in a batch.
    texts = []
    for length in (1, 31, 32, 33, 64, 65, 100):
        for at in range(length):
            text = "".join(wide if i == at else "abcdefgh "[i % 9] for i in range(length))
            texts.append(text)
    encoder = tok._encoder
    expected = [encoder.encode(t.encode("utf-8")) for t in texts]
    assert [encoder.encode(t) for t in texts] == expected
    assert encoder.encode_batch(texts) == expected
    with pytest.raises(ValueError, match="lone surrogate at position 40"):
        encoder.encode("a" * 40 + "\ud800" + wide)
    with pytest.raises(ValueError, match="text 1 cannot be encoded as UTF-8: a lone surrogate at position 33"):
        encoder.encode_batch(["ok", wide * 33 + "\udfff"])


def test_a_tokenizer_json_with_rules_of_its_own_gives_its_encode_batch_flat(tok, tmp_path):
    # The engine runs NFC (and the rest of the file's rules): the flat batch is its
    # encode_batch's, not the merges' on the raw text.
    nfc = with_nfc_normalizer(tok, tmp_path)
    docs = ["cafe\u0301 Ame\u0301lie", "", *DOCUMENTS[:20]]
    expected = [nfc.encode(d) for d in docs]
    assert expected[0] == tok.encode("café Amélie") != tok.encode(docs[0])
    check_flat(nfc.encode_batch_flat(docs), expected, np.uint16)
    check_flat(nfc.encode_ordinary_batch_flat(docs), expected, np.uint16)
