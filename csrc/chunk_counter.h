// Counting chunks for training: how often each distinct chunk occurs, counted text by
// text as texts stream in, so that memory grows with the distinct chunks and not with
// the corpus. No chunk crosses two texts, nor a special token, which are never counted.
//
// The first screen below is the count itself (ChunkCounter::add): the texts are cut at
// their special tokens and, where long, at certain chunk boundaries (is_safe_cut), into
// pieces; threads take the pieces in turn, each counting into tables of its own, and
// the tables are then added up, a share of the chunks (a shard) per thread. After it:
// counts as data (they leave and enter a counter as plain chunks and numbers, so that
// a corpus counted in parts adds up), then a memory budget that drops the rarest
// chunks, then the machinery. Training on the counts is train.h.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string_view>
#include <utility>
#include <vector>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "chunk_table.h"
#include "interrupt.h"
#include "parallel.h"
#include "special.h"
#include "split.h"

namespace bpe {

// What the counting threads freed, handed back to the system: glibc keeps it for reuse
// in each thread's arena, where what comes next (one trainer thread, a pruned counter)
// cannot reuse it.
inline void return_freed_memory() {
#ifdef __GLIBC__
    malloc_trim(0);
#endif
}

// Distinct chunks and how often each occurred, with the bytes of the chunks that are
// not in a text any more.
struct CountedChunks {
    ChunkTable<int64_t> counts{16};
    ByteArena bytes;
};

class ChunkCounter {
public:
    static constexpr size_t kShards = 64;

    ChunkCounter(SplitRule pattern, SpecialTokens specials)
        : pattern_(std::move(pattern)), specials_(std::move(specials)), shards_(kShards) {}

    // Counts the chunks of each text on `threads` threads, in pieces that the threads
    // take in turn (count_pieces).
    // Should memory run out, the error is thrown here, with the texts' counts added to
    // some shards and not to others. Then keeps to the memory budget, if there is one:
    // returns how many distinct chunks that dropped (see keep_to_budget).
    // `interrupt`, if given, hears of each piece counted and may stop the counting,
    // before the round's counts are added.
    uint64_t add(const std::vector<std::string_view>& texts, unsigned threads, Interrupt* interrupt = nullptr) {
        size_t total = 0;
        for (std::string_view text : texts) total += text.size();
        // Several pieces a thread, so that one slow piece does not hold up the rest.
        size_t share = std::max<size_t>(std::min(total / (size_t(threads) * 8), round_bytes() / threads), 1 << 16);
        if (interrupt) share = std::min(share, Interrupt::kPollBytes);
        std::vector<Piece> pieces;
        for (size_t t = 0; t < texts.size(); ++t)
            for (const Segment& s : cut_long_segments(texts[t], specials_.segments(texts[t], specials_.all()), share, pattern_))
                if (s.special == Segment::kText) pieces.push_back({t, s});
        std::vector<size_t> sizes;
        for (const Piece& piece : pieces) sizes.push_back(piece.size());
        return count_in_rounds(sizes, threads, [&](size_t i, PieceCounts& counts) {
            std::string_view text = texts[pieces[i].text];
            const Segment& s = pieces[i].segment;
            report(interrupt, s.end - s.begin);
            count_chunks(text.substr(s.begin, s.end - s.begin), text.data() + text.size(), counts);
        });
    }

    // Counts a text that the counting threads write as they count it, a piece each at a
    // time, into a buffer of their own: a str of wide characters made UTF-8 (_core.cpp),
    // whose UTF-8 is then never held whole, nor written out to memory and read back.
    // Piece i takes bytes[i] (or at most that: the rounds under a budget are made by
    // them), and none more than `room`; write(i, out) writes it at `out` and returns its
    // bytes, or a negative number to count nothing of it (the caller then refuses the
    // text). The pieces must be cut where a chunk boundary is certain (is_safe_cut) and
    // outside special tokens, so that they count as the whole text would. Keeps to the
    // budget, and returns what that dropped, as add does.
    template <class Write>
    uint64_t add_written(const std::vector<size_t>& bytes, size_t room, Write&& write, unsigned threads,
                         Interrupt* interrupt = nullptr) {
        std::vector<std::unique_ptr<char[]>> buffers(threads);  // not zeroed: written before read
        return count_in_rounds(bytes, threads, [&](size_t i, PieceCounts& counts) {
            std::unique_ptr<char[]>& buffer = buffers[counts.thread];
            if (!buffer) buffer.reset(new char[room]);
            int64_t written = write(i, buffer.get());
            if (written < 0) return;
            std::string_view text(buffer.get(), size_t(written));
            report(interrupt, text.size());
            size_t before[kShards];
            for (size_t s = 0; s < kShards; ++s) before[s] = counts.long_chunks[s].size();
            for (const Segment& s : specials_.segments(text, specials_.all()))
                if (s.special == Segment::kText) count_chunks(text.substr(s.begin, s.end - s.begin), text.data() + text.size(), counts);
            // The next piece overwrites the buffer: the long chunks new here move to
            // bytes the thread keeps until the round's counts are added up.
            for (size_t s = 0; s < kShards; ++s)
                counts.long_chunks[s].keep_keys_from(before[s], [&](std::string_view b) { return counts.kept.keep(b); });
        });
    }

