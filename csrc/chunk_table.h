// Hash tables keyed by chunks, for the hottest loops of the engine: counting chunks
// (training) and looking up chunks already encoded (encoding).
//
// std::unordered_map spends most of those loops on a node allocation per entry and a
// pointer chase per lookup. ChunkTable probes a flat index instead, and stores the
// first 16 bytes of each key inside its entry: most chunks are shorter than that (a
// word and its space), so a lookup compares two words held in the table instead of
// reading the key's bytes from wherever in the text it was first seen, which would be
// a cache miss.
//   - ChunkTable: use it for a table of chunks that grows as it is used (counting),
//     and for chunks of any length.
// The encoder's table, read by many threads without a lock, is encoder_table.h.
// The table keyed by pairs of ids is in pair_table.h.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>
#include <vector>

#include "compiler.h"
#include "hash.h"

namespace bpe {

// The hash of a chunk whose first 16 bytes, zero-padded, are `head`. Two independent
// multiplies, then one more to spread every byte over the low bits (which pick the
// slot) and the high ones (the tag): cheaper than mix() twice (docs/design-notes.md).
BPE_ALWAYS_INLINE inline uint64_t chunk_hash(const uint64_t head[2], std::string_view chunk) {
    size_t n = chunk.size();
    uint64_t h = (head[0] ^ (uint64_t(n) << 56)) * 0x9e3779b97f4a7c15ULL + head[1] * 0xc2b2ae3d27d4eb4fULL;
    for (size_t i = 16; i < n; i += 8) {  // the rest of a long chunk, 8 bytes at a time
        uint64_t word = 0;
        std::memcpy(&word, chunk.data() + i, std::min<size_t>(8, n - i));
        h = (h ^ (h >> 32) ^ word) * 0x9e3779b97f4a7c15ULL;
    }
    h ^= h >> 32;
    h *= 0xd6e8feb86659fd93ULL;
    return h ^ (h >> 32);
}

// A chunk ready for lookup: its bytes, their first 16 bytes as two zero-padded words,
// and a hash. `text_end` is the end of the text the chunk lies in: when 16 bytes are
// readable from the chunk's start, they are loaded in two moves and masked, which is
// much faster than a copy of variable length.
struct ChunkKey {
    std::string_view bytes;
    uint64_t head[2] = {0, 0};
    uint64_t hash = 0;

    ChunkKey() = default;
    // Always inlined: made for every chunk encoded, and the compiler kept it out of
    // line, a call for every chunk.
    BPE_ALWAYS_INLINE ChunkKey(std::string_view chunk, const char* text_end) : bytes(chunk) {
        size_t n = chunk.size();
        if (chunk.data() + 16 <= text_end) {
            std::memcpy(head, chunk.data(), 16);
            if (n < 8) {
                head[0] &= n == 0 ? 0 : ~uint64_t(0) >> (64 - 8 * n);
                head[1] = 0;
            } else if (n < 16) {
                head[1] &= n == 8 ? 0 : ~uint64_t(0) >> (64 - 8 * (n - 8));
            }
        } else {
            head[0] = head[1] = 0;
            std::memcpy(head, chunk.data(), std::min<size_t>(n, 16));
        }
        hash = chunk_hash(head, chunk);
    }
};

// Entries sit in one dense array, in the order they were inserted; a separate index
// of 8-byte slots (a tag of the hash, and the entry's number) is what probing walks.
// The index of 10,000 chunks fits in the fastest caches, and the first chunks seen,
// which are the most frequent ones, sit together at the front of the entries.
//
// A key of at most 16 bytes is held whole in its entry; the table keeps a view of a
// longer key's bytes, which must outlive it. An entry does not keep its hash either
// (the index has its tag, and growing the index works it out again from the key).
// Training counts millions of distinct chunks, mostly short: this saves 8 bytes an
// entry, and a copy of each short chunk when the text it came from goes away.
template <class Value>
class ChunkTable {
public:
    explicit ChunkTable(size_t expected = 1024) : index_(table_capacity(expected), 0), mask_(index_.size() - 1) {
        entries_.reserve(expected);
    }

