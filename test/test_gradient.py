"""Autograd against PyTorch: every differentiable op of the Tensor API, and the autograd API itself.

Each op case builds the same function in unigrad and PyTorch on random leaves, runs backward with a random
upstream gradient (so every element of every rule is weighted differently), and compares the forward
values and the leaves' gradients (shape, dtype, values within atol 1e-4 / rtol 1e-3). Cases run on CPU; a
small subset of tiny ones runs on the PYTHON interpreter too. The rest checks the API: accumulation,
detach/no_grad, the functional gradient(), gradients through realize(), errors (types as PyTorch's), and
that the rule table covers every op a tensor graph can contain.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest
import torch

import unigrad
from unigrad import Tensor, dtypes
from unigrad.gradient import GRADIENT_RULES, compute_gradient
from unigrad.ir.ops import GroupOp, Ops
from unigrad.ir.spec import verify_tensor_graph
from unigrad.ir.uop import UOp

ATOL, RTOL = 1e-4, 1e-3


# ---------------------------------------------------------------- helpers


def rand(rng: np.random.Generator, shape: tuple[int, ...], domain: str = "any", dtype=np.float32) -> np.ndarray:
    """Random floats. Domains: any [-2, 2] away from 0 (relu/abs/max stay off their kinks), positive
    [0.5, 3], ties (small multiples of 0.5: equal values are common), zeros (mostly 1s and 2s with zeros)."""
    if domain == "positive":
        x = rng.uniform(0.5, 3.0, shape)
    elif domain == "ties":
        x = rng.integers(-2, 3, shape) / 2
    elif domain == "zeros":
        x = rng.choice([0.0, 1.0, 2.0, -1.5], shape, p=[0.25, 0.25, 0.25, 0.25])
    else:
        x = rng.uniform(0.1, 2.0, shape) * rng.choice([-1, 1], shape)
    return np.asarray(x).astype(dtype)


def compare(name: str, got: Tensor | None, ref: torch.Tensor | None, atol: float = ATOL, rtol: float = RTOL) -> None:
    if ref is None:
        assert got is None, f"{name}: expected no gradient, got {got}"
        return
    assert got is not None, f"{name}: expected a gradient of shape {tuple(ref.shape)}, got None"
    assert got.shape == tuple(ref.shape), f"{name}: shape {got.shape} != {tuple(ref.shape)}"
    assert got.dtype.name == str(ref.dtype).removeprefix("torch."), f"{name}: dtype {got.dtype} != {ref.dtype}"
    np.testing.assert_allclose(got.numpy(), ref.detach().numpy(), atol=atol, rtol=rtol, err_msg=name)


def check_grad(
    fn: Callable,
    torch_fn: Callable | None,
    inputs: list[np.ndarray],
    device: str = "CPU",
    rng: np.random.Generator | None = None,
    atol: float = ATOL,
) -> None:
    """fn(*unigrad leaves) vs torch_fn(*torch leaves): forward values, then every leaf's .grad after a
    backward with a random upstream gradient (or 1 for a scalar result)."""
    torch_fn = torch_fn or fn
    rng = rng or np.random.default_rng(1)
    xs = [Tensor(a, device=device, requires_grad=True) for a in inputs]
    ts = [torch.tensor(a, requires_grad=True) for a in inputs]
    out, ref = fn(*xs), torch_fn(*ts)
    assert out.requires_grad
    compare("forward", out, ref, atol=1e-5)
    upstream = rand(rng, tuple(ref.shape), dtype=np.dtype(str(ref.dtype).removeprefix("torch.")))
    if ref.ndim == 0:
        out.backward()
        ref.backward()
    else:
        out.backward(Tensor(upstream, device=device))
        ref.backward(torch.tensor(upstream))
    for i, (x, t) in enumerate(zip(xs, ts)):
        compare(f"grad of input {i}", x.grad, t.grad, atol=atol)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(0)


# ---------------------------------------------------------------- elementwise


@dataclass(frozen=True)
class Case:
    name: str
    fn: Callable
    torch_fn: Callable | None = None  # None: the same code runs on torch tensors
    domain: str = "any"

    def __repr__(self) -> str:
        return self.name


UNARY = [
    Case("neg", lambda x: -x),
    Case("reciprocal", lambda x: x.reciprocal()),
    Case("exp", lambda x: x.exp()),
    Case("exp2", lambda x: x.exp2()),
    Case("log", lambda x: x.log(), domain="positive"),
    Case("log2", lambda x: x.log2(), domain="positive"),
    Case("sqrt", lambda x: x.sqrt(), domain="positive"),
    Case("sin", lambda x: x.sin()),
    Case("cos", lambda x: x.cos()),
    Case("relu", lambda x: x.relu()),
    Case("sigmoid", lambda x: x.sigmoid()),
    Case("abs", lambda x: x.abs()),
    Case("square", lambda x: x.square()),
    Case("trunc", lambda x: x.trunc()),
    Case("div_trunc", lambda x: x.div(0.7, rounding_mode="trunc"), lambda x: torch.div(x, 0.7, rounding_mode="trunc")),
    Case("add_scalar", lambda x: x + 2.5),
    Case("radd_scalar", lambda x: 2.5 + x),
    Case("sub_scalar", lambda x: x - 1.5),
    Case("rsub_scalar", lambda x: 1.5 - x),
    Case("mul_scalar", lambda x: x * -3.0),
    Case("div_scalar", lambda x: x / 4.0),
    Case("rdiv_scalar", lambda x: 4.0 / x),
    Case("maximum_scalar", lambda x: x.maximum(0.5), lambda x: torch.maximum(x, torch.tensor(0.5))),
    Case("minimum_scalar", lambda x: x.minimum(0.5), lambda x: torch.minimum(x, torch.tensor(0.5))),
    Case("mod_scalar", lambda x: x % 0.75, lambda x: torch.remainder(x, 0.75)),
    Case("composite", lambda x: ((x * x).exp() + x.sin()).log() * x.sigmoid()),
]
UNARY_SHAPES = [(), (1,), (7,), (3, 5), (2, 1, 3)]


@pytest.mark.parametrize("shape", UNARY_SHAPES, ids=str)
@pytest.mark.parametrize("case", UNARY, ids=repr)
def test_unary(case, shape, rng):
    check_grad(case.fn, case.torch_fn, [rand(rng, shape, case.domain)], rng=rng)


BINARY = [
    Case("add", lambda x, y: x + y),
    Case("sub", lambda x, y: x - y),
    Case("mul", lambda x, y: x * y),
    Case("div", lambda x, y: x / y),
    Case("maximum", lambda x, y: x.maximum(y), torch.maximum),
    Case("minimum", lambda x, y: x.minimum(y), torch.minimum),
    Case("mod", lambda x, y: x % y, torch.remainder),
    Case("where", lambda x, y: (x > y).where(x * 2, y), lambda x, y: torch.where(x > y, x * 2, y)),
    Case("where_expr", lambda x, y: (x < 0).where(x.exp(), y * x), lambda x, y: torch.where(x < 0, x.exp(), y * x)),
]
BINARY_SHAPES = [
    ((), ()),
    ((5,), (5,)),
    ((3, 4), (3, 4)),
    ((3, 1), (1, 4)),  # both broadcast
    ((4,), (3, 4)),  # rank broadcast
    ((), (2, 3)),  # 0-d with a tensor
    ((2, 3, 1), (3, 5)),
    ((1,), (7,)),
]


@pytest.mark.parametrize("shapes", BINARY_SHAPES, ids=str)
@pytest.mark.parametrize("case", BINARY, ids=repr)
def test_binary(case, shapes, rng):
    check_grad(case.fn, case.torch_fn, [rand(rng, s, case.domain) for s in shapes], rng=rng)


@pytest.mark.parametrize("op", ["maximum", "minimum"])
def test_maximum_minimum_ties_split_evenly(op, rng):
    """On equal inputs torch.maximum/minimum give each side half the gradient."""
    x = rand(rng, (4, 5), "ties")
    y = rand(rng, (4, 5), "ties")
    assert (x == y).any()
    check_grad(lambda a, b: getattr(a, op)(b), getattr(torch, op), [x, y], rng=rng)


def test_abs_at_zero_is_zero():
    x = Tensor([0.0, -1.0, 2.0], requires_grad=True)
    x.abs().sum().backward()
    np.testing.assert_equal(x.grad.numpy(), [0.0, -1.0, 1.0])


def test_where_condition_from_data(rng):
    c = rng.random((3, 4)) < 0.5
    cond = Tensor(c)
    check_grad(lambda x, y: cond.where(x, y), lambda x, y: torch.where(torch.tensor(c), x, y), [rand(rng, (3, 4))] * 2)


def test_where_scalar_branch(rng):
    check_grad(lambda x: (x > 0).where(x, 0.0), lambda x: torch.where(x > 0, x, 0.0), [rand(rng, (6,))])


# ---------------------------------------------------------------- reductions

REDUCE_SHAPE = (2, 3, 4)
REDUCE_AXES = [None, 0, -1, (0, 2), (1,)]


def _torch_reduce(name: str, x: torch.Tensor, axis, keepdim: bool) -> torch.Tensor:
    dims = tuple(range(x.ndim)) if axis is None else axis
    if name == "sum":
        return x.sum(dims, keepdim=keepdim)
    if name == "mean":
        return x.mean(dims, keepdim=keepdim)
    if name == "max":
        return x.amax(dims, keepdim=keepdim)
    if name == "min":
        return x.amin(dims, keepdim=keepdim)
    out = x  # prod: torch takes one dim at a time
    for d in sorted((dims,) if isinstance(dims, int) else dims, key=lambda d: d % x.ndim, reverse=True):
        out = out.prod(d, keepdim=keepdim)
    return out


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("axis", REDUCE_AXES, ids=str)
@pytest.mark.parametrize("name", ["sum", "mean", "max", "min", "prod"])
def test_reduce(name, axis, keepdim, rng):
    def fn(x):
        return getattr(x, name)(axis, keepdim=keepdim)

    check_grad(fn, lambda x: _torch_reduce(name, x, axis, keepdim), [rand(rng, REDUCE_SHAPE)], rng=rng)


@pytest.mark.parametrize("axis", [None, 0, 1], ids=str)
@pytest.mark.parametrize("name", ["max", "min"])
def test_reduce_max_ties_share_evenly(name, axis, rng):
    """Tensor.max/min follow torch.amax/amin (and full x.max()): tied extremes share the gradient evenly."""
    x = np.array([[1.0, 3.0, 3.0, -2.0], [2.0, 2.0, 2.0, 2.0], [-1.0, 0.5, -1.0, 0.0]], dtype=np.float32)
    check_grad(lambda t: getattr(t, name)(axis), lambda t: _torch_reduce(name, t, axis, False), [x], rng=rng)


@pytest.mark.parametrize("axis", [None, 0, 1], ids=str)
def test_prod_with_zeros(axis, rng):
    """Groups with no zero, one zero and several zeros all get exact gradients."""
    x = np.array([[0.0, 2.0, 3.0], [1.5, 0.0, 0.0], [2.0, -1.0, 0.5], [0.0, 4.0, 1.0]], dtype=np.float32)
    check_grad(lambda t: t.prod(axis), lambda t: _torch_reduce("prod", t, axis, False), [x], rng=rng)


def test_sum_of_odd_shapes(rng):
    check_grad(lambda x: (x * x).sum(1), None, [rand(rng, (5, 13, 1))], rng=rng)


# ---------------------------------------------------------------- movement

MOVEMENT = [
    Case("reshape", lambda x: x.reshape(4, 6)),
    Case("reshape_infer", lambda x: x.reshape(-1, 3)),
    Case("view", lambda x: x.view(24)),
    Case("permute", lambda x: x.permute(2, 0, 1)),
    Case("transpose", lambda x: x.transpose(0, 2)),
    Case("T", lambda x: x.T, lambda x: x.permute(2, 1, 0)),
    Case("expand", lambda x: x.reshape(2, 3, 4, 1).expand(2, 3, 4, 3)),
    Case("pad", lambda x: x.pad(((1, 0), (0, 2), (1, 1))), lambda x: torch.nn.functional.pad(x, (1, 1, 0, 2, 1, 0))),
    Case("pad_flat", lambda x: x.pad((1, 2)), lambda x: torch.nn.functional.pad(x, (1, 2))),
    Case("pad_value", lambda x: x.pad((1, 1), value=2.0), lambda x: torch.nn.functional.pad(x, (1, 1), value=2.0)),
    Case("pad_negative", lambda x: x.pad((-1, 1)), lambda x: torch.nn.functional.pad(x, (-1, 1))),
    Case("shrink", lambda x: x.shrink(((0, 1), (1, 3), (2, 4))), lambda x: x[0:1, 1:3, 2:4]),
    Case("flip", lambda x: x.flip(0, 2), lambda x: x.flip((0, 2))),
    Case("squeeze", lambda x: x.reshape(2, 1, 3, 4).squeeze(1), lambda x: x.reshape(2, 1, 3, 4).squeeze(1)),
    Case("squeeze_all", lambda x: x.reshape(1, 2, 1, 12).squeeze(), lambda x: x.reshape(1, 2, 1, 12).squeeze()),
    Case("unsqueeze", lambda x: x.unsqueeze(-1)),
    Case("flatten", lambda x: x.flatten(1)),
    Case("contiguous", lambda x: x.permute(1, 0, 2).contiguous() * 2),
    Case(
        "chain",
        lambda x: x.permute(2, 1, 0).reshape(6, 4).flip(1).pad(((0, 1), (1, 0))).sum(0),
        lambda x: torch.nn.functional.pad(x.permute(2, 1, 0).reshape(6, 4).flip(1), (1, 0, 0, 1)).sum(0),
    ),
]


@pytest.mark.parametrize("case", MOVEMENT, ids=repr)
def test_movement(case, rng):
    check_grad(case.fn, case.torch_fn, [rand(rng, (2, 3, 4))], rng=rng)


def test_expand_broadcast_input_reduced_to_its_shape(rng):
    """A broadcast input's gradient sums over the broadcast axes back to the input's own shape."""
    check_grad(lambda a, b, c: a * b + c, None, [rand(rng, s) for s in [(4, 1, 3), (5, 1), (1,)]], rng=rng)


def test_expand_method(rng):
    check_grad(lambda x: x.expand(3, -1, 4), lambda x: x.expand(3, -1, 4), [rand(rng, (2, 1))], rng=rng)


# ---------------------------------------------------------------- matmul

MATMUL_SHAPES = [
    ((3, 4), (4, 5)),
    ((1, 1), (1, 1)),
    ((2, 3, 4), (2, 4, 5)),  # batched
    ((2, 1, 3, 4), (5, 4, 2)),  # broadcast batch
    ((4,), (4, 5)),  # 1-D on the left
    ((3, 4), (4,)),  # 1-D on the right
    ((4,), (4,)),  # dot of vectors
    ((7,), (2, 7, 3)),
]


@pytest.mark.parametrize("shapes", MATMUL_SHAPES, ids=str)
def test_matmul(shapes, rng):
    check_grad(lambda a, b: a @ b, torch.matmul, [rand(rng, s) for s in shapes], rng=rng)


def test_dot_and_linear_layer(rng):
    x, w, b = rand(rng, (6, 4)), rand(rng, (4, 3)), rand(rng, (3,))
    check_grad(lambda x, w, b: (x.dot(w) + b).relu().mean(), lambda x, w, b: (x @ w + b).relu().mean(), [x, w, b])


@pytest.mark.parametrize("steps", [2, 9, 24])
def test_weight_shared_by_an_unrolled_recurrence(steps, rng):
    """h = tanh(x_t @ U + h @ W) over `steps` steps (an unrolled RNN cell): W and U are read by every step, and
    their gradients are sums of one matmul per step, reduced EXPAND_TERMS steps at a time (one REDUCE over the sum
    of 199 steps' products was one kernel of 398 buffers and 0.4 s); gradients equal torch's, and no kernel of the
    weight gradients reads more than two chunks' buffers (the kernel split joins at most two big reductions)."""
    from unigrad.gradient import EXPAND_TERMS
    from unigrad.pipeline.callify import callify
    from unigrad.pipeline.rangeify import rangeify

    xs, u, w = rand(rng, (steps, 8, 3)), rand(rng, (3, 64)) / 4, rand(rng, (64, 64)) / 16

    def rnn(xs, u, w):
        h = xs[0] @ u
        for t in range(1, steps):
            h = (xs[t] @ u + h @ w).tanh()
        return h

    check_grad(rnn, None, [xs, u, w], rng=rng)
    leaves = [Tensor(a, requires_grad=True) for a in (xs, u, w)]
    rnn(*leaves).sum().backward()
    calls = [c for c in rangeify(callify(UOp(Ops.SINK, (leaves[2].grad.uop,))), "CPU").toposort() if c.op is Ops.CALL]
    assert max(len(c.src) for c in calls) <= 2 * 2 * EXPAND_TERMS + 4


# ---------------------------------------------------------------- dtypes


def test_cast_float32_to_float64(rng):
    check_grad(lambda x: (x.cast(dtypes.float64) * 3).exp(), lambda x: (x.double() * 3).exp(), [rand(rng, (5,))])


def test_cast_float64_to_float32(rng):
    check_grad(lambda x: x.float().sin(), lambda x: x.float().sin(), [rand(rng, (2, 3), dtype=np.float64)])


def test_float64_leaves(rng):
    inputs = [rand(rng, (3, 4), dtype=np.float64), rand(rng, (4,), dtype=np.float64)]
    check_grad(lambda x, y: (x * y).exp().sum(1), None, inputs, rng=rng)


def test_mixed_precision_promotes(rng):
    """float32 * float64 promotes; each leaf's gradient keeps the leaf's dtype."""
    check_grad(lambda x, y: x * y, None, [rand(rng, (4,)), rand(rng, (4,), dtype=np.float64)], rng=rng)


def test_int_cast_blocks_gradient():
    x = Tensor([1.5, -2.5], requires_grad=True)
    y = x.int()
    assert not y.requires_grad
    z = (y.float() * 2 + x).sum()
    z.backward()
    np.testing.assert_equal(x.grad.numpy(), [1.0, 1.0])


def test_comparison_results_do_not_require_grad():
    x = Tensor([1.0, 2.0], requires_grad=True)
    assert not (x > 1).requires_grad
    assert not (x == 1).requires_grad
    assert (x * 2).requires_grad


# ---------------------------------------------------------------- graph structure: reuse, accumulation


def test_tensor_used_twice(rng):
    check_grad(lambda x: (x * x + x.exp() * x).sum(), None, [rand(rng, (3, 4))])


def test_diamond_graph(rng):
    def fn(x, y):
        h = x * y
        return (h.sin() + h.square() + h.sum(0, keepdim=True)).sum()

    check_grad(fn, None, [rand(rng, (3, 2)), rand(rng, (3, 2))])


def test_backward_twice_accumulates(rng):
    a = rand(rng, (3,))
    x, tx = Tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    loss, tloss = (x * x).sum(), (tx * tx).sum()
    loss.backward()
    loss.backward()
    tloss.backward(retain_graph=True)
    tloss.backward()
    compare("accumulated", x.grad, tx.grad)


def test_two_losses_accumulate(rng):
    a = rand(rng, (4,))
    x = Tensor(a, requires_grad=True)
    x.sin().sum().backward()
    (x * 3).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.cos(a) + 3, atol=ATOL, rtol=RTOL)
    x.grad = None
    (x * 3).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full(4, 3.0))


