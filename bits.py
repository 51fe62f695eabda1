"""Bits per character of checkpoints on held-out stories, for models with any tokenizer.

    python bits.py runs/pretrain-rope runs/pretrain-rope-bpe

A loss per token cannot compare two tokenizers: a tokenizer whose tokens hold more text
makes fewer predictions, each of them harder. So the loss is added up over a text instead
of averaged, turned from nats into bits (divided by ln 2), and divided by the number of
characters, which no tokenizer changes. Lower is better.

The text is the first 2,000,000 characters of data/valid.txt, as stories (the token
files' layout: each story after an end-of-text token, which counts as one character). Its
tokens are cut into back-to-back windows of the model's context, each token predicted from
those before it in its window; the windows leave out the last few tokens, so the characters
are scaled to the share of the tokens the windows cover.

One row per checkpoint, named after its folder: bits per character, tokens, the share of
unknown tokens, characters per token, and the share of stories that come back unchanged
from encoding then decoding (spaces and new lines included).
"""
import argparse
import math
import time
from contextlib import nullcontext
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from tqdm import tqdm

import data
from model import checkpoint_path, load_checkpoint, pick_device
from tokenizer import unknown_id

CHARS = 2_000_000  # of the held-out stories
BATCH_SIZE = 16  # windows per forward pass


@torch.no_grad()
def bits_per_character(model, tokenizer, stories, device, batch_size=BATCH_SIZE) -> dict:
    """The measures for one model on stories (a list of str)."""
    # The held-out text's own end-of-text markers become the token, as in the token files.
    ids = tokenizer.encode_array(data.token_text(stories), allowed_special="all", threads=0)
    ids = torch.from_numpy(ids.astype(np.int64))
    context = model.config.context
    n = (len(ids) - 1) // context  # whole windows, each with the token after it
    if n < 1:
        raise ValueError(f"{len(ids)} tokens do not fill one window of {context} and the token after it: "
                         "use more characters")
    x = ids[:n * context].view(n, context)
    y = ids[1:n * context + 1].view(n, context)
    autocast = torch.autocast("cuda", dtype=torch.bfloat16) if torch.device(device).type == "cuda" else nullcontext()
    nats = 0.0
    model.eval()
    # A bar on a terminal only (disable=None): a default-sized model on a CPU takes minutes.
    for i in tqdm(range(0, n, batch_size), desc="windows", unit="batch", disable=None, leave=False):
        with autocast:
            logits, _ = model(x[i:i + batch_size].to(device))
        targets = y[i:i + batch_size].to(device)
        nats += F.cross_entropy(logits.float().view(-1, logits.size(-1)), targets.reshape(-1), reduction="sum").item()
    chars = data.count_chars(stories)  # end of text: one character
    covered = chars * (n * context) / len(ids)
    unknown = 0.0 if unknown_id(tokenizer) is None else (ids == unknown_id(tokenizer)).float().mean().item()
    survived = sum(tokenizer.decode(tokenizer.encode(s)) == s for s in stories)
    return {
        "bits_per_char": nats / math.log(2) / covered,
        "tokens": len(ids),
        "unknown": unknown,
        "chars_per_token": chars / len(ids),
        "round_trip": survived / len(stories),
        "loss_per_token": nats / (n * context),
    }


def run_label(path) -> str:
    """A checkpoint's name in the table: its run folder's."""
    path = Path(path).resolve()
    return path.name if path.is_dir() else path.parent.name


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description="Bits per character on held-out stories, for models with any tokenizer: summed cross "
                    "entropy over back-to-back context windows, divided by ln 2 and by the characters covered.")
    parser.add_argument("checkpoints", nargs="+", metavar="CKPT",
                        help="checkpoint files, or run folders holding one (e.g. runs/pretrain-rope runs/pretrain-rope-bpe)")
    parser.add_argument("--chars", type=int, default=CHARS,
                        help="measure on the first this many characters of the held-out stories (default: %(default)s)")
    parser.add_argument("--device", default=None, help="cuda, mps or cpu (default: the first of them that is available)")
    parser.add_argument("--batch-size", type=int, default=BATCH_SIZE, help="windows per forward pass (default: %(default)s)")
    parser.add_argument("--data-dir", type=Path, default=data.DATA_DIR,
                        help="the data folder; the held-out stories are its valid.txt (default: %(default)s)")
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.chars < 1 or args.batch_size < 1:
        parser.error("--chars and --batch-size must be at least 1")
    try:
        device = pick_device(args.device)
        for path in args.checkpoints:  # all of them, before spending minutes on the first
            checkpoint_path(path)
        stories = data.read_stories(Path(args.data_dir) / "valid.txt", args.chars)
    except (OSError, ValueError, data.DataError) as e:
        parser.exit(1, f"{parser.prog}: error: {e}\n")
    chars = data.count_chars(stories)
    print(f"held-out text: {chars:,} characters in {len(stories):,} stories, from {Path(args.data_dir) / 'valid.txt'}; "
          f"device {device}")
    width = max(12, *(len(run_label(p)) for p in args.checkpoints))
    print(f"{'model':<{width}}  {'bits/char':>9}  {'tokens':>10}  {'unknown':>8}  {'chars/token':>11}  "
          f"{'round trip':>10}  {'seconds':>7}", flush=True)
    for path in args.checkpoints:
        start = time.perf_counter()
        try:
            model, tokenizer, _ = load_checkpoint(path, device=device)
            r = bits_per_character(model, tokenizer, stories, device, args.batch_size)
        except (OSError, ValueError, TypeError, ImportError) as e:
            parser.exit(1, f"{parser.prog}: error: {path}: {e}\n")
        print(f"{run_label(path):<{width}}  {r['bits_per_char']:>9.4f}  {r['tokens']:>10,}  {r['unknown']:>8.2%}  "
              f"{r['chars_per_token']:>11.2f}  {r['round_trip']:>10.2%}  {time.perf_counter() - start:>7.1f}", flush=True)


if __name__ == "__main__":
    main()
