"""tok.as_hf(): the face that answers transformers' PreTrainedTokenizerFast calls gives
what transformers' own fast tokenizer gives for the same tokenizer.json (ids, masks,
offsets, shapes, dtypes), over every padding and truncation option, on GPT-2's, cl100k's,
a Qwen-shaped file and files with a template; what it cannot answer raises, naming it."""
import itertools
import sys

import numpy as np
import pytest

import bpe
from bpe import BPETokenizer
from vocabularies import cl100k_path, gpt2_files, small_gpt2_vocabulary

TEXTS = ["Once upon a time, a little cat named Tom saw a big red ball.", "Hi", "",
         "Tom said <|endoftext|> hello to the world, and they played all day! 1234567",
         "Ça été très élevé. 数字与中文 emoji 😀👍🏽 end", "  spaces  and\ttabs\nand lines\n\n"]


def transformers_or_skip():
    return pytest.importorskip("transformers")


def load_theirs(folder):
    transformers = transformers_or_skip()
    return transformers.AutoTokenizer.from_pretrained(str(folder))


@pytest.fixture(scope="module")
def gpt2(tmp_path_factory):
    """GPT-2's files, or where they are missing a small vocabulary of GPT-2's shape."""
    try:
        vocab, merges = gpt2_files()
        tok = BPETokenizer.from_gpt2(vocab, merges, special_tokens=["<|endoftext|>"])
    except pytest.skip.Exception:
        tok = small_gpt2_vocabulary()[0]
    folder = tok.save_huggingface(tmp_path_factory.mktemp("gpt2"))
    return tok, folder


@pytest.fixture(scope="module")
def cl100k(tmp_path_factory):
    cl100k_path()
    tok = bpe.get_encoding("cl100k_base")
    folder = tok.save_huggingface(tmp_path_factory.mktemp("cl100k"))
    return tok, folder


def from_tokenizers(tk, tmp_path_factory, name):
    folder = tmp_path_factory.mktemp(name)
    tk.save(str(folder / "tokenizer.json"))
    tok = BPETokenizer.from_huggingface(folder / "tokenizer.json")
    tok.save_huggingface(folder)
    return tok, folder


@pytest.fixture(scope="module")
def qwen(tmp_path_factory):
    pytest.importorskip("tokenizers")
    from test_huggingface_models import shape
    return from_tokenizers(shape("qwen2"), tmp_path_factory, "qwen")


@pytest.fixture(scope="module")
def templated(tmp_path_factory):
    """Qwen's shape with a template that puts a BOS and an EOS around every text."""
    pytest.importorskip("tokenizers")
    from test_huggingface_models import shape
    from tokenizers import processors
    tk = shape("qwen2")
    start, end = tk.token_to_id("<|im_start|>"), tk.token_to_id("<|im_end|>")
    tk.post_processor = processors.TemplateProcessing(single="<|im_start|> $A <|im_end|>",
                                                      special_tokens=[("<|im_start|>", start), ("<|im_end|>", end)])
    return from_tokenizers(tk, tmp_path_factory, "templated")


@pytest.fixture(scope="module")
def llama3(tmp_path_factory):
    """Llama 3's shape: a Sequence post-processor whose template puts a BOS first."""
    pytest.importorskip("tokenizers")
    from test_huggingface_models import shape
    return from_tokenizers(shape("llama3"), tmp_path_factory, "llama3")


FILES = ["gpt2", "cl100k", "qwen", "templated", "llama3"]


def pair_of(request, name):
    tok, folder = request.getfixturevalue(name)
    theirs = load_theirs(folder)
    face = tok.as_hf()
    if theirs.pad_token is None:  # the usual answer for a file without a pad token
        pad = theirs.eos_token or next(iter(tok.special_ids))
        theirs.pad_token = pad
        face.pad_token = pad
    return face, theirs


def assert_same(ours, theirs):
    """Two encodings alike in keys, values, types, shapes and dtypes."""
    assert sorted(ours.keys()) == sorted(theirs.keys())
    for key in theirs.keys():
        a, b = ours[key], theirs[key]
        assert type(a) is type(b), key
        if isinstance(b, np.ndarray) or type(b).__module__.startswith("torch"):
            assert a.shape == b.shape and a.dtype == b.dtype, key
            if a.dtype == object:  # rows of differing lengths: an array of row arrays
                assert [(r.dtype, r.tolist()) for r in a] == [(r.dtype, r.tolist()) for r in b], key
            else:
                assert a.tolist() == b.tolist(), key
        else:
            assert a == b, key
            if b and isinstance(b[0], list):
                assert all(type(x) is type(y) for x, y in zip(a[0], b[0])), key


