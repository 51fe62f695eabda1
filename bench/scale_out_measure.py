"""Scale-out measured: BPE training and token files in one process, and on Ray with 1 and
2 workers, on the same Parquet shards of made-up stories (docs/scale-out.md).

    pip install -r requirements-ray.txt
    python bpe_bench.py scale-out-measure --corpus /tmp/scale-corpus --gigabytes 2.5   # the run docs/scale-out.md cites
    python bpe_bench.py scale-out-measure --corpus /tmp/scale-small --gigabytes 0.05 \
        --results /tmp/scale-small/results                                        # a quick try

The corpus: --gigabytes of stories as bpe_bench.py data-memory makes them (sentences of made-up
words, distinct stories, few distinct chunks, as in TinyStories), one story a row of the
column "text", in --shards Parquet files. It is written once into --corpus and used again
while its made-by.json says the same sizes and seed.

Each run is a process of its own, started from here, so that its memory is its own:
  counts   counts the corpus once, unmeasured, for the distinct chunks and the size of
           their counts as buffers (ChunkCounter.counts: the chunks' bytes, then 16
           bytes a chunk), which is what the reduce moves and the driver takes in;
  one      the library in one process: ChunkCounter.add on all cores, a text per story,
           then BPETokenizer.train_from_counts; then the token file, the stories after
           end-of-text markers encoded 8 M characters at a time on all cores
           (bpe.token_files.write_token_file), as data.py writes train-bpe.bin;
  ray W    bpe.ray_data on a local Ray of W CPUs: ray_data.count (a task a block, a tree
           of merges), train_from_counts on the driver, then write_token_folder with W
           actors, each story after an end-of-text marker.
Wall times are from the run's start, Ray's start-up given apart (a cluster is started
once, before its jobs). Peak memory is VmHWM (peak resident set) from /proc: the driver's
own at its end, and every process that the driver's Ray started, polled every 0.2 s while
it runs (Ray's workers, whose names begin with "ray::", and its own processes: raylet,
gcs_server and helpers). VmHWM counts the pages of Ray's object store (shared memory)
that a process touched; the private part (RssAnon, at its largest when polled) is given
beside it.

Checked: the merges of every run equal the one-process merges, and the shards of each
token folder, read in the manifest's order, equal the one-process token file id for id.
The floors: Ray with 2 workers within 1.5x of the one-process wall time; each
worker's peak under the one-process peak; the driver's peak under the one-process peak
plus the merged counts. Writes RESULTS.txt and RESULTS.json (--results; by default
docs/results/scale-out). This is a measuring script, not a test.
"""
import argparse
import json
import logging
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

END_OF_TEXT = "<|endoftext|>"
VOCAB_SIZE = 8192
# Stories handed to ChunkCounter.add at a time, and characters encoded at a time, in the
# one-process run: as BPETokenizer.train and data.py do, enough for the threads to share.
COUNT_BATCH_CHARS = 8 << 20
ENCODE_BATCH_CHARS = 1 << 23
POLL_SECONDS = 0.2
# Ray's own actors and agents, which run in worker processes too: not this job's workers.
RAY_OWN = ("DashboardAgent", "RuntimeEnvAgent", "_StatsActor", "_AutoscalingCoordinator")


# --- the corpus --------------------------------------------------------------------

def shard_paths(corpus: Path) -> list:
    return sorted(corpus.glob("stories-*.parquet"))