def test_equal_valued_leaves_stay_distinct():
    """Hash-consing would make two Tensor.ones(3) one node; leaves get their own buffers."""
    a = Tensor.ones(3).requires_grad_()
    b = Tensor.ones(3).requires_grad_()
    c = Tensor(2.0, requires_grad=True)
    d = Tensor(2.0, requires_grad=True)
    (a * b * 3 + c * d).sum().backward()
    for t, want in [(a, 3.0), (b, 3.0)]:
        np.testing.assert_equal(t.grad.numpy(), np.full(3, want))
    assert c.grad.numpy() == 6.0 and d.grad.numpy() == 6.0


def test_leaf_from_lazy_graph_and_view(rng):
    base = Tensor(rand(rng, (3, 4)))
    w = (base * 2).requires_grad_()
    v = base.T.requires_grad_()
    (w.sum() + (v * v).sum()).backward()
    np.testing.assert_allclose(w.grad.numpy(), np.ones((3, 4)))
    np.testing.assert_allclose(v.grad.numpy(), 2 * v.numpy(), rtol=RTOL)


def test_only_leaves_on_the_path_get_grad(rng):
    x = Tensor(rand(rng, (3,)), requires_grad=True)
    unused = Tensor(rand(rng, (3,)), requires_grad=True)
    (x * 2).sum().backward()
    assert unused.grad is None and x.grad is not None


