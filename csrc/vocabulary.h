// The vocabulary an Encoder works with: the merges and their ranks, how its tokens
// are numbered, each token's bytes (for decoding), and the tokens that are whole
// chunks.
//
// Our numbering: ids 0-255 are the bytes, merge k makes token 256 + k, and the special
// tokens follow the merges in the order given. Merging works in those numbers. A
// vocabulary may number its tokens its own way (GPT-2 and GPT-4 do): token_ids then
// gives the id of every token, in that order, and what the encoder returns, keeps and
// decodes are those ids.
//
// Everything is checked here, once, as the vocabulary is made: merges that could not
// have been learned, ids that repeat or are too large, tokens too large to hold. What
// is made is then only read, by any number of threads.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "chunk_table.h"
#include "compiler.h"
#include "pair.h"
#include "pair_table.h"
#include "special.h"

namespace bpe {

// The largest id a token may have: 2^24 - 1, far above any published vocabulary
// (GPT-4's largest is 100,276). Ids index tables, so an unchecked 2^31 would make
// a table of 2^31 entries.
inline constexpr uint32_t kMaxId = (1u << 24) - 1;
// The most bytes all tokens together may hold. Each merge joins two earlier tokens,
// so 40 merges of a token with itself would make a token of 2^40 bytes: a few
// lines of a file must not be able to ask for that much memory.
inline constexpr uint64_t kMaxVocabularyBytes = uint64_t(1) << 28;

class Vocabulary {
public:
    static constexpr uint32_t kNoRank = RankTable::kMissing;

    // token_ids, when given, holds one id for every token, in our order (the bytes,
    // the merges, the specials). Throws std::invalid_argument for merges that could not
    // have been learned (merge k may use only the bytes and the tokens of the merges
    // before it, once each), for token_ids of the wrong length, with an id repeated or
    // above kMaxId, and for merges whose tokens would hold more than kMaxVocabularyBytes.
    Vocabulary(const std::vector<Pair>& merges, const std::vector<std::string>& special_tokens,
               std::optional<std::vector<uint32_t>> token_ids)
        : ranks_(merges.size()), merges_(merges) {
        for (size_t k = 0; k < merges.size(); ++k) {
            auto [a, b] = merges[k];
            if (a >= 256 + k || b >= 256 + k)
                throw std::invalid_argument("merge " + std::to_string(k) + " is (" + std::to_string(a) + ", " +
                                            std::to_string(b) + "), but merge " + std::to_string(k) +
                                            " may only use ids below " + std::to_string(256 + k));
            if (!ranks_.insert(a, b, uint32_t(k)))
                throw std::invalid_argument("merge " + std::to_string(k) + " repeats merge " +
                                            std::to_string(ranks_.get(a, b)) + ": (" + std::to_string(a) + ", " +
                                            std::to_string(b) + ")");
            if (a < 256 && b < 256) byte_ranks_[a << 8 | b] = uint32_t(k);
        }
        size_t tokens = 256 + merges.size() + special_tokens.size();
        if (!token_ids) {
            if (tokens - 1 > kMaxId)
                throw std::invalid_argument("a vocabulary of " + std::to_string(tokens) + " tokens has ids above " +
                                            std::to_string(kMaxId) + ", the largest allowed");
        } else if (token_ids->size() != tokens) {
            // Every length but this one is refused, [] and a few ids 0, 1, ... too.
            throw std::invalid_argument("token_ids has " + std::to_string(token_ids->size()) +
                                        " ids, but there are " + std::to_string(tokens) + " tokens (256 bytes, " +
                                        std::to_string(merges.size()) + " merges and " +
                                        std::to_string(special_tokens.size()) + " special tokens)");
        }
        if (token_ids) {
            bool identity = true;
            for (size_t t = 0; t < tokens && identity; ++t) identity = (*token_ids)[t] == t;
            if (!identity) token_ids_ = std::move(*token_ids);  // else token i is id i: nothing to renumber
        }
        std::vector<std::pair<std::string, uint32_t>> specials;
        for (size_t j = 0; j < special_tokens.size(); ++j)
            specials.emplace_back(special_tokens[j], id_of(uint32_t(256 + merges.size() + j)));
        specials_ = SpecialTokens(std::move(specials));
        number_tokens(tokens);
        store_token_bytes(merges);
    }

    // --- what merging reads: our numbering ---------------------------------------------

    size_t num_merges() const { return merges_.size(); }
    // The merges by rank: merge r makes token 256 + r.
    const std::vector<Pair>& merges() const { return merges_; }
    // The caller's id of each token, as given; empty when token i is id i.
    const std::vector<uint32_t>& token_ids() const { return token_ids_; }
    // The rank of the merge of (a, b), or kNoRank.
    uint32_t rank(uint32_t a, uint32_t b) const { return ranks_.get(a, b); }
    // The rank of the merge of two bytes, or kNoRank: every chunk new to the encoder's
    // table starts with a round of these, from a dense table (256 KB) rather than the
    // hash table of all merges (docs/design-notes.md).
    uint32_t byte_pair_rank(unsigned char a, unsigned char b) const { return byte_ranks_[a << 8 | b]; }
    // How many bytes the token (in our numbering) holds.
    uint64_t token_size(uint32_t token) const { return offsets_[token + 1] - offsets_[token]; }

