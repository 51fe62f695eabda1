// Stopping a long call early (Ctrl-C): the threads of a call report their progress to
// an Interrupt, which polls for a signal and stops them all.
#pragma once

#include <atomic>
#include <cstddef>
#include <exception>
#include <functional>
#include <thread>
#include <utility>

namespace bpe {

// How a long call stops early: every thread reports the bytes it has worked through
// (a segment at a time) to done(); on the thread that made the Interrupt, done() asks
// `poll` every kPollBytes, and poll throws to stop the call (the bindings' looks for a
// signal: Ctrl-C). Once it has thrown, the other threads throw Stopped at their next
// report, so that all of them stop soon, and run_threads rethrows poll's exception
// rather than their Stopped. The work between reports must leave whatever it
// shares whole when it stops there (the encoder adds to its cache only at the end).
class Interrupt {
public:
    static constexpr size_t kPollBytes = size_t(1) << 18;  // 256 KB: about 2 to 50 ms of work

    struct Stopped : std::exception {
        const char* what() const noexcept override { return "stopped by another thread"; }
    };

    explicit Interrupt(std::function<void()> poll) : poll_(std::move(poll)), owner_(std::this_thread::get_id()) {}

    void done(size_t bytes) {
        if (stopped_.load(std::memory_order_relaxed) || abandoned().load(std::memory_order_relaxed)) throw Stopped();
        if (!poll_ || std::this_thread::get_id() != owner_) return;
        unpolled_ += bytes;
        if (unpolled_ < kPollBytes) return;
        unpolled_ = 0;
        try {
            poll_();
        } catch (...) {
            stopped_.store(true, std::memory_order_relaxed);
            throw;
        }
    }

    // Every Interrupt stops at its next report from now on: the process is ending under
    // calls that can no longer return (see take_gil in _core.cpp).
    static void abandon_all() { abandoned().store(true); }

private:
    static std::atomic<bool>& abandoned() {
        static std::atomic<bool> flag{false};
        return flag;
    }

    std::function<void()> poll_;
    std::thread::id owner_;
    size_t unpolled_ = 0;  // touched by the owner only
    std::atomic<bool> stopped_{false};
};

// Reports to an Interrupt that may be absent.
inline void report(Interrupt* interrupt, size_t bytes) {
    if (interrupt) interrupt->done(bytes);
}

}  // namespace bpe
