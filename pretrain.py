"""Pretrain the GPT on the stories for a time budget.

    python pretrain.py                       # words, learned positions: runs/pretrain
    python pretrain.py --rope --bpe          # BPE tokens, rotary embeddings: runs/pretrain-rope-bpe
    python pretrain.py --rope --bpe --resume # continue that run where it stopped
    torchrun --nproc_per_node=4 pretrain.py --rope --bpe   # the same on 4 GPUs

Each kind of model has a run folder of its own, named from the flags (runs/pretrain,
runs/pretrain-rope, runs/pretrain-bpe, runs/pretrain-rope-bpe), holding ckpt.pt (weights,
config, tokenizer, optimizer, step; see model.save_checkpoint) and log.jsonl (one JSON
object per line: the losses, learning rate and speed as training goes). The checkpoint's
`extra` holds the rest of the run: its flags, elapsed time and tokens, and the random
state of every process (the generator that draws its training windows, and the one
dropout draws from), so --resume carries on where the run stopped.

The learning rate warms up, then follows a cosine down to --min-lr over either the time
budget (the default) or --decay-steps steps. Under the time budget the rate at a step
depends on how fast the steps went, so no two runs are alike. A step schedule makes the
run repeatable: the same flags give the same weights, and a run stopped early (by
--max-steps, --minutes or Ctrl-C) and then --resume'd gives the weights and losses of the
run that was never stopped (bit for bit on the CPU, with as many processes as before):

    python pretrain.py --decay-steps 2000 --max-steps 1000   # the first half
    python pretrain.py --resume --max-steps 2000             # equals one run of 2000 steps

--max-steps and --minutes only say when to stop. --resume keeps every flag of the run
(schedule, batch size, seed, intervals, budget, and the model's size) unless given again:
a schedule flag given again replaces the run's from there on; the model cannot change.

Under torchrun, every process trains on its own random windows and DistributedDataParallel
averages the gradients, so all of them hold the same weights: at each checkpoint they
compare a hash of their weights, and log.jsonl records it. Only rank 0 prints and writes.
Resumed with another number of processes, process r continues process r's windows where
there was one, and a new process starts its own from --seed, its rank and the step: the
same every time, but not the run the old number of processes would have made.
Ctrl-C (or SIGTERM) finishes the step, saves the checkpoint and exits; a second Ctrl-C
stops at once without saving (the checkpoint on disk stays whole: saves are atomic).
--resume checks every value it takes from the checkpoint (type and range) before using it,
and names the field that is wrong.

The progress lines give tokens per second and, on CUDA, model FLOPs utilisation: the
model's FLOPs per token (GPT.flops_per_token, PaLM's 6N + attention) times tokens per
second, over the devices' peak dense bf16 FLOPs (model.PEAK_BF16_FLOPS); "n/a" on a CPU
or MPS, "unknown" on a GPU the table lacks. --compile runs the model through
torch.compile; it is off by default until measured on a GPU (tools/gpu_check.sh).
"""
import argparse
import hashlib
import json
import math
import os
import signal
import sys
import time
from contextlib import nullcontext
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist

import data
from bpe.atomic_writes import remove_stale_temporaries
from model import CHECKPOINT_NAME, GPT, GPTConfig, load_checkpoint, peak_flops, pick_device, save_checkpoint
from tokenizer import kind

# Knobs: the defaults of the flags below. The model's size defaults to GPTConfig's, the
# episode's: 6 layers, 6 heads, 384 wide, a context of 256 tokens.
MINUTES = 10  # the time budget, evaluations and checkpoints included
BATCH_SIZE = 64  # windows per step, per process
LEARNING_RATE = 1e-3
MIN_LR = 1e-4  # where the cosine decay ends, at the end of the budget
WARMUP_STEPS = 100
WEIGHT_DECAY = 0.1  # on the matrices and the embedding, not on biases and norms
GRAD_CLIP = 1.0
EVAL_INTERVAL = 100  # steps between held-out losses (and checkpoints)
EVAL_BATCHES = 20  # held-out batches per evaluation: the same windows every time
LOG_INTERVAL = 10  # steps between progress lines
SEED = 1337
RUNS_DIR = Path(__file__).resolve().parent / "runs"

# The flags that shape a run, and their defaults. A new run takes each from the command
# line or from here; --resume takes the checkpoint's unless the flag is given again.
RUN_DEFAULTS = {"minutes": MINUTES, "max_steps": None, "decay_steps": None, "batch_size": BATCH_SIZE,
                "lr": LEARNING_RATE, "min_lr": MIN_LR, "warmup_steps": WARMUP_STEPS,
                "eval_interval": EVAL_INTERVAL, "eval_batches": EVAL_BATCHES, "log_interval": LOG_INTERVAL,
                "seed": SEED}
# The model's flags: a resumed run's model is the checkpoint's, and cannot change.
MODEL_FLAGS = ("context", "n_layer", "n_head", "n_embd", "dropout")


def run_name(rope: bool, bpe: bool) -> str:
    return "pretrain" + ("-rope" if rope else "") + ("-bpe" if bpe else "")


