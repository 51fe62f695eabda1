"""The encoder's table (csrc/encoder_table.h): one per tokenizer, kept across calls, shared
by threads that read it without a lock and add to it as they go, and bounded in memory.
Whatever it holds, the ids are the reference's: on chunks met for the first time and
again, of every length around the table's limits (15 bytes inline keys, 3 ids inline,
64 bytes past which chunks take a share of the pool, 4,096 the longest kept), from many
threads at once, after a fork, and once it is full. Long chunks (lines of one mark) are
kept too: repeated, they encode about as fast as ordinary text."""
import os
import random
import string
import threading
import time

import pytest

import bpe_reference
from bpe import BPETokenizer
from test_memory import run_child, run_in_tier
from vocabularies import SHARED_DATA, cl100k_path

SANITIZED = bool(os.environ.get("BPE_VARIANT"))


@pytest.fixture(scope="module")
def tok():
    text = " ".join("".join(random.Random(k).choices("abcdefgh", k=random.Random(k).randint(1, 9)))
                    for k in range(3000))
    return BPETokenizer.train(text + " the cat sat on the mat", 300)


def words(seed: int, n: int) -> list[str]:
    """Distinct-ish chunks of every length that matters to the table: 1-40 letters (keys
    inline up to 15 bytes, hashed past it), runs of spaces, punctuation, and words past
    the 64 bytes past which chunks take a share of the pool."""
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


def test_chunks_told_apart_by_their_length_alone_keep_their_own_ids(tok):
    # Runs of NUL bytes: each run is a chunk whose key is all zeros but its length byte,
    # made for a whole run of chunks at once (eight at a time in the AVX-512 tier,
    # KeyBlock::set_run); a length wrong by one would find another run's ids. Between
    # them, words of 1-20 letters, whose keys the length's masks cut.
    rng = random.Random(9)
    pieces = ["\x00" * rng.randint(1, 20) + "".join(rng.choices("abc", k=rng.randint(1, 20))) for _ in range(2000)]
    text = " ".join(pieces)
    expected = reference(tok, text)
    fresh = BPETokenizer(tok.merges)
    assert fresh.encode_ordinary(text) == expected  # keyed and merged
    assert list(fresh.encode_array(text, threads=1)) == expected  # found by their keys


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


# --- long chunks: lines of one mark, kept like any other chunk ------------------------

# Around each limit: 64 (past it, a share of the pool), 4,096 (the longest kept), and past.
LONG = [63, 64, 65, 66, 100, 300, 1000, 4095, 4096, 4097, 10_000]


def long_chunks(n: int) -> list[str]:
    """Chunks of n bytes under the default rule: a run of one mark, a run of letters, and
    two of the same length and first bytes that differ only at the end (one key each)."""
    return ["=" * n, "-" * n, ("ab" * n)[:n], "a" * (n - 1) + "b", "a" * (n - 1) + "c"]


def test_long_chunks_of_every_length_around_the_limits_give_the_references_ids(tok):
    fresh = BPETokenizer(tok.merges)
    for n in LONG:
        for chunk in long_chunks(n):
            expected = reference(tok, chunk)
            assert fresh.encode_ordinary(chunk) == expected, n  # new to the table
            assert fresh.encode_ordinary(chunk) == expected, n  # found there (or merged again, past the longest)
            assert list(fresh.encode_array(chunk, threads=1)) == expected, n
    text = " ".join(chunk for n in LONG for chunk in long_chunks(n)) * 3
    assert BPETokenizer(tok.merges).encode_ordinary(text) == reference(tok, text)
    assert fresh.encode_ordinary(text) == reference(tok, text)


def test_long_lines_give_tiktokens_ids():
    tiktoken = pytest.importorskip("tiktoken", reason="needs tiktoken")
    path = cl100k_path()
    ours = BPETokenizer.from_tiktoken(path)
    theirs = tiktoken.Encoding("cl100k", pat_str=bpe_formats().TIKTOKEN_PATTERNS["gpt4"],
                               mergeable_ranks=bpe_formats().read_tiktoken(path), special_tokens={})
    rng = random.Random(5)
    lines = [mark * n + "\n" for n in LONG for mark in "=-*_#~"]
    text = "".join(rng.choice(lines) + rng.choice(["", "# Title\n", "Some text here.\n"]) for _ in range(3000))
    for _ in range(2):
        assert ours.encode_ordinary(text) == theirs.encode_ordinary(text)


def bpe_formats():
    from bpe import formats
    return formats


def mb_per_s(encode, text: str, rounds: int = 5) -> float:
    """MB/s of the best of rounds, in this thread's CPU time (which other work on a
    shared machine inflates far less than the wall clock's)."""
    best = float("inf")
    for _ in range(rounds):
        started = time.thread_time()
        encode(text)
        best = min(best, time.thread_time() - started)
    return len(text.encode()) / 1e6 / max(best, 1e-9)


