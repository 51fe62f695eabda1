"""BPETokenizer: byte-level BPE on str, over the compiled core bpe._core.

    from bpe import BPETokenizer
    tok = BPETokenizer.train(stories, vocab_size=8192, special_tokens=["<|endoftext|>"])
    ids = tok.encode("Once upon a time")            # [46, 1011, 263, 367] or so
    tok.decode(ids)                                 # 'Once upon a time'
    tok.save("stories.bpe")                         # one file; BPETokenizer.load gives it back

A tokenizer is four things, and its file and its state() hold exactly these:
- merges: pairs of ids; merge k turns the pair into token 256 + k (ids 0-255 are the
  bytes);
- pattern: the split rule, "default", "gpt2", "gpt4", "qwen2" or "o200k", or a regex
  in the dialect of tiktoken's and Hugging Face's patterns (csrc/pattern.h lists it):
  text is cut into chunks that merges never cross;
- special_tokens: strings such as "<|endoftext|>" that are one token each and never go
  through the merges; they are numbered after the merges, in order (or as given, when
  they come as tiktoken gives them, {token: id});
- token_ids: the id of every token (bytes, merges, specials, in that order), when the
  vocabulary numbers them its own way (GPT-2 and GPT-4 do); None means token i has id i.

A tokenizer read from a Hugging Face tokenizer.json whose rules are more than a split
pattern (NFC, a Sequence of Splits, added tokens with flags, ignore_merges, a template)
has a fifth part, rules: those rules as data (bpe.huggingface's rules dict), which the
engine runs in place of the pattern; its file and state hold them too.

The names and their meanings follow tiktoken where tiktoken has one: encode raises on
special-token text unless it is allowed, encode_ordinary never makes special tokens,
n_vocab is one more than the largest id, eot_token is the id of <|endoftext|>.
"""
import codecs
import json
import operator
import re
import warnings
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from . import formats, huggingface, registry, sentencepiece, sources, tekken
from .core import (AllowedSpecial, Ids, Merges, PathArg, ShortVocabularyWarning, load_core,
                   special_tokens_list)

END_OF_TEXT = "<|endoftext|>"
# Texts for training are handed to the core in batches of about this many bytes: large
# enough that the threads have work, small enough that memory does not follow the corpus.
TRAIN_BATCH_BYTES = 8 << 20


