"""Our tokenizer against the libraries people move tokenizers between: GPT-4's and
GPT-2's vocabularies give exactly their ids, and merges we train, exported, give our
ids in tiktoken and in Hugging Face tokenizers.

Each library is optional (pip install -r requirements-bench.txt); a test that needs
one that is missing, or GPT-2's files (from ../shared/data/cs336, which a user's
clone does not have), is skipped.
"""
import glob
import os
import sys
from pathlib import Path

import pytest

import bpe
from bpe import BPETokenizer, formats
from sample_text import sample_bytes
from vocabularies import CS336, cl100k_path, gpt2_files

END_OF_TEXT = "<|endoftext|>"
TRICKY = ("Café, naïve, Zoë; 日本語のテキスト。 emoji 🐱 👩‍👩‍👧!\n\n\tTabs  and   spaces \r\n"
          "HOW'S it ſ'S 'LL \u00a0x\u2028y  1234567 ٣٤٥ ")


def mixed_text(size: int) -> str:
    """Stories, Python source, and text with accents, Japanese, emoji and odd spaces."""
    parts = [sample_bytes(1_000_000).decode("utf-8", errors="ignore")]
    for path in sorted(glob.glob(os.path.join(os.path.dirname(os.__file__), "*.py")))[:80]:
        parts.append(Path(path).read_text(encoding="utf-8", errors="replace"))
    parts.append(TRICKY * 3000)
    text = "".join(parts)
    return (text * (size // len(text) + 1))[:size]


@pytest.fixture(scope="module")
def gpt4():
    return BPETokenizer.from_tiktoken(cl100k_path())


def test_gpt4_ids_equal_tiktoken_on_5mb(gpt4):
    tiktoken = pytest.importorskip("tiktoken")
    reference = tiktoken.Encoding("cl100k", pat_str=formats.TIKTOKEN_PATTERNS["gpt4"],
                                  mergeable_ranks=formats.read_tiktoken(cl100k_path()),
                                  special_tokens=formats.CL100K_SPECIAL_IDS)
    text = mixed_text(5_200_000)
    assert len(text.encode("utf-8")) >= 5_000_000
    ids = gpt4.encode_ordinary(text)
    assert ids == reference.encode_ordinary(text)
    assert gpt4.encode_array(text, disallowed_special=(), threads=2).tolist() == ids
    assert gpt4.decode(ids) == text


def test_gpt4_specials_and_ends_of_text(gpt4):
    tiktoken = pytest.importorskip("tiktoken")
    # tiktoken's own cl100k_base pattern (with \s++$ for whitespace at the very end).
    cl100k = (r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
              r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s""")
    reference = tiktoken.Encoding("cl100k", pat_str=cl100k, mergeable_ranks=formats.read_tiktoken(cl100k_path()),
                                  special_tokens=formats.CL100K_SPECIAL_IDS)
    for text in ["a\n  ", "end \n\t \n", "x<|endoftext|>y<|fim_prefix|>", TRICKY, "  \r\n  "]:
        assert gpt4.encode(text, allowed_special="all") == reference.encode(text, allowed_special="all"), text
        assert gpt4.encode(text, allowed_special={"<|fim_prefix|>"}, disallowed_special=()) == \
            reference.encode(text, allowed_special={"<|fim_prefix|>"}, disallowed_special=()), text
    with pytest.raises(ValueError, match="disallowed"):
        reference.encode("x<|endoftext|>")
    with pytest.raises(ValueError, match="disallowed"):
        gpt4.encode("x<|endoftext|>")
    assert gpt4.eot_token == 100257 and gpt4.token_to_id("<|pad|>") is None
    assert gpt4.n_vocab == reference.n_vocab == 100277
    with pytest.raises(ValueError, match="100256 is not a token"):
        gpt4.decode([100256])


def test_gpt2_ids_equal_huggingface():
    tokenizers = pytest.importorskip("tokenizers")
    vocab, merges = gpt2_files()
    gpt2 = BPETokenizer.from_gpt2(vocab, merges)
    reference = tokenizers.Tokenizer(tokenizers.models.BPE.from_file(str(vocab), str(merges)))
    reference.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    texts = [p.read_text(encoding="utf-8") for p in sorted(CS336.glob("*.txt")) if "merges" not in p.name]
    texts += [(CS336 / "corpus.en").read_text(encoding="utf-8"), TRICKY]
    for text in texts:
        ids = gpt2.encode_ordinary(text)
        assert ids == reference.encode(text).ids
        assert gpt2.decode(ids) == text
        # Each token's bytes, looked up by its id (GPT-2's "!" is id 0, and came back
        # as b"\x00", our byte 0, when looked up by our number).
        assert b"".join(gpt2.decode_single_token_bytes(i) for i in ids) == text.encode("utf-8")
    assert gpt2.decode_single_token_bytes(gpt2.encode("!")[0]) == b"!"
    assert gpt2.eot_token == 50256 and len(gpt2) == 50257
    assert gpt2.encode("a<|endoftext|>", allowed_special="all") == gpt2.encode("a") + [50256]


def test_gpt2_saved_and_loaded_keeps_its_ids(tmp_path):
    vocab, merges = gpt2_files()
    gpt2 = BPETokenizer.from_gpt2(vocab, merges)
    # The case: this was [17250, 0, 50256], and [17250, 33, 50257] after save and load.
    assert gpt2.encode("Hi!<|endoftext|>", allowed_special="all") == [17250, 0, 50256]
    loaded = BPETokenizer.load(gpt2.save(tmp_path / "gpt2.bpe"))
    assert loaded.encode("Hi!<|endoftext|>", allowed_special="all") == [17250, 0, 50256]
    assert loaded.pattern == "gpt2"


def merges_for(pattern):
    text = sample_bytes(300_000).decode("utf-8", errors="ignore") + TRICKY * 20
    return bpe.train(text.encode("utf-8"), 1000, pattern=pattern), sample_bytes(50_000, offset=400_000).decode(
        "utf-8", errors="ignore") + TRICKY


@pytest.mark.parametrize("pattern", ["default", "gpt2", "gpt4"])
def test_exported_merges_give_our_ids_in_tiktoken(pattern, tmp_path):
    tiktoken = pytest.importorskip("tiktoken")
    from tiktoken.load import load_tiktoken_bpe

    merges, held_out = merges_for(pattern)
    ours = BPETokenizer(merges, pattern=pattern, special_tokens=["<|pad|>", END_OF_TEXT])
    ours.save_tiktoken(tmp_path / "ours.tiktoken")
    theirs = tiktoken.Encoding("ours", pat_str=formats.TIKTOKEN_PATTERNS[pattern],
                               mergeable_ranks=load_tiktoken_bpe(str(tmp_path / "ours.tiktoken")),
                               special_tokens=ours.special_ids)
    text = held_out + END_OF_TEXT
    assert theirs.encode(text, allowed_special="all") == ours.encode(text, allowed_special="all")
    # And back: merges recovered from the ranks file encode the same.
    again = BPETokenizer.from_tiktoken(tmp_path / "ours.tiktoken", pattern=pattern, special_ids=ours.special_ids)
    assert again == ours


@pytest.mark.parametrize("pattern", ["default", "gpt2", "gpt4"])
def test_exported_merges_give_our_ids_in_huggingface(pattern, tmp_path):
    tokenizers = pytest.importorskip("tokenizers")
    merges, held_out = merges_for(pattern)
    ours = BPETokenizer(merges, pattern=pattern, special_tokens=["<|pad|>", END_OF_TEXT])
    ours.save_huggingface(tmp_path / "tokenizer.json")
    theirs = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    ids = theirs.encode(held_out + END_OF_TEXT).ids
    assert ids == ours.encode(held_out + END_OF_TEXT, allowed_special="all")
    assert theirs.decode(ids, skip_special_tokens=False) == held_out + END_OF_TEXT
    assert BPETokenizer.from_huggingface(tmp_path / "tokenizer.json") == ours


@pytest.mark.parametrize("case", ["gap", "swapped", "gpt4"])
def test_special_ids_survive_huggingface(case, tmp_path):
    # Hugging Face numbers an added token after the vocabulary, whatever id the file
    # gives it, unless the vocabulary has it: {"<|endoftext|>": 300} on 257 tokens came
    # back as 257, {eot: 258, pad: 257} swapped, and GPT-4's <|endofprompt|> was 100260.
    tokenizers = pytest.importorskip("tokenizers")
    if case == "gpt4":
        ours = BPETokenizer.from_tiktoken(cl100k_path())
    else:
        specials, ids = ([END_OF_TEXT], [300]) if case == "gap" else ([END_OF_TEXT, "<|pad|>"], [258, 257])
        ours = BPETokenizer([], special_tokens=specials, token_ids=list(range(256)) + ids)
    ours.save_huggingface(tmp_path / "tokenizer.json")
    theirs = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    for token, i in ours.special_ids.items():
        assert theirs.token_to_id(token) == i
        assert theirs.encode(f"a{token}b").ids == ours.encode(f"a{token}b", allowed_special="all")
    assert BPETokenizer.from_huggingface(tmp_path / "tokenizer.json") == ours


def test_merges_that_encoding_never_reaches_are_refused_at_export(tmp_path):
    # "ab" merges before "bc", so "abc" encodes as [ab, c] and merge 2, (a, bc), is never
    # used; tiktoken, which finds merges by bytes, would use it: [258].
    ours = BPETokenizer([(97, 98), (98, 99), (97, 257)])
    assert ours.encode("abc") == [256, 99]
    with pytest.raises(ValueError, match="merge 2 is \\(97, 257\\), but encoding never reaches it"):
        ours.save_tiktoken(tmp_path / "ours.tiktoken")
    assert not (tmp_path / "ours.tiktoken").exists()
    # Hugging Face keeps merges as pairs, so it keeps our ids.
    tokenizers = pytest.importorskip("tokenizers")
    ours.save_huggingface(tmp_path / "tokenizer.json")
    assert tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json")).encode("abc").ids == [256, 99]


def test_imported_tokenizer_survives_a_checkpoint_state(gpt4):
    again = BPETokenizer.from_state(gpt4.state())
    assert again == gpt4 and again.pattern == "gpt4" and again.special_ids == gpt4.special_ids
    text = TRICKY + END_OF_TEXT
    assert again.encode(text, allowed_special="all") == gpt4.encode(text, allowed_special="all")
    # And the state a checkpoint of the earlier class held: specials as {token: id}, and
    # token_ids for the bytes and merges only.
    state = gpt4.state()
    old = {"kind": "bpe", "merges": state["merges"], "pattern": "gpt4", "special_tokens": gpt4.special_ids,
           "token_ids": state["token_ids"][:-len(gpt4.special_tokens)]}
    assert BPETokenizer.from_state(old) == gpt4


def test_bad_files(tmp_path):
    bad = tmp_path / "bad.tiktoken"
    bad.write_text("IQ== 0\nnot-base64!! 1\n")
    with pytest.raises(ValueError, match="line 2"):
        formats.read_tiktoken(bad)
    bad.write_text("IQ== 0\n")
    with pytest.raises(ValueError, match="255 bytes have none"):
        formats.load_tiktoken(bad)
    # A token that is not two lower-ranked tokens joined.
    ranks = {bytes([b]): b for b in range(256)}
    ranks[b"abc"] = 256
    with pytest.raises(ValueError, match="rank 256"):
        formats.merges_from_ranks(ranks)
    vocab, merges = tmp_path / "vocab.json", tmp_path / "merges.txt"
    alphabet = formats.byte_alphabet()
    vocab.write_text('{"' + '": 0, "'.join(alphabet[b].replace("\\", "\\\\").replace('"', '\\"') for b in range(256)) + '": 0}')
    merges.write_text("#version: 0.2\na b c\n")
    with pytest.raises(ValueError):
        formats.load_gpt2(vocab, merges)


def test_tiktoken_refuses_two_tokens_with_the_same_bytes():
    # "ab" + "c" and "a" + "bc" both make "abc": tiktoken cannot hold both.
    merges = [(97, 98), (98, 99), (256, 99), (97, 257)]
    with pytest.raises(ValueError, match="both b'abc'"):
        formats.tiktoken_ranks(merges)
