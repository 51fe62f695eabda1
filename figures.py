"""Make every figure of the documentation site from the files the measurements leave.

    python figures.py                      # all figures, from docs/results/
    python figures.py --runs runs/pretrain-rope runs/pretrain-rope-bpe   # take the logs of these runs first

Nothing is typed in by hand: each figure is drawn from the printed output of a
script, saved to a text file, or from a run folder's log.jsonl:

    docs/results/bench-reference.txt   python bpe_bench.py --text FILE > docs/results/bench-reference.txt
    docs/results/bench-peers.txt       python bpe_bench.py --peers --text FILE... > docs/results/bench-peers.txt
    docs/results/bits.txt              python bits.py runs/pretrain-rope runs/pretrain-rope-bpe > docs/results/bits.txt
    docs/results/logs/NAME.jsonl       runs/NAME/log.jsonl, copied there by --runs (runs/ is not committed)

and the figures go to docs/images/:

    speed-reference.png     the C++ against the Python reference (bench-reference.txt)
    speed-peers-train.png   training against rustbpe and tokenizers (bench-peers.txt)
    speed-peers-encode.png  encoding against tiktoken, tokenizers and rustbpe (bench-peers.txt)
    loss-curves.png         held-out loss over pretraining, per run (logs/*.jsonl)
    bits-per-char.png       bits per character, per model (bits.txt)

A figure whose input is missing is skipped, with the command that makes the input.
Needs matplotlib (pip install -r requirements-docs.txt).
"""
import argparse
import json
import re
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
RESULTS = ROOT / "docs" / "results"
IMAGES = ROOT / "docs" / "images"

# One colour per thing measured, the same in every figure.
COLOURS = {
    "Python reference": "#9e9e9e",
    "C++ (bpe)": "#1f77b4",
    "ours": "#1f77b4",
    "rustbpe": "#d62728",
    "tokenizers": "#ff7f0e",
    "tiktoken": "#2ca02c",
}
WORD_COLOUR, BPE_COLOUR = "#8c564b", "#1f77b4"
DPI = 110


class MissingInput(Exception):
    """An input file is not there, or holds nothing this script can read."""


# ---------------------------------------------------------------------------------------
# Reading what the scripts printed


def read_text(path: Path, command: str) -> str:
    if not path.exists():
        raise MissingInput(f"no {path.relative_to(ROOT)}: make it with `{command}`")
    return path.read_text(encoding="utf-8")


def parse_bench_reference(text: str) -> list[dict]:
    """The rows of `python bpe_bench.py`'s table: task, MB, Python s, C++ s, times faster."""
    rows = []
    row = re.compile(r"^(?P<task>train \d+ merges|encode)\s+(?P<mb>[\d.]+)\s+(?P<ref>[\d.]+)\s+(?P<cpp>[\d.]+)\s+(?P<x>\d+)x\s*$")
    for line in text.splitlines():
        m = row.match(line)
        if m:
            rows.append({"task": m["task"], "mb": float(m["mb"]), "ref": float(m["ref"]), "cpp": float(m["cpp"]),
                         "faster": float(m["x"])})
    return rows


def parse_bench_peers(text: str) -> dict:
    """The tables of `python bpe_bench.py --peers`: training times per text and library,
    peak memory, encoding on one thread, encoding the big text on all cores."""
    lines = text.splitlines()
    out = {"train": [], "memory": [], "encode": [], "encode_big": [], "encode_title": "", "encode_big_title": ""}
    section = None
    columns = []
    number = r"[\d.]+"
    for line in lines:
        if line.startswith("Training "):
            section = "train"
            continue
        if line.startswith("Peak memory"):
            section = "memory"
            continue
        if line.startswith("Encoding "):
            section = "encode" if "one thread" in line else "encode_big"
            out[section + "_title"] = line.strip()
            continue
        if section == "train":
            if line.split()[:2] == ["text", "ours"]:
                columns = [c for c in line.split()[1:] if "/" not in c]  # ours, rustbpe, tokenizers (those run)
                continue
            m = re.match(rf"^\s*({number}) MB\s+(.*)$", line)
            if m and columns:
                values = m.group(2).split()
                times = {name: float(v) for name, v in zip(columns, values)}
                out["train"].append({"mb": float(m.group(1)), "times": times,
                                     "same_merges": "the same merges" in line})
        elif section == "memory":
            m = re.match(rf"^\s*({number}) MB: ({number}) MB", line)
            if m:
                out["memory"].append({"mb": float(m.group(1)), "peak_mb": float(m.group(2))})
        elif section in ("encode", "encode_big"):
            m = re.match(rf"^(?P<name>\S.*?)\s+(?P<s>{number})\s+(?P<mbs>{number})\s+(?P<ratio>{number})x\s*$", line)
            if m:
                out[section].append({"name": m["name"], "s": float(m["s"]), "mb_per_s": float(m["mbs"]),
                                     "ratio": float(m["ratio"])})
    return out


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


