// The ids an encoder writes: a vector that grows without clearing what it adds.
//
// The encoder keeps room ahead of the ids it writes (a store of three ids writes four)
// and writes every id before anything reads it. std::vector's resize clears the room it
// adds: four bytes an id written twice (docs/design-notes.md has what it cost). Ids
// differs from std::vector<uint32_t> only there: resize(n) and Ids(n) leave the new ids
// unwritten, and what passes a value (resize(n, v), push_back, insert) writes it as
// always.
#pragma once

#include <cstdint>
#include <memory>
#include <new>
#include <utility>
#include <vector>

namespace bpe {

// std::allocator, but an element made with no value is left as the memory was
// (default-initialized, which for an integer writes nothing).
template <class T>
struct UnclearedAllocator : std::allocator<T> {
    template <class U>
    struct rebind {
        using other = UnclearedAllocator<U>;
    };
    UnclearedAllocator() = default;
    template <class U>
    UnclearedAllocator(const UnclearedAllocator<U>&) noexcept {}

    template <class U>
    void construct(U* p) noexcept(noexcept(::new (static_cast<void*>(p)) U)) {
        ::new (static_cast<void*>(p)) U;
    }
    template <class U, class... Args>
    void construct(U* p, Args&&... args) {
        ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
    }
};

using Ids = std::vector<uint32_t, UnclearedAllocator<uint32_t>>;

}  // namespace bpe
