"""Tokens as bytes, and tokenizers in files: our own, and other libraries'.

Our tokenizer is merges, a split pattern, special tokens and a numbering (see
bpe.BPETokenizer). Ids 0-255 are the bytes, merge k makes token 256 + k, and the
special tokens follow the merges. Our file (FILE_FORMAT, version FILE_VERSION) is JSON
that holds exactly these four, and a name; the earlier merges.txt and checkpoint
states of this project are read too. Other libraries keep the same information in
other shapes:

- tiktoken: a "mergeable ranks" table from each token's bytes to its id (its rank).
  A .tiktoken file has one token per line, base64 bytes, a space and the rank. The
  merges themselves are not stored; `merges_from_ranks` recovers them. The split
  pattern and the special tokens live in the code that builds the Encoding.
- GPT-2's vocab.json and merges.txt, and Hugging Face's tokenizer.json: a vocabulary
  from token strings to ids and a list of merges of two token strings, where each
  byte is written as one printable character (`byte_alphabet`), so that spaces and
  control bytes survive in JSON and in a text file of merges.

Ids outside our scheme (GPT-4's single bytes are shuffled, GPT-2's too) travel as
`token_ids`: the id the other library gives each of our tokens, in our order.

Each loader returns the arguments of BPETokenizer as a dict: merges, pattern,
special_tokens and token_ids.
"""
import base64
import io
import json
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from . import registry
from .core import Merges, PathArg, load_core, special_tokens_list
from .atomic_writes import write_text, write_texts

# --- the split patterns, as regexes for other libraries ------------------------------
#
# The engine splits text by hand-written rules; the regexes that say the same to
# libraries that split with a regex stand in one table, the core's (csrc/split_rules.h),
# read from it here when first asked for:
#   TIKTOKEN_PATTERNS   {name: regex} in tiktoken's dialect (Rust's fancy-regex), which
#                       Python's `regex` module reads too
#   ONIGURUMA_PATTERNS  {name: regex} for Hugging Face tokenizers (Oniguruma): the same
#                       but the default rule's, whose \u escapes it writes \x{...}
#   DEFAULT_PATTERN, DEFAULT_PATTERN_ONIGURUMA, GPT2_PATTERN, GPT4_PATTERN,
#   QWEN2_PATTERN, O200K_PATTERN   one rule's regex each
# bpe_reference.py keeps its own copies on purpose: an oracle must not share code with
# what it checks.
_PATTERN_NAMES = {"DEFAULT_PATTERN": ("default", 0), "DEFAULT_PATTERN_ONIGURUMA": ("default", 1),
                  "GPT2_PATTERN": ("gpt2", 0), "GPT4_PATTERN": ("gpt4", 0), "QWEN2_PATTERN": ("qwen2", 0),
                  "O200K_PATTERN": ("o200k", 0)}
_split_rules: dict[str, tuple[str, str]] = {}


def split_rules() -> dict[str, tuple[str, str]]:
    """{name: (regex, Oniguruma's regex)} of the named split rules, from the core."""
    if not _split_rules:
        _split_rules.update({name: (regex, oniguruma) for name, regex, oniguruma, _ in load_core().split_rules()})
    return dict(_split_rules)


TIKTOKEN_PATTERNS: dict[str, str]
"""{name: regex} of the named split rules in tiktoken's dialect (Rust's fancy-regex), read from the core."""
ONIGURUMA_PATTERNS: dict[str, str]
"""{name: regex} of the same rules for Hugging Face tokenizers (Oniguruma), read from the core."""


def _pattern_attribute(name: str) -> Any:
    if name == "TIKTOKEN_PATTERNS":
        return {rule: texts[0] for rule, texts in split_rules().items()}
    if name == "ONIGURUMA_PATTERNS":
        return {rule: texts[1] for rule, texts in split_rules().items()}
    rule, k = _PATTERN_NAMES[name]
    return split_rules()[rule][k]


