// Training: learn merges from counted chunks, each time turning the most frequent pair
// of neighbouring tokens into a new token.
//
// The reference (bpe_reference.py) counts every pair again for every merge. Here the
// counts are kept up to date instead, and the first screen below is that loop
// (Trainer::train and the merge it makes): take the most frequent pair from a queue; if
// its count is stale, push it back with the live one; otherwise merge it at each of its
// positions, noting the left and right neighbour of each occurrence, and then update
// the pairs with those neighbours: (left, a) becomes (left, new), and (b, right)
// becomes (new, right). A merge then costs time for its occurrences, not for the whole
// text, so even a 10 MB chunk with no space in it trains in O(n log n).
//
// After the loop, what it works on, each in a section of Trainer:
//   - Pairs: each pair's count, weighted by its words' counts, and the positions where
//     it occurs, in order;
//   - Slots: the distinct chunks ("words", counted by ChunkCounter in
//     chunk_counter.h) laid end to end as one array of tokens, grouped by how often
//     they occur, so that a word's count follows from its position;
//   - The queue: the pairs that may be merged next, in two tiers;
//   - Memory: prefetching, and dropping the lists of pairs that are gone.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <queue>
#include <stdexcept>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "chunk_counter.h"
#include "compiler.h"
#include "pair.h"
#include "pair_table.h"
#include "region.h"
#include "special.h"
#include "split.h"

namespace bpe {

// Learns merges from the counted chunks it is made with (see the opening comment).
class Trainer {
public:
    // The merges, up to num_merges. progress(merges done) is called every
    // kProgressEvery merges (if given); returning false stops training there.
    std::vector<Pair> train(int64_t num_merges, const std::function<bool(size_t)>& progress = nullptr) {
        std::vector<Pair> merges;
        while (int64_t(merges.size()) < num_merges && queue_.ready()) {
            Candidate top = queue_.pop();
            const PairStats* stats = pairs_.find(top.a, top.b);
            if (stats == nullptr) continue;  // the pair is gone
            if (stats->count != top.count) {  // stale: it lost occurrences since
                queue_.push({stats->count, top.a, top.b});
                continue;
            }
            uint32_t new_id = 256 + uint32_t(merges.size());
            merges.emplace_back(top.a, top.b);
            merge_occurrences(top.a, top.b, new_id);
            update_neighbour_pairs(top.a, top.b, new_id);
            if (progress && merges.size() % kProgressEvery == 0 && !progress(merges.size())) break;
        }
        return merges;
    }

    // Lays the words out and counts their pairs. Takes the counts, and frees each shard
    // of them as soon as its words are laid out.
    explicit Trainer(std::vector<CountedChunks> chunks) {
        lay_out_words(chunks);
        return_freed_memory();  // the counts, freed as the words were laid out
        count_pairs();
    }

private:
    static constexpr size_t kProgressEvery = 256;

    // ---- A merge --------------------------------------------------------------------

    // Merges (a, b) into new_id wherever it still occurs, left to right (its list is in
    // order), so that overlapping occurrences ("aaa") merge as the reference does: the
    // leftmost first. Notes the left and right neighbour of each occurrence merged.
    void merge_occurrences(uint32_t a, uint32_t b, uint32_t new_id) {
        PairStats merged = *pairs_.find(a, b);
        pairs_.erase(a, b);
        garbage_ += merged.length;
        CountsInOrder counts(*this);
        uint64_t end = uint64_t(merged.begin) + merged.length;
        for (uint64_t i = merged.begin; i < end; ++i) {
            prefetch_slot(i + kPrefetchAhead, end);
            uint32_t p = positions_[i];
            if (id_at(p) != a) continue;  // stale: merged away, or merged into another token
            uint32_t q = next_of(p);
            if (id_at(q) != b) continue;
            int64_t n = counts.at(p);
            uint32_t left = prev_of(p), right = next_of(q);
            if (id_at(left) != kGap) left_.add(id_at(left), n, left);
            if (id_at(right) != kGap) right_.add(id_at(right), n, p);
            join(p, q, right, new_id);
        }
    }

