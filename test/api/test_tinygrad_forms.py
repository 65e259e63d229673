"""tinygrad's argument forms and error types on the native API (issue 30), and torch's where torch differs.

Argument forms: pad (torch's flat tuple, tinygrad's per-dim pairs, negative amounts, value=, the reflect, replicate
and circular modes, pads larger than the input), reshape with None, sum/prod dtype=, masked_select/nonzero with a
static size=, Tensor.normalize, Tensor.softmin, binary_crossentropy_logits(pos_weight=) and pools with per-side
padding: forward values against torch or numpy on several shapes (size 0 and 1, odd sizes), backward for the pad
modes. Error types: the native flavor raises tinygrad's (unigrad/flavor.py's fields), the torch flavor the type
torch raises for the same call.
"""

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from unigrad import Tensor, dtypes


def data(shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def close(out: Tensor, ref: torch.Tensor | np.ndarray, atol: float = 1e-6) -> None:
    ref_np = ref.detach().numpy() if isinstance(ref, torch.Tensor) else np.asarray(ref)
    assert out.shape == ref_np.shape, f"shape {out.shape} != {ref_np.shape}"
    np.testing.assert_allclose(out.numpy(), ref_np, atol=atol, rtol=1e-5)


def raises_like_torch(ours: Callable[[], Any], theirs: Callable[[], Any]) -> type[BaseException]:
    """Both raise, and unigrad raises the type torch raises (the exact type: a subclass would not do)."""
    with pytest.raises(Exception) as ref:
        theirs()
    with pytest.raises(Exception) as got:
        ours()
    assert got.type is ref.type, f"unigrad raised {got.type.__name__} ({got.value}), torch {ref.type.__name__}"
    return ref.type


# ---------------------------------------------------------------- pad

FLAT_PADS = [(1, 2), (0, 0), (2, 0, 0, 3), (1, 2, 3, 4), (-1, 2), (1, -1, -1, 2), (0, 1, 1, 0, 2, 1)]
PAD_SHAPES = [(1, 1, 1), (2, 3, 5), (3, 1, 4), (2, 0, 3)]


@pytest.mark.parametrize("shape", PAD_SHAPES)
@pytest.mark.parametrize("pads", FLAT_PADS)
@pytest.mark.parametrize("value", [0.0, 2.5])
def test_pad_flat_constant_as_torch(shape, pads, value):
    """x.pad((1, 2, 3, 4)) pads the last dim by (1, 2) and the one before by (3, 4), as torch's F.pad; negative
    amounts crop."""
    x = data(shape)
    sizes = [
        n + sum(min(v, 0) for v in pads[2 * i : 2 * i + 2]) for i, n in enumerate(reversed(shape)) if 2 * i < len(pads)
    ]
    if min(sizes) < 0:  # a crop past the size: both refuse
        raises_like_torch(
            lambda: Tensor(x).pad(pads, value=value), lambda: F.pad(torch.from_numpy(x), pads, value=value)
        )
        return
    ref = F.pad(torch.from_numpy(x), pads, value=value)
    close(Tensor(x).pad(pads, value=value), ref)


@pytest.mark.parametrize("shape", PAD_SHAPES)
def test_pad_per_dim_pairs(shape):
    """tinygrad's per-dim form: a (before, after) pair or None for each dim, the first dim first."""
    x = data(shape)
    pairs = ((1, 0), None, (2, 3))
    ref = np.pad(x, ((1, 0), (0, 0), (2, 3)), constant_values=-1.0)
    close(Tensor(x).pad(pairs, value=-1.0), ref)
    close(Tensor(x).pad([[0, 1], [1, 0], None]), np.pad(x, ((0, 1), (1, 0), (0, 0))))
    crop = ((0, -1), None, (-1, 1)) if shape[0] and shape[2] else ((0, 0), None, (0, 0))
    want = F.pad(
        torch.from_numpy(x), tuple(v for b, a in reversed([(0, 0) if p is None else p for p in crop]) for v in (b, a))
    )
    close(Tensor(x).pad(crop), want)


def test_pad_mode_and_value_positions():
    """tinygrad's order pad(padding, mode, value) and keywords both work; a 0-d tensor takes an empty padding."""
    x = data((2, 3))
    close(Tensor(x).pad((1, 1), "constant", 3.0), np.pad(x, ((0, 0), (1, 1)), constant_values=3.0))
    close(Tensor(x).pad((1, 1), mode="reflect"), np.pad(x, ((0, 0), (1, 1)), mode="reflect"))
    close(Tensor(x).pad((1, 1), "replicate"), np.pad(x, ((0, 0), (1, 1)), mode="edge"))
    close(Tensor(x).pad((2, 1), value=-4.0), np.pad(x, ((0, 0), (2, 1)), constant_values=-4.0))
    close(Tensor(3.0).pad(()), np.float32(3.0))


MODE_CASES = [
    # (mode, shape, flat pads): torch pads the last 1 or 2 dims of a 3-D or 4-D input in these modes
    ("reflect", (1, 2, 5), (2, 1)),
    ("reflect", (2, 3, 4, 5), (1, 2, 3, 0)),
    ("reflect", (1, 1, 3), (2, 2)),
    ("reflect", (1, 3, 5), (-1, 2)),
    ("reflect", (1, 2, 4, 5), (1, -2, -1, 2)),
    ("replicate", (1, 2, 5), (2, 1)),
    ("replicate", (1, 1, 1), (3, 4)),
    ("replicate", (2, 3, 4, 5), (7, 6, 5, 4)),  # larger than the input
    ("replicate", (1, 3, 5), (-2, 3)),
    ("replicate", (1, 2, 3, 4), (-1, 6, 2, -1)),
    ("circular", (1, 2, 5), (2, 1)),
    ("circular", (1, 2, 5), (5, 5)),  # the whole input on each side
    ("circular", (2, 3, 4, 5), (1, 2, 4, 0)),
    ("circular", (1, 1, 1), (1, 1)),
    ("circular", (1, 3, 5), (-1, 2)),
    ("circular", (1, 2, 3, 4), (2, -1, -1, 1)),
]


@pytest.mark.parametrize("mode,shape,pads", MODE_CASES)
def test_pad_modes_forward_and_backward(mode, shape, pads):
    x = data(shape)
    w = data(tuple(F.pad(torch.zeros(shape), pads, mode=mode).shape), seed=1)
    rt = torch.from_numpy(x).requires_grad_()
    ref = F.pad(rt, pads, mode=mode)
    (ref * torch.from_numpy(w)).sum().backward()
    t = Tensor(x, requires_grad=True)
    out = t.pad(pads, mode=mode)
    close(out, ref)
    (out * Tensor(w)).sum().backward()
    close(t.grad, rt.grad, atol=1e-5)


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_pad_modes_per_dim_form(mode):
    """The per-dim form takes the modes too, any dim (torch's F.pad only pads the last ones)."""
    x = data((3, 4, 2))
    np_mode = {"replicate": "edge", "circular": "wrap"}.get(mode, mode)
    pairs = ((2, 1), None, (1, 1))
    close(Tensor(x).pad(pairs, mode=mode), np.pad(x, ((2, 1), (0, 0), (1, 1)), mode=np_mode))


def test_pad_mode_limits():
    """reflect needs pads below the size and circular pads up to it; replicate pads any amount (not a 0-size dim)."""
    x = Tensor(data((2, 3)))
    with pytest.raises(RuntimeError):
        x.pad((3, 0), mode="reflect")
    with pytest.raises(RuntimeError):
        x.pad((4, 0), mode="circular")
    with pytest.raises(NotImplementedError):
        x.pad((1, 1), mode="wrap")
    assert x.pad((9, 9), mode="replicate").shape == (2, 21)


# ---------------------------------------------------------------- reshape, sum/prod dtype


@pytest.mark.parametrize(
    "shape,new,want",
    [
        ((3, 4), (None, -1), (3, 4)),
        ((3, 4), (None, 2, 2), (3, 2, 2)),
        ((2, 3, 5), (None, None, 5), (2, 3, 5)),
        ((2, 3, 5), (None, 15), (2, 15)),
        ((2, 3, 5), (-1, None), (10, 3)),
        ((1, 0, 3), (None, -1, None), (1, 0, 3)),
        ((1,), (None,), (1,)),
    ],
)
def test_reshape_none_keeps_the_dim(shape, new, want):
    x = data(shape)
    out = Tensor(x).reshape(new)
    assert out.shape == want
    close(out, x.reshape(want))
    assert Tensor(x).reshape(*new).shape == want


@pytest.mark.parametrize("shape", [(0,), (1,), (3, 5), (2, 3, 7)])
def test_sum_prod_dtype(shape):
    x = np.random.default_rng(0).integers(-3, 4, shape).astype(np.int32)
    for dt, npdt in (("float64", np.float64), (dtypes.int64, np.int64), ("float32", np.float32)):
        s = Tensor(x).sum(dtype=dt)
        p = Tensor(x).prod(dtype=dt)
        assert s.dtype.name == np.dtype(npdt).name and p.dtype.name == np.dtype(npdt).name
        close(s, x.astype(npdt).sum())
        close(p, x.astype(npdt).prod())
    if len(shape) > 1:
        close(Tensor(x).sum(1, dtype="int64"), x.astype(np.int64).sum(1))


def test_sum_prod_unknown_dtype_name():
    with pytest.raises(AttributeError):
        Tensor([1.0, 2.0]).sum(dtype="floatx")
    with pytest.raises(AttributeError):
        Tensor([1.0, 2.0]).prod(dtype="float33")


@pytest.mark.flavor("torch")
def test_sum_prod_unknown_dtype_name_torch():
    with pytest.raises(TypeError):
        Tensor([1.0, 2.0]).sum(dtype="floatx")
    with pytest.raises(TypeError):
        Tensor([1.0, 2.0]).prod(dtype="float33")


# ---------------------------------------------------------------- static-size masked_select / nonzero


def _padded(values: np.ndarray, size: int, fill: Any) -> np.ndarray:
    out = np.full((size, *values.shape[1:]), fill, dtype=values.dtype)
    n = min(size, len(values))
    out[:n] = values[:n]
    return out


@pytest.mark.parametrize("shape", [(0,), (1,), (7,), (3, 5), (2, 3, 4), (2, 0, 3)])
@pytest.mark.parametrize("size", [0, 1, 4, 30])
def test_masked_select_size(shape, size):
    x = data(shape)
    m = np.random.default_rng(3).random(shape) < 0.4
    close(Tensor(x).masked_select(Tensor(m), size=size, fill_value=-7.5), _padded(x[m], size, np.float32(-7.5)))
    out = Tensor(x).masked_select(Tensor(m), size=size)  # fill_value 0
    assert out.dtype is dtypes.float32
    close(out, _padded(x[m], size, np.float32(0)))


def test_masked_select_size_broadcasts_and_keeps_dtype():
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    m = np.array([True, False, False, True])
    out = Tensor(x).masked_select(Tensor(m), size=8, fill_value=-1)
    assert out.dtype is dtypes.int32
    np.testing.assert_array_equal(out.numpy(), _padded(x[np.broadcast_to(m, x.shape)], 8, -1))


@pytest.mark.parametrize("shape", [(0,), (1,), (7,), (3, 5), (2, 3, 4), (2, 0, 3)])
@pytest.mark.parametrize("size", [0, 2, 9])
def test_nonzero_size(shape, size):
    x = (np.random.default_rng(5).random(shape) < 0.3).astype(np.float32)
    want = _padded(np.argwhere(x), size, -1)
    out = Tensor(x).nonzero(size=size, fill_value=-1)
    assert out.shape == want.shape
    np.testing.assert_array_equal(out.numpy(), want)
    cols = Tensor(x).nonzero(as_tuple=True, size=size)
    for k, col in enumerate(cols):
        np.testing.assert_array_equal(col.numpy(), _padded(np.argwhere(x)[:, k], size, 0))


# ---------------------------------------------------------------- normalize, softmin, pos_weight, pool padding


@pytest.mark.parametrize("shape", [(1, 1), (3, 5), (2, 3, 4)])
@pytest.mark.parametrize("p", [1.0, 2.0, 3.0])
def test_normalize(shape, p):
    x = data(shape)
    close(Tensor(x).normalize(), F.normalize(torch.from_numpy(x)), atol=1e-5)
    for dim in range(-len(shape), len(shape)):
        close(Tensor(x).normalize(p, dim), F.normalize(torch.from_numpy(x), p, dim), atol=1e-5)
    zeros = np.zeros(shape, np.float32)  # eps keeps it finite
    close(Tensor(zeros).normalize(p=p), F.normalize(torch.from_numpy(zeros), p))


@pytest.mark.parametrize("shape", [(1,), (3, 5), (2, 3, 4), (2, 0)])
def test_softmin(shape):
    x = data(shape)
    close(Tensor(x).softmin(), F.softmin(torch.from_numpy(x), -1), atol=1e-6)
    close(Tensor(x).softmin(0), F.softmin(torch.from_numpy(x), 0), atol=1e-6)
    close(Tensor(x).softmin(dim=0), F.softmin(torch.from_numpy(x), 0), atol=1e-6)


@pytest.mark.parametrize("shape", [(1,), (4, 3), (2, 3, 5)])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_binary_crossentropy_logits_pos_weight(shape, reduction):
    x = data(shape) * 4
    y = (np.random.default_rng(2).random(shape) < 0.5).astype(np.float32)
    pw = np.abs(data(shape[-1:], seed=4)) + 0.5
    rt = torch.from_numpy(x).requires_grad_()
    ref = F.binary_cross_entropy_with_logits(
        rt, torch.from_numpy(y), pos_weight=torch.from_numpy(pw), reduction=reduction
    )
    t = Tensor(x, requires_grad=True)
    out = t.binary_crossentropy_logits(Tensor(y), reduction, pos_weight=Tensor(pw))
    close(out, ref, atol=1e-5)
    out.sum().backward()
    ref.sum().backward()
    close(t.grad, rt.grad, atol=1e-5)
    plain = F.binary_cross_entropy_with_logits(torch.from_numpy(x), torch.from_numpy(y), reduction=reduction)
    close(Tensor(x).binary_crossentropy_logits(Tensor(y), reduction), plain, atol=1e-5)


@pytest.mark.parametrize("shape", [(1, 1, 4, 4), (2, 3, 5, 7)])
@pytest.mark.parametrize("padding", [(1, 0, 1, 0), (0, 2, 1, 1), (1, 1, 0, 2)])
@pytest.mark.parametrize("stride", [None, 1])
def test_pool2d_per_side_padding(shape, padding, stride):
    """padding=(left, right, top, bottom) as tinygrad's pools take it: avg counts the padded zeros."""
    x = data(shape)
    rx = torch.from_numpy(x)
    close(Tensor(x).avg_pool2d((2, 2), stride, padding=padding), F.avg_pool2d(F.pad(rx, padding), 2, stride))
    want = F.max_pool2d(F.pad(rx, padding, value=-np.inf), 2, stride)
    close(Tensor(x).max_pool2d((2, 2), stride, padding=padding), want)


# ---------------------------------------------------------------- error types

NEGATIVE_SIZES: dict[str, Callable[[], Any]] = {
    "zeros": lambda: Tensor.zeros(-3, 2),
    "ones": lambda: Tensor.ones(2, -1),
    "empty": lambda: Tensor.empty(-3, 2),
    "full": lambda: Tensor.full((-3, 2), 1.0),
    "rand": lambda: Tensor.rand(-3, 2),
    "randn": lambda: Tensor.randn(2, -3),
    "randint": lambda: Tensor.randint(-3, 2, low=0, high=4),
    "normal": lambda: Tensor.normal(-3, 2),
    "uniform": lambda: Tensor.uniform(-3, 2),
    "scaled_uniform": lambda: Tensor.scaled_uniform(-3, 2),
    "glorot_uniform": lambda: Tensor.glorot_uniform(-3, 2),
    "kaiming_uniform": lambda: Tensor.kaiming_uniform(-3, 2),
    "eye": lambda: Tensor.eye(-3),
    "eye_m": lambda: Tensor.eye(2, -1),
}


@pytest.mark.parametrize("name", list(NEGATIVE_SIZES))
def test_negative_sizes_raise_value_error(name):
    with pytest.raises(ValueError, match="negative"):
        NEGATIVE_SIZES[name]()


@pytest.mark.flavor("torch")
@pytest.mark.parametrize("name", list(NEGATIVE_SIZES))
def test_negative_sizes_torch(name):
    with pytest.raises(RuntimeError, match="negative"):
        NEGATIVE_SIZES[name]()


TORCH_NEGATIVE = {
    "zeros": lambda: torch.zeros(-3, 2),
    "empty": lambda: torch.empty(-3, 2),
    "full": lambda: torch.full((-3, 2), 1.0),
    "rand": lambda: torch.rand(-3, 2),
    "randn": lambda: torch.randn(2, -3),
    "randint": lambda: torch.randint(0, 4, (-3, 2)),
    "eye": lambda: torch.eye(-3),
    "eye_m": lambda: torch.eye(2, -1),
}


@pytest.mark.flavor("torch")
@pytest.mark.parametrize("name", list(TORCH_NEGATIVE))
def test_negative_sizes_torch_types(name):
    raises_like_torch(NEGATIVE_SIZES[name], TORCH_NEGATIVE[name])


def test_shape_argument_errors():
    x = Tensor(data((2, 3)))
    with pytest.raises(ValueError):
        x.repeat(2)
    with pytest.raises(ValueError):
        x.reshape([])
    with pytest.raises(ValueError):
        x.reshape(4, 2)
    with pytest.raises(ValueError):
        x.reshape(-1, 4)
    with pytest.raises(ValueError):
        Tensor.zeros(2.5)
    with pytest.raises(ValueError):
        Tensor.linspace(0, 1, 2.5)
    with pytest.raises((RuntimeError, ValueError), match="non-negative"):
        Tensor.linspace(0, 1, -1)
    assert Tensor(data((1,))).reshape([]).shape == ()  # one element: a scalar


@pytest.mark.flavor("torch")
def test_shape_argument_errors_torch():
    x, r = Tensor(data((2, 3))), torch.from_numpy(data((2, 3)))
    raises_like_torch(lambda: x.repeat(2), lambda: r.repeat(2))
    raises_like_torch(lambda: x.reshape([]), lambda: r.reshape([]))
    raises_like_torch(lambda: x.reshape(4, 2), lambda: r.reshape(4, 2))
    raises_like_torch(lambda: x.reshape(-1, 4), lambda: r.reshape(-1, 4))
    raises_like_torch(lambda: Tensor.zeros(2.5), lambda: torch.zeros(2.5))
    raises_like_torch(lambda: Tensor.linspace(0, 1, 2.5), lambda: torch.linspace(0, 1, 2.5))
    raises_like_torch(lambda: Tensor.linspace(0, 1, -1), lambda: torch.linspace(0, 1, -1))


@pytest.mark.parametrize("flavor", ["tinygrad", "torch"])
def test_errors_both_flavors_share(flavor):
    """flip with a repeated axis, stack with a bad dim and sdpa with is_causal and attn_mask raise the same types in
    tinygrad and torch."""
    from unigrad import Context

    x, r = Tensor(data((2, 3))), torch.from_numpy(data((2, 3)))
    with Context(FLAVOR=flavor):
        raises_like_torch(lambda: x.flip(0, 0), lambda: r.flip(0, 0))
        raises_like_torch(lambda: x.flip((1, -1)), lambda: r.flip((1, -1)))
        raises_like_torch(lambda: Tensor.stack(x, x, dim=3), lambda: torch.stack((r, r), dim=3))
        raises_like_torch(lambda: x.stack(x, dim=-4), lambda: torch.stack((r, r), dim=-4))
        q, rq = Tensor(data((1, 2, 4))), torch.from_numpy(data((1, 2, 4)))
        mask, rmask = Tensor.ones(2, 2, dtype=dtypes.bool), torch.ones(2, 2, dtype=torch.bool)
        raises_like_torch(
            lambda: q.scaled_dot_product_attention(q, q, attn_mask=mask, is_causal=True),
            lambda: F.scaled_dot_product_attention(rq, rq, rq, attn_mask=rmask, is_causal=True),
        )


def test_slicing_errors():
    x = Tensor(data((3, 4)))
    with pytest.raises(ValueError):
        x[::0]
    with pytest.raises(ValueError):
        x[:, 1::0]
    with pytest.raises(TypeError):
        x[Tensor(1) :]
    with pytest.raises(TypeError):
        x[:, : Tensor(2)]
    with pytest.raises(IndexError):
        Tensor(3.0)[0]
    with pytest.raises(IndexError):
        Tensor(3.0)[0:1]
    with pytest.raises(IndexError, match="out of bounds"):
        x[5]
    with pytest.raises(IndexError, match="out of bounds"):
        x[:, -5]
    with pytest.raises(IndexError, match="too many indices"):
        x[0, 0, 0]


@pytest.mark.flavor("torch")
def test_slicing_torch():
    """torch takes 0-d integer tensors as slice bounds; the other slicing errors are torch's types too."""
    x = data((3, 4))
    t, r = Tensor(x), torch.from_numpy(x)
    close(t[Tensor(1) :], r[torch.tensor(1) :])
    close(t[:, Tensor(1) : Tensor(3)], r[:, torch.tensor(1) : torch.tensor(3)])
    raises_like_torch(lambda: t[::0], lambda: r[::0])
    raises_like_torch(lambda: Tensor(3.0)[0], lambda: torch.tensor(3.0)[0])
    raises_like_torch(lambda: t[5], lambda: r[5])
    raises_like_torch(lambda: t[0, 0, 0], lambda: r[0, 0, 0])
