"""unigrad/api/math.py against PyTorch: elementwise compositions (trig, hyperbolic, erf, rounding, pow, fmod,
activations, ...).

Each op runs on random data at a 0-size, a 1-element and an odd-sized non-contiguous (flipped + permuted) shape;
the odd-sized input also carries the op's edge values (0, -0, +-inf, nan, domain ends). Checks: shape and dtype
equal PyTorch's, float32 values within atol 1e-6 / rtol 1e-3, integers exact. A few tiny cases run on the
PYTHON device (the interpreter), the rest on CPU.
"""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from unigrad import Tensor, dtypes

INF, NAN = math.inf, math.nan
SPECIALS = [0.0, -0.0, INF, -INF, NAN, 1.0, -1.0, 0.5, -0.5, 2.5, -2.5, 1e-30, 100.0, -100.0]


# ---------------------------------------------------------------- helpers


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


def sample(rng: np.random.Generator, shape: tuple[int, ...], domain: tuple[float, float], edges: list[float]):
    """Random float32 data uniform in `domain`, the first len(edges) elements replaced by `edges`."""
    x = rng.uniform(*domain, shape).astype(np.float32)
    flat = x.reshape(-1)
    k = min(len(edges), flat.size)
    flat[:k] = np.asarray(edges[:k], dtype=np.float32)
    return x


def noncontig(x: np.ndarray, device: str = "CPU") -> Tensor:
    """A tensor equal to x (2-d) built as a permuted view of a flipped buffer: the op sees index math."""
    base = np.ascontiguousarray(np.flip(x.T, 0))
    return Tensor(base, device=device).flip(0).permute(1, 0)


def inputs(rng: np.random.Generator, domain, edges):
    """(unigrad tensor, torch tensor) pairs: 0-size, 1-element, and a 5x13 non-contiguous view with edges."""
    out = []
    for shape in [(0,), (1,), (5, 13)]:
        x = sample(rng, shape, domain, edges if shape == (5, 13) else [])
        t = noncontig(x) if len(shape) == 2 else Tensor(x)
        out.append((t, torch.from_numpy(x.copy())))
    return out


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(0)


# ---------------------------------------------------------------- unary ops: name -> (unigrad, torch, domain, edges)

