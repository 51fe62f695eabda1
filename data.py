"""The stories, as text and as tokens: get them, build a tokenizer, write the token files.

    python data.py                       # download the stories, word vocabulary, train.bin/valid.bin
    python data.py --bpe                 # learn 7,934 BPE merges, train-bpe.bin/valid-bpe.bin
    python data.py --source DIR [--bpe]  # the same from local text files, or JSON Lines / Parquet
                                         # shards, without a network

The data folder is data/ beside this script (--data-dir changes it). It holds:

    train.txt, valid.txt   the training and held-out stories, UTF-8 text, stories separated by a
    instruct.txt           line "<|endoftext|>"; instruct.txt holds instruction-style stories
                           (TinyStoriesInstruct), whose words a later fine-tuning stage needs
    vocab.json             the word-level vocabulary (WordTokenizer.save)
    tokenizer.bpe          the BPE tokenizer (bpe.BPETokenizer.save: JSON with the split pattern, the
                           merges, the special tokens and their ids)
    train.bin, valid.bin   word-level token ids
    train-bpe.bin, ...     BPE token ids (valid-bpe.bin likewise)
    train.bin.json, ...    beside each token file, its sidecar: the tokenizer that wrote it (its file's
                           name and tokenizer.fingerprint, a sha256 of its content), the dtype and the
                           number of ids

Token files are a flat array of unsigned 16-bit integers, little-endian (numpy "<u2"), with no
header, so that they memory-map as they are: each story is the end-of-text token followed by the
story's tokens, story after story, so the model learns that a story starts after end of text
(sample.py starts its stories there). `load_tokens` reads one back for a tokenizer and refuses it,
with the command that makes it again, unless its sidecar names that very tokenizer.

Memory: every step streams, so a corpus of any size goes through in the same memory (but for
--engine ray, which hands each split's stories to Ray from a list on this machine: for a corpus
larger than it, run bpe.ray_data on the shards themselves, docs/scale-out.md). Files are
read a megabyte at a time and cut into stories as they are read; BPE counts the chunks of a few
megabytes of stories at a time and keeps only the distinct ones (bpe.BPETokenizer.train), the
word level keeps only word counts; encoding takes 8 M characters of stories at a time and
appends their ids to the token file. Peak memory is, whatever the input's size:
    about 50 MB for Python, numpy and the tokenizer,
  + about 45 MB for the batch of stories being encoded (BATCH_CHARS, 8 M characters of ASCII
    text; up to 4 times that for text that Python stores in 2 or 4 bytes a character),
  + the longest story, a few times over (at most MAX_STORY_CHARS, 8 M characters: a longer
    one means the separator is wrong, and is refused),
  + what follows the text's variety, not its size: BPE's table of distinct chunks, the word
    counts, the encoder's cache (at most 2^20 chunks of up to 64 bytes each).
On 3 GB of made-up TinyStories-like stories, under a 1 GiB cap on its address space, data.py
peaked at 102 to 105 MB resident with --bpe and at 86 to 88 MB without, in two runs of
`python tools/data_memory.py`.

Downloads come from the Hugging Face hub (TinyStories, Eldan & Li 2023, CDLA-Sharing-1.0), into
data/downloads/ as NAME.part, resumed with an HTTP Range request when interrupted, and renamed
only once complete; the text files are then written to a temporary name and renamed, so an
interrupted run never leaves a file that looks complete and is not.

The file reads in the order a reader needs it: first the public part, the token files and their
loaders (load_tokens, load_tokenizer: what pretrain.py and bits.py use); then the stories as text;
getting them; building the tokenizers and writing the token files; the command line.
"""


import argparse
import codecs
import contextlib
import http.client
import logging
import os
import re
import socket
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np

from bpe import sources, token_files
from bpe.files import atomic_write, remove_stale_temporaries
from tokenizer import END_OF_TEXT, PAD, BPETokenizer, WordTokenizer, fingerprint, kind, unknown_id


# =======================================================================================
# Public: the token files and the tokenizers, as the other scripts read them
#
# pretrain.py and bits.py use these names and no others: DATA_DIR, DataError,
# load_tokenizer, token_source and load_tokens (the tokenizer and its tokens), and
# read_stories, token_text and count_chars (the held-out stories that bits.py encodes).
# The format is the module docstring's; writing and reading go through bpe.token_files,
# whose sidecar this file's loader checks against the tokenizer that will read the ids.


# The data folder beside the scripts; pretrain.py and bits.py take it from here.
DATA_DIR = Path(__file__).resolve().parent / "data"


class DataError(Exception):
    """A problem with the data that the user can fix; main prints it without a traceback."""


# The token files' ids: unsigned 16-bit, little-endian, whatever the machine.
TOKEN_DTYPE = "<u2"


def token_file(data_dir, split: str, bpe: bool) -> Path:
    """data/train.bin, data/valid-bpe.bin, ..."""
    return Path(data_dir) / f"{split}{'-bpe' if bpe else ''}.bin"


def token_source(data_dir, split: str, bpe: bool) -> Path:
    """What load_tokens reads for a split: data/train-bpe/, a token folder that
    bpe.ray_data wrote (docs/scale-out.md), where it has a manifest, else the token file
    token_file names."""
    folder = Path(data_dir) / f"{split}{'-bpe' if bpe else ''}"
    return folder if (folder / "manifest.json").exists() else token_file(data_dir, split, bpe)


def make_command(bpe: bool) -> str:
    return "python data.py --bpe" if bpe else "python data.py"


def sidecar_file(path) -> Path:
    """The file beside a token file that names its tokenizer: train-bpe.bin.json, ..."""
    return token_files.sidecar_path(path)


def tokenizer_file(data_dir, bpe: bool) -> Path:
    """data/tokenizer.bpe (bpe) or data/vocab.json."""
    return Path(data_dir) / ("tokenizer.bpe" if bpe else "vocab.json")


def token_text(stories) -> str:
    """The text the token files hold: each story after an end-of-text marker."""
    return "".join(END_OF_TEXT + s for s in stories)


def count_chars(stories) -> int:
    """Characters of token_text(stories), each end of text counting as one character."""
    return sum(len(s) for s in stories) + len(stories)


def write_tokens(path, arrays, tokenizer, text_name: str | None = None) -> int:
    """Write a token file from arrays of ids (appended as they come) and then its
    sidecar, in the library's token-file format (bpe/token_files.py): the sidecar names
    the tokenizer (the hash of its content, its file's name), the dtype and the number of
    tokens. The pipeline's files are little-endian uint16 with no header, so that they
    memory-map as they are. Returns the tokens written."""
    vocab_size = len(tokenizer)
    if vocab_size > 1 << 16:
        raise ValueError(f"a vocabulary of {vocab_size} tokens does not fit the token files' 16 bits")
    path = Path(path)
    with _writing(path):
        return token_files.write_token_file(path, arrays, tokenizer, writer="data.py", text_name=text_name,
                                            tokenizer_name=tokenizer_file(path.parent, kind(tokenizer) == "bpe").name)


