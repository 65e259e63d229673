"""unigrad's torch-style top-level functions (`import unigrad as torch`) against torch: constructors and their
dtype inference, elementwise math, reductions (with torch's overloads and (values, indices) results), movement and
joining, comparisons, grad-mode switches as context managers and decorators, dtype names, and errors at the call."""

import sys

import numpy as np
import pytest
import torch

import unigrad
from unigrad import Tensor, dtypes

rng = np.random.default_rng(0)


def randn(*shape: int, dtype=np.float32) -> np.ndarray:
    return rng.standard_normal(shape).astype(dtype)


def to_u(x):
    """numpy arrays (also inside lists and tuples) as unigrad Tensors."""
    if isinstance(x, np.ndarray):
        return Tensor(x)
    if isinstance(x, (list, tuple)):
        return type(x)(to_u(v) for v in x)
    return x


def to_t(x):
    if isinstance(x, np.ndarray):
        return torch.tensor(x)
    if isinstance(x, (list, tuple)):
        return type(x)(to_t(v) for v in x)
    return x


def check(u, t, atol: float = 1e-5, rtol: float = 1e-4) -> None:
    """unigrad result u against torch result t: tensors by shape, dtype and value; tuples (and torch's named
    (values, indices) results) pairwise; Python scalars by value."""
    if isinstance(t, torch.Tensor):
        assert isinstance(u, Tensor), (type(u), t)
        assert u.shape == tuple(t.shape), (u.shape, tuple(t.shape))
        assert u.dtype.name == str(t.dtype).removeprefix("torch."), (u.dtype, t.dtype)
        np.testing.assert_allclose(u.numpy(), t.detach().numpy(), atol=atol, rtol=rtol, equal_nan=True)
    elif isinstance(t, (tuple, list)):
        assert isinstance(u, (tuple, list)) and len(u) == len(t), (u, t)
        if hasattr(t, "values") and hasattr(t, "indices"):
            check(u.values, t.values, atol, rtol)
            check(u.indices, t.indices, atol, rtol)
        for a, b in zip(u, t):
            check(a, b, atol, rtol)
    else:
        assert type(u) is type(t) and u == t, (u, t)


def same(name: str, *args, **kw) -> None:
    """unigrad.<name> and torch.<name> on the same arguments (numpy arrays become each library's tensors)."""
    check(getattr(unigrad, name)(*to_u(args), **kw), getattr(torch, name)(*to_t(args), **kw))


def check_grad(name: str, *arrays: np.ndarray, **kw) -> None:
    """Forward values and the gradient of sum(out * w) (random w) against torch autograd."""
    us = [Tensor(a, requires_grad=True) for a in arrays]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    ou, ot = getattr(unigrad, name)(*us, **kw), getattr(torch, name)(*ts, **kw)
    if isinstance(ot, tuple):
        ou, ot = ou[0], ot[0]
    check(ou, ot)
    w = rng.standard_normal(tuple(ot.shape)).astype(np.float32)
    (ou * Tensor(w)).sum().backward()
    (ot * torch.tensor(w)).sum().backward()
    for u, t in zip(us, ts):
        tg = torch.zeros_like(t) if t.grad is None else t.grad
        ug = np.zeros(u.shape, np.float32) if u.grad is None else u.grad.numpy()
        np.testing.assert_allclose(ug, tg.numpy(), atol=1e-4, rtol=1e-3)


# ---------------------------------------------------------------- constructors


