"""Make every figure of the documentation site from the files the measurements leave.

    python figures.py                      # all figures, from docs/results/
    python figures.py --runs runs/pretrain-rope runs/pretrain-rope-bpe   # take the logs of these runs first

Nothing is typed in by hand: each figure is drawn from what a script saved, the
benchmark's JSON files, a script's printed output saved to a text file, or a run
folder's log.jsonl:

    docs/results/bench-reference.json  python bpe_bench.py reference
    docs/results/bench-encode.json     python bpe_bench.py encode
    docs/results/bench-threads.json    python bpe_bench.py threads
    docs/results/bench-train.json      python bpe_bench.py train
    docs/results/bits.txt              python bits.py runs/pretrain-rope runs/pretrain-rope-bpe > docs/results/bits.txt
    docs/results/logs/NAME.jsonl       runs/NAME/log.jsonl, copied there by --runs (runs/ is not committed)

and the figures go to docs/images/:

    speed-reference.png      the C++ against the Python reference (bench-reference.json)
    speed-encode-lists.png   encoding on one core, lists against lists (bench-encode.json)
    speed-encode-arrays.png  encoding on one core, arrays against arrays (bench-encode.json)
    speed-threads.png        our encoder on two threads against one (bench-threads.json)
    speed-train.png          training against rustbpe and tokenizers; counting on 1 and 2 threads (bench-train.json)
    loss-curves.png          held-out loss over pretraining, per run (logs/*.jsonl)
    bits-per-char.png        bits per character, per model (bits.txt)
    training-paper.gif       training merge by merge on Algorithm 1's words (`figures.py training-steps`:
    training-story.gif       drawn from bpe.train run there and then, not from a saved file)

Each PNG carries the stamp of the files it was drawn from in its metadata (Source,
Stamp, Command: tools/stamps.py); tests/docs/test_docs_site.py fails when a figure's stamp is
not its files' as they are now, so a rerun of a benchmark must be followed by this.
A figure whose input is missing is skipped, with the command that makes the input.
Needs matplotlib (pip install -r requirements-docs.txt).
"""
import argparse
import json
import re
import shutil
import sys
import textwrap
from pathlib import Path

# One colour per library, the same in every figure (keys: the benchmark's "library"):
# the benchmark's registry of peers holds them.
from bench.peers import COLOURS
from tools.stamps import relative, stamp

ROOT = Path(__file__).resolve().parent
RESULTS = ROOT / "docs" / "results"
IMAGES = ROOT / "docs" / "images"

OTHER_COLOUR = "#777777"
WORD_COLOUR, BPE_COLOUR = "#8c564b", "#1f77b4"
DPI = 110
# The documentation column is about 750 px wide: figures drawn at this width (in inches, at
# COLUMN_DPI) show their labels at the size they were set, instead of shrunk.
COLUMN_INCHES, COLUMN_DPI = 7.5, 100


class MissingInput(Exception):
    """An input file is not there, or holds nothing this script can read."""


# ---------------------------------------------------------------------------------------
# Reading what the scripts printed


def read_text(path: Path, command: str) -> str:
    if not path.exists():
        raise MissingInput(f"no {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}: make it with "
                           f"`{command}`")
    return path.read_text(encoding="utf-8")


def read_bench(results: Path, section: str) -> dict:
    """What `python bpe_bench.py SECTION` saved in bench-SECTION.json."""
    path = results / f"bench-{section}.json"
    try:
        data = json.loads(read_text(path, f"python bpe_bench.py {section}"))
    except json.JSONDecodeError as e:
        raise MissingInput(f"{path.name} is not JSON ({e}): make it again with `python bpe_bench.py {section}`")
    if data.get("section") != section:
        raise MissingInput(f"{path.name} is not the output of `python bpe_bench.py {section}`")
    return data


def machine_label(data: dict) -> str:
    """"2-core AMD EPYC, 2026-12-01, commit 7f5700d": the machine and the run a benchmark's
    figures come from, for their titles."""
    m = data.get("machine", {})
    commit = data.get("versions", {}).get("bpe_commit")
    return (f"{m.get('cores', '?')}-core {m.get('cpu_model') or 'machine'}" + (f", {data['started'][:10]}" if
            data.get("started") else "") + (f", commit {commit}" if commit else ""))


