"""Writes csrc/nfc_tables.h: what NFC needs to know of each code point (canonical
combining class, canonical decomposition, which pairs compose, the quick check), as
compact tables for csrc/normalize.h.

    python tools/make_nfc_tables.py          # rewrites csrc/nfc_tables.h
    python tools/make_nfc_tables.py --check  # fails if the header is out of date

Whose Unicode: NFC runs for a tokenizer.json whose normalizer is NFC, so a character's
normalization is whatever Hugging Face's `tokenizers` does with it. Its engine (the
unicode-normalization-alignments crate) carries Unicode 9.0's data, older than
Python's `unicodedata`: characters added since (the Dives Akuru U+11938 composite, the
marks of Masaram Gondi, U+1DF6 ...) are, to it, starters without a decomposition.
Tables of a newer Unicode would be right by the book and wrong for the files.

How: the values (combining class, decomposition mapping) come from Python's
`unicodedata`; Unicode never changes them for a character once assigned, so only
which characters `tokenizers` knows has to be asked of it. One NFD call over every
code point (each behind a new line, which no character reorders or composes across)
gives its full decomposition of each; one NFC call gives which of those compose back
(the composites that are not excluded); one NFD call of each combining mark behind a
mark of another class tells whether it reorders, that is, whether its class is known.
Every full decomposition here is then checked equal to the one `tokenizers` gives.
Hangul syllables are left to the code (their decomposition is arithmetic).

Layout: a byte per code point naming its kind (combining class and flags), in blocks;
identical blocks are stored once and a first-level table maps each block number to its
stored block. Decompositions and composition pairs are sorted arrays for a binary
search, looked up only where a kind's flags say there is something to find.
"""
import unicodedata
from pathlib import Path

import regex

from cpp_header import header_main, rows

try:
    from tokenizers import normalizers
except ImportError:
    normalizers = None

HEADER = Path(__file__).resolve().parent.parent / "csrc" / "nfc_tables.h"

# Every code point that can be text but the line feed (the probes' separator), in order.
PROBED = [cp for cp in range(0x110000) if not 0xD800 <= cp <= 0xDFFF and cp != 0x0A]

HANGUL_S, HANGUL_S_COUNT = 0xAC00, 11172
HANGUL_L, HANGUL_V, HANGUL_T = 0x1100, 0x1161, 0x11A7
HANGUL_V_COUNT, HANGUL_T_COUNT = 21, 28

# Flags of a kind, beside its combining class (the names are csrc/normalize.h's).
NO = 1        # never in NFC text: NFC_Quick_Check=No
MAYBE = 2     # composes with a character before it: NFC_Quick_Check=Maybe
DECOMP = 4    # has a canonical decomposition in kDecompositions (Hangul syllables: not flagged)
BOUNDARY = 8  # nothing before it reorders or composes with it or across it: NFC of a text is
              # the NFC of its pieces cut before such characters, each on its own

# A script that first appeared in each Unicode version, with combining marks: the newest
# one whose marks `tokenizers` reorders tells which Unicode its tables are (it gives no
# version). Python's unicodedata must know the script's marks too.
VERSION_PROBES = [
    ("8.0", "Ahom"),
    ("9.0", "Adlam"),
    ("10.0", "Masaram_Gondi"),
    ("11.0", "Dogra"),
    ("12.0", "Nandinagari"),
    ("13.0", "Dives_Akuru"),
    ("14.0", "Old_Uyghur"),
]


