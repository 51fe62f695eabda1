"""Padded batches (encode_batch_padded), token budgets (truncate) and the counts of many
texts (count_batch): each against a plain construction from encode_ordinary_batch, and
the padded batch against gigatoken's where it loads the same vocabulary."""
import itertools

import numpy as np
import pytest

from bpe import BPETokenizer
from sample_text import SCRIPTS_AND_EMOJI, SPECIAL_CORNERS, TRICKY_TEXT, made_up_stories
from vocabularies import with_nfc_normalizer

STORIES = made_up_stories(60_000, seed=5)
EOT = "<|endoftext|>"


@pytest.fixture(scope="module")
def tok():
    return BPETokenizer.train([STORIES, SCRIPTS_AND_EMOJI * 3], vocab_size=600, pattern="gpt4",
                              special_tokens=[EOT])


def texts_of_all_lengths():
    paragraphs = [p for p in STORIES.split("\n\n") if p][:40]
    return ["", "a", SCRIPTS_AND_EMOJI, "", TRICKY_TEXT[:200], *paragraphs, ""]


def padded_in_python(lists, pad_id, max_length=None, pad_to_max_length=False, truncate=False, pad_left=False,
                     truncate_left=False, prefix=None, suffix=None):
    """The padded matrix and lengths, built row by row from the lists of ids."""
    prefix, suffix = list(prefix or []), list(suffix or [])
    rows = []
    for ids in lists:
        if truncate:
            room = max_length - len(prefix) - len(suffix)
            ids = ids[len(ids) - min(room, len(ids)):] if truncate_left else ids[:room]
        rows.append(prefix + list(ids) + suffix)
    width = max_length if pad_to_max_length else max((len(r) for r in rows), default=0)
    matrix = [[pad_id] * (width - len(r)) + r if pad_left else r + [pad_id] * (width - len(r)) for r in rows]
    return np.array(matrix, dtype=np.int64).reshape(len(rows), width), np.array([len(r) for r in rows])


OPTIONS = list(itertools.product(
    [None, 0, 3, 20, 10_000],  # max_length
    [False, True],  # pad_to_max_length
    [False, True],  # truncate
    [False, True],  # pad_left
    [False, True],  # truncate_left
    [(None, None), ([7], None), (None, [8, 9]), ([7], [8, 9])],  # prefix, suffix
))


def expected_or_error(lists, pad_id, max_length, pad_to_max_length, truncate, prefix, suffix):
    """Which error the options must give, or None."""
    added = len(prefix or []) + len(suffix or [])
    if (truncate or pad_to_max_length) and max_length is None:
        return "needs max_length"
    if truncate and added > max_length:
        return "no room"
    if pad_to_max_length and not truncate and lists and max(len(x) for x in lists) + added > max_length:
        return "more than max_length"
    return None


def test_every_option_is_the_rows_built_in_python(tok):
    texts = texts_of_all_lengths()
    lists = tok.encode_ordinary_batch(texts)
    tried = 0
    for max_length, pad_to_max, truncate, pad_left, truncate_left, (prefix, suffix) in OPTIONS:
        options = dict(max_length=max_length, pad_to_max_length=pad_to_max, truncate=truncate, pad_left=pad_left,
                       truncate_left=truncate_left, prefix=prefix, suffix=suffix)
        for batch, batch_lists in ((texts, lists), ([], []), (texts[:1], lists[:1])):
            error = expected_or_error(batch_lists, 5, max_length, pad_to_max, truncate, prefix, suffix)
            if error:
                with pytest.raises(ValueError, match=error):
                    tok.encode_batch_padded(batch, 5, disallowed_special=(), **options)
                continue
            matrix, lengths = tok.encode_batch_padded(batch, 5, disallowed_special=(), **options)
            want, want_lengths = padded_in_python(batch_lists, 5, **options)
            assert matrix.shape == want.shape, options
            assert (matrix == want).all(), options
            assert lengths.dtype == np.int64 and (lengths == want_lengths).all(), options
            tried += 1
    assert tried > 300


