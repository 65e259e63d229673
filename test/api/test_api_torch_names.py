"""torch-named Tensor methods a PyTorch user reaches for (aliases, elementwise functions, reductions, products,
indexing, search), against torch: shapes, dtypes, values (also on empty, size-1, odd and non-contiguous inputs),
gradients through backward against torch autograd, and the errors torch raises."""

import math

import numpy as np
import pytest
import torch

from unigrad import Tensor, dtypes

NAN, INF = math.nan, math.inf
rng = np.random.default_rng(0)


def check(u, t, atol: float = 1e-6, rtol: float = 1e-5) -> None:
    """unigrad result u against torch result t: shape, dtype name and values (nan equal to nan); tuples pairwise."""
    if isinstance(t, (tuple, list)):
        assert isinstance(u, (tuple, list)) and len(u) == len(t), (u, t)
        for a, b in zip(u, t):
            check(a, b, atol, rtol)
        return
    assert u.shape == tuple(t.shape), (u.shape, tuple(t.shape))
    assert u.dtype.name == str(t.dtype).removeprefix("torch."), (u.dtype, t.dtype)
    tn = t.detach().float().numpy() if t.dtype == torch.bfloat16 else t.detach().numpy()
    un = u.float().numpy() if u.dtype is dtypes.bfloat16 else u.numpy()
    np.testing.assert_allclose(un, tn, atol=atol, rtol=rtol, equal_nan=True)


def check_grad(fu, ft, *arrays: np.ndarray, atol: float = 1e-5, rtol: float = 1e-4) -> None:
    """fu over unigrad leaves and ft over torch leaves made from `arrays`: forward values, then the gradient of
    sum(out * w) for a random w (so every output element weighs differently) against torch autograd."""
    us = [Tensor(a, requires_grad=True) for a in arrays]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    ou, ot = fu(*us), ft(*ts)
    check(ou, ot, atol, rtol)
    w = rng.standard_normal(tuple(ot.shape)).astype(np.float32 if ot.dtype == torch.float32 else np.float64)
    (ou * Tensor(w)).sum().backward()
    (ot * torch.tensor(w)).sum().backward()
    for u, t in zip(us, ts):
        tg = torch.zeros_like(t) if t.grad is None else t.grad
        ug = np.zeros(u.shape, np.float32) if u.grad is None else u.grad.numpy()  # no path to u: a zero gradient
        np.testing.assert_allclose(ug, tg.numpy(), atol=atol, rtol=rtol)


def randn(*shape: int, dtype=np.float32) -> np.ndarray:
    return rng.standard_normal(shape).astype(dtype)


SHAPES = [(0,), (1,), (7,), (3, 5)]


# ---------------------------------------------------------------- aliases and thin compositions


def test_aliases_and_views():
    for shape in [(), (4,), (3, 4)]:
        a = randn(*shape)
        check(Tensor(a).t(), torch.tensor(a).t())
        assert Tensor(a).dim() == torch.tensor(a).dim()
        check(Tensor(a).ravel(), torch.tensor(a).ravel())
    with pytest.raises(RuntimeError, match=r"t\(\) expects a tensor with <= 2 dimensions, but self is 3D"):
        Tensor(randn(2, 3, 4)).t()
    a = randn(3, 4)
    check(Tensor(a).T.ravel(), torch.tensor(a).T.ravel())
    check(Tensor(a[:, :1]).broadcast_to(2, 3, 4), torch.tensor(a[:, :1]).broadcast_to(2, 3, 4))
    check(Tensor(a).broadcast_to((3, -1)), torch.tensor(a).broadcast_to((3, -1)))
    i = np.array([3, -1, 0])
    check(Tensor(a).type_as(Tensor(i)), torch.tensor(a).type_as(torch.tensor(i)))
    check(Tensor(i).type_as(Tensor(a)), torch.tensor(i).type_as(torch.tensor(a)))
    for name in ("absolute", "negative", "positive", "arccos", "arcsin", "arctan", "sgn"):
        x = np.array([-0.7, 0.0, 0.3, 0.9], np.float32)
        check(getattr(Tensor(x), name)(), getattr(torch.tensor(x), name)())
    for name in ("absolute", "negative", "positive", "sgn"):
        check(getattr(Tensor(i), name)(), getattr(torch.tensor(i), name)())
    check(Tensor([True, False]).sgn(), torch.tensor([True, False]).sgn())
    with pytest.raises(RuntimeError, match="positive: .* bool"):
        Tensor([True]).positive()
    check(Tensor(i).true_divide(2), torch.tensor(i).true_divide(2))
    check(Tensor(i).true_divide(Tensor(i[::-1].copy())), torch.tensor(i).true_divide(torch.tensor(i[::-1].copy())))
    check_grad(lambda x: x.arctan(), lambda x: x.arctan(), randn(5))
    check_grad(lambda x: x.negative().absolute(), lambda x: x.negative().absolute(), randn(5))


def test_msort_unbind_tensor_split():
    a = randn(5, 3)
    check(Tensor(a).msort(), torch.tensor(a).msort())
    check(Tensor(a).T.msort(), torch.tensor(a).T.msort())
    for dim in (0, 1, -1):
        check(Tensor(a).unbind(dim), torch.tensor(a).unbind(dim))
    check(Tensor(randn(0, 2)).unbind(0), torch.tensor(randn(0, 2)).unbind(0))
    with pytest.raises(IndexError, match="unbind: dimension specified as 0 but tensor has no dimensions"):
        Tensor(1.0).unbind()
    x = np.arange(14.0, dtype=np.float32).reshape(7, 2)
    for arg, dim in [(3, 0), (1, 0), (7, 0), (9, 0), (2, 1), ([2, 9, 1, -1], 0), ([], 0), ([0, 0, 7], 0), ([1], -1)]:
        check(Tensor(x).tensor_split(arg, dim), torch.tensor(x).tensor_split(arg, dim))
    check(Tensor(x).tensor_split(Tensor(3)), torch.tensor(x).tensor_split(torch.tensor(3)))
    check(Tensor(x).tensor_split(Tensor([1, 3])), torch.tensor(x).tensor_split(torch.tensor([1, 3])))
    with pytest.raises(RuntimeError, match="number of sections must be larger than 0, got 0"):
        Tensor(x).tensor_split(0)
    with pytest.raises(RuntimeError, match="tensor_split expected at least a 1-dimensional tensor"):
        Tensor(1.0).tensor_split(2)
    # gradients flow through each piece back into its slice
    check_grad(lambda t: t.tensor_split([2, 5])[1] * 3, lambda t: t.tensor_split([2, 5])[1] * 3, x)
    check_grad(lambda t: t.unbind(1)[1], lambda t: t.unbind(1)[1], x)


def test_hsplit_vsplit_dsplit():
    a = np.arange(24.0, dtype=np.float32)
    for shape, name, arg in [
        ((6,), "hsplit", 3),
        ((4, 6), "hsplit", 2),
        ((4, 6), "hsplit", [1, 4]),
        ((4, 6), "vsplit", 4),
        ((4, 6), "vsplit", [3]),
        ((2, 3, 4), "dsplit", 2),
        ((2, 3, 4), "dsplit", [1, 1, 3]),
    ]:
        x = a[: math.prod(shape)].reshape(shape)
        check(getattr(Tensor(x), name)(arg), getattr(torch.tensor(x), name)(arg))
    with pytest.raises(
        RuntimeError, match="hsplit attempted to split along dimension 1, but the size of the dimension 5"
    ):
        Tensor(randn(3, 5)).hsplit(2)
    with pytest.raises(RuntimeError, match="hsplit requires a tensor with at least 1 dimension"):
        Tensor(1.0).hsplit(1)
    with pytest.raises(RuntimeError, match="vsplit requires a tensor with at least 2 dimension"):
        Tensor(randn(3)).vsplit(1)
    with pytest.raises(RuntimeError, match="dsplit requires a tensor with at least 3 dimension"):
        Tensor(randn(3, 4)).dsplit(2)
    with pytest.raises(RuntimeError, match="not divisible by the split_size 0"):
        Tensor(randn(3, 4)).hsplit(0)


def test_floor_divide():
    a = np.array([-7, 7, 6, -6, 0, 5], np.int64)
    b = np.array([2, -2, 3, 4, 3, -1], np.int64)
    check(Tensor(a).floor_divide(Tensor(b)), torch.tensor(a).floor_divide(torch.tensor(b)))
    check(Tensor(a).floor_divide(2), torch.tensor(a).floor_divide(2))
    x = np.array([-7.5, 7.0, 1.0, 5.0, -5.0, 7.0, -7.0, 0.3, -0.0, 0.0, NAN, INF, 1e30, -1e-30, 5.5], np.float32)
    y = np.array([0.0, 0.0, -0.0, INF, INF, 2.0, 2.0, 0.1, 3.0, -3.0, 1.0, 2.0, 3e-9, 7.0, -INF], np.float32)
    u, t = Tensor(x).floor_divide(Tensor(y)), torch.tensor(x).floor_divide(torch.tensor(y))
    check(u, t)
    np.testing.assert_array_equal(np.signbit(u.numpy()), np.signbit(t.numpy()))  # signed zeros too
    r = randn(40) * 10
    s = randn(40)
    check(Tensor(r).floor_divide(Tensor(s)), torch.tensor(r).floor_divide(torch.tensor(s)))
    check(Tensor(r).floor_divide(0.5), torch.tensor(r).floor_divide(0.5))
    check(Tensor(a).floor_divide(2.5), torch.tensor(a).floor_divide(2.5))


# ---------------------------------------------------------------- elementwise


def test_atan2_values_and_signed_zeros():
    y = np.array([0, -0.0, 0, -0.0, 1, -1, INF, -INF, INF, 2, NAN, 3, -3, 1e-30, 5, -INF, 1], np.float32)
    x = np.array([0, 0, -0.0, -0.0, -1, -1, INF, INF, -INF, -INF, 1, 0, -0.0, 1e-30, -1e-3, 2, NAN], np.float32)
    u, t = Tensor(y).atan2(Tensor(x)), torch.tensor(y).atan2(torch.tensor(x))
    check(u, t)
    real = ~np.isnan(t.numpy())  # (a nan's sign is not part of the result)
    np.testing.assert_array_equal(np.signbit(u.numpy()[real]), np.signbit(t.numpy()[real]))
    a, b = randn(4, 6) * 3, randn(6, 4)
    check(Tensor(a).atan2(Tensor(b).T), torch.tensor(a).atan2(torch.tensor(b).T))  # a transposed operand
    check(Tensor(a[::2]).arctan2(Tensor(b[:, 0])), torch.tensor(a[::2]).arctan2(torch.tensor(b[:, 0])))
    i, j = np.array([1, -2, 0]), np.array([3, 4, -5])
    check(Tensor(i).atan2(Tensor(j)), torch.tensor(i).atan2(torch.tensor(j)))
    check(Tensor(a).atan2(Tensor(b.T.astype(np.float64))), torch.tensor(a).atan2(torch.tensor(b.T.astype(np.float64))))
    check(Tensor(a).atan2(0.5), torch.tensor(a).atan2(torch.tensor(0.5)))


