"""The pipeline end to end on a made-up corpus: data.py, pretrain.py, bits.py.

Tiny models (1 layer, 2 heads, 32 wide, context 32) for a few steps, so the file runs in
well under a minute on two cores. The corpus is made here, in a temporary folder.
Also: pretrain.py under torchrun with 2 CPU processes (identical weights in both), --resume
continuing a run exactly (one process and two), a SIGKILL in the middle of a checkpoint
save, Ctrl-C once and twice, and the scripts' errors. Everything is driven from outside:
pretrain.py has no hooks for the tests; where a test needs a save to pause, it runs
pretrain.main under a wrapper that slows os.replace down.
"""
import json
import math
import os
import random
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import bits
import data
import pretrain
from bpe.atomic_writes import temporary_name_pattern
from model import CHECKPOINT_NAME, load_checkpoint
from tokenizer import END_OF_TEXT, PAD, BPETokenizer
from torch_threads import one_thread  # noqa: F401 (pytest applies it to every test here)

ROOT = Path(__file__).resolve().parents[2]
TINY = ["--n-layer", "1", "--n-head", "2", "--n-embd", "32", "--context", "32", "--batch-size", "4",
        "--eval-batches", "2", "--log-interval", "1", "--warmup-steps", "2"]
NAMES = ["Lily", "Tom", "Ben", "Mia", "Sam"]
WORDS = ["the", "a", "cat", "dog", "sun", "tree", "ball", "park", "happy", "big", "little", "ran", "saw", "played",
         "wanted", "to", "and", "was", "very", "friend"]


def made_up_corpus(n, seed, new_names=()):
    """n stories of sentences; some lines broken by a new line inside the story."""
    rng = random.Random(seed)
    syllables = ["ba", "lo", "mi", "ta", "ri", "sun", "fle", "pa", "do", "ke", "ni", "gro", "wa"]
    rare = ["".join(random.Random(k).choice(syllables) for _ in range(1 + k % 3)) for k in range(300)]
    stories = []
    for _ in range(n):
        sentences = []
        for _ in range(rng.randint(2, 6)):
            words = [rng.choice(WORDS) if rng.random() < 0.7 else rng.choice(rare) for _ in range(rng.randint(3, 9))]
            words.insert(rng.randrange(len(words)), rng.choice(NAMES + list(new_names)))
            sentence = " ".join(words).capitalize() + rng.choice([".", "!", "?"])
            if rng.random() < 0.2:
                sentence = f'"{sentence}" said {rng.choice(NAMES)}.'
            sentences.append(sentence)
        sep = "\n" if rng.random() < 0.5 else " "
        stories.append(sep.join(sentences))
    return stories


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """A source folder as TinyStories' own files are (train, with markers) and as the
    samples are (valid, blank lines between stories), plus instructions."""
    src = tmp_path_factory.mktemp("src")
    train = made_up_corpus(400, seed=1)
    valid = made_up_corpus(60, seed=2, new_names=["Zorblax"])
    (src / "TinyStories-train.txt").write_text("".join(s + f"\n{END_OF_TEXT}\n" for s in train), encoding="utf-8")
    (src / "valid-sample.txt").write_text("\n\n".join(valid) + "\n", encoding="utf-8")
    (src / "instruct-train.txt").write_text(
        "".join(f"Words: cat, sun\nStory: {s}\n{END_OF_TEXT}\n" for s in made_up_corpus(50, seed=3)), encoding="utf-8")
    return src, train, valid


@pytest.fixture(scope="module")
def data_dir(corpus, tmp_path_factory):
    """data.py --source, then data.py --bpe --source: word-level and BPE files side by side."""
    src = corpus[0]
    d = tmp_path_factory.mktemp("data")
    # The held-out stories hold line breaks, which auto would take for a story per line.
    data.main(["--source", str(src), "--data-dir", str(d), "--separator", "blank"])
    data.main(["--bpe", "--vocab-size", "458", "--source", str(src), "--data-dir", str(d), "--separator", "blank"])
    return d


def run_env(**extra):
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    env.update(extra)
    return env


