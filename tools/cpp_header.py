"""What the tools that write a C++ header of tables share: the rows of numbers, and the
command line that writes the header or, with --check, fails where the header on disk is
not what would be written (CI runs the checks)."""
import argparse
import sys
from pathlib import Path
from typing import Callable


def rows(items: list[str], width: int = 100, indent: str = "    ", sep: str = ", ") -> str:
    """items joined by sep, in lines of at most width characters after indent."""
    lines, line = [], indent
    for item in items:
        if len(line) + len(item) + len(sep) > width and line.strip():
            lines.append(line.rstrip())
            line = indent
        line += item + sep
    lines.append(line.rstrip())
    return "\n".join(lines)


def header_main(description: str, script: str, header: Path, render: Callable[[], str],
                missing: str | None = None) -> None:
    """The command line of the tool `script` (its path from the repository's root) that
    writes header from render(). missing: why it cannot run here (a package it reads
    from is not installed), or None."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--check", action="store_true", help="fail if the header differs from what would be written")
    args = parser.parse_args()
    if missing is not None:
        sys.exit(missing)
    text = render()
    if args.check:
        if not header.exists() or header.read_text() != text:
            sys.exit(f"{header} is out of date: run python {script}")
        print(f"{header} is up to date")
        return
    header.write_text(text)
    print(f"wrote {header} ({len(text)} characters)")
