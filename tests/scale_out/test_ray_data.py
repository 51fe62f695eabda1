"""bpe.ray_data on a local Ray of two CPUs: training spread over tasks gives the merges
of one process, and a token folder read in its manifest's order gives the ids of
encoding in one process. Skipped where Ray is not installed (requirements-ray.txt)."""
import json
import random

import numpy as np
import pytest

from bpe import BPETokenizer

try:
    import ray
    import ray.data

    from bpe import ray_data
except ImportError:  # collected all the same, and each test skips naming the package
    ray = ray_data = None

SPECIALS = ["<|endoftext|>"]


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
    yield
    ray.shutdown()


def stories(seed, count):
    rng = random.Random(seed)
    words = ["".join(rng.choice("abcdefghéz") for _ in range(rng.randint(1, 8))) for _ in range(400)]
    return [" ".join(rng.choice(words) for _ in range(rng.randint(3, 40))) + rng.choice([".", "!", "\n"])
            for _ in range(count)]


@pytest.fixture(scope="module")
def texts():
    return stories(1, 400)


@pytest.fixture(scope="module")
def tokenizer(texts):
    return BPETokenizer.train(texts, 256 + 300 + 1, pattern="gpt4", special_tokens=SPECIALS, progress=False)


def test_training_on_blocks_equals_one_process(texts, tokenizer):
    ds = ray.data.from_items([{"text": t} for t in texts], override_num_blocks=7)
    tok = ray_data.train(ds, 256 + 300 + 1, pattern="gpt4", special_tokens=SPECIALS, progress=False)
    assert tok.merges == tokenizer.merges and tok == tokenizer


def test_training_on_files(tmp_path, texts):
    # Three kinds, through bpe.sources: a text file with stories between special tokens,
    # JSON Lines and Parquet.
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow as pa

    (tmp_path / "a.txt").write_text("<|endoftext|>".join(texts[:100]), encoding="utf-8")
    (tmp_path / "b.jsonl").write_text("".join(json.dumps({"story": t}) + "\n" for t in texts[100:200]),
                                      encoding="utf-8")
    pq.write_table(pa.table({"story": texts[200:]}), tmp_path / "c.parquet")
    one = ["<|endoftext|>".join(texts[:100])] + texts[100:]
    expected = BPETokenizer.train(one, 256 + 200 + 1, special_tokens=SPECIALS, progress=False)
    # field names the JSON key and the Parquet column; a text file has none
    tok = ray_data.train([tmp_path], 256 + 200 + 1, special_tokens=SPECIALS, field="story", progress=False)
    assert tok == expected
    # The same files as a Dataset of texts, one row a record, and the text file's pieces
    # (cut at safe places) rows too, in order; the files in whatever order their tasks end
    ds, column = ray_data.dataset([tmp_path], field="story", special_tokens=SPECIALS)
    rows = [row[column] for row in ds.take_all()]
    records = set(texts[100:])
    assert sorted(r for r in rows if r in records) == sorted(texts[100:])
    assert "".join(r for r in rows if r not in records) == one[0]


def test_token_folder_in_order(tmp_path, texts, tokenizer):
    ds = ray.data.from_items([{"text": t} for t in texts], override_num_blocks=5)
    manifest = ray_data.write_token_folder(ds, tokenizer, tmp_path / "tokens", workers=2, progress=False)
    assert manifest["dtype"] == "<u2" and len(manifest["shards"]) == 5
    shards = ray_data.read_token_folder(tmp_path / "tokens", tokenizer)
    got = np.concatenate(shards)
    expected = np.concatenate([tokenizer.encode_array(t, allowed_special="all") for t in texts])
    assert got.dtype == np.uint16 and np.array_equal(got, expected)
    assert [len(s) for s in shards] == [s["tokens"] for s in manifest["shards"]]
    assert manifest["tokens"] == len(expected)

    # A shard cut short is refused by name, and so is a folder whose manifest is missing.
    victim = tmp_path / "tokens" / manifest["shards"][2]["file"]
    victim.write_bytes(victim.read_bytes()[:-2])
    with pytest.raises(ValueError, match=victim.name):
        ray_data.read_token_folder(tmp_path / "tokens", tokenizer)
    (tmp_path / "tokens" / "manifest.json").unlink()
    with pytest.raises(ValueError, match="manifest"):
        ray_data.read_token_folder(tmp_path / "tokens", tokenizer)


