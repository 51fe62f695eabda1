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
#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "compiler.h"
#include "normalize.h"

namespace bpe {

class Charsmap {
public:
    static constexpr size_t kMaxKeyBytes = 256;
    static constexpr size_t kMaxReplacementBytes = 256;
    // The characters alone_run reads without a search are those below this: planes 0 and
    // 1, every script's letters and the emoji.
    static constexpr uint32_t kMapped = 0x20000;
    // The most trie steps spent listing the characters that follow a whole one (see the
    // constructor); nmt_nfkc's map takes about 89 thousand.
    static constexpr size_t kContinuationSteps = size_t(1) << 22;

    explicit Charsmap(std::string blob) : blob_(std::move(blob)), id_(next_id()) {
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
        // What alone_run reads, made once here: for each ASCII byte, whether a key is that
        // byte alone and whether one goes on from it (with an ASCII byte, with any); for
        // each other character below kMapped, whether its bytes fall off the trie with no
        // leaf on the way (no key is, begins or goes on from it) or reach a node with no
        // leaf on the way (a key goes on from it); and the characters that come right
        // after such a whole character in some key (`continues_`).
        const size_t root = offset(units_[0]);
        auto step = [&](size_t base, unsigned c) -> size_t {  // the node, or SIZE_MAX
            const size_t node = base ^ c;
            return node < units_.size() && label(units_[node]) == c ? node : SIZE_MAX;
        };
        auto children = [&](size_t node) { return node ^ offset(units_[node]); };
        auto set = [](uint64_t* bits, uint32_t cp) { bits[cp >> 6] |= uint64_t(1) << (cp & 63); };
        // Every character that can follow the whole character whose node is `node` (a
        // byte that starts no character there: no valid text has it). A blob may share
        // children among many nodes, so the steps taken are counted: past
        // kContinuationSteps, or where a key ends inside the character that follows
        // (which no class by code point says), every character is taken to follow (the
        // search then reads each character that keys go on from, as it would without
        // these classes).
        size_t steps_left = kContinuationSteps;
        bool key_ends_inside = false;
        auto counted_step = [&](size_t base, unsigned c) {
            if (steps_left == 0) return SIZE_MAX;
            --steps_left;
            return step(base, c);
        };
        struct Below {
            size_t node;
            uint32_t cp;  // from the bytes so far
            size_t bytes;
        };
        std::vector<Below> todo;
        auto add_continuations = [&](size_t node) {
            const size_t base = children(node);
            for (unsigned b = 0; b < 0x80; ++b)
                if (counted_step(base, b) != SIZE_MAX) set(continues_, b);
            for (unsigned b = 0xC2; b < 0xF5; ++b) {
                const size_t first = counted_step(base, b);
                if (first == SIZE_MAX) continue;
                const size_t len = b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
                todo.assign(1, {first, b & (0xFFu >> (len + 1)), 1});
                while (!todo.empty()) {
                    const Below at = todo.back();
                    todo.pop_back();
                    if (at.bytes < len && has_leaf(units_[at.node])) key_ends_inside = true;
                    if (at.bytes == len) {
                        if (at.cp < kMapped) set(continues_, at.cp);
                        else far_continues_ = true;
                        continue;
                    }
                    for (unsigned c = 0x80; c < 0xC0; ++c) {
                        const size_t next = counted_step(children(at.node), c);
                        if (next != SIZE_MAX) todo.push_back({next, at.cp << 6 | (c & 0x3F), at.bytes + 1});
                    }
                }
            }
        };
        for (unsigned c = 0; c < 0x80; ++c) {
            const size_t node = step(root, c);
            if (node == SIZE_MAX) continue;
            ascii_key_[c] = has_leaf(units_[node]);
            const size_t base = children(node);
            for (unsigned d = 0; d < 0x80 && !ascii_goes_on_[c]; ++d) ascii_goes_on_[c] = step(base, d) != SIZE_MAX;
            ascii_leads_on_[c] = true;
            if (!ascii_key_[c]) add_continuations(node);
        }
        std::string bytes;
        for (uint32_t cp = 0x80; cp < kMapped; ++cp) {
            if (cp >= 0xD800 && cp < 0xE000) continue;  // surrogates: no character
            bytes.clear();
            nfc_detail::append_utf8(bytes, cp);
            const size_t len = bytes.size();
            size_t base = root, node = SIZE_MAX, k = 0;
            for (; k < len; ++k) {
                node = step(base, static_cast<unsigned char>(bytes[k]));
                if (node == SIZE_MAX || has_leaf(units_[node])) break;
                base = children(node);
            }
            if (node == SIZE_MAX) {
                set(off_trie_, cp);
            } else if (k == len) {
                set(leads_on_, cp);
                add_continuations(node);
            }
        }
        if (steps_left == 0 || key_ends_inside) {
            std::fill(std::begin(continues_), std::end(continues_), ~uint64_t(0));
            far_continues_ = true;
        }
    }

