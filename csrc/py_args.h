// Numbers, sizes and shapes of the arguments Python hands the core, checked once, here,
// with one message per mistake: ids and counts (an int or a numpy integer, never a
// float or a bool), thread counts, lists that are not str or bytes, the split rule's
// name. Included by _core.cpp only.
#pragma once

#include <pybind11/pybind11.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <optional>
#include <string>
#include <thread>

#include "parallel.h"
#include "split.h"
#include "vocabulary.h"

namespace bindings {

namespace py = pybind11;

// The name of an object's type, for messages ("bytes", "list").
inline std::string type_name(py::handle obj) { return py::str(py::type::handle_of(obj).attr("__name__")); }

// An id or a size from Python, as a Python int: an int or a numpy integer (whatever
// operator.index takes, as tiktoken does), never a float, nor a bool (an int to Python,
// but True as a token id or a count is a mistake), numpy's bool included (numpy 2.2 and
// older still give it an __index__, with a DeprecationWarning). Empty when it is not one.
inline bool is_bool(py::handle obj) {
    const char* name = Py_TYPE(obj.ptr())->tp_name;
    return PyBool_Check(obj.ptr()) || std::strcmp(name, "numpy.bool") == 0 || std::strcmp(name, "numpy.bool_") == 0;
}

inline std::optional<py::int_> as_index(py::handle obj) {
    PyObject* as_int = is_bool(obj) ? nullptr : PyNumber_Index(obj.ptr());
    if (as_int == nullptr) {
        PyErr_Clear();
        return std::nullopt;
    }
    return py::reinterpret_steal<py::int_>(as_int);
}

// as_index, or TypeError: "`what` must be `an_int`, not ...".
inline py::int_ index_from_python(py::handle obj, const std::string& what, const char* an_int = "an int") {
    std::optional<py::int_> value = as_index(obj);
    if (!value)
        throw py::type_error(what + " must be " + an_int + ", not " + type_name(obj) + ": got " +
                             std::string(py::repr(obj)));
    return *value;
}

// A Python int as a long long, the nearest one when it is beyond them (so that a range
// check refuses it all the same).
inline long long clamped_long_long(const py::int_& value) {
    int overflow = 0;
    long long n = PyLong_AsLongLongAndOverflow(value.ptr(), &overflow);
    return overflow > 0 ? LLONG_MAX : overflow < 0 ? LLONG_MIN : n;
}

// A size from Python between `low` and `high`: ValueError names `what`, says what it
// must be (`at_least`, when too small: "0 or more" unless given) and shows the value
// as given.
inline long long size_from_python(py::handle obj, const std::string& what, long long low, long long high,
                           std::string at_least = "") {
    py::int_ value = index_from_python(obj, what);
    long long n = clamped_long_long(value);
    if (at_least.empty()) at_least = std::to_string(low) + " or more";
    if (n < low) throw py::value_error(what + " must be " + at_least + ", got " + std::string(py::repr(value)));
    if (n > high)
        throw py::value_error(what + " must be at most " + std::to_string(high) + ", got " +
                              std::string(py::repr(value)));
    return n;
}

// The threads a caller asked for: 0 (as many as the text pays for: bpe::threads_for,
// which every call takes it to) up to bpe::kMaxThreads.
inline unsigned threads_asked(py::handle threads) {
    return unsigned(size_from_python(threads, "threads", 0, bpe::kMaxThreads, "0 (as many as pay) or more"));
}

// The most merges there can be: merge k makes token 256 + k, and ids go up to MAX_ID.
constexpr long long kMaxMerges = (long long)bpe::kMaxId + 1 - 256;

inline long long num_merges_from_python(py::handle num_merges) {
    return size_from_python(num_merges, "num_merges", 0, kMaxMerges);
}

inline bool is_sequence_of_items(py::handle obj) {
    return PySequence_Check(obj.ptr()) && !PyUnicode_Check(obj.ptr()) && !PyBytes_Check(obj.ptr());
}

// Whether obj holds items in an order one can go through: a list, a tuple, a numpy
// array, a generator, ..., but not a str or bytes, whose items are characters and
// bytes, nor a set or a dict, whose order is not the caller's to give (merges and
// special tokens are numbered in their order, and a set of str changes its order from
// one run to the next).
inline bool is_iterable_of_items(py::handle obj) {
    PyObject* o = obj.ptr();
    return py::isinstance<py::iterable>(obj) && !PyUnicode_Check(o) && !PyBytes_Check(o) && !PyAnySet_Check(o) &&
           !PyDict_Check(o);
}

// The split rule from Python: "default", "gpt2", "gpt4" or a regex (split.h,
// parse_pattern); a regex it cannot take is a ValueError naming what.
inline bpe::SplitRule pattern_from_python(py::handle obj) {
    if (!PyUnicode_Check(obj.ptr())) throw py::type_error("pattern must be a str, not " + type_name(obj));
    return bpe::parse_pattern(py::cast<std::string>(obj));  // a lone surrogate: UnicodeEncodeError, a ValueError
}

}  // namespace bindings
