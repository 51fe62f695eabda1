// The Encoder's table of chunks and their ids: one per Encoder, kept for its life and
// shared by its threads, seeded with the vocabulary's tokens that are whole chunks and
// grown with every chunk met. Chunks repeat (" the", " a", "."): a story of 4,000
// chunks has a few hundred distinct ones, and a text of the same kind as the last
// finds nearly all of its chunks here. A chunk's ids are merged once, then read.
//
// It sits apart from encoder.h, which is the algorithm (the merge of a chunk, and the
// chunk loop that looks here first), since none of this changes which ids come out.
//
// The read path is what every chunk pays, so it is one probe, without a lock:
//   - The key of a chunk of at most 15 bytes is the chunk itself with its length, in
//     16 bytes: two 64-bit loads, masked through a table by the length. A longer chunk's
//     key is two hashes of all its bytes, marked by a length byte no short chunk has;
//     its bytes are kept beside its ids and compared on a hit (out of the hot path).
//   - An entry is 32 bytes, the key and its ids: up to 3 inline, a count, and a longer
//     list in a pool beside the table. Two entries fill a 64-byte line, and a bucket is
//     that aligned pair, so a probe is one line, which the chunk loop asks for ahead.
//   - Entries are only ever added, and an entry is published by the release store of
//     its key's second word, after everything else in it: a reader that sees that word
//     sees the entry whole. A full table is copied into one twice the size, which is
//     then published; readers still in the old one finish there (it is kept).
//   - Writers take a mutex, which the chunk loop meets only on a chunk it had to merge,
//     and do not wait for it: a chunk whose writer finds it taken is not kept.
//     The table stops growing at kMaxTableBytes (and the pool at kMaxPoolBytes): past
//     that, new chunks are merged every time they come, and memory stays bounded.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <new>
#include <string_view>
#include <vector>

#include "chunk_table.h"
#include "compiler.h"
#include "hash.h"
#include "region.h"

namespace bpe {

// --- keys ---------------------------------------------------------------------------

// A chunk as the table knows it: `lo` and `hi` are its 16-byte key, `hash` picks its
// bucket. For a chunk of at most kShortKey bytes the key is the chunk, zero-padded, with
// its length plus one in the top byte of `hi` (plus one: so that no key, not even an
// empty chunk's, is all zeros, which marks an empty entry); a longer chunk's top byte is
// kLongMark.
struct ChunkId {
    uint64_t lo, hi, hash;
};

inline constexpr size_t kShortKey = 15;
inline constexpr uint64_t kLongMark = 0xff;

// A key's bucket is the top bits of this, which every bit of the key reaches: two
// multiplies, the fewest that spread the length byte (at the top of `hi`) too. Its
// multipliers are named, as keys_avx512 makes the same hash eight keys at a time.
inline constexpr uint64_t kHashHi = 0xc2b2ae3d27d4eb4fULL, kHashAll = 0x9e3779b97f4a7c15ULL;
BPE_ALWAYS_INLINE inline uint64_t bucket_hash(uint64_t lo, uint64_t hi) {
    return (lo ^ (hi * kHashHi) ^ (hi >> 32)) * kHashAll;
}

// The key of a chunk longer than kShortKey: two hashes of all its bytes.
inline ChunkId long_chunk_id(std::string_view chunk) {
    uint64_t word[2];
    std::memcpy(word, chunk.data(), 16);
    uint64_t h = chunk_hash(word, chunk);
    uint64_t lo = h, hi = (mix(h ^ chunk.size()) >> 8) | (kLongMark << 56);
    return {lo, hi, bucket_hash(lo, hi)};
}

// The key of `chunk`, which lies in a text that ends at `text_end`: when 16 bytes can be
// read from the chunk's start (all but the last chunk or two of a text), two loads.
BPE_ALWAYS_INLINE inline ChunkId chunk_id(std::string_view chunk, const char* text_end) {
    if (chunk.size() > kShortKey) return long_chunk_id(chunk);
    const ShortKey k = short_key(chunk, text_end);
    return {k.lo, k.hi, bucket_hash(k.lo, k.hi)};
}

// chunk_id's key for a chunk of n <= kShortKey bytes at p with 16 bytes readable there,
// made without a branch on the length: what the chunk loop makes for most chunks.
BPE_ALWAYS_INLINE inline ChunkId short_chunk_id(const char* p, size_t n) {
    uint64_t word[2];
    std::memcpy(word, p, 16);
    const uint64_t lo = word[0] & kKeyMasks.lo[n];
    const uint64_t hi = (word[1] & kKeyMasks.hi[n]) | (uint64_t(n + 1) << 56);
    return {lo, hi, bucket_hash(lo, hi)};
}

// The chunk loop's block of chunks (encoder.h), column by column: each chunk's bytes
// and its probe key, made for the whole block before any is probed, so that every
// chunk's bucket can be asked for a block ahead.
template <size_t N>
struct KeyBlock {
    const char* begin[N];
    size_t size[N];
    uint64_t lo[N], hi[N], hash[N];

