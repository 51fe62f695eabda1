"""Short calls, one core, warm: a 220-character text (a message, a prompt) encoded with the
default threads against threads=1, for every call that a user makes on one text
(encode_array, count, encode_to_numpy, which takes no threads), with encode beside them.
The floor: each within 1.2x of encode_array(threads=1) or count(threads=1), and no thread
lent to them (bpe._core.threads_lent).

    python bpe_bench.py short-calls [--rounds 9] [--texts 1000] [gpt2 cl100k] [--no-write]

The texts are the held-out stories cut into --texts distinct pieces of 220 characters,
each encoded once untimed first. Each round times every call on all the texts, in an
order shuffled each round; the table gives the median of the rounds' microseconds a
call (wall clock). What it prints goes to docs/results/short-calls.txt, with the command
and the load average.
"""
import argparse
import random
import statistics
import sys
import time
from pathlib import Path

from bench import SHARED_DATA
from bench.measure import load_line, load_now, pin_to_one_cpu, save_lines, versions

ROOT = Path(__file__).resolve().parent.parent
LENGTH = 220
FLOOR = 1.2


def load(name: str, data: Path):
    """Our tokenizer of GPT-2's vocabulary (its own files) or of cl100k_base."""
    from bpe import BPETokenizer
    from bpe.formats import cl100k_path

    if name == "cl100k":
        return BPETokenizer.from_tiktoken(cl100k_path())
    return BPETokenizer.from_gpt2(data / "cs336" / "gpt2_vocab.json", data / "cs336" / "gpt2_merges.txt")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", default=["gpt2", "cl100k"])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--texts", type=int, default=1000, help="distinct texts of 220 characters")
    parser.add_argument("--data", type=Path, default=SHARED_DATA)
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    pin_to_one_cpu()
    import bpe

    path = args.data / "tinystories" / "valid-sample.txt"
    if not path.is_file():
        raise SystemExit(f"short-calls: no held-out stories at {path} (--data names the shared data folder)")
    stories = path.read_text(encoding="utf-8")
    texts = [stories[k * LENGTH:(k + 1) * LENGTH] for k in range(min(args.texts, len(stories) // LENGTH))]
    load_before = load_now()
    lines = [f"bpe {versions()['bpe_commit']}: {len(texts):,} distinct texts of {LENGTH} characters (held-out "
             f"stories); median of {args.rounds} rounds, one core, microseconds a call"]
    print(lines[-1])
    for name in args.names:
        tok = load(name, args.data)
        calls = {
            "encode_array(t)": lambda t: tok.encode_array(t),
            "encode_array(t, threads=1)": lambda t: tok.encode_array(t, threads=1),
            "count(t)": lambda t: tok.count(t),
            "count(t, threads=1)": lambda t: tok.count(t, threads=1),
            "encode_to_numpy(t)": lambda t: tok.encode_to_numpy(t),
            "encode(t)": lambda t: tok.encode(t),
        }
        for t in texts:  # the ids checked alike, and every chunk in the cache
            ids = tok.encode(t)
            if tok.encode_to_numpy(t).tolist() != ids or tok.encode_array(t).tolist() != ids or tok.count(t) != len(ids):
                raise SystemExit(f"{name}: the calls' ids differ on {t!r}")
        lent_before = bpe._core.threads_lent()
        times = {label: [] for label in calls}
        order = list(calls.items())
        shuffle = random.Random(0)
        for _ in range(args.rounds):
            shuffle.shuffle(order)
            for label, call in order:
                begin = time.perf_counter()
                for t in texts:
                    call(t)
                times[label].append((time.perf_counter() - begin) / len(texts) * 1e6)
        us = {label: statistics.median(v) for label, v in times.items()}
        against = {"encode_array(t)": "encode_array(t, threads=1)", "count(t)": "count(t, threads=1)",
                   "encode_to_numpy(t)": "encode_array(t, threads=1)"}
        table = [f"\n{name:<36} {'us':>7}  over"]
        table += [(f"  {label:<34} {us[label]:7.2f}  " + (f"{us[label] / us[against[label]]:.2f}x {against[label]}"
                                                         if label in against else "")).rstrip() for label in calls]
        threads = bpe._core.threads_lent() - lent_before
        table.append(f"  threads lent to the timed calls: {threads}")
        met = threads == 0 and all(us[label] / us[base] <= FLOOR for label, base in against.items())
        table.append(f"  floor: each within {FLOOR}x of threads=1, no thread lent: {'met' if met else 'NOT met'}")
        print("\n".join(table))
        lines += table
    lines.append(load_line(load_before))
    print(lines[-1])
    if not args.no_write:
        save_lines("short-calls", argv, lines)


if __name__ == "__main__":
    main()