    // Under a budget, the texts are counted in rounds of at most this many bytes: a
    // round's own tables (the threads' tables of short chunks, then their counts sorted
    // into shards: up to ~20 bytes a byte of text, when every word is new) come on top
    // of the counts.
    size_t round_bytes() const { return max_memory_ ? std::max<size_t>(max_memory_ / kRoundFraction, 1 << 16) : SIZE_MAX; }

    const SplitRule& pattern() const { return pattern_; }
    const SpecialTokens& specials() const { return specials_; }

    // How many distinct chunks have been counted.
    size_t size() const {
        size_t n = 0;
        for (const CountedChunks& shard : shards_) n += shard.counts.size();
        return n;
    }

    // Hands over the counts, leaving this counter used up: the trainer makes its own
    // arrays of them, and the tables would only hold memory that training needs.
    // A used-up counter refuses whatever would read its counts (training again,
    // counts(), merging it into another, pickling) until counting begins anew (add,
    // add_counts): it holds none, and training on it would give no merges, silently.
    std::vector<CountedChunks> take() {
        refuse_if_used_up();
        std::vector<CountedChunks> out(kShards);
        out.swap(shards_);
        std::vector<ShortChunkCounts>().swap(short_tables_);  // memory the trainer needs
        used_up_ = true;
        return out;
    }

    bool used_up() const { return used_up_; }

    void refuse_if_used_up() const {
        if (used_up_)
            throw std::invalid_argument(
                "this ChunkCounter was consumed: an earlier train() used its counts up (the trainer takes them "
                "over, so that they are not in memory twice). Count the text again in a new ChunkCounter, or keep "
                "its counts() from before training and train from those, to train again");
    }

    // ---- Counts as data --------------------------------------------------------------
    //
    // Training needs only the counts, and counts add up: a corpus counted in parts (on
    // other threads, processes or machines) and the parts' counts added together give
    // the counts of the whole, and so its merges. Counts leave a counter through
    // for_each and come in through add_counts, which keeps to the budget as add does.

    // Calls f(chunk, count) for each distinct chunk, shard by shard.
    template <class F>
    void for_each(F&& f) const {
        refuse_if_used_up();
        for (const CountedChunks& shard : shards_) shard.counts.for_each(f);
    }

    // Adds counts[k] to chunks[k], for each k (a chunk may come more than once), on
    // `threads` threads, a shard each at a time; then keeps to the budget, and returns
    // how many distinct chunks that dropped (see keep_to_budget). The chunks' bytes
    // need outlive the call only: the long ones new here are copied.
    // `interrupt`, if given, hears of the chunks as they are sorted into shards, and may
    // stop the call there, before any count is added.
    uint64_t add_counts(const std::vector<std::string_view>& chunks, const std::vector<int64_t>& counts,
                        unsigned threads, Interrupt* interrupt = nullptr) {
        used_up_ = false;  // counting begins anew
        std::vector<std::vector<size_t>> by_shard(kShards);
        std::vector<ChunkKey> keys;
        keys.reserve(chunks.size());
        size_t unreported = 0;
        for (std::string_view chunk : chunks) {
            keys.emplace_back(chunk, chunk.data() + chunk.size());
            by_shard[shard_of(keys.back().hash)].push_back(keys.size() - 1);
            // A chunk costs a look-up whatever its length: it counts as the bytes it
            // takes in counts()'s buffers (_core.cpp), its own, its offset's and its count's.
            unreported += chunk.size() + 2 * sizeof(int64_t);
            if (interrupt && unreported >= Interrupt::kPollBytes) interrupt->done(unreported), unreported = 0;
        }
        std::atomic<size_t> next_shard{0};
        run_threads(std::clamp<size_t>(threads, 1, kShards), [&](size_t) {
            for (size_t s = next_shard++; s < kShards; s = next_shard++) {
                if (by_shard[s].empty()) continue;
                ChunkTable<int64_t> table(by_shard[s].size());
                for (size_t k : by_shard[s]) table[keys[k]] += counts[k];
                CountedChunks& shard = shards_[s];
                shard.counts.add(std::move(table), [&](std::string_view bytes) { return shard.bytes.keep(bytes); });
            }
        });
        return keep_to_budget(threads);
    }

