"""The stories, as text and as tokens: get them, build a tokenizer, write the token files.

    python data.py                       # download the stories, word vocabulary, train.bin/valid.bin
    python data.py --bpe                 # learn 7,934 BPE merges, train-bpe.bin/valid-bpe.bin
    python data.py --source DIR [--bpe]  # the same from local text files, without a network

The data folder is data/ beside this script (--data-dir changes it). It holds:

    train.txt, valid.txt   the training and held-out stories, UTF-8 text, stories separated by a
    instruct.txt           line "<|endoftext|>"; instruct.txt holds instruction-style stories
                           (TinyStoriesInstruct), whose words a later fine-tuning stage needs
    vocab.json             the word-level vocabulary (WordTokenizer.save)
    tokenizer.bpe          the BPE tokenizer (bpe.BPETokenizer.save: JSON with the split pattern, the
                           merges, the special tokens and their ids)
    train.bin, valid.bin   word-level token ids
    train-bpe.bin, ...     BPE token ids (valid-bpe.bin likewise)

Token files are a flat array of unsigned 16-bit integers, little-endian (numpy "<u2"), with no
header: each story is the end-of-text token followed by the story's tokens, story after story,
so the model learns that a story starts after end of text (sample.py starts its stories there).
`load_tokens` reads them back and checks them.

Downloads come from the Hugging Face hub (TinyStories, Eldan & Li 2023, CDLA-Sharing-1.0), into
data/downloads/ as NAME.part, resumed with an HTTP Range request when interrupted, and renamed
only once complete; the text files are then written to a temporary name and renamed, so an
interrupted run never leaves a file that looks complete and is not.
"""
import argparse
import http.client
import os
import re
import socket
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np

from bpe.files import atomic_write
from tokenizer import END_OF_TEXT, PAD, BPETokenizer, WordTokenizer, unknown_id

# The data folder beside the scripts; pretrain.py and bits.py take it from here.
DATA_DIR = Path(__file__).resolve().parent / "data"

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

# BPE: the 256 bytes, 7,934 merges and the 2 special tokens (padding, end of text) make
# the episode's 8,192 tokens.
VOCAB_SIZE = 8192
# The word-level tokenizer keeps this many words and runs of punctuation (then 3 specials).
NUM_WORDS = 10_000

SENTENCE = "Once upon a time, a cat said hello"

DOWNLOAD_TIMEOUT = 60  # seconds without a byte before a transfer counts as interrupted
DOWNLOAD_RETRIES = 5  # resumes within one run after an interrupted transfer
NO_NETWORK = "no network: use --source DIR, see --help"


class DataError(Exception):
    """A problem with the data that the user can fix; main prints it without a traceback."""


# ---------------------------------------------------------------------------------------
# Stories as text


SEPARATORS = {
    "eot": "the text <|endoftext|> (TinyStories' own files put it on a line of its own)",
    "blank": "one or more blank lines (a line break inside a story stays in it)",
    "line": "a single line break between two lines of text; blank lines are paragraph breaks "
            "inside a story (a TinyStories file with its <|endoftext|> lines taken out)",
}


def detect_separator(text: str) -> str:
    """What separates the stories of text when --separator is auto: end of text if the text
    has it, else blank lines (the samples in shared/data/tinystories/ are written so)."""
    return "eot" if END_OF_TEXT in text else "blank"


def split_stories(text: str, separator: str = "eot") -> list[str]:
    """The stories of text, each stripped of the whitespace around it; empty ones dropped."""
    text = text.replace("\r\n", "\n")
    if separator == "eot":
        pieces = text.split(END_OF_TEXT)
    elif separator == "blank":
        pieces = re.split(r"\n[ \t]*\n", text)
    elif separator == "line":
        pieces = re.split(r"(?<=\S)[ \t]*\n(?=[ \t]*\S)", text)
    else:
        raise ValueError(f"separator must be one of {sorted(SEPARATORS)}, got {separator!r}")
    return [s for s in (p.strip() for p in pieces) if s]


def token_text(stories) -> str:
    """The text the token files hold: each story after an end-of-text marker."""
    return "".join(END_OF_TEXT + s for s in stories)


