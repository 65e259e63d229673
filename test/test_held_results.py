"""A value computed once is not computed again (issue 34, part C).

After a realize, the live lazy tensors whose graphs hold a node it computed read that node's buffer (both flavors).
In the torch flavor a realize also computes the live tensors its graph passes through (a program holds them, as
torch's eager ops would have computed them), so a sampling loop's `idx = cat(idx, nxt)` is one buffer per step
instead of a graph of every earlier step. Values are checked against numpy; the graphs' sizes and the kernels'
bodies, not timings, show that nothing is recomputed.
"""

from __future__ import annotations

import numpy as np
import pytest

from unigrad import Context, Tensor, no_grad
from unigrad.ir.ops import Ops
from unigrad.runtime import realize as rt


def _reads_buffer_of(t: Tensor, other: Tensor) -> bool:
    """t's graph reads other's buffer (other is realized)."""
    base = other.uop.src[0] if other.uop.op is Ops.RESHAPE else other.uop
    return base in t.uop.toposort()


def _ops_in_last_kernels() -> set[Ops]:
    return {u.op for k in rt.stats.last_kernels for u in k.toposort()}


@pytest.mark.parametrize("flavor", ["tinygrad", "torch"])
@pytest.mark.parametrize("n", [0, 1, 7, 1000])
def test_live_graph_reads_a_realized_node(flavor, n):
    x_np = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    with Context(FLAVOR=flavor):
        x = Tensor(x_np).realize()
        with no_grad():  # (tinygrad's backward looks for unmarked float leaves in the graphs: those keep theirs)
            a = x.exp()
            b = a + 1
            a.realize()
        if n:
            assert _reads_buffer_of(b, a)  # b now reads a's buffer: the exp is not computed again
        b.realize()
        if n:
            assert Ops.EXP2 not in _ops_in_last_kernels()
        np.testing.assert_allclose(b.numpy(), np.exp(x_np) + 1, rtol=1e-6)


@pytest.mark.parametrize("flavor", ["tinygrad", "torch"])
def test_shared_result_keeps_its_value_across_writes(flavor):
    x_np = np.arange(6, dtype=np.float32) - 2
    with Context(FLAVOR=flavor):
        x = Tensor(x_np).realize()
        a = x + 1
        b = a * 2
        c = x * 3  # reads x directly
        a.realize()
        a.assign(a * 0).realize()  # b read a's buffer: it is computed before the write, as torch computed it
        x.assign(x * 0).realize()
        np.testing.assert_allclose(b.numpy(), (x_np + 1) * 2)
        np.testing.assert_allclose(c.numpy(), x_np * 3)
        d = x + 1  # a new graph of the same structure as a's old one reads x as it is now
        np.testing.assert_allclose(d.numpy(), np.ones(6))


def test_torch_flavor_computes_held_intermediates_once():
    x_np = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    with Context(FLAVOR="torch"):
        x = Tensor(x_np).realize()
        h = (x * 2).exp()  # held by the program
        y = h.sum()
        y.realize()
        assert h.uop.op is Ops.RESHAPE and h.uop.src[0].op is Ops.BUFFER  # computed with y
        h.realize()
        assert rt.stats.last_kernels == []  # nothing left to run
        v = h.sum(axis=0)
        v.realize()
        assert Ops.EXP2 not in _ops_in_last_kernels()
        np.testing.assert_allclose(y.numpy(), np.exp(x_np * 2).sum(), rtol=1e-5)
        np.testing.assert_allclose(h.numpy(), np.exp(x_np * 2), rtol=1e-6)
        np.testing.assert_allclose(v.numpy(), np.exp(x_np * 2).sum(axis=0), rtol=1e-5)