def __getattr__(name: str) -> Any:
    # The rules' texts come from the compiled core, so that `import bpe.formats` works
    # unbuilt; each is read once, then is a plain attribute of the module.
    if name not in _PATTERN_NAMES and name not in ("TIKTOKEN_PATTERNS", "ONIGURUMA_PATTERNS"):
        raise AttributeError(f"module 'bpe.formats' has no attribute {name!r}")
    try:
        value = _pattern_attribute(name)
    except ImportError as error:  # hasattr() and getattr(..., default) expect AttributeError
        raise AttributeError(f"bpe.formats.{name} needs the compiled core: {error}") from error
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_PATTERN_NAMES) | {"TIKTOKEN_PATTERNS", "ONIGURUMA_PATTERNS"})


# GPT-2's one special token, which its vocab.json holds but does not mark as special.
GPT2_END_OF_TEXT = "<|endoftext|>"
# GPT-4's special tokens and their ids, which cl100k_base.tiktoken does not hold (bpe.registry).
CL100K_SPECIAL_IDS = registry.PUBLISHED["cl100k_base"].special_tokens


def cl100k_path() -> Path | None:
    """GPT-4's cl100k_base.tiktoken where an installed package ships it (checked, unpacked
    into the cache if it ships it gzipped), or None: nothing is downloaded."""
    try:
        return registry.ranks_file("cl100k_base", download=False)
    except FileNotFoundError:
        return None


def pattern_regex(patterns: dict, pattern: str) -> str:
    """The regex of a split pattern: patterns[pattern] for a name, else the pattern,
    which is then a regex already (the engine compiled it, csrc/pattern.h)."""
    return patterns.get(pattern, pattern)


# --- tokens as bytes -------------------------------------------------------------------

def token_bytes(merges: Merges) -> list[bytes]:
    """The bytes of every token of merges, in our order: the 256 single bytes, then each
    merge's two parts joined. (bpe.Encoder refuses merges whose tokens would be huge
    before anything calls this.)"""
    vocab = [bytes([b]) for b in range(256)]
    for a, b in merges:
        vocab.append(vocab[a] + vocab[b])
    return vocab


