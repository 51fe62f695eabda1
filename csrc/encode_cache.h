// The caches of encoding: what a call remembers of the chunks it has encoded, and
// what an Encoder shares between calls and threads.
//
// They sit apart from encoder.h, which is the algorithm (the merge of a chunk, and the
// segment loop that looks in these first), since none of this changes which ids come
// out: it only saves merging a chunk twice. Chunks repeat (" the", " a", "."): a story
// of 4,000 chunks has a few hundred distinct ones.
#pragma once

#include <cstdint>
#include <mutex>
#include <new>
#include <shared_mutex>
#include <string_view>
#include <vector>

#include "chunk_table.h"

namespace bpe {

// Chunks and their ids. Most chunks are a single token, whose id the entry holds
// itself; the ids of the others go, back to back, to an array of their own.
class IdsTable {
public:
    explicit IdsTable(size_t expected) : table_(expected) {}

    // Appends the ids of the chunk to `out` and returns true, if the table has it.
    bool append_to(const ChunkKey& key, std::vector<uint32_t>& out) const {
        const Ids* ids = table_.find(key);
        if (ids == nullptr) return false;
        if (ids->size == 1) {
            out.push_back(ids->id_or_offset);
        } else {
            // A loop, not insert: the ids of a chunk are a handful (encoder.h's
            // performance notes).
            const uint32_t* from = spilled_.data() + ids->id_or_offset;
            for (uint32_t k = 0; k < ids->size; ++k) out.push_back(from[k]);
        }
        return true;
    }

    // Keeps the ids of a chunk; the table keeps a view of the key's bytes.
    void insert(const ChunkKey& key, const uint32_t* ids, size_t size) {
        if (size == 1) {
            table_[key] = {1, ids[0]};
        } else if (size < UINT32_MAX && spilled_.size() + size < UINT32_MAX) {
            table_[key] = {uint32_t(size), uint32_t(spilled_.size())};
            spilled_.insert(spilled_.end(), ids, ids + size);
        }
    }

    size_t size() const { return table_.size(); }

private:
    struct Ids { uint32_t size, id_or_offset; };
    ChunkTable<Ids> table_;
    std::vector<uint32_t> spilled_;
};

// The chunks of one token and at most 16 bytes that a call met last, in a small
// direct-mapped array in front of its IdsTable: the frequent chunks (" the", ".") are
// most of a text, and for them one load of a slot that is likely in the fastest
// caches replaces the table's two dependent loads (its index, then its entry). A slot
// holds the chunk's 16 bytes, zero-padded, its length and its id; a new chunk takes
// the slot of its hash, whatever was there (it stays in the IdsTable).
class RecentChunks {
public:
    // Slots for a text of `bytes` bytes: a slot per 8 bytes, 64 to 16,384 (384 KB, what
    // a second-level cache holds: performance notes), so that a short text does not pay
    // to clear a large array.
    explicit RecentChunks(size_t bytes) {
        size_t n = 64;
        while (n < kMaxSlots && n * 8 < bytes) n *= 2;
        slots_.assign(n, Slot{});
        mask_ = n - 1;
    }

    // The chunk's id, if it was kept; else nullptr.
    const uint32_t* find(const ChunkKey& key) const {
        const Slot& slot = slots_[key.hash & mask_];
        bool same = slot.head[0] == key.head[0] && slot.head[1] == key.head[1] && slot.size == key.bytes.size();
        return same ? &slot.id : nullptr;
    }

