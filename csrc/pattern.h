// The general split engine: a split rule given as a regex, in the dialect that
// tiktoken's and Hugging Face's patterns are written in, matched by backtracking over
// code points, leftmost-first, exactly as Python's `regex` module (and tiktoken's
// fancy-regex) cut text with it.
//
// The dialect (anything else is a ValueError, std::invalid_argument here, naming it):
//   - alternation a|b, groups (...) (capturing or not: only the whole match counts),
//     (?:...), (?i:...) (case-insensitive, with the `regex` module's case variants);
//   - character classes [...] with ranges and negation [^...]; \p{X} and \P{X} for the
//     general categories L Lu Ll Lt Lm Lo M Mn Mc Me N Nd Nl No P Pc Pd Ps Pe Pi Pf Po
//     S Sm Sc Sk So Z Zs Zl Zp C Cc Cf Cs Co Cn (also \pL); \s \S \d \D \w \W; `.`;
//   - ? * + {m} {m,} {m,n} {,n} (0 to n), each greedy, lazy (+?) or possessive (++); a
//     repeat goes on after a time through that matched nothing while it is short of its
//     minimum, and stops after one past it, as `regex` does;
//   - lookaheads (?=...) and (?!...); $ (the end of the text, or before a final \n);
//   - escapes: \n \r \t \f \v \a \e \0, \xhh \x{h..} \uhhhh \Uhhhhhhhh, and an escaped
//     punctuation character as itself.
// Refused: lookbehind, anchors other than $ (^ \A \b \B \z \Z \G), backreferences,
// named groups, other inline flags, atomic groups (?>...), conditionals, scripts and
// other properties (\p{Han}), POSIX classes, nested sets and set operations.
//
// The Oniguruma dialect (Dialect::kOniguruma: Hugging Face's Split regexes, which its
// tokenizers read with Oniguruma, Ruby's syntax, no options) is the same but for:
//   - $ is the end of a line (before any \n, or at the end), ^ its start (the text's,
//     or after a \n that does not end the text); \A the text's start, \z its end, \Z its end or before a final \n;
//   - (?i) (?m) (?-i) (?im-i) alone or as (?flags:...), where (?m) lets `.` match \n
//     too (Ruby's dotall); alone, they hold to the end of the group, its other branches
//     too ("a(?i)b|c" is "a(?i:b|c)");
//   - \h is a hex digit [0-9A-Fa-f], \H any other character;
//   - \w is not U+200C, U+200D; outside [...] it also holds ² ³ ¹ ¼ ½ ¾;
//   - (?i) widens no class escape outside [...] (\p{Lu} stays Lu), and in [...] takes
//     each character's case variants; it pairs no I with ı, and a character whose case
//     folding is several (ß: ss), or a pair of literals that could be such a folding, is
//     refused, as Oniguruma matches them to each other;
//   - {m,n}+ (a repeat of a repeat), {n}? (optional), \U and \pL (without braces) are
//     refused; {,} is the three characters;
//   - the first match at a place counts even where it is empty, and cuts the text there.
//
// How a text splits (split_with_regex): from each position the first match in the
// pattern's order that is not empty is a chunk; where no alternative matches, the
// characters up to the next match are kept as a chunk of their own. tiktoken drops
// such text instead (its findall skips it), and so would lose it: the patterns in use
// match every character, where the two agree. In the Oniguruma dialect the first match
// at a position is the only one looked at there: where it is empty, the text up to the
// next position where something matches (empty or not) is a chunk, as Hugging Face's
// Split keeps it.
//
// Character classes read the tables of unicode_tables.h (tiktoken's Unicode, as the
// hand-written splitters do); (?i) reads its case variants, taken from `regex`.
//
// The limits, so that no pattern and no text can crash the process or hang it:
//   - a pattern of at most kMaxPatternBytes (64 KiB), with groups nested at most
//     kMaxNesting (100) deep: past either, a ValueError naming the limit. Compiling
//     recurses only with the nesting, and takes time linear in the pattern's size;
//   - a match keeps the choices it may come back to on a stack of its own, on the heap,
//     so that no text deepens a recursion; at most Regex::kFramesPerByte (4) a byte of
//     text, and 1 million more: past it, a RuntimeError;
//   - a text's matching takes at most Regex::kStepsPerByte (100) steps a byte, and at
//     least 4 million in all; a step is a node of the program visited, a branch looked
//     at, or a character a repeat takes or gives back, each a bounded amount of work.
//     Past it, a RuntimeError. The patterns in use take 2 to 8 steps a byte.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "compiler.h"
#include "split_unicode.h"
#include "unicode_tables.h"

// As split.h: SSE2 on x86-64 (a set's ASCII run 16 bytes at a time), plain loops elsewhere
// and in a BPE_PORTABLE build.
#if defined(__SSE2__) && !defined(BPE_PORTABLE)
#define BPE_PATTERN_SSE2 1
#include <emmintrin.h>
#endif

namespace bpe {

// Which meanings a pattern's text is read with: Python's `regex` module's (tiktoken's
// pat_str, pattern=), or Oniguruma's with Ruby syntax and no options (the engine of
// Hugging Face tokenizers' Split regexes). They differ in $ ^ \Z, (?m), \h, \w past
// ASCII, case folding, and what an empty match does (Regex::Matcher::match_at).
enum class Dialect { kPython, kOniguruma };

namespace regex_engine {

inline bool folds_to_several(uint32_t cp);

// --- character sets ------------------------------------------------------------------

// A set of code points. A code point's properties byte (unicode::char_properties: its
// category and its \s and \w bits) takes 128 values, so every \p, \s, \w and their
// negations together are one 128-bit set of properties bytes; ranges hold the rest.
// ASCII is answered by one 128-bit table, filled in when the set is complete.
struct CharSet {
    std::array<uint64_t, 2> props{};  // properties bytes in the set
    std::vector<std::pair<uint32_t, uint32_t>> ranges;  // first, last
    bool negated = false;
    bool icase = false;
    // (?i) with Oniguruma's case folding: `regex`'s variants but for I and dotless ı,
    // which it does not pair, and a character that folds to several (İ: i̇) and one that
    // does not (i), as it folds the one to those several (refused in a pattern,
    // Parser::refuse_multi_fold) and never to the other.
    bool oniguruma = false;
    static bool oniguruma_pairs(uint32_t a, uint32_t b) {
        if ((a == 0x49 && b == 0x131) || (a == 0x131 && b == 0x49)) return false;
        return folds_to_several(a) == folds_to_several(b);
    }
    std::array<uint64_t, 2> ascii{};  // the answer for code points < 128
    // The ASCII part as at most kMaxRuns ranges, for ascii_run's 16 bytes at a time
    // (none where it takes more: then a byte at a time): each range's first byte and its
    // span (last - first), 16 copies of each, ready to load. Unused ranges are 0xFF's
    // alone, a byte no UTF-8 text has.
    static constexpr int kMaxRuns = 8;
    alignas(16) std::array<std::array<uint8_t, 16>, kMaxRuns> run_first{}, run_span{};
    int num_runs = 0;

    static bool bit(const std::array<uint64_t, 2>& bits, uint32_t k) { return bits[k >> 6] >> (k & 63) & 1; }
    static void set_bit(std::array<uint64_t, 2>& bits, uint32_t k) { bits[k >> 6] |= uint64_t(1) << (k & 63); }

    bool in_items(uint32_t cp) const {
        if (bit(props, unicode::char_properties(cp))) return true;
        if (ranges.size() <= 8) {
            for (const auto& [first, last] : ranges)
                if (first <= cp && cp <= last) return true;
            return false;
        }
        // Sorted and apart (finish): the last range that starts at or before cp. A test
        // stays one step of a match however many ranges a set is written with.
        auto it = std::upper_bound(ranges.begin(), ranges.end(), cp,
                                   [](uint32_t c, const std::pair<uint32_t, uint32_t>& r) { return c < r.first; });
        return it != ranges.begin() && cp <= std::prev(it)->second;
    }
    // The definition: in the items, or (case-insensitive) some case variant of cp is.
    bool contains_slow(uint32_t cp) const {
        bool in = in_items(cp);
        if (!in && icase) {
            const auto* begin = std::begin(unicode::kCaseVariants);
            const auto* end = std::end(unicode::kCaseVariants);
            const auto* it = std::lower_bound(begin, end, cp, [](const unicode::CaseVariant& v, uint32_t c) { return v.cp < c; });
            for (; it != end && it->cp == cp && !in; ++it)
                if (!oniguruma || oniguruma_pairs(it->cp, it->other)) in = in_items(it->other);
        }
        return in != negated;
    }
    void finish() {
        std::sort(ranges.begin(), ranges.end());
        size_t kept = 0;
        for (const auto& range : ranges) {
            if (kept && range.first <= ranges[kept - 1].second + 1)
                ranges[kept - 1].second = std::max(ranges[kept - 1].second, range.second);
            else
                ranges[kept++] = range;
        }
        ranges.resize(kept);
        ascii = {};
        for (uint32_t c = 0; c < 128; ++c)
            if (contains_slow(c)) set_bit(ascii, c);
        num_runs = 0;
        for (auto& f : run_first) f.fill(0xFF);
        for (auto& f : run_span) f.fill(0);
        for (uint32_t c = 0; c < 128;) {
            if (!bit(ascii, c)) { ++c; continue; }
            uint32_t last = c;
            while (last + 1 < 128 && bit(ascii, last + 1)) ++last;
            if (num_runs == kMaxRuns) { num_runs = 0; break; }
            run_first[size_t(num_runs)].fill(uint8_t(c));
            run_span[size_t(num_runs++)].fill(uint8_t(last - c));
            c = last + 1;
        }
    }
#if defined(BPE_PATTERN_SSE2)
    // How many of the 16 bytes at p, from the first, are ASCII characters of the set
    // (num_runs > 0): a word's letters at once, where a loop a byte at a time would end
    // on a mispredicted branch, one a chunk, at every word's length. `high_next`: whether
    // the byte after them (of the 16) is >= 0x80, from the same load, so that the caller
    // does not wait on reading it again.
    uint32_t ascii_run(const unsigned char* p, bool& high_next) const {
        uint32_t high;
        const uint32_t run = uint32_t(__builtin_ctz(~ascii_members(p, high)));
        high_next = high >> run & 1;
        return run;
    }
    // Which of the 16 bytes at p are ASCII characters of the set (num_runs > 0), a bit
    // each, and in `high` which are >= 0x80.
    uint32_t ascii_members(const unsigned char* p, uint32_t& high) const {
        const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
        // v - first <= span, unsigned: a byte >= 0x80 is past every ASCII range.
        auto in_run = [&](int r) {
            const __m128i d = _mm_sub_epi8(v, _mm_load_si128(reinterpret_cast<const __m128i*>(run_first[size_t(r)].data())));
            return _mm_cmpeq_epi8(_mm_min_epu8(d, _mm_load_si128(reinterpret_cast<const __m128i*>(run_span[size_t(r)].data()))), d);
        };
        // Two ranges, four or eight, unrolled: which a set takes is the same at every call.
        __m128i in = _mm_or_si128(in_run(0), in_run(1));
        if (num_runs > 2) in = _mm_or_si128(in, _mm_or_si128(in_run(2), in_run(3)));
        if (num_runs > 4)
            in = _mm_or_si128(in, _mm_or_si128(_mm_or_si128(in_run(4), in_run(5)), _mm_or_si128(in_run(6), in_run(7))));
        high = uint32_t(_mm_movemask_epi8(v));
        return uint32_t(_mm_movemask_epi8(in));
    }
#endif
    bool contains(uint32_t cp) const { return cp < 128 ? bit(ascii, cp) : contains_slow(cp); }

