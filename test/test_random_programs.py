"""Random op chains against PyTorch, forward and backward: each seed builds a short program of elementwise ops,
reductions, movement ops (permute, slice, pad, flip, cat), matmul, cumsum and where on a random shape (sizes 1
to 17, empty slices included), mirrors it in torch, and compares the values and the input's gradient."""

import random

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from unigrad import Context, Tensor
from unigrad.runtime.support import opencl as cl

UNARY = ["exp", "relu", "neg", "square", "abs", "sigmoid", "tanh", "sin", "softmax", "log_softmax", "gelu", "silu"]


def unary(name: str, x, lib: str):
    if name == "neg":
        return -x
    if name == "square":
        return x * x
    if name in ("softmax", "log_softmax"):
        return getattr(x, name)(-1)
    if lib == "torch" and name in ("gelu", "silu"):
        return F.gelu(x, approximate="tanh") if name == "gelu" else F.silu(x)
    return getattr(x, name)()


def random_step(x: Tensor, y: torch.Tensor, r: random.Random, rng: np.random.Generator):
    """One op applied to both programs; returns them and the op's name."""
    k, nd = r.random(), len(x.shape)
    if k < 0.3:
        name = r.choice(UNARY)
        return unary(name, x, "unigrad"), unary(name, y, "torch"), name
    if k < 0.45:
        ax, keep = r.randrange(nd), r.random() < 0.5
        op = r.choice(["sum", "max", "mean"]) if x.shape[ax] else "sum"
        xo, yo = getattr(x, op)(ax, keepdim=keep), getattr(y, op)(ax, keepdim=keep)
        yo = yo.values if op == "max" else yo
        return (xo, yo, op) if xo.shape else (xo.reshape(1), yo.reshape(1), op)
    if k < 0.55 and nd >= 2:
        perm = r.sample(range(nd), nd)
        return x.permute(*perm), y.permute(*perm), f"permute{perm}"
    if k < 0.65:
        ax = r.randrange(nd)
        lo = r.randint(0, x.shape[ax])
        hi = r.randint(lo, x.shape[ax])
        sl = tuple(slice(lo, hi) if i == ax else slice(None) for i in range(nd))
        return x[sl], y[sl], f"slice{ax}[{lo}:{hi}]"
    if k < 0.75:
        pads = [0] * (2 * nd)
        ax = r.randrange(nd)
        pads[2 * (nd - 1 - ax)], pads[2 * (nd - 1 - ax) + 1] = r.randint(0, 2), r.randint(0, 2)
        return x.pad(tuple(pads)), F.pad(y, tuple(pads)), f"pad{pads}"
    if k < 0.85:
        b = rng.standard_normal(tuple(x.shape)).astype(np.float32)
        return x * Tensor(b), y * torch.tensor(b), "mul"
    if k < 0.9:
        w = rng.standard_normal((x.shape[-1], r.choice([1, 3, 8]))).astype(np.float32) * 0.3
        return x @ Tensor(w), y @ torch.tensor(w), "matmul"
    if k < 0.93:
        ax = r.randrange(nd)
        return x.cumsum(ax), y.cumsum(ax), f"cumsum{ax}"
    if k < 0.96:
        b = rng.standard_normal(tuple(x.shape)).astype(np.float32)
        return (x > 0).where(x, Tensor(b)), torch.where(y > 0, y, torch.tensor(b)), "where"
    if k < 0.98:
        ax = r.randrange(nd)
        return x.cat(x * 2, dim=ax), torch.cat([y, y * 2], ax), f"cat{ax}"
    return x.flip(0), y.flip(0), "flip0"


def check_program(seed: int, sizes: tuple[int, ...] = (1, 2, 3, 5, 8, 17), max_dims: int = 4) -> None:
    """Seed's random program on the default device against torch: values and the input's gradient."""
    r, rng = random.Random(seed), np.random.default_rng(seed)
    shape = tuple(r.choice(sizes) for _ in range(r.randint(1, max_dims)))
    a = rng.standard_normal(shape).astype(np.float32) * 0.5
    u, v = Tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    x, y, ops = u, v, []
    for _ in range(r.randint(2, 6)):
        x, y, name = random_step(x, y, r, rng)
        ops.append(name)
        if r.random() < 0.3:
            x = x.contiguous()  # a kernel boundary
    w = rng.standard_normal(tuple(x.shape)).astype(np.float32)
    (x * Tensor(w)).sum().backward()
    (y * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(x.numpy(), y.detach().numpy(), rtol=1e-3, atol=1e-4, err_msg=f"{shape} {ops}")
    gu = u.grad.numpy() if u.grad is not None else np.zeros_like(a)
    gv = v.grad.numpy() if v.grad is not None else np.zeros_like(a)
    np.testing.assert_allclose(gu, gv, rtol=1e-3, atol=1e-4, err_msg=f"gradient: {shape} {ops}")


@pytest.mark.parametrize("seed", range(24))
def test_random_program_matches_torch(seed):
    check_program(seed)


@pytest.mark.parametrize(
    "device", [pytest.param("CL", marks=pytest.mark.skipif(cl.unavailable() is not None, reason="no OpenCL")), "PYTHON"]
)
@pytest.mark.parametrize("seed", range(12))
def test_random_program_on_a_gpu(seed, device):
    """The same programs lowered for a GPU (work-groups, LOCAL memory, barriers): on CL, and on the PYTHON device
    emulating one, whose race checks would report a missing barrier."""
    with Context(DEVICE=device, PYTHON_GPU="1" if device == "PYTHON" else ""):
        check_program(1000 + seed, sizes=(1, 2, 3, 5, 8) if device == "PYTHON" else (1, 2, 3, 5, 8, 17), max_dims=3)
