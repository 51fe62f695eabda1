"""Getting the stories: downloaded from the Hugging Face hub, or read from local files
(--source: text files, or JSON Lines and Parquet shards), as data.py's text files.

    import story_sources as ss
    ss.get_stories(data_dir, ss.BASE_URL, train_mb=86, instruct_mb=72)   # download
    ss.import_source(Path("DIR"), data_dir, "eot", 86, 72)              # local text files
    for story in ss.iter_stories("data/train.txt"): ...                 # read back, a block at a time

data.py runs these for `python data.py [--source DIR]`, and turns the text into token files;
this module holds everything up to the text files: how stories are separated in a text
(SEPARATORS), reading them a block at a time (iter_stories, so that memory never follows the
corpus), the download with its resumes, and the import of local files and shards. Every
problem a user can fix is a DataError, which data.py prints without a traceback.
"""
import codecs
import contextlib
import http.client
import os
import re
import socket
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from bpe import sources
from bpe.atomic_writes import atomic_write
from tokenizer import END_OF_TEXT


class DataError(Exception):
    """A problem with the data that the user can fix; data.py's main prints it without a traceback."""


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
    with reading(path):
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


def reading(path):
    return _os_errors_as_data_errors("read", path)


def writing(path):
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
        with reading(path):
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
    with writing(path), atomic_write(path) as tmp, open(tmp, "w", encoding="utf-8", buffering=1 << 20) as f:
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
        with reading(path):
            size = path.stat().st_size
        cut = max_bytes is not None and size > max_bytes
        text_sep = separator
        if separator == "auto":
            head = DETECT_BYTES if max_bytes is None else min(DETECT_BYTES, max_bytes)
            text_sep = detect_separator("".join(_text_blocks(path, head, size > head, path)))
        with progress_bar(min(size, max_bytes or size), f"{out.name} from {path.name}", progress) as bar:
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
            with reading(path):
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


def progress_bar(total: int, desc: str, progress: bool):
    """A progress bar in bytes, on a terminal only, unless progress is False."""
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="B", unit_scale=True, disable=None if progress else True,
                leave=False, file=sys.stderr)