def test_constant_constructors():
    for size in [(2, 3), ((2, 3),), ([4],), (0,), ((),)]:
        for name in ("zeros", "ones"):
            same(name, *size)
        e = unigrad.empty(*size)
        assert e.shape == tuple(torch.empty(*size).shape) and e.dtype is dtypes.float32
    check(unigrad.zeros(2, dtype=unigrad.int32), torch.zeros(2, dtype=torch.int32))
    check(unigrad.ones((2, 1), dtype=unigrad.float16), torch.ones((2, 1), dtype=torch.float16))
    for fill in (3, 2.5, True):
        same("full", (2, 3), fill)
    check(unigrad.full((2,), 3, dtype=unigrad.float64), torch.full((2,), 3, dtype=torch.float64))
    for args in [(5,), (2, 7), (1, 2, 0.25), (0.5, 3), (5, 0, -2), (0,)]:
        same("arange", *args)
    check(unigrad.arange(4, dtype=unigrad.float32), torch.arange(4, dtype=torch.float32))
    for args in [(0, 1, 5), (-2, 3, 1), (1, 2, 0), (0, 10, 7)]:
        same("linspace", *args)
    for args in [(3,), (2, 4), (0,)]:
        same("eye", *args)
    check(unigrad.eye(3, dtype=unigrad.int64), torch.eye(3, dtype=torch.int64))
    z = unigrad.zeros(3, requires_grad=True)
    assert z.requires_grad and z.is_leaf
    assert unigrad.ones(2).requires_grad in (None, False)


def test_like_constructors():
    x = randn(2, 3)
    i = np.array([[1, 2, 3]])
    for name in ("zeros_like", "ones_like"):
        same(name, x)
        same(name, i)
        check(
            getattr(unigrad, name)(Tensor(i), dtype=unigrad.float32),
            getattr(torch, name)(torch.tensor(i), dtype=torch.float32),
        )
    same("full_like", x, 7)
    same("full_like", i, 2.5)  # the input's integer dtype wins, as torch
    for name in ("empty_like", "rand_like", "randn_like"):
        u, t = getattr(unigrad, name)(Tensor(x)), getattr(torch, name)(torch.tensor(x))
        assert u.shape == tuple(t.shape) and u.dtype.name == str(t.dtype).removeprefix("torch.")
    r = unigrad.rand_like(Tensor(x), dtype=unigrad.float64)
    assert r.dtype is dtypes.float64 and 0 <= r.numpy().min() and r.numpy().max() < 1
    assert unigrad.zeros_like(Tensor(x), requires_grad=True).requires_grad


def test_random_constructors():
    r = unigrad.rand(1000)
    assert r.dtype is dtypes.float32 and r.shape == (1000,)
    assert 0 <= r.numpy().min() and r.numpy().max() < 1 and abs(r.numpy().mean() - 0.5) < 0.05
    n = unigrad.randn((40, 50), dtype=unigrad.float64)
    assert n.dtype is dtypes.float64 and abs(n.numpy().std() - 1) < 0.1
    a = unigrad.randint(3, 7, (500,))
    assert a.dtype is dtypes.int64 and set(np.unique(a.numpy())) == {3, 4, 5, 6}
    b = unigrad.randint(4, size=(2, 3), dtype=unigrad.int32)
    assert b.shape == (2, 3) and b.dtype is dtypes.int32 and b.numpy().max() < 4
    p = unigrad.randperm(9)
    assert p.dtype is dtypes.int64 and sorted(p.tolist()) == list(range(9))
    unigrad.manual_seed(7)
    first = unigrad.randn(5).numpy()
    unigrad.manual_seed(7)
    np.testing.assert_array_equal(unigrad.randn(5).numpy(), first)
    assert unigrad.rand(2, requires_grad=True).requires_grad
    with pytest.raises(RuntimeError, match=r"randint\(\): random_ expects 'from' to be less than 'to'"):
        unigrad.randint(5, 5, (2,))
    with pytest.raises(TypeError, match=r"randint\(\): missing the size argument"):
        unigrad.randint()
    with pytest.raises(TypeError, match=r"generator: expected a unigrad.Generator \(torch.Generator\), got object"):
        unigrad.rand(2, generator=object())


