"""bpe_bench.py threads: our encoder on two threads against one, on distinct text."""
import gc
import hashlib
import json
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

from bench import ROOT, THREADS_FLOOR, VOCAB_SIZE
from bench.encode import our_vocabulary
from bench.measure import Contender, Report, fresh, import_bpe, interleaved, median, parallel_ceiling, timing
from bench.texts import describe, distinct_text, halves, stories


# One fresh process's comparison: the tokenizer and the text come as files.
FRESH_PROCESS = """
import json, sys
import numpy
from bpe import BPETokenizer
from bench.measure import Contender, fresh, interleaved
tok_path, text_path, threads, repeats = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
tok, text = BPETokenizer.load(tok_path), open(text_path, encoding="utf-8", newline="").read()
cpu = {}
samples = interleaved([Contender(str(k), "bpe", lambda: fresh(tok), lambda t, k=k: t.encode_array(text, threads=k))
                       for k in (1, threads)], repeats, cpu=cpu)
print(json.dumps({"wall": samples, "cpu": cpu}))
"""


# One of the two processes that encode the text's halves: it loads the tokenizer and its
# half, says how many ids the half has and their digest, then encodes the half with a
# new tokenizer each time it reads a byte, answering with the call's CPU seconds.
HALF_PROCESS = """
import hashlib, sys, time
from bpe import BPETokenizer
from bench.measure import fresh
tok_path, half_path = sys.argv[1], sys.argv[2]
tok, text = BPETokenizer.load(tok_path), open(half_path, encoding="utf-8", newline="").read()
ids = fresh(tok).encode_array(text, threads=1)
print(len(ids), hashlib.sha256(ids.astype("<u4").tobytes()).hexdigest(), flush=True)
while True:
    t = fresh(tok)
    if not sys.stdin.buffer.read(1):
        break
    start = time.process_time()
    t.encode_array(text, threads=1)
    print(time.process_time() - start, flush=True)
"""


