"""The reader of texts (bpe/sources.py): a stream of text comes in pieces cut only where
a chunk boundary is certain, so the pieces split, and encode, exactly as the whole text."""
import pytest
from hypothesis import given, settings, strategies as st

import bpe
from bpe import BPETokenizer, sources
from sample_text import SPECIAL_CORNERS, made_up_stories

STORIES = made_up_stories(120_000, seed=3)


@pytest.fixture(scope="module")
def tok():
    return BPETokenizer.train(STORIES, vocab_size=700, special_tokens=["<|endoftext|>"])


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab \n\t.é猫🙂<|endoftext|>"), max_size=300), st.integers(1, 40))
def test_text_in_pieces_splits_and_encodes_as_the_whole(text, piece_bytes):
    import io

    data = text.encode("utf-8")
    pieces = list(sources.text_pieces(io.BytesIO(data), "t", ["<|endoftext|>"], piece_bytes=piece_bytes))
    assert "".join(pieces) == text
    for pattern in ("default", "gpt2", "gpt4"):
        assert [c for p in pieces for c in bpe.pretokenize(p.encode(), pattern)] == bpe.pretokenize(data, pattern)
    assert all(p for p in pieces)


def test_encoding_in_pieces_equals_encoding_the_whole(tok):
    import io

    text = (STORIES[:30_000] + SPECIAL_CORNERS) * 2
    pieces = list(sources.text_pieces(io.BytesIO(text.encode()), "t", tok.special_tokens, piece_bytes=1000))
    assert len(pieces) > 20
    for allowed in ((), "all"):
        whole = tok.encode(text, allowed_special=allowed, disallowed_special=())
        assert [i for p in pieces for i in tok.encode(p, allowed_special=allowed, disallowed_special=())] == whole