def make_corpus(corpus: Path, gigabytes: float, shards: int, seed: int) -> dict:
    """Parquet shards of made-up stories (data_memory.story_batches), about gigabytes
    GB of text in all; written once for these sizes and this seed."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from bench import data_memory

    stamp = corpus / "made-by.json"
    wanted = {"gigabytes": gigabytes, "shards": shards, "seed": seed, "column": "text"}
    if stamp.exists():
        made = json.loads(stamp.read_text())
        if {k: made.get(k) for k in wanted} == wanted and len(shard_paths(corpus)) == shards:
            print(f"corpus: {corpus} (already written: {made['stories']:,} stories, {made['bytes'] / 1e9:.2f} GB of "
                  f"text in {shards} shards)", flush=True)
            return made
    corpus.mkdir(parents=True, exist_ok=True)
    stamp.unlink(missing_ok=True)
    for old in shard_paths(corpus):
        old.unlink()
    start = time.perf_counter()
    rng = np.random.default_rng(seed)
    batches = data_memory.story_batches(rng, data_memory.sentence_pool(rng))
    per_shard = int(gigabytes * 1e9 / shards)
    stories = total = 0
    left = []  # stories made for one shard and not needed there: the next one's
    for k in range(shards):
        path = corpus / f"stories-{k:05d}.parquet"
        part = path.with_name(path.name + ".part")  # renamed when whole: a crash leaves no shard half written
        written = 0
        with pq.ParquetWriter(part, pa.schema([("text", pa.string())])) as writer:
            while written < per_shard:
                batch, left = (left or next(batches)), []
                sizes = np.cumsum([len(story) for story in batch])  # ASCII: a character is a byte
                keep = int(np.searchsorted(sizes, per_shard - written)) + 1
                batch, left = batch[:keep], batch[keep:]
                writer.write_table(pa.table({"text": pa.array(batch, pa.string())}))
                written += int(sizes[len(batch) - 1])
                stories += len(batch)
        os.replace(part, path)
        total += written
        print(f"  {path.name}: {written / 1e6:,.0f} MB of stories", flush=True)
    made = dict(wanted, stories=stories, bytes=total, parquet_bytes=sum(p.stat().st_size for p in shard_paths(corpus)))
    stamp.write_text(json.dumps(made, indent=2) + "\n")
    print(f"corpus: wrote {stories:,} stories, {total / 1e9:.2f} GB of text, to {shards} shards in {corpus} in "
          f"{time.perf_counter() - start:.0f} s", flush=True)
    return made


# --- memory ------------------------------------------------------------------------

def memory_of(pid) -> dict:
    """VmHWM, VmRSS and RssAnon of a process, in bytes (empty once it has ended)."""
    from bench import data_memory

    return data_memory.proc_status(pid, ("VmHWM", "VmRSS", "RssAnon"))


def descendants(root: int) -> list:
    """The processes under root (children, their children, ...), from /proc."""
    parent = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    stat = f.read()
                parent[int(entry)] = int(stat[stat.rindex(")") + 2:].split()[1])
            except (OSError, ValueError):
                pass
    found, frontier = [], [root]
    while frontier:
        frontier = [pid for pid, ppid in parent.items() if ppid in frontier]
        found += frontier
    return found


def name_of(pid) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            words = f.read().split(b"\0")
    except OSError:
        return "?"
    first = words[0].decode(errors="replace")
    if first.startswith("ray::"):
        return first.strip()  # a worker names itself by what it runs
    for word in words:  # the interpreter's script, else the program
        word = word.decode(errors="replace")
        if word.endswith(".py"):
            return Path(word).name
    return Path(first).name


class Poller(threading.Thread):
    """Every POLL_SECONDS, the memory of each process under this one: its largest VmHWM
    and RssAnon, and the names it has had (a Ray worker renames itself per task)."""

    def __init__(self):
        super().__init__(daemon=True)
        self.seen, self.running = {}, True

    def run(self):
        while self.running:
            self.poll()
            time.sleep(POLL_SECONDS)

    def poll(self):
        for pid in [os.getpid(), *descendants(os.getpid())]:
            memory = memory_of(pid)
            if not memory:
                continue
            entry = self.seen.setdefault(pid, {"pid": pid, "names": [], "hwm": 0, "anon": 0})
            name = name_of(pid)
            if name not in entry["names"]:
                entry["names"].append(name)
            entry["hwm"] = max(entry["hwm"], memory.get("VmHWM", 0))
            entry["anon"] = max(entry["anon"], memory.get("RssAnon", 0))

    def stop(self) -> list:
        self.running = False
        self.join()
        self.poll()
        return sorted(self.seen.values(), key=lambda e: e["pid"])


# --- the runs, each in a process of its own ------------------------------------------

def run_counts(paths, out: dict):
    import bpe
    from bpe import sources

    counter = bpe.ChunkCounter("default", [END_OF_TEXT])
    for batch in sources.batches(sources.read_texts(paths), COUNT_BATCH_CHARS):
        counter.add(batch, threads=0)
    chunks, offsets, counts = counter.counts()
    out.update(distinct=len(counter), chunk_bytes=len(chunks), counts_bytes=len(chunks) + offsets.nbytes + counts.nbytes,
               occurrences=int(counts.sum()), estimated_memory=counter.estimated_memory)


def run_one(paths, work: Path, out: dict):
    poller = Poller()  # for the process's own private peak (RssAnon), beside VmHWM
    poller.start()
    _run_one(paths, work, out)
    out["driver_anon"] = poller.stop()[0]["anon"]


def _run_one(paths, work: Path, out: dict):
    import bpe
    from bpe import BPETokenizer, sources
    from bpe.token_files import write_token_file

    start = time.perf_counter()
    counter = bpe.ChunkCounter("default", [END_OF_TEXT])
    for batch in sources.batches(sources.read_texts(paths), COUNT_BATCH_CHARS):
        counter.add(batch, threads=0)
    out["count_s"] = time.perf_counter() - start
    t = time.perf_counter()
    tok = BPETokenizer.train_from_counts(counter, VOCAB_SIZE, progress=False)
    out["merge_s"] = time.perf_counter() - t
    tok.save(work / "tokenizer.bpe")
    t = time.perf_counter()

    def arrays():
        for batch in sources.batches(sources.read_texts(paths), ENCODE_BATCH_CHARS):
            yield tok.encode_array("".join(END_OF_TEXT + story for story in batch), allowed_special="all", threads=0)

    out["tokens"] = write_token_file(work / "tokens.bin", arrays(), tok, "tokenizer.bpe", writer="scale_out_measure")
    out["tokens_s"] = time.perf_counter() - t
    out["work_s"] = time.perf_counter() - start
    out["merges"] = len(tok.merges)


def _idle_worker():
    import pyarrow.parquet  # noqa: F401

    from bpe import ray_data  # noqa: F401  (and so ray.data, bpe, numpy, pyarrow)

    memory = memory_of(os.getpid())
    return {"pid": os.getpid(), "hwm": memory["VmHWM"], "anon": memory["RssAnon"]}


def run_ray(paths, work: Path, workers: int, out: dict):
    import ray


    poller = Poller()
    poller.start()
    start = time.perf_counter()
    ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING)
    import ray.data

    from bpe import BPETokenizer, ray_data

    ray.data.DataContext.get_current().enable_progress_bars = False
    logging.getLogger("ray.data").setLevel(logging.WARNING)  # its lines between this script's

    out["ray_start_s"] = time.perf_counter() - start
    # What Ray holds before any work: the driver after ray.init, and a worker that has
    # imported what bpe.ray_data's tasks import (Ray Data among them).
    out["driver_start_hwm"] = memory_of(os.getpid())["VmHWM"]
    out["idle_worker"] = ray.get(ray.remote(_idle_worker).remote())
    begin = time.perf_counter()
    counter = ray_data.count(paths, special_tokens=[END_OF_TEXT], progress=False)
    out["count_s"] = time.perf_counter() - begin
    t = time.perf_counter()
    tok = BPETokenizer.train_from_counts(counter, VOCAB_SIZE, special_tokens=[END_OF_TEXT], progress=False)
    del counter
    out["merge_s"] = time.perf_counter() - t
    tok.save(work / "tokenizer.bpe")
    t = time.perf_counter()
    manifest = ray_data.write_token_folder(paths, tok, work / "tokens", workers=workers, tokenizer_name="tokenizer.bpe",
                                           before_each=END_OF_TEXT, progress=False)  # as data.py's stories
    out["tokens_s"] = time.perf_counter() - t
    out["work_s"] = time.perf_counter() - begin
    out["tokens"], out["shards"], out["merges"] = manifest["tokens"], len(manifest["shards"]), len(tok.merges)
    processes = poller.stop()
    ray.shutdown()
    out["driver_anon"] = next(p["anon"] for p in processes if p["pid"] == os.getpid())
    processes = [p for p in processes if p["pid"] != os.getpid()]
    # Worker processes (named ray::... or default_worker.py) that are not Ray's own actors
    # and agents: the ones that ran this job's tasks and actors (and any left idle). The
    # rest (raylet, gcs_server, Ray's actors) are Ray's.
    workers_seen = [p for p in processes
                    if any(n.startswith("ray::") or n == "default_worker.py" for n in p["names"])
                    and not any(own in n for n in p["names"] for own in RAY_OWN)]
    out["workers"] = workers_seen
    out["ray_processes"] = [p for p in processes if p not in workers_seen]


def child(kind: str, workers: int, paths, work: Path, result: Path):
    out = {"run": kind if kind != "ray" else f"ray {workers}"}
    start = time.perf_counter()
    if kind == "counts":
        run_counts(paths, out)
    elif kind == "one":
        run_one(paths, work, out)
    else:
        run_ray(paths, work, workers, out)
    out["wall_s"] = time.perf_counter() - start
    out["driver_hwm"] = memory_of(os.getpid())["VmHWM"]
    result.write_text(json.dumps(out, indent=2) + "\n")


def start_child(kind: str, workers: int, corpus: Path, work: Path) -> dict:
    work.mkdir(parents=True, exist_ok=True)
    result = work / "result.json"
    result.unlink(missing_ok=True)
    command = [sys.executable, "-m", "bench.scale_out_measure", "--child", kind, "--child-workers", str(workers),
               "--corpus", str(corpus), "--work", str(work)]
    print(f"run: {kind}{f' {workers}' if kind == 'ray' else ''} ...", flush=True)
    subprocess.run(command, check=True, cwd=ROOT)
    return json.loads(result.read_text())


# --- the checks and the report -----------------------------------------------------

def same_tokens(one_file: Path, folder: Path, tok) -> bool:
    """The shards of folder, in the manifest's order, against the one-process file, a
    shard at a time, memory-mapped."""
    import numpy as np
    from bpe.token_files import read_token_file, read_token_folder

    whole = read_token_file(one_file, tok)
    at = 0
    for shard in read_token_folder(folder, tok):
        if not np.array_equal(shard, whole[at:at + len(shard)]):
            return False
        at += len(shard)
    return at == len(whole)


def mb(n) -> str:
    return f"{n / 1e6:,.0f} MB"


def report(made, counts, runs, checks, cpus) -> str:
    lines = [f"scale-out: {made['bytes'] / 1e9:.2f} GB of made-up stories ({made['stories']:,}), {made['shards']} Parquet "
             f"shards ({made['parquet_bytes'] / 1e9:.2f} GB on disk); {counts['distinct']:,} distinct chunks, "
             f"{counts['occurrences']:,} in all; their counts as buffers {mb(counts['counts_bytes'])}; "
             f"vocabulary {VOCAB_SIZE:,}; {cpus} cores",
             "",
             f"{'run':<7} {'wall s':>7} {'work s':>7} {'start s':>7} {'count s':>8} {'merge s':>8} {'tokens s':>9} "
             f"{'driver peak (private)':>22} {'workers':>8} {'largest worker peak (private)':>30}"]
    for name, r in runs.items():
        workers = r.get("workers", [])
        largest = max(workers, key=lambda w: w["hwm"], default=None)
        worker_text = f"{mb(largest['hwm'])} ({mb(largest['anon'])})" if largest else "-"
        lines.append(f"{name:<7} {r['wall_s']:>7.1f} {r['work_s']:>7.1f} {r.get('ray_start_s', 0):>7.1f} "
                     f"{r['count_s']:>8.1f} {r['merge_s']:>8.1f} {r['tokens_s']:>9.1f} "
                     f"{mb(r['driver_hwm']) + ' (' + mb(r['driver_anon']) + ')':>22} "
                     f"{len(workers) if 'workers' in r else '-':>8} {worker_text:>30}")
    lines += ["",
              "wall: the run's process from start to end; work: after Ray's start-up (one process: all of it); "
              "count: counting, and the tree of merges on Ray; merge: learning the merges (on the driver); tokens: "
              "the token file or folder. Peaks are VmHWM (the peak resident set, shared libraries and Ray's object "
              "store pages included); in brackets the largest private part (RssAnon) seen, polled every "
              f"{POLL_SECONDS} s."]
    for name, r in runs.items():
        if "idle_worker" in r:
            idle = r["idle_worker"]
            lines.append(f"  {name}: before any work, the driver after ray.init {mb(r['driver_start_hwm'])}; a Ray "
                         f"worker with bpe.ray_data (and Ray Data) imported {mb(idle['hwm'])} (private {mb(idle['anon'])})")
        for what, procs in (("worker", r.get("workers", [])), ("ray's own", r.get("ray_processes", []))):
            for p in procs:
                lines.append(f"  {name}: {what} {p['pid']}: peak {mb(p['hwm'])} (private {mb(p['anon'])}), "
                             f"{' / '.join(p['names'])[:110]}")
    lines.append("")
    for text, ok in checks:
        lines.append(f"{'yes' if ok else 'NO '}  {text}")
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description="BPE training and token files: one process against Ray with 1 "
                                                 "and 2 workers, on Parquet shards of made-up stories")
    parser.add_argument("--corpus", type=Path, default=Path("/tmp/scale-corpus"),
                        help="where the shards are written, or found from an earlier run (default: %(default)s)")
    parser.add_argument("--gigabytes", type=float, default=2.5, help="GB (10^9 bytes) of stories (default: %(default)s)")
    parser.add_argument("--shards", type=int, default=16, help="Parquet files (default: %(default)s)")
    parser.add_argument("--workers", default="1,2", help="the Ray runs' CPUs, comma-separated (default: %(default)s)")
    parser.add_argument("--work", type=Path, default=None,
                        help="where the runs write their tokenizers and tokens (default: CORPUS-work); removed "
                             "after the checks unless --keep")
    parser.add_argument("--keep", action="store_true", help="keep the runs' token files")
    parser.add_argument("--results", type=Path, default=ROOT / "docs" / "results" / "scale-out",
                        help="RESULTS.txt and RESULTS.json are written (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="for the made-up stories (default: %(default)s)")
    parser.add_argument("--child", choices=["counts", "one", "ray"], help=argparse.SUPPRESS)
    parser.add_argument("--child-workers", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    work = args.work or args.corpus.with_name(args.corpus.name + "-work")
    if args.child:
        return child(args.child, args.child_workers, [str(p) for p in shard_paths(args.corpus)], work,
                     work / "result.json")
    try:
        workers = [int(w) for w in args.workers.split(",") if w.strip()]
    except ValueError:
        parser.error(f"--workers takes numbers, got {args.workers!r}")
    if args.gigabytes <= 0 or args.shards < 1 or not workers or min(workers) < 1:
        parser.error("--gigabytes, --shards and --workers must be positive")

    from bpe import BPETokenizer

    made = make_corpus(args.corpus, args.gigabytes, args.shards, args.seed)
    counts = start_child("counts", 1, args.corpus, work / "counts")
    print(f"corpus: {counts['distinct']:,} distinct chunks; their counts {mb(counts['counts_bytes'])} as buffers",
          flush=True)
    runs = {"one": start_child("one", 1, args.corpus, work / "one")}
    for w in workers:
        runs[f"ray {w}"] = start_child("ray", w, args.corpus, work / f"ray-{w}")
    one_tok = BPETokenizer.load(work / "one" / "tokenizer.bpe")
    checks = []
    for w in workers:
        tok = BPETokenizer.load(work / f"ray-{w}" / "tokenizer.bpe")
        checks.append((f"ray {w}: the merges of one process ({len(tok.merges):,})", tok == one_tok))
        checks.append((f"ray {w}: its {runs[f'ray {w}']['shards']} shards, read in the manifest's order, hold the "
                       f"one-process file's {runs['one']['tokens']:,} ids",
                       tok == one_tok and same_tokens(work / "one" / "tokens.bin", work / f"ray-{w}" / "tokens", tok)))
    one = runs["one"]
    if "ray 2" in runs:
        two = runs["ray 2"]
        # Wall against wall, Ray's start-up included: like with like. The work alone is said beside it.
        checks.append((f"ray 2 within 1.5x of one process's wall time: {two['wall_s']:.1f} s against "
                       f"{one['wall_s']:.1f} s, {two['wall_s'] / one['wall_s']:.2f}x ({two['work_s']:.1f} s of work "
                       f"after Ray's start-up, {two['work_s'] / one['wall_s']:.2f}x)",
                       two["wall_s"] <= 1.5 * one["wall_s"]))
    for w in workers:
        r = runs[f"ray {w}"]
        largest = max(r["workers"], key=lambda p: p["hwm"], default={"hwm": 0, "anon": 0})
        idle = r["idle_worker"]
        checks.append((f"ray {w}: each of its {len(r['workers'])} workers' peak under one process's "
                       f"{mb(one['driver_hwm'])}: the largest {mb(largest['hwm'])} (private {mb(largest['anon'])}; "
                       f"{mb(largest['hwm'] - idle['hwm'])} above an idle worker's {mb(idle['hwm'])})",
                       largest["hwm"] < one["driver_hwm"]))
        bound = one["driver_hwm"] + counts["counts_bytes"]
        checks.append((f"ray {w}: the driver's peak {mb(r['driver_hwm'])} under one process's peak plus the merged "
                       f"counts, {mb(one['driver_hwm'])} + {mb(counts['counts_bytes'])} ({mb(r['driver_start_hwm'])} "
                       "of it held after ray.init, before any work)", r["driver_hwm"] < bound))
    text = report(made, counts, runs, checks, os.cpu_count())
    print()
    print(text, end="")
    txt, js = Path(f"{args.results}.txt"), Path(f"{args.results}.json")  # a dot in the name stays
    txt.parent.mkdir(parents=True, exist_ok=True)
    txt.write_text(text)
    js.write_text(json.dumps(
        {"corpus": made, "counts": counts, "runs": runs, "checks": [{"check": t, "ok": ok} for t, ok in checks],
         "cores": os.cpu_count(), "vocab_size": VOCAB_SIZE}, indent=2) + "\n")
    print(f"wrote {txt} and {js.name}")
    if not args.keep:
        import shutil

        shutil.rmtree(work, ignore_errors=True)
    return 0 if all(ok for _, ok in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
