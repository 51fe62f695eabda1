"""Memory that follows the input: one huge chunk encodes in a bounded number of bytes a
byte, a str is read without a UTF-8 copy being left on it, and training can be given a
memory budget (and stays exact without one)."""
import json
import os
import random
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest

import bpe
import bpe_reference
from bpe import BPETokenizer
from vocabularies import gpt2_files

ROOT = Path(__file__).resolve().parents[2]


PEAK = """
def status(key):
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith(key)) * 1024

def reset_peak():  # the kernel's high-water mark back to the present size
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
"""


def run_child(code: str, timeout: int = 300, env: dict | None = None) -> dict:
    """Runs code in a fresh Python (the repository importable, PEAK's helpers defined,
    `env` added to the environment) and returns the JSON it prints last."""
    result = subprocess.run([sys.executable, "-c", PEAK + textwrap.dedent(code)], capture_output=True, text=True,
                            timeout=timeout, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})})
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def run_in_tier(code: str, tier: str) -> dict:
    """run_child in the SIMD tier chosen here ("chosen") or in the one named (BPE_SIMD),
    which code's JSON names under "tier" (bpe.simd_tier()) and is checked to be it."""
    result = run_child(code, env={} if tier == "chosen" else {"BPE_SIMD": tier})
    if tier != "chosen":
        assert result["tier"] == tier
    return result




def can_reset_peak() -> bool:
    """Whether peaks can be measured here: /proc/self/clear_refs, and a normal build
    (a sanitizer's shadow memory would be measured too)."""
    if os.environ.get("BPE_VARIANT"):
        return False
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


# --- one huge chunk --------------------------------------------------------------


def vocabularies():
    yield pytest.param("stories", id="stories")
    yield pytest.param("gpt2", id="gpt2")


def merges_of(name: str) -> list:
    if name == "stories":
        return BPETokenizer.load(ROOT / "stories.bpe").merges
    return BPETokenizer.from_gpt2(*gpt2_files()).merges


@pytest.mark.skipif(not can_reset_peak(), reason="needs /proc/self/clear_refs to measure a peak")
@pytest.mark.parametrize("vocabulary", vocabularies())
@pytest.mark.parametrize("text", ["random letters", "one letter"])
def test_one_huge_chunk_takes_at_most_12_bytes_a_byte_beyond_the_output(vocabulary, text):
    # 20 MB with no space: one chunk. Before the buckets (encoder.h, encode_buckets) the
    # heap took 13.7 (stories) to 24 (GPT-2) bytes a byte beyond the output.
    load = ('BPETokenizer.load("stories.bpe")' if vocabulary == "stories"
            else "BPETokenizer.from_gpt2(*%r)" % [str(p) for p in gpt2_files()])  # skips without GPT-2's files
    result = run_child(f"""
        import json, random, time
        import bpe
        from bpe import BPETokenizer
        encoder = bpe.Encoder({load}.merges)
        n = 20_000_000
        rng = random.Random(7)
        text = bytes(rng.choice(b"abcdefghijklmnopqrstuvwxyz") for _ in range(1 << 16)) * (n >> 16) \\
            if {text!r} == "random letters" else b"a" * n
        reset_peak()
        base = status("VmRSS")
        start = time.perf_counter()
        ids = encoder.encode_array(text, threads=1)
        seconds = time.perf_counter() - start
        peak = status("VmHWM")
        # the output: the ids the C++ fills (4 bytes each) and the array they are copied to
        output = 4 * len(ids) + ids.nbytes
        same = encoder.decode_bytes(ids) == text
        print(json.dumps({{"per_byte": (peak - base - output) / len(text), "seconds": seconds, "same": same}}))
    """)
    assert result["same"]
    assert result["per_byte"] <= 12, result
    assert result["seconds"] < 120, result  # not quadratic: a quadratic pass would take hours


def small_vocabulary(rng, alphabet):
    text = "".join(rng.choice(alphabet) for _ in range(rng.randint(50, 400))).encode()
    return bpe_reference.train(text, rng.randint(1, 60))


