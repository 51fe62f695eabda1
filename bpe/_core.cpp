// The compiled core of the `bpe` package, bound to Python with pybind11 as `bpe._core`:
// splitting text into chunks, training merges, and encoding and decoding with them.
//
// Conventions of this layer (the Python class bpe.BPETokenizer sits on top and takes
// str): texts are bytes (or a contiguous buffer of bytes), special tokens are str,
// ids are ints. `special_tokens` is always a list of str, numbered after the merges in
// the order given; `token_ids` renumbers every token (bytes, merges, specials) when a
// vocabulary has its own numbering. `allowed_special` and `disallowed_special` mean
// what they mean in tiktoken. `threads=0` means one thread per core, everywhere.
//
// This file is the boundary: it checks what Python hands over, turns it into views
// and vectors, lets go of the GIL while the C++ works, and turns the results back
// into Python objects. The work itself is in split.h, train.h and encoder.h.
#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdlib>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

#include "encoder.h"
#include "split.h"
#include "train.h"

namespace py = pybind11;

namespace {

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

// Texts from Python: one bytes object, or a sequence of them.
std::deque<BytesArg> texts_from_python(py::handle texts, const char* what) {
    std::deque<BytesArg> args;
    if (PyUnicode_Check(texts.ptr()) || !PySequence_Check(texts.ptr()) || PyBytes_Check(texts.ptr()))
        throw py::type_error(std::string(what) + " must be a list of bytes");
    for (py::handle text : py::reinterpret_borrow<py::sequence>(texts)) args.emplace_back(text, "each text");
    return args;
}

// The UTF-8 bytes of a str, read in place: CPython keeps a str's UTF-8 once made (an
// ASCII str is its own UTF-8), so this costs no copy, and a str encoded again costs
// nothing, where text.encode("utf-8") copied the whole text on every call. The str
// holds the bytes while `owner` lives. A lone surrogate, which UTF-8 cannot hold, is
// a ValueError that says where, as bpe.BPETokenizer has always said it.
struct StrArg {
    py::object owner;
    std::string_view view;

