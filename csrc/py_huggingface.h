// A Hugging Face tokenizer.json's vocabulary and merges, read into the core's numbering:
// merge k of the file, "a b" (or ["a", "b"]), joins the tokens written a and b in the
// byte alphabet (GPT-2's: each byte stands as one printable character) into the token
// written a+b. The core numbers the 256 bytes 0..255 and the token merge i makes
// 256 + i; the file numbers them as its vocab says. This reads both once and gives the
// core's merges and the file's id of each core token.
//
// Why C++: a 150,000-token file holds 150,000 merges, each two strings to look up and
// a third to make and look up; in Python that loop was most of a load. Here the token
// strings are turned into their bytes
// (through the alphabet, read straight from Python's str) and looked up in one table
// keyed by those bytes, with no Python object made per merge.
//
// Hugging Face ranks pairs: merge k's two tokens, side by side, become the token they
// make when no adjacent pair ranks lower. It never builds a token from its parts in
// order, so a file may have a merge whose part a later merge makes (Llama 3's second
// merge is "Ġ ĠĠĠ") and several merges of one token (files converted from tiktoken's
// ranks, Llama 3's and GLM's, hold every split of a token whose two parts are tokens).
// The core needs one merge per token, after its parts: each token's first merge whose
// parts are made before it. Where these are not the file's merges in its order, the
// ranked merges are given too (ModelOptions::ranked_merges, vocabulary.h): the file's
// merges as (left, right, made) in the core's ids, in its order, by which the engine
// ranks as Hugging Face does. Hugging Face keeps a pair written twice at its last
// place (its table of pairs is filled in the file's order), and so do they.
//
// Mistakes are ValueErrors that name the merge by its number and the tokens by their
// text, as the file writes them; the caller puts the file's name in front.
// Included by _core.cpp only.
#pragma once

#include <pybind11/pybind11.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "py_args.h"
#include "py_rules.h"
#include "vocabulary.h"

namespace bindings {

namespace py = pybind11;

class HuggingFaceMerges {
  public:
    // alphabet: a str of 256 characters, the one that stands for byte b at b.
    explicit HuggingFaceMerges(py::handle alphabet) {
        if (!PyUnicode_Check(alphabet.ptr()) || PyUnicode_GET_LENGTH(alphabet.ptr()) != 256)
            throw py::type_error("alphabet must be a str of 256 characters");
        for (int b = 0; b < 256; ++b) {
            Py_UCS4 c = PyUnicode_READ_CHAR(alphabet.ptr(), b);
            if (c >= byte_of_.size()) byte_of_.resize(c + 1, -1);
            byte_of_[c] = b;
        }
    }

