"""Writes bpe/_core.pyi, the type stub of the compiled core, from the built module.

    python tools/make_stub.py            # rewrite bpe/_core.pyi from the build in place
    python tools/make_stub.py --check    # exit 1, with a diff, if the stub no longer matches

Editors and mypy cannot look inside a compiled module, so without a stub they see
`Any` under bpe.Encoder, bpe.ChunkCounter and the module's functions. The stub is made
by pybind11-stubgen from the signatures the bindings give (each binding's docstring
opens with its signature, with real types: see csrc/), so it is checked into the
package and CI runs --check after building: a binding whose arguments change without a
new stub fails there. Needs `pip install pybind11-stubgen` (requirements-dev.txt).
"""
import argparse
import difflib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STUB = ROOT / "bpe" / "_core.pyi"


def generate() -> str:
    """The stub as pybind11-stubgen writes it for the bpe._core built in the repository."""
    with tempfile.TemporaryDirectory() as out:
        env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
        command = [sys.executable, "-m", "pybind11_stubgen", "bpe._core", "--output-dir", out, "--exit-code"]
        result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
        if result.returncode != 0:
            sys.exit(f"pybind11-stubgen failed on bpe._core (is the core built, and pybind11-stubgen "
                     f"installed?):\n{result.stdout}{result.stderr}")
        return (Path(out) / "bpe" / "_core.pyi").read_text(encoding="utf-8")


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