def byte_alphabet() -> dict[int, str]:
    """GPT-2's printable stand-in for each byte: the bytes that are printable Latin-1
    characters stand for themselves, and the other 68 (controls, space, DEL, NBSP, the
    soft hyphen) take the characters from U+0100 on, in byte order."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    alphabet, extra = {}, 0
    for b in range(256):
        if b in printable:
            alphabet[b] = chr(b)
        else:
            alphabet[b] = chr(256 + extra)
            extra += 1
    return alphabet


def _as_alphabet(data: bytes, alphabet: dict[int, str]) -> str:
    return "".join(alphabet[b] for b in data)


def _numbering(merges, merge_ids: list[int], special_ids: dict[str, int]) -> dict:
    """BPETokenizer's arguments from another library's numbering: merge_ids[i] is the id
    of our byte or merge token i, special_ids maps each special token to its id."""
    if len(set(merge_ids).union(special_ids.values())) == len(merge_ids) + len(special_ids) and \
            all(isinstance(t, str) and isinstance(i, int) and not isinstance(i, bool) for t, i in special_ids.items()):
        return {"merges": merges, "special_tokens": list(special_ids),
                "token_ids": list(merge_ids) + list(special_ids.values())}
    owner: dict[int, str] = {}  # id: which of our tokens has it, for the messages (reached only when two share one)
    for k, i in enumerate(merge_ids):
        name = f"byte {k}" if k < 256 else f"merge {k - 256}"
        if i in owner:
            raise ValueError(f"{name} has id {i}, which is {owner[i]}'s too: each token needs an id of its own")
        owner[i] = name
    for token, i in special_ids.items():
        if not isinstance(token, str) or isinstance(i, bool) or not isinstance(i, int):
            raise ValueError(f"special token {token!r}: expected a str with an int id, got id {i!r}")
        if i in owner:  # a dict can hold it beside the byte; dropping either would change the ids
            raise ValueError(f"the special token {token!r} has id {i}, which is {owner[i]}'s: each token needs an "
                             "id of its own")
        owner[i] = f"the special token {token!r}"
    return {"merges": merges, "special_tokens": list(special_ids),
            "token_ids": list(merge_ids) + list(special_ids.values())}


# --- our own file: JSON, versioned, the four parts and a name ---------------------------

# What the file says it is, and the newest version of it this code reads and writes.
FILE_FORMAT = "bpe-tokenizer"
FILE_VERSION = 1
# The name a tokenizer gets inside a folder: save("runs/x/") writes runs/x/tokenizer.bpe.
# Not "tokenizer.json", which is Hugging Face's and means something else.
FILE_NAME = "tokenizer.bpe"
# The special tokens of the files and checkpoints this project wrote before the file
# format existed (merges.txt, and states without special_tokens), in their order.
LEGACY_SPECIAL_TOKENS = ("<|pad|>", "<|endoftext|>")
_STATE_FIELDS = {"format", "version", "pattern", "special_tokens", "token_ids", "merges"}


def bpe_state(merges: Merges, pattern: str, special_tokens: Iterable[str], token_ids: Iterable[int] | None = None,
              name: str | None = None, rules: dict | None = None) -> dict:
    """A tokenizer as plain data (str, int, list, dict and None): what our file holds and
    a checkpoint embeds. "name" is there only when the tokenizer has one (files without
    it load as before; version 1 of the format allows it); "rules" only when it has
    rules (a tokenizer.json's, bpe.huggingface's rules dict: an optional field of version
    1, which a reader from before it refuses as an unknown field rather than run without
    them)."""
    return {
        "format": FILE_FORMAT,
        "version": FILE_VERSION,
        **({"name": name} if name is not None else {}),
        "pattern": pattern,
        "special_tokens": list(special_tokens),
        "token_ids": None if token_ids is None else list(token_ids),
        "merges": [[a, b] for a, b in merges],
        **({"rules": rules} if rules is not None else {}),
    }


def bpe_arguments(state: Any) -> dict:
    """BPETokenizer's arguments from a state that bpe_state made, its fields checked
    (ValueError says what is wrong; the parts themselves are the core's to check). Also
    reads the states of checkpoints written before the format existed."""
    if not isinstance(state, dict):
        raise ValueError(f"a tokenizer state must be a dict, not {type(state).__name__}")
    if "format" not in state and "merges" in state:  # a checkpoint from before the format
        return _legacy_arguments(state)
    if state.get("format") != FILE_FORMAT:
        raise ValueError(f"not a {FILE_FORMAT} (its \"format\" is {state.get('format')!r})")
    version = state.get("version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ValueError(f"its \"version\" must be a whole number, got {version!r}")
    if version > FILE_VERSION:
        raise ValueError(f"it is version {version} of the format, written by a newer bpe; this one reads "
                         f"version {FILE_VERSION}: upgrade bpe")
    optional = {"name", "rules"}
    if set(state) - optional != _STATE_FIELDS:
        extra, missing = sorted(set(state) - _STATE_FIELDS - optional), sorted(_STATE_FIELDS - set(state))
        raise ValueError("its fields are not the format's: " + "; ".join(
            ([f"unknown {extra}"] if extra else []) + ([f"missing {missing}"] if missing else [])))
    return {"merges": state["merges"], "pattern": state["pattern"], "special_tokens": state["special_tokens"],
            "token_ids": state["token_ids"], "name": state.get("name"), "rules": state.get("rules")}


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


def parse_json(text: str, where: object) -> Any:
    """json.loads, where JSON nested deeper than Python's parser recurses (a crafted file,
    "[[[[..." 100,000 deep) is a ValueError that names the file, as other bad JSON is,
    and not a RecursionError. JSONDecodeError is left to the caller, which knows what the
    file should have been."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError(f"{where} is not readable JSON: it nests lists or objects too deep (over "
                         f"{sys.getrecursionlimit():,} levels); no file of this library nests more than a few") from None