class BPETokenizer:
    """Byte-level BPE: train it, encode and decode with it, save and load it. It never
    changes once made: its four parts are read-only, so equality, pickling and encoding
    always agree."""

    def __init__(self, merges: Merges, pattern: str = "default",
                 special_tokens: Iterable[str] | Mapping[str, int] = (), token_ids: Iterable[int] | None = None,
                 name: str | None = None, rules: dict | None = None) -> None:
        """A tokenizer from its four parts (see the module's docstring): merges, pairs of
        ids where merge k makes token 256 + k; pattern, the split rule; special_tokens, a
        list of str numbered after the merges, or tiktoken's {token: id}; token_ids, the id
        of every token when the numbering is its own (None: token i has id i). name is
        tiktoken's Encoding.name. rules: a tokenizer.json's rules as bpe.huggingface
        reads them (from_huggingface passes them; then the rules' pre-tokenizer splits and
        pattern is left "default"). ValueError or TypeError names what is wrong.

            >>> BPETokenizer([(104, 105)], special_tokens=["<|endoftext|>"]).encode("hi")
            [256]
        """
        core = load_core()
        if name is not None and not isinstance(name, str):
            raise TypeError(f"name must be a str or None, not {type(name).__name__}")
        self._name = name  # tiktoken's Encoding.name: kept in the file, not part of equality
        if isinstance(special_tokens, dict):  # tiktoken's way: {token: id}
            # Counted here, read by the core: anything without a length is made a list once.
            merges = merges if hasattr(merges, "__len__") else list(merges)
            special_tokens, token_ids = _numbered_specials(special_tokens, token_ids, merges)
        # The core checks every part (that each merge could have been learned, the
        # pattern's name, the special tokens, the ids: one for every token, all
        # different, none above bpe.MAX_ID) and gives them back as ints.
        if rules is not None:
            rules = _plain_rules(rules)
            # With rules, special_tokens are the tokens (numbered by token_ids) that no merge
            # makes: the added tokens' and the like. Which are special, matched only where
            # allowed, the rules' added tokens say: that is what special_tokens reports.
            special_tokens = special_tokens_list(special_tokens)
            # The core checks the rules, naming what is wrong; a pre-tokenizer in them splits,
            # else the pattern does (the model's options alone).
            splits = rules["pre_tokenizer"] is not None
            self._encoder = core.Encoder(merges, pattern="default" if splits else pattern,
                                         special_tokens=special_tokens, token_ids=token_ids, rules=rules)
            huggingface.check_byte_fallback(rules, self._encoder.token_ids)
            if splits:
                made = huggingface.rules_pattern(rules)
                if pattern not in ("default", made):
                    raise ValueError(f"pattern is {pattern!r}, but the rules' pre-tokenizer splits ({made!r}): "
                                     "leave pattern out")
                pattern = made
            else:
                pattern = self._encoder.pattern
        else:
            self._encoder = core.Encoder(merges, pattern=pattern, special_tokens=special_tokens, token_ids=token_ids)
        self._rules = rules
        # Tuples, behind read-only properties: the encoder is built from them once, so a
        # change afterwards would make equality and pickling (which read them) disagree
        # with encoding (which does not). token_ids is None when token i is id i, so
        # that equal tokenizers have equal states.
        self._merges = tuple(self._encoder.merges)
        self._pattern = self._encoder.pattern if rules is None else pattern
        self._special_ids = self._encoder.special_tokens  # {special token: id}, in their order
        self._special_tokens = tuple(self._special_ids)
        # The tokens after the merges, which token_ids numbers and the state holds.
        self._numbered_specials = self._special_tokens if rules is None else special_tokens
        self._special_id_set = frozenset(self._special_ids.values())  # a Tekken file has a thousand
        self._token_ids = None if self._encoder.token_ids is None else tuple(self._encoder.token_ids)
        self._ids_by_bytes: dict[bytes, int] | None = None  # built by token_to_id when first asked
        self._piece_names: dict[str, int] | None = None  # the same, of a tokenizer that merges from characters
        self._piece_names_of_ids: dict[int, str] | None = None  # and the other way round
        # Every added token of the rules, special or not, by its text: Hugging Face's
        # token_to_id looks there before the vocabulary.
        self._added_ids = {t["content"]: t["id"] for t in (rules or {}).get("added_tokens") or []}

    # --- training ------------------------------------------------------------------

    @classmethod
    def train(cls, texts: str | Iterable[str], vocab_size: int, pattern: str = "default",
              special_tokens: Iterable[str] = (), threads: int = 0,
              progress: bool | None = None, max_memory: int | str | None = None) -> "BPETokenizer":
        """Learn a tokenizer from texts: a str, or any iterable of str (documents, lines,
        a file read a block at a time).

        vocab_size counts everything: the 256 bytes, the merges and the special tokens,
        whose ids follow the merges in the order given. Training stops early, with a
        smaller vocabulary, if the texts run out of pairs to merge.

        The texts are streamed: their chunks are counted a batch at a time, and only
        the distinct chunks are kept, so memory follows the variety of the text, not
        its size. No chunk crosses two texts. The result is the reference's
        (bpe_reference.train) on the same texts, and bpe.train's for a single text.
        threads=0 counts on as many threads as the texts' size pays for. progress: a bar on a terminal
        (None: only when stderr is one).

        max_memory (bytes, or a str such as "2GB" or "512MiB"; None: no budget) bounds
        the whole run's memory as the counter estimates it (bpe.ChunkCounter): past it,
        the rarest chunks are dropped, with a bpe.PruningWarning that says how many and
        below what count, and the merges may then differ from exact training. Training
        that runs out of pairs before vocab_size says so with a bpe.ShortVocabularyWarning.
        """
        core = load_core()
        counter = core.ChunkCounter(pattern, special_tokens, max_memory=_as_memory(max_memory))
        special_tokens = tuple(counter.special_tokens)
        num_merges = core.num_merges_for(vocab_size, len(special_tokens))
        from tqdm import tqdm

        disable = None if progress is None else not progress
        with tqdm(desc="counting chunks", unit="B", unit_scale=True, disable=disable, leave=False) as bar:
            for batch in _batches(texts, _batch_size(max_memory)):
                counter.add(batch, threads=threads)
                bar.update(len(batch) if isinstance(batch, str) else sum(map(len, batch)))
        return cls._train_counted(counter, num_merges, vocab_size, pattern, special_tokens, progress)

    @classmethod
    def train_from_counts(cls, counts: Any, vocab_size: int, pattern: str | None = None,
                          special_tokens: Iterable[str] | None = None,
                          progress: bool | None = None, max_memory: int | str | None = None) -> "BPETokenizer":
        """Learn a tokenizer from chunk counts made elsewhere: a bpe.ChunkCounter (whose
        counts training uses up), or its counts() in their compact form, (chunks,
        offsets, counts). Counts of parts of a corpus merged together (ChunkCounter.merge)
        give the merges of training on the whole (see docs/scale-out.md).

        pattern and special_tokens are a counter's own when not given, and must be its
        own when given; for the compact form, which does not say, they default to
        "default" and none, and must be those the counts were made with. max_memory, for
        the compact form, is the budget the counts are taken in under (a counter keeps
        its own). vocab_size and progress are as for train.
        """
        core = load_core()
        if isinstance(counts, core.ChunkCounter):
            counter = counts
            if pattern is not None and pattern != counter.pattern:
                raise ValueError(f"pattern is {pattern!r}, but the counts were made with {counter.pattern!r}")
            given = None if special_tokens is None else special_tokens_list(special_tokens)
            if given is not None and sorted(given) != sorted(counter.special_tokens):
                raise ValueError(f"special_tokens are {list(given)!r}, but the counts were cut at "
                                 f"{counter.special_tokens!r}")
            special_tokens = tuple(counter.special_tokens) if given is None else given  # numbered as given
        elif isinstance(counts, tuple) and len(counts) == 3:
            counter = core.ChunkCounter("default" if pattern is None else pattern, special_tokens,
                                        max_memory=_as_memory(max_memory))
            counter.add_counts(*counts)
            special_tokens = tuple(counter.special_tokens)
        else:
            raise TypeError("counts must be a bpe.ChunkCounter or its counts() as (chunks, offsets, counts), not "
                            f"{type(counts).__name__}")
        pattern = counter.pattern
        num_merges = core.num_merges_for(vocab_size, len(special_tokens))
        return cls._train_counted(counter, num_merges, vocab_size, pattern, special_tokens, progress)

    @classmethod
    def _train_counted(cls, counter, num_merges, vocab_size, pattern, special_tokens, progress):
        from tqdm import tqdm

        disable = None if progress is None else not progress
        with tqdm(desc="merging", total=num_merges, unit=" merges", disable=disable, leave=False) as bar:
            merges = counter.train(num_merges, progress=lambda done: bar.update(done - bar.n))
        tok = cls(merges, pattern=pattern, special_tokens=special_tokens)
        if len(merges) < num_merges:
            # The core stops only when no pair is left: every chunk is one token by then.
            # Under a budget, the pairs may have run out because pruning took the rare
            # chunks, and their pairs, away: then the budget is what to raise.
            dropped, threshold = counter.pruned
            warnings.warn(ShortVocabularyWarning(tok.n_vocab, vocab_size, len(merges), num_merges, dropped, threshold,
                                                 counter.max_memory), stacklevel=3)
        return tok

    # --- the vocabulary ------------------------------------------------------------

    @property
    def merges(self) -> tuple[tuple[int, int], ...]:
        """The merges, (a, b) pairs of ids: merge k makes token 256 + k."""
        return self._merges

    @property
    def name(self) -> str | None:
        """The name it was given (tiktoken's Encoding.name), or None. Kept in its file;
        not part of equality."""
        return self._name

    @property
    def pattern(self) -> str:
        """The split rule: its name ("default", "gpt2", "gpt4", "qwen2" or "o200k"), or the
        regex it was given, when that is not a named rule's text. With rules, what their
        pre-tokenizer is: the name of our pattern its one Split is, else that Split's
        regex (with Oniguruma's meanings, as Hugging Face reads it), else its steps in a
        word, such as "Split, Split, Digits, ByteLevel" (the rules say the rest)."""
        return self._pattern

    @property
    def rules(self) -> dict | None:
        """The tokenizer.json's rules this tokenizer runs (a copy of bpe.huggingface's rules
        dict: normalizer, pre_tokenizer, added_tokens, ignore_merges, ranked_merges,
        unmade_tokens, template, padding, truncation), or None for a tokenizer whose
        split is its pattern alone."""
        return None if self._rules is None else huggingface.rules_as_lists(self._rules)

    @property
    def special_tokens(self) -> tuple[str, ...]:
        """The special tokens, in the order of their ids."""
        return self._special_tokens

    @property
    def token_ids(self) -> tuple[int, ...] | None:
        """The id of every token (bytes, merges, specials) as a tuple, or None when token i
        has id i."""
        return self._token_ids

    @property
    def n_vocab(self) -> int:
        """One more than the largest id: the rows a model's embedding needs. More than
        the number of tokens when the numbering has gaps (GPT-4's has)."""
        return self._encoder.n_vocab

    @property
    def special_ids(self) -> dict[str, int]:
        """{special token: id}, in the order of special_tokens."""
        return dict(self._special_ids)

    @property
    def eot_token(self) -> int | None:
        """The id of <|endoftext|>, or None if this tokenizer has no such token."""
        return self._special_ids.get(END_OF_TEXT)

    def is_special_token(self, id: int) -> bool:
        """Whether id is a special token's."""
        if isinstance(id, (bool, np.bool_)) or not hasattr(id, "__index__"):  # numpy ints too, as everywhere
            raise TypeError(f"a token id must be an int, got {id!r}")
        return operator.index(id) in self._special_id_set

    def token_byte_values(self) -> list[bytes]:
        """The bytes of every token that is not special, sorted, as tiktoken gives them."""
        return sorted(set(formats.token_bytes(self.merges)))

    def decode_single_token_bytes(self, id: int) -> bytes:
        """The bytes of the token with this id (a special token's: its text)."""
        return self._encoder.decode_single_token_bytes(id)

    def decode_tokens_bytes(self, ids: Ids) -> list[bytes]:
        """The bytes of each token of ids, one bytes object per token."""
        return [self._encoder.decode_single_token_bytes(i) for i in ids]

    def id_to_token(self, id: int) -> str:
        """One token as text, for printing: a token that ends in the middle of a
        character shows U+FFFD there. A tokenizer that merges from characters names its
        tokens as sentencepiece and Hugging Face do (the byte tokens "<0x02>")."""
        data = self.decode_single_token_bytes(id)  # checks id
        if self._rules is not None and self._rules.get("char_merges") is not None:
            name = self._piece_names_by_id().get(operator.index(id))
            if name is not None:
                return name
        return data.decode("utf-8", errors="replace")

    def token_to_id(self, token: str | bytes) -> int | None:
        """The id of a token given as its text (str) or its bytes, or None if no token
        is exactly that. A special token's text gives the special token's id, and so does
        an added token's of the rules, special or not."""
        if isinstance(token, (bytes, bytearray)):
            added = next((i for s, i in self._added_ids.items() if s.encode("utf-8") == token), None)
            if added is not None:
                return added
            # A special token's text as bytes names it as its str does.
            special = next((s for s in self._special_ids if s.encode("utf-8") == token), None)
            if special is not None:
                return self._special_ids[special]
        elif isinstance(token, str):
            if token in self._special_ids:
                return self._special_ids[token]
            if token in self._added_ids:
                return self._added_ids[token]
            if self._rules is not None and self._rules.get("char_merges") is not None:
                return self._piece_ids().get(token)
            token = token.encode("utf-8")
        else:
            raise TypeError(f"token must be str or bytes, not {type(token).__name__}")
        if self._rules is not None and self._rules.get("char_merges") is not None:
            # Merging from characters: a piece's bytes are its text's, a byte token's its byte.
            token = bytes(token)
            found = self._piece_ids().get(token.decode("utf-8", "replace"))
            if found is None and len(token) == 1 and (self._rules["char_merges"] or {}).get("byte_fallback"):
                found = (self.token_ids or range(256))[token[0]]
            return found
        if self._ids_by_bytes is None:
            ids = self.token_ids or range(256 + len(self.merges))
            by_bytes: dict[bytes, int] = {}
            rules = self._rules or {}
            if rules.get("char_merges") is not None:
                # A SentencePiece-style model's pieces are its tokens, as plain text: "A" is the
                # piece "A", not the byte piece <0x41>, which holds the same byte.
                for text, i in (rules.get("unmade_tokens") or {}).items():
                    by_bytes.setdefault(text.encode("utf-8"), i)
            for i, data in zip(ids, formats.token_bytes(self.merges)):
                by_bytes.setdefault(data, i)  # two merges can make the same bytes: the first wins
            self._ids_by_bytes = by_bytes
        return self._ids_by_bytes.get(bytes(token))

    def _piece_ids(self) -> dict[str, int]:
        """{name: id} of a tokenizer that merges from characters, as Hugging Face names its
        tokens: the byte tokens <0x00>..<0xFF> (where the model has them), the special
        tokens (the unknown one too) and every piece, by its text."""
        if self._piece_names is None:
            rules = self._rules or {}
            specials = list(self._numbered_specials)
            ids = self.token_ids or range(256 + len(specials))
            names: dict[str, int] = {}
            if (rules.get("char_merges") or {}).get("byte_fallback"):
                names.update((huggingface.BYTE_TOKENS[b], ids[b]) for b in range(256))
            names.update(zip(specials, ids[256:]))
            names.update(rules.get("unmade_tokens") or {})
            self._piece_names = names
        return self._piece_names

    def _piece_names_by_id(self) -> dict[int, str]:
        """_piece_ids turned round: {id: name}."""
        if self._piece_names_of_ids is None:
            self._piece_names_of_ids = {i: name for name, i in self._piece_ids().items()}
        return self._piece_names_of_ids

    # --- encoding ------------------------------------------------------------------

    def encode(self, text: str, *, allowed_special: AllowedSpecial = frozenset(),
               disallowed_special: AllowedSpecial = "all") -> list[int]:
        """The ids of text. As in tiktoken: a special token in the text becomes its id if
        allowed_special ("all", or a set of special tokens) holds it, and raises
        ValueError if disallowed_special ("all": every special that is not allowed)
        does; with both empty, it is ordinary text."""
        return self._encoder.encode(_str(text), allowed_special, disallowed_special)

    def encode_ordinary(self, text: str) -> list[int]:
        """The ids of text, with special-token text encoded as ordinary text: for text
        from a user, who must not be able to type a control token."""
        return self._encoder.encode(_str(text), (), ())

    def encode_batch(self, texts: Sequence[str], *, allowed_special: AllowedSpecial = frozenset(),
                     disallowed_special: AllowedSpecial = "all", threads: int = 0,
                     num_threads: int | None = None) -> list[list[int]]:
        """encode for each text of a list, on `threads` threads (0: as many as their bytes
        together pay for; num_threads is tiktoken's name for it)."""
        return self._encoder.encode_batch(_strs(texts), allowed_special, disallowed_special,
                                          _threads(threads, num_threads))

    def encode_ordinary_batch(self, texts: Sequence[str], *, threads: int = 0,
                              num_threads: int | None = None) -> list[list[int]]:
        """encode_ordinary for each text of a list, on `threads` threads (0: as many as their
        bytes together pay for; num_threads is tiktoken's name for it)."""
        return self._encoder.encode_batch(_strs(texts), (), (), _threads(threads, num_threads))

    def encode_batch_flat(self, texts: Sequence[str], *, allowed_special: AllowedSpecial = frozenset(),
                          disallowed_special: AllowedSpecial = "all", threads: int = 0,
                          num_threads: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """encode_batch, flat: (ids, offsets),
        every text's ids end to end in one numpy array (uint16 when n_vocab is 65,536 or
        less, else uint32) and len(texts) + 1 offsets (int64), text i's ids being
        ids[offsets[i]:offsets[i + 1]]. No Python object per token: for a token file or a
        training loader. On `threads` threads (0: as many as their bytes pay for), each a
        run of consecutive texts; the ids are one thread's."""
        return self._batch_flat("encode_batch", texts, threads, num_threads, allowed_special=allowed_special,
                                disallowed_special=disallowed_special)

    def encode_ordinary_batch_flat(self, texts: Sequence[str], *, threads: int = 0,
                                   num_threads: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """encode_ordinary for each text of a list, flat, as encode_batch_flat gives it."""
        return self._batch_flat("encode_ordinary_batch", texts, threads, num_threads)

    def _batch_flat(self, method: str, texts: Sequence[str], threads: int, num_threads: int | None,
                    **specials: AllowedSpecial) -> tuple[np.ndarray, np.ndarray]:
        """The flat form of batch method `method` (encode_batch or encode_ordinary_batch):
        the core's one call."""
        return self._encoder.encode_batch_flat(_strs(texts), specials.get("allowed_special", ()),
                                               specials.get("disallowed_special", ()), _threads(threads, num_threads))

    def encode_with_offsets(self, text: str, *, allowed_special: AllowedSpecial = frozenset(),
                            disallowed_special: AllowedSpecial = "all") -> tuple[list[int], np.ndarray]:
        """(ids, offsets): encode's ids, and for each token its span in the characters of
        text, row k of offsets (a numpy array of shape (len(ids), 2), int64) being
        (start, end), so text[start:end] is what token k covers. A token that begins or
        ends inside a character (an emoji's first bytes, say) gets that whole character,
        as Hugging Face's offsets do. Computed in the core, in one pass; an array, as a
        list of tuples would cost three Python objects a token (offsets.tolist() makes
        one of lists)."""
        return self._encoder.encode_with_offsets(_str(text), allowed_special, disallowed_special)

    def encode_with_template(self, text: str) -> list[int]:
        """Hugging Face's default ids, its encode(text) (add_special_tokens=True): special
        tokens in the text matched, and the template's ids (a start-of-text token, say)
        around them. Without a template, encode(text, allowed_special="all")."""
        ids = self.encode(text, allowed_special="all")
        template = None if self._rules is None else self._rules.get("template")
        if template is None:
            return ids
        before, after = template
        return [*before, *ids, *after]

    def encode_array(self, text: str, *, allowed_special: AllowedSpecial = frozenset(),
                     disallowed_special: AllowedSpecial = "all",
                     threads: int = 0, dtype: Any = None) -> np.ndarray:
        """As encode, as a numpy array with no Python object per token, on `threads` threads
        (0: as many as its size pays for: bpe._core.threads_for). dtype: None, the default,
        for uint16 when n_vocab is 65,536 or less, else uint32; or an integer type of 16,
        32 or 64 bits that holds every id (numpy.int64 for torch's embeddings), as
        encode_batch_padded takes it."""
        return self._encoder.encode_array(_str(text), allowed_special, disallowed_special, threads, dtype)

    def count(self, text: str, *, allowed_special: AllowedSpecial = frozenset(),
              disallowed_special: AllowedSpecial = "all", threads: int = 0) -> int:
        """len(encode(text)) with the same arguments, without making a list or an array of
        ids: for counting the tokens of large texts. On `threads` threads (0: as many as
        its size pays for)."""
        return self._encoder.count(_str(text), allowed_special, disallowed_special, threads)

    def count_batch(self, texts: Sequence[str], *, allowed_special: AllowedSpecial = frozenset(),
                    disallowed_special: AllowedSpecial = "all", threads: int = 0) -> np.ndarray:
        """count for each text of a list, as a numpy int64 array, on `threads` threads (0: as
        many as their bytes together pay for), with no text's ids kept: for fitting many
        texts to a budget, or a corpus's total (count_batch(texts).sum())."""
        return self._encoder.count_batch(_strs(texts), allowed_special, disallowed_special, threads)

    def encode_batch_padded(self, texts: Sequence[str], pad_id: int, max_length: int | None = None,
                            pad_to_max_length: bool = False, truncate: bool = False, pad_left: bool = False,
                            truncate_left: bool = False, prefix: Sequence[int] | None = None,
                            suffix: Sequence[int] | None = None, threads: int = 0, *,
                            allowed_special: AllowedSpecial = frozenset(), disallowed_special: AllowedSpecial = "all",
                            dtype: Any = None) -> tuple[np.ndarray, np.ndarray]:
        """encode_batch as one padded matrix, for a model's batch: (matrix, lengths), a numpy
        array of len(texts) rows and each row's real length (int64, prefix and suffix
        included). Assembled in the core, on `threads` threads (0: as many as the texts'
        bytes pay for); gigatoken's signature.

        Row i is prefix, text i's ids, suffix (ids such as a BOS and an EOS), then pad_id up
        to the width; pad_left puts the padding first. With truncate, a row keeps at most
        max_length - len(prefix) - len(suffix) of its text's ids: the first, or the last
        with truncate_left; prefix and suffix are kept whole (ValueError if they alone are
        longer than max_length). The width is max_length with pad_to_max_length (ValueError
        if a row is longer and truncate is off), else the longest row's length; without
        truncate or pad_to_max_length, max_length changes nothing. pad_id and the ids of
        prefix and suffix may be any id up to bpe.MAX_ID, past n_vocab too. The matrix is
        uint16 when every id, pad_id, prefix and suffix fit, else uint32, unless dtype (an
        integer numpy dtype of 16, 32 or 64 bits that holds them; np.int64 for torch's
        embeddings) says otherwise. Special tokens are as for encode_batch.

            >>> BPETokenizer([(104, 105)]).encode_batch_padded(["hi", "hi hi"], pad_id=0)[0].tolist()
            [[256, 0, 0], [256, 32, 256]]
        """
        return self._encoder.encode_batch_padded(_strs(texts), pad_id, max_length, pad_to_max_length, truncate,
                                                 pad_left, truncate_left, prefix, suffix, allowed_special,
                                                 disallowed_special, threads, dtype)

    def truncate(self, text: str, max_tokens: int, *, from_end: bool = False,
                 allowed_special: AllowedSpecial = frozenset(), disallowed_special: AllowedSpecial = "all") -> str:
        """text cut to at most max_tokens tokens at a token boundary: the longest prefix
        of text (with from_end, suffix) that the first (last) max_tokens tokens of
        encode(text) cover. A token boundary inside a character (an emoji, a CJK
        character split between two tokens) drops that partial character, so the result
        is always a prefix (suffix) of text. For ASCII text it is decode(encode(text)[:max_tokens]).

        Encoding the result again can cut it into other tokens than the ones it came from
        (the split rule sees where it now ends); should that give more than max_tokens,
        it is cut again, shorter, until it does not: len(encode(result)) <= max_tokens
        always holds, with the same allowed_special and disallowed_special."""
        text = _str(text)
        if isinstance(max_tokens, (bool, np.bool_)) or not hasattr(max_tokens, "__index__"):
            raise TypeError(f"max_tokens must be an int, not {type(max_tokens).__name__}")
        budget = operator.index(max_tokens)
        if budget < 0:
            raise ValueError(f"max_tokens must be 0 or more, got {max_tokens!r}")
        if not isinstance(from_end, (bool, np.bool_)):
            raise TypeError(f"from_end must be True or False, not {type(from_end).__name__}")
        ids: Any  # a list with offsets, else an array
        if self._rules is not None:
            # The rules may change the text (NFC) or drop some of it (a Split that removes):
            # the cut is where the tokens' offsets in the text say.
            ids, offsets = self.encode_with_offsets(text, allowed_special=allowed_special,
                                                    disallowed_special=disallowed_special)
        else:
            ids, offsets = self.encode_array(text, allowed_special=allowed_special,
                                             disallowed_special=disallowed_special), None
        if len(ids) <= budget:
            return text
        keep = budget
        while True:
            if offsets is not None:
                if from_end:
                    cut = text[int(offsets[len(ids) - keep][0]):] if keep else ""
                else:
                    cut = text[:int(offsets[keep - 1][1])] if keep else ""
            else:
                part = ids[len(ids) - keep:] if from_end else ids[:keep]
                # The text's own UTF-8, a prefix (suffix) of it: the only bytes that are not
                # whole characters are the cut character's, which "ignore" drops.
                cut = self.decode_bytes(part).decode("utf-8", errors="ignore")
            excess = self.count(cut, allowed_special=allowed_special, disallowed_special=disallowed_special) - budget
            if excess <= 0:
                return cut
            keep = max(0, keep - excess)

    # --- decoding ------------------------------------------------------------------

    def decode_bytes(self, ids: Ids) -> bytes:
        """The bytes of ids (a list of ints or a numpy array), special tokens as their text."""
        return self._encoder.decode_bytes(ids)

    def decode(self, ids: Ids, errors: str = "replace") -> str:
        """The text of ids: all the bytes joined first, then UTF-8 (a token can end in
        the middle of a character, which the next one completes). Bytes that are not
        UTF-8 become U+FFFD, unless errors says otherwise (as for bytes.decode)."""
        return self.decode_bytes(ids).decode("utf-8", errors=errors)

    def decode_batch(self, batch: Iterable[Ids], errors: str = "replace", *,
                     num_threads: int | None = None) -> list[str]:
        """decode for each list of ids. num_threads is taken for tiktoken's sake; decoding
        runs on this thread, since joining bytes costs less than handing them to others."""
        _threads(0, num_threads)
        return [self.decode(ids, errors) for ids in batch]

    def decode_bytes_batch(self, batch: Iterable[Ids], *, num_threads: int | None = None) -> list[bytes]:
        """decode_bytes for each list of ids (num_threads: as for decode_batch)."""
        _threads(0, num_threads)
        return [self.decode_bytes(ids) for ids in batch]

    def decode_with_offsets(self, ids: Ids) -> tuple[str, list[int]]:
        """(text, offsets), as tiktoken gives them: offsets[k] is the character of text
        where token k begins, or, for a token that begins inside a character, where
        that character begins. As in tiktoken, the bytes must be UTF-8
        (UnicodeDecodeError, a ValueError, otherwise). Rules with a decoder (a
        SentencePiece-style model's) give decode's text, each token's offset where its own
        text begins there."""
        if self._rules is not None and self._rules.get("decoder") is not None:
            # The streaming decoder gives each token's text as decode gives it; a token it
            # holds back (a byte of a character not yet whole, the text's start not yet
            # out) begins where the first token held back does.
            stream, parts, offsets, chars, held_from = StreamDecoder(self, "strict"), [], [], 0, 0
            for id in ids:
                if not stream._pending:
                    held_from = chars
                offsets.append(held_from)
                parts.append(stream.add(id))
                chars += len(parts[-1])
            parts.append(stream.flush())
            return "".join(parts), offsets
        tokens = self.decode_tokens_bytes(ids)
        text = b"".join(tokens).decode("utf-8")
        offsets, chars = [], 0
        for data in tokens:
            continuation = sum(0x80 <= b < 0xC0 for b in data)  # bytes inside a character, not its first
            offsets.append(max(0, chars - (0x80 <= data[0] < 0xC0)))
            chars += len(data) - continuation
        return text, offsets

    def decoder(self, errors: str = "replace") -> "StreamDecoder":
        """A streaming decoder: give it ids one at a time, and it gives back the text as
        soon as the bytes so far make whole characters (see StreamDecoder)."""
        return StreamDecoder(self, errors)

    # --- files, states, pickling (the file format is bpe/formats.py's) ----------------

    def state(self) -> dict:
        """The tokenizer as plain data (str, int, list, dict and None): what its file
        holds, and what a checkpoint embeds. BPETokenizer.from_state gives it back.
        "name" is there only when the tokenizer has one (files without it load as
        before; version 1 of the format allows it)."""
        return formats.bpe_state(self.merges, self.pattern, self._numbered_specials, self.token_ids, self.name,
                                 self.rules)

    @classmethod
    def from_state(cls, state: Mapping[str, Any]) -> "BPETokenizer":
        """The tokenizer that state() described, checked; ValueError says what is wrong.
        Also reads the states of checkpoints written before the file format existed."""
        try:
            return cls(**formats.bpe_arguments(state))
        except TypeError as e:
            raise ValueError(str(e)) from None

    def save(self, path: PathArg) -> Path:
        """Write the tokenizer to one file at path, or to path/tokenizer.bpe when path is
        a folder (or ends with a slash); returns the file's path. The file is JSON,
        versioned, and holds everything encoding needs; a crash while writing leaves
        the old file or the new one, never half of one."""
        return formats.save_bpe(path, self.state())

    @classmethod
    def load(cls, path: PathArg, pattern: str | None = None) -> "BPETokenizer":
        """A tokenizer that save() wrote (path may be the folder that holds it). Also
        reads the merges.txt of earlier versions of this project, given the split
        pattern it was trained with (pattern="default" for data.py's). ValueError names
        the file and what is wrong with it."""
        return cls._from_file(formats.bpe_path(path), formats.load_bpe, pattern=pattern)

    def __reduce__(self) -> tuple[Any, tuple[bytes]]:
        # Pickled as its file's JSON, one bytes object, so a tokenizer crosses into worker
        # processes (multiprocessing, datasets.map(num_proc=N)) and the compiled encoder is
        # rebuilt there. datasets hashes a mapped function's objects with a pickler written
        # in Python, for which a list of merges is slow and one bytes object is not.
        return _from_json, (json.dumps(self.state()).encode(),)

    def __eq__(self, other: object) -> bool:
        # The name is a label, as in tiktoken: two tokenizers that give the same ids are equal.
        return isinstance(other, BPETokenizer) and {**self.state(), "name": None} == {**other.state(), "name": None}

    def __hash__(self) -> int:
        return hash((self.pattern, self.special_tokens, len(self.merges), self._rules is not None))

    def __repr__(self) -> str:
        specials = list(self.special_tokens[:8]) + ([f"... {len(self.special_tokens) - 8} more"]
                                                    if len(self.special_tokens) > 8 else [])
        return (f"BPETokenizer(pattern={self.pattern!r}, merges={len(self.merges)}, "
                f"special_tokens={specials!r}, n_vocab={self.n_vocab})")

    # --- other libraries' files ------------------------------------------------------

    @classmethod
    def from_tiktoken(cls, path: PathArg, pattern: str | None = None,
                      special_ids: Mapping[str, int] | None = None) -> "BPETokenizer":
        """A tiktoken ranks file (GPT-4's cl100k_base.tiktoken, say). The file holds neither
        the split pattern nor the special tokens: by default they are those of the OpenAI
        encoding the file is named for (cl100k_base.tiktoken, o200k_base.tiktoken; see
        bpe.registry), else GPT-4's pattern and no special tokens. Pass them to choose:
        special_ids as {token: id}."""
        return cls._from_file(path, formats.load_tiktoken, pattern=pattern, special_ids=special_ids)

    @classmethod
    def from_gpt2(cls, vocab_path: PathArg, merges_path: PathArg, pattern: str = "gpt2",
                  special_tokens: Iterable[str] | None = None) -> "BPETokenizer":
        """GPT-2 style vocab.json and merges.txt (GPT-2's own, or another model's). The
        files do not mark special tokens: name them (default: <|endoftext|>, if the
        vocabulary has it); any other token that no merge makes is refused."""
        return cls._from_file(vocab_path, formats.load_gpt2, merges_path, pattern=pattern,
                              special_tokens=special_tokens)

    @classmethod
    def from_huggingface(cls, path: PathArg) -> "BPETokenizer":
        """A Hugging Face tokenizer.json of a byte-level BPE, or the folder that holds it,
        giving Hugging Face's ids. One whose rules are a split pattern of ours and special
        tokens (GPT-2's, or what save_huggingface wrote) has that pattern; any other (a
        Sequence of Split and Digits, NFC, added tokens with flags, ignore_merges, a
        template) keeps its rules as data (the rules property), which the engine runs:
        encode_ordinary is Hugging Face's encode(t, add_special_tokens=False) with
        encode_special_tokens=True (added tokens that are not special are still found),
        encode(t, allowed_special="all") matches the special ones too, and
        encode_with_template(t) is Hugging Face's default encode(t)."""
        given, path = path, Path(path)
        if not path.exists():
            # "Qwen/Qwen2.5-7B" reads like a path; say what is taken, and how to get the file
            hub = (isinstance(given, str) and given.count("/") == 1 and not given.endswith(".json")
                   and not given.startswith((".", "/", "~")))
            raise FileNotFoundError(
                f"{given!r} is not a local file or folder: from_huggingface takes a local tokenizer.json or the "
                f'folder that holds it, and downloads nothing; huggingface_hub.hf_hub_download("{given}", '
                '"tokenizer.json") fetches a model\'s file' if hub else f"no such file or folder: {path}")
        if path.is_dir():
            if not (path / "tokenizer.json").is_file():
                raise ValueError(f"{path} is a folder with no tokenizer.json in it: give the folder that "
                                 "save_huggingface (or transformers' save_pretrained) wrote, or the file itself")
            path = path / "tokenizer.json"
        try:
            with huggingface.without_cycle_collector():
                args = huggingface.read_huggingface(path)
                args["name"] = formats.name_for_file(path)
                return cls(**args)
        except (ValueError, TypeError) as e:
            message = str(e)
            raise ValueError(message if str(path) in message else f"{path}: {message}") from None

    @classmethod
    def from_tekken(cls, path: PathArg) -> "BPETokenizer":
        """Mistral's Tekken file (tekken.json), or the folder that holds it, giving
        mistral-common's ids: its special tokens are ids 0 to
        default_num_special_tokens - 1, and the vocabulary, cut to default_vocab_size,
        follows. mistral-common's Tekkenizer.encode(text, bos=False, eos=False) never
        reads control tokens in text, as encode_ordinary; encode(text,
        allowed_special="all") makes "[INST]" its id, as a chat template lays it out.
        decode gives a special token's text (its SpecialTokenPolicy.KEEP). The image and
        audio sections are passed over: they change no text's ids (bpe.tekken)."""
        path = Path(path)
        if path.is_dir():
            path = path / "tekken.json"
        return cls._from_file(path, tekken.load_tekken)

    @classmethod
    def from_sentencepiece(cls, path: PathArg) -> "BPETokenizer":
        """A SentencePiece BPE model (a .model file: Llama 2's, Mistral 7B's tokenizer.model),
        or the folder that holds tokenizer.model, giving the sentencepiece library's ids;
        neither sentencepiece nor protobuf is needed. encode_ordinary(text) is
        SentencePieceProcessor.encode(text); its control pieces (<s>, </s>) and unknown
        piece are special tokens, matched in text only where allowed (encode(text,
        allowed_special="all")); decode is sentencepiece's (a control piece gives
        nothing, the unknown piece " ⁇ "). Unigram, word and character models, and what else the engine cannot hold,
        are refused by name (bpe.sentencepiece)."""
        path = Path(path)
        if path.is_dir():
            path = path / "tokenizer.model"
        with sentencepiece.collector_paused():
            return cls._from_file(path, sentencepiece.load_sentencepiece)

    @classmethod
    def _from_file(cls, path, loader, *args, **kwargs) -> "BPETokenizer":
        """The tokenizer whose arguments loader reads from the file at path: a mistake in
        the file, or in what it holds, is a ValueError that names the file."""
        try:
            return cls(**loader(path, *args, **kwargs))
        except (ValueError, TypeError) as e:
            message = str(e)
            raise ValueError(message if str(path) in message else f"{path}: {message}") from None

    def save_tiktoken(self, path: PathArg) -> None:
        """Write a tiktoken ranks file. tiktoken wants the pattern and the special tokens
        apart: formats.TIKTOKEN_PATTERNS[tok.pattern] and tok.special_ids. A tokenizer
        with rules is written where they are one of our split patterns and plain special
        tokens (a template, padding and truncation, which change no id of encode, are
        left out); else ValueError names what the file cannot hold."""
        self._refuse_rules("a tiktoken file")
        formats.save_tiktoken(self.merges, path, token_ids=self.token_ids[:256 + len(self.merges)]
                              if self.token_ids else None)

    def save_gpt2(self, vocab_path: PathArg, merges_path: PathArg) -> None:
        """Write GPT-2 style vocab.json and merges.txt. They hold no split pattern:
        from_gpt2 reads them with GPT-2's unless told another. A tokenizer with rules: as
        for save_tiktoken."""
        self._refuse_rules("GPT-2's vocab.json and merges.txt")
        formats.save_gpt2(vocab_path, merges_path, self.merges, special_tokens=list(self._numbered_specials),
                          token_ids=self.token_ids)

    def as_hf(self) -> "Any":
        """This tokenizer answering as transformers' PreTrainedTokenizerFast
        (bpe.hf_face.TransformersFace): face(texts, padding=True, truncation=True,
        max_length=512, return_tensors="pt"), decode, batch_decode, the special-token
        attributes, on this engine, with transformers' outputs for the same tokenizer.json.
        transformers need not be installed."""
        from .hf_face import TransformersFace
        return TransformersFace(self)

    def save_huggingface(self, path: PathArg) -> Path:
        """Write the tokenizer for Hugging Face; returns the path written. A path ending
        in .json gets one tokenizer.json (for the tokenizers library). Any other path is
        a folder that transformers.AutoTokenizer.from_pretrained loads: tokenizer.json,
        tokenizer_config.json and special_tokens_map.json, with <|endoftext|> as the end
        (and start) of text and <|pad|> as padding, where the tokenizer has them."""
        path = Path(path)
        rules = self.rules
        if rules is not None:
            # The rules as Hugging Face writes them; a folder gets transformers' two files,
            # the special added tokens named there.
            return huggingface.save_rules(path, self.merges, list(self._numbered_specials), self.token_ids, rules,
                                          self.pattern)
        save = huggingface.save_huggingface if path.suffix.lower() == ".json" else huggingface.save_huggingface_folder
        save(path, self.merges, pattern=self.pattern, special_tokens=self.special_tokens, token_ids=self.token_ids)
        return path

    def _refuse_rules(self, what: str) -> None:
        """ValueError, in one line, naming what of the rules `what` cannot hold."""
        if self._rules is None:
            return
        rules = self._rules
        why = []
        if rules.get("char_merges") is not None:
            why.append("merging that starts from characters, not bytes (SentencePiece-style)")
        if rules["normalizer"] is not None:
            why.append(f"a normalizer ({huggingface.normalizer_text(rules['normalizer'])})")
        if rules["pre_tokenizer"] is not None and huggingface.named_split(rules) is None:
            why.append("a pre-tokenizer that is not one of our split patterns ("
                       + ", ".join(step["type"] for step in rules["pre_tokenizer"]) + ")")
        if any(not t["special"] or t["lstrip"] or t["rstrip"] or t["single_word"] for t in (rules["added_tokens"] or [])):
            why.append("added tokens that are not special or have flags (lstrip, rstrip, single_word)")
        elif len({t["normalized"] for t in (rules["added_tokens"] or [])}) > 1:
            why.append("added tokens matched before and after normalizing")
        if set(t["content"] for t in (rules["added_tokens"] or [])) != set(self._numbered_specials):
            why.append("added tokens that are vocabulary tokens")
        if rules["ignore_merges"]:
            why.append("ignore_merges")
        if huggingface.ranked_merges(rules):
            why.append("several merges making one token (ranked merges)")
        if rules["unmade_tokens"]:
            why.append("vocabulary tokens that no merge makes")
        if why:
            raise ValueError(f"{what} cannot hold this tokenizer's rules: {'; '.join(why)} (save_huggingface and "
                             "save keep them)")

    # --- other libraries' names for the above: one-line delegations -----------------
    # So that code written for tiktoken's Encoding or Hugging Face's tokenizers runs
    # unchanged; each says whose name it is and what it stands for.

    def __len__(self) -> int:
        """n_vocab (Hugging Face's len(tokenizer)): the size of the embedding a model needs."""
        return self.n_vocab

    @property
    def max_token_value(self) -> int:
        """n_vocab - 1, the largest id (tiktoken's name)."""
        return self.n_vocab - 1

    @property
    def special_tokens_set(self) -> set[str]:
        """set(special_tokens) (tiktoken's name; a new set each time)."""
        return set(self.special_tokens)

    def encode_to_numpy(self, text: str, *, allowed_special: AllowedSpecial = frozenset(),
                        disallowed_special: AllowedSpecial = "all") -> np.ndarray:
        """encode_array as uint32 (tiktoken's name and dtype; encode_array gives the compact
        uint16 where the ids fit)."""
        return self.encode_array(text, allowed_special=allowed_special, disallowed_special=disallowed_special,
                                 dtype=np.uint32)

    def encode_single_token(self, text_or_bytes: str | bytes) -> int:
        """token_to_id, with KeyError where no token is exactly this text or these bytes
        (tiktoken's name and error)."""
        return _found(self.token_to_id(text_or_bytes), text_or_bytes)




# --- OpenAI's published encodings by name (tiktoken's module functions) -------------------

def get_encoding(name: str) -> BPETokenizer:
    """The BPETokenizer of one of OpenAI's published encodings (bpe.registry's table), with
    tiktoken's ids, split rule and special tokens: get_encoding("cl100k_base") is
    tiktoken.get_encoding's."""
    row = registry.published(name)
    data, where = registry.ranks_data(row.name)  # checked; from memory where the cache cannot be used
    args = formats.load_tiktoken(where, pattern=row.rule, special_ids=row.special_tokens, data=data)
    tok = BPETokenizer(**{**args, "name": row.name})
    if tok.n_vocab != row.n_vocab:  # the file passed its SHA-256, so this is the table's mistake
        raise ValueError(f"{where}: {name} has {tok.n_vocab} ids, not the published {row.n_vocab}")
    return tok


def encoding_for_model(model: str) -> BPETokenizer:
    """The BPETokenizer of the encoding a model uses: encoding_for_model("gpt-4") is cl100k_base."""
    return get_encoding(registry.encoding_name_for_model(model))


class StreamDecoder:
    """Text from ids given one at a time, as soon as it is whole UTF-8: for printing a
    story as a model writes it. add(id) returns the text that id completes (often "",
    when the token ends inside a character); flush() returns what is left at the end and
    starts afresh. Each id costs its own bytes only, so a story costs linear time.

    Bytes that are not UTF-8 become U+FFFD exactly where decode(ids) puts them: the
    bytes go through Python's incremental UTF-8 decoder, which gives what bytes.decode
    gives on all of them at once. A real U+FFFD in the text is text like any other.
    """

    def __init__(self, tokenizer: BPETokenizer, errors: str = "replace"):
        """A decoder for tokenizer's ids (tokenizer.decoder() makes one); errors: as for
        bytes.decode.

            >>> d = BPETokenizer([]).decoder()
            >>> [d.add(b) for b in "é".encode()], d.flush()
            (['', 'é'], '')
        """
        self._token_bytes = tokenizer.decode_single_token_bytes
        self._utf8 = codecs.getincrementaldecoder("utf-8")(errors)
        # Rules with a decoder (a char_merges model's): the core decodes, holding back the
        # byte tokens at the end that may begin a character; `start` until some text has
        # come out. Until then the ids decoded stay pending and are decoded again with the
        # next, so that the text's start is stripped as decode(ids) strips it (a piece whose
        # space was stripped counts); the special tokens a decoder drops give nothing and
        # go, so that what stays is at most strip_start pieces. Under strip_each a piece
        # that gave nothing goes too: each piece is stripped on its own, whatever came before.
        rules = tokenizer._rules
        self._core = tokenizer._encoder if rules is not None and rules.get("decoder") is not None else None
        drop = self._core is not None and (rules or {})["decoder"].get("drop_special")
        self._strip_each = self._core is not None and bool((rules or {})["decoder"].get("strip_each"))
        self._dropped = tokenizer._special_id_set if drop else frozenset()
        self._pending: list[int] = []
        self._start = True

    def add(self, id: int) -> str:
        """The text that id completes: "" while a character is still unfinished."""
        if self._core is None:
            return self._utf8.decode(self._token_bytes(id))
        self._pending.append(id)
        data, used = self._core.decode_stream(self._pending, self._start)
        if used and (data or not self._start):
            del self._pending[:used]
            self._start = False
        elif used and self._strip_each:
            del self._pending[:used]
        elif self._start and id in self._dropped:
            self._pending.pop()
        return self._utf8.decode(data)

    def flush(self) -> str:
        """What is left at the end (U+FFFD for an unfinished character, by default), and
        start afresh."""
        rest = b""
        if self._core is not None:
            rest = self._core.decode_bytes(self._pending, self._start)
            self._pending.clear()
            self._start = True
        text = self._utf8.decode(rest, final=True)
        self._utf8.reset()
        return text


def _plain_rules(rules) -> dict:
    """rules as plain JSON data, a copy, with every key of bpe.huggingface's rules dict
    (None where absent): rules must be a dict; what it holds, the core checks (padding and
    truncation, which it only keeps, are checked here). Ranked merges given as the
    loader's (n, 3) array of uint32 stay one (a read-only copy): a Llama-shaped file has
    300,000 of them, which as lists took a fifth of its load; the rules property and the
    saved file give them as lists."""
    if not isinstance(rules, dict):
        raise TypeError(f"rules must be a dict (bpe.huggingface's rules) or None, not {type(rules).__name__}")
    ranked = rules.get("ranked_merges")
    if isinstance(ranked, np.ndarray):
        ranked = np.array(ranked)  # the core checks its dtype and shape
        ranked.flags.writeable = False
        rules = {**rules, "ranked_merges": None}
    try:
        rules = huggingface.json_copy(rules)
    except (TypeError, ValueError) as e:
        raise ValueError(f"rules must be JSON data (str, int, bool, list, dict, None): {e}") from None
    if isinstance(ranked, np.ndarray):
        rules["ranked_merges"] = ranked
    rules = {**dict.fromkeys(huggingface.RULE_KEYS), "ignore_merges": False, **rules}
    # The core keeps these two without reading them: checked here, as a file's are.
    huggingface.check_padding_truncation(rules["padding"], rules["truncation"], "rules")
    return rules


def _found(id, token):
    """id, or tiktoken's KeyError naming token where it is None."""
    if id is None:
        raise KeyError(token)
    return id


def _from_state(state) -> BPETokenizer:  # what pickles made before _from_json name
    return BPETokenizer.from_state(state)


def _from_json(data: bytes) -> BPETokenizer:
    return BPETokenizer.from_state(json.loads(data))


def _numbered_specials(special_ids: dict, token_ids, merges) -> tuple:
    """(special_tokens, token_ids) from specials given as tiktoken gives them, {token: id}:
    the tokens in order, and token_ids with their ids after the ordinary tokens' (token
    i is id i when token_ids is None; else token_ids numbers the bytes and merges). The
    core checks the tokens and the ids; here, only what it cannot tell: which special
    token has an id that is not an int, and token_ids that number more than the bytes
    and merges."""
    for token, i in special_ids.items():
        if isinstance(i, bool) or not hasattr(i, "__index__"):  # numpy ints too, as everywhere
            raise TypeError(f"the special token {token!r} has id {i!r}: ids must be int")
    try:
        ordinary = list(range(256 + len(merges)) if token_ids is None else token_ids)
    except TypeError:
        ordinary = None
    if ordinary is None or isinstance(token_ids, (str, bytes)):
        return list(special_ids), token_ids  # merges or token_ids is no list: the core refuses it, and says why
    if len(ordinary) != 256 + len(merges):
        raise ValueError(f"with special_tokens as {{token: id}}, token_ids numbers the bytes and merges only: "
                         f"{256 + len(merges)} ids, got {len(ordinary)}")
    return list(special_ids), ordinary + [operator.index(i) for i in special_ids.values()]


def _threads(threads, num_threads):
    """threads, or num_threads, tiktoken's name for it; not both."""
    if num_threads is None:
        return threads
    if threads != 0:
        raise TypeError(f"give threads or num_threads (tiktoken's name for it), not both: got {threads} and {num_threads}")
    # Checked here too, not only by the core: decode_batch takes it and runs on one thread.
    if isinstance(num_threads, bool) or not hasattr(num_threads, "__index__") or operator.index(num_threads) < 0:
        raise ValueError(f"num_threads must be an int, 0 (as many as pay) or more, got {num_threads!r}")
    return operator.index(num_threads)


def _str(text) -> str:
    """text, if it is a str. The class takes str only, as tiktoken's Encoding does; the
    core (bpe.Encoder) takes bytes too, and checks the rest."""
    if not isinstance(text, str):
        hint = ": decode it first, or use bpe.Encoder, which takes bytes" if isinstance(text, (bytes, bytearray)) else ""
        raise TypeError(f"text must be str, not {type(text).__name__}{hint}")
    return text


def _strs(texts) -> list | tuple:
    """texts, a list (or another iterable) of str, as a list or tuple: see _str. Only the
    first is looked at here, in O(1): the core takes texts of the first one's type only,
    and names any other (a check of each in Python was a measurable share of encoding
    short texts flat)."""
    if isinstance(texts, (str, bytes)) or not hasattr(texts, "__iter__"):
        raise TypeError(f"texts must be a list of str, not {type(texts).__name__}")
    if not isinstance(texts, (list, tuple)):
        texts = list(texts)
    if texts and not isinstance(texts[0], str):
        hint = ": decode it first, or use bpe.Encoder, which takes bytes" if isinstance(texts[0], (bytes, bytearray)) else ""
        raise TypeError(f"text 0 must be str, not {type(texts[0]).__name__}{hint}")
    return texts


_MEMORY_UNITS = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
                 "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40}


def _as_memory(max_memory):
    """max_memory as the core takes it: a str such as "2GB" turned into bytes; bytes
    (an int) and None as they are, for the core to check."""
    if not isinstance(max_memory, str):
        return max_memory  # bytes, or None: the core checks them
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*", max_memory)
    if match and match.group(2).upper() in _MEMORY_UNITS:
        return int(float(match.group(1)) * _MEMORY_UNITS[match.group(2).upper()])
    raise ValueError(f"max_memory must be bytes, or a size such as '2GB' or '512MiB', got {max_memory!r}")


def _batch_size(max_memory) -> int:
    """Characters of text a batch holds: TRAIN_BATCH_BYTES, or under a memory budget
    at most a 64th of it (the batch in hand is memory the counter cannot see)."""
    budget = _as_memory(max_memory)
    return TRAIN_BATCH_BYTES if budget is None else max(1 << 16, min(TRAIN_BATCH_BYTES, budget // 64))


def _batches(texts, batch_size: int = TRAIN_BATCH_BYTES):
    """The texts as lists of str of about batch_size characters each, which the
    core reads in place (an ASCII str with no copy; any other encoded to UTF-8 for the
    call only). A single str goes whole: the core reads an ASCII one in place, and
    makes any other UTF-8 a stretch at a time, cut where a chunk boundary is certain, so
    that its UTF-8 is never held whole (ChunkCounter.add, in csrc/_core.cpp)."""
    if isinstance(texts, str):
        yield texts
        return
    elif isinstance(texts, (bytes, bytearray)) or not hasattr(texts, "__iter__"):
        raise TypeError(f"texts must be a str or an iterable of str, not {type(texts).__name__}")
    yield from sources.batches(_checked_strs(texts), batch_size)


def _checked_strs(texts):
    for k, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"texts must be str; item {k} is {type(text).__name__}"
                            + (" (decode it first)" if isinstance(text, (bytes, bytearray)) else ""))
        yield text
