// The compiled core of the `bpe` package, bound to Python with pybind11 as `bpe._core`:
// splitting text into chunks, training merges, and encoding and decoding with them.
//
// Conventions of this layer (the Python class bpe.BPETokenizer sits on top and takes
// str only): texts are bytes (or a contiguous buffer of bytes) or str, read in place
// (Text below), special tokens are str, ids are ints (or numpy integers). `special_tokens` is always a list of str, numbered after the merges in
// the order given; `token_ids` renumbers every token (bytes, merges, specials) when a
// vocabulary has its own numbering. `allowed_special` and `disallowed_special` mean
// what they mean in tiktoken. `threads=0` means one thread per core, everywhere.
//
// This file is the boundary: it checks what Python hands over, turns it into views
// and vectors, lets go of the GIL while the C++ works, and turns the results back
// into Python objects. The work itself is in the headers: split.h (chunks), train.h and
// chunk_counter.h (training), encoder.h and vocabulary.h (encoding).
#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <type_traits>
#include <vector>

#include "encoder.h"
#include "ranks.h"
#include "split.h"
#include "train.h"
#include "vocabulary.h"

#if !defined(_WIN32)
#include <pthread.h>  // pthread_atfork
#include <unistd.h>   // pause
#endif

namespace py = pybind11;

namespace {

// --- the GIL, and stopping a long call --------------------------------------------------

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
void take_gil(PyThreadState* state) noexcept {
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

// Whether this thread is Python's main thread, the one that runs signal handlers.
bool on_main_thread() {
    py::object main = py::module_::import("threading").attr("main_thread")();
    return main.attr("ident").cast<unsigned long>() == PyThread_get_thread_ident();
}

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

// A view of the bytes of a Python object, valid while the object lives. Bytes are
// immutable, so the view reads them in place with the GIL released; a bytearray or
// memoryview could change under us, so its bytes are copied first. It never moves
// (the view may point into its own copy), so keep several of them in a std::deque.
struct BytesArg {
    py::object owner;  // a reference of our own: an item of a list could go while the GIL is released
    std::string copy;
    std::string_view view;

    BytesArg(py::handle obj, const char* what) : owner(py::reinterpret_borrow<py::object>(obj)) {
        if (PyBytes_Check(obj.ptr())) {
            view = std::string_view(PyBytes_AS_STRING(obj.ptr()), size_t(PyBytes_GET_SIZE(obj.ptr())));
        } else if (PyUnicode_Check(obj.ptr())) {
            throw py::type_error(std::string(what) +
                                 " must be bytes, not str: encode it first, for example text.encode('utf-8') "
                                 "(bpe.BPETokenizer takes str)");
        } else if (PyObject_CheckBuffer(obj.ptr())) {
            py::buffer_info info = py::reinterpret_borrow<py::buffer>(obj).request();
            if (info.ndim != 1 || info.itemsize != 1 || info.strides[0] != 1)
                throw py::type_error(std::string(what) + " must be bytes or a contiguous buffer of bytes");
            copy.assign(static_cast<const char*>(info.ptr), size_t(info.size));
            view = copy;
        } else {
            throw py::type_error(std::string(what) + " must be bytes, not " + type_name(obj));
        }
    }
    BytesArg(const BytesArg&) = delete;
    BytesArg& operator=(const BytesArg&) = delete;

    static std::string type_name(py::handle obj) { return py::str(py::type::handle_of(obj).attr("__name__")); }
};

// Whether a str is ASCII (a flag CPython keeps: no scan).
bool is_ascii(py::handle str) {
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(str.ptr()) != 0) throw py::error_already_set();  // a str made by the old C API
#endif
    return PyUnicode_IS_ASCII(str.ptr());
}

// A str that UTF-8 cannot hold: the one message for it, wherever a str is read.
// `what` names the str: the text, or a special token.
[[noreturn]] void throw_lone_surrogate(Py_ssize_t position, const std::string& what = "text") {
    throw py::value_error(what + " cannot be encoded as UTF-8: a lone surrogate at position " + std::to_string(position));
}

// The UTF-8 bytes of a str, without leaving a copy on the str. PyUnicode_AsUTF8AndSize
// would cache one on the str object for as long as it lives (a 57 MB CJK text grew to
// 143 MB), so: an ASCII str is its own UTF-8 and is read in place; any other is
// encoded into a bytes object of our own (`keep`), freed when the call is done. A lone
// surrogate, which UTF-8 cannot hold, is a ValueError that names `what` and says where.
std::string_view str_utf8(py::handle obj, py::object& keep, const std::string& what = "text") {
    if (is_ascii(obj))
        return std::string_view(static_cast<const char*>(PyUnicode_DATA(obj.ptr())), size_t(PyUnicode_GET_LENGTH(obj.ptr())));
    PyObject* bytes = PyUnicode_AsUTF8String(obj.ptr());
    if (bytes == nullptr) {
        Py_ssize_t start = -1;
        if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) throw py::error_already_set();  // out of memory
        PyObject *type, *value, *trace;
        PyErr_Fetch(&type, &value, &trace);
        PyErr_NormalizeException(&type, &value, &trace);
        if (value == nullptr || PyUnicodeEncodeError_GetStart(value, &start) != 0) start = -1;
        Py_XDECREF(type), Py_XDECREF(value), Py_XDECREF(trace);
        PyErr_Clear();
        throw_lone_surrogate(start, what);
    }
    keep = py::reinterpret_steal<py::object>(bytes);
    return std::string_view(PyBytes_AS_STRING(bytes), size_t(PyBytes_GET_SIZE(bytes)));
}

// The UTF-8 of characters [begin, end) of a str whose characters are Char (its
// PyUnicode kind), with no lone surrogate among them, written at `out`. Needs no GIL:
// a str never changes.
template <class Char>
void write_utf8(const Char* chars, Py_ssize_t begin, Py_ssize_t end, char* out) {
    for (Py_ssize_t i = begin; i < end; ++i) {
        uint32_t c = chars[i];
        if (c < 0x80) {
            *out++ = char(c);
        } else if (c < 0x800) {
            *out++ = char(0xc0 | (c >> 6)), *out++ = char(0x80 | (c & 0x3f));
        } else if (c < 0x10000) {
            *out++ = char(0xe0 | (c >> 12)), *out++ = char(0x80 | ((c >> 6) & 0x3f)), *out++ = char(0x80 | (c & 0x3f));
        } else {
            *out++ = char(0xf0 | (c >> 18)), *out++ = char(0x80 | ((c >> 12) & 0x3f));
            *out++ = char(0x80 | ((c >> 6) & 0x3f)), *out++ = char(0x80 | (c & 0x3f));
        }
    }
}

// The bytes of the UTF-8 of characters [begin, end), or, with a lone surrogate (which
// UTF-8 cannot hold) at position p, -1 - p. Without branches, so that the compiler
// makes it SIMD: it is a pass over the whole str.
template <class Char>
int64_t utf8_size(const Char* chars, Py_ssize_t begin, Py_ssize_t end) {
    int64_t size = 0;
    bool surrogate = false;
    for (Py_ssize_t i = begin; i < end; ++i) {
        uint32_t c = chars[i];
        size += 1 + (c >= 0x80) + (c >= 0x800) + (c >= 0x10000);
        surrogate |= c - 0xd800 < 0x800;
    }
    if (!surrogate) return size;
    for (Py_ssize_t i = begin;; ++i)
        if (uint32_t(chars[i]) - 0xd800 < 0x800) return -1 - int64_t(i);
}

// The UTF-8 of a str that is not ASCII, made on `workers` threads into `out` without
// the GIL: each thread measures its share of the characters, then writes it at its
// place. Encoding on several threads while one thread made the UTF-8 of the whole str
// first: that one thread's part was a quarter of the time of two threads' call, and
// two threads ran 1.2 times as fast as one, not 1.8.
std::string_view str_utf8_on_threads(py::handle obj, std::unique_ptr<char[]>& out, unsigned workers) {
    const int kind = PyUnicode_KIND(obj.ptr());
    const void* data = PyUnicode_DATA(obj.ptr());
    const Py_ssize_t n = PyUnicode_GET_LENGTH(obj.ptr());
    std::vector<Py_ssize_t> bounds(workers + 1);
    for (unsigned k = 0; k <= workers; ++k) bounds[k] = Py_ssize_t(int64_t(n) * k / workers);
    std::vector<int64_t> sizes(workers);
    // f(chars, begin, end) for thread k's share, with chars of the str's kind.
    auto share = [&](size_t k, auto&& f) {
        switch (kind) {
            case PyUnicode_1BYTE_KIND: return f(static_cast<const Py_UCS1*>(data), bounds[k], bounds[k + 1]);
            case PyUnicode_2BYTE_KIND: return f(static_cast<const Py_UCS2*>(data), bounds[k], bounds[k + 1]);
            default: return f(static_cast<const Py_UCS4*>(data), bounds[k], bounds[k + 1]);
        }
    };
    {
        GilReleased released;
        bpe::run_threads(workers, [&](size_t k) {
            sizes[k] = share(k, [](auto chars, Py_ssize_t begin, Py_ssize_t end) { return utf8_size(chars, begin, end); });
        });
    }
    std::vector<int64_t> offsets{0};
    for (int64_t size : sizes) {
        if (size < 0)
            throw_lone_surrogate(Py_ssize_t(-1 - size));
        offsets.push_back(offsets.back() + size);
    }
    out.reset(new char[size_t(offsets.back()) + 1]);  // not zeroed: the threads write every byte
    {
        GilReleased released;
        bpe::run_threads(workers, [&](size_t k) {
            share(k, [&](auto chars, Py_ssize_t begin, Py_ssize_t end) { write_utf8(chars, begin, end, out.get() + offsets[k]); });
        });
    }
    return std::string_view(out.get(), size_t(offsets.back()));
}

