"""Training (bpe.train, bpe.ChunkCounter) against the reference, on inputs aimed at the
trainer's own machinery: words grouped by count (counts of 2^16 and more take another
path), tokens whose length is kept at both ends, lists of positions that go stale and
are dropped, counts kept in 64 shards by thread, and chunk bytes that must outlive the
texts they came from."""
import gc
import random
import warnings

import pytest
from hypothesis import given, settings, strategies as st

import bpe
import bpe_reference as ref
from bpe import BPETokenizer
from sample_text import made_up_stories

LETTERS = "abcdefghijklmnopqrstuvwxyz"


def random_words(rng, count, short=3, long=12):
    return ["".join(rng.choice(LETTERS) for _ in range(rng.randint(short, long))) for _ in range(count)]


def zipf_text(seed, distinct, total):
    """Words with counts from 1 to hundreds (a few frequent, most rare), in random order."""
    rng = random.Random(seed)
    words = random_words(rng, distinct)
    chosen = [words[min(int(rng.paretovariate(1.0)) - 1, distinct - 1)] for _ in range(total)]
    chosen += words  # every word at least once
    rng.shuffle(chosen)
    return " ".join(chosen).encode()


def test_many_distinct_words_until_no_pair_is_left():
    # More merges than the text has pairs: every list of positions is used up, and
    # training stops where the reference does.
    text = zipf_text(1, distinct=300, total=1500)
    merges = bpe.train(text, 100_000)
    assert merges == ref.train(text, 100_000)
    assert len(merges) < 100_000


def test_zipf_words_match_reference():
    text = zipf_text(2, distinct=1500, total=8000)
    expected = ref.train(text, 400)
    for threads in (1, 2, 5):
        assert bpe.train(text, 400, threads=threads) == expected


def test_counts_of_65536_and_more():
    # Words of a count below 2^16 are grouped through a table, the others through a
    # map: words on both sides of the line, and ties between them.
    text = b" ab" * 70_000 + b" ba" * 65_536 + b" abc" * 65_535 + b" cab" * 65_535 + b" xyz zyx abcab"
    assert bpe.train(text, 12) == ref.train(text, 12)


@pytest.mark.parametrize("word", [
    b"a" * 37,                                    # overlapping pairs: the leftmost merges first
    b"ab" * 40,                                   # a pair next to itself
    b"abc" * 1000,                                # tokens grow long: lengths at both ends
    bytes(random.Random(3).choice(b"ab") for _ in range(3000)),  # one long word, two letters
], ids=["aaa", "abab", "abc-long", "ab-random-long"])
def test_long_and_repetitive_words(word):
    text = word + b" " + word[:7] + b" " + word[:5] + b" zz" + word[:3]
    assert bpe.train(text, 300) == ref.train(text, 300)


def test_chunks_outlive_their_texts():
    # Chunks of up to 16 bytes are kept inside the counter's tables, longer ones are
    # copied: once the texts are gone and their memory reused, the counts must stand.
    rng = random.Random(4)
    words = random_words(rng, 400, short=1, long=40)
    texts = [" ".join(rng.choice(words) for _ in range(300)).encode() for _ in range(12)]
    expected = ref.train_on_texts(texts, 300)
    counter = bpe.ChunkCounter()
    for k in range(0, len(texts), 3):
        counter.add([bytes(bytearray(t)) for t in texts[k:k + 3]], threads=2)  # copies, freed right after
    gc.collect()
    junk = [bytes([k % 251]) * 1000 for k in range(5000)]  # takes over the freed memory
    assert counter.train(300) == expected
    del junk


def test_calls_and_threads_do_not_change_the_counts():
    rng = random.Random(5)
    words = random_words(rng, 1000, short=1, long=25)
    texts = [" ".join(rng.choice(words) for _ in range(200)).encode() for _ in range(20)]
    distinct = len({chunk for text in texts for chunk in ref.pretokenize(text)})
    results = []
    for threads, per_call in ((1, 20), (4, 20), (2, 1), (3, 7)):
        counter = bpe.ChunkCounter()
        for k in range(0, len(texts), per_call):
            counter.add(texts[k:k + per_call], threads=threads)
        assert len(counter) == distinct
        results.append(counter.train(300))
    assert all(r == results[0] for r in results)
    assert results[0] == ref.train_on_texts(texts, 300)


def test_an_exception_from_progress_leaves_the_counter_usable():
    text = zipf_text(6, distinct=1000, total=5000)
    counter = bpe.ChunkCounter()
    counter.add(text)

    def stop(done):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        counter.train(1000, progress=stop)
    assert len(counter) == 0  # the counts went to the trainer, which is gone
    counter.add(text)
    assert counter.train(300) == ref.train(text, 300)


# Few letters, so that pairs overlap and repeat, words of every length, and counts
# from 1 to many.
few_letters = st.lists(st.text(alphabet="ab c", min_size=0, max_size=60).map(str.encode), min_size=1, max_size=8)


@settings(max_examples=200, deadline=None)
@given(few_letters, st.integers(0, 300), st.integers(1, 3))
def test_property_streamed_training_matches_reference(texts, num_merges, threads):
    counter = bpe.ChunkCounter()
    for text in texts:
        counter.add(text, threads=threads)
    assert counter.train(num_merges) == ref.train_on_texts(texts, num_merges)


def test_training_that_runs_out_of_pairs_warns_with_its_numbers():
    # A type of its own, with the numbers as fields, so that a caller (the command) can
    # say it in its own words without reading the text.
    with pytest.warns(bpe.ShortVocabularyWarning) as caught:
        tok = bpe.BPETokenizer.train("abcabc abd", vocab_size=300, special_tokens=["<|endoftext|>"])
    warning = caught[0].message
    assert issubclass(bpe.ShortVocabularyWarning, UserWarning)
    assert (warning.n_vocab, warning.vocab_size) == (tok.n_vocab, 300)
    assert (warning.merges, warning.num_merges) == (len(tok.merges), 300 - 256 - 1)
    assert warning.pruned == 0
    assert str(warning).startswith(f"n_vocab is {tok.n_vocab}, not the 300 asked for")


# --- a counter trained once, and training under a memory budget ---------------------------

STORIES = made_up_stories(40_000, seed=21)


def test_a_counter_trained_again_gives_the_same_merges_or_says_it_was_used_up():
    counter = bpe.ChunkCounter()
    counter.add(STORIES)
    first = BPETokenizer.train_from_counts(counter, 400, special_tokens=[])
    assert first.merges  # 400 tokens ask for 144 merges, and the stories have them
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            again = BPETokenizer.train_from_counts(counter, 400)
    except ValueError as e:
        assert "used up" in str(e) or "consumed" in str(e), e
    else:
        assert again.merges == first.merges
    try:
        merges = counter.train(10)
    except ValueError as e:
        assert "used up" in str(e) or "consumed" in str(e), e
    else:
        assert merges == first.merges[:10]


def test_the_warning_after_pruning_says_pruning_removed_the_pairs():
    text = made_up_stories(200_000, seed=9)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tok = BPETokenizer.train(text, vocab_size=30_000, max_memory="300KB")
    assert tok.n_vocab < 30_000
    short = [w.message for w in caught if isinstance(w.message, bpe.ShortVocabularyWarning)]
    assert len(short) == 1, [str(w.message) for w in caught]
    assert short[0].pruned > 0 and short[0].max_memory == 300_000
    text = str(short[0])
    assert "max_memory" in text and "prun" in text and "more text" not in text, text
