"""Data types and the promotion lattice.

A DType is a small frozen value: name, itemsize, kind ('b' bool, 'i' signed, 'u' unsigned, 'f' float,
'x' index/void) and the struct/numpy format used at the copy boundary. Promotion follows PyTorch: within
a kind the wider type wins; signed+unsigned goes to the next signed type wide enough for both; ints with
floats take the float; float16+bfloat16 meet at float32. Python scalars only promote across kinds.
"""

from __future__ import annotations

import math
from types import ModuleType
from typing import Final

from unigrad import config
from unigrad.helpers import record

ConstType = bool | int | float


@record(frozen=True, slots=True, eq=False)
class DType:
    """A data type. Interned: each dtype is one object, compared and hashed by identity (fast, in C)."""

    name: str
    itemsize: int
    kind: str  # 'b' bool, 'i' signed int, 'u' unsigned int, 'f' float, 'x' index / void
    fmt: str | None  # numpy dtype string, None where numpy has none (bfloat16, index, void)

    def __repr__(self) -> str:
        return f"dtypes.{self.name}"

    def __reduce__(self) -> tuple:
        return _interned, (self.name,)

    @property
    def is_float(self) -> bool:
        return self.kind == "f"

    @property
    def is_int(self) -> bool:
        """True for signed/unsigned ints and the index type (not bool)."""
        return self.kind in "iu" or self.name == "index"

    @property
    def is_unsigned(self) -> bool:
        return self.kind == "u"

    @property
    def is_bool(self) -> bool:
        return self.kind == "b"

    @property
    def min(self) -> ConstType:
        return dtype_min(self)

    @property
    def max(self) -> ConstType:
        return dtype_max(self)


def _interned(name: str) -> DType:
    return getattr(dtypes, name)


def dtype_min(dt: DType) -> ConstType:
    if dt.kind == "b":
        return False
    if dt.kind == "u":
        return 0
    if dt.kind == "i":
        return -(2 ** (8 * dt.itemsize - 1))
    if dt.name == "index":
        return -(2**63)
    return -math.inf


def dtype_max(dt: DType) -> ConstType:
    if dt.kind == "b":
        return True
    if dt.kind == "u":
        return 2 ** (8 * dt.itemsize) - 1
    if dt.kind == "i":
        return 2 ** (8 * dt.itemsize - 1) - 1
    if dt.name == "index":
        return 2**63 - 1
    return math.inf


class _DefaultDtypes(type):
    """`dtypes.default_float` and `dtypes.default_int` read the knobs DEFAULT_FLOAT and DEFAULT_INT (scoped with
    `Context(DEFAULT_FLOAT="half")`); an empty DEFAULT_INT means the flavor's (int32 native, int64 under the torch
    facade: unigrad/flavor.py). Assigning either (tinygrad's `dtypes.default_float = dtypes.float16`, torch's
    set_default_dtype) sets the knob."""

    @property
    def default_float(cls) -> DType:
        return _dtype_knob(config.DEFAULT_FLOAT)

    @default_float.setter
    def default_float(cls, dt: DType) -> None:
        if not isinstance(dt, DType) or not dt.is_float:
            raise TypeError(f"dtypes.default_float: expected a float dtype, got {dt!r}")
        config.DEFAULT_FLOAT.value = dt.name

    @property
    def default_int(cls) -> DType:
        if config.DEFAULT_INT.value:
            return _dtype_knob(config.DEFAULT_INT)
        global _flavor
        if _flavor is None:  # unigrad.flavor imports this module: looked up once, on first use
            from unigrad import flavor as _flavor
        return _flavor.current().default_int

    @default_int.setter
    def default_int(cls, dt: DType) -> None:
        if not isinstance(dt, DType) or not dt.is_int or dt.name == "index":
            raise TypeError(f"dtypes.default_int: expected an integer dtype, got {dt!r}")
        config.DEFAULT_INT.value = dt.name


_flavor: ModuleType | None = None  # unigrad.flavor, once dtypes.default_int first asks
_knob_dtypes: dict[str, DType] = {}  # a knob's value -> the dtype it names (read on every default_float)


