// Training: learn merges from a text, each time turning the most frequent pair of
// neighbouring tokens into a new token.
//
// The reference (bpe_reference.py) counts every pair again for every merge. Here the
// counts are kept up to date instead:
//   1. Count each distinct chunk once (threads share the text, each counts a piece).
//   2. Lay the distinct chunks ("words") end to end as one array of symbols, linked
//      to their neighbours, and count their pairs, each weighted by the word's count.
//      For each pair, keep the positions where it occurs.
//   3. A heap holds (count, pair). Take the top; if its count is stale, push it back
//      with the live one; otherwise merge it at each of its positions, adjusting only
//      the counts of the pairs on either side of each occurrence.
// A merge then costs time for its occurrences, not for the whole text, so even a
// 10 MB chunk with no space in it trains in O(n log n).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <queue>
#include <stdexcept>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "chunk_table.h"
#include "pair.h"
#include "parallel.h"
#include "special.h"
#include "split.h"

namespace bpe {

// How often each distinct chunk occurs, counted text by text as texts stream in, so
// that memory grows with the distinct chunks and not with the corpus. No chunk
// crosses two texts, nor a special token, which are never counted.
class ChunkCounter {
public:
    ChunkCounter(Pattern pattern, SpecialTokens specials) : pattern_(pattern), specials_(std::move(specials)) {}

    // Counts the chunks of each text on `threads` threads. The texts are cut at their
    // special tokens and, where long, at certain chunk boundaries (is_safe_cut), into
    // pieces that the threads take in turn; each thread counts into a table of its own,
    // and the tables are then added to the counts kept so far.
    void add(const std::vector<std::string_view>& texts, unsigned threads) {
        struct Piece { size_t text; Segment segment; };
        size_t total = 0;
        for (std::string_view text : texts) total += text.size();
        // Several pieces a thread, so that one slow piece does not hold up the rest.
        size_t share = std::max<size_t>(total / (size_t(threads) * 8), 1 << 16);
        std::vector<Piece> pieces;
        for (size_t t = 0; t < texts.size(); ++t)
            for (const Segment& s : cut_long_segments(texts[t], specials_.segments(texts[t], specials_.all()), share))
                if (s.special == Segment::kText) pieces.push_back({t, s});
        size_t workers = std::clamp<size_t>(pieces.size(), 1, threads);
        std::vector<ChunkTable<int64_t>> tables(workers);
        std::atomic<size_t> next{0};
        run_threads(workers, [&](size_t k) {
            // A table of its own on each thread's stack, moved into `tables` at the end: the
            // tables in that vector sit side by side, and their bookkeeping would share cache
            // lines between threads.
            ChunkTable<int64_t> table;
            for (size_t i = next++; i < pieces.size(); i = next++) {
                std::string_view text = texts[pieces[i].text];
                const Segment& s = pieces[i].segment;
                const char* text_end = text.data() + text.size();
                for_each_chunk(text.substr(s.begin, s.end - s.begin), pattern_,
                               [&](std::string_view chunk) { ++table[ChunkKey(chunk, text_end)]; });
            }
            tables[k] = std::move(table);
        });
        for (const ChunkTable<int64_t>& table : tables)
            counts_.add(table, [&](std::string_view bytes) { return arena_.keep(bytes); });
    }

    Pattern pattern() const { return pattern_; }
    const ChunkTable<int64_t>& counts() const { return counts_; }

    // Hands over the counts, leaving this counter empty: the trainer makes its own
    // arrays of them, and the table would only hold memory that training needs.
    std::pair<ChunkTable<int64_t>, ByteArena> take() {
        std::pair<ChunkTable<int64_t>, ByteArena> out{std::move(counts_), std::move(arena_)};
        counts_ = ChunkTable<int64_t>();
        arena_ = ByteArena();
        return out;
    }

private:
    Pattern pattern_;
    SpecialTokens specials_;
    ChunkTable<int64_t> counts_;
    ByteArena arena_;
};

class Trainer {
public:
    Trainer(const ChunkTable<int64_t>& chunk_counts) {
        // Words laid end to end; a symbol's neighbours are linked by index, with -1
        // at either end of a word. A merge keeps the merged symbol at its left
        // position and marks the right one dead, so positions never move.
        chunk_counts.for_each([&](std::string_view chunk, int64_t n) {
            if (chunk.size() < 2) return;  // a single byte has no pair to merge
            if (symbol_.size() + chunk.size() >= size_t(INT32_MAX))
                throw std::length_error("the distinct chunks of this text add up to 2 GB or more: train on less");
            int32_t word = int32_t(word_count_.size());
            word_count_.push_back(n);
            int32_t start = int32_t(symbol_.size());
            for (size_t i = 0; i < chunk.size(); ++i) {
                symbol_.push_back(static_cast<unsigned char>(chunk[i]));
                word_of_.push_back(word);
                prev_.push_back(i == 0 ? -1 : start + int32_t(i) - 1);
                next_.push_back(i + 1 == chunk.size() ? -1 : start + int32_t(i) + 1);
            }
        });
        for (int32_t p = 0; p < int32_t(symbol_.size()); ++p)
            if (next_[p] >= 0) add(symbol_[p], symbol_[next_[p]], word_count_[word_of_[p]], p);
        for (auto& [key, stats] : pairs_) heap_.push({stats.count, uint32_t(key >> 32), uint32_t(key)});
    }