def model_defaults() -> dict:
    defaults = GPTConfig(vocab_size=1)
    return {name: getattr(defaults, name) for name in MODEL_FLAGS}


def build_parser() -> argparse.ArgumentParser:
    """The flags. Those of the run and of the model have no default here (argparse leaves
    them out when not given), so that --resume can tell a flag given again from one left
    out; settle_flags fills them in."""
    run, model = RUN_DEFAULTS, model_defaults()
    parser = argparse.ArgumentParser(
        description="Pretrain the GPT on the stories for a time budget. The run folder is "
                    "RUNS_DIR/pretrain[-rope][-bpe]; it holds ckpt.pt and log.jsonl.",
        epilog="Repeatable runs: under the time budget the learning rate at each step depends on how fast the "
               "steps went, so runs differ. With --decay-steps the schedule is in steps, and a run is repeatable: "
               "stopped early (--max-steps, --minutes, Ctrl-C) and continued with --resume, it gives the weights "
               "and losses of the unbroken run (bit for bit on the CPU, with the same number of processes), e.g. "
               "`--decay-steps 40 --max-steps 20`, then `--resume --max-steps 40`, equals "
               "`--decay-steps 40 --max-steps 40`. "
               "Runs unchanged under torchrun --nproc_per_node=N (DistributedDataParallel: NCCL on GPUs, "
               "gloo on the CPU); --batch-size is then per process. Ctrl-C saves the checkpoint and exits; "
               "a second Ctrl-C stops at once without saving.")
    S = argparse.SUPPRESS
    parser.add_argument("--rope", action="store_true", help="rotary position embeddings instead of a learned table")
    parser.add_argument("--bpe", action="store_true",
                        help="train on the BPE tokens (data/train-bpe.bin, from `python data.py --bpe`) "
                             "instead of the word-level ones (data/train.bin, from `python data.py`)")
    parser.add_argument("--minutes", type=float, default=S,
                        help=f"the run's time budget, counting the time before a --resume; without --decay-steps "
                             f"the learning rate decays over it (default {run['minutes']})")
    parser.add_argument("--max-steps", type=int, default=S,
                        help="stop after this many steps in all (with --resume too), if that comes before the end "
                             "of the budget; it does not change the learning rate's schedule (see --decay-steps)")
    parser.add_argument("--decay-steps", type=int, default=S,
                        help="the learning rate's cosine reaches --min-lr at this step, and stays there: a schedule "
                             "in steps, which makes the run repeatable and a stopped run resume exactly "
                             "(default: it decays over the time budget instead)")
    parser.add_argument("--batch-size", type=int, default=S,
                        help=f"windows of context tokens per step, per process (default {run['batch_size']})")
    parser.add_argument("--lr", type=float, default=S, help=f"the peak learning rate, AdamW (default {run['lr']:g})")
    parser.add_argument("--min-lr", type=float, default=S,
                        help=f"the learning rate at the end of the schedule (default {run['min_lr']:g})")
    parser.add_argument("--warmup-steps", type=int, default=S,
                        help=f"steps of linear warmup (default {run['warmup_steps']})")
    parser.add_argument("--n-layer", type=int, default=S, help=f"transformer blocks (default {model['n_layer']})")
    parser.add_argument("--n-head", type=int, default=S, help=f"attention heads per block (default {model['n_head']})")
    parser.add_argument("--n-embd", type=int, default=S,
                        help=f"width of the residual stream (default {model['n_embd']})")
    parser.add_argument("--context", type=int, default=S,
                        help=f"tokens the model sees at once (default {model['context']})")
    parser.add_argument("--dropout", type=float, default=S, help=f"dropout rate (default {model['dropout']})")
    parser.add_argument("--eval-interval", type=int, default=S,
                        help=f"steps between held-out losses; a checkpoint is saved at each one, and at the end "
                             f"(default {run['eval_interval']})")
    parser.add_argument("--eval-batches", type=int, default=S,
                        help=f"held-out batches per evaluation (default {run['eval_batches']})")
    parser.add_argument("--log-interval", type=int, default=S,
                        help=f"steps between progress lines (default {run['log_interval']})")
    parser.add_argument("--resume", action="store_true",
                        help="continue the run in the run folder from its checkpoint: its model, optimizer, step, "
                             "random state and flags (a flag given again replaces the run's, except the model's "
                             "size); without it, a run folder that holds a checkpoint is an error")
    parser.add_argument("--overwrite", action="store_true", help="start again, replacing the run folder's checkpoint")
    parser.add_argument("--device", default=None, help="cuda, mps or cpu (default: the first of them that is available)")
    parser.add_argument("--compile", action="store_true",
                        help="compile the model with torch.compile (the first steps then wait for the compiler). "
                             "Off by default: it has not been measured on a GPU yet (see tools/gpu_check.sh), and on "
                             "the CPU it only adds the wait")
    parser.add_argument("--seed", type=int, default=S,
                        help=f"random seed of the initial weights and of the training windows (a process's "
                             f"windows: seed + 1000 x its rank) (default {run['seed']})")
    parser.add_argument("--data-dir", type=Path, default=data.DATA_DIR, help="the data folder that data.py wrote")
    parser.add_argument("--runs-dir", type=Path, default=RUNS_DIR, help="where run folders go")
    return parser