    // The value stored for the key, inserted as Value{} if it was not there yet.
    Value& operator[](const ChunkKey& key) {
        size_t slot = probe(key);
        if (index_[slot] != 0) return entries_[uint32_t(index_[slot]) - 1].value;
        return insert_at(slot, key, key.bytes, Value{});
    }

    // The value stored for the key, or nullptr.
    const Value* find(const ChunkKey& key) const {
        uint64_t found = index_[probe(key)];
        return found ? &entries_[uint32_t(found) - 1].value : nullptr;
    }

    size_t size() const { return entries_.size(); }

    // Room for `expected` entries in all, so that adding up to that many grows nothing.
    void reserve(size_t expected) {
        entries_.reserve(expected);
        if (table_capacity(expected) > index_.size()) grow_to(table_capacity(expected));
    }

    // The bytes of all keys together, and the bytes the table itself takes (its index
    // and its entries as allocated, not the long keys' bytes): the counter's memory
    // budget is reckoned from them.
    size_t key_bytes() const { return key_bytes_; }
    size_t memory() const { return index_.capacity() * sizeof(uint64_t) + entries_.capacity() * sizeof(Entry); }

    // Calls f(chunk, value) for each entry, in the order they were inserted. The view
    // of a short chunk lies in the table, valid until the table changes.
    template <class F>
    void for_each(F&& f) const {
        for (const Entry& e : entries_) f(e.bytes(), e.value);
    }

    // Adds each entry of another table to this one with +=, using the other table up.
    // A long key new to this table is stored as keep(bytes) returns it: a copy that
    // outlives the other's text.
    template <class Keep>
    void add(ChunkTable&& other, Keep&& keep) {
        if (entries_.empty()) {  // take the other's entries as they are
            index_.swap(other.index_);
            std::swap(mask_, other.mask_);
            entries_.swap(other.entries_);
            std::swap(key_bytes_, other.key_bytes_);
            keep_keys_from(0, keep);
            return;
        }
        for (const Entry& e : other.entries_) {
            ChunkKey key;
            key.bytes = e.bytes(), key.head[0] = e.head[0], key.head[1] = e.head[1];
            key.hash = chunk_hash(key.head, key.bytes);
            size_t slot = probe(key);
            if (index_[slot] != 0) entries_[uint32_t(index_[slot]) - 1].value += e.value;
            else insert_at(slot, key, e.size > 16 ? keep(key.bytes) : key.bytes, e.value);
        }
    }

    // Stores the long keys of the entries from the first-th inserted on as keep(bytes)
    // returns them: copies that outlive the text they were found in.
    template <class Keep>
    void keep_keys_from(size_t first, Keep&& keep) {
        for (size_t i = first; i < entries_.size(); ++i)
            if (entries_[i].size > 16) entries_[i].data = keep(entries_[i].bytes()).data();
    }

private:
    struct Entry {
        uint64_t head[2];
        const char* data;  // read only past the first 16 bytes
        size_t size;
        Value value;

        std::string_view bytes() const {
            return {size <= 16 ? reinterpret_cast<const char*>(head) : data, size};
        }
        bool holds(const ChunkKey& key) const {
            return head[0] == key.head[0] && head[1] == key.head[1] && size == key.bytes.size() &&
                   (size <= 16 || std::memcmp(data + 16, key.bytes.data() + 16, size - 16) == 0);
        }
    };

    static uint64_t tag(uint64_t hash) { return hash & 0xffffffff00000000ULL; }

    // The slot of the index that holds the key, or the empty slot where it would go.
    size_t probe(const ChunkKey& key) const {
        for (size_t i = key.hash & mask_;; i = (i + 1) & mask_) {
            uint64_t slot = index_[i];
            if (slot == 0) return i;
            if ((slot & 0xffffffff00000000ULL) == tag(key.hash) && entries_[uint32_t(slot) - 1].holds(key)) return i;
        }
    }