    // Whether no code point is in both sets: the ASCII tables, and past ASCII the
    // properties bytes each set can hold there. Conservative (false where unsure): a
    // case-insensitive set, or one with a range past ASCII that is not negated.
    static bool surely_disjoint(const CharSet& a, const CharSet& b) {
        if ((a.ascii[0] & b.ascii[0]) || (a.ascii[1] & b.ascii[1])) return false;
        std::array<uint64_t, 2> pa, pb;
        if (!props_past_ascii(a, pa) || !props_past_ascii(b, pb)) return false;
        return !(pa[0] & pb[0]) && !(pa[1] & pb[1]);
    }

    // Whether every code point of `inner` is in `outer`. Conservative likewise; `outer`
    // must be exact past ASCII (no range there).
    static bool surely_within(const CharSet& inner, const CharSet& outer) {
        if ((inner.ascii[0] & ~outer.ascii[0]) || (inner.ascii[1] & ~outer.ascii[1])) return false;
        std::array<uint64_t, 2> pi, po;
        if (!props_past_ascii(inner, pi) || !props_past_ascii(outer, po) || ranges_past_ascii(outer)) return false;
        return !(pi[0] & ~po[0]) && !(pi[1] & ~po[1]);
    }

private:
    static bool ranges_past_ascii(const CharSet& set) {
        for (const auto& range : set.ranges)
            if (range.second >= 128) return true;
        return false;
    }
    // The properties bytes that a code point >= 128 of the set can have (a superset,
    // exact where no range reaches past ASCII); false where that is not known.
    static bool props_past_ascii(const CharSet& set, std::array<uint64_t, 2>& out) {
        if (set.icase) return false;  // a case variant may bring in any other character
        if (ranges_past_ascii(set) && !set.negated) return false;
        // Negated, a range only takes characters out: the complement of props holds them.
        out = set.negated ? std::array<uint64_t, 2>{~set.props[0], ~set.props[1]} : set.props;
        return true;
    }
};

// The characters whose full case folding is several characters (CaseFolding.txt's F
// lines: ß -> ss, ﬁ -> fi, İ -> i̇), and the first two characters of those foldings.
inline constexpr uint32_t kFoldsToSeveral[] = {
    0xDF, 0x130, 0x149, 0x1F0, 0x390, 0x3B0, 0x587, 0x1E96, 0x1E97, 0x1E98, 0x1E99, 0x1E9A, 0x1E9E, 0x1F50, 0x1F52,
    0x1F54, 0x1F56, 0x1F80, 0x1F81, 0x1F82, 0x1F83, 0x1F84, 0x1F85, 0x1F86, 0x1F87, 0x1F88, 0x1F89, 0x1F8A, 0x1F8B,
    0x1F8C, 0x1F8D, 0x1F8E, 0x1F8F, 0x1F90, 0x1F91, 0x1F92, 0x1F93, 0x1F94, 0x1F95, 0x1F96, 0x1F97, 0x1F98, 0x1F99,
    0x1F9A, 0x1F9B, 0x1F9C, 0x1F9D, 0x1F9E, 0x1F9F, 0x1FA0, 0x1FA1, 0x1FA2, 0x1FA3, 0x1FA4, 0x1FA5, 0x1FA6, 0x1FA7,
    0x1FA8, 0x1FA9, 0x1FAA, 0x1FAB, 0x1FAC, 0x1FAD, 0x1FAE, 0x1FAF, 0x1FB2, 0x1FB3, 0x1FB4, 0x1FB6, 0x1FB7, 0x1FBC,
    0x1FC2, 0x1FC3, 0x1FC4, 0x1FC6, 0x1FC7, 0x1FCC, 0x1FD2, 0x1FD3, 0x1FD6, 0x1FD7, 0x1FE2, 0x1FE3, 0x1FE4, 0x1FE6,
    0x1FE7, 0x1FF2, 0x1FF3, 0x1FF4, 0x1FF6, 0x1FF7, 0x1FFC, 0xFB00, 0xFB01, 0xFB02, 0xFB03, 0xFB04, 0xFB05, 0xFB06,
    0xFB13, 0xFB14, 0xFB15, 0xFB16, 0xFB17};
inline constexpr std::pair<uint32_t, uint32_t> kSeveralFoldStarts[] = {
    {0x61, 0x2BE}, {0x66, 0x66}, {0x66, 0x69}, {0x66, 0x6C}, {0x68, 0x331}, {0x69, 0x307}, {0x6A, 0x30C},
    {0x73, 0x73}, {0x73, 0x74}, {0x74, 0x308}, {0x77, 0x30A}, {0x79, 0x30A}, {0x2BC, 0x6E}, {0x3AC, 0x3B9},
    {0x3AE, 0x3B9}, {0x3B1, 0x342}, {0x3B1, 0x3B9}, {0x3B7, 0x342}, {0x3B7, 0x3B9}, {0x3B9, 0x308}, {0x3B9, 0x342},
    {0x3C1, 0x313}, {0x3C5, 0x308}, {0x3C5, 0x313}, {0x3C5, 0x342}, {0x3C9, 0x342}, {0x3C9, 0x3B9}, {0x3CE, 0x3B9},
    {0x565, 0x582}, {0x574, 0x565}, {0x574, 0x56B}, {0x574, 0x56D}, {0x574, 0x576}, {0x57E, 0x576}, {0x1F00, 0x3B9},
    {0x1F01, 0x3B9}, {0x1F02, 0x3B9}, {0x1F03, 0x3B9}, {0x1F04, 0x3B9}, {0x1F05, 0x3B9}, {0x1F06, 0x3B9},
    {0x1F07, 0x3B9}, {0x1F20, 0x3B9}, {0x1F21, 0x3B9}, {0x1F22, 0x3B9}, {0x1F23, 0x3B9}, {0x1F24, 0x3B9},
    {0x1F25, 0x3B9}, {0x1F26, 0x3B9}, {0x1F27, 0x3B9}, {0x1F60, 0x3B9}, {0x1F61, 0x3B9}, {0x1F62, 0x3B9},
    {0x1F63, 0x3B9}, {0x1F64, 0x3B9}, {0x1F65, 0x3B9}, {0x1F66, 0x3B9}, {0x1F67, 0x3B9}, {0x1F70, 0x3B9},
    {0x1F74, 0x3B9}, {0x1F7C, 0x3B9}};

inline bool folds_to_several(uint32_t cp) {
    return cp >= 0xDF && std::binary_search(std::begin(kFoldsToSeveral), std::end(kFoldsToSeveral), cp);
}

// --- the compiled program ------------------------------------------------------------

enum class Op : uint8_t {
    kMatch,        // the end of the pattern: a match, if not empty
    kSubEnd,       // the end of a lookahead's or a possessive group's body: it matched
    kSet,          // one character of set `arg`
    kSetRepeat,    // set `arg` repeated min..max times, one character at a time, by `mode`
    kAlt,          // try the branches `alts`, in order
    kRepeatEnter,  // a repeated group: counter `arg` starts, then kRepeatLoop
    kRepeatLoop,   // another time through `body`, or on to `next`, by `mode`
    kPossessive,   // body `body` matched once as a whole, its first way, then `next`
    kLookahead,    // body `body` must (or, `negative`, must not) match here
    kAnchor,       // a place, not a character: Anchor `arg`
};
// The anchors: each a test of the place between two characters.
enum Anchor : int {
    kEndOrFinalNewline,  // Python's $, Oniguruma's \Z: the end, or before a final \n
    kEnd,                // Oniguruma's \z
    kStart,              // Oniguruma's \A
    kLineEnd,            // Oniguruma's $: the end, or before any \n
    kLineStart,          // Oniguruma's ^: the start, or after a \n that is not the last character
};
enum class Mode : uint8_t { kGreedy, kLazy, kPossessive };

// What a branch can start with, to skip it at a glance: the ASCII characters, and
// whether any non-ASCII one may. A branch that can match nothing (or reaches $ or a
// lookahead's end first) can start with anything.
struct FirstChars {
    std::array<uint64_t, 2> ascii{};
    bool non_ascii = false;
    static FirstChars any() { return FirstChars{{~uint64_t(0), ~uint64_t(0)}, true}; }
    void add(const FirstChars& o) { ascii[0] |= o.ascii[0], ascii[1] |= o.ascii[1], non_ascii |= o.non_ascii; }
    bool may_start(uint32_t cp) const { return cp < 128 ? (ascii[cp >> 6] >> (cp & 63) & 1) : non_ascii; }
    // The same from the character's first byte alone (valid UTF-8: a byte >= 0x80 starts
    // a non-ASCII character), so that nothing is decoded to answer it.
    bool may_start_byte(uint8_t b) const { return may_start(b); }
};

// A branch that is a straight line of classes (\s+, ' ?\p{L}+', [^\s\p{L}]+[\r\n]*),
// each taken as far as it goes and never given back, as giving back could not help:
// what follows a class repeat cannot start with a character of it. Such a branch
// matches in one loop over its items (Regex::Matcher::run_straight), with none of the
// interpreter's steps. It may end on a one-class negative lookahead (\s+(?!\S)) that
// the last class's characters all pass: where the character after the run fails it,
// the run gives back its last character, where the lookahead then holds.
struct StraightItem {
    const CharSet* set;  // in Regex::sets_, which no longer changes once they are made
    uint32_t min, max;
};
struct Straight {
    uint32_t first = 0, count = 0;  // its items: Regex::straight_items_[first, first + count)
    const CharSet* tail = nullptr;  // the set of the negative lookahead it ends with, if any
    bool last_gives_back = false;   // the last item may give back a character for the tail
    // It ends in S* T+ with T within S (\s*[\r\n]+): S takes its run, gives back to the
    // last character of T in it, and T takes that one (the one after it is not of T, or
    // the run would have gone on): the match ends after the run's last character of T.
    bool ends_on_last_of = false;
};

struct Node {
    explicit Node(Op op_) : op(op_) {}
    Op op;
    Mode mode = Mode::kGreedy;
    bool negative = false;
    int arg = -1;   // set or counter number
    const CharSet* set = nullptr;  // kSet, kSetRepeat: set `arg` (filled in once the sets are made)
    int next = -1;  // the node that follows
    int body = -1;  // the first node of a group's body
    uint32_t min = 1, max = 1;
    std::vector<int> alts;
    std::vector<FirstChars> firsts;  // kAlt: what each branch can start with
    // kAlt: the branches that can start with each ASCII byte (key = the byte), with a
    // non-ASCII character (128), and at the text's end (129: all of them), in order:
    // branches[by_first[key]] to branches[by_first[key + 1]]. One lookup a try, not a
    // test per branch.
    std::array<uint32_t, 131> by_first{};
    std::vector<uint16_t> branches;
    // kAlt: for each branch and each ASCII first character, what its second can be
    // (seconds[branch * 128 + c]), so that a branch bound to fail at the second
    // character is not called.
    std::vector<FirstChars> seconds;
    std::vector<char> second_known;  // kAlt: whether a branch's seconds ever rule anything out (else not made)
    // kSetRepeat: the match ends after it (next is kMatch); it never gives back (possessive,
    // or the rest matches wherever it starts: Regex::always_succeeds). Read once a chunk,
    // so flags here rather than a look at the next node.
    bool ends_match = false, keeps_all = false;
};

constexpr uint32_t kUnbounded = UINT32_MAX;

// --- the parser: pattern text -> syntax tree ------------------------------------------

struct Ast {
    enum Kind { kSet, kSeq, kAlt, kRepeat, kLookahead, kAnchor } kind;
    int set = -1;  // kSet: the set; kAnchor: the Anchor
    std::vector<std::unique_ptr<Ast>> items;  // kSeq, kAlt: the parts; kRepeat, kLookahead: one
    uint32_t min = 1, max = 1;
    Mode mode = Mode::kGreedy;
    bool negative = false;
};

// The limits on a pattern, refused past them with a ValueError naming the limit. Its
// size bounds the compiled program (a node and a set at most for each byte) and what
// compiling takes. Groups nested deeper than kMaxNesting are refused as the parser, the
// compiler and the syntax tree's destructor each recurse once a level: at this depth
// they stay far inside the smallest thread stack in use (512 KB).
inline constexpr size_t kMaxPatternBytes = 65536;
inline constexpr int kMaxNesting = 100;

// The inline flags in force: (?i) case-insensitive; (?m) in Oniguruma's Ruby syntax, `.`
// matches \n too.
struct Flags {
    bool icase = false;
    bool dotall = false;
};

class Parser {
public:
    Parser(std::string_view text, std::vector<CharSet>& sets, Dialect dialect) : sets_(sets), dialect_(dialect) {
        if (text.size() > kMaxPatternBytes)
            throw std::invalid_argument("split pattern: " + std::to_string(text.size()) + " bytes, over the limit of " +
                                        std::to_string(kMaxPatternBytes) + " bytes");
        // The pattern is text: decode it to code points (it must be valid UTF-8).
        const auto* s = reinterpret_cast<const unsigned char*>(text.data());
        if (!is_valid_utf8(text)) throw std::invalid_argument("the split pattern is not valid UTF-8");
        for (size_t i = 0; i < text.size();) {
            uint32_t len = 1, cp = s[i];
            if (cp >= 0x80) cp = unicode::decode_multibyte(s, text.size(), i, &len);
            cps_.push_back(cp);
            i += len;
        }
    }