def bpe_path(path: PathArg) -> Path:
    """Where our file is: path, or path/tokenizer.bpe when path is a folder."""
    path = Path(path)
    return path / FILE_NAME if path.is_dir() else path


def save_bpe(path: PathArg, state: dict) -> Path:
    """Write a tokenizer's state (bpe_state) as our file at path, or at path/tokenizer.bpe
    when path is a folder (or ends with a slash); returns the file's path. A crash while
    writing leaves the old file or the new one, never half of one."""
    path = Path(path)
    if path.is_dir() or str(path).endswith((os.sep, "/")):
        path = path / FILE_NAME
    # One merge per line (and token_ids 16 to a line), so a person can read the file.
    lines = ["{"]
    for key in ("format", "version", "name", "pattern", "special_tokens"):
        if key in state:
            lines.append(f"  {json.dumps(key)}: {json.dumps(state[key], ensure_ascii=False)},")
    if state["token_ids"] is None:
        lines.append('  "token_ids": null,')
    else:
        ids = state["token_ids"]
        rows = [", ".join(map(str, ids[k:k + 16])) for k in range(0, len(ids), 16)]
        lines.append('  "token_ids": [\n    ' + ",\n    ".join(rows) + "\n  ],")
    merges = ",\n    ".join(f"[{a}, {b}]" for a, b in state["merges"])
    lines.append('  "merges": [' + (f"\n    {merges}\n  " if merges else "") + "]" + (',' if "rules" in state else ""))
    if "rules" in state:
        lines.append(f'  "rules": {json.dumps(state["rules"], ensure_ascii=False)}')
    lines.append("}")
    write_text(path, "\n".join(lines) + "\n")
    return path


