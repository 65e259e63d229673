"""Edge cases of issue 30 against PyTorch, forward and backward, on the compiled (CPU) and interpreted (PYTHON)
devices: zero gradients that must be zeros (not None or an error), pow's gradients at zero and negative bases,
acosh/atanh gradients outside their domains, sigmoid at large |x|, sin/cos/tan over the whole float range, deferred
data checks that belong to the tensors computed from the bad op, max_unpool of inf, half-precision matmul."""

import gc
import importlib
import warnings

import numpy as np
import pytest
import torch

from unigrad import Tensor, dtypes

DEVICES = ("CPU", "PYTHON")
SHAPES = [(0,), (1,), (7,), (2, 3)]
ut = importlib.import_module("unigrad.tensor")


def values(shape, rng, special=True) -> np.ndarray:
    """Random float32 values of `shape` with 0, -0, negatives and integer/fractional values mixed in."""
    x = rng.choice([0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5, 3.0, -3.5, 2.5], size=shape) if special else None
    r = rng.uniform(-3, 3, size=shape)
    return np.where(rng.random(shape) < 0.5, x, r).astype(np.float32) if special else r.astype(np.float32)


def compare(fn_ours, fn_torch, arrays, device, rtol=1e-5, atol=1e-6):
    """Forward and the gradient of sum(out * g) w.r.t. every input, as torch gives them (nan where torch's is)."""
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    us = [Tensor(a, device=device, requires_grad=True) for a in arrays]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out_t = fn_torch(*ts)
        g = np.random.default_rng(1).uniform(0.5, 1.5, out_t.shape).astype(np.float32)
        (out_t * torch.tensor(g)).sum().backward()
    out_u = fn_ours(*us)
    (out_u * Tensor(g, device=device)).sum().backward()
    np.testing.assert_allclose(out_u.numpy(), out_t.detach().numpy(), rtol=rtol, atol=atol, equal_nan=True)
    for t, u in zip(ts, us):
        want = t.grad.numpy() if t.grad is not None else np.zeros(t.shape, np.float32)
        assert u.grad is not None, "a leaf torch gives a gradient got none"
        np.testing.assert_allclose(u.grad.numpy(), want, rtol=rtol, atol=atol, equal_nan=True)


# ---------------------------------------------------------------- 1. zero gradients and pow's special points


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize(
    "name,ours,ref",
    [
        ("x**0.0", lambda x: x**0.0, lambda x: x**0.0),
        ("1.0**x", lambda x: 1.0**x, lambda x: 1.0**x),
        ("sign", lambda x: x.sign(), lambda x: x.sign()),
        ("copysign(1, x)", lambda x: Tensor.ones(*x.shape, device=x.device).copysign(x), None),
    ],
)
def test_zero_gradients_are_zeros(name, ours, ref, shape, device):
    x = values(shape, np.random.default_rng(0))
    if ref is None:
        ref = lambda t: torch.ones(t.shape).copysign(t)  # noqa: E731
    compare(ours, ref, [x], device)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", SHAPES)
def test_copysign_gradients(shape, device):
    rng = np.random.default_rng(2)
    compare(lambda a, b: a.copysign(b), torch.copysign, [values(shape, rng), values(shape, rng)], device)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(
    "shapes,dim",
    [([(0, 3), (2, 3), (1, 3)], 0), ([(2, 3), (0, 3)], 0), ([(2, 0), (2, 5), (2, 1)], 1), ([(0,), (0,)], 0)],
)
def test_cat_of_zero_size_pieces(shapes, dim, device):
    rng = np.random.default_rng(3)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    compare(lambda *xs: xs[0].cat(*xs[1:], dim=dim), lambda *ts: torch.cat(ts, dim), arrays, device)


POW_BASES = np.array([0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5, 3.0, -3.5], np.float32)
POW_EXPONENTS = np.array([0.0, -0.0, 1.0, 2.0, 3.0, -1.0, -2.0, 0.5, -0.5, -1.5, 2.5], np.float32)


@pytest.mark.parametrize("device", DEVICES)
def test_pow_tensor_tensor_gradients(device):
    a, b = np.meshgrid(POW_BASES, POW_EXPONENTS)
    compare(lambda x, y: x**y, torch.pow, [a.ravel(), b.ravel()], device)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("e", [0.0, 1.0, 2.0, 3, -1.0, -2, 0.5, -0.5, -1.5, 2.5, 7.0])
def test_pow_scalar_exponent_gradients(e, device):
    compare(lambda x: x**e, lambda t: t**e, [POW_BASES], device)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("base", [0.0, -2.0, 2.0, 1.0, -0.5, 10.0])
def test_pow_scalar_base_gradients(base, device):
    compare(lambda x: base**x, lambda t: base**t, [POW_EXPONENTS], device)