    py::tuple read(py::handle vocab, py::handle merges) {
        read_vocab(vocab);
        std::vector<int64_t> ids = byte_ids();
        if (!PyList_Check(merges.ptr())) throw py::value_error("the model's \"merges\" is not a list");
        Py_ssize_t n = PyList_GET_SIZE(merges.ptr());

        // 1. Each merge's three tokens (two parts, the token made), found by their bytes.
        std::vector<Merge> all(static_cast<size_t>(n));
        std::string both;  // the two parts' bytes, one after the other: the token they make
        for (Py_ssize_t k = 0; k < n; ++k) {
            py::handle item = PyList_GET_ITEM(merges.ptr(), k);
            size_t split = parts(item, k, both);
            Token* left = find(std::string_view(both).substr(0, split));
            Token* right = find(std::string_view(both).substr(split));
            if (left == nullptr || right == nullptr)
                throw py::value_error(at(k) + text(item) + " uses " + repr(part_text(item, left == nullptr ? 0 : 1)) +
                                      ", which is not in the vocabulary");
            Token* made = find(both);
            if (made == nullptr)
                throw py::value_error(at(k) + text(item) + " makes " + repr(joined_text(item)) +
                                      ", which is not in the vocabulary");
            all[size_t(k)] = {index(left), index(right), index(made)};
        }

        // 2. The core's merges: each token's first merge whose parts are made before it.
        // A merge whose part is not made yet waits on it (a list per token, linked through
        // next_waiting) and is tried again once it is made. One whose part no merge makes
        // waits for ever: Hugging Face keeps it, but it never applies, as no chunk ever
        // holds that part (a token that no two tokens make: Qwen 3.6 has a few dozen).
        std::vector<int32_t> waiting(tokens_.size(), -1), next_waiting(static_cast<size_t>(n), -1), ready;
        std::vector<bool> done(static_cast<size_t>(n), false);
        bool in_order = true;  // the core's merges are the file's, in its order
        py::list core_merges;
        for (Py_ssize_t first = 0; first < n; ++first) {
            ready.push_back(int32_t(first));
            while (!ready.empty()) {
                int32_t k = ready.back();
                ready.pop_back();
                const Merge& m = all[size_t(k)];
                Token& made = tokens_[size_t(m.made)];
                if (made.core_id >= 0) {  // a second merge of the token: Hugging Face ranks it too
                    in_order = false;
                    done[size_t(k)] = true;
                    continue;
                }
                int32_t missing = tokens_[size_t(m.left)].core_id < 0    ? m.left
                                  : tokens_[size_t(m.right)].core_id < 0 ? m.right
                                                                         : -1;
                if (missing >= 0) {
                    next_waiting[size_t(k)] = waiting[size_t(missing)];
                    waiting[size_t(missing)] = k;
                    continue;
                }
                if (k != first) in_order = false;  // it waited for its part
                made.core_id = int64_t(256 + core_merges.size());
                core_merges.append(py::make_tuple(tokens_[size_t(m.left)].core_id, tokens_[size_t(m.right)].core_id));
                ids.push_back(made.id);
                done[size_t(k)] = true;
                for (int32_t w = waiting[size_t(m.made)]; w >= 0; w = next_waiting[size_t(w)]) ready.push_back(w);
                waiting[size_t(m.made)] = -1;
            }
        }

        // 3. Where they are not, the ranked merges: [left, right, made] in the core's ids,
        // in the file's order, without the merges that never apply; a pair written twice
        // only at its last place, where Hugging Face ranks it.
        py::object ranked = py::none();
        if (!in_order) {
            // A merge is left out where the same pair comes again later: sorted by pair,
            // then place, each pair's last place is the end of its run.
            std::vector<std::pair<uint64_t, int32_t>> places;  // (pair, k), the merges that apply
            for (Py_ssize_t k = 0; k < n; ++k)
                if (done[size_t(k)]) places.emplace_back(pair_of(all[size_t(k)]), int32_t(k));
            std::sort(places.begin(), places.end());
            for (size_t i = 0; i + 1 < places.size(); ++i)
                if (places[i].first == places[i + 1].first) done[size_t(places[i].second)] = false;
            py::list list;
            for (Py_ssize_t k = 0; k < n; ++k) {
                const Merge& m = all[size_t(k)];
                if (!done[size_t(k)]) continue;  // it never applies, or its pair comes again later
                py::list merge(3);
                PyList_SET_ITEM(merge.ptr(), 0, py::int_(tokens_[size_t(m.left)].core_id).release().ptr());
                PyList_SET_ITEM(merge.ptr(), 1, py::int_(tokens_[size_t(m.right)].core_id).release().ptr());
                PyList_SET_ITEM(merge.ptr(), 2, py::int_(tokens_[size_t(m.made)].core_id).release().ptr());
                list.append(merge);
            }
            ranked = list;
        }
        py::list unmade;  // the vocabulary's tokens that neither a byte nor a merge makes
        for (const Token& t : tokens_)
            if (t.core_id < 0) unmade.append(t.key);
        for (py::handle key : not_bytes_) unmade.append(key);
        py::list token_ids;
        for (int64_t i : ids) token_ids.append(i);
        return py::make_tuple(core_merges, token_ids, unmade, ranked);
    }

