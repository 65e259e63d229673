"""unigrad/api/reduce.py against PyTorch: any/all, var/std(+_mean), argmax/argmin, logsumexp and the scans
(cumsum, cumprod, cummax, cummin, logcumsumexp).

Reductions run over single, negative, tuple and None axes with and without keepdim, on a non-contiguous
(flipped + permuted) odd-sized input, on 0-d, 0-size and 1-element inputs. Scans also run on long axes (the
blocked two-level scan). Checks: shape and dtype equal PyTorch's, float32 values within atol 1e-6 / rtol 1e-3,
integers exact; bad axes raise IndexError like PyTorch. A few tiny cases run on the PYTHON device.
"""

import math

import numpy as np
import pytest
import torch

from unigrad import Tensor, dtypes

INF, NAN = math.inf, math.nan
pytestmark = pytest.mark.filterwarnings("ignore:.*degrees of freedom")  # torch warns where var divides by 0


def tname(t: torch.Tensor) -> str:
    return str(t.dtype).removeprefix("torch.")


def check(out: Tensor, ref: torch.Tensor, rtol: float = 1e-3, atol: float = 1e-6) -> None:
    """`out` has the shape, dtype (by name) and values (nan where nan) of the PyTorch result."""
    assert out.shape == tuple(ref.shape), f"shape {out.shape} != {tuple(ref.shape)}"
    assert out.dtype.name == tname(ref), f"dtype {out.dtype.name} != {tname(ref)}"
    if ref.dtype in (torch.bfloat16, torch.float16):
        got, want = out.cast(dtypes.float32).numpy(), ref.float().numpy()
    else:
        got, want = out.numpy(), ref.numpy()
    if want.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, want)


def noncontig(x: np.ndarray, device: str = "CPU") -> Tensor:
    """A tensor equal to x (3-d) built as a permuted view of a flipped buffer."""
    base = np.ascontiguousarray(np.flip(x.transpose(2, 0, 1), 1))
    return Tensor(base, device=device).flip(1).permute(1, 2, 0)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(0)


def halves(rng: np.random.Generator, shape) -> np.ndarray:
    """Multiples of 0.5 in [-2, 2]: ties are common (argmax picks the first, cummax the last)."""
    return (rng.integers(-4, 5, shape) / 2).astype(np.float32)


# ---------------------------------------------------------------- reductions

AXES = [None, 0, -1, 1, (0, 2), (-1, 0, 1)]
REDUCE = {
    "any": (lambda t, d, k: (t > 0.5).any(d, k), lambda x, d, k: _all_dims(torch.any, x > 0.5, d, k)),
    "all": (lambda t, d, k: (t > -1.5).all(d, k), lambda x, d, k: _all_dims(torch.all, x > -1.5, d, k)),
    "var": (lambda t, d, k: t.var(d, k), lambda x, d, k: torch.var(x, d, keepdim=k)),
    "std": (lambda t, d, k: t.std(d, k), lambda x, d, k: torch.std(x, d, keepdim=k)),
    "var0": (lambda t, d, k: t.var(d, k, correction=0), lambda x, d, k: torch.var(x, d, keepdim=k, correction=0)),
    "var_mean": (lambda t, d, k: t.var_mean(d, k), lambda x, d, k: torch.var_mean(x, d, keepdim=k)),
    "std_mean": (lambda t, d, k: t.std_mean(dim=d, keepdim=k), lambda x, d, k: torch.std_mean(x, d, keepdim=k)),
    "logsumexp": (lambda t, d, k: t.logsumexp(d, k), lambda x, d, k: torch.logsumexp(x, _dims(x, d), keepdim=k)),
}
ARG = {
    "argmax": (lambda t, d, k: t.argmax(d, k), lambda x, d, k: torch.argmax(x, d, keepdim=k)),
    "argmin": (lambda t, d, k: t.argmin(dim=d, keepdim=k), lambda x, d, k: torch.argmin(x, d, keepdim=k)),
}


def _dims(x: torch.Tensor, d):
    return tuple(range(x.ndim)) if d is None else d


def _all_dims(fn, x: torch.Tensor, d, k: bool) -> torch.Tensor:
    """torch.any/all take one int dim (or a tuple); None means every dim, keepdim keeps them as 1s."""
    if d is None:
        out = fn(x)
        return out.reshape((1,) * x.ndim) if k else out
    return fn(x, d, keepdim=k)