def load_bpe(path: PathArg, pattern: str | None = None) -> dict:
    """BPETokenizer's arguments from our file at path; or from a merges.txt of this
    project's earlier versions, which does not record its split pattern: pattern names
    it. ValueError names the file and what is wrong with it."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise type(e)(f"cannot read a tokenizer from {path}: {e.strerror or e}") from None
    from .sentencepiece import looks_like_model  # bpe.sentencepiece names files with this module's code

    if looks_like_model(data[:1024]):
        raise ValueError(f"{path} looks like a SentencePiece model: load it with BPETokenizer.from_sentencepiece(path)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{path} is not a tokenizer file: it is not UTF-8 text (byte {e.start})") from None
    if not text.strip():
        raise ValueError(f"{path} is empty: a tokenizer file holds JSON (see BPETokenizer.save); was it "
                         "written by a process that was killed, or copied before it was written?")
    if not text.lstrip().startswith("{"):
        return _legacy_merges(path, text, pattern)
    try:
        state = parse_json(text, path)
    except json.JSONDecodeError as e:
        # JSON that stops at the end of the text (or inside a string, which runs to the
        # end of it) was cut short, not edited.
        if e.pos >= len(text.rstrip()) or e.msg.startswith("Unterminated string"):
            raise ValueError(f"{path} is not a readable tokenizer file: it is truncated (it ends at byte "
                             f"{len(data)}, before its JSON does: {e.msg}); save the tokenizer again") from None
        raise ValueError(f"{path} is not a readable tokenizer file: {e} (truncated or hand-edited?)") from None
    if is_huggingface(state):
        raise ValueError(f"{path} is a Hugging Face tokenizer.json: load it with BPETokenizer.from_huggingface(path)")
    from .tekken import is_tekken  # bpe.tekken reads tiktoken's ranks with this module's code

    if is_tekken(state):
        raise ValueError(f"{path} looks like Mistral's Tekken file: load it with BPETokenizer.from_tekken(path)")
    try:
        return bpe_arguments(state)
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from None


def _legacy_merges(path, text: str, pattern) -> dict:
    """BPETokenizer's arguments from merges.txt as this project wrote it before the file
    format: a merge per line, two ids and a space, with <|pad|> and <|endoftext|> after
    the merges."""
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
    return {"merges": merges, "pattern": pattern, "special_tokens": LEGACY_SPECIAL_TOKENS}


def is_huggingface(document: Any) -> bool:
    """Whether a parsed JSON document looks like a Hugging Face tokenizer.json."""
    return isinstance(document, dict) and isinstance(document.get("model"), dict) and "added_tokens" in document


# --- tiktoken ---------------------------------------------------------------------------

def tiktoken_ranks(merges: Merges, token_ids: Sequence[int] | None = None) -> dict[bytes, int]:
    """The byte and merge tokens as tiktoken's mergeable ranks: each token's bytes to its
    id (token_ids[i] for our token i, when given).

    tiktoken knows a token only by its bytes, and finds the pair that made a token by
    encoding the token's bytes with the lower ranks. Two cases would change the ids
    silently, and are refused instead: two merges that make the same bytes (say
    "ab"+"c" and "a"+"bc"), and a merge that encoding can never reach, because the
    earlier merges split its bytes differently (merges (a, b), (b, c), (a, bc): "abc"
    encodes as [ab, c], but tiktoken would find "abc" among its ranks and use it).
    """
    ranks: dict[bytes, int] = {}
    for i, data in enumerate(token_bytes(merges)):
        if data in ranks:
            raise ValueError(f"tokens {ranks[data]} and {i} are both {data!r}: tiktoken needs each token's bytes to differ")
        ranks[data] = token_ids[i] if token_ids is not None else i
    recovered, _ = merges_from_ranks(ranks)
    for k, (theirs, ours) in enumerate(zip(recovered, merges)):
        if tuple(theirs) != tuple(ours):
            raise ValueError(f"merge {k} is {tuple(ours)}, but encoding never reaches it: the earlier merges split "
                             f"its bytes {token_bytes(merges)[256 + k]!r} as {theirs}. tiktoken finds merges by "
                             "bytes and would use it anyway, so its ids would differ from ours")
    return ranks


def save_tiktoken(merges: Merges, path: PathArg, token_ids: Sequence[int] | None = None) -> None:
    """Write a .tiktoken ranks file: base64 of each token's bytes, a space, its id. The
    file holds neither the split pattern nor the special tokens: pass those to
    tiktoken.Encoding yourself (TIKTOKEN_PATTERNS has the pattern)."""
    ranks = tiktoken_ranks(merges, token_ids)
    lines = [f"{base64.b64encode(data).decode('ascii')} {rank}\n" for data, rank in sorted(ranks.items(), key=lambda t: t[1])]
    write_text(path, "".join(lines), encoding="ascii")


def read_tiktoken(path: PathArg, data: bytes | None = None) -> dict[bytes, int]:
    """A .tiktoken ranks file as {token bytes: rank}, checked line by line. data: the
    file's bytes where they are in memory already (path then only names them)."""
    ranks = {}
    with open(path, "rb") if data is None else io.BytesIO(data) as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            parts = line.split()
            try:
                if len(parts) != 2 or not parts[1].isdigit():
                    raise ValueError
                data, rank = base64.b64decode(parts[0], validate=True), int(parts[1])
            except ValueError:
                raise ValueError(f"{path}, line {number}: expected base64 bytes, a space and a rank") from None
            if data in ranks:
                raise ValueError(f"{path}, line {number}: the token {data!r} is there twice")
            ranks[data] = rank
    return ranks