    // Whether the map leaves the ASCII byte `c` as it is where `next` (0 at the end)
    // follows it: no key is `c` alone, and none that goes on from it can match here (an
    // ASCII `next` goes on from no key; a non-ASCII one may).
    bool ascii_alone(unsigned char c, unsigned char next) const {
        if (ascii_key_[c]) return false;
        return next < 0x80 ? !ascii_goes_on_[c] : !ascii_leads_on_[c];
    }

    // The end of the run of characters from in[i] that the map leaves as they are, read
    // without a search: a character no key is or begins, or one that keys only go on from
    // where the character after it follows a whole character in no key. It stops before
    // any byte `stop` marks, before a character from kMapped up, and before a byte that
    // starts no valid character (the search reads those).
    BPE_ALWAYS_INLINE size_t alone_run(std::string_view in, size_t i, const std::array<bool, 256>& stop) const {
        const auto* u = reinterpret_cast<const unsigned char*>(in.data());
        const size_t n = in.size();
        while (i < n) {
            const unsigned char c = u[i];
            if (stop[c]) break;
            size_t len = 1;  // the character's bytes
            if (c < 0x80) {
                if (ascii_key_[c]) break;
                if (!ascii_leads_on_[c] || i + 1 == n) {
                    ++i;
                    continue;
                }
                if (u[i + 1] < 0x80) {
                    if (ascii_goes_on_[c]) break;
                    ++i;
                    continue;
                }
            } else {
                const nfc_detail::Decoded d = nfc_detail::decode(u + i, u + n);
                if (d.cp >= kMapped) break;  // no character (kInvalid and up) too
                len = d.len;
                if (test(off_trie_, d.cp)) {
                    i += len;
                    continue;
                }
                if (!test(leads_on_, d.cp)) break;
            }
            if (i + len < n && may_continue(u + i + len, u + n)) break;
            i += len;
        }
        return i;
    }

    // The last searches a thread made in one map (thread_memo). A search's answer
    // depends only on the bytes it read: those of the key it matched, and on to the byte
    // where it fell off the trie. A text's places that a map changes come back in the
    // same company (a line break before the same word, a letter and the same accent, a
    // run of fullwidth letters), so a search whose first bytes are those a kept one read
    // is answered from it. Searches that read more than 8 bytes, or reached the text's
    // end, are not kept. A slot holds the last search made at a place whose first 3
    // bytes hash to it. (The bytes are read as a little-endian word: a big-endian build
    // keeps none.)
    struct PrefixMemo {
        static constexpr unsigned kSlotBits = 9;
        struct Entry {
            uint64_t bytes = 0;           // the bytes the search read, the rest zero
            uint32_t value = 0;           // the replacement's offset, where one matched
            uint16_t replacement_size = 0;
            uint8_t read = 0;             // how many bytes it read; 0: no entry
            uint8_t length = 0;           // the prefix matched; 0: none
        };
        uint64_t map = 0;  // whose searches these are (Charsmap::id_)
        Entry slots[size_t(1) << kSlotBits];
    };

    // This thread's memo, emptied first where it held another map's searches.
    PrefixMemo* thread_memo() const {
        thread_local std::unique_ptr<PrefixMemo> memo;
        if (!memo) memo = std::make_unique<PrefixMemo>();
        if (memo->map != id_) {
            std::fill(std::begin(memo->slots), std::end(memo->slots), PrefixMemo::Entry{});
            memo->map = id_;
        }
        return memo.get();
    }

    // Where `memo` holds the search from in[i] (see PrefixMemo) and it matched a key: the
    // key's replacement into `piece` and its length into `length`, and true. Inline, for
    // the normalizer's loop to try before it calls longest_prefix.
    BPE_ALWAYS_INLINE bool remembered(std::string_view in, size_t i, PrefixMemo* memo, std::string_view& piece,
                                      size_t& length) const {
        uint64_t ahead;
        const PrefixMemo::Entry* slot = memo_slot(in, i, memo, ahead);
        if (slot == nullptr || !answers(*slot, ahead) || slot->length == 0) return false;
        piece = kept_replacement(*slot);
        length = slot->length;
        return true;
    }