def check_result(out, ref) -> None:
    if isinstance(ref, tuple):
        assert isinstance(out, tuple) and len(out) == len(ref)
        for o, r in zip(out, ref):
            check(o, r)
    else:
        check(out, ref)


@pytest.mark.parametrize("name", list(REDUCE))
def test_reduce(name, rng):
    ours, ref = REDUCE[name]
    x = rng.uniform(-2, 2, (3, 5, 4)).astype(np.float32)
    t, tx = noncontig(x), torch.from_numpy(x)
    for i, d in enumerate(AXES):
        check_result(ours(t, d, i % 2 == 1), ref(tx, d, i % 2 == 1))
    for shape, d in [((), None), ((), 0), ((), -1), ((1,), 0), ((0,), None), ((2, 0, 3), 1), ((2, 0, 3), 2)]:
        y = rng.uniform(-2, 2, shape).astype(np.float32)
        for k in (False, True):
            check_result(ours(Tensor(y), d, k), ref(torch.from_numpy(y), d, k))


@pytest.mark.parametrize("name", list(ARG))
def test_arg(name, rng):
    ours, ref = ARG[name]
    x = halves(rng, (3, 5, 4))
    t, tx = noncontig(x), torch.from_numpy(x)
    for d in (None, 0, 1, -1):
        for k in (False, True):
            check(ours(t, d, k), ref(tx, d, k))
    xi = rng.integers(-3, 3, (6, 7)).astype(np.int32)
    check(ours(Tensor(xi), 1, False), ref(torch.from_numpy(xi), 1, False))
    xu = rng.integers(0, 3, (9,)).astype(np.uint8)
    check(ours(Tensor(xu), 0, False), ref(torch.from_numpy(xu), 0, False))
    e = np.array([[1.0, NAN, 3.0, NAN], [-INF, -INF, 0.0, INF], [2.0, 2.0, -1.0, -1.0]], dtype=np.float32)
    check(ours(Tensor(e), 1, False), ref(torch.from_numpy(e), 1, False))
    check(ours(Tensor(np.float32(2.5)), None, False), ref(torch.tensor(2.5), None, False))
    check(ours(Tensor(np.float32(2.5)), 0, True), ref(torch.tensor(2.5), 0, True))
    check(ours(Tensor(np.zeros((0, 3), np.float32)), 1, False), ref(torch.zeros(0, 3), 1, False))


def test_any_all_dtypes():
    x = np.array([[0.0, NAN, 0.0], [0.0, 0.0, 0.0], [1.0, -1.0, 2.0]], dtype=np.float32)
    for fn in ("any", "all"):
        check(getattr(Tensor(x), fn)(1), getattr(torch, fn)(torch.from_numpy(x), 1))
        u = np.array([0, 3, 1], dtype=np.uint8)
        check(getattr(Tensor(u), fn)(), getattr(torch, fn)(torch.from_numpy(u)))  # uint8 stays uint8
        check(getattr(Tensor([5, 0, 2]), fn)(), getattr(torch, fn)(torch.tensor([5, 0, 2])))
    check(Tensor.zeros(0).any(), torch.any(torch.zeros(0)))
    check(Tensor.zeros(0).all(), torch.all(torch.zeros(0)))


def test_var_corrections():
    x = torch.tensor([[1.0, 2.0, 4.0], [3.0, 3.0, 9.0]])
    t = Tensor(x.numpy())
    check(t.var(1, unbiased=False), torch.var(x, 1, unbiased=False))
    check(t.var(1, correction=2), torch.var(x, 1, correction=2))
    check(t.std(1, correction=0.5), torch.std(x, 1, correction=0.5))
    with pytest.warns(UserWarning):
        ref_inf, ref_nan = torch.var(x, 1, correction=5), torch.var(torch.tensor([3.0]))
    check(t.var(1, correction=5), ref_inf)  # N <= correction: ss / 0 = inf
    check(Tensor([3.0]).var(), ref_nan)  # one element, unbiased: 0 / 0 = nan
    check(Tensor(x.numpy()).cast("float16").var(0), x.half().var(0))
    check(Tensor(x.numpy()).cast("float64").std_mean(0)[0], torch.std_mean(x.double(), 0)[0])


