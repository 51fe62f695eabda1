// NFC (Unicode's canonical composition) of UTF-8 text, as Hugging Face's tokenizers
// normalizes a tokenizer.json whose normalizer is NFC, with a map from each output byte
// back to the input character it came from, for offsets into the text as given.
//
// The algorithm (Unicode Standard Annex 15): decompose each character canonically (fully), put each run
// of non-starters (combining class > 0) in order of class, keeping the text's order
// within a class, then compose: a character composes with the last starter before it
// when a pair of the tables makes one and nothing between them has a class as high as
// its own. The data is tokenizers' (nfc_tables.h, Unicode 9.0); Hangul is arithmetic.
//
// Most text is NFC already, so both functions first run the quick check: a character
// that is never in NFC (kNo), one that may compose with what is before it (kMaybe), or
// a non-starter out of order ends the run that passes. Text is cut into pieces before
// each kBoundary character (a starter that nothing before it reorders or composes with
// or across); the NFC of a text is the NFC of its pieces, one after another. Only the
// piece around a character that fails the check is normalized; the rest is copied, and
// ASCII is skipped 16 bytes at a time. Text that passes is its own NFC, and tokenizers'
// steps over it replace each character by itself, so each byte's origin is its own
// character. Each character is in one piece, so the work is linear but for the sort of
// a long run of marks, which is O(n log n).
//
// Input is valid UTF-8 (the callers hand over a Python str's). On invalid UTF-8 nothing
// is read past the end: each byte that does not start a valid sequence stands for
// itself, as a starter, and is copied.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "compiler.h"
#include "nfc_tables.h"

namespace bpe {

namespace nfc_detail {

// A byte that starts no valid sequence decodes to kInvalid + the byte: past the last
// code point, so kind 0 (a starter, a boundary), and written back as that byte.
inline constexpr uint32_t kInvalid = 0x110000;

// U+FFFD's UTF-8: what sentencepiece writes for a byte that starts no character.
inline constexpr std::string_view kReplacementCharacter = "\xEF\xBF\xBD";

struct Decoded {
    uint32_t cp, len;
};

// Inlined where it is called: the loops that read a text a character at a time.
BPE_ALWAYS_INLINE inline Decoded decode(const unsigned char* p, const unsigned char* end) {
    const uint32_t b0 = p[0];
    if (b0 < 0x80) return {b0, 1};
    const size_t left = static_cast<size_t>(end - p);
    auto cont = [&](size_t k) { return k < left && (p[k] & 0xC0) == 0x80; };
    if (b0 >= 0xC2 && b0 <= 0xDF && cont(1)) return {((b0 & 0x1F) << 6) | (p[1] & 0x3F), 2};
    if (b0 >= 0xE0 && b0 <= 0xEF && cont(1) && cont(2)) {
        const uint32_t cp = ((b0 & 0x0F) << 12) | ((p[1] & 0x3Fu) << 6) | (p[2] & 0x3F);
        if (cp >= 0x800 && (cp < 0xD800 || cp > 0xDFFF)) return {cp, 3};
    } else if (b0 >= 0xF0 && b0 <= 0xF4 && cont(1) && cont(2) && cont(3)) {
        const uint32_t cp = ((b0 & 0x07) << 18) | ((p[1] & 0x3Fu) << 12) | ((p[2] & 0x3Fu) << 6) | (p[3] & 0x3F);
        if (cp >= 0x10000 && cp < 0x110000) return {cp, 4};
    }
    return {kInvalid + b0, 1};
}

inline void append_utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
        out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < kInvalid) {
        out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
        out.push_back(static_cast<char>(cp - kInvalid));
    }
}

// For the quick check: below U+0300 every character is a boundary and passes (the
// first combining mark is U+0300), though many decompose (the table's kind says so).
inline nfc_tables::Kind check_kind(uint32_t cp) {
    return cp < 0x300 ? nfc_tables::kKinds[0] : nfc_tables::kind(cp);
}
using nfc_tables::kind;