def parse_bits(text: str) -> list[dict]:
    """The rows of bits.py's table: model, bits/char, tokens, unknown, chars/token, round trip."""
    rows = []
    row = re.compile(r"^(?P<model>\S+)\s+(?P<bpc>[\d.]+)\s+(?P<tokens>[\d,]+)\s+(?P<unk>[\d.]+)%\s+"
                     r"(?P<cpt>[\d.]+)\s+(?P<rt>[\d.]+)%\s+(?P<s>[\d.]+)\s*$")
    for line in text.splitlines():
        m = row.match(line)
        if m:
            rows.append({"model": m["model"], "bits_per_char": float(m["bpc"]), "tokens": int(m["tokens"].replace(",", "")),
                         "unknown": float(m["unk"]) / 100, "chars_per_token": float(m["cpt"]),
                         "round_trip": float(m["rt"]) / 100})
    return rows


def read_log(path: Path) -> dict:
    """The last run in a log.jsonl (a run started again with --overwrite appends to the
    file; a --resume continues the run before it): its held-out losses and training losses."""
    runs = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        record = json.loads(line)
        event = record.get("event")
        if event == "start":
            if record.get("step", 0) == 0 or not runs:
                runs.append({"start": record, "eval": [], "train": []})
            # step > 0: a --resume, which continues the run before it
        elif runs and event in ("eval", "train"):
            runs[-1][event].append(record)
    if not runs or not runs[-1]["eval"]:
        raise MissingInput(f"{path} has no held-out losses")
    return runs[-1]


# ---------------------------------------------------------------------------------------
# Figures


def plt():
    import matplotlib

    matplotlib.use("Agg")  # files only, no window
    import matplotlib.pyplot as pyplot

    pyplot.rcParams.update({"font.size": 10, "axes.spines.top": False, "axes.spines.right": False})
    return pyplot


def save(fig, name: str, out: Path, sources: list, dpi: int = DPI):
    """Write the figure, stamped with the files it was drawn from (tools/stamps.py): a test
    compares the stamp with those files, so a figure older than its data fails it."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / name
    stamped = {"Source": " ".join(relative(p) for p in sources), "Stamp": stamp(*sources),
               "Command": f"python figures.py {Path(name).stem}"}
    fig.savefig(path, dpi=dpi, bbox_inches="tight", metadata={"Software": None, **stamped})
    plt().close(fig)
    print(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}: {path.stat().st_size / 1e3:.0f} KB")


def bar_labels(ax, bars, labels, **kw):
    for bar, label in zip(bars, labels):
        ax.annotate(label, (bar.get_x() + bar.get_width() / 2, bar.get_height()), xytext=(0, 2),
                    textcoords="offset points", ha="center", va="bottom", fontsize=8, **kw)


def seconds_label(s: float) -> str:
    return f"{s * 1000:.0f} ms" if s < 1 else f"{s:.2f} s"


def figure_speed_reference(results: Path, out: Path):
    data = read_bench(results, "reference")
    rows = data["rows"]
    p = plt()
    fig, axes = p.subplots(1, 2, figsize=(COLUMN_INCHES, 3.8))
    for ax, task in zip(axes, ("train", "encode")):
        mine = [r for r in rows if r["task"].startswith(task)]
        xs = range(len(mine))
        width = 0.38
        ref = [r["reference"]["median_s"] for r in mine]
        cpp = [r["cpp"]["median_s"] for r in mine]
        ref_bars = ax.bar([x - width / 2 for x in xs], ref, width, color=COLOURS["bpe_reference"],
                          label="Python reference")
        cpp_bars = ax.bar([x + width / 2 for x in xs], cpp, width, color=COLOURS["bpe"], label="C++ (bpe)")
        bar_labels(ax, ref_bars, [seconds_label(v) for v in ref])
        bar_labels(ax, cpp_bars, [f"{seconds_label(c)}\n{r / c:.0f}x faster" for r, c in zip(ref, cpp)])
        ax.set_yscale("log")
        ax.set_xticks(list(xs), [f"{r['mb']:g} MB" for r in mine])
        ax.set_title(mine[0]["task"] if task == "train" else "encode (the same text, those merges)")
        ax.set_ylabel(f"seconds (log scale), median of {data['repeats']}")
        ax.set_ylim(min(cpp) / 3, max(ref) * 6)
    axes[0].legend(loc="upper left", frameon=False)
    fig.suptitle(f"The C++ module against the Python reference, one thread each\n(bpe_bench.py reference, "
                 f"{machine_label(data)})", fontsize=10)
    fig.tight_layout()
    save(fig, "speed-reference.png", out, [results / "bench-reference.json"], dpi=COLUMN_DPI)


VOCABULARY_LABELS = {"ours": "our 8,192 tokens", "gpt2": "GPT-2's", "cl100k": "GPT-4's cl100k_base"}


ENCODE_MODES = {"warm": "warm", "cold": "cold"}  # drawn side by side; "first" is in the tables


def speeds(row: dict) -> dict:
    """{mode: MB/s} of a row: warm and cold (bench-encode.json), or the
    one speed of an older file, under its table's "caches"."""
    if any(f"{mode}_mb_per_s" in row for mode in ENCODE_MODES):
        return {mode: row[f"{mode}_mb_per_s"] for mode in ENCODE_MODES if f"{mode}_mb_per_s" in row}
    return {"": row["mb_per_s"]} if "mb_per_s" in row else {}


