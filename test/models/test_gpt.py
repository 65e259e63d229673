"""examples/gpt.py against a PyTorch GPT-2 written here with the same weights: the logits of a prompt, the KV-cached
incremental logits against full recomputation, and sampling (reproducible with a seed; top_k=1 is greedy)."""

import importlib.util
import math
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from unigrad import Tensor
from unigrad.nn.state import get_state_dict


def _load_example(name: str):
    path = Path(__file__).resolve().parents[2] / "examples" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"examples_{name}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


gpt = _load_example("gpt")

# small enough to compile and run quickly; init_std 0.2 makes attention far from uniform, so the causal mask and
# the cache positions matter to the logits
CFG = gpt.GPTConfig(vocab_size=96, block_size=24, n_layer=2, n_head=4, n_embd=32, init_std=0.2)
ATOL, RTOL = 1e-4, 1e-3


# ---------------------------------------------------------------- the PyTorch reference


class TorchBlock(torch.nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d = cfg.n_embd
        self.n_head = cfg.n_head
        self.ln_1 = torch.nn.LayerNorm(d, eps=cfg.layer_norm_eps)
        self.attn = torch.nn.Module()
        self.attn.c_attn = torch.nn.Linear(d, 3 * d)
        self.attn.c_proj = torch.nn.Linear(d, d)
        self.ln_2 = torch.nn.LayerNorm(d, eps=cfg.layer_norm_eps)
        self.mlp = torch.nn.Module()
        self.mlp.c_fc = torch.nn.Linear(d, 4 * d)
        self.mlp.c_proj = torch.nn.Linear(4 * d, d)

    def attention(self, x):
        B, T, C = x.shape
        hd = C // self.n_head
        q, k, v = (t.view(B, T, self.n_head, hd).transpose(1, 2) for t in self.attn.c_attn(x).split(C, dim=-1))
        scores = q @ k.transpose(-1, -2) / math.sqrt(hd)
        future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
        y = scores.masked_fill(future, float("-inf")).softmax(-1) @ v
        return self.attn.c_proj(y.transpose(1, 2).reshape(B, T, C))

    def forward(self, x):
        x = x + self.attention(self.ln_1(x))
        return x + self.mlp.c_proj(F.gelu(self.mlp.c_fc(self.ln_2(x)), approximate="tanh"))


class TorchGPT(torch.nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.wte = torch.nn.Embedding(cfg.vocab_size, cfg.n_embd)
        self.wpe = torch.nn.Embedding(cfg.block_size, cfg.n_embd)
        self.h = torch.nn.ModuleList(TorchBlock(cfg) for _ in range(cfg.n_layer))
        self.ln_f = torch.nn.LayerNorm(cfg.n_embd, eps=cfg.layer_norm_eps)
        self.lm_head = None if cfg.tie_weights else torch.nn.Linear(cfg.n_embd, cfg.vocab_size, bias=False)

    def forward(self, tokens):
        x = self.wte(tokens) + self.wpe(torch.arange(tokens.shape[1]))
        for block in self.h:
            x = block(x)
        x = self.ln_f(x)
        return x @ self.wte.weight.T if self.lm_head is None else self.lm_head(x)


def torch_twin(model) -> TorchGPT:
    """The PyTorch GPT holding `model`'s weights (strict: every name must match both ways)."""
    ref = TorchGPT(model.cfg)
    state = {k: torch.from_numpy(v.numpy().copy()) for k, v in get_state_dict(model).items()}
    ref.load_state_dict(state, strict=True)
    return ref.eval()


@pytest.fixture(scope="module")
def model():
    return gpt.GPT(CFG, seed=3)


def _prompt(batch: int, length: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, CFG.vocab_size, (batch, length)).astype(np.int32)


# ---------------------------------------------------------------- logits


@pytest.mark.parametrize("tie", [True, False])
def test_logits_match_torch(tie, model):
    m = model if tie else gpt.GPT(gpt.GPTConfig(**{**CFG.__dict__, "tie_weights": False}), seed=4)
    assert ("lm_head.weight" in get_state_dict(m)) is not tie
    tokens = _prompt(2, 11)
    ours = m(Tensor(tokens)).numpy()
    with torch.no_grad():
        ref = torch_twin(m)(torch.from_numpy(tokens).long()).numpy()
    assert ours.shape == (2, 11, m.cfg.vocab_size)
    assert np.abs(ref).max() > 1  # logits of a useful size: the comparison is not of near-zeros
    np.testing.assert_allclose(ours, ref, atol=ATOL, rtol=RTOL)


def test_kv_cache_matches_full_recompute(model):
    """Prefill 5 tokens into the cache, then feed the rest one at a time: each step's logits equal the last row of
    a full (uncached) forward over the whole prefix, and of the torch reference."""
    tokens = _prompt(2, 10, seed=1)
    with torch.no_grad():
        ref = torch_twin(model)(torch.from_numpy(tokens).long()).numpy()
    model.reset_cache(batch=2)
    pre = model(Tensor(tokens[:, :5]), start_pos=Tensor(np.array(0, np.int32))).numpy()
    np.testing.assert_allclose(pre, model(Tensor(tokens[:, :5])).numpy(), atol=ATOL, rtol=RTOL)
    np.testing.assert_allclose(pre, ref[:, :5], atol=ATOL, rtol=RTOL)
    for t in range(5, 10):
        step = model(Tensor(tokens[:, t : t + 1]), start_pos=Tensor(np.array(t, np.int32))).numpy()
        full = model(Tensor(tokens[:, : t + 1])).numpy()[:, -1:]
        np.testing.assert_allclose(step, full, atol=ATOL, rtol=RTOL)
        np.testing.assert_allclose(step, ref[:, t : t + 1], atol=ATOL, rtol=RTOL)


# ---------------------------------------------------------------- sampling


def test_sampling_reproducible_with_seed(model):
    prompt = _prompt(2, 4, seed=2).tolist()
    a, _ = gpt.generate(model, prompt, 8, temperature=1.0, top_k=None, seed=7)
    b, _ = gpt.generate(model, prompt, 8, temperature=1.0, top_k=None, seed=7)
    c, _ = gpt.generate(model, prompt, 8, temperature=1.0, top_k=None, seed=8)
    assert a == b
    assert a != c
    assert all(seq[:4] == p and len(seq) == 12 for seq, p in zip(a, prompt))


def test_top_k_1_is_greedy_argmax(model):
    """top_k=1 sampling, temperature 0 and greedy decoding by the torch reference (full recompute) agree."""
    prompt = _prompt(2, 4, seed=3)
    top1, _ = gpt.generate(model, prompt.tolist(), 8, temperature=0.7, top_k=1, seed=11)
    greedy, _ = gpt.generate(model, prompt.tolist(), 8, temperature=0.0, seed=12)
    ref = torch_twin(model)
    seqs = torch.from_numpy(prompt).long()
    with torch.no_grad():
        for _ in range(8):
            seqs = torch.cat([seqs, ref(seqs)[:, -1].argmax(-1, keepdim=True)], dim=1)
    assert top1 == greedy == seqs.tolist()


def test_sample_inverse_cdf_and_top_k():
    """sample() picks the first token whose cumulative probability reaches 1 - u, among the top-k logits only."""
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((64, 50)).astype(np.float32) * 2
    u = rng.random((64, 1)).astype(np.float32)
    for temperature, top_k in ((1.0, None), (0.5, 5)):
        got = gpt.sample(Tensor(logits), Tensor(u), temperature, top_k).numpy()
        x = logits / temperature
        if top_k is not None:
            kth = np.sort(x, axis=-1)[:, -top_k][:, None]
            x = np.where(x < kth, -np.inf, x)
            assert all(g in np.argsort(-logits[i])[:top_k] for i, g in enumerate(got))
        p = np.exp(x - x.max(-1, keepdims=True))
        cdf = np.cumsum(p / p.sum(-1, keepdims=True), -1)
        want = np.array([np.searchsorted(c / c[-1], 1 - v[0]) for c, v in zip(cdf, u)])
        # a u landing within rounding of a cdf step may go either way; no such u among these
        np.testing.assert_array_equal(got, want)


def test_jitted_decode_matches_eager_across_calls(model):
    """The TinyJit decode step gives the eager step's tokens, also on later calls with other prompts (the replayed
    kernels must read this generation's cache, which reset_cache zeroes in place) and another batch size."""
    for batch, seed in ((2, 20), (2, 21), (1, 22), (2, 23)):
        prompt = _prompt(batch, 3 + seed % 3, seed=seed).tolist()
        jitted, _ = gpt.generate(model, prompt, 6, temperature=1.0, top_k=5, seed=seed)
        eager, _ = gpt.generate(model, prompt, 6, temperature=1.0, top_k=5, seed=seed, jit=False)
        assert jitted == eager
    assert any(d.plan is not None for d in model._decoders.values())  # some calls were replays
