"""The GPT, its KV cache and generation, checkpoints, and sample.py.

Tiny configs throughout, so the whole file runs in seconds on a CPU.
"""
import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import sample
from model import GPT, CHECKPOINT_NAME, GPTConfig, KVCache, load_checkpoint, pick_device, save_checkpoint
from tokenizer import END_OF_TEXT, WordTokenizer

ROOT = Path(__file__).resolve().parents[2]
STORY = 'Once upon a time, there was a cat named Tom. Tom saw a dog. "Hello!" said Tom. The dog was happy.'
TEXT = (STORY + END_OF_TEXT) * 20


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Tiny models run far faster on one thread: on a busy 2-core machine, two threads
    spend their time waiting for each other at every small operation."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def tiny(vocab_size=64, rope=True, context=16, n_layer=2, seed=0):
    """A tiny model with large random weights: at the real init, attention is nearly
    uniform, and a wrong position or mask would change the logits too little to see."""
    torch.manual_seed(seed)
    model = GPT(GPTConfig(vocab_size=vocab_size, context=context, n_layer=n_layer, n_head=2, n_embd=16, rope=rope))
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.5)
    return model.eval()


@pytest.fixture(scope="module")
def word_tok():
    return WordTokenizer.build(TEXT)


@pytest.fixture(scope="module")
def bpe_tok():
    bpe = pytest.importorskip("bpe._core")
    from tokenizer import PAD, BPETokenizer

    return BPETokenizer(bpe.train(TEXT.replace(END_OF_TEXT, " ").encode(), 60), special_tokens=[PAD, END_OF_TEXT])


def capture_logits(model):
    """Record the last position's logits of every pass through the output head."""
    seen = []
    handle = model.lm_head.register_forward_hook(lambda module, args, out: seen.append(out[0, -1].clone()))
    return seen, handle


# --- Size


def test_default_config_has_about_13_8_million_parameters():
    bpe = GPT(GPTConfig(vocab_size=8192, rope=True)).num_params()
    assert 13.7e6 < bpe < 13.9e6
    # The word-level vocabulary only adds embedding rows (tied to the head, so counted once).
    words = GPT(GPTConfig(vocab_size=10_003, rope=True)).num_params()
    assert words - bpe == (10_003 - 8192) * 384
    # Learned positions add a row per position of the context.
    assert GPT(GPTConfig(vocab_size=8192)).num_params() - bpe == 256 * 384


def test_embedding_is_tied_to_the_head():
    model = tiny()
    assert model.lm_head.weight is model.wte.weight


# --- Forward pass


@pytest.mark.parametrize("rope", [True, False])
def test_forward_gives_logits_and_mean_cross_entropy(rope):
    model = tiny(rope=rope)
    idx = torch.randint(0, 64, (3, 16))
    targets = torch.randint(0, 64, (3, 16))
    logits, loss = model(idx, targets)
    assert logits.shape == (3, 16, 64)
    expected = torch.nn.functional.cross_entropy(logits.reshape(-1, 64), targets.reshape(-1))
    assert torch.allclose(loss, expected)
    assert model(idx)[1] is None


def test_initial_loss_is_about_uniform():
    # The real init is small, so the first predictions are close to uniform: ln(vocab).
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=64, context=16, n_layer=2, n_head=2, n_embd=16))
    idx = torch.randint(0, 64, (4, 16))
    targets = torch.randint(0, 64, (4, 16))
    assert abs(model(idx, targets)[1].item() - torch.log(torch.tensor(64.0)).item()) < 0.1


def test_forward_is_causal():
    model = tiny()
    idx = torch.randint(0, 64, (1, 12))
    changed = idx.clone()
    changed[0, 8:] = (changed[0, 8:] + 1) % 64
    a, _ = model(idx)
    b, _ = model(changed)
    assert torch.allclose(a[0, :8], b[0, :8], atol=1e-6)
    assert not torch.allclose(a[0, 8:], b[0, 8:])


def test_forward_refuses_bad_input():
    model = tiny(rope=False)
    with pytest.raises(ValueError, match="context"):
        model(torch.zeros(1, 17, dtype=torch.long))
    with pytest.raises(ValueError, match="idx"):
        model(torch.zeros(16, dtype=torch.long))
    with pytest.raises(ValueError, match="idx"):
        model(torch.zeros(1, 4))
    with pytest.raises(ValueError, match="targets"):
        model(torch.zeros(1, 4, dtype=torch.long), torch.zeros(1, 3, dtype=torch.long))


