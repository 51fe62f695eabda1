"""Reading and writing: the inputs (files named, or stdin) as pieces of text that
encode as the whole does, the output (stdout, or a file written whole or not at all),
progress bars, and stand-ins for standard streams the command was started without."""
import os
import sys
from contextlib import contextmanager
from pathlib import Path

from .. import sources
from ..atomic_writes import atomic_write
from .errors import InputError, UsageError


def find_files(names):
    try:
        return sources.find_files(names)
    except sources.SourceError as e:
        raise InputError(str(e)) from None


def inputs(names):
    """(name, binary stream) of each input: the files named, or stdin."""
    if not names:
        yield "stdin", sys.stdin.buffer
        return
    for name in names:
        if name == "-":
            yield "stdin", sys.stdin.buffer
            continue
        try:
            stream = open(name, "rb")
        except OSError as e:
            raise InputError(f"{name}: {e.strerror}") from None
        with stream:
            yield name, stream


def pieces(stream, name, tok, progress=None):
    """The text of a stream in pieces that encode as the whole text does. A tokenizer.json's
    rules (an added token's stripped spaces, a Split's `$`) may read across any place, so
    under rules the text is one piece."""
    if tok.rules is not None:
        return with_errors(_whole(sources.text_pieces(stream, name, (), progress)))
    return with_errors(sources.text_pieces(stream, name, tok.special_tokens, progress, pattern=tok.pattern))


def _whole(texts):
    yield "".join(texts)


def with_errors(texts):
    try:
        yield from texts
    except sources.SourceError as e:
        raise InputError(str(e)) from None
    except OSError as e:
        raise InputError(f"{getattr(e, 'filename', None) or 'input'}: {e.strerror or e}") from None


def bar(desc: str, total=None):
    """A progress bar of bytes on stderr, shown only when stderr is a terminal."""
    from tqdm import tqdm

    return tqdm(desc=desc, total=total, unit="B", unit_scale=True, disable=None, leave=False, file=sys.stderr)


@contextmanager
def output(path, binary: bool):
    """stdout, or the file -o names: written to a temporary file of this run's own beside
    it, which replaces the old file only when complete (bpe.atomic_writes.atomic_write)."""
    if path is None:
        yield sys.stdout.buffer if binary else sys.stdout
        return
    with atomic_write(path) as tmp, open(tmp, "wb" if binary else "w", encoding=None if binary else "utf-8") as f:
        yield f


def text_argument(args) -> str:
    """The text of bpe show: the argument, the file -f names, or stdin."""
    if args.file is not None and args.text is not None:
        raise UsageError("give the text or -f FILE, not both")
    if args.text is not None:
        return args.text
    name = args.file or "-"
    stream = sys.stdin.buffer if name == "-" else None
    try:
        data = stream.read() if stream else Path(name).read_bytes()
    except OSError as e:
        raise InputError(f"{name}: {e.strerror}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        shown = "stdin" if name == "-" else name
        raise InputError(f"{shown} is not UTF-8 text (byte {e.start:,}: {e.reason})") from None


def size(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 100_000 else f"{n:,} bytes"


class ClosedStream:
    """What stands for stdin or stdout when the command was started with it closed
    (`bpe encode <&-`, where Python has None): using it is an error that says so."""

    closed = False  # so that Python's flush at exit finds nothing to do

    def __init__(self, name: str, hint: str):
        self.name, self.hint = name, hint

    def flush(self):
        pass

    def __getattr__(self, attribute):
        raise InputError(f"{self.name} is closed: {self.hint}")


def open_streams():
    """Stand-ins for streams the command was started without (see ClosedStream)."""
    if sys.stdin is None:
        sys.stdin = ClosedStream("stdin", "nothing to read (name a file, or pipe text in)")
    if sys.stdout is None:
        sys.stdout = ClosedStream("stdout", "nowhere to write (name a file with -o)")
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w")
