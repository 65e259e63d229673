"""@function: the traced FUNCTION node has the spec's form, bodies are reused without retracing, results and
gradients equal the inlined code (numpy reference) in both scheduling modes (inlined, precompiled CALL)."""

import numpy as np
import pytest

from unigrad import Tensor, TinyJit
from unigrad.function import function
from unigrad.ir.ops import Ops
from unigrad.runtime import realize as rt

RNG = np.random.default_rng(0)
MODES = [False, True]  # precompile


def rand(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def test_traced_node_has_the_spec_form():
    @function
    def f(a: Tensor, b: Tensor) -> Tensor:
        return a + b

    x, y = Tensor(rand(3)), Tensor(rand(3))
    out = f(x, y)
    assert out.uop.op is Ops.GETTUPLE and out.uop.arg == 0
    fn = out.uop.src[0]
    assert fn.op is Ops.FUNCTION and fn.src[0].op is Ops.TUPLE
    assert fn.src[1:] == (x.uop, y.uop)
    leaves = [u for u in fn.src[0].toposort() if not u.src]
    assert all(u.op in (Ops.PARAM, Ops.STACK, Ops.CONST) for u in leaves)  # no concrete buffers in the body
    assert sorted(u.arg.slot for u in fn.src[0].toposort() if u.op is Ops.PARAM) == [0, 1]


def test_inputs_found_in_nested_arguments_and_deduped():
    @function
    def f(d: dict, pair: tuple, k: float) -> dict:
        return {"s": d["a"] * k + pair[0], "t": [pair[1] - d["a"]]}

    a, b = rand(4), rand(4)
    ta, tb = Tensor(a), Tensor(b)
    out = f({"a": ta}, (tb, ta), 2.0)
    assert len(out["s"].uop.src[0].src) == 3  # body + the two distinct tensors (ta passed twice)
    np.testing.assert_allclose(out["s"].numpy(), a * 2 + b, rtol=1e-6)
    np.testing.assert_allclose(out["t"][0].numpy(), a - a)


def test_positional_tensors_and_scalars_key_their_traces():
    """Positional Tensors and plain scalars (an optimizer's calls) are keyed without walking a structure: a repeated
    tensor is one input, each scalar's type and value (-0.0 is not 0.0, 1 is not 1.0 or True) pick the trace."""
    traced = []

    @function
    def f(x: Tensor, y: Tensor, k) -> Tensor:
        traced.append(k)
        return x * k + y

    a, b = rand(3), rand(3)
    ta, tb = Tensor(a), Tensor(b)
    for k in [2.0, 2.0, -0.0, 0.0, 1, 1.0, True, 1]:
        out = f(ta, tb, k)
        np.testing.assert_array_equal(out.numpy(), (a * k + b).astype(np.float32))
    assert [repr(k) for k in traced] == ["2.0", "-0.0", "0.0", "1", "1.0", "True"]
    np.testing.assert_allclose(f(ta, ta, 3.0).numpy(), a * 3 + a, rtol=1e-6)
    assert len(f(ta, ta, 3.0).uop.src[0].src) == 2  # the body and one tensor
    assert traced[-1] == 3.0 and len(traced) == 7  # (x, x) is a trace of its own, made once


@pytest.mark.parametrize("precompile", MODES)
def test_reuse_without_retrace(precompile):
    traced = []

    @function(precompile=precompile)
    def f(x: Tensor) -> tuple[Tensor, Tensor]:
        traced.append(x.shape)
        return x.exp().sum(0), x * 2

    for shape in [(3, 5), (3, 5), (3, 5), (1, 1), (3, 5), (0, 4)]:
        x = rand(*shape)
        s, d = f(Tensor(x))
        np.testing.assert_allclose(s.numpy(), np.exp(x).sum(0), rtol=1e-5)
        np.testing.assert_allclose(d.numpy(), x * 2)
    assert traced == [(3, 5), (1, 1), (0, 4)]


@pytest.mark.parametrize("precompile", MODES)
@pytest.mark.parametrize("shape", [(1, 4), (5, 4), (7, 4)])
def test_gradients_equal_inlined_code(precompile, shape):
    w_np = rand(4, 3)

    def body(x: Tensor, y: Tensor, w: Tensor) -> Tensor:
        return ((x @ w).relu() * y).sum(1)

    traced = function(body, precompile=precompile)
    x_np, y_np = rand(*shape), rand(shape[0], 3)
    results = []
    for fn in (body, traced):
        x, y = Tensor(x_np, requires_grad=True), Tensor(y_np)
        w = Tensor(w_np, requires_grad=True)
        out = fn(x, y, w)
        (out * out).sum().backward()
        results.append((out.numpy(), x.grad.numpy(), w.grad.numpy()))
    for plain, traced_val in zip(*results):
        np.testing.assert_allclose(traced_val, plain, rtol=1e-5, atol=1e-6)


def test_gradient_reaches_closed_over_weights():
    w = Tensor(rand(3), requires_grad=True)

    @function
    def f(x: Tensor) -> Tensor:
        return x * w

    x = rand(3)
    out = f(Tensor(x))
    assert out.requires_grad
    out.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), x)


