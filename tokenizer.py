"""The pipeline's tokenizers: the word-level one of the earlier episodes, and byte-level
BPE (bpe.BPETokenizer, from the library in bpe/).

Both offer one small interface, `Tokenizer`, so that data.py, pretrain.py, bits.py and
sample.py never ask which one they hold. Its names are tiktoken's, as the BPE
library's are:

    ids = tok.encode("Once upon a time")        # list of ints; special-token text raises
    ids = tok.encode(text, allowed_special="all")   # the pipeline's own text
    ids = tok.encode_ordinary(prompt)           # a user's text: specials are plain text
    tok.encode_array(text, allowed_special="all", threads=0)   # numpy, for token files
    text = tok.decode(ids)                      # str; special tokens as their text
    len(tok), tok.eot_token, tok.id_to_token(i)
    tok.state()                                 # plain data, for checkpoints
    tokenizer_from_state(tok.state())           # the same tokenizer back

Special tokens: `<|endoftext|>` separates stories in the pipeline's own text, and
`<|pad|>` pads; each is one whole token that never goes through the merges (BPE) or the
word split. As in tiktoken, encode refuses text that holds one unless the caller allows
it: data.py and bits.py allow them in the stories they wrote themselves, and sample.py
encodes a user's prompt with encode_ordinary, so that nobody can type a control token
into the model's input.
"""
import json
import operator
import re
from abc import ABC, abstractmethod
from collections import Counter

import numpy as np

from bpe import BPETokenizer  # the library's class; without the compiled core it raises at first use
from bpe.core import array_dtype

END_OF_TEXT = "<|endoftext|>"
PAD = "<|pad|>"
SPECIALS = (PAD, END_OF_TEXT)  # the order in which they follow the rest of a vocabulary


def special_set(allowed_special, specials=SPECIALS) -> frozenset:
    """The special strings that `allowed_special` ("all" or a set of them) names."""
    if isinstance(allowed_special, str):
        if allowed_special == "all":
            return frozenset(specials)
        raise ValueError(f'allowed_special must be "all" or a set of special tokens, got {allowed_special!r}')
    try:
        allowed = frozenset(allowed_special)
    except TypeError:
        raise TypeError(f'allowed_special must be "all" or a set of special tokens, got {allowed_special!r}') from None
    unknown = allowed - set(specials)
    if unknown:
        raise ValueError(f"not special tokens: {sorted(map(repr, unknown))}; the special tokens are {list(specials)}")
    return allowed


def split_specials(text: str, allowed_special="all", disallowed_special="all", specials=SPECIALS):
    """Yield (piece, special) over text, as tiktoken cuts it: special is the special
    string when the piece is an allowed special token, else None (and piece is ordinary
    text, never empty). A disallowed special token anywhere in text is a ValueError."""
    if not isinstance(text, str):
        raise TypeError(f"text must be str, not {type(text).__name__}")
    allowed = special_set(allowed_special, specials)
    disallowed = set(specials) - allowed if disallowed_special == "all" else special_set(disallowed_special, specials)
    for token in disallowed:
        if token in text:
            raise ValueError(f"the text holds the special token {token!r}, which is disallowed. To encode it as its "
                             f"id, allow it: allowed_special={{{token!r}}} (or \"all\"); to encode it as ordinary "
                             "text, disallowed_special=() or encode_ordinary")
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
    """What every tokenizer of the pipeline offers, so that no caller asks which one it
    holds. bpe.BPETokenizer has all of it and is registered below as one."""

    @abstractmethod
    def encode(self, text: str, *, allowed_special=frozenset(), disallowed_special="all") -> list[int]:
        """The ids of text. A special token in it becomes its id if allowed_special ("all",
        or a set of special strings) holds it, and is an error if disallowed_special
        ("all": every one not allowed) does."""

    @abstractmethod
    def encode_ordinary(self, text: str) -> list[int]:
        """The ids of text, special-token text encoded as ordinary text."""

    @abstractmethod
    def encode_array(self, text: str, *, allowed_special=frozenset(), disallowed_special="all",
                     threads: int = 0) -> np.ndarray:
        """As encode, as a numpy array: uint16 when the vocabulary fits, else uint32."""

    @abstractmethod
    def decode(self, ids) -> str:
        """The text of ids, special tokens as their text."""

    @abstractmethod
    def id_to_token(self, i: int) -> str:
        """One token as text, for printing."""

    @abstractmethod
    def __len__(self) -> int:
        """The size of the vocabulary: every id is below it."""

    @property
    def n_vocab(self) -> int:
        """len(self), by tiktoken's name, which bpe.token_files reads."""
        return len(self)

    @abstractmethod
    def state(self) -> dict:
        """The tokenizer as plain data (str, int, list, dict, None), for checkpoints that
        torch.load(..., weights_only=True) must be able to read."""

    def _check_id(self, i) -> int:
        try:
            i = operator.index(i)
        except TypeError:
            raise TypeError(f"a token id must be an int, not {type(i).__name__}") from None
        if not 0 <= i < len(self):
            raise ValueError(f"token id {i} is outside the vocabulary of {len(self)} tokens (ids 0 to {len(self) - 1})")
        return i