// A str's UTF-8 (str_utf8), valid while this lives. Given workers, a long str that is
// not ASCII is made UTF-8 on that many threads (str_utf8_on_threads).
struct StrArg {
    py::object owner, utf8;
    std::unique_ptr<char[]> converted;
    std::string_view view;

    explicit StrArg(py::handle obj, unsigned workers = 1) : owner(py::reinterpret_borrow<py::object>(obj)) {
        if (!PyUnicode_Check(obj.ptr()))
            throw py::type_error("text must be str, not " + BytesArg::type_name(obj));
        // Below a megabyte of characters, starting threads costs more than it saves.
        constexpr Py_ssize_t kThreadedUtf8 = 1 << 20;
        if (workers > 1 && !is_ascii(obj) && PyUnicode_GET_LENGTH(obj.ptr()) >= kThreadedUtf8)
            view = str_utf8_on_threads(obj, converted, workers);
        else
            view = str_utf8(obj, utf8);
    }
    StrArg(const StrArg&) = delete;
    StrArg& operator=(const StrArg&) = delete;
};

// Appends the UTF-8 of characters [begin, end) of a str (of PyUnicode kind `kind`, its
// characters at `data`) to out. Returns the position of a lone surrogate, which UTF-8
// cannot hold, or -1. Needs no GIL: a str never changes.
Py_ssize_t append_utf8(int kind, const void* data, Py_ssize_t begin, Py_ssize_t end, std::string& out) {
    for (Py_ssize_t i = begin; i < end; ++i) {
        uint32_t c = PyUnicode_READ(kind, data, i);
        if (c < 0x80) {
            out.push_back(char(c));
        } else if (c < 0x800) {
            out.push_back(char(0xc0 | (c >> 6))), out.push_back(char(0x80 | (c & 0x3f)));
        } else if (c < 0x10000) {
            if (c >= 0xd800 && c <= 0xdfff) return i;
            out.push_back(char(0xe0 | (c >> 12))), out.push_back(char(0x80 | ((c >> 6) & 0x3f)));
            out.push_back(char(0x80 | (c & 0x3f)));
        } else {
            out.push_back(char(0xf0 | (c >> 18))), out.push_back(char(0x80 | ((c >> 12) & 0x3f)));
            out.push_back(char(0x80 | ((c >> 6) & 0x3f))), out.push_back(char(0x80 | (c & 0x3f)));
        }
    }
    return -1;
}

// Where a str may be cut into pieces that split into chunks exactly as the whole does:
// bpe::is_safe_cut's rule (split.h, with why it is safe), over code points, which its
// two ASCII characters are alike in, and never inside one of the special tokens. Reads
// the str in place, and needs no GIL once made: a str never changes.
class StrCuts {
public:
    // special_tokens: UTF-8, as the core keeps them.
    StrCuts(py::handle text, const std::vector<std::string>& special_tokens) {
        is_ascii(text);  // made ready, under Python 3.11
        kind_ = PyUnicode_KIND(text.ptr());
        data_ = PyUnicode_DATA(text.ptr());
        size_ = PyUnicode_GET_LENGTH(text.ptr());
        for (const std::string& token : special_tokens) {
            py::str decoded(token);
            std::u32string chars;
            for (Py_ssize_t i = 0; i < PyUnicode_GET_LENGTH(decoded.ptr()); ++i)
                chars.push_back(PyUnicode_READ_CHAR(decoded.ptr(), i));
            specials_.push_back(std::move(chars));
        }
    }

    Py_ssize_t size() const { return size_; }

    // Whether the str may be cut before character `cut` (0 < cut < size()).
    bool safe(Py_ssize_t cut) const { return bpe::is_safe_cut_between(at(cut - 1), at(cut)) && !across(cut); }

    // The first safe cut at or after `from` (at least 1), or size() when there is none.
    Py_ssize_t first(Py_ssize_t from) const {
        Py_ssize_t cut = std::max<Py_ssize_t>(from, 1);
        while (cut < size_ && !safe(cut)) ++cut;
        return std::min(cut, size_);
    }

    // The last safe cut in [from, end), or 0 when there is none.
    Py_ssize_t last(Py_ssize_t from, Py_ssize_t end) const {
        from = std::max<Py_ssize_t>(from, 1);
        for (Py_ssize_t cut = std::min(end, size_) - 1; cut >= from; --cut)
            if (safe(cut)) return cut;
        return 0;
    }

private:
    uint32_t at(Py_ssize_t i) const { return uint32_t(PyUnicode_READ(kind_, data_, i)); }

    // Whether a special token holds characters cut - 1 and cut.
    bool across(Py_ssize_t cut) const {
        for (const std::u32string& token : specials_)
            for (Py_ssize_t k = 1; k < Py_ssize_t(token.size()); ++k) {
                Py_ssize_t begin = cut - k;
                if (begin < 0 || begin + Py_ssize_t(token.size()) > size_) continue;
                Py_ssize_t j = 0;
                while (j < Py_ssize_t(token.size()) && at(begin + j) == token[j]) ++j;
                if (j == Py_ssize_t(token.size())) return true;
            }
        return false;
    }

    int kind_ = PyUnicode_1BYTE_KIND;
    const void* data_ = nullptr;
    Py_ssize_t size_ = 0;
    std::vector<std::u32string> specials_;
};

// Counts one str that is not ASCII, without its UTF-8 ever being whole: a piece of
// about kStrPiece characters at a time, cut at the first safe cut from there
// (StrCuts), is encoded into one buffer, reused, and counted, so the pieces count
// exactly as the whole would. Returns the distinct chunks dropped to keep to the
// budget, as ChunkCounter::add does.
uint64_t add_str_in_pieces(bpe::ChunkCounter& counter, py::handle text, unsigned workers) {
    constexpr Py_ssize_t kStrPiece = 8 << 20;
    is_ascii(text);  // made ready, under Python 3.11
    const int kind = PyUnicode_KIND(text.ptr());
    const void* data = PyUnicode_DATA(text.ptr());
    const Py_ssize_t n = PyUnicode_GET_LENGTH(text.ptr());
    // A lone surrogate is looked for first, so that a str refused for one counts
    // nothing, as a list of strs refused for one does not.
    if (kind != PyUnicode_1BYTE_KIND) {
        Py_ssize_t surrogate = -1;
        {
            GilReleased released;
            for (Py_ssize_t i = 0; i < n && surrogate < 0; ++i) {
                uint32_t c = PyUnicode_READ(kind, data, i);
                if (c >= 0xd800 && c <= 0xdfff) surrogate = i;
            }
        }
        if (surrogate >= 0) throw_lone_surrogate(surrogate);
    }
    std::vector<std::string> specials;
    for (const auto& [token, id] : counter.specials().tokens()) specials.push_back(token);
    const StrCuts cuts(text, specials);
    std::string piece;
    uint64_t dropped = 0;
    for (Py_ssize_t start = 0; start < n;) {
        Py_ssize_t cut = n - start > kStrPiece ? cuts.first(start + kStrPiece) : n;
        Py_ssize_t surrogate;
        {
            bool check_signals = SignalCheck::wanted_for(size_t(cut - start));
            GilReleased released;
            std::unique_ptr<bpe::Interrupt> interrupt = SignalCheck(released, check_signals).interrupt();
            piece.clear();
            surrogate = append_utf8(kind, data, start, cut, piece);
            if (surrogate < 0) dropped += counter.add({piece}, workers, interrupt.get());
        }
        if (surrogate >= 0)
            throw_lone_surrogate(surrogate);
        start = cut;
    }
    return dropped;
}

// gpt2 and gpt4 split characters, so their text must be valid UTF-8.
void check_text_for(bpe::Pattern pattern, std::string_view text, const char* what) {
    if (pattern != bpe::Pattern::kDefault && !bpe::is_valid_utf8(text))
        throw py::value_error(std::string(what) + " is not valid UTF-8, which the '" + bpe::pattern_name(pattern) +
                              "' split pattern needs (the 'default' pattern takes any bytes)");
}

// An id or a size from Python, as a Python int: an int or a numpy integer (whatever
// operator.index takes, as tiktoken does), never a float, nor a bool (an int to Python,
// but True as a token id or a count is a mistake). Empty when it is not one.
std::optional<py::int_> as_index(py::handle obj) {
    PyObject* as_int = PyBool_Check(obj.ptr()) ? nullptr : PyNumber_Index(obj.ptr());
    if (as_int == nullptr) {
        PyErr_Clear();
        return std::nullopt;
    }
    return py::reinterpret_steal<py::int_>(as_int);
}

