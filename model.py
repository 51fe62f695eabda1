"""The GPT: a decoder-only transformer in the nanoGPT mould, and its checkpoints.

Token embeddings tied to the output head, pre-norm blocks, and positions either from a
learned table or from rotary embeddings (rope=True), which turn each head's queries and
keys by an angle that grows with the position, so attention sees how far apart two
tokens are. Generation keeps a KV cache while the prompt and the story fit the context
window; past it, each token comes from a fresh pass over the last `context` tokens, which
is exact. Rotary models may instead slide the cache a token at a time (sliding_cache=True):
faster, but approximate past the window.

A checkpoint holds the weights, the config, the tokenizer's state, the step and the
losses as plain data, so torch.load(..., weights_only=True) reads it without running code.
"""
import math
import os
import pickle
import re
from collections import OrderedDict
from dataclasses import asdict, dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from bpe.atomic_writes import atomic_write
from tokenizer import Tokenizer, tokenizer_from_state

# The file a run folder keeps its checkpoint in: load_checkpoint("runs/pretrain-rope-bpe")
# reads runs/pretrain-rope-bpe/ckpt.pt.
CHECKPOINT_NAME = "ckpt.pt"


@dataclass
class GPTConfig:
    vocab_size: int
    context: int = 256  # the most tokens attention looks at
    n_layer: int = 6
    n_head: int = 6
    n_embd: int = 384
    dropout: float = 0.0
    rope: bool = False  # rotary position embeddings instead of a learned table

    def __post_init__(self):
        for name in ("vocab_size", "context", "n_layer", "n_head", "n_embd"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"GPTConfig.{name} must be an int of at least 1, got {value!r}")
        if not isinstance(self.rope, bool):
            raise TypeError(f"GPTConfig.rope must be True or False, got {self.rope!r}")
        if isinstance(self.dropout, bool) or not isinstance(self.dropout, (int, float)) or not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"GPTConfig.dropout must be a number in [0, 1), got {self.dropout!r}")
        if self.n_embd % self.n_head:
            raise ValueError(f"n_embd ({self.n_embd}) must be a multiple of n_head ({self.n_head})")
        if self.rope and (self.n_embd // self.n_head) % 2:
            raise ValueError(f"rotary embeddings turn pairs of numbers: the head size ({self.n_embd // self.n_head}) must be even")


class KVCache:
    """Each layer's keys and values of the tokens seen so far, for generating a token at a
    time. `seen` counts every token fed in, including any slid out of the window, as the
    rotary angle of the next token depends on its absolute position."""

    def __init__(self, n_layer: int):
        self.keys = [None] * n_layer
        self.values = [None] * n_layer
        self.seen = 0

    def __len__(self) -> int:
        return 0 if self.keys[0] is None else self.keys[0].shape[2]

    def append(self, layer: int, k, v):
        """Add new keys and values (B, heads, T, head size) to a layer's; returns all of them."""
        if self.keys[layer] is not None:
            k = torch.cat([self.keys[layer], k], dim=2)
            v = torch.cat([self.values[layer], v], dim=2)
        self.keys[layer], self.values[layer] = k, v
        return k, v

    def keep_last(self, n: int):
        """Drop all but the last n tokens of every layer: the window slides."""
        self.keys = [k[:, :, -n:] for k in self.keys]
        self.values = [v[:, :, -n:] for v in self.values]


def rotate(x, cos, sin):
    """Turn each pair (x[i], x[i + half]) of a head's numbers by that pair's angle."""
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    # The angles stay float32 (bfloat16's 8 bits would put an angle near 200 off by up to a
    # radian); the result goes back to x's type, so under autocast q, k and v agree.
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1).type_as(x)


