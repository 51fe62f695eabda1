// What every flat hash table of the engine shares: the hash that spreads a 64-bit key
// over the slots, and how many slots a table starts with. The tables are chunk_table.h
// (keyed by chunks) and pair_table.h (keyed by pairs of ids).
#pragma once

#include <cstddef>
#include <cstdint>

namespace bpe {

inline uint64_t mix(uint64_t x) {
    // The finaliser of MurmurHash3 (Austin Appleby): every input bit affects every
    // output bit, so the low bits used to pick a slot are well spread.
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    return x ^ (x >> 33);
}

// The slots a table starts with for `expected` entries: a power of two at least twice
// as many, since most tables here stay at most half full, so that probes stay short
// (pair_table.h's KeysApart fills to three quarters, and starts the same).
inline size_t table_capacity(size_t expected) {
    size_t capacity = 16;
    while (capacity < expected * 2) capacity *= 2;
    return capacity;
}

}  // namespace bpe