    std::unique_ptr<Ast> parse() {
        auto ast = alternation(Flags{});
        if (pos_ < cps_.size()) fail("an unmatched ')'");
        return ast;
    }

private:
    std::vector<uint32_t> cps_;
    size_t pos_ = 0;
    std::vector<CharSet>& sets_;
    Dialect dialect_;
    int nesting_ = 0;  // groups open at pos_
    // Oniguruma: the case-insensitive literal just before pos_ (0x110000: none), whose
    // pair with the next could be a character's folding to several (refuse_multi_fold).
    uint32_t last_icase_literal_ = 0x110000;
    uint32_t literal_before_atom_ = 0x110000;  // its value as the atom at pos_ began

    bool onig() const { return dialect_ == Dialect::kOniguruma; }
    [[noreturn]] void fail(const std::string& what) const {
        throw std::invalid_argument("split pattern: " + what + " at position " + std::to_string(pos_) +
                                    " is outside the supported regex dialect");
    }
    [[noreturn]] void bad(const std::string& what) const {
        throw std::invalid_argument("split pattern: " + what + " at position " + std::to_string(pos_));
    }
    bool at_end() const { return pos_ >= cps_.size(); }
    uint32_t peek(size_t ahead = 0) const { return pos_ + ahead < cps_.size() ? cps_[pos_ + ahead] : 0x110000; }
    bool eat(uint32_t c) {
        if (peek() != c) return false;
        ++pos_;
        return true;
    }

    std::unique_ptr<Ast> node(Ast::Kind kind) {
        auto a = std::make_unique<Ast>();
        a->kind = kind;
        return a;
    }

    int new_set(CharSet set) {
        set.oniguruma = onig();
        if (set.icase && onig()) refuse_multi_fold(set);
        set.finish();
        sets_.push_back(std::move(set));
        return int(sets_.size() - 1);
    }

    // Oniguruma matches a case-insensitive ß to "ss" and "ss" to ß (full case folding),
    // in a literal, across (?:...) and in a class's characters (not its \p classes): a
    // character or a pair of literals that could take part in such a folding is refused.
    void refuse_multi_fold(const CharSet& set) {
        for (const auto& [first, last] : set.ranges) {
            auto it = std::lower_bound(std::begin(kFoldsToSeveral), std::end(kFoldsToSeveral), first);
            if (it != std::end(kFoldsToSeveral) && *it <= last) {
                std::string cp(4, '\0');
                cp.resize(size_t(encode_utf8_cp(*it, cp.data())));
                fail("a case-insensitive '" + cp + "' (Oniguruma matches it to the several characters it folds to)");
            }
        }
    }
    static bool may_fold_to(uint32_t c, uint32_t target) {
        if (c == target) return true;
        const auto* it = std::lower_bound(std::begin(unicode::kCaseVariants), std::end(unicode::kCaseVariants), c,
                                          [](const unicode::CaseVariant& v, uint32_t x) { return v.cp < x; });
        for (; it != std::end(unicode::kCaseVariants) && it->cp == c; ++it)
            if (it->other == target) return true;
        return false;
    }
    void icase_literal_pair(uint32_t cp) {
        const uint32_t before = literal_before_atom_;
        last_icase_literal_ = cp;
        if (before == 0x110000) return;
        for (const auto& [a, b] : kSeveralFoldStarts)
            if (may_fold_to(before, a) && may_fold_to(cp, b)) {
                std::string pair(8, '\0');
                size_t len = size_t(encode_utf8_cp(before, pair.data()));
                len += size_t(encode_utf8_cp(cp, pair.data() + len));
                pair.resize(len);
                fail("a case-insensitive '" + pair + "' (Oniguruma matches it to a character that folds to it)");
            }
    }
    static int encode_utf8_cp(uint32_t cp, char* out) {
        if (cp < 0x80) return out[0] = char(cp), 1;
        if (cp < 0x800) return out[0] = char(0xC0 | cp >> 6), out[1] = char(0x80 | (cp & 63)), 2;
        if (cp < 0x10000)
            return out[0] = char(0xE0 | cp >> 12), out[1] = char(0x80 | (cp >> 6 & 63)), out[2] = char(0x80 | (cp & 63)), 3;
        out[0] = char(0xF0 | cp >> 18), out[1] = char(0x80 | (cp >> 12 & 63));
        out[2] = char(0x80 | (cp >> 6 & 63)), out[3] = char(0x80 | (cp & 63));
        return 4;
    }

    std::unique_ptr<Ast> alternation(Flags flags) {
        auto alt = node(Ast::kAlt);
        alt->items.push_back(sequence(flags));
        while (eat('|')) {
            last_icase_literal_ = 0x110000;
            alt->items.push_back(sequence(flags));
        }
        if (alt->items.size() == 1) return std::move(alt->items[0]);
        return alt;
    }

    std::unique_ptr<Ast> sequence(Flags flags) {
        auto seq = node(Ast::kSeq);
        while (!at_end() && peek() != '|' && peek() != ')') {
            // Oniguruma's (?i) or (?m) alone: the rest of the group, its other branches
            // too, is read with the flags ("a(?i)b|c" is "a(?i:b|c)").
            if (onig() && peek() == '(' && peek(1) == '?') {
                Flags changed = flags;
                size_t after = 0;
                if (inline_flags(changed, after) && after < cps_.size() && cps_[after] == ')') {
                    if (nesting_ == kMaxNesting)
                        bad("a group nested " + std::to_string(kMaxNesting + 1) + " deep, past the limit of " +
                            std::to_string(kMaxNesting) + ",");
                    pos_ = after + 1;
                    ++nesting_;
                    seq->items.push_back(alternation(changed));
                    --nesting_;
                    break;
                }
            }
            auto atom_ast = atom(flags);
            seq->items.push_back(quantified(std::move(atom_ast)));
        }
        if (seq->items.size() == 1) return std::move(seq->items[0]);
        return seq;
    }

    // A quantifier, if one follows: ? * + {m} {m,} {m,n}, then ? (lazy) or + (possessive).
    std::unique_ptr<Ast> quantified(std::unique_ptr<Ast> atom_ast) {
        uint32_t min, max;
        const size_t start = pos_;
        if (eat('?')) min = 0, max = 1;
        else if (eat('*')) min = 0, max = kUnbounded;
        else if (eat('+')) min = 1, max = kUnbounded;
        else if (peek() == '{' && counted(min, max)) {
        } else return atom_ast;
        last_icase_literal_ = 0x110000;
        const bool counted_repeat = cps_[start] == '{';
        if (atom_ast->kind == Ast::kLookahead || atom_ast->kind == Ast::kAnchor) {
            pos_ = start;
            fail("a quantifier on a lookahead or anchor");
        }
        // Oniguruma ends a repeat at a time through that matched nothing by rules of its
        // own (a capture's state counts), not `regex`'s: such a repeat is refused.
        if (onig() && max > 1 && atom_ast->kind != Ast::kSet && may_be_empty(*atom_ast)) {
            pos_ = start;
            fail("a repeated group that may match nothing");
        }
        auto rep = node(Ast::kRepeat);
        rep->min = min, rep->max = max;
        // Ruby's syntax: {m,n}+ repeats the repeat, and {n}? is (?:X{n})?.
        if (onig() && counted_repeat && peek() == '+') fail("a quantifier after a quantifier ('{m,n}+')");
        if (onig() && counted_repeat && peek() == '?' && min == max) fail("a '?' after '{n}' (optional, in Ruby's syntax)");
        if (eat('?')) rep->mode = Mode::kLazy;
        else if (eat('+')) rep->mode = Mode::kPossessive;
        if (peek() == '?' || peek() == '*' || peek() == '+' || peek() == '{') {
            uint32_t a, b;
            size_t here = pos_;
            if (peek() != '{' || counted(a, b)) {
                pos_ = here;
                fail("a quantifier after a quantifier");
            }
        }
        rep->items.push_back(std::move(atom_ast));
        return rep;
    }

    // Whether a syntax tree can match nothing (recursing as deep as the groups are
    // nested, kMaxNesting at most).
    static bool may_be_empty(const Ast& a) {
        switch (a.kind) {
            case Ast::kSet: return false;
            case Ast::kSeq:
                return std::all_of(a.items.begin(), a.items.end(), [](const auto& x) { return may_be_empty(*x); });
            case Ast::kAlt:
                return std::any_of(a.items.begin(), a.items.end(), [](const auto& x) { return may_be_empty(*x); });
            case Ast::kRepeat: return a.min == 0 || may_be_empty(*a.items[0]);
            default: return true;
        }
    }

    // {m}, {m,}, {m,n}, {,n} (0 to n) and {,} (0 or more) at pos_; false (pos_ unmoved)
    // where the brace is not one, as `regex` then reads it as a literal '{'.
    bool counted(uint32_t& min, uint32_t& max) {
        size_t p = pos_ + 1;
        auto number = [&](uint32_t& out) {
            size_t begin = p;
            uint64_t v = 0;
            while (p < cps_.size() && cps_[p] >= '0' && cps_[p] <= '9') {
                v = v * 10 + (cps_[p] - '0');
                if (v > 100000) {
                    pos_ = begin;
                    bad("a repeat count over 100000");
                }
                ++p;
            }
            out = uint32_t(v);
            return p > begin;
        };
        if (!number(min)) {
            if (p >= cps_.size() || cps_[p] != ',') return false;
            // {,} is 0 or more in `regex`; Oniguruma reads it as the three characters.
            if (onig() && p + 1 < cps_.size() && cps_[p + 1] == '}') return false;
            min = 0;
        }
        if (p < cps_.size() && cps_[p] == '}') {
            max = min;
        } else if (p < cps_.size() && cps_[p] == ',') {
            ++p;
            if (!number(max)) max = kUnbounded;
            if (p >= cps_.size() || cps_[p] != '}') return false;
        } else {
            return false;
        }
        if (max < min) bad("a repeat {m,n} with n < m");
        pos_ = p + 1;
        return true;
    }

