// What differs between compilers, in one place: bit scans, prefetch, overflow checks
// and per-function CPU targets. GCC and clang have builtins for each; MSVC has
// intrinsics; anything else gets a plain loop that gives the same answer. Every header
// calls these names instead of a compiler's own, so the core compiles with GCC, clang
// and MSVC alike (MSVC defines neither __GNUC__ nor __SSE2__, so it also builds
// without the SSE2 block and the SIMD tiers: the portable split, as an ARM build does).
//
// BPE_PORTABLE (the build CI makes for the path ARM machines take) also turns off the
// builtins here, so that the plain loops, which MSVC on ARM and any other compiler
// run, are tested too.
#pragma once

#include <cstdint>

#if (defined(__GNUC__) || defined(__clang__)) && !defined(BPE_PORTABLE)
#define BPE_BUILTINS 1
#endif

// Inlined even where the compiler's own judgement would not (a hot hash, say); a hint
// elsewhere.
#if defined(__GNUC__) || defined(__clang__)
#define BPE_ALWAYS_INLINE [[gnu::always_inline]]
#else
#define BPE_ALWAYS_INLINE
#endif

#if defined(_MSC_VER) && !defined(__clang__)
#include <intrin.h>
#endif

// Per-function CPU targets. On x86-64 with GCC or clang the AVX2 and AVX-512 code is
// functions compiled for their own target, and the best tier the CPU has is picked at
// run time (split_simd.h's tiers), so one build runs on any x86-64. The AVX-512 tier
// asks for F, BW and DQ, which every CPU with BW has; VBMI2 is asked for apart.
#if defined(__SSE2__) && !defined(BPE_PORTABLE) && (defined(__GNUC__) || defined(__clang__))
#define BPE_X86_TIERS 1
#include <immintrin.h>
#define BPE_AVX2 __attribute__((target("avx2")))
#define BPE_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq")))
#define BPE_AVX512_VBMI2 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vbmi2")))
#endif

// AddressSanitizer builds (.ci/variant address): arrays that would be mapped pages come
// from operator new instead, so that its redzones guard them.
#if defined(__SANITIZE_ADDRESS__)
#define BPE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define BPE_ASAN 1
#endif
#endif

namespace bpe {

// The number of trailing zero bits of x, which must not be 0.
inline unsigned count_trailing_zeros(uint32_t x) {
#if defined(BPE_BUILTINS)
    return unsigned(__builtin_ctz(x));
#elif defined(_MSC_VER) && !defined(BPE_PORTABLE)
    unsigned long i;
    _BitScanForward(&i, x);
    return unsigned(i);
#else
    unsigned n = 0;
    while (!(x & 1)) x >>= 1, ++n;
    return n;
#endif
}

inline unsigned count_trailing_zeros(uint64_t x) {
#if defined(BPE_BUILTINS)
    return unsigned(__builtin_ctzll(x));
#elif defined(_MSC_VER) && defined(_WIN64) && !defined(BPE_PORTABLE)
    unsigned long i;
    _BitScanForward64(&i, x);
    return unsigned(i);
#else
    const uint32_t low = uint32_t(x);
    return low ? count_trailing_zeros(low) : 32 + count_trailing_zeros(uint32_t(x >> 32));
#endif
}

// The number of leading zero bits of x, which must not be 0.
inline unsigned count_leading_zeros(uint64_t x) {
#if defined(BPE_BUILTINS)
    return unsigned(__builtin_clzll(x));
#elif defined(_MSC_VER) && defined(_WIN64) && !defined(BPE_PORTABLE)
    unsigned long i;
    _BitScanReverse64(&i, x);
    return 63 - unsigned(i);
#else
    unsigned n = 0;
    for (uint64_t bit = uint64_t(1) << 63; !(x & bit); bit >>= 1) ++n;
    return n;
#endif
}

inline unsigned count_ones(uint64_t x) {
#if defined(BPE_BUILTINS)
    return unsigned(__builtin_popcountll(x));
#else
    unsigned n = 0;
    for (; x; x &= x - 1) ++n;
    return n;
#endif
}

// A hint that *p will be read soon; it changes no result.
inline void prefetch(const void* p) {
#if defined(BPE_BUILTINS)
    __builtin_prefetch(p);
#else
    (void)p;
#endif
}

// *sum = a + b; true if that overflowed (and *sum then wrapped around).
inline bool add_overflows(uint64_t a, uint64_t b, uint64_t* sum) {
#if defined(BPE_BUILTINS)
    return __builtin_add_overflow(a, b, sum);
#else
    *sum = a + b;
    return *sum < a;
#endif
}

}  // namespace bpe