def test_atan2_hypot_gradients():
    y = np.array([0.0, 0.0, 1.0, -1.0, 2.0, -3.0, 0.5, 1e-3], np.float32)
    x = np.array([1.0, -1.0, 0.0, 0.0, 2.0, -1.0, -4.0, 1e-3], np.float32)
    check_grad(lambda a, b: a.atan2(b), lambda a, b: a.atan2(b), y, x)
    for shape in SHAPES:
        check_grad(lambda a, b: a.atan2(b), lambda a, b: a.atan2(b), randn(*shape), randn(*shape))
        check_grad(lambda a, b: a.hypot(b), lambda a, b: a.hypot(b), randn(*shape), randn(*shape))
    check_grad(lambda a, b: a.hypot(b.T), lambda a, b: a.hypot(b.T), randn(3, 4), randn(4, 3))
    check_grad(lambda a, b: a.hypot(b), lambda a, b: a.hypot(b), y, x)


def test_hypot_values():
    a = np.array([INF, NAN, 3.0, 1e30, 0.0, -1e-30, -INF, 5.0], np.float32)
    b = np.array([NAN, INF, -4.0, 1e30, 0.0, 1e-30, 1.0, NAN], np.float32)
    check(Tensor(a).hypot(Tensor(b)), torch.tensor(a).hypot(torch.tensor(b)))
    check(Tensor(a).hypot(Tensor(b.astype(np.float64))), torch.tensor(a).hypot(torch.tensor(b.astype(np.float64))))
    h = np.array([1.0, 2.0], np.float16)
    check(Tensor(h).hypot(Tensor(h)), torch.tensor(h).hypot(torch.tensor(h)), atol=1e-3)
    with pytest.raises(NotImplementedError, match="hypot: not implemented for dtypes.int64"):
        Tensor([1, 2]).hypot(Tensor([3, 4]))


def test_logit_xlogy():
    x = np.array([0.0, 1.0, 0.5, 2.0, -1.0, 0.05, 0.95, 0.3], np.float32)
    check(Tensor(x).logit(), torch.tensor(x).logit())
    check(Tensor(x).logit(0.1), torch.tensor(x).logit(0.1))
    check(Tensor([1, 0]).logit(), torch.tensor([1, 0]).logit())
    p = np.array([0.05, 0.1, 0.5, 0.9, 0.95, 0.2], np.float32)
    check_grad(lambda t: t.logit(0.1), lambda t: t.logit(0.1), p)
    check_grad(lambda t: t.logit(), lambda t: t.logit(), p)
    a = np.array([0.0, 0.0, 0.0, 1.0, 2.0, 0.0, -1.5], np.float32)
    b = np.array([0.0, NAN, INF, 0.0, -1.0, 3.0, 2.0], np.float32)
    check(Tensor(a).xlogy(Tensor(b)), torch.tensor(a).xlogy(torch.tensor(b)))
    check(Tensor([0, 1]).xlogy(Tensor([2, 3])), torch.tensor([0, 1]).xlogy(torch.tensor([2, 3])))
    check(Tensor([0, 1]).xlogy(2), torch.tensor([0, 1]).xlogy(2))
    check(
        Tensor(a).xlogy(Tensor(2.0, dtype=dtypes.float64)),
        torch.tensor(a).xlogy(torch.tensor(2.0, dtype=torch.float64)),
    )
    xs = np.array([0.0, 0.0, 1.0, -2.0, 3.0], np.float32)
    ys = np.array([2.0, 0.5, 3.0, 1.5, 0.25], np.float32)
    check_grad(lambda s, t: s.xlogy(t), lambda s, t: s.xlogy(t), xs, ys)
    check_grad(lambda s, t: s.xlogy(t.T), lambda s, t: s.xlogy(t.T), randn(3, 2), np.abs(randn(2, 3)) + 0.1)


def test_nan_to_num_and_classification():
    v = np.array([NAN, INF, -INF, 1.0, -0.0], np.float32)
    for dt in (np.float32, np.float16, np.float64):
        check(Tensor(v.astype(dt)).nan_to_num(), torch.tensor(v.astype(dt)).nan_to_num())
        check(Tensor(v.astype(dt)).nan_to_num(1.0, 2.0, -3.0), torch.tensor(v.astype(dt)).nan_to_num(1.0, 2.0, -3.0))
    check(Tensor(v, dtype=dtypes.bfloat16).nan_to_num(), torch.tensor(v, dtype=torch.bfloat16).nan_to_num(), rtol=1e-2)
    check(Tensor(v).nan_to_num(posinf=5.0), torch.tensor(v).nan_to_num(posinf=5.0))
    check(Tensor([1, 2]).nan_to_num(), torch.tensor([1, 2]).nan_to_num())
    check_grad(lambda t: t.nan_to_num(), lambda t: t.nan_to_num(), v)
    w = np.array([NAN, -NAN, INF, -INF, -0.0, 0.0, -2.0, 3.0], np.float32)
    for dt, tdt in (
        (np.float32, None),
        (np.float64, None),
        (np.float32, dtypes.float16),
        (np.float32, dtypes.bfloat16),
    ):
        ww = w if tdt is not dtypes.bfloat16 else w[2:]  # torch rounds a nan to bfloat16 as a negative nan
        tt = torch.tensor(ww.astype(dt)) if tdt is None else torch.tensor(ww).to(getattr(torch, tdt.name))
        uu = Tensor(ww.astype(dt)) if tdt is None else Tensor(ww, dtype=tdt)
        for name in ("signbit", "isposinf", "isneginf"):
            check(getattr(uu, name)(), getattr(tt, name)())
    for arr in (np.array([-1, 0, 2]), np.array([3, 0], np.uint8), np.array([True, False])):
        for name in ("signbit", "isposinf", "isneginf"):
            check(getattr(Tensor(arr), name)(), getattr(torch.tensor(arr), name)())


def test_frac_angles_heaviside_float_power_sinc():
    x = np.array([INF, -2.5, NAN, -0.0, 3.75, -1e9 + 0.5, 0.25], np.float32)
    check(Tensor(x).frac(), torch.tensor(x).frac())
    with pytest.raises(NotImplementedError, match="frac: not implemented for dtypes.int64"):
        Tensor([1, 2]).frac()
    for name in ("deg2rad", "rad2deg"):
        check(getattr(Tensor(x), name)(), getattr(torch.tensor(x), name)())
        check(getattr(Tensor([180, 90]), name)(), getattr(torch.tensor([180, 90]), name)())
        h = np.array([1.0, -45.0], np.float16)
        check(getattr(Tensor(h), name)(), getattr(torch.tensor(h), name)(), atol=1e-2, rtol=1e-3)
        check_grad(lambda t, n=name: getattr(t, n)(), lambda t, n=name: getattr(t, n)(), randn(3, 4))
    check_grad(lambda t: t.T.frac(), lambda t: t.T.frac(), randn(3, 4) * 5)
    a = np.array([-1.0, 0.0, 2.0, NAN, -0.0], np.float32)
    check(Tensor(a).heaviside(Tensor([0.5])), torch.tensor(a).heaviside(torch.tensor([0.5])))
    check(Tensor([-1, 0, 2]).heaviside(Tensor([7])), torch.tensor([-1, 0, 2]).heaviside(torch.tensor([7])))
    with pytest.raises(RuntimeError, match="heaviside: is not implemented for tensors with different dtypes"):
        Tensor(a).heaviside(Tensor([1]))
    for base, exp in [
        (np.array([2, 3]), 2),
        (np.array([2.0, 3.0], np.float32), 0.5),
        (np.array([-2.0], np.float32), 0.5),
    ]:
        check(Tensor(base).float_power(exp), torch.tensor(base).float_power(exp))
    b, e = np.abs(randn(5)) + 0.5, randn(5)
    check(Tensor(b).float_power(Tensor(e)), torch.tensor(b).float_power(torch.tensor(e)))
    check_grad(lambda s, t: s.float_power(t), lambda s, t: s.float_power(t), b, e)
    s = np.array([0.0, 0.5, 1.0, 2.0, -1.5, INF, NAN, 1e-8, 123.25], np.float32)
    check(Tensor(s).sinc(), torch.tensor(s).sinc())
    check(Tensor([0, 1, 2]).sinc(), torch.tensor([0, 1, 2]).sinc())
    check_grad(lambda t: t.sinc(), lambda t: t.sinc(), np.array([0.0, 0.5, 1.3, -2.2], np.float32))


def test_addcmul_addcdiv():
    s, a, b = randn(3, 4), randn(3, 4), randn(4)
    for value in (1, 0.5, -2):
        check(
            Tensor(s).addcmul(Tensor(a), Tensor(b), value=value),
            torch.tensor(s).addcmul(torch.tensor(a), torch.tensor(b), value=value),
        )
        check(
            Tensor(s).addcdiv(Tensor(a), Tensor(b), value=value),
            torch.tensor(s).addcdiv(torch.tensor(a), torch.tensor(b), value=value),
        )
    i = np.array([1, 2])
    check(
        Tensor(i).addcmul(Tensor(i), Tensor(i), value=0.5),
        torch.tensor(i).addcmul(torch.tensor(i), torch.tensor(i), value=0.5),
    )
    check(
        Tensor(i).addcmul(Tensor(i), Tensor(i), value=3),
        torch.tensor(i).addcmul(torch.tensor(i), torch.tensor(i), value=3),
    )
    check(
        Tensor(i).addcmul(Tensor([1.0, 2.0]), Tensor(i)),
        torch.tensor(i).addcmul(torch.tensor([1.0, 2.0]), torch.tensor(i)),
    )
    check(
        Tensor([1.0, 2.0]).addcdiv(Tensor(i), Tensor([2.0, 3.0])),
        torch.tensor([1.0, 2.0]).addcdiv(torch.tensor(i), torch.tensor([2.0, 3.0])),
    )
    with pytest.raises(RuntimeError, match="addcdiv: integer division"):
        Tensor(i).addcdiv(Tensor(i), Tensor(i))
    check_grad(
        lambda x, y, z: x.addcmul(y, z.T, value=0.5), lambda x, y, z: x.addcmul(y, z.T, value=0.5), s, a, randn(4, 3)
    )
    check_grad(lambda x, y, z: x.addcdiv(y, z, value=2), lambda x, y, z: x.addcdiv(y, z, value=2), s, a, np.abs(b) + 1)


