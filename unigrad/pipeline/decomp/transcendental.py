"""EXP2, LOG2, SIN, SQRT and POW as primitives: range reduction, a polynomial, special cases by WHERE.

Each rule takes the node to replace and returns a graph of primitives of the same dtype. float32 and float64
have their own constants (numerics.FORMATS); float16 and bfloat16 compute in float32 and round once at the
end. Polynomials are Taylor series of the reduced function with coefficients from their closed forms, cut
where the first dropped term falls below 2^-(mantissa+4) of the result (numerics.truncated), evaluated by
Horner's rule in MULACC steps (one fused multiply-add each where the target has one). The graphs are
branch-free and written so that C compilers vectorize the kernel loop (no float->unsigned conversions, no
TRUNC in the hot ops, no polynomial that only one arm of a select uses where gcc would sink it into a branch).

  EXP2  x = n + f, n = rint(x), f in [-1/2, 1/2]; 2^f by its Taylor series (degree 7 / 13); 2^n as the
        product of two exponent-field powers of two (n split by an int shift), so that 2^f*2^n reaches the
        denormals with a single rounding. x is clamped to [-(bias+mantissa+2), bias+2] first: overflow gives
        inf, underflow 0; nan gives nan.
  LOG2  x = 2^e*m with m in [sqrt(1/2), sqrt(2)) from the bits (denormals scaled by 2^(mantissa+1) first);
        ln(m) = f - (f^2/2 - s*(f^2/2 + R(s^2))) with f = m-1, s = f/(2+f) and R the tail of the atanh
        series, coefficients 2/(2k+1) (fdlibm's arrangement); log2(x) = e + ln(m)*log2(e).
        +-0 -> -inf, x < 0 or nan -> nan, inf -> inf (computed on x = 1, the special value added after).
  SIN   q = rint(x*2/pi), r = x - q*pi/2 by Cody-Waite: pi/2 is cut into parts of few bits, so each q*part is
        exact and r loses nothing to cancellation; sin or cos Taylor polynomial of r by the quadrant q mod 4
        (read from the low bits of the rounding sum). Accurate to a few ulp for |q| < 2^16 (float32:
        |x| < 102943) / 2^26 (float64: |x| < 1.05e8); beyond, the products q*part round and the absolute error
        grows with |x| (float32: ~5e-3 at 2e5, ~3e-2 at 1e6, any value in [-1, 1] past ~1e7; r is clamped to
        [-1, 1], so the result never leaves [-1, 1]). inf and nan -> nan; +-0 -> +-0.
  SQRT  Newton's method: y ~ 1/sqrt(x) from the bit trick (magic - bits/2, 0.18% off), 2 (float32) / 3
        (float64) steps y*(3/2 - x/2*y*y), then s = x*y corrected once by s + y/2*(x - s*s), about 1 ulp;
        denormals scaled by 2^(mantissa+1) first. (The spec's EXP2(LOG2(x)/2) is the same function, less
        accurate.) +-0 -> +-0, x < 0 -> nan, inf -> inf, nan -> nan.
  POW   the spec's a^b = EXP2(LOG2(|a|)*b), whose relative error grows like |b*log2(a)|*2^-mantissa (about
        1e-5 for float32 results near 1e38), with torch's special cases: b = +-0 -> 1 (even for a nan);
        |a| = 1 -> 1 for any b but (-1)^nan = nan; a < 0 with an integer b -> (-1)^b*|a|^b; finite a < 0
        with a non-integer b -> nan; -0 and -inf keep their sign under odd integer b; +-inf count as even.
        Integer dtypes: square-and-multiply over the bits of b in the unsigned type of the same size (so
        overflow wraps, as torch); b < 0 gives 1/a^|b| truncated toward zero (1, (-1)^b or 0).

Measured (CPU, with fma; 2M random inputs per range, against a long double reference): float32 EXP2 0.9 ulp,
LOG2 1.6 ulp, SQRT 0.85 ulp, SIN 1.6 ulp on [-4, 4] and 3.0 ulp on |x| < 102943; float64 EXP2 0.8, LOG2 1.3,
SIN 1.5 ulp on |x| < 1.05e8. (Unfused, on a target without fma: EXP2 1.1, LOG2 1.9.)"""

