// Texts from Python: bytes (or a buffer of bytes) and str, read in place where they can
// be, as UTF-8 views that stay valid with the GIL released. A str that is not ASCII is
// made UTF-8 for the call only (its one scan and one writer are here), on several
// threads when long; a lone surrogate is refused with one message wherever a str is
// read. Also where a str may be cut (StrCuts), for counting a long one in pieces.
// Included by _core.cpp only.
#pragma once

#include <pybind11/pybind11.h>

#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "parallel.h"
#include "py_args.h"
#include "py_gil.h"
#include "split.h"

namespace bindings {

namespace py = pybind11;

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
};

// Whether a str is ASCII (a flag CPython keeps: no scan).
inline bool is_ascii(py::handle str) {
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(str.ptr()) != 0) throw py::error_already_set();  // a str made by the old C API
#endif
    return PyUnicode_IS_ASCII(str.ptr());
}

// A str that UTF-8 cannot hold: the one message for it, wherever a str is read.
// `what` names the str: the text, or a special token.
[[noreturn]] inline void throw_lone_surrogate(Py_ssize_t position, const std::string& what = "text") {
    throw py::value_error(what + " cannot be encoded as UTF-8: a lone surrogate at position " + std::to_string(position));
}

// --- a str's UTF-8: one scan, one writer ------------------------------------------------
//
// The core works on UTF-8; a str holds its characters in one of three widths (its
// PyUnicode kind). A str that is not ASCII goes through the two functions below:
// utf8_size, the one scan, which also finds a lone surrogate (a character UTF-8 cannot
// hold), and write_utf8, the one writer of ours (on threads, and piece by piece), or
// CPython's encoder for a whole str on one thread (str_utf8). PyUnicode_AsUTF8AndSize
// would cache a copy on the str for as long as it lives (a 57 MB CJK text grew to
// 143 MB), so none is left.

// The bytes of the UTF-8 of characters [begin, end), or, with a lone surrogate at
// position p, -1 - p. Without branches, so that the compiler makes it SIMD.
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

// The UTF-8 of characters [begin, end), which hold no lone surrogate, written at `out`
// (utf8_size bytes of it).
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

// A str's characters, read in place: needs no GIL once made, since a str never changes.
struct StrChars {
    int kind;
    const void* data;
    Py_ssize_t size;

    explicit StrChars(py::handle str) {
        is_ascii(str);  // made ready, under Python 3.11
        kind = PyUnicode_KIND(str.ptr());
        data = PyUnicode_DATA(str.ptr());
        size = PyUnicode_GET_LENGTH(str.ptr());
    }

    // f(chars, begin, end), with chars typed as the str's kind.
    template <class F>
    auto with_chars(Py_ssize_t begin, Py_ssize_t end, F&& f) const {
        switch (kind) {
            case PyUnicode_1BYTE_KIND: return f(static_cast<const Py_UCS1*>(data), begin, end);
            case PyUnicode_2BYTE_KIND: return f(static_cast<const Py_UCS2*>(data), begin, end);
            default: return f(static_cast<const Py_UCS4*>(data), begin, end);
        }
    }

    int64_t utf8_size(Py_ssize_t begin, Py_ssize_t end) const {
        return with_chars(begin, end, [](auto chars, Py_ssize_t b, Py_ssize_t e) { return bindings::utf8_size(chars, b, e); });
    }

    void write_utf8(Py_ssize_t begin, Py_ssize_t end, char* out) const {
        with_chars(begin, end, [out](auto chars, Py_ssize_t b, Py_ssize_t e) { bindings::write_utf8(chars, b, e, out); });
    }

    // Appends the UTF-8 of characters [begin, end) to out; returns the position of a
    // lone surrogate among them (and appends nothing), or -1.
    Py_ssize_t append_utf8(Py_ssize_t begin, Py_ssize_t end, std::string& out) const {
        int64_t bytes = utf8_size(begin, end);
        if (bytes < 0) return Py_ssize_t(-1 - bytes);
        size_t at = out.size();
        out.resize(at + size_t(bytes));
        write_utf8(begin, end, out.data() + at);
        return -1;
    }
};

