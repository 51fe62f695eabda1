"""bpe show: a text with each token on a colour of its own, or followed by a mark, and
with --ids each token's id under it."""
import argparse
import shutil
import sys

from ..colour import MARK, paint, use_colour
from ..streams import text_argument
from ..tokenizers import load_tokenizer
from ..tokens import visible, width


def run(args: argparse.Namespace) -> int:
    tok = load_tokenizer(args.tokenizer)
    text = text_argument(args)
    ids = tok.encode(text, allowed_special="all" if args.allow_special else (), disallowed_special=())
    colour = use_colour(args.color, sys.stdout)
    tokens = [visible(tok.decode_single_token_bytes(i)) for i in ids]
    if not args.ids:
        sys.stdout.write("".join(paint(t, k, colour) for k, t in enumerate(tokens)) + "\n")
        return 0
    # Rows of cells, a cell per token: the token above its id, each padded to the wider
    # of the two. Without colour the mark ends each token's cell and the padding goes
    # before it (tokens often begin with a space, seldom end with one); with colour the
    # cell is one wider, so that ids never touch. A new row after a line break, and where
    # the terminal's width would be passed.
    columns = shutil.get_terminal_size((100, 24)).columns
    rows: list = []
    row: list = []
    used = 0
    for k, (token, i) in enumerate(zip(tokens, ids)):
        shown = token.rstrip("\n")
        cell = max(width(shown), len(str(i)) + (1 if colour else 0))
        if row and used + cell + 1 > columns:
            rows.append(row)
            row, used = [], 0
        row.append((k, shown, i, cell))
        used += cell + (0 if colour else len(MARK))
        if token.endswith("\n"):
            rows.append(row)
            row, used = [], 0
    if row:
        rows.append(row)
    gap = "" if colour else " " * len(MARK)
    for row in rows:
        if colour:
            top = "".join(paint(shown, k, True) + " " * (cell - width(shown)) for k, shown, i, cell in row)
        else:
            top = "".join(shown + " " * (cell - width(shown)) + MARK for k, shown, i, cell in row)
        bottom = "".join(paint(str(i), k, colour, mark=False) + " " * (cell - len(str(i))) + gap
                         for k, shown, i, cell in row)
        print(top)
        print(bottom.rstrip())
    return 0
