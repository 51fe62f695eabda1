"""Two builds of the library timed side by side, in interleaved rounds, on the bench's rows.

    git worktree add /tmp/old OLD_COMMIT && (cd /tmp/old && python setup.py build_ext --inplace)
    python bpe_bench.py compare-builds /tmp/old . [--rounds 7] [--out docs/results/compare-builds.txt]

A refactoring that must not slow anything down is checked with this: each build is
imported by a process of its own (the two cannot share one, as both are `bpe`), pinned to
one CPU, and the driver asks them in turn, A B B A A B ..., for one timed call of the same
row, so that load from elsewhere on the machine falls on both alike. Each row prints both
medians and the median of the per-round ratios new/old (above 1: the new build is slower).
Every row's output is compared between the builds before anything is timed.

The rows are the bench's (bpe_bench.py), on the project's shared data: encode_ordinary
(lists) and encode_array on GPT-2's vocabulary over the held-out stories and over Python
source, warm; the held-out stories as a flat batch of documents (split at blank lines),
warm; a fresh tokenizer's first call (cold: lists on the stories, arrays on both); the
chunk count alone; and training 8,192 tokens on a prefix of the training stories.
"""
import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.texts import held_out_and_warm_up_source, stories  # noqa: E402

DATA = Path(os.environ.get("BPE_SHARED_DATA", ROOT.parent / "shared" / "data"))

# What each build's process runs: it reads one row name a line and answers with the
# seconds of one call of that row and a digest of what the call gave.
WORKER = r"""
import hashlib, json, os, sys, time
build, data, texts_path = sys.argv[1], sys.argv[2], sys.argv[3]
sys.path.insert(0, build)
import numpy
import bpe
os.sched_setaffinity(0, {int(sys.argv[4])})
# The process's CPU time on a machine others load (it leaves out the time spent waiting
# for the CPU), else the wall clock.
clock = time.process_time if sys.argv[5] == "cpu" else time.perf_counter
texts = json.load(open(texts_path, encoding="utf-8"))
gpt2 = bpe.BPETokenizer.from_gpt2(data + "/cs336/gpt2_vocab.json", data + "/cs336/gpt2_merges.txt")
for name in ("stories_warm_up", "source_warm_up"):
    gpt2.encode_ordinary(texts[name])

from bench.measure import fresh  # the bench's new tokenizer with an empty cache
from bench.peers import documents
stories_documents = documents(texts["stories"])  # the encode bench's batch: the stories split at blank lines

def digest(result):
    if isinstance(result, numpy.ndarray):
        return hashlib.sha256(result.astype(numpy.uint32).tobytes()).hexdigest()[:16]
    if isinstance(result, list):
        return hashlib.sha256(numpy.asarray(result, dtype=numpy.uint32).tobytes()).hexdigest()[:16]
    return hashlib.sha256(repr(result).encode()).hexdigest()[:16]

ROWS = {
    "lists, stories, warm": (lambda: gpt2, lambda t: t.encode_ordinary(texts["stories"])),
    "lists, source, warm": (lambda: gpt2, lambda t: t.encode_ordinary(texts["source"])),
    "arrays, stories, warm": (lambda: gpt2, lambda t: t.encode_array(texts["stories"], threads=1)),
    "arrays, source, warm": (lambda: gpt2, lambda t: t.encode_array(texts["source"], threads=1)),
    "flat batch, stories, warm": (lambda: gpt2, lambda t: t.encode_ordinary_batch_flat(stories_documents, threads=1)[0]),
    "lists, stories, cold": (lambda: fresh(gpt2), lambda t: t.encode_ordinary(texts["stories"])),
    "arrays, stories, cold": (lambda: fresh(gpt2), lambda t: t.encode_array(texts["stories"], threads=1)),
    "arrays, source, cold": (lambda: fresh(gpt2), lambda t: t.encode_array(texts["source"], threads=1)),
    "chunks only, stories": (lambda: None, lambda t: bpe._core.count_chunks(texts["stories"].encode(), "gpt2")),
    "train 8,192, stories": (lambda: None, lambda t: bpe.BPETokenizer.train(texts["train"], 8192, progress=False).merges),
}
print("ready", flush=True)
for line in sys.stdin:
    row, calls = line.rsplit(" ", 1)
    make, run = ROWS[row]
    seconds = 0.0
    for _ in range(int(calls)):
        made = make()
        start = clock()
        result = run(made)
        seconds += clock() - start
    print(json.dumps([seconds / int(calls), digest(result)]), flush=True)
"""

