// The gpt2, gpt4, qwen2 and o200k split rules, written out by hand over UTF-8 bytes.
//
// Each function below returns the end of the chunk that starts at byte i, exactly as
// tiktoken cuts the text with the rule's published pattern (split_rules.h has them).
//
// A regex engine tries the alternatives in order at each position; here the first
// character's class (letter, number, space, other) picks the only alternative that
// can win, so a chunk costs one pass over its bytes. The classes come from
// unicode_tables.h; ASCII bytes are classed through a table and only bytes >= 0x80
// are decoded. Runs of ASCII use split_bytes.h's SSE2 class test (classify_16).
//
// Whose classes: tiktoken's. The promise is tiktoken's ids, and tiktoken runs the
// patterns with Rust's regex crate, whose tables are Unicode 16.0 (tiktoken 0.14), so
// the tables are read from tiktoken itself (tools/make_unicode_tables.py). The `regex`
// module, which runs the same patterns in Python, knows Unicode 17.0 and cuts apart
// from tiktoken only on the 4,644 letters and 13 numbers that 17.0 added: to
// tiktoken, and so here, they are unassigned, "other" ("\U00011de0123" is
// "\U00011de0", "123", where `regex` gives "\U00011de012", "3"). Hugging Face
// tokenizers, which GPT-2's ids are checked against, classes them as tiktoken does.
// bpe_reference.py hides them from `regex` to split the same way.
//
// Every character is a letter, a number, whitespace or "other", and each has an
// alternative that matches it, so the chunks always cover the text: findall never
// skips a character with these patterns, and neither do these functions.
//
// Input: these patterns work on characters, so the text must be valid UTF-8; check it
// with is_valid_utf8 first (the module raises ValueError otherwise). On invalid UTF-8
// the functions stay memory-safe and still cover the text with non-empty chunks, but
// where they cut is unspecified.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "compiler.h"
#include "split_bytes.h"
#include "unicode_tables.h"

