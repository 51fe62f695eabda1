"""data.py's peak memory on an input larger than the memory it may use.

    python bpe_bench.py data-memory                      # 3 GB of made-up stories, under a 1 GB cap
    python bpe_bench.py data-memory --gb 6 --cap-gb 1 --runs bpe

It writes a folder of made-up TinyStories-like files (the training file --gb GB, the
held-out one --valid-mb MB; stories separated by <|endoftext|> lines, paragraphs by blank
lines), then runs `python data.py --source FOLDER` (word level) and `python data.py --bpe
--source FOLDER` with the whole training file (--train-mb as large as the file), each
under a cap on its address space (RLIMIT_AS, as `prlimit --as=BYTES` sets it): a step
that held the input, or any piece that grows with it, fails with MemoryError there.
For each run it prints data.py's lines, each with the process's resident memory at that
moment and its peak so far, and at the end the peak resident memory (VmHWM).

The stories are distinct (each a random draw of sentences from a pool of 100,000, the
sentences random draws of 6,000 made-up words), so the text does not repeat, while its
distinct words and chunks stay few, as in TinyStories: the memory that follows the
text's variety (BPE's table of distinct chunks, the word counts) stays small, and what
is left is the memory that could follow its size. The files are kept between runs
(delete the folder, or change --gb or --seed, to write them again).
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
END_OF_TEXT = "<|endoftext|>"
POOL_SENTENCES = 100_000
VOCABULARY = 6_000

# Runs data.py (argv[1]) as `python data.py` would, in this process, and writes the peak
# memory to stderr at exit (an error's exit included).
WRAPPER = r"""
import atexit, os, runpy, sys
def peak():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(("VmHWM", "VmPeak")):
                sys.stderr.write("data_memory: " + line)
atexit.register(peak)
sys.argv = sys.argv[1:]
sys.path[0] = os.path.dirname(os.path.abspath(sys.argv[0]))
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def made_up_words(rng, n):
    syllables = ["ba", "lo", "mi", "ta", "ri", "sun", "fle", "pa", "do", "ke", "ni", "gro", "wa", "el", "ip",
                 "tor", "ly", "an", "be", "cu", "mo", "ze", "ha", "ju"]
    words = set()
    while len(words) < n:
        words.add("".join(rng.choice(syllables, size=rng.integers(1, 4))))
    return sorted(words)


def sentence_pool(rng):
    """POOL_SENTENCES sentences of made-up words, frequent words far more often (Zipf)."""
    words = np.array(made_up_words(rng, VOCABULARY), dtype=object)
    weights = 1.0 / np.arange(1, len(words) + 1)
    weights /= weights.sum()
    names = ["Lily", "Tom", "Ben", "Mia", "Sam", "Max", "Sue", "Tim"]
    pool = []
    for _ in range(POOL_SENTENCES):
        chosen = list(words[rng.choice(len(words), size=rng.integers(4, 13), p=weights)])
        chosen.insert(int(rng.integers(len(chosen) + 1)), names[rng.integers(len(names))])
        sentence = " ".join(chosen)
        sentence = sentence[0].upper() + sentence[1:] + str(rng.choice([".", ".", ".", "!", "?"]))
        if rng.random() < 0.15:
            sentence = f'"{sentence}" said {names[rng.integers(len(names))]}.'
        pool.append(sentence)
    return pool


def story_batches(rng, pool):
    """Made-up stories, 10,000 at a time, without end: each 4 to 14 sentences of the pool,
    2 to 4 a paragraph, paragraphs separated by a blank line. bpe_bench.py scale-out-measure
    makes its Parquet shards of them too."""
    while True:
        lengths = rng.integers(4, 15, size=10_000)
        picks = rng.integers(len(pool), size=int(lengths.sum()))
        breaks = rng.integers(2, 5, size=int(lengths.sum()))
        batch, k = [], 0
        for n in lengths:
            paragraphs, sentences = [], []
            for j in range(n):
                sentences.append(pool[picks[k + j]])
                if len(sentences) >= breaks[k + j]:
                    paragraphs.append(" ".join(sentences))
                    sentences = []
            if sentences:
                paragraphs.append(" ".join(sentences))
            k += n
            batch.append("\n\n".join(paragraphs))
        yield batch


def write_stories(path: Path, size: int, rng, pool):
    """Stories (story_batches) until the file holds `size` bytes, each followed by a line
    <|endoftext|>."""
    stories = 0
    with open(path, "w", encoding="utf-8", buffering=1 << 22) as f:
        written = 0
        batches = story_batches(rng, pool)
        while written < size:
            batch = next(batches)
            chunk = "".join(story + f"\n{END_OF_TEXT}\n" for story in batch)
            f.write(chunk)
            written += len(chunk)  # ASCII: a character is a byte
            stories += len(batch)
    return stories


