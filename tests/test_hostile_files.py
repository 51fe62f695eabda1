"""Hostile testing, round two: files, imports and the tokenizer's state.

Each test holds one of the issue's findings: a truncated merges.txt, parts of a
tokenizer.json that change the ids, a ranks file that took minutes to load, the umask
that saving changed for a moment, temporary files that a killed data.py left, a prompt
that is not UTF-8, and a tokenizer whose state could be changed after it was made.
"""
import base64
import json
import os
import pickle
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import bpe
import data
from bpe import BPETokenizer, _core, formats
from bpe.files import atomic_write
from vocabularies import cl100k_path, gpt2_files

ROOT = Path(__file__).resolve().parents[1]
END_OF_TEXT = "<|endoftext|>"
TEXT = ("Once upon a time, a little cat named Tom saw a big red ball. Tom said hello to the world. "
        "The world said hello back, and they played all day in the sun! 1234 ... ") * 40


def alphabet_string(data: bytes) -> str:
    alphabet = formats.byte_alphabet()
    return "".join(alphabet[b] for b in data)


@pytest.fixture(scope="module")
def small():
    """A GPT-2-shaped vocabulary learned here, so the tests run without ../shared: its
    tokenizer (our ids), the vocabulary {string: id} with <|endoftext|> last, and the merges
    as pairs of strings."""
    merges = bpe.train(TEXT.encode(), 80, pattern="gpt2")
    tok = BPETokenizer(merges, pattern="gpt2", special_tokens=[END_OF_TEXT])
    vocab_bytes = formats.token_bytes(merges)
    vocab = {alphabet_string(b): i for i, b in enumerate(vocab_bytes)}
    vocab[END_OF_TEXT] = len(vocab)
    pairs = [(alphabet_string(vocab_bytes[a]), alphabet_string(vocab_bytes[b])) for a, b in merges]
    return tok, vocab, pairs