Tokenizer.register(BPETokenizer)


def kind(tok) -> str:
    """"word" or "bpe", for messages and run descriptions."""
    return "word" if isinstance(tok, WordTokenizer) else "bpe"


def unknown_id(tok):
    """The id of the unknown token, or None: byte-level BPE has none, since every byte
    is a token and so nothing is unknown."""
    return tok.unknown if isinstance(tok, WordTokenizer) else None


def tokenizer_from_state(state: dict) -> Tokenizer:
    """The tokenizer that state() described: a word-level one or a BPE one (the library's
    format, or the state of a checkpoint from before it)."""
    if not isinstance(state, dict):
        raise TypeError(f"a tokenizer state must be a dict, not {type(state).__name__}")
    if state.get("kind") == "word":
        return WordTokenizer(state.get("words"))
    if state.get("kind") == "bpe" or "format" in state:
        return BPETokenizer.from_state({k: v for k, v in state.items() if k != "kind"})
    raise ValueError(f'a tokenizer state must be a word vocabulary (kind "word") or a BPE tokenizer, got keys '
                     f"{sorted(state)[:8]}")


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
        self.pad_token, self.eot_token, self.unknown = n, n + 1, n + 2
        self.tokens = self.words + [PAD, END_OF_TEXT, UNKNOWN]

    @classmethod
    def build(cls, texts, size: int = 10_000) -> "WordTokenizer":
        """The `size` most frequent words and punctuation runs of texts (fewer if they have
        fewer), plus padding, end of text and unknown: 10,003 tokens by default. texts is a
        str, or any iterable of str (stories, say), counted one at a time so that a
        corpus need not be in memory at once."""
        if isinstance(texts, str):
            texts = [texts]
        elif isinstance(texts, (bytes, bytearray)) or not hasattr(texts, "__iter__"):
            raise TypeError(f"texts must be a str or an iterable of str, not {type(texts).__name__}")
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ValueError(f"size must be a positive int, got {size!r}")
        counts = Counter()
        for text in texts:
            # Piece by piece: end-of-text markers are not words, and a findall over a
            # whole corpus at once would hold every token of it in memory.
            for piece, special in split_specials(text, allowed_special="all"):
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
        """The vocabulary that save() wrote; ValueError names the file and what is wrong."""
        try:
            with open(path, encoding="utf-8") as f:
                state = json.load(f)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise ValueError(f"{path} is not a word vocabulary: {e}") from None
        if not isinstance(state, dict) or state.get("kind") != "word":
            raise ValueError(f'{path} is not a word vocabulary: expected a JSON object with "kind": "word"')
        try:
            return cls(state.get("words"))
        except (TypeError, ValueError) as e:
            raise ValueError(f"{path} is not a word vocabulary: {e}") from None

    def state(self) -> dict:
        return {"kind": "word", "words": list(self.words)}

    def __len__(self) -> int:
        return len(self.tokens)

    def _iter_ids(self, text, allowed_special, disallowed_special):
        lookup, unknown = self.ids, self.unknown
        special_ids = {PAD: self.pad_token, END_OF_TEXT: self.eot_token}
        for piece, special in split_specials(text, allowed_special, disallowed_special):
            if special is not None:
                yield special_ids[special]
            else:
                for w in WORD.findall(piece):
                    yield lookup.get(w, unknown)

    def encode(self, text: str, *, allowed_special=frozenset(), disallowed_special="all") -> list[int]:
        return list(self._iter_ids(text, allowed_special, disallowed_special))

    def encode_ordinary(self, text: str) -> list[int]:
        return self.encode(text, allowed_special=(), disallowed_special=())

    def encode_array(self, text: str, *, allowed_special=frozenset(), disallowed_special="all",
                     threads: int = 0) -> np.ndarray:
        """As encode, into a numpy array without a Python list in between (threads is
        ignored: the word split is plain Python)."""
        return np.fromiter(self._iter_ids(text, allowed_special, disallowed_special), dtype=array_dtype(len(self)))

    def decode(self, ids) -> str:
        """Words joined by spaces, except by the rules for punctuation and quotes. Each
        space is decided from the tokens before it, so decoding more ids only appends
        (sample.py prints a story token by token on that)."""
        out = []
        quote_open = False  # inside a pair of double quotes: '"' opens, the next one closes
        prev = ""
        for i in _as_ids(ids, len(self)):
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