def call_both(face, theirs, text, **options):
    """Both answers, or both errors (ValueError for both: a missing pad token, ragged tensors)."""
    try:
        want = theirs(text, **options)
    except ValueError:
        with pytest.raises(ValueError):
            face(text, **options)
        return
    assert_same(face(text, **options), want)


OPTIONS = list(itertools.product([False, True, "longest", "max_length", "do_not_pad"],
                                 [None, True, False, "longest_first", "only_first", "do_not_truncate"],
                                 [None, 9], [None, "left"], [True, False]))


@pytest.mark.parametrize("name", FILES)
def test_every_padding_and_truncation_option_gives_transformers_lists(request, name):
    face, theirs = pair_of(request, name)
    for padding, truncation, max_length, side, special in OPTIONS:
        options = dict(padding=padding, truncation=truncation, max_length=max_length, padding_side=side,
                       add_special_tokens=special)
        call_both(face, theirs, TEXTS, **options)
        call_both(face, theirs, TEXTS[0], **options)


@pytest.mark.parametrize("name", FILES)
@pytest.mark.parametrize("tensors", ["np", "pt"])
def test_tensors_have_transformers_shapes_and_dtypes(request, name, tensors):
    if tensors == "pt":
        pytest.importorskip("torch")
    face, theirs = pair_of(request, name)
    for padding, truncation, max_length, side, special in OPTIONS[::3]:
        options = dict(padding=padding, truncation=truncation, max_length=max_length, padding_side=side,
                       add_special_tokens=special, return_tensors=tensors)
        call_both(face, theirs, TEXTS, **options)
        call_both(face, theirs, TEXTS[:1], **options)
        call_both(face, theirs, TEXTS[1], **options)


@pytest.mark.parametrize("name", FILES)
def test_the_other_returns_and_pad_to_multiple_of(request, name):
    face, theirs = pair_of(request, name)
    for extra in [dict(return_attention_mask=False), dict(return_token_type_ids=True), dict(return_length=True),
                  dict(pad_to_multiple_of=8, padding=True), dict(pad_to_multiple_of=4, padding="max_length",
                                                                 max_length=6),
                  dict(pad_to_multiple_of=4, padding=True, truncation=True, max_length=8),
                  dict(pad_to_multiple_of=4, padding=True, truncation=True, max_length=6),
                  dict(padding=True, return_length=True, return_tensors="np"),
                  dict(padding="max_length", max_length=5, truncation=True, return_token_type_ids=True),
                  # less room than a template's tokens: transformers cuts nothing then
                  dict(truncation=True, max_length=1), dict(truncation=True, max_length=0),
                  dict(truncation=True, max_length=1, padding="max_length"),
                  dict(truncation=True, max_length=1, padding=True, return_tensors="np")]:
        call_both(face, theirs, TEXTS, **extra)
        call_both(face, theirs, TEXTS[0], **extra)
    face.truncation_side = theirs.truncation_side = "left"
    call_both(face, theirs, TEXTS, padding=True, truncation=True, max_length=6)
    call_both(face, theirs, TEXTS, padding=True, truncation=True, max_length=6, return_tensors="np")


@pytest.mark.parametrize("name", FILES)
def test_unpadded_lists_cut_from_either_side_are_transformers(request, name):
    """datasets.map's usual call (truncation, no padding, lists), cut from the right and from
    the left, with and without the template, each row a list of its own."""
    face, theirs = pair_of(request, name)
    for side in ("right", "left"):
        face.truncation_side = theirs.truncation_side = side
        for max_length, special in itertools.product([0, 1, 3, 9, 1000], [True, False]):
            for extra in ({}, dict(return_attention_mask=False), dict(return_token_type_ids=True),
                          dict(return_length=True)):
                call_both(face, theirs, TEXTS, truncation=True, max_length=max_length, add_special_tokens=special,
                          **extra)
                call_both(face, theirs, TEXTS[0], truncation=True, max_length=max_length,
                          add_special_tokens=special, **extra)
    out = face(TEXTS, truncation=True, max_length=9, return_token_type_ids=True)
    rows = [row for key in ("input_ids", "attention_mask", "token_type_ids") for row in out[key]]
    assert len({id(row) for row in rows}) == len(rows)  # changing one row changes no other
    out["input_ids"][0].append(-1)
    assert_same(face(TEXTS, truncation=True, max_length=9), theirs(TEXTS, truncation=True, max_length=9))


