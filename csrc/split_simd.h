// The split rules again, 64 bytes at a time: the same chunks as the rules' own loops,
// found with bit arithmetic instead of a branch per chunk.
//
// A block of 64 bytes becomes a few 64-bit masks, one bit per byte: letters, digits,
// whitespace, newlines, spaces, apostrophes, bytes >= 0x80. Which bytes start a chunk
// is then a formula over a byte's class and its neighbours' (a shift by one is "the
// byte before"), and the chunks are read off the starts mask by popping its bits.
// Only the classification differs between the SIMD tiers; the formulas are plain C++.
//
// Why the formulas are exact. For each rule, whether a byte starts a chunk depends
// only on the bytes within a few places of it, given one byte known to start a chunk
// before it (the start of the text, or where the scalar loop hands back). The rules,
// per byte p, over ASCII:
//
//   default: a class change (word / punctuation / whitespace), except the byte after
//     a space that starts its chunk (its byte before is not whitespace) and is not
//     whitespace itself: " ?X+" takes the space in.
//   gpt2: a class change (letter / number / whitespace / other); and the last byte of
//     a whitespace run of two or more that a non-space follows (\s+(?!\S) gives it
//     back); minus the byte after a space, when not whitespace (" ?X+"). An
//     apostrophe that starts a chunk and is followed by s, d, m, t, ll, ve or re makes
//     that contraction its chunk, and the byte after it starts the next.
//   gpt4: a letter starts a chunk unless a letter, a whitespace byte other than CR and
//     LF, or an "other" byte that starts its chunk comes before it
//     ([^\r\n\p{L}\p{N}]?+\p{L}+); digits go in groups of three from the start of
//     their run; an "other" byte starts a chunk unless an other byte or a space comes
//     before it; the CR and LF right after a run of other bytes belong to it
//     ([\r\n]*). In a whitespace run: its first byte (unless such a run of other bytes
//     took it), the first byte after the CRs and LFs that run took, the first byte
//     after the run's last CR or LF (\s*[\r\n]), and the last byte when the run has
//     two or more after that and a non-space follows (\s+(?!\S)). Contractions as in
//     gpt2, in either case.
//   qwen2: gpt4's, but every digit starts a chunk (\p{N}).
//   o200k: gpt4's, with three changes. Over ASCII its letter alternatives make a run
//     of upper-case letters then a run of lower-case ones, so an upper-case letter
//     after a lower-case one starts a chunk too. A contraction after letters belongs
//     to them: an apostrophe right after a letter, with a contraction after it, starts
//     nothing, nor do its letters, and the byte after them starts a chunk (but an
//     apostrophe right after a contraction starts a chunk of its own). And [\r\n/]*
//     after punctuation: from a CR or LF right after an other byte to the end of its
//     run of CR, LF and / the bytes are taken, a slash among them is no other byte, and
//     the byte after them starts a chunk.
//
// Where the formulas cannot see far enough, the block is "hard" and the rule's own loop
// takes over from the last chunk start found, up to a place where the block path can
// start afresh: for all but the default rule any byte >= 0x80 (the character must be
// decoded: its class, and for gpt4 the long s that folds to s), and for gpt4, qwen2 and
// o200k a run of spaces that goes on past the next block or into non-ASCII. A block
// hard for a byte >= 0x80 first gives the starts before it that nothing from it on can
// change (decided_before), and the rule's loop goes on only until the bytes ahead are
// ASCII again, so a name with an accent or a curly quote costs a few chunks of the
// loop, not a block or two. The default rule needs no decoding and never hands over.
//
// Tiers: "portable" is the rules' chunk-at-a-time loops; "sse2", "avx2" and "avx512"
// are these blocks, classified 16, 32 or 64 bytes per compare. All are compiled into
// one build (AVX2 and AVX-512 as functions with their own target attribute) and the
// best the CPU has is picked at import, so a wheel runs on any x86-64; ARM and
// BPE_PORTABLE=1 builds have the portable tier alone.
//
// The sse2 tier uses split_bytes.h's class test (classify_16); non-ASCII text goes to
// the rules' own loops (split_rules.h's rule_chunk_end).
//
// Measurements: docs/design-notes.md.
#pragma once

#include <cstdint>
#include <algorithm>
#include <cstring>
#include <string>
#include <string_view>

#include "compiler.h"
#include "split_bytes.h"
#include "split_rules.h"

