// Merging that starts from characters, as SentencePiece's BPE (bpe_model.cc) and Hugging
// Face's BPE with byte_fallback do, for a vocabulary whose tokens are text (the rules'
// "char_merges"):
//   1. a chunk becomes its characters: a character that is a token is that token; one
//      that is not is its UTF-8 bytes as the byte tokens 0-255 (byte_fallback), else the
//      unknown token (one for a run of them with fuse_unk; left out where there is none);
//   2. the neighbouring pair whose tokens join into a token by a merge of lowest rank
//      merges, the leftmost of equal ranks first, until no pair is a merge. Ranks may
//      repeat: SentencePiece's are the made token's score, highest first, and two pieces
//      of one score merge leftmost first.
// Byte tokens and the unknown token are in no merge, so they never merge.
// The ids are in our numbering (vocabulary.h); this file knows nothing of the caller's.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <queue>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "ids.h"
#include "normalize.h"
#include "pair_table.h"

namespace bpe {

// What the rules' "char_merges" says beyond merging from characters.
struct CharMergeOptions {
    bool byte_fallback = false;
    std::optional<uint32_t> unk_id;  // the caller's id of the unknown token
    bool fuse_unk = false;
};

class CharMerges {
public:
    static constexpr uint32_t kNone = UINT32_MAX;
    // Ranks are packed beside a position in 5 bits (merge_short) and must stay below this.
    static constexpr uint32_t kRankLimit = 1u << 24;

    // chars: (token, bytes) of every token that may be a single character (others are
    // skipped); merges: (left, right, made) with their ranks; unk_token: ours, or kNone.
    CharMerges(const CharMergeOptions& options, uint32_t unk_token,
               const std::vector<std::pair<uint32_t, std::string_view>>& chars,
               const std::vector<std::array<uint32_t, 3>>& merges, const std::vector<uint32_t>& ranks)
        : byte_fallback_(options.byte_fallback), fuse_unk_(options.fuse_unk), unk_(unk_token), pairs_(merges.size()) {
        ascii_.fill(kNone);
        two_byte_.assign(0x800, kNone);
        for (const auto& [token, bytes] : chars) {
            if (bytes.empty()) continue;
            const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
            const nfc_detail::Decoded d = nfc_detail::decode(p, p + bytes.size());
            if (d.len != bytes.size() || d.cp >= nfc_detail::kInvalid) continue;  // not one character
            // Of two tokens with one text, the first.
            if (d.cp >= 0x800) {
                other_.emplace(d.cp, token);
                continue;
            }
            uint32_t& slot = d.cp < 0x80 ? ascii_[d.cp] : two_byte_[d.cp];
            if (slot == kNone) slot = token;
        }
        for (size_t r = 0; r < merges.size(); ++r) {
            const uint32_t rank = ranks[r];
            if (rank >= kRankLimit)
                throw std::invalid_argument("ranked merge " + std::to_string(r) + " has rank " + std::to_string(rank) +
                                            ", above the largest allowed, " + std::to_string(kRankLimit - 1));
            if (!pairs_.insert(merges[r][0], merges[r][1], uint64_t(rank) << 32 | merges[r][2]))
                throw std::invalid_argument("ranked merge " + std::to_string(r) + " repeats the pair (" +
                                            std::to_string(merges[r][0]) + ", " + std::to_string(merges[r][1]) + ")");
        }
    }

    // The ids (ours) of a chunk, appended to out.
    void encode(std::string_view chunk, Ids& out) const {
        if (chunk.size() <= kShort) {
            uint32_t ids[kShort];
            merge_short(ids, symbols(chunk, ids), out);
            return;
        }
        Ids ids(chunk.size());  // written by symbols before it is read
        ids.resize(symbols(chunk, ids.data()));
        merge_long(ids, out);
    }

    // The token whose text is this one character (code point), or kNone.
    uint32_t char_token(uint32_t cp) const {
        if (cp < 0x80) return ascii_[cp];
        if (cp < 0x800) return two_byte_[cp];
        auto it = other_.find(cp);
        return it == other_.end() ? kNone : it->second;
    }
    uint32_t unk_token() const { return unk_; }

    // How many bytes of chunk[at, end) the unknown token at `at` stands for: the unknown
    // character there (one that is no token), or with fuse_unk the run of them that
    // begins there; without an unknown token, the run left out. 0 where the character at
    // `at` is a token, or under byte_fallback (its bytes are byte tokens of a byte each).
    size_t unknown_bytes(std::string_view chunk, size_t at, size_t end) const {
        if (byte_fallback_) return 0;
        const auto* p = reinterpret_cast<const unsigned char*>(chunk.data());
        size_t k = at;
        while (k < end) {
            const nfc_detail::Decoded d = nfc_detail::decode(p + k, p + end);
            if (d.cp < nfc_detail::kInvalid && char_token(d.cp) != kNone) break;
            k += d.len;
            if (unk_ != kNone && !fuse_unk_) break;
        }
        return k - at;
    }