def load_tokens(path, tokenizer) -> np.ndarray:
    """A token file as a read-only array of "<u2" (memory-mapped, not read into memory),
    checked against its sidecar (read by bpe.token_files) and the tokenizer that will read
    it: written by this very tokenizer (the same fingerprint), as uint16, whole, and each id
    below its vocabulary. Anything else is a DataError, in one line, with the command that
    makes the file again. A token folder (token_source) is read by load_token_folder."""
    if not hasattr(tokenizer, "state"):
        raise TypeError(f"load_tokens takes the tokenizer that will read the file, not a {type(tokenizer).__name__}")
    path = Path(path)
    if path.is_dir():
        return load_token_folder(path, tokenizer)
    bpe = kind(tokenizer) == "bpe"
    command = make_command(bpe)
    again = f"make it again with `{command}`"
    if not path.exists():
        raise DataError(f"no {path}: make it with `{command}`")
    with _reading(path):
        size = path.stat().st_size
    if size == 0 or size % 2:
        raise DataError(f"{path} is not a token file: {size:,} bytes is not a whole number of 16-bit ids "
                        f"(interrupted?); {again}")
    sidecar = sidecar_file(path)
    if not sidecar.exists():
        raise DataError(f"{path} has no {sidecar.name} to name the tokenizer that wrote it (an earlier data.py, "
                        f"or a copied file?); {again}")
    with _reading(sidecar):
        try:
            about = token_files.read_sidecar(path)  # its fields, and the ids it says the file holds
        except ValueError as e:
            raise DataError(f"{e}; {again}") from None
    if about["tokenizer_sha256"] != fingerprint(tokenizer):
        raise DataError(f"{path} was written by another tokenizer than the {kind(tokenizer)} tokenizer given "
                        f"(its {sidecar.name} names {about.get('tokenizer')!s} with hash "
                        f"{str(about['tokenizer_sha256'])[:12]}, this one's is {fingerprint(tokenizer)[:12]}); {again}")
    if about["dtype"] != TOKEN_DTYPE:
        raise DataError(f"{path} holds {about['dtype']!s} ids by its {sidecar.name}, not {TOKEN_DTYPE}; {again}")
    tokens = np.memmap(path, dtype=TOKEN_DTYPE, mode="r")
    top = int(tokens.max())
    if top >= len(tokenizer):
        raise DataError(f"{path} holds id {top}, outside the tokenizer's {len(tokenizer)} tokens; {again}")
    return tokens


class TokenShards:
    """The shards of a token folder as one sequence of ids, each shard memory-mapped:
    len() and slices (which may cross from one shard into the next) as get_batch and
    bits.py take them from one token file's array."""

    def __init__(self, shards):
        self.shards = [s for s in shards if len(s)]
        self.starts = np.cumsum([0] + [len(s) for s in self.shards])  # where each shard begins

    def __len__(self) -> int:
        return int(self.starts[-1])

    def __getitem__(self, key):
        if not isinstance(key, slice) or key.step not in (None, 1):
            raise TypeError("a token folder's ids are read in slices of consecutive ids")
        start, stop, _ = key.indices(len(self))
        if stop <= start:
            return np.zeros(0, dtype=TOKEN_DTYPE)
        first = int(np.searchsorted(self.starts, start, side="right")) - 1
        parts = []
        while start < stop:
            begin = int(self.starts[first])
            end = min(stop, int(self.starts[first + 1]))
            parts.append(self.shards[first][start - begin:end - begin])
            start, first = end, first + 1
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def max(self) -> int:
        return max((int(s.max()) for s in self.shards), default=0)


def load_token_folder(path, tokenizer) -> TokenShards:
    """A token folder (bpe.ray_data.write_token_folder: shards and a manifest) read as
    load_tokens reads one token file: every shard checked against the manifest and its
    sidecar, written by this tokenizer as uint16, memory-mapped shard by shard."""
    from bpe.token_files import read_manifest, read_token_folder

    path = Path(path)
    if kind(tokenizer) != "bpe":
        raise DataError(f"{path} is a token folder, which only BPE tokens are written to, not {kind(tokenizer)} ones")
    try:
        manifest = read_manifest(path)
        if manifest.get("dtype") != TOKEN_DTYPE:
            raise ValueError(f"its manifest says {manifest.get('dtype')!s} ids, not the {TOKEN_DTYPE} the model reads")
        return TokenShards(read_token_folder(path, tokenizer))
    except ValueError as e:
        raise DataError(f"{path} is not a token folder to read: {e}") from None


def load_tokenizer(data_dir, bpe: bool):
    """The tokenizer that data.py built: data/tokenizer.bpe (bpe) or data/vocab.json."""
    path = tokenizer_file(data_dir, bpe)
    if not path.exists():
        legacy = Path(data_dir) / "merges.txt"
        earlier = f" ({legacy} is from an earlier version of data.py)" if bpe and legacy.exists() else ""
        raise DataError(f"no {path}{earlier}: make it with `{make_command(bpe)}`")
    try:
        with _reading(path):
            return BPETokenizer.load(path) if bpe else WordTokenizer.load(path)
    except ValueError as e:
        raise DataError(f"{e}; make it again with `{make_command(bpe)}`") from None


def read_stories(path, max_chars: int | None = None) -> list[str]:
    """The stories of a text file that data.py wrote, as a list (bits.py takes the first 2 M
    characters of the held-out ones); with max_chars, of its first max_chars characters
    only (the last story then ends where the limit cuts it)."""
    path = Path(path)
    if not path.exists():
        raise DataError(f"no {path}: make it with `python data.py` (or `python data.py --source DIR`)")
    with _reading(path):
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read() if max_chars is None else f.read(max_chars)
        except UnicodeDecodeError as e:
            raise DataError(f"{path} is not UTF-8 text ({e.reason}): make it again with `python data.py`") from None
    if max_chars is not None and len(text) == max_chars:
        # The limit may cut a marker in half: what is left of it is not story text.
        tail = text.rfind("\n<")
        if tail >= 0 and ("\n" + END_OF_TEXT).startswith(text[tail:]):
            text = text[:tail]
    stories = split_stories(text, "eot")
    if not stories:
        raise DataError(f"{path} holds no stories: make it again with `python data.py`")
    return stories


# =======================================================================================
# Stories as text
#
# Every file is read a block at a time and cut into stories as it goes (iter_stories), so
# that no step holds more than a block, one story and one batch of stories in memory.