def make_source(folder: Path, train_bytes: int, valid_bytes: int, seed: int):
    """The source folder, written once for these sizes and this seed."""
    stamp = folder / "made-by.json"
    wanted = {"train_bytes": train_bytes, "valid_bytes": valid_bytes, "seed": seed}
    if stamp.exists() and json.loads(stamp.read_text()) == wanted:
        print(f"input: {folder} (already written)")
        return
    folder.mkdir(parents=True, exist_ok=True)
    stamp.unlink(missing_ok=True)
    rng = np.random.default_rng(seed)
    start = time.perf_counter()
    pool = sentence_pool(rng)
    n_train = write_stories(folder / "made-up-train.txt", train_bytes, rng, pool)
    n_valid = write_stories(folder / "made-up-valid.txt", valid_bytes, rng, pool)
    stamp.write_text(json.dumps(wanted))
    print(f"input: wrote {n_train:,} training and {n_valid:,} held-out stories to {folder} "
          f"in {time.perf_counter() - start:.0f} s")


def proc_status(pid: int, keys=("VmRSS", "VmHWM", "VmPeak")) -> dict:
    """Those fields of /proc/PID/status (sizes the kernel gives in kB), in bytes; empty
    once the process has ended."""
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key in keys:
                    out[key] = int(value.split()[0]) * 1024
    except OSError:
        pass
    return out


def status(pid: int) -> dict:
    """VmRSS, VmHWM and VmPeak of a process, in MB (empty once it has ended)."""
    return {key: size / (1 << 20) for key, size in proc_status(pid).items()}


def measure(script: Path, args, cap: int) -> dict:
    """Run data.py under the cap; print its lines with the memory at each; the peaks."""
    command = [sys.executable, "-c", WRAPPER, str(script), *args]
    print(f"$ prlimit --as={cap} python {script.name} {' '.join(args)}", flush=True)
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    start = time.perf_counter()
    proc = subprocess.Popen(command, cwd=script.parent, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (cap, cap)))
    peaks = {}
    for line in proc.stdout:
        line = line.rstrip("\n")
        if line.startswith("data_memory: "):
            key, _, value = line[len("data_memory: "):].partition(":")
            peaks[key] = int(value.split()[0]) / 1024
            continue
        now = status(proc.pid)
        memory = f"  [RSS {now['VmRSS']:,.0f} MB, peak so far {now['VmHWM']:,.0f} MB]" if now else ""
        print(f"  {line}{memory}", flush=True)
    proc.wait()
    seconds = time.perf_counter() - start
    return {"code": proc.returncode, "seconds": seconds, "hwm": peaks.get("VmHWM"), "vmpeak": peaks.get("VmPeak")}


def main(argv=None):
    parser = argparse.ArgumentParser(description="data.py's peak memory (VmHWM) on a made-up input larger than "
                                                 "its cap on memory (RLIMIT_AS, as prlimit --as sets it)")
    parser.add_argument("--gb", type=float, default=3.0, help="size of the made-up training file, in GB (10^9 bytes)")
    parser.add_argument("--valid-mb", type=float, default=20.0, help="size of the made-up held-out file, in MB")
    parser.add_argument("--cap-gb", type=float, default=1.0, help="the cap on data.py's address space, in GB (2^30 bytes)")
    parser.add_argument("--runs", default="bpe,word", help="which runs, comma-separated: bpe, word (default: %(default)s)")
    parser.add_argument("--dir", type=Path, default=Path("/tmp/data-memory"),
                        help="where the made-up files and the data folder go (default: %(default)s)")
    parser.add_argument("--script", type=Path, default=ROOT / "data.py",
                        help="the data.py to measure: another checkout's, to compare versions (it runs in its "
                             "folder, with that folder's modules; default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="for the made-up stories (default: %(default)s)")
    args = parser.parse_args(argv)
    args.script = args.script.resolve()
    runs = [r.strip() for r in args.runs.split(",") if r.strip()]
    if not runs or set(runs) - {"bpe", "word"}:
        parser.error(f"--runs takes bpe and/or word, got {args.runs!r}")

    source, data_dir = args.dir / "source", args.dir / "data"
    train_bytes, cap = int(args.gb * 1e9), int(args.cap_gb * (1 << 30))
    make_source(source, train_bytes, int(args.valid_mb * 1e6), args.seed)
    size = (source / "made-up-train.txt").stat().st_size
    print(f"input: made-up-train.txt {size / 1e9:.2f} GB, made-up-valid.txt "
          f"{(source / 'made-up-valid.txt').stat().st_size / 1e6:.1f} MB; cap {cap / (1 << 30):.2f} GiB "
          f"of address space ({cap / size:.0%} of the training file); {os.cpu_count()} cores")
    results = {}
    for run in runs:
        flags = (["--bpe"] if run == "bpe" else []) + [
            "--source", str(source), "--data-dir", str(data_dir), "--train-mb", f"{size / 1e6 + 1:.0f}", "--no-progress"]
        results[run] = measure(args.script, flags, cap)
    print()
    for run, r in results.items():
        hwm = "?" if r["hwm"] is None else f"{r['hwm']:,.0f} MB"
        print(f"{run}: exit {r['code']} in {r['seconds']:.0f} s; peak resident memory (VmHWM) {hwm}; "
              f"peak address space (VmPeak) {r['vmpeak'] or 0:,.0f} MB; input {size / 1e9:.2f} GB, "
              f"cap {cap / (1 << 30):.2f} GiB")
    return 0 if all(r["code"] == 0 for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
