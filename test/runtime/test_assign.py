"""Assign (STORE then AFTER): writes into an existing buffer, in place when it is safe."""

import numpy as np
import pytest

from unigrad import Tensor
from unigrad.ir.ops import Ops
from unigrad.runtime import realize as rt

DEVICES = ["CPU", "PYTHON"]


def kernels_of(t: Tensor) -> int:
    before = rt.stats.kernels
    t.realize()
    return rt.stats.kernels - before


@pytest.mark.parametrize("device", DEVICES)
def test_assign_elementwise_in_place(device):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    a = Tensor(x, device=device).realize()
    view = a.reshape(6)  # another view of the same buffer sees the write
    buf = rt.buffer_of(a.uop)
    written = a.assign(a * 2 + 1)  # (not inside the assert: pytest would keep the lazy a * 2 alive, a reader)
    assert kernels_of(written) == 1
    assert rt.buffer_of(a.uop) is buf  # same buffer, written in place
    np.testing.assert_allclose(a.numpy(), x * 2 + 1)
    np.testing.assert_allclose(view.numpy(), (x * 2 + 1).reshape(6))


@pytest.mark.parametrize("device", DEVICES)
def test_assign_reading_other_elements_goes_through_a_copy(device):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    a = Tensor(x, device=device).realize()
    assert kernels_of(a.assign(a.flip(1))) == 2  # the flipped value is computed aside first
    np.testing.assert_allclose(a.numpy(), x[:, ::-1])
    c = Tensor([1, 2, 3], device=device).realize()
    c.assign(c + c.sum()).realize()  # the sum reads every element while each is written
    assert c.tolist() == [7, 8, 9]


@pytest.mark.parametrize("device", DEVICES)
def test_assign_casts_and_broadcasts_scalars(device):
    a = Tensor([1.0, 2.0], device=device).realize()
    a.assign(Tensor([3, 4], device=device))  # int value into a float buffer
    assert a.tolist() == [3.0, 4.0]
    a.assign(0.5)
    assert a.tolist() == [0.5, 0.5]


def test_assign_unrealized_target_and_errors():
    b = Tensor.zeros(3)  # no buffer yet: one is made for it
    b.assign(Tensor([1.0, 2.0, 3.0]))
    assert b.tolist() == [1.0, 2.0, 3.0]
    with pytest.raises(RuntimeError, match=r"assign: shape \(2,\) does not match the target's \(3,\)"):
        b.assign(Tensor([1.0, 2.0]))


def test_assign_is_store_then_after():
    a = Tensor([1.0, 2.0]).realize()
    a.assign(a + 1)
    assert a.uop.op is Ops.AFTER and a.uop.src[1].op is Ops.STORE
    a.realize()
    assert a.uop.op is Ops.RESHAPE and a.uop.src[0].op is Ops.BUFFER


@pytest.mark.parametrize("device", DEVICES)
def test_pending_assign_runs_once_whoever_realizes_it(device):
    x = Tensor([1.0, 2.0], device=device).realize()
    x.assign(x + 1)
    z, y = x * 3, x * 2  # both built while the assign is pending
    assert y.tolist() == [4.0, 6.0]  # runs the assign with y
    assert z.tolist() == [6.0, 9.0] and x.tolist() == [2.0, 3.0]  # not again


@pytest.mark.parametrize("device", DEVICES)
def test_the_same_assign_again_runs_again(device):
    """x.assign(x + 1) twice builds two structurally equal graphs: the second is its own event, not the first
    one (already run) found again by hash-consing while something still holds the first one's graph."""
    x = Tensor.zeros(3, device=device).contiguous().realize()
    first = x.assign(x + 1).uop
    held = x * 2  # keeps the first assign's graph alive
    x.realize()
    for want in (2.0, 3.0, 4.0):
        assert x.assign(x + 1).uop is not first
        x.realize()
        assert x.tolist() == [want] * 3
    assert held.shape == (3,)


@pytest.mark.parametrize("device", DEVICES)
def test_the_same_kernelized_assign_again_runs_again(device):
    """kernelize() then realize() of x.assign(x + 1), three times, while the earlier kernelized graphs are held:
    each schedule is its own kernel launch, not an earlier launch (already run) found again by hash-consing."""
    x = Tensor.zeros(3, device=device).contiguous().realize()
    held = []
    for want in (1.0, 2.0, 3.0):
        x.assign(x + 1).kernelize()
        held.append(x * 1)  # a graph over the kernelized, not yet run, assign
        x.realize()
        assert x.tolist() == [want] * 3
    assert [h.tolist() for h in held] == [[3.0] * 3] * 3  # views of x's buffer (lazy: they read it now)


@pytest.mark.parametrize("device", DEVICES)
def test_chained_assigns(device):
    x = Tensor([1.0, 2.0], device=device).realize()
    x.assign(x + 1)
    x.assign(x * 2)
    x.assign(x + 1)
    assert x.tolist() == [5.0, 7.0]
    x.assign(x - 1)
    assert x.tolist() == [4.0, 6.0]