    Value& insert_at(size_t slot, const ChunkKey& key, std::string_view bytes, Value value) {
        entries_.push_back({{key.head[0], key.head[1]}, bytes.data(), bytes.size(), value});
        key_bytes_ += bytes.size();
        index_[slot] = tag(key.hash) | entries_.size();
        if (entries_.size() * 2 > index_.size()) grow_to(index_.size() * 2);  // at most half full: probes stay short
        return entries_.back().value;
    }

    void grow_to(size_t slots) {
        std::vector<uint64_t> index(slots, 0);
        size_t mask = index.size() - 1;
        for (size_t k = 0; k < entries_.size(); ++k) {
            uint64_t hash = chunk_hash(entries_[k].head, entries_[k].bytes());
            size_t i = hash & mask;
            while (index[i] != 0) i = (i + 1) & mask;
            index[i] = tag(hash) | (k + 1);
        }
        index_.swap(index);
        mask_ = mask;
    }

    std::vector<uint64_t> index_;  // 0: empty; else the hash's high 32 bits, then entry number + 1
    size_t mask_;                  // index_.size() - 1
    std::vector<Entry> entries_;
    size_t key_bytes_ = 0;
};

// The bytes of each word of a short key that a chunk of n bytes (n <= 15) keeps, looked
// up, so that the key is made without a branch on the length: ShortChunkCounts's keys
// (below) and the encoder's table's (encoder_table.h) have this one form.
struct KeyMasks {
    uint64_t lo[16], hi[16];
    constexpr KeyMasks() : lo(), hi() {
        for (int n = 0; n < 16; ++n) {
            lo[n] = n >= 8 ? ~uint64_t(0) : (uint64_t(1) << (8 * n)) - 1;
            hi[n] = n <= 8 ? 0 : (uint64_t(1) << (8 * (n - 8))) - 1;
        }
    }
};
inline constexpr KeyMasks kKeyMasks{};

// The short key of `chunk` (at most 15 bytes), which lies in a text that ends at
// `text_end`: its bytes zero-padded to 16, its length plus one in the top byte; two
// loads and two masks when 16 bytes can be read from its start.
struct ShortKey {
    uint64_t lo, hi;
};
BPE_ALWAYS_INLINE inline ShortKey short_key(std::string_view chunk, const char* text_end) {
    const size_t n = chunk.size();
    uint64_t word[2] = {0, 0};
    if (chunk.data() + 16 <= text_end) std::memcpy(word, chunk.data(), 16);
    else std::memcpy(word, chunk.data(), n);
    return {word[0] & kKeyMasks.lo[n], (word[1] & kKeyMasks.hi[n]) | (uint64_t(n + 1) << 56)};
}

// The counting threads' table of short chunks (ChunkCounter::count_pieces): a chunk
// of at most kShortChunk bytes is its own key, and the key sits in the entry with its
// count, so that a count costs one line of memory where ChunkTable reads two (its index
// slot, then the entry it names). The counting loop works out a block of chunks' keys
// first and asks for their lines, then counts them (chunk_counter.h). Longer chunks,
// few, are counted in a ChunkTable, and so are all chunks once counted (the counter's
// shards), since that is what the rest of the counter and the trainer read.
//
// The key is the chunk's bytes, zero-padded to 16, with its length plus one in the top
// byte (which a chunk of 15 bytes or fewer leaves free): no key is all zeros, which
// marks an empty entry. (encoder_table.h's short keys have the same form.) Byte k of
// the chunk is bits 8k.. of the key: the engine runs on little-endian machines only.
class ShortChunkCounts {
public:
    static constexpr size_t kShortChunk = 15;

    struct Key {
        uint64_t lo, hi, hash;
    };

    // The key of `chunk` (at most kShortChunk bytes), which lies in a text that ends at
    // `text_end` (short_key), with its hash.
    BPE_ALWAYS_INLINE static Key key(std::string_view chunk, const char* text_end) {
        const ShortKey k = short_key(chunk, text_end);
        return {k.lo, k.hi, hash_of(k.lo, k.hi)};
    }