# ---------------------------------------------------------------- detach, no_grad


def test_detach_stops_gradient(rng):
    a = rand(rng, (5,))
    check_grad(lambda x: (x * x.detach()).sum(), lambda x: (x * x.detach()).sum(), [a])
    x = Tensor(a, requires_grad=True)
    d = x.detach()
    assert not d.requires_grad and d.is_leaf
    np.testing.assert_equal(d.numpy(), a)


def test_no_grad_context(rng):
    a = rand(rng, (4,))
    x = Tensor(a, requires_grad=True)
    with unigrad.no_grad():
        y = x * 2
        assert Tensor.no_grad
    assert not Tensor.no_grad
    assert not y.requires_grad
    z = (y * x).sum()  # y is a constant here: dz/dx = y
    z.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * a, rtol=RTOL)


def test_no_grad_flag_and_decorator(rng):
    x = Tensor(rand(rng, (3,)), requires_grad=True)

    @unigrad.no_grad()
    def step(t):
        return t * 3

    assert not step(x).requires_grad
    Tensor.no_grad = True
    try:
        assert not (x + 1).requires_grad
    finally:
        Tensor.no_grad = False
    assert (x + 1).requires_grad


def test_no_grad_result_equal_to_grad_result_stays_cut(rng):
    """A result built under no_grad has the same value as one built outside; it must still stop gradients
    (hash-consing would otherwise merge the two graphs)."""
    x = Tensor(rand(rng, (3,)), requires_grad=True)
    with unigrad.no_grad():
        y_const = x * 2
    y = x * 2
    (y + y_const).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full(3, 2.0))