    explicit StrArg(py::handle obj) : owner(py::reinterpret_borrow<py::object>(obj)) {
        if (!PyUnicode_Check(obj.ptr()))
            throw py::type_error("text must be str, not " + BytesArg::type_name(obj));
        Py_ssize_t size = 0;
        const char* data = PyUnicode_AsUTF8AndSize(obj.ptr(), &size);
        if (data == nullptr) {
            Py_ssize_t start = -1;
            if (PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) {
                PyObject *type, *value, *trace;
                PyErr_Fetch(&type, &value, &trace);
                PyErr_NormalizeException(&type, &value, &trace);
                if (value == nullptr || PyUnicodeEncodeError_GetStart(value, &start) != 0) start = -1;
                Py_XDECREF(type), Py_XDECREF(value), Py_XDECREF(trace);
                PyErr_Clear();
            } else {
                throw py::error_already_set();  // out of memory
            }
            throw py::value_error("text cannot be encoded as UTF-8: a lone surrogate at position " +
                                  std::to_string(start));
        }
        view = std::string_view(data, size_t(size));
    }
};

// gpt2 and gpt4 split characters, so their text must be valid UTF-8.
void check_text_for(bpe::Pattern pattern, std::string_view text, const char* what) {
    if (pattern != bpe::Pattern::kDefault && !bpe::is_valid_utf8(text))
        throw py::value_error(std::string(what) + " is not valid UTF-8, which the '" + bpe::pattern_name(pattern) +
                              "' split pattern needs (the 'default' pattern takes any bytes)");
}

unsigned thread_count(int threads) {
    if (threads < 0) throw py::value_error("threads must be 0 (one per core) or more, got " + std::to_string(threads));
    if (threads > int(bpe::kMaxThreads))
        throw py::value_error("threads must be at most " + std::to_string(bpe::kMaxThreads) + ", got " +
                              std::to_string(threads));
    if (threads > 0) return unsigned(threads);
    return std::clamp(std::thread::hardware_concurrency(), 1u, bpe::kMaxThreads);
}

// A Python int as a long long, or -1 when it is too large for one.
long long as_long_long(py::handle value) {
    long long n = PyLong_AsLongLong(value.ptr());
    if (n == -1 && PyErr_Occurred()) PyErr_Clear();
    return n;
}

bool is_int(py::handle value) { return PyLong_Check(value.ptr()) && !PyBool_Check(value.ptr()); }

bool is_sequence_of_items(py::handle obj) {
    return PySequence_Check(obj.ptr()) && !PyUnicode_Check(obj.ptr()) && !PyBytes_Check(obj.ptr());
}

// Merges from Python: a sequence of pairs of non-negative ints.
std::vector<bpe::Pair> merges_from_python(py::handle obj) {
    if (!is_sequence_of_items(obj)) throw py::type_error("merges must be a list of (int, int) pairs");
    py::sequence seq = py::reinterpret_borrow<py::sequence>(obj);
    std::vector<bpe::Pair> merges;
    merges.reserve(seq.size());
    for (size_t k = 0; k < seq.size(); ++k) {
        py::object item = seq[k];
        auto where = [&] { return "merge " + std::to_string(k) + " is " + std::string(py::repr(item)) + ": "; };
        if (!is_sequence_of_items(item) || py::len(item) != 2) throw py::type_error(where() + "expected a pair of ints");
        uint32_t ids[2];
        for (int j = 0; j < 2; ++j) {
            py::object id = item[py::int_(j)];
            if (!is_int(id)) throw py::type_error(where() + "expected a pair of ints");
            long long value = as_long_long(id);
            if (value < 0 || value > UINT32_MAX)
                throw py::value_error(where() + "ids must be between 0 and " + std::to_string(255 + k));
            ids[j] = uint32_t(value);
        }
        merges.emplace_back(ids[0], ids[1]);
    }
    return merges;
}

// A str as UTF-8 bytes; a lone surrogate (which UTF-8 cannot hold) is a ValueError.
std::string utf8_of(py::handle str, const std::string& what) {
    Py_ssize_t size = 0;
    const char* data = PyUnicode_AsUTF8AndSize(str.ptr(), &size);
    if (data == nullptr) {
        PyErr_Clear();
        throw py::value_error(what + " " + std::string(py::repr(str)) + " cannot be encoded as UTF-8 (a lone surrogate?)");
    }
    return std::string(data, size_t(size));
}

// Special tokens from Python: a sequence of str (None: none).
std::vector<std::string> special_tokens_from_python(py::handle obj) {
    std::vector<std::string> tokens;
    if (obj.is_none()) return tokens;
    if (!is_sequence_of_items(obj) || PyDict_Check(obj.ptr()))
        throw py::type_error("special_tokens must be a list of str (their ids follow the merges in that order; "
                             "token_ids renumbers them)");
    for (py::handle token : py::reinterpret_borrow<py::sequence>(obj)) {
        if (!PyUnicode_Check(token.ptr()))
            throw py::type_error("special tokens must be str, not " + BytesArg::type_name(token) + ": got " +
                                 std::string(py::repr(token)));
        tokens.push_back(utf8_of(token, "the special token"));
    }
    return tokens;
}

// token_ids from Python: a sequence of ints, each at most bpe::kMaxId (None: none).
std::vector<uint32_t> token_ids_from_python(py::handle obj) {
    std::vector<uint32_t> ids;
    if (obj.is_none()) return ids;
    if (!is_sequence_of_items(obj)) throw py::type_error("token_ids must be a list of ints");
    py::sequence seq = py::reinterpret_borrow<py::sequence>(obj);
    ids.reserve(seq.size());
    for (size_t k = 0; k < seq.size(); ++k) {
        py::object id = seq[k];
        if (!is_int(id)) throw py::type_error("token_ids must be a list of ints; item " + std::to_string(k) + " is " +
                                              std::string(py::repr(id)));
        long long value = as_long_long(id);
        if (value < 0 || value > bpe::kMaxId)
            throw py::value_error("token_ids[" + std::to_string(k) + "] is " + std::string(py::repr(id)) +
                                  ": ids must be between 0 and " + std::to_string(bpe::kMaxId));
        ids.push_back(uint32_t(value));
    }
    return ids;
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
        std::string bytes = utf8_of(name, std::string(what) + " holds");
        size_t k = 0;
        while (k < specials.size() && specials.tokens()[k].first != bytes) ++k;
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
            py::gil_scoped_release release;
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

// Ids from Python for decoding: a sequence of ints, or a numpy array of integers.
// Each must be a token's id: ValueError names the first that is not.
std::vector<uint32_t> ids_for_decoding(const bpe::Encoder& encoder, py::handle obj) {
    std::vector<uint32_t> ids;
    auto check = [&](long long value, py::handle shown) {
        if (value < 0 || size_t(value) >= encoder.n_vocab())
            throw py::value_error("token id " + std::string(py::repr(shown)) + " is outside the vocabulary of " +
                                  std::to_string(encoder.n_vocab()) + " ids (0 to " +
                                  std::to_string(encoder.n_vocab() - 1) + ")");
        if (!encoder.has_id(uint32_t(value)))
            throw py::value_error("token id " + std::to_string(value) + " is not a token of this vocabulary " +
                                  "(its numbering has a gap there)");
        ids.push_back(uint32_t(value));
    };
    if (py::isinstance<py::array>(obj)) {
        py::array array = py::reinterpret_borrow<py::array>(obj);
        char kind = array.dtype().kind();
        if (kind != 'i' && kind != 'u') throw py::type_error("ids must be integers, not an array of " +
                                                             std::string(py::str(array.dtype())));
        auto as_int64 = py::array_t<int64_t, py::array::c_style | py::array::forcecast>::ensure(array);
        if (as_int64.ndim() > 1) throw py::type_error("ids must be one-dimensional");
        ids.reserve(size_t(as_int64.size()));
        const int64_t* data = as_int64.data();
        for (py::ssize_t i = 0; i < as_int64.size(); ++i) check(data[i], py::int_(data[i]));
        return ids;
    }
    if (!is_sequence_of_items(obj)) throw py::type_error("ids must be a list of ints");
    py::sequence seq = py::reinterpret_borrow<py::sequence>(obj);
    ids.reserve(seq.size());
    for (py::handle id : seq) {
        // operator.index: ints and numpy's integers, never floats.
        PyObject* as_int = PyNumber_Index(id.ptr());
        if (as_int == nullptr) {
            PyErr_Clear();
            throw py::type_error("ids must be ints, got " + std::string(py::repr(id)));
        }
        long long value = as_long_long(py::reinterpret_steal<py::object>(as_int));
        check(value, id);  // too large for a long long: -1, out of range all the same
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
// bpe.tokenizer.array_dtype, which the Python side uses).
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
        py::gil_scoped_release release;
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
    py::gil_scoped_release release;
    return encoder.encode_parts(text, choice.allowed, workers);
}

}  // namespace

PYBIND11_MODULE(_core, m) {
    m.doc() = "The compiled core of bpe: byte-level BPE in C++. Bytes in, ints out; see bpe.BPETokenizer "
              "for the same on str.";
    m.attr("MAX_THREADS") = bpe::kMaxThreads;
    m.attr("MAX_ID") = bpe::kMaxId;

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
            py::gil_scoped_release release;
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
                py::gil_scoped_release release;
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

    py::class_<bpe::ChunkCounter>(m, "ChunkCounter",
                                  "Counts the distinct chunks of texts as they stream in, for training: memory "
                                  "grows with the distinct chunks, not with the texts. No chunk crosses two texts "
                                  "or a special token.")
        .def(py::init([](const std::string& pattern_name, py::handle special_tokens) {
                 bpe::Pattern pattern = bpe::parse_pattern(pattern_name);
                 std::vector<std::pair<std::string, uint32_t>> specials;
                 for (std::string& token : special_tokens_from_python(special_tokens)) specials.emplace_back(token, 0);
                 return new bpe::ChunkCounter(pattern, bpe::SpecialTokens(std::move(specials)));
             }),
             py::arg("pattern") = "default", py::arg("special_tokens") = py::none(),
             "pattern: the split rule, as for pretokenize. special_tokens: a list of str, cut out of the texts "
             "and never counted.")
        .def(
            "add",
            [](bpe::ChunkCounter& self, py::handle texts, int threads) {
                std::deque<BytesArg> args;
                if (PyBytes_Check(texts.ptr()) || PyByteArray_Check(texts.ptr()) || PyMemoryView_Check(texts.ptr()))
                    args.emplace_back(texts, "text");
                else
                    args = texts_from_python(texts, "texts");
                std::vector<std::string_view> views;
                for (const BytesArg& arg : args) {
                    check_text_for(self.pattern(), arg.view, "a text");
                    views.push_back(arg.view);
                }
                unsigned workers = thread_count(threads);
                py::gil_scoped_release release;
                self.add(views, workers);
            },
            py::arg("texts"), py::arg("threads") = 0,
            "Count the chunks of texts (one bytes object, or a list of them, each counted on its own), on "
            "`threads` threads (0: one per core).")
        .def("__len__", [](const bpe::ChunkCounter& self) { return self.size(); },
             "How many distinct chunks have been counted.")
        .def(
            "train",
            [](bpe::ChunkCounter& self, int64_t num_merges, py::object progress) {
                if (num_merges < 0) throw py::value_error("num_merges must be 0 or more, got " + std::to_string(num_merges));
                std::function<bool(size_t)> report;
                if (!progress.is_none())
                    report = [&progress](size_t done) {
                        py::gil_scoped_acquire acquire;
                        progress(done);  // an exception (Ctrl-C too) stops training and is raised
                        return true;
                    };
                py::gil_scoped_release release;
                return bpe::train(self, num_merges, report);
            },
            py::arg("num_merges"), py::arg("progress") = py::none(),
            "Learn up to num_merges merges from the chunks counted; merge k makes token 256 + k. Stops early "
            "when no pair is left. The counts are used up: the counter is empty afterwards. progress, if "
            "given, is called with the number of merges made so far every few hundred merges.");

    m.def(
        "train",
        [](py::handle text, int64_t num_merges, const std::string& pattern_name, py::handle special_tokens, int threads) {
            BytesArg arg(text, "text");
            if (num_merges < 0) throw py::value_error("num_merges must be 0 or more, got " + std::to_string(num_merges));
            unsigned workers = thread_count(threads);
            bpe::Pattern pattern = bpe::parse_pattern(pattern_name);
            std::vector<std::pair<std::string, uint32_t>> specials;
            for (std::string& token : special_tokens_from_python(special_tokens)) specials.emplace_back(token, 0);
            bpe::SpecialTokens cut(std::move(specials));
            check_text_for(pattern, arg.view, "text");
            py::gil_scoped_release release;
            return bpe::train(arg.view, num_merges, pattern, cut, workers);
        },
        py::arg("text"), py::arg("num_merges"), py::arg("pattern") = "default", py::arg("special_tokens") = py::none(),
        py::arg("threads") = 0,
        "Learn up to num_merges merges from text (bytes); merge k makes token 256 + k. Stops early when no "
        "pair is left. pattern: the split rule, as for pretokenize. special_tokens (a list of str) are cut out "
        "of the text first, so that no merge crosses or contains one. threads=0 counts chunks with one thread "
        "per core. The same as ChunkCounter(pattern, special_tokens).add(text) and then .train(num_merges).");

    py::class_<bpe::Encoder>(m, "Encoder",
                             "Encodes text (bytes) with merges and special tokens, keeping a cache of chunks "
                             "already encoded, and decodes ids back to bytes. Safe to use from several threads "
                             "at once.")
        .def(py::init([](py::handle merges, const std::string& pattern_name, py::handle special_tokens,
                         py::handle token_ids) {
                 bpe::Pattern pattern = bpe::parse_pattern(pattern_name);
                 auto encoder = std::make_unique<bpe::Encoder>(merges_from_python(merges), pattern,
                                                               special_tokens_from_python(special_tokens),
                                                               token_ids_from_python(token_ids));
                 // Ints for the ids up to n_vocab, unless the numbering is sparse (a few
                 // tokens with ids up to MAX_ID must not make a million ints).
                 size_t tokens = 256 + encoder->num_merges() + encoder->specials().size();
                 shared_ints.reserve(std::min(encoder->n_vocab(), 2 * tokens));
                 return encoder.release();
             }),
             py::arg("merges"), py::arg("pattern") = "default", py::arg("special_tokens") = py::none(),
             py::arg("token_ids") = py::none(),
             "merges: (a, b) pairs; merge k makes token 256 + k. pattern: the split rule, as for pretokenize. "
             "special_tokens: a list of str, numbered after the merges in that order. token_ids: the id of each "
             "token (the 256 bytes, the merges, the specials), when the vocabulary numbers them its own way (GPT-2 "
             "and GPT-4 shuffle the bytes); ids at most MAX_ID, all different, gaps allowed.")
        .def_property_readonly("pattern", [](const bpe::Encoder& self) { return bpe::pattern_name(self.pattern()); })
        .def_property_readonly("num_merges", &bpe::Encoder::num_merges)
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
                BytesArg arg(text, "text");
                check_text_for(self.pattern(), arg.view, "text");
                return parts_to_list(encode_text(self, arg.view, allowed_special, disallowed_special, 1));
            },
            py::arg("text"), py::arg("allowed_special") = py::tuple(), py::arg("disallowed_special") = "all",
            "The token ids of text, as a list of ints. As in tiktoken, a special token in the text becomes its id "
            "if allowed_special (\"all\" or a set of str) holds it, and raises ValueError if disallowed_special "
            "(\"all\": every one not allowed) does; otherwise it is ordinary text.")
        .def(
            "encode_array",
            [](const bpe::Encoder& self, py::handle text, py::handle allowed_special, py::handle disallowed_special,
               int threads) {
                BytesArg arg(text, "text");
                check_text_for(self.pattern(), arg.view, "text");
                unsigned workers = thread_count(threads);
                return ids_to_array(encode_text(self, arg.view, allowed_special, disallowed_special, workers),
                                    self.n_vocab());
            },
            py::arg("text"), py::arg("allowed_special") = py::tuple(), py::arg("disallowed_special") = "all",
            py::arg("threads") = 0,
            "As encode, as a numpy array (uint16 when n_vocab is 65,536 or less, else uint32), encoded on "
            "`threads` threads (0: one per core).")
        .def(
            "encode_str",
            [](const bpe::Encoder& self, py::handle text, py::handle allowed_special, py::handle disallowed_special) {
                StrArg arg(text);  // valid UTF-8 by construction: no check needed
                return parts_to_list(encode_text(self, arg.view, allowed_special, disallowed_special, 1));
            },
            py::arg("text"), py::arg("allowed_special") = py::tuple(), py::arg("disallowed_special") = "all",
            "As encode, for a str: its UTF-8 is read in place, with no copy (what bpe.BPETokenizer.encode calls).")
        .def(
            "encode_str_array",
            [](const bpe::Encoder& self, py::handle text, py::handle allowed_special, py::handle disallowed_special,
               int threads) {
                StrArg arg(text);
                unsigned workers = thread_count(threads);
                return ids_to_array(encode_text(self, arg.view, allowed_special, disallowed_special, workers),
                                    self.n_vocab());
            },
            py::arg("text"), py::arg("allowed_special") = py::tuple(), py::arg("disallowed_special") = "all",
            py::arg("threads") = 0, "As encode_array, for a str read in place (what bpe.BPETokenizer.encode_array calls).")
        .def(
            "encode_batch",
            [](const bpe::Encoder& self, py::handle texts, py::handle allowed_special, py::handle disallowed_special,
               int threads) {
                std::deque<BytesArg> args = texts_from_python(texts, "texts");
                SpecialChoice choice(self, allowed_special, disallowed_special);
                for (const BytesArg& arg : args) {
                    check_text_for(self.pattern(), arg.view, "a text");
                    choice.check(self, arg.view);
                }
                size_t workers = std::min<size_t>(thread_count(threads), std::max<size_t>(args.size(), 1));
                std::vector<std::vector<uint32_t>> ids(args.size());
                {
                    py::gil_scoped_release release;
                    // Thread k takes texts k, k + workers, ...: stories come in all lengths,
                    // and dealing them out in turn evens out the work.
                    bpe::run_threads(workers, [&](size_t k) {
                        for (size_t i = k; i < args.size(); i += workers) ids[i] = self.encode(args[i].view, choice.allowed);
                    });
                }
                py::list out(ids.size());
                for (size_t i = 0; i < ids.size(); ++i) out[i] = ids_to_list(ids[i]);
                return out;
            },
            py::arg("texts"), py::arg("allowed_special") = py::tuple(), py::arg("disallowed_special") = "all",
            py::arg("threads") = 0,
            "The token ids of each text of a list, as encode gives them, encoded on `threads` threads "
            "(0: one per core).")
        .def(
            "decode_bytes",
            [](const bpe::Encoder& self, py::handle ids) {
                std::vector<uint32_t> checked = ids_for_decoding(self, ids);
                std::string out;
                {
                    py::gil_scoped_release release;
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
                if (!is_int(id)) throw py::type_error("a token id must be an int, got " + std::string(py::repr(id)));
                std::vector<uint32_t> checked = ids_for_decoding(self, py::make_tuple(id));
                std::string_view bytes = self.token_bytes(checked[0]);
                return py::bytes(bytes.data(), bytes.size());
            },
            py::arg("id"), "The bytes of one token.");
}