from __future__ import annotations

import math

from unigrad.dtype import dtypes
from unigrad.ir.ops import Ops
from unigrad.ir.uop import UOp
from unigrad.pipeline.decomp.numerics import (
    COMPUTE_IN,
    FORMATS,
    PI,
    add_const,
    bitcast,
    clamp,
    const,
    horner,
    is_nan,
    neg,
    pow2,
    recip,
    rint,
    rint_shifted,
    shr,
    split,
    sub,
    trunc,
    truncated,
)

INF, NAN = math.inf, math.nan

# 2^f = sum (ln2 f)^k / k!, |f| <= 1/2, 2^f >= 1/sqrt(2)
EXP2_POLY = {
    dt: truncated([math.log(2) ** k / math.factorial(k) for k in range(40)], 0.5, 0.7, fmt.eps)
    for dt, fmt in FORMATS.items()
}
# ln(1+f) = 2 atanh(s) = 2s + s*R(z), z = s^2, R(z) = sum_{k>=1} 2 z^k/(2k+1); |s| <= (sqrt2-1)/(sqrt2+1),
# ln(1+f) ~ 2s: a term of R is negligible below eps*2
_S_MAX = (math.sqrt(2) - 1) / (math.sqrt(2) + 1)
LOG_R = {
    dt: truncated([2 / (2 * k + 1) for k in range(60)], _S_MAX**2, 2.0, fmt.eps)[1:] for dt, fmt in FORMATS.items()
}
# sin(r) = r * sum (-1)^k z^k/(2k+1)!, cos(r) = sum (-1)^k z^k/(2k)!, z = r^2 <= 0.8^2 (|r| <= pi/4 + rounding)
SIN_POLY = {
    dt: truncated([(-1) ** k / math.factorial(2 * k + 1) for k in range(30)], 0.64, 0.9, fmt.eps)
    for dt, fmt in FORMATS.items()
}
COS_POLY = {
    dt: truncated([(-1) ** k / math.factorial(2 * k) for k in range(30)], 0.64, 0.69, fmt.eps)
    for dt, fmt in FORMATS.items()
}
# pi/2 for Cody-Waite: parts of 8 (float32) / 27 (float64) bits, exact times q < 2^16 / 2^26, then one full
# part; 72 / 161 bits of pi/2 in all, enough that r keeps full relative precision near multiples of pi/2
PIO2_PARTS = {
    dtypes.float32: split(PI / 2, 8, 7, FORMATS[dtypes.float32]),
    dtypes.float64: split(PI / 2, 27, 5, FORMATS[dtypes.float64]),
}
# 1/sqrt(x) ~ bits(magic - bits(x)/2) within 0.18% (Lomont's constants); Newton steps to reach the format
RSQRT_MAGIC = {dtypes.float32: 0x5F375A86, dtypes.float64: 0x5FE6EB50C7B537A9}
RSQRT_STEPS = {dtypes.float32: 2, dtypes.float64: 3}


def via_float32(u: UOp) -> UOp | None:
    """A 16-bit float op computed on float32 sources and cast back (isel then rewrites the float32 op)."""
    dt = COMPUTE_IN.get(u.dtype)
    if dt is None:
        return None
    return UOp(u.op, tuple(s.cast(dt) for s in u.src), u.arg).cast(u.dtype)


