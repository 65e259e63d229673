"""torch's named in-place methods (api/inplace.py) against torch: every value op of the table on float and int
tensors (contiguous, a transposed view, size 0 and 1), that the write lands in the tensor's buffer (views see it),
dtype rules, autograd through a non-leaf, the leaf error; random fills (ranges, moments, the seed); in-place view
ops; copy_, detach_, fill_diagonal_, index_put/put/take; add/sub's alpha and the aliases."""

import numpy as np
import pytest
import torch

from unigrad import Tensor, dtypes, no_grad
from unigrad.api.inplace import _VALUE_OPS

rng = np.random.default_rng(0)


def check(u: Tensor, t: torch.Tensor, atol: float = 1e-5) -> None:
    assert u.shape == tuple(t.shape), (u.shape, tuple(t.shape))
    assert u.dtype.name == str(t.dtype).removeprefix("torch."), (u.dtype, t.dtype)
    np.testing.assert_allclose(u.numpy(), t.numpy(), rtol=1e-5, atol=atol, equal_nan=True)


def pos(*s: int) -> np.ndarray:
    return rng.uniform(0.5, 2.0, s).astype(np.float32)


def unit(*s: int) -> np.ndarray:
    return rng.uniform(-0.9, 0.9, s).astype(np.float32)


def randn(*s: int) -> np.ndarray:
    return rng.standard_normal(s).astype(np.float32)


def ints(*s: int) -> np.ndarray:
    return rng.integers(-20, 20, s).astype(np.int32)


