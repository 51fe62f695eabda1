// The default rule over bytes, and the class test that every SSE2 path of the split
// shares (split_unicode.h's runs of ASCII, split_simd.h's sse2 tier).
//
// The default rule, this project's own: a chunk is a run of word bytes, or a run of
// punctuation, either with an optional leading space, or else a run of whitespace.
// This is the bytes regex
//     rb" ?[A-Za-z0-9\x80-\xff]+| ?[^A-Za-z0-9\x80-\xff\s]+|\s+"
// written out by hand, since a 256-entry table and a loop run far faster than a
// regex engine, and work on any bytes, valid UTF-8 or not.
#pragma once

#include <algorithm>
#include <memory>
#include <array>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "compiler.h"

// The SSE2 blocks here, in split_unicode.h and in split_simd.h (both include this
// file, for the class test they share) are what every x86-64 compiler builds; ARM machines
// (and a build with BPE_PORTABLE=1, which CI makes so the portable path is tested here
// too) use the plain loops alone.
#if defined(__SSE2__) && !defined(BPE_PORTABLE)
#define BPE_SSE2 1
#include <emmintrin.h>
#endif

namespace bpe {

enum ByteClass : uint8_t { kWord, kPunct, kSpace };

// Word bytes: ASCII letters and digits, and every byte >= 0x80, which are the bytes
// of non-ASCII UTF-8 characters, so that such a character is never cut in two.
// Whitespace: exactly the six bytes that Python's bytes regex calls \s.
constexpr std::array<uint8_t, 256> make_byte_classes() {
    std::array<uint8_t, 256> cls{};
    for (int b = 0; b < 256; ++b) {
        bool alnum = (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || (b >= '0' && b <= '9');
        bool space = b == ' ' || b == '\t' || b == '\n' || b == '\v' || b == '\f' || b == '\r';
        cls[b] = (alnum || b >= 0x80) ? kWord : space ? kSpace : kPunct;
    }
    return cls;
}
inline constexpr std::array<uint8_t, 256> kByteClass = make_byte_classes();

// How many different bytes a search may look for 16 at a time (FewBytes16).
inline constexpr int kFewBytes = 4;

#if defined(BPE_SSE2)
// A search for any of a few bytes (1 to kFewBytes), 16 bytes at a time: where the special
// tokens may begin, where the added tokens may end. bytes[0] stands in for the places
// past `n`, so that comparing with them finds nothing new.
struct FewBytes16 {
    __m128i wanted[kFewBytes];
    FewBytes16(const unsigned char* bytes, int n) {
        for (int k = 0; k < kFewBytes; ++k) wanted[k] = _mm_set1_epi8(char(bytes[k < n ? k : 0]));
    }
    // Bit k set when byte k of the 16 at p is one of them.
    uint32_t in(const char* p) const {
        const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
        __m128i hits = _mm_cmpeq_epi8(v, wanted[0]);
        for (int k = 1; k < kFewBytes; ++k) hits = _mm_or_si128(hits, _mm_cmpeq_epi8(v, wanted[k]));
        return uint32_t(_mm_movemask_epi8(hits));
    }
};
#endif

#if defined(BPE_SSE2)
// Bit k of `word` set when byte k of the 16 at p is a word byte, of `space` when it is
// whitespace (neither: punctuation). Below, with the class test it reads.
inline void word_and_space_16(const unsigned char* p, uint32_t& word, uint32_t& space);
#endif

// The end of the chunk that starts at `i` (requires i < text.size()).
inline size_t chunk_end(std::string_view text, size_t i) {
    const auto* s = reinterpret_cast<const unsigned char*>(text.data());
    const size_t n = text.size();
#if defined(BPE_SSE2)
    // Most chunks are a few bytes: classify the next 16 at once and find where the
    // class changes from the bits, rather than with a hard-to-predict branch per byte.
    if (i + 16 <= n) {
        uint32_t word, space;
        word_and_space_16(s + i, word, space);
        uint32_t punct = ~(word | space) & 0xffff;
        // A space before a byte that is not whitespace leads the chunk that follows it.
        unsigned first = (s[i] == ' ' && !(space & 2)) ? 1 : 0;
        uint32_t same = (word >> first & 1) ? word : (space >> first & 1) ? space : punct;
        uint32_t other = ~same & (0xfffeu << first) & 0xffff;  // after `first`, of another class
        if (other != 0) return i + unsigned(bpe::count_trailing_zeros(uint32_t(other)));
        const uint8_t cls = kByteClass[s[i + first]];  // the run goes on past these 16 bytes
        i += 16;
        while (i < n && kByteClass[s[i]] == cls) ++i;
        return i;
    }
#endif
    // A space before a byte that is not whitespace leads the chunk that follows it.
    if (s[i] == ' ' && i + 1 < n && kByteClass[s[i + 1]] != kSpace) ++i;
    const uint8_t cls = kByteClass[s[i]];
    do ++i; while (i < n && kByteClass[s[i]] == cls);
    return i;
}

// Calls emit(chunk) for each chunk of the text, in order, with chunk_end the function
// that finds where a chunk ends.
template <class ChunkEnd, class Emit>
inline void for_each_chunk_with(std::string_view text, ChunkEnd&& chunk_end, Emit&& emit) {
    for (size_t i = 0; i < text.size();) {
        const size_t end = chunk_end(text, i);
        emit(text.substr(i, end - i));
        i = end;
    }
}

#if defined(BPE_SSE2)
// The classes of 16 bytes at once, each a lane of ones where byte k is of the class:
// the one SSE2 class test, which chunk_end above, split_unicode.h's runs and
// split_simd.h's sse2 tier read. A byte >= 0x80 is `high` and in no other class
// (its character, if any, is decoded elsewhere); `whitespace` is the six bytes above.
// Always inlined, so that a caller computes only the classes it reads.
struct Lanes16 {
    __m128i high, letter, digit, space, whitespace;
};
[[gnu::always_inline]] inline Lanes16 classify_16(__m128i v) {
    // x - lo <= span, unsigned, as min(x - lo, span) == x - lo: a range test per byte.
    auto in_range = [](__m128i x, char lo, char span) {
        __m128i d = _mm_sub_epi8(x, _mm_set1_epi8(lo));
        return _mm_cmpeq_epi8(_mm_min_epu8(d, _mm_set1_epi8(span)), d);
    };
    Lanes16 c;
    c.high = _mm_cmplt_epi8(v, _mm_setzero_si128());  // >= 0x80, as a signed byte < 0
    c.letter = in_range(_mm_or_si128(v, _mm_set1_epi8(0x20)), 'a', 25);  // either case
    c.digit = in_range(v, '0', 9);
    c.space = _mm_cmpeq_epi8(v, _mm_set1_epi8(' '));
    c.whitespace = _mm_or_si128(in_range(v, '\t', 4), c.space);  // \t \n \v \f \r, and space
    return c;
}

inline void word_and_space_16(const unsigned char* p, uint32_t& word, uint32_t& space) {
    const Lanes16 c = classify_16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    word = uint32_t(_mm_movemask_epi8(_mm_or_si128(c.high, _mm_or_si128(c.letter, c.digit))));
    space = uint32_t(_mm_movemask_epi8(c.whitespace));
}
#endif

}  // namespace bpe
