// sentencepiece's precompiled character map (a model's normalizer_spec
// precompiled_charsmap, Hugging Face's Precompiled normalizer's `precompiled_charsmap`):
// the replacement of the longest prefix of a text that the map holds, as sentencepiece's
// normalizer reads it (normalizer.cc's NormalizePrefix).
//
// The blob: a 32-bit little-endian size, that many bytes of a double-array trie (darts-
// clone's: 32-bit units, each a label, a flag for a leaf below, and an offset to its
// children, the leaf's unit holding a value), then the replacements, NUL-terminated
// strings that the values point into. The search from byte i of a text goes down the
// trie along the text's bytes; every node with a leaf is a match, and the longest of the
// first 32 matches wins (sentencepiece keeps 32 results). No match: the character as it is.
//
// A blob comes from a file, so nothing in it is trusted: the sizes are checked against
// the blob (the trie in whole 1,024-byte blocks, as sentencepiece requires), and the trie
// is walked once as it is read, every unit reached checked to lie in the array, every
// value to point at a NUL-terminated replacement of valid UTF-8 of at most
// kMaxReplacementBytes, and the trie to have no cycle and no path longer than
// kMaxKeyBytes (so that a search ends within that many steps, and a text grows by at most
// that factor: sentencepiece's own maps have keys of a few characters and replacements
// of a few dozen bytes). Anything else is std::invalid_argument, which Python sees as a
// ValueError.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "normalize.h"

namespace bpe {

class Charsmap {
public:
    static constexpr size_t kMaxKeyBytes = 256;
    static constexpr size_t kMaxReplacementBytes = 256;

    explicit Charsmap(std::string blob) : blob_(std::move(blob)) {
        if (blob_.size() < 4) throw std::invalid_argument("the charsmap is " + std::to_string(blob_.size()) +
                                                          " bytes, too short to hold its trie's size");
        const auto* p = reinterpret_cast<const unsigned char*>(blob_.data());
        const uint64_t trie_bytes = uint64_t(p[0]) | uint64_t(p[1]) << 8 | uint64_t(p[2]) << 16 | uint64_t(p[3]) << 24;
        if (trie_bytes > blob_.size() - 4 || trie_bytes % 4 != 0 || trie_bytes == 0)
            throw std::invalid_argument("the charsmap's trie is " + std::to_string(trie_bytes) +
                                        " bytes, which a blob of " + std::to_string(blob_.size()) +
                                        " bytes cannot hold in whole 4-byte units");
        if (trie_bytes % 1024 != 0)
            throw std::invalid_argument("the charsmap's trie is " + std::to_string(trie_bytes) +
                                        " bytes, not a multiple of 1,024 (sentencepiece refuses such a map)");
        units_.resize(size_t(trie_bytes / 4));
        for (size_t k = 0; k < units_.size(); ++k) {
            const unsigned char* u = p + 4 + 4 * k;
            units_[k] = uint32_t(u[0]) | uint32_t(u[1]) << 8 | uint32_t(u[2]) << 16 | uint32_t(u[3]) << 24;
        }
        replacements_at_ = 4 + size_t(trie_bytes);
        check_trie();
        // For each ASCII byte: whether a key is that byte alone, and whether one goes on
        // from it with an ASCII byte.
        const size_t root = offset(units_[0]);
        auto step = [&](size_t base, unsigned c) -> size_t {  // the node, or SIZE_MAX
            const size_t node = base ^ c;
            return node < units_.size() && label(units_[node]) == c ? node : SIZE_MAX;
        };
        for (unsigned c = 0; c < 0x80; ++c) {
            const size_t node = step(root, c);
            if (node == SIZE_MAX) continue;
            ascii_key_[c] = has_leaf(units_[node]);
            const size_t base = node ^ offset(units_[node]);
            for (unsigned d = 0; d < 0x80 && !ascii_goes_on_[c]; ++d) ascii_goes_on_[c] = step(base, d) != SIZE_MAX;
            non_ascii_goes_on_[c] = true;
        }
    }

    // Whether the map leaves the ASCII byte `c` as it is where `next` (0 at the end)
    // follows it: no key is `c` alone, and none that goes on from it can match here (an
    // ASCII `next` goes on from no key; a non-ASCII one may). Most text is read a byte at
    // a time by this test, without a search.
    bool ascii_alone(unsigned char c, unsigned char next) const {
        if (ascii_key_[c]) return false;
        return next < 0x80 ? !ascii_goes_on_[c] : !non_ascii_goes_on_[c];
    }