def test_generator_draws_its_own_reproducible_stream():
    """generator= (torch's): a Generator's draws repeat after its reseed whatever the global generator did, leave the
    global stream alone, and advance under TinyJit replays as eagerly."""
    from unigrad import Tensor, TinyJit

    def draws(g):
        return [
            unigrad.rand(3, generator=g).numpy(),
            unigrad.randn(2, 2, generator=g).numpy(),
            unigrad.randint(0, 100, (5,), generator=g).numpy(),
            unigrad.randperm(6, generator=g).numpy(),
            unigrad.normal(1.0, 2.0, (3,), generator=g).numpy(),
            unigrad.randint_like(unigrad.zeros(4, dtype=unigrad.int64), 9, generator=g).numpy(),
            unigrad.multinomial(unigrad.ones(6), 3, generator=g).numpy(),
        ]

    unigrad.manual_seed(1)
    first = draws(unigrad.Generator().manual_seed(11))
    unigrad.manual_seed(1)
    glob = unigrad.rand(4).numpy()
    unigrad.manual_seed(2)
    unigrad.rand(7)  # the global generator moves on ...
    again = draws(unigrad.Generator().manual_seed(11))  # ... the reseeded one repeats its stream
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)
    assert sorted(first[3].tolist()) == list(range(6)) and len(set(first[6].tolist())) == 3
    unigrad.manual_seed(1)
    g = unigrad.Generator().manual_seed(11)
    draws(g)  # drawing from g does not move the global stream
    np.testing.assert_array_equal(unigrad.rand(4).numpy(), glob)
    other = draws(g)
    assert not np.array_equal(other[0], first[0])  # g itself moved on

    g, h = unigrad.Generator().manual_seed(3), unigrad.Generator().manual_seed(3)
    step = TinyJit(lambda x: x + unigrad.rand(4, generator=g))
    zero = Tensor.zeros(4).contiguous().realize()
    jitted = [step(zero).numpy() for _ in range(5)]  # captured at the second call, replayed from the third
    eager = [unigrad.rand(4, generator=h).numpy() for _ in range(5)]
    for a, b in zip(jitted, eager):
        np.testing.assert_array_equal(a, b)


def test_tensor_as_tensor_from_numpy():
    for data in [1.5, 3, True, [1.0, 2.0], [[1, 2], [3, 4]], [True, False], [], np.arange(3.0), np.float32(2.5)]:
        check(unigrad.tensor(data), torch.tensor(data))
    check(unigrad.tensor([1, 2], dtype=unigrad.float64), torch.tensor([1, 2], dtype=torch.float64))
    check(unigrad.tensor([unigrad.tensor(1.0), unigrad.tensor(2.0)]), torch.tensor([1.0, 2.0]))
    src = Tensor(randn(3), requires_grad=True)
    copy = unigrad.tensor(src)  # a detached copy
    assert not copy.requires_grad and copy is not src
    np.testing.assert_array_equal(copy.numpy(), src.numpy())
    leaf = unigrad.tensor([1.0, 2.0], requires_grad=True)
    (leaf * 3).sum().backward()
    np.testing.assert_array_equal(leaf.grad.numpy(), [3.0, 3.0])
    x = Tensor(randn(3))
    assert unigrad.as_tensor(x) is x and unigrad.as_tensor(x, dtype=unigrad.float32) is x
    check(unigrad.as_tensor(x, dtype=unigrad.float64), torch.as_tensor(torch.tensor(x.numpy()), dtype=torch.float64))
    check(unigrad.as_tensor([1, 2]), torch.as_tensor([1, 2]))
    for arr in [np.arange(6).reshape(2, 3), randn(2, 2).astype(np.float64), np.array([True]), np.zeros(3, np.uint8)]:
        check(unigrad.from_numpy(arr), torch.from_numpy(arr))
    with pytest.raises(TypeError, match=r"from_numpy\(\): expected np.ndarray \(got list\)"):
        unigrad.from_numpy([1, 2])
    assert unigrad.is_tensor(x) and not unigrad.is_tensor(x.numpy())
    assert unigrad.numel(Tensor(randn(2, 3))) == 6 and unigrad.is_floating_point(x)