@pytest.mark.parametrize("threads", [0, 1, 3])
def test_threads_give_the_same_matrix(tok, threads):
    texts = [p for p in (STORIES * 4).split("\n\n")]  # enough bytes for several threads
    want = padded_in_python(tok.encode_ordinary_batch(texts), 0, max_length=50, truncate=True, pad_left=True)
    matrix, lengths = tok.encode_batch_padded(texts, 0, max_length=50, truncate=True, pad_left=True, threads=threads)
    assert (matrix == want[0]).all() and (lengths == want[1]).all()


def test_special_tokens_as_in_encode_batch(tok):
    texts = [f"a{EOT}b", "plain"]
    with pytest.raises(ValueError, match="disallowed"):
        tok.encode_batch_padded(texts, 0)
    matrix, lengths = tok.encode_batch_padded(texts, 0, allowed_special="all")
    want = padded_in_python(tok.encode_batch(texts, allowed_special="all"), 0)
    assert (matrix == want[0]).all() and (lengths == want[1]).all()
    assert tok.special_ids[EOT] in matrix[0]


def test_dtype_narrowest_or_asked(tok):
    assert tok.encode_batch_padded(["ab"], 0)[0].dtype == np.uint16
    assert tok.encode_batch_padded(["ab"], 70_000)[0].dtype == np.uint32  # the padding needs it
    assert tok.encode_batch_padded(["ab"], 0, suffix=[70_000])[0].dtype == np.uint32
    for dtype in (np.int64, np.int32, np.uint32, np.int16, "int64"):
        matrix, _ = tok.encode_batch_padded(["ab", "abc abc"], 1, dtype=dtype)
        assert matrix.dtype == np.dtype(dtype)
        assert (matrix == tok.encode_batch_padded(["ab", "abc abc"], 1)[0]).all()
    with pytest.raises(ValueError, match="cannot hold the id 40000"):
        tok.encode_batch_padded(["ab"], 40_000, dtype=np.int16)
    for dtype in (np.float32, np.int8, bool, ">u4"):  # (">u4": its bytes would be taken as native)
        with pytest.raises(TypeError, match="dtype must be an integer type"):
            tok.encode_batch_padded(["ab"], 0, dtype=dtype)


@pytest.mark.parametrize("call, error, match", [
    (dict(pad_id=-1), ValueError, "pad_id must be an id from 0 to MAX_ID"),
    (dict(pad_id=1 << 24), ValueError, "pad_id must be at most"),
    (dict(pad_id=True), TypeError, "pad_id must be an int"),
    (dict(pad_id=1.0), TypeError, "pad_id must be an int"),
    (dict(pad_id=0, max_length=-1), ValueError, "max_length must be 0 or more"),
    (dict(pad_id=0, max_length="3"), TypeError, "max_length must be an int"),
    (dict(pad_id=0, truncate=True), ValueError, "truncate=True needs max_length"),
    (dict(pad_id=0, pad_to_max_length=True), ValueError, "pad_to_max_length=True needs max_length"),
    (dict(pad_id=0, max_length=2, truncate=True, prefix=[1], suffix=[2, 3]), ValueError,
     "max_length=2 leaves no room for the 3 ids of prefix and suffix"),
    (dict(pad_id=0, max_length=2, pad_to_max_length=True), ValueError, r"a row is \d+ ids long, more than max_length=2"),
    (dict(pad_id=0, truncate=1, max_length=3), TypeError, "truncate must be True or False"),
    (dict(pad_id=0, pad_left="yes"), TypeError, "pad_left must be True or False"),
    (dict(pad_id=0, prefix=5), TypeError, "prefix must be a list of ids"),
    (dict(pad_id=0, suffix=[-2]), ValueError, "each id of suffix must be an id from 0"),
    (dict(pad_id=0, threads=-1), ValueError, "threads"),
])
def test_bad_arguments_are_named(tok, call, error, match):
    with pytest.raises(error, match=match):
        tok.encode_batch_padded(["abc abc abc"], **call)


