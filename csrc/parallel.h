// Sharing a text's work between threads.
//
// A text arrives as segments (ordinary text and special tokens). They are dealt out
// to threads in runs of about equal size, so that each thread's output can simply be
// joined to the next; a segment too long for one share is first cut where a chunk
// boundary is certain (is_safe_cut), so that its pieces split exactly as it would.
// A batch of documents is dealt out the same way, whole documents by their bytes.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <mutex>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#if !defined(_WIN32)
#include <pthread.h>  // pthread_sigmask
#include <signal.h>
#endif

#include "interrupt.h"
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

// How long the pieces are that a text is cut into for PieceClaims (in its bytes, or
// characters), at most `most`: on one thread, `most` itself; on several, short enough
// that each thread gets kPiecesPerThread of them or more, as the threads wait for
// whichever piece ends last.
inline constexpr size_t kPiecesPerThread = 8;
inline size_t piece_size(size_t size, unsigned threads, size_t most) {
    if (threads <= 1) return most;
    return std::clamp<size_t>(size / (size_t(threads) * kPiecesPerThread), 1, most);
}

// Pieces of a text, in text order, shared between threads from both ends. The pieces
// are cut into spans of about equal bytes, one for each pair of threads and one for a
// last thread alone (with half a pair's bytes); in span j, thread 2j takes pieces from
// the front and thread 2j + 1 from the back, one at a time, until they meet. Where one
// part of a span encodes slower than another (Python source after stories), the thread
// done first takes over the slow part's end rather than waiting for it; and each
// thread's pieces come in an order its output can follow: the front thread's one after
// another in text order, the back thread's in reverse.
class PieceClaims {
public:
    static constexpr size_t kNone = SIZE_MAX;

    // `pieces` pieces, bytes_of(p) bytes each, for at most `threads` threads (and one a
    // piece) to take. One thread takes them all in order, with no spans and no lock: a
    // short text's call pays nothing for the sharing.
    template <class BytesOf>
    PieceClaims(size_t pieces, unsigned threads, BytesOf&& bytes_of)
        : threads_(unsigned(std::clamp<size_t>(threads, 1, std::max<size_t>(pieces, 1)))), pieces_(pieces) {
        if (threads_ == 1) return;
        size_t total = 0;
        for (size_t p = 0; p < pieces; ++p) total += bytes_of(p);
        // Span j ends once the spans so far hold their threads' share of the bytes.
        const size_t spans = (threads_ + 1) / 2;
        auto due = [&](size_t span) { return double(total) * double(std::min<size_t>(2 * (span + 1), threads_)) / threads_; };
        size_t filled = 0;
        spans_.push_back({0, 0, 0, 0});
        for (size_t p = 0; p < pieces; ++p) {
            if (spans_.size() < spans && p > spans_.back().first && double(filled) >= due(spans_.size() - 1)) {
                spans_.back().end = spans_.back().back = p;
                spans_.push_back({p, p, p, p});
            }
            filled += bytes_of(p);
        }
        spans_.back().end = spans_.back().back = pieces;
    }

    // How many threads take pieces (run_threads' n).
    unsigned threads() const { return threads_; }

    // The pieces [first, end) of the span `thread` takes its pieces from: the most it can take.
    std::pair<size_t, size_t> span(unsigned thread) const {
        if (threads_ == 1) return {0, pieces_};
        const size_t j = thread / 2;
        if (j >= spans_.size()) return {0, 0};
        return {spans_[j].first, spans_[j].end};
    }

    // Whether `thread` takes its span's pieces from the back, last first.
    static bool from_back(unsigned thread) { return thread % 2 == 1; }

    // The next piece for `thread` to encode, or kNone once its span's are all taken.
    size_t next(unsigned thread) {
        if (threads_ == 1) return taken_ < pieces_ ? taken_++ : kNone;
        const size_t j = thread / 2;
        if (j >= spans_.size()) return kNone;
        std::lock_guard<std::mutex> lock(mutex_);  // a claim every few hundred kilobytes: never contended for long
        Span& span = spans_[j];
        if (span.front == span.back) return kNone;
        return from_back(thread) ? --span.back : span.front++;
    }

private:
    struct Span {
        size_t first, end;  // its pieces [first, end), as cut
        size_t front, back;  // the pieces [front, back) not yet taken
    };
    unsigned threads_;
    size_t pieces_;
    size_t taken_ = 0;         // one thread: the pieces taken
    std::vector<Span> spans_;  // several: each pair's span
    std::mutex mutex_;
};

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