    // Our token numbers, from out[start] on, turned into the caller's (token_ids). The
    // encoder's table keeps the caller's, so a chunk found there costs nothing more.
    void renumber(std::vector<uint32_t>& out, size_t start) const {
        if (token_ids_.empty()) return;
        for (size_t i = start; i < out.size(); ++i) out[i] = token_ids_[out[i]];
    }

    // --- ids: the caller's numbering ---------------------------------------------------

    const SpecialTokens& specials() const { return specials_; }
    // One more than the largest id (tiktoken's n_vocab): the size a table indexed by
    // id needs. Larger than the number of tokens when the numbering has gaps.
    size_t n_vocab() const { return n_vocab_; }

    // Whether id is a token's (not a gap in the numbering).
    bool has_id(uint32_t id) const { return token_of(id) != kNoToken; }

    // The bytes of the token with this id (a special token's are its text); id must
    // be one of has_id's.
    std::string_view token_bytes(uint32_t id) const {
        uint32_t t = token_of(id);
        return std::string_view(bytes_.data() + offsets_[t], offsets_[t + 1] - offsets_[t]);
    }

    // The bytes of ids, joined; each id must be one of has_id's. Special tokens give
    // their text unless skip_special.
    std::string decode(const uint32_t* ids, size_t n, bool skip_special = false) const {
        std::string out;
        size_t total = 0;
        for (size_t i = 0; i < n; ++i) {
            uint32_t t = token_of(ids[i]);
            if (!(skip_special && t >= first_special_)) total += offsets_[t + 1] - offsets_[t];
        }
        out.resize(total);
        char* at = out.data();
        for (size_t i = 0; i < n; ++i) {
            uint32_t t = token_of(ids[i]);
            if (skip_special && t >= first_special_) continue;
            size_t len = offsets_[t + 1] - offsets_[t];
            std::memcpy(at, bytes_.data() + offsets_[t], len);
            at += len;
        }
        return out;
    }

    // The character span [start, end) of each token in `text`, where ids are
    // encode's ids of text (their bytes, joined, are text): spans[2k] and spans[2k + 1]
    // for token k. Characters are counted by their first bytes (every byte but
    // 10xxxxxx), so a token that begins or ends inside a character gets that whole
    // character, as Hugging Face's offsets do: the tokens of a split character share
    // its span. One pass over the bytes.
    void char_spans(std::string_view text, const std::vector<uint32_t>& ids, int64_t* spans) const {
        size_t at = 0, chars = 0;  // chars: the characters that begin before byte `at`
        for (uint32_t id : ids) {
            size_t len = token_bytes(id).size();
            if (len > text.size() - at) throw std::logic_error("char_spans: the ids are not the text's");
            bool inside = len > 0 && (static_cast<unsigned char>(text[at]) & 0xC0) == 0x80;
            *spans++ = int64_t(chars - inside);
            chars += characters_begun(text, at, at + len);
            at += len;
            *spans++ = int64_t(chars);
        }
    }

    // --- whole tokens ------------------------------------------------------------------

    // Calls keep(bytes, id) for each token of at most `longest` bytes whose own bytes
    // merge back into the token itself, `merge(bytes, ids)` appending the ids (ours)
    // that the bytes merge into: a chunk equal to one of them is that one token, which
    // the encoder's table is seeded with (under GPT-2's and GPT-4's vocabularies most
    // chunks are one token). Each token is checked by merging its bytes, not assumed:
    // two merges can make the same bytes, and a token's bytes can merge, in rank order,
    // into other tokens. The views of bytes last as long as the vocabulary.
    template <class Merge, class Keep>
    void find_whole_tokens(size_t longest, Merge&& merge, Keep&& keep) const {
        const size_t ordinary_tokens = 256 + merges_.size();
        std::vector<uint32_t> ids;
        for (uint32_t t = 0; t < ordinary_tokens; ++t) {
            std::string_view bytes(bytes_.data() + offsets_[t], offsets_[t + 1] - offsets_[t]);
            if (bytes.size() > longest) continue;
            ids.clear();
            merge(bytes, ids);
            if (ids.size() == 1 && ids[0] == t) keep(bytes, id_of(t));
        }
    }

private:
    static constexpr uint32_t kNoToken = UINT32_MAX;

    uint32_t id_of(uint32_t token) const { return token_ids_.empty() ? token : token_ids_[token]; }

