// Sharing a text's work between threads.
//
// A text arrives as segments (ordinary text and special tokens). They are dealt out
// to threads in runs of about equal size, so that each thread's output can simply be
// joined to the next; a segment too long for one share is first cut where a chunk
// boundary is certain (is_safe_cut), so that its pieces split exactly as it would.
#pragma once

#include <algorithm>
#include <exception>
#include <string_view>
#include <thread>
#include <vector>

#include "special.h"
#include "split.h"

namespace bpe {

// The segments cut into `parts` runs of consecutive segments, of about equal size
// (fewer runs when the text has too few places to cut).
inline std::vector<std::vector<Segment>> share_out(std::string_view text, const std::vector<Segment>& segments,
                                                   size_t parts) {
    parts = std::max<size_t>(parts, 1);
    size_t share = std::max<size_t>(text.size() / parts, 1);
    std::vector<Segment> pieces;
    for (const Segment& s : segments) {
        size_t begin = s.begin;
        if (s.special == Segment::kText) {
            // Cut a long segment about every `share` bytes, at the first certain
            // boundary from there.
            for (size_t p = begin + share; p < s.end; p = std::max(p, begin + share)) {
                while (p < s.end && !is_safe_cut(text, p)) ++p;
                if (p >= s.end) break;
                pieces.push_back({begin, p, Segment::kText});
                begin = p;
            }
        }
        pieces.push_back({begin, s.end, s.special});
    }
    std::vector<std::vector<Segment>> runs(1);
    size_t filled = 0;
    for (const Segment& piece : pieces) {
        if (filled >= share * runs.size() && runs.size() < parts) runs.emplace_back();
        runs.back().push_back(piece);
        filled += piece.end - piece.begin;
    }
    return runs;
}

// Runs work(k) for k = 0 .. n-1, each on a thread of its own (k = 0 on this one).
// An exception in any of them is thrown here once all have finished, rather than
// ending the process, as one escaping a std::thread would.
template <class Work>
void run_threads(size_t n, Work&& work) {
    std::vector<std::exception_ptr> errors(n);
    auto guarded = [&](size_t k) {
        try {
            work(k);
        } catch (...) {
            errors[k] = std::current_exception();
        }
    };
    std::vector<std::thread> threads;
    for (size_t k = 1; k < n; ++k) threads.emplace_back(guarded, k);
    guarded(0);
    for (auto& t : threads) t.join();
    for (auto& error : errors)
        if (error) std::rethrow_exception(error);
}

}  // namespace bpe
