"""Random numbers from Threefry-2x32: reproducible, identical across devices, with the right distributions."""

import math

import numpy as np
import pytest

from unigrad import Tensor, dtypes


@pytest.fixture(autouse=True)
def seed():
    Tensor.manual_seed(1234)
    yield
    Tensor.training = False


def test_seed_reproduces_and_draws_advance():
    a, b = Tensor.rand(5).numpy(), Tensor.rand(5).numpy()
    assert not np.array_equal(a, b)  # the counter advances between draws
    Tensor.manual_seed(1234)
    np.testing.assert_array_equal(Tensor.rand(5).numpy(), a)
    Tensor.manual_seed(99)
    assert not np.array_equal(Tensor.rand(5).numpy(), a)


def test_cpu_and_python_devices_agree_bit_for_bit():
    cpu = Tensor.rand(4, 3).numpy()
    Tensor.manual_seed(1234)
    py = Tensor.rand(4, 3, device="PYTHON").numpy()
    np.testing.assert_array_equal(cpu, py)


@pytest.mark.parametrize("dtype", [dtypes.float32, dtypes.float64, dtypes.float16])
def test_rand_range_shape_dtype(dtype):
    t = Tensor.rand(7, 0, 3, dtype=dtype)
    assert t.shape == (7, 0, 3) and t.dtype is dtype
    u = Tensor.rand(20000, dtype=dtype).numpy().astype(np.float64)
    assert u.min() >= 0 and u.max() < 1
    assert abs(u.mean() - 0.5) < 0.01 and abs(u.var() - 1 / 12) < 0.01


def test_normal_moments():
    z = Tensor.randn(50000).numpy()
    assert abs(z.mean()) < 0.02 and abs(z.std() - 1) < 0.02
    n = Tensor.normal(20000, mean=3.0, std=0.5).numpy()
    assert abs(n.mean() - 3) < 0.02 and abs(n.std() - 0.5) < 0.02
    u = Tensor.uniform(20000, low=-2.0, high=4.0).numpy()
    assert u.min() >= -2 and u.max() < 4 and abs(u.mean() - 1) < 0.06


def test_randint_randperm():
    r = Tensor.randint(5000, low=-3, high=4).numpy()
    assert r.dtype == np.int64 and r.min() == -3 and r.max() == 3
    counts = np.bincount(r + 3)
    assert counts.min() > 550  # each of the 7 values near 5000/7
    p = Tensor.randperm(50).numpy()
    assert sorted(p.tolist()) == list(range(50)) and p.tolist() != list(range(50))
    with pytest.raises(RuntimeError, match="randint"):
        Tensor.randint(3, low=2, high=2)


def test_init_helpers_bounds():
    shape = (64, 32, 3, 3)
    fan_in, fan_out = 32 * 9, 64 * 9
    k = Tensor.kaiming_uniform(*shape, a=math.sqrt(5)).numpy()
    bound = math.sqrt(6 / ((1 + 5) * fan_in))
    assert np.abs(k).max() <= bound and np.abs(k).max() > 0.9 * bound
    g = Tensor.glorot_uniform(*shape).numpy()
    assert np.abs(g).max() <= math.sqrt(6 / (fan_in + fan_out))
    kn = Tensor.kaiming_normal(256, 128).numpy()
    assert abs(kn.std() - math.sqrt(2 / (1.0001 * 128))) < 0.01


def test_multinomial():
    w = Tensor([1.0, 0.0, 3.0])
    s = w.multinomial(4000, replacement=True).numpy()
    freq = np.bincount(s, minlength=3) / 4000
    assert freq[1] == 0 and abs(freq[0] - 0.25) < 0.03
    perm = Tensor([1.0, 2.0, 3.0, 4.0]).multinomial(4).numpy()
    assert sorted(perm.tolist()) == [0, 1, 2, 3]
    rows = Tensor([[0.0, 1.0], [1.0, 0.0]]).multinomial(3, replacement=True).numpy()
    assert rows.shape == (2, 3) and (rows[0] == 1).all() and (rows[1] == 0).all()
    with pytest.raises(RuntimeError, match="without replacement"):
        Tensor([1.0, 1.0]).multinomial(3)


def test_dropout():
    x = Tensor.ones(10000)
    np.testing.assert_array_equal(x.dropout(0.3).numpy(), x.numpy())  # not training: identity
    Tensor.training = True
    d = x.dropout(0.25).numpy()
    assert set(np.unique(d).tolist()) <= {0.0, float(np.float32(1 / 0.75))} and abs((d == 0).mean() - 0.25) < 0.02
    assert (x.dropout(1.0).numpy() == 0).all()
    with pytest.raises(ValueError):
        x.dropout(1.5)


def test_rand_like_and_grad_flag():
    t = Tensor.ones(2, 3, dtype=dtypes.float64)
    assert t.rand_like().dtype is dtypes.float64 and t.randn_like().shape == (2, 3)
    w = Tensor.uniform(3, 2, low=-1.0, high=1.0, requires_grad=True)
    (w * 2).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), np.full((3, 2), 2.0))
