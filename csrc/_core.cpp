// The compiled core of the `bpe` package, bound to Python with pybind11 as `bpe._core`:
// splitting text into chunks, training merges, and encoding and decoding with them.
//
// Conventions of this layer (the Python class bpe.BPETokenizer sits on top and takes
// str only): texts are bytes (or a contiguous buffer of bytes) or str, read in place
// (Text below), special tokens are str, ids are ints (or numpy integers). `special_tokens` is always a list of str, numbered after the merges in
// the order given; `token_ids` renumbers every token (bytes, merges, specials) when a
// vocabulary has its own numbering. `allowed_special` and `disallowed_special` mean
// what they mean in tiktoken. `threads=0` means as many threads as the text's size pays
// for, everywhere, and a short text none but the caller's (bpe::threads_for, parallel.h).
//
// This file is the boundary: it checks what Python hands over, turns it into views
// and vectors, lets go of the GIL while the C++ works, and turns the results back
// into Python objects. The work itself is in the engine's headers: split.h (chunks),
// train.h and chunk_counter.h (training), encoder.h and vocabulary.h (encoding),
// padding.h (a batch's ids as one padded matrix). The machinery of the boundary is in
// headers of its own: py_gil.h (the GIL and signals),
// py_args.h (numbers and shapes of arguments), py_text.h (bytes and str read in place),
// py_tokens.h (merges, special tokens and ids, and ids back as lists and arrays).
//
// The file reads: what several bindings share (encoding a text, training a counter,
// counts as data), then one function per family of bindings, each binding a named
// function or a one-line lambda: the module's functions, training (ChunkCounter),
// the Encoder's encoding, its vocabulary and decoding; then the module itself.
#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <tuple>
#include <vector>

#include "encoder.h"
#include "padding.h"
#include "py_added.h"
#include "py_args.h"
#include "py_gil.h"
#include "py_huggingface.h"
#include "py_normalize.h"
#include "py_output.h"
#include "py_rules.h"
#include "py_text.h"
#include "py_tokens.h"
#include "ranks.h"
#include "split.h"
#include "train.h"
#include "vocabulary.h"

#if !defined(_WIN32)
#include <pthread.h>  // pthread_atfork
#endif

namespace py = pybind11;

namespace {

using namespace bindings;

// --- what several bindings share ------------------------------------------------------

// What every encode binding does once it holds the text's UTF-8: check the special
// tokens against allowed_special and disallowed_special, then encode on `workers`
// threads without the GIL. The ids come back in parts, one per thread.
std::vector<bpe::Ids> encode_text(const bpe::Encoder& encoder, std::string_view text, py::handle allowed_special,
                                  py::handle disallowed_special, unsigned workers) {
    SpecialChoice choice(encoder, allowed_special, disallowed_special);
    choice.check(encoder, text, bpe::threads_for(text.size(), workers));
    return without_gil(text.size(), [&](bpe::Interrupt* interrupt) {
        return encoder.encode_parts(text, choice.allowed, workers, interrupt);
    });
}

// A batch's ids as the threads left them: thread k encoded documents bounds[k] to
// bounds[k + 1] (share_batch: runs of about equal bytes) into ids[k], and ends[k] says
// where each of those documents' ids end in ids[k].
struct BatchIds {
    std::vector<size_t> bounds;
    std::vector<bpe::Ids> ids;
    std::vector<std::vector<size_t>> ends;

