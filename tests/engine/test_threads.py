"""Threads, fork and signals around the core's native calls.

Encoding one long text on several threads: a str that is not ASCII is made UTF-8 on
the threads too (each its share of the characters), and the ids must be exactly those
of one thread and of the reference, whatever kind of str it is. Then the hostile cases:
daemon threads at interpreter exit, fork while other
threads encode, and Ctrl-C during a long call. Last, the threads the process keeps
between calls.
"""
import os
import random
import signal
import string
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

import bpe
import bpe_reference
from bpe import BPETokenizer

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import signal_delay  # noqa: E402
SANITIZED = os.environ.get("BPE_VARIANT") in ("address", "thread")


def words(n, seed, letters="etaoinshrdlucmfwypvbgkjqxz"):
    rng = random.Random(seed)
    return " ".join("".join(rng.choice(letters) for _ in range(rng.randint(2, 9))) for _ in range(n))


@pytest.fixture(scope="module")
def tok():
    return BPETokenizer.train(words(20_000, 1) + " " + words(3_000, 5, "éàжщ€😀ab"), 400)


# Over a million characters, so that the threads make the UTF-8; one of each kind of
# str: Latin-1 (1 byte a character), the Basic Multilingual Plane (2), beyond it (4).
@pytest.mark.parametrize("extra", ["é", "ж€", "😀"])
@pytest.mark.parametrize("threads", [2, 3])
def test_a_long_str_on_threads_gives_one_threads_ids(tok, extra, threads):
    text = words(200_000, 2, "etaoinshrdlu" + extra)
    assert len(text) > 1 << 20 and not text.isascii()
    one = tok.encode_array(text, threads=1)
    assert np.array_equal(tok.encode_array(text, threads=threads), one)
    assert tok.count(text, threads=threads) == len(one)
    assert one.tolist() == tok._encoder.encode_array(text.encode(), (), (), 1).tolist()