def exp2(u: UOp) -> UOp:
    if (r := via_float32(u)) is not None:
        return r
    (x,) = u.src
    fmt = FORMATS[u.dtype]
    lo, hi = -(fmt.bias + fmt.mantissa + 2), fmt.bias + 2
    # clamped by compare-and-selects that take the bound for a nan (a compare and a blend each; the nan-propagating
    # maximum is twice that): the int conversion below never sees a nan, and a nan's result is put back last
    xc = (const(x, lo) < x).where(x, const(x, lo))
    xc = (xc < hi).where(xc, const(x, hi))
    n = rint(xc, fmt)
    f = sub(xc, n)  # exact: |f| <= 1/2
    p = horner(f, EXP2_POLY[u.dtype])  # 2^f in [0.7, 1.42]
    # 2^n = 2^n1 * 2^n2 with n1 = floor(n/2), both in the normal range; the shift sees a non-negative int
    ni = n.cast(fmt.int)
    n1 = add_const(shr(add_const(ni, -2 * lo), 1), lo)
    out = (p * pow2(n1, fmt)) * pow2(sub(ni, n1), fmt)
    return is_nan(x).where(x, out)


def log2(u: UOp) -> UOp:
    if (r := via_float32(u)) is not None:
        return r
    (x,) = u.src
    fmt = FORMATS[u.dtype]
    # special inputs (0, negative, inf, nan) compute log2(1) = 0 and get their value added at the end: the
    # polynomial feeds no select, so C compilers can vectorize without speculating it
    normal = (const(x, 0.0) < x) & (x < INF)
    special = x.ne(0.0).where(x.ne(INF).where(const(x, NAN), const(x, INF)), const(x, -INF))
    x = normal.where(x, const(x, 1.0))
    tiny = x < fmt.min_normal  # denormals are scaled into the normals
    xs = tiny.where(x * 2.0 ** (fmt.mantissa + 1), x)
    half = fmt.bits_of(math.sqrt(0.5))
    # t's exponent field is e + bias for xs = 2^e*m, m in [sqrt(1/2), sqrt(2)); its mantissa field is m's offset
    t = add_const(bitcast(xs, fmt.uint), (fmt.bias << fmt.mantissa) - half)
    e_biased = shr(t, fmt.mantissa).cast(fmt.int)  # signed: int -> float converts in one SIMD instruction
    unbias = tiny.where(const(e_biased, -(fmt.bias + fmt.mantissa + 1)), const(e_biased, -fmt.bias))
    e = (e_biased + unbias).cast(u.dtype)  # (in ints: gcc 12 does not vectorize a float select of constants)
    m = bitcast(add_const(t & ((1 << fmt.mantissa) - 1), half), u.dtype)
    f = add_const(m, -1.0)  # exact, in [-0.29, 0.41]
    s = f * recip(add_const(f, 2.0))
    z = s * s
    hfsq = (f * f) * 0.5
    ln = sub(f, sub(hfsq, s * (hfsq + z * horner(z, LOG_R[u.dtype]))))
    return (e + ln * (1 / math.log(2))) + normal.where(const(x, 0.0), special)


def sin(u: UOp) -> UOp:
    if (r := via_float32(u)) is not None:
        return r
    (x,) = u.src
    fmt = FORMATS[u.dtype]
    bad = (x * 0.0).ne(0.0)  # inf or nan
    xs = bad.where(const(x, 0.0), x)
    shifted = rint_shifted(xs * (2 / math.pi), fmt)
    q = add_const(shifted, -fmt.rint_magic)  # rint(x*2/pi)
    r = xs
    for part in PIO2_PARTS[u.dtype]:  # r = x - q*pi/2, one exact product at a time
        r = r + q * (-part)
    quadrant = bitcast(shifted, fmt.int) & 3  # q mod 4 from the low mantissa bits (garbage, not UB, beyond)
    r = clamp(r, -1.0, 1.0)  # no-op in range (|r| <= pi/4); beyond, it keeps both polynomials within [-1, 1]
    z = r * r
    s = r + (r * z) * horner(z, SIN_POLY[u.dtype][1:])
    hz = z * 0.5
    w = add_const(neg(hz), 1.0)  # cos(r) = w + ((1-w) - z/2) + z^2*C(z): (1-w) - z/2 is w's rounding error
    c = w + (sub(add_const(neg(w), 1.0), hz) + (z * z) * horner(z, COS_POLY[u.dtype][2:]))
    v = (quadrant & 1).ne(0).where(c, s)
    v = (quadrant & 2).ne(0).where(neg(v), v)
    return bad.where(const(x, NAN), x.ne(0.0).where(v, x))


