// A rules normalizer: a list of steps run in order over a text, each with a map from
// every output byte back to the input character it came from (for offsets), composed
// across the steps. The steps:
//   - NFC (normalize.h);
//   - Precompiled: sentencepiece's character map (charsmap.h), the longest prefix it
//     holds replaced at each place, else the character kept. Followed by a SentencePiece
//     step, the two run as one, as in sentencepiece, whose whitespace rules read the
//     map's replacement of each prefix whole;
//   - SentencePiece: sentencepiece's normalizer after its character map, in its order
//     and meanings (normalizer.cc): with remove_extra_whitespaces the leading spaces
//     go, then add_dummy_prefix puts one space first (before a text that is left
//     non-empty), each run of spaces becomes one, the trailing ones go; with
//     escape_whitespaces every space written is U+2581 ("▁"). Its space is ' ' alone.
//     With a map, the rules' normalized added tokens (sentencepiece's user-defined
//     symbols) are copied as they are where they begin, as sentencepiece does;
//   - Replace: every occurrence of a literal text, left to right, by another (Hugging
//     Face's Replace with a String pattern);
//   - Prepend: a text put before a non-empty one (Hugging Face's Prepend).
// Text that a step leaves as it is costs that step a scan: `unchanged` answers for the
// whole list without writing anything.
// The rules come from a file, so how much a text may grow is bounded: no step may write
// more than kMaxGrowth times the text given to the list plus kGrowthSlack bytes (more is
// a std::length_error, a ValueError in Python, before the memory is asked for). Real
// rules stay far below it: sentencepiece's nmt_nfkc map grows a text at most about
// twelvefold, spaces to "▁" threefold.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "charsmap.h"
#include "normalize.h"

