"""Kernels of several outputs (pipeline/merge.py): elementwise kernels over one loop nest run as one, with the
values each would have stored, on every device; kernels that must not merge stay apart."""

import numpy as np
import pytest
import torch

from unigrad import Tensor, TinyJit, config
from unigrad.dtype import dtypes
from unigrad.ir.args import AddrSpace, ParamArg
from unigrad.ir.ops import Ops
from unigrad.ir.uop import UOp
from unigrad.pipeline import merge
from unigrad.nn import optim
from unigrad.runtime import realize as rt
from unigrad.runtime.support import cuda
from unigrad.runtime.support import opencl as cl

DEVICES = (
    ("CPU", "PYTHON")
    + (("CL",) if cl.unavailable() is None else ())
    + (("CUDA",) if cuda.unavailable() is None else ())
)
SHAPES = [(0,), (1,), (7,), (3, 5), (33, 17)]


def run(*ts: Tensor) -> int:
    """Realize ts together; the kernels that ran."""
    before = rt.stats.kernels
    Tensor.realize(*ts)
    return rt.stats.kernels - before


def rand(shape, seed=0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", SHAPES)
def test_two_outputs_of_one_shape_are_one_kernel(device, shape):
    x, y = rand(shape), rand(shape, 1)
    a, b = Tensor(x, device=device).realize(), Tensor(y, device=device).realize()
    s, p = a + b, (a * b).exp()
    n = run(s, p)
    assert n == (0 if 0 in shape else 1)
    np.testing.assert_allclose(s.numpy(), x + y, rtol=1e-6)
    np.testing.assert_allclose(p.numpy(), np.exp(x * y), rtol=1e-5)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("view", ["permuted", "sliced"])
def test_outputs_over_views_merge(device, view):
    """Both read a non-contiguous view of the inputs: one loop, each output at its own element."""
    x = rand((6, 9))
    a = Tensor(x, device=device).realize()
    v, xv = (a.permute(1, 0), x.T) if view == "permuted" else (a[1:5, ::2], x[1:5, ::2])
    s, t = v + 1, v.sin()
    assert run(s, t) == 1
    np.testing.assert_allclose(s.numpy(), xv + 1, rtol=1e-6)
    np.testing.assert_allclose(t.numpy(), np.sin(xv), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
def test_a_value_and_what_reads_it_at_its_element_are_one_kernel(device):
    """c reads b, an output too, at the element it stores: the kernel stores b and computes c from the value."""
    x = rand((5, 7))
    a = Tensor(x, device=device).realize()
    b = (a * 3).contiguous()
    c = (b + 1) * b
    assert run(b, c) == 1
    np.testing.assert_allclose(b.numpy(), x * 3, rtol=1e-6)
    np.testing.assert_allclose(c.numpy(), (x * 3 + 1) * (x * 3), rtol=1e-5)


@pytest.mark.parametrize("device", DEVICES)
def test_a_read_at_another_element_keeps_two_kernels(device):
    x = rand((11,))
    a = Tensor(x, device=device).realize()
    b = (a * 2).contiguous()
    c = b.flip(0) + b
    assert run(b, c) == 2
    np.testing.assert_allclose(c.numpy(), 2 * x[::-1] + 2 * x, rtol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
def test_other_shapes_and_reductions_stay_apart(device):
    x = rand((4, 6))
    a = Tensor(x, device=device).realize()
    s, r, t = a + 1, a.sum(1), a.reshape(6, 4) * 2  # t: the same elements in another loop nest
    assert run(s, r, t) == 3
    np.testing.assert_allclose(r.numpy(), x.sum(1), rtol=1e-5)
    np.testing.assert_allclose(t.numpy(), x.reshape(6, 4) * 2, rtol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
def test_assigns_merge_and_read_each_others_new_values(device):
    """An optimizer's pattern: m and v updated in place, then p from the new m and v: one kernel, three outputs."""
    g0, m0, v0, p0 = (rand((9, 4), k) for k in range(4))
    g, m, v, p = (Tensor(z, device=device).realize() for z in (g0, m0, v0, p0))
    m.assign(m * 0.9 + g * 0.1)
    v.assign(v * 0.99 + g * g * 0.01)
    p.assign(p - 0.5 * m / (v.abs().sqrt() + 1))
    assert run(p, m, v) == 1
    m1, v1 = m0 * np.float32(0.9) + g0 * np.float32(0.1), v0 * np.float32(0.99) + g0 * g0 * np.float32(0.01)
    np.testing.assert_allclose(m.numpy(), m1, rtol=1e-5)
    np.testing.assert_allclose(v.numpy(), v1, rtol=1e-5)
    np.testing.assert_allclose(p.numpy(), p0 - 0.5 * m1 / (np.sqrt(np.abs(v1)) + 1), rtol=1e-5)


@pytest.mark.parametrize("device", DEVICES)
def test_a_write_of_a_buffer_another_reads_keeps_them_apart(device):
    """b reads a's old value at other elements; a is then written: not one kernel (it would read new values)."""
    x = rand((8,))
    a = Tensor(x, device=device).realize()
    b = a.flip(0) * 2
    a.assign(a + 1)
    assert run(b, a) == 2
    np.testing.assert_allclose(b.numpy(), x[::-1] * 2, rtol=1e-6)
    np.testing.assert_allclose(a.numpy(), x + 1, rtol=1e-6)


def test_arguments_that_are_one_buffer_do_not_merge():
    """Held graphs over a kernelized assign read the buffer and the buffer after the kernel: two arguments, one
    memory. The schedule for that realize must not merge a write of it with a read of it, and a schedule built
    without aliases is not reused for one with them."""
    x = Tensor.zeros(3).contiguous().realize()
    held = []
    for want in (1.0, 2.0, 3.0):
        x.assign(x + 1).kernelize()
        held.append(x * 1)
        x.realize()
        assert x.tolist() == [want] * 3
    assert [h.tolist() for h in held] == [[3.0] * 3] * 3


def test_merging_gives_what_separate_kernels_give():
    """An MLP training step with Adam, merged and not: the same losses and weights, bit for bit, fewer kernels."""

    def train(merge: int) -> tuple[list[float], list[np.ndarray], int]:
        with config.Context(MERGE_KERNELS=merge):
            torch.manual_seed(0)
            rng = np.random.default_rng(0)
            w1, w2 = Tensor(rand((16, 8), 5), requires_grad=True), Tensor(rand((3, 16), 6), requires_grad=True)
            opt = optim.Adam([w1, w2], lr=0.01)
            losses, kernels = [], 0
            with Tensor.train():
                for _ in range(3):
                    x, y = Tensor(rng.standard_normal((5, 8)).astype(np.float32)), Tensor(rng.integers(0, 3, 5))
                    opt.zero_grad()
                    loss = (x @ w1.T).relu().matmul(w2.T).sparse_categorical_crossentropy(y)
                    loss.backward()
                    before = rt.stats.kernels
                    Tensor.realize(loss, *opt.schedule_step())
                    kernels = rt.stats.kernels - before
                    losses.append(loss.item())
            return losses, [w1.numpy(), w2.numpy()], kernels

    merged, apart = train(1), train(0)
    assert merged[0] == apart[0]
    for a, b in zip(merged[1], apart[1]):
        np.testing.assert_array_equal(a, b)
    assert merged[2] <= apart[2] - 6  # each weight's gradient, m, v and update: one kernel instead of four


def test_jit_replays_merged_kernels():
    """A TinyJit step whose kernel writes two outputs: each replay returns new values in new buffers."""

    @TinyJit
    def f(a: Tensor) -> tuple[Tensor, Tensor]:
        s, t = a + 1, a * 2
        Tensor.realize(s, t)
        return s, t

    outs = []
    for k in range(4):
        x = rand((10,), k)
        s, t = f(Tensor(x))
        outs.append((s, t, x))
    assert f.plan is not None and f.plan.n_kernels == 1
    for s, t, x in outs:
        np.testing.assert_allclose(s.numpy(), x + 1, rtol=1e-6)
        np.testing.assert_allclose(t.numpy(), x * 2, rtol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", [(1, 1), (5, 7), (33, 17), (0, 4)])
def test_a_reduction_and_what_reads_it_at_its_element_are_one_kernel(device, shape):
    """r (a row sum, an output) and c computed from it at each of its elements: one kernel stores both, c from the
    sum in registers (a gradient summed over the batch and the optimizer's update from it)."""
    x = rand(shape)
    a = Tensor(x, device=device).realize()
    r = a.sum(1)
    c = (r * 0.5).maximum(r.abs().sqrt()) + r
    assert run(r, c) == (0 if 0 in shape[:1] else 1)
    want = x.sum(1)
    np.testing.assert_allclose(r.numpy(), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(c.numpy(), np.maximum(want * 0.5, np.sqrt(np.abs(want))) + want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
def test_a_costly_value_of_a_reduction_keeps_its_own_kernel(device):
    """A transcendental function of the sum (or more than EPILOGUE_OPS ops) in the reduction's kernel would be
    computed in its register tile, unrolled: it stays a kernel of its own (an LSTMCell's gates and their matmul)."""
    x = rand((9, 13))
    a = Tensor(x, device=device).realize()
    r = a.sum(1)
    c = r.exp()
    assert run(r, c) == 2
    np.testing.assert_allclose(c.numpy(), np.exp(x.sum(1)), rtol=1e-5)
    r = a.max(1)
    y, want = r, x.max(1)
    for k in range(merge.EPILOGUE_OPS // 2 + 1):
        y, want = y * 1.001 + k, want * np.float32(1.001) + np.float32(k)
    assert run(r, y) == 2
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-5)


@pytest.mark.parametrize("device", DEVICES)
def test_two_reductions_of_one_shape_stay_apart(device):
    """Two REDUCEs are two loops over their reduce axes: a kernel of several outputs holds at most one."""
    x = rand((6, 9))
    a = Tensor(x, device=device).realize()
    s, m = a.sum(1), a.max(1)
    assert run(s, m) == 2
    np.testing.assert_allclose(s.numpy(), x.sum(1), rtol=1e-5)
    np.testing.assert_allclose(m.numpy(), x.max(1), rtol=0)


@pytest.mark.parametrize("device", DEVICES)
def test_a_matmul_and_a_transposed_view_of_it(device):
    """b = a @ w kept, and c read from b at another element (its transpose): two kernels; d at its element: merged."""
    x, w = rand((8, 8)), rand((8, 8), 1)
    a, wt = Tensor(x, device=device).realize(), Tensor(w, device=device).realize()
    b = a @ wt
    c, d = b.T + 1, b.relu()
    assert run(b, c, d) == 2
    np.testing.assert_allclose(b.numpy(), x @ w, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(c.numpy(), (x @ w).T + 1, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(d.numpy(), np.maximum(x @ w, 0), rtol=1e-5, atol=1e-5)


def _call(*reads: UOp) -> UOp:
    """A CALL whose arguments read `reads` (other CALLs) through AFTERs: enough of a kernel for the cycle check."""
    buf = UOp(Ops.PARAM, (), ParamArg(len(reads), dtypes.float32, "CPU", AddrSpace.GLOBAL))
    return UOp(Ops.CALL, (UOp(Ops.SINK, (), len(reads)), buf, *(UOp(Ops.AFTER, (buf, r)) for r in reads)))


def test_groups_that_would_wait_on_each_other_are_found():
    """Kernels a -> b and c -> d (d reads c): merging {a, d} and {b, c} makes each group wait on the other, a cycle
    the check after grouping finds (the merge then falls back to groups of kernels run in order)."""
    a = _call()
    c = _call(UOp.const(dtypes.float32, 1.0))
    b, d = _call(a), _call(c)
    calls = [a, c, b, d]
    graph = merge._Graph(calls, strict=False)
    assert graph.acyclic()
    mem = lambda u: u  # noqa: E731
    light = merge._Kernel(a, a, (), merge.Kind.LIGHT, 1)  # (a group reads only a kernel's kind and ops)
    g1 = merge._Group(a, light, graph, mem)
    g2 = merge._Group(b, light, graph, mem)
    g1.add(d, light, graph)
    assert graph.acyclic()  # {a, d} then b: b reads a, nothing reads b
    g2.add(c, light, graph)  # {b, c}: b reads a in {a, d}, d reads c in {b, c}
    assert not graph.acyclic()
    # the strict check refuses d in a's group: it reads c, a kernel run after a
    strict = merge._Graph(calls, strict=True)
    assert strict.reaches([c], merge._Group(a, light, strict, mem), walk=True)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("n", [1, 7, 64, 1000])
def test_small_full_reductions_are_one_kernel(device, n):
    """Full reductions (one output each) of few values run as loops one after the other in one kernel, whatever their
    dtypes (a loss and its labels' range check); over more than SMALL_REDUCE values each is its own kernel."""
    x, y = rand((n,)), np.random.default_rng(1).integers(-3, 9, (3, n))
    a, b = Tensor(x, device=device).realize(), Tensor(y, device=device).realize()
    s, m, bad = a.sum(), (a * 2).max(), (b > 5).any()
    assert run(s, m, bad) == 1
    np.testing.assert_allclose(s.numpy(), x.sum(), rtol=1e-5, atol=1e-6)
    assert m.item() == (x * 2).max() and bad.item() == bool((y > 5).any())
    big = Tensor(rand((merge.SMALL_REDUCE + 1,)), device=device).realize()
    assert run(big.sum(), big.max()) >= 2