def figure_encode(kind: str, results: Path, out: Path):
    """One panel per vocabulary and text: MB per second of each library, on one core,
    warm (solid) beside cold (light)."""
    data = read_bench(results, "encode")
    tables = [t for t in data["tables"] if t["kind"] == kind]
    if not tables:
        raise MissingInput(f"bench-encode.json holds no {kind} tables")
    vocabularies = list(dict.fromkeys(t["vocabulary"] for t in tables))
    texts = list(dict.fromkeys(t["text"] for t in tables))
    most = max(len(t["rows"]) for t in tables)
    p = plt()
    # One column of panels, a vocabulary and text each, at the documentation's width.
    panels = [(v, x) for v in vocabularies for x in texts]
    fig, axes = p.subplots(len(panels), 1, squeeze=False, figsize=(COLUMN_INCHES, (0.42 * most + 0.9) * len(panels) + 1))
    for t in tables:
        ax = axes[panels.index((t["vocabulary"], t["text"]))][0]
        rows = [r for r in t["rows"] if speeds(r)]
        modes = list(speeds(rows[0])) if rows else []
        height = 0.8 / max(1, len(modes))
        top = 0
        for k, mode in enumerate(modes):
            ys = [i + (k - (len(modes) - 1) / 2) * height for i in range(len(rows))]
            values = [speeds(r).get(mode, 0) for r in rows]
            bars = ax.barh(ys, values, height, color=[COLOURS.get(r["library"], OTHER_COLOUR) for r in rows],
                           alpha=1.0 if k == 0 else 0.45)
            for bar, r, v in zip(bars, rows, values):
                if r["ids_match"] is False:
                    bar.set_hatch("///")
                ax.annotate(f"{v:.0f} MB/s {mode}".rstrip(), (bar.get_width(), bar.get_y() + bar.get_height() / 2),
                            xytext=(3, 0), textcoords="offset points", va="center", fontsize=7)
            top = max([top, *values])
        ax.set_yticks(range(len(rows)), [r["name"] + ("" if r["ids_match"] else "\n(ids differ)") for r in rows],
                      fontsize=8)
        ax.invert_yaxis()
        ax.set_xlim(0, top * 1.35 or 1)
        ax.set_title(f"{VOCABULARY_LABELS.get(t['vocabulary'], t['vocabulary'])}, {t['text']} ({t['mb']:.1f} MB)",
                     fontsize=9)
    axes[-1][0].set_xlabel("MB per second, median (higher is faster)")
    what = "Python lists of ints" if kind == "lists" else "numpy arrays"
    pinned = "pinned to one CPU" if tables[0].get("pinned_cpu") is not None else "not pinned"
    how = ("warm (solid: a tokenizer that has encoded other text of the same kind) and cold (light: a new one)"
           if "modes" in tables[0] else f"{tables[0].get('caches', '')} caches")
    clock = "; CPU time" if tables[0].get("clock") == "cpu" else ""
    fig.suptitle(f"Encoding, {kind} against {kind} ({what}): 1 thread, 1 core ({pinned}),\n{how}, median of "
                 f"{tables[0]['repeats']}{clock};\nbpe_bench.py encode, {machine_label(data)};\nevery library's ids "
                 "checked against ours, hatched where they differ", fontsize=9)
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.7 / fig.get_figheight()))  # room for the four-line title
    save(fig, f"speed-encode-{kind}.png", out, [results / "bench-encode.json"], dpi=COLUMN_DPI)


def figure_encode_lists(results: Path, out: Path):
    figure_encode("lists", results, out)


def figure_encode_arrays(results: Path, out: Path):
    figure_encode("arrays", results, out)