def test_dtype_names_and_default_dtype():
    for name in ["float32", "float16", "bfloat16", "float64", "int8", "int16", "int32", "int64", "uint8", "bool"]:
        assert getattr(unigrad, name).name == name
    for alias, name in [
        ("float", "float32"),
        ("half", "float16"),
        ("double", "float64"),
        ("long", "int64"),
        ("int", "int32"),
        ("short", "int16"),
    ]:
        assert getattr(unigrad, alias) is getattr(dtypes, name)
        assert str(getattr(torch, alias)) == f"torch.{name}"
    assert unigrad.get_default_dtype() is dtypes.float32
    try:
        unigrad.set_default_dtype(unigrad.float64)
        assert unigrad.get_default_dtype() is dtypes.float64
        assert unigrad.tensor([1.5]).dtype is dtypes.float64 and unigrad.zeros(2).dtype is dtypes.float64
    finally:
        unigrad.set_default_dtype(unigrad.float32)
    assert unigrad.zeros(2).dtype is dtypes.float32
    with pytest.raises(TypeError, match=r"set_default_dtype\(\): only floating-point types are supported"):
        unigrad.set_default_dtype(unigrad.int64)


def test_tensor_name_shadows_the_submodule_safely():
    assert callable(unigrad.tensor) and unigrad.tensor([1]).dtype is dtypes.int64
    from unigrad.tensor import Tensor as T2  # the submodule is still importable by name

    assert T2 is Tensor and sys.modules["unigrad.tensor"].Tensor is Tensor


# ---------------------------------------------------------------- grad mode


def test_grad_mode_switches():
    x = Tensor(randn(3), requires_grad=True)
    assert unigrad.is_grad_enabled()
    with unigrad.no_grad():
        assert not unigrad.is_grad_enabled() and not (x * 2).requires_grad
        with unigrad.enable_grad():
            assert unigrad.is_grad_enabled() and (x * 2).requires_grad
        assert not unigrad.is_grad_enabled()
    with unigrad.inference_mode():
        assert not (x * 2).requires_grad
    with unigrad.inference_mode(False):
        assert (x * 2).requires_grad
    with unigrad.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert unigrad.is_grad_enabled()
    unigrad.set_grad_enabled(False)  # as a plain call: switches now
    try:
        assert not unigrad.is_grad_enabled()
    finally:
        unigrad.set_grad_enabled(True)

    @unigrad.no_grad()
    def f(t):
        return t * 2

    @unigrad.inference_mode()
    def g(t):
        return t * 2

    @unigrad.enable_grad()
    def h(t):
        return t * 2

    @unigrad.no_grad
    def f_bare(t):
        return t * 2

    @unigrad.inference_mode
    def g_bare(t):
        return t * 2

    assert not f(x).requires_grad and not g(x).requires_grad and unigrad.is_grad_enabled()
    assert not f_bare(x).requires_grad and not g_bare(x).requires_grad and unigrad.is_grad_enabled()
    from unigrad.tensor import no_grad as core_no_grad

    assert isinstance(unigrad.no_grad(), core_no_grad)  # the same switch as the Tensor module's
    with unigrad.no_grad():
        assert h(x).requires_grad
    with pytest.raises(ValueError):
        with unigrad.no_grad():
            raise ValueError("restored on an exception too")
    assert unigrad.is_grad_enabled()


# ---------------------------------------------------------------- math


ANY_REAL = """abs neg exp exp2 expm1 square sin cos tan atan sinh cosh asinh erf erfc floor ceil trunc frac sign sigmoid
    tanh relu isnan isinf isfinite logical_not signbit absolute negative sgn""".split()
UNARY = {name: None for name in ANY_REAL}
UNARY |= {name: "pos" for name in ("log", "log2", "log10", "log1p", "sqrt", "rsqrt", "reciprocal")}
UNARY |= {"asin": "unit", "acos": "unit", "atanh": "unit", "acosh": "gt1"}