def count_chars(stories) -> int:
    """Characters of token_text(stories), each end of text counting as one character."""
    return sum(len(s) for s in stories) + len(stories)


def write_stories(path, stories):
    """Write stories as TinyStories' files do (a line <|endoftext|> between stories),
    atomically: a crash leaves the old file or the new one."""
    if not stories:
        raise DataError(f"no stories to write to {path}")
    for k, s in enumerate(stories):
        if END_OF_TEXT in s:
            raise ValueError(f"story {k} holds {END_OF_TEXT}, which separates stories")
    with atomic_write(path) as tmp, open(tmp, "w", encoding="utf-8") as f:
        f.write(f"\n{END_OF_TEXT}\n".join(stories))
        f.write("\n")


def read_stories(path, max_chars: int | None = None) -> list[str]:
    """The stories of a text file that data.py wrote; with max_chars, of its first max_chars
    characters only (the last story then ends where the limit cuts it)."""
    path = Path(path)
    if not path.exists():
        raise DataError(f"no {path}: make it with `python data.py` (or `python data.py --source DIR`)")
    with open(path, encoding="utf-8") as f:
        text = f.read() if max_chars is None else f.read(max_chars)
    if max_chars is not None and len(text) == max_chars:
        # The limit may cut a marker in half: what is left of it is not story text.
        tail = text.rfind("\n<")
        if tail >= 0 and ("\n" + END_OF_TEXT).startswith(text[tail:]):
            text = text[:tail]
    stories = split_stories(text, "eot")
    if not stories:
        raise DataError(f"{path} holds no stories: make it again with `python data.py`")
    return stories