def test_pow_sizes_and_dtypes():
    rng = np.random.default_rng(4)
    for shape in SHAPES:
        compare(lambda x, y: x**y, torch.pow, [values(shape, rng), values(shape, rng)], "CPU")
    x = rng.uniform(0.5, 2, (5,))  # float64: the decomposition in float64
    np.testing.assert_allclose((Tensor(x) ** 2.5).numpy(), x**2.5, rtol=1e-12)
    h = Tensor(x.astype(np.float16))  # float16: computed in float32, rounded once
    np.testing.assert_array_equal((h**3).numpy(), (torch.tensor(x.astype(np.float16)) ** 3).numpy())


# ---------------------------------------------------------------- 2. acosh/atanh gradients, sigmoid


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", ["acosh", "atanh", "asinh"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_inverse_hyperbolic_gradients_everywhere(name, dtype, device):
    """Random normal inputs (half of them outside acosh's domain, a third outside atanh's) and the edges."""
    n = 200 if device == "CPU" else 40
    x = np.concatenate([np.random.default_rng(5).standard_normal(n) * 2, [1.0, -1.0, 0.0, 1e10, -1e10, np.nan]])
    compare(lambda t: getattr(t, name)(), lambda t: getattr(t, name)(), [x.astype(dtype)], device, rtol=2e-5)