def test_tinygrad_flavor_fuses_held_intermediates():
    with Context(FLAVOR="tinygrad"):
        x = Tensor(np.ones((4, 4), dtype=np.float32)).realize()
        h = x * 2
        y = h.sum()
        y.realize()
        assert len(rt.stats.last_kernels) == 1
        assert h.uop.op is Ops.MUL  # still lazy: realize computes what it names
        np.testing.assert_allclose(h.numpy(), np.full((4, 4), 2.0))


def test_sampling_loop_graph_stays_constant():
    """A generate loop: each step reads the last tokens, realizes a value (as a setitem or .item() does) and cats the
    next token on. The held idx is a buffer after every step, so each step's graph and kernels stay the same size."""
    steps, ctx = 12, 3
    with Context(FLAVOR="torch"):
        idx = Tensor(np.array([[1, 2, 3]], dtype=np.int64))
        want = [1, 2, 3]
        sizes, kernels = [], []
        for _ in range(steps):
            cond = idx[:, -ctx:]
            nxt = (cond.sum(axis=1, keepdim=True) * 3 + 1) % 11
            total = nxt.sum().item()  # a per-step realize
            idx = Tensor.cat(idx, nxt, dim=1)
            want.append((sum(want[-ctx:]) * 3 + 1) % 11)
            assert total == want[-1]
            sizes.append(len(idx.uop.toposort()))
            kernels.append(len(rt.stats.last_kernels))
        assert idx.tolist() == [want]
        assert max(sizes[2:]) == min(sizes[2:]), sizes  # not growing with the steps
        assert max(kernels[2:]) == min(kernels[2:]), kernels


@pytest.mark.parametrize("flavor", ["tinygrad", "torch"])
def test_gradients_through_a_shared_result(flavor):
    w_np = np.random.default_rng(1).standard_normal(4).astype(np.float32)
    with Context(FLAVOR=flavor):
        w = Tensor(w_np, requires_grad=True)
        a = w * 2
        b = (a * a).sum()
        a.realize()
        b.backward()
        np.testing.assert_allclose(w.grad.numpy(), 8 * w_np, rtol=1e-6)
        w.grad = None
        a = w * 3
        b = (a * a).sum()
        b.realize()  # the torch flavor computes a with it
        b.backward()
        np.testing.assert_allclose(w.grad.numpy(), 18 * w_np, rtol=1e-6)


def test_unmarked_leaf_gets_its_gradient_after_a_realize():
    """tinygrad's backward fills .grad of unmarked tensors its graph reads: a realized result on the way must not hide
    the leaf below it."""
    with Context(FLAVOR="tinygrad"):
        tt = Tensor(np.arange(4, dtype=np.float32))
        a = tt * 2
        b = a.sum()
        a.realize()
        b.backward()
        np.testing.assert_allclose(tt.grad.numpy(), np.full(4, 2.0))


def test_multi_device_live_graph_reads_a_realized_node():
    x_np = np.random.default_rng(3).standard_normal((4, 3)).astype(np.float32)
    x = Tensor(x_np).shard(("CPU:0", "CPU:1"), axis=0).realize()
    with no_grad():
        a = x.exp()
        b = a + 1
        before = b.uop
        a.realize()
        assert b.uop is not before and a.uop in b.uop.toposort()
    np.testing.assert_allclose(b.numpy(), np.exp(x_np) + 1, rtol=1e-6)


@pytest.mark.parametrize("flavor", ["tinygrad", "torch"])
@pytest.mark.parametrize("contiguous", [True, False])
def test_tensors_of_one_graph_stay_apart(flavor, contiguous):
    """Two tensors made alike (hash-consed to one graph) are two tensors: realizing and writing one leaves the other."""
    with Context(FLAVOR=flavor):
        a, b = Tensor.zeros(3, 4), Tensor.zeros(3, 4)
        if contiguous:
            a, b = a.contiguous(), b.contiguous()
        v = b.reshape(12)  # a view of b's graph
        a.realize()
        a.assign(Tensor.ones(3, 4)).realize()
        b[0] = 5
        np.testing.assert_array_equal(a.numpy(), np.ones((3, 4)))
        want = np.zeros((3, 4))
        want[0] = 5
        np.testing.assert_array_equal(b.numpy(), want)
        np.testing.assert_array_equal(v.numpy(), np.zeros(12))


