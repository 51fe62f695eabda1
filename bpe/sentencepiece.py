"""SentencePiece .model files (Llama 2, Mistral 7B, Gemma, ...), read without protobuf or
sentencepiece, as BPETokenizer's arguments.

A .model file is one protobuf message, sentencepiece_model.proto's ModelProto. Of it,
what changes a text's ids is read:

- pieces (field 1): each piece's text, score and type (NORMAL, UNKNOWN, CONTROL,
  USER_DEFINED, UNUSED, BYTE); a piece's id is its place in the list;
- trainer_spec (field 2): model_type (only BPE is read: UNIGRAM, WORD and CHAR are
  refused by name), byte_fallback, treat_whitespace_as_suffix (refused where set),
  unk_surface (what decoding gives for the unknown piece), and for `bpe info` the
  vocabulary size and the ids and texts of the unknown, start, end and padding pieces;
- normalizer_spec (field 3): its name, precompiled_charsmap (the normalization as a
  double-array trie, which the engine runs), add_dummy_prefix, remove_extra_whitespaces,
  escape_whitespaces;
- denormalizer_spec (field 5): refused where it holds a charsmap (decoding would run it).

Every other field is training's (input files, coverage, the number of threads ...) or the
self-test's, and is passed over, as protobuf passes over fields it does not know. A
field that is absent has sentencepiece_model.proto's default (a file with no
trainer_spec is, by that default, a Unigram model).

The reader is a small protobuf wire-format reader written for this schema: the nesting
is the schema's (three levels at most, no recursion the file chooses), every varint is
at most 10 bytes, every length is checked against the bytes that remain, and the file's
size is capped (SENTENCEPIECE_MAX_BYTES) before it is read. A file that is not such a
model, or one that asks for what the engine cannot hold, is a ValueError naming the
file and what is wrong.

How the model becomes BPETokenizer's arguments (sentencepiece_arguments) is told beside
that function.
"""
import base64
import contextlib
import gc
import math
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from .core import PathArg
from .formats import name_for_file

# The largest .model file read. Real ones are 0.2 MB (Llama 2) to 5 MB (Gemma 3's 262,144
# pieces); the cap keeps a file from asking for a read of any size.
SENTENCEPIECE_MAX_BYTES = 1 << 28
# The most pieces a model may have: twice Gemma 3's 262,144, the most of any real one.
# Each piece costs about 2 KB and 10 microseconds to load (with its splits), so the cap
# keeps a file from asking for gigabytes and minutes.
SENTENCEPIECE_MAX_PIECES = 1 << 19
# The longest piece (in UTF-8 bytes) that merges: sentencepiece itself refuses a piece of
# 8,000 bytes ("piece is too long"); real ones are a few dozen. Finding a piece's splits
# costs its length times the number of different piece lengths, so the cap bounds it.
SENTENCEPIECE_MAX_PIECE_BYTES = 4096
# The most splits of pieces into two pieces (each a ranked merge, some 100 bytes): a real
# model has about two a piece (Llama 2: 58,980 splits of 31,741 pieces); pieces made to split
# everywhere would ask for gigabytes.
SENTENCEPIECE_MAX_SPLITS = 1 << 22
# The most characters the search for splits may compare (a second or two): a real model
# asks for a million or so (Llama 2: 872,620); pieces made of one letter, of every length, would
# ask for their number times their length squared.
SENTENCEPIECE_MAX_SPLIT_WORK = 1 << 28

# ModelProto.SentencePiece.Type
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6
PIECE_TYPES = {NORMAL: "NORMAL", UNKNOWN: "UNKNOWN", CONTROL: "CONTROL", USER_DEFINED: "USER_DEFINED",
               UNUSED: "UNUSED", BYTE: "BYTE"}
# TrainerSpec.ModelType
UNIGRAM, BPE, WORD, CHAR = 1, 2, 3, 4
MODEL_TYPES = {UNIGRAM: "UNIGRAM", BPE: "BPE", WORD: "WORD", CHAR: "CHAR"}
# What the pieces keep where the text had a space (escape_whitespaces).
SPACE_SYMBOL = "\u2581"
# trainer_spec.unk_surface's default: what sentencepiece decodes the unknown piece to.
DEFAULT_UNK_SURFACE = " \u2047 "

# Protobuf's wire types.
_VARINT, _FIXED64, _LENGTH, _START_GROUP, _END_GROUP, _FIXED32 = 0, 1, 2, 3, 4, 5


