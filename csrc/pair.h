// What the trainer and the encoder both speak of: a pair of neighbouring token ids,
// which a merge turns into one new token. Both keep tables keyed by pairs: those are in
// pair_table.h.
#pragma once

#include <cstdint>
#include <utility>

namespace bpe {

// (a, b): token a followed by token b. Merge k turns the pair into token 256 + k.
using Pair = std::pair<uint32_t, uint32_t>;

// An id that no token has, for a place where no token starts. The encoder keeps a
// merged token at its left symbol and marks the right one with this, for good; the
// trainer marks with it the gaps between words (the right half of a pair it merges it
// marks kInside | length instead: see "Slots" in train.h).
inline constexpr uint32_t kDead = UINT32_MAX;

}  // namespace bpe
