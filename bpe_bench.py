"""How much faster the C++ module is than the plain-Python reference.

Learns 500 merges from the first 0.1 MB and the first 1 MB of the training stories,
with the reference and with the C++, then encodes the same text with the reference's
merges. Each pair of results is checked to be identical before any time is printed:
a fast wrong answer is not a result. Times are medians of --repeats runs.

    python bpe_bench.py                      # data/train.txt, or made-up stories
    python bpe_bench.py --text stories.txt   # any text file
"""
import argparse
import statistics
import sys
import time
from pathlib import Path

import bpe_reference

TRAIN_STORIES = Path(__file__).resolve().parent / "data" / "train.txt"
SIZES = [100_000, 1_000_000]
NUM_MERGES = 500


def import_bpe():
    try:
        import bpe
    except ImportError as error:
        sys.exit(f"The C++ module is not built ({error}). Build it with: python setup.py build_ext --inplace")
    return bpe


def load_text(path):
    """The first megabyte to measure on: --text, else data/train.txt, else made-up stories."""
    if path is not None:
        return Path(path).read_bytes()[: max(SIZES)], path
    if TRAIN_STORIES.exists():
        return TRAIN_STORIES.read_bytes()[: max(SIZES)], str(TRAIN_STORIES)
    sys.path.insert(0, str(Path(__file__).resolve().parent / "tests"))
    from sample_text import made_up_stories

    return made_up_stories(max(SIZES)).encode("utf-8"), "made-up stories (run data.py or pass --text for real ones)"


def timed(fn, repeats):
    """The result of fn() and the median of its times over `repeats` runs, in seconds."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return result, statistics.median(times)


def check_same(what, reference, ours):
    if reference != ours:
        sys.exit(f"MISMATCH in {what}: the C++ and the reference disagree, so no time is printed.")


def reference_vs_cpp(text, repeats):
    """Rows of (task, megabytes, reference seconds, C++ seconds)."""
    bpe = import_bpe()
    rows = []
    for size in SIZES:
        part = text[:size]
        ref_merges, ref_s = timed(lambda: bpe_reference.train(part, NUM_MERGES), repeats)
        cpp_merges, cpp_s = timed(lambda: bpe.train(part, NUM_MERGES), repeats)
        check_same(f"merges on {size:,} bytes", ref_merges, cpp_merges)
        rows.append((f"train {NUM_MERGES} merges", size / 1e6, ref_s, cpp_s))
    for size in SIZES:
        part = text[:size]
        merges = bpe_reference.train(part, NUM_MERGES)
        ref_ids, ref_s = timed(lambda: bpe_reference.encode(part, merges), repeats)
        # A fresh Encoder each run: its cache starts empty, as a new user's would.
        cpp_ids, cpp_s = timed(lambda: bpe.Encoder(merges).encode(part), repeats)
        check_same(f"ids on {size:,} bytes", ref_ids, cpp_ids)
        rows.append(("encode", size / 1e6, ref_s, cpp_s))
    return rows


def print_table(rows):
    print(f"{'task':<20} {'MB':>5} {'Python (s)':>11} {'C++ (s)':>9} {'faster':>8}")
    for task, mb, ref_s, cpp_s in rows:
        print(f"{task:<20} {mb:>5.1f} {ref_s:>11.3f} {cpp_s:>9.4f} {ref_s / cpp_s:>7.0f}x")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--text", metavar="FILE", help="text file to measure on (default: data/train.txt, else made-up stories)")
    parser.add_argument("--repeats", type=int, default=3, help="runs per measurement; the median is printed (default: 3)")
    args = parser.parse_args()
    if args.repeats < 1:
        parser.error("--repeats must be 1 or more")
    text, source = load_text(args.text)
    if len(text) < max(SIZES):
        print(f"note: {source} has only {len(text):,} bytes; the 1 MB rows use all of it")
    print(f"text: {source}; {args.repeats} runs each, medians\n")
    print_table(reference_vs_cpp(text, args.repeats))


if __name__ == "__main__":
    main()