@dataclass(frozen=True)
class Piece:
    """One piece of a model: its text, its score (higher merges first) and its type
    (NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED or BYTE)."""
    piece: str
    score: float
    type: int


@dataclass(frozen=True)
class TrainerSpec:
    """The fields of trainer_spec that encoding, decoding or `bpe info` read, with
    sentencepiece_model.proto's defaults."""
    model_type: int = UNIGRAM
    vocab_size: int = 8000
    byte_fallback: bool = False
    treat_whitespace_as_suffix: bool = False
    unk_id: int = 0
    bos_id: int = 1
    eos_id: int = 2
    pad_id: int = -1
    unk_piece: str = "<unk>"
    bos_piece: str = "<s>"
    eos_piece: str = "</s>"
    pad_piece: str = "<pad>"
    unk_surface: str = DEFAULT_UNK_SURFACE


@dataclass(frozen=True)
class NormalizerSpec:
    """normalizer_spec (or denormalizer_spec), with sentencepiece_model.proto's
    defaults. precompiled_charsmap is the normalization itself (empty: none);
    name says which one it was made from (nmt_nfkc, identity, ...)."""
    name: str = ""
    precompiled_charsmap: bytes = b""
    add_dummy_prefix: bool = True
    remove_extra_whitespaces: bool = True
    escape_whitespaces: bool = True


@dataclass(frozen=True)
class SentencePieceModel:
    """What a .model file holds that this library reads."""
    pieces: tuple[Piece, ...]
    trainer_spec: TrainerSpec
    normalizer_spec: NormalizerSpec
    denormalizer_spec: NormalizerSpec | None


class _Malformed(ValueError):
    """What is wrong with the bytes, named by the caller with the file."""


# --- the wire format ------------------------------------------------------------------


def _varint(data: bytes, at: int, end: int) -> tuple[int, int]:
    """(value, position after it) of the varint at data[at:]: at most 10 bytes, the
    tenth holding the 64th bit only."""
    if at >= end:
        raise _Malformed(f"it ends inside a number (byte {at:,})")
    byte = data[at]
    if byte < 0x80:
        return byte, at + 1
    value, shift, start = byte & 0x7F, 7, at
    at += 1
    while True:
        if at >= end:
            raise _Malformed(f"it ends inside a number (byte {start:,})")
        byte = data[at]
        at += 1
        if shift == 63 and byte > 1:
            raise _Malformed(f"the number at byte {start:,} is longer than 64 bits")
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, at
        shift += 7


def _fields(data: bytes, start: int, end: int, what: str) -> Iterator[tuple[int, int, Any]]:
    """(field number, wire type, value) of each field of the message at data[start:end]:
    an int for a varint or fixed field, (start, end) of the bytes of a length-delimited
    one."""
    at = start
    value: Any
    while at < end:
        key, at = _varint(data, at, end)
        number, wire = key >> 3, key & 7
        if number == 0 or number >= 1 << 29:
            raise _Malformed(f"{what} has a field numbered {number} (byte {at:,}), which protobuf does not allow")
        if wire == _VARINT:
            value, at = _varint(data, at, end)
        elif wire == _LENGTH:
            length, at = _varint(data, at, end)
            if length > end - at:
                raise _Malformed(f"{what}'s field {number} is {length:,} bytes long, but only {end - at:,} "
                                 f"remain (byte {at:,}): the file is truncated or corrupt")
            value, at = (at, at + length), at + length
        elif wire == _FIXED32:
            if end - at < 4:
                raise _Malformed(f"{what}'s field {number} ends past its message (byte {at:,})")
            value, at = int.from_bytes(data[at:at + 4], "little"), at + 4
        elif wire == _FIXED64:
            if end - at < 8:
                raise _Malformed(f"{what}'s field {number} ends past its message (byte {at:,})")
            value, at = int.from_bytes(data[at:at + 8], "little"), at + 8
        else:
            # Groups (3, 4) are proto1's, and no field of this schema is one; 6 and 7 are not wire types.
            raise _Malformed(f"{what}'s field {number} has wire type {wire} (byte {at:,}), which no "
                             "SentencePiece model uses")
        yield number, wire, value


