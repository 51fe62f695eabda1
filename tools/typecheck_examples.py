"""Type-checks the library and every marked example of the README and the docs with mypy.

    python tools/typecheck_examples.py README.md docs/*.md     # CI runs this

The examples are the ```python blocks that tools/check_examples.py runs (the ones after
its marker line). Each is written to a file of its own in a temporary folder and mypy
checks them all, with the package, under the settings of pyproject.toml's [tool.mypy]
(the oldest Python the package supports among them): an example that passes a wrong
type to the library, or calls a name it does not have, fails here as it would in a
user's editor. Needs `pip install mypy` (requirements-dev.txt) and the built core,
whose types come from bpe/_core.pyi.
"""
import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from check_examples import EXAMPLE, ROOT  # noqa: E402 (the one definition of a marked example)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pages", nargs="+", type=Path, help="Markdown files whose marked examples to check")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        files = []
        for page in args.pages:
            for number, match in enumerate(EXAMPLE.finditer(page.read_text(encoding="utf-8")), 1):
                name = Path(folder) / f"{page.stem.replace('-', '_')}_example_{number}.py"
                name.write_text(match["code"] + "\n", encoding="utf-8")
                files.append(str(name))
        print(f"mypy on the package and {len(files)} examples from {len(args.pages)} pages")
        command = [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"), "bpe", *files]
        return subprocess.run(command, cwd=ROOT).returncode


if __name__ == "__main__":
    sys.exit(main())