    // Adds the counts of another counter of the same rule, with no budget, using it up:
    // its tables as they are, if this one holds none; else chunk by chunk (add_counts).
    void take_counts(ChunkCounter&& other, unsigned threads) {
        if (size() == 0 && max_memory_ == 0) {
            shards_.swap(other.shards_);
            used_up_ = false;  // counting begins anew
            return;
        }
        std::vector<std::string_view> chunks;
        std::vector<int64_t> counts;
        other.for_each([&](std::string_view chunk, int64_t n) { chunks.push_back(chunk), counts.push_back(n); });
        add_counts(chunks, counts, threads);
    }

    // ---- A memory budget ------------------------------------------------------------
    //
    // Training is exact by default, and its memory follows the distinct chunks. Given a
    // budget (max_memory bytes, 0: none), the counter estimates after each add what
    // the whole run (counting and merging) would take at its peak, and past the
    // budget drops the rarest chunks: every chunk counted `threshold` times or fewer,
    // for the smallest threshold that brings the estimate down to kPruneTo of the
    // budget (headroom for the next texts, whose tables are not counted until they are
    // added). A chunk dropped and seen again starts counting from nothing, so the merges
    // may then differ from exact training; `pruned` says what was dropped. (Of the
    // chunks counted exactly `threshold` times, only as many go as the budget needs,
    // chosen by hash.)
    //
    // The estimate, from B (the bytes of the distinct chunks), C (their number) and T
    // (the count tables as allocated, with the bytes of chunks longer than 16), has
    // two peaks, and takes the larger:
    //   - laying the words out: the trainer's slots (4 bytes a byte and a gap a chunk)
    //     are filled while the counts are still there: T + 4 (B + C);
    //   - merging, once the counts are freed: the slots, the lists of positions (4
    //     bytes a pair, grown to twice that as new pairs are listed) and the table of
    //     pairs with their queue, which follow the positions: 20 B + 4 C.
    // docs/design-notes.md says how it compares with the peaks measured.
    static constexpr uint64_t kSlotBytes = 4;
    static constexpr uint64_t kTrainBytesPerByte = 20;
    static constexpr double kPruneTo = 0.5;

    struct Pruned {
        uint64_t chunks = 0;    // distinct chunks dropped, in all
        int64_t threshold = 0;  // the largest count of a chunk dropped
    };

    void set_max_memory(uint64_t bytes) { max_memory_ = bytes; }
    uint64_t max_memory() const { return max_memory_; }
    const Pruned& pruned() const { return pruned_; }

    // What was dropped elsewhere, for a counter made of others' counts (merged, or
    // loaded back): the chunks add up, the threshold is the larger.
    void note_pruned(const Pruned& other) {
        pruned_.chunks += other.chunks;
        pruned_.threshold = std::max(pruned_.threshold, other.threshold);
    }

    static double estimate(double tables, double bytes, double chunks) {
        return std::max(tables + kSlotBytes * (bytes + chunks), kTrainBytesPerByte * bytes + kSlotBytes * chunks);
    }

    // What training on the counts so far would take at its peak, in bytes (see above).
    uint64_t estimated_memory() const {
        uint64_t tables = 0, bytes = 0, chunks = 0;
        for (const CountedChunks& shard : shards_) {
            tables += shard.counts.memory() + shard.bytes.memory();
            bytes += shard.counts.key_bytes();
            chunks += shard.counts.size();
        }
        return uint64_t(estimate(double(tables), double(bytes), double(chunks)));
    }

