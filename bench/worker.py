"""One library in a process of its own, as a careful user runs it: started pinned to one
CPU (as `taskset -c CPU` does, so that any thread pool it makes is sized for one core),
with nothing else loaded, its heap its own. The benchmark asks it, one request at a
time, to check its ids or to time one call; it does nothing between requests, so that
the library being timed has the core to itself.

    python -m bench.worker LIBRARY FILES.json      (started by Worker, not by hand)

Requests and answers are pickled over stdin and stdout (between this benchmark's own
processes only); the library's own printing goes to stderr.
"""
import gc
import importlib
import json
import os
import pickle
import subprocess
import sys
import time

from bench import ROOT

# A short sentence that a cold tokenizer encodes once, untimed, before its timed call:
# it sets up whatever a library sets up on first use (thread pools, compiled regexes)
# and puts hardly anything in a cache.
WARM_UP = "Once upon a time, a cat sat on a mat.\n"

# How a tokenizer is readied before the timed call on the held-out text; each starts
# from a new tokenizer (loaded untimed), except a library's kept one.
MODES = {
    "warm": "warm, the same str each round: it first encodes other text of the same kind (untimed), then the "
            "held-out text, one str object for every round (CPython keeps a str's UTF-8 on it once a library has "
            "asked for it, so such a library reads it for free from its second round on)",
    "warm_new": "warm, a new str each call: as warm, but the held-out text is a new str object for each call (made "
                "untimed), as a pipeline hands texts over: none has its UTF-8 made yet",
    "cold": "it first encodes one short sentence (untimed: thread pools, lazy tables), then the timed call, "
            "none of whose chunks any cache holds",
    "first": "the timed call is its very first",
}


class WorkerError(Exception):
    """What failed in a worker, with the library's own message."""


class Worker:
    """The benchmark's side: starts `python -m bench.worker` pinned to `cpu`."""

    def __init__(self, library: str, files_path, cpu: int | None):
        self.library = library
        pin = (lambda: os.sched_setaffinity(0, {cpu})) if cpu is not None else None
        path = [str(ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(path))
        self.process = subprocess.Popen([sys.executable, "-m", "bench.worker", library, str(files_path)],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=ROOT, env=env,
                                        preexec_fn=pin)
        self.hello = self.ask("hello")

    def ask(self, *request):
        try:
            pickle.dump(request, self.process.stdin)
            self.process.stdin.flush()
            status, answer = pickle.load(self.process.stdout)
        except (EOFError, BrokenPipeError, pickle.UnpicklingError) as error:
            raise WorkerError(f"{self.library}'s process ended (exit status {self.process.poll()}): "
                              f"{type(error).__name__}") from None
        if status != "ok":
            raise WorkerError(answer)
        return answer

    def close(self):
        if self.process.poll() is None:
            try:
                self.ask("quit")
            except WorkerError:
                pass
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def new_str(text: str) -> str:
    """The same text as a str object of its own, with no UTF-8 cached on it."""
    half = len(text) // 2
    return text[:half] + text[half:]


def as_uint32(ids) -> bytes:
    """Ids, a list or an array, as little-endian uint32 bytes: the check's one shape."""
    import numpy

    return numpy.asarray(ids, dtype=numpy.uint32).astype("<u4").tobytes()


class Server:
    """The worker's side: the library, its vocabulary's files and the texts."""

    def __init__(self, library: str, files: dict):
        from bench.peers import REGISTRY

        self.peer, self.files = REGISTRY[library], files
        self.loader = self.peer.loaders[files["name"]]
        self.module = importlib.import_module(self.peer.module)
        self.texts, self.data, self.prepared, self.kept = {}, {}, {}, None

    def text(self, name: str) -> str:
        if name not in self.texts:
            with open(self.files["texts"][name], encoding="utf-8") as f:
                self.texts[name] = f.read()
        return self.texts[name]

    def new(self):
        """A tokenizer and the seconds it took to load (a kept one: loaded once)."""
        if self.loader.kept and self.kept is not None:
            return self.kept, 0.0
        start = time.perf_counter()
        tok = self.loader.load(self.module, self.files)
        load_s = time.perf_counter() - start
        if self.loader.kept:
            self.kept = tok
        return tok, load_s

    def prepare(self, call, name: str):
        key = (id(call), name)  # by the call, not its name: a batch call and a single one may share a name
        if key not in self.prepared:
            self.prepared[key] = call.prepare(self.text(name))
        return self.prepared[key]

    def hello(self):
        return {"pid": os.getpid(), "cpus": sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                else None, "kept": self.loader.kept, "how": self.loader.how}

    def check(self, text: str, kind: str):
        """A cold tokenizer's ids for the text, for the benchmark to compare."""
        call = self.peer.call(kind)
        tok, _ = self.new()
        call.run(tok, call.prepare(WARM_UP))
        return as_uint32(call.flat(call.run(tok, self.prepare(call, text))))

    def time(self, text: str, kind: str, mode: str, warm_text: str):
        """One timed call: wall-clock and CPU seconds (this process's, all its threads),
        the load's seconds, how many ids."""
        call = self.peer.call(kind)
        prepared = self.prepare(call, text) if mode != "warm_new" else call.prepare(new_str(self.text(text)))
        tok, load_s = self.new()
        if mode in ("warm", "warm_new"):
            call.run(tok, self.prepare(call, warm_text))
        elif mode == "cold":
            call.run(tok, call.prepare(WARM_UP))
        gc.collect()
        cpu, start = time.process_time(), time.perf_counter()
        ids = call.run(tok, prepared)
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
        n = len(call.flat(ids))  # after the clock: a batch call's result made one sequence
        del ids, tok
        return {"wall_s": wall, "cpu_s": cpu, "load_s": load_s, "tokens": n}

    def split(self, text: str, pattern: str):
        """Splitting alone: the chunks of the text, counted in C++ where the core can
        (count_chunks: no Python object per chunk), else as a list of bytes."""
        import bpe

        if text not in self.data:
            self.data[text] = self.text(text).encode("utf-8")
        data = self.data[text]
        count = getattr(bpe._core, "count_chunks", None)
        gc.collect()
        cpu, start = time.process_time(), time.perf_counter()
        chunks = count(data, pattern) if count else len(bpe.pretokenize(data, pattern))
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
        return {"wall_s": wall, "cpu_s": cpu, "chunks": chunks,
                "call": "bpe._core.count_chunks" if count else "len(bpe.pretokenize(...))"}


def serve(library: str, files_path: str):
    channel = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # the library's printing goes to stderr, never into the answers
    requests = sys.stdin.buffer
    with open(files_path, encoding="utf-8") as f:
        files = json.load(f)
    try:
        server, failure = Server(library, files), None
    except Exception as error:  # reported on the first request: the row says why
        server, failure = None, f"{library} did not load: {type(error).__name__}: {str(error)[:300]}"
    while True:
        try:
            request = pickle.load(requests)
        except EOFError:
            return
        if request[0] == "quit":
            pickle.dump(("ok", None), channel)
            channel.flush()
            return
        try:
            if failure:
                raise RuntimeError(failure)
            answer = ("ok", getattr(server, request[0])(*request[1:]))
        except Exception as error:
            answer = ("error", f"{type(error).__name__}: {str(error)[:300]}")
        pickle.dump(answer, channel)
        channel.flush()


if __name__ == "__main__":
    serve(sys.argv[1], sys.argv[2])