def _domain(kind, shape):
    x = randn(*shape)
    if kind == "pos":
        return np.abs(x) + 0.1
    if kind == "unit":
        return np.tanh(x) * 0.9
    if kind == "gt1":
        return np.abs(x) + 1.1
    return x


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(name):
    for shape in [(0,), (1,), (7,), (3, 5)]:
        same(name, _domain(UNARY[name], shape))
    x = _domain(UNARY[name], (5, 3))
    check(getattr(unigrad, name)(Tensor(x).T), getattr(torch, name)(torch.tensor(x).T))  # non-contiguous
    with pytest.raises(TypeError, match=rf"{name}\(\): argument 'input' must be Tensor, not list"):
        getattr(unigrad, name)([1.0])


def test_unary_grads():
    for name in ("exp", "sigmoid", "tanh", "relu", "sin", "abs", "square"):
        check_grad(name, randn(3, 4))
    check_grad("log", np.abs(randn(5)) + 0.1)
    check_grad("sqrt", np.abs(randn(5)) + 0.1)


def test_binary():
    a, b = randn(3, 4), randn(4)
    i, j = np.array([7, -7, 5, 0]), np.array([2, 3, -2, 4])
    for name in (
        "mul",
        "multiply",
        "maximum",
        "minimum",
        "atan2",
        "hypot",
        "eq",
        "ne",
        "lt",
        "le",
        "gt",
        "ge",
        "fmod",
        "remainder",
        "true_divide",
        "xlogy",
        "logaddexp",
        "copysign",
        "arctan2",
        "float_power",
    ):
        same(name, a, b)
        if name in ("mul", "multiply", "eq", "ne", "lt", "le", "gt", "ge", "fmod", "remainder", "true_divide"):
            same(name, a, 0.5)  # a scalar other
    for name in ("floor_divide", "remainder", "fmod", "bitwise_and", "bitwise_or", "bitwise_xor"):
        same(name, i, j)
    for name in ("logical_and", "logical_or", "logical_xor"):
        same(name, a > 0, b > 0)
    same("add", a, b)
    same("add", a, b, alpha=2)
    same("add", a, 3)
    same("sub", a, b, alpha=0.5)
    same("subtract", a, b)
    same("div", a, b)
    same("divide", a, 2.0)
    for mode in ("trunc", "floor"):
        same("div", a, b, rounding_mode=mode)
        same("div", i, j, rounding_mode=mode)
    same("pow", np.abs(a), b)
    same("pow", a, 2)
    same("pow", 2.0, b)  # a scalar base
    same("clamp", a, -0.5, 0.5)
    same("clamp", a, min=0.0)
    same("clip", a, max=0.1)
    same("clamp", a, np.full(4, -0.2, np.float32), np.full(4, 0.3, np.float32))
    same("clamp_min", a, 0.1)
    same("clamp_max", i, 2)
    same("lerp", a, b, 0.3)
    same("addcmul", a, a, b, value=0.5)
    same("addcdiv", a, a, np.abs(b) + 1)
    same("nan_to_num", np.array([np.nan, np.inf, -np.inf, 1.0], np.float32))
    same("where", a > 0, a, b)
    same("where", a > 0, a, 0.0)
    same("where", a > 0, 1.0, 0.0)
    same("where", np.array([[True, False], [False, True]]))
    for dim in (0, 1, -1):
        same("softmax", a, dim)
        same("log_softmax", a, dim)
    check_grad("maximum", randn(3, 4), randn(3, 4))
    check_grad("add", randn(3, 4), randn(4), alpha=2.0)
    check_grad("div", randn(3, 4), np.abs(randn(3, 4)) + 0.5)
    check_grad("softmax", randn(3, 4), dim=1)
    with pytest.raises(RuntimeError, match=r"clamp\(\): at least one of 'min' or 'max' must not be None"):
        unigrad.clamp(Tensor(a))
    with pytest.raises(TypeError, match=r"where\(\): expected where\(condition\) or where\(condition, input, other"):
        unigrad.where(Tensor(a > 0), Tensor(a))