# name -> (input maker, extra arguments as numpy arrays or scalars). Arrays become tensors of each library.
IDX = np.array([2, 0], dtype=np.int64)
CASES: dict[str, tuple] = {
    "add": (randn, (randn(3, 5),), {"alpha": 2.0}),
    "sub": (randn, (randn(3, 5),), {"alpha": 0.5}),
    "subtract": (randn, (1.5,), {}),
    "mul": (randn, (randn(1, 5),), {}),
    "multiply": (randn, (3.0,), {}),
    "div": (randn, (pos(3, 5),), {}),
    "divide": (randn, (pos(3, 5),), {"rounding_mode": "floor"}),
    "true_divide": (randn, (pos(5),), {}),
    "floor_divide": (randn, (pos(3, 5),), {}),
    "remainder": (randn, (pos(3, 5),), {}),
    "fmod": (randn, (pos(3, 5),), {}),
    "pow": (pos, (randn(3, 5),), {}),
    "neg": (randn, (), {}),
    "negative": (randn, (), {}),
    "reciprocal": (pos, (), {}),
    "square": (randn, (), {}),
    "addcmul": (randn, (randn(3, 5), randn(3, 5)), {"value": 0.5}),
    "addcdiv": (randn, (randn(3, 5), pos(3, 5)), {"value": 2.0}),
    "lerp": (randn, (randn(3, 5), 0.3), {}),
    "hypot": (randn, (randn(3, 5),), {}),
    "atan2": (randn, (randn(3, 5),), {}),
    "arctan2": (randn, (randn(3, 5),), {}),
    "copysign": (randn, (randn(3, 5),), {}),
    "xlogy": (randn, (pos(3, 5),), {}),
    "heaviside": (randn, (randn(3, 5),), {}),
    "addmm": (lambda *s: randn(3, 5), (randn(3, 4), randn(4, 5)), {"beta": 0.5, "alpha": 2.0}),
    "addmv": (lambda *s: randn(3), (randn(3, 4), randn(4)), {}),
    "addr": (randn, (randn(3), randn(5)), {}),
    "baddbmm": (lambda *s: randn(2, 3, 5), (randn(2, 3, 4), randn(2, 4, 5)), {}),
    "eq": (ints, (ints(3, 5),), {}),
    "ne": (ints, (0,), {}),
    "not_equal": (ints, (ints(3, 5),), {}),
    "lt": (randn, (0.0,), {}),
    "less": (randn, (randn(3, 5),), {}),
    "le": (randn, (randn(3, 5),), {}),
    "less_equal": (randn, (0.1,), {}),
    "gt": (randn, (randn(3, 5),), {}),
    "greater": (randn, (randn(3, 5),), {}),
    "ge": (randn, (randn(3, 5),), {}),
    "greater_equal": (randn, (0.0,), {}),
    "abs": (randn, (), {}),
    "absolute": (ints, (), {}),
    "sign": (randn, (), {}),
    "sgn": (randn, (), {}),
    "sqrt": (pos, (), {}),
    "rsqrt": (pos, (), {}),
    "exp": (randn, (), {}),
    "exp2": (randn, (), {}),
    "expm1": (randn, (), {}),
    "log": (pos, (), {}),
    "log2": (pos, (), {}),
    "log10": (pos, (), {}),
    "log1p": (pos, (), {}),
    "sin": (randn, (), {}),
    "cos": (randn, (), {}),
    "tan": (unit, (), {}),
    "asin": (unit, (), {}),
    "acos": (unit, (), {}),
    "atan": (randn, (), {}),
    "arcsin": (unit, (), {}),
    "arccos": (unit, (), {}),
    "arctan": (randn, (), {}),
    "sinh": (randn, (), {}),
    "cosh": (randn, (), {}),
    "tanh": (randn, (), {}),
    "asinh": (randn, (), {}),
    "acosh": (lambda *s: pos(*s) + 1, (), {}),
    "atanh": (unit, (), {}),
    "arcsinh": (randn, (), {}),
    "arccosh": (lambda *s: pos(*s) + 1, (), {}),
    "arctanh": (unit, (), {}),
    "sigmoid": (randn, (), {}),
    "relu": (randn, (), {}),
    "logit": (lambda *s: rng.uniform(0.05, 0.95, s).astype(np.float32), (), {}),
    "erf": (randn, (), {}),
    "erfc": (randn, (), {}),
    "sinc": (randn, (), {}),
    "floor": (randn, (), {}),
    "ceil": (randn, (), {}),
    "round": (randn, (), {"decimals": 1}),
    "trunc": (randn, (), {}),
    "fix": (randn, (), {}),
    "frac": (randn, (), {}),
    "deg2rad": (randn, (), {}),
    "rad2deg": (randn, (), {}),
    "nan_to_num": (lambda *s: np.where(randn(*s) > 1, np.nan, randn(*s)).astype(np.float32), (), {"nan": 7.0}),
    "clamp": (randn, (-0.5, 0.5), {}),
    "clip": (randn, (), {"max": 0.2}),
    "clamp_min": (randn, (0.1,), {}),
    "clamp_max": (randn, (0.1,), {}),
    "bitwise_and": (ints, (ints(3, 5),), {}),
    "bitwise_or": (ints, (ints(3, 5),), {}),
    "bitwise_xor": (ints, (7,), {}),
    "bitwise_not": (ints, (), {}),
    "bitwise_left_shift": (ints, (2,), {}),
    "bitwise_right_shift": (ints, (1,), {}),
    "logical_and": (randn, (randn(3, 5),), {}),
    "logical_or": (ints, (ints(3, 5),), {}),
    "logical_xor": (randn, (randn(3, 5),), {}),
    "logical_not": (ints, (), {}),
    "cumsum": (randn, (1,), {}),
    "cumprod": (randn, (0,), {}),
    "tril": (randn, (), {"diagonal": 1}),
    "triu": (randn, (-1,), {}),
    "masked_fill": (randn, (randn(3, 5) > 0, 9.0), {}),
    "masked_scatter": (randn, (randn(3, 5) > 0, randn(15)), {}),
    "index_add": (randn, (0, IDX, randn(2, 5)), {"alpha": 2.0}),
    "index_copy": (randn, (0, IDX, randn(2, 5)), {}),
    "index_fill": (randn, (1, IDX, -1.0), {}),
    "scatter": (randn, (1, np.array([[0, 1], [2, 3], [4, 0]]), randn(3, 2)), {}),
    "scatter_add": (randn, (1, np.array([[0, 0], [2, 3], [4, 4]]), randn(3, 2)), {}),
    "scatter_reduce": (randn, (0, np.array([[0, 1, 2, 0, 1]]), randn(1, 5), "amax"), {}),
}


def _lib(args: tuple, kwargs: dict, to) -> tuple[tuple, dict]:
    return tuple(to(a) for a in args), {k: to(v) for k, v in kwargs.items()}


