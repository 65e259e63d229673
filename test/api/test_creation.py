"""Constructors (unigrad/api/creation.py and the core's) against PyTorch: shape, dtype (by name) and values.

Random constructors wait for the THREEFRY primitive and are not tested here yet.
"""

import numpy as np
import pytest
import torch

from unigrad import Tensor, dtypes


def check(out: Tensor, ref: torch.Tensor, rtol: float = 0.0, atol: float = 0.0) -> None:
    assert out.shape == tuple(ref.shape), f"shape {out.shape} != {tuple(ref.shape)}"
    assert out.dtype.name == str(ref.dtype).removeprefix("torch."), f"dtype {out.dtype.name} != {ref.dtype}"
    if ref.dtype.is_floating_point:
        np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=rtol, atol=atol)
    else:
        np.testing.assert_array_equal(out.numpy(), ref.numpy())


LINSPACE_CASES = [(0, 1, 5), (-3.5, 2.25, 7), (0, 10, 4), (1, 1, 1), (2, 5, 0), (0, 1, 100), (5, -5, 11), (3, 8, 2)]


@pytest.mark.parametrize("start,end,steps", LINSPACE_CASES)
@pytest.mark.parametrize("dtype", [None, "float64", "int64", "int32", "float16"])
def test_linspace(start, end, steps, dtype):
    out = Tensor.linspace(start, end, steps, dtype=dtype)
    ref = torch.linspace(start, end, steps, dtype=getattr(torch, dtype) if dtype else None)
    tol = {"float16": 1e-3, "float64": 1e-12}.get(dtype or "", 1e-6)
    check(out, ref, rtol=tol, atol=tol)
    if steps >= 2 and dtype in (None, "float64"):  # both ends exact, as torch
        got = out.numpy()
        assert got[0] == ref[0].item() and got[-1] == ref[-1].item()


@pytest.mark.parametrize("n,m", [(3, None), (1, None), (0, None), (3, 5), (5, 2), (4, 0)])
@pytest.mark.parametrize("dtype", [None, "int32", "bool"])
def test_eye(n, m, dtype):
    tdt = getattr(torch, dtype) if dtype else None
    ref = torch.eye(n, m, dtype=tdt) if m is not None else torch.eye(n, dtype=tdt)
    check(Tensor.eye(n, m, dtype=dtype), ref)


def test_like_constructors():
    x = Tensor(np.arange(6, dtype=np.int32).reshape(2, 3)).permute(1, 0)
    r = torch.arange(6, dtype=torch.int32).reshape(2, 3).permute(1, 0)
    e = x.empty_like()
    assert e.shape == (3, 2) and e.dtype is dtypes.int32 and e.device == x.device
    e = x.empty_like(dtype=dtypes.float64)
    assert e.shape == (3, 2) and e.dtype is dtypes.float64
    check(x.zeros_like(), torch.zeros_like(r))
    check(x.ones_like(dtype=dtypes.float32), torch.ones_like(r, dtype=torch.float32))
    check(x.full_like(7), torch.full_like(r, 7))
    check(Tensor.zeros_like(x), torch.zeros_like(r))


def test_python_device():
    check(Tensor.linspace(-1, 1, 5, device="PYTHON"), torch.linspace(-1, 1, 5), atol=1e-7)
    out = Tensor.eye(3, 2, device="PYTHON")
    assert out.device == "PYTHON"
    check(out, torch.eye(3, 2))


@pytest.mark.flavor("torch")  # torch's exception types (tinygrad's: ValueError, test_tinygrad_forms.py)
@pytest.mark.parametrize(
    "ours,theirs",
    [
        (lambda: Tensor.linspace(0, 1, -1), lambda: torch.linspace(0, 1, -1)),
        (lambda: Tensor.eye(-1), lambda: torch.eye(-1)),
        (lambda: Tensor.eye(2, -3), lambda: torch.eye(2, -3)),
    ],
)
def test_errors(ours, theirs):
    with pytest.raises(Exception) as ref:
        theirs()
    with pytest.raises(ref.type):
        ours()


FACTORIES = {  # name: (unigrad call, torch call), each with requires_grad=True
    "zeros": (lambda: Tensor.zeros(2, 3, requires_grad=True), lambda: torch.zeros(2, 3, requires_grad=True)),
    "ones": (lambda: Tensor.ones(4, requires_grad=True), lambda: torch.ones(4, requires_grad=True)),
    "full": (lambda: Tensor.full((3,), 2.5, requires_grad=True), lambda: torch.full((3,), 2.5, requires_grad=True)),
    "arange": (lambda: Tensor.arange(5.0, requires_grad=True), lambda: torch.arange(5.0, requires_grad=True)),
    "linspace": (
        lambda: Tensor.linspace(-1, 1, 5, requires_grad=True),
        lambda: torch.linspace(-1, 1, 5, requires_grad=True),
    ),
    "eye": (lambda: Tensor.eye(3, requires_grad=True), lambda: torch.eye(3, requires_grad=True)),
    "ones_like": (
        lambda: Tensor.zeros(2, 2).ones_like(requires_grad=True),
        lambda: torch.ones_like(torch.zeros(2, 2), requires_grad=True),
    ),
    "full_like": (
        lambda: Tensor.zeros(3).full_like(-2.0, requires_grad=True),
        lambda: torch.full_like(torch.zeros(3), -2.0, requires_grad=True),
    ),
}


@pytest.mark.parametrize("name", list(FACTORIES))
def test_factories_take_requires_grad(name):
    """torch.<factory>(..., requires_grad=True) gives a leaf that requires grad: so does ours, and the gradient of
    sum(x * x) through it matches torch's."""
    make, make_torch = FACTORIES[name]
    x, xt = make(), make_torch()
    assert x.requires_grad and x.is_leaf
    np.testing.assert_allclose(x.numpy(), xt.detach().numpy(), rtol=1e-6)
    (x * x).sum().backward()
    (xt * xt).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-6)


def test_negative_zero_constant_is_not_the_cached_positive_zero():
    """0.0 == -0.0 in Python: a cached +0.0 constant must not be returned for -0.0 (nor the other way round)."""
    for first, second in ((0.0, -0.0), (-0.0, 0.0)):
        Tensor.full((3,), first)
        assert np.signbit(Tensor.full((3,), second).numpy()).tolist() == [np.signbit(second)] * 3
        x = Tensor([1.0, 2.0])
        _ = x * first
        assert np.signbit((x * second).numpy()).tolist() == [np.signbit(second)] * 2


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int8", "uint8", "int64", "bool"])
def test_full_of_a_python_scalar_is_the_broadcast_constant_node(dtype):
    """full()'s fast path (a cached constant node) builds what the general path builds: the scalar as a tensor of
    the dtype, reshaped and expanded."""
    for value in (0, 1, -3, 2.7, -0.0, float("inf"), float("nan"), True):
        for shape in ((), (3,), (2, 1, 4), (0, 5)):
            general = Tensor(value, dtype=dtype).reshape((1,) * len(shape)).expand(shape)
            assert Tensor.full(shape, value, dtype=dtype).uop is general.uop