@pytest.mark.parametrize("device", DEVICES)
def test_assigns_in_one_schedule_read_old_values(device):
    """Each new value is what the graph said when it was built: kernels reading a buffer's old value run
    before the write into it, even when two assigns read each other's target."""
    a, b = Tensor([1.0, 2.0], device=device).realize(), Tensor([10.0, 20.0], device=device).realize()
    na, nb = a + b.sum(), b + a.sum()
    a.assign(na)
    b.assign(nb)
    Tensor.realize(a, b)
    assert a.tolist() == [31.0, 32.0] and b.tolist() == [13.0, 23.0]


ORDERS = [("a", "ua", "b", "ub"), ("ub", "b", "ua", "a"), ("b", "a", "ub", "ua"), ("ua", "ub", "a", "b")]


@pytest.mark.parametrize("with_reads", [False, True])
@pytest.mark.parametrize("order", ORDERS)
def test_moved_assigns_that_read_each_others_targets_run_once(order, with_reads):
    """Adadelta's pattern: each parameter's step reads its state before the state's update and the other
    parameter (its "gradient"); both assigns of a pair read the step. Every assign that must wait for readers of
    its old value computes first and copies after, and each runs once (an update was applied twice, or the
    schedule waited in a cycle), in any realize order, with or without the shared reads as outputs."""
    a, b = Tensor([1.0, 2.0]), Tensor([3.0, 4.0])
    ga, gb = b * 2, a * 2
    ua, ub = Tensor([1.0, 1.0]), Tensor([1.0, 1.0])
    da, db = ua * ga, ub * gb
    a.assign(a - da)
    ua.assign(ua + da)
    b.assign(b - db)
    ub.assign(ub + db)
    named = {"a": a, "ua": ua, "b": b, "ub": ub}
    Tensor.realize(*(named[k] for k in order), *((ga, gb) if with_reads else ()))
    assert (ua.tolist(), ub.tolist()) == ([7.0, 9.0], [3.0, 5.0])
    assert (a.tolist(), b.tolist()) == ([-5.0, -6.0], [1.0, 0.0])
    if with_reads:
        assert (ga.tolist(), gb.tolist()) == ([6.0, 8.0], [2.0, 4.0])


@pytest.mark.parametrize("device", DEVICES)
def test_long_chain_of_pending_assigns(device):
    n, r = Tensor([1.0], device=device).realize(), Tensor([1.0, 1.0, 1.0], device=device).realize()
    for _ in range(5):
        r.assign(r * n)
        n.assign(n + 1)
    assert r.tolist() == [120.0] * 3 and n.tolist() == [6.0]


# ---------------------------------------------------------------- assign through a view: only its elements


VIEWS = {  # name: (unigrad view of a (5, 7) tensor, the same numpy view)
    "rows": (lambda t: t[1:3], lambda x: x[1:3]),
    "column": (lambda t: t[:, 4], lambda x: x[:, 4]),
    "one element": (lambda t: t[4, 6:7], lambda x: x[4, 6:7]),
    "stepped": (lambda t: t[::2, 1::3], lambda x: x[::2, 1::3]),
    "flipped": (lambda t: t[::-1, 2:5], lambda x: x[::-1, 2:5]),
    "transposed": (lambda t: t.T[3:6], lambda x: x.T[3:6]),
    "reshaped slice": (lambda t: t.reshape(35)[10:24].reshape(2, 7), lambda x: x.reshape(35)[10:24].reshape(2, 7)),
    "empty": (lambda t: t[2:2], lambda x: x[2:2]),
}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", list(VIEWS))
def test_assign_through_a_view_writes_only_its_elements(device, name):
    """view.assign(v) writes v into the viewed elements of the buffer, in place, with one kernel over the view;
    the tensor the view was taken from reads the new values. Random data, numpy's in-place write as reference."""
    view, np_view = VIEWS[name]
    rng = np.random.default_rng(len(name))
    x = rng.standard_normal((5, 7)).astype(np.float32)
    a = Tensor(x, device=device).realize()
    buf = rt.buffer_of(a.uop)
    v = rng.standard_normal(np_view(x).shape).astype(np.float32)
    target = view(a)
    written = target.assign(Tensor(v, device=device))
    assert kernels_of(written) == (0 if v.size == 0 else 1)
    want = x.copy()
    np_view(want)[...] = v
    assert rt.buffer_of(a.uop) is buf
    np.testing.assert_array_equal(a.numpy(), want)
    np.testing.assert_array_equal(written.numpy(), v)  # the assigned view reads what was written


@pytest.mark.parametrize("device", DEVICES)
def test_assign_through_a_view_reading_the_buffer(device):
    """A value computed from the same buffer: in place when each element reads only itself, through a copy
    when it reads elements the kernel writes elsewhere (overlapping slices)."""
    x = np.arange(20, dtype=np.float32).reshape(4, 5)
    a = Tensor(x, device=device).realize()
    written = a[::3].assign(a[::3] * 2 + 1)
    assert kernels_of(written) == 1
    want = x.copy()
    want[::3] = want[::3] * 2 + 1
    np.testing.assert_array_equal(a.numpy(), want)
    a.T[1:4].assign(a.T[0:3]).realize()  # columns 1..3 get the old columns 0..2
    want.T[1:4] = want.T[0:3].copy()
    np.testing.assert_array_equal(a.numpy(), want)


