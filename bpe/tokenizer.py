"""BPETokenizer: byte-level BPE on str, over the compiled core bpe._core.

    from bpe import BPETokenizer
    tok = BPETokenizer.train(stories, vocab_size=8192, special_tokens=["<|endoftext|>"])
    ids = tok.encode("Once upon a time")            # [46, 1011, 263, 367] or so
    tok.decode(ids)                                 # 'Once upon a time'
    tok.save("stories.bpe")                         # one file; BPETokenizer.load gives it back

A tokenizer is four things, and its file and its state() hold exactly these:
- merges: pairs of ids; merge k turns the pair into token 256 + k (ids 0-255 are the
  bytes);
- pattern: the split rule, "default", "gpt2" or "gpt4": text is cut into chunks that
  merges never cross;
- special_tokens: strings such as "<|endoftext|>" that are one token each and never go
  through the merges; they are numbered after the merges, in order;
- token_ids: the id of every token (bytes, merges, specials, in that order), when the
  vocabulary numbers them its own way (GPT-2 and GPT-4 do); None means token i has id i.

The names and their meanings follow tiktoken where tiktoken has one: encode raises on
special-token text unless it is allowed, encode_ordinary never makes special tokens,
n_vocab is one more than the largest id, eot_token is the id of <|endoftext|>.
"""
import json
import operator
import os
import re
from pathlib import Path

import numpy as np

from . import formats
from .files import atomic_write

# What the file says it is, and the newest version of it this code reads and writes.
FILE_FORMAT = "bpe-tokenizer"
FILE_VERSION = 1
# The name a tokenizer gets inside a folder: save("runs/x/") writes runs/x/tokenizer.bpe.
# Not "tokenizer.json", which is Hugging Face's and means something else.
FILE_NAME = "tokenizer.bpe"
# The special tokens of the files and checkpoints this project wrote before the file
# format existed (merges.txt, and states without special_tokens), in their order.
LEGACY_SPECIAL_TOKENS = ("<|pad|>", "<|endoftext|>")
END_OF_TEXT = "<|endoftext|>"
BUILD_COMMAND = "python setup.py build_ext --inplace"
# Texts for training are handed to the core in batches of about this many bytes: large
# enough that the threads have work, small enough that memory does not follow the corpus.
TRAIN_BATCH_BYTES = 8 << 20


def array_dtype(n_vocab: int):
    """The numpy type of an array of ids: uint16 when every id fits (n_vocab of 65,536 or
    less), else uint32. (The core's encode_array applies the same rule.)"""
    return np.uint16 if n_vocab <= 65536 else np.uint32


def load_core():
    """The compiled core, or an ImportError that says how to build it."""
    try:
        from . import _core
    except ImportError as e:
        raise ImportError(f"bpe's compiled core is not built ({e}): build it with `{BUILD_COMMAND}` in the "
                          "repository, or install the package with `pip install .`") from e
    return _core