    // Every bit of the key reaches the top bits of the product, and the fold brings
    // them down to the low ones, which pick the slot: cheaper than chunk_hash, which
    // takes chunks of any length.
    BPE_ALWAYS_INLINE static uint64_t hash_of(uint64_t lo, uint64_t hi) {
        uint64_t h = (lo ^ (hi * 0xc2b2ae3d27d4eb4fULL) ^ (hi >> 29)) * 0x9e3779b97f4a7c15ULL;
        return h ^ (h >> 32);
    }

    explicit ShortChunkCounts(size_t expected = 1 << 12) : entries_(table_capacity(expected)), mask_(entries_.size() - 1) {}

    // The bytes its entries take, counted or not.
    size_t memory() const { return entries_.size() * sizeof(Entry); }

    // Where the key's probe starts: the counting loop asks for it ahead.
    const void* line_of(const Key& key) const { return &entries_[key.hash & mask_]; }

    void add(const Key& key, int64_t n) {
        for (size_t i = key.hash & mask_;; i = (i + 1) & mask_) {
            Entry& e = entries_[i];
            if (e.hi == key.hi && e.lo == key.lo) {
                e.count += n;
                return;
            }
            if (e.hi == 0) {
                e.lo = key.lo, e.hi = key.hi, e.count = n;
                if (++size_ * 2 > entries_.size()) grow();  // at most half full: probes stay short
                return;
            }
        }
    }

    size_t size() const { return size_; }

    // Calls f(chunk, count) for each chunk counted, in no set order, and empties the
    // table as it goes, keeping its size for the next round of counting, which then
    // neither grows it again nor has its pages zeroed by the system (the pass clears
    // lines it reads anyway). The chunk's view lies in the table, valid during the call.
    template <class F>
    void drain(F&& f) {
        for (Entry& e : entries_) {
            if (e.hi == 0) continue;
            f(std::string_view(reinterpret_cast<const char*>(&e.lo), size_t(e.hi >> 56) - 1), e.count);
            e = Entry();
        }
        size_ = 0;
    }

private:
    // 32 bytes, so that an entry never straddles two lines; lo and hi side by side are
    // the chunk's bytes, which drain hands out.
    struct alignas(32) Entry {
        uint64_t lo = 0, hi = 0;  // hi == 0: empty
        int64_t count = 0;
        uint64_t unused = 0;
    };
    static_assert(sizeof(Entry) == 32, "two entries a line");

    void grow() {
        std::vector<Entry> entries(entries_.size() * 2);
        size_t mask = entries.size() - 1;
        for (const Entry& e : entries_) {
            if (e.hi == 0) continue;
            size_t i = hash_of(e.lo, e.hi) & mask;
            while (entries[i].hi != 0) i = (i + 1) & mask;
            entries[i] = e;
        }
        entries_.swap(entries);
        mask_ = mask;
    }

    std::vector<Entry> entries_;
    size_t mask_;
    size_t size_ = 0;
};

// Bytes kept for as long as their owner lives, in blocks that never move, so that
// views into them stay valid: the keys of a table whose texts have gone. Blocks start
// small and double up to 1 MB, since the counter keeps an arena for each of its many
// shards, and most arenas hold little.
class ByteArena {
public:
    std::string_view keep(std::string_view bytes) {
        if (blocks_.empty() || used_ + bytes.size() > block_size_) {
            block_size_ = std::max(std::min(2 * block_size_, kMaxBlockSize), bytes.size());
            // Not zeroed: every byte is written before it is read.
            blocks_.push_back(std::unique_ptr<char[]>(new char[block_size_]));
            allocated_ += block_size_;
            used_ = 0;
        }
        char* copy = blocks_.back().get() + used_;
        if (!bytes.empty()) std::memcpy(copy, bytes.data(), bytes.size());
        used_ += bytes.size();
        return {copy, bytes.size()};
    }

    // The bytes its blocks take, for the counter's memory budget.
    size_t memory() const { return allocated_; }

private:
    static constexpr size_t kMaxBlockSize = 1 << 20;
    std::vector<std::unique_ptr<char[]>> blocks_;
    size_t used_ = 0, block_size_ = 2048, allocated_ = 0;
};

}  // namespace bpe
