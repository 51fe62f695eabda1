// Encoding: turn text into token ids with merges already learned.
//
// Within a chunk, the pair of lowest rank (the earliest merge) is merged first, its
// leftmost occurrence first, until no neighbouring pair is a merge. That gives the
// same ids as the reference, which merges all occurrences of the lowest-rank pair at
// once: a merge made now creates pairs with the new token, whose merges were learned
// later, so they never jump ahead of the occurrences still waiting.
//
// Chunks repeat (" the", " a", "."), so each call keeps the chunks it has encoded,
// and the Encoder keeps a shared cache across calls (encode_cache.h: the tables, and
// the lock that lets Python threads encode at once). This file is the algorithm.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <queue>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "chunk_table.h"
#include "encode_cache.h"
#include "pair.h"
#include "parallel.h"
#include "special.h"
#include "split.h"

namespace bpe {

// The largest id a token may have: 2^24 - 1, far above any published vocabulary
// (GPT-4's largest is 100,276). Ids index tables, so an unchecked 2^31 would make
// a table of 2^31 entries.
inline constexpr uint32_t kMaxId = (1u << 24) - 1;
// The most bytes all tokens together may hold. Each merge joins two earlier tokens,
// so 40 merges of a token with itself would make a token of 2^40 bytes: a few
// lines of a file must not be able to ask for that much memory.
inline constexpr uint64_t kMaxVocabularyBytes = uint64_t(1) << 28;

class Encoder {
public:
    // Our numbering: ids 0-255 are the bytes, merge k makes token 256 + k, and the
    // special tokens follow the merges in the order given. encode returns those
    // numbers, or, when token_ids is given (one id for every token, in that order),
    // token_ids[i] for token i: GPT-2 and GPT-4 number their tokens their own way.
    //
    // Throws std::invalid_argument for merges that could not have been learned (merge
    // k may use only the bytes and the tokens of the merges before it, once each),
    // for token_ids of the wrong length, with an id repeated or above kMaxId, and for
    // merges whose tokens would hold more than kMaxVocabularyBytes.
    explicit Encoder(const std::vector<Pair>& merges, Pattern pattern = Pattern::kDefault,
                     const std::vector<std::string>& special_tokens = {},
                     std::optional<std::vector<uint32_t>> token_ids = std::nullopt)
        : ranks_(merges.size()), merges_(merges), pattern_(pattern) {
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
        find_whole_tokens(256 + merges.size());
    }

    size_t num_merges() const { return ranks_.size(); }
    Pattern pattern() const { return pattern_; }
    const SpecialTokens& specials() const { return specials_; }
    // One more than the largest id (tiktoken's n_vocab): the size a table indexed by
    // id needs. Larger than the number of tokens when the numbering has gaps.
    size_t n_vocab() const { return n_vocab_; }

    // The ids of `text` on `threads` threads. The specials that `allowed` holds become
    // their ids; the others are encoded as ordinary text.
    // `interrupt`, if given, hears of the work done every segment and may stop it.
    std::vector<uint32_t> encode(std::string_view text, const SpecialSet& allowed, unsigned threads = 1,
                                 Interrupt* interrupt = nullptr) const {
        std::vector<std::vector<uint32_t>> parts = encode_parts(text, allowed, threads, interrupt);
        if (parts.size() == 1) return std::move(parts[0]);
        std::vector<uint32_t> ids;
        size_t total = 0;
        for (auto& part : parts) total += part.size();
        ids.reserve(total);
        for (auto& part : parts) ids.insert(ids.end(), part.begin(), part.end());
        return ids;
    }

