"""The bpe command (python -m bpe, bpe/cli): each subcommand as a user types it, in a
separate process. (The library under it has tests of its own: the reader of text, JSON
Lines and Parquet in formats/test_sources.py, token files in formats/test_token_files.py,
explain and count in tokenizer/.)

What every subcommand must do: --help with an example; errors in one line, without a
traceback, exit status 2 for bad usage and 1 for bad input; no colour on a pipe or
under NO_COLOR; decode(encode(x)) == x; count == len(encode).
"""
import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bpe import BPETokenizer, token_files
from bpe.explain import explain
from sample_text import SPECIAL_CORNERS, made_up_stories
from vocabularies import cl100k_path

ROOT = Path(__file__).resolve().parents[2]
COMMANDS = ["train", "encode", "decode", "count", "show", "explain", "info", "convert"]
STORIES = made_up_stories(120_000, seed=3)


def environment(**env) -> dict:
    """This process's environment without the variables the command reads, plus env."""
    out = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "BPE_TOKENIZER")}
    return {**out, "PYTHONPATH": str(ROOT), **env}


def bpe_command(*args, input=b"", env=None):
    """Run `python -m bpe ARGS` with stdin, stdout and stderr on pipes."""
    return subprocess.run([sys.executable, "-m", "bpe", *map(str, args)], input=input, capture_output=True,
                          env=environment(**(env or {})), cwd=ROOT, timeout=300)


def ok(result) -> str:
    assert result.returncode == 0, result.stderr.decode()
    return result.stdout.decode("utf-8")


def one_line_error(result, status: int) -> str:
    """The error of a failed run, checked to be one line without a traceback."""
    err = result.stderr.decode()
    assert result.returncode == status, (result.returncode, err)
    assert "Traceback" not in err
    assert err.count("\n") == 1 and err.startswith("bpe") and "error: " in err, err
    return err


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("cli")