    // Drops the rarest chunks if the estimate is past the budget; returns how many
    // distinct chunks were dropped now (0: none) and sets pruned().
    uint64_t keep_to_budget(unsigned threads) {
        if (max_memory_ == 0 || estimated_memory() <= max_memory_) return 0;
        Cut cut = cut_to(kPruneTo * double(max_memory_));
        std::atomic<uint64_t> dropped{0};
        std::atomic<size_t> next_shard{0};
        run_threads(std::clamp<size_t>(threads, 1, kShards), [&](size_t) {
            for (size_t s = next_shard++; s < kShards; s = next_shard++)
                dropped += drop_rare(shards_[s], cut.threshold, cut.part, prunings_);
        });
        ++prunings_;
        pruned_.chunks += dropped;
        pruned_.threshold = std::max(pruned_.threshold, cut.threshold);
        return_freed_memory();  // the old tables'
        return dropped;
    }

private:
    static size_t shard_of(uint64_t hash) { return hash >> 58; }  // ChunkTable picks slots by the low bits
    static_assert(kShards == 64, "shard_of takes 6 bits");

    // A round of at most this share of the budget (round_bytes). At 64, with the tables of
    // short chunks, tests/engine/test_memory.py's run under a budget of 60 MB peaked at 60-62 MB.
    static constexpr uint64_t kRoundFraction = 128;
    // The most a thread's emptied table of short chunks keeps for the next call.
    static constexpr size_t kKeptTableBytes = size_t(32) << 20;

    struct Piece {
        size_t text;
        Segment segment;
        size_t size() const { return segment.end - segment.begin; }
    };

    // The pieces in rounds: under a budget, each of at most round_bytes (by the sizes
    // given), kept to the budget before the next. count_piece(i, counts) counts piece i
    // into a counting thread's tables.
    template <class CountPiece>
    uint64_t count_in_rounds(const std::vector<size_t>& sizes, unsigned threads, CountPiece&& count_piece) {
        used_up_ = false;  // counting begins anew
        const size_t most = round_bytes();
        uint64_t dropped = 0;
        for (size_t first = 0, last = 0; first < sizes.size(); first = last) {
            size_t bytes = 0;
            while (last < sizes.size() && (last == first || bytes + sizes[last] <= most)) bytes += sizes[last++];
            count_pieces(first, last, threads, count_piece);
            dropped += keep_to_budget(threads);
        }
        return dropped;
    }

    // What a counting thread counts a piece into: its tables, and the bytes of long
    // chunks that must outlive the text they were found in (add_written).
    struct PieceCounts {
        size_t thread;
        ShortChunkCounts& short_chunks;
        std::vector<ChunkTable<int64_t>> long_chunks;
        ByteArena kept;
    };