def flag_error(given: dict) -> tuple | None:
    """(the flag, what is wrong with it) for the first of the run's and the model's flags
    in given (a dict by dest name) whose value makes no sense; None when all do. A flag
    not in given is not checked."""
    positive = ["batch_size", "n_layer", "n_head", "n_embd", "context", "eval_interval", "eval_batches",
                "log_interval", "decay_steps"]
    for name in positive:
        if given.get(name) is not None and given[name] < 1:
            return name, f"must be at least 1, got {given[name]}"
    if "minutes" in given and not given["minutes"] > 0:
        return "minutes", f"must be positive, got {given['minutes']}"
    if given.get("max_steps") is not None and given["max_steps"] < 0:
        return "max_steps", f"must be 0 or more, got {given['max_steps']}"
    if given.get("warmup_steps", 0) < 0 or not given.get("lr", 1) > 0 or given.get("min_lr", 0) < 0 \
            or given.get("min_lr", 0) > given.get("lr", math.inf):
        return "lr", "need --warmup-steps >= 0 and 0 <= --min-lr <= --lr, with --lr > 0"
    return None


def check_args(parser, args):
    """The flags' values that make no sense; a flag not given yet (see settle_flags) is
    not checked."""
    error = flag_error(vars(args))
    if error is not None:
        name, what = error
        parser.error(what if what.startswith("need ") else f"--{name.replace('_', '-')} {what}")
    if args.resume and args.overwrite:
        parser.error("--resume and --overwrite do not go together")


def check_resumable(checkpoint: dict, device):
    """Raise ValueError, naming the field, unless the checkpoint holds everything a
    resumed run takes from it, each of the right kind and in range: what load_checkpoint
    checks (the step, losses, optimizer and extra, if there), that they are there, and
    extra's own fields, which this script wrote (elapsed time, tokens, flags, random
    state). A checkpoint from before the random state was kept has none, and is fine."""
    def wrong(field, what):
        raise ValueError(f"the checkpoint's {field} {what}")

    for field in ("step", "losses", "optimizer", "extra"):
        if field not in checkpoint:
            wrong(field, "is missing: pretrain.py writes it, and a run cannot continue without it "
                         "(--overwrite starts again)")
    losses = checkpoint["losses"]
    if type(losses) is not dict or any(type(losses.get(k)) is not list for k in ("step", "train", "valid")) \
            or not len(losses["step"]) == len(losses["train"]) == len(losses["valid"]):
        wrong("losses", f"must be a dict of three lists of one length, step, train and valid, got {losses!r:.60}")
    if not all(type(s) is int and s >= 0 for s in losses["step"]) or None in losses["valid"]:
        wrong("losses", "must hold steps (ints of at least 0) and a held-out loss at each")
    extra = checkpoint["extra"]
    for field, ok, what in (("elapsed_s", lambda v: type(v) in (int, float) and math.isfinite(v) and v >= 0,
                             "a number of seconds of at least 0"),
                            ("tokens", lambda v: type(v) is int and v >= 0, "an int of at least 0"),
                            ("args", lambda v: type(v) is dict, "a dict of the run's flags")):
        if field not in extra:
            wrong(f"extra.{field}", "is missing (--overwrite starts again)")
        if not ok(extra[field]):
            wrong(f"extra.{field}", f"must be {what}, got {extra[field]!r:.60}")
    saved_args = {name: extra["args"][name] for name in RUN_DEFAULTS if name in extra["args"]}
    for name, value in saved_args.items():
        number = name in ("minutes", "lr", "min_lr")  # the flags of type float; the others are ints
        if not (type(value) in ((int, float) if number else (int,))
                or (value is None and RUN_DEFAULTS[name] is None)):
            wrong(f"extra.args.{name}", f"must be {'a number' if number else 'an int'}, got {value!r:.60}")
    error = flag_error(saved_args)
    if error is not None:
        wrong(f"extra.args.{error[0]}", error[1])
    check_random_state(extra.get("random"), device, wrong)


def check_random_state(saved, device, wrong):
    """extra.random, as random_state wrote it: a list of generator states per generator,
    one per process, each a uint8 tensor the generator takes (the windows' on the CPU,
    dropout's on this device)."""
    if saved is None:
        return
    if type(saved) is not dict:
        wrong("extra.random", f"must be a dict of the windows' and dropout's generator states, got {saved!r:.60}")
    sizes = {"windows": torch.Generator().get_state().numel(), "dropout": dropout_generator_state(device).numel()}
    for which, size in sizes.items():
        states = saved.get(which) or []
        if type(states) is not list:
            wrong(f"extra.random.{which}", f"must be a list of generator states, got {states!r:.60}")
        for r, state in enumerate(states):
            if not (isinstance(state, torch.Tensor) and state.dtype == torch.uint8 and state.dim() == 1
                    and state.numel() == size):
                got = f"{state.dtype} of shape {tuple(state.shape)}" if isinstance(state, torch.Tensor) else repr(state)
                wrong(f"extra.random.{which}", f"[{r}] is not the state of a generator on {device} "
                                               f"(a uint8 tensor of {size} bytes), got {got:.60}")