// as_index, or TypeError: "`what` must be `an_int`, not ...".
py::int_ index_from_python(py::handle obj, const std::string& what, const char* an_int = "an int") {
    std::optional<py::int_> value = as_index(obj);
    if (!value)
        throw py::type_error(what + " must be " + an_int + ", not " + BytesArg::type_name(obj) + ": got " +
                             std::string(py::repr(obj)));
    return *value;
}

// A Python int as a long long, the nearest one when it is beyond them (so that a range
// check refuses it all the same).
long long clamped_long_long(const py::int_& value) {
    int overflow = 0;
    long long n = PyLong_AsLongLongAndOverflow(value.ptr(), &overflow);
    return overflow > 0 ? LLONG_MAX : overflow < 0 ? LLONG_MIN : n;
}

// A size from Python between `low` and `high`: ValueError names `what`, says what it
// must be (`at_least`, when too small: "0 or more" unless given) and shows the value
// as given.
long long size_from_python(py::handle obj, const std::string& what, long long low, long long high,
                           std::string at_least = "") {
    py::int_ value = index_from_python(obj, what);
    long long n = clamped_long_long(value);
    if (at_least.empty()) at_least = std::to_string(low) + " or more";
    if (n < low) throw py::value_error(what + " must be " + at_least + ", got " + std::string(py::repr(value)));
    if (n > high)
        throw py::value_error(what + " must be at most " + std::to_string(high) + ", got " +
                              std::string(py::repr(value)));
    return n;
}

unsigned thread_count(py::handle threads) {
    long long n = size_from_python(threads, "threads", 0, bpe::kMaxThreads, "0 (one per core) or more");
    if (n > 0) return unsigned(n);
    return std::clamp(std::thread::hardware_concurrency(), 1u, bpe::kMaxThreads);
}

// The most merges there can be: merge k makes token 256 + k, and ids go up to MAX_ID.
constexpr long long kMaxMerges = (long long)bpe::kMaxId + 1 - 256;

long long num_merges_from_python(py::handle num_merges) {
    return size_from_python(num_merges, "num_merges", 0, kMaxMerges);
}

bool is_sequence_of_items(py::handle obj) {
    return PySequence_Check(obj.ptr()) && !PyUnicode_Check(obj.ptr()) && !PyBytes_Check(obj.ptr());
}

// Whether obj holds items in an order one can go through: a list, a tuple, a numpy
// array, a generator, ..., but not a str or bytes, whose items are characters and
// bytes, nor a set or a dict, whose order is not the caller's to give (merges and
// special tokens are numbered in their order, and a set of str changes its order from
// one run to the next).
bool is_iterable_of_items(py::handle obj) {
    PyObject* o = obj.ptr();
    return py::isinstance<py::iterable>(obj) && !PyUnicode_Check(o) && !PyBytes_Check(o) && !PyAnySet_Check(o) &&
           !PyDict_Check(o);
}

// The split rule's name from Python: "default", "gpt2" or "gpt4".
bpe::Pattern pattern_from_python(py::handle obj) {
    if (!PyUnicode_Check(obj.ptr())) throw py::type_error("pattern must be a str, not " + BytesArg::type_name(obj));
    return bpe::parse_pattern(py::cast<std::string>(obj));
}

// Merges from Python: pairs of ids (as_index: ints or numpy integers), in a list, a
// tuple, a numpy array of shape (n, 2), or any other iterable.
std::vector<bpe::Pair> merges_from_python(py::handle obj) {
    if (!is_iterable_of_items(obj))
        throw py::type_error("merges must be a list of (int, int) pairs, not " + BytesArg::type_name(obj));
    std::vector<bpe::Pair> merges;
    if (PyList_Check(obj.ptr()) || PyTuple_Check(obj.ptr())) merges.reserve(size_t(py::len(obj)));
    for (py::handle item : py::reinterpret_borrow<py::iterable>(obj)) {
        size_t k = merges.size();
        auto where = [&] { return "merge " + std::to_string(k) + " is " + std::string(py::repr(item)) + ": "; };
        if (!is_sequence_of_items(item) || py::len(item) != 2) throw py::type_error(where() + "expected a pair of ints");
        uint32_t ids[2];
        for (int j = 0; j < 2; ++j) {
            std::optional<py::int_> id = as_index(py::object(item[py::int_(j)]));
            if (!id) throw py::type_error(where() + "expected a pair of ints");
            long long value = clamped_long_long(*id);
            if (value < 0 || value > UINT32_MAX)
                throw py::value_error(where() + "ids must be between 0 and " + std::to_string(255 + k));
            ids[j] = uint32_t(value);
        }
        merges.emplace_back(ids[0], ids[1]);
    }
    return merges;
}

// A str as UTF-8 bytes; a lone surrogate (which UTF-8 cannot hold) is a ValueError
// that names the str as `what`.
std::string utf8_of(py::handle str, const std::string& what) {
    py::object keep;
    return std::string(str_utf8(str, keep, what));
}

// Special tokens from Python: str, in a list or any other iterable but a dict (None:
// none).
std::vector<std::string> special_tokens_from_python(py::handle obj) {
    std::vector<std::string> tokens;
    if (obj.is_none()) return tokens;
    if (!is_iterable_of_items(obj))
        throw py::type_error("special_tokens must be a list of str, not " + BytesArg::type_name(obj) +
                             ": their ids follow the merges, in that order (to number them your own way: "
                             "token_ids, or BPETokenizer(merges, special_tokens={token: id}))");
    for (py::handle token : py::reinterpret_borrow<py::iterable>(obj)) {
        if (!PyUnicode_Check(token.ptr()))
            throw py::type_error("special tokens must be str, not " + BytesArg::type_name(token) + ": got " +
                                 std::string(py::repr(token)));
        tokens.push_back(utf8_of(token, "the special token " + std::string(py::repr(token))));
    }
    return tokens;
}

// token_ids from Python: ids (as_index: ints or numpy integers), each at most
// bpe::kMaxId, in a list or any other iterable (None: none; the Encoder checks that
// there is one for every token).
std::optional<std::vector<uint32_t>> token_ids_from_python(py::handle obj) {
    std::vector<uint32_t> ids;
    if (obj.is_none()) return std::nullopt;
    if (!is_iterable_of_items(obj))
        throw py::type_error("token_ids must be a list of ints, not " + BytesArg::type_name(obj));
    // Reserved only for what holds its items already: a range(10**9) is refused for its
    // ids before it could cost memory.
    if (PyList_Check(obj.ptr()) || PyTuple_Check(obj.ptr())) ids.reserve(size_t(py::len(obj)));
    for (py::handle item : py::reinterpret_borrow<py::iterable>(obj)) {
        size_t k = ids.size();
        std::optional<py::int_> id = as_index(item);
        if (!id)
            throw py::type_error("token_ids must be a list of ints; item " + std::to_string(k) + " is " +
                                 std::string(py::repr(item)));
        long long value = clamped_long_long(*id);
        if (value < 0 || value > bpe::kMaxId)
            throw py::value_error("token_ids[" + std::to_string(k) + "] is " + std::string(py::repr(item)) +
                                  ": ids must be between 0 and " + std::to_string(bpe::kMaxId));
        ids.push_back(uint32_t(value));
    }
    return ids;
}

// A text from Python for the calls that encode: a str, read in place as StrArg reads
// it (an ASCII str with no copy, any other made UTF-8 for the call only, on `workers`
// threads when long), or bytes, read as BytesArg reads them (a bytearray or a
// memoryview is copied first), which must suit the pattern (check_text_for; a str's
// UTF-8 always does). One type for both, so that each call is written once. It never
// moves (its view may point into itself), so keep several of them in a std::deque.
struct Text {
    std::optional<StrArg> str;
    std::optional<BytesArg> bytes;
    std::string_view view;

    Text(py::handle obj, bpe::Pattern pattern, const char* what = "text", unsigned workers = 1) {
        if (PyUnicode_Check(obj.ptr())) {
            view = str.emplace(obj, workers).view;
        } else if (PyBytes_Check(obj.ptr()) || PyObject_CheckBuffer(obj.ptr())) {
            view = bytes.emplace(obj, what).view;
            check_text_for(pattern, view, what);
        } else {
            throw py::type_error(std::string(what) + " must be str or bytes, not " + BytesArg::type_name(obj));
        }
    }
    Text(const Text&) = delete;
    Text& operator=(const Text&) = delete;
};

// Texts from Python for encode_batch: a sequence (not one str or bytes) of texts of one
// type, str or bytes, as the first is: a mix is more likely a mistake than a wish.
std::deque<Text> texts_of(py::handle texts, bpe::Pattern pattern) {
    if (!is_sequence_of_items(texts))
        throw py::type_error("texts must be a list of str or a list of bytes, not " + BytesArg::type_name(texts));
    std::deque<Text> args;
    for (py::handle text : py::reinterpret_borrow<py::sequence>(texts)) {
        if (!args.empty() && args.front().str.has_value() != bool(PyUnicode_Check(text.ptr())))
            throw py::type_error("text " + std::to_string(args.size()) + " must be " +
                                 (args.front().str ? "str" : "bytes") + ", not " + BytesArg::type_name(text) +
                                 ", as the first text is");
        args.emplace_back(text, pattern, "a text");
    }
    return args;
}