def test_every_value_op_has_a_case():
    assert set(CASES) == set(_VALUE_OPS)


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_value_op_matches_torch(name: str, layout: str):
    make, args, kwargs = CASES[name]
    x = make(3, 5)
    if layout == "transposed":
        if x.shape != (3, 5):
            pytest.skip("the case has its own shape")
        x = np.ascontiguousarray(x.T).T  # the same values, and both libraries write through a transposed view
    ua, uk = _lib(args, kwargs, lambda a: Tensor(a) if isinstance(a, np.ndarray) else a)
    ta, tk = _lib(args, kwargs, lambda a: torch.tensor(a) if isinstance(a, np.ndarray) else a)
    base_u, base_t = Tensor(np.ascontiguousarray(x.T)), torch.tensor(np.ascontiguousarray(x.T))
    u, t = (base_u.T, base_t.T) if layout == "transposed" else (Tensor(x), torch.tensor(x))
    u_out, t_out = getattr(u, f"{name}_")(*ua, **uk), getattr(t, f"{name}_")(*ta, **tk)
    assert u_out is u and t_out is t
    check(u, t, atol=1e-4)
    if layout == "transposed":  # the write went through the view into its base, as in torch
        check(base_u, base_t, atol=1e-4)


@pytest.mark.parametrize("shape", [(0,), (1,), (7,), (2, 0, 3)])
def test_value_ops_odd_sizes(shape):
    x = randn(*shape)
    u, t = Tensor(x), torch.tensor(x)
    u.mul_(2).add_(1, alpha=3).clamp_(max=2.5).exp_()
    t.mul_(2).add_(1, alpha=3).clamp_(max=2.5).exp_()
    check(u, t)


def test_views_see_the_write():
    x = randn(4, 6)
    u, t = Tensor(x), torch.tensor(x)
    ur, tr = u[1:3, ::2], t[1:3, ::2]
    u.sqrt_().nan_to_num_(0.0)
    t.sqrt_().nan_to_num_(0.0)
    check(ur, tr)
    ur.mul_(10)  # and a write into a view lands in the base
    tr.mul_(10)
    check(u, t)


def test_dtype_rules():
    u = Tensor(np.arange(6, dtype=np.int32))
    with pytest.raises(RuntimeError, match="sqrt_: result type Float can't be cast to the desired output type Int"):
        u.sqrt_()
    with pytest.raises(RuntimeError, match="div_"):
        u.div_(2)
    u.div_(2, rounding_mode="floor")  # an int result stays int
    t = torch.arange(6, dtype=torch.int32).div_(2, rounding_mode="floor")
    check(u, t)
    f = Tensor(np.float32([1.5, -2.5]))
    f.gt_(0)  # a comparison writes 1/0 in self's dtype
    check(f, torch.tensor([1.5, -2.5]).gt_(0))
    with pytest.raises(RuntimeError, match="add_: output with shape \\[3\\] doesn't match the broadcast shape"):
        Tensor.zeros(3).contiguous().add_(Tensor.ones(2, 3))