def settle_flags(parser, args, saved_args, config, say):
    """Fill in the run's and the model's flags that were not given: from the checkpoint on
    --resume (saved_args, its config), else the defaults. On --resume a run flag given
    again replaces the run's, and says so; a model flag must agree with the checkpoint."""
    if config is not None:
        for name in MODEL_FLAGS:
            if name in vars(args) and getattr(args, name) != getattr(config, name):
                parser.exit(1, f"{parser.prog}: error: --resume: --{name.replace('_', '-')} {getattr(args, name)}, "
                               f"but the run's model has {getattr(config, name)}: a resumed run keeps its model "
                               "(--overwrite starts again)\n")
            setattr(args, name, getattr(config, name))
    else:
        for name, value in model_defaults().items():
            vars(args).setdefault(name, value)
    for name, default in RUN_DEFAULTS.items():
        if saved_args is not None and name in saved_args:
            if name in vars(args) and getattr(args, name) != saved_args[name]:
                say(f"--resume: --{name.replace('_', '-')} {getattr(args, name)} replaces the run's {saved_args[name]}")
            vars(args).setdefault(name, saved_args[name])
        vars(args).setdefault(name, default)
    check_args(parser, args)


# ---------------------------------------------------------------------------------------
# Processes and devices


def setup_processes(device_name):
    """(rank, world size, device). Under torchrun (WORLD_SIZE set), joins the process group:
    NCCL with a GPU per process, gloo on the CPU."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    device = pick_device(device_name)
    if world == 1:
        return 0, 1, device
    rank, local_rank = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
    device_type = torch.device(device).type
    if device_type == "cuda":
        device = f"cuda:{local_rank}"
        torch.cuda.set_device(device)
        backend = "nccl"
    elif device_type == "cpu":
        backend = "gloo"
        # The processes share the cores: one thread each per share, or they fight over them.
        local_world = int(os.environ.get("LOCAL_WORLD_SIZE", world))
        torch.set_num_threads(max(1, (os.cpu_count() or 1) // local_world))
    else:
        raise ValueError(f"torchrun needs CUDA or the CPU; {device!r} has no DistributedDataParallel backend")
    dist.init_process_group(backend)
    return rank, world, device


def agree(values, device):
    """The largest of each number across processes: every rank then decides alike (elapsed
    time, which sets the learning rate and the end; whether any of them was interrupted)."""
    if not dist.is_initialized():
        return list(values)
    t = torch.tensor(values, dtype=torch.float64, device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.tolist()


def average(value, device):
    """The mean of value across processes."""
    if not dist.is_initialized():
        return value
    t = torch.tensor([value], dtype=torch.float64, device=device)
    dist.all_reduce(t)
    return t.item() / dist.get_world_size()


# ---------------------------------------------------------------------------------------
# Training pieces


def get_batch(tokens, batch_size, context, generator, device):
    """batch_size random windows of context tokens, and the same shifted by one."""
    starts = torch.randint(len(tokens) - context, (batch_size,), generator=generator).tolist()
    rows = np.stack([tokens[s:s + context + 1] for s in starts]).astype(np.int64)
    xy = torch.from_numpy(rows)
    x, y = xy[:, :-1], xy[:, 1:]
    if torch.device(device).type == "cuda":
        return x.pin_memory().to(device, non_blocking=True), y.pin_memory().to(device, non_blocking=True)
    return x.to(device), y.to(device)


def learning_rate(step, elapsed, args):
    """Linear warmup over the first steps, then a cosine from --lr down to --min-lr as the
    schedule runs out: --decay-steps steps if given (the same at a step in every run),
    else the time budget (it depends on how fast the steps went)."""
    if step < args.warmup_steps:
        return args.lr * (step + 1) / args.warmup_steps
    progress = step / args.decay_steps if args.decay_steps else elapsed / (args.minutes * 60)
    return args.min_lr + 0.5 * (args.lr - args.min_lr) * (1 + math.cos(math.pi * min(progress, 1.0)))


def make_optimizer(model, lr, device):
    """AdamW; weight decay on the matrices and the embedding, not on biases and norms."""
    decay = [p for p in model.parameters() if p.dim() >= 2]
    rest = [p for p in model.parameters() if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": WEIGHT_DECAY}, {"params": rest, "weight_decay": 0.0}]
    fused = torch.device(device).type == "cuda"
    return torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.95), fused=fused)


@torch.no_grad()
def held_out_loss(model, eval_x, eval_y, rank, world, autocast, device):
    """Mean loss over the held-out batches; the processes share them out and add up."""
    model.eval()
    total, count = 0.0, 0
    for k in range(rank, len(eval_x), world):
        with autocast:
            _, loss = model(eval_x[k].to(device), eval_y[k].to(device))
        total, count = total + loss.item(), count + 1
    model.train()
    if dist.is_initialized():
        t = torch.tensor([total, count], dtype=torch.float64, device=device)
        dist.all_reduce(t)
        total, count = t.tolist()
    return total / count


def weights_hash(model) -> str:
    h = hashlib.sha256()
    for name, t in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(t.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


# ---------------------------------------------------------------------------------------
# What each process holds that the checkpoint must keep: its random state, its weights


def gather(t: torch.Tensor, device) -> list:
    """Every process's tensor t (the same shape and dtype in each), in rank order, on the
    CPU; rank 0 writes the checkpoint, so it needs them all."""
    if not dist.is_initialized():
        return [t.cpu().clone()]
    t = t.to(device)
    parts = [torch.empty_like(t) for _ in range(dist.get_world_size())]
    dist.all_gather(parts, t)
    return [p.cpu() for p in parts]


def dropout_generator_state(device) -> torch.Tensor:
    """The state of the generator that dropout draws from: the device's default one."""
    device_type = torch.device(device).type
    if device_type == "cuda":
        return torch.cuda.get_rng_state(device)
    if device_type == "mps":
        return torch.mps.get_rng_state()
    return torch.get_rng_state()