def test_bad_configs_are_refused():
    with pytest.raises(ValueError, match="multiple"):
        GPTConfig(vocab_size=10, n_embd=10, n_head=3)
    with pytest.raises(ValueError, match="even"):
        GPTConfig(vocab_size=10, n_embd=6, n_head=2, rope=True)
    with pytest.raises(ValueError, match="vocab_size"):
        GPTConfig(vocab_size=0)
    with pytest.raises(ValueError, match="dropout"):
        GPTConfig(vocab_size=10, dropout=1.0)
    with pytest.raises(TypeError, match="rope"):
        GPTConfig(vocab_size=10, rope="yes")


# --- KV cache and generation


def test_cached_generation_logits_equal_a_full_forward_pass_with_rope():
    model = tiny(rope=True)
    prompt = [1, 2, 3]
    new = model.config.context - len(prompt) + 1  # the last one is predicted from a full window
    seen, handle = capture_logits(model)
    torch.manual_seed(1)
    out = list(model.generate(prompt, new, temperature=1.0))
    handle.remove()
    assert len(out) == new and len(seen) == new
    ids = (prompt + out)[: model.config.context]
    full, _ = model(torch.tensor([ids]))
    for n, logits in enumerate(seen):  # step n predicts position len(prompt) + n from the ones before
        assert torch.allclose(logits, full[0, len(prompt) - 1 + n], atol=1e-5), f"step {n}"


@pytest.mark.parametrize("rope", [True, False])
def test_cache_fed_in_pieces_equals_one_pass(rope):
    model = tiny(rope=rope)
    idx = torch.randint(0, 64, (2, 16))
    cache = KVCache(model.config.n_layer)
    pieces = [model(idx[:, :5], cache=cache)[0], model(idx[:, 5:6], cache=cache)[0], model(idx[:, 6:], cache=cache)[0]]
    assert torch.allclose(torch.cat(pieces, dim=1), model(idx)[0], atol=1e-5)
    assert cache.seen == 16 and len(cache) == 16


def fresh_logits(model, ids):
    """The last position's logits from running the model afresh, without a cache, on the
    last `context` of ids: what every step of generation must use."""
    return model(torch.tensor([ids[-model.config.context:]]))[0][0, -1]


@pytest.mark.parametrize("rope", [True, False])
def test_generation_past_the_window_equals_a_fresh_pass_at_every_step(rope):
    # Two layers: from the second up, a token's cached key and value depend on the tokens
    # it saw, so a cache kept past the window (by sliding it) drifts from a fresh pass.
    model = tiny(rope=rope, n_layer=2)
    context = model.config.context
    prompt = [5, 6, 7]
    seen, handle = capture_logits(model)
    torch.manual_seed(2)
    out = list(model.generate(prompt, 2 * context + 5, temperature=1.0))
    handle.remove()
    assert len(set(out)) > 5  # a window of one repeated token would hide wrong positions
    assert len(seen) == len(out)
    ids = prompt + out
    for n, logits in enumerate(seen):  # step n predicts ids[len(prompt) + n]
        assert torch.allclose(logits, fresh_logits(model, ids[: len(prompt) + n]), atol=1e-5), f"step {n}"


@pytest.mark.parametrize("rope", [True, False])
@pytest.mark.parametrize("prompt_length", [3, 40])
def test_greedy_generation_equals_greedy_recomputation(rope, prompt_length):
    # Greedy decoding of a random model soon settles into a loop of a few tokens, where a
    # slid cache often picks the same ids as a fresh pass; the test above is the sharp one.
    # With this seed a slid cache picks another id (25 steps in, or at once after a prompt
    # longer than the window), so this one can fail too.
    model = tiny(rope=rope, seed=3)
    context = model.config.context
    prompt = torch.randint(0, 64, (prompt_length,), generator=torch.Generator().manual_seed(3)).tolist()
    out = list(model.generate(prompt, 2 * context + 5, temperature=0))
    ids = list(prompt)
    for _ in out:
        ids.append(int(torch.argmax(fresh_logits(model, ids))))
    assert out == ids[prompt_length:]


@pytest.mark.parametrize("rope", [True, False])
def test_generation_uses_the_cache_until_the_window_is_full(rope):
    model = tiny(rope=rope)
    context = model.config.context
    lengths = []  # tokens fed in, pass by pass
    handle = model.wte.register_forward_hook(lambda module, args, out: lengths.append(args[0].shape[1]))
    list(model.generate([1, 2, 3], 2 * context))
    handle.remove()
    cached = context - 3  # steps that still fit the window: one token each
    assert lengths == [3] + [1] * cached + [context] * (2 * context - 1 - cached)