    // Where a text may be cut into chunks that merge alone: before each "▁" (U+2581, a
    // space as sentencepiece writes it) that follows a character x other than "▁" where
    // no token holds x then "▁". A token that spanned such a cut would hold the two
    // characters beside it, so no merge joins across it, and the two sides merge as they
    // would together. find_word_cuts reads the tokens (their bytes) for which x may not
    // be; no cut at all where "▁" is no token (as unknown, it could join an unknown run
    // across a cut).
    template <class Tokens>
    void find_word_cuts(const Tokens& tokens) {
        word_cuts_ = char_token(0x2581) != kNone;
        ascii_joins_space_.fill(false);
        bool joins = false;
        for (std::string_view bytes : tokens)
            for (size_t at = bytes.find(kSpace, 1); at != std::string_view::npos; at = bytes.find(kSpace, at + 3)) {
                const uint32_t x = char_before(bytes, at, 0);
                if (x == 0x2581) continue;
                joins = true;
                if (x < 0x80) ascii_joins_space_[x] = true;
                else joins_space_.insert(x);
            }
        every_word_ = word_cuts_ && !joins;
    }
    bool cuts_words() const { return word_cuts_; }
    // Whether the cuts are before every "▁" that follows another character (no token
    // holds a character then "▁"), as in every real sentencepiece model tried.
    bool cuts_every_word() const { return every_word_; }

    // From now on a space (' ') is read as "▁", for chunks cut from a text whose spaces
    // the rules write as "▁" (the encoder's space words), where no space is left as one.
    void read_space_as_meta() { ascii_[' '] = char_token(0x2581); }

    // The end of the chunk of text[from, end) that begins at `from`: the first cut after
    // it as find_word_cuts says (each "▁" found by memchr for its first byte), or end.
    size_t word_end(std::string_view text, size_t from, size_t end) const {
        const auto* p = reinterpret_cast<const unsigned char*>(text.data());
        for (size_t i = from + 1; i + 3 <= end; i += 3) {
            const void* lead = std::memchr(p + i, 0xE2, end - 2 - i);
            if (lead == nullptr) break;
            i = size_t(static_cast<const unsigned char*>(lead) - p);
            if (p[i + 1] != 0x96 || p[i + 2] != 0x81) {
                i -= 2;  // on from the byte after it
                continue;
            }
            const uint32_t x = p[i - 1] < 0x80 ? p[i - 1] : char_before(text, i, from);
            const bool joins = x < 0x80 ? ascii_joins_space_[x]
                                        : x == 0x2581 || (!joins_space_.empty() && joins_space_.count(x) > 0);
            if (!joins) return i;
        }
        return end;
    }

    // Calls cut(begin, end) for each chunk of text[begin, end), in order.
    template <class Cut>
    void for_each_word(std::string_view text, size_t begin, size_t end, Cut&& cut) const {
        for (size_t from = begin; from < end;) {
            const size_t to = word_end(text, from, end);
            cut(from, to);
            from = to;
        }
    }

private:
    static constexpr size_t kShort = 32;
    static constexpr std::string_view kSpace = "\xe2\x96\x81";

    // The code point of the character that ends at bytes[at] (begins at `floor` or
    // later); kNone for bytes that are no character.
    static uint32_t char_before(std::string_view bytes, size_t at, size_t floor) {
        size_t j = at - 1;
        while (j > floor && at - j < 4 && (static_cast<unsigned char>(bytes[j]) & 0xC0) == 0x80) --j;
        const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
        const nfc_detail::Decoded d = nfc_detail::decode(p + j, p + at);
        return d.len == at - j && d.cp < nfc_detail::kInvalid ? d.cp : kNone;
    }

    // The chunk's first symbols into ids (at most one a byte); returns how many.
    size_t symbols(std::string_view chunk, uint32_t* ids) const {
        const auto* p = reinterpret_cast<const unsigned char*>(chunk.data());
        const size_t size = chunk.size();
        size_t n = 0;
        for (size_t i = 0; i < size;) {
            uint32_t token;
            size_t len = 1;
            if (p[i] < 0x80) {
                token = ascii_[p[i]];
            } else {
                const nfc_detail::Decoded d = nfc_detail::decode(p + i, p + size);
                len = d.len;
                token = d.cp < nfc_detail::kInvalid ? char_token(d.cp) : kNone;
            }
            if (token != kNone) {
                ids[n++] = token;
            } else if (byte_fallback_) {
                for (size_t k = 0; k < len; ++k) ids[n++] = p[i + k];
            } else if (unk_ != kNone && !(fuse_unk_ && n > 0 && ids[n - 1] == unk_)) {
                ids[n++] = unk_;
            }
            i += len;
        }
        return n;
    }