// The UTF-8 bytes of a str: an ASCII str is its own UTF-8 and is read in place; any
// other is encoded by CPython (whose encoder runs over ASCII stretches a word at a time:
// on Python source with a few non-ASCII characters, ours made encode 1.15 times as
// slow) into a bytes object of our own (`keep`), freed when the call is done, leaving
// no copy on the str. A lone surrogate is a ValueError that names `what` and says where.
inline std::string_view str_utf8(py::handle obj, py::object& keep, const std::string& what = "text") {
    if (is_ascii(obj))
        return std::string_view(static_cast<const char*>(PyUnicode_DATA(obj.ptr())), size_t(PyUnicode_GET_LENGTH(obj.ptr())));
    PyObject* bytes = PyUnicode_AsUTF8String(obj.ptr());
    if (bytes == nullptr) {
        if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) throw py::error_already_set();  // out of memory
        PyErr_Clear();
        const StrChars chars(obj);
        throw_lone_surrogate(Py_ssize_t(-1 - chars.utf8_size(0, chars.size)), what);  // where: the one scan says
    }
    keep = py::reinterpret_steal<py::object>(bytes);
    return std::string_view(PyBytes_AS_STRING(bytes), size_t(PyBytes_GET_SIZE(bytes)));
}

// The UTF-8 of a str that is not ASCII, made on `workers` threads into `out` without
// the GIL: each thread measures its share of the characters, then writes it at its
// place. Encoding on several threads while one thread made the UTF-8 of the whole str
// first: that one thread's part was a quarter of the time of two threads' call, and
// two threads ran 1.2 times as fast as one, not 1.8.
inline std::string_view str_utf8_on_threads(py::handle obj, std::unique_ptr<char[]>& out, unsigned workers) {
    const StrChars chars(obj);
    std::vector<Py_ssize_t> bounds(workers + 1);
    for (unsigned k = 0; k <= workers; ++k) bounds[k] = Py_ssize_t(int64_t(chars.size) * k / workers);
    std::vector<int64_t> sizes(workers);
    {
        GilReleased released;
        bpe::run_threads(workers, [&](size_t k) { sizes[k] = chars.utf8_size(bounds[k], bounds[k + 1]); });
    }
    std::vector<int64_t> offsets{0};
    for (int64_t size : sizes) {
        if (size < 0) throw_lone_surrogate(Py_ssize_t(-1 - size));
        offsets.push_back(offsets.back() + size);
    }
    out.reset(new char[size_t(offsets.back()) + 1]);  // not zeroed: the threads write every byte
    {
        GilReleased released;
        bpe::run_threads(workers, [&](size_t k) { chars.write_utf8(bounds[k], bounds[k + 1], out.get() + offsets[k]); });
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
            throw py::type_error("text must be str, not " + type_name(obj));
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

// gpt2 and gpt4 split characters, so their text must be valid UTF-8.
inline void check_text_for(bpe::Pattern pattern, std::string_view text, const char* what) {
    if (pattern != bpe::Pattern::kDefault && !bpe::is_valid_utf8(text))
        throw py::value_error(std::string(what) + " is not valid UTF-8, which the '" + bpe::pattern_name(pattern) +
                              "' split pattern needs (the 'default' pattern takes any bytes)");
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
            throw py::type_error(std::string(what) + " must be str or bytes, not " + type_name(obj));
        }
    }
    Text(const Text&) = delete;
    Text& operator=(const Text&) = delete;
};

// Texts from Python for encode_batch: a sequence (not one str or bytes) of texts of one
// type, str or bytes, as the first is: a mix is more likely a mistake than a wish.
inline std::deque<Text> texts_of(py::handle texts, bpe::Pattern pattern) {
    if (!is_sequence_of_items(texts))
        throw py::type_error("texts must be a list of str or a list of bytes, not " + type_name(texts));
    std::deque<Text> args;
    for (py::handle text : py::reinterpret_borrow<py::sequence>(texts)) {
        if (!args.empty() && args.front().str.has_value() != bool(PyUnicode_Check(text.ptr())))
            throw py::type_error("text " + std::to_string(args.size()) + " must be " +
                                 (args.front().str ? "str" : "bytes") + ", not " + type_name(text) +
                                 ", as the first text is");
        args.emplace_back(text, pattern, "a text");
    }
    return args;
}

// A str as UTF-8 bytes; a lone surrogate (which UTF-8 cannot hold) is a ValueError
// that names the str as `what`.
inline std::string utf8_of(py::handle str, const std::string& what) {
    py::object keep;
    return std::string(str_utf8(str, keep, what));
}

}  // namespace bindings