    std::unique_ptr<Ast> set_atom(CharSet set) {
        auto a = node(Ast::kSet);
        a->set = new_set(std::move(set));
        return a;
    }

    std::unique_ptr<Ast> literal(uint32_t cp, bool icase) {
        CharSet set;
        set.ranges.push_back({cp, cp});
        set.icase = icase;
        auto a = set_atom(std::move(set));
        if (icase && onig()) icase_literal_pair(cp);
        return a;
    }

    std::unique_ptr<Ast> anchor(Anchor which, size_t length) {
        pos_ += length;
        auto a = node(Ast::kAnchor);
        a->set = which;
        return a;
    }

    std::unique_ptr<Ast> atom(Flags flags) {
        const uint32_t c = peek();
        const bool icase = flags.icase;
        literal_before_atom_ = last_icase_literal_;
        if (c != '(') last_icase_literal_ = 0x110000;  // a literal sets it again
        if (c == '(') return group(flags);
        if (c == '[') return set_atom(bracket(icase));
        if (c == '.') {
            ++pos_;
            CharSet set;
            set.ranges.push_back({'\n', '\n'});
            set.negated = true;
            if (flags.dotall) set.ranges.clear();
            return set_atom(std::move(set));
        }
        if (c == '$') return anchor(onig() ? kLineEnd : kEndOrFinalNewline, 1);
        if (c == '^') {
            if (onig()) return anchor(kLineStart, 1);
            fail("the anchor '^'");
        }
        if (c == '\\' && onig()) {
            if (peek(1) == 'A') return anchor(kStart, 2);
            if (peek(1) == 'Z') return anchor(kEndOrFinalNewline, 2);
            if (peek(1) == 'z') return anchor(kEnd, 2);
        }
        if (c == '*' || c == '+' || c == '?') fail(std::string("a quantifier '") + char(c) + "' with nothing to repeat");
        if (c == '{') {
            uint32_t a, b;
            if (counted(a, b)) fail("a quantifier '{' with nothing to repeat");
        }
        if (c == '\\') {
            CharSet set;
            set.icase = icase;
            uint32_t cp;
            if (escape(set, cp, false)) {
                // Oniguruma takes a class escape outside [...] as it is, (?i) or not.
                if (onig()) set.icase = false;
                return set_atom(std::move(set));
            }
            return literal(cp, icase);
        }
        ++pos_;
        return literal(c, icase);
    }

    // Oniguruma's inline flags at pos_ ("(?" then i, m, a '-' and more of them, up to
    // the ':' or ')' at `after`), applied to `flags`; false where it is not such a group.
    // (?x) is refused: its pattern text means something else.
    bool inline_flags(Flags& flags, size_t& after) {
        size_t p = pos_ + 2;
        bool on = true, any = false;
        for (; p < cps_.size(); ++p) {
            const uint32_t c = cps_[p];
            if (c == 'i') flags.icase = on;
            else if (c == 'm') flags.dotall = on;
            else if (c == '-' && on) on = false;
            else if (c == 'x') {
                pos_ = p;
                fail("the inline flag '(?x' (extended syntax)");
            } else break;
            any = true;
        }
        after = p;
        return any && p < cps_.size() && (cps_[p] == ':' || cps_[p] == ')');
    }

    std::unique_ptr<Ast> group(Flags flags) {
        const size_t start = pos_;
        // A group the dialect has not: named by where it starts.
        auto refuse = [&](const std::string& what) {
            const std::string kind = what;
            pos_ = start;
            fail(kind);
        };
        if (nesting_ == kMaxNesting)
            bad("a group nested " + std::to_string(kMaxNesting + 1) + " deep, past the limit of " +
                std::to_string(kMaxNesting) + ",");
        bool lookahead = false, negative = false;
        // Oniguruma's (?flags:...) (the form without ':' is sequence()'s).
        Flags changed = flags;
        if (size_t after = 0; onig() && peek(1) == '?' && inline_flags(changed, after) && cps_[after] == ':') {
            pos_ = after + 1;
            flags = changed;
        } else if (++pos_, eat('?')) {
            if (eat(':')) {
            } else if (eat('=')) {
                lookahead = true;
            } else if (eat('!')) {
                lookahead = true, negative = true;
            } else if (!onig() && peek() == 'i' && peek(1) == ':') {
                pos_ += 2;
                flags.icase = true;
            } else if (peek() == '<' && (peek(1) == '=' || peek(1) == '!')) {
                refuse("a lookbehind '(?<" + std::string(1, char(peek(1))) + "'");
            } else if (peek() == 'P' || peek() == '<' || peek() == '\'') {
                refuse("a named group");
            } else if (peek() == '>') {
                refuse("an atomic group '(?>'");
            } else if (peek() == '#') {
                refuse("a comment group '(?#'");
            } else if (peek() == '(') {
                refuse("a conditional group '(?('");
            } else {
                refuse("the inline flags or group '(?" + (at_end() ? std::string() : std::string(1, char(peek()))) + "'");
            }
        }
        ++nesting_;
        if (lookahead) last_icase_literal_ = 0x110000;
        auto body = alternation(flags);
        --nesting_;
        if (!eat(')')) bad("a missing ')'");
        if (!lookahead) return body;
        last_icase_literal_ = 0x110000;
        auto look = node(Ast::kLookahead);
        look->negative = negative;
        look->items.push_back(std::move(body));
        return look;
    }

    static uint32_t hex_value(uint32_t c) {
        if (c >= '0' && c <= '9') return c - '0';
        if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f') return (c | 0x20) - 'a' + 10;
        return 16;
    }
    uint32_t hex_digits(size_t count) {
        uint32_t v = 0;
        for (size_t k = 0; k < count; ++k) {
            uint32_t d = hex_value(peek());
            if (d >= 16) bad("an incomplete hex escape");
            v = v * 16 + d;
            ++pos_;
        }
        return v;
    }

    // The general categories by name, as 128-bit sets of properties bytes.
    static bool category_bits(std::string_view name, std::array<uint64_t, 2>& bits) {
        static constexpr std::string_view kNames[] = {"Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl",
                                                      "No", "Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "Sm", "Sc",
                                                      "Sk", "So", "Zs", "Zl", "Zp", "Cc", "Cf", "Cs", "Co", "Cn"};
        bits = {};
        bool any = false;
        for (uint32_t k = 0; k < 30; ++k) {
            bool match = name.size() == 1 ? kNames[k][0] == name[0] : kNames[k] == name;
            if (!match) continue;
            any = true;
            for (uint32_t p = 0; p < 128; ++p)
                if ((p & 31) == k) CharSet::set_bit(bits, p);
        }
        return any;
    }
    static std::array<uint64_t, 2> flag_bits(uint8_t flag) {
        std::array<uint64_t, 2> bits{};
        for (uint32_t p = 0; p < 128; ++p)
            if (p & flag) CharSet::set_bit(bits, p);
        return bits;
    }
    static std::array<uint64_t, 2> complement(std::array<uint64_t, 2> bits) { return {~bits[0], ~bits[1]}; }

    // An escape at pos_ (the backslash). Either a class (\p \s \d \w and negations,
    // added to `set`'s properties, true) or one character (in `cp`, false).
    bool escape(CharSet& set, uint32_t& cp, bool in_class) {
        ++pos_;
        if (at_end()) bad("a trailing backslash");
        const uint32_t c = cps_[pos_++];
        std::array<uint64_t, 2> bits{};
        switch (c) {
            case 'p': case 'P': {
                std::string name;
                if (eat('{')) {
                    while (!at_end() && peek() != '}') name += char(cps_[pos_++] & 0x7f);
                    if (!eat('}')) bad("an unclosed \\p{");
                } else if (!at_end()) {
                    if (onig()) fail("the property '\\" + std::string(1, char(c)) + "' without braces");
                    name = std::string(1, char(cps_[pos_++] & 0x7f));
                }
                std::string_view n = name;
                bool negate = c == 'P';
                if (!n.empty() && n[0] == '^') negate = !negate, n.remove_prefix(1);
                if (!(n.size() == 1 || n.size() == 2) || !category_bits(n, bits)) {
                    pos_ -= 1;
                    fail("the property \\" + std::string(1, char(c)) + "{" + name + "} (only general categories are)");
                }
                // Case-insensitive, `regex` takes each of Lu, Ll and Lt for all three (any
                // cased letter), before a negation.
                if (set.icase && !onig() && (n == "Lu" || n == "Ll" || n == "Lt")) {
                    std::array<uint64_t, 2> more;
                    for (std::string_view cased : {"Lu", "Ll", "Lt"})
                        if (category_bits(cased, more)) bits[0] |= more[0], bits[1] |= more[1];
                }
                if (negate) bits = complement(bits);
                break;
            }
            case 'd': case 'D': category_bits("Nd", bits); if (c == 'D') bits = complement(bits); break;
            case 's': case 'S': bits = flag_bits(unicode::kSpaceBit); if (c == 'S') bits = complement(bits); break;
            case 'w': case 'W':
                bits = flag_bits(unicode::kWordBit);
                if (onig()) {
                    // Oniguruma's word: not the joiners U+200C and U+200D (format
                    // characters, the only ones `regex` counts); outside [...] also
                    // ² ³ ¹ ¼ ½ ¾, as its Latin-1 table has them.
                    std::array<uint64_t, 2> format{};
                    category_bits("Cf", format);
                    bits[0] &= ~format[0], bits[1] &= ~format[1];
                    if (!in_class) {
                        set.ranges.insert(set.ranges.end(), {{0xB2, 0xB3}, {0xB9, 0xB9}, {0xBC, 0xBE}});
                        set.negated = c == 'W';
                        break;
                    }
                }
                if (c == 'W') bits = complement(bits);
                break;
            case 'h': case 'H': {
                if (!onig()) fail("the escape '\\" + std::string(1, char(c)) + "'");
                // Oniguruma's Ruby syntax: a hexadecimal digit.
                std::vector<std::pair<uint32_t, uint32_t>> hex = {{'0', '9'}, {'A', 'F'}, {'a', 'f'}};
                if (c == 'H' && in_class) hex = {{0, '0' - 1}, {'9' + 1, 'A' - 1}, {'F' + 1, 'a' - 1}, {'f' + 1, 0x10FFFF}};
                set.ranges.insert(set.ranges.end(), hex.begin(), hex.end());
                if (c == 'H' && !in_class) set.negated = true;
                return true;
            }
            case 'n': cp = '\n'; return false;
            case 'r': cp = '\r'; return false;
            case 't': cp = '\t'; return false;
            case 'f': cp = '\f'; return false;
            case 'v': cp = '\v'; return false;
            case 'a': cp = '\a'; return false;
            case 'e': cp = 0x1b; return false;
            case '0': cp = 0; if (peek() >= '0' && peek() <= '7') fail("an octal escape"); return false;
            case 'x':
                if (eat('{')) {
                    uint64_t v = 0;
                    size_t digits = 0;
                    while (hex_value(peek()) < 16) {
                        v = v * 16 + hex_value(cps_[pos_++]);
                        if (v > 0x10FFFF) bad("a code point past U+10FFFF");
                        ++digits;
                    }
                    if (!digits || !eat('}')) bad("a bad \\x{...} escape");
                    cp = uint32_t(v);
                } else {
                    cp = hex_digits(2);
                }
                return false;
            case 'u': cp = hex_digits(4); return false;
            case 'U':
                if (onig()) fail("the escape '\\U'");
                cp = hex_digits(8);
                if (cp > 0x10FFFF) bad("a code point past U+10FFFF");
                return false;
            case 'b':
                if (in_class) { cp = '\b'; return false; }
                fail("the word boundary '\\b'");
            default:
                if (c >= '1' && c <= '9') fail("a backreference '\\" + std::string(1, char(c)) + "'");
                if (c < 0x80 && ((c | 0x20) >= 'a' && (c | 0x20) <= 'z'))
                    fail("the escape '\\" + std::string(1, char(c)) + "'");
                cp = c;  // an escaped punctuation character (or any non-ASCII one): itself
                return false;
        }
        set.props[0] |= bits[0], set.props[1] |= bits[1];
        return true;
    }

