"""In-place operators (+=, -=, ..., **=) against torch: values, dtypes (the result is written back in the
target's dtype, and a result of a higher kind raises as in torch), that the write lands in the tensor's own
buffer (so views of it see it), autograd rules, and the small dtype/size helpers."""

import operator

import numpy as np
import pytest
import torch

from unigrad import Tensor, dtypes, no_grad
from unigrad.ir.ops import Ops
from unigrad.pipeline.rangeify import view_base
from unigrad.runtime import realize as rt

IOPS = {
    "iadd": operator.iadd,
    "isub": operator.isub,
    "imul": operator.imul,
    "itruediv": operator.itruediv,
    "ifloordiv": operator.ifloordiv,
    "imod": operator.imod,
    "ipow": operator.ipow,
    "iand": operator.iand,
    "ior": operator.ior,
    "ixor": operator.ixor,
    "ilshift": operator.ilshift,
    "irshift": operator.irshift,
}
BITWISE = {"iand", "ior", "ixor", "ilshift", "irshift"}


def check(u: Tensor, t: torch.Tensor) -> None:
    assert u.shape == tuple(t.shape), (u.shape, tuple(t.shape))
    assert u.dtype.name == str(t.dtype).removeprefix("torch."), (u.dtype, t.dtype)
    np.testing.assert_allclose(u.numpy(), t.numpy(), rtol=1e-6, atol=1e-6)


CASES = [
    (name, dt)
    for name in sorted(IOPS)
    for dt in ("int32", "int64", "float32")
    if not (name in BITWISE and dt == "float32") and not (name == "itruediv" and dt != "float32")  # raise: below
]


@pytest.mark.parametrize("name,dtype", CASES)
def test_inplace_values_and_dtype(name, dtype):
    a = np.array([[5, -7, 9], [2, 12, -3]])
    b = np.array([2, 3, 1]) if name in ("ilshift", "irshift", "ipow") else np.array([3, -2, 4])
    a = np.abs(a) if name in ("ilshift", "irshift") else a
    tdt = getattr(torch, dtype)
    for other in (b, 2):  # a broadcast tensor, then a Python scalar
        t, u = torch.tensor(a, dtype=tdt), Tensor(a, dtype=dtype).realize()
        bt = torch.tensor(other, dtype=tdt) if isinstance(other, np.ndarray) else other
        bu = Tensor(other, dtype=dtype) if isinstance(other, np.ndarray) else other
        buf = rt.buffer_of(u.uop)
        t2, u2 = IOPS[name](t, bt), IOPS[name](u, bu)
        assert u2 is u and t2 is t
        check(u, t)
        assert rt.buffer_of(u.uop) is buf  # written into its own buffer


def test_inplace_writes_the_buffer_views_see():
    x = Tensor(np.arange(6, dtype=np.float32)).realize()
    view = x.reshape(2, 3)
    x += 1
    x *= Tensor([2.0])
    np.testing.assert_allclose(view.numpy(), ((np.arange(6) + 1) * 2).reshape(2, 3))
    y = x * 10  # later graphs read the written value, and the write is not run again
    np.testing.assert_allclose(y.numpy(), (np.arange(6) + 1) * 20)
    np.testing.assert_allclose(x.numpy(), (np.arange(6) + 1) * 2)
    v = x.reshape(3, 2)  # an in-place op through a reshape view writes x's buffer
    v -= 1
    np.testing.assert_allclose(x.numpy(), (np.arange(6) + 1) * 2 - 1)


@pytest.mark.parametrize("op", ["add_", "mul_", "sub_", "clamp_"])
def test_inplace_op_on_a_realized_tensor_is_one_kernel(op):
    """An elementwise in-place op reading its target at the element it writes runs in place: one kernel, no value
    computed into a buffer of its own and copied (the torch flavor computes tensors a user holds: the op's own
    out-of-place result is not one). An SGD loop's p.data.add_(g, alpha=-lr) is one kernel per parameter."""
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((7, 33)).astype(np.float32), rng.standard_normal((7, 33)).astype(np.float32)
    x, g = Tensor(a).realize(), Tensor(b).realize()
    args = {"add_": ((g,), {"alpha": -0.5}), "mul_": ((g,), {}), "sub_": ((2.0,), {}), "clamp_": ((-0.5, 0.5), {})}
    want = {"add_": a - 0.5 * b, "mul_": a * b, "sub_": a - 2.0, "clamp_": np.clip(a, -0.5, 0.5)}[op]
    before = rt.stats.kernels
    pos, kw = args[op]
    out = getattr(x, op)(*pos, **kw)
    assert out is x and rt.stats.kernels - before == 1
    np.testing.assert_allclose(x.numpy(), want, rtol=1e-6)


