// The vocabulary an Encoder works with: the merges and their ranks, how its tokens
// are numbered, each token's bytes (for decoding), and the tokens that are whole
// chunks.
//
// Our numbering: ids 0-255 are the bytes, merge k makes token 256 + k, the special
// tokens follow the merges in the order given, and the model's unmade tokens (ModelOptions)
// come last. Merging works in those numbers. A
// vocabulary may number its tokens its own way (GPT-2 and GPT-4 do): token_ids then
// gives the id of every token, in that order, and what the encoder returns, keeps and
// decodes are those ids.
//
// Everything is checked here, once, as the vocabulary is made: merges that could not
// have been learned, ids that repeat or are too large, tokens too large to hold. What
// is made is then only read, by any number of threads.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "char_merges.h"
#include "chunk_table.h"
#include "decoder.h"
#include "ids.h"
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

// What a model file may ask of merging beyond one merge per token in rank order: Hugging
// Face's BPE model (tokenizer.json) has all three.
struct ModelOptions {
    // A chunk that is a whole token (one a merge makes, or an unmade token) is that token,
    // whatever its merges would give.
    bool ignore_merges = false;
    // Empty, or the merges in Hugging Face's rank order as (left, right, made), in our
    // numbering: in a chunk the neighbouring pair of lowest rank, the leftmost of equals,
    // becomes the token its merge makes. Unlike the merges (one per token, after its
    // parts), a token may be made by several, and a merge may come before its parts'.
    std::vector<std::array<uint32_t, 3>> ranked_merges;
    // Empty (merge k has rank k), or the rank of each ranked merge, nondecreasing. Equal
    // ranks, which merge leftmost first, need char_merges.
    std::vector<uint32_t> merge_ranks;
    // Merging from characters (char_merges.h): the tokens are text, the unmade tokens
    // (as UTF-8) every one but the bytes and the specials, and ranked_merges join them.
    std::optional<CharMergeOptions> char_merges;
    // The model's tokens that no merge makes (reserved tokens; a few that no two tokens
    // join to make), as (bytes, id): decoded as their bytes, never matched in text, and
    // found whole under ignore_merges when `whole` (false where the file writes the
    // token outside the byte alphabet, so that no chunk can be it).
    struct UnmadeToken {
        std::string bytes;
        uint32_t id = 0;
        bool whole = true;
    };
    std::vector<UnmadeToken> unmade_tokens;
};

class Vocabulary {
public:
    static constexpr uint32_t kNoRank = RankTable::kMissing;
    static constexpr uint32_t kNoToken = UINT32_MAX;

    // token_ids, when given, holds one id for every token, in our order (the bytes,
    // the merges, the specials). Throws std::invalid_argument for merges that could not
    // have been learned (merge k may use only the bytes and the tokens of the merges
    // before it, once each), for token_ids of the wrong length, with an id repeated or
    // above kMaxId, and for merges whose tokens would hold more than kMaxVocabularyBytes;
    // for options, ranked merges that do not make their token from its two parts, and
    // unmade tokens with an id that another token has (but a special token's own, with
    // its bytes: GPT-2's "<|endoftext|>" is both).
    Vocabulary(const std::vector<Pair>& merges, const std::vector<std::string>& special_tokens,
               std::optional<std::vector<uint32_t>> token_ids, const ModelOptions& options = {})
        : ranks_(merges.size(), 256 + merges.size()), merges_(merges), ignore_merges_(options.ignore_merges) {
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
        add_unmade_tokens(options.unmade_tokens, tokens);
        number_tokens(256 + merges.size() + special_tokens.size() + unmade_.size());
        store_token_bytes(merges);
        if (options.char_merges) {
            merge_from_characters(*options.char_merges, options.ranked_merges, options.merge_ranks);
        } else if (!options.ranked_merges.empty()) {
            for (size_t r = 1; r < options.merge_ranks.size(); ++r)
                if (options.merge_ranks[r] <= options.merge_ranks[r - 1])
                    throw std::invalid_argument("ranked merge " + std::to_string(r) + "'s rank is not above the one "
                                                "before: equal ranks need char_merges");
            rank_as_given(options.ranked_merges);
        }
        if (ignore_merges_) index_whole_tokens();
        plain_ = !ranked() && !ignore_merges_ && !char_merges_;
    }

    // --- what merging reads: our numbering ---------------------------------------------

