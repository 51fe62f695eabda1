"""The encoder's table (csrc/encoder_table.h): one per tokenizer, kept across calls, shared
by threads that read it without a lock and add to it as they go, and bounded in memory.
Whatever it holds, the ids are the reference's: on chunks met for the first time and
again, of every length around the table's limits (15 bytes inline keys, 3 ids inline,
64 bytes the longest kept), from many threads at once, after a fork, and once it is full."""
import os
import random
import string
import threading

import pytest

import bpe_reference
from bpe import BPETokenizer
from test_memory import run_child

SANITIZED = bool(os.environ.get("BPE_VARIANT"))


@pytest.fixture(scope="module")
def tok():
    text = " ".join("".join(random.Random(k).choices("abcdefgh", k=random.Random(k).randint(1, 9)))
                    for k in range(3000))
    return BPETokenizer.train(text + " the cat sat on the mat", 300)


def words(seed: int, n: int) -> list[str]:
    """Distinct-ish chunks of every length that matters to the table: 1-40 letters (keys
    inline up to 15 bytes, hashed past it), runs of spaces, punctuation, and words past
    the 64 bytes the table keeps."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        kind = rng.random()
        if kind < 0.7:
            out.append("".join(rng.choices("abcdefghij", k=rng.randint(1, 40))))
        elif kind < 0.8:
            out.append(" " * rng.randint(1, 30) + "x")
        elif kind < 0.9:
            out.append("".join(rng.choices("!?.,;:-+=*", k=rng.randint(1, 20))))
        else:
            out.append("".join(rng.choices("ab", k=rng.randint(60, 200))))
    return out


def reference(tok, text: str) -> list[int]:
    return bpe_reference.encode(text.encode(), tok.merges, pattern=tok.pattern)


def test_ids_equal_the_references_first_time_and_again(tok):
    text = " ".join(words(1, 3000))
    expected = reference(tok, text)
    fresh = BPETokenizer(tok.merges)
    assert fresh.encode_ordinary(text) == expected  # every chunk new to the table
    assert fresh.encode_ordinary(text) == expected  # every chunk found there
    assert list(fresh.encode_array(text, threads=1)) == expected


def test_each_chunk_alone_equals_the_reference_in_any_order(tok):
    # One chunk a call, each call's chunk met before or not: a found entry is never
    # another chunk's (same first 15 bytes, other length; same hash past 15 bytes).
    fresh = BPETokenizer(tok.merges)
    chunks = words(2, 400) + ["a" * 15, "a" * 16, "a" * 17, "a" * 64, "a" * 65, "ab" * 8, "ab" * 8 + "a"]
    for chunk in chunks + chunks[::-1]:
        assert fresh.encode_ordinary(chunk) == reference(tok, chunk), chunk


def test_a_text_ending_mid_key_reads_no_further(tok):
    # The last chunks of a text have fewer than 16 bytes after their start: their keys
    # must hold only their own bytes, whatever lies past the text.
    fresh = BPETokenizer(tok.merges)
    for n in range(1, 20):
        text = "abcdefghijabcdefghij"[:n]
        assert fresh.encode_ordinary(text) == reference(tok, text)
        assert fresh.encode_ordinary(text + " cat") == reference(tok, text + " cat")


def test_threads_adding_to_one_table_give_one_threads_ids(tok):
    # Many threads meet new chunks at once, so that inserts, a table growing and readers
    # run side by side (ThreadSanitizer checks the publication: .ci/variant thread).
    shared = BPETokenizer(tok.merges)
    texts = [" ".join(words(100 + k, 1500)) for k in range(8)]
    expected = [BPETokenizer(tok.merges).encode_ordinary(t) for t in texts]
    results = [None] * len(texts)

    def work(k):
        for _ in range(2):
            results[k] = shared.encode_ordinary(texts[k])

    threads = [threading.Thread(target=work, args=(k,)) for k in range(len(texts))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == expected
    assert shared.encode_batch(texts, threads=4) == expected


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_child_keeps_the_table_and_adds_to_it(tok):
    shared = BPETokenizer(tok.merges)
    seen, new = " ".join(words(7, 2000)), " ".join(words(8, 2000))
    shared.encode_ordinary(seen)
    pid = os.fork()
    if pid == 0:
        try:
            ok = shared.encode_ordinary(seen) == reference(tok, seen) and shared.encode_ordinary(new) == reference(tok, new)
            os._exit(0 if ok else 3)
        except BaseException:
            os._exit(4)
    _, status = os.waitpid(pid, 0)
    assert status == 0
    assert shared.encode_ordinary(new) == reference(tok, new)


@pytest.mark.skipif(SANITIZED, reason="memory: a sanitizer's shadow memory is counted too")
def test_the_table_stops_growing_at_its_cap():
    # 2.4 million distinct chunks, far more than the table holds (its cap, stated in
    # docs/engine.md, is 96 MB in all): memory grows by less than that, and the ids of
    # chunks met after it is full are still right.
    result = run_child("""
        import json, random
        import bpe_reference
        from bpe import BPETokenizer
        tok = BPETokenizer.train("the cat sat on the mat " * 100, 300)
        rng = random.Random(0)
        def batch(k):
            return " ".join("".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=7)) + str(k) for _ in range(100_000))
        tok.encode_array(batch(-1), threads=1)
        before = status("VmRSS:")
        for k in range(24):
            tok.encode_array(batch(k), threads=1)
        grown = status("VmRSS:") - before
        last = batch(99)
        right = list(tok.encode_array(last, threads=1)) == bpe_reference.encode(last.encode(), tok.merges)
        print(json.dumps({"grown": grown, "right": right}))
    """, timeout=600)
    assert result["right"]
    assert result["grown"] < 100 * 2**20, f"the table grew by {result['grown'] / 2**20:.0f} MB"