def _expect(what: str, number: int, wire: int, wanted: int) -> None:
    if wire != wanted:
        names = {_VARINT: "a varint", _FIXED64: "8 bytes", _LENGTH: "length-delimited bytes", _FIXED32: "4 bytes"}
        raise _Malformed(f"{what}'s field {number} is {names[wire]}, where the schema has {names[wanted]}")


def _int32(value: int) -> int:
    """A varint read as protobuf's int32 (and enum): its low 32 bits, signed."""
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def _text(data: bytes, span: tuple[int, int], what: str) -> str:
    try:
        return data[span[0]:span[1]].decode("utf-8")
    except UnicodeDecodeError as e:
        raise _Malformed(f"{what} is not UTF-8 (byte {span[0] + e.start:,})") from None


# --- the schema -------------------------------------------------------------------------
# Each message is read by its own function, which knows its fields' numbers and types:
# the nesting is fixed here, whatever the file says. A singular message field given more
# than once is merged, as protobuf merges it (its parts read as one); a scalar given more
# than once is its last value.


def _piece(data: bytes, start: int, end: int, index: int) -> Piece:
    # The layout sentencepiece writes, read directly: the text (under 128 bytes), the
    # score, and the type or nothing. Anything else is read field by field below.
    length = data[start + 1] if 7 < end - start <= len(data) - start else 0x80
    if length < 0x80 and data[start] == 0x0A and end - start - length in (7, 9) and data[start + 2 + length] == 0x15:
        after = start + 7 + length
        if after == end or (data[after] == 0x18 and data[after + 1] < 0x80):
            try:
                usual = data[start + 2:start + 2 + length].decode("utf-8")
            except UnicodeDecodeError:
                usual = ""  # named below
            if usual:
                value = struct.unpack_from("<f", data, start + 3 + length)[0]
                usual_kind = NORMAL if after == end else data[after + 1]
                if usual_kind in PIECE_TYPES and not math.isnan(value):
                    return Piece(usual, value, usual_kind)
    what = f"piece {index}"
    text, score, kind = None, 0.0, NORMAL
    for number, wire, value in _fields(data, start, end, what):
        if number == 1:
            _expect(what, number, wire, _LENGTH)
            text = _text(data, value, f"{what}'s text")
        elif number == 2:
            _expect(what, number, wire, _FIXED32)
            score = struct.unpack("<f", value.to_bytes(4, "little"))[0]
        elif number == 3:
            _expect(what, number, wire, _VARINT)
            kind = _int32(value)
    if not text:
        raise _Malformed(f"{what} has no text (sentencepiece refuses an empty piece)")
    if kind not in PIECE_TYPES:
        raise _Malformed(f"{what} ({text!r}) has type {kind}, which is none of sentencepiece's "
                         f"({', '.join(f'{n} {name}' for n, name in PIECE_TYPES.items())})")
    if math.isnan(score):
        raise _Malformed(f"{what} ({text!r}) has the score NaN, which orders no merge")
    return Piece(text, score, kind)


# Each spec's fields: number -> (attribute, kind); kind "int32", "bool", "str" or "bytes".
_TRAINER_FIELDS = {3: ("model_type", "int32"), 4: ("vocab_size", "int32"), 35: ("byte_fallback", "bool"),
                   24: ("treat_whitespace_as_suffix", "bool"), 40: ("unk_id", "int32"), 41: ("bos_id", "int32"),
                   42: ("eos_id", "int32"), 43: ("pad_id", "int32"), 45: ("unk_piece", "str"),
                   46: ("bos_piece", "str"), 47: ("eos_piece", "str"), 48: ("pad_piece", "str"),
                   44: ("unk_surface", "str")}
_NORMALIZER_FIELDS = {1: ("name", "str"), 2: ("precompiled_charsmap", "bytes"), 3: ("add_dummy_prefix", "bool"),
                      4: ("remove_extra_whitespaces", "bool"), 5: ("escape_whitespaces", "bool")}


def _spec(data: bytes, spans: list, fields: dict, what: str) -> dict:
    """The fields of a spec message given in parts (spans), as {attribute: value}."""
    values: dict[str, Any] = {}
    for start, end in spans:
        for number, wire, value in _fields(data, start, end, what):
            if number not in fields:
                continue
            name, kind = fields[number]
            _expect(f"{what} ({name})", number, wire, _LENGTH if kind in ("str", "bytes") else _VARINT)
            if kind == "int32":
                values[name] = _int32(value)
            elif kind == "bool":
                values[name] = value != 0
            elif kind == "str":
                values[name] = _text(data, value, f"{what}.{name}")
            else:
                values[name] = bytes(data[value[0]:value[1]])
    return values