def test_a_width_past_any_memory_is_an_error_not_a_crash(tok):
    for max_length in (2**62, 2**63 - 1):
        with pytest.raises((ValueError, MemoryError)):
            tok.encode_batch_padded(["abc"] * 10, 0, max_length=max_length, pad_to_max_length=True)


def test_texts_must_be_strs(tok):
    with pytest.raises(TypeError, match="texts must be a list of str"):
        tok.encode_batch_padded("abc", 0)
    with pytest.raises(TypeError, match="must be str"):
        tok.encode_batch_padded([b"abc"], 0)
    with pytest.raises(TypeError):
        tok.encode_batch_padded(["abc", 3], 0)


def gigatoken_and_ours(name):
    """gigatoken and our tokenizer on the same real vocabulary, as bench/peers.py loads them."""
    gigatoken = pytest.importorskip("gigatoken")
    from vocabularies import cl100k_path, gpt2_files

    if name == "cl100k":
        path = cl100k_path()
        return gigatoken.Tokenizer.from_tiktoken(str(path), pretokenizer="gpt4"), BPETokenizer.from_tiktoken(path)
    ours = BPETokenizer.from_gpt2(*gpt2_files())
    import tempfile
    from pathlib import Path
    folder = Path(tempfile.mkdtemp())
    ours.save_tiktoken(folder / "gpt2.tiktoken")
    return gigatoken.Tokenizer.from_tiktoken(str(folder / "gpt2.tiktoken"), pretokenizer="gpt2"), ours


@pytest.mark.parametrize("name", ["cl100k", "gpt2"])
def test_equal_to_gigatokens_padded_batch(name):
    giga, ours = gigatoken_and_ours(name)
    texts = texts_of_all_lengths() + [f"a{EOT}b"]  # gigatoken takes special tokens' text as text
    tried = 0
    for max_length, pad_to_max, truncate, pad_left, truncate_left, (prefix, suffix) in OPTIONS:
        options = dict(max_length=max_length, pad_to_max_length=pad_to_max, truncate=truncate, pad_left=pad_left,
                       truncate_left=truncate_left, prefix=prefix, suffix=suffix)
        try:
            want = giga.encode_batch_padded(texts, 3, **options)
        except ValueError:
            with pytest.raises(ValueError):
                ours.encode_batch_padded(texts, 3, disallowed_special=(), **options)
            continue
        got = ours.encode_batch_padded(texts, 3, disallowed_special=(), **options)
        assert got[0].shape == want[0].shape and (got[0] == want[0]).all(), options
        assert (got[1] == want[1]).all(), options
        tried += 1
    assert tried > 100


# --- count_batch ----------------------------------------------------------------------

@pytest.mark.parametrize("threads", [0, 1, 3])
def test_count_batch_is_len_encode_of_each(tok, threads):
    big = STORIES * 20  # past a group of encode_many's, counted a piece at a time
    texts = texts_of_all_lengths() + [big, SPECIAL_CORNERS, ""] + texts_of_all_lengths()
    counts = tok.count_batch(texts, disallowed_special=(), threads=threads)
    assert counts.dtype == np.int64
    assert counts.tolist() == [len(ids) for ids in tok.encode_ordinary_batch(texts)]
    allowed = tok.count_batch(texts, allowed_special="all", threads=threads)
    assert allowed.tolist() == [len(ids) for ids in tok.encode_batch(texts, allowed_special="all")]
    assert tok.count_batch([], threads=threads).tolist() == []


