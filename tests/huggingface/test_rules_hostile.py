"""A tokenizer.json's rules on the engine against hostile input: a split regex that
backtracks is bounded by one budget for the whole text (all its pieces and steps), not
one per piece; offsets, duplicate normalized added tokens and errors as Hugging Face's
(`tokenizers`, the oracle) or as our documented exceptions."""
import json
import sys
import time
from pathlib import Path

import pytest

tokenizers = pytest.importorskip("tokenizers")
from tokenizers import AddedToken, Tokenizer  # noqa: E402

from bpe import _core  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_huggingface_models import byte_level, split, train  # noqa: E402
from test_rules_engine import encoder_of, theirs_encoding  # noqa: E402

Seq = tokenizers.pre_tokenizers.Sequence


def _save(tk, tmp_path):
    path = tmp_path / "tokenizer.json"
    tk.save(str(path))
    theirs = Tokenizer.from_file(str(path))
    theirs.no_padding()
    theirs.no_truncation()
    return path, theirs


def _ends_soon_as_theirs_or_refused(ours, theirs, text, limit=5.0):
    """Every way of encoding `text` ends within `limit` seconds, with Hugging Face's ids or
    the documented RuntimeError for a pattern that backtracks too much."""
    want = theirs_encoding(theirs, text, False).ids
    runs = [lambda: ours.encode(text, (), ()),
            lambda: list(ours.encode_array(text, (), (), 1)),
            lambda: list(ours.encode_array(text, (), (), 2)),
            lambda: ours.encode_batch([text, text], (), (), 1)[1],
            lambda: ours.encode_batch([text, text], (), (), 2)[0],
            lambda: ours.encode_with_offsets(text, (), ())[0]]
    for run in runs:
        start = time.perf_counter()
        try:
            assert run() == want
        except RuntimeError as e:
            assert "backtracked too much" in str(e)
        assert time.perf_counter() - start < limit


def test_a_backtracking_split_has_one_budget_for_all_the_pieces_of_a_text(tmp_path):
    tk = train(Seq([split(" ", "isolated"), split("(?:a|a)*c", "isolated"), byte_level()]))
    path, theirs = _save(tk, tmp_path)
    _ends_soon_as_theirs_or_refused(encoder_of(path), theirs, " ".join(["a" * 17] * 4000))


def test_a_backtracking_split_has_one_budget_for_the_pieces_between_added_tokens(tmp_path):
    tk = train(Seq([split("(?:a|a)*c", "isolated"), byte_level()]))
    tk.add_tokens([AddedToken("<t>", special=False, normalized=False)])
    path, theirs = _save(tk, tmp_path)
    _ends_soon_as_theirs_or_refused(encoder_of(path), theirs, "<t>".join(["a" * 17] * 1000))
