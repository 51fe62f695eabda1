// A batch's ids as one padded matrix: each text's ids, cut to fit if asked, between
// ids put before and after (prefix and suffix: a BOS, an EOS), and padded to one width.
//
// The rules (those of the padded batches that training loops already call, so that a
// caller switching gets the same matrix):
//   - With truncate, a row's text keeps at most max_length - prefix - suffix ids, the
//     first ones (the last ones with truncate_left); prefix and suffix are kept whole.
//     Without truncate, rows are never cut, and max_length only serves pad_to_max_length.
//   - The width is max_length with pad_to_max_length (a longer row is then an error),
//     else the longest row's length.
//   - Padding goes after the row, or before it with pad_left.
// The checks that need no ids are in check(); the one that needs them (a row longer
// than a width it must fit) in width().
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace bpe {

struct PadOptions {
    uint32_t pad_id = 0;
    std::optional<size_t> max_length;
    bool pad_to_max_length = false;
    bool truncate = false;
    bool pad_left = false;
    bool truncate_left = false;
    std::vector<uint32_t> prefix, suffix;

    size_t added() const { return prefix.size() + suffix.size(); }

    // std::invalid_argument naming the option, for what no text can make right.
    void check() const {
        if ((truncate || pad_to_max_length) && !max_length)
            throw std::invalid_argument(std::string(truncate ? "truncate" : "pad_to_max_length") +
                                        "=True needs max_length");
        if (truncate && added() > *max_length)
            throw std::invalid_argument("max_length=" + std::to_string(*max_length) + " leaves no room for the " +
                                        std::to_string(added()) + " ids of prefix and suffix");
    }

    // How many of a text's n ids its row keeps.
    size_t kept(size_t n) const { return truncate ? std::min(n, *max_length - added()) : n; }

    // The length of a row whose text has n ids.
    size_t row_length(size_t n) const { return added() + kept(n); }

    // The matrix's width, from the longest row: std::invalid_argument when that row
    // cannot fit max_length and pad_to_max_length asks that it must.
    size_t width(size_t longest) const {
        if (!pad_to_max_length) return longest;
        if (longest > *max_length)
            throw std::invalid_argument("a row is " + std::to_string(longest) + " ids long, more than max_length=" +
                                        std::to_string(*max_length) +
                                        " that pad_to_max_length pads to: add truncate=True or raise max_length");
        return *max_length;
    }

    // Writes the row of a text's n ids into row[0 .. width), padded.
    template <class Id>
    void write_row(Id* row, size_t width, const uint32_t* ids, size_t n) const {
        const size_t keep = kept(n), length = added() + keep;
        const size_t from = truncate_left ? n - keep : 0;
        Id* at = pad_left ? row + (width - length) : row;
        if (pad_left) std::fill(row, at, Id(pad_id));
        at = std::copy(prefix.begin(), prefix.end(), at);
        at = std::copy(ids + from, ids + from + keep, at);
        at = std::copy(suffix.begin(), suffix.end(), at);
        if (!pad_left) std::fill(at, row + width, Id(pad_id));
    }
};

}  // namespace bpe