SEPARATORS = {
    "eot": "the text <|endoftext|> (TinyStories' own files put it on a line of its own)",
    "blank": "one or more blank lines (a single line break stays inside a story)",
    "line": "single line breaks (between two lines of text; blank lines are paragraph breaks inside a "
            "story, as in a TinyStories file with its <|endoftext|> lines taken out)",
}
# Whatever the separator, <|endoftext|> ends a story: no story may hold it, since it
# separates the stories of the files data.py writes.
_EOT = re.escape(END_OF_TEXT)
_SPLIT = {
    "eot": re.compile(_EOT),
    "blank": re.compile(_EOT + r"|\n[ \t]*\n"),
    "line": re.compile(_EOT + r"|(?<=\S)[ \t]*\n(?=[ \t]*\S)"),
}

# --separator auto looks at this much of a file's beginning.
DETECT_BYTES = 1 << 20
# ...and picks "line" when at least this share of the breaks between lines of text are
# single line breaks. The shared samples sit far on either side: in the training sample
# (a single line break after each story, a blank line after each paragraph inside one)
# 21 % of the breaks are single, in the held-out one (blank lines after stories and
# paragraphs alike, a single line break inside a paragraph now and then) 1.2 %.
LINE_SHARE = 0.1

# Files are read this many bytes at a time.
READ_BYTES = 1 << 20
# Stories are encoded this many characters at a time: enough for the threads to share.
BATCH_CHARS = 1 << 23
# A longer "story" means the separator is wrong (TinyStories' are a few thousand
# characters); refusing it keeps memory bounded whatever the file.
MAX_STORY_CHARS = 8_000_000


def detect_separator(text: str) -> str:
    """What separates the stories of text (a file's first MB) when --separator is auto:
    end of text if the text has it; else single line breaks if they are at least
    LINE_SHARE of the breaks between lines of text (stories that end with a single line
    break, paragraphs with a blank line); else blank lines."""
    if END_OF_TEXT in text:
        return "eot"
    text = text.replace("\r\n", "\n")
    single = len(_SPLIT["line"].findall(text))
    blank = len(re.findall(r"\n(?:[ \t]*\n)+", text))
    return "line" if single and single >= LINE_SHARE * (single + blank) else "blank"


def split_stories(text: str, separator: str = "eot") -> list[str]:
    """The stories of text, each stripped of the whitespace around it; empty ones dropped."""
    return list(_stories([text.replace("\r\n", "\n")], separator))


def _stories(blocks, separator: str, complete: bool = True, name="the text"):
    """The stories of text given as consecutive blocks of str. The text after the last
    separator is a story only if complete (else it may be cut off in the middle)."""
    if separator not in _SPLIT:
        raise ValueError(f"separator must be one of {sorted(SEPARATORS)}, got {separator!r}")
    pattern = _SPLIT[separator]
    rest = ""  # the text after the last separator found so far: the start of a story
    for block in blocks:
        # rest begins right after a separator, so splitting it again with the next block
        # finds the same separators as splitting the whole text would.
        parts = pattern.split(rest + block)
        rest = parts.pop()
        for part in parts:
            story = part.strip()
            if story:
                yield story
        if len(rest) > MAX_STORY_CHARS:
            raise DataError(f"{name}: a story longer than {MAX_STORY_CHARS:,} characters: are its stories "
                            f"separated by {SEPARATORS[separator].split(' (')[0]}? (see --separator)")
    story = rest.strip()
    if complete and story:
        yield story


