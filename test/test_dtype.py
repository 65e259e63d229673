"""The dtype lattice against PyTorch: promote_types for every pair, the dtype of tensor-op-scalar, and
the dtypes real Tensor ops produce.

PyTorch refuses most pairs with uint16/32/64 (torch.promote_types raises); those pairs are checked against
numpy, which follows the same rule there (the next signed type wide enough for both).
"""

import itertools

import numpy as np
import pytest
import torch

from unigrad import Tensor
from unigrad.dtype import DType, dtypes, least_upper_dtype, promote_types, result_dtype_with_scalar, to_dtype

ALL_NAMES = [
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "bfloat16",
    "float32",
    "float64",
]
# the dtypes PyTorch supports fully (arithmetic kernels included)
TORCH_NAMES = ["bool", "int8", "int16", "int32", "int64", "uint8", "float16", "bfloat16", "float32", "float64"]
SCALARS = [1, -1, 0, 7, 1.5, -2.5, 0.0, True, False]


def dt(name: str) -> DType:
    return getattr(dtypes, name)


def tdt(name: str) -> torch.dtype:
    return getattr(torch, name)


def torch_name(d: torch.dtype) -> str:
    return str(d).removeprefix("torch.")


def torch_promote(a: str, b: str) -> str | None:
    """torch.promote_types by name; None where PyTorch raises."""
    try:
        return torch_name(torch.promote_types(tdt(a), tdt(b)))
    except RuntimeError:
        return None


TORCH_PAIRS = [(a, b) for a, b in itertools.product(ALL_NAMES, ALL_NAMES) if torch_promote(a, b) is not None]
NON_TORCH_PAIRS = [(a, b) for a, b in itertools.product(ALL_NAMES, ALL_NAMES) if torch_promote(a, b) is None]


# ---------------------------------------------------------------- names


def test_aliases():
    assert dtypes.float32 is dtypes.float
    assert dtypes.int32 is dtypes.int
    assert dtypes.half is dtypes.float16
    assert dtypes.double is dtypes.float64
    assert dtypes.long is dtypes.int64
    assert dtypes.uint8 is dtypes.uchar
    assert dtypes.default_float is dtypes.float32
    assert dtypes.default_int is dtypes.int64
    assert repr(dtypes.float32) == "dtypes.float32"


@pytest.mark.parametrize("name", ALL_NAMES)
def test_dtype_properties_match_torch(name):
    d, t = dt(name), tdt(name)
    assert d.name == name
    assert d.itemsize == t.itemsize
    assert d.is_float == t.is_floating_point
    assert d.is_bool == (t == torch.bool)
    assert d.is_int == (not t.is_floating_point and t != torch.bool)
    assert d.is_unsigned == (name.startswith("uint"))
    if d.is_float:
        assert (d.min, d.max) == (-float("inf"), float("inf"))
    elif d.is_bool:
        assert (d.min, d.max) == (False, True)
    else:
        assert (d.min, d.max) == (torch.iinfo(t).min, torch.iinfo(t).max)


@pytest.mark.parametrize("name", ALL_NAMES)
def test_from_name_and_to_dtype(name):
    assert dtypes.from_name(name) is dt(name)
    assert to_dtype(name) is dt(name)
    assert to_dtype(dt(name)) is dt(name)
    assert name in [d.name for d in dtypes.all()]


def test_unknown_name_raises():
    with pytest.raises(TypeError):
        dtypes.from_name("float128")
    with pytest.raises(TypeError):
        to_dtype("complex64")


@pytest.mark.parametrize("value", [True, False, 0, 3, -(2**40), 1.5, 0.0, -1e300])
def test_from_py_matches_torch(value):
    assert dtypes.from_py(value).name == torch_name(torch.tensor(value).dtype)


# ---------------------------------------------------------------- promote_types


@pytest.mark.parametrize("a, b", TORCH_PAIRS)
def test_promote_types_matches_torch(a, b):
    assert promote_types(dt(a), dt(b)).name == torch_promote(a, b)


