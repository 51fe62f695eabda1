// Texts from Python: bytes (or a buffer of bytes) and str, read in place where they can
// be, as UTF-8 views that stay valid with the GIL released. A str without UTF-8 of its
// own is written as UTF-8 for the call only (its one writer is here), into a buffer
// the thread reuses, on several threads when long; a batch of texts is read once for
// the whole batch; a lone surrogate is refused with one message wherever a str is
// read. Also where a str may be cut (StrCuts), for counting a long one in pieces.
// Included by _core.cpp only.
#pragma once

#include <pybind11/pybind11.h>

#if !defined(_WIN32)
#include <pthread.h>
#endif

#include <algorithm>
#include <atomic>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "parallel.h"
#include "py_args.h"
#include "py_gil.h"
#include "special.h"
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

// --- a str's UTF-8: read in place, or written once ---------------------------------------
//
// The core works on UTF-8; a str holds its characters in one of three widths (its
// PyUnicode kind). An ASCII str is its own UTF-8, and a str whose UTF-8 CPython has
// already made (PyUnicode_AsUTF8 keeps it on the str) holds it: both are read in place
// (utf8_in_place). Any other str is written as UTF-8 for the call only, by one writer
// (transcode_utf8), into a buffer the process keeps for the next call (Utf8Buffer):
// PyUnicode_AsUTF8AndSize would leave a copy on the str for as long as it lives (a
// 57 MB CJK text grew to 143 MB), so none is left. utf8_size is the scan that sizes a
// str's UTF-8 before threads write its pieces at their places.

// The UTF-8 of a str that already has it, read in place, or nothing.
inline std::optional<std::string_view> utf8_in_place(py::handle str) {
    PyObject* obj = str.ptr();
    if (is_ascii(str))
        return std::string_view(static_cast<const char*>(PyUnicode_DATA(obj)), size_t(PyUnicode_GET_LENGTH(obj)));
#if !defined(Py_LIMITED_API)
    // Every str that is not ASCII starts with this struct (compact or not), in 3.9 to 3.14.
    const auto* compact = reinterpret_cast<const PyCompactUnicodeObject*>(obj);
    if (compact->utf8 != nullptr) return std::string_view(compact->utf8, size_t(compact->utf8_length));
#endif
    return std::nullopt;
}

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

// In a 64-bit word of characters (1, 2 or 4 bytes each), the bits that only a
// character >= 0x80 sets.
template <class Char>
constexpr uint64_t not_ascii_bits() {
    constexpr unsigned kBits = 8 * sizeof(Char);
    uint64_t word = 0;
    for (unsigned k = 0; k < 64; k += kBits) word |= (((uint64_t(1) << kBits) - 1) & ~uint64_t(0x7f)) << k;
    return word;
}

#if defined(BPE_X86_TIERS)
// transcode_utf8's blocks of 32 characters from i on, while they are ASCII, each tested
// and narrowed in AVX-512 registers: where the first block that is not (or the last
// part-block) starts. Two-byte characters, 32 to a register:
BPE_AVX512 inline Py_ssize_t ascii_blocks_avx512(const uint16_t* chars, Py_ssize_t i, Py_ssize_t end, char*& out) {
    for (; end - i >= 32; i += 32, out += 32) {
        const __m512i v = _mm512_loadu_si512(chars + i);
        if (_mm512_test_epi16_mask(v, _mm512_set1_epi16(short(0xff80)))) break;
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), _mm512_maskz_cvtepi16_epi8(~__mmask32(0), v));
    }
    return i;
}
// and four-byte characters, 16 to a register.
BPE_AVX512 inline Py_ssize_t ascii_blocks_avx512(const uint32_t* chars, Py_ssize_t i, Py_ssize_t end, char*& out) {
    for (; end - i >= 32; i += 32, out += 32) {
        const __m512i a = _mm512_loadu_si512(chars + i), b = _mm512_loadu_si512(chars + i + 16);
        if (_mm512_test_epi32_mask(_mm512_or_si512(a, b), _mm512_set1_epi32(int(0xffffff80)))) break;
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm512_maskz_cvtepi32_epi8(~__mmask16(0), a));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 16), _mm512_maskz_cvtepi32_epi8(~__mmask16(0), b));
    }
    return i;
}
#endif

