"""The named split rules stand in one table, the core's (csrc/split_rules.h): the C++
parses names and texts with it, bpe.formats gives its regexes to other libraries, and
the documentation's table lists its names. No other file of the library writes a rule's
regex out (bpe_reference.py keeps its own copies, on purpose: an oracle shares no code
with what it checks)."""
import re
from pathlib import Path

import pytest

core = pytest.importorskip("bpe._core", reason="the core is not built")
from bpe import BPETokenizer, formats, registry  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
NAMES = ("default", "gpt2", "gpt4", "qwen2", "o200k", "deepseek3")


def test_the_table_has_the_named_rules_in_order():
    assert tuple(name for name, *_ in core.split_rules()) == NAMES


@pytest.mark.parametrize("name", NAMES)
def test_each_text_that_names_a_rule_runs_that_rule(name):
    texts = {n: t for n, _, _, t in core.split_rules()}[name]
    assert (len(texts) >= 1) == (name != "default")
    for text in texts:
        assert BPETokenizer([], pattern=text).pattern == name
    assert BPETokenizer([], pattern=name).pattern == name


def test_the_package_reads_its_regexes_from_the_table():
    rules = {n: (regex, oniguruma) for n, regex, oniguruma, _ in core.split_rules()}
    assert formats.TIKTOKEN_PATTERNS == {n: r for n, (r, _) in rules.items()}
    assert formats.ONIGURUMA_PATTERNS == {n: o for n, (_, o) in rules.items()}
    assert (formats.DEFAULT_PATTERN, formats.GPT2_PATTERN, formats.GPT4_PATTERN, formats.QWEN2_PATTERN,
            formats.O200K_PATTERN) == tuple(rules[n][0] for n in NAMES[:5])
    assert formats.DEFAULT_PATTERN_ONIGURUMA == rules["default"][1] != rules["default"][0]
    # The registry's row for o200k_base (OpenAI's published facts) agrees with the rule.
    assert registry.PUBLISHED["o200k_base"].pat_str == rules["o200k"][0]
    with pytest.raises(AttributeError, match="GPT5_PATTERN"):
        formats.GPT5_PATTERN  # noqa: B018


def test_no_other_file_of_the_library_writes_a_rule_out():
    texts = {text for _, regex, oniguruma, names in core.split_rules() for text in (regex, oniguruma, *names)}
    files = [*ROOT.glob("csrc/*.h"), *ROOT.glob("csrc/*.cpp"), *ROOT.glob("bpe/**/*.py")]
    holders = sorted(str(f.relative_to(ROOT)) for f in files
                     if any(text in f.read_text(encoding="utf-8") for text in texts))
    assert holders == ["csrc/split_rules.h"]


def test_the_docs_table_of_rules_lists_the_tables_names():
    page = (ROOT / "docs" / "library.md").read_text(encoding="utf-8")
    section = page.split("## Split patterns", 1)[1].split("\n\n", 2)[1]
    listed = tuple(re.findall(r'^\| `"(\w+)"` \|', section, re.M))
    assert listed == NAMES