def test_threads_give_the_references_ids(tok):
    text = words(3_000, 3, "etaoinshrdluжé😀")
    long_text = (text + " ") * (1 + (1 << 20) // len(text))
    ids = tok.encode_array(long_text, threads=2)
    assert ids[: 2000].tolist() == bpe_reference.encode(long_text.encode(), tok.merges)[:2000]
    assert tok.decode(ids.tolist()) == long_text


@pytest.mark.parametrize("where", [0, 700_000, -1])
def test_a_lone_surrogate_on_threads_says_where(tok, where):
    text = list(words(200_000, 4, "etaoinshrdluж"))
    where = where % len(text)
    text[where] = "\ud800"
    text = "".join(text)
    for threads in (1, 2):
        with pytest.raises(ValueError, match=f"lone surrogate at position {where}$"):
            tok.encode_array(text, threads=threads)


# A long str that is not ASCII is encoded a piece at a time, each piece made UTF-8 on the
# thread that encodes it (encode_array and count): the pieces must give the ids and the
# errors of the whole, wherever the pieces and the threads' runs are cut.
@pytest.fixture(scope="module")
def tok_with_special():
    return BPETokenizer.train(words(20_000, 1) + " " + words(3_000, 5, "éàжщ€😀ab"), 400,
                              special_tokens=["<|endoftext|>"])


def test_a_long_str_in_pieces_gives_the_ids_of_its_utf8(tok_with_special):
    tok = tok_with_special
    parts = [words(60_000, seed, "etaoinshrdlu" + extra) for seed, extra in enumerate(["é", "ж€", "😀", "ab"])]
    text = "<|endoftext|>".join(parts) + "<|endoftext|>"
    assert len(text) > 1 << 20 and not text.isascii()
    utf8 = text.encode()
    for allowed in ((), ("<|endoftext|>",)):
        expected = tok._encoder.encode_array(utf8, allowed, (), 1)
        for threads in (1, 2, 3):
            got = tok.encode_array(text, allowed_special=set(allowed), disallowed_special=(), threads=threads)
            assert np.array_equal(got, expected), (allowed, threads)
            assert tok.count(text, allowed_special=set(allowed), disallowed_special=(), threads=threads) == len(got)
    # Text with no place to cut it (no ASCII letter before a space): one piece, one run.
    wide = "жé€ " * 300_000
    assert np.array_equal(tok.encode_array(wide, threads=2), tok._encoder.encode_array(wide.encode(), (), (), 1))
    assert sys.getsizeof(text) == sys.getsizeof(text[:-1] + text[-1])  # no UTF-8 left on the str


@pytest.mark.parametrize("where", [0.1, 0.6, 0.99])
def test_a_long_str_in_pieces_refuses_a_disallowed_special_where_the_whole_would(tok_with_special, where):
    text = words(250_000, 6, "etaoinshrdluж")
    at = text.index(" ", int(len(text) * where))
    text = text[:at] + " <|endoftext|>" + text[at:]
    for threads in (1, 2):
        for call in (tok_with_special.encode_array, tok_with_special.count):
            with pytest.raises(ValueError, match="the text holds the special token '<\\|endoftext\\|>'"):
                call(text, threads=threads)
    # A lone surrogate is told first, as where the whole is made UTF-8 before the search,
    # even one after the special, in the run or piece that stopped at the special.
    late = text + "ab" + "\ud800"
    for threads in (1, 2):
        for call in (tok_with_special.encode_array, tok_with_special.count):
            with pytest.raises(ValueError, match=f"lone surrogate at position {len(late) - 1}$"):
                call(late, threads=threads)


# --- a daemon thread in a native call while the interpreter exits ------------------------

# Each script leaves a daemon thread looping over one kind of native call and lets the
# interpreter exit under it. CPython 3.11 ends such a thread with pthread_exit when it
# asks for the GIL back; inside pybind11's gil_scoped_release destructor (noexcept)
# that unwind ended the process: "terminate called without an active exception", 134.
DAEMON_SETUP = """
import threading, time, warnings, numpy as np
warnings.simplefilter("ignore", UserWarning)  # "hello world" runs out of pairs before 300: train says so
import bpe
from bpe import BPETokenizer
tok = BPETokenizer.train(["hello world"] * 10, 300)
text = "hello world " * {repeat}
wide = "h\u00e9llo w\u00f6rld " * {repeat}  # not ASCII: its UTF-8 is written into the buffer the process keeps
ids = tok.encode(text)  # no encode_array: pybind11's first look-up of numpy must happen in the thread
"""


DAEMON_CALLS = {  # the call each script loops over
    "encode": "tok.encode(text)",
    "encode_array": "tok.encode_array(text, threads=2)",
    "encode_batch": "tok.encode_batch([text[:5000]] * 200, threads=2)",
    "train": "BPETokenizer.train(text, 400, progress=False)",
    "counter": "bpe.ChunkCounter().add([text.encode()] * 2, threads=2)",
    "decode": "tok.decode(ids)",
    "count_wide": "tok.count(wide, threads=1)",
}


def daemon_script(call: str, sleep: float = 0.3) -> str:
    """A daemon thread in a native call at exit, for one kind of call."""
    return (DAEMON_SETUP.format(repeat=200_000)
            + f"threading.Thread(target=lambda: [{DAEMON_CALLS[call]} for _ in iter(int, 1)], daemon=True).start()\n"
            + f"time.sleep({sleep})\n")


def run_python(code: str, timeout: float = 60):
    env = dict(os.environ)
    if os.environ.get("BPE_VARIANT") == "thread":  # ThreadSanitizer: let forked children start threads
        env["TSAN_OPTIONS"] = env.get("TSAN_OPTIONS", "") + ":die_after_fork=0"
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout)