    size_t documents() const { return bounds.back(); }
};

// What every batch binding does once it holds the texts: check them all for special
// tokens, then encode them on `threads` threads (never more than there are texts)
// without the GIL, each thread a run of consecutive documents (Encoder::encode_many),
// so that the ids equal one thread's.
BatchIds encode_batch_ids(const bpe::Encoder& self, const TextBatch& batch, py::handle allowed_special,
                          py::handle disallowed_special, py::handle threads) {
    SpecialChoice choice(self, allowed_special, disallowed_special);
    choice.check(self, batch.views());
    const std::string_view* texts = batch.views().data();
    BatchIds out;
    out.bounds = bpe::share_batch(texts, batch.size(), bpe::threads_for(batch.bytes(), threads_asked(threads)));
    const size_t runs = out.bounds.size() - 1;
    out.ids.resize(runs);
    out.ends.resize(runs);
    without_gil(batch.bytes(), [&](bpe::Interrupt* interrupt) {
        bpe::run_threads(runs, [&](size_t k) {
            // Vectors of its own on each thread's stack, moved in place at the end: side by
            // side in `out`, they would share cache lines (false sharing: encoder.h).
            bpe::Ids ids;
            std::vector<size_t> ends;
            self.encode_many(texts + out.bounds[k], out.bounds[k + 1] - out.bounds[k], choice.allowed, ids, ends,
                             interrupt);
            out.ids[k] = std::move(ids);
            out.ends[k] = std::move(ends);
        });
        return 0;
    });
    return out;
}

// A batch's ids as a list of lists of ints, one a document. Python's cycle collector is
// paused meanwhile (unless it was off already): every 700 new lists set off a
// collection that visited every int in them, though lists of ints can hold no cycle
// (docs/design-notes.md). The lists are counted all the same, so the next collection,
// after the call, sees them once.
py::list batch_to_lists(const BatchIds& batch) {
    struct CollectorPaused {
        int was_on = PyGC_Disable();
        ~CollectorPaused() {
            if (was_on) PyGC_Enable();
        }
    } paused;
    py::list out(batch.documents());
    for (size_t k = 0; k + 1 < batch.bounds.size(); ++k) {
        size_t begin = 0;
        for (size_t j = 0; j < batch.ends[k].size(); ++j) {
            size_t end = batch.ends[k][j];
            PyList_SET_ITEM(out.ptr(), batch.bounds[k] + j, ids_to_list(batch.ids[k].data() + begin, end - begin).release().ptr());
            begin = end;
        }
    }
    return out;
}

// A batch's ids flat, as (ids, offsets): one numpy array of every document's ids end to
// end (ids_to_array's type), and n + 1 int64 offsets, document i's ids being
// ids[offsets[i]:offsets[i + 1]]: what a token file or a training loader wants.
py::tuple batch_to_flat(const BatchIds& batch, size_t n_vocab) {
    py::array_t<int64_t> offsets(py::ssize_t(batch.documents() + 1));
    int64_t* offset = offsets.mutable_data();
    offset[0] = 0;
    int64_t base = 0;
    for (size_t k = 0; k + 1 < batch.bounds.size(); ++k) {
        for (size_t j = 0; j < batch.ends[k].size(); ++j) offset[batch.bounds[k] + j + 1] = base + int64_t(batch.ends[k][j]);
        base += int64_t(batch.ids[k].size());
    }
    return py::make_tuple(ids_to_array(batch.ids, n_vocab), offsets);
}

// Trains on what counter has counted, without the GIL. Every few hundred merges it
// checks for signals (a handler's exception, Ctrl-C's, stops training and is raised)
// and calls progress (unless None) with the merges made; its exception stops it too.
std::vector<bpe::Pair> train_counted(bpe::ChunkCounter& counter, long long num_merges, py::object progress) {
    bool check_signals = on_main_thread();
    GilReleased released;
    SignalCheck check(released, check_signals);
    std::function<bool(size_t)> report;
    if (check_signals || !progress.is_none())
        report = [&](size_t done) {
            check();
            if (!progress.is_none()) released.with_gil([&] { progress(done); });
            return true;
        };
    return bpe::train(counter, num_merges, report);
}

// Where characters [begin, end) of a str hold a lone surrogate, or -1. Only the
// question, without the UTF-8's size that StrChars::utf8_size works out too: a block
// of characters is tested with one OR, which the compiler makes SIMD, and only a block
// that holds one is searched. A str of one byte a character cannot hold one.
Py_ssize_t lone_surrogate(const StrChars& chars, Py_ssize_t begin, Py_ssize_t end) {
    if (chars.kind == PyUnicode_1BYTE_KIND) return -1;
    return chars.with_chars(begin, end, [](auto text, Py_ssize_t b, Py_ssize_t e) -> Py_ssize_t {
        constexpr Py_ssize_t kBlock = 64;
        // An int, not a bool: the compiler made no SIMD of a bool's OR.
        auto is_surrogate = [](uint32_t c) { return uint32_t(c - 0xd800u < 0x800u); };
        for (Py_ssize_t i = b; i < e; i += kBlock) {
            const Py_ssize_t stop = std::min(e, i + kBlock);
            uint32_t any = 0;
            if (stop - i == kBlock)
                for (Py_ssize_t j = 0; j < kBlock; ++j) any |= is_surrogate(text[i + j]);
            else
                any = 1;  // the last, short block: searched below
            if (!any) continue;
            for (Py_ssize_t j = i; j < stop; ++j)
                if (is_surrogate(text[j])) return j;
        }
        return -1;
    });
}

// Counts one str that is not ASCII, without its UTF-8 ever being whole: it is cut at
// safe cuts (StrCuts) into pieces of about kStrPiece characters at most, and each
// counting thread makes a piece UTF-8 in a buffer of its own and counts it there and
// then, while it is in the cache (ChunkCounter::add_written), so the pieces count
// exactly as the whole would. A regex rule has no certain boundaries to cut at
// (SplitRule::cuts_at_safe_cuts): its str is made UTF-8 whole, on one thread.
// Returns the distinct chunks dropped to keep to the budget, as ChunkCounter::add does.
uint64_t add_str_in_pieces(bpe::ChunkCounter& counter, py::handle text, unsigned workers) {
    const StrChars chars(text);
    // Under a budget, pieces short enough that a round of counting
    // (ChunkCounter::round_bytes) holds one for each thread, whatever their characters.
    const size_t round_chars = std::max<size_t>(counter.round_bytes() / workers, 1 << 16) / chars.max_utf8(1);
    const auto size = Py_ssize_t(std::min(bpe::piece_size(size_t(chars.size), workers, kStrPiece), round_chars));
    const std::vector<Py_ssize_t> at = counter.pattern().cuts_at_safe_cuts() ? StrCuts(text, counter.specials()).pieces(size)
                                                                             : std::vector<Py_ssize_t>{0, chars.size};
    const size_t pieces = at.size() - 1;
    // The UTF-8 each piece may take, by which the rounds are made: at most 2 to 4 bytes
    // a character.
    std::vector<size_t> bytes(pieces);
    for (size_t i = 0; i < pieces; ++i) bytes[i] = chars.max_utf8(at[i + 1] - at[i]);
    const size_t room = *std::max_element(bytes.begin(), bytes.end());
    // A str refused for a lone surrogate counts nothing, as a list of strs refused for one
    // does not. Without a budget, the str is counted into a counter of its own, whose
    // counts go to `counter` only once every piece was made UTF-8, which finds any lone
    // surrogate on the way: the str is read once. Under a budget, which each round's
    // count keeps to as it goes, the str is read first, on all threads, for a lone
    // surrogate and for the bytes of each piece's UTF-8, which make its rounds as large
    // as the budget allows, not two to four times smaller.
    std::optional<bpe::ChunkCounter> own;
    if (counter.max_memory() == 0) {
        own.emplace(counter.pattern(), counter.specials());
    } else {
        std::vector<int64_t> sizes(pieces);
        {
            GilReleased released;
            std::atomic<size_t> next{0};
            bpe::run_threads(workers, [&](size_t) {
                for (size_t i = next++; i < pieces; i = next++) sizes[i] = chars.utf8_size(at[i], at[i + 1]);
            });
        }
        for (size_t i = 0; i < pieces; ++i) {
            if (sizes[i] < 0) throw_lone_surrogate(Py_ssize_t(-1 - sizes[i]));
            bytes[i] = size_t(sizes[i]);
        }
    }
    bpe::ChunkCounter& into = own ? *own : counter;
    std::vector<Py_ssize_t> surrogates(pieces, -1);  // where a piece holds one, or -1
    uint64_t dropped = without_gil(size_t(chars.size), [&](bpe::Interrupt* interrupt) -> uint64_t {
        auto write = [&](size_t i, char* out) {
            int64_t written = chars.write_utf8(at[i], at[i + 1], out);
            if (written < 0) surrogates[i] = Py_ssize_t(-1 - written);
            return written;
        };
        if (pieces != 1) return into.add_written(bytes, room, write, workers, interrupt);
        // One piece (a short str, or a regex rule's): made whole, then counted as bytes
        // are, on all threads where special tokens cut it.
        std::unique_ptr<char[]> utf8(new char[room]);  // not zeroed: written before read
        int64_t written = write(0, utf8.get());
        if (written < 0) return 0;
        return into.add({std::string_view(utf8.get(), size_t(written))}, workers, interrupt);
    });
    for (Py_ssize_t position : surrogates)  // the first piece's is the first in the str
        if (position >= 0) throw_lone_surrogate(position);
    if (own)
        without_gil(own->size() * 16, [&](bpe::Interrupt*) { counter.take_counts(std::move(*own), workers); return 0; });
    return dropped;
}

// ---- counts as data --------------------------------------------------------------------
//
// A counter's counts cross processes as three buffers, not one Python object a chunk:
// the bytes of every distinct chunk end to end, int64 offsets (one more than the
// chunks: chunk k is bytes[offsets[k]:offsets[k + 1]]), and int64 counts.

// The warning add, add_counts and merge give when keeping to the budget dropped chunks:
// a bpe.core.PruningWarning made from the numbers, so that callers read its fields and
// its text is written in one place, beside its class.
void warn_dropped(const bpe::ChunkCounter& counter, uint64_t dropped) {
    if (dropped == 0) return;
    py::object warning = py::module_::import("bpe.core").attr("PruningWarning")(
        counter.max_memory(), dropped, counter.pruned().threshold, counter.pruned().chunks);
    // stacklevel 1 is the Python code that called the binding (a C++ call has no frame).
    py::module_::import("warnings").attr("warn")(warning, py::arg("stacklevel") = 1);
}

py::tuple counts_to_buffers(const bpe::ChunkCounter& counter) {
    size_t n = counter.size(), total = 0;
    counter.for_each([&](std::string_view chunk, int64_t) { total += chunk.size(); });
    PyObject* made = PyBytes_FromStringAndSize(nullptr, Py_ssize_t(total));
    if (made == nullptr) throw py::error_already_set();
    py::bytes chunks = py::reinterpret_steal<py::bytes>(made);
    py::array_t<int64_t> offsets(n + 1), counts(n);
    char* out = PyBytes_AS_STRING(chunks.ptr());
    int64_t* offset = offsets.mutable_data();
    int64_t* count = counts.mutable_data();
    size_t at = 0, k = 0;
    offset[0] = 0;
    counter.for_each([&](std::string_view chunk, int64_t n) {
        std::memcpy(out + at, chunk.data(), chunk.size());
        at += chunk.size();
        offset[k + 1] = int64_t(at);
        count[k++] = n;
    });
    return py::make_tuple(chunks, offsets, counts);
}

// A count past 2^48 is far more than any corpus has chunks: refusing it keeps sums of
// many counters from overflowing.
constexpr int64_t kMaxCount = int64_t(1) << 48;

// Adds counts given as buffers (see above) to counter, after checking all of them, so
// that a refused call adds nothing; a signal (Ctrl-C) stops it before it adds any
// either. `n` counts, n + 1 offsets.
uint64_t add_buffers(bpe::ChunkCounter& counter, std::string_view bytes, const int64_t* offsets, size_t n_offsets,
                     const int64_t* counts, size_t n, unsigned threads) {
    if (n_offsets != n + 1)
        throw py::value_error("offsets must hold one more than the counts (" + std::to_string(n + 1) + "), got " +
                              std::to_string(n_offsets));
    if (offsets[0] != 0) throw py::value_error("offsets must start at 0, got " + std::to_string(offsets[0]));
    if (offsets[n] != int64_t(bytes.size()))
        throw py::value_error("offsets must end at the length of the chunks' bytes (" + std::to_string(bytes.size()) +
                              "), got " + std::to_string(offsets[n]));
    std::vector<std::string_view> chunks(n);
    std::vector<int64_t> added(counts, counts + n);
    for (size_t k = 0; k < n; ++k) {
        if (offsets[k + 1] < offsets[k])
            throw py::value_error("offsets must not decrease: offsets[" + std::to_string(k + 1) + "] = " +
                                  std::to_string(offsets[k + 1]) + " < offsets[" + std::to_string(k) + "] = " +
                                  std::to_string(offsets[k]));
        if (counts[k] <= 0 || counts[k] > kMaxCount)
            throw py::value_error("each count must be from 1 to 2^48, got counts[" + std::to_string(k) + "] = " +
                                  std::to_string(counts[k]));
        chunks[k] = bytes.substr(size_t(offsets[k]), size_t(offsets[k + 1] - offsets[k]));
    }
    size_t buffers = bytes.size() + sizeof(int64_t) * (n_offsets + n);
    return without_gil(buffers, [&](bpe::Interrupt* interrupt) { return counter.add_counts(chunks, added, threads, interrupt); });
}

// A counter's special tokens, as str.
py::list special_tokens_of(const bpe::ChunkCounter& counter) {
    py::list tokens;
    for (const auto& [token, id] : counter.specials().tokens()) tokens.append(py::str(token));
    return tokens;
}

// Whether two counters cut and split texts alike, so that their counts may be added:
// ValueError if not. The specials' order does not matter to counting.
void check_same_rule(const bpe::ChunkCounter& self, const bpe::ChunkCounter& other) {
    if (self.pattern() != other.pattern())
        throw py::value_error(std::string("cannot merge counts of the pattern '") + bpe::pattern_name(other.pattern()) +
                              "' into a counter of the pattern '" + bpe::pattern_name(self.pattern()) + "'");
    std::vector<std::string> mine, theirs;
    for (const auto& token : self.specials().tokens()) mine.push_back(token.first);
    for (const auto& token : other.specials().tokens()) theirs.push_back(token.first);
    std::sort(mine.begin(), mine.end());
    std::sort(theirs.begin(), theirs.end());
    if (mine != theirs)
        throw py::value_error("cannot merge counts cut at the special tokens " +
                              std::string(py::repr(special_tokens_of(other))) + " into a counter cut at " +
                              std::string(py::repr(special_tokens_of(self))));
}

// --- the module's functions ---------------------------------------------------------------

// The named split rules, from split_rules.h's table, for the Python package and the docs:
// (name, regex, the regex in Oniguruma's syntax, the texts that pattern= takes as the rule).
std::vector<std::tuple<std::string, std::string, std::string, std::vector<std::string>>> split_rules() {
    std::vector<std::tuple<std::string, std::string, std::string, std::vector<std::string>>> out;
    for (const bpe::NamedRule& rule : bpe::kNamedRules) {
        std::vector<std::string> texts;
        if (rule.text_names_rule) texts.emplace_back(rule.regex);
        if (rule.text_names_rule && !rule.same_split.empty()) texts.emplace_back(rule.same_split);
        out.emplace_back(std::string(rule.name), std::string(rule.regex),
                         std::string(rule.oniguruma.empty() ? rule.regex : rule.oniguruma), std::move(texts));
    }
    return out;
}

// The regex dialect a test names: "python" (pattern='s, tiktoken's) or "oniguruma" (a
// Hugging Face Split's).
bpe::Dialect dialect_named(const std::string& name) {
    if (name == "python") return bpe::Dialect::kPython;
    if (name == "oniguruma") return bpe::Dialect::kOniguruma;
    throw py::value_error("unknown regex dialect '" + name + "': expected 'python' or 'oniguruma'");
}

size_t count_chunks(py::handle text, const std::string& pattern_name, const std::string& dialect) {
    BytesArg arg(text, "text");
    bpe::SplitRule pattern = bpe::parse_pattern(pattern_name, dialect_named(dialect));
    check_text_for(pattern, arg.view, "text");
    GilReleased released;
    return bpe::count_chunks(arg.view, pattern);
}

py::list pretokenize(py::handle text, const std::string& pattern_name, const std::string& dialect) {
    BytesArg arg(text, "text");
    bpe::SplitRule pattern = bpe::parse_pattern(pattern_name, dialect_named(dialect));
    check_text_for(pattern, arg.view, "text");
    std::vector<std::string_view> chunks;
    {
        GilReleased released;
        chunks = bpe::pretokenize(arg.view, pattern);
    }
    py::list out(chunks.size());
    for (size_t i = 0; i < chunks.size(); ++i)
        PyList_SET_ITEM(out.ptr(), i, py::bytes(chunks[i].data(), chunks[i].size()).release().ptr());
    return out;
}

// tiktoken's ranks as a map of views, each key kept alive by `owners`, so that the
// views stay valid with the GIL released whatever other threads do to the dict.
bpe::RankMap rank_map_from_python(py::dict ranks, std::vector<py::object>& owners) {
    bpe::RankMap map;
    map.reserve(ranks.size());
    for (auto [key, value] : ranks) {
        if (!PyBytes_Check(key.ptr()) || !PyLong_Check(value.ptr()) || PyBool_Check(value.ptr()))
            throw py::type_error("ranks must map bytes to int, got " + type_name(key) + ": " + type_name(value));
        int overflow = 0;
        long long rank = PyLong_AsLongLongAndOverflow(value.ptr(), &overflow);
        if (overflow != 0 || rank < 0)
            throw py::value_error("a rank must be between 0 and 2**63 - 1, got " + std::string(py::repr(value)));
        owners.push_back(py::reinterpret_borrow<py::object>(key));
        map.emplace(std::string_view(PyBytes_AS_STRING(key.ptr()), size_t(PyBytes_GET_SIZE(key.ptr()))), int64_t(rank));
    }
    return map;
}

std::vector<size_t> lower_rank_splits(py::dict ranks, py::list tokens) {
    std::vector<py::object> owners;  // references of our own to every key and token
    owners.reserve(ranks.size() + tokens.size());
    const bpe::RankMap map = rank_map_from_python(ranks, owners);
    std::vector<std::string_view> views;
    std::vector<int64_t> limits;
    for (py::handle token : tokens) {
        if (!PyBytes_Check(token.ptr())) throw py::type_error("tokens must be bytes, not " + type_name(token));
        std::string_view view(PyBytes_AS_STRING(token.ptr()), size_t(PyBytes_GET_SIZE(token.ptr())));
        auto it = map.find(view);
        if (it == map.end()) throw py::value_error("the token " + std::string(py::repr(token)) + " has no rank");
        owners.push_back(py::reinterpret_borrow<py::object>(token));
        views.push_back(view);
        limits.push_back(it->second);
    }
    std::vector<size_t> splits(views.size());
    GilReleased released;
    for (size_t i = 0; i < views.size(); ++i) splits[i] = bpe::lower_rank_split(views[i], map, limits[i]);
    return splits;
}

Py_ssize_t safe_cut(py::handle text, py::handle special_tokens, Py_ssize_t start, std::optional<Py_ssize_t> end,
                    bool last, py::handle pattern) {
    if (!PyUnicode_Check(text.ptr())) throw py::type_error("text must be str, not " + type_name(text));
    if (start < 0 || (end && *end < 0)) throw py::value_error("start and end must be 0 or more");
    if (!pattern_from_python(pattern).cuts_at_safe_cuts()) return 0;  // a regex: no place is certain
    const StrCuts cuts(text, special_tokens_from_python(special_tokens));
    GilReleased released;
    if (last) return cuts.last(start, end.value_or(cuts.size()));
    Py_ssize_t cut = cuts.first(start);
    return cut < cuts.size() ? cut : 0;
}

long long num_merges_for(py::handle vocab_size, size_t num_special_tokens) {
    long long smallest = 256 + (long long)num_special_tokens;
    std::string at_least = "at least " + std::to_string(smallest) + " (the 256 bytes and the " +
                           std::to_string(num_special_tokens) + " special tokens)";
    return size_from_python(vocab_size, "vocab_size", smallest, smallest + kMaxMerges, at_least) - smallest;
}

std::vector<bpe::Pair> train(py::handle text, py::handle num_merges_arg, const std::string& pattern_name,
                             py::handle special_tokens, py::handle threads) {
    BytesArg arg(text, "text");
    long long num_merges = num_merges_from_python(num_merges_arg);
    unsigned workers = bpe::threads_for(arg.view.size(), threads_asked(threads));
    bpe::SplitRule pattern = bpe::parse_pattern(pattern_name);
    bpe::SpecialTokens cut = specials_from_python(special_tokens);
    check_text_for(pattern, arg.view, "text");
    bpe::ChunkCounter counter(pattern, std::move(cut));
    without_gil(arg.view.size(), [&](bpe::Interrupt* interrupt) { return counter.add({arg.view}, workers, interrupt); });
    return train_counted(counter, num_merges, py::none());
}

void bind_functions(py::module_& m) {
    m.def(
        "simd_tier", [] { return std::string(bpe::simd::tier_name(bpe::simd::tier_in_use())); },
        "The SIMD tier the split runs in: 'portable' (a chunk at a time), 'sse2', 'avx2' or 'avx512' (64 bytes "
        "at a time). The best this CPU has, unless the environment variable BPE_SIMD named another at import.");
    m.def("split_rules", &split_rules,
          "The named split rules, as (name, regex, oniguruma, texts): the rule's published regex (tiktoken's "
          "dialect, which Python's regex module reads), the same in Oniguruma's syntax (Hugging Face tokenizers), "
          "and the regex texts that pattern= takes as this rule (it then runs on the rule's splitter).");
    m.def("count_chunks", &count_chunks, py::arg("text"), py::arg("pattern") = "default", py::arg("dialect") = "python",
          "How many chunks pretokenize(text, pattern) would give, without making them: the split alone.");
    m.def("pretokenize", &pretokenize, py::arg("text"), py::arg("pattern") = "default", py::arg("dialect") = "python",
          "Split text (bytes) into the chunks that merges never cross. pattern: 'default' (this project's "
          "rule, any bytes), 'gpt2', 'gpt4', 'qwen2' or 'o200k' (GPT-2's, GPT-4's, Qwen2's and GPT-4o's rules; "
          "valid UTF-8 only), or a regex (split_rules() has the rules' own). dialect: the regex's, 'python' "
          "(Python's regex module, as tiktoken's) or 'oniguruma' (as a Hugging Face Split's).");
    m.def("lower_rank_splits", &lower_rank_splits, py::arg("ranks"), py::arg("tokens"),
          "For each token (bytes, a key of ranks), its bytes byte-pair encoded as tiktoken does with the ranks "
          "below its own: the length of the first part when that ends as two parts (the pair that made the "
          "token), else 0. O(n log n) for a token of n bytes (csrc/ranks.h).");
    m.def("safe_cut", &safe_cut, py::arg("text"), py::arg("special_tokens") = py::none(), py::arg("start") = 0,
          py::arg("end") = py::none(), py::arg("last") = true, py::arg("pattern") = "default",
          "Where a str may be cut so that its two pieces split into exactly the chunks of the whole, under "
          "every named split pattern (csrc/split.h, is_safe_cut, says why): the last such place p with start <= p < end "
          "(or, with last=False, the first with start <= p), never inside one of special_tokens (a list of str). "
          "0 when there is none: p is never 0, and always 0 for a pattern given as a regex, which no place is "
          "certain for.");
    m.def("huggingface_merges", &huggingface_merges, py::arg("vocab"), py::arg("merges"), py::arg("alphabet"),
          "A tokenizer.json's vocab ({str: id}) and merges (\"a b\" or [a, b]) in the core's numbering, read "
          "through alphabet (a str of 256 characters, byte b's at b): (merges as (left, right), the file's id of "
          "each byte and merge token, the tokens no byte or merge makes, and None, or where the core's merges are "
          "not the file's in its order the ranked merges [[left, right, made], ...] in Hugging Face's rank order, "
          "as Encoder's rules[\"ranked_merges\"]). ValueError names a bad merge (csrc/py_huggingface.h).");
    m.def(
        "threads_for", [](py::handle bytes, py::handle threads) {
            return bpe::threads_for(size_t(size_from_python(bytes, "bytes", 0, LLONG_MAX)), threads_asked(threads));
        },
        py::arg("bytes"), py::arg("threads") = 0,
        "How many threads a call on a text of this many bytes (a batch's all together) runs on when asked for "
        "`threads`: that many, or for 0 as many as its size pays for, one per BYTES_PER_THREAD bytes and at "
        "most one per core, so a short text runs on the caller's thread alone. Every call that encodes "
        "or counts takes this rule.");
    m.def(
        "threads_lent", [] { return bpe::threads_lent().load(); },
        "How many threads the calls of this process have been lent so far, besides their own: n - 1 for a call "
        "on n threads, none for a short call.");
    m.def(
        "threads_kept", [] { return bpe::ThreadPool::kept(); },
        "How many threads the process keeps for its calls: started as calls first ask for them, then woken for "
        "each call, and sleeping between calls (a child after fork() starts with none).");
    m.def("num_merges_for", &num_merges_for, py::arg("vocab_size"), py::arg("num_special_tokens"),
          "The merges that make a vocabulary of vocab_size tokens (an int: the 256 bytes, the merges and the "
          "special tokens); ValueError if it is out of range.");
    m.def("train", &train, py::arg("text"), py::arg("num_merges"), py::arg("pattern") = "default",
          py::arg("special_tokens") = py::none(), py::arg("threads") = 0,
          "Learn up to num_merges merges from text (bytes); merge k makes token 256 + k. Stops early when no "
          "pair is left. pattern: the split rule, as for pretokenize. special_tokens (a list of str) are cut out "
          "of the text first, so that no merge crosses or contains one. threads=0 counts chunks on as many "
          "threads as the text's size pays for. The same as ChunkCounter(pattern, special_tokens).add(text) and then .train(num_merges).");
}

// --- training: ChunkCounter -----------------------------------------------------------

bpe::ChunkCounter* make_counter(py::handle pattern_arg, py::handle special_tokens, py::handle max_memory) {
    bpe::SplitRule pattern = pattern_from_python(pattern_arg);
    bpe::SpecialTokens specials = specials_from_python(special_tokens);
    uint64_t budget = 0;
    if (!max_memory.is_none())
        budget = uint64_t(size_from_python(max_memory, "max_memory", 1, LLONG_MAX,
                                           "a number of bytes above 0 (None: no budget)"));
    auto counter = std::make_unique<bpe::ChunkCounter>(pattern, std::move(specials));
    counter->set_max_memory(budget);
    return counter.release();
}

void counter_add(bpe::ChunkCounter& self, py::handle texts, py::handle threads) {
    const unsigned asked = threads_asked(threads);
    uint64_t dropped = 0;
    if (PyUnicode_Check(texts.ptr()) && !is_ascii(texts)) {
        // One str that is not ASCII: made UTF-8 a stretch at a time, never whole.
        dropped = add_str_in_pieces(self, texts, bpe::threads_for(size_t(PyUnicode_GET_LENGTH(texts.ptr())), asked));
    } else {
        // One text or a list of them, each a str read in place or bytes (Text).
        PyObject* obj = texts.ptr();
        const bool one = PyUnicode_Check(obj) || PyBytes_Check(obj) || PyByteArray_Check(obj) || PyMemoryView_Check(obj);
        std::optional<Text> text;
        std::optional<TextBatch> batch;
        std::vector<std::string_view> views;
        if (one)
            views.push_back(text.emplace(texts, self.pattern()).view);
        else
            views = batch.emplace(texts, self.pattern()).views();
        size_t total = 0;
        for (std::string_view view : views) total += view.size();
        const unsigned workers = bpe::threads_for(total, asked);
        dropped = without_gil(total, [&](bpe::Interrupt* interrupt) { return self.add(views, workers, interrupt); });
    }
    warn_dropped(self, dropped);
}

void counter_add_counts(bpe::ChunkCounter& self, py::handle chunks, py::array_t<int64_t, py::array::c_style> offsets,
                        py::array_t<int64_t, py::array::c_style> counts, py::handle threads) {
    BytesArg bytes(chunks, "chunks");
    if (offsets.ndim() != 1 || counts.ndim() != 1)
        throw py::value_error("offsets and counts must be one-dimensional arrays");
    unsigned workers = bpe::threads_for(bytes.view.size(), threads_asked(threads));
    warn_dropped(self, add_buffers(self, bytes.view, offsets.data(), size_t(offsets.size()), counts.data(),
                                   size_t(counts.size()), workers));
}

void counter_merge(bpe::ChunkCounter& self, const bpe::ChunkCounter& other, py::handle threads) {
    if (&self == &other) throw py::value_error("cannot merge a counter into itself");
    check_same_rule(self, other);
    const unsigned asked = threads_asked(threads);
    std::vector<std::string_view> chunks;
    std::vector<int64_t> counts;
    chunks.reserve(other.size()), counts.reserve(other.size());
    size_t total = 0;
    other.for_each([&](std::string_view chunk, int64_t n) {
        chunks.push_back(chunk), counts.push_back(n);
        total += chunk.size() + 2 * sizeof(int64_t);  // what it takes in counts()'s buffers
    });
    const unsigned workers = bpe::threads_for(total, asked);
    uint64_t dropped =
        without_gil(total, [&](bpe::Interrupt* interrupt) { return self.add_counts(chunks, counts, workers, interrupt); });
    self.note_pruned(other.pruned());
    warn_dropped(self, dropped);
}

// A counter as pickle keeps it: version 1, pattern, special tokens, max_memory, the
// three buffers of counts() (the arrays as bytes, so that loading makes no numpy object
// from the pickle), and what pruning dropped.
py::tuple counter_state(const bpe::ChunkCounter& self) {
    py::tuple buffers = counts_to_buffers(self);
    py::object max_memory = self.max_memory() ? py::object(py::int_(self.max_memory())) : py::none();
    return py::make_tuple(1, bpe::pattern_name(self.pattern()), special_tokens_of(self), max_memory, buffers[0],
                          buffers[1].attr("tobytes")(), buffers[2].attr("tobytes")(), self.pruned().chunks,
                          self.pruned().threshold);
}

// A state is input (a pickle from anywhere): each field is checked as the constructor
// checks its argument, and a wrong one is refused by its name.
bpe::ChunkCounter* counter_from_state(py::tuple state) {
    if (state.size() != 9 || !py::isinstance<py::int_>(state[0]) || py::isinstance<py::bool_>(state[0]) ||
        py::int_(1).not_equal(state[0]))
        throw py::value_error("not the state of a ChunkCounter of this version");
    auto counter = std::make_unique<bpe::ChunkCounter>(pattern_from_python(state[1]), specials_from_python(state[2]));
    uint64_t budget = 0;
    if (!state[3].is_none())
        budget = uint64_t(size_from_python(state[3], "the state's max_memory", 1, LLONG_MAX,
                                           "a number of bytes above 0 (None: no budget)"));
    bpe::ChunkCounter::Pruned pruned{uint64_t(size_from_python(state[7], "the state's pruned chunks", 0, kMaxCount)),
                       size_from_python(state[8], "the state's pruned threshold", 0, kMaxCount)};
    BytesArg chunks(state[4], "the chunks"), offsets(state[5], "the offsets"), counts(state[6], "the counts");
    if (offsets.view.size() % 8 || counts.view.size() % 8)
        throw py::value_error("a ChunkCounter's state holds int64 offsets and counts, not whole ones");
    std::vector<int64_t> offset(offsets.view.size() / 8 + (offsets.view.empty() ? 1 : 0), 0);
    std::vector<int64_t> count(counts.view.size() / 8);
    // memcpy with an empty vector's null data() is undefined even for 0 bytes.
    if (!offsets.view.empty()) std::memcpy(offset.data(), offsets.view.data(), offsets.view.size());
    if (!counts.view.empty()) std::memcpy(count.data(), counts.view.data(), counts.view.size());
    add_buffers(*counter, chunks.view, offset.data(), offset.size(), count.data(), count.size(), 1);
    // The budget after the counts, which were within it when saved: loading drops nothing.
    counter->set_max_memory(budget);
    counter->note_pruned(pruned);
    return counter.release();
}

std::vector<bpe::Pair> counter_train(bpe::ChunkCounter& self, py::handle num_merges, py::object progress) {
    return train_counted(self, num_merges_from_python(num_merges), std::move(progress));
}

void bind_training(py::module_& m) {
    py::class_<bpe::ChunkCounter>(m, "ChunkCounter",
                                  "Counts the distinct chunks of texts as they stream in, for training: memory "
                                  "grows with the distinct chunks, not with the texts. No chunk crosses two texts "
                                  "or a special token.")
        .def(py::init(&make_counter), py::arg("pattern") = "default", py::arg("special_tokens") = py::none(),
             py::arg("max_memory") = py::none(),
             "pattern: the split rule, as for pretokenize. special_tokens: a list of str, cut out of the texts "
             "and never counted. max_memory: a budget in bytes for the whole training run (None: none, and "
             "training is exact). Past it, add drops the rarest chunks, with a bpe.PruningWarning that says how "
             "many and below what count: the merges may then differ from exact training.")
        .def_property_readonly("max_memory", [](const bpe::ChunkCounter& self) -> py::object {
            return self.max_memory() == 0 ? py::object(py::none()) : py::object(py::int_(self.max_memory()));
        })
        .def_property_readonly("estimated_memory", &bpe::ChunkCounter::estimated_memory,
                               "What training on the counts so far would take at its peak, in bytes, from B (the "
                               "bytes of the distinct chunks), C (their number) and T (the count tables as "
                               "allocated): max(T + 4 (B + C), 20 B + 4 C).")
        .def_property_readonly(
            "pruned",
            [](const bpe::ChunkCounter& self) { return py::make_tuple(self.pruned().chunks, self.pruned().threshold); },
            "(distinct chunks dropped to keep to max_memory, the largest count of one dropped): (0, 0) when "
            "none was, and training is exact.")
        .def("add", &counter_add, py::arg("texts"), py::arg("threads") = 0,
             "Count the chunks of texts (one bytes object or str, or a list of them, each counted on its own), on "
             "`threads` threads (0: as many as its size pays for). A str is read in place: an ASCII one with no copy; one other "
             "str is encoded to UTF-8 by the counting threads, a piece of at most about 256 K characters at a time, cut "
             "where a chunk must end; a list's other strs are encoded for the call only.")
        .def_property_readonly("pattern", [](const bpe::ChunkCounter& self) { return bpe::pattern_name(self.pattern()); },
                               "The split rule's name.")
        .def_property_readonly("special_tokens", &special_tokens_of, "The special tokens (str) the texts are cut at.")
        .def("counts", &counts_to_buffers,
             "The distinct chunks and their counts, as (chunks, offsets, counts): the bytes of every chunk end to "
             "end, a numpy int64 array of offsets (one more than the chunks: chunk k is "
             "chunks[offsets[k]:offsets[k + 1]]) and a numpy int64 array of counts. The order is the counter's "
             "own. The counter keeps its counts.")
        .def("add_counts", &counter_add_counts, py::arg("chunks"), py::arg("offsets"), py::arg("counts"),
             py::arg("threads") = 0,
             "Add counts in the form counts() gives them (from a counter of the same pattern and special tokens: "
             "the buffers do not say which), on `threads` threads; then keep to max_memory as add does. "
             "ValueError for offsets that do not fit the bytes or a count below 1, and then nothing is added.")
        .def("merge", &counter_merge, py::arg("other"), py::arg("threads") = 0,
             "Add another counter's counts to this one's (the other keeps its own), then keep to max_memory as add "
             "does; what the other dropped is added to pruned. ValueError if the two differ in pattern or special "
             "tokens.")
        .def(py::pickle(&counter_state, &counter_from_state))
        .def("__len__", [](const bpe::ChunkCounter& self) { return self.size(); },
             "How many distinct chunks have been counted.")
        .def("train", &counter_train, py::arg("num_merges"), py::arg("progress") = py::none(),
             "Learn up to num_merges merges from the chunks counted; merge k makes token 256 + k. Stops early "
             "when no pair is left. The counts are used up: the counter is empty afterwards. progress, if "
             "given, is called with the number of merges made so far every few hundred merges.");
}

// --- the Encoder: encoding ----------------------------------------------------------------

bpe::Encoder* make_encoder(py::handle merges_arg, py::handle pattern_arg, py::handle special_tokens_arg,
                           py::handle token_ids_arg, py::handle rules_arg) {
    // One after the other, so that of several mistakes the first argument's is told.
    bpe::SplitRule pattern = pattern_from_python(pattern_arg);
    std::vector<bpe::Pair> merges = merges_from_python(merges_arg);
    std::vector<std::string> special_tokens = special_tokens_from_python(special_tokens_arg);
    std::optional<std::vector<uint32_t>> token_ids = token_ids_from_python(token_ids_arg);
    std::optional<bpe::Rules> rules = rules_from_python(rules_arg);
    bpe::ModelOptions options = model_options_from(rules_arg);
    // The ids as given (the encoder keeps one token of several spellings of one content).
    std::vector<uint32_t> added_ids;
    if (rules)
        for (const bpe::AddedToken& token : rules->added.tokens()) added_ids.push_back(token.id);
    auto encoder = std::make_unique<bpe::Encoder>(std::move(merges), pattern, special_tokens, std::move(token_ids),
                                                  std::move(rules), options);
    for (size_t k = 0; k < added_ids.size(); ++k)
        if (!encoder->has_id(added_ids[k]))
            throw py::value_error("rules['added_tokens'][" + std::to_string(k) + "]['id'] is " +
                                  std::to_string(added_ids[k]) + ", which no token of the vocabulary has");
    // Ints for the ids up to n_vocab, unless the numbering is sparse (a few tokens with
    // ids up to MAX_ID must not make a million ints).
    shared_ints.reserve(std::min(encoder->n_vocab(), 2 * encoder->num_tokens()));
    return encoder.release();
}

// The rule a text from Python must suit: with rules, theirs (valid UTF-8).
const bpe::SplitRule& text_rule(const bpe::Encoder& self) {
    return self.has_rules() ? rules_text_rule() : self.pattern();
}

py::list encode(const bpe::Encoder& self, py::handle text, py::handle allowed_special, py::handle disallowed_special) {
    Text arg(text, text_rule(self));
    return parts_to_list(encode_text(self, arg.view, allowed_special, disallowed_special, 1));
}

// Room for the ids of a text's pieces as threads encode them (bpe::PieceClaims): a
// block for each thread (py_output.h), block 0 with room for every piece's ids and the
// others for their thread's span's. A thread appends each piece's ids to its own block
// and notes where they went; once all have ended, join copies the pieces not already
// in place after one another into block 0, and the array is made over it. Thread 0's
// are in place: it takes the first pieces, in order.
template <class Id>
class PieceBlocks {
public:
    // all: the most ids of the whole text; most(k): of thread k's span.
    template <class Most>
    PieceBlocks(const bpe::PieceClaims& claims, size_t pieces, size_t all, Most&& most) : placed_(pieces) {
        for (unsigned k = 0; k < claims.threads(); ++k) {
            blocks_.push_back(OutputBlocks::take((k == 0 ? all : most(k)) * sizeof(Id)));
            used_.push_back(0);
        }
    }

