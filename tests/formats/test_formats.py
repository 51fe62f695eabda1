"""The tokenizer files of bpe/formats.py: the library's own file, which loads back to the
same ids for every kind of tokenizer, migration from earlier files and clear errors for
bad ones; tiktoken's ranks files (GPT-4's vocabulary gives exactly tiktoken's ids, merges
we train, exported, give ours in tiktoken, and a pathological ranks file loads quickly);
GPT-2's vocab.json and merges.txt; and saving, which leaves the umask alone.
(Hugging Face's tokenizer.json: test_huggingface.py.)

tiktoken is optional (pip install -r requirements-bench.txt); a test that needs it, or
GPT-2's files (from ../shared/data/cs336, which a user's clone does not have), is skipped.
"""
import base64
import glob
import json
import os
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import bpe
from bpe import BPETokenizer, _core, formats
from sample_text import SPLIT_CORNERS, TRICKY_TEXT, sample_bytes
from vocabularies import (END_OF_TEXT, SMALL_TEXT, alphabet_string, cl100k_path, gpt2_files,
                          merges_for, shuffled_numbering, small_gpt2_vocabulary, trained_with_two_specials)

ROOT = Path(__file__).resolve().parents[2]


# --- the library's own file: one file, the same ids back -------------------------------------

STORIES = sample_bytes(200_000).decode("utf-8", errors="ignore")
DOCUMENTS = [d for d in STORIES.split("\n") if d]

KINDS = ["default", "gpt2", "gpt4", "shuffled", "custom-specials", "gpt4-vocabulary"]


@pytest.fixture(scope="module", params=KINDS)
def tokenizer(request):
    kind = request.param
    if kind in ("default", "gpt2", "gpt4"):
        return BPETokenizer.train(DOCUMENTS, vocab_size=756, pattern=kind, special_tokens=["<|endoftext|>", "<|user|>"])
    if kind == "shuffled":  # GPT-2's files number the bytes their own way
        base = BPETokenizer.train(DOCUMENTS, vocab_size=600, pattern="gpt2")
        return BPETokenizer(base.merges, pattern="gpt2", special_tokens=["<|endoftext|>", "<|user|>"],
                            token_ids=shuffled_numbering(base, [50256, 70000]))
    if kind == "custom-specials":  # specials numbered after the merges: <|endoftext|> 756, <|user|> 757
        return BPETokenizer.train(DOCUMENTS, vocab_size=758, special_tokens=["<|endoftext|>", "<|user|>"])
    return BPETokenizer.from_tiktoken(cl100k_path(), special_ids={**bpe.formats.CL100K_SPECIAL_IDS, "<|user|>": 100300})


def test_save_and_load_give_identical_ids_on_hostile_text(tokenizer, tmp_path):
    path = tokenizer.save(tmp_path / "tok.bpe")
    loaded = BPETokenizer.load(path)
    assert loaded == tokenizer
    assert (loaded.pattern, loaded.special_tokens, loaded.token_ids) == \
        (tokenizer.pattern, tokenizer.special_tokens, tokenizer.token_ids)
    for text in (SPLIT_CORNERS, STORIES[:20_000], SPLIT_CORNERS * 3):
        for allowed in ("all", set(), {"<|user|>"}):
            ids = tokenizer.encode(text, allowed_special=allowed, disallowed_special=())
            assert loaded.encode(text, allowed_special=allowed, disallowed_special=()) == ids
            assert loaded.decode(ids) == tokenizer.decode(ids) == text
    assert loaded.special_ids == tokenizer.special_ids
    assert loaded.n_vocab == tokenizer.n_vocab
    # The state a checkpoint embeds is the file's content.
    assert json.loads(path.read_text(encoding="utf-8")) == tokenizer.state()


def test_specials_after_the_merges_and_the_pattern_keep_their_ids_in_the_file(tmp_path):
    custom = BPETokenizer.train(DOCUMENTS, vocab_size=758, special_tokens=["<|endoftext|>", "<|user|>"])
    assert custom.special_ids == {"<|endoftext|>": 756, "<|user|>": 757}
    loaded = BPETokenizer.load(custom.save(tmp_path / "custom.bpe"))
    assert loaded.encode("Hi!<|endoftext|><|user|>", allowed_special="all")[-2:] == [756, 757]
    gpt4 = BPETokenizer.train(DOCUMENTS, vocab_size=300, pattern="gpt4")
    assert BPETokenizer.load(gpt4.save(tmp_path / "gpt4.bpe")).pattern == "gpt4"


