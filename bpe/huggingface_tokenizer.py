"""HuggingFaceTokenizer: a BPETokenizer loaded from a tokenizer.json whose rules are more
than one of our split patterns (a Sequence of Split and Digits pre-tokenizers, NFC,
non-special added tokens, ignore_merges, a template), giving Hugging Face's ids.

The merges, the tokens and their ids are the core's, as for any BPETokenizer (decode,
token_to_id and the rest are inherited). Encoding cuts the text with the file's rules
(bpe.huggingface.HuggingFaceRules) and encodes each chunk with the merges alone:
- encode_ordinary(t) is Hugging Face's encode(t, add_special_tokens=False) with
  encode_special_tokens=True: non-special added tokens are matched (they are ordinary
  text to the model that ships them), special ones are not;
- encode(t, allowed_special="all") matches the special ones too;
- encode_with_template(t) is Hugging Face's default encode(t): the template's tokens
  around the ids.
Padding and truncation are kept to be written back; they change no id here.
"""
import json
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

import numpy as np

from . import encoding, huggingface
from .core import AllowedSpecial, PathArg, load_core
from .encoding import BPETokenizer, _str
from .atomic_writes import write_text, write_texts


def _core_pretokenize(piece: bytes, pattern: str) -> list:
    return load_core().pretokenize(piece, pattern)


