"""Writes bpe/_core.pyi, the type stub of the compiled core, from the built module.

    python tools/make_stub.py            # rewrite bpe/_core.pyi from the build in place
    python tools/make_stub.py --check    # exit 1, with a diff, if the stub no longer matches

Editors and mypy cannot look inside a compiled module, so without a stub they see
`Any` under bpe.Encoder, bpe.ChunkCounter and the module's functions. The stub is made
by pybind11-stubgen from the signatures pybind11 gives the bindings, and checked into
the package; CI runs --check after building, so a binding whose arguments change
without a new stub fails there. Needs `pip install pybind11-stubgen`
(requirements-dev.txt).

The bindings read most arguments as plain Python objects (py::handle) and check them
themselves, with one message per mistake (csrc/py_args.h, py_text.h, py_tokens.h), so
pybind11 knows their types only as "object". What the checks accept is written below,
once per argument name (PARAMETERS, with a few per-method exceptions), and what each
binding gives back where pybind11 says only "list" or "tuple" (RETURNS); the stub is
pybind11-stubgen's with these types put in. An argument name that has no entry stays
`typing.Any` and fails --check, so a new argument cannot go untyped.
"""
import argparse
import difflib
import re
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STUB = ROOT / "bpe" / "_core.pyi"

SPECIALS = "typing.Literal['all'] | collections.abc.Collection[str]"
# What each argument takes, by its name: what the core's checks accept.
PARAMETERS = {
    "text": "str | bytes",
    "texts": "collections.abc.Sequence[str] | collections.abc.Sequence[bytes]",
    "pattern": "str",
    "special_tokens": "collections.abc.Iterable[str] | None",
    "allowed_special": SPECIALS,
    "disallowed_special": SPECIALS,
    "threads": "typing.SupportsIndex",
    "num_merges": "typing.SupportsIndex",
    "vocab_size": "typing.SupportsIndex",
    "max_memory": "typing.SupportsIndex | None",
    "merges": "collections.abc.Iterable[tuple[typing.SupportsIndex, typing.SupportsIndex]] | numpy.typing.ArrayLike",
    "token_ids": "collections.abc.Iterable[typing.SupportsIndex] | None",
    "rules": "dict[str, object] | None",
    "ids": "collections.abc.Sequence[typing.SupportsIndex] | numpy.typing.NDArray[numpy.integer]",
    "id": "typing.SupportsIndex",
    "chunks": "bytes | bytearray | memoryview",
    "progress": "collections.abc.Callable[[int], object] | None",
    "pad_id": "typing.SupportsIndex",
    "max_length": "typing.SupportsIndex | None",
    "pad_to_max_length": "bool",
    "truncate": "bool",
    "pad_left": "bool",
    "truncate_left": "bool",
    "prefix": "collections.abc.Iterable[typing.SupportsIndex] | None",
    "suffix": "collections.abc.Iterable[typing.SupportsIndex] | None",
    "dtype": "numpy.typing.DTypeLike | None",
}
# Where one method's argument takes more, or less, than its name says elsewhere.
PARAMETERS_OF = {
    ("ChunkCounter", "add", "texts"): "str | bytes | collections.abc.Sequence[str] | collections.abc.Sequence[bytes]",
    (None, "safe_cut", "text"): "str",
    (None, "pretokenize", "text"): "bytes | bytearray | memoryview",
    (None, "count_chunks", "text"): "bytes | bytearray | memoryview",
    (None, "train", "text"): "bytes | bytearray | memoryview",
    ("Encoder", "encode_with_offsets", "text"): "str",
    (None, "lower_rank_splits", "ranks"): "dict[bytes, int]",
    (None, "lower_rank_splits", "tokens"): "list[bytes]",
    (None, "huggingface_merges", "vocab"): "dict[str, int]",
    (None, "huggingface_merges", "merges"): "list[str] | list[list[str]]",
    (None, "huggingface_merges", "alphabet"): "str",
    (None, "threads_for", "bytes"): "typing.SupportsIndex",
    (None, "added_token_segments", "text"): "str",
    (None, "added_token_segments", "tokens"): "collections.abc.Sequence[dict[str, str | int | bool]]",
    (None, "added_token_segments", "normalized"): "bool",
    (None, "added_token_segments", "allowed"): SPECIALS,
    (None, "normalize", "text"): "str",
    (None, "normalize", "normalizer"): "str | list[dict[str, object]] | None",
}
# What a binding gives back, where pybind11 knows only "list", "tuple", "dict" or "object".
RETURNS = {
    ("ChunkCounter", "counts"): "tuple[bytes, numpy.ndarray, numpy.ndarray]",
    ("ChunkCounter", "max_memory"): "int | None",
    ("ChunkCounter", "special_tokens"): "list[str]",
    ("Encoder", "encode"): "list[int]",
    ("Encoder", "encode_batch"): "list[list[int]]",
    ("Encoder", "encode_with_offsets"): "tuple[list[int], numpy.ndarray]",
    ("Encoder", "encode_batch_flat"): "tuple[numpy.ndarray, numpy.ndarray]",
    ("Encoder", "encode_batch_padded"): "tuple[numpy.ndarray, numpy.ndarray]",
    ("Encoder", "special_tokens"): "dict[str, int]",
    ("Encoder", "token_ids"): "list[int] | None",
    (None, "pretokenize"): "list[bytes]",
    (None, "added_token_segments"): "list[tuple[int, int, int | None]]",
    (None, "nfc"): "tuple[str | bytes, list[int]]",
    (None, "normalize"): "tuple[str, list[int] | None]",
    (None, "huggingface_merges"): "tuple[list[tuple[int, int]], list[int], list[str], list[list[int]] | None]",
}


