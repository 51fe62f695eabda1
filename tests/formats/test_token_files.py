"""The library at its edges (issue 34, items 3, 5, 6, 9, 14): a bad file is a ValueError
that names it (never RecursionError, AttributeError or a bare TypeError from deep inside);
a token folder's manifest is checked whole; a ChunkCounter trained once trains again to
the same merges or says it was used up; the warning after pruning says so; the Ray path
raises what the local one raises, with the same message.
"""
import json
import warnings

import numpy as np
import pytest

import bpe
from bpe import BPETokenizer, token_files
from sample_text import made_up_stories

STORIES = made_up_stories(40_000, seed=21)
DEEP = "[" * 100_000 + "]" * 100_000


@pytest.fixture(scope="module")
def tok():
    return BPETokenizer.train(STORIES, vocab_size=400, special_tokens=["<|endoftext|>"])


# --- 9: files nested 100,000 deep ------------------------------------------------------------

@pytest.mark.parametrize("document", [DEEP, '{"format": "bpe", "merges": ' + DEEP + "}",
                                      '{"a": ' + '{"a": ' * 100_000 + "1" + "}" * 100_001])
def test_a_deep_tokenizer_file_is_a_valueerror(tmp_path, document):
    path = tmp_path / "deep.bpe"
    path.write_text(document, encoding="utf-8")
    with pytest.raises(ValueError, match="deep.bpe"):
        BPETokenizer.load(path)


def test_a_deep_gpt2_vocabulary_is_a_valueerror(tmp_path):
    (tmp_path / "vocab.json").write_text('{"a": ' + DEEP + "}", encoding="utf-8")
    (tmp_path / "merges.txt").write_text("#version: 0.2\n", encoding="utf-8")
    with pytest.raises(ValueError, match="vocab.json"):
        BPETokenizer.from_gpt2(tmp_path / "vocab.json", tmp_path / "merges.txt")


def test_a_deep_sidecar_or_manifest_is_a_valueerror(tmp_path, tok):
    token_files.write_token_file(tmp_path / "a.bin", [tok.encode_ordinary("Once upon a time")], tok)
    (tmp_path / "a.bin.json").write_text(DEEP, encoding="utf-8")
    with pytest.raises(ValueError, match="a.bin.json"):
        token_files.read_token_file(tmp_path / "a.bin", tok)
    (tmp_path / "manifest.json").write_text('{"shards": ' + DEEP + "}", encoding="utf-8")
    with pytest.raises(ValueError, match="manifest.json"):
        token_files.read_token_folder(tmp_path, tok)


# --- 14: a token folder's manifest, checked whole --------------------------------------------

@pytest.fixture
def folder(tmp_path, tok):
    shards = []
    for k, text in enumerate(["Once upon a time", "there was a cat", "who liked the sun"]):
        name = f"shard-{k:06d}.bin"
        shards.append((name, token_files.write_token_file(tmp_path / name, [tok.encode_ordinary(text)], tok)))
    token_files.write_manifest(tmp_path, shards, tok, "tok.bpe")
    return tmp_path


def edit_manifest(folder, change):
    manifest = json.loads((folder / "manifest.json").read_text())
    change(manifest)
    (folder / "manifest.json").write_text(json.dumps(manifest))


MANIFEST_EDITS = {
    "a shard that is not an object": (lambda m: m["shards"].__setitem__(1, "shard-000001.bin"), "shard 1"),
    "a shard that is null": (lambda m: m["shards"].__setitem__(0, None), "shard 0"),
    "a dtype that is not one": (lambda m: m.__setitem__("dtype", "<f8"), "dtype"),
    "a dtype that is a list": (lambda m: m.__setitem__("dtype", ["<u2"]), "dtype"),
    "a shard listed twice": (lambda m: m["shards"].append(dict(m["shards"][0])), "twice"),
    "another tokenizer's sha256": (lambda m: m.__setitem__("tokenizer_sha256", "0" * 64), "tokenizer"),
    "a wrong token total": (lambda m: m.__setitem__("tokens", m["tokens"] + 1), "tokens"),
    "a total that is not a number": (lambda m: m.__setitem__("tokens", "many"), "tokens"),
    "a shard's count that is not a number": (lambda m: m["shards"][2].__setitem__("tokens", [3]), "shard 2"),
    "a shard's file that is not a name": (lambda m: m["shards"][2].__setitem__("file", {"x": 1}), "shard 2"),
}