def test_save_into_a_folder_writes_tokenizer_bpe(tmp_path):
    tok = BPETokenizer.train("hello hello world", vocab_size=260)
    folder = tmp_path / "some" / "dir"
    folder.mkdir(parents=True)
    assert tok.save(str(folder) + "/") == folder / "tokenizer.bpe"
    assert BPETokenizer.load(folder) == tok
    assert tok.save(tmp_path / "new" / "x.bpe").exists()  # missing folders are made


def test_the_file_is_readable_json_with_one_merge_per_line(tmp_path):
    tok = BPETokenizer.train(DOCUMENTS, vocab_size=300, special_tokens=["<|endoftext|>"])
    lines = tok.save(tmp_path / "t.bpe").read_text(encoding="utf-8").splitlines()
    assert lines[1] == '  "format": "bpe-tokenizer",' and lines[2] == '  "version": 1,'
    assert "  \"special_tokens\": [\"<|endoftext|>\"]," in lines
    a, b = tok.merges[0]
    assert f"    [{a}, {b}]," in lines


# --- the library's own file: errors that name the file and what is wrong -------------------

@pytest.fixture
def saved(tmp_path):
    tok = BPETokenizer.train(DOCUMENTS, vocab_size=300, special_tokens=["<|endoftext|>"])
    return tok, tok.save(tmp_path / "tok.bpe")


