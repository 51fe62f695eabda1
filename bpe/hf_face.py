"""TransformersFace: one of our tokenizers answering the calls of transformers'
PreTrainedTokenizerFast (tok.as_hf()), with the same ids, masks, offsets, shapes and
dtypes as transformers gives for the same tokenizer.json, computed by this engine.

    face = tok.as_hf()
    face.pad_token = face.eos_token
    batch = face(texts, padding=True, truncation=True, max_length=512, return_tensors="np")
    batch["input_ids"], batch["attention_mask"]

transformers itself is never imported: the face works without it, and return_tensors="pt"
imports torch only then. An argument it cannot answer the way transformers would raises,
naming that argument, rather than giving something else.
"""
import operator
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import formats

# transformers' stand-in for "no limit" (its model_max_length when the files name none).
VERY_LARGE_INTEGER = int(1e30)
ROLES = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token")
# Arguments of transformers' __call__ that would change the answer in ways not reproduced
# here; passing one (other than its no-op value) raises, naming it.
REFUSED = {"text_pair": None, "text_target": None, "text_pair_target": None, "stride": 0,
           "is_split_into_words": False, "return_overflowing_tokens": False,
           "return_special_tokens_mask": False, "tokenizer_kwargs": None}


class FaceEncoding(dict):
    """What a TransformersFace call returns, shaped as transformers' BatchEncoding: a dict
    of input_ids, attention_mask (and offset_mapping, token_type_ids, length when asked),
    each also an attribute (batch.input_ids)."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def to(self, device: Any) -> "FaceEncoding":
        """Each torch tensor moved to device (as BatchEncoding.to); other values as they are."""
        return FaceEncoding({k: v.to(device) if hasattr(v, "to") else v for k, v in self.items()})


def _clean_up(text: str) -> str:
    """transformers' clean_up_tokenization: the space an English tokenizer put before
    punctuation and contractions taken out."""
    for a, b in ((" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"),
                 (" 'm", "'m"), (" 's", "'s"), (" 've", "'ve"), (" 're", "'re")):
        text = text.replace(a, b)
    return text


class TransformersFace:
    """A tokenizer (BPETokenizer, or one loaded by from_huggingface) answering as
    transformers' PreTrainedTokenizerFast loaded from the folder save_huggingface writes
    (made by tok.as_hf()). add_special_tokens=True puts the file's template (a BOS, say)
    around each text, and nothing for a tokenizer without one; special-token text in the
    input is matched, as transformers matches it. The special-token roles are those of
    save_huggingface's tokenizer_config.json (<|endoftext|> is bos and eos, <|pad|> is pad),
    and settable: face.pad_token = face.eos_token."""

    model_input_names = ["input_ids", "attention_mask"]

    def __init__(self, tokenizer: Any) -> None:
        """The face of tokenizer; tok.as_hf() is the usual way to make it."""
        from . import huggingface
        from .encoding import BPETokenizer
        if not isinstance(tokenizer, BPETokenizer):
            raise TypeError(f"TransformersFace needs a BPETokenizer, not {type(tokenizer).__name__}")
        self.tokenizer = tokenizer
        rules = tokenizer.rules
        if rules is not None:  # a tokenizer.json with rules of its own
            specials = {t["content"]: t["id"] for t in (rules["added_tokens"] or []) if t["special"]}
            self._template = rules["template"] or ((), ())
        else:
            specials = tokenizer.special_ids
            self._template = ((), ())
        self._special = specials
        _, roles = huggingface.transformers_config(list(specials), specials)
        self._roles: dict[str, str | None] = {role: roles.get(role) for role in ROLES}
        self.padding_side = "right"
        self.truncation_side = "right"
        self.model_max_length = VERY_LARGE_INTEGER
        self.clean_up_tokenization_spaces = False
        # The engine's threads for a batch, as `threads` everywhere in bpe (0: as many as the
        # texts' bytes pay for); transformers has no such knob, so it is an attribute.
        self.threads = 0
        self._vocab: dict[str, int] | None = None
        self._tokens: dict[int, str] | None = None

    # --- special tokens -------------------------------------------------------------

    def __getattr__(self, name: str) -> Any:
        roles = self.__dict__.get("_roles")
        if roles is not None:
            if name in roles:
                return roles[name]
            if name.endswith("_id") and name[:-3] in roles:
                token = roles[name[:-3]]
                return None if token is None else self.convert_tokens_to_ids(token)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        roles = self.__dict__.get("_roles")
        if roles is not None and name in roles:
            if value is not None and not isinstance(value, str):
                value = str(value)
            roles[name] = value
        elif roles is not None and name.endswith("_id") and name[:-3] in roles:
            roles[name[:-3]] = None if value is None else self.convert_ids_to_tokens(_int(value, name))
        else:
            object.__setattr__(self, name, value)

    # The vocabulary's two dicts are left out of a pickle and rebuilt on demand: datasets.map
    # fingerprints the mapped function by pickling what it holds, with a pickler written in
    # Python, on every call; tens of thousands of entries would cost more than the map's
    # encoding, and a fingerprint that changed once they were built would miss its cache.
    CACHES = ("_vocab", "_tokens")

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k not in self.CACHES}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.__dict__.update(dict.fromkeys(self.CACHES))

    @property
    def all_special_tokens(self) -> list[str]:
        """The tokens of the roles (bos, eos, pad...), each once, as transformers lists them
        (the file's other special tokens are not among them, though decode skips them too)."""
        return list(dict.fromkeys(t for t in self._roles.values() if t is not None))

    @property
    def all_special_ids(self) -> list[int]:
        """The ids of all_special_tokens, in their order."""
        return [self.convert_tokens_to_ids(t) for t in self.all_special_tokens]

    @property
    def special_tokens_map(self) -> dict[str, str]:
        """{role: token} for the roles that have one."""
        return {role: t for role, t in self._roles.items() if t is not None}

    # --- vocabulary -----------------------------------------------------------------

    def get_vocab(self) -> dict[str, int]:
        """{token: id}, tokens spelt as Hugging Face's files spell them (a byte-level
        token's bytes in GPT-2's printable alphabet: "Ġthe"; special tokens as their text)."""
        return dict(self._vocabulary())

    def _vocabulary(self) -> dict[str, int]:
        """get_vocab's dict itself, built once (callers must not change it)."""
        if self._vocab is None:
            tok, alphabet = self.tokenizer, formats.byte_alphabet()
            n_made = 256 + len(tok.merges)
            ids = tok.token_ids or range(n_made + len(tok.special_tokens))
            special_by_id = {i: t for t, i in tok.special_ids.items()}
            # Added tokens by their text, as transformers names them ("café", not its bytes
            # in the byte alphabet).
            special_by_id.update((t["id"], t["content"]) for t in (tok.rules or {}).get("added_tokens") or [])
            vocab: dict[str, int] = {}
            for i in ids:
                name = special_by_id.get(i)
                if name is None:
                    name = "".join(alphabet[b] for b in tok.decode_single_token_bytes(i))
                vocab.setdefault(name, i)
            for token, i in self._special.items():
                vocab[token] = i
            self._vocab = vocab
            self._tokens = {i: t for t, i in vocab.items()}
        return self._vocab

    def __len__(self) -> int:
        """The number of tokens, added ones included."""
        return len(self._vocabulary())

    @property
    def vocab_size(self) -> int:
        """The number of tokens of the model: the tokenizer.json's model vocabulary, which
        save_huggingface writes every token into, added ones included."""
        return len(self)

    def convert_ids_to_tokens(self, ids: Any, skip_special_tokens: bool = False) -> Any:
        """The token (Hugging Face's spelling) of an id, or the list of a list of ids."""
        self._vocabulary()
        assert self._tokens is not None
        if hasattr(ids, "__index__") and not isinstance(ids, (bool, np.bool_)):
            return self._tokens.get(operator.index(ids))
        ids = _id_list(ids)
        skip = set(self._special.values()) if skip_special_tokens else ()
        return [self._tokens.get(i) for i in ids if i not in skip]

    def convert_tokens_to_ids(self, tokens: Any) -> Any:
        """The id of a token (Hugging Face's spelling), or the list of a list of tokens;
        None for a token not in the vocabulary."""
        vocab = self._vocabulary()
        if isinstance(tokens, str):
            return vocab.get(tokens)
        return [vocab.get(t) for t in tokens]

    # --- encoding -------------------------------------------------------------------

    def _text_ids(self, texts: list[str]) -> list[list[int]]:
        # Special-token text is matched, as transformers matches its special added tokens.
        return self.tokenizer.encode_batch(texts, allowed_special="all", disallowed_special=(), threads=self.threads)

    def encode(self, text: str, add_special_tokens: bool = True, padding: Any = False, truncation: Any = None,
               max_length: int | None = None, return_tensors: str | None = None, **kwargs: Any) -> Any:
        """The ids of one text, as transformers' encode: __call__'s input_ids."""
        if not isinstance(text, str):
            raise TypeError(f"encode takes one str here, not {type(text).__name__} (text_pair and "
                            "pre-split words are not supported)")
        return self(text, add_special_tokens=add_special_tokens, padding=padding, truncation=truncation,
                    max_length=max_length, return_tensors=return_tensors, **kwargs)["input_ids"]

    def __call__(self, text: str | Sequence[str], add_special_tokens: bool = True, padding: Any = False,
                 truncation: Any = None, max_length: int | None = None, pad_to_multiple_of: int | None = None,
                 padding_side: str | None = None, return_tensors: str | None = None,
                 return_token_type_ids: bool | None = None, return_attention_mask: bool | None = None,
                 return_offsets_mapping: bool = False, return_length: bool = False, verbose: bool = True,
                 **kwargs: Any) -> FaceEncoding:
        """Encode a str or a list of str as transformers' tokenizer(text, ...) does: a
        FaceEncoding of input_ids and attention_mask (lists, or int64 arrays or tensors with
        return_tensors "np" or "pt"); padding True/"longest" or "max_length",
        truncation True/"longest_first"/"only_first", max_length, pad_to_multiple_of,
        padding_side, return_offsets_mapping (Hugging Face's offsets), return_token_type_ids,
        return_length. text_pair, stride, is_split_into_words, return_overflowing_tokens and
        return_special_tokens_mask raise ValueError, as does any other argument."""
        for name, value in kwargs.items():
            if name not in REFUSED:
                raise TypeError(f"TransformersFace got an argument it does not know: {name!r}")
            if value != REFUSED[name] and not (name == "tokenizer_kwargs" and not value):
                raise ValueError(f"{name} is not supported by this face of the tokenizer (use transformers' own "
                                 "tokenizer, from the folder save_huggingface writes)")
        single = isinstance(text, str)
        texts: list[str]
        if isinstance(text, str):
            texts = [text]
        elif isinstance(text, (list, tuple)) and (not text or isinstance(text[0], str)):
            # The first is looked at here; the engine names any later text that is not a str.
            texts = list(text)
        else:
            raise TypeError("text must be a str or a list of str (pairs and pre-split words are not supported)")
        pad, width_cap, truncate = self._strategies(padding, truncation, max_length, pad_to_multiple_of)
        side = self.padding_side if padding_side is None else padding_side
        if side not in ("right", "left"):
            raise ValueError(f"padding_side must be 'right' or 'left', got {side!r}")
        if self.truncation_side not in ("right", "left"):
            raise ValueError(f"truncation_side must be 'right' or 'left', got {self.truncation_side!r}")
        if return_tensors not in (None, "np", "pt"):
            raise ValueError(f"return_tensors must be None, 'np' or 'pt', got {return_tensors!r}")
        pad_id = 0  # read only where rows are padded; looked up once a call, not once a row
        if pad is not None:
            pad_id = self.pad_token_id
            if pad_id is None:
                raise ValueError("Asking to pad but the tokenizer does not have a padding token. Please select a "
                                 "token to use as `pad_token` `(tokenizer.pad_token = tokenizer.eos_token e.g.)`")
        least = max(width_cap if pad == "max_length" else 0, pad_to_multiple_of or 0) if pad else 0
        if least * len(texts) * 8 > _memory():  # 8 bytes an id at least: refuse before allocating
            raise ValueError(f"padding {len(texts)} rows to {least} ids each needs more memory than this "
                             "machine has: lower max_length or pad_to_multiple_of")
        before, after = self._template if add_special_tokens else ((), ())
        budget = None
        if truncate:
            budget = width_cap - len(before) - len(after)
            if budget < 0:  # no room for the template's tokens: transformers then cuts nothing
                budget, truncate = None, False
        want_mask = True if return_attention_mask is None else bool(return_attention_mask)
        if return_offsets_mapping:
            rows, offsets = self._with_offsets(texts, before, after, budget)
        else:
            offsets = None
            # Rows longer than max_length stay longer when padding to it without truncation: ragged, in Python.
            fast = pad == "longest" or truncate
            if pad is not None and fast and pad_to_multiple_of is None and not single:
                return self._padded_fast(texts, pad, pad_id, width_cap, truncate, side, before, after,
                                         return_tensors, want_mask, return_token_type_ids, return_length)
            rows = self._fitted(self._text_ids(texts), budget, before, after)
        out = FaceEncoding()
        if pad is None:  # datasets.map's usual call: the rows as they are, nothing to pad
            out["input_ids"] = rows
            if return_token_type_ids:
                out["token_type_ids"] = [[0] * len(r) for r in rows]
            if want_mask:
                out["attention_mask"] = [[1] * len(r) for r in rows]
            if offsets is not None:
                out["offset_mapping"] = offsets
            if return_length:
                out["length"] = [len(r) for r in rows]
            return _finish(out, single, return_tensors)
        lengths = [len(r) for r in rows]
        width = max(lengths, default=0) if pad == "longest" else width_cap
        if pad_to_multiple_of and width % pad_to_multiple_of:
            width += pad_to_multiple_of - width % pad_to_multiple_of

        def padded(values: list, filler: Any) -> list:
            if len(values) >= width:
                return values
            fill = [filler] * (width - len(values))
            return fill + values if side == "left" else values + fill
        out["input_ids"] = [padded(r, pad_id) for r in rows]
        if return_token_type_ids:
            out["token_type_ids"] = [padded([0] * n, 0) for n in lengths]
        if want_mask:
            out["attention_mask"] = [padded([1] * n, 0) for n in lengths]
        if offsets is not None:
            out["offset_mapping"] = [padded(o, (0, 0)) for o in offsets]
        if return_length:
            out["length"] = [len(r) for r in out["input_ids"]]
        return _finish(out, single, return_tensors)

    def _strategies(self, padding: Any, truncation: Any, max_length: Any,
                    pad_to_multiple_of: Any) -> tuple[str | None, int, bool]:
        """(padding: None, "longest" or "max_length"; the length to pad or cut to; whether
        to truncate), as transformers reads its arguments."""
        if max_length is not None:
            max_length = _int(max_length, "max_length")
            if max_length < 0:
                raise ValueError(f"max_length must be 0 or more, got {max_length}")
        if pad_to_multiple_of is not None and _int(pad_to_multiple_of, "pad_to_multiple_of") <= 0:
            raise ValueError(f"pad_to_multiple_of must be more than 0, got {pad_to_multiple_of!r}")
        if max_length is not None and padding is False and truncation is None:
            truncation = "longest_first"  # a max_length alone cuts, as transformers has long done
        if padding is True or padding == "longest":
            pad: str | None = "longest"
        elif padding is False or padding is None or padding == "do_not_pad":
            pad = None
        elif padding == "max_length":
            pad = "max_length"
        else:
            raise ValueError(f"padding must be True, False, 'longest', 'max_length' or 'do_not_pad', got {padding!r}")
        if truncation is True or truncation in ("longest_first", "only_first"):
            truncate = True
        elif truncation is False or truncation is None or truncation == "do_not_truncate":
            truncate = False
        elif truncation == "only_second":
            raise ValueError("truncation='only_second' needs text_pair, which is not supported here")
        else:
            raise ValueError(f"truncation must be True, False, 'longest_first', 'only_first' or 'do_not_truncate', "
                             f"got {truncation!r}")
        cap = max_length
        if cap is None and (pad == "max_length" or truncate):
            cap = self.model_max_length
            if cap >= VERY_LARGE_INTEGER:  # no limit: transformers neither pads to it nor cuts
                if pad == "max_length":
                    pad = None
                truncate = False
        if truncate and pad is not None and pad_to_multiple_of and cap is not None and cap % pad_to_multiple_of:
            raise ValueError(f"Truncation and padding are both activated but truncation length ({cap}) is not a "
                             f"multiple of pad_to_multiple_of ({pad_to_multiple_of}).")
        return pad, cap if cap is not None else 0, truncate

    def _fitted(self, rows: list[list[int]], budget: int | None, before: Sequence[int],
                after: Sequence[int]) -> list[list[int]]:
        """The engine's rows (fresh lists, so cut in place) cut to budget ids from the
        truncation side, with the template's ids around each."""
        if budget is not None:
            if self.truncation_side == "left":
                for ids in rows:
                    if len(ids) > budget:
                        del ids[:len(ids) - budget]
            else:
                for ids in rows:
                    del ids[budget:]
        if before or after:
            return [[*before, *ids, *after] for ids in rows]
        return rows

    def _with_offsets(self, texts: list[str], before: Sequence[int], after: Sequence[int],
                      budget: int | None) -> tuple[list, list]:
        rows, offsets = [], []
        for text in texts:
            try:
                ids, spans = self.tokenizer.encode_with_offsets(text, allowed_special="all", disallowed_special=())
            except ValueError as e:
                raise ValueError(f"return_offsets_mapping is not supported for this tokenizer: {e}") from None
            pairs = [tuple(p) for p in spans.tolist()]
            if budget is not None and len(ids) > budget:
                keep = slice(len(ids) - budget, None) if self.truncation_side == "left" else slice(0, budget)
                ids, pairs = ids[keep], pairs[keep]
            rows.append([*before, *ids, *after])
            offsets.append([(0, 0)] * len(before) + pairs + [(0, 0)] * len(after))
        return rows, offsets

    def _padded_fast(self, texts: list[str], pad: str, pad_id: int, cap: int, truncate: bool, side: str,
                     before: Sequence[int], after: Sequence[int], return_tensors: str | None, want_mask: bool,
                     type_ids: bool | None, want_length: bool) -> FaceEncoding:
        """A padded batch from the core's one call: the matrix and the real lengths."""
        matrix, lengths = self.tokenizer.encode_batch_padded(
            texts, pad_id, max_length=cap if (truncate or pad == "max_length") else None,
            pad_to_max_length=pad == "max_length", truncate=truncate, pad_left=side == "left",
            truncate_left=self.truncation_side == "left", prefix=list(before) or None, suffix=list(after) or None,
            threads=self.threads, allowed_special="all", disallowed_special=(), dtype=np.int64)
        width = matrix.shape[1]
        if return_tensors is None:  # lists
            out = FaceEncoding(input_ids=matrix.tolist())
            if type_ids:
                out["token_type_ids"] = [[0] * width for _ in range(len(texts))]
            if want_mask:
                # Each row one slice of a window of width ones beside width zeros: a single
                # allocation a row, where ones and zeros joined would make three.
                if side == "left":
                    window = [0] * width + [1] * width
                    out["attention_mask"] = [window[n:n + width] for n in lengths.tolist()]
                else:
                    window = [1] * width + [0] * width
                    out["attention_mask"] = [window[width - n:2 * width - n] for n in lengths.tolist()]
            if want_length:
                out["length"] = [width] * len(texts)
            return out
        out = FaceEncoding(input_ids=matrix)
        columns = np.arange(width)
        if side == "left":
            columns = columns[::-1]
        if type_ids:
            out["token_type_ids"] = np.zeros_like(matrix)
        if want_mask:
            out["attention_mask"] = (columns[None, :] < lengths[:, None]).astype(np.int64)
        if want_length:
            out["length"] = np.full(len(texts), width, dtype=np.int64)
        return _finish(out, False, return_tensors)

    # --- decoding -------------------------------------------------------------------

    def decode(self, token_ids: Any, skip_special_tokens: bool = False,
               clean_up_tokenization_spaces: bool | None = None, **kwargs: Any) -> str:
        """The text of ids (a list, an array or a tensor), as transformers decodes:
        special tokens as their text unless skip_special_tokens. One difference: a
        non-special added token that is not ASCII ("café") decodes to its text here, where
        transformers' ByteLevel decoder reads it through the byte alphabet ("caf\ufffd")."""
        if kwargs:
            raise TypeError(f"decode got arguments it does not know: {', '.join(map(repr, kwargs))}")
        ids = _id_list(token_ids)
        if skip_special_tokens:
            skip = set(self._special.values())
            ids = [i for i in ids if i not in skip]
        text = self.tokenizer.decode(ids)
        clean = self.clean_up_tokenization_spaces if clean_up_tokenization_spaces is None else clean_up_tokenization_spaces
        return _clean_up(text) if clean else text

    def batch_decode(self, sequences: Any, skip_special_tokens: bool = False,
                     clean_up_tokenization_spaces: bool | None = None, **kwargs: Any) -> list[str]:
        """decode for each row of ids."""
        if hasattr(sequences, "tolist"):
            sequences = sequences.tolist()
        return [self.decode(s, skip_special_tokens, clean_up_tokenization_spaces, **kwargs) for s in sequences]

    def __repr__(self) -> str:
        return f"TransformersFace({self.tokenizer!r})"


def _memory() -> int:
    """The machine's memory in bytes (a large stand-in where the OS does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return 1 << 40


def _int(value: Any, name: str) -> int:
    if isinstance(value, (bool, np.bool_)) or not hasattr(value, "__index__"):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    return operator.index(value)


def _id_list(ids: Any) -> list[int]:
    if hasattr(ids, "tolist"):
        ids = ids.tolist()
    if isinstance(ids, int):
        return [ids]
    return [_int(i, "a token id") for i in ids]


def _is_empty(value: Any) -> bool:
    if len(value) == 0:
        return True
    if not isinstance(value[0], (list, tuple)):
        return False
    return all(_is_empty(v) for v in value)


def _as_numpy(value: Any, dtype: Any = None) -> np.ndarray:
    """An array as transformers makes one: rows of differing lengths as an object array of
    arrays, nothing at all as int64."""
    if isinstance(value, (list, tuple)) and value and isinstance(value[0], (list, tuple, np.ndarray)):
        if len({len(v) for v in value}) > 1 and dtype is None:
            value = _as_numpy([np.asarray(v) for v in value], dtype=object)
    if _is_empty(value) and dtype is None:
        dtype = np.int64
    return np.asarray(value, dtype=dtype)


def _as_torch(value: Any) -> Any:
    import torch
    if isinstance(value, np.ndarray):
        return torch.from_numpy(np.ascontiguousarray(value))
    return torch.tensor(value, dtype=torch.int64 if _is_empty(value) else None)


def _finish(out: FaceEncoding, single: bool, return_tensors: str | None) -> FaceEncoding:
    """Lists as transformers gives them: one text's rows unwrapped, or, with return_tensors,
    arrays or tensors (int64) with a batch axis; rows of differing lengths are an object
    array of rows for "np" and an error for "pt", as in transformers."""
    # One text's length stays a list of one, as transformers leaves it.
    if return_tensors is None:
        if single:
            return FaceEncoding({k: v if k == "length" else v[0] for k, v in out.items()})
        return out
    convert = _as_torch if return_tensors == "pt" else _as_numpy
    tensors = FaceEncoding()
    for key, value in out.items():
        try:
            tensors[key] = convert(value)
        except (ValueError, TypeError, RuntimeError) as e:
            raise ValueError("Unable to create tensor, you should probably activate truncation and/or padding with "
                             "'padding=True' 'truncation=True' to have batched tensors with the same length "
                             f"(`{key}` in this case)") from e
    return tensors