    size_t num_merges() const { return merges_.size(); }
    // The merges by rank: merge r makes token 256 + r.
    const std::vector<Pair>& merges() const { return merges_; }
    // The caller's id of each token but the unmade ones, as given; empty when token i is
    // id i.
    const std::vector<uint32_t>& token_ids() const { return unmade_.empty() ? token_ids_ : given_token_ids_; }
    // The rank of the merge of (a, b), or kNoRank: with ranked merges, the rank in their
    // order, and made(rank) is the token it makes; else merge r makes 256 + r.
    uint32_t rank(uint32_t a, uint32_t b) const { return ranks_.get(a, b); }
    bool ranked() const { return !made_.empty(); }
    // Neither ranked merges nor ignore_merges: merging as merge k makes 256 + k, alone.
    bool plain() const { return plain_; }
    uint32_t made(uint32_t rank) const { return made_[rank]; }
    size_t num_ranked() const { return made_.size(); }
    bool ignore_merges() const { return ignore_merges_; }
    // Merging from characters (char_merges.h), or null.
    const CharMerges* char_merges() const { return char_merges_.get(); }
    // Before the vocabulary is shared: CharMerges::read_space_as_meta.
    void read_space_as_meta() { char_merges_->read_space_as_meta(); }
    // The token (ours) whose bytes `chunk` is, for ignore_merges; kNoToken if none.
    uint32_t whole_token(std::string_view chunk) const {
        if (whole_.empty()) return kNoToken;
        const size_t mask = whole_.size() - 1;
        for (size_t i = std::hash<std::string_view>{}(chunk) & mask;; i = (i + 1) & mask) {
            uint32_t t = whole_[i];
            if (t == kNoToken || own_bytes(t) == chunk) return t;
        }
    }
    // How many tokens there are: the bytes, the merges', the specials and the unmade ones.
    size_t num_tokens() const { return offsets_.size() - 1; }
    // The model's unmade tokens, as given.
    const std::vector<ModelOptions::UnmadeToken>& unmade_tokens() const { return unmade_; }
    // The rank of the merge of two bytes, or kNoRank: every chunk new to the encoder's
    // table starts with a round of these, from a dense table (256 KB) rather than the
    // hash table of all merges (docs/design-notes.md).
    uint32_t byte_pair_rank(unsigned char a, unsigned char b) const { return byte_ranks_[a << 8 | b]; }
    // How many bytes the token (in our numbering) holds.
    uint64_t token_size(uint32_t token) const { return offsets_[token + 1] - offsets_[token]; }