def test_backward_under_no_grad_still_works(rng):
    x = Tensor(rand(rng, (3,)), requires_grad=True)
    loss = (x * x).sum()
    with unigrad.no_grad():
        loss.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * x.numpy(), rtol=RTOL)


# ---------------------------------------------------------------- functional gradient()


def test_gradient_functional(rng):
    a, b = rand(rng, (3, 4)), rand(rng, (4,))
    x, y = Tensor(a), Tensor(b)  # no requires_grad needed
    tx, ty = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    gx, gy = ((x * y).exp().sum()).gradient(x, y)
    rx, ry = torch.autograd.grad((tx * ty).exp().sum(), (tx, ty))
    compare("dx", gx, rx)
    compare("dy", gy, ry)
    assert x.grad is None and y.grad is None


def test_gradient_with_upstream_and_intermediate_target(rng):
    a = rand(rng, (2, 3))
    g = rand(rng, (2, 3))
    x = Tensor(a, requires_grad=True)
    h = x.sin()
    out = h * x
    gh, gx = out.gradient(h, x, gradient=Tensor(g))
    tx = torch.tensor(a, requires_grad=True)
    th = tx.sin()
    rh, rx = torch.autograd.grad(th * tx, (th, tx), torch.tensor(g))
    compare("d/dh", gh, rh)
    compare("d/dx", gx, rx)
    assert x.grad is None