namespace bpe {
namespace simd {

enum class Tier { kPortable, kSse2, kAvx2, kAvx512 };

inline const char* tier_name(Tier tier) {
    switch (tier) {
        case Tier::kSse2: return "sse2";
        case Tier::kAvx2: return "avx2";
        case Tier::kAvx512: return "avx512";
        default: return "portable";
    }
}

// Bit k of each mask is about byte k of a block. `other` is neither a letter, a
// digit, whitespace nor >= 0x80 (the driver fills it in from the rest).
struct Masks {
    uint64_t high, letter, upper, digit, whitespace, newline, space, apostrophe, slash, other;
};

// The classes of 64 bytes, one at a time: the definition the SIMD versions equal.
inline Masks classify_plain(const unsigned char* p) {
    Masks m{};
    for (int k = 0; k < 64; ++k) {
        const unsigned b = p[k], lower = b | 0x20;
        const uint64_t bit = uint64_t(1) << k;
        if (b >= 0x80) m.high |= bit;
        if (lower >= 'a' && lower <= 'z') m.letter |= bit;
        if (b >= 'A' && b <= 'Z') m.upper |= bit;
        if (b >= '0' && b <= '9') m.digit |= bit;
        if ((b >= '\t' && b <= '\r') || b == ' ') m.whitespace |= bit;
        if (b == '\n' || b == '\r') m.newline |= bit;
        if (b == ' ') m.space |= bit;
        if (b == '\'') m.apostrophe |= bit;
        if (b == '/') m.slash |= bit;
    }
    return m;
}

using ClassifyFn = void (*)(const unsigned char* p, size_t blocks, Masks* out);

#if defined(BPE_SSE2)
// A block is four of split_bytes.h's 16-byte class tests, and the classes that only the
// blocks use: upper-case letters, new lines, apostrophes and slashes.
inline void classify_sse2(const unsigned char* p, size_t blocks, Masks* out) {
    for (size_t k = 0; k < blocks; ++k, p += 64) {
        Masks m{};
        for (int q = 0; q < 4; ++q) {
            const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * q));
            const Lanes16 c = classify_16(v);
            auto bits = [&](__m128i x) { return uint64_t(uint32_t(_mm_movemask_epi8(x))) << (16 * q); };
            m.high |= bits(v);  // the top bit of each byte, c.high without its compare
            m.letter |= bits(c.letter);
            const __m128i upper = _mm_sub_epi8(v, _mm_set1_epi8('A'));
            m.upper |= bits(_mm_cmpeq_epi8(_mm_min_epu8(upper, _mm_set1_epi8(25)), upper));
            m.digit |= bits(c.digit);
            m.whitespace |= bits(c.whitespace);
            m.newline |= bits(_mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('\n')), _mm_cmpeq_epi8(v, _mm_set1_epi8('\r'))));
            m.space |= bits(c.space);
            m.apostrophe |= bits(_mm_cmpeq_epi8(v, _mm_set1_epi8('\'')));
            m.slash |= bits(_mm_cmpeq_epi8(v, _mm_set1_epi8('/')));
        }
        out[k] = m;
    }
}
#endif

#if defined(BPE_X86_TIERS)
BPE_AVX2 inline __m256i in_range_avx2(__m256i x, char lo, char span) {
    __m256i d = _mm256_sub_epi8(x, _mm256_set1_epi8(lo));
    return _mm256_cmpeq_epi8(_mm256_min_epu8(d, _mm256_set1_epi8(span)), d);
}
BPE_AVX2 inline uint64_t bits_avx2(__m256i x, int half) {
    return uint64_t(uint32_t(_mm256_movemask_epi8(x))) << (32 * half);
}
BPE_AVX2 inline __m256i equal_avx2(__m256i v, char c) { return _mm256_cmpeq_epi8(v, _mm256_set1_epi8(c)); }

BPE_AVX2 inline void classify_avx2(const unsigned char* p, size_t blocks, Masks* out) {
    for (size_t k = 0; k < blocks; ++k, p += 64) {
        Masks m{};
        for (int h = 0; h < 2; ++h) {
            const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32 * h));
            m.high |= bits_avx2(v, h);
            m.letter |= bits_avx2(in_range_avx2(_mm256_or_si256(v, _mm256_set1_epi8(0x20)), 'a', 25), h);
            m.upper |= bits_avx2(in_range_avx2(v, 'A', 25), h);
            m.digit |= bits_avx2(in_range_avx2(v, '0', 9), h);
            const __m256i space = equal_avx2(v, ' ');
            m.whitespace |= bits_avx2(_mm256_or_si256(in_range_avx2(v, '\t', 4), space), h);
            m.newline |= bits_avx2(_mm256_or_si256(equal_avx2(v, '\n'), equal_avx2(v, '\r')), h);
            m.space |= bits_avx2(space, h);
            m.apostrophe |= bits_avx2(equal_avx2(v, '\''), h);
            m.slash |= bits_avx2(equal_avx2(v, '/'), h);
        }
        out[k] = m;
    }
}

// x - lo <= span, unsigned: a range test per byte, straight into a mask register.
BPE_AVX512 inline uint64_t in_range_avx512(__m512i x, char lo, char span) {
    return uint64_t(_mm512_cmple_epu8_mask(_mm512_sub_epi8(x, _mm512_set1_epi8(lo)), _mm512_set1_epi8(span)));
}
BPE_AVX512 inline uint64_t equal_avx512(__m512i v, char c) {
    return uint64_t(_mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8(c)));
}

