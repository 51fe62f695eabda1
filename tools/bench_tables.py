"""The speed tables of docs/engine.md and README.md, written from the saved benchmarks.

    python tools/bench_tables.py            # rewrite the tables between their markers
    python tools/bench_tables.py --check    # exit 1 if a page's tables differ from the results

Each table sits between `<!-- bench-tables:NAME -->` and `<!-- /bench-tables:NAME -->`
in a page; what is between them is replaced, the rest of the page is untouched (a part
with no line break, the front page's speed row, is written inside its line). The
numbers come only from docs/results/bench-encode.json and bench-train.json, which
`python bpe_bench.py encode` and `train` save: after a rerun, run this again. Each
table ends with its run (command, time, commit, machine, load) and a comment with the
stamp of the file it was drawn from (tools/stamps.py), which tests/docs/test_docs_site.py
compares with the file.

Encoding: one table for Python lists and one for numpy arrays; a row per vocabulary and
text, a column naming whoever is fastest in each mode where it is not ours, then a
column per library headed by its call, each cell MB/s warm / cold (the JSON's "modes"
say what each means). Training: seconds per corpus, and each peer's time over ours.
"""
import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from stamps import marker, run_line  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "docs" / "results"
PAGES = [ROOT / "docs" / "engine.md", ROOT / "README.md", ROOT / "docs" / "index.md"]
COMMAND = "python tools/bench_tables.py"
OURS = "bpe"

# bench-train.json does not record each peer's call; bench/train.py makes these ones.
TRAIN_CALLS = {
    "bpe": "BPETokenizer.train(text, vocab_size)",
    "rustbpe": "Tokenizer().train_from_iterator(parts, vocab_size, pattern=ours)",
    "tokenizers": "Tokenizer(BPE()).train_from_iterator(parts, BpeTrainer(vocab_size))",
}


def table_head(header: list[str]) -> list[str]:
    """A Markdown table's first two lines: the header and the rule under it."""
    return ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]


def call_of(row: dict) -> str:
    """A row's call without the library's name: "fastokens encode_batch_flat" -> "encode_batch_flat"."""
    first, _, rest = row["name"].partition(" ")
    named = first.strip(",").replace("-", "_") in (row["library"].replace("-", "_"), "ours")
    return row.get("call") or (rest.strip(" ,") if named and rest else row["name"])


def speed(value: float) -> str:
    return f"{value:.0f}" if value >= 10 else f"{value:.1f}"


def times(ratio: float) -> str:
    return f"{ratio:.2f}x" if ratio < 1.1 else f"{ratio:.1f}x"


def short_vocabulary(title: str) -> str:
    """"GPT-4's cl100k_base (100,256 tokens)" -> a row label that fits a phone."""
    if title.startswith("ours"):
        return "ours (8,192)" if "8,192" in title else "ours"
    return title.split(" (")[0].replace("'s", "")


def mb_per_s(row: dict, mode: str):
    value = row.get(f"{mode}_mb_per_s")
    return None if value is None else float(value)


def encode_tables(data: dict) -> dict[str, str]:
    """{"encode-lists": markdown, "encode-arrays": markdown}."""
    out = {}
    for kind in ("lists", "arrays"):
        tables = [t for t in data["tables"] if t.get("kind") == kind]
        # one column per library, in the order the benchmark first shows them, ours first
        libraries, calls = [], {}
        for t in tables:
            for r in t["rows"]:
                if r["library"] not in libraries:
                    libraries.append(r["library"])
                calls.setdefault(r["library"], [])
                call = call_of(r)
                if call not in calls[r["library"]]:
                    calls[r["library"]].append(call)
        libraries.sort(key=lambda lib: lib != OURS)
        # the verdict second, so that a phone shows it beside the row's name without scrolling
        header = ["vocabulary, text", "fastest where not ours (warm / cold)"] + [
            f"{'ours' if lib == OURS else lib} " + " / ".join(f"`{c}`" for c in calls[lib]) for lib in libraries]
        lines = table_head(header)
        leads = []
        for t in tables:
            rows = {r["library"]: r for r in t["rows"]}
            label = f"{short_vocabulary(data['vocabularies'][t['vocabulary']]['title'])}, {t['text']}"
            cells = []
            for lib in libraries:
                r = rows.get(lib)
                if r is None:
                    cells.append("–")
                    continue
                mark = "" if r.get("ids_match", True) else "*"
                cells.append(" / ".join(speed(mb_per_s(r, m)) if mb_per_s(r, m) is not None else "–"
                                        for m in ("warm", "cold")) + mark)
            verdict = []
            for mode in ("warm", "cold"):
                ours = mb_per_s(rows[OURS], mode)
                best = max((r for lib, r in rows.items() if lib != OURS and r.get("ids_match", True)
                            and mb_per_s(r, mode) is not None), key=lambda r: mb_per_s(r, mode), default=None)
                if best is not None and ours is not None and mb_per_s(best, mode) > ours:
                    verdict.append(f"{best['library']} {times(mb_per_s(best, mode) / ours)}")
                    leads.append((label, mode, best["library"]))
                else:
                    verdict.append("ours")
            # One name before both figures ("NAME a / b"): the column fits a narrower screen
            lead = verdict[0].split()[0]
            if lead != "ours" and verdict[1].split()[0] == lead:
                verdict[1] = verdict[1].split()[1]
            lines.append("| " + " | ".join([label, " / ".join(verdict), *cells]) + " |")
        peers = sorted({lib for _, _, lib in leads})
        rows_led = {label for label, _, _ in leads}
        summary = (f"A peer that gives our ids is faster than ours in {len(rows_led)} of {len(tables)} rows "
                   f"({len(leads)} of {2 * len(tables)} warm or cold cells): {', '.join(peers)}."
                   if leads else "Ours is the fastest of those that give our ids in every row, warm and cold.")
        out[f"encode-{kind}"] = "\n".join(lines) + "\n\n" + summary
    return out


