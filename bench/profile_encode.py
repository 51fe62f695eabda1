"""Where a warm encode's time goes, per chunk: ours (encode_array) beside gigatoken 0.10's.

    python bpe_bench.py profile-encode [--rows gpt2:stories,cl100k:stories] [--seconds 3]
                                   [--before OLD_BUILD] [--out docs/results/profile-encode.txt]

For a floor still missed: the profile of each nanosecond per chunk set
beside gigatoken's on the same text. Each library runs in a process of its own, pinned
to one CPU, loaded as bench/peers.py loads it (ours from the GPT-2 files or
cl100k_base.tiktoken; gigatoken with Tokenizer.from_tiktoken(path, pretokenizer="gpt2"
or "gpt4")), and warmed on other text of the same kind; the ids of the timed text are
checked equal between the two first. Only then is perf attached to the process, for the
timed calls alone, so loading and warming are not in the samples:
  - perf stat -e task-clock (and the hardware counters where the machine has them; on a
    VM without them perf prints <not supported>, and so does this table);
  - perf record -e cpu-clock, summed by symbol. gigatoken's module is stripped, so its
    samples are summed by hot address range instead (a gap of 256 bytes between sampled
    addresses starts a new range); its source names what each range does.
ns per chunk is the CPU time of a call (the process's: on a shared machine the clock
also counts time spent waiting for the CPU) over the chunks of the text (the split is
the same for both, as the ids are); the clock's is printed beside it. Without perf, it prints the timings alone. Nothing in
the tests needs it.
"""
import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.texts import held_out_and_warm_up_source, stories  # noqa: E402

DATA = Path(os.environ.get("BPE_SHARED_DATA", "/work/shared/data"))
WARM_UP_CHARS = 10_000_000

# One library's process: load, warm up, encode the timed text once and print a digest of
# its ids and where its modules are mapped; then answer "time N" (the seconds a call of
# N calls) and "run S" (calls for S seconds, while perf watches: how many).
WORKER = r"""
import hashlib, json, os, sys, time
root, lib, files_path, cpu = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
sys.path.insert(0, root)
os.sched_setaffinity(0, {cpu})
import numpy
files = json.load(open(files_path, encoding="utf-8"))
text, warm_up = open(files["text"], encoding="utf-8").read(), open(files["warm_up"], encoding="utf-8").read()
if lib == "ours":
    import bpe
    if files["vocab"] == "gpt2":
        tok = bpe.BPETokenizer.from_gpt2(files["gpt2_vocab"], files["gpt2_merges"])
    else:
        tok = bpe.BPETokenizer.from_tiktoken(files["tiktoken"])
    call = lambda: tok.encode_array(text, threads=1)  # reads the global `text`
    tok.encode_array(warm_up, threads=1)
else:
    import gigatoken
    tok = gigatoken.Tokenizer.from_tiktoken(files["tiktoken"], pretokenizer=files["giga_split"])
    call = lambda: tok.encode(text)
    tok.encode(warm_up)
timed_text = text
ids = numpy.asarray(call(), dtype=numpy.uint32)
# Where the library's module is mapped, so that a stripped module's sampled addresses
# can be read back as offsets into its file.
maps = {}
for line in open("/proc/self/maps"):
    f = line.split()
    if len(f) >= 6 and "x" in f[1] and (f[5].endswith(".so") or ".so." in f[5]):
        maps.setdefault(f[5], (int(f[0].split("-")[0], 16), int(f[2], 16)))
print("ready", hashlib.sha256(ids.tobytes()).hexdigest()[:16], len(ids), json.dumps(maps), flush=True)
for line in sys.stdin:
    what, amount = line.split()
    if what == "time":  # one timed sample of `amount` calls: seconds a call, of the clock and of the CPU
        start, cpu_start = time.perf_counter(), time.process_time()
        for _ in range(int(amount)):
            call()
        print(json.dumps([(time.perf_counter() - start) / int(amount), (time.process_time() - cpu_start) / int(amount)]),
              flush=True)
    elif what == "fresh":  # the same, each call on a new str of the same text: CPU seconds a call
        cpu = 0.0
        for _ in range(int(amount)):
            text = timed_text[:1] + timed_text[1:]  # a new object, whose UTF-8 no one has asked for
            cpu_start = time.process_time()
            call()
            cpu += time.process_time() - cpu_start
        text = timed_text
        print(json.dumps(cpu / int(amount)), flush=True)
    elif what == "run":  # calls for `amount` seconds, for perf to watch: how many
        calls, start = 0, time.perf_counter()
        while time.perf_counter() - start < float(amount):
            call()
            calls += 1
        print(json.dumps(calls), flush=True)
    else:
        break
"""