def test_uint32_past_65536_ids(tmp_path):
    tok = BPETokenizer([], special_tokens={"<|big|>": 70_000})
    ds = ray.data.from_items([{"text": "ab<|big|>c"}, {"text": "d"}], override_num_blocks=2)
    manifest = ray_data.write_token_folder(ds, tok, tmp_path, workers=1, progress=False)
    assert manifest["dtype"] == "<u4"
    got = np.concatenate(ray_data.read_token_folder(tmp_path, tok)).tolist()
    assert got == [97, 98, 70_000, 99, 100]


def test_a_missing_column_and_an_unreadable_file_are_named(tmp_path):
    ds = ray.data.from_items([{"body": "some text"}])
    with pytest.raises(Exception, match="no column 'text'") as info:
        ray_data.train(ds, 260, progress=False)
    assert "'body'" in str(info.value)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "fine"}\nnot json\n', encoding="utf-8")
    (tmp_path / "good.jsonl").write_text('{"text": "fine"}\n', encoding="utf-8")
    # The reader's own error, raised here as it would be in one process: not Ray's wrapper.
    from bpe.sources import SourceError

    with pytest.raises(SourceError, match=r"bad\.jsonl, line 2 is not JSON"):
        ray_data.train([tmp_path], 260, progress=False)
    tok = BPETokenizer.train(["fine"], 260, progress=False)
    with pytest.raises(SourceError, match=r"bad\.jsonl, line 2 is not JSON"):
        ray_data.write_token_folder([tmp_path], tok, tmp_path / "out", progress=False)
    assert not (tmp_path / "out" / "manifest.json").exists()


def test_token_folder_from_files_keeps_their_order(tmp_path, texts, tokenizer):
    for k in range(6):  # names in order: the files are read in name order
        (tmp_path / f"part-{k}.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in texts[k::6]),
                                                  encoding="utf-8")
    ordered = [t for k in range(6) for t in texts[k::6]]
    ray_data.write_token_folder([tmp_path], tokenizer, tmp_path / "out", workers=2, progress=False)
    got = np.concatenate(ray_data.read_token_folder(tmp_path / "out", tokenizer))
    assert np.array_equal(got, np.concatenate([tokenizer.encode_array(t) for t in ordered]))


@pytest.mark.parametrize("kind", ["text", "shards"])
def test_data_py_engine_ray_matches_the_local_engine(tmp_path, kind):
    import data
    import pretrain  # noqa: F401  (the loader pretrain.py uses)

    rng = random.Random(9)
    words = ["once", "upon", "a", "time", "cat", "dog", "sat", "ran", "happy", "the", "big", "sun"]
    stories_ = [" ".join(rng.choice(words) for _ in range(rng.randint(6, 20))).capitalize() + "." for _ in range(150)]
    src = tmp_path / "src"
    src.mkdir()
    if kind == "text":
        (src / "train.txt").write_text("\n\n".join(stories_[:120]) + "\n", encoding="utf-8")
        (src / "valid.txt").write_text("\n\n".join(stories_[120:]) + "\n", encoding="utf-8")
        common = ["--source", str(src), "--separator", "blank"]
    else:  # JSON Lines and Parquet shards, the last one held out
        pq = pytest.importorskip("pyarrow.parquet")
        import pyarrow as pa

        for k in range(3):
            pq.write_table(pa.table({"story": stories_[40 * k:40 * k + 40]}), src / f"part-{k}.parquet")
        (src / "part-3.jsonl").write_text("".join(json.dumps({"story": s}) + "\n" for s in stories_[120:]),
                                          encoding="utf-8")
        common = ["--source", str(src), "--field", "story", "--valid-shards", "1"]
    common += ["--bpe", "--vocab-size", "300", "--no-progress"]
    data.main(common + ["--data-dir", str(tmp_path / "local")])
    data.main(common + ["--data-dir", str(tmp_path / "ray"), "--engine", "ray"])
    local_tok = data.load_tokenizer(tmp_path / "local", True)
    ray_tok = data.load_tokenizer(tmp_path / "ray", True)
    assert ray_tok == local_tok
    for split in ("train", "valid"):
        source = data.token_source(tmp_path / "ray", split, True)
        assert source.is_dir()
        got = data.load_tokens(source, ray_tok)
        want = data.load_tokens(data.token_source(tmp_path / "local", split, True), local_tok)
        assert np.array_equal(got[0:len(got)], np.asarray(want))