    // Piece p's ids, or the next of them, from thread k: a piece may come in several
    // calls, one after another on one thread.
    void take(size_t k, size_t p, const bpe::Ids& ids) {
        Placed& placed = placed_[p];
        if (placed.count == 0) placed.block = k, placed.at = used_[k];
        std::copy(ids.begin(), ids.end(), reinterpret_cast<Id*>(blocks_[k]->region.data()) + used_[k]);
        used_[k] += ids.size();
        placed.count += ids.size();
    }

    // With the GIL: the array of all the pieces' ids, in order (copied without it).
    py::array join() {
        Id* data = reinterpret_cast<Id*>(blocks_[0]->region.data());
        size_t total = 0;
        {
            GilReleased released;
            for (const Placed& placed : placed_) {
                const Id* from = reinterpret_cast<const Id*>(blocks_[placed.block]->region.data()) + placed.at;
                if (from != data + total) std::memmove(data + total, from, placed.count * sizeof(Id));
                total += placed.count;
            }
        }
        for (size_t k = 1; k < blocks_.size(); ++k) keep_thread_block(k);
        return OutputBlocks::array<Id>(std::move(blocks_[0]), total);
    }

private:
    // Thread k's block back among the kept ones, with the pages it held before: how
    // many pieces a thread takes varies from call to call (the threads meet where they
    // meet), and a block cut to this call's ids would fault its pages in again on the
    // next call that takes more.
    void keep_thread_block(size_t k) {
        const size_t held = std::max(used_[k] * sizeof(Id), blocks_[k]->held);
        OutputBlocks::keep(std::move(blocks_[k]), held);
    }