class BPETokenizer:
    """Byte-level BPE: train it, encode and decode with it, save and load it."""

    def __init__(self, merges, pattern: str = "default", special_tokens=(), token_ids=None):
        core = load_core()
        if not isinstance(pattern, str):
            raise TypeError(f"pattern must be a str, not {type(pattern).__name__}")
        self.merges = _as_merges(merges)
        self.pattern = pattern
        self.special_tokens = _as_special_tokens(special_tokens)
        self.token_ids = None if token_ids is None else _as_ids(token_ids, "token_ids")
        if self.token_ids == list(range(len(self.token_ids or ()))):
            self.token_ids = None  # one way to say "token i is id i", so equal tokenizers have equal states
        # The core checks the rest: that each merge could have been learned, the
        # pattern's name, the ids (all different, none above bpe.MAX_ID), the sizes.
        self._encoder = core.Encoder(self.merges, pattern=pattern, special_tokens=list(self.special_tokens),
                                     token_ids=self.token_ids)
        self._special_ids = self._encoder.special_tokens  # {special token: id}
        self._ids_by_bytes = None  # built by token_to_id when first asked

    # --- training ------------------------------------------------------------------

    @classmethod
    def train(cls, texts, vocab_size: int, pattern: str = "default", special_tokens=(), threads: int = 0,
              progress: bool | None = None, max_memory=None) -> "BPETokenizer":
        """Learn a tokenizer from texts: a str, or any iterable of str (documents, lines,
        the pieces of a file read a bit at a time).

        vocab_size counts everything: the 256 bytes, the merges and the special tokens,
        whose ids follow the merges in the order given. Training stops early, with a
        smaller vocabulary, if the texts run out of pairs to merge.

        The texts are streamed: their chunks are counted a batch at a time, and only
        the distinct chunks are kept, so memory follows the variety of the text, not
        its size. No chunk crosses two texts. The result is the reference's
        (bpe_reference.train) on the same texts, and bpe.train's for a single text.
        threads=0 counts with one thread per core. progress: a bar on a terminal
        (None: only when stderr is one).

        max_memory (bytes, or a str such as "2GB" or "512MiB"; None: no budget) bounds
        the whole run's memory as the counter estimates it (bpe.ChunkCounter): past it,
        the rarest chunks are dropped, with a RuntimeWarning that says how many and
        below what count, and the merges may then differ from exact training.
        """
        core = load_core()
        special_tokens = _as_special_tokens(special_tokens)
        if isinstance(vocab_size, bool) or not isinstance(vocab_size, int):
            raise TypeError(f"vocab_size must be an int, not {type(vocab_size).__name__}")
        num_merges = vocab_size - 256 - len(special_tokens)
        if num_merges < 0:
            raise ValueError(f"vocab_size must be at least {256 + len(special_tokens)} (the 256 bytes and the "
                             f"{len(special_tokens)} special tokens), got {vocab_size}")
        from tqdm import tqdm

        counter = core.ChunkCounter(pattern, list(special_tokens), max_memory=_as_memory(max_memory))
        disable = None if progress is None else not progress
        with tqdm(desc="counting chunks", unit="B", unit_scale=True, disable=disable, leave=False) as bar:
            for batch in _batches(texts, special_tokens, _batch_size(max_memory)):
                counter.add(batch, threads=threads)
                bar.update(len(batch) if isinstance(batch, str) else sum(map(len, batch)))
        with tqdm(desc="merging", total=num_merges, unit=" merges", disable=disable, leave=False) as bar:
            merges = counter.train(num_merges, progress=lambda done: bar.update(done - bar.n))
        return cls(merges, pattern=pattern, special_tokens=special_tokens)

    # --- the vocabulary ------------------------------------------------------------

    @property
    def n_vocab(self) -> int:
        """One more than the largest id: the rows a model's embedding needs. More than
        the number of tokens when the numbering has gaps (GPT-4's has)."""
        return self._encoder.n_vocab

    def __len__(self) -> int:
        return self.n_vocab

    @property
    def special_tokens_set(self) -> set:
        return set(self.special_tokens)

    @property
    def special_ids(self) -> dict:
        """{special token: id}, in the order of special_tokens."""
        return dict(self._special_ids)

    @property
    def eot_token(self):
        """The id of <|endoftext|>, or None if this tokenizer has no such token."""
        return self._special_ids.get(END_OF_TEXT)

    def decode_single_token_bytes(self, id: int) -> bytes:
        """The bytes of the token with this id (a special token's: its text)."""
        return self._encoder.decode_single_token_bytes(id)

    def id_to_token(self, id: int) -> str:
        """One token as text, for printing: a token that ends in the middle of a
        character shows U+FFFD there."""
        return self.decode_single_token_bytes(id).decode("utf-8", errors="replace")

    def token_to_id(self, token):
        """The id of a token given as its text (str) or its bytes, or None if no token
        is exactly that. A special token's text gives the special token's id."""
        if isinstance(token, str):
            if token in self._special_ids:
                return self._special_ids[token]
            token = token.encode("utf-8")
        if not isinstance(token, (bytes, bytearray)):
            raise TypeError(f"token must be str or bytes, not {type(token).__name__}")
        if self._ids_by_bytes is None:
            ids = self.token_ids or range(256 + len(self.merges))
            by_bytes = {}
            for i, data in zip(ids, formats.token_bytes(self.merges)):
                by_bytes.setdefault(data, i)  # two merges can make the same bytes: the first wins
            self._ids_by_bytes = by_bytes
        return self._ids_by_bytes.get(bytes(token))

    # --- encoding ------------------------------------------------------------------

    def encode(self, text: str, *, allowed_special=frozenset(), disallowed_special="all") -> list:
        """The ids of text. As in tiktoken: a special token in the text becomes its id if
        allowed_special ("all", or a set of special tokens) holds it, and raises
        ValueError if disallowed_special ("all": every special that is not allowed)
        does; with both empty, it is ordinary text."""
        return self._encoder.encode_str(_str(text), allowed_special, disallowed_special)

    def encode_ordinary(self, text: str) -> list:
        """The ids of text, with special-token text encoded as ordinary text: for text
        from a user, who must not be able to type a control token."""
        return self._encoder.encode_str(_str(text), (), ())

    def encode_batch(self, texts, *, allowed_special=frozenset(), disallowed_special="all", threads: int = 0) -> list:
        """encode for each text of a list, on `threads` threads (0: one per core)."""
        return self._encoder.encode_str_batch([_str(t) for t in _as_texts(texts)], allowed_special,
                                              disallowed_special, threads)

    def encode_ordinary_batch(self, texts, *, threads: int = 0) -> list:
        return self._encoder.encode_str_batch([_str(t) for t in _as_texts(texts)], (), (), threads)

    def encode_array(self, text: str, *, allowed_special=frozenset(), disallowed_special="all",
                     threads: int = 0) -> np.ndarray:
        """As encode, as a numpy array with no Python object per token (uint16 when
        n_vocab is 65,536 or less, else uint32), on `threads` threads (0: one per core)."""
        return self._encoder.encode_str_array(_str(text), allowed_special, disallowed_special, threads)

    # --- decoding ------------------------------------------------------------------

    def decode_bytes(self, ids) -> bytes:
        """The bytes of ids (a list of ints or a numpy array), special tokens as their text."""
        return self._encoder.decode_bytes(ids)

    def decode(self, ids, errors: str = "replace") -> str:
        """The text of ids: all the bytes joined first, then UTF-8 (a token can end in
        the middle of a character, which the next one completes). Bytes that are not
        UTF-8 become U+FFFD, unless errors says otherwise (as for bytes.decode)."""
        return self.decode_bytes(ids).decode("utf-8", errors=errors)

    def decode_batch(self, batch, errors: str = "replace") -> list:
        return [self.decode(ids, errors) for ids in batch]

    # --- files, states, pickling -------------------------------------------------------

    def state(self) -> dict:
        """The tokenizer as plain data (str, int, list, dict and None): what its file
        holds, and what a checkpoint embeds. BPETokenizer.from_state gives it back."""
        return {
            "format": FILE_FORMAT,
            "version": FILE_VERSION,
            "pattern": self.pattern,
            "special_tokens": list(self.special_tokens),
            "token_ids": self.token_ids,
            "merges": [[a, b] for a, b in self.merges],
        }

    @classmethod
    def from_state(cls, state) -> "BPETokenizer":
        """The tokenizer that state() described, checked; ValueError says what is wrong.
        Also reads the states of checkpoints written before the file format existed."""
        if not isinstance(state, dict):
            raise ValueError(f"a tokenizer state must be a dict, not {type(state).__name__}")
        if "format" not in state and "merges" in state:  # a checkpoint from before the format
            return cls(**_legacy_arguments(state))
        if state.get("format") != FILE_FORMAT:
            raise ValueError(f"not a {FILE_FORMAT} (its \"format\" is {state.get('format')!r})")
        version = state.get("version")
        if isinstance(version, bool) or not isinstance(version, int) or version < 1:
            raise ValueError(f"its \"version\" must be a whole number, got {version!r}")
        if version > FILE_VERSION:
            raise ValueError(f"it is version {version} of the format, written by a newer bpe; this one reads "
                             f"version {FILE_VERSION}: upgrade bpe")
        expected = {"format", "version", "pattern", "special_tokens", "token_ids", "merges"}
        if set(state) != expected:
            extra, missing = sorted(set(state) - expected), sorted(expected - set(state))
            raise ValueError("its fields are not the format's: " + "; ".join(
                ([f"unknown {extra}"] if extra else []) + ([f"missing {missing}"] if missing else [])))
        try:
            return cls(state["merges"], pattern=state["pattern"], special_tokens=state["special_tokens"],
                       token_ids=state["token_ids"])
        except TypeError as e:
            raise ValueError(str(e)) from None

    def save(self, path) -> Path:
        """Write the tokenizer to one file at path, or to path/tokenizer.bpe when path is
        a folder (or ends with a slash); returns the file's path. The file is JSON,
        versioned, and holds everything encoding needs; a crash while writing leaves
        the old file or the new one, never half of one."""
        path = Path(path)
        if path.is_dir() or str(path).endswith((os.sep, "/")):
            path = path / FILE_NAME
        state = self.state()
        # One merge per line (and token_ids 16 to a line), so a person can read the file.
        lines = ["{"]
        for key in ("format", "version", "pattern", "special_tokens"):
            lines.append(f"  {json.dumps(key)}: {json.dumps(state[key], ensure_ascii=False)},")
        if state["token_ids"] is None:
            lines.append('  "token_ids": null,')
        else:
            ids = state["token_ids"]
            rows = [", ".join(map(str, ids[k:k + 16])) for k in range(0, len(ids), 16)]
            lines.append('  "token_ids": [\n    ' + ",\n    ".join(rows) + "\n  ],")
        merges = ",\n    ".join(f"[{a}, {b}]" for a, b in state["merges"])
        lines.append('  "merges": [' + (f"\n    {merges}\n  " if merges else "") + "]")
        lines.append("}")
        with atomic_write(path) as tmp:
            Path(tmp).write_text("\n".join(lines) + "\n", encoding="utf-8")
        return path

    @classmethod
    def load(cls, path, pattern: str | None = None) -> "BPETokenizer":
        """A tokenizer that save() wrote (path may be the folder that holds it). Also
        reads the merges.txt of earlier versions of this project, given the split
        pattern it was trained with (pattern="default" for data.py's). ValueError names
        the file and what is wrong with it."""
        path = Path(path)
        if path.is_dir():
            path = path / FILE_NAME
        try:
            data = path.read_bytes()
        except OSError as e:
            raise type(e)(f"cannot read a tokenizer from {path}: {e.strerror or e}") from None
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise ValueError(f"{path} is not a tokenizer file: it is not UTF-8 text (byte {e.start})") from None
        if text.lstrip().startswith("{"):
            try:
                state = json.loads(text)
            except json.JSONDecodeError as e:
                raise ValueError(f"{path} is not a readable tokenizer file: {e} (truncated or hand-edited?)") from None
            if formats.is_huggingface(state):
                raise ValueError(f"{path} is a Hugging Face tokenizer.json: load it with "
                                 "BPETokenizer.from_huggingface(path)")
            try:
                return cls.from_state(state)
            except ValueError as e:
                raise ValueError(f"{path}: {e}") from None
        return cls._load_legacy_merges(path, text, pattern)

    @classmethod
    def _load_legacy_merges(cls, path, text: str, pattern) -> "BPETokenizer":
        """merges.txt as this project wrote it before the file format: a merge per line,
        two ids and a space, with <|pad|> and <|endoftext|> after the merges."""
        merges = []
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            parts = line.split()
            if len(parts) != 2 or not all(p.isascii() and p.isdigit() for p in parts):
                hint = (" (a .tiktoken ranks file? load it with BPETokenizer.from_tiktoken)"
                        if len(parts) == 2 and parts[1].isdigit() else "")
                raise ValueError(f"{path}, line {number}: not a tokenizer file: expected JSON, or a merges.txt "
                                 f"line of two ids, got {line.strip()[:60]!r}{hint}")
            merges.append((int(parts[0]), int(parts[1])))
        if pattern is None:
            raise ValueError(f"{path} is a merges.txt from an earlier version, which does not record its split "
                             "pattern: load it with BPETokenizer.load(path, pattern='default') (data.py trained "
                             "with 'default'), or remake the tokenizer with `python data.py --bpe`")
        try:
            return cls(merges, pattern=pattern, special_tokens=LEGACY_SPECIAL_TOKENS)
        except (ValueError, TypeError) as e:
            raise ValueError(f"{path}: {e}") from None

    def __reduce__(self):
        # Pickled as its plain state, so a tokenizer crosses into worker processes
        # (multiprocessing, datasets.map(num_proc=N)); the compiled encoder is rebuilt there.
        return _from_state, (self.state(),)

    def __eq__(self, other):
        return isinstance(other, BPETokenizer) and self.state() == other.state()

    def __hash__(self):
        return hash((self.pattern, self.special_tokens, len(self.merges)))

    def __repr__(self):
        return (f"BPETokenizer(pattern={self.pattern!r}, merges={len(self.merges)}, "
                f"special_tokens={list(self.special_tokens)!r}, n_vocab={self.n_vocab})")

    # --- other libraries' files ------------------------------------------------------

    @classmethod
    def from_tiktoken(cls, path, pattern: str = "gpt4", special_ids=None) -> "BPETokenizer":
        """A tiktoken ranks file (GPT-4's cl100k_base.tiktoken, say). The file holds neither
        the split pattern nor the special tokens: pass them, as {token: id} (default:
        GPT-4's)."""
        return cls._from_file(path, formats.load_tiktoken, pattern=pattern, special_ids=special_ids)

    @classmethod
    def from_gpt2(cls, vocab_path, merges_path, pattern: str = "gpt2") -> "BPETokenizer":
        """GPT-2 style vocab.json and merges.txt (GPT-2's own, or another model's)."""
        return cls._from_file(vocab_path, formats.load_gpt2, merges_path, pattern=pattern)

    @classmethod
    def from_huggingface(cls, path) -> "BPETokenizer":
        """A Hugging Face tokenizer.json of a byte-level BPE whose split rule is one of
        ours (GPT-2's, or one that save_huggingface wrote)."""
        return cls._from_file(path, formats.load_huggingface)

    @classmethod
    def _from_file(cls, path, loader, *args, **kwargs) -> "BPETokenizer":
        try:
            return cls(**loader(path, *args, **kwargs))
        except (ValueError, TypeError) as e:
            message = str(e)
            raise ValueError(message if str(path) in message else f"{path}: {message}") from None

    def save_tiktoken(self, path):
        """Write a tiktoken ranks file. tiktoken wants the pattern and the special tokens
        apart: formats.TIKTOKEN_PATTERNS[tok.pattern] and tok.special_ids."""
        formats.save_tiktoken(self.merges, path, token_ids=self.token_ids[:256 + len(self.merges)]
                              if self.token_ids else None)

    def save_huggingface(self, path):
        """Write a Hugging Face tokenizer.json, with the split pattern and special tokens."""
        formats.save_huggingface(path, self.merges, pattern=self.pattern, special_tokens=self.special_tokens,
                                 token_ids=self.token_ids)