def set_dropout_generator_state(device, state):
    device_type = torch.device(device).type
    if device_type == "cuda":
        torch.cuda.set_rng_state(state, device)
    elif device_type == "mps":
        torch.mps.set_rng_state(state)
    else:
        torch.set_rng_state(state)


def random_state(windows: torch.Generator, device) -> dict:
    """Every process's random state, for the checkpoint: plain uint8 tensors, a list of
    one per rank for each generator."""
    return {"windows": gather(windows.get_state(), device), "dropout": gather(dropout_generator_state(device), device)}


def restore_random_state(saved, rank, step, seed, device) -> torch.Generator:
    """This process's generator of training windows, and its dropout generator set, as the
    checkpoint left them (saved, from random_state). A rank the checkpoint has no state
    for (a run resumed with more processes, or a checkpoint from before the state was
    kept) draws windows from seed + 1000 * rank + step, and takes rank 0's dropout state
    (every process's is the same: they all draw alike)."""
    windows = torch.Generator()
    saved = saved or {}
    saved_windows, saved_dropout = saved.get("windows") or [], saved.get("dropout") or []
    if rank < len(saved_windows):
        windows.set_state(saved_windows[rank].cpu())
    else:
        windows.manual_seed(seed + 1000 * rank + step)
    if saved_dropout:
        set_dropout_generator_state(device, saved_dropout[rank if rank < len(saved_dropout) else 0].cpu())
    return windows


def weights_hashes(model, device) -> list:
    """Every process's hash of its weights, in rank order: DistributedDataParallel keeps
    them identical, and the checkpoints check it."""
    digest = bytes.fromhex(weights_hash(model))
    parts = gather(torch.tensor(list(digest), dtype=torch.uint8), device)
    return [bytes(p.tolist()).hex() for p in parts]


class Interrupt:
    """Ctrl-C and SIGTERM set a flag that the loop reads after each step; a second Ctrl-C
    stops at once."""

    def __init__(self):
        self.flag = False
        self.old = {}

    def __enter__(self):
        for sig in (signal.SIGINT, signal.SIGTERM):
            self.old[sig] = signal.signal(sig, self.handle)
        return self

    def handle(self, signum, frame):
        if self.flag and signum == signal.SIGINT:
            # Exit here, wherever the loop is, without unwinding it (no traceback). The
            # checkpoint on disk is still whole: saves are atomic, and a temporary file
            # that a save cut short leaves is removed by the next run. os.write to the
            # stderr descriptor, as the loop may be inside a print to the same stream.
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except (OSError, RuntimeError, ValueError):
                    pass
            os.write(2, b"\nSIGINT again: stopped at once, without saving\n")
            os._exit(130)
        self.flag = True
        print(f"\n{signal.Signals(signum).name}: saving a checkpoint after this step "
              "(Ctrl-C again to stop without saving)", file=sys.stderr, flush=True)

    def __exit__(self, *exc):
        for sig, handler in self.old.items():
            signal.signal(sig, handler)
        return False


def fmt_time(seconds):
    seconds = int(seconds)
    return f"{seconds // 60}:{seconds % 60:02d}"


# ---------------------------------------------------------------------------------------


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    check_args(parser, args)
    try:
        rank, world, device = setup_processes(args.device)
    except ValueError as e:
        parser.exit(1, f"{parser.prog}: error: {e}\n")
    try:
        result = pretrain(parser, args, rank, world, device)
        if dist.is_initialized():
            dist.barrier()  # no rank leaves while another is still inside a collective
        return result
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()