def test_products():
    same("matmul", randn(3, 4), randn(4, 5))
    same("matmul", randn(2, 3, 4), randn(4))
    same("mm", randn(3, 4), randn(4, 2))
    same("bmm", randn(2, 3, 4), randn(2, 4, 5))
    same("einsum", "bij,bjk->bik", randn(2, 3, 4), randn(2, 4, 5))
    same("einsum", "ii->i", randn(3, 3))
    p, q = randn(2, 3), randn(3, 2)
    check(unigrad.einsum("ij,jk", [Tensor(p), Tensor(q)]), torch.einsum("ij,jk", [torch.tensor(p), torch.tensor(q)]))
    same("dot", randn(5), randn(5))
    same("outer", randn(3), randn(4))
    same("mv", randn(3, 4), randn(4))
    same("addmm", randn(3, 5), randn(3, 4), randn(4, 5), beta=0.5, alpha=2)
    same("baddbmm", randn(2, 3, 5), randn(2, 3, 4), randn(2, 4, 5))
    check_grad("matmul", randn(3, 4), randn(4, 5))
    check_grad("bmm", randn(2, 3, 4), randn(2, 4, 5))
    a = randn(4, 3)
    check(unigrad.mm(Tensor(a).T, Tensor(a)), torch.mm(torch.tensor(a).T, torch.tensor(a)))  # a transposed operand
    with pytest.raises(RuntimeError, match=r"bmm\(\): expected 3-D tensors \(b, n, m\) and \(b, m, p\), got \(3, 4\)"):
        unigrad.bmm(Tensor(randn(3, 4)), Tensor(randn(4, 5)))
    with pytest.raises(RuntimeError, match=r"dot\(\): 1D tensors expected, but got 2D and 1D tensors"):
        unigrad.dot(Tensor(randn(2, 2)), Tensor(randn(2)))


# ---------------------------------------------------------------- reductions


def test_reductions():
    x = randn(3, 4, 5)
    i = rng.integers(-5, 5, (3, 4)).astype(np.int64)
    for name in ("sum", "mean", "amax", "amin", "logsumexp", "prod", "std", "var", "norm", "count_nonzero"):
        for args in [(), (1,), (-1,)]:
            if name == "logsumexp" and not args:
                continue
            same(name, x, *args)
        if name not in ("prod", "count_nonzero", "norm"):
            same(name, x, (0, 2))
    for name in ("sum", "mean", "amax", "logsumexp", "prod"):
        same(name, x, 1, True)
    same("sum", i)
    check(unigrad.sum(Tensor(i), 1, dtype=unigrad.float64), torch.sum(torch.tensor(i), 1, dtype=torch.float64))
    check(unigrad.mean(Tensor(i), dtype=unigrad.float32), torch.mean(torch.tensor(i), dtype=torch.float32))
    same("prod", i, 0)
    for name in ("all", "any"):
        same(name, x > 0)
        same(name, x > 0, 1)
        same(name, x > 0, 1, True)
    for name in ("max", "min"):
        same(name, x)
        same(name, x, 1)
        same(name, x, -1, True)
        same(name, x, randn(5))  # against another tensor: elementwise
        same(name, i, 0)
    for name in ("argmax", "argmin"):
        same(name, x)
        same(name, x, 2)
        same(name, x, 0, True)
    same("aminmax", x, dim=1)
    same("median", x)
    same("median", x, 1)
    same("std", x, 1, False)  # (input, dim, unbiased)
    same("var", x, True)  # (input, unbiased)
    same("std", x, 1, keepdim=True, correction=0)
    same("var", x, (0, 1), correction=2)
    same("std_mean", x, 1)
    same("var_mean", x, 0, correction=0)
    for name in ("cumsum", "cumprod", "logcumsumexp"):
        same(name, x, 1)
    same("cumsum", i, 0)
    check(unigrad.cumsum(Tensor(i), 1, dtype=unigrad.float32), torch.cumsum(torch.tensor(i), 1, dtype=torch.float32))
    same("cummax", x, 2)
    same("cummin", x, 0)
    same("norm", x, 1.0, 1)
    same("norm", x, 2, (1, 2), True)
    check_grad("sum", randn(3, 4), dim=1)
    check_grad("mean", randn(3, 4), dim=(0, 1))
    check_grad("max", randn(3, 4), dim=1)
    check_grad("std", randn(3, 4), dim=0)
    check_grad("logsumexp", randn(3, 4), dim=1)
    check_grad("cumsum", randn(3, 4), dim=1)
    with pytest.raises(RuntimeError, match=r"mean\(\): could not infer output dtype"):
        unigrad.mean(Tensor(i))
    u, t = unigrad.max(Tensor(x), 1), torch.max(torch.tensor(x), 1)
    assert u._fields == ("values", "indices")
    check(u.values, t.values)
    check(u.indices, t.indices)


