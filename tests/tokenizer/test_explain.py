"""bpe.explain (bpe/explain.py): the merges that make a text's tokens, chunk by chunk in
the order encoding applies them, end in exactly encode's ids, for every kind of
tokenizer (trained, GPT-2's numbering of bytes out of order, GPT-4's vocabulary)."""
import pytest

from bpe import BPETokenizer
from bpe.explain import explain
from sample_text import SPECIAL_CORNERS, made_up_stories
from vocabularies import cl100k_path

STORIES = made_up_stories(120_000, seed=3)


def words_and_texts():
    words = sorted({w for w in STORIES.split()[:3000]})[:400]
    return [*words, *(" " + w for w in words), "Once upon a time, Zorblax!", SPECIAL_CORNERS, "  \n\n\t x", "🐱🐱", ""]


@pytest.mark.parametrize("kind", ["default", "gpt2", "gpt4", "shuffled", "cl100k"])
def test_explain_ends_in_encodes_tokens(kind):
    if kind == "cl100k":
        tok = BPETokenizer.from_tiktoken(cl100k_path())
    else:
        tok = BPETokenizer.train(STORIES, vocab_size=800, pattern="gpt2" if kind == "shuffled" else kind)
        if kind == "shuffled":  # bytes numbered out of order, as GPT-2 numbers them
            tok = BPETokenizer(tok.merges, pattern="gpt2", token_ids=list(range(255, -1, -1)) +
                               list(range(256, 256 + len(tok.merges))))
    for text in words_and_texts():
        chunks = explain(tok, text)
        assert [i for chunk in chunks for i in chunk.ids] == tok.encode_ordinary(text), text
        assert b"".join(chunk.text for chunk in chunks) == text.encode()
        for chunk in chunks:
            ranks = [step.rank for step in chunk.steps]
            assert ranks == sorted(set(ranks))  # in rank order, each merge once
            for step in chunk.steps:  # the pair joined is the merge of that rank
                assert tok.decode_single_token_bytes(step.token) == \
                    b"".join(map(tok.decode_single_token_bytes, step.pair))
