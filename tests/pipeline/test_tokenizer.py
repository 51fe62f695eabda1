"""The pipeline's tokenizers: BPE (the library's class) and the word-level baseline behind
one interface: round trips, unknown words, special tokens, bad input.

Everything is made up here (no network, no data folder): the BPE tokenizer is trained
from a small invented text, and the BPE tests skip when the module is not built. The
library's own tests are in test_encoding.py and the files beside it.
"""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenizer import (END_OF_TEXT, PAD, UNKNOWN, BPETokenizer, Tokenizer, WordTokenizer, kind,
                       tokenizer_from_state, unknown_id)

ROOT = Path(__file__).resolve().parents[2]
STORIES = [
    "Once upon a time, there was a little cat named Tom. Tom liked to play in the sun.",
    'One day, Tom saw a big dog. "Hello!" said Tom. The dog was happy and they played.',
    "Lily had a red ball. She didn't want to share it, but her mom said: \"Share it, Lily.\"",
    "Le café était fermé. Ils ont mangé une crêpe à la fête.",
    "日本の猫は魚が好きです。猫は毎日魚を食べます。",
    "The sun was warm.\n\nThe end.",
]
TEXT = (END_OF_TEXT.join(STORIES) + END_OF_TEXT) * 20


@pytest.fixture(scope="module")
def bpe_tok():
    pytest.importorskip("bpe._core")
    return BPETokenizer.train(STORIES * 20, vocab_size=256 + 300 + 2, special_tokens=[PAD, END_OF_TEXT])


@pytest.fixture(scope="module")
def merges(bpe_tok):
    return list(bpe_tok.merges)  # as a list, to compare with the reference's


@pytest.fixture(scope="module")
def word_tok():
    return WordTokenizer.build(TEXT)


# --- BPE: round trips, names, characters split across tokens


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_bpe_round_trips_any_text(bpe_tok, text):
    assert bpe_tok.decode(bpe_tok.encode_ordinary(text)) == text
    # With specials allowed, a marker is one token, and decodes to its text.
    assert bpe_tok.decode(bpe_tok.encode(text, allowed_special="all")) == text


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(["a", " ", "é", "日", "\n", "🐱", END_OF_TEXT, PAD, "<|", "|>", "Tom"]), max_size=30))
def test_bpe_round_trips_text_full_of_markers(bpe_tok, parts):
    text = "".join(parts)
    assert bpe_tok.decode(bpe_tok.encode_ordinary(text)) == text
    ids = bpe_tok.encode(text, allowed_special="all")
    assert bpe_tok.decode(ids) == text
    assert ids.count(bpe_tok.eot_token) == parts.count(END_OF_TEXT)
    assert bpe_tok.encode_array(text, allowed_special="all").tolist() == ids


def test_bpe_round_trips_tricky_text(bpe_tok):
    text = "  Tom  said:\t\"hi\"\r\n\n\nA 🐱 and a 🐶, naïve café, 日本語!\x00\x7f"
    assert bpe_tok.decode(bpe_tok.encode(text)) == text


def test_unseen_name_is_several_bpe_tokens_but_unknown_to_words(bpe_tok, word_tok):
    ids = bpe_tok.encode("Once upon a time, Zorblax")
    name = bpe_tok.encode(" Zorblax")
    assert len(name) >= 3
    assert bpe_tok.decode(name) == " Zorblax"
    assert bpe_tok.decode(ids) == "Once upon a time, Zorblax"

    words = word_tok.encode("Once upon a time, Zorblax")
    assert words[-1] == word_tok.unknown
    assert word_tok.unknown not in words[:-1]
    assert word_tok.decode(words) == f"Once upon a time, {UNKNOWN}"


def test_token_ending_mid_character_prints_replacement_but_decodes_exactly(bpe_tok):
    text = "猫は魚が好き"
    ids = bpe_tok.encode(text)
    broken = [i for i in ids if not _is_utf8(bpe_tok.decode_single_token_bytes(i))]
    assert broken, "expected a token that ends in the middle of a character"
    for i in broken:
        assert "\ufffd" in bpe_tok.id_to_token(i)
    assert bpe_tok.decode(ids) == text
    # A single byte of a multi-byte character is such a token in any vocabulary.
    assert bpe_tok.id_to_token("é".encode()[0]) == "\ufffd"
    assert bpe_tok.id_to_token(ord("a")) == "a"
    assert bpe_tok.decode(["é".encode()[0], ord("a")]) == "\ufffda"