def test_gradient_of_gradient(rng):
    """Gradients are graphs over the forward graph, so they can be differentiated again."""
    a = rand(rng, (4,))
    x = Tensor(a)
    (gx,) = (x * x * x).sum().gradient(x)  # 3x^2
    (ggx,) = gx.sum().gradient(x)  # 6x
    np.testing.assert_allclose(ggx.numpy(), 6 * a, rtol=RTOL, atol=ATOL)


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True")
def test_backward_create_graph(rng):
    a = rand(rng, (4,))
    x, tx = Tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    (x * x * x).sum().backward(create_graph=True)
    (tx * tx * tx).sum().backward(create_graph=True)
    assert x.grad.requires_grad
    g, tg = x.grad, tx.grad
    x.grad, tx.grad = None, None
    (g * g).sum().backward()
    (tg * tg).sum().backward()
    compare("second order", x.grad, tx.grad)


def test_gradient_unused_target(rng):
    x, u = Tensor(rand(rng, (3,))), Tensor(rand(rng, (2,)))
    loss = (x * 2).sum()
    with pytest.raises(RuntimeError):
        loss.gradient(x, u)
    gx, gu = loss.gradient(x, u, materialize_grads=True)
    np.testing.assert_equal(gu.numpy(), np.zeros(2))
    np.testing.assert_equal(gx.numpy(), np.full(3, 2.0))


# ---------------------------------------------------------------- gradients are lazy graphs through the pipeline


def test_gradients_are_lazy_graphs_that_fuse(rng):
    from unigrad.runtime import realize as rt

    x = Tensor(rand(rng, (8, 8)), requires_grad=True)
    y = Tensor(rand(rng, (8, 8)), requires_grad=True)
    (x * y).sin().sum().backward()
    assert all(u.op is not Ops.LOAD for u in x.grad.uop.toposort())  # nothing computed yet, no copies
    verify_tensor_graph(UOp(Ops.SINK, (x.grad.uop, y.grad.uop)))
    before = rt.stats.kernels
    x.grad.realize(y.grad)
    assert rt.stats.kernels - before <= 2  # one elementwise kernel per gradient


def test_gradient_through_realize(rng):
    """tinygrad's test pattern: realize the forward result, then backward through a loss built on it."""
    a = rand(rng, (3, 4))
    x = Tensor(a, requires_grad=True)
    ret = (x * x.exp()).sum(1).realize()
    np.testing.assert_allclose(ret.numpy(), (a * np.exp(a)).sum(1), rtol=1e-5)
    loss = (ret + 1).square().mean()
    loss.numpy()  # realizing the loss too keeps its graph
    loss.backward()
    tx = torch.tensor(a, requires_grad=True)
    ((tx * tx.exp()).sum(1) + 1).square().mean().backward()
    compare("through realize", x.grad, tx.grad)


def test_gradient_through_kernelize_and_nested_realize(rng):
    a = rand(rng, (4,))
    x = Tensor(a, requires_grad=True)
    h1 = (x * 2).kernelize()
    h2 = (h1.exp() * x).realize()
    h1.realize()
    (h2 * h1).sum().backward()
    tx = torch.tensor(a, requires_grad=True)
    th1 = tx * 2
    ((th1.exp() * tx) * th1).sum().backward()
    compare("nested", x.grad, tx.grad)


def test_spec_holds_for_gradient_graphs(rng):
    with unigrad.Context(SPEC=1):
        check_grad(
            lambda x, y: (x @ y).max(1).sum() + x.prod(),
            lambda x, y: (x @ y).amax(1).sum() + x.prod(),
            [rand(rng, (3, 4)), rand(rng, (4, 2))],
        )


# ---------------------------------------------------------------- devices


PYTHON_CASES = [(c, [(2, 3)]) for c in UNARY if c.name in ("exp", "sin", "abs")]
PYTHON_CASES += [(c, [(2, 3), (3,)]) for c in BINARY if c.name in ("div", "maximum")]


@pytest.mark.parametrize("case, shapes", PYTHON_CASES, ids=[c.name for c, _ in PYTHON_CASES])
def test_python_device(case, shapes, rng):
    check_grad(case.fn, case.torch_fn, [rand(rng, s, case.domain) for s in shapes], device="PYTHON", rng=rng)


def test_python_device_reduce_and_matmul(rng):
    def fn(a, b):
        return (a @ b).max(0).sum() + a.prod(1).mean()

    def torch_fn(a, b):
        return (a @ b).amax(0).sum() + a.prod(1).mean()

    check_grad(fn, torch_fn, [rand(rng, (2, 3)), rand(rng, (3, 2))], device="PYTHON", rng=rng)


def test_to_device_copies_gradient_back(rng):
    a = rand(rng, (3,))
    x = Tensor(a, requires_grad=True)
    y = x.to("PYTHON")
    assert y.requires_grad
    (y * y).sum().backward()
    assert x.grad.device == "CPU"
    np.testing.assert_allclose(x.grad.numpy(), 2 * a, rtol=RTOL)


# ---------------------------------------------------------------- errors, with PyTorch's exception types


def _torch_raises(fn: Callable) -> type[BaseException]:
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        return type(e)
    raise AssertionError("torch did not raise")


def test_error_int_requires_grad():
    exc = _torch_raises(lambda: torch.tensor([1, 2], requires_grad=True))
    with pytest.raises(exc):
        Tensor([1, 2], requires_grad=True)
    with pytest.raises(exc):
        Tensor([True]).requires_grad_()
    exc = _torch_raises(lambda: torch.tensor([1, 2]).requires_grad_())
    with pytest.raises(exc):
        Tensor([1, 2]).requires_grad_()


