"""Tokenizers for the GPT: the word-level one of the earlier episodes, and byte-level BPE.

Both implement one small interface, `Tokenizer`, so that data.py, pretrain.py, bits.py
and sample.py never ask which one they hold:

    ids = tok.encode("Once upon a time")      # list of ints
    text = tok.decode(ids)                      # str
    len(tok), tok.pad_id, tok.eot_id, tok.unknown, tok.kind
    tok.state()                                 # plain data, for checkpoints
    tokenizer_from_state(tok.state())           # the same tokenizer back

Special tokens. `<|endoftext|>` separates stories in the pipeline's own text and
`<|pad|>` pads; each is one whole token that never goes through the merges (BPE) or
the word split. Who may write them is the caller's choice, through `allowed_special`:

- The pipeline's own text (data.py encoding the stories, bits.py measuring held-out
  stories) uses the default, "all": the markers in the text become their ids.
- Text from a user (sample.py's --prompt) uses "none": a user who types
  "<|endoftext|>" gets those 13 characters as ordinary text, and cannot smuggle a
  control token into the model's input.
"""
import json
import operator
import re
from abc import ABC, abstractmethod
from collections import Counter

import numpy as np

from bpe_reference import token_bytes

END_OF_TEXT = "<|endoftext|>"
PAD = "<|pad|>"
SPECIALS = (PAD, END_OF_TEXT)  # the order in which they follow the rest of a vocabulary

BUILD_COMMAND = "python setup.py build_ext --inplace"

def _allowed_specials(allowed_special, specials=SPECIALS) -> frozenset:
    """The set of special strings that `allowed_special` lets through as their ids."""
    if isinstance(allowed_special, str):
        if allowed_special == "all":
            return frozenset(specials)
        if allowed_special == "none":
            return frozenset()
        raise ValueError(f'allowed_special must be "all", "none" or a set of special tokens, got {allowed_special!r}')
    try:
        allowed = frozenset(allowed_special)
    except TypeError:
        raise TypeError(f'allowed_special must be "all", "none" or a set of special tokens, got {allowed_special!r}') from None
    unknown = allowed - set(specials)
    if unknown:
        raise ValueError(f"not special tokens: {sorted(map(repr, unknown))}; the special tokens are {list(specials)}")
    return allowed


def split_specials(text: str, allowed_special="all", specials=SPECIALS):
    """Yield (piece, special) over text: special is the special string when the piece is
    an allowed special token, else None (and piece is ordinary text, never empty)."""
    if not isinstance(text, str):
        raise TypeError(f"text must be str, not {type(text).__name__}")
    allowed = _allowed_specials(allowed_special, specials)
    if not allowed:
        if text:
            yield text, None
        return
    # The longest first, so that where two start at one place the longer wins, as in
    # the C++; the group keeps the specials among the pieces that re.split returns, at
    # the odd places.
    pattern = re.compile("(" + "|".join(re.escape(s) for s in sorted(allowed, key=len, reverse=True)) + ")")
    for k, piece in enumerate(pattern.split(text)):
        if k % 2 == 1:
            yield piece, piece
        elif piece:
            yield piece, None


def array_dtype(vocab_size: int):
    """The smallest unsigned type that holds every id: uint16 up to 65,536 tokens."""
    return np.uint16 if vocab_size <= 65536 else np.uint32


def _as_ids(ids, vocab_size: int) -> list:
    """ids (a list, tuple, numpy array or tensor of ints) as a list of ints, each checked
    to be in the vocabulary: a negative id would otherwise index from the end silently."""
    if hasattr(ids, "tolist"):  # numpy arrays and torch tensors, without a Python loop
        ids = ids.tolist()
        if not isinstance(ids, list):  # a 0-d array or tensor: one id
            ids = [ids]
    try:
        ids = [operator.index(i) for i in ids]
    except TypeError:
        raise TypeError("ids must be a sequence of ints") from None
    if ids:
        for bad in (min(ids), max(ids)):
            if not 0 <= bad < vocab_size:
                raise ValueError(f"token id {bad} is outside the vocabulary of {vocab_size} tokens (ids 0 to {vocab_size - 1})")
    return ids


