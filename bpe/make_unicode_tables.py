"""Writes bpe/unicode_tables.h: the character classes that the gpt2 and gpt4 split
patterns ask about, as compact tables for the C++ splitters in bpe/split_unicode.h.

    python bpe/make_unicode_tables.py          # rewrites bpe/unicode_tables.h
    python bpe/make_unicode_tables.py --check  # fails if the header is out of date

The published patterns are run by the `regex` module, so the oracle for what counts
as a letter (\\p{L}), a number (\\p{N}) or whitespace (\\s) is that module itself, not
Python's unicodedata (which may know an older Unicode): every code point is put to
the compiled classes one at a time. The same goes for the case-insensitive
contractions of gpt4, '(?i:[sdmt]|ll|ve|re): which characters besides the ASCII
letters match them is asked of `regex` too.

Layout: two bits per code point (other, letter, number, space), in blocks of 128 code
points; identical blocks are stored once, and a first-level table maps each block
number to its stored block. Past the last block holding a letter, number or space,
everything is "other", so the first level stops there.
"""
import argparse
import sys
from pathlib import Path

import regex

HEADER = Path(__file__).with_name("unicode_tables.h")

OTHER, LETTER, NUMBER, SPACE = 0, 1, 2, 3
BLOCK_SHIFT = 7  # 128 code points a block: the smallest tables of the shifts tried (4..10)
BLOCK_SIZE = 1 << BLOCK_SHIFT
WORDS_PER_BLOCK = BLOCK_SIZE * 2 // 64  # two bits a code point, in 64-bit words

# A script that first appeared in each Unicode version: the newest one that `regex`
# knows tells which Unicode its tables come from (it exposes no version number).
# 15.1 added no script, only CJK Extension I, whose first ideograph is U+2EBF0.
VERSION_PROBES = [
    ("10.0", r"\p{Script=Masaram_Gondi}"),
    ("11.0", r"\p{Script=Dogra}"),
    ("12.0", r"\p{Script=Elymaic}"),
    ("13.0", r"\p{Script=Yezidi}"),
    ("14.0", r"\p{Script=Vithkuqi}"),
    ("15.0", r"\p{Script=Kawi}"),
    ("15.1", None),
    ("16.0", r"\p{Script=Garay}"),
    ("17.0", r"\p{Script=Sidetic}"),
]


def unicode_version() -> str:
    known = "older than 10.0"
    for version, probe in VERSION_PROBES:
        if probe is None:
            if not regex.fullmatch(r"\p{L}", "\U0002EBF0"):
                break
        else:
            try:
                regex.compile(probe)
            except regex.error:
                break
        known = version
    if known == VERSION_PROBES[-1][0]:
        known += " or newer"  # the newest version probed for
    return known


def classify_all() -> bytearray:
    """The class of every code point, as `regex` matches the pattern classes."""
    letter, number, space = (regex.compile(p) for p in (r"\p{L}", r"\p{N}", r"\s"))
    not_space = regex.compile(r"\S")
    classes = bytearray(0x110000)
    for cp in range(0x110000):
        ch = chr(cp)
        found = [cls for cls, pat in ((LETTER, letter), (NUMBER, number), (SPACE, space)) if pat.fullmatch(ch)]
        # The splitters treat the three classes as disjoint, and \S as the complement
        # of \s (the lookahead (?!\S) relies on that); make sure `regex` agrees.
        assert len(found) <= 1, f"U+{cp:04X} is in more than one class: {found}"
        assert (SPACE in found) != bool(not_space.fullmatch(ch)), f"U+{cp:04X}: \\s and \\S overlap or leave a gap"
        classes[cp] = found[0] if found else OTHER
    return classes


def contraction_folds() -> list[tuple[int, str]]:
    """Non-ASCII characters that '(?i:x) matches for a letter x of the gpt4 contractions.

    The ASCII ones are the two cases of x, checked here; anything else (in regex
    2026.5.9 only U+017F LATIN SMALL LETTER LONG S, matching s) goes into the header.
    """
    folds = []
    for letter in "sdmtlvre":
        pat = regex.compile(f"(?i:{letter})")
        matches = [cp for cp in range(0x110000) if pat.fullmatch(chr(cp))]
        ascii_matches = sorted(cp for cp in matches if cp < 0x80)
        assert ascii_matches == sorted({ord(letter), ord(letter.upper())}), (letter, ascii_matches)
        folds += [(cp, letter) for cp in matches if cp >= 0x80]
    # The contractions are sequences of single literal characters, so matching them
    # one character at a time is what `regex` does; check that on the two-letter ones
    # with every character that can stand for each letter.
    contraction = regex.compile(r"'(?i:[sdmt]|ll|ve|re)")
    stands_for = {x: [x, x.upper()] + [chr(cp) for cp, y in folds if y == x] for x in "lvre"}
    for first, second in ("ll", "ve", "re"):
        for a in stands_for[first]:
            for b in stands_for[second]:
                assert contraction.fullmatch(f"'{a}{b}"), (a, b)
    return sorted(folds)


