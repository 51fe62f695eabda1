// THROWAWAY: stand-ins for the nfc, added and onig helpers' interfaces (common.md),
// deleted when their branches are merged. Not the real behaviour.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "special.h"

namespace bpe {

inline bool is_nfc(std::string_view) { return true; }
inline void nfc(std::string_view in, std::string& out, std::vector<uint32_t>* origin = nullptr) {
    out.assign(in);
    if (origin) {
        origin->clear();
        for (size_t k = 0; k <= in.size(); ++k) origin->push_back(uint32_t(k));
    }
}

struct AddedToken {
    std::string content;
    uint32_t id;
    bool special = false, normalized = false, lstrip = false, rstrip = false, single_word = false;
};

class AddedTokens {
public:
    AddedTokens() = default;
    explicit AddedTokens(std::vector<AddedToken> tokens) : tokens_(std::move(tokens)) {
        for (auto& t : tokens_)
            if (t.content.empty()) throw std::invalid_argument("an added token cannot be empty");
    }
    bool empty() const { return tokens_.empty(); }
    const std::vector<AddedToken>& tokens() const { return tokens_; }
    template <class Allowed>
    void segments(std::string_view text, bool normalized, Allowed&& allowed, std::vector<Segment>& out) const {
        size_t start = 0;
        for (size_t i = 0; i < text.size();) {
            size_t best = SIZE_MAX, len = 0;
            for (size_t k = 0; k < tokens_.size(); ++k) {
                const AddedToken& t = tokens_[k];
                if (t.normalized != normalized || (t.special && !allowed(k))) continue;
                if (t.content.size() > len && text.substr(i, t.content.size()) == t.content) best = k, len = t.content.size();
            }
            if (best == SIZE_MAX) {
                ++i;
                continue;
            }
            if (i > start) out.push_back({start, i, Segment::kText});
            out.push_back({i, i + len, tokens_[best].id});
            i += len;
            start = i;
        }
        if (text.size() > start) out.push_back({start, text.size(), Segment::kText});
    }

private:
    std::vector<AddedToken> tokens_;
};

}  // namespace bpe