// The bytes of text each thread must have before a call runs on another: waking a kept
// thread and waiting for its last piece cost tens of microseconds, many times what a
// sentence takes to encode; `python bpe_bench.py thread-sizes` finds two threads level
// with one below 128 KB and faster from there on (docs/engine.md, "Threads"). Counting
// for training goes about as fast a byte, and takes the same rule.
inline constexpr size_t kBytesPerThread = size_t(64) << 10;

// The one rule for how many threads a call runs on: `asked` when a caller asked for a
// number, and for 0 (the default everywhere: "as many as pay") one per kBytesPerThread
// of the call's text, all its texts together for a batch, at least one and at most one
// per core. A short text then runs on the calling thread alone.
inline unsigned threads_for(size_t bytes, unsigned asked) {
    if (asked > 0) return asked;
    if (bytes < 2 * kBytesPerThread) return 1;
    return unsigned(std::min<size_t>(bytes / kBytesPerThread, cores()));
}

// How many threads the calls of this process have been lent, for the tests: a call on
// n threads is lent n - 1 besides its own, and a short call must be lent none.
inline std::atomic<uint64_t>& threads_lent() {
    static std::atomic<uint64_t> lent{0};
    return lent;
}

// Threads kept between calls, each waiting for a task: a call on n threads hands out
// tasks 1 .. n-1 and works on task 0 itself. A thread started for a call and joined
// after it cost as long as 128 KB of text takes to encode (its start, its stack's first
// pages, a sleeping core woken); a kept thread is woken in a sixth of that
// (docs/design-notes.md, "csrc/parallel.h").
//
// A task waits for no other, so any thread may run any of them: the caller, its own
// task done, runs those that no kept thread has taken yet, and a call never waits for
// threads busy with another call's tasks. The pool only grows, to the most threads a
// call has asked for (at most kMaxThreads - 1), and its threads sleep between calls.
// They block every signal, so that a signal reaches a thread of the program's own. It
// is never destroyed (a call may still be running as the process exits), and a child
// after fork() starts with a new, empty one, as no thread of the parent's is there.
class ThreadPool {
public:
    static constexpr const char* kThreadName = "bpe worker";

    // Runs work(k) for k = 0 .. n-1, and once all have ended rethrows the exception the
    // first task to throw one threw (an Interrupt's poll rather than the Stopped of the
    // tasks it stopped); the tasks not yet begun by then are dropped. If
    // the system cannot start the threads the call needs (out of memory or address
    // space), std::system_error is thrown before any task runs: a task would allocate in
    // the little memory a failed start leaves, where a failed allocation can end the
    // process inside the C library ("cannot allocate memory for thread-local data").
    template <class Work>
    static void run(size_t n, Work& work) {
        if (n <= 1) {
            if (n == 1) work(0);
            return;
        }
        Job job;
        job.work = [](void* w, size_t k) { (*static_cast<Work*>(w))(k); };
        job.context = &work;
        job.n = n;
        instance().run(job);
    }

    // How many threads the process keeps (none before its first call on threads).
    static size_t kept() {
        ThreadPool* pool = current().load(std::memory_order_acquire);
        if (!pool) return 0;
        std::lock_guard<std::mutex> lock(pool->mutex_);
        return pool->threads_;
    }

    // After fork(), in the child: the parent's pool (its threads are not here, its lock
    // may be held) is left as it is, and the next call starts a new one.
    static void after_fork_in_child() { current().store(nullptr, std::memory_order_relaxed); }

private:
    struct Job {
        void (*work)(void*, size_t) = nullptr;
        void* context = nullptr;
        size_t n = 0;
        size_t next = 1;      // the first task not yet taken (0 is the caller's)
        size_t finished = 0;  // how many of tasks 1 .. n-1 have ended
        std::exception_ptr error;  // what the first task to throw threw; the tasks after it are dropped
        std::condition_variable all_finished;