    std::string_view chunk(size_t k) const { return {begin[k], size[k]}; }
    ChunkId key(size_t k) const { return {lo[k], hi[k], hash[k]}; }
    void set(size_t k, const char* at, size_t n, const ChunkId& key) {
        begin[k] = at, size[k] = n, lo[k] = key.lo, hi[k] = key.hi, hash[k] = key.hash;
    }

    // The first `count` chunks from a run of the text at `base`: [first, ends[0]),
    // [ends[0], ends[1]), ..., with 16 bytes readable at each one's start. `wide`: eight
    // at a time in AVX-512 registers (keys_avx512), where the CPU has them. A chunk
    // longer than a short key gets its own key (a hash of all its bytes) here too, so
    // that its bucket is on the way with the others' (indentation in source code).
    void set_run(const char* base, size_t first, const size_t* ends, size_t count, bool wide);
};

#if defined(BPE_X86_TIERS)
// short_chunk_id for eight chunks at once, lane by lane: the chunks' starts are the ends
// shifted by one lane, their 16 bytes are loaded a chunk at a time and sorted into a
// register of first words and one of second words, and the masks by length, the
// length byte and bucket_hash are each an instruction or two for all eight, where
// short_chunk_id's are a dozen for each chunk. Fills whole eights of the run; returns how
// many chunks that was.
// (GCC 12's AVX-512 intrinsics warn that their own placeholder operand may be used
// uninitialized where they are inlined, its bug 105593; GCC 13 does not.)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
template <size_t N>
BPE_AVX512 size_t keys_avx512(KeyBlock<N>& block, const char* base, size_t first, const size_t* ends,
                              size_t count) {
    const __m512i ones = _mm512_set1_epi64(-1), at = _mm512_set1_epi64(reinterpret_cast<long long>(base));
    const __m512i evens = _mm512_setr_epi64(0, 2, 4, 6, 8, 10, 12, 14), odds = _mm512_setr_epi64(1, 3, 5, 7, 9, 11, 13, 15);
    auto bytes16 = [base](size_t start) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(base + start)); };
    __m512i before = _mm512_set1_epi64(static_cast<long long>(first));  // lane 7: where the next eight start
    size_t k = 0;
    for (; k + 8 <= count; k += 8) {
        const __m512i end = _mm512_loadu_si512(ends + k);
        const __m512i start = _mm512_alignr_epi64(end, before, 7);
        before = end;
        // Lanes of (first word, second word) for chunks 0-3 and 4-7, then sorted.
        __m512i low4 = _mm512_castsi128_si512(bytes16(k ? ends[k - 1] : first));
        low4 = _mm512_inserti64x2(low4, bytes16(ends[k]), 1);
        low4 = _mm512_inserti64x2(low4, bytes16(ends[k + 1]), 2);
        low4 = _mm512_inserti64x2(low4, bytes16(ends[k + 2]), 3);
        __m512i high4 = _mm512_castsi128_si512(bytes16(ends[k + 3]));
        high4 = _mm512_inserti64x2(high4, bytes16(ends[k + 4]), 1);
        high4 = _mm512_inserti64x2(high4, bytes16(ends[k + 5]), 2);
        high4 = _mm512_inserti64x2(high4, bytes16(ends[k + 6]), 3);
        const __m512i size = _mm512_sub_epi64(end, start);
        // short_chunk_id's masks and length byte (a shift by 64 or more gives 0). A lane
        // of a longer chunk is keyed again below; m keeps its arithmetic in range.
        const __m512i m = _mm512_min_epu64(size, _mm512_set1_epi64(kShortKey));
        const __m512i m_past8 = _mm512_max_epi64(_mm512_sub_epi64(m, _mm512_set1_epi64(8)), _mm512_setzero_si512());
        const __m512i length_byte = _mm512_slli_epi64(_mm512_add_epi64(m, _mm512_set1_epi64(1)), 56);
        const __m512i lo = _mm512_andnot_si512(_mm512_sllv_epi64(ones, _mm512_slli_epi64(m, 3)),
                                               _mm512_permutex2var_epi64(low4, evens, high4));
        const __m512i hi = _mm512_or_si512(_mm512_andnot_si512(_mm512_sllv_epi64(ones, _mm512_slli_epi64(m_past8, 3)),
                                                               _mm512_permutex2var_epi64(low4, odds, high4)),
                                           length_byte);
        // bucket_hash
        const __m512i mixed = _mm512_xor_si512(_mm512_xor_si512(lo, _mm512_mullo_epi64(hi, _mm512_set1_epi64(kHashHi))),
                                               _mm512_srli_epi64(hi, 32));
        _mm512_storeu_si512(block.hash + k, _mm512_mullo_epi64(mixed, _mm512_set1_epi64(kHashAll)));
        _mm512_storeu_si512(block.lo + k, lo);
        _mm512_storeu_si512(block.hi + k, hi);
        _mm512_storeu_si512(block.size + k, size);
        _mm512_storeu_si512(block.begin + k, _mm512_add_epi64(at, start));
        for (__mmask8 longer = _mm512_cmpgt_epu64_mask(size, _mm512_set1_epi64(kShortKey)); longer != 0;
             longer &= longer - 1) {
            const size_t j = k + count_trailing_zeros(uint32_t(longer));
            block.set(j, block.begin[j], block.size[j], long_chunk_id(block.chunk(j)));
        }
    }
    return k;
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#endif

