// A tokenizer.json's pre-tokenizer: a text piece cut into chunks by a sequence of
// steps, each splitting every piece the step before left, as Hugging Face's `Split`
// does (its `split` on a normalized string):
//   1. the step's rule finds its matches in the piece, left to right; the text between
//      two matches (a gap) is marked too, so that matches and gaps cover the piece;
//   2. `invert` swaps which of them are matches;
//   3. the behaviour joins them: Isolated keeps each apart, Removed drops the matches,
//      MergedWithPrevious joins a match to the piece before it, MergedWithNext to the
//      piece after it, Contiguous joins runs of matches (and runs of gaps);
//   4. empty pieces are dropped.
// Digits is such a step on \p{N} (each digit its own match: Isolated keeps them apart,
// Contiguous joins a run), and ByteLevel's regex a last step with GPT-2's rule.
//
// The steps run one after the other over two vectors of spans, never by recursion.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "split.h"
#include "added_tokens.h"
#include "normalize.h"
#include "normalizer.h"
#include "decoder.h"

namespace bpe {

enum class Behavior { kIsolated, kRemoved, kMergedWithPrevious, kMergedWithNext, kContiguous };

struct SplitStep {
    SplitRule rule;
    Behavior behavior = Behavior::kIsolated;
    bool invert = false;
};

// Hugging Face's Metaspace pre-tokenizer (the whole pre-tokenizer where there is one):
// in each text piece every space becomes `replacement`, which is put first too (kAlways:
// where the piece does not start with it already; kFirst: the same, for the piece at
// the start of the text only), and with `split` the piece is cut before each
// replacement (MergedWithNext), else left whole.
struct Metaspace {
    enum class Prepend { kAlways, kFirst, kNever };
    std::string replacement;
    Prepend prepend = Prepend::kAlways;
    bool split = true;
};

struct Rules {
    Normalizer normalizer;          // normalizer.h: run before the steps, on the text between raw added tokens
    std::vector<SplitStep> steps;   // each splits the pieces of the one before (none: a text piece is one chunk)
    bool add_prefix_space = false;  // ByteLevel's: a space before each piece that reaches it without one
    bool use_regex = false;         // ByteLevel's: steps.back() is its split by GPT-2's rule
    bool trim_offsets = false;      // ByteLevel's post-processing of offsets
    bool trim_prefix_space = false; // the post-processor's add_prefix_space: a first token's one space is kept
    std::optional<Metaspace> metaspace;  // the pre-tokenizer, where it is Metaspace (steps then empty)
    AddedTokens added;
    std::optional<Decoder> decoder;  // decoder.h: how ids become text; none: their bytes joined
};

// A stretch [begin, end) of bytes.
struct Span {
    size_t begin, end;
};

// Whether the steps are one named rule's chunks as they are: the chunk loop of split.h
// (for_each_chunk_run) then splits without this file. A named rule's regex matches
// every character, so its marks are all matches (or, inverted, all gaps), one after
// the other: Isolated keeps each, and so do the merges, which join a match only to a
// gap; Removed of inverted marks removes none.
inline bool is_one_named_split(const std::vector<SplitStep>& steps) {
    if (steps.size() != 1) return false;
    const SplitStep& step = steps[0];
    if (step.rule.pattern() == Pattern::kRegex || step.rule.pattern() == Pattern::kDefault) return false;
    // deepseek3's regex leaves gaps: only Isolated keeps its gaps as its matches are kept.
    if (step.rule.pattern() == Pattern::kDeepseek3 || step.rule.pattern() == Pattern::kDeepseek)
        return step.behavior == Behavior::kIsolated;
    switch (step.behavior) {
        case Behavior::kIsolated:
        case Behavior::kMergedWithPrevious:
        case Behavior::kMergedWithNext: return true;
        case Behavior::kRemoved: return step.invert;
        default: return false;
    }
}

// DeepSeek's three Splits (\p{N}{1,3}, its CJK ranges, deepseek3), all Isolated and not
// inverted, as one step: each splits only what the one before left between its
// matches, which deepseek_chunk_end does in one pass (split_unicode.h says how).
inline void fuse_deepseek(std::vector<SplitStep>& steps) {
    if (steps.size() < 3) return;
    auto plain = [&](size_t k) { return steps[k].behavior == Behavior::kIsolated && !steps[k].invert; };
    auto regex_is = [&](size_t k, std::string_view text) {
        return steps[k].rule.pattern() == Pattern::kRegex && steps[k].rule.regex()->text() == text &&
               steps[k].rule.regex()->dialect() == Dialect::kOniguruma;
    };
    if (plain(0) && plain(1) && plain(2) && regex_is(0, "\\p{N}{1,3}") &&
        regex_is(1, "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+") && steps[2].rule.pattern() == Pattern::kDeepseek3)
        steps.erase(steps.begin(), steps.begin() + 2), steps[0] = {Pattern::kDeepseek, Behavior::kIsolated, false};
}

class PreTokenizer {
public:
    // One budget of regex steps for a whole text (Regex::steps_for its size), which
    // every piece and step of it draws on: a budget for each piece would let a text of
    // many short pieces backtrack for as long as all their budgets together.
    void start_text(size_t bytes) { steps_left_ = Regex::steps_for(bytes); }

