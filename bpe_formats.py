"""Moving merges between this project and other tokenizer libraries.

Our merges are a list of pairs of ids: ids 0-255 are the bytes, merge k makes token
256 + k. Other libraries keep the same information in other shapes:

- tiktoken: a "mergeable ranks" table from each token's bytes to its id (its rank).
  A .tiktoken file has one token per line, base64 bytes, a space and the rank. The
  merges themselves are not stored; `merges_from_ranks` recovers them.
- Hugging Face tokenizers (and GPT-2's own files): a vocabulary from token strings to
  ids and a list of merges of two token strings, where each byte is written as one
  printable character (`byte_alphabet`), so that spaces and control bytes survive in
  JSON and in a text file of merges.

Ids outside our scheme (GPT-4's single bytes are shuffled, GPT-2's too) travel as
`token_ids`: the id the other library gives each of our tokens, in our order.
"""
import base64
import json
from pathlib import Path

from bpe_reference import GPT2_SPLIT_PATTERN, GPT4_SPLIT_PATTERN, token_bytes

# Our default split rule, as a regex over str for libraries that split text with one.
# (\u0080-\U0010FFFF are the characters whose UTF-8 bytes are all >= 0x80.)
DEFAULT_PATTERN = r" ?[A-Za-z0-9\u0080-\U0010FFFF]+| ?[^A-Za-z0-9\u0080-\U0010FFFF \t\n\x0b\x0c\r]+|[ \t\n\x0b\x0c\r]+"
# The same in the syntax of Oniguruma, the regex engine of Hugging Face tokenizers.
DEFAULT_PATTERN_ONIGURUMA = r" ?[A-Za-z0-9\x{80}-\x{10FFFF}]+| ?[^A-Za-z0-9\x{80}-\x{10FFFF} \t\n\x0b\x0c\r]+|[ \t\n\x0b\x0c\r]+"

# Each of our split patterns as a regex for tiktoken (Rust's fancy-regex) and for
# Hugging Face tokenizers (Oniguruma); GPT-2's and GPT-4's read the same in both.
TIKTOKEN_PATTERNS = {"default": DEFAULT_PATTERN, "gpt2": GPT2_SPLIT_PATTERN, "gpt4": GPT4_SPLIT_PATTERN}
ONIGURUMA_PATTERNS = {"default": DEFAULT_PATTERN_ONIGURUMA, "gpt2": GPT2_SPLIT_PATTERN, "gpt4": GPT4_SPLIT_PATTERN}

# GPT-4's special tokens, which cl100k_base.tiktoken does not hold (tiktoken's source has them).
CL100K_SPECIAL_TOKENS = {"<|endoftext|>": 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259,
                         "<|fim_suffix|>": 100260, "<|endofprompt|>": 100276}


def _pattern_for(patterns: dict, pattern: str) -> str:
    if pattern not in patterns:
        raise ValueError(f"unknown split pattern {pattern!r}: expected 'default', 'gpt2' or 'gpt4'")
    return patterns[pattern]


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


# --- tiktoken -------------------------------------------------------------------------

def tiktoken_ranks(merges, token_ids=None) -> dict[bytes, int]:
    """Our vocabulary as tiktoken's mergeable ranks: each token's bytes to its id
    (token_ids[i] for our token i, when given).

    tiktoken finds a token by its bytes, so two merges that make the same bytes (say
    "ab"+"c" and "a"+"bc") cannot both be there; that is refused, not papered over.
    """
    ranks = {}
    for i, data in enumerate(token_bytes(merges)):
        if data in ranks:
            raise ValueError(f"tokens {ranks[data]} and {i} are both {data!r}: tiktoken needs each token's bytes to differ")
        ranks[data] = token_ids[i] if token_ids is not None else i
    return ranks


def save_tiktoken(merges, path, token_ids=None):
    """Write a .tiktoken ranks file: base64 of each token's bytes, a space, its id. The
    file holds neither the split pattern nor the special tokens: pass those to
    tiktoken.Encoding yourself (TIKTOKEN_PATTERNS has the pattern)."""
    ranks = tiktoken_ranks(merges, token_ids)
    lines = [f"{base64.b64encode(data).decode('ascii')} {rank}\n" for data, rank in sorted(ranks.items(), key=lambda t: t[1])]
    Path(path).write_text("".join(lines), encoding="ascii")


def tiktoken_encoding(merges, pattern: str = "default", special_tokens=None, token_ids=None, name: str = "bpe"):
    """A tiktoken Encoding with our merges, split pattern and special tokens (needs tiktoken)."""
    import tiktoken

    return tiktoken.Encoding(name, pat_str=_pattern_for(TIKTOKEN_PATTERNS, pattern),
                             mergeable_ranks=tiktoken_ranks(merges, token_ids),
                             special_tokens=dict(special_tokens or {}))


