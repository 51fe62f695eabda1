// Encoding: turn text into token ids with merges already learned.
//
// Within a chunk, the pair of lowest rank (the earliest merge) is merged first, its
// leftmost occurrence first, until no neighbouring pair is a merge. That gives the
// same ids as the reference, which merges all occurrences of the lowest-rank pair at
// once: a merge made now creates pairs with the new token, whose merges were learned
// later, so they never jump ahead of the occurrences still waiting.
//
// A text is encoded a segment at a time (special tokens, and the text between them:
// special.h), and a segment a chunk at a time (split.h). Chunks repeat (" the", " a",
// "."), so a chunk is merged only when the Encoder's table lacks it: one table, kept
// across calls and shared by threads (encoder_table.h). This file is the algorithm: the
// merge of one chunk, then the chunk loop. What it merges with, the
// vocabulary (ranks, numbering, token bytes, decoding), is vocabulary.h.
#pragma once

#include <algorithm>
#include <cstring>
#include <cstdint>
#include <memory>
#include <optional>
#include <queue>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <unordered_set>
#include <vector>

#include "encoder_table.h"
#include "ids.h"
#include "interrupt.h"
#include "pair.h"
#include "parallel.h"
#include "pretokenizer.h"
#include "special.h"
#include "split.h"
#include "vocabulary.h"

// Kept out of the loop that calls it, so that the loop stays small (the rare path).
#if defined(__GNUC__) || defined(__clang__)
#define BPE_RARE [[gnu::noinline]]
#else
#define BPE_RARE
#endif