def _is_utf8(b: bytes) -> bool:
    try:
        b.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


def test_bpe_matches_the_reference_encoding(bpe_tok, merges):
    import bpe_reference

    text = STORIES[1] + " Zorblax 日本"
    assert bpe_tok.encode(text) == bpe_reference.encode(text.encode(), merges)
    # Trained story by story, as the reference trains on the same stories.
    texts = [s.encode() for s in STORIES * 20]
    assert merges == bpe_reference.train_on_texts(texts, 300, special_tokens=[PAD.encode(), END_OF_TEXT.encode()])


def test_bpe_vocabulary_layout(bpe_tok, merges):
    assert len(bpe_tok) == bpe_tok.n_vocab == 256 + len(merges) + 2
    assert (bpe_tok.token_to_id(PAD), bpe_tok.eot_token) == (256 + len(merges), 257 + len(merges))
    assert bpe_tok.id_to_token(256 + len(merges)) == PAD
    assert bpe_tok.id_to_token(bpe_tok.eot_token) == END_OF_TEXT
    assert unknown_id(bpe_tok) is None and kind(bpe_tok) == "bpe"
    assert isinstance(bpe_tok, Tokenizer)


# --- Special tokens: tiktoken's conventions, for both tokenizers


def test_special_token_text_is_refused_unless_allowed(bpe_tok, word_tok):
    # The old default turned "<|endoftext|>" typed by anyone into the control token;
    # now, as in tiktoken, it is an error unless the caller allows it.
    for tok in (bpe_tok, word_tok):
        with pytest.raises(ValueError, match="disallowed"):
            tok.encode("a<|endoftext|>b")
    ids = bpe_tok.encode("a<|endoftext|>b", allowed_special="all")
    assert ids == bpe_tok.encode("a") + [bpe_tok.eot_token] + bpe_tok.encode("b")
    plain = bpe_tok.encode_ordinary("a<|endoftext|>b")
    assert plain == bpe_tok.encode("a<|endoftext|>b", disallowed_special=())
    assert bpe_tok.eot_token not in plain and len(plain) > 3
    assert bpe_tok.decode(plain) == "a<|endoftext|>b"
    assert max(plain) < 256 + len(bpe_tok.merges)

    pad = bpe_tok.token_to_id(PAD)
    assert bpe_tok.encode("x<|pad|>", allowed_special={PAD}) == bpe_tok.encode("x") + [pad]
    with pytest.raises(ValueError, match="disallowed"):  # allowing one disallows the others
        bpe_tok.encode("<|endoftext|>", allowed_special={PAD})
    assert bpe_tok.eot_token not in bpe_tok.encode("<|endoftext|>", allowed_special={PAD}, disallowed_special=())

    assert word_tok.encode("a<|endoftext|>b", allowed_special="all") == [word_tok.ids["a"], word_tok.eot_token,
                                                                          word_tok.unknown]
    assert word_tok.eot_token not in word_tok.encode_ordinary("a<|endoftext|>b")


def test_special_ids_never_appear_inside_merges(bpe_tok, merges):
    pad = bpe_tok.token_to_id(PAD)
    for pair in merges:
        assert pad not in pair and bpe_tok.eot_token not in pair
    # Even text that is nothing but markers, learned from as plain text, only gives byte merges.
    import bpe

    marker_merges = bpe.train((END_OF_TEXT + PAD).encode() * 50, 40)
    assert marker_merges and all(max(pair) < 256 + len(marker_merges) for pair in marker_merges)
    # And the specials never go through the encoder: a marker is its id, not merged bytes.
    assert bpe_tok.encode(END_OF_TEXT * 3, allowed_special="all") == [bpe_tok.eot_token] * 3


def test_decode_gives_special_tokens_as_their_text(bpe_tok, word_tok):
    # As tiktoken does (it used to drop them unless asked, with keep_special=True).
    for tok in (bpe_tok, word_tok):
        ids = tok.encode("The end.<|endoftext|><|pad|>", allowed_special="all")
        assert tok.decode(ids).replace(" ", "") == "Theend.<|endoftext|><|pad|>"


