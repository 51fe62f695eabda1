"""What the reduce of bpe.ray_data costs per distinct chunk: the numbers behind the model
on docs/scale-out.md, for corpora far more varied than the made-up stories.

    python bpe_bench.py scale-out-reduce                  # 250 k, 1 M and 4 M distinct chunks
    python bpe_bench.py scale-out-reduce --chunks 1e6 --results docs/results/scale-out-reduce

For D distinct chunks (made-up words, 3 to 12 letters after a space, counts from a
Zipf-like law) it times, in this process, on one thread, each step that the reduce does
with a counter of that many chunks:
  pickle    ChunkCounter pickled (what a task returns) and its size: what moves between
            nodes, L + 16 D bytes for chunks of total length L;
  unpickle  the same taken in again (a node of the tree, or the driver, receiving it);
  merge     ChunkCounter.merge of it with a counter of D chunks of its own and half of
            the first one's, as two parts of a corpus share many of their chunks;
  train     BPETokenizer.train_from_counts to 8,192 tokens (the driver's step), with the
            counter's estimate of its peak memory (estimated_memory).
Counting is not here: it is linear in the bytes, and spread over the workers
(bpe_bench.py scale-out-measure measures it).
"""
import argparse
import json
import os
import pickle
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import bpe  # noqa: E402
from bpe import BPETokenizer  # noqa: E402

VOCAB_SIZE = 8192


def made_up_counter(n: int, seed: int) -> "bpe.ChunkCounter":
    """A counter of n distinct made-up words (" " and 3 to 12 letters), with counts."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(3, 13, size=int(n * 1.1))
    letters = rng.integers(ord("a"), ord("z") + 1, size=int(lengths.sum()), dtype=np.uint8)
    words = set()
    at = 0
    for length in lengths:
        words.add(b" " + letters[at:at + length].tobytes())
        at += length
        if len(words) == n:
            break
    words = sorted(words)
    chunks = b"".join(words)
    offsets = np.zeros(len(words) + 1, np.int64)
    np.cumsum([len(w) for w in words], out=offsets[1:])
    counts = np.maximum(1, (1e6 / np.arange(1, len(words) + 1)) * rng.random(len(words))).astype(np.int64)
    counter = bpe.ChunkCounter()
    counter.add_counts(chunks, offsets, counts, threads=1)
    return counter


def timed(step):
    start = time.perf_counter()
    result = step()
    return result, time.perf_counter() - start


def measure(n: int) -> dict:
    a, b = made_up_counter(n, 1), made_up_counter(n, 2)
    # Half of b's chunks are a's: two halves of one corpus share most of their chunks.
    chunks, offsets, counts = a.counts()
    half = n // 2
    b.add_counts(chunks[:offsets[half]], offsets[:half + 1], counts[:half], threads=1)
    size = len(chunks)
    del chunks, offsets, counts
    blob, pickle_s = timed(lambda: pickle.dumps(a))
    copy, unpickle_s = timed(lambda: pickle.loads(blob))
    pickled = len(blob)
    del blob
    _, merge_s = timed(lambda: a.merge(b, threads=1))
    merged = len(a)
    del a, b
    estimate = copy.estimated_memory  # of D chunks, as the merge's inputs
    _, train_s = timed(lambda: BPETokenizer.train_from_counts(copy, VOCAB_SIZE, progress=False))
    return {"chunks": n, "chunk_bytes": size, "pickle_bytes": pickled, "pickle_s": pickle_s,
            "unpickle_s": unpickle_s, "merge_s": merge_s, "merged_chunks": merged, "train_s": train_s,
            "train_estimated_memory": estimate}


def main(argv=None):
    parser = argparse.ArgumentParser(description="the reduce's costs per distinct chunk (docs/scale-out.md)")
    parser.add_argument("--chunks", default="250e3,1e6,4e6", help="distinct chunks, comma-separated (default: %(default)s)")
    parser.add_argument("--results", type=Path, default=None, help="also write RESULTS.txt and RESULTS.json")
    args = parser.parse_args(argv)
    sizes = [int(float(c)) for c in args.chunks.split(",") if c.strip()]
    lines = [f"the reduce on one thread ({os.cpu_count()} cores), for a counter of D distinct chunks: pickled (its "
             "size, and the time to make it and take it in), merged with another that holds D chunks of its own and "
             f"half of the first one's (the time, and the chunks after), trained to {VOCAB_SIZE:,} tokens (the time, and its estimate of "
             "training's peak memory)",
             f"{'D':>10} {'pickled':>10} {'per chunk':>10} {'pickle s':>9} {'unpickle s':>11} {'merge s':>8} "
             f"{'merged':>10} {'train s':>8} {'train memory':>13}"]
    rows = []
    for n in sizes:
        r = measure(n)
        rows.append(r)
        lines.append(f"{n:>10,} {r['pickle_bytes'] / 1e6:>8.1f}MB {r['pickle_bytes'] / n:>9.1f}B {r['pickle_s']:>9.2f} "
                     f"{r['unpickle_s']:>11.2f} {r['merge_s']:>8.2f} {r['merged_chunks']:>10,} {r['train_s']:>8.2f} "
                     f"{r['train_estimated_memory'] / 1e6:>11.0f}MB")
        print(lines[-1] if len(rows) > 1 else "\n".join(lines), flush=True)
    if args.results:
        Path(f"{args.results}.txt").write_text("\n".join(lines) + "\n")
        Path(f"{args.results}.json").write_text(json.dumps({"cores": os.cpu_count(), "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
