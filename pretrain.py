"""Pretrain the GPT on the stories for a time budget.

    python pretrain.py                       # words, learned positions: runs/pretrain
    python pretrain.py --rope --bpe          # BPE tokens, rotary embeddings: runs/pretrain-rope-bpe
    python pretrain.py --rope --bpe --resume # continue that run where it stopped
    torchrun --nproc_per_node=4 pretrain.py --rope --bpe   # the same on 4 GPUs

Each kind of model has a run folder of its own, named from the flags (runs/pretrain,
runs/pretrain-rope, runs/pretrain-bpe, runs/pretrain-rope-bpe), holding ckpt.pt (weights,
config, tokenizer, optimizer, step; see model.save_checkpoint) and log.jsonl (one JSON
object per line: the losses, learning rate and speed as training goes).

Under torchrun, every process trains on its own random windows and DistributedDataParallel
averages the gradients, so all of them hold the same weights; only rank 0 prints and writes.
Ctrl-C (or SIGTERM) finishes the step, saves the checkpoint and exits; --resume continues.
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
from model import CHECKPOINT_NAME, GPT, GPTConfig, load_checkpoint, pick_device, save_checkpoint
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

# For the tests, through the environment, so no flag a user sees exists only for them:
#   PRETRAIN_HASH_DIR=DIR        each rank writes DIR/weights-rank<r>.txt, a hash of its final weights
#   PRETRAIN_PAUSE_BEFORE_RENAME=S   each checkpoint save sleeps S seconds between writing the
#                                temporary file and renaming it over ckpt.pt (to kill it there)
HASH_DIR_ENV = "PRETRAIN_HASH_DIR"
PAUSE_ENV = "PRETRAIN_PAUSE_BEFORE_RENAME"


def run_name(rope: bool, bpe: bool) -> str:
    return "pretrain" + ("-rope" if rope else "") + ("-bpe" if bpe else "")


def build_parser() -> argparse.ArgumentParser:
    defaults = GPTConfig(vocab_size=1)
    parser = argparse.ArgumentParser(
        description="Pretrain the GPT on the stories for a time budget. The run folder is "
                    "RUNS_DIR/pretrain[-rope][-bpe]; it holds ckpt.pt and log.jsonl.",
        epilog="Runs unchanged under torchrun --nproc_per_node=N (DistributedDataParallel: NCCL on GPUs, "
               "gloo on the CPU); --batch-size is then per process. Ctrl-C saves the checkpoint and exits.")
    parser.add_argument("--rope", action="store_true", help="rotary position embeddings instead of a learned table")
    parser.add_argument("--bpe", action="store_true",
                        help="train on the BPE tokens (data/train-bpe.bin, from `python data.py --bpe`) "
                             "instead of the word-level ones (data/train.bin, from `python data.py`)")
    parser.add_argument("--minutes", type=float, default=MINUTES,
                        help="the run's time budget, counting the time before a --resume; the learning rate "
                             "decays over it")
    parser.add_argument("--max-steps", type=int, default=None,
                        help="stop after this many steps in all (with --resume too), if that comes first")
    parser.add_argument("--batch-size", type=int, default=BATCH_SIZE, help="windows of context tokens per step, per process")
    parser.add_argument("--lr", type=float, default=LEARNING_RATE, help="the peak learning rate (AdamW)")
    parser.add_argument("--min-lr", type=float, default=MIN_LR, help="the learning rate at the end of the budget")
    parser.add_argument("--warmup-steps", type=int, default=WARMUP_STEPS, help="steps of linear warmup")
    parser.add_argument("--n-layer", type=int, default=defaults.n_layer, help="transformer blocks")
    parser.add_argument("--n-head", type=int, default=defaults.n_head, help="attention heads per block")
    parser.add_argument("--n-embd", type=int, default=defaults.n_embd, help="width of the residual stream")
    parser.add_argument("--context", type=int, default=defaults.context, help="tokens the model sees at once")
    parser.add_argument("--dropout", type=float, default=defaults.dropout, help="dropout rate")
    parser.add_argument("--eval-interval", type=int, default=EVAL_INTERVAL,
                        help="steps between held-out losses; a checkpoint is saved at each one, and at the end")
    parser.add_argument("--eval-batches", type=int, default=EVAL_BATCHES, help="held-out batches per evaluation")
    parser.add_argument("--log-interval", type=int, default=LOG_INTERVAL, help="steps between progress lines")
    parser.add_argument("--resume", action="store_true",
                        help="continue the run in the run folder from its checkpoint (its model size, optimizer "
                             "and step); without it, a run folder that holds a checkpoint is an error")
    parser.add_argument("--overwrite", action="store_true", help="start again, replacing the run folder's checkpoint")
    parser.add_argument("--device", default=None, help="cuda, mps or cpu (default: the first of them that is available)")
    parser.add_argument("--seed", type=int, default=SEED, help="random seed (each process adds its rank)")
    parser.add_argument("--data-dir", type=Path, default=data.DATA_DIR, help="the data folder that data.py wrote")
    parser.add_argument("--runs-dir", type=Path, default=RUNS_DIR, help="where run folders go")
    return parser


def check_args(parser, args):
    positive = ["batch_size", "n_layer", "n_head", "n_embd", "context", "eval_interval", "eval_batches", "log_interval"]
    for name in positive:
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}")
    if not args.minutes > 0:
        parser.error(f"--minutes must be positive, got {args.minutes}")
    if args.max_steps is not None and args.max_steps < 0:
        parser.error(f"--max-steps must be 0 or more, got {args.max_steps}")
    if args.warmup_steps < 0 or not args.lr > 0 or not 0 <= args.min_lr <= args.lr:
        parser.error("need --warmup-steps >= 0 and 0 <= --min-lr <= --lr, with --lr > 0")
    if args.resume and args.overwrite:
        parser.error("--resume and --overwrite do not go together")


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
    kind = torch.device(device).type
    if kind == "cuda":
        device = f"cuda:{local_rank}"
        torch.cuda.set_device(device)
        backend = "nccl"
    elif kind == "cpu":
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


def learning_rate(step, progress, args):
    """Linear warmup over the first steps, then a cosine from --lr down to --min-lr as the
    budget (time or steps, whichever is further along) runs out."""
    if step < args.warmup_steps:
        return args.lr * (step + 1) / args.warmup_steps
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


class Interrupt:
    """Ctrl-C and SIGTERM set a flag that the loop reads after each step; a second Ctrl-C
    stops at once (the checkpoint on disk is still whole: saves are atomic)."""

    def __init__(self):
        self.flag = False
        self.old = {}

    def __enter__(self):
        for sig in (signal.SIGINT, signal.SIGTERM):
            self.old[sig] = signal.signal(sig, self.handle)
        return self

    def handle(self, signum, frame):
        if self.flag and signum == signal.SIGINT:
            raise KeyboardInterrupt
        self.flag = True
        print(f"\n{signal.Signals(signum).name}: saving a checkpoint after this step "
              "(Ctrl-C again to stop without saving)", file=sys.stderr, flush=True)

    def __exit__(self, *exc):
        for sig, handler in self.old.items():
            signal.signal(sig, handler)
        return False


def save(path, model, tokenizer, step, losses, optimizer, extra):
    """model.save_checkpoint, with the tests' pause before the rename when asked for."""
    pause = float(os.environ.get(PAUSE_ENV, "0") or 0)
    if not pause:
        save_checkpoint(path, model, tokenizer, step, losses, optimizer, extra)
        return
    # save_checkpoint writes a temporary file, then os.replace()s it over path: pausing in
    # os.replace stops it exactly between the two, where the test kills the process.
    real_replace = os.replace

    def slow_replace(src, dst, *a, **k):
        print(f"checkpoint: temporary file written, pausing {pause:g} s before the rename", flush=True)
        time.sleep(pause)
        return real_replace(src, dst, *a, **k)

    os.replace = slow_replace
    try:
        save_checkpoint(path, model, tokenizer, step, losses, optimizer, extra)
    finally:
        os.replace = real_replace