    // One character inside a class, for a range's ends; false where it is a class (\s...).
    bool class_char(CharSet& set, uint32_t& cp) {
        if (peek() == '\\') return !escape(set, cp, true);
        if (peek() == '[') {
            if (peek(1) == ':') fail("a POSIX class '[:'");
            fail("a nested set '[' (escape it as '\\[')");
        }
        cp = cps_[pos_++];
        return true;
    }

    CharSet bracket(bool icase) {
        ++pos_;  // [
        CharSet set;
        set.icase = icase;
        if (eat('^')) set.negated = true;
        bool first = true;
        while (true) {
            if (at_end()) bad("an unclosed '['");
            if (peek() == ']' && !first) {
                ++pos_;
                break;
            }
            first = false;
            if ((peek() == '&' && peek(1) == '&') || (peek() == '-' && peek(1) == '-') ||
                (peek() == '|' && peek(1) == '|') || (peek() == '~' && peek(1) == '~'))
                fail("a set operation '" + std::string(2, char(peek())) + "'");
            uint32_t lo;
            if (!class_char(set, lo)) continue;
            if (peek() == '-' && peek(1) != ']' && peek(1) != 0x110000) {
                ++pos_;
                uint32_t hi;
                CharSet scratch;
                if (!class_char(scratch, hi)) fail("a range whose end is a class");
                if (hi < lo) bad("a range whose end comes before its start");
                set.ranges.push_back({lo, hi});
            } else {
                set.ranges.push_back({lo, lo});
            }
        }
        return set;
    }
};

// --- the compiler: syntax tree -> nodes ------------------------------------------------

class Compiler {
public:
    Compiler(std::vector<Node>& nodes, int& counters) : nodes_(nodes), counters_(counters) {}

    // Nodes for `ast` followed by node `next`; returns the first.
    int compile(const Ast& ast, int next) {
        switch (ast.kind) {
            case Ast::kSet: {
                Node n{Op::kSet};
                n.arg = ast.set, n.next = next;
                return add(std::move(n));
            }
            case Ast::kAnchor: {
                Node n{Op::kAnchor};
                n.arg = ast.set, n.next = next;
                return add(std::move(n));
            }
            case Ast::kSeq: {
                int first = next;
                for (size_t k = ast.items.size(); k-- > 0;) first = compile(*ast.items[k], first);
                return first;
            }
            case Ast::kAlt: {
                Node n{Op::kAlt};
                for (const auto& item : ast.items) n.alts.push_back(compile(*item, next));
                return add(std::move(n));
            }
            case Ast::kLookahead: {
                Node n{Op::kLookahead};
                n.negative = ast.negative, n.next = next;
                n.body = compile(*ast.items[0], add(Node{Op::kSubEnd}));
                return add(std::move(n));
            }
            case Ast::kRepeat: break;
        }
        const Ast& item = *ast.items[0];
        if (ast.max == 0) return next;
        if (item.kind == Ast::kSet) {  // one character at a time: a loop, not a recursion
            Node n{Op::kSetRepeat};
            n.arg = item.set, n.next = next, n.min = ast.min, n.max = ast.max, n.mode = ast.mode;
            return add(std::move(n));
        }
        if (ast.min == 0 && ast.max == 1) {
            // X? is the choice (X, then on) or (on), in the mode's order: no counter.
            Node choice{Op::kAlt};
            if (ast.mode == Mode::kPossessive) {
                Node outer{Op::kPossessive};
                outer.next = next;
                const int end = add(Node{Op::kSubEnd});
                choice.alts = {compile(item, end), end};
                outer.body = add(std::move(choice));
                return add(std::move(outer));
            }
            const int once = compile(item, next);
            choice.alts = ast.mode == Mode::kLazy ? std::vector<int>{next, once} : std::vector<int>{once, next};
            return add(std::move(choice));
        }
        if (ast.mode == Mode::kPossessive) {
            // The greedy repeat, matched once as a whole and never tried again shorter.
            Node outer{Op::kPossessive};
            outer.next = next;
            outer.body = compile_repeat(item, ast.min, ast.max, Mode::kGreedy, add(Node{Op::kSubEnd}));
            return add(std::move(outer));
        }
        return compile_repeat(item, ast.min, ast.max, ast.mode, next);
    }

private:
    std::vector<Node>& nodes_;
    int& counters_;

    int add(Node n) {
        nodes_.push_back(std::move(n));
        return int(nodes_.size() - 1);
    }

    int compile_repeat(const Ast& item, uint32_t min, uint32_t max, Mode mode, int next) {
        const int counter = counters_++;
        const int loop = add(Node{Op::kRepeatLoop});
        const int body = compile(item, loop);
        Node& l = nodes_[loop];
        l.arg = counter, l.next = next, l.body = body, l.min = min, l.max = max, l.mode = mode;
        Node enter{Op::kRepeatEnter};
        enter.arg = counter, enter.next = loop;
        return add(std::move(enter));
    }
};

// --- the matcher -----------------------------------------------------------------------

class Regex {
public:
    // Alternations of up to this many branches get the second-character table (Node::seconds).
    static constexpr size_t kSecondsUpTo = 256;
    // Entries of the second-character tables a pattern may have in all (24 bytes each),
    // which also bounds the time spent making them.
    static constexpr size_t kSecondsBudget = size_t(1) << 16;

    explicit Regex(std::string_view pattern, Dialect dialect = Dialect::kPython) : text_(pattern), dialect_(dialect) {
        Parser parser(pattern, sets_, dialect);
        auto ast = parser.parse();
        Compiler compiler(nodes_, counters_);
        const int match = int(nodes_.size());
        nodes_.push_back(Node{Op::kMatch});
        start_ = compiler.compile(*ast, match);
        for (Node& node : nodes_)
            if (node.op == Op::kSet || node.op == Op::kSetRepeat) node.set = &sets_[size_t(node.arg)];
        starts_ = all_first_chars();
        std::vector<char> seen(nodes_.size(), 0);
        std::vector<int> todo;
        // The pattern's own alternation first: it is tried at every chunk, so it gets the
        // second-character table before the budget for them runs out.
        std::vector<int> alternations;
        if (nodes_[size_t(start_)].op == Op::kAlt) alternations.push_back(start_);
        for (size_t id = 0; id < nodes_.size(); ++id)
            if (nodes_[id].op == Op::kAlt && int(id) != start_) alternations.push_back(int(id));
        size_t seconds_left = kSecondsBudget;
        for (int id : alternations) {
            Node& node = nodes_[size_t(id)];
            if (node.alts.size() > UINT16_MAX) throw std::invalid_argument("split pattern: over 65535 alternatives");
            for (int branch : node.alts) node.firsts.push_back(starts_[size_t(branch)]);
            node.second_known.assign(node.alts.size(), false);
            // The second-character table costs 128 entries a branch: an alternation of a
            // word list (thousands of branches) goes without it, and so do alternations
            // past the pattern's budget for them.
            const size_t entries = node.alts.size() * 128;
            if (node.alts.size() > kSecondsUpTo || entries > seconds_left) continue;
            bool any_known = false;
            for (size_t k = 0; k < node.alts.size(); ++k) {
                bool known = false;
                for (uint32_t c = 0; c < 128; ++c) {
                    node.seconds.push_back(after_first(node.alts[k], c, seen, todo));
                    const FirstChars& f = node.seconds.back();
                    known |= ~f.ascii[0] || ~f.ascii[1] || !f.non_ascii;
                }
                node.second_known[k] = known;
                any_known |= known;
            }
            seconds_left -= entries;  // spent in the work of making them, kept or not
            if (!any_known) node.seconds = {};
        }
        for (Node& node : nodes_)
            if (node.op == Op::kAlt) {
                for (uint32_t key = 0; key < 130; ++key) {
                    node.by_first[key] = uint32_t(node.branches.size());
                    for (size_t k = 0; k < node.alts.size(); ++k)
                        if (key == 129 || (key == 128 ? node.firsts[k].non_ascii : node.firsts[k].may_start(key)))
                            node.branches.push_back(uint16_t(k));
                }
                node.by_first[130] = uint32_t(node.branches.size());
            }
        succeeds_ = all_always_succeed();
        for (Node& node : nodes_)
            if (node.op == Op::kSetRepeat) {
                node.ends_match = nodes_[size_t(node.next)].op == Op::kMatch;
                node.keeps_all = node.mode == Mode::kPossessive || succeeds_[size_t(node.next)];
            }
        // The pattern's own alternation (the one a chunk starts in) runs its straight
        // branches without the interpreter.
        if (nodes_[size_t(start_)].op == Op::kAlt)
            for (int branch : nodes_[size_t(start_)].alts) straights_.push_back(straight_line(branch));
        else
            whole_straight_ = straight_line(start_);  // (\p{N}{1,3}: one class, repeated)
    }

    // Not copied or moved: the straight branches point into sets_.
    Regex(const Regex&) = delete;
    Regex& operator=(const Regex&) = delete;

    const std::string& text() const { return text_; }

    class Matcher;

private:
    // The nodes a match from node id may go on to without taking a character (its k-th
    // such, -1 past the last): what it can start with is theirs too.
    int empty_successor(int id, size_t k) const {
        const Node& node = nodes_[size_t(id)];
        switch (node.op) {
            case Op::kSetRepeat: return k == 0 && node.min == 0 ? node.next : -1;
            case Op::kAlt: return k < node.alts.size() ? node.alts[k] : -1;
            case Op::kRepeatEnter: return k == 0 ? node.next : -1;
            case Op::kRepeatLoop: return k == 0 ? node.body : k == 1 ? node.next : -1;
            case Op::kPossessive: return k == 0 ? node.body : -1;
            case Op::kLookahead:
                // (?!) never matches (its empty body always does): nothing can start it.
                // A pattern's text with |(?!) added, so that no name stands for it, would
                // otherwise keep every branch before it from being the last.
                if (node.negative && nodes_[size_t(node.body)].op == Op::kSubEnd) return -1;
                return k == 0 ? node.next : -1;
            default: return -1;
        }
    }
    // What node id can start with by itself: its class's characters, or anything where
    // the match (or a lookahead's body) may end there.
    FirstChars own_first_chars(int id) const {
        const Node& node = nodes_[size_t(id)];
        FirstChars f;
        switch (node.op) {
            case Op::kSet: case Op::kSetRepeat:
                f.ascii = sets_[size_t(node.arg)].ascii;
                f.non_ascii = true;
                return f;
            case Op::kMatch: case Op::kSubEnd: case Op::kAnchor: return FirstChars::any();
            default: return f;
        }
    }

