"""bpe explain: the merges that make a word's tokens, step by step, chunk by chunk."""
import argparse

from ...explain import explain
from ..errors import library_call
from ..tokenizers import load_tokenizer
from ..tokens import bytes_text, tokens_text


def run(args: argparse.Namespace) -> int:
    tok = load_tokenizer(args.tokenizer)
    text = " ".join(args.word)
    chunks = library_call(lambda: explain(tok, text))
    if len(chunks) > 1:
        print(f"{text!r} is {len(chunks)} chunks by the {tok.pattern!r} split pattern; merges never cross "
              "from one chunk to the next, so each is merged on its own:")
    for n, chunk in enumerate(chunks, 1):
        if len(chunks) > 1:
            print()
            print(f"chunk {n}: {bytes_text(chunk.text)!r}")
        print(f"  bytes: {tokens_text(tok, chunk.start)}")
        if not chunk.steps:
            print("  no merge applies: the bytes stay as they are")
        for step in chunk.steps:
            a, b = (bytes_text(tok.decode_single_token_bytes(i)) for i in step.pair)
            made = bytes_text(tok.decode_single_token_bytes(step.token))
            times = f" (x{step.times})" if step.times > 1 else ""
            print(f"  merge rank {step.rank:>{len(str(len(tok.merges)))}}: {a!r} + {b!r} -> {made!r} "
                  f"(id {step.token}){times}: {tokens_text(tok, step.parts)}")
        print(f"  tokens: {' '.join(map(str, chunk.ids))}")
    if len(chunks) > 1:
        print()
        print(f"tokens: {' '.join(str(i) for chunk in chunks for i in chunk.ids)}")
    return 0