def parse_model(data: bytes, where: object = "the model") -> SentencePieceModel:
    """The model that data, a .model file's bytes, holds; ValueError names `where` and
    what is wrong."""
    try:
        pieces: list[Piece] = []
        trainer, normalizer, denormalizer = [], [], []
        for number, wire, value in _fields(data, 0, len(data), "the model"):
            if number in (1, 2, 3, 5):
                _expect("the model", number, wire, _LENGTH)
            if number == 1:
                if len(pieces) >= SENTENCEPIECE_MAX_PIECES:
                    raise _Malformed(f"it has more than {SENTENCEPIECE_MAX_PIECES:,} pieces "
                                     "(SENTENCEPIECE_MAX_PIECES; real models have at most 262,144)")
                pieces.append(_piece(data, value[0], value[1], len(pieces)))
            elif number == 2:
                trainer.append(value)
            elif number == 3:
                normalizer.append(value)
            elif number == 5:
                denormalizer.append(value)
        trainer_spec = TrainerSpec(**_spec(data, trainer, _TRAINER_FIELDS, "trainer_spec"))
        normalizer_spec = NormalizerSpec(**_spec(data, normalizer, _NORMALIZER_FIELDS, "normalizer_spec"))
        denormalizer_spec = (NormalizerSpec(**_spec(data, denormalizer, _NORMALIZER_FIELDS, "denormalizer_spec"))
                             if denormalizer else None)
    except _Malformed as e:
        raise ValueError(f"{where} is not a readable SentencePiece model: {e}") from None
    if not pieces:
        raise ValueError(f"{where} is not a SentencePiece model: it has no pieces")
    return SentencePieceModel(tuple(pieces), trainer_spec, normalizer_spec, denormalizer_spec)


def read_model(path: PathArg) -> SentencePieceModel:
    """The model in the .model file at path (see parse_model)."""
    path = Path(path)
    size = os.stat(path).st_size
    if size > SENTENCEPIECE_MAX_BYTES:
        raise ValueError(f"{path} is {size:,} bytes: a SentencePiece model here is at most "
                         f"{SENTENCEPIECE_MAX_BYTES:,} (real ones are a few MB)")
    with open(path, "rb") as f:
        data = f.read(SENTENCEPIECE_MAX_BYTES + 1)
    if len(data) > SENTENCEPIECE_MAX_BYTES:
        raise ValueError(f"{path} is over {SENTENCEPIECE_MAX_BYTES:,} bytes: a SentencePiece model here is not")
    return parse_model(data, path)


def looks_like_model(data: bytes) -> bool:
    """Whether data (a file's first bytes, a few hundred will do) starts as a
    SentencePiece model does: its first field is a piece (field 1, a message) whose own
    first field is a piece's text in UTF-8. Text files do not: they would have to start
    with a newline, a length and a newline again."""
    if data[:1] != b"\x0a":
        return False
    try:
        length, at = _varint(data, 1, len(data))
        if data[at:at + 1] != b"\x0a":
            return False
        text_length, text_at = _varint(data, at + 1, len(data))
    except _Malformed:
        return False
    if not 0 < text_length < length or text_at + text_length > len(data):
        return False
    try:
        data[text_at:text_at + text_length].decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


# --- what the engine can hold ----------------------------------------------------------

_NOT_BPE = {UNIGRAM: "a Unigram model: it picks the likeliest split of the text by the pieces' scores, not merges",
            WORD: "a word model: it splits the text at spaces and looks each word up whole",
            CHAR: "a character model: every character is a piece of its own"}


def byte_piece(b: int) -> str:
    """The text of the byte piece for byte b, as sentencepiece writes it: <0x41>."""
    return f"<0x{b:02X}>"


_BYTE_VALUES = {byte_piece(b): b for b in range(256)}