inline constexpr uint32_t kHangulS = 0xAC00, kHangulSCount = 11172, kHangulL = 0x1100, kHangulLCount = 19,
                          kHangulV = 0x1161, kHangulVCount = 21, kHangulT = 0x11A7, kHangulTCount = 28,
                          kHangulNCount = kHangulVCount * kHangulTCount;

inline bool is_hangul_syllable(uint32_t cp) { return cp - kHangulS < kHangulSCount; }

// The composite of (a, b), or 0 where they do not compose.
inline uint32_t compose(uint32_t a, uint32_t b) {
    if (a - kHangulL < kHangulLCount && b - kHangulV < kHangulVCount)
        return kHangulS + ((a - kHangulL) * kHangulVCount + (b - kHangulV)) * kHangulTCount;
    if (is_hangul_syllable(a) && (a - kHangulS) % kHangulTCount == 0 && b - kHangulT - 1 < kHangulTCount - 1)
        return a + (b - kHangulT);
    if (!(kind(b).flags & nfc_tables::kMaybe)) return 0;
    const uint64_t key = (uint64_t(a) << 42) | (uint64_t(b) << 21);
    const uint64_t* end = std::end(nfc_tables::kCompositions);
    const uint64_t* it = std::lower_bound(std::begin(nfc_tables::kCompositions), end, key);
    if (it != end && (*it >> 21) == (key >> 21)) return static_cast<uint32_t>(*it & 0x1FFFFF);
    return 0;
}

// One character of a piece as the normalizer carries it. `change` is Hugging Face's
// account of what an output character did to the text before it, which its offsets
// follow (NormalizedString::transform): 0 replaces the next input character, 1 is
// inserted after the last one, -n replaces the next one and removes n more.
// A decomposition's first character replaces, the rest are inserted; a composition of
// (a, b) has change a + b - 1.
struct Item {
    uint32_t cp;
    int32_t change;
    uint8_t ccc;
};

inline bool by_class(const Item& x, const Item& y) { return x.ccc < y.ccc; }

// Puts one run of non-starters in order of class, stably. Short runs (all of real text)
// by insertion; a long one, which only a hostile text has, by merge sort.
inline void sort_run(Item* first, Item* last) {
    if (last - first > 32) {
        std::stable_sort(first, last, by_class);
        return;
    }
    for (Item* i = first + 1; i < last; ++i) {
        const Item x = *i;
        Item* j = i;
        for (; j > first && j[-1].ccc > x.ccc; --j) *j = j[-1];
        *j = x;
    }
}

// Normalizes the piece in[begin, end), appending to out (and origin). The character
// decomposition, order and composition are those of tokenizers' engine, step for step,
// so that the changes, and so the origins, are its own: each output character with
// change <= 0 takes the next input character not yet taken (and 1 - change of them in
// all), one with change 1 the one taken last. Which character that is goes by position,
// not by where the output character's parts came from: when marks are reordered, the
// output's first mark maps to the input's first mark.
class Piece {
  public:
    void normalize(std::string_view in, size_t begin, size_t end, std::string& out, std::vector<uint32_t>* origin) {
        const auto* p = reinterpret_cast<const unsigned char*>(in.data());
        const auto* stop = p + end;
        items_.clear();
        for (size_t i = begin; i < end;) {
            const Decoded c = decode(p + i, stop);
            decompose(c.cp);
            i += c.len;
        }
        // Order each maximal run of non-starters.
        for (size_t i = 0; i < items_.size();) {
            if (items_[i].ccc == 0) {
                ++i;
                continue;
            }
            size_t j = i + 1;
            while (j < items_.size() && items_[j].ccc != 0) ++j;
            if (j - i > 1) sort_run(items_.data() + i, items_.data() + j);
            i = j;
        }
        next_ = begin;
        taken_ = begin;  // a first output character never has change 1 (see emit)
        compose(in, out, origin);
    }