namespace bpe {

struct NormalizerStep {
    enum class Kind { kNfc, kPrecompiled, kSentencePiece, kReplace, kPrepend };
    Kind kind = Kind::kNfc;
    // Precompiled's map; a SentencePiece step's own where a Precompiled step came before it.
    std::shared_ptr<const Charsmap> charsmap;
    // A SentencePiece step with a map: texts it copies as they are where they begin,
    // before the map is tried (sentencepiece's user-defined symbols, the rules' normalized
    // added tokens), longest first; kept_first[b]: whether one begins with byte b.
    std::vector<std::string> kept;
    std::array<bool, 256> kept_first{};
    // SentencePiece's options.
    bool add_dummy_prefix = false, remove_extra_whitespaces = false, escape_whitespaces = false;
    // Replace's `pattern` and `content`; Prepend's text in `content`.
    std::string pattern, content;
};

namespace normalizer_detail {

inline constexpr size_t kMaxGrowth = 32;
inline constexpr size_t kGrowthSlack = size_t(1) << 16;

// The most bytes a step may write for a text of `text_bytes` given to the list.
inline size_t growth_limit(size_t text_bytes) {
    return text_bytes > (SIZE_MAX - kGrowthSlack) / kMaxGrowth ? SIZE_MAX : kMaxGrowth * text_bytes + kGrowthSlack;
}

// Throws where a step would write `bytes` past `limit`.
inline void check_growth(size_t bytes, size_t limit) {
    if (bytes > limit)
        throw std::length_error("the rules' normalizer would make over " + std::to_string(limit) +
                                " bytes of text, more than " + std::to_string(kMaxGrowth) +
                                " times the text given and " + std::to_string(kGrowthSlack) +
                                " bytes (its Replace, Prepend or charsmap replacements are too long)");
}

// The length of the UTF-8 character at in[i] (1 for a byte that starts none: the text
// is valid UTF-8 on every path here, but a length must never run past the end).
inline size_t char_length(std::string_view in, size_t i) {
    const auto* p = reinterpret_cast<const unsigned char*>(in.data());
    return nfc_detail::decode(p + i, p + in.size()).len;
}

// Each byte of `in` as its own origin: the start of its character.
inline void own_origins(std::string_view in, std::vector<uint32_t>& origin) {
    origin.clear();
    for (size_t i = 0; i < in.size();) {
        const size_t len = char_length(in, i);
        for (size_t j = 0; j < len; ++j) origin.push_back(uint32_t(i));
        i += len;
    }
    origin.push_back(uint32_t(in.size()));
}

inline constexpr std::string_view kSpaceSymbol = "\xe2\x96\x81";  // U+2581

// Where a replacement of the prefix in[i, i + len) has its bytes from: the prefix's first
// character, but its last byte from the prefix's last character, so that a token that
// ends there spans every character replaced ("e\u0301" composed into "é" spans both,
// as Hugging Face's offsets give a replacement). A no-op for a prefix of one character.
inline void last_from_prefix_end(std::string_view in, size_t i, size_t len, size_t written,
                                 std::vector<uint32_t>* origin) {
    if (!origin || written == 0 || len < 2) return;
    size_t last = i + len - 1;
    while (last > i && (static_cast<unsigned char>(in[last]) & 0xC0) == 0x80) --last;
    if (last > i) origin->back() = uint32_t(last);
}

// The prefix of in[i...] a character map replaces, and its replacement: the longest the
// map holds, else the character as it is. A byte that starts no character (which a map's
// key that ends inside a character leaves behind) is U+FFFD, as sentencepiece writes it.
inline std::pair<std::string_view, size_t> mapped_prefix(const Charsmap* charsmap, std::string_view in, size_t i,
                                                          const NormalizerStep* step = nullptr,
                                                          Charsmap::PrefixMemo* memo = nullptr) {
    if (step && step->kept_first[static_cast<unsigned char>(in[i])])
        for (const std::string& k : step->kept)
            if (in.compare(i, k.size(), k) == 0) return {in.substr(i, k.size()), k.size()};
    if (charsmap) {
        const auto found = charsmap->longest_prefix(in, i, memo);
        if (found.second > 0) return found;
    }
    const auto* p = reinterpret_cast<const unsigned char*>(in.data());
    const nfc_detail::Decoded d = nfc_detail::decode(p + i, p + in.size());
    if (d.cp >= nfc_detail::kInvalid) return {nfc_detail::kReplacementCharacter, 1};
    return {in.substr(i, d.len), d.len};
}

// sentencepiece's normalizer (normalizer.cc's Normalize): each prefix of the text as the
// map replaces it (the identity without one), and the whitespace rules on those
// replacements. Every output byte comes from the prefix being read when it was written
// (the dummy prefix from the first one kept); trailing spaces removed take nothing with
// them.
inline void sentencepiece(std::string_view in, const NormalizerStep& step, std::string& out,
                          std::vector<uint32_t>* origin, size_t limit = SIZE_MAX) {
    out.clear();
    if (origin) origin->clear();
    const Charsmap* map = step.charsmap.get();
    Charsmap::PrefixMemo* memo = map ? map->thread_memo() : nullptr;
    size_t i = 0;
    if (step.remove_extra_whitespaces)
        while (i < in.size()) {
            const auto [piece, len] = mapped_prefix(map, in, i, &step, memo);
            if (piece != " ") break;
            i += len;
        }
    if (i == in.size()) {
        if (origin) origin->push_back(uint32_t(in.size()));
        return;
    }
    const std::string_view space = step.escape_whitespaces ? kSpaceSymbol : std::string_view(" ");
    // Written through a pointer into room made ahead (`room`), not appended: most writes
    // are a byte or a space, and an append a call each would cost more than the byte.
    size_t w = 0;
    auto room = [&](size_t more) {
        check_growth(w + more, limit);
        if (w + more > out.size()) out.resize(std::max(2 * out.size(), w + more + 64));
    };
    auto put = [&](std::string_view bytes, size_t from) {
        room(bytes.size());
        std::memcpy(&out[w], bytes.data(), bytes.size());
        w += bytes.size();
        if (origin) origin->insert(origin->end(), bytes.size(), uint32_t(from));
    };
    room(in.size() - i + space.size());
    if (step.add_dummy_prefix) put(space, i);
    bool previous_space = step.remove_extra_whitespaces;
    const auto* u = reinterpret_cast<const unsigned char*>(in.data());
    std::array<bool, 256> stop = step.kept_first;  // what ends a run the map leaves alone
    stop[' '] = true;
    // A space the map leaves as it is (what follows decides, where a key begins with one).
    auto lone_space = [&](size_t at) {
        return u[at] == ' ' &&
               (!map || (!step.kept_first[' '] && map->ascii_alone(' ', at + 1 < in.size() ? u[at + 1] : 0)));
    };
    // The place at `at`, `len` bytes, as the map replaces it (`piece`; or a kept text as
    // it is), each space in the replacement written as `space`.
    auto put_mapped = [&](size_t at, std::string_view piece, size_t len) {
        // A piece's leading spaces go after a space (which only remove_extra_whitespaces keeps).
        while (previous_space && !piece.empty() && piece.front() == ' ') piece.remove_prefix(1);
        if (!piece.empty()) {
            const size_t before = w;
            for (size_t k = 0; k < piece.size();) {
                const size_t run = piece.find(' ', k);
                if (run == k) {
                    put(space, at);
                    ++k;
                    continue;
                }
                const size_t to = run == std::string_view::npos ? piece.size() : run;
                put(piece.substr(k, to - k), at);
                k = to;
            }
            last_from_prefix_end(in, at, len, w - before, origin);
            previous_space = piece.back() == ' ';
        }
        if (!step.remove_extra_whitespaces) previous_space = false;
    };
    if (!map && !origin) {
        // No map and no origins (encode's common case): each byte is itself but a space,
        // written with room for every byte to be a space made "▁", in one tight loop.
        room((in.size() - i) * space.size());
        char* o = &out[w];
        for (; i < in.size(); ++i) {
            if (u[i] != ' ') {
                *o++ = char(u[i]);
                previous_space = false;
                continue;
            }
            if (!previous_space) {
                std::memcpy(o, space.data(), space.size());
                o += space.size();
            }
            previous_space = step.remove_extra_whitespaces;
        }
        w = size_t(o - out.data());
    } else if (!origin) {
        // A map and no origins (encode's case with one): the runs it leaves alone, the
        // spaces between them and the places it replaces with a piece of no space or with
        // one space (a line break's) are written with no call, into room promised for
        // every byte left and every space made `space`, made again where a piece longer
        // than its place would eat into it. Where that promise would pass the growth
        // limit (a step before grew the text), the checked loop below goes on instead.
        size_t spaces_left = size_t(std::count(u + i, u + in.size(), ' '));
        const size_t extra = space.size() - 1;
        char* o = nullptr;
        const char* o_end = nullptr;
        auto make_room = [&] {
            const size_t more = in.size() - i + spaces_left * extra;
            if (w > limit || more > limit - w) return false;
            room(more);
            o = &out[w];
            o_end = out.data() + out.size();
            return true;
        };
        bool promised = make_room();
        while (promised && i < in.size()) {
            // A space first: the run before it stopped there, and a run begun at it would
            // end at once.
            if (lone_space(i)) {
                if (!previous_space) {
                    for (char c : space) *o++ = c;
                }
                previous_space = step.remove_extra_whitespaces;
                --spaces_left;
                ++i;
                continue;
            }
            const size_t k = map->alone_run(in, i, stop);
            if (k > i) {
                // Most runs are a word: 32 bytes copied whole where they can be read and
                // the room holds them (those past the run are written over next), with
                // no call.
                if (k - i <= 32 && in.size() - i >= 32 && size_t(o_end - o) >= 32) {
                    std::memcpy(o, u + i, 16);
                    std::memcpy(o + 16, u + i + 16, 16);
                } else {
                    std::memcpy(o, u + i, k - i);
                }
                o += k - i;
                i = k;
                previous_space = false;
                continue;
            }
            std::string_view piece;
            size_t len;
            if (step.kept_first[u[i]] || !map->remembered(in, i, memo, piece, len))
                std::tie(piece, len) = mapped_prefix(map, in, i, &step, memo);
            size_t key_spaces = 0;
            for (size_t j = i; j < i + len; ++j) key_spaces += u[j] == ' ';
            const bool one_space = piece.size() == 1 && piece[0] == ' ';
            const bool no_space = !piece.empty() && std::find(piece.begin(), piece.end(), ' ') == piece.end();
            const size_t writes = one_space ? space.size() : piece.size();
            if ((one_space || no_space) &&
                size_t(o_end - o) >= writes + (in.size() - i - len) + (spaces_left - key_spaces) * extra) {
                if (one_space) {
                    if (!previous_space) {
                        for (char c : space) *o++ = c;
                    }
                    previous_space = step.remove_extra_whitespaces;
                } else {
                    for (char c : piece) *o++ = c;
                    previous_space = false;
                }
                spaces_left -= key_spaces;
                i += len;
                continue;
            }
            w = size_t(o - out.data());
            put_mapped(i, piece, len);
            spaces_left -= key_spaces;
            i += len;
            promised = make_room();
        }
        if (promised) w = size_t(o - out.data());
    }
    while (i < in.size()) {
        // A space first, as above.
        if (lone_space(i)) {
            if (!previous_space) put(space, i);
            previous_space = step.remove_extra_whitespaces;
            ++i;
            continue;
        }
        // A run of bytes that are themselves: without a map every byte but a space; with
        // one, the characters it leaves as they are (Charsmap::alone_run).
        {
            room(in.size() - i);
            char* o = &out[w];
            size_t k = i;
            if (!map) {
                while (k < in.size() && u[k] != ' ') *o++ = char(u[k++]);
            } else {
                k = map->alone_run(in, i, stop);
                std::memcpy(o, u + i, k - i);
            }
            if (k > i) {
                if (origin)
                    for (size_t c = i; c < k;) {
                        const size_t len = char_length(in, c);
                        origin->insert(origin->end(), len, uint32_t(c));
                        c += len;
                    }
                w += k - i;
                previous_space = false;
                i = k;
                continue;
            }
        }
        const auto [piece, len] = mapped_prefix(map, in, i, &step, memo);
        put_mapped(i, piece, len);
        i += len;
    }
    out.resize(w);
    if (step.remove_extra_whitespaces)
        while (out.size() >= space.size() && std::string_view(out).substr(out.size() - space.size()) == space) {
            out.resize(out.size() - space.size());
            if (origin) origin->resize(out.size());
        }
    if (origin) origin->push_back(uint32_t(in.size()));
}

// Precompiled alone: each place's longest prefix in the map replaced, its bytes from that
// prefix's first character.
inline void precompiled(std::string_view in, const Charsmap& map, std::string& out, std::vector<uint32_t>* origin,
                        size_t limit = SIZE_MAX) {
    out.clear();
    if (origin) origin->clear();
    Charsmap::PrefixMemo* memo = map.thread_memo();
    for (size_t i = 0; i < in.size();) {
        const auto [piece, len] = mapped_prefix(&map, in, i, nullptr, memo);
        check_growth(out.size() + piece.size(), limit);
        out.append(piece);
        if (origin) origin->insert(origin->end(), piece.size(), uint32_t(i));
        last_from_prefix_end(in, i, len, piece.size(), origin);
        i += len;
    }
    if (origin) origin->push_back(uint32_t(in.size()));
}

// Replace: every occurrence of step.pattern, left to right, the next looked for after
// the last; its bytes come from the occurrence's first character.
inline void replace(std::string_view in, const NormalizerStep& step, std::string& out, std::vector<uint32_t>* origin,
                    size_t limit = SIZE_MAX) {
    out.clear();
    if (step.content.size() > step.pattern.size()) {
        size_t count = 0;
        for (size_t at = in.find(step.pattern); at != std::string_view::npos;
             at = in.find(step.pattern, at + step.pattern.size()))
            ++count;
        const size_t more = step.content.size() - step.pattern.size();
        check_growth(count > (limit - std::min(limit, in.size())) / more ? SIZE_MAX : in.size() + count * more,
                     limit);
    }
    if (origin) origin->clear();
    size_t i = 0;
    auto copy = [&](size_t to) {
        out.append(in.data() + i, to - i);
        if (origin)
            while (i < to) {
                const size_t len = char_length(in, i);
                origin->insert(origin->end(), len, uint32_t(i));
                i += len;
            }
        i = to;
    };
    for (size_t at = in.find(step.pattern); at != std::string_view::npos; at = in.find(step.pattern, i)) {
        copy(at);
        out.append(step.content);
        if (origin) origin->insert(origin->end(), step.content.size(), uint32_t(at));
        i = at + step.pattern.size();
    }
    copy(in.size());
    if (origin) origin->push_back(uint32_t(in.size()));
}

}  // namespace normalizer_detail

class Normalizer {
public:
    Normalizer() = default;
    explicit Normalizer(std::vector<NormalizerStep> steps) {
        for (const NormalizerStep& s : steps) {
            if (s.kind == NormalizerStep::Kind::kReplace && s.pattern.empty())
                throw std::invalid_argument("a Replace step's pattern must not be empty");
            if ((s.kind == NormalizerStep::Kind::kPrecompiled) != (s.charsmap != nullptr))
                throw std::invalid_argument("a Precompiled step needs its charsmap, and only it has one");
        }
        for (size_t k = 0; k < steps.size(); ++k) {
            NormalizerStep& s = steps[k];
            // A map then sentencepiece's steps: one step, as sentencepiece runs them.
            if (s.kind == NormalizerStep::Kind::kPrecompiled && k + 1 < steps.size() &&
                steps[k + 1].kind == NormalizerStep::Kind::kSentencePiece) {
                steps[k + 1].charsmap = std::move(s.charsmap);
                continue;
            }
            steps_.push_back(std::move(s));
        }
    }

