"""Write a story from a checkpoint and a prompt, printing it token by token.

    python sample.py runs/pretrain-rope-bpe --prompt "Once upon a time, Zorblax"

The checkpoint is a file written by save_checkpoint, or a run folder holding one. The
story starts after an end-of-text token, as every story in the training text does, and
stops at the next one or after --tokens tokens.
"""
import argparse
import os
import sys

import torch

from model import load_checkpoint, pick_device


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description="Write a story with a trained GPT, printing it as it comes.")
    parser.add_argument("checkpoint", help="a checkpoint file, or a run folder holding one (e.g. runs/pretrain-rope-bpe)")
    parser.add_argument("--prompt", default="", help="the start of the story (default: none); special tokens in it are "
                        "taken as plain text")
    parser.add_argument("--tokens", type=int, default=300, help="the most tokens to generate (default: 300)")
    parser.add_argument("--temperature", type=float, default=0.8,
                        help="below 1 picks likely tokens more often, above 1 less; 0 always picks the likeliest (default: 0.8)")
    parser.add_argument("--top-k", type=int, default=200,
                        help="sample among the k likeliest tokens only; 0 for all of them (default: 200)")
    parser.add_argument("--seed", type=int, default=None, help="random seed, for a story that can be written again (default: none)")
    parser.add_argument("--device", default=None, help="cuda, mps or cpu (default: the first of them that is available)")
    parser.add_argument("--sliding-cache", action="store_true",
                        help="faster but approximate past the context window: slide the KV cache there instead of "
                        "running the last window again (default: exact; rotary models only, learned positions "
                        "always run exact)")
    return parser


class StoryPrinter:
    """Prints each token's text as soon as it is whole. A BPE token can end in the middle
    of a character, which the next token completes: the tokenizer's streaming decoder
    (tok.decoder()) holds those bytes until then, so each token costs its own bytes and
    a real U+FFFD in the story prints at once. The ids given first (the prompt) are
    taken as printed already. A tokenizer without a streaming decoder (the word-level
    one) is decoded whole again at each token, and what decoding adds is printed."""

    def __init__(self, tokenizer, ids, out=sys.stdout):
        self.tokenizer, self.ids, self.out = tokenizer, list(ids), out
        self.stream = tokenizer.decoder() if hasattr(tokenizer, "decoder") else None
        if self.stream is not None:
            self.printed = "".join(self.stream.add(i) for i in self.ids)
        else:
            self.printed = tokenizer.decode(self.ids)

    def add(self, i: int):
        if self.stream is not None:
            self._write(self.stream.add(i))
            return
        self.ids.append(i)
        text = self.tokenizer.decode(self.ids)
        if text.startswith(self.printed) and len(text) > len(self.printed):
            self._write(text[len(self.printed):])
            self.printed = text

    def finish(self):
        if self.stream is not None:
            self._write(self.stream.flush())
        self.out.write("\n")
        self.out.flush()

    def _write(self, text: str):
        if text:
            self.out.write(text)
            self.out.flush()


def utf8_prompt(prompt: str, parser) -> str:
    """The prompt as typed: its bytes (Python keeps an argument's bytes that are not UTF-8
    as lone surrogates) read as UTF-8. Anything else is a mistake in the command line,
    refused as argparse refuses other bad arguments: one line, exit status 2."""
    try:
        data = os.fsencode(prompt)
        return data.decode("utf-8")
    except UnicodeEncodeError as e:  # a str given to main() with a lone surrogate
        parser.error(f"--prompt is not UTF-8 text: it has the lone surrogate U+{ord(prompt[e.start]):04X} "
                     f"at character {e.start}")
    except UnicodeDecodeError as e:
        parser.error(f"--prompt is not UTF-8 text: byte 0x{data[e.start]:02x} at byte {e.start} starts no "
                     "character (is the terminal set to UTF-8?)")


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.tokens < 0:
        parser.error(f"--tokens must be 0 or more, got {args.tokens}")
    if args.temperature < 0:
        parser.error(f"--temperature must be 0 or more, got {args.temperature}")
    if args.top_k < 0:
        parser.error(f"--top-k must be 0 or more, got {args.top_k}")
    prompt_text = utf8_prompt(args.prompt, parser)
    try:
        device = pick_device(args.device)
        model, tokenizer, _ = load_checkpoint(args.checkpoint, device=device)
    except (OSError, ValueError, TypeError, ImportError) as e:
        parser.exit(1, f"{parser.prog}: error: {e}\n")
    if args.seed is not None:
        torch.manual_seed(args.seed)

    # The story starts after end of text, as every story of the training text does. The
    # prompt is a user's text: "<|endoftext|>" typed in it is plain text, not the token.
    prompt = tokenizer.encode_ordinary(prompt_text)
    printer = StoryPrinter(tokenizer, prompt)
    printer.printed = tokenizer.decode(prompt)
    print(printer.printed, end="", flush=True)
    for i in model.generate([tokenizer.eot_token] + prompt, args.tokens, temperature=args.temperature,
                            top_k=args.top_k or None, sliding_cache=args.sliding_cache and model.config.rope):
        if i == tokenizer.eot_token:  # the story is over
            break
        printer.add(i)
    printer.finish()


if __name__ == "__main__":
    main()
