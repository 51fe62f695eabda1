"""Tokens as the command shows them: their bytes as text (\\xNN where a token holds part
of a character), the columns they take, and the longest and whole-word ones of a
vocabulary."""
import unicodedata


def visible(data: bytes) -> str:
    """A token's text for showing: bytes that are not whole UTF-8 characters (a token
    can end in the middle of one) as \\xNN, a line break as a visible ↵ before it, and a
    carriage return as ␍."""
    return data.decode("utf-8", errors="backslashreplace").replace("\r", "␍").replace("\n", "↵\n")


def width(text: str) -> int:
    """Columns that text takes on a terminal: wide East Asian characters take two,
    combining marks none."""
    return sum(0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def bytes_text(data: bytes) -> str:
    return data.decode("utf-8", errors="backslashreplace")


def tokens_text(tok, ids) -> str:
    return " ".join(repr(bytes_text(tok.decode_single_token_bytes(i))) for i in ids)


def tokens_after_merges(tok) -> int:
    """How many tokens come after the 256 bytes and the merges: the special tokens, or,
    under a tokenizer.json's rules, the added tokens that no merge makes, special or not.
    `bpe info` and `bpe convert` count the tokens as 256 + merges + these."""
    return len(tok.special_tokens) if tok.rules is None else len(tok.state()["special_tokens"])


def merge_ids(tok):
    return (tok.token_ids[256 + k] if tok.token_ids else 256 + k for k in range(len(tok.merges)))


def longest_tokens(tok, n):
    """The n longest merged tokens, as (bytes, text), longest first, then earliest."""
    tokens = [(len(data), bytes_text(data)) for data in map(tok.decode_single_token_bytes, merge_ids(tok))]
    order = sorted(range(len(tokens)), key=lambda k: (-tokens[k][0], k))
    return [tokens[k] for k in order[:n]]


def is_whole_word(data: bytes) -> bool:
    """A token that is a space and then letters only (' once'): the split patterns put
    the space before a word into the word's chunk, so such a token starts a word, and
    most are a whole word; a piece from inside a word ('ing') has no space."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return len(text) > 1 and text[0] == " " and text[1:].isalpha()