def test_a_pickled_face_is_its_tokenizer_and_settings_not_its_caches(gpt2):
    """datasets.map fingerprints the mapped function by pickling what it holds: the face
    pickles the same before and after it has built its vocabulary, differently once a
    setting changes (so a stale cache is not reused), and comes back answering alike."""
    import pickle
    face = gpt2[0].as_hf()
    face.pad_token = face.eos_token
    face.padding_side, face.model_max_length = "left", 7
    before = pickle.dumps(face)
    assert face.pad_token_id is not None and face.get_vocab()  # both build the vocabulary
    assert pickle.dumps(face) == before
    back = pickle.loads(before)
    for options in ({}, dict(padding=True, truncation=True), dict(padding=True, return_tensors="np")):
        got, want = back(TEXTS, **options), face(TEXTS, **options)
        assert sorted(got) == sorted(want)
        assert all(np.array_equal(got[k], want[k]) if options else got[k] == want[k] for k in want)
    assert back.get_vocab() == face.get_vocab() and back.special_tokens_map == face.special_tokens_map
    face.truncation_side = "left"
    assert pickle.dumps(face) != before


def test_the_datasets_fingerprint_of_a_face_does_not_depend_on_its_caches(gpt2):
    fingerprint = pytest.importorskip("datasets.fingerprint")
    face = gpt2[0].as_hf()
    before = fingerprint.Hasher.hash(face)
    face.get_vocab()
    assert fingerprint.Hasher.hash(face) == before
    face.pad_token = face.eos_token
    assert fingerprint.Hasher.hash(face) != before


@pytest.mark.parametrize("name", ["gpt2", "cl100k"])
def test_offsets_equal_transformers_where_we_give_them(request, name):
    face, theirs = pair_of(request, name)
    for padding, truncation, max_length, side, special in OPTIONS[::5]:
        options = dict(padding=padding, truncation=truncation, max_length=max_length, padding_side=side,
                       add_special_tokens=special, return_offsets_mapping=True)
        call_both(face, theirs, TEXTS, **options)
        call_both(face, theirs, TEXTS[3], **options)
    call_both(face, theirs, TEXTS, padding=True, return_offsets_mapping=True, return_tensors="np")


def test_offsets_of_a_file_with_rules_of_its_own_are_transformers(request):
    face, theirs = pair_of(request, "qwen")
    ours = face(TEXTS, return_offsets_mapping=True)["offset_mapping"]
    assert [[tuple(o) for o in row] for row in ours] == \
        [[tuple(o) for o in row] for row in theirs(TEXTS, return_offsets_mapping=True)["offset_mapping"]]


@pytest.mark.parametrize("name", FILES)
def test_encode_decode_and_the_vocabulary_are_transformers(request, name):
    face, theirs = pair_of(request, name)
    for text in TEXTS:
        for special in (True, False):
            assert face.encode(text, add_special_tokens=special) == theirs.encode(text, add_special_tokens=special)
        ids = theirs.encode(text)
        for skip in (True, False):
            assert face.decode(ids, skip_special_tokens=skip) == theirs.decode(ids, skip_special_tokens=skip)
        assert face.convert_ids_to_tokens(ids) == theirs.convert_ids_to_tokens(ids)
        tokens = theirs.convert_ids_to_tokens(ids)
        assert face.convert_tokens_to_ids(tokens) == theirs.convert_tokens_to_ids(tokens)
    batch = theirs(TEXTS, padding=True)["input_ids"]
    assert face.batch_decode(batch, skip_special_tokens=True) == theirs.batch_decode(batch, skip_special_tokens=True)
    assert face.batch_decode(np.array(batch)) == theirs.batch_decode(batch)
    assert face.get_vocab() == theirs.get_vocab()
    assert len(face) == len(theirs)
    for role in ("bos_token", "eos_token", "unk_token", "pad_token", "bos_token_id", "eos_token_id", "pad_token_id",
                 "unk_token_id", "padding_side", "truncation_side"):
        assert getattr(face, role) == getattr(theirs, role), role
    assert sorted(face.all_special_tokens) == sorted(theirs.all_special_tokens)
    assert sorted(face.all_special_ids) == sorted(theirs.all_special_ids)
    assert face.model_max_length == theirs.model_max_length