ROWS = ["lists, stories, warm", "lists, source, warm", "arrays, stories, warm", "arrays, source, warm",
        "flat batch, stories, warm", "lists, stories, cold", "arrays, stories, cold", "arrays, source, cold",
        "chunks only, stories", "train 8,192, stories"]
TRAIN_CHARS = 10_000_000
# A short call is repeated until a sample takes about this long, so that one scheduling
# hiccup does not decide a round.
SAMPLE_SECONDS = 0.3


class Build:
    def __init__(self, path: Path, texts_path: Path, cpu: int, clock: str):
        self.path = path
        self.process = subprocess.Popen([sys.executable, "-c", WORKER, str(path), str(DATA), str(texts_path), str(cpu),
                                         clock],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT)
        if self.process.stdout.readline().strip() != "ready":
            sys.exit(f"the build in {path} did not start (is it built? python setup.py build_ext --inplace)")

    def call(self, row: str, calls: int = 1) -> tuple[float, str]:
        """The mean seconds of `calls` calls of row, and a digest of what the last gave."""
        self.process.stdin.write(f"{row} {calls}\n")
        self.process.stdin.flush()
        seconds, digest = json.loads(self.process.stdout.readline())
        return seconds, digest


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("old", type=Path, help="the folder of the build before the change (built in place)")
    parser.add_argument("new", type=Path, help="the folder of the build after it")
    parser.add_argument("--rounds", type=int, default=7, help="timed rounds per row (default 7)")
    parser.add_argument("--cpu", type=int, default=0, help="the CPU both processes are pinned to (default 0)")
    parser.add_argument("--out", type=Path, help="also write the table to this file")
    parser.add_argument("--rows", type=lambda s: s.split(";"), default=ROWS, metavar="ROW;ROW",
                        help=f"the rows to time, separated by semicolons (default: all of {'; '.join(ROWS)})")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall", help="what a call's time is: wall-clock "
                        "seconds (default), or the process's CPU seconds (for a machine others load)")
    args = parser.parse_args(argv)
    if set(args.rows) - set(ROWS):
        parser.error(f"no such row: {', '.join(sorted(set(args.rows) - set(ROWS)))}")

    story_texts = stories(DATA)
    source, source_warm_up, _ = held_out_and_warm_up_source(5_000_000, 5_000_000)
    texts = {"stories": story_texts["valid"], "stories_warm_up": story_texts["train"][TRAIN_CHARS:2 * TRAIN_CHARS],
             "source": source, "source_warm_up": source_warm_up, "train": story_texts["train"][:TRAIN_CHARS]}
    texts_path = Path("/tmp") / f"compare-builds-{os.getpid()}.json"
    texts_path.write_text(json.dumps(texts), encoding="utf-8")
    try:
        builds = [Build(args.old.resolve(), texts_path, args.cpu, args.clock),
                  Build(args.new.resolve(), texts_path, args.cpu, args.clock)]
    finally:
        texts_path.unlink()
    lines = [f"{args.old} (old) against {args.new} (new): one CPU each ({args.cpu}), {args.clock} clock, GPT-2's vocabulary, "
             f"samples of about {SAMPLE_SECONDS} s, medians of {args.rounds} interleaved rounds; ratio: new/old per round (above 1: new is slower)",
             f"{'row':<24} {'old s':>9} {'new s':>9} {'new/old':>8}"]
    print("\n".join(lines), flush=True)
    worst = 0.0
    for row in args.rows:
        first = [build.call(row) for build in builds]  # also each build's warm-up of the row
        if first[0][1] != first[1][1]:
            sys.exit(f"{row}: the two builds give different results")
        calls = max(1, round(SAMPLE_SECONDS / max(first[0][0], 1e-6)))
        times = {0: [], 1: []}
        for r in range(args.rounds):
            for k in ((0, 1) if r % 2 == 0 else (1, 0)):
                times[k].append(builds[k].call(row, calls)[0])
        ratio = statistics.median(new / old for old, new in zip(times[0], times[1]))
        worst = max(worst, ratio)
        line = f"{row:<24} {statistics.median(times[0]):>9.4f} {statistics.median(times[1]):>9.4f} {ratio:>7.3f}x"
        lines.append(line)
        print(line, flush=True)
    lines.append(f"largest ratio: {worst:.3f}x")
    print(lines[-1])
    if args.out:
        args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
