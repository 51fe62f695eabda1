// What the trainer and the encoder both speak of: a pair of neighbouring token ids,
// which a merge turns into one new token.
#pragma once

#include <cstdint>
#include <utility>

namespace bpe {

// (a, b): token a followed by token b. Merge k turns the pair into token 256 + k.
using Pair = std::pair<uint32_t, uint32_t>;

// A pair as one 64-bit key, for hash tables.
inline uint64_t pair_key(uint32_t a, uint32_t b) { return (uint64_t(a) << 32) | b; }

// A symbol merged into its left neighbour: both the trainer and the encoder keep the
// merged token at the left position, mark the right one with this, and never reuse it.
inline constexpr uint32_t kDead = UINT32_MAX;

}  // namespace bpe