@pytest.mark.parametrize("device", DEVICES)
def test_handwritten_sigmoid_matches_torch(device):
    """x.exp()/(1+x.exp()): nan where exp overflows (as torch), the gradient 0 (not 1) at 88 where e/(1+e) is 1."""
    v = np.array([0.0, 5.0, 88.0, 89.0, 300.0, -300.0, -100.0], np.float32)
    compare(lambda x: x.exp() / (1 + x.exp()), lambda t: t.exp() / (1 + t.exp()), [v], device, atol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
def test_sigmoid_exact_at_large_magnitudes(device):
    n = 20001 if device == "CPU" else 401
    x = np.linspace(-104, 100, n).astype(np.float32)
    ref = torch.tensor(x.astype(np.float64)).sigmoid().numpy()
    t = Tensor(x, device=device, requires_grad=True)
    y = t.sigmoid()
    y.sum().backward()
    got = y.numpy().astype(np.float64)
    normal = ref > 1.2e-38  # float32 normals: relative accuracy
    assert np.max(np.abs(got[normal] - ref[normal]) / ref[normal]) < 4e-7
    assert np.max(np.abs(got - ref)) < 1.2e-7  # an ulp of 1
    e = np.exp(-np.abs(x.astype(np.float64)))
    exact = e / (1 + e) ** 2
    normal = exact > 1.2e-38
    assert np.max(np.abs(t.grad.numpy() - exact)[normal] / exact[normal]) < 1e-6
    compare(lambda a: a.sigmoid(), torch.sigmoid, [x[:: max(1, n // 64)]], device, atol=1e-7)
    for dt in ("float16", "bfloat16", "float64"):  # 16-bit: computed in float32, rounded once
        v = np.array([-100, -20, -5, 0, 5, 20, 100], np.float32)
        ours = Tensor(v, device=device).cast(dt).sigmoid().cast("float32").numpy()
        theirs = torch.tensor(v).to(getattr(torch, dt)).sigmoid().float().numpy()
        np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-30)


# ---------------------------------------------------------------- 3. sin/cos/tan over the whole range


def ulps(got: np.ndarray, ref: np.ndarray, dt) -> float:
    return float(np.max(np.abs(got.astype(np.float64) - ref) / np.spacing(np.abs(ref).astype(dt)).astype(np.float64)))


def log_uniform(rng, lo, hi, n, dt):
    return (np.exp(rng.uniform(np.log(lo), np.log(hi), n)) * rng.choice([-1, 1], n)).astype(dt)


@pytest.mark.parametrize("name,max_ulps", [("sin", 3.5), ("cos", 3.5), ("tan", 6.0)])
@pytest.mark.parametrize("lo,hi", [(1e-3, 4.0), (1e4, 2e5), (2e5, 1e8), (1e8, 1e20), (1e20, 3.4e38)])
def test_trig_float32_whole_range(name, max_ulps, lo, hi):
    x = log_uniform(np.random.default_rng(6), lo, hi, 20000, np.float32)
    got = getattr(Tensor(x), name)().numpy()
    ref = getattr(np, name)(x.astype(np.float64))  # libm's double: exact reduction, correctly rounded to float32
    assert ulps(got, ref, np.float32) <= max_ulps
    if name != "tan":
        assert np.max(np.abs(got - ref)) < 2e-7
    t = getattr(torch, name)(torch.tensor(x)).numpy()
    np.testing.assert_allclose(got, t, rtol=2e-6, atol=2e-7)


@pytest.mark.parametrize("name,max_ulps", [("sin", 2.5), ("cos", 2.5), ("tan", 4.0)])
@pytest.mark.parametrize("lo,hi", [(1e-3, 4.0), (1e7, 1e9), (1e9, 1e30), (1e30, 1.7e308)])
def test_trig_float64_whole_range(name, max_ulps, lo, hi):
    x = log_uniform(np.random.default_rng(7), lo, hi, 4000, np.float64)
    got = getattr(Tensor(x), name)().numpy()
    assert ulps(got, getattr(np, name)(x), np.float64) <= max_ulps


def test_trig_nearest_to_multiples_of_pi_over_2():
    """The double closest to a multiple of pi/2 (6381956970095103 * 2^797, r ~ 2^-61 of a quarter turn) and float32
    inputs next to multiples of pi/2: the reduction keeps r's relative precision."""
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.prec = 600
    x = np.array([6381956970095103 * 2.0**797, -6381956970095103 * 2.0**797])
    for name in ("sin", "cos", "tan"):
        ref = np.array([float(getattr(mpmath, name)(mpmath.mpf(float(v)))) for v in x])  # libm's cos: 8 ulp off
        assert ulps(getattr(Tensor(x), name)().numpy(), ref, np.float64) <= 1
    f = np.array([1.5707964, 3.1415927, 4.712389, 1.5707963e4, 1.5707963e7, 13176794.0], np.float32)
    for name in ("sin", "cos", "tan"):
        assert ulps(getattr(Tensor(f), name)().numpy(), getattr(np, name)(f.astype(np.float64)), np.float32) <= 4


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_trig_same_bits_on_both_devices(dt):
    rng = np.random.default_rng(8)
    x = np.concatenate([rng.uniform(-4, 4, 40), log_uniform(rng, 1e4, 3e38, 120, np.float64)])
    x = np.concatenate([x, [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40]]).astype(dt)
    for name in ("sin", "cos", "tan"):
        a = getattr(Tensor(x, device="CPU"), name)().numpy()
        b = getattr(Tensor(x, device="PYTHON"), name)().numpy()
        np.testing.assert_array_equal(a.view(f"u{a.itemsize}"), b.view(f"u{b.itemsize}"))
    special = Tensor(np.array([0.0, -0.0, np.inf, -np.inf, np.nan], dt))
    np.testing.assert_array_equal(special.sin().numpy(), [0.0, -0.0, np.nan, np.nan, np.nan])
    assert np.signbit(special.sin().numpy()[1]) and np.signbit(special.tan().numpy()[1])
    np.testing.assert_array_equal(special.cos().numpy(), [1.0, 1.0, np.nan, np.nan, np.nan])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", SHAPES)
def test_trig_gradients_at_large_arguments(shape, device):
    x = log_uniform(np.random.default_rng(9), 1e3, 1e6, int(np.prod(shape)), np.float32).reshape(shape)
    for name in ("sin", "cos", "tan"):
        compare(lambda t: getattr(t, name)(), lambda t: getattr(t, name)(), [x], device, rtol=1e-4, atol=2e-6)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
def test_trig_half_precision(dt, device):
    """Values and gradients as torch's (computed in float32, rounded once): the gradient's cos(x) = sin(x + pi/2)
    does not round x + pi/2 to 16 bits."""
    x = np.array([1e4, 6e4, -3e4, 1.0, 0.0, 1234.5, 1000.5, 200.25], np.float32)
    for name in ("sin", "cos", "tan"):
        t = Tensor(x, device=device).cast(dt).detach().requires_grad_()
        out = getattr(t, name)()
        out.sum().backward()
        tt = torch.tensor(x).to(getattr(torch, dt)).requires_grad_()
        ref = getattr(tt, name)()
        ref.sum().backward()
        np.testing.assert_allclose(out.cast("float32").numpy(), ref.float().detach().numpy(), rtol=1e-2, atol=1e-3)
        if name != "tan":  # tan's gradient: torch 1 + tan^2 rounded in 16 bits, ours the quotient rule's
            np.testing.assert_array_equal(t.grad.cast("float32").numpy(), tt.grad.float().numpy())


# ---------------------------------------------------------------- 4. deferred data checks


def test_division_check_is_not_raised_by_an_unrelated_realize():
    q = Tensor([1, 2]) // Tensor([0, 1])
    x, y = Tensor([1.0, 2.0]), Tensor([3.0, 4.0])
    assert x.dot(y).item() == 11.0  # an independent computation: no error
    with pytest.raises(RuntimeError, match=r"ZeroDivisionError \(1 integer division"):
        q.numpy()


def test_division_check_raised_by_what_is_computed_from_the_result():
    q = Tensor([5, 6, 7]) % Tensor([0, 2, 0])
    r = (q + 1) * 2
    with pytest.raises(RuntimeError, match=r"remainder: ZeroDivisionError \(2 integer"):
        r.numpy()
    assert r.tolist() == [2, 2, 2]  # computed with the check, reported once


def test_division_check_of_freed_tensors_is_dropped():
    n = len(ut._checks)
    Tensor([1, 2]) // Tensor([0, 1])  # never read, freed
    q = Tensor([3, 4]) // Tensor([1, 0])
    del q
    gc.collect()
    assert (Tensor([1.0]) + 1).item() == 2.0
    assert len(ut._checks) <= n


def test_division_check_follows_kernelize_and_not_the_divisor():
    b = Tensor([0, 1]) + 0  # a computed divisor
    q = Tensor([1, 2]) // b
    assert b.tolist() == [0, 1]  # the divisor itself: not computed from the division
    q.kernelize()
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        (q * 3).numpy()


def test_index_check_belongs_to_the_gather_result():
    x = Tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    out = x.gather(1, Tensor([[0, 5], [1, 2]]))
    assert (Tensor([2.0]) * 3).item() == 6.0
    with pytest.raises(RuntimeError, match="gather: index 5 is out of bounds"):
        out.numpy()


# ---------------------------------------------------------------- 5. max_unpool of inf


@pytest.mark.parametrize("device", DEVICES)
def test_max_unpool2d_of_infinities(device):
    import torch.nn.functional as TF

    import unigrad.nn.functional as F

    x = torch.tensor(
        [[[[1.0, np.inf, 3, 4], [5, 6, -np.inf, 8], [9, 10, 11, 12], [13, -np.inf, 15, np.nan]]]], requires_grad=False
    )
    o, i = TF.max_pool2d(x, 2, return_indices=True)
    want = TF.max_unpool2d(o, i, 2).numpy()
    uo, ui = Tensor(o.numpy(), device=device), Tensor(i.numpy(), device=device)
    np.testing.assert_array_equal(F.max_unpool2d(uo, ui, 2).numpy(), want)
    np.testing.assert_array_equal(uo.max_unpool2d(ui, (2, 2)).numpy(), want)
    ov = o.detach().clone().requires_grad_()
    g = torch.arange(16.0).reshape(1, 1, 4, 4)
    (TF.max_unpool2d(ov, i, 2) * g).sum().backward()
    uv = Tensor(o.numpy(), device=device, requires_grad=True)
    (F.max_unpool2d(uv, ui, 2) * Tensor(g.numpy(), device=device)).sum().backward()
    np.testing.assert_array_equal(uv.grad.numpy(), ov.grad.numpy())


# ---------------------------------------------------------------- 6. half-precision matmul


@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
@pytest.mark.parametrize(
    "shapes,device",
    [
        (((17, 33), (33, 9)), "CPU"),
        (((64, 128), (128, 64)), "CPU"),
        (((2, 5, 7), (7, 3)), "CPU"),
        (((0, 4), (4, 3)), "CPU"),
        (((3, 0), (0, 2)), "CPU"),
        (((1, 1), (1, 1)), "PYTHON"),
        (((3, 5), (5, 2)), "PYTHON"),
        (((7,), (7, 3)), "PYTHON"),
    ],
)
def test_half_matmul_accumulates_in_float32(shapes, dt, device):
    """Forward and both gradients as torch: products and sums in float32, one rounding to the 16-bit dtype."""
    rng = np.random.default_rng(10)
    tdt = getattr(torch, dt)
    a, b = (torch.tensor(rng.standard_normal(s).astype(np.float32)).to(tdt) for s in shapes)
    ta, tb = a.clone().requires_grad_(), b.clone().requires_grad_()
    out = ta @ tb
    g = torch.tensor(rng.standard_normal(out.shape).astype(np.float32)).to(tdt)
    out.backward(g)
    ua = Tensor(a.float().numpy(), device=device).cast(dt).detach().requires_grad_()
    ub = Tensor(b.float().numpy(), device=device).cast(dt).detach().requires_grad_()
    uo = ua @ ub
    assert uo.dtype == getattr(dtypes, dt)
    uo.backward(Tensor(g.float().numpy(), device=device).cast(dt))
    ulp = 2.0**-10 if dt == "float16" else 2.0**-7
    for ours, theirs in ((uo, out.detach()), (ua.grad, ta.grad), (ub.grad, tb.grad)):
        got, want = ours.cast("float32").numpy(), theirs.float().numpy()
        # summation order may differ from torch's blocked sums: at most one rounding step apart, rarely
        np.testing.assert_allclose(got, want, rtol=ulp, atol=ulp * np.abs(want).max(initial=0) / 64)
        assert got.size == 0 or np.mean(got != want) < 0.01