def test_inplace_chains_and_unrealized_targets():
    z = Tensor.zeros(3)  # no buffer yet: one is made for it
    z += Tensor([1.0, 2.0, 3.0])
    z **= 2
    z /= 2
    np.testing.assert_allclose(z.numpy(), [0.5, 2.0, 4.5])
    x = Tensor([1, 2, 3])
    x[1:] += 10  # __getitem__, __iadd__ on the slice, then __setitem__
    assert x.tolist() == [1, 12, 13]


def test_inplace_python_device():
    x = Tensor([1.0, 2.0, 3.0], device="PYTHON").realize()
    view = x.reshape(3, 1)
    x *= 3
    x -= Tensor([1.0, 1.0, 1.0], device="PYTHON")
    assert x.device == "PYTHON"
    assert view.numpy().ravel().tolist() == [2.0, 5.0, 8.0]
    i = Tensor([5, 6], device="PYTHON", dtype="int32")
    i //= 4
    i <<= 2
    assert i.tolist() == [4, 4] and i.dtype is dtypes.int32


def test_inplace_downcasts_to_self_dtype():
    for ours, theirs in [
        (Tensor([1.0, 2.0], dtype="float16"), torch.tensor([1.0, 2.0], dtype=torch.float16)),
        (Tensor([1, 2], dtype="int8"), torch.tensor([1, 2], dtype=torch.int8)),
        (Tensor([True, False]), torch.tensor([True, False])),
    ]:
        other = [0.25, 0.5] if ours.dtype.is_float else [100, 3] if ours.dtype is dtypes.int8 else [True, True]
        dt = {dtypes.float16: torch.float32, dtypes.int8: torch.int64, dtypes.bool: torch.bool}[ours.dtype]
        if ours.dtype is dtypes.bool:
            ours |= Tensor(other)
            theirs |= torch.tensor(other, dtype=dt)
        else:
            ours += Tensor(other)  # a wider operand: the result is cast back to self's dtype (int8 wraps)
            theirs += torch.tensor(other, dtype=dt)
        check(ours, theirs)


ERRORS = [  # (target data, dtype, in-place op, other operand, message)
    (
        [1, 2, 3],
        "int64",
        operator.iadd,
        [1.5, 2.0, 3.0],
        "result type Float can't be cast to the desired output type Long",
    ),
    ([1, 2, 3], "int64", operator.iadd, 1.5, "result type Float can't be cast to the desired output type Long"),
    ([1, 2, 3], "int32", operator.itruediv, 2, "result type Float can't be cast to the desired output type Int"),
    ([True, False], "bool", operator.iadd, 1, "result type Long can't be cast to the desired output type Bool"),
    ([1.0, 2.0, 3.0], "float32", operator.iadd, [[1.0, 2.0, 3.0]], "doesn't match the broadcast shape"),
    ([1.0, 2.0], "float32", operator.iand, 1, "bitwise"),
]


@pytest.mark.parametrize("data,dtype,op,other,match", ERRORS)
def test_inplace_errors_like_torch(data, dtype, op, other, match):
    with pytest.raises(RuntimeError, match=match):
        op(Tensor(data, dtype=dtype), Tensor(other) if isinstance(other, list) else other)
    with pytest.raises(RuntimeError):  # torch raises the same type
        op(torch.tensor(data, dtype=getattr(torch, dtype)), torch.tensor(other) if isinstance(other, list) else other)