ANY = (-3.0, 3.0)
UNIT_EDGES = [0.0, -0.0, 1.0, -1.0, 1.5, -1.5, NAN, 0.5, -0.5, INF, 0.99999994, -0.99999994]
UNARY = {
    "tan": (Tensor.tan, torch.tan, (-10.0, 10.0), SPECIALS),
    "atan": (Tensor.atan, torch.atan, (-20.0, 20.0), SPECIALS + [1e20, -1e20, 0.41, 2.42]),
    "asin": (Tensor.asin, torch.asin, (-1.0, 1.0), UNIT_EDGES),
    "acos": (Tensor.acos, torch.acos, (-1.0, 1.0), UNIT_EDGES),
    "sinh": (Tensor.sinh, torch.sinh, (-10.0, 10.0), SPECIALS + [1e-3, 0.999, 1.001, 80.0]),
    "cosh": (Tensor.cosh, torch.cosh, (-10.0, 10.0), SPECIALS + [80.0, -80.0]),
    "tanh": (Tensor.tanh, torch.tanh, (-10.0, 10.0), SPECIALS + [1e-4, 20.0, -50.0]),
    "asinh": (Tensor.asinh, torch.asinh, (-50.0, 50.0), SPECIALS + [1e30, -1e30, 1e-4]),
    "acosh": (Tensor.acosh, torch.acosh, (1.0, 50.0), [1.0, 1.0000001, 0.5, -1.0, INF, NAN, 1e30, 0.0]),
    "atanh": (Tensor.atanh, torch.atanh, (-1.0, 1.0), UNIT_EDGES),
    "erf": (Tensor.erf, torch.erf, ANY, SPECIALS + [1e-5, 0.49, 0.51, 4.0, -6.0]),
    "erfc": (Tensor.erfc, torch.erfc, ANY, SPECIALS + [5.0, 9.0, -5.0]),
    "expm1": (Tensor.expm1, torch.expm1, ANY, SPECIALS + [1e-7, 0.49, 0.51, 80.0, -80.0]),
    "log1p": (Tensor.log1p, torch.log1p, (-0.9, 5.0), [0.0, -0.0, -1.0, -2.0, INF, NAN, 1e-7, -1e-7, 0.4, -0.42, 1e30]),
    "log10": (Tensor.log10, torch.log10, (0.01, 100.0), [0.0, -0.0, -1.0, INF, NAN, 1.0, 10.0, 1e-30]),
    "rsqrt": (Tensor.rsqrt, torch.rsqrt, (0.01, 100.0), [0.0, -1.0, INF, NAN, 1.0, 4.0]),
    "floor": (Tensor.floor, torch.floor, (-100.0, 100.0), SPECIALS + [1e10, -1e10, -0.3]),
    "ceil": (Tensor.ceil, torch.ceil, (-100.0, 100.0), SPECIALS + [1e10, -1e10, -0.3]),
    "round": (Tensor.round, torch.round, (-100.0, 100.0), SPECIALS + [1.5, -1.5, 0.49999997, 8388609.0, 3.5, 4.5]),
    "sign": (Tensor.sign, torch.sign, ANY, SPECIALS),
    "isnan": (Tensor.isnan, torch.isnan, ANY, SPECIALS),
    "isinf": (Tensor.isinf, torch.isinf, ANY, SPECIALS),
    "isfinite": (Tensor.isfinite, torch.isfinite, ANY, SPECIALS),
    "relu6": (Tensor.relu6, F.relu6, (-8.0, 8.0), SPECIALS + [6.0]),
    "hardtanh": (Tensor.hardtanh, F.hardtanh, ANY, SPECIALS),
    "leaky_relu": (Tensor.leaky_relu, F.leaky_relu, ANY, SPECIALS),
    "elu": (Tensor.elu, F.elu, ANY, SPECIALS),
    "celu": (lambda x: x.celu(0.7), lambda x: F.celu(x, 0.7), ANY, SPECIALS),
    "selu": (Tensor.selu, F.selu, ANY, SPECIALS),
    "gelu": (
        lambda x: x.gelu("none"),
        F.gelu,
        (-6.0, 6.0),
        [0.0, -0.0, NAN, 1.0, -1.0, 10.0, -10.0, -5.0],
    ),  # torch: gelu(inf)=nan
    "gelu_tanh": (Tensor.gelu, lambda x: F.gelu(x, approximate="tanh"), (-6.0, 6.0), SPECIALS),
    "quick_gelu": (Tensor.quick_gelu, lambda x: x * torch.sigmoid(1.702 * x), (-6.0, 6.0), [0.0, 1.0, -1.0, 50.0]),
    "silu": (Tensor.silu, F.silu, (-6.0, 6.0), SPECIALS),
    "swish": (Tensor.swish, F.silu, (-6.0, 6.0), [0.0, 1.0]),
    "mish": (Tensor.mish, F.mish, (-6.0, 6.0), SPECIALS + [30.0, -30.0]),
    "softplus": (Tensor.softplus, F.softplus, (-30.0, 30.0), SPECIALS + [20.0, 20.001]),
    "softplus_beta": (
        lambda x: x.softplus(beta=2.0, threshold=5.0),
        lambda x: F.softplus(x, beta=2.0, threshold=5.0),
        ANY,
        SPECIALS,
    ),
    "softsign": (Tensor.softsign, F.softsign, ANY, SPECIALS),
    "logsigmoid": (Tensor.logsigmoid, F.logsigmoid, (-30.0, 30.0), SPECIALS),
    "hardsigmoid": (Tensor.hardsigmoid, F.hardsigmoid, (-5.0, 5.0), SPECIALS + [3.0, -3.0]),
    "hardswish": (Tensor.hardswish, F.hardswish, (-5.0, 5.0), SPECIALS + [3.0, -3.0]),
}


@pytest.mark.parametrize("name", list(UNARY))
def test_unary(name, rng):
    ours, ref, domain, edges = UNARY[name]
    for t, x in inputs(rng, domain, edges):
        check(ours(t), ref(x))


# ops whose float path differs for other dtypes: half/bfloat16 compute in float32, ints/bools become float32
DTYPE_OPS = ["tan", "atan", "tanh", "erf", "round", "sign", "gelu", "softsign", "log1p", "isnan", "relu6", "floor"]
DTYPES = ["float16", "bfloat16", "float64", "int32", "uint8", "bool"]