def test_what_the_workers_drop_reaches_the_driver(tmp_path):
    # Four alike files, each too varied for the budget: each worker drops the same rare
    # chunks, and the merges add up counts of the chunks kept, which drops nothing more.
    # So the driver's counter has dropped what the four did, and train says so.
    import bpe

    rng = random.Random(4)
    words = ["".join(rng.choice("abcdefghijklmnop") for _ in range(rng.randint(4, 12))) for _ in range(40_000)]
    text = " ".join(words + words[:2000] * 3)  # some chunks counted more than once, to be kept
    budget = 4 << 20
    alone = bpe.ChunkCounter("default", max_memory=budget)
    with pytest.warns(RuntimeWarning, match="max_memory"):
        alone.add(text)
    assert alone.pruned[0] > 0
    for k in range(4):
        (tmp_path / f"part-{k}.txt").write_text(text, encoding="utf-8")
    counter = ray_data.count([tmp_path], max_memory=budget, progress=False)
    assert counter.pruned == (4 * alone.pruned[0], alone.pruned[1])
    assert counter.max_memory == budget and len(counter) == len(alone)
    with pytest.warns(RuntimeWarning, match=rf"the workers dropped {4 * alone.pruned[0]:,} distinct chunks"):
        ray_data.train([tmp_path], 300, max_memory=budget, progress=False)


def test_token_folder_with_a_token_before_each_text(tmp_path, texts, tokenizer):
    # Files longer than a batch (FILE_BATCH_CHARS): a text file is one text however many
    # batches it is read in, a JSON Lines file a text a record.
    big = [t for _ in range(ray_data.FILE_BATCH_CHARS // sum(map(len, texts)) + 1) for t in texts]
    (tmp_path / "a.txt").write_text(" ".join(big), encoding="utf-8")
    (tmp_path / "b.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in big), encoding="utf-8")
    eot = tokenizer.special_ids["<|endoftext|>"]
    manifest = ray_data.write_token_folder([tmp_path], tokenizer, tmp_path / "out", workers=2, progress=False,
                                           before_each="<|endoftext|>")
    assert [s["file"] for s in manifest["shards"]] == ["shard-000000.bin", "shard-000001.bin"]
    got = ray_data.read_token_folder(tmp_path / "out", tokenizer)
    assert np.array_equal(got[0], np.concatenate([[eot], tokenizer.encode_array(" ".join(big), allowed_special="all")]))
    assert np.array_equal(got[1], np.concatenate([np.concatenate([[eot], tokenizer.encode_array(t)]) for t in big]))
    ds = ray.data.from_items([{"text": t} for t in texts[:50]], override_num_blocks=3)
    ray_data.write_token_folder(ds, tokenizer, tmp_path / "rows", workers=2, progress=False, before_each="<|endoftext|>")
    got = np.concatenate(ray_data.read_token_folder(tmp_path / "rows", tokenizer))
    assert np.array_equal(got, np.concatenate([np.concatenate([[eot], tokenizer.encode_array(t)]) for t in texts[:50]]))
    with pytest.raises(ValueError, match="before_each must be one of the tokenizer's special tokens"):
        ray_data.write_token_folder(ds, tokenizer, tmp_path / "rows", before_each="<|pad|>", progress=False)


# --- the Ray path raises what the local one raises, with the same message -------------------

def test_ray_counting_without_the_column_is_the_same_valueerror(tmp_path, tokenizer):
    ds = ray.data.from_items([{"txt": "Once upon a time"}, {"txt": "a cat"}], override_num_blocks=2)
    errors = []
    for call in (lambda: ray_data.count(ds, progress=False), lambda: ray_data.train(ds, 300, progress=False),
                 lambda: ray_data.write_token_folder(ds, tokenizer, tmp_path / "out", progress=False)):
        with pytest.raises(Exception) as caught:
            call()
        errors.append(caught.value)
    assert [type(e) for e in errors] == [ValueError] * 3, [repr(e)[:300] for e in errors]
    assert len({str(e) for e in errors}) == 1, [str(e) for e in errors]
    assert "no column 'text'" in str(errors[0]) and "\x1b[" not in str(errors[0])


def test_ray_counting_a_column_of_numbers_is_the_same_typeerror(tmp_path, tokenizer):
    ds = ray.data.from_items([{"text": 1}, {"text": 2}], override_num_blocks=1)
    errors = []
    for call in (lambda: ray_data.count(ds, progress=False),
                 lambda: ray_data.write_token_folder(ds, tokenizer, tmp_path / "out", progress=False)):
        with pytest.raises(Exception) as caught:
            call()
        errors.append(caught.value)
    assert [type(e) for e in errors] == [TypeError] * 2, [repr(e)[:300] for e in errors]
    assert "\x1b[" not in str(errors[0]) and "must hold str" in str(errors[0])
    assert str(errors[0]).split(": ", 1)[1] == str(errors[1]).split(": ", 1)[1]