def figure_threads(results: Path, out: Path):
    data = read_bench(results, "threads")
    p = plt()
    fig, axes = p.subplots(1, 2, figsize=(COLUMN_INCHES, 3.8), gridspec_kw={"width_ratios": [0.9, 1.6]})
    ax = axes[0]
    rows = data["rows"]
    bars = ax.bar(range(len(rows)), [r["mb_per_s"] for r in rows], color=COLOURS["bpe"])
    bar_labels(ax, bars, [f"{r['mb_per_s']:.0f} MB/s" for r in rows])
    ax.set_xticks(range(len(rows)), [f"{r['threads']} thread{'s' if r['threads'] > 1 else ''}" for r in rows])
    ax.set_ylabel(f"MB per second, median of {data['repeats']}")
    ax.set_ylim(0, max(r["mb_per_s"] for r in rows) * 1.2)
    ax.set_title(f"encode_array on {data['mb']:.0f} MB of distinct text", fontsize=9)
    ax = axes[1]
    # (ratio, label, colour) in the order drawn: this process, the median of its rounds'
    # ratios (which the floor takes too), the same work in two processes in the same
    # rounds, then the fresh processes. Older results files lack the middle two.
    drawn = [(data["ratio"], "this\nprocess", COLOURS["bpe"])]
    if "rounds_ratio" in data:
        drawn.append((data["rounds_ratio"], "its rounds'\nmedian", COLOURS["bpe"]))
    if "processes" in data:
        drawn.append((data["processes"]["ratio"], "same work,\n2 processes", "#777777"))
    drawn += [(r["ratio"], f"fresh\n{k + 1}", COLOURS["bpe"]) for k, r in enumerate(data.get("fresh_processes", []))]
    ratios, labels, colours = (list(column) for column in zip(*drawn))
    bars = ax.bar(range(len(ratios)), ratios, color=colours)
    # Inside the bars, in white: above them a ratio just under the floor sat on its line.
    for bar, ratio in zip(bars, ratios):
        ax.annotate(f"{ratio:.2f}x", (bar.get_x() + bar.get_width() / 2, bar.get_height()), xytext=(0, -4),
                    textcoords="offset points", ha="center", va="top", fontsize=8, color="white")
    ax.axhline(data["floor"], color="#d62728", linestyle="--", linewidth=1, label=f"the floor, {data['floor']}x")
    ax.axhline(data["ceiling"]["ratio"], color="#777777", linestyle=":", linewidth=1,
               label=f"the machine's ceiling now, {data['ceiling']['ratio']:.2f}x (a Python loop in 2 processes)")
    ax.set_xticks(range(len(ratios)), labels, fontsize=6.5)
    ax.set_ylabel(f"{data['threads']} threads against 1 (times faster)")
    ax.set_ylim(0, max(ratios + [data["floor"], data["ceiling"]["ratio"]]) * 1.6)
    # The legend above the bars, so that a ratio's label never sits on the floor's line.
    ax.legend(frameon=False, fontsize=7, loc="upper left")
    fig.suptitle(f"Our encoder on {data['threads']} threads against 1: arrays, not pinned\n"
                 f"(bpe_bench.py threads, {machine_label(data)})", fontsize=10)
    fig.tight_layout()
    save(fig, "speed-threads.png", out, [results / "bench-threads.json"], dpi=COLUMN_DPI)


