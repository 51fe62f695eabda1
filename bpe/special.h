// Special tokens: strings such as "<|endoftext|>" that stand for one id of their own.
//
// A text is cut at them before anything else, so that no merge crosses or contains
// one: training counts only the text between them, and encoding gives each its id.
// Where several specials start at the same place, the longest wins; the text is
// read left to right, so of two overlapping occurrences the first wins.
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
    uint32_t special;
};

class SpecialTokens {
public:
    SpecialTokens() = default;

    explicit SpecialTokens(std::vector<std::pair<std::string, uint32_t>> tokens) : tokens_(std::move(tokens)) {
        for (auto& [bytes, id] : tokens_) {
            if (bytes.empty()) throw std::invalid_argument("a special token cannot be empty");
            unsigned char first = static_cast<unsigned char>(bytes[0]);
            if (!starts_[first]) ++first_bytes_, first_byte_ = first;
            starts_[first] = true;
        }
        // Longest first, so that the first match at a position is the longest.
        std::stable_sort(tokens_.begin(), tokens_.end(),
                         [](const auto& x, const auto& y) { return x.first.size() > y.first.size(); });
        for (size_t k = 1; k < tokens_.size(); ++k)
            for (size_t j = 0; j < k; ++j)
                if (tokens_[j].first == tokens_[k].first)
                    throw std::invalid_argument("the special token " + tokens_[k].first + " is given twice");
    }

    bool empty() const { return tokens_.empty(); }
    const std::vector<std::pair<std::string, uint32_t>>& tokens() const { return tokens_; }

    // The text cut into segments: ordinary text (never empty) and special tokens, in
    // order, covering the text from start to end.
    std::vector<Segment> segments(std::string_view text) const {
        std::vector<Segment> out;
        size_t text_start = 0;
        for (size_t i = next_start(text, 0); i < text.size(); i = next_start(text, i)) {
            const std::pair<std::string, uint32_t>* match = nullptr;
            for (const auto& token : tokens_)
                if (text.compare(i, token.first.size(), token.first) == 0) {
                    match = &token;
                    break;
                }
            if (match == nullptr) {
                ++i;
                continue;
            }
            if (i > text_start) out.push_back({text_start, i, Segment::kText});
            out.push_back({i, i + match->first.size(), match->second});
            i += match->first.size();
            text_start = i;
        }
        if (text.size() > text_start) out.push_back({text_start, text.size(), Segment::kText});
        return out;
    }

private:
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
    bool starts_[256] = {};  // which bytes begin a special token
    int first_bytes_ = 0;    // how many different bytes do
    unsigned char first_byte_ = 0;
};

}  // namespace bpe
