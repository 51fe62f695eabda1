"""Encoding one long text on several threads: a str that is not ASCII is made UTF-8
on the threads too (each its share of the characters), and the ids must be exactly
those of one thread and of the reference, whatever kind of str it is."""
import random

import numpy as np
import pytest

import bpe_reference
from bpe import BPETokenizer


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