def merges_from_ranks(ranks: dict[bytes, int]) -> tuple[list[tuple[int, int]], list[int]]:
    """Recover merges from tiktoken's mergeable ranks: (merges, token_ids).

    The ranks say what each token is, not which two tokens made it. Byte-pair encoding
    of a token's own bytes, with only the tokens ranked below it, stops at exactly two
    parts, and those are the pair that made it (minbpe's recover_merges does this for
    GPT-4). token_ids[i] is the rank of our token i: bytes first (GPT-4 gives them
    shuffled ranks), then the merges in rank order.
    """

    singles = {data for data in ranks if len(data) == 1}
    if len(singles) != 256:
        raise ValueError(f"every byte needs a token of its own; {256 - len(singles)} bytes have none")
    if b"" in ranks:
        raise ValueError(f"the token of rank {ranks[b'']} is empty")
    our_id = {bytes([b]): b for b in range(256)}
    token_ids = [ranks[bytes([b])] for b in range(256)]
    longer = [data for data, _ in sorted(ranks.items(), key=lambda item: item[1]) if len(data) > 1]
    # The encoding of each token's bytes is in the core (csrc/ranks.h): O(n log n) for n
    # bytes where rescanning the pairs after each merge, in Python, was O(n^2) per token.
    merges: list[tuple[int, int]] = []
    for data, split in zip(longer, load_core().lower_rank_splits(ranks, longer)):
        left, right = data[:split], data[split:]
        if not split or left not in our_id or right not in our_id:
            raise ValueError(f"the token of rank {ranks[data]}, {data!r}, is not two lower-ranked tokens joined")
        our_id[data] = 256 + len(merges)
        merges.append((our_id[left], our_id[right]))
        token_ids.append(ranks[data])
    return merges, token_ids


def load_tiktoken(path: PathArg, pattern: str | None = None,
                  special_ids: Mapping[str, int] | None = None, data: bytes | None = None) -> dict:
    """A .tiktoken file as BPETokenizer's arguments. The file holds neither the split
    pattern nor the special tokens: where its name is one of OpenAI's published encodings
    (cl100k_base.tiktoken, o200k_base.tiktoken; bpe.registry), the defaults are that
    encoding's; for any other name, GPT-4's pattern and no special tokens. data: as
    read_tiktoken's."""
    row = registry.published_for_file(path)
    if pattern is None:
        pattern = row.rule if row else "gpt4"
    if special_ids is None:
        special_ids = row.special_tokens if row else {}
    merges, token_ids = merges_from_ranks(read_tiktoken(path, data))
    return {**_numbering(merges, token_ids, dict(special_ids)), "pattern": pattern, "name": name_for_file(path)}


# Files whose name their format fixes: a tokenizer read from one is named by its folder.
_FIXED_FILE_NAMES = {"tokenizer.json", "vocab.json", "tekken.json", "tokenizer.model"}


def name_for_file(path: PathArg) -> str:
    """The name (tiktoken's Encoding.name) of a tokenizer read from another library's
    file: a published encoding's name for its file (cl100k_base.tiktoken), else the
    file's stem, or its folder's name where the format fixes the file's name
    (tokenizer.json, vocab.json, tekken.json, tokenizer.model)."""
    path = Path(path)
    row = registry.published_for_file(path)
    if row is not None:
        return row.name
    if path.name in _FIXED_FILE_NAMES:
        return Path(os.path.abspath(path)).parent.name or path.stem
    return path.stem


# --- GPT-2's files and Hugging Face's tokenizer.json -------------------------------------