def test_sort_topk_kthvalue():
    x = randn(4, 6)
    same("sort", x)
    same("sort", x, 0, True)
    same("sort", x, descending=True, stable=True)
    same("argsort", x, 1)
    same("argsort", x, 0, True)
    same("topk", x, 3)
    same("topk", x, 2, 0, False)
    same("kthvalue", x, 2, 1)
    same("msort", x)
    check_grad("sort", randn(3, 5), dim=1)
    check_grad("topk", randn(3, 5), k=2)
    u = unigrad.sort(Tensor(x))
    assert u.values.shape == (4, 6) and u.indices.dtype is dtypes.int64


# ---------------------------------------------------------------- joining and movement


def test_joining():
    a, b = randn(2, 3), randn(4, 3)
    same("cat", [a, b])
    same("cat", (a, b), 0)
    same("cat", [a.T.copy(), b.T.copy()], dim=1)
    same("concat", [a, b])
    same("concatenate", [a, b], 0)
    same("stack", [a, a, a])
    same("stack", [a, a], 2)
    same("stack", [a, a], dim=-1)
    same("hstack", [a, a])
    same("hstack", [randn(3), randn(2)])
    same("vstack", [a, b])
    same("vstack", [randn(3), randn(3)])
    same("cat", [randn(0, 3), a])
    check(unigrad.cat([Tensor(a), Tensor(b).T.T]), torch.cat([torch.tensor(a), torch.tensor(b)]))
    us = [Tensor(a, requires_grad=True), Tensor(b, requires_grad=True)]
    ts = [torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)]
    w = randn(6, 3)
    (unigrad.cat(us) * Tensor(w)).sum().backward()
    (torch.cat(ts) * torch.tensor(w)).sum().backward()
    for u, t in zip(us, ts):
        np.testing.assert_allclose(u.grad.numpy(), t.grad.numpy())
    with pytest.raises(TypeError, match=r"cat\(\): argument 'tensors' must be a tuple or list of Tensors, not Tensor"):
        unigrad.cat(Tensor(a))
    with pytest.raises(RuntimeError, match=r"stack\(\): expected a non-empty list of Tensors"):
        unigrad.stack([])
    with pytest.raises(TypeError, match=r"cat\(\): argument 'tensors' must be Tensor, not ndarray"):
        unigrad.cat([Tensor(a), b])


