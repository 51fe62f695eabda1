"""bpe: byte-level BPE with a heap-driven C++ trainer and a cached C++ encoder.

    from bpe import BPETokenizer
    tok = BPETokenizer.train(["Once upon a time, there was a cat.", "The end."], vocab_size=300)
    ids = tok.encode("Once upon a time")
    assert tok.decode(ids) == "Once upon a time"
    tok.save("stories.bpe")

BPETokenizer (bpe/encoding.py) takes str and follows tiktoken's conventions. Under it
is the compiled core, bpe._core, whose low-level API (pretokenize, count_chunks,
simd_tier, train, ChunkCounter, Encoder, MAX_THREADS, MAX_ID) is bpe.core's, and is
also reachable here as bpe.pretokenize and so on.

The modules beside it: bpe.core (the compiled core), bpe.formats (its file, tiktoken's
and GPT-2's), bpe.huggingface (Hugging Face's tokenizer.json), bpe.tekken (Mistral's
tekken.json), bpe.sources (text, JSON Lines and Parquet, streamed), bpe.token_files
(token files and folders),
bpe.atomic_writes (files written whole or not at all), bpe.explain (the merges that make
a word), bpe.registry (OpenAI's published encodings by name: get_encoding,
list_encoding_names, encoding_for_model, also reachable here), bpe.ray_data (training
and token folders on Ray Data; needs Ray), and the command, bpe.cli (python -m bpe).
"""
__version__ = "0.2.0"

import sys as _sys

from . import encoding  # noqa: F401
from .core import BUILD_COMMAND, LOW_LEVEL as _LOW_LEVEL, PruningWarning, ShortVocabularyWarning, load_core
from .encoding import BPETokenizer
from .encoding import encoding_for_model, get_encoding
from .registry import list_encoding_names

# Until it was renamed, bpe/encoding.py was bpe/tokenizer.py, and a BPETokenizer pickled
# then names bpe.tokenizer._from_state as what rebuilds it: that name still imports, with
# no second file called tokenizer.py beside the pipeline's.
_sys.modules.setdefault(__name__ + ".tokenizer", encoding)

try:
    from ._core import MAX_ID, MAX_THREADS, ChunkCounter, Encoder, count_chunks, pretokenize, simd_tier, train
except ImportError:
    # Not built: the rest of the package still imports, and the first use says how to build it.
    def __getattr__(name):
        if name in _LOW_LEVEL:
            return getattr(load_core(), name)
        raise AttributeError(f"module 'bpe' has no attribute {name!r}")

# Spelled out, not built from _LOW_LEVEL: the API page's reader (griffe) takes strings only.
__all__ = ["BPETokenizer", "BUILD_COMMAND", "__version__", "encoding_for_model", "get_encoding",
           "list_encoding_names", "PruningWarning", "ShortVocabularyWarning", "pretokenize", "count_chunks",
           "simd_tier", "train", "ChunkCounter", "Encoder", "MAX_THREADS", "MAX_ID"]
assert set(__all__) >= set(_LOW_LEVEL)
