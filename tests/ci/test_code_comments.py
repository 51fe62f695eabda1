"""Code comments say why, in a few lines, beside the code they explain. What was measured
and tried goes to docs/design-notes.md, and the history to the commits: no comment in a
code file names an issue or a review round or quotes a speed ratio, and no block of
performance notes runs past 15 lines."""
import io
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# The code this holds for. tests/ is left out: test names and docstrings follow rules of
# their own (what a test proves).
CODE = sorted(
    [*ROOT.glob("csrc/*.h"), *ROOT.glob("csrc/*.cpp"), *ROOT.glob("bpe/**/*.py"),
     *ROOT.glob("bench/*.py"), *ROOT.glob("tools/*.py"), *ROOT.glob("tools/*.sh"), *ROOT.glob("*.py")])
NOTES_LIMIT = 15

ISSUE = re.compile(r"\bissues? #?\d+|(?<![\w/])#\d{2,}(?!\w)", re.I)
ROUND = re.compile(r"\b(review(er)?'?s?\b.*\bround|round (one|two|three|four|five)\b|(first|second|third) review)", re.I)
FLOOR = re.compile(r"\bfloors?\b", re.I)
RATIO = re.compile(r"\b\d+(\.\d+)?x\b(?! ?\d)|\b\d+(\.\d+)? times as fast\b")


def python_comments(source: str):
    """(line, text) of each comment and each docstring line of Python source."""
    before = None
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            yield tok.start[0], tok.string
        elif (tok.type == tokenize.STRING and tok.string.lstrip("rbuRBU").startswith(('"""', "'''"))
              and before in (None, tokenize.INDENT, tokenize.DEDENT, tokenize.NEWLINE, tokenize.NL)):
            for k, line in enumerate(tok.string.split("\n")):
                yield tok.start[0] + k, line
        if tok.type not in (tokenize.NL, tokenize.COMMENT):
            before = tok.type


def cpp_comments(source: str):
    """(line, text) of each // comment and each line of a /* */ comment of C++ source."""
    in_block = False
    for n, line in enumerate(source.split("\n"), 1):
        if in_block:
            yield n, line
            in_block = "*/" not in line
            continue
        code = re.sub(r'"(\\.|[^"\\])*"', '""', line)  # no // inside a string literal
        line_at, block_at = code.find("//"), code.find("/*")
        if line_at >= 0 and (block_at < 0 or line_at < block_at):
            yield n, code[line_at:]
        elif block_at >= 0:
            yield n, code[block_at:]
            in_block = "*/" not in code[block_at:]


def shell_comments(source: str):
    for n, line in enumerate(source.split("\n"), 1):
        if line.lstrip().startswith("#"):
            yield n, line


def comments(path: Path):
    source = path.read_text(encoding="utf-8")
    if path.suffix == ".py":
        return list(python_comments(source))
    if path.suffix == ".sh":
        return list(shell_comments(source))
    return list(cpp_comments(source))


def notes_blocks(found):
    """The length in lines of each run of consecutive comment lines that opens with
    "Performance notes" (or "Performance note")."""
    lines = dict(found)
    for n, text in found:
        if re.search(r"performance notes?\b", text, re.I) and not re.search(r"design-notes", text):
            end = n
            while end + 1 in lines and lines[end + 1].strip() not in ("", '"""'):
                end += 1
            yield n, end - n + 1


def offences(path: Path) -> list[str]:
    found = comments(path)
    bad = []
    for n, text in found:
        for what, pattern in (("an issue number", ISSUE), ("a review round", ROUND), ("a speed ratio", RATIO)):
            # A floor (what a benchmark must reach) is a requirement, not a measurement.
            if pattern.search(text) and not (pattern is RATIO and FLOOR.search(text)):
                bad.append(f"{path.relative_to(ROOT)}:{n}: {what}: {text.strip()}")
    for n, length in notes_blocks(found):
        if length > NOTES_LIMIT:
            bad.append(f"{path.relative_to(ROOT)}:{n}: a block of performance notes of {length} lines")
    return bad


def test_the_code_files_are_found():
    names = {p.relative_to(ROOT).as_posix() for p in CODE}
    assert {"csrc/_core.cpp", "csrc/encoder.h", "bpe/encoding.py", "bpe_bench.py", "setup.py"} <= names


@pytest.mark.parametrize("path", CODE, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_comment_names_an_issue_a_round_or_a_ratio(path):
    assert offences(path) == []


def test_the_checks_catch_what_they_are_for(tmp_path):
    # Each kind of offence, in each kind of file, is found; plain why-comments are not.
    cpp = tmp_path / "x.h"
    cpp.write_text('// As issue 32 asked.\nint a = 1;  // 0.95x the time\n/* the second review round */\n'
                   'const char* s = "// issue 4";  // a plain why\n'
                   + "// Performance notes\n" + "// a figure\n" * NOTES_LIMIT + "int b;\n")
    py = tmp_path / "x.py"
    py.write_text('"""Module. 1.3x as fast as before."""\nx = 1  # see issue #12\n'
                  'y = "issue 5"  # why: a plain reason, and the floor: 1.8x\n'
                  'z = 2  # as pytorch/pytorch#179291 describes\n')
    sh = tmp_path / "x.sh"
    sh.write_text("# round two of the review\necho issue 3\n")
    global ROOT
    root, ROOT = ROOT, tmp_path
    try:
        cpp_bad, py_bad, sh_bad = offences(cpp), offences(py), offences(sh)
    finally:
        ROOT = root
    assert [b.split(": ")[1] for b in cpp_bad] == [
        "an issue number", "a speed ratio", "a review round", "a block of performance notes of 16 lines"]
    assert [b.split(": ")[1] for b in py_bad] == ["a speed ratio", "an issue number"]
    assert [b.split(": ")[1] for b in sh_bad] == ["a review round"]
