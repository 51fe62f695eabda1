// A hash table from chunks (views into a text that outlives the table) to values.
//
// Counting chunks and looking up the encoder's cache are the hottest loops of the
// engine, and std::unordered_map spends most of their time on a node allocation per
// entry and a pointer chase per lookup. This table keeps its entries in one flat
// array with linear probing, and stores each key's hash beside it so that a probe
// compares bytes only when the hashes already agree.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

namespace bpe {

// A fast hash of a short byte string: 8 bytes at a time, each folded in with a
// multiply and a shift (the finaliser of MurmurHash3, by Austin Appleby).
inline uint64_t hash_bytes(std::string_view s) {
    auto mix = [](uint64_t x) {
        x *= 0xff51afd7ed558ccdULL;
        return x ^ (x >> 32);
    };
    uint64_t h = 0x9e3779b97f4a7c15ULL * (s.size() + 1);
    const char* p = s.data();
    size_t n = s.size();
    for (; n >= 8; p += 8, n -= 8) {
        uint64_t word;
        std::memcpy(&word, p, 8);
        h = mix(h ^ word);
    }
    if (n > 0) {
        uint64_t word = 0;
        std::memcpy(&word, p, n);
        h = mix(h ^ word);
    }
    return mix(h ^ (h >> 29));
}

template <class Value>
class ChunkTable {
public:
    struct Entry {
        uint64_t hash = 0;
        std::string_view key;  // key.data() == nullptr marks an empty slot
        Value value{};
    };

    explicit ChunkTable(size_t expected = 1024) {
        size_t capacity = 16;
        while (capacity < expected * 2) capacity *= 2;
        slots_.resize(capacity);
    }

    // The value stored for `key`, inserted as Value{} if it was not there yet.
    Value& operator[](std::string_view key) { return find_or_insert(key, hash_bytes(key)); }

    Value& find_or_insert(std::string_view key, uint64_t hash) {
        size_t mask = slots_.size() - 1;
        for (size_t i = hash & mask;; i = (i + 1) & mask) {
            Entry& e = slots_[i];
            if (e.key.data() == nullptr) {
                if ((size_ + 1) * 2 > slots_.size()) {  // keep at most half full
                    grow();
                    return find_or_insert(key, hash);
                }
                e.hash = hash;
                e.key = key.data() ? key : std::string_view("", 0);
                ++size_;
                return e.value;
            }
            if (e.hash == hash && e.key == key) return e.value;
        }
    }

    // The value stored for `key`, or nullptr.
    const Value* find(std::string_view key, uint64_t hash) const {
        size_t mask = slots_.size() - 1;
        for (size_t i = hash & mask;; i = (i + 1) & mask) {
            const Entry& e = slots_[i];
            if (e.key.data() == nullptr) return nullptr;
            if (e.hash == hash && e.key == key) return &e.value;
        }
    }

    size_t size() const { return size_; }

    // Calls f(key, value) for each entry, in no particular order.
    template <class F>
    void for_each(F&& f) const {
        for (const Entry& e : slots_)
            if (e.key.data() != nullptr) f(e.key, e.value);
    }

private:
    void grow() {
        std::vector<Entry> old(slots_.size() * 2);
        old.swap(slots_);
        size_t mask = slots_.size() - 1;
        for (Entry& e : old) {
            if (e.key.data() == nullptr) continue;
            size_t i = e.hash & mask;
            while (slots_[i].key.data() != nullptr) i = (i + 1) & mask;
            slots_[i] = std::move(e);
        }
    }

    std::vector<Entry> slots_;
    size_t size_ = 0;
};

}  // namespace bpe