    // What a match from each node can start with: the union of own_first_chars over the
    // nodes it reaches by empty_successor. A repeat's loop leads back to itself, so the
    // nodes that reach each other (found by Tarjan's algorithm, with a stack of its own
    // rather than recursion) share one answer; each node and edge is looked at once.
    // (?=x) and (?!x) of one class narrow the answer to what passes them, where they
    // are not on such a loop.
    std::vector<FirstChars> all_first_chars() const {
        const size_t count = nodes_.size();
        std::vector<FirstChars> first(count);
        std::vector<int> index(count, -1), low(count, 0), group(count, -1), stack;
        std::vector<char> on_stack(count, 0);
        struct Frame { int id; size_t k; };
        std::vector<Frame> calls;
        int visited = 0, groups = 0;
        auto enter = [&](int id) {
            index[size_t(id)] = low[size_t(id)] = visited++;
            stack.push_back(id);
            on_stack[size_t(id)] = 1;
            calls.push_back({id, 0});
        };
        for (size_t root = 0; root < count; ++root) {
            if (index[root] >= 0) continue;
            enter(int(root));
            while (!calls.empty()) {
                Frame& frame = calls.back();
                const int id = frame.id;
                const int to = empty_successor(id, frame.k);
                if (to >= 0) {
                    ++frame.k;
                    if (index[size_t(to)] < 0) enter(to);
                    else if (on_stack[size_t(to)]) low[size_t(id)] = std::min(low[size_t(id)], index[size_t(to)]);
                    continue;
                }
                calls.pop_back();
                if (!calls.empty()) low[size_t(calls.back().id)] = std::min(low[size_t(calls.back().id)], low[size_t(id)]);
                if (low[size_t(id)] != index[size_t(id)]) continue;
                // id and the nodes above it on the stack reach each other: one answer.
                size_t from = stack.size();
                do --from; while (stack[from] != id);
                for (size_t m = from; m < stack.size(); ++m) group[size_t(stack[m])] = groups;
                FirstChars f;
                bool loop = stack.size() - from > 1;
                for (size_t m = from; m < stack.size(); ++m) {
                    const int member = stack[m];
                    f.add(own_first_chars(member));
                    for (size_t k = 0;; ++k) {
                        const int to = empty_successor(member, k);
                        if (to < 0) break;
                        if (group[size_t(to)] == groups) loop = true;
                        else f.add(first[size_t(to)]);
                    }
                }
                const Node& node = nodes_[size_t(id)];
                if (!loop && node.op == Op::kLookahead) {
                    const Node& body = nodes_[size_t(node.body)];
                    if (body.op == Op::kSet && nodes_[size_t(body.next)].op == Op::kSubEnd) {
                        const CharSet& set = sets_[size_t(body.arg)];
                        for (int w = 0; w < 2; ++w) f.ascii[w] &= node.negative ? ~set.ascii[w] : set.ascii[w];
                    }
                }
                for (size_t m = from; m < stack.size(); ++m) {
                    first[size_t(stack[m])] = f;
                    on_stack[size_t(stack[m])] = 0;
                }
                stack.resize(from);
                ++groups;
            }
        }
        return first;
    }

    // What the second character of a match from node id can be, its first being the
    // ASCII character c (nothing, where c cannot be its first). Conservative: anything
    // where the first character is not taken by a class or a repeat of one, or where
    // more than kAfterFirstNodes nodes would have to be looked at (so that an alternation
    // of alternations costs a bounded time a question, not one a path through them).
    static constexpr int kAfterFirstNodes = 32;
    FirstChars after_first(int id, uint32_t c, std::vector<char>& seen, std::vector<int>& todo) const {
        FirstChars f;
        bool anything = false;
        int looked = 0;
        todo.assign(1, id);
        std::vector<int> marked;
        while (!todo.empty() && !anything) {
            const int at = todo.back();
            todo.pop_back();
            if (seen[size_t(at)]) continue;
            if (++looked > kAfterFirstNodes) {
                anything = true;
                break;
            }
            seen[size_t(at)] = 1;
            marked.push_back(at);
            const Node& node = nodes_[size_t(at)];
            switch (node.op) {
                case Op::kSet:
                    if (sets_[size_t(node.arg)].contains(c)) f.add(starts_[size_t(node.next)]);
                    break;
                case Op::kSetRepeat: {
                    const CharSet& set = sets_[size_t(node.arg)];
                    if (set.contains(c)) {
                        if (node.max > 1) f.add(FirstChars{set.ascii, true});   // another of the set
                        if (node.min <= 1) f.add(starts_[size_t(node.next)]);  // or the rest
                    }
                    if (node.min == 0) todo.push_back(node.next);  // none taken
                    break;
                }
                case Op::kAlt:
                    for (size_t k = node.alts.size(); k-- > 0;) todo.push_back(node.alts[k]);
                    break;
                default: anything = true; break;  // kMatch: the match may end before c (a(?:|bc) at "abc")
            }
        }
        for (int at : marked) seen[size_t(at)] = 0;
        return anything ? FirstChars::any() : f;
    }

    // For each node, whether a match from it succeeds wherever it starts, consuming
    // nothing if it must (a match already begun: kMatch needs only a non-empty one):
    // then a greedy repeat before it never has to back off. Conservative: false where
    // unsure. Branches and a repeat's next are made before the node that leads to them
    // (Compiler::compile), so one pass in order answers each from answers already made.
    std::vector<char> all_always_succeed() const {
        std::vector<char> succeeds(nodes_.size(), 0);
        auto known = [&](int to, size_t id) { return size_t(to) < id && succeeds[size_t(to)]; };
        for (size_t id = 0; id < nodes_.size(); ++id) {
            const Node& node = nodes_[id];
            switch (node.op) {
                case Op::kMatch: succeeds[id] = 1; break;
                case Op::kAlt:
                    for (int branch : node.alts) succeeds[id] |= known(branch, id);
                    break;
                case Op::kSetRepeat: succeeds[id] = node.min == 0 && known(node.next, id); break;
                default: break;
            }
        }
        return succeeds;
    }

    // The branch from node id as a straight line of classes (count 0 where it is not
    // one): its items in straight_items_, each checked to be one that never needs to
    // give back.
    Straight straight_line(int id) {
        static constexpr size_t kMaxItems = 8;
        struct Item { StraightItem item; int set; bool possessive; };
        std::vector<Item> items;
        int tail = -1;
        auto is_set_then = [&](int node, int next) {
            return nodes_[size_t(node)].op == Op::kSet && nodes_[size_t(node)].next == next;
        };
        while (nodes_[size_t(id)].op != Op::kMatch) {
            const Node& node = nodes_[size_t(id)];
            if (items.size() == kMaxItems) return {};
            if (node.op == Op::kSet) {
                items.push_back({{&sets_[size_t(node.arg)], 1, 1}, node.arg, false});
            } else if (node.op == Op::kSetRepeat && node.mode != Mode::kLazy) {
                items.push_back({{&sets_[size_t(node.arg)], node.min, node.max}, node.arg, node.mode == Mode::kPossessive});
            } else if (node.op == Op::kAlt && node.alts.size() == 2 && is_set_then(node.alts[0], node.alts[1])) {
                const int x = nodes_[size_t(node.alts[0])].arg;
                items.push_back({{&sets_[size_t(x)], 0, 1}, x, false});  // X?
                id = node.alts[1];
                continue;
            } else if (node.op == Op::kPossessive && nodes_[size_t(node.body)].op == Op::kAlt) {  // X?+
                const Node& choice = nodes_[size_t(node.body)];
                if (!(choice.alts.size() == 2 && nodes_[size_t(choice.alts[1])].op == Op::kSubEnd &&
                      is_set_then(choice.alts[0], choice.alts[1])))
                    return {};
                const int x = nodes_[size_t(choice.alts[0])].arg;
                items.push_back({{&sets_[size_t(x)], 0, 1}, x, true});
            } else if (node.op == Op::kLookahead && node.negative && nodes_[size_t(node.body)].op == Op::kSet &&
                       nodes_[size_t(nodes_[size_t(node.body)].next)].op == Op::kSubEnd &&
                       nodes_[size_t(node.next)].op == Op::kMatch) {
                tail = nodes_[size_t(node.body)].arg;
                break;
            } else {
                return {};
            }
            id = node.next;
        }
        if (items.empty()) return {};
        // Oniguruma's first match may be empty, which a straight branch does not tell
        // from none: one that can match nothing is left to the interpreter.
        if (dialect_ == Dialect::kOniguruma && tail < 0 &&
            std::all_of(items.begin(), items.end(), [](const Item& it) { return it.item.min == 0; }))
            return {};
        Straight st;
        if (items.size() >= 2 && tail < 0) {
            const Item &run = items[items.size() - 2], &last = items.back();
            st.ends_on_last_of = !run.possessive && run.item.min == 0 && run.item.max == kUnbounded &&
                                 last.item.min == 1 &&
                                 CharSet::surely_within(sets_[size_t(last.set)], sets_[size_t(run.set)]);
        }
        // Giving back never helps where what follows a repeat cannot start with a
        // character of it: the items after it up to the first that must take one.
        for (size_t j = 0; j < items.size(); ++j) {
            const Item& it = items[j];
            if (it.possessive || it.item.min == it.item.max) continue;
            if (st.ends_on_last_of && j == items.size() - 2) continue;  // gives back by its own rule
            const CharSet& set = sets_[size_t(it.set)];
            // (Nothing after it that must take a character: the rest matches wherever
            // it starts. The lookahead's, after the last item, is the tail's case below.)
            for (size_t k = j + 1; k < items.size(); ++k) {
                if (!CharSet::surely_disjoint(set, sets_[size_t(items[k].set)])) return {};
                if (items[k].item.min > 0) break;
            }
        }
        if (tail >= 0) {
            const Item& last = items.back();
            // The last item must take a character (so that it is what comes before the
            // lookahead, after any other item's giving back), and gives back one, which
            // the lookahead passes.
            if (last.item.min == 0 || !CharSet::surely_disjoint(sets_[size_t(last.set)], sets_[size_t(tail)]))
                return {};
            st.tail = &sets_[size_t(tail)];
            st.last_gives_back = !last.possessive && last.item.max > last.item.min;
        }
        st.first = uint32_t(straight_items_.size());
        st.count = uint32_t(items.size());
        for (const Item& it : items) straight_items_.push_back(it.item);
        return st;
    }

    struct Counter {
        uint32_t count = 0;
        // Where the last time through past the minimum began: one that matched nothing
        // ends the repeat (as in `regex`: times up to the minimum may match nothing and
        // go on).
        size_t optional_start = SIZE_MAX;
    };

public:
    // Backtracking keeps the choices it may come back to (a branch with others after it,
    // a repeat that may give back or go on, a lookahead's body) on a stack of its own, on
    // the heap, not the caller's: a match may be as long as the text, whatever the
    // pattern. That stack holds at most kMinFrames + kFramesPerByte a byte of text
    // (32 bytes each); past it, a RuntimeError. A repeat of a single class (\p{L}+)
    // whose rest cannot start inside it keeps none.
    static constexpr size_t kFramesPerByte = 4, kMinFrames = size_t(1) << 20;
    // Steps one text may take, all positions together: a node of the program visited, a
    // branch looked at, and a character a repeat takes or gives back are each one. A
    // pattern that backtracks exponentially ((?:a+)+b on "aaaa...") or scans the rest of
    // the text at each place (\p{L}*\d|\p{L} on letters) is a RuntimeError, not a hang.
    // The patterns in use take a few steps a byte.
    static constexpr size_t kStepsPerByte = 100, kMinSteps = size_t(1) << 22;

    // The steps a text of `bytes` bytes may take.
    static ptrdiff_t steps_for(size_t bytes) {
        const size_t most = size_t(PTRDIFF_MAX - ptrdiff_t(kMinSteps)) / kStepsPerByte;
        return ptrdiff_t(kMinSteps + kStepsPerByte * std::min(bytes, most));
    }

    Dialect dialect() const { return dialect_; }

private:

