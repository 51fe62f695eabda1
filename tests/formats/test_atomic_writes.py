"""Every file a user keeps is written whole or not at all (bpe/atomic_writes.py, atomic_write).

On a disk that fills midway, every exporter and every output of the `bpe` command
leaves the old file (or the old pair, or the old folder) as it was, says
`No space left on device: PATH`, and leaves no temporary behind. Two to four writers of
one output at once each finish, and the output is one writer's, whole (a token file
and its sidecar from the same writer). A failing input leaves the old output intact.

The full disk is a 256 KiB tmpfs, mounted by the test: as root only (skipped elsewhere).
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bpe import BPETokenizer, token_files
from sample_text import made_up_stories

ROOT = Path(__file__).resolve().parents[2]
STORIES = made_up_stories(60_000, seed=11)


def bpe_command(*args, input=b"", cwd=ROOT):
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "BPE_TOKENIZER")}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run([sys.executable, "-m", "bpe", *map(str, args)], input=input, capture_output=True,
                          env=env, cwd=cwd, timeout=300)


def one_line_error(result) -> str:
    err = result.stderr.decode()
    assert result.returncode == 1, (result.returncode, err)
    assert "Traceback" not in err and err.count("\n") == 1, err
    return err


@pytest.fixture(scope="module")
def small():
    return BPETokenizer.train(STORIES[:5000], vocab_size=300, special_tokens=["<|endoftext|>"])


@pytest.fixture(scope="module")
def large():
    return BPETokenizer.train(STORIES, vocab_size=1500, special_tokens=["<|endoftext|>", "<|pad|>"])


@pytest.fixture
def disk(tmp_path):
    """A 256 KiB tmpfs: a disk that fills."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    mount = tmp_path / "disk"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount)],
                      capture_output=True).returncode != 0:
        pytest.skip("mount is not permitted here")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def fill(disk: Path, room: int = 0) -> Path:
    """Fill the disk, then free `room` bytes of it."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError:
        pass
    finally:
        os.close(fd)
    os.truncate(filler, max(0, filler.stat().st_size - room))
    return filler


def snapshot(folder: Path) -> dict:
    return {p.relative_to(folder): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
            and p.name != "filler"}


# --- the library's exporters on a full disk -------------------------------------------------

EXPORTERS = {
    "bpe": lambda tok, d: tok.save(d / "tok.bpe"),
    "tiktoken": lambda tok, d: tok.save_tiktoken(d / "tok.tiktoken"),
    "gpt2": lambda tok, d: tok.save_gpt2(d / "vocab.json", d / "merges.txt"),
    "huggingface": lambda tok, d: tok.save_huggingface(d / "tokenizer.json"),
    "huggingface folder": lambda tok, d: tok.save_huggingface(d / "hf"),
    "token file": lambda tok, d: token_files.write_token_file(d / "ids.bin", [tok.encode_ordinary(STORIES)], tok),
}


@pytest.mark.parametrize("room", [0, 12_288, 40_960])
@pytest.mark.parametrize("kind", EXPORTERS)
def test_a_full_disk_keeps_the_old_files_and_names_the_new_one(disk, small, large, kind, room):
    EXPORTERS[kind](small, disk)
    before = snapshot(disk)
    fill(disk, room)
    try:
        EXPORTERS[kind](large, disk)
    except OSError as e:
        message = str(e)
        assert "No space left on device: " in message, message
        named = Path(message.split("No space left on device: ", 1)[1])
        assert named.relative_to(disk) in before or named == disk / "hf", message
        assert snapshot(disk) == before  # the old files (pair, folder) as they were, no temporaries
    else:  # it fitted: then all of it is the new one
        assert snapshot(disk).keys() == before.keys()
    if room == 0:
        assert snapshot(disk) == before, f"{kind} wrote on a full disk without an error"


# --- the command's outputs on a full disk -----------------------------------------------------

def test_every_output_of_the_command_on_a_full_disk(disk, tmp_path, small, large):
    small.save(tmp_path / "small.bpe")
    large.save(tmp_path / "large.bpe")
    (tmp_path / "short.txt").write_text("Once upon a time", encoding="utf-8")
    (tmp_path / "long.txt").write_text(STORIES, encoding="utf-8")
    (tmp_path / "long.ids").write_text(" ".join(map(str, small.encode_ordinary(STORIES))), encoding="utf-8")
    runs = {  # each: (the run that writes the old output, the one that cannot fit)
        "encode text": (["encode", "-t", tmp_path / "small.bpe", tmp_path / "short.txt", "-o", disk / "out.ids"],
                        ["encode", "-t", tmp_path / "small.bpe", tmp_path / "long.txt", "-o", disk / "out.ids"]),
        "encode bin": (["encode", "-t", tmp_path / "small.bpe", tmp_path / "short.txt", "--format", "bin", "-o",
                        disk / "out.bin"],
                       ["encode", "-t", tmp_path / "small.bpe", tmp_path / "long.txt", "--format", "bin", "-o",
                        disk / "out.bin"]),
        "decode": (["decode", "-t", tmp_path / "small.bpe", "-o", disk / "out.txt"],
                   ["decode", "-t", tmp_path / "small.bpe", tmp_path / "long.ids", "-o", disk / "out.txt"]),
        "train": (["train", tmp_path / "short.txt", "--vocab-size", 260, "-o", disk / "t.bpe"],
                  ["train", tmp_path / "long.txt", "--vocab-size", 1500, "-o", disk / "t.bpe"]),
        **{f"convert {to}": (["convert", tmp_path / "small.bpe", disk / name, "--to", to],
                             ["convert", tmp_path / "large.bpe", disk / name, "--to", to])
           for to, name in [("bpe", "c.bpe"), ("tiktoken", "c.tiktoken"), ("gpt2", "vocab.json"),
                            ("huggingface", "tokenizer.json")]},
    }
    for kind, (old, new) in runs.items():
        result = bpe_command(*old, input=b"1 2 3")
        assert result.returncode == 0, (kind, result.stderr.decode())
    before = snapshot(disk)
    fill(disk)
    for kind, (old, new) in runs.items():
        err = one_line_error(bpe_command(*new))
        assert "No space left on device: " + str(disk) in err, (kind, err)
        assert snapshot(disk) == before, kind


# --- a failing input, a folder as the output --------------------------------------------------

def test_a_missing_or_bad_input_leaves_the_old_token_file_readable(tmp_path, small):
    small.save(tmp_path / "tok.bpe")
    (tmp_path / "story.txt").write_text("Once upon a time", encoding="utf-8")
    (tmp_path / "latin1.txt").write_bytes(b"caf\xe9")
    out = tmp_path / "story.bin"
    assert bpe_command("encode", "-t", tmp_path / "tok.bpe", tmp_path / "story.txt", "--format", "bin",
                       "-o", out).returncode == 0
    before = snapshot(tmp_path)
    for bad in (tmp_path / "missing.txt", tmp_path / "latin1.txt"):
        err = one_line_error(bpe_command("encode", "-t", tmp_path / "tok.bpe", tmp_path / "story.txt", bad,
                                         "--format", "bin", "-o", out))
        assert str(bad) in err
        assert snapshot(tmp_path) == before
        assert small.decode(token_files.read_token_file(out, small).tolist()) == "Once upon a time"


@pytest.mark.parametrize("args", [["encode"], ["encode", "--format", "bin"], ["decode"]])
def test_an_output_that_is_a_folder_is_one_line_and_leaves_nothing(tmp_path, small, args):
    small.save(tmp_path / "tok.bpe")
    (tmp_path / "outdir").mkdir()
    err = one_line_error(bpe_command(*args, "-t", tmp_path / "tok.bpe", "-o", tmp_path / "outdir", input=b"1 2"))
    assert str(tmp_path / "outdir") in err and "folder" in err.lower() or "directory" in err.lower(), err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["outdir", "tok.bpe"]


# --- writers at the same time ----------------------------------------------------------------

def run_at_once(commands):
    procs = [subprocess.Popen(c, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT,
                              env={**os.environ, "PYTHONPATH": str(ROOT)}) for c in commands]
    return [(p.wait(timeout=300), p.stderr.read().decode()) for p in procs]


@pytest.mark.parametrize("form", ["text", "bin"])
def test_concurrent_encodes_to_one_output_each_succeed_and_leave_one_whole(tmp_path, small, form):
    small.save(tmp_path / "tok.bpe")
    texts = [made_up_stories(300_000 + 50_000 * k, seed=k) for k in range(4)]
    for k, text in enumerate(texts):
        (tmp_path / f"in{k}.txt").write_text(text, encoding="utf-8")
    out = tmp_path / ("same.bin" if form == "bin" else "same.ids")
    for _ in range(2):
        results = run_at_once([[sys.executable, "-m", "bpe", "encode", "-t", str(tmp_path / "tok.bpe"),
                                str(tmp_path / f"in{k}.txt"), "--format", form, "-o", str(out)] for k in range(4)])
        assert all(rc == 0 for rc, _ in results), results
        if form == "bin":
            ids = token_files.read_token_file(out, small).tolist()
        else:
            ids = list(map(int, out.read_text(encoding="utf-8").split()))
        assert small.decode(ids) in texts
        assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def test_concurrent_exports_of_pairs_and_folders_leave_one_writers_files(tmp_path):
    """Four processes write GPT-2's pair, and a Hugging Face folder, of four tokenizers to
    one place: what is left is one tokenizer's, whole."""
    toks = [BPETokenizer.train(made_up_stories(30_000, seed=k), vocab_size=600 + 50 * k) for k in range(4)]
    for k, tok in enumerate(toks):
        tok.save(tmp_path / f"t{k}.bpe")
    script = ("import sys; from bpe import BPETokenizer\n"
              "tok = BPETokenizer.load(sys.argv[1])\n"
              "for _ in range(20):\n"
              "    tok.save_gpt2(sys.argv[2] + '/vocab.json', sys.argv[2] + '/merges.txt')\n"
              "    tok.save_huggingface(sys.argv[2] + '/hf')\n")
    results = run_at_once([[sys.executable, "-c", script, str(tmp_path / f"t{k}.bpe"), str(tmp_path)]
                           for k in range(4)])
    assert all(rc == 0 for rc, _ in results), results
    gpt2 = BPETokenizer.from_gpt2(tmp_path / "vocab.json", tmp_path / "merges.txt", pattern="default")
    assert any(gpt2 == tok for tok in toks)
    hf = BPETokenizer.from_huggingface(tmp_path / "hf")
    assert any(hf == tok for tok in toks)
    config = json.loads((tmp_path / "hf" / "tokenizer_config.json").read_text())
    assert config["tokenizer_class"] == "PreTrainedTokenizerFast"
    leftovers = [p.name for p in [*tmp_path.iterdir(), *(tmp_path / "hf").iterdir()] if p.name.startswith(".")]
    assert leftovers == []