class HuggingFaceTokenizer(BPETokenizer):
    """A BPETokenizer with a tokenizer.json's rules (see the module's docstring)."""

    def __init__(self, args: dict, rules: "huggingface.HuggingFaceRules", where: str = "tokenizer.json") -> None:
        # Where the pre-tokenizer is one split pattern, the core splits with it and
        # encodes each run of text between added tokens at its own speed. Else (or where
        # the engine refuses the regex) the Python pipeline splits, and the core's pattern
        # is GPT-4's: the chunks of today's Split regexes are almost always one chunk of it
        # too, and then the core encodes them (see piece_ids).
        shape = rules.split_pattern()
        self._split_in_core, self._prefix_space = False, False
        with huggingface.without_cycle_collector():
            if shape is not None:
                try:
                    super().__init__(**args, pattern=shape[0])
                    self._split_in_core, self._prefix_space = True, shape[1]
                except ValueError:  # a construct the engine does not take: Python's regex splits
                    pass
            if not self._split_in_core:
                super().__init__(**args, pattern="gpt4")
        self._rules = rules
        self._where = where
        self._ranks: dict[tuple[int, int], int] | None = None  # (left id, right id) -> merge number, built when first needed
        ids = self.token_ids
        self._hf_id = (lambda i: ids[i]) if ids is not None else (lambda i: i)
        self._n_made = 256 + len(self.merges)
        self._piece_cache: dict[bytes, list[int]] = {}
        self._whole: dict[bytes, int] | None = None  # bytes -> our id of every byte and merge token, for ignore_merges
        # The model's tokens that no merge makes are special tokens to the core, which
        # holds them as their text in the byte alphabet: their bytes are that text read
        # through the alphabet (where it is not plain ASCII, the two differ).
        self._model_token_bytes: dict[int, bytes] = {}  # the file's id -> bytes, where they differ from the text's
        model_tokens = set(rules.model_tokens)
        for token, i in self.special_ids.items():
            data = huggingface.alphabet_bytes(token) if token in model_tokens else None
            if data is not None and data != token.encode("utf-8"):
                self._model_token_bytes[i] = data

    @classmethod
    def from_document(cls, document: dict, where: str) -> "HuggingFaceTokenizer":
        args, rules = huggingface._read_document(document, where)
        return cls(args, rules, where)

    @property
    def rules(self) -> "huggingface.HuggingFaceRules":
        return self._rules

    # --- encoding ------------------------------------------------------------------

    def piece_ids(self, piece: bytes) -> list:
        """One chunk's ids, by the merges alone (lowest rank first, leftmost first), or the
        chunk's own token when ignore_merges is set and the vocabulary has it."""
        cached = self._piece_cache.get(piece)
        if cached is not None:
            return cached
        if self._rules.ignore_merges:
            if self._whole is None:
                self._whole = {self.decode_single_token_bytes(self._hf_id(i)): i for i in range(self._n_made)}
                model_tokens = set(self._rules.model_tokens)
                for j, token in enumerate(self.special_tokens):
                    data = huggingface.alphabet_bytes(token) if token in model_tokens else None
                    if data is not None:  # a chunk is written in the alphabet: only such a token can be one
                        self._whole[data] = self._n_made + j
            whole = self._whole.get(piece)
            if whole is not None:
                out = [self._hf_id(whole)]
                self._piece_cache[piece] = out
                return out
        if self._rules.pair_ranks is not None:
            out = self._merge_by_pair_ranks(piece)
            if len(self._piece_cache) < 1 << 16:
                self._piece_cache[piece] = out
            return out
        if len(_core_pretokenize(piece, self.pattern)) == 1:  # the core would not cut it: it encodes it alone
            out = self._encoder.encode(piece, (), ())
            if len(self._piece_cache) < 1 << 16:
                self._piece_cache[piece] = out
            return out
        if self._ranks is None:
            self._ranks = {pair: k for k, pair in enumerate(self.merges)}
        symbols, ranks = list(piece), self._ranks
        while len(symbols) > 1:
            best, at = None, -1
            for i in range(len(symbols) - 1):
                r = ranks.get((symbols[i], symbols[i + 1]))
                if r is not None and (best is None or r < best):
                    best, at = r, i
            if best is None:
                break
            symbols[at:at + 2] = [256 + best]
        out = [self._hf_id(s) for s in symbols]
        if len(self._piece_cache) < 1 << 16:
            self._piece_cache[piece] = out
        return out

    def _merge_by_pair_ranks(self, piece: bytes) -> list:
        """Hugging Face's BPE on one chunk when a token has several merges: the adjacent
        pair of lowest rank (leftmost first) becomes the token its merge makes, until no
        pair is a merge."""
        symbols, table = list(piece), self._rules.pair_ranks
        assert table is not None  # this path runs only for files with several merges a token
        while len(symbols) > 1:
            best, at = None, -1
            for i in range(len(symbols) - 1):
                found = table.get((symbols[i], symbols[i + 1]))
                if found is not None and (best is None or found[0] < best[0]):
                    best, at = found, i
            if best is None:
                break
            symbols[at:at + 2] = [best[1]]
        return [self._hf_id(s) for s in symbols]

    def _encode(self, text, allowed) -> list:
        if self._split_in_core:
            return self._encode_split_in_core(_str(text), allowed)
        out = []
        for piece in self._rules.pieces(_str(text), allowed):
            if isinstance(piece, bytes):
                out.extend(self.piece_ids(piece))
            else:
                out.append(piece.id)
        return out

    def _encode_split_in_core(self, text: str, allowed) -> list:
        """The added tokens found in Python, each run of text between them split and
        encoded by the core; with ignore_merges or several merges a token, the core splits
        and each chunk goes through piece_ids."""
        out: list[int] = []
        by_chunk = self._rules.ignore_merges or self._rules.pair_ranks is not None
        for segment in self._rules.segments(text, allowed):
            if not isinstance(segment, str):
                out.append(segment.id)
                continue
            if self._prefix_space and not segment.startswith(" "):
                segment = " " + segment
            if by_chunk:
                for chunk in _core_pretokenize(segment.encode("utf-8"), self.pattern):
                    out.extend(self.piece_ids(chunk))
            else:
                out.extend(self._encoder.encode(segment, (), ()))
        return out

    def _allowed(self, allowed_special, disallowed_special, text):
        specials = {t.content for t in self._rules.added if t.special}
        allowed = specials if allowed_special == "all" else set(allowed_special)
        disallowed = specials - allowed if disallowed_special == "all" else set(disallowed_special)
        for token in disallowed:
            if token in text:
                raise ValueError(f"the text holds the special token {token!r}, which is not allowed: pass "
                                 "allowed_special to encode it as a special token, or disallowed_special=() to "
                                 "encode it as ordinary text")
        return allowed.__contains__

    def encode(self, text: str, *, allowed_special: AllowedSpecial = frozenset(), disallowed_special: AllowedSpecial = "all") -> list[int]:
        text = _str(text)
        return self._encode(text, self._allowed(allowed_special, disallowed_special, text))

    def encode_ordinary(self, text: str) -> list:
        return self._encode(text, lambda token: False)

    def encode_with_template(self, text: str) -> list:
        """Hugging Face's default ids: its encode(text) with add_special_tokens=True, that
        is, special tokens matched and the template's tokens (a start-of-text token, say)
        around them. Without a template, encode(text, allowed_special="all")."""
        ids = self._encode(text, lambda token: True)
        if self._rules.template is None:
            return ids
        before, after = self._rules.template
        return [*before, *ids, *after]

    def encode_batch(self, texts: Sequence[str], *, allowed_special: AllowedSpecial = frozenset(),
                     disallowed_special: AllowedSpecial = "all", threads: int = 0,
                     num_threads=None) -> list:
        return [self.encode(t, allowed_special=allowed_special, disallowed_special=disallowed_special) for t in texts]

    def encode_ordinary_batch(self, texts: Sequence[str], *, threads: int = 0,
                              num_threads: int | None = None) -> list[list[int]]:
        return [self.encode_ordinary(t) for t in texts]

    def count(self, text: str, *, allowed_special: AllowedSpecial = frozenset(), disallowed_special: AllowedSpecial = "all",
              threads: int = 0) -> int:
        return len(self.encode(text, allowed_special=allowed_special, disallowed_special=disallowed_special))

    def count_batch(self, texts: Sequence[str], *, allowed_special: AllowedSpecial = frozenset(),
                    disallowed_special: AllowedSpecial = "all", threads: int = 0) -> np.ndarray:
        """count for each text, through this class's encode (its rules run in Python)."""
        return np.array([len(ids) for ids in self.encode_batch(texts, allowed_special=allowed_special,
                                                                disallowed_special=disallowed_special)],
                        dtype=np.int64)

    def encode_batch_padded(self, texts: Sequence[str], pad_id: int, *args, **kwargs) -> NoReturn:
        """Not for a file with rules of its own: ValueError."""
        raise ValueError("encode_batch_padded is not supported for a tokenizer.json with rules of its own: its "
                         "template and added tokens are applied here in Python, not by the core that pads "
                         "(transformers' tokenizer pads them: padding=True, return_tensors='np')")

    def truncate(self, text: str, max_tokens: int, **kwargs) -> NoReturn:
        """Not for a file with rules of its own: ValueError."""
        raise ValueError("truncate is not supported for a tokenizer.json with rules of its own: NFC moves "
                         "characters, so the tokens' bytes are not a prefix of the text")

    def encode_array(self, text: str, *, allowed_special: AllowedSpecial = frozenset(), disallowed_special: AllowedSpecial = "all",
                     threads: int = 0) -> np.ndarray:
        import numpy as np

        from .core import array_dtype
        return np.asarray(self.encode(text, allowed_special=allowed_special, disallowed_special=disallowed_special),
                          dtype=array_dtype(self.n_vocab))

    def encode_with_offsets(self, text: str, *, allowed_special: AllowedSpecial = frozenset(),
                            disallowed_special: AllowedSpecial = "all") -> tuple[list[int], np.ndarray]:
        raise ValueError("encode_with_offsets is not supported for a tokenizer.json with rules of its own: NFC "
                         "moves characters, and Hugging Face's offsets then follow alignments not reproduced here "
                         "(Hugging Face's tokenizers gives them: encode(text).offsets)")

    # --- decoding: the model's tokens that no merge makes -----------------------------

    def decode_single_token_bytes(self, id: int) -> bytes:
        data = self._model_token_bytes.get(id)
        return data if data is not None else super().decode_single_token_bytes(id)

    def decode_tokens_bytes(self, ids) -> list[bytes]:
        return [self.decode_single_token_bytes(i) for i in ids]

    def decode_bytes(self, ids) -> bytes:
        if self._model_token_bytes and any(i in self._model_token_bytes for i in ids):
            return b"".join(self.decode_tokens_bytes(ids))
        return super().decode_bytes(ids)

    # --- files ---------------------------------------------------------------------

    def state(self) -> dict:
        return {**super().state(), "huggingface": self._rules.document}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, HuggingFaceTokenizer) and self._rules.document == other._rules.document

    def __hash__(self) -> int:
        return hash(json.dumps(self._rules.document["model"].get("merges", [])[:64]))

    def __reduce__(self) -> tuple:
        return (HuggingFaceTokenizer.from_document, (self._rules.document, self._where))

    def save_huggingface(self, path: PathArg) -> Path:
        """Write the tokenizer.json back as it was read: vocabulary, merges, rules,
        template, padding and truncation (a folder: with transformers' two files)."""
        path = Path(path)
        text = json.dumps(self._rules.document, ensure_ascii=False)
        if path.suffix.lower() == ".json":
            write_text(path, text)
            return path
        if path.exists() and not path.is_dir():
            raise ValueError(f"{path} is a file: save_huggingface writes a folder there (or a path ending in "
                             ".json for a single tokenizer.json)")
        specials = [t for t in self._rules.added if t.special]
        config, roles = huggingface.transformers_config([t.content for t in specials],
                                                        {t.content: t.id for t in specials})
        # As huggingface.save_huggingface_folder: all three or none, tokenizer.json last.
        write_texts({path / "tokenizer_config.json": json.dumps(config, indent=2) + "\n",
                     path / "special_tokens_map.json": json.dumps(roles, indent=2) + "\n",
                     path / "tokenizer.json": text})
        return path

    def _refuse(self, what: str) -> NoReturn:
        raise ValueError(f"{what} cannot hold this tokenizer.json's rules (normalizer, pre-tokenizer, added "
                         "tokens, ignore_merges, template): save it with save_huggingface")

    def save(self, path: PathArg) -> NoReturn:
        self._refuse("the .bpe format")

    def save_tiktoken(self, path: PathArg) -> NoReturn:
        self._refuse("a tiktoken file")

    def save_gpt2(self, vocab_path: PathArg, merges_path: PathArg) -> NoReturn:
        self._refuse("GPT-2's vocab.json and merges.txt")

    def __repr__(self) -> str:
        return f"HuggingFaceTokenizer({self._where!r}, n_vocab={self.n_vocab})"


encoding.RULES_TOKENIZER[:] = [HuggingFaceTokenizer]  # BPETokenizer.from_huggingface makes it