def _from_state(state) -> BPETokenizer:
    return BPETokenizer.from_state(state)


def _legacy_arguments(state: dict) -> dict:
    """BPETokenizer's arguments from a checkpoint state written before the file format:
    {"kind": "bpe", "merges", "pattern"} meant <|pad|> and <|endoftext|> after the
    merges; imported vocabularies added {"special_tokens": {token: id}, "token_ids"}
    with token_ids for the bytes and merges only."""
    merges, pattern = state.get("merges"), state.get("pattern", "default")
    specials = state.get("special_tokens")
    if specials is None:
        return {"merges": merges, "pattern": pattern, "special_tokens": LEGACY_SPECIAL_TOKENS}
    if not isinstance(specials, dict):
        raise ValueError(f"its special_tokens must be a dict from str to id, got {type(specials).__name__}")
    token_ids = state.get("token_ids")
    if token_ids is None:
        token_ids = list(range(256 + len(merges or [])))
    return {"merges": merges, "pattern": pattern, "special_tokens": list(specials),
            "token_ids": list(token_ids) + list(specials.values())}


def _as_merges(merges) -> list:
    """merges as a list of (int, int), from lists, tuples or numpy arrays of ints; the
    core then checks that each one could have been learned."""
    if isinstance(merges, (str, bytes)) or not hasattr(merges, "__iter__"):
        raise TypeError(f"merges must be a list of (int, int) pairs, not {type(merges).__name__}")
    out = []
    for k, pair in enumerate(merges):
        try:
            a, b = pair
            if isinstance(a, bool) or isinstance(b, bool):
                raise TypeError
            out.append((operator.index(a), operator.index(b)))
        except (TypeError, ValueError):
            raise TypeError(f"merge {k} is {pair!r}: expected a pair of ints") from None
    return out


