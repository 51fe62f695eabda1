"""Mistral's Tekken files (tekken.json), as BPETokenizer's arguments.

A Tekken file is a tiktoken vocabulary in JSON, with its split pattern and its special
tokens beside it:

- "vocab": one entry a rank, {"rank", "token_bytes" (base64), "token_str"}; ranks 0-255
  are the single bytes, in order. As in a .tiktoken file, the merges are not stored:
  formats.merges_from_ranks recovers them.
- "config": "pattern" (the split regex, which the engine runs), "default_vocab_size"
  (every id: special and ordinary), "default_num_special_tokens", "version" ("v3",
  "v7", ...) and "num_vocab_tokens" (the list's length, not read).
- "special_tokens": {"rank", "token_str", "is_control"} in the order of their ids;
  files of version v7 and before may leave it out, and then have Mistral's first twenty
  (<unk>, <s>, </s>, [INST], ...: TEKKEN_LEGACY_SPECIAL_TOKENS).

The ids: special token k is id k, for k below default_num_special_tokens (those the
list does not name are "<SPECIAL_k>"); the vocabulary is cut to its first
default_vocab_size - default_num_special_tokens ranks, and rank r is id
r + default_num_special_tokens. That is what mistral-common's Tekkenizer gives.

What else a file may hold is read by no text encoder and is passed over: "image",
"audio" and "multimodal" (how images and audio become placeholder tokens, which are
special tokens already numbered here) and "model_settings_builder" (how a chat is laid
out). Anything that would change the ids of a text and is not as above is refused, by
name: a version this module does not know, special tokens whose ranks are not their
places in the list, two specials with one text, a vocabulary shorter than the cut, a
token whose rank is not its place.
"""
import base64
import binascii
import json
from pathlib import Path
from typing import Any

from .core import PathArg
from .formats import _numbering, merges_from_ranks, name_for_file, parse_json

# The versions of the format that mistral-common 1.13 reads. The version says how a chat
# is laid out; for the text ids it matters only in that files after v7 must list their
# special tokens. A later one may mean more, so it is refused until it is looked at.
TEKKEN_VERSIONS = ("v1", "v2", "v3", "v7", "v11", "v13", "v15")
# The special tokens of files (v7 and before) that do not list theirs, in id order.
TEKKEN_LEGACY_SPECIAL_TOKENS = (
    "<unk>", "<s>", "</s>", "[INST]", "[/INST]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]", "[TOOL_RESULTS]",
    "[/TOOL_RESULTS]", "[TOOL_CALLS]", "[IMG]", "<pad>", "[IMG_BREAK]", "[IMG_END]", "[PREFIX]", "[MIDDLE]",
    "[SUFFIX]", "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]", "[TOOL_CONTENT]",
)
# What a special token that the file numbers but does not name is called.
TEKKEN_FILLER = "<SPECIAL_{}>"
_ID_LIMIT = 1 << 24  # bpe.MAX_ID + 1, without loading the core: the sizes are checked before anything is made
# The most special tokens a file may number. The ones it does not name are made here, so a
# small file could otherwise ask for millions; Mistral's number 1,000.
TEKKEN_MAX_SPECIAL_TOKENS = 1 << 16


def is_tekken(document: Any) -> bool:
    """Whether a parsed JSON document looks like a Tekken file: a "vocab" list and a
    "config" that has a "pattern" and a "default_vocab_size"."""
    return (isinstance(document, dict) and isinstance(document.get("vocab"), list)
            and isinstance(document.get("config"), dict) and "pattern" in document["config"]
            and "default_vocab_size" in document["config"])


def _read_document(path: PathArg) -> Any:
    """The JSON of the file at path; ValueError names the file where it is not JSON."""
    path = Path(path)
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{path} is not a Tekken file: it is not UTF-8 text (byte {e.start})") from None
    try:
        return parse_json(text, path)
    except json.JSONDecodeError as e:
        raise ValueError(f"{path} is not a Tekken file: it is not readable JSON ({e})") from None


