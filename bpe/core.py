"""The compiled core, bpe._core, and what every other module of the package needs of it.

This is the bottom of the package: it imports no other module of bpe, and every module
that needs the core (encoding, formats, huggingface, sources, explain, ray_data, the
command) imports it from here, so no two modules import each other.

The core's own API, re-exported here and as bpe.X: bytes in (str too, where it
encodes), ints out, the same argument names with the same meanings as BPETokenizer's.

    pretokenize(text, pattern="default") -> list[bytes]
    count_chunks(text, pattern="default") -> int     # len(pretokenize(...)), the split alone
    simd_tier() -> str                               # portable, sse2, avx2 or avx512 (env BPE_SIMD)
    train(text, num_merges, pattern="default", special_tokens=(), threads=0) -> list[tuple[int, int]]
    ChunkCounter(pattern="default", special_tokens=(), max_memory=None)   # training, streamed
    Encoder(merges, pattern="default", special_tokens=(), token_ids=None)  # encode and decode
    MAX_THREADS, MAX_ID

When the core is not built, importing this module still works (the pipeline's
word-level tokenizer needs none of it), and the first use of a name says how to build it.
"""
import os
from collections.abc import Collection, Iterable, Sequence
from types import ModuleType
from typing import Any, Literal, TypeAlias, Union

import numpy as np

BUILD_COMMAND = "python setup.py build_ext --inplace"

# The types of the arguments the whole package takes, named once.
PathArg: TypeAlias = Union[str, "os.PathLike[str]"]  # a file or folder
Merges: TypeAlias = Sequence[tuple[int, int]]  # merge k makes token 256 + k
Ids: TypeAlias = Union[Sequence[int], "np.ndarray"]  # token ids, as a list or a numpy array
AllowedSpecial: TypeAlias = Union[Literal["all"], Collection[str]]  # tiktoken's allowed_/disallowed_special

LOW_LEVEL = ("pretokenize", "count_chunks", "simd_tier", "train", "ChunkCounter", "Encoder", "MAX_THREADS", "MAX_ID")


def load_core() -> ModuleType:
    """The compiled core, or an ImportError that says how to build it."""
    try:
        from . import _core
    except ImportError as e:
        raise ImportError(f"bpe's compiled core is not built ({e}): build it with `{BUILD_COMMAND}` in the "
                          "repository, or install the package with `pip install .`") from e
    return _core


def __getattr__(name: str) -> Any:
    if name in LOW_LEVEL:
        return getattr(load_core(), name)
    raise AttributeError(f"module 'bpe.core' has no attribute {name!r}")


def array_dtype(n_vocab: int) -> type[np.unsignedinteger]:
    """The numpy type of an array of ids: uint16 when every id fits (n_vocab of 65,536 or
    less), else uint32. (The core's encode_array applies the same rule.)"""
    return np.uint16 if n_vocab <= 65536 else np.uint32


def special_tokens_list(special_tokens: Iterable[str] | None) -> tuple[str, ...]:
    """special_tokens as a tuple of str, read once (a generator too), in their order.

    Only the shape is checked here, with the core's messages: a list (or any other
    iterable but a str, bytes, set or dict, whose order is not the user's) of str. What
    the tokens hold (empty, given twice, a lone surrogate) the core checks wherever they
    are used, once: Encoder, ChunkCounter and train all refuse them by name.
    """
    if special_tokens is None:
        return ()
    if isinstance(special_tokens, (str, bytes, bytearray, set, frozenset, dict)) or not hasattr(special_tokens,
                                                                                                 "__iter__"):
        raise TypeError(f"special_tokens must be a list of str, not {type(special_tokens).__name__}: their ids "
                        "follow the merges, in that order (to number them your own way: token_ids, or "
                        "BPETokenizer(merges, special_tokens={token: id}))")
    tokens = tuple(special_tokens)
    for token in tokens:
        if not isinstance(token, str):
            raise TypeError(f"special tokens must be str, not {type(token).__name__}: got {token!r}")
    return tokens


class PruningWarning(RuntimeWarning):
    """Training under a memory budget dropped the rarest chunks to keep to it, so the
    merges may differ from exact training. The core gives one (ChunkCounter.add,
    add_counts and merge, and so BPETokenizer.train) for each call that drops chunks.

    max_memory: the budget in bytes; dropped: the distinct chunks this call dropped;
    total_dropped: those the counter has dropped in all, this call's included;
    threshold: the highest count a dropped chunk had (ChunkCounter.pruned is
    (total_dropped, threshold)).
    """

    def __init__(self, max_memory: int, dropped: int, threshold: int, total_dropped: int) -> None:
        super().__init__(f"training would pass max_memory ({max_memory} bytes): dropped {dropped} distinct chunks "
                         f"counted {threshold} times or fewer ({total_dropped} so far); the merges may differ from "
                         "exact training (no max_memory)")
        self.max_memory, self.dropped, self.threshold, self.total_dropped = max_memory, dropped, threshold, total_dropped

    def __reduce__(self):  # the fields, not the text, are what rebuilds it
        return type(self), (self.max_memory, self.dropped, self.threshold, self.total_dropped)


class ShortVocabularyWarning(UserWarning):
    """Training stopped with fewer tokens than vocab_size asked for: no pair of tokens
    was left to merge, as every chunk of the text was one token (or, under max_memory,
    pruning took the rare chunks and their pairs away: pruned > 0).

    n_vocab: the tokens learnt; vocab_size: those asked for; merges and num_merges:
    the merges made and those wanted; pruned and threshold: the distinct chunks
    pruning dropped and their highest count (0 without pruning); max_memory: the
    budget in bytes (None without one).
    """

    def __init__(self, n_vocab: int, vocab_size: int, merges: int, num_merges: int, pruned: int = 0,
                 threshold: int = 0, max_memory: int | None = None) -> None:
        if pruned:
            why = (f"keeping to max_memory ({max_memory:,} bytes) pruned {pruned:,} distinct chunks counted "
                   f"{threshold:,} times or fewer, and the pairs in them; raise max_memory (or leave it out) for a "
                   "larger vocabulary")
        else:
            why = "every chunk of the text is a single token; train on more text for a larger vocabulary"
        super().__init__(f"n_vocab is {n_vocab}, not the {vocab_size} asked for: training stopped after {merges} of "
                         f"{num_merges} merges, as no pair of tokens was left to merge ({why})")
        self.n_vocab, self.vocab_size, self.merges, self.num_merges = n_vocab, vocab_size, merges, num_merges
        self.pruned, self.threshold, self.max_memory = pruned, threshold, max_memory

    def __reduce__(self):
        return type(self), (self.n_vocab, self.vocab_size, self.merges, self.num_merges, self.pruned,
                            self.threshold, self.max_memory)
