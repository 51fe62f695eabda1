"""Text from files, a piece at a time: plain text, JSON Lines and Parquet.

    from bpe import sources
    for text in sources.read_texts(["stories/", "more.jsonl"], field="text"):
        ...                                   # str, never the whole corpus at once

A corpus is files of three kinds, told apart by their names (or named with kind=):
- text: UTF-8 text (any name but the two below). A file is one text, handed over in
  pieces of about PIECE_BYTES, each cut where a chunk boundary is certain (see
  safe_cut), so that splitting the pieces one by one gives exactly the chunks of the
  whole file: training and encoding on the pieces equal training and encoding on it.
- jsonl (.jsonl, .ndjson): one JSON object per line; each object's `field` is a text.
- parquet (.parquet): a column of strings, `field`, read a batch of rows at a time;
  each row is a text. Reading it needs pyarrow (pip install "heapbpe[parquet]").

A folder stands for the files of those kinds inside it, at any depth, in name order
(hidden files and folders left out). Every problem is a SourceError (a ValueError)
naming the file and, where there is one, the line or the byte.

The bpe command reads its files with this module; so can a pipeline that wants the same
three kinds of input (data.py's --source, a Ray job reading its blocks).
"""
import codecs
import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from .core import PathArg, load_core

KINDS = ("text", "jsonl", "parquet")
SUFFIXES = {".jsonl": "jsonl", ".ndjson": "jsonl", ".parquet": "parquet"}
# In a folder, only these are read: a folder of stories should not pull in a stray binary.
TEXT_SUFFIXES = {".txt", ".text", ".md"}
# A plain-text file is read this many bytes at a time, and handed over in pieces of
# about this size: enough for the encoder's threads to share, little next to memory.
PIECE_BYTES = 8 << 20
# Rows of a Parquet file read at once.
PARQUET_BATCH_ROWS = 4096
DEFAULT_FIELD = "text"
PARQUET_EXTRA = 'reading Parquet needs pyarrow: pip install pyarrow (or pip install "heapbpe[parquet]")'


class SourceError(ValueError):
    """A file that cannot be read as the text it should hold."""


def kind_of(path: PathArg) -> str:
    """The kind of a file by its name: "jsonl", "parquet", or "text"."""
    return SUFFIXES.get(Path(path).suffix.lower(), "text")


def find_files(paths: Iterable[PathArg]) -> list[Path]:
    """The files that paths name: each file as it is, each folder as the text, JSON Lines
    and Parquet files inside it, in name order. A name that is missing is a SourceError,
    and so is a folder with nothing to read."""
    files = []
    for path in map(Path, paths):
        if path.is_dir():
            inside = sorted(p for p in path.rglob("*") if p.is_file() and _readable_in_folder(p.relative_to(path)))
            if not inside:
                raise SourceError(f"{path} holds no text, .jsonl or .parquet files "
                                  f"(looked for {', '.join(sorted(TEXT_SUFFIXES | set(SUFFIXES)))})")
            files.extend(inside)
        elif path.exists():
            files.append(path)
        else:
            raise SourceError(f"{path}: no such file or folder")
    return files


def batches(texts: Iterable[str], chars: int) -> Iterator[list[str]]:
    """The texts, in order, as lists of about `chars` characters each (the last may be
    shorter): what a call that takes many texts at once is handed, so that the calls are
    few and none holds much more than `chars`."""
    batch, size = [], 0
    for text in texts:
        batch.append(text)
        size += len(text)
        if size >= chars:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def _readable_in_folder(relative: Path) -> bool:
    if any(part.startswith(".") for part in relative.parts):
        return False
    suffix = relative.suffix.lower()
    return suffix in TEXT_SUFFIXES or suffix in SUFFIXES


def read_texts(paths: Iterable[PathArg], kind: str | None = None, field: str | None = None,
               special_tokens: Iterable[str] = (), progress: Any = None, pattern: str = "default") -> Iterator[str]:
    """The texts of every file that paths name (see find_files), one after another: see
    read_file for each."""
    for path in find_files(paths):
        yield from read_file(path, kind, field, special_tokens, progress, pattern)


def read_file(path: PathArg, kind: str | None = None, field: str | None = None, special_tokens: Iterable[str] = (),
              progress: Any = None, pattern: str = "default") -> Iterator[str]:
    """The texts of one file, as str: a text file in pieces cut at safe places (never
    inside one of special_tokens), a JSON Lines or Parquet file a record at a time.
    kind: "text", "jsonl" or "parquet" (None: by the file's name). field: the JSON key
    or Parquet column of the text (None: "text"). progress(n), when given, is told of
    each n bytes read (text and JSON Lines) or of each text's length (Parquet)."""
    kind = kind or kind_of(path)
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    field = field or DEFAULT_FIELD  # a text file has no fields: it is ignored there
    if kind == "text":
        with open(path, "rb") as f:
            yield from text_pieces(f, str(path), special_tokens, progress, pattern=pattern)
    elif kind == "jsonl":
        yield from _jsonl_texts(path, field, progress)
    else:
        yield from _parquet_texts(path, field, progress)