    // Keeps a chunk that is the one token `id`; longer chunks are not kept.
    void keep(const ChunkKey& key, uint32_t id) {
        if (key.bytes.size() > 16) return;
        slots_[key.hash & mask_] = {{key.head[0], key.head[1]}, uint32_t(key.bytes.size()), id};
    }

private:
    static constexpr size_t kMaxSlots = 16384;
    struct Slot {
        uint64_t head[2] = {0, 0};
        uint32_t size = 0;  // 0: empty (no chunk is empty)
        uint32_t id = 0;
    };
    std::vector<Slot> slots_;
    size_t mask_ = 0;
};

// The cache an Encoder shares between calls and threads. Lookups take a shared lock;
// a call adds the chunks it had to encode all at once, under one exclusive lock, and
// the cache copies their bytes into blocks it owns, since the caller's text goes away.
//
// A process forked while another thread held the lock would find it held for good: the
// child has only the thread that forked, and its first lookup waited forever. So every
// cache is on a list, and after a fork the child gives each a new lock and an empty
// table (the bindings hand before_fork and the after_fork_ functions to pthread_atfork).
class SharedCache {
public:
    SharedCache() {
        std::lock_guard<std::mutex> lock(all_mutex());
        next_ = all();
        if (next_) next_->prev_ = this;
        all() = this;
    }
    ~SharedCache() {
        std::lock_guard<std::mutex> lock(all_mutex());
        (prev_ ? prev_->next_ : all()) = next_;
        if (next_) next_->prev_ = prev_;
    }
    SharedCache(const SharedCache&) = delete;
    SharedCache& operator=(const SharedCache&) = delete;

    // Around fork(): the list's own lock is held across it, so that the child's list is
    // whole; each cache's lock is not waited for (lookups would keep a fork waiting), so
    // in the child a cache may be half-changed: it is made anew, empty, and the old
    // tables are left as they are (their pages are the parent's until written).
    static void before_fork() { all_mutex().lock(); }
    static void after_fork_in_parent() { all_mutex().unlock(); }
    static void after_fork_in_child() {
        new (&all_mutex()) std::mutex;  // the lock the forking thread held; no other thread is left
        for (SharedCache* cache = all(); cache; cache = cache->next_) {
            new (&cache->mutex_) std::shared_mutex;
            new (&cache->table_) IdsTable(1024);
            new (&cache->arena_) ByteArena;
        }
    }

    bool append_to(const ChunkKey& key, std::vector<uint32_t>& out) const {
        std::shared_lock lock(mutex_);
        return table_.append_to(key, out);
    }

    // Adds the chunks `keys`, whose ids `source` has, unless the cache is full.
    void insert(const std::vector<ChunkKey>& keys, const IdsTable& source) {
        if (keys.empty()) return;
        std::vector<uint32_t> ids;
        std::unique_lock lock(mutex_);
        for (const ChunkKey& key : keys) {
            if (table_.size() >= kMaxEntries) return;
            ids.clear();
            source.append_to(key, ids);
            if (table_.append_to(key, ids)) continue;  // another thread added it meanwhile
            ChunkKey owned = key;
            owned.bytes = arena_.keep(key.bytes);
            table_.insert(owned, ids.data(), ids.size());
        }
    }

private:
    static constexpr size_t kMaxEntries = 1 << 20;

    mutable std::shared_mutex mutex_;
    IdsTable table_{1024};
    ByteArena arena_;  // the cached chunks' bytes
    SharedCache *prev_ = nullptr, *next_ = nullptr;  // on the list of every cache

    static SharedCache*& all() {
        static SharedCache* head = nullptr;
        return head;
    }
    static std::mutex& all_mutex() {
        static std::mutex mutex;
        return mutex;
    }
};

// Performance notes
//
// - RecentChunks, with the whole tokens (vocabulary.h) that came with it: GPT-2 on the
//   stories, ids as arrays, cold, about 95 -> 103 MB/s (process time, a noisy machine).
// - RecentChunks' size: 2 MB of Python source has 15,000 distinct chunks, more than
//   the 4,096 slots it first had. With up to 16,384 (a C++ harness, cold caches, the
//   best of 8 to 25 calls, a loaded machine): cl100k on source 83 -> 96 MB/s, on the
//   stories 155 -> 168; GPT-2 on the stories 176 -> 186; ours 179 -> 188.

}  // namespace bpe
