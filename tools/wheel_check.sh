#!/usr/bin/env bash
# Builds the wheel as a user's pip would get it and tests it where no compiler exists:
#   bash tools/wheel_check.sh [python [test files...]]   # python: the interpreter to build for
#                                                         # (default: python); tests: all the library's
# 1. `pip wheel .` builds bpe._core; `auditwheel repair` makes the wheel manylinux (it
#    names the oldest glibc the build allows) and checks it needs no library outside it.
# 2. The wheel is listed: it must hold the Python files, the compiled core, py.typed and
#    the stub, and no C++ source and no test.
# 3. A fresh venv whose PATH has no C compiler (every cc, gcc, g++, clang and the like
#    left out) installs the wheel and the test requirements from wheels only, and runs
#    the library's own tests against it (tools/wheel_tests.py).
set -euo pipefail
python=${1:-python}
shift || true
repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$python" -m pip wheel "$repo" --no-deps --no-build-isolation -q -w "$work/built"
"$python" -m auditwheel repair -w "$work/wheel" "$work"/built/*.whl
wheel=$(ls "$work"/wheel/*.whl)
echo "wheel: $(basename "$wheel") ($(du -k "$wheel" | cut -f1) KiB)"
"$python" -m zipfile -l "$wheel" > "$work/listing"
cat "$work/listing"
if grep -E '\.(h|cpp)\s|tests/|(^|/)test_' "$work/listing"; then
  echo "the wheel holds C++ sources or tests" >&2; exit 1
fi
grep -q 'bpe/py.typed' "$work/listing" || { echo "the wheel has no bpe/py.typed" >&2; exit 1; }
grep -q 'bpe/_core.pyi' "$work/listing" || { echo "the wheel has no bpe/_core.pyi" >&2; exit 1; }
grep -q 'bpe/cli/commands/train.py' "$work/listing" || { echo "the wheel has no bpe/cli, the command" >&2; exit 1; }

# A PATH with every tool of the system but the compilers.
mkdir "$work/path"
for dir in /usr/local/bin /usr/bin /bin; do
  for tool in "$dir"/*; do
    name=$(basename "$tool")
    case "$name" in
      cc|c++|cpp|gcc*|g++*|clang*|*-gcc*|*-g++*|*-cc|*-c++|icc|icpx|tcc) continue ;;
    esac
    [ -e "$work/path/$name" ] || ln -s "$tool" "$work/path/$name"
  done
done
"$python" -m venv "$work/venv"
export PATH="$work/venv/bin:$work/path"
for compiler in cc gcc g++ c++ clang clang++; do
  if command -v "$compiler" >/dev/null; then echo "$compiler is still on the PATH" >&2; exit 1; fi
done
echo "no compiler on the PATH: $(command -v cc gcc g++ clang || true)"
pip install -q --only-binary :all: "$wheel" -r "$repo/requirements-test.txt"

python "$repo/tools/wheel_tests.py" "$@"