def hangul_decomposition(cp: int) -> list[int]:
    index = cp - HANGUL_S
    out = [HANGUL_L + index // (HANGUL_V_COUNT * HANGUL_T_COUNT),
           HANGUL_V + index % (HANGUL_V_COUNT * HANGUL_T_COUNT) // HANGUL_T_COUNT]
    if index % HANGUL_T_COUNT:
        out.append(HANGUL_T + index % HANGUL_T_COUNT)
    return out


def is_hangul_syllable(cp: int) -> bool:
    return HANGUL_S <= cp < HANGUL_S + HANGUL_S_COUNT


def ask_each(normalizer, cps: list[int], probe=chr) -> list[str]:
    """normalizer's output for each probe text, one call for all of them."""
    out = normalizer.normalize_str("\n".join(probe(cp) for cp in cps)).split("\n")
    assert len(out) == len(cps)
    return out


def read_tables():
    nfd, nfc = normalizers.NFD(), normalizers.NFC()
    tk_nfd = dict(zip(PROBED, ask_each(nfd, PROBED)))
    tk_nfc = dict(zip(PROBED, ask_each(nfc, PROBED)))

    # The mapping (one level) of each character that tokenizers decomposes.
    mapping = {}
    dropped_mappings = []
    for cp in PROBED:
        text = unicodedata.decomposition(chr(cp))
        known = tk_nfd[cp] != chr(cp)
        if text and not text.startswith("<") and not is_hangul_syllable(cp):
            if known:
                mapping[cp] = [int(h, 16) for h in text.split()]
            else:
                dropped_mappings.append(cp)
        else:
            assert not known or is_hangul_syllable(cp), f"tokenizers decomposes U+{cp:04X}, unicodedata does not"

    # Combining classes: a mark of class c behind U+0345 (class 240) moves before it when
    # tokenizers knows the mark as a non-starter; U+0345 itself, behind U+0334 (class 1).
    marks = [cp for cp in PROBED if unicodedata.combining(chr(cp))]

    def probe(cp):
        return "\u0345" + chr(cp) if unicodedata.combining(chr(cp)) < 240 else chr(cp) + "\u0334"

    ccc = {}
    dropped_classes = []
    for cp, out in zip(marks, ask_each(nfd, marks, probe)):
        if out != probe(cp):
            ccc[cp] = unicodedata.combining(chr(cp))
        else:
            dropped_classes.append(cp)

    def full(cp: int) -> list[int]:
        if is_hangul_syllable(cp):
            return hangul_decomposition(cp)
        if cp not in mapping:
            return [cp]
        return [d for part in mapping[cp] for d in full(part)]  # depth: at most 4

    decompositions = {}
    for cp in PROBED:
        d = full(cp)
        # tokenizers' NFD also puts the marks in order; a full decomposition is in order already
        assert "".join(map(chr, d)) == tk_nfd[cp], f"U+{cp:04X}: tokenizers decomposes it otherwise"
        if cp in mapping:
            decompositions[cp] = d

    # Composites: the decomposed characters that NFC gives back whole. The rest (singletons,
    # those whose mapping starts with a non-starter, the composition exclusions) never
    # appear in NFC text.
    pairs = {}
    no = set()
    for cp in mapping:
        if tk_nfc[cp] == chr(cp):
            assert len(mapping[cp]) == 2 and ccc.get(cp, 0) == 0, f"U+{cp:04X}"
            pairs[tuple(mapping[cp])] = cp
        else:
            no.add(cp)
    for cp in PROBED:
        if cp not in mapping:
            assert tk_nfc[cp] == chr(cp) or is_hangul_syllable(cp), f"tokenizers' NFC changes U+{cp:04X}"

    maybe = {second for _, second in pairs}
    maybe |= set(range(HANGUL_V, HANGUL_V + HANGUL_V_COUNT)) | set(range(HANGUL_T + 1, HANGUL_T + HANGUL_T_COUNT))

    version = "older than 8.0"
    for name, script in VERSION_PROBES:
        members = [cp for cp in marks if regex.fullmatch(rf"\p{{Script={script}}}", chr(cp))]
        assert members, f"unicodedata knows no mark of {script}: probe another script"
        if not any(cp in ccc for cp in members):
            break
        version = name
    if version == VERSION_PROBES[-1][0]:
        version += " or newer"
    return ccc, decompositions, pairs, no, maybe, version, dropped_mappings, dropped_classes


def kinds_of(ccc, decompositions, no, maybe):
    """Each code point's kind number, and the kinds as (combining class, flags)."""
    kinds = {(0, BOUNDARY): 0}
    values = bytearray(0x110000)
    for cp in range(0x110000):
        c = ccc.get(cp, 0)
        flags = (NO if cp in no else 0) | (MAYBE if cp in maybe else 0) | (DECOMP if cp in decompositions else 0)
        first = decompositions[cp][0] if cp in decompositions else cp
        if c == 0 and not flags & (NO | MAYBE) and ccc.get(first, 0) == 0 and first not in maybe:
            flags |= BOUNDARY
        values[cp] = kinds.setdefault((c, flags), len(kinds))
    assert len(kinds) <= 256
    return values, list(kinds)


def passing_bitmaps(values: bytearray, kinds):
    """The quick check's shortcut: bits for the code points of the BMP (two and three
    bytes of UTF-8) that pass as boundaries, and for the blocks of 4096 above it (four
    bytes, the first two naming one) whose code points all do."""
    passes = [kinds[v][0] == 0 and kinds[v][1] & BOUNDARY for v in values]

    def words(bits: list[bool]) -> list[int]:
        return [sum(1 << k for k in range(64) if bits[w * 64 + k]) for w in range(len(bits) // 64)]

    bmp = words(passes[:0x10000])
    four = words([all(passes[0x10000 + b * 4096:0x10000 + (b + 1) * 4096]) for b in range(0x100000 // 4096)])
    return bmp, four


def build_blocks(values: bytearray, shift: int):
    size = 1 << shift
    last = max(cp for cp in range(0x110000) if values[cp] != 0)
    limit = (last // size + 1) * size
    stored: dict[bytes, int] = {}
    index = [stored.setdefault(bytes(values[start:start + size]), len(stored)) for start in range(0, limit, size)]
    return limit, index, list(stored)


def ranges(cps: list[int]) -> list[str]:
    out = []
    for cp in sorted(cps):
        if out and out[-1][1] == cp - 1:
            out[-1][1] = cp
        else:
            out.append([cp, cp])
    return [f"{a:04X}" if a == b else f"{a:04X}-{b:04X}" for a, b in out]


def render() -> str:
    ccc, decompositions, pairs, no, maybe, version, dropped_mappings, dropped_classes = read_tables()
    values, kinds = kinds_of(ccc, decompositions, no, maybe)
    # The smallest tables of the block sizes tried; the first level must fit a byte
    # or two, and is a byte where it can be.
    best = None
    for shift in range(4, 10):
        limit, index, blocks = build_blocks(values, shift)
        index_bytes = 1 if len(blocks) <= 256 else 2
        size = len(index) * index_bytes + len(blocks) * (1 << shift)
        if best is None or size < best[0]:
            best = (size, shift, limit, index, blocks, index_bytes)
    size, shift, limit, index, blocks, index_bytes = best
    bmp, simple4 = passing_bitmaps(values, kinds)
    decomposed = sorted(decompositions)
    offsets, chars = [0], []
    for cp in decomposed:
        chars.extend(decompositions[cp])
        offsets.append(len(chars))
    pair_items = sorted((first << 42) | (second << 21) | made for (first, second), made in pairs.items())
    assert all(made < (1 << 21) for made in pairs.values())
    index_type = "uint8_t" if index_bytes == 1 else "uint16_t"
    total = size + 8 * (len(bmp) + len(simple4)) + len(kinds) * 2 + len(decomposed) * 4 + len(offsets) * 2 + len(chars) * 4 + len(pair_items) * 8
    return f"""\
// Generated by tools/make_nfc_tables.py: do not edit; run it again instead.
//
// NFC's data for each code point, as Hugging Face's tokenizers normalizes (its engine
// knows Unicode {version}), read from unicodedata {unicodedata.unidata_version} where tokenizers knows the character:
//     {len(ccc)} combining marks (class > 0), {len(decompositions)} canonical decompositions (Hangul aside),
//     {len(pairs)} composition pairs, {len(no)} characters never in NFC (NFC_Quick_Check=No),
//     {len(maybe)} that compose with a character before them (NFC_Quick_Check=Maybe).
// Python's unicodedata {unicodedata.unidata_version} has these and tokenizers not (newer characters, for it
// starters that stay as they are): a decomposition of
{rows(ranges(dropped_mappings), indent="//     ", sep=" ")}
// a combining class of
{rows(ranges(dropped_classes), indent="//     ", sep=" ")}
// Kinds: a byte per code point in blocks of {1 << shift}: {len(index)} block numbers, {len(blocks)} distinct blocks.
// {total} bytes in all.
#pragma once

#include <cstdint>

namespace bpe::nfc_tables {{

// A kind's flags (see tools/make_nfc_tables.py).
inline constexpr uint8_t kNo = {NO}, kMaybe = {MAYBE}, kDecomposes = {DECOMP}, kBoundary = {BOUNDARY};

struct Kind {{
    uint8_t ccc, flags;
}};
inline constexpr Kind kKinds[{len(kinds)}] = {{
{rows([f"{{{c}, {f}}}" for c, f in kinds])}
}};

// Code points from here on are all kind 0: a starter, a boundary, nothing to decompose.
inline constexpr uint32_t kKindLimit = 0x{limit:X};
inline constexpr int kKindShift = {shift};

inline constexpr {index_type} kKindBlockIndex[{len(index)}] = {{
{rows([str(b) for b in index])}
}};

inline constexpr uint8_t kKindBlocks[{len(blocks) << shift}] = {{
{rows([str(v) for block in blocks for v in block])}
}};

inline Kind kind(uint32_t cp) {{
    if (cp >= kKindLimit) return kKinds[0];
    return kKinds[kKindBlocks[(uint32_t(kKindBlockIndex[cp >> kKindShift]) << kKindShift) | (cp & ((1u << kKindShift) - 1))]];
}}

// The quick check's shortcut: a bit set for each character of the BMP that passes as
// a boundary (class 0, kBoundary), and for each block of 4096 above it whose characters
// all do.
inline constexpr uint64_t kPassesBmp[{len(bmp)}] = {{
{rows([f"0x{w:016x}" for w in bmp])}
}};
inline constexpr uint64_t kPasses4[{len(simple4)}] = {{
{rows([f"0x{w:016x}" for w in simple4])}
}};

// The characters flagged kDecomposes, sorted; the full canonical decomposition of the
// k-th is kDecompositionChars[kDecompositionOffsets[k] .. kDecompositionOffsets[k + 1]).
inline constexpr uint32_t kDecomposed[{len(decomposed)}] = {{
{rows([f"0x{cp:X}" for cp in decomposed])}
}};
inline constexpr uint16_t kDecompositionOffsets[{len(offsets)}] = {{
{rows([str(o) for o in offsets])}
}};
inline constexpr uint32_t kDecompositionChars[{len(chars)}] = {{
{rows([f"0x{cp:X}" for cp in chars])}
}};

// Composition pairs (Hangul aside): first << 42 | second << 21 | composite, sorted.
inline constexpr uint64_t kCompositions[{len(pair_items)}] = {{
{rows([f"0x{item:X}" for item in pair_items])}
}};

}}  // namespace bpe::nfc_tables
"""


def main():
    missing = None if normalizers is not None else (
        "tools/make_nfc_tables.py reads which characters NFC knows from Hugging Face's tokenizers, which is not "
        "installed: pip install tokenizers")
    header_main(__doc__.split("\n\n")[0], "tools/make_nfc_tables.py", HEADER, render, missing)


if __name__ == "__main__":
    main()
