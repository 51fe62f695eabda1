// How a char_merges model's ids become text (the rules' "decoder"), as sentencepiece
// decodes and Hugging Face's ByteFallback, Replace, Fuse and Strip decoders do:
//   - a piece gives its text, each `replace.first` in it turned into `replace.second`
//     ("▁" into " ");
//   - a run of byte pieces (<0x00>..<0xFF>) gives its bytes as UTF-8, each byte that
//     starts no valid character one U+FFFD, as sentencepiece's decoder reads them;
//   - the unknown piece gives `unk_text` where one is given (sentencepiece's " ⁇ ");
//   - up to `strip_start` spaces go from the start of the text, off the pieces that
//     begin it (the space add_dummy_prefix put in); not where the ids do not begin the
//     text (a streaming decoder's later calls).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "normalize.h"

namespace bpe {

struct Decoder {
    std::optional<std::pair<std::string, std::string>> replace;
    size_t strip_start = 0;
    std::optional<std::string> unk_text;
};

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
        for (size_t i = 0; i < run.size();) {
            const nfc_detail::Decoded d = nfc_detail::decode(p + i, p + run.size());
            if (d.cp >= nfc_detail::kInvalid) out += "\xEF\xBF\xBD";  // U+FFFD
            else out.append(run, i, d.len);
            i += d.len;
        }
        run.clear();
        if (!out.empty()) strip = 0;
    };
    auto put_piece = [&](std::string_view text) {
        while (strip > 0 && out.empty() && !text.empty() && text.front() == ' ') text.remove_prefix(1), --strip;
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
