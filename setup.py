"""Builds the C++ module `bpe`: python setup.py build_ext --inplace

Set BPE_SANITIZE=1 to build it with AddressSanitizer and UndefinedBehaviorSanitizer,
for running the tests under them (see README.md, "Checking the C++ for memory errors").
"""
import glob
import os

from pybind11.setup_helpers import Pybind11Extension, build_ext
from setuptools import setup

compile_args = ["-O3"]
link_args = []
if os.environ.get("BPE_SANITIZE") == "1":
    # -O1 and frame pointers keep the sanitizers' stack traces readable.
    sanitize = ["-fsanitize=address,undefined", "-fno-sanitize-recover=undefined", "-fno-omit-frame-pointer"]
    compile_args = ["-O1", "-g"] + sanitize
    link_args = sanitize

setup(
    name="bpe",
    version="0.1.0",
    ext_modules=[
        Pybind11Extension(
            "bpe",
            ["bpe/bpe.cpp"],
            depends=sorted(glob.glob("bpe/*.h")),
            cxx_std=17,
            extra_compile_args=compile_args,
            extra_link_args=link_args,
        )
    ],
    cmdclass={"build_ext": build_ext},
    zip_safe=False,
)
