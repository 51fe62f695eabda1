"""bpe count: the tokens of each file, and in total, without keeping the ids."""
import argparse
import os
import sys
from pathlib import Path

from ... import sources
from ..errors import library_call
from ..streams import bar, find_files, pieces, with_errors
from ..tokenizers import load_tokenizer


def run(args: argparse.Namespace) -> int:
    tok = load_tokenizer(args.tokenizer)
    allowed = "all" if args.allow_special else ()
    total, rows = 0, []
    files = [path for name in args.files or ["-"] for path in ([Path("-")] if name == "-" else find_files([name]))]
    with bar("counting", sum(os.path.getsize(f) for f in files if str(f) != "-") or None) as progress:
        for path in files:
            if str(path) == "-":
                texts = pieces(sys.stdin.buffer, "stdin", tok, progress.update)
            elif tok.rules is not None and (args.input_format or sources.kind_of(path)) == "text":
                with open(path, "rb") as stream:  # under rules a text file is one piece (see pieces)
                    texts = list(pieces(stream, str(path), tok, progress.update))
            else:
                texts = sources.read_file(path, kind=args.input_format, field=args.field,
                                          special_tokens=tok.special_tokens, progress=progress.update,
                                          pattern=tok.pattern)
            # A file's texts (a text file's pieces, a .jsonl's documents) counted a batch
            # at a time in one call, which shares them out between the threads.
            n = 0
            for batch in sources.batches(with_errors(texts), sources.PIECE_BYTES):
                n += int(library_call(lambda: tok.count_batch(batch, allowed_special=allowed, disallowed_special=(),
                                                              threads=args.threads)).sum())
            rows.append((n, "stdin" if str(path) == "-" else str(path)))
            total += n
    if len(rows) > 1:
        rows.append((total, "total"))
    width = max(len(str(n)) for n, _ in rows)
    for n, name in rows:
        print(f"{n:>{width}} {name}")
    return 0