def test_a_daemon_thread_in_a_native_call_lets_the_interpreter_exit():
    # A daemon thread in a native call at exit, in a new interpreter.
    # (test_fifty_exits_in_a_row_under_daemon_threads has every kind of call, forked.)
    calls = ["encode", "decode", "count_wide"]
    with ThreadPoolExecutor(2) as pool:
        results = dict(zip(calls, pool.map(lambda call: run_python(daemon_script(call)), calls)))
    assert {call: (r.returncode, r.stderr[-300:]) for call, r in results.items()} == {call: (0, "") for call in calls}


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_fifty_exits_in_a_row_under_daemon_threads():
    # 50 exits, every kind of call, at several moments: one interpreter is started,
    # then forked for each exit (so that 50 of them cost seconds, not a minute), and
    # each child starts a daemon thread and exits, finalizing as any interpreter does.
    code = DAEMON_SETUP.format(repeat=50_000) + f"""
import os, sys
calls = {{name: eval("lambda: " + call) for name, call in {DAEMON_CALLS!r}.items()}}
names = sorted(calls) * 9
statuses = []
for first in range(0, 50, 5):  # five children at a time
    children = {{}}
    for k in range(first, first + 5):
        pid = os.fork()
        if pid == 0:
            call = calls[names[k]]
            threading.Thread(target=lambda: [call() for _ in iter(int, 1)], daemon=True).start()
            time.sleep((0.01, 0.03, 0.06)[k % 3])
            sys.exit(0)  # an ordinary exit: the interpreter finalizes with the thread in a call
        children[pid] = names[k]
    statuses += [(name, os.waitpid(pid, 0)[1]) for pid, name in children.items()]
print(statuses)
"""
    result = run_python(code, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    statuses = eval(result.stdout)
    assert len(statuses) == 50 and [s for s in statuses if s[1] != 0] == [], statuses


# --- fork while another thread encodes --------------------------------------------------

@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_child_forked_while_another_thread_encodes_can_encode():
    # A thread keeps adding new chunks to the shared cache (its exclusive lock held
    # often); a child forked then used to find that lock held by a thread it does not
    # have, and its first encode never returned.
    tok = BPETokenizer.train(["the cat sat on the mat, once upon a time"] * 50, 400)
    other = BPETokenizer(tok.merges)  # its own cache: the ids the child must give
    stop = threading.Event()

    def churn():
        rng = random.Random(0)
        while not stop.is_set():
            tok.encode_ordinary(" ".join("".join(rng.choices(string.ascii_lowercase, k=8)) for _ in range(2000)))
            tok.encode_array("".join(rng.choices(string.ascii_lowercase + " ", k=20000)), threads=2)

    worker = threading.Thread(target=churn, daemon=True)
    worker.start()
    forks = 50 if SANITIZED else 200
    try:
        for i in range(forks):
            time.sleep(0.003)
            text = f"fresh text {i} " + "".join(random.choices(string.ascii_lowercase, k=30))
            expected = other.encode_ordinary(text)
            pid = os.fork()
            if pid == 0:
                signal.alarm(10)  # a hung child dies here, and the test sees it
                try:
                    # (Under ThreadSanitizer a forked child may start no thread.)
                    threads = 1 if SANITIZED else 2
                    ok = tok.encode_ordinary(text) == expected and tok.encode_batch([text] * 3, threads=threads) == [
                        expected] * 3
                    os._exit(0 if ok else 3)
                except BaseException:
                    os._exit(4)
            _, status = os.waitpid(pid, 0)
            assert status == 0, f"fork {i}: the child ended with status {status} (hung, or gave other ids)"
    finally:
        stop.set()
        worker.join()


@pytest.mark.skipif(not hasattr(os, "fork") or SANITIZED, reason="needs fork; counts page faults")
def test_a_child_forked_while_another_thread_has_the_utf8_buffer_gets_it_back():
    # The process lends one buffer for a str's UTF-8 to one call at a time. A thread that
    # had it when the process forked is not in the child, so the child takes it back;
    # else every call there would fault in fresh pages for its own room.
    import resource
    tok = BPETokenizer.train(["the cat sat on the mat, once upon a time"] * 50, 400)
    wide = "h\u00e9llo w\u00f6rld " * 1_000_000  # 12 MB of UTF-8
    tok.count(wide, threads=1)
    stop = threading.Event()
    worker = threading.Thread(target=lambda: [tok.count(wide, threads=1) for _ in iter(stop.is_set, True)])
    worker.start()
    faults = []
    try:
        for _ in range(3):
            time.sleep(0.05)
            reader, writer = os.pipe()
            pid = os.fork()
            if pid == 0:
                tok.count(wide, threads=1)  # the first call may copy the buffer's pages (copy on write)
                before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
                for _ in range(3):
                    tok.count(wide, threads=1)
                os.write(writer, str(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before).encode())
                os._exit(0)
            os.close(writer)
            faults.append(int(os.read(reader, 100)))
            os.close(reader)
            assert os.waitpid(pid, 0)[1] == 0
    finally:
        stop.set()
        worker.join()
    # Room of its own for 12 MB is about 3,000 pages a call.
    assert min(faults) < 1000, faults


# --- Ctrl-C during a long native call ---------------------------------------------------

@pytest.mark.skipif(SANITIZED, reason="timing: the sanitizers make the calls many times slower")
def test_a_signal_stops_a_long_native_call_soon_and_leaves_the_tokenizer_whole():
    # Each call took seconds on 50 MB before it noticed the alarm (bpe_bench.py signal-delay
    # prints the delays); now each kind stops within a fraction of a second.
    text = signal_delay.distinct_words(20_000_000)
    tok = BPETokenizer.train(text[:300_000], 1000, progress=False)
    wide = text[:-1] + "é"
    calls = {**signal_delay.calls(tok, text),
             "encode_ordinary": lambda: tok.encode_ordinary(text),
             "encode_with_offsets": lambda: tok.encode_with_offsets(text),
             # Not ASCII: made UTF-8 a piece at a time on the threads that encode it.
             "encode_array, a str not ASCII": lambda: tok.encode_array(wide, threads=2),
             "count, a str not ASCII": lambda: tok.count(wide, threads=2),
             # The same bytes five times: counting 20 MB once can end before the alarm.
             "counter": lambda: bpe.ChunkCounter().add([text.encode()] * 5, threads=2)}
    delays = {name: signal_delay.delay_of(call, after=0.2) for name, call in calls.items()}
    # (The message names the calls that missed first: pytest cuts a long dict short.)
    missed = {name: d for name, d in delays.items() if d is None or d >= 2.0}
    assert not missed, (missed, delays)
    # The caches kept nothing half-made: the ids are those of a tokenizer never interrupted.
    sample = text[:500_000]
    assert tok.encode(sample) == BPETokenizer(tok.merges).encode(sample)
    assert tok.encode_batch([sample[:1000], sample]) == [tok.encode(sample[:1000]), tok.encode(sample)]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
@pytest.mark.skipif(SANITIZED, reason="timing: the sanitizers make the calls many times slower")
def test_a_signal_stops_a_long_call_in_a_child_forked_from_another_thread():
    # The core knows Python's main thread (the one whose long calls check for signals)
    # from the threading module at import, and from a fork: a child forked from another
    # thread has that thread as its main one. Known only from the import, the child's
    # long call would never check, and the alarm would wait for the call's end.
    code = f"""
import os, sys, threading, time
sys.path.insert(0, {str(ROOT / "bench")!r})
import signal_delay
from bpe import BPETokenizer
text = signal_delay.distinct_words(20_000_000)
tok = BPETokenizer.train(text[:300_000], 500, progress=False)
def forked():
    pid = os.fork()
    if pid == 0:
        tok.encode(text)  # the table warmed, as for the calls below
        start = time.perf_counter()
        tok.encode(text)
        whole = time.perf_counter() - start
        print(whole, signal_delay.delay_of(lambda: tok.encode(text), after=0.05), flush=True)
        os._exit(0)
    statuses.append(os.waitpid(pid, 0)[1])
statuses = []
worker = threading.Thread(target=forked)
worker.start()
worker.join()
print(statuses)
"""
    result = run_python(code, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    times, statuses = result.stdout.split("\n")[:2]
    whole, delay = times.split()
    assert statuses == "[0]" and delay != "None" and float(delay) < float(whole) / 3, result.stdout


@pytest.mark.skipif(SANITIZED, reason="timing: the sanitizers make the calls many times slower")
@pytest.mark.parametrize("how", ["add_counts", "merge"])
def test_a_signal_stops_adding_counts_soon_and_adds_none_of_them(how):
    # Adding millions of counts took the whole call before it noticed the alarm (about a
    # second on 6 M distinct chunks); now it stops within a few milliseconds, before it has
    # added any count, so the counter is as it was.
    counted = bpe.ChunkCounter()
    counted.add(signal_delay.distinct_words(20_000_000).encode(), threads=2)  # about 2 M distinct chunks
    buffers = counted.counts()

    def adding_to(target):
        if how == "add_counts":
            return lambda: target.add_counts(*buffers, threads=2)
        return lambda: target.merge(counted, threads=2)

    def seconds(call):
        start = time.perf_counter()
        call()
        return time.perf_counter() - start

    whole = min(seconds(adding_to(bpe.ChunkCounter())) for _ in range(2))
    target = bpe.ChunkCounter()
    target.add(b"hello world")
    before = target.counts()
    # Without the check, the alarm waited for the rest of the call: 0.9 of it.
    delay = signal_delay.delay_of(adding_to(target), after=whole / 10)
    assert delay is not None and delay < whole / 2, (delay, whole)
    after = target.counts()
    assert after[0] == before[0] and after[2].tolist() == before[2].tolist()


# --- how many threads a call starts -------------------------------------------------------
#
# threads=0, the default everywhere, means as many threads as the text's size pays for
# (bpe._core.threads_for, the one rule): none but the caller's below two
# BYTES_PER_THREAD of text, a batch's texts counted together. Nothing here is timed:
# the core counts the threads it lends its calls (threads_lent).
PER_THREAD = bpe._core.BYTES_PER_THREAD


def lent(call):
    before = bpe._core.threads_lent()
    call()
    return bpe._core.threads_lent() - before


def test_threads_for_is_one_below_two_shares_then_one_per_share_up_to_the_cores():
    threads_for = bpe._core.threads_for
    cores = min(os.cpu_count() or 1, bpe.MAX_THREADS)
    for size in (0, 1, 220, PER_THREAD, 2 * PER_THREAD - 1):
        assert threads_for(size) == 1
    assert threads_for(2 * PER_THREAD) == min(2, cores)
    assert threads_for(5 * PER_THREAD + 7) == min(5, cores)
    assert threads_for(10**15) == cores
    for asked in (1, 2, 7, bpe.MAX_THREADS):
        assert threads_for(220, asked) == asked  # a number asked for is a number given
    with pytest.raises(ValueError, match="threads must be 0"):
        threads_for(220, -1)


def short_calls(tok, text):
    """Every call that encodes or counts a text, with the default threads."""
    return {
        "encode_array": lambda: tok.encode_array(text),
        "count": lambda: tok.count(text),
        "encode_to_numpy": lambda: tok.encode_to_numpy(text),
        "encode_batch": lambda: tok.encode_batch([text] * 3),
        "encode_ordinary_batch": lambda: tok.encode_ordinary_batch([text] * 3),
        "encode_batch_flat": lambda: tok.encode_batch_flat([text] * 3),
        "encode_ordinary_batch_flat": lambda: tok.encode_ordinary_batch_flat([text] * 3),
        "ChunkCounter.add": lambda: bpe.ChunkCounter().add(text),
        "ChunkCounter.add bytes": lambda: bpe.ChunkCounter().add([text.encode()] * 3),
        "train": lambda: bpe.train(text.encode(), 5),
        "BPETokenizer.train": lambda: BPETokenizer.train([text] * 3, 270),
    }


@pytest.mark.parametrize("text", [words(40, 7), words(40, 8, "etaoinжé😀")], ids=["ascii", "not ascii"])
def test_a_short_call_with_the_default_threads_is_lent_no_thread(tok, text):
    assert len(text.encode()) * 3 < 2 * PER_THREAD
    for name, call in short_calls(tok, text).items():
        assert lent(call) == 0, name
    # The count works: asked for, threads are lent for the same short text.
    assert lent(lambda: tok.encode_array(text, threads=2)) == 1
    assert lent(lambda: tok.encode_batch([text] * 3, threads=3)) == 2


@pytest.mark.skipif(bpe._core.threads_for(10**15) < 2, reason="one core: the rule never lends a call a thread")
def test_a_long_text_or_a_batch_long_together_is_lent_threads(tok):
    text = words(3 * PER_THREAD // 6, 9)
    assert len(text) >= 2 * PER_THREAD
    assert lent(lambda: tok.encode_array(text)) >= 1
    assert lent(lambda: tok.count(text)) >= 1
    # A batch of texts each far below the size: their bytes together decide.
    batch = [words(40, seed) for seed in range(600)]
    assert max(map(len, batch)) < PER_THREAD and sum(map(len, batch)) >= 2 * PER_THREAD
    assert lent(lambda: tok.encode_ordinary_batch_flat(batch)) >= 1
    assert lent(lambda: tok.encode_batch(batch[:5])) == 0


# Sizes around the rule's steps, and far beyond them (several pieces a thread), ASCII
# and not, with special tokens among the text: the ids are one thread's whatever the
# threads, and count agrees.
@pytest.mark.parametrize("size", [PER_THREAD - 1, 2 * PER_THREAD - 1, 2 * PER_THREAD, 2 * PER_THREAD + 1,
                                  3 * PER_THREAD + 5, 9 * PER_THREAD])
@pytest.mark.parametrize("letters", ["etaoinshrdlu", "etaoinжé😀"])
def test_ids_are_one_threads_whatever_the_threads(size, letters):
    tok = special_tok()
    text = words(size // 5, size, letters)
    text = "<|endoftext|>".join(text[k:k + size // 7] for k in range(0, len(text), size // 7))[:size]
    one = tok.encode_array(text, threads=1, allowed_special="all")
    assert one.tolist() == tok.encode(text, allowed_special="all")
    for threads in (0, 2, 3, 5):
        assert np.array_equal(tok.encode_array(text, threads=threads, allowed_special="all"), one), threads
        assert tok.count(text, threads=threads, allowed_special="all") == len(one), threads
    flat, offsets = tok.encode_batch_flat([text[:size // 3], "", text], threads=0, allowed_special="all")
    assert np.array_equal(flat[offsets[2]:], one)


_special_tok = []


def special_tok():
    if not _special_tok:
        _special_tok.append(BPETokenizer.train(words(20_000, 1) + " " + words(3_000, 5, "éжщ€😀ab"), 400,
                                               special_tokens=["<|endoftext|>"]))
    return _special_tok[0]


def test_a_regex_pattern_on_threads_gives_one_threads_ids():
    # A regex has no certain places to cut: its long segments stay whole, a piece each.
    base = special_tok()
    tok = BPETokenizer(base.merges, pattern=r"\s?\w+|\s+|[^\s\w]+", special_tokens=["<|endoftext|>"])
    text = "<|endoftext|>".join(words(30_000, 11, "etaoinжé") for _ in range(3))
    one = tok.encode_array(text, threads=1, allowed_special="all")
    assert one.tolist() == tok.encode(text, allowed_special="all")
    for threads in (0, 2, 4):
        assert np.array_equal(tok.encode_array(text, threads=threads, allowed_special="all"), one)
        assert tok.count(text, threads=threads, allowed_special="all") == len(one)


# --- memory kept between calls ---------------------------------------------------------


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="reads /proc/self/statm")
@pytest.mark.skipif(SANITIZED, reason="the sanitizers keep freed memory in quarantine")
def test_memory_held_between_calls_stays_bounded(tok):
    # A str that is not ASCII is written as UTF-8 into a buffer the process keeps; a
    # call that writes more than the bound (64 MB, docs/engine.md) gives it back.
    text = ("é " + "abc " * 5) * 2_000_000  # 22 M characters, 24 MB of UTF-8
    for _ in range(4):  # the same calls as below, so that each path has made what it keeps
        tok.encode_array(text, threads=2)
        tok.count(text, threads=1)
    settled = rss()
    for _ in range(6):
        tok.encode_array(text, threads=2)
        tok.count(text, threads=1)
    assert rss() - settled < 8 << 20, "memory grew from call to call"
    huge = text * 3  # 72 MB of UTF-8: past the bound
    before = rss()
    tok.count(huge)
    assert rss() - before < 16 << 20, "the UTF-8 of a str past the bound was kept"


def test_the_search_for_disallowed_specials_is_lent_no_thread_for_a_short_text(tok):
    # The search runs on the call's threads, but only as many as its text has
    # BYTES_PER_THREAD for: asked for 4, a short text is lent what its encode is lent.
    with_special = BPETokenizer(tok.merges, special_tokens=["<|endoftext|>"])
    text = words(40, 7)
    for call in (with_special.count, with_special.encode_array):
        assert lent(lambda: call(text, threads=4)) == lent(lambda: call(text, threads=4, disallowed_special=()))


# --- the threads the process keeps -------------------------------------------------------
#
# A call's other threads are kept between calls (ThreadPool in csrc/parallel.h): started
# by the first call that asks for them, woken by the next, never started again.

def kept_threads() -> set:
    """The ids of the process's threads named as the kept ones are."""
    kept = set()
    for tid in os.listdir("/proc/self/task"):
        try:
            if (Path("/proc/self/task") / tid / "comm").read_text().strip() == "bpe worker":
                kept.add(tid)
        except FileNotFoundError:  # a thread of another test, ending meanwhile
            pass
    return kept


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="reads /proc/self/task")
def test_threads_are_kept_between_calls_not_started_for_each(tok):
    text = words(40_000, 12)
    one = tok.encode_array(text, threads=1)
    assert np.array_equal(tok.encode_array(text, threads=3), one)
    kept, threads = bpe._core.threads_kept(), kept_threads()
    assert kept >= 2 and len(threads) == kept
    for threads_asked in (2, 3, 3, 2, 3):
        assert np.array_equal(tok.encode_array(text, threads=threads_asked), one)
        assert tok.count(text, threads=threads_asked) == len(one)
    assert bpe._core.threads_kept() == kept and kept_threads() == threads  # the same threads, none new


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="reads /proc/self/task")
def test_the_kept_threads_block_signals_so_that_python_gets_them(tok):
    tok.encode_array(words(40_000, 13), threads=2)
    workers = kept_threads()
    assert workers
    for tid in workers:
        status = (Path("/proc/self/task") / tid / "status").read_text()
        blocked = int(status.split("SigBlk:")[1].split()[0], 16)
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGALRM, signal.SIGCHLD):
            assert blocked >> (sig - 1) & 1, (tid, sig)


def test_calls_from_several_python_threads_share_the_kept_threads(tok):
    # More calls than kept threads at once: a call whose tasks no kept thread is free to
    # take runs them itself, and every call gets its own text's ids.
    texts = [words(6_000, 100 + k, "etaoinshrdluжé") for k in range(8)]
    expected = [tok.encode_array(t, threads=1) for t in texts]

    def encode(k):
        return all(np.array_equal(tok.encode_array(texts[k], threads=2 + k % 3), expected[k]) for _ in range(10))

    with ThreadPoolExecutor(6) as pool:
        assert list(pool.map(encode, range(len(texts)))) == [True] * len(texts)


@pytest.mark.skipif(SANITIZED, reason="timing: the sanitizers make the calls many times slower")
def test_a_signal_during_calls_from_two_python_threads_raises_its_own_exception():
    # With another thread's call holding some of the kept threads, a call's caller runs
    # tasks that no kept thread took, and polls for signals in them; the exception its
    # handler raises must come out, not the Stopped of the tasks it stopped.
    text = signal_delay.distinct_words(8_000_000)
    tok = BPETokenizer.train(text[:300_000], 500, progress=False)
    stop = threading.Event()

    def busy():
        while not stop.is_set():
            tok.encode_array(text[:2_000_000], threads=2)

    other = threading.Thread(target=busy, daemon=True)
    other.start()
    outcomes = []
    try:
        for i in range(30):
            try:
                delay = signal_delay.delay_of(lambda: tok.encode_array(text, threads=4), after=0.02 + 0.01 * (i % 5))
                outcomes.append("raised" if delay is not None else "returned first")
            except Exception as e:  # anything but the handler's Alarm
                outcomes.append(f"{type(e).__name__}: {e}")
    finally:
        stop.set()
        other.join()
    assert set(outcomes) <= {"raised", "returned first"} and "raised" in outcomes, outcomes


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_keeps_threads_of_its_own(tok):
    # The parent's kept threads are not in the child: the child starts with none, and
    # its first call on threads starts its own.
    text = words(40_000, 14)
    one = tok.encode_array(text, threads=1)
    tok.encode_array(text, threads=2)
    assert bpe._core.threads_kept() >= 1
    pid = os.fork()
    if pid == 0:
        signal.alarm(20)  # a hung child dies here, and the test sees it
        try:
            none_at_first = bpe._core.threads_kept() == 0
            threads = 1 if SANITIZED else 2  # (under ThreadSanitizer a forked child may start no thread)
            same = np.array_equal(tok.encode_array(text, threads=threads), one)
            own = bpe._core.threads_kept() == threads - 1
            os._exit(0 if none_at_first and same and own else 3)
        except BaseException:
            os._exit(4)
    assert os.waitpid(pid, 0)[1] == 0