# ---------------------------------------------------------------- matrix and vector products


def test_products_values_and_gradients():
    a, b = randn(3, 4), randn(4, 5)
    check(Tensor(a).mm(Tensor(b)), torch.tensor(a).mm(torch.tensor(b)), atol=1e-5)
    check(Tensor(b).T.mm(Tensor(a).T), torch.tensor(b).T.mm(torch.tensor(a).T), atol=1e-5)
    check(
        Tensor(np.ones((2, 3), np.int64)).mm(Tensor(np.ones((3, 2), np.int64))),
        torch.ones(2, 3, dtype=torch.int64).mm(torch.ones(3, 2, dtype=torch.int64)),
    )
    check(Tensor(randn(0, 3)).mm(Tensor(randn(3, 2))), torch.zeros(0, 3).mm(torch.zeros(3, 2)))
    check_grad(lambda x, y: x.mm(y), lambda x, y: x.mm(y), a, b)
    p, q = randn(2, 3, 4), randn(2, 4, 1)
    check_grad(lambda x, y: x.bmm(y), lambda x, y: x.bmm(y), p, q)
    check_grad(lambda x, y: x.mv(y), lambda x, y: x.mv(y), a, randn(4))
    check_grad(lambda x, y: x.outer(y), lambda x, y: x.outer(y), randn(3), randn(5))
    g = randn(3)
    check(Tensor(g).ger(Tensor([1, 2])), torch.tensor(g).ger(torch.tensor([1, 2])))  # promoted
    check(Tensor([1.0, 2.0]).outer(Tensor([1, 2, 3])), torch.tensor([1.0, 2.0]).outer(torch.tensor([1, 2, 3])))
    for sa, sb in [((4,), (4,)), ((2, 4), (3, 4)), ((2, 3, 4), (4,)), ((), (3, 2))]:
        check_grad(lambda x, y: x.inner(y), lambda x, y: x.inner(y), randn(*sa), randn(*sb))
    check(
        Tensor([[1, 2], [3, 4]], dtype=dtypes.int32).inner(Tensor([1, 1], dtype=dtypes.int32)),
        torch.tensor([[1, 2], [3, 4]], dtype=torch.int32).inner(torch.tensor([1, 1], dtype=torch.int32)),
    )
    s = randn(3, 5)
    for kw in ({}, {"beta": 0.5, "alpha": 2.0}, {"beta": 0}):
        check_grad(lambda i, x, y: i.addmm(x, y, **kw), lambda i, x, y: i.addmm(x, y, **kw), s, a, b)
        check_grad(lambda i, x, y: i.addmv(x, y, **kw), lambda i, x, y: i.addmv(x, y, **kw), randn(3), a, randn(4))
        check_grad(
            lambda i, x, y: i.addr(x, y, **kw), lambda i, x, y: i.addr(x, y, **kw), randn(1, 5), randn(3), randn(5)
        )
        check_grad(
            lambda i, x, y: i.baddbmm(x, y, **kw), lambda i, x, y: i.baddbmm(x, y, **kw), randn(3, 1), p, randn(2, 4, 4)
        )
    nan_in = np.full((3, 5), NAN, np.float32)  # beta=0 ignores self, nan included
    check(
        Tensor(nan_in).addmm(Tensor(a), Tensor(b), beta=0),
        torch.tensor(nan_in).addmm(torch.tensor(a), torch.tensor(b), beta=0),
        atol=1e-5,
    )
    i2 = np.ones((2, 2), np.int64)
    check(
        Tensor(i2).addmm(Tensor(np.ones((2, 3), np.int64)), Tensor(np.ones((3, 2), np.int64)), beta=0.5),
        torch.tensor(i2).addmm(torch.ones(2, 3, dtype=torch.int64), torch.ones(3, 2, dtype=torch.int64), beta=0.5),
    )
    check(
        Tensor(np.ones((2, 3), np.int64)).addr(Tensor([1.0, 2.0]), Tensor([1.0, 0.0, 3.0])),
        torch.ones(2, 3, dtype=torch.int64).addr(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 0.0, 3.0])),
    )
    bools = np.array([[True, False, False], [False, False, True]])
    check(
        Tensor(bools).addr(Tensor([True, False]), Tensor([False, True, True])),
        torch.tensor(bools).addr(torch.tensor([True, False]), torch.tensor([False, True, True])),
    )


def test_products_errors():
    m, v = Tensor(randn(2, 3)), Tensor(randn(3))
    with pytest.raises(RuntimeError, match=r"mm: mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x5\)"):
        m.mm(Tensor(randn(4, 5)))
    with pytest.raises(RuntimeError, match="mm: self must be a matrix"):
        v.mm(m)
    with pytest.raises(RuntimeError, match="mm: mat2 must be a matrix"):
        m.mm(v)
    with pytest.raises(RuntimeError, match="mm: expected all inputs to have the same dtype"):
        m.mm(Tensor(randn(3, 2), dtype=dtypes.float64))
    with pytest.raises(RuntimeError, match="bmm: batch1 must be a 3-D tensor"):
        m.bmm(Tensor(randn(2, 3, 4)))
    with pytest.raises(
        RuntimeError, match=r"bmm: expected size for first two dimensions of batch2 tensor to be: \[2, 3\]"
    ):
        Tensor(randn(2, 2, 3)).bmm(Tensor(randn(2, 4, 5)))
    with pytest.raises(RuntimeError, match=r"mv: size mismatch, got mat \(2x3\), vec \(4\)"):
        m.mv(Tensor(randn(4)))
    with pytest.raises(RuntimeError, match="mv: matrix @ vector expected"):
        v.mv(v)
    with pytest.raises(RuntimeError, match="outer: Expected 1-D argument self, but got 2-D"):
        m.outer(v)
    with pytest.raises(RuntimeError, match="inner\\(\\) the last dimension must match"):
        m.inner(Tensor(randn(4)))
    with pytest.raises(RuntimeError, match="inner: expected all inputs to have the same dtype"):
        m.inner(Tensor([1, 2, 3]))
    with pytest.raises(RuntimeError, match=r"addmm: shapes \(3,\) and \(2, 2\) cannot be broadcast"):
        Tensor(randn(3)).addmm(Tensor(randn(2, 3)), Tensor(randn(3, 2)))
    with pytest.raises(RuntimeError, match="addmv: expected all inputs to have the same dtype"):
        Tensor(randn(2), dtype=dtypes.float64).addmv(m, v)


def test_cross():
    a, b = randn(4, 3), randn(4, 3)
    check_grad(lambda x, y: x.cross(y, dim=1), lambda x, y: x.cross(y, dim=1), a, b)
    check_grad(lambda x, y: x.T.cross(y.T, dim=0), lambda x, y: x.T.cross(y.T, dim=0), a, b)
    check(Tensor(a).cross(Tensor(b[:1])), torch.tensor(a).cross(torch.tensor(b[:1]), dim=1))  # broadcast
    c = randn(3, 3)
    check(
        Tensor(c).cross(Tensor(c[::-1].copy())),
        torch.linalg.cross(torch.tensor(c), torch.tensor(c[::-1].copy()), dim=0),
    )
    i = np.array([[1, 2, 3]])
    check(
        Tensor(i).cross(Tensor(i[:, ::-1].copy()), dim=-1),
        torch.tensor(i).cross(torch.tensor(i[:, ::-1].copy()), dim=-1),
    )
    with pytest.raises(RuntimeError, match="cross: inputs dimension 1 must have length 3, got 2 and 2"):
        Tensor(randn(3, 2)).cross(Tensor(randn(3, 2)), dim=1)
    with pytest.raises(RuntimeError, match="cross: no dimension of size 3"):
        Tensor(randn(2, 4)).cross(Tensor(randn(2, 4)))
    with pytest.raises(RuntimeError, match="cross: inputs must have the same number of dimensions"):
        Tensor(randn(3)).cross(Tensor(randn(2, 3)))
    with pytest.raises(RuntimeError, match="cross: expected all inputs to have the same dtype"):
        Tensor(randn(3)).cross(Tensor([1, 2, 3]))


# ---------------------------------------------------------------- simple reductions


def test_amax_amin_aminmax():
    a = np.array([[1.0, 5.0, 5.0], [3.0, 2.0, 5.0]], np.float32)  # ties: the gradient is split among them
    for dim in ((), 0, 1, (0, 1), (-1,), None):
        for keepdim in (False, True):
            check_grad(lambda x: x.amax(dim, keepdim), lambda x: x.amax(() if dim is None else dim, keepdim), a)
            check_grad(lambda x: x.amin(dim, keepdim), lambda x: x.amin(() if dim is None else dim, keepdim), a)
    check(Tensor([1.0, NAN]).amax(), torch.tensor([1.0, NAN]).amax())
    check(Tensor([True, False]).amax(), torch.tensor([True, False]).amax())
    check(Tensor(randn(0, 3)).amax(1), torch.zeros(0, 3).amax(1))
    check_grad(lambda x: x.T.amax(0), lambda x: x.T.amax(0), randn(4, 3))
    with pytest.raises(IndexError, match=r"amax\(\): Expected reduction dim 0 to have non-zero size"):
        Tensor(randn(0, 3)).amax(0)
    with pytest.raises(IndexError, match=r"amin\(\): Expected reduction dim 0 to have non-zero size"):
        Tensor(randn(0, 3)).amin()
    with pytest.raises(RuntimeError, match="amax: dim 0 appears multiple times"):
        Tensor(a).amax((0, 0))
    x = randn(3, 4)
    for kw in ({}, {"dim": 0}, {"dim": -1, "keepdim": True}):
        u, t = Tensor(x).aminmax(**kw), torch.tensor(x).aminmax(**kw)
        check(u.min, t.min)
        check(u.max, t.max)
    assert Tensor([[1, 5], [3, 2]]).aminmax(dim=0).max.tolist() == [3, 5]
    with pytest.raises(RuntimeError, match="aminmax\\(\\): cannot compute aminmax over an empty dimension"):
        Tensor(randn(0, 3)).aminmax()


