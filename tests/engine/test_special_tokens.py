"""Special tokens in linear time: a table of n specials is built in
O(n log n), and a text is matched against them in one pass whose cost does not grow with
their number; the ids are those of the plain rule (at each place, the longest allowed
special; left to right, so of two overlapping the first wins).

Floors: 1,000,000 specials load in under 5 s; with 10,000 specials, encoding costs at
most 2x what it costs with 10, on the same text. `PYTHONPATH=.:tests python
tests/engine/test_special_tokens.py` prints the timings for 10, 10,000 and 1,000,000
specials.
"""
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bpe import BPETokenizer
from sample_text import made_up_stories

ROOT = Path(__file__).resolve().parents[2]
STORIES = made_up_stories(30_000, seed=17)


@pytest.fixture(scope="module")
def merges():
    return BPETokenizer.train(STORIES, vocab_size=600).merges


def specials(n: int) -> list:
    return [f"<|s{k}|>" for k in range(n)]


# --- the same ids as the plain rule ---------------------------------------------------------

def plain_ids(tok, text: str, allowed) -> list:
    """The rule, slowly: at each place the longest allowed special, else one character on."""
    longest_first = sorted(allowed, key=len, reverse=True)
    ids, start, i = [], 0, 0
    while i < len(text):
        match = next((s for s in longest_first if text.startswith(s, i)), None)
        if match is None:
            i += 1
            continue
        ids += tok.encode_ordinary(text[start:i]) + [tok.special_ids[match]]
        i += len(match)
        start = i
    return ids + tok.encode_ordinary(text[start:])


def first_found(text: str, which) -> str | None:
    """The special of `which` that occurs first in text (the longest, where several begin there)."""
    for i in range(len(text)):
        found = [s for s in which if text.startswith(s, i)]
        if found:
            return max(found, key=len)
    return None


def test_ids_equal_the_plain_rule_on_overlapping_specials(merges):
    rng = random.Random(34)
    for case in range(300):
        alphabet = "ab<|é"
        pool = sorted({"".join(rng.choice(alphabet) for _ in range(rng.randint(1, 5))) for _ in range(12)})
        tok = BPETokenizer(merges, special_tokens=pool)
        text = "".join(rng.choice(alphabet + " x") for _ in range(rng.randint(0, 200)))
        allowed = set(pool) if case % 2 else set(rng.sample(pool, rng.randint(1, len(pool))))
        got = tok.encode(text, allowed_special=allowed if len(allowed) < len(pool) else "all", disallowed_special=())
        assert got == plain_ids(tok, text, allowed), (pool, text, allowed)
        disallowed = set(pool) - allowed
        expected = first_found(text, disallowed)
        if expected is None:
            assert tok.encode(text, allowed_special=allowed) == got
        else:
            with pytest.raises(ValueError) as caught:
                tok.encode(text, allowed_special=allowed)
            assert repr(expected) in str(caught.value), (str(caught.value), expected, text)


