"""How fast text of long chunks encodes against the held-out stories: lines of one mark
(Markdown's rules, source's separators), each line one chunk of 64, 65, 100, 300 or
2,000 bytes repeated, and a mix of distinct lines of 17-400 marks between lines of prose.

    python bpe_bench.py long-chunk-speed [--build DIR] [--rounds 7] [cl100k_base o200k_base]

Warm (a tokenizer that first encoded other text of the same kind), one thread, MB/s of
the best round in the thread's CPU time (which other work on a shared machine inflates
far less than the wall clock's), for encode_array(threads=1) and encode_ordinary (lists).
--build: the folder of another build to time (built in place), for before and after.
"""
import argparse
import random
import sys
import time
from pathlib import Path

from bench import SHARED_DATA


def lines(size: int, n: int, mark: str) -> str:
    """Lines that are each one chunk of n bytes under gpt4 and o200k: n - 1 marks and a new line."""
    return (mark * (n - 1) + "\n") * (size // n)


def mixed(stories: str, size: int, seed: int) -> str:
    rng = random.Random(seed)
    words, parts, total = stories.split(), [], 0
    while total < size:
        if rng.random() < 0.5:
            part = rng.choice("=-*_#~") * rng.randint(17, 400) + "\n"
        else:
            part = " ".join(rng.choice(words) for _ in range(rng.randint(3, 20))) + "\n"
        parts.append(part)
        total += len(part)
    return "".join(parts)


def mb_per_s(encode, text: str, rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        started = time.thread_time()
        encode(text)
        best = min(best, time.thread_time() - started)
    return len(text.encode()) / 1e6 / best


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", default=["cl100k_base", "o200k_base"], help="published encodings")
    parser.add_argument("--build", type=Path, default=Path(__file__).resolve().parent.parent,
                        help="the folder of a build to time (built in place; default: this one)")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--data", type=Path, default=SHARED_DATA, help="the shared data folder (tinystories/)")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(args.build))
    import bpe

    stories = (args.data / "tinystories" / "valid-sample.txt").read_text(encoding="utf-8")
    warm_stories = (args.data / "tinystories" / "train-sample-lowercase.txt").read_text(encoding="utf-8")[:1_000_000]
    size = len(stories.encode())
    texts = {"stories": (stories, warm_stories),
             **{f"lines of {n}": (lines(size, n, "="), lines(size, n, "-")) for n in (64, 65, 100, 300, 2000)},
             "mixed lines": (mixed(stories, size, 1), mixed(stories, size, 2))}

    print(f"{args.build}: MB/s, warm, one thread, best of {args.rounds} in CPU time")
    print(f"{'encoding':<12} {'text':<12} {'arrays':>8} {'lists':>8}")
    for name in args.names:
        tok = bpe.get_encoding(name)
        for label, (text, warm) in texts.items():
            tok.encode_array(warm, threads=1)
            tok.encode_ordinary(warm)
            arrays = mb_per_s(lambda t: tok.encode_array(t, threads=1), text, args.rounds)
            lists = mb_per_s(tok.encode_ordinary, text, args.rounds)
            print(f"{name:<12} {label:<12} {arrays:>8.0f} {lists:>8.0f}", flush=True)


if __name__ == "__main__":
    main()
