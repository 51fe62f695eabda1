// Byte-level BPE: training merges on a text and encoding text with them, exposed to
// Python with pybind11 as the module `bpe`.
//
// This file is the boundary: it checks what Python hands over, turns it into views
// and vectors, lets go of the GIL while the C++ works, and turns the results back
// into Python objects. The work itself is in split.h, train.h and encoder.h.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <deque>
#include <string>
#include <string_view>
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
                                 " must be bytes, not str: encode it first, for example text.encode('utf-8')");
        } else if (PyObject_CheckBuffer(obj.ptr())) {
            py::buffer_info info = py::reinterpret_borrow<py::buffer>(obj).request();
            if (info.ndim != 1 || info.itemsize != 1 || info.strides[0] != 1)
                throw py::type_error(std::string(what) + " must be bytes or a contiguous buffer of bytes");
            copy.assign(static_cast<const char*>(info.ptr), size_t(info.size));
            view = copy;
        } else {
            throw py::type_error(std::string(what) + " must be bytes, not " +
                                 std::string(py::str(py::type::handle_of(obj).attr("__name__"))));
        }
    }
    BytesArg(const BytesArg&) = delete;
    BytesArg& operator=(const BytesArg&) = delete;
};

// gpt2 and gpt4 split characters, so their text must be valid UTF-8.
void check_text_for(bpe::Pattern pattern, std::string_view text, const char* what) {
    if (pattern != bpe::Pattern::kDefault && !bpe::is_valid_utf8(text))
        throw py::value_error(std::string(what) + " is not valid UTF-8, which the '" + bpe::pattern_name(pattern) +
                              "' split pattern needs (the 'default' pattern takes any bytes)");
}

void check_specials_for(bpe::Pattern pattern, const bpe::SpecialTokens& specials) {
    for (const auto& [bytes, id] : specials.tokens()) check_text_for(pattern, bytes, "a special token");
}

unsigned thread_count(int threads) {
    if (threads < 0) throw py::value_error("threads must be 0 (one per core) or more, got " + std::to_string(threads));
    if (threads > 0) return unsigned(threads);
    return std::max(1u, std::thread::hardware_concurrency());
}

// Merges from Python: a sequence of pairs of non-negative ints.
std::vector<bpe::Pair> merges_from_python(py::handle obj) {
    if (PyUnicode_Check(obj.ptr()) || PyBytes_Check(obj.ptr()) || !PySequence_Check(obj.ptr()))
        throw py::type_error("merges must be a list of (int, int) pairs");
    py::sequence seq = py::reinterpret_borrow<py::sequence>(obj);
    std::vector<bpe::Pair> merges;
    merges.reserve(seq.size());
    for (size_t k = 0; k < seq.size(); ++k) {
        py::object item = seq[k];
        auto bad = [&](const std::string& why) {
            return py::type_error("merge " + std::to_string(k) + " is " + std::string(py::repr(item)) + ": " + why);
        };
        if (!PySequence_Check(item.ptr()) || PyUnicode_Check(item.ptr()) || PyBytes_Check(item.ptr()) ||
            py::len(item) != 2)
            throw bad("expected a pair of ints");
        uint32_t ids[2];
        for (int j = 0; j < 2; ++j) {
            py::object id = item[py::int_(j)];
            if (!PyLong_Check(id.ptr()) || PyBool_Check(id.ptr())) throw bad("expected a pair of ints");
            long long value = PyLong_AsLongLong(id.ptr());
            if (value == -1 && PyErr_Occurred()) {
                PyErr_Clear();
                value = -1;  // too large for a long long: reported as out of range below
            }
            if (value < 0 || value > UINT32_MAX)
                throw py::value_error("merge " + std::to_string(k) + " is " + std::string(py::repr(item)) +
                                      ": ids must be between 0 and " + std::to_string(255 + k));
            ids[j] = uint32_t(value);
        }
        merges.emplace_back(ids[0], ids[1]);
    }
    return merges;
}

