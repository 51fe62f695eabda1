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


def _small_rules_encoder(**rules):
    return _core.Encoder([], rules={"normalizer": "NFC", "pre_tokenizer": [
        {"type": "ByteLevel", "use_regex": True, "add_prefix_space": False, "trim_offsets": False}],
        "added_tokens": [], "ignore_merges": False, **rules})


@pytest.mark.parametrize("call", [lambda e, t: e.encode(t, (), ()), lambda e, t: e.encode_batch([t], (), (), 1)])
def test_invalid_utf8_under_rules_names_the_rules_not_a_pattern(call):
    with pytest.raises(ValueError, match="not valid UTF-8") as info:
        call(_small_rules_encoder(), b"a\xffb")
    assert "tokenizer.json's rules" in str(info.value)
    assert "gpt2" not in str(info.value) and "default" not in str(info.value)


@pytest.mark.parametrize("spellings", [("\u00f1", "n\u0303"), ("\u00c5", "\u212b"), ("n\u0303", "\u00f1"),
                                       ("<x\u0308>", "<\u1e8d>")])
@pytest.mark.parametrize("special", [False, True])
def test_normalized_added_tokens_with_one_nfc_form_load_and_match_as_the_first(tmp_path, spellings, special):
    """Hugging Face loads such a file; which of the tokens it matches depends on the order
    of a hash map of its (it changes from one process to the next): ours is always the
    first in the file, one of its answers."""
    import unicodedata
    tk = train(byte_level(use_regex=True), tokenizers.normalizers.NFC())
    tk.add_tokens([AddedToken("<q>", special=False, normalized=True)])
    tk.add_special_tokens([AddedToken("<s>", special=True, normalized=False)])
    adder = tk.add_special_tokens if special else tk.add_tokens
    adder([AddedToken(s, special=special, normalized=True) for s in spellings])
    path, theirs = _save(tk, tmp_path)
    form = unicodedata.normalize("NFC", spellings[0])
    same = [t["id"] for t in json.loads(path.read_text())["added_tokens"]
            if unicodedata.normalize("NFC", t["content"]) == form]
    assert len(same) == 2
    ours = encoder_of(path)
    for text in ["a" + spellings[0] + "b", "a" + spellings[1] + "b" + spellings[0], "<s><q>" + spellings[1],
                 spellings[1] + "<q>" + spellings[0] + "<s>"]:
        for allowed in ("all", ()):
            want = theirs_encoding(theirs, text, allowed == "all")
            want_ids = [same[0] if i in same else i for i in want.ids]
            assert ours.encode(text, allowed, ()) == want_ids, (text, allowed)
            ids, spans = ours.encode_with_offsets(text, allowed, ())
            assert ids == want_ids and [tuple(s) for s in spans.tolist()] == want.offsets, (text, allowed)


WHITE = [" ", "\u3000", "\n", "\t", "\u00a0", "\u2028", "\u0120", "\u0085", "  "]


def _trimming_tokenizer(added, prefix):
    tk = train(byte_level(use_regex=True, add_prefix_space=prefix), tokenizers.normalizers.NFC())
    tk.add_tokens(added)
    tk.post_processor = tokenizers.processors.ByteLevel(trim_offsets=True, add_prefix_space=prefix)
    return tk


def _same_offsets(tmp_path, tk, texts):
    path, theirs = _save(tk, tmp_path)
    ours = encoder_of(path)
    compared = 0
    for text in texts:
        try:
            want = theirs_encoding(theirs, text, True)
        except BaseException as e:  # Hugging Face panics on some (AddedVocabulary bad split): no oracle
            if "bad split" not in str(e):
                raise
            continue
        compared += 1
        ids, spans = ours.encode_with_offsets(text, "all", ())
        assert ids == want.ids, text
        assert [tuple(s) for s in spans.tolist()] == want.offsets, text
    assert compared >= len(texts) // 2


def test_trimmed_offsets_of_an_added_token_leave_out_the_whitespace_it_matched(tmp_path):
    tk = _trimming_tokenizer([AddedToken("<s>", special=False, normalized=False, rstrip=True),
                              AddedToken("\n", special=False, normalized=False)], False)
    _same_offsets(tmp_path, tk, ["a<s>\u3000b", "a<s>  b", "a\nb", "\n", "<s> \n x", " \n<s>\u3000\u3000"])


@pytest.mark.parametrize("seed", range(12))
def test_trimmed_offsets_of_random_added_tokens_are_huggingfaces(tmp_path, seed):
    import random
    import unicodedata
    rng = random.Random(seed)
    pieces = WHITE + ["<s>", "a", "b", "\u00e9", "e\u0301", "x"]
    added, seen = [], set()
    for _ in range(5):
        content = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 3)))
        if rng.random() < 0.3:
            content = rng.choice(WHITE)
        if unicodedata.normalize("NFC", content) in seen:  # Hugging Face's pick among those varies
            continue
        seen.add(unicodedata.normalize("NFC", content))
        added.append(AddedToken(content, special=False, normalized=rng.random() < 0.5, lstrip=rng.random() < 0.5,
                                rstrip=rng.random() < 0.5))
    tk = _trimming_tokenizer(added, rng.random() < 0.5)
    texts = ["".join(rng.choice(pieces + [t.content for t in added]) for _ in range(rng.randint(0, 12)))
             for _ in range(60)]
    _same_offsets(tmp_path, tk, texts)