        // Runs task k: what it threw, or null.
        std::exception_ptr run_task(size_t k) {
            try {
                work(context, k);
                return nullptr;
            } catch (...) {
                return std::current_exception();
            }
        }
        // A task has ended, with `thrown` (the pool's lock held). Interrupt::Stopped only
        // says that another task stopped the call, so what that task threw wins over it.
        void ended(const std::exception_ptr& thrown) {
            if (thrown && (!error || (stopped(error) && !stopped(thrown)))) error = thrown;
        }
        static bool stopped(const std::exception_ptr& e) {
            try {
                std::rethrow_exception(e);
            } catch (const Interrupt::Stopped&) {
                return true;
            } catch (...) {
                return false;
            }
        }
    };

    static std::atomic<ThreadPool*>& current() {
        static std::atomic<ThreadPool*> pool{nullptr};
        return pool;
    }

    static ThreadPool& instance() {
        ThreadPool* pool = current().load(std::memory_order_acquire);
        if (pool) return *pool;
        // The first call (or the first after a fork) makes it; where two race, one is kept.
        auto* made = new ThreadPool;  // never deleted once kept: see the class's comment
        if (current().compare_exchange_strong(pool, made, std::memory_order_acq_rel)) return *made;
        delete made;  // another call's was kept; this one has no threads yet
        return *pool;
    }

    void run(Job& job) {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            grow(job.n - 1);
            jobs_.push_back(&job);
        }
        threads_lent().fetch_add(job.n - 1, std::memory_order_relaxed);
        for (size_t k = 1; k < job.n; ++k) work_ready_.notify_one();  // no more are woken than have a task
        const std::exception_ptr thrown = job.run_task(0);
        std::unique_lock<std::mutex> lock(mutex_);
        job.ended(thrown);
        // The tasks no kept thread has taken yet, on this thread.
        while (job.next < job.n) run_next(job, lock);
        job.all_finished.wait(lock, [&] { return job.finished == job.n - 1; });
        lock.unlock();
        if (job.error) std::rethrow_exception(job.error);
    }

    // Takes the next task of `job` (which leaves the queue once all of its are taken) and
    // runs it with `lock` let go, or drops it where a task of the job has thrown. The
    // call that made `job` may return, and `job` with it, once told that its last task
    // has ended: so that is told with the lock held, after the last touch of `job`.
    void run_next(Job& job, std::unique_lock<std::mutex>& lock) {
        const size_t k = job.next++;
        if (job.next == job.n) jobs_.erase(std::find(jobs_.begin(), jobs_.end(), &job));
        if (!job.error) {
            lock.unlock();
            const std::exception_ptr thrown = job.run_task(k);
            lock.lock();
            job.ended(thrown);
        }
        if (++job.finished == job.n - 1) job.all_finished.notify_one();
    }

    // At least `threads` threads in the pool (the lock held).
    void grow(size_t threads) {
        if (threads_ >= threads) return;
#if !defined(_WIN32)
        // Started with every signal blocked, which they keep; this thread's mask is put back.
        sigset_t all, before;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &before);
        struct Restore {
            sigset_t* mask;
            ~Restore() { pthread_sigmask(SIG_SETMASK, mask, nullptr); }
        } restore{&before};
#endif
        for (; threads_ < threads; ++threads_) {
            std::thread thread([this] { serve(); });
#if defined(__linux__)
            pthread_setname_np(thread.native_handle(), kThreadName);  // what top and /proc/PID/task/*/comm show
#endif
            thread.detach();
        }
    }

    // A kept thread: runs tasks as they come, and sleeps while there are none.
    void serve() {
        std::unique_lock<std::mutex> lock(mutex_);
        for (;;) {
            work_ready_.wait(lock, [&] { return !jobs_.empty(); });
            run_next(*jobs_.front(), lock);
        }
    }

    std::mutex mutex_;
    std::condition_variable work_ready_;
    std::deque<Job*> jobs_;  // calls with tasks not yet taken, oldest first
    size_t threads_ = 0;
};

// Runs work(k) for k = 0 .. n-1, k = 0 on the calling thread and the others on threads
// the process keeps (ThreadPool). An exception in any of them is thrown here once all
// have finished, rather than ending the process, as one escaping a thread would.
template <class Work>
void run_threads(size_t n, Work&& work) {
    ThreadPool::run(n, work);
}

}  // namespace bpe