def _dtype_knob(knob: config.Knob) -> DType:
    """The dtype a knob names, any case (tinygrad's DEFAULT_FLOAT=HALF)."""
    if (dt := _knob_dtypes.get(knob.value)) is not None:
        return dt
    dt = getattr(dtypes, str(knob.value).lower(), None)
    if not isinstance(dt, DType):
        raise ValueError(f"{knob.name}={knob.value!r} names no dtype (float32, half, bfloat16, ...)")
    _knob_dtypes[knob.value] = dt
    return dt


class dtypes(metaclass=_DefaultDtypes):
    """Namespace of every dtype under the names users know."""

    bool: Final = DType("bool", 1, "b", "?")
    int8: Final = DType("int8", 1, "i", "i1")
    int16: Final = DType("int16", 2, "i", "i2")
    int32: Final = DType("int32", 4, "i", "i4")
    int64: Final = DType("int64", 8, "i", "i8")
    uint8: Final = DType("uint8", 1, "u", "u1")
    uint16: Final = DType("uint16", 2, "u", "u2")
    uint32: Final = DType("uint32", 4, "u", "u4")
    uint64: Final = DType("uint64", 8, "u", "u8")
    float16: Final = DType("float16", 2, "f", "f2")
    bfloat16: Final = DType("bfloat16", 2, "f", None)
    float32: Final = DType("float32", 4, "f", "f4")
    float64: Final = DType("float64", 8, "f", "f8")
    # 8-bit floats (OCP FP8, as tinygrad's and ml_dtypes'), stored as one byte and computed in float32:
    # E4M3 "FN" (no infinities; max 448; nan S.1111.111) and E5M2 (IEEE-like: inf; max 57344)
    fp8e4m3: Final = DType("fp8e4m3", 1, "f", None)
    fp8e5m2: Final = DType("fp8e5m2", 1, "f", None)
    index: Final = DType("index", 8, "x", None)  # symbolic index math; int64 when rendered
    void: Final = DType("void", 0, "x", None)

    # aliases
    half = float16
    float = float32
    double = float64
    char = int8
    short = int16
    int = int32
    long = int64
    uchar = uint8
    ushort = uint16
    uint = uint32
    ulong = uint64

    # tinygrad's dtype groups
    fp8s: Final = (fp8e4m3, fp8e5m2)
    floats: Final = (*fp8s, float16, bfloat16, float32, float64)
    uints: Final = (uint8, uint16, uint32, uint64)
    sints: Final = (int8, int16, int32, int64)
    ints: Final = (*uints, *sints)

    @staticmethod
    def all() -> tuple[DType, ...]:
        return ALL_DTYPES

    @staticmethod
    def from_py(x: ConstType | list | tuple) -> DType:
        """The dtype a Python scalar gets on its own (bool, the default int, the default float); a list or tuple
        (nested too) gets the highest of its elements' (bool < int < float; the default float when empty)."""
        if isinstance(x, (list, tuple)):
            return max((dtypes.from_py(v) for v in x), key=_category, default=dtypes.default_float)
        if isinstance(x, bool):
            return dtypes.bool
        if isinstance(x, int):
            return dtypes.default_int
        return dtypes.default_float

    # tinygrad's static helpers on the namespace (a DType also answers dt.is_float, dt.min, ... itself)
    @staticmethod
    def is_float(dt: DType) -> bool:
        return dt.is_float

    @staticmethod
    def is_int(dt: DType) -> bool:
        """Signed and unsigned ints and the index type (not bool)."""
        return dt.is_int

    @staticmethod
    def is_unsigned(dt: DType) -> bool:
        return dt.is_unsigned

    @staticmethod
    def is_bool(dt: DType) -> bool:
        return dt.is_bool

    @staticmethod
    def finfo(dt: DType) -> tuple[int, int]:
        """(exponent bits, mantissa bits) of a float dtype, as tinygrad's dtypes.finfo."""
        if dt not in _FLOAT_BITS:
            raise TypeError(f"dtypes.finfo: {dt} is not a float dtype")
        return _FLOAT_BITS[dt]

    @staticmethod
    def min(dt: DType) -> ConstType:
        """The smallest value of dt: 0 or -2**(bits-1) for ints, -inf for floats, False for bool."""
        return dtype_min(dt)

    @staticmethod
    def max(dt: DType) -> ConstType:
        """The largest value of dt: 2**bits-1 or 2**(bits-1)-1 for ints, inf for floats, True for bool."""
        return dtype_max(dt)

    @staticmethod
    def from_name(name: str) -> DType:
        dt = getattr(dtypes, name, None)
        if not isinstance(dt, DType):
            raise TypeError(f"unknown dtype {name!r}; expected one of {[d.name for d in ALL_DTYPES]}")
        return dt