    // Each left neighbour x lost its pair (x, a) and gained (x, new_id); each right
    // neighbour y lost (b, y) and gained (new_id, y). The pairs that lost counts are
    // refreshed lazily, when they come to the top of the queue; the new pairs go in it.
    void update_neighbour_pairs(uint32_t a, uint32_t b, uint32_t new_id) {
        // A left neighbour new_id is an occurrence just merged: its pair (new_id, a) was
        // one of the new pairs on the right, and is lost again.
        int64_t regained = new_id < left_.count.size() ? left_.count[new_id] : 0;
        for (uint32_t x : left_.ids)
            if (x != new_id) lose(x, a, left_.count[x]);
        for (uint32_t y : right_.ids) lose(b, y, right_.count[y]);
        if (regained > 0) right_.count[a] -= regained;

        drop_garbage(left_.positions.size() + right_.positions.size());
        add_new_pairs(left_, [&](uint32_t x) { return Pair(x, new_id); });
        add_new_pairs(right_, [&](uint32_t y) { return Pair(new_id, y); });
        left_.clear();
        right_.clear();
    }

    // The neighbours on one side of the occurrences of the pair being merged: for each
    // id, the summed counts of the occurrences with that neighbour, how many they are,
    // and the neighbours' positions.
    struct Neighbours {
        std::vector<int64_t> count;         // by id; 0 for ids not seen
        std::vector<uint32_t> occurrences;  // by id; 0 for ids not seen
        std::vector<uint32_t> ids;          // the ids seen, in the order first seen
        std::vector<std::pair<uint32_t, uint32_t>> positions;  // (id, position of the new pair), in order
        std::vector<uint32_t> next;         // by id: where its next position goes (add_new_pairs)

        void add(uint32_t id, int64_t n, uint32_t position) {
            if (id >= count.size()) count.resize(id + 1, 0), occurrences.resize(id + 1, 0), next.resize(id + 1, 0);
            if (count[id] == 0) ids.push_back(id);
            count[id] += n;
            ++occurrences[id];
            positions.emplace_back(id, position);
        }
        void clear() {
            for (uint32_t id : ids) count[id] = 0, occurrences[id] = 0;
            ids.clear();
            positions.clear();
        }
    };
    Neighbours left_, right_;

    // ---- Pairs and where they occur -------------------------------------------------
    //
    // For each pair, its count (weighted by the words' counts) and its positions: a
    // range of positions_, in increasing order. Every occurrence a pair will ever have
    // exists when the newer of its two tokens is made (a merge only makes pairs with
    // the new token), so each pair's list is written once, whole, and in order; it goes
    // stale as merges change the tokens around it, and each position is checked when
    // used. Lists of pairs that are gone are garbage, dropped by drop_garbage.
    struct PairStats {
        int64_t count;
        uint32_t begin, length;  // 16 bytes: millions of pairs are alive at once
    };
    static constexpr uint64_t kMaxPositions = UINT32_MAX;
    PairHashTable<PairStats, KeysApart> pairs_;
    std::vector<uint32_t, HugePageAllocator<uint32_t>> positions_;
    std::vector<uint64_t, HugePageAllocator<uint64_t>> lists_;  // the pair of each list in positions_, in their order there
    uint64_t garbage_ = 0;  // positions in lists of pairs that are gone

