// The rules dict from Python (a tokenizer.json's rules in our own form: docs and
// bpe/huggingface.py say what each key holds) read into bpe::Rules, strictly: every
// key's type is checked, and a value of the wrong type (a bool written as a str, as a
// file may) is a ValueError that names where it is, as Hugging Face refuses such a file.
#pragma once

#include <pybind11/pybind11.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "encoder.h"
#include "pretokenizer.h"
#include "py_added.h"
#include "py_args.h"
#include "py_text.h"
#include "split.h"

namespace bindings {

namespace py = pybind11;

// The rules' keys, each read by one reader (the model's options by vocabulary.h's).
inline constexpr const char* kRuleKeys[] = {"normalizer",    "pre_tokenizer", "added_tokens", "ignore_merges",
                                            "ranked_merges", "unmade_tokens", "char_merges",  "decoder",
                                            "template",      "padding",       "truncation"};

[[noreturn]] inline void bad_rule(const std::string& where, const std::string& what) {
    throw py::value_error("rules" + where + " " + what);
}

inline std::string shown(py::handle obj) { return type_name(obj) + " " + std::string(py::repr(obj)); }

inline bool rule_bool(py::handle obj, const std::string& where) {
    if (!is_bool(obj)) bad_rule(where, "must be True or False, not " + shown(obj));
    return obj.ptr() == Py_True;
}

inline std::string rule_str(py::handle obj, const std::string& where) {
    if (!PyUnicode_Check(obj.ptr())) bad_rule(where, "must be a str, not " + shown(obj));
    return utf8_of(obj, "rules" + where);
}

inline py::dict rule_dict(py::handle obj, const std::string& where) {
    if (!PyDict_Check(obj.ptr())) bad_rule(where, "must be a dict, not " + shown(obj));
    return py::reinterpret_borrow<py::dict>(obj);
}

inline py::list rule_list(py::handle obj, const std::string& where) {
    if (!PyList_Check(obj.ptr()) && !PyTuple_Check(obj.ptr())) bad_rule(where, "must be a list, not " + shown(obj));
    return py::list(py::reinterpret_borrow<py::object>(obj));
}

// d[key], which must be there, and no key the step does not know.
inline py::handle rule_key(const py::dict& d, const char* key, const std::string& where) {
    PyObject* value = PyDict_GetItemString(d.ptr(), key);
    if (value == nullptr) bad_rule(where, std::string("has no '") + key + "'");
    return value;
}

inline void only_keys(const py::dict& d, std::initializer_list<const char*> keys, const std::string& where) {
    for (auto item : d) {
        bool known = false;
        if (PyUnicode_Check(item.first.ptr()))
            for (const char* key : keys) known |= py::cast<std::string>(item.first) == key;
        if (!known) bad_rule(where, "has a key it does not know: " + std::string(py::repr(item.first)));
    }
}

// A Split's regex, in Oniguruma's meanings (split.h: a named rule's text is that rule,
// its fast splitter; a bare word is a regex that matches itself, as Hugging Face reads it).
inline bpe::SplitRule split_rule_from_regex(const std::string& text, const std::string& where) {
    try {
        return bpe::parse_pattern(text, bpe::Dialect::kOniguruma);
    } catch (const std::exception& e) {
        bad_rule(where, "is a regex the engine cannot run: " + std::string(e.what()));
    }
}

inline bpe::Behavior behavior_from(const std::string& name, const std::string& where) {
    if (name == "Isolated") return bpe::Behavior::kIsolated;
    if (name == "Removed") return bpe::Behavior::kRemoved;
    if (name == "MergedWithPrevious") return bpe::Behavior::kMergedWithPrevious;
    if (name == "MergedWithNext") return bpe::Behavior::kMergedWithNext;
    if (name == "Contiguous") return bpe::Behavior::kContiguous;
    bad_rule(where, "is '" + name +
                        "', not a behavior (Isolated, Removed, MergedWithPrevious, MergedWithNext or Contiguous)");
}

// A pre_tokenizer of no steps ([]) leaves each text piece one chunk: for char_merges
// models, whose engine cuts a piece only where no token can span the cut.
inline void steps_from_python(py::handle obj, bpe::Rules& rules, bool char_merges) {
    if (obj.is_none()) return;
    const py::list steps = rule_list(obj, "['pre_tokenizer']");
    if (steps.size() == 0 && char_merges) return;
    if (steps.size() == 1 && PyDict_Check(py::handle(steps[0]).ptr()) &&
        PyDict_GetItemString(py::handle(steps[0]).ptr(), "type") != nullptr &&
        py::str(PyDict_GetItemString(py::handle(steps[0]).ptr(), "type")).equal(py::str("Metaspace"))) {
        const std::string where = "['pre_tokenizer'][0]";
        if (!char_merges) bad_rule(where, "is Metaspace, which needs char_merges (its tokens are text)");
        const py::dict step = rule_dict(steps[0], where);
        only_keys(step, {"type", "replacement", "prepend_scheme", "split"}, where);
        bpe::Metaspace meta;
        meta.replacement = rule_str(rule_key(step, "replacement", where), where + "['replacement']");
        if (meta.replacement.empty()) bad_rule(where + "['replacement']", "must not be empty");
        const std::string scheme = rule_str(rule_key(step, "prepend_scheme", where), where + "['prepend_scheme']");
        if (scheme == "always") meta.prepend = bpe::Metaspace::Prepend::kAlways;
        else if (scheme == "first") meta.prepend = bpe::Metaspace::Prepend::kFirst;
        else if (scheme == "never") meta.prepend = bpe::Metaspace::Prepend::kNever;
        else bad_rule(where + "['prepend_scheme']", "is '" + scheme + "', not always, first or never");
        meta.split = rule_bool(rule_key(step, "split", where), where + "['split']");
        rules.metaspace = std::move(meta);
        return;
    }
    bool byte_level = false;
    for (size_t k = 0; k < steps.size(); ++k) {
        const std::string where = "['pre_tokenizer'][" + std::to_string(k) + "]";
        const py::dict step = rule_dict(steps[k], where);
        const std::string type = rule_str(rule_key(step, "type", where), where + "['type']");
        if (byte_level) bad_rule(where, "comes after ByteLevel, which must be the last step");
        if (type == "Split") {
            only_keys(step, {"type", "pattern", "behavior", "invert"}, where);
            bpe::SplitStep s;
            s.rule = split_rule_from_regex(rule_str(rule_key(step, "pattern", where), where + "['pattern']"),
                                           where + "['pattern']");
            s.behavior = behavior_from(rule_str(rule_key(step, "behavior", where), where + "['behavior']"),
                                       where + "['behavior']");
            s.invert = rule_bool(rule_key(step, "invert", where), where + "['invert']");
            rules.steps.push_back(std::move(s));
        } else if (type == "Digits") {
            only_keys(step, {"type", "individual_digits"}, where);
            const bool each = rule_bool(rule_key(step, "individual_digits", where), where + "['individual_digits']");
            // Each numeric character is a match of its own (digits.rs): apart, or in runs.
            static const bpe::SplitRule numeric = bpe::parse_pattern(R"(\p{N})", bpe::Dialect::kOniguruma);
            rules.steps.push_back({numeric, each ? bpe::Behavior::kIsolated : bpe::Behavior::kContiguous, false});
        } else if (type == "ByteLevel") {
            only_keys(step, {"type", "use_regex", "add_prefix_space", "trim_offsets", "trim_prefix_space"}, where);
            byte_level = true;
            rules.use_regex = rule_bool(rule_key(step, "use_regex", where), where + "['use_regex']");
            rules.add_prefix_space = rule_bool(rule_key(step, "add_prefix_space", where), where + "['add_prefix_space']");
            rules.trim_offsets = rule_bool(rule_key(step, "trim_offsets", where), where + "['trim_offsets']");
            // Trimming is the post-processor's, and reads its own add_prefix_space (as
            // this step's where the file says nothing else).
            rules.trim_prefix_space = rules.add_prefix_space;
            if (PyObject* v = PyDict_GetItemString(step.ptr(), "trim_prefix_space"))
                rules.trim_prefix_space = rule_bool(v, where + "['trim_prefix_space']");
            // Its regex is GPT-2's, which the named rule splits as.
            if (rules.use_regex) rules.steps.push_back({bpe::Pattern::kGpt2, bpe::Behavior::kIsolated, false});
        } else if (type == "Metaspace") {
            bad_rule(where, "is Metaspace, which must be the only step");
        } else {
            bad_rule(where + "['type']", "is '" + type + "', not a step this engine runs (Split, Digits or ByteLevel)");
        }
    }
    if (char_merges)
        bad_rule("['pre_tokenizer']", "must be [] or [Metaspace] with char_merges, whose tokens are text, not bytes");
    if (!byte_level) bad_rule("['pre_tokenizer']", "has no ByteLevel step (a byte-level BPE's last step)");
}

inline bpe::AddedTokens added_from_python(py::handle obj) {
    if (obj.is_none()) return {};
    return added_tokens_from_python(rule_list(obj, "['added_tokens']"), "rules['added_tokens']");
}

inline int64_t rule_int(py::handle obj, const std::string& where) {
    std::optional<py::int_> value = is_bool(obj) ? std::nullopt : as_index(obj);
    if (!value) bad_rule(where, "must be an int, not " + shown(obj));
    return clamped_long_long(*value);
}

// One normalizer step ({"type": ...}); normalizer.h says what each does.
inline bpe::NormalizerStep normalizer_step(py::handle obj, const std::string& where) {
    const py::dict step = rule_dict(obj, where);
    const std::string type = rule_str(rule_key(step, "type", where), where + "['type']");
    bpe::NormalizerStep s;
    auto str = [&](const char* key) { return rule_str(rule_key(step, key, where), where + "['" + key + "']"); };
    auto flag = [&](const char* key) { return rule_bool(rule_key(step, key, where), where + "['" + key + "']"); };
    if (type == "NFC") {
        only_keys(step, {"type"}, where);
        s.kind = bpe::NormalizerStep::Kind::kNfc;
    } else if (type == "SentencePiece") {
        only_keys(step, {"type", "add_dummy_prefix", "remove_extra_whitespaces", "escape_whitespaces"}, where);
        s.kind = bpe::NormalizerStep::Kind::kSentencePiece;
        s.add_dummy_prefix = flag("add_dummy_prefix");
        s.remove_extra_whitespaces = flag("remove_extra_whitespaces");
        s.escape_whitespaces = flag("escape_whitespaces");
    } else if (type == "Precompiled") {
        only_keys(step, {"type", "charsmap"}, where);
        s.kind = bpe::NormalizerStep::Kind::kPrecompiled;
        const std::string text = str("charsmap");
        py::bytes blob;
        try {
            blob = py::module_::import("base64").attr("b64decode")(py::str(text), py::arg("validate") = true);
        } catch (py::error_already_set& e) {
            bad_rule(where + "['charsmap']", "is not base64: " + std::string(py::str(e.value())));
        }
        try {
            s.charsmap = std::make_shared<const bpe::Charsmap>(std::string(blob));
        } catch (const std::invalid_argument& e) {
            bad_rule(where + "['charsmap']", "is not a charsmap this engine can read: " + std::string(e.what()));
        }
    } else if (type == "Replace") {
        only_keys(step, {"type", "pattern", "content"}, where);
        s.kind = bpe::NormalizerStep::Kind::kReplace;
        s.pattern = str("pattern");
        s.content = str("content");
        if (s.pattern.empty()) bad_rule(where + "['pattern']", "must not be empty");
    } else if (type == "Prepend") {
        only_keys(step, {"type", "prepend"}, where);
        s.kind = bpe::NormalizerStep::Kind::kPrepend;
        s.content = str("prepend");
    } else {
        bad_rule(where + "['type']", "is '" + type + "', not a normalizer step this engine runs "
                                                     "(NFC, Precompiled, SentencePiece, Replace or Prepend)");
    }
    return s;
}

// "NFC" (one step), or a list of steps.
inline bpe::Normalizer normalizer_from_python(py::handle obj) {
    if (obj.is_none()) return {};
    if (PyUnicode_Check(obj.ptr())) {
        if (rule_str(obj, "['normalizer']") != "NFC")
            bad_rule("['normalizer']", "is " + shown(obj) + ", not 'NFC', a list of steps or None");
        return bpe::Normalizer({bpe::NormalizerStep{}});
    }
    if (!PyList_Check(obj.ptr()) && !PyTuple_Check(obj.ptr()))
        bad_rule("['normalizer']", "must be 'NFC', a list of steps or None, not " + shown(obj));
    const py::list steps = rule_list(obj, "['normalizer']");
    std::vector<bpe::NormalizerStep> out;
    for (size_t k = 0; k < steps.size(); ++k)
        out.push_back(normalizer_step(steps[k], "['normalizer'][" + std::to_string(k) + "]"));
    return bpe::Normalizer(std::move(out));
}

// {"replace": None | [from, to], "strip_start": int, "unk_text": None | str, and optionally
// "whole_runs", "drop_special" and "strip_each", each a bool (decoder.h)}.
inline std::optional<bpe::Decoder> decoder_from_python(py::handle obj) {
    if (obj.is_none()) return std::nullopt;
    const std::string where = "['decoder']";
    const py::dict d = rule_dict(obj, where);
    only_keys(d, {"replace", "strip_start", "unk_text", "whole_runs", "drop_special", "strip_each"}, where);
    bpe::Decoder decoder;
    if (py::handle r = rule_key(d, "replace", where); !r.is_none()) {
        const py::list pair = rule_list(r, where + "['replace']");
        if (pair.size() != 2) bad_rule(where + "['replace']", "must be [from, to] or None");
        decoder.replace.emplace(rule_str(pair[0], where + "['replace'][0]"),
                                rule_str(pair[1], where + "['replace'][1]"));
        if (decoder.replace->first.empty()) bad_rule(where + "['replace'][0]", "must not be empty");
    }
    const int64_t strip = rule_int(rule_key(d, "strip_start", where), where + "['strip_start']");
    if (strip < 0 || strip > 1000) bad_rule(where + "['strip_start']", "must be between 0 and 1000");
    decoder.strip_start = size_t(strip);
    if (py::handle u = rule_key(d, "unk_text", where); !u.is_none())
        decoder.unk_text = rule_str(u, where + "['unk_text']");
    // Optional (sentencepiece's reading where absent): Hugging Face's ByteFallback's.
    if (PyObject* w = PyDict_GetItemString(d.ptr(), "whole_runs"))
        decoder.whole_runs = rule_bool(w, where + "['whole_runs']");
    // Optional (False where absent): special tokens give no text, as sentencepiece's controls.
    if (PyObject* s = PyDict_GetItemString(d.ptr(), "drop_special"))
        decoder.drop_special = rule_bool(s, where + "['drop_special']");
    if (PyObject* e = PyDict_GetItemString(d.ptr(), "strip_each"))
        decoder.strip_each = rule_bool(e, where + "['strip_each']");
    return decoder;
}

// {"byte_fallback": bool, "unk_id": None | int, "fuse_unk": bool}, checked here (the
// model's options, vocabulary.h's, read it from the dict after).
inline bpe::CharMergeOptions char_merges_from_python(py::handle obj) {
    const std::string where = "['char_merges']";
    const py::dict d = rule_dict(obj, where);
    only_keys(d, {"byte_fallback", "unk_id", "fuse_unk"}, where);
    bpe::CharMergeOptions options;
    options.byte_fallback = rule_bool(rule_key(d, "byte_fallback", where), where + "['byte_fallback']");
    options.fuse_unk = rule_bool(rule_key(d, "fuse_unk", where), where + "['fuse_unk']");
    if (py::handle u = rule_key(d, "unk_id", where); !u.is_none()) {
        const int64_t id = rule_int(u, where + "['unk_id']");
        if (id < 0 || id > bpe::kMaxId)
            bad_rule(where + "['unk_id']", "is " + std::to_string(id) + ", not an id (0 to " +
                                               std::to_string(bpe::kMaxId) + ")");
        options.unk_id = uint32_t(id);
    }
    return options;
}

// The rules dict, or nullopt for None.
inline std::optional<bpe::Rules> rules_from_python(py::handle obj) {
    if (obj.is_none()) return std::nullopt;
    if (!PyDict_Check(obj.ptr())) throw py::type_error("rules must be a dict or None, not " + type_name(obj));
    const py::dict d = py::reinterpret_borrow<py::dict>(obj);
    for (auto item : d) {
        bool known = false;
        if (PyUnicode_Check(item.first.ptr()))
            for (const char* key : kRuleKeys) known |= py::cast<std::string>(item.first) == key;
        if (!known) throw py::value_error("rules has a key it does not know: " + std::string(py::repr(item.first)));
    }
    bpe::Rules rules;
    auto get = [&](const char* key) -> py::handle {
        PyObject* value = PyDict_GetItemString(d.ptr(), key);
        return value ? py::handle(value) : py::handle(Py_None);
    };
    // Without a pre-tokenizer the dict holds the model's options alone (vocabulary.h's),
    // and `pattern` splits the text as it does with no rules.
    const bool char_merges = !get("char_merges").is_none();
    if (char_merges) char_merges_from_python(get("char_merges"));
    if (get("pre_tokenizer").is_none()) {
        for (const char* key : {"normalizer", "added_tokens", "decoder", "char_merges"})
            if (!get(key).is_none())
                bad_rule("['pre_tokenizer']", std::string("is needed with ") + key + " (a list of steps, ByteLevel last)");
        return std::nullopt;
    }
    rules.normalizer = normalizer_from_python(get("normalizer"));
    steps_from_python(get("pre_tokenizer"), rules, char_merges);
    rules.decoder = decoder_from_python(get("decoder"));
    rules.added = added_from_python(get("added_tokens"));
    // sentencepiece's user-defined symbols escape its character map: the normalized added
    // tokens, under a SentencePiece step with one.
    std::vector<std::string> normalized_added;
    for (const bpe::AddedToken& token : rules.added.tokens())
        if (token.normalized) normalized_added.push_back(token.content);
    rules.normalizer.keep_whole(normalized_added);
    if (py::handle m = get("ignore_merges"); !m.is_none()) rule_bool(m, "['ignore_merges']");
    if (py::handle t = get("template"); !t.is_none()) {
        const py::list parts = rule_list(t, "['template']");
        if (parts.size() != 2) bad_rule("['template']", "must be [ids before, ids after]");
        for (size_t k = 0; k < 2; ++k)
            for (py::handle id : rule_list(parts[k], "['template'][" + std::to_string(k) + "]"))
                if (!as_index(id)) bad_rule("['template'][" + std::to_string(k) + "]", "holds " + shown(id) + ", not an id");
    }
    for (const char* key : {"padding", "truncation"})
        if (py::handle v = get(key); !v.is_none()) rule_dict(v, std::string("['") + key + "']");
    return rules;
}

}  // namespace bindings