def load_tekken(path: PathArg) -> dict:
    """BPETokenizer's arguments from the Tekken file at path. ValueError says what in the
    file is wrong or not supported."""
    document = _read_document(path)
    if not is_tekken(document):
        raise ValueError(f"{path} is not a Tekken file: it needs a \"vocab\" list and a \"config\" with "
                         "\"pattern\" and \"default_vocab_size\"")
    config = document["config"]
    version = config.get("version")
    if version not in TEKKEN_VERSIONS:
        raise ValueError(f"config.version is {version!r}, which this loader does not know (it reads "
                         f"{', '.join(TEKKEN_VERSIONS)}): its ids might differ")
    pattern = config["pattern"]
    if not isinstance(pattern, str) or not pattern:
        raise ValueError(f"config.pattern must be the split regex, got {pattern!r}")
    vocab_size = _count(config, "default_vocab_size")
    n_special = _count(config, "default_num_special_tokens")
    if n_special > TEKKEN_MAX_SPECIAL_TOKENS:
        raise ValueError(f"config.default_num_special_tokens is {n_special:,}: this loader makes at most "
                         f"{TEKKEN_MAX_SPECIAL_TOKENS:,} special tokens (Mistral's files have 1,000)")
    specials = _special_tokens(document.get("special_tokens"), version, n_special)
    n_ordinary = vocab_size - n_special
    vocab = document["vocab"]
    if n_ordinary < 256:
        raise ValueError(f"config.default_vocab_size {vocab_size:,} leaves {n_ordinary:,} ids after the "
                         f"{n_special:,} special tokens: the 256 bytes need one each")
    if len(vocab) < n_ordinary:
        raise ValueError(f"config.default_vocab_size {vocab_size:,} with {n_special:,} special tokens needs "
                         f"{n_ordinary:,} ranks, but \"vocab\" has {len(vocab):,}")
    ranks = _ranks(vocab[:n_ordinary])
    merges, token_ids = merges_from_ranks(ranks)
    ids = [rank + n_special for rank in token_ids]
    return {**_numbering(merges, ids, {token: i for i, token in enumerate(specials)}), "pattern": pattern,
            "name": name_for_file(path)}


def _count(config: dict, key: str) -> int:
    value = config.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < _ID_LIMIT:
        raise ValueError(f"config.{key} must be a whole number from 0 to {_ID_LIMIT - 1:,}, got {value!r}")
    return value


def _special_tokens(listed: Any, version: str, n_special: int) -> list[str]:
    """The special tokens' texts in id order: those the file lists (or, for a file of v7
    or before that lists none, the legacy twenty), then fillers up to n_special."""
    if listed is None:
        if int(version[1:]) > 7:
            raise ValueError(f"a file of version {version} must list its special tokens, and it has no "
                             "\"special_tokens\"")
        names = list(TEKKEN_LEGACY_SPECIAL_TOKENS)
    else:
        if not isinstance(listed, list):
            raise ValueError(f"\"special_tokens\" must be a list, got {type(listed).__name__}")
        names = []
        for k, entry in enumerate(listed):
            if not isinstance(entry, dict) or not isinstance(entry.get("token_str"), str) or not entry["token_str"]:
                raise ValueError(f"special_tokens[{k}] must have a \"token_str\" that is not empty, got {entry!r}")
            rank = entry.get("rank")
            if rank != k or isinstance(rank, bool):
                # mistral-common numbers a special both by its rank (encoding) and by its
                # place (decoding): only where they agree is there one set of ids to give.
                raise ValueError(f"special_tokens[{k}] ({entry['token_str']!r}) has rank {rank!r}: each special "
                                 "token's rank must be its place in the list")
            names.append(entry["token_str"])
    if len(names) > n_special:
        raise ValueError(f"the file has {len(names):,} special tokens, but config.default_num_special_tokens is "
                         f"{n_special:,}")
    names += [TEKKEN_FILLER.format(k) for k in range(len(names), n_special)]
    seen: dict[str, int] = {}
    for k, name in enumerate(names):
        if name in seen:
            raise ValueError(f"special tokens {seen[name]} and {k} are both {name!r}: each needs a text of its own")
        seen[name] = k
    return names


def _ranks(vocab: list) -> dict[bytes, int]:
    """{token bytes: rank} of the vocabulary's entries, each checked: its rank is its
    place, its bytes are base64, the first 256 are the single bytes in order, and no two
    entries have the same bytes."""
    ranks: dict[bytes, int] = {}
    for k, entry in enumerate(vocab):
        data = entry.get("token_bytes") if isinstance(entry, dict) else None
        if not isinstance(data, str):
            raise ValueError(f"vocab[{k}] must have \"token_bytes\", base64 text, got {entry!r}")
        if entry.get("rank") != k or isinstance(entry["rank"], bool):
            raise ValueError(f"vocab[{k}] has rank {entry.get('rank')!r}: each token's rank must be its place")
        try:
            token = base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            raise ValueError(f"vocab[{k}]: \"token_bytes\" {data[:40]!r} is not base64") from None
        if k < 256 and token != bytes([k]):
            raise ValueError(f"vocab[{k}] is {token!r}: ranks 0-255 must be the single bytes, in order")
        if token in ranks:
            raise ValueError(f"vocab[{k}] is {token!r}, as vocab[{ranks[token]}] is: each token needs bytes of its own")
        ranks[token] = k
    return ranks