    // The pairs of bytes: counted, then their positions filled in, in order.
    void count_pairs() {
        std::vector<int64_t> count(1 << 16, 0);
        std::vector<uint64_t> begin(1 << 16, 0);  // at first, the number of occurrences
        CountsInOrder counts(*this);
        uint32_t end = uint32_t(slots_.size()) - 1;
        for (uint32_t p = 1; p < end; ++p) {
            if (id_at(p) == kGap || id_at(p + 1) == kGap) continue;
            uint32_t key = id_at(p) << 8 | id_at(p + 1);
            ++begin[key];
            count[key] += counts.at(p);
        }
        uint64_t filled = 0;
        std::vector<Candidate> candidates;
        for (uint32_t key = 0; key < (1 << 16); ++key) {
            uint64_t occurrences = begin[key];
            begin[key] = filled;
            if (occurrences == 0) continue;
            pairs_.insert(key >> 8, key & 0xff, {count[key], uint32_t(filled), uint32_t(occurrences)});
            lists_.push_back(pair_key(key >> 8, key & 0xff));
            candidates.push_back({count[key], key >> 8, key & 0xff});
            filled += occurrences;
        }
        // Room for the lists of new pairs, which costs no memory until they are written:
        // drop_garbage keeps the positions from growing much past this.
        positions_.reserve(2 * filled);
        positions_.resize(filled);
        for (uint32_t p = 1; p < end; ++p)
            if (id_at(p) != kGap && id_at(p + 1) != kGap) positions_[begin[id_at(p) << 8 | id_at(p + 1)]++] = p;
        queue_.start(candidates);
    }

    void lose(uint32_t a, uint32_t b, int64_t n) {
        PairStats* stats = pairs_.find(a, b);
        if (stats == nullptr) return;  // the pair being merged, when a == b
        stats->count -= n;
        if (stats->count == 0) {
            garbage_ += stats->length;
            pairs_.erase(a, b);
        }
    }

    // The new pairs on one side, each with its positions as one list, in order, at the
    // end of positions_; those with a count go in the queue.
    template <class PairWith>
    void add_new_pairs(Neighbours& side, PairWith pair_with) {
        uint64_t base = positions_.size();
        uint32_t end = 0;
        for (uint32_t id : side.ids) {  // each id's list starts where the one before ends
            side.next[id] = end;
            end += side.occurrences[id];
        }
        positions_.resize(base + end);
        for (auto [id, position] : side.positions) positions_[base + side.next[id]++] = position;
        for (uint32_t id : side.ids) {
            uint32_t length = side.occurrences[id], begin = side.next[id] - length;
            Pair pair = pair_with(id);
            if (side.count[id] > 0) {
                pairs_.insert(pair.first, pair.second, {side.count[id], uint32_t(base + begin), length});
                lists_.push_back(pair_key(pair.first, pair.second));
                queue_.push({side.count[id], pair.first, pair.second});
            } else {
                garbage_ += length;  // (new_id, a) when every a was merged right after
            }
        }
    }

    // ---- Slots: the words, end to end -----------------------------------------------
    //
    // One slot per byte of each word, and a gap before and after each word. A slot
    // holds one of:
    //   - the id of the token that starts there;
    //   - kGap, between words;
    //   - kInside | n, in the second and in the last slot of a token of n >= 2 bytes,
    //     so that both neighbours of a token are one step away: the next token starts
    //     at p + 1, or at p + n if slot p + 1 holds a length; the previous one ends at
    //     p - 1, and starts at p - 1, or at p - n if slot p - 1 holds a length.
    // Other slots inside a token hold what they held before, and are never read, except
    // the slot where a merged token began: it is marked inside, so that an id is only
    // ever found where a token starts.
    static constexpr uint32_t kGap = kDead;
    static constexpr uint32_t kInside = 0x80000000;
    // Ids (256 + merges, and there are fewer merges than slots) and lengths stay below kInside.
    static constexpr uint64_t kMaxSlots = kInside - 257;
    std::vector<uint32_t, HugePageAllocator<uint32_t>> slots_;

    static bool is_length(uint32_t slot) { return (slot & kInside) != 0 && slot != kGap; }
    uint32_t next_of(uint32_t p) const {
        uint32_t after = slots_[p + 1];
        return is_length(after) ? p + (after ^ kInside) : p + 1;
    }
    uint32_t prev_of(uint32_t p) const {
        uint32_t before = slots_[p - 1];
        return is_length(before) ? p - (before ^ kInside) : p - 1;
    }
    uint32_t id_at(uint32_t p) const { return slots_[p]; }  // kGap: no token

