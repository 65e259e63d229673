"""Every op of the Tensor API against numpy/PyTorch on random data, on the compiled (CPU) and the
interpreted (PYTHON) device.

Each check compares shape, dtype and values. Dtypes are compared by name with PyTorch's result (unigrad
follows PyTorch's promotion rules); values come from PyTorch or numpy on the same inputs. Inputs are also
fed in as views (permuted, flipped, shrunk, padded) so the ops see index math, not only plain buffers.
PYTHON runs a scalar interpreter, so its shapes stay small (<= ~200 elements, matmul dims <= 8).
"""

import warnings
from collections.abc import Callable

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from unigrad import Tensor, dtypes
from unigrad.runtime import Device
from unigrad.runtime.support import cuda
from unigrad.runtime.support import opencl as cl

# every op family on every device the suite has: CL (a GPU-shaped lowering on PoCL) where an OpenCL platform is found,
# CUDA where an NVIDIA GPU is (test/gpu/check_cuda.py runs the suite there)
DEVICES = (
    ("CPU", "PYTHON")
    + (("CL",) if cl.unavailable() is None else ())
    + (("CUDA",) if cuda.unavailable() is None else ())
)
VIEWS = ("permuted", "flipped", "shrunk", "padded")
TRANSCENDENTAL_RTOL = 1e-4


# ---------------------------------------------------------------- helpers


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(0)


def torch_dtype_name(t: torch.Tensor) -> str:
    return str(t.dtype).removeprefix("torch.")


def check(out: Tensor, ref: torch.Tensor | np.ndarray, rtol: float = 1e-5, atol: float = 1e-6) -> None:
    """`out` has the shape, dtype (by name) and values of the reference."""
    if isinstance(ref, torch.Tensor):
        ref_dtype, ref_np = torch_dtype_name(ref), ref.numpy()
    else:
        ref_np = np.asarray(ref)
        ref_dtype = ref_np.dtype.name
    assert out.shape == ref_np.shape, f"shape {out.shape} != {ref_np.shape}"
    assert out.dtype.name == ref_dtype, f"dtype {out.dtype.name} != {ref_dtype}"
    got = out.numpy()
    assert got.shape == ref_np.shape
    assert got.dtype == ref_np.dtype, f"numpy() dtype {got.dtype} != {ref_np.dtype}"
    if ref_np.dtype.kind == "f":
        np.testing.assert_allclose(got, ref_np, rtol=rtol, atol=atol)
    else:
        np.testing.assert_array_equal(got, ref_np)


def rand(rng: np.random.Generator, shape: tuple[int, ...], dtype: str, domain: str = "any") -> np.ndarray:
    """Random data of `dtype`. Domains: any, positive (> 0), nonneg (>= 0), nonzero, halves (multiples of
    0.5 in [-3, 3] for floats: equal values happen, quotients are exact), unit (near 1: long products stay
    finite), shift (small non-negative ints)."""
    kind = np.dtype(dtype).kind
    if kind == "b":
        if domain in ("positive", "nonzero"):
            return np.ones(shape, dtype=bool)
        return np.asarray(rng.random(shape) < 0.5)
    if kind == "f":
        if domain == "positive":
            x = rng.uniform(0.1, 4.0, shape)
        elif domain == "nonneg":
            x = rng.uniform(0.0, 4.0, shape)
        elif domain == "nonzero":
            x = rng.uniform(0.25, 3.0, shape) * rng.choice([-1, 1], shape)
        elif domain == "halves":
            x = rng.integers(-6, 7, shape) / 2
        elif domain == "unit":
            x = rng.uniform(0.8, 1.25, shape)
        else:
            x = rng.uniform(-3.0, 3.0, shape)
        return np.asarray(x).astype(dtype)
    lo = 0 if kind == "u" else -5
    if domain == "positive":
        x = rng.integers(1, 10, shape)
    elif domain in ("nonneg", "shift"):
        x = rng.integers(0, 5 if domain == "shift" else 10, shape)
    elif domain == "unit":
        x = rng.integers(1, 3, shape)
    elif domain == "nonzero":
        x = rng.integers(1, 6, shape) * (1 if kind == "u" else rng.choice([-1, 1], shape))
    else:
        x = rng.integers(lo, 6, shape)
    return np.asarray(x).astype(dtype)


def pad_value(dtype: str) -> bool | int | float:
    """A nonzero pad value of the dtype's Python type (keeps positive/nonzero domains valid)."""
    kind = np.dtype(dtype).kind
    return True if kind == "b" else 0.5 if kind == "f" else 1


def as_view(x: np.ndarray, view: str, device: str) -> tuple[Tensor, np.ndarray]:
    """A unigrad tensor built as the named kind of view over another buffer, and the numpy array it equals.
    A 0-d x still goes through the (then empty) movement op."""
    if view == "permuted":  # a reversed-axes buffer, permuted back
        order = tuple(reversed(range(x.ndim)))
        return Tensor(x.transpose(order).copy(), device=device).permute(order), x
    if view == "flipped":
        base = np.asarray(np.flip(x)).copy()
        return Tensor(base, device=device).flip(tuple(range(x.ndim))), x
    if view == "shrunk":  # a bigger buffer with junk around x
        big = np.pad(x, [(1, 2)] * x.ndim, mode="constant", constant_values=1) if x.ndim else x.copy()
        return Tensor(big, device=device).shrink(tuple((1, 1 + s) for s in x.shape)), x
    if view == "padded":  # the first index of each nonempty axis comes from padding with a nonzero value
        v = pad_value(x.dtype.name)
        pads = tuple((1, 0) if s > 0 else (0, 0) for s in x.shape)
        inner = np.array(x[tuple(slice(b, None) for b, _ in pads)])  # np.array: x[()] of a 0-d x is a scalar
        ref = np.pad(inner, pads, mode="constant", constant_values=v).astype(x.dtype) if x.ndim else x
        return Tensor(inner, device=device).pad(pads, value=v), ref
    raise ValueError(view)


def torch_supports(fn: Callable, *dts: str) -> bool:
    try:
        fn(*(torch.ones(2, dtype=getattr(torch, d)) for d in dts))
    except (RuntimeError, TypeError):
        return False
    return True


def with_views(items: list, every_view: int = 4) -> list[tuple]:
    """(item, view) pairs: the views taken in turn, two per item, and all of them for every `every_view`-th
    item (the op decides the kernel's math, the view only its index math)."""
    out = []
    for i, item in enumerate(items):
        views = VIEWS if i % every_view == 0 else (VIEWS[i % 4], VIEWS[(i + 1) % 4])
        out += [(item, v) for v in views]
    return out