def test_inline_fuses_precompile_runs_alone():
    def body(x: Tensor) -> Tensor:
        return x * 2 + 1

    x = Tensor(rand(16)).realize()
    counts = []
    for precompile in MODES:
        f = function(body, precompile=precompile)
        before = rt.stats.kernels
        out = (f(x) - 3).realize()
        counts.append(rt.stats.kernels - before)
        np.testing.assert_allclose(out.numpy(), x.numpy() * 2 - 2, rtol=1e-6)
    assert counts == [1, 2]  # inlined: one fused kernel; precompiled: the function's kernel, then the caller's


def test_precompiled_body_compiles_once():
    @function(precompile=True)
    def f(x: Tensor) -> Tensor:
        return (x * x).sum()

    f(Tensor(rand(8))).realize()
    n = rt.stats.programs
    for _ in range(3):
        x = rand(8)
        np.testing.assert_allclose(f(Tensor(x)).numpy(), (x * x).sum(), rtol=1e-5)
    assert rt.stats.programs == n


def test_nested_functions_and_jit():
    @function
    def inner(x: Tensor) -> Tensor:
        return x + 1

    @function(precompile=True)
    def outer(x: Tensor) -> Tensor:
        return inner(x) * inner(x * 2)

    step = TinyJit(lambda x: outer(x))
    for _ in range(4):
        x = rand(5)
        np.testing.assert_allclose(step(Tensor(x)).numpy(), (x + 1) * (x * 2 + 1), rtol=1e-6)


def test_errors():
    with pytest.raises(TypeError, match="returned a float"):
        function(lambda x: 1.5)(Tensor(rand(2)))
    with pytest.raises(TypeError, match="returned no Tensor"):
        function(lambda x: [])(Tensor(rand(2)))
    with pytest.raises(TypeError, match="decorate a function"):
        function(precompile=True)(1, 2)


def _clip_grad(g: Tensor, x: Tensor, scale: float) -> tuple[Tensor]:
    return ((g * scale).clip(-1, 1),)  # a straight-through rule: not the body's derivative


@pytest.mark.parametrize("precompile", MODES)
def test_own_backward_rule_replaces_the_body_derivative(precompile):
    """function(fxn, backward=rule): autodiff calls the rule (with the call's non-Tensor arguments) instead of
    differentiating the body; the forward is unchanged; a second output and a closed-over weight work too."""
    calls = []

    def rule(g: Tensor, x: Tensor, scale: float) -> tuple[Tensor]:
        calls.append(scale)
        return _clip_grad(g, x, scale)

    f = function(lambda x, scale: (x * scale).round(), backward=rule, precompile=precompile)
    xs = rand(7)
    x = Tensor(xs, requires_grad=True)
    y = f(x, 3.0)
    np.testing.assert_allclose(y.numpy(), np.round(xs * 3.0), atol=1e-6)  # round() alone has zero gradient
    g = rand(7)
    (y * Tensor(g)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.clip(g * 3.0, -1, 1), atol=1e-6)
    assert calls == [3.0]


