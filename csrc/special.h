// Special tokens: strings such as "<|endoftext|>" that stand for one id of their own.
//
// A text is cut at them before anything else, so that no merge crosses or contains
// one: training counts only the text between them, and encoding gives each its id.
// Where several specials start at the same place, the longest wins; the text is
// read left to right, so of two overlapping occurrences the first wins.
//
// Which specials a call cuts at is the caller's choice (tiktoken's allowed_special):
// a special that is not allowed is ordinary text there, and one that is disallowed
// must not occur in the text at all (find_first says where it does).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace bpe {

// A stretch of a text: ordinary text (special == kText), or one special token.
struct Segment {
    static constexpr uint32_t kText = UINT32_MAX;
    size_t begin, end;
    uint32_t special;  // the special token's id
};

// A choice among the special tokens, by their place in SpecialTokens::tokens().
using SpecialSet = std::vector<bool>;

class SpecialTokens {
public:
    SpecialTokens() = default;

    // tokens: each special's bytes and id, in the order given (which is the order
    // tokens() keeps). Throws std::invalid_argument for an empty or repeated one.
    explicit SpecialTokens(std::vector<std::pair<std::string, uint32_t>> tokens) : tokens_(std::move(tokens)) {
        for (size_t k = 0; k < tokens_.size(); ++k) {
            const std::string& bytes = tokens_[k].first;
            if (bytes.empty()) throw std::invalid_argument("a special token cannot be empty");
            for (size_t j = 0; j < k; ++j)
                if (tokens_[j].first == bytes)
                    throw std::invalid_argument("the special token " + bytes + " is given twice");
            unsigned char first = static_cast<unsigned char>(bytes[0]);
            if (!starts_[first]) ++first_bytes_, first_byte_ = first;
            starts_[first] = true;
            longest_first_.push_back(k);
        }
        // Longest first, so that the first match at a position is the longest.
        std::stable_sort(longest_first_.begin(), longest_first_.end(),
                         [&](size_t x, size_t y) { return tokens_[x].first.size() > tokens_[y].first.size(); });
    }

    bool empty() const { return tokens_.empty(); }
    size_t size() const { return tokens_.size(); }
    const std::vector<std::pair<std::string, uint32_t>>& tokens() const { return tokens_; }
    SpecialSet all() const { return SpecialSet(tokens_.size(), true); }
    SpecialSet none() const { return SpecialSet(tokens_.size(), false); }

    // The text cut into segments: ordinary text (never empty) and the specials that
    // `allowed` holds, in order, covering the text from start to end.
    std::vector<Segment> segments(std::string_view text, const SpecialSet& allowed) const {
        std::vector<Segment> out;
        size_t text_start = 0;
        if (std::find(allowed.begin(), allowed.end(), true) != allowed.end()) {
            for (size_t i = next_start(text, 0); i < text.size(); i = next_start(text, i)) {
                const auto* match = match_at(text, i, allowed);
                if (match == nullptr) {
                    ++i;
                    continue;
                }
                if (i > text_start) out.push_back({text_start, i, Segment::kText});
                out.push_back({i, i + match->first.size(), match->second});
                i += match->first.size();
                text_start = i;
            }
        }
        if (text.size() > text_start) out.push_back({text_start, text.size(), Segment::kText});
        return out;
    }

    // The place in tokens() of the first special of `which` that occurs anywhere in
    // the text (overlaps included), or size() when none does.
    size_t find_first(std::string_view text, const SpecialSet& which) const {
        if (std::find(which.begin(), which.end(), true) == which.end()) return size();
        for (size_t i = next_start(text, 0); i < text.size(); i = next_start(text, i + 1))
            if (const auto* match = match_at(text, i, which)) return size_t(match - tokens_.data());
        return size();
    }

private:
    // The longest special of `which` that starts at i, or nullptr.
    const std::pair<std::string, uint32_t>* match_at(std::string_view text, size_t i, const SpecialSet& which) const {
        for (size_t k : longest_first_)
            if (which[k] && text.compare(i, tokens_[k].first.size(), tokens_[k].first) == 0) return &tokens_[k];
        return nullptr;
    }

    // Where the next special could begin, from i: memchr when all begin with the
    // same byte (as "<|pad|>" and "<|endoftext|>" do), which is as fast as memory.
    size_t next_start(std::string_view text, size_t i) const {
        if (i >= text.size()) return text.size();
        if (first_bytes_ == 1) {
            const void* found = std::memchr(text.data() + i, first_byte_, text.size() - i);
            return found ? static_cast<const char*>(found) - text.data() : text.size();
        }
        while (i < text.size() && !starts_[static_cast<unsigned char>(text[i])]) ++i;
        return i;
    }

    std::vector<std::pair<std::string, uint32_t>> tokens_;
    std::vector<size_t> longest_first_;  // places in tokens_, longest special first
    bool starts_[256] = {};              // which bytes begin a special token
    int first_bytes_ = 0;                // how many different bytes do
    unsigned char first_byte_ = 0;
};

}  // namespace bpe