def text_pieces(stream: BinaryIO, name: str, special_tokens: Iterable[str] = (), progress: Any = None,
                piece_bytes: int = PIECE_BYTES, pattern: str = "default") -> Iterator[str]:
    """The UTF-8 text of a binary stream (a file, sys.stdin.buffer) in pieces of about
    piece_bytes, each ending just before a safe cut (safe_cut), so that the pieces split
    into chunks exactly as the whole text does. Bytes that are not UTF-8 are a
    SourceError that names the byte; the text is otherwise passed on exactly as it is
    (no new-line translation). A text without a safe cut is handed over whole, as is
    every text under a split pattern given as a regex (pattern: no place is certain)."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    done = 0  # bytes read so far
    held = ""  # text read but not yet handed over: it ends after the last safe cut
    while True:
        data = stream.read(piece_bytes)
        pending = len(decoder.getstate()[0])
        try:
            text = decoder.decode(data, final=not data)
        except UnicodeDecodeError as e:  # its position counts from the bytes pending before this block
            raise SourceError(f"{name} is not UTF-8 text (byte {done - pending + e.start:,}: {e.reason})") from None
        done += len(data)
        if progress is not None and data:
            progress(len(data))
        if not data:
            break
        # Only the new text can hold a new safe cut (less the longest special token, which
        # may have begun before it): looking again at all of a long text without one
        # would make reading it quadratic.
        start = max(0, len(held) - max(map(len, special_tokens), default=0))
        held += text
        cut = safe_cut(held, special_tokens, start, pattern)
        if cut > 0:
            yield held[:cut]
            held = held[cut:]
    if held:
        yield held


def safe_cut(text: str, special_tokens: Iterable[str] = (), start: int = 0, pattern: str = "default") -> int:
    """The last place in text, at or after start, where every split pattern ends a chunk
    (before a space that follows an ASCII letter: csrc/split.h, is_safe_cut, gives the
    reason) and no special token of special_tokens lies across it. 0 if there is none.
    The rule is the compiled core's, where its threads cut too."""
    return load_core().safe_cut(text, list(special_tokens), start, pattern=pattern)


def _jsonl_texts(path, field: str, progress):
    with open(path, "rb") as f:
        for number, line in enumerate(f, 1):
            if progress is not None:
                progress(len(line))
            if not line.strip():
                continue
            at = f"{path}, line {number}"
            try:
                record = json.loads(line)
            except UnicodeDecodeError as e:
                raise SourceError(f"{at} is not UTF-8 text (byte {e.start} of the line: {e.reason})") from None
            except json.JSONDecodeError as e:
                raise SourceError(f"{at} is not JSON: {e.msg} (column {e.colno})") from None
            if not isinstance(record, dict):
                raise SourceError(f"{at}: expected a JSON object with a {field!r} field, got {type(record).__name__}")
            if field not in record:
                known = ", ".join(map(repr, list(record)[:8])) or "none"
                raise SourceError(f"{at} has no field {field!r} (its fields: {known}): name the text's with --field")
            text = record[field]
            if not isinstance(text, str):
                raise SourceError(f"{at}: the field {field!r} is {type(text).__name__}, not a string")
            yield text


def _parquet_texts(path, field: str, progress):
    try:
        import pyarrow.parquet as pq
        import pyarrow.types as pa_types
    except ImportError:
        raise SourceError(f"{path}: {PARQUET_EXTRA}") from None
    try:
        parquet = pq.ParquetFile(path)
    except Exception as e:  # pyarrow's errors for a file that is not Parquet are its own classes
        raise SourceError(f"{path} is not a Parquet file ({type(e).__name__}: {e})") from None
    schema = parquet.schema_arrow
    strings = [f.name for f in schema if pa_types.is_string(f.type) or pa_types.is_large_string(f.type)]
    if field not in schema.names:
        known = ", ".join(map(repr, strings)) or "none"
        raise SourceError(f"{path} has no column {field!r} (its string columns: {known}): name the text's with --field")
    if field not in strings:
        raise SourceError(f"{path}: the column {field!r} holds {schema.field(field).type}, not strings")
    for batch in parquet.iter_batches(batch_size=PARQUET_BATCH_ROWS, columns=[field]):
        for text in batch.column(0).to_pylist():
            if text is None:  # a missing value: no text, as an empty one
                continue
            if progress is not None:
                progress(len(text))
            yield text
