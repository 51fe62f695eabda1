"""Peak memory of training a tokenizer on a large corpus file: streamed, and in one call.

    python bpe_bench.py train-memory --text ../shared/data/tinystories/train-sample-lowercase.txt --mb 500

The corpus is a file of one story per line: the stories of --text over and over, until
it holds --mb megabytes (written to a temporary folder first). Each way of training then
runs in a fresh process, which prints its peak resident memory (VmHWM, the high-water
mark the kernel keeps):

- streamed: BPETokenizer.train over the file's lines, read one at a time, so the corpus
  is never in memory; only its distinct chunks are;
- one call: the file read whole, as one bytes object, and given to bpe.train.

Both learn the same merges, which the script checks. Repetition adds no distinct chunk,
so this measures what the corpus's size costs, not what its variety does.
"""
import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import json, sys, time
sys.path.insert(0, {root!r})
import bpe
from bpe import BPETokenizer

def peak_mb():
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmHWM")) / 1024

start = time.perf_counter()
if {mode!r} == "streamed":
    with open({corpus!r}, encoding="utf-8") as f:
        merges = BPETokenizer.train((line.rstrip(chr(10)) for line in f), vocab_size={vocab_size}, progress=False).merges
else:
    with open({corpus!r}, "rb") as f:
        merges = bpe.train(f.read(), {vocab_size} - 256)
print(json.dumps({{"peak_mb": peak_mb(), "seconds": time.perf_counter() - start, "merges": merges}}))
"""


def write_corpus(text_path: Path, size: int, out: Path):
    """One story a line (new lines inside a story become spaces), repeated to `size` bytes."""
    text = text_path.read_text(encoding="utf-8")
    stories = [" ".join(s.split()) for s in (text.split("\n\n") if "\n\n" in text else text.split("\n"))]
    lines = [s.encode("utf-8") + b"\n" for s in stories if s]
    written = 0
    with open(out, "wb") as f:
        while written < size:
            for line in lines:
                f.write(line)
                written += len(line)
                if written >= size:
                    break


def run(mode: str, corpus: Path, vocab_size: int) -> dict:
    code = CHILD.format(root=str(ROOT), corpus=str(corpus), mode=mode, vocab_size=vocab_size)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"the {mode} run failed:\n{result.stderr}")
    return json.loads(result.stdout)


def main(argv=None):
    parser = argparse.ArgumentParser(description="Peak memory of training, streamed against one call.")
    parser.add_argument("--text", type=Path, required=True, help="a text of stories to repeat")
    parser.add_argument("--mb", type=float, default=500, help="the corpus's size in MB (default: %(default)s)")
    parser.add_argument("--vocab-size", type=int, default=8192, help="default: %(default)s")
    args = parser.parse_args(argv)
    size = int(args.mb * 1e6)
    with tempfile.TemporaryDirectory() as folder:
        corpus = Path(folder) / "corpus.txt"
        write_corpus(args.text, size, corpus)
        print(f"corpus: {args.text.name}'s stories, one a line, repeated to {corpus.stat().st_size / 1e6:,.0f} MB; "
              f"vocab_size {args.vocab_size}", flush=True)
        results = {mode: run(mode, corpus, args.vocab_size) for mode in ("streamed", "one call")}
    for mode, r in results.items():
        print(f"  {mode:<9} peak RSS {r['peak_mb']:8.0f} MB   {r['seconds']:6.1f} s")
    same = results["streamed"]["merges"] == results["one call"]["merges"]
    print(f"  the same {len(results['streamed']['merges']):,} merges: {same}")
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
