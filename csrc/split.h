// The split rules: where a text breaks into chunks that merges never cross.
//
// The default rule, this project's own: a chunk is a run of word bytes, or a run of
// punctuation, either with an optional leading space, or else a run of whitespace.
// This is the bytes regex
//     rb" ?[A-Za-z0-9\x80-\xff]+| ?[^A-Za-z0-9\x80-\xff\s]+|\s+"
// written out by hand, since a 256-entry table and a loop run far faster than a
// regex engine, and work on any bytes, valid UTF-8 or not. GPT-2's and GPT-4's rules
// are in split_unicode.h; they need valid UTF-8.
#pragma once

#include <algorithm>
#include <memory>
#include <array>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "compiler.h"

// The SSE2 blocks here, in split_unicode.h and in split_simd.h (both included below,
// after the class test they share) are what every x86-64 compiler builds; ARM machines
// (and a build with BPE_PORTABLE=1, which CI makes so the portable path is tested here
// too) use the plain loops alone.
#if defined(__SSE2__) && !defined(BPE_PORTABLE)
#define BPE_SSE2 1
#include <emmintrin.h>
#endif

namespace bpe {

enum ByteClass : uint8_t { kWord, kPunct, kSpace };

// Word bytes: ASCII letters and digits, and every byte >= 0x80, which are the bytes
// of non-ASCII UTF-8 characters, so that such a character is never cut in two.
// Whitespace: exactly the six bytes that Python's bytes regex calls \s.
constexpr std::array<uint8_t, 256> make_byte_classes() {
    std::array<uint8_t, 256> cls{};
    for (int b = 0; b < 256; ++b) {
        bool alnum = (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || (b >= '0' && b <= '9');
        bool space = b == ' ' || b == '\t' || b == '\n' || b == '\v' || b == '\f' || b == '\r';
        cls[b] = (alnum || b >= 0x80) ? kWord : space ? kSpace : kPunct;
    }
    return cls;
}
inline constexpr std::array<uint8_t, 256> kByteClass = make_byte_classes();

#if defined(BPE_SSE2)
// Bit k of `word` set when byte k of the 16 at p is a word byte, of `space` when it is
// whitespace (neither: punctuation). Below, with the class test it reads.
inline void word_and_space_16(const unsigned char* p, uint32_t& word, uint32_t& space);
#endif

// The end of the chunk that starts at `i` (requires i < text.size()).
inline size_t chunk_end(std::string_view text, size_t i) {
    const auto* s = reinterpret_cast<const unsigned char*>(text.data());
    const size_t n = text.size();
#if defined(BPE_SSE2)
    // Most chunks are a few bytes: classify the next 16 at once and find where the
    // class changes from the bits, rather than with a hard-to-predict branch per byte.
    if (i + 16 <= n) {
        uint32_t word, space;
        word_and_space_16(s + i, word, space);
        uint32_t punct = ~(word | space) & 0xffff;
        // A space before a byte that is not whitespace leads the chunk that follows it.
        unsigned first = (s[i] == ' ' && !(space & 2)) ? 1 : 0;
        uint32_t same = (word >> first & 1) ? word : (space >> first & 1) ? space : punct;
        uint32_t other = ~same & (0xfffeu << first) & 0xffff;  // after `first`, of another class
        if (other != 0) return i + unsigned(bpe::count_trailing_zeros(uint32_t(other)));
        const uint8_t cls = kByteClass[s[i + first]];  // the run goes on past these 16 bytes
        i += 16;
        while (i < n && kByteClass[s[i]] == cls) ++i;
        return i;
    }
#endif
    // A space before a byte that is not whitespace leads the chunk that follows it.
    if (s[i] == ' ' && i + 1 < n && kByteClass[s[i + 1]] != kSpace) ++i;
    const uint8_t cls = kByteClass[s[i]];
    do ++i; while (i < n && kByteClass[s[i]] == cls);
    return i;
}

// Calls emit(chunk) for each chunk of the text, in order, with chunk_end the function
// that finds where a chunk ends.
template <class ChunkEnd, class Emit>
inline void for_each_chunk_with(std::string_view text, ChunkEnd&& chunk_end, Emit&& emit) {
    for (size_t i = 0; i < text.size();) {
        const size_t end = chunk_end(text, i);
        emit(text.substr(i, end - i));
        i = end;
    }
}

#if defined(BPE_SSE2)
// The classes of 16 bytes at once, each a lane of ones where byte k is of the class:
// the one SSE2 class test, which chunk_end above, split_unicode.h's runs and
// split_simd.h's sse2 tier read. A byte >= 0x80 is `high` and in no other class
// (its character, if any, is decoded elsewhere); `whitespace` is the six bytes above.
// Always inlined, so that a caller computes only the classes it reads.
struct Lanes16 {
    __m128i high, letter, digit, space, whitespace;
};
[[gnu::always_inline]] inline Lanes16 classify_16(__m128i v) {
    // x - lo <= span, unsigned, as min(x - lo, span) == x - lo: a range test per byte.
    auto in_range = [](__m128i x, char lo, char span) {
        __m128i d = _mm_sub_epi8(x, _mm_set1_epi8(lo));
        return _mm_cmpeq_epi8(_mm_min_epu8(d, _mm_set1_epi8(span)), d);
    };
    Lanes16 c;
    c.high = _mm_cmplt_epi8(v, _mm_setzero_si128());  // >= 0x80, as a signed byte < 0
    c.letter = in_range(_mm_or_si128(v, _mm_set1_epi8(0x20)), 'a', 25);  // either case
    c.digit = in_range(v, '0', 9);
    c.space = _mm_cmpeq_epi8(v, _mm_set1_epi8(' '));
    c.whitespace = _mm_or_si128(in_range(v, '\t', 4), c.space);  // \t \n \v \f \r, and space
    return c;
}

inline void word_and_space_16(const unsigned char* p, uint32_t& word, uint32_t& space) {
    const Lanes16 c = classify_16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    word = uint32_t(_mm_movemask_epi8(_mm_or_si128(c.high, _mm_or_si128(c.letter, c.digit))));
    space = uint32_t(_mm_movemask_epi8(c.whitespace));
}
#endif

}  // namespace bpe

#include "split_unicode.h"
#include "pattern.h"

namespace bpe {

// The hand-written rules, by name: the bytes rule, GPT-2's, GPT-4's (cl100k_base, also
// Llama 3's), Qwen2's (cl100k's with single digits, which Qwen, MiniMax and others use)
// and GPT-4o's o200k; kRegex: any other pattern, compiled (pattern.h).
enum class Pattern { kDefault, kGpt2, kGpt4, kQwen2, kO200k, kRegex };

// The regex texts that name a hand-written rule: each splits exactly as its rule
// (tests/test_pattern_engine.py checks them against the general engine). tiktoken's
// current text of cl100k_base is not among them: its \s++$ takes "\n  " at the end of
// a text as one chunk, where GPT-4's published pattern, and so gpt4, makes "\n", "  ";
// it runs on the general engine.
inline constexpr std::string_view kGpt2Regex =
    R"('(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
inline constexpr std::string_view kGpt4Regex =
    R"('(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+)";
// Llama 3's: cl100k's in other words, which split the same (its \s*[\r\n]+ ends where
// \s*[\r\n] does, and neither optional character can be given back usefully).
inline constexpr std::string_view kLlama3Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// Qwen2's, as its tokenizer.json publishes it: Llama 3's with \p{N} for \p{N}{1,3}.
inline constexpr std::string_view kQwen2Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// GPT-4o's o200k_base (also gpt-oss's), as tiktoken's registry defines it: case-aware,
// CamelCase split on upper/lower runs, [\r\n/]* after punctuation (split_unicode.h).
inline constexpr std::string_view kO200kRegex =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?)"
    R"(|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?)"
    R"(|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

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
        switch (pattern_) {
            case Pattern::kGpt2: return "gpt2";
            case Pattern::kGpt4: return "gpt4";
            case Pattern::kQwen2: return "qwen2";
            case Pattern::kO200k: return "o200k";
            case Pattern::kRegex: return regex_->text();
            default: return "default";
        }
    }
    // Whether the rule reads characters, and so needs valid UTF-8 (all but default).
    bool needs_utf8() const { return pattern_ != Pattern::kDefault; }
    // Whether is_safe_cut's places (below) are chunk boundaries under this rule: proven
    // for the hand-written rules; a regex can match across them (" ?[a-z ]+"), so text
    // split by one is never cut there (parallel.h splits each segment whole).
    bool cuts_at_safe_cuts() const { return pattern_ != Pattern::kRegex; }
    bool operator==(const SplitRule& other) const {
        return pattern_ == other.pattern_ && (pattern_ != Pattern::kRegex || regex_->text() == other.regex_->text());
    }
    bool operator!=(const SplitRule& other) const { return !(*this == other); }