def test_sliding_cache_keeps_relative_positions():
    # With one layer, a token's key and value depend on nothing but the token and its
    # position, so after sliding, a cached step must equal a fresh pass over the last
    # `context` tokens: the angles moved on, and only their differences count.
    model = tiny(rope=True, n_layer=1)
    context = model.config.context
    prompt = [5, 6, 7]
    seen, handle = capture_logits(model)
    torch.manual_seed(2)
    out = list(model.generate(prompt, 2 * context, temperature=1.0, sliding_cache=True))
    handle.remove()
    assert len(set(out)) > 5  # a window of one repeated token would hide wrong positions
    ids = prompt + out
    for n in range(context, 2 * context):  # steps whose input no longer fits the window
        window = ids[len(prompt) + n - context: len(prompt) + n]
        fresh, _ = model(torch.tensor([window]))
        assert torch.allclose(seen[n], fresh[0, -1], atol=1e-4), f"step {n}"


def test_sliding_cache_is_one_token_a_step_and_approximate_past_the_window():
    model = tiny(rope=True, n_layer=2)
    context = model.config.context
    prompt = [5, 6, 7]
    lengths = []
    feed = model.wte.register_forward_hook(lambda module, args, out: lengths.append(args[0].shape[1]))
    seen, handle = capture_logits(model)
    torch.manual_seed(2)
    out = list(model.generate(prompt, 2 * context + 5, temperature=1.0, sliding_cache=True))
    handle.remove()
    feed.remove()
    assert len(out) == 2 * context + 5
    assert lengths == [3] + [1] * (len(out) - 1)  # never the whole window again
    ids = prompt + out
    full = context - len(prompt) + 1  # the steps before any token slides out
    drift = [(seen[n] - fresh_logits(model, ids[: len(prompt) + n])).abs().max().item() for n in range(len(out))]
    assert max(drift[:full]) < 1e-5  # exact while the window holds everything
    # Past it, the second layer's kept keys and values were computed while tokens now gone
    # were in view: what the docstring calls approximate.
    assert min(drift[full:]) > 1e-3
    assert "approximate" in GPT.generate.__doc__


@pytest.mark.parametrize("rope, sliding_cache", [(True, False), (True, True), (False, False)])
def test_generation_runs_past_twice_the_context(rope, sliding_cache):
    model = tiny(rope=rope)
    out = list(model.generate(torch.tensor([[1, 2, 3]]), 2 * model.config.context + 5, top_k=5,
                              sliding_cache=sliding_cache))
    assert len(out) == 2 * model.config.context + 5
    assert all(isinstance(i, int) and 0 <= i < 64 for i in out)
    # A prompt longer than the window works too (its end is kept).
    assert len(list(model.generate(list(range(40)), 3, sliding_cache=sliding_cache))) == 3


def test_generation_is_a_generator_of_ints_and_seeded_sampling_repeats():
    model = tiny()
    gen = model.generate([1], 4)
    assert iter(gen) is gen
    torch.manual_seed(3)
    a = list(model.generate([1, 2], 20, temperature=1.0, top_k=10))
    torch.manual_seed(3)
    b = list(model.generate([1, 2], 20, temperature=1.0, top_k=10))
    assert a == b
    greedy = list(model.generate([1, 2], 5, temperature=0))
    assert greedy == list(model.generate([1, 2], 5, temperature=0))
    # top_k=1 is greedy whatever the temperature
    assert list(model.generate([1, 2], 5, temperature=2.0, top_k=1)) == greedy


def test_generation_refuses_bad_arguments():
    model = tiny()
    for kwargs, match in [
        (dict(idx=[], max_new_tokens=3), "at least one"),
        (dict(idx=[64], max_new_tokens=3), "64.*64"),
        (dict(idx=[1], max_new_tokens=-1), "max_new_tokens"),
        (dict(idx=[1], max_new_tokens=3, temperature=-1), "temperature"),
        (dict(idx=[1], max_new_tokens=3, top_k=0), "top_k"),
        (dict(idx=torch.zeros(2, 3, dtype=torch.long), max_new_tokens=3), "one prompt"),
    ]:
        with pytest.raises(ValueError, match=match):
            model.generate(**kwargs)  # at the call, not at the first token
    with pytest.raises(TypeError, match="sliding_cache"):
        model.generate([1], 3, sliding_cache="yes")
    with pytest.raises(ValueError, match="rotary"):
        tiny(rope=False).generate([1], 3, sliding_cache=True)