class Tokenizer(ABC):
    """What every tokenizer offers, so that no caller asks which one it holds."""

    kind: str  # "word" or "bpe", saved in state() so tokenizer_from_state picks the class
    unknown: int | None  # the id of the unknown token, or None where there is none
    pad_id: int
    eot_id: int

    @abstractmethod
    def encode(self, text: str, allowed_special="all") -> list[int]:
        """The ids of text. allowed_special: "all" (the pipeline's own text), "none" (text
        from a user), or a set of the special strings to turn into their ids."""

    @abstractmethod
    def decode(self, ids, keep_special: bool = False) -> str:
        """The text of ids; padding and end of text only when keep_special is true."""

    @abstractmethod
    def id_to_token(self, i: int) -> str:
        """One token as text, for printing."""

    @abstractmethod
    def __len__(self) -> int:
        """The size of the vocabulary: every id is below it."""

    @abstractmethod
    def state(self) -> dict:
        """The tokenizer as plain data (str, int, list, dict), for checkpoints that
        torch.load(..., weights_only=True) must be able to read."""

    def encode_array(self, text: str, threads: int = 0, allowed_special="all") -> np.ndarray:
        """The ids of text as a numpy array: uint16 when the vocabulary fits, else uint32."""
        return np.array(self.encode(text, allowed_special), dtype=array_dtype(len(self)))

    def _check_id(self, i) -> int:
        try:
            i = operator.index(i)
        except TypeError:
            raise TypeError(f"a token id must be an int, not {type(i).__name__}") from None
        if not 0 <= i < len(self):
            raise ValueError(f"token id {i} is outside the vocabulary of {len(self)} tokens (ids 0 to {len(self) - 1})")
        return i


def tokenizer_from_state(state: dict) -> Tokenizer:
    """The tokenizer that state() described: a word-level one or a BPE one."""
    if not isinstance(state, dict):
        raise TypeError(f"a tokenizer state must be a dict, not {type(state).__name__}")
    kind = state.get("kind")
    if kind == "word":
        return WordTokenizer(state.get("words"))
    if kind == "bpe":
        return BPETokenizer(state.get("merges"), pattern=state.get("pattern", "default"),
                            special_tokens=state.get("special_tokens"), token_ids=state.get("token_ids"))
    raise ValueError(f'a tokenizer state must have kind "word" or "bpe", got {kind!r}')


# ---------------------------------------------------------------------------------------
# The word-level tokenizer (episode two)

# A word (letters and digits, with inner apostrophes, as in "don't" and "Tom's"), or a
# run of punctuation. Whitespace matches neither, so spaces and new lines are dropped.
WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)*|[^\w\s]+|_+")

UNKNOWN = "<|unk|>"

# Decoding puts spaces back by rules, since encoding dropped them.
_NO_SPACE_BEFORE = set(".,!?;:)]}'%")
_NO_SPACE_AFTER = set("([{")


