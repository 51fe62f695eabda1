// Room for the ids that encode_array returns, kept between calls. An array that numpy
// allocates is fresh memory on every call at the sizes a pipeline encodes (the C library
// maps a block of many megabytes anew each time, and the kernel clears each page as it
// is first written), and on a 40 MB text that was a tenth of a call on two threads. So
// a call that needs kPooledBytes of room or more writes its ids into blocks from here:
// the first thread into the block the array is made over, each other thread into a
// block of its own, copied after the first's once all have ended. The array's base is
// a capsule that gives its block back when the array is freed, and the next call writes
// into pages already there. An array holds no memory past its ids (those pages are
// released before it is made), so it holds what numpy's own would. Between calls at
// most kKeptBlocks blocks wait here, holding at most kKeptBytes together; the oldest
// past that are unmapped. Small pages: a block asked for huge ones is compacted for by
// the kernel on the fault that wants one, which cost more than it saved. All of it runs
// with the GIL held (the capsule's destructor too), which is its lock. Included by
// _core.cpp only.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <sys/mman.h>

#include <cstddef>
#include <deque>
#include <memory>

#include "region.h"

namespace bindings {

namespace py = pybind11;

class OutputBlocks {
public:
    static constexpr size_t kPooledBytes = size_t(1) << 20;
    static constexpr size_t kKeptBytes = size_t(64) << 20;
    static constexpr size_t kKeptBlocks = 8;

    struct Block {
        bpe::Region region;
        size_t used = 0;  // the bytes written in it: the pages it holds
        explicit Block(size_t bytes) : region(bytes, false) {}
    };

    // A block of at least `bytes`: of the kept ones that hold them, the one with the
    // most pages written (a call takes the array's block first), else a new one.
    static std::unique_ptr<Block> take(size_t bytes) {
        std::deque<std::unique_ptr<Block>>& blocks = kept();
        auto best = blocks.end();
        for (auto it = blocks.begin(); it != blocks.end(); ++it)
            if ((*it)->region.size() >= bytes && (best == blocks.end() || (*it)->used > (*best)->used)) best = it;
        if (best == blocks.end()) return std::make_unique<Block>(bytes);
        std::unique_ptr<Block> block = std::move(*best);
        blocks.erase(best);
        return block;
    }

    // A numpy array of the n Ids written at the start of `block`, which goes back to the
    // kept blocks when the array is freed. The pages past the ids are released first.
    template <class Id>
    static py::array_t<Id> array(std::unique_ptr<Block> block, size_t n) {
        constexpr size_t kPage = 4096;
        block->used = (n * sizeof(Id) + kPage - 1) / kPage * kPage;
        if (block->used < block->region.size())
            madvise(block->region.data() + block->used, block->region.size() - block->used, MADV_DONTNEED);
        py::capsule owner(block.get(), [](void* p) { keep(std::unique_ptr<Block>(static_cast<Block*>(p))); });
        Block* lent = block.release();  // the capsule has it now
        return py::array_t<Id>({py::ssize_t(n)}, {py::ssize_t(sizeof(Id))}, reinterpret_cast<Id*>(lent->region.data()),
                               owner);
    }

    // A block back among the kept ones (or unmapped, past the bounds).
    static void keep(std::unique_ptr<Block> block) {
        if (block->used > kKeptBytes) return;
        std::deque<std::unique_ptr<Block>>& blocks = kept();
        blocks.push_back(std::move(block));
        size_t held = 0;
        for (const auto& b : blocks) held += b->used;
        while (blocks.size() > kKeptBlocks || held > kKeptBytes) {  // the oldest go first
            held -= blocks.front()->used;
            blocks.pop_front();
        }
    }

private:
    // Never destroyed: an array may be freed while the process runs its static destructors.
    static std::deque<std::unique_ptr<Block>>& kept() {
        static auto& blocks = *new std::deque<std::unique_ptr<Block>>;
        return blocks;
    }
};

}  // namespace bindings