    // Our token numbers, from out[start] on, turned into the caller's (token_ids). The
    // encoder's table keeps the caller's, so a chunk found there costs nothing more.
    void renumber(Ids& out, size_t start) const {
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
            if (!(skip_special && is_special(t))) total += offsets_[t + 1] - offsets_[t];
        }
        out.resize(total);
        char* at = out.data();
        for (size_t i = 0; i < n; ++i) {
            uint32_t t = token_of(ids[i]);
            if (skip_special && is_special(t)) continue;
            size_t len = offsets_[t + 1] - offsets_[t];
            std::memcpy(at, bytes_.data() + offsets_[t], len);
            at += len;
        }
        return out;
    }

    // The text of ids as `decoder` says (decoder.h); each id must be one of has_id's.
    // `start`: the ids begin the text.
    std::string decode(const Decoder& decoder, const uint32_t* ids, size_t n, bool skip_special, bool start) const {
        const uint32_t unk = char_merges_ ? char_merges_->unk_token() : kNoToken;
        return decode_with(decoder, ids, n, start, [&](uint32_t id) {
            const uint32_t t = token_of(id);
            DecodedToken d;
            d.bytes = own_bytes(t);
            d.byte = t < 256;
            d.unknown = t == unk;
            d.skip = (skip_special || decoder.drop_special) && is_special(t);
            return d;
        });
    }

    // How many of ids a streaming decoder may decode now (decoder.h's settled_bytes): all
    // but the byte tokens at the end that may begin a character later ones finish (with
    // whole_runs, all of those at the end: a later byte can make the whole run U+FFFD).
    size_t settled_ids(const Decoder& decoder, const uint32_t* ids, size_t n) const {
        size_t run = n;
        while (run > 0 && token_of(ids[run - 1]) < 256) --run;
        if (run == n) return n;
        if (decoder.whole_runs) return run;
        unsigned char bytes[64];
        const size_t count = std::min<size_t>(n - run, sizeof(bytes));
        for (size_t k = 0; k < count; ++k)
            bytes[k] = static_cast<unsigned char>(own_bytes(token_of(ids[n - count + k]))[0]);
        return n - count + settled_bytes(bytes, count);
    }

    // The character span [start, end) of each token in `text`, where ids are
    // encode's ids of text (their bytes, joined, are text): spans[2k] and spans[2k + 1]
    // for token k. Characters are counted by their first bytes (every byte but
    // 10xxxxxx), so a token that begins or ends inside a character gets that whole
    // character, as Hugging Face's offsets do: the tokens of a split character share
    // its span. One pass over the bytes.
    void char_spans(std::string_view text, const Ids& ids, int64_t* spans) const {
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
    // into other tokens. The unmade tokens are checked too (under ignore_merges those
    // the chunk finds whole are kept). The views of bytes last as long as the vocabulary.
    // The merging is most of building a large vocabulary's encoder, so it runs on
    // `parts` shares of the tokens at once, run_parts(parts, work) calling work(k) for
    // each k below parts (on threads); keep is called afterwards, in the tokens' order.
    template <class Merge, class RunParts, class Keep>
    void find_whole_tokens(size_t longest, Merge&& merge, size_t parts, RunParts&& run_parts, Keep&& keep) const {
        std::vector<uint32_t> tokens(256 + merges_.size());
        for (uint32_t t = 0; t < tokens.size(); ++t) tokens[t] = t;
        for (size_t j = 0; j < unmade_.size(); ++j) tokens.push_back(first_unmade_ + uint32_t(j));
        std::vector<uint8_t> whole(tokens.size(), 0);
        run_parts(parts, [&](size_t k) {
            Ids ids;
            for (size_t i = k * tokens.size() / parts; i < (k + 1) * tokens.size() / parts; ++i) {
                std::string_view bytes = own_bytes(tokens[i]);
                if (bytes.size() > longest) continue;
                ids.clear();
                merge(bytes, ids);
                whole[i] = ids.size() == 1 && ids[0] == tokens[i];
            }
        });
        for (size_t i = 0; i < tokens.size(); ++i)
            if (whole[i]) keep(own_bytes(tokens[i]), id_of(tokens[i]));
    }
    // The bytes of all tokens together.
    size_t total_bytes() const { return bytes_.size(); }

private:
    uint32_t id_of(uint32_t token) const { return token_ids_.empty() ? token : token_ids_[token]; }
    bool is_special(uint32_t token) const { return token >= first_special_ && token < first_unmade_; }
    std::string_view own_bytes(uint32_t token) const {
        return std::string_view(bytes_.data() + offsets_[token], offsets_[token + 1] - offsets_[token]);
    }

    // The unmade tokens follow the `tokens` given ones in our numbering, with their own
    // ids; token_ids_ then covers them too (token_ids() still gives what was given). One
    // with a special token's id and bytes is that special token, found whole under
    // ignore_merges and nothing more.
    void add_unmade_tokens(const std::vector<ModelOptions::UnmadeToken>& unmade, size_t tokens) {
        first_special_ = uint32_t(tokens - specials_.size());
        first_unmade_ = uint32_t(tokens);
        if (unmade.empty()) return;
        std::vector<std::pair<uint32_t, uint32_t>> special_ids;  // (id, token)
        for (size_t j = 0; j < specials_.size(); ++j)
            special_ids.emplace_back(id_of(first_special_ + uint32_t(j)), first_special_ + uint32_t(j));
        std::sort(special_ids.begin(), special_ids.end());
        for (const auto& token : unmade) {
            auto it = std::lower_bound(special_ids.begin(), special_ids.end(), std::make_pair(token.id, uint32_t(0)));
            if (it != special_ids.end() && it->first == token.id) {
                const std::string& text = specials_.tokens()[it->second - first_special_].first;
                if (text != token.bytes)
                    throw std::invalid_argument("the unmade token with id " + std::to_string(token.id) +
                                                " has other bytes than the special token with that id");
                if (token.whole) whole_specials_.push_back(it->second);
                continue;
            }
            unmade_.push_back(token);
        }
        if (unmade_.empty()) return;
        if (tokens + unmade_.size() - 1 > kMaxId)
            throw std::invalid_argument("a vocabulary of " + std::to_string(tokens + unmade_.size()) +
                                        " tokens has more than the largest id allowed, " + std::to_string(kMaxId));
        given_token_ids_ = token_ids_;
        if (token_ids_.empty())
            for (uint32_t t = 0; t < tokens; ++t) token_ids_.push_back(t);
        bool identity = given_token_ids_.empty();
        for (size_t j = 0; j < unmade_.size(); ++j) {
            token_ids_.push_back(unmade_[j].id);
            identity = identity && unmade_[j].id == tokens + j;
        }
        if (identity) token_ids_.clear();
    }

    // The ranks become those of options.ranked_merges, each checked: its parts are bytes
    // or merges' tokens, it makes a merge's token, whose bytes are its parts' joined.
    void rank_as_given(const std::vector<std::array<uint32_t, 3>>& ranked) {
        if (ranked.size() >= (size_t(1) << 24))  // encode_short packs a rank in 24 bits
            throw std::invalid_argument("ranked_merges holds " + std::to_string(ranked.size()) +
                                        " merges, more than the " + std::to_string((1u << 24) - 1) + " allowed");
        const size_t ordinary = 256 + merges_.size();
        RankTable table(ranked.size(), ordinary);
        std::vector<uint32_t> byte_ranks(256 * 256, kNoRank);
        made_.reserve(ranked.size());
        for (size_t r = 0; r < ranked.size(); ++r) {
            // Plain names, not a structured binding: the lambda below captures them.
            const uint32_t a = ranked[r][0], b = ranked[r][1], m = ranked[r][2];
            auto at = [&] { return "ranked merge " + std::to_string(r) + " (" + std::to_string(a) + ", " +
                                   std::to_string(b) + ") -> " + std::to_string(m); };
            if (a >= ordinary || b >= ordinary || m >= ordinary || m < 256)
                throw std::invalid_argument(at() + ": its parts must be bytes or merges' tokens, and what it makes a "
                                            "merge's token, all below " + std::to_string(ordinary));
            if (own_bytes(m).size() != own_bytes(a).size() + own_bytes(b).size() ||
                own_bytes(m).substr(0, own_bytes(a).size()) != own_bytes(a) ||
                own_bytes(m).substr(own_bytes(a).size()) != own_bytes(b))
                throw std::invalid_argument(at() + ": the token made is not its two parts joined");
            if (!table.insert(a, b, uint32_t(r)))
                throw std::invalid_argument(at() + " repeats ranked merge " + std::to_string(table.get(a, b)));
            if (a < 256 && b < 256) byte_ranks[a << 8 | b] = uint32_t(r);
            made_.push_back(m);
        }
        ranks_ = std::move(table);
        byte_ranks_ = std::move(byte_ranks);
    }

    // The char_merges start (char_merges.h): the unmade tokens are the pieces, and the
    // ranked merges, each checked, join them.
    void merge_from_characters(const CharMergeOptions& options, const std::vector<std::array<uint32_t, 3>>& ranked,
                               const std::vector<uint32_t>& ranks) {
        uint32_t unk = CharMerges::kNone;
        if (options.unk_id) {
            unk = token_of(*options.unk_id);
            if (unk == kNoToken)
                throw std::invalid_argument("char_merges's unk_id " + std::to_string(*options.unk_id) +
                                            " is no token's id");
        }
        const uint32_t first = first_unmade_, end = first_unmade_ + uint32_t(unmade_.size());
        std::vector<std::pair<uint32_t, std::string_view>> chars;
        for (uint32_t t = first; t < end; ++t)
            if (own_bytes(t).size() <= 4) chars.emplace_back(t, own_bytes(t));
        for (size_t r = 0; r < ranked.size(); ++r) {
            const uint32_t a = ranked[r][0], b = ranked[r][1], m = ranked[r][2];
            auto at = [&] { return "ranked merge " + std::to_string(r) + " (" + std::to_string(a) + ", " +
                                   std::to_string(b) + ") -> " + std::to_string(m); };
            if (a < first || a >= end || b < first || b >= end || m < first || m >= end)
                throw std::invalid_argument(at() + ": with char_merges its tokens must be unmade tokens, " +
                                            std::to_string(first) + " to " + std::to_string(end - 1));
            if (own_bytes(m).size() != own_bytes(a).size() + own_bytes(b).size() ||
                own_bytes(m).substr(0, own_bytes(a).size()) != own_bytes(a) ||
                own_bytes(m).substr(own_bytes(a).size()) != own_bytes(b))
                throw std::invalid_argument(at() + ": the token made is not its two parts joined");
            if (r > 0 && !ranks.empty() && ranks[r] < ranks[r - 1])
                throw std::invalid_argument(at() + ": its rank is below the one before (ranks must not decrease)");
        }
        std::vector<uint32_t> by_position;
        if (ranks.empty())
            for (size_t r = 0; r < ranked.size(); ++r) by_position.push_back(uint32_t(r));
        auto merges = std::make_shared<CharMerges>(options, unk, chars, ranked, ranks.empty() ? by_position : ranks);
        std::vector<std::string_view> pieces;
        for (uint32_t t = first; t < end; ++t) pieces.push_back(own_bytes(t));
        merges->find_word_cuts(pieces);
        char_merges_ = std::move(merges);
    }

    // The table of whole_token: the merges' tokens first (of two with the same bytes, the
    // first), then the unmade tokens found whole, then the special tokens that are also
    // unmade tokens.
    void index_whole_tokens() {
        std::vector<uint32_t> tokens;
        // With char_merges the tokens 0-255 are byte_fallback's, whose text is "<0x78>", not "x".
        for (uint32_t t = char_merges_ ? 256 : 0; t < 256 + merges_.size(); ++t) tokens.push_back(t);
        for (size_t j = 0; j < unmade_.size(); ++j)
            if (unmade_[j].whole) tokens.push_back(first_unmade_ + uint32_t(j));
        tokens.insert(tokens.end(), whole_specials_.begin(), whole_specials_.end());
        whole_.assign(table_capacity(tokens.size()), kNoToken);
        const size_t mask = whole_.size() - 1;
        for (uint32_t t : tokens) {
            std::string_view bytes = own_bytes(t);
            size_t i = std::hash<std::string_view>{}(bytes) & mask;
            while (whole_[i] != kNoToken && own_bytes(whole_[i]) != bytes) i = (i + 1) & mask;
            if (whole_[i] == kNoToken) whole_[i] = t;
        }
    }

    // Checks the ids and makes the table from id back to token: dense (4 bytes an id)
    // when the numbering has few gaps, else sorted pairs searched by halves, so that
    // memory follows the number of tokens and never the largest id.
    void number_tokens(size_t tokens) {
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
        for (const auto& token : unmade_) total += token.bytes.size();
        if (total > kMaxVocabularyBytes)
            throw std::invalid_argument("the tokens hold more than " + std::to_string(kMaxVocabularyBytes) + " bytes");
        offsets_.reserve(size.size() + specials_.size() + unmade_.size() + 1);
        bytes_.reserve(total);
        offsets_.push_back(0);
        for (uint32_t b = 0; b < 256; ++b) bytes_.push_back(char(b)), offsets_.push_back(bytes_.size());
        for (const auto& [a, b] : merges) {
            bytes_.append(bytes_, offsets_[a], offsets_[a + 1] - offsets_[a]);
            bytes_.append(bytes_, offsets_[b], offsets_[b + 1] - offsets_[b]);
            offsets_.push_back(bytes_.size());
        }
        for (const auto& [text, id] : specials_.tokens()) bytes_ += text, offsets_.push_back(bytes_.size());
        for (const auto& token : unmade_) bytes_ += token.bytes, offsets_.push_back(bytes_.size());
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
    std::vector<uint32_t> made_;  // with ranked merges: the token each makes, by rank; else empty
    bool ignore_merges_ = false;
    bool plain_ = true;  // see plain()
    std::shared_ptr<CharMerges> char_merges_;  // see char_merges()
    std::vector<uint32_t> whole_;  // whole_token's table: our tokens by their bytes, kNoToken empty
    SpecialTokens specials_;
    std::vector<ModelOptions::UnmadeToken> unmade_;  // our tokens first_unmade_ on
    std::vector<uint32_t> whole_specials_;  // special tokens that are also unmade tokens
    std::vector<uint32_t> token_ids_;  // every token's id, the unmade ones' too; empty: token i is id i
    std::vector<uint32_t> given_token_ids_;  // token_ids as given, where unmade tokens make token_ids_ longer
    size_t n_vocab_ = 0;
    uint32_t first_special_ = 0;  // our number of the first special token
    uint32_t first_unmade_ = 0;  // our number of the first unmade token
    std::vector<uint32_t> dense_;  // id -> token, or kNoToken; empty when sparse_ is used
    std::vector<std::pair<uint32_t, uint32_t>> sparse_;  // (id, token), sorted by id
    std::string bytes_;  // every token's bytes, back to back
    std::vector<uint64_t> offsets_;  // token t's bytes are bytes_[offsets_[t], offsets_[t + 1])
};

}  // namespace bpe