    std::string text_;
    Dialect dialect_;
    std::vector<CharSet> sets_;
    std::vector<Node> nodes_;
    std::vector<FirstChars> starts_;  // what a match from each node can start with
    std::vector<char> succeeds_;      // always_succeeds, for each node
    std::vector<Straight> straights_;  // for each branch of the pattern's alternation (Straight)
    Straight whole_straight_;          // the pattern's, where it is not an alternation
    std::vector<StraightItem> straight_items_;  // their items
    int counters_ = 0;
    int start_ = 0;

public:
    // Matches the pattern in one text (a segment, valid UTF-8), at one position after
    // another: the text, and the state that backtracking restores.
    class Matcher {
    public:
        Matcher(const Regex& re, std::string_view text) : Matcher(re, text, steps_for(text.size())) {}
        // With `steps` left of a budget that a larger text holds (steps_for its size), the
        // pieces of that text drawing on it in turn: steps_left() is what is left after.
        Matcher(const Regex& re, std::string_view text, ptrdiff_t steps)
            : re(re), s(reinterpret_cast<const unsigned char*>(text.data())), n(text.size()),
              counters(size_t(re.counters_)), steps_left_(steps),
              max_frames(kMinFrames + kFramesPerByte * text.size()),
              empty_matches(re.dialect_ == Dialect::kOniguruma) {}

        // The end of the first match at byte `at`, or `at` where there is none. In
        // Python's dialect only a match that is not empty counts, the branches and
        // repeats after an empty one tried in turn; in Oniguruma's the first match counts,
        // empty or not (Hugging Face's Split then cuts the text there): `matched_empty`
        // says whether an empty one was found.
        size_t match_at(size_t at) {
            matched_empty = false;
            origin = at;
            check_budget();
            std::fill(counters.begin(), counters.end(), Counter{});
            const Node& top = re.nodes_[size_t(re.start_)];
            if (top.op != Op::kAlt) {
                if (re.whole_straight_.count) return run_straight(re.whole_straight_, at);
                return run(re.start_, at) ? found(at) : at;
            }
            // The pattern's alternatives, tried here rather than from a frame: a chunk
            // costs one frame less, and the straight branches run without the interpreter.
            const uint16_t *k = top.branches.data() + top.by_first[first_key(at)],
                           *last = top.branches.data() + top.by_first[first_key(at) + 1];
            charge(last - k);
            for (; k < last; ++k) {
                if (!second_allows(top, *k, at)) continue;
                const Straight& straight = re.straights_[*k];
                if (straight.count) {
                    const size_t e = run_straight(straight, at);
                    if (e > at) return e;
                } else if (run(top.alts[*k], at)) {
                    return found(at);
                }
            }
            return at;
        }
        // Whether a match (empty or not) starts at byte `at`.
        bool matches_at(size_t at) { return match_at(at) > at || matched_empty; }
        bool matched_empty = false;

        // Whether a match may start at byte `at` (false: surely none does, not even an
        // empty one), from its first byte alone.
        bool may_match_at(size_t at) const { return may_start(re.start_, at); }

        // The first place from `at` (a character's start) where a match may start, or
        // near it: a pattern that is one straight line of classes whose first must take a
        // character (\p{N}{1,3}, a run of CJK ranges) skips the ASCII bytes outside that
        // class 16 at a time, where a split step runs over text it mostly does not match.
        size_t skip_to_candidate(size_t at) const {
#if defined(BPE_PATTERN_SSE2)
            const Straight& straight = re.whole_straight_;
            if (!straight.count) return at;
            const StraightItem& first = re.straight_items_[straight.first];
            const CharSet& set = *first.set;
            // (No ASCII ranges to compare with, num_runs 0, where the set has too many.)
            if (first.min == 0 || (set.num_runs == 0 && (set.ascii[0] | set.ascii[1]))) return at;
            while (at + 16 <= n) {
                uint32_t high;
                const uint32_t members = set.ascii_members(s + at, high) | high;
                if (members) return at + uint32_t(__builtin_ctz(members));
                at += 16;
            }
#endif
            return at;
        }

        ptrdiff_t steps_left() const { return steps_left_; }

    private:
        size_t found(size_t at) {
            matched_empty = end == at;
            return end;
        }

        // A choice to come back to, or a state to restore on the way back.
        enum class Back : uint8_t {
            kAlt,        // branches[a..b) of alternation `node` at pos, still to try
            kBackOff,    // greedy repeat `node` took a characters from `extra` to pos: one fewer
            kLazySet,    // lazy repeat `node` took a characters, up to pos: one more
            kLoopNext,   // greedy repeated group `node` at pos: on past it instead, counter a back to {b, extra}
            kLoopAgain,  // lazy repeated group `node` at pos: another time through instead
            kRestore,    // counter a was {b, extra}
            kBarrier,    // lookahead or possessive group `node` began at pos; extra: the barrier before
        };
        struct Frame {
            Back kind;
            int node;
            uint32_t a, b;
            size_t pos, extra;
        };

        const Regex& re;
        const unsigned char* s;
        size_t n;
        std::vector<Counter> counters;
        // The frames, kept between matches so that each reuses the memory: an array of
        // its own, so that a push is one test (room left) and a store.
        struct Frames {
            std::unique_ptr<Frame[]> data;
            size_t count = 0, room = 0;
            size_t size() const { return count; }
            bool empty() const { return count == 0; }
            void clear() { count = 0; }
            Frame& back() { return data[count - 1]; }
            void pop_back() { --count; }
            void resize(size_t k) { count = k; }
            Frame& operator[](size_t k) { return data[k]; }
        } frames;
        size_t origin = 0;
        size_t end = 0;
        size_t barrier = SIZE_MAX;  // the innermost open lookahead's or possessive group's frame
        ptrdiff_t steps_left_;
        size_t max_frames;
        bool empty_matches;

        [[noreturn, gnu::noinline, gnu::cold]] void too_many_frames() const {
            throw std::runtime_error("split pattern: the match kept too many choices to come back to (over " +
                                     std::to_string(max_frames) + " for this text: " + std::to_string(kFramesPerByte) +
                                     " a byte); simplify the pattern");
        }
        [[noreturn, gnu::noinline, gnu::cold]] static void too_many_steps() {
            throw std::runtime_error("split pattern: the match backtracked too much (over " +
                                     std::to_string(kStepsPerByte) + " steps a byte of text): the pattern "
                                     "repeats a repeat, as (a+)+b does, or scans the rest of the text at each "
                                     "place, as \\p{L}*\\d|\\p{L} does; simplify it");
        }
        // Counts `count` steps against the budget; check_budget ends the match once it
        // is spent. Charging does not check, so that the hot loops only subtract: the
        // checks come at each choice taken back, each place tried (match_at) and each
        // place a repeat gives back.
        BPE_ALWAYS_INLINE void charge(ptrdiff_t count) { steps_left_ -= count; }
        BPE_ALWAYS_INLINE void check_budget() const {
            if (steps_left_ < 0) too_many_steps();
        }
        BPE_ALWAYS_INLINE void push(Back kind, int node, uint32_t a, uint32_t b, size_t pos, size_t extra) {
            if (frames.count == frames.room) grow();
            frames.data[frames.count++] = Frame{kind, node, a, b, pos, extra};
        }
        [[gnu::noinline]] void grow() {
            if (frames.room >= max_frames) too_many_frames();
            const size_t room = std::min(max_frames, std::max<size_t>(64, frames.room * 2));
            std::unique_ptr<Frame[]> bigger(new Frame[room]);
            std::copy(frames.data.get(), frames.data.get() + frames.count, bigger.get());
            frames.data = std::move(bigger);
            frames.room = room;
        }

        // The character at i (i < n): its code point, and its length in `len`.
        uint32_t char_at(size_t i, uint32_t& len) const {
            len = 1;
            const uint32_t b = s[i];
            return b < 0x80 ? b : unicode::decode_multibyte(s, n, i, &len);
        }
        // The start of the character that ends at i (i > 0).
        size_t back_one(size_t i, size_t floor) const {
            do --i; while (i > floor && (s[i] & 0xC0) == 0x80);
            return i;
        }

        bool at_anchor(int which, size_t i) const {
            switch (which) {
                case kEndOrFinalNewline: return i == n || (i + 1 == n && s[i] == '\n');
                case kEnd: return i == n;
                case kStart: return i == 0;
                case kLineEnd: return i == n || s[i] == '\n';
                // kLineStart: no line starts at the end, after a final \n
                default: return i == 0 || (s[i - 1] == '\n' && i < n);
            }
        }

        // A match of the program from node id at i: forward until it matches or fails,
        // then back to the last choice kept, until none is left.
        bool run(int id, size_t i) {
            frames.clear();
            barrier = SIZE_MAX;
            while (true) {
                if (forward(id, i)) return true;
                if (!backtrack(id, i)) return false;
            }
        }

        // From node id at i until the match ends (true: `end` is set) or fails here
        // (false: back to the last choice). Choices are kept as frames.
        // The nodes forward visits, a step each: counted in a register and charged as it
        // returns (budget checks come at backtracking; between two, forward's walk is
        // bounded by the frames it may keep and the text).
        struct Visits {
            ptrdiff_t& steps_left;
            ptrdiff_t count = 0;
            ~Visits() { steps_left -= count; }
        };

