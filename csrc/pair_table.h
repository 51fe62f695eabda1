// A hash table keyed by pairs of token ids (PairHashTable), for the two hottest tables of
// pairs: the encoder's ranks and the trainer's counts. It is flat, probes linearly from
// the mixed pair, keeps no tombstones (erasing shifts the entries after it back), and
// doubles when too full; that code is written once, here. Where the keys and the values
// sit is its Layout, one of two:
//   - KeyValueSlots: use it for a table read far more than written, whose look-ups
//     mostly find their pair (the encoder's ranks): key and value share a slot.
//   - KeysApart: use it for a large table whose pairs come and go (the trainer's counts
//     of pairs): the keys lie in an array of their own, the values beside it.
// The tables keyed by chunks are in chunk_table.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

#include "hash.h"
#include "region.h"

namespace bpe {

// A pair as one 64-bit key.
inline uint64_t pair_key(uint32_t a, uint32_t b) { return (uint64_t(a) << 32) | b; }

// No pair's key: ids stay far below UINT32_MAX, so (UINT32_MAX, UINT32_MAX) marks an
// empty slot.
inline constexpr uint64_t kNoPair = ~uint64_t(0);

template <class Value, template <class> class Layout>
class PairHashTable {
public:
    explicit PairHashTable(size_t expected = 0) : slots_(table_capacity(expected)) {}

    // The value stored for (a, b), or nullptr. Pointers last until the next insert or
    // erase.
    Value* find(uint32_t a, uint32_t b) {
        size_t i = probe(pair_key(a, b));
        return slots_.key(i) == kNoPair ? nullptr : &slots_.value(i);
    }
    const Value* find(uint32_t a, uint32_t b) const {
        size_t i = probe(pair_key(a, b));
        return slots_.key(i) == kNoPair ? nullptr : &slots_.value(i);
    }

    // Stores value for (a, b) unless the pair is there already; returns false if it was.
    bool insert(uint32_t a, uint32_t b, const Value& value) {
        if (Layout<Value>::too_full(size_ + 1, slots_.capacity())) grow();
        size_t i = probe(pair_key(a, b));
        if (slots_.key(i) != kNoPair) return false;
        slots_.put(i, pair_key(a, b), value);
        ++size_;
        return true;
    }

    void erase(uint32_t a, uint32_t b) {
        size_t mask = slots_.capacity() - 1;
        size_t hole = probe(pair_key(a, b));
        if (slots_.key(hole) == kNoPair) return;
        // Each entry after the hole, up to the next empty slot, moves back into it unless
        // its own home slot lies after the hole (it would then be found no more).
        for (size_t i = (hole + 1) & mask; slots_.key(i) != kNoPair; i = (i + 1) & mask) {
            size_t home = mix(slots_.key(i)) & mask;
            if (((i - home) & mask) >= ((i - hole) & mask)) {
                slots_.put(hole, slots_.key(i), slots_.value(i));
                hole = i;
            }
        }
        slots_.put(hole, kNoPair, Value{});
        --size_;
    }

    size_t size() const { return size_; }

private:
    // The slot that holds the key, or the empty slot where it would go.
    size_t probe(uint64_t key) const {
        size_t mask = slots_.capacity() - 1;
        size_t i = mix(key) & mask;
        while (slots_.key(i) != kNoPair && slots_.key(i) != key) i = (i + 1) & mask;
        return i;
    }

    void grow() {
        Layout<Value> old(slots_.capacity() * 2);
        std::swap(old, slots_);
        size_t mask = slots_.capacity() - 1;
        for (size_t j = 0; j < old.capacity(); ++j) {
            if (old.key(j) == kNoPair) continue;
            size_t i = mix(old.key(j)) & mask;
            while (slots_.key(i) != kNoPair) i = (i + 1) & mask;
            slots_.put(i, old.key(j), old.value(j));
        }
    }

    Layout<Value> slots_;  // a power of two of them
    size_t size_ = 0;
};

// Each slot holds its key and its value side by side (see docs/design-notes.md), in
// a Region: a table of 2 MB or more (the ranks of cl100k and o200k) lies in huge pages.
template <class Value>
class KeyValueSlots {
public:
    explicit KeyValueSlots(size_t capacity)
        : region_(std::make_unique<Region>(capacity * sizeof(Slot), true)), capacity_(capacity) {
        for (size_t i = 0; i < capacity; ++i) new (slots() + i) Slot{};
    }
    static bool too_full(size_t entries, size_t capacity) { return entries * 2 > capacity; }

    size_t capacity() const { return capacity_; }
    uint64_t key(size_t i) const { return slots()[i].key; }
    Value& value(size_t i) { return slots()[i].value; }
    const Value& value(size_t i) const { return slots()[i].value; }
    void put(size_t i, uint64_t key, const Value& value) { slots()[i] = {key, value}; }

private:
    struct alignas(16) Slot {
        uint64_t key = kNoPair;
        Value value{};
    };
    static_assert(std::is_trivially_destructible_v<Slot>, "the region is unmapped without destructors");
    Slot* slots() const { return reinterpret_cast<Slot*>(region_->data()); }

    std::unique_ptr<Region> region_;  // a pointer, so that the table moves (grow swaps two)
    size_t capacity_;
};

// The keys in one array and the values in another (see docs/design-notes.md).
template <class Value>
class KeysApart {
public:
    explicit KeysApart(size_t capacity) : keys_(capacity, kNoPair), values_(capacity) {}
    static bool too_full(size_t entries, size_t capacity) { return entries * 4 > capacity * 3; }

    size_t capacity() const { return keys_.size(); }
    uint64_t key(size_t i) const { return keys_[i]; }
    Value& value(size_t i) { return values_[i]; }
    const Value& value(size_t i) const { return values_[i]; }
    void put(size_t i, uint64_t key, const Value& value) { keys_[i] = key, values_[i] = value; }

private:
    std::vector<uint64_t, HugePageAllocator<uint64_t>> keys_;
    std::vector<Value, HugePageAllocator<Value>> values_;
};

// The encoder's ranks: the merge that made each pair, by its number.
class RankTable : public PairHashTable<uint32_t, KeyValueSlots> {
public:
    static constexpr uint32_t kMissing = UINT32_MAX;  // the pair is no merge

    using PairHashTable::PairHashTable;

    uint32_t get(uint32_t a, uint32_t b) const {
        const uint32_t* rank = find(a, b);
        return rank ? *rank : kMissing;
    }
};

}  // namespace bpe
