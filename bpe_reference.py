"""Byte-level BPE in plain Python: the oracle that the C++ module `bpe` is tested against.

Short and slow on purpose. Every function here does the obvious thing, so that when
the C++ and this file disagree, this file is right by definition.

Ids 0..255 are the bytes; merge k (counting from 0) makes token 256 + k.
"""
import re
from collections import Counter

import regex  # the third-party module: \p{L} and \p{N} need it; the standard re has neither

# The split rule: chunks that merges never cross. A run of word bytes (ASCII letters
# and digits, and every byte >= 0x80, so that the bytes of a non-ASCII character stay
# together), or a run of punctuation, each with an optional leading space; or else a
# run of whitespace. Written over bytes, so any byte string splits, valid UTF-8 or not.
CHUNK = re.compile(rb" ?[A-Za-z0-9\x80-\xff]+| ?[^A-Za-z0-9\x80-\xff\s]+|\s+")


# GPT-2's and GPT-4's (cl100k_base) split patterns as published, over characters. The
# library has its own copies (bpe/formats.py), and token_bytes below has its twin there
# too: an oracle must not share code with what it checks, or a mistake in the shared
# code would agree with itself.
GPT2_SPLIT_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
GPT4_SPLIT_PATTERN = r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+"""
# GPT-4o's (o200k_base), as tiktoken's registry has it.
O200K_SPLIT_PATTERN = (
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?"""
    r"""|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?"""
    r"""|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
)
PATTERNS = {"gpt2": regex.compile(GPT2_SPLIT_PATTERN), "gpt4": regex.compile(GPT4_SPLIT_PATTERN),
            "o200k": regex.compile(O200K_SPLIT_PATTERN)}

# What is a letter (\p{L}) or a number (\p{N}) depends on the Unicode that the engine
# running the pattern knows. tiktoken runs it with Rust's regex crate, which knows
# Unicode 16.0; `regex` knows 17.0. So to tiktoken the letters and numbers that 17.0
# added are unassigned code points, and split like punctuation: "\U00011de0123" is
# "\U00011de0", "123" there, not "\U00011de012", "3". GPT-4's ids are tiktoken's
# (and Hugging Face tokenizers, GPT-2's, agrees), so here these characters stand in as
# U+FFFF (a noncharacter, which no Unicode assigns) while the pattern runs, and the
# chunks are cut from the real text at the same places. The list is the one that
# tools/make_unicode_tables.py reads from tiktoken and prints in csrc/unicode_tables.h.
NEWER_THAN_TIKTOKEN = regex.compile(
    r"[\u088F\u0C5C\u0CDC\uA7CE-\uA7CF\uA7D2\uA7D4\uA7F1\U00010940-\U00010959\U00010EC5-\U00010EC7"
    r"\U00011DB0-\U00011DDB\U00011DE0-\U00011DE9\U00016EA0-\U00016EB8\U00016EBB-\U00016ED3"
    r"\U00016FF2-\U00016FF6\U000187F8-\U000187FF\U00018D09-\U00018D1E\U00018D80-\U00018DF2"
    r"\U0001E6C0-\U0001E6DE\U0001E6E0-\U0001E6E2\U0001E6E4-\U0001E6E5\U0001E6E7-\U0001E6ED"
    r"\U0001E6F0-\U0001E6F4\U0001E6FE-\U0001E6FF\U0002B73A-\U0002B73F\U0002CEA2-\U0002CEAD"
    r"\U000323B0-\U00033479"
    # and the marks (\p{M}, which o200k asks about) that 17.0 added
    r"\u1ACF-\u1ADD\u1AE0-\u1AEB\U00010EFA-\U00010EFB\U00011B60-\U00011B67\U0001E6E3\U0001E6E6\U0001E6EE-\U0001E6EF"
    r"\U0001E6F5]"
)
# One letter changed case class in 17.0: U+0295 is Ll to tiktoken, Lo to `regex`
# (o200k tells them apart); U+0296, Ll to both, stands in for it.
RECLASSED_SINCE_TIKTOKEN = {"\u0295": "\u0296"}


def pretokenize(text: bytes, pattern: str = "default") -> list[bytes]:
    """Split text into the chunks that training and encoding work inside.

    "default" is the bytes rule above and takes any bytes; "gpt2" and "gpt4" split the
    decoded characters, so they need valid UTF-8 (else UnicodeDecodeError, a ValueError).
    Any other pattern is a regex, run by `regex` on the characters: its non-empty
    matches are chunks, and so is the text between two of them, which tiktoken would
    drop (the library keeps it, so that no byte is lost).
    """
    if pattern == "default":
        return CHUNK.findall(text)
    chars = text.decode("utf-8")
    as_tiktoken_sees_it = NEWER_THAN_TIKTOKEN.sub("\uffff", chars)
    for then, now in RECLASSED_SINCE_TIKTOKEN.items():
        as_tiktoken_sees_it = as_tiktoken_sees_it.replace(then, now)
    if pattern in PATTERNS:
        return [chars[m.start():m.end()].encode("utf-8") for m in PATTERNS[pattern].finditer(as_tiktoken_sees_it)]
    chunks, done = [], 0
    for m in regex.finditer(pattern, as_tiktoken_sees_it):
        if m.end() == m.start():
            continue
        if m.start() > done:
            chunks.append(chars[done:m.start()].encode("utf-8"))
        chunks.append(chars[m.start():m.end()].encode("utf-8"))
        done = m.end()
    if done < len(chars):
        chunks.append(chars[done:].encode("utf-8"))
    return chunks


def split_special(text: bytes, specials) -> list[tuple[bytes, bool]]:
    """Cut text at special tokens: (piece, is_special) pairs, in order. Where two
    specials start at one place the longer wins, as the alternation tries it first."""
    if not specials:
        return [(text, False)] if text else []
    longest_first = sorted(specials, key=len, reverse=True)
    pattern = re.compile(b"(" + b"|".join(re.escape(s) for s in longest_first) + b")")
    # re.split with a group: even places are the text between, odd places the specials.
    return [(piece, k % 2 == 1) for k, piece in enumerate(pattern.split(text)) if piece]


def merge(ids: list[int], pair: tuple[int, int], idx: int) -> list[int]:
    """Replace every occurrence of `pair` in `ids`, left to right, with `idx`."""
    out = []
    i = 0
    while i < len(ids):
        if i + 1 < len(ids) and (ids[i], ids[i + 1]) == pair:
            out.append(idx)
            i += 2
        else:
            out.append(ids[i])
            i += 1
    return out


def train(text: bytes, num_merges: int, special_tokens=(), pattern: str = "default") -> list[tuple[int, int]]:
    """Learn up to `num_merges` merges from one text (see train_on_texts)."""
    return train_on_texts([text], num_merges, special_tokens, pattern)


def train_on_texts(texts: list[bytes], num_merges: int, special_tokens=(), pattern: str = "default"):
    """Learn up to `num_merges` merges: each time, the most frequent pair becomes a token.

    Each text is split on its own, so no chunk crosses two texts. Pairs are counted
    with overlaps, as zip(ids, ids[1:]) gives them, each chunk weighted by how often it
    occurs. Ties go to the smaller pair, compared as a tuple of ids. Stops early when
    no pair is left (every chunk is a single token). Special tokens (bytes) are cut out
    of the texts first, and never counted.
    """
    chunks = Counter()
    for text in texts:
        for piece, is_special in split_special(text, special_tokens):
            if not is_special:
                chunks.update(pretokenize(piece, pattern))
    # Each distinct chunk is worked on once, along with its count.
    words = [(list(chunk), n) for chunk, n in chunks.items()]
    merges = []
    for k in range(num_merges):
        counts = Counter()
        for ids, n in words:
            for pair in zip(ids, ids[1:]):
                counts[pair] += n
        if not counts:
            break
        pair = min(counts, key=lambda p: (-counts[p], p))
        merges.append(pair)
        words = [(merge(ids, pair, 256 + k), n) for ids, n in words]
    return merges


def encode(text: bytes, merges: list[tuple[int, int]], special_tokens=None, pattern: str = "default") -> list[int]:
    """Encode text chunk by chunk, replaying merges in the order they were learned.
    special_tokens maps each special token's bytes to its id."""
    special_tokens = special_tokens or {}
    ranks = {pair: k for k, pair in enumerate(merges)}
    ids_out = []
    for piece, is_special in split_special(text, special_tokens):
        if is_special:
            ids_out.append(special_tokens[piece])
        else:
            ids_out.extend(encode_ordinary(piece, ranks, pattern))
    return ids_out


