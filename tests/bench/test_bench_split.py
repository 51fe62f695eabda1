"""bpe_bench.py split (bench/split.py) runs and records what the split's floors are read
from: each named rule's split, the general engine against regex on stories and source,
o200k's and qwen2's encodes against cl100k's, a made-up pattern's encode against regex.
Tiny sizes; nothing here is timed against a bar (the floors live in the results file)."""
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from vocabularies import SHARED_DATA

ROOT = Path(__file__).resolve().parents[2]


def test_the_split_bench_records_every_row_and_floor(tmp_path):
    if not (SHARED_DATA / "tinystories" / "valid-sample.txt").exists():
        pytest.skip(f"the stories are not in {SHARED_DATA}")
    pytest.importorskip("tiktoken")
    from bpe import registry
    try:
        registry.ranks_file("o200k_base", download=False)
    except FileNotFoundError:
        pytest.skip("o200k_base.tiktoken is not shipped here (pip install bpe-openai)")
    done = subprocess.run([sys.executable, "bpe_bench.py", "split", "--repeats", "5", "--stories-mb", "0.02",
                           "--source-mb", "0.03", "--warm-mb", "0.01", "--data", str(SHARED_DATA), "--out",
                           str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    data = json.loads((tmp_path / "bench-split.json").read_text())
    kinds = {(t["kind"], t["text"]) for t in data["tables"]}
    for text in ("held-out stories", "Python source"):
        assert {("named split", text), ("engine", text), ("encode", text), ("made-up encode", text)} <= kinds
    named = [r["pattern"] for t in data["tables"] if t["kind"] == "named split" for r in t["rows"]]
    assert {"gpt4", "qwen2", "o200k"} <= set(named)
    floors = {(f["kind"], f["row"]) for f in data["floors"]}
    assert {("encode", "o200k"), ("encode", "qwen2"), ("engine", "made-up"), ("made-up encode", "ours, encode_ordinary")} <= floors
    assert all(isinstance(f["met"], bool) for f in data["floors"])
    assert len(re.findall(r"(?m)^.*\bfloors:$", (tmp_path / "bench-split.txt").read_text())) == 1