def check_supported(model: SentencePieceModel, where: object = "the model") -> None:
    """ValueError naming what of the model the engine cannot hold, or what sentencepiece
    itself refuses to load (which the message says)."""
    trainer, normalizer = model.trainer_spec, model.normalizer_spec
    if trainer.model_type != BPE:
        kind = _NOT_BPE.get(trainer.model_type,
                            f"of model_type {trainer.model_type}, which sentencepiece does not know")
        raise ValueError(f"{where} is {kind}; only BPE models (trainer_spec.model_type BPE) are read here")
    if trainer.treat_whitespace_as_suffix:
        raise ValueError(f"{where} sets trainer_spec.treat_whitespace_as_suffix (the space symbol ends a piece "
                         "instead of starting one), which is not supported")
    if model.denormalizer_spec is not None and model.denormalizer_spec.precompiled_charsmap:
        raise ValueError(f"{where} has a denormalizer (denormalizer_spec with a charsmap, run over decoded text), "
                         "which is not supported")
    _check_charsmap(normalizer.precompiled_charsmap, where)
    seen: dict[str, int] = {}
    unknown = [i for i, p in enumerate(model.pieces) if p.type == UNKNOWN]
    if len(unknown) != 1:
        raise ValueError(f"{where} has {len(unknown)} unknown pieces (type UNKNOWN): sentencepiece needs exactly one"
                         + (f", and it has them at ids {unknown[:5]}" if unknown else ""))
    byte_count = 0
    for i, p in enumerate(model.pieces):
        if p.piece in seen:
            raise ValueError(f"{where}: pieces {seen[p.piece]} and {i} are both {p.piece!r}: each piece needs a text "
                             "of its own (sentencepiece refuses the model)")
        seen[p.piece] = i
        if p.type == BYTE:
            if not trainer.byte_fallback:
                raise ValueError(f"{where}: piece {i} ({p.piece!r}) is a byte piece, but trainer_spec.byte_fallback "
                                 "is false (sentencepiece refuses the model)")
            if p.piece not in _BYTE_VALUES:
                raise ValueError(f"{where}: piece {i} ({p.piece!r}) is a byte piece, which must be <0x00> to <0xFF>")
            byte_count += 1
        elif p.type in (NORMAL, UNUSED) and len(p.piece) > SENTENCEPIECE_MAX_PIECE_BYTES // 4 \
                and len(p.piece.encode("utf-8")) > SENTENCEPIECE_MAX_PIECE_BYTES:
            raise ValueError(f"{where}: piece {i} ({p.piece[:20]!r}...) is {len(p.piece.encode('utf-8')):,} bytes long: "
                             f"a piece that merges is at most {SENTENCEPIECE_MAX_PIECE_BYTES:,} here "
                             "(SENTENCEPIECE_MAX_PIECE_BYTES; sentencepiece refuses 8,000)")
        elif p.type == UNUSED and len(p.piece) == 1:
            raise ValueError(f"{where}: piece {i} ({p.piece!r}) is an UNUSED piece of one character, which "
                             "sentencepiece merges as a piece but gives as an unknown one: not supported")
        elif p.type in (CONTROL, UNKNOWN) and len(p.piece) == 1:
            # sentencepiece looks a one-character symbol up among these too, and would give
            # this id for the character in text, which no special token of ours is.
            raise ValueError(f"{where}: piece {i} ({p.piece!r}) is a {PIECE_TYPES[p.type]} piece of one character, "
                             "which sentencepiece gives for that character in text: not supported")
    if trainer.byte_fallback and byte_count != 256:
        raise ValueError(f"{where} sets trainer_spec.byte_fallback but has {byte_count} byte pieces, not the 256 "
                         "<0x00> to <0xFF> (sentencepiece refuses the model)")


def _check_charsmap(charsmap: bytes, where: object) -> None:
    """The charsmap's frame, as sentencepiece reads it: a 4-byte little-endian size of
    the trie, the trie (4-byte units), then the replacement texts. The engine checks the
    trie itself as it reads it."""
    if not charsmap:
        return
    if len(charsmap) <= 4:
        raise ValueError(f"{where}: normalizer_spec.precompiled_charsmap is {len(charsmap)} bytes, too short to hold "
                         "its trie's size")
    trie_size = int.from_bytes(charsmap[:4], "little")
    if trie_size >= len(charsmap) - 4 or trie_size % 4:
        raise ValueError(f"{where}: normalizer_spec.precompiled_charsmap says its trie is {trie_size:,} bytes, but "
                         f"it holds {len(charsmap) - 4:,} after the size (and the trie is whole 4-byte units before "
                         "the replacement texts)")