    // (rank, made) of the pair, or rank kNone.
    std::pair<uint32_t, uint32_t> merge_of(uint32_t a, uint32_t b) const {
        const uint64_t* v = pairs_.find(a, b);
        return v ? std::make_pair(uint32_t(*v >> 32), uint32_t(*v)) : std::make_pair(kNone, kNone);
    }

    // A few symbols: every pair's rank held, the lowest found by a scan of
    // (rank << 5 | position), and after a merge the two pairs beside it looked up again.
    void merge_short(uint32_t* ids, size_t n, Ids& out) const {
        uint32_t ranks[kShort], made[kShort];
        auto look = [&](size_t i) {
            const auto [r, m] = merge_of(ids[i], ids[i + 1]);
            ranks[i] = r, made[i] = m;
        };
        for (size_t i = 0; i + 1 < n; ++i) look(i);
        while (n > 1) {
            uint32_t lowest = UINT32_MAX;
            for (uint32_t i = 0; i + 1 < n; ++i) lowest = std::min(lowest, ranks[i] << 5 | i);
            if (lowest >= kRankLimit << 5) break;
            const size_t at = lowest & 31;
            ids[at] = made[at];
            for (size_t i = at + 1; i + 1 < n; ++i) ids[i] = ids[i + 1];
            for (size_t i = at + 1; i + 2 < n; ++i) ranks[i] = ranks[i + 1], made[i] = made[i + 1];
            --n;
            if (at > 0) look(at - 1);
            if (at + 1 < n) look(at);
        }
        out.insert(out.end(), ids, ids + n);
    }

    // Any number of symbols: a linked list, and a heap of (rank, position) for each pair
    // that is a merge. An entry is stale when the pair now at its position has another
    // rank (or none); one whose pair changed but kept its rank is that pair's own entry
    // too, as every pair of a rank has one at its position.
    void merge_long(Ids& ids, Ids& out) const {
        if (ids.size() >= size_t(INT32_MAX)) throw std::length_error("a chunk of 2 GB or more cannot be encoded");
        if (ids.empty()) return;
        const int32_t n = int32_t(ids.size());
        std::vector<int32_t> prev(ids.size()), next(ids.size());
        for (int32_t i = 0; i < n; ++i) prev[size_t(i)] = i - 1, next[size_t(i)] = i + 1 < n ? i + 1 : -1;
        using Entry = std::pair<uint32_t, int32_t>;
        std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap;
        auto push = [&](int32_t p) {
            if (p < 0 || next[size_t(p)] < 0) return;
            const uint32_t r = merge_of(ids[size_t(p)], ids[size_t(next[size_t(p)])]).first;
            if (r != kNone) heap.push({r, p});
        };
        for (int32_t i = 0; i + 1 < n; ++i) push(i);
        while (!heap.empty()) {
            const auto [r, p] = heap.top();
            heap.pop();
            const int32_t q = next[size_t(p)];
            if (ids[size_t(p)] == kNone || q < 0) continue;
            const auto [rank, made] = merge_of(ids[size_t(p)], ids[size_t(q)]);
            if (rank != r) continue;
            ids[size_t(p)] = made;
            ids[size_t(q)] = kNone;
            next[size_t(p)] = next[size_t(q)];
            if (next[size_t(q)] >= 0) prev[size_t(next[size_t(q)])] = p;
            push(prev[size_t(p)]);
            push(p);
        }
        for (int32_t p = 0; p >= 0; p = next[size_t(p)]) out.push_back(ids[size_t(p)]);
    }

    bool byte_fallback_, fuse_unk_;
    uint32_t unk_;
    std::array<uint32_t, 128> ascii_;
    std::vector<uint32_t> two_byte_;  // U+0080..U+07FF
    std::unordered_map<uint32_t, uint32_t> other_;
    PairHashTable<uint64_t, KeyValueSlots> pairs_;  // (left, right) -> rank << 32 | made
    bool word_cuts_ = false;                    // see find_word_cuts
    bool every_word_ = false;                   // see cuts_every_word
    std::array<bool, 128> ascii_joins_space_{};  // x, ASCII, where a token holds x then "▁"
    std::unordered_set<uint32_t> joins_space_;   // the same x beyond ASCII
};

}  // namespace bpe