class WordTokenizer(Tokenizer):
    """The earlier episodes' tokenizer: the most frequent words and runs of punctuation of
    a corpus, then padding, end of text, and an unknown token for every other word.

    Its known flaws are kept on purpose, as it is the baseline BPE is compared against: a
    name it has not seen ("Zorblax") becomes the unknown token, and spaces and new lines
    are dropped when encoding and put back by rules when decoding, so text does not
    round-trip.
    """

    kind = "word"

    def __init__(self, words):
        if isinstance(words, str) or not isinstance(words, (list, tuple)):
            raise TypeError(f"words must be a list of str, not {type(words).__name__}")
        for k, w in enumerate(words):
            if not isinstance(w, str) or not w:
                raise ValueError(f"word {k} is {w!r}: words must be non-empty strings")
        self.words = list(words)
        self.ids = {w: i for i, w in enumerate(self.words)}
        if len(self.ids) != len(self.words):
            dupes = sorted(w for w, n in Counter(self.words).items() if n > 1)
            raise ValueError(f"words repeat: {dupes[:10]}")
        clashes = set(self.ids) & {PAD, END_OF_TEXT, UNKNOWN}
        if clashes:
            raise ValueError(f"words must not contain the special tokens {sorted(clashes)}")
        n = len(self.words)
        self.pad_id, self.eot_id, self.unknown = n, n + 1, n + 2
        self.tokens = self.words + [PAD, END_OF_TEXT, UNKNOWN]

    @classmethod
    def build(cls, text: str, size: int = 10_000) -> "WordTokenizer":
        """The `size` most frequent words and punctuation runs of text (fewer if it has
        fewer), plus padding, end of text and unknown: 10,003 tokens by default."""
        if not isinstance(text, str):
            raise TypeError(f"text must be str, not {type(text).__name__}")
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ValueError(f"size must be a positive int, got {size!r}")
        counts = Counter()
        # Story by story: end-of-text markers are not words, and a findall over a whole
        # corpus at once would hold every token of it in memory.
        for piece, special in split_specials(text):
            if special is None:
                counts.update(WORD.findall(piece))
        # Most frequent first; ties in alphabetical order, so the same text gives the same ids.
        ranked = sorted(counts.items(), key=lambda wc: (-wc[1], wc[0]))
        return cls([w for w, _ in ranked[:size]])

    def save(self, path):
        """Write the vocabulary as JSON (data.py writes data/vocab.json)."""
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.state(), f, ensure_ascii=False)
            f.write("\n")

    @classmethod
    def load(cls, path) -> "WordTokenizer":
        with open(path, encoding="utf-8") as f:
            try:
                state = json.load(f)
            except json.JSONDecodeError as e:
                raise ValueError(f"{path} is not a word vocabulary: {e}") from None
        if not isinstance(state, dict) or state.get("kind") != "word":
            raise ValueError(f'{path} is not a word vocabulary: expected a JSON object with "kind": "word"')
        return cls(state.get("words"))

    def state(self) -> dict:
        return {"kind": "word", "words": list(self.words)}

    def __len__(self) -> int:
        return len(self.tokens)

    def _iter_ids(self, text, allowed_special):
        lookup, unknown = self.ids, self.unknown
        special_ids = {PAD: self.pad_id, END_OF_TEXT: self.eot_id}
        for piece, special in split_specials(text, allowed_special):
            if special is not None:
                yield special_ids[special]
            else:
                for w in WORD.findall(piece):
                    yield lookup.get(w, unknown)

    def encode(self, text: str, allowed_special="all") -> list[int]:
        return list(self._iter_ids(text, allowed_special))

    def encode_array(self, text: str, threads: int = 0, allowed_special="all") -> np.ndarray:
        """As encode, into a numpy array without a Python list in between (threads is
        ignored: the word split is plain Python)."""
        return np.fromiter(self._iter_ids(text, allowed_special), dtype=array_dtype(len(self)))

    def decode(self, ids, keep_special: bool = False) -> str:
        """Words joined by spaces, except by the rules for punctuation and quotes. Each
        space is decided from the tokens before it, so decoding more ids only appends
        (sample.py prints a story token by token on that)."""
        out = []
        quote_open = False  # inside a pair of double quotes: '"' opens, the next one closes
        prev = ""
        for i in _as_ids(ids, len(self)):
            if i in (self.pad_id, self.eot_id) and not keep_special:
                continue
            token = self.tokens[i]
            if out and not self._glues(prev, token, quote_open):
                out.append(" ")
            out.append(token)
            quote_open ^= token.count('"') % 2 == 1
            prev = token
        return "".join(out)

    @staticmethod
    def _glues(prev: str, token: str, quote_open: bool) -> bool:
        """Whether token follows prev without a space; quote_open is the state before token."""
        if token[0] in _NO_SPACE_BEFORE or prev[-1] in _NO_SPACE_AFTER:
            return True
        if token == "-" or prev == "-":  # "well-known" was split as well, -, known
            return True
        if token[0] == '"' and quote_open:  # a closing quote hugs the word before it
            return True
        # An opening quote hugs the word after it: prev ended with a quote that left one open.
        return prev[-1] == '"' and quote_open

    def id_to_token(self, i: int) -> str:
        return self.tokens[self._check_id(i)]


# ---------------------------------------------------------------------------------------
# Byte-level BPE, on the C++ module `bpe`


