"""Symbolic shapes as tinygrad programs use them: a bound Variable's value is what a slice, shrink or pad is
checked against; commuted sums are one size; a bound Variable is a tensor operand; arange, triu/tril and chunk
take Variable sizes; assign takes numpy data."""

import numpy as np
import pytest

from unigrad import Tensor, Variable


@pytest.mark.parametrize("val", [1, 3, 5])
def test_slice_and_shrink_checked_for_the_bound_value(val):
    a = np.arange(5, dtype=np.float32)
    k = Variable("k", 1, 10).bind(val)  # the range passes the size 5: the bound value decides
    out = Tensor(a)[:k]
    assert out.shape == (k,)
    np.testing.assert_array_equal(out.numpy(), a[:val])
    np.testing.assert_array_equal(Tensor(a).shrink(((0, k),)).numpy(), a[:val])
    with pytest.raises((IndexError, RuntimeError)):
        Tensor(a)[: Variable("k", 1, 10).bind(7)]


def test_commuted_sizes_are_one_size():
    i, j = Variable("i", 1, 10).bind(2), Variable("j", 1, 10).bind(3)
    t = Tensor.ones(i + j).reshape(j + i)
    assert t.numpy().shape == (5,)


@pytest.mark.parametrize("val", [1, 4])
def test_bound_variable_operand(val):
    v = Variable("v", 1, 10).bind(val)
    a = np.array([1.5, -2.0, 3.0], dtype=np.float32)
    np.testing.assert_allclose((Tensor(a) * v).numpy(), a * val)
    np.testing.assert_allclose((v * Tensor(a)).numpy(), a * val)
    np.testing.assert_allclose((v + Tensor(a)).numpy(), a + val)
    np.testing.assert_allclose((Tensor(a) - v).numpy(), a - val)


@pytest.mark.parametrize("val", [1, 3, 6])
def test_arange_triu_tril_chunk_with_variables(val):
    n = Variable("n", 1, 8).bind(val)
    np.testing.assert_array_equal(Tensor.arange(n).numpy(), np.arange(val))
    np.testing.assert_array_equal(Tensor.arange(2, n + 2).numpy(), np.arange(2, val + 2))
    a = np.arange(1, 3 * 8 + 1, dtype=np.float32).reshape(3, 8)
    x = Tensor(a)[:, :n]
    np.testing.assert_array_equal(x.triu().numpy(), np.triu(a[:, :val]))
    np.testing.assert_array_equal(x.tril(1).numpy(), np.tril(a[:, :val], 1))
    parts = Tensor(a.T)[:n].chunk(2, dim=1)
    for p, ref in zip(parts, np.array_split(a.T[:val], 2, axis=1)):
        np.testing.assert_array_equal(p.numpy(), ref)
    np.testing.assert_array_equal(
        Tensor.ones(3).pad(((0, Variable("p", 0, 9).bind(val)),)).numpy(), np.pad(np.ones(3), (0, val))
    )


@pytest.mark.parametrize("shape", [(0,), (1,), (3, 5)])
def test_assign_numpy(shape):
    t = Tensor.zeros(*shape).contiguous().realize()
    a = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    np.testing.assert_array_equal(t.assign(a).numpy(), a)
    np.testing.assert_array_equal(t.assign(a.astype(np.float64) * 2).numpy(), a * 2)