    // Counts pieces [first, last) (count_piece, as the threads take them in turn) into
    // tables of each thread's own, then adds those to the counts kept so far, shard by
    // shard, on all threads.
    template <class CountPiece>
    void count_pieces(size_t first, size_t last, unsigned threads, CountPiece& count_piece) {
        size_t workers = std::clamp<size_t>(last - first, 1, threads);
        // By thread, then by shard: the long chunks' tables, and the short chunks' counts.
        std::vector<std::vector<ChunkTable<int64_t>>> long_counted(workers);
        std::vector<std::vector<std::vector<ShortCount>>> short_counted(workers);
        std::vector<ByteArena> kept(workers);  // until the long chunks' tables are added up
        if (short_tables_.size() < workers) short_tables_.resize(workers);
        std::atomic<size_t> next_piece{first};
        auto count = [&](size_t k) {
            PieceCounts counts{k, short_tables_[k], std::vector<ChunkTable<int64_t>>(kShards, ChunkTable<int64_t>(16)), {}};
            for (size_t i = next_piece++; i < last; i = next_piece++) count_piece(i, counts);
            ShortChunkCounts& short_chunks = counts.short_chunks;
            // The short chunks, sorted into the shards that the rest of the counter knows
            // them by (shard_of their ChunkKey), their keys made here, on all threads.
            std::vector<std::vector<ShortCount>> by_shard(kShards);
            for (std::vector<ShortCount>& shard : by_shard) shard.reserve(short_chunks.size() / kShards * 5 / 4);
            short_chunks.drain([&](std::string_view chunk, int64_t n) {
                ChunkKey key(chunk, chunk.data() + 16);  // the chunk lies in a 32-byte entry
                by_shard[shard_of(key.hash)].push_back({{key.head[0], key.head[1]}, key.hash, uint32_t(chunk.size()), n});
            });
            // Under a budget, no memory is kept that the estimate does not see; without
            // one, a table is kept up to kKeptTableBytes (a batch of 8 MB of text streamed
            // in by BPETokenizer.train needs about 8 MB), so that text of millions of
            // distinct chunks does not leave hundreds of MB held by a counter between its
            // calls.
            if (max_memory_ || short_chunks.memory() > kKeptTableBytes) short_chunks = ShortChunkCounts(0);
            // Only now side by side with the other threads'.
            long_counted[k] = std::move(counts.long_chunks);
            kept[k] = std::move(counts.kept);
            short_counted[k] = std::move(by_shard);
        };
        try {
            run_threads(workers, count);
        } catch (...) {
            short_tables_.clear();  // a thread stopped may have left counts in its table
            throw;
        }

        std::atomic<size_t> next_shard{0};
        run_threads(std::min(workers, kShards), [&](size_t) {
            for (size_t s = next_shard++; s < kShards; s = next_shard++) {
                CountedChunks& shard = shards_[s];
                for (std::vector<ChunkTable<int64_t>>& tables : long_counted) {
                    shard.counts.add(std::move(tables[s]), [&](std::string_view bytes) { return shard.bytes.keep(bytes); });
                    tables[s] = ChunkTable<int64_t>(16);  // free it on this thread, now
                }
                size_t incoming = 0;
                for (const auto& by_shard : short_counted) incoming += by_shard[s].size();
                shard.counts.reserve(shard.counts.size() + incoming);
                for (auto& by_shard : short_counted) {
                    for (const ShortCount& c : by_shard[s]) shard.counts[c.key()] += c.count;
                    std::vector<ShortCount>().swap(by_shard[s]);  // free it on this thread, now
                }
            }
        });
    }

    // A short chunk's count on its way from a counting thread's table to its shard,
    // with its ChunkKey's head and hash: the key made again from these holds the
    // chunk's bytes in the head, which is all a ChunkTable reads of a short key.
    struct ShortCount {
        uint64_t head[2];
        uint64_t hash;
        uint32_t size;
        int64_t count;

        ChunkKey key() const {
            ChunkKey key;
            key.bytes = std::string_view(reinterpret_cast<const char*>(head), size);
            key.head[0] = head[0], key.head[1] = head[1], key.hash = hash;
            return key;
        }
    };

    // Counts the chunks of `piece`, which lies in a text that ends at `text_end`: those
    // of at most ShortChunkCounts::kShortChunk bytes (98% of a corpus's chunks) in
    // `short_chunks`, and the longer ones in `long_chunks`, a table a shard. The
    // splitter's chunks are taken in blocks of kBlock: first each chunk's key and a
    // request for its entry's line, then the counts, by which time most lines have come.
    void count_chunks(std::string_view piece, const char* text_end, PieceCounts& counts) const {
        ShortChunkCounts& short_chunks = counts.short_chunks;
        std::vector<ChunkTable<int64_t>>& long_chunks = counts.long_chunks;
        static constexpr size_t kBlock = 256;
        std::string_view chunks[kBlock];
        size_t pending = 0;
        auto count_block = [&]() {
            ShortChunkCounts::Key keys[kBlock];
            size_t shorts = 0;
            for (size_t k = 0; k < pending; ++k) {
                std::string_view chunk = chunks[k];
                if (chunk.size() > ShortChunkCounts::kShortChunk) {
                    ChunkKey key(chunk, text_end);
                    ++long_chunks[shard_of(key.hash)][key];
                    continue;
                }
                keys[shorts] = ShortChunkCounts::key(chunk, text_end);
                prefetch(short_chunks.line_of(keys[shorts++]));
            }
            for (size_t k = 0; k < shorts; ++k) short_chunks.add(keys[k], 1);
            pending = 0;
        };
        for_each_chunk(piece, pattern_, [&](std::string_view chunk) {
            chunks[pending] = chunk;
            if (++pending == kBlock) count_block();
        });
        count_block();
    }