def build_blocks(classes: bytearray):
    last = max(cp for cp in range(0x110000) if classes[cp] != OTHER)
    limit = (last // BLOCK_SIZE + 1) * BLOCK_SIZE
    stored: dict[tuple[int, ...], int] = {}
    block_index = []
    for start in range(0, limit, BLOCK_SIZE):
        words = []
        for w in range(WORDS_PER_BLOCK):
            word = 0
            for k in range(32):
                word |= classes[start + w * 32 + k] << (2 * k)
            words.append(word)
        block_index.append(stored.setdefault(tuple(words), len(stored)))
    assert len(stored) <= 256, "block numbers no longer fit in a byte: widen kBlockIndex"
    return limit, block_index, list(stored)


def rows(items: list[str], width: int = 100, indent: str = "    ") -> str:
    lines, line = [], indent
    for item in items:
        if len(line) + len(item) + 2 > width and line.strip():
            lines.append(line.rstrip())
            line = indent
        line += item + ", "
    lines.append(line.rstrip())
    return "\n".join(lines)


def render() -> str:
    classes = classify_all()
    limit, block_index, blocks = build_blocks(classes)
    folds = contraction_folds()
    counts = {name: classes.count(cls) for name, cls in (("letters", LETTER), ("numbers", NUMBER), ("spaces", SPACE))}
    ascii_class = [str(classes[cp]) for cp in range(128)]
    words = [f"0x{word:016x}" for block in blocks for word in block]
    table_bytes = len(block_index) + len(words) * 8
    fold_items = [f"{{0x{cp:04X}, '{letter}'}}" for cp, letter in folds]
    if not fold_items:  # C++ has no empty arrays: a code point that never occurs stands in
        fold_items = ["{0x110000, 0}"]
    return f"""\
// Generated by bpe/make_unicode_tables.py: do not edit; run it again instead.
//
// Character classes of the gpt2 and gpt4 split patterns, as the `regex` module
// matches them in str patterns:
//     regex module {regex.__version__}, Unicode {unicode_version()}
//     \\p{{L}}: {counts['letters']} code points, \\p{{N}}: {counts['numbers']}, \\s (White_Space): {counts['spaces']}
// Two bits per code point in blocks of {BLOCK_SIZE}: {len(block_index)} block numbers, {len(blocks)} distinct
// blocks, {table_bytes} bytes in all. The lookup is char_class() at the bottom.
#pragma once

#include <cstdint>

namespace bpe::unicode {{

enum CharClass : uint8_t {{ kOther = {OTHER}, kLetter = {LETTER}, kNumber = {NUMBER}, kSpace = {SPACE} }};

// The classes of the ASCII characters, for the splitters' one-byte fast path.
inline constexpr uint8_t kAsciiClass[128] = {{
{rows(ascii_class)}
}};

// Code points from here on are all kOther (unassigned, private use, tags, ...).
inline constexpr uint32_t kTableLimit = 0x{limit:X};
inline constexpr int kBlockShift = {BLOCK_SHIFT};

// Block number (code point >> kBlockShift) -> which stored block holds its classes.
inline constexpr uint8_t kBlockIndex[{len(block_index)}] = {{
{rows([str(b) for b in block_index])}
}};

// The stored blocks, {WORDS_PER_BLOCK} words each; code point k of a block has its class in
// bits 2*(k % 32) and up of word k / 32.
inline constexpr uint64_t kBlockBits[{len(words)}] = {{
{rows(words)}
}};

inline CharClass char_class(uint32_t cp) {{
    if (cp >= kTableLimit) return kOther;
    const uint32_t block = kBlockIndex[cp >> kBlockShift];
    const uint32_t k = cp & ({BLOCK_SIZE} - 1);
    return CharClass((kBlockBits[block * {WORDS_PER_BLOCK} + k / 32] >> (2 * (k % 32))) & 3);
}}

// Non-ASCII characters that gpt4's case-insensitive contractions '(?i:[sdmt]|ll|ve|re)
// accept in place of an ASCII letter (the ASCII ones are just the two cases).
struct ContractionFold {{
    uint32_t cp;
    char letter;
}};
inline constexpr ContractionFold kContractionFolds[] = {{{", ".join(fold_items)}}};

}}  // namespace bpe::unicode
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="fail if the header differs from what would be written")
    args = parser.parse_args()
    text = render()
    if args.check:
        if not HEADER.exists() or HEADER.read_text() != text:
            sys.exit(f"{HEADER} is out of date: run python {Path(__file__).as_posix()}")
        print(f"{HEADER} is up to date")
        return
    HEADER.write_text(text)
    print(f"wrote {HEADER} ({len(text)} characters)")


if __name__ == "__main__":
    main()