BPE_AVX512 inline void classify_avx512(const unsigned char* p, size_t blocks, Masks* out) {
    for (size_t k = 0; k < blocks; ++k, p += 64) {
        const __m512i v = _mm512_loadu_si512(p);
        Masks m{};
        m.high = uint64_t(_mm512_movepi8_mask(v));
        m.letter = in_range_avx512(_mm512_or_si512(v, _mm512_set1_epi8(0x20)), 'a', 25);
        m.upper = in_range_avx512(v, 'A', 25);
        m.digit = in_range_avx512(v, '0', 9);
        m.space = equal_avx512(v, ' ');
        m.whitespace = in_range_avx512(v, '\t', 4) | m.space;
        m.newline = equal_avx512(v, '\n') | equal_avx512(v, '\r');
        m.apostrophe = equal_avx512(v, '\'');
        m.slash = equal_avx512(v, '/');
        out[k] = m;
    }
}
#endif

inline void classify_portable(const unsigned char* p, size_t blocks, Masks* out) {
    for (size_t k = 0; k < blocks; ++k) out[k] = classify_plain(p + 64 * k);
}

// Which tiers this build and this CPU can run.
inline bool tier_available(Tier tier) {
    switch (tier) {
        case Tier::kPortable: return true;
#if defined(BPE_SSE2)
        case Tier::kSse2: return true;
#endif
#if defined(BPE_X86_TIERS)
        case Tier::kAvx2: return __builtin_cpu_supports("avx2");
        case Tier::kAvx512:
            return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                   __builtin_cpu_supports("avx512dq");
#endif
        default: return false;
    }
}

// The fastest tier here. AVX-512 classifies (one compare per class for 64 bytes
// instead of two or four) and, with VBMI2, hands off the chunk ends (spreader); the
// design notes (docs/design-notes.md) say what each gives.
inline Tier best_tier() {
    for (Tier tier : {Tier::kAvx512, Tier::kAvx2, Tier::kSse2})
        if (tier_available(tier)) return tier;
    return Tier::kPortable;
}

// The tier in use: the best one, unless BPE_SIMD chose another when the module was
// imported (set_tier, before any thread splits).
inline Tier& tier_in_use() {
    static Tier tier = best_tier();
    return tier;
}

// Whether the AVX-512 tier is in use. The AVX-512 code outside the split (the encoder's
// keys, a str's UTF-8) follows the tier too, so that BPE_SIMD runs both of its paths.
inline bool avx512_in_use() { return tier_in_use() == Tier::kAvx512; }

// BPE_SIMD=portable|sse2|avx2|avx512 chooses the tier (read once, when the module is
// loaded). A name that is not a tier, or a tier this CPU or build lacks, leaves the
// best tier in use and returns a warning that says so; else returns "".
inline std::string set_tier_from_environment(const char* value) {
    if (value == nullptr || *value == '\0') return "";
    for (Tier tier : {Tier::kPortable, Tier::kSse2, Tier::kAvx2, Tier::kAvx512}) {
        if (std::string_view(value) != tier_name(tier)) continue;
        if (!tier_available(tier))
            return std::string("BPE_SIMD=") + value + ": this CPU or build cannot run that tier; using " +
                   tier_name(tier_in_use());
        tier_in_use() = tier;
        return "";
    }
    return std::string("BPE_SIMD=") + value + " is not a tier (portable, sse2, avx2 or avx512); using " +
           tier_name(tier_in_use());
}

// The hand-off of a block's chunk ends: for each bit k of `bits`, blk + k, written from
// `at` on, in order; returns one past the last. The encoder takes its chunks as these
// runs of ends (for_each_chunk_run), so this is paid once a chunk.
using SpreadFn = size_t* (*)(size_t* at, size_t blk, uint64_t bits);

// A bit at a time: a trailing-zero count, an add and a store a chunk.
inline size_t* spread_loop(size_t* at, size_t blk, uint64_t bits) {
    for (; bits; bits &= bits - 1) *at++ = blk + unsigned(bpe::count_trailing_zeros(uint64_t(bits)));
    return at;
}

#if defined(BPE_X86_TIERS)
// No loop per bit: the offsets 0..63 compressed by the mask (VPCOMPRESSB) are the set
// bits' offsets, in order, and eight at a time are widened to 64 bits and added to blk.
// Writes up to seven ends past the last (for_each_chunk_run's ends have that room).
BPE_AVX512_VBMI2 inline size_t* spread_compress(size_t* at, size_t blk, uint64_t bits) {
    alignas(64) static constexpr unsigned char kOffsets[64] = {
        0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21,
        22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43,
        44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63};
    alignas(64) unsigned char offsets[64];
    _mm512_store_si512(offsets, _mm512_maskz_compress_epi8(bits, _mm512_load_si512(kOffsets)));
    const size_t count = size_t(__builtin_popcountll(bits));
    const __m512i base = _mm512_set1_epi64(static_cast<long long>(blk));
    for (size_t i = 0; i < count; i += 8) {
        const __m512i wide = _mm512_maskz_cvtepu8_epi64(__mmask8(0xff), _mm_loadl_epi64(reinterpret_cast<const __m128i*>(offsets + i)));
        _mm512_storeu_si512(at + i, _mm512_add_epi64(wide, base));
    }
    return at + count;
}
#endif