// Special tokens from Python: a dict from str or bytes to an id (None: no specials).
bpe::SpecialTokens specials_from_python(py::handle obj) {
    if (obj.is_none()) return {};
    if (!PyDict_Check(obj.ptr())) throw py::type_error("special_tokens must be a dict from str or bytes to int ids");
    std::vector<std::pair<std::string, uint32_t>> tokens;
    for (auto [key, value] : py::reinterpret_borrow<py::dict>(obj)) {
        std::string bytes;
        if (PyUnicode_Check(key.ptr())) bytes = py::cast<std::string>(key);  // as UTF-8
        else if (PyBytes_Check(key.ptr())) bytes = py::cast<std::string>(py::reinterpret_borrow<py::bytes>(key));
        else throw py::type_error("special_tokens' keys must be str or bytes, not " + std::string(py::str(py::type::handle_of(key).attr("__name__"))));
        if (!PyLong_Check(value.ptr()) || PyBool_Check(value.ptr()))
            throw py::type_error("the id of special token " + std::string(py::repr(key)) + " must be an int");
        long long id = PyLong_AsLongLong(value.ptr());
        if (id == -1 && PyErr_Occurred()) PyErr_Clear();
        if (id < 0 || id >= UINT32_MAX)
            throw py::value_error("the id of special token " + std::string(py::repr(key)) + " is out of range");
        tokens.emplace_back(std::move(bytes), uint32_t(id));
    }
    return bpe::SpecialTokens(std::move(tokens));
}

// Special tokens for training: a list of str or bytes (None: none).
bpe::SpecialTokens special_strings_from_python(py::handle obj) {
    if (obj.is_none()) return {};
    if (PyUnicode_Check(obj.ptr()) || PyBytes_Check(obj.ptr()) || !PySequence_Check(obj.ptr()))
        throw py::type_error("special_tokens must be a list of str or bytes");
    py::dict as_dict;
    for (py::handle token : py::reinterpret_borrow<py::sequence>(obj)) as_dict[token] = py::int_(0);
    return specials_from_python(as_dict);
}

py::list ids_to_list(const std::vector<uint32_t>& ids) {
    py::list out(ids.size());
    for (size_t i = 0; i < ids.size(); ++i) PyList_SET_ITEM(out.ptr(), i, PyLong_FromUnsignedLong(ids[i]));
    return out;
}

// Ids, in consecutive parts, as one numpy array with no Python object per token:
// uint16 when every id of the vocabulary fits (65,536 tokens or fewer), uint32
// otherwise. Each part is copied on a thread of its own, with the GIL released.
template <class Id>
py::array parts_to_array(const std::vector<std::vector<uint32_t>>& parts) {
    std::vector<size_t> offsets{0};
    for (const auto& part : parts) offsets.push_back(offsets.back() + part.size());
    py::array_t<Id> out(offsets.back());
    Id* data = out.mutable_data();
    py::gil_scoped_release release;
    bpe::run_threads(parts.size(), [&](size_t k) { std::copy(parts[k].begin(), parts[k].end(), data + offsets[k]); });
    return out;
}

py::array ids_to_array(const std::vector<std::vector<uint32_t>>& parts, size_t vocab_size) {
    return vocab_size <= 65536 ? parts_to_array<uint16_t>(parts) : parts_to_array<uint32_t>(parts);
}

}  // namespace