def test_count_batch_refuses_what_encode_batch_refuses(tok):
    with pytest.raises(ValueError, match="disallowed"):
        tok.count_batch(["ok", f"x{EOT}"])
    with pytest.raises(TypeError, match="must be str"):
        tok.count_batch([b"x"])
    with pytest.raises(ValueError, match="threads"):
        tok.count_batch(["x"], threads=-1)


# --- truncate -------------------------------------------------------------------------

def test_truncate_ascii_is_the_decoded_first_tokens(tok):
    text = STORIES[:3000]
    ids = tok.encode(text)
    for n in (0, 1, 2, 17, len(ids) - 1, len(ids), len(ids) + 5):
        assert tok.truncate(text, n) == tok.decode(ids[:n])
        assert tok.truncate(text, n, from_end=True) == tok.decode(ids[len(ids) - min(n, len(ids)):])


@pytest.mark.parametrize("from_end", [False, True])
def test_truncate_keeps_to_the_budget_on_every_script(tok, from_end):
    scripts = SCRIPTS_AND_EMOJI.replace(EOT, "")
    texts = [scripts, TRICKY_TEXT, scripts + STORIES[:500] + TRICKY_TEXT, "🙂" * 30, "é" * 9]
    cut_inside_a_character = 0
    for text in texts:
        ids = tok.encode(text)
        for n in range(len(ids) + 2):
            result = tok.truncate(text, n, from_end=from_end)
            assert (text.endswith(result) if from_end else text.startswith(result)), (text, n)
            assert len(tok.encode(result)) <= n
            whole = tok.decode_bytes(ids[max(0, len(ids) - n):] if from_end else ids[:n])
            assert len(result.encode()) <= len(whole)
            cut_inside_a_character += len(result.encode()) < len(whole)
    assert cut_inside_a_character > 0  # the partial-character case was met


def test_truncate_cuts_again_when_the_shorter_text_splits_into_more(tok, monkeypatch):
    # Never seen on real vocabularies (0 of about 100,000 random cuts on cl100k), so the
    # shorter text is made to count one more the first time it is counted.
    text, real, counted = STORIES[:300], tok.count, []

    def count(piece, **specials):
        counted.append(piece)
        return real(piece, **specials) + (len(counted) == 1)

    monkeypatch.setattr(tok, "count", count)
    assert tok.truncate(text, 10) == tok.decode(tok.encode(text)[:9])
    assert len(counted) == 2


def test_truncate_arguments(tok):
    with pytest.raises(ValueError, match="max_tokens must be 0 or more"):
        tok.truncate("abc", -1)
    with pytest.raises(TypeError, match="max_tokens must be an int"):
        tok.truncate("abc", 2.0)
    with pytest.raises(TypeError, match="must be str"):
        tok.truncate(b"abc", 2)
    with pytest.raises(ValueError, match="disallowed"):
        tok.truncate(f"a{EOT}", 1)
    assert tok.truncate(f"a{EOT}b", 2, allowed_special="all") == f"a{EOT}"
    assert tok.truncate(f"a{EOT}b", 2, allowed_special="all", from_end=True) == f"{EOT}b"


def test_a_tokenizer_json_with_rules_of_its_own(tok, tmp_path):
    # The engine runs NFC (and the rest of the file's rules): the counts, the padded batch
    # and truncate are its encode's.
    nfc = with_nfc_normalizer(tok, tmp_path)
    texts = ["cafe\u0301 Ame\u0301lie", "", "plain text"]
    assert nfc.count_batch(texts).tolist() == [len(nfc.encode(t)) for t in texts]
    assert nfc.count_batch(texts)[0] != tok.count_batch(texts)[0]
    matrix, lengths = nfc.encode_batch_padded(texts, 0)
    assert [row[:n].tolist() for row, n in zip(matrix, lengths)] == [nfc.encode(t) for t in texts]
    cut = nfc.truncate(texts[0], 1)
    assert texts[0].startswith(cut) and nfc.count(cut) <= 1