def test_long_chunks_are_the_references():
    # Chunks of 33 bytes or more with few merges take the buckets; with many, the heap.
    # Runs of one letter test the (a, a) merges, which must go left to right.
    rng = random.Random(3)
    for _ in range(150):
        alphabet = rng.choice(["a", "ab", "aab", "abc", "abcd"])
        merges = small_vocabulary(rng, alphabet)
        encoder = bpe.Encoder(merges)
        for _ in range(3):
            chunk = "".join(rng.choice(alphabet) for _ in range(rng.randint(33, 700))).encode()
            assert encoder.encode(chunk) == bpe_reference.encode(chunk, merges), (merges, chunk)


@pytest.mark.parametrize("vocabulary", vocabularies())
def test_long_chunks_of_real_vocabularies_are_the_references(vocabulary):
    merges = merges_of(vocabulary)
    encoder = bpe.Encoder(merges)
    rng = random.Random(5)
    for alphabet in ["abcdefghijklmnopqrstuvwxyz", "a", "ab", "the"]:
        chunk = "".join(rng.choice(alphabet) for _ in range(3000 // len(alphabet))).encode() * len(alphabet)
        assert encoder.encode(chunk) == bpe_reference.encode(chunk, merges), alphabet


# --- a str is read in place --------------------------------------------------------

KINDS = {
    "ascii": "the cat sat on the mat. ",
    "latin-1": "café crème brûlée à la mode. ",
    "ucs-2": "東京は日本の首都です。 ",
    "ucs-4": "emoji 🐈 and 𝄞 music. ",
}


@pytest.fixture(scope="module")
def tok():
    return BPETokenizer.load(ROOT / "stories.bpe")


@pytest.mark.parametrize("kind", KINDS)
def test_encoding_a_str_leaves_no_utf8_copy_on_it(tok, kind):
    # Before: encode and encode_array cached the str's UTF-8 on it
    # (PyUnicode_AsUTF8AndSize), so sys.getsizeof grew by the UTF-8's size.
    text = KINDS[kind] * 1000
    size = sys.getsizeof(text)
    expected = tok._encoder.encode(text.encode("utf-8"))
    assert tok.encode(text) == expected
    assert tok.encode_ordinary(text) == expected
    assert tok.encode_array(text).tolist() == expected
    assert tok.encode_batch([text, text]) == [expected, expected]
    assert tok.encode_ordinary_batch([text]) == [expected]
    BPETokenizer.train(text, 300, progress=False)
    BPETokenizer.train([text, text], 300, progress=False)
    assert sys.getsizeof(text) == size


# A character of each width at every place in and around a block of 32, in a str of
# each kind: the UTF-8 written for it (csrc/py_text.h: a block of ASCII narrowed at
# once, any other a character at a time) is the str's, and a lone surrogate in its
# place is told there. In the tier chosen here, and in the portable one (BPE_SIMD),
# whose writers differ.
UTF8_AT_EVERY_PLACE = """
    import json
    import bpe
    from bpe import BPETokenizer
    tok = BPETokenizer.load("stories.bpe")
    wrong = []
    for widest in ("é", "日", "🐈"):
        for probe in ("a", "\\x7f", "\\x80", "ÿ", "Ā", "日", "\\uffff", "🐈"):
            for place in range(70):
                chars = ["a"] * 100 + [widest]
                chars[place] = probe
                text = "".join(chars)
                ids = tok.encode_array(text).tolist()
                if ids != tok._encoder.encode(text.encode("utf-8")) or tok.decode(ids) != text:
                    wrong.append(text)
                chars[place] = "\\ud800"
                try:
                    tok.encode_array("".join(chars))
                    wrong.append(["no error", place])
                except ValueError as error:
                    if f"lone surrogate at position {place}" not in str(error):
                        wrong.append([str(error), place])
    print(json.dumps({"wrong": wrong[:5], "tier": bpe.simd_tier()}))
"""


@pytest.mark.parametrize("tier", ["chosen", "portable"])
def test_a_str_of_each_kind_is_written_as_its_utf8(tier):
    assert run_in_tier(UTF8_AT_EVERY_PLACE, tier)["wrong"] == []


@pytest.mark.parametrize("kind", KINDS)
def test_training_on_str_is_training_on_its_utf8(kind):
    texts = [KINDS[kind] * 50, KINDS["ascii"] * 20, KINDS[kind] + " once"]
    want = bpe_reference.train_on_texts([t.encode("utf-8") for t in texts], 40)
    assert list(BPETokenizer.train(texts, 256 + 40, progress=False).merges) == want
    counter = bpe.ChunkCounter()
    counter.add(texts)
    assert counter.train(40) == want


@pytest.mark.parametrize("call", ["encode", "encode_ordinary", "encode_array", "encode_batch", "train"])
def test_a_lone_surrogate_is_still_refused(tok, call):
    text = "ok \ud800 no"
    with pytest.raises(ValueError, match="lone surrogate at position 3"):
        if call == "encode_batch":
            tok.encode_batch([text])
        elif call == "train":
            BPETokenizer.train([text], 300, progress=False)
        else:
            getattr(tok, call)(text)


@pytest.mark.skipif(not can_reset_peak(), reason="measures the process's size")
def test_encoding_a_large_cjk_str_does_not_grow_the_process():
    # 20 M characters of CJK (40 MB as a str, 60 MB as UTF-8). Before, the UTF-8 stayed
    # on the str after encode: the process grew by 60 MB and sys.getsizeof with it. The
    # process keeps one buffer for UTF-8 between calls, of at most 64 MB written
    # (docs/engine.md, "Memory kept between calls"): the first call may grow the process
    # by that, the calls after it by nothing.
    result = run_child("""
        import json, sys
        from bpe import BPETokenizer
        tok = BPETokenizer.load("stories.bpe")
        text = "東京は日本の首都です。" * 2_000_000
        size = sys.getsizeof(text)
        tok.encode_array(text[:1000])  # warm up: the caches and the allocator
        before = status("VmRSS")
        ids = tok.encode_array(text, threads=1)
        del ids
        after = status("VmRSS")
        for _ in range(3):
            tok.encode_array(text, threads=1)
        again = status("VmRSS")
        print(json.dumps({"grown": after - before, "grown_again": again - after, "size_before": size,
                          "size_after": sys.getsizeof(text)}))
    """)
    assert result["size_after"] == result["size_before"]
    assert result["grown"] < (64 << 20) + (16 << 20), result
    assert result["grown_again"] < 8 << 20, result


def test_encode_arrays_write_into_kept_pages_and_hold_only_their_ids():
    """encode_array's ids for a large text go into blocks the process keeps between
    calls (csrc/py_output.h): once warm, a call on one thread or two faults in no new
    pages; an array kept holds the memory of its ids and no more (nor address space), and a block is not
    written again while its array lives; freed, the blocks held stay within 64 MB."""
    result = run_child("""
        import json, resource
        import numpy as np
        from bpe import BPETokenizer
        tok = BPETokenizer.load("stories.bpe")
        text = ("Once upon a time there was a little cat. " * 200_000)[:8_000_000]  # ASCII: read in place
        def faults():
            return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        expected = tok.encode_array(text, threads=1)
        for threads in (1, 2, 1, 2):
            tok.encode_array(text, threads=threads)
        # The median of five calls: how many pieces each of two threads takes varies from
        # call to call, and now and then a call faults in a few dozen pages once.
        warm = {}
        for threads in (1, 2):
            counts = []
            for _ in range(5):
                before = faults()
                ids = tok.encode_array(text, threads=threads)
                counts.append(faults() - before)
                assert np.array_equal(ids, expected)
                del ids
            warm[threads] = sorted(counts)[2]
        rss, size = status("VmRSS"), status("VmSize")
        kept = [tok.encode_array(text[k:], threads=2) for k in range(6)]
        per_array = (status("VmRSS") - rss) / len(kept)
        address_space = (status("VmSize") - size) / len(kept)
        same = all(np.array_equal(a, tok.encode_array(text[k:], threads=1)) for k, a in enumerate(kept))
        nbytes = kept[0].nbytes
        del kept
        print(json.dumps({"warm_faults": warm, "per_array": per_array, "nbytes": nbytes, "same": same,
                          "address_space": address_space,
                          "held_after": status("VmRSS") - rss}))
    """)
    assert max(result["warm_faults"].values()) < 64, result  # numpy's own arrays: about 500 a call
    assert result["same"], result
    assert result["per_array"] < result["nbytes"] + (1 << 20), result
    assert result["address_space"] < result["nbytes"] + (1 << 20), result  # not the text's room, 4 times more
    assert result["held_after"] < 64 << 20, result


def test_calls_of_two_sizes_taking_turns_write_into_kept_pages():
    """A call whose ids fill less than half of the kept block it writes into (a warm-up
    before a long text, a pipeline's documents of mixed sizes) copies them into a block
    that fits and keeps the long block whole: once warm, neither size faults in new
    pages, and an array of the short text's ids holds their memory and no more."""
    result = run_child("""
        import json, resource
        import numpy as np
        from bpe import BPETokenizer
        tok = BPETokenizer.load("stories.bpe")
        long = ("Once upon a time there was a little cat. " * 200_000)[:8_000_000]  # ASCII: read in place
        short = long[:1_500_000]
        texts = {"long": long, "short": short}
        def faults():
            return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        expected = {name: tok.encode_array(text, threads=1) for name, text in texts.items()}
        for _ in range(2):
            for text in texts.values():
                tok.encode_array(text, threads=1)
        warm, same = {name: 0 for name in texts}, True
        for _ in range(3):
            for name, text in texts.items():
                before = faults()
                ids = tok.encode_array(text, threads=1)
                warm[name] += faults() - before
                same = same and np.array_equal(ids, expected[name])
                del ids
        rss = status("VmRSS")
        kept = [tok.encode_array(short, threads=1) for _ in range(4)]
        per_array = (status("VmRSS") - rss) / len(kept)
        print(json.dumps({"warm_faults": warm, "same": same, "per_array": per_array, "nbytes": kept[0].nbytes,
                          "long_nbytes": expected["long"].nbytes}))
    """)
    assert result["same"], result
    assert result["nbytes"] * 2 < result["long_nbytes"], result  # the short ids fill less than half
    assert max(result["warm_faults"].values()) < 3 * 64, result  # a cut long block: about 800 a call
    assert result["per_array"] < result["nbytes"] + (1 << 20), result


# --- a memory budget for training ----------------------------------------------------


def distinct_words(n: int, seed: int = 1) -> list:
    """Texts of n random words of 4-12 letters: nearly every word is distinct, which is
    what makes training's memory grow."""
    rng = random.Random(seed)
    words = ["".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(4, 12))) for _ in range(n)]
    return [" ".join(words[i:i + 1000]) for i in range(0, n, 1000)]


