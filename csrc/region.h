// Memory for the engine's large tables that are read at random (the encoder's table of
// chunks and its pool, the ranks of the pairs, the shared ints of the bindings): zeroed
// pages from mmap, in 2 MB pages where the system gives them. With 4 KB pages a table of
// megabytes spans thousands of TLB entries, and a random probe misses the TLB as often as
// the cache (docs/design-notes.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>

#include <sys/mman.h>

namespace bpe {

// Zeroed memory from mmap: with `huge`, a region of 2 MB or more starts on a 2 MB
// boundary and asks for huge pages, so that a table of megabytes takes a few TLB entries,
// not thousands. Pages take memory only where they are written (MAP_NORESERVE), so a
// region may be address space reserved for what may come (the pool, the shared ints).
class Region {
public:
    Region() = default;
    explicit Region(size_t bytes, bool huge) {
        constexpr size_t kHuge = size_t(2) << 20;
        size_ = bytes;
        size_t extra = huge && bytes >= kHuge ? kHuge : 0;
        void* p = mmap(nullptr, bytes + extra, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                       -1, 0);
        if (p == MAP_FAILED) throw std::bad_alloc();
        char* start = static_cast<char*>(p);
        if (extra) {  // keep the 2 MB-aligned part, give back the rest
            char* aligned = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(start) + kHuge - 1) & ~(kHuge - 1));
            if (aligned > start) munmap(start, size_t(aligned - start));
            size_t tail = size_t(start + bytes + extra - (aligned + bytes));
            if (tail) munmap(aligned + bytes, tail);
            start = aligned;
#if defined(MADV_HUGEPAGE)
            madvise(start, bytes, MADV_HUGEPAGE);
#endif
        }
        data_ = start;
    }
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

}  // namespace bpe
