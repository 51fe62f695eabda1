// The split rules: where a text breaks into chunks that merges never cross.
//
// A rule is a named one, split by hand (split_rules.h names them: the default rule over
// bytes, split_bytes.h; GPT-2's, GPT-4's, Qwen2's and o200k's over UTF-8,
// split_unicode.h; each also 64 bytes at a time, split_simd.h), or any other regex,
// compiled (pattern.h). This file picks one for a text, and says where a text may be
// cut so that its pieces split as the whole does.
#pragma once

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "pattern.h"
#include "split_bytes.h"
#include "split_rules.h"
#include "split_simd.h"

namespace bpe {

// A split rule: a hand-written one, or a compiled regex (shared: an Encoder and its
// copies, and every thread, read one compiled pattern).
class SplitRule {
public:
    SplitRule(Pattern pattern = Pattern::kDefault) : pattern_(pattern) {}  // NOLINT: a name is a rule
    // A compiled pattern.
    explicit SplitRule(std::shared_ptr<const Regex> regex) : pattern_(Pattern::kRegex), regex_(std::move(regex)) {}

    Pattern pattern() const { return pattern_; }
    const Regex* regex() const { return regex_.get(); }
    // The name of a hand-written rule; a compiled one's regex text.
    std::string name() const {
        if (pattern_ == Pattern::kRegex) return regex_->text();
        if (pattern_ == Pattern::kDeepseek) return "DeepSeek's three Splits";
        for (const NamedRule& rule : kNamedRules)
            if (rule.pattern == pattern_) return std::string(rule.name);
        return "default";
    }
    // Whether the rule reads characters, and so needs valid UTF-8 (all but default).
    bool needs_utf8() const { return pattern_ != Pattern::kDefault; }
    // Whether is_safe_cut's places (below) are chunk boundaries under this rule: proven
    // for the hand-written rules; a regex can match across them (" ?[a-z ]+"), so text
    // split by one is never cut there (parallel.h splits each segment whole).
    bool cuts_at_safe_cuts() const { return pattern_ != Pattern::kRegex; }
    bool operator==(const SplitRule& other) const {
        return pattern_ == other.pattern_ && (pattern_ != Pattern::kRegex || (regex_->text() == other.regex_->text() &&
                                                                            regex_->dialect() == other.regex_->dialect()));
    }
    bool operator!=(const SplitRule& other) const { return !(*this == other); }

private:
    Pattern pattern_;
    std::shared_ptr<const Regex> regex_;
};

// A rule from its name ("default", "gpt2", "gpt4", "qwen2", "o200k") or a regex: a regex
// that is the text of a hand-written rule is that rule (and takes its name); any other is
// compiled (std::invalid_argument names what it cannot take).
inline SplitRule parse_pattern(std::string_view name, Dialect dialect = Dialect::kPython) {
    // In Oniguruma's dialect a name is a regex like any other, and a rule's texts name it
    // as they split alike in both dialects (tests/engine/test_pattern_oniguruma.py checks it).
    const bool python = dialect == Dialect::kPython;
    for (const NamedRule& rule : kNamedRules) {
        if (python && name == rule.name) return rule.pattern;
        if (rule.text_names_rule && (name == rule.regex || (!rule.same_split.empty() && name == rule.same_split) ||
                                     (!python && !rule.oniguruma.empty() && name == rule.oniguruma)))
            return rule.pattern;
    }
    // A bare word is a mistyped name, not a regex: as a regex it would match itself
    // and leave the rest of the text in gaps, which no one means.
    const bool word = dialect == Dialect::kPython && std::all_of(name.begin(), name.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
    });
    if (word) {
        std::string names;
        for (const NamedRule& rule : kNamedRules) names += (names.empty() ? "'" : "', '") + std::string(rule.name);
        throw std::invalid_argument("unknown split pattern '" + std::string(name) + "': expected " + names + "' or a regex");
    }
    return SplitRule(std::make_shared<const Regex>(name, dialect));
}

inline std::string pattern_name(const SplitRule& rule) { return rule.name(); }

// Calls emit(chunk) for each chunk of the text under a split pattern, a chunk at a
// time: the definition. The pattern is looked at once, outside the loop, and each loop
// inlines its own splitter. for_each_chunk below finds the same chunks faster.
template <class Emit>
inline void for_each_chunk_plain(std::string_view text, const SplitRule& rule, Emit&& emit) {
    if (rule.pattern() == Pattern::kRegex) {
        Regex::Matcher matcher(*rule.regex(), text);
        return for_each_chunk_with(text, [&matcher](std::string_view t, size_t i) { return regex_chunk_end(matcher, t, i); }, emit);
    }
    with_rule(rule.pattern(), [&](auto p) {
        for_each_chunk_with(text, [](std::string_view t, size_t i) { return rule_chunk_end<decltype(p)::value>(t, i); }, emit);
    });
}

