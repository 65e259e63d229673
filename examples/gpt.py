"""A GPT-2-style decoder with random (seeded) weights: token + position embeddings, pre-LayerNorm blocks of causal
multi-head self-attention and a GELU MLP, a final LayerNorm and an LM head tied to the token embedding. Generation
runs on a per-layer KV cache and samples with temperature and top-k.

python examples/gpt.py                                    # 32 tokens after the prompt 1 2 3 4 5 6 7 8
python examples/gpt.py --prompt 5 9 2 --tokens 64 --temperature 0.8 --top-k 20 --seed 1

The KV cache is preallocated: each layer holds two buffers (batch, heads, max_len, head_dim) of zeros, and every
step writes its new keys/values into the rows at its positions with `assign` (the whole buffer is rewritten as
where(written row, new, old): assign targets a buffer, not a slice). Attention then reads all max_len rows with a
mask hiding the rows not written yet. The current position, the step's token and the step's random number enter
as small tensors, never as Python constants, so every decode step builds the same graph and reuses the same
compiled kernels. That also makes the decode step a fixed sequence of kernels over fixed buffers, which TinyJit
captures once and then replays without building or scheduling any graph (`generate(..., jit=False)` runs it eagerly).
"""

from __future__ import annotations

import argparse
import math
import time
from dataclasses import dataclass

import numpy as np

from unigrad import Tensor, TinyJit, dtypes, nn
from unigrad.nn.state import get_parameters


@dataclass(frozen=True)
class GPTConfig:
    vocab_size: int = 512
    block_size: int = 128  # the longest sequence: size of the position embedding and of the KV cache
    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 128
    tie_weights: bool = True  # LM head = token embedding (as GPT-2); False gives a separate lm_head
    layer_norm_eps: float = 1e-5
    init_std: float = 0.02  # GPT-2's initialization: N(0, std) weights, zero biases


def _normal(*shape: int, std: float) -> Tensor:
    return Tensor.normal(*shape, mean=0.0, std=std)


def _zeros(*shape: int) -> Tensor:
    """A tensor with its own buffer of zeros (a lazy Tensor.zeros would be one node shared by every caller)."""
    return Tensor(np.zeros(shape, dtype=np.float32))


def _linear(n_in: int, n_out: int, std: float, bias: bool = True) -> nn.Linear:
    layer = nn.Linear(n_in, n_out, bias=bias)
    layer.weight = _normal(n_out, n_in, std=std)
    layer.bias = _zeros(n_out) if bias else None
    return layer