@pytest.mark.parametrize("device", DEVICES)
def test_assign_through_a_view_after_pending_assigns(device):
    a = Tensor([1.0, 2.0, 3.0, 4.0], device=device).realize()
    a.assign(a * 10)  # pending: the slice is written after it
    a[1:3].assign(Tensor([-1.0, -2.0], device=device)).realize()
    assert a.tolist() == [10.0, -1.0, -2.0, 40.0]
    b = a[0:2].assign(a[2:4] + 1)
    c = b[1:2].assign(Tensor([7.0], device=device))  # a view of a pending view assign: b's runs first
    c.realize()
    assert a.tolist() == [-1.0, 7.0, -2.0, 40.0] and b.tolist() == [-1.0, 7.0] and c.tolist() == [7.0]


def test_assign_through_an_expanded_view_is_refused():
    a = Tensor([1.0, 2.0, 3.0]).realize()
    with pytest.raises(RuntimeError, match=r"assign: the target is an expanded view \(1, 3\) -> \(2, 3\)"):
        a.reshape(1, 3).expand(2, 3).assign(Tensor.ones(2, 3))


@pytest.mark.parametrize("device", DEVICES)
def test_assign_through_a_padded_view_skips_the_padding(device):
    """Elements the padding adds have no memory: their values are not written (a gated store)."""
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    a = Tensor(x, device=device).realize()
    v = np.arange(20, dtype=np.float32).reshape(4, 5) + 100
    a.pad(((1, 1), (2, 0))).assign(Tensor(v, device=device)).realize()
    np.testing.assert_array_equal(a.numpy(), v[1:3, 2:])


@pytest.mark.parametrize("when", ["lazy", "loss_realized", "assign_realized", "product_realized"])
def test_gradient_reaches_a_leaf_through_its_assign(when):
    # a leaf that requires grad, assigned a new value; the loss reads it. Whatever is realized before backward()
    # (the loss with the pending assign, the assign alone, an intermediate), the gradient is d(loss)/d(new value)
    rng = np.random.default_rng(0)
    new, g = rng.standard_normal(5).astype(np.float32), rng.standard_normal(5).astype(np.float32)
    w = Tensor(rng.standard_normal(5).astype(np.float32), requires_grad=True)
    w.assign(Tensor(new))
    prod = w * w
    if when == "product_realized":
        prod.realize()
    loss = (prod * Tensor(g)).sum()
    if when == "loss_realized":
        loss.realize()
    if when == "assign_realized":
        w.realize()
    loss.backward()
    assert w.grad is not None
    np.testing.assert_allclose(w.grad.numpy(), 2 * new * g, rtol=1e-6)
    np.testing.assert_allclose(w.numpy(), new)


def test_values_computed_before_a_write_keep_their_values():
    """torch computes at the call: a tensor made from a buffer before an in-place write holds the values of before,
    a view of the buffer shows the write, and a tensor made from the assign reads the new values."""
    a = Tensor(np.arange(4, dtype=np.float32)).realize()
    before = a * 10  # lazy, reads a's buffer
    view = a[1:]  # a view: sees the write, as torch's views share the storage
    a.assign(a + 100)
    after = a * 10  # made from the assign: the new values
    a.realize()
    np.testing.assert_array_equal(before.numpy(), np.arange(4) * 10)
    np.testing.assert_array_equal(view.numpy(), np.arange(1, 4) + 100)
    np.testing.assert_array_equal(after.numpy(), (np.arange(4) + 100) * 10)


@pytest.mark.flavor("torch")  # torch's training loop: no train mode needed to step
def test_model_output_read_after_the_optimizer_step_matches_torch():
    """The training-loop pattern: the logits of a step read (an accuracy, a running loss) after opt.step()."""
    import torch

    import unigrad

    def run(lib, nn, optim, F):
        rng = np.random.default_rng(0)
        x, y = lib.tensor(rng.standard_normal((8, 4)).astype(np.float32)), lib.tensor(rng.integers(0, 3, 8))
        m = nn.Linear(4, 3)
        with lib.no_grad():
            m.weight.copy_(lib.tensor(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)))
            m.bias.zero_()
        opt = optim.SGD(m.parameters(), lr=0.5)
        seen = []
        for _ in range(3):
            opt.zero_grad()
            out = m(x)
            F.cross_entropy(out, y).backward()
            opt.step()
            seen.append(out.square().sum().item())
        return seen

    ours = run(unigrad, unigrad.nn, unigrad.optim, unigrad.nn.functional)
    np.testing.assert_allclose(ours, run(torch, torch.nn, torch.optim, torch.nn.functional), rtol=1e-5)


def test_a_detached_value_keeps_its_values_too():
    a = Tensor(np.arange(3, dtype=np.float32)).realize()
    d = (a * 3).detach()  # Tensor(DETACH(...)): made by the constructor, not an op
    a.assign(a - 5).realize()
    np.testing.assert_array_equal(d.numpy(), np.arange(3) * 3)