def test_a_training_step_leaves_no_cyclic_garbage():
    """Tensors and graphs die when the program drops them, not when the garbage collector runs: a tensor kept alive
    by a reference cycle is a live reader to the next optimizer step, which would compute it again before writing
    the weights (a jitted DDP step captured its forward twice). A step with an @function body and a conv."""
    import gc

    import unigrad.nn as unn
    from unigrad import function

    @function
    def scale(t: Tensor) -> Tensor:
        return t * 2

    with Context(FLAVOR="torch"):
        conv, lin = unn.Conv2d(1, 4, 3, padding=1), unn.Linear(4 * 16, 3)
        opt = unn.optim.Adam([*conv.parameters(), *lin.parameters()], lr=1e-2)
        x = Tensor(np.random.default_rng(0).random((8, 1, 4, 4), dtype=np.float32))
        y = Tensor(np.arange(8) % 3)

        def step() -> float:
            loss = lin(scale(conv(x).relu()).flatten(1)).cross_entropy(y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            return loss.item()

        step()
        gc.collect()
        gc.set_debug(gc.DEBUG_SAVEALL)
        try:
            step()
            gc.collect()
            kinds = {type(o).__name__ for o in gc.garbage}
        finally:
            gc.set_debug(0)
            gc.garbage.clear()
        assert not kinds & {"Tensor", "UOp"}, kinds


def test_readers_realized_before_an_outside_write_keep_the_leaves_backward_finds():
    """realize_readers (a collective writing into a buffer) computes the lazy readers first; a realized result the
    program made (a leaf tinygrad's backward gives a .grad) is still found by backward() afterwards."""
    from unigrad.tensor import realize_readers

    xn = np.random.default_rng(0).standard_normal(5).astype(np.float32)
    x = (Tensor(xn) * 1).realize()  # made by an op, then realized
    b = Tensor(np.zeros(5, np.float32)).realize()
    lazy = b + 1  # reads b: computed before the write
    realize_readers(b)
    (x * x).sum().backward()
    assert x.grad is not None
    np.testing.assert_allclose(x.grad.numpy(), 2 * xn, rtol=1e-6)
    np.testing.assert_allclose(lazy.numpy(), np.ones(5), rtol=0)


@pytest.mark.parametrize("hidden", [1, 8, 13])
def test_detached_recurrent_state_keeps_no_earlier_graph(hidden):
    """An RNN's state carried from step to step as h.detach() (truncated backprop, as the word language model does):
    each step's h is realized with its graph kept for gradients, but the next step reads it only through the
    detach, so the graphs kept stay as many as the live states (they grew by one step's graph per step, ~1 MB a step
    of the word language model). Every step's gradient is numpy's."""
    import gc

    from unigrad.gradient import realized_from

    rng = np.random.default_rng(5)
    wn, xn = rng.standard_normal((hidden, hidden)) * 0.5, rng.standard_normal((3, hidden))
    w, x = Tensor(wn.astype(np.float32), requires_grad=True), Tensor(xn.astype(np.float32))
    h, hn, kept = Tensor.zeros(3, hidden), np.zeros((3, hidden)), []
    for _ in range(10):
        w.grad = None
        h_prev = h.detach()
        h = (h_prev @ w + x).tanh()
        h.realize()  # a non-leaf that requires grad: its graph is kept (gradient.realized_from)
        h.sum().backward()
        yn = np.tanh(hn @ wn + xn)
        np.testing.assert_allclose(h.numpy(), yn, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(w.grad.numpy(), hn.T @ (1 - yn**2), rtol=1e-4, atol=1e-5)
        hn = yn
        del h_prev
        gc.collect()
        kept.append(len(realized_from))
    assert kept[-1] == kept[3], kept