def test_logsumexp_edges():
    e = np.array([[INF, 1.0], [-INF, -INF], [-INF, 2.0], [NAN, 1.0], [100.0, 100.0], [-100.0, -101.0]], np.float32)
    check(Tensor(e).logsumexp(1), torch.logsumexp(torch.from_numpy(e), 1))
    check(Tensor(e[:, :0].copy()).logsumexp(1), torch.logsumexp(torch.from_numpy(e[:, :0].copy()), 1))
    check(Tensor([1, 2, 3]).logsumexp(0), torch.logsumexp(torch.tensor([1, 2, 3]), 0))  # ints: float32


def test_reduce_errors():
    t = Tensor.ones(2, 3)
    for fn in (
        lambda: t.any(2),
        lambda: t.all(-3),
        lambda: t.var((0, 2)),
        lambda: t.argmax(2),
        lambda: t.argmin(-3),
        lambda: t.logsumexp(5),
        lambda: t.cumsum(2),
        lambda: t.cummax(-3),
        lambda: Tensor(1.0).cumsum(1),
        lambda: Tensor.zeros(0, 3).argmax(0),
        lambda: Tensor.zeros(0).argmax(),
    ):
        with pytest.raises(IndexError):
            fn()
    with pytest.raises(RuntimeError):
        Tensor([1, 2]).var()
    with pytest.raises(RuntimeError):
        Tensor([True, False]).argmax()
    with pytest.raises(NotImplementedError):
        Tensor([1, 2]).logcumsumexp(0)


# ---------------------------------------------------------------- scans

SCANS = {
    "cumsum": (lambda t, d: t.cumsum(d), lambda x, d: torch.cumsum(x, d)),
    "cumprod": (lambda t, d: t.cumprod(d), lambda x, d: torch.cumprod(x, d)),
    "cummax": (lambda t, d: t.cummax(d), lambda x, d: tuple(torch.cummax(x, d))),
    "cummin": (lambda t, d: t.cummin(dim=d), lambda x, d: tuple(torch.cummin(x, d))),
    "logcumsumexp": (lambda t, d: t.logcumsumexp(d), lambda x, d: torch.logcumsumexp(x, d)),
}


@pytest.mark.parametrize("name", list(SCANS))
def test_scan(name, rng):
    ours, ref = SCANS[name]
    x = halves(rng, (3, 5, 4)) * (0.5 if name == "cumprod" else 1)
    if name == "cumprod":
        x = x + 1  # factors in [0, 2]: products stay finite and exact
    t, tx = noncontig(x), torch.from_numpy(x)
    for d in (0, 1, -1):
        check_result(ours(t, d), ref(tx, d))
    for shape in [(), (0,), (1,), (2, 0, 3), (33,), (100,), (1111,)]:  # > 32: the blocked scan
        y = rng.uniform(0.9, 1.1, shape) if name == "cumprod" else rng.uniform(-2, 2, shape)
        y = y.astype(np.float32)
        d = min(1, len(shape) - 1) if shape else 0
        check_result(ours(Tensor(y), d), ref(torch.from_numpy(y), d))
    check_result(ours(Tensor(y).flip(0), -1), ref(torch.from_numpy(y).flip(0), -1))


@pytest.mark.parametrize("name", ["cumsum", "cumprod", "cummax", "cummin"])
@pytest.mark.parametrize("dtype", ["int32", "uint8", "bool", "float16", "float64"])
def test_scan_dtypes(name, dtype, rng):
    """cumsum/cumprod of ints and bools give int64, cummax/cummin keep the dtype, as PyTorch."""
    ours, ref = SCANS[name]
    x = rng.integers(0 if dtype in ("uint8", "bool") else -3, 3, (40,))
    if dtype == "bool":
        x = x > 0
    tx = torch.from_numpy(x).to(getattr(torch, dtype))
    check_result(ours(Tensor(x).cast(dtype), 0), ref(tx, 0))


def test_scan_edges():
    e = np.array([1.0, NAN, 3.0, 2.0, NAN, 5.0, 5.0], dtype=np.float32)
    check_result(Tensor(e).cummax(0), tuple(torch.cummax(torch.from_numpy(e), 0)))
    check_result(Tensor(e).cummin(0), tuple(torch.cummin(torch.from_numpy(e), 0)))
    check(Tensor(e).cumsum(0), torch.cumsum(torch.from_numpy(e), 0))
    f = np.array([-INF, 1.0, INF, 2.0, -INF, 80.0, 90.0, -200.0], dtype=np.float32)
    check(Tensor(f).logcumsumexp(0), torch.logcumsumexp(torch.from_numpy(f), 0))
    check(Tensor([3, 1, 2]).cumsum(0, dtype="float32"), torch.cumsum(torch.tensor([3, 1, 2]), 0, dtype=torch.float32))
    assert len(Tensor([1.0, 2.0]).cummax(0)) == 2  # (values, indices), as tinygrad's and torch's cummax