def _decode(data: bytes, name, cut: bool) -> str:
    """data as UTF-8; when a size limit cut it, its last character may be cut too."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        if cut and e.start >= len(data) - 3:
            return data[:e.start].decode("utf-8")
        raise DataError(f"{name} is not UTF-8 text (byte {e.start}: {e.reason})") from None


def stories_from_bytes(data: bytes, name, separator: str, cut: bool) -> list[str]:
    """The stories of a file's bytes; when cut (a prefix of a longer file), the last story is
    dropped, as it may be cut off in the middle."""
    text = _decode(data, name, cut)
    sep = detect_separator(text) if separator == "auto" else separator
    stories = split_stories(text, sep)
    if cut:
        stories = stories[:-1]
    if not stories:
        what = "a complete story" if cut else "any story"
        raise DataError(f"{name}: found no {what} (stories separated by {SEPARATORS[sep]})"
                        + ("; take a larger prefix" if cut else ""))
    return stories


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
        data = raw.read_bytes()
        # A prefix shorter than asked for is the whole file: its last story is complete.
        cut = max_bytes is not None and len(data) == max_bytes
        stories = stories_from_bytes(data, url, "eot", cut)
        write_stories(out, stories)
        raw.unlink()
        print(f"{out}: {len(stories):,} stories, {out.stat().st_size / 1e6:.1f} MB, from {url}"
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
                  lowercase: bool = False):
    """Write train.txt, valid.txt and instruct.txt from local files (always again, so that
    the data folder follows the source), each story lowercased if asked."""
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
        size = path.stat().st_size
        with open(path, "rb") as f:
            data = f.read() if max_bytes is None else f.read(max_bytes)
        cut = len(data) < size
        text_sep = separator
        if separator == "auto":
            text_sep = detect_separator(_decode(data, path, cut))
        stories = stories_from_bytes(data, path, text_sep, cut)
        if lowercase:
            stories = [story.lower() for story in stories]
        write_stories(out, stories)
        how = f"separated by {SEPARATORS[text_sep].split(' (')[0]}" + (" (auto)" if separator == "auto" else "")
        print(f"{out}: {len(stories):,} stories {how}, {out.stat().st_size / 1e6:.1f} MB, from {path}"
              + (f" (its first {limits[split]:g} MB, cut after the last whole story)" if cut else ""))


def _remove(path: Path):
    if path.exists():
        path.unlink()


# ---------------------------------------------------------------------------------------
# Token files


def token_file(data_dir, split: str, bpe: bool) -> Path:
    """data/train.bin, data/valid-bpe.bin, ..."""
    return Path(data_dir) / f"{split}{'-bpe' if bpe else ''}.bin"


def make_command(bpe: bool) -> str:
    return "python data.py --bpe" if bpe else "python data.py"


def write_tokens(path, ids: np.ndarray, vocab_size: int):
    """Write ids as the token files hold them: little-endian uint16, no header."""
    if vocab_size > 1 << 16:
        raise ValueError(f"a vocabulary of {vocab_size} tokens does not fit the token files' 16 bits")
    with atomic_write(path) as tmp:
        np.asarray(ids).astype("<u2", copy=False).tofile(tmp)


def load_tokens(path, vocab_size: int, bpe: bool | None = None) -> np.ndarray:
    """A token file as a read-only array of "<u2" (memory-mapped, not read into memory),
    checked: a whole number of 16-bit ids, at least one, each below vocab_size."""
    path = Path(path)
    command = make_command(bool(bpe) if bpe is not None else path.stem.endswith("-bpe"))
    if not path.exists():
        raise DataError(f"no {path}: make it with `{command}`")
    size = path.stat().st_size
    if size == 0 or size % 2:
        raise DataError(f"{path} is not a token file: {size:,} bytes is not a whole number of 16-bit ids "
                        f"(interrupted?); make it again with `{command}`")
    tokens = np.memmap(path, dtype="<u2", mode="r")
    top = int(tokens.max())
    if top >= vocab_size:
        raise DataError(f"{path} holds id {top}, outside the tokenizer's {vocab_size} tokens: the tokenizer "
                        f"changed since it was written; make it again with `{command}`")
    return tokens


def tokenizer_file(data_dir, bpe: bool) -> Path:
    """data/tokenizer.bpe (bpe) or data/vocab.json."""
    return Path(data_dir) / ("tokenizer.bpe" if bpe else "vocab.json")


def load_tokenizer(data_dir, bpe: bool):
    """The tokenizer that data.py built: data/tokenizer.bpe (bpe) or data/vocab.json."""
    path = tokenizer_file(data_dir, bpe)
    if not path.exists():
        legacy = Path(data_dir) / "merges.txt"
        earlier = f" ({legacy} is from an earlier version of data.py)" if bpe and legacy.exists() else ""
        raise DataError(f"no {path}{earlier}: make it with `{make_command(bpe)}`")
    try:
        return BPETokenizer.load(path) if bpe else WordTokenizer.load(path)
    except ValueError as e:
        raise DataError(f"{e}; make it again with `{make_command(bpe)}`") from None


def encode_split(tok, data_dir: Path, split: str, bpe: bool):
    """Encode data/<split>.txt to its token file; print what it took (encoding timed alone)."""
    stories = read_stories(data_dir / f"{split}.txt")
    text = token_text(stories)
    out = token_file(data_dir, split, bpe)
    _progress(f"{out}: encoding {len(stories):,} stories...")
    start = time.perf_counter()
    # The stories' own end-of-text markers become the token; threads=0: one per core.
    ids = tok.encode_array(text, allowed_special="all", threads=0)
    seconds = time.perf_counter() - start
    write_tokens(out, ids, len(tok))
    chars = count_chars(stories)
    if unknown_id(tok) is None:
        unknown = "none (every byte is a token)"
    else:
        n = int(np.count_nonzero(ids == unknown_id(tok)))
        unknown = f"{n:,} ({n / max(len(ids), 1):.2%})"
    print(f"{out}: {len(ids):,} tokens from {len(stories):,} stories, {chars / max(len(ids), 1):.2f} characters "
          f"per token, unknown {unknown}, encoded in {seconds:.2f} s")


def training_text(data_dir: Path) -> str:
    """The stories and the instructions, as the tokenizers learn from them."""
    stories = read_stories(data_dir / "train.txt")
    if (data_dir / "instruct.txt").exists():
        stories += read_stories(data_dir / "instruct.txt")
    return token_text(stories)


def build_words(data_dir: Path, num_words: int):
    text = training_text(data_dir)
    _progress(f"word vocabulary: counting the words of {len(text) / 1e6:.1f} M characters...")
    start = time.perf_counter()
    tok = WordTokenizer.build(text, size=num_words)
    print(f"word vocabulary: {len(tok):,} tokens ({len(tok.words):,} words and punctuation, then padding, "
          f"end of text, unknown) from {len(text.encode('utf-8')) / 1e6:.1f} MB in {time.perf_counter() - start:.2f} s")
    with atomic_write(data_dir / "vocab.json") as tmp:
        tok.save(tmp)
    for split in ("train", "valid"):
        encode_split(tok, data_dir, split, bpe=False)
    return tok


def build_bpe(data_dir: Path, vocab_size: int):
    """Learn the BPE tokenizer from the stories and the instructions, one story at a time
    (no merge crosses two stories), then encode the splits with it."""
    stories = read_stories(data_dir / "train.txt")
    if (data_dir / "instruct.txt").exists():
        stories += read_stories(data_dir / "instruct.txt")
    size = sum(len(s.encode("utf-8")) for s in stories)
    start = time.perf_counter()
    tok = BPETokenizer.train(stories, vocab_size, special_tokens=[PAD, END_OF_TEXT], threads=0)
    seconds = time.perf_counter() - start
    num_merges = len(tok.merges)
    print(f"BPE: learned {num_merges:,} merges from {size / 1e6:.1f} MB of stories and instructions "
          f"({len(stories):,} of them) in {seconds:.2f} s; vocabulary {len(tok):,} tokens (256 bytes, the merges, "
          "padding, end of text)")
    if len(tok) < vocab_size:
        print(f"  (asked for {vocab_size:,} tokens: the text ran out of pairs to merge)")
    tok.save(tokenizer_file(data_dir, bpe=True))
    for split in ("train", "valid"):
        encode_split(tok, data_dir, split, bpe=True)
    return tok


def _progress(message):
    """A line that says what the next long step is, on a terminal, for the result to overwrite."""
    if sys.stdout.isatty():
        print(message, end="\r", flush=True)


def show_sentence(tok):
    ids = tok.encode(SENTENCE)
    print(f'"{SENTENCE}": {len(ids)} tokens')
    print("  tokens: " + " ".join(repr(tok.id_to_token(i)) for i in ids))
    print(f"  ids:    {ids}")
    print(f"  decoded: {tok.decode(ids)!r}")


# ---------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description="Get the TinyStories stories and write their token files: word-level by default, "
                    "byte-level BPE with --bpe.",
        epilog=f"Token files ({{train,valid}}.bin, {{train,valid}}-bpe.bin) are flat arrays of little-endian "
               "uint16 ids with no header; each story is end of text followed by its tokens. "
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
                        help="read local text files instead of downloading: in DIR, the .txt file whose name "
                             "contains 'train' (e.g. TinyStories-train.txt, train-sample-lowercase.txt) holds the "
                             "stories, the one containing 'valid' the held-out stories, and an optional one containing "
                             "'instruct' the instructions (none: the tokenizers learn from the stories alone). "
                             "Stories are separated as --separator says. The files are read again on every run")
    parser.add_argument("--lowercase", action="store_true",
                        help="with --source: lowercase every story. The public copy of the training sample in "
                             "shared/data/tinystories is lowercased and its held-out sample is not; this makes them "
                             "alike, so that a model is measured on text like the text it learned from")
    parser.add_argument("--separator", choices=["auto", *SEPARATORS], default="auto",
                        help="what separates the stories in --source files: "
                             + "; ".join(f"{k}: {v}" for k, v in SEPARATORS.items())
                             + "; auto: eot if the file holds <|endoftext|>, else blank (default: %(default)s)")
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
    if args.lowercase and args.source is None:
        parser.error("--lowercase goes with --source (downloaded stories are kept as they are)")
    data_dir = args.data_dir
    try:
        if args.source is not None:
            import_source(args.source, data_dir, args.separator, args.train_mb, args.instruct_mb, args.lowercase)
        else:
            get_stories(data_dir, args.base_url, args.train_mb, args.instruct_mb, progress=not args.no_progress)
        tok = build_bpe(data_dir, args.vocab_size) if args.bpe else build_words(data_dir, args.words)
    except DataError as e:
        parser.exit(1, f"{parser.prog}: error: {e}\n")
    show_sentence(tok)


if __name__ == "__main__":
    main()