namespace bpe {

// --- the merge of one chunk ----------------------------------------------------------
//
// Three ways to the same ids, by the chunk's length: a scan of every pair for a word,
// a heap for a longer chunk, and buckets by rank for a chunk so long that a bucket
// per merge pays off. Ranked merges (several merges a token, a merge before its parts:
// ModelOptions) take two: the same scan, and a tree of minima (encode_ranked_long).
// The ids are in our numbering (vocabulary.h).

// Chunks up to this length are merged by scanning all pairs again after each merge,
// which is quadratic but fastest for the handful of bytes a word has.
inline constexpr size_t kShortChunk = 32;

// The merges of a chunk of at most kShortChunk bytes, as the rule says: the pair of
// lowest rank, the leftmost of equals, until no pair is a merge. The rank of each
// neighbouring pair is looked up once (the first round, of bytes, from the dense
// table), and after a merge only the two pairs the new token is part of are looked up
// again. The lowest is found as the minimum of (rank << 5 | position), the leftmost of
// equal ranks being the smaller: a loop without a branch, which the compiler
// vectorises (docs/design-notes.md). Ranks are below 2^24, so a real pair's packed value
// is below 2^29 and kNoRank's is above.
// kRanked: with ranked merges (Vocabulary::ranked), where the merge of rank r makes
// made(r) rather than 256 + r: the rule and the loop are the same.
template <bool kRanked>
inline void encode_short(const Vocabulary& vocabulary, std::string_view chunk, Ids& out) {
    static_assert(kShortChunk <= 32, "positions are packed in 5 bits");
    uint32_t ids[kShortChunk], ranks[kShortChunk];  // ranks[i]: of the pair (ids[i], ids[i + 1])
    const auto* bytes = reinterpret_cast<const unsigned char*>(chunk.data());
    size_t n = chunk.size();
    for (size_t i = 0; i < n; ++i) ids[i] = bytes[i];
    for (size_t i = 0; i + 1 < n; ++i) ranks[i] = vocabulary.byte_pair_rank(bytes[i], bytes[i + 1]);
    while (n > 1) {
        uint32_t lowest = UINT32_MAX;
        for (uint32_t i = 0; i + 1 < n; ++i) lowest = std::min(lowest, ranks[i] << 5 | i);
        if (lowest >= uint32_t(1) << 29) break;  // no pair is a merge
        const uint32_t best = lowest >> 5;
        const size_t at = lowest & 31;
        ids[at] = kRanked ? vocabulary.made(best) : 256 + best;
        for (size_t i = at + 1; i + 1 < n; ++i) ids[i] = ids[i + 1];
        for (size_t i = at + 1; i + 2 < n; ++i) ranks[i] = ranks[i + 1];
        --n;
        if (at > 0) ranks[at - 1] = vocabulary.rank(ids[at - 1], ids[at]);
        if (at + 1 < n) ranks[at] = vocabulary.rank(ids[at], ids[at + 1]);
    }
    for (size_t i = 0; i < n; ++i) out.push_back(ids[i]);  // a loop, not insert (docs/design-notes.md)
}

// The same merges in O(n log n): symbols in a linked list, and a heap of
// (rank, position) for each neighbouring pair that is a merge. An entry goes
// stale when either symbol of its pair has been merged since; the pair then at
// that position has a different rank, or none.
inline void encode_long(const Vocabulary& vocabulary, std::string_view chunk, Ids& out) {
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
        uint32_t r = vocabulary.rank(symbol[p], symbol[next[p]]);
        if (r != Vocabulary::kNoRank) heap.push({r, p});
    };
    for (int32_t i = 0; i + 1 < n; ++i) push(i);
    while (!heap.empty()) {
        auto [r, p] = heap.top();
        heap.pop();
        int32_t q = next[p];
        if (symbol[p] == kDead || q < 0 || vocabulary.rank(symbol[p], symbol[q]) != r) continue;
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
inline constexpr size_t kBucketsPayOff = 4;
inline constexpr uint32_t kLink = 0x80000000;  // ids stay below 2^24, positions below 2^31 - 1

inline void encode_buckets(const Vocabulary& vocabulary, std::string_view chunk, Ids& out) {
    if (chunk.size() >= size_t(INT32_MAX)) throw std::length_error("a chunk of 2 GB or more cannot be encoded");
    const int32_t n = int32_t(chunk.size());
    const std::vector<Pair>& merges = vocabulary.merges();  // by rank
    // slot[p]: the id of the token starting at p; kLink | start in the last slot of a
    // longer token; kDead where a token that was merged into its left one started.
    std::vector<uint32_t> slot(n);
    for (int32_t i = 0; i < n; ++i) slot[i] = static_cast<unsigned char>(chunk[i]);
    auto next_start = [&](int32_t p) -> int32_t {
        int64_t after = int64_t(p) + int64_t(vocabulary.token_size(slot[p]));
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
        std::vector<int32_t> head(merges.size(), -1), later(n), earlier(n, kUnlisted);
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
            uint32_t r = vocabulary.rank(slot[p], slot[q]);
            if (r == Vocabulary::kNoRank) return;
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
            int64_t last = int64_t(q) + int64_t(vocabulary.token_size(slot[q])) - 1;
            slot[q] = kDead;
            slot[p] = 256 + r;
            slot[last] = kLink | uint32_t(p);
            if (left >= 0) list(left);
            list(p);
        };
        for (int32_t i = n - 2; i >= 0; --i) list(i);
        for (uint32_t r = 0; r < merges.size(); ++r) {
            const uint32_t a = merges[r].first;
            const bool run = a == merges[r].second;
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

// Ranked merges (Vocabulary::ranked) for a chunk longer than kShortChunk, in
// O(n log n) and 8 bytes per byte of the chunk. Neither fact that lets encode_buckets
// take the ranks in order holds for them: a merge may make a pair of lower rank (its
// token is a part of an earlier merge), and then that pair merges before the other
// occurrences of the first, leftmost first. So the lowest pair is looked for after
// every merge, as the rule says, in a tree of minima: rank_at[p] is the rank of the
// pair starting at p (kNoRank where none does), each block of kRankBlock positions has
// its minimum at the foot of a binary tree whose nodes hold their children's, and the
// leftmost lowest pair is found by going down from the root, always to the left child
// if it holds the minimum, then scanning that block. After a merge three positions
// change (its two tokens' and the one before), and each updates its block and the
// nodes above. Tokens are found from their byte lengths, as in encode_buckets.
inline constexpr size_t kRankBlock = 32;

inline void encode_ranked_long(const Vocabulary& vocabulary, std::string_view chunk, Ids& out) {
    if (chunk.size() >= size_t(INT32_MAX)) throw std::length_error("a chunk of 2 GB or more cannot be encoded");
    constexpr uint32_t kNoRank = Vocabulary::kNoRank;
    const int32_t n = int32_t(chunk.size());
    const auto* bytes = reinterpret_cast<const unsigned char*>(chunk.data());
    std::vector<uint32_t> slot(n);  // as encode_buckets's
    for (int32_t i = 0; i < n; ++i) slot[i] = bytes[i];
    auto next_start = [&](int32_t p) -> int32_t {
        int64_t after = int64_t(p) + int64_t(vocabulary.token_size(slot[p]));
        return after < n ? int32_t(after) : -1;
    };
    auto prev_start = [&](int32_t p) -> int32_t {
        if (p == 0) return -1;
        uint32_t before = slot[p - 1];
        return (before & kLink) ? int32_t(before & ~kLink) : p - 1;
    };
    {
        std::vector<uint32_t> rank_at(n, kNoRank);
        for (int32_t i = 0; i + 1 < n; ++i) rank_at[i] = vocabulary.byte_pair_rank(bytes[i], bytes[i + 1]);
        const size_t blocks = (size_t(n) + kRankBlock - 1) / kRankBlock;
        size_t leaves = 1;
        while (leaves < blocks) leaves *= 2;
        std::vector<uint32_t> tree(2 * leaves, kNoRank);  // node i's children: 2i, 2i + 1; block b: leaves + b
        auto block_min = [&](size_t b) {
            uint32_t m = kNoRank;
            const size_t end = std::min(size_t(n), (b + 1) * kRankBlock);
            for (size_t p = b * kRankBlock; p < end; ++p) m = std::min(m, rank_at[p]);
            return m;
        };
        for (size_t b = 0; b < blocks; ++b) tree[leaves + b] = block_min(b);
        for (size_t i = leaves - 1; i >= 1; --i) tree[i] = std::min(tree[2 * i], tree[2 * i + 1]);
        auto refresh = [&](size_t b) {
            size_t i = leaves + b;
            tree[i] = block_min(b);
            for (i /= 2; i >= 1; i /= 2) {
                uint32_t m = std::min(tree[2 * i], tree[2 * i + 1]);
                if (tree[i] == m) break;  // the nodes above hold what they held
                tree[i] = m;
            }
        };
        auto pair_rank = [&](int32_t p) {
            int32_t q = next_start(p);
            return q < 0 ? kNoRank : vocabulary.rank(slot[p], slot[q]);
        };
        while (tree[1] != kNoRank) {
            const uint32_t r = tree[1];
            size_t i = 1;
            while (i < leaves) i = tree[2 * i] == r ? 2 * i : 2 * i + 1;
            const size_t b = i - leaves;
            int32_t p = int32_t(b * kRankBlock);
            while (rank_at[p] != r) ++p;
            const int32_t q = next_start(p), left = prev_start(p);
            const int64_t last = int64_t(q) + int64_t(vocabulary.token_size(slot[q])) - 1;
            slot[q] = kDead;
            slot[p] = vocabulary.made(r);
            slot[last] = kLink | uint32_t(p);
            rank_at[q] = kNoRank;
            rank_at[p] = pair_rank(p);
            if (left >= 0) rank_at[left] = pair_rank(left);
            refresh(b);
            if (size_t(q) / kRankBlock != b) refresh(size_t(q) / kRankBlock);
            if (left >= 0 && size_t(left) / kRankBlock != b) refresh(size_t(left) / kRankBlock);
        }
    }
    for (int32_t p = 0; p >= 0; p = next_start(p)) out.push_back(slot[p]);
}

// A chunk under ranked merges, ignore_merges or char_merges (ModelOptions), out of line, so that the
// plain path below is one test more than it was.
BPE_RARE inline void encode_chunk_with_options(const Vocabulary& vocabulary, std::string_view chunk, Ids& out) {
    if (vocabulary.ignore_merges()) {
        uint32_t whole = vocabulary.whole_token(chunk);
        if (whole != Vocabulary::kNoToken) {
            out.push_back(whole);
            return;
        }
    }
    if (const CharMerges* chars = vocabulary.char_merges()) return chars->encode(chunk, out);
    if (!vocabulary.ranked()) {
        if (chunk.size() <= kShortChunk) encode_short<false>(vocabulary, chunk, out);
        else if (chunk.size() < vocabulary.num_merges() / kBucketsPayOff) encode_long(vocabulary, chunk, out);
        else encode_buckets(vocabulary, chunk, out);
    } else if (chunk.size() <= kShortChunk) {
        encode_short<true>(vocabulary, chunk, out);
    } else {
        encode_ranked_long(vocabulary, chunk, out);
    }
}

// The ids of one chunk: its own token, under ignore_merges, when it is one; else the
// merges applied in rank order, by the loop for its length.
inline void encode_chunk(const Vocabulary& vocabulary, std::string_view chunk, Ids& out) {
    if (!vocabulary.plain()) return encode_chunk_with_options(vocabulary, chunk, out);
    if (chunk.size() <= kShortChunk) encode_short<false>(vocabulary, chunk, out);
    else if (chunk.size() < vocabulary.num_merges() / kBucketsPayOff) encode_long(vocabulary, chunk, out);
    else encode_buckets(vocabulary, chunk, out);
}

// --- a text: segments, chunks, the table ---------------------------------------------

class Encoder {
public:
    // The vocabulary's merges, special tokens and numbering (Vocabulary says what it
    // refuses), and the split rule. The table starts with the tokens that are whole
    // chunks.
    // With `rules` (a tokenizer.json's: pretokenizer.h), those split the text and the
    // added tokens are matched in it, not the special tokens, which are then only ids.
    explicit Encoder(const std::vector<Pair>& merges, SplitRule pattern = Pattern::kDefault,
                     const std::vector<std::string>& special_tokens = {},
                     std::optional<std::vector<uint32_t>> token_ids = std::nullopt,
                     std::optional<Rules> rules = std::nullopt, const ModelOptions& options = {})
        : vocabulary_(merges, special_tokens, std::move(token_ids), options), pattern_(std::move(pattern)),
          table_(256 + merges.size()) {
        if (rules) {
            RuleState state(std::move(*rules));
            const CharMerges* chars = vocabulary_.char_merges();
            // (Not under ignore_merges: a piece that is a token is that token, whatever its words.)
            state.cut_words = state.rules.steps.empty() && chars && chars->cuts_words() && !vocabulary_.ignore_merges();
            const std::optional<bool> prefix = state.rules.normalizer.spaces_escaped_only();
            // The normalized added tokens found in the text as given must be where they are
            // in the normalized text: none holds a space or "▁", or strips or asks for a word.
            bool tokens_as_given = true;
            for (const AddedToken& token : state.rules.added.tokens())
                if (token.normalized && (token.content.find(' ') != std::string::npos ||
                                         token.content.find(normalizer_detail::kSpaceSymbol) != std::string::npos ||
                                         token.lstrip || token.rstrip || token.single_word))
                    tokens_as_given = false;
            state.space_words = state.cut_words && prefix && chars->cuts_every_word() && !state.rules.metaspace &&
                                !state.rules.add_prefix_space && tokens_as_given;
            state.space_prefix = state.space_words && *prefix;
            // The normalizer leaves no space as one, so a space can be read as "▁" in every chunk.
            if (state.space_words) vocabulary_.read_space_as_meta();
            rules_ = std::make_shared<const RuleState>(std::move(state));
        }
        const bool space_words = rules_ && rules_->space_words;
        // Seeds of up to kPoolShareAbove bytes: a longer token is kept when first met,
        // and merging each long token here would slow the build of a vocabulary of many.
        // On threads by the rule for a text of the tokens' bytes: a vocabulary of 150,000
        // tokens has a megabyte of them.
        vocabulary_.find_whole_tokens(
            EncoderTable::kPoolShareAbove,
            [this](std::string_view bytes, Ids& ids) { encode_chunk(vocabulary_, bytes, ids); },
            threads_for(vocabulary_.total_bytes(), 0),
            [](size_t parts, auto&& work) { run_threads(parts, work); },
            [this, space_words](std::string_view bytes, uint32_t id) {
                table_.insert(chunk_id(bytes, bytes.data() + bytes.size()), bytes, &id, 1);
                // Under space words, also as a text gives it: its "▁"s as spaces.
                if (space_words && bytes.find(normalizer_detail::kSpaceSymbol) != std::string_view::npos) {
                    std::string given;
                    for (size_t k = 0; k < bytes.size();) {
                        const bool meta = bytes.substr(k, 3) == normalizer_detail::kSpaceSymbol;
                        given += meta ? ' ' : bytes[k];
                        k += meta ? 3 : 1;
                    }
                    table_.insert(chunk_id(given, given.data() + given.size()), given, &id, 1);
                }
            });
    }

private:
    // The chunk loop, in blocks and two stages, so that the table's lines for a block
    // are on their way while the block before is emitted. The splitter hands over a
    // block at a time, the ends of its chunks (split.h's for_each_chunk_run), and:
    //   1. for the block, in a loop of its own: each chunk's key and bucket, and a
    //      prefetch of that;
    //   2. for the block before: probe, and on a hit store the entry's three inline ids
    //      and move on by its count. Anything else (more ids, a long chunk, a chunk not
    //      in the table) goes out of line to `rare`, which merges and inserts.
    // The ids are written through a pointer into `out`, which is kept at least kRoom
    // ids longer than what is written (the stores of three ids write four), and cut to
    // length at the end.
    static constexpr size_t kBlock = simd::kEndsRoom;  // the most chunks a block has
    static constexpr size_t kRoom = 4 * kBlock + 4;

    struct Pending {
        std::string_view chunk;
        ChunkId key;
    };

    // Appends the ids of the segments of `text` to `out`, a special token's id or the
    // ids of each chunk of the text between them. If the interrupt stops it, every chunk
    // in the table has all its ids: a chunk is inserted whole, or not at all.
    void encode_segments(std::string_view text, const std::vector<Segment>& segments, Ids& out,
                         Interrupt* interrupt, std::vector<size_t>* ends = nullptr) const {
        encode_segments_as<Chunking::kByRule>(text, segments, out, interrupt, pattern_, ends);
    }

    // A segment that ends a document of a batch (encode_many): it gives no id, and where
    // the ids so far end (their count in `out`) goes to `ends`.
    static constexpr uint32_t kDocumentEnd = Segment::kText - 1;

    // How a text segment becomes chunks: split by a rule; one chunk already, as the
    // rules' pre-tokenizer gives them; cut into space words (below); or cut into the
    // words of a char_merges vocabulary (CharMerges::word_end) as they are merged.
    enum class Chunking { kByRule, kWhole, kSpaceWords, kCutWords };

    // Space words: where the rules' normalizer only writes each space as "▁" (and maybe
    // puts one first: Normalizer::spaces_escaped_only) and the vocabulary cuts before
    // every "▁" that follows another character (CharMerges::cuts_every_word), a text's
    // chunks are found in it as given, with no normalized copy: each is a run of "▁"s
    // (spaces, or "▁" as written) and the characters up to the next one, a space read
    // as "▁" when merged (CharMerges::read_space_as_meta), and the table keys it by its
    // bytes as given. With the prefix, a segment's first word gets its "▁" put first.
    //
    // A text item under space words that follows a normalized added token inside its
    // text segment: no "▁" put first (the segment's first item has it, even where empty).
    static constexpr uint32_t kTextAfterToken = Segment::kText - 2;
    static_assert(kMaxId < kTextAfterToken, "an id is never a marker");

    // The end of the space word that begins at i in s[0, n).
    static size_t space_word_end(const char* s, size_t n, size_t i) {
        const auto* p = reinterpret_cast<const unsigned char*>(s);
        auto meta_at = [&](size_t k) { return k + 3 <= n && p[k] == 0xE2 && p[k + 1] == 0x96 && p[k + 2] == 0x81; };
        while (i < n) {
            if (p[i] == ' ') ++i;
            else if (meta_at(i)) i += 3;
            else break;
        }
        // The word's own characters, up to a space or a "▁". Scripts written without
        // spaces make words of dozens of bytes: 16 bytes at a time, where SSE2 is, finds
        // the bytes that may end one (' ', and 0xE2 that may begin a "▁"): two compares,
        // where split_bytes.h's FewBytes16 makes four (docs/design-notes.md).
#if defined(BPE_SSE2)
        const __m128i space = _mm_set1_epi8(' '), meta = _mm_set1_epi8(char(0xE2));
        while (i + 16 <= n) {
            const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
            uint32_t stops = uint32_t(_mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, space), _mm_cmpeq_epi8(v, meta))));
            for (; stops != 0; stops &= stops - 1) {
                const size_t k = i + count_trailing_zeros(stops);
                if (p[k] == ' ' || meta_at(k)) return k;
            }
            i += 16;
        }
#endif
        while (i < n && p[i] != ' ' && !(p[i] == 0xE2 && meta_at(i))) ++i;
        return i;
    }

    // encode_segments' work, each text segment made chunks as `kChunks` says (by `rule`
    // for kByRule); a kDocumentEnd segment's place goes to `ends`.
    template <Chunking kChunks>
    void encode_segments_as(std::string_view text, const std::vector<Segment>& segments, Ids& out,
                            Interrupt* interrupt, const SplitRule& rule, std::vector<size_t>* ends = nullptr) const {
        const char* text_end = text.data() + text.size();
        size_t pos = out.size();
        const size_t expected = expected_ids(segments);
        out.reserve(pos + expected);
        // Room grows by at least `step` ids at a time, and never by more than this call
        // is likely to need, so within what was reserved for it: the ids are not moved
        // as it grows (and Ids leaves the room unwritten: growing costs a few stores).
        const size_t step = std::max<size_t>(kRoom, std::min<size_t>(expected, size_t(1) << 14));
        make_room(out, pos, step);
        // Two blocks: one keyed as the splitter hands it over while the one before waits,
        // its lines on their way, to be probed after. So every chunk's line has a block's
        // time to come, not only the chunks early in their block.
        KeyBlock<kBlock> blocks[2];
        KeyBlock<kBlock>* filling = &blocks[0];
        KeyBlock<kBlock>* waiting = nullptr;  // a block keyed, not yet probed
        size_t waiting_count = 0;
        Ids scratch;  // allocates on the first chunk that needs it
        EncoderTable::Reader reader = table_.reader();
        static const bool wide_keys = simd::avx512_in_use();  // KeyBlock::set_run's
        auto probe = [&](const KeyBlock<kBlock>& block, size_t chunks) {
            const EncoderTable::Reader r = reader;
            uint32_t* at = out.data() + pos;
            const uint32_t* limit = out.data() + out.size();  // at least kRoom past `at`
            for (size_t k = 0; k < chunks; ++k) {
                const EncoderTable::Entry* e = r.find(block.key(k));
                if (e != nullptr) {
                    const uint32_t count = e->count;
                    if (count <= EncoderTable::kInline) {
                        std::memcpy(at, e->ids, 16);  // three ids and the count, which the next overwrites
                        at += count;
                        continue;
                    }
                    // A short chunk of more ids (a run of spaces that indents source code):
                    // copied from the pool when they fit in the room there is (copy_rest
                    // writes up to kCopyPiece ids more).
                    if (!(count & EncoderTable::kLong) &&
                        at + count + EncoderTable::kCopyPiece + 4 * (chunks - k) <= limit) {
                        table_.copy_rest(*e, at);
                        at += count;
                        continue;
                    }
                }
                pos = size_t(at - out.data());
                rare(Pending{block.chunk(k), block.key(k)}, e, out, pos, scratch, step);
                at = out.data() + pos;
                limit = out.data() + out.size();
            }
            pos = size_t(at - out.data());
            make_room(out, pos, step);
            reader = table_.reader();  // a table published meanwhile
        };
        // A document's end (kDocumentEnd) is noted once the block that holds its last
        // chunks is probed, and does not probe that block at once: a batch's small
        // documents, a block or so each, then keep the block's wait for its lines.
        size_t ends_waiting = 0;  // the documents that end with the waiting block
        auto probe_waiting = [&] {
            if (waiting) probe(*waiting, waiting_count);
            for (; ends_waiting > 0; --ends_waiting) ends->push_back(pos);
        };
        auto flush = [&] {
            probe_waiting();
            waiting = nullptr;
        };
        // The block just filled (`count` chunks) waits while the one that waited is probed.
        auto pass_block = [&](size_t count) {
            probe_waiting();
            waiting = filling;
            waiting_count = count;
            filling = filling == &blocks[0] ? &blocks[1] : &blocks[0];
        };
        // A chunk into the block being filled: its key and its bucket on the way. 16 bytes
        // are read at a chunk's start only inside the text. A chunk longer than a short key
        // gets its own key (a hash of all its bytes), as in KeyBlock::set_run, so that its
        // bucket is on the way too: the words of a script of several bytes a character
        // are often that long.
        auto fill = [&](size_t k, const char* at, size_t n) {
            const std::string_view chunk(at, n);
            filling->set(k, at, n,
                         at + 16 <= text_end && n <= kShortKey ? short_chunk_id(at, n) : chunk_id(chunk, text_end));
            prefetch(reader.bucket(filling->hash[k]));
        };
        // A special token's id, or a document's end, after the ids of the chunks before it.
        auto put_special = [&](uint32_t id) {
            if (id == kDocumentEnd) {
                if (waiting) ++ends_waiting;
                else ends->push_back(pos);
                return;
            }
            flush();
            make_room(out, pos, step);  // flush made none when no block waited
            out[pos++] = id;
        };
        // An interrupt, or a chunk too long to merge, throws: `out` then ends at the last
        // whole chunk, not in the room made past it.
        try {
            if constexpr (kChunks == Chunking::kSpaceWords) {
                const bool prefix = rules_->space_prefix;
                std::string prefixed;
                for (const Segment& segment : segments) {
                    if (segment.special != Segment::kText && segment.special != kTextAfterToken) {
                        put_special(segment.special);
                        continue;
                    }
                    const char* base = text.data() + segment.begin;
                    const size_t size = segment.end - segment.begin;
                    size_t first = 0;
                    if (prefix && segment.special == Segment::kText) {
                        first = space_word_end(base, size, 0);
                        flush();
                        encode_prefixed(std::string_view(base, first), prefixed, out, pos, scratch, step);
                        reader = table_.reader();
                    }
                    while (first < size) {
                        size_t count = 0, bytes = 0;
                        for (; count < kBlock && first < size; ++count) {
                            const size_t end = space_word_end(base, size, first);
                            fill(count, base + first, end - first);
                            bytes += end - first;
                            first = end;
                        }
                        report(interrupt, bytes);
                        pass_block(count);
                    }
                }
                flush();
                out.resize(pos);
                return;
            }
            if constexpr (kChunks == Chunking::kCutWords) {
                const CharMerges& words = *vocabulary_.char_merges();
                for (const Segment& segment : segments) {
                    if (segment.special != Segment::kText) {
                        put_special(segment.special);
                        continue;
                    }
                    for (size_t first = segment.begin; first < segment.end;) {
                        const size_t block_begin = first;
                        size_t count = 0;
                        for (; count < kBlock && first < segment.end; ++count) {
                            const size_t end = words.word_end(text, first, segment.end);
                            fill(count, text.data() + first, end - first);
                            first = end;
                        }
                        report(interrupt, first - block_begin);
                        pass_block(count);
                    }
                }
                flush();
                out.resize(pos);
                return;
            }
            if constexpr (kChunks == Chunking::kWhole) {
                for (size_t s = 0; s < segments.size();) {
                    if (segments[s].special != Segment::kText) {
                        put_special(segments[s++].special);
                        continue;
                    }
                    size_t count = 0, bytes = 0;
                    for (; s < segments.size() && count < kBlock && segments[s].special == Segment::kText; ++s) {
                        const Segment& c = segments[s];
                        fill(count++, text.data() + c.begin, c.end - c.begin);
                        bytes += c.end - c.begin;
                    }
                    report(interrupt, bytes);
                    pass_block(count);
                }
                flush();
                out.resize(pos);
                return;
            }
            for (const Segment& segment : segments) {
                if (segment.special == kDocumentEnd) {
                    put_special(segment.special);
                    continue;
                }
                report(interrupt, segment.end - segment.begin);
                if (segment.special != Segment::kText) {
                    put_special(segment.special);
                    continue;
                }
                const std::string_view piece = text.substr(segment.begin, segment.end - segment.begin);
                // (__restrict: the stores to the block do not change `ends`, so each end is
                // read once.)
                for_each_chunk_run(piece, size_t(text_end - piece.data()), rule, [&](size_t first, const size_t* __restrict ends, size_t count) {
                    const char* base = piece.data();
                    // 16 bytes can be read at each chunk's start, but maybe not at the
                    // last chunk or two of the text: where a whole run's can, the run is
                    // keyed at once (eight chunks at a time in the AVX-512 tier), without
                    // fill's test per chunk.
                    if (base + ends[count - 1] + 16 <= text_end) {
                        filling->set_run(base, first, ends, count, wide_keys);
                        for (size_t k = 0; k < count; ++k) prefetch(reader.bucket(filling->hash[k]));
                    } else {
                        for (size_t k = 0; k < count; ++k) {
                            fill(k, base + first, ends[k] - first);
                            first = ends[k];
                        }
                    }
                    pass_block(count);
                });
            }
            flush();
        } catch (...) {
            out.resize(pos);
            throw;
        }
        out.resize(pos);
    }

    // The ids of a chunk the block loop could not emit from an entry's inline ids:
    // they go to out[pos...), and pos moves past them: from the table's pool where it
    // holds them, else merged in `scratch` and copied, so that `out` keeps its room. A
    // chunk too long to keep (it may be 200 MB) is merged straight into `out`, whose
    // room is then made anew.
    BPE_RARE void rare(const Pending& p, const EncoderTable::Entry* e, Ids& out, size_t& pos, Ids& scratch,
                       size_t step) const {
        if (p.chunk.size() > EncoderTable::kLongestChunk) {
            out.resize(pos);
            encode_chunk(vocabulary_, p.chunk, out);
            vocabulary_.renumber(out, pos);
            pos = out.size();
            make_room(out, pos, step);
            return;
        }
        size_t n = 0;
        const uint32_t* ids = e == nullptr ? nullptr : table_.rest(*e, p.chunk, n);
        if (ids == nullptr) {
            scratch.clear();
            encode_chunk(vocabulary_, p.chunk, scratch);
            vocabulary_.renumber(scratch, 0);
            table_.insert(p.key, p.chunk, scratch.data(), scratch.size());
            ids = scratch.data(), n = scratch.size();
        }
        make_room(out, pos + n, step);
        std::memcpy(out.data() + pos, ids, n * 4);
        pos += n;
    }

    // A segment's first space word with the "▁" put first (a space: space words key
    // chunks so), as rare() takes any chunk: `joined` holds it, as it is no span of the text.
    BPE_RARE void encode_prefixed(std::string_view word, std::string& joined, Ids& out, size_t& pos, Ids& scratch,
                                  size_t step) const {
        joined.assign(1, ' ');
        joined.append(word);
        const Pending p{joined, chunk_id(joined, joined.data() + joined.size())};
        const EncoderTable::Entry* e = table_.reader().find(p.key);
        if (e != nullptr && e->count <= EncoderTable::kInline) {
            make_room(out, pos, step);
            std::memcpy(out.data() + pos, e->ids, e->count * 4);
            pos += e->count;
            return;
        }
        rare(p, e, out, pos, scratch, step);
    }

    // Makes out at least `pos + kRoom` long, by at least `step` more when it grows, so
    // that the block loop asks for room once a block and grows it once every `step` ids.
    static void make_room(Ids& out, size_t pos, size_t step) {
        if (pos + kRoom <= out.size()) return;
        out.resize(pos + std::max(kRoom, step));
    }

    // An id per byte, reserved up front: a token holds a byte at least (a space read as
    // "▁" too; a "▁" the rules put first holds none, one a segment). So a text's ids
    // are not copied into a larger vector as they grow (byte fallback on a script that
    // a vocabulary barely covers gives an id per 2 bytes and more), and where fewer are
    // written (a token holds about 4 bytes of English) the rest costs only address
    // space, as pages are not touched until then.
    static size_t expected_ids(size_t bytes) { return bytes + 16; }
    static size_t expected_ids(const std::vector<Segment>& segments) {
        size_t bytes = 0;
        for (const Segment& segment : segments) bytes += segment.end - segment.begin;
        return expected_ids(bytes);
    }

public:
    // The ids of `text` on `threads` threads. The specials that `allowed` holds become
    // their ids; the others are encoded as ordinary text.
    // `interrupt`, if given, hears of the work done every segment and may stop it.
    Ids encode(std::string_view text, const SpecialSet& allowed, unsigned threads = 1,
               Interrupt* interrupt = nullptr) const {
        std::vector<Ids> parts = encode_parts(text, allowed, threads, interrupt);
        if (parts.size() == 1) return std::move(parts[0]);
        Ids ids;
        size_t total = 0;
        for (auto& part : parts) total += part.size();
        ids.reserve(total);
        for (auto& part : parts) ids.insert(ids.end(), part.begin(), part.end());
        return ids;
    }

    // As encode, but the ids come as consecutive parts, one per thread, which joined
    // are the ids of the whole text: a caller that copies them somewhere anyway (into
    // a numpy array) can then copy each part on its own thread.
    std::vector<Ids> encode_parts(std::string_view text, const SpecialSet& allowed, unsigned threads,
                                  Interrupt* interrupt = nullptr) const {
        if (rules_) return encode_parts_by_rules(text, allowed, threads, interrupt);
        const EncoderTable::Expecting expect = expecting(text.size());
        std::vector<std::vector<Segment>> runs = share_out(text, vocabulary_.specials().segments(text, allowed),
                                                           threads_for(text.size(), threads), pattern_);
        // Segments of at most about kPollBytes, so that the interrupt hears often enough.
        if (interrupt)
            for (auto& run : runs) run = cut_long_segments(text, run, Interrupt::kPollBytes, pattern_);
        std::vector<Ids> parts(runs.size());
        run_threads(runs.size(), [&](size_t k) {
            // A vector of its own on each thread's stack: the vectors in `parts` sit side
            // by side, and a thread that moves its end pointer at every id would pull the
            // other's cache line away from under it (false sharing; docs/design-notes.md).
            Ids ids = std::move(parts[k]);
            encode_segments(text, runs[k], ids, interrupt);
            parts[k] = std::move(ids);
        });
        return parts;
    }

    // What a call on a text of `bytes` tells the table while it runs: that it may bring
    // one new chunk a kBytesPerNewChunk bytes, if the text is kExpectAbove bytes or more
    // (EncoderTable::Expecting), so that a table that must grow grows once. Python
    // source brings a new tokenizer about one new chunk every 310 bytes (35 MB of it,
    // 112,000), stories far fewer; a table grown step by step under its writers' lock
    // left a second thread's new chunks out meanwhile (docs/design-notes.md).
    static constexpr size_t kExpectAbove = size_t(1) << 20;
    static constexpr size_t kBytesPerNewChunk = 320;
    EncoderTable::Expecting expecting(size_t bytes) const {
        return EncoderTable::Expecting(table_, bytes >= kExpectAbove ? bytes / kBytesPerNewChunk : 0);
    }

    // A text's segments in pieces that `threads` threads take one at a time
    // (PieceClaims): each long stretch of ordinary text cut about every piece_size bytes
    // (Interrupt::kPollBytes at most) where a chunk boundary is certain
    // (cut_long_segments; a regex leaves it whole), and consecutive segments put together
    // up to about that size. Piece p is segments[starts[p] .. starts[p + 1]), its bytes
    // consecutive in the text.
    struct TextPieces {
        std::vector<Segment> segments;
        std::vector<size_t> starts{0};
        size_t size() const { return starts.size() - 1; }
        size_t begin(size_t p) const { return segments[starts[p]].begin; }
        size_t end(size_t p) const { return segments[starts[p + 1] - 1].end; }
        // Claims on them for `threads` threads, shared by their bytes.
        PieceClaims claims(unsigned threads) const {
            return PieceClaims(size(), threads, [&](size_t p) { return end(p) - begin(p); });
        }
    };
    TextPieces pieces(std::string_view text, const SpecialSet& allowed, unsigned threads) const {
        const size_t size = piece_size(text.size(), threads, Interrupt::kPollBytes);
        TextPieces out;
        out.segments = cut_long_segments(text, vocabulary_.specials().segments(text, allowed), size, pattern_);
        const std::vector<Segment>& s = out.segments;
        for (size_t i = 0; i < s.size();) {
            size_t j = i, bytes = 0;
            do bytes += s[j].end - s[j].begin;
            while (++j < s.size() && bytes + (s[j].end - s[j].begin) <= size);
            out.starts.push_back(j);
            i = j;
        }
        return out;
    }

    // The ids of `text` handed over a piece at a time, for a caller that writes them
    // where they are wanted (a numpy array, a count) instead of into a vector as long as
    // the text's ids, whose fresh pages a long text would fault in call after call. The
    // text's pieces are shared between threads (`threads`: threads_for) by PieceClaims,
    // and take(k, p, ids) gets piece p's ids on thread k; each thread reuses one vector
    // for them piece after piece. Returns how many ids there were. With rules, a piece
    // is a thread's part (encode_parts_by_rules).
    template <class Take>
    size_t encode_pieces(std::string_view text, const SpecialSet& allowed, unsigned threads, Interrupt* interrupt,
                         Take&& take) const {
        if (rules_) {
            size_t total = 0;
            std::vector<Ids> parts = encode_parts_by_rules(text, allowed, threads, interrupt);
            for (size_t k = 0; k < parts.size(); ++k) take(k, k, parts[k]), total += parts[k].size();
            return total;
        }
        const unsigned n = threads_for(text.size(), threads);
        const TextPieces all = pieces(text, allowed, n);
        PieceClaims claims = all.claims(n);
        return encode_claimed(text, all, claims, interrupt, take);
    }

    // encode_pieces on pieces already cut and claims already made (a caller that places
    // each thread's output by its span first).
    template <class Take>
    size_t encode_claimed(std::string_view text, const TextPieces& all, PieceClaims& claims, Interrupt* interrupt,
                          Take&& take) const {
        const EncoderTable::Expecting expect = expecting(text.size());
        std::atomic<size_t> total{0};
        run_threads(claims.threads(), [&](size_t k) {
            Ids ids;
            std::vector<Segment> piece;
            size_t count = 0;
            for (size_t p; (p = claims.next(unsigned(k))) != PieceClaims::kNone;) {
                piece.assign(all.segments.begin() + all.starts[p], all.segments.begin() + all.starts[p + 1]);
                ids.clear();
                encode_segments(text, piece, ids, interrupt);
                take(k, p, ids);
                count += ids.size();
            }
            total += count;
        });
        return total;
    }

    // The ids of n documents, each encoded on its own as encode would, appended end to
    // end to `ids`, and after each document where its ids end in `ids` appended to
    // `ends`: a batch of small documents (a pipeline's stories or web pages) pays its
    // set-up once a group, not once a document. One thread: a caller shares a batch
    // between threads by its documents (share_batch).
    //
    // Documents are encoded a group of about kGroup bytes at a time: copied end to end
    // into one buffer, each cut into its own segments (no chunk crosses two), each
    // followed by a kDocumentEnd segment, where encode_segments notes how many ids there
    // are. One call then serves the group, its caches too (a word met in one story is
    // found in the next). A document of kGroup bytes or more is encoded where it is, alone.
    // A caller that calls it group after group (count_many) lends it `room`, the
    // buffers it copies a group into, so that each call does not map them afresh.
    static constexpr size_t kGroup = size_t(1) << 20;

    // A batch's texts lie apart in memory, each in its own Python object, where no
    // hardware prefetcher follows from one to the next: the bytes of the document kAhead
    // on are asked for while one is copied (its first kPrefetchBytes; a longer one's
    // are read in order, which the hardware follows).
    static constexpr size_t kAhead = 8;
    static constexpr size_t kPrefetchBytes = 1024;
    static void prefetch_document(std::string_view text) {
        const size_t bytes = std::min(text.size(), kPrefetchBytes);
        for (size_t b = 0; b < bytes; b += 64) prefetch(text.data() + b);
    }

    struct GroupRoom {
        std::string text;
        std::vector<Segment> segments;
    };
    void encode_many(const std::string_view* texts, size_t n, const SpecialSet& allowed, Ids& ids,
                     std::vector<size_t>& ends, Interrupt* interrupt = nullptr, GroupRoom* room = nullptr) const {
        size_t bytes = 0, grouped = 0;  // grouped: the bytes of the documents copied into a group below
        for (size_t i = 0; i < n; ++i) {
            bytes += texts[i].size();
            if (texts[i].size() < kGroup) grouped += texts[i].size();
        }
        if (rules_) {
            // As below, a group at a time: each document's items found on their own (its
            // added tokens and pieces are its own), its text (as the rules left it) put
            // after the group's, and its kDocumentEnd after its items.
            RulesWork work;
            std::string group;
            group.reserve(std::min(bytes, kGroup));  // as below (where the rules make a text longer, by doubling)
            std::vector<Segment> items;
            auto encode_group = [&] {
                encode_items(group, items, ids, interrupt, work.chunking, &ends);
                group.clear();
                items.clear();
            };
            for (size_t i = 0; i < n; ++i) {
                if (i + kAhead < n) prefetch_document(texts[i + kAhead]);
                prepare(texts[i], allowed, work, false);
                const std::string_view view = work.view(texts[i]);
                if (!items.empty() && group.size() + view.size() > kGroup) encode_group();
                const size_t base = group.size();
                group.append(view);
                for (const Segment& item : work.items) items.push_back({base + item.begin, base + item.end, item.special});
                items.push_back({group.size(), group.size(), kDocumentEnd});
            }
            if (!items.empty()) encode_group();
            return;
        }
        const bool any_allowed = std::find(allowed.begin(), allowed.end(), true) != allowed.end();
        const EncoderTable::Expecting expect = expecting(bytes);
        ids.reserve(ids.size() + expected_ids(bytes));  // as encode_segments reserves for one text
        ends.reserve(ends.size() + n);
        GroupRoom own;
        std::string& group = room ? room->text : own.text;
        std::vector<Segment>& segments = room ? room->segments : own.segments;
        group.clear();
        segments.clear();
        segments.reserve(std::min<size_t>(2 * n, kGroup / 64) + 2);
        // The group's room at once, not by doubling (a copy of what is in it each time).
        group.reserve(std::min(grouped, kGroup));
        bool long_segment = false;  // whether a segment may need cutting for the interrupt
        // A document's segments, at `base` in the text they are encoded in, and its end.
        auto add = [&](std::string_view text, size_t base) {
            long_segment |= text.size() > Interrupt::kPollBytes;
            if (any_allowed) {
                for (const Segment& s : vocabulary_.specials().segments(text, allowed))
                    segments.push_back({base + s.begin, base + s.end, s.special});
            } else if (!text.empty()) {
                segments.push_back({base, base + text.size(), Segment::kText});
            }
            segments.push_back({base + text.size(), base + text.size(), kDocumentEnd});
        };
        auto encode_marked = [&](std::string_view text) {
            // Segments of at most about kPollBytes, so that the interrupt hears often enough.
            if (interrupt && long_segment)
                segments = cut_long_segments(text, segments, Interrupt::kPollBytes, pattern_);
            // Room for the most ids there can be (a token holds a byte at least, and a mark
            // a document), grown by doubling: encode_segments's exact reserve, call after
            // call, would copy the batch's ids again and again.
            size_t most = ids.size() + text.size() + segments.size() + 16;
            if (ids.capacity() < most) ids.reserve(std::max(2 * ids.capacity(), most));
            encode_segments(text, segments, ids, interrupt, &ends);
            segments.clear();
            long_segment = false;
        };
        for (size_t i = 0; i < n; ++i) {
            if (i + kAhead < n) prefetch_document(texts[i + kAhead]);
            std::string_view text = texts[i];
            if (text.size() >= kGroup || group.size() + text.size() > kGroup) {
                if (!segments.empty()) encode_marked(group);
                group.clear();
            }
            if (text.size() >= kGroup) {
                add(text, 0);
                encode_marked(text);
            } else {
                add(text, group.size());
                group += text;
            }
        }
        if (!segments.empty()) encode_marked(group);
    }

    // How many ids each of n documents gives, into counts[0 .. n), as encode_many would
    // give them, with no more of their ids held at once than one group's: encode_many
    // is handed one group of documents at a time (lent the group's buffers, kept from
    // group to group), and a document of kGroup bytes or more is counted a piece at a
    // time (encode_pieces). One thread, as encode_many.
    void count_many(const std::string_view* texts, size_t n, const SpecialSet& allowed, int64_t* counts,
                    Interrupt* interrupt = nullptr) const {
        Ids ids;
        std::vector<size_t> ends;
        if (rules_) {
            RulesWork work;
            for (size_t i = 0; i < n; ++i) {
                ids.clear();
                encode_rules(texts[i], allowed, ids, interrupt, work);
                counts[i] = int64_t(ids.size());
            }
            return;
        }
        GroupRoom room;
        for (size_t i = 0; i < n;) {
            if (texts[i].size() >= kGroup) {
                counts[i] = int64_t(encode_pieces(texts[i], allowed, 1, interrupt, [](size_t, size_t, const Ids&) {}));
                ++i;
                continue;
            }
            // The documents encode_many would put in one group: up to kGroup bytes.
            size_t j = i, bytes = 0;
            do bytes += texts[j].size();
            while (++j < n && texts[j].size() < kGroup && bytes + texts[j].size() <= kGroup);
            ids.clear();
            ends.clear();
            encode_many(texts + i, j - i, allowed, ids, ends, interrupt, &room);
            size_t begin = 0;
            for (size_t k = 0; k < ends.size(); ++k) {
                counts[i + k] = int64_t(ends[k] - begin);
                begin = ends[k];
            }
            i = j;
        }
    }

    // What the bindings ask of the vocabulary (vocabulary.h).
    size_t num_merges() const { return vocabulary_.num_merges(); }
    const std::vector<Pair>& merges() const { return vocabulary_.merges(); }
    const std::vector<uint32_t>& token_ids() const { return vocabulary_.token_ids(); }  // empty: token i is id i
    const SplitRule& pattern() const { return pattern_; }
    // The special tokens a call may allow: with rules, the special added tokens.
    const SpecialTokens& specials() const { return rules_ ? rules_->specials : vocabulary_.specials(); }
    // A streaming decoder's step: how many of ids it may decode now (vocabulary.h).
    size_t settled_ids(const uint32_t* ids, size_t n) const {
        return rules_ && rules_->rules.decoder ? vocabulary_.settled_ids(*rules_->rules.decoder, ids, n) : n;
    }
    size_t n_vocab() const { return vocabulary_.n_vocab(); }
    size_t num_tokens() const { return vocabulary_.num_tokens(); }
    bool has_id(uint32_t id) const { return vocabulary_.has_id(id); }
    std::string_view token_bytes(uint32_t id) const { return vocabulary_.token_bytes(id); }
    // The ids' bytes joined; with the rules' decoder, the text it says (decoder.h), where
    // `start` says whether the ids begin the text.
    std::string decode(const uint32_t* ids, size_t n, bool skip_special = false, bool start = true) const {
        if (rules_ && rules_->rules.decoder)
            return vocabulary_.decode(*rules_->rules.decoder, ids, n, skip_special, start);
        return vocabulary_.decode(ids, n, skip_special);
    }
    void char_spans(std::string_view text, const Ids& ids, int64_t* spans) const {
        vocabulary_.char_spans(text, ids, spans);
    }

    // --- the rules' path (a tokenizer.json's: pretokenizer.h) ------------------------
    //
    // A text goes through Hugging Face's steps: the added tokens that are not normalized
    // are found in it as given; each text between them is made NFC (when the rules say
    // so and it is not already); the normalized added tokens are found in that; each text
    // piece is pre-tokenized, a space put before each piece that reaches ByteLevel
    // without one (add_prefix_space); and each chunk is merged through the table as any
    // other. Where nothing changes the text, the chunks are spans of the text itself;
    // else of a work buffer that holds the text as changed (and, for offsets, where each
    // of its bytes came from).
    struct RuleState {
        Rules rules;
        SpecialTokens specials;                // the special added tokens, in order: what allowed_special names
        std::vector<size_t> special_of;        // an added token's place in `specials` (special ones only)
        bool one_named_split = false;          // the steps are one named rule's chunks (split.h's loop)
        bool cut_words = false;                // no steps, and pieces cut into words (CharMerges::for_each_word)
        bool space_words = false;              // texts cut into space words as given (encode_segments_as)
        bool space_prefix = false;             // and a "▁" put before each text segment's first
        bool any_raw = false, any_normalized = false;  // added tokens matched before and after NFC

        explicit RuleState(Rules r) : rules(std::move(r)) {
            std::vector<std::pair<std::string, uint32_t>> special;
            const auto& tokens = rules.added.tokens();
            special_of.assign(tokens.size(), SIZE_MAX);
            for (size_t k = 0; k < tokens.size(); ++k) {
                if (tokens[k].special) {
                    special_of[k] = special.size();
                    special.emplace_back(tokens[k].content, tokens[k].id);
                }
                (tokens[k].normalized ? any_normalized : any_raw) = true;
            }
            specials = SpecialTokens(std::move(special));
            // (Not where ByteLevel's space comes after a Split of the user's: it must go
            // before each of that split's chunks, so the split runs here first.)
            fuse_deepseek(rules.steps);
            one_named_split = is_one_named_split(rules.steps) && (!rules.add_prefix_space || rules.use_regex);
            // A normalized token is looked for in the normalized text as Hugging Face's
            // normalizer makes it itself (its name, for allowed_special, stays as given):
            // under a Prepend of "▁", "<y>" is "▁<y>". Two spellings of one normalized form
            // are one content there: the first token given matches it, as in Hugging Face's
            // matcher, and the later ones only keep their ids (for decode). sentencepiece's
            // own step (a .model's) leaves its user-defined pieces as they are.
            if (any_normalized && !rules.normalizer.empty() &&
                !rules.normalizer.has(NormalizerStep::Kind::kSentencePiece)) {
                std::vector<AddedToken> matched;
                std::vector<size_t> matched_special_of;
                std::unordered_set<std::string> normalized_seen;
                std::string normalized;
                for (size_t k = 0; k < tokens.size(); ++k) {
                    AddedToken token = tokens[k];
                    if (token.normalized) {
                        if (!rules.normalizer.unchanged(token.content)) {
                            rules.normalizer.run(token.content, normalized, nullptr);
                            token.content = normalized;
                        }
                        // (Made empty, it matches nothing.)
                        if (token.content.empty() || !normalized_seen.insert(token.content).second) continue;
                    }
                    matched.push_back(std::move(token));
                    matched_special_of.push_back(special_of[k]);
                }
                rules.added = AddedTokens(std::move(matched));
                special_of = std::move(matched_special_of);
            }
        }
        // The steps run before ByteLevel's space is put in (each piece then split by the
        // rest): all but ByteLevel's own split; none where the one step is a named rule's,
        // which the chunk loop runs on the pieces as they are.
        size_t steps_before_prefix() const {
            if (one_named_split) return 0;
            return rules.add_prefix_space && rules.use_regex ? rules.steps.size() - 1 : rules.steps.size();
        }
    };

    // What one text's way through the rules leaves, reused text after text.
    struct RulesWork {
        std::vector<Segment> raw, normalized, items;  // items: text to chunk as `chunking` says, added tokens
        std::vector<Span> spans, chunks;
        std::string buffer, normalized_text;
        std::vector<uint32_t> normalized_origin;
        std::vector<uint32_t> origin;  // with offsets: the text byte each buffer byte's character starts at
        PreTokenizer pre;
        bool copied = false;  // whether items are spans of `buffer` (else of the text)
        Chunking chunking = Chunking::kWhole;  // how text items become chunks (encode_items)
        std::string_view view(std::string_view text) const { return copied ? std::string_view(buffer) : text; }
    };

    // The text's items under the rules into work.items, as spans of work.view(text).
    // with_origin: always through the buffer, with work.origin.
    void prepare(std::string_view text, const SpecialSet& allowed, RulesWork& work, bool with_origin) const {
        const RuleState& st = *rules_;
        const Rules& rules = st.rules;
        auto allow = [&](size_t k) { return st.special_of[k] < allowed.size() && allowed[st.special_of[k]]; };
        // Words are cut as they are merged, but each is an item of its own where its
        // bytes' origins are kept (offsets).
        work.chunking = st.space_words && !with_origin ? Chunking::kSpaceWords
                        : st.one_named_split            ? Chunking::kByRule
                        : st.cut_words && !with_origin  ? Chunking::kCutWords
                                                        : Chunking::kWhole;
        if (work.chunking == Chunking::kSpaceWords) {
            // The text segments as they are, for encode_segments_as to cut. The normalized
            // added tokens hold no space and no "▁" (RuleState), so they are where they
            // would be in the normalized text; the "▁" put first goes before what is first
            // in a raw segment, where that is a token too.
            work.copied = false;
            work.items.clear();
            work.raw.clear();
            if (st.any_raw) rules.added.segments(text, false, allow, work.raw);
            else if (!text.empty()) work.raw.push_back({0, text.size(), Segment::kText});
            for (const Segment& seg : work.raw) {
                if (seg.special != Segment::kText || !st.any_normalized) {
                    work.items.push_back(seg);
                    continue;
                }
                work.normalized.clear();
                rules.added.segments(text.substr(seg.begin, seg.end - seg.begin), true, allow, work.normalized);
                if (st.space_prefix && work.normalized.front().special != Segment::kText)
                    work.items.push_back({seg.begin, seg.begin, Segment::kText});
                for (const Segment& piece : work.normalized) {
                    const bool after_token = piece.special == Segment::kText && piece.begin > 0;
                    work.items.push_back(
                        {seg.begin + piece.begin, seg.begin + piece.end, after_token ? kTextAfterToken : piece.special});
                }
            }
            return;
        }
        work.pre.start_text(text.size());
        work.raw.clear();
        if (st.any_raw) rules.added.segments(text, false, allow, work.raw);
        else if (!text.empty()) work.raw.push_back({0, text.size(), Segment::kText});
        // Copied when a space is put in, or the normalizer changes a text segment.
        bool copy = with_origin || rules.add_prefix_space || rules.metaspace;
        if (!copy && !rules.normalizer.empty())
            for (const Segment& s : work.raw)
                if (s.special == Segment::kText && !rules.normalizer.unchanged(text.substr(s.begin, s.end - s.begin))) {
                    copy = true;
                    break;
                }
        work.copied = copy;
        work.items.clear();
        // Words of about 5 bytes each: room for them at once, not by doubling.
        if (st.cut_words && work.chunking == Chunking::kWhole) work.items.reserve(text.size() / 4 + 16);
        work.buffer.clear();
        work.origin.clear();
        const size_t before = st.steps_before_prefix();
        const SplitStep* steps = rules.steps.data();
        // The words of in[b, e), as items `base` on: the piece whole (cut as it is merged),
        // or, with offsets, each word an item.
        auto add_words = [&](std::string_view in, size_t b, size_t e, size_t base) {
            if (work.chunking == Chunking::kCutWords) {
                if (e > b) work.items.push_back({base + b, base + e, Segment::kText});
                return;
            }
            vocabulary_.char_merges()->for_each_word(
                in, b, e, [&](size_t wb, size_t we) { work.items.push_back({base + wb, base + we, Segment::kText}); });
        };
        // Appends bytes to the buffer, each from the character at origin(k) in the text.
        auto append = [&](std::string_view bytes, auto origin) {
            if (with_origin)
                for (size_t k = 0; k < bytes.size(); ++k) work.origin.push_back(origin(k));
            work.buffer.append(bytes);
        };
        for (const Segment& seg : work.raw) {
            const std::string_view raw = text.substr(seg.begin, seg.end - seg.begin);
            if (seg.special != Segment::kText) {
                if (copy) {
                    const size_t at = work.buffer.size();
                    append(raw, [&](size_t k) { return uint32_t(seg.begin + k); });
                    work.items.push_back({at, work.buffer.size(), seg.special});
                } else {
                    work.items.push_back(seg);
                }
                continue;
            }
            // The segment as normalized, and where each of its bytes came from.
            std::string_view norm = raw;
            bool changed = false;
            if (!rules.normalizer.empty() && !rules.normalizer.unchanged(raw)) {
                // Metaspace asks where a piece began in the text (prepend_scheme "first"), so
                // its origins are kept then too.
                rules.normalizer.run(raw, work.normalized_text,
                                     with_origin || rules.metaspace ? &work.normalized_origin : nullptr);
                norm = work.normalized_text;
                changed = true;
            }
            auto norm_origin = [&](size_t k) -> uint32_t {
                if (changed) return uint32_t(seg.begin + work.normalized_origin[k]);
                while (k > 0 && (static_cast<unsigned char>(raw[k]) & 0xC0) == 0x80) --k;
                return uint32_t(seg.begin + k);
            };
            work.normalized.clear();
            if (st.any_normalized) rules.added.segments(norm, true, allow, work.normalized);
            else if (!norm.empty()) work.normalized.push_back({0, norm.size(), Segment::kText});
            for (const Segment& piece : work.normalized) {
                if (piece.special != Segment::kText) {
                    if (copy) {
                        const size_t at = work.buffer.size();
                        append(norm.substr(piece.begin, piece.end - piece.begin),
                               [&](size_t k) { return norm_origin(piece.begin + k); });
                        work.items.push_back({at, work.buffer.size(), piece.special});
                    } else {
                        work.items.push_back({seg.begin + piece.begin, seg.begin + piece.end, piece.special});
                    }
                    continue;
                }
                if (!copy) {
                    // The text itself: each piece's chunks, spans of it.
                    const size_t base = seg.begin;
                    if (st.one_named_split) {
                        work.items.push_back({base + piece.begin, base + piece.end, Segment::kText});
                        continue;
                    }
                    if (st.cut_words) {
                        add_words(norm, piece.begin, piece.end, base);
                        continue;
                    }
                    work.chunks.clear();
                    work.pre.split(norm, {piece.begin, piece.end}, steps, steps + rules.steps.size(), work.chunks);
                    for (const Span& c : work.chunks) work.items.push_back({base + c.begin, base + c.end, Segment::kText});
                    continue;
                }
                if (rules.metaspace) {
                    add_metaspace_piece(norm, piece, norm_origin, work, with_origin);
                    continue;
                }
                // Into the buffer: the pieces before ByteLevel, each with its space, then
                // ByteLevel's split of each (or the named rule's, by the chunk loop later).
                work.spans.clear();
                work.pre.split(norm, {piece.begin, piece.end}, steps, steps + before, work.spans);
                for (const Span& sp : work.spans) {
                    const size_t at = work.buffer.size();
                    if (rules.add_prefix_space && norm[sp.begin] != ' ')
                        append(" ", [&](size_t) { return norm_origin(sp.begin); });
                    append(norm.substr(sp.begin, sp.end - sp.begin), [&](size_t k) { return norm_origin(sp.begin + k); });
                    const size_t end = work.buffer.size();
                    if (st.cut_words) {
                        add_words(work.buffer, at, end, 0);
                        continue;
                    }
                    if (st.one_named_split || before == rules.steps.size()) {
                        work.items.push_back({at, end, Segment::kText});
                        continue;
                    }
                    work.chunks.clear();
                    work.pre.split(work.buffer, {at, end}, steps + before, steps + rules.steps.size(), work.chunks);
                    for (const Span& c : work.chunks) work.items.push_back({c.begin, c.end, Segment::kText});
                }
            }
        }
        if (with_origin) work.origin.push_back(uint32_t(text.size()));
    }

    // A text piece under Metaspace (pretokenizer.h) into the buffer, and its chunks into
    // the items: each space the replacement (its bytes from the space), the replacement
    // put first where the scheme says (from the piece's first character), and the piece
    // cut before each replacement with `split`; else whole, or into words where the
    // vocabulary allows (cut_words).
    template <class Origin>
    void add_metaspace_piece(std::string_view norm, const Segment& piece, Origin&& norm_origin, RulesWork& work,
                             bool with_origin) const {
        const Metaspace& meta = *rules_->rules.metaspace;
        const std::string_view text = norm.substr(piece.begin, piece.end - piece.begin);
        if (text.empty()) return;
        const std::string_view rep = meta.replacement;
        auto put = [&](std::string_view bytes, size_t from) {
            work.buffer.append(bytes);
            if (with_origin) work.origin.insert(work.origin.end(), bytes.size(), norm_origin(from));
        };
        const size_t at = work.buffer.size();
        const bool starts = text.front() == ' ' || text.substr(0, rep.size()) == rep;
        const bool first = norm_origin(piece.begin) == 0;
        const bool prepend = meta.prepend == Metaspace::Prepend::kAlways ||
                             (meta.prepend == Metaspace::Prepend::kFirst && first);
        if (!starts && prepend) put(rep, piece.begin);
        for (size_t k = 0; k < text.size();) {
            const size_t space = text.find(' ', k);
            const size_t to = space == std::string_view::npos ? text.size() : space;
            work.buffer.append(text.substr(k, to - k));
            if (with_origin)
                for (size_t b = k; b < to; ++b) work.origin.push_back(norm_origin(piece.begin + b));
            if (space == std::string_view::npos) break;
            put(rep, piece.begin + space);
            k = space + 1;
        }
        const size_t end = work.buffer.size();
        if (!meta.split) {
            if (rules_->cut_words) {
                vocabulary_.char_merges()->for_each_word(
                    work.buffer, at, end, [&](size_t b, size_t e) { work.items.push_back({b, e, Segment::kText}); });
                return;
            }
            work.items.push_back({at, end, Segment::kText});
            return;
        }
        const std::string_view buffer = work.buffer;
        size_t from = at;
        for (size_t k = buffer.find(rep, at + 1); k != std::string_view::npos && k + rep.size() <= end;
             k = buffer.find(rep, k + rep.size())) {
            work.items.push_back({from, k, Segment::kText});
            from = k;
        }
        if (end > from) work.items.push_back({from, end, Segment::kText});
    }

    // The ids of items that prepare() left, their text made chunks as `chunking` says
    // (RulesWork::chunking): by the one named rule's chunk loop for kByRule.
    void encode_items(std::string_view view, const std::vector<Segment>& items, Ids& out,
                      Interrupt* interrupt, Chunking chunking, std::vector<size_t>* ends = nullptr) const {
        switch (chunking) {
            case Chunking::kSpaceWords:
                return encode_segments_as<Chunking::kSpaceWords>(view, items, out, interrupt, pattern_, ends);
            case Chunking::kByRule:
                return encode_segments_as<Chunking::kByRule>(view, items, out, interrupt, rules_->rules.steps[0].rule,
                                                             ends);
            case Chunking::kCutWords:
                return encode_segments_as<Chunking::kCutWords>(view, items, out, interrupt, pattern_, ends);
            case Chunking::kWhole:
                return encode_segments_as<Chunking::kWhole>(view, items, out, interrupt, pattern_, ends);
        }
    }

    // Space words' items shared out in n runs of about equal bytes, a text item cut where
    // both sides keep their space words, at a space after a character that is neither a
    // space nor "▁" (a word begins there): with the prefix, that space left out (the "▁"
    // put before the second side's first word is the one it stood for); without, before it.
    static std::vector<std::vector<Segment>> share_space_words(std::string_view view, const std::vector<Segment>& items,
                                                               size_t n, bool prefix) {
        size_t total = 0;
        for (const Segment& item : items) total += item.end - item.begin;
        const size_t share = std::max<size_t>(total / n, 1);
        std::vector<std::vector<Segment>> runs(1);
        size_t filled = 0;
        auto word_starts = [&](size_t p, size_t begin) {
            return view[p] == ' ' && view[p - 1] != ' ' &&
                   !(p >= begin + 3 && view.substr(p - 3, 3) == normalizer_detail::kSpaceSymbol);
        };
        for (Segment item : items) {
            while ((item.special == Segment::kText || item.special == kTextAfterToken) && runs.size() < n &&
                   filled + (item.end - item.begin) > share * runs.size()) {
                const size_t due = share * runs.size();  // where this run should end, in bytes given out
                size_t p = item.begin + std::max<size_t>(due > filled ? due - filled : 0, 1);
                while (p + 1 < item.end && !word_starts(p, item.begin)) ++p;
                if (p + 1 >= item.end) break;
                runs.back().push_back({item.begin, p, item.special});
                const size_t next = prefix ? p + 1 : p;
                filled += next - item.begin;
                item = {next, item.end, Segment::kText};
                runs.emplace_back();
            }
            if (filled >= share * runs.size() && runs.size() < n) runs.emplace_back();
            runs.back().push_back(item);
            filled += item.end - item.begin;
        }
        return runs;
    }

    // The ids of a text under the rules in consecutive parts, one a thread: its items are
    // found on one thread, then shared out, each run merged on a thread of its own. Whole
    // chunks are shared as they are; a named rule's pieces are cut where that rule's
    // chunks break anyway (split.h's safe cuts), as plain text is.
    std::vector<Ids> encode_parts_by_rules(std::string_view text, const SpecialSet& allowed, unsigned threads,
                                           Interrupt* interrupt) const {
        RulesWork work;
        prepare(text, allowed, work, false);
        const std::string_view view = work.view(text);
        const size_t n = threads_for(view.size(), threads);
        std::vector<std::vector<Segment>> runs;
        const SplitRule& named = rules_->one_named_split ? rules_->rules.steps[0].rule : pattern_;
        if (n <= 1) {
            runs.push_back(std::move(work.items));
        } else if (work.chunking == Chunking::kSpaceWords) {
            runs = share_space_words(view, work.items, n, rules_->space_prefix);
        } else if (rules_->one_named_split) {
            runs = share_out(view, work.items, n, named);
        } else {
            // Chunks as they are; a piece of words cut at the first word's end past where
            // a run's share is full (a cut the words have there anyway).
            const size_t share = std::max<size_t>(view.size() / n, 1);
            runs.emplace_back();
            size_t filled = 0;
            for (Segment item : work.items) {
                while (work.chunking == Chunking::kCutWords && item.special == Segment::kText && runs.size() < n &&
                       filled + (item.end - item.begin) > share * runs.size()) {
                    size_t at = item.begin + (share * runs.size() - std::min(filled, share * runs.size()));
                    while (at > item.begin && (static_cast<unsigned char>(view[at]) & 0xC0) == 0x80) --at;
                    const size_t cut = vocabulary_.char_merges()->word_end(view, at, item.end);
                    if (cut >= item.end) break;
                    runs.back().push_back({item.begin, cut, Segment::kText});
                    filled += cut - item.begin;
                    item.begin = cut;
                    runs.emplace_back();
                }
                if (filled >= share * runs.size() && runs.size() < n && !runs.back().empty()) runs.emplace_back();
                runs.back().push_back(item);
                filled += item.end - item.begin;
            }
        }
        std::vector<Ids> parts(runs.size());
        run_threads(runs.size(), [&](size_t k) {
            Ids ids;  // its own, not beside the others' (false sharing)
            encode_items(view, runs[k], ids, interrupt, work.chunking);
            parts[k] = std::move(ids);
        });
        return parts;
    }

    void encode_rules(std::string_view text, const SpecialSet& allowed, Ids& out,
                      Interrupt* interrupt, RulesWork& work) const {
        prepare(text, allowed, work, false);
        encode_items(work.view(text), work.items, out, interrupt, work.chunking);
    }

public:
    // The longest text encode_with_char_spans takes: its byte positions are 32-bit.
    static constexpr size_t kMaxOffsetsTextBytes = UINT32_MAX;

    bool has_rules() const { return rules_ != nullptr; }
    const Rules* rules() const { return rules_ ? &rules_->rules : nullptr; }

    // The ids of `text` under the rules, and each one's character span in the text as
    // Hugging Face's Encoding.offsets gives it: a token's span runs from the character
    // its first byte came from to the end of the one its last byte came from (a space
    // put in comes from the character after it, a character NFC composed from its first,
    // one a charsmap made of several from all of them: normalizer.h), and with
    // trim_offsets the spaces at its ends are left out.
    Ids encode_with_char_spans(std::string_view text, const SpecialSet& allowed, std::vector<int64_t>& spans,
                               Interrupt* interrupt = nullptr) const {
        // Where a byte came from is kept in 32 bits (half the memory of 64 for the
        // texts offsets are asked for), so a text must end before 4 GiB.
        if (text.size() > kMaxOffsetsTextBytes)
            throw std::invalid_argument("offsets need a text under 4 GiB (" + std::to_string(kMaxOffsetsTextBytes + 1) +
                                        " bytes); this one has " + std::to_string(text.size()) + " bytes");
        RulesWork work;
        prepare(text, allowed, work, true);
        Ids ids;
        encode_items(work.buffer, work.items, ids, interrupt, work.chunking);
        // The character index of each text byte's character.
        std::vector<uint32_t> char_of(text.size() + 1);
        uint32_t chars = 0;
        for (size_t k = 0; k < text.size(); ++k) {
            if ((static_cast<unsigned char>(text[k]) & 0xC0) != 0x80) ++chars;
            char_of[k] = chars - 1;
        }
        char_of[text.size()] = chars;
        auto char_end = [&](size_t byte) { return int64_t(char_of[byte]) + 1; };
        spans.assign(2 * ids.size(), 0);
        const bool trim = rules_->rules.trim_offsets, prefix = rules_->rules.trim_prefix_space;
        size_t t = 0;
        std::vector<bool> blank;  // an added token's characters: whether each is trimmed
        const CharMerges* merges_chars = vocabulary_.char_merges();
        auto put = [&](size_t a, size_t b, std::string_view bytes, bool added) {
            int64_t start = char_of[work.origin[a]], end = char_end(work.origin[b - 1]);
            if (trim) {
                // ByteLevel's process_offsets: the characters at the token's ends that are
                // a space byte's letter (Ġ) or White_Space, in the token's value. A model
                // token's value is its bytes' letters, of which only a space's is one of
                // those; an added token's is the text it matched (what lstrip and rstrip
                // took included), as normalized.
                size_t lead = 0, trail = 0;
                if (added) {
                    blank.clear();
                    const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
                    for (size_t k = 0; k < bytes.size();) {
                        const nfc_detail::Decoded d = nfc_detail::decode(p + k, p + bytes.size());
                        blank.push_back(d.cp == 0x120 ||
                                        (d.cp < 0x110000 && (unicode::char_properties(d.cp) & unicode::kSpaceBit)));
                        k += d.len;
                    }
                    while (lead < blank.size() && blank[lead]) ++lead;
                    while (trail < blank.size() && blank[blank.size() - 1 - trail]) ++trail;
                } else {
                    while (lead < bytes.size() && bytes[lead] == ' ') ++lead;
                    while (trail < bytes.size() && bytes[bytes.size() - 1 - trail] == ' ') ++trail;
                }
                if (lead > 0 && (t == 0 || start == 0) && prefix && lead == 1) lead = 0;
                if (lead > 0) start = std::min(start + int64_t(lead), end);
                if (trail > 0 && end >= int64_t(trail)) end = std::max(end - int64_t(trail), start);
            }
            spans[2 * t] = start, spans[2 * t + 1] = end;
            ++t;
        };
        for (const Segment& item : work.items) {
            if (item.special != Segment::kText) {
                put(item.begin, item.end, std::string_view(work.buffer).substr(item.begin, item.end - item.begin), true);
                continue;
            }
            for (size_t at = item.begin; at < item.end;) {
                // Merging from characters: the unknown token spans the character(s) it
                // stands for, not its own text; without one, they are in no span.
                if (const size_t unknown = merges_chars ? merges_chars->unknown_bytes(work.buffer, at, item.end) : 0) {
                    if (merges_chars->unk_token() != CharMerges::kNone) {
                        if (t >= ids.size()) throw std::logic_error("encode_with_char_spans: the ids are not the items'");
                        put(at, at + unknown, std::string_view(work.buffer).substr(at, unknown), false);
                    }
                    at += unknown;
                    continue;
                }
                if (t >= ids.size()) throw std::logic_error("encode_with_char_spans: the ids are not the items'");
                const std::string_view bytes = vocabulary_.token_bytes(ids[t]);
                size_t end = std::min(item.end, at + std::max<size_t>(bytes.size(), 1));
                if (merges_chars && merges_chars->unk_token() == CharMerges::kNone) {
                    // Characters left out may lie inside a token (its neighbours merged
                    // across them): its span runs over them to its last byte.
                    end = at;
                    const auto* p = reinterpret_cast<const unsigned char*>(work.buffer.data());
                    for (size_t need = bytes.size(); need > 0 && end < item.end;) {
                        if (const size_t gap = merges_chars->unknown_bytes(work.buffer, end, item.end)) {
                            end += gap;
                            continue;
                        }
                        const size_t len = nfc_detail::decode(p + end, p + item.end).len;
                        need -= std::min(need, len);
                        end += len;
                    }
                    end = std::max(end, at + 1);
                }
                put(at, end, bytes, false);
                at = end;
            }
        }
        return ids;
    }

private:
    Vocabulary vocabulary_;
    SplitRule pattern_;
    mutable EncoderTable table_;  // encoder_table.h
    std::shared_ptr<const RuleState> rules_;  // null: the split rule and special tokens alone
};

}  // namespace bpe