def _as_ids(ids, what: str) -> list:
    if isinstance(ids, (str, bytes)) or not hasattr(ids, "__iter__"):
        raise TypeError(f"{what} must be a list of ints, not {type(ids).__name__}")
    out = []
    for k, i in enumerate(ids):
        try:
            if isinstance(i, bool):
                raise TypeError
            out.append(operator.index(i))
        except TypeError:
            raise TypeError(f"{what}[{k}] is {i!r}: expected an int") from None
    return out


def _as_special_tokens(special_tokens) -> tuple:
    """The special tokens as a tuple of str: a list or tuple of str, never one str."""
    if isinstance(special_tokens, dict):
        raise TypeError("special_tokens is a list of str, whose ids follow the merges in order; a vocabulary "
                        "numbered its own way gives every id in token_ids (see BPETokenizer's docstring)")
    if isinstance(special_tokens, (str, bytes)) or not hasattr(special_tokens, "__iter__"):
        raise TypeError(f"special_tokens must be a list of str, not {type(special_tokens).__name__}")
    out = tuple(special_tokens)
    for token in out:
        if not isinstance(token, str):
            raise TypeError(f"special tokens must be str, not {type(token).__name__}: got {token!r}")
        if not token:
            raise ValueError("a special token cannot be empty")
        try:
            token.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError(f"the special token {token!r} cannot be encoded as UTF-8 (a lone surrogate?)") from None
    return out


