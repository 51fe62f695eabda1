"""bpe_bench.py's measurements of one question each (bench/NAME.py): every one listed is
a module with a main that takes its arguments, reached as `bpe_bench.py NAME`, and
nothing measuring is left in tools/, which keeps generators and CI's scripts."""
import subprocess
import sys
from pathlib import Path

import pytest

import bpe_bench

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", sorted(bpe_bench.MEASUREMENTS))
def test_each_measurement_answers_help_under_its_subcommand(name, capsys, monkeypatch):
    monkeypatch.setattr(sys, "argv", list(sys.argv))  # run_measurement sets argparse's prog
    with pytest.raises(SystemExit) as done:
        bpe_bench.main([name, "--help"])
    assert done.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: bpe_bench.py {name} ")


def test_every_module_in_bench_is_a_subcommand_or_a_part_of_one():
    parts = {"__init__", "texts", "measure", "peers", "worker", "encode", "threads", "train", "reference", "split"}
    modules = {p.stem for p in (ROOT / "bench").glob("*.py")}
    assert modules - parts == {n.replace("-", "_") for n in bpe_bench.MEASUREMENTS}


def test_the_main_help_lists_the_measurements():
    out = subprocess.run([sys.executable, "bpe_bench.py", "--help"], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout
    assert all(name in out for name in bpe_bench.MEASUREMENTS)


def test_the_readme_layout_names_every_measurement():
    row = next(line for line in (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
               if line.startswith("| `bpe_bench.py`, `bench/` |"))
    assert [name for name in bpe_bench.MEASUREMENTS if f"`{name}`" not in row] == []
