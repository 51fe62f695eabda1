"""Measuring: timing in interleaved rounds, one core, the machine and the versions, and
the report (what a subcommand prints, and the JSON it saves)."""
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from bench import RESULTS, ROOT


def import_bpe():
    try:
        import bpe
        bpe.load_core()
    except ImportError as error:
        sys.exit(f"bpe_bench.py: {error}")  # bpe's message names the build command (bpe.BUILD_COMMAND)
    return bpe


def optional_import(name: str, report=None):
    try:
        return __import__(name)
    except ImportError:
        if report:
            report.note(f"{name} is not installed, so it is left out (pip install -r requirements-bench.txt)")
        return None


@dataclass
class Contender:
    """One library's way of doing the task: a row of a table."""
    name: str  # as printed: "tiktoken encode_ordinary"
    library: str  # its distribution, for the versions: "tiktoken"
    make: Callable[[], Any]  # untimed, before each timed call: what the call works on (a tokenizer, say)
    run: Callable[[Any], Any]  # the call to time, given what make made

    def once(self):
        return self.run(self.make())


def fresh(tok):
    """A new tokenizer equal to tok: its encoder's cache starts empty, as a new user's."""
    return type(tok)(tok.merges, pattern=tok.pattern, special_tokens=tok.special_tokens, token_ids=tok.token_ids)


def interleaved(contenders: list[Contender], repeats: int, first: dict | None = None,
                clock: Callable[[], float] = time.perf_counter, cpu: dict | None = None) -> dict[str, list[float]]:
    """Seconds of each contender's call, `repeats` rounds. Each round runs every
    contender once, starting one further along the list each time, so that a burst of
    load from elsewhere on the machine, or a place in the round, falls on all alike.
    `first`, if given, receives each contender's result of the first round; `clock`,
    the seconds counted (the wall-clock's, or time.process_time for the CPU's); `cpu`,
    if given, receives each call's CPU seconds too (the whole process: every thread),
    by contender, in the same order."""
    samples = {c.name: [] for c in contenders}
    if cpu is not None:
        cpu.update({c.name: [] for c in contenders})
    for r in range(repeats):
        for c in contenders[r % len(contenders):] + contenders[:r % len(contenders)]:
            obj = c.make()
            gc.collect()
            cpu_start, start = time.process_time(), clock()
            result = c.run(obj)
            samples[c.name].append(clock() - start)
            if cpu is not None:
                cpu[c.name].append(time.process_time() - cpu_start)
            if first is not None and r == 0:
                first[c.name] = result
            del result, obj
    return samples


def affinity_supported() -> bool:
    return hasattr(os, "sched_setaffinity") and Path("/proc/self/task").exists()


def count_down(n: int) -> int:
    while n:
        n -= 1
    return n


def parallel_ceiling(processes: int, repeats: int) -> dict:
    """How much more work this machine's cores do together than one alone, now: a plain
    Python loop (branchy code, like an encoder's) in `processes` processes at once
    against one. On a virtual machine whose cores share a physical core's execution
    units (as hyperthreads do) this is well under `processes`, and no program beats it."""
    import multiprocessing

    n = 5_000_000
    with multiprocessing.Pool(processes) as pool:
        pool.map(count_down, [1000] * processes)  # start the processes before timing
        samples = interleaved([Contender("one", "", lambda: [n], lambda work: pool.map(count_down, work)),
                               Contender("all", "", lambda: [n] * processes, lambda work: pool.map(count_down, work))],
                              repeats)
    one, every = statistics.median(samples["one"]), statistics.median(samples["all"])
    return {"processes": processes, "ratio": processes * one / every, "one_s": samples["one"], "all_s": samples["all"]}


def peak_memory_mb(program: str, *args) -> float:
    """The peak resident memory (VmHWM), in MB, of a fresh Python process that runs
    `program` with `args` and then prints its own VmHWM. (getrusage's ru_maxrss would
    not do: Linux carries it over from the parent through fork and exec.)"""
    program += "\nprint([l for l in open('/proc/self/status') if l.startswith('VmHWM')][0].split()[1])\n"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", program, *map(str, args)], capture_output=True, text=True, env=env)
    if out.returncode != 0:
        raise RuntimeError(f"the measuring process failed:\n{out.stderr[-2000:]}")
    return int(out.stdout.split()[-1]) / 1024


def median(samples: list[float]) -> float:
    return statistics.median(samples)


def machine() -> dict:
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        cpu = platform.processor()
    memory = None
    try:
        memory = int(next(l for l in Path("/proc/meminfo").read_text().splitlines()
                          if l.startswith("MemTotal")).split()[1]) / 2**20
    except (OSError, StopIteration):
        pass
    return {"cores": os.cpu_count(),
            "cores_allowed": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
            "cpu_model": cpu, "memory_gib": round(memory, 1) if memory else None,
            "platform": platform.platform(), "python": platform.python_version()}


def load_average():
    return list(os.getloadavg()) if hasattr(os, "getloadavg") else None


def load_now() -> str:
    """The 1-minute load average as text, for a measurement's report ("unknown" where the
    OS gives none)."""
    return f"{os.getloadavg()[0]:.2f}" if hasattr(os, "getloadavg") else "unknown"


