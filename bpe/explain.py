"""Why a text splits the way it does: the merges that make its tokens, in the order
encoding applies them.

    from bpe import BPETokenizer
    from bpe.explain import explain
    for chunk in explain(BPETokenizer.load("stories.bpe"), " upon"):
        for step in chunk.steps:
            print(step.rank, step.pair, step.times, step.parts)

Encoding first cuts the text into chunks by the split pattern (merges never cross
them), then, in each chunk on its own, starts from the bytes and merges again and
again the adjacent pair with the lowest rank (the earliest merge learned) until no
adjacent pair is a merge. explain replays exactly that, one step per rank, in plain
Python, so that every step can be shown; the final parts of each chunk are the ids
that the tokenizer's encode_ordinary gives (the tests check that they are).
"""
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .core import load_core

if TYPE_CHECKING:  # for the annotations only: encoding imports nothing from here, nor this from it
    from .encoding import BPETokenizer


@dataclass
class Step:
    rank: int  # merge `rank` is the rank-th merge learned: it makes token 256 + rank
    pair: tuple  # the two tokens it joins, as ids
    token: int  # the id of the token it makes
    times: int  # how often the pair occurs in the chunk at this step (all are merged)
    parts: list  # the chunk's tokens after this step, as ids


@dataclass
class Chunk:
    text: bytes  # the chunk's bytes, as the split pattern cut them
    start: list  # the ids of its bytes, before any merge
    steps: list = field(default_factory=list)

    @property
    def ids(self) -> list:
        """The chunk's tokens at the end: what encoding gives it."""
        return self.steps[-1].parts if self.steps else self.start


def explain(tokenizer: "BPETokenizer", text: str) -> list[Chunk]:
    """The chunks of text, each with the merges that encoding applies to it, in order.
    Special-token text is ordinary text here, as in encode_ordinary. A tokenizer with a
    tokenizer.json's rules is refused (ValueError): the engine runs them, and this replays
    one split pattern's chunks."""
    if tokenizer.rules is not None:
        raise ValueError("explain replays the merges of one split pattern's chunks; this tokenizer runs a "
                         f"tokenizer.json's rules (pre-tokenizer: {tokenizer.pattern}), whose chunks the "
                         "engine does not give back: `bpe encode` shows its tokens")
    data = text.encode("utf-8")
    ranks = {pair: k for k, pair in enumerate(tokenizer.merges)}
    ids = tokenizer.token_ids or range(256 + len(tokenizer.merges))  # our token t has the id ids[t]
    chunks = []
    for chunk in load_core().pretokenize(data, tokenizer.pattern):
        parts = list(chunk)  # our token numbers: bytes 0-255, merge k makes 256 + k
        explained = Chunk(text=chunk, start=[ids[t] for t in parts])
        while len(parts) > 1:
            rank = min((ranks.get(pair, len(ranks)) for pair in zip(parts, parts[1:])))
            if rank == len(ranks):
                break  # no adjacent pair is a merge
            pair, made = tokenizer.merges[rank], 256 + rank
            parts, times = _merge(parts, pair, made)
            explained.steps.append(Step(rank=rank, pair=(ids[pair[0]], ids[pair[1]]), token=ids[made], times=times,
                                        parts=[ids[t] for t in parts]))
        chunks.append(explained)
    return chunks


def _merge(parts: list, pair: tuple, made: int) -> tuple:
    """parts with every occurrence of pair, left to right, replaced by made; and how many."""
    out, times, i = [], 0, 0
    while i < len(parts):
        if i + 1 < len(parts) and (parts[i], parts[i + 1]) == pair:
            out.append(made)
            times += 1
            i += 2
        else:
            out.append(parts[i])
            i += 1
    return out, times