def pretrain(parser, args, rank, world, device):
    """Start or resume the run, then step until the budget, --max-steps or a signal ends
    it, evaluating and saving a checkpoint every --eval-interval steps and at the end."""
    run = start_run(parser, args, rank, world, device)
    budget = args.minutes * 60
    start, start_step = time.time(), run.step
    window_start, window_steps, window_loss = time.time(), 0, 0.0
    last_eval_step = run.step if args.resume else None  # a resumed run was evaluated where it stopped
    diverged = False
    with Interrupt() as interrupt:
        while True:
            # Every process decides alike: on the slowest one's clock, and on any one's signal.
            elapsed, stop_signal, diverged = agree(
                [run.elapsed_before + time.time() - start, float(interrupt.flag), float(diverged)], device)
            if diverged:
                run.say(f"step {run.step}: the loss is not finite; stopping without saving (try a smaller --lr)")
                return 1
            out_of_budget = elapsed >= budget or (args.max_steps is not None and run.step >= args.max_steps)
            done = out_of_budget or stop_signal > 0
            if (run.step % args.eval_interval == 0 or done) and last_eval_step != run.step:
                if not evaluate_and_checkpoint(run, elapsed, budget, save=run.step > 0 or done):
                    return 1
                last_eval_step = run.step
                window_start = time.time()  # the speed is the training's, not the evaluation's
            if done:
                break

            lr = learning_rate(run.step, elapsed, args)
            loss = train_step(run, lr)
            diverged = not math.isfinite(loss)
            window_loss, window_steps = window_loss + loss, window_steps + 1
            if run.step % args.log_interval == 0:
                log_progress(run, lr, window_loss / window_steps, window_steps, time.time() - window_start,
                             run.elapsed_before + time.time() - start, budget)
                window_start, window_steps, window_loss = time.time(), 0, 0.0
    return finish_run(run, start_step, bool(stop_signal), run.elapsed_before + time.time() - start, budget)


# ---------------------------------------------------------------------------------------
# The steps of train: start or resume, a training step, evaluate and checkpoint, finish


class Run:
    """What a run holds from step to step: set up by start_run, changed by train_step
    (the step, the tokens, the training loss since the last evaluation) and by
    evaluate_and_checkpoint (the losses)."""

    def __init__(self, **fields):
        self.__dict__.update(fields)

    def log(self, record):
        if self.master:
            with open(self.log_path, "a", encoding="utf-8") as f:
                f.write(json.dumps(record) + "\n")


def start_run(parser, args, rank, world, device) -> Run:
    """Load the data; make a new model or load the run's checkpoint (--resume); settle the
    flags; set up the optimizer, DistributedDataParallel, --compile and the random state;
    print what the run is. Every error here is one line and exit 1."""
    def fail(message):
        parser.exit(1, f"{parser.prog}: error: {message}\n")

    master = rank == 0
    say = print if master else (lambda *a, **k: None)
    name = run_name(args.rope, args.bpe)
    run_dir = args.runs_dir / name
    ckpt_path = run_dir / CHECKPOINT_NAME
    tokenizer, train_tokens, valid_tokens = load_data(fail, args)
    if ckpt_path.exists() and not (args.resume or args.overwrite):
        fail(f"{ckpt_path} exists: --resume continues that run, --overwrite starts again")

    if args.resume:
        model, checkpoint = resume_checkpoint(fail, args, ckpt_path, tokenizer, device)
        extra = checkpoint["extra"]
        step, losses = checkpoint["step"], checkpoint["losses"]
        elapsed_before, tokens_seen = float(extra["elapsed_s"]), extra["tokens"]
        settle_flags(parser, args, extra["args"], model.config, say)
    else:
        checkpoint, step, losses, elapsed_before, tokens_seen = None, 0, {"step": [], "train": [], "valid": []}, 0.0, 0
        settle_flags(parser, args, None, None, say)
        model = new_model(fail, args, len(tokenizer), device)
    config = model.config
    for split, tokens in (("train", train_tokens), ("valid", valid_tokens)):
        if len(tokens) <= config.context:
            fail(f"{split} has {len(tokens):,} tokens, too few for a window of {config.context} and the token "
                 "after it: use a smaller --context or more stories")

    model.train()
    optimizer = make_optimizer(model, args.lr, device)
    if checkpoint is not None:
        try:
            optimizer.load_state_dict(checkpoint["optimizer"])
        except (ValueError, KeyError, TypeError, RuntimeError) as e:
            fail(f"--resume: {ckpt_path}: the checkpoint's optimizer does not fit the model: {e}")
    raw_model = model
    model, autocast = for_training(model, args.compile, world, device)

    # Held-out windows: drawn once, so every evaluation measures the same text.
    g = torch.Generator().manual_seed(args.seed)
    eval_x, eval_y = zip(*(get_batch(valid_tokens, args.batch_size, config.context, g, "cpu")
                           for _ in range(args.eval_batches)))
    # Training windows: each process draws its own, from a generator of its own; a resumed
    # run's carry on where the checkpoint left them (and so does dropout's).
    saved_random = checkpoint["extra"].get("random") if checkpoint is not None else None
    train_gen = restore_random_state(saved_random, rank, step, args.seed, device)
    if master:
        run_dir.mkdir(parents=True, exist_ok=True)
        remove_stale_temporaries(ckpt_path)

    run = Run(args=args, rank=rank, world=world, device=device, master=master, say=say, name=name,
              ckpt_path=ckpt_path, log_path=run_dir / "log.jsonl", tokenizer=tokenizer, train_tokens=train_tokens,
              model=model, raw_model=raw_model, optimizer=optimizer, autocast=autocast, eval_x=eval_x,
              eval_y=eval_y, train_gen=train_gen, step=step, losses=losses, elapsed_before=elapsed_before,
              tokens_seen=tokens_seen, tokens_per_step=args.batch_size * config.context * world,
              interval_loss=0.0, interval_steps=0, flops_per_token=raw_model.flops_per_token(),
              peak_flops=peak_flops(device))
    say_what_runs(run, len(train_tokens), len(valid_tokens), saved_random)
    run.log({"event": "start", "step": step, "world": world, "device": device, "params": raw_model.num_params(),
             "config": vars(config), "flops_per_token": run.flops_per_token, "peak_flops": run.peak_flops[0],
             "compile": args.compile, "time": time.strftime("%Y-%m-%dT%H:%M:%S")})
    return run