def test_pick_device():
    assert pick_device("cpu") == "cpu"
    assert pick_device() in ("cuda", "mps", "cpu")
    if not torch.cuda.is_available():
        assert pick_device() != "cuda"
        with pytest.raises(ValueError, match="CUDA"):
            pick_device("cuda")
    with pytest.raises(ValueError, match="not a device"):
        pick_device("toaster")


# --- Checkpoints


@pytest.mark.parametrize("which", ["word", "bpe"])
def test_checkpoint_round_trip_gives_identical_outputs(request, tmp_path, which):
    tok = request.getfixturevalue(f"{which}_tok")
    model = tiny(vocab_size=len(tok))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    ids = torch.tensor([tok.encode(STORY)[:16]])
    model.train()
    loss = model(ids[:, :-1], ids[:, 1:])[1]
    loss.backward()
    optimizer.step()
    model.eval()
    path = tmp_path / "run" / CHECKPOINT_NAME
    save_checkpoint(path, model, tok, step=7, losses={"train": [3.5, 2.0], "valid": [3.6]}, optimizer=optimizer,
                    extra={"seconds": 1.5, "flags": ["--rope"]})

    loaded, loaded_tok, checkpoint = load_checkpoint(path)
    assert type(loaded_tok) is type(tok) and loaded_tok.state() == tok.state()
    assert loaded.config == model.config
    assert torch.equal(loaded(ids)[0], model(ids)[0])
    assert loaded_tok.encode(STORY) == tok.encode(STORY)
    assert checkpoint["step"] == 7
    assert checkpoint["losses"] == {"train": [3.5, 2.0], "valid": [3.6]}
    assert checkpoint["extra"] == {"seconds": 1.5, "flags": ["--rope"]}
    assert checkpoint["config"]["vocab_size"] == len(tok)
    restored = torch.optim.AdamW(loaded.parameters(), lr=1e-3)
    restored.load_state_dict(checkpoint["optimizer"])
    torch.manual_seed(0)
    a = list(model.generate(ids[0].tolist(), 8))
    torch.manual_seed(0)
    assert list(loaded.generate(ids[0].tolist(), 8)) == a
    # A run folder stands for the checkpoint inside it.
    assert torch.equal(load_checkpoint(tmp_path / "run")[0](ids)[0], model(ids)[0])
    assert not loaded.training


def test_save_leaves_no_temporary_file_and_replaces_atomically(tmp_path, word_tok, monkeypatch):
    model = tiny(vocab_size=len(word_tok))
    path = tmp_path / "ckpt.pt"
    save_checkpoint(path, model, word_tok, step=1, losses=[])
    before = path.read_bytes()
    assert os.listdir(tmp_path) == ["ckpt.pt"]

    def broken_save(obj, f, *args, **kwargs):  # torch.save takes a path or a file
        if isinstance(f, (str, os.PathLike)):
            with open(f, "wb") as out:
                out.write(b"half a checkpoint")
        else:
            f.write(b"half a checkpoint")
        raise OSError("disk full")

    monkeypatch.setattr(torch, "save", broken_save)
    with pytest.raises(OSError, match="disk full"):
        save_checkpoint(path, model, word_tok, step=2, losses=[])
    assert path.read_bytes() == before  # the old checkpoint is still whole
    assert os.listdir(tmp_path) == ["ckpt.pt"]


@pytest.mark.parametrize("umask", [0o022, 0o077])
def test_checkpoint_gets_the_usual_permissions(tmp_path, word_tok, umask):
    """Like any file the user writes (the umask applied), not the owner-only ones of the
    temporary file it was written to."""
    old = os.umask(umask)
    try:
        save_checkpoint(tmp_path / "ckpt.pt", tiny(vocab_size=len(word_tok)), word_tok, step=1, losses=[])
    finally:
        os.umask(old)
    assert (tmp_path / "ckpt.pt").stat().st_mode & 0o777 == 0o666 & ~umask


