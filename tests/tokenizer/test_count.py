"""BPETokenizer.count: the number of tokens encode would give, on every core, without
keeping the ids (what `bpe count` reports)."""
import pytest

from bpe import BPETokenizer
from sample_text import SPECIAL_CORNERS, made_up_stories

STORIES = made_up_stories(120_000, seed=3)


@pytest.mark.parametrize("pattern", ["default", "gpt4"])
def test_the_librarys_count_is_len_encode(pattern):
    tok = BPETokenizer.train(STORIES, vocab_size=500, pattern=pattern, special_tokens=["<|endoftext|>"])
    for text in ("", "a", SPECIAL_CORNERS, STORIES, SPECIAL_CORNERS * 200):
        for allowed, disallowed in (("all", "all"), ((), ())):
            expected = len(tok.encode(text, allowed_special=allowed, disallowed_special=disallowed))
            for threads in (0, 1, 3):
                assert tok.count(text, allowed_special=allowed, disallowed_special=disallowed,
                                 threads=threads) == expected
    with pytest.raises(ValueError, match="disallowed"):
        tok.count("x<|endoftext|>")
    with pytest.raises(TypeError, match="must be str"):
        tok.count(b"bytes")
