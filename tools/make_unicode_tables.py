"""Writes csrc/unicode_tables.h: the character classes that the gpt2 and gpt4 split
patterns ask about, as compact tables for the C++ splitters in csrc/split_unicode.h.

    python tools/make_unicode_tables.py          # rewrites csrc/unicode_tables.h
    python tools/make_unicode_tables.py --check  # fails if the header is out of date

Both read the classes from tiktoken (pip install -r requirements-bench.txt) and stop
with that advice where it is not installed.

Why tiktoken: the project promises tiktoken's ids (GPT-4's cl100k_base in our
encoder gives tiktoken's ids), so a letter (\\p{L}), a number (\\p{N}) or whitespace
(\\s) is whatever the engine that tiktoken runs the patterns with says it is: Rust's
regex crate, under fancy-regex. Its tables are older than those of the `regex`
module, which runs the published patterns in Python: Unicode 16.0 in tiktoken 0.14,
against 17.0 in `regex` 2026.5.9. The two differ only on the letters and numbers
that Unicode 17.0 added (4,644 letters, 13 numbers: CJK Extension J, Tangut, Sidetic,
Tolong Siki, ...), which tiktoken's engine takes for unassigned code points, and so
for punctuation: "\\U00011de0123" splits as "\\U00011de0", "123" in tiktoken but as
"\\U00011de012", "3" with `regex`. Hugging Face tokenizers (Oniguruma, in 0.23),
which GPT-2's ids are checked against, classes these characters as tiktoken does.
Tables of a newer Unicode would be right by the book and wrong by the promise. The
header lists where they part from `regex`, and bpe_reference.py hides exactly those
characters from `regex`, so that it splits as tiktoken does too.

How: tiktoken skips text that its pattern does not match, so an encoding whose
pattern is one class, \\p{L} say, and whose tokens are the 256 bytes turns a string
of every code point into the UTF-8 of exactly the code points in the class: one call
reads the engine's whole table for a class. The case-insensitive contractions of
gpt4, '(?i:[sdmt]|ll|ve|re), are asked of the engine the same way: which characters
besides the ASCII letters match them. Surrogates are left out: UTF-8 cannot hold
them, so they never reach the splitters (nor tiktoken).

Layout: two bits per code point (other, letter, number, space), in blocks of 128 code
points; identical blocks are stored once, and a first-level table maps each block
number to its stored block. Past the last block holding a letter, number or space,
everything is "other", so the first level stops there.
"""
from pathlib import Path

import regex

from cpp_header import header_main, rows

try:
    import tiktoken
except ImportError:
    tiktoken = None

HEADER = Path(__file__).resolve().parent.parent / "csrc" / "unicode_tables.h"

OTHER, LETTER, NUMBER, SPACE = 0, 1, 2, 3
BLOCK_SHIFT = 7  # 128 code points a block: the smallest tables of the shifts tried (4..10)
BLOCK_SIZE = 1 << BLOCK_SHIFT
WORDS_PER_BLOCK = BLOCK_SIZE * 2 // 64  # two bits a code point, in 64-bit words

# Every code point that can be text, once each, in order.
ALL_TEXT = "".join(chr(cp) for cp in range(0x110000) if not 0xD800 <= cp <= 0xDFFF)
BYTE_TOKENS = {bytes([b]): b for b in range(256)}

# A script that first appeared in each Unicode version: the newest one that an engine
# knows tells which Unicode its tables come from (neither engine gives a version).
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


def tiktoken_matches(pattern: str, text: str) -> str:
    """What tiktoken's engine matches of text with pattern, every match joined."""
    encoding = tiktoken.Encoding("probe", pat_str=pattern, mergeable_ranks=BYTE_TOKENS, special_tokens={})
    return bytes(encoding.encode_ordinary(text)).decode("utf-8")


def tiktoken_class(pattern: str) -> set[int]:
    """The code points that a one-character pattern matches, in tiktoken's engine."""
    return set(map(ord, tiktoken_matches(pattern, ALL_TEXT)))


