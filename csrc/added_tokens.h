// Added tokens: a tokenizer.json's "added_tokens", matched in a text as Hugging Face
// matches them before its pre-tokenizer.
//
// Each added token is a string with an id and four flags that change where it matches
// and what it takes with it:
//   - lstrip: it takes the whitespace before it (never past the end of what was taken
//     before it);
//   - rstrip: it takes the whitespace after it;
//   - single_word: it matches only where neither the character before nor the one after
//     is a word character;
//   - normalized: it is looked for in the normalized text (the pieces between the tokens
//     that are not), where the others are looked for in the text as given.
// A special token can be left out of a call (Hugging Face's encode_special_tokens, our
// allowed_special): it is then ordinary text there.
//
// Whitespace and word characters are Rust's, as Hugging Face's regexes read them
// (\s: the White_Space property, so U+001C..U+001F are not space; \w: letters, marks,
// decimal digits, connector punctuation and the joiners), and the ends of the text are
// the ends, never before a final newline.
//
// The algorithm (Hugging Face's find_matches): the tokens of one pass are found
// leftmost-longest without overlap: read left to right, at each place the longest token
// that starts there is the match, and reading goes on after it. A match is then judged:
// a special that is not allowed, or a single_word token with a word character beside it,
// is dropped, and what it matched stays ordinary text, not read again for a shorter
// token. A match that stands takes its spaces (lstrip, rstrip) and becomes a segment;
// the text between becomes text segments.
//
// Two consequences of that order, kept because the ids depend on them: an rstrip token's
// spaces are taken after the next match was already found, so a token made of spaces
// that starts inside them is given again, overlapping (Hugging Face's offsets overlap
// there too); and such a token that is lstrip ends up empty or reversed, and is dropped
// (Hugging Face drops the empty one and refuses the reversed one).
//
// The matcher is special.h's trie (read its header): the tokens of one pass in a trie,
// a text read once, the trie walked at each place where a token's first byte is (memchr
// when all tokens begin with one byte, as "<|...|>" ones do): the cost is the text's
// length times at most the longest token, whatever the number of tokens.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "compiler.h"
#include "special.h"      // Segment
#include "split_bytes.h"  // BPE_SSE2
#include "unicode_tables.h"

namespace bpe {

struct AddedToken {
    std::string content;  // what is matched: for a normalized token, its normalized form
    uint32_t id;
    bool special = false, normalized = false, lstrip = false, rstrip = false, single_word = false;
};

class AddedTokens {
public:
    AddedTokens() = default;

    // Throws std::invalid_argument for an empty content, or a content given twice among
    // the tokens of one pass (Hugging Face keeps one token per content).
    explicit AddedTokens(std::vector<AddedToken> tokens) : tokens_(std::move(tokens)) {
        for (const AddedToken& token : tokens_)
            if (token.content.empty()) throw std::invalid_argument("an added token cannot be empty");
        raw_.build(tokens_, false);
        normalized_.build(tokens_, true);
    }

    bool empty() const { return tokens_.empty(); }
    const std::vector<AddedToken>& tokens() const { return tokens_; }

    // Hugging Face's find_matches over `text` with the tokens whose `normalized` flag is
    // `normalized`: appends to `out` the segments, in order: {begin, end, id} for a token
    // (its stripped spaces included), {begin, end, Segment::kText} for text between
    // (never empty). They cover [0, text.size()) without gaps; they overlap only where
    // Hugging Face's do (a token inside the spaces an rstrip token took, above). A
    // special token is ordinary text unless allowed(its place in tokens()) is true;
    // `allowed` is asked about special tokens only.
    template <class Allowed>
    void segments(std::string_view text, bool normalized, Allowed&& allowed, std::vector<Segment>& out) const {
        const Trie& trie = normalized ? normalized_ : raw_;
        const size_t n = text.size();
        size_t taken = 0;  // the end of the last segment given
        // The whitespace the last rstrip token took, from run_from up to run_end: an
        // rstrip token that ends anywhere in it takes it to the same end, so that space
        // tokens matched one after another inside a long run read it once, not once each.
        size_t run_from = 1, run_end = 0;
        if (!trie.empty()) {
            for (size_t i = trie.next_start(text, 0); i < n; i = trie.next_start(text, i)) {
                auto [k, length] = trie.longest_at(text, i);
                if (k == Trie::kNoToken) {
                    ++i;
                    continue;
                }
                size_t start = i, stop = i + length;
                i = stop;  // what it matched is read no more, whether it stands or not
                const AddedToken& token = tokens_[k];
                if (token.special && !allowed(size_t(k))) continue;
                if (token.single_word && (word_before(text, start) || word_at(text, stop))) continue;
                if (token.lstrip) start = spaces_before(text, start, taken);
                if (token.rstrip) {
                    if (stop < run_from || stop > run_end) run_from = stop, run_end = spaces_after(text, stop);
                    stop = run_end;
                }
                if (stop <= start) continue;  // lstrip inside the spaces taken before: nothing left
                if (taken < start) out.push_back({taken, start, Segment::kText});
                out.push_back({start, stop, token.id});
                taken = stop;
            }
        }
        if (taken < n) out.push_back({taken, n, Segment::kText});
    }

private:
    // One pass's tokens in a trie, each node's children side by side in one array, in
    // ascending order of their byte; the root's children by a table of 256.
    class Trie {
    public:
        static constexpr uint32_t kNoToken = UINT32_MAX;

