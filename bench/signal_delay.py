"""How long a signal waits for a long native call: the delay from a SIGALRM, whose
handler raises, to the exception, for each kind of long call on text of distinct words.

    python bpe_bench.py signal-delay         # 50 MB, the alarm 0.5 s into each call
    python bpe_bench.py signal-delay --mb 20 --after 0.3

Ctrl-C is such a signal (SIGINT, KeyboardInterrupt). Python runs a handler only once a
native call returns to it, so a call that never checks makes Ctrl-C wait for the whole
call; the core checks every 256 KB (bpe::Interrupt in csrc/interrupt.h). The words are
random letters, so few repeat and the caches do not help: encoding is at its slowest.
"""
import argparse
import signal
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bpe import BPETokenizer  # noqa: E402


def distinct_words(n_bytes: int, seed: int = 0) -> str:
    """About n_bytes of random lowercase words, 3 to 10 letters each, separated by spaces."""
    rng = np.random.default_rng(seed)
    letters = rng.integers(97, 123, size=n_bytes, dtype=np.uint8)
    spaces = np.cumsum(rng.integers(4, 12, size=n_bytes // 4))
    letters[spaces[spaces < n_bytes]] = 32
    return letters.tobytes().decode("ascii")


class Alarm(Exception):
    pass


def delay_of(call, after: float) -> float | None:
    """Seconds from a SIGALRM `after` seconds into call() to the exception its handler
    raises there; None if call() returned first."""
    def handler(signum, frame):
        raise Alarm

    previous = signal.signal(signal.SIGALRM, handler)
    try:
        start = time.perf_counter()
        signal.setitimer(signal.ITIMER_REAL, after)
        try:
            call()
        except Alarm:
            return time.perf_counter() - start - after
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        return None
    finally:
        signal.signal(signal.SIGALRM, previous)


def calls(tok: BPETokenizer, text: str) -> dict:
    """Each kind of long call on text, by name."""
    pieces = [text[k:k + 1_000_000] for k in range(0, len(text), 1_000_000)]
    return {
        "encode": lambda: tok.encode(text),
        "encode_array": lambda: tok.encode_array(text),
        "encode_batch": lambda: tok.encode_batch(pieces),
        "train": lambda: BPETokenizer.train(text, 2000, progress=False),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=50, help="megabytes of text (default 50)")
    parser.add_argument("--after", type=float, default=0.5, help="seconds into each call of the alarm (0.5)")
    args = parser.parse_args(argv)
    text = distinct_words(int(args.mb * 1e6))
    tok = BPETokenizer.train(text[:300_000], 1000, progress=False)
    for name, call in calls(tok, text).items():
        delay = delay_of(call, args.after)
        print(f"{name:13} " + ("finished before the alarm" if delay is None else f"delay {delay:.3f} s"), flush=True)


if __name__ == "__main__":
    main()