def test_without_a_budget_training_is_exact():
    texts = distinct_words(3000) + ["the cat sat on the mat"] * 50
    want = bpe_reference.train_on_texts([t.encode() for t in texts], 60)
    assert list(BPETokenizer.train(texts, 256 + 60, progress=False).merges) == want
    counter = bpe.ChunkCounter()
    counter.add(texts)
    assert counter.max_memory is None
    assert counter.train(60) == want


def test_a_budget_that_is_not_reached_changes_nothing(recwarn):
    texts = distinct_words(3000)
    want = BPETokenizer.train(texts, 256 + 60, progress=False).merges
    assert BPETokenizer.train(texts, 256 + 60, progress=False, max_memory="1GB").merges == want
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]


def test_past_the_budget_the_rarest_chunks_go_with_a_warning():
    # Before: ChunkCounter took no max_memory (TypeError), and memory grew without end.
    common = ["the cat sat on the mat. " * 20] * 200  # counted 4,000 times each
    texts = distinct_words(200_000)
    counter = bpe.ChunkCounter(max_memory=4_000_000)
    with pytest.warns(RuntimeWarning, match=r"dropped \d+ distinct chunks counted 1 times or fewer .* the merges "
                                            r"may differ from exact training"):
        for k in range(0, len(texts), 20):
            counter.add(texts[k:k + 20] + common[:1])
    dropped, threshold = counter.pruned
    assert dropped > 0 and threshold == 1
    assert counter.estimated_memory <= 4_000_000
    assert 0 < len(counter) < 200_000
    merges = counter.train(40)
    # the frequent words still lead: their merges come first
    tok = BPETokenizer(merges)
    assert len(tok.encode(" the cat sat on the mat")) <= 6


