"""Builds the compiled core of the `bpe` package, bpe._core:

    python setup.py build_ext --inplace     # for working in the repository
    pip install .                           # the library alone, from any directory

The package's name, version and dependencies are in pyproject.toml. Switches, through
the environment:
  BPE_SANITIZE=address   AddressSanitizer and UBSan, without NDEBUG so pybind11's
                         checks that the GIL is held are on (see .ci/variant)
  BPE_SANITIZE=thread    ThreadSanitizer, likewise
  BPE_PORTABLE=1         the portable C++ path only, as an ARM machine builds it: no
                         SSE2 block in the split rule and no SIMD tiers, so the split
                         runs a chunk at a time (see csrc/split.h, csrc/split_simd.h)
  BPE_WERROR=1           -Wall -Wextra -Werror for the project's own code (csrc/);
                         pybind11's and Python's headers are read as system headers,
                         whose warnings are not ours to fix. CI builds this way with
                         clang (CC=clang CXX=clang++, .ci/variant clang)

The SIMD tiers of the split (SSE2, AVX2, AVX-512) are all compiled, each function for
its own target, and the best one the CPU has is picked when the module is imported
(the environment variable BPE_SIMD picks another), so one build runs on any x86-64.
"""
import glob
import os

from pybind11.setup_helpers import Pybind11Extension, build_ext
from setuptools import setup

compile_args = ["-O3"]
link_args = []
macros = []
sanitize = os.environ.get("BPE_SANITIZE", "")
if sanitize in ("1", "address"):
    # -O1 and frame pointers keep the sanitizers' stack traces readable.
    flags = ["-fsanitize=address,undefined", "-fno-sanitize-recover=undefined", "-fno-omit-frame-pointer"]
    compile_args, link_args = ["-O1", "-g", "-UNDEBUG"] + flags, flags
elif sanitize == "thread":
    flags = ["-fsanitize=thread", "-fno-omit-frame-pointer"]
    compile_args, link_args = ["-O1", "-g", "-UNDEBUG"] + flags, flags
elif sanitize:
    raise SystemExit(f"BPE_SANITIZE must be address or thread, got {sanitize!r}")
if os.environ.get("BPE_PORTABLE") == "1":
    macros.append(("BPE_PORTABLE", "1"))
if os.environ.get("BPE_WERROR") == "1":
    import sysconfig

    import pybind11

    # A directory given with -isystem as well as -I is searched as a system directory.
    system = [pybind11.get_include(), sysconfig.get_paths()["include"]]
    compile_args += ["-Wall", "-Wextra", "-Werror"] + [arg for path in system for arg in ("-isystem", path)]


class BuildExt(build_ext):
    """pybind11's build_ext, with NDEBUG left undefined in the sanitizer builds:
    Python's own flags define it, and they come first on the command line."""

    def build_extensions(self):
        if sanitize:
            for flags in (self.compiler.compiler_so, getattr(self.compiler, "compiler_so_cxx", [])):
                while "-DNDEBUG" in flags:
                    flags.remove("-DNDEBUG")
        super().build_extensions()


setup(
    packages=["bpe", "bpe.cli", "bpe.cli.commands"],
    ext_modules=[
        Pybind11Extension(
            "bpe._core",
            ["csrc/_core.cpp"],
            depends=sorted(glob.glob("csrc/*.h")),
            cxx_std=17,
            define_macros=macros,
            extra_compile_args=compile_args,
            extra_link_args=link_args,
        )
    ],
    cmdclass={"build_ext": BuildExt},
    zip_safe=False,
)