def test_spec_prefix_sum():
    """The spec's prefix_sum composition, written as the spec writes it (shrink_to spelled shrink), equals cumsum."""

    def prefix_sum(t: Tensor) -> Tensor:
        n = t.shape[0]
        x = t.pad(((n - 1, 0),))  # (2n-1,)
        x = x.reshape(1, 2 * n - 1).expand(n + 1, 2 * n - 1)  # tile
        x = x.reshape((n + 1) * (2 * n - 1)).shrink(((0, 2 * n * n),))  # trim
        x = x.reshape(n, 2 * n).shrink(((0, n), (0, n)))  # windows
        return x.sum(-1)  # reduce

    y = np.arange(1, 12, dtype=np.float32)
    check(prefix_sum(Tensor(y)), torch.cumsum(torch.from_numpy(y), 0))
    check(Tensor(y).cumsum(0), torch.cumsum(torch.from_numpy(y), 0))


GRAD = {
    "var_std": (lambda t: t.var(1) + t.std(0).sum() + t.std(), lambda t: t.var(1) + t.std(0).sum() + t.std()),
    "logsumexp": (lambda t: t.logsumexp(1), lambda t: t.logsumexp(1)),
    "cumsum_cumprod": (lambda t: t.cumsum(1) + t.cumprod(0).sum(0), lambda t: t.cumsum(1) + t.cumprod(0).sum(0)),
    "logcumsumexp": (lambda t: t.logcumsumexp(1), lambda t: t.logcumsumexp(1)),
    "cummax_cummin": (
        lambda t: t.cummax(1).values * t.cummin(0).values,
        lambda t: t.cummax(1).values * t.cummin(0).values,
    ),
}


@pytest.mark.parametrize("name", list(GRAD))
def test_gradient(name, rng):
    """d(sum(op(x)))/dx against PyTorch (atol 1e-4, rtol 1e-3); a constant row checks std's 0 gradient at var 0."""
    ours, ref = GRAD[name]
    x = rng.uniform(-2, 2, (4, 40)).astype(np.float32)
    if name == "var_std":
        x[2] = 0.5  # (cummax/cummin route a tie's gradient differently from PyTorch: no ties for them)
    t = Tensor(x.copy(), requires_grad=True)
    ours(t).sum().backward()
    tx = torch.tensor(x, requires_grad=True)
    ref(tx).sum().backward()
    assert t.grad is not None
    np.testing.assert_allclose(t.grad.numpy(), tx.grad.numpy(), rtol=1e-3, atol=1e-4)


def test_python_device():
    x = np.array([[0.5, -1.0, 2.0], [2.0, 0.0, -3.0]], dtype=np.float32)
    t, tx = Tensor(x, device="PYTHON"), torch.from_numpy(x)
    out = t.argmax(1)
    assert out.device == "PYTHON"
    check(out, torch.argmax(tx, 1))
    check(t.argmin(), torch.argmin(tx))
    check(t.var(0), torch.var(tx, 0))
    check(t.logsumexp(1), torch.logsumexp(tx, 1))
    check(t.any(1), torch.any(tx > 0, 1) | torch.any(tx < 0, 1))
    check(t.cumsum(1), torch.cumsum(tx, 1))
    check_result(t.cummax(1), tuple(torch.cummax(tx, 1)))
    check(t.logcumsumexp(0), torch.logcumsumexp(tx, 0))
    y = np.linspace(-1, 1, 40).astype(np.float32)
    # blocked scan; the running sum passes through 0 at the end: an absolute error of an ulp of the partial sums
    check(Tensor(y, device="PYTHON").cumsum(0), torch.cumsum(torch.from_numpy(y), 0), atol=1e-5)


