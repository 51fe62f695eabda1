"""Splitting alone, in each SIMD tier this CPU runs: GB/s of bpe._core.count_chunks.

    python bpe_bench.py split-tiers [--repeats 7] [--out docs/results/split-tiers.txt]

The bench's split-only rows (python bpe_bench.py encode) are of the tier the core picks
at import; this runs the same call in a process per tier (BPE_SIMD=portable, sse2, avx2,
avx512, pinned to one CPU), on the held-out stories and on Python source, each pattern,
medians of --repeats calls. A tier the CPU lacks is said and left out. Every tier's
chunk count is checked against the portable one's.
"""
import argparse
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
TIERS = ("portable", "sse2", "avx2", "avx512")
PATTERNS = ("default", "gpt2", "gpt4", "qwen2", "o200k")

# One tier's process: the tier it runs, then for each text and pattern the chunks and
# the median seconds of a call.
WORKER = r"""
import json, os, statistics, sys, time, warnings
warnings.simplefilter("error")  # a tier the CPU lacks warns and falls back: a failure here
os.sched_setaffinity(0, {0})
import bpe
texts, repeats = json.load(open(sys.argv[1], encoding="utf-8")), int(sys.argv[2])
out = {"tier": bpe.simd_tier(), "rows": {}}
for name, text in texts.items():
    data = text.encode("utf-8")
    for pattern in ("default", "gpt2", "gpt4", "qwen2", "o200k"):
        chunks = bpe._core.count_chunks(data, pattern)
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            bpe._core.count_chunks(data, pattern)
            times.append(time.perf_counter() - start)
        out["rows"][f"{name}|{pattern}"] = [chunks, statistics.median(times), len(data)]
print(json.dumps(out))
"""


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=7, help="timed calls per row (default 7)")
    parser.add_argument("--out", type=Path, help="also write the table to this file")
    args = parser.parse_args(argv)
    source, _, _ = held_out_and_warm_up_source(5_000_000, 0)
    texts = {"held-out stories": stories(DATA)["valid"], "Python source": source}
    texts_path = Path("/tmp") / f"split-tiers-{os.getpid()}.json"
    texts_path.write_text(json.dumps(texts), encoding="utf-8")
    results, skipped = {}, []
    try:
        for tier in TIERS:
            run = subprocess.run([sys.executable, "-c", WORKER, str(texts_path), str(args.repeats)], cwd=ROOT,
                                 env={**os.environ, "BPE_SIMD": tier}, capture_output=True, text=True)
            if run.returncode != 0:
                skipped.append(tier)
                continue
            results[tier] = json.loads(run.stdout)
    finally:
        texts_path.unlink()
    import bpe

    lines = [f"Splitting alone (bpe._core.count_chunks), each SIMD tier in a process of its own pinned to CPU 0; "
             f"medians of {args.repeats}; GB/s (10^9 bytes). The tier picked at import here: {bpe.simd_tier()}.",
             f"{'text':<18} {'pattern':<8} " + " ".join(f"{t:>9}" for t in results)]
    for key in next(iter(results.values()))["rows"]:
        counts = {t: r["rows"][key][0] for t, r in results.items()}
        if len(set(counts.values())) != 1:
            sys.exit(f"{key}: the tiers find different chunks: {counts}")
        name, pattern = key.split("|")
        lines.append(f"{name:<18} {pattern:<8} " + " ".join(
            f"{r['rows'][key][2] / r['rows'][key][1] / 1e9:>9.2f}" for r in results.values()))
    if skipped:
        lines.append(f"not on this CPU, left out: {', '.join(skipped)}")
    print("\n".join(lines))
    if args.out:
        args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