def figure_train(results: Path, out: Path):
    data = read_bench(results, "train")
    tables = data["tables"]
    libraries = list(dict.fromkeys(r["library"] for t in tables for r in t["rows"]))
    names = {r["library"]: r["name"] for t in tables for r in t["rows"]}
    p = plt()
    fig, axes = p.subplots(2, 1, figsize=(COLUMN_INCHES, 7.4), gridspec_kw={"height_ratios": [1.4, 1]})
    ax = axes[0]
    width = 0.8 / len(libraries)
    for k, library in enumerate(libraries):
        xs, values, labels = [], [], []
        for i, t in enumerate(tables):
            row = next((r for r in t["rows"] if r["library"] == library), None)
            if row is not None:
                xs.append(i + (k - (len(libraries) - 1) / 2) * width)
                values.append(row["median_s"])
                same = "" if row["merges_match"] is None else (" =" if row["merges_match"] else " ≠")
                labels.append(seconds_label(row["median_s"]) + same)
        bars = ax.bar(xs, values, width, color=COLOURS.get(library, OTHER_COLOUR),
                      label="ours (bpe)" if library == "bpe" else names[library])
        bar_labels(ax, bars, labels)
    ax.set_yscale("log")
    ax.set_xticks(range(len(tables)), [
        f"{t['mb']:.0f} MB: " + "\n".join(textwrap.wrap(t["what"], 30)) +
        f"\n{t['chunks'] / 1e6:.1f} M chunks, {t['distinct_chunks'] / 1e6:.2f} M distinct"
        f"\nours' peak memory {t['ours_peak_rss_mb']:,.0f} MB" for t in tables], fontsize=7)
    ax.set_ylabel(f"seconds, median of {data['repeats']} (log scale)")
    ax.set_title(f"learning 7,934 merges, all cores ({tables[0]['cores']}); = the same merges as ours, ≠ other "
                 "merges (tokenizers: GPT-2's split)", fontsize=8)
    ax.legend(frameon=False, loc="upper left", fontsize=8)
    ax.set_ylim(min(r["median_s"] for t in tables for r in t["rows"]) / 2,
                max(r["median_s"] for t in tables for r in t["rows"]) * 8)
    ax = axes[1]
    counting = data["counting"]
    rows = counting["rows"]
    bars = ax.bar(range(len(rows)), [r["mb_per_s"] for r in rows], color=COLOURS["bpe"])
    bar_labels(ax, bars, [f"{r['mb_per_s']:.0f} MB/s" for r in rows])
    ax.set_xticks(range(len(rows)), [f"{r['threads']} thread{'s' if r['threads'] > 1 else ''}" for r in rows])
    ax.set_ylabel("MB per second, median")
    ax.set_ylim(0, max(r["mb_per_s"] for r in rows) * 1.25)
    ax.set_title(f"counting chunks alone, {counting['mb']:.0f} MB: {counting['ratio']:.2f}x\n(the machine's ceiling "
                 f"now: {counting['ceiling']['ratio']:.2f}x)", fontsize=8)
    fig.suptitle(f"Training (bpe_bench.py train, {machine_label(data)})", fontsize=10)
    fig.tight_layout()
    save(fig, "speed-train.png", out, [results / "bench-train.json"], dpi=COLUMN_DPI)


def take_runs(runs, results: Path):
    """Copy each run folder's log.jsonl to docs/results/logs/NAME.jsonl."""
    folder = results / "logs"
    folder.mkdir(parents=True, exist_ok=True)
    for run in runs:
        log = Path(run) / "log.jsonl"
        if not log.exists():
            sys.exit(f"no {log}: train the model first, e.g. `python pretrain.py --rope --bpe`")
        shutil.copyfile(log, folder / f"{Path(run).resolve().name}.jsonl")
        print(f"{log} -> {(folder / (Path(run).resolve().name + '.jsonl')).relative_to(ROOT)}")


def run_description(name: str) -> str:
    tokens = "BPE" if name.endswith("-bpe") else "words"
    positions = "rotary" if "-rope" in name else "learned positions"
    return f"{name} ({tokens}, {positions})"


def figure_loss_curves(results: Path, out: Path):
    logs = sorted((results / "logs").glob("*.jsonl")) if (results / "logs").exists() else []
    if not logs:
        raise MissingInput("no docs/results/logs/*.jsonl: make them with "
                           "`python figures.py --runs runs/pretrain-rope runs/pretrain-rope-bpe` after pretraining")
    p = plt()
    fig, axes = p.subplots(1, 2, figsize=(7.5, 4.2), sharey=True)  # 750 px at 100 dpi: the column's width
    for path in logs:
        run = read_log(path)
        name = path.stem
        colour = BPE_COLOUR if name.endswith("-bpe") else WORD_COLOUR
        for ax, x, unit in ((axes[0], "step", 1), (axes[1], "elapsed_s", 60)):
            ax.plot([r[x] / unit for r in run["eval"]], [r["valid_loss"] for r in run["eval"]], "o-", color=colour,
                    label=f"{run_description(name)}, held out")
            if run["train"]:
                ax.plot([r[x] / unit for r in run["train"]], [r["loss"] for r in run["train"]], "-", color=colour,
                        alpha=0.35, label=f"{name}, training")
    axes[0].set_xlabel("training step")
    axes[1].set_xlabel("minutes of pretraining")
    axes[0].set_ylabel("loss per token (nats)")
    axes[0].legend(frameon=False, fontsize=8)
    fig.suptitle("Loss during pretraining (runs/NAME/log.jsonl). Per token: not comparable\n"
                 "between tokenizers; see bits per character", fontsize=10)
    fig.tight_layout()
    save(fig, "loss-curves.png", out, logs, dpi=100)