def test_save_refuses_data_that_weights_only_could_not_read(tmp_path, word_tok):
    model = tiny(vocab_size=len(word_tok))
    with pytest.raises(TypeError, match="losses"):
        save_checkpoint(tmp_path / "c.pt", model, word_tok, step=1, losses=[object()])
    # numpy's float64 passes for a float, but weights_only would refuse to read it back.
    with pytest.raises(TypeError, match=r"losses\['valid'\]\[1\].*float64"):
        save_checkpoint(tmp_path / "c.pt", model, word_tok, step=1, losses={"valid": [1.0, np.float64(2.0)]})
    with pytest.raises(TypeError, match="extra"):
        save_checkpoint(tmp_path / "c.pt", model, word_tok, step=1, losses=[], extra={"when": np.int64(3)})
    with pytest.raises(ValueError, match="vocabulary"):
        save_checkpoint(tmp_path / "c.pt", tiny(vocab_size=5), word_tok, step=1, losses=[])
    assert not (tmp_path / "c.pt").exists()


def test_truncated_checkpoint_is_a_clear_error(tmp_path, word_tok):
    path = tmp_path / "ckpt.pt"
    save_checkpoint(path, tiny(vocab_size=len(word_tok)), word_tok, step=1, losses=[])
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="ckpt.pt.*truncated"):
        load_checkpoint(path)
    path.write_bytes(b"")
    with pytest.raises(ValueError, match="ckpt.pt"):
        load_checkpoint(path)
    with pytest.raises(FileNotFoundError, match="nowhere.pt"):
        load_checkpoint(tmp_path / "nowhere.pt")


