"""Where a second thread pays: encode_array and count of one text on 1 and 2 threads,
and with the default threads, from 32 KB to 4 MB, warm. The size from which two threads
are faster at every larger size measured is what threads_for's BYTES_PER_THREAD (one
thread per that many bytes, so two from twice it) is set from.

    python bpe_bench.py thread-sizes [--rounds 9] [--data DIR] [--no-write]

Each size has its own distinct texts (consecutive pieces of the bench's distinct text:
stories, then Python source, 8 MB of them or 40 texts, whichever is fewer), each encoded
once untimed first, so that the tokenizer's table holds their chunks: the calls a
pipeline makes on one kind of text. Each round times every way on each of the size's
texts, the ways taking turns text by text in an order shuffled each time; the table gives the medians of the rounds' microseconds
a call (wall clock) and the median of the rounds' ratios to threads=1. Not pinned: two
threads need two cores. What it prints goes to docs/results/thread-sizes.txt, with the
command and the load average.
"""
import argparse
import random
import statistics
import sys
import time
from pathlib import Path

from bench import SHARED_DATA
from bench.measure import load_line, load_now, save_lines, versions

ROOT = Path(__file__).resolve().parent.parent
SIZES_KB = (32, 64, 96, 128, 192, 256, 384, 512, 1024, 4096)
BUDGET = 8_000_000  # bytes of text a size's texts hold at most


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--data", type=Path, default=SHARED_DATA)
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    import numpy

    import bpe
    from bench.encode import our_vocabulary
    from bench.texts import distinct_text, stories

    story_texts = stories(args.data)
    text, what = distinct_text(story_texts, BUDGET * 2)
    tok = our_vocabulary(bpe, story_texts).tokenizer
    load_before = load_now()
    lines = [f"bpe {versions()['bpe_commit']}: {what}, our vocabulary; distinct texts of each size, warm; medians "
             f"of {args.rounds} rounds, microseconds a call (wall clock), {bpe._core.threads_for(10**15)} cores",
             f"{'size':>8} {'texts':>5}  {'call':<13} {'threads=1':>10} {'threads=2':>10} {'2 over 1':>8}  "
             f"{'default':>10} {'threads':>7}"]
    print("\n".join(lines))
    rows = []
    for kb in SIZES_KB:
        size = kb << 10
        texts = [text[k * size:(k + 1) * size] for k in range(min(40, BUDGET // size))]
        for call_name in ("encode_array", "count"):
            call = getattr(tok, call_name)
            for t in texts:  # the table warmed, and the ids (or the count) alike on every count of threads
                if not numpy.array_equal(call(t, threads=1), call(t, threads=2)):
                    raise SystemExit(f"{call_name}: other ids on 2 threads than on 1 at {kb} KB")
            ways = {1: lambda t: call(t, threads=1), 2: lambda t: call(t, threads=2), 0: lambda t: call(t)}
            times = {k: [] for k in ways}
            order = list(ways.items())
            shuffle = random.Random(kb)
            for _ in range(args.rounds):
                spent = dict.fromkeys(ways, 0.0)
                for t in texts:  # the ways take turns text by text: the machine's drift falls on all alike
                    shuffle.shuffle(order)
                    for k, way in order:
                        begin = time.perf_counter()
                        way(t)
                        spent[k] += time.perf_counter() - begin
                for k in ways:
                    times[k].append(spent[k] / len(texts) * 1e6)
            us = {k: statistics.median(v) for k, v in times.items()}
            ratio = statistics.median(a / b for a, b in zip(times[1], times[2]))
            rows.append((kb, call_name, ratio))
            lines.append(f"{kb:>5} KB {len(texts):>5}  {call_name:<13} {us[1]:>10.1f} {us[2]:>10.1f} {ratio:>7.2f}x  "
                         f"{us[0]:>10.1f} {bpe._core.threads_for(len(texts[0].encode())):>7}")
            print(lines[-1])
    for call_name in ("encode_array", "count"):
        ratios = [(kb, r) for kb, name, r in rows if name == call_name]
        # The smallest size from which 2 threads beat 1 at this size and every larger one.
        pays = None
        for kb, r in reversed(ratios):
            if r <= 1.0:
                break
            pays = kb
        lines.append(f"{call_name}: 2 threads faster than 1 from {pays} KB on" if pays else
                     f"{call_name}: 2 threads not faster than 1 at {SIZES_KB[-1]} KB")
        print(lines[-1])
    lines.append(f"the rule now: BYTES_PER_THREAD {bpe._core.BYTES_PER_THREAD // 1024} KB, so 2 threads from "
                 f"{2 * bpe._core.BYTES_PER_THREAD // 1024} KB; threads kept by the process: "
                 f"{getattr(bpe._core, 'threads_kept', lambda: 'none (a build that starts them for each call)')()}")
    print(lines[-1])
    lines.append(load_line(load_before))
    print(lines[-1])
    if not args.no_write:
        save_lines("thread-sizes", argv, lines)


if __name__ == "__main__":
    main()
