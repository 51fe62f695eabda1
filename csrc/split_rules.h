// The named split rules, in one table: each rule's name, its published regex (and the
// other published texts that split the same), and its splitter. The C++ parses names and
// texts with it (split.h), the Python package reads it through the binding split_rules
// (bpe.formats), and the documentation's table of rules is checked against it.
#pragma once

#include <cstddef>
#include <string_view>
#include <type_traits>

#include "split_bytes.h"
#include "split_unicode.h"

namespace bpe {

// The hand-written rules: the bytes rule, GPT-2's, GPT-4's (cl100k_base, also Llama 3's),
// Qwen2's (cl100k's with single digits, which Qwen, MiniMax and others use) and GPT-4o's
// o200k, and DeepSeek V3's third Split (deepseek3); kRegex: any other pattern, compiled
// (pattern.h).
// kDeepseek: DeepSeek's three Splits as one step (no name: pretokenizer.h's
// fuse_deepseek makes it from them).
enum class Pattern { kDefault, kGpt2, kGpt4, kQwen2, kO200k, kDeepseek3, kDeepseek, kRegex };

struct NamedRule {
    Pattern pattern;
    std::string_view name;
    // The published regex, in the dialect of tiktoken's patterns and Python's `regex`.
    std::string_view regex;
    // The same in Oniguruma's, Hugging Face tokenizers' engine ("": as regex).
    std::string_view oniguruma;
    // Another published text that splits exactly as this rule ("": none).
    std::string_view same_split;
    // Whether `pattern=` given the regex text runs this rule. Not the default's: its
    // regex reads characters, where the rule reads any bytes.
    bool text_names_rule;
};

// The texts that name a hand-written rule split exactly as it (tests/engine/test_pattern_engine.py
// checks them against the general engine). tiktoken's current text of cl100k_base is not
// among them: its \s++$ takes "\n  " at the end of a text as one chunk, where GPT-4's
// published pattern, and so gpt4, makes "\n", "  "; it runs on the general engine.
// Llama 3's text is cl100k's in other words (its \s*[\r\n]+ ends where \s*[\r\n] does,
// and neither optional character can be given back usefully).
inline constexpr NamedRule kNamedRules[] = {
    {Pattern::kDefault, "default",
     R"( ?[A-Za-z0-9\u0080-\U0010FFFF]+| ?[^A-Za-z0-9\u0080-\U0010FFFF \t\n\x0b\x0c\r]+|[ \t\n\x0b\x0c\r]+)",
     R"( ?[A-Za-z0-9\x{80}-\x{10FFFF}]+| ?[^A-Za-z0-9\x{80}-\x{10FFFF} \t\n\x0b\x0c\r]+|[ \t\n\x0b\x0c\r]+)", "", false},
    {Pattern::kGpt2, "gpt2", R"('(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)", "", "", true},
    {Pattern::kGpt4, "gpt4",
     R"('(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+)", "",
     R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
     true},
    {Pattern::kQwen2, "qwen2",
     R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)", "",
     "", true},
    // Case-aware: CamelCase split on upper/lower runs, [\r\n/]* after punctuation.
    {Pattern::kO200k, "o200k",
     R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?)"
     R"(|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?)"
     R"(|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)", "", "", true},
    // DeepSeek V3's (and V4's) third Split, after its digits and CJK ones: ASCII
    // punctuation leading ASCII letters, letters with marks, punctuation with symbols.
    // Unlike the others it leaves some text unmatched (split_unicode.h says which).
    {Pattern::kDeepseek3, "deepseek3",
     R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+)"
     R"(| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)", "",
     // As DeepSeek's tokenizer.json writes it: CR and LF themselves in the classes.
     "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+"
     "| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+",
     true},
};

// The end of the chunk that starts at i under hand-written rule P, a chunk at a time:
// the definition, which split_simd.h's blocks also hand non-ASCII text to.
template <Pattern P>
inline size_t rule_chunk_end(std::string_view text, size_t i) {
    if constexpr (P == Pattern::kGpt2) return gpt2_chunk_end(text, i);
    if constexpr (P == Pattern::kGpt4) return gpt4_chunk_end(text, i);
    if constexpr (P == Pattern::kQwen2) return qwen2_chunk_end(text, i);
    if constexpr (P == Pattern::kO200k) return o200k_chunk_end(text, i);
    if constexpr (P == Pattern::kDeepseek3) return deepseek3_chunk_end(text, i);
    if constexpr (P == Pattern::kDeepseek) return deepseek_chunk_end(text, i);
    return chunk_end(text, i);
}

// Calls f(std::integral_constant<Pattern, P>{}) with a hand-written rule as a constant
// that templates take: the one switch over the rules, so that each caller's loop is
// compiled once per rule with its splitter inlined. Not for Pattern::kRegex.
template <class F>
inline decltype(auto) with_rule(Pattern pattern, F&& f) {
    switch (pattern) {
        case Pattern::kGpt2: return f(std::integral_constant<Pattern, Pattern::kGpt2>{});
        case Pattern::kGpt4: return f(std::integral_constant<Pattern, Pattern::kGpt4>{});
        case Pattern::kQwen2: return f(std::integral_constant<Pattern, Pattern::kQwen2>{});
        case Pattern::kO200k: return f(std::integral_constant<Pattern, Pattern::kO200k>{});
        case Pattern::kDeepseek3: return f(std::integral_constant<Pattern, Pattern::kDeepseek3>{});
        case Pattern::kDeepseek: return f(std::integral_constant<Pattern, Pattern::kDeepseek>{});
        default: return f(std::integral_constant<Pattern, Pattern::kDefault>{});
    }
}

}  // namespace bpe