def encode_peers(data: dict) -> str:
    """Each library, its version, and how it was loaded and called, from the rows."""
    seen = {}
    for t in data["tables"]:
        if t.get("kind") not in ("lists", "arrays"):
            continue
        for r in t["rows"]:
            entry = seen.setdefault(r["library"], {"calls": [], "loaders": []})
            if call_of(r) not in entry["calls"]:
                entry["calls"].append(call_of(r))
            if r.get("loader") and r["loader"] not in entry["loaders"]:
                entry["loaders"].append(r["loader"])
    versions = data.get("versions", {})
    lines = []
    for lib, entry in sorted(seen.items(), key=lambda kv: kv[0] != OURS):
        version = versions.get(lib) or versions.get(lib.replace("-", "_")) or ""
        lines.append(f"- **{lib}** {version}: " + ", ".join(f"`{c}`" for c in entry["calls"])
                     + "; loaded with " + "; ".join(f"`{x}`" for x in entry["loaders"]) + ".")
    modes = data.get("modes", {})
    lines.append("")
    # the legend of encode_tables' mark, only where a cell carries it
    marked = any(r.get("ids_match") is False for t in data["tables"] if t.get("kind") in ("lists", "arrays")
                 for r in t["rows"])
    lines.append("MB/s, medians of {0} interleaved rounds, one core; warm: {1}; cold: {2}.".format(
        data.get("repeats", "?"), modes.get("warm", "?"), modes.get("cold", "?"))
        + (" \\* ids differ from ours (its own split), so it is not counted as leading." if marked else ""))
    return "\n".join(lines)


def train_table(data: dict) -> str:
    libraries = []
    for t in data["tables"]:
        for r in t["rows"]:
            if r["library"] not in libraries:
                libraries.append(r["library"])
    libraries.sort(key=lambda lib: lib != OURS)
    # the calls go under the table: in the headers they squeezed the numbers off a phone's screen
    header = ["corpus"] + ["ours" if lib == OURS else lib for lib in libraries] + ["peak memory, ours"]
    lines = table_head(header)
    leads = []
    for t in data["tables"]:
        rows = {r["library"]: r for r in t["rows"]}
        cells = []
        for lib in libraries:
            r = rows.get(lib)
            if r is None:
                cells.append("–")
                continue
            same = {True: "", False: " (other merges)", None: ""}[r.get("merges_match")]
            ratio = "" if lib == OURS else f", {times(r['time_over_ours'])} ours"
            cells.append(f"{r['median_s']:.2f} s{ratio}{same}")
            if lib != OURS and r["time_over_ours"] < 1:
                leads.append((t["corpus"], lib))
        label = f"{t['mb']:.0f} MB, {t['what']}: {t['distinct_chunks']:,} distinct chunks"
        lines.append("| " + " | ".join([label, *cells, f"{t.get('ours_peak_rss_mb', 0):,.0f} MB"]) + " |")
    summary = ("A peer is faster than ours on: " + ", ".join(f"{c} ({lib})" for c, lib in leads) + "."
               if leads else "Ours is the fastest on every corpus.")
    calls = "\n".join(f"- {'ours' if lib == OURS else lib}: `{TRAIN_CALLS.get(lib, lib)}`" for lib in libraries)
    return ("\n".join(lines) + "\n\n" + summary +
            f" Medians of {data.get('repeats', '?')} rounds on all cores ({data['machine']['cores']}); "
            "rustbpe is given our split rule and its merges are checked equal to ours; Hugging Face "
            "tokenizers uses its own (GPT-2's) split, so its merges differ. The calls timed:\n\n" + calls)


