"""A Python scalar that changes between realizes becomes a kernel argument (issue 34, runtime/realize.py
lift_varying_constants): a loop over values compiles at most two kernels (the first value's, then the one taking
the value as an argument), with the same results as numpy. Counted with stats.programs, never timed."""

from __future__ import annotations

import numpy as np

from unigrad import Tensor
from unigrad.runtime import realize as rt


def test_loop_over_a_python_int_compiles_at_most_two_kernels():
    x = Tensor.rand(16, 16).realize()
    xn = x.numpy()
    before = rt.stats.programs
    for i in range(40):
        got = ((x + i) * 2).relu().sum().numpy()
        np.testing.assert_allclose(got, np.maximum((xn + i) * 2, 0).sum(), rtol=1e-5)
    assert rt.stats.programs - before <= 2


def test_varying_float_scalars_and_constants_that_stay():
    x = Tensor(np.linspace(-2, 2, 64, dtype=np.float32)).realize()
    xn = x.numpy()
    before = rt.stats.programs
    for step in range(1, 30):
        lr = 0.1 / step  # varies: an argument; 3.0 never varies: stays a constant
        got = (x * lr + 3.0).exp().sum().numpy()
        np.testing.assert_allclose(got, np.exp(xn * np.float32(lr) + 3).sum(), rtol=1e-5)
    assert rt.stats.programs - before <= 2


def test_a_value_equal_to_another_constant_keeps_the_structure():
    """x + i with i == 2 beside * 2: hash-consing shares the two constants, the structure is still the loop's."""
    x = Tensor(np.arange(8, dtype=np.float32)).realize()
    before = rt.stats.programs
    for i in (5, 7, 2, 0, 1, 2.0, 9):
        np.testing.assert_allclose(((x + i) * 2).numpy(), (np.arange(8) + i) * 2)
    assert rt.stats.programs - before <= 2


def test_exponents_and_16_bit_scalars_stay_constants():
    """A POW's exponent decides its lowering (x**0.5 is torch's sqrt: (-0)**0.5 = -0, 1/that = -inf; x**2 is x*x),
    and a bfloat16 scalar is stored as bits: both stay constants when they vary, so results stay torch's."""
    import torch

    x = Tensor([-0.0, 0.0, 4.0, 2.25])
    for e in (2.0, 0.5, -0.5, 3.0, 0.5):
        got = (1 / x**e).numpy()
        want = (1 / torch.tensor([-0.0, 0.0, 4.0, 2.25]) ** e).numpy()
        np.testing.assert_array_equal(got, want)
    b = Tensor([1.0, 2.5, -3.0]).cast("bfloat16")
    for v in (1.5, 0.25, 7.0):
        got = (v + b).float().numpy()
        want = (v + torch.tensor([1.0, 2.5, -3.0]).bfloat16()).float().numpy()
        np.testing.assert_array_equal(got, want)


def test_values_around_composite_calls_are_lifted_and_the_calls_kept():
    """tanh and sigmoid are calls of fixed bodies (function.call1: traced from the Tensor's kind alone): the constants
    inside them never vary, so the structure remembered for varying values keeps the calls (an unrolled LSTMCell's
    2000 of them, inlined, made it three times its schedule's graph), while the values around them are lifted."""
    from unigrad.ir.ops import Ops

    x = Tensor(np.linspace(-3, 3, 40, dtype=np.float32).reshape(8, 5)).realize()
    xn = x.numpy().astype(np.float64)
    before = rt.stats.programs
    for i in range(12):
        got = ((x + i * 0.5).tanh() * (2 + i)).sigmoid().sum().numpy()
        want = (1 / (1 + np.exp(-np.tanh(xn + i * 0.5) * (2 + i)))).sum()
        np.testing.assert_allclose(got, want, rtol=1e-5)
    assert rt.stats.programs - before <= 4  # the first value's kernels, then the lifted ones
    kept = [k for k in rt._constants_seen if any(u.op is Ops.FUNCTION for u in k.toposort())]
    assert kept, "the remembered structure keeps the composite calls"