  private:
    void decompose(uint32_t cp) {
        if (is_hangul_syllable(cp)) {
            const uint32_t s = cp - kHangulS;
            items_.push_back({kHangulL + s / kHangulNCount, 0, 0});
            items_.push_back({kHangulV + s % kHangulNCount / kHangulTCount, 1, 0});
            if (s % kHangulTCount) items_.push_back({kHangulT + s % kHangulTCount, 1, 0});
            return;
        }
        const nfc_tables::Kind k = kind(cp);
        if (!(k.flags & nfc_tables::kDecomposes)) {
            items_.push_back({cp, 0, k.ccc});
            return;
        }
        const uint32_t* found = std::lower_bound(std::begin(nfc_tables::kDecomposed), std::end(nfc_tables::kDecomposed), cp);
        const size_t at = static_cast<size_t>(found - std::begin(nfc_tables::kDecomposed));
        for (uint32_t k2 = nfc_tables::kDecompositionOffsets[at]; k2 < nfc_tables::kDecompositionOffsets[at + 1]; ++k2) {
            const uint32_t d = nfc_tables::kDecompositionChars[k2];
            items_.push_back({d, k2 == nfc_tables::kDecompositionOffsets[at] ? 0 : 1, kind(d).ccc});
        }
    }

    // The composition, as a stream: the last starter (`starter_`) waits for what may
    // compose with it; the non-starters that did not are held in `held_` (blocked_ is
    // the class of the last of them, -1 when none) and follow it out.
    void compose(std::string_view in, std::string& out, std::vector<uint32_t>* origin) {
        bool have_starter = false;
        Item starter{};
        int blocked = -1;
        held_.clear();
        for (const Item& item : items_) {
            if (!have_starter) {
                if (item.ccc != 0) {
                    emit(in, item, out, origin);
                    continue;
                }
                starter = item;
                have_starter = true;
                continue;
            }
            if (blocked < 0 || blocked < item.ccc) {
                if (const uint32_t made = nfc_detail::compose(starter.cp, item.cp)) {
                    starter = {made, starter.change + item.change - 1, 0};
                    continue;
                }
            }
            if (item.ccc == 0) {  // a starter that did not compose: the one before is done
                emit(in, starter, out, origin);
                for (const Item& h : held_) emit(in, h, out, origin);
                held_.clear();
                blocked = -1;
                starter = item;
                continue;
            }
            held_.push_back(item);
            blocked = item.ccc;
        }
        if (have_starter) emit(in, starter, out, origin);
        for (const Item& h : held_) emit(in, h, out, origin);
    }

    void emit(std::string_view in, const Item& item, std::string& out, std::vector<uint32_t>* origin) {
        const size_t before = out.size();
        append_utf8(out, item.cp);
        if (!origin) return;
        const auto* p = reinterpret_cast<const unsigned char*>(in.data());
        const auto* stop = p + in.size();
        // Change 1 never comes first in a piece: the first item out is a starter's first
        // character (change 0, or less once composed) or a non-starter that is first of
        // its run in order of class, which is a decomposition's first character too.
        const size_t from = item.change > 0 ? taken_ : next_;
        for (int32_t n = item.change > 0 ? 0 : 1 - item.change; n > 0 && next_ < in.size(); --n) {
            taken_ = next_;
            next_ += decode(p + next_, stop).len;
        }
        origin->insert(origin->end(), out.size() - before, static_cast<uint32_t>(from));
    }

    std::vector<Item> items_, held_;
    size_t next_ = 0, taken_ = 0;
};