def test_the_pruning_warning_carries_its_numbers():
    # The warning is a type of its own, whose numbers a caller (the command) reads as
    # fields rather than out of its text.
    texts = distinct_words(200_000)
    counter = bpe.ChunkCounter(max_memory=4_000_000)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for k in range(0, len(texts), 20):
            counter.add(texts[k:k + 20])
    pruning = [w.message for w in caught if issubclass(w.category, bpe.PruningWarning)]
    assert pruning and len(pruning) == len(caught)
    assert issubclass(bpe.PruningWarning, RuntimeWarning)  # what filters written before it still catch
    last = pruning[-1]
    assert (last.total_dropped, last.threshold) == counter.pruned
    assert last.max_memory == 4_000_000
    assert sum(w.dropped for w in pruning) == counter.pruned[0]
    assert f"dropped {last.dropped} distinct chunks counted {last.threshold} times or fewer" in str(last)


def test_max_memory_is_bytes_or_a_size():
    from bpe.encoding import _as_memory
    assert _as_memory(None) is None
    assert _as_memory(123) == 123
    assert _as_memory("2GB") == 2_000_000_000
    assert _as_memory("512MiB") == 512 << 20
    assert _as_memory("1.5 kb") == 1500
    with pytest.raises(ValueError, match="max_memory"):
        _as_memory("lots")
    with pytest.raises(TypeError, match="max_memory"):
        bpe.ChunkCounter(max_memory=True)
    assert bpe.ChunkCounter(max_memory=np.int64(10**9)).max_memory == 10**9  # numpy ints, as everywhere
    with pytest.raises(ValueError, match="max_memory"):
        bpe.ChunkCounter(max_memory=0)
    with pytest.raises(TypeError, match="max_memory"):
        bpe.ChunkCounter(max_memory=1.5)