class BPETokenizer(Tokenizer):
    """Byte-level BPE: ids 0-255 are the bytes, 256 + k is merge k, then `<|pad|>` and
    `<|endoftext|>`. Encoding is the C++ module `bpe`; this class owns the specials,
    decoding and the errors.

    A vocabulary from elsewhere (GPT-2's files, GPT-4's tiktoken file: see from_gpt2 and
    from_tiktoken) numbers its tokens its own way and has its own special tokens:
    token_ids[i] is then the id of our token i, and special_tokens maps each special
    string to its id. It must have `<|endoftext|>`, which the pipeline puts between
    stories; `<|pad|>` is optional (pad_id is None without it).
    """

    kind = "bpe"

    def __init__(self, merges, pattern: str = "default", special_tokens=None, token_ids=None):
        try:
            import bpe  # here, so the rest of this file works where the module is not built
        except ImportError as e:
            raise ImportError(f"BPETokenizer needs the C++ module bpe; build it with: {BUILD_COMMAND}") from e
        if not isinstance(pattern, str):
            raise TypeError(f"pattern must be a str, not {type(pattern).__name__}")
        self.merges = _as_merges(merges)
        self.pattern = pattern
        n = 256 + len(self.merges)
        self.token_ids = None if token_ids is None else [operator.index(i) for i in token_ids]
        if special_tokens is None:
            special_tokens = {PAD: n, END_OF_TEXT: n + 1}
        if not isinstance(special_tokens, dict) or END_OF_TEXT not in special_tokens:
            raise ValueError(f"special_tokens must be a dict from str to id that has {END_OF_TEXT}")
        self.special_tokens = {str(s): operator.index(i) for s, i in special_tokens.items()}
        self.pad_id, self.eot_id = self.special_tokens.get(PAD), self.special_tokens[END_OF_TEXT]
        # The C++ finds the specials itself, so that a corpus of stories is one call. The
        # Encoder checks that each merge could have been learned, the pattern's name,
        # and that no two tokens share an id.
        self.encoder = bpe.Encoder(self.merges, special_tokens=self.special_tokens, pattern=pattern,
                                   token_ids=self.token_ids)
        # Each token's bytes: a merged token's are its two parts' joined.
        self.token_bytes = token_bytes(self.merges)
        # No unknown token: any text is bytes and every byte is a token, so nothing is unknown.
        self.unknown = None
        # What decode writes for each id: specials as nothing, or as their text. An id
        # that is no token (GPT-4 leaves gaps) stays None, and decoding it is an error.
        self._plain = [None] * self.encoder.vocab_size
        for i, data in zip(self.token_ids or range(n), self.token_bytes):
            self._plain[i] = data
        self._with_special = list(self._plain)
        for special, i in self.special_tokens.items():
            self._plain[i], self._with_special[i] = b"", special.encode("utf-8")

    @classmethod
    def from_tiktoken(cls, path, pattern: str = "gpt4", special_tokens=None) -> "BPETokenizer":
        """A tiktoken ranks file (GPT-4's cl100k_base.tiktoken, say). The file holds neither
        the split pattern nor the special tokens; GPT-4's are the defaults."""
        import bpe_formats

        merges, token_ids = bpe_formats.load_tiktoken(path)
        return cls(merges, pattern=pattern, token_ids=token_ids,
                   special_tokens=special_tokens or bpe_formats.CL100K_SPECIAL_TOKENS)

    @classmethod
    def from_gpt2(cls, vocab_path, merges_path, pattern: str = "gpt2") -> "BPETokenizer":
        """GPT-2 style vocab.json and merges.txt (GPT-2's own, or a Hugging Face export)."""
        import bpe_formats

        merges, token_ids, special_tokens = bpe_formats.load_gpt2(vocab_path, merges_path)
        return cls(merges, pattern=pattern, token_ids=token_ids, special_tokens=special_tokens)

    def save_tiktoken(self, path):
        """Write a tiktoken ranks file (tiktoken wants the pattern and specials apart:
        bpe_formats.TIKTOKEN_PATTERNS[self.pattern] and self.special_tokens)."""
        import bpe_formats

        bpe_formats.save_tiktoken(self.merges, path, token_ids=self.token_ids)

    def save_huggingface(self, path):
        """Write a Hugging Face tokenizer.json, with the split pattern and special tokens."""
        import bpe_formats

        bpe_formats.save_huggingface(self.merges, path, pattern=self.pattern, special_tokens=self.special_tokens,
                                     token_ids=self.token_ids)

    @classmethod
    def load(cls, path, pattern: str = "default") -> "BPETokenizer":
        """Read merges.txt: one merge per line, two ids separated by a space. The file does
        not record a split pattern; pass the one the merges were learned with."""
        merges = []
        with open(path, encoding="ascii") as f:
            for number, line in enumerate(f, 1):
                if not line.strip():
                    continue
                parts = line.split()
                if len(parts) != 2 or not all(p.isdigit() for p in parts):
                    raise ValueError(f"{path}, line {number}: expected two ids separated by a space, got {line.strip()!r}")
                merges.append((int(parts[0]), int(parts[1])))
        try:
            return cls(merges, pattern=pattern)
        except (ValueError, TypeError) as e:
            raise ValueError(f"{path}: {e}") from None

    def save(self, path):
        """Write merges.txt, one merge per line."""
        with open(path, "w", encoding="ascii") as f:
            f.writelines(f"{a} {b}\n" for a, b in self.merges)

    def state(self) -> dict:
        state = {"kind": "bpe", "merges": [[a, b] for a, b in self.merges], "pattern": self.pattern}
        n = 256 + len(self.merges)
        if self.special_tokens != {PAD: n, END_OF_TEXT: n + 1} or self.token_ids is not None:
            state["special_tokens"] = dict(self.special_tokens)
            state["token_ids"] = self.token_ids
        return state

    def __len__(self) -> int:
        return len(self._plain)

    def encode(self, text: str, allowed_special="all") -> list[int]:
        allowed = _allowed_specials(allowed_special, self.special_tokens)
        if len(allowed) in (0, len(self.special_tokens)):  # all or none: the C++ does it in one call
            return self.encoder.encode(_utf8(text), allowed_special=bool(allowed))
        ids = []
        for piece, special in split_specials(text, allowed, self.special_tokens):
            if special is not None:
                ids.append(self.special_tokens[special])
            else:
                ids.extend(self.encoder.encode(_utf8(piece), allowed_special=False))
        return ids

    def encode_array(self, text: str, threads: int = 0, allowed_special="all") -> np.ndarray:
        """As encode, into a numpy array, by the C++ encoder on `threads` threads (0: one
        per core), with no Python object per token."""
        allowed = _allowed_specials(allowed_special, self.special_tokens)
        if len(allowed) in (0, len(self.special_tokens)):
            ids = self.encoder.encode_array(_utf8(text), threads=threads, allowed_special=bool(allowed))
            return ids.astype(array_dtype(len(self)), copy=False)
        return np.array(self.encode(text, allowed), dtype=array_dtype(len(self)))

    def decode(self, ids, keep_special: bool = False) -> str:
        """All the bytes first, then UTF-8 with replacement: a token can end in the middle
        of a character, which the next token completes."""
        table = self._with_special if keep_special else self._plain
        try:
            return b"".join([table[i] for i in _as_ids(ids, len(self))]).decode("utf-8", errors="replace")
        except TypeError:  # a None: an id in a gap of the vocabulary
            gap = next(i for i in _as_ids(ids, len(self)) if table[i] is None)
            raise ValueError(f"token id {gap} is not a token of this vocabulary of {len(self)} ids") from None

    def id_to_token(self, i: int) -> str:
        """One token as text, for printing: a token that ends mid-character shows U+FFFD."""
        data = self._with_special[self._check_id(i)]
        if data is None:
            raise ValueError(f"token id {i} is not a token of this vocabulary of {len(self)} ids")
        return data.decode("utf-8", errors="replace")


def _as_merges(merges) -> list[tuple[int, int]]:
    """merges as a list of (int, int), from lists, tuples or numpy arrays of ints; the
    C++ then checks that each one could have been learned."""
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


def _utf8(text: str) -> bytes:
    if not isinstance(text, str):
        raise TypeError(f"text must be str, not {type(text).__name__}")
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ValueError(f"text cannot be encoded as UTF-8 (a lone surrogate at position {e.start}?)") from None
