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
    fake["tables"][0]["rows"][1]["cold_mb_per_s"] = 120
    assert "| ours (8,192), t | fast 1.5x / 1.2x | 100 / 100 | 150 / 120 |" in bench_tables.encode_tables(fake)["encode-lists"]
    page = "a\n<!-- bench-tables:encode-lists -->\nold\n<!-- /bench-tables:encode-lists -->\nb"
    assert bench_tables.fill(page, {"encode-lists": "new\nrows"}) == \
        "a\n<!-- bench-tables:encode-lists -->\nnew\nrows\n<!-- /bench-tables:encode-lists -->\nb"
    # a part of one line (the front page's speed cell) stays inside its line
    row = "| speed | <!-- bench-tables:front-speed -->old<!-- /bench-tables:front-speed --> | x |"
    assert bench_tables.fill(row, {"front-speed": "new"}) == \
        "| speed | <!-- bench-tables:front-speed -->new<!-- /bench-tables:front-speed --> | x |"
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


# --- every figure and generated table is as new as its data --------------------------------

import stamps  # noqa: E402

DRAWN = re.compile(r"<!-- drawn from (?P<sources>.+?) \((?P<stamp>sha256:[0-9a-f]{12})\) by (?P<command>[^>]+?) -->")


def drawn_from(sources: str) -> list:
    """The files of a table's comment: "docs/results/X.json run 2026-..." (";"-separated)."""
    return [ROOT / part.strip().split(" run ")[0] for part in sources.split(";")]


@pytest.mark.parametrize("image", sorted(p.name for p in (ROOT / "docs/images").glob("*.png")))
def test_every_figure_carries_the_stamp_of_the_data_it_was_drawn_from(image):
    """A figure older than its results file (a rerun without `python figures.py`) fails."""
    text = stamps.png_text(ROOT / "docs/images" / image)
    assert "Stamp" in text and "Source" in text, f"{image} carries no stamp: redraw it with python figures.py"
    sources = [ROOT / s for s in text["Source"].split()]
    assert all(s.is_file() for s in sources), text["Source"]
    assert stamps.stamp(*sources) == text["Stamp"], \
        f"{image} is older than {text['Source']}: run {text['Command']}"


def test_every_generated_table_carries_the_stamp_of_the_data_it_was_drawn_from():
    found = 0
    for page in bench_tables.PAGES:
        text = page.read_text(encoding="utf-8")
        for name in re.findall(r"<!-- bench-tables:([\w-]+) -->", text):
            block = text.split(f"<!-- bench-tables:{name} -->", 1)[1].split(f"<!-- /bench-tables:{name} -->", 1)[0]
            if name == "encode-peers":  # a list of the loaders, under the tables that carry the stamp
                continue
            match = DRAWN.search(block)
            assert match, f"{page.name}: the table {name} says nothing of what it was drawn from"
            assert stamps.stamp(*drawn_from(match["sources"])) == match["stamp"], \
                f"{page.name}: the table {name} is older than {match['sources']}: run {match['command']}"
            found += 1
    assert found >= 7  # two encode tables and training on two pages, the speed row on two


def test_a_stamp_changes_with_the_data_and_a_table_names_its_run(tmp_path):
    data = json.loads((ROOT / "docs/results/bench-encode.json").read_text())
    copy = tmp_path / "bench-encode.json"
    copy.write_text(json.dumps(data))
    before = stamps.stamp(copy)
    data["tables"][0]["rows"][0]["warm_mb_per_s"] += 1
    copy.write_text(json.dumps(data))
    assert stamps.stamp(copy) != before
    line = stamps.run_line(copy)
    assert data["versions"]["bpe_commit"] in line and data["started"][:10] in line and "2-core" in line
    (tmp_path / "plain.json").write_text("{}")
    assert "records no run" in stamps.run_line(tmp_path / "plain.json")


def test_the_legend_of_the_mark_is_there_only_where_a_cell_carries_it():
    encode = json.loads((ROOT / "docs/results/bench-encode.json").read_text())
    tables = bench_tables.encode_tables(encode)
    marked = any(re.search(r"\d\*", tables[k]) for k in ("encode-lists", "encode-arrays"))
    assert ("ids differ from ours" in bench_tables.encode_peers(encode)) == marked
    for t in encode["tables"]:
        for r in t["rows"]:
            r["ids_match"] = r["library"] != "tiktoken"
    assert "ids differ from ours" in bench_tables.encode_peers(encode)


def test_the_front_pages_speed_row_names_every_peer_faster_than_ours():
    encode = json.loads((ROOT / "docs/results/bench-encode.json").read_text())
    row = bench_tables.front_speed(encode)
    for kind in ("lists", "arrays"):
        part = row.split(f"**{kind}**")[1].split("**lists**")[0]
        faster = {lib for lib, cells in bench_tables.ratios(encode, kind).items() if any(x > 1 for *_, x in cells)}
        for lib in faster:
            assert f"**{lib}**" in part.split("**arrays**")[0], (kind, lib)
        assert ("no peer faster" in part.split("**arrays**")[0]) == (not faster)
    assert "up to 2x" not in row