    struct Placed {
        size_t block = 0, at = 0, count = 0;  // count ids at `at` in blocks_[block]
    };
    std::vector<std::unique_ptr<OutputBlocks::Block>> blocks_;
    std::vector<size_t> used_;  // ids written in each block
    std::vector<Placed> placed_;
};

// The ids of a text written straight into the numpy array returned, with no vector of
// them between. Room of OutputBlocks::kPooledBytes or more (an id a byte: a token holds
// one at least) comes from the kept blocks (PieceBlocks): the first thread writes its
// pieces' ids into the array's block, each other thread into a block of its own, and
// those are copied into place once all have ended. Less room is numpy's own array:
// each span's front thread writes from the span's first byte on and its back thread
// back from the span's end, so the two never cross (bpe::PieceClaims); the threads'
// ids are then moved down end to end and the array is cut to length, which gives back
// the rest.
template <class Id>
py::array encode_into_array(const bpe::Encoder& self, std::string_view text, const bpe::SpecialSet& allowed,
                            unsigned threads) {
    if (self.has_rules()) {  // a space put in, or NFC, can give more ids than bytes
        bpe::Ids ids = without_gil(text.size(), [&](bpe::Interrupt* interrupt) {
            return self.encode(text, allowed, threads, interrupt);
        });
        py::array_t<Id> out(py::ssize_t(ids.size()));
        std::copy(ids.begin(), ids.end(), out.mutable_data());
        return out;
    }
    const unsigned n = bpe::threads_for(text.size(), threads);
    if (text.size() * sizeof(Id) < OutputBlocks::kPooledBytes) {
        py::array_t<Id> out(py::ssize_t(text.size()));  // not zeroed: only what is written is read
        Id* data = out.mutable_data();
        size_t total = without_gil(text.size(), [&](bpe::Interrupt* interrupt) {
            const bpe::Encoder::TextPieces pieces = self.pieces(text, allowed, n);
            bpe::PieceClaims claims = pieces.claims(n);
            if (claims.threads() == 1) {  // a short text: its ids in order from the start
                size_t end = 0;
                self.encode_claimed(text, pieces, claims, interrupt, [&](size_t, size_t, const bpe::Ids& ids) {
                    std::copy(ids.begin(), ids.end(), data + end);
                    end += ids.size();
                });
                return end;
            }
            // Thread k writes from `start[k]` on, or back from it for a back thread.
            std::vector<size_t> start, at;
            for (unsigned k = 0; k < claims.threads(); ++k) {
                const auto [first, end] = claims.span(k);
                start.push_back(first == end ? 0 : claims.from_back(k) ? pieces.end(end - 1) : pieces.begin(first));
            }
            at = start;
            self.encode_claimed(text, pieces, claims, interrupt, [&](size_t k, size_t, const bpe::Ids& ids) {
                if (claims.from_back(unsigned(k))) at[k] -= ids.size();
                std::copy(ids.begin(), ids.end(), data + at[k]);
                if (!claims.from_back(unsigned(k))) at[k] += ids.size();
            });
            size_t end = 0;  // each thread's ids moved down after the ones before, in text order
            for (unsigned k = 0; k < claims.threads(); ++k) {
                const size_t from = claims.from_back(k) ? at[k] : start[k];
                const size_t count = claims.from_back(k) ? start[k] - at[k] : at[k] - start[k];
                if (from != end) std::memmove(data + end, data + from, count * sizeof(Id));
                end += count;
            }
            return end;
        });
        out.resize({py::ssize_t(total)}, false);
        return out;
    }
    const bpe::Encoder::TextPieces pieces = [&] {
        GilReleased released;
        return self.pieces(text, allowed, n);
    }();
    bpe::PieceClaims claims = pieces.claims(n);
    PieceBlocks<Id> blocks(claims, pieces.size(), text.size(), [&](unsigned k) {
        const auto [first, end] = claims.span(k);
        return first == end ? 1 : pieces.end(end - 1) - pieces.begin(first);
    });
    without_gil(text.size(), [&](bpe::Interrupt* interrupt) {
        return self.encode_claimed(text, pieces, claims, interrupt,
                                   [&](size_t k, size_t p, const bpe::Ids& ids) { blocks.take(k, p, ids); });
    });
    return blocks.join();
}

// A long str (kLongStr) that is not ASCII and has no UTF-8 of its own yet, encoded
// without its UTF-8 ever being whole (encode_array and count). Its characters are cut
// into pieces of about kStrPiece at most (bpe::piece_size; where a chunk boundary is
// certain: StrCuts, never inside a special token), which threads take one at a time
// (bpe::PieceClaims); a thread writes a piece's UTF-8 into a buffer of its own and
// encodes it while it is in the cache. Made whole first, the UTF-8 of a long text went
// through memory three times (its size, its bytes, then the encoder's read), where two
// threads wait on it together (docs/design-notes.md). The pieces are cut where the whole
// would split and searched for disallowed specials one by one, so the ids and the errors
// are those of the whole: the first lone surrogate, else the first disallowed special.
class StrPieces {
public:
    static bool wanted(const bpe::Encoder& self, py::handle text) {
        return PyUnicode_Check(text.ptr()) && PyUnicode_GET_LENGTH(text.ptr()) >= kLongStr && !self.has_rules() &&
               self.pattern().cuts_at_safe_cuts() && !utf8_in_place(text);
    }