@pytest.mark.parametrize("dtype", DTYPES)
def test_unary_dtypes(dtype):
    """Result dtype as PyTorch for each input dtype (or the same exception type), values within half-precision
    tolerance."""
    data = np.array([-2.5, -1.0, 0.0, 0.5, 1.0, 3.0], dtype=np.float32)
    if dtype == "uint8":  # float -> uint8 of a negative value is undefined
        data = np.abs(data)
    tdt = getattr(torch, dtype)
    x = torch.from_numpy(data).to(tdt)
    t = Tensor(data).cast(dtype)
    for name in DTYPE_OPS:
        ours, ref = UNARY[name][:2]
        try:
            want = ref(x)
        except Exception as e:  # noqa: BLE001 - compare the exception type
            with pytest.raises(type(e)):
                ours(t)
            continue
        check(ours(t), want, rtol=1e-2, atol=1e-3)


@pytest.mark.parametrize("name", ["tanh", "expm1", "log1p", "softplus", "silu", "atanh", "asinh"])
def test_float64_to_full_precision(name, rng):
    """float64 values within a few ulps of torch's: the series inside (expm1's Taylor terms, log1p's atanh series)
    run to float64's precision, not float32's (tanh's error was 4e-10)."""
    ours, ref = UNARY[name][:2]
    x = np.concatenate([rng.uniform(-0.6, 0.6, 500), rng.standard_normal(500) * 3])
    x = np.clip(x, -0.999, 0.999) if name == "atanh" else np.abs(x) if name == "log1p" else x
    got, want = ours(Tensor(x)).numpy(), ref(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(got, want, rtol=2e-15, atol=1e-300)


def test_unary_python_device():
    """A handful of ops on the interpreter (tiny tensors)."""
    x = np.array([-2.0, -0.5, 0.0, 0.3, 1.0, 2.5, INF, NAN], dtype=np.float32)
    t, tx = Tensor(x, device="PYTHON"), torch.from_numpy(x)
    for name in ["tan", "atan", "tanh", "erf", "round", "floor", "sign", "gelu_tanh", "softplus", "isinf", "sinh"]:
        ours, ref = UNARY[name][:2]
        out = ours(t)
        assert out.device == "PYTHON"
        check(out, ref(tx))
    u = np.array([-1.0, -0.7, 0.0, 0.25, 0.9, 1.0], dtype=np.float32)
    for name in ["asin", "acos", "atanh"]:
        ours, ref = UNARY[name][:2]
        check(ours(Tensor(u, device="PYTHON")), ref(torch.from_numpy(u)))
    a, b = Tensor([2.0, -2.0, 0.5], device="PYTHON"), Tensor([3.0, 3.0, -1.5], device="PYTHON")
    check(a.pow(b), torch.pow(torch.tensor([2.0, -2.0, 0.5]), torch.tensor([3.0, 3.0, -1.5])))
    check(Tensor([3, -2, 5], device="PYTHON") ** Tensor([2, 3, 0], device="PYTHON"), torch.tensor([9, -8, 1]))
    check(a.fmod(b), torch.fmod(torch.tensor([2.0, -2.0, 0.5]), torch.tensor([3.0, 3.0, -1.5])))


# ---------------------------------------------------------------- binary ops

EDGE_GRID = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -2.0, -3.0, 2.5, INF, -INF, NAN, 1e-20, 10.0, -0.5], dtype=np.float32)
GX, GY = (g.reshape(-1) for g in np.meshgrid(EDGE_GRID, EDGE_GRID))


def pair(rng: np.random.Generator, domain=ANY, ydomain=None) -> tuple[Tensor, Tensor, torch.Tensor, torch.Tensor]:
    """Broadcasting operands: a (4, 1, 7) flipped view against a (5, 1) tensor."""
    x = rng.uniform(*domain, (4, 1, 7)).astype(np.float32)
    y = rng.uniform(*(ydomain or domain), (5, 1)).astype(np.float32)
    tx = Tensor(np.ascontiguousarray(np.flip(x, 2))).flip(2)
    return tx, Tensor(y), torch.from_numpy(x), torch.from_numpy(y)


BINARY = {
    "pow": (Tensor.pow, torch.pow),
    "fmod": (Tensor.fmod, torch.fmod),
    "copysign": (Tensor.copysign, torch.copysign),
    "logaddexp": (Tensor.logaddexp, torch.logaddexp),
    "logical_and": (Tensor.logical_and, torch.logical_and),
    "logical_or": (Tensor.logical_or, torch.logical_or),
    "logical_xor": (Tensor.logical_xor, torch.logical_xor),
}


