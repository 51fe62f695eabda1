"""The padded batch and the counts of many texts, one core, warm: our encode_batch_padded
against gigatoken's (ids and lengths checked equal first), and our count_batch against
our encode_ordinary_batch_flat, on the held-out stories split at blank lines.

    python bpe_bench.py padded-speed [--rounds 7] [--batch 1000] [gpt2 cl100k] [--no-write]

The process is pinned to one CPU; ours runs with threads=1, gigatoken with
parallel=False. Each round times every call once, in an order shuffled each round; the table gives the median
of the rounds' wall-clock and CPU (the thread's) milliseconds for the whole split, handed over --batch documents a
call (0: all in one call). Two ways to pad: to the longest row, and a training loop's
(max_length 128, truncated, padded to it on the left, a BOS and an EOS). What it prints
goes to docs/results/padded-speed.txt, with the command and the load average.
"""
import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench import SHARED_DATA
from bench.measure import load_line, load_now, pin_to_one_cpu, save_lines

ROOT = Path(__file__).resolve().parent.parent
OPTIONS = {
    "to the longest": {},
    "128, cut, left, BOS+EOS": dict(max_length=128, truncate=True, pad_to_max_length=True, pad_left=True,
                                    prefix=[1], suffix=[2]),
}


def load(name: str, data: Path):
    """Our tokenizer and gigatoken's, on the same ranks."""
    import gigatoken

    from bpe import BPETokenizer
    from bpe.formats import cl100k_path

    if name == "cl100k":
        path = cl100k_path()
        return BPETokenizer.from_tiktoken(path), gigatoken.Tokenizer.from_tiktoken(str(path), pretokenizer="gpt4")
    ours = BPETokenizer.from_gpt2(data / "cs336" / "gpt2_vocab.json", data / "cs336" / "gpt2_merges.txt")
    path = Path(tempfile.mkdtemp()) / "gpt2.tiktoken"
    ours.save_tiktoken(path)
    return ours, gigatoken.Tokenizer.from_tiktoken(str(path), pretokenizer="gpt2")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", default=["gpt2", "cl100k"])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--batch", type=int, default=1000, help="documents a call (0: all in one call)")
    parser.add_argument("--data", type=Path, default=SHARED_DATA)
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    pin_to_one_cpu()
    from bench.peers import documents

    stories = documents((args.data / "tinystories" / "valid-sample.txt").read_text(encoding="utf-8"))
    warm = documents((args.data / "tinystories" / "train-sample-lowercase.txt").read_text(encoding="utf-8")[:1_000_000])
    size = args.batch or len(stories)
    batches = [stories[i:i + size] for i in range(0, len(stories), size)]
    load_before = load_now()
    lines = [f"{len(stories):,} documents, {sum(len(s.encode()) for s in stories) / 1e6:.2f} MB, {len(batches)} calls; "
             f"median of {args.rounds} rounds, one core"]
    print(lines[-1])
    for name in args.names:
        ours, giga = load(name, args.data)
        calls = {}
        for label, options in OPTIONS.items():
            calls[f"padded {label}: ours"] = lambda b, o=options: ours.encode_batch_padded(
                b, 0, threads=1, disallowed_special=(), **o)
            calls[f"padded {label}: gigatoken"] = lambda b, o=options: giga.encode_batch_padded(
                b, 0, parallel=False, **o)
        calls["count_batch"] = lambda b: ours.count_batch(b, threads=1, disallowed_special=())
        calls["encode_ordinary_batch_flat"] = lambda b: ours.encode_ordinary_batch_flat(b, threads=1)
        for label in OPTIONS:  # checked equal, and warmed on other stories
            for batch in batches:
                a, b = calls[f"padded {label}: ours"](batch), calls[f"padded {label}: gigatoken"](batch)
                if not (a[0].shape == b[0].shape and (a[0] == b[0]).all() and (a[1] == b[1]).all()):
                    raise SystemExit(f"{name}, {label}: the matrices differ")
        counts = [ours.count_batch(b, threads=1) for b in batches]
        flat = [ours.encode_ordinary_batch_flat(b, threads=1)[1] for b in batches]
        if any((c != (f[1:] - f[:-1])).any() for c, f in zip(counts, flat)):
            raise SystemExit(f"{name}: count_batch differs from the flat batch's lengths")
        for call in calls.values():
            call(warm)
        shuffle = random.Random(0)
        wall = {label: [] for label in calls}
        cpu = {label: [] for label in calls}
        order = list(calls.items())
        for _ in range(args.rounds):
            # A new order each round: a call that always followed the same one would find
            # the caches as that one left them (the other library's memory, or its own).
            shuffle.shuffle(order)
            for label, call in order:
                started, started_cpu = time.perf_counter(), time.thread_time()
                for batch in batches:
                    call(batch)
                cpu[label].append(time.thread_time() - started_cpu)
                wall[label].append(time.perf_counter() - started)
        table = [f"\n{name}{'':<42} {'wall ms':>8} {'CPU ms':>8}"]
        table += [f"  {label:<48} {statistics.median(wall[label]) * 1e3:8.2f} {statistics.median(cpu[label]) * 1e3:8.2f}"
                  for label in calls]
        print("\n".join(table))
        lines += table
    lines.append(load_line(load_before))
    print(lines[-1])
    if not args.no_write:
        save_lines("padded-speed", argv, lines)


if __name__ == "__main__":
    main()
