"""The executable definition of every elementwise op on Python scalars.

Used by constant folding (ir/symbolic.py) and by the PYTHON device, so both agree with each other and
with the C renderer: ints wrap to their dtype, IDIV/MOD are floor division/modulo (spec: floor(a/b)),
float32/float16/bfloat16 results are rounded to their precision after every op. BITCAST reinterprets the
bits of a value as another dtype of the same itemsize (`bitcast`).
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from unigrad.dtype import ConstType, DType, cast_scalar, dtypes
from unigrad.helpers import record
from unigrad.ir.ops import Ops


_F32 = struct.Struct("f")
_f32_pack, _f32_unpack = _F32.pack, _F32.unpack


@record(frozen=True)
class FP8Format:
    """An 8-bit float: sign, `exp_bits` exponent bits (bias `bias`), `man_bits` mantissa bits; `top` is the code of
    the largest finite value (what overflow saturates to)."""

    exp_bits: int
    man_bits: int
    bias: int
    top: int


# E4M3 has no infinities (S.1111.111 is nan, so 0x7e = 448 is the top); E5M2 is IEEE-like (0x7c inf, 0x7b = 57344)
FP8_FORMATS: dict[DType, FP8Format] = {
    dtypes.fp8e4m3: FP8Format(4, 3, 7, 0x7E),
    dtypes.fp8e5m2: FP8Format(5, 2, 15, 0x7B),
}


def fp8_to_float(bits: int, dt: DType) -> float:
    """The value of the fp8 code `bits` (0..255)."""
    f = FP8_FORMATS[dt]
    sign = -1.0 if bits & 0x80 else 1.0
    e, m = (bits >> f.man_bits) & ((1 << f.exp_bits) - 1), bits & ((1 << f.man_bits) - 1)
    if (bits & 0x7F) > f.top:  # past the top: nan (E4M3), or inf and nan (E5M2)
        return sign * math.inf if dt is dtypes.fp8e5m2 and m == 0 else math.nan
    if e == 0:  # subnormal: m * 2^(1 - bias - man_bits)
        return sign * math.ldexp(m, 1 - f.bias - f.man_bits)
    return sign * math.ldexp((1 << f.man_bits) + m, e - f.bias - f.man_bits)


def float_to_fp8(x: float, dt: DType) -> int:
    """The fp8 code of x, rounded to float32 first (kernels compute fp8 in float32), then to the nearest fp8 value,
    ties to even. Finite values beyond the largest and +-inf saturate to +-largest (tinygrad's conversion, CUDA's
    satfinite); nan is 0x7f (with x's sign)."""
    f = FP8_FORMATS[dt]
    x = _round_float(x, dtypes.float32)
    sign = 0x80 if math.copysign(1.0, x) < 0 else 0
    if math.isnan(x):
        return sign | 0x7F
    a = abs(x)
    if math.isinf(a):
        return sign | f.top
    # a's binade (the subnormals share the lowest normal one); its fp8 spacing is 2^(e - man_bits)
    e = max(math.frexp(a)[1] - 1, 1 - f.bias) if a else 1 - f.bias
    steps = round(math.ldexp(a, f.man_bits - e))  # exact scaling; Python's round() is ties-to-even
    # code = exponent field and mantissa; a carry of the rounding into the next binade comes out right
    code = ((e + f.bias - 1) << f.man_bits) + steps
    return sign | min(code, f.top)


def _round_float(x: float, dt: DType) -> float:
    if dt is dtypes.float32:  # the common case first (packing keeps nan and inf; a finite overflow raises)
        try:
            return _f32_unpack(_f32_pack(x))[0]
        except OverflowError:
            return math.copysign(math.inf, x)
    if dt in FP8_FORMATS:  # (saturates: +-inf too)
        return fp8_to_float(float_to_fp8(x, dt), dt)
    if dt is dtypes.float64 or math.isnan(x) or math.isinf(x):
        return x
    try:
        if dt is dtypes.float16:
            return struct.unpack("e", struct.pack("e", x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)
    if dt is dtypes.bfloat16:
        bits = struct.unpack("I", struct.pack("f", _round_float(x, dtypes.float32)))[0]
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
        return struct.unpack("f", struct.pack("I", bits))[0]
    return x


def _next_float32(x: float, up: bool) -> float:
    """The float32 after (up) or before the finite float32 x."""
    if x == 0:
        return math.copysign(2.0**-149, 1.0 if up else -1.0)
    bits = struct.unpack("I", struct.pack("f", x))[0] + (1 if (x > 0) == up else -1)
    return struct.unpack("f", struct.pack("I", bits))[0]


def fma(a: float, b: float, c: float, dt: DType) -> float:
    """a*b + c rounded once to dt (float32 or float64), as C's fmaf/fma: the exact value, correctly rounded
    (to nearest, ties to even). A float32 product is exact in float64, so one float64 add suffices unless its
    result lands on a float32 tie (the exact value may lie on either side): then, and for float64, the exact
    value is computed with Fractions."""
    if not (math.isfinite(a) and math.isfinite(b)):
        return _round_float(a * b + c, dt)  # inf/nan products: as unfused
    if not math.isfinite(c):
        return c
    if dt is dtypes.float32:
        s = a * b + c
        r = _round_float(s, dt)
        if r == s:  # s is a float32, and the exact value within half a float64 ulp of it rounds to it
            return r
        if not math.isinf(r) and s - r != _next_float32(r, s > r) - s:
            return r  # not a tie: the exact value is on s's side of the float32 midpoint
    exact = Fraction(a) * Fraction(b) + Fraction(c)
    if exact == 0:  # IEEE: +0, unless a zero product and c are both -0
        return math.copysign(0.0, a) * math.copysign(1.0, b) + c if (a == 0 or b == 0) and c == 0 else 0.0
    try:
        s = float(exact)  # correctly rounded to float64
    except OverflowError:
        return math.copysign(math.inf, exact)
    if dt is dtypes.float64:
        return s
    r = _round_float(s, dt)
    if r == s or math.isinf(r):
        return r
    other = _next_float32(r, s > r)
    mid = (Fraction(r) + Fraction(other)) / 2
    if exact == mid:
        return r  # struct's rounding of s (itself the tie) is ties-to-even
    return other if (exact > mid) == (other > r) else r


def normalize(x: Any, dt: DType) -> ConstType:
    """A Python value as a value of dtype `dt` (rounded float, wrapped int, bool)."""
    if dt.is_float:
        return _round_float(float(x), dt)
    return cast_scalar(x, dt)


def _idiv(a: Any, b: Any) -> Any:
    if b == 0:
        return 0  # undefined in C; the PYTHON device must not crash on a masked-out lane
    return a // b


def _mod(a: Any, b: Any) -> Any:
    if b == 0:
        return 0
    return a % b


def _recip(a: float) -> float:
    if a == 0:
        return math.copysign(math.inf, a)
    return 1.0 / a


def _log2(a: float) -> float:
    if a < 0 or math.isnan(a):
        return math.nan
    if a == 0:
        return -math.inf
    return math.log2(a)


def _sqrt(a: float) -> float:
    return math.nan if a < 0 or math.isnan(a) else math.sqrt(a)


def _exp2(a: float) -> float:
    try:
        return 2.0**a
    except OverflowError:
        return math.inf


def _sin(a: float) -> float:
    return math.nan if math.isinf(a) or math.isnan(a) else math.sin(a)


def _trunc(a: Any) -> Any:
    return a if math.isinf(a) or math.isnan(a) else float(math.trunc(a))


def _max(a: Any, b: Any) -> Any:
    if isinstance(a, float) and (math.isnan(a) or math.isnan(b)):
        return math.nan
    return max(a, b)


def _shr(a: int, b: int) -> int:
    return a >> b


def _shl(a: int, b: int) -> int:
    return a << b


def _pow(a: Any, b: Any) -> Any:
    if type(a) is int and type(b) is int:  # ints: exact, wrapping (modulo 2^64, then the dtype's width), torch's b < 0
        if b >= 0:
            return pow(a, b, 1 << 64)
        return 1 if a == 1 else (-1 if b & 1 else 1) if a == -1 else 0
    try:
        return float(a**b) if not (a < 0 and b != int(b)) else math.nan
    except (OverflowError, ZeroDivisionError):
        return math.inf


def _fdiv(a: Any, b: Any) -> Any:
    if b == 0:
        return math.nan if a == 0 or math.isnan(a) else math.copysign(math.inf, a) * math.copysign(1.0, b)
    return a / b


# struct formats of the float dtypes (bfloat16 is the top half of a float32)
_FLOAT_FMT = {dtypes.float16: "<e", dtypes.float32: "<f", dtypes.float64: "<d"}
_FLOAT_OF_SIZE = {2: dtypes.float16, 4: dtypes.float32, 8: dtypes.float64}
_UINT_OF_SIZE = {1: dtypes.uint8, 2: dtypes.uint16, 4: dtypes.uint32, 8: dtypes.uint64}


def _to_bits(v: ConstType, dt: DType) -> int:
    """The storage bits of `v`, a value of `dt`, as a non-negative int."""
    if dt is dtypes.bfloat16:
        return _to_bits(v, dtypes.float32) >> 16  # v holds a bfloat16 value exactly: the low half is zero
    if dt in FP8_FORMATS:
        return float_to_fp8(v, dt)  # type: ignore[arg-type]  # exact: v holds an fp8 value
    if dt.is_float:
        return int.from_bytes(struct.pack(_FLOAT_FMT[dt], v), "little")
    return int(v) & ((1 << (8 * dt.itemsize)) - 1)


def _from_bits(bits: int, dt: DType) -> ConstType:
    if dt is dtypes.bfloat16:
        return _from_bits(bits << 16, dtypes.float32)
    if dt in FP8_FORMATS:
        return fp8_to_float(bits, dt)
    if dt.is_float:
        return struct.unpack(_FLOAT_FMT[dt], bits.to_bytes(dt.itemsize, "little"))[0]
    return cast_scalar(bits, dt)


def bitcast(v: ConstType, src: DType, dst: DType) -> ConstType:
    """BITCAST: the bits of `v` (a value of `src`) read as a value of `dst`; the itemsizes must match."""
    if src.itemsize != dst.itemsize:
        raise ValueError(f"bitcast: {src} has {src.itemsize} bytes, {dst} has {dst.itemsize}")
    return _from_bits(_to_bits(v, src), dst)


def _bitcast_source(v: ConstType, dst: DType) -> DType:
    """The source dtype of a BITCAST to `dst` told from the value alone (the PYTHON device passes only `dst`):
    a float is the float of dst's size (float16 for 2 bytes: a bfloat16 source must use `bitcast`), an int
    any int of that size (the bits are the value modulo 2**bits either way), a bool a byte."""
    if isinstance(v, float):
        return _FLOAT_OF_SIZE[dst.itemsize]
    return _UINT_OF_SIZE[dst.itemsize] if dst.is_float else dst


# op -> python function over already-typed values; results are normalized to the op's dtype by exec_alu
ALU_PY: dict[Ops, Callable[..., Any]] = {
    Ops.RECIP: _recip,
    Ops.TRUNC: _trunc,
    Ops.NEG: lambda a: -a if not isinstance(a, bool) else not a,
    Ops.NOT: lambda a: not a,
    Ops.EXP2: _exp2,
    Ops.LOG2: _log2,
    Ops.SIN: _sin,
    Ops.SQRT: _sqrt,
    Ops.ADD: lambda a, b: a + b if not isinstance(a, bool) else a or b,
    Ops.SUB: lambda a, b: a - b,
    Ops.MUL: lambda a, b: a * b if not isinstance(a, bool) else a and b,
    Ops.DIV: _fdiv,
    Ops.MAX: _max,
    Ops.MOD: _mod,
    Ops.IDIV: _idiv,
    Ops.POW: _pow,
    Ops.CMPLT: lambda a, b: a < b,
    Ops.CMPNE: lambda a, b: a != b,
    Ops.CMPGT: lambda a, b: a > b,
    Ops.CMPGE: lambda a, b: a >= b,
    Ops.CMPLE: lambda a, b: a <= b,
    Ops.CMPEQ: lambda a, b: a == b,
    Ops.XOR: lambda a, b: a ^ b,
    Ops.OR: lambda a, b: a | b,
    Ops.AND: lambda a, b: a & b,
    Ops.SHR: _shr,
    Ops.SHL: _shl,
    Ops.WHERE: lambda c, a, b: a if c else b,
    Ops.MULACC: lambda a, b, c: a * b + c,
}


def exec_alu(op: Ops, dtype: DType, *vals: ConstType) -> ConstType:
    """Evaluate one elementwise op on scalars, with the result as a value of `dtype`."""
    if op is Ops.BITCAST:
        (v,) = vals
        return bitcast(v, _bitcast_source(v, dtype), dtype)
    if op is Ops.CAST:
        (v,) = vals
        if dtype.is_int and isinstance(v, float):
            if math.isnan(v) or math.isinf(v):
                return 0
            v = math.trunc(v)
        return normalize(v, dtype)
    if op is Ops.IDIV and dtype.is_float:
        return normalize(math.floor(_fdiv(*vals)) if vals[1] != 0 else _fdiv(*vals), dtype)
    if op is Ops.MOD and dtype.is_float:
        a, b = vals
        return normalize(math.nan if b == 0 else a % b, dtype)  # Python's float % is floor-mod (1 % inf == 1)
    if op is Ops.MULACC and dtype in (dtypes.float32, dtypes.float64):
        return fma(*vals, dtype)  # type: ignore[arg-type]  # fused: rounded once
    return normalize(ALU_PY[op](*vals), dtype)