class Attention(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.n_head = config.n_head
        self.qkv = nn.Linear(config.n_embd, 3 * config.n_embd)
        self.proj = nn.Linear(config.n_embd, config.n_embd)
        self.dropout = config.dropout
        self.resid_dropout = nn.Dropout(config.dropout)

    def forward(self, x, rotary=None, cache=None, layer=0):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        # (B, T, C) -> (B, heads, T, head size)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
        if rotary is not None:
            q, k = rotate(q, *rotary), rotate(k, *rotary)
        if cache is not None:
            k, v = cache.append(layer, k, v)  # keys are cached already turned by their position
        past = k.shape[2] - T  # tokens cached before these
        if past == 0:
            mask, causal = None, T > 1
        elif T == 1:
            mask, causal = None, False  # the newest token may look at everything cached
        else:
            # New token i sits at position past + i, and sees the keys up to it.
            mask = torch.ones(T, past + T, dtype=torch.bool, device=x.device).tril(diagonal=past)
            causal = False
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal,
                                           dropout_p=self.dropout if self.training else 0.0)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.proj(y))


class MLP(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.fc = nn.Linear(config.n_embd, 4 * config.n_embd)
        self.proj = nn.Linear(4 * config.n_embd, config.n_embd)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x):
        return self.dropout(self.proj(F.gelu(self.fc(x))))


class Block(nn.Module):
    """Pre-norm: each part reads a normalised copy and adds its result to the stream."""

    def __init__(self, config: GPTConfig):
        super().__init__()
        self.ln1 = nn.LayerNorm(config.n_embd)
        self.attn = Attention(config)
        self.ln2 = nn.LayerNorm(config.n_embd)
        self.mlp = MLP(config)

    def forward(self, x, rotary=None, cache=None, layer=0):
        x = x + self.attn(self.ln1(x), rotary, cache, layer)
        x = x + self.mlp(self.ln2(x))
        return x