        bool forward(int id, size_t i) {
            Visits visits{steps_left_};
            while (true) {
                ++visits.count;
                const Node& node = re.nodes_[size_t(id)];
                switch (node.op) {
                    case Op::kMatch:
                        if (i == origin && !empty_matches) return false;  // Python's: an empty match never makes a chunk
                        end = i;
                        return true;
                    case Op::kSubEnd: {
                        // The body of the innermost lookahead or possessive group matched:
                        // its choices are dropped (the counters they changed restored), as
                        // the group is matched once, its first way.
                        const size_t b = barrier;
                        for (size_t k = frames.size(); k-- > b + 1;)
                            if (frames[k].kind == Back::kRestore || frames[k].kind == Back::kLoopNext)
                                counters[frames[k].a] = Counter{frames[k].b, frames[k].extra};
                        const Frame f = frames[b];
                        frames.resize(b);
                        barrier = f.extra;
                        const Node& group = re.nodes_[size_t(f.node)];
                        if (group.op == Op::kLookahead) {
                            if (group.negative) return false;
                            i = f.pos;
                        }
                        id = group.next;
                        continue;
                    }
                    case Op::kAnchor:
                        if (!at_anchor(node.arg, i)) return false;
                        id = node.next;
                        continue;
                    case Op::kSet: {
                        if (i >= n) return false;
                        uint32_t len;
                        if (!node.set->contains(char_at(i, len))) return false;
                        i += len;
                        id = node.next;
                        continue;
                    }
                    case Op::kSetRepeat: {
                        if (node.mode == Mode::kLazy) {
                            if (node.min == 0) {
                                push(Back::kLazySet, id, 0, 0, i, 0);
                                id = node.next;
                                continue;
                            }
                            // The minimum first, then as kLazySet from there.
                            const uint32_t count = take_set(*node.set, node.min, i);
                            if (count < node.min) return false;
                            push(Back::kLazySet, id, count, 0, i, 0);
                            id = node.next;
                            continue;
                        }
                        const size_t from = i;
                        const uint32_t count = take_set(node, i);
                        if (count < node.min) return false;
                        // Possessive, or greedy with the match ending here: the longest
                        // is the only try, so no frame to come back to.
                        if (node.ends_match) {  // kMatch, here: one dispatch less
                            if (i == origin && !empty_matches) return false;
                            end = i;
                            return true;
                        }
                        // Possessive; or greedy where giving back cannot help: the rest
                        // matches after the longest anyway (the match is not empty, as
                        // count > min), or cannot start at any place given back. Then
                        // on, without a frame.
                        if (node.keeps_all || count == node.min || !any_back_off(node, from, i, count)) {
                            id = node.next;
                            continue;
                        }
                        push(Back::kBackOff, id, count, 0, i, from);
                        if (!may_start(node.next, i)) return false;  // straight to a shorter one
                        id = node.next;
                        continue;
                    }
                    case Op::kAlt: {
                        // Only the branches that can start with the character here
                        // (at the end, all: some may match nothing there).
                        const uint32_t first = node.by_first[first_key(i)], last = node.by_first[first_key(i) + 1];
                        if (first == last) return false;
                        charge(last - first);
                        const uint32_t k = next_branch(node, first, last, i);
                        if (k + 1 < last) push(Back::kAlt, id, k + 1, last, i, 0);
                        id = node.alts[node.branches[k]];
                        continue;
                    }
                    case Op::kRepeatEnter: {
                        const Counter saved = counters[size_t(node.arg)];
                        push(Back::kRestore, id, uint32_t(node.arg), saved.count, 0, saved.optional_start);
                        counters[size_t(node.arg)] = Counter{0, SIZE_MAX};
                        id = node.next;
                        continue;
                    }
                    case Op::kRepeatLoop: {
                        const Counter saved = counters[size_t(node.arg)];
                        // A time through past the minimum that matched nothing ends the
                        // repeat (no endless loop); one before it does not.
                        const bool can_go_on = saved.count < node.max && saved.optional_start != i;
                        if (saved.count < node.min) {
                            again(node, i);
                            id = node.body;
                            continue;
                        }
                        if (node.mode == Mode::kLazy) {
                            if (can_go_on) push(Back::kLoopAgain, id, 0, 0, i, 0);
                            id = node.next;
                            continue;
                        }
                        if (!can_go_on) {
                            id = node.next;
                            continue;
                        }
                        // One frame both to restore the counter and to go on past.
                        push(Back::kLoopNext, id, uint32_t(node.arg), saved.count, i, saved.optional_start);
                        counters[size_t(node.arg)] = Counter{saved.count + 1, i};
                        id = node.body;
                        continue;
                    }
                    case Op::kPossessive:
                        push(Back::kBarrier, id, 0, 0, i, barrier);
                        barrier = frames.size() - 1;
                        id = node.body;
                        continue;
                    case Op::kLookahead: {
                        // (?!\S), (?=x): one character's test, without a frame.
                        const Node& body = re.nodes_[size_t(node.body)];
                        if (body.op == Op::kSet && re.nodes_[size_t(body.next)].op == Op::kSubEnd) {
                            uint32_t len;
                            const bool found = i < n && body.set->contains(char_at(i, len));
                            if (found == node.negative) return false;
                            id = node.next;
                            continue;
                        }
                        push(Back::kBarrier, id, 0, 0, i, barrier);
                        barrier = frames.size() - 1;
                        id = node.body;
                        continue;
                    }
                }
            }
        }

        // Another time through repeated group `node` at i: its counter one on, the old
        // value kept to restore.
        void again(const Node& node, size_t i) {
            const Counter saved = counters[size_t(node.arg)];
            push(Back::kRestore, -1, uint32_t(node.arg), saved.count, 0, saved.optional_start);
            counters[size_t(node.arg)] = Counter{saved.count + 1, saved.count < node.min ? saved.optional_start : i};
        }

        // The first of branches[k..last) of an alternation worth trying at i: the last is
        // tried whatever its second character, as no frame is kept for it.
        uint32_t next_branch(const Node& node, uint32_t k, uint32_t last, size_t i) const {
            while (k + 1 < last && !second_allows(node, node.branches[k], i)) ++k;
            return k;
        }

        // Back to the last choice kept: its next way on, as (id, i); false where none is
        // left. Frames that restore state are undone on the way.
        bool backtrack(int& id, size_t& i) {
            check_budget();
            while (!frames.empty()) {
                Frame& f = frames.back();
                const Node& node = re.nodes_[size_t(f.node >= 0 ? f.node : 0)];
                switch (f.kind) {
                    case Back::kRestore:
                        counters[f.a] = Counter{f.b, f.extra};
                        frames.pop_back();
                        continue;
                    case Back::kBarrier: {
                        // The group's body failed: a negative lookahead holds.
                        const Frame gone = f;
                        frames.pop_back();
                        barrier = gone.extra;
                        if (node.op == Op::kLookahead && node.negative) {
                            id = node.next, i = gone.pos;
                            return true;
                        }
                        continue;
                    }
                    case Back::kAlt: {
                        const uint32_t k = next_branch(node, f.a, f.b, f.pos);
                        id = node.alts[node.branches[k]], i = f.pos;
                        if (k + 1 < f.b) f.a = k + 1;
                        else frames.pop_back();
                        return true;
                    }
                    case Back::kBackOff: {
                        // One character shorter at a time, to a place where the rest can start.
                        while (f.a > node.min) {
                            f.pos = back_one(f.pos, f.extra), --f.a;
                            charge(1);
                            if (may_start(node.next, f.pos)) {
                                id = node.next, i = f.pos;
                                if (f.a == node.min) frames.pop_back();
                                return true;
                            }
                        }
                        check_budget();
                        frames.pop_back();
                        continue;
                    }
                    case Back::kLazySet: {
                        uint32_t len;
                        if (f.a == node.max || f.pos >= n || !node.set->contains(char_at(f.pos, len))) {
                            frames.pop_back();
                            continue;
                        }
                        charge(1);
                        f.pos += len, ++f.a;
                        id = node.next, i = f.pos;
                        return true;
                    }
                    case Back::kLoopNext: {
                        counters[f.a] = Counter{f.b, f.extra};
                        id = node.next, i = f.pos;
                        frames.pop_back();
                        return true;
                    }
                    case Back::kLoopAgain: {
                        // The counter is back to its value when the frame was kept.
                        const size_t at = f.pos;
                        frames.pop_back();
                        const Counter c = counters[size_t(node.arg)];
                        if (!(c.count < node.max && c.optional_start != at)) continue;
                        again(node, at);
                        id = node.body, i = at;
                        return true;
                    }
                }
            }
            return false;
        }

        // The end of a straight branch's match at i (Straight), or i where it has none.
        // (Out of line: inlined into match_at it measured no faster.)
        [[gnu::noinline]] size_t run_straight(const Straight& straight, size_t i) {
            const size_t at = i;
            size_t last_from = i;
            uint32_t last_count = 0;
            const StraightItem* item = re.straight_items_.data() + straight.first;
            for (const StraightItem* end_item = item + straight.count - straight.ends_on_last_of; item < end_item; ++item) {
                last_from = i;
                last_count = take_set(*item->set, item->max, i);
                if (last_count < item->min) return at;
            }
            if (straight.ends_on_last_of) return after_last_of(*item->set, last_from, i, at);
            if (straight.tail && i < n) {
                uint32_t len;
                if (straight.tail->contains(char_at(i, len))) {
                    if (!straight.last_gives_back || last_count == item[-1].min) return at;
                    i = back_one(i, last_from);
                }
            }
            return i;
        }

        // The end of the last character of `set` in from..i (Straight::ends_on_last_of), or
        // `fail` where there is none.
        size_t after_last_of(const CharSet& set, size_t from, size_t i, size_t fail) const {
#if defined(BPE_PATTERN_SSE2)
            // 16 bytes at a time back from i, while they are ASCII (an indentation's
            // spaces, looked at for a new line that is not there, at every line).
            while (set.num_runs > 0 && i > from && i >= 16) {
                uint32_t high;
                const uint32_t members = set.ascii_members(s + i - 16, high);
                // Byte k is at i - 16 + k: those from `from` on.
                const uint32_t lanes = i - from >= 16 ? 0xFFFF : (0xFFFFu << (16 - (i - from))) & 0xFFFF;
                if (high & lanes) break;  // a character to decode: a byte at a time, below
                if (members & lanes) return i - 16 + (32 - uint32_t(__builtin_clz(members & lanes)));
                if (i - from <= 16) return fail;
                i -= 16;
            }
#endif
            while (i > from) {
                const size_t end = i;
                i = back_one(i, from);
                uint32_t len;
                if (set.contains(char_at(i, len))) return end;
            }
            return fail;
        }

        // Takes as many characters of the set as the repeat allows from i: how many (a
        // step each).
        uint32_t take_set(const Node& node, size_t& i) { return take_set(*node.set, node.max, i); }
        BPE_ALWAYS_INLINE uint32_t take_set(const CharSet& set, uint32_t max, size_t& i) {
            uint32_t count = 0;
            while (count < max && i < n) {
#if defined(BPE_PATTERN_SSE2)
                // An ASCII byte outside the set ends it at once (a word's capitals, none
                // in most words, or the letter after a space), without 16 bytes' work.
                if (s[i] < 0x80 && !CharSet::bit(set.ascii, s[i])) break;
                if (s[i] < 0x80 && set.num_runs > 0 && max > 1 && i + 16 <= n) {  // (X? is one byte's test)
                    bool high_next;
                    const uint32_t all = set.ascii_run(s + i, high_next), run = std::min(all, max - count);
                    i += run, count += run;
                    if (run == 16 || (run == all && high_next)) continue;  // more, or a character to decode
                    break;  // an ASCII byte outside the set, or the repeat's max
                }
#endif
                uint32_t len;
                if (!set.contains(char_at(i, len))) break;
                i += len, ++count;
            }
            charge(count);
            return count;
        }

        // Whether a match from node id may start at i: where it cannot, a call that
        // would fail at its first character is not made.
        bool may_start(int id, size_t i) const { return i >= n || re.starts_[size_t(id)].may_start_byte(s[i]); }

        // The key of Node::by_first for the character at i.
        uint32_t first_key(size_t i) const { return i >= n ? 129 : s[i] < 0x80 ? s[i] : 128; }

        // Whether branch k of an alternation may go on past an ASCII character at i to
        // the one after it, where the branch says anything of its second character.
        bool second_allows(const Node& node, size_t k, size_t i) const {
            return !(i + 1 < n && s[i] < 0x80 && node.second_known[k]) ||
                   node.seconds[k * 128 + s[i]].may_start_byte(s[i + 1]);
        }

        // Whether the rest can start at some place a greedy repeat gives back (a few
        // looked at; more are taken as yes).
        bool any_back_off(const Node& node, size_t from, size_t i, uint32_t count) const {
            if (count - node.min > 8) return true;
            for (; count > node.min; --count) {
                i = back_one(i, from);
                if (may_start(node.next, i)) return true;
            }
            return false;
        }
    };

};

}  // namespace regex_engine

using regex_engine::Regex;

// The end of the chunk that starts at byte i under a compiled pattern: a match's end,
// or, where nothing matches at i (or, in Oniguruma's dialect, the match is empty), the
// next position where something matches (or the text's end), so that unmatched text is
// a chunk of its own. An empty match there cuts the text as Hugging Face's Split does.
// `matcher` is the pattern's on this text.
BPE_ALWAYS_INLINE inline size_t regex_chunk_end(Regex::Matcher& matcher, std::string_view text, size_t i) {
    const size_t end = matcher.match_at(i);
    if (end > i) return end;
    const auto* s = reinterpret_cast<const unsigned char*>(text.data());
    size_t j = i;
    while (true) {
        ++j;
        while (j < text.size() && (s[j] & 0xC0) == 0x80) ++j;
        j = matcher.skip_to_candidate(j);
        if (j >= text.size() || (matcher.may_match_at(j) && matcher.matches_at(j))) return j;
    }
}

}  // namespace bpe