def encode_ordinary(text: bytes, ranks: dict[tuple[int, int], int], pattern: str = "default") -> list[int]:
    """Encode text that holds no special token; ranks maps each merge to its order."""
    ids_out = []
    for chunk in pretokenize(text, pattern):
        ids = list(chunk)
        while len(ids) > 1:
            pair = min(zip(ids, ids[1:]), key=lambda p: ranks.get(p, len(ranks)))
            if pair not in ranks:
                break
            ids = merge(ids, pair, 256 + ranks[pair])
        ids_out.extend(ids)
    return ids_out


def token_bytes(merges: list[tuple[int, int]]) -> list[bytes]:
    """The bytes of every token: the 256 single bytes, then each merge's two parts joined."""
    vocab = [bytes([b]) for b in range(256)]
    for a, b in merges:
        vocab.append(vocab[a] + vocab[b])
    return vocab


def decode(ids: list[int], merges: list[tuple[int, int]]) -> bytes:
    """The bytes that `ids` stand for."""
    vocab = token_bytes(merges)
    return b"".join(vocab[i] for i in ids)


def char_spans(text: str, tokens: list[bytes]) -> list[tuple[int, int]]:
    """Each token's span (start, end) in the characters of text, where tokens are the
    bytes of text's tokens in order. A token that begins or ends inside a character
    gets that whole character."""
    char_of_byte = []  # the character each byte of text's UTF-8 belongs to
    for k, char in enumerate(text):
        char_of_byte += [k] * len(char.encode("utf-8"))
    spans, at = [], 0
    for data in tokens:
        spans.append((char_of_byte[at], char_of_byte[at + len(data) - 1] + 1))
        at += len(data)
    assert at == len(char_of_byte), "the tokens are not the text's"
    return spans