def save(fig, name: str, out: Path):
    out.mkdir(parents=True, exist_ok=True)
    path = out / name
    fig.savefig(path, dpi=DPI, bbox_inches="tight", metadata={"Software": None})
    plt().close(fig)
    print(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}: {path.stat().st_size / 1e3:.0f} KB")


def bar_labels(ax, bars, labels, **kw):
    for bar, label in zip(bars, labels):
        ax.annotate(label, (bar.get_x() + bar.get_width() / 2, bar.get_height()), xytext=(0, 2),
                    textcoords="offset points", ha="center", va="bottom", fontsize=8, **kw)


def seconds_label(s: float) -> str:
    return f"{s * 1000:.0f} ms" if s < 1 else f"{s:.2f} s"


def figure_speed_reference(results: Path, out: Path):
    text = read_text(results / "bench-reference.txt",
                     "python bpe_bench.py --text ../shared/data/tinystories/train-sample-lowercase.txt "
                     "> docs/results/bench-reference.txt")
    rows = parse_bench_reference(text)
    if not rows:
        raise MissingInput("bench-reference.txt holds no table rows of bpe_bench.py")
    runs = re.search(r"(\d+) runs each", text)
    median = f"median of {runs.group(1)}" if runs else "median"
    p = plt()
    fig, axes = p.subplots(1, 2, figsize=(9, 3.6))
    for ax, task in zip(axes, ("train", "encode")):
        mine = [r for r in rows if r["task"].startswith(task)]
        xs = range(len(mine))
        width = 0.38
        ref_bars = ax.bar([x - width / 2 for x in xs], [r["ref"] for r in mine], width,
                          color=COLOURS["Python reference"], label="Python reference")
        cpp_bars = ax.bar([x + width / 2 for x in xs], [r["cpp"] for r in mine], width,
                          color=COLOURS["C++ (bpe)"], label="C++ (bpe)")
        bar_labels(ax, ref_bars, [seconds_label(r["ref"]) for r in mine])
        bar_labels(ax, cpp_bars, [f"{seconds_label(r['cpp'])}\n{r['faster']:.0f}x faster" for r in mine])
        ax.set_yscale("log")
        ax.set_xticks(list(xs), [f"{r['mb']:g} MB" for r in mine])
        ax.set_title(mine[0]["task"] if task == "train" else "encode (the same text, those merges)")
        ax.set_ylabel(f"seconds (log scale), {median}")
        ax.set_ylim(min(r["cpp"] for r in mine) / 3, max(r["ref"] for r in mine) * 6)
    axes[0].legend(loc="upper left", frameon=False)
    fig.suptitle("The C++ module against the Python reference (bpe_bench.py, 2-core machine)", fontsize=11)
    fig.tight_layout()
    save(fig, "speed-reference.png", out)


def read_peers(results: Path) -> dict:
    text = read_text(results / "bench-peers.txt",
                     "python bpe_bench.py --peers --text ../shared/data/tinystories/train-sample-lowercase.txt "
                     "../shared/data/tinystories/valid-sample.txt > docs/results/bench-peers.txt")
    tables = parse_bench_peers(text)
    if not tables["train"] or not tables["encode"]:
        raise MissingInput("bench-peers.txt holds no training or encoding table of bpe_bench.py --peers")
    return tables


def figure_peers_training(results: Path, out: Path):
    tables = read_peers(results)
    p = plt()
    fig, ax = p.subplots(figsize=(7.5, 3.8))
    libraries = list(tables["train"][0]["times"])
    width = 0.8 / len(libraries)
    for k, lib in enumerate(libraries):
        xs = [i + (k - (len(libraries) - 1) / 2) * width for i in range(len(tables["train"]))]
        values = [row["times"].get(lib, float("nan")) for row in tables["train"]]
        bars = ax.bar(xs, values, width, color=COLOURS.get(lib, "#777777"), label="ours (bpe)" if lib == "ours" else lib)
        bar_labels(ax, bars, [seconds_label(v) for v in values])
    # The second text is the first repeated (bpe_bench.py --big-mb): same distinct chunks.
    ax.set_xticks(range(len(tables["train"])),
                  [f"{row['mb']:g} MB of stories" if k == 0 else f"{row['mb']:g} MB (the {tables['train'][0]['mb']:g} MB repeated)"
                   for k, row in enumerate(tables["train"])])
    ax.set_ylabel("seconds, median (lower is faster)")
    ax.set_title("Training 7,934 merges on all cores (bpe_bench.py --peers, 2-core machine)", fontsize=10)
    ax.legend(frameon=False, loc="upper left")
    ax.set_ylim(0, max(max(row["times"].values()) for row in tables["train"]) * 1.18)
    fig.tight_layout()
    save(fig, "speed-peers-train.png", out)