@pytest.mark.parametrize("edit, message", [
    (lambda text: text[: len(text) // 2], "not a readable tokenizer file.*truncated"),
    (lambda text: text.replace('"version": 1', '"version": 2'), "version 2 of the format, written by a newer bpe"),
    (lambda text: text.replace('"version": 1', '"version": "1"'), "version"),
    (lambda text: text.replace('"format": "bpe-tokenizer"', '"format": "other"'), "not a bpe-tokenizer"),
    (lambda text: text.replace('"pattern": "default"', '"pattern": "gpt5"'), "unknown split pattern 'gpt5'"),
    (lambda text: text.replace('"token_ids": null', '"token_ids": null, "extra": 1'), "unknown \\['extra'\\]"),
    (lambda text: text.replace('"token_ids": null,', ''), "missing \\['token_ids'\\]"),
    (lambda text: text.replace("    [", "    [9999, ", 1), "merge 0"),
    (lambda text: text.replace('"merges": [', '"merges": [\n    [104, 105],\n    [104, 105],', 1), "repeats merge"),
    (lambda text: text.replace('"special_tokens": ["<|endoftext|>"]', '"special_tokens": [1]'), "must be str"),
    (lambda text: text.replace('"token_ids": null', '"token_ids": [3000000000]'), "token_ids"),
])
def test_a_damaged_file_is_a_value_error_naming_it(saved, edit, message):
    tok, path = saved
    path.write_text(edit(path.read_text(encoding="utf-8")), encoding="utf-8")
    with pytest.raises(ValueError, match=message) as caught:
        BPETokenizer.load(path)
    assert str(path) in str(caught.value)


def test_a_huge_id_in_a_file_or_state_is_refused_without_allocating(saved, tmp_path):
    # Two such cases: a .tiktoken line "YWI= 2000000000" and a checkpoint state with
    # id 3e9 sized tables by the id (MemoryError, or tens of GB without a cap).
    lines = [f"{base64.b64encode(bytes([b])).decode()} {b}" for b in range(256)] + ["YWI= 2000000000"]
    (tmp_path / "huge.tiktoken").write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match="huge.tiktoken.*between 0 and 16777215"):
        BPETokenizer.from_tiktoken(tmp_path / "huge.tiktoken")
    tok, _ = saved
    state = tok.state()
    state["token_ids"] = list(range(tok.n_vocab))
    state["token_ids"][-1] = 3_000_000_000
    with pytest.raises(ValueError, match="between 0 and 16777215"):
        BPETokenizer.from_state(state)


def test_binary_and_missing_files(tmp_path):
    (tmp_path / "x.bin").write_bytes(b"\x80\x81\xff")
    with pytest.raises(ValueError, match="not UTF-8"):
        BPETokenizer.load(tmp_path / "x.bin")
    with pytest.raises(FileNotFoundError, match="missing.bpe"):
        BPETokenizer.load(tmp_path / "missing.bpe")


def test_old_merges_txt_loads_given_its_pattern(tmp_path):
    tok = BPETokenizer.train(DOCUMENTS, vocab_size=400, special_tokens=["<|pad|>", "<|endoftext|>"])
    old = tmp_path / "merges.txt"
    old.write_text("".join(f"{a} {b}\n" for a, b in tok.merges), encoding="ascii")  # as save() wrote it before
    with pytest.raises(ValueError, match="pattern='default'.*python data.py --bpe"):
        BPETokenizer.load(old)
    assert BPETokenizer.load(old, pattern="default") == tok
    old.write_text("97 98\n97 x\n")
    with pytest.raises(ValueError, match="line 2"):
        BPETokenizer.load(old, pattern="default")
    # Non-ASCII bytes were "'ascii' codec can't decode ...", without the file's name.
    for data, message in [("97 98\n\u00e9 1\n".encode(), "merges.txt, line 2"), (b"97 98\n\xff 1\n", "merges.txt is not")]:
        old.write_bytes(data)
        with pytest.raises(ValueError, match=message):
            BPETokenizer.load(old, pattern="default")


# --- files that are empty or truncated say so ----------------------------------------------

@pytest.fixture(scope="module")
def trained():
    return trained_with_two_specials()


def test_an_empty_file_has_its_own_message(tmp_path):
    for content in ["", "\n  \n"]:
        (tmp_path / "empty.bpe").write_text(content)
        for pattern in [None, "default"]:
            # Was "a merges.txt from an earlier version ...: load it with pattern='default'",
            # and with it, a tokenizer of 0 merges.
            with pytest.raises(ValueError, match="empty.bpe is empty") as caught:
                BPETokenizer.load(tmp_path / "empty.bpe", pattern=pattern)
            assert "merges.txt" not in str(caught.value)


def test_a_truncated_file_says_it_is_truncated(trained, tmp_path):
    text = trained.save(tmp_path / "tok.bpe").read_text()
    for cut in [1, len(text) // 3, len(text) - 3]:
        (tmp_path / "tok.bpe").write_text(text[:cut])
        with pytest.raises(ValueError, match=r"tok.bpe is not a readable tokenizer file: it is truncated \(it ends at byte \d+, before its JSON"):
            BPETokenizer.load(tmp_path / "tok.bpe")


# --- tiktoken's files: GPT-4's vocabulary gives tiktoken's ids, our merges exported give ours ---


def mixed_text(size: int) -> str:
    """Stories, Python source, and text with accents, Japanese, emoji and odd spaces."""
    parts = [sample_bytes(1_000_000).decode("utf-8", errors="ignore")]
    for path in sorted(glob.glob(os.path.join(os.path.dirname(os.__file__), "*.py")))[:80]:
        parts.append(Path(path).read_text(encoding="utf-8", errors="replace"))
    parts.append(TRICKY_TEXT * 3000)
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
    for text in ["a\n  ", "end \n\t \n", "x<|endoftext|>y<|fim_prefix|>", TRICKY_TEXT, "  \r\n  "]:
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


def test_gpt2_saved_and_loaded_keeps_its_ids(tmp_path):
    vocab, merges = gpt2_files()
    gpt2 = BPETokenizer.from_gpt2(vocab, merges)
    # Once this was [17250, 0, 50256], and [17250, 33, 50257] after save and load.
    assert gpt2.encode("Hi!<|endoftext|>", allowed_special="all") == [17250, 0, 50256]
    loaded = BPETokenizer.load(gpt2.save(tmp_path / "gpt2.bpe"))
    assert loaded.encode("Hi!<|endoftext|>", allowed_special="all") == [17250, 0, 50256]
    assert loaded.pattern == "gpt2"


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
    text = TRICKY_TEXT + END_OF_TEXT
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


# --- vocab.json + merges.txt: only what the files name as special is special -------------

@pytest.fixture(scope="module")
def small():
    return small_gpt2_vocabulary()


def write_gpt2(folder: Path, vocab: dict, pairs) -> tuple:
    folder.mkdir(exist_ok=True)
    (folder / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    (folder / "merges.txt").write_text("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in pairs), encoding="utf-8")
    return folder / "vocab.json", folder / "merges.txt"


def test_a_truncated_merges_txt_is_refused(small, tmp_path):
    tok, vocab, pairs = small
    assert BPETokenizer.from_gpt2(*write_gpt2(tmp_path / "whole", vocab, pairs)) == tok
    vocab_path, merges_path = write_gpt2(tmp_path / "cut", vocab, pairs[:10])
    lost = len(vocab) - 256 - 10 - 1  # all but the bytes, the 10 merges kept and <|endoftext|>
    # Before: the tokens that no kept merge makes became special tokens.
    with pytest.raises(ValueError, match=f"{lost} tokens of the vocabulary that no merge makes.*truncated") as e:
        BPETokenizer.from_gpt2(vocab_path, merges_path)
    assert repr(alphabet_string(formats.token_bytes(tok.merges)[256 + 10])) in str(e.value)


def test_gpt2s_own_merges_cut_to_1000_lines_are_refused(tmp_path):
    vocab, merges = gpt2_files()
    cut = tmp_path / "merges.txt"
    with open(merges, encoding="utf-8") as f:
        cut.write_text("".join(line for _, line in zip(range(1000), f)), encoding="utf-8")
    with pytest.raises(ValueError, match="truncated merges.txt"):
        BPETokenizer.from_gpt2(vocab, cut)
    assert BPETokenizer.from_gpt2(vocab, merges).encode("hello world") == [31373, 995]


def test_specials_of_a_gpt2_vocabulary_are_named_by_the_caller(small, tmp_path):
    tok, vocab, pairs = small
    vocab = {**vocab, "<|user|>": len(vocab)}
    files = write_gpt2(tmp_path, vocab, pairs)
    with pytest.raises(ValueError, match="<\\|user\\|>"):
        BPETokenizer.from_gpt2(*files)  # by default only <|endoftext|>, GPT-2's own
    named = BPETokenizer.from_gpt2(*files, special_tokens=[END_OF_TEXT, "<|user|>"])
    assert named.special_ids == {END_OF_TEXT: len(vocab) - 2, "<|user|>": len(vocab) - 1}
    with pytest.raises(ValueError, match="<\\|system\\|>.*not in the vocabulary"):
        BPETokenizer.from_gpt2(*files, special_tokens=[END_OF_TEXT, "<|user|>", "<|system|>"])
    merge_token = pairs[0][0] + pairs[0][1]
    with pytest.raises(ValueError, match="merge makes it"):
        BPETokenizer.from_gpt2(*files, special_tokens=[END_OF_TEXT, "<|user|>", merge_token])


def test_a_special_token_with_a_bytes_id_is_refused(small, tmp_path):
    # Before: "<|pad|>" was dropped without a word, since id 5 was the byte's.
    tok, vocab, pairs = small
    files = write_gpt2(tmp_path, {**vocab, "<|pad|>": 5}, pairs)
    with pytest.raises(ValueError, match="<\\|pad\\|>.*id 5.*byte 5"):
        BPETokenizer.from_gpt2(*files, special_tokens=[END_OF_TEXT, "<|pad|>"])
    # And a ranks file's special ids, which the caller gives.
    ranks = write_ranks(tmp_path / "t.tiktoken", formats.tiktoken_ranks(tok.merges))
    with pytest.raises(ValueError, match="<\\|pad\\|>.*id 300, which is merge 44's"):
        BPETokenizer.from_tiktoken(ranks, pattern="gpt2", special_ids={END_OF_TEXT: 400, "<|pad|>": 300})


def test_a_merge_made_twice_is_refused(small, tmp_path):
    tok, vocab, pairs = small
    files = write_gpt2(tmp_path, vocab, pairs[:5] + [pairs[2]] + pairs[5:])
    with pytest.raises(ValueError, match="line 7.*line 4 already makes it"):
        BPETokenizer.from_gpt2(*files)


# --- a ranks file loads in O(n log n) -----------------------------------------------------

def pathological_ranks(n: int) -> dict:
    """The bytes, then b"a" * k for k from 2 to n + 1: each token's merge is found by
    encoding up to n + 1 bytes, which cost O(n^2) each."""
    ranks = {bytes([b]): b for b in range(256)}
    for k in range(2, n + 2):
        ranks[b"a" * k] = 254 + k
    return ranks


def write_ranks(path: Path, ranks: dict) -> Path:
    path.write_text("".join(f"{base64.b64encode(t).decode()} {r}\n" for t, r in ranks.items()), encoding="ascii")
    return path


def test_a_pathological_ranks_file_loads_quickly_with_tiktokens_ids(tmp_path):
    tiktoken = pytest.importorskip("tiktoken")
    ranks = pathological_ranks(2000)
    path = write_ranks(tmp_path / "a.tiktoken", ranks)
    code = ("import sys; from bpe import BPETokenizer; "
            "tok = BPETokenizer.from_tiktoken(sys.argv[1], pattern='gpt2', special_ids={}); "
            "print(tok.encode('a' * 5000 + ' aaaa ' + 'a' * 2001 + ' ba'))")
    started = time.perf_counter()
    # Before: minutes (2,000 ranks of b"a" * k; 500 took 2.9 s and 1,000 took 19.8 s).
    out = subprocess.run([sys.executable, "-c", code, str(path)], cwd=ROOT, capture_output=True, text=True,
                         timeout=10, check=True).stdout
    assert time.perf_counter() - started < 10
    theirs = tiktoken.Encoding("a", pat_str=formats.GPT2_PATTERN, mergeable_ranks=ranks, special_tokens={})
    assert json.loads(out) == theirs.encode_ordinary("a" * 5000 + " aaaa " + "a" * 2001 + " ba")


def rescanning_parts(data: bytes, ranks: dict, limit: int) -> list:
    """The quadratic algorithm the heap replaced: rescan every pair after each merge."""
    parts = [bytes([b]) for b in data]
    while len(parts) > 2:
        pair_ranks = [ranks.get(parts[i] + parts[i + 1], limit) for i in range(len(parts) - 1)]
        best = min(range(len(pair_ranks)), key=pair_ranks.__getitem__)
        if pair_ranks[best] >= limit:
            break
        parts[best:best + 2] = [parts[best] + parts[best + 1]]
    return parts


def test_recovered_merges_are_the_rescanning_algorithms():
    # GPT-4's 100k merges rebuild each token's bytes; and every token of a vocabulary
    # learned here, of b"a" * k and of one with tokens that encoding never reaches splits
    # in the core (csrc/ranks.h) as the rescanning algorithm splits it.
    ranks = formats.read_tiktoken(cl100k_path())
    merges, token_ids = formats.merges_from_ranks(ranks)
    assert {data: i for data, i in zip(formats.token_bytes(merges), token_ids)} == ranks
    learned = formats.tiktoken_ranks(bpe.train((SMALL_TEXT + " aaaaaaaaaaaaaaaa abababab").encode(), 300))
    unreachable = {bytes([b]): b for b in range(256)}
    unreachable.update({b"ab": 256, b"bc": 257, b"abc": 258, b"cd": 259, b"abcd": 260, b"xabcd": 261})
    for vocabulary in (learned, pathological_ranks(60), unreachable):
        tokens = list(vocabulary)
        for data, split in zip(tokens, _core.lower_rank_splits(vocabulary, tokens)):
            parts = rescanning_parts(data, vocabulary, vocabulary[data])
            assert split == (len(parts[0]) if len(parts) == 2 else 0), data
    ranks = {bytes([b]): b for b in range(256)}
    ranks.update({b"ab": 256, b"abcd": 257})  # "abcd" is not two lower-ranked tokens joined
    with pytest.raises(ValueError, match="rank 257"):
        formats.merges_from_ranks(ranks)
    with pytest.raises(TypeError, match="bytes to int"):
        _core.lower_rank_splits({**ranks, b"xy": "1"}, [b"ab"])
    with pytest.raises(ValueError, match="between 0 and"):
        _core.lower_rank_splits({**ranks, b"xy": 1 << 70}, [b"ab"])
    with pytest.raises(ValueError, match="has no rank"):
        _core.lower_rank_splits(ranks, [b"xyz"])


# --- saving leaves the umask alone --------------------------------------------------------

def test_saving_never_changes_the_umask(tmp_path, monkeypatch):
    calls = []
    real = os.umask
    monkeypatch.setattr(os, "umask", lambda mask: calls.append(mask) or real(mask))
    BPETokenizer([(97, 98)]).save(tmp_path / "t.bpe")
    assert calls == []  # before: os.umask(0), then back


def test_saving_in_a_loop_leaves_other_threads_files_private(tmp_path):
    tok = BPETokenizer([(97, 98)])
    created, stop = [], threading.Event()
    old = os.umask(0o077)
    try:
        def save():
            while not stop.is_set():
                tok.save(tmp_path / "t.bpe")

        saver = threading.Thread(target=save)
        saver.start()
        try:
            deadline = time.monotonic() + 3
            folder = tmp_path / "files"
            folder.mkdir()
            while time.monotonic() < deadline and len(created) < 20000:
                path = folder / str(len(created))
                path.write_bytes(b"")
                created.append(path)
        finally:
            stop.set()
            saver.join()
        saved_mode = stat.S_IMODE(os.stat(tmp_path / "t.bpe").st_mode)
    finally:
        os.umask(old)
    readable = [p for p in created if stat.S_IMODE(p.stat().st_mode) & 0o077]
    assert readable == [] and len(created) > 100
    assert saved_mode == 0o600  # the umask applies to the saved file too
    # Under the usual umask 022 a saved file is readable by all, as files usually are.
    old = os.umask(0o022)
    try:
        tok.save(tmp_path / "u.bpe")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "u.bpe").st_mode) == 0o644


# --- files nested 100,000 deep: a ValueError that names the file, not a RecursionError ------

DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize("document", [DEEP, '{"format": "bpe", "merges": ' + DEEP + "}",
                                      '{"a": ' + '{"a": ' * 100_000 + "1" + "}" * 100_001])
def test_a_deep_tokenizer_file_is_a_valueerror(tmp_path, document):
    path = tmp_path / "deep.bpe"
    path.write_text(document, encoding="utf-8")
    with pytest.raises(ValueError, match="deep.bpe"):
        BPETokenizer.load(path)


def test_a_deep_gpt2_vocabulary_is_a_valueerror(tmp_path):
    (tmp_path / "vocab.json").write_text('{"a": ' + DEEP + "}", encoding="utf-8")
    (tmp_path / "merges.txt").write_text("#version: 0.2\n", encoding="utf-8")
    with pytest.raises(ValueError, match="vocab.json"):
        BPETokenizer.from_gpt2(tmp_path / "vocab.json", tmp_path / "merges.txt")


def test_the_rules_texts_are_attributes_of_formats_read_once(monkeypatch):
    import bpe.formats as formats
    assert "TIKTOKEN_PATTERNS" in dir(formats) and "GPT2_PATTERN" in dir(formats)
    assert formats.TIKTOKEN_PATTERNS is formats.TIKTOKEN_PATTERNS
    assert formats.ONIGURUMA_PATTERNS["gpt2"] == formats.split_rules()["gpt2"][1]
    # Without the compiled core, hasattr says no instead of raising ImportError.
    monkeypatch.delitem(formats.__dict__, "GPT4_PATTERN", raising=False)
    monkeypatch.setattr(formats, "_split_rules", {})

    def unbuilt():
        raise ImportError("the compiled core is not built")

    monkeypatch.setattr(formats, "load_core", unbuilt)
    assert not hasattr(formats, "GPT4_PATTERN")


def test_a_missing_local_path_is_not_taken_for_a_hub_id(tmp_path):
    with pytest.raises(FileNotFoundError) as error:
        BPETokenizer.from_huggingface(str(tmp_path / "missing"))
    assert "hf_hub_download" not in str(error.value)
    with pytest.raises(FileNotFoundError, match="hf_hub_download"):
        BPETokenizer.from_huggingface("Qwen/Qwen2.5-7B")