// The compress where the AVX-512 tier is in use and the CPU has VBMI2, else the loop.
inline SpreadFn spreader(Tier tier) {
#if defined(BPE_X86_TIERS)
    static const bool vbmi2 = __builtin_cpu_supports("avx512vbmi2");
    if (tier == Tier::kAvx512 && vbmi2) return spread_compress;
#endif
    (void)tier;
    return spread_loop;
}

inline ClassifyFn classifier(Tier tier) {
    switch (tier) {
#if defined(BPE_X86_TIERS)
        case Tier::kAvx512: return classify_avx512;
        case Tier::kAvx2: return classify_avx2;
#endif
#if defined(BPE_SSE2)
        case Tier::kSse2: return classify_sse2;
#endif
        default: return classify_portable;
    }
}

// Bit p set where x was set at p - 1 (the byte before), the block before giving bit 0.
inline uint64_t before(uint64_t x, uint64_t x_of_block_before) { return x << 1 | x_of_block_before >> 63; }
// Bit p set where x is set at p + 1 (the byte after), the next block giving bit 63.
inline uint64_t after(uint64_t x, uint64_t x_of_next_block) { return x >> 1 | x_of_next_block << 63; }

// What a block passes to the next. All zero where a chunk is known to start at the
// block's first byte and nothing before it is looked at.
struct Carry {
    Masks prev{};              // the block before's classes
    uint64_t prev_leads = 0;   // default: its spaces that start a chunk; gpt4, o200k: its other bytes that do
    uint64_t prev_groups = 0;  // gpt4, o200k: its digit groups' first bytes
    uint64_t absorbing = 0;    // gpt4: 1 when its last bytes are CR/LF that a run of other bytes took
    uint64_t prev_other = 0;   // o200k: its other bytes, less the slashes that [\r\n/]* took,
    uint64_t prev_taken = 0;   // and the bytes that [\r\n/]* took
    uint64_t forced = 0;       // contractions: bytes of this block that start a chunk,
    uint64_t cleared = 0;      // and bytes that do not, whatever the formula says
};

// Contractions: the apostrophes in `candidates` start a chunk; where a contraction
// follows one, its letters start none and the byte after them starts one. Bits past
// this block go to the next through the carry.
inline uint64_t apply_contractions(uint64_t starts, uint64_t candidates, const unsigned char* s, size_t n, size_t blk,
                                   bool ignore_case, Carry& carry) {
    uint64_t forced_next = 0, cleared_next = 0;
    for (; candidates; candidates &= candidates - 1) {
        const unsigned k = unsigned(bpe::count_trailing_zeros(uint64_t(candidates)));
        const size_t len = unicode::contraction_length(s, n, blk + k + 1, ignore_case);
        if (len == 0) continue;
        for (unsigned q = k + 1; q <= k + len; ++q) {  // the contraction's letters
            const uint64_t bit = uint64_t(1) << (q & 63);
            if (q < 64) starts &= ~bit; else cleared_next |= bit;
        }
        const unsigned q = unsigned(k + len + 1);  // the byte after it
        if (blk + q < n) {
            const uint64_t bit = uint64_t(1) << (q & 63);
            if (q < 64) starts |= bit; else forced_next |= bit;
        }
    }
    starts = (starts & ~carry.cleared) | carry.forced;
    carry.forced = forced_next, carry.cleared = cleared_next;
    return starts;
}

// o200k's contractions, which end a run of letters: an apostrophe right after a letter
// (in `candidates`) and the contraction after it start no chunk, and the byte after
// them starts one. An apostrophe right after a contraction is not one of these: the
// letters' chunk ended, and the apostrophe starts the next. Bits past this block go to
// the next through the carry.
inline uint64_t apply_trailing_contractions(uint64_t starts, uint64_t candidates, const unsigned char* s, size_t n,
                                            size_t blk, Carry& carry) {
    uint64_t forced = carry.forced, cleared = carry.cleared, forced_next = 0, cleared_next = 0;
    for (; candidates; candidates &= candidates - 1) {
        const unsigned k = unsigned(bpe::count_trailing_zeros(uint64_t(candidates)));
        if ((forced >> k) & 1) continue;
        const size_t len = unicode::contraction_length(s, n, blk + k + 1, /*ignore_case=*/true);
        if (len == 0) continue;
        for (unsigned q = k; q <= k + len; ++q) {  // the apostrophe and the contraction's letters
            const uint64_t bit = uint64_t(1) << (q & 63);
            if (q < 64) cleared |= bit; else cleared_next |= bit;
        }
        const unsigned q = unsigned(k + len + 1);  // the byte after it
        if (blk + q < n) {
            const uint64_t bit = uint64_t(1) << (q & 63);
            if (q < 64) forced |= bit; else forced_next |= bit;
        }
    }
    carry.forced = forced_next, carry.cleared = cleared_next;
    return (starts & ~cleared) | forced;
}