class GPT(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        if not isinstance(config, GPTConfig):
            raise TypeError(f"config must be a GPTConfig, not {type(config).__name__}")
        self.config = config
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.wpe = None if config.rope else nn.Embedding(config.context, config.n_embd)
        self.drop = nn.Dropout(config.dropout)
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.n_layer))
        self.ln_f = nn.LayerNorm(config.n_embd)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        # Tied: the same table turns ids into vectors and vectors back into scores per id.
        self.lm_head.weight = self.wte.weight
        if config.rope:
            head = config.n_embd // config.n_head
            # One angular speed per pair of numbers in a head, from 1 down to 1/10000.
            inv_freq = 1.0 / (10000 ** (torch.arange(0, head, 2, dtype=torch.float32) / head))
            self.register_buffer("inv_freq", inv_freq, persistent=False)  # derived, not learned
        self.apply(self._init_weights)
        # The projections back into the residual stream add up over the layers: start them
        # smaller so the stream's size does not grow with depth.
        for name, p in self.named_parameters():
            if name.endswith("proj.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))

    @staticmethod
    def _init_weights(module):
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def num_params(self) -> int:
        """Every parameter, the tied embedding counted once."""
        return sum(p.numel() for p in self.parameters())

    def flops_per_token(self) -> int:
        """Training FLOPs per token (forward and backward) on full windows of the context:
        6N + 12 * layers * width * context, the estimate of the PaLM paper's appendix B
        (Chowdhery et al., 2022), which model FLOPs utilisation is defined by.

        6N: each weight of a matrix product does a multiply and an add per token going
        forward, and twice that going back. N counts the tied embedding once, as the
        output head's product (a lookup costs nothing, but the head is a full product),
        and leaves out the learned position table, which is only looked up. The second
        term is attention's own work, which has no weights: scores and the weighted sum
        of values, 2 * 2 * context * width per token and layer forward, times 3 with the
        backward pass, counting the whole square as PaLM does, not its causal half. Norms,
        biases, softmax and the rotary turn are left out: small, and not matrix products."""
        n = self.num_params() - (self.wpe.weight.numel() if self.wpe is not None else 0)
        c = self.config
        return 6 * n + 12 * c.n_layer * c.n_embd * c.context

    def forward(self, idx, targets=None, cache=None):
        """Logits (B, T, vocab) for ids idx (B, T), and the mean cross-entropy against
        targets (B, T) when given. With a cache, idx continues the tokens cached."""
        if not isinstance(idx, torch.Tensor) or idx.dim() != 2 or idx.dtype not in (torch.long, torch.int32):
            raise ValueError(f"idx must be a (batch, time) tensor of int64 ids, got {_describe(idx)}")
        B, T = idx.shape
        start = 0 if cache is None else cache.seen  # absolute position of idx[:, 0]
        past = 0 if cache is None else len(cache)
        if T == 0:
            raise ValueError("idx must hold at least one token")
        if self.config.rope:
            window = past + T  # a sliding cache counts tokens gone, so bound what attention sees
        else:
            window = start + T  # a learned table has a row per position and no more
        if window > self.config.context:
            raise ValueError(f"{window} tokens do not fit the context of {self.config.context}")

        x = self.wte(idx)
        rotary = None
        if self.config.rope:
            positions = torch.arange(start, start + T, device=idx.device, dtype=torch.float32)
            angles = torch.outer(positions, self.inv_freq)
            rotary = (angles.cos(), angles.sin())
        else:
            x = x + self.wpe(torch.arange(start, start + T, device=idx.device))
        x = self.drop(x)
        for layer, block in enumerate(self.blocks):
            x = block(x, rotary, cache, layer)
        if cache is not None:
            cache.seen += T
        logits = self.lm_head(self.ln_f(x))

        loss = None
        if targets is not None:
            if not isinstance(targets, torch.Tensor) or targets.shape != idx.shape:
                raise ValueError(f"targets must be a tensor shaped like idx {tuple(idx.shape)}, got {_describe(targets)}")
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.reshape(-1).long())
        return logits, loss

    def generate(self, idx, max_new_tokens: int, temperature: float = 1.0, top_k: int | None = None,
                 *, sliding_cache: bool = False):
        """Yield max_new_tokens ids, one int at a time, continuing the ids idx (a list, or
        a tensor of shape (T,) or (1, T)). temperature 0 picks the likeliest token; top_k
        samples among the k likeliest only. Bad arguments raise here, not at the first
        token.

        Each token is drawn from what a fresh pass over the last `context` ids gives, for
        both kinds of positions. While the ids fit the window, a KV cache keeps each layer's
        keys and values, so a step runs only the newest token; past the window, each step
        runs the last `context` ids again without a cache.

        sliding_cache=True (rotary models only) keeps the cache past the window instead and
        drops its oldest key and value at each step: faster, as a step stays one token's
        work, but approximate. The distances between positions are right, yet from the
        second layer up the keys and values kept were computed while tokens that have since
        slid out were still in view, so they differ from a fresh pass's. Learned positions
        have nothing to slide to (the table has no row past `context`, and the positions
        added into the kept keys would all be one off), so there it raises ValueError.
        """
        ids = self._prompt_ids(idx)
        if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or max_new_tokens < 0:
            raise ValueError(f"max_new_tokens must be an int >= 0, got {max_new_tokens!r}")
        if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or not temperature >= 0:
            raise ValueError(f"temperature must be a number >= 0, got {temperature!r}")
        if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1):
            raise ValueError(f"top_k must be None or an int >= 1, got {top_k!r}")
        if not isinstance(sliding_cache, bool):
            raise TypeError(f"sliding_cache must be True or False, got {sliding_cache!r}")
        if sliding_cache and not self.config.rope:
            raise ValueError("sliding_cache=True needs a rotary model (rope=True): learned positions "
                             "have no row past the context window to slide to")
        return self._generate(ids, max_new_tokens, temperature, top_k, sliding_cache)

    @torch.no_grad()
    def _generate(self, ids, max_new_tokens, temperature, top_k, sliding_cache):
        if max_new_tokens == 0:
            return
        context = self.config.context
        device = self.wte.weight.device
        ids = ids[-context:]  # a prompt longer than the window: its end is what counts
        cache = KVCache(self.config.n_layer)
        logits, _ = self(torch.tensor([ids], device=device), cache=cache)
        for n in range(max_new_tokens):
            next_id = self._pick(logits[0, -1], temperature, top_k)
            yield next_id
            if n == max_new_tokens - 1:
                break
            ids.append(next_id)
            if len(ids) <= context:
                # Nothing has left the window: every key and value cached is what a fresh
                # pass would compute.
                logits, _ = self(torch.tensor([[next_id]], device=device), cache=cache)
            elif sliding_cache:
                cache.keep_last(context - 1)
                logits, _ = self(torch.tensor([[next_id]], device=device), cache=cache)
            else:
                # The window moved on, and from the second layer up every kept token's key
                # and value changes, as the token that left was in each one's view. Only a
                # rotary model's first layer could be reused (its keys and values depend on
                # the token and its turn alone, and scores on distances between turns), and
                # that saves one projection of n_layer layers: not worth a second path. So
                # the whole window runs again.
                logits, _ = self(torch.tensor([ids[-context:]], device=device))

    def _prompt_ids(self, idx) -> list:
        if isinstance(idx, torch.Tensor):
            if idx.dim() == 2 and idx.shape[0] == 1:
                idx = idx[0]
            if idx.dim() != 1 or idx.dtype.is_floating_point or idx.dtype == torch.bool:
                raise ValueError(f"generate takes the ids of one prompt, shape (T,) or (1, T), got {_describe(idx)}")
            idx = idx.tolist()
        ids = list(idx)
        if not ids:
            raise ValueError("the prompt must hold at least one token (end of text starts a story)")
        for i in ids:
            if isinstance(i, bool) or not isinstance(i, int):
                raise TypeError(f"prompt ids must be ints, got {i!r}")
            if not 0 <= i < self.config.vocab_size:
                raise ValueError(f"token id {i} is outside the vocabulary of {self.config.vocab_size} tokens")
        return ids

    @staticmethod
    def _pick(logits, temperature, top_k) -> int:
        if temperature == 0:
            return int(torch.argmax(logits))
        logits = logits.float() / temperature
        if top_k is not None and top_k < logits.numel():
            kth = torch.topk(logits, top_k).values[-1]
            logits = logits.masked_fill(logits < kth, float("-inf"))
        return int(torch.multinomial(F.softmax(logits, dim=-1), num_samples=1))