def parse_table(out):
    """{model: (bits/char, tokens, unknown %, chars/token, round trip %)} from bits.py's output."""
    rows = {}
    for line in out.splitlines():
        m = re.fullmatch(r"(\S+)\s+([\d.naif]+)\s+([\d,]+)\s+([\d.]+)%\s+([\d.]+)\s+([\d.]+)%\s+[\d.]+", line.strip())
        if m:
            rows[m.group(1)] = (float(m.group(2)), int(m.group(3).replace(",", "")), float(m.group(4)),
                                float(m.group(5)), float(m.group(6)))
    return rows


# ---------------------------------------------------------------------------------------
# End to end


def test_data_py_writes_both_tokenizations(data_dir, corpus, capsys):
    _, train, valid = corpus
    assert data.read_stories(data_dir / "train.txt") == train
    assert data.read_stories(data_dir / "valid.txt") == valid
    tok = data.load_tokenizer(data_dir, bpe=True)
    assert tok == BPETokenizer.load(data_dir / "tokenizer.bpe")
    assert len(tok.merges) == 200 and len(tok) == 256 + 200 + 2 and tok.special_tokens == (PAD, END_OF_TEXT)
    ids = data.load_tokens(data.token_file(data_dir, "train", True), tok)
    # Story after story, each after its end of text, and decoding gives the stories back.
    assert ids[0] == tok.eot_token
    pieces = tok.decode(ids).split(END_OF_TEXT)
    assert pieces[1:] == train
    word = data.load_tokenizer(data_dir, bpe=False)
    assert "Zorblax" not in word.ids  # the held-out stories' new name is not in the vocabulary