def _text_blocks(path, max_bytes: int | None, cut: bool, name, progress=None):
    """The UTF-8 text of a file (its first max_bytes bytes, when given), READ_BYTES at a
    time, with "\r\n" as "\n". When cut (the bytes are a prefix of a longer text), a
    character cut at the end is dropped. progress(n) is told of the bytes read."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    done = 0  # bytes read so far
    held = ""  # a "\r" at the end of a block, which may start a "\r\n"
    with _reading(path):
        with open(path, "rb") as f:
            while True:
                want = READ_BYTES if max_bytes is None else min(READ_BYTES, max_bytes - done)
                data = f.read(want) if want > 0 else b""
                last = not data
                pending = len(decoder.getstate()[0])
                try:
                    text = decoder.decode(data, final=last and not cut)
                except UnicodeDecodeError as e:  # its position counts from the pending bytes
                    raise DataError(f"{name} is not UTF-8 text (byte {done - pending + e.start:,}: {e.reason})") from None
                done += len(data)
                if progress is not None:
                    progress(len(data))
                text = held + text
                held = "\r" if text.endswith("\r") and not last else ""
                text = text[:-1] if held else text
                yield text.replace("\r\n", "\n")
                if last:
                    return


@contextlib.contextmanager
def _os_errors_as_data_errors(doing: str, path):
    """An OSError while doing something to path (a folder, no permission, disk full, a
    disk error) as a DataError that names both."""
    try:
        yield
    except OSError as e:
        raise DataError(f"cannot {doing} {path}: {e.strerror or e}") from None


def _reading(path):
    return _os_errors_as_data_errors("read", path)


def _writing(path):
    return _os_errors_as_data_errors("write", path)


def iter_stories(path, separator: str = "eot", max_bytes: int | None = None, cut: bool | None = None,
                 name=None, progress=None, remake: str | None = None):
    """The stories of a text file, one at a time, read a block at a time: memory holds a
    block and a story, whatever the file's size. With max_bytes, of its first max_bytes
    bytes; when those are a prefix of a longer text (cut; by default, when the file is
    longer), the last story is dropped, as it may be cut off in the middle. A file with no
    story is a DataError; remake, when given, is the command that makes the file."""
    path = Path(path)
    name = path if name is None else name
    if not path.exists():
        raise DataError(f"no {path}" + (f": make it with `{remake}`" if remake else ""))
    if cut is None:
        with _reading(path):
            cut = max_bytes is not None and path.stat().st_size > max_bytes
    found = 0
    for story in _stories(_text_blocks(path, max_bytes, cut, name, progress), separator, not cut, name):
        found += 1
        yield story
    if not found:
        what = "complete story" if cut else "story"
        raise DataError(f"{name}: found no {what} (stories separated by {SEPARATORS[separator]})"
                        + ("; take a larger prefix" if cut else "")
                        + (f"; make it again with `{remake}`" if remake else ""))


def write_stories(path, stories) -> int:
    """Write stories (any iterable of str, written as it comes) as TinyStories' files do,
    a line <|endoftext|> between stories, atomically: a crash, or an error while the
    stories are read, leaves the old file or the new one. Returns how many it wrote."""
    n = 0
    with _writing(path), atomic_write(path) as tmp, open(tmp, "w", encoding="utf-8", buffering=1 << 20) as f:
        for story in stories:
            if END_OF_TEXT in story:
                raise ValueError(f"story {n} holds {END_OF_TEXT}, which separates stories")
            f.write(f"\n{END_OF_TEXT}\n" + story if n else story)
            n += 1
        if not n:
            raise DataError(f"no stories to write to {path}")
        f.write("\n")
    return n


def data_stories(path, progress=None):
    """The stories of a file that data.py wrote (train.txt, ...), streamed."""
    return iter_stories(path, "eot", progress=progress, remake="python data.py")


# =======================================================================================
# Getting the stories: downloaded from the hub, or from local files (--source)


# Where the stories come from. TinyStoriesInstruct is a dataset of its own on the hub, so the
# base is the owner's folder and each file names its dataset. TINYSTORIES_BASE_URL (or
# --base-url) points it elsewhere, e.g. at a mirror, or at the tests' server on 127.0.0.1.
BASE_URL = "https://huggingface.co/datasets/roneneldan"
TRAIN_URL = "TinyStories/resolve/main/TinyStories-train.txt"  # 1.9 GB: a prefix of it is enough
VALID_URL = "TinyStories/resolve/main/TinyStories-valid.txt"  # 19 MB, all of it
INSTRUCT_URL = "TinyStoriesInstruct/resolve/main/TinyStories-Instruct-train.txt"  # 2.7 GB: a prefix

# Prefix sizes, in MB (10^6 bytes), from the episode: its BPE tokens of the training stories
# were about 21 M at about 4.08 characters each, about 86 MB of text, and its merges were
# learned from about 158 MB of stories and instructions, which leaves about 72 MB for those.
TRAIN_MB = 86
INSTRUCT_MB = 72

DOWNLOAD_TIMEOUT = 60  # seconds without a byte before a transfer counts as interrupted
DOWNLOAD_RETRIES = 5  # resumes within one run after an interrupted transfer
NO_NETWORK = "no network: use --source DIR, see --help"


# ---------------------------------------------------------------------------------------
# Downloads


class DownloadError(DataError):
    pass


def download(url: str, dest, max_bytes: int | None = None, retries: int = DOWNLOAD_RETRIES,
             timeout: float = DOWNLOAD_TIMEOUT, progress: bool = True) -> Path:
    """Download url (its first max_bytes bytes, when given) to dest.

    The bytes go to dest.part, which an interrupted run leaves behind; the next attempt (in
    this run, up to `retries` times, or in the next run) asks only for the rest with an HTTP
    Range request. dest appears, by a rename, only once all the bytes are there.
    """
    from tqdm import tqdm

    dest = Path(dest)
    part = dest.with_name(dest.name + ".part")
    dest.parent.mkdir(parents=True, exist_ok=True)
    if dest.exists():
        return dest
    total = None  # the bytes wanted: max_bytes, or the whole file (once the server says)
    for attempt in range(retries + 1):
        have = part.stat().st_size if part.exists() else 0
        if max_bytes is not None and have >= max_bytes:
            break
        if total is not None and have >= total:
            break
        headers = {"User-Agent": "bpe-tinystories-data.py"}
        if have or max_bytes is not None:
            last = "" if max_bytes is None else str(max_bytes - 1)
            headers["Range"] = f"bytes={have}-{last}"
        try:
            response = urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=timeout)
        except urllib.error.HTTPError as e:
            if e.code == 416 and have and max_bytes is None:  # nothing past what we have: done
                total = have
                break
            raise DownloadError(f"{url}: HTTP {e.code} {e.reason}") from None
        except (urllib.error.URLError, OSError) as e:
            reason = getattr(e, "reason", e)
            if have and attempt < retries:  # it answered before: a passing failure, try again
                print(f"  {dest.name}: {reason}; trying again", file=sys.stderr)
                time.sleep(min(2 ** attempt, 30))
                continue
            raise DownloadError(f"could not reach {url} ({reason}): {NO_NETWORK}") from None
        with response:
            if response.status == 206:
                start, size = _content_range(response.headers.get("Content-Range", ""))
                if start != have:
                    raise DownloadError(f"{url}: asked for bytes from {have}, the server sent them from {start}")
            else:  # 200: the server ignored the range and sends the file from its start
                have, size = 0, _int(response.headers.get("Content-Length"))
            total = size if max_bytes is None else min(max_bytes, size or max_bytes)
            with open(part, "ab" if have else "wb") as f, \
                    tqdm(total=total, initial=have, unit="B", unit_scale=True, desc=dest.name,
                         disable=not progress, file=sys.stderr) as bar:
                interrupted = False
                try:
                    while total is None or have < total:
                        chunk = response.read(min(1 << 20, total - have) if total else 1 << 20)
                        if not chunk:
                            break
                        f.write(chunk)
                        have += len(chunk)
                        bar.update(len(chunk))
                except (http.client.HTTPException, OSError, socket.timeout) as e:
                    interrupted = True
                    print(f"  {dest.name}: interrupted after {have:,} bytes ({type(e).__name__}); "
                          "resuming", file=sys.stderr)
                finally:
                    f.flush()
                    os.fsync(f.fileno())
            if total is None and have and not interrupted:  # no length given: a clean end is the end
                total = have
    have = part.stat().st_size if part.exists() else 0
    if max_bytes is not None and have > max_bytes:
        with open(part, "r+b") as f:
            f.truncate(max_bytes)
        have = max_bytes
    if total is None or have < total:
        raise DownloadError(f"{url}: the transfer was interrupted with {have:,} bytes in {part}; "
                            "run data.py again: it continues from there")
    os.replace(part, dest)
    return dest


def _content_range(value: str):
    """(first byte, size of the whole file or None) from 'bytes 100-199/5000'."""
    m = re.fullmatch(r"\s*bytes\s+(\d+)-(\d+)/(\d+|\*)\s*", value)
    if not m:
        raise DownloadError(f"the server answered a range request with Content-Range {value!r}")
    return int(m.group(1)), None if m.group(3) == "*" else int(m.group(3))


def _int(value):
    return int(value) if value and value.isdigit() else None


def get_stories(data_dir: Path, base_url: str, train_mb: float, instruct_mb: float, progress: bool = True):
    """Download what data_dir lacks of train.txt, valid.txt and instruct.txt."""
    wanted = [("train.txt", TRAIN_URL, train_mb), ("valid.txt", VALID_URL, None),
              ("instruct.txt", INSTRUCT_URL, instruct_mb)]
    for name, remote, mb in wanted:
        out = data_dir / name
        if out.exists():
            print(f"{out}: already there (delete it to download it again)")
            continue
        url = base_url.rstrip("/") + "/" + remote
        max_bytes = None if mb is None else _mb_to_bytes(mb)
        raw_name = Path(remote).name + ("" if max_bytes is None else f".first-{max_bytes}-bytes")
        raw = download(url, data_dir / "downloads" / raw_name, max_bytes, progress=progress)
        # A prefix shorter than asked for is the whole file: its last story is complete.
        cut = max_bytes is not None and raw.stat().st_size == max_bytes
        n = write_stories(out, iter_stories(raw, "eot", cut=cut, name=url))
        raw.unlink()
        print(f"{out}: {n:,} stories, {out.stat().st_size / 1e6:.1f} MB, from {url}"
              + (f" (its first {mb:g} MB, cut after the last whole story)" if cut else ""))


def _mb_to_bytes(mb: float) -> int:
    n = int(round(mb * 1e6))
    if n < 1:
        raise DataError(f"a size in MB must be positive, got {mb}")
    return n


# ---------------------------------------------------------------------------------------
# Local files (--source)


def find_source_files(source: Path) -> dict:
    """{"train": path, "valid": path, "instruct": path or None} among source's .txt files:
    names containing "train" / "valid" (and not "instruct") are the stories and the held-out
    stories, and one containing "instruct" (preferring "train" among several) the instructions."""
    if not source.is_dir():
        raise DataError(f"--source {source}: not a folder")
    files = sorted(p for p in source.iterdir() if p.is_file() and p.suffix.lower() == ".txt")
    lower = {p: p.name.lower() for p in files}
    found = {}
    for split in ("train", "valid"):
        matches = [p for p in files if split in lower[p] and "instruct" not in lower[p]]
        if not matches:
            raise DataError(f"--source {source}: no .txt file whose name contains {split!r} "
                            f"(e.g. TinyStories-{split}.txt); found {[p.name for p in files]}")
        if len(matches) > 1:
            raise DataError(f"--source {source}: several files could be the {split} stories: "
                            f"{[p.name for p in matches]}; keep one")
        found[split] = matches[0]
    instruct = [p for p in files if "instruct" in lower[p]]
    if len(instruct) > 1:
        instruct = [p for p in instruct if "train" in lower[p]] or instruct
    if len(instruct) > 1:
        raise DataError(f"--source {source}: several instruction files: {[p.name for p in instruct]}; keep one")
    found["instruct"] = instruct[0] if instruct else None
    return found


def import_source(source: Path, data_dir: Path, separator: str, train_mb: float, instruct_mb: float,
                  lowercase: bool = False, progress: bool = True, field: str | None = None,
                  valid_shards: int | None = None):
    """Write train.txt, valid.txt and instruct.txt from local files (always again, so that
    the data folder follows the source), each story lowercased if asked; streamed. The
    files are JSON Lines and Parquet shards where source holds some (find_source_shards),
    else text files (find_source_files)."""
    shards = find_source_shards(source, valid_shards)
    if shards is not None:
        return import_shards(shards, source, data_dir, train_mb, instruct_mb, lowercase, progress, field)
    for flag, value in (("--field", field), ("--valid-shards", valid_shards)):
        if value is not None:
            raise DataError(f"{flag} goes with JSON Lines or Parquet shards, and --source {source} holds none "
                            "(its .txt files are read whole, their stories cut by --separator)")
    files = find_source_files(source)
    limits = {"train": train_mb, "valid": None, "instruct": instruct_mb}
    for split, path in files.items():
        out = data_dir / f"{split}.txt"
        if path is None:
            print(f"{out}: no instruction file in {source} (a name containing 'instruct'), so the "
                  "vocabulary and merges come from the stories alone")
            _remove(out)
            continue
        max_bytes = None if limits[split] is None else _mb_to_bytes(limits[split])
        with _reading(path):
            size = path.stat().st_size
        cut = max_bytes is not None and size > max_bytes
        text_sep = separator
        if separator == "auto":
            head = DETECT_BYTES if max_bytes is None else min(DETECT_BYTES, max_bytes)
            text_sep = detect_separator("".join(_text_blocks(path, head, size > head, path)))
        with _bar(min(size, max_bytes or size), f"{out.name} from {path.name}", progress) as bar:
            stories = iter_stories(path, text_sep, max_bytes, name=path, progress=bar.update)
            if lowercase:
                stories = (story.lower() for story in stories)
            n = write_stories(out, stories)
        how = f"separated by {SEPARATORS[text_sep].split(' (')[0]}" + (" (auto)" if separator == "auto" else "")
        print(f"{out}: {n:,} stories {how}, {out.stat().st_size / 1e6:.1f} MB, from {path}"
              + (f" (its first {limits[split]:g} MB, cut after the last whole story)" if cut else ""))


def _remove(path: Path):
    if path.exists():
        path.unlink()


# ---------------------------------------------------------------------------------------
# Shards (--source): JSON Lines and Parquet files, each record a story
#
# A web corpus comes as many such files (FineWeb's Parquet, DCLM's JSON Lines). They are
# read by bpe.sources, the library's one reader of the three kinds of input, so that a
# record that is not JSON or a column that is missing reads as it does in `bpe train`.


def find_source_shards(source: Path, valid_shards: int | None = None) -> dict | None:
    """{"train": [paths], "valid": [paths], "instruct": [paths]} among the .jsonl, .ndjson
    and .parquet files in source, at any depth, in name order (as bpe.sources finds them);
    None where it holds none. The held-out shards are those whose names (their paths in
    source) contain "valid" ("validation" too), or with valid_shards the last that many;
    names containing "instruct" are the instructions; the others the training stories."""
    if not source.is_dir():
        raise DataError(f"--source {source}: not a folder")
    try:
        found = sources.find_files([source])
    except sources.SourceError:  # nothing readable at all: find_source_files says what it wanted
        return None
    shards = [p for p in found if sources.kind_of(p) != "text"]
    if not shards:
        return None
    texts = [p.name for p in source.iterdir() if p.is_file() and p.suffix.lower() == ".txt"
             and any(word in p.name.lower() for word in ("train", "valid", "instruct"))]
    if texts:
        raise DataError(f"--source {source} holds both text files ({', '.join(sorted(texts))}) and JSON Lines or "
                        f"Parquet shards ({_shard_names(shards, source)}): keep one kind")

    def named(path, word):
        return word in path.relative_to(source).as_posix().lower()

    instruct = [p for p in shards if named(p, "instruct")]
    stories = [p for p in shards if not named(p, "instruct")]
    named_valid = [p for p in stories if named(p, "valid")]
    if valid_shards is not None:
        if named_valid:
            raise DataError(f"--source {source}: --valid-shards {valid_shards} holds out the last shards, but "
                            f"{_shard_names(named_valid, source)} already say by their names that they are held out: "
                            "name them so, or give --valid-shards, not both")
        if valid_shards >= len(stories):
            raise DataError(f"--source {source}: --valid-shards {valid_shards} leaves no training shard of the "
                            f"{len(stories)} there ({_shard_names(stories, source)})")
        valid = stories[-valid_shards:]
    elif not named_valid:
        raise DataError(f"--source {source}: no shard whose name contains 'valid' (e.g. validation-000.parquet) "
                        f"among {_shard_names(stories, source)}: name the held-out ones so, or hold out the last N "
                        "with --valid-shards N")
    else:
        valid = named_valid
    train = [p for p in stories if p not in valid]
    if not train:
        raise DataError(f"--source {source}: every shard is held out ({_shard_names(valid, source)}): no "
                        "training stories")
    return {"train": train, "valid": valid, "instruct": instruct}


def _shard_names(paths, source: Path) -> str:
    """A list of shards, short: the first few and how many in all."""
    names = [p.relative_to(source).as_posix() for p in paths]
    return ", ".join(names) if len(names) <= 4 else f"{', '.join(names[:3])}, ... {names[-1]} ({len(names)} shards)"


class ShardStories:
    """The stories of shards, one after another, streamed: each record's text (bpe.sources
    reads it: field is the JSON key or Parquet column, "text" by default), cut at
    <|endoftext|>, which ends a story whatever the source, stripped, empty ones dropped.
    With max_bytes, the whole stories within the first max_bytes bytes of their UTF-8 text;
    .cut then says whether some were left. progress(1) is told of each shard read."""

    def __init__(self, paths, field: str | None = None, max_bytes: int | None = None, progress=None):
        self.paths, self.field, self.max_bytes, self.progress = list(paths), field, max_bytes, progress
        self.cut = False

    def __iter__(self):
        taken, found = 0, 0
        for path in self.paths:
            for number, story in self._stories_of(path):
                size = len(story) if story.isascii() else len(story.encode("utf-8"))
                if self.max_bytes is not None and taken + size > self.max_bytes:
                    self.cut = True
                    break
                if len(story) > MAX_STORY_CHARS:  # data.py reads a story whole, in train.txt too
                    raise DataError(f"{path}: its text {number:,} holds a story of {len(story):,} characters, longer "
                                    f"than the {MAX_STORY_CHARS:,} that data.py takes")
                taken += size + 1
                found += 1
                yield story
            if self.cut:
                break
            if self.progress is not None:
                self.progress(1)
        if not found:
            shown = ", ".join(map(str, self.paths[:3])) + (", ..." if len(self.paths) > 3 else "")
            raise DataError(f"{shown}: found no {'whole story' if self.cut else 'story'} in "
                            f"{len(self.paths)} shard(s)" + ("; take a larger prefix" if self.cut else ""))

    def _stories_of(self, path):
        """(which text of the shard, story) for each story of one shard."""
        try:
            with _reading(path):
                for number, text in enumerate(sources.read_file(path, field=self.field), 1):
                    for story in text.replace("\r\n", "\n").split(END_OF_TEXT):
                        story = story.strip()
                        if story:
                            yield number, story
        except sources.SourceError as e:  # it names the shard (and the line)
            raise DataError(str(e)) from None
        except ValueError as e:  # pyarrow's, for a Parquet file damaged past its footer
            raise DataError(f"{path} cannot be read: {e}") from None


def import_shards(shards: dict, source: Path, data_dir: Path, train_mb: float, instruct_mb: float,
                  lowercase: bool = False, progress: bool = True, field: str | None = None):
    """Write train.txt, valid.txt and instruct.txt from the shards that find_source_shards
    found, as import_source does from text files; streamed, a record at a time."""
    from tqdm import tqdm

    limits = {"train": train_mb, "valid": None, "instruct": instruct_mb}
    for split, paths in shards.items():
        out = data_dir / f"{split}.txt"
        if not paths:
            print(f"{out}: no instruction shard in {source} (a name containing 'instruct'), so the "
                  "vocabulary and merges come from the stories alone")
            _remove(out)
            continue
        max_bytes = None if limits[split] is None else _mb_to_bytes(limits[split])
        with tqdm(total=len(paths), desc=f"{out.name} from {len(paths)} shards", unit=" shards", leave=False,
                  disable=None if progress else True, file=sys.stderr) as bar:
            stories = ShardStories(paths, field, max_bytes, bar.update)
            n = write_stories(out, (story.lower() for story in stories) if lowercase else stories)
        print(f"{out}: {n:,} stories, {out.stat().st_size / 1e6:.1f} MB, from {len(paths)} shard(s) of {source}: "
              f"{_shard_names(paths, source)}"
              + (f" (the whole stories of their first {limits[split]:g} MB)" if stories.cut else ""))


# =======================================================================================
# Building the tokenizers and writing the token files


# BPE: the 256 bytes, 7,934 merges and the 2 special tokens (padding, end of text) make
# the episode's 8,192 tokens.
VOCAB_SIZE = 8192
# The word-level tokenizer keeps this many words and runs of punctuation (then 3 specials).
NUM_WORDS = 10_000
# What a run shows encoded at its end.
SENTENCE = "Once upon a time, a cat said hello"


def written_files(data_dir) -> list[Path]:
    """Every file data.py writes in data_dir: the stories, the tokenizers, the token files
    and their sidecars."""
    data_dir = Path(data_dir)
    files = [data_dir / f"{split}.txt" for split in ("train", "valid", "instruct")]
    for bpe in (False, True):
        files.append(tokenizer_file(data_dir, bpe))
        for split in ("train", "valid"):
            files += [token_file(data_dir, split, bpe), sidecar_file(token_file(data_dir, split, bpe))]
    return files


def remove_stale_temporaries_of(data_dir):
    """Remove the temporary files that a run killed while writing left beside data.py's
    files (bpe.files names them), and say so in one line."""
    removed = [found for path in written_files(data_dir) for found in remove_stale_temporaries(path)]
    if removed:
        size = sum(size for _, size in removed)
        print(f"{data_dir}: removed {len(removed)} temporary files ({size / 1e6:.1f} MB) that an interrupted "
              "run left behind")


def encode_split(tok, data_dir: Path, split: str, bpe: bool, progress: bool = True):
    """Encode data/<split>.txt to its token file, a batch of stories at a time, and print
    what it took (the encoding timed alone)."""
    source = data_dir / f"{split}.txt"
    out = token_file(data_dir, split, bpe)
    counts = {"stories": 0, "chars": 0, "unknown": 0, "seconds": 0.0}
    unknown = unknown_id(tok)

    def encoded(stories):
        for batch in sources.batches(stories, BATCH_CHARS):
            start = time.perf_counter()
            # The stories' own end-of-text markers become the token; threads=0: one per core.
            ids = tok.encode_array(token_text(batch), allowed_special="all", threads=0)
            counts["seconds"] += time.perf_counter() - start
            counts["stories"] += len(batch)
            counts["chars"] += count_chars(batch)
            if unknown is not None:
                counts["unknown"] += int(np.count_nonzero(ids == unknown))
            yield ids

    with _bar(_size(source), f"encoding {source.name}", progress) as bar:
        tokens = write_tokens(out, encoded(data_stories(source, bar.update)), tok, source.name)
    per_token = counts["chars"] / max(tokens, 1)
    if unknown is None:
        unknown_text = "none (every byte is a token)"
    else:
        unknown_text = f"{counts['unknown']:,} ({counts['unknown'] / max(tokens, 1):.2%})"
    print(f"{out}: {tokens:,} tokens from {counts['stories']:,} stories, {per_token:.2f} characters per token, "
          f"unknown {unknown_text}, encoded in {counts['seconds']:.2f} s")


def training_stories(data_dir: Path, progress=None):
    """The stories and the instructions, streamed, as the tokenizers learn from them."""
    yield from data_stories(data_dir / "train.txt", progress)
    if (data_dir / "instruct.txt").exists():
        yield from data_stories(data_dir / "instruct.txt", progress)


def _training_size(data_dir: Path) -> int:
    return sum(_size(data_dir / name) for name in ("train.txt", "instruct.txt"))


class _Tally:
    """Stories as they go by, counted: how many, and their UTF-8 bytes."""

    def __init__(self, stories):
        self.stories, self.count, self.bytes = stories, 0, 0

    def __iter__(self):
        for story in self.stories:
            self.count += 1
            self.bytes += len(story) if story.isascii() else len(story.encode("utf-8"))
            yield story


def build_words(data_dir: Path, num_words: int, progress: bool = True):
    """Count the words of the stories and the instructions, story by story; keep the most
    frequent; then encode the splits."""
    start = time.perf_counter()
    with _bar(_training_size(data_dir), "counting words", progress) as bar:
        stories = _Tally(training_stories(data_dir, bar.update))
        tok = WordTokenizer.build(stories, size=num_words)
    print(f"word vocabulary: {len(tok):,} tokens ({len(tok.words):,} words and punctuation, then padding, "
          f"end of text, unknown) from {stories.bytes / 1e6:.1f} MB in {time.perf_counter() - start:.2f} s")
    with _writing(tokenizer_file(data_dir, bpe=False)), atomic_write(tokenizer_file(data_dir, bpe=False)) as tmp:
        tok.save(tmp)
    for split in ("train", "valid"):
        encode_split(tok, data_dir, split, bpe=False, progress=progress)
    return tok


def build_bpe(data_dir: Path, vocab_size: int, progress: bool = True):
    """Learn the BPE tokenizer from the stories and the instructions, one story at a time
    (no merge crosses two stories), streamed, on all cores; then encode the splits."""
    start = time.perf_counter()
    stories = _Tally(training_stories(data_dir))
    # The library's bars (bytes counted, then merges) show on a terminal unless --no-progress.
    tok = BPETokenizer.train(stories, vocab_size, special_tokens=[PAD, END_OF_TEXT], threads=0,
                             progress=None if progress else False)
    seconds = time.perf_counter() - start
    num_merges = len(tok.merges)
    print(f"BPE: learned {num_merges:,} merges from {stories.bytes / 1e6:.1f} MB of stories and instructions "
          f"({stories.count:,} of them) in {seconds:.2f} s; vocabulary {len(tok):,} tokens (256 bytes, the merges, "
          "padding, end of text)")
    if len(tok) < vocab_size:
        print(f"  (asked for {vocab_size:,} tokens: the text ran out of pairs to merge)")
    with _writing(tokenizer_file(data_dir, bpe=True)):
        tok.save(tokenizer_file(data_dir, bpe=True))
    for split in ("train", "valid"):
        # An earlier --engine ray run's folder would be read in place of the new file.
        (data_dir / f"{split}-bpe" / "manifest.json").unlink(missing_ok=True)
        encode_split(tok, data_dir, split, bpe=True, progress=progress)
    return tok


def build_bpe_ray(data_dir: Path, vocab_size: int, address: str | None, progress: bool = True):
    """build_bpe on a Ray cluster (bpe.ray_data, docs/scale-out.md): the same stories,
    each a text of its own, so the same merges; the splits written as token folders,
    data/train-bpe/ and data/valid-bpe/, whose shards read in order hold the ids
    train-bpe.bin would (each story after an end-of-text marker)."""
    try:
        import ray
        import ray.data
        from bpe import ray_data
    except ImportError:
        raise DataError("--engine ray needs Ray: pip install -r requirements-ray.txt") from None
    if not ray.is_initialized():
        ray.init(address=address, log_to_driver=False, logging_level=logging.WARNING)
    logging.getLogger("ray.data").setLevel(logging.WARNING)  # its lines of INFO among data.py's; its bars stay

    def dataset(stories):
        # The stories of a split, listed here and copied into Ray's object store: what
        # makes this path hold a split in memory, where the local one streams.
        # Blocks of about a batch of stories each (so, shards of about that), and at least
        # two a CPU so that all of them work: Ray Data's default is 200 however small.
        items = [{"text": story} for story in stories]
        chars = sum(len(item["text"]) for item in items)
        cpus = int(ray.cluster_resources().get("CPU", 1))
        return ray.data.from_items(items, override_num_blocks=max(1, min(len(items), max(2 * cpus,
                                                                                      chars // BATCH_CHARS))))

    start = time.perf_counter()
    stories = _Tally(training_stories(data_dir))
    # The stories go to the cluster from here: data.py's files are on this machine.
    tok = ray_data.train(dataset(stories), vocab_size, special_tokens=[PAD, END_OF_TEXT],
                         progress=None if progress else False)
    print(f"BPE (ray): learned {len(tok.merges):,} merges from {stories.bytes / 1e6:.1f} MB of stories and "
          f"instructions ({stories.count:,} of them) in {time.perf_counter() - start:.2f} s; vocabulary {len(tok):,} "
          "tokens (256 bytes, the merges, padding, end of text)")
    with _writing(tokenizer_file(data_dir, bpe=True)):
        tok.save(tokenizer_file(data_dir, bpe=True))
    for split in ("train", "valid"):
        start = time.perf_counter()
        folder = data_dir / f"{split}-bpe"
        manifest = ray_data.write_token_folder(dataset(data_stories(data_dir / f"{split}.txt")), tok, folder,
                                               tokenizer_name=tokenizer_file(data_dir, True).name,
                                               before_each=END_OF_TEXT, progress=None if progress else False)
        token_file(data_dir, split, True).unlink(missing_ok=True)  # the folder stands for it now
        sidecar_file(token_file(data_dir, split, True)).unlink(missing_ok=True)
        print(f"{folder}/: {manifest['tokens']:,} tokens in {len(manifest['shards'])} shards, written in "
              f"{time.perf_counter() - start:.2f} s")
    return tok


def _size(path) -> int:
    try:
        return Path(path).stat().st_size
    except OSError:
        return 0


def _bar(total: int, desc: str, progress: bool):
    """A progress bar in bytes, on a terminal only, unless progress is False."""
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="B", unit_scale=True, disable=None if progress else True,
                leave=False, file=sys.stderr)


def show_sentence(tok):
    ids = tok.encode(SENTENCE)
    print(f'"{SENTENCE}": {len(ids)} tokens')
    print("  tokens: " + " ".join(repr(tok.id_to_token(i)) for i in ids))
    print(f"  ids:    {ids}")
    print(f"  decoded: {tok.decode(ids)!r}")


# =======================================================================================
# The command line


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description="Get the TinyStories stories and write their token files: word-level by default, "
                    "byte-level BPE with --bpe.",
        epilog="The data folder's files, the token files' format (flat little-endian uint16 ids, no header, a "
               "sidecar naming the tokenizer beside each), and the memory data.py needs are described at the top "
               "of data.py (python -m pydoc data). "
               f"Without a network and without --source, data.py stops with: {NO_NETWORK}.")
    parser.add_argument("--bpe", action="store_true",
                        help="learn a BPE tokenizer from the stories and the instructions, one story at a time, "
                             "write tokenizer.bpe and train-bpe.bin/valid-bpe.bin, instead of the word-level vocab.json "
                             "and train.bin/valid.bin")
    parser.add_argument("--vocab-size", type=int, default=VOCAB_SIZE,
                        help="BPE: the tokens in all, the 256 bytes, the merges and 2 special tokens (padding, end "
                             "of text); 8,192 learns 7,934 merges (default: %(default)s)")
    parser.add_argument("--words", type=int, default=NUM_WORDS,
                        help="how many words and runs of punctuation the word-level vocabulary keeps (default: %(default)s)")
    parser.add_argument("--source", type=Path, metavar="DIR",
                        help="read local files instead of downloading. Text files: in DIR, the .txt file whose name "
                             "contains 'train' (e.g. TinyStories-train.txt, train-sample-lowercase.txt) holds the "
                             "stories, the one containing 'valid' the held-out stories, and an optional one containing "
                             "'instruct' the instructions (none: the tokenizers learn from the stories alone); "
                             "stories are separated as --separator says. Or shards: .jsonl/.ndjson and .parquet files "
                             "anywhere in DIR, each record a story (its --field), in name order; those whose names "
                             "contain 'valid' (or 'validation') are held out, or the last --valid-shards N; names "
                             "containing 'instruct' are instructions; the rest the training stories. The files are "
                             "read again on every run")
    parser.add_argument("--field", metavar="NAME",
                        help="with shards in --source: the JSON key or Parquet column that holds each story "
                             "(default: text)")
    parser.add_argument("--valid-shards", type=int, metavar="N",
                        help="with shards in --source whose names do not say which are held out: hold out the last "
                             "N shards (in name order)")
    parser.add_argument("--lowercase", action="store_true",
                        help="with --source: lowercase every story. The public copy of the training sample in "
                             "shared/data/tinystories is lowercased and its held-out sample is not; this makes them "
                             "alike, so that a model is measured on text like the text it learned from")
    parser.add_argument("--separator", choices=["auto", *SEPARATORS], default="auto",
                        help="what separates the stories in --source text files: "
                             + "; ".join(f"{k}: {v}" for k, v in SEPARATORS.items())
                             + ". <|endoftext|> ends a story whatever the choice. auto (the default) looks at a "
                               "file's first MB: eot if it holds <|endoftext|>; else line if at least 1 in 10 of its "
                               "breaks between lines of text are single line breaks; else blank. The samples in "
                               "shared/data/tinystories: train-sample-lowercase.txt ends each story with a single "
                               "line break and each paragraph inside one with a blank line (auto: line, 5,478 "
                               "stories); "
                               "valid-sample.txt puts blank lines between stories and between paragraphs alike, so "
                               "no rule can tell them apart and each of its 4,302 'stories' is a paragraph (auto: blank)")
    parser.add_argument("--train-mb", type=float, default=TRAIN_MB,
                        help="take the first this many MB (10^6 bytes) of the training stories (downloaded or --source), cut after the last "
                             "whole story; the default, %(default)s, is the episode's ~21 M BPE tokens")
    parser.add_argument("--instruct-mb", type=float, default=INSTRUCT_MB,
                        help="likewise for the instructions; with the stories, the default %(default)s makes the episode's ~158 MB")
    parser.add_argument("--base-url", default=os.environ.get("TINYSTORIES_BASE_URL", BASE_URL),
                        help=f"where to download from (environment: TINYSTORIES_BASE_URL); files are "
                             f"BASE/{TRAIN_URL}, BASE/{VALID_URL} and BASE/{INSTRUCT_URL}. Downloads resume "
                             "where an interrupted one stopped; existing train.txt/valid.txt/instruct.txt are kept (default: %(default)s)")
    parser.add_argument("--data-dir", type=Path, default=DATA_DIR, help="the data folder (default: %(default)s)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    parser.add_argument("--engine", choices=["local", "ray"], default="local",
                        help="with --bpe: where to learn the merges and write the tokens. local (the default): this "
                             "process. ray: on a Ray cluster (pip install -r requirements-ray.txt; "
                             "docs/scale-out.md): the stories counted block by block on its workers, the merges "
                             "learnt here, and the splits written as token folders train-bpe/ and valid-bpe/ (shards "
                             "and a manifest), which pretrain.py reads as it reads train-bpe.bin")
    parser.add_argument("--ray-address", metavar="ADDR",
                        help="with --engine ray: the cluster's head, HEAD:6379 (default: a Ray of this machine's "
                             "own, started for the run)")
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if not 258 <= args.vocab_size <= 1 << 16:
        parser.error(f"--vocab-size must be between 258 and {1 << 16} (token files hold 16-bit ids), "
                     f"got {args.vocab_size}")
    if args.words < 1 or args.words + 3 > 1 << 16:
        parser.error(f"--words must be between 1 and {(1 << 16) - 3}, got {args.words}")
    if args.train_mb <= 0 or args.instruct_mb <= 0:
        parser.error("--train-mb and --instruct-mb must be positive")
    if (args.engine != "local" or args.ray_address) and not args.bpe:
        parser.error("--engine ray and --ray-address go with --bpe (the word-level vocabulary is built here)")
    if args.ray_address and args.engine != "ray":
        parser.error("--ray-address goes with --engine ray")
    if args.lowercase and args.source is None:
        parser.error("--lowercase goes with --source (downloaded stories are kept as they are)")
    if (args.field is not None or args.valid_shards is not None) and args.source is None:
        parser.error("--field and --valid-shards go with --source (its JSON Lines or Parquet shards)")
    if args.valid_shards is not None and args.valid_shards < 1:
        parser.error(f"--valid-shards must be at least 1, got {args.valid_shards}")
    data_dir = args.data_dir
    try:
        progress = not args.no_progress
        remove_stale_temporaries_of(data_dir)
        if args.source is not None:
            import_source(args.source, data_dir, args.separator, args.train_mb, args.instruct_mb, args.lowercase,
                          progress, args.field, args.valid_shards)
        else:
            get_stories(data_dir, args.base_url, args.train_mb, args.instruct_mb, progress=progress)
        if args.bpe and args.engine == "ray":
            tok = build_bpe_ray(data_dir, args.vocab_size, args.ray_address, progress)
        elif args.bpe:
            tok = build_bpe(data_dir, args.vocab_size, progress)
        else:
            tok = build_words(data_dir, args.words, progress)
    except DataError as e:
        parser.exit(1, f"{parser.prog}: error: {e}\n")
    show_sentence(tok)


if __name__ == "__main__":
    main()