        bool empty() const { return nodes_.size() <= 1; }

        void build(const std::vector<AddedToken>& tokens, bool normalized) {
            std::vector<uint32_t> order;
            size_t total = 0;
            for (size_t k = 0; k < tokens.size(); ++k)
                if (tokens[k].normalized == normalized) order.push_back(uint32_t(k)), total += tokens[k].content.size();
            if (total >= kNone || tokens.size() >= kNone) throw std::length_error("the added tokens hold more than 4 GB");
            auto content = [&](uint32_t k) -> const std::string& { return tokens[k].content; };
            // std::string compares as unsigned char: the runs below ascend by byte, as children must.
            std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return content(a) < content(b); });
            for (size_t k = 1; k < order.size(); ++k)
                if (content(order[k]) == content(order[k - 1]))
                    throw std::invalid_argument("the added token " + content(order[k]) + " is given twice");
            // Breadth first: the tokens under a node are a run of the sorted order, the one
            // that ends there (if any) first, then one run per next byte, each a child.
            struct Run {
                uint32_t node, begin, end, depth;
            };
            nodes_.assign(1, Node{});
            std::fill(std::begin(root_), std::end(root_), kNone);
            std::vector<Run> runs{{0, 0, uint32_t(order.size()), 0}};
            for (size_t r = 0; r < runs.size(); ++r) {
                const Run run = runs[r];  // a copy: runs grows below
                uint32_t at = run.begin;
                if (at < run.end && content(order[at]).size() == run.depth) nodes_[run.node].token = order[at++];
                nodes_[run.node].first_child = uint32_t(nodes_.size());
                while (at < run.end) {
                    auto byte_of = [&](uint32_t j) { return static_cast<unsigned char>(content(order[j])[run.depth]); };
                    const unsigned char byte = byte_of(at);
                    uint32_t next = at + 1;
                    while (next < run.end && byte_of(next) == byte) ++next;
                    Node node;
                    node.byte = byte;
                    nodes_.push_back(node);
                    ++nodes_[run.node].children;
                    if (run.depth == 0) {
                        root_[byte] = uint32_t(nodes_.size() - 1), first_byte_ = byte;
                        // the unused places repeat a first byte, so that comparing with them finds nothing new
                        if (first_bytes_ < kFewFirstBytes) std::fill(few_first_ + first_bytes_, std::end(few_first_), byte);
                        ++first_bytes_;
                    }
                    runs.push_back({uint32_t(nodes_.size() - 1), at, next, run.depth + 1});
                    at = next;
                }
            }
        }

        // The longest token that starts at i (its place in the tokens, and its length),
        // or kNoToken: the trie walked along the text for as long as it follows a path.
        std::pair<uint32_t, size_t> longest_at(std::string_view text, size_t i) const {
            std::pair<uint32_t, size_t> best{kNoToken, 0};
            uint32_t node = root_[static_cast<unsigned char>(text[i])];
            for (size_t j = i + 1; node != kNone; ++j) {
                if (nodes_[node].token != kNoToken) best = {nodes_[node].token, j - i};
                if (j == text.size()) break;
                node = child(node, static_cast<unsigned char>(text[j]));
            }
            return best;
        }