// Which specials an argument names: "all", or a collection of str among the encoder's.
bpe::SpecialSet special_set_from_python(const bpe::Encoder& encoder, py::handle obj, const char* what) {
    const bpe::SpecialTokens& specials = encoder.specials();
    if (PyUnicode_Check(obj.ptr())) {
        if (py::cast<std::string>(obj) == "all") return specials.all();
        throw py::value_error(std::string(what) + " must be \"all\" or a set of special tokens, got " +
                              std::string(py::repr(obj)));
    }
    if (!py::isinstance<py::iterable>(obj) || PyBytes_Check(obj.ptr()))
        throw py::type_error(std::string(what) + " must be \"all\" or a set of special tokens, got " +
                             std::string(py::repr(obj)));
    bpe::SpecialSet chosen = specials.none();
    for (py::handle name : obj) {
        if (!PyUnicode_Check(name.ptr()))
            throw py::type_error(std::string(what) + " holds " + std::string(py::repr(name)) + ", which is not a str");
        std::string bytes = utf8_of(name, "the str " + std::string(py::repr(name)) + " in " + what);
        size_t k = specials.find(bytes);  // the trie: a set of n names costs O(n), not O(n * specials)
        if (k == specials.size()) {
            std::string known;
            for (size_t j = 0; j < specials.size() && j < 10; ++j) known += (j ? ", " : "") + specials.tokens()[j].first;
            if (specials.size() > 10) known += ", ...";
            throw py::value_error(std::string(what) + " holds " + std::string(py::repr(name)) +
                                  ", which is not a special token of this encoder (" +
                                  (known.empty() ? std::string("it has none") : "they are " + known) + ")");
        }
        chosen[k] = true;
    }
    return chosen;
}

// The specials that encode may turn into their ids, from tiktoken's two arguments;
// throws ValueError if a text holds a disallowed one.
struct SpecialChoice {
    bpe::SpecialSet allowed, disallowed;

    SpecialChoice(const bpe::Encoder& encoder, py::handle allowed_special, py::handle disallowed_special)
        : allowed(special_set_from_python(encoder, allowed_special, "allowed_special")) {
        if (PyUnicode_Check(disallowed_special.ptr()) && py::cast<std::string>(disallowed_special) == "all") {
            disallowed = allowed;
            disallowed.flip();  // every special that is not allowed
        } else {
            disallowed = special_set_from_python(encoder, disallowed_special, "disallowed_special");
        }
    }

    void check(const bpe::Encoder& encoder, std::string_view text) const {
        size_t k;
        {
            GilReleased released;
            k = encoder.specials().find_first(text, disallowed);
        }
        if (k == encoder.specials().size()) return;
        const std::string& token = encoder.specials().tokens()[k].first;
        throw py::value_error("the text holds the special token " + std::string(py::repr(py::str(token))) +
                              ", which is disallowed. To encode it as its id, allow it: allowed_special={" +
                              std::string(py::repr(py::str(token))) + "} (or \"all\"); to encode it as "
                              "ordinary text, disallowed_special=() or encode_ordinary");
    }
};

// Ids from Python for decoding: a sequence of ints (or numpy integers), or a numpy array
// of integers. Each must be a token's id: ValueError names the first that is not, as
// given. Nothing is allocated for them before they are checked, so that a huge
// range(10**9) or an array of bad ids costs no memory: an array is checked in place
// first, and a sequence that does not already hold its items (a range) grows as checked.
std::vector<uint32_t> ids_for_decoding(const bpe::Encoder& encoder, py::handle obj) {
    // Throws unless `value` (shown as `shown`) is the id of a token.
    auto check = [&](auto value, auto shown) {
        bool in_range = !(value < 0) && uint64_t(value) < encoder.n_vocab();
        if (in_range && encoder.has_id(uint32_t(value))) return;
        std::string id = "token id " + shown();
        if (!in_range)
            throw py::value_error(id + " is outside the vocabulary of " + std::to_string(encoder.n_vocab()) +
                                  " ids (0 to " + std::to_string(encoder.n_vocab() - 1) + ")");
        throw py::value_error(id + " is not a token of this vocabulary (its numbering has a gap there)");
    };
    std::vector<uint32_t> ids;
    if (py::isinstance<py::array>(obj)) {
        py::array array = py::reinterpret_borrow<py::array>(obj);
        char kind = array.dtype().kind();
        if (kind != 'i' && kind != 'u') throw py::type_error("ids must be integers, not an array of " +
                                                             std::string(py::str(array.dtype())));
        if (array.ndim() > 1) throw py::type_error("ids must be one-dimensional");
        if (!array.dtype().attr("isnative").cast<bool>()) {  // the other byte order: a copy in this one
            py::object native = array.dtype().attr("newbyteorder")("=");
            array = py::reinterpret_steal<py::array>(array.attr("astype")(native).release());
        }
        const char* data = static_cast<const char*>(array.data());
        size_t n = size_t(array.size());
        py::ssize_t stride = array.ndim() == 1 ? array.strides(0) : 0;
        // Every item read as its own type and checked, then the ids made: two passes over
        // memory that is there already, and nothing allocated until all are known good.
        auto read = [&](auto* type) {
            using Item = std::remove_pointer_t<decltype(type)>;
            auto item = [&](size_t i) {
                Item value;
                std::memcpy(&value, data + py::ssize_t(i) * stride, sizeof(Item));
                return value;
            };
            for (size_t i = 0; i < n; ++i) check(item(i), [&] { return std::to_string(item(i)); });
            ids.resize(n);
            for (size_t i = 0; i < n; ++i) ids[i] = uint32_t(item(i));
        };
        switch (array.dtype().itemsize() * (kind == 'u' ? -1 : 1)) {
            case 1: read((int8_t*)nullptr); break;
            case 2: read((int16_t*)nullptr); break;
            case 4: read((int32_t*)nullptr); break;
            case 8: read((int64_t*)nullptr); break;
            case -1: read((uint8_t*)nullptr); break;
            case -2: read((uint16_t*)nullptr); break;
            case -4: read((uint32_t*)nullptr); break;
            case -8: read((uint64_t*)nullptr); break;
            default: throw py::type_error("ids must be integers of 1, 2, 4 or 8 bytes, not " +
                                          std::string(py::str(array.dtype())));
        }
        return ids;
    }
    if (!is_sequence_of_items(obj)) throw py::type_error("ids must be a list of ints");
    // A list or tuple holds its items already; a range of 10**9 does not, so its ids
    // are kept as they are checked, never reserved by its length.
    if (PyList_Check(obj.ptr()) || PyTuple_Check(obj.ptr())) ids.reserve(size_t(py::len(obj)));
    for (py::handle id : py::reinterpret_borrow<py::sequence>(obj)) {
        py::int_ value = PyLong_CheckExact(id.ptr()) ? py::reinterpret_borrow<py::int_>(id)
                                                      : index_from_python(id, "ids", "ints");
        long long n = clamped_long_long(value);
        check(n, [&] { return std::string(py::repr(value)); });
        ids.push_back(uint32_t(n));
    }
    return ids;
}

// Python ints for ids, made once and shared by every encoder (an int is the same
// whichever vocabulary gave it): a list of ids then costs a reference count per id,
// not an int allocated and, later, freed per id, which was most of the time encode
// spent past the C++ work with GPT-2's and GPT-4's ids (CPython keeps ints up to 256
// only). Grown, with the GIL held, when an encoder is made; kept for the life of the
// process. Ids past kMaxShared (a vocabulary numbered sparsely) get a new int each.
class SharedInts {
public:
    static constexpr size_t kMaxShared = size_t(1) << 20;  // at most 32 MB of ints

    // Makes the ints 0 .. n-1 (up to kMaxShared); needs the GIL.
    void reserve(size_t n) {
        n = std::min(n, kMaxShared);
        ints_.reserve(n);
        while (ints_.size() < n) {
            PyObject* value = PyLong_FromSize_t(ints_.size());
            if (value == nullptr) throw py::error_already_set();
            ints_.push_back(value);
        }
    }

    // A new reference to the int `id`, or nullptr with a Python error set; needs the GIL.
    PyObject* get(uint32_t id) const {
        if (id < ints_.size()) {
            Py_INCREF(ints_[id]);
            return ints_[id];
        }
        return PyLong_FromUnsignedLong(id);
    }

private:
    std::vector<PyObject*> ints_;
};
SharedInts shared_ints;

// Ids, in n consecutive parts, as one list of ints.
py::list ids_to_list(const std::vector<uint32_t>* parts, size_t n) {
    size_t total = 0;
    for (size_t k = 0; k < n; ++k) total += parts[k].size();
    py::list out(total);
    PyObject* list = out.ptr();
    size_t i = 0;
    for (size_t k = 0; k < n; ++k) {
        for (uint32_t id : parts[k]) {
            PyObject* value = shared_ints.get(id);
            if (value == nullptr) throw py::error_already_set();  // out of memory: out frees what is set
            PyList_SET_ITEM(list, i++, value);
        }
    }
    return out;
}

py::list parts_to_list(const std::vector<std::vector<uint32_t>>& parts) {
    return ids_to_list(parts.data(), parts.size());
}
py::list ids_to_list(const std::vector<uint32_t>& ids) { return ids_to_list(&ids, 1); }

