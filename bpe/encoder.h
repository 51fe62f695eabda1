// Encoding: turn text into token ids with merges already learned.
//
// Within a chunk, the pair of lowest rank (the earliest merge) is merged first, its
// leftmost occurrence first, until no neighbouring pair is a merge. That gives the
// same ids as the reference, which merges all occurrences of the lowest-rank pair at
// once: a merge made now creates pairs with the new token, whose merges were learned
// later, so they never jump ahead of the occurrences still waiting.
//
// Chunks repeat (" the", " a", "."), so each call keeps the chunks it has encoded,
// and the Encoder keeps a shared cache across calls. Python threads can call encode
// at once (the GIL is released), so the shared cache sits behind a reader-writer
// lock, taken only when a chunk is new to the call.
#pragma once

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <queue>
#include <shared_mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "chunk_table.h"
#include "split.h"
#include "train.h"

namespace bpe {

class Encoder {
public:
    // Throws std::invalid_argument for merges that could not have been learned: merge
    // k may use only the bytes and the tokens of the merges before it, once each.
    explicit Encoder(const std::vector<Pair>& merges) {
        ranks_.reserve(merges.size());
        for (size_t k = 0; k < merges.size(); ++k) {
            auto [a, b] = merges[k];
            if (a >= 256 + k || b >= 256 + k)
                throw std::invalid_argument("merge " + std::to_string(k) + " is (" + std::to_string(a) + ", " +
                                            std::to_string(b) + "), but merge " + std::to_string(k) +
                                            " may only use ids below " + std::to_string(256 + k));
            if (!ranks_.emplace(pair_key(a, b), uint32_t(k)).second)
                throw std::invalid_argument("merge " + std::to_string(k) + " repeats merge " +
                                            std::to_string(ranks_[pair_key(a, b)]) + ": (" + std::to_string(a) +
                                            ", " + std::to_string(b) + ")");
        }
    }

    size_t num_merges() const { return ranks_.size(); }

    // Appends the ids of `text` to `out`.
    void encode(std::string_view text, std::vector<uint32_t>& out) const {
        // Chunks met in this call: views into `text`, mapped to where their ids
        // begin in `out` (ids of a chunk are contiguous there) and how many.
        struct Span { uint32_t start, size; };
        ChunkTable<Span> seen(std::min<size_t>(1 << 16, text.size() / 8 + 16));
        for_each_chunk(text, [&](std::string_view chunk) {
            uint64_t hash = hash_bytes(chunk);
            if (const Span* span = seen.find(chunk, hash)) {
                size_t end = out.size();
                out.resize(end + span->size);  // resize first: copying from out into itself
                std::copy_n(out.begin() + span->start, span->size, out.begin() + end);
                return;
            }
            size_t start = out.size();
            encode_chunk_cached(chunk, out);
            if (out.size() - start < UINT32_MAX && start < UINT32_MAX)
                seen.find_or_insert(chunk, hash) = {uint32_t(start), uint32_t(out.size() - start)};
        });
    }

    // Encodes on `threads` threads, each a piece of the text cut at a chunk boundary.
    std::vector<uint32_t> encode_parallel(std::string_view text, unsigned threads) const {
        std::vector<size_t> cuts = cut_points(text, std::max(1u, threads));
        size_t pieces = cuts.size() - 1;
        std::vector<std::vector<uint32_t>> parts(pieces);
        auto encode_piece = [&](size_t k) { encode(text.substr(cuts[k], cuts[k + 1] - cuts[k]), parts[k]); };
        std::vector<std::thread> workers;
        for (size_t k = 1; k < pieces; ++k) workers.emplace_back(encode_piece, k);
        encode_piece(0);
        for (auto& w : workers) w.join();
        if (pieces == 1) return std::move(parts[0]);
        std::vector<uint32_t> ids;
        size_t total = 0;
        for (auto& part : parts) total += part.size();
        ids.reserve(total);
        for (auto& part : parts) ids.insert(ids.end(), part.begin(), part.end());
        return ids;
    }