def test_nansum_nanmean_count_nonzero():
    a = randn(3, 5)
    a[0, 1] = a[2, 4] = NAN
    for dim in (None, 0, 1, (0, 1)):
        check_grad(lambda x: x.nansum(dim), lambda x: x.nansum(dim), a)
        check_grad(lambda x: x.nanmean(dim, keepdim=True), lambda x: x.nanmean(dim, keepdim=True), a)
    a[1] = NAN  # a row of nans: nanmean is nan there (torch's gradient is nan there too, ours 0: not compared)
    for dim in (None, 0, 1, (0, 1)):
        check(Tensor(a).nansum(dim), torch.tensor(a).nansum(dim))
        check(Tensor(a).nanmean(dim, keepdim=True), torch.tensor(a).nanmean(dim, keepdim=True))
        check(Tensor(a).count_nonzero(dim), torch.tensor(a).count_nonzero(dim))
    check(Tensor([1, 2]).nansum(), torch.tensor([1, 2]).nansum())
    check(Tensor([True, True]).nansum(), torch.tensor([True, True]).nansum())
    check(Tensor(a).nansum(dtype=dtypes.float64), torch.tensor(a).nansum(dtype=torch.float64))
    check(Tensor(randn(0)).nanmean(), torch.zeros(0).nanmean())
    check(Tensor([[0, 3], [0, 0]]).count_nonzero(0), torch.tensor([[0, 3], [0, 0]]).count_nonzero(0))
    check(Tensor(a).T.count_nonzero(), torch.tensor(a).T.count_nonzero())
    with pytest.raises(RuntimeError, match="nanmean\\(\\): expected input to have floating point dtype but got"):
        Tensor([1, 2]).nanmean()
    with pytest.raises(RuntimeError, match="count_nonzero|sum: dim 0 appears multiple times"):
        Tensor(a).count_nonzero((0, 0))


def test_norm_and_dist():
    a = np.array([[0.0, 3.0, -4.0], [4.0, -1.0, 0.5]], np.float32)
    for p in (2, "fro", 1, 3, 0.5, -1, INF, -INF):
        for dim in (None, 1) if p not in (2, INF) else (0, (0, 1)):
            check_grad(lambda x: x.norm(p, dim), lambda x: x.norm(p, dim), a, atol=1e-5)
    check_grad(lambda x: x.norm(3, 1, keepdim=True), lambda x: x.norm(3, 1, keepdim=True), randn(4, 3))
    check_grad(lambda x: x.T.norm(dim=0), lambda x: x.T.norm(dim=0), randn(4, 3))
    check_grad(lambda x: x.norm(), lambda x: x.norm(), np.zeros(3, np.float32))  # the gradient at 0 is 0
    check(Tensor(a).norm(0), torch.tensor(a).norm(0))
    check(Tensor(a).norm(0, 1), torch.tensor(a).norm(0, 1))
    check(Tensor(a).norm(dtype=dtypes.float64), torch.tensor(a).norm(dtype=torch.float64))
    check(Tensor(randn(0)).norm(), torch.zeros(0).norm())
    h = np.array([3.0, 4.0], np.float16)
    check(Tensor(h).norm(), torch.tensor(h).norm())
    with pytest.raises(RuntimeError, match="norm: expected a floating point tensor as input, got"):
        Tensor([1, 2]).norm()
    with pytest.raises(RuntimeError, match="norm: cannot compute the inf norm over an empty dim"):
        Tensor(randn(0)).norm(INF)
    with pytest.raises(RuntimeError, match="norm: the Frobenius norm takes a dim of at most 2 dims"):
        Tensor(a).norm("fro", (0, 1, 1))
    with pytest.raises(RuntimeError, match="norm: order 'abc' not supported"):
        Tensor(a).norm("abc")
    with pytest.raises(NotImplementedError, match="nuc"):
        Tensor(a).norm("nuc")
    b = randn(3, 1)
    for p in (2, 1, INF, 0.5):
        check_grad(lambda x, y: x.dist(y, p), lambda x, y: x.dist(y, p), randn(3, 4), b, atol=1e-5)
    check(
        Tensor(np.ones(2, np.float32)).dist(Tensor(np.ones((3, 2)))),
        torch.ones(2).dist(torch.ones(3, 2, dtype=torch.float64)),
    )
    check_grad(lambda x, y: x.dist(y), lambda x, y: x.dist(y), np.ones(2, np.float32), np.ones(2, np.float32))
    with pytest.raises(RuntimeError, match="dist: expected floating point inputs"):
        Tensor([1, 2]).dist(Tensor([1, 3]))


def test_diff():
    x = np.array([1, 4, 9, 16, 25])
    for n in (0, 1, 2, 4, 5, 7):
        check(Tensor(x).diff(n), torch.tensor(x).diff(n))
    check(Tensor(x.astype(np.uint8)).diff(), torch.tensor(x.astype(np.uint8)).diff())
    check(Tensor(x[::-1].astype(np.uint8).copy()).diff(), torch.tensor(x[::-1].astype(np.uint8).copy()).diff())
    check(Tensor([True, False, False]).diff(), torch.tensor([True, False, False]).diff())
    check(Tensor(x).diff(prepend=Tensor([0.5])), torch.tensor(x).diff(prepend=torch.tensor([0.5])))
    a = randn(3, 4)
    for dim in (0, 1, -1):
        check_grad(lambda t: t.diff(2, dim), lambda t: t.diff(2, dim), a)
    pre, app = randn(1, 4), randn(2, 4)
    check_grad(lambda t, p, q: t.diff(1, 0, p, q), lambda t, p, q: t.diff(1, 0, p, q), a, pre, app)
    check_grad(lambda t: t.T.diff(), lambda t: t.T.diff(), a)
    check(Tensor(randn(0)).diff(), torch.zeros(0).diff())
    with pytest.raises(RuntimeError, match="diff: expects input to be at least one-dimensional"):
        Tensor(1.0).diff()
    with pytest.raises(RuntimeError, match="diff: order must be non-negative but got -1"):
        Tensor(x).diff(-1)
    with pytest.raises(RuntimeError, match="diff: expects prepend .* to have as many dims"):
        Tensor(a).diff(dim=0, prepend=Tensor(randn(4)))
    with pytest.raises(RuntimeError, match="diff: expects the shape of prepend .* except along dim 0"):
        Tensor(a).diff(dim=0, prepend=Tensor(randn(1, 3)))


@pytest.mark.filterwarnings("ignore:.*degrees of freedom is <= 0:UserWarning")
def test_cov_corrcoef():
    a = randn(3, 6)
    for kw in ({}, {"correction": 0}, {"correction": 2}):
        check_grad(lambda x: x.cov(**kw), lambda x: x.cov(**kw), a, atol=1e-5)
    fw, aw = np.array([1, 2, 1, 0, 3, 1]), np.abs(randn(6)) + 0.1
    check_grad(lambda x: x.cov(fweights=Tensor(fw)), lambda x: x.cov(fweights=torch.tensor(fw)), a, atol=1e-5)
    for corr in (0, 1):
        check_grad(
            lambda x, w: x.cov(correction=corr, fweights=Tensor(fw), aweights=w),
            lambda x, w: x.cov(correction=corr, fweights=torch.tensor(fw), aweights=w),
            a,
            aw,
            atol=1e-5,
        )
    check(Tensor([1, 2, 4]).cov(), torch.tensor([1, 2, 4]).cov())
    check(
        Tensor([[1, 2, 4]]).cov(aweights=Tensor([1.0, 2.0, 1.0], dtype=dtypes.float64)),
        torch.tensor([[1, 2, 4]]).cov(aweights=torch.tensor([1.0, 2.0, 1.0], dtype=torch.float64)),
    )
    check(Tensor(a).T.cov(), torch.tensor(a).T.cov(), atol=1e-5)
    for x in (np.array([1.0], np.float32), np.zeros((2, 0), np.float32), np.array(3.0, np.float32)):
        check(Tensor(x).cov(), torch.tensor(x).cov())
    check_grad(lambda x: x.corrcoef(), lambda x: x.corrcoef(), a, atol=1e-5)
    c = np.array([[1.0, 2, 4], [0, 1, 0], [1, 1, 1]], np.float32)
    check(Tensor(c).corrcoef(), torch.tensor(c).corrcoef())
    check(Tensor([1, 2, 4]).corrcoef(), torch.tensor([1, 2, 4]).corrcoef())
    with pytest.raises(RuntimeError, match="cov\\(\\): expected input to have two or fewer dimensions"):
        Tensor(randn(2, 2, 2)).cov()
    with pytest.raises(RuntimeError, match="cov\\(\\): expected fweights to have integral dtype"):
        Tensor(a).cov(fweights=Tensor(aw))
    with pytest.raises(RuntimeError, match="cov\\(\\): expected aweights to have floating point dtype"):
        Tensor(a).cov(aweights=Tensor(fw))
    with pytest.raises(RuntimeError, match="cov\\(\\): fweights cannot be negative"):
        Tensor(a).cov(fweights=Tensor(-fw))
    with pytest.raises(RuntimeError, match="cov\\(\\): expected fweights to have 6 elements"):
        Tensor(a).cov(fweights=Tensor(fw[:2]))
    with pytest.raises(RuntimeError, match="cov\\(\\): weights sum to zero"):
        Tensor(a).cov(fweights=Tensor(fw * 0))


# ---------------------------------------------------------------- selecting reductions (median, kthvalue, mode)