// The smallest unsigned type that holds every id: uint16 up to 65,536 ids (the rule of
// bpe.encoding.array_dtype, which the Python side uses).
bool fits_uint16(size_t n_vocab) { return n_vocab <= 65536; }

// Ids, in consecutive parts, as one numpy array with no Python object per token.
// Each part is copied on a thread of its own, with the GIL released: the array is
// made before and returned after, as only a thread holding the GIL may touch
// reference counts.
template <class Id>
py::array parts_to_array(const std::vector<std::vector<uint32_t>>& parts) {
    std::vector<size_t> offsets{0};
    for (const auto& part : parts) offsets.push_back(offsets.back() + part.size());
    py::array_t<Id> out(offsets.back());
    Id* data = out.mutable_data();
    {
        GilReleased released;
        bpe::run_threads(parts.size(), [&](size_t k) { std::copy(parts[k].begin(), parts[k].end(), data + offsets[k]); });
    }
    return out;
}

py::array ids_to_array(const std::vector<std::vector<uint32_t>>& parts, size_t n_vocab) {
    return fits_uint16(n_vocab) ? parts_to_array<uint16_t>(parts) : parts_to_array<uint32_t>(parts);
}

// What every encode binding does once it holds the text's UTF-8: check the special
// tokens against allowed_special and disallowed_special, then encode on `workers`
// threads without the GIL. The ids come back in parts, one per thread.
std::vector<std::vector<uint32_t>> encode_text(const bpe::Encoder& encoder, std::string_view text,
                                               py::handle allowed_special, py::handle disallowed_special,
                                               unsigned workers) {
    SpecialChoice choice(encoder, allowed_special, disallowed_special);
    choice.check(encoder, text);
    bool check_signals = SignalCheck::wanted_for(text.size());
    GilReleased released;
    std::unique_ptr<bpe::Interrupt> interrupt = SignalCheck(released, check_signals).interrupt();
    return encoder.encode_parts(text, choice.allowed, workers, interrupt.get());
}

// Trains on what counter has counted, without the GIL. Every few hundred merges it
// checks for signals (a handler's exception, Ctrl-C's, stops training and is raised)
// and calls progress (unless None) with the merges made; its exception stops it too.
std::vector<bpe::Pair> train_counted(bpe::ChunkCounter& counter, long long num_merges, py::object progress) {
    bool check_signals = on_main_thread();
    GilReleased released;
    SignalCheck check(released, check_signals);
    std::function<bool(size_t)> report;
    if (check_signals || !progress.is_none())
        report = [&](size_t done) {
            check();
            if (!progress.is_none()) released.with_gil([&] { progress(done); });
            return true;
        };
    return bpe::train(counter, num_merges, report);
}

// ---- Counts as data ---------------------------------------------------------------
//
// A counter's counts cross processes as three buffers, not one Python object a chunk:
// the bytes of every distinct chunk end to end, int64 offsets (one more than the
// chunks: chunk k is bytes[offsets[k]:offsets[k + 1]]), and int64 counts.

// The warning add and add_counts give when keeping to the budget dropped chunks.
void warn_dropped(const bpe::ChunkCounter& counter, uint64_t dropped) {
    if (dropped == 0) return;
    std::string message =
        "training would pass max_memory (" + std::to_string(counter.max_memory()) + " bytes): dropped " +
        std::to_string(dropped) + " distinct chunks counted " + std::to_string(counter.pruned().threshold) +
        " times or fewer (" + std::to_string(counter.pruned().chunks) + " so far); the merges may differ "
        "from exact training (no max_memory)";
    if (PyErr_WarnEx(PyExc_RuntimeWarning, message.c_str(), 1) != 0) throw py::error_already_set();
}

py::tuple counts_to_buffers(const bpe::ChunkCounter& counter) {
    size_t n = counter.size(), total = 0;
    counter.for_each([&](std::string_view chunk, int64_t) { total += chunk.size(); });
    PyObject* made = PyBytes_FromStringAndSize(nullptr, Py_ssize_t(total));
    if (made == nullptr) throw py::error_already_set();
    py::bytes chunks = py::reinterpret_steal<py::bytes>(made);
    py::array_t<int64_t> offsets(n + 1), counts(n);
    char* out = PyBytes_AS_STRING(chunks.ptr());
    int64_t* offset = offsets.mutable_data();
    int64_t* count = counts.mutable_data();
    size_t at = 0, k = 0;
    offset[0] = 0;
    counter.for_each([&](std::string_view chunk, int64_t n) {
        std::memcpy(out + at, chunk.data(), chunk.size());
        at += chunk.size();
        offset[k + 1] = int64_t(at);
        count[k++] = n;
    });
    return py::make_tuple(chunks, offsets, counts);
}

// Adds counts given as buffers (see above) to counter, after checking all of them, so
// that a refused call adds nothing; a signal (Ctrl-C) stops it before it adds any
// either. `n` counts, n + 1 offsets.
uint64_t add_buffers(bpe::ChunkCounter& counter, std::string_view bytes, const int64_t* offsets, size_t n_offsets,
                     const int64_t* counts, size_t n, unsigned threads) {
    if (n_offsets != n + 1)
        throw py::value_error("offsets must hold one more than the counts (" + std::to_string(n + 1) + "), got " +
                              std::to_string(n_offsets));
    if (offsets[0] != 0) throw py::value_error("offsets must start at 0, got " + std::to_string(offsets[0]));
    if (offsets[n] != int64_t(bytes.size()))
        throw py::value_error("offsets must end at the length of the chunks' bytes (" + std::to_string(bytes.size()) +
                              "), got " + std::to_string(offsets[n]));
    // A count past 2^48 is far more than any corpus has chunks: refusing it keeps sums
    // of many counters from overflowing.
    constexpr int64_t kMaxCount = int64_t(1) << 48;
    std::vector<std::string_view> chunks(n);
    std::vector<int64_t> added(counts, counts + n);
    for (size_t k = 0; k < n; ++k) {
        if (offsets[k + 1] < offsets[k])
            throw py::value_error("offsets must not decrease: offsets[" + std::to_string(k + 1) + "] = " +
                                  std::to_string(offsets[k + 1]) + " < offsets[" + std::to_string(k) + "] = " +
                                  std::to_string(offsets[k]));
        if (counts[k] <= 0 || counts[k] > kMaxCount)
            throw py::value_error("each count must be from 1 to 2^48, got counts[" + std::to_string(k) + "] = " +
                                  std::to_string(counts[k]));
        chunks[k] = bytes.substr(size_t(offsets[k]), size_t(offsets[k + 1] - offsets[k]));
    }
    bool check_signals = SignalCheck::wanted_for(bytes.size() + sizeof(int64_t) * (n_offsets + n));  // the buffers
    GilReleased released;
    std::unique_ptr<bpe::Interrupt> interrupt = SignalCheck(released, check_signals).interrupt();
    return counter.add_counts(chunks, added, threads, interrupt.get());
}

// A counter's rule: its pattern's name and its special tokens, as str.
py::list special_tokens_of(const bpe::ChunkCounter& counter) {
    py::list tokens;
    for (const auto& [token, id] : counter.specials().tokens()) tokens.append(py::str(token));
    return tokens;
}

// Whether two counters cut and split texts alike, so that their counts may be added:
// ValueError if not. The specials' order does not matter to counting.
void check_same_rule(const bpe::ChunkCounter& self, const bpe::ChunkCounter& other) {
    if (self.pattern() != other.pattern())
        throw py::value_error(std::string("cannot merge counts of the pattern '") + bpe::pattern_name(other.pattern()) +
                              "' into a counter of the pattern '" + bpe::pattern_name(self.pattern()) + "'");
    std::vector<std::string> mine, theirs;
    for (const auto& token : self.specials().tokens()) mine.push_back(token.first);
    for (const auto& token : other.specials().tokens()) theirs.push_back(token.first);
    std::sort(mine.begin(), mine.end());
    std::sort(theirs.begin(), theirs.end());
    if (mine != theirs)
        throw py::value_error("cannot merge counts cut at the special tokens " +
                              std::string(py::repr(special_tokens_of(other))) + " into a counter cut at " +
                              std::string(py::repr(special_tokens_of(self))));
}

// The ids of each text, as lists, encoded on `threads` threads: what encode_batch does
// once it holds the texts.
py::list encode_each(const bpe::Encoder& self, const std::deque<Text>& args, py::handle allowed_special,
                     py::handle disallowed_special, py::handle threads) {
    SpecialChoice choice(self, allowed_special, disallowed_special);
    size_t total = 0;
    for (const auto& arg : args) {
        choice.check(self, arg.view);
        total += arg.view.size();
    }
    size_t workers = std::min<size_t>(thread_count(threads), std::max<size_t>(args.size(), 1));
    std::vector<std::vector<uint32_t>> ids(args.size());
    bool check_signals = SignalCheck::wanted_for(total);
    {
        GilReleased released;
        std::unique_ptr<bpe::Interrupt> interrupt = SignalCheck(released, check_signals).interrupt();
        // Thread k takes texts k, k + workers, ...: stories come in all lengths,
        // and dealing them out in turn evens out the work.
        bpe::run_threads(workers, [&](size_t k) {
            for (size_t i = k; i < args.size(); i += workers)
                ids[i] = self.encode(args[i].view, choice.allowed, 1, interrupt.get());
        });
    }
    py::list out(ids.size());
    for (size_t i = 0; i < ids.size(); ++i) out[i] = ids_to_list(ids[i]);
    return out;
}

}  // namespace

