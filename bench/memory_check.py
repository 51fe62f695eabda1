"""Peak memory of training and encoding on inputs made to be hard on memory, each case in
a fresh process, as a table.

    python bpe_bench.py memory-check            # about 3 minutes on two cores
    python bpe_bench.py memory-check --encode-mb 20 --train-mb 10   # a quick look

The cases:

- train: BPETokenizer.train on generated words of 4-12 random letters, nearly all
  distinct (what makes training's memory grow), with no budget and with max_memory;
  and on words of 100-300 letters (where the bytes of the chunks, not their number,
  set the cost). "per chunk" and "per byte" are the peak above the interpreter's
  size divided by the distinct chunks and by their bytes: what docs/engine.md quotes
  for sizing a machine. "estimate" is the counter's own (bpe.ChunkCounter.estimated_memory).
- encode one huge chunk: bpe.Encoder.encode_array on --encode-mb MB with no space
  (random letters, and one letter repeated), with GPT-2's merges when the shared data
  has them (else the project's stories.bpe). "beyond output" is the peak above the size
  before the call, less the output (the ids the C++ fills, 4 bytes each, and the array
  they are copied to), per byte of input.
- encode CJK: BPETokenizer.encode_array on a CJK str; the process's size and
  sys.getsizeof(text) before and after the call (no UTF-8 copy is left on the str).

The peak is the kernel's high-water mark (VmHWM), reset before each measured call
through /proc/self/clear_refs.
"""
import argparse
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("BPE_SHARED_DATA", ROOT.parent / "shared" / "data"))

HELPERS = """
import json, random, sys, time, warnings
sys.path.insert(0, {root!r})

def status(key):
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith(key)) * 1024

def reset_peak():
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
"""

TRAIN = """
from bpe import BPETokenizer
import bpe
low, high, size = {low}, {high}, int({mb} * 1e6)
rng = random.Random(1)
def texts():  # made as they are read, so that the corpus is never in memory
    made = 0
    while made < size:
        text = " ".join("".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(low, high)))
                        for _ in range(200_000 // high))
        made += len(text) + 1
        yield text
base = status("VmRSS")
reset_peak()
start = time.perf_counter()
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    BPETokenizer.train(texts(), 256 + 2000, progress=False, max_memory={budget})
seconds = time.perf_counter() - start
rng = random.Random(1)
# The distinct chunks, counted again after (not measured), for the table, in batches
# as BPETokenizer.train makes them.
peak = status("VmHWM") - base
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    counter = bpe.ChunkCounter(max_memory={budget})
    batch = []
    for text in texts():
        batch.append(text)
        if sum(map(len, batch)) >= 8 << 20:
            counter.add(batch)
            batch = []
    counter.add(batch)
chunks, estimate, dropped = len(counter), counter.estimated_memory, counter.pruned[0]
print(json.dumps({{"peak": peak, "chunks": chunks, "dropped": dropped,
                   "estimate": estimate, "seconds": seconds,
                   "warning": str(caught[-1].message) if caught else ""}}))
"""

ENCODE = """
import os
import bpe
from bpe import BPETokenizer
tok = {load}
encoder = bpe.Encoder(tok.merges)
n = int({mb} * 1e6)
letters = b"abcdefghijklmnopqrstuvwxyz"
text = os.urandom(n).translate(bytes(letters[b % 26] for b in range(256))) if {kind!r} == "random" else b"a" * n
base = status("VmRSS")
reset_peak()
start = time.perf_counter()
ids = encoder.encode_array(text, threads=1)
seconds = time.perf_counter() - start
output = 4 * len(ids) + ids.nbytes
print(json.dumps({{"beyond": (status("VmHWM") - base - output) / n, "seconds": seconds, "ids": len(ids)}}))
"""

CJK = """
from bpe import BPETokenizer
tok = BPETokenizer.load({stories!r})
text = "東京は日本の首都です。 山と川が美しい。 " * int({mb} * 1e6 / 59)
tok.encode_array(text[:1000])
size_before, rss_before = sys.getsizeof(text), status("VmRSS")
reset_peak()
ids = tok.encode_array(text, threads=1)
peak = status("VmHWM")
del ids
print(json.dumps({{"utf8": len(text.encode("utf-8")), "size_before": size_before, "size_after": sys.getsizeof(text),
                   "rss_before": rss_before, "rss_after": status("VmRSS"), "peak": peak}}))
"""