@pytest.mark.flavor("torch")  # tinygrad's backward fills .grad of the unmarked leaves instead (test_flavor.py)
def test_error_backward_without_grad():
    exc = _torch_raises(lambda: (torch.ones(3) * 2).sum().backward())
    with pytest.raises(exc):
        (Tensor.ones(3) * 2).sum().backward()
    exc = _torch_raises(lambda: (torch.ones(3, requires_grad=True) > 1).sum().backward())
    with pytest.raises(exc):
        (Tensor.ones(3).requires_grad_() > 1).sum().backward()
    with pytest.raises(exc):
        Tensor([1.0], requires_grad=True).detach().sum().backward()


def test_error_backward_non_scalar():
    exc = _torch_raises(lambda: (torch.ones(3, requires_grad=True) * 2).backward())
    with pytest.raises(exc):
        (Tensor.ones(3).requires_grad_() * 2).backward()
    (Tensor.ones(1).requires_grad_() * 2).backward()  # one element is fine, as torch


def test_error_gradient_shape_mismatch():
    exc = _torch_raises(lambda: (torch.ones(3, requires_grad=True) * 2).backward(torch.ones(2)))
    with pytest.raises(exc):
        (Tensor.ones(3).requires_grad_() * 2).backward(Tensor.ones(2))


def test_error_requires_grad_false_on_non_leaf():
    def torch_case():
        (torch.ones(3, requires_grad=True) * 2).requires_grad_(False)

    exc = _torch_raises(torch_case)
    x = Tensor.ones(3).requires_grad_()
    with pytest.raises(exc):
        (x * 2).requires_grad_(False)
    x.requires_grad_(False)  # a leaf may
    assert not x.requires_grad and x.is_leaf


def test_error_gradient_of_int_target():
    exc = _torch_raises(lambda: torch.autograd.grad(torch.ones(2, requires_grad=True).sum(), torch.ones(2).int()))
    with pytest.raises(exc):
        Tensor.ones(2).sum().gradient(Tensor([1, 2]))


# ---------------------------------------------------------------- the rule table


def _ops_in(t: Tensor) -> set[Ops]:
    return {u.op for u in t.uop.toposort()}


def test_rule_table_covers_every_tensor_op(rng):
    """Every op a tensor graph can contain has a rule (no_gradient counts: it states the op passes none).
    The list is the spec's groups that appear at the tensor level, checked against graphs the Tensor API
    actually builds."""
    tensor_level = (
        GroupOp.ALU
        | GroupOp.Source
        | (GroupOp.Movement - {Ops.REPLICATED})
        | GroupOp.Reduce
        | GroupOp.Load
        | GroupOp.Marker
        | {Ops.AFTER}
    )
    assert tensor_level - set(GRADIENT_RULES) == set()
    x = Tensor(rand(rng, (2, 3)))
    built = [
        x.exp().log().sqrt().sin().cos().sigmoid().abs().relu().trunc(),
        x.maximum(1.0).minimum(2.0) + x * x - x / 2 % 3 // 1,
        (x > 0).where(x, x.reciprocal()) + (x == 1).float() + (x != 1).float() + (x <= 1).float(),
        x.reshape(3, 2).permute(1, 0).flip(0).pad(((1, 1), (0, 1))).shrink(((0, 2), (0, 3))).expand(2, 2, 3),
        x.sum(0) + x.max(0) + x.prod(0) + x.mean(0) + x.min(0),
        x.contiguous().detach().to("PYTHON").to("CPU").cast(dtypes.float64).float() @ x.T,
        (Tensor([1, 2]) & 3 | 4 ^ 5 << 1 >> 1).float(),
        x.kernelize() + 1,
    ]
    seen = set().union(*(_ops_in(t) for t in built))
    calls = {Ops.FUNCTION, Ops.GETTUPLE, Ops.TUPLE}  # @function calls (sigmoid's): inlined, or their own rule
    assert calls <= seen
    assert seen <= tensor_level | calls, seen - tensor_level - calls


def test_missing_rule_raises(monkeypatch, rng):
    x = Tensor(rand(rng, (3,)))
    y = x.exp2()
    monkeypatch.delitem(GRADIENT_RULES, Ops.EXP2)
    with pytest.raises(NotImplementedError, match="EXP2"):
        compute_gradient(y.uop, y.ones_like().uop, {x.uop})


def _lower_for_test(u: UOp) -> UOp:
    """POW and MULACC have rules but no renderer yet: spell them with renderable ops to run the graphs."""
    mapping = {}
    for n in u.toposort():
        if n.op is Ops.POW:
            mapping[n] = UOp(Ops.EXP2, (UOp(Ops.MUL, (UOp(Ops.LOG2, (n.src[0],)), n.src[1])),))
        elif n.op is Ops.MULACC:
            mapping[n] = UOp(Ops.ADD, (UOp(Ops.MUL, n.src[:2]), n.src[2]))
    return u.substitute(mapping) if mapping else u


DECOMPOSED = [
    (Ops.NEG, 1, lambda a: -a),
    (Ops.SUB, 2, lambda a, b: a - b),
    (Ops.DIV, 2, lambda a, b: a / b),
    (Ops.MULACC, 3, lambda a, b, c: a * b + c),
    (Ops.POW, 2, torch.pow),
]


@pytest.mark.parametrize("op, n, torch_fn", DECOMPOSED, ids=[d[0].name for d in DECOMPOSED])
def test_decomposed_op_rules(op, n, torch_fn, rng):
    """Rules for the spec's decomposed ops that tensor.py does not build yet, run on graphs made by hand."""
    arrays = [rand(rng, (5,), "positive")] + [rand(rng, (5,)) for _ in range(n - 1)]
    xs = [Tensor(a) for a in arrays]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    y = UOp(op, tuple(x.uop for x in xs))
    g = rand(rng, (5,))
    grads = compute_gradient(y, Tensor(g).uop, {x.uop for x in xs})
    refs = torch.autograd.grad(torch_fn(*ts), ts, torch.tensor(g))
    for x, r in zip(xs, refs):
        compare(op.name, Tensor(_lower_for_test(grads[x.uop])), r)