# (exponent bits, mantissa bits) of each float dtype: dtypes.finfo
_FLOAT_BITS: Final = {
    dtypes.fp8e4m3: (4, 3),
    dtypes.fp8e5m2: (5, 2),
    dtypes.float16: (5, 10),
    dtypes.bfloat16: (8, 7),
    dtypes.float32: (8, 23),
    dtypes.float64: (11, 52),
}

# every tensor dtype but the fp8s (which only some ops take: creation, casts, elementwise math, reductions)
ALL_DTYPES: Final = (
    dtypes.bool,
    dtypes.int8,
    dtypes.int16,
    dtypes.int32,
    dtypes.int64,
    dtypes.uint8,
    dtypes.uint16,
    dtypes.uint32,
    dtypes.uint64,
    dtypes.float16,
    dtypes.bfloat16,
    dtypes.float32,
    dtypes.float64,
)

# ---- promotion lattice, as data ----

# signed ints wide enough to hold an unsigned type (PyTorch: uint8+int8 -> int16, uint32+int32 -> int64)
_SIGNED_HOLDING: Final = {
    dtypes.uint8: dtypes.int16,
    dtypes.uint16: dtypes.int32,
    dtypes.uint32: dtypes.int64,
    dtypes.uint64: dtypes.float32,
}
_CATEGORY: Final = {"b": 0, "u": 1, "i": 1, "f": 2}


def _category(d: DType) -> int:
    """bool 0, integers 1, floats 2; index and void are no tensor dtypes and take part in no promotion."""
    if (c := _CATEGORY.get(d.kind)) is None:
        raise TypeError(f"type promotion: {d} is not a tensor dtype (cast the value to an int or float dtype first)")
    return c


def promote_types(a: DType, b: DType) -> DType:
    """Result dtype of a binary op between two tensors, as torch.promote_types."""
    if a == b:
        return a
    ca, cb = _category(a), _category(b)
    if ca != cb:
        return a if ca > cb else b
    if a.kind == "f":
        if a.itemsize == b.itemsize == 1:  # fp8e4m3 + fp8e5m2: float16 holds both exactly
            return dtypes.float16
        if a.itemsize == b.itemsize:  # float16 + bfloat16
            return dtypes.float32
        return a if a.itemsize > b.itemsize else b
    if a.kind == b.kind:
        return a if a.itemsize > b.itemsize else b
    u, s = (a, b) if a.kind == "u" else (b, a)
    if s.itemsize > u.itemsize:
        return s
    return _SIGNED_HOLDING[u]


def least_upper_dtype(*ds: DType) -> DType:
    out = ds[0]
    for d in ds[1:]:
        out = promote_types(out, d)
    return out


def promote_with_dims(a: DType, a_0d: bool, b: DType, b_0d: bool) -> DType:
    """torch's rule for two tensors: a 0-d tensor beside a dimensioned one only promotes across kinds."""
    if a_0d == b_0d:
        return promote_types(a, b)
    dim, zero = (b, a) if a_0d else (a, b)
    return dim if _category(zero) <= _category(dim) else zero


def result_dtype_with_scalar(t: DType, x: ConstType) -> DType:
    """Dtype of `tensor op python_scalar`: a scalar only promotes when it is of a higher kind."""
    cat_x = 0 if isinstance(x, bool) else 1 if isinstance(x, int) else 2
    if cat_x <= _category(t):
        return t
    return dtypes.default_float if cat_x == 2 else dtypes.default_int


def to_dtype(x: DType | str) -> DType:
    return x if isinstance(x, DType) else dtypes.from_name(x)


def cast_scalar(x: ConstType, dt: DType) -> ConstType:
    """A Python scalar as the Python type that holds values of `dt` (wrapping ints like C does)."""
    if dt.kind == "b":
        return bool(x)
    if dt.is_float:
        return float(x)
    if dt.name == "index":
        return int(x)
    v = int(x) if not (isinstance(x, float) and (math.isnan(x) or math.isinf(x))) else 0
    bits = 8 * dt.itemsize
    v &= (1 << bits) - 1
    if dt.kind == "i" and v >= 1 << (bits - 1):
        v -= 1 << bits
    return v