def test_autograd_through_a_non_leaf():
    x = randn(3, 4)
    ux, tx = Tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    uy, ty = ux * 2, tx * 2
    uy.mul_(ux).add_(ux, alpha=0.5).exp_()
    ty.mul_(tx).add_(tx, alpha=0.5).exp_()
    check(uy, ty.detach())
    uy.sum().backward()
    ty.sum().backward()
    np.testing.assert_allclose(ux.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_leaf_that_requires_grad_refuses_outside_no_grad():
    w = Tensor(randn(3), requires_grad=True)
    for call in (lambda: w.add_(1), lambda: w.uniform_(), lambda: w.t_(), lambda: w.copy_(Tensor.ones(3))):
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
            call()
    with no_grad():
        w.uniform_(-1, 1).mul_(2)
    assert w.requires_grad and float(w.abs().max().item()) <= 2


# ------------------------------------------------------------ random fills


def _filled(n: int = 20000, dtype=dtypes.float32) -> Tensor:
    return Tensor.zeros(n, dtype=dtype).contiguous().realize()


def test_uniform_and_normal_moments_and_seed():
    Tensor.manual_seed(3)
    a = _filled().uniform_(-2, 3).numpy()
    assert a.min() >= -2 and a.max() < 3 and abs(a.mean() - 0.5) < 0.05 and abs(a.std() - 5 / 12**0.5) < 0.05
    b = _filled().normal_(mean=1.0, std=2.0).numpy()
    assert abs(b.mean() - 1) < 0.05 and abs(b.std() - 2) < 0.05
    Tensor.manual_seed(3)
    np.testing.assert_array_equal(_filled().uniform_(-2, 3).numpy(), a)  # the seed replays the draws
    h = _filled(dtype=dtypes.float16).uniform_(**{"from": 1, "to": 2})
    assert h.dtype is dtypes.float16 and 1 <= h.numpy().min() and h.numpy().max() <= 2


@pytest.mark.parametrize(
    "fill, mean, std",
    [
        (lambda t: t.exponential_(2.0), 0.5, 0.5),
        (lambda t: t.log_normal_(0.0, 0.5), np.exp(0.125), np.sqrt((np.exp(0.25) - 1) * np.exp(0.25))),
        (lambda t: t.geometric_(0.25), 4.0, np.sqrt(0.75) / 0.25),
        (lambda t: t.bernoulli_(0.3), 0.3, np.sqrt(0.21)),
    ],
)
def test_distribution_moments(fill, mean, std):
    Tensor.manual_seed(1)
    x = fill(_filled()).numpy()
    assert abs(x.mean() - mean) < 0.05 * max(1, mean) and abs(x.std() - std) < 0.06 * max(1, std)


def test_cauchy_median_and_quartiles():
    Tensor.manual_seed(2)
    x = _filled().cauchy_(1.0, 2.0).numpy()
    q1, med, q3 = np.quantile(x, [0.25, 0.5, 0.75])
    assert abs(med - 1) < 0.1 and abs(q1 - (1 - 2)) < 0.15 and abs(q3 - (1 + 2)) < 0.15


def test_random_integer_ranges():
    Tensor.manual_seed(0)
    assert set(np.unique(_filled(2000).random_(5).numpy())) == {0, 1, 2, 3, 4}
    assert set(np.unique(_filled(2000, dtypes.int64).random_(-3, 2).numpy())) == {-3, -2, -1, 0, 1}
    b = _filled(2000, dtypes.uint8).random_().numpy()
    assert b.min() < 20 and b.max() > 235
    i = _filled(2000, dtypes.int32).random_().numpy()
    assert i.min() >= 0 and i.max() > 2**30
    with pytest.raises(RuntimeError, match="random_: expects 'from' to be less than 'to'"):
        _filled(3).random_(4, 2)


def test_bernoulli_with_tensor_probabilities():
    Tensor.manual_seed(0)
    p = Tensor(np.float32([0.0, 1.0, 0.5]))
    x = Tensor.zeros(4000, 3).contiguous().realize().bernoulli_(p).numpy()
    assert x[:, 0].max() == 0 and x[:, 1].min() == 1 and abs(x[:, 2].mean() - 0.5) < 0.05
    y = Tensor(np.full((4000,), 0.2, np.float32)).bernoulli().numpy()
    assert set(np.unique(y)) == {0.0, 1.0} and abs(y.mean() - 0.2) < 0.03


def test_random_fill_errors():
    with pytest.raises(RuntimeError, match="uniform_: expected a floating point tensor, got int32"):
        Tensor.zeros(3, dtype=dtypes.int32).contiguous().uniform_()
    with pytest.raises(RuntimeError, match="normal_: expects std >= 0.0"):
        _filled(3).normal_(0, -1)
    with pytest.raises(RuntimeError, match="uniform_: expects to return a \\[from, to\\) range"):
        _filled(3).uniform_(2, 1)
    with pytest.raises(TypeError, match="uniform_: unexpected keyword argument"):
        _filled(3).uniform_(low=0)
    with pytest.raises(RuntimeError, match="geometric_: expects p to be in \\(0, 1\\)"):
        _filled(3).geometric_(1.5)


# ------------------------------------------------------------ view ops, copy_, detach_


@pytest.mark.parametrize(
    "op",
    [
        lambda t: t.transpose_(0, 2),
        lambda t: t.swapaxes_(1, 2),
        lambda t: t.swapdims_(0, 1),
        lambda t: t.unsqueeze_(1),
        lambda t: t.squeeze_(),
        lambda t: t.squeeze_(1),
    ],
)
def test_view_ops_in_place(op):
    x = randn(3, 1, 4)
    u, t = Tensor(x), torch.tensor(x)
    op(t)
    assert op(u) is u
    check(u, t)
    v, tv = Tensor(randn(2, 5)), torch.zeros(2, 5)
    tv.copy_(torch.tensor(v.numpy()))
    check(v.t_(), tv.t_())


def test_t_refuses_more_than_2_dims():
    with pytest.raises(RuntimeError):
        torch.zeros(2, 3, 4).t_()
    with pytest.raises(RuntimeError):
        Tensor.zeros(2, 3, 4).t_()


@pytest.mark.parametrize("src_dtype", [np.float32, np.int64, np.bool_])
def test_copy_casts_broadcasts_and_writes_in_place(src_dtype):
    x = ints(2, 3)
    src = (randn(3) * 4).astype(src_dtype)
    u, t = Tensor(x), torch.tensor(x)
    uv, tv = u[1], t[1]
    assert u.copy_(Tensor(src)) is u
    t.copy_(torch.tensor(src))
    check(u, t)
    check(uv, tv)
    with pytest.raises(RuntimeError, match="copy_: the source of shape \\(4,\\) does not broadcast to \\(2, 3\\)"):
        u.copy_(Tensor.zeros(4))


def test_copy_gradient_flows_to_the_source():
    s = randn(4)
    us, ts = Tensor(s, requires_grad=True), torch.tensor(s, requires_grad=True)
    ud, td = Tensor.zeros(2, 4) * 1, torch.zeros(2, 4) * 1
    ud.copy_(us * 3)
    td.copy_(ts * 3)
    (ud * ud).sum().backward()
    (td * td).sum().backward()
    np.testing.assert_allclose(us.grad.numpy(), ts.grad.numpy(), rtol=1e-6)


def test_detach_():
    x = Tensor(randn(3), requires_grad=True)
    y = x * 2
    assert y.detach_() is y and not y.requires_grad
    (y * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), y.numpy(), rtol=1e-6)  # no gradient through the detached factor