COUNTERS = "task-clock,cycles,instructions,cache-misses,dTLB-load-misses,branch-misses"


def texts_for(kind: str) -> tuple[str, str]:
    """The timed text and its warm-up text (other text of the same kind)."""
    if kind == "stories":
        s = stories(DATA)
        return s["valid"], s["train"][WARM_UP_CHARS:2 * WARM_UP_CHARS]
    source, warm_up, _ = held_out_and_warm_up_source(2_000_000, 5_000_000)
    return source, warm_up


def vocabulary_files(vocab: str, folder: Path) -> dict:
    import bpe
    from bpe import formats

    if vocab == "gpt2":
        vocab_json, merges_txt = DATA / "cs336" / "gpt2_vocab.json", DATA / "cs336" / "gpt2_merges.txt"
        tok = bpe.BPETokenizer.from_gpt2(vocab_json, merges_txt)
        path = folder / "gpt2.tiktoken"
        ids = tok.token_ids
        formats.save_tiktoken(tok.merges, path, None if ids is None else ids[:256 + len(tok.merges)])
        return {"vocab": vocab, "tiktoken": str(path), "giga_split": "gpt2", "split": "gpt2",
                "gpt2_vocab": str(vocab_json), "gpt2_merges": str(merges_txt)}
    return {"vocab": vocab, "tiktoken": str(formats.cl100k_path()), "giga_split": "gpt4", "split": "gpt4"}