    // As encode, but the ids come as consecutive parts, one per thread, which joined
    // are the ids of the whole text: a caller that copies them somewhere anyway (into
    // a numpy array) can then copy each part on its own thread.
    std::vector<std::vector<uint32_t>> encode_parts(std::string_view text, const SpecialSet& allowed,
                                                    unsigned threads, Interrupt* interrupt = nullptr) const {
        std::vector<Segment> segments = specials_.segments(text, allowed);
        std::vector<std::vector<Segment>> runs = share_out(text, segments, threads);
        // Segments of at most about kPollBytes, so that the interrupt hears often enough.
        if (interrupt)
            for (auto& run : runs) run = cut_long_segments(text, run, Interrupt::kPollBytes);
        std::vector<std::vector<uint32_t>> parts(runs.size());
        run_threads(runs.size(), [&](size_t k) {
            // A vector of its own on each thread's stack: the vectors in `parts` sit side
            // by side, and a thread that moves its end pointer at every id would pull the
            // other's cache line away from under it (false sharing: two threads ran no
            // faster than one).
            std::vector<uint32_t> ids = std::move(parts[k]);
            encode_segments(text, runs[k], ids, interrupt);
            parts[k] = std::move(ids);
        });
        return parts;
    }

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

    // The ids of one chunk, with merges applied in rank order.
    void encode_chunk(std::string_view chunk, std::vector<uint32_t>& out) const {
        if (chunk.size() <= kShortChunk) encode_short(chunk, out);
        else if (chunk.size() < merges_.size() / kBucketsPayOff) encode_long(chunk, out);
        else encode_buckets(chunk, out);
    }

private:
    // Appends the ids of the segments of `text` to `out`.
    // If the interrupt stops it, the shared cache gains nothing: every chunk's ids are
    // either all there or not at all.
    void encode_segments(std::string_view text, const std::vector<Segment>& segments, std::vector<uint32_t>& out,
                         Interrupt* interrupt) const {
        // Chunks met in this call, keyed by views into `text`, so that a lookup needs
        // no lock and no copy. Chunks new to the shared cache join it at the end.
        IdsTable seen(std::min<size_t>(1024, text.size() / 4 + 16));
        RecentChunks recent(text.size());
        std::vector<ChunkKey> fresh;
        const char* text_end = text.data() + text.size();
        out.reserve(out.size() + expected_ids(segments));
        for (const Segment& segment : segments) {
            report(interrupt, segment.end - segment.begin);
            if (segment.special != Segment::kText) {
                out.push_back(segment.special);
                continue;
            }
            for_each_chunk(text.substr(segment.begin, segment.end - segment.begin), pattern_, [&](std::string_view chunk) {
                ChunkKey key(chunk, text_end);
                if (const uint32_t* id = recent.find(key)) {
                    out.push_back(*id);
                    return;
                }
                // A chunk missing here is new to this call, or pushed out of its slot:
                // the whole-token table is looked at unless `seen` has it, and being
                // megabytes it is mostly out of the caches, so its load starts now, to
                // overlap with the lookup in `seen`.
                whole_tokens_.prefetch(key);
                size_t start = out.size();
                if (!seen.append_to(key, out)) {
                    if (const uint32_t* id = whole_tokens_.find(key)) {
                        out.push_back(*id);
                    } else if (chunk.size() > kCachedChunk) {
                        encode_chunk(chunk, out);
                        renumber(out, start);
                    } else if (!cache_.append_to(key, out)) {
                        encode_chunk(chunk, out);
                        renumber(out, start);
                        fresh.push_back(key);
                    }
                    if (chunk.size() <= kSeenChunk) seen.insert(key, out.data() + start, out.size() - start);
                }
                if (out.size() == start + 1) recent.keep(key, out[start]);
            });
        }
        cache_.insert(fresh, seen);
    }

    // A token holds about 4 bytes of English and 2 of Python source under GPT-2's
    // vocabulary (more under larger ones): reserving an id per 2 bytes up front saves
    // the copy (and the page faults) of growing a large output, and costs only address
    // space where fewer are written, as pages are not touched until then.
    static size_t expected_ids(const std::vector<Segment>& segments) {
        size_t bytes = 0;
        for (const Segment& segment : segments) bytes += segment.end - segment.begin;
        return bytes / 2 + 16;
    }

