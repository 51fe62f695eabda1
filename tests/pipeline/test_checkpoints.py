"""Checkpoints whose values are of the wrong kind: every field is checked by type and
range before anything uses it, and the error names the field.

A real checkpoint is written by pretrain.py (a tiny model, 2 steps), then one field at a
time is corrupted and written back as plain data (torch.save of the dict, which is what a
hand-edited or foreign checkpoint looks like). pretrain.py --resume must refuse each one
with a single line that names the field and exit 1; bits.py and sample.py, which only read
the model, must refuse the ones that load_checkpoint checks (the fields every checkpoint
has), and the untouched checkpoint must still resume.
"""
import random
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import bits
import data
import pretrain
import sample
from model import CHECKPOINT_NAME, load_checkpoint
from torch_threads import one_thread  # noqa: F401 (pytest applies it to every test here)

ROOT = Path(__file__).resolve().parents[2]
TINY = ["--n-layer", "1", "--n-head", "2", "--n-embd", "32", "--context", "16", "--batch-size", "2",
        "--eval-batches", "1", "--log-interval", "1", "--warmup-steps", "1", "--eval-interval", "1"]
WORDS = ["the", "cat", "dog", "sun", "ran", "saw", "a", "big", "little", "tree", "park", "happy", "and", "Lily", "Tom"]


def stories(n, seed):
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 20))).capitalize() + "." for _ in range(n)]


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    src, d = tmp_path_factory.mktemp("src"), tmp_path_factory.mktemp("data")
    (src / "train.txt").write_text("\n\n".join(stories(200, 1)) + "\n", encoding="utf-8")
    (src / "valid.txt").write_text("\n\n".join(stories(40, 2)) + "\n", encoding="utf-8")
    data.main(["--source", str(src), "--data-dir", str(d), "--separator", "blank"])
    return d


@pytest.fixture(scope="module")
def good(data_dir, tmp_path_factory):
    """The checkpoint of a real 2-step run, as plain data."""
    runs = tmp_path_factory.mktemp("runs")
    assert pretrain.main(["--data-dir", str(data_dir), "--runs-dir", str(runs), "--max-steps", "2", *TINY]) == 0
    return torch.load(runs / "pretrain" / CHECKPOINT_NAME, weights_only=True)


def write_run(good, tmp_path, change):
    """A run folder whose checkpoint is the good one with change applied."""
    checkpoint = {k: (dict(v) if isinstance(v, dict) else v) for k, v in good.items()}
    checkpoint["extra"] = dict(good["extra"])
    checkpoint["extra"]["args"] = dict(good["extra"]["args"])
    change(checkpoint)
    runs = tmp_path / "runs"
    (runs / "pretrain").mkdir(parents=True)
    torch.save(checkpoint, runs / "pretrain" / CHECKPOINT_NAME)
    return runs


def put(*keys_and_value):
    *keys, value = keys_and_value

    def change(checkpoint):
        d = checkpoint
        for key in keys[:-1]:
            d = d[key]
        d[keys[-1]] = value
    return change


def drop(key):
    return lambda checkpoint: checkpoint.pop(key)


# (what is wrong, the change, the field the message must name, whether load_checkpoint
# itself refuses it, so that bits.py and sample.py do too). The fields inside extra are
# pretrain.py's own: the model's readers do not use them, so only --resume checks them.
CASES = [
    ("step is a string", put("step", "abc"), "step", True),
    ("step is negative", put("step", -5), "step", True),
    ("step is a bool", put("step", True), "step", True),
    ("step is a float", put("step", 2.0), "step", True),
    ("optimizer's state is a number", put("optimizer", {"state": 5, "param_groups": []}), "optimizer", True),
    ("optimizer has no param_groups", put("optimizer", {"state": {}}), "optimizer", True),
    ("optimizer is a list", put("optimizer", [1, 2]), "optimizer", True),
    ("optimizer is missing", drop("optimizer"), "optimizer", False),
    ("extra is a number", put("extra", 5), "extra", True),
    ("extra is missing", drop("extra"), "extra", False),
    ("losses is a string", put("losses", "x"), "losses", True),
    ("losses hold a string", put("losses", {"step": [1], "train": [None], "valid": ["x"]}), "losses", True),
    ("losses of unequal lengths", put("losses", {"step": [1, 2], "train": [None], "valid": [3.0]}), "losses", False),
    ("losses without steps", put("losses", {"train": [None], "valid": [3.0]}), "losses", False),
    ("elapsed time is a string", put("extra", "elapsed_s", "abc"), "extra.elapsed_s", False),
    ("elapsed time is negative", put("extra", "elapsed_s", -1.0), "extra.elapsed_s", False),
    ("elapsed time is not finite", put("extra", "elapsed_s", float("nan")), "extra.elapsed_s", False),
    ("tokens are negative", put("extra", "tokens", -3), "extra.tokens", False),
    ("args is a number", put("extra", "args", 5), "extra.args", False),
    ("a run flag of the wrong type", put("extra", "args", "batch_size", "abc"), "extra.args.batch_size", False),
    ("a run flag out of range", put("extra", "args", "batch_size", 0), "extra.args.batch_size", False),
    ("random state is a number", put("extra", "random", 5), "extra.random", False),
    ("a generator state is not one", put("extra", "random", {"windows": [torch.zeros(3)], "dropout": []}),
     "extra.random.windows", False),
    ("a generator state of the wrong size",
     put("extra", "random", {"windows": [torch.zeros(3, dtype=torch.uint8)], "dropout": []}),
     "extra.random.windows", False),
]