def remove_stale_temporaries(folder: Path):
    """A save killed before its rename leaves its temporary file: nothing reads it."""
    for tmp in folder.glob(f".{CHECKPOINT_NAME}.*.tmp"):
        tmp.unlink(missing_ok=True)


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
        result = train(parser, args, rank, world, device)
        if dist.is_initialized():
            dist.barrier()  # no rank leaves while another is still inside a collective
        return result
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()


def train(parser, args, rank, world, device):
    master = rank == 0
    say = print if master else (lambda *a, **k: None)
    name = run_name(args.rope, args.bpe)
    run_dir = args.runs_dir / name
    ckpt_path = run_dir / CHECKPOINT_NAME
    log_path = run_dir / "log.jsonl"

    try:
        tokenizer = data.load_tokenizer(args.data_dir, args.bpe)
        vocab = len(tokenizer)
        train_tokens = data.load_tokens(data.token_file(args.data_dir, "train", args.bpe), tokenizer)
        valid_tokens = data.load_tokens(data.token_file(args.data_dir, "valid", args.bpe), tokenizer)
    except data.DataError as e:
        parser.exit(1, f"{parser.prog}: error: {e}\n")

    if ckpt_path.exists() and not (args.resume or args.overwrite):
        parser.exit(1, f"{parser.prog}: error: {ckpt_path} exists: --resume continues that run, "
                       "--overwrite starts again\n")
    step, elapsed_before, tokens_seen = 0, 0.0, 0
    losses = {"step": [], "train": [], "valid": []}
    checkpoint = None
    if args.resume:
        if not ckpt_path.exists():
            parser.exit(1, f"{parser.prog}: error: --resume: no checkpoint at {ckpt_path}; "
                           f"start the run without --resume\n")
        try:
            model, ckpt_tokenizer, checkpoint = load_checkpoint(ckpt_path, device=device)
        except (ValueError, TypeError, ImportError) as e:
            parser.exit(1, f"{parser.prog}: error: --resume: {e}\n")
        if ckpt_tokenizer.state() != tokenizer.state():
            parser.exit(1, f"{parser.prog}: error: --resume: {ckpt_path} was trained with another tokenizer "
                           f"than {args.data_dir}'s (the data was made again since); --overwrite starts again\n")
        config = model.config
        step = int(checkpoint.get("step", 0))
        extra = checkpoint.get("extra") or {}
        elapsed_before = float(extra.get("elapsed_s", 0.0))
        tokens_seen = int(extra.get("tokens", 0))
        saved = checkpoint.get("losses")
        if isinstance(saved, dict) and all(isinstance(saved.get(k), list) for k in losses):
            losses = saved
    else:
        try:
            config = GPTConfig(vocab_size=vocab, context=args.context, n_layer=args.n_layer, n_head=args.n_head,
                               n_embd=args.n_embd, dropout=args.dropout, rope=args.rope)
        except (ValueError, TypeError) as e:
            parser.exit(1, f"{parser.prog}: error: {e}\n")
        torch.manual_seed(args.seed)  # the same initial weights in every process
        model = GPT(config).to(device)
    context = config.context
    for split, tokens in (("train", train_tokens), ("valid", valid_tokens)):
        if len(tokens) <= context:
            parser.exit(1, f"{parser.prog}: error: {split} has {len(tokens):,} tokens, too few for a window of "
                           f"{context} and the token after it: use a smaller --context or more stories\n")

    model.train()
    optimizer = make_optimizer(model, args.lr, device)
    if checkpoint is not None and "optimizer" in checkpoint:
        optimizer.load_state_dict(checkpoint["optimizer"])
    raw_model = model
    if world > 1:
        cuda = torch.device(device).type == "cuda"
        model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[torch.device(device).index] if cuda else None)
    device_type = torch.device(device).type
    if device_type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    autocast = torch.autocast("cuda", dtype=torch.bfloat16) if device_type == "cuda" else nullcontext()

    # Held-out windows: drawn once, so every evaluation measures the same text.
    g = torch.Generator().manual_seed(args.seed)
    eval_x, eval_y = zip(*(get_batch(valid_tokens, args.batch_size, context, g, "cpu")
                           for _ in range(args.eval_batches)))
    # Training windows: each process draws its own, and a resumed run new ones.
    train_gen = torch.Generator().manual_seed(args.seed + 1000 * rank + step)

    budget = args.minutes * 60
    tokens_per_step = args.batch_size * context * world
    if master:
        run_dir.mkdir(parents=True, exist_ok=True)
        remove_stale_temporaries(run_dir)
    say(f"{name}: {raw_model.num_params() / 1e6:.2f} M parameters, vocabulary {vocab:,} ({kind(tokenizer)}), "
        f"context {context}, {config.n_layer} layers, {config.n_head} heads, {config.n_embd} wide, "
        f"rope={config.rope}")
    say(f"  {len(train_tokens):,} training tokens, {len(valid_tokens):,} held out; {world} process(es) on "
        f"{device}, {tokens_per_step:,} tokens per step; budget {fmt_time(budget)}"
        + (f" or {args.max_steps} steps" if args.max_steps is not None else "")
        + (f"; resuming at step {step} ({fmt_time(elapsed_before)} done)" if args.resume else ""))

    def log(record):
        if master:
            with open(log_path, "a", encoding="utf-8") as f:
                f.write(json.dumps(record) + "\n")

    def checkpoint_now(elapsed):
        if master:
            extra = {"elapsed_s": elapsed, "tokens": tokens_seen, "run": name,
                     "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}}
            save(ckpt_path, raw_model, tokenizer, step, losses, optimizer, extra)

    log({"event": "start", "step": step, "world": world, "device": device, "params": raw_model.num_params(),
         "config": vars(config), "time": time.strftime("%Y-%m-%dT%H:%M:%S")})

    start, start_step = time.time(), step
    window_start, window_steps, window_loss = time.time(), 0, 0.0
    interval_loss, interval_steps = 0.0, 0
    last_eval_step = step if args.resume else None  # a resumed run was evaluated where it stopped
    diverged = False
    with Interrupt() as interrupt:
        while True:
            elapsed, stop_signal, diverged = agree(
                [elapsed_before + time.time() - start, float(interrupt.flag), float(diverged)], device)
            if diverged:
                say(f"step {step}: the loss is not finite; stopping without saving (try a smaller --lr)")
                return 1
            out_of_budget = elapsed >= budget or (args.max_steps is not None and step >= args.max_steps)
            done = out_of_budget or stop_signal > 0
            if (step % args.eval_interval == 0 or done) and last_eval_step != step:
                valid = held_out_loss(raw_model, eval_x, eval_y, rank, world, autocast, device)
                train_loss = average(interval_loss / interval_steps, device) if interval_steps else None
                interval_loss, interval_steps = 0.0, 0
                losses["step"].append(step)
                losses["train"].append(train_loss)
                losses["valid"].append(valid)
                last_eval_step = step
                say(f"step {step}: held-out loss {valid:.4f}"
                    + (f", training loss {train_loss:.4f}" if train_loss is not None else "")
                    + f" ({fmt_time(elapsed)} of {fmt_time(budget)})", flush=True)
                log({"event": "eval", "step": step, "valid_loss": valid, "train_loss": train_loss,
                     "elapsed_s": round(elapsed, 3), "tokens": tokens_seen})
                if step > 0 or done:
                    checkpoint_now(elapsed)
                window_start = time.time()  # the speed is the training's, not the evaluation's
            if done:
                break

            progress = max(elapsed / budget, step / args.max_steps if args.max_steps else 0.0)
            lr = learning_rate(step, progress, args)
            for group in optimizer.param_groups:
                group["lr"] = lr
            x, y = get_batch(train_tokens, args.batch_size, context, train_gen, device)
            with autocast:
                _, loss = model(x, y)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), GRAD_CLIP)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            step += 1
            tokens_seen += tokens_per_step
            loss_value = loss.item()
            diverged = not math.isfinite(loss_value)
            interval_loss += loss_value
            interval_steps += 1
            window_loss += loss_value
            window_steps += 1
            if step % args.log_interval == 0:
                seconds = time.time() - window_start
                speed = window_steps * tokens_per_step / max(seconds, 1e-9)
                say(f"step {step} | loss {window_loss / window_steps:.4f} | lr {lr:.2e} | {speed:,.0f} tokens/s | "
                    f"{fmt_time(elapsed_before + time.time() - start)} of {fmt_time(budget)}", flush=True)
                log({"event": "train", "step": step, "loss": window_loss / window_steps, "lr": lr,
                     "tokens_per_s": speed, "elapsed_s": round(elapsed_before + time.time() - start, 3),
                     "tokens": tokens_seen})
                window_start, window_steps, window_loss = time.time(), 0, 0.0

    final_elapsed = elapsed_before + time.time() - start
    if os.environ.get(HASH_DIR_ENV):
        folder = Path(os.environ[HASH_DIR_ENV])
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"weights-rank{rank}.txt").write_text(weights_hash(raw_model) + "\n")
    log({"event": "stop", "step": step, "elapsed_s": round(final_elapsed, 3), "tokens": tokens_seen,
         "interrupted": bool(stop_signal)})
    if args.resume and step == start_step and not stop_signal:
        say(f"nothing to do: the run has had its {fmt_time(budget)}"
            + (f" or {args.max_steps} steps" if args.max_steps is not None else "")
            + "; give a larger --minutes or --max-steps to train it further")
        return 0
    if stop_signal:
        say(f"interrupted at step {step}: checkpoint saved to {ckpt_path}; --resume continues", flush=True)
        return 130
    say(f"done: {step} steps, {tokens_seen:,} tokens in {fmt_time(final_elapsed)}; held-out loss "
        f"{losses['valid'][-1]:.4f}; checkpoint {ckpt_path}", flush=True)
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
