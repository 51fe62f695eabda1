// Bindings of normalize.h and normalizer.h for the tests: nfc(text) and is_nfc(text) on
// a str, and normalize(text, normalizer) by a rules normalizer.
// Included by _core.cpp only.
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <string_view>
#include <vector>

#include "normalize.h"
#include "normalizer.h"
#include "py_gil.h"
#include "py_rules.h"

namespace bindings {

namespace py = pybind11;

// The UTF-8 of a str (a lone surrogate: Python's UnicodeEncodeError), or a bytes' bytes: the
// tests hand invalid UTF-8 over as bytes (py_text.h's utf8_of takes a str only).
inline std::string str_or_bytes_utf8(const py::object& text) {
    if (PyUnicode_Check(text.ptr())) {
        Py_ssize_t size = 0;
        const char* data = PyUnicode_AsUTF8AndSize(text.ptr(), &size);
        if (!data) throw py::error_already_set();
        return std::string(data, static_cast<size_t>(size));
    }
    if (PyBytes_Check(text.ptr())) return text.cast<std::string>();
    throw py::type_error("text must be str or bytes, not " + std::string(Py_TYPE(text.ptr())->tp_name));
}

inline void bind_normalize(py::module_& m) {
    m.def(
        "nfc",
        [](py::object text) {
            // bytes too, so that the tests can hand over invalid UTF-8: the result is then bytes
            const bool is_bytes = PyBytes_Check(text.ptr());
            const std::string in = str_or_bytes_utf8(text);
            std::string out;
            std::vector<uint32_t> origin;
            {
                GilReleased released;
                bpe::nfc(in, out, &origin);
            }
            py::object normalized = is_bytes ? py::object(py::bytes(out)) : py::object(py::str(out));
            return py::make_tuple(normalized, py::cast(origin));
        },
        py::arg("text"),
        "NFC of text (str, or bytes of UTF-8), as Hugging Face's tokenizers normalizes it, and the origin of "
        "each byte of the result's UTF-8: the byte offset in text's UTF-8 of the start of the input character "
        "that the output byte came from, and one entry more at the end, the input's length in bytes. A token "
        "spanning output bytes [b, e) has Hugging Face's offsets from origin[b] to the end of the input "
        "character at origin[e - 1].");
    m.def(
        "is_nfc",
        [](py::object text) {
            const std::string in = str_or_bytes_utf8(text);
            GilReleased released;
            return bpe::is_nfc(in);
        },
        py::arg("text"), "Whether text (str, or bytes of UTF-8) is in NFC, as Hugging Face's tokenizers normalizes it.");
    m.def(
        "normalize",
        [](py::str text, py::handle normalizer, bool origins) {
            const bpe::Normalizer steps = normalizer_from_python(normalizer);
            const std::string in = str_or_bytes_utf8(text);
            std::string out;
            std::vector<uint32_t> origin;
            {
                GilReleased released;
                steps.run(in, out, origins ? &origin : nullptr);
            }
            return py::make_tuple(py::str(out), origins ? py::object(py::cast(origin)) : py::object(py::none()));
        },
        py::arg("text"), py::arg("normalizer"), py::arg("origins") = true,
        "text through a rules normalizer (the rules dict's 'normalizer': 'NFC' or a list of steps), and the "
        "origin of each byte of the result's UTF-8, as nfc gives it. ValueError names a step that is wrong. "
        "origins=False: None for the origins, the text made as encode makes it (without them).");
}

}  // namespace bindings
