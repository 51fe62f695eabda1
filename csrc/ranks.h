// Recovering merges from tiktoken's mergeable ranks (bpe/formats.py, merges_from_ranks).
//
// A .tiktoken file holds each token's bytes and its rank, not the pair that made it.
// Byte-pair encoding a token's own bytes as tiktoken does, with only the ranks below the
// token's, stops at exactly two parts, and those are the pair that made it.
// lower_rank_split does that encoding for one token.
//
// tiktoken's own encoder rescans every adjacent pair after each merge: O(n^2) for n
// bytes, fine for the short chunks it meets, but a token is as long as a file makes
// it (docs/design-notes.md). Here a heap of candidate pairs and a linked list of parts
// make it O(n log n), in C++.
#pragma once

#include <cstddef>
#include <cstdint>
#include <queue>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace bpe {

// A token's bytes to its rank; the views point into the caller's bytes.
using RankMap = std::unordered_map<std::string_view, int64_t>;

// data byte-pair encoded with the ranks below limit: the adjacent pair whose bytes have
// the lowest rank merges first, the leftmost of equals (tiktoken's order). Returns the
// length of the first part if that ends as exactly two parts, else 0.
inline size_t lower_rank_split(std::string_view data, const RankMap& ranks, int64_t limit) {
    const size_t n = data.size();
    if (n < 2) return 0;
    constexpr size_t kNone = SIZE_MAX;
    // after[s]: where the part that starts at s ends; before[s]: where the part before
    // it starts; alive[s]: whether a part starts at s.
    std::vector<size_t> after(n), before(n);
    std::vector<char> alive(n, 1);
    for (size_t s = 0; s < n; ++s) {
        after[s] = s + 1;
        before[s] = s == 0 ? kNone : s - 1;
    }
    struct Pair {
        int64_t rank;
        size_t start, end;
        bool operator>(const Pair& o) const {
            if (rank != o.rank) return rank > o.rank;
            if (start != o.start) return start > o.start;
            return end > o.end;
        }
    };
    std::priority_queue<Pair, std::vector<Pair>, std::greater<Pair>> heap;
    auto push = [&](size_t start, size_t end) {
        auto it = ranks.find(data.substr(start, end - start));
        if (it != ranks.end() && it->second < limit) heap.push({it->second, start, end});
    };
    for (size_t s = 0; s + 1 < n; ++s) push(s, s + 2);
    size_t parts = n;
    while (!heap.empty() && parts > 2) {
        const Pair top = heap.top();
        heap.pop();
        const size_t s = top.start, middle = after[s];
        if (!alive[s] || middle >= n || after[middle] != top.end) continue;  // stale: a part has changed
        alive[middle] = 0;
        after[s] = top.end;
        --parts;
        if (before[s] != kNone) push(before[s], top.end);
        if (top.end < n) {
            before[top.end] = s;
            push(s, after[top.end]);
        }
    }
    return parts == 2 ? after[0] : 0;
}

}  // namespace bpe