class HalvesInProcesses:
    """The threads' work done by two processes that share nothing: the text's two halves
    (texts.halves), each encoded on one thread by a new tokenizer in a process of its
    own, released at once or one after the other. What this machine gives for the same
    work on two cores, for the threads to be measured against in the same rounds."""
    ONE_AFTER_OTHER, AT_ONCE = "two processes, one after the other", "two processes at once"

    def __init__(self, tok_path: Path, halves: list[Path], whole_ids):
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        self.processes = [subprocess.Popen([sys.executable, "-c", HALF_PROCESS, str(tok_path), str(half)],
                                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
                          for half in halves]
        said = [p.stdout.readline().split() for p in self.processes]
        if not all(len(s) == 2 for s in said):
            self.close()
            sys.exit("a process encoding half the text failed to start")
        first = int(said[0][0])
        expected = [whole_ids[:first], whole_ids[first:]]
        for (count, digest), ids in zip(said, expected):
            if int(count) != len(ids) or digest != hashlib.sha256(ids.astype("<u4").tobytes()).hexdigest():
                self.close()
                sys.exit("MISMATCH: the two halves' ids are not the whole text's")
        self.cpu = {self.ONE_AFTER_OTHER: [], self.AT_ONCE: []}  # each call's CPU seconds, both together

    def _go(self, k: int):
        self.processes[k].stdin.write("x")
        self.processes[k].stdin.flush()

    def _done(self, k: int) -> float:
        line = self.processes[k].stdout.readline()
        if not line:
            raise RuntimeError(f"the process encoding half {k + 1} of the text ended (exit status "
                               f"{self.processes[k].poll()})")
        return float(line)

    def one_after_other(self, _=None):
        self._go(0)
        first = self._done(0)
        self._go(1)
        self.cpu[self.ONE_AFTER_OTHER].append(first + self._done(1))

    def at_once(self, _=None):
        self._go(0)
        self._go(1)
        self.cpu[self.AT_ONCE].append(self._done(0) + self._done(1))

    def close(self):
        for p in self.processes:
            if p.stdin and not p.stdin.closed:
                p.stdin.close()
            p.wait()


def against(samples: dict, cpu: dict, one: str, two: str) -> dict:
    """Contender `two` against `one`, from interleaved rounds: the medians' ratio, the
    median of each round's ratio (a slow round on one side pulls the two apart), the CPU
    time's ratio (two's over one's), and each round's pair."""
    rounds = [{"ratio": a / b, "cpu_ratio": d / c}
              for a, b, c, d in zip(samples[one], samples[two], cpu[one], cpu[two])]
    return {"ratio": median(samples[one]) / median(samples[two]),
            "rounds_ratio": median([r["ratio"] for r in rounds]),
            "cpu_ratio": median(cpu[two]) / median(cpu[one]), "rounds": rounds}


def each_round(comparison: dict) -> str:
    """A comparison's rounds as printed: each round's ratio with its CPU ratio."""
    return ", ".join(f"{r['ratio']:.2f}x (CPU {r['cpu_ratio']:.2f}x)" for r in comparison["rounds"])


def kernel_cost(contender: Contender, rounds: int) -> dict:
    """What one call costs in the kernel: the minor page faults and the system seconds of
    the whole process (every thread) over the call, by getrusage; medians of `rounds`
    calls, each on what contender.make makes, as the timed rounds are."""
    faults, system = [], []
    for _ in range(rounds):
        obj = contender.make()
        gc.collect()
        before = resource.getrusage(resource.RUSAGE_SELF)
        contender.run(obj)
        after = resource.getrusage(resource.RUSAGE_SELF)
        faults.append(after.ru_minflt - before.ru_minflt)
        system.append(after.ru_stime - before.ru_stime)
    return {"minor_faults": median(faults), "system_s": median(system)}


def bench_threads(args):
    report = Report("threads", args)
    bpe = import_bpe()
    import numpy  # noqa: F401

    threads = 2
    story_texts = stories(args.data)
    text, what = distinct_text(story_texts, int(args.mb * 1e6))
    mb = len(text.encode("utf-8")) / 1e6
    tok = our_vocabulary(bpe, story_texts).tokenizer
    report.data["text"] = {"name": what, **describe(text)}
    report.say(f"text: {mb:.1f} MB of distinct text: {what}; vocabulary: ours "
               f"({VOCAB_SIZE:,} tokens). Arrays: encode_array, a fresh tokenizer each round; not pinned.\n")
    contenders = [Contender(f"ours encode_array(threads={k})", "bpe",
                            lambda: fresh(tok), lambda t, k=k: t.encode_array(text, threads=k))
                  for k in (1, threads)]
    one, many = contenders[0].once(), contenders[1].once()
    if not numpy.array_equal(one, many):
        sys.exit(f"MISMATCH: encode_array on {threads} threads gives other ids than on 1")
    del many
    folder = tempfile.TemporaryDirectory()
    tok_path, text_path = Path(folder.name) / "tokenizer.bpe", Path(folder.name) / "text.txt"
    tok.save(tok_path)
    text_path.write_text(text, encoding="utf-8")
    half_paths = [Path(folder.name) / f"half{k}.txt" for k in (0, 1)]
    for path, half in zip(half_paths, halves(text)):
        path.write_text(half, encoding="utf-8")
    apart = HalvesInProcesses(tok_path, half_paths, one)
    del one
    pair = [Contender(apart.ONE_AFTER_OTHER, "bpe", lambda: None, apart.one_after_other),
            Contender(apart.AT_ONCE, "bpe", lambda: None, apart.at_once)]
    # A tokenizer whose table already holds every chunk of the text: its threads write
    # nothing that the other reads, where a new tokenizer's add the text's new chunks.
    warm_tok = fresh(tok)
    warm_tok.encode_array(text, threads=1)
    warm = [Contender(f"warm tokenizer encode_array(threads={k})", "bpe", lambda: warm_tok,
                      lambda t, k=k: t.encode_array(text, threads=k)) for k in (1, threads)]
    cpu = {}
    try:
        samples = interleaved(contenders + pair + warm, args.repeats, cpu=cpu)
    finally:
        apart.close()
    cpu.update(apart.cpu)
    report.say(f"Encoding {mb:.1f} MB with our vocabulary: arrays, {threads} threads against 1 "
               f"({os.cpu_count()} cores); medians of {args.repeats}; CPU s: the call's CPU time, all its threads")
    report.say(f"{'':<42} {'s':>8} {'MB/s':>7} {'CPU s':>7}")
    for c in contenders + pair + warm:
        s = median(samples[c.name])
        report.say(f"{c.name:<42} {s:>8.4f} {mb / s:>7.1f} {median(cpu[c.name]):>7.4f}")
    # The same work on more threads should take about the same CPU time; where it takes
    # more, either the threads added work or the cores ran slower than when one ran alone.
    threads_vs = against(samples, cpu, contenders[0].name, contenders[1].name)
    ratio, rounds_ratio, cpu_ratio = (threads_vs[k] for k in ("ratio", "rounds_ratio", "cpu_ratio"))
    floor_met = min(ratio, rounds_ratio) >= THREADS_FLOOR  # both statistics
    report.say(f"{threads} threads against 1: {ratio:.2f}x the medians, {rounds_ratio:.2f}x the median of the "
               f"rounds' ratios (the floor: {THREADS_FLOOR}x by both: {'met' if floor_met else 'NOT met'})")
    report.say(f"CPU time, {threads} threads over 1: {cpu_ratio:.2f}x. Above 1: work the threads added, or cores "
               "that ran slower with both busy (on a shared virtual machine, a host's other work)")
    report.say("each round, " + each_round(threads_vs))
    apart_vs = against(samples, cpu, pair[0].name, pair[1].name)
    report.say(f"the same work in two processes that share nothing (the text cut in two where a chunk ends, each "
               f"half encoded on one thread by a new tokenizer in a process of its own; in the same rounds): at once "
               f"{apart_vs['ratio']:.2f}x one after the other, {apart_vs['rounds_ratio']:.2f}x the rounds' median "
               f"(CPU {apart_vs['cpu_ratio']:.2f}x); {threads} threads did {ratio / apart_vs['ratio']:.2f}x and "
               f"{rounds_ratio / apart_vs['rounds_ratio']:.2f}x that")
    warm_vs = against(samples, cpu, warm[0].name, warm[1].name)
    report.say(f"a warm tokenizer (its table holding every chunk of the text already; in the same rounds): "
               f"{threads} threads against 1: {warm_vs['ratio']:.2f}x the medians, {warm_vs['rounds_ratio']:.2f}x "
               f"the rounds' median (CPU {warm_vs['cpu_ratio']:.2f}x); each round, " + each_round(warm_vs))
    kernel = {c.name: kernel_cost(c, args.repeats) for c in contenders}
    report.say(f"In the kernel, a call (getrusage over the call, the whole process; medians of {args.repeats}):")
    for c in contenders:
        report.say(f"  {c.name:<38} {kernel[c.name]['minor_faults']:>8.0f} minor page faults, "
                   f"{kernel[c.name]['system_s'] * 1e3:6.1f} ms of system time")
    ceiling = parallel_ceiling(threads, args.repeats)
    report.say(f"the ceiling now: a plain Python loop in {threads} processes did {ceiling['ratio']:.2f}x the work of "
               "one")

    report.say(f"\nThe same in {args.processes} fresh processes (medians of {args.repeats} in each):")
    fresh_runs = []
    with folder:
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        for k in range(args.processes):
            out = subprocess.run([sys.executable, "-c", FRESH_PROCESS, str(tok_path), str(text_path), str(threads),
                                  str(args.repeats)], capture_output=True, text=True, env=env)
            if out.returncode != 0:
                sys.exit(f"a fresh process failed:\n{out.stderr[-2000:]}")
            answer = json.loads(out.stdout)
            got, got_cpu = answer["wall"], answer["cpu"]
            a, b = median(got["1"]), median(got[str(threads)])
            process_cpu_ratio = median(got_cpu[str(threads)]) / median(got_cpu["1"])
            fresh_runs.append({"threads_1": timing(got["1"]), f"threads_{threads}": timing(got[str(threads)]),
                               "ratio": a / b, "cpu_s_1": got_cpu["1"], f"cpu_s_{threads}": got_cpu[str(threads)],
                               "cpu_ratio": process_cpu_ratio})
            report.say(f"  process {k + 1}: 1 thread {a:.4f} s, {threads} threads {b:.4f} s: {a / b:.2f}x "
                       f"(CPU {process_cpu_ratio:.2f}x)")
    fresh_median = median([r["ratio"] for r in fresh_runs]) if fresh_runs else None
    if fresh_runs:
        report.say(f"  median over the processes: {fresh_median:.2f}x")
    report.data.update({
        "vocabulary": "ours", "kind": "arrays", "threads": threads, "mb": mb,
        "rows": [{"name": c.name, "threads": k, **timing(samples[c.name]), "mb_per_s": mb / median(samples[c.name]),
                  "cpu_s": cpu[c.name]}
                 for c, k in zip(contenders, (1, threads))],
        **threads_vs,
        "processes": {"what": "the text's two halves, each on one thread in a process of its own",
                      "one_after_the_other": {**timing(samples[pair[0].name]), "cpu_s": cpu[pair[0].name]},
                      "at_once": {**timing(samples[pair[1].name]), "cpu_s": cpu[pair[1].name]},
                      **apart_vs, "threads_over_processes": ratio / apart_vs["ratio"]},
        "warm": {"what": "a tokenizer whose table holds every chunk of the text",
                 "rows": [{"name": c.name, "threads": k, **timing(samples[c.name]), "cpu_s": cpu[c.name]}
                          for c, k in zip(warm, (1, threads))], **warm_vs},
        "floor": THREADS_FLOOR, "floor_met": floor_met, "kernel": kernel,
        "ceiling": ceiling, "fresh_processes": fresh_runs, "fresh_processes_median_ratio": fresh_median})
    report.save(args.out)