def ratios(data: dict, kind: str, peer=None) -> dict:
    """{library: [(vocabulary, mode, its MB/s over ours)]} for every peer that gives our
    ids (or only `peer`), over the kind's tables and both modes."""
    out: dict = {}
    for t in data["tables"]:
        if t.get("kind") != kind:
            continue
        rows = {r["library"]: r for r in t["rows"]}
        for lib, r in rows.items():
            if lib == OURS or (peer and lib != peer) or r.get("ids_match", True) is False:
                continue
            for mode in ("warm", "cold"):
                ours, theirs = mb_per_s(rows[OURS], mode), mb_per_s(r, mode)
                if ours and theirs:
                    out.setdefault(lib, []).append((t["vocabulary"], mode, theirs / ours))
    return out


def front_speed(data: dict) -> str:
    """The speed row of the library table on the front pages, one line: against tiktoken,
    and every peer faster than ours somewhere, from the same results as the tables."""
    parts = []
    for kind, call in (("lists", "encode_ordinary"), ("arrays", "encode_to_numpy")):
        against = [1 / x for _, mode, x in ratios(data, kind, "tiktoken").get("tiktoken", []) if mode == "warm"]
        faster = {lib: [c for c in cells if c[2] > 1] for lib, cells in ratios(data, kind).items()}
        faster = {lib: cells for lib, cells in faster.items() if cells}
        text = f"**{kind}**: ours {min(against):.0f}-{max(against):.0f}x tiktoken's `{call}` (warm); "
        if not faster:
            nearest = max(((lib, max(x for *_, x in cells)) for lib, cells in ratios(data, kind).items()),
                          key=lambda kv: kv[1])
            text += f"no peer faster in any row, warm or cold (the nearest, {nearest[0]}, {times(nearest[1])} ours)"
        else:
            named = sorted(faster.items(), key=lambda kv: -max(x for *_, x in kv[1]))
            text += "faster than ours: " + ", ".join(
                f"**{lib}** up to {times(max(x for *_, x in cells))} ours ({len(cells)} of "
                f"{len(ratios(data, kind, lib)[lib])} warm or cold cells, "
                + " and ".join(dict.fromkeys(short_vocabulary(data['vocabularies'][v]['title']) for v, *_ in cells))
                + ")" for lib, cells in named)
        parts.append(text)
    run = data.get("started", "")[:10]
    commit = data.get("versions", {}).get("bpe_commit")
    return "; ".join(parts) + f" (run of {run}, commit {commit})"


def all_tables(results: Path = RESULTS) -> dict[str, str]:
    encode_path, train_path = results / "bench-encode.json", results / "bench-train.json"
    encode = json.loads(encode_path.read_text())
    train = json.loads(train_path.read_text())

    def signed(table: str, path: Path) -> str:
        return f"{table}\n\n{run_line(path)}\n{marker([path], COMMAND)}"

    tables = {name: signed(table, encode_path) for name, table in encode_tables(encode).items()}
    # the inline row carries its stamp as a comment in its own cell
    return {**tables, "encode-peers": encode_peers(encode), "train": signed(train_table(train), train_path),
            "front-speed": front_speed(encode) + " " + marker([encode_path], COMMAND)}


def fill(page: str, tables: dict[str, str]) -> str:
    """page with the text between each pair of markers replaced by its table."""
    for name, table in tables.items():
        start, end = f"<!-- bench-tables:{name} -->", f"<!-- /bench-tables:{name} -->"
        if start not in page:
            continue
        before, rest = page.split(start, 1)
        if end not in rest:
            raise ValueError(f"{start} has no {end} after it")
        # a part of one line (a table's cell) stays in its line
        around = "" if "\n" not in table else "\n"
        page = before + start + around + table + around + end + rest.split(end, 1)[1]
    return page


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a page differs from the results")
    args = parser.parse_args(argv)
    tables = all_tables()
    stale = []
    for page in PAGES:
        old = page.read_text(encoding="utf-8")
        new = fill(old, tables)
        if new != old:
            stale.append(page)
            if not args.check:
                page.write_text(new, encoding="utf-8")
    for page in stale:
        print(f"{page.relative_to(ROOT)}: {'out of date' if args.check else 'tables rewritten'}")
    return 1 if (args.check and stale) else 0


if __name__ == "__main__":
    sys.exit(main())
