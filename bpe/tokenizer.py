"""What bpe/encoding.py was called in bpe 0.2.0, kept for one reason: a BPETokenizer
pickled then names the function that rebuilds it as bpe.tokenizer._from_state, and such
pickles must still load. Import from bpe (or bpe.encoding), not from here."""
from .encoding import _from_state  # noqa: F401