# --- as BPETokenizer's arguments ----------------------------------------------------------
# sentencepiece's BPE (bpe_model.cc) starts from the characters of the normalized text (a
# user-defined piece found in it is one symbol that never merges), and merges the
# neighbouring pair whose joined text is a piece of highest score, the leftmost of equal
# scores, until none is; a symbol that is no piece is then its UTF-8 bytes as byte pieces
# (byte_fallback), or the unknown piece, a run of them one. In the engine's terms
# (the rules dict of bpe.huggingface, with char_merges):
#   - our ids 0-255 are the byte pieces <0x00>..<0xFF> (token_ids gives their ids; a model
#     without byte_fallback gets free ids past its pieces, which no text reaches); no base
#     merges; the special tokens are the control and unknown pieces (special added tokens:
#     never found in text unless allowed), in id order; every other piece is an unmade
#     token, numbered after them in id order, the user-defined ones added tokens too
#     (ordinary text, found whole), which no merge makes or uses; the decoder drops the
#     special tokens (drop_special) as sentencepiece's decode drops control pieces, and the
#     user-defined pieces, not special, decode to their text;
#   - ranked_merges: every split of a piece into two pieces, [left, right, made, rank],
#     rank being the dense rank of the made piece's score, highest first;
#   - the normalizer: the charsmap, then sentencepiece's own whitespace steps; no split;
#   - the decoder: "▁" back to a space, the first one dropped where the normalizer put it.


def sentencepiece_arguments(model: SentencePieceModel, where: object = "the model") -> dict:
    """BPETokenizer's arguments (merges, special_tokens, token_ids, rules) for a BPE
    model; ValueError (check_supported) for one the engine cannot hold."""
    check_supported(model, where)
    pieces, trainer, normalizer = model.pieces, model.trainer_spec, model.normalizer_spec
    mergeable = {p.piece: i for i, p in enumerate(pieces) if p.type in (NORMAL, UNUSED)}
    pieces_by_text = {p.piece for p in pieces}
    # The characters of pieces that are no piece themselves (a model trained here has none).
    lone = {c for text in mergeable for c in text} - pieces_by_text
    byte_ids = {_BYTE_VALUES[p.piece]: i for i, p in enumerate(pieces) if p.type == BYTE}
    token_ids = [byte_ids.get(b, len(pieces) + b) for b in range(256)]
    specials = [i for i, p in enumerate(pieces) if p.type in (CONTROL, UNKNOWN)]
    unmade = [i for i, p in enumerate(pieces) if p.type in (NORMAL, UNUSED, USER_DEFINED)]
    # Our ids of the pieces that merge (a user-defined piece is found whole, never merged).
    our_id = {pieces[i].piece: 256 + len(specials) + k for k, i in enumerate(unmade) if pieces[i].type != USER_DEFINED}
    made_by: list[tuple[int, list]] = []  # (piece, the two pieces (our ids) of each split) of the pieces a merge makes
    # A split is looked for only where both parts have a length some piece has: the work
    # for a piece is its length times the number of different lengths, not its length
    # squared (with SENTENCEPIECE_MAX_PIECE_BYTES, at most that times the pieces' bytes).
    lengths = sorted({len(text) for text in mergeable})
    length_set = set(lengths)
    count = work = 0
    for i in unmade:
        text = pieces[i].piece
        if pieces[i].type == USER_DEFINED:
            continue
        if lone and not lone.isdisjoint(text):
            work += _refuse_lone(text, i, mergeable, pieces_by_text, lengths, where)
        splits = []
        for k in lengths:
            if k >= len(text):
                break
            if len(text) - k in length_set:
                work += len(text)
                left, right = our_id.get(text[:k]), our_id.get(text[k:])
                if left is not None and right is not None:
                    splits.append((left, right))
        if work > SENTENCEPIECE_MAX_SPLIT_WORK:
            raise ValueError(f"{where}: finding how its pieces split into pieces compares more than "
                             f"{SENTENCEPIECE_MAX_SPLIT_WORK:,} characters (SENTENCEPIECE_MAX_SPLIT_WORK; real models "
                             "need about a million): not supported")
        if splits and pieces[i].type == UNUSED:
            # sentencepiece makes it, then gives the two pieces that made it in its place: ids
            # that a merge list cannot say.
            cut = next(k for k in lengths if text[:k] in mergeable and text[k:] in mergeable)
            raise ValueError(f"{where}: piece {i} ({text!r}) is UNUSED, but {text[:cut]!r} and {text[cut:]!r} "
                             "make it, and sentencepiece would give those two in its place: not supported")
        if splits:
            made_by.append((i, splits))
            count += len(splits)
            if count > SENTENCEPIECE_MAX_SPLITS:
                raise ValueError(f"{where}: its pieces split into pieces in more than {SENTENCEPIECE_MAX_SPLITS:,} "
                                 "ways (each a merge; SENTENCEPIECE_MAX_SPLITS): not supported")
    ranks = {score: r for r, score in enumerate(sorted({pieces[i].score for i, _ in made_by}, reverse=True))}
    ranked = [[left, right, our_id[pieces[i].piece], ranks[pieces[i].score]]
              for i, splits in made_by for left, right in splits]
    ranked.sort(key=lambda merge: merge[3])  # stable: in id order within a rank
    unk_id = next(i for i, p in enumerate(pieces) if p.type == UNKNOWN)
    added = [{"content": pieces[i].piece, "id": i, "special": pieces[i].type != USER_DEFINED,
              "normalized": pieces[i].type == USER_DEFINED, "lstrip": False, "rstrip": False, "single_word": False}
             for i in specials + [i for i in unmade if pieces[i].type == USER_DEFINED]]
    steps: list[dict] = []
    if normalizer.precompiled_charsmap:
        steps.append({"type": "Precompiled",
                      "charsmap": base64.b64encode(normalizer.precompiled_charsmap).decode("ascii")})
    steps.append({"type": "SentencePiece", "add_dummy_prefix": normalizer.add_dummy_prefix,
                  "remove_extra_whitespaces": normalizer.remove_extra_whitespaces,
                  "escape_whitespaces": normalizer.escape_whitespaces})
    # sentencepiece's decoder drops the space symbol that begins the first piece where the
    # normalizer may have put one there (add_dummy_prefix); where no text may begin with a
    # space (remove_extra_whitespaces), that of every piece until some text has come out
    # (strip_each); whatever escape_whitespaces says.
    strip_each = normalizer.remove_extra_whitespaces
    rules = {
        "normalizer": steps,
        "pre_tokenizer": [],
        "added_tokens": added,
        "ignore_merges": False,
        "char_merges": {"byte_fallback": trainer.byte_fallback, "unk_id": unk_id, "fuse_unk": True},
        "ranked_merges": ranked,
        "unmade_tokens": {pieces[i].piece: i for i in unmade},
        "decoder": {"replace": [SPACE_SYMBOL, " "], "strip_start": int(normalizer.add_dummy_prefix and not strip_each),
                    "strip_each": strip_each, "unk_text": trainer.unk_surface, "drop_special": True},
    }
    return {"merges": [], "special_tokens": [pieces[i].piece for i in specials],
            "token_ids": token_ids + specials, "rules": rules}