def write_gpt2(folder: Path, vocab: dict, pairs) -> tuple:
    folder.mkdir(exist_ok=True)
    (folder / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    (folder / "merges.txt").write_text("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in pairs), encoding="utf-8")
    return folder / "vocab.json", folder / "merges.txt"


# --- 3. vocab.json + merges.txt: only what the files name as special is special -----------


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


# --- 5. tokenizer.json: what changes the ids is honoured or refused ------------------------


def huggingface_file(path: Path, vocab: dict, pairs, change=None) -> Path:
    """A tokenizer.json made by Hugging Face tokenizers, as GPT-2's is: a ByteLevel pre-
    tokenizer, decoder and post-processor, <|endoftext|> added as special and normalized;
    change(tokenizer) alters it first."""
    tokenizers = pytest.importorskip("tokenizers")
    model = tokenizers.models.BPE(vocab={t: i for t, i in vocab.items() if t != END_OF_TEXT}, merges=list(pairs))
    tk = tokenizers.Tokenizer(model)
    tk.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = tokenizers.decoders.ByteLevel()
    tk.post_processor = tokenizers.processors.ByteLevel(trim_offsets=False)
    tk.add_special_tokens([tokenizers.AddedToken(END_OF_TEXT, special=True, normalized=True)])
    if change is not None:
        change(tk)
    tk.save(str(path))
    return path


TEXTS = ["hello world", "Hello <|endoftext|> world", "Once upon a time, Tom said hello!<|endoftext|>  x\n\n",
         "Café 日本 🐱 1234567", ""]


def test_gpt2_shaped_tokenizer_json_loads_and_gives_huggingfaces_ids(small, tmp_path):
    tokenizers = pytest.importorskip("tokenizers")
    tok, vocab, pairs = small
    path = huggingface_file(tmp_path / "tokenizer.json", vocab, pairs)
    document = json.loads(path.read_text(encoding="utf-8"))
    assert document["post_processor"]["type"] == "ByteLevel" and document["added_tokens"][0]["normalized"]
    ours, theirs = BPETokenizer.from_huggingface(path), tokenizers.Tokenizer.from_file(str(path))
    assert ours == tok
    for text in TEXTS:
        assert ours.encode(text, allowed_special="all") == theirs.encode(text).ids, text


def test_gpt2s_own_tokenizer_json_loads_and_gives_huggingfaces_ids(tmp_path):
    tokenizers = pytest.importorskip("tokenizers")
    vocab_path, merges_path = gpt2_files()
    vocab = json.loads(vocab_path.read_text(encoding="utf-8"))
    with open(merges_path, encoding="utf-8") as f:
        pairs = [tuple(line.rstrip("\n").split(" ")) for line in f if line.strip() and not line.startswith("#version")]
    path = huggingface_file(tmp_path / "tokenizer.json", vocab, pairs)
    ours, theirs = BPETokenizer.from_huggingface(path), tokenizers.Tokenizer.from_file(str(path))
    assert ours.encode("hello world") == theirs.encode("hello world").ids == [31373, 995]
    for text in TEXTS:
        assert ours.encode(text, allowed_special="all") == theirs.encode(text).ids, text


def _template(tk):
    import tokenizers
    tk.post_processor = tokenizers.processors.TemplateProcessing(
        single=f"{END_OF_TEXT} $A", special_tokens=[(END_OF_TEXT, tk.token_to_id(END_OF_TEXT))])


def _added(**flags):
    def change(tk):
        import tokenizers
        tk.add_special_tokens([tokenizers.AddedToken(END_OF_TEXT, special=True, normalized=True, **flags)])
    return change


def _plain_added(tk):
    import tokenizers
    tk.add_tokens([tokenizers.AddedToken("<|user|>", special=False)])


def _normalizer(tk):
    import tokenizers
    tk.normalizer = tokenizers.normalizers.Lowercase()


def _padding(tk):
    tk.enable_padding(pad_id=0, pad_token="!", length=64)


def _truncation(tk):
    tk.enable_truncation(max_length=3)


# Templates, added-token flags, non-special added tokens, padding and truncation now load
# with Hugging Face's ids (tests/test_huggingface_models.py); a Lowercase normalizer is
# still refused.
@pytest.mark.parametrize("change, field", [(_normalizer, "normalizer")], ids=["normalizer"])
def test_fields_that_change_huggingfaces_ids_are_refused_by_name(small, tmp_path, change, field):
    tokenizers = pytest.importorskip("tokenizers")
    tok, vocab, pairs = small
    path = huggingface_file(tmp_path / "tokenizer.json", vocab, pairs, change)
    theirs = tokenizers.Tokenizer.from_file(str(path))
    # What the field does: Hugging Face's ids differ from ours somewhere.
    texts = TEXTS + ["a <|user|> b", "HELLO", "x<|endoftext|>y"]
    assert any(theirs.encode(t).ids != tok.encode(t, allowed_special="all") for t in texts)
    with pytest.raises(ValueError, match=field):
        BPETokenizer.from_huggingface(path)


def test_tokenizer_json_with_a_truncated_model_or_clashing_ids_is_refused(small, tmp_path):
    tok, vocab, pairs = small
    path = tmp_path / "tokenizer.json"
    tok.save_huggingface(path)
    document = json.loads(path.read_text(encoding="utf-8"))
    cut = json.loads(json.dumps(document))
    cut["model"]["merges"] = cut["model"]["merges"][:10]
    path.write_text(json.dumps(cut), encoding="utf-8")
    with pytest.raises(ValueError, match="no merge makes.*truncated"):
        BPETokenizer.from_huggingface(path)
    clash = json.loads(json.dumps(document))
    clash["added_tokens"].append({"id": 5, "content": "<|pad|>", "single_word": False, "lstrip": False,
                                  "rstrip": False, "normalized": False, "special": True})
    path.write_text(json.dumps(clash), encoding="utf-8")
    with pytest.raises(ValueError, match="<\\|pad\\|>.*id 5"):
        BPETokenizer.from_huggingface(path)


# --- 6. a ranks file loads in O(n log n) ---------------------------------------------------


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
    learned = formats.tiktoken_ranks(bpe.train((TEXT + " aaaaaaaaaaaaaaaa abababab").encode(), 300))
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


# --- 7. saving leaves the umask alone ------------------------------------------------------


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


# --- 8. data.py removes what a killed run left ---------------------------------------------


def test_data_py_removes_its_stale_temporary_files(tmp_path, capsys):
    from test_data import sample_like_source

    sample_like_source(tmp_path / "src")
    d = tmp_path / "data"
    d.mkdir()
    stale = [d / ".train.txt.k3j2l9xa.tmp", d / ".train-bpe.bin.0a1b2c3d.tmp", d / ".tokenizer.bpe.zz12yy34.tmp"]
    for path in stale:
        path.write_bytes(b"\0" * 100_000)
    mine = [d / ".notes.txt.k3j2l9xa.tmp", d / "train.txt.tmp", d / ".train.txt.tmp"]
    for path in mine:
        path.write_text("not data.py's")
    data.main(["--source", str(tmp_path / "src"), "--data-dir", str(d), "--no-progress"])
    out = capsys.readouterr().out
    assert [p for p in stale if p.exists()] == []
    assert all(p.read_text() == "not data.py's" for p in mine)
    lines = [line for line in out.splitlines() if "temporary" in line]
    assert len(lines) == 1 and "3 temporary files" in lines[0] and "0.3 MB" in lines[0], out
    data.main(["--source", str(tmp_path / "src"), "--data-dir", str(d), "--no-progress"])
    assert "temporary" not in capsys.readouterr().out  # nothing left, nothing said


# --- 12. sample.py's prompt is UTF-8 or refused -------------------------------------------


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory):
    torch = pytest.importorskip("torch")
    from model import GPT, CHECKPOINT_NAME, GPTConfig, save_checkpoint
    from tokenizer import PAD

    tok = BPETokenizer(bpe.train(TEXT.encode(), 40), special_tokens=[PAD, END_OF_TEXT])
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=len(tok), context=16, n_layer=1, n_head=2, n_embd=16, rope=True))
    folder = tmp_path_factory.mktemp("run")
    save_checkpoint(folder / CHECKPOINT_NAME, model, tok, step=0, losses=[])
    return folder