class Worker:
    """One library's process, loaded, warmed and waiting for commands."""

    def __init__(self, lib: str, files_path: Path, cpu: int, root: Path = ROOT, label: str = ""):
        self.lib = label or lib  # how the report names it
        self.process = subprocess.Popen([sys.executable, "-c", WORKER, str(root), lib, str(files_path), str(cpu)],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        ready = self.process.stdout.readline().split(None, 3)
        if not ready or ready[0] != "ready":
            self.process.kill()
            sys.exit(f"{lib} did not start")
        self.digest, self.ids, self.maps = ready[1], int(ready[2]), json.loads(ready[3])

    def ask(self, what: str, amount) -> float:
        self.process.stdin.write(f"{what} {amount}\n")
        self.process.stdin.flush()
        return json.loads(self.process.stdout.readline())

    def close(self):
        self.process.stdin.write("quit 0\n")
        self.process.stdin.flush()
        self.process.wait()

    def watched(self, seconds: float, command: list[str]) -> int:
        """Calls for `seconds` with perf (`command`, to which -p PID is added) attached to
        them alone: how many calls."""
        perf = subprocess.Popen(command + ["-p", str(self.process.pid)], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        time.sleep(0.5)  # attached before the first call
        calls = self.ask("run", seconds)
        perf.send_signal(signal.SIGINT)
        perf.wait()
        return calls


def parse_stat(text: str) -> dict:
    """{event: value, or None where not supported} from perf stat's output."""
    found = {}
    for line in text.splitlines():
        parts = line.split()
        for event in COUNTERS.split(","):
            if event in parts:
                found[event] = None if "<not" in line else float(parts[0].replace(",", ""))
    return found


def instruction_marks(path: str, start: int, stop: int) -> str:
    """What a stretch of a stripped module's code does, from its instructions: enough to
    tell gigatoken's split (vector compares), key hash (crc32), probe and emit (the L1
    prefetch) apart."""
    if shutil.which("objdump") is None:
        return ""
    text = subprocess.run(["objdump", "-d", "--no-show-raw-insn", f"--start-address={start:#x}",
                           f"--stop-address={stop + 16:#x}", path], capture_output=True, text=True).stdout
    marks = Counter()
    for line in text.splitlines():
        if ":\t" not in line:
            continue
        op = line.split(":\t", 1)[1].split()[0] if line.split(":\t", 1)[1].split() else ""
        for name, prefixes in (("crc32", ("crc32",)), ("prefetcht0", ("prefetcht0",)),
                               ("prefetcht1", ("prefetcht1",)), ("vector compare", ("vpcmp",)),
                               ("bit scan", ("tzcnt", "popcnt", "blsr", "pdep", "pext")), ("call", ("call",))):
            if op.startswith(prefixes):
                marks[name] += 1
    return ", ".join(f"{name} x{n}" for name, n in marks.most_common())


def short_symbol(sym: str) -> str:
    """A C++ symbol without its template and function arguments, which make it hundreds
    of characters long; a lambda keeps its parameter list, which tells lambdas apart."""
    out, depth, i = [], 0, 0
    while i < len(sym):
        c = sym[i]
        if sym.startswith("{lambda(", i):
            end = sym.index("}", i)
            out.append(sym[i:end + 1] if depth == 0 else "")
            i = end + 1
            continue
        if c in "<(":
            depth += 1
        elif c in ">)" and depth:
            depth -= 1
        elif depth == 0:
            out.append(c)
        i += 1
    text = "".join(out).replace("std::", "").replace("unsigned long", "size_t")
    return text if len(text) <= 110 else text[:107] + "..."


# The step of the chunk loop each place is, for the places that have one: ours by
# symbol (encoder.h, split_simd.h, the bindings), gigatoken's by what its code does
# (its src/bpe/tiktoken.rs and src/pretokenize/fast/mask.rs say which loop that is).
# The first mark a place's symbol (or code) holds names its step.
STEPS = [
    ("spread_", "split: ends handed over (spread_compress, or spread_loop)"),
    ("for_each_chunk_blocks", "split: chunk starts, keys, probe and emit (one loop)"),
    # split_blocks' symbol names the encoder's lambda that takes its runs: before that mark.
    ("split_blocks", "split: chunk starts, ends handed over"),
    ("{lambda(bpe::KeyBlock", "probe and emit"),
    ("{lambda(unsigned long, unsigned long const*", "keys, buckets, prefetch"),
    ("keys_avx512", "keys, buckets, prefetch"),
    ("classify_", "split: classify"),
    ("transcode_utf8", "the str to UTF-8"),
    ("parts_to_array", "ids into numpy"),
    ("memset", "out's room cleared (make_room)"),
    ("encode_long", "merges of chunks new to the table"),
    ("encode_short", "merges of chunks new to the table"),
    ("prefetcht0", "probe and emit (probe_emit_chunk)"),
    ("crc32", "keys, hash, prefetch (phase B of fill_spans_two_phase)"),
    ("vector compare", "split: classify, chunk starts (phase A)"),
]


def step_of(place: str) -> str:
    for mark, step in STEPS:
        if mark in place:
            return f"  <- {step}"
    return ""


def load_shift(path: str, offset: int) -> int:
    """How far the code at `offset` in the file `path` sits from that offset in its
    addresses (a segment's virtual address less its file offset), as objdump numbers it."""
    if shutil.which("readelf") is None:
        return 0
    for line in subprocess.run(["readelf", "-lW", path], capture_output=True, text=True).stdout.splitlines():
        f = line.split()
        if f and f[0] == "LOAD" and int(f[1], 16) <= offset < int(f[1], 16) + int(f[4], 16):
            return int(f[2], 16) - int(f[1], 16)
    return 0


def perf_places(data: Path, maps: dict) -> list[tuple[float, str]]:
    """(percent of samples, place) for each place the samples fell, largest first. A
    place is a symbol; in a stripped module (gigatoken's) a stretch of code, sampled
    addresses less than 256 bytes apart, given as offsets into its file."""
    out = subprocess.run(["perf", "script", "-i", str(data), "-F", "ip,sym,dso"],
                         capture_output=True, text=True).stdout
    places, stripped, total = Counter(), {}, 0
    for line in out.splitlines():
        parts = line.split(None, 1)
        if len(parts) < 2:
            continue
        total += 1
        ip, rest = int(parts[0], 16), parts[1]
        dso = rest[rest.rfind("(") + 1:rest.rfind(")")] if "(" in rest else "?"
        sym = rest[:rest.rfind("(")].strip() if "(" in rest else rest.strip()
        if sym in ("[unknown]", "") and dso in maps:
            stripped.setdefault(dso, []).append(ip)
        else:
            sym = sym.split("+0x")[0]
            places[f"{Path(dso).name}: {short_symbol(sym)}{step_of(sym)}"] += 1
    for dso, ips in stripped.items():
        base, offset = maps[dso]
        shift = load_shift(dso, ips[0] - base + offset)
        ips = sorted(ip - base + offset + shift for ip in ips)
        groups, lo, prev, count = [], ips[0], ips[0], 0
        for ip in ips + [None]:
            if ip is None or ip - prev > 256:
                groups.append((lo, prev, count))
                if ip is None:
                    break
                lo, count = ip, 0
            prev = ip
            count += 1
        for lo, hi, count in groups:
            marks = instruction_marks(dso, lo, hi) if count * 200 >= total else ""
            places[f"{Path(dso).name}: code {lo:#x}-{hi:#x}" + (f" [{marks}]{step_of(marks)}" if marks else "")] += count
    return [(100.0 * n / total, place) for place, n in places.most_common()]


def profile_row(vocab: str, kind: str, args, use_perf: bool) -> list[str]:
    import bpe

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        text, warm_up = texts_for(kind)
        files = vocabulary_files(vocab, folder)
        (folder / "text.txt").write_text(text, encoding="utf-8")
        (folder / "warm_up.txt").write_text(warm_up, encoding="utf-8")
        files.update(text=str(folder / "text.txt"), warm_up=str(folder / "warm_up.txt"))
        files_path = folder / "files.json"
        files_path.write_text(json.dumps(files), encoding="utf-8")
        size = len(text.encode())
        chunks = bpe._core.count_chunks(text.encode(), files["split"])
        workers = [Worker(lib, files_path, args.cpu) for lib in ("ours", "gigatoken")]
        if args.before:  # another build of ours (built in place), as "ours before"
            workers.append(Worker("ours", files_path, args.cpu, args.before.resolve(), "ours before"))
        try:
            same = all(w.digest == workers[0].digest for w in workers)
            # Timed without perf: interleaved rounds, each a sample of about 0.3 s.
            per_call = {w.lib: [] for w in workers}
            calls = {w.lib: max(1, round(0.3 / w.ask("time", 1)[0])) for w in workers}
            fresh = {w.lib: [] for w in workers}
            for r in range(args.rounds):
                for w in (workers if r % 2 == 0 else workers[::-1]):
                    per_call[w.lib].append(w.ask("time", calls[w.lib]))
                    fresh[w.lib].append(w.ask("fresh", calls[w.lib]))
            stats, places = {}, {}
            if use_perf:
                for w in workers:
                    stat_path, data = folder / f"{w.lib}.stat", folder / f"{w.lib}.data"
                    n = w.watched(args.seconds, ["perf", "stat", "-e", COUNTERS, "-o", str(stat_path)])
                    stats[w.lib] = (parse_stat(stat_path.read_text()), n)
                    w.watched(args.seconds, ["perf", "record", "-e", "cpu-clock", "-F", "10000", "-o", str(data)])
                    places[w.lib] = perf_places(data, w.maps)
        finally:
            for w in workers:
                w.close()
    lines = ["", f"{vocab}, {kind}: {size / 1e6:.2f} MB, {chunks:,} chunks, {workers[0].ids:,} ids; "
                 f"ids equal: {'yes' if same else 'NO'}",
             f"  {'library':<11} {'ns/chunk':>9} {'MB/s':>6} {'wall ns/chunk':>14}   (CPU time of the process, and the "
             f"clock's; medians of {args.rounds} interleaved rounds, no perf)"]
    median = {lib: statistics.median(cpu for _, cpu in v) for lib, v in per_call.items()}
    wall = {lib: statistics.median(w for w, _ in v) for lib, v in per_call.items()}
    for lib, seconds in median.items():
        lines.append(f"  {lib:<11} {seconds / chunks * 1e9:>9.2f} {size / seconds / 1e6:>6.0f} "
                     f"{wall[lib] / chunks * 1e9:>14.2f}")
    for name in [lib for lib in per_call if lib != "gigatoken"]:
        ratios = [o[1] / g[1] for o, g in zip(per_call[name], per_call["gigatoken"])]
        lines.append(f"  {name} / gigatoken, CPU time: {statistics.median(ratios):.2f}x (the median of the rounds' ratios)")
    if "ours before" in per_call:
        ratios = [o[1] / b[1] for o, b in zip(per_call["ours"], per_call["ours before"])]
        lines.append(f"  ours / ours before, CPU time: {statistics.median(ratios):.3f}x")
    # A str's UTF-8, once asked for, stays on it (CPython caches it): gigatoken asks,
    # and then reads it free on every later call with the same str; ours transcodes into
    # a buffer of its own (no copy left on the str). A pipeline hands each
    # text over once, so a new str each call is the case it meets.
    fresh_median = {lib: statistics.median(v) for lib, v in fresh.items()}
    fresh_ratios = [o / g for o, g in zip(fresh["ours"], fresh["gigatoken"])]
    lines.append("  a new str each call (CPU ns/chunk): " +
                 ", ".join(f"{lib} {v / chunks * 1e9:.2f}" for lib, v in fresh_median.items()) +
                 f"; ours / gigatoken {statistics.median(fresh_ratios):.2f}x")
    for lib, (stat, n) in stats.items():
        parts = []
        for event, value in stat.items():
            if value is None:
                parts.append(f"{event} <not supported>")
            elif event == "task-clock":  # msec
                parts.append(f"task-clock {value * 1e6 / (n * chunks):.2f} ns a chunk")
            else:
                parts.append(f"{event} {value / (n * chunks):.3f} a chunk")
        lines.append(f"  perf stat, {lib} ({n} calls): " + "; ".join(parts))
    for lib, found in places.items():
        ns = median[lib] / chunks * 1e9
        lines.append(f"  {lib}: where the cpu-clock samples fell (% of samples; ns a chunk of the CPU time above)")
        for percent, place in found[:args.top]:
            lines.append(f"    {percent:5.1f}%  {percent * ns / 100:5.2f} ns  {place}")
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", default="gpt2:stories,cl100k:stories",
                        help="vocabulary:text pairs, comma-separated (gpt2 or cl100k; stories or source)")
    parser.add_argument("--rounds", type=int, default=7, help="interleaved timed rounds (default 7)")
    parser.add_argument("--seconds", type=float, default=3.0, help="seconds of calls under each perf command")
    parser.add_argument("--cpu", type=int, default=0)
    parser.add_argument("--top", type=int, default=10, help="places listed per library")
    parser.add_argument("--out", type=Path, help="also write the report to this file")
    parser.add_argument("--before", type=Path, help="the folder of another build of ours, profiled beside as 'ours before'")
    args = parser.parse_args(argv)

    use_perf = shutil.which("perf") is not None
    lines = [f"Warm encode, one CPU ({args.cpu}): ours encode_array(threads=1), gigatoken 0.10 encode; "
             + (f"perf stat and perf record -e cpu-clock -F 10000 over {args.seconds:g} s of calls each"
                if use_perf else "perf not found: timings only")]
    if args.before:
        lines.append(f"ours before: the build in {args.before}")
    print("\n".join(lines), flush=True)
    for row in args.rows.split(","):
        vocab, kind = row.split(":")
        row_lines = profile_row(vocab, kind, args, use_perf)
        print("\n".join(row_lines), flush=True)
        lines += row_lines
    if args.out:
        args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