def _merges_from_vocab(vocab: dict, merge_pairs, where: str, special_tokens, unmade_hint: str,
                       made_is_ordinary: bool = False, unmade_are_special: bool = False) -> dict:
    """BPETokenizer's arguments (but the pattern) from a vocabulary of strings in the
    byte alphabet to ids and merges as pairs of such strings.

    The special tokens are the ones the caller names (from the file's own list of them,
    or the user's), never whatever the merges happen not to make: a truncated list of
    merges would otherwise turn every token it lost into a special token, and text that
    holds one ("hello") into an error or other ids. The vocabulary's tokens that are
    neither bytes, merges nor named are refused, the first few by name, with
    unmade_hint (what to check). made_is_ordinary: a named token that a merge makes is
    that merge's token, not a special one (Hugging Face's added tokens), rather than a
    mistake. unmade_are_special: the vocabulary's tokens that no merge makes are kept as
    special tokens after the named ones (Hugging Face keeps them: a chunk that is one of
    them becomes it under ignore_merges), not refused.
    """
    # Checked by the set of types (map runs in C), not a loop in Python, which was much of a large file's load.
    if not isinstance(vocab, dict) or not set(map(type, vocab)) <= {str} or not set(map(type, vocab.values())) <= {int}:
        raise ValueError(f"{where}: expected a vocabulary from token strings to int ids")
    to_byte = {char: b for b, char in byte_alphabet().items()}

    def as_bytes(token: str, at: str) -> bytes:
        try:
            return bytes(to_byte[c] for c in token)
        except KeyError as e:
            raise ValueError(f"{at}: {token!r} has {e.args[0]!r}, which is not in the byte alphabet") from None

    # Keyed by the alphabet strings themselves (one string per byte string): a merge's
    # parts that are keys are made of alphabet characters, so only a miss is converted,
    # to say which character is not in the alphabet. (At 200,000 merges this is most of
    # a tokenizer.json's load time.)
    def place(at):  # merge_pairs name a merge by its number (Hugging Face's loader) or a str
        return f"{where}, merge {at}" if isinstance(at, int) else at

    our_id: dict[str, int] = {}
    merge_ids: list[int] = []
    merges: list[tuple[int, int]] = []
    made_at: dict[str, object] = {}  # the byte or the merge (its number, or where it is) that makes it
    for b, char in byte_alphabet().items():
        if char not in vocab:
            raise ValueError(f"{where}: the byte {b} ({char!r}) has no token")
        our_id[char] = b
        merge_ids.append(vocab[char])
        made_at[char] = f"byte {b}"
    for at, left_text, right_text in merge_pairs:
        left, right = our_id.get(left_text), our_id.get(right_text)
        if left is None or right is None:
            as_bytes(left_text, place(at)), as_bytes(right_text, place(at))
            raise ValueError(f"{place(at)}: {left_text} {right_text} uses a token that no earlier merge makes")
        joined = left_text + right_text
        i = vocab.get(joined)
        if i is None:
            raise ValueError(f"{place(at)}: {joined!r} is not in the vocabulary")
        if joined in made_at:
            raise ValueError(f"{place(at)}: {left_text} {right_text} makes {joined!r}, but "
                             f"{place(made_at[joined])} already makes it: each token has one merge")
        made_at[joined] = at
        our_id[joined] = 256 + len(merges)
        merges.append((left, right))
        merge_ids.append(i)
    special_ids = {}
    for token in special_tokens:
        if token not in vocab:
            raise ValueError(f"{where}: the special token {token!r} is not in the vocabulary")
        if token in made_at and made_is_ordinary:
            continue
        if token in made_at:
            raise ValueError(f"{where}: the special token {token!r} is an ordinary token too "
                             f"({place(made_at[token])} makes it): a merge makes it, so it cannot also be special")
        special_ids[token] = vocab[token]
    # Every made or special token is in vocab: the counts say whether any other is.
    unmade = [] if len(made_at) + len(special_ids) == len(vocab) else \
        sorted((i, token) for token, i in vocab.items() if token not in made_at and token not in special_ids)
    if unmade and unmade_are_special:
        special_ids.update((token, i) for i, token in unmade)
        unmade = []
    if unmade:
        named = ", ".join(repr(token) for _, token in unmade[:5])
        raise ValueError(f"{where}: {len(unmade)} tokens of the vocabulary that no merge makes and that are not named "
                         f"as special tokens, such as {named}: {unmade_hint}")
    return _numbering(merges, merge_ids, special_ids)


