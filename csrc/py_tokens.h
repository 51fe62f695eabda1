// Tokens from Python and back: merges, special tokens, token_ids, tiktoken's
// allowed_special and disallowed_special, and ids to decode, each checked with one
// message per mistake; then ids back to Python as lists (of ints made once and shared)
// and as numpy arrays. Included by _core.cpp only.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "encoder.h"
#include "parallel.h"
#include "py_args.h"
#include "py_gil.h"
#include "py_text.h"
#include "special.h"

namespace bindings {

namespace py = pybind11;

// --- from Python: merges, special tokens, ids -------------------------------------------

// Merges from Python: pairs of ids (as_index: ints or numpy integers), in a list, a
// tuple, a numpy array of shape (n, 2), or any other iterable.
inline std::vector<bpe::Pair> merges_from_python(py::handle obj) {
    if (!is_iterable_of_items(obj))
        throw py::type_error("merges must be a list of (int, int) pairs, not " + type_name(obj));
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

// Special tokens from Python: str, in a list or any other iterable but a dict (None:
// none).
inline std::vector<std::string> special_tokens_from_python(py::handle obj) {
    std::vector<std::string> tokens;
    if (obj.is_none()) return tokens;
    if (!is_iterable_of_items(obj))
        throw py::type_error("special_tokens must be a list of str, not " + type_name(obj) +
                             ": their ids follow the merges, in that order (to number them your own way: "
                             "token_ids, or BPETokenizer(merges, special_tokens={token: id}))");
    for (py::handle token : py::reinterpret_borrow<py::iterable>(obj)) {
        if (!PyUnicode_Check(token.ptr()))
            throw py::type_error("special tokens must be str, not " + type_name(token) + ": got " +
                                 std::string(py::repr(token)));
        tokens.push_back(utf8_of(token, "the special token " + std::string(py::repr(token))));
    }
    return tokens;
}

// Special tokens from Python, as the cut that counting and training make at them: each
// a special token with no id of its own (the counter numbers nothing).
inline bpe::SpecialTokens specials_from_python(py::handle obj) {
    std::vector<std::pair<std::string, uint32_t>> specials;
    for (std::string& token : special_tokens_from_python(obj)) specials.emplace_back(std::move(token), 0);
    return bpe::SpecialTokens(std::move(specials));
}

// token_ids from Python: ids (as_index: ints or numpy integers), each at most
// bpe::kMaxId, in a list or any other iterable (None: none; the Encoder checks that
// there is one for every token).
inline std::optional<std::vector<uint32_t>> token_ids_from_python(py::handle obj) {
    std::vector<uint32_t> ids;
    if (obj.is_none()) return std::nullopt;
    if (!is_iterable_of_items(obj))
        throw py::type_error("token_ids must be a list of ints, not " + type_name(obj));
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

// Which specials an argument names: "all", or a collection of str among the encoder's.
inline bpe::SpecialSet special_set_from_python(const bpe::Encoder& encoder, py::handle obj, const char* what) {
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

    // On up to `threads` threads (the call's), a stretch of at least kBytesPerThread
    // each, each searching where a special may begin in its own stretch: the first
    // stretch that holds one holds the text's first.
    void check(const bpe::Encoder& encoder, std::string_view text, unsigned threads = 1) const {
        const bpe::SpecialTokens& specials = encoder.specials();
        if (!any_disallowed()) return;
        const size_t n = std::clamp<size_t>(text.size() / bpe::kBytesPerThread, 1, std::max(threads, 1u));
        std::vector<size_t> found(n, specials.size());
        {
            GilReleased released;
            bpe::run_threads(n, [&](size_t k) {
                found[k] = specials.find_first(text, disallowed, text.size() * k / n, text.size() * (k + 1) / n);
            });
        }
        for (size_t k : found)
            if (k != specials.size()) refuse(encoder, k, "the text");
    }

    // The same for each text of a batch, all of them without the GIL at once; the
    // message names the first text that holds a disallowed special.
    void check(const bpe::Encoder& encoder, const std::vector<std::string_view>& texts) const {
        if (!any_disallowed()) return;
        size_t at = texts.size(), k = encoder.specials().size();
        {
            GilReleased released;
            for (size_t i = 0; i < texts.size() && at == texts.size(); ++i)
                if ((k = encoder.specials().find_first(texts[i], disallowed)) != encoder.specials().size()) at = i;
        }
        if (at != texts.size()) refuse(encoder, k, "text " + std::to_string(at));
    }

    bool any_disallowed() const { return std::find(disallowed.begin(), disallowed.end(), true) != disallowed.end(); }

    // The error for special k (its place in SpecialTokens::tokens()) found in `which`.
    [[noreturn]] static void refuse(const bpe::Encoder& encoder, size_t k, const std::string& which) {
        const std::string& token = encoder.specials().tokens()[k].first;
        throw py::value_error(which + " holds the special token " + std::string(py::repr(py::str(token))) +
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
inline std::vector<uint32_t> ids_for_decoding(const bpe::Encoder& encoder, py::handle obj) {
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

// --- back to Python: ids as lists and arrays --------------------------------------------

// Python ints for ids, made once and shared by every encoder (an int is the same
// whichever vocabulary gave it): a list of ids then costs a reference count per id,
// not an int allocated and, later, freed per id, which was most of the time encode
// spent past the C++ work with GPT-2's and GPT-4's ids (CPython keeps ints up to 256
// only). Each int is made the first time an id is given out, so the ints a text uses
// lie together, in the order they were first met, not spread over every id of the
// vocabulary (o200k's 200,000); the table of their addresses lies in huge pages
// (docs/design-notes.md). Kept for the life of the process. Ids past kMaxShared (a
// vocabulary numbered sparsely) get a new int each.
class SharedInts {
public:
    static constexpr size_t kMaxShared = size_t(1) << 20;  // 8 MB of addresses, taken as used

    // Makes room for the ints 0 .. n-1 (up to kMaxShared); needs the GIL.
    void reserve(size_t n) {
        if (!table_) table_ = std::make_unique<bpe::Region>(kMaxShared * sizeof(PyObject*), true);
        size_ = std::max(size_, std::min(n, kMaxShared));
    }

    // A new reference to the int `id`, or nullptr with a Python error set; needs the GIL.
    PyObject* get(uint32_t id) {
        if (id < size_) {
            PyObject* value = ints()[id];
            if (value != nullptr) {
                Py_INCREF(value);
                return value;
            }
            return make(id);
        }
        return PyLong_FromUnsignedLong(id);
    }

    // New references to the ints of n ids, stored at out[0 .. n-1]; false with a Python
    // error set (out of memory), the places not reached left as they were. The table and
    // its size are read once, into locals, and the slots are filled through a pointer:
    // the compiler cannot tell that the rare call that makes an int leaves the members
    // alone, so a loop over get() read them again at every id and kept its slot counter
    // in memory, a chain from one id to the next (docs/design-notes.md, "the fill loop").
    bool put(const uint32_t* ids, size_t n, PyObject** out) {
        PyObject* const* const table = table_ ? ints() : nullptr;
        const size_t size = size_;
        for (size_t i = 0; i < n; ++i) {
            const uint32_t id = ids[i];
            PyObject* value = id < size ? table[id] : nullptr;
            if (value != nullptr)
                Py_INCREF(value);
            else if ((value = get(id)) == nullptr)
                return false;
            out[i] = value;
        }
        return true;
    }

private:
    PyObject** ints() const { return reinterpret_cast<PyObject**>(table_->data()); }

    // The int `id`, made and kept (the table's reference), and a new reference to it.
    BPE_RARE PyObject* make(uint32_t id) {
        PyObject* value = PyLong_FromUnsignedLong(id);
        if (value == nullptr) return nullptr;
        ints()[id] = value;
        Py_INCREF(value);
        return value;
    }

    std::unique_ptr<bpe::Region> table_;  // zeroed: no int made yet
    size_t size_ = 0;
};
inline SharedInts shared_ints;

// The list's item slots, which PyList_New leaves null for the caller to fill.
inline PyObject** list_items(const py::list& list) { return &PyList_GET_ITEM(list.ptr(), 0); }

// n ids as a list of ints: one shared int, a Py_INCREF and a store in place per id.
// A plain store per id, with each int's references added once by its count in a
// second pass, ran slower (docs/design-notes.md).
inline py::list ids_to_list(const uint32_t* ids, size_t n) {
    py::list out(n);
    if (n != 0 && !shared_ints.put(ids, n, list_items(out))) throw py::error_already_set();  // out frees what is set
    return out;
}

// Ids, in n consecutive parts, as one list of ints.
inline py::list ids_to_list(const bpe::Ids* parts, size_t n) {
    size_t total = 0;
    for (size_t k = 0; k < n; ++k) total += parts[k].size();
    py::list out(total);
    if (total == 0) return out;
    PyObject** items = list_items(out);
    for (size_t k = 0; k < n; ++k) {
        if (!shared_ints.put(parts[k].data(), parts[k].size(), items)) throw py::error_already_set();
        items += parts[k].size();
    }
    return out;
}

inline py::list parts_to_list(const std::vector<bpe::Ids>& parts) {
    return ids_to_list(parts.data(), parts.size());
}
inline py::list ids_to_list(const bpe::Ids& ids) { return ids_to_list(&ids, 1); }

// The smallest unsigned type that holds every id: uint16 up to 65,536 ids (the rule of
// bpe.encoding.array_dtype, which the Python side uses).
inline bool fits_uint16(size_t n_vocab) { return n_vocab <= 65536; }

// Ids, in consecutive parts, as one numpy array with no Python object per token.
// Each part is copied on a thread of its own, with the GIL released: the array is
// made before and returned after, as only a thread holding the GIL may touch
// reference counts.
template <class Id>
inline py::array parts_to_array(const std::vector<bpe::Ids>& parts) {
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

inline py::array ids_to_array(const std::vector<bpe::Ids>& parts, size_t n_vocab) {
    return fits_uint16(n_vocab) ? parts_to_array<uint16_t>(parts) : parts_to_array<uint32_t>(parts);
}

}  // namespace bindings