template <size_t N>
void KeyBlock<N>::set_run(const char* base, size_t first, const size_t* ends, size_t count, bool wide) {
    size_t k = 0;
#if defined(BPE_X86_TIERS)
    if (wide) {
        k = keys_avx512(*this, base, first, ends, count);
        if (k) first = ends[k - 1];
    }
#else
    (void)wide;
#endif
    for (; k < count; ++k) {
        const size_t n = ends[k] - first;
        set(k, base + first, n, n > kShortKey ? long_chunk_id({base + first, n}) : short_chunk_id(base + first, n));
        first = ends[k];
    }
}

// --- the table -----------------------------------------------------------------------

class EncoderTable {
public:
    // An entry: the key, then the ids. count <= kInline: the ids are ids[0..count);
    // otherwise ids[0] is where the ids are in the pool (see rest()).
    struct alignas(32) Entry {
        std::atomic<uint64_t> lo;
        std::atomic<uint64_t> hi;  // 0: empty (no key's is); stored last, with release
        uint32_t ids[3];
        uint32_t count;
    };
    static constexpr uint32_t kInline = 3;
    static constexpr uint32_t kLong = 0x80000000;  // in count: a chunk longer than kShortKey

    // The most memory the table may take: the live table, the tables it outgrew (less
    // than the live one together), and the pool. docs/engine.md states these.
    static constexpr size_t kMaxTableBytes = size_t(32) << 20;
    static constexpr size_t kMaxPoolBytes = size_t(32) << 20;
    // The longest chunk kept: a longer one rarely comes back, and is merged straight into
    // the output. Lines of one mark ("====", "----") that rule off Markdown and source
    // are single chunks of any length, and come back often.
    static constexpr size_t kLongestChunk = 4096;
    // Chunks longer than kPoolShareAbove take at most kPoolShareBytes of the pool between
    // them, so that a text of many distinct long lines cannot use up the pool (or the
    // table's entries: one such chunk takes 76 bytes of the share at least, so they hold
    // at most 110,000 entries) that shorter chunks need.
    static constexpr size_t kPoolShareAbove = 64;
    static constexpr size_t kPoolShareBytes = size_t(8) << 20;