// The UTF-8 of characters [begin, end), written at `out` (room for StrChars::max_utf8),
// in one pass: the bytes written, or, at a lone surrogate at position p,
// -1 - p. Most of a text in a Latin script, and all but a few characters of source
// code, is ASCII: a block of 32 characters is tested as 64-bit words ORed together
// (no widening of each character, no sum across SIMD lanes) and narrowed to bytes at
// once, which the compiler makes SIMD, or, in the AVX-512 tier, runs of such blocks of
// wider characters go through its registers (ascii_blocks_avx512); a block that is not
// all ASCII is written a character at a time.
template <class Char>
int64_t transcode_utf8(const Char* chars, Py_ssize_t begin, Py_ssize_t end, char* out) {
    constexpr Py_ssize_t kBlock = 32;
    char* const start = out;
#if defined(BPE_X86_TIERS)
    static const bool avx512 = bpe::simd::avx512_in_use();
#endif
    for (Py_ssize_t i = begin; i < end;) {
#if defined(BPE_X86_TIERS)
        if constexpr (sizeof(Char) > 1) {
            if (avx512) {
                i = ascii_blocks_avx512(chars, i, end, out);
                if (i == end) break;
            }
        }
#endif
        if (end - i >= kBlock) {
            uint64_t any = 0;
            for (size_t w = 0; w < kBlock * sizeof(Char) / 8; ++w) {
                uint64_t word;
                std::memcpy(&word, reinterpret_cast<const char*>(chars + i) + 8 * w, 8);
                any |= word;
            }
            if ((any & not_ascii_bits<Char>()) == 0) {
                for (Py_ssize_t j = 0; j < kBlock; ++j) out[j] = char(chars[i + j]);
                out += kBlock, i += kBlock;
                continue;
            }
        }
        for (const Py_ssize_t stop = std::min(end, i + kBlock); i < stop; ++i) {
            uint32_t c = chars[i];
            if (c < 0x80) {
                *out++ = char(c);
            } else if (c < 0x800) {
                *out++ = char(0xc0 | (c >> 6)), *out++ = char(0x80 | (c & 0x3f));
            } else if (c < 0x10000) {
                if (c - 0xd800 < 0x800) return -1 - int64_t(i);
                *out++ = char(0xe0 | (c >> 12)), *out++ = char(0x80 | ((c >> 6) & 0x3f)), *out++ = char(0x80 | (c & 0x3f));
            } else {
                *out++ = char(0xf0 | (c >> 18)), *out++ = char(0x80 | ((c >> 12) & 0x3f));
                *out++ = char(0x80 | ((c >> 6) & 0x3f)), *out++ = char(0x80 | (c & 0x3f));
            }
        }
    }
    return out - start;
}

// Room for a str's UTF-8, lent from one buffer the process keeps between calls, so
// that a call on a str that is not ASCII neither maps nor faults in fresh pages. One
// call borrows it at a time; a call meanwhile (on another Python thread, or a signal
// handler's call inside a call) gets room of its own. Only the pages written are held
// in memory (the room is sized for the worst case, StrChars::max_utf8, and mostly never
// touched), so the buffer is freed after a call that wrote more than kKept bytes into
// it: between calls the process holds at most kKept bytes of it.
class Utf8Buffer {
public:
    static constexpr size_t kKept = size_t(64) << 20;