    // The ids of one chunk, with merges applied in rank order.
    void encode_chunk(std::string_view chunk, std::vector<uint32_t>& out) const {
        if (chunk.size() <= kShortChunk) encode_short(chunk, out);
        else encode_long(chunk, out);
    }

private:
    // Chunks up to this length are merged by scanning all pairs again after each
    // merge, which is quadratic but fastest for the handful of bytes a word has.
    static constexpr size_t kShortChunk = 32;
    // The shared cache keeps chunks up to this length, and up to this many of them.
    static constexpr size_t kCachedChunk = 64;
    static constexpr size_t kCacheEntries = 1 << 20;

    static constexpr uint32_t kNoRank = UINT32_MAX;
    uint32_t rank(uint32_t a, uint32_t b) const {
        auto it = ranks_.find(pair_key(a, b));
        return it == ranks_.end() ? kNoRank : it->second;
    }

    void encode_chunk_cached(std::string_view chunk, std::vector<uint32_t>& out) const {
        if (chunk.size() > kCachedChunk) return encode_chunk(chunk, out);
        std::string key(chunk);
        {
            std::shared_lock lock(cache_mutex_);
            auto it = cache_.find(key);
            if (it != cache_.end()) {
                out.insert(out.end(), it->second.begin(), it->second.end());
                return;
            }
        }
        size_t start = out.size();
        encode_chunk(chunk, out);
        std::unique_lock lock(cache_mutex_);
        if (cache_.size() < kCacheEntries) cache_.emplace(std::move(key), std::vector<uint32_t>(out.begin() + start, out.end()));
    }

    void encode_short(std::string_view chunk, std::vector<uint32_t>& out) const {
        uint32_t ids[kShortChunk];
        size_t n = chunk.size();
        for (size_t i = 0; i < n; ++i) ids[i] = static_cast<unsigned char>(chunk[i]);
        while (n > 1) {
            uint32_t best = kNoRank;
            size_t at = 0;
            for (size_t i = 0; i + 1 < n; ++i) {
                uint32_t r = rank(ids[i], ids[i + 1]);
                if (r < best) best = r, at = i;
            }
            if (best == kNoRank) break;
            ids[at] = 256 + best;
            for (size_t i = at + 1; i + 1 < n; ++i) ids[i] = ids[i + 1];
            --n;
        }
        out.insert(out.end(), ids, ids + n);
    }

    // The same merges in O(n log n): symbols in a linked list, and a heap of
    // (rank, position) for each neighbouring pair that is a merge. An entry goes
    // stale when either symbol of its pair has been merged since; the pair then at
    // that position has a different rank, or none.
    void encode_long(std::string_view chunk, std::vector<uint32_t>& out) const {
        if (chunk.size() >= size_t(INT32_MAX)) throw std::length_error("a chunk of 2 GB or more cannot be encoded");
        int32_t n = int32_t(chunk.size());
        std::vector<uint32_t> symbol(n);
        std::vector<int32_t> prev(n), next(n);
        for (int32_t i = 0; i < n; ++i) {
            symbol[i] = static_cast<unsigned char>(chunk[i]);
            prev[i] = i - 1;
            next[i] = i + 1 < n ? i + 1 : -1;
        }
        using Entry = std::pair<uint32_t, int32_t>;  // (rank, position): lowest first, then leftmost
        std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap;
        auto push = [&](int32_t p) {
            if (p < 0 || next[p] < 0) return;
            uint32_t r = rank(symbol[p], symbol[next[p]]);
            if (r != kNoRank) heap.push({r, p});
        };
        for (int32_t i = 0; i + 1 < n; ++i) push(i);
        while (!heap.empty()) {
            auto [r, p] = heap.top();
            heap.pop();
            int32_t q = next[p];
            if (symbol[p] == kDead || q < 0 || rank(symbol[p], symbol[q]) != r) continue;
            symbol[p] = 256 + r;
            symbol[q] = kDead;
            next[p] = next[q];
            if (next[q] >= 0) prev[next[q]] = p;
            push(prev[p]);
            push(p);
        }
        for (int32_t p = 0; p >= 0; p = next[p]) out.push_back(symbol[p]);
    }

    static constexpr uint32_t kDead = UINT32_MAX;
    std::unordered_map<uint64_t, uint32_t> ranks_;
    mutable std::shared_mutex cache_mutex_;
    mutable std::unordered_map<std::string, std::vector<uint32_t>> cache_;
};

}  // namespace bpe