def test_movement():
    x = randn(2, 3, 4)
    same("reshape", x, (4, -1))
    same("reshape", x, [24])
    same("flatten", x)
    same("flatten", x, 1)
    same("flatten", x, 0, 1)
    same("unflatten", x, 2, (2, 2))
    same("transpose", x, 0, 2)
    same("swapaxes", x, 0, 1)
    same("swapdims", x, 1, 2)
    same("permute", x, (2, 0, 1))
    same("permute", x, [1, 0, 2])
    same("movedim", x, 0, -1)
    same("moveaxis", x, (0, 1), (2, 0))
    same("squeeze", randn(1, 3, 1))
    same("squeeze", randn(1, 3, 1), 0)
    same("squeeze", randn(1, 3, 1), (0, 2))
    same("unsqueeze", x, 1)
    same("unsqueeze", x, -1)
    same("broadcast_to", randn(3, 1), (2, 3, 4))
    same("split", x, 2, 2)
    same("split", x, [1, 2], 1)
    same("chunk", x, 2, 2)
    same("chunk", x, 3)
    same("tensor_split", x, 3, 2)
    same("unbind", x, 1)
    same("t", randn(3, 4))
    same("ravel", x)
    idx = rng.integers(0, 3, (2, 3, 4))
    same("gather", x, 1, idx)
    same("take_along_dim", x, idx, 1)
    same("index_select", x, 2, np.array([3, 0, 0]))
    same("masked_fill", x, x > 0, -1.0)
    same("masked_select", x, x > 0)
    same("scatter", np.zeros((3, 4), np.float32), 1, np.array([[0, 1], [2, 3], [1, 0]]), randn(3, 2))
    same("scatter_add", np.zeros((3, 4), np.float32), 1, np.array([[0, 0], [2, 3], [1, 1]]), randn(3, 2))
    same("index_add", np.zeros((4, 2), np.float32), 0, np.array([0, 2, 0]), randn(3, 2))
    same("nonzero", x > 0)
    same("nonzero", x > 0, as_tuple=True)
    same("narrow", x, 2, 1, 2)
    same("flip", x, (0, 2))
    same("flip", x, [1])
    same("roll", x, 1)
    same("roll", x, (1, -2), (0, 2))
    same("rot90", randn(3, 4))
    same("rot90", randn(3, 4), 3, (1, 0))
    same("tile", randn(2, 3), (2, 1))
    same("repeat_interleave", randn(2, 3), 2)
    same("repeat_interleave", randn(2, 3), 2, 1)
    for name in ("tril", "triu"):
        same(name, randn(4, 5))
        same(name, randn(2, 4, 5), 1)
        same(name, randn(4, 5), -2)
    same("diag", randn(4))
    same("diag", randn(4, 4), 1)
    same("diagonal", randn(3, 4), 1)
    same("diagonal", x, 0, 1, 2)
    same("diff", randn(5))
    same("diff", randn(3, 5), 2, 0)
    same("cross", randn(4, 3), randn(4, 3), 1)
    same("meshgrid", randn(3), randn(2), indexing="ij")
    same("meshgrid", [randn(3), randn(2)], indexing="xy")
    same("searchsorted", np.array([1.0, 3.0, 5.0], np.float32), np.array([0.0, 3.0, 6.0], np.float32))
    same("searchsorted", np.array([1.0, 3.0, 5.0], np.float32), np.array([3.0], np.float32), right=True)
    same("bucketize", np.array([0.0, 3.0, 6.0], np.float32), np.array([1.0, 3.0, 5.0], np.float32))
    same("unique", np.array([3, 1, 3, 2]))
    same("unique", np.array([3, 1, 3, 2]), return_counts=True)
    same("bincount", np.array([0, 1, 1, 4]))
    same("isin", np.array([1, 2, 3]), np.array([2, 5]))
    same("clone", x)
    same("detach", x)
    same("trace", randn(3, 3))
    same("corrcoef", randn(3, 5))
    check_grad("permute", randn(2, 3, 4), dims=(1, 2, 0))
    check_grad("flip", randn(2, 3), dims=(1,))
    check_grad("tril", randn(4, 4))
    check_grad("transpose", randn(2, 3), dim0=0, dim1=1)


def test_comparisons():
    a = randn(3, 4)
    b = a + 1e-7
    c = a.copy()
    c[0, 0] += 1
    for other in (a, b, c):
        same("allclose", a, other)
        same("isclose", a, other)
        same("equal", a, other)
    n = np.array([np.nan, 1.0], np.float32)
    same("allclose", n, n)
    same("allclose", n, n, equal_nan=True)
    same("isclose", a, c, 0.1, 1.5)
    same("equal", a, a[:2])  # different shapes: False, as torch
    same("equal", np.array([1, 2]), np.array([1, 2]))
