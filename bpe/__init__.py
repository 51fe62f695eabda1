"""bpe: byte-level BPE with a heap-driven C++ trainer and a cached C++ encoder.

    from bpe import BPETokenizer
    tok = BPETokenizer.train(["Once upon a time, there was a cat.", "The end."], vocab_size=300)
    ids = tok.encode("Once upon a time")
    assert tok.decode(ids) == "Once upon a time"
    tok.save("stories.bpe")

BPETokenizer (bpe/encoding.py) takes str and follows tiktoken's conventions. Under it
is the compiled core, bpe._core, whose low-level API is re-exported here: bytes in
(str too, where it encodes), ints out, the same argument names with the same meanings.

    bpe.pretokenize(text: bytes, pattern="default") -> list[bytes]
    bpe.count_chunks(text: bytes, pattern="default") -> int   # len(pretokenize(...)), the split alone
    bpe.simd_tier() -> str                            # portable, sse2, avx2 or avx512 (env BPE_SIMD)
    bpe.train(text: bytes, num_merges, pattern="default", special_tokens=(), threads=0)
        -> list[tuple[int, int]]                      # merge k makes token 256 + k
    bpe.ChunkCounter(pattern="default", special_tokens=(), max_memory=None)   # training, streamed:
        .add(texts: str | bytes | list, threads=0); .train(num_merges, progress=None)
        .counts() -> (chunks, offsets, counts); .add_counts(...); .merge(other)   # counts as data; it pickles
    bpe.Encoder(merges, pattern="default", special_tokens=(), token_ids=None)
        .encode(text: str | bytes, allowed_special=..., disallowed_special="all") -> list[int]
        .encode_array(...), .encode_batch(...), .count(...), .decode_bytes(ids), .n_vocab

The modules beside it: bpe.formats (its file, and tiktoken's, GPT-2's and Hugging
Face's), bpe.sources (text, JSON Lines and Parquet, streamed), bpe.token_files (token
files and folders), bpe.explain (the merges that make a word), bpe.ray_data (training
and token folders on Ray Data; needs Ray), and the command, python -m bpe.
"""
__version__ = "0.2.0"

import sys as _sys

from . import encoding
from .encoding import BUILD_COMMAND, BPETokenizer, load_core

# Until it was renamed, bpe/encoding.py was bpe/tokenizer.py, and a BPETokenizer pickled
# then names bpe.tokenizer._from_state as what rebuilds it: that name still imports, with
# no second file called tokenizer.py beside the pipeline's.
_sys.modules.setdefault(__name__ + ".tokenizer", encoding)

_LOW_LEVEL = ("pretokenize", "count_chunks", "simd_tier", "train", "ChunkCounter", "Encoder", "MAX_THREADS", "MAX_ID")

try:
    from ._core import MAX_ID, MAX_THREADS, ChunkCounter, Encoder, count_chunks, pretokenize, simd_tier, train
except ImportError:
    # Not built: the rest of the package still imports (the pipeline's word-level
    # tokenizer needs none of it), and the first use says how to build it.
    def __getattr__(name):
        if name in _LOW_LEVEL:
            return getattr(load_core(), name)
        raise AttributeError(f"module 'bpe' has no attribute {name!r}")

__all__ = ["BPETokenizer", "BUILD_COMMAND", "__version__", *_LOW_LEVEL]