@pytest.mark.parametrize("name", list(BINARY))
def test_binary(name, rng):
    ours, ref = BINARY[name]
    tx, ty, x, y = pair(rng, (-3.0, 3.0) if name != "pow" else (0.1, 3.0))
    check(ours(tx, ty), ref(x, y))
    check(ours(Tensor(GX), Tensor(GY)), ref(torch.from_numpy(GX), torch.from_numpy(GY)))  # every edge pair


def test_remainder(rng):
    tx, ty, x, y = pair(rng, (-10.0, 10.0), (0.5, 3.0))
    check(tx.remainder(ty), torch.remainder(x, y))
    check(tx.remainder(-ty), torch.remainder(x, -y))


@pytest.mark.parametrize("e", [0, 1, 2, 3, 5, -1, -2, 0.5, -0.5, 1 / 3, 2.5, -3.0, 65, True])
def test_pow_scalar_exponent(e):
    check(Tensor(EDGE_GRID) ** e, torch.from_numpy(EDGE_GRID) ** e)
    check(e ** Tensor(EDGE_GRID), e ** torch.from_numpy(EDGE_GRID))


def test_pow_int_dtypes():
    iv = np.array([-3, -2, -1, 0, 1, 2, 3, 7], dtype=np.int64)
    ix, iy = (g.reshape(-1) for g in np.meshgrid(iv, iv))
    check(Tensor(ix) ** Tensor(iy), torch.from_numpy(ix) ** torch.from_numpy(iy))  # negative exponents: 0, +-1
    check(Tensor(ix, dtype="int32") ** 3, torch.from_numpy(ix).int() ** 3)
    check(
        Tensor(np.abs(ix), dtype="uint8") ** Tensor(np.abs(iy), dtype="uint8"),
        torch.from_numpy(np.abs(ix)).to(torch.uint8) ** torch.from_numpy(np.abs(iy)).to(torch.uint8),
    )
    check(
        Tensor([3, -3, 5]) ** Tensor([2**40 + 1, 77, 1000]),
        torch.tensor([3, -3, 5]) ** torch.tensor([2**40 + 1, 77, 1000]),
    )  # wraps
    check(2 ** Tensor(iv), 2 ** torch.from_numpy(iv))
    check(Tensor(iv) ** 2.0, torch.from_numpy(iv) ** 2.0)  # float scalar: float32
    check(Tensor(iv) ** Tensor(2.0), torch.from_numpy(iv) ** torch.tensor(2.0))  # 0-d float tensor: float32
    check(Tensor([True, False]) ** 2, torch.tensor([True, False]) ** 2)
    check(Tensor(EDGE_GRID, dtype="float16") ** 2.5, torch.from_numpy(EDGE_GRID).half() ** 2.5, rtol=1e-2)
    with pytest.raises(RuntimeError):
        Tensor([2, 3]) ** -1
    with pytest.raises(NotImplementedError):
        Tensor([True]) ** Tensor([True])


def test_fmod_int_and_scalar():
    ix = np.array([-7, 7, -7, 7, 0, 9], dtype=np.int32)
    iy = np.array([2, -2, -2, 2, 3, 4], dtype=np.int32)
    check(Tensor(ix).fmod(Tensor(iy)), torch.fmod(torch.from_numpy(ix), torch.from_numpy(iy)))
    check(Tensor(ix).fmod(3), torch.fmod(torch.from_numpy(ix), 3))
    x = np.array([-3.0, 10.0, 5.3, -5.3, 0.9], dtype=np.float32)
    check(Tensor(x).fmod(0.3), torch.fmod(torch.from_numpy(x), 0.3))  # quotient rounding: -3 / 0.3f


def test_clamp(rng):
    tx, ty, x, y = pair(rng)
    check(tx.clamp(-1.0, 2.0), torch.clamp(x, -1.0, 2.0))
    check(tx.clamp(min=0.5), torch.clamp(x, min=0.5))
    check(tx.clip(max=ty), torch.clip(x, max=y))
    check(tx.clamp(ty, ty + 1), torch.clamp(x, y, y + 1))
    check(tx.clamp(2.0, 1.0), torch.clamp(x, 2.0, 1.0))  # min > max: all max
    check(Tensor(EDGE_GRID).clamp(-1.0, 1.0), torch.clamp(torch.from_numpy(EDGE_GRID), -1.0, 1.0))
    iv = torch.tensor([-5, 0, 3, 9])
    check(Tensor(iv.numpy()).clamp(0, 4), torch.clamp(iv, 0, 4))
    check(Tensor(iv.numpy()).clamp(min=0.5), torch.clamp(iv, min=0.5))  # float bound: float32
    check(Tensor(iv.numpy()).clamp_max(2), torch.clamp_max(iv, 2))
    with pytest.raises(RuntimeError):
        Tensor([1.0]).clamp()