// Starts within runs of whitespace, for the rules whose \s*[\r\n] ends a run at its
// last CR or LF (gpt4, qwen2, o200k): the first blank after that CR or LF, and the
// last blank of a run of two or more that a non-space follows (\s+(?!\S) gives it
// back). Sets hard where a run of blanks goes on past the next block, or into a byte
// >= 0x80 in it.
// (`keeps`: bytes before which a run keeps its last blank, deepseek's digits, which end
// the piece the run is in as the text's end does.)
inline uint64_t whitespace_run_starts(const Masks& c, const Masks& next, bool next_past_end, const Masks& pv,
                                      bool& hard, uint64_t keeps = 0) {
    const uint64_t blank = c.whitespace & ~c.newline;  // whitespace but CR and LF
    const uint64_t ws_before = before(c.whitespace, pv.whitespace);
    const uint64_t ws_after = after(c.whitespace, next.whitespace);
    const uint64_t newline_before = before(c.newline, pv.newline);
    // Blank bytes whose run of blanks ends at a CR or LF (then a later newline in the
    // whitespace run is its last): filled backwards from that newline.
    uint64_t ends_at_newline = blank & after(c.newline, next.newline);
    const uint64_t next_blank = next.whitespace & ~next.newline;
    if (!next_past_end && (blank >> 63) && (next_blank & 1)) {
        const uint64_t rest = ~next_blank;
        if (rest == 0) {
            hard = true;
            return 0;
        }
        const unsigned f = unsigned(bpe::count_trailing_zeros(uint64_t(rest)));
        if ((next.high >> f) & 1) {
            hard = true;
            return 0;
        }
        if ((next.newline >> f) & 1) ends_at_newline |= uint64_t(1) << 63;
    }
    uint64_t run = blank;
    for (unsigned shift = 1; shift < 64; shift *= 2) {
        ends_at_newline |= (ends_at_newline >> shift) & run;
        run &= run >> shift;
    }
    const uint64_t after_last_newline = blank & newline_before & ~ends_at_newline;
    const uint64_t last_blank = blank & ws_before & ~ws_after & ~keeps;
    return after_last_newline | last_blank;
}

// In a block made hard by a byte >= 0x80, the starts the formulas still decide: a mask
// of the bits three or more places before that byte, and before the run of whitespace
// that reaches it. A start's formula reads at most three bytes on (a contraction and
// the byte after it), and a run of whitespace to its end (\s+(?!\S), \s*[\r\n]),
// which the character there may go on; all else it reads is behind it. `first` is
// that byte's place: 0-63 in this block, 64-66 in the next block's first three bytes.
inline uint64_t decided_before(const Masks& c, const Masks& next, unsigned first) {
    if (first < 4) return 0;
    unsigned cut = first - 3;
    const unsigned here = first < 64 ? first : 64;  // this block's bytes before it
    const uint64_t between = first > 64 ? (uint64_t(1) << (first - 64)) - 1 : 0;  // and the next block's
    if ((next.whitespace & between) == between && ((c.whitespace >> (here - 1)) & 1)) {
        const uint64_t other = ~c.whitespace & (here == 64 ? ~uint64_t(0) : (uint64_t(1) << here) - 1);
        const unsigned run = other ? 64 - unsigned(bpe::count_leading_zeros(uint64_t(other))) : 0;
        cut = std::min(cut, run);
    }
    return (uint64_t(1) << cut) - 1;
}