  private:
    struct Token {
        py::handle key;        // the vocab's str (the dict keeps it alive)
        int64_t id;            // the file's id
        size_t offset, size;   // its bytes, in bytes_
        uint64_t hash;
        int64_t core_id = -1;  // the core's, once a byte or a merge makes it
    };
    struct Merge {
        int32_t left, right, made;  // indices in tokens_
    };
    static uint64_t pair_of(const Merge& m) { return uint64_t(uint32_t(m.left)) << 32 | uint32_t(m.right); }

    std::vector<int> byte_of_;           // character -> byte, -1 outside the alphabet
    std::vector<Token> tokens_;          // the vocabulary's tokens of the alphabet
    std::string bytes_;                  // their bytes, one after the other
    std::vector<int32_t> slots_;         // open addressing over tokens_ by their bytes: index + 1, 0 empty
    std::vector<py::handle> not_bytes_;  // vocab keys outside the alphabet (added tokens' text)

    // The table of tokens by their bytes: one probe sequence per lookup, no allocation
    // per token (a std::unordered_map of strings was half of the function's time).
    static uint64_t hash(std::string_view bytes) {
        uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a, then a mix so that the low bits (the slot) vary
        for (char c : bytes) h = (h ^ uint8_t(c)) * 0x100000001b3ull;
        h ^= h >> 29;
        h *= 0xbf58476d1ce4e5b9ull;
        return h ^ (h >> 32);
    }

    std::string_view bytes_of(const Token& t) const { return std::string_view(bytes_).substr(t.offset, t.size); }

    Token* find(std::string_view bytes) {
        uint64_t h = hash(bytes), mask = slots_.size() - 1;
        for (uint64_t i = h & mask;; i = (i + 1) & mask) {
            int32_t slot = slots_[i];
            if (slot == 0) return nullptr;
            Token& t = tokens_[size_t(slot - 1)];
            if (t.hash == h && bytes_of(t) == bytes) return &t;
        }
    }

    void index_tokens() {
        size_t size = 16;
        while (size < tokens_.size() * 2) size *= 2;
        slots_.assign(size, 0);
        for (size_t k = 0; k < tokens_.size(); ++k) {
            uint64_t i = tokens_[k].hash & (size - 1);
            while (slots_[i] != 0) i = (i + 1) & (size - 1);
            slots_[i] = int32_t(k + 1);
        }
    }

    int32_t index(const Token* t) const { return int32_t(t - tokens_.data()); }

    static std::string at(Py_ssize_t k) { return "merge " + std::to_string(k) + ": "; }

    static std::string repr(py::handle obj) { return py::repr(obj).cast<std::string>(); }

    // A merge as the file writes it, and the token it makes in the alphabet.
    static py::str joined_text(py::handle item) {
        if (PyUnicode_Check(item.ptr())) return item.attr("replace")(" ", "");
        return py::str("").attr("join")(item);
    }

    // One of a merge's two tokens as the file writes it (0: the left one).
    static py::str part_text(py::handle item, int which) {
        if (PyUnicode_Check(item.ptr())) return item.attr("split")(" ")[py::int_(which)];
        return py::reinterpret_borrow<py::str>(PyList_GET_ITEM(item.ptr(), which));
    }

    static std::string text(py::handle item) {
        if (PyUnicode_Check(item.ptr())) return item.cast<std::string>();
        return py::str(" ").attr("join")(item).cast<std::string>();
    }

    // The bytes a str of the alphabet stands for, appended to out; false at a character
    // outside it (its position in bad).
    bool to_bytes(PyObject* s, Py_ssize_t start, Py_ssize_t stop, std::string& out, Py_ssize_t& bad) const {
        int kind = PyUnicode_KIND(s);
        const void* data = PyUnicode_DATA(s);
        for (Py_ssize_t i = start; i < stop; ++i) {
            Py_UCS4 c = PyUnicode_READ(kind, data, i);
            if (c >= byte_of_.size() || byte_of_[c] < 0) {
                bad = i;
                return false;
            }
            out.push_back(char(byte_of_[c]));
        }
        return true;
    }

