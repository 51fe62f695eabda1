// The split rule: where a text breaks into chunks that merges never cross.
//
// A chunk is a run of word bytes, or a run of punctuation, either with an optional
// leading space, or else a run of whitespace. This is the bytes regex
//     rb" ?[A-Za-z0-9\x80-\xff]+| ?[^A-Za-z0-9\x80-\xff\s]+|\s+"
// written out by hand, since a 256-entry table and a loop run far faster than a
// regex engine, and work on any bytes, valid UTF-8 or not.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

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

// The end of the chunk that starts at `i` (requires i < text.size()).
inline size_t chunk_end(std::string_view text, size_t i) {
    const auto* s = reinterpret_cast<const unsigned char*>(text.data());
    const size_t n = text.size();
    // A space before a byte that is not whitespace leads the chunk that follows it.
    if (s[i] == ' ' && i + 1 < n && kByteClass[s[i + 1]] != kSpace) ++i;
    const uint8_t cls = kByteClass[s[i]];
    do ++i; while (i < n && kByteClass[s[i]] == cls);
    return i;
}

// Calls emit(chunk) for each chunk of the text, in order.
template <class Emit>
inline void for_each_chunk(std::string_view text, Emit&& emit) {
    for (size_t i = 0; i < text.size();) {
        size_t end = chunk_end(text, i);
        emit(text.substr(i, end - i));
        i = end;
    }
}

inline std::vector<std::string_view> pretokenize(std::string_view text) {
    std::vector<std::string_view> chunks;
    for_each_chunk(text, [&](std::string_view chunk) { chunks.push_back(chunk); });
    return chunks;
}

// Whether a chunk boundary at `p` (0 < p < size) is certain, whatever came before:
// an ASCII letter followed by an ASCII space. The chunk holding the letter is a run
// of letters (with, before it, at most a space or punctuation), which cannot take in
// a space, so it ends at p; and the space starts the next chunk afresh. This holds
// for every split pattern here, so threads can cut a text there and split each piece
// on its own, getting exactly the chunks of the whole.
inline bool is_safe_cut(std::string_view text, size_t p) {
    unsigned char before = static_cast<unsigned char>(text[p - 1]);
    return text[p] == ' ' && ((before | 0x20) >= 'a' && (before | 0x20) <= 'z');
}

}  // namespace bpe