def _refuse_lone(text: str, i: int, mergeable: dict, pieces_by_text: set, lengths: list, where: object) -> int:
    """ValueError where sentencepiece can make piece i from a character that is no piece
    (it merges the text's characters, pieces or not; the engine starts from pieces); else
    the characters compared."""
    # Only a part that is a piece (of one of `lengths`, sorted) or one character can be
    # held: the lengths to try.
    lengths = [1, *lengths] if lengths[:1] != [1] else lengths
    held = set(lengths)
    work = 0
    for k in lengths:
        if k >= len(text):
            break
        if len(text) - k not in held:
            continue
        work += len(text)
        left, right = text[:k], text[k:]
        if _part(left, mergeable, pieces_by_text) and _part(right, mergeable, pieces_by_text):
            if left not in mergeable or right not in mergeable:
                lone = left if left not in mergeable else right
                raise ValueError(f"{where}: piece {i} ({text!r}) is made of {left!r} and {right!r}, but {lone!r} is "
                                 "no piece of the model: not supported")
    return work


def _part(text: str, mergeable: dict, pieces_by_text: set) -> bool:
    """Whether sentencepiece can hold text as a symbol that merges: a piece that may
    merge, or a single character that is no piece at all."""
    return text in mergeable or (len(text) == 1 and text not in pieces_by_text)


def load_sentencepiece(path: PathArg) -> dict:
    """BPETokenizer's arguments from the .model file at path, with its name."""
    with collector_paused():
        return {**sentencepiece_arguments(read_model(path), path), "name": name_for_file(path)}


@contextlib.contextmanager
def collector_paused():
    """Python's cycle collector off while a model's millions of small lists and tuples
    are made (none in a cycle): else each few thousand of them start a collection that
    walks them all, a third of loading a large model."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