    StrPieces(const bpe::Encoder& self, py::handle text, const SpecialChoice& choice, unsigned asked)
        : self_(self), choice_(choice), chars_(text), cuts_(text, self.specials()) {
        const unsigned threads = bpe::threads_for(size_t(chars_.size), asked);
        at_ = cuts_.pieces(Py_ssize_t(bpe::piece_size(size_t(chars_.size), threads, kStrPiece)));
        claims_.emplace(pieces(), threads, [&](size_t p) { return size_t(at_[p + 1] - at_[p]); });
        refused_.assign(pieces(), none());
        surrogate_.assign(pieces(), 0);
    }

    size_t pieces() const { return at_.size() - 1; }
    const bpe::PieceClaims& claims() const { return *claims_; }
    // The most ids thread k can give (an id a byte at least: its span's UTF-8), and the whole str.
    size_t most_ids(unsigned k) const {
        const auto [first, end] = claims_->span(k);
        return std::max<size_t>(chars_.max_utf8(at_[end] - at_[first]), 1);
    }
    size_t most_ids() const { return chars_.max_utf8(chars_.size); }

    // Encodes the pieces on the claims' threads, without the GIL: take(k, p, ids) gets
    // piece p's ids on thread k, in one or more calls. A thread stops at a lone surrogate
    // or a disallowed special, and returns false; throw_refused then says what the whole
    // would have said. (The pieces before the first such one are all encoded: a front
    // thread that stops leaves only later pieces, and a back thread that stops leaves
    // its span's front thread to go on.)
    template <class Take>
    bool encode(bpe::Interrupt* interrupt, Take&& take) {
        const bpe::EncoderTable::Expecting expect = self_.expecting(size_t(chars_.size));  // its bytes, about
        bpe::run_threads(claims_->threads(), [&](size_t k) {
            // The buffer the process keeps where no other call has it: a text with no
            // place to cut (CJK has no letter before a space) is one piece, as long as it.
            std::unique_ptr<Utf8Buffer> buffer;
            size_t room = 0;
            for (size_t p; (p = claims_->next(unsigned(k))) != bpe::PieceClaims::kNone;) {
                const size_t need = chars_.max_utf8(at_[p + 1] - at_[p]);
                if (room < need) {
                    buffer.reset();  // handed back first, to be lent again at its new size
                    buffer = std::make_unique<Utf8Buffer>(need);
                    room = need;
                }
                const int64_t bytes = chars_.write_utf8(at_[p], at_[p + 1], buffer->data());
                if (bytes < 0) {
                    surrogate_[p] = 1;
                    return;
                }
                const std::string_view piece(buffer->data(), size_t(bytes));
                if (choice_.any_disallowed() &&
                    (refused_[p] = self_.specials().find_first(piece, choice_.disallowed)) != none())
                    return;
                self_.encode_pieces(piece, choice_.allowed, 1, interrupt,
                                    [&](size_t, size_t, const bpe::Ids& ids) { take(k, p, ids); });
            }
        });
        for (size_t p = 0; p < pieces(); ++p)
            if (surrogate_[p] || refused_[p] != none()) return false;
        return true;
    }

