"""Ids to a Python list alone, on fixed ids: csrc/py_tokens.h's ids_to_list (a shared int, a
Py_INCREF and a store per id) against what was suggested trying (a plain store per
id, then each int's reference count raised once by its count), and numpy's tolist (a
new int per id) as a yardstick.

    python tools/list_output.py [--rounds 15]

Builds a small extension in a temporary folder (about a minute) that includes
py_tokens.h as _core.cpp does, then times each way on the ids of cl100k over 1.5 MB of
stories and 1.5 MB of Python source, one call of each in turn for every round, the list
freed untimed. Prints ns per id, medians of the rounds.
"""
import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("BPE_SHARED_DATA", ROOT.parent / "shared" / "data"))

MODULE = r"""
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include "py_tokens.h"
namespace py = pybind11;
using namespace bindings;

PYBIND11_MODULE(list_output, m) {
    m.def("reserve", [](size_t n) { shared_ints.reserve(n); });
    m.def("ids_to_list", [](py::array_t<uint32_t> ids) { return ids_to_list(ids.data(), size_t(ids.size())); });
    // Tried: a plain store per id, then each int's references added once, by its count.
    m.def("store_then_references", [](py::array_t<uint32_t> ids, py::list ints) {
        static std::vector<uint32_t> counts;
        const uint32_t* data = ids.data();
        size_t n = size_t(ids.size());
        PyObject** shared = reinterpret_cast<PyListObject*>(ints.ptr())->ob_item;
        counts.resize(size_t(py::len(ints)));
        py::list out(n);
        PyObject** items = reinterpret_cast<PyListObject*>(out.ptr())->ob_item;
        for (size_t i = 0; i < n; ++i) {
            items[i] = shared[data[i]];
            ++counts[data[i]];
        }
        for (size_t i = 0; i < n; ++i) {
            if (uint32_t c = counts[data[i]]) {
                Py_SET_REFCNT(items[i], Py_REFCNT(items[i]) + c);
                counts[data[i]] = 0;
            }
        }
        return out;
    });
}
"""


def build(folder: Path):
    source = folder / "list_output.cpp"
    source.write_text(MODULE)
    import pybind11

    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    target = folder / f"list_output{suffix}"
    include = sysconfig.get_paths()["include"]
    subprocess.run(["c++", "-O3", "-std=c++17", "-shared", "-fPIC", "-fvisibility=hidden", f"-I{include}",
                    f"-I{pybind11.get_include()}", f"-I{ROOT / 'csrc'}", str(source), "-o", str(target)], check=True)
    spec = importlib.util.spec_from_file_location("list_output", target)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    import numpy as np

    from bench.texts import python_source
    from bpe import BPETokenizer
    from bpe.formats import cl100k_path

    tok = BPETokenizer.from_tiktoken(cl100k_path())
    stories = (DATA / "tinystories" / "train-sample-lowercase.txt").read_text(encoding="utf-8")[-1_500_000:]
    source, _ = python_source(1_500_000)
    texts = {"stories": tok.encode_array(stories).astype(np.uint32),
             "Python source": tok.encode_array(source).astype(np.uint32)}
    with tempfile.TemporaryDirectory() as folder:
        module = build(Path(folder))
    module.reserve(tok.n_vocab)
    ints = list(range(tok.n_vocab))  # ints of our own for the way tried, made once, as shared_ints are
    ways = {"ids_to_list (a Py_INCREF per id)": module.ids_to_list,
            "tried: a store per id, then references": lambda ids: module.store_then_references(ids, ints),
            "numpy tolist (new ints)": lambda ids: ids.tolist()}
    for name, ids in texts.items():
        assert module.ids_to_list(ids) == module.store_then_references(ids, ints) == ids.tolist()
        seconds = {way: [] for way in ways}
        for r in range(args.rounds):
            for way, call in ways.items():
                start = time.perf_counter()
                out = call(ids)
                seconds[way].append(time.perf_counter() - start)
                del out
        print(f"{name}: {len(ids):,} ids, cl100k; medians of {args.rounds} rounds")
        for way in ways:
            print(f"  {way:40s} {statistics.median(seconds[way]) / len(ids) * 1e9:6.2f} ns per id")


if __name__ == "__main__":
    main()