def test_lerp(rng):
    tx, ty, x, y = pair(rng)
    check(tx.lerp(ty, 0.3), torch.lerp(x, y, 0.3))
    check(tx.lerp(ty, 0.8), torch.lerp(x, y, 0.8))
    w = rng.uniform(-0.5, 1.5, (7,)).astype(np.float32)
    check(tx.lerp(ty, Tensor(w)), torch.lerp(x, y, torch.from_numpy(w)))
    with pytest.raises(RuntimeError):
        Tensor([1.0]).lerp(Tensor([1.0], dtype="float64"), 0.5)
    with pytest.raises(NotImplementedError):
        Tensor([1]).lerp(Tensor([2]), 0.5)


def test_round_decimals():
    x = np.array([1.2345, -1.2355, 123.456, 0.125, -2.5, 1234.5], dtype=np.float32)
    for d in (2, 1, -1, -2):
        check(Tensor(x).round(decimals=d), torch.round(torch.from_numpy(x), decimals=d))


def test_int_rounding_and_sign():
    iv = torch.tensor([-3, 0, 2], dtype=torch.int32)
    for name in ["floor", "ceil", "round", "sign"]:
        check(getattr(Tensor(iv.numpy()), name)(), getattr(torch, name)(iv))
    check(Tensor([True, False]).sign(), torch.sign(torch.tensor([True, False])))
    with pytest.raises(NotImplementedError):
        Tensor([True]).floor()


@pytest.mark.parametrize(
    "fn",
    [
        lambda t: t.elu(),
        lambda t: t.gelu(),
        lambda t: t.silu(),
        lambda t: t.softplus(),
        lambda t: t.logsigmoid(),
        lambda t: t.logaddexp(t),
    ],
)
def test_float_only_ops_reject_ints(fn):
    """PyTorch raises NotImplementedError for these activations on integer tensors."""
    with pytest.raises(NotImplementedError):
        fn(Tensor([1, 2, 3]))


def test_tinygrad_spellings():
    """tinygrad's argument names and flags next to PyTorch's."""
    x = torch.from_numpy(EDGE_GRID)
    t = Tensor(EDGE_GRID)
    check(t.clip(min_=-1.0, max_=0.5), torch.clamp(x, -1.0, 0.5))
    check(t.leaky_relu(negative_slope=0.2), F.leaky_relu(x, 0.2))
    check(t.leaky_relu(0.2), F.leaky_relu(x, 0.2))
    check(t.isinf(detect_negative=False), torch.isposinf(x))
    check(t.isinf(detect_positive=False), torch.isneginf(x))
    check(t.hardsigmoid(0.25, 0.4), torch.clamp(x * 0.25 + 0.4, 0, 1))
    check(t.selu(1.5, 2.0), 2.0 * F.elu(x, 1.5))
    check(t.logical_and(True), torch.logical_and(x, torch.tensor(True)))


def test_gelu_bad_approximate():
    with pytest.raises(RuntimeError):
        Tensor([1.0]).gelu("fast")


# ---------------------------------------------------------------- gradients (through the where-branches)