@pytest.mark.parametrize("n", [131101, 1000003])  # primes: no divisor to split the reduce by
def test_long_prime_length_reduce_splits_with_padding(n):
    """A long reduce whose length has no divisor runs as two kernels over a copy padded with the op's identity
    (0 for sum, -inf for max): as accurate as a divisible length (a single accumulator drifted by ~1e-5)."""
    from unigrad.runtime import realize as rt

    x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    t = Tensor(x, requires_grad=True)
    before = rt.stats.kernels
    s = t.sum()
    np.testing.assert_allclose(s.numpy(), x.astype(np.float64).sum(), rtol=2e-6, atol=2e-3)
    assert rt.stats.kernels - before == 2
    assert t.max().numpy() == x.max() and t.min().numpy() == x.min()
    xi = np.random.default_rng(1).integers(-1000, 1000, n).astype(np.int32)
    assert Tensor(xi).max().numpy() == xi.max() and Tensor(xi).sum().numpy() == xi.sum()
    (s + t.max() * 2).backward()
    want = np.ones(n, np.float32)
    want[np.argmax(x)] += 2
    np.testing.assert_array_equal(t.grad.numpy(), want)
    rows = np.random.default_rng(3).standard_normal((3, n)).astype(np.float32)
    np.testing.assert_allclose(Tensor(rows).sum(1).numpy(), rows.astype(np.float64).sum(1), rtol=2e-6, atol=2e-3)


@pytest.mark.parametrize("shape", [(1000, 1000), (5**8,), (3, 390625), (2, 3, 5**7)])
def test_long_reduce_with_odd_factors_is_accurate(shape):
    """A long reduce whose length has few factors of two (1000 x 1000 = 2^6 * 5^6) is split into parts whose share
    is a multiple of 32, so each part's sum has split accumulators: as accurate as a power-of-two length (64 parts
    of 15625 were one chain of 15625 adds each: 1e-3 relative error)."""
    # runs of 125 equal values (as a broadcast view sums them): rounding errors that add up instead of cancelling
    x = np.repeat(np.random.default_rng(7).standard_normal(math.prod(shape) // 125), 125).astype(np.float32)
    x = x.reshape(shape)
    n_out = shape[0] if len(shape) == 2 and shape[0] == 3 else 1
    got = Tensor(x).reshape(n_out, -1).sum(1).numpy()
    exact = x.astype(np.float64).reshape(n_out, -1).sum(1)
    bound = 2e-7 * np.abs(x.astype(np.float64)).reshape(n_out, -1).sum(1)  # of the summed magnitudes
    assert np.all(np.abs(got - exact) <= bound), (got, exact, bound)


@pytest.mark.parametrize("n", [1, 7, 1000, 131101])
def test_half_sum_accumulates_in_float32(n):
    """float16/bfloat16 sums accumulate in float32 and round once, as torch: the result is the half value nearest
    to the exact sum (a float16 accumulator was off by ulps at n = 1000; torch's bfloat16 sum at n = 131101 is)."""
    x = (np.random.default_rng(n).standard_normal(n) * 3).astype(np.float16)
    out = Tensor(x).sum()
    assert out.dtype is dtypes.float16
    exact = torch.tensor(x).double().sum()
    assert out.numpy() == exact.to(torch.float16).numpy()
    xb = torch.tensor(x.astype(np.float32)).to(torch.bfloat16)
    got = Tensor(xb.float().numpy()).cast(dtypes.bfloat16).sum()
    assert got.dtype is dtypes.bfloat16
    assert got.cast(dtypes.float32).numpy() == xb.double().sum().to(torch.bfloat16).float().numpy()
    t = Tensor(x, requires_grad=True)
    t.sum().backward()
    assert t.grad.dtype is dtypes.float16 and (t.grad.numpy() == 1).all()


def test_reduce_dims_are_checked_as_torch():
    """A dim given twice is refused (torch: 'dim 0 appears multiple times'); a float dim is a TypeError naming
    the op; numpy ints are ints."""
    x = Tensor.ones(2, 3)
    with pytest.raises(RuntimeError, match=r"sum: dim 0 appears multiple times in the list of dims \(0, -2\)"):
        x.sum((0, -2))
    with pytest.raises(RuntimeError, match="logsumexp: dim 1 appears multiple times"):
        x.logsumexp((1, 1))
    with pytest.raises(TypeError, match="mean: a dimension must be an int, got 1.5"):
        x.mean(1.5)
    np.testing.assert_array_equal(x.sum(np.int64(1)).numpy(), [3.0, 3.0])