    // With the GIL: the error of the whole. A piece's problem may lie after a lone
    // surrogate in another piece, so the str is searched for one from its start.
    [[noreturn]] void throw_refused() const {
        const Py_ssize_t position = lone_surrogate(chars_, 0, chars_.size);
        if (position >= 0) throw_lone_surrogate(position);
        for (size_t p = 0; p < pieces(); ++p)
            if (refused_[p] != none()) SpecialChoice::refuse(self_, refused_[p], "the text");
        throw std::logic_error("a piece of a str stopped with no reason");
    }

private:
    size_t none() const { return self_.specials().size(); }

    const bpe::Encoder& self_;
    const SpecialChoice& choice_;
    const StrChars chars_;
    const StrCuts cuts_;
    std::vector<Py_ssize_t> at_;  // piece p: characters [at_[p], at_[p + 1])
    std::optional<bpe::PieceClaims> claims_;
    std::vector<size_t> refused_;  // the disallowed special a piece met, or none()
    std::vector<char> surrogate_;  // whether a piece met a lone surrogate
};

// encode_array's way with such a str: each thread's ids go to a block of its own, as in
// encode_into_array.
template <class Id>
py::array encode_str_into_array(const bpe::Encoder& self, py::handle text, const SpecialChoice& choice,
                                unsigned asked) {
    StrPieces pieces(self, text, choice, asked);
    PieceBlocks<Id> blocks(pieces.claims(), pieces.pieces(), pieces.most_ids(),
                           [&](unsigned k) { return pieces.most_ids(k); });
    const bool whole = without_gil(pieces.most_ids(), [&](bpe::Interrupt* interrupt) {
        return pieces.encode(interrupt, [&](size_t k, size_t p, const bpe::Ids& ids) { blocks.take(k, p, ids); });
    });
    if (!whole) pieces.throw_refused();
    return blocks.join();
}

// The dtype asked for, or (None) the narrowest of uint16 and uint32 that holds
// `largest`; TypeError for one that is no integer type of 16, 32 or 64 bits in this
// machine's byte order, ValueError for one too narrow for the ids (`largest`: `what`).
// encode_array's and encode_batch_padded's rule.
py::dtype ids_dtype(py::handle dtype, uint32_t largest, const char* what) {
    if (dtype.is_none()) return largest <= UINT16_MAX ? py::dtype::of<uint16_t>() : py::dtype::of<uint32_t>();
    py::dtype asked = py::dtype::from_args(py::reinterpret_borrow<py::object>(dtype));
    const char kind = asked.kind();
    const py::ssize_t size = asked.itemsize();
    // numpy writes this machine's own order as '=', however it was asked for ("<u4" too here)
    const bool native = asked.byteorder() == '=';
    if ((kind != 'i' && kind != 'u') || (size != 2 && size != 4 && size != 8) || !native)
        throw py::type_error("dtype must be an integer type of 16, 32 or 64 bits in this machine's byte order, not " +
                             std::string(py::str(asked)));
    const uint64_t most = size == 8 ? INT64_MAX : kind == 'u' ? (uint64_t(1) << (8 * size)) - 1
                                                              : (uint64_t(1) << (8 * size - 1)) - 1;
    if (largest > most)
        throw py::value_error("dtype " + std::string(py::str(asked)) + " cannot hold the id " +
                              std::to_string(largest) + " (" + what + ")");
    return asked;
}

// Ids as encode_array makes them (uint16 or uint32) copied into an array of `To`,
// without the GIL.
template <class To, class From>
py::array converted(const py::array& ids) {
    const py::ssize_t n = ids.size();
    py::array_t<To> out(n);
    const auto* from = static_cast<const From*>(ids.data());
    To* to = out.mutable_data();
    {
        GilReleased released;
        for (py::ssize_t k = 0; k < n; ++k) to[k] = To(from[k]);
    }
    return std::move(out);
}

template <class To>
py::array converted(const py::array& ids) {
    return ids.itemsize() == 2 ? converted<To, uint16_t>(ids) : converted<To, uint32_t>(ids);
}

py::array converted(const py::array& ids, const py::dtype& type) {
    const bool is_unsigned = type.kind() == 'u';
    switch (type.itemsize()) {
        case 2: return is_unsigned ? converted<uint16_t>(ids) : converted<int16_t>(ids);
        case 4: return is_unsigned ? converted<uint32_t>(ids) : converted<int32_t>(ids);
        default: return is_unsigned ? converted<uint64_t>(ids) : converted<int64_t>(ids);
    }
}

// Below kWidenFrom bytes of text (characters, for a str), uint32 asked of a vocabulary
// whose ids fit uint16 is written by the core as the ids are made, which spares a
// converting copy (encode_to_numpy's uint32: a short call's time is mostly calls). From
// there on, the ids are written narrow and converted once, which measured faster than
// uint32 written throughout the output blocks that the threads copy between (design
// notes). Any other dtype is a conversion of the narrowest.
constexpr size_t kWidenFrom = size_t(1) << 20;

// A text's length: a str's characters, bytes' bytes (0 for anything else, which the
// call then refuses).
size_t text_length(py::handle text) {
    if (PyUnicode_Check(text.ptr())) return size_t(PyUnicode_GET_LENGTH(text.ptr()));
    if (PyBytes_Check(text.ptr())) return size_t(PyBytes_GET_SIZE(text.ptr()));
    return 0;
}

py::array encode_array(const bpe::Encoder& self, py::handle text, py::handle allowed_special,
                       py::handle disallowed_special, py::handle threads, py::handle dtype) {
    bool wide = !fits_uint16(self.n_vocab());  // the narrowest, None's
    if (!dtype.is_none()) {
        const py::dtype type = ids_dtype(dtype, uint32_t(self.n_vocab() - 1), "the vocabulary's largest");
        const bool is_unsigned = type.kind() == 'u';
        if (is_unsigned && type.itemsize() == 4 && !wide && text_length(text) < kWidenFrom)
            wide = true;
        else if (!is_unsigned || type.itemsize() != (wide ? 4 : 2))
            return converted(encode_array(self, text, allowed_special, disallowed_special, threads, py::none()), type);
    }
    const unsigned asked = threads_asked(threads);
    if (StrPieces::wanted(self, text)) {
        SpecialChoice choice(self, allowed_special, disallowed_special);
        return wide ? encode_str_into_array<uint32_t>(self, text, choice, asked)
                    : encode_str_into_array<uint16_t>(self, text, choice, asked);
    }
    Text arg(text, text_rule(self), "text", asked);
    SpecialChoice choice(self, allowed_special, disallowed_special);
    choice.check(self, arg.view, bpe::threads_for(arg.view.size(), asked));
    return wide ? encode_into_array<uint32_t>(self, arg.view, choice.allowed, asked)
                : encode_into_array<uint16_t>(self, arg.view, choice.allowed, asked);
}

// How many ids a text gives, encoded a piece at a time (Encoder::encode_pieces): no
// vector of the text's ids is made.
size_t count(const bpe::Encoder& self, py::handle text, py::handle allowed_special, py::handle disallowed_special,
             py::handle threads) {
    const unsigned asked = threads_asked(threads);
    if (StrPieces::wanted(self, text)) {
        SpecialChoice choice(self, allowed_special, disallowed_special);
        StrPieces pieces(self, text, choice, asked);
        std::vector<size_t> counts(pieces.claims().threads(), 0);
        const bool whole = without_gil(pieces.most_ids(), [&](bpe::Interrupt* interrupt) {
            return pieces.encode(interrupt, [&](size_t k, size_t, const bpe::Ids& ids) { counts[k] += ids.size(); });
        });
        if (!whole) pieces.throw_refused();
        return std::accumulate(counts.begin(), counts.end(), size_t(0));
    }
    Text arg(text, text_rule(self), "text", asked);
    SpecialChoice choice(self, allowed_special, disallowed_special);
    choice.check(self, arg.view, bpe::threads_for(arg.view.size(), asked));
    return without_gil(arg.view.size(), [&](bpe::Interrupt* interrupt) {
        return self.encode_pieces(arg.view, choice.allowed, asked, interrupt, [](size_t, size_t, const bpe::Ids&) {});
    });
}

py::tuple encode_with_offsets(const bpe::Encoder& self, py::handle text, py::handle allowed_special,
                              py::handle disallowed_special) {
    StrArg arg(text);  // offsets count characters: a str only
    SpecialChoice choice(self, allowed_special, disallowed_special);
    choice.check(self, arg.view);
    if (self.has_rules()) {
        std::vector<int64_t> found;
        bpe::Ids ids = without_gil(arg.view.size(), [&](bpe::Interrupt* interrupt) {
            return self.encode_with_char_spans(arg.view, choice.allowed, found, interrupt);
        });
        py::array_t<int64_t> spans({py::ssize_t(ids.size()), py::ssize_t(2)});
        std::copy(found.begin(), found.end(), spans.mutable_data());
        return py::make_tuple(ids_to_list(ids), spans);
    }
    bpe::Ids ids = without_gil(arg.view.size(), [&](bpe::Interrupt* interrupt) {
        return self.encode(arg.view, choice.allowed, 1, interrupt);
    });
    // Spans as a numpy array of shape (n, 2), start and end in each row: no Python
    // object per token (a list of (start, end) tuples cost three objects a token).
    py::array_t<int64_t> spans({py::ssize_t(ids.size()), py::ssize_t(2)});
    int64_t* data = spans.mutable_data();
    {
        GilReleased released;
        self.char_spans(arg.view, ids, data);
    }
    return py::make_tuple(ids_to_list(ids), spans);
}

py::list encode_batch(const bpe::Encoder& self, py::handle texts, py::handle allowed_special,
                      py::handle disallowed_special, py::handle threads) {
    TextBatch batch(texts, text_rule(self));
    return batch_to_lists(encode_batch_ids(self, batch, allowed_special, disallowed_special, threads));
}

py::tuple encode_batch_flat(const bpe::Encoder& self, py::handle texts, py::handle allowed_special,
                            py::handle disallowed_special, py::handle threads) {
    TextBatch batch(texts, text_rule(self));
    return batch_to_flat(encode_batch_ids(self, batch, allowed_special, disallowed_special, threads), self.n_vocab());
}

// How many ids each text of a list gives, as a numpy int64 array, on `threads` threads,
// with no text's ids kept. Texts of a group's size or more (Encoder::kGroup: a file
// read in pieces is a few such texts) are counted one at a time on all the threads, as
// count counts one; the others are shared out in runs of consecutive texts, each run
// counted on a thread of its own (Encoder::count_many).
py::array count_batch(const bpe::Encoder& self, py::handle texts, py::handle allowed_special,
                      py::handle disallowed_special, py::handle threads) {
    TextBatch batch(texts, text_rule(self));
    SpecialChoice choice(self, allowed_special, disallowed_special);
    choice.check(self, batch.views());
    const unsigned workers = bpe::threads_for(batch.bytes(), threads_asked(threads));
    const std::vector<std::string_view>& views = batch.views();
    std::vector<size_t> large, small;  // which texts are counted each way
    std::vector<std::string_view> small_views;
    for (size_t i = 0; i < views.size(); ++i) {
        if (workers > 1 && views[i].size() >= bpe::Encoder::kGroup) {
            large.push_back(i);
        } else {
            small.push_back(i);
            small_views.push_back(views[i]);
        }
    }
    py::array_t<int64_t> counts(py::ssize_t(batch.size()));
    int64_t* count = counts.mutable_data();
    without_gil(batch.bytes(), [&](bpe::Interrupt* interrupt) {
        for (size_t i : large) {
            count[i] = int64_t(
                self.encode_pieces(views[i], choice.allowed, workers, interrupt, [](size_t, size_t, const bpe::Ids&) {}));
        }
        std::vector<int64_t> small_counts(small.size());
        const std::vector<size_t> bounds = bpe::share_batch(small_views.data(), small_views.size(), workers);
        bpe::run_threads(bounds.size() - 1, [&](size_t k) {
            self.count_many(small_views.data() + bounds[k], bounds[k + 1] - bounds[k], choice.allowed,
                            small_counts.data() + bounds[k], interrupt);
        });
        for (size_t j = 0; j < small.size(); ++j) count[small[j]] = small_counts[j];
        return 0;
    });
    return counts;
}

// --- padded batches (padding.h) ---

bool flag_from_python(py::handle obj, const char* what) {
    if (!is_bool(obj)) throw py::type_error(std::string(what) + " must be True or False, not " + type_name(obj));
    return PyObject_IsTrue(obj.ptr()) == 1;
}

// An id that a padded row may hold: one that a token may have (up to MAX_ID), in the
// vocabulary or not (a model may give padding a row of its own past n_vocab).
uint32_t row_id_from_python(py::handle obj, const std::string& what) {
    return uint32_t(size_from_python(obj, what, 0, bpe::kMaxId, "an id from 0 to MAX_ID"));
}

std::vector<uint32_t> row_ids_from_python(py::handle obj, const char* what) {
    std::vector<uint32_t> ids;
    if (obj.is_none()) return ids;
    if (!is_iterable_of_items(obj))
        throw py::type_error(std::string(what) + " must be a list of ids or None, not " + type_name(obj));
    for (py::handle id : obj) ids.push_back(row_id_from_python(id, std::string("each id of ") + what));
    return ids;
}

bpe::PadOptions pad_options(py::handle pad_id, py::handle max_length, py::handle pad_to_max_length,
                            py::handle truncate, py::handle pad_left, py::handle truncate_left, py::handle prefix,
                            py::handle suffix) {
    bpe::PadOptions options;
    options.pad_id = row_id_from_python(pad_id, "pad_id");
    if (!max_length.is_none())
        options.max_length = size_t(size_from_python(max_length, "max_length", 0, LLONG_MAX, "0 or more (or None)"));
    options.pad_to_max_length = flag_from_python(pad_to_max_length, "pad_to_max_length");
    options.truncate = flag_from_python(truncate, "truncate");
    options.pad_left = flag_from_python(pad_left, "pad_left");
    options.truncate_left = flag_from_python(truncate_left, "truncate_left");
    options.prefix = row_ids_from_python(prefix, "prefix");
    options.suffix = row_ids_from_python(suffix, "suffix");
    try {
        options.check();
    } catch (const std::invalid_argument& e) {
        throw py::value_error(e.what());
    }
    return options;
}

// The largest id a padded matrix may hold: an encoded one, the padding, or one of
// prefix and suffix.
uint32_t largest_row_id(const bpe::Encoder& self, const bpe::PadOptions& options) {
    uint32_t largest = std::max<uint32_t>(uint32_t(self.n_vocab() - 1), options.pad_id);
    for (uint32_t id : options.prefix) largest = std::max(largest, id);
    for (uint32_t id : options.suffix) largest = std::max(largest, id);
    return largest;
}

// The matrix's rows written on the threads that encoded them, each thread its run of
// rows, without the GIL: the array is made before, as only a thread holding the GIL
// may make a Python object.
template <class Id>
py::array padded_matrix(const BatchIds& batch, const bpe::PadOptions& options, size_t width) {
    py::array_t<Id> out({py::ssize_t(batch.documents()), py::ssize_t(width)});
    Id* data = out.mutable_data();
    {
        // (Closed before the return: an array_t returned as a py::array is a new
        // reference, which only a thread holding the GIL may take.)
        GilReleased released;
        bpe::run_threads(batch.bounds.size() - 1, [&](size_t k) {
            size_t begin = 0;
            for (size_t j = 0; j < batch.ends[k].size(); ++j) {
                const size_t end = batch.ends[k][j];
                options.write_row(data + (batch.bounds[k] + j) * width, width, batch.ids[k].data() + begin,
                                  end - begin);
                begin = end;
            }
        });
    }
    return out;
}

py::tuple encode_batch_padded(const bpe::Encoder& self, py::handle texts, py::handle pad_id, py::handle max_length,
                              py::handle pad_to_max_length, py::handle truncate, py::handle pad_left,
                              py::handle truncate_left, py::handle prefix, py::handle suffix,
                              py::handle allowed_special, py::handle disallowed_special, py::handle threads,
                              py::handle dtype) {
    const bpe::PadOptions options =
        pad_options(pad_id, max_length, pad_to_max_length, truncate, pad_left, truncate_left, prefix, suffix);
    const py::dtype type = ids_dtype(dtype, largest_row_id(self, options),
                                     "the largest of the vocabulary's, pad_id, prefix and suffix");
    TextBatch batch(texts, text_rule(self));
    const BatchIds ids = encode_batch_ids(self, batch, allowed_special, disallowed_special, threads);
    py::array_t<int64_t> lengths(py::ssize_t(ids.documents()));
    int64_t* length = lengths.mutable_data();
    size_t longest = 0;
    for (size_t k = 0; k + 1 < ids.bounds.size(); ++k) {
        size_t begin = 0;
        for (size_t j = 0; j < ids.ends[k].size(); ++j) {
            const size_t row = options.row_length(ids.ends[k][j] - begin);
            length[ids.bounds[k] + j] = int64_t(row);
            longest = std::max(longest, row);
            begin = ids.ends[k][j];
        }
    }
    size_t width = 0;
    try {
        width = options.width(longest);
    } catch (const std::invalid_argument& e) {
        throw py::value_error(e.what());
    }
    const bool is_unsigned = type.kind() == 'u';
    py::array matrix;
    switch (type.itemsize()) {
        case 2: matrix = is_unsigned ? padded_matrix<uint16_t>(ids, options, width) : padded_matrix<int16_t>(ids, options, width); break;
        case 4: matrix = is_unsigned ? padded_matrix<uint32_t>(ids, options, width) : padded_matrix<int32_t>(ids, options, width); break;
        default: matrix = is_unsigned ? padded_matrix<uint64_t>(ids, options, width) : padded_matrix<int64_t>(ids, options, width);
    }
    return py::make_tuple(matrix, lengths);
}

void bind_encoding(py::class_<bpe::Encoder>& encoder) {
    encoder
        .def(py::init(&make_encoder), py::arg("merges"), py::arg("pattern") = "default",
             py::arg("special_tokens") = py::none(), py::arg("token_ids") = py::none(), py::arg("rules") = py::none(),
             "merges: (a, b) pairs of ids (ints or numpy integers); merge k makes token 256 + k. pattern: the "
             "split rule, as for pretokenize. special_tokens: a list of str, numbered after the merges in that "
             "order. token_ids: the id of each token (the 256 bytes, the merges, the specials), when the "
             "vocabulary numbers them its own way (GPT-2 and GPT-4 shuffle the bytes); ids at most MAX_ID, all "
             "different, gaps allowed. rules: None, or a tokenizer.json's rules as a dict (normalizer, pre_tokenizer, "
             "added_tokens, ...), which then split the text and match the added tokens in it; of it, the model's options: "
             "ignore_merges (a chunk that is a token is that token), ranked_merges (None, or [left, right, made] "
             "in Hugging Face's rank order: the pair of lowest rank merges first), unmade_tokens ({text in the "
             "byte alphabet: id}, tokens no merge makes).")
        .def("encode", &encode, py::arg("text"), py::arg("allowed_special") = py::tuple(),
             py::arg("disallowed_special") = "all",
             "The token ids of text (a str, or bytes), as a list of ints. A str is read in place: an ASCII one "
             "with no copy, any other encoded to UTF-8 for the call only, leaving no copy on the str. As in "
             "tiktoken, a special token in the text becomes its id if allowed_special (\"all\" or a set of str) "
             "holds it, and raises ValueError if disallowed_special (\"all\": every one not allowed) does; "
             "otherwise it is ordinary text.")
        .def("encode_array", &encode_array, py::arg("text"), py::arg("allowed_special") = py::tuple(),
             py::arg("disallowed_special") = "all", py::arg("threads") = 0, py::arg("dtype") = py::none(),
             "As encode, as a numpy array, encoded on `threads` threads (0: as many as its size pays for). "
             "dtype: None for uint16 when n_vocab is 65,536 or less, else uint32; or an integer type of 16, "
             "32 or 64 bits that holds every id.")
        .def("count", &count, py::arg("text"), py::arg("allowed_special") = py::tuple(),
             py::arg("disallowed_special") = "all", py::arg("threads") = 0,
             "How many ids encode gives for text, on `threads` threads (0: as many as its size pays for), with no Python int or "
             "list made for them.")
        .def("encode_with_offsets", &encode_with_offsets, py::arg("text"), py::arg("allowed_special") = py::tuple(),
             py::arg("disallowed_special") = "all",
             "As encode, for a str, and each token's span in its characters, as a numpy array of shape (n, 2) "
             "of int64 (start, end): a token that begins or ends inside a character gets that whole character "
             "(Hugging Face's offsets).")
        .def("encode_batch", &encode_batch, py::arg("texts"), py::arg("allowed_special") = py::tuple(),
             py::arg("disallowed_special") = "all", py::arg("threads") = 0,
             "The token ids of each text of a list (all str, or all bytes), as encode gives them, encoded on "
             "`threads` threads (0: as many as its size pays for), each a run of consecutive texts of about equal bytes.")
        .def("encode_batch_flat", &encode_batch_flat, py::arg("texts"), py::arg("allowed_special") = py::tuple(),
             py::arg("disallowed_special") = "all", py::arg("threads") = 0,
             "As encode_batch, flat: (ids, offsets), every text's ids end to end in one numpy array (uint16 "
             "when n_vocab is 65,536 or less, else uint32) and len(texts) + 1 int64 offsets, text i's ids "
             "being ids[offsets[i]:offsets[i + 1]].")
        .def("count_batch", &count_batch, py::arg("texts"), py::arg("allowed_special") = py::tuple(),
             py::arg("disallowed_special") = "all", py::arg("threads") = 0,
             "How many ids encode gives for each text of a list, as a numpy int64 array, on `threads` threads (0: "
             "as many as their bytes pay for), with no text's ids kept.")
        .def("encode_batch_padded", &encode_batch_padded, py::arg("texts"), py::arg("pad_id"),
             py::arg("max_length") = py::none(), py::arg("pad_to_max_length") = false, py::arg("truncate") = false,
             py::arg("pad_left") = false, py::arg("truncate_left") = false, py::arg("prefix") = py::none(),
             py::arg("suffix") = py::none(), py::arg("allowed_special") = py::tuple(),
             py::arg("disallowed_special") = "all", py::arg("threads") = 0, py::arg("dtype") = py::none(),
             "As encode_batch, as one padded matrix and each row's length: (matrix, lengths), a numpy array of "
             "len(texts) rows (dtype: the narrowest of uint16 and uint32 that holds every id, pad_id, prefix and "
             "suffix, unless given) and int64 lengths. Row i is prefix, text i's ids, suffix, then pad_id up to "
             "the width (before them with pad_left). With truncate, a row keeps at most max_length - len(prefix) "
             "- len(suffix) of its text's ids, the first (the last with truncate_left); the width is max_length "
             "with pad_to_max_length, else the longest row's length.");
}

// --- the Encoder: its vocabulary, and decoding ---------------------------------------

py::bytes decode_bytes(const bpe::Encoder& self, py::handle ids, bool start) {
    std::vector<uint32_t> checked = ids_for_decoding(self, ids);
    std::string out;
    {
        GilReleased released;
        out = self.decode(checked.data(), checked.size(), false, start);
    }
    return py::bytes(out);
}

// A streaming decoder's step: the UTF-8 of the ids it may decode now, and how many.
py::tuple decode_stream(const bpe::Encoder& self, py::handle ids, bool start) {
    std::vector<uint32_t> checked = ids_for_decoding(self, ids);
    const size_t used = self.settled_ids(checked.data(), checked.size());
    std::string out = self.decode(checked.data(), used, false, start);
    return py::make_tuple(py::bytes(out), used);
}

py::bytes decode_single_token_bytes(const bpe::Encoder& self, py::handle id) {
    py::int_ value = index_from_python(id, "a token id");
    std::vector<uint32_t> checked = ids_for_decoding(self, py::make_tuple(value));
    std::string_view bytes = self.token_bytes(checked[0]);
    return py::bytes(bytes.data(), bytes.size());
}

py::dict special_token_ids(const bpe::Encoder& self) {
    py::dict out;
    for (const auto& [bytes, id] : self.specials().tokens()) out[py::str(bytes)] = id;
    return out;
}

void bind_vocabulary(py::class_<bpe::Encoder>& encoder) {
    encoder
        .def_property_readonly("pattern", [](const bpe::Encoder& self) { return bpe::pattern_name(self.pattern()); })
        .def_property_readonly("num_merges", &bpe::Encoder::num_merges)
        .def_property_readonly(
            "merges", [](const bpe::Encoder& self) { return self.merges(); },
            "The merges, as a list of (a, b) tuples of ints.")
        .def_property_readonly(
            "token_ids",
            [](const bpe::Encoder& self) {  // None: token i is id i
                return self.token_ids().empty() ? py::object(py::none()) : py::cast(self.token_ids());
            },
            "The id of every token, as a list of ints, or None when token i has id i.")
        .def_property_readonly("n_vocab", &bpe::Encoder::n_vocab,
                               "One more than the largest id (more than the number of tokens if ids have gaps).")
        .def_property_readonly("special_tokens", &special_token_ids, "Each special token's id, in the order given.")
        .def("decode_bytes", &decode_bytes, py::arg("ids"), py::arg("start") = true,
             "The bytes that ids (a list of ints or a numpy array) stand for, joined; a special token gives "
             "its text. With the rules' decoder, the UTF-8 of the text it makes of them; start: whether the ids "
             "begin the text (its strip_start applies), False for a streaming decoder's later calls. ValueError "
             "names an id that is no token's.")
        .def("decode_single_token_bytes", &decode_single_token_bytes, py::arg("id"), "The bytes of one token.")
        .def("decode_stream", &decode_stream, py::arg("ids"), py::arg("start") = true,
             "A streaming decoder's step under the rules' decoder: (the UTF-8 of the first `used` ids, used), where "
             "the ids left are byte tokens at the end that may begin a character later ones finish; start as "
             "decode_bytes's. Without a decoder, their bytes.");
}

}  // namespace