def test_median_nanmedian():
    for x in (randn(7), randn(8), randn(1), np.array([3.0, 1, NAN, 2], np.float32), np.array([1, 4, 2, 3])):
        check(Tensor(x).median(), torch.tensor(x).median())
        check(Tensor(x).nanmedian(), torch.tensor(x).nanmedian())
    check(Tensor(randn(0)).median(), torch.zeros(0).median())
    check(Tensor(np.full(3, NAN, np.float32)).nanmedian(), torch.full((3,), NAN).nanmedian())
    for x in (
        np.array([1.0, 2.0, 2.0, 2.0, 3.0], np.float32),
        np.array([1.0, NAN, 2.0, NAN, 3.0], np.float32),
        randn(3, 4),
    ):
        check_grad(lambda t: t.median(), lambda t: t.median(), x)  # split evenly among ties / nans
    check_grad(lambda t: t.nanmedian(), lambda t: t.nanmedian(), np.array([1.0, NAN, 2.0, 2.0, 3.0], np.float32))
    rows = np.array(
        [[3.0, NAN, 1, NAN], [2, 5, 2.5, 1], [4, 1, 3, 2]], np.float32
    )  # no ties: torch's indices are defined
    for dim, keepdim in ((1, False), (-1, True), (0, False)):
        for name in ("median", "nanmedian"):
            u, t = getattr(Tensor(rows), name)(dim, keepdim), getattr(torch.tensor(rows), name)(dim, keepdim)
            check(u.values, t.values)
            check(u.indices, t.indices)
    u, t = (
        Tensor([[NAN, NAN, 1.0], [NAN, NAN, NAN]]).nanmedian(1),
        torch.tensor([[NAN, NAN, 1.0], [NAN, NAN, NAN]]).nanmedian(1),
    )
    check(u.values, t.values)
    check(u.indices, t.indices)
    x = randn(5, 6)
    check_grad(lambda t: t.median(1).values, lambda t: t.median(1).values, x)
    check_grad(lambda t: t.T.median(1, keepdim=True)[0], lambda t: t.T.median(1, keepdim=True)[0], x)
    check_grad(lambda t: t.nanmedian(0).values, lambda t: t.nanmedian(0).values, rows)
    v = randn(100)  # over SORT_NETWORK_MIN: the sorting network's path
    check(Tensor(v).median(), torch.tensor(v).median())
    check(Tensor(v).median(0).indices, torch.tensor(v).median(0).indices)
    ties = Tensor([[2.0, 2.0, 2.0, 1.0]]).median(1)  # ties: the stable sort's ((n-1)//2)-th element, a valid index
    assert ties.values.tolist() == [2.0] and ties.indices.tolist() == [0]
    check(Tensor(5.0).median(0).values, torch.tensor(5.0).median(0).values)
    with pytest.raises(IndexError, match=r"median\(\): Expected reduction dim 0 to have non-zero size"):
        Tensor(randn(0, 2)).median(0)
    with pytest.raises(NotImplementedError, match="median: not implemented for bool"):
        Tensor([True, False]).median()


def test_kthvalue_mode():
    x = randn(4, 7)
    for k, dim, keepdim in ((1, -1, False), (4, 1, True), (7, 1, False), (2, 0, False)):
        u, t = Tensor(x).kthvalue(k, dim, keepdim), torch.tensor(x).kthvalue(k, dim, keepdim)
        check(u.values, t.values)
        check(u.indices, t.indices)
    check_grad(lambda t: t.kthvalue(3, 1).values, lambda t: t.kthvalue(3, 1).values, x)
    check_grad(lambda t: t.T.kthvalue(2).values, lambda t: t.T.kthvalue(2).values, x)
    n = np.array([3.0, NAN, 2, NAN], np.float32)
    for k in (1, 2, 3, 4):
        u, t = Tensor(n).kthvalue(k), torch.tensor(n).kthvalue(k)
        check(u.values, t.values)
        check(u.indices, t.indices)
    check(Tensor(3.0).kthvalue(1).values, torch.tensor(3.0).kthvalue(1).values)
    check(Tensor(randn(0, 3)).kthvalue(1, 1).values, torch.zeros(0, 3).kthvalue(1, 1).values)
    with pytest.raises(RuntimeError, match=r"kthvalue\(\): selected number k=4 out of range for dimension 0"):
        Tensor([3.0, 1.0, 2.0]).kthvalue(4)
    with pytest.raises(RuntimeError, match=r"kthvalue\(\): selected number k=0 out of range"):
        Tensor([3.0, 1.0, 2.0]).kthvalue(0)
    for arr in (
        [3.0, 1, 3, 1, 2],
        [1, 1, 2, 1],
        [2, 1, 2, 1, 5, 5],
        [-0.0, 0.0, 1.0],
        [4.0],
        [[1, 2, 1, 2], [3, 3, 0, 0]],
    ):
        u, t = Tensor(arr).mode(), torch.tensor(arr).mode()
        check(u.values, t.values)
        check(u.indices, t.indices)
    m = np.array([[1, 2, 2, 3, 3, 3], [5, 5, 4, 4, 6, 6], [0, 1, 0, 1, 1, 0]])
    for dim, keepdim in ((0, False), (1, True)):
        u, t = Tensor(m).mode(dim, keepdim), torch.tensor(m).mode(dim, keepdim)
        check(u.values, t.values)
        check(u.indices, t.indices)
    check_grad(lambda t: t.mode().values, lambda t: t.mode().values, np.array([1.0, 2.0, 2.0, 1.0, 2.0], np.float32))
    check_grad(lambda t: t.T.mode(0)[0], lambda t: t.T.mode(0)[0], m.astype(np.float32))
    with pytest.raises(IndexError, match=r"mode\(\): Expected reduction dim 0 to have non-zero size"):
        Tensor(randn(0, 3)).mode(0)


# ---------------------------------------------------------------- quantiles


@pytest.mark.parametrize("interpolation", ["linear", "lower", "higher", "midpoint", "nearest"])
def test_quantile_modes(interpolation):
    q = np.array([0.0, 0.1, 0.25, 0.5, 0.6, 1 / 3, 0.75, 1.0], np.float32)
    for x in (np.arange(7.0, dtype=np.float32), randn(10), randn(1)):
        u = Tensor(x).quantile(Tensor(q), interpolation=interpolation)
        check(u, torch.tensor(x).quantile(torch.tensor(q), interpolation=interpolation))
    x = randn(4, 5)
    x[1, 2] = NAN
    x[3] = NAN
    for dim, keepdim in ((None, False), (None, True), (0, False), (1, True), (-1, False)):
        for qq in (0.3, np.array([0.2, 0.9], np.float32)):
            qu = Tensor(qq) if isinstance(qq, np.ndarray) else qq
            qt = torch.tensor(qq) if isinstance(qq, np.ndarray) else qq
            for name in ("quantile", "nanquantile"):
                u = getattr(Tensor(x), name)(qu, dim, keepdim, interpolation=interpolation)
                check(u, getattr(torch.tensor(x), name)(qt, dim, keepdim, interpolation=interpolation))


def test_quantile_gradients_and_errors():
    x = randn(4, 6)  # distinct values: the gradient goes to the elements at floor and ceil of each rank
    q = np.array([0.1, 0.5, 0.85], np.float32)
    check_grad(lambda t: t.quantile(Tensor(q), 1), lambda t: t.quantile(torch.tensor(q), 1), x)
    check_grad(lambda t: t.T.quantile(0.3, 0, keepdim=True), lambda t: t.T.quantile(0.3, 0, keepdim=True), x)
    check_grad(lambda t: t.nanquantile(0.7), lambda t: t.nanquantile(0.7), x)
    d = randn(2, 5).astype(np.float64)
    check(
        Tensor(d).quantile(Tensor(q.astype(np.float64)), 1),
        torch.tensor(d).quantile(torch.tensor(q.astype(np.float64)), 1),
    )
    check(Tensor(3.0).quantile(0.3), torch.tensor(3.0).quantile(0.3))
    with pytest.raises(RuntimeError, match=r"quantile\(\) input tensor must be either float or double dtype"):
        Tensor([1, 2]).quantile(0.5)
    with pytest.raises(RuntimeError, match=r"quantile\(\) q must be in the range \[0, 1\] but got 1.5"):
        Tensor(x).quantile(1.5)
    with pytest.raises(RuntimeError, match=r"quantile\(\) q values must be in the range \[0, 1\]"):
        Tensor(x).quantile(Tensor([0.5, -0.1]))
    with pytest.raises(RuntimeError, match=r"quantile\(\) q must be a scalar or 1D tensor"):
        Tensor(x).quantile(Tensor([[0.5]]))
    with pytest.raises(RuntimeError, match=r"quantile\(\) q tensor must be same dtype as the input tensor"):
        Tensor(x).quantile(Tensor([0.5], dtype=dtypes.float64))
    with pytest.raises(RuntimeError, match=r"nanquantile\(\) input tensor must be non-empty"):
        Tensor(randn(2, 0)).nanquantile(0.5, dim=0)
    with pytest.raises(RuntimeError, match=r"quantile\(\) interpolation must be one of"):
        Tensor(x).quantile(0.5, interpolation="foo")


# ---------------------------------------------------------------- gather, scatter, fill


def test_take_along_dim_scatter_add():
    x = randn(3, 4)
    idx = np.array([[1], [0], [3]])
    check_grad(lambda t: t.take_along_dim(Tensor(idx), 1), lambda t: t.take_along_dim(torch.tensor(idx), 1), x)
    check_grad(
        lambda t: t.take_along_dim(Tensor([[2, 1, 0, 1]]), 0),
        lambda t: t.take_along_dim(torch.tensor([[2, 1, 0, 1]]), 0),
        x,
    )
    check(Tensor(x).take_along_dim(Tensor([11, 0, 5])), torch.tensor(x).take_along_dim(torch.tensor([11, 0, 5])))
    check(
        Tensor(x).take_along_dim(Tensor([[1]]), 0), torch.tensor(x).take_along_dim(torch.tensor([[1]]), 0)
    )  # broadcast
    y = randn(1, 2, 2)
    check(
        Tensor(y).take_along_dim(Tensor([[[1]], [[0]]]), 2),
        torch.tensor(y).take_along_dim(torch.tensor([[[1]], [[0]]]), 2),
    )
    check(
        Tensor(x).T.take_along_dim(Tensor(idx.T.copy()), 0),
        torch.tensor(x).T.take_along_dim(torch.tensor(idx.T.copy()), 0),
    )
    with pytest.raises(RuntimeError, match="take_along_dim: dtype of indices should be int64 but got"):
        Tensor(x).take_along_dim(Tensor([[1]], dtype=dtypes.int32), 0)
    with pytest.raises(
        RuntimeError, match="take_along_dim: input and indices should have the same number of dimensions"
    ):
        Tensor(x).take_along_dim(Tensor([1]), 0)
    with pytest.raises(IndexError, match="take_along_dim: index 3 is out of bounds for dimension 0 with size 3"):
        Tensor(x).take_along_dim(Tensor([[3]]), 0)
    with pytest.raises(IndexError, match="take_along_dim: index -1 is out of bounds for dimension 0 with size 12"):
        Tensor(x).take_along_dim(Tensor([-1]))
    index = np.array([[0, 1, 0, 2], [2, 2, 1, 0]])
    src = randn(2, 4)
    check_grad(
        lambda t, s: t.scatter_add(0, Tensor(index), s), lambda t, s: t.scatter_add(0, torch.tensor(index), s), x, src
    )
    check_grad(
        lambda t, s: t.scatter_add(1, Tensor(index[:, :2]), s),
        lambda t, s: t.scatter_add(1, torch.tensor(index[:, :2]), s),
        x,
        randn(2, 2),
    )
    with pytest.raises(TypeError, match="scatter_add: src must be a Tensor"):
        Tensor(x).scatter_add(0, Tensor(index), 1.0)