    // For each count, what its chunks add to the estimate's three terms: each chunk's
    // share of its shard's table, its bytes (twice, if kept in an arena), and one
    // chunk. Chunks counted kCounts times or more, which are never dropped, all go in
    // the share of 0.
    static constexpr int64_t kCounts = 1 << 16;
    struct Share {
        double tables = 0, bytes = 0, chunks = 0;
        void operator+=(const Share& o) { tables += o.tables, bytes += o.bytes, chunks += o.chunks; }
    };
    std::vector<Share> shares_by_count() const {
        std::vector<Share> by_count(kCounts);
        for (const CountedChunks& shard : shards_) {
            if (shard.counts.size() == 0) continue;
            double table_share = double(shard.counts.memory()) / double(shard.counts.size());
            shard.counts.for_each([&](std::string_view chunk, int64_t n) {
                Share& share = by_count[n < kCounts ? n : 0];
                share.tables += table_share + (chunk.size() > 16 ? double(chunk.size()) : 0);
                share.bytes += double(chunk.size());
                share.chunks += 1;
            });
        }
        return by_count;
    }

    // What to drop: the chunks counted fewer than `threshold` times, and the share `part`
    // of those counted `threshold` times.
    struct Cut {
        int64_t threshold;
        double part;
    };

    // The smallest threshold that brings the estimate down to `target`, and the share of
    // the chunks counted `threshold` times that must go: most chunks of a large corpus
    // occur once, and dropping all of them would leave far less than the budget allows.
    // Which of them go is decided by their hash (drop_rare).
    Cut cut_to(double target) const {
        std::vector<Share> by_count = shares_by_count();
        Share kept;
        for (const Share& share : by_count) kept += share;
        auto after = [&](const Share& share, double part) {
            return estimate(kept.tables - part * share.tables, kept.bytes - part * share.bytes,
                            kept.chunks - part * share.chunks);
        };
        int64_t threshold = 1;
        while (threshold + 1 < kCounts && after(by_count[threshold], 1) > target) {
            const Share& share = by_count[threshold++];
            kept.tables -= share.tables, kept.bytes -= share.bytes, kept.chunks -= share.chunks;
        }
        double part = 1, low = 0;  // the estimate falls as `part` grows: halve the interval
        for (int step = 0; step < 30; ++step) {
            double middle = (low + part) / 2;
            (after(by_count[threshold], middle) > target ? low : part) = middle;
        }
        return {threshold, part};
    }

    // The shard without its chunks counted fewer than `threshold` times, nor the share
    // `part` of those counted `threshold` times (those whose hash, salted, falls in the
    // first `part` of its range), in tables and an arena sized for what is kept, so that the
    // memory is given back. Returns how many were dropped.
    static uint64_t drop_rare(CountedChunks& shard, int64_t threshold, double part, uint64_t salt) {
        const double cut = part * 18446744073709551616.0;  // part of 2^64
        auto drops = [&](std::string_view chunk, int64_t n) {
            if (n != threshold) return n < threshold;
            // Mixed again with a salt of its own for each pruning: the hash's top bits pick
            // the shard, so are the same throughout one, and the chunks kept last time
            // are those whose unsalted hash was high.
            uint64_t hash = ChunkKey(chunk, chunk.data() + chunk.size()).hash;
            return part >= 1 || double(mix(hash ^ (salt * 0x9e3779b97f4a7c15ULL))) < cut;
        };
        size_t kept = 0;
        shard.counts.for_each([&](std::string_view chunk, int64_t n) { kept += !drops(chunk, n); });
        uint64_t dropped = shard.counts.size() - kept;
        if (dropped == 0) return 0;
        CountedChunks smaller;
        smaller.counts = ChunkTable<int64_t>(kept);
        shard.counts.for_each([&](std::string_view chunk, int64_t n) {
            if (drops(chunk, n)) return;
            std::string_view bytes = chunk.size() > 16 ? smaller.bytes.keep(chunk) : chunk;
            smaller.counts[ChunkKey(bytes, bytes.data() + bytes.size())] = n;
        });
        shard = std::move(smaller);
        return dropped;
    }

    SplitRule pattern_;
    SpecialTokens specials_;
    std::vector<CountedChunks> shards_;
    uint64_t max_memory_ = 0;
    Pruned pruned_;
    uint64_t prunings_ = 0;
    bool used_up_ = false;  // take() has handed the counts to a trainer
    // The counting threads' tables of short chunks, empty between calls, kept (without a
    // budget) for the next call: a str is counted a piece at a time, a call a piece.
    std::vector<ShortChunkCounts> short_tables_;
};

}  // namespace bpe