PYBIND11_MODULE(_core, m) {
    m.doc() = "The compiled core of bpe: byte-level BPE in C++. Texts in (bytes, or str read in place), ints "
              "out; see bpe.BPETokenizer for tiktoken's API on str.";
    m.attr("MAX_THREADS") = bpe::kMaxThreads;
    m.attr("MAX_ID") = bpe::kMaxId;

    // pybind11 looks numpy up on first use, and lets go of the GIL meanwhile, taking it back
    // in gil_scoped_release's destructor: a daemon thread's first encode_array as the
    // interpreter exits would end the process there (see take_gil). So it is looked up now.
    py::dtype::of<uint16_t>();

#if !defined(_WIN32)
    // A child forked while another thread held a cache's lock would wait for it forever
    // (encode_cache.h): after a fork, the child's caches start again.
    pthread_atfork(bpe::SharedCache::before_fork, bpe::SharedCache::after_fork_in_parent,
                   bpe::SharedCache::after_fork_in_child);
#endif

    // A thread that the system cannot start (out of memory or address space): a Python
    // exception that says so, instead of ending the process.
    py::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p) std::rethrow_exception(p);
        } catch (const std::system_error& e) {
            PyErr_SetString(PyExc_RuntimeError,
                            (std::string("could not start a thread (") + e.what() + "): ask for fewer threads").c_str());
        }
    });

    // The split's SIMD tier, chosen once, before any thread splits.
    const std::string tier_warning = bpe::simd::set_tier_from_environment(std::getenv("BPE_SIMD"));
    if (!tier_warning.empty() && PyErr_WarnEx(PyExc_RuntimeWarning, tier_warning.c_str(), 1) != 0)
        throw py::error_already_set();
    m.def(
        "simd_tier", [] { return std::string(bpe::simd::tier_name(bpe::simd::tier_in_use())); },
        "The SIMD tier the split runs in: 'portable' (a chunk at a time), 'sse2', 'avx2' or 'avx512' (64 bytes "
        "at a time). The best this CPU has, unless the environment variable BPE_SIMD named another at import.");
    m.def(
        "count_chunks",
        [](py::handle text, const std::string& pattern_name) {
            BytesArg arg(text, "text");
            bpe::Pattern pattern = bpe::parse_pattern(pattern_name);
            check_text_for(pattern, arg.view, "text");
            GilReleased released;
            return bpe::count_chunks(arg.view, pattern);
        },
        py::arg("text"), py::arg("pattern") = "default",
        "How many chunks pretokenize(text, pattern) would give, without making them: the split alone.");

    m.def(
        "pretokenize",
        [](py::handle text, const std::string& pattern_name) {
            BytesArg arg(text, "text");
            bpe::Pattern pattern = bpe::parse_pattern(pattern_name);
            check_text_for(pattern, arg.view, "text");
            std::vector<std::string_view> chunks;
            {
                GilReleased released;
                chunks = bpe::pretokenize(arg.view, pattern);
            }
            py::list out(chunks.size());
            for (size_t i = 0; i < chunks.size(); ++i)
                PyList_SET_ITEM(out.ptr(), i, py::bytes(chunks[i].data(), chunks[i].size()).release().ptr());
            return out;
        },
        py::arg("text"), py::arg("pattern") = "default",
        "Split text (bytes) into the chunks that merges never cross. pattern: 'default' (this project's "
        "rule, any bytes), 'gpt2' or 'gpt4' (GPT-2's and GPT-4's rules; valid UTF-8 only).");

    m.def(
        "lower_rank_splits",
        [](py::dict ranks, py::list tokens) {
            // References of our own to every key and token, so the views stay valid with the
            // GIL released whatever other threads do to the dict or the list.
            std::vector<py::object> owners;
            owners.reserve(ranks.size() + tokens.size());
            bpe::RankMap map;
            map.reserve(ranks.size());
            for (auto [key, value] : ranks) {
                if (!PyBytes_Check(key.ptr()) || !PyLong_Check(value.ptr()) || PyBool_Check(value.ptr()))
                    throw py::type_error("ranks must map bytes to int, got " + BytesArg::type_name(key) + ": " +
                                         BytesArg::type_name(value));
                int overflow = 0;
                long long rank = PyLong_AsLongLongAndOverflow(value.ptr(), &overflow);
                if (overflow != 0 || rank < 0)
                    throw py::value_error("a rank must be between 0 and 2**63 - 1, got " + std::string(py::repr(value)));
                owners.push_back(py::reinterpret_borrow<py::object>(key));
                map.emplace(std::string_view(PyBytes_AS_STRING(key.ptr()), size_t(PyBytes_GET_SIZE(key.ptr()))),
                            int64_t(rank));
            }
            std::vector<std::string_view> views;
            std::vector<int64_t> limits;
            for (py::handle token : tokens) {
                if (!PyBytes_Check(token.ptr())) throw py::type_error("tokens must be bytes, not " + BytesArg::type_name(token));
                std::string_view view(PyBytes_AS_STRING(token.ptr()), size_t(PyBytes_GET_SIZE(token.ptr())));
                auto it = map.find(view);
                if (it == map.end()) throw py::value_error("the token " + std::string(py::repr(token)) + " has no rank");
                owners.push_back(py::reinterpret_borrow<py::object>(token));
                views.push_back(view);
                limits.push_back(it->second);
            }
            std::vector<size_t> splits(views.size());
            {
                GilReleased released;
                for (size_t i = 0; i < views.size(); ++i) splits[i] = bpe::lower_rank_split(views[i], map, limits[i]);
            }
            return splits;
        },
        py::arg("ranks"), py::arg("tokens"),
        "For each token (bytes, a key of ranks), its bytes byte-pair encoded as tiktoken does with the ranks "
        "below its own: the length of the first part when that ends as two parts (the pair that made the "
        "token), else 0. O(n log n) for a token of n bytes (csrc/ranks.h).");

    m.def(
        "safe_cut",
        [](py::handle text, py::handle special_tokens, Py_ssize_t start, std::optional<Py_ssize_t> end, bool last) {
            if (!PyUnicode_Check(text.ptr())) throw py::type_error("text must be str, not " + BytesArg::type_name(text));
            if (start < 0 || (end && *end < 0)) throw py::value_error("start and end must be 0 or more");
            const StrCuts cuts(text, special_tokens_from_python(special_tokens));
            GilReleased released;
            if (last) return cuts.last(start, end.value_or(cuts.size()));
            Py_ssize_t cut = cuts.first(start);
            return cut < cuts.size() ? cut : 0;
        },
        py::arg("text"), py::arg("special_tokens") = py::none(), py::arg("start") = 0, py::arg("end") = py::none(),
        py::arg("last") = true,
        "Where a str may be cut so that its two pieces split into exactly the chunks of the whole, under "
        "every split pattern (csrc/split.h, is_safe_cut, says why): the last such place p with start <= p < end "
        "(or, with last=False, the first with start <= p), never inside one of special_tokens (a list of str). "
        "0 when there is none: p is never 0.");

    py::class_<bpe::ChunkCounter>(m, "ChunkCounter",
                                  "Counts the distinct chunks of texts as they stream in, for training: memory "
                                  "grows with the distinct chunks, not with the texts. No chunk crosses two texts "
                                  "or a special token.")
        .def(py::init([](py::handle pattern_arg, py::handle special_tokens, py::handle max_memory) {
                 bpe::Pattern pattern = pattern_from_python(pattern_arg);
                 std::vector<std::pair<std::string, uint32_t>> specials;
                 for (std::string& token : special_tokens_from_python(special_tokens)) specials.emplace_back(token, 0);
                 uint64_t budget = 0;
                 if (!max_memory.is_none())
                     budget = uint64_t(size_from_python(max_memory, "max_memory", 1, LLONG_MAX,
                                                        "a number of bytes above 0 (None: no budget)"));
                 auto counter = std::make_unique<bpe::ChunkCounter>(pattern, bpe::SpecialTokens(std::move(specials)));
                 counter->set_max_memory(budget);
                 return counter.release();
             }),
             py::arg("pattern") = "default", py::arg("special_tokens") = py::none(), py::arg("max_memory") = py::none(),
             "pattern: the split rule, as for pretokenize. special_tokens: a list of str, cut out of the texts "
             "and never counted. max_memory: a budget in bytes for the whole training run (None: none, and "
             "training is exact). Past it, add drops the rarest chunks, with a RuntimeWarning that says how "
             "many and below what count: the merges may then differ from exact training.")
        .def_property_readonly("max_memory", [](const bpe::ChunkCounter& self) -> py::object {
            if (self.max_memory() == 0) return py::none();
            return py::int_(self.max_memory());
        })
        .def_property_readonly("estimated_memory", &bpe::ChunkCounter::estimated_memory,
                               "What training on the counts so far would take at its peak, in bytes, from B (the "
                               "bytes of the distinct chunks), C (their number) and T (the count tables as "
                               "allocated): max(T + 4 (B + C), 20 B + 4 C).")
        .def_property_readonly(
            "pruned",
            [](const bpe::ChunkCounter& self) { return py::make_tuple(self.pruned().chunks, self.pruned().threshold); },
            "(distinct chunks dropped to keep to max_memory, the largest count of one dropped): (0, 0) when "
            "none was, and training is exact.")
        .def(
            "add",
            [](bpe::ChunkCounter& self, py::handle texts, py::handle threads) {
                unsigned workers = thread_count(threads);
                uint64_t dropped = 0;
                if (PyUnicode_Check(texts.ptr()) && !is_ascii(texts)) {
                    // One str that is not ASCII: made UTF-8 a stretch at a time, never whole.
                    dropped = add_str_in_pieces(self, texts, workers);
                } else {
                    // One text or a list of them, each a str read in place or bytes (Text).
                    PyObject* obj = texts.ptr();
                    const bool one = PyUnicode_Check(obj) || PyBytes_Check(obj) || PyByteArray_Check(obj) ||
                                     PyMemoryView_Check(obj);
                    std::deque<Text> args;
                    if (one)
                        args.emplace_back(texts, self.pattern());
                    else
                        args = texts_of(texts, self.pattern());
                    std::vector<std::string_view> views;
                    size_t total = 0;
                    for (const Text& text : args) {
                        views.push_back(text.view);
                        total += text.view.size();
                    }
                    bool check_signals = SignalCheck::wanted_for(total);
                    GilReleased released;
                    std::unique_ptr<bpe::Interrupt> interrupt = SignalCheck(released, check_signals).interrupt();
                    dropped = self.add(views, workers, interrupt.get());
                }
                warn_dropped(self, dropped);
            },
            py::arg("texts"), py::arg("threads") = 0,
            "Count the chunks of texts (one bytes object or str, or a list of them, each counted on its own), on "
            "`threads` threads (0: one per core). A str is read in place: an ASCII one with no copy; one other "
            "str is encoded to UTF-8 a piece of about 8 M characters at a time, cut where a chunk must end; a "
            "list's other strs are encoded for the call only.")
        .def_property_readonly("pattern", [](const bpe::ChunkCounter& self) { return bpe::pattern_name(self.pattern()); },
                               "The split rule's name.")
        .def_property_readonly("special_tokens", &special_tokens_of, "The special tokens (str) the texts are cut at.")
        .def("counts", &counts_to_buffers,
             "The distinct chunks and their counts, as (chunks, offsets, counts): the bytes of every chunk end to "
             "end, a numpy int64 array of offsets (one more than the chunks: chunk k is "
             "chunks[offsets[k]:offsets[k + 1]]) and a numpy int64 array of counts. The order is the counter's "
             "own. The counter keeps its counts.")
        .def(
            "add_counts",
            [](bpe::ChunkCounter& self, py::handle chunks, py::array_t<int64_t, py::array::c_style> offsets,
               py::array_t<int64_t, py::array::c_style> counts, py::handle threads) {
                BytesArg bytes(chunks, "chunks");
                if (offsets.ndim() != 1 || counts.ndim() != 1)
                    throw py::value_error("offsets and counts must be one-dimensional arrays");
                unsigned workers = thread_count(threads);
                warn_dropped(self, add_buffers(self, bytes.view, offsets.data(), size_t(offsets.size()),
                                               counts.data(), size_t(counts.size()), workers));
            },
            py::arg("chunks"), py::arg("offsets"), py::arg("counts"), py::arg("threads") = 0,
            "Add counts in the form counts() gives them (from a counter of the same pattern and special tokens: "
            "the buffers do not say which), on `threads` threads; then keep to max_memory as add does. "
            "ValueError for offsets that do not fit the bytes or a count below 1, and then nothing is added.")
        .def(
            "merge",
            [](bpe::ChunkCounter& self, const bpe::ChunkCounter& other, py::handle threads) {
                if (&self == &other) throw py::value_error("cannot merge a counter into itself");
                check_same_rule(self, other);
                unsigned workers = thread_count(threads);
                std::vector<std::string_view> chunks;
                std::vector<int64_t> counts;
                chunks.reserve(other.size()), counts.reserve(other.size());
                size_t total = 0;
                other.for_each([&](std::string_view chunk, int64_t n) {
                    chunks.push_back(chunk), counts.push_back(n);
                    total += chunk.size() + 2 * sizeof(int64_t);  // what it takes in counts()'s buffers
                });
                uint64_t dropped;
                {
                    bool check_signals = SignalCheck::wanted_for(total);
                    GilReleased released;
                    std::unique_ptr<bpe::Interrupt> interrupt = SignalCheck(released, check_signals).interrupt();
                    dropped = self.add_counts(chunks, counts, workers, interrupt.get());
                }
                self.note_pruned(other.pruned());
                warn_dropped(self, dropped);
            },
            py::arg("other"), py::arg("threads") = 0,
            "Add another counter's counts to this one's (the other keeps its own), then keep to max_memory as add "
            "does; what the other dropped is added to pruned. ValueError if the two differ in pattern or special "
            "tokens.")
        .def(py::pickle(
            [](const bpe::ChunkCounter& self) {
                py::tuple buffers = counts_to_buffers(self);
                py::object max_memory = self.max_memory() ? py::object(py::int_(self.max_memory())) : py::none();
                // The arrays as bytes, so that loading makes no numpy object from the pickle.
                return py::make_tuple(1, bpe::pattern_name(self.pattern()), special_tokens_of(self), max_memory,
                                      buffers[0], buffers[1].attr("tobytes")(), buffers[2].attr("tobytes")(),
                                      self.pruned().chunks, self.pruned().threshold);
            },
            [](py::tuple state) {
                if (state.size() != 9 || !py::isinstance<py::int_>(state[0]) || state[0].cast<int>() != 1)
                    throw py::value_error("not the state of a ChunkCounter of this version");
                std::vector<std::pair<std::string, uint32_t>> specials;
                for (std::string& token : special_tokens_from_python(state[2])) specials.emplace_back(token, 0);
                auto counter = std::make_unique<bpe::ChunkCounter>(bpe::parse_pattern(state[1].cast<std::string>()),
                                                                   bpe::SpecialTokens(std::move(specials)));
                BytesArg chunks(state[4], "the chunks"), offsets(state[5], "the offsets"), counts(state[6], "the counts");
                if (offsets.view.size() % 8 || counts.view.size() % 8)
                    throw py::value_error("a ChunkCounter's state holds int64 offsets and counts, not whole ones");
                std::vector<int64_t> offset(offsets.view.size() / 8 + (offsets.view.empty() ? 1 : 0), 0);
                std::vector<int64_t> count(counts.view.size() / 8);
                // memcpy with an empty vector's null data() is undefined even for 0 bytes.
                if (!offsets.view.empty()) std::memcpy(offset.data(), offsets.view.data(), offsets.view.size());
                if (!counts.view.empty()) std::memcpy(count.data(), counts.view.data(), counts.view.size());
                add_buffers(*counter, chunks.view, offset.data(), offset.size(), count.data(), count.size(), 1);
                // The budget after the counts, which were within it when saved: loading drops nothing.
                if (!state[3].is_none()) counter->set_max_memory(state[3].cast<uint64_t>());
                counter->note_pruned({state[7].cast<uint64_t>(), state[8].cast<int64_t>()});
                return counter.release();
            }))
        .def("__len__", [](const bpe::ChunkCounter& self) { return self.size(); },
             "How many distinct chunks have been counted.")
        .def(
            "train",
            [](bpe::ChunkCounter& self, py::handle num_merges_arg, py::object progress) {
                long long num_merges = num_merges_from_python(num_merges_arg);
                return train_counted(self, num_merges, progress);
            },
            py::arg("num_merges"), py::arg("progress") = py::none(),
            "Learn up to num_merges merges from the chunks counted; merge k makes token 256 + k. Stops early "
            "when no pair is left. The counts are used up: the counter is empty afterwards. progress, if "
            "given, is called with the number of merges made so far every few hundred merges.");

    m.def(
        "num_merges_for",
        [](py::handle vocab_size, size_t num_special_tokens) {
            long long smallest = 256 + (long long)num_special_tokens;
            std::string at_least = "at least " + std::to_string(smallest) + " (the 256 bytes and the " +
                                   std::to_string(num_special_tokens) + " special tokens)";
            return size_from_python(vocab_size, "vocab_size", smallest, smallest + kMaxMerges, at_least) - smallest;
        },
        py::arg("vocab_size"), py::arg("num_special_tokens"),
        "The merges that make a vocabulary of vocab_size tokens (an int: the 256 bytes, the merges and the "
        "special tokens); ValueError if it is out of range.");

    m.def(
        "train",
        [](py::handle text, py::handle num_merges_arg, const std::string& pattern_name, py::handle special_tokens,
           py::handle threads) {
            BytesArg arg(text, "text");
            long long num_merges = num_merges_from_python(num_merges_arg);
            unsigned workers = thread_count(threads);
            bpe::Pattern pattern = bpe::parse_pattern(pattern_name);
            std::vector<std::pair<std::string, uint32_t>> specials;
            for (std::string& token : special_tokens_from_python(special_tokens)) specials.emplace_back(token, 0);
            bpe::SpecialTokens cut(std::move(specials));
            check_text_for(pattern, arg.view, "text");
            bpe::ChunkCounter counter(pattern, std::move(cut));
            {
                bool check_signals = SignalCheck::wanted_for(arg.view.size());
                GilReleased released;
                std::unique_ptr<bpe::Interrupt> interrupt = SignalCheck(released, check_signals).interrupt();
                counter.add({arg.view}, workers, interrupt.get());
            }
            return train_counted(counter, num_merges, py::none());
        },
        py::arg("text"), py::arg("num_merges"), py::arg("pattern") = "default", py::arg("special_tokens") = py::none(),
        py::arg("threads") = 0,
        "Learn up to num_merges merges from text (bytes); merge k makes token 256 + k. Stops early when no "
        "pair is left. pattern: the split rule, as for pretokenize. special_tokens (a list of str) are cut out "
        "of the text first, so that no merge crosses or contains one. threads=0 counts chunks with one thread "
        "per core. The same as ChunkCounter(pattern, special_tokens).add(text) and then .train(num_merges).");

    py::class_<bpe::Encoder>(m, "Encoder",
                             "Encodes text (str or bytes) with merges and special tokens, keeping a cache of "
                             "chunks already encoded, and decodes ids back to bytes. Safe to use from several "
                             "threads at once.")
        .def(py::init([](py::handle merges_arg, py::handle pattern_arg, py::handle special_tokens_arg,
                         py::handle token_ids_arg) {
                 // One after the other, so that of several mistakes the first argument's is told.
                 bpe::Pattern pattern = pattern_from_python(pattern_arg);
                 std::vector<bpe::Pair> merges = merges_from_python(merges_arg);
                 std::vector<std::string> special_tokens = special_tokens_from_python(special_tokens_arg);
                 std::optional<std::vector<uint32_t>> token_ids = token_ids_from_python(token_ids_arg);
                 auto encoder = std::make_unique<bpe::Encoder>(std::move(merges), pattern, special_tokens,
                                                               std::move(token_ids));
                 // Ints for the ids up to n_vocab, unless the numbering is sparse (a few
                 // tokens with ids up to MAX_ID must not make a million ints).
                 size_t tokens = 256 + encoder->num_merges() + encoder->specials().size();
                 shared_ints.reserve(std::min(encoder->n_vocab(), 2 * tokens));
                 return encoder.release();
             }),
             py::arg("merges"), py::arg("pattern") = "default", py::arg("special_tokens") = py::none(),
             py::arg("token_ids") = py::none(),
             "merges: (a, b) pairs of ids (ints or numpy integers); merge k makes token 256 + k. pattern: the "
             "split rule, as for pretokenize. special_tokens: a list of str, numbered after the merges in that "
             "order. token_ids: the id of each token (the 256 bytes, the merges, the specials), when the "
             "vocabulary numbers them its own way (GPT-2 and GPT-4 shuffle the bytes); ids at most MAX_ID, all "
             "different, gaps allowed.")
        .def_property_readonly("pattern", [](const bpe::Encoder& self) { return bpe::pattern_name(self.pattern()); })
        .def_property_readonly("num_merges", &bpe::Encoder::num_merges)
        .def_property_readonly(
            "merges", [](const bpe::Encoder& self) { return self.merges(); },
            "The merges, as a list of (a, b) tuples of ints.")
        .def_property_readonly(
            "token_ids",
            [](const bpe::Encoder& self) -> py::object {
                if (self.token_ids().empty()) return py::none();  // token i is id i
                return py::cast(self.token_ids());
            },
            "The id of every token, as a list of ints, or None when token i has id i.")
        .def_property_readonly("n_vocab", &bpe::Encoder::n_vocab,
                               "One more than the largest id (more than the number of tokens if ids have gaps).")
        .def_property_readonly(
            "special_tokens",
            [](const bpe::Encoder& self) {
                py::dict out;
                for (const auto& [bytes, id] : self.specials().tokens()) out[py::str(bytes)] = id;
                return out;
            },
            "Each special token's id, in the order given.")
        .def(
            "encode",
            [](const bpe::Encoder& self, py::handle text, py::handle allowed_special, py::handle disallowed_special) {
                Text arg(text, self.pattern());
                return parts_to_list(encode_text(self, arg.view, allowed_special, disallowed_special, 1));
            },
            py::arg("text"), py::arg("allowed_special") = py::tuple(), py::arg("disallowed_special") = "all",
            "The token ids of text (a str, or bytes), as a list of ints. A str is read in place: an ASCII one "
            "with no copy, any other encoded to UTF-8 for the call only, leaving no copy on the str. As in "
            "tiktoken, a special token in the text becomes its id if allowed_special (\"all\" or a set of str) "
            "holds it, and raises ValueError if disallowed_special (\"all\": every one not allowed) does; "
            "otherwise it is ordinary text.")
        .def(
            "encode_array",
            [](const bpe::Encoder& self, py::handle text, py::handle allowed_special, py::handle disallowed_special,
               py::handle threads) {
                unsigned workers = thread_count(threads);
                Text arg(text, self.pattern(), "text", workers);
                return ids_to_array(encode_text(self, arg.view, allowed_special, disallowed_special, workers),
                                    self.n_vocab());
            },
            py::arg("text"), py::arg("allowed_special") = py::tuple(), py::arg("disallowed_special") = "all",
            py::arg("threads") = 0,
            "As encode, as a numpy array (uint16 when n_vocab is 65,536 or less, else uint32), encoded on "
            "`threads` threads (0: one per core).")
        .def(
            "count",
            [](const bpe::Encoder& self, py::handle text, py::handle allowed_special, py::handle disallowed_special,
               py::handle threads) {
                unsigned workers = thread_count(threads);
                Text arg(text, self.pattern(), "text", workers);
                size_t total = 0;
                for (const auto& part : encode_text(self, arg.view, allowed_special, disallowed_special, workers))
                    total += part.size();
                return total;
            },
            py::arg("text"), py::arg("allowed_special") = py::tuple(), py::arg("disallowed_special") = "all",
            py::arg("threads") = 0,
            "How many ids encode gives for text, on `threads` threads (0: one per core), with no Python int or "
            "list made for them.")
        .def(
            "encode_with_offsets",
            [](const bpe::Encoder& self, py::handle text, py::handle allowed_special, py::handle disallowed_special) {
                StrArg arg(text);  // offsets count characters: a str only
                SpecialChoice choice(self, allowed_special, disallowed_special);
                choice.check(self, arg.view);
                std::vector<uint32_t> ids;
                bool check_signals = SignalCheck::wanted_for(arg.view.size());
                {
                    GilReleased released;
                    std::unique_ptr<bpe::Interrupt> interrupt = SignalCheck(released, check_signals).interrupt();
                    ids = self.encode(arg.view, choice.allowed, 1, interrupt.get());
                }
                // Spans as a numpy array of shape (n, 2), start and end in each row: no
                // Python object per token. (A list of (start, end) tuples cost three
                // objects a token, and made this a fifth of encode's speed on stories.)
                py::array_t<int64_t> spans({py::ssize_t(ids.size()), py::ssize_t(2)});
                int64_t* data = spans.mutable_data();
                {
                    GilReleased released;
                    self.char_spans(arg.view, ids, data);
                }
                return py::make_tuple(ids_to_list(ids), spans);
            },
            py::arg("text"), py::arg("allowed_special") = py::tuple(), py::arg("disallowed_special") = "all",
            "As encode, for a str, and each token's span in its characters, as a numpy array of shape (n, 2) "
            "of int64 (start, end): a token that begins or ends inside a character gets that whole character "
            "(Hugging Face's offsets).")
        .def(
            "encode_batch",
            [](const bpe::Encoder& self, py::handle texts, py::handle allowed_special, py::handle disallowed_special,
               py::handle threads) {
                return encode_each(self, texts_of(texts, self.pattern()), allowed_special, disallowed_special, threads);
            },
            py::arg("texts"), py::arg("allowed_special") = py::tuple(), py::arg("disallowed_special") = "all",
            py::arg("threads") = 0,
            "The token ids of each text of a list (all str, or all bytes), as encode gives them, encoded on "
            "`threads` threads (0: one per core).")
        .def(
            "decode_bytes",
            [](const bpe::Encoder& self, py::handle ids) {
                std::vector<uint32_t> checked = ids_for_decoding(self, ids);
                std::string out;
                {
                    GilReleased released;
                    out = self.decode(checked.data(), checked.size());
                }
                return py::bytes(out);
            },
            py::arg("ids"),
            "The bytes that ids (a list of ints or a numpy array) stand for, joined; a special token gives "
            "its text. ValueError names an id that is no token's.")
        .def(
            "decode_single_token_bytes",
            [](const bpe::Encoder& self, py::handle id) {
                py::int_ value = index_from_python(id, "a token id");
                std::vector<uint32_t> checked = ids_for_decoding(self, py::make_tuple(value));
                std::string_view bytes = self.token_bytes(checked[0]);
                return py::bytes(bytes.data(), bytes.size());
            },
            py::arg("id"), "The bytes of one token.");
}