// The chunk starts of the block `c` at byte blk, the next block being `next` (blank
// past the end of the text). Where the formulas cannot decide them all, sets
// hard_until to the place the rule's own loop must pass before the blocks start again,
// and returns the starts they do decide (none, or those before a byte >= 0x80).
template <Pattern P>
inline uint64_t block_starts(const Masks& c, const Masks& next, bool next_past_end, Carry& carry,
                             const unsigned char* s, size_t n, size_t blk, size_t& hard_until) {
    const Masks& pv = carry.prev;
    const uint64_t ws_before = before(c.whitespace, pv.whitespace);
    const uint64_t space_before = before(c.space, pv.space);
    uint64_t starts, decided = ~uint64_t(0);
    if constexpr (P == Pattern::kDefault) {
        const uint64_t word = c.letter | c.digit | c.high, prev_word = pv.letter | pv.digit | pv.high;
        const uint64_t change = (word & ~before(word, prev_word)) | (c.whitespace & ~ws_before) |
                                (c.other & ~before(c.other, pv.other));
        const uint64_t leads = c.space & ~ws_before;
        starts = change & ~(before(leads, carry.prev_leads) & ~c.whitespace);
        carry.prev_leads = leads;
    } else {
        if (c.high | (next.high & 7)) {
            const unsigned first = c.high ? unsigned(bpe::count_trailing_zeros(uint64_t(c.high)))
                                          : 64 + unsigned(bpe::count_trailing_zeros(uint64_t(next.high)));
            hard_until = blk + first + 1;
            decided = P == Pattern::kDeepseek ? 0 : decided_before(c, next, first);
            if (decided == 0) return 0;
        }
        const uint64_t letter_before = before(c.letter, pv.letter), digit_before = before(c.digit, pv.digit);
        const uint64_t other_before = before(c.other, pv.other);
        const uint64_t ws_after = after(c.whitespace, next.whitespace);
        if constexpr (P == Pattern::kGpt2) {
            const uint64_t change = (c.letter & ~letter_before) | (c.digit & ~digit_before) |
                                    (c.other & ~other_before) | (c.whitespace & ~ws_before);
            starts = (change | (c.whitespace & ws_before & ~ws_after)) & ~(space_before & ~c.whitespace);
            starts = apply_contractions(starts, starts & c.apostrophe, s, n, blk, false, carry);
        } else {
            const uint64_t blank = c.whitespace & ~c.newline;  // whitespace but CR and LF
            const uint64_t blank_before = before(blank, pv.whitespace & ~pv.newline);
            // Digits: a group starts at the run's first digit and every third after it,
            // or at every digit for qwen2 (\p{N}).
            uint64_t groups = c.digit;
            if constexpr (P != Pattern::kQwen2) {
                const uint64_t third = c.digit & digit_before & (c.digit << 2 | pv.digit >> 62);
                uint64_t group = (c.digit & ~digit_before) | ((carry.prev_groups >> 61) & third);
                groups = group;
                while ((group = (group << 3) & third)) groups |= group;
            }
            carry.prev_groups = groups;
            bool long_run = false;
            const uint64_t in_runs = whitespace_run_starts(
                c, next, next_past_end, pv, long_run, P == Pattern::kDeepseek ? after(c.digit, next.digit) : 0);
            if (long_run) {
                hard_until = std::max(hard_until, blk + 64 + 3);
                return 0;
            }
            if constexpr (P == Pattern::kO200k) {
                // [\r\n/]* after a run of other bytes: from a CR or LF right after an
                // other byte to the end of its run of CR, LF and /, filled forwards.
                const uint64_t crlf_slash = c.newline | c.slash;
                uint64_t taken = (c.newline & other_before) | (crlf_slash & (carry.prev_taken >> 63));
                if (taken != 0) {  // most blocks have no CR or LF after punctuation
                    uint64_t run = crlf_slash;
                    for (unsigned shift = 1; shift < 64; shift *= 2) {
                        taken |= (taken << shift) & run;
                        run &= run << shift;
                    }
                }
                // Other bytes but the slashes taken, which neither start nor continue a
                // run of punctuation; those that start a chunk; a letter after one joins it.
                const uint64_t other = c.other & ~taken;
                const uint64_t other_leads = other & ~before(other, carry.prev_other) & ~space_before;
                const uint64_t letters = c.letter & ~letter_before & ~blank_before & ~before(other_leads, carry.prev_leads);
                // An upper-case letter after a lower-case one: [LO]+ and [LO]* stop there.
                const uint64_t case_breaks = c.upper & before(c.letter & ~c.upper, pv.letter & ~pv.upper);
                const uint64_t after_taken = before(taken, carry.prev_taken) & ~taken & blank;
                const uint64_t run_starts = c.whitespace & ~ws_before & ~taken;
                carry.prev_leads = other_leads, carry.prev_other = other, carry.prev_taken = taken;
                starts = letters | case_breaks | groups | other_leads | run_starts | after_taken | in_runs;
                starts = apply_trailing_contractions(starts, c.apostrophe & letter_before, s, n, blk, carry);
            } else {
                // Other bytes that start a chunk; a letter after one joins it.
                const uint64_t other_leads = c.other & ~other_before & ~space_before;
                const uint64_t letters = c.letter & ~letter_before & ~blank_before & ~before(other_leads, carry.prev_leads);
                carry.prev_leads = other_leads;
                // CR and LF runs right after an other byte: the addition carries through
                // each such run and leaves a bit on the byte after it.
                const uint64_t taken = c.newline & other_before;
                uint64_t sum;
                const bool out1 = bpe::add_overflows(c.newline, taken, &sum);
                const bool out2 = bpe::add_overflows(sum, carry.absorbing, &sum);
                carry.absorbing = (out1 || out2) ? 1 : 0;
                const uint64_t after_taken = sum & ~c.newline & blank;
                const uint64_t run_starts = c.whitespace & ~ws_before & ~(c.newline & other_before);
                starts = letters | groups | other_leads | run_starts | after_taken | in_runs;
                // deepseek: an apostrophe leads the whole run of letters after it, as
                // any punctuation does (no contractions).
                if constexpr (P != Pattern::kDeepseek)
                    starts = apply_contractions(starts, other_leads & c.apostrophe, s, n, blk, true, carry);
            }
        }
    }
    carry.prev = c;
    return starts & decided;
}