# ------------------------------------------------------------ fill_diagonal_, index_put, put, take


@pytest.mark.parametrize("shape, wrap", [((3, 3), False), ((5, 3), False), ((7, 3), True), ((3, 6), True),
                                         ((4, 4, 4), False), ((1, 1), False), ((0, 2), False)])  # fmt: skip
def test_fill_diagonal(shape, wrap):
    x = randn(*shape)
    u, t = Tensor(x), torch.tensor(x)
    u.fill_diagonal_(7.5, wrap=wrap)
    t.fill_diagonal_(7.5, wrap=wrap)
    check(u, t)


def test_fill_diagonal_errors():
    with pytest.raises(RuntimeError, match="fill_diagonal_: dimensions must be larger than 1"):
        Tensor.zeros(3).contiguous().fill_diagonal_(1)
    with pytest.raises(RuntimeError, match="fill_diagonal_: all dimensions of input must be of equal length"):
        Tensor.zeros(2, 2, 3).contiguous().fill_diagonal_(1)


@pytest.mark.parametrize("accumulate", [False, True])
def test_index_put_matches_torch(accumulate):
    x = randn(4, 3, 2)
    rows, cols = np.array([0, 3, -1, 0]), np.array([[1], [2]])  # broadcast to (2, 4); repeated positions
    vals = randn(2, 4, 2)
    if not accumulate:  # torch leaves the value at a repeated position undefined: unique positions only
        rows, cols, vals = np.array([0, 3, 2]), np.array([1, 2, 0]), randn(3, 2)
    u = Tensor(x).index_put((Tensor(rows), Tensor(cols)), Tensor(vals), accumulate=accumulate)
    t = torch.tensor(x).index_put((torch.tensor(rows), torch.tensor(cols)), torch.tensor(vals), accumulate=accumulate)
    check(u, t)
    u2, t2 = Tensor(x), torch.tensor(x)
    u2.index_put_((Tensor(rows),), Tensor(np.float32(2.0)), accumulate=accumulate)
    t2.index_put_((torch.tensor(rows),), torch.tensor(np.float32(2.0)), accumulate=accumulate)
    check(u2, t2)


def test_index_put_bool_mask_and_grad():
    x, m = randn(3, 4), randn(3, 4) > 0
    for acc in (False, True):
        ux, tx = Tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        uv, tv = Tensor(np.float32(1.5), requires_grad=True), torch.tensor(np.float32(1.5), requires_grad=True)
        uo = (ux * 1).index_put((Tensor(m),), uv, accumulate=acc)
        to = (tx * 1).index_put((torch.tensor(m),), tv, accumulate=acc)
        check(uo, to.detach())
        (uo * uo).sum().backward()
        (to * to).sum().backward()
        np.testing.assert_allclose(ux.grad.numpy(), tx.grad.numpy(), rtol=1e-5)
        np.testing.assert_allclose(uv.grad.numpy(), tv.grad.numpy(), rtol=1e-5)


