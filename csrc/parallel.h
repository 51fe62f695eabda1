// Sharing a text's work between threads.
//
// A text arrives as segments (ordinary text and special tokens). They are dealt out
// to threads in runs of about equal size, so that each thread's output can simply be
// joined to the next; a segment too long for one share is first cut where a chunk
// boundary is certain (is_safe_cut), so that its pieces split exactly as it would.
// A batch of documents is dealt out the same way, whole documents by their bytes.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <string_view>
#include <thread>
#include <vector>

#include "special.h"
#include "split.h"

namespace bpe {

// The segments with each long stretch of ordinary text cut about every `share`
// bytes, at the first certain boundary from there (none: it stays whole). A rule
// with no certain boundaries (a regex: SplitRule::cuts_at_safe_cuts) leaves them whole.
inline std::vector<Segment> cut_long_segments(std::string_view text, const std::vector<Segment>& segments,
                                              size_t share, const SplitRule& rule) {
    if (!rule.cuts_at_safe_cuts()) return segments;
    share = std::max<size_t>(share, 1);
    std::vector<Segment> pieces;
    for (const Segment& s : segments) {
        size_t begin = s.begin;
        if (s.special == Segment::kText) {
            for (size_t p = begin + share; p < s.end; p = std::max(p, begin + share)) {
                while (p < s.end && !is_safe_cut(text, p)) ++p;
                if (p >= s.end) break;
                pieces.push_back({begin, p, Segment::kText});
                begin = p;
            }
        }
        pieces.push_back({begin, s.end, s.special});
    }
    return pieces;
}

// The segments cut into `parts` runs of consecutive segments, of about equal size
// (fewer runs when the text has too few places to cut).
inline std::vector<std::vector<Segment>> share_out(std::string_view text, const std::vector<Segment>& segments,
                                                   size_t parts, const SplitRule& rule) {
    parts = std::max<size_t>(parts, 1);
    size_t share = std::max<size_t>(text.size() / parts, 1);
    std::vector<std::vector<Segment>> runs(1);
    size_t filled = 0;
    for (const Segment& piece : cut_long_segments(text, segments, share, rule)) {
        if (filled >= share * runs.size() && runs.size() < parts) runs.emplace_back();
        runs.back().push_back(piece);
        filled += piece.end - piece.begin;
    }
    return runs;
}

// A batch of documents cut into at most `parts` runs of consecutive documents with
// about equal bytes each: bounds[k] .. bounds[k + 1] is run k (bounds has one more
// entry than there are runs). By bytes, not by count: a batch's documents come in all
// lengths, and a run of long ones would keep one thread busy after the others are
// done. Consecutive, so that each thread's ids simply follow the one before's.
inline std::vector<size_t> share_batch(const std::string_view* texts, size_t n, size_t parts) {
    parts = std::clamp<size_t>(parts, 1, std::max<size_t>(n, 1));
    size_t total = 0;
    for (size_t i = 0; i < n; ++i) total += texts[i].size();
    std::vector<size_t> bounds{0};
    size_t filled = 0;
    for (size_t i = 0; i < n; ++i) {
        // Run k ends once the runs so far hold k / parts of the bytes (k = bounds.size()).
        if (bounds.size() < parts && filled > 0 && filled >= total / parts * bounds.size()) bounds.push_back(i);
        filled += texts[i].size();
    }
    bounds.push_back(n);
    return bounds;
}

// The most threads one call may start. A thread's stack reserves megabytes of
// address space, so a careless threads=100000 would fail to start most of them;
// 256 is far beyond any machine this runs on, and asking for more is an error.
inline constexpr unsigned kMaxThreads = 256;

// The cores this machine has, at least 1 and at most kMaxThreads. Asked once: the
// system reads it from a file each time, which took longer than a short text's encode.
inline unsigned cores() {
    static const unsigned n = std::clamp(std::thread::hardware_concurrency(), 1u, kMaxThreads);
    return n;
}

// The bytes of text each thread must have before a call starts another: starting and
// joining a thread costs many times what a sentence takes to encode, and a second
// thread pays for itself only once each has a share of tens of kilobytes (the measure
// is in docs/engine.md, "Threads"). Counting for training goes about as fast a byte,
// and takes the same rule.
inline constexpr size_t kBytesPerThread = size_t(64) << 10;

// The one rule for how many threads a call runs on: `asked` when a caller asked for a
// number, and for 0 (the default everywhere: "as many as pay") one per kBytesPerThread
// of the call's text, all its texts together for a batch, at least one and at most one
// per core. A short text then runs on the calling thread and starts none.
inline unsigned threads_for(size_t bytes, unsigned asked) {
    if (asked > 0) return asked;
    if (bytes < 2 * kBytesPerThread) return 1;
    return unsigned(std::min<size_t>(bytes / kBytesPerThread, cores()));
}

// How many threads run_threads has started in this process, for the tests: a short
// call must start none.
inline std::atomic<uint64_t>& threads_started() {
    static std::atomic<uint64_t> started{0};
    return started;
}

// Runs work(k) for k = 0 .. n-1, each on a thread of its own (k = 0 on this one).
// An exception in any of them is thrown here once all have finished, rather than
// ending the process, as one escaping a std::thread would. If the system cannot
// start a thread (out of memory or address space), the failure is thrown as
// std::system_error once the threads already started have been joined: destroying
// a thread that is still running would end the process (std::terminate).
//
// The threads wait at a gate until every one has started, and leave without working
// if one could not start. Otherwise they would already be allocating in the little
// memory the failed start left, and there a failed allocation can end the process
// inside the C library ("cannot allocate memory for thread-local data: ABORT", when
// a thread first throws), before any exception reaches us.
template <class Work>
void run_threads(size_t n, Work&& work) {
    enum class Gate { closed, open, cancelled };
    Gate gate = Gate::closed;
    std::mutex gate_mutex;
    std::condition_variable gate_changed;
    std::vector<std::exception_ptr> errors(n);
    auto guarded = [&](size_t k) {
        {
            std::unique_lock<std::mutex> lock(gate_mutex);
            gate_changed.wait(lock, [&] { return gate != Gate::closed; });
            if (gate == Gate::cancelled) return;
        }
        try {
            work(k);
        } catch (...) {
            errors[k] = std::current_exception();
        }
    };
    std::vector<std::thread> threads;
    std::exception_ptr start_failed;
    try {
        threads.reserve(n > 0 ? n - 1 : 0);
        for (size_t k = 1; k < n; ++k) {
            threads.emplace_back(guarded, k);
            threads_started().fetch_add(1, std::memory_order_relaxed);
        }
    } catch (...) {
        start_failed = std::current_exception();
    }
    {
        std::lock_guard<std::mutex> lock(gate_mutex);
        gate = start_failed ? Gate::cancelled : Gate::open;
    }
    gate_changed.notify_all();
    if (!start_failed) guarded(0);
    for (auto& t : threads) t.join();
    if (start_failed) std::rethrow_exception(start_failed);
    for (auto& error : errors)
        if (error) std::rethrow_exception(error);
}

}  // namespace bpe