    explicit Utf8Buffer(size_t bytes) : wrote_(bytes) {
        Kept& kept = kept_buffer();
        if (!kept.lent.exchange(true, std::memory_order_acquire)) {
            if (kept.size < bytes) {
                const size_t size = std::max(bytes, std::min(2 * kept.size, kKept));
                kept.data.reset();  // freed first: the old and the new are not both held
                kept.size = 0;
                try {
                    kept.data.reset(new char[size]);  // not zeroed: written before read
                } catch (...) {  // no room: nothing is lent, and the next call may try again
                    kept.lent.store(false, std::memory_order_release);
                    throw;
                }
                kept.size = size;
            }
#if !defined(_WIN32)
            kept.borrower = pthread_self();
#endif
            lent_ = &kept;
            data_ = kept.data.get();
        } else {
            own_.reset(new char[bytes]);
            data_ = own_.get();
        }
    }
    ~Utf8Buffer() {
        if (!lent_) return;
        if (wrote_ > kKept) {
            lent_->data.reset();
            lent_->size = 0;
        }
        lent_->lent.store(false, std::memory_order_release);
    }
    Utf8Buffer(const Utf8Buffer&) = delete;
    Utf8Buffer& operator=(const Utf8Buffer&) = delete;

    char* data() const { return data_; }

    // How many bytes were written (until told, all the room asked for is taken as written).
    void wrote(size_t bytes) { wrote_ = bytes; }

#if !defined(_WIN32)
    // In a forked child only the forking thread is left: a call on another thread that
    // had the buffer will never hand it back, so the child takes it back. The forking
    // thread's own call (a signal handler's fork inside it) still has it.
    static void after_fork_in_child() {
        Kept& kept = kept_buffer();
        if (kept.lent.load(std::memory_order_relaxed) && !pthread_equal(kept.borrower, pthread_self()))
            kept.lent.store(false, std::memory_order_relaxed);
    }
#endif

private:
    struct Kept {
        std::unique_ptr<char[]> data;
        size_t size = 0;
        std::atomic<bool> lent{false};  // a flag, not a lock: a call that finds it taken makes its own room
#if !defined(_WIN32)
        pthread_t borrower{};  // written by the call that has the buffer, read after a fork
#endif
    };
    // Never destroyed: a daemon thread may still be encoding from it while the process
    // runs its static destructors at exit.
    static Kept& kept_buffer() {
        static Kept& kept = *new Kept;
        return kept;
    }

