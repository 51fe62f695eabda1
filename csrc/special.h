// Special tokens: strings such as "<|endoftext|>" that stand for one id of their own.
//
// A text is cut at them before anything else, so that no merge crosses or contains
// one: training counts only the text between them, and encoding gives each its id.
// Where several specials start at the same place, the longest wins; the text is
// read left to right, so of two overlapping occurrences the first wins.
//
// Which specials a call cuts at is the caller's choice (tiktoken's allowed_special):
// a special that is not allowed is ordinary text there, and one that is disallowed
// must not occur in the text at all (find_first says where it does).
//
// The algorithm: the specials in a trie, built from them sorted (O(n log n) for n
// specials, and a repeated one found beside its twin in the order), each node's
// children side by side in one array. A text is read once, left to right: at each
// place where a special could begin (a byte that begins one: memchr when only one byte
// does), the trie is walked along the text for as long as the text follows one of its
// paths, and the deepest allowed special passed is the match. The walk costs the
// length of the special prefix the text holds there, whatever the number of specials:
// a table of 1,000,000 costs what one of 10 does (checking every special at every
// place, as this did before, cost the text's length times their number).
//
// Cost: building is a sort of the specials, and a trie node is 12 bytes. A walk reads a node's children in a run of bytes: a scan for a few,
// a binary search past kScanChildren. A text that repeats a long prefix of a special
// without ever completing it ("<|s<|s<|s...") costs that prefix's length a place.
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
#include "split_bytes.h"  // BPE_SSE2

namespace bpe {

// The tries of special and added tokens keep a node's children side by side in nodes,
// from its first_child on, in ascending order of the byte on their edge. The child
// along `byte` is found by a scan for a few children, past kScanChildren by a binary
// search; kNoChild where there is none.
inline constexpr uint32_t kNoChild = UINT32_MAX;
inline constexpr uint16_t kScanChildren = 8;

template <class Node>
uint32_t trie_child(const std::vector<Node>& nodes, uint32_t node, unsigned char byte) {
    const Node& parent = nodes[node];
    uint32_t lo = parent.first_child, end = lo + parent.children;
    if (parent.children <= kScanChildren) {
        for (; lo < end; ++lo)
            if (nodes[lo].byte == byte) return lo;
        return kNoChild;
    }
    for (uint32_t hi = end; lo < hi;) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (nodes[mid].byte < byte) lo = mid + 1;
        else hi = mid;
    }
    return lo < end && nodes[lo].byte == byte ? lo : kNoChild;
}

// A stretch of a text: ordinary text (special == kText), or one special token.
struct Segment {
    static constexpr uint32_t kText = UINT32_MAX;
    size_t begin, end;
    uint32_t special;  // the special token's id
};

// A choice among the special tokens, by their place in SpecialTokens::tokens().
using SpecialSet = std::vector<bool>;

class SpecialTokens {
public:
    SpecialTokens() = default;

    // tokens: each special's bytes and id, in the order given (which is the order
    // tokens() keeps). Throws std::invalid_argument for an empty or repeated one.
    explicit SpecialTokens(std::vector<std::pair<std::string, uint32_t>> tokens) : tokens_(std::move(tokens)) {
        for (const auto& [bytes, id] : tokens_) {
            if (bytes.empty()) throw std::invalid_argument("a special token cannot be empty");
            unsigned char first = static_cast<unsigned char>(bytes[0]);
            if (!starts_[first]) {
                if (first_bytes_ < kFewBytes) few_first_[first_bytes_] = first;
                ++first_bytes_, first_byte_ = first;
            }
            starts_[first] = true;
        }
        build_trie();
    }

    bool empty() const { return tokens_.empty(); }
    size_t size() const { return tokens_.size(); }
    const std::vector<std::pair<std::string, uint32_t>>& tokens() const { return tokens_; }
    SpecialSet all() const { return SpecialSet(tokens_.size(), true); }
    SpecialSet none() const { return SpecialSet(tokens_.size(), false); }

    // The place in tokens() of the special that is exactly `bytes`, or size() when none is.
    size_t find(std::string_view bytes) const {
        uint32_t node = kRoot;
        for (char c : bytes)
            if ((node = child(node, static_cast<unsigned char>(c))) == kNone) return size();
        return node == kRoot || nodes_[node].token == kNoToken ? size() : nodes_[node].token;
    }

    // The text cut into segments: ordinary text (never empty) and the specials that
    // `allowed` holds, in order, covering the text from start to end.
    std::vector<Segment> segments(std::string_view text, const SpecialSet& allowed) const {
        std::vector<Segment> out;
        size_t text_start = 0;
        if (std::find(allowed.begin(), allowed.end(), true) != allowed.end()) {
            for (size_t i = next_start(text, 0); i < text.size(); i = next_start(text, i)) {
                size_t k = match_at(text, i, allowed);
                if (k == kNoMatch) {
                    ++i;
                    continue;
                }
                const auto& [bytes, id] = tokens_[k];
                if (i > text_start) out.push_back({text_start, i, Segment::kText});
                out.push_back({i, i + bytes.size(), id});
                i += bytes.size();
                text_start = i;
            }
        }
        if (text.size() > text_start) out.push_back({text_start, text.size(), Segment::kText});
        return out;
    }