def regex_class(pattern: str) -> set[int]:
    """The same, in the `regex` module."""
    return set(map(ord, regex.findall(pattern, ALL_TEXT)))


def unicode_version(compiles, is_letter) -> str:
    known = "older than 10.0"
    for version, probe in VERSION_PROBES:
        if not (is_letter("\U0002EBF0") if probe is None else compiles(probe)):
            break
        known = version
    if known == VERSION_PROBES[-1][0]:
        known += " or newer"  # the newest version probed for
    return known


def tiktoken_unicode() -> str:
    def compiles(pattern):
        try:
            tiktoken_matches(pattern, "")
        except ValueError:  # what tiktoken raises for a pattern its engine refuses
            return False
        return True
    return unicode_version(compiles, lambda ch: tiktoken_matches(r"\p{L}", ch) == ch)


def regex_unicode() -> str:
    def compiles(pattern):
        try:
            regex.compile(pattern)
        except regex.error:
            return False
        return True
    return unicode_version(compiles, lambda ch: bool(regex.fullmatch(r"\p{L}", ch)))


def classify_all() -> bytearray:
    """The class of every code point, as tiktoken's engine matches the pattern classes."""
    letters, numbers, spaces, not_spaces = map(tiktoken_class, (r"\p{L}", r"\p{N}", r"\s", r"\S"))
    # The splitters treat the three classes as disjoint, and \S as the complement of
    # \s (the lookahead (?!\S) relies on that); make sure the engine agrees.
    assert not (letters & numbers or letters & spaces or numbers & spaces), "the classes overlap"
    assert not spaces & not_spaces and len(spaces) + len(not_spaces) == len(ALL_TEXT), "\\s and \\S overlap or leave a gap"
    classes = bytearray(0x110000)
    for cls, members in ((LETTER, letters), (NUMBER, numbers), (SPACE, spaces)):
        for cp in members:
            classes[cp] = cls
    return classes


def regex_differences(classes: bytearray) -> tuple[dict[str, int], list[tuple[int, int]]]:
    """Where the `regex` module classes code points differently: how many for each
    class, and all of them as ranges (first, last).

    Checks that each is a letter or number to `regex` and unassigned to tiktoken, a
    character newer than tiktoken's Unicode: that is what lets bpe_reference.py split
    as tiktoken does by hiding these characters from `regex`.
    """
    unassigned = tiktoken_class(r"\p{Cn}")
    counts, differ = {}, []
    for name, cls, pattern in (("letters", LETTER, r"\p{L}"), ("numbers", NUMBER, r"\p{N}"), ("whitespace", SPACE, r"\s")):
        theirs = regex_class(pattern)
        ours = {cp for cp in range(0x110000) if classes[cp] == cls}
        assert ours <= theirs, f"tiktoken's engine has {pattern} members that `regex` has not"
        assert theirs - ours <= unassigned, "`regex` and tiktoken's engine class some old characters differently"
        counts[name] = len(theirs - ours)
        differ += theirs - ours
    ranges: list[list[int]] = []
    for cp in sorted(differ):
        if ranges and ranges[-1][1] == cp - 1:
            ranges[-1][1] = cp
        else:
            ranges.append([cp, cp])
    return counts, [(first, last) for first, last in ranges]


def contraction_folds() -> list[tuple[int, str]]:
    """Non-ASCII characters that '(?i:x) matches for a letter x of the gpt4 contractions.

    The ASCII ones are the two cases of x, checked here; anything else (in tiktoken 0.14,
    as in `regex`, only U+017F LATIN SMALL LETTER LONG S, matching s) goes into the header.
    """
    folds = []
    for letter in "sdmtlvre":
        matches = sorted(tiktoken_class(f"(?i:{letter})"))
        ascii_matches = [cp for cp in matches if cp < 0x80]
        assert ascii_matches == sorted({ord(letter), ord(letter.upper())}), (letter, ascii_matches)
        folds += [(cp, letter) for cp in matches if cp >= 0x80]
    # The contractions are sequences of single literal characters, so matching them
    # one character at a time is what the engine does; check that on the two-letter
    # ones with every character that can stand for each letter.
    stands_for = {x: [x, x.upper()] + [chr(cp) for cp, y in folds if y == x] for x in "lvre"}
    for first, second in ("ll", "ve", "re"):
        for a in stands_for[first]:
            for b in stands_for[second]:
                text = f"'{a}{b}"
                assert tiktoken_matches(r"'(?i:[sdmt]|ll|ve|re)", text) == text, (a, b)
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


