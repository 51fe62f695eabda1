// Added tokens from Python: the "added_tokens" entries of a rules dict checked and read
// into bpe::AddedToken (one place for what an entry must hold), and
// added_token_segments, one pass of the matcher (added_tokens.h) seen from Python, for
// tests against Hugging Face. Included by _core.cpp only.
#pragma once

#include <pybind11/pybind11.h>

#include <string>
#include <unordered_set>
#include <vector>

#include "added_tokens.h"
#include "py_args.h"
#include "py_text.h"

namespace bindings {

namespace py = pybind11;

// One "added_tokens" entry, named `what` in the messages (rules['added_tokens'][0],
// tokens[0]): a dict with exactly the keys content (a non-empty str), id (an int for a
// token id) and the flags special, normalized, lstrip, rstrip, single_word (each True or
// False: "false" as a str is refused, not read as true). Every mistake is a ValueError
// naming the key. The one reader of an entry, for the rules dict and the matcher's test
// binding alike.
inline bpe::AddedToken added_token_from_python(py::handle entry, const std::string& what) {
    auto bad = [&](const std::string& where, const std::string& wrong) -> void {
        throw py::value_error(what + where + " " + wrong);
    };
    auto shown = [](py::handle obj) { return type_name(obj) + " " + std::string(py::repr(obj)); };
    if (!PyDict_Check(entry.ptr())) bad("", "must be a dict, not " + shown(entry));
    static const char* const kFlags[] = {"special", "normalized", "lstrip", "rstrip", "single_word"};
    py::dict dict = py::reinterpret_borrow<py::dict>(entry);
    for (auto item : dict) {
        std::string key = PyUnicode_Check(item.first.ptr()) ? py::cast<std::string>(item.first) : "";
        bool known = key == "content" || key == "id";
        for (const char* flag : kFlags) known = known || key == flag;
        if (!known) bad("", "has a key it does not know: " + std::string(py::repr(item.first)));
    }
    auto field = [&](const char* key) -> py::handle {
        PyObject* value = PyDict_GetItemString(dict.ptr(), key);
        if (value == nullptr) bad("", std::string("has no '") + key + "'");
        return value;
    };
    bpe::AddedToken token;
    py::handle content = field("content");
    if (!PyUnicode_Check(content.ptr())) bad("['content']", "must be a str, not " + shown(content));
    token.content = utf8_of(content, what + "['content']");
    if (token.content.empty()) bad("['content']", "is empty");
    py::handle id = field("id");
    if (!as_index(id)) bad("['id']", "must be an int, not " + shown(id));
    token.id = uint32_t(size_from_python(id, what + "['id']", 0, bpe::kMaxId, "an id from 0 to MAX_ID"));
    bool* flags[] = {&token.special, &token.normalized, &token.lstrip, &token.rstrip, &token.single_word};
    for (size_t k = 0; k < 5; ++k) {
        py::handle value = field(kFlags[k]);
        if (!is_bool(value)) bad(std::string("['") + kFlags[k] + "']", "must be True or False, not " + shown(value));
        *flags[k] = value.ptr() == Py_True;
    }
    return token;
}

// A list of "added_tokens" entries as bpe::AddedTokens (a content given twice in one
// pass, normalized or not, is a ValueError).
inline bpe::AddedTokens added_tokens_from_python(py::handle entries, const std::string& what = "added_tokens") {
    if (!PyList_Check(entries.ptr()) && !PyTuple_Check(entries.ptr()))
        throw py::value_error(what + " must be a list of dicts, not " + type_name(entries));
    std::vector<bpe::AddedToken> tokens;
    size_t k = 0;
    for (py::handle entry : entries) tokens.push_back(added_token_from_python(entry, what + "[" + std::to_string(k++) + "]"));
    try {
        return bpe::AddedTokens(std::move(tokens));
    } catch (const std::invalid_argument& e) {
        throw py::value_error(what + ": " + e.what());
    }
}

// One pass of the matcher over `text`: (begin, end, id or None) in characters. allowed:
// "all", or the contents of the special tokens to match (the others are text).
inline py::list added_token_segments(py::handle text, py::handle tokens, bool normalized, py::handle allowed) {
    if (!PyUnicode_Check(text.ptr())) throw py::type_error("text must be a str, not " + type_name(text));
    bpe::AddedTokens added = added_tokens_from_python(tokens, "tokens");
    const std::string utf8 = utf8_of(text, "text");
    std::vector<bool> allow(added.tokens().size(), false);
    if (PyUnicode_Check(allowed.ptr())) {
        if (py::cast<std::string>(allowed) != "all")
            throw py::value_error("allowed must be \"all\" or the contents of special tokens, got " +
                                  std::string(py::repr(allowed)));
        allow.assign(allow.size(), true);
    } else {
        if (!is_iterable_of_items(allowed) && !PyAnySet_Check(allowed.ptr()))
            throw py::type_error("allowed must be \"all\" or an iterable of str, not " + type_name(allowed));
        for (py::handle name : allowed) {
            if (!PyUnicode_Check(name.ptr()))
                throw py::type_error("allowed must hold str, not " + type_name(name));
            std::string content = utf8_of(name, "allowed");
            bool found = false;
            for (size_t k = 0; k < allow.size(); ++k)
                if (added.tokens()[k].special && added.tokens()[k].content == content) allow[k] = found = true;
            if (!found) throw py::value_error("allowed holds " + std::string(py::repr(name)) + ", no special token's content");
        }
    }
    std::vector<bpe::Segment> segments;
    added.segments(utf8, normalized, [&](size_t k) { return bool(allow[k]); }, segments);
    // Byte offsets to character offsets: segments may overlap, so a table, not a walk.
    std::vector<size_t> chars(utf8.size() + 1, 0);
    for (size_t i = 0, c = 0; i <= utf8.size(); ++i) {
        chars[i] = c;
        if (i < utf8.size() && (static_cast<unsigned char>(utf8[i]) & 0xC0) != 0x80) ++c;
    }
    // chars[i] counts the characters that begin before byte i: at a boundary, its offset.
    py::list out;
    for (const bpe::Segment& s : segments) {
        py::object id = s.special == bpe::Segment::kText ? py::object(py::none()) : py::object(py::int_(s.special));
        out.append(py::make_tuple(chars[s.begin], chars[s.end], id));
    }
    return out;
}

inline void bind_added_tokens(py::module_& m) {
    m.def("added_token_segments", &added_token_segments, py::arg("text"), py::arg("tokens"), py::arg("normalized"),
          py::arg("allowed") = "all",
          "One pass of Hugging Face's added-token matching over text, with the tokens (\"added_tokens\" entries) "
          "whose normalized flag is `normalized`: (begin, end, id or None for text) in characters.");
}

}  // namespace bindings
