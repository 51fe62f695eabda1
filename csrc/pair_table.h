// Hash tables keyed by pairs of token ids, for the two hottest tables of pairs: the
// encoder's ranks and the trainer's counts. PairHashTable is flat, probes linearly from
// the mixed pair, keeps no tombstones (erasing shifts the entries after it back), and
// doubles when too full; that code is written once, here. Where the keys and the values
// sit is its Layout, one of two:
//   - KeyValueSlots: use it for a table read far more than written, whose look-ups
//     mostly find their pair: key and value share a slot.
//   - KeysApart: use it for a large table whose pairs come and go (the trainer's counts
//     of pairs): the keys lie in an array of their own, the values beside it.
// The encoder's ranks (RankTable, below) pack a pair and its rank into one word, which no
// Layout can hand out as a value by reference, so it probes its own slots; a vocabulary
// too large to pack keeps a PairHashTable of KeyValueSlots.
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

// The encoder's ranks: the merge that made each pair, by its number. A chunk new to
// the encoder is merged by looking up the rank of each pair that a merge makes, one
// look-up after the other, so a look-up's latency is much of what a merge costs: the
// table is kept small. A slot is one word, the pair in its top 40 bits (20 an id) and
// the rank plus one in its low 24 (a zero word: an empty slot), half of them empty at
// most: GPT-2's 50,000 ranks take 1 MB, where slots of a pair and a value (KeyValueSlots)
// took 2 MB (docs/design-notes.md). A vocabulary with larger ids or more ranks (a
// million merges) keeps those.
class RankTable {
public:
    static constexpr uint32_t kMissing = UINT32_MAX;  // the pair is no merge

    // For `pairs` ranks of pairs whose ids are below `ids`.
    RankTable(size_t pairs, size_t ids) {
        if (ids <= kIdLimit && pairs < kRankLimit) slots_ = Slots(table_capacity(pairs));
        else wide_ = std::make_unique<PairHashTable<uint32_t, KeyValueSlots>>(pairs);
    }

    uint32_t get(uint32_t a, uint32_t b) const {
        if (wide_) {
            const uint32_t* rank = wide_->find(a, b);
            return rank ? *rank : kMissing;
        }
        if ((a | b) >= kIdLimit) return kMissing;  // no pair here has such an id
        const uint64_t key = packed(a, b);
        for (size_t i = mix(key) & slots_.mask;; i = (i + 1) & slots_.mask) {
            const uint64_t slot = slots_.at(i);
            if (slot == 0) return kMissing;
            if (slot >> kRankBits == key) return uint32_t(slot & (kRankLimit - 1)) - 1;
        }
    }

    // Stores the rank of (a, b), ids below the `ids` it was made for, unless the pair
    // has one already; returns false if it had.
    bool insert(uint32_t a, uint32_t b, uint32_t rank) {
        if (wide_) return wide_->insert(a, b, rank);
        if (get(a, b) != kMissing) return false;
        if ((size_ + 1) * 2 > slots_.mask + 1) {
            Slots bigger((slots_.mask + 1) * 2);
            for (size_t i = 0; i <= slots_.mask; ++i)
                if (slots_.at(i) != 0) bigger.put(slots_.at(i) >> kRankBits, slots_.at(i));
            slots_ = std::move(bigger);
        }
        slots_.put(packed(a, b), packed(a, b) << kRankBits | (uint64_t(rank) + 1));
        ++size_;
        return true;
    }

private:
    static constexpr unsigned kIdBits = 20, kRankBits = 24;
    static constexpr uint32_t kIdLimit = uint32_t(1) << kIdBits;
    static constexpr size_t kRankLimit = size_t(1) << kRankBits;  // ranks plus one stay below
    static uint64_t packed(uint32_t a, uint32_t b) { return uint64_t(a) << kIdBits | b; }

    struct Slots {
        std::unique_ptr<Region> region;
        size_t mask = 0;
        Slots() = default;
        explicit Slots(size_t capacity)
            : region(std::make_unique<Region>(capacity * sizeof(uint64_t), true)), mask(capacity - 1) {}
        uint64_t at(size_t i) const { return reinterpret_cast<const uint64_t*>(region->data())[i]; }
        void put(uint64_t key, uint64_t slot) {  // into the first empty slot from the key's
            size_t i = mix(key) & mask;
            while (at(i) != 0) i = (i + 1) & mask;
            reinterpret_cast<uint64_t*>(region->data())[i] = slot;
        }
    };
    Slots slots_;  // a power of two of them, in zeroed pages (Region)
    size_t size_ = 0;
    std::unique_ptr<PairHashTable<uint32_t, KeyValueSlots>> wide_;
};

}  // namespace bpe