// Whether bytes [i, i + 67) (or to the end of the text) are all ASCII, else where the
// last byte >= 0x80 among them is (through `last`). Read backwards, eight bytes at a
// time: in text that is mostly non-ASCII the first word read answers.
inline bool ascii_window(const unsigned char* s, size_t n, size_t i, size_t* last) {
    size_t end = std::min(n, i + 67);
    while (end - i >= 8) {
        uint64_t word;
        std::memcpy(&word, s + end - 8, 8);
        if (const uint64_t high = word & 0x8080808080808080ull) {  // little-endian: byte k is bits 8k..8k+7
            *last = end - 8 + size_t(63 - bpe::count_leading_zeros(uint64_t(high))) / 8;
            return false;
        }
        end -= 8;
    }
    for (size_t k = end; k-- > i;)
        if (s[k] >= 0x80) return *last = k, false;
    return true;
}

// Whether the text has a byte 0x00-0x08, 0x0E-0x1F or 0x7F: ASCII that is neither
// whitespace nor printable.
inline bool has_ascii_controls(std::string_view text) {
    const auto* s = reinterpret_cast<const unsigned char*>(text.data());
    const size_t n = text.size();
    size_t i = 0;
#if defined(BPE_SSE2)
    const __m128i below = _mm_set1_epi8(0x1f), nine = _mm_set1_epi8(9), four = _mm_set1_epi8(4),
                  del = _mm_set1_epi8(0x7f);
    for (; i + 16 <= n; i += 16) {
        const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i));
        const __m128i low = _mm_cmpeq_epi8(_mm_min_epu8(x, below), x);         // x <= 0x1f
        const __m128i x9 = _mm_sub_epi8(x, nine);
        const __m128i ws = _mm_cmpeq_epi8(_mm_min_epu8(x9, four), x9);         // 9 <= x <= 13
        const __m128i bad = _mm_or_si128(_mm_andnot_si128(ws, low), _mm_cmpeq_epi8(x, del));
        if (_mm_movemask_epi8(bad)) return true;
    }
#endif
    for (; i < n; ++i)
        if ((s[i] < 0x20 && !(s[i] >= 9 && s[i] <= 13)) || s[i] == 0x7f) return true;
    return false;
}

// The block loop: the chunk starts of the text, as for_each_chunk_plain finds them,
// given to `sink` a block at a time, sink.starts(blk, bits) (bit k: a chunk starts at
// blk + k and ends the one before it), which returns the last of them; the starts the
// scalar loop finds one at a time, sink.end(p); then the end of the text, and
// sink.done(). Two sinks: one chunk at a time (for_each_chunk_blocks) and runs of ends
// for the encoder (for_each_chunk_run). `readable`: how many bytes from the text's
// start may be read (at least its size; more where it lies inside a larger buffer, as
// a document of a batch does), so that a last part-block is classed in place.
template <Pattern P, class Sink>
inline void split_blocks(std::string_view text, ClassifyFn classify, Sink& sink, size_t readable) {
    // No blocks for deepseek3 alone (its digits join letters after them), nor for
    // DeepSeek's fused rule where the text has ASCII control bytes, which its regex
    // leaves unmatched (not punctuation, as the blocks' "other" bytes are).
    if constexpr (P == Pattern::kDeepseek3 || P == Pattern::kDeepseek) {
        if (P == Pattern::kDeepseek3 || has_ascii_controls(text)) {
            for (size_t i = 0; i < text.size();) sink.end(i = rule_chunk_end<P>(text, i));
            sink.done();
            return;
        }
    }
    const auto* s = reinterpret_cast<const unsigned char*>(text.data());
    const size_t n = text.size();
    constexpr size_t kBatch = 16;
    Masks m[kBatch + 1];
    Masks blank{};  // past the end of the text: spaces, which end nothing before them
    blank.whitespace = blank.space = ~uint64_t(0);
    size_t start = 0;  // where the chunk not yet ended starts
    size_t b = 0;      // the next block: a chunk starts here, with a fresh carry
    Carry carry{};
    while (b < n) {
        // Classify up to kBatch blocks and the one after them: whole blocks in place,
        // the last part-block in place where 64 bytes can be read there (its bytes past
        // the text then read as spaces), else through a buffer padded with spaces, and no
        // more than the text has (a short text, a document of a batch, is a block or three).
        const size_t used = std::min((n - b + 63) / 64, kBatch) + 1;
        const size_t in_place = std::min({(readable - b) / 64, (n - b + 63) / 64, kBatch + 1});
        classify(s + b, in_place, m);
        if (const size_t part = (n - b) / 64, rest = (n - b) % 64; part < in_place && rest != 0) {
            const uint64_t inside = (uint64_t(1) << rest) - 1;
            Masks& last = m[part];
            for (uint64_t* mask : {&last.high, &last.letter, &last.upper, &last.digit, &last.whitespace,
                                   &last.newline, &last.space, &last.apostrophe, &last.slash})
                *mask &= inside;
            last.whitespace |= ~inside;
            last.space |= ~inside;
        }
        for (size_t j = in_place; j < used; ++j) {
            const size_t at = b + 64 * j;
            if (at < n) {
                unsigned char padded[64];
                std::memset(padded, ' ', 64);
                std::memcpy(padded, s + at, n - at);
                classify(padded, 1, m + j);
            } else {
                m[j] = blank;
            }
        }
        for (size_t j = 0; j < used; ++j) m[j].other = ~(m[j].letter | m[j].digit | m[j].whitespace | m[j].high);
        size_t blk = b;
        size_t hard_until = 0;
        for (size_t j = 0; j < kBatch && blk < n; ++j, blk += 64) {
            uint64_t starts = block_starts<P>(m[j], m[j + 1], blk + 64 >= n, carry, s, n, blk, hard_until);
            if (n - blk < 64) starts &= (uint64_t(1) << (n - blk)) - 1;
            // The chunk the block path started at (at b, its first byte) has nothing
            // before it to end.
            starts &= ~uint64_t(start == blk);
            if (starts) start = sink.starts(blk, starts);
            if (hard_until) break;
        }
        b = blk;
        if (!hard_until) continue;
        // The rule's own loop from the last start found, past what made the block hard,
        // to where the block path can start afresh.
        size_t i = start, target = hard_until, last = 0;
        while (i < n) {
            i = rule_chunk_end<P>(text, i);
            sink.end(i);
            start = i;
            if (i >= target) {
                if (ascii_window(s, n, i, &last)) break;
                target = last + 1;
            }
        }
        b = i;
        carry = Carry{};
    }
    if (start < n) sink.end(n);
    sink.done();
}