TRAIN_PEAK = """
    import json, random, sys, warnings
    sys.path[:0] = ["tests", "tests/engine"]  # the helpers, and this file
    from bpe import BPETokenizer
    from test_memory import distinct_words
    texts = distinct_words(1_200_000)  # about 10 MB, 1.1 M distinct words
    base = status("VmRSS")
    reset_peak()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        BPETokenizer.train(texts, 256 + 300, progress=False, max_memory={budget})
    print(json.dumps({{"grown": status("VmHWM") - base, "warnings": len(caught)}}))
"""


@pytest.mark.skipif(not can_reset_peak(), reason="needs /proc/self/clear_refs to measure a peak")
def test_training_under_a_budget_stays_under_it():
    budget = 60_000_000
    unbounded = run_child(TRAIN_PEAK.format(budget=None))
    assert unbounded["grown"] > budget and unbounded["warnings"] == 0, unbounded  # the budget bites
    bounded = run_child(TRAIN_PEAK.format(budget=budget))
    assert bounded["grown"] <= budget and bounded["warnings"] > 0, bounded


def counts_of(counter) -> dict:
    chunks, offsets, counts = counter.counts()
    return {chunks[offsets[k]:offsets[k + 1]]: int(counts[k]) for k in range(len(counts))}


def test_one_long_str_counted_in_pieces_trains_as_its_utf8():
    # A str that is not ASCII is counted in pieces (_core.cpp, add_str_in_pieces), cut
    # only where a chunk must end and never inside a special token. Here most of the
    # text is special tokens, each holding a place to cut (a letter, then a space), so
    # that wherever the pieces are meant to end, many such places fall inside one.
    special = "<|a b|>"
    text = ("é ü " + special) * 400_000 + " the cat sat. 東京 " * 1000 + special + " end"
    want = bpe.train(text.encode("utf-8"), 50, special_tokens=[special])
    for threads in (1, 2):
        tok = BPETokenizer.train(text, 256 + 50 + 1, special_tokens=[special], threads=threads, progress=False)
        assert list(tok.merges) == want
        whole, pieces = bpe.ChunkCounter(special_tokens=[special]), bpe.ChunkCounter(special_tokens=[special])
        whole.add(text.encode("utf-8"), threads=threads)
        pieces.add(text, threads=threads)
        assert counts_of(pieces) == counts_of(whole)  # a special token cut in two would add chunks such as "<|a"
    with pytest.raises(ValueError, match=f"lone surrogate at position {len(text) + 1}"):
        BPETokenizer.train(text + " \udc00", 300, progress=False)