def per_device(cases: list[tuple], cpu_every: int = 2) -> list[tuple]:
    """Each case (a tuple of params) with a device appended: every case on PYTHON, every `cpu_every`-th on
    CPU too, since each CPU case compiles its own kernel. The phase shifts every 7 cases so nested loops
    of params do not always leave out the same inner ones."""
    out = []
    for i, case in enumerate(cases):
        out.append((*case, "PYTHON"))
        if (i + i // 7) % cpu_every == 0:
            out.append((*case, "CPU"))
    return out


def small(device: str, cpu_shape: tuple[int, ...], python_shape: tuple[int, ...]) -> tuple[int, ...]:
    return cpu_shape if device == "CPU" else python_shape


# ---------------------------------------------------------------- construction


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("value", [3, -7, 0, 2.5, -0.0, 1e30, True, False])
def test_from_python_scalar(device, value):
    t = Tensor(value, device=device)
    ref = torch.tensor(value)
    assert t.device == device
    check(t, ref)
    assert t.item() == ref.item()
    assert type(t.item()) is type(ref.item())


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(
    "data",
    [
        [1, 2, 3],
        [[1, -2], [3, 4], [5, 6]],
        [1.5, -2.0, 3.25],
        [[0.5], [1.0]],
        [True, False, True],
        [1, 2.5],
        [True, 2],
        [[[1, 2, 3]]],
        [7],
        [],
        [[], []],
    ],
)
def test_from_list(device, data):
    check(Tensor(data, device=device), torch.tensor(data))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(
    "dtype", ["float32", "float64", "float16", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "bool"]
)
@pytest.mark.parametrize("shape", [(), (0,), (1,), (7,), (3, 13), (2, 0, 3), (1, 1, 1)])
def test_from_numpy(device, dtype, shape, rng):
    x = rand(rng, shape, dtype)
    t = Tensor(x, device=device)
    assert t.dtype.name == dtype
    check(t, x)


@pytest.mark.parametrize("device", DEVICES)
def test_from_numpy_uint64(device):
    x = np.array([0, 1, 2**63 + 5, 2**64 - 1], dtype=np.uint64)
    check(Tensor(x, device=device), x)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(
    "data, dtype",
    [
        ([1.7, -2.2, 3.0], "int32"),
        ([1, 2, 3], "float32"),
        ([1, 0, 3], "bool"),
        ([0.0, 0.5, -1.0], "bool"),
        ([True, False], "float64"),
        ([300, -1], "int16"),
        ([[1, 2], [3, 4]], "float16"),
        (5, "float32"),
        (2.5, "int32"),
        (True, "int64"),
        (0, "bool"),
    ],
)
def test_construct_with_dtype(device, data, dtype):
    t = Tensor(data, device=device, dtype=getattr(dtypes, dtype))
    check(t, torch.tensor(data, dtype=getattr(torch, dtype)))
    t2 = Tensor(np.array(data), device=device, dtype=dtype)  # the dtype also by name
    check(t2, torch.tensor(np.array(data), dtype=getattr(torch, dtype)))


@pytest.mark.parametrize("device", DEVICES)
def test_from_numpy_scalar(device):
    for v in (np.float32(2.5), np.int64(3), np.bool_(True)):
        check(Tensor(v, device=device), torch.tensor(v))


@pytest.mark.parametrize("shape", [(), (0,), (1,), (3, 5), (2, 3, 4)])
def test_numpy_asarray_gives_the_values(shape, rng):
    """np.asarray / np.array of a Tensor are its values with its dtype, as for a torch tensor (they were object
    arrays of 0-d Tensors); a non-contiguous view too; dtype= converts."""
    x = rand(rng, shape, "float32")
    t = Tensor(x)
    for got in (np.asarray(t), np.array(t), np.asarray(t.T if len(shape) > 1 else t)):
        assert got.dtype == np.float32 and isinstance(got, np.ndarray)
    np.testing.assert_array_equal(np.asarray(t), x)
    if len(shape) > 1:
        np.testing.assert_array_equal(np.asarray(t.T), x.T)
    assert np.asarray(t, dtype=np.float64).dtype == np.float64
    np.testing.assert_array_equal(np.asarray(Tensor(x.astype(np.int32))), x.astype(np.int32))


@pytest.mark.parametrize("device", DEVICES)
def test_from_numpy_float64_scalar(device):
    # np.float64 is a Python float subclass; PyTorch keeps its dtype
    check(Tensor(np.float64(1.5), device=device), torch.tensor(np.float64(1.5)))


@pytest.mark.parametrize("device", DEVICES)
def test_from_tensor(device, rng):
    x = rand(rng, (2, 3), "int32")
    t = Tensor(Tensor(x, device=device) + 1, device=device)
    check(t, x + 1)


def test_bfloat16_roundtrip():
    x = np.array([1.0, 1.00390625, -3.14159, 65504.0, 1e-3], dtype=np.float32)
    t = Tensor(x, dtype=dtypes.bfloat16)
    assert t.dtype is dtypes.bfloat16
    check(t.float(), torch.tensor(x).bfloat16().float())


@pytest.mark.parametrize("device", DEVICES)
def test_bad_construction(device):
    with pytest.raises((TypeError, ValueError)):  # PyTorch raises ValueError for ragged lists
        Tensor([[1, 2], [3]], device=device)
    with pytest.raises(TypeError):
        Tensor("abc", device=device)


# ---------------------------------------------------------------- creation helpers


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", [(), (0,), (1,), (7,), (2, 3), (3, 0, 2), (1, 13, 1)])
@pytest.mark.parametrize("dtype", [None, "int32", "bool", "float64"])
def test_zeros_ones(device, shape, dtype):
    kw = {} if dtype is None else {"dtype": getattr(dtypes, dtype)}
    tkw = {} if dtype is None else {"dtype": getattr(torch, dtype)}
    check(Tensor.zeros(*shape, device=device, **kw), torch.zeros(shape, **tkw))
    check(Tensor.ones(shape, device=device, **kw), torch.ones(shape, **tkw))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", [(), (0,), (5,), (2, 3), (4, 1, 3)])
@pytest.mark.parametrize("value", [3, -2.5, True, 0])
def test_full(device, shape, value):
    check(Tensor.full(shape, value, device=device), torch.full(shape, value))


@pytest.mark.parametrize("device", DEVICES)
def test_full_int_shape_and_dtype(device):
    check(Tensor.full(4, 7, dtype=dtypes.float32, device=device), torch.full((4,), 7, dtype=torch.float32))
    check(Tensor.full((2, 2), 1.9, dtype="int32", device=device), torch.full((2, 2), 1.9).int())


@pytest.mark.parametrize("device", DEVICES)
def test_like_helpers(device, rng):
    x = rand(rng, (2, 3), "int32")
    t = Tensor(x, device=device)
    check(t.zeros_like(), torch.zeros_like(torch.from_numpy(x)))
    check(t.ones_like(), torch.ones_like(torch.from_numpy(x)))
    check(t.full_like(4), torch.full_like(torch.from_numpy(x), 4))
    check(t.ones_like(dtype=dtypes.float32), torch.ones(2, 3))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", [(), (0,), (7,), (2, 3), (3, 0)])
@pytest.mark.parametrize("dtype", [None, "int64", "uint8", "bool"])
def test_empty(device, shape, dtype):
    kw = {} if dtype is None else {"dtype": getattr(dtypes, dtype)}
    t = Tensor.empty(*shape, device=device, **kw)
    ref = torch.empty(shape, **({} if dtype is None else {"dtype": getattr(torch, dtype)}))
    assert t.shape == tuple(ref.shape)
    assert t.dtype.name == torch_dtype_name(ref)
    assert t.device == device
    assert t.numpy().shape == tuple(ref.shape)


ARANGE_CASES = [
    (5,),
    (0,),
    (1,),
    (13,),
    (2, 9),
    (2, 9, 3),
    (2, 10, 4),
    (-3, 4),
    (10, 0, -3),
    (10, -1, -1),
    (0, -7, -2),
    (0.5, 3, 0.7),
    (1, 2.5, 0.5),
    (3.0, 0, -0.5),
    (2.5,),
    (-1, 1, 0.25),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("args", ARANGE_CASES)
def test_arange(device, args):
    check(Tensor.arange(*args, device=device), torch.arange(*args))


@pytest.mark.parametrize("device", DEVICES)
def test_arange_large_and_dtype(device):
    n = small(device, 1000, 150)
    check(Tensor.arange(n, device=device), torch.arange(n))
    check(Tensor.arange(3, 40, 3, dtype=dtypes.float32, device=device), torch.arange(3, 40, 3, dtype=torch.float32))
    check(Tensor.arange(0, 2, 0.25, dtype=dtypes.float64, device=device), torch.arange(0, 2, 0.25, dtype=torch.float64))
    check(Tensor.arange(7, dtype="int32", device=device), torch.arange(7, dtype=torch.int32))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("args", [(5, 1), (1, 5, -1), (2, 2), (1.5, 0.5)])
def test_arange_empty(device, args):
    # PyTorch refuses a step pointing away from stop; numpy (and unigrad) give an empty range
    want = np.float32 if any(isinstance(a, float) for a in args) else np.int64
    check(Tensor.arange(*args, device=device), np.arange(*args).astype(want))


def test_arange_graph_is_reused_per_arguments():
    """arange remembers its graph by (start, stop, step, their types, dtype, device): a loss calls it every step.
    Equal-valued arguments of another type, dtype or device are other entries; each call is its own tensor."""
    a, b = Tensor.arange(4), Tensor.arange(4)
    assert a is not b and a.uop is b.uop
    f, g = Tensor.arange(4.0), Tensor.arange(4.0, requires_grad=True)
    assert g.requires_grad and not f.requires_grad
    variants = [Tensor.arange(4.0), Tensor.arange(4, dtype="int32"), Tensor.arange(4, device="PYTHON")]
    assert [v.dtype.name for v in variants] == ["float32", "int32", "int64"]
    assert variants[2].device == "PYTHON" and len({a.uop, variants[0].uop, variants[1].uop}) == 3
    for v in [a, *variants]:
        assert v.tolist() == [0, 1, 2, 3]


def test_arange_zero_step_raises():
    with pytest.raises(RuntimeError):
        Tensor.arange(0, 5, 0)


# ---------------------------------------------------------------- unary elementwise

# name -> (op on a unigrad or torch tensor, input domain, transcendental)
UNARY: dict[str, tuple[Callable, str, bool]] = {
    "neg": (lambda t: -t, "any", False),
    "reciprocal": (lambda t: t.reciprocal(), "nonzero", False),
    "exp2": (lambda t: t.exp2(), "any", True),
    "log2": (lambda t: t.log2(), "positive", True),
    "sin": (lambda t: t.sin(), "any", True),
    "sqrt": (lambda t: t.sqrt(), "nonneg", False),
    "trunc": (lambda t: t.trunc(), "any", False),
    "exp": (lambda t: t.exp(), "any", True),
    "log": (lambda t: t.log(), "positive", True),
    "cos": (lambda t: t.cos(), "any", True),
    "relu": (lambda t: t.relu(), "any", False),
    "sigmoid": (lambda t: t.sigmoid(), "any", True),
    "abs": (lambda t: t.abs(), "any", False),
    "square": (lambda t: t.square(), "any", False),
    "logical_not": (lambda t: t.logical_not(), "any", False),
}
UNARY_OTHER_DTYPES = ("float64", "int32", "int64", "uint8", "bool")
UNARY_DTYPE_CASES = [
    (name, dt)
    for name, (fn, _, _) in UNARY.items()
    for dt in UNARY_OTHER_DTYPES
    if torch_supports(fn, dt)
    and not (name == "square" and dt == "bool")  # torch: square(bool) -> int64
    and not (name == "neg" and dt == "uint8")
]


def check_unary(name: str, x: np.ndarray, t: Tensor) -> None:
    fn, _, transcendental = UNARY[name]
    check(fn(t), fn(torch.from_numpy(x.copy())), rtol=TRANSCENDENTAL_RTOL if transcendental else 1e-5)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", [(), (0, 4), (1,), (7,), (3, 13)])
@pytest.mark.parametrize("name", UNARY)
def test_unary(name, shape, device, rng):
    x = rand(rng, small(device, shape, tuple(min(s, 5) for s in shape)), "float32", UNARY[name][1])
    check_unary(name, x, Tensor(x, device=device))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name, dtype", UNARY_DTYPE_CASES)
def test_unary_dtypes(name, dtype, device, rng):
    x = rand(rng, (3, 5), dtype, UNARY[name][1])
    check_unary(name, x, Tensor(x, device=device))


@pytest.mark.parametrize("name, view, device", per_device(with_views(list(UNARY))))
def test_unary_views(name, view, device, rng):
    t, x = as_view(rand(rng, (2, 3, 4), "float32", UNARY[name][1]), view, device)
    check_unary(name, x, t)


@pytest.mark.parametrize("device", DEVICES)
def test_unary_special_values(device):
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, -1e30], dtype=np.float32)
    t, tt = Tensor(x, device=device), torch.from_numpy(x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(t.reciprocal(), tt.reciprocal())
        check(t.relu(), tt.relu())
        check(-t, -tt)
        check(t.abs(), tt.abs())
        check(t.trunc(), tt.trunc())
        check(t.logical_not(), tt.logical_not())
        check(t.sqrt(), tt.sqrt())


@pytest.mark.parametrize("device", DEVICES)
def test_unary_bool_errors(device):
    with pytest.raises(RuntimeError):
        -Tensor([True, False], device=device)


# ---------------------------------------------------------------- binary elementwise

# name -> (op on unigrad/torch tensors or python scalars, lhs domain, rhs domain)
BINARY: dict[str, tuple[Callable, str, str]] = {
    "add": (lambda a, b: a + b, "any", "any"),
    "sub": (lambda a, b: a - b, "any", "any"),
    "mul": (lambda a, b: a * b, "any", "any"),
    "truediv": (lambda a, b: a / b, "any", "nonzero"),
    "floordiv": (lambda a, b: a // b, "halves", "nonzero"),
    "mod": (lambda a, b: a % b, "halves", "nonzero"),
    "maximum": (lambda a, b: a.maximum(b), "halves", "halves"),
    "minimum": (lambda a, b: a.minimum(b), "halves", "halves"),
    "lt": (lambda a, b: a < b, "halves", "halves"),
    "gt": (lambda a, b: a > b, "halves", "halves"),
    "le": (lambda a, b: a <= b, "halves", "halves"),
    "ge": (lambda a, b: a >= b, "halves", "halves"),
    "eq": (lambda a, b: a == b, "halves", "halves"),
    "ne": (lambda a, b: a != b, "halves", "halves"),
    "and": (lambda a, b: a & b, "any", "any"),
    "or": (lambda a, b: a | b, "any", "any"),
    "xor": (lambda a, b: a ^ b, "any", "any"),
    "lshift": (lambda a, b: a << b, "any", "shift"),
    "rshift": (lambda a, b: a >> b, "any", "shift"),
}
BINARY_DTYPES = ("float32", "int32", "int64", "uint8", "bool")  # float64, int8...: see the promotion tests
BINARY_DTYPE_CASES = [
    (name, dt) for name, (fn, _, _) in BINARY.items() for dt in BINARY_DTYPES if torch_supports(fn, dt, dt)
]
# the first dtype each op supports: the one used for shape, broadcast and view tests
BINARY_MAIN_DTYPE = {name: next(dt for n, dt in BINARY_DTYPE_CASES if n == name) for name in BINARY}


def binary_inputs(
    rng: np.random.Generator, name: str, shapes: tuple[tuple[int, ...], tuple[int, ...]], dts: tuple[str, str]
) -> tuple[np.ndarray, np.ndarray]:
    _, dom_a, dom_b = BINARY[name]
    return rand(rng, shapes[0], dts[0], dom_a), rand(rng, shapes[1], dts[1], dom_b)


def check_binary(name: str, xa: np.ndarray, xb: np.ndarray, ta: Tensor, tb: Tensor) -> None:
    fn = BINARY[name][0]
    check(fn(ta, tb), fn(torch.from_numpy(xa.copy()), torch.from_numpy(xb.copy())))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name, dtype", BINARY_DTYPE_CASES)
def test_binary_dtypes(name, dtype, device, rng):
    xa, xb = binary_inputs(rng, name, ((3, 5), (3, 5)), (dtype, dtype))
    check_binary(name, xa, xb, Tensor(xa, device=device), Tensor(xb, device=device))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", [(), (0,), (13,), (7, 1, 3)])
@pytest.mark.parametrize("name", BINARY)
def test_binary_shapes(name, shape, device, rng):
    dt = BINARY_MAIN_DTYPE[name]
    xa, xb = binary_inputs(rng, name, (shape, shape), (dt, dt))
    check_binary(name, xa, xb, Tensor(xa, device=device), Tensor(xb, device=device))


BROADCAST_SHAPES = [
    ((3, 1), (1, 4)),
    ((5,), (2, 3, 5)),
    ((), (4,)),
    ((4,), ()),
    ((2, 1, 3), (4, 1)),
    ((7, 13), (13,)),
    ((0, 3), (1, 3)),
    ((1,), (0,)),
    ((2, 0, 1), (1, 5)),
    ((1, 1), (3, 1, 1)),
]


BROADCAST_OPS = ["add", "sub", "truediv", "mod", "lt", "eq", "maximum", "xor"]


@pytest.mark.parametrize(
    "name, shapes, device", per_device([(name, shapes) for name in BROADCAST_OPS for shapes in BROADCAST_SHAPES])
)
def test_binary_broadcast(name, shapes, device, rng):
    dt = BINARY_MAIN_DTYPE[name]
    xa, xb = binary_inputs(rng, name, shapes, (dt, dt))
    check_binary(name, xa, xb, Tensor(xa, device=device), Tensor(xb, device=device))


def test_broadcast_mismatch_raises():
    with pytest.raises(RuntimeError):
        Tensor.ones(3, 2) + Tensor.ones(3)
    with pytest.raises(RuntimeError):
        Tensor.ones(2, 3) * Tensor.ones(3, 3, 1)


PROMOTION_PAIRS = [
    ("int32", "int64"),
    ("int64", "int32"),
    ("int32", "float32"),
    ("int64", "float64"),
    ("float32", "float64"),
    ("bool", "int32"),
    ("bool", "float32"),
    ("uint8", "int8"),
    ("uint8", "int32"),
    ("int8", "int16"),
    ("float16", "float32"),
    ("uint8", "bool"),
    ("int8", "float64"),
    ("float64", "float64"),
    ("int8", "int8"),
]
PROMOTION_CASES = [
    (name, pair)
    for name in ("add", "truediv", "mod", "minimum", "eq", "or")
    for pair in PROMOTION_PAIRS
    if torch_supports(BINARY[name][0], *pair)
]


@pytest.mark.parametrize("name, dts, device", per_device(PROMOTION_CASES))
def test_binary_promotion(name, dts, device, rng):
    xa, xb = binary_inputs(rng, name, ((2, 3), (2, 3)), dts)
    check_binary(name, xa, xb, Tensor(xa, device=device), Tensor(xb, device=device))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(
    "name, view", with_views(["add", "sub", "mul", "truediv", "floordiv", "mod", "minimum", "ge", "ne", "and"])
)
def test_binary_views(name, view, device, rng):
    dt = BINARY_MAIN_DTYPE[name]
    xa, xb = binary_inputs(rng, name, ((2, 3, 4), (2, 3, 4)), (dt, dt))
    ta, ra = as_view(xa, view, device)
    tb, rb = as_view(xb, view, device)
    check_binary(name, ra, rb, ta, tb)


@pytest.mark.parametrize("device", DEVICES)
def test_binary_view_mix(device, rng):
    # a permuted view with a flipped one, a padded one with an expanded one
    x, y = rand(rng, (4, 3), "float32"), rand(rng, (3, 4), "float32")
    a, b = Tensor(x, device=device), Tensor(y, device=device)
    check(a.T + b.flip(1), torch.from_numpy(x).T + torch.from_numpy(y).flip(1))
    z = rand(rng, (1, 4), "float32")
    ref = torch.nn.functional.pad(torch.from_numpy(x), (0, 1, 1, 0)) * torch.from_numpy(z).expand(5, 4)
    check(a.pad(((1, 0), (0, 1))) * Tensor(z, device=device).expand(5, 4), ref)


def test_binary_builds_one_node():
    """a - b and a <op> float are one ALU node over the operands (the hot path: no broadcast, no cast, no
    negate-then-add); the result still equals PyTorch's, scalar on either side."""
    from unigrad.ir.ops import Ops

    x, y = np.float32([1.5, -2.0, 3.25]), np.float32([0.5, 4.0, -1.0])
    a, b = Tensor(x), Tensor(y)
    for out, op in [(a - b, Ops.SUB), (a + b, Ops.ADD), (a * 0.5, Ops.MUL), (2.0 - a, Ops.SUB)]:
        assert out.uop.op is op and a.uop in out.uop.src, out.uop
    np.testing.assert_array_equal((a - b).numpy(), x - y)
    np.testing.assert_array_equal((2.0 - a).numpy(), 2.0 - x)
    np.testing.assert_array_equal((a * 0.5 - b).numpy(), x * 0.5 - y)


# (op, tensor dtype, python scalar, scalar on the left)
SCALAR_CASES = [
    ("add", "float32", 2, False),
    ("add", "int32", 1, False),
    ("add", "int32", 1.5, False),
    ("add", "int64", True, False),
    ("add", "bool", True, False),
    ("add", "bool", 1, False),
    ("add", "bool", 2.5, True),
    ("add", "uint8", 300, False),
    ("add", "uint8", -1, True),
    ("add", "int8", 2, True),
    ("sub", "float32", 2, True),
    ("sub", "int32", 2, True),
    ("sub", "int64", 0.5, False),
    ("sub", "float64", 1.25, True),
    ("mul", "int32", 3, True),
    ("mul", "int32", -2.5, False),
    ("mul", "float32", True, False),
    ("mul", "bool", 3, False),
    ("truediv", "float32", 3, True),
    ("truediv", "int32", 3, True),
    ("truediv", "int64", 2, False),
    ("truediv", "int32", 0.5, False),
    ("floordiv", "int32", 7, True),
    ("floordiv", "int64", -3, False),
    ("floordiv", "float32", 2, False),
    ("mod", "int32", 7, True),
    ("mod", "int64", -3, False),
    ("mod", "int32", 4, False),
    ("mod", "float32", 1.5, False),
    ("maximum", "int32", 0, False),
    ("maximum", "float32", 0.5, False),
    ("maximum", "int64", 1.5, False),
    ("minimum", "int32", 1, False),
    ("minimum", "float32", -1, False),
    ("lt", "float32", 0.5, False),
    ("lt", "int32", 1.5, False),
    ("gt", "int64", 0, False),
    ("le", "int32", 2, False),
    ("ge", "float32", 0, False),
    ("eq", "int32", 1, False),
    ("eq", "float32", 1.0, False),
    ("ne", "bool", True, False),
    ("eq", "int32", 1.0, False),
    ("and", "int32", 3, False),
    ("and", "bool", True, True),
    ("and", "int64", 6, True),
    ("or", "int32", 8, True),
    ("or", "bool", False, False),
    ("xor", "int64", -1, True),
    ("xor", "uint8", 255, False),
    ("lshift", "int32", 2, False),
    ("rshift", "int64", 1, False),
    ("rshift", "int32", 3, False),
]


def scalar_ref_op(name: str) -> Callable:
    """PyTorch's maximum/minimum take no Python scalars; a 0-d tensor promotes like one."""
    fn = BINARY[name][0]
    if name in ("maximum", "minimum"):
        return lambda a, b: fn(a, torch.tensor(b)) if isinstance(a, torch.Tensor) else fn(b, torch.tensor(a))
    return fn


@pytest.mark.parametrize("name, dtype, scalar, reflected, device", per_device(SCALAR_CASES))
def test_binary_scalar(name, dtype, scalar, reflected, device, rng):
    _, dom_a, dom_b = BINARY[name]
    x = rand(rng, (2, 5), dtype, dom_b if reflected else dom_a)
    fn, ref_fn = BINARY[name][0], scalar_ref_op(name)
    t, tt = Tensor(x, device=device), torch.from_numpy(x)
    if reflected:
        check(fn(scalar, t), ref_fn(scalar, tt))
    else:
        check(fn(t, scalar), ref_fn(tt, scalar))


@pytest.mark.parametrize("dtype", ["float32", "int32", "float16"])
@pytest.mark.parametrize("scalar", [np.float32(0.5), np.float64(-2.0), np.int64(3), np.int32(-1), np.bool_(True)])
def test_binary_numpy_scalar(dtype, scalar, rng):
    """A numpy scalar is taken as the Python scalar it holds, on either side, as torch does (it was a TypeError)."""
    x = rand(rng, (3, 4), dtype, "positive")
    t, tt = Tensor(x), torch.from_numpy(x)
    fns = [lambda a, b: a * b, lambda a, b: a + b, lambda a, b: a < b, lambda a, b: b * a]
    if not isinstance(scalar, np.bool_):  # torch refuses bool - tensor and tensor ** bool
        fns += [lambda a, b: b - a, lambda a, b: a ** abs(b)]
    for fn in fns:
        check(fn(t, scalar), fn(tt, scalar.item()), rtol=1e-3, atol=1e-3)
    check(t.maximum(scalar), torch.maximum(tt, torch.tensor(scalar.item())), rtol=1e-3)
    check((t > 1).where(t, scalar), torch.where(tt > 1, tt, scalar.item()), rtol=1e-3)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["float32", "int32", "bool"])
def test_binary_scalar_0d(dtype, device, rng):
    x = rand(rng, (), dtype)
    t, tt = Tensor(x, device=device), torch.from_numpy(x.copy())
    check(t * 2, tt * 2)
    check(3 + t, 3 + tt)
    check(t == 1, tt == 1)


@pytest.mark.parametrize("device", DEVICES)
def test_floor_semantics_negative_ints(device):
    a = np.array([7, -7, 7, -7, 0, 1, -1, 6, -6, 5], dtype=np.int64)
    b = np.array([2, 2, -2, -2, 3, -3, 3, 3, -3, 1], dtype=np.int64)
    ta, tb = Tensor(a, device=device), Tensor(b, device=device)
    check(ta // tb, a // b)
    check(ta % tb, a % b)
    fa, fb = a.astype(np.float32) + 0.5, b.astype(np.float32)
    check(Tensor(fa, device=device) // Tensor(fb, device=device), torch.from_numpy(fa) // torch.from_numpy(fb))
    check(Tensor(fa, device=device) % Tensor(fb, device=device), torch.from_numpy(fa) % torch.from_numpy(fb))


@pytest.mark.parametrize("device", DEVICES)
def test_int_overflow_wraps(device):
    a = np.array([2**31 - 1, -(2**31), 100], dtype=np.int32)
    u = np.array([250, 3, 128], dtype=np.uint8)
    check(Tensor(a, device=device) + 1, torch.from_numpy(a) + 1)
    check(Tensor(a, device=device) * 2, torch.from_numpy(a) * 2)
    check(Tensor(u, device=device) + 10, torch.from_numpy(u) + 10)
    check(Tensor(u, device=device) * Tensor(u, device=device), torch.from_numpy(u) * torch.from_numpy(u))


@pytest.mark.parametrize("device", DEVICES)
def test_div_rounding_modes(device, rng):
    a, b = rand(rng, (3, 4), "int32"), rand(rng, (3, 4), "int32", "nonzero")
    ta, tb, ra, rb = Tensor(a, device=device), Tensor(b, device=device), torch.from_numpy(a), torch.from_numpy(b)
    check(ta.div(tb, rounding_mode="trunc"), torch.div(ra, rb, rounding_mode="trunc"))
    check(ta.div(tb, rounding_mode="floor"), torch.div(ra, rb, rounding_mode="floor"))
    fa, fb = rand(rng, (3, 4), "float32"), rand(rng, (3, 4), "float32", "nonzero")
    check(
        Tensor(fa, device=device).div(Tensor(fb, device=device), rounding_mode="trunc"),
        torch.div(torch.from_numpy(fa), torch.from_numpy(fb), rounding_mode="trunc"),
    )


@pytest.mark.parametrize("device", DEVICES)
def test_binary_errors(device):
    b, f = Tensor([True, False], device=device), Tensor([1.0, 2.0], device=device)
    with pytest.raises(RuntimeError):
        b - b
    with pytest.raises(RuntimeError):
        f & f
    with pytest.raises(RuntimeError):
        f << 1
    with pytest.raises(RuntimeError):
        f + Tensor([1.0, 2.0], device="PYTHON" if device == "CPU" else "CPU")


@pytest.mark.parametrize("device", DEVICES)
def test_invert(device, rng):
    x, b = rand(rng, (2, 3), "int32"), rand(rng, (2, 3), "bool")
    check(~Tensor(x, device=device), ~torch.from_numpy(x))
    check(~Tensor(b, device=device), ~torch.from_numpy(b))


# ---------------------------------------------------------------- where


WHERE_CASES = [  # (cond shape, x, y): a shape/dtype pair is a tensor, anything else a python scalar
    ((3, 4), ((3, 4), "float32"), ((3, 4), "float32")),
    ((3, 1), ((1, 4), "float32"), ((4,), "float32")),
    ((), ((2, 3), "int32"), ((), "int32")),
    ((2, 3), ((2, 3), "int32"), ((2, 3), "float32")),
    ((2, 3), ((2, 3), "int64"), 1.5),
    ((2, 3), ((2, 3), "float32"), 1),
    ((2, 3), 2, ((3,), "int32")),
    ((2, 3), 1, 0),
    ((2, 3), 1.0, 0),
    ((2, 3), True, False),
    ((0, 3), ((1, 3), "float32"), 1.5),
    ((7, 1), ((1, 13), "bool"), ((7, 13), "bool")),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", WHERE_CASES)
def test_where(case, device, rng):
    cond_shape, xs, ys = case
    c = rand(rng, cond_shape, "bool")

    def make(v):
        if isinstance(v, tuple):
            arr = rand(rng, v[0], v[1])
            return Tensor(arr, device=device), torch.from_numpy(arr)
        return v, v

    (x, rx), (y, ry) = make(xs), make(ys)
    check(Tensor(c, device=device).where(x, y), torch.where(torch.from_numpy(c), rx, ry))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("view", VIEWS)
def test_where_views(view, device, rng):
    c, rc = as_view(rand(rng, (2, 3, 4), "bool"), view, device)
    x, rx = as_view(rand(rng, (2, 3, 4), "float32"), view, device)
    y, ry = as_view(rand(rng, (2, 3, 4), "int32"), view, device)
    check(c.where(x, y), torch.where(torch.from_numpy(rc), torch.from_numpy(rx), torch.from_numpy(ry)))


@pytest.mark.parametrize("device", DEVICES)
def test_where_nonbool_condition(device, rng):
    c, x = rand(rng, (3, 4), "float32", "halves"), rand(rng, (3, 4), "int32")
    ref = torch.where(torch.from_numpy(c) != 0, torch.from_numpy(x), -1)
    check(Tensor(c, device=device).where(Tensor(x, device=device), -1), ref)


# ---------------------------------------------------------------- casts


CAST_DTYPES = ["float32", "float64", "float16", "int8", "int32", "int64", "uint8", "bool"]


@pytest.mark.parametrize(
    "src, dst, device",
    per_device([(s, d) for s in ["float32", "int32", "bool", "uint8", "float64"] for d in CAST_DTYPES]),
)
def test_cast(src, dst, device, rng):
    x = rand(rng, (3, 5), src, "nonneg" if dst == "uint8" else "any")  # negative float -> uint8 is UB in C
    check(Tensor(x, device=device).cast(getattr(dtypes, dst)), torch.from_numpy(x).to(getattr(torch, dst)))


@pytest.mark.parametrize("device", DEVICES)
def test_cast_helpers(device, rng):
    x = rand(rng, (4,), "float32")
    t, tt = Tensor(x, device=device), torch.from_numpy(x)
    check(t.int(), tt.int())
    check(t.long(), tt.long())
    if device != "CL" or Device["CL"].info.supports(dtypes.float16):  # PoCL has no cl_khr_fp16
        check(t.half(), tt.half())
    check(t.bool(), tt.bool())
    check(t.int().float(), tt.int().float())
    check(t.cast("float64"), tt.double())


# ---------------------------------------------------------------- movement


def np_pad(x: np.ndarray, pairs, value=0) -> np.ndarray:
    """numpy's pad, with negative amounts cropping as in PyTorch."""
    crop = tuple(slice(-min(b, 0), s + min(a, 0)) for (b, a), s in zip(pairs, x.shape))
    return np.pad(x[crop], [(max(b, 0), max(a, 0)) for b, a in pairs], constant_values=value).astype(x.dtype)


MOVEMENT_CASES: list[tuple[str, tuple[int, ...], Callable, Callable]] = [
    # (id, input shape, unigrad op, numpy op)
    ("reshape", (2, 3, 4), lambda t: t.reshape(4, 6), lambda x: x.reshape(4, 6)),
    ("reshape_tuple", (2, 3, 4), lambda t: t.reshape((6, 4)), lambda x: x.reshape(6, 4)),
    ("reshape_infer", (2, 3, 4), lambda t: t.reshape(-1, 2), lambda x: x.reshape(-1, 2)),
    ("reshape_infer_mid", (2, 3, 4), lambda t: t.reshape(3, -1, 2), lambda x: x.reshape(3, -1, 2)),
    ("reshape_flat", (7, 13), lambda t: t.reshape(-1), lambda x: x.reshape(-1)),
    ("reshape_to_0d", (1, 1), lambda t: t.reshape(()), lambda x: x.reshape(())),
    ("reshape_from_0d", (), lambda t: t.reshape(1, 1, 1), lambda x: x.reshape(1, 1, 1)),
    ("reshape_zero", (0, 3), lambda t: t.reshape(3, 0), lambda x: x.reshape(3, 0)),
    ("reshape_zero_infer", (0, 3), lambda t: t.reshape(-1, 3), lambda x: x.reshape(-1, 3)),
    ("view", (2, 6), lambda t: t.view(3, 4), lambda x: x.reshape(3, 4)),
    ("permute", (2, 3, 4), lambda t: t.permute(2, 0, 1), lambda x: x.transpose(2, 0, 1)),
    ("permute_tuple", (2, 3, 4), lambda t: t.permute((1, 2, 0)), lambda x: x.transpose(1, 2, 0)),
    ("permute_neg", (2, 3, 4), lambda t: t.permute(-1, 0, -2), lambda x: x.transpose(2, 0, 1)),
    ("permute_zero", (2, 0, 3), lambda t: t.permute(2, 1, 0), lambda x: x.transpose(2, 1, 0)),
    ("transpose", (2, 3, 4), lambda t: t.transpose(0, 2), lambda x: x.swapaxes(0, 2)),
    ("transpose_default", (3, 5), lambda t: t.transpose(), lambda x: x.T),
    ("transpose_neg", (2, 3, 4), lambda t: t.transpose(-1, -2), lambda x: x.swapaxes(-1, -2)),
    ("T_2d", (7, 13), lambda t: t.T, lambda x: x.T),
    ("T_3d", (2, 3, 4), lambda t: t.T, lambda x: x.T),
    ("T_1d", (7,), lambda t: t.T, lambda x: x.T),
    ("T_0d", (), lambda t: t.T, lambda x: x.T),
    ("expand", (3, 1), lambda t: t.expand(3, 4), lambda x: np.broadcast_to(x, (3, 4))),
    ("expand_tuple_new_dims", (3, 1), lambda t: t.expand((2, 3, 5)), lambda x: np.broadcast_to(x, (2, 3, 5))),
    ("expand_minus_one", (1, 4), lambda t: t.expand(-1, 4), lambda x: x),
    ("expand_keep", (1, 4), lambda t: t.expand(3, -1), lambda x: np.broadcast_to(x, (3, 4))),
    ("expand_0d", (), lambda t: t.expand(2, 3), lambda x: np.broadcast_to(x, (2, 3))),
    ("expand_to_zero", (1, 3), lambda t: t.expand(0, 3), lambda x: np.broadcast_to(x, (0, 3))),
    ("pad_pairs", (3, 4), lambda t: t.pad(((1, 2), (0, 1))), lambda x: np_pad(x, ((1, 2), (0, 1)))),
    ("pad_flat_last", (3, 4), lambda t: t.pad((1, 2)), lambda x: np_pad(x, ((0, 0), (1, 2)))),
    ("pad_flat_two", (3, 4), lambda t: t.pad((1, 2, 3, 0)), lambda x: np_pad(x, ((3, 0), (1, 2)))),
    ("pad_negative", (4, 5), lambda t: t.pad(((-1, 2), (0, -2))), lambda x: np_pad(x, ((-1, 2), (0, -2)))),
    ("pad_flat_negative", (4, 5), lambda t: t.pad((-2, 1, 1, -3)), lambda x: np_pad(x, ((1, -3), (-2, 1)))),
    ("pad_value", (3, 4), lambda t: t.pad(((1, 1), (2, 0)), value=2), lambda x: np_pad(x, ((1, 1), (2, 0)), 2)),
    ("pad_zero_size", (0, 3), lambda t: t.pad(((1, 1), (0, 0)), value=3), lambda x: np_pad(x, ((1, 1), (0, 0)), 3)),
    ("pad_1d", (7,), lambda t: t.pad(((2, 3),)), lambda x: np_pad(x, ((2, 3),))),
    ("pad_nothing", (2, 3), lambda t: t.pad(((0, 0), (0, 0))), lambda x: x),
    ("pad_crop_all", (2, 3), lambda t: t.pad(((0, 0), (-3, 0))), lambda x: x[:, 3:]),
    ("shrink", (4, 5), lambda t: t.shrink(((1, 3), (0, 4))), lambda x: x[1:3, 0:4]),
    ("shrink_none", (4, 5), lambda t: t.shrink((None, (2, 5))), lambda x: x[:, 2:5]),
    ("shrink_empty", (4, 5), lambda t: t.shrink(((2, 2), (0, 5))), lambda x: x[2:2]),
    ("shrink_full", (4, 5), lambda t: t.shrink(((0, 4), (0, 5))), lambda x: x),
    ("shrink_3d", (3, 13, 2), lambda t: t.shrink(((1, 2), (3, 10), (1, 2))), lambda x: x[1:2, 3:10, 1:2]),
    ("flip_0", (3, 4), lambda t: t.flip(0), lambda x: np.flip(x, 0)),
    ("flip_neg", (3, 4), lambda t: t.flip(-1), lambda x: np.flip(x, -1)),
    ("flip_both", (3, 4), lambda t: t.flip((0, 1)), lambda x: np.flip(x, (0, 1))),
    ("flip_varargs", (2, 3, 4), lambda t: t.flip(0, 2), lambda x: np.flip(x, (0, 2))),
    ("flip_size1", (1, 7), lambda t: t.flip(0), lambda x: x),
    ("flip_zero", (0, 3), lambda t: t.flip(1), lambda x: x),
    ("squeeze", (1, 3, 1), lambda t: t.squeeze(), lambda x: x.squeeze()),
    ("squeeze_dim", (1, 3, 1), lambda t: t.squeeze(0), lambda x: x.squeeze(0)),
    ("squeeze_neg", (1, 3, 1), lambda t: t.squeeze(-1), lambda x: x.squeeze(-1)),
    ("squeeze_noop", (1, 3, 1), lambda t: t.squeeze(1), lambda x: x),
    ("squeeze_0d", (), lambda t: t.squeeze(), lambda x: x),
    ("squeeze_all_ones", (1, 1), lambda t: t.squeeze(), lambda x: x.reshape(())),
    ("unsqueeze_0", (3, 4), lambda t: t.unsqueeze(0), lambda x: x[None]),
    ("unsqueeze_mid", (3, 4), lambda t: t.unsqueeze(1), lambda x: x[:, None]),
    ("unsqueeze_neg", (3, 4), lambda t: t.unsqueeze(-1), lambda x: x[..., None]),
    ("unsqueeze_0d", (), lambda t: t.unsqueeze(0), lambda x: x.reshape(1)),
    ("flatten", (2, 3, 4), lambda t: t.flatten(), lambda x: x.reshape(-1)),
    ("flatten_start", (2, 3, 4), lambda t: t.flatten(1), lambda x: x.reshape(2, 12)),
    ("flatten_range", (2, 3, 4), lambda t: t.flatten(0, 1), lambda x: x.reshape(6, 4)),
    ("flatten_neg", (2, 3, 4, 1), lambda t: t.flatten(-3, -2), lambda x: x.reshape(2, 12, 1)),
    ("flatten_0d", (), lambda t: t.flatten(), lambda x: x.reshape(1)),
    ("flatten_zero", (2, 0, 3), lambda t: t.flatten(), lambda x: x.reshape(0)),
    ("chain", (4, 6), lambda t: t.reshape(2, 12).T.flip(0).shrink(((2, 10), None)).pad(((1, 0), (0, 2))),
     lambda x: np_pad(np.flip(x.reshape(2, 12).T, 0)[2:10], ((1, 0), (0, 2)))),
]  # fmt: skip


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", MOVEMENT_CASES, ids=[c[0] for c in MOVEMENT_CASES])
def test_movement(case, device, rng):
    _, shape, op, np_op = case
    x = rand(rng, shape, "float32")
    check(op(Tensor(x, device=device)), np_op(x))


# every 4th case, without the pad-value cases (an int pad value on a bool tensor: see test_pad_value_dtypes)
MOVEMENT_DTYPE_CASES = [c for c in MOVEMENT_CASES[1::4] if c[0] not in ("pad_value", "pad_zero_size")]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["int8", "bool", "int64"])
@pytest.mark.parametrize("case", MOVEMENT_DTYPE_CASES, ids=[c[0] for c in MOVEMENT_DTYPE_CASES])
def test_movement_dtypes(case, dtype, device, rng):
    _, shape, op, np_op = case
    x = rand(rng, shape, dtype)
    check(op(Tensor(x, device=device)), np_op(x))


MOVEMENT_VIEW_CASES = per_device(with_views(MOVEMENT_CASES[::2]))


@pytest.mark.parametrize(
    "case, view, device", MOVEMENT_VIEW_CASES, ids=[f"{c[0]}-{v}-{d}" for c, v, d in MOVEMENT_VIEW_CASES]
)
def test_movement_of_views(case, view, device, rng):
    _, shape, op, np_op = case
    t, x = as_view(rand(rng, shape, "float32"), view, device)
    check(op(t), np_op(x))


MOVEMENT_COMPUTE_CASES = per_device([(c,) for c in MOVEMENT_CASES[::2]])


@pytest.mark.parametrize("case, device", MOVEMENT_COMPUTE_CASES, ids=[f"{c[0]}-{d}" for c, d in MOVEMENT_COMPUTE_CASES])
def test_movement_then_compute(case, device, rng):
    """A moved tensor as the input of arithmetic and a reduction (movement becomes index math in a kernel)."""
    _, shape, op, np_op = case
    x = rand(rng, shape, "float32", "positive")
    ref = np_op(x)
    out = op(Tensor(x, device=device)) * 2 + 1
    check(out, ref * 2 + 1)
    check(op(Tensor(x, device=device)).sum(), np.float32(np.sum(ref.astype(np.float64))))


@pytest.mark.parametrize("device", DEVICES)
def test_pad_torch_flat_form(device, rng):
    x = rand(rng, (2, 3, 4), "float32")
    for pads in [(1, 1), (0, 2, 1, 0), (1, 0, 0, 1, 2, 2), (-1, 2, 1, -1)]:
        check(Tensor(x, device=device).pad(pads), torch.nn.functional.pad(torch.from_numpy(x), pads))
    check(
        Tensor(x, device=device).pad((1, 2, 0, 1), value=-1.5),
        torch.nn.functional.pad(torch.from_numpy(x), (1, 2, 0, 1), value=-1.5),
    )


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype, value", [("bool", True), ("int32", 7), ("uint8", 3), ("float64", 2.5)])
def test_pad_value_dtypes(dtype, value, device, rng):
    x = rand(rng, (2, 3), dtype)
    check(
        Tensor(x, device=device).pad((1, 1), value=value),
        torch.nn.functional.pad(torch.from_numpy(x), (1, 1), value=value),
    )


@pytest.mark.parametrize("device", DEVICES)
def test_pad_float_value_keeps_int_dtype(device):
    x = np.array([1, 2, 3], dtype=np.int64)
    check(
        Tensor(x, device=device).pad((1, 1), value=1.5), torch.nn.functional.pad(torch.from_numpy(x), (1, 1), value=1.5)
    )


def test_movement_errors():
    t = Tensor.ones(2, 3)
    for bad in [
        lambda: t.reshape(4, 2),
        lambda: t.reshape(-1, -1),
        lambda: t.reshape(-1, 4),
        lambda: t.expand(3, 3),
        lambda: t.expand(3),
        lambda: t.permute(0, 0),
        lambda: t.permute(0),
        lambda: t.shrink(((0, 3), (0, 3))),
        lambda: t.shrink(((2, 1), (0, 3))),
        lambda: t.pad(((1, 1),)),
        lambda: t.pad((1, 1, 1)),
    ]:
        with pytest.raises(RuntimeError):
            bad()
    with pytest.raises(IndexError):
        t.permute(0, 2)
    with pytest.raises(IndexError):
        t.flip(2)
    with pytest.raises(IndexError):
        t.unsqueeze(4)


# ---------------------------------------------------------------- reductions

AXES = [None, 0, 1, -1, (0, 2), (-1, 0), (0, 1, 2)]
REDUCE_OPS = {
    "sum": (lambda t, ax, kd: t.sum(ax, keepdim=kd), np.sum),
    "max": (lambda t, ax, kd: t.max(ax, keepdim=kd), np.max),
    "min": (lambda t, ax, kd: t.min(ax, keepdim=kd), np.min),
    "prod": (lambda t, ax, kd: t.prod(ax, keepdim=kd), np.prod),
    "mean": (lambda t, ax, kd: t.mean(ax, keepdim=kd), np.mean),
}
# PyTorch's result dtypes: sum/prod widen ints and bools to int64; mean of ints is a float32 mean
REDUCE_TORCH_DTYPE = {
    "sum": lambda d: torch.ones(1, dtype=d).sum().dtype,
    "max": lambda d: d,
    "min": lambda d: d,
    "prod": lambda d: torch.ones(1, dtype=d).prod().dtype,
    "mean": lambda d: d if d.is_floating_point else torch.float32,
}


def reduce_domain(name: str) -> str:
    # positive sums have no cancellation, so float32 accumulation error stays relative
    return {"sum": "positive", "mean": "positive", "prod": "unit"}.get(name, "halves")


def check_reduce(name: str, x: np.ndarray, t: Tensor, axis, keepdim: bool) -> None:
    fn, np_fn = REDUCE_OPS[name]
    out = fn(t, axis, keepdim)
    np_axis = None if x.ndim == 0 else axis
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # mean of an empty axis
        ref = np_fn(
            x.astype(np.float64) if x.dtype.kind == "f" or name == "mean" else x, axis=np_axis, keepdims=keepdim
        )
    want = torch_dtype_name(torch.empty(0, dtype=REDUCE_TORCH_DTYPE[name](getattr(torch, x.dtype.name))))
    check(out, np.asarray(ref).astype(want), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("axis", AXES, ids=str)
@pytest.mark.parametrize("name", REDUCE_OPS)
def test_reduce(name, axis, keepdim, device, rng):
    x = rand(rng, small(device, (3, 13, 7), (3, 5, 4)), "float32", reduce_domain(name))
    check_reduce(name, x, Tensor(x, device=device), axis, keepdim)


REDUCE_DTYPE_CASES = [
    (name, axis, dtype)
    for name in REDUCE_OPS
    for axis in [None, (0, 2)]
    for dtype in ["int32", "uint8", "bool", "float64", "int8"]
]


@pytest.mark.parametrize("name, axis, dtype, device", per_device(REDUCE_DTYPE_CASES), ids=str)
def test_reduce_dtypes(name, axis, dtype, device, rng):
    x = rand(rng, (2, 3, 4), dtype, reduce_domain(name))
    check_reduce(name, x, Tensor(x, device=device), axis, False)


REDUCE_SHAPE_CASES = [
    ((), None),
    ((), 0),
    ((), -1),
    ((1,), 0),
    ((13,), 0),
    ((7, 1), 1),
    ((1, 7), 0),
    ((0,), None),
    ((0, 3), 0),
    ((0, 3), 1),
    ((3, 0), (0, 1)),
    ((2, 1, 0), 1),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("shape, axis", REDUCE_SHAPE_CASES, ids=str)
@pytest.mark.parametrize("name", REDUCE_OPS)
def test_reduce_shapes(name, shape, axis, keepdim, device, rng):
    x = rand(rng, shape, "float32", reduce_domain(name))
    axes = range(len(shape)) if axis is None else (axis,) if isinstance(axis, int) else axis
    empty_axis = len(shape) > 0 and any(shape[a] == 0 for a in axes)
    if name in ("max", "min") and empty_axis:
        with pytest.raises(RuntimeError):
            REDUCE_OPS[name][0](Tensor(x, device=device), axis, keepdim)
        return
    check_reduce(name, x, Tensor(x, device=device), axis, keepdim)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name, view", with_views(list(REDUCE_OPS), every_view=2))
def test_reduce_views(name, view, device, rng):
    t, x = as_view(rand(rng, (2, 3, 4), "float32", reduce_domain(name)), view, device)
    check_reduce(name, x, t, (0, 2), False)
    check_reduce(name, x, t, -2, True)


@pytest.mark.parametrize("device", DEVICES)
def test_reduce_sum_dtype_arg(device, rng):
    x = rand(rng, (3, 4), "int32")
    t, tt = Tensor(x, device=device), torch.from_numpy(x)
    check(t.sum(1, dtype=dtypes.float32), tt.sum(1, dtype=torch.float32))
    check(t.sum(dtype=dtypes.int32), tt.sum(dtype=torch.int32))
    check(t.prod(0, dtype=dtypes.float64), tt.prod(0, dtype=torch.float64))


@pytest.mark.parametrize("device", DEVICES)
def test_reduce_special_values(device):
    x = np.array([[1.0, np.inf, -np.inf], [np.nan, 2.0, 3.0], [-0.0, 0.0, -5.0]], dtype=np.float32)
    t, tt = Tensor(x, device=device), torch.from_numpy(x)
    check(t.max(1), tt.amax(1))
    check(t.min(1), tt.amin(1))
    check(t.sum(0), tt.sum(0))


def test_reduce_axis_errors():
    t = Tensor.ones(2, 3)
    with pytest.raises(IndexError):
        t.sum(2)
    with pytest.raises(IndexError):
        t.max(-3)
    with pytest.raises(IndexError):
        Tensor(1.0).sum(1)


@settings(max_examples=25, deadline=None, derandomize=True)
@given(
    shape=st.lists(st.integers(0, 4), min_size=0, max_size=3),
    data=st.data(),
)
def test_reduce_sum_hypothesis_python(shape, data):
    axis = data.draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1))) if shape else None
    keepdim = data.draw(st.booleans())
    x = np.asarray(np.random.default_rng(len(shape)).integers(-9, 10, shape)).astype(np.int32)
    t = Tensor(x, device="PYTHON")
    check(t.sum(axis, keepdim=keepdim), np.asarray(np.sum(x, axis=axis, keepdims=keepdim)).astype(np.int64))


@settings(max_examples=25, deadline=None, derandomize=True)
@given(
    a=st.lists(st.integers(1, 3), min_size=0, max_size=3),
    mask=st.lists(st.booleans(), min_size=3, max_size=3),
)
def test_broadcast_hypothesis_python(a, mask):
    b = [1 if m else s for s, m in zip(a, mask)][1:]  # b broadcasts against a: drop a leading dim, ones elsewhere
    rng = np.random.default_rng(0)
    x, y = np.asarray(rng.integers(-5, 6, a)).astype(np.int64), np.asarray(rng.uniform(-1, 1, b)).astype(np.float32)
    check(Tensor(x, device="PYTHON") * Tensor(y, device="PYTHON"), torch.from_numpy(x) * torch.from_numpy(y))


# ---------------------------------------------------------------- matmul

MATMUL_SHAPES = [
    ((5,), (5,)),
    ((3, 4), (4, 2)),
    ((4,), (4, 3)),
    ((3, 4), (4,)),
    ((2, 3, 4), (2, 4, 5)),
    ((2, 1, 3, 4), (5, 4, 2)),
    ((1, 1), (1, 1)),
    ((3, 0), (0, 4)),
    ((0, 3), (3, 2)),
    ((7, 1), (1, 7)),
    ((4,), (2, 4, 3)),
    ((2, 3, 4), (4,)),
]


def matmul_data(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    # multiples of 0.5 in [-2, 2]: products and their sums are exact, so any accumulation order agrees
    return (rng.integers(-4, 5, shape) / (2 if np.dtype(dtype).kind == "f" else 1)).astype(dtype)


@pytest.mark.parametrize(
    "shapes, dtype, device",
    per_device([(s, d) for s in MATMUL_SHAPES for d in ["float32", "int32", "int64", "float64"]]),
    ids=str,
)
def test_matmul(shapes, dtype, device, rng):
    a, b = matmul_data(rng, shapes[0], dtype), matmul_data(rng, shapes[1], dtype)
    ta, tb = Tensor(a, device=device), Tensor(b, device=device)
    ref = torch.from_numpy(a) @ torch.from_numpy(b)
    check(ta @ tb, ref)
    check(ta.matmul(tb), ref)
    check(ta.dot(tb), ref)


@pytest.mark.parametrize("device", DEVICES)
def test_matmul_random_floats(device, rng):
    m, k, n = small(device, (7, 13, 9), (5, 8, 3))
    a, b = rng.uniform(-1, 1, (m, k)).astype(np.float32), rng.uniform(-1, 1, (k, n)).astype(np.float32)
    ref = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32)
    check(Tensor(a, device=device) @ Tensor(b, device=device), ref, rtol=1e-5, atol=1e-5)


def test_matmul_packs_a_big_b(rng):
    """A big B (K*N*4 >= 2 MiB, N a multiple of 16, >= 256 rows) is read through a packed copy: two kernels (the
    copy, the matmul), values equal to torch's, gradients too; a B with N not a multiple of 16 is not packed."""
    from unigrad.runtime import realize as rt

    a, b = rng.uniform(-1, 1, (256, 512)).astype(np.float32), rng.uniform(-1, 1, (512, 1024)).astype(np.float32)
    ta, tb = Tensor(a, requires_grad=True), Tensor(b, requires_grad=True)
    out = (ta @ tb).realize()
    assert [k.arg.name[0] for k in rt.stats.last_kernels] == ["E", "r"]
    ref = torch.from_numpy(a).requires_grad_() @ torch.from_numpy(b).requires_grad_()
    check(out, ref.detach(), rtol=1e-4, atol=1e-4)
    g = rng.uniform(-1, 1, (256, 1024)).astype(np.float32)
    (out * Tensor(g)).sum().backward()
    tref_a, tref_b = torch.from_numpy(a).requires_grad_(), torch.from_numpy(b).requires_grad_()
    ((tref_a @ tref_b) * torch.from_numpy(g)).sum().backward()
    np.testing.assert_allclose(ta.grad.numpy(), tref_a.grad.numpy(), rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(tb.grad.numpy(), tref_b.grad.numpy(), rtol=1e-4, atol=1e-3)
    c = rng.uniform(-1, 1, (512, 1030)).astype(np.float32)
    (Tensor(a) @ Tensor(c)).realize()
    assert len(rt.stats.last_kernels) == 1


def test_matmul_copies_a_transposed_a(rng):
    """a.T @ b with a big transposed A: A is copied row-major first (a copy kernel beside B's packing, then the
    matmul); values and gradients equal torch's. A small one is read as it is."""
    from unigrad.runtime import realize as rt

    a, b = rng.uniform(-1, 1, (512, 256)).astype(np.float32), rng.uniform(-1, 1, (512, 512)).astype(np.float32)
    ta, tb = Tensor(a, requires_grad=True), Tensor(b, requires_grad=True)
    out = (ta.T @ tb).realize()
    assert sorted(kern.arg.name[0] for kern in rt.stats.last_kernels) == ["E", "E", "r"]
    ra, rb = torch.from_numpy(a).requires_grad_(), torch.from_numpy(b).requires_grad_()
    ref = ra.T @ rb
    check(out, ref.detach(), rtol=1e-4, atol=1e-4)
    g = rng.uniform(-1, 1, (256, 512)).astype(np.float32)
    (out * Tensor(g)).sum().backward()
    (ref * torch.from_numpy(g)).sum().backward()
    np.testing.assert_allclose(ta.grad.numpy(), ra.grad.numpy(), rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(tb.grad.numpy(), rb.grad.numpy(), rtol=1e-4, atol=1e-3)
    (Tensor(a[:64]).T @ Tensor(b[:64, :16])).realize()
    assert len(rt.stats.last_kernels) == 1


@pytest.mark.parametrize("m,k,n", [(130, 100, 1000), (128, 64, 256), (700, 64, 1000)])
def test_linear_copies_a_transposed_weight(m: int, k: int, n: int, rng) -> None:
    """x @ W.T (nn.Linear) with W of 64 KiB or more, under 128 rows or more, over fewer than 256 inputs (a longer
    reduce axis takes the kernel's vector lanes instead): W.T is copied contiguous first (a copy
    kernel, then the matmul: the tile's vector lanes along N read one row instead of gathering from N rows), for any
    N, a 1000-word decoder's included; values and gradients equal torch's. Few rows read W as it is."""
    from unigrad.runtime import realize as rt

    x, w = rng.uniform(-1, 1, (m, k)).astype(np.float32), rng.uniform(-1, 1, (n, k)).astype(np.float32)
    tx, tw = Tensor(x, requires_grad=True), Tensor(w, requires_grad=True)
    out = (tx @ tw.T).realize()
    assert [kern.arg.name[0] for kern in rt.stats.last_kernels] == ["E", "r"]
    rx, rw = torch.from_numpy(x).requires_grad_(), torch.from_numpy(w).requires_grad_()
    ref = rx @ rw.T
    check(out, ref.detach(), rtol=1e-4, atol=1e-4)
    g = rng.uniform(-1, 1, (m, n)).astype(np.float32)
    (out * Tensor(g)).sum().backward()
    (ref * torch.from_numpy(g)).sum().backward()
    np.testing.assert_allclose(tx.grad.numpy(), rx.grad.numpy(), rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(tw.grad.numpy(), rw.grad.numpy(), rtol=1e-4, atol=1e-3)
    (Tensor(x[:8]) @ Tensor(w).T).realize()
    assert len(rt.stats.last_kernels) == 1
    (Tensor(np.ones((m, 384), np.float32)) @ Tensor(np.ones((n, 384), np.float32)).T).realize()
    assert len(rt.stats.last_kernels) == 1


def test_matmul_packs_a_batch_of_transposed_bs(rng):
    """q @ k^T over a batch (attention scores): each B is a transposed view, packed per batch (a copy kernel, then
    the matmul), values and gradients equal torch's."""
    from unigrad.runtime import realize as rt

    q, k = rng.uniform(-1, 1, (4, 256, 64)).astype(np.float32), rng.uniform(-1, 1, (4, 512, 64)).astype(np.float32)
    tq, tk = Tensor(q, requires_grad=True), Tensor(k, requires_grad=True)
    out = (tq @ tk.transpose(1, 2)).realize()
    assert [kern.arg.name[0] for kern in rt.stats.last_kernels] == ["E", "r"]
    rq, rk = torch.from_numpy(q).requires_grad_(), torch.from_numpy(k).requires_grad_()
    ref = rq @ rk.transpose(1, 2)
    check(out, ref.detach(), rtol=1e-4, atol=1e-4)
    g = rng.uniform(-1, 1, (4, 256, 512)).astype(np.float32)
    (out * Tensor(g)).sum().backward()
    (ref * torch.from_numpy(g)).sum().backward()
    np.testing.assert_allclose(tq.grad.numpy(), rq.grad.numpy(), rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(tk.grad.numpy(), rk.grad.numpy(), rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("view", VIEWS)
def test_matmul_views(view, device, rng):
    ta, a = as_view(matmul_data(rng, (2, 3, 4), "float32"), view, device)
    tb, b = as_view(matmul_data(rng, (2, 4, 5), "float32"), view, device)
    check(ta @ tb, torch.from_numpy(a) @ torch.from_numpy(b))


@pytest.mark.parametrize("device", DEVICES)
def test_matmul_transposed_and_mixed(device, rng):
    a, b = matmul_data(rng, (4, 3), "float32"), matmul_data(rng, (5, 4), "int32")
    ta, tb = Tensor(a, device=device), Tensor(b, device=device)
    check(ta.T @ ta, torch.from_numpy(a).T @ torch.from_numpy(a))
    # mixed dtypes promote as elementwise ops do (PyTorch itself refuses mixed matmul)
    out = tb @ ta
    assert out.dtype is dtypes.float32
    check(out, (b.astype(np.float32) @ a).astype(np.float32))


def test_matmul_errors():
    with pytest.raises(RuntimeError):
        Tensor.ones(3, 4) @ Tensor.ones(3, 4)
    with pytest.raises(RuntimeError):
        Tensor(1.0).dot(Tensor.ones(3))


# ---------------------------------------------------------------- realization and device API


@pytest.mark.parametrize("device", DEVICES)
def test_realize(device, rng):
    x = rand(rng, (3, 4), "float32")
    t = Tensor(x, device=device) * 2
    assert t.realize() is t
    check(t, x * 2)
    a, b = Tensor(x, device=device) + 1, Tensor(x, device=device).sum(0)
    assert a.realize(b) is a
    check(a, x + 1)
    check(b, x.astype(np.float64).sum(0).astype(np.float32))
    other = "PYTHON" if device == "CPU" else "CPU"
    c, d = Tensor(x, device=device) - 1, Tensor(x, device=other) * 3  # one realize call, two devices
    c.realize(d)
    check(c, x - 1)
    check(d, x * 3)


@pytest.mark.parametrize("device", DEVICES)
def test_kernelize(device, rng):
    x = rand(rng, (3, 4), "int32")
    t = (Tensor(x, device=device) + 3).kernelize()
    check(t, x + 3)
    u = (Tensor(x, device=device) * 5).kernelize()
    check(u - 1, x * 5 - 1)


@pytest.mark.parametrize("device", DEVICES)
def test_numpy(device, rng):
    for dtype in ["float32", "int64", "bool", "uint8", "float64"]:
        x = rand(rng, (2, 3), dtype)
        got = Tensor(x, device=device).permute(1, 0).numpy()
        assert isinstance(got, np.ndarray)
        assert got.dtype == x.dtype
        np.testing.assert_array_equal(got, x.T)


@pytest.mark.parametrize("device", DEVICES)
def test_item(device):
    assert Tensor(2.5, device=device).item() == 2.5
    assert type(Tensor(3, device=device).item()) is int
    assert Tensor([[7]], device=device).item() == 7
    assert Tensor(True, device=device).item() is True
    assert Tensor([1.5, 2.5], device=device).sum().item() == 4.0
    assert Tensor([[1, 2], [3, 4]], device=device).shrink(((1, 2), (0, 1))).item() == 3
    with pytest.raises(RuntimeError):
        Tensor([1, 2], device=device).item()
    with pytest.raises(RuntimeError):
        Tensor.zeros(0, device=device).item()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("data", [[[1, 2], [3, 4]], [1.5, -2.0], [True, False], 3, 2.5, [], [[], []], [[[1]]]], ids=str)
def test_tolist(device, data):
    t, ref = Tensor(data, device=device), torch.tensor(data)
    assert t.tolist() == ref.tolist()
    assert (t + 1).tolist() == (ref + 1).tolist()


@pytest.mark.parametrize("src, dst", [("CPU", "PYTHON"), ("PYTHON", "CPU"), ("CPU", "CPU"), ("PYTHON", "PYTHON")])
def test_to_device(src, dst, rng):
    x = rand(rng, (3, 4), "float32")
    t = Tensor(x, device=src) * 2
    moved = t.to(dst)
    assert moved.device == dst
    check(moved, x * 2)
    check(moved + 1, x * 2 + 1)
    back = (moved.T + 1).to(src)
    assert back.device == src
    check(back, (x * 2).T + 1)
    assert Tensor(x, device=src).to(dst.lower()).device == dst


@pytest.mark.parametrize("device", DEVICES)
def test_to_device_views_and_dtypes(device, rng):
    other = "PYTHON" if device == "CPU" else "CPU"
    x = rand(rng, (4, 3), "int32")
    check(Tensor(x, device=device).flip(0).shrink(((1, 3), None)).to(other), np.flip(x, 0)[1:3])
    b = rand(rng, (5,), "bool")
    check(Tensor(b, device=device).to(other).logical_not(), ~b)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("view", VIEWS)
def test_contiguous(view, device, rng):
    t, x = as_view(rand(rng, (2, 3, 4), "float32"), view, device)
    c = t.contiguous()
    assert c.shape == t.shape
    assert c.dtype == t.dtype
    check(c, x)
    check(c.realize() + 1, x + 1)


@pytest.mark.parametrize("device", DEVICES)
def test_properties(device):
    t = Tensor.ones(2, 3, 4, device=device)
    assert t.ndim == 3
    assert t.numel() == 24
    assert t.size() == (2, 3, 4)
    assert t.size(-1) == 4
    assert len(t) == 2
    assert Tensor(1.0).ndim == 0
    with pytest.raises(TypeError):
        len(Tensor(1.0))
    assert bool(Tensor([True], device=device)) is True
    assert float(Tensor(2, device=device)) == 2.0
    assert int(Tensor(2.7, device=device)) == 2
    with pytest.raises(RuntimeError):
        bool(Tensor([1, 2], device=device))


@pytest.mark.parametrize("device", DEVICES)
def test_detach(device, rng):
    x = rand(rng, (3,), "float32")
    check(Tensor(x, device=device).detach() * 3, x * 3)


# ---------------------------------------------------------------- compositions and bigger shapes


@pytest.mark.parametrize("device", DEVICES)
def test_softmax_and_variance(device, rng):
    x = rand(rng, small(device, (7, 13), (3, 5)), "float32")
    t, tt = Tensor(x, device=device), torch.from_numpy(x)
    e = (t - t.max(1, keepdim=True)).exp()
    check(e / e.sum(1, keepdim=True), tt.softmax(1), rtol=TRANSCENDENTAL_RTOL)
    var = (t - t.mean(0, keepdim=True)).square().mean(0)
    check(var, tt.var(0, unbiased=False), rtol=1e-4, atol=1e-5)
    check(t.sum(1).max() - t.min(0).sum(), tt.sum(1).max() - tt.amin(0).sum(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("device", DEVICES)
def test_reduce_of_expanded_and_padded(device, rng):
    x = rand(rng, (3, 1), "int32")
    t, tt = Tensor(x, device=device), torch.from_numpy(x)
    check(t.expand(3, 5).sum(), tt.expand(3, 5).sum())
    check(t.expand(2, 3, 4).sum((0, 2)), tt.expand(2, 3, 4).sum((0, 2)))
    check(t.pad(((1, 1), (2, 0)), value=-9).max(0), torch.nn.functional.pad(tt, (2, 0, 1, 1), value=-9).amax(0))
    check(t.pad(((1, 1), (2, 0)), value=4).min(1), torch.nn.functional.pad(tt, (2, 0, 1, 1), value=4).amin(1))


@pytest.mark.parametrize("device", DEVICES)
def test_reduce_result_moved(device, rng):
    x = rand(rng, (2, 3, 4), "float32", "positive")
    t, tt = Tensor(x, device=device), torch.from_numpy(x)
    check(t.sum(1).T.flip(0) * 2, tt.sum(1).T.flip(0) * 2)
    check(t.max(2, keepdim=True).expand(2, 3, 4) - t, tt.amax(2, keepdim=True).expand(2, 3, 4) - tt)
    check(t.sum(0).pad(((1, 0), (0, 1))).sum(1), torch.nn.functional.pad(tt.sum(0), (0, 1, 1, 0)).sum(1))


@pytest.mark.parametrize("device", DEVICES)
def test_int64_wide_values(device):
    a = np.array([2**40 + 3, -(2**41) - 7, 2**62, 5], dtype=np.int64)
    b = np.array([3, 5, -7, 2**33], dtype=np.int64)
    ta, tb, ra, rb = Tensor(a, device=device), Tensor(b, device=device), torch.from_numpy(a), torch.from_numpy(b)
    for fn in (lambda x, y: x + y, lambda x, y: x * y, lambda x, y: x // y, lambda x, y: x % y, lambda x, y: x < y):
        check(fn(ta, tb), fn(ra, rb))
    check(ta.sum(), ra.sum())
    check(ta.max(), ra.max())
    check(ta >> 3, ra >> 3)


@pytest.mark.parametrize("device", DEVICES)
def test_nan_comparisons(device):
    x = np.array([np.nan, 1.0, np.nan, -np.inf], dtype=np.float32)
    y = np.array([np.nan, np.nan, 2.0, -np.inf], dtype=np.float32)
    tx, ty, rx, ry = Tensor(x, device=device), Tensor(y, device=device), torch.from_numpy(x), torch.from_numpy(y)
    for fn in (lambda a, b: a < b, lambda a, b: a > b, lambda a, b: a == b, lambda a, b: a != b):
        check(fn(tx, ty), fn(rx, ry))


@pytest.mark.parametrize("device", DEVICES)
def test_nan_ge_le(device):
    x = np.array([np.nan, 1.0, np.nan, 2.0], dtype=np.float32)
    y = np.array([np.nan, np.nan, 2.0, 2.0], dtype=np.float32)
    tx, ty, rx, ry = Tensor(x, device=device), Tensor(y, device=device), torch.from_numpy(x), torch.from_numpy(y)
    check(tx >= ty, rx >= ry)
    check(tx <= ty, rx <= ry)


@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_bigger_shapes_cpu(dtype, rng):
    """Shapes big enough for the optimizer to upcast, unroll and split across threads."""
    x = rand(rng, (67, 129), dtype, "positive")
    y = rand(rng, (129,), dtype, "positive")
    t, tt = Tensor(x), torch.from_numpy(x)
    check(t * Tensor(y) + 1, tt * torch.from_numpy(y) + 1)
    check(t.sum(1), tt.sum(1), rtol=1e-5)
    check(t.sum(0), tt.sum(0), rtol=1e-5)
    check(t.max(), tt.max())
    check(t.T.sum(0), tt.T.sum(0), rtol=1e-5)
    big = rand(rng, (3, 4099), dtype, "positive")
    check(Tensor(big).sum(1), torch.from_numpy(big).sum(1), rtol=1e-5)
    a, b = matmul_data(rng, (65, 33), dtype), matmul_data(rng, (33, 17), dtype)
    check(Tensor(a) @ Tensor(b), torch.from_numpy(a) @ torch.from_numpy(b))
    check(Tensor(a).T.T @ Tensor(b).flip(1), torch.from_numpy(a) @ torch.from_numpy(b).flip(1))


@pytest.mark.parametrize("device", DEVICES)
def test_float_mod_with_infinities(device):
    a = np.array([1.0, -1.0, np.inf, 5.5, -5.5, 0.0], np.float32)
    b = np.array([np.inf, np.inf, 2.0, -3.0, 3.0, 2.0], np.float32)
    want = torch.remainder(torch.tensor(a), torch.tensor(b)).numpy()
    np.testing.assert_array_equal((Tensor(a, device=device) % Tensor(b, device=device)).numpy(), want)


@pytest.mark.parametrize("device", DEVICES)
def test_bitcast(device):
    x = np.array([1.0, -2.5, 0.0, np.inf, -0.0], np.float32)
    t = Tensor(x, device=device)
    np.testing.assert_array_equal(t.bitcast(dtypes.int32).numpy(), x.view(np.int32))
    np.testing.assert_array_equal((t.bitcast("uint32") >> 31).numpy(), x.view(np.uint32) >> 31)
    np.testing.assert_array_equal(t.bitcast(dtypes.int32).bitcast(dtypes.float32).numpy(), x)
    np.testing.assert_array_equal(t.bitcast(dtypes.int16).numpy(), x.view(np.int16))  # the last dim scales
    with pytest.raises(RuntimeError, match="bitcast"):
        t.bitcast(dtypes.int64)  # 20 bytes are no whole number of 8-byte elements


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["int32", "uint8", "int64"])
def test_integer_division_by_zero_does_not_crash(device, dtype):
    """torch raises ZeroDivisionError: so does the realize of x // y, x % y, x.div(y, rounding_mode=...) for a zero
    in y, and the call for a zero int scalar; the kernel itself gives 0 on every device instead of a SIGFPE."""
    a, b = Tensor([5, 7, 3], dtype=dtype, device=device), Tensor([0, 2, 0], dtype=dtype, device=device)
    for op, want in [
        (a.__floordiv__, [0, 3, 0]),
        (a.__mod__, [0, 1, 0]),
        (lambda y: a.div(y, rounding_mode="floor"), None),
    ]:
        out = op(b)
        with pytest.raises(RuntimeError, match=r"ZeroDivisionError \(2 integer division\(s\) by zero\)"):
            out.realize()
        if want is not None:
            assert out.tolist() == want  # computed with the check (reported once)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        a % 0
    assert (a // b.maximum(1)).tolist() == [5, 3, 3]  # no zero: no error
    assert (Tensor.zeros(0, dtype=dtype, device=device) // 0).shape == (0,)  # nothing divided, as torch
    assert (a.cast("float32") // 0).tolist() == [float("inf")] * 3  # floats: IEEE