def figure_bits(results: Path, out: Path):
    text = read_text(results / "bits.txt", "python bits.py runs/pretrain-rope runs/pretrain-rope-bpe > docs/results/bits.txt")
    rows = parse_bits(text)
    if not rows:
        raise MissingInput("bits.txt holds no table rows of bits.py")
    p = plt()
    # Drawn at the column's width (7.5 in at 100 dpi: 750 px), so that its labels are
    # shown at the size they are drawn, not shrunk.
    fig, axes = p.subplots(1, 2, figsize=(7.2, 0.7 + 0.6 * len(rows) + 1.6), gridspec_kw={"width_ratios": [1.3, 1]})
    labels = [run_description(r["model"]) for r in rows]
    colours = [BPE_COLOUR if r["model"].endswith("-bpe") else WORD_COLOUR for r in rows]
    ax = axes[0]
    bars = ax.barh(range(len(rows)), [r["bits_per_char"] for r in rows], color=colours)
    ax.set_yticks(range(len(rows)), labels)
    ax.invert_yaxis()
    for bar, r in zip(bars, rows):
        ax.annotate(f"{r['bits_per_char']:.3f}", (bar.get_width(), bar.get_y() + bar.get_height() / 2), xytext=(3, 0),
                    textcoords="offset points", va="center", fontsize=9)
    ax.set_title("bits per character\n(lower is better)", fontsize=10)
    ax.set_xlim(0, max(r["bits_per_char"] for r in rows) * 1.2)
    ax = axes[1]
    bars = ax.barh(range(len(rows)), [r["round_trip"] * 100 for r in rows], color=colours)
    ax.set_yticks(range(len(rows)), [""] * len(rows))
    ax.invert_yaxis()
    for bar, r in zip(bars, rows):
        ax.annotate(f"{r['round_trip']:.1%}", (bar.get_width(), bar.get_y() + bar.get_height() / 2), xytext=(3, 0),
                    textcoords="offset points", va="center", fontsize=9)
    ax.set_title("stories unchanged after\nencode, then decode (%)", fontsize=10)
    ax.set_xlim(0, 100 * 1.25)  # room for the label of a full bar; the axis itself stops at 100
    ax.set_xticks(range(0, 101, 25))
    ax.spines["bottom"].set_bounds(0, 100)
    fig.suptitle("Word-level and BPE models: bits per character and round trips\nof held-out stories "
                 "(bits.py, docs/results/bits.txt)", fontsize=11)
    fig.tight_layout()
    save(fig, "bits-per-char.png", out, [results / "bits.txt"], dpi=100)


# ---------------------------------------------------------------------------------------
# Training, merge by merge: drawn from a run of the library itself, not from saved output

# Algorithm 1 of Sennrich et al. (2016) learns from a dictionary of four words with
# counts; "·" (the byte 0xB7 here) ends a word, as in the paper.
PAPER_WORDS = {"low": 5, "lower": 2, "newest": 6, "widest": 3}
# A short story of this project's own, with words that repeat as children's stories do.
SHORT_STORY = ("Once upon a time, a little cat sat in the sun. The little cat had a hat. "
               "The cat and the hat sat in the sun.")
FRAME_WIDTH_PX, FRAME_DPI = 750, 100  # the documentation's column, so nothing is shrunk
NEW_COLOUR, TOKEN_COLOURS, CHOSEN_COLOUR = "#ff7f0e", ("#dbe7f3", "#eeeeee"), "#1f77b4"


def training_steps(text: bytes, num_merges: int) -> tuple[list[tuple[int, int]], list, list[dict]]:
    """Each merge of bpe.train(text, num_merges) with what led to it: the pair counts
    before it (over the distinct chunks, each weighted by how often it occurs) and the
    text's tokens after it. The counts are recounted here in Python and must pick the
    merge the C++ picked, or this raises."""
    import bpe
    import bpe_reference as ref

    merges = bpe.train(text, num_merges)
    chunks = bpe.pretokenize(text)
    words = {c: list(c) for c in dict.fromkeys(chunks)}
    frequency = {c: chunks.count(c) for c in words}
    steps = []
    for k, pair in enumerate(merges):
        counts = {}
        for c, ids in words.items():
            for p in zip(ids, ids[1:]):
                counts[p] = counts.get(p, 0) + frequency[c]
        ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
        if ranked[0][0] != tuple(pair):
            raise RuntimeError(f"merge {k}: the counts pick {ranked[0][0]}, bpe.train picked {pair}")
        words = {c: ref.merge(ids, tuple(pair), 256 + k) for c, ids in words.items()}
        steps.append({"merge": k, "pair": tuple(pair), "counts": ranked, "words": dict(words)})
    return merges, chunks, steps