    // The replacement of the longest prefix of in[i...] the map holds, and that prefix's
    // length in bytes; length 0 where none is. With `memo` (this map's: thread_memo), a
    // search made before on the same bytes is answered from it.
    std::pair<std::string_view, size_t> longest_prefix(std::string_view in, size_t i,
                                                       PrefixMemo* memo = nullptr) const {
        uint64_t ahead = 0;  // the 8 bytes from in[i]
        PrefixMemo::Entry* slot = memo_slot(in, i, memo, ahead);
        if (slot != nullptr && answers(*slot, ahead)) {
            if (slot->length == 0) return {{}, 0};
            return {kept_replacement(*slot), slot->length};
        }
        constexpr int kMaxResults = 32;  // sentencepiece's kMaxTrieResultsSize
        size_t node = offset(units_[0]);
        size_t best_length = 0;
        uint32_t best_value = 0;
        int results = 0;
        size_t k = i;
        for (; k < in.size(); ++k) {
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
        const std::string_view found = best_length == 0 ? std::string_view() : replacement(best_value);
        if (slot != nullptr && k < in.size() && k + 1 - i <= 8) {  // it fell off at in[k]
            const size_t read = k + 1 - i;
            *slot = {ahead & low_bytes(read), best_value, uint16_t(found.size()), uint8_t(read), uint8_t(best_length)};
        }
        if (best_length == 0) return {{}, 0};
        return {found, best_length};
    }

private:
    static bool test(const uint64_t* bits, uint32_t cp) { return bits[cp >> 6] >> (cp & 63) & 1; }

    // The memo's slot for a search from in[i], and the 8 bytes from there in `ahead`;
    // nullptr without a memo, within 8 bytes of the text's end, or on a big-endian build.
    BPE_ALWAYS_INLINE static PrefixMemo::Entry* memo_slot(std::string_view in, size_t i, PrefixMemo* memo,
                                                          uint64_t& ahead) {
        ahead = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        if (memo == nullptr || in.size() - i < 8) return nullptr;
        std::memcpy(&ahead, in.data() + i, 8);
        return &memo->slots[((ahead & 0xFFFFFF) * 0x9E3779B97F4A7C15ull) >> (64 - PrefixMemo::kSlotBits)];
#else
        (void)in, (void)i, (void)memo;
        return nullptr;
#endif
    }

    // Whether the slot's search read what the 8 bytes `ahead` begin with (so answers for them).
    BPE_ALWAYS_INLINE static bool answers(const PrefixMemo::Entry& slot, uint64_t ahead) {
        return slot.read != 0 && ((ahead ^ slot.bytes) & low_bytes(slot.read)) == 0;
    }

    // The replacement a slot's search matched.
    BPE_ALWAYS_INLINE std::string_view kept_replacement(const PrefixMemo::Entry& slot) const {
        return std::string_view(blob_.data() + replacements_at_ + slot.value, slot.replacement_size);
    }

    // The first n bytes (1 to 8) of a little-endian word read from the text.
    static uint64_t low_bytes(size_t n) { return n >= 8 ? ~uint64_t(0) : (uint64_t(1) << (8 * n)) - 1; }

    // A number no other map has, for thread_memo.
    static uint64_t next_id() {
        static std::atomic<uint64_t> last{0};
        return ++last;
    }

    // Whether the character at p (p < end) may go on a key after a whole character.
    BPE_ALWAYS_INLINE bool may_continue(const unsigned char* p, const unsigned char* end) const {
        const uint32_t cp = nfc_detail::decode(p, end).cp;
        if (cp >= nfc_detail::kInvalid) return true;
        return cp < kMapped ? test(continues_, cp) : far_continues_;
    }

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

    // The replacement at `v`, checked to end in a NUL within the blob: most are a few
    // bytes, so where 8 bytes can be read their NUL is found in them, without a call.
    std::string_view replacement(uint32_t v) const {
        const char* r = blob_.data() + replacements_at_ + v;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        if (blob_.size() - replacements_at_ - v >= 8) {
            uint64_t word;
            std::memcpy(&word, r, 8);
            // A bit set in the lowest byte that is 0 (and maybe in later ones).
            const uint64_t zero = (word - 0x0101010101010101ull) & ~word & 0x8080808080808080ull;
            if (zero != 0) return std::string_view(r, count_trailing_zeros(zero) / 8);
        }
#endif
        return std::string_view(r);
    }

    std::string_view replacements() const { return std::string_view(blob_).substr(replacements_at_); }

    std::string blob_;
    uint64_t id_;
    std::vector<uint32_t> units_;
    size_t replacements_at_ = 0;  // where in blob_ the replacements begin
    bool ascii_key_[128] = {};       // see the constructor
    bool ascii_goes_on_[128] = {};
    bool ascii_leads_on_[128] = {};  // a key starts with the byte (and may go on from it)
    // By code point below kMapped (ASCII's in continues_ only).
    uint64_t off_trie_[kMapped / 64] = {};
    uint64_t leads_on_[kMapped / 64] = {};
    uint64_t continues_[kMapped / 64] = {};
    bool far_continues_ = false;  // a character from kMapped up follows a whole one in a key
};

}  // namespace bpe
