// Room for the ids that encode_array returns, kept between calls. An array that numpy
// allocates is fresh memory on every call at the sizes a pipeline encodes (the C library
// maps a block of many megabytes anew each time, and the kernel clears each page as it
// is first written, or first compacts memory for a huge one: docs/engine.md, "Memory
// kept between calls", has the measure). So a call that needs kPooledBytes of room or
// more writes its ids into blocks from here: the first thread into the block the array
// is made over, each other thread into a block of its own, copied after the first's once
// all have ended. The array's base is a capsule that gives its block back when the array
// is freed, and the next call writes into pages already there (a block too short for it
// is made longer, its pages kept). A block is cut to the pages of its ids before it is
// kept or lent as an array, so an array holds what numpy's own would; but ids that fill
// less than half the pages a block holds (a call shorter than the one before it) are
// copied into a kept block that fits them, or a new one, and the block is kept whole,
// so that the next call as long as the one before writes into pages already there
// rather than faulting in again the ones a cut gave back. Between calls at
// most kKeptBlocks blocks wait here, of at most kKeptBytes together; the oldest past
// that are unmapped. Small pages: a block asked for huge ones is compacted for by the
// kernel on the fault that wants one, which cost more than it saved. All of it runs
// with the GIL held (the capsule's destructor too), which is its lock. Included by
// _core.cpp only.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <unistd.h>  // sysconf

#include <algorithm>
#include <cstddef>
#include <cstring>
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
        size_t held = 0;  // the bytes at its start whose pages are in memory (written since it was mapped)
        explicit Block(size_t bytes) : region(bytes, false) {}
    };

    // A block of at least `bytes`: the largest kept one (each is cut to the pages written
    // in it, and a call takes the array's block first), made longer where it must be,
    // else a new one.
    static std::unique_ptr<Block> take(size_t bytes) {
        std::deque<std::unique_ptr<Block>>& blocks = kept();
        auto best = blocks.end();
        for (auto it = blocks.begin(); it != blocks.end(); ++it)
            if (best == blocks.end() || (*it)->region.size() > (*best)->region.size()) best = it;
        if (best == blocks.end() || !(*best)->region.resize(std::max(pages(bytes), (*best)->region.size())))
            return std::make_unique<Block>(bytes);
        std::unique_ptr<Block> block = std::move(*best);
        blocks.erase(best);
        return block;
    }

    // A numpy array of the n Ids written at the start of `block`, which goes back to the
    // kept blocks when the array is freed. The block is cut to the pages of the ids
    // first, so that the array holds no more memory, nor address space, than they take;
    // or, where they fill less than half of the pages it holds, they are copied into a
    // block that fits them (the smallest kept one that holds them, else a new one) and
    // it is kept whole.
    template <class Id>
    static py::array_t<Id> array(std::unique_ptr<Block> block, size_t n) {
        const size_t used = pages(n * sizeof(Id));
        if (2 * used <= block->held) {
            std::unique_ptr<Block> fit = take_fitting(used);
            std::memcpy(fit->region.data(), block->region.data(), n * sizeof(Id));
            const size_t held = block->held;
            keep(std::move(block), held);
            block = std::move(fit);
        }
        block->region.resize(used);
        block->held = used;
        py::capsule owner(block.get(), [](void* p) { keep(std::unique_ptr<Block>(static_cast<Block*>(p))); });
        Block* lent = block.release();  // the capsule has it now
        return py::array_t<Id>({py::ssize_t(n)}, {py::ssize_t(sizeof(Id))}, reinterpret_cast<Id*>(lent->region.data()),
                               owner);
    }

    // A block back among the kept ones, cut to the pages of its first `used` bytes (the
    // ones written), or unmapped past the bounds.
    static void keep(std::unique_ptr<Block> block, size_t used) {
        block->region.resize(pages(used));
        block->held = std::min(std::max(block->held, pages(used)), block->region.size());
        keep(std::move(block));
    }

private:
    // The smallest kept block of at least `bytes`, else a new one.
    static std::unique_ptr<Block> take_fitting(size_t bytes) {
        std::deque<std::unique_ptr<Block>>& blocks = kept();
        auto best = blocks.end();
        for (auto it = blocks.begin(); it != blocks.end(); ++it)
            if ((*it)->region.size() >= bytes && (best == blocks.end() || (*it)->region.size() < (*best)->region.size()))
                best = it;
        if (best == blocks.end()) return std::make_unique<Block>(bytes);
        std::unique_ptr<Block> block = std::move(*best);
        blocks.erase(best);
        return block;
    }

    static void keep(std::unique_ptr<Block> block) {
        if (block->region.size() > kKeptBytes) return;
        std::deque<std::unique_ptr<Block>>& blocks = kept();
        blocks.push_back(std::move(block));
        size_t held = 0;
        for (const auto& b : blocks) held += b->region.size();
        while (blocks.size() > kKeptBlocks || held > kKeptBytes) {  // the oldest go first
            held -= blocks.front()->region.size();
            blocks.pop_front();
        }
    }

    // `bytes` rounded up to whole pages, one at least.
    static size_t pages(size_t bytes) {
        static const size_t page = size_t(sysconf(_SC_PAGESIZE));
        return std::max<size_t>(1, (bytes + page - 1) / page) * page;
    }

    // Never destroyed: an array may be freed while the process runs its static destructors.
    static std::deque<std::unique_ptr<Block>>& kept() {
        static auto& blocks = *new std::deque<std::unique_ptr<Block>>;
        return blocks;
    }
};

}  // namespace bindings