PYBIND11_MODULE(bpe, m) {
    m.doc() = "Byte-level BPE in C++: pretokenize, train merges, encode. Bytes in, ints out.";

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
        "Split text into the chunks that merges never cross. pattern: 'default' (this project's rule, any "
        "bytes), 'gpt2' or 'gpt4' (GPT-2's and GPT-4's rules; valid UTF-8 only).");

    m.def(
        "train",
        [](py::handle text, int64_t num_merges, int threads, py::handle special_tokens, const std::string& pattern_name) {
            BytesArg arg(text, "text");
            if (num_merges < 0) throw py::value_error("num_merges must be 0 or more, got " + std::to_string(num_merges));
            unsigned workers = thread_count(threads);
            bpe::Pattern pattern = bpe::parse_pattern(pattern_name);
            bpe::SpecialTokens specials = special_strings_from_python(special_tokens);
            check_text_for(pattern, arg.view, "text");
            check_specials_for(pattern, specials);
            std::vector<bpe::Pair> merges;
            {
                py::gil_scoped_release release;
                merges = bpe::train(arg.view, num_merges, pattern, specials, workers);
            }
            return merges;
        },
        py::arg("text"), py::arg("num_merges"), py::arg("threads") = 0, py::arg("special_tokens") = py::none(),
        py::arg("pattern") = "default",
        "Learn up to num_merges merges from text; merge k makes token 256 + k. Stops early when no pair "
        "is left. threads=0 counts chunks with one thread per core. special_tokens (a list of str or "
        "bytes) are cut out of the text first, so that no merge crosses or contains one. pattern: the split "
        "rule, as for pretokenize.");

    py::class_<bpe::Encoder>(m, "Encoder",
                             "Encodes text with merges (and special tokens, if given), keeping a cache of chunks "
                             "already encoded. Safe to use from several threads at once.")
        .def(py::init([](py::handle merges, py::handle special_tokens, py::handle token_ids, const std::string& pattern_name) {
                 bpe::Pattern pattern = bpe::parse_pattern(pattern_name);
                 std::vector<uint32_t> ids;
                 if (!token_ids.is_none()) {
                     if (PyUnicode_Check(token_ids.ptr()) || PyBytes_Check(token_ids.ptr()) ||
                         !PySequence_Check(token_ids.ptr()))
                         throw py::type_error("token_ids must be a list of ints");
                     for (py::handle id : py::reinterpret_borrow<py::sequence>(token_ids)) {
                         if (!PyLong_Check(id.ptr()) || PyBool_Check(id.ptr()))
                             throw py::type_error("token_ids must be a list of ints");
                         long long value = PyLong_AsLongLong(id.ptr());
                         if (value == -1 && PyErr_Occurred()) PyErr_Clear();
                         if (value < 0 || value >= UINT32_MAX) throw py::value_error("token_ids has an id out of range");
                         ids.push_back(uint32_t(value));
                     }
                 }
                 bpe::SpecialTokens specials = specials_from_python(special_tokens);
                 check_specials_for(pattern, specials);
                 return new bpe::Encoder(merges_from_python(merges), pattern, std::move(specials), std::move(ids));
             }),
             py::arg("merges"), py::arg("special_tokens") = py::none(), py::arg("token_ids") = py::none(),
             py::arg("pattern") = "default",
             "merges: (a, b) pairs; merge k makes token 256 + k. special_tokens: {str or bytes: id}. "
             "token_ids: the id to return for each of the 256 + len(merges) tokens, when it is not "
             "the token's own number (GPT-2 and GPT-4 shuffle the bytes). pattern: the split rule, as for "
             "pretokenize.")
        .def_property_readonly("pattern", [](const bpe::Encoder& self) { return bpe::pattern_name(self.pattern()); })
        .def_property_readonly("num_merges", &bpe::Encoder::num_merges)
        .def_property_readonly("vocab_size", &bpe::Encoder::vocab_size,
                               "One more than the largest id: 256 + merges, or past the largest special id.")
        .def(
            "encode",
            [](const bpe::Encoder& self, py::handle text, bool allowed_special) {
                BytesArg arg(text, "text");
                check_text_for(self.pattern(), arg.view, "text");
                std::vector<uint32_t> ids;
                {
                    py::gil_scoped_release release;
                    ids = self.encode(arg.view, allowed_special);
                }
                return ids_to_list(ids);
            },
            py::arg("text"), py::arg("allowed_special") = true,
            "The token ids of text, as a list of ints. Special tokens become their ids, unless "
            "allowed_special is False (for text from a user), which encodes them as ordinary text.")
        .def(
            "encode_array",
            [](const bpe::Encoder& self, py::handle text, int threads, bool allowed_special) {
                BytesArg arg(text, "text");
                check_text_for(self.pattern(), arg.view, "text");
                unsigned workers = thread_count(threads);
                std::vector<std::vector<uint32_t>> parts;
                {
                    py::gil_scoped_release release;
                    parts = self.encode_parts(arg.view, allowed_special, workers);
                }
                return ids_to_array(parts, self.vocab_size());
            },
            py::arg("text"), py::arg("threads") = 1, py::arg("allowed_special") = true,
            "As encode, as a numpy array (uint16 when the vocabulary has 65,536 tokens or fewer, else "
            "uint32), encoded on `threads` threads (0: one per core).")
        .def(
            "encode_batch",
            [](const bpe::Encoder& self, py::handle texts, int threads, bool allowed_special) {
                if (PyUnicode_Check(texts.ptr()) || PyBytes_Check(texts.ptr()) || !PySequence_Check(texts.ptr()))
                    throw py::type_error("texts must be a list of bytes");
                std::deque<BytesArg> args;
                for (py::handle text : py::reinterpret_borrow<py::sequence>(texts)) {
                    args.emplace_back(text, "each text");
                    check_text_for(self.pattern(), args.back().view, "a text");
                }
                size_t workers = std::min<size_t>(thread_count(threads), std::max<size_t>(args.size(), 1));
                std::vector<std::vector<uint32_t>> ids(args.size());
                {
                    py::gil_scoped_release release;
                    // Thread k takes texts k, k + workers, ...: stories come in all lengths,
                    // and dealing them out in turn evens out the work.
                    bpe::run_threads(workers, [&](size_t k) {
                        for (size_t i = k; i < args.size(); i += workers) ids[i] = self.encode(args[i].view, allowed_special);
                    });
                }
                py::list out(ids.size());
                for (size_t i = 0; i < ids.size(); ++i) out[i] = ids_to_list(ids[i]);
                return out;
            },
            py::arg("texts"), py::arg("threads") = 0, py::arg("allowed_special") = true,
            "The token ids of each text in a list, encoded on `threads` threads (0: one per core).");
}
