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


def run(code: str) -> tuple[bool, str]:
    """(whether it ran to the end, what it printed, or its stderr where it failed)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    with tempfile.TemporaryDirectory() as folder:
        try:
            result = subprocess.run([sys.executable, "-c", code], cwd=folder, env=env, capture_output=True,
                                    text=True, timeout=600)
        except subprocess.TimeoutExpired:
            return False, "it ran for more than 600 s"
    if result.returncode != 0:
        return False, result.stderr
    return True, result.stdout


def check(path: Path, update: bool) -> tuple[int, int, int]:
    """(examples, how many failed to run, how many printed something else) in path; each
    is reported as it is found, so one broken example does not hide the next."""
    text = path.read_text(encoding="utf-8")
    if text.count(MARK) != len(EXAMPLE.findall(text)):
        print(f"{path}: a {MARK} line is not followed by a ```python block and a ```text block")
        return text.count(MARK), text.count(MARK) - len(EXAMPLE.findall(text)), 0
    failed = wrong = 0
    pieces, end = [], 0
    for match in EXAMPLE.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        ok, printed = run(match["code"])
        if not ok:
            failed += 1
            print(f"{path}:{line}: the example failed:\n{match['code']}\n{printed}")
            printed = match["output"]  # an update keeps what the page says
        elif printed != match["output"]:
            wrong += 1
            if not update:
                diff = difflib.unified_diff(match["output"].splitlines(), printed.splitlines(), "the page", "printed",
                                            lineterm="")
                print(f"{path}:{line}: the example prints something else:\n" + "\n".join(diff) + "\n")
        pieces.append(text[end:match.start("output")] + printed)
        end = match.end("output")
    if update and wrong:
        path.write_text("".join(pieces) + text[end:], encoding="utf-8")
        print(f"{path}: wrote the output of {wrong} example(s)")
    return len(EXAMPLE.findall(text)), failed, 0 if update else wrong


def main():
    parser = argparse.ArgumentParser(description="Run the documentation's examples and compare their output.")
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--update", action="store_true", help="write each example's output into the page")
    args = parser.parse_args()
    counted = failed = wrong = 0
    for path in args.files:
        n, f, w = check(path, args.update)
        counted, failed, wrong = counted + n, failed + f, wrong + w
    print(f"{counted} examples: {counted - failed - wrong} as its page says, {failed} failed to run, "
          f"{wrong} printing something else")
    sys.exit(1 if failed or wrong else 0)


if __name__ == "__main__":
    main()