def _str(text) -> str:
    """text, checked to be a str: the core reads it in place (no copy of an ASCII str,
    and none left on any other) and raises ValueError for a lone surrogate."""
    if not isinstance(text, str):
        hint = ": decode it first, or use bpe.Encoder, which takes bytes" if isinstance(text, (bytes, bytearray)) else ""
        raise TypeError(f"text must be str, not {type(text).__name__}{hint}")
    return text


_MEMORY_UNITS = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
                 "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40}


def _as_memory(max_memory):
    """max_memory as bytes (an int above 0), or None: an int, or a str such as "2GB"."""
    if max_memory is None or (isinstance(max_memory, int) and not isinstance(max_memory, bool)):
        return max_memory
    if isinstance(max_memory, str):
        match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*", max_memory)
        if match and match.group(2).upper() in _MEMORY_UNITS:
            return int(float(match.group(1)) * _MEMORY_UNITS[match.group(2).upper()])
        raise ValueError(f"max_memory must be bytes, or a size such as '2GB' or '512MiB', got {max_memory!r}")
    raise TypeError(f"max_memory must be an int (bytes), a str such as '2GB', or None, not {type(max_memory).__name__}")


def _as_texts(texts) -> list:
    if isinstance(texts, (str, bytes)) or not hasattr(texts, "__iter__"):
        raise TypeError(f"texts must be a list of str, not {type(texts).__name__}")
    return list(texts)


