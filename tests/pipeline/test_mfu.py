"""How well pretraining uses a GPU: the model's FLOPs per token, the devices' peaks, the
MFU in pretrain.py's log (n/a on the CPU), and --compile.

No GPU here: the peak table is checked through the names CUDA reports (torch's
get_device_name patched), and tools/gpu_check.sh is the run for a GPU machine.
"""
import json
import math
import random

import pytest
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode

import data
import pretrain
from model import GPT, GPTConfig, load_checkpoint, peak_flops
from torch_threads import one_thread  # noqa: F401 (pytest applies it to every test here)

TINY = ["--n-layer", "1", "--n-head", "2", "--n-embd", "32", "--context", "16", "--batch-size", "2",
        "--eval-batches", "1", "--log-interval", "1", "--warmup-steps", "1"]
WORDS = ["the", "cat", "dog", "sun", "ran", "saw", "a", "big", "little", "tree", "park", "happy", "and", "Lily", "Tom"]


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    rng = random.Random(5)
    src, d = tmp_path_factory.mktemp("src"), tmp_path_factory.mktemp("data")
    for name, n in (("train.txt", 200), ("valid.txt", 40)):
        stories = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 20))) + "." for _ in range(n)]
        (src / name).write_text("\n\n".join(stories) + "\n", encoding="utf-8")
    data.main(["--source", str(src), "--data-dir", str(d), "--separator", "blank"])
    return d


@pytest.mark.parametrize("rope", [False, True])
def test_flops_per_token_is_what_torch_counts_in_the_matrix_products(rope):
    """torch's own counter, over a real forward and backward pass (attention on its math
    path, so that its products are counted too), finds 6N + 12 x layers x width x context
    per token, less only what the estimate counts and the counter does not: the biases'
    and norms' 6 FLOPs a parameter."""
    net = GPT(GPTConfig(vocab_size=300, context=64, n_layer=2, n_head=4, n_embd=64, rope=rope))
    batch, context = 3, net.config.context
    x, y = torch.randint(300, (batch, context)), torch.randint(300, (batch, context))
    with sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as counter:
        _, loss = net(x, y)
        loss.backward()
    counted = counter.get_total_flops() / (batch * context)
    not_matrices = sum(p.numel() for p in net.parameters() if p.dim() < 2)
    assert counted == net.flops_per_token() - 6 * not_matrices
    attention = 12 * 2 * 64 * 64
    assert net.flops_per_token() - 6 * net.num_params() == attention - (0 if rope else 6 * 64 * 64)


def test_the_default_model_is_the_episodes():
    """13.8 M parameters with rotary positions and the BPE vocabulary of 8,192, the figure
    the pipeline's page names; its learned position table is a lookup, and left out of the FLOPs."""
    rotary, learned = GPT(GPTConfig(vocab_size=8192, rope=True)), GPT(GPTConfig(vocab_size=8192))
    assert round(rotary.num_params() / 1e6, 1) == 13.8
    assert rotary.flops_per_token() == 6 * rotary.num_params() + 12 * 6 * 384 * 256
    assert learned.flops_per_token() == rotary.flops_per_token()


@pytest.mark.parametrize("name, tflops", [
    ("NVIDIA H100 80GB HBM3", 989), ("NVIDIA H100 PCIe", 756), ("NVIDIA H100 NVL", 835),
    ("NVIDIA H200", 989), ("NVIDIA H200 NVL", 835), ("NVIDIA A100-SXM4-80GB", 312),
    ("NVIDIA A100 80GB PCIe", 312), ("NVIDIA L4", 121), ("NVIDIA L40S", None), ("Tesla T4", None)])
def test_peak_flops_by_the_name_cuda_reports(monkeypatch, name, tflops):
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: name)
    flops, what = peak_flops("cuda")
    assert flops == (None if tflops is None else tflops * 1e12)
    assert what.startswith("unknown") if tflops is None else f"{tflops:,} TFLOPS dense bf16" in what and "datasheet" in what


def test_peak_flops_on_the_cpu_is_not_applicable():
    assert peak_flops("cpu") == (None, "n/a")


def test_mfu_is_the_models_flops_over_the_devices_peak():
    run = pretrain.Run(flops_per_token=2e6, peak_flops=(1e12, "a GPU"), world=2)
    assert pretrain.mfu(run, 1e5) == pytest.approx(2e6 * 1e5 / 2e12)
    assert pretrain.mfu(pretrain.Run(flops_per_token=2e6, peak_flops=(None, "n/a"), world=1), 1e5) is None


def test_the_log_says_mfu_is_not_applicable_on_the_cpu(data_dir, tmp_path, capsys):
    args = ["--data-dir", str(data_dir), "--runs-dir", str(tmp_path), "--max-steps", "2", "--device", "cpu", *TINY]
    assert pretrain.main(args) == 0
    out = capsys.readouterr().out
    progress = [line for line in out.splitlines() if line.startswith("step ") and "|" in line]
    assert len(progress) == 2 and all(" | MFU n/a | " in line for line in progress), out
    assert "FLOPs per token (6N + 12 x layers x width x context" in out
    records = [json.loads(line) for line in (tmp_path / "pretrain" / "log.jsonl").read_text().splitlines()]
    net, _, _ = load_checkpoint(tmp_path / "pretrain")
    assert records[0]["flops_per_token"] == net.flops_per_token() and records[0]["peak_flops"] is None
    assert [r["mfu"] for r in records if r["event"] == "train"] == [None, None]


def test_compile_trains_with_torch_compile(data_dir, tmp_path, monkeypatch, capsys):
    """--compile hands the model to torch.compile, and the run trains to a finite loss.
    The backend is aot_eager here: it traces the model and its backward pass as inductor
    would, but runs the graphs without generating and compiling C++, which takes a minute
    on this machine's CPU (the real compiler runs in tools/gpu_check.sh)."""
    compiled = []
    real_compile = torch.compile

    def compile_cheaply(module, **kwargs):
        compiled.append(module)
        return real_compile(module, backend="aot_eager")

    monkeypatch.setattr(torch, "compile", compile_cheaply)
    args = ["--data-dir", str(data_dir), "--runs-dir", str(tmp_path), "--max-steps", "2", "--device", "cpu",
            "--compile", *TINY]
    assert pretrain.main(args) == 0
    assert len(compiled) == 1 and isinstance(compiled[0], GPT)
    assert "torch.compile on" in capsys.readouterr().out
    _, _, checkpoint = load_checkpoint(tmp_path / "pretrain")
    assert checkpoint["step"] == 2 and all(math.isfinite(v) for v in checkpoint["losses"]["valid"])
    train_losses = [json.loads(line)["loss"] for line in (tmp_path / "pretrain" / "log.jsonl").read_text().splitlines()
                    if json.loads(line)["event"] == "train"]
    assert len(train_losses) == 2 and all(math.isfinite(v) for v in train_losses)
    assert not any(key.startswith("_orig_mod") for key in checkpoint["model"])  # the plain model's weights


def test_compile_is_off_unless_asked_and_the_help_says_why():
    parser = pretrain.build_parser()
    assert parser.parse_args([]).compile is False
    (flag,) = [a for a in parser._actions if "--compile" in a.option_strings]
    assert "not been measured on a GPU" in flag.help