    Kept* lent_ = nullptr;
    std::unique_ptr<char[]> own_;
    char* data_;
    size_t wrote_;
};

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

    // The UTF-8 of characters [begin, end) at `out` (room for max_utf8 bytes), as
    // transcode_utf8 writes it: the bytes written, or -1 - the position of a lone surrogate.
    int64_t write_utf8(Py_ssize_t begin, Py_ssize_t end, char* out) const {
        return with_chars(begin, end, [out](auto chars, Py_ssize_t b, Py_ssize_t e) { return transcode_utf8(chars, b, e, out); });
    }

    // Room for the UTF-8 of `n` of these characters.
    size_t max_utf8(Py_ssize_t n) const {
        return size_t(n) * (kind == PyUnicode_1BYTE_KIND ? 2 : kind == PyUnicode_2BYTE_KIND ? 3 : 4);
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

// A str's UTF-8 for the call, valid while `buffer` lives: read in place where the str
// has it (utf8_in_place), or else written into a Utf8Buffer made in `buffer`. A lone
// surrogate is a ValueError that names `what` and says where.
inline std::string_view str_utf8(py::handle obj, std::optional<Utf8Buffer>& buffer, const std::string& what = "text") {
    if (std::optional<std::string_view> view = utf8_in_place(obj)) return *view;
    const StrChars chars(obj);
    char* out = buffer.emplace(chars.max_utf8(chars.size)).data();
    int64_t bytes = chars.write_utf8(0, chars.size, out);
    if (bytes < 0) throw_lone_surrogate(Py_ssize_t(-1 - bytes), what);
    buffer->wrote(size_t(bytes));
    return std::string_view(out, size_t(bytes));
}

// The UTF-8 of a str that is not ASCII, made on `workers` threads into `out` without
// the GIL: each thread measures its share of the characters, then writes it at its
// place: made on one thread first, the UTF-8 held back every thread that encodes it.
inline std::string_view str_utf8_on_threads(py::handle obj, std::optional<Utf8Buffer>& buffer, unsigned workers) {
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
    char* out = buffer.emplace(size_t(offsets.back()) + 1).data();  // the threads write every byte
    buffer->wrote(size_t(offsets.back()));
    {
        GilReleased released;
        bpe::run_threads(workers, [&](size_t k) { chars.write_utf8(bounds[k], bounds[k + 1], out + offsets[k]); });
    }
    return std::string_view(out, size_t(offsets.back()));
}


// A long str: from here on, its UTF-8 is written on the call's threads (StrArg), or a
// piece at a time on the threads that encode it (StrPieces in _core.cpp: encode_array
// and count). Below a megabyte of characters, starting threads for the UTF-8 alone
// costs more than it saves: writing it goes many times faster than encoding it.
inline constexpr Py_ssize_t kLongStr = 1 << 20;

// The most characters of a piece of a str that a thread makes UTF-8 and then encodes or
// counts while it is in the cache (StrPieces and add_str_in_pieces in _core.cpp).
inline constexpr Py_ssize_t kStrPiece = 1 << 18;

// A str's UTF-8 (str_utf8), valid while this lives. A long str that must be written as
// UTF-8 is written on as many threads as the call encodes on (`threads`, as asked:
// bpe::threads_for), by str_utf8_on_threads.
struct StrArg {
    py::object owner;
    std::optional<Utf8Buffer> utf8;
    std::string_view view;

    explicit StrArg(py::handle obj, unsigned threads = 1) : owner(py::reinterpret_borrow<py::object>(obj)) {
        if (!PyUnicode_Check(obj.ptr()))
            throw py::type_error("text must be str, not " + type_name(obj));
        const Py_ssize_t length = PyUnicode_GET_LENGTH(obj.ptr());
        const unsigned workers = bpe::threads_for(size_t(length), threads);
        if (workers > 1 && length >= kLongStr && !utf8_in_place(obj))
            view = str_utf8_on_threads(obj, utf8, workers);
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
    // The special tokens of an encoder or a counter.
    StrCuts(py::handle text, const bpe::SpecialTokens& specials) : StrCuts(text, texts(specials)) {}

    Py_ssize_t size() const { return size_; }

    // Whether the str may be cut before character `cut` (0 < cut < size()).
    bool safe(Py_ssize_t cut) const { return bpe::is_safe_cut_between(at(cut - 1), at(cut)) && !across(cut); }

    // The first safe cut at or after `from` (at least 1), or size() when there is none.
    Py_ssize_t first(Py_ssize_t from) const {
        Py_ssize_t cut = std::max<Py_ssize_t>(from, 1);
        while (cut < size_ && !safe(cut)) ++cut;
        return std::min(cut, size_);
    }

    // Where the pieces of a str cut about every `size` characters begin, and its end
    // (piece p: characters [at[p], at[p + 1])): each piece ends at the first safe cut
    // `size` characters or more from its start, so one with no place to cut runs on.
    std::vector<Py_ssize_t> pieces(Py_ssize_t size) const {
        std::vector<Py_ssize_t> at{0};
        for (Py_ssize_t start = 0; start < size_;) {
            start = size_ - start > size ? first(start + size) : size_;
            at.push_back(start);
        }
        return at;
    }

    // The last safe cut in [from, end), or 0 when there is none.
    Py_ssize_t last(Py_ssize_t from, Py_ssize_t end) const {
        from = std::max<Py_ssize_t>(from, 1);
        for (Py_ssize_t cut = std::min(end, size_) - 1; cut >= from; --cut)
            if (safe(cut)) return cut;
        return 0;
    }

private:
    static std::vector<std::string> texts(const bpe::SpecialTokens& specials) {
        std::vector<std::string> out;
        for (const auto& [token, id] : specials.tokens()) out.push_back(token);
        return out;
    }

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

// The rule a text must suit under a tokenizer.json's rules: valid UTF-8, as their
// normalizer and steps read characters. check_text_for knows it by its address, so that
// its message names the rules, not a pattern the encoder was never given.
inline const bpe::SplitRule& rules_text_rule() {
    static const bpe::SplitRule utf8(bpe::Pattern::kGpt2);
    return utf8;
}

// gpt2, gpt4 and patterns given as regexes split characters, so their text must be
// valid UTF-8.
inline void check_text_for(const bpe::SplitRule& pattern, std::string_view text, const char* what) {
    if (!pattern.needs_utf8() || bpe::is_valid_utf8(text)) return;
    if (&pattern == &rules_text_rule())
        throw py::value_error(std::string(what) + " is not valid UTF-8, which the tokenizer.json's rules need");
    throw py::value_error(std::string(what) + " is not valid UTF-8, which the '" + bpe::pattern_name(pattern) +
                          "' split pattern needs (the 'default' pattern takes any bytes)");
}

// A text from Python for the calls that encode: a str, read in place as StrArg reads
// it (an ASCII str with no copy, any other made UTF-8 for the call only, on the call's
// `threads` when long), or bytes, read as BytesArg reads them (a bytearray or a
// memoryview is copied first), which must suit the pattern (check_text_for; a str's
// UTF-8 always does). One type for both, so that each call is written once. It never
// moves (its view may point into itself), so keep several of them in a std::deque.
struct Text {
    std::optional<StrArg> str;
    std::optional<BytesArg> bytes;
    std::string_view view;

    Text(py::handle obj, const bpe::SplitRule& pattern, const char* what = "text", unsigned threads = 1) {
        if (PyUnicode_Check(obj.ptr())) {
            view = str.emplace(obj, threads).view;
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

// Texts from Python for the calls that take many (encode_batch, a counter's add): a
// sequence (not one str or bytes) of texts of one type, str or bytes, as the first is
// (a mix is more likely a mistake than a wish), read once for the whole batch, so that
// a document costs a view and no object of its own. The texts are held in a tuple of
// our own: a list that another thread changes while the GIL is released cannot free a
// text under us. A str is read in place where it can be (utf8_in_place); the others
// are written as UTF-8 into one buffer for the batch. Bytes are read in place and must
// suit the pattern (check_text_for); a bytearray or memoryview is copied first. Each
// mistake's message names the text by its place in the batch.
class TextBatch {
public:
    TextBatch(py::handle texts, const bpe::SplitRule& pattern) {
        if (!is_sequence_of_items(texts))
            throw py::type_error("texts must be a list of str or a list of bytes, not " + type_name(texts));
        PyObject* tuple = held_items(texts.ptr());
        if (tuple == nullptr) throw py::error_already_set();
        items_ = py::reinterpret_steal<py::object>(tuple);
        const size_t n = size_t(PyTuple_GET_SIZE(tuple));
        views_.resize(n);
        const bool strs = n > 0 && PyUnicode_Check(PyTuple_GET_ITEM(tuple, 0));
        std::vector<size_t> unwritten;  // strs that need their UTF-8 written
        size_t room = 0;
        for (size_t i = 0; i < n; ++i) {
            PyObject* item = PyTuple_GET_ITEM(tuple, Py_ssize_t(i));
            // The object kReadAhead on asked for, its type and its state: the tuple's
            // making read each one already, but thousands later they are out of the cache.
            if (i + kReadAhead < n) {
                const char* next = reinterpret_cast<const char*>(PyTuple_GET_ITEM(tuple, Py_ssize_t(i + kReadAhead)));
                bpe::prefetch(next);
                bpe::prefetch(next + 32);
            }
            auto what = [i] { return "text " + std::to_string(i); };
            if (bool(PyUnicode_Check(item)) != strs)
                throw py::type_error(what() + " must be " + (strs ? "str" : "bytes") + ", not " + type_name(item) +
                                     ", as the first text is");
            if (strs) {
                if (std::optional<std::string_view> view = utf8_in_place(item)) {
                    views_[i] = *view;
                } else {
                    unwritten.push_back(i);
                    room += StrChars(item).max_utf8(PyUnicode_GET_LENGTH(item));
                }
            } else if (PyBytes_Check(item)) {
                views_[i] = std::string_view(PyBytes_AS_STRING(item), size_t(PyBytes_GET_SIZE(item)));
                check_text_for(pattern, views_[i], what().c_str());
            } else if (PyObject_CheckBuffer(item)) {
                views_[i] = copies_.emplace_back(item, what().c_str()).view;
                check_text_for(pattern, views_[i], what().c_str());
            } else {
                throw py::type_error(what() + " must be str or bytes, not " + type_name(item));
            }
        }
        if (unwritten.empty()) return;
        char* const start = utf8_.emplace(room).data();
        char* out = start;
        for (size_t i : unwritten) {
            const StrChars chars(PyTuple_GET_ITEM(tuple, Py_ssize_t(i)));
            int64_t bytes = chars.write_utf8(0, chars.size, out);
            if (bytes < 0) throw_lone_surrogate(Py_ssize_t(-1 - bytes), "text " + std::to_string(i));
            views_[i] = std::string_view(out, size_t(bytes));
            out += bytes;
        }
        utf8_->wrote(size_t(out - start));
    }
    TextBatch(const TextBatch&) = delete;
    TextBatch& operator=(const TextBatch&) = delete;

    size_t size() const { return views_.size(); }
    const std::vector<std::string_view>& views() const { return views_; }
    size_t bytes() const {
        size_t total = 0;
        for (std::string_view view : views_) total += view.size();
        return total;
    }

private:
    // How far ahead the two loops over a batch's objects ask for them: a batch's texts lie
    // apart in memory, where no hardware prefetcher follows (encoder.h: prefetch_document).
    // held_items's loop does less for each, so it asks further on.
    static constexpr size_t kReadAhead = 8;
    static constexpr Py_ssize_t kHoldAhead = 16;

    // The texts as a tuple of our own. A list's items are taken with each object
    // kHoldAhead on asked for: PySequence_Tuple's copy reads them one by one, each a miss
    // in a batch of thousands. Anything else goes to PySequence_Tuple (which keeps a
    // tuple as it is).
    static PyObject* held_items(PyObject* texts) {
        if (!PyList_CheckExact(texts)) return PySequence_Tuple(texts);
        const Py_ssize_t n = PyList_GET_SIZE(texts);
        PyObject* tuple = PyTuple_New(n);
        if (tuple == nullptr) return nullptr;
        // PyTuple_New may have run a collection, and so a finalizer that changed the list.
        if (PyList_GET_SIZE(texts) != n) {
            Py_DECREF(tuple);
            return PySequence_Tuple(texts);
        }
        for (Py_ssize_t i = 0; i < n; ++i) {
            if (i + kHoldAhead < n) bpe::prefetch(PyList_GET_ITEM(texts, i + kHoldAhead));
            PyObject* item = PyList_GET_ITEM(texts, i);
            Py_INCREF(item);
            PyTuple_SET_ITEM(tuple, i, item);
        }
        return tuple;
    }

    py::object items_;
    std::vector<std::string_view> views_;
    std::optional<Utf8Buffer> utf8_;
    std::deque<BytesArg> copies_;
};

// A str as UTF-8 bytes; a lone surrogate (which UTF-8 cannot hold) is a ValueError
// that names the str as `what`.
inline std::string utf8_of(py::handle str, const std::string& what) {
    std::optional<Utf8Buffer> buffer;
    return std::string(str_utf8(str, buffer, what));
}

}  // namespace bindings