    // A table sized for `expected` entries (the seeds, typically).
    explicit EncoderTable(size_t expected = 0) : pool_(kMaxPoolBytes, false) {
        size_t buckets = 1024;
        while (buckets * 2 * kMaxLoad < expected * 1.25 && buckets * 2 * sizeof(Entry) < kMaxTableBytes) buckets *= 2;
        live_.store(publish(buckets), std::memory_order_release);
        std::lock_guard<std::mutex> lock(all_mutex());
        next_ = all();
        if (next_) next_->prev_ = this;
        all() = this;
    }
    ~EncoderTable() {
        {
            std::lock_guard<std::mutex> lock(all_mutex());
            (prev_ ? prev_->next_ : all()) = next_;
            if (next_) next_->prev_ = prev_;
        }
        for (Table*& t : tables_) delete t;
    }
    EncoderTable(const EncoderTable&) = delete;
    EncoderTable& operator=(const EncoderTable&) = delete;

    // A view of the live table for a run of lookups: the chunk loop takes one per block.
    struct Reader {
        const Entry* entries;
        size_t mask;  // buckets - 1
        unsigned shift;  // 64 - log2(buckets): a hash's bucket is hash >> shift

        const Entry* bucket(uint64_t hash) const { return entries + 2 * (hash >> shift); }

        // The entry of the key, or nullptr. Which of a bucket's two entries holds the
        // key is anyone's guess, so both are compared and the match picked without a
        // branch; the branch left (found in this bucket?) nearly always goes one way. A
        // key's `hi` words are read before its `lo` words: a `lo` read early could be
        // older than its `hi`, which makes at worst a miss (the chunk is then merged).
        BPE_ALWAYS_INLINE const Entry* find(const ChunkId& key) const {
            for (size_t b = key.hash >> shift;; b = (b + 1) & mask) {
                const Entry* e = entries + 2 * b;
                uint64_t h0 = e[0].hi.load(std::memory_order_acquire);
                uint64_t h1 = e[1].hi.load(std::memory_order_acquire);
                uint64_t d0 = (h0 ^ key.hi) | (e[0].lo.load(std::memory_order_relaxed) ^ key.lo);
                uint64_t d1 = (h1 ^ key.hi) | (e[1].lo.load(std::memory_order_relaxed) ^ key.lo);
                size_t second = d1 == 0;
                if ((second ? d1 : d0) == 0) return e + second;
                if (h1 == 0) return nullptr;  // a bucket fills in order: the key would be here
            }
        }
    };
    Reader reader() const {
        const Table* t = live_.load(std::memory_order_acquire);
        return {reinterpret_cast<const Entry*>(t->region.data()), t->buckets - 1, t->shift};
    }

    // The ids of an entry whose ids are in the pool (its count above kInline, or a long
    // chunk's), with their number in `n`; nullptr when it is a long chunk's entry and
    // `chunk` is another chunk of the same key.
    const uint32_t* rest(const Entry& e, std::string_view chunk, size_t& n) const {
        const uint32_t* at = pool() + e.ids[0];
        n = e.count & ~kLong;
        if (e.count & kLong) {
            if (at[0] != chunk.size() || std::memcmp(at + 1 + n, chunk.data(), chunk.size()) != 0) return nullptr;
            ++at;
        }
        return at;
    }

    // The ids of an entry of a short chunk whose count is above kInline (not kLong),
    // to `to`, kCopyPiece at a time: fixed-size copies the compiler makes a few moves,
    // where one of the count's size is a call to memmove. A short chunk's ids take
    // whole pieces of the pool (insert), so the last piece reads only its own words;
    // it may write up to kCopyPiece - 1 ids past the count, which the caller has room for.
    static constexpr size_t kCopyPiece = 8;
    void copy_rest(const Entry& e, uint32_t* to) const {
        const uint32_t* from = pool() + e.ids[0];
        for (size_t k = 0; k < e.count; k += kCopyPiece) std::memcpy(to + k, from + k, kCopyPiece * 4);
    }