def sample_py(folder, prompt: bytes):
    return subprocess.run([sys.executable, b"sample.py", str(folder).encode(), b"--prompt", prompt, b"--tokens", b"5",
                           b"--device", b"cpu", b"--seed", b"1"], cwd=ROOT, capture_output=True, timeout=120,
                          env={**os.environ, "OMP_NUM_THREADS": "1", "LC_ALL": "C.UTF-8"})


def test_sample_py_refuses_a_prompt_that_is_not_utf8(run_folder):
    result = sample_py(run_folder, b"\xff\xfe")
    err = result.stderr.decode("utf-8", "replace")
    # Before: a traceback, "ValueError: ... lone surrogate", exit status 1.
    assert result.returncode == 2, err
    # argparse's usage, then one line that says what is wrong.
    assert "Traceback" not in err and [line for line in err.splitlines() if "error" in line] == \
        [err.strip().splitlines()[-1]] and "--prompt is not UTF-8 text: byte 0xff at byte 0" in err
    good = sample_py(run_folder, "café".encode())
    assert good.returncode == 0, good.stderr.decode()
    assert good.stdout.decode("utf-8").startswith("café")


def test_sample_main_refuses_a_prompt_with_a_lone_surrogate(run_folder, capsys):
    import sample

    with pytest.raises(SystemExit) as e:
        sample.main([str(run_folder), "--prompt", "a\ud800b", "--device", "cpu"])
    assert e.value.code == 2 and "--prompt is not UTF-8" in capsys.readouterr().err


# --- 13. a tokenizer cannot change after it is made ----------------------------------------


def test_token_to_id_takes_a_special_tokens_bytes(small):
    tok = small[0]
    assert tok.token_to_id(END_OF_TEXT.encode()) == tok.token_to_id(END_OF_TEXT) == tok.eot_token is not None
    assert tok.token_to_id(bytearray(b"<|endoftext|>")) == tok.eot_token


def test_a_tokenizer_is_immutable(small):
    tok = BPETokenizer(small[0].merges, pattern="gpt2", special_tokens=[END_OF_TEXT], token_ids=None)
    before = tok.encode("hello world")
    with pytest.raises(AttributeError):
        tok.merges.clear()
    with pytest.raises(TypeError):
        tok.merges[0] = (1, 2)
    for name, value in [("merges", []), ("pattern", "default"), ("special_tokens", ()), ("token_ids", None)]:
        with pytest.raises(AttributeError):
            setattr(tok, name, value)
    copy = pickle.loads(pickle.dumps(tok))
    assert copy == tok and copy.encode("hello world") == tok.encode("hello world") == before
    assert isinstance(tok.merges, tuple) and all(isinstance(m, tuple) for m in tok.merges)
    shuffled = BPETokenizer([(97, 98)], token_ids=[*range(1, 256), 0, 256])
    assert isinstance(shuffled.token_ids, tuple) and shuffled.state()["token_ids"] == [*range(1, 256), 0, 256]
    assert BPETokenizer.from_state(shuffled.state()) == shuffled
