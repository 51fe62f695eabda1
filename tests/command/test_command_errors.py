"""The `bpe` command's errors at its edges (bpe/cli/errors.py and what raises them):
whatever a user types, pipes or points it at (numbers past int()'s digit limit, files
nested 100,000 deep, closed streams, arguments that are not UTF-8) gives one line naming
the file or argument and exit status 1, never a traceback; a reader that goes away
(| head -c1) ends it quietly.
"""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bpe import BPETokenizer
from sample_text import made_up_stories

ROOT = Path(__file__).resolve().parents[2]
STORIES = made_up_stories(40_000, seed=5)


def environment() -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "BPE_TOKENIZER")}
    return {**env, "PYTHONPATH": str(ROOT)}


def bpe_command(*args, input=b""):
    args = [a if isinstance(a, bytes) else str(a) for a in args]
    return subprocess.run([sys.executable, "-m", "bpe", *args], input=input, capture_output=True,
                          env=environment(), cwd=ROOT, timeout=300)


def in_shell(script: str, **names):
    """A shell line, for what only a shell does (closing a stream): $PY is this Python."""
    return subprocess.run(["bash", "-c", script], capture_output=True, cwd=ROOT, timeout=300,
                          env={**environment(), "PY": sys.executable, **{k: str(v) for k, v in names.items()}})


def one_line_error(result, status: int = 1) -> str:
    err = result.stderr.decode(errors="replace")
    assert result.returncode == status, (result.returncode, err)
    assert "Traceback" not in err, err
    assert err.count("\n") == 1 and err.startswith("bpe") and "error: " in err, err
    return err


@pytest.fixture(scope="module")
def tok_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("edges") / "tok.bpe"
    BPETokenizer.train(STORIES, vocab_size=500, special_tokens=["<|endoftext|>"]).save(path)
    return path


# --- numbers past int()'s digit limit ------------------------------------------------------

@pytest.mark.parametrize("ids", [b"1 " + b"7" * 5000, b"[1, " + b"7" * 5000 + b"]"], ids=["text", "json"])
def test_decode_of_a_5000_digit_number(tok_file, ids):
    err = one_line_error(bpe_command("decode", "-t", tok_file, input=ids))
    assert "stdin" in err and "777" in err and len(err) < 400, err


def test_decode_of_lists_nested_100000_deep(tok_file):
    err = one_line_error(bpe_command("decode", "-t", tok_file, input=b"[" * 100_000 + b"]" * 100_000))
    assert "stdin" in err and len(err) < 400, err


# --- files nested 100,000 deep -------------------------------------------------------------

def test_a_tokenizer_file_or_sidecar_nested_deep(tmp_path, tok_file):
    deep = "[" * 100_000 + "]" * 100_000
    (tmp_path / "deep.bpe").write_text(deep, encoding="utf-8")
    assert "deep.bpe" in one_line_error(bpe_command("info", tmp_path / "deep.bpe"))
    (tmp_path / "x.bin").write_bytes(b"\x01\x00")
    (tmp_path / "x.bin.json").write_text(deep, encoding="utf-8")
    assert "x.bin.json" in one_line_error(bpe_command("decode", "-t", tok_file, tmp_path / "x.bin"))
    (tmp_path / "deep.json").write_text(deep, encoding="utf-8")
    assert "deep.json" in one_line_error(bpe_command("info", tmp_path / "deep.json"))


# --- closed streams ---------------------------------------------------------------------

def test_a_closed_stdin_or_stdout(tok_file):
    err = one_line_error(in_shell('"$PY" -m bpe encode -t "$TOK" <&-', TOK=tok_file))
    assert "stdin" in err
    err = one_line_error(in_shell('echo hello | "$PY" -m bpe encode -t "$TOK" >&-', TOK=tok_file))
    assert "stdout" in err
    err = one_line_error(in_shell('"$PY" -m bpe decode -t "$TOK" <&-', TOK=tok_file))
    assert "stdin" in err
    # Where stdout is not needed, closing it does no harm.
    result = in_shell('echo hello | "$PY" -m bpe encode -t "$TOK" -o "$OUT" >&-', TOK=tok_file,
                      OUT=Path(tok_file).with_name("hello.ids"))
    assert result.returncode == 0 and result.stderr == b"", result.stderr


# --- arguments that are not UTF-8 ---------------------------------------------------------

@pytest.mark.parametrize("command", ["explain", "show"])
def test_an_argument_that_is_not_utf8(tok_file, command):
    err = one_line_error(bpe_command(command, "-t", tok_file, b"caf\xe9"))
    assert "UTF-8" in err and "argument" in err, err


def test_a_file_name_that_is_not_utf8(tok_file, tmp_path):
    err = one_line_error(bpe_command("encode", "-t", tok_file, bytes(tmp_path) + b"/caf\xe9.txt"))
    assert "caf" in err


# --- a reader that goes away -------------------------------------------------------------

@pytest.mark.parametrize("form", ["text", "json"])
def test_a_closed_pipe_ends_quietly(tok_file, tmp_path, form):
    big = tmp_path / "big.txt"
    big.write_text(STORIES * 20, encoding="utf-8")
    result = in_shell('"$PY" -m bpe encode -t "$TOK" "$BIG" --format "$FORM" | head -c1 >/dev/null; '
                      'echo "${PIPESTATUS[0]}" >&2', TOK=tok_file, BIG=big, FORM=form)
    assert result.stderr.decode().strip() in ("0", "1", "141"), result.stderr.decode()
    result = in_shell('"$PY" -m bpe decode -t "$TOK" "$IDS" | head -c1 >/dev/null', TOK=tok_file,
                      IDS=_ids_file(tok_file, tmp_path))
    assert result.stderr == b"", result.stderr.decode()


def _ids_file(tok_file, tmp_path) -> Path:
    tok = BPETokenizer.load(tok_file)
    path = tmp_path / "many.ids"
    path.write_text(" ".join(map(str, tok.encode_ordinary(STORIES * 20))), encoding="utf-8")
    return path
