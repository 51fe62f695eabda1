// The GIL, let go of while the C++ works and taken back safely, and the check for
// signals (Ctrl-C) that stops a long call: what every binding of _core.cpp does around
// its work. Included by _core.cpp only.
#pragma once

#include <pybind11/pybind11.h>

#include <atomic>
#include <memory>

#include "interrupt.h"

#if !defined(_WIN32)
#include <unistd.h>  // pause
#endif

namespace bindings {

namespace py = pybind11;

// Takes the GIL back for this thread, after PyEval_SaveThread. As the interpreter exits,
// CPython (3.11 to 3.13) ends any other thread that asks for the GIL with pthread_exit,
// which unwinds the thread's stack by force. From a destructor, which may not throw
// (pybind11's gil_scoped_release took the GIL back in one), that unwind ended the whole
// process: std::terminate, "terminate called without an active exception", exit code
// 134, whenever a daemon thread was inside a call at exit. Unwinding on would not do
// either: it runs destructors that touch Python objects without the GIL. So a thread
// that the interpreter ends here stops for good instead, holding nothing, and the
// process exits around it, as CPython 3.14 itself makes such threads do. Calls still
// running on the other threads of its call stop at their next report (Interrupt).
inline void take_gil(PyThreadState* state) noexcept {
#if !defined(_WIN32)
    try {
        PyEval_RestoreThread(state);
    } catch (...) {  // only pthread_exit's unwind leaves it (catch (abi::__forced_unwind&) binds a null reference)
        bpe::Interrupt::abandon_all();
        for (;;) pause();  // leaving this handler without rethrowing would end the process
    }
#else
    PyEval_RestoreThread(state);
#endif
}

// The GIL, let go while the C++ works, and taken back when this goes out of scope.
// Every binding lets go of the GIL through this, never through gil_scoped_release.
class GilReleased {
public:
    GilReleased() : state_(PyEval_SaveThread()) {}
    ~GilReleased() { take_gil(state_); }
    GilReleased(const GilReleased&) = delete;
    GilReleased& operator=(const GilReleased&) = delete;

    // Runs fn with the GIL held for a moment; lets go of it again even if fn throws.
    template <class Fn>
    void with_gil(Fn&& fn) {
        take_gil(state_);
        struct Again {
            PyThreadState*& state;
            ~Again() { state = PyEval_SaveThread(); }
        } again{state_};
        fn();
    }

private:
    PyThreadState* state_;
};

// Python's main thread, the one that runs signal handlers, as PyThread_get_thread_ident
// names it: asked of the threading module once, as the module is imported
// (remember_main_thread), and after a fork the forking thread, which CPython and
// threading make the child's main thread. Not asked at each call: Python code run there
// (threading.main_thread()) may let go of the GIL and ask for it back, and as the
// interpreter exits, a daemon thread is ended there by force (take_gil), unwinding
// through the call with the objects it holds, which it then lets go of without the GIL.
inline std::atomic<unsigned long>& main_thread_ident() {
    static std::atomic<unsigned long> ident{0};
    return ident;
}
inline void remember_main_thread() {
    py::object main = py::module_::import("threading").attr("main_thread")();
    main_thread_ident().store(main.attr("ident").cast<unsigned long>(), std::memory_order_relaxed);
}
inline void main_thread_after_fork_in_child() {
    main_thread_ident().store(PyThread_get_thread_ident(), std::memory_order_relaxed);
}

// Whether this thread is Python's main thread.
inline bool on_main_thread() { return main_thread_ident().load(std::memory_order_relaxed) == PyThread_get_thread_ident(); }

// A check for signals during a long call, every Interrupt::kPollBytes of work: it
// takes the GIL for a moment and runs Python's signal handlers, and if one raises
// (Ctrl-C: KeyboardInterrupt), the call stops and raises it. Only Python's main thread
// runs handlers, so elsewhere it does nothing and never waits for the GIL; nor for a
// text too short to be worth it. The same check runs between merges in training.
class SignalCheck {
public:
    SignalCheck(GilReleased& gil, bool wanted) : gil_(gil), wanted_(wanted) {}

    void operator()() const {
        if (!wanted_) return;
        gil_.with_gil([] {
            if (PyErr_CheckSignals() != 0) throw py::error_already_set();
        });
    }

    // An Interrupt for the C++ that makes this check; nullptr when there is nothing to check.
    std::unique_ptr<bpe::Interrupt> interrupt() const {
        if (!wanted_) return nullptr;
        return std::make_unique<bpe::Interrupt>(*this);
    }

    // Whether a call on this many bytes should check: asks with the GIL held.
    static bool wanted_for(size_t bytes) { return bytes >= bpe::Interrupt::kPollBytes && on_main_thread(); }

private:
    GilReleased& gil_;
    bool wanted_;
};

// Runs work(interrupt) without the GIL, where interrupt (an Interrupt*, nullptr when no
// check is wanted) stops it at a signal, checked every Interrupt::kPollBytes of work on
// Python's main thread when the call handles at least that many bytes. The one set-up
// of a long call: every binding that works on a text goes through it.
template <class Work>
inline auto without_gil(size_t bytes, Work&& work) {
    bool check_signals = SignalCheck::wanted_for(bytes);
    GilReleased released;
    std::unique_ptr<bpe::Interrupt> interrupt = SignalCheck(released, check_signals).interrupt();
    return work(interrupt.get());
}

}  // namespace bindings