def load_gpt2(vocab_path: PathArg, merges_path: PathArg, pattern: str = "gpt2",
              special_tokens: Iterable[str] | None = None) -> dict:
    """GPT-2 style vocab.json and merges.txt, as BPETokenizer's arguments.

    vocab.json maps each token, written in the byte alphabet, to its id; merges.txt
    has one merge per line, its two tokens separated by a space, after a "#version"
    line. The files do not say which tokens are special: special_tokens names them
    (default: GPT-2's one, <|endoftext|>, when the vocabulary has it). Any other token
    that no merge makes is refused: it means merges.txt lost lines.
    """
    try:
        with open(vocab_path, encoding="utf-8") as f:
            vocab = parse_json(f.read(), vocab_path)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"{vocab_path} is not a JSON vocabulary: {e}") from None
    if special_tokens is None:
        special_tokens = [GPT2_END_OF_TEXT] if isinstance(vocab, dict) and GPT2_END_OF_TEXT in vocab else []
    else:
        special_tokens = special_tokens_list(special_tokens)  # read once; the core checks what they hold

    def pairs():
        with open(merges_path, encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                line = line.rstrip("\r\n")
                if not line or (number == 1 and line.startswith("#version")):
                    continue
                parts = line.split(" ")
                at = f"{merges_path}, line {number}"
                if len(parts) != 2:
                    raise ValueError(f"{at}: expected two tokens separated by a space, got {line!r}")
                yield at, parts[0], parts[1]

    hint = (f"a truncated merges.txt ({merges_path})? If they are special tokens, name them: "
            "from_gpt2(vocab, merges, special_tokens=[...])")
    return {**_merges_from_vocab(vocab, pairs(), str(vocab_path), list(special_tokens), hint), "pattern": pattern,
            "name": name_for_file(vocab_path)}


def _alphabet_vocabulary(merges, special_tokens, token_ids, library: str):
    """What GPT-2's vocab.json and Hugging Face's model both hold: each token written in
    the byte alphabet, with its id (token_ids[i] for our token i, when given). Returns
    (alphabet, the tokens' bytes, every id, {written token: id})."""
    alphabet = byte_alphabet()
    vocab_bytes = token_bytes(merges)
    ids = list(token_ids) if token_ids is not None else list(range(len(vocab_bytes) + len(special_tokens)))
    vocab = {_as_alphabet(data, alphabet): i for i, data in zip(ids, vocab_bytes)}
    if len(vocab) != len(vocab_bytes):
        raise ValueError(f"two merges make the same bytes: a {library} vocabulary needs each token to differ")
    return alphabet, vocab_bytes, ids, vocab


def save_gpt2(vocab_path: PathArg, merges_path: PathArg, merges: Merges, special_tokens: Sequence[str] = (),
              token_ids: Sequence[int] | None = None) -> None:
    """Write GPT-2 style vocab.json and merges.txt (what load_gpt2 reads): every token in
    the byte alphabet with its id (token_ids[i] for our token i, when given; the special
    tokens as they are), and the merges in order, two tokens to a line. The files hold
    no split pattern: readers take GPT-2's. Both are replaced together, or neither
    (bpe.atomic_writes.write_texts)."""
    alphabet, vocab_bytes, ids, vocab = _alphabet_vocabulary(merges, special_tokens, token_ids, "GPT-2")
    n = len(vocab_bytes)
    for token, i in zip(special_tokens, ids[n:]):
        if token in vocab:
            raise ValueError(f"the special token {token!r} is written like token {vocab[token]} in the byte alphabet")
        vocab[token] = i
    lines = ["#version: 0.2"] + [f"{_as_alphabet(vocab_bytes[a], alphabet)} {_as_alphabet(vocab_bytes[b], alphabet)}"
                                 for a, b in merges]
    # Together: both new, or both as they were (merges.txt, which says how to read the
    # vocabulary's tokens, last).
    write_texts({vocab_path: json.dumps(vocab, ensure_ascii=False), merges_path: "\n".join(lines) + "\n"})