    // progress(merges done) is called every kProgressEvery merges (if given);
    // returning false stops training there.
    std::vector<Pair> train(int64_t num_merges, const std::function<bool(size_t)>& progress = nullptr) {
        std::vector<Pair> merges;
        while (int64_t(merges.size()) < num_merges && !heap_.empty()) {
            Candidate top = heap_.top();
            heap_.pop();
            auto it = pairs_.find(pair_key(top.a, top.b));
            if (it == pairs_.end() || it->second.count <= 0) continue;  // the pair is gone
            if (it->second.count != top.count) {  // stale: it lost occurrences since
                heap_.push({it->second.count, top.a, top.b});
                continue;
            }
            uint32_t new_id = 256 + uint32_t(merges.size());
            merges.emplace_back(top.a, top.b);
            apply_merge(top.a, top.b, new_id);
            if (progress && merges.size() % kProgressEvery == 0 && !progress(merges.size())) break;
        }
        return merges;
    }

private:
    struct PairStats {
        int64_t count = 0;
        std::vector<int32_t> positions;  // where the pair may occur; some are stale
    };
    // The heap's order: the most frequent pair on top, and between equal counts the
    // smaller pair, which is the reference's tie-break.
    struct Candidate {
        int64_t count;
        uint32_t a, b;
        bool operator<(const Candidate& o) const {
            if (count != o.count) return count < o.count;
            return std::tie(a, b) > std::tie(o.a, o.b);
        }
    };
    static constexpr size_t kProgressEvery = 256;

    void add(uint32_t a, uint32_t b, int64_t n, int32_t position) {
        PairStats& stats = pairs_[pair_key(a, b)];
        stats.count += n;
        stats.positions.push_back(position);
    }
    void remove(uint32_t a, uint32_t b, int64_t n) { pairs_[pair_key(a, b)].count -= n; }

    void apply_merge(uint32_t a, uint32_t b, uint32_t new_id) {
        auto node = pairs_.extract(pair_key(a, b));
        std::vector<int32_t>& positions = node.mapped().positions;
        // Left to right within each word, so that overlapping occurrences ("aaa")
        // merge as the reference does: the leftmost first.
        std::sort(positions.begin(), positions.end());
        std::vector<uint32_t> changed;  // right neighbours of the new pairs
        std::vector<uint32_t> changed_left;
        for (int32_t p : positions) {
            if (symbol_[p] != a) continue;  // stale: merged away, or merged into another token
            int32_t q = next_[p];
            if (q < 0 || symbol_[q] != b) continue;
            int64_t n = word_count_[word_of_[p]];
            int32_t left = prev_[p], right = next_[q];
            if (left >= 0) {
                remove(symbol_[left], a, n);
                add(symbol_[left], new_id, n, left);
                changed_left.push_back(symbol_[left]);
            }
            if (right >= 0) {
                remove(b, symbol_[right], n);
                add(new_id, symbol_[right], n, p);
                changed.push_back(symbol_[right]);
            }
            symbol_[p] = new_id;
            symbol_[q] = kDead;
            next_[p] = right;
            if (right >= 0) prev_[right] = p;
        }
        // Only pairs with the new token gained counts; all others only lost some, and
        // their heap entries are refreshed lazily when they come to the top.
        auto push_pairs = [&](std::vector<uint32_t>& others, bool new_on_left) {
            std::sort(others.begin(), others.end());
            others.erase(std::unique(others.begin(), others.end()), others.end());
            for (uint32_t other : others) {
                uint32_t x = new_on_left ? new_id : other, y = new_on_left ? other : new_id;
                int64_t count = pairs_[pair_key(x, y)].count;
                if (count > 0) heap_.push({count, x, y});
            }
        };
        push_pairs(changed, true);
        push_pairs(changed_left, false);
    }

    std::vector<uint32_t> symbol_;
    std::vector<int32_t> prev_, next_, word_of_;
    std::vector<int64_t> word_count_;
    std::unordered_map<uint64_t, PairStats> pairs_;
    std::priority_queue<Candidate> heap_;
};

// Learns up to num_merges merges from the chunks counted so far, using the counts up.
// progress(merges done) is called now and then; returning false stops training there.
inline std::vector<Pair> train(ChunkCounter& counter, int64_t num_merges,
                               const std::function<bool(size_t)>& progress = nullptr) {
    auto [counts, arena] = counter.take();
    Trainer trainer(counts);
    counts = ChunkTable<int64_t>();  // the trainer has its own copy: free the table's memory now
    arena = ByteArena();
    return trainer.train(num_merges, progress);
}

inline std::vector<Pair> train(std::string_view text, int64_t num_merges, Pattern pattern,
                               const SpecialTokens& specials, unsigned threads) {
    ChunkCounter counter(pattern, specials);
    counter.add({text}, threads);
    return train(counter, num_merges);
}

}  // namespace bpe