def figure_peers_encoding(results: Path, out: Path):
    tables = read_peers(results)
    panels = [("encode", "MB per second, median", tables["encode_title"])]
    if tables["encode_big"]:
        panels.append(("encode_big", "MB per second, median", tables["encode_big_title"]))
    p = plt()
    fig, axes = p.subplots(len(panels), 1, figsize=(7.5, 2.9 * len(panels)), squeeze=False)
    for ax, (key, xlabel, title) in zip(axes[:, 0], panels):
        rows = tables[key]
        bars = ax.barh(range(len(rows)), [r["mb_per_s"] for r in rows],
                       color=[colour_of(r["name"]) for r in rows])
        ax.set_yticks(range(len(rows)), [r["name"] for r in rows])
        ax.invert_yaxis()
        for bar, r in zip(bars, rows):
            ax.annotate(f"{r['mb_per_s']:.1f}", (bar.get_width(), bar.get_y() + bar.get_height() / 2),
                        xytext=(3, 0), textcoords="offset points", va="center", fontsize=8)
        ax.set_xlabel(xlabel + " (higher is faster)")
        ax.set_xlim(0, max(r["mb_per_s"] for r in rows) * 1.25)
        # "Encoding 5.0 MB with our merges on one thread, medians of 3" -> "5.0 MB with our merges on one thread"
        ax.set_title(re.sub(r"^Encoding |, medians of \d+$", "", title), fontsize=10)
    fig.suptitle("Encoding (bpe_bench.py --peers, 2-core machine); every library's ids checked equal to ours",
                 fontsize=10)
    fig.tight_layout()
    save(fig, "speed-peers-encode.png", out)


def colour_of(name: str) -> str:
    """A table row's library: 'tiktoken encode_ordinary' -> tiktoken's colour."""
    first = name.split()[0].rstrip(",")
    return COLOURS.get(first, "#777777")


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
    fig, axes = p.subplots(1, 2, figsize=(10, 4), sharey=True)
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
    fig.suptitle("Loss during pretraining (runs/NAME/log.jsonl). Per token: not comparable between "
                 "tokenizers; see bits per character", fontsize=10)
    fig.tight_layout()
    save(fig, "loss-curves.png", out)


def figure_bits(results: Path, out: Path):
    text = read_text(results / "bits.txt", "python bits.py runs/pretrain-rope runs/pretrain-rope-bpe > docs/results/bits.txt")
    rows = parse_bits(text)
    if not rows:
        raise MissingInput("bits.txt holds no table rows of bits.py")
    p = plt()
    fig, axes = p.subplots(1, 2, figsize=(9, 0.7 + 0.6 * len(rows) + 1.2), gridspec_kw={"width_ratios": [1.4, 1]})
    labels = [run_description(r["model"]) for r in rows]
    colours = [BPE_COLOUR if r["model"].endswith("-bpe") else WORD_COLOUR for r in rows]
    ax = axes[0]
    bars = ax.barh(range(len(rows)), [r["bits_per_char"] for r in rows], color=colours)
    ax.set_yticks(range(len(rows)), labels)
    ax.invert_yaxis()
    for bar, r in zip(bars, rows):
        ax.annotate(f"{r['bits_per_char']:.3f}", (bar.get_width(), bar.get_y() + bar.get_height() / 2), xytext=(3, 0),
                    textcoords="offset points", va="center", fontsize=9)
    ax.set_xlabel("bits per character of held-out stories (lower is better)")
    ax.set_xlim(0, max(r["bits_per_char"] for r in rows) * 1.2)
    ax = axes[1]
    bars = ax.barh(range(len(rows)), [r["round_trip"] * 100 for r in rows], color=colours)
    ax.set_yticks(range(len(rows)), [""] * len(rows))
    ax.invert_yaxis()
    for bar, r in zip(bars, rows):
        ax.annotate(f"{r['round_trip']:.1%}", (bar.get_width(), bar.get_y() + bar.get_height() / 2), xytext=(3, 0),
                    textcoords="offset points", va="center", fontsize=9)
    ax.set_xlabel("stories that survive encode, decode (%)")
    ax.set_xlim(0, 125)
    fig.suptitle("Models per character (bits.py, docs/results/bits.txt)", fontsize=11)
    fig.tight_layout()
    save(fig, "bits-per-char.png", out)


FIGURES = {
    "speed-reference": figure_speed_reference,
    "speed-peers-train": figure_peers_training,
    "speed-peers-encode": figure_peers_encoding,
    "loss-curves": figure_loss_curves,
    "bits-per-char": figure_bits,
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