def sqrt(u: UOp) -> UOp:
    if (r := via_float32(u)) is not None:
        return r
    (x,) = u.src
    fmt = FORMATS[u.dtype]
    k = (fmt.mantissa + 1) // 2 * 2  # an even power of two: sqrt scales back by 2^(k/2) exactly
    tiny = x < fmt.min_normal
    xs = tiny.where(x * 2.0**k, x)
    h = shr(bitcast(xs, fmt.uint), 1)
    all_ones = (1 << fmt.bits) - 1
    y = bitcast(add_const(h ^ all_ones, RSQRT_MAGIC[u.dtype] + 1), u.dtype)  # magic - h, wrapping (~h = -h-1)
    hx = xs * 0.5
    for _ in range(RSQRT_STEPS[u.dtype]):
        y = y * add_const(neg((hx * y) * y), 1.5)
    s = xs * y
    s = s + (y * 0.5) * sub(xs, s * s)
    s = s * tiny.where(const(x, 2.0 ** -(k // 2)), const(x, 1.0))
    s = x.ne(INF).where(s, const(x, INF))
    return (x < 0.0).where(const(x, NAN), s)


def pow_(u: UOp) -> UOp:
    if (r := via_float32(u)) is not None:
        return r
    if not u.dtype.is_float:
        return _int_pow(*u.src)
    a, b = u.src
    fmt = FORMATS[u.dtype]
    bits = bitcast(a, fmt.uint)
    absa = bitcast(bits & ((1 << (fmt.bits - 1)) - 1), u.dtype)
    mag = UOp(Ops.EXP2, (UOp(Ops.LOG2, (absa,)) * b,))  # the spec's law: |a|^b = 2^(log2|a| * b)
    mag = absa.ne(1.0).where(mag, const(a, 1.0))
    is_int = trunc(b).eq(b)  # +-inf count as (even) integers, nan does not
    odd = (trunc(b * 0.5) * 2.0).ne(b) & is_int
    out = ((bitcast(a, fmt.int) < 0) & odd).where(neg(mag), mag)  # sign bit: -0 and -inf included
    bad = (a < 0.0) & a.ne(-INF) & is_int.ne(True)  # a finite negative base to a non-integer power
    out = bad.where(const(a, NAN), out)
    return b.ne(0.0).where(out, const(a, 1.0))


def _int_pow(a: UOp, b: UOp) -> UOp:
    """a^b on ints by square-and-multiply over the bits of b, in the unsigned type of the same size."""
    dt = a.dtype
    udt = {1: dtypes.uint8, 2: dtypes.uint16, 4: dtypes.uint32, 8: dtypes.uint64}[dt.itemsize]
    e = (b < 0).where(const(b, 0), b)
    nbits = 8 * dt.itemsize - (0 if dt.is_unsigned else 1)
    if isinstance(b.vmax, int) and b.vmax >= 0:
        nbits = min(nbits, b.vmax.bit_length())  # a known exponent needs only its bits
    base, r = a.cast(udt), const(a.cast(udt), 1)
    for k in range(nbits):
        bit = (shr(e, k) & 1).ne(0)
        r = bit.where(r * base, r)
        if k < nbits - 1:
            base = base * base
    out = r.cast(dt)
    if dt.is_unsigned:
        return out
    # a negative exponent: 1/a^|b| truncated -- 1 for a = 1, (-1)^b for a = -1, 0 otherwise
    minus_one = (b & 1).ne(0).where(const(a, -1), const(a, 1))
    inv = a.eq(1).where(const(a, 1), a.eq(-1).where(minus_one, const(a, 0)))
    return (b < 0).where(inv, out)