def typed(stub: str) -> str:
    """pybind11-stubgen's stub with the types above put in, and the imports they need."""
    out, klass = [], None
    for line in stub.splitlines(keepends=True):
        if line.startswith("class "):
            klass = line[len("class "):].split(":")[0].split("(")[0]
        elif line.startswith("def "):
            klass = None
        name = re.match(r"\s*def (\w+)\(", line)
        if name:
            method = name.group(1)

            def argument(match):
                arg = match.group(1)
                kind = PARAMETERS_OF.get((klass, method, arg), PARAMETERS.get(arg))
                return f"{arg}: {kind}" if kind else match.group(0)

            line = re.sub(r"\b(\w+): (?:typing\.Any|dict|list)\b(?![\[.])", argument, line)
            if (klass, method) in RETURNS:
                line = re.sub(r"-> [^:]+:$", f"-> {RETURNS[klass, method]}:", line.rstrip("\n")) + "\n"
        out.append(line)
    text = "".join(out)
    return text.replace("import numpy\n", "import collections.abc\nimport numpy\n", 1)


def generate() -> str:
    """The stub for the bpe._core built in the repository: pybind11-stubgen's, typed."""
    with tempfile.TemporaryDirectory() as out:
        env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
        command = [sys.executable, "-m", "pybind11_stubgen", "bpe._core", "--output-dir", out, "--exit-code"]
        result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
        if result.returncode != 0:
            sys.exit(f"pybind11-stubgen failed on bpe._core (is the core built, and pybind11-stubgen "
                     f"installed?):\n{result.stdout}{result.stderr}")
        stub = typed((Path(out) / "bpe" / "_core.pyi").read_text(encoding="utf-8"))
    if "typing.Any" in stub:
        untyped = [line.strip() for line in stub.splitlines() if "typing.Any" in line]
        sys.exit("tools/make_stub.py has no type for these arguments (add them to PARAMETERS):\n" + "\n".join(untyped))
    return stub


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true",
                        help="compare with the stub checked in, and fail with a diff if they differ")
    args = parser.parse_args()
    stub = generate()
    if not args.check:
        STUB.write_text(stub, encoding="utf-8")
        print(f"wrote {STUB.relative_to(ROOT)} ({len(stub.splitlines())} lines)")
        return
    kept = STUB.read_text(encoding="utf-8") if STUB.exists() else ""
    if kept != stub:
        sys.stdout.writelines(difflib.unified_diff(kept.splitlines(True), stub.splitlines(True),
                                                   "bpe/_core.pyi (checked in)", "bpe/_core.pyi (from the build)"))
        sys.exit("bpe/_core.pyi no longer matches the compiled core: run python tools/make_stub.py and commit it")
    print("bpe/_core.pyi matches the compiled core")


if __name__ == "__main__":
    main()
