"""Float formats and the small graph builders the decompositions are written with.

Every builder returns primitive UOps only (ADD, MUL, MAX, CMPLT, CMPNE, WHERE, CAST, BITCAST, SHL, SHR, AND,
OR, XOR, TRUNC, RECIP): constants are folded here in Python (`x + (-c)`, never `x - c`, which would build
MUL(c, -1) in the kernel).
"""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence
from fractions import Fraction

from unigrad.dtype import ConstType, DType, dtypes
from unigrad.helpers import record
from unigrad.ir.ops import Ops
from unigrad.ir.uop import UOp


@record(frozen=True)
class FloatFormat:
    """An IEEE-754 binary format as the decompositions see it: the float dtype, the unsigned and signed ints
    of its size (its bits), explicit mantissa bits and exponent bias."""

    dtype: DType
    uint: DType
    int: DType
    mantissa: int  # 23 / 52
    bias: int  # 127 / 1023

    @property
    def bits(self) -> int:
        return 8 * self.dtype.itemsize

    @property
    def min_normal(self) -> float:
        return 2.0 ** (1 - self.bias)

    @property
    def rint_magic(self) -> float:
        """1.5*2^mantissa: adding it to |x| < 2^(mantissa-1) leaves no fraction bits (see rint_shifted)."""
        return 1.5 * 2.0**self.mantissa

    @property
    def eps(self) -> float:
        """Polynomial truncation target: 2^-(mantissa+4), a sixteenth of an ulp at 1."""
        return 2.0 ** -(self.mantissa + 4)

    def round(self, v: float) -> float:
        """`v` rounded to this format."""
        fmt = "<f" if self.dtype is dtypes.float32 else "<d"
        return struct.unpack(fmt, struct.pack(fmt, v))[0]

    def bits_of(self, v: float) -> int:
        """The bit pattern of `v` rounded to this format."""
        fmt = "<f" if self.dtype is dtypes.float32 else "<d"
        return int.from_bytes(struct.pack(fmt, v), "little")


FORMATS: dict[DType, FloatFormat] = {
    dtypes.float32: FloatFormat(dtypes.float32, dtypes.uint32, dtypes.int32, 23, 127),
    dtypes.float64: FloatFormat(dtypes.float64, dtypes.uint64, dtypes.int64, 52, 1023),
}
# 16- and 8-bit floats compute in float32 and round once at the end: float32 carries 13+ more mantissa bits, so
# the float32 result (a few float32 ulps off) rounds to the correctly rounded narrow value nearly always
COMPUTE_IN: dict[DType, DType] = {dt: dtypes.float32 for dt in (dtypes.float16, dtypes.bfloat16, *dtypes.fp8s)}

# pi to 100 decimals: the Cody-Waite constants are cut from it exactly (as a Fraction)
PI = Fraction("3.1415926535897932384626433832795028841971693993751058209749445923078164062862089986280348253421170679")


def two_over_pi_bits(n: int) -> int:
    """floor(2/pi * 2^n), exact to the last bit or one below it: pi from Machin's formula pi = 16 atan(1/5) -
    4 atan(1/239) in fixed point with 64 guard bits (Payne-Hanek needs 2/pi to ~1300 bits; PI above has 332)."""
    g = n + 64

    def atan_inv(k: int) -> int:  # atan(1/k) * 2^g: sum of (-1)^i / ((2i+1) k^(2i+1))
        total, power, i = 0, (1 << g) // k, 0
        while power:
            total += power // (2 * i + 1) if i % 2 == 0 else -(power // (2 * i + 1))
            power //= k * k
            i += 1
        return total

    pi_g = 16 * atan_inv(5) - 4 * atan_inv(239)  # pi * 2^g, off by a few units
    return (1 << (n + 1 + g)) // pi_g


# ---------------------------------------------------------------- building primitives


def const(like: UOp, v: ConstType) -> UOp:
    return UOp.const(like.dtype, v)