private:
    Pattern pattern_;
    std::shared_ptr<const Regex> regex_;
};

// A rule from its name ("default", "gpt2", "gpt4", "qwen2", "o200k") or a regex: a regex
// that is the text of a hand-written rule is that rule (and takes its name); any other is
// compiled (std::invalid_argument names what it cannot take).
inline SplitRule parse_pattern(std::string_view name) {
    if (name == "default") return Pattern::kDefault;
    if (name == "gpt2" || name == kGpt2Regex) return Pattern::kGpt2;
    if (name == "gpt4" || name == kGpt4Regex || name == kLlama3Regex) return Pattern::kGpt4;
    if (name == "qwen2" || name == kQwen2Regex) return Pattern::kQwen2;
    if (name == "o200k" || name == kO200kRegex) return Pattern::kO200k;
    // A bare word is a mistyped name, not a regex: as a regex it would match itself
    // and leave the rest of the text in gaps, which no one means.
    const bool word = std::all_of(name.begin(), name.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
    });
    if (word)
        throw std::invalid_argument("unknown split pattern '" + std::string(name) +
                                    "': expected 'default', 'gpt2', 'gpt4', 'qwen2', 'o200k' or a regex");
    return SplitRule(std::make_shared<const Regex>(name));
}

inline std::string pattern_name(const SplitRule& rule) { return rule.name(); }