def load_data(fail, args):
    """(tokenizer, training tokens, held-out tokens) from the data folder data.py wrote."""
    try:
        tokenizer = data.load_tokenizer(args.data_dir, args.bpe)
        train_tokens = data.load_tokens(data.token_source(args.data_dir, "train", args.bpe), tokenizer)
        valid_tokens = data.load_tokens(data.token_source(args.data_dir, "valid", args.bpe), tokenizer)
    except data.DataError as e:
        fail(e)
    return tokenizer, train_tokens, valid_tokens


def new_model(fail, args, vocab_size, device) -> GPT:
    """A new model of the flags' size, initialised from --seed (alike in every process)."""
    try:
        config = GPTConfig(vocab_size=vocab_size, context=args.context, n_layer=args.n_layer, n_head=args.n_head,
                           n_embd=args.n_embd, dropout=args.dropout, rope=args.rope)
    except (ValueError, TypeError) as e:
        fail(e)
    torch.manual_seed(args.seed)
    return GPT(config).to(device)


def for_training(model, compile_it, world, device):
    """(what the training steps call, autocast): the model wrapped for several processes
    and compiled if asked; bfloat16 autocast and TF32 on CUDA, float32 elsewhere."""
    device_type = torch.device(device).type
    if world > 1:
        model = torch.nn.parallel.DistributedDataParallel(
            model, device_ids=[torch.device(device).index] if device_type == "cuda" else None)
    if compile_it:
        model = torch.compile(model)  # compiles at the first step, inside the time budget
    if device_type != "cuda":
        return model, nullcontext()
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    return model, torch.autocast("cuda", dtype=torch.bfloat16)


def resume_checkpoint(fail, args, ckpt_path, tokenizer, device):
    """(model, checkpoint) of the run to continue, every field of it checked first."""
    if not ckpt_path.exists():
        fail(f"--resume: no checkpoint at {ckpt_path}; start the run without --resume")
    try:
        model, ckpt_tokenizer, checkpoint = load_checkpoint(ckpt_path, device=device)
    except (ValueError, TypeError, ImportError) as e:
        fail(f"--resume: {e}")
    try:
        check_resumable(checkpoint, device)
    except ValueError as e:
        fail(f"--resume: {ckpt_path}: {e}")
    if ckpt_tokenizer.state() != tokenizer.state():
        fail(f"--resume: {ckpt_path} was trained with another tokenizer than {args.data_dir}'s (the data was "
             "made again since); --overwrite starts again")
    return model, checkpoint


def say_what_runs(run, n_train, n_valid, saved_random):
    """The run's banner: the model, the data, the processes, the schedule, the speed's yardstick."""
    args, config, say = run.args, run.raw_model.config, run.say
    say(f"{run.name}: {run.raw_model.num_params() / 1e6:.2f} M parameters, vocabulary {config.vocab_size:,} "
        f"({kind(run.tokenizer)}), context {config.context}, {config.n_layer} layers, {config.n_head} heads, "
        f"{config.n_embd} wide, rope={config.rope}")
    say(f"  {n_train:,} training tokens, {n_valid:,} held out; {run.world} process(es) on "
        f"{run.device}, {run.tokens_per_step:,} tokens per step; budget {fmt_time(args.minutes * 60)}"
        + (f" or {args.max_steps} steps" if args.max_steps is not None else "")
        + (f"; learning rate decaying over {args.decay_steps} steps" if args.decay_steps else "")
        + (f"; resuming at step {run.step} ({fmt_time(run.elapsed_before)} done)" if args.resume else ""))
    say(f"  {run.flops_per_token / 1e6:,.1f} M FLOPs per token (6N + 12 x layers x width x context, PaLM's "
        f"appendix B); MFU " + ("against " if run.peak_flops[0] else "") + run.peak_flops[1]
        + ("; torch.compile on" if args.compile else ""))
    saved_world = len((saved_random or {}).get("windows") or [])
    if args.resume and saved_world != run.world:
        say(f"  the run was trained by {saved_world or 'an unknown number of'} process(es), this is {run.world}: "
            f"process r continues process r's training windows where the checkpoint has them, and any other "
            f"draws new ones from --seed, its rank and the step (repeatable, but not the run that "
            f"{saved_world or 'the old number of'} process(es) would have made)")


def train_step(run, lr) -> float:
    """One step of AdamW at learning rate lr on a batch of fresh windows; its loss."""
    for group in run.optimizer.param_groups:
        group["lr"] = lr
    x, y = get_batch(run.train_tokens, run.args.batch_size, run.raw_model.config.context, run.train_gen, run.device)
    with run.autocast:
        _, loss = run.model(x, y)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(run.model.parameters(), GRAD_CLIP)
    run.optimizer.step()
    run.optimizer.zero_grad(set_to_none=True)
    run.step += 1
    run.tokens_seen += run.tokens_per_step
    loss_value = loss.item()
    run.interval_loss += loss_value
    run.interval_steps += 1
    return loss_value


