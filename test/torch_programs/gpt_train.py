"""Train a small character GPT from token files on disk, the way nanoGPT-style scripts do.

The data are uint16 token ids in train.bin/val.bin read through np.memmap; batches are random windows stacked with
torch.stack. AdamW gets two parameter groups (weight decay for matrices, none for biases and norms), the rate follows
a warmup + cosine schedule set by hand on each group, gradients are clipped, a GradScaler(enabled=False) wraps the
backward as mixed-precision scripts do on CPU, and the run is checkpointed (model, optimizer, iteration), reloaded
into a new model and optimizer, and continued. Prints `RESULT {json}`.
"""

import inspect
import json
import math
import os
import tempfile
import time
from contextlib import nullcontext
from dataclasses import asdict, dataclass

import numpy as np
import torch
import torch.nn as nn
from torch.nn import functional as F


@dataclass
class Config:
    block_size: int = 16
    vocab_size: int = 12
    n_layer: int = 2
    n_head: int = 2
    n_embd: int = 32
    dropout: float = 0.0
    bias: bool = True


class SelfAttention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        assert cfg.n_embd % cfg.n_head == 0
        self.qkv = nn.Linear(cfg.n_embd, 3 * cfg.n_embd, bias=cfg.bias)
        self.proj = nn.Linear(cfg.n_embd, cfg.n_embd, bias=cfg.bias)
        self.drop = nn.Dropout(cfg.dropout)
        self.n_head, self.n_embd, self.dropout = cfg.n_head, cfg.n_embd, cfg.dropout
        causal = torch.tril(torch.ones(cfg.block_size, cfg.block_size))
        self.register_buffer("causal", causal.view(1, 1, cfg.block_size, cfg.block_size))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.qkv(x).split(self.n_embd, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.causal[:, :, :T, :T] == 0, float("-inf"))
        att = self.drop(F.softmax(att, dim=-1))
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.drop(self.proj(y))


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.ln_1 = nn.LayerNorm(cfg.n_embd, bias=cfg.bias)
        self.attn = SelfAttention(cfg)
        self.ln_2 = nn.LayerNorm(cfg.n_embd, bias=cfg.bias)
        self.mlp = nn.Sequential(
            nn.Linear(cfg.n_embd, 4 * cfg.n_embd, bias=cfg.bias),
            nn.GELU(),
            nn.Linear(4 * cfg.n_embd, cfg.n_embd, bias=cfg.bias),
            nn.Dropout(cfg.dropout),
        )

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.transformer = nn.ModuleDict(
            dict(
                wte=nn.Embedding(cfg.vocab_size, cfg.n_embd),
                wpe=nn.Embedding(cfg.block_size, cfg.n_embd),
                drop=nn.Dropout(cfg.dropout),
                h=nn.ModuleList([Block(cfg) for _ in range(cfg.n_layer)]),
                ln_f=nn.LayerNorm(cfg.n_embd, bias=cfg.bias),
            )
        )
        self.lm_head = nn.Linear(cfg.n_embd, cfg.vocab_size, bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # tied input and output embeddings
        self.apply(self._init_weights)
        for name, p in self.named_parameters():  # residual projections: scaled down by depth
            if name.endswith("attn.proj.weight") or name.endswith("mlp.2.weight"):
                torch.nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * cfg.n_layer))

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                torch.nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def num_params(self):
        return sum(p.numel() for p in self.parameters()) - self.transformer.wpe.weight.numel()

    def forward(self, idx, targets=None):
        b, t = idx.size()
        assert t <= self.cfg.block_size, f"sequence of {t} tokens, block size {self.cfg.block_size}"
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(pos))
        for block in self.transformer.h:
            x = block(x)
        x = self.transformer.ln_f(x)
        if targets is None:
            return self.lm_head(x[:, [-1], :]), None
        logits = self.lm_head(x)
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        return logits, loss

    def configure_optimizers(self, weight_decay, learning_rate, betas, device_type):
        params = {name: p for name, p in self.named_parameters() if p.requires_grad}
        decay = [p for p in params.values() if p.dim() >= 2]
        no_decay = [p for p in params.values() if p.dim() < 2]
        groups = [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
        print(f"decayed tensors: {len(decay)} ({sum(p.numel() for p in decay)} values), not: {len(no_decay)}")
        fused = "fused" in inspect.signature(torch.optim.AdamW).parameters and device_type == "cuda"
        extra = dict(fused=True) if fused else dict()
        return torch.optim.AdamW(groups, lr=learning_rate, betas=betas, **extra)


def write_tokens(folder, n_train=6000, n_val=1000):
    """A token stream with structure to learn: counting runs 'a b c ...' of random length, wrapped at the vocab."""
    rng = np.random.default_rng(1)
    out = []
    while len(out) < n_train + n_val:
        start, length = int(rng.integers(0, 12)), int(rng.integers(3, 9))
        out.extend((start + i) % 12 for i in range(length))
    data = np.array(out[: n_train + n_val], dtype=np.uint16)
    data[:n_train].tofile(os.path.join(folder, "train.bin"))
    data[n_train:].tofile(os.path.join(folder, "val.bin"))


def main():
    start = time.time()
    torch.manual_seed(1337)
    device, device_type = "cpu", "cpu"
    cfg = Config()
    batch_size, max_iters, eval_iters, warmup, lr_decay_iters = 8, 40, 4, 4, 40
    learning_rate, min_lr = 3e-3, 3e-4
    ctx = nullcontext() if device_type == "cpu" else torch.amp.autocast(device_type=device_type, dtype=torch.float16)
    scaler = torch.cuda.amp.GradScaler(enabled=False)
    folder = tempfile.mkdtemp()
    write_tokens(folder)

    def get_batch(split):
        data = np.memmap(os.path.join(folder, f"{split}.bin"), dtype=np.uint16, mode="r")
        ix = torch.randint(len(data) - cfg.block_size, (batch_size,))
        x = torch.stack([torch.from_numpy(data[i : i + cfg.block_size].astype(np.int64)) for i in ix])
        y = torch.stack([torch.from_numpy(data[i + 1 : i + 1 + cfg.block_size].astype(np.int64)) for i in ix])
        return x.to(device), y.to(device)

    def get_lr(it):
        if it < warmup:
            return learning_rate * (it + 1) / (warmup + 1)
        if it > lr_decay_iters:
            return min_lr
        ratio = (it - warmup) / (lr_decay_iters - warmup)
        return min_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (learning_rate - min_lr)

    @torch.no_grad()
    def estimate_loss(model):
        out = {}
        model.eval()
        for split in ("train", "val"):
            losses = torch.zeros(eval_iters)
            for k in range(eval_iters):
                X, Y = get_batch(split)
                with ctx:
                    _, loss = model(X, Y)
                losses[k] = loss.item()
            out[split] = losses.mean().item()
        model.train()
        return out

    def train(model, optimizer, first_iter, last_iter):
        X, Y = get_batch("train")
        for it in range(first_iter, last_iter):
            lr = get_lr(it)
            for group in optimizer.param_groups:
                group["lr"] = lr
            with ctx:
                _, loss = model(X, Y)
            X, Y = get_batch("train")  # the next batch, while this one's backward runs
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)
            norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad(set_to_none=True)
            if it % 20 == 0:
                print(f"iter {it}: loss {loss.item():.4f}, grad norm {float(norm):.3f}, lr {lr:.2e}")

    model = GPT(cfg).to(device)
    print(f"parameters: {model.num_params()}")
    optimizer = model.configure_optimizers(0.1, learning_rate, (0.9, 0.95), device_type)
    first = estimate_loss(model)
    train(model, optimizer, 0, max_iters // 2)
    middle = estimate_loss(model)
    fixed = get_batch("val")
    model.eval()
    with torch.no_grad():
        saved_loss = model(*fixed)[1].item()
    model.train()
    checkpoint = {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "model_args": asdict(cfg),
        "iter_num": max_iters // 2,
        "best_val_loss": middle["val"],
    }
    path = os.path.join(folder, "ckpt.pt")
    torch.save(checkpoint, path)

    checkpoint = torch.load(path, map_location=device)
    model = GPT(Config(**checkpoint["model_args"])).to(device)
    state_dict = checkpoint["model"]
    for k in list(state_dict):
        if k.startswith("_orig_mod."):  # keys of a compiled model
            state_dict[k[len("_orig_mod.") :]] = state_dict.pop(k)
    model.load_state_dict(state_dict)
    optimizer = model.configure_optimizers(0.1, learning_rate, (0.9, 0.95), device_type)
    optimizer.load_state_dict(checkpoint["optimizer"])
    model.eval()
    with torch.no_grad():
        reloaded_loss = model(*fixed)[1].item()
    model.train()
    print(f"loss of one batch at the checkpoint {saved_loss:.5f}, after reloading {reloaded_loss:.5f}")
    train(model, optimizer, checkpoint["iter_num"], max_iters)
    last = estimate_loss(model)
    print(f"train loss {first['train']:.4f} -> {last['train']:.4f}, val {first['val']:.4f} -> {last['val']:.4f}")
    result = {"first": first["val"], "last": last["val"], "saved": saved_loss, "reloaded": reloaded_loss}
    print("RESULT " + json.dumps({**result, "seconds": time.time() - start}))


if __name__ == "__main__":
    main()