class CausalSelfAttention:
    def __init__(self, cfg: GPTConfig):
        d = cfg.n_embd
        self.n_head = cfg.n_head
        self.c_attn = _linear(d, 3 * d, cfg.init_std)  # q, k, v stacked along the output features
        self.c_proj = _linear(d, d, cfg.init_std / math.sqrt(2 * cfg.n_layer))  # GPT-2's scaled residual init
        self._cache_k: Tensor | None = None  # (B, H, max_len, hd); private names stay out of the state dict
        self._cache_v: Tensor | None = None
        self._caches: dict[tuple[int, ...], tuple[Tensor, Tensor]] = {}  # (k, v) by shape

    def reset_cache(self, batch: int, max_len: int, head_dim: int) -> None:
        """Zeroed caches of this shape. Each shape keeps its buffers (zeroed in place when used again): a captured
        decode step (TinyJit) reads and writes the buffers it was captured with."""
        shape = (batch, self.n_head, max_len, head_dim)
        if shape in self._caches:
            self._cache_k, self._cache_v = self._caches[shape]
            self._cache_k.assign(Tensor.zeros(*shape))
            self._cache_v.assign(Tensor.zeros(*shape))
            Tensor.realize(self._cache_k, self._cache_v)
        else:
            self._cache_k, self._cache_v = self._caches[shape] = (_zeros(*shape), _zeros(*shape))

    def __call__(self, x: Tensor, start_pos: Tensor | None = None) -> Tensor:
        """x (B, T, C) -> (B, T, C). Without start_pos: plain causal attention over x. With start_pos (an int32
        scalar tensor, the number of positions already cached): k and v go into the cache at start_pos...,
        and the queries attend to every cached position up to their own."""
        B, T, C = x.shape
        hd = C // self.n_head
        q, k, v = (t.reshape(B, T, self.n_head, hd).transpose(1, 2) for t in self.c_attn(x).chunk(3, dim=-1))
        if start_pos is None:
            y = q.scaled_dot_product_attention(k, v, is_causal=True)
        else:
            k, v, mask = self._write_cache(k, v, start_pos)
            y = q.scaled_dot_product_attention(k, v, attn_mask=mask)
        return self.c_proj(y.transpose(1, 2).reshape(B, T, C))

    def _write_cache(self, k: Tensor, v: Tensor, start_pos: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Write k, v (B, H, T, hd) into the cache rows start_pos + t; return the caches (after the write) and the
        attention mask (T, max_len): query t sees row j when j <= start_pos + t."""
        if self._cache_k is None or self._cache_v is None:
            raise RuntimeError("CausalSelfAttention: call GPT.reset_cache before a cached forward")
        T, L = k.shape[2], self._cache_k.shape[2]
        rows = Tensor.arange(L, dtype=dtypes.int32).reshape(1, L)
        positions = (Tensor.arange(T, dtype=dtypes.int32) + start_pos).reshape(T, 1)
        place = rows == positions  # (T, L): new row t lands in cache row start_pos + t
        written = place.any(0).reshape(L, 1)
        scatter = place.cast(dtypes.float32).T  # (L, T): one 1.0 per written row, so the product copies exactly
        for cache, new in ((self._cache_k, k), (self._cache_v, v)):
            cache.assign(written.where(scatter @ new, cache))
        return self._cache_k, self._cache_v, rows <= positions


class MLP:
    def __init__(self, cfg: GPTConfig):
        self.c_fc = _linear(cfg.n_embd, 4 * cfg.n_embd, cfg.init_std)
        self.c_proj = _linear(4 * cfg.n_embd, cfg.n_embd, cfg.init_std / math.sqrt(2 * cfg.n_layer))

    def __call__(self, x: Tensor) -> Tensor:
        return self.c_proj(self.c_fc(x).gelu())  # GPT-2's GELU is the tanh approximation (Tensor.gelu's default)


class Block:
    def __init__(self, cfg: GPTConfig):
        self.ln_1 = nn.LayerNorm(cfg.n_embd, eps=cfg.layer_norm_eps)
        self.attn = CausalSelfAttention(cfg)
        self.ln_2 = nn.LayerNorm(cfg.n_embd, eps=cfg.layer_norm_eps)
        self.mlp = MLP(cfg)

    def __call__(self, x: Tensor, start_pos: Tensor | None = None) -> Tensor:
        x = x + self.attn(self.ln_1(x), start_pos)
        return x + self.mlp(self.ln_2(x))


class GPT:
    """State-dict names follow GPT-2's: wte, wpe, h.{i}.ln_1/attn.c_attn/attn.c_proj/ln_2/mlp.c_fc/mlp.c_proj,
    ln_f, and lm_head when it is not tied (Linear weights laid out (out, in), as torch.nn.Linear)."""

    def __init__(self, cfg: GPTConfig, seed: int = 0):
        self.cfg = cfg
        Tensor.manual_seed(seed)
        self.wte = nn.Embedding(cfg.vocab_size, cfg.n_embd)
        self.wte.weight = _normal(cfg.vocab_size, cfg.n_embd, std=cfg.init_std)
        self.wpe = nn.Embedding(cfg.block_size, cfg.n_embd)
        self.wpe.weight = _normal(cfg.block_size, cfg.n_embd, std=cfg.init_std)
        self.h = [Block(cfg) for _ in range(cfg.n_layer)]
        self.ln_f = nn.LayerNorm(cfg.n_embd, eps=cfg.layer_norm_eps)
        self.lm_head = None if cfg.tie_weights else _linear(cfg.n_embd, cfg.vocab_size, cfg.init_std, bias=False)
        params = get_parameters(self)
        params[0].realize(*params[1:])  # draw every weight now, in one schedule
        self._decoders: dict[tuple, TinyJit] = {}  # captured decode steps by (batch, max_len, temperature, top_k)

    def reset_cache(self, batch: int, max_len: int | None = None) -> None:
        """Fresh (zeroed) KV caches for `batch` sequences of up to max_len (default block_size) positions."""
        max_len = self.cfg.block_size if max_len is None else max_len
        if max_len > self.cfg.block_size:
            raise ValueError(f"GPT: max_len {max_len} exceeds block_size {self.cfg.block_size}")
        for block in self.h:
            block.attn.reset_cache(batch, max_len, self.cfg.n_embd // self.cfg.n_head)

    def __call__(self, tokens: Tensor, start_pos: Tensor | None = None) -> Tensor:
        """tokens (B, T) int -> logits (B, T, vocab). With start_pos (int32 scalar tensor) the KV cache is used
        and extended: tokens sit at positions start_pos...start_pos+T-1; without it, positions 0...T-1 and no
        cache."""
        T = tokens.shape[1]
        if T > self.cfg.block_size:
            raise ValueError(f"GPT: {T} tokens exceed block_size {self.cfg.block_size}")
        positions = Tensor.arange(T, dtype=dtypes.int32)
        if start_pos is not None:
            positions = positions + start_pos
        x = self.wte(tokens) + self.wpe(positions)
        for block in self.h:
            x = block(x, start_pos)
        x = self.ln_f(x)
        return x @ self.wte.weight.T if self.lm_head is None else self.lm_head(x)


def sample(logits: Tensor, u: Tensor, temperature: float = 1.0, top_k: int | None = None) -> Tensor:
    """Next tokens (B,) int32 from logits (B, V): temperature 0 is argmax; otherwise softmax(logits/temperature)
    restricted to the top_k largest logits, drawn by inverse CDF with u (B, 1) uniform in [0, 1).

    The uniforms come in as a tensor (drawn ahead of time) rather than from Tensor.multinomial: a draw's counter
    offset is a constant in its kernel, so drawing each step compiles a new kernel each step."""
    if temperature == 0:
        return logits.argmax(-1).cast(dtypes.int32)
    logits = logits / temperature
    if top_k is not None and top_k < logits.shape[-1]:
        kth = logits.topk(top_k)[0][:, -1:]  # (B, 1): the k-th largest logit
        logits = (logits < kth).where(-math.inf, logits)
    cdf = logits.softmax(-1).cumsum(-1)
    cdf = cdf / cdf[:, -1:]  # exactly 1 at the end
    # the first index whose cdf reaches 1 - u, which lies in (0, 1]: a zero-probability token is never picked
    return (cdf < 1 - u).sum(-1).cast(dtypes.int32)


def decoder(model: GPT, batch: int, max_len: int, temperature: float, top_k: int | None) -> TinyJit:
    """The single-token decode step (tokens (B, 1) int32, start_pos int32 scalar, u (B, 1)) -> next tokens (B,),
    under TinyJit: its first two calls run it (the second records its kernels), later calls replay them. One per
    cache shape and sampling setting, kept on the model: the replayed kernels read the caches that reset_cache
    keeps for that shape."""
    key = (batch, max_len, temperature, top_k)
    if key not in model._decoders:

        def step(tokens: Tensor, start_pos: Tensor, u: Tensor) -> Tensor:
            return sample(model(tokens, start_pos)[:, -1, :], u, temperature, top_k).realize()

        model._decoders[key] = TinyJit(step)
    return model._decoders[key]


@dataclass
class GenerationStats:
    prefill_s: float
    decode_s: float
    decode_tokens: int  # tokens produced by cached single-token steps (all sequences)

    @property
    def tokens_per_s(self) -> float:
        return self.decode_tokens / self.decode_s if self.decode_s > 0 else math.inf


def generate(
    model: GPT,
    prompt: list[list[int]],
    max_new_tokens: int,
    temperature: float = 1.0,
    top_k: int | None = None,
    seed: int = 0,
    max_len: int | None = None,
    jit: bool = True,
) -> tuple[list[list[int]], GenerationStats]:
    """Continue each prompt (all of one length) by max_new_tokens sampled tokens. The prompt runs through the
    model in one cached forward (prefill), then one cached forward per new token (replayed by TinyJit unless
    jit=False: the same kernels on the same values, so the same tokens). Same seed, same tokens."""
    batch, n = len(prompt), len(prompt[0])
    if n == 0 or any(len(p) != n for p in prompt):
        raise ValueError("generate: prompts must be non-empty and of one length")
    max_len = model.cfg.block_size if max_len is None else max_len
    if n + max_new_tokens > max_len:
        raise ValueError(f"generate: {n} + {max_new_tokens} tokens exceed the cache length {max_len}")
    model.reset_cache(batch, max_len)
    Tensor.manual_seed(seed)
    uniforms = Tensor.rand(max(max_new_tokens, 1), batch, 1).numpy()  # every draw at once: one kernel
    out = [list(p) for p in prompt]
    tokens = np.array(prompt, dtype=np.int32)
    pos = 0
    t0 = time.perf_counter()
    prefill_s = 0.0
    step = decoder(model, batch, max_len, temperature, top_k) if jit else None
    for i in range(max_new_tokens):
        args = (Tensor(tokens), Tensor(np.array(pos, dtype=np.int32)), Tensor(uniforms[i]))
        if i > 0 and step is not None:
            nxt = step(*args).numpy()
        else:  # the prefill (its own shape), or every step eagerly
            nxt = sample(model(args[0], start_pos=args[1])[:, -1, :], args[2], temperature, top_k).numpy()
        pos += tokens.shape[1]
        tokens = nxt.reshape(batch, 1)
        for seq, tok in zip(out, nxt.tolist()):
            seq.append(tok)
        if i == 0:
            prefill_s = time.perf_counter() - t0
    total = time.perf_counter() - t0
    return out, GenerationStats(prefill_s, total - prefill_s, batch * max(max_new_tokens - 1, 0))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--prompt", type=int, nargs="+", default=[1, 2, 3, 4, 5, 6, 7, 8], help="prompt token ids")
    parser.add_argument("--tokens", type=int, default=32, help="new tokens to generate")
    parser.add_argument("--temperature", type=float, default=1.0, help="0 means greedy (argmax)")
    parser.add_argument("--top-k", type=int, default=40, help="sample among the k most likely tokens (0: all)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the weights and of the sampling")
    parser.add_argument("--batch", type=int, default=1, help="sequences generated together from the same prompt")
    args = parser.parse_args()

    cfg = GPTConfig()
    if any(not 0 <= t < cfg.vocab_size for t in args.prompt):
        parser.error(f"prompt token ids must be in [0, {cfg.vocab_size})")
    t = time.perf_counter()
    model = GPT(cfg, seed=args.seed)
    n_params = sum(p.numel() for p in get_parameters(model))
    print(
        f"GPT: {cfg.n_layer} layers, {cfg.n_head} heads, d={cfg.n_embd}, vocab {cfg.vocab_size}, "
        f"{n_params / 1e6:.2f}M parameters (random, seed {args.seed}), built in {time.perf_counter() - t:.2f} s"
    )
    top_k = args.top_k or None
    gen_args = dict(temperature=args.temperature, top_k=top_k, seed=args.seed)
    prompt = [args.prompt] * args.batch
    # the first run compiles the kernels; the second reuses them and gives the steady-state speed
    for run in ("first run (compiles kernels)", "second run (compiled)"):
        out, stats = generate(model, prompt, args.tokens, **gen_args)
        print(
            f"{run}: prefill {stats.prefill_s * 1e3:.0f} ms, decode {stats.decode_tokens} tokens in "
            f"{stats.decode_s:.2f} s = {stats.tokens_per_s:.1f} tokens/s"
        )
    for seq in out:
        print("prompt:   ", seq[: len(args.prompt)])
        print("generated:", seq[len(args.prompt) :])


if __name__ == "__main__":
    main()
