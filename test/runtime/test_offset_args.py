"""A view offset that changes between realizes becomes a bound Variable (issue 34, runtime/realize.py
lift_varying_constants): `data[i].item()`, `x[i:i+8]`, `x[:, i]`, `y[i] = v` and their gradients over many Python ints
compile at most two programs per structure (the first index's, then the one taking the offset as an argument), with
numpy's values, and the same bits as the kernels that keep the offset a constant. Counted with stats.programs, never
timed."""

from __future__ import annotations

import numpy as np
import pytest

from unigrad import Tensor, Variable
from unigrad.runtime import realize as rt

# the first and last rows, negative ones, and the rest in a scattered order
INDICES = [0, -1, 999, -1000, 1, 998, -2, -999, *range(3, 997, 7), *range(-5, -900, -31)]


def _programs(f):
    before = rt.stats.programs
    f()
    return rt.stats.programs - before


def test_item_over_many_indices_compiles_at_most_two_programs():
    dn = np.random.default_rng(0).standard_normal(1000).astype(np.float32)
    data = Tensor(dn).realize()
    assert len(set(INDICES)) > 150

    def loop():
        for i in INDICES:
            assert data[i].item() == dn[i], i

    assert _programs(loop) <= 2


@pytest.mark.parametrize(
    "name, index, n",
    [
        ("x[i]", lambda i: (i,), 64),
        ("x[-i-1]", lambda i: (-i - 1,), 64),
        ("x[i:i+8]", lambda i: (slice(i, i + 8),), 57),
        ("x[i:i+8:2]", lambda i: (slice(i, i + 8, 2),), 57),
        ("x[:, i]", lambda i: (slice(None), i % 16), 16),
        ("x[i, j]", lambda i: (i, (7 * i) % 16), 64),
        ("x[i, j:j+4]", lambda i: (i, slice(i % 13, i % 13 + 4)), 64),
    ],
)
def test_slices_with_varying_starts(name, index, n):
    xn = np.random.default_rng(1).standard_normal((64, 16)).astype(np.float32)
    x = Tensor(xn).realize()

    def loop():
        for i in range(n):
            np.testing.assert_array_equal(x[index(i)].numpy(), xn[index(i)], err_msg=f"{name} i={i}")

    assert _programs(loop) <= 2, name


def test_two_indices_in_one_graph_and_a_computed_source():
    """x[i] + x[j] (two offsets, one Variable each) and an index into a computed tensor (the offset in a fused
    kernel's index math)."""
    xn = np.random.default_rng(2).standard_normal((64, 16)).astype(np.float32)
    x = Tensor(xn).realize()

    def loop():
        for i in range(0, 60, 2):  # x[60:64] and on are shorter: another structure
            j = (5 * i + 3) % 64
            np.testing.assert_array_equal((x[i] + x[j]).numpy(), xn[i] + xn[j])
            np.testing.assert_allclose((x * 2).exp()[i : i + 4].sum(1).numpy(), np.exp(xn * 2)[i : i + 4].sum(1), 1e-5)

    assert _programs(loop) <= 4


def test_lifted_offsets_give_the_bits_of_constant_offsets(monkeypatch):
    """The same results, bit for bit, whether the offset is a kernel argument or a constant (lifting switched off:
    a kernel per index)."""
    rng = np.random.default_rng(3)
    x, y = Tensor(rng.standard_normal((40, 24)).astype(np.float32)).realize(), Tensor(rng.standard_normal(24)).realize()

    def f(i: int) -> np.ndarray:
        return (((x * 1.7).exp() + y)[i : i + 5].sum(1) * x[-i - 1, 3]).numpy()

    f(0), f(1)  # the structure seen twice: the offsets are arguments from now on
    indices = [2, 17, 35, 20]
    lifted = [f(i) for i in indices]
    monkeypatch.setattr(rt, "lift_varying_constants", lambda fn, device, offsets=True: fn)
    for i, got in zip(indices, lifted, strict=True):
        np.testing.assert_array_equal(got, f(i), err_msg=f"i={i}")


def test_gradients_through_indexing():
    rng = np.random.default_rng(4)
    wn = rng.standard_normal((32, 8)).astype(np.float32)
    w = Tensor(wn, requires_grad=True)
    c = np.arange(8, dtype=np.float32)

    def loop():
        for i in [*range(0, 29, 3), -1, -32]:
            w.grad = None
            ((w[i] * Tensor(c)).sum() + (w[i % 29 : i % 29 + 3] ** 2).sum()).backward()
            want = np.zeros_like(wn)
            want[i] += c
            want[i % 29 : i % 29 + 3] += 2 * wn[i % 29 : i % 29 + 3]
            np.testing.assert_allclose(w.grad.numpy(), want, rtol=1e-6, err_msg=f"i={i}")

    assert _programs(loop) <= 6


def test_setitem_in_a_loop():
    y = Tensor.zeros(64, 16).contiguous().realize()
    want = np.zeros((64, 16), np.float32)

    def loop():
        for i in [*range(0, 64, 3), -1, -64]:
            y[i] = float(i)
            want[i] = i
            y.realize()

    assert _programs(loop) <= 3
    np.testing.assert_array_equal(y.numpy(), want)


def test_batches_of_samples():
    """A DataLoader's batch: stack(x[i] for i in a shuffled batch); every batch after the second is a cache hit."""
    rng = np.random.default_rng(5)
    xn = rng.standard_normal((300, 4)).astype(np.float32)
    x = Tensor(xn).realize()
    batches = [rng.permutation(300)[:16] for _ in range(6)]
    Tensor.stack(*[x[int(i)] for i in batches[0]]).numpy()
    Tensor.stack(*[x[int(i)] for i in batches[1]]).numpy()

    def loop():
        for b in batches[2:]:
            np.testing.assert_array_equal(Tensor.stack(*[x[int(i)] for i in b]).numpy(), xn[b])

    assert _programs(loop) == 0


def test_with_a_symbolic_size():
    """A user's Variable (a size) beside lifted offsets: both are kernel arguments, under their own names."""
    xn = np.arange(64, dtype=np.float32)
    x = Tensor(xn).realize()
    n = Variable("n", 1, 32)
    for k, i in [(4, 3), (9, 40), (20, 0), (4, 63), (31, 17)]:
        got = (x[: n.bind(k)].sum() + x[i]).item()
        assert got == xn[:k].sum() + xn[i], (k, i)


def test_offsets_and_values_varying_together():
    """x[i] * s: the offset a Variable, the scale a one-element buffer; a use that starts varying later (s from the
    tenth call on) costs one more schedule, then every call hits."""
    xn = np.random.default_rng(6).standard_normal((50, 8)).astype(np.float32)
    x = Tensor(xn).realize()

    def loop():
        for k in range(40):
            i, s = (7 * k) % 50, 1.5 if k < 10 else 0.25 * k
            np.testing.assert_array_equal((x[i] * s).numpy(), xn[i] * np.float32(s), err_msg=f"k={k}")

    assert _programs(loop) <= 3