    // The chunks of text[begin, end) under steps[first, last), appended to `out` as spans
    // of `text`, in order.
    void split(std::string_view text, Span piece, const SplitStep* first, const SplitStep* last,
               std::vector<Span>& out) {
        if (first == last) {
            if (piece.end > piece.begin) out.push_back(piece);
            return;
        }
        current_.assign(1, piece);
        for (const SplitStep* step = first; step != last; ++step) {
            std::vector<Span>& into = step + 1 == last ? out : next_;
            if (&into == &next_) next_.clear();
            for (const Span& p : current_) split_one(text, p, *step, into);
            if (&into == &next_) std::swap(current_, next_);
        }
    }

private:
    struct Mark {
        size_t begin, end;
        bool match;
    };

    // One step on one piece: its marks, then the behaviour.
    void split_one(std::string_view text, Span piece, const SplitStep& step, std::vector<Span>& out) {
        marks_.clear();
        find_marks(text.substr(piece.begin, piece.end - piece.begin), piece.begin, step.rule, step.invert);
        join(step.behavior, out);
    }

    // The matches and gaps of `rule` in `s` (at `base` in the text), matches flipped by
    // `invert`. A regex is matched at each place in turn (its leftmost match); a named
    // rule's chunks are all matches, as its regex matches every character (deepseek3's gaps
    // aside).
    void find_marks(std::string_view s, size_t base, const SplitRule& rule, bool invert) {
        if (rule.pattern() != Pattern::kRegex) {
            const bool gaps = rule.pattern() == Pattern::kDeepseek3;
            for_each_chunk(s, rule, [&](std::string_view chunk) {
                const size_t b = base + size_t(chunk.data() - s.data());
                marks_.push_back({b, b + chunk.size(), (gaps && deepseek3_is_gap(chunk)) ? invert : !invert});
            });
            return;
        }
        // Onig's search from each place in turn, as Hugging Face's find_iter takes its
        // matches: the leftmost from where the last ended; an empty one counts (it cuts
        // the text), but not twice at one place, where the search moves a character on.
        Regex::Matcher matcher(*rule.regex(), s, steps_left_);
        const auto* u = reinterpret_cast<const unsigned char*>(s.data());
        auto next_char = [&](size_t i) {
            do ++i;
            while (i < s.size() && (u[i] & 0xC0) == 0x80);
            return i;
        };
        size_t gap = 0, last_end = SIZE_MAX;
        for (size_t i = 0; i <= s.size();) {
            const size_t e = matcher.match_at(i);
            if (e == i && !matcher.matched_empty) {
                if (i == s.size()) break;
                i = next_char(i);
                continue;
            }
            if (e == i && last_end == i) {  // the empty match where the last one ended
                if (i == s.size()) break;
                i = next_char(i);
                continue;
            }
            if (gap < i) marks_.push_back({base + gap, base + i, invert});
            marks_.push_back({base + i, base + e, !invert});
            gap = last_end = i = e;
        }
        if (gap < s.size()) marks_.push_back({base + gap, base + s.size(), invert});
        steps_left_ = matcher.steps_left();
    }

    // The marks joined as the behaviour says, empty pieces dropped.
    void join(Behavior behavior, std::vector<Span>& out) const {
        auto push = [&](size_t b, size_t e) {
            if (e > b) out.push_back({b, e});
        };
        switch (behavior) {
            case Behavior::kIsolated:
                for (const Mark& m : marks_) push(m.begin, m.end);
                return;
            case Behavior::kRemoved:
                for (const Mark& m : marks_)
                    if (!m.match) push(m.begin, m.end);
                return;
            case Behavior::kContiguous:
            case Behavior::kMergedWithPrevious: {
                // A mark joins the piece before when it is of the same kind (Contiguous),
                // or a match after a gap (MergedWithPrevious). The first mark starts one.
                bool previous = false, any = false;
                size_t b = 0, e = 0;
                for (const Mark& m : marks_) {
                    const bool joins = any && (behavior == Behavior::kContiguous ? m.match == previous
                                                                                 : m.match && !previous);
                    if (joins) {
                        e = m.end;
                    } else {
                        if (any) push(b, e);
                        b = m.begin, e = m.end, any = true;
                    }
                    previous = m.match;
                }
                if (any) push(b, e);
                return;
            }
            case Behavior::kMergedWithNext: {
                // From the right: a match before a gap joins it.
                const size_t before = out.size();
                bool previous = false, any = false;
                size_t b = 0, e = 0;
                for (size_t k = marks_.size(); k-- > 0;) {
                    const Mark& m = marks_[k];
                    if (any && m.match && !previous) {
                        b = m.begin;
                    } else {
                        if (any) push(b, e);
                        b = m.begin, e = m.end, any = true;
                    }
                    previous = m.match;
                }
                if (any) push(b, e);
                std::reverse(out.begin() + std::ptrdiff_t(before), out.end());
                return;
            }
        }
    }

    std::vector<Span> current_, next_;
    std::vector<Mark> marks_;
    ptrdiff_t steps_left_ = Regex::steps_for(0);
};

}  // namespace bpe
