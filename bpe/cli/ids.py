"""Token ids as bpe decode reads them: numbers separated by white space, or JSON lists
one after another, each checked to be an id before it is read."""
import json

from .errors import InputError

# A token id has at most this many digits (ids are below 2**32): a longer number is not
# one, and is refused before int() (whose digit limit would raise) reads it.
MAX_ID_DIGITS = 10


def parse_ids(text: str, name: str, form: str) -> list:
    """The ids in text: ints separated by white space ("text"), or JSON lists of ints
    one after another ("json")."""
    if form == "text":
        ids = []
        for number, line in enumerate(text.splitlines(), 1):
            for word in line.split():
                if not (word.isascii() and word.isdigit()):
                    raise InputError(f"{name}, line {number}: {word[:20]!r} is not a token id (expected ids "
                                     "separated by spaces; --format json reads JSON lists)")
                if len(word) > MAX_ID_DIGITS:
                    raise InputError(f"{name}, line {number}: {word[:20]}... ({len(word):,} digits) is too large "
                                     "to be a token id")
                ids.append(int(word))
        return ids
    decoder, at, ids = json.JSONDecoder(), 0, []
    while True:
        while at < len(text) and text[at].isspace():
            at += 1
        if at == len(text):
            return ids
        try:
            value, at = decoder.raw_decode(text, at)
        except json.JSONDecodeError as e:
            raise InputError(f"{name} is not JSON lists of ids: {e}") from None
        except (ValueError, RecursionError):  # a number past int()'s digit limit; lists nested too deep
            raise InputError(f"{name}: {text[at:at + 20]}... is not a JSON list of token ids (a number too long to "
                             "be an id, or lists nested too deep)") from None
        if not isinstance(value, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in value):
            raise InputError(f"{name}: expected JSON lists of ints, got {json.dumps(value)[:40]}")
        ids.extend(value)
