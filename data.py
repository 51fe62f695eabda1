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
                           name and bpe.token_files.fingerprint, a sha256 of its content), the dtype and the
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
`python bpe_bench.py data-memory`.

Downloads come from the Hugging Face hub (TinyStories, Eldan & Li 2023, CDLA-Sharing-1.0), into
data/downloads/ as NAME.part, resumed with an HTTP Range request when interrupted, and renamed
only once complete; the text files are then written to a temporary name and renamed, so an
interrupted run never leaves a file that looks complete and is not.

The file reads in the order a reader needs it: first the public part, the token files and their
loaders (load_tokens, load_tokenizer: what pretrain.py and bits.py use); then building the
tokenizers and writing the token files; the command line. Getting the stories (the download,
--source's text files and shards, reading them a block at a time) is story_sources.py's.
"""


import argparse
import logging
import os
import time
from pathlib import Path

import numpy as np

from bpe import BPETokenizer, sources, token_files
from bpe.atomic_writes import atomic_write, remove_stale_temporaries
from story_sources import (BASE_URL, BATCH_CHARS, INSTRUCT_MB, INSTRUCT_URL, NO_NETWORK, SEPARATORS, TRAIN_MB, TRAIN_URL,
                           VALID_URL, DataError, data_stories, get_stories, import_source, progress_bar, reading,
                           split_stories, writing)
from tokenizer import END_OF_TEXT, PAD, WordTokenizer, kind, unknown_id


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
    with writing(path):
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
    with reading(path):
        size = path.stat().st_size
    if size == 0 or size % 2:
        raise DataError(f"{path} is not a token file: {size:,} bytes is not a whole number of 16-bit ids "
                        f"(interrupted?); {again}")
    sidecar = sidecar_file(path)
    if not sidecar.exists():
        raise DataError(f"{path} has no {sidecar.name} to name the tokenizer that wrote it (an earlier data.py, "
                        f"or a copied file?); {again}")
    with reading(sidecar):
        try:
            # bpe.token_files is the one reader: the sidecar, the tokenizer's fingerprint, the ids.
            tokens = token_files.read_token_file(path, tokenizer)
        except ValueError as e:
            raise DataError(f"{e}; {again}") from None
    if tokens.dtype != np.dtype(TOKEN_DTYPE):
        raise DataError(f"{path} holds {tokens.dtype.str} ids by its {sidecar.name}, not {TOKEN_DTYPE}; {again}")
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
        with reading(path):
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
    with reading(path):
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
    files (bpe.atomic_writes names them), and say so in one line."""
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

    with progress_bar(_size(source), f"encoding {source.name}", progress) as bar:
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
    with progress_bar(_training_size(data_dir), "counting words", progress) as bar:
        stories = _Tally(training_stories(data_dir, bar.update))
        tok = WordTokenizer.build(stories, size=num_words)
    print(f"word vocabulary: {len(tok):,} tokens ({len(tok.words):,} words and punctuation, then padding, "
          f"end of text, unknown) from {stories.bytes / 1e6:.1f} MB in {time.perf_counter() - start:.2f} s")
    with writing(tokenizer_file(data_dir, bpe=False)), atomic_write(tokenizer_file(data_dir, bpe=False)) as tmp:
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
    with writing(tokenizer_file(data_dir, bpe=True)):
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
    with writing(tokenizer_file(data_dir, bpe=True)):
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