    // The replacement of the longest prefix of in[i...] the map holds, and that prefix's
    // length in bytes; length 0 where none is.
    std::pair<std::string_view, size_t> longest_prefix(std::string_view in, size_t i) const {
        constexpr int kMaxResults = 32;  // sentencepiece's kMaxTrieResultsSize
        size_t node = offset(units_[0]);
        size_t best_length = 0;
        uint32_t best_value = 0;
        int results = 0;
        for (size_t k = i; k < in.size(); ++k) {
            const unsigned char c = static_cast<unsigned char>(in[k]);
            node ^= c;
            if (node >= units_.size() || label(units_[node]) != c) break;
            const uint32_t unit = units_[node];
            node ^= offset(unit);
            if (has_leaf(unit)) {
                if (results < kMaxResults && k + 1 - i > best_length) {
                    best_length = k + 1 - i;
                    best_value = value(units_[node]);
                }
                ++results;
            }
        }
        if (best_length == 0) return {{}, 0};
        return {std::string_view(replacements().data() + best_value), best_length};
    }

private:
    static bool has_leaf(uint32_t unit) { return (unit >> 8) & 1; }
    static uint32_t value(uint32_t unit) { return unit & ((1u << 31) - 1); }
    static uint32_t label(uint32_t unit) { return unit & ((1u << 31) | 0xFF); }
    static size_t offset(uint32_t unit) { return size_t(unit >> 10) << ((unit & (1u << 9)) >> 6); }

    // The walk of every path a search can take, by a stack of its own (a blob chooses the
    // depth). A node is a unit a search steps onto (by its label); its children are the
    // units at its base (its index ^ its offset) ^ each label. Colours, by unit, find a
    // cycle: a node met again while it is still on the stack. Two nodes may share their
    // children, so the longest path below each node (its height) is kept, and a node met
    // again adds its height to the path that meets it.
    void check_trie() const {
        const size_t n = units_.size();
        auto bad = [](const std::string& what) { throw std::invalid_argument("the charsmap's trie " + what); };
        std::vector<uint8_t> colour(n, 0);  // 0 unseen, 1 on the stack, 2 done
        std::vector<uint32_t> height(n, 0);  // of a node done: the longest path below it, in steps
        struct Frame {
            size_t node, base;  // node: SIZE_MAX for the root
            unsigned next_label;
            uint32_t height;  // the longest path below node met so far
        };
        std::vector<Frame> stack{{SIZE_MAX, offset(units_[0]), 0, 0}};
        auto longest_through = [&](size_t depth, uint32_t below) {  // depth: the path's steps so far
            if (depth + below > kMaxKeyBytes)
                bad("has a path of over " + std::to_string(kMaxKeyBytes) +
                    " bytes, longer than any key a character map needs");
        };
        while (!stack.empty()) {
            Frame& f = stack.back();
            if (f.next_label == 256) {
                const Frame done = f;
                stack.pop_back();
                if (done.node != SIZE_MAX) {
                    colour[done.node] = 2;
                    height[done.node] = done.height;
                    stack.back().height = std::max(stack.back().height, done.height + 1);
                }
                continue;
            }
            const unsigned c = f.next_label++;
            const size_t node = f.base ^ c;
            if (node >= n || label(units_[node]) != c) continue;
            if (colour[node] == 1) bad("has a cycle, so a search through it would not end");
            if (colour[node] == 2) {
                longest_through(stack.size(), height[node]);
                f.height = std::max(f.height, height[node] + 1);
                continue;
            }
            longest_through(stack.size(), 0);
            const uint32_t unit = units_[node];
            const size_t base = node ^ offset(unit);
            if (has_leaf(unit)) {
                if (base >= n) bad("has a leaf outside its array");
                check_replacement(value(units_[base]));
            }
            colour[node] = 1;
            stack.push_back({node, base, 0, 0});
        }
    }

    // A leaf's value: the start of a NUL-terminated replacement, valid UTF-8 (sentencepiece
    // cuts the normalized text into characters by their lead bytes; our engine needs the
    // characters whole), at most kMaxReplacementBytes long.
    void check_replacement(uint32_t v) const {
        const std::string_view all = replacements();
        const void* nul = v < all.size() ? std::memchr(all.data() + v, '\0', all.size() - v) : nullptr;
        if (nul == nullptr)
            throw std::invalid_argument("the charsmap's trie has a value, " + std::to_string(v) +
                                        ", that starts no NUL-terminated replacement in its " +
                                        std::to_string(all.size()) + " bytes");
        const std::string_view r = all.substr(v, size_t(static_cast<const char*>(nul) - (all.data() + v)));
        if (r.size() > kMaxReplacementBytes)
            throw std::invalid_argument("the charsmap has a replacement of " + std::to_string(r.size()) +
                                        " bytes, over the " + std::to_string(kMaxReplacementBytes) +
                                        " a character map may hold");
        const auto* p = reinterpret_cast<const unsigned char*>(r.data());
        for (size_t k = 0; k < r.size();) {
            const nfc_detail::Decoded d = nfc_detail::decode(p + k, p + r.size());
            if (d.cp >= nfc_detail::kInvalid)
                throw std::invalid_argument("the charsmap has a replacement that is not valid UTF-8 (byte " +
                                            std::to_string(k) + " of the one at " + std::to_string(v) + ")");
            k += d.len;
        }
    }

    std::string_view replacements() const { return std::string_view(blob_).substr(replacements_at_); }

    std::string blob_;
    std::vector<uint32_t> units_;
    size_t replacements_at_ = 0;  // where in blob_ the replacements begin
    bool ascii_key_[128] = {};          // see ascii_alone
    bool ascii_goes_on_[128] = {};
    bool non_ascii_goes_on_[128] = {};  // a key starts with the byte and has more (kept simple: any)
};

}  // namespace bpe