def test_pow_rule_special_cases():
    """d(a^b)/da is 0 where b == 0 and d(a^b)/db is 0 where a == 0 and b >= 0, as torch."""
    a = np.array([0.0, 0.0, 2.0], dtype=np.float32)
    b = np.array([0.0, 2.0, 0.0], dtype=np.float32)
    x, y = Tensor(a), Tensor(b)
    grads = compute_gradient(UOp(Ops.POW, (x.uop, y.uop)), Tensor.ones(3).uop, {x.uop, y.uop})
    ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    ra, rb = torch.autograd.grad(torch.pow(ta, tb).sum(), (ta, tb))
    compare("d/da", Tensor(_lower_for_test(grads[x.uop])), ra)
    compare("d/db", Tensor(_lower_for_test(grads[y.uop])), rb)


def test_stack_and_marker_rules(rng):
    """Rules for ops tensor.py does not build yet, checked on the gradient graphs alone (no forward run)."""
    a, b = Tensor(rand(rng, (2, 3))), Tensor(rand(rng, (2, 3)))
    g = rand(rng, (2, 2, 3))
    grads = compute_gradient(UOp(Ops.STACK, (a.uop, b.uop)), Tensor(g).uop, {a.uop, b.uop})
    np.testing.assert_equal(Tensor(grads[a.uop]).numpy(), g[0])
    np.testing.assert_equal(Tensor(grads[b.uop]).numpy(), g[1])
    for op in (Ops.CONTIGUOUS, Ops.CONTIGUOUSBACKWARD):
        grads = compute_gradient(UOp(op, (a.uop,)), Tensor(g[0]).uop, {a.uop})
        np.testing.assert_equal(Tensor(grads[a.uop]).numpy(), g[0])
    bits = UOp(Ops.BITCAST, (a.uop,), dtypes.int32)
    assert compute_gradient(UOp(Ops.CAST, (bits,), dtypes.float32), Tensor(g[0]).uop, {a.uop}) == {}


def test_sigmoid_is_stable_in_value_and_gradient():
    v = np.array([-100.0, -88.5, -5, -0.5, 0, 0.5, 5, 88.5, 100], dtype=np.float32)
    t, tt = Tensor(v, requires_grad=True), torch.tensor(v, requires_grad=True)
    y, ty = t.sigmoid(), tt.sigmoid()
    y.sum().backward()
    ty.sum().backward()
    np.testing.assert_allclose(y.numpy(), ty.detach().numpy(), atol=1e-7)
    np.testing.assert_allclose(t.grad.numpy(), tt.grad.numpy(), atol=1e-7)


def test_reading_one_gradient_realizes_all_of_its_backward_pass():
    """.grad tensors share the backward pass: the first one read realizes every gradient of that backward(), so
    reading them one by one runs the shared kernels once (29 kernels one by one before, 12 together here)."""
    from unigrad import nn
    from unigrad.runtime import realize as rt

    Tensor.manual_seed(0)
    m = nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 4))
    params = list(m.parameters())
    for p in params:
        p.requires_grad_()
    m(Tensor(np.random.default_rng(0).random((8, 16), dtype=np.float32))).square().sum().backward()
    before = rt.stats.kernels
    params[0].grad.numpy()
    first = rt.stats.kernels - before
    before = rt.stats.kernels
    for p in params[1:]:
        p.grad.numpy()
    assert rt.stats.kernels == before and first <= 12


def test_realized_value_under_a_detach_is_not_unrealized():
    """backward() sees through realized values to the graphs that computed them, but not under a DETACH (no gradient
    flows there): a recurrent state carried over from the last step as h.detach() made every backward rebuild the
    whole graph around it (an LSTM LM step: 0.8 s of substitutes)."""
    from unigrad import gradient

    w = Tensor([1.0, 2.0], requires_grad=True)
    h = (w * 3).realize()  # its graph is remembered: h requires grad
    loss = (h.detach() * w).sum()
    realized = dict(gradient.realized_from.items())
    assert h.uop in realized
    memo: dict = {}
    assert gradient.unrealize(loss.uop, memo, realized) is loss.uop and not memo
    loss.backward()
    np.testing.assert_allclose(w.grad.numpy(), [3.0, 6.0])
    w2 = Tensor([1.0, 2.0], requires_grad=True)
    h2 = (w2 * 3).realize()
    (h2.detach() * w2 + h2).sum().backward()  # reached beside the DETACH too: the gradient through h2 is kept
    np.testing.assert_allclose(w2.grad.numpy(), [3.0 + 3.0, 6.0 + 3.0])


def test_calls_with_their_own_rules_are_not_inlined_again(monkeypatch):
    """The backward inlines @function bodies only where some call (at any depth) has no rule of its own: a graph of
    tanh and sigmoid calls (each with its torch formula) is differentiated as it is, without a rebuild of the graph;
    a call without a rule is inlined. The gradients equal torch's either way."""
    import unigrad.gradient as grad_module
    from unigrad.function import function

    inlined: list[int] = []
    real = grad_module.inline_functions
    monkeypatch.setattr(grad_module, "inline_functions", lambda *a, **k: inlined.append(1) or real(*a, **k))
    x = np.linspace(-2, 2, 12).reshape(3, 4)
    ux, tx = Tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    (ux.tanh() * ux.sigmoid()).sum().backward()
    (tx.tanh() * tx.sigmoid()).sum().backward()
    np.testing.assert_allclose(ux.grad.numpy(), tx.grad.numpy(), rtol=1e-12)
    assert inlined == []

    @function
    def cube(t: Tensor) -> Tensor:  # no rule, a body of its PARAMs alone: differentiated once per trace, not inlined
        return t * t * t

    uy = Tensor(x, requires_grad=True)
    (cube(uy).tanh()).sum().backward()
    ty = torch.tensor(x, requires_grad=True)
    (ty**3).tanh().sum().backward()
    np.testing.assert_allclose(uy.grad.numpy(), ty.grad.numpy(), rtol=1e-9)  # (tanh' at 8: 5e-6, rounded)
    assert inlined == []
    w = Tensor(x)

    @function
    def scaled(t: Tensor) -> Tensor:  # reads a buffer it closes over: its body is differentiated inlined
        return t * w

    uz = Tensor(x, requires_grad=True)
    scaled(uz).tanh().sum().backward()
    np.testing.assert_allclose(uz.grad.numpy(), (1 - np.tanh(x * x) ** 2) * x, rtol=1e-9)
    assert inlined == [1]