def test_bad_allowed_special_is_refused(bpe_tok, word_tok):
    for tok in (bpe_tok, word_tok):
        with pytest.raises(ValueError, match="allowed_special"):
            tok.encode("a", allowed_special="some")
        with pytest.raises(ValueError, match="not (a )?special tokens?"):
            tok.encode("a", allowed_special={"<|unk|>"})


# --- Bad input


@pytest.mark.parametrize("which", ["bpe", "word"])
def test_decode_outside_the_vocabulary_names_the_id_and_size(request, which):
    tok = request.getfixturevalue(f"{which}_tok")
    n = len(tok)
    for bad in (n, n + 1000, -1):
        with pytest.raises(ValueError, match=rf"{bad}\b.*\b{n}\b"):
            tok.decode([0, bad])
        with pytest.raises(ValueError, match=rf"{bad}\b.*\b{n}\b"):
            tok.id_to_token(bad)
    with pytest.raises(TypeError):
        tok.decode([1.5])
    with pytest.raises(TypeError):
        tok.encode(b"bytes, not text")
    assert tok.decode(np.array([0, n - 1])) == tok.decode([0, n - 1])


def test_bad_merges_are_refused():
    pytest.importorskip("bpe._core")
    with pytest.raises(ValueError, match="merge 0"):
        BPETokenizer([(300, 1)])
    with pytest.raises(TypeError, match="merge 1"):
        BPETokenizer([(1, 2), (1.5, 2)])
    with pytest.raises(TypeError, match="merge 0"):
        BPETokenizer([(1, 2, 3)])
    with pytest.raises(TypeError):
        BPETokenizer("1 2")
    assert len(BPETokenizer(np.array([[97, 98]]))) == 257


def test_lone_surrogate_is_a_clear_error(bpe_tok):
    with pytest.raises(ValueError, match="UTF-8"):
        bpe_tok.encode("a\ud800b")


# --- Arrays, state


def test_encode_array_matches_encode(bpe_tok, word_tok):
    for tok in (bpe_tok, word_tok):
        for text in (TEXT[:5000], "no markers at all, just a cat", "", END_OF_TEXT):
            array = tok.encode_array(text, allowed_special="all")
            assert array.dtype == np.uint16
            assert array.tolist() == tok.encode(text, allowed_special="all")
        assert tok.encode_array(TEXT[:2000], allowed_special="all", threads=2).tolist() == \
            tok.encode(TEXT[:2000], allowed_special="all")


def test_encode_array_is_uint32_past_65536_tokens():
    pytest.importorskip("bpe._core")
    # 256 + 65,280 merges is 65,536 ids, which still fits uint16; the specials then do not.
    merges = [(a, b) for a in range(256) for b in range(256)][:65_280]
    tok = BPETokenizer(merges, special_tokens=[PAD, END_OF_TEXT])
    assert len(tok) == 65_538
    ids = tok.encode_array("aa" + END_OF_TEXT, allowed_special="all")
    assert ids.dtype == np.uint32
    assert ids.tolist() == [256 + 97 * 256 + 97, tok.eot_token]
    assert tok.encode_array("aa").dtype == np.uint32


def test_state_round_trips_through_plain_data(bpe_tok, word_tok):
    for tok in (bpe_tok, word_tok):
        state = tok.state()
        assert json.loads(json.dumps(state)) == state  # nothing but plain data
        again = tokenizer_from_state(state)
        assert type(again) is type(tok)
        assert again.encode(TEXT[:3000], allowed_special="all") == tok.encode(TEXT[:3000], allowed_special="all")
    assert bpe_tok.state()["pattern"] == "default"
    with pytest.raises(ValueError, match="word vocabulary .* or a BPE tokenizer"):
        tokenizer_from_state({"kind": "sentencepiece"})
    with pytest.raises(TypeError):
        tokenizer_from_state([1, 2])