def test_index_fill_index_copy_masked_scatter():
    x = randn(3, 2)
    for dim, index in ((0, [-1, 0]), (1, [1]), (0, []), (0, [1, 1, 2])):
        i = np.array(index, np.int64)
        check(Tensor(x).index_fill(dim, Tensor(i), 5), torch.tensor(x).index_fill(dim, torch.tensor(i), 5))
    check(
        Tensor(np.zeros((3, 2), np.int64)).index_fill(1, Tensor([1]), 2.7),
        torch.zeros(3, 2, dtype=torch.int64).index_fill(1, torch.tensor([1]), 2.7),
    )
    check(
        Tensor(x).index_fill(0, Tensor(1), Tensor(2.0, dtype=dtypes.float64)),
        torch.tensor(x).index_fill(0, torch.tensor(1), torch.tensor(2.0, dtype=torch.float64)),
    )
    check_grad(
        lambda t, v: t.index_fill(0, Tensor([1, 1, 2]), v) * 1,
        lambda t, v: t.index_fill(0, torch.tensor([1, 1, 2]), v) * 1,
        x,
        np.array(1.5, np.float32),
    )
    with pytest.raises(IndexError, match="index_fill: index 3 is out of range for dimension 0 with size 3"):
        Tensor(x).index_fill(0, Tensor([3]), 5).numpy()
    with pytest.raises(RuntimeError, match="index_fill: index has to be a vector or scalar"):
        Tensor(x).index_fill(0, Tensor([[0]]), 5)
    with pytest.raises(RuntimeError, match="index_fill: only supports a 0-dimensional value tensor"):
        Tensor(x).index_fill(0, Tensor([1]), Tensor([2.0]))
    with pytest.raises(IndexError, match="index_fill: expected dtype int64 for index"):
        Tensor(x).index_fill(0, Tensor([1], dtype=dtypes.int32), 2)
    src = randn(2, 2)
    check_grad(
        lambda t, s: t.index_copy(0, Tensor([2, 0]), s), lambda t, s: t.index_copy(0, torch.tensor([2, 0]), s), x, src
    )
    check_grad(
        lambda t, s: t.index_copy(1, Tensor([1]), s), lambda t, s: t.index_copy(1, torch.tensor([1]), s), x, randn(3, 1)
    )
    check(
        Tensor(np.zeros(3, np.float32)).index_copy(0, Tensor(1), Tensor(5.0)),
        torch.zeros(3).index_copy(0, torch.tensor(1), torch.tensor(5.0)),
    )
    with pytest.raises(RuntimeError, match="index_copy: self and source expected to have the same dtype"):
        Tensor(x).index_copy(0, Tensor([2, 0]), Tensor(src, dtype=dtypes.float64))
    with pytest.raises(IndexError, match="index_copy: source of shape"):
        Tensor(x).index_copy(0, Tensor([2, 0]), Tensor(randn(3, 2)))
    with pytest.raises(IndexError, match="index_copy: index -1 is out of bounds for dimension 0 with size 3"):
        Tensor(x).index_copy(0, Tensor([-1]), Tensor(randn(1, 2)))
    with pytest.raises(RuntimeError, match="index_copy: expected a long"):
        Tensor(x).index_copy(0, Tensor([1], dtype=dtypes.int32), Tensor(randn(1, 2)))
    mask = np.array([True, False, True])
    z = randn(2, 3)
    check_grad(
        lambda t, s: t.masked_scatter(Tensor(mask), s),
        lambda t, s: t.masked_scatter(torch.tensor(mask), s),
        z,
        randn(8),
    )
    check_grad(
        lambda t, s: t.T.masked_scatter(Tensor(mask[None, :2]), s),
        lambda t, s: t.T.masked_scatter(torch.tensor(mask[None, :2]), s),
        z,
        randn(2, 3),
    )
    check(
        Tensor(np.zeros(3, np.float32)).masked_scatter(
            Tensor(np.ones((2, 3), bool)), Tensor(np.arange(6.0, dtype=np.float32))
        ),
        torch.zeros(3).masked_scatter(torch.ones(2, 3, dtype=torch.bool), torch.arange(6.0)),
    )
    check(
        Tensor(z).masked_scatter(Tensor(mask & False), Tensor(randn(0))),
        torch.tensor(z).masked_scatter(torch.tensor(mask & False), torch.zeros(0)),
    )
    with pytest.raises(
        RuntimeError, match=r"masked_scatter: number of elements of source \(3\) < number of ones in mask \(4\)"
    ):
        Tensor(z).masked_scatter(Tensor(mask), Tensor(randn(3)))
    with pytest.raises(RuntimeError, match="masked_scatter: only supports boolean masks"):
        Tensor(z).masked_scatter(Tensor([1, 0, 1]), Tensor(randn(6)))
    with pytest.raises(RuntimeError, match="masked_scatter: expected self and source to have same dtypes"):
        Tensor(z).masked_scatter(Tensor(mask), Tensor(np.arange(6)))


def test_fill_zero_inplace():
    for arr, value in ((np.zeros(2, np.int64), 2.7), (np.ones((2, 3), np.float32), -1.5), (np.zeros(2, bool), 2)):
        u, t = Tensor(arr).realize(), torch.tensor(arr)
        assert u.fill_(value) is u
        t.fill_(value)
        check(u, t)
        check(Tensor(arr).zero_(), torch.tensor(arr).zero_())
    u = Tensor(np.zeros(2, np.float32)).realize()
    view = u[1:]
    u.fill_(Tensor(3, dtype=dtypes.int64))
    assert u.tolist() == [3.0, 3.0] and view.tolist() == [3.0]  # written into the buffer: views see it
    with pytest.raises(RuntimeError, match="fill_: only supports a 0-dimension value tensor"):
        u.fill_(Tensor([1.0]))
    with pytest.raises(RuntimeError, match="fill_: a leaf Variable that requires grad"):
        Tensor([1.0, 2.0], requires_grad=True).fill_(1)
    # through a non-leaf: the filled tensor depends on the value only
    xu, xt = Tensor([1.0, 1.0], requires_grad=True), torch.tensor([1.0, 1.0], requires_grad=True)
    vu, vt = Tensor(3.0, requires_grad=True), torch.tensor(3.0, requires_grad=True)
    yu, yt = xu * 2, xt * 2
    yu.fill_(vu)
    yt.fill_(vt)
    (yu * Tensor([1.0, 2.0])).sum().backward()
    (yt * torch.tensor([1.0, 2.0])).sum().backward()
    assert vu.grad.item() == vt.grad.item() == 3.0
    assert xu.grad is None or xu.grad.tolist() == [0.0, 0.0]


# ---------------------------------------------------------------- membership and search


def test_isin():
    a = np.array([[1, 2, 3], [4, 2, 0]])
    check(Tensor(a).isin(Tensor([2.0, 5.0])), torch.isin(torch.tensor(a), torch.tensor([2.0, 5.0])))
    check(
        Tensor(a).T.isin(Tensor([2, 4]), invert=True), torch.isin(torch.tensor(a).T, torch.tensor([2, 4]), invert=True)
    )
    check(Tensor(a).isin(2), torch.isin(torch.tensor(a), 2))
    check(Tensor([1.0, NAN]).isin(Tensor([NAN, 1.0])), torch.isin(torch.tensor([1.0, NAN]), torch.tensor([NAN, 1.0])))
    check(Tensor(a).isin(Tensor(np.zeros(0, np.int64))), torch.isin(torch.tensor(a), torch.zeros(0, dtype=torch.int64)))
    with pytest.raises(RuntimeError, match="isin: unsupported input type bool"):
        Tensor([True, False]).isin(Tensor([1]))


def test_searchsorted_bucketize():
    b = np.array([1.0, 3.0, 3.0, 5.0], np.float32)
    v = np.array([[0.0, 3.0, 4.0], [6.0, NAN, INF], [-INF, 1.0, 5.0]], np.float32)
    for kw in ({}, {"right": True}, {"side": "right"}, {"side": "left"}, {"out_int32": True}):
        check(Tensor(b).searchsorted(Tensor(v), **kw), torch.searchsorted(torch.tensor(b), torch.tensor(v), **kw))
        check(
            Tensor(v).bucketize(Tensor(b), right=kw.get("right", False)),
            torch.bucketize(torch.tensor(v), torch.tensor(b), right=kw.get("right", False)),
        )
    s2, v2 = np.array([[1, 3], [2, 4]]), np.array([[2, 3, 4], [2, 3, 4]])
    check(Tensor(s2).searchsorted(Tensor(v2)), torch.searchsorted(torch.tensor(s2), torch.tensor(v2)))
    check(
        Tensor(s2).searchsorted(Tensor(v2), right=True),
        torch.searchsorted(torch.tensor(s2), torch.tensor(v2), right=True),
    )
    check(Tensor(b).searchsorted(3), torch.searchsorted(torch.tensor(b), 3))
    check(Tensor([1, 3]).searchsorted(Tensor([2.5])), torch.searchsorted(torch.tensor([1, 3]), torch.tensor([2.5])))
    srt = np.array([3, 1, 2])
    check(
        Tensor(srt).searchsorted(Tensor([2]), sorter=Tensor([1, 2, 0])),
        torch.searchsorted(torch.tensor(srt), torch.tensor([2]), sorter=torch.tensor([1, 2, 0])),
    )
    check(Tensor(np.zeros(0, np.float32)).searchsorted(Tensor(v)), torch.searchsorted(torch.zeros(0), torch.tensor(v)))
    with pytest.raises(RuntimeError, match="searchsorted: boundaries tensor should be 1 dimension or the first N-1"):
        Tensor(s2).searchsorted(Tensor([2, 3]))
    with pytest.raises(RuntimeError, match="searchsorted: side and right can't be set to opposites"):
        Tensor(b).searchsorted(Tensor([3.0]), side="left", right=True)
    with pytest.raises(RuntimeError, match="searchsorted: side can only be 'left' or 'right'"):
        Tensor(b).searchsorted(Tensor([3.0]), side="foo")
    with pytest.raises(RuntimeError, match="searchsorted: boundaries tensor should have positive dimension"):
        Tensor(1.0).searchsorted(Tensor([3.0]))
    with pytest.raises(RuntimeError, match="bucketize: boundaries tensor must be 1 dimension"):
        Tensor([3]).bucketize(Tensor([[1, 2]]))