def test_traced_calls_differentiated_once_per_trace() -> None:
    """A call of a @function without a rule of its own, whose body reads only its arguments (an LSTM step), is
    differentiated once per trace: its backward is one call of the VJP body (the body's gradient over PARAMs for
    the arguments and the outputs' gradients), however many times it is called; the gradients of a recurrence of
    such calls (two outputs, one unused at the end, a weight shared by every step, an integer argument) equal
    torch's, at several sizes (1 and odd, a non-contiguous input), and second derivatives go through the VJP."""
    import unigrad.gradient as grad_module
    from unigrad.function import function

    @function
    def step(x: Tensor, h: Tensor, c: Tensor, w: Tensor, k: Tensor) -> tuple[Tensor, Tensor]:
        pre = x + h @ w + k.cast(x.dtype)
        c2 = pre.sigmoid() * c + pre.tanh()
        return (c2.tanh() * pre.sigmoid()), c2

    def torch_step(x, h, c, w, k):  # noqa: ANN001, ANN202
        pre = x + h @ w + k.double()
        c2 = pre.sigmoid() * c + pre.tanh()
        return c2.tanh() * pre.sigmoid(), c2

    gen = np.random.default_rng(5)
    for n, d, steps in ((1, 1, 1), (3, 5, 4), (2, 7, 9)):
        xs_np = gen.standard_normal((steps, d, n)).transpose(0, 2, 1)  # non-contiguous steps (n, d)
        w_np, h_np = gen.standard_normal((d, d)) * 0.5, gen.standard_normal((n, d))
        k_np = gen.integers(-2, 3, (n, d))
        ux, uw, uh = Tensor(xs_np, requires_grad=True), Tensor(w_np, requires_grad=True), Tensor(h_np)
        tx, tw = torch.tensor(xs_np, requires_grad=True), torch.tensor(w_np, requires_grad=True)
        th = torch.tensor(h_np)
        uk, tk = Tensor(k_np), torch.tensor(k_np)
        uc, tc = uh * 0, th * 0
        for t in range(steps):
            uh, uc = step(ux[t], uh, uc, uw, uk)
            th, tc = torch_step(tx[t], th, tc, tw, tk)
        (uh * uh).sum().backward()
        (th * th).sum().backward()
        graph = UOp(Ops.TUPLE, (ux.grad.uop, uw.grad.uop)).toposort()
        assert sum(u.op is Ops.FUNCTION and u.arg.name.endswith(".vjp") for u in graph) == steps  # one per call
        np.testing.assert_allclose(ux.grad.numpy(), tx.grad.numpy(), rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(uw.grad.numpy(), tw.grad.numpy(), rtol=1e-9, atol=1e-12)
    # 9 steps of the last size, 3 VJPs: the first step's h and c need none, the last's c output gets none
    body = list(step.traces.values())[-1].body
    assert body in grad_module._vjps and len(grad_module._vjps[body]) == 3

    @function
    def cube(t: Tensor) -> Tensor:
        return t * t * t

    xv = np.linspace(-1.5, 2, 7)  # x.grad = 3x^2 (with its graph), then d(sum 3x^2)/dx = 6x added, as torch
    ux2 = Tensor(xv, requires_grad=True)
    cube(ux2).sum().backward(create_graph=True)
    ux2.grad.sum().backward()
    np.testing.assert_allclose(ux2.grad.numpy(), 3 * xv**2 + 6 * xv, rtol=1e-12)


def test_traced_call_inside_a_traced_body() -> None:
    """A traced call inside another's body: its PARAMs are numbered from 0 as the caller's are (PARAM(0) of another
    shape is another node of the same slot), so the caller's gradient walk leaves the inner body out (the inner call
    is differentiated by its own VJP) and finds its own PARAMs: gradients equal torch's with the arguments swapped
    between the two bodies, at two sizes."""
    from unigrad.function import function

    @function
    def inner(x: Tensor, y: Tensor) -> Tensor:  # x (n,), y (m, n)
        return y * x.sin() + 1.0

    @function
    def outer(a: Tensor, b: Tensor) -> Tensor:  # a (m, n), b (n,)
        return (a + b) * 0.5 + inner(b, a) * a + inner(b * 2, a.exp()).sum(0)  # (its own PARAMs met first)

    def t_inner(x, y):  # noqa: ANN001, ANN202
        return y * x.sin() + 1.0

    gen = np.random.default_rng(3)
    for m, n in ((3, 4), (1, 5)):
        an, bn = gen.standard_normal((m, n)), gen.standard_normal(n)
        ua, ub = Tensor(an, requires_grad=True), Tensor(bn, requires_grad=True)
        ta, tb = torch.tensor(an, requires_grad=True), torch.tensor(bn, requires_grad=True)
        (outer(ua, ub) * outer(ua, ub)).sum().backward()
        t_out = (ta + tb) * 0.5 + t_inner(tb, ta) * ta + t_inner(tb * 2, ta.exp()).sum(0)
        (t_out * t_out).sum().backward()
        np.testing.assert_allclose(ua.grad.numpy(), ta.grad.numpy(), rtol=1e-10)
        np.testing.assert_allclose(ub.grad.numpy(), tb.grad.numpy(), rtol=1e-10)