def test_inplace_autograd():
    w = Tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        w += 1
    (w * w).sum().backward()
    with no_grad():  # the SGD step: allowed on a leaf under no_grad, written in place
        w -= w.grad * 0.1
    np.testing.assert_allclose(w.numpy(), [0.8, 1.6])
    assert w.requires_grad and w.is_leaf
    w.grad = None
    y = w * 2  # a non-leaf: the in-place op keeps its graph, so gradients flow through it
    y += w * w
    y.sum().backward()
    tw = torch.tensor([0.8, 1.6], requires_grad=True)
    ty = tw * 2
    ty += tw * tw
    ty.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-6)
    z = Tensor([0.0, 0.0])
    z += w  # a value that requires grad makes the target require grad
    assert z.requires_grad


def test_dtype_helpers():
    x = Tensor([1.5, -2.5])
    assert x.double().dtype is dtypes.float64 and x.short().dtype is dtypes.int16
    assert x.bfloat16().dtype is dtypes.bfloat16
    assert x.short().tolist() == [1, -2]
    assert x.element_size() == 4 and x.nbytes() == 8 and x.is_floating_point()
    y = Tensor.zeros(2, 3, dtype="int16")
    assert y.element_size() == 2 and y.nbytes() == 12 and not y.is_floating_point()
    assert x.double().element_size() == torch.zeros(1, dtype=torch.float64).element_size()


@pytest.mark.parametrize(
    "shape,mshape",
    [((3, 4), (3, 4)), ((3, 4), (3,)), ((2, 3, 5), (2, 3)), ((1,), (1,)), ((0, 3), (0, 3)), ((7,), (7,))],
)
@pytest.mark.parametrize("value", [-float("inf"), 2.5, "tensor"])
def test_bool_mask_setitem_is_a_masked_fill(shape, mshape, value):
    """x[mask] = v with one value is torch's masked_fill: no kernel runs at the assignment (the general path would
    find the mask's positions first, a realize per call of a sampling loop), and the values are torch's."""
    rng = np.random.default_rng(len(shape))
    a, m = rng.standard_normal(shape).astype(np.float32), rng.random(mshape) > 0.5
    x, mask = Tensor(a) * 1, Tensor(m) & True  # lazy both
    v = Tensor([2.5]) if value == "tensor" else value
    before = rt.stats.kernels
    x[mask] = v
    assert rt.stats.kernels == before
    t = torch.tensor(a)
    t[torch.tensor(m)] = torch.tensor([2.5]) if value == "tensor" else value
    np.testing.assert_array_equal(x.numpy(), t.numpy())
    base = Tensor(a).realize()  # a filled buffer: written in place, its views see it
    view = base.reshape(-1)
    base[Tensor(m)] = v
    np.testing.assert_array_equal(view.numpy(), t.numpy().reshape(-1))


@pytest.mark.parametrize("depth", [1, 7, 3000])
def test_inplace_write_computes_only_the_lazy_readers_first(depth):
    """An in-place write of a buffer first computes the live lazy tensors whose graphs read it, as torch computed
    them before the write; the live ones that do not read it (sharing nodes with those that do) stay lazy and see the
    other buffers unchanged. A chain thousands of ops deep is decided without recursion. Values equal numpy's."""
    rng = np.random.default_rng(depth)
    wn, xn = rng.standard_normal(6).astype(np.float32), rng.standard_normal(6).astype(np.float32)
    w, x = Tensor(wn).realize(), Tensor(xn).realize()
    shared = x * 2  # read by both
    chain, chain_n = shared, xn * 2
    for i in range(depth):
        chain, chain_n = chain + 0.5, chain_n + np.float32(0.5)
    reader = chain * w  # reads w: computed before the write
    other = chain - 1  # does not: stays lazy
    w += 1
    assert view_base(reader.uop).op is Ops.BUFFER  # computed at the write
    assert view_base(other.uop).op is not Ops.BUFFER  # still lazy
    np.testing.assert_allclose(reader.numpy(), chain_n * wn, rtol=1e-5)
    np.testing.assert_allclose(other.numpy(), chain_n - 1, rtol=1e-5)
    np.testing.assert_allclose(w.numpy(), wn + 1, rtol=1e-6)