class Payload:
    """Unpickling this creates the marker file: what a malicious checkpoint would do."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


@pytest.mark.filterwarnings("ignore:Detected pickle protocol")
def test_checkpoint_whose_pickle_would_run_code_is_refused_and_runs_nothing(tmp_path):
    # First, that the payload does run code when unpickled without protection.
    proof = tmp_path / "proof"
    pickle.loads(pickle.dumps(Payload(proof)))
    assert proof.exists()

    for name, write in [
        ("raw.pt", lambda path, payload: path.write_bytes(pickle.dumps(payload))),
        ("zip.pt", lambda path, payload: torch.save({"model": payload, "config": {}, "tokenizer": {}}, path)),
    ]:
        marker = tmp_path / f"marker-{name}"
        path = tmp_path / name
        write(path, Payload(marker))
        with pytest.raises(ValueError, match=f"{name}.*could run code"):
            load_checkpoint(path)
        assert not marker.exists(), f"loading {name} ran code"


def test_checkpoint_with_wrong_contents_is_a_clear_error(tmp_path, word_tok):
    path = tmp_path / "odd.pt"
    torch.save({"weights": {}}, path)
    with pytest.raises(ValueError, match="odd.pt"):
        load_checkpoint(path)
    model = tiny(vocab_size=len(word_tok))
    torch.save({"model": {}, "config": {"vocab_size": len(word_tok)}, "tokenizer": word_tok.state()}, path)
    with pytest.raises(ValueError, match="odd.pt.*weights"):
        load_checkpoint(path)
    torch.save({"model": model.state_dict(), "config": {"vocab_size": len(word_tok), "heads": 3},
                "tokenizer": word_tok.state()}, path)
    with pytest.raises(TypeError, match="odd.pt"):
        load_checkpoint(path)


# --- sample.py


def test_sample_prints_a_story_from_a_checkpoint(tmp_path, bpe_tok):
    path = tmp_path / "run" / CHECKPOINT_NAME
    save_checkpoint(path, tiny(vocab_size=len(bpe_tok)), bpe_tok, step=0, losses=[])
    prompt = "Once upon a time, Zorblax <|endoftext|>"
    result = subprocess.run(
        [sys.executable, "sample.py", str(tmp_path / "run"), "--prompt", prompt, "--tokens", "30",
         "--temperature", "1.0", "--top-k", "20", "--seed", "1", "--device", "cpu"],
        cwd=ROOT, capture_output=True, text=True, timeout=120, env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    assert result.returncode == 0, result.stderr
    # The prompt comes back as typed (the marker in it is plain text), then the story.
    assert result.stdout.startswith(prompt)
    assert len(result.stdout) > len(prompt) + 1


def test_sample_with_a_word_checkpoint_and_a_seed_repeats(tmp_path, word_tok, capsys):
    path = tmp_path / "ckpt.pt"
    save_checkpoint(path, tiny(vocab_size=len(word_tok)), word_tok, step=0, losses=[])
    args = [str(path), "--prompt", "Tom saw Zorblax", "--tokens", "12", "--seed", "5", "--device", "cpu"]
    sample.main(args)
    first = capsys.readouterr().out
    sample.main(args)
    assert capsys.readouterr().out == first
    assert first.startswith("Tom saw <|unk|>")


def test_sample_sliding_cache_flag_reaches_generate_for_rotary_models_only(tmp_path, word_tok, capsys, monkeypatch):
    asked = []
    generate = GPT.generate

    def spy(self, *args, **kwargs):
        asked.append(kwargs.get("sliding_cache"))
        return generate(self, *args, **kwargs)

    monkeypatch.setattr(GPT, "generate", spy)
    stories = []
    for rope in (True, False):
        path = tmp_path / f"rope-{rope}.pt"
        save_checkpoint(path, tiny(vocab_size=len(word_tok), rope=rope), word_tok, step=0, losses=[])
        for flag in ([], ["--sliding-cache"]):  # 40 tokens: well past the window of 16
            sample.main([str(path), "--prompt", "Tom saw", "--tokens", "40", "--seed", "5", "--device", "cpu"] + flag)
            stories.append(capsys.readouterr().out)
    # Learned positions cannot slide: the flag leaves them exact, and the story unchanged.
    assert asked == [False, True, False, False]
    assert stories[2] == stories[3]


def test_sample_help_documents_every_flag(capsys):
    with pytest.raises(SystemExit) as exit:
        sample.main(["--help"])
    assert exit.value.code == 0
    help_text = capsys.readouterr().out
    for flag in ("--prompt", "--tokens", "--temperature", "--top-k", "--seed", "--device", "--sliding-cache"):
        assert flag in help_text
    sliding = next(a for a in sample.build_parser()._actions if "--sliding-cache" in a.option_strings)
    assert "faster" in sliding.help and "approximate" in sliding.help
    # Every flag has words after it, not just its name.
    for action in sample.build_parser()._actions:
        assert action.help, f"{action.dest} is undocumented"


def test_sample_missing_checkpoint_is_a_clear_error(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit:
        sample.main([str(tmp_path / "missing.pt"), "--prompt", "Hi"])
    assert exit.value.code != 0
    assert "no checkpoint at" in capsys.readouterr().err


class Chunked:
    """A stand-in for stdout that records each write."""

    def __init__(self):
        self.writes = []
        self.flushed = 0  # how many writes had been flushed at the last flush

    def write(self, s):
        self.writes.append(s)

    def flush(self):
        self.flushed = len(self.writes)


def test_story_printer_holds_back_half_characters(bpe_tok):
    text = "猫 and 🐱!"
    ids = bpe_tok.encode(text)
    out = Chunked()
    printer = sample.StoryPrinter(bpe_tok, [], out=out)
    for i in ids:
        printer.add(i)
    printer.finish()
    assert "".join(out.writes) == text + "\n"
    assert not any("\ufffd" in w for w in out.writes)
    # Printed as it comes: a write for each whole character or more, each flushed.
    assert len(out.writes) >= len("猫 and 🐱!") // 2
    assert out.flushed == len(out.writes)


def test_story_printer_flushes_each_token(word_tok):
    out = Chunked()
    printer = sample.StoryPrinter(word_tok, [], out=out)
    for n, i in enumerate(word_tok.encode("Tom saw a dog.")):
        printer.add(i)
        assert out.flushed == len(out.writes) == n + 1


# --- sample.py's prompt is UTF-8 or refused ----------------------------------------------

@pytest.fixture(scope="module")
def run_folder(tmp_path_factory):
    bpe = pytest.importorskip("bpe._core")
    from tokenizer import PAD, BPETokenizer
    from vocabularies import SMALL_TEXT

    tok = BPETokenizer(bpe.train(SMALL_TEXT.encode(), 40), special_tokens=[PAD, END_OF_TEXT])
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


def test_story_printer_streams_without_decoding_the_story_again(monkeypatch):
    pytest.importorskip("bpe._core")
    from bpe import BPETokenizer
    from vocabularies import trained_with_two_specials

    trained = trained_with_two_specials()
    class Out:
        def __init__(self):
            self.writes = []

        def write(self, s):
            self.writes.append(s)

        def flush(self):
            pass

    text = "Once 猫 \ufffd and 🐱!"
    ids = trained.encode(text)
    monkeypatch.setattr(BPETokenizer, "decode", lambda *a, **k: pytest.fail("the printer decoded all the ids"))
    out = Out()
    printer = sample.StoryPrinter(trained, [], out=out)
    for n, i in enumerate(ids):
        printer.add(i)
        if trained.decode_single_token_bytes(i) == "\ufffd".encode():
            assert out.writes[-1].endswith("\ufffd")  # a real U+FFFD is printed at once
    printer.finish()
    assert "".join(out.writes) == text + "\n"