def _batch_size(max_memory) -> int:
    """Characters of text a batch holds: TRAIN_BATCH_BYTES, or under a memory budget
    at most a 64th of it (the batch in hand is memory the counter cannot see)."""
    budget = _as_memory(max_memory)
    return TRAIN_BATCH_BYTES if budget is None else max(1 << 16, min(TRAIN_BATCH_BYTES, budget // 64))


def _batches(texts, special_tokens, batch_size: int = TRAIN_BATCH_BYTES):
    """The texts as lists of str of about batch_size characters each, which the
    core reads in place (an ASCII str with no copy; any other encoded to UTF-8 for the
    call only). A single str goes whole: the core reads an ASCII one in place, and
    encodes any other a piece at a time, cut where a chunk boundary is certain, so that
    its UTF-8 is never held whole (bpe/_core.cpp, add_str_in_pieces)."""
    if isinstance(texts, str):
        yield texts
        return
    elif isinstance(texts, (bytes, bytearray)) or not hasattr(texts, "__iter__"):
        raise TypeError(f"texts must be a str or an iterable of str, not {type(texts).__name__}")
    batch, size = [], 0
    for k, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"texts must be str; item {k} is {type(text).__name__}"
                            + (" (decode it first)" if isinstance(text, (bytes, bytearray)) else ""))
        batch.append(text)
        size += len(text)
        if size >= batch_size:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def _safe_pieces(text: str, size: int, special_tokens):
    """text in pieces of about `size` characters, cut only where a chunk boundary is
    certain whatever the pattern: an ASCII letter followed by a space (bpe/split.h,
    is_safe_cut, gives the reason), and not inside a special token."""
    start = 0
    while len(text) - start > size:
        cut = text.find(" ", start + size)
        while cut > 0 and not (text[cut - 1].isascii() and text[cut - 1].isalpha()
                               and not _inside_special(text, cut, special_tokens)):
            cut = text.find(" ", cut + 1)
        if cut <= 0:
            break
        yield text[start:cut]
        start = cut
    yield text[start:]


def _inside_special(text: str, cut: int, special_tokens) -> bool:
    """Whether some special token occurs in text across position cut."""
    for token in special_tokens:
        at = text.find(token, max(0, cut - len(token) + 1), cut + len(token) - 1)
        if at != -1 and at < cut:
            return True
    return False