def token_label(data: bytes) -> str:
    return data.decode("latin-1" if b"\xb7" in data else "utf-8", errors="replace").replace(" ", "\u2423")


def draw_tokens(ax, rows, vocab, new_id, width_chars: int, font_size: float):
    """Rows of tokens as boxes in a monospaced font, wrapped at width_chars: rows is a
    list of (label on the left, list of ids) or of lists of ids."""
    from matplotlib.patches import FancyBboxPatch

    ax.set_axis_off()
    char_w, line_h = 1.0, 1.9
    x0, y, lines = 0.0, 0.0, []
    for label, ids in rows:
        x = x0
        line = [("label", label, x)] if label else []
        x += len(label) + (1 if label else 0)
        for i in ids:
            text = token_label(vocab[i])
            if x + len(text) > width_chars and x > x0 + len(label) + 1:
                lines.append(line)
                line, x = [], x0 + (len(label) + 1 if label else 0)
            line.append(("token", (i, text), x))
            x += len(text) + 0.35
        lines.append(line)
    for n, line in enumerate(lines):
        y = -n * line_h
        for kind, item, x in line:
            if kind == "label":
                ax.text(x, y, item, fontsize=font_size, family="DejaVu Sans Mono", va="center", color="#555555")
                continue
            i, text = item
            face = NEW_COLOUR if i == new_id else TOKEN_COLOURS[i >= 256]
            ax.add_patch(FancyBboxPatch(
                (x - 0.05, y - 0.62), len(text) * char_w + 0.1, 1.24, boxstyle="round,pad=0,rounding_size=0.2",
                facecolor=face, edgecolor="#888888", linewidth=0.6))
            ax.text(x + len(text) * char_w / 2, y, text, fontsize=font_size, family="DejaVu Sans Mono", ha="center",
                    va="center", color="white" if i == new_id else "black")
    ax.set_xlim(-0.5, width_chars + 0.5)
    ax.set_ylim(-(max(len(lines), 1) - 1) * line_h - 1.0, 1.0)
    return len(lines)


def training_frames(title: str, text: bytes, num_merges: int, rows_of, width_chars: int, top: int = 5):
    """The frames of one animation, as PIL images: the bytes, then one frame per merge."""
    import bpe_reference as ref
    from PIL import Image

    p = plt()
    merges, chunks, steps = training_steps(text, num_merges)
    vocab = ref.token_bytes(merges)
    start = {"merge": None, "pair": None, "counts": [], "words": {c: list(c) for c in dict.fromkeys(chunks)}}
    n_lines = None
    frames = []
    for step in [start, *steps]:
        rows = rows_of(chunks, step["words"])
        if n_lines is None:
            n_lines = sum(1 for _ in rows) if rows[0][0] else 4
        fig = p.figure(figsize=(FRAME_WIDTH_PX / FRAME_DPI, 4.6), dpi=FRAME_DPI)
        grid = fig.add_gridspec(2, 1, height_ratios=[1, 1.25], hspace=0.35, left=0.22, right=0.97, top=0.76,
                                bottom=0.02)
        k = step["merge"]
        if k is None:
            fig.suptitle(f"{title}\nbefore any merge: every byte is a token", fontsize=12, x=0.02, ha="left")
        else:
            a, b = step["pair"]
            fig.suptitle(f"{title}\nmerge {k} ({k + 1} of {len(steps)}): {token_label(vocab[a])} + "
                         f"{token_label(vocab[b])} \u2192 {token_label(vocab[256 + k])}   id {256 + k}, "
                         f"seen {step['counts'][0][1]} times", fontsize=12, x=0.02, ha="left")
        ax = fig.add_subplot(grid[0])
        shown = step["counts"][:top]
        if shown:
            labels = [f"{token_label(vocab[a])} + {token_label(vocab[b])}" for (a, b), _ in shown]
            colours = [CHOSEN_COLOUR] + [OTHER_COLOUR] * (len(shown) - 1)
            bars = ax.barh(range(len(shown)), [n for _, n in shown], color=colours, height=0.7)
            ax.set_yticks(range(len(shown)), labels, family="DejaVu Sans Mono", fontsize=11)
            ax.invert_yaxis()
            for bar, (_, n) in zip(bars, shown):
                ax.annotate(str(n), (bar.get_width(), bar.get_y() + bar.get_height() / 2), xytext=(3, 0),
                            textcoords="offset points", va="center", fontsize=10)
            ties = sum(n == shown[0][1] for _, n in shown)
            note = f"{ties} pairs tie: the smaller pair of ids wins" if ties > 1 else "the most frequent is merged"
            ax.set_title(f"the top {len(shown)} pair counts before it (blue: merged); {note}", fontsize=10,
                         loc="left", x=-0.27)
            ax.set_xlim(0, shown[0][1] * 1.15)
            ax.tick_params(axis="x", labelsize=9)
            ax.xaxis.set_major_locator(p.MaxNLocator(integer=True))
        else:
            ax.set_axis_off()
            ax.text(0, 0.5, "no merge yet: the pairs are counted next", fontsize=11, transform=ax.transAxes)
        ax = fig.add_subplot(grid[1])
        pos = ax.get_position()
        ax.set_position([0.02, pos.y0, 0.96, pos.height])
        draw_tokens(ax, rows, vocab, None if k is None else 256 + k, width_chars, 11)
        fig.canvas.draw()
        frames.append(Image.frombuffer("RGBA", fig.canvas.get_width_height(), fig.canvas.buffer_rgba()).convert("RGB"))
        p.close(fig)
    return merges, frames