# --- the general engine's tables: each code point's general category, and case ----------

# The 30 general categories, in the order of their numbers in the header (the Unassigned
# one, Cn, last: it is what no other category claims).
CATEGORIES = ["Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No", "Pc", "Pd", "Ps", "Pe",
              "Pi", "Pf", "Po", "Sm", "Sc", "Sk", "So", "Zs", "Zl", "Zp", "Cc", "Cf", "Cs", "Co", "Cn"]
SPACE_BIT, WORD_BIT = 0x20, 0x40  # beside the category's number (0..29) in the low 5 bits


def classify_categories() -> bytearray:
    """A byte per code point: its general category's number, and the bits of \\s and \\w,
    as tiktoken's engine matches them (its Unicode, as for the classes above)."""
    props = bytearray([CATEGORIES.index("Cn")]) * 0x110000
    seen = set()
    for number, name in enumerate(CATEGORIES[:-1]):
        members = tiktoken_class(rf"\p{{{name}}}")
        assert not members & seen, f"{name} overlaps another category"
        seen |= members
        for cp in members:
            props[cp] = number
    for bit, pattern in ((SPACE_BIT, r"\s"), (WORD_BIT, r"\w")):
        for cp in tiktoken_class(pattern):
            props[cp] |= bit
    return props


def case_variants(props: bytearray) -> list[tuple[int, int]]:
    """(code point, another that (?i) matches it where the other is written), for every
    such pair, sorted: read from the `regex` module, each cased character asked for
    every other. The characters asked about are those `regex` takes as cased or as
    changed by a case mapping, so that those whose full mapping is several characters
    (U+0130, whose lower case is "i" and a dot above; U+0390; U+FB05) are in too, and
    those that Python's str methods alone would find. Not always symmetric (Turkish
    dotted and dotless i: (?i)i matches U+0130, (?i)I does not), so kept as pairs, the
    text's character first, as the engine looks them up. Characters that tiktoken's
    Unicode has not assigned (props: Cn) have no case here, as they have no class
    (bpe_reference.py hides them from `regex` likewise)."""
    cased = set(map(ord, regex.findall(r"[\p{Cased}\p{Changes_When_Casemapped}]", ALL_TEXT)))
    for cp in range(0x110000):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        ch = chr(cp)
        for other in (ch.lower(), ch.upper(), ch.casefold(), ch.title()):
            if len(other) == 1 and other != ch:
                cased |= {cp, ord(other)}
    unassigned = CATEGORIES.index("Cn")
    cased = {cp for cp in cased if props[cp] & 31 != unassigned}
    text = "".join(map(chr, sorted(cased)))
    pairs = []
    for written in sorted(cased):
        for matched in set(map(ord, regex.findall("(?i)" + regex.escape(chr(written)), text))) - {written}:
            pairs.append((matched, written))
    return sorted(pairs)