// Calls emit(chunk) for each chunk of the text, as for_each_chunk_plain does.
template <Pattern P, class Emit>
inline void for_each_chunk_blocks(std::string_view text, ClassifyFn classify, Emit&& emit) {
    struct Chunks {
        std::string_view text;
        Emit& emit;
        size_t start = 0;
        size_t starts(size_t blk, uint64_t bits) {
            for (; bits; bits &= bits - 1) end(blk + unsigned(bpe::count_trailing_zeros(uint64_t(bits))));
            return start;
        }
        void end(size_t p) {
            emit(text.substr(start, p - start));
            start = p;
        }
        void done() {}
    } sink{text, emit};
    split_blocks<P>(text, classify, sink, text.size());
}

// The chunks of the text handed over in runs: the ends of some kEndsRun chunks or more
// at a time, as offsets into the text, on_ends(first, ends, count), the first chunk of
// a run starting where the run before ended (at 0 for the first). So a consumer works
// on a run in loops of its own (the encoder: keys, then lookups), not in a call per
// chunk in the middle of popping bits.
inline constexpr size_t kEndsRun = 64;
inline constexpr size_t kEndsRoom = kEndsRun + 64;  // a block adds at most 64

// A run of ends being gathered, handed over to on_ends when it holds kEndsRun or more:
// the sink of split_blocks for for_each_chunk_run, and what split.h gathers the chunks
// of the portable tier and of compiled patterns in, a chunk at a time.
template <class Ends>
struct EndRuns {
    // (not an aggregate: `ends` is not cleared)
    EndRuns(Ends& e, SpreadFn s) : on_ends(e), spread(s) {}
    Ends& on_ends;
    SpreadFn spread;
    size_t ends[kEndsRoom];
    size_t count = 0;  // ends in the run
    size_t first = 0;  // where the run's first chunk starts
    size_t starts(size_t blk, uint64_t bits) {
        count = size_t(spread(ends + count, blk, bits) - ends);
        if (count >= kEndsRun) hand_over();
        // The last start from the bits, not read back from `ends`: spread_compress's wide
        // stores cannot forward a word to a load that soon (a stall each block).
        return blk + 63 - count_leading_zeros(bits);
    }
    void end(size_t p) {
        ends[count++] = p;
        if (count >= kEndsRun) hand_over();
    }
    void done() {
        if (count) hand_over();
    }
    void hand_over() {
        on_ends(first, static_cast<const size_t*>(ends), count);
        first = ends[count - 1];
        count = 0;
    }
};

template <Pattern P, class Ends>
inline void for_each_chunk_run(std::string_view text, size_t readable, ClassifyFn classify, SpreadFn spread,
                               Ends&& on_ends) {
    EndRuns<Ends> sink(on_ends, spread);
    split_blocks<P>(text, classify, sink, readable);
}

}  // namespace simd
}  // namespace bpe
