"""Token files and folders (bpe/token_files.py): a file's sidecar and a folder's manifest
are read whole and checked before any id is, and whatever is wrong with them (nested
100,000 deep, a shard that is not an object, another tokenizer's fingerprint, a wrong
total) is a ValueError that names the file and what is wrong."""
import json

import numpy as np
import pytest

from bpe import BPETokenizer, token_files
from sample_text import made_up_stories

STORIES = made_up_stories(40_000, seed=21)
DEEP = "[" * 100_000 + "]" * 100_000


@pytest.fixture(scope="module")
def tok():
    return BPETokenizer.train(STORIES, vocab_size=400, special_tokens=["<|endoftext|>"])


def test_a_deep_sidecar_or_manifest_is_a_valueerror(tmp_path, tok):
    token_files.write_token_file(tmp_path / "a.bin", [tok.encode_ordinary("Once upon a time")], tok)
    (tmp_path / "a.bin.json").write_text(DEEP, encoding="utf-8")
    with pytest.raises(ValueError, match="a.bin.json"):
        token_files.read_token_file(tmp_path / "a.bin", tok)
    (tmp_path / "manifest.json").write_text('{"shards": ' + DEEP + "}", encoding="utf-8")
    with pytest.raises(ValueError, match="manifest.json"):
        token_files.read_token_folder(tmp_path, tok)


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


# --- the pipeline's token files are the library's ---------------------------------------------

def test_token_files_are_data_pys(tmp_path, tok):
    """The library's token files are data.py's: each reads what the other writes."""
    data = pytest.importorskip("data", reason="the GPT pipeline's data.py is not in the library's sdist")
    ids = tok.encode_ordinary(STORIES[:3000])
    data.write_tokens(tmp_path / "train-bpe.bin", [np.array(ids)], tok)
    assert token_files.read_token_file(tmp_path / "train-bpe.bin", tok).tolist() == ids
    token_files.write_token_file(tmp_path / "lib.bin", [ids[:10], np.array(ids[10:])], tok, tokenizer_name="tok.bpe")
    assert data.load_tokens(tmp_path / "lib.bin", tok).tolist() == ids
    big = BPETokenizer(tok.merges, special_tokens=["<|endoftext|>"], token_ids=list(range(len(tok) - 1)) + [70000])
    token_files.write_token_file(tmp_path / "big.bin", [big.encode("x<|endoftext|>", allowed_special="all")], big)
    assert token_files.read_sidecar(tmp_path / "big.bin")["dtype"] == "<u4"
    assert token_files.read_token_file(tmp_path / "big.bin", big).tolist()[-1] == 70000