def refusal(capsys, main, argv):
    """The one line of error a script's main exits 1 with."""
    capsys.readouterr()
    with pytest.raises(SystemExit) as e:
        main(argv)
    err = capsys.readouterr().err
    assert e.value.code == 1, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize("what, change, field, loader_refuses", CASES, ids=[c[0] for c in CASES])
def test_resume_refuses_a_field_of_the_wrong_kind(good, data_dir, tmp_path, capsys, what, change, field,
                                                  loader_refuses):
    runs = write_run(good, tmp_path, change)
    err = refusal(capsys, pretrain.main, ["--data-dir", str(data_dir), "--runs-dir", str(runs), "--resume",
                                          "--max-steps", "3"])
    assert f"the checkpoint's {field} " in err, err


@pytest.mark.parametrize("what, change, field", [c[:3] for c in CASES if c[3]], ids=[c[0] for c in CASES if c[3]])
def test_bits_and_sample_refuse_a_field_of_the_wrong_kind(good, data_dir, tmp_path, capsys, what, change, field):
    runs = write_run(good, tmp_path, change)
    run = str(runs / "pretrain")
    err = refusal(capsys, bits.main, [run, "--data-dir", str(data_dir), "--device", "cpu"])
    assert f"the checkpoint's {field} " in err, err
    err = refusal(capsys, sample.main, [run, "--tokens", "3", "--device", "cpu"])
    assert f"the checkpoint's {field} " in err, err
    with pytest.raises(ValueError, match=f"the checkpoint's {field} "):
        load_checkpoint(run)


@pytest.mark.parametrize("what, change, field", [c[:3] for c in CASES if not c[3]],
                         ids=[c[0] for c in CASES if not c[3]])
def test_readers_of_the_model_need_only_the_model(good, tmp_path, what, change, field):
    """pretrain.py's own fields do not stop the model from loading for bits.py and sample.py."""
    runs = write_run(good, tmp_path, change)
    model, _, checkpoint = load_checkpoint(runs / "pretrain")
    assert checkpoint["step"] == 2 and model.config.n_layer == 1


def test_the_command_line_prints_one_line_without_a_traceback(good, data_dir, tmp_path):
    runs = write_run(good, tmp_path, put("step", "abc"))
    for command in ([ROOT / "pretrain.py", "--data-dir", data_dir, "--runs-dir", runs, "--resume", "--device", "cpu"],
                    [ROOT / "bits.py", runs / "pretrain", "--data-dir", data_dir, "--device", "cpu"],
                    [ROOT / "sample.py", runs / "pretrain", "--device", "cpu"]):
        result = subprocess.run([sys.executable, *map(str, command)], cwd=ROOT, capture_output=True, text=True,
                                timeout=120)
        assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
        assert len(result.stderr.strip().splitlines()) == 1 and "the checkpoint's step " in result.stderr


def test_a_good_checkpoint_still_resumes_and_loads(good, data_dir, tmp_path, capsys):
    runs = write_run(good, tmp_path, lambda checkpoint: None)
    assert pretrain.main(["--data-dir", str(data_dir), "--runs-dir", str(runs), "--resume", "--max-steps", "3"]) == 0
    assert "resuming at step 2" in capsys.readouterr().out
    _, _, checkpoint = load_checkpoint(runs / "pretrain")
    assert checkpoint["step"] == 3 and checkpoint["losses"]["step"] == [0, 1, 2, 3]
    bits.main([str(runs / "pretrain"), "--data-dir", str(data_dir), "--device", "cpu"])
    assert "pretrain" in capsys.readouterr().out