    // Chunks up to this length are merged by scanning all pairs again after each
    // merge, which is quadratic but fastest for the handful of bytes a word has.
    // How many characters begin in text[at, end): the bytes that are not 10xxxxxx,
    // eight at a time while eight can be read. A token is a few bytes, and a loop over
    // them byte by byte mispredicted its end at every token (it cost as much as
    // encoding did). Little-endian: byte k of the text is bits 8k to 8k + 7.
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
            count += size_t(__builtin_popcountll(first));
        }
        if (at > end) at = end;
#endif
        for (; at < end; ++at) count += (static_cast<unsigned char>(text[at]) & 0xC0) != 0x80;
        return count;
    }

    static constexpr size_t kShortChunk = 32;
    // The shared cache keeps chunks up to this length, as a longer one rarely comes
    // back in another call; a call keeps longer ones, up to a size that cannot use
    // much memory (a 10 MB chunk is not kept).
    static constexpr size_t kCachedChunk = 64;
    static constexpr size_t kSeenChunk = 4096;

    static constexpr uint32_t kNoRank = PairTable::kMissing;
    uint32_t rank(uint32_t a, uint32_t b) const { return ranks_.get(a, b); }

    // Our token numbers, from out[start] on, turned into the caller's (token_ids). The
    // caches keep the caller's, so a chunk found there costs nothing more.
    void renumber(std::vector<uint32_t>& out, size_t start) const {
        if (token_ids_.empty()) return;
        for (size_t i = start; i < out.size(); ++i) out[i] = token_ids_[out[i]];
    }

    // The rank of each neighbouring pair is looked up once, and after a merge only the
    // two pairs the new token is part of are looked up again: the scan for the lowest
    // rank reads an array, where looking every pair up again after each merge cost a
    // hash lookup per pair per merge (most of the time of a chunk new to the caches).
    void encode_short(std::string_view chunk, std::vector<uint32_t>& out) const {
        uint32_t ids[kShortChunk], ranks[kShortChunk];  // ranks[i]: of the pair (ids[i], ids[i + 1])
        size_t n = chunk.size();
        for (size_t i = 0; i < n; ++i) ids[i] = static_cast<unsigned char>(chunk[i]);
        for (size_t i = 0; i + 1 < n; ++i) ranks[i] = rank(ids[i], ids[i + 1]);
        while (n > 1) {
            uint32_t best = kNoRank;
            size_t at = 0;
            for (size_t i = 0; i + 1 < n; ++i)
                if (ranks[i] < best) best = ranks[i], at = i;  // the leftmost of the lowest
            if (best == kNoRank) break;
            ids[at] = 256 + best;
            for (size_t i = at + 1; i + 1 < n; ++i) ids[i] = ids[i + 1];
            for (size_t i = at + 1; i + 2 < n; ++i) ranks[i] = ranks[i + 1];
            --n;
            if (at > 0) ranks[at - 1] = rank(ids[at - 1], ids[at]);
            if (at + 1 < n) ranks[at] = rank(ids[at], ids[at + 1]);
        }
        for (size_t i = 0; i < n; ++i) out.push_back(ids[i]);  // a handful: cheaper than insert's memmove
    }

    // The same merges in O(n log n): symbols in a linked list, and a heap of
    // (rank, position) for each neighbouring pair that is a merge. An entry goes
    // stale when either symbol of its pair has been merged since; the pair then at
    // that position has a different rank, or none.
    void encode_long(std::string_view chunk, std::vector<uint32_t>& out) const {
        if (chunk.size() >= size_t(INT32_MAX)) throw std::length_error("a chunk of 2 GB or more cannot be encoded");
        int32_t n = int32_t(chunk.size());
        std::vector<uint32_t> symbol(n);
        std::vector<int32_t> prev(n), next(n);
        for (int32_t i = 0; i < n; ++i) {
            symbol[i] = static_cast<unsigned char>(chunk[i]);
            prev[i] = i - 1;
            next[i] = i + 1 < n ? i + 1 : -1;
        }
        using Entry = std::pair<uint32_t, int32_t>;  // (rank, position): lowest first, then leftmost
        std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap;
        auto push = [&](int32_t p) {
            if (p < 0 || next[p] < 0) return;
            uint32_t r = rank(symbol[p], symbol[next[p]]);
            if (r != kNoRank) heap.push({r, p});
        };
        for (int32_t i = 0; i + 1 < n; ++i) push(i);
        while (!heap.empty()) {
            auto [r, p] = heap.top();
            heap.pop();
            int32_t q = next[p];
            if (symbol[p] == kDead || q < 0 || rank(symbol[p], symbol[q]) != r) continue;
            symbol[p] = 256 + r;
            symbol[q] = kDead;
            next[p] = next[q];
            if (next[q] >= 0) prev[next[q]] = p;
            push(prev[p]);
            push(p);
        }
        for (int32_t p = 0; p >= 0; p = next[p]) out.push_back(symbol[p]);
    }

    // The same merges in O(n + merges), in 12 bytes per byte of the chunk: a 200 MB
    // chunk must not need gigabytes. Two facts make a heap unnecessary:
    //   - A merge of rank r makes token 256 + r, and every merge that uses that token
    //     has a larger rank: merging never makes a pair of rank r or lower. So the ranks
    //     can be taken in increasing order, once each, each with a bucket of the
    //     positions where its pair now occurs.
    //   - Within one rank, occurrences of (a, b) with a != b never overlap, so the order
    //     in which they merge does not matter. For (a, a), the reference merges each run
    //     of a's from its left end, in pairs: so does this, from the run's first a.
    // A position is in at most one bucket, that of the pair starting there, and moves
    // when that pair changes (doubly linked lists, so that it moves in O(1)). Tokens
    // are found from their byte lengths: the next token starts len(token) further on,
    // and the last slot of a token of two or more bytes holds kLink | its start, so
    // the previous token's start is one slot back. So the chunk needs 4 bytes a byte
    // for its slots and 8 for the buckets, which are freed before the ids are written,
    // and 4 bytes a merge for the buckets' heads.
    // Setting up a bucket for every rank costs O(merges), which is why encode_chunk
    // takes this path only for chunks at least merges / kBucketsPayOff long.
    static constexpr size_t kBucketsPayOff = 4;
    static constexpr uint32_t kLink = 0x80000000;  // ids stay below 2^24, positions below 2^31 - 1

    void encode_buckets(std::string_view chunk, std::vector<uint32_t>& out) const {
        if (chunk.size() >= size_t(INT32_MAX)) throw std::length_error("a chunk of 2 GB or more cannot be encoded");
        const int32_t n = int32_t(chunk.size());
        // slot[p]: the id of the token starting at p; kLink | start in the last slot of a
        // longer token; kDead where a token that was merged into its left one started.
        std::vector<uint32_t> slot(n);
        for (int32_t i = 0; i < n; ++i) slot[i] = static_cast<unsigned char>(chunk[i]);
        auto next_start = [&](int32_t p) -> int32_t {
            int64_t after = int64_t(p) + int64_t(offsets_[slot[p] + 1] - offsets_[slot[p]]);
            return after < n ? int32_t(after) : -1;
        };
        auto prev_start = [&](int32_t p) -> int32_t {
            if (p == 0) return -1;
            uint32_t before = slot[p - 1];
            return (before & kLink) ? int32_t(before & ~kLink) : p - 1;
        };
        {
            // The buckets: head[r] is the first position of rank r's bucket (or -1);
            // later[p] and earlier[p] link p to its neighbours in its bucket, and
            // earlier[p] is -1 - r where p comes first in bucket r, kUnlisted where p is
            // in none.
            constexpr int32_t kUnlisted = INT32_MIN;
            std::vector<int32_t> head(merges_.size(), -1), later(n), earlier(n, kUnlisted);
            auto unlist = [&](int32_t p) {
                int32_t e = earlier[p], l = later[p];
                if (e == kUnlisted) return;
                if (e >= 0) later[e] = l;
                else head[size_t(-1 - int64_t(e))] = l;
                if (l >= 0) earlier[l] = e;
                earlier[p] = kUnlisted;
            };
            auto list = [&](int32_t p) {  // into the bucket of the pair starting at p, if a merge
                int32_t q = next_start(p);
                if (q < 0) return;
                uint32_t r = rank(slot[p], slot[q]);
                if (r == kNoRank) return;
                int32_t first = head[r];
                later[p] = first;
                earlier[p] = -1 - int32_t(r);
                if (first >= 0) earlier[first] = p;
                head[r] = p;
            };
            // Merges the tokens at p and q (the next one) into 256 + r.
            auto merge_at = [&](int32_t p, int32_t q, uint32_t r) {
                int32_t left = prev_start(p);
                unlist(p), unlist(q);
                if (left >= 0) unlist(left);
                int64_t last = int64_t(q) + int64_t(offsets_[slot[q] + 1] - offsets_[slot[q]]) - 1;
                slot[q] = kDead;
                slot[p] = 256 + r;
                slot[last] = kLink | uint32_t(p);
                if (left >= 0) list(left);
                list(p);
            };
            for (int32_t i = n - 2; i >= 0; --i) list(i);
            for (uint32_t r = 0; r < merges_.size(); ++r) {
                const uint32_t a = merges_[r].first;
                const bool run = a == merges_[r].second;
                while (head[r] >= 0) {
                    int32_t p = head[r];
                    if (!run) {
                        merge_at(p, next_start(p), r);
                        continue;
                    }
                    for (int32_t s = prev_start(p); s >= 0 && slot[s] == a; s = prev_start(s)) p = s;
                    for (int32_t q = next_start(p); q >= 0 && slot[p] == a && slot[q] == a; q = next_start(p)) {
                        merge_at(p, q, r);
                        p = next_start(p);
                        if (p < 0) break;
                    }
                }
            }
        }
        for (int32_t p = 0; p >= 0; p = next_start(p)) out.push_back(slot[p]);
    }

    // --- the numbering, and each token's bytes, for decoding -----------------------

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

    // The tokens whose own bytes merge back into the token itself, by their bytes: a
    // chunk equal to one of them is that one token, found with one lookup instead of
    // merging it (under GPT-2's and GPT-4's vocabularies most chunks are one token).
    // Each token is checked by merging its bytes, not assumed: two merges can make the
    // same bytes, and a token's bytes can merge, in rank order, into other tokens.
    // The table keeps the caller's ids (token_ids).
    void find_whole_tokens(size_t ordinary_tokens) {
        std::vector<uint32_t> ids;
        const char* end = bytes_.data() + bytes_.size();
        whole_tokens_ = ShortChunkMap(ordinary_tokens);
        for (uint32_t t = 0; t < ordinary_tokens; ++t) {
            std::string_view bytes(bytes_.data() + offsets_[t], offsets_[t + 1] - offsets_[t]);
            if (bytes.size() > kCachedChunk) continue;
            ids.clear();
            encode_chunk(bytes, ids);
            if (ids.size() == 1 && ids[0] == t) whole_tokens_.insert(ChunkKey(bytes, end), id_of(t));
        }
    }

    static constexpr uint32_t kNoToken = UINT32_MAX;
    PairTable ranks_;
    std::vector<Pair> merges_;  // by rank
    Pattern pattern_;
    SpecialTokens specials_;
    std::vector<uint32_t> token_ids_;  // empty: token i is id i
    size_t n_vocab_ = 0;
    uint32_t first_special_ = 0;  // our number of the first special token
    std::vector<uint32_t> dense_;  // id -> token, or kNoToken; empty when sparse_ is used
    std::vector<std::pair<uint32_t, uint32_t>> sparse_;  // (id, token), sorted by id
    std::string bytes_;  // every token's bytes, back to back
    std::vector<uint64_t> offsets_;  // token t's bytes are bytes_[offsets_[t], offsets_[t + 1])
    ShortChunkMap whole_tokens_;  // keys longer than 16 bytes are views into bytes_
    mutable SharedCache cache_;
};

}  // namespace bpe