def mfu(run, tokens_per_s):
    """Model FLOPs utilisation: the share of the devices' peak that the model's own FLOPs
    (run.flops_per_token, at the speed measured) take up; None where there is no peak."""
    peak = run.peak_flops[0]
    return None if peak is None else run.flops_per_token * tokens_per_s / (peak * run.world)


def log_progress(run, lr, loss, steps, seconds, elapsed, budget):
    """The progress line and its record: the mean loss of the last steps, their speed and MFU."""
    speed = steps * run.tokens_per_step / max(seconds, 1e-9)
    utilisation = mfu(run, speed)
    shown = f"{utilisation:.1%}" if utilisation is not None else run.peak_flops[1].split(":")[0]
    run.say(f"step {run.step} | loss {loss:.4f} | lr {lr:.2e} | {speed:,.0f} tokens/s | MFU {shown} | "
            f"{fmt_time(elapsed)} of {fmt_time(budget)}", flush=True)
    run.log({"event": "train", "step": run.step, "loss": loss, "lr": lr, "tokens_per_s": speed, "mfu": utilisation,
             "elapsed_s": round(elapsed, 3), "tokens": run.tokens_seen})


def evaluate_and_checkpoint(run, elapsed, budget, save) -> bool:
    """The held-out loss (and the training loss since the last one), recorded in the
    losses; then, if save, the checkpoint. False when the processes' weights differ."""
    valid = held_out_loss(run.raw_model, run.eval_x, run.eval_y, run.rank, run.world, run.autocast, run.device)
    train_loss = average(run.interval_loss / run.interval_steps, run.device) if run.interval_steps else None
    run.interval_loss, run.interval_steps = 0.0, 0
    run.losses["step"].append(run.step)
    run.losses["train"].append(train_loss)
    run.losses["valid"].append(valid)
    run.say(f"step {run.step}: held-out loss {valid:.4f}"
            + (f", training loss {train_loss:.4f}" if train_loss is not None else "")
            + f" ({fmt_time(elapsed)} of {fmt_time(budget)})", flush=True)
    run.log({"event": "eval", "step": run.step, "valid_loss": valid, "train_loss": train_loss,
             "elapsed_s": round(elapsed, 3), "tokens": run.tokens_seen})
    return save_run(run, elapsed) if save else True


def save_run(run, elapsed) -> bool:
    """Save the checkpoint (every process takes part: rank 0 gathers their random state
    and checks their weights); False, saving nothing, when the weights differ."""
    random = random_state(run.train_gen, run.device)
    record = {"event": "checkpoint", "step": run.step}
    if run.world > 1:
        hashes = weights_hashes(run.raw_model, run.device)
        record["weights_sha256"] = hashes
        if len(set(hashes)) > 1:
            run.log(record)
            run.say(f"step {run.step}: the processes hold different weights (hashes "
                    f"{', '.join(h[:12] for h in hashes)}): DistributedDataParallel did not keep them alike; "
                    "stopping without saving", flush=True)
            return False
    if run.master:
        extra = {"elapsed_s": elapsed, "tokens": run.tokens_seen, "run": run.name, "random": random,
                 "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(run.args).items()}}
        save_checkpoint(run.ckpt_path, run.raw_model, run.tokenizer, run.step, run.losses, run.optimizer, extra)
    run.log(record)
    return True


def finish_run(run, start_step, interrupted, elapsed, budget) -> int:
    """The last record and message; the exit code (130 when a signal stopped the run)."""
    args = run.args
    run.log({"event": "stop", "step": run.step, "elapsed_s": round(elapsed, 3), "tokens": run.tokens_seen,
             "interrupted": interrupted})
    if args.resume and run.step == start_step and not interrupted:
        run.say(f"nothing to do: the run has had its {fmt_time(budget)}"
                + (f" or {args.max_steps} steps" if args.max_steps is not None else "")
                + "; give a larger --minutes or --max-steps to train it further")
        return 0
    if interrupted:
        run.say(f"interrupted at step {run.step}: checkpoint saved to {run.ckpt_path}; --resume continues", flush=True)
        return 130
    run.say(f"done: {run.step} steps, {run.tokens_seen:,} tokens in {fmt_time(elapsed)}; held-out loss "
            f"{run.losses['valid'][-1]:.4f}; checkpoint {run.ckpt_path}", flush=True)
    return 0


def exit_now(code):
    """Exit with code, and under torchrun without Python's clean-up at exit.

    DistributedDataParallel keeps the gloo process group alive past
    destroy_process_group, so its worker threads outlive main(). One of them may still
    be releasing the last collective's tensors while the interpreter shuts down; that
    needs the GIL, which a thread can no longer take then, and the process died with
    SIGABRT ("terminate called without an active exception") in 2 or 3 runs in 10
    (pytorch/pytorch#179291 describes the same crash). Every rank has finished and
    written what it writes by now, so os._exit loses nothing.
    """
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    exit_now(main())
