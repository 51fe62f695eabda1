"""Runs the examples in the documentation and checks that they print what the page says.

    python tools/check_examples.py README.md docs/*.md            # check (CI runs this)
    python tools/check_examples.py --update README.md docs/*.md   # write what they print

An example is a ```python block right after the line

    <!-- example: checked by tools/check_examples.py -->

followed by a ```text block: its output. Each example runs in a fresh Python process in
an empty temporary folder, with the repository on the import path, so it can rely on
nothing but what it says. Only examples whose output is always the same are marked
(no timings, no paths of the machine that ran them); the output on the page is never
edited by hand: --update writes it.
"""
import argparse
import difflib
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MARK = "<!-- example: checked by tools/check_examples.py -->"
EXAMPLE = re.compile(re.escape(MARK) + r"\n```python\n(?P<code>.*?)\n```\n\n```text\n(?P<output>.*?)```\n", re.DOTALL)


def run(code: str) -> str:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    with tempfile.TemporaryDirectory() as folder:
        result = subprocess.run([sys.executable, "-c", code], cwd=folder, env=env, capture_output=True, text=True,
                                timeout=600)
    if result.returncode != 0:
        raise RuntimeError(f"the example failed:\n{code}\n{result.stderr}")
    return result.stdout


def check(path: Path, update: bool) -> int:
    """The number of examples in path whose output differs (0 after an update)."""
    text = path.read_text(encoding="utf-8")
    if text.count(MARK) != len(EXAMPLE.findall(text)):
        sys.exit(f"{path}: a {MARK} line is not followed by a ```python block and a ```text block")
    wrong = 0
    pieces, end = [], 0
    for match in EXAMPLE.finditer(text):
        printed = run(match["code"])
        if printed != match["output"]:
            wrong += 1
            line = text.count("\n", 0, match.start()) + 1
            if not update:
                diff = difflib.unified_diff(match["output"].splitlines(), printed.splitlines(), "the page", "printed",
                                            lineterm="")
                print(f"{path}:{line}: the example prints something else:\n" + "\n".join(diff) + "\n")
        pieces.append(text[end:match.start("output")] + printed)
        end = match.end("output")
    if update and wrong:
        path.write_text("".join(pieces) + text[end:], encoding="utf-8")
        print(f"{path}: wrote the output of {wrong} example(s)")
    return 0 if update else wrong


def main():
    parser = argparse.ArgumentParser(description="Run the documentation's examples and compare their output.")
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--update", action="store_true", help="write each example's output into the page")
    args = parser.parse_args()
    wrong = sum(check(path, args.update) for path in args.files)
    counted = sum(path.read_text(encoding="utf-8").count(MARK) for path in args.files)
    print(f"{counted} examples, {wrong} printing something else than their page says")
    sys.exit(1 if wrong else 0)


if __name__ == "__main__":
    main()