PYBIND11_MODULE(_core, m) {
    m.doc() = "The compiled core of bpe: byte-level BPE in C++. Texts in (bytes, or str read in place), ints "
              "out; see bpe.BPETokenizer for tiktoken's API on str.";
    m.attr("MAX_THREADS") = bpe::kMaxThreads;
    m.attr("BYTES_PER_THREAD") = bpe::kBytesPerThread;
    m.attr("MAX_ID") = bpe::kMaxId;

    // pybind11 looks numpy up on first use, and lets go of the GIL meanwhile, taking it back
    // in gil_scoped_release's destructor: a daemon thread's first encode_array as the
    // interpreter exits would end the process there (see take_gil). So it is looked up now.
    py::dtype::of<uint16_t>();

#if !defined(_WIN32)
    // A child forked while another thread held a cache's lock would wait for it forever
    // (encoder_table.h): after a fork, the child's caches start again.
    pthread_atfork(bpe::EncoderTable::before_fork, bpe::EncoderTable::after_fork_in_parent,
                   bpe::EncoderTable::after_fork_in_child);
    // The UTF-8 buffer a thread that the fork left behind had borrowed (py_text.h).
    pthread_atfork(nullptr, nullptr, bindings::Utf8Buffer::after_fork_in_child);
    pthread_atfork(nullptr, nullptr, bindings::main_thread_after_fork_in_child);
    // The kept threads are the parent's alone: the child's first call on threads starts its own.
    pthread_atfork(nullptr, nullptr, bpe::ThreadPool::after_fork_in_child);
#endif
    bindings::remember_main_thread();

    // A thread that the system cannot start (out of memory or address space): a Python
    // exception that says so, instead of ending the process.
    py::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p) std::rethrow_exception(p);
        } catch (const std::system_error& e) {
            PyErr_SetString(PyExc_RuntimeError,
                            (std::string("could not start a thread (") + e.what() + "): ask for fewer threads").c_str());
        }
    });

    // The split's SIMD tier, chosen once, before any thread splits.
    const std::string tier_warning = bpe::simd::set_tier_from_environment(std::getenv("BPE_SIMD"));
    if (!tier_warning.empty() && PyErr_WarnEx(PyExc_RuntimeWarning, tier_warning.c_str(), 1) != 0)
        throw py::error_already_set();

    bind_functions(m);
    bindings::bind_normalize(m);
    bind_added_tokens(m);
    bind_training(m);
    py::class_<bpe::Encoder> encoder(m, "Encoder",
                                     "Encodes text (str or bytes) with merges and special tokens, keeping a cache of "
                                     "chunks already encoded, and decodes ids back to bytes. Safe to use from "
                                     "several threads at once.");
    bind_encoding(encoder);
    bind_vocabulary(encoder);
}