def bitcast(x: UOp, dt: DType) -> UOp:
    return UOp(Ops.BITCAST, (x,), dt)


def shl(x: UOp, n: int) -> UOp:
    return UOp(Ops.SHL, (x, const(x, n)))


def shr(x: UOp, n: int) -> UOp:
    return UOp(Ops.SHR, (x, const(x, n)))


def trunc(x: UOp) -> UOp:
    return UOp(Ops.TRUNC, (x,))


def recip(x: UOp) -> UOp:
    return UOp(Ops.RECIP, (x,))


def neg(x: UOp) -> UOp:
    return x * -1


def sub(a: UOp, b: UOp) -> UOp:
    return a + neg(b)


def add_const(x: UOp, c: ConstType) -> UOp:
    return x + const(x, c)


def is_nan(x: UOp) -> UOp:
    return x.ne(x)


def min_const(x: UOp, hi: ConstType) -> UOp:
    """min(x, hi), nan propagating (hi < nan is false)."""
    c = const(x, hi)
    return (c < x).where(c, x)


def clamp(x: UOp, lo: ConstType, hi: ConstType) -> UOp:
    return min_const(x.maximum(lo), hi)


def rint_shifted(x: UOp, fmt: FloatFormat) -> UOp:
    """x + 1.5*2^mantissa: for |x| < 2^(mantissa-1) no fraction bits are left (IEEE rounding per op, ties to
    even; C without -ffast-math keeps the ops as written), and the low mantissa bits hold rint(x) modulo
    2^(mantissa-1) in two's complement."""
    return add_const(x, fmt.rint_magic)


def rint(x: UOp, fmt: FloatFormat) -> UOp:
    """x rounded to the nearest integer, ties to even, for |x| < 2^(mantissa-1)."""
    return add_const(rint_shifted(x, fmt), -fmt.rint_magic)


def horner(x: UOp, coeffs: Sequence[float]) -> UOp:
    """c0 + x*(c1 + x*(c2 + ...)), each step p*x + c one MULACC: a target with a fused multiply-add rounds it
    once, in one instruction, half the latency of the chain (isel turns it back into MUL and ADD elsewhere)."""
    p = const(x, coeffs[-1])
    for c in reversed(coeffs[:-1]):
        p = UOp(Ops.MULACC, (p, x, const(x, c)))
    return p


def pow2(n: UOp, fmt: FloatFormat) -> UOp:
    """2^n for an int n (of fmt.int) in the normal exponent range [1-bias, bias]: n+bias in the exponent field."""
    return bitcast(shl(add_const(n, fmt.bias), fmt.mantissa), fmt.dtype)


# ---------------------------------------------------------------- constants from their laws


def truncated(coeff: Sequence[float], xmax: float, fmin: float, eps: float) -> tuple[float, ...]:
    """The leading coefficients of a power series sum(coeff[k] x^k) with |x| <= xmax approximating a function
    with |f| >= fmin there: up to (not including) the first term whose size is below eps*fmin."""
    n = next(k for k in range(1, len(coeff)) if abs(coeff[k]) * xmax**k < eps * fmin)
    return tuple(coeff[:n])


def split(value: Fraction, bits: int, parts: int, fmt: FloatFormat) -> tuple[float, ...]:
    """`value` as a sum of `parts` floats, each but the last rounded to `bits` significant bits (so q*part is
    exact for integers |q| < 2^(mantissa+1-bits)) and the last to the full precision of the format."""
    out: list[float] = []
    rest = value
    for i in range(parts):
        b = bits if i < parts - 1 else fmt.mantissa + 1
        e = math.frexp(float(rest))[1]  # rest = m * 2^e with 0.5 <= |m| < 1
        scale = Fraction(2) ** (b - e)
        part = Fraction(round(rest * scale)) / scale
        out.append(float(part))
        rest -= part
    return tuple(out)