@pytest.fixture(scope="module")
def stories_file(work):
    path = work / "stories.txt"
    path.write_text(STORIES, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def tok_file(work, stories_file):
    """A tokenizer trained by the command itself."""
    path = work / "tok.bpe"
    ok(bpe_command("train", stories_file, "--vocab-size", 700, "--special", "<|endoftext|>", "-o", path))
    return path


@pytest.fixture(scope="module")
def tok(tok_file):
    return BPETokenizer.load(tok_file)


# --- every subcommand -------------------------------------------------------------------

@pytest.mark.parametrize("command", COMMANDS)
def test_each_subcommand_has_help_with_an_example(command):
    out = ok(bpe_command(command, "--help"))
    assert "example:" in out and f"bpe {command} " in out.split("example:")[1]


def test_python_m_bpe_lists_the_subcommands():
    result = bpe_command("--help")
    out = ok(result)
    assert all(command in out for command in COMMANDS)
    bare = bpe_command()
    assert bare.returncode == 2 and "train" in bare.stderr.decode()


# --- train --------------------------------------------------------------------------------

def test_train_learns_what_the_library_learns_and_says_so(work, stories_file, tok_file):
    out = ok(bpe_command("train", stories_file, "--vocab-size", 700, "--special", "<|endoftext|>",
                         "-o", work / "again.bpe"))
    expected = BPETokenizer.train(STORIES, vocab_size=700, special_tokens=["<|endoftext|>"])
    assert BPETokenizer.load(tok_file) == expected
    assert "learned 443 merges: 700 tokens (256 bytes, 443 merges, 1 special)" in out
    assert "longest tokens:" in out and f"wrote {work / 'again.bpe'}" in out


def test_train_on_a_folder_of_text_jsonl_and_parquet(work):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    folder = work / "corpus"
    (folder / "deeper").mkdir(parents=True)
    docs = [d for d in STORIES.split("\n\n") if d]
    (folder / "a.txt").write_text(docs[0], encoding="utf-8")
    (folder / "b.jsonl").write_text("".join(json.dumps({"id": k, "body": d}) + "\n" for k, d in enumerate(docs[1:200])),
                                    encoding="utf-8")
    pq.write_table(pa.table({"body": docs[200:400], "n": list(range(200))}), folder / "deeper" / "c.parquet")
    (folder / ".hidden.txt").write_text("never read", encoding="utf-8")
    out = ok(bpe_command("train", folder, "--field", "body", "--vocab-size", 600, "--pattern", "gpt4",
                         "-o", work / "corpus.bpe"))
    assert "read 3 files" in out
    # In name order, at any depth: a.txt, b.jsonl, deeper/c.parquet; the hidden file left out.
    expected = BPETokenizer.train([docs[0], *docs[1:200], *docs[200:400]], vocab_size=600, pattern="gpt4")
    assert BPETokenizer.load(work / "corpus.bpe") == expected
    err = one_line_error(bpe_command("train", folder / "b.jsonl", "--vocab-size", 300, "-o", work / "x.bpe"), 1)
    assert "b.jsonl, line 1 has no field 'text'" in err and "'body'" in err
    err = one_line_error(bpe_command("train", folder / "deeper" / "c.parquet", "--field", "n", "--vocab-size", 300,
                                     "-o", work / "x.bpe"), 1)
    assert "column 'n' holds int64, not strings" in err


def test_train_warns_when_the_text_runs_out_of_pairs(work):
    (work / "tiny.txt").write_text("ab ab abc", encoding="utf-8")
    result = bpe_command("train", work / "tiny.txt", "--vocab-size", 1000, "-o", work / "tiny.bpe")
    ok(result)
    err = result.stderr.decode()
    assert "warning: the text ran out of pairs to merge after" in err and "not 1,000" in err
    assert len(BPETokenizer.load(work / "tiny.bpe").merges) < 1000 - 256


def test_train_errors(work, stories_file):
    one_line_error(bpe_command("train", stories_file, "-o", work / "x.bpe"), 2)  # no --vocab-size
    one_line_error(bpe_command("train", stories_file, "--vocab-size", "many", "-o", work / "x.bpe"), 2)
    assert "at least 257" in one_line_error(
        bpe_command("train", stories_file, "--vocab-size", 100, "--special", "<|x|>", "-o", work / "x.bpe"), 2)
    assert "no such file" in one_line_error(bpe_command("train", work / "nope.txt", "--vocab-size", 300,
                                                        "-o", work / "x.bpe"), 1)
    (work / "latin1.txt").write_bytes("ok caf\xe9 ok".encode("latin-1"))
    assert "not UTF-8 text (byte 6" in one_line_error(
        bpe_command("train", work / "latin1.txt", "--vocab-size", 300, "-o", work / "x.bpe"), 1)


def test_train_warns_once_in_its_own_words(tmp_path):
    (tmp_path / "small.txt").write_text("hello there", encoding="utf-8")
    result = bpe_command("train", tmp_path / "small.txt", "--vocab-size", 1000, "-o", tmp_path / "t.bpe")
    err = result.stderr.decode()
    assert result.returncode == 0, err
    assert "UserWarning" not in err and "__main__.py" not in err, err
    assert err.count("\n") == 1 and err.startswith("bpe") and ": warning: " in err, err


def test_train_with_max_memory_says_pruning_removed_the_pairs(tmp_path):
    (tmp_path / "stories.txt").write_text(made_up_stories(200_000, seed=9), encoding="utf-8")
    result = bpe_command("train", tmp_path / "stories.txt", "--vocab-size", 30_000, "--max-memory", "300KB",
                         "-o", tmp_path / "t.bpe")
    err = result.stderr.decode()
    assert result.returncode == 0, err
    assert "Warning" not in err and ".py" not in err, err
    assert "--max-memory" in err and "prun" in err, err


def test_train_with_max_memory_gives_the_pruning_numbers(tmp_path):
    (tmp_path / "stories.txt").write_text(made_up_stories(200_000, seed=9), encoding="utf-8")
    result = bpe_command("train", tmp_path / "stories.txt", "--vocab-size", 30_000, "--max-memory", "300KB",
                         "-o", tmp_path / "t.bpe")
    err = result.stderr.decode()
    assert result.returncode == 0, err
    found = re.search(r"pruning removed ([\d,]+) distinct chunks counted ([\d,]+) times or fewer", err)
    assert found and int(found[1].replace(",", "")) > 0 and int(found[2].replace(",", "")) > 0, err


# --- encode and decode ----------------------------------------------------------------------

@pytest.mark.parametrize("form", ["text", "json", "bin"])
def test_encode_then_decode_gives_back_the_exact_bytes(work, tok_file, tok, form):
    text = SPECIAL_CORNERS * 3 + STORIES[:5000]
    source = work / f"tricky-{form}.txt"
    source.write_bytes(text.encode("utf-8"))
    if form == "bin":
        out = work / "tricky.bin"
        ok(bpe_command("encode", "-t", tok_file, source, "--format", "bin", "-o", out))
        ids = token_files.read_token_file(out, tok)
        assert ids.dtype == np.dtype("<u2") and ids.tolist() == tok.encode_ordinary(text)
        back = bpe_command("decode", "-t", tok_file, out)
    else:
        encoded = bpe_command("encode", "-t", tok_file, "--format", form, input=source.read_bytes())
        ids_text = ok(encoded)
        ids = json.loads(ids_text) if form == "json" else list(map(int, ids_text.split()))
        assert ids == tok.encode_ordinary(text)  # special-token text is ordinary text by default
        back = bpe_command("decode", "-t", tok_file, input=encoded.stdout)
    assert back.returncode == 0, back.stderr
    assert back.stdout == text.encode("utf-8")


def test_allow_special_encodes_specials_as_their_ids(tok_file, tok):
    text = "The end.<|endoftext|>Once"
    ids = list(map(int, ok(bpe_command("encode", "-t", tok_file, "--allow-special", input=text.encode())).split()))
    assert ids == tok.encode(text, allowed_special="all") and tok.eot_token in ids
    assert bpe_command("decode", "-t", tok_file, input=" ".join(map(str, ids)).encode()).stdout == text.encode()


def test_encode_several_files_one_line_each_and_decode_ids_not_utf8(work, tok_file, tok):
    (work / "one.txt").write_text("Once upon", encoding="utf-8")
    (work / "two.txt").write_text("a time", encoding="utf-8")
    lines = ok(bpe_command("encode", "-t", tok_file, work / "one.txt", work / "two.txt")).splitlines()
    assert [list(map(int, line.split())) for line in lines] == [tok.encode("Once upon"), tok.encode("a time")]
    # A token can end in the middle of a character: decode writes the bytes as they are.
    cat = tok.encode("🐱")
    assert bpe_command("decode", "-t", tok_file, input=str(cat[0]).encode()).stdout == \
        tok.decode_single_token_bytes(cat[0])


def test_encode_and_decode_errors(work, tok_file, tok):
    assert "not UTF-8 text (byte 3" in one_line_error(bpe_command("encode", "-t", tok_file, input=b"abc\xff"), 1)
    assert "-o FILE.bin" in one_line_error(bpe_command("encode", "-t", tok_file, "--format", "bin", input=b"x"), 2)
    assert "'x1' is not a token id" in one_line_error(bpe_command("decode", "-t", tok_file, input=b"1 2 x1"), 1)
    assert "outside the vocabulary" in one_line_error(bpe_command("decode", "-t", tok_file, input=b"1 99999"), 1)
    assert "not JSON lists" in one_line_error(bpe_command("decode", "-t", tok_file, input=b"[1, 2"), 1)
    # A token file is read only by the tokenizer that wrote it.
    (work / "w.txt").write_text("Once upon a time", encoding="utf-8")
    ok(bpe_command("encode", "-t", tok_file, work / "w.txt", "--format", "bin", "-o", work / "w.bin"))
    other = BPETokenizer.train(STORIES, vocab_size=400)
    other.save(work / "other.bpe")
    assert "written by another tokenizer" in one_line_error(bpe_command("decode", "-t", work / "other.bpe",
                                                                        work / "w.bin"), 1)
    (work / "w.bin.json").unlink()
    assert "no sidecar" in one_line_error(bpe_command("decode", "-t", tok_file, work / "w.bin"), 1)


# --- count --------------------------------------------------------------------------------

def test_count_equals_len_encode_per_file_and_in_total(work, tok_file, tok, stories_file):
    (work / "tricky.txt").write_text(SPECIAL_CORNERS * 50, encoding="utf-8")
    (work / "docs.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in [SPECIAL_CORNERS, "Once upon"]),
                                     encoding="utf-8")
    result = bpe_command("count", "-t", tok_file, stories_file, work / "tricky.txt", work / "docs.jsonl")
    rows = [line.split(maxsplit=1) for line in ok(result).splitlines()]
    expected = [len(tok.encode_ordinary(STORIES)), len(tok.encode_ordinary(SPECIAL_CORNERS * 50)),
                len(tok.encode_ordinary(SPECIAL_CORNERS)) + len(tok.encode_ordinary("Once upon"))]
    assert [int(n) for n, _ in rows] == expected + [sum(expected)]
    assert [name for _, name in rows] == [str(stories_file), str(work / "tricky.txt"), str(work / "docs.jsonl"),
                                          "total"]
    assert result.stderr == b""  # no progress bar on a pipe
    stdin = ok(bpe_command("count", "-t", tok_file, "--allow-special", input=SPECIAL_CORNERS.encode()))
    assert stdin.split() == [str(len(tok.encode(SPECIAL_CORNERS, allowed_special="all"))), "stdin"]



def test_count_takes_stdin_among_files_and_threads(tok_file, tok, stories_file):
    # Each file's texts go to count_batch, which shares them between threads: the same
    # counts on one thread and on three, stdin ("-") among the files in its place.
    rows = {}
    for threads in ("1", "3"):
        result = bpe_command("count", "-t", tok_file, "--threads", threads, stories_file, "-", stories_file,
                             input=SPECIAL_CORNERS.encode())
        rows[threads] = [line.split(maxsplit=1) for line in ok(result).splitlines()]
    stories, corners = len(tok.encode_ordinary(STORIES)), len(tok.encode_ordinary(SPECIAL_CORNERS))
    assert rows["1"] == rows["3"]
    assert [name for _, name in rows["1"]] == [str(stories_file), "stdin", str(stories_file), "total"]
    assert [int(n) for n, _ in rows["1"]] == [stories, corners, stories, 2 * stories + corners]

# --- show ---------------------------------------------------------------------------------

def test_show_writes_no_colour_to_a_pipe_and_marks_the_tokens(tok_file, tok):
    text = "Once upon a time, Zorblax the dragon"
    out = ok(bpe_command("show", "-t", tok_file, text))
    assert "\x1b" not in out
    assert out.rstrip("\n").split("|")[:-1] == [tok.id_to_token(i) for i in tok.encode(text)]
    coloured = ok(bpe_command("show", "-t", tok_file, text, "--color", "always"))
    assert coloured.count("\x1b[48;5;") == len(tok.encode(text)) and "|" not in coloured


def run_on_a_terminal(args, **env):
    """Run the command with its stdout on a pseudo-terminal; what it wrote there."""
    leader, follower = pty.openpty()
    process = subprocess.Popen([sys.executable, "-m", "bpe", *map(str, args)], stdout=follower,
                               stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                               env=environment(TERM="xterm-256color", **env), cwd=ROOT)
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the other end closed
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    assert process.wait(timeout=120) == 0, process.stderr.read()
    return b"".join(chunks).decode("utf-8")


def test_show_colours_on_a_terminal_unless_no_color(tok_file, tok):
    text = "Once upon a time"
    coloured = run_on_a_terminal(["show", "-t", tok_file, text], NO_COLOR="")  # empty: as if unset
    assert coloured.count("\x1b[48;5;") == len(tok.encode(text))
    plain = run_on_a_terminal(["show", "-t", tok_file, text], NO_COLOR="1")
    assert "\x1b" not in plain
    assert plain.strip() == "".join(tok.id_to_token(i) + "|" for i in tok.encode(text))


def test_show_ids_under_the_tokens(tok_file, tok):
    text = "the little dog said hello,\nthe end"
    out = ok(bpe_command("show", "-t", tok_file, "--ids", text)).splitlines()
    ids = tok.encode(text)
    assert len(out) == 4  # a row of tokens and a row of ids for each line of text
    assert [int(i) for i in out[1].split() + out[3].split()] == ids
    # Each id starts in the column where its token starts.
    k = 0
    for top, bottom in ((out[0], out[1]), (out[2], out[3])):
        for column, i in ((c, int(bottom[c:].split()[0])) for c in range(len(bottom))
                          if bottom[c] != " " and (c == 0 or bottom[c - 1] == " ")):
            assert i == ids[k]
            token = tok.id_to_token(i).replace("\n", "↵")
            assert top[column:].startswith(token) and top[column:].split("|")[0].rstrip() == token.rstrip()
            k += 1


def test_show_reads_a_file_and_refuses_text_and_file(work, tok_file, tok):
    (work / "s.txt").write_text("Once upon", encoding="utf-8")
    assert ok(bpe_command("show", "-t", tok_file, "-f", work / "s.txt")).strip() == \
        "".join(tok.id_to_token(i) + "|" for i in tok.encode("Once upon"))
    one_line_error(bpe_command("show", "-t", tok_file, "x", "-f", work / "s.txt"), 2)


# --- explain ------------------------------------------------------------------------------

def test_explain_prints_each_merge_with_its_rank(tok_file, tok):
    out = ok(bpe_command("explain", "-t", tok_file, " little"))
    steps = explain(tok, " little")[0].steps
    lines = [line for line in out.splitlines() if "merge rank" in line]
    assert len(lines) == len(steps) >= 2
    for line, step in zip(lines, steps):
        assert f"merge rank {step.rank:>3}:" in line and f"(id {step.token})" in line
    assert out.splitlines()[-1].split(":")[1].split() == list(map(str, tok.encode(" little")))
    several = ok(bpe_command("explain", "-t", tok_file, "Once", "upon,", "Zorblax"))
    assert "is 4 chunks" in several and len(explain(tok, "Once upon, Zorblax")) == 4
    assert several.splitlines()[-1] == "tokens: " + " ".join(map(str, tok.encode("Once upon, Zorblax")))


# --- info and convert -----------------------------------------------------------------------

def test_info_tells_size_pattern_specials_longest_and_whole_words(tok_file, tok):
    out = ok(bpe_command("info", tok_file))
    merges = len(tok.merges)
    assert f"tokens: 700 (256 bytes, {merges} merges, 1 special)" in out
    assert "split pattern: default" in out and "special tokens: <|endoftext|> = 699" in out
    longest = max(len(tok.decode_single_token_bytes(256 + k)) for k in range(merges))
    assert out.split("longest tokens:\n")[1].split()[0] == str(longest)
    words = sum(1 for k in range(merges) if (t := tok.id_to_token(256 + k)).startswith(" ") and t[1:].isalpha())
    assert f"whole words: {words:,} of the {merges:,} merged tokens ({words / merges:.1%})" in out
    assert f"sha256: {token_files.fingerprint(tok)}" in out


def test_convert_to_every_format_and_back(work, tok_file):
    gpt4 = BPETokenizer.train(STORIES, vocab_size=600, pattern="gpt4")
    gpt4.save(work / "gpt4.bpe")
    gpt2 = BPETokenizer.train(STORIES, vocab_size=600, pattern="gpt2", special_tokens=["<|endoftext|>"])
    gpt2.save(work / "gpt2.bpe")
    text = SPECIAL_CORNERS + STORIES[:3000]
    cases = [(tok_file, "huggingface", work / "hf" / "tokenizer.json"), (tok_file, "bpe", work / "copy.bpe"),
             (work / "gpt2.bpe", "gpt2", work / "g2" / "vocab.json"),
             (work / "gpt4.bpe", "tiktoken", work / "t.tiktoken")]
    (work / "hf").mkdir()
    for source, to, out in cases:
        said = ok(bpe_command("convert", source, out, "--to", to))
        assert f"wrote {out}" in said
        original = BPETokenizer.load(source)
        ours = list(map(int, ok(bpe_command("encode", "-t", source, input=text.encode())).split()))
        theirs = list(map(int, ok(bpe_command("encode", "-t", out, input=text.encode())).split()))
        assert theirs == ours == original.encode_ordinary(text), to
    assert (work / "g2" / "merges.txt").exists()
    result = bpe_command("convert", work / "gpt4.bpe", work / "t2.tiktoken", "--to", "tiktoken")
    assert "holds neither the split pattern" in result.stderr.decode()
    assert "unsupported" not in one_line_error(bpe_command("convert", tok_file, work / "x", "--to", "sentencepiece"), 2)


def test_convert_and_info_count_a_tokenizer_jsons_added_tokens_alike(work):
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import AddedToken, Tokenizer, models, pre_tokenizers, trainers

    hf = Tokenizer(models.BPE())
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    hf.train_from_iterator([STORIES[:20000]], trainers.BpeTrainer(
        vocab_size=300, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False))
    hf.add_special_tokens([AddedToken("<|endoftext|>", special=True, normalized=False)])
    hf.add_tokens([AddedToken("café", special=False, lstrip=True), AddedToken("<fim>", special=False)])
    hf.save(str(work / "rules.json"))
    n = len(BPETokenizer.from_huggingface(work / "rules.json").as_hf())  # every token, added ones too
    assert n == hf.get_vocab_size(with_added_tokens=True)
    assert f"tokens: {n:,} (" in ok(bpe_command("info", work / "rules.json"))
    said = ok(bpe_command("convert", work / "rules.json", work / "rules.bpe", "--to", "bpe"))
    assert f": {n:,} tokens (bpe)" in said, said


def test_cl100k_is_gpt4s_vocabulary():
    tiktoken = pytest.importorskip("tiktoken")
    from bpe import formats

    path = cl100k_path()
    reference = tiktoken.Encoding("cl100k", pat_str=formats.TIKTOKEN_PATTERNS["gpt4"],
                                  mergeable_ranks=formats.read_tiktoken(path),
                                  special_tokens=formats.CL100K_SPECIAL_IDS)
    out = ok(bpe_command("count", "-t", "cl100k", input=SPECIAL_CORNERS.encode()))
    assert int(out.split()[0]) == len(reference.encode_ordinary(SPECIAL_CORNERS))
    info = ok(bpe_command("info", "cl100k"))
    assert "special tokens: <|endoftext|> = 100257" in info and "split pattern: gpt4" in info


# --- the tokenizer argument and errors ------------------------------------------------------

def test_no_tokenizer_is_a_usage_error_and_the_environment_names_one(tok_file, tok):
    assert "-t FILE" in one_line_error(bpe_command("count", input=b"hello"), 2)
    out = ok(bpe_command("count", input=b"Once upon", env={"BPE_TOKENIZER": str(tok_file)}))
    assert out.split()[0] == str(len(tok.encode("Once upon")))


@pytest.mark.parametrize("args, status, message", [
    (["frobnicate"], 2, "invalid choice"),
    (["count", "-t", "missing.bpe"], 1, "missing.bpe: no such tokenizer file"),
    (["count", "-t", "README.md"], 1, "README.md"),
    (["count", "-t", "{tok}", "missing.txt"], 1, "missing.txt: no such file"),
    (["show", "-t", "{tok}", "-f", "missing.txt"], 1, "missing.txt"),
    (["info", "{tok}", "--nonsense"], 2, "unrecognized arguments"),
    (["explain", "-t", "{tok}"], 2, "required"),
    (["convert", "{tok}", "{tok}/x.bpe", "--to", "bpe"], 1, "tok.bpe"),  # a file where a folder should be
    (["train", "{dir}", "--vocab-size", "300", "-o", "x.bpe"], 1, "holds no text"),
])
def test_errors_are_one_line_with_the_right_status(work, tok_file, args, status, message):
    empty = work / "empty-folder"
    empty.mkdir(exist_ok=True)
    args = [a.replace("{tok}", str(tok_file)).replace("{dir}", str(empty)) for a in args]
    assert message in one_line_error(bpe_command(*args), status)