def test_checkpoint_states_from_before_the_library_still_load(bpe_tok):
    # What a checkpoint of the earlier BPETokenizer held: merges and pattern, with
    # <|pad|> and <|endoftext|> implied after the merges.
    old = {"kind": "bpe", "merges": [[a, b] for a, b in bpe_tok.merges], "pattern": "default"}
    again = tokenizer_from_state(old)
    assert again == bpe_tok
    assert again.encode(TEXT[:2000], allowed_special="all") == bpe_tok.encode(TEXT[:2000], allowed_special="all")


# --- The word-level tokenizer


def test_word_vocabulary_is_the_most_frequent_tokens_plus_three(word_tok):
    text = " ".join(f"w{k} " * (k + 1) for k in range(20))  # w19 is the most frequent
    tok = WordTokenizer.build(text, size=5)
    assert tok.words == ["w19", "w18", "w17", "w16", "w15"]
    assert len(tok) == 8
    assert (tok.pad_token, tok.eot_token, tok.unknown) == (5, 6, 7)
    assert [tok.id_to_token(i) for i in (5, 6, 7)] == [PAD, END_OF_TEXT, UNKNOWN]
    # End of text separates stories; it is not a word of them.
    assert "endoftext" not in word_tok.ids and "<|" not in word_tok.ids
    assert kind(word_tok) == "word" and unknown_id(word_tok) == word_tok.unknown
    assert isinstance(word_tok, Tokenizer)


def test_word_default_size_is_10003_tokens():
    text = " ".join(f"w{k}" for k in range(12_000))
    assert len(WordTokenizer.build(text)) == 10_003


def test_word_decode_puts_spaces_back_by_rules(word_tok):
    text = 'One day, Tom saw a big dog. "Hello!" said Tom. She didn\'t want to share it.'
    assert word_tok.decode(word_tok.encode(text)) == text
    # New lines and double spaces are its known flaw: they do not come back.
    assert word_tok.decode(word_tok.encode("The sun was warm.\n\nThe  end.")) == "The sun was warm. The end."


def test_word_decode_only_appends_as_ids_are_added(word_tok):
    ids = word_tok.encode(STORIES[1] + STORIES[2])
    texts = [word_tok.decode(ids[:n]) for n in range(len(ids) + 1)]
    for shorter, longer in zip(texts, texts[1:]):
        assert longer.startswith(shorter)


def test_word_vocabulary_file_round_trip(word_tok, tmp_path):
    path = tmp_path / "vocab.json"
    word_tok.save(path)
    assert WordTokenizer.load(path).words == word_tok.words
    path.write_text("[1, 2]")
    with pytest.raises(ValueError, match="vocab.json"):
        WordTokenizer.load(path)
    path.write_text("{not json")
    with pytest.raises(ValueError, match="vocab.json"):
        WordTokenizer.load(path)


def test_bad_word_lists_are_refused():
    with pytest.raises(ValueError, match="repeat"):
        WordTokenizer(["a", "b", "a"])
    with pytest.raises(ValueError, match="special"):
        WordTokenizer(["a", END_OF_TEXT])
    with pytest.raises(TypeError):
        WordTokenizer("abc")
    with pytest.raises(ValueError):
        WordTokenizer.build("a b", size=0)


def test_word_level_path_works_where_the_core_is_not_built(tmp_path):
    # The Python files alone, without the compiled module: the word-level tokenizer
    # works, and the first BPE use names the build command.
    for name in ["tokenizer.py", *(str(p.relative_to(ROOT)) for p in (ROOT / "bpe").glob("*.py"))]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes((ROOT / name).read_bytes())
    code = ("from tokenizer import WordTokenizer, BPETokenizer\n"
            "assert len(WordTokenizer.build('a b c')) == 6\n"
            "try:\n    BPETokenizer([])\nexcept ImportError as e:\n    print(e)\n")
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "python setup.py build_ext --inplace" in result.stdout


def test_split_pattern_is_kept_in_the_state(merges):
    tok = BPETokenizer([], pattern="gpt2")
    assert tok.state()["pattern"] == "gpt2"
    assert tokenizer_from_state(tok.state()).pattern == "gpt2"
    assert tok.decode(tok.encode("Tom's 123 cats")) == "Tom's 123 cats"
    with pytest.raises(ValueError, match="unknown split pattern"):
        BPETokenizer([], pattern="gpt5")