@pytest.mark.parametrize("a, b", NON_TORCH_PAIRS)
def test_promote_types_unsigned_pairs(a, b):
    """Pairs PyTorch refuses: numpy's rule, except uint64 with a signed int (no signed type holds both;
    unigrad takes float32 where numpy takes float64)."""
    got = promote_types(dt(a), dt(b))
    assert got == promote_types(dt(b), dt(a))
    if "uint64" in (a, b) and {a, b} & {"int8", "int16", "int32", "int64"}:
        assert got is dtypes.float32
    else:
        assert got.name == np.promote_types(np.dtype(a), np.dtype(b)).name


@pytest.mark.parametrize("a", ALL_NAMES)
def test_promote_types_lattice_laws(a):
    assert promote_types(dt(a), dt(a)) is dt(a)
    for b in ALL_NAMES:
        ab = promote_types(dt(a), dt(b))
        assert ab == promote_types(dt(b), dt(a))  # commutative
        assert promote_types(dt(a), ab) == ab  # ab is an upper bound of a
        assert promote_types(dt(b), ab) == ab


@pytest.mark.parametrize("names", [("int8", "uint8", "float16"), ("bool", "int32"), ("float16", "bfloat16", "int64")])
def test_least_upper_dtype(names):
    want = tdt(names[0])
    for n in names[1:]:
        want = torch.promote_types(want, tdt(n))
    assert least_upper_dtype(*(dt(n) for n in names)).name == torch_name(want)
    assert least_upper_dtype(*(dt(n) for n in reversed(names))).name == torch_name(want)


# ---------------------------------------------------------------- tensor op python scalar


@pytest.mark.parametrize("scalar", SCALARS, ids=repr)
@pytest.mark.parametrize("name", ALL_NAMES)
def test_result_dtype_with_scalar_matches_torch(name, scalar):
    want = torch.result_type(torch.ones(2, dtype=tdt(name)), scalar)
    assert result_dtype_with_scalar(dt(name), scalar).name == torch_name(want)


SCALAR_OPS = {
    "add": lambda t, s: t + s,
    "radd": lambda t, s: s + t,
    "mul": lambda t, s: t * s,
    "truediv": lambda t, s: t / s,
    "rtruediv": lambda t, s: s / t,
    "lt": lambda t, s: t < s,
    "eq": lambda t, s: t == s,
    "maximum": lambda t, s: t.maximum(s if isinstance(t, Tensor) else torch.tensor(s)),
}


@pytest.mark.parametrize("op", SCALAR_OPS)
@pytest.mark.parametrize("scalar", [1, 1.5, True], ids=repr)
@pytest.mark.parametrize("name", TORCH_NAMES)
def test_tensor_scalar_op_dtype(name, scalar, op):
    fn = SCALAR_OPS[op]
    try:
        want = fn(torch.ones(2, dtype=tdt(name)), scalar)
    except RuntimeError:
        pytest.skip(f"PyTorch has no {op} for {name} with {scalar!r}")
    got = fn(Tensor.ones(2, dtype=dt(name), device="PYTHON"), scalar)  # PYTHON: no compile per case
    assert got.dtype.name == torch_name(want.dtype)
    np.testing.assert_allclose(got.float().numpy(), want.float().numpy(), rtol=1e-2)


# ---------------------------------------------------------------- tensor op tensor on real tensors

TENSOR_PAIRS = [
    ("int32", "int64"),
    ("uint8", "int8"),
    ("int8", "uint8"),
    ("bool", "float16"),
    ("float16", "bfloat16"),
    ("int16", "float64"),
    ("uint8", "bool"),
    ("bool", "bool"),
    ("bfloat16", "float32"),
    ("int64", "float16"),
    ("uint8", "int16"),
    ("bool", "int8"),
]
TENSOR_OPS = {
    "add": lambda a, b: a + b,
    "mul": lambda a, b: a * b,
    "truediv": lambda a, b: a / b,
    "maximum": lambda a, b: a.maximum(b),
    "lt": lambda a, b: a < b,
    "where": lambda a, b: (a != 0).where(a, b) if isinstance(a, Tensor) else torch.where(a != 0, a, b),
}