def _describe(x) -> str:
    if isinstance(x, torch.Tensor):
        return f"a {x.dtype} tensor of shape {tuple(x.shape)}"
    return f"{type(x).__name__}"


def pick_device(name: str | None = None) -> str:
    """The device to run on: `name` when given, else CUDA, then Apple's MPS, then the CPU."""
    if name:
        try:
            device_type = torch.device(name).type
        except (RuntimeError, TypeError) as e:
            raise ValueError(f"not a device: {name!r} ({e})") from None
        if device_type == "cuda" and not torch.cuda.is_available():
            raise ValueError(f"device {name!r} asked for, but CUDA is not available here")
        if device_type == "mps" and not torch.backends.mps.is_available():
            raise ValueError(f"device {name!r} asked for, but MPS is not available here")
        return name
    if torch.cuda.is_available():
        return "cuda"
    if torch.backends.mps.is_available():
        return "mps"
    return "cpu"


# Peak dense bfloat16 tensor-core throughput, in FLOP/s, by the name CUDA reports: the
# denominator of model FLOPs utilisation. NVIDIA's datasheets quote bf16 "with sparsity";
# the dense figure is half of it, and is the one a transformer's training reaches for.
# The first pattern that matches the device's name wins, so the PCIe and NVL cards come
# before the SXM modules they share a name with.
PEAK_BF16_FLOPS = [
    (r"H100.*PCIe", 756e12, "H100 PCIe: 1,513 TFLOPS with sparsity, NVIDIA H100 datasheet"),
    (r"H100.*NVL", 835e12, "H100 NVL: 1,671 TFLOPS with sparsity, NVIDIA H100 datasheet"),
    (r"H100", 989e12, "H100 SXM: 1,979 TFLOPS with sparsity, NVIDIA H100 datasheet"),
    (r"H200.*NVL", 835e12, "H200 NVL: 1,671 TFLOPS with sparsity, NVIDIA H200 datasheet"),
    (r"H200", 989e12, "H200 SXM: 1,979 TFLOPS with sparsity, NVIDIA H200 datasheet"),
    (r"A100", 312e12, "A100 SXM or PCIe: 624 TFLOPS with sparsity, NVIDIA A100 datasheet"),
    (r"\bL4\b", 121e12, "L4: 242 TFLOPS with sparsity, NVIDIA L4 datasheet"),
]