    // Texts the SentencePiece steps with a map copy as they are (NormalizerStep::kept).
    void keep_whole(const std::vector<std::string>& texts) {
        for (NormalizerStep& s : steps_) {
            if (s.kind != NormalizerStep::Kind::kSentencePiece || !s.charsmap) continue;
            for (const std::string& t : texts)
                if (!t.empty()) s.kept.push_back(t), s.kept_first[static_cast<unsigned char>(t[0])] = true;
            std::stable_sort(s.kept.begin(), s.kept.end(),
                             [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
        }
    }

    bool empty() const { return steps_.empty(); }
    const std::vector<NormalizerStep>& steps() const { return steps_; }
    // Whether the list does nothing but write each space as "▁" (U+2581) and, where it
    // returns true, put one before a non-empty text: sentencepiece's normalizer with no
    // map and escape_whitespaces alone (with add_dummy_prefix), or Hugging Face's
    // Replace of " " by "▁" (after or before a Prepend of "▁"). nullopt: it does more.
    std::optional<bool> spaces_escaped_only() const {
        using Kind = NormalizerStep::Kind;
        auto replaces_spaces = [](const NormalizerStep& s) {
            return s.kind == Kind::kReplace && s.pattern == " " && s.content == normalizer_detail::kSpaceSymbol;
        };
        auto prepends_meta = [](const NormalizerStep& s) {
            return s.kind == Kind::kPrepend && s.content == normalizer_detail::kSpaceSymbol;
        };
        if (steps_.size() == 1) {
            const NormalizerStep& s = steps_[0];
            if (s.kind == Kind::kSentencePiece && !s.charsmap && s.kept.empty() && s.escape_whitespaces &&
                !s.remove_extra_whitespaces)
                return s.add_dummy_prefix;
            if (replaces_spaces(s)) return false;
        }
        if (steps_.size() == 2 && ((prepends_meta(steps_[0]) && replaces_spaces(steps_[1])) ||
                                   (replaces_spaces(steps_[0]) && prepends_meta(steps_[1]))))
            return true;
        return std::nullopt;
    }

    bool has(NormalizerStep::Kind kind) const {
        for (const NormalizerStep& s : steps_)
            if (s.kind == kind) return true;
        return false;
    }

    // Whether every step leaves `text` as it is (then so does the list).
    bool unchanged(std::string_view text) const {
        for (const NormalizerStep& s : steps_) {
            switch (s.kind) {
                case NormalizerStep::Kind::kNfc:
                    if (!is_nfc(text)) return false;
                    break;
                case NormalizerStep::Kind::kReplace:
                    if (text.find(s.pattern) != std::string_view::npos) return false;
                    break;
                case NormalizerStep::Kind::kPrepend:
                    if (!text.empty() && !s.content.empty()) return false;
                    break;
                case NormalizerStep::Kind::kPrecompiled:
                case NormalizerStep::Kind::kSentencePiece:
                    if (!text.empty()) return false;
                    break;
            }
        }
        return true;
    }

    // The text through every step into `out`; with `origin`, origin->size() ==
    // out.size() + 1 and (*origin)[k] is the byte offset in `in` of the input character
    // output byte k came from (the last entry: in.size()), as nfc() gives it. `in` must
    // not lie in `out`.
    void run(std::string_view in, std::string& out, std::vector<uint32_t>* origin) const {
        if (origin && in.size() > UINT32_MAX) throw std::length_error("an origin map needs a text under 4 GiB");
        if (origin) normalizer_detail::own_origins(in, *origin);
        // Each step reads `text` and writes `out` (the first to write) or `next`; so a
        // list of one step writes straight into the caller's `out`, kept between calls.
        std::string_view text = in;
        bool written = false;
        std::string next;
        std::vector<uint32_t> step_origin;
        const size_t limit = normalizer_detail::growth_limit(in.size());
        for (const NormalizerStep& s : steps_) {
            std::vector<uint32_t>* o = origin ? &step_origin : nullptr;
            std::string& to = written ? next : out;
            switch (s.kind) {
                case NormalizerStep::Kind::kNfc:
                    if (is_nfc(text)) continue;
                    nfc(text, to, o);
                    break;
                case NormalizerStep::Kind::kSentencePiece:
                    normalizer_detail::sentencepiece(text, s, to, o, limit);
                    break;
                case NormalizerStep::Kind::kPrecompiled:
                    normalizer_detail::precompiled(text, *s.charsmap, to, o, limit);
                    break;
                case NormalizerStep::Kind::kReplace:
                    if (text.find(s.pattern) == std::string::npos) continue;
                    normalizer_detail::replace(text, s, to, o, limit);
                    break;
                case NormalizerStep::Kind::kPrepend:
                    if (text.empty()) continue;
                    normalizer_detail::check_growth(s.content.size() + text.size(), limit);
                    to.assign(s.content);
                    to += text;
                    if (o) {
                        o->assign(s.content.size(), 0);
                        std::vector<uint32_t> own;
                        normalizer_detail::own_origins(text, own);
                        o->insert(o->end(), own.begin(), own.end());
                    }
                    break;
            }
            if (written) out.swap(next);
            written = true;
            text = out;
            if (origin) {
                // Through this step's map, then the ones before.
                for (uint32_t& k : step_origin) k = (*origin)[k];
                origin->swap(step_origin);
            }
        }
        if (!written) out.assign(in);
    }

private:
    std::vector<NormalizerStep> steps_;
};

}  // namespace bpe