    // Checks the ids and makes the table from id back to token: dense (4 bytes an id)
    // when the numbering has few gaps, else sorted pairs searched by halves, so that
    // memory follows the number of tokens and never the largest id.
    void number_tokens(size_t tokens) {
        first_special_ = uint32_t(tokens - specials_.size());
        std::vector<std::pair<uint32_t, uint32_t>> by_id;  // (id, token)
        by_id.reserve(tokens);
        for (uint32_t t = 0; t < tokens; ++t) {
            uint32_t id = id_of(t);
            if (id > kMaxId)
                throw std::invalid_argument("token " + std::to_string(t) + " has id " + std::to_string(id) +
                                            ", above " + std::to_string(kMaxId) + ", the largest allowed");
            by_id.emplace_back(id, t);
        }
        std::sort(by_id.begin(), by_id.end());
        for (size_t k = 1; k < by_id.size(); ++k)
            if (by_id[k].first == by_id[k - 1].first)
                throw std::invalid_argument("two tokens have the id " + std::to_string(by_id[k].first));
        n_vocab_ = size_t(by_id.back().first) + 1;
        if (n_vocab_ <= 2 * tokens) {
            dense_.assign(n_vocab_, kNoToken);
            for (auto [id, t] : by_id) dense_[id] = t;
        } else {
            sparse_ = std::move(by_id);
        }
    }

    uint32_t token_of(uint32_t id) const {
        if (!dense_.empty()) return id < dense_.size() ? dense_[id] : kNoToken;
        auto it = std::lower_bound(sparse_.begin(), sparse_.end(), std::make_pair(id, uint32_t(0)));
        return it != sparse_.end() && it->first == id ? it->second : kNoToken;
    }

    // Every token's bytes back to back: the bytes, each merge's two parts joined, then
    // the specials' text. Sizes are added up first, so that merges which would make
    // huge tokens are refused before anything is allocated.
    void store_token_bytes(const std::vector<Pair>& merges) {
        std::vector<uint64_t> size(256 + merges.size(), 1);
        uint64_t total = 256;
        for (size_t k = 0; k < merges.size(); ++k) {
            size[256 + k] = size[merges[k].first] + size[merges[k].second];
            total += size[256 + k];
            if (total > kMaxVocabularyBytes)
                throw std::invalid_argument("merge " + std::to_string(k) + " makes the tokens hold more than " +
                                            std::to_string(kMaxVocabularyBytes) + " bytes in all; merges this "
                                            "long could not have been learned from real text");
        }
        for (const auto& [text, id] : specials_.tokens()) total += text.size();
        offsets_.reserve(size.size() + specials_.size() + 1);
        bytes_.reserve(total);
        offsets_.push_back(0);
        for (uint32_t b = 0; b < 256; ++b) bytes_.push_back(char(b)), offsets_.push_back(bytes_.size());
        for (const auto& [a, b] : merges) {
            bytes_.append(bytes_, offsets_[a], offsets_[a + 1] - offsets_[a]);
            bytes_.append(bytes_, offsets_[b], offsets_[b + 1] - offsets_[b]);
            offsets_.push_back(bytes_.size());
        }
        for (const auto& [text, id] : specials_.tokens()) bytes_ += text, offsets_.push_back(bytes_.size());
    }

    // How many characters begin in text[at, end): the bytes that are not 10xxxxxx,
    // eight at a time while eight can be read (docs/design-notes.md). Little-endian: byte
    // k of the text is bits 8k to 8k + 7.
    static size_t characters_begun(std::string_view text, size_t at, size_t end) {
        constexpr uint64_t kLowBits = 0x0101010101010101ull;
        size_t count = 0;
#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        for (; at < end && at + 8 <= text.size(); at += 8) {
            uint64_t word;
            std::memcpy(&word, text.data() + at, 8);
            uint64_t continuation = (word >> 7) & ~(word >> 6) & kLowBits;  // bit 7 set, bit 6 clear
            uint64_t first = ~continuation & kLowBits;
            size_t n = std::min<size_t>(8, end - at);
            if (n < 8) first &= (uint64_t(1) << (8 * n)) - 1;
            count += size_t(bpe::count_ones(uint64_t(first)));
        }
        if (at > end) at = end;
#endif
        for (; at < end; ++at) count += (static_cast<unsigned char>(text[at]) & 0xC0) != 0x80;
        return count;
    }

    RankTable ranks_;
    std::vector<uint32_t> byte_ranks_ = std::vector<uint32_t>(256 * 256, kNoRank);  // see byte_pair_rank
    std::vector<Pair> merges_;  // by rank
    SpecialTokens specials_;
    std::vector<uint32_t> token_ids_;  // empty: token i is id i
    size_t n_vocab_ = 0;
    uint32_t first_special_ = 0;  // our number of the first special token
    std::vector<uint32_t> dense_;  // id -> token, or kNoToken; empty when sparse_ is used
    std::vector<std::pair<uint32_t, uint32_t>> sparse_;  // (id, token), sorted by id
    std::string bytes_;  // every token's bytes, back to back
    std::vector<uint64_t> offsets_;  // token t's bytes are bytes_[offsets_[t], offsets_[t + 1])
};

}  // namespace bpe