def test_vocab_size_is_transformers(request):
    for name in ("gpt2", "qwen", "templated"):
        face, theirs = pair_of(request, name)
        assert face.vocab_size == theirs.vocab_size, name


def test_pad_token_is_settable_and_padding_without_one_raises(gpt2):
    face = gpt2[0].as_hf()
    assert face.pad_token is None and face.pad_token_id is None
    with pytest.raises(ValueError, match="pad"):
        face(["a", "a b c"], padding=True)
    face.pad_token = face.eos_token
    eos = gpt2[0].special_ids["<|endoftext|>"]
    assert face.pad_token_id == face.eos_token_id == eos
    assert face(["a", "a b c"], padding=True)["input_ids"][0][-1] == eos
    face.pad_token_id = 0
    assert face.pad_token == face.convert_ids_to_tokens(0) and face(["a", "a b c"], padding=True)["input_ids"][0][-1] == 0
    assert face(["a", "a b c"]).input_ids == gpt2[0].encode_batch(["a", "a b c"])  # attribute access


def test_what_it_cannot_answer_raises_naming_the_argument():
    face = BPETokenizer([(104, 105)], special_tokens=["<|endoftext|>"]).as_hf()
    for name, value in [("text_pair", "b"), ("stride", 2), ("is_split_into_words", True),
                        ("return_overflowing_tokens", True), ("return_special_tokens_mask", True)]:
        with pytest.raises(ValueError, match=name):
            face("hi", **{name: value})
    with pytest.raises(TypeError, match="bogus"):
        face("hi", bogus=1)
    with pytest.raises(ValueError, match="only_second"):
        face("hi", truncation="only_second", max_length=1)
    with pytest.raises(ValueError, match="return_tensors"):
        face("hi", return_tensors="tf")
    with pytest.raises(TypeError, match="text"):
        face([["hi", "there"]])
    # The accepted no-op values change nothing.
    assert face("hi", stride=0, text_pair=None)["input_ids"] == [256]


def test_the_face_needs_no_transformers_and_a_plain_tokenizer_adds_nothing(monkeypatch):
    monkeypatch.setitem(sys.modules, "transformers", None)  # import transformers now fails
    tok = BPETokenizer([(104, 105)], special_tokens=["<|endoftext|>"])
    face = tok.as_hf()
    face.pad_token = face.eos_token
    out = face(["hi hi", "hi"], padding=True, return_tensors="np")
    assert out["input_ids"].dtype == np.int64
    assert out["input_ids"].tolist() == [[256, 32, 256], [256, 257, 257]]
    assert out["attention_mask"].tolist() == [[1, 1, 1], [1, 0, 0]]
    assert face.decode([256, 257], skip_special_tokens=True) == "hi"
    assert face.get_vocab()["Ġ"] == 32 and face.convert_ids_to_tokens(256) == "hi"


def test_a_text_that_is_not_a_str_anywhere_in_the_batch_is_a_type_error():
    face = BPETokenizer([(104, 105)], special_tokens=["<|endoftext|>"]).as_hf()
    face.pad_token = face.eos_token
    for batch in (["hi", 3], ["hi", b"hi"], ["hi", None]):
        for options in ({}, dict(padding=True), dict(padding=True, return_tensors="np")):
            with pytest.raises(TypeError):
                face(batch, **options)


def test_a_padded_width_past_any_memory_is_an_error_not_an_allocation(request):
    for name in ("gpt2", "qwen"):
        face, _ = pair_of(request, name)
        for max_length in (2**40, 2**62):
            for options in (dict(padding="max_length"), dict(padding="max_length", truncation=True),
                            dict(padding=True, pad_to_multiple_of=max_length)):
                with pytest.raises(ValueError, match="memory"):  # named, before any allocation
                    face(["abc"] * 10, max_length=max_length, **options)