GRAD_X = np.array([0.0, 0.3, -0.7, 1.0, -1.0, 0.5, 2.0, -3.0, 3.0, 0.99, -0.42, 6.0, 40.0, -40.0], dtype=np.float32)
GRAD = {
    "tan": (Tensor.tan, torch.tan, GRAD_X[:11]),
    "atan": (Tensor.atan, torch.atan, GRAD_X),
    "asin": (lambda t: (t * 0.3).asin(), lambda t: (t * 0.3).asin(), GRAD_X[:12]),
    "acos": (lambda t: (t * 0.3).acos(), lambda t: (t * 0.3).acos(), GRAD_X[:12]),
    "sinh_cosh": (lambda t: t.sinh() + t.cosh(), lambda t: t.sinh() + t.cosh(), GRAD_X),
    "tanh": (Tensor.tanh, torch.tanh, GRAD_X),
    "asinh": (Tensor.asinh, torch.asinh, GRAD_X),
    "acosh": (lambda t: (t.abs() + 1.5).acosh(), lambda t: (t.abs() + 1.5).acosh(), GRAD_X),
    "atanh": (lambda t: (t * 0.2).atanh(), lambda t: (t * 0.2).atanh(), GRAD_X[:11]),
    "erf_erfc": (lambda t: t.erf() + t.erfc() * 2, lambda t: t.erf() + t.erfc() * 2, GRAD_X),
    "expm1_log1p": (lambda t: t.expm1() + t.abs().log1p(), lambda t: t.expm1() + t.abs().log1p(), GRAD_X[:12]),
    "gelu": (lambda t: t.gelu("none"), F.gelu, GRAD_X),
    "gelu_tanh": (lambda t: t.gelu("tanh"), lambda t: F.gelu(t, approximate="tanh"), GRAD_X),
    "elu_selu_celu": (
        lambda t: t.elu() + t.selu() + t.celu(0.5),
        lambda t: F.elu(t) + F.selu(t) + F.celu(t, 0.5),
        GRAD_X,
    ),
    "mish_softplus": (lambda t: t.mish() + t.softplus(), lambda t: F.mish(t) + F.softplus(t), GRAD_X),
    "logsigmoid": (Tensor.logsigmoid, F.logsigmoid, GRAD_X),
    "silu_quick_gelu": (
        lambda t: t.silu() + t.quick_gelu(),
        lambda t: F.silu(t) + t * torch.sigmoid(1.702 * t),
        np.concatenate([GRAD_X, [-100.0, 100.0]]).astype(np.float32),
    ),
    "hard": (
        lambda t: t.hardswish() + t.hardsigmoid() + t.relu6() + t.hardtanh(),
        lambda t: F.hardswish(t) + F.hardsigmoid(t) + F.relu6(t) + F.hardtanh(t),
        GRAD_X,
    ),
    "clamp": (lambda t: t.clamp(-1.0, 0.5), lambda t: t.clamp(-1.0, 0.5), GRAD_X),
    "pow": (
        lambda t: t**3 + t.abs() ** 2.5 + (t.abs() + 0.5) ** t,
        lambda t: t**3 + t.abs() ** 2.5 + (t.abs() + 0.5) ** t,
        GRAD_X[:12],
    ),
    "logaddexp": (lambda t: t.logaddexp(t * 0.5), lambda t: torch.logaddexp(t, t * 0.5), GRAD_X),
    "lerp_copysign": (
        lambda t: t.lerp(t * 2, 0.7) + t.copysign(t - 0.5),
        lambda t: t.lerp(t * 2, 0.7) + t.copysign(t - 0.5),
        GRAD_X,
    ),
}


@pytest.mark.parametrize("name", list(GRAD))
def test_gradient(name):
    """d(sum(op(x)))/dx against PyTorch (atol 1e-4, rtol 1e-3), including the points where branches meet."""
    ours, ref, x = GRAD[name]
    t = Tensor(x.copy(), requires_grad=True)
    ours(t).sum().backward()
    tx = torch.tensor(x, requires_grad=True)
    ref(tx).sum().backward()
    assert t.grad is not None
    np.testing.assert_allclose(t.grad.numpy(), tx.grad.numpy(), rtol=1e-3, atol=1e-4)


# ---------------------------------------------------------------- properties (one kernel, many data)


@settings(max_examples=30, deadline=None, derandomize=True)
@given(st.lists(st.floats(-1e6, 1e6, width=32), min_size=8, max_size=8))
def test_round_floor_ceil_property(xs):
    x = np.array(xs, dtype=np.float32)
    t, tx = Tensor(x), torch.from_numpy(x)
    check(t.round(), torch.round(tx))
    check(t.floor(), torch.floor(tx))


@settings(max_examples=30, deadline=None, derandomize=True)
@given(
    st.lists(st.floats(-50, 50, width=32), min_size=8, max_size=8),
    st.lists(st.floats(0.0625, 20, width=32), min_size=8, max_size=8),
)
def test_fmod_property(xs, ys):
    x, y = np.array(xs, dtype=np.float32), np.array(ys, dtype=np.float32)
    check(Tensor(x).fmod(Tensor(y)), torch.fmod(torch.from_numpy(x), torch.from_numpy(y)))