// The end of the ASCII run from i (16, then 8 bytes at a time).
inline size_t skip_ascii(const unsigned char* p, size_t i, size_t n) {
    constexpr uint64_t kHigh = 0x8080808080808080ull;
    for (; i + 16 <= n; i += 16) {
        uint64_t a, b;
        std::memcpy(&a, p + i, 8);
        std::memcpy(&b, p + i + 8, 8);
        if ((a | b) & kHigh) break;
    }
    if (i + 8 <= n) {
        uint64_t a;
        std::memcpy(&a, p + i, 8);
        if (!(a & kHigh)) i += 8;
    }
    while (i < n && p[i] < 0x80) ++i;
    return i;
}

// Whether the character of `len` bytes at i passes the quick check as a boundary by what
// its first bytes say (most characters of most scripts do): no need to decode it. Bytes
// that are not valid UTF-8 pass either way, as starters, so the answer is the same.
// The length comes from the first byte alone, so that the next character's place does
// not wait on the table.
inline bool passes(const unsigned char* p, size_t i, size_t n, size_t len) {
    auto cont = [&](size_t k) { return (p[i + k] & 0xC0) == 0x80; };
    auto bit = [](const uint64_t* words, uint32_t k) { return (words[k >> 6] >> (k & 63)) & 1; };
    if (i + len > n) return false;
    const uint32_t b0 = p[i];
    if (len == 2) return cont(1) && bit(nfc_tables::kPassesBmp, ((b0 & 0x1F) << 6) | (p[i + 1] & 0x3F));
    if (len == 3)
        return cont(1) && cont(2) &&
               bit(nfc_tables::kPassesBmp, ((b0 & 0x0F) << 12) | ((p[i + 1] & 0x3Fu) << 6) | (p[i + 2] & 0x3F));
    if (len != 4 || !cont(1) || !cont(2) || !cont(3)) return false;
    const uint32_t high = ((b0 & 0x07) << 6) | (p[i + 1] & 0x3F);  // the code point >> 12
    return high >= 0x10 && high < 0x110 && bit(nfc_tables::kPasses4, high - 0x10);
}

inline size_t lead_length(uint32_t b0) { return b0 < 0xC2 ? 0 : b0 < 0xE0 ? 2 : b0 < 0xF0 ? 3 : b0 < 0xF5 ? 4 : 0; }

// Runs the quick check over `in`, calling on_piece(begin, end, fails_for_sure) for each
// piece [begin, end) that holds a character failing it, in order; begin and end are
// boundaries (or the text's ends). Returns early when on_piece returns false.
template <class OnPiece>
bool quick_check(std::string_view in, OnPiece&& on_piece) {
    const auto* p = reinterpret_cast<const unsigned char*>(in.data());
    const size_t n = in.size();
    const auto* stop = p + n;
    size_t i = 0, boundary = 0;
    uint8_t last_ccc = 0;
    while (i < n) {
        if (p[i] < 0x80) {
            // One byte at a time between words of other scripts, 16 at a time in runs.
            i = p[i + 1 < n ? i + 1 : i] < 0x80 ? skip_ascii(p, i, n) : i + 1;
            boundary = i - 1;
            last_ccc = 0;
            continue;
        }
        const size_t len = lead_length(p[i]);
        if (i + 4 <= n && (len == 2 || len == 3)) {
            // Two or three bytes, decided without a branch on which: text that mixes
            // scripts word by word would mispredict one at each change.
            const uint32_t b0 = p[i], b1 = p[i + 1], b2 = p[i + 2];
            const bool three = len == 3;
            const bool valid = (b1 & 0xC0) == 0x80 && (!three || (b2 & 0xC0) == 0x80);
            const uint32_t cp = three ? ((b0 & 0x0F) << 12) | ((b1 & 0x3F) << 6) | (b2 & 0x3F)
                                      : ((b0 & 0x1F) << 6) | (b1 & 0x3F);
            if (valid & ((nfc_tables::kPassesBmp[cp >> 6] >> (cp & 63)) & 1)) {
                boundary = i;
                last_ccc = 0;
                i += len;
                continue;
            }
        } else if (passes(p, i, n, len)) {
            boundary = i;
            last_ccc = 0;
            i += len;
            continue;
        }
        const Decoded c = decode(p + i, stop);
        const nfc_tables::Kind k = check_kind(c.cp);
        if (k.flags & nfc_tables::kBoundary) boundary = i;
        const bool no = (k.flags & nfc_tables::kNo) || (k.ccc != 0 && last_ccc > k.ccc);
        if (!no && !(k.flags & nfc_tables::kMaybe)) {
            last_ccc = k.ccc;
            i += c.len;
            continue;
        }
        size_t end = i + c.len;
        while (end < n) {
            const Decoded d = decode(p + end, stop);
            if (check_kind(d.cp).flags & nfc_tables::kBoundary) break;
            end += d.len;
        }
        if (!on_piece(boundary, end, no)) return false;
        i = boundary = end;
        last_ccc = 0;
    }
    return true;
}

}  // namespace nfc_detail

