"""bpe decode: token ids (lines of ids, JSON lists, or a token file) back to the text's
bytes."""
import argparse
import sys

from ... import token_files
from ..errors import InputError, UsageError
from ..ids import parse_ids
from ..streams import inputs, output
from ..tokenizers import load_tokenizer


def run(args: argparse.Namespace) -> int:
    tok = load_tokenizer(args.tokenizer)
    with output(args.output, binary=True) as out:
        for name, stream in inputs(args.files):
            form = args.format or ("bin" if name.endswith(".bin") else None)
            if form == "bin":
                if stream is sys.stdin.buffer:
                    raise UsageError("--format bin reads a token file and its sidecar: name the file")
                stream.close()
                try:
                    ids = token_files.read_token_file(name, tok)
                except ValueError as e:
                    raise InputError(str(e)) from None
                step = 1 << 20
                for k in range(0, len(ids), step):  # a piece at a time: the file is memory-mapped
                    out.write(tok.decode_bytes(ids[k:k + step]))
                continue
            data = stream.read()
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError as e:
                raise InputError(f"{name} is not a list of ids: it is not even UTF-8 text (byte {e.start:,})") from None
            ids = parse_ids(text, name, form or ("json" if text.lstrip().startswith("[") else "text"))  # type: ignore[assignment]  # a list here, an array above
            try:
                out.write(tok.decode_bytes(ids))
            except ValueError as e:
                raise InputError(f"{name}: {e}") from None
    return 0