def test_unique_consecutive():
    for arr in ([1, 1, 2, 2, 3, 1, 1], [NAN, NAN, 1.0], [[1, 1], [2, 2]], 5, [-0.0, 0.0], [7], np.zeros(0, np.float32)):
        for kw in (
            {},
            {"return_inverse": True},
            {"return_counts": True},
            {"return_inverse": True, "return_counts": True},
        ):
            check(Tensor(arr).unique_consecutive(**kw), torch.tensor(arr).unique_consecutive(**kw))
    r = rng.integers(0, 3, 100)  # long runs and many of them
    check(Tensor(r).unique_consecutive(True, True), torch.tensor(r).unique_consecutive(True, True))
    with pytest.raises(NotImplementedError, match="unique_consecutive: only dim=None"):
        Tensor([1, 2]).unique_consecutive(dim=0)


# ------------------------------------------------------------ special functions, nan-aware min/max, gcd/lcm, frexp


def _special_inputs(name: str, dtype=np.float32) -> np.ndarray:
    edges = {
        "erfinv": [0.0, 0.5, -0.999999, 0.9999999, 1.0, -1.0, 1.5, NAN, 1e-30],
        "lgamma": [0.0, -1.0, -2.0, 1.0, 2.0, 0.5, 1e-8, -1e-8, 1e10, INF, -INF, NAN, -2.5, 171.5],
        "digamma": [0.0, -1.0, -2.0, 1.0, 2.0, 0.5, 1e-3, -2.5, 1e6, NAN],
        "i0": [0.0, 15.0, 15.01, -14.99, 40.0, NAN],
    }[name]
    lo, hi = {"erfinv": (-1, 1), "lgamma": (-10, 30), "digamma": (-10, 30), "i0": (-30, 30)}[name]
    return np.concatenate([rng.uniform(lo, hi, 301), edges]).astype(dtype)


@pytest.mark.parametrize("name", ["erfinv", "lgamma", "digamma", "i0"])
def test_special_functions(name):
    x = _special_inputs(name)
    check(getattr(Tensor(x), name)(), getattr(torch.tensor(x), name)(), atol=1e-5, rtol=2e-5)
    xs = x[:7].reshape(1, 7)[:, ::2]  # odd size, strided
    check(getattr(Tensor(x[:7].reshape(1, 7))[:, ::2], name)(), getattr(torch.tensor(xs), name)(), atol=1e-5, rtol=2e-5)
    check(getattr(Tensor(x[:0]), name)(), getattr(torch.tensor(x[:0]), name)())
    if name != "i0":  # ints give the default float
        i = np.arange(1, 6, dtype=np.int32)
        check(getattr(Tensor(i), name)(), getattr(torch.tensor(i), name)(), atol=1e-5, rtol=2e-5)


def test_erfinv_inverts_erf_in_float64():
    x = rng.uniform(-0.99, 0.99, 101)
    check(Tensor(x).erfinv(), torch.tensor(x).erfinv(), atol=1e-7, rtol=1e-6)
    check(Tensor(x).erfinv().erf(), torch.tensor(x), atol=1e-6)


def test_i0_at_infinity_is_infinite():
    assert Tensor([INF, -INF]).i0().numpy().tolist() == [INF, INF]  # torch gives nan: the limit is +inf


@pytest.mark.parametrize("name", ["fmax", "fmin"])
def test_fmax_fmin(name):
    a = np.float32([1, NAN, NAN, -2, 0.0, -0.0])
    b = np.float32([NAN, 3, NAN, 5, -0.0, 0.0])
    check(getattr(Tensor(a), name)(Tensor(b)), getattr(torch.tensor(a), name)(torch.tensor(b)))
    i, j = np.arange(6, dtype=np.int32), np.int32([5, 4, 3, 2, 1, 0])
    check(getattr(Tensor(i), name)(Tensor(j)), getattr(torch.tensor(i), name)(torch.tensor(j)))
    check_grad(lambda x, y: getattr(x, name)(y), lambda x, y: getattr(x, name)(y), randn(3, 4), randn(4))


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64])
def test_gcd_lcm(dtype):
    info = np.iinfo(dtype)
    hi = min(info.max, 10**6)
    a = rng.integers(-hi, hi, 200).astype(dtype)
    b = rng.integers(-hi, hi, 200).astype(dtype)
    a[:3], b[1:4] = 0, 0
    check(Tensor(a).gcd(Tensor(b)), torch.tensor(a).gcd(torch.tensor(b)))
    m = 12 if dtype is np.int8 else 100
    small = (a % m).astype(dtype), (b % m).astype(dtype)  # lcm stays in range
    check(Tensor(small[0]).lcm(Tensor(small[1])), torch.tensor(small[0]).lcm(torch.tensor(small[1])))
    with pytest.raises(RuntimeError, match="gcd: expected integer tensors, got float32"):
        Tensor([1.0]).gcd(Tensor([2.0]))


def test_gcd_fibonacci_worst_case():
    f = [1, 1]
    while f[-1] < 2**62:
        f.append(f[-1] + f[-2])
    a, b = np.int64(f[-1]), np.int64(f[-2])  # consecutive Fibonacci numbers: Euclid's longest run
    assert Tensor([a]).gcd(Tensor([b])).item() == 1


def test_logaddexp2_ldexp_frexp():
    a, b = randn(5, 4) * 10, randn(4) * 10
    check(Tensor(a).logaddexp2(Tensor(b)), torch.tensor(a).logaddexp2(torch.tensor(b)))
    e = rng.integers(-5, 5, (5, 4))
    check(Tensor(a).ldexp(Tensor(e)), torch.tensor(a).ldexp(torch.tensor(e)))
    for dt in (np.float32, np.float64, np.float16):
        f = np.concatenate([rng.standard_normal(50) * 1e3, [0.0, -0.0, INF, -INF, NAN, 1e-40, -3e-42, 0.5, 1.0]])
        f = f.astype(dt)
        um, ue = Tensor(f).frexp()
        tm, te = torch.tensor(f).frexp()
        check(um, tm, atol=0, rtol=0)
        check(ue, te, atol=0, rtol=0)
    with pytest.raises(RuntimeError, match="frexp: only supports floating-point dtypes"):
        Tensor([1]).frexp()


# ------------------------------------------------------------ small views and metadata


def test_select_narrow_copy_flips_split_with_sizes():
    x = randn(3, 5, 4)
    u, t = Tensor(x), torch.tensor(x)
    check(u.select(1, -2), t.select(1, -2))
    check(u.select(0, 0), t.select(0, 0))
    check(u.narrow_copy(2, 1, 2), t.narrow_copy(2, 1, 2))
    check(u.fliplr(), t.fliplr())
    check(u.flipud(), t.flipud())
    check(u.split_with_sizes([1, 0, 4], 1), t.split_with_sizes([1, 0, 4], 1))
    check(u.mT, t.mT)
    check(u[0].H, t[0].H)
    check(u.adjoint(), t.adjoint())
    check(u.conj().resolve_conj().resolve_neg(), t.conj().resolve_conj().resolve_neg())
    with pytest.raises(IndexError, match="select: index 5 out of range for dim 1 of size 5"):
        u.select(1, 5)
    with pytest.raises(RuntimeError, match="split_with_sizes: expects split_sizes \\[1, 2\\] to be non-negative"):
        u.split_with_sizes([1, 2], 1)
    with pytest.raises(RuntimeError, match="fliplr: input must be >= 2-d"):
        Tensor([1.0]).fliplr()
    with pytest.raises(RuntimeError, match="H: tensor.H is only supported on matrices"):
        u.H  # noqa: B018


@pytest.mark.parametrize("size", [(5, 1), (1, 4), (1, 1), (3, 5, 4), (4,), (5, 4)])
def test_sum_to_size(size):
    x = randn(3, 5, 4)
    check(Tensor(x).sum_to_size(*size), torch.tensor(x).sum_to_size(*size))
    check_grad(lambda a: a.sum_to_size(size), lambda a: a.sum_to_size(size), x)


def test_sum_to_size_refuses_a_size_that_does_not_expand():
    with pytest.raises(RuntimeError, match="sum_to_size: size \\(3,\\) is not expandable to size \\(3, 5, 4\\)"):
        Tensor(randn(3, 5, 4)).sum_to_size(3)


def test_metadata_names():
    x = Tensor(randn(2, 3))
    t = torch.tensor(x.numpy())
    assert (x.ndimension(), x.nelement(), x.itemsize) == (t.ndimension(), t.nelement(), t.itemsize)
    assert x.is_signed() and not Tensor([1], dtype=dtypes.uint8).is_signed() and not Tensor([True]).is_signed()
    assert not x.is_complex() and not x.is_conj() and not x.is_neg()
    assert x.is_same_size(Tensor.zeros(2, 3)) and not x.is_same_size(Tensor.zeros(3, 2))
    assert x.cpu().device == x.device
    assert x.byte().dtype is dtypes.uint8 and x.char().dtype is dtypes.int8
    assert x.equal(Tensor(x.numpy())) and not x.equal(x + 1) and not x.equal(Tensor.zeros(3))
    assert not Tensor([NAN]).equal(Tensor([NAN]))
    assert Tensor([2.0]).is_nonzero() and not Tensor([[0]]).is_nonzero()
    with pytest.raises(RuntimeError, match="is_nonzero: boolean value of Tensor with 2 elements is ambiguous"):
        Tensor([1, 2]).is_nonzero()