def save_animation(frames, name: str, out: Path, first_ms: int = 2500, each_ms: int = 1800, last_ms: int = 5000):
    out.mkdir(parents=True, exist_ok=True)
    path = out / name
    durations = [first_ms] + [each_ms] * (len(frames) - 2) + [last_ms]
    frames[0].save(path, save_all=True, append_images=frames[1:], duration=durations, loop=0, optimize=True)
    print(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}: {len(frames)} frames, "
          f"{frames[0].width} x {frames[0].height} px, {path.stat().st_size / 1e3:.0f} KB")


def figure_training_steps(results: Path, out: Path):
    """training-paper.gif and training-story.gif: bpe.train run here, merge by merge."""
    words = b"\n".join(w.encode() + b"\xb7" for w, n in PAPER_WORDS.items() for _ in range(n))

    def paper_rows(chunks, now):
        return [(f"\u00d7{PAPER_WORDS[c[:-1].decode('latin-1')]}", now[c]) for c in now if c != b"\n"]

    _, frames = training_frames("Algorithm 1's words (low \u00d75, lower \u00d72, newest \u00d76, widest \u00d73)",
                                words, 10, paper_rows, 74)
    save_animation(frames, "training-paper.gif", out)
    story = SHORT_STORY.encode()

    def story_rows(chunks, now):
        return [("", [i for c in chunks for i in now[c]])]

    _, frames = training_frames("A short story", story, 12, story_rows, 74)
    save_animation(frames, "training-story.gif", out)


FIGURES = {
    "speed-reference": figure_speed_reference,
    "speed-encode-lists": figure_encode_lists,
    "speed-encode-arrays": figure_encode_arrays,
    "speed-threads": figure_threads,
    "speed-train": figure_train,
    "loss-curves": figure_loss_curves,
    "bits-per-char": figure_bits,
    "training-steps": figure_training_steps,
}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", metavar="FIGURE",
                        help=f"which figures to make: {', '.join(FIGURES)} (default: all)")
    parser.add_argument("--runs", nargs="+", metavar="RUN",
                        help="run folders whose log.jsonl to copy to RESULTS/logs/ first (e.g. runs/pretrain-rope "
                             "runs/pretrain-rope-bpe); without it, the copies already there are used")
    parser.add_argument("--results", type=Path, default=RESULTS,
                        help="the folder of saved outputs to draw from (default: docs/results)")
    parser.add_argument("--out", type=Path, default=IMAGES, help="where the PNG files go (default: docs/images)")
    parser.add_argument("--strict", action="store_true", help="exit with an error if any figure's input is missing")
    args = parser.parse_args(argv)
    unknown = [n for n in args.names if n not in FIGURES]
    if unknown:
        parser.error(f"no figure named {', '.join(unknown)}; the figures are {', '.join(FIGURES)}")
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        parser.exit(1, f"{parser.prog}: error: needs matplotlib: pip install -r requirements-docs.txt\n")
    if args.runs:
        take_runs(args.runs, args.results)
    missing = 0
    for name in args.names or FIGURES:
        try:
            FIGURES[name](args.results, args.out)
        except MissingInput as e:
            missing += 1
            print(f"{name}.png: skipped: {e}", file=sys.stderr)
    if missing and args.strict:
        parser.exit(1, f"{parser.prog}: error: {missing} figure(s) skipped\n")


if __name__ == "__main__":
    main()