@pytest.mark.skipif(SANITIZED, reason="speed: a sanitizer's checks slow every path unequally")
def test_repeated_long_chunks_encode_at_least_half_as_fast_as_stories():
    """The floor: lines of one mark repeated (Markdown's rules, source's separators),
    each line one chunk of 65, 100 or 300 bytes, or a mix of many distinct lengths,
    encode warm on one thread at least half as fast as the held-out stories."""
    stories_path = SHARED_DATA / "tinystories" / "valid-sample.txt"
    if not stories_path.exists():
        pytest.skip(f"{stories_path} is missing (set BPE_SHARED_DATA)")
    tok = BPETokenizer.from_tiktoken(cl100k_path())
    stories = stories_path.read_text(encoding="utf-8")[:400_000]
    rng = random.Random(6)
    texts = {n: ("=" * (n - 1) + "\n") * (200_000 // n) for n in (65, 100, 300)}
    texts["mixed"] = "".join(rng.choice("=-*_#~") * rng.randint(65, 400) + "\n" for _ in range(1000))
    for how, encode in (("lists", tok.encode_ordinary), ("arrays", lambda t: tok.encode_array(t, threads=1))):
        encode(stories)
        ordinary = mb_per_s(encode, stories)
        for name, text in texts.items():
            encode(text)  # warm: other text of the same kind (the lines of this one)
            rate = mb_per_s(encode, text)
            assert rate >= 0.5 * ordinary, f"{how}, {name}: {rate:.0f} MB/s against {ordinary:.0f} on stories"


@pytest.mark.skipif(SANITIZED, reason="memory: a sanitizer's shadow memory is counted too")
def test_millions_of_distinct_long_chunks_keep_the_table_within_its_cap():
    # 2 million distinct chunks of 65-164 letters: the long ones take a share of the
    # pool and stop there; the whole table stays within its cap (96 MB, docs/engine.md),
    # and the ids after are still right, of long chunks and short.
    result = run_child("""
        import json, random
        import bpe_reference
        from bpe import BPETokenizer
        tok = BPETokenizer.train("the cat sat on the mat " * 100, 300)
        rng = random.Random(0)
        letters = "".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=1 << 21))
        def batch(k):
            at = rng.randrange(1 << 20)
            return " ".join(letters[at + i: at + i + 65 + (i * 7 + k) % 100] for i in range(100_000))
        text = batch(-1)
        before = status("VmRSS:")  # before the first long chunk
        tok.encode_array(text, threads=1)
        for k in range(20):
            tok.encode_array(batch(k), threads=1)
        grown = status("VmRSS:") - before
        last = batch(99)[:2_000_000] + " the cat sat on the mat " + " ".join("xyz" + str(i) for i in range(1000))
        right = list(tok.encode_array(last, threads=1)) == bpe_reference.encode(last.encode(), tok.merges)
        print(json.dumps({"grown": grown, "right": right}))
    """, timeout=900)
    assert result["right"]
    assert result["grown"] < 96 * 2**20, f"the table grew by {result['grown'] / 2**20:.0f} MB"


# A batch of small documents is split and probed a document after another, each one's
# end noted where its ids end (encoder.h: kDocumentEnd): documents of every length from
# none to a few of the splitter's runs, ASCII and not (the splitter's hard blocks),
# special tokens among them, give each document's own ids, under a named rule (found a
# block at a time) and a compiled pattern (a chunk at a time), in the chosen tier and
# the portable one.
BATCH_DOCUMENTS = """
    import json, random
    import bpe
    from bpe import BPETokenizer
    rng = random.Random(7)
    words = ["once", " upon", " a", " time", "!", "\\n", "  ", " 12345", "é", " 日本語", "'s", "<|endoftext|>", "\\n\\n"]
    docs = ["".join(rng.choice(words) for _ in range(rng.choice([0, 1, 2, 5, 30, 64, 65, 130, 400])))
            for _ in range(600)]
    wrong = []
    for pattern in ("default", r"\\s+|\\w+|[^\\s\\w]+"):
        tok = BPETokenizer.train(docs, 400, pattern=pattern, special_tokens=["<|endoftext|>"], progress=False)
        for allowed in ("all", ()):
            ids, offsets = tok.encode_batch_flat(docs, allowed_special=allowed, disallowed_special=())
            for i, doc in enumerate(docs):
                if ids[offsets[i]:offsets[i + 1]].tolist() != tok.encode(doc, allowed_special=allowed,
                                                                          disallowed_special=()):
                    wrong.append([pattern, allowed, i])
    print(json.dumps({"wrong": wrong[:5], "tier": bpe.simd_tier()}))
"""


@pytest.mark.parametrize("tier", ["chosen", "portable"])
def test_small_documents_of_a_batch_give_their_own_ids(tier):
    assert run_in_tier(BATCH_DOCUMENTS, tier)["wrong"] == []