def pin_to_one_cpu() -> None:
    """This process on the first CPU it may run on, where the OS lets it choose: a
    one-core measurement's calls then never move between cores."""
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})


def load_line(before: str) -> str:
    """A measurement's last line: the load average before it (load_now) and now."""
    return f"load average (1 min) {before} before, {load_now()} after, {os.cpu_count()} CPUs"


def save_lines(subcommand: str, argv: list | None, lines: list) -> None:
    """What a measurement printed, saved as RESULTS/SUBCOMMAND.txt under the command that
    made it (argv: its arguments, None for the process's own)."""
    command = f"python bpe_bench.py {subcommand} " + " ".join(argv if argv is not None else sys.argv[1:])
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{subcommand}.txt").write_text(command.rstrip() + "\n" + "\n".join(lines) + "\n", encoding="utf-8")


def versions() -> dict:
    from importlib import metadata

    found = {}
    from bench.peers import PACKAGES

    for name in ("numpy", *PACKAGES):
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    bpe = import_bpe()
    found["bpe"] = bpe.__version__
    try:
        git = ["git", "-C", str(ROOT)]
        commit = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                check=True).stdout.strip()
        # Changed files, but the results this benchmark writes, make the commit "dirty".
        changed = subprocess.run([*git, "status", "--porcelain", "--untracked-files=no", "--", ".",
                                  ":(exclude)docs/results"], capture_output=True, text=True, check=True).stdout
        commit += "-dirty" if changed.strip() else ""
    except (OSError, subprocess.CalledProcessError):
        commit = None
    found["bpe_commit"] = commit
    return found


class Report:
    """What a subcommand prints, line by line, and the data it measured; saved as
    RESULTS/bench-NAME.txt and RESULTS/bench-NAME.json."""

    def __init__(self, section: str, args):
        self.section, self.lines = section, []
        self.data = {"section": section, "command": "python " + " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
                     "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "machine": machine(), "versions": versions(),
                     "repeats": args.repeats, "load_average_start": load_average(), "notes": []}
        m = self.data["machine"]
        self.say(f"bpe_bench.py {section}: {m['cores']} cores ({m['cpu_model']}), Python {m['python']}, "
                 f"bpe {self.data['versions']['bpe']} ({self.data['versions']['bpe_commit']}); "
                 f"load average {', '.join(f'{x:.1f}' for x in self.data['load_average_start'] or [])}")

    def say(self, line: str = ""):
        print(line, flush=True)
        self.lines.append(line)

    def note(self, line: str):
        if line not in self.data["notes"]:
            self.data["notes"].append(line)
            self.say(f"note: {line}")

    def save(self, out: Path | None):
        self.data["load_average_end"] = load_average()
        self.data["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        if out is None:
            return
        out.mkdir(parents=True, exist_ok=True)
        json_path, text_path = out / f"bench-{self.section}.json", out / f"bench-{self.section}.txt"
        json_path.write_text(json.dumps(self.data, indent=1) + "\n", encoding="utf-8")
        text_path.write_text("\n".join(self.lines) + "\n", encoding="utf-8")
        print(f"saved {json_path} and {text_path.name}")


def timing(samples: list[float]) -> dict:
    return {"median_s": median(samples), "samples_s": samples}



_temporaries = []


def write_temporary(text: str) -> Path:
    """The text in a temporary file, removed when the benchmark ends."""
    f = tempfile.NamedTemporaryFile("w", encoding="utf-8", suffix=".txt", delete=False)
    with f:
        f.write(text)
    _temporaries.append(Path(f.name))
    return Path(f.name)



@dataclass
class Column:
    """A column of a Table: the row's key (in the JSON too), its header, its width and
    how a number in it is printed."""
    key: str
    header: str
    width: int = 9  # below 0: left-aligned, that wide
    format: str = ".1f"  # for numbers; text is printed as it is

    def cell(self, value) -> str:
        if value is None:
            text = "-"
        elif isinstance(value, str):
            text = value
        else:
            text = format(value, self.format)
        return f"{text:<{-self.width}}" if self.width < 0 else f"{text:>{self.width}}"


class Table:
    """A table that is printed and recorded in the same call: row() prints one line and
    keeps the values it was given, unformatted, as that row's JSON; done() adds the
    table to the report's data["tables"]."""

    def __init__(self, report, title: str, columns: list[Column], **facts):
        self.report, self.columns = report, columns
        self.data = {"title": title, **facts, "rows": []}
        report.say(title)
        report.say(" ".join(Column(c.key, "", c.width).cell(c.header) for c in columns).rstrip())

    def row(self, **values) -> dict:
        """Print the columns' values (a missing one as "-") and record all of them."""
        self.report.say(" ".join(c.cell(values.get(c.key)) for c in self.columns).rstrip())
        self.data["rows"].append(values)
        return values

    def line(self, text: str):
        """A line under the table: printed, and kept in its JSON's "lines"."""
        self.report.say(text)
        self.data.setdefault("lines", []).append(text)

    def done(self) -> dict:
        self.report.say()
        self.report.data.setdefault("tables", []).append(self.data)
        return self.data


def remove_temporaries():
    for path in _temporaries:
        path.unlink(missing_ok=True)
    _temporaries.clear()