// Whether `utf8` is in NFC (as tokenizers' NFC would leave it). Exact: a character that
// only may compose (NFC_Quick_Check=Maybe) is decided by normalizing its piece.
inline bool is_nfc(std::string_view utf8) {
    nfc_detail::Piece piece;
    std::string normalized;
    return nfc_detail::quick_check(utf8, [&](size_t begin, size_t end, bool fails) {
        if (fails) return false;
        normalized.clear();
        piece.normalize(utf8, begin, end, normalized, nullptr);
        return std::string_view(normalized) == utf8.substr(begin, end - begin);
    });
}

// NFC of valid UTF-8 into `out` (cleared first). If origin != nullptr, origin->size() ==
// out.size() + 1 after the call and (*origin)[k] is the byte offset in `in` of the start
// of the input character that output byte k came from, as Hugging Face's alignments
// have it (the last entry: in.size()): every byte of an output character has the same
// origin; a composed character maps to the first character it was composed of; where
// marks were reordered, the k-th character of the run maps to the run's k-th input
// character (tokenizers' offsets go by position there). Hugging Face's alignment of an
// output byte is the whole input character at its origin, so a token's offsets run from
// its first byte's origin to origin_char_end() of its last byte's origin, which is not
// always the next byte's origin.
inline void nfc(std::string_view in, std::string& out, std::vector<uint32_t>* origin = nullptr) {
    if (origin && in.size() > UINT32_MAX) throw std::length_error("nfc: an origin map needs a text under 4 GiB");
    out.clear();
    if (origin) origin->clear();
    size_t copied = 0;
    auto copy_to = [&](size_t to) {
        out.append(in.data() + copied, to - copied);
        if (!origin) return;
        const auto* p = reinterpret_cast<const unsigned char*>(in.data());
        const size_t at = origin->size();
        origin->resize(at + (to - copied));
        uint32_t* o = origin->data() + at - copied;
        for (size_t k = copied; k < to;) {
            if (p[k] < 0x80) {
                o[k] = static_cast<uint32_t>(k);
                ++k;
                continue;
            }
            const uint32_t len = nfc_detail::decode(p + k, p + in.size()).len;
            for (uint32_t j = 0; j < len; ++j) o[k + j] = static_cast<uint32_t>(k);
            k += len;
        }
    };
    nfc_detail::Piece piece;
    nfc_detail::quick_check(in, [&](size_t begin, size_t end, bool) {
        copy_to(begin);
        piece.normalize(in, begin, end, out, origin);
        copied = end;
        return true;
    });
    copy_to(in.size());
    if (origin) origin->push_back(static_cast<uint32_t>(in.size()));
}

// The end of the input character that starts at byte `start` of `in` (in.size() at the end).
inline size_t origin_char_end(std::string_view in, size_t start) {
    if (start >= in.size()) return in.size();
    const auto* p = reinterpret_cast<const unsigned char*>(in.data());
    return start + nfc_detail::decode(p + start, p + in.size()).len;
}

}  // namespace bpe
