// Memory for the engine's large tables that are read at random (the encoder's table of
// chunks and its pool, the ranks of the pairs, the shared ints of the bindings, the
// trainer's words and pairs): zeroed pages from mmap, in 2 MB pages where the system
// gives them. With 4 KB pages a table of megabytes spans thousands of TLB entries, and a
// random probe misses the TLB as often as the cache (docs/design-notes.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>

#include <sys/mman.h>

#include "compiler.h"

namespace bpe {

inline constexpr size_t kHugePage = size_t(2) << 20;

// `bytes` of zeroed pages from mmap, taking memory only where they are written
// (MAP_NORESERVE). With `huge`, 2 MB or more start on a 2 MB boundary and ask for huge
// pages, so that a table of megabytes takes a few TLB entries, not thousands. Freed with
// munmap(p, bytes).
inline char* map_pages(size_t bytes, bool huge) {
    size_t extra = huge && bytes >= kHugePage ? kHugePage : 0;
    void* p = mmap(nullptr, bytes + extra, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    char* start = static_cast<char*>(p);
    if (extra) {  // keep the 2 MB-aligned part, give back the rest
        char* aligned = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(start) + kHugePage - 1) & ~(kHugePage - 1));
        if (aligned > start) munmap(start, size_t(aligned - start));
        size_t tail = size_t(start + bytes + extra - (aligned + bytes));
        if (tail) munmap(aligned + bytes, tail);
        start = aligned;
#if defined(MADV_HUGEPAGE)
        madvise(start, bytes, MADV_HUGEPAGE);
#endif
    }
    return start;
}

// Zeroed memory from map_pages, unmapped when it goes. Pages take memory only where they
// are written, so a region may be address space reserved for what may come (the pool,
// the shared ints).
class Region {
public:
    Region() = default;
    explicit Region(size_t bytes, bool huge) : data_(map_pages(bytes, huge)), size_(bytes) {}
    ~Region() {
        if (data_) munmap(data_, size_);
    }
    Region(const Region&) = delete;
    Region& operator=(const Region&) = delete;

    char* data() const { return data_; }
    size_t size() const { return size_; }

    // Makes the region `bytes` long (a whole number of pages), keeping what is written in
    // what stays: a shorter one gives the rest back to the system; a longer one is mapped
    // anew where the system can move pages (mremap, Linux), and may move. False, and the
    // region as it was, where it cannot.
    bool resize(size_t bytes) {
        if (bytes == 0 || bytes == size_) return bytes == size_;
        if (bytes < size_) {
            if (munmap(data_ + bytes, size_ - bytes) != 0) return false;
            size_ = bytes;
            return true;
        }
#if defined(__linux__)
        void* p = mremap(data_, size_, bytes, MREMAP_MAYMOVE);
        if (p == MAP_FAILED) return false;
        data_ = static_cast<char*>(p);
        size_ = bytes;
        return true;
#else
        return false;
#endif
    }

private:
    char* data_ = nullptr;
    size_t size_ = 0;
};

// The allocator of the trainer's large arrays (std::vector<T, HugePageAllocator<T>>):
// an array of 2 MB or more on map_pages' huge pages, as a Region is; a smaller one (and
// any under AddressSanitizer) from operator new. Training reads its words and its pairs
// at random, megabytes of them, and fills them as it goes (docs/design-notes.md).
template <class T>
struct HugePageAllocator {
    using value_type = T;
    HugePageAllocator() = default;
    template <class U>
    HugePageAllocator(const HugePageAllocator<U>&) {}

    T* allocate(size_t n) {
        if (n > SIZE_MAX / sizeof(T)) throw std::bad_alloc();
        if (!mapped(n)) return static_cast<T*>(::operator new(n * sizeof(T)));
        return reinterpret_cast<T*>(map_pages(n * sizeof(T), true));
    }
    void deallocate(T* p, size_t n) {
        if (!mapped(n)) ::operator delete(p);
        else munmap(p, n * sizeof(T));
    }
    template <class U>
    bool operator==(const HugePageAllocator<U>&) const { return true; }
    template <class U>
    bool operator!=(const HugePageAllocator<U>&) const { return false; }

private:
    static bool mapped(size_t n) {
#if defined(BPE_ASAN)
        return false;
#else
        return n * sizeof(T) >= kHugePage;
#endif
    }
};

}  // namespace bpe