    // Adds a chunk and its ids (the caller's numbering), unless it is there already or
    // the table is full. Only a chunk of at most kLongestChunk bytes is kept.
    void insert(const ChunkId& key, std::string_view chunk, const uint32_t* ids, size_t n) {
        if (chunk.size() > kLongestChunk || n == 0 || n >= kLong) return;
        // A writer that finds another one writing leaves its chunk out, to be merged
        // again when it comes again, rather than wait: threads that meet a new text's
        // chunks at once would queue here, all of them while one grows the table.
        std::unique_lock<std::mutex> lock(mutex_, std::try_to_lock);
        if (!lock.owns_lock()) return;
        if (full_) return;
        Table* t = live_.load(std::memory_order_relaxed);
        if ((size_ + 1) > t->buckets * 2 * kMaxLoad) {
            if (t->buckets * 4 * sizeof(Entry) > kMaxTableBytes) {
                full_ = true;
                return;
            }
            const size_t want = size_ + 1 + expected_.load(std::memory_order_relaxed);
            size_t buckets = t->buckets * 2;
            while (want > buckets * 2 * kMaxLoad && buckets * 4 * sizeof(Entry) <= kMaxTableBytes) buckets *= 2;
            grow(buckets);
            t = live_.load(std::memory_order_relaxed);
        }
        Entry* e = slot(t, key);
        if (e == nullptr) return;  // there already
        const bool is_long = chunk.size() > kShortKey;
        if (n <= kInline && !is_long) {
            for (size_t k = 0; k < n; ++k) e->ids[k] = ids[k];
            e->count = uint32_t(n);
        } else {
            // In the pool: [length, if long] ids... [bytes, if long], in 4-byte words; a
            // short chunk's ids in whole pieces of kCopyPiece (copy_rest).
            size_t words = is_long ? n + 1 + (chunk.size() + 3) / 4 : (n + kCopyPiece - 1) / kCopyPiece * kCopyPiece;
            const bool shared = chunk.size() > kPoolShareAbove;
            if (shared && (share_used_ + words) * 4 > kPoolShareBytes) return;  // the share is full, not the table
            if ((pool_used_ + words) * 4 > kMaxPoolBytes) {
                full_ = true;
                return;
            }
            if (shared) share_used_ += words;
            uint32_t* at = pool() + pool_used_;
            e->ids[0] = uint32_t(pool_used_);
            pool_used_ += words;
            if (is_long) *at++ = uint32_t(chunk.size());
            std::memcpy(at, ids, n * 4);
            if (is_long) std::memcpy(at + n, chunk.data(), chunk.size());
            e->count = uint32_t(n) | (is_long ? kLong : 0);
        }
        e->lo.store(key.lo, std::memory_order_relaxed);
        e->hi.store(key.hi, std::memory_order_release);  // publishes the entry
        ++size_;
    }

    // How many new entries the calls under way may bring (0: no guess): where the table
    // must grow while they run, it grows at once to hold them too, not twice the size
    // at a time. A call on a long text says so before its threads start (Expecting),
    // so that the table is not grown again and again under the writers' lock while
    // they meet the text's new chunks, each writer that finds the lock taken leaving
    // its chunk out to be merged again. Only a guess at a size: a text that brings no
    // new chunks grows nothing.
    class Expecting {
    public:
        Expecting(const EncoderTable& table, size_t more) : table_(table) {
            table_.expected_.fetch_add(more, std::memory_order_relaxed);
            more_ = more;
        }
        ~Expecting() { table_.expected_.fetch_sub(more_, std::memory_order_relaxed); }
        Expecting(const Expecting&) = delete;
        Expecting& operator=(const Expecting&) = delete;

    private:
        const EncoderTable& table_;
        size_t more_;
    };

