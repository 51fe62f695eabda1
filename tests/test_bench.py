"""The benchmark's texts (bpe_bench.py): the pieces it hands to libraries that take a
list or refuse long texts must hold exactly the chunks of the whole text, under every
split rule, or a peer's ids would differ for a reason of the benchmark's making."""
import pytest

import bpe_bench
from sample_text import made_up_stories

bpe = pytest.importorskip("bpe")

# Places where a careless cut would split a chunk: GPT-4's punctuation takes the new
# lines after it (".\n"), whitespace runs hold new lines, contractions, \r\n, digits.
TRICKY = ("Once upon a time.\nThe end.\n\nHe said: 'hi'\r\nit's 12345 o'clock  \n  x = f(1, 2)\n"
          "\tdef g():\n        return 3\n\n\nZoé, 東京 and 🙂.\nA\nb\n\n")


def chunks(text: str, pattern: str) -> list[bytes]:
    return bpe.pretokenize(text.encode("utf-8"), pattern)


@pytest.mark.parametrize("pattern", ["default", "gpt2", "gpt4"])
@pytest.mark.parametrize("size", [5, 40, 300])
def test_pieces_hold_the_chunks_of_the_whole_text(pattern, size):
    text = TRICKY * 3 + made_up_stories(3000) + bpe_bench.generated_words(2000, seed=1)
    parts = bpe_bench.pieces(text, size)
    assert "".join(parts) == text
    assert len(parts) > 5  # it did cut
    assert [c for part in parts for c in chunks(part, pattern)] == chunks(text, pattern)


@pytest.mark.parametrize("pattern", ["default", "gpt2", "gpt4"])
def test_cut_to_is_a_prefix_that_ends_between_chunks(pattern):
    text = TRICKY * 20
    for size in (30, 100, 333):
        head = bpe_bench.cut_to(text, size)
        assert text.startswith(head) and 0 < len(head.encode("utf-8")) <= size
        assert chunks(head, pattern) == chunks(text, pattern)[:len(chunks(head, pattern))]


def test_a_text_without_a_safe_place_is_not_cut():
    assert bpe_bench.last_safe_cut("one 2 three.\n") == 0  # nothing after the new line yet
    assert bpe_bench.last_safe_cut("said:\n\nOnce") == 0
    assert bpe_bench.last_safe_cut("Once upon") == len("Once")
    assert bpe_bench.pieces("x1 " * 30, 20) == ["x1 " * 30]


def test_generated_words_are_the_same_for_a_seed_and_mostly_new():
    a = bpe_bench.generated_words(20_000, seed=3)
    assert a == bpe_bench.generated_words(20_000, seed=3)
    assert a != bpe_bench.generated_words(20_000, seed=4)
    words = a.split()
    assert len(set(words)) > 0.5 * len(words)
