// How a char_merges model's ids become text (the rules' "decoder"), as sentencepiece
// decodes and Hugging Face's ByteFallback, Replace, Fuse and Strip decoders do:
//   - a piece gives its text, each `replace.first` in it turned into `replace.second`
//     ("▁" into " ");
//   - a run of byte pieces (<0x00>..<0xFF>) gives its bytes as UTF-8, each byte that
//     starts no valid character one U+FFFD, as sentencepiece's decoder reads them; or,
//     with `whole_runs` (Hugging Face's ByteFallback decoder), a run that is not valid
//     UTF-8 as a whole gives one U+FFFD for each of its bytes;
//   - the unknown piece gives `unk_text` where one is given (sentencepiece's " ⁇ ");
//   - with `drop_special`, the other special tokens give nothing (sentencepiece's control
//     pieces, <s> and </s>), as with skip_special;
//   - up to `strip_start` spaces go from the start of the text, off the pieces that
//     begin it (the space add_dummy_prefix put in); with `strip_each`, every piece loses
//     one leading space while no text has come out (sentencepiece's decode under
//     remove_extra_whitespaces, which dropped every space before the text) in place of
//     strip_start; neither where the ids do not begin the text (a streaming decoder's
//     later calls).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "normalize.h"
#include "split_unicode.h"

namespace bpe {

struct Decoder {
    std::optional<std::pair<std::string, std::string>> replace;
    size_t strip_start = 0;
    std::optional<std::string> unk_text;
    bool whole_runs = false;
    bool drop_special = false;
    bool strip_each = false;
};

// How many bytes at the start of bytes[0, n) a streaming decoder may decode now: all but
// a tail that is the start of a valid UTF-8 character still short of its bytes (later
// byte tokens may finish it). A byte that can start or continue no character is final.
inline size_t settled_bytes(const unsigned char* bytes, size_t n) {
    for (size_t i = 0; i < n;) {
        const unsigned char b = bytes[i];
        const size_t need = b < 0x80 ? 1 : b < 0xC2 ? 0 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : b < 0xF5 ? 4 : 0;
        if (need <= 1 || i + need <= n) {
            i += need <= 1 ? 1 : nfc_detail::decode(bytes + i, bytes + n).len;
            continue;
        }
        // Short: whether what there is could begin a valid character (the second byte's
        // range depends on the first, as in UTF-8's table of well-formed sequences).
        bool prefix = true;
        for (size_t k = i + 1; k < n && prefix; ++k) {
            const unsigned char c = bytes[k];
            unsigned char low = 0x80, high = 0xBF;
            if (k == i + 1) {
                if (b == 0xE0) low = 0xA0;
                if (b == 0xED) high = 0x9F;
                if (b == 0xF0) low = 0x90;
                if (b == 0xF4) high = 0x8F;
            }
            prefix = c >= low && c <= high;
        }
        if (prefix) return i;
        ++i;  // decoded as U+FFFD whatever follows
    }
    return n;
}

// What decoding needs to know of one id.
struct DecodedToken {
    std::string_view bytes;
    bool byte = false;     // a byte piece: `bytes` is its one byte
    bool unknown = false;  // the unknown piece
    bool skip = false;     // a special token left out (skip_special)
};

// The text of n ids; info(id) tells each one's DecodedToken. `start`: the ids begin the
// text, so strip_start applies.
template <class Info>
std::string decode_with(const Decoder& decoder, const uint32_t* ids, size_t n, bool start, Info&& info) {
    std::string out, run;
    size_t strip = start ? decoder.strip_start : 0;
    auto flush_run = [&] {
        const auto* p = reinterpret_cast<const unsigned char*>(run.data());
        if (decoder.whole_runs && !is_valid_utf8(run)) {
            for (size_t i = 0; i < run.size(); ++i) out += "\xEF\xBF\xBD";
            run.clear();
            if (!out.empty()) strip = 0;
            return;
        }
        for (size_t i = 0; i < run.size();) {
            const nfc_detail::Decoded d = nfc_detail::decode(p + i, p + run.size());
            if (d.cp >= nfc_detail::kInvalid) out += nfc_detail::kReplacementCharacter;
            else out.append(run, i, d.len);
            i += d.len;
        }
        run.clear();
        if (!out.empty()) strip = 0;
    };
    auto put_piece = [&](std::string_view text) {
        if (!decoder.strip_each) {
            while (strip > 0 && out.empty() && !text.empty() && text.front() == ' ') text.remove_prefix(1), --strip;
        } else if (start && out.empty() && !text.empty() && text.front() == ' ') {
            text.remove_prefix(1);
        }
        out.append(text);
        if (!out.empty()) strip = 0;
    };
    std::string replaced;
    for (size_t i = 0; i < n; ++i) {
        const DecodedToken t = info(ids[i]);
        if (t.byte) {
            run.append(t.bytes);
            continue;
        }
        flush_run();
        if (t.unknown && decoder.unk_text) {
            out += *decoder.unk_text;
            if (!out.empty()) strip = 0;
            continue;
        }
        if (t.skip) continue;
        if (!decoder.replace || decoder.replace->first.empty() ||
            t.bytes.find(decoder.replace->first) == std::string_view::npos) {
            put_piece(t.bytes);
            continue;
        }
        replaced.clear();
        const std::string& from = decoder.replace->first;
        size_t at = 0;
        for (size_t k = t.bytes.find(from); k != std::string_view::npos; k = t.bytes.find(from, at)) {
            replaced.append(t.bytes.substr(at, k - at));
            replaced += decoder.replace->second;
            at = k + from.size();
        }
        replaced.append(t.bytes.substr(at));
        put_piece(replaced);
    }
    flush_run();
    return out;
}

}  // namespace bpe
