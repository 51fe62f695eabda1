"""The documentation's promises that code can check: every public name of bpe has a
docstring and a place in the API reference (docs/api.md), the training animation is
drawn from what bpe.train does, and the BPE page's table of the paper's example is in
the order the code merges."""
import inspect
import re
from pathlib import Path

import pytest

import bpe
import bpe_reference as ref
from bpe.encoding import BPETokenizer, StreamDecoder

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def public_members(cls) -> list:
    """The names of cls that are its API: the public ones it defines, and the dunders
    that mean something to a caller (the constructor, len)."""
    return [n for n in vars(cls) if not n.startswith("_") or n in ("__init__", "__len__")]


@pytest.mark.parametrize("cls", [BPETokenizer, StreamDecoder])
def test_every_public_member_has_its_own_docstring(cls):
    missing = []
    for name in public_members(cls):
        member = vars(cls)[name]
        function = member.fget if isinstance(member, property) else getattr(member, "__func__", member)
        if not (getattr(function, "__doc__", None) or "").strip():
            missing.append(name)
    assert not missing, f"{cls.__name__}: no docstring for {', '.join(missing)}"


def test_the_api_reference_names_every_public_name_of_bpe():
    page = (DOCS / "api.md").read_text(encoding="utf-8")
    missing = [n for n in bpe.__all__ if not re.search(rf"(::: bpe(\._core|\.encoding)?\.|`bpe\.){re.escape(n)}\b", page)]
    assert not missing, f"docs/api.md does not document {', '.join(missing)}"
    assert "::: bpe.encoding.StreamDecoder" in page


def test_the_api_reference_is_built_by_mkdocstrings_pinned_for_the_docs():
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert "- mkdocstrings:" in config and "api.md" in config
    pins = (ROOT / "requirements-docs.txt").read_text(encoding="utf-8")
    assert re.search(r"^mkdocstrings==\d", pins, re.M) and re.search(r"^mkdocstrings-python==\d", pins, re.M)


def test_the_training_animation_is_drawn_from_bpe_train():
    figures = pytest.importorskip("figures")
    words = b"\n".join(w.encode() + b"\xb7" for w, n in figures.PAPER_WORDS.items() for _ in range(n))
    merges, chunks, steps = figures.training_steps(words, 10)
    assert merges == ref.train(words, 10) == bpe.train(words, 10)
    assert [s["pair"] for s in steps] == [tuple(m) for m in merges]
    # Each step's top count is the pair merged, and the words after it are the
    # reference's encoding of each chunk with the merges so far.
    for k, step in enumerate(steps):
        assert step["counts"][0][0] == tuple(merges[k])
        for chunk, ids in step["words"].items():
            assert ids == ref.encode(chunk, merges[:k + 1])


def test_the_paper_example_table_is_in_the_order_the_code_merges():
    page = (DOCS / "bpe.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| (\d) \| .*? \| `([^`]+)` → `([^`]+)` \|", page, re.M)
    assert [int(k) for k, _, _ in rows] == [0, 1, 2, 3]
    words = b"low\xb7\nlowest\xb7\nnewer\xb7\nwider\xb7"
    merges = bpe.train(words, 4)
    vocab = ref.token_bytes(merges)
    want = [(f"{vocab[a].decode('latin-1')} {vocab[b].decode('latin-1')}", vocab[256 + k].decode("latin-1"))
            for k, (a, b) in enumerate(merges)]
    assert [(pair, token) for _, pair, token in rows] == want