    // The token at p grows over the one at q, its right neighbour, up to `right`, where
    // the next token starts.
    void join(uint32_t p, uint32_t q, uint32_t right, uint32_t new_id) {
        uint32_t length = right - p;
        slots_[p] = new_id;
        slots_[q] = kInside | length;
        slots_[p + 1] = kInside | length;
        slots_[right - 1] = kInside | length;
    }

    // Words are grouped by count, the most frequent first: group k holds the slots
    // before group_end_[k] (and after the previous group's), of words that occur
    // group_count_[k] times. A few thousand counts cover millions of words.
    std::vector<uint32_t> group_end_;
    std::vector<int64_t> group_count_;

    // The counts of the words at increasing positions, as a merge visits them: the
    // group only moves forward.
    class CountsInOrder {
    public:
        explicit CountsInOrder(const Trainer& t) : end_(t.group_end_), count_(t.group_count_) {}
        int64_t at(uint32_t p) {
            if (end_[k_] <= p) k_ = std::upper_bound(end_.begin() + k_, end_.end(), p) - end_.begin();
            return count_[k_];
        }

    private:
        const std::vector<uint32_t>& end_;
        const std::vector<int64_t>& count_;
        size_t k_ = 0;
    };

    // The slots that the words of each count take (a byte each, and a gap): a table
    // for small counts, which nearly all words have, a map for the others.
    static constexpr int64_t kSmall = 1 << 16;
    using LargeCounts = std::map<int64_t, uint64_t, std::greater<int64_t>>;

    void lay_out_words(std::vector<CountedChunks>& chunks) {
        std::vector<uint64_t> small(kSmall, 0);
        LargeCounts large;
        uint64_t total = 1;  // the gap before the first word
        for (const CountedChunks& shard : chunks)
            shard.counts.for_each([&](std::string_view chunk, int64_t n) {
                if (chunk.size() < 2) return;  // a single byte has no pair to merge
                (n < kSmall ? small[n] : large[n]) += chunk.size() + 1;
                total += chunk.size() + 1;
            });
        if (total >= kMaxSlots)
            throw std::length_error("the distinct chunks of this text add up to 2 GB or more: train on less");
        open_groups(small, large);
        slots_.resize(total);
        slots_[0] = kGap;
        for (CountedChunks& shard : chunks) {
            shard.counts.for_each([&](std::string_view chunk, int64_t n) {
                if (chunk.size() < 2) return;
                uint64_t& at = n < kSmall ? small[n] : large[n];
                for (unsigned char byte : chunk) slots_[at++] = byte;
                slots_[at++] = kGap;
            });
            shard = CountedChunks();  // laid out: free its memory now
        }
    }

    // Each group's first slot, the most frequent words first, from the slots each
    // count's words take; `small` and `large` then hold where the next word of each
    // count goes.
    void open_groups(std::vector<uint64_t>& small, LargeCounts& large) {
        uint64_t start = 1;
        auto open_group = [&](int64_t n, uint64_t& slots) {
            if (slots == 0) return;
            uint64_t size = slots;
            slots = start;
            start += size;
            group_end_.push_back(uint32_t(start));
            group_count_.push_back(n);
        };
        for (auto& [n, slots] : large) open_group(n, slots);
        for (int64_t n = kSmall - 1; n > 0; --n) open_group(n, small[n]);
        group_end_.push_back(UINT32_MAX);  // past the last word: CountsInOrder stops here
        group_count_.push_back(0);
    }

    // ---- The queue ------------------------------------------------------------------

    // A pair that may be merged next, with its count when it was queued. The most
    // frequent pair comes first, and between equal counts the smaller pair, which is the
    // reference's tie-break.
    struct Candidate {
        int64_t count;
        uint32_t a, b;
        bool operator<(const Candidate& o) const {  // "comes after"
            if (count != o.count) return count < o.count;
            return std::tie(a, b) > std::tie(o.a, o.b);
        }
    };

