"""Runs the library's own tests against the installed package, not the source tree.

    python tools/wheel_tests.py [test files and pytest arguments; default: all of them]

The tests are the ones the sdist ships (MANIFEST.in's tests/ files, and the tools/
scripts they import) with bpe_reference.py, copied into a temporary folder outside the repository and run there,
so that `import bpe` finds the installed wheel (inside the repository, pytest's
pythonpath would put the source tree, which has no compiled core, first). Written in
Python rather than shell so that cibuildwheel's test command runs it on Windows too.
"""
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def library_tests() -> list[str]:
    """The test files and helpers MANIFEST.in ships in the sdist, and the tools/ scripts
    beside them (a test imports one), but not the C++ sources."""
    names = []
    for line in (ROOT / "MANIFEST.in").read_text(encoding="utf-8").splitlines():
        words = line.split()
        if words[:1] == ["include"]:
            # Every file named (tests, the tools they import, docs/library.md which a test
            # reads), but the C++ sources, which the wheel's core replaces.
            names += [w for w in words[1:] if "*" not in w and not w.endswith((".h", ".cpp"))]
    return names


def main() -> int:
    with tempfile.TemporaryDirectory() as folder:
        run = Path(folder)
        shutil.copy(ROOT / "bpe_reference.py", run)
        for name in library_tests():
            (run / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(ROOT / name, run / name)
        env = {**os.environ, "PYTHONPATH": str(run)}
        check = "import bpe, sys; print('testing bpe from', bpe.__file__, '(SIMD tier', bpe.simd_tier() + ')')"
        subprocess.run([sys.executable, "-c", check], cwd=run, env=env, check=True)
        # Arguments are pytest's: test files (of the copied ones) to run instead of all of them.
        # --rootdir: the copy has no pyproject.toml, and without it a single file's folder
        # would be the root, and tests/conftest.py (which puts the helpers on the path) unread.
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(run),
                   *(sys.argv[1:] or ["tests"])]
        return subprocess.run(command, cwd=run, env=env).returncode


if __name__ == "__main__":
    sys.exit(main())