namespace bpe {

namespace unicode {

// A character at some byte position: its class and how many bytes it takes.
struct Char {
    CharClass cls;
    uint32_t len;
};

// The first byte's class, for ASCII; kDecode marks a byte >= 0x80, where the whole
// character has to be decoded to find its class. One table lookup then serves the
// common case in every loop below.
inline constexpr uint8_t kDecode = 4;
constexpr std::array<uint8_t, 256> make_lead_classes() {
    std::array<uint8_t, 256> lead{};
    for (int b = 0; b < 256; ++b) lead[b] = b < 0x80 ? kAsciiClass[b] : kDecode;
    return lead;
}
inline constexpr std::array<uint8_t, 256> kLeadClass = make_lead_classes();

// Decodes the character that starts with byte s[i] >= 0x80 (valid UTF-8 assumed:
// continuation bytes are not checked). A stray continuation byte, an invalid lead
// byte, or a sequence cut off by the end of the text counts as one "other" byte, so
// that invalid input can never make a reader run past the end.
inline uint32_t decode_multibyte(const unsigned char* s, size_t n, size_t i, uint32_t* len) {
    constexpr uint32_t kNotAChar = 0x110000;  // past kTableLimit, so it classes as kOther
    const uint32_t b = s[i];
    uint32_t cp, size;
    if (b >= 0xF8 || b < 0xC0) {
        size = 1, cp = kNotAChar;  // not a lead byte: a stray continuation byte, or F8..FF
    } else if (b >= 0xF0) {
        size = 4, cp = b & 0x07;
    } else if (b >= 0xE0) {
        size = 3, cp = b & 0x0F;
    } else {
        size = 2, cp = b & 0x1F;
    }
    if (i + size > n) size = 1, cp = kNotAChar;  // cut off by the end of the text
    for (uint32_t k = 1; k < size; ++k) cp = (cp << 6) | (s[i + k] & 0x3F);
    *len = size;
    return cp;
}

inline Char char_at(const unsigned char* s, size_t n, size_t i) {
    const uint8_t lead = kLeadClass[s[i]];
    if (lead != kDecode) return {CharClass(lead), 1};
    uint32_t len;
    const uint32_t cp = decode_multibyte(s, n, i, &len);
    return {char_class(cp), len};
}

#if defined(BPE_SSE2)
// Bit k set when byte k of the 16 at p is an ASCII character of class `cls` (a byte
// >= 0x80 never is: its character must be decoded), by split_bytes.h's class test, whose
// classes are kAsciiClass's: letters A-Z a-z, numbers 0-9, whitespace \t \n \v \f \r
// and space.
inline uint32_t ascii_class_mask_16(const unsigned char* p, CharClass cls) {
    const Lanes16 c = classify_16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    switch (cls) {
        case kLetter: return uint32_t(_mm_movemask_epi8(c.letter));
        case kNumber: return uint32_t(_mm_movemask_epi8(c.digit));
        case kSpace: return uint32_t(_mm_movemask_epi8(c.whitespace));
        default: {
            const __m128i any = _mm_or_si128(_mm_or_si128(c.letter, c.digit), _mm_or_si128(c.whitespace, c.high));
            return uint32_t(~_mm_movemask_epi8(any)) & 0xffff;
        }
    }
}
#endif

// The end of the run of characters of class `cls` that starts at byte j (j itself
// when the character there is of another class, or j == n). Runs of ASCII go 16
// bytes at a time where SSE2 is there: most chunks are short words, whose end one
// step then finds without a branch per byte.
inline size_t run_end(const unsigned char* s, size_t n, size_t j, CharClass cls) {
    while (j < n) {
#if defined(BPE_SSE2)
        if (j + 16 <= n) {
            const uint32_t same = ascii_class_mask_16(s + j, cls);
            if (same == 0xffff) {
                j += 16;
                continue;
            }
            j += unsigned(bpe::count_trailing_zeros(uint32_t(~same)));
            if (s[j] < 0x80) break;  // an ASCII character of another class ends the run
        }
#endif
        const uint8_t lead = kLeadClass[s[j]];
        if (lead == cls) {
            ++j;
        } else if (lead == kDecode) {
            const Char c = char_at(s, n, j);
            if (c.cls != cls) break;
            j += c.len;
        } else {
            break;
        }
    }
    return j;
}

// [\r\n]*: the end of the run of CR and LF bytes at j.
inline size_t crlf_run_end(const unsigned char* s, size_t n, size_t j) {
    while (j < n && (s[j] == '\r' || s[j] == '\n')) ++j;
    return j;
}

// [\r\n/]*, o200k's: the end of the run of CR, LF and / bytes at j.
inline size_t slash_run_end(const unsigned char* s, size_t n, size_t j) {
    while (j < n && (s[j] == '\r' || s[j] == '\n' || s[j] == '/')) ++j;
    return j;
}

// The whitespace run that starts with the whitespace character at i, of `first_len`
// bytes: where it ends, where its last character starts, and the end of its last
// CR or LF (0 when it has none; a real end is always > i >= 0).
struct SpaceRun {
    size_t end, last_start, after_last_newline;
};
inline SpaceRun space_run(const unsigned char* s, size_t n, size_t i, uint32_t first_len) {
    SpaceRun run{i + first_len, i, (s[i] == '\r' || s[i] == '\n') ? i + 1 : 0};
    while (run.end < n) {
        const Char c = char_at(s, n, run.end);
        if (c.cls != kSpace) break;
        if (s[run.end] == '\r' || s[run.end] == '\n') run.after_last_newline = run.end + 1;
        run.last_start = run.end;
        run.end += c.len;
    }
    return run;
}

// \s+(?!\S) then \s+, for a whitespace run: the run goes to the end of the text, or
// it gives back its last character to the chunk after it (which then starts with
// that space) -- unless it has only one character, which \s+ takes alone.
inline size_t space_run_chunk_end(const SpaceRun& run, size_t i, size_t n) {
    if (run.end == n || run.last_start == i) return run.end;
    return run.last_start;
}

// The contraction after an apostrophe at byte k-1: '(?:[sdmt]|ll|ve|re) matches
// "s", "d", "m", "t", "ll", "ve" or "re" here; returns its length in bytes, 0 for
// none. With ignore_case (gpt4's (?i:...)), a letter matches in either case, and so
// does any character that tiktoken's engine folds onto it (kContractionFolds: U+017F
// long s).
inline char contraction_letter(const unsigned char* s, size_t n, size_t k, bool ignore_case, uint32_t* len) {
    if (k >= n) return 0;
    const unsigned char b = s[k];
    *len = 1;
    if (b < 0x80) {
        if (ignore_case && b >= 'A' && b <= 'Z') return char(b | 0x20);
        return char(b);
    }
    if (!ignore_case) return 0;
    const uint32_t cp = decode_multibyte(s, n, k, len);
    for (const ContractionFold& fold : kContractionFolds)
        if (fold.cp == cp) return fold.letter;
    return 0;
}

inline size_t contraction_length(const unsigned char* s, size_t n, size_t k, bool ignore_case) {
    uint32_t len1, len2;
    const char first = contraction_letter(s, n, k, ignore_case, &len1);
    if (first == 's' || first == 'd' || first == 'm' || first == 't') return len1;
    const char wanted = first == 'l' ? 'l' : (first == 'v' || first == 'r') ? 'e' : 0;
    if (wanted == 0) return 0;
    return contraction_letter(s, n, k + len1, ignore_case, &len2) == wanted ? len1 + len2 : 0;
}

// The end of the gpt2 chunk that starts at byte i (requires i < text.size()).
inline size_t gpt2_chunk_end(std::string_view text, size_t i) {
    const auto* s = reinterpret_cast<const unsigned char*>(text.data());
    const size_t n = text.size();
    // '(?:[sdmt]|ll|ve|re), lower case only.
    if (s[i] == '\'') {
        if (size_t len = contraction_length(s, n, i + 1, /*ignore_case=*/false)) return i + 1 + len;
    }
    const Char first = char_at(s, n, i);
    // " ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+" without the space: a run of one class.
    if (first.cls != kSpace) return run_end(s, n, i + first.len, first.cls);
    // The same with the space: an ASCII space joins the run of whatever non-space follows.
    if (s[i] == ' ' && i + 1 < n) {
        const Char next = char_at(s, n, i + 1);
        if (next.cls != kSpace) return run_end(s, n, i + 1 + next.len, next.cls);
    }
    // \s+(?!\S)|\s+
    return space_run_chunk_end(space_run(s, n, i, first.len), i, n);
}

// The end of the gpt4 (cl100k_base) chunk that starts at byte i (requires i < text.size()).
// max_digits is the n of \p{N}{1,n}: 3 for cl100k, 1 for Qwen2's rule, whose one change
// is that (digits one by one).
inline size_t gpt4_chunk_end(std::string_view text, size_t i, int max_digits = 3) {
    const auto* s = reinterpret_cast<const unsigned char*>(text.data());
    const size_t n = text.size();
    // '(?i:[sdmt]|ll|ve|re)
    if (s[i] == '\'') {
        if (size_t len = contraction_length(s, n, i + 1, /*ignore_case=*/true)) return i + 1 + len;
    }
    const Char first = char_at(s, n, i);
    const size_t j = i + first.len;
    switch (first.cls) {
        case kLetter:
            // [^\r\n\p{L}\p{N}]?+\p{L}+ with nothing before the letters (a letter
            // cannot be that optional character).
            return run_end(s, n, j, kLetter);
        case kNumber: {
            // \p{N}{1,max_digits}
            size_t end = j;
            for (int more = 1; more < max_digits && end < n; ++more) {
                const Char c = char_at(s, n, end);
                if (c.cls != kNumber) break;
                end += c.len;
            }
            return end;
        }
        case kOther: {
            // [^\r\n\p{L}\p{N}]?+\p{L}+: this character, then letters, if a letter follows.
            // The ?+ is possessive: having taken this character it never retries without.
            if (j < n) {
                const Char next = char_at(s, n, j);
                if (next.cls == kLetter) return run_end(s, n, j + next.len, kLetter);
            }
            //  ?[^\s\p{L}\p{N}]++[\r\n]* without the space.
            return crlf_run_end(s, n, run_end(s, n, j, kOther));
        }
        case kSpace:
        default: {
            const bool newline = s[i] == '\r' || s[i] == '\n';
            if (j < n) {
                const Char next = char_at(s, n, j);
                // [^\r\n\p{L}\p{N}]?+\p{L}+: any whitespace but CR and LF may lead letters.
                if (!newline && next.cls == kLetter) return run_end(s, n, j + next.len, kLetter);
                //  ?[^\s\p{L}\p{N}]++[\r\n]* with the space (only U+0020 may lead).
                if (s[i] == ' ' && next.cls == kOther) return crlf_run_end(s, n, run_end(s, n, j + next.len, kOther));
            }
            const SpaceRun run = space_run(s, n, i, first.len);
            // \s*[\r\n]: the run up to and including its last CR or LF (\s* backtracks
            // from the end of the run to it).
            if (run.after_last_newline != 0) return run.after_last_newline;
            // \s+(?!\S)|\s+
            return space_run_chunk_end(run, i, n);
        }
    }
}


// --- o200k: GPT-4o's case-aware rule ------------------------------------------------
//
//   [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//   |[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//   |\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// Call the two letter classes UP = [Lu Lt Lm Lo M] and LO = [Ll Lm Lo M]. They share
// the caseless letters (Lm, Lo) and the marks (M), so a character is upper (Lu, Lt),
// lower (Ll), caseless, a mark, a number, whitespace or other. Marks are no \p{L}:
// they are also the optional first character and punctuation.
//
// What a backtracking engine makes of the two letter alternatives, from j (after the
// optional first character): UP* takes the whole run of UP characters; if a lower-case
// letter follows, LO+ takes the run of LO characters from there. If not, UP* gives back
// characters until LO+ can take one: the run's last caseless letter or mark, which ends
// the match. With none, the second alternative takes the run of UP characters (LO*
// takes nothing: the character after the run is not LO). Each may end in a contraction.
// The optional first character is tried before going without it, in each alternative
// in turn; it changes anything only for a mark, which is both that character and UP.
enum CasedClass : uint8_t { kCasedOther, kCasedUpper, kCasedLower, kCaseless, kCasedMark, kCasedNumber, kCasedSpace };

constexpr std::array<uint8_t, 128> make_ascii_cased() {
    std::array<uint8_t, 128> cls{};
    for (int b = 0; b < 128; ++b) {
        const uint8_t plain = kAsciiClass[b];
        cls[b] = plain == kLetter ? (b <= 'Z' ? kCasedUpper : kCasedLower)
                 : plain == kNumber ? kCasedNumber : plain == kSpace ? kCasedSpace : kCasedOther;
    }
    return cls;
}
inline constexpr std::array<uint8_t, 128> kAsciiCased = make_ascii_cased();

struct CasedChar {
    uint8_t cls;
    uint32_t len;
};

// A character's o200k class, from the general categories (the same tiktoken tables).
inline CasedChar cased_char_at(const unsigned char* s, size_t n, size_t i) {
    if (s[i] < 0x80) return {kAsciiCased[s[i]], 1};
    uint32_t len;
    const uint8_t props = char_properties(decode_multibyte(s, n, i, &len));
    if (props & kSpaceBit) return {kCasedSpace, len};
    switch (props & 0x1f) {
        case kLu: case kLt: return {kCasedUpper, len};
        case kLl: return {kCasedLower, len};
        case kLm: case kLo: return {kCaseless, len};
        case kMn: case kMc: case kMe: return {kCasedMark, len};
        case kNd: case kNl: case kNo: return {kCasedNumber, len};
        default: return {kCasedOther, len};
    }
}

constexpr bool is_up(uint8_t cls) { return cls == kCasedUpper || cls == kCaseless || cls == kCasedMark; }
constexpr bool is_lo(uint8_t cls) { return cls == kCasedLower || cls == kCaseless || cls == kCasedMark; }
// [^\s\p{L}\p{N}]: other characters and marks.
constexpr bool is_cased_punct(uint8_t cls) { return cls == kCasedOther || cls == kCasedMark; }

// The optional contraction after the letters that end at p.
inline size_t with_contraction(const unsigned char* s, size_t n, size_t p) {
    if (p < n && s[p] == '\'') {
        if (size_t len = contraction_length(s, n, p + 1, /*ignore_case=*/true)) return p + 1 + len;
    }
    return p;
}

// The end of the run of characters of o200k class `wanted` (a predicate) from j.
template <class Wanted>
inline size_t cased_run_end(const unsigned char* s, size_t n, size_t j, Wanted&& wanted) {
    while (j < n) {
        const CasedChar c = cased_char_at(s, n, j);
        if (!wanted(c.cls)) break;
        j += c.len;
    }
    return j;
}

// [LO]* from j: runs of ASCII lower case a byte at a time, the rest by class.
inline size_t lower_run_end(const unsigned char* s, size_t n, size_t j) {
    while (j < n) {
        if (unsigned(s[j] - 'a') < 26u) {
            ++j;
            continue;
        }
        if (s[j] < 0x80) break;
        const CasedChar c = cased_char_at(s, n, j);
        if (!is_lo(c.cls)) break;
        j += c.len;
    }
    return j;
}

// The two letter alternatives from j, with the optional character before them decided
// (the caller's): where the first one ends, else where the second one does, else 0
// (a real end is always > j). `first_only` stops after the first one.
inline size_t cased_letters_end(const unsigned char* s, size_t n, size_t j, bool first_only = false) {
    size_t e = j, after_caseless = 0;
    while (e < n && unsigned(s[e] - 'A') < 26u) ++e;  // ASCII upper case: UP, and neither caseless nor a mark
    while (e < n) {
        const CasedChar c = cased_char_at(s, n, e);
        if (!is_up(c.cls)) {
            // UP*[LO]+: a lower-case letter after the run.
            if (c.cls == kCasedLower) return with_contraction(s, n, lower_run_end(s, n, e + c.len));
            break;
        }
        e += c.len;
        if (c.cls != kCasedUpper) after_caseless = e;
    }
    if (after_caseless != 0) return with_contraction(s, n, after_caseless);  // UP* gave back to the last LO
    if (first_only || e == j) return 0;
    return with_contraction(s, n, e);  // [UP]+[LO]*, LO* taking nothing
}

// The end of the o200k chunk that starts at byte i (requires i < text.size()).
inline size_t o200k_chunk_end(std::string_view text, size_t i) {
    const auto* s = reinterpret_cast<const unsigned char*>(text.data());
    const size_t n = text.size();
    const CasedChar first = cased_char_at(s, n, i);
    const size_t j = i + first.len;
    switch (first.cls) {
        case kCasedUpper:
        case kCasedLower:
        case kCaseless:
            return cased_letters_end(s, n, i);  // not the optional first character: a letter
        case kCasedMark: {
            // The first alternative with the mark as the optional character, then with
            // the mark as UP; that one matches (the mark itself is LO).
            if (j < n) {
                if (size_t end = cased_letters_end(s, n, j, /*first_only=*/true)) return end;
            }
            return cased_letters_end(s, n, i, /*first_only=*/true);
        }
        case kCasedNumber: {
            // \p{N}{1,3}
            size_t end = j;
            for (int more = 0; more < 2 && end < n; ++more) {
                const CasedChar c = cased_char_at(s, n, end);
                if (c.cls != kCasedNumber) break;
                end += c.len;
            }
            return end;
        }
        case kCasedOther: {
            // The optional first character before letters, then  ?[^\s\p{L}\p{N}]+[\r\n/]*
            // without the space.
            if (j < n) {
                if (size_t end = cased_letters_end(s, n, j)) return end;
            }
            return slash_run_end(s, n, cased_run_end(s, n, j, is_cased_punct));
        }
        case kCasedSpace:
        default: {
            const bool newline = s[i] == '\r' || s[i] == '\n';
            if (!newline && j < n) {
                // Any whitespace but CR and LF may be the optional first character.
                if (size_t end = cased_letters_end(s, n, j)) return end;
                //  ?[^\s\p{L}\p{N}]+[\r\n/]* with the space (only U+0020 may lead; a
                // mark after it made letters above).
                if (s[i] == ' ' && cased_char_at(s, n, j).cls == kCasedOther)
                    return slash_run_end(s, n, cased_run_end(s, n, j, is_cased_punct));
            }
            const SpaceRun run = space_run(s, n, i, first.len);
            // \s*[\r\n]+: the run up to and including its last CR or LF.
            if (run.after_last_newline != 0) return run.after_last_newline;
            // \s+(?!\S)|\s+
            return space_run_chunk_end(run, i, n);
        }
    }
}

// --- deepseek3: DeepSeek V3's third Split -------------------------------------------
//
//   [!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+
//   | ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// as Oniguruma runs it (Hugging Face's Split). A character is a letter (L), a mark (M),
// punctuation or a symbol (P, S), CR or LF, other whitespace (\s), or other (numbers,
// controls, format, unassigned). The first character picks the alternative:
//   - ASCII punctuation (every ASCII P and S is in the first class) before an ASCII
//     letter: it and the run of ASCII letters after it; a letter beyond ASCII ends it;
//   - a letter or a mark: the run of letters and marks ([\p{L}\p{M}]+; a mark taken as
//     the optional first character ends at the same place);
//   - anything but CR, LF, L, P, S before a letter or mark: it and that run;
//   - P or S: the run of P and S, then CR and LF; a space before P or S joins it;
//   - whitespace: \s*[\r\n]+ up to its last CR or LF, else GPT-2's \s+(?!\S)|\s+;
//   - otherwise (a number or control not before a letter or mark) nothing matches here.
// Unlike the other rules' regexes this one leaves text unmatched: a run of such
// characters, each not before a letter or mark, is a gap, which Split keeps as a piece
// of its own (Isolated). Such a chunk, and only such a chunk, ends in a character of
// class other (deepseek3_is_gap).
//
// DeepSeek's whole pre-tokenizer, fused (Pattern::kDeepseek, deepseek_chunk_end): its
// three Splits, all Isolated, are \p{N}{1,3}, then [\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+
// on each piece the first left, then deepseek3 on each piece the second left. So the
// text falls into zones: runs of numbers (cut in threes; deepseek3 leaves a run of
// numbers whole), runs of those CJK ranges, and the rest; deepseek3 splits each CJK
// run and each stretch of the rest on its own. Splitting in a zone (kZone: 1 the rest,
// 2 CJK; 0 unfused), a character of another zone ends the piece as the text's end does
// (kDsEnd), and one pass classes each character once.
enum DeepseekClass : uint8_t { kDsOther, kDsLetter, kDsMark, kDsPunct, kDsSpace, kDsNewline, kDsEnd };

// The ranges of DeepSeek's second Split.
constexpr bool is_deepseek_cjk(uint32_t cp) {
    return (cp >= 0x4e00 && cp <= 0x9fa5) || (cp >= 0x3040 && cp <= 0x30ff);
}

template <int kZone = 0>
inline uint8_t deepseek_class_of(uint32_t cp) {
    if (kZone != 0 && is_deepseek_cjk(cp) != (kZone == 2)) return kDsEnd;
    const uint8_t props = char_properties(cp);
    if (props & kSpaceBit) return (cp == '\r' || cp == '\n') ? kDsNewline : kDsSpace;
    const uint8_t cat = props & 0x1f;
    if (cat <= kLo) return kDsLetter;
    if (cat <= kMe) return kDsMark;
    if (cat >= kPc && cat <= kSo) return kDsPunct;
    if (kZone != 0 && cat >= kNd && cat <= kNo) return kDsEnd;
    return kDsOther;
}

constexpr std::array<uint8_t, 128> make_deepseek_ascii(int zone) {
    std::array<uint8_t, 128> cls{};
    const bool fused = zone != 0;
    for (int b = 0; b < 128; ++b) {
        const bool letter = (b >= 'A' && b <= 'Z') || (b >= 'a' && b <= 'z');
        const bool space = b == ' ' || (b >= '\t' && b <= '\r');
        cls[b] = letter ? kDsLetter
                 : (b == '\r' || b == '\n') ? kDsNewline
                 : space ? kDsSpace
                 : (b >= '0' && b <= '9') ? (fused ? kDsEnd : kDsOther)
                 : (b > ' ' && b < 0x7f) ? kDsPunct : kDsOther;
        if (zone == 2) cls[b] = kDsEnd;
    }
    return cls;
}
// By zone (0 unfused, 1 the rest, 2 CJK).
inline constexpr std::array<uint8_t, 128> kDeepseekAscii[3] = {make_deepseek_ascii(0), make_deepseek_ascii(1),
                                                              make_deepseek_ascii(2)};

struct DsChar {
    uint8_t cls;
    uint32_t len;
};
template <int kZone = 0>
inline DsChar deepseek_char_at(const unsigned char* s, size_t n, size_t i) {
    if (s[i] < 0x80) return {kDeepseekAscii[kZone][s[i]], 1};
    uint32_t len;
    const uint32_t cp = decode_multibyte(s, n, i, &len);
    return {deepseek_class_of<kZone>(cp), len};
}

constexpr bool ds_letter_or_mark(uint8_t cls) { return cls == kDsLetter || cls == kDsMark; }

// The end of the run of characters at j whose class `wanted` accepts.
template <int kZone, class Wanted>
inline size_t deepseek_run_end(const unsigned char* s, size_t n, size_t j, Wanted&& wanted) {
    while (j < n) {
        const unsigned char b = s[j];
        if (b < 0x80) {
            if (!wanted(kDeepseekAscii[kZone][b])) break;
            ++j;
            continue;
        }
        const DsChar c = deepseek_char_at<kZone>(s, n, j);
        if (!wanted(c.cls)) break;
        j += c.len;
    }
    return j;
}

template <int kZone>
inline size_t deepseek_letters_end(const unsigned char* s, size_t n, size_t j) {
    return deepseek_run_end<kZone>(s, n, j, ds_letter_or_mark);
}

template <int kZone>
inline size_t deepseek_punct_end(const unsigned char* s, size_t n, size_t j) {
    return crlf_run_end(s, n, deepseek_run_end<kZone>(s, n, j, [](uint8_t c) { return c == kDsPunct; }));
}

// The end of the deepseek3 chunk that starts at byte i (requires i < text.size()); fused,
// of one that starts with a character other than a number or CJK (kDsEnd).
template <int kZone = 0>
inline size_t deepseek3_chunk_end(std::string_view text, size_t i) {
    const auto* s = reinterpret_cast<const unsigned char*>(text.data());
    const size_t n = text.size();
    const DsChar first = deepseek_char_at<kZone>(s, n, i);
    const size_t j = i + first.len;
    switch (first.cls) {
        case kDsLetter:
        case kDsMark:
            return deepseek_letters_end<kZone>(s, n, j);
        case kDsPunct:
            if (s[i] < 0x80 && j < n && s[j] < 0x80 && kDeepseekAscii[0][s[j]] == kDsLetter) {
                size_t e = j + 1;
                while (e < n && s[e] < 0x80 && kDeepseekAscii[0][s[e]] == kDsLetter) ++e;
                return e;
            }
            return deepseek_punct_end<kZone>(s, n, j);
        case kDsOther: {
            if (j < n) {
                const DsChar next = deepseek_char_at<kZone>(s, n, j);
                if (ds_letter_or_mark(next.cls)) return deepseek_letters_end<kZone>(s, n, j + next.len);
            }
            // A gap: on while each character is other and not before a letter or mark.
            size_t e = j;
            while (e < n) {
                const DsChar c = deepseek_char_at<kZone>(s, n, e);
                if (c.cls != kDsOther) break;
                if (e + c.len < n && ds_letter_or_mark(deepseek_char_at<kZone>(s, n, e + c.len).cls)) break;
                e += c.len;
            }
            return e;
        }
        case kDsSpace:
        default: {
            if (first.cls == kDsSpace && j < n) {
                const DsChar next = deepseek_char_at<kZone>(s, n, j);
                if (ds_letter_or_mark(next.cls)) return deepseek_letters_end<kZone>(s, n, j + next.len);
                if (s[i] == ' ' && next.cls == kDsPunct) return deepseek_punct_end<kZone>(s, n, j + next.len);
            }
            // The whitespace run: \s*[\r\n]+ to its last CR or LF, else \s+(?!\S)|\s+.
            SpaceRun run{j, i, first.cls == kDsNewline ? j : 0};
            while (run.end < n) {
                const DsChar c = deepseek_char_at<kZone>(s, n, run.end);
                if (c.cls != kDsSpace && c.cls != kDsNewline) break;
                if (c.cls == kDsNewline) run.after_last_newline = run.end + 1;
                run.last_start = run.end;
                run.end += c.len;
            }
            if (run.after_last_newline != 0) return run.after_last_newline;
            // A number or CJK character after the run ends the piece as the text's end does.
            if (kZone != 0 && run.end < n && deepseek_char_at<kZone>(s, n, run.end).cls == kDsEnd) return run.end;
            return space_run_chunk_end(run, i, n);
        }
    }
}

// Whether a deepseek3 chunk is a gap, text its regex does not match (see above).
inline bool deepseek3_is_gap(std::string_view chunk) {
    const auto* s = reinterpret_cast<const unsigned char*>(chunk.data());
    size_t k = chunk.size();
    while (k > 1 && (s[k - 1] & 0xC0) == 0x80) --k;
    return k > 0 && deepseek_char_at(s, chunk.size(), k - 1).cls == kDsOther;
}

// The end of the chunk that starts at byte i under DeepSeek's three Splits, fused.
inline size_t deepseek_chunk_end(std::string_view text, size_t i) {
    const auto* s = reinterpret_cast<const unsigned char*>(text.data());
    const size_t n = text.size();
    const DsChar first = deepseek_char_at<1>(s, n, i);
    if (first.cls != kDsEnd) return deepseek3_chunk_end<1>(text, i);
    uint32_t len;
    if (s[i] >= 0x80 && is_deepseek_cjk(decode_multibyte(s, n, i, &len))) return deepseek3_chunk_end<2>(text, i);
    // \p{N}{1,3}: numbers, the characters of the rest's zone's kDsEnd that are not CJK.
    size_t j = i + first.len;
    for (int more = 1; more < 3 && j < n; ++more) {
        const DsChar c = deepseek_char_at<1>(s, n, j);
        if (c.cls != kDsEnd || (s[j] >= 0x80 && is_deepseek_cjk(decode_multibyte(s, n, j, &len)))) break;
        j += c.len;
    }
    return j;
}

}  // namespace unicode

// The splitters live beside their helpers in bpe::unicode, where kSpace and the other
// classes do not clash with split_bytes.h's byte classes; callers know them as bpe::.
using unicode::gpt2_chunk_end;
using unicode::gpt4_chunk_end;
using unicode::o200k_chunk_end;
using unicode::deepseek3_chunk_end;
using unicode::deepseek_chunk_end;
using unicode::deepseek3_is_gap;

// Qwen2's rule: cl100k's with \p{N} a digit at a time.
inline size_t qwen2_chunk_end(std::string_view text, size_t i) { return gpt4_chunk_end(text, i, 1); }

namespace unicode {

// For each byte that may start a multi-byte character: how many bytes the character
// takes and the range its second byte must lie in (Unicode's Table 3-7); size 0 for
// bytes that cannot start one (ASCII is handled before, so those are continuation
// bytes, C0/C1 which would be overlong, and F5..FF which would pass U+10FFFF).
struct Utf8Lead {
    uint8_t size, lo, hi;
};
constexpr std::array<Utf8Lead, 256> make_utf8_leads() {
    std::array<Utf8Lead, 256> leads{};
    for (int b = 0xC2; b <= 0xDF; ++b) leads[b] = {2, 0x80, 0xBF};
    for (int b = 0xE0; b <= 0xEF; ++b) leads[b] = {3, 0x80, 0xBF};
    for (int b = 0xF0; b <= 0xF4; ++b) leads[b] = {4, 0x80, 0xBF};
    leads[0xE0].lo = 0xA0;  // else overlong
    leads[0xED].hi = 0x9F;  // else a surrogate, U+D800..U+DFFF
    leads[0xF0].lo = 0x90;  // else overlong
    leads[0xF4].hi = 0x8F;  // else past U+10FFFF
    return leads;
}
inline constexpr std::array<Utf8Lead, 256> kUtf8Lead = make_utf8_leads();

}  // namespace unicode

// Whether text is well-formed UTF-8 as Python's bytes.decode("utf-8") accepts it: no
// overlong forms, no surrogates, nothing past U+10FFFF, no truncated sequence. Runs
// of ASCII go eight bytes at a time.
inline bool is_valid_utf8(std::string_view text) {
    const auto* s = reinterpret_cast<const unsigned char*>(text.data());
    const size_t n = text.size();
    size_t i = 0;
    while (i < n) {
        if (s[i] < 0x80) {
            ++i;
#if defined(BPE_SSE2)
            // ASCII 64 bytes a step: most text checked is nearly all ASCII.
            for (; i + 64 <= n; i += 64) {
                auto at = [&](size_t k) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + k)); };
                if (_mm_movemask_epi8(_mm_or_si128(_mm_or_si128(at(0), at(16)), _mm_or_si128(at(32), at(48))))) break;
            }
#endif
            while (i + 8 <= n) {
                uint64_t word;
                std::memcpy(&word, s + i, 8);
                if (word & 0x8080808080808080ull) break;
                i += 8;
            }
            continue;
        }
        const unicode::Utf8Lead lead = unicode::kUtf8Lead[s[i]];
        if (lead.size == 0 || i + lead.size > n) return false;
        if (s[i + 1] < lead.lo || s[i + 1] > lead.hi) return false;
        // Every byte after the second is a plain continuation byte, 80..BF.
        if (lead.size >= 3 && (s[i + 2] & 0xC0) != 0x80) return false;
        if (lead.size == 4 && (s[i + 3] & 0xC0) != 0x80) return false;
        i += lead.size;
    }
    return true;
}

}  // namespace bpe