def test_index_put_errors():
    with pytest.raises(IndexError, match=r"index_put: index 5 is out of range for dimension 0 with size 4 \(1 such"):
        Tensor.zeros(4).index_put((Tensor([5]),), Tensor([1.0]), accumulate=True).numpy()
    with pytest.raises(IndexError, match="index_put: expected 1 to 1 index tensors"):
        Tensor.zeros(4).index_put((Tensor([0]), Tensor([0])), Tensor([1.0]))


def test_put_and_take():
    x = randn(3, 4)
    idx, src = np.array([[0, -1], [5, 5]]), randn(2, 2)
    for acc in (False, True):
        i, s = (idx, src) if acc else (np.array([[0, -1], [5, 6]]), src)
        check(
            Tensor(x).put(Tensor(i), Tensor(s), accumulate=acc),
            torch.tensor(x).put(torch.tensor(i), torch.tensor(s), accumulate=acc),
        )
        u, t = Tensor(x), torch.tensor(x)
        u.put_(Tensor(i), Tensor(s), accumulate=acc)
        t.put_(torch.tensor(i), torch.tensor(s), accumulate=acc)
        check(u, t)
    check(Tensor(x).T.take(Tensor(idx)), torch.tensor(x).T.take(torch.tensor(idx)))
    with pytest.raises(IndexError, match="take: index -13 is out of range for a tensor of 12 elements"):
        Tensor(x).take(Tensor([-13, 0])).numpy()
    with pytest.raises(RuntimeError, match="put: expected source and index to have the same number of elements"):
        Tensor(x).put(Tensor([1, 2]), Tensor([1.0]))


def test_float_power_needs_a_double_base():
    u, t = Tensor(np.float64([1.5, 2.0])), torch.tensor(np.float64([1.5, 2.0]))
    check(u.float_power_(2), t.float_power_(2))
    with pytest.raises(RuntimeError, match="float_power_: the base given to float_power_ has dtype float32"):
        Tensor(np.float32([1.0])).float_power_(2)


# ------------------------------------------------------------ alpha and aliases


def test_add_sub_alpha():
    a, b = randn(2, 3), randn(3)
    check(Tensor(a).add(Tensor(b), alpha=-2.5), torch.tensor(a).add(torch.tensor(b), alpha=-2.5))
    check(Tensor(a).sub(2.0, alpha=3), torch.tensor(a).sub(2.0, alpha=3))
    check(Tensor(a).subtract(Tensor(b), alpha=2), torch.tensor(a).subtract(torch.tensor(b), alpha=2))
    i = np.arange(4, dtype=np.int64)
    check(Tensor(i).add(Tensor(i), alpha=3), torch.tensor(i).add(torch.tensor(i), alpha=3))
    with pytest.raises(RuntimeError, match="add: for integral input tensors, argument alpha must not be a floating"):
        Tensor(i).add(1, alpha=0.5)
    ux, tx = Tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    uy, ty = Tensor(b, requires_grad=True), torch.tensor(b, requires_grad=True)
    ux.sub(uy, alpha=1.5).square().sum().backward()
    tx.sub(ty, alpha=1.5).square().sum().backward()
    np.testing.assert_allclose(uy.grad.numpy(), ty.grad.numpy(), rtol=1e-5)


@pytest.mark.parametrize(
    "name",
    [
        "divide",
        "multiply",
        "greater",
        "greater_equal",
        "less",
        "less_equal",
        "not_equal",
        "fix",
        "arcsinh",
        "arccosh",
        "arctanh",
        "bitwise_left_shift",
        "bitwise_right_shift",
        "swapdims",
    ],  # fmt: skip
)
def test_aliases(name):
    one_arg = {"fix", "arcsinh", "arccosh", "arctanh"}
    x = ints(3, 4) if name.startswith("bitwise") else (pos(3, 4) + 1 if name == "arccosh" else unit(3, 4))
    args = () if name in one_arg else ((0, 1) if name == "swapdims" else (2 if name.startswith("bitwise") else 0.5,))
    check(getattr(Tensor(x), name)(*args), getattr(torch.tensor(x), name)(*args))
