"""The documentation's generated parts stay true to their sources: the speed tables of
docs/engine.md and README.md are what tools/bench_tables.py writes from the saved
benchmarks, the API page names every module the other pages use, and the core's
signatures read by tools/griffe_pybind.py carry real types."""
import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

import bench_tables  # noqa: E402


def test_the_speed_tables_are_the_saved_results():
    """A rerun of the benchmarks without `python tools/bench_tables.py` fails here."""
    assert bench_tables.main(["--check"]) == 0, "run python tools/bench_tables.py"


def test_each_table_names_every_peer_and_its_call_and_who_leads(tmp_path):
    encode = json.loads((ROOT / "docs/results/bench-encode.json").read_text())
    tables = bench_tables.encode_tables(encode)
    for kind in ("lists", "arrays"):
        rows = [r for t in encode["tables"] if t.get("kind") == kind for r in t["rows"]]
        header = tables[f"encode-{kind}"].splitlines()[0]
        for r in rows:
            assert f"`{bench_tables.call_of(r)}`" in header
            assert ("ours" if r["library"] == "bpe" else r["library"]) in header
    # a made-up result where a peer leads says so, with the factor
    fake = {"vocabularies": {"v": {"title": "ours (8,192 tokens)"}}, "tables": [{
        "kind": "lists", "vocabulary": "v", "text": "t", "rows": [
            {"library": "bpe", "name": "ours encode", "warm_mb_per_s": 100, "cold_mb_per_s": 100},
            {"library": "fast", "name": "fast go", "warm_mb_per_s": 150, "cold_mb_per_s": 90},
            {"library": "odd", "name": "odd go", "warm_mb_per_s": 900, "cold_mb_per_s": 900, "ids_match": False}]}]}
    out = bench_tables.encode_tables(fake)["encode-lists"]
    assert "| ours (8,192), t | fast 1.5x / ours | 100 / 100 | 150 / 90 | 900 / 900* |" in out
    assert "faster than ours in 1 of 1 rows (1 of 2 warm or cold cells): fast." in out
    page = "a\n<!-- bench-tables:encode-lists -->\nold\n<!-- /bench-tables:encode-lists -->\nb"
    assert bench_tables.fill(page, {"encode-lists": "new"}) == \
        "a\n<!-- bench-tables:encode-lists -->\nnew\n<!-- /bench-tables:encode-lists -->\nb"
    with pytest.raises(ValueError, match="has no"):
        bench_tables.fill("<!-- bench-tables:train -->", {"train": "x"})


def test_the_api_page_names_every_module_the_pages_use():
    api = (ROOT / "docs/api.md").read_text()
    used = set()
    for page in (ROOT / "docs").glob("*.md"):
        used |= set(re.findall(r"\bbpe\.(formats|huggingface|sources|token_files|ray_data|explain|registry)\b",
                               page.read_text()))
    assert used, "the pages name the modules"
    for module in used | {"registry"}:
        assert f"::: bpe.{module}" in api, module


def test_the_core_signatures_get_real_types():
    griffe = pytest.importorskip("griffe", reason="needs griffelib (requirements-docs.txt)")
    import griffe_pybind
    params = griffe_pybind.parameters(
        "self: bpe._core.ChunkCounter, texts: object, offsets: typing.Annotated[numpy.typing.ArrayLike, "
        "numpy.int64], threads: object = 0, pattern: str = 'a, b'", "add")
    assert [(p.name, str(p.annotation), p.default) for p in params] == [
        ("texts", "Iterable[str | bytes]", None), ("offsets", "numpy.ndarray[int64]", None),
        ("threads", "int", "0"), ("pattern", "str", "'a, b'")]
    bpe = pytest.importorskip("bpe._core", reason="the core is not built")
    for name in ("pretokenize", "train"):
        line = getattr(bpe, name).__doc__.splitlines()[0]
        match = griffe_pybind.SIGNATURE.match(line)
        assert match, line
        assert all(str(p.annotation) != "object" for p in griffe_pybind.parameters(match["params"], name))