def test_bpe_prints_its_merges_and_each_files_statistics(corpus, tmp_path, capsys):
    data.main(["--bpe", "--vocab-size", "358", "--source", str(corpus[0]), "--data-dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert re.search(r"BPE: learned 100 merges from [\d.]+ MB of stories and instructions \(450 of them\) in [\d.]+ s; vocabulary 358", out)
    assert re.search(r"train-bpe\.bin: [\d,]+ tokens from 400 stories, [\d.]+ characters per token, "
                     r"unknown none .*encoded in [\d.]+ s", out)
    assert '"Once upon a time, a cat said hello"' in out and "decoded: 'Once upon a time, a cat said hello'" in out
    assert not (tmp_path / "train.bin").exists()  # --bpe leaves the word-level files alone


def test_end_to_end_word_and_bpe_models_then_bits_per_character(data_dir, tmp_path, capsys):
    runs = tmp_path / "runs"
    for flags in ([], ["--rope", "--bpe"]):
        code = pretrain.main(["--data-dir", str(data_dir), "--runs-dir", str(runs), "--max-steps", "6",
                              "--eval-interval", "3", *TINY, *flags])
        assert code == 0
    out = capsys.readouterr().out
    assert "pretrain: " in out and "pretrain-rope-bpe: " in out and "tokens/s" in out
    for name, vocab in (("pretrain", len(data.load_tokenizer(data_dir, False))), ("pretrain-rope-bpe", 458)):
        model, tok, ckpt = load_checkpoint(runs / name)
        assert ckpt["step"] == 6 and model.config.vocab_size == vocab == len(tok)
        assert ckpt["losses"]["step"] == [0, 3, 6] and all(math.isfinite(v) for v in ckpt["losses"]["valid"])
        assert "optimizer" in ckpt and ckpt["extra"]["tokens"] == 6 * 4 * 32
        log = [json.loads(line) for line in (runs / name / "log.jsonl").read_text().splitlines()]
        assert [r["event"] for r in log][:2] == ["start", "eval"] and log[-1]["event"] == "stop"
        assert all(math.isfinite(r["tokens_per_s"]) for r in log if r["event"] == "train")

    bits.main([str(runs / "pretrain"), str(runs / "pretrain-rope-bpe" / CHECKPOINT_NAME),
               "--data-dir", str(data_dir), "--device", "cpu"])
    rows = parse_table(capsys.readouterr().out)
    assert set(rows) == {"pretrain", "pretrain-rope-bpe"}
    for name, (bpc, tokens, unknown, chars_per_token, round_trip) in rows.items():
        assert math.isfinite(bpc) and 0 < bpc < 20, name
        assert tokens > 0 and 1 < chars_per_token < 10
    assert rows["pretrain-rope-bpe"][2] == 0.0 and rows["pretrain-rope-bpe"][4] == 100.0
    # New lines in the stories, and a new name: the word-level tokenizer loses both.
    assert rows["pretrain"][4] < 100.0 and rows["pretrain"][2] > 0.0


def test_bits_per_character_is_the_summed_loss_over_characters(data_dir, tmp_path):
    """bits.py's number, computed again by hand for a model that predicts every token with
    the same probability: log2(vocabulary) bits per token over the characters covered."""
    from model import GPT, GPTConfig

    tok = data.load_tokenizer(data_dir, bpe=True)
    model = GPT(GPTConfig(vocab_size=len(tok), context=16, n_layer=1, n_head=2, n_embd=32))
    with torch.no_grad():
        for p in model.parameters():
            p.zero_()  # all logits 0: uniform
    stories = data.read_stories(data_dir / "valid.txt")
    r = bits.bits_per_character(model, tok, stories, "cpu")
    n_ids = len(tok.encode(data.token_text(stories), allowed_special="all"))
    windows = (n_ids - 1) // 16
    chars = sum(len(s) for s in stories) + len(stories)
    expected = windows * 16 * math.log2(len(tok)) / (chars * windows * 16 / n_ids)
    assert r["bits_per_char"] == pytest.approx(expected, rel=1e-6)
    assert r["tokens"] == n_ids and r["chars_per_token"] == pytest.approx(chars / n_ids)


# ---------------------------------------------------------------------------------------
# Several processes


def torchrun(*args):
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
            str(ROOT / "pretrain.py"), *args, "--device", "cpu"]


def read_log(run_dir):
    return [json.loads(line) for line in (run_dir / "log.jsonl").read_text().splitlines()]


def test_torchrun_two_cpu_processes_end_with_identical_weights(data_dir, tmp_path):
    runs = tmp_path / "runs"
    result = subprocess.run(
        torchrun("--bpe", "--rope", "--data-dir", str(data_dir), "--runs-dir", str(runs), "--max-steps", "4",
                 "--eval-interval", "2", *TINY),
        cwd=ROOT, env=run_env(), capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stdout + result.stderr
    # At each checkpoint every process reports a hash of its weights, and they agree...
    log = read_log(runs / "pretrain-rope-bpe")
    saves = [r for r in log if r["event"] == "checkpoint"]
    assert [r["step"] for r in saves] == [2, 4]
    for r in saves:
        assert len(r["weights_sha256"]) == 2 and r["weights_sha256"][0] == r["weights_sha256"][1]
    assert saves[0]["weights_sha256"] != saves[1]["weights_sha256"]  # the run did train
    # ...with the weights the checkpoint holds.
    model, _, ckpt = load_checkpoint(runs / "pretrain-rope-bpe")
    assert ckpt["step"] == 4 and pretrain.weights_hash(model) == saves[-1]["weights_sha256"][0]
    assert "2 process(es)" in result.stdout and result.stdout.count("done: 4 steps") == 1  # only rank 0 prints
    assert log[0]["world"] == 2 and log[-1]["tokens"] == 4 * 2 * 4 * 32
    assert "Traceback" not in result.stderr


# ---------------------------------------------------------------------------------------
# Crashes, interrupts, resuming


# A run with a schedule in steps, in full and in two halves, as a user would type them:
# the halves must give what the full run gives, step for step. Dropout is on, so that its
# random state has to carry over too.
STEP_RUN = ["--bpe", "--decay-steps", "40", "--minutes", "60", "--eval-interval", "10", "--dropout", "0.1", *TINY]
FULL = [*STEP_RUN, "--max-steps", "40"]
FIRST_HALF = [*STEP_RUN, "--max-steps", "20"]
SECOND_HALF = ["--bpe", "--resume", "--max-steps", "40"]


def pretrain_cli(data_dir, runs, *flags):
    return [str(ROOT / "pretrain.py"), "--data-dir", str(data_dir), "--runs-dir", str(runs), *flags]


def run_ok(command):
    result = subprocess.run(command, cwd=ROOT, env=run_env(), capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    return result.stdout


def assert_same_run(run_a, run_b):
    """Step for step the same losses and learning rates, and the same checkpoint at the end:
    weights, optimizer, evaluations and random state."""
    def steps(run):
        return [(r["step"], r["loss"], r["lr"]) for r in read_log(run) if r["event"] == "train"]
    assert [s for s, _, _ in steps(run_a)] == list(range(1, 41))
    assert steps(run_a) == steps(run_b)
    _, _, a = load_checkpoint(run_a)
    _, _, b = load_checkpoint(run_b)
    assert a["step"] == b["step"] == 40 and a["losses"] == b["losses"]
    assert a["model"].keys() == b["model"].keys()
    for key in a["model"]:
        assert torch.equal(a["model"][key], b["model"][key]), key
    for k, state in a["optimizer"]["state"].items():
        for name, value in state.items():
            assert torch.equal(value, b["optimizer"]["state"][k][name]), (k, name)
    for which in ("windows", "dropout"):
        assert len(a["extra"]["random"][which]) == len(b["extra"]["random"][which])
        for x, y in zip(a["extra"]["random"][which], b["extra"]["random"][which]):
            assert torch.equal(x, y), which
    assert a["extra"]["args"]["decay_steps"] == b["extra"]["args"]["decay_steps"] == 40


def test_resume_continues_a_run_exactly(data_dir, tmp_path):
    full, halves = tmp_path / "full", tmp_path / "halves"
    run_ok([sys.executable, *pretrain_cli(data_dir, full, *FULL)])
    run_ok([sys.executable, *pretrain_cli(data_dir, halves, *FIRST_HALF)])
    assert load_checkpoint(halves / "pretrain-bpe")[2]["step"] == 20
    out = run_ok([sys.executable, *pretrain_cli(data_dir, halves, *SECOND_HALF)])
    assert "resuming at step 20" in out and "--max-steps 40 replaces the run's 20" in out
    assert_same_run(full / "pretrain-bpe", halves / "pretrain-bpe")


@pytest.fixture(scope="module")
def torchrun_halves(data_dir, tmp_path_factory):
    """The same under torchrun with 2 CPU processes: (full run's folder, halves' folder)."""
    full, halves = tmp_path_factory.mktemp("full"), tmp_path_factory.mktemp("halves")
    run_ok(torchrun(*pretrain_cli(data_dir, full, *FULL)[1:]))
    run_ok(torchrun(*pretrain_cli(data_dir, halves, *FIRST_HALF)[1:]))
    run_ok(torchrun(*pretrain_cli(data_dir, halves, *SECOND_HALF)[1:]))
    return full / "pretrain-bpe", halves / "pretrain-bpe"


def test_resume_under_torchrun_continues_every_process_exactly(torchrun_halves):
    full, halves = torchrun_halves
    assert_same_run(full, halves)
    _, _, ckpt = load_checkpoint(halves)
    windows = ckpt["extra"]["random"]["windows"]
    assert len(windows) == 2 and not torch.equal(windows[0], windows[1])  # each process's own


def test_resume_with_fewer_processes_is_repeatable_and_says_how(torchrun_halves, data_dir, tmp_path, capsys):
    """Two processes' run resumed by one: the one continues rank 0's windows; twice the
    same."""
    _, halves = torchrun_halves
    weights = []
    for copy in ("a", "b"):
        runs = tmp_path / copy
        (runs / "pretrain-bpe").mkdir(parents=True)
        (runs / "pretrain-bpe" / CHECKPOINT_NAME).write_bytes((halves / CHECKPOINT_NAME).read_bytes())
        assert pretrain.main(["--data-dir", str(data_dir), "--runs-dir", str(runs), "--bpe", "--resume",
                              "--max-steps", "43"]) == 0
        assert "the run was trained by 2 process(es), this is 1" in capsys.readouterr().out
        model, _, ckpt = load_checkpoint(runs / "pretrain-bpe")
        assert ckpt["step"] == 43 and len(ckpt["extra"]["random"]["windows"]) == 1
        weights.append(pretrain.weights_hash(model))
    assert weights[0] == weights[1]


def test_a_process_the_checkpoint_has_no_state_for_draws_from_the_seed():
    g = torch.Generator().manual_seed(5)
    g.get_state()
    saved = {"windows": [g.get_state()], "dropout": [torch.get_rng_state()]}
    rank0 = pretrain.restore_random_state(saved, 0, 7, 1337, "cpu")
    assert torch.equal(rank0.get_state(), saved["windows"][0])
    rank1 = pretrain.restore_random_state(saved, 1, 7, 1337, "cpu")
    assert torch.equal(rank1.get_state(), torch.Generator().manual_seed(1337 + 1000 + 7).get_state())


def test_resume_keeps_the_runs_flags_and_says_which_change(data_dir, tmp_path, capsys):
    args = ["--data-dir", str(data_dir), "--runs-dir", str(tmp_path)]
    assert pretrain.main([*args, "--max-steps", "1", "--decay-steps", "30", "--lr", "0.002", *TINY]) == 0
    capsys.readouterr()
    assert pretrain.main([*args, "--resume", "--max-steps", "2", "--lr", "0.003"]) == 0
    out = capsys.readouterr().out
    assert "--lr 0.003 replaces the run's 0.002" in out and "decaying over 30 steps" in out
    flags = load_checkpoint(tmp_path / "pretrain")[2]["extra"]["args"]
    assert (flags["lr"], flags["decay_steps"], flags["batch_size"], flags["warmup_steps"]) == (0.003, 30, 4, 2)
    train = [r for r in read_log(tmp_path / "pretrain") if r["event"] == "train"]
    assert [r["lr"] for r in train] == [0.002 * 1 / 2, 0.003 * 2 / 2]  # in warmup: --lr * (step + 1) / 2
    with pytest.raises(SystemExit) as e:
        pretrain.main([*args, "--resume", "--max-steps", "3", "--n-layer", "2"])
    assert e.value.code == 1 and "--n-layer 2, but the run's model has 1" in capsys.readouterr().err


def test_decay_steps_sets_the_schedule_in_steps(data_dir, tmp_path):
    assert pretrain.main(["--data-dir", str(data_dir), "--runs-dir", str(tmp_path), "--max-steps", "8",
                          "--decay-steps", "6", "--lr", "0.01", "--min-lr", "0.001", *TINY]) == 0
    lrs = [r["lr"] for r in read_log(tmp_path / "pretrain") if r["event"] == "train"]
    cosine = [0.001 + 0.5 * 0.009 * (1 + math.cos(math.pi * min(s / 6, 1))) for s in range(2, 8)]
    assert lrs == pytest.approx([0.005, 0.01, *cosine], rel=1e-12)
    assert lrs[-2:] == [0.001] * 2  # at --min-lr from step 6 on


# pretrain.main, with every rename onto a checkpoint paused for a minute after the
# temporary file is written in full: where a crash in the middle of a save lands.
PAUSED_SAVES = """
import os, sys, time
real_replace = os.replace
def paused_replace(src, dst, *args, **kwargs):
    if os.path.basename(os.fspath(dst)) == "ckpt.pt":
        print("checkpoint: temporary file written, pausing before the rename", flush=True)
        time.sleep(60)
    return real_replace(src, dst, *args, **kwargs)
os.replace = paused_replace
import pretrain
sys.exit(pretrain.main(sys.argv[1:]))
"""


def start_pretrain(data_dir, runs, *flags, paused_saves=False):
    launch = ["-c", PAUSED_SAVES] if paused_saves else []
    return subprocess.Popen(
        [sys.executable, *launch, *pretrain_cli(data_dir, runs, *TINY, *flags)[1 if paused_saves else 0:]],
        cwd=ROOT, env=run_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def wait_for_line(proc, pattern, seen):
    for line in proc.stdout:
        seen.append(line)
        if re.search(pattern, line):
            return line
    raise AssertionError(f"{pattern!r} never came; output:\n{''.join(seen)}")


def test_sigkill_during_a_checkpoint_save_leaves_the_previous_one_loadable(data_dir, tmp_path):
    runs = tmp_path / "runs"
    assert pretrain.main(["--data-dir", str(data_dir), "--runs-dir", str(runs), "--max-steps", "2", *TINY]) == 0
    ckpt = runs / "pretrain" / CHECKPOINT_NAME
    before = ckpt.read_bytes()

    proc = start_pretrain(data_dir, runs, "--resume", "--max-steps", "4", paused_saves=True)
    seen = []
    try:
        wait_for_line(proc, r"temporary file written, pausing", seen)
        temporaries = list(ckpt.parent.glob(temporary_name_pattern(ckpt)))
        assert len(temporaries) == 1 and temporaries[0].stat().st_size > 0  # the new one, written in full
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait(timeout=30)
        proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL

    assert ckpt.read_bytes() == before
    _, _, checkpoint = load_checkpoint(ckpt)
    assert checkpoint["step"] == 2
    # The next run carries on from it, and clears away the dead save's temporary file.
    assert pretrain.main(["--data-dir", str(data_dir), "--runs-dir", str(runs), "--resume", "--max-steps", "3",
                          *TINY]) == 0
    assert load_checkpoint(ckpt)[2]["step"] == 3
    assert not list(ckpt.parent.glob(temporary_name_pattern(ckpt)))


def test_a_second_ctrl_c_stops_at_once_without_a_traceback(data_dir, tmp_path):
    """The first Ctrl-C asks for a save; the second comes while it is being written."""
    runs = tmp_path / "runs"
    proc = start_pretrain(data_dir, runs, "--max-steps", "100000", "--eval-interval", "100000", paused_saves=True)
    seen = []
    try:
        wait_for_line(proc, r"^step 3 \|", seen)
        proc.send_signal(signal.SIGINT)
        wait_for_line(proc, r"temporary file written, pausing", seen)
        proc.send_signal(signal.SIGINT)
        rest, _ = proc.communicate(timeout=30)
    finally:
        proc.kill()
        proc.stdout.close()
    output = "".join(seen) + rest
    assert proc.returncode == 130, output
    assert "Traceback" not in output and "KeyboardInterrupt" not in output
    assert rest.strip() == "SIGINT again: stopped at once, without saving", output
    assert not (runs / "pretrain" / CHECKPOINT_NAME).exists()  # the save it cut short never landed


def test_ctrl_c_saves_and_exits_then_resume_continues(data_dir, tmp_path, capsys):
    runs = tmp_path / "runs"
    proc = start_pretrain(data_dir, runs, "--bpe", "--max-steps", "100000", "--eval-interval", "100000")
    seen = []
    try:
        wait_for_line(proc, r"^step 3 \|", seen)
        proc.send_signal(signal.SIGINT)
        rest, _ = proc.communicate(timeout=60)
    finally:
        proc.kill()
        proc.stdout.close()
    output = "".join(seen) + rest
    assert proc.returncode == 130, output
    assert "Traceback" not in output and "interrupted at step" in output
    _, _, ckpt = load_checkpoint(runs / "pretrain-bpe")
    stopped = ckpt["step"]
    assert stopped >= 3 and f"interrupted at step {stopped}: checkpoint saved" in output

    code = pretrain.main(["--data-dir", str(data_dir), "--runs-dir", str(runs), "--bpe", "--resume",
                          "--max-steps", str(stopped + 2), *TINY])
    assert code == 0
    out = capsys.readouterr().out
    assert f"resuming at step {stopped}" in out and f"done: {stopped + 2} steps" in out
    _, _, ckpt = load_checkpoint(runs / "pretrain-bpe")
    assert ckpt["step"] == stopped + 2 and ckpt["extra"]["tokens"] == (stopped + 2) * 4 * 32
    # A finished run resumed without more budget has nothing to do, and says so.
    assert pretrain.main(["--data-dir", str(data_dir), "--runs-dir", str(runs), "--bpe", "--resume",
                          "--max-steps", str(stopped + 2), *TINY]) == 0
    assert "nothing to do" in capsys.readouterr().out


def test_time_budget_stops_the_run(data_dir, tmp_path, capsys):
    code = pretrain.main(["--data-dir", str(data_dir), "--runs-dir", str(tmp_path), "--rope", "--minutes", "0.001", *TINY])
    assert code == 0
    _, _, ckpt = load_checkpoint(tmp_path / "pretrain-rope")
    assert ckpt["step"] < 50 and ckpt["extra"]["elapsed_s"] >= 0.06


# ---------------------------------------------------------------------------------------
# Errors and help


def test_an_existing_run_is_not_overwritten_without_asking(data_dir, tmp_path, capsys):
    args = ["--data-dir", str(data_dir), "--runs-dir", str(tmp_path), "--max-steps", "1", *TINY]
    assert pretrain.main(args) == 0
    with pytest.raises(SystemExit) as e:
        pretrain.main(args)
    assert e.value.code == 1 and "--resume continues that run, --overwrite starts again" in capsys.readouterr().err
    assert pretrain.main([*args, "--overwrite"]) == 0


def test_resume_with_another_tokenizer_is_refused(data_dir, tmp_path, capsys):
    args = ["--data-dir", str(data_dir), "--runs-dir", str(tmp_path), "--max-steps", "1", *TINY]
    assert pretrain.main(args) == 0
    other = tmp_path / "other-data"
    other.mkdir()
    for name in ("train.txt", "valid.txt"):
        (other / name).write_bytes((data_dir / name).read_bytes())
    data.build_words(other, 50)  # a smaller vocabulary: another tokenizer
    capsys.readouterr()
    with pytest.raises(SystemExit):
        pretrain.main(["--data-dir", str(other), "--runs-dir", str(tmp_path), "--resume", "--max-steps", "2", *TINY])
    assert "trained with another tokenizer" in capsys.readouterr().err


@pytest.mark.parametrize("flags, command", [([], "python data.py"), (["--bpe"], "python data.py --bpe")])
def test_missing_data_names_the_command(tmp_path, capsys, flags, command):
    with pytest.raises(SystemExit) as e:
        pretrain.main(["--data-dir", str(tmp_path), "--runs-dir", str(tmp_path), *flags])
    assert e.value.code == 1 and f"make it with `{command}`" in capsys.readouterr().err


@pytest.mark.parametrize("with_sidecars", [True, False])
def test_token_files_of_the_other_tokenizer_are_refused(data_dir, tmp_path, capsys, with_sidecars):
    """The word-level files copied over the BPE ones: every word id is a BPE id too (141
    words against 458 BPE tokens here), so only the sidecars can tell."""
    copy = tmp_path / "data"
    shutil.copytree(data_dir, copy)
    assert len(data.load_tokenizer(copy, bpe=False)) < len(data.load_tokenizer(copy, bpe=True))
    for split in ("train", "valid"):
        for suffix in ([".bin", ".bin.json"] if with_sidecars else [".bin"]):
            shutil.copy(copy / f"{split}{suffix}", copy / f"{split}-bpe{suffix}")
    with pytest.raises(SystemExit) as e:
        pretrain.main(["--data-dir", str(copy), "--runs-dir", str(tmp_path / "runs"), "--bpe", "--max-steps", "1", *TINY])
    err = capsys.readouterr().err
    assert e.value.code == 1 and "train-bpe.bin" in err and err.endswith("make it again with `python data.py --bpe`\n")
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "runs").exists()


def test_bits_errors_are_clear(data_dir, tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        bits.main([str(tmp_path / "runs" / "pretrain")])
    assert e.value.code == 1 and "no checkpoint at" in capsys.readouterr().err
    pretrain.main(["--data-dir", str(data_dir), "--runs-dir", str(tmp_path), "--max-steps", "1", *TINY])
    with pytest.raises(SystemExit):
        bits.main([str(tmp_path / "pretrain"), "--data-dir", str(tmp_path / "nothing")])
    assert "make it with `python data.py`" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        bits.main([str(tmp_path / "pretrain"), "--data-dir", str(data_dir), "--chars", "20"])
    assert "do not fill one window" in capsys.readouterr().err


@pytest.mark.parametrize("script", [pretrain, bits])
def test_help_documents_every_flag(script, capsys):
    parser = script.build_parser()
    for action in parser._actions:
        assert action.help, action.option_strings or action.dest
    with pytest.raises(SystemExit):
        script.main(["--help"])
    out = capsys.readouterr().out
    for action in parser._actions:
        for flag in action.option_strings:
            assert flag in out