    void read_vocab(py::handle vocab) {
        if (!PyDict_Check(vocab.ptr()))
            throw py::value_error("the model's \"vocab\" is not a dict from token strings to ids");
        tokens_.reserve(size_t(PyDict_GET_SIZE(vocab.ptr())));
        PyObject *key, *value;
        Py_ssize_t pos = 0;
        while (PyDict_Next(vocab.ptr(), &pos, &key, &value)) {
            if (!PyUnicode_Check(key) || !PyLong_CheckExact(value))
                throw py::value_error("expected a vocabulary from token strings to int ids");
            int overflow = 0;
            long long id = PyLong_AsLongLongAndOverflow(value, &overflow);
            if (overflow || id < 0) throw py::value_error("the vocabulary's token " +
                                                          py::repr(key).cast<std::string>() + " has a negative or "
                                                          "huge id");
            size_t offset = bytes_.size();
            Py_ssize_t bad;
            if (!to_bytes(key, 0, PyUnicode_GET_LENGTH(key), bytes_, bad)) {
                bytes_.resize(offset);
                not_bytes_.push_back(key);
                continue;
            }
            size_t size = bytes_.size() - offset;
            tokens_.push_back({key, id, offset, size, hash(std::string_view(bytes_).substr(offset, size))});
        }
        index_tokens();
    }

    // The file's ids of the 256 bytes, in the byte's order; -1 for a byte with no token
    // that UTF-8 never holds (0xC0, 0xC1, 0xF5 to 0xFF: some vocabularies leave them out,
    // and text never reaches them); a byte UTF-8 text may hold must have one.
    std::vector<int64_t> byte_ids() {
        std::vector<int64_t> ids;
        for (int b = 0; b < 256; ++b) {
            char byte = char(b);
            Token* found = find(std::string_view(&byte, 1));
            if (found == nullptr) {
                if (b == 0xC0 || b == 0xC1 || b >= 0xF5) {
                    ids.push_back(-1);
                    continue;
                }
                throw py::value_error("the byte " + std::to_string(b) + " has no token");
            }
            found->core_id = b;
            ids.push_back(found->id);
        }
        return ids;
    }

