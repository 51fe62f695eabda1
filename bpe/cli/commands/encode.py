"""bpe encode: text to token ids, as lines of ids, JSON lists, or a token file."""
import argparse
import os
import sys
from pathlib import Path

from ... import token_files
from ..errors import UsageError, library_call
from ..streams import bar, inputs, output, pieces
from ..tokenizers import load_tokenizer


def run(args: argparse.Namespace) -> int:
    tok = load_tokenizer(args.tokenizer)
    allowed = "all" if args.allow_special else ()
    if args.format == "bin" and args.output is None:
        raise UsageError("--format bin writes a token file and its sidecar: name it with -o FILE.bin")
    sizes = [os.path.getsize(f) for f in args.files if f != "-" and os.path.isfile(f)]
    progress = bar("encoding", sum(sizes) if len(sizes) == len(args.files) and sizes else None)
    if args.format == "bin":
        with progress:
            arrays = (tok.encode_array(piece, allowed_special=allowed, disallowed_special=())
                      for name, stream in inputs(args.files) for piece in pieces(stream, name, tok, progress.update))
            path = Path(args.output)
            tokens = library_call(lambda: token_files.write_token_file(
                path, arrays, tok, tokenizer_name=args.tokenizer_name, text_name=", ".join(args.files) or "stdin"))
        print(f"wrote {tokens:,} tokens to {path} ({token_files.token_dtype(tok.n_vocab)}) "
              f"and {token_files.sidecar_path(path).name}", file=sys.stderr)
        return 0
    with progress, output(args.output, binary=False) as out:
        json_list = args.format == "json"
        between = ", " if json_list else " "
        for name, stream in inputs(args.files):
            first = True
            out.write("[" if json_list else "")
            for piece in pieces(stream, name, tok, progress.update):
                ids = tok.encode(piece, allowed_special=allowed, disallowed_special=())
                if ids:
                    out.write(("" if first else between) + between.join(map(str, ids)))
                    first = False
            out.write("]\n" if json_list else "\n")
    return 0