def peak_flops(device) -> tuple:
    """(peak dense bf16 FLOP/s of one such device, or None, and what it is): None on a
    CPU or MPS ("n/a": there is no tensor-core peak to measure against) and on a GPU the
    table does not know ("unknown")."""
    if torch.device(device).type != "cuda":
        return None, "n/a"
    name = torch.cuda.get_device_name(device)
    for pattern, flops, source in PEAK_BF16_FLOPS:
        if re.search(pattern, name, re.IGNORECASE):
            return flops, f"{name}, {flops / 1e12:,.0f} TFLOPS dense bf16 ({source})"
    return None, f"unknown: no peak figure for {name}"


# ---------------------------------------------------------------------------------------
# Checkpoints


def _check_plain(value, where: str):
    """Raise TypeError unless value is data that weights_only loading accepts, so that a
    checkpoint that could not be read back is never written. Types are checked exactly:
    numpy's float64 is a float to isinstance, but weights_only refuses to unpickle it."""
    if value is None or type(value) in (bool, int, float, str) or isinstance(value, torch.Tensor):
        return
    if type(value) in (list, tuple):
        for k, item in enumerate(value):
            _check_plain(item, f"{where}[{k}]")
        return
    if type(value) in (dict, OrderedDict):
        for key, item in value.items():
            if type(key) not in (str, int):
                raise TypeError(f"{where} has a key {key!r} of type {type(key).__name__}: keys must be str or int")
            _check_plain(item, f"{where}[{key!r}]")
        return
    raise TypeError(f"{where} is a {type(value).__name__}: a checkpoint holds only tensors, numbers, "
                    "strings, lists and dicts (convert it, e.g. float(x) or x.tolist())")


def save_checkpoint(path, model: GPT, tokenizer: Tokenizer, step: int, losses, optimizer=None, extra=None):
    """Write a checkpoint atomically (bpe.atomic_writes.atomic_write: a temporary file beside
    path, flushed to disk, then renamed over it), so a crash leaves the old checkpoint or
    the new one, never half of one."""
    model = getattr(model, "_orig_mod", model)  # torch.compile wraps the model
    if not isinstance(model, GPT):
        raise TypeError(f"model must be a GPT, not {type(model).__name__}")
    if not isinstance(tokenizer, Tokenizer):
        raise TypeError(f"tokenizer must be a Tokenizer, not {type(tokenizer).__name__}")
    if len(tokenizer) != model.config.vocab_size:
        raise ValueError(f"the tokenizer has {len(tokenizer)} tokens but the model's vocabulary is {model.config.vocab_size}")
    if isinstance(step, bool) or not isinstance(step, int):
        raise TypeError(f"step must be an int, got {step!r}")
    checkpoint = {
        "model": model.state_dict(),
        "config": asdict(model.config),
        "tokenizer": tokenizer.state(),
        "step": step,
        "losses": losses,
    }
    if optimizer is not None:
        checkpoint["optimizer"] = optimizer.state_dict()
    if extra is not None:
        if not isinstance(extra, dict):
            raise TypeError(f"extra must be a dict, not {type(extra).__name__}")
        checkpoint["extra"] = extra
    for key in ("losses", "optimizer", "extra"):
        _check_plain(checkpoint.get(key), key)

    # atomic_write gives the file the usual permissions (the umask's), as any file the
    # user writes, rather than the owner-only ones of a temporary file.
    with atomic_write(path) as tmp:
        torch.save(checkpoint, tmp)


def checkpoint_path(path) -> str:
    """path itself, or the checkpoint inside it when path is a run folder."""
    path = os.fspath(path)
    if os.path.isdir(path):
        path = os.path.join(path, CHECKPOINT_NAME)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"no checkpoint at {path}")
    return path


def _is_int(value) -> bool:
    return type(value) is int  # bool is an int to isinstance, and a step of True is no step


def _is_number(value) -> bool:
    return type(value) in (int, float)