    // Merge k's two tokens, as bytes, into both: "a b" (one space: the alphabet has none)
    // or a list of two str. Gives where the second starts.
    size_t parts(py::handle item, Py_ssize_t k, std::string& both) const {
        both.clear();
        PyObject* a = nullptr;
        PyObject* b = nullptr;
        Py_ssize_t split = -1;  // "a b": where the space is
        bool one_str = PyUnicode_Check(item.ptr());
        if (one_str) {
            Py_ssize_t n = PyUnicode_GET_LENGTH(item.ptr());
            Py_ssize_t space = PyUnicode_FindChar(item.ptr(), ' ', 0, n, 1);
            // One space, with a token on each side of it: " a" or "a " names an empty token.
            if (space > 0 && space < n - 1 && PyUnicode_FindChar(item.ptr(), ' ', space + 1, n, 1) < 0) split = space;
            a = b = item.ptr();
        } else if (PyList_Check(item.ptr()) && PyList_GET_SIZE(item.ptr()) == 2 &&
                   PyUnicode_Check(PyList_GET_ITEM(item.ptr(), 0)) && PyUnicode_Check(PyList_GET_ITEM(item.ptr(), 1)) &&
                   PyUnicode_GET_LENGTH(PyList_GET_ITEM(item.ptr(), 0)) > 0 &&
                   PyUnicode_GET_LENGTH(PyList_GET_ITEM(item.ptr(), 1)) > 0) {
            a = PyList_GET_ITEM(item.ptr(), 0);
            b = PyList_GET_ITEM(item.ptr(), 1);
        }
        if (a == nullptr || (one_str && split < 0)) {
            // Shown as it is when it is text (a str, or a list of two str with an empty one);
            // anything else by its type, as its repr may be huge or nested past any depth.
            const bool text_pair = PyList_Check(item.ptr()) && PyList_GET_SIZE(item.ptr()) == 2 &&
                                   PyUnicode_Check(PyList_GET_ITEM(item.ptr(), 0)) &&
                                   PyUnicode_Check(PyList_GET_ITEM(item.ptr(), 1));
            std::string got = PyUnicode_Check(item.ptr()) || text_pair ? py::repr(item).cast<std::string>().substr(0, 80)
                                                                       : std::string(Py_TYPE(item.ptr())->tp_name);
            throw py::value_error(at(k) + "expected two tokens, got " + got);
        }
        Py_ssize_t bad;
        bool ok_left = to_bytes(a, 0, one_str ? split : PyUnicode_GET_LENGTH(a), both, bad);
        size_t second = both.size();
        PyObject* holder = ok_left ? b : a;  // the str that holds the character outside the alphabet
        bool ok_right = ok_left && to_bytes(b, one_str ? split + 1 : 0, PyUnicode_GET_LENGTH(b), both, bad);
        if (!ok_right) {
            auto c = py::reinterpret_steal<py::str>(PyUnicode_Substring(holder, bad, bad + 1));
            throw py::value_error(at(k) + text(item) + " has " + repr(c) + ", which is not in the byte alphabet");
        }
        return second;
    }
};

// The binding: (merges as (left, right) in the core's ids, the file's id of each core
// token (bytes then merges; -1 for a byte UTF-8 never holds that has no token), the
// vocabulary's tokens no byte or merge makes, and the rules' "ranked_merges": None when
// the core's merges are the file's in its order, else [[left, right, made], ...]).
inline py::tuple huggingface_merges(py::handle vocab, py::handle merges, py::handle alphabet) {
    return HuggingFaceMerges(alphabet).read(vocab, merges);
}

// GPT-2's byte alphabet, in which a tokenizer.json writes its tokens: the byte of each
// character, -1 for a character outside it. Bytes that print as one Latin-1 character
// stand for themselves; the others, in order, for U+0100 on.
inline const std::vector<int>& alphabet_bytes() {
    static const std::vector<int> byte_of = [] {
        std::vector<int> table(256 + 68, -1);
        int next = 256;
        for (int b = 0; b < 256; ++b) {
            bool prints = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
            table[size_t(prints ? b : next++)] = b;
        }
        return table;
    }();
    return byte_of;
}

// The model's options from the rules dict (the keys "ignore_merges", "ranked_merges",
// "unmade_tokens"; the others are another reader's), None for none. A mistake is a
// TypeError or ValueError that names the key.
inline bpe::ModelOptions model_options_from(py::handle rules) {
    bpe::ModelOptions options;
    if (rules.is_none()) return options;
    if (!PyDict_Check(rules.ptr())) throw py::type_error("rules must be a dict, not " + type_name(rules));
    auto get = [&](const char* key) -> py::handle {
        PyObject* value = PyDict_GetItemString(rules.ptr(), key);
        return value == nullptr ? py::none() : py::handle(value);
    };
    auto id_from = [](py::handle item, const std::string& what) -> uint32_t {
        std::optional<py::int_> value = PyBool_Check(item.ptr()) ? std::nullopt : as_index(item);
        if (!value) throw py::type_error(what + " must be an int, not " + type_name(item));
        long long id = clamped_long_long(*value);
        if (id < 0 || id > bpe::kMaxId)
            throw py::value_error(what + " is " + std::string(py::repr(item)) + ": ids must be between 0 and " +
                                  std::to_string(bpe::kMaxId));
        return uint32_t(id);
    };

    py::handle ignore = get("ignore_merges");
    if (!ignore.is_none()) {
        if (!PyBool_Check(ignore.ptr()))
            throw py::type_error("rules[\"ignore_merges\"] must be True or False, not " + type_name(ignore));
        options.ignore_merges = ignore.ptr() == Py_True;
    }

    // Merging from characters: checked by py_rules.h's reader, which runs first.
    if (py::handle chars = get("char_merges"); !chars.is_none()) options.char_merges = char_merges_from_python(chars);

    py::handle ranked = get("ranked_merges");
    if (!ranked.is_none()) {
        if (!PyList_Check(ranked.ptr()))
            throw py::type_error("rules[\"ranked_merges\"] must be None or a list of [left, right, made], not " +
                                 type_name(ranked));
        Py_ssize_t n = PyList_GET_SIZE(ranked.ptr());
        options.ranked_merges.reserve(size_t(n));
        // [left, right, made] each, or [left, right, made, rank] each (explicit ranks).
        Py_ssize_t width = 0;
        for (Py_ssize_t k = 0; k < n; ++k) {
            py::handle merge = PyList_GET_ITEM(ranked.ptr(), k);
            std::string what = "rules[\"ranked_merges\"][" + std::to_string(k) + "]";
            bool sequence = PyList_Check(merge.ptr()) || PyTuple_Check(merge.ptr());
            const Py_ssize_t size = sequence ? PySequence_Size(merge.ptr()) : 0;
            if (!sequence || (size != 3 && size != 4))
                throw py::type_error(what + " must be [left, right, made] or [left, right, made, rank], not " +
                                     (sequence ? std::string(py::repr(merge)).substr(0, 80) : type_name(merge)));
            if (k == 0) width = size;
            if (size != width)
                throw py::value_error(what + " has " + std::to_string(size) + " items, but rules[\"ranked_merges\"][0] " +
                                      std::to_string(width) + ": give every merge a rank, or none");
            std::array<uint32_t, 3> ids;
            for (int i = 0; i < 3; ++i)
                ids[size_t(i)] = id_from(PySequence_Fast_GET_ITEM(merge.ptr(), i), what + "[" + std::to_string(i) + "]");
            options.ranked_merges.push_back(ids);
            if (size == 4) {
                py::handle rank = PySequence_Fast_GET_ITEM(merge.ptr(), 3);
                std::optional<py::int_> value = PyBool_Check(rank.ptr()) ? std::nullopt : as_index(rank);
                if (!value) throw py::value_error(what + "[3] (its rank) must be an int, not " + type_name(rank));
                long long r = clamped_long_long(*value);
                if (r < 0 || r >= (1ll << 24))
                    throw py::value_error(what + "[3] (its rank) is " + std::to_string(r) + ", not between 0 and " +
                                          std::to_string((1 << 24) - 1));
                options.merge_ranks.push_back(uint32_t(r));
            }
        }
    }

    py::handle unmade = get("unmade_tokens");
    if (!unmade.is_none()) {
        if (!PyDict_Check(unmade.ptr()))
            throw py::type_error("rules[\"unmade_tokens\"] must be None or a dict from token text to id, not " +
                                 type_name(unmade));
        const std::vector<int>& byte_of = alphabet_bytes();
        PyObject *key, *value;
        Py_ssize_t pos = 0;
        while (PyDict_Next(unmade.ptr(), &pos, &key, &value)) {
            if (!PyUnicode_Check(key))
                throw py::type_error("rules[\"unmade_tokens\"]'s keys must be str, not " + type_name(key));
            std::string what = "rules[\"unmade_tokens\"][" + std::string(py::repr(key)).substr(0, 80) + "]";
            bpe::ModelOptions::UnmadeToken token;
            token.id = id_from(value, what);
            // Its bytes through the alphabet; a token written outside it (as Hugging Face's
            // decoder does) its text's UTF-8, and no chunk, written in the alphabet, is it.
            // With char_merges every token is its text's UTF-8.
            Py_ssize_t length = PyUnicode_GET_LENGTH(key);
            token.whole = !options.char_merges;
            for (Py_ssize_t i = 0; i < length && token.whole; ++i) {
                Py_UCS4 c = PyUnicode_READ_CHAR(key, i);
                if (c < byte_of.size() && byte_of[c] >= 0) token.bytes.push_back(char(byte_of[c]));
                else token.whole = false;
            }
            if (!token.whole) {
                Py_ssize_t size;
                const char* utf8 = PyUnicode_AsUTF8AndSize(key, &size);
                if (utf8 == nullptr) throw py::error_already_set();  // a lone surrogate
                token.bytes.assign(utf8, size_t(size));
                token.whole = bool(options.char_merges);
            }
            options.unmade_tokens.push_back(std::move(token));
        }
    }
    return options;
}

}  // namespace bindings