def child(code: str, root: Path = ROOT, **fields) -> dict:
    source = textwrap.dedent(HELPERS).format(root=str(root)) + textwrap.dedent(code).format(**fields)
    result = subprocess.run([sys.executable, "-c", source], capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"a case failed:\n{result.stderr}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def mb(n: float) -> str:
    return f"{n / 1e6:,.0f} MB"


def main(argv=None):
    parser = argparse.ArgumentParser(description="Peak memory of training and encoding, case by case.")
    parser.add_argument("--train-mb", type=float, default=30, help="MB of short distinct words (default: %(default)s)")
    parser.add_argument("--budget-mb", type=float, default=150, help="max_memory for the budget case (default: %(default)s)")
    parser.add_argument("--encode-mb", type=float, default=200, help="MB of the one huge chunk (default: %(default)s)")
    parser.add_argument("--cjk-mb", type=float, default=57, help="MB (as UTF-8) of the CJK text (default: %(default)s)")
    parser.add_argument("--before", type=Path, help="another checkout (built) to run the CJK case with too, "
                        "for a before-and-after")
    args = parser.parse_args(argv)

    print("| case | peak above start | distinct chunks | per chunk | per byte of chunk | estimate | time |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    budget = int(args.budget_mb * 1e6)
    for what, low, high, size, limit in [
        (f"train, {args.train_mb:g} MB of words of 4-12 letters", 4, 12, args.train_mb, None),
        (f"the same, max_memory={mb(budget)}", 4, 12, args.train_mb, budget),
        (f"train, {args.train_mb / 2:g} MB of words of 100-300 letters", 100, 300, args.train_mb / 2, None),
    ]:
        r = child(TRAIN, low=low, high=high, mb=size, budget=limit)
        chunk_bytes = r["chunks"] * ((low + high) / 2 + 1)  # the words' mean length, and a space
        kept = f"{r['chunks']:,}" + (f" ({r['dropped']:,} dropped)" if r["dropped"] else "")
        print(f"| {what} | {mb(r['peak'])} | {kept} | "
              f"{r['peak'] / r['chunks']:.0f} B | {r['peak'] / chunk_bytes:.1f} B | {mb(r['estimate'])} | "
              f"{r['seconds']:.1f} s |")
        if r["warning"]:
            print(f"|  warned: {r['warning']} | | | | | | |")

    gpt2 = SHARED / "cs336" / "gpt2_vocab.json", SHARED / "cs336" / "gpt2_merges.txt"
    if all(p.exists() for p in gpt2):
        load, vocabulary = f"BPETokenizer.from_gpt2({str(gpt2[0])!r}, {str(gpt2[1])!r})", "GPT-2's merges"
    else:
        load, vocabulary = f"BPETokenizer.load({str(ROOT / 'stories.bpe')!r})", "stories.bpe"
    print()
    print(f"| encode one chunk of {args.encode_mb:g} MB, {vocabulary} | ids | beyond output, per input byte | time |")
    print("| --- | --- | --- | --- |")
    for kind, what in [("random", "random letters"), ("same", "one letter repeated")]:
        r = child(ENCODE, load=load, mb=args.encode_mb, kind=kind)
        print(f"| {what} | {r['ids']:,} | {r['beyond']:.2f} B | {r['seconds']:.1f} s |")

    print()
    for label, root in [("this checkout", ROOT)] + ([(f"{args.before}", args.before)] if args.before else []):
        r = child(CJK, root=root, stories=str(ROOT / "stories.bpe"), mb=args.cjk_mb)
        print(f"| encode_array of a CJK str ({mb(r['utf8'])} as UTF-8), {label} | before the call | after the call |")
        print("| --- | --- | --- |")
        print(f"| sys.getsizeof(text) | {mb(r['size_before'])} | {mb(r['size_after'])} |")
        print(f"| process size (VmRSS) | {mb(r['rss_before'])} | {mb(r['rss_after'])} (peak {mb(r['peak'])}) |")


if __name__ == "__main__":
    main()