def _check_losses(losses) -> str | None:
    """What is wrong with losses (a list of numbers or None, or a dict of such lists by
    name), or None when nothing is."""
    lists = losses.items() if type(losses) is dict else [(None, losses)]
    for name, values in lists:
        if type(values) is not list:
            return f"must be a list, or a dict of lists, of numbers, got {losses!r:.60}"
        for k, v in enumerate(values):
            if v is not None and not _is_number(v):
                return f"{'' if name is None else f'[{name!r}]'}[{k}] is {v!r:.40}, not a number"
    return None


def check_checkpoint_fields(checkpoint: dict):
    """Raise ValueError, naming the field, for a value of the wrong kind among the fields
    every checkpoint may hold besides the model: step, losses, optimizer and extra (see
    save_checkpoint). Each may be missing, as a reader of the model needs none of them;
    pretrain.py --resume, which needs them all, checks that they are there."""
    def wrong(field, what):
        raise ValueError(f"the checkpoint's {field} {what}")

    if "step" in checkpoint and not (_is_int(checkpoint["step"]) and checkpoint["step"] >= 0):
        wrong("step", f"must be an int of at least 0, got {checkpoint['step']!r:.60}")
    if "losses" in checkpoint and (why := _check_losses(checkpoint["losses"])):
        wrong("losses", why)
    if "optimizer" in checkpoint:
        optimizer = checkpoint["optimizer"]
        if type(optimizer) is not dict or type(optimizer.get("state")) is not dict \
                or type(optimizer.get("param_groups")) is not list:
            wrong("optimizer", f"must be an optimizer's state_dict (a dict with a dict 'state' and a list "
                               f"'param_groups'), got {optimizer!r:.60}")
        for k, group in enumerate(optimizer["param_groups"]):
            if type(group) is not dict or type(group.get("params")) is not list \
                    or not all(_is_int(i) for i in group["params"]):
                wrong("optimizer", f"has param_groups[{k}] = {group!r:.60}, not a dict with a list of ints 'params'")
        for key, state in optimizer["state"].items():
            if type(state) is not dict:
                wrong("optimizer", f"has state[{key!r}] = {state!r:.60}, not a dict")
    if "extra" in checkpoint and type(checkpoint["extra"]) is not dict:
        wrong("extra", f"must be a dict, got {checkpoint['extra']!r:.60}")


def load_checkpoint(path, device="cpu"):
    """(model, tokenizer, checkpoint) from a checkpoint file or a run folder. The model is
    on device, in eval mode. Reading never runs code: weights_only=True unpickles only
    tensors and plain data, and anything else is refused with a ValueError."""
    path = checkpoint_path(path)
    try:
        checkpoint = torch.load(path, map_location=device, weights_only=True)
    except pickle.UnpicklingError as e:
        raise ValueError(f"{path} holds objects other than tensors and plain data; they were not loaded, "
                         "as unpickling them could run code (was it written by save_checkpoint?)") from e
    except Exception as e:  # torch reports a damaged file as RuntimeError, OSError, EOFError...
        why = str(e).splitlines()[0] if str(e) else ""
        raise ValueError(f"{path} is not a readable checkpoint: truncated or damaged ({type(e).__name__}: {why})") from e
    if not isinstance(checkpoint, dict) or not {"model", "config", "tokenizer"} <= checkpoint.keys():
        raise ValueError(f"{path} is not a checkpoint: expected a dict with model, config and tokenizer")
    try:
        check_checkpoint_fields(checkpoint)
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from None
    try:
        config = GPTConfig(**checkpoint["config"])
        tokenizer = tokenizer_from_state(checkpoint["tokenizer"])
    except (TypeError, ValueError, ImportError) as e:
        raise type(e)(f"{path}: {e}") from e
    if len(tokenizer) != config.vocab_size:
        raise ValueError(f"{path}: the tokenizer has {len(tokenizer)} tokens but the model's vocabulary is {config.vocab_size}")
    model = GPT(config)
    try:
        model.load_state_dict(checkpoint["model"])
    except (RuntimeError, TypeError, AttributeError) as e:
        raise ValueError(f"{path}: the weights do not fit the config: {e}") from e
    model.to(device)
    model.eval()
    return model, tokenizer, checkpoint