        // Where the next token could begin, from i: memchr when all begin with one byte.
        size_t next_start(std::string_view text, size_t i) const {
            if (i >= text.size()) return text.size();
            if (first_bytes_ == 1) {
                const void* found = std::memchr(text.data() + i, first_byte_, text.size() - i);
                return found ? static_cast<const char*>(found) - text.data() : text.size();
            }
#if defined(BPE_SSE2)
            // A few first bytes (a file's tokens mostly begin with "<" or "[", or with one
            // character's lead byte): 16 bytes compared with each at once.
            if (first_bytes_ <= kFewFirstBytes) {
                __m128i wanted[kFewFirstBytes];
                for (int k = 0; k < kFewFirstBytes; ++k) wanted[k] = _mm_set1_epi8(char(few_first_[k]));
                for (; i + 16 <= text.size(); i += 16) {
                    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(text.data() + i));
                    __m128i hits = _mm_cmpeq_epi8(v, wanted[0]);
                    for (int k = 1; k < kFewFirstBytes; ++k) hits = _mm_or_si128(hits, _mm_cmpeq_epi8(v, wanted[k]));
                    if (uint32_t mask = uint32_t(_mm_movemask_epi8(hits))) return i + count_trailing_zeros(mask);
                }
            }
#endif
            while (i < text.size() && root_[static_cast<unsigned char>(text[i])] == kNone) ++i;
            return i;
        }

    private:
        static constexpr uint32_t kNone = UINT32_MAX;  // no such child
        static constexpr uint16_t kScanChildren = 8;   // more children than this: binary search
        static constexpr int kFewFirstBytes = 4;       // this many first bytes or fewer: compared 16 bytes at a time

        struct Node {
            uint32_t first_child = 0;
            uint32_t token = kNoToken;  // the token that ends here
            uint16_t children = 0;
            unsigned char byte = 0;  // the byte on the edge from the parent
        };

        uint32_t child(uint32_t node, unsigned char byte) const {
            const Node& parent = nodes_[node];
            uint32_t lo = parent.first_child, end = lo + parent.children;
            if (parent.children <= kScanChildren) {
                for (; lo < end; ++lo)
                    if (nodes_[lo].byte == byte) return lo;
                return kNone;
            }
            for (uint32_t hi = end; lo < hi;) {
                uint32_t mid = lo + (hi - lo) / 2;
                if (nodes_[mid].byte < byte) lo = mid + 1;
                else hi = mid;
            }
            return lo < end && nodes_[lo].byte == byte ? lo : kNone;
        }

        std::vector<Node> nodes_{Node{}};  // nodes_[0] is the root
        uint32_t root_[256] = {};          // the root's child along each byte, or kNone (set by build)
        int first_bytes_ = 0;              // how many different bytes begin a token
        unsigned char first_byte_ = 0;     // the last of them
        unsigned char few_first_[kFewFirstBytes] = {};  // the first kFewFirstBytes of them
    };

    // The code point that starts at byte i, and its length in bytes (1 for a byte that
    // does not begin a valid character, so that a reader never runs past the end).
    static uint32_t code_point_at(std::string_view text, size_t i, size_t* length) {
        const auto* s = reinterpret_cast<const unsigned char*>(text.data());
        const uint32_t b = s[i];
        *length = 1;
        if (b < 0x80) return b;
        size_t size = b >= 0xF0 && b < 0xF8 ? 4 : b >= 0xE0 ? 3 : b >= 0xC0 ? 2 : 0;
        if (size == 0 || (b >= 0xF8) || i + size > text.size()) return 0x110000;  // not a character
        uint32_t cp = b & (0x7F >> size);
        for (size_t k = 1; k < size; ++k) cp = (cp << 6) | (s[i + k] & 0x3F);
        *length = size;
        return cp;
    }

    // Where the character that ends at byte i begins (i > 0): at most three bytes back.
    static size_t char_start_before(std::string_view text, size_t i) {
        size_t j = i - 1;
        while (j > 0 && i - j < 4 && (static_cast<unsigned char>(text[j]) & 0xC0) == 0x80) --j;
        return j;
    }

    static bool is_space(uint32_t cp) { return unicode::char_properties(cp) & unicode::kSpaceBit; }
    static bool is_word(uint32_t cp) { return unicode::char_properties(cp) & unicode::kWordBit; }

    static bool word_at(std::string_view text, size_t i) {
        size_t length;
        return i < text.size() && is_word(code_point_at(text, i, &length));
    }
    static bool word_before(std::string_view text, size_t i) {
        size_t length;
        return i > 0 && is_word(code_point_at(text, char_start_before(text, i), &length));
    }

    // The start of the whitespace that ends at i (i itself when none does), or `floor`
    // when that is later: the spaces before floor were taken already, and not reading
    // them again keeps the reads within the text between matches.
    static size_t spaces_before(std::string_view text, size_t i, size_t floor) {
        size_t length;
        if (i <= floor) return floor;
        while (i > floor) {
            size_t j = char_start_before(text, i);
            if (!is_space(code_point_at(text, j, &length)) || j + length != i) break;
            i = j;
        }
        return std::max(i, floor);
    }

    // The end of the whitespace that starts at i (i itself when none does).
    static size_t spaces_after(std::string_view text, size_t i) {
        size_t length;
        while (i < text.size() && is_space(code_point_at(text, i, &length))) i += length;
        return i;
    }

    std::vector<AddedToken> tokens_;
    Trie raw_, normalized_;
};

}  // namespace bpe