// Calls emit(chunk) for each chunk of the text under a split pattern, a chunk at a
// time: the definition. The pattern is looked at once, outside the loop, and each loop
// inlines its own chunk_end. for_each_chunk below finds the same chunks faster.
template <class Emit>
inline void for_each_chunk_plain(std::string_view text, const SplitRule& rule, Emit&& emit) {
    switch (rule.pattern()) {
        case Pattern::kRegex: {
            Regex::Matcher matcher(*rule.regex(), text);
            return for_each_chunk_with(text, [&matcher](std::string_view t, size_t i) { return regex_chunk_end(matcher, t, i); }, emit);
        }
        case Pattern::kGpt2:
            return for_each_chunk_with(text, [](std::string_view t, size_t i) { return gpt2_chunk_end(t, i); }, emit);
        case Pattern::kGpt4:
            return for_each_chunk_with(text, [](std::string_view t, size_t i) { return gpt4_chunk_end(t, i); }, emit);
        case Pattern::kQwen2:
            return for_each_chunk_with(text, [](std::string_view t, size_t i) { return qwen2_chunk_end(t, i); }, emit);
        case Pattern::kO200k:
            return for_each_chunk_with(text, [](std::string_view t, size_t i) { return o200k_chunk_end(t, i); }, emit);
        default:
            return for_each_chunk_with(text, [](std::string_view t, size_t i) { return chunk_end(t, i); }, emit);
    }
}

}  // namespace bpe

#include "split_simd.h"

namespace bpe {

// Calls emit(chunk) for each chunk of the text under a split pattern: by the 64-byte
// blocks of split_simd.h, in the SIMD tier chosen when the module was loaded, or by
// the loops above in the portable tier.
template <class Emit>
inline void for_each_chunk(std::string_view text, const SplitRule& rule, Emit&& emit) {
    const simd::Tier tier = simd::tier_in_use();
    if (tier == simd::Tier::kPortable || rule.pattern() == Pattern::kRegex) return for_each_chunk_plain(text, rule, emit);
    const simd::ClassifyFn classify = simd::classifier(tier);
    switch (rule.pattern()) {
        case Pattern::kGpt2: return simd::for_each_chunk_blocks<Pattern::kGpt2>(text, classify, emit);
        case Pattern::kGpt4: return simd::for_each_chunk_blocks<Pattern::kGpt4>(text, classify, emit);
        case Pattern::kQwen2: return simd::for_each_chunk_blocks<Pattern::kQwen2>(text, classify, emit);
        case Pattern::kO200k: return simd::for_each_chunk_blocks<Pattern::kO200k>(text, classify, emit);
        default: return simd::for_each_chunk_blocks<Pattern::kDefault>(text, classify, emit);
    }
}

// The chunks of the text under a split pattern, handed over in runs of their ends
// (split_simd.h's for_each_chunk_run says how): on_ends(first, ends, count). The
// portable tier and compiled patterns find a chunk at a time, gathered into runs here.
template <class Ends>
inline void for_each_chunk_run(std::string_view text, const SplitRule& rule, Ends&& on_ends) {
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
    switch (rule.pattern()) {
        case Pattern::kGpt2: return simd::for_each_chunk_run<Pattern::kGpt2>(text, classify, spread, on_ends);
        case Pattern::kGpt4: return simd::for_each_chunk_run<Pattern::kGpt4>(text, classify, spread, on_ends);
        case Pattern::kQwen2: return simd::for_each_chunk_run<Pattern::kQwen2>(text, classify, spread, on_ends);
        case Pattern::kO200k: return simd::for_each_chunk_run<Pattern::kO200k>(text, classify, spread, on_ends);
        default: return simd::for_each_chunk_run<Pattern::kDefault>(text, classify, spread, on_ends);
    }
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
// ever be needed. tests/test_safe_cut.py cuts at every place the rule allows.
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