def build_byte_blocks(values: bytearray, default: int):
    last = max(cp for cp in range(0x110000) if values[cp] != default)
    limit = (last // BLOCK_SIZE + 1) * BLOCK_SIZE
    stored: dict[bytes, int] = {}
    block_index = [stored.setdefault(bytes(values[start:start + BLOCK_SIZE]), len(stored))
                   for start in range(0, limit, BLOCK_SIZE)]
    assert len(stored) < 65536
    return limit, block_index, list(stored)


def render_general() -> str:
    props = classify_categories()
    default = CATEGORIES.index("Cn")
    limit, block_index, blocks = build_byte_blocks(props, default)
    orbits = case_variants(props)
    names = ", ".join(f"k{name}" for name in CATEGORIES)
    values = [str(b) for block in blocks for b in block]
    return f"""
// --- the general engine's tables (csrc/pattern.h) ---------------------------------
//
// Each code point's general category (its number in GeneralCategory, low 5 bits), with
// bit 0x{SPACE_BIT:02x} set for \\s (White_Space) and 0x{WORD_BIT:02x} for \\w, as tiktoken's engine
// matches \\p{{..}}, \\s and \\w: {len(block_index)} block numbers, {len(blocks)} distinct blocks of {BLOCK_SIZE}.
enum GeneralCategory : uint8_t {{ {names} }};
inline constexpr uint8_t kSpaceBit = 0x{SPACE_BIT:02x}, kWordBit = 0x{WORD_BIT:02x};
inline constexpr uint32_t kPropertyLimit = 0x{limit:X};  // from here on: Cn, neither \\s nor \\w

inline constexpr uint16_t kPropertyBlockIndex[{len(block_index)}] = {{
{rows([str(b) for b in block_index])}
}};

inline constexpr uint8_t kPropertyBlocks[{len(values)}] = {{
{rows(values)}
}};

inline uint8_t char_properties(uint32_t cp) {{
    if (cp >= kPropertyLimit) return kCn;
    return kPropertyBlocks[uint32_t(kPropertyBlockIndex[cp >> kBlockShift]) * {BLOCK_SIZE} + (cp & {BLOCK_SIZE - 1})];
}}

// Case variants, read from the `regex` module: (code point, another that (?i) matches
// it where the other is written), sorted ({len(orbits)} pairs).
struct CaseVariant {{
    uint32_t cp, other;
}};
inline constexpr CaseVariant kCaseVariants[{len(orbits)}] = {{
{rows([f"{{0x{a:X}, 0x{b:X}}}" for a, b in orbits])}
}};
"""


def render() -> str:
    classes = classify_all()
    limit, block_index, blocks = build_blocks(classes)
    folds = contraction_folds()
    differ_counts, differ_ranges = regex_differences(classes)
    counts = {name: classes.count(cls) for name, cls in (("letters", LETTER), ("numbers", NUMBER), ("spaces", SPACE))}
    ascii_class = [str(classes[cp]) for cp in range(128)]
    words = [f"0x{word:016x}" for block in blocks for word in block]
    table_bytes = len(block_index) + len(words) * 8
    fold_items = [f"{{0x{cp:04X}, '{letter}'}}" for cp, letter in folds]
    if not fold_items:  # C++ has no empty arrays: a code point that never occurs stands in
        fold_items = ["{0x110000, 0}"]
    differ_items = [f"{first:04X}" if first == last else f"{first:04X}-{last:04X}" for first, last in differ_ranges]
    return f"""\
// Generated by tools/make_unicode_tables.py: do not edit; run it again instead.
//
// Character classes of the gpt2 and gpt4 split patterns, as tiktoken's regex engine
// (Rust's regex crate) matches them, read from tiktoken itself:
//     Unicode {tiktoken_unicode()}
//     \\p{{L}}: {counts['letters']} code points, \\p{{N}}: {counts['numbers']}, \\s (White_Space): {counts['spaces']}
// The `regex` module (Unicode {regex_unicode()}) has {differ_counts['letters']} letters, {differ_counts['numbers']} numbers and
// {differ_counts['whitespace']} whitespace more: characters that tiktoken's Unicode does not have yet,
// and so "other" here. bpe_reference.py hides exactly these from `regex` (in hex):
{rows(differ_items, indent="//     ", sep=" ")}
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
{render_general()}
}}  // namespace bpe::unicode
"""


def main():
    missing = None if tiktoken is not None else (
        "tools/make_unicode_tables.py reads the classes from tiktoken, which is not installed: "
        "pip install -r requirements-bench.txt")
    header_main(__doc__.split("\n\n")[0], "tools/make_unicode_tables.py", HEADER, render, missing)


if __name__ == "__main__":
    main()