def read_tiktoken(path) -> dict[bytes, int]:
    """A .tiktoken ranks file as {token bytes: rank}, checked line by line."""
    ranks = {}
    with open(path, "rb") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            parts = line.split()
            try:
                if len(parts) != 2:
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
    our_id = {bytes([b]): b for b in range(256)}
    token_ids = [ranks[bytes([b])] for b in range(256)]
    merges = []
    for data, rank in sorted(ranks.items(), key=lambda item: item[1]):
        if len(data) == 1:
            continue
        if not data:
            raise ValueError(f"the token of rank {rank} is empty")
        parts = [bytes([b]) for b in data]
        while len(parts) > 2:
            pair_ranks = [ranks.get(parts[i] + parts[i + 1], rank) for i in range(len(parts) - 1)]
            best = min(range(len(pair_ranks)), key=pair_ranks.__getitem__)
            if pair_ranks[best] >= rank:
                break
            parts[best:best + 2] = [parts[best] + parts[best + 1]]
        if len(parts) != 2 or parts[0] not in our_id or parts[1] not in our_id:
            raise ValueError(f"the token of rank {rank}, {data!r}, is not two lower-ranked tokens joined")
        our_id[data] = 256 + len(merges)
        merges.append((our_id[parts[0]], our_id[parts[1]]))
        token_ids.append(rank)
    return merges, token_ids


def load_tiktoken(path) -> tuple[list[tuple[int, int]], list[int]]:
    """A .tiktoken file (cl100k_base.tiktoken, say) as (merges, token_ids)."""
    return merges_from_ranks(read_tiktoken(path))


# --- GPT-2's files ---------------------------------------------------------------------

def load_gpt2(vocab_path, merges_path) -> tuple[list[tuple[int, int]], list[int], dict[str, int]]:
    """GPT-2 style vocab.json and merges.txt as (merges, token_ids, special_tokens).

    vocab.json maps each token, written in the byte alphabet, to its id; merges.txt
    has one merge per line, its two tokens separated by a space, after a "#version"
    line. Tokens of the vocabulary that are not bytes or merges are special tokens
    (GPT-2 has one: <|endoftext|>).
    """
    with open(vocab_path, encoding="utf-8") as f:
        vocab = json.load(f)
    if not isinstance(vocab, dict) or not all(isinstance(i, int) for i in vocab.values()):
        raise ValueError(f"{vocab_path}: expected a JSON object from tokens to int ids")
    to_byte = {char: b for b, char in byte_alphabet().items()}

    def as_bytes(token: str, where: str) -> bytes:
        try:
            return bytes(to_byte[c] for c in token)
        except KeyError as e:
            raise ValueError(f"{where}: {token!r} has {e.args[0]!r}, which is not in the byte alphabet") from None

    our_id, token_ids, merges = {}, [], []
    for b, char in byte_alphabet().items():
        if char not in vocab:
            raise ValueError(f"{vocab_path}: the byte {b} ({char!r}) has no token")
        our_id[bytes([b])] = b
        token_ids.append(vocab[char])
    with open(merges_path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.rstrip("\r\n")
            if not line or (number == 1 and line.startswith("#version")):
                continue
            parts = line.split(" ")
            where = f"{merges_path}, line {number}"
            if len(parts) != 2:
                raise ValueError(f"{where}: expected two tokens separated by a space, got {line!r}")
            left, right = as_bytes(parts[0], where), as_bytes(parts[1], where)
            if left not in our_id or right not in our_id:
                raise ValueError(f"{where}: {line!r} uses a token that no earlier line makes")
            if parts[0] + parts[1] not in vocab:
                raise ValueError(f"{where}: {parts[0] + parts[1]!r} is not in {vocab_path}")
            our_id[left + right] = 256 + len(merges)
            merges.append((our_id[left], our_id[right]))
            token_ids.append(vocab[parts[0] + parts[1]])
    used = set(token_ids)
    special_tokens = {token: i for token, i in vocab.items() if i not in used}
    return merges, token_ids, special_tokens


# --- Hugging Face tokenizers ------------------------------------------------------------

def huggingface_json(merges, pattern: str = "default", special_tokens=None, token_ids=None) -> str:
    """A Hugging Face tokenizer.json for our merges: our split rule as a Split pre-
    tokenizer, then the byte alphabet, a BPE model with our ids (token_ids[i] for our
    token i, when given), and special tokens as added tokens. Loads with
    tokenizers.Tokenizer.from_str (or from_file)."""
    alphabet = byte_alphabet()
    vocab_bytes = token_bytes(merges)
    ids = token_ids if token_ids is not None else range(len(vocab_bytes))
    vocab = {_as_alphabet(data, alphabet): i for i, data in zip(ids, vocab_bytes)}
    if len(vocab) != len(vocab_bytes):
        raise ValueError("two merges make the same bytes: a Hugging Face vocabulary needs each token to differ")
    hf_merges = [[_as_alphabet(vocab_bytes[a], alphabet), _as_alphabet(vocab_bytes[b], alphabet)] for a, b in merges]
    added = [{"id": i, "content": s, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True} for s, i in (special_tokens or {}).items()]
    document = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": {
            "type": "Sequence",
            "pretokenizers": [
                {"type": "Split", "pattern": {"Regex": _pattern_for(ONIGURUMA_PATTERNS, pattern)},
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


def save_huggingface(merges, path, pattern: str = "default", special_tokens=None, token_ids=None):
    """Write a Hugging Face tokenizer.json (see huggingface_json)."""
    Path(path).write_text(huggingface_json(merges, pattern, special_tokens, token_ids), encoding="utf-8")


def huggingface_tokenizer(merges, pattern: str = "default", special_tokens=None, token_ids=None):
    """A tokenizers.Tokenizer with our merges (needs tokenizers)."""
    from tokenizers import Tokenizer

    return Tokenizer.from_str(huggingface_json(merges, pattern, special_tokens, token_ids))