@pytest.mark.parametrize("kind", MANIFEST_EDITS)
def test_a_bad_manifest_is_a_valueerror_that_says_what(folder, tok, kind):
    assert len(token_files.read_token_folder(folder, tok)) == 3
    change, said = MANIFEST_EDITS[kind]
    edit_manifest(folder, change)
    with pytest.raises(ValueError, match=said) as caught:
        token_files.read_token_folder(folder, tok)
    assert "manifest.json" in str(caught.value)


# --- 3: a ChunkCounter trained once -----------------------------------------------------------

def test_a_counter_trained_again_gives_the_same_merges_or_says_it_was_used_up(tok):
    counter = bpe.ChunkCounter()
    counter.add(STORIES)
    first = BPETokenizer.train_from_counts(counter, 400, special_tokens=[])
    assert first.merges  # 400 tokens ask for 144 merges, and the stories have them
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            again = BPETokenizer.train_from_counts(counter, 400)
    except ValueError as e:
        assert "used up" in str(e) or "consumed" in str(e), e
    else:
        assert again.merges == first.merges
    try:
        merges = counter.train(10)
    except ValueError as e:
        assert "used up" in str(e) or "consumed" in str(e), e
    else:
        assert merges == first.merges[:10]


def test_the_warning_after_pruning_says_pruning_removed_the_pairs():
    text = made_up_stories(200_000, seed=9)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tok = BPETokenizer.train(text, vocab_size=30_000, max_memory="300KB")
    assert tok.n_vocab < 30_000
    short = [str(w.message) for w in caught if "n_vocab" in str(w.message)]
    assert len(short) == 1, [str(w.message) for w in caught]
    assert "max_memory" in short[0] and "prun" in short[0] and "more text" not in short[0], short[0]


# --- 4's floor on the library side: a table of many specials -----------------------------------

def test_duplicate_specials_among_many_are_refused_by_name():
    specials = [f"<|s{k}|>" for k in range(50_000)] + ["<|s777|>"]
    with pytest.raises(ValueError, match=r"<\|s777\|>"):
        BPETokenizer([], special_tokens=specials)


# --- 6: the Ray path raises what the local one raises ----------------------------------------

@pytest.fixture(scope="module")
def local_ray():
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
    yield ray
    ray.shutdown()


def test_ray_counting_without_the_column_is_the_same_valueerror(local_ray, tmp_path, tok):
    from bpe import ray_data
    import ray.data

    ds = ray.data.from_items([{"txt": "Once upon a time"}, {"txt": "a cat"}], override_num_blocks=2)
    errors = []
    for call in (lambda: ray_data.count(ds, progress=False), lambda: ray_data.train(ds, 300, progress=False),
                 lambda: ray_data.write_token_folder(ds, tok, tmp_path / "out", progress=False)):
        with pytest.raises(Exception) as caught:
            call()
        errors.append(caught.value)
    assert [type(e) for e in errors] == [ValueError] * 3, [repr(e)[:300] for e in errors]
    assert len({str(e) for e in errors}) == 1, [str(e) for e in errors]
    assert "no column 'text'" in str(errors[0]) and "\x1b[" not in str(errors[0])


def test_ray_counting_a_column_of_numbers_is_the_same_typeerror(local_ray, tmp_path, tok):
    from bpe import ray_data
    import ray.data

    ds = ray.data.from_items([{"text": 1}, {"text": 2}], override_num_blocks=1)
    errors = []
    for call in (lambda: ray_data.count(ds, progress=False),
                 lambda: ray_data.write_token_folder(ds, tok, tmp_path / "out", progress=False)):
        with pytest.raises(Exception) as caught:
            call()
        errors.append(caught.value)
    assert [type(e) for e in errors] == [TypeError] * 2, [repr(e)[:300] for e in errors]
    assert "\x1b[" not in str(errors[0]) and "must hold str" in str(errors[0])
    assert str(errors[0]).split(": ", 1)[1] == str(errors[1]).split(": ", 1)[1]