def test_the_disallowed_special_named_is_the_texts_first_on_any_threads(merges):
    """A long text is searched for disallowed specials on several threads, each from a
    stretch of its own: the one named is still the text's first, also where it spans
    two stretches or begins where a longer one does, and a text with none passes."""
    pool = ["<|a|>", "<|a|>x", "<|b|>", "|>"]
    tok = BPETokenizer(merges, special_tokens=pool)
    base = STORIES * (300_000 // len(STORIES) + 1)
    rng = random.Random(5)
    for _ in range(40):
        text = list(base[:rng.randint(150_000, 300_000)].replace("|", " ").replace(">", " "))
        for _ in range(rng.randint(0, 3)):
            at = rng.choice([len(text) // 2 - rng.randint(0, 6), len(text) // 3 - rng.randint(0, 6),
                             rng.randrange(len(text))])
            special = rng.choice(pool)
            text[at:at + len(special)] = special
        text = "".join(text)
        expected = first_found(text, pool)
        for threads in (1, 2, 3, 4):
            if expected is None:
                assert tok.count(text, threads=threads) == tok.count(text, disallowed_special=(), threads=1)
                continue
            for call in (tok.encode_array, tok.count):
                with pytest.raises(ValueError) as caught:
                    call(text, threads=threads)
                assert f"holds the special token {expected!r}" in str(caught.value), (threads, expected)


def test_specials_back_to_back_each_give_their_id(merges):
    """Thousands of specials with no text between them: each special's id is written
    where no chunk came before it to make room (a fault there wrote past the output,
    or gave 0s), on one thread and on two."""
    for special, n in (("<|endoftext|>", 100_000), ("|", 5_000)):
        tok = BPETokenizer(merges, special_tokens=[special])
        sid = tok.special_ids[special]
        assert tok.encode(special * n, allowed_special="all") == [sid] * n
        for threads in (1, 2):
            assert tok.encode_array(special * n, allowed_special="all", threads=threads).tolist() == [sid] * n
        mixed = ("a" + special * 3) * 2_000
        assert tok.encode(mixed, allowed_special="all") == plain_ids(tok, mixed, [special])


def test_a_repeated_special_among_many_is_refused_by_name(merges):
    with pytest.raises(ValueError, match=r"<\|s4321\|>.*twice|twice.*<\|s4321\|>"):
        BPETokenizer(merges, special_tokens=specials(100_000) + ["<|s4321|>"])
    with pytest.raises(ValueError, match="empty"):
        BPETokenizer(merges, special_tokens=specials(1000) + [""])


def test_allowed_special_as_a_large_set(merges):
    """allowed_special as a set of 100,000 of 200,000 specials: each found in the table
    at once, not by a search of the list (which would be 10^10 comparisons)."""
    tok = BPETokenizer(merges, special_tokens=specials(200_000))
    chosen = set(specials(200_000)[::2])
    text = "x<|s0|>y<|s1|>z<|s199998|>" * 3
    started = time.perf_counter()
    ids = tok.encode(text, allowed_special=chosen, disallowed_special=())
    assert time.perf_counter() - started < 2.0
    assert ids == plain_ids(tok, text, chosen)


# --- the floors ----------------------------------------------------------------------------

def build_time(merges, n: int) -> float:
    names = specials(n)
    started = time.perf_counter()
    BPETokenizer(merges, special_tokens=names)
    return time.perf_counter() - started


def encode_time(tok, text: str, rounds: int = 3) -> float:
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        tok.encode(text, allowed_special="all")
        best = min(best, time.perf_counter() - started)
    return best


def test_a_million_specials_load_in_under_5_seconds(merges, tmp_path):
    # In a process of its own, with a limit: a quadratic build would not end. Timed in
    # the process's CPU seconds, which other work on a shared machine does not inflate.
    script = ("import sys, time\n"
              "from bpe import BPETokenizer\n"
              "names = [f'<|s{k}|>' for k in range(1_000_000)]\n"
              "started = time.process_time()\n"
              "tok = BPETokenizer([], special_tokens=names)\n"
              "built = time.process_time() - started\n"
              "tok.save(sys.argv[1])\n"
              "started = time.process_time()\n"
              "again = BPETokenizer.load(sys.argv[1])\n"
              "loaded = time.process_time() - started\n"
              "assert again.n_vocab == 256 + 1_000_000 and again.encode('a<|s999999|>', allowed_special='all') == "
              "[97, 256 + 999_999]\n"
              "print(built, loaded)\n")
    try:
        result = subprocess.run([sys.executable, "-c", script, str(tmp_path / "many.bpe")], capture_output=True,
                                text=True, timeout=60, cwd=ROOT)
    except subprocess.TimeoutExpired:
        pytest.fail("building 1,000,000 special tokens took over 60 s")
    assert result.returncode == 0, result.stderr
    built, loaded = map(float, result.stdout.split())
    assert built < 5.0 and loaded < 5.0, (built, loaded)


@pytest.mark.parametrize("text", ["<|s" * 333_333, "story"], ids=["special prefixes", "stories"])
def test_encoding_with_10000_specials_costs_at_most_twice_10(merges, text):
    if text == "story":
        text = (made_up_stories(300_000, seed=3) + "<|s7|>") * 3
    few = BPETokenizer(merges, special_tokens=specials(10))
    many = BPETokenizer(merges, special_tokens=specials(10_000))
    assert few.encode(text, allowed_special="all") == many.encode(text, allowed_special="all")
    # Interleaved rounds, the best of each: the machine is shared.
    t_few, t_many = float("inf"), float("inf")
    for _ in range(3):
        t_few = min(t_few, encode_time(few, text, 1))
        t_many = min(t_many, encode_time(many, text, 1))
    assert t_many <= 2 * t_few, (t_few, t_many)



def test_duplicate_specials_among_many_are_refused_by_name():
    specials = [f"<|s{k}|>" for k in range(50_000)] + ["<|s777|>"]
    with pytest.raises(ValueError, match=r"<\|s777\|>"):
        BPETokenizer([], special_tokens=specials)


if __name__ == "__main__":
    merges = BPETokenizer.train(STORIES, vocab_size=600).merges
    texts = {"'<|s' * 333,333": "<|s" * 333_333, "stories + a special, 2.7 MB": (made_up_stories(900_000, seed=3) + "<|s7|>") * 3}
    for n in (10, 10_000, 1_000_000):
        started = time.perf_counter()
        tok = BPETokenizer(merges, special_tokens=specials(n))
        built = time.perf_counter() - started
        row = [f"{n:>9,} specials: build {built:7.3f} s"]
        for name, text in texts.items():
            row.append(f"encode {name}: {encode_time(tok, text):7.3f} s")
        print("; ".join(row), flush=True)