    // The place in tokens() of the first special of `which` that occurs anywhere in
    // the text (overlaps included), or size() when none does.
    // `from` and `to` bound where it may begin (it may end past `to`): threads that each
    // search a stretch of the text, in order, find what one search of it would.
    size_t find_first(std::string_view text, const SpecialSet& which, size_t from = 0,
                      size_t to = SIZE_MAX) const {
        if (std::find(which.begin(), which.end(), true) == which.end()) return size();
        to = std::min(to, text.size());
        for (size_t i = next_start(text, from, to); i < to; i = next_start(text, i + 1, to))
            if (size_t k = match_at(text, i, which); k != kNoMatch) return k;
        return size();
    }

private:
    static constexpr uint32_t kRoot = 0;
    static constexpr uint32_t kNone = kNoChild;
    static constexpr uint32_t kNoToken = UINT32_MAX;  // no special ends at a node
    static constexpr size_t kNoMatch = SIZE_MAX;

    // A trie node: the special that ends here (its place in tokens_), and its children,
    // nodes_[first_child] on, side by side in ascending order of their byte.
    struct Node {
        uint32_t first_child = 0;
        uint32_t token = kNoToken;
        uint16_t children = 0;
        unsigned char byte = 0;  // the byte on the edge from the parent
    };

    // The trie, breadth first from the specials sorted: the specials under a node are a
    // run of the sorted order, the one that ends at it (if any) first, then a run per
    // next byte, each a child. A special given twice is its twin's neighbour there.
    void build_trie() {
        size_t total = 0;
        for (const auto& token : tokens_) total += token.first.size();
        if (total >= kNone) throw std::length_error("the special tokens hold more than 4 GB");
        std::vector<uint32_t> order(tokens_.size());
        for (size_t k = 0; k < order.size(); ++k) order[k] = uint32_t(k);
        // std::string compares as unsigned char: the runs ascend by byte, as children do.
        std::sort(order.begin(), order.end(),
                  [&](uint32_t a, uint32_t b) { return tokens_[a].first < tokens_[b].first; });
        for (size_t k = 1; k < order.size(); ++k)
            if (tokens_[order[k]].first == tokens_[order[k - 1]].first)
                throw std::invalid_argument("the special token " + tokens_[order[k]].first + " is given twice");
        struct Run {
            uint32_t node, begin, end, depth;  // the specials order[begin, end) share the node's depth bytes
        };
        nodes_.assign(1, Node{});
        std::vector<Run> runs{{kRoot, 0, uint32_t(order.size()), 0}};
        for (size_t r = 0; r < runs.size(); ++r) {
            const Run run = runs[r];  // a copy: runs grows below
            uint32_t at = run.begin;
            if (at < run.end && tokens_[order[at]].first.size() == run.depth) nodes_[run.node].token = order[at++];
            nodes_[run.node].first_child = uint32_t(nodes_.size());
            while (at < run.end) {
                auto byte_of = [&](uint32_t k) { return static_cast<unsigned char>(tokens_[order[k]].first[run.depth]); };
                unsigned char byte = byte_of(at);
                uint32_t next = at + 1;
                while (next < run.end && byte_of(next) == byte) ++next;
                Node node;
                node.byte = byte;
                nodes_.push_back(node);
                ++nodes_[run.node].children;
                runs.push_back({uint32_t(nodes_.size() - 1), at, next, run.depth + 1});
                at = next;
            }
        }
    }

    // The child of `node` along `byte`, or kNone.
    uint32_t child(uint32_t node, unsigned char byte) const {
        return trie_child(nodes_, node, byte);
    }

    // The place in tokens_ of the longest special of `which` that starts at i, or
    // kNoMatch: the trie walked along the text from i for as long as it follows a path.
    size_t match_at(std::string_view text, size_t i, const SpecialSet& which) const {
        size_t best = kNoMatch;
        uint32_t node = kRoot;
        for (size_t j = i; j < text.size(); ++j) {
            if ((node = child(node, static_cast<unsigned char>(text[j]))) == kNone) break;
            uint32_t token = nodes_[node].token;
            if (token != kNoToken && which[token]) best = token;
        }
        return best;
    }

    // Where the next special could begin, from i on and before `end` (else `end`):
    // memchr when all begin with the same byte (as "<|pad|>" and "<|endoftext|>" do),
    // which is as fast as memory.
    size_t next_start(std::string_view text, size_t i, size_t end = SIZE_MAX) const {
        end = std::min(end, text.size());
        if (i >= end) return end;
        if (first_bytes_ == 1) {
            const void* found = std::memchr(text.data() + i, first_byte_, end - i);
            return found ? static_cast<const char*>(found) - text.data() : end;
        }
#if defined(BPE_SSE2)
        // A few first bytes (SentencePiece's "<s>" and "[INST]" begin with "<" and "["):
        // 16 bytes compared with each at once. A byte at a time, the search for them
        // took a tenth of encoding such a model's text.
        if (first_bytes_ >= 2 && first_bytes_ <= kFewBytes) {
            const FewBytes16 wanted(few_first_, first_bytes_);
            for (; i + 16 <= end; i += 16)
                if (uint32_t mask = wanted.in(text.data() + i)) return i + count_trailing_zeros(mask);
        }
#endif
        while (i < end && !starts_[static_cast<unsigned char>(text[i])]) ++i;
        return i;
    }

    std::vector<std::pair<std::string, uint32_t>> tokens_;
    std::vector<Node> nodes_;  // the trie; nodes_[kRoot] is its root
    bool starts_[256] = {};    // which bytes begin a special token
    int first_bytes_ = 0;      // how many different bytes do
    unsigned char first_byte_ = 0;
    unsigned char few_first_[kFewBytes] = {};  // the first kFewBytes of them
};

}  // namespace bpe