def test_the_long_chunks_of_a_str_counted_in_pieces_are_kept_whole():
    # Each counting thread makes its pieces UTF-8 in one buffer, written again for its
    # next piece (chunk_counter.h, add_written): a chunk of more than 16 bytes, which
    # the tables hold as a view of the text, must be copied out before that.
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = ["wörter" + "".join(letters[k // 26**i % 26] for i in range(4)) + "x" * (k % 30) for k in range(60_000)]
    text = " ".join(words * 2)
    # Under a budget the pieces come in rounds of a few, each kept to the budget, which
    # this one never needs to drop anything for.
    for threads, budget in ((1, None), (2, None), (2, 50_000_000)):
        as_str, as_bytes = bpe.ChunkCounter(max_memory=budget), bpe.ChunkCounter(max_memory=budget)
        as_str.add(text, threads=threads), as_bytes.add(text.encode(), threads=threads)
        counted = counts_of(as_str)
        assert counted == counts_of(as_bytes) and as_str.pruned == (0, 0)
        assert sum(len(chunk) > 16 for chunk in counted) > 40_000


@pytest.mark.parametrize("budget", [None, 10**9])
def test_a_str_refused_for_a_lone_surrogate_counts_nothing(budget):
    # One str that is not ASCII is counted a piece at a time; a surrogate in a later
    # piece must not leave the earlier pieces counted (under a budget, the str is read
    # for one before any piece is counted).
    counter = bpe.ChunkCounter(max_memory=budget)
    with pytest.raises(ValueError, match="lone surrogate at position 9000000"):
        counter.add("héllo wör" * 1_000_000 + "\ud800 and on" + " wörds" * 100_000)
    assert len(counter) == 0


def test_a_str_that_is_not_ascii_adds_to_counts_already_there():
    # Without a budget the str is counted apart and its counts join the counter's at the
    # end (_core.cpp, add_str_in_pieces): into an empty counter as they are, else chunk
    # by chunk. Under a budget it is scanned for a lone surrogate first. Both ways equal
    # counting the UTF-8, and a refused str leaves the earlier counts as they were.
    first, second = "the cat sat. " * 300 + "a long chunk of letters" * 3, "héllo wörld 東京 the cat " * 2000
    for budget in (None, 10**9):
        as_str, as_bytes = bpe.ChunkCounter(max_memory=budget), bpe.ChunkCounter(max_memory=budget)
        as_str.add(first), as_bytes.add(first.encode())
        as_str.add(second), as_bytes.add(second.encode())
        assert counts_of(as_str) == counts_of(as_bytes)
        assert as_str.train(40) == as_bytes.train(40)
        before = bpe.ChunkCounter(max_memory=budget)
        before.add(first)
        with pytest.raises(ValueError, match="lone surrogate at position 5"):
            before.add("héllo\udc00 wörld" * 100)
        assert len(before) == len(set(bpe.pretokenize(first.encode())))