// Calls emit(chunk) for each chunk of the text under a split pattern: by the 64-byte
// blocks of split_simd.h, in the SIMD tier chosen when the module was loaded, or by
// the loops above in the portable tier.
template <class Emit>
inline void for_each_chunk(std::string_view text, const SplitRule& rule, Emit&& emit) {
    const simd::Tier tier = simd::tier_in_use();
    if (tier == simd::Tier::kPortable || rule.pattern() == Pattern::kRegex) return for_each_chunk_plain(text, rule, emit);
    const simd::ClassifyFn classify = simd::classifier(tier);
    with_rule(rule.pattern(), [&](auto p) { simd::for_each_chunk_blocks<decltype(p)::value>(text, classify, emit); });
}

// The chunks of the text under a split pattern, handed over in runs of their ends
// (split_simd.h's for_each_chunk_run says how): on_ends(first, ends, count). The
// portable tier and compiled patterns find a chunk at a time, gathered into runs here.
// `readable`: how many bytes from the text's start may be read, at least its size
// (split_blocks').
template <class Ends>
inline void for_each_chunk_run(std::string_view text, size_t readable, const SplitRule& rule, Ends&& on_ends) {
    const simd::Tier tier = simd::tier_in_use();
    if (tier == simd::Tier::kPortable || rule.pattern() == Pattern::kRegex) {
        simd::EndRuns<Ends> runs(on_ends, simd::spread_loop);
        for_each_chunk_plain(text, rule,
                             [&](std::string_view chunk) { runs.end(size_t(chunk.data() - text.data()) + chunk.size()); });
        runs.done();
        return;
    }
    const simd::ClassifyFn classify = simd::classifier(tier);
    const simd::SpreadFn spread = simd::spreader(tier);
    with_rule(rule.pattern(), [&](auto p) { simd::for_each_chunk_run<decltype(p)::value>(text, readable, classify, spread, on_ends); });
}

// How many chunks the text splits into, and nothing else: the splitter's own speed.
inline size_t count_chunks(std::string_view text, const SplitRule& rule) {
    size_t count = 0;
    for_each_chunk(text, rule, [&](std::string_view) { ++count; });
    return count;
}

inline std::vector<std::string_view> pretokenize(std::string_view text, const SplitRule& rule = Pattern::kDefault) {
    std::vector<std::string_view> chunks;
    for_each_chunk(text, rule, [&](std::string_view chunk) { chunks.push_back(chunk); });
    return chunks;
}

// --- where a text may be cut ---------------------------------------------------------
//
// The safe-cut rule, the only one: a cut between an ASCII letter and an ASCII space.
// Splitting text[:p] and text[p:] each on its own then gives exactly the chunks of the
// whole text, under every pattern here, so a long text is cut there into pieces that
// are split one by one: between threads (parallel.h), a long str a piece at a time
// (the bindings, _core.cpp), and a file a piece at a time (bpe.sources, through the
// binding safe_cut; the benchmark cuts its texts with it too). Why it is safe:
//   - p starts a chunk of the whole text. The letter before p ends its chunk: under
//     the default rule it ends a run of word bytes, which a space cannot join; under
//     gpt2, gpt4 and qwen2 it ends a contraction, or a run of letters (\p{L}+), which
//     cannot take the space; under o200k it ends a run of cased letters, whose optional
//     contraction starts with an apostrophe, not a space.
//   - So the chunks from p on depend on text[p:] alone: each rule reads left to right,
//     with no lookbehind and no anchor, afresh from each chunk's start.
//   - The chunks before p looked no further than the character at p, and only to see
//     that it is not a letter (nor a word byte), which the end of text[:p] tells them
//     just the same.
//   - A cut at an ASCII byte leaves both pieces valid UTF-8 when the whole is, and the
//     rule reads code points as it reads bytes (both of its characters are ASCII), so
//     a str is cut in the same places as its UTF-8.
// The same argument allows any ASCII byte other than a letter or digit after the
// letter (a digit would join the default rule's word run), should more places to cut
// ever be needed. tests/engine/test_safe_cut.py cuts at every place the rule allows.
// None of this holds for a pattern given as a regex (SplitRule::cuts_at_safe_cuts).

// Whether a cut between the characters `before` and `after` (bytes, or code points) is safe.
constexpr bool is_safe_cut_between(uint32_t before, uint32_t after) {
    return after == ' ' && (before | 0x20) >= 'a' && (before | 0x20) <= 'z';
}

// Whether a cut of `text` before byte p (0 < p < text.size()) is safe.
inline bool is_safe_cut(std::string_view text, size_t p) {
    return is_safe_cut_between(static_cast<unsigned char>(text[p - 1]), static_cast<unsigned char>(text[p]));
}

}  // namespace bpe