    // The pairs waiting to be merged, the first on top. Counts only ever fall, so the
    // top does too: pairs queued with a count below a floor wait aside, unsorted, and go
    // into the heap only once every pair there has been taken, so that the heap stays
    // small and quick (see docs/design-notes.md).
    class CandidateQueue {
    public:
        void push(const Candidate& c) {
            if (c.count >= floor_) heap_.push(c);
            else waiting_.push_back(c);
        }

        // Whether a pair is queued. When the heap is empty, the floor falls to half the
        // largest count waiting, and the pairs at or above it move into the heap.
        bool ready() {
            while (heap_.empty() && !waiting_.empty()) {
                int64_t largest = std::max_element(waiting_.begin(), waiting_.end())->count;
                floor_ = largest / 2;
                auto below = std::partition(waiting_.begin(), waiting_.end(),
                                            [&](const Candidate& c) { return c.count < floor_; });
                for (auto it = below; it != waiting_.end(); ++it) heap_.push(*it);
                waiting_.erase(below, waiting_.end());
            }
            return !heap_.empty();
        }

        Candidate pop() {
            Candidate top = heap_.top();
            heap_.pop();
            return top;
        }

        // Starts the queue with `candidates`, and a floor a fraction of the largest count.
        void start(const std::vector<Candidate>& candidates) {
            for (const Candidate& c : candidates) floor_ = std::max(floor_, c.count / kFloorFraction);
            for (const Candidate& c : candidates) push(c);
        }

    private:
        static constexpr int64_t kFloorFraction = 1024;
        std::priority_queue<Candidate> heap_;
        std::vector<Candidate, HugePageAllocator<Candidate>> waiting_;
        int64_t floor_ = 0;
    };
    CandidateQueue queue_;

    // ---- Memory ---------------------------------------------------------------------

    // Starts loading the slot of a position some way ahead in a list being merged (see
    // docs/design-notes.md).
    static constexpr uint64_t kPrefetchAhead = 32;
    void prefetch_slot(uint64_t i, uint64_t end) const {
        bpe::prefetch(slots_.data() + positions_[std::min(i, end - 1)]);
    }

    // When half the positions are garbage, the live lists move down over it, in order:
    // a copy from one end of the array to the other, which costs little next to
    // merging. (Leaving out their stale positions too would mean looking at the
    // slot of each, which costs as much as the merges that would skip them.)
    // Positions are numbered with 32 bits: when `needed` more would not fit, the garbage
    // goes at once, and if they still do not fit, training stops.
    void drop_garbage(size_t needed) {
        bool full = positions_.size() + needed > kMaxPositions;
        if (garbage_ * 2 <= positions_.size() && !full) return;
        uint64_t kept = 0;
        size_t lists_kept = 0;
        for (uint64_t key : lists_) {
            PairStats* stats = pairs_.find(uint32_t(key >> 32), uint32_t(key));
            if (stats == nullptr) continue;  // gone
            std::copy(positions_.begin() + stats->begin, positions_.begin() + stats->begin + stats->length,
                      positions_.begin() + kept);
            stats->begin = uint32_t(kept);
            kept += stats->length;
            lists_[lists_kept++] = key;
        }
        positions_.resize(kept);
        lists_.resize(lists_kept);
        garbage_ = 0;
        if (positions_.size() + needed > kMaxPositions)
            throw std::length_error("training on this text needs more than 4 G positions of pairs: train on less");
    }
};

// Learns up to num_merges merges from the chunks counted so far, using the counts up.
// progress(merges done) is called now and then; returning false stops training there.
inline std::vector<Pair> train(ChunkCounter& counter, int64_t num_merges,
                               const std::function<bool(size_t)>& progress = nullptr) {
    Trainer trainer(counter.take());
    return trainer.train(num_merges, progress);
}

}  // namespace bpe
