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
// The matcher is an Aho-Corasick automaton of the tokens of one pass, reversed (read
// Trie below): the text is read once from its end, which gives the longest token that
// starts at each place; the leftmost-longest choice then reads those answers from the
// start. The cost is the text's length plus the tokens' total bytes at build, whatever
// their lengths; where no token's last byte occurs, the text is skipped by memrchr or 16
// bytes at a time.
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
            // The longest token at each place where one starts, found from the end; then
            // read from the start, a match's bytes are skipped whether it stands or not.
            std::vector<std::pair<size_t, uint32_t>> starts;  // from the last place to the first
            trie.longest_starts(text, [&](size_t place, uint32_t k) { starts.emplace_back(place, k); });
            size_t i = 0;  // the first byte not yet read
            for (auto it = starts.rbegin(); it != starts.rend(); ++it) {
                if (it->first < i) continue;  // inside what a match before took
                const uint32_t k = it->second;
                size_t start = it->first, stop = start + trie.length(k);
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
    // One pass's tokens, reversed, in an Aho-Corasick automaton: the text is read once,
    // from its end, and at each place p the automaton's state is the longest beginning of
    // text[p..] that ends some token, so the longest token that starts at p is the longest
    // one on that state's chain of failure links, kept in the state (`longest`). The
    // left-to-right choice then reads those answers, so no place is read again whatever
    // the tokens' lengths. Nodes are numbered breadth first, each node's children side by
    // side in one array in ascending order of their byte; the root's children by a table
    // of 256. Everything is proportional to the tokens' total bytes.
    class Trie {
    public:
        static constexpr uint32_t kNoToken = UINT32_MAX;

        bool empty() const { return nodes_.size() <= 1; }

        void build(const std::vector<AddedToken>& tokens, bool normalized) {
            std::vector<uint32_t> order;
            std::vector<std::string> reversed(tokens.size());
            size_t total = 0;
            for (size_t k = 0; k < tokens.size(); ++k)
                if (tokens[k].normalized == normalized) {
                    order.push_back(uint32_t(k)), total += tokens[k].content.size();
                    reversed[k].assign(tokens[k].content.rbegin(), tokens[k].content.rend());
                }
            if (total >= kNone || tokens.size() >= kNone) throw std::length_error("the added tokens hold more than 4 GB");
            auto content = [&](uint32_t k) -> const std::string& { return reversed[k]; };
            // std::string compares as unsigned char: the runs below ascend by byte, as children must.
            std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return content(a) < content(b); });
            for (size_t k = 1; k < order.size(); ++k)
                if (content(order[k]) == content(order[k - 1]))
                    throw std::invalid_argument("the added token " + tokens[order[k]].content + " is given twice");
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
                        root_[byte] = uint32_t(nodes_.size() - 1), last_byte_ = byte;
                        if (last_bytes_ < kFewBytes) few_last_[last_bytes_] = byte;
                        ++last_bytes_;
                    }
                    runs.push_back({uint32_t(nodes_.size() - 1), at, next, run.depth + 1});
                    at = next;
                }
            }
            // Failure links in the same breadth-first order: a child's link is found from its
            // parent's, which is shallower and so already set; along each token the link's
            // depth grows by at most one a byte, so the walks cost the tokens' total bytes.
            lengths_.assign(tokens.size(), 0);
            for (uint32_t k : order) lengths_[k] = uint32_t(tokens[k].content.size());
            nodes_[0].longest = nodes_[0].token;  // kNoToken: no token is empty
            for (uint32_t parent = 0; parent < nodes_.size(); ++parent) {
                const uint32_t first = nodes_[parent].first_child, end = first + nodes_[parent].children;
                for (uint32_t node = first; node < end; ++node) {
                    nodes_[node].fail = parent == 0 ? 0 : step(nodes_[parent].fail, nodes_[node].byte);
                    // the longer of the token that ends here and those on the failure chain
                    nodes_[node].longest = nodes_[node].token != kNoToken ? nodes_[node].token : nodes_[nodes_[node].fail].longest;
                }
            }
        }

        // Calls found(p, k) for each place p where a token starts, from the last place to
        // the first, with k the longest token that starts there (its place in the tokens).
        template <class Found>
        void longest_starts(std::string_view text, Found&& found) const {
            uint32_t state = 0;
            for (size_t i = text.size(); i > 0;) {
                if (state == 0) {
                    i = previous_end(text, i);  // at the root, nothing is matched until a token's last byte
                    if (i == 0) break;
                }
                --i;
                state = step(state, static_cast<unsigned char>(text[i]));
                const uint32_t k = nodes_[state].longest;
                if (k != kNoToken) found(i, k);
            }
        }

        size_t length(uint32_t k) const { return lengths_[k]; }

    private:
        static constexpr uint32_t kNone = kNoChild;

        struct Node {
            uint32_t first_child = 0;
            uint32_t token = kNoToken;    // the token that ends here
            uint32_t fail = 0;            // the longest proper suffix of this node's bytes that is a node
            uint32_t longest = kNoToken;  // the longest token among this node and its failure chain
            uint16_t children = 0;
            unsigned char byte = 0;  // the byte on the edge from the parent
        };

        // The state after reading `byte` in `state`: its child, or the failure chain's first
        // node with such a child, or the root.
        uint32_t step(uint32_t state, unsigned char byte) const {
            while (state != 0) {
                const uint32_t next = child(state, byte);
                if (next != kNone) return next;
                state = nodes_[state].fail;
            }
            const uint32_t next = root_[byte];
            return next == kNone ? 0 : next;
        }

        // The end (exclusive) of the last byte before i that ends some token, or 0: memrchr
        // when all tokens end with one byte, as "<|...|>" ones do.
        size_t previous_end(std::string_view text, size_t i) const {
#if defined(__GLIBC__)
            if (last_bytes_ == 1) {
                const void* found = memrchr(text.data(), last_byte_, i);
                return found ? static_cast<const char*>(found) - text.data() + 1 : 0;
            }
#endif
#if defined(BPE_SSE2)
            // A few last bytes (a file's tokens mostly end with ">" or "]", or with one
            // character's last byte): 16 bytes compared with each at once.
            if (last_bytes_ <= kFewBytes) {
                const FewBytes16 wanted(few_last_, last_bytes_);
                for (; i >= 16; i -= 16)
                    if (uint32_t mask = wanted.in(text.data() + i - 16))
                        return i - 16 + (64 - count_leading_zeros(uint64_t(mask)));
            }
#endif
            while (i > 0 && root_[static_cast<unsigned char>(text[i - 1])] == kNone) --i;
            return i;
        }

        uint32_t child(uint32_t node, unsigned char byte) const {
            return trie_child(nodes_, node, byte);
        }

        std::vector<Node> nodes_ = std::vector<Node>(1);  // nodes_[0] is the root
        std::vector<uint32_t> lengths_;    // each token's length in bytes (0 for the other pass's)
        uint32_t root_[256] = {};          // the root's child along each byte, or kNone (set by build)
        int last_bytes_ = 0;               // how many different bytes end a token
        unsigned char last_byte_ = 0;      // the last of them
        unsigned char few_last_[kFewBytes] = {};  // the first kFewBytes of them: compared 16 bytes at a time
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