TENSOR_CASES = [
    (a, b, op, device)
    for a, b in TENSOR_PAIRS
    for op in TENSOR_OPS
    for device in ("PYTHON", "CPU")
    if device == "PYTHON" or op in ("add", "truediv")  # compiled: a sample, the interpreter: all
]


@pytest.mark.parametrize("a, b, op, device", TENSOR_CASES)
def test_tensor_tensor_op_dtype(a, b, op, device):
    fn = TENSOR_OPS[op]
    xa, xb = np.array([0, 1, 2, 3]), np.array([1, 1, 3, 2])
    ta, tb = torch.tensor(xa, dtype=tdt(a)), torch.tensor(xb, dtype=tdt(b))
    try:
        want = fn(ta, tb)
    except RuntimeError:
        pytest.skip(f"PyTorch has no {op} for {a}, {b}")
    got = fn(Tensor(xa, dtype=dt(a), device=device), Tensor(xb, dtype=dt(b), device=device))
    assert got.dtype.name == torch_name(want.dtype)
    assert got.shape == tuple(want.shape)
    np.testing.assert_allclose(got.float().numpy(), want.float().numpy(), rtol=1e-2)


@pytest.mark.parametrize("a, b", [("int32", "int32"), ("int64", "int8"), ("uint8", "uint8"), ("bool", "int16")])
def test_int_truediv_is_default_float(a, b):
    out = Tensor([1, 0, 3], dtype=dt(a)) / Tensor([2, 1, 2], dtype=dt(b))
    assert out.dtype is dtypes.default_float
    want = torch.tensor([1, 0, 3], dtype=tdt(a)) / torch.tensor([2, 1, 2], dtype=tdt(b))
    assert want.dtype == torch.float32
    np.testing.assert_allclose(out.numpy(), want.numpy())


@pytest.mark.parametrize(
    "name, want",
    [
        ("int32", "int64"),
        ("int8", "int64"),
        ("uint8", "int64"),
        ("bool", "int64"),
        ("int64", "int64"),
        ("float16", "float16"),
    ],
)
def test_sum_dtype(name, want):
    assert (
        Tensor.ones(3, dtype=dt(name)).sum().dtype.name
        == want
        == torch_name(torch.ones(3, dtype=tdt(name)).sum().dtype)
    )


def test_list_construction_dtypes():
    assert Tensor([1, 2]).dtype is dtypes.int64
    assert Tensor([1.0, 2]).dtype is dtypes.float32
    assert Tensor([True]).dtype is dtypes.bool
    assert (Tensor([1, 2]) / Tensor([1, 2])).dtype is dtypes.float32
    assert (Tensor([1, 2]) + 1.5).dtype is dtypes.float32
    assert (Tensor([True]) + Tensor([False])).dtype is dtypes.bool
    assert Tensor([1, 2], dtype=dtypes.int32).sum().dtype is dtypes.int64


ZERO_D_NAMES = ["bool", "int8", "int16", "int32", "int64", "uint8", "float16", "bfloat16", "float32", "float64"]


@pytest.mark.parametrize("a", ZERO_D_NAMES)
@pytest.mark.parametrize("b", ZERO_D_NAMES)
def test_zero_dim_tensor_promotion_matches_torch(a, b):
    """A 0-d tensor beside a dimensioned one promotes like a scalar (only across kinds), as in torch."""
    for sa, sb in (((2,), ()), ((), (2,)), ((), ())):
        want = (torch.zeros(sa, dtype=getattr(torch, a)) * torch.zeros(sb, dtype=getattr(torch, b))).dtype
        got = (Tensor.zeros(*sa, dtype=a) * Tensor.zeros(*sb, dtype=b)).dtype
        assert got.name == str(want).removeprefix("torch."), (a, b, sa, sb)