def test_to_takes_torch_forms():
    """to(dtype), to(device, dtype), to(other), dtype=/device=/copy= keywords, as torch's Tensor.to."""
    x = rng.standard_normal((3, 4)).astype(np.float32)
    u, t = Tensor(x).permute(1, 0), torch.from_numpy(x).permute(1, 0)  # a view: to() keeps its values
    check(u.to(dtypes.float16), t.to(torch.float16), atol=1e-3)
    check(u.to("CPU", dtypes.int32), t.to("cpu", torch.int32))
    check(u.to(dtype=dtypes.float64), t.to(dtype=torch.float64))
    check(u.to("float16"), t.to(torch.float16), atol=1e-3)
    check(u.to(Tensor(np.zeros(2, np.int8))), t.to(torch.zeros(2, dtype=torch.int8)))
    assert u.to(dtypes.float32) is u and u.to("CPU", non_blocking=True) is u
    copied = u.to(dtypes.float32, copy=True)
    assert copied is not u
    check(copied, t)
    with pytest.raises(TypeError, match="invalid combination"):
        u.to("CPU", dtypes.float32, False, False, 5)
    with pytest.raises(TypeError, match="unexpected keyword"):
        u.to(dtyp=dtypes.float16)


def test_type_names_and_casts():
    x = Tensor(np.ones(2, np.float32))
    assert x.type() == torch.ones(2).type() == "torch.FloatTensor"
    assert x.long().type() == "torch.LongTensor" and Tensor([True]).type() == "torch.BoolTensor"
    check(x.type(dtypes.int32), torch.ones(2).type(torch.int32))


@pytest.mark.parametrize("realize_first", [False, True])
def test_retain_grad_fills_a_non_leaf_grad(realize_first):
    """retain_grad() on an intermediate: backward() fills its .grad (also when it was realized before backward, and
    when the loss reads it both from before and after that realize); a leaf's retain_grad is a no-op."""
    x = rng.standard_normal((3, 4)).astype(np.float32)
    u = Tensor(x, requires_grad=True)
    h = (u * 2).exp()
    h.retain_grad()
    first = h.sum()
    if realize_first:
        h.realize()
    (first + (h * h).sum()).backward()
    t = torch.tensor(x, requires_grad=True)
    th = (t * 2).exp()
    th.retain_grad()
    (th.sum() + (th * th).sum()).backward()
    assert h.retains_grad and not u.retains_grad
    check(h.grad, th.grad, rtol=1e-5)
    check(u.grad, t.grad, rtol=1e-5)
    u.retain_grad()  # a leaf: nothing changes
    assert u.is_leaf and not u.retains_grad
    with pytest.raises(RuntimeError, match="requires_grad=False"):
        Tensor(x).retain_grad()


@pytest.mark.parametrize("name", ["sum", "mean", "prod", "softmax", "log_softmax", "logsumexp", "std", "amax"])
@pytest.mark.parametrize("dim", [0, -1, (0, 1)])
def test_dim_keyword_on_reductions(name, dim):
    """torch's `dim=` keyword (tinygrad spells it `axis`): the same result as torch's."""
    if name in ("softmax", "log_softmax", "prod") and isinstance(dim, tuple):
        return  # torch takes one dim there
    x = rng.standard_normal((3, 4, 2)).astype(np.float32)
    u, t = Tensor(x).permute(1, 0, 2), torch.from_numpy(x).permute(1, 0, 2)
    check(getattr(u, name)(dim=dim), getattr(t, name)(dim=dim), atol=1e-5)


@pytest.mark.parametrize("name", ["max", "min"])
@pytest.mark.parametrize("keepdim", [False, True])
def test_max_min_with_dim_keyword_give_values_and_indices(name, keepdim):
    """x.max(dim=d) is torch's (values, indices) pair; x.max(d) stays tinygrad's values."""
    x = rng.standard_normal((3, 5)).astype(np.float32)
    ours, ref = (
        getattr(Tensor(x), name)(dim=1, keepdim=keepdim),
        getattr(torch.from_numpy(x), name)(dim=1, keepdim=keepdim),
    )
    check(ours.values, ref.values)
    check(ours.indices, ref.indices)
    values, indices = ours
    check(indices, ref[1])
    check(getattr(Tensor(x), name)(1), ref.values if keepdim is False else ref.values.squeeze(1))


def test_flip_dims_keyword():
    x = rng.standard_normal((3, 4)).astype(np.float32)
    check(Tensor(x).flip(dims=(0, 1)), torch.from_numpy(x).flip(dims=(0, 1)))
    check(Tensor(x).flip(dims=[1]), torch.from_numpy(x).flip(dims=[1]))


def test_sort_topk_cummax_give_named_pairs():
    """sort/topk (and cummax/cummin with torch's dim= keyword) return (values, indices) with torch's field names."""
    x = rng.standard_normal((3, 5)).astype(np.float32)
    u, t = Tensor(x), torch.from_numpy(x)
    for ours, ref in [
        (u.sort(dim=0), t.sort(dim=0)),
        (u.topk(2), t.topk(2)),
        (u.cummax(dim=1), t.cummax(dim=1)),
        (u.cummin(dim=0), t.cummin(dim=0)),
    ]:
        check(ours.values, ref.values)
        check(ours.indices, ref.indices)
    check(u.cummax(1).values, t.cummax(1).values)  # the positional form gives the pair too (tinygrad and torch)


def test_grad_fn_marks_results_of_autograd():
    """grad_fn is None for leaves and for tensors outside autograd, a named record for a result of an op."""
    a = Tensor(np.ones(2, np.float32), requires_grad=True)
    assert a.grad_fn is None and Tensor(np.ones(2, np.float32)).grad_fn is None
    b = a * 2
    assert b.grad_fn is not None and b.grad_fn.name() == "MulBackward"
    assert b.detach().grad_fn is None


LAYOUTS = {
    "plain": lambda t: t,
    "permuted": lambda t: t.permute(2, 0, 1),
    "sliced": lambda t: t[1:, :, 2:],
    "expanded": lambda t: t.reshape(1, 2, 3, 4).expand(5, 2, 3, 4),
    "merged view": lambda t: t.reshape(6, 4),
    "view of a slice": lambda t: t[:, 1:].reshape(2, 8),
    "reshape of a permute (a copy)": lambda t: t.permute(1, 0, 2).reshape(3, 8),
    "split view of a permute": lambda t: t.transpose(0, 1).reshape(3, 2, 2, 2),
    "flipped (a copy)": lambda t: t.flip(0),
    "computed": lambda t: t + 1,
    "computed, permuted": lambda t: (t + 1).permute(2, 1, 0),
    "stepped": lambda t: t[:, :, ::2],
    "selected": lambda t: t[1],
    "narrowed": lambda t: t.narrow(2, 1, 2),
    "empty": lambda t: t[:, :0],
}


@pytest.mark.parametrize("name", list(LAYOUTS))
def test_stride_offset_and_contiguity_as_torch_reports_them(name):
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    u, t = LAYOUTS[name](Tensor(x)), LAYOUTS[name](torch.from_numpy(x))
    assert (u.stride(), u.storage_offset(), u.is_contiguous()) == (t.stride(), t.storage_offset(), t.is_contiguous())
    if u.ndim:
        assert u.stride(-1) == t.stride(-1)


def test_device_queries_and_cuda_absence():
    import unigrad

    x = Tensor(np.ones(2, np.float32))
    assert x.is_cpu and not x.is_cuda and x.get_device() == -1 and not unigrad.cuda.is_available()
    assert x.pin_memory() is x and x.share_memory_() is x and unigrad.cuda.device_count() == 0
    with pytest.raises(RuntimeError, match="no CUDA device"):
        x.cuda()


@pytest.mark.parametrize("realize_first", [False, True])
def test_register_hook_changes_the_gradient_that_flows(realize_first):
    """A hook on an intermediate scales what reaches the leaf; a leaf's hook changes its .grad; a removed hook
    does nothing; hooks run in registration order, as torch's."""
    x = rng.standard_normal((3, 4)).astype(np.float32)

    def run(u: Tensor, h: Tensor, backward) -> list:
        seen: list = []
        h.register_hook(lambda g: seen.append(tuple(g.shape)) or g * 3)
        u.register_hook(lambda g: g + 1)
        u.register_hook(lambda g: g * 0.5)
        u.register_hook(lambda g: g * 100).remove()
        backward()
        return seen

    u = Tensor(x, requires_grad=True)
    h = (u * 2).tanh()
    loss = (h * h).sum()
    if realize_first:
        h.realize()
    seen = run(u, h, loss.backward)
    t = torch.tensor(x, requires_grad=True)
    th = (t * 2).tanh()
    run(t, th, (th * th).sum().backward)
    assert seen == [(3, 4)]
    check(u.grad, t.grad, atol=1e-5)
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        Tensor(x).register_hook(lambda g: g)


def test_hook_applies_to_functional_gradient_and_checks_its_result():
    x = Tensor(np.ones(3, np.float32), requires_grad=True)
    y = x * 2
    y.register_hook(lambda g: g * 10)
    (gx,) = (y.sum()).gradient(x)
    np.testing.assert_allclose(gx.numpy(), [20.0, 20.0, 20.0])
    z = Tensor(np.ones(3, np.float32), requires_grad=True)
    z.register_hook(lambda g: g.sum())
    with pytest.raises(RuntimeError, match="must return None or a gradient of shape"):
        (z * 2).sum().backward()


def test_numpy_array_operands_and_torch_nn_attribute():
    """A numpy array operand is a tensor of its dtype (torch promotes it likewise); `import unigrad as torch` then
    `torch.nn.Linear` works without importing unigrad.nn; an optimizer refuses non-tensors with torch's message."""
    import subprocess
    import sys

    a = np.array([1.0, 2.0])
    check(Tensor(np.array([1.0, 2.0], np.float32)) + a, torch.tensor([1.0, 2.0]) + torch.from_numpy(a))
    b = np.array([[1], [2]], dtype=np.int32)
    check(Tensor(np.array([1.0, 2.0], np.float32)) * b, torch.tensor([1.0, 2.0]) * torch.from_numpy(b))
    code = "import unigrad as torch; print(torch.nn.Linear(2, 3).weight.shape)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "(3, 2)"
    from unigrad import nn

    with pytest.raises(TypeError, match="can only optimize Tensors, but one of the params is int"):
        nn.optim.SGD([1, 2], lr=0.1)