def test_own_backward_rule_with_two_outputs_and_errors():
    def rule(gs: list, a: Tensor, b: Tensor) -> tuple:
        ga, gb = gs
        return (None if ga is None else ga * 2, None if gb is None else gb * 3)

    f = function(lambda a, b: (a + 0, b + 0), backward=rule)
    a, b = Tensor(rand(4), requires_grad=True), Tensor(rand(4), requires_grad=True)
    p, q = f(a, b)
    (p.sum() + q.sum() * 2).backward()
    np.testing.assert_allclose(a.grad.numpy(), np.full(4, 2.0))
    np.testing.assert_allclose(b.grad.numpy(), np.full(4, 6.0))
    a.grad = b.grad = None
    f(a, b)[0].sum().backward()  # the second output unused: its gradient is None
    np.testing.assert_allclose(a.grad.numpy(), np.full(4, 2.0))
    assert b.grad is None or np.all(b.grad.numpy() == 0)

    short = function(lambda a, b: a * b, backward=lambda g, a, b: (g,))
    with pytest.raises(TypeError, match="backward returned 1 gradients for 2 Tensors"):
        short(a, b).sum().backward()
    wrong = function(lambda a: a * 2, backward=lambda g, a: (g.sum(),))
    with pytest.raises(ValueError, match=r"gradient of shape \(\) for \(4,\)"):
        wrong(a).sum().backward()
    # a function of one Tensor (the rule without the argument tree): a bare gradient, a 1-tuple, None, too many
    for ret, expected in ((lambda g, a: g * 5, 5.0), (lambda g, a: (g * 4,), 4.0), (lambda g, a: None, None)):
        a.grad = None
        function(lambda a: a + 0, backward=ret)(a).sum().backward()
        if expected is None:
            assert a.grad is None or np.all(a.grad.numpy() == 0)
        else:
            np.testing.assert_allclose(a.grad.numpy(), np.full(4, expected))
    two = function(lambda a: a + 0, backward=lambda g, a: (g, g))
    with pytest.raises(TypeError, match="backward returned 2 gradients for 1 Tensors"):
        two(a).sum().backward()


def test_callify_inlines_calls_in_its_walk_as_substitution_does():
    """callify inlines @function calls while it walks, or keeps a call whose body reads only its PARAMs (the
    schedule inlines it): either way, inlined, the FUNCTION it makes is the one made from the graph with every call
    substituted first (pipeline.callify.inline_functions), node for node (hash-consing), for nested calls, a body
    called twice on other arguments and twice on the same ones, and bound Variables inside."""
    from unigrad.ir.uop import UOp
    from unigrad.pipeline.callify import callify, inline_functions
    from unigrad import Variable

    @function
    def inner(x: Tensor, w: Tensor) -> Tensor:
        return (x * w).relu() + w

    @function
    def outer(x: Tensor, w: Tensor) -> tuple[Tensor, Tensor]:
        return inner(x, w) * 2, inner(x + 1, w).sum()

    x, w = Tensor(rand(4, 3)), Tensor(rand(4, 3)).realize()
    a, b = outer(x, w)
    c = inner(x, w)  # the same call as the one inside outer: one body walk
    v = Variable("callify_n", 1, 4).bind(3)
    d = outer(x[:v], w[:v])[0]
    sink = UOp(Ops.SINK, (a.uop, b.uop, c.uop, d.uop))
    kept, inlined = callify(sink), callify(inline_functions(sink))
    assert kept.src[1:] == inlined.src[1:]
    assert inline_functions(kept.src[0]) is inlined.src[0]
    assert any(u.op is Ops.FUNCTION for u in kept.src[0].toposort())  # inner's calls stay calls
    xn, wn = x.numpy(), w.numpy()
    ref = np.maximum(xn * wn, 0) + wn
    np.testing.assert_allclose(a.numpy(), ref * 2, rtol=1e-6)
    np.testing.assert_allclose(b.numpy(), (np.maximum((xn + 1) * wn, 0) + wn).sum(), rtol=1e-5)
    np.testing.assert_allclose(c.numpy(), ref, rtol=1e-6)
    np.testing.assert_allclose(d.numpy()[:3], (ref * 2)[:3], rtol=1e-6)


def test_kept_calls_with_a_varying_scalar_argument():
    """A call callify keeps (its body reads only its PARAMs) traced once per Python scalar: the bodies of two values
    differ only in a constant, the one the schedule lifts into an argument once values vary. The lifted constant must
    not stay inside a body (whose PARAMs are its call's arguments): every value computes its own result."""

    @function
    def scaled(x: Tensor, c: float) -> Tensor:
        return x * c + 1

    base = rand(7)
    for i, c in enumerate([0.5, 0.25, 2.0, 3.0, -1.5]):
        y = (scaled(Tensor(base).realize(), c) + i).tanh()
        np.testing.assert_allclose(y.numpy(), np.tanh(base * c + 1 + i), rtol=1e-5, atol=1e-6)