    // Around fork(): readers take no lock, and a writer's half-made entry or table is
    // not yet published, so the child's table is whole; only the locks that a thread
    // of the parent may have held are made anew in the child (the bindings hand these
    // to pthread_atfork). The list's own lock is held across the fork.
    static void before_fork() { all_mutex().lock(); }
    static void after_fork_in_parent() { all_mutex().unlock(); }
    static void after_fork_in_child() {
        new (&all_mutex()) std::mutex;  // the lock the forking thread held; no other thread is left
        for (EncoderTable* cache = all(); cache; cache = cache->next_) new (&cache->mutex_) std::mutex;
    }

private:
    // Below kMaxLoad of the entries filled, probes stay short (most hit their first line).
    static constexpr double kMaxLoad = 0.6;
    // Doubling from 1,024 buckets to kMaxTableBytes takes fewer tables than this.
    static constexpr size_t kMaxTables = 32;

    struct Table {
        Region region;
        size_t buckets;
        unsigned shift;
        explicit Table(size_t b) : region(b * 2 * sizeof(Entry), true), buckets(b), shift(64) {
            for (size_t n = b; n > 1; n /= 2) --shift;
        }
    };

    uint32_t* pool() const { return reinterpret_cast<uint32_t*>(pool_.data()); }

    // The empty entry where the key goes, or nullptr if the key is there.
    static Entry* slot(Table* t, const ChunkId& key) {
        Entry* entries = reinterpret_cast<Entry*>(t->region.data());
        size_t mask = t->buckets - 1;
        for (size_t b = key.hash >> t->shift;; b = (b + 1) & mask) {
            for (Entry* e = entries + 2 * b; e < entries + 2 * b + 2; ++e) {
                uint64_t hi = e->hi.load(std::memory_order_relaxed);
                if (hi == 0) return e;
                if (hi == key.hi && e->lo.load(std::memory_order_relaxed) == key.lo) return nullptr;
            }
        }
    }

    // A new table of `buckets`, recorded before it is published, so that a fork at any
    // point leaves the child a consistent list (at worst with an unpublished table).
    Table* publish(size_t buckets) {
        Table* t = new Table(buckets);
        tables_[table_count_] = t;
        ++table_count_;
        return t;
    }

    // Copies every entry into a table of `buckets` (more than the live one's) and
    // publishes it. The old one is kept: readers that took it before finish their
    // lookups there.
    void grow(size_t buckets) {
        const Table* old = live_.load(std::memory_order_relaxed);
        Table* t = publish(buckets);
        const Entry* from = reinterpret_cast<const Entry*>(old->region.data());
        for (size_t i = 0; i < old->buckets * 2; ++i) {
            uint64_t hi = from[i].hi.load(std::memory_order_relaxed);
            if (hi == 0) continue;
            ChunkId key{from[i].lo.load(std::memory_order_relaxed), hi, 0};
            key.hash = bucket_hash(key.lo, key.hi);
            Entry* e = slot(t, key);
            if (e == nullptr) continue;  // (keys are distinct: never)
            std::memcpy(e->ids, from[i].ids, sizeof e->ids);
            e->count = from[i].count;
            e->lo.store(key.lo, std::memory_order_relaxed);
            e->hi.store(hi, std::memory_order_relaxed);  // published with the table below
        }
        live_.store(t, std::memory_order_release);
    }

    // What every reader loads, on a line of its own: the writers' fields below change
    // with each insert, and sharing a line with them would make every flush of every
    // thread's chunk loop miss (false sharing).
    alignas(64) std::atomic<Table*> live_{nullptr};
    alignas(64) Region pool_;
    size_t pool_used_ = 0;  // words; under mutex_
    size_t share_used_ = 0;  // of pool_used_, the words of chunks longer than kPoolShareAbove; under mutex_
    Table* tables_[kMaxTables] = {};
    size_t table_count_ = 0;
    size_t size_ = 0;  // entries; under mutex_
    mutable std::atomic<size_t> expected_{0};  // Expecting's guesses, added up
    bool full_ = false;
    mutable std::mutex mutex_;  // writers only
    EncoderTable *prev_ = nullptr, *next_ = nullptr;  // on the list of every table, for fork

    static EncoderTable*& all() {
        static EncoderTable* head = nullptr;
        return head;
    }
    static std::mutex& all_mutex() {
        static std::mutex mutex;
        return mutex;
    }
};

}  // namespace bpe
