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
        exact and r loses nothing to cancellation, for |q| < 2^16 (float32: |x| < 102943) / 2^26 (float64: |x| <
        1.05e8). Above 1e5 / 1.05e8, Payne-Hanek (selected per lane; both are computed, branch-free): x*2/pi mod 4
        from the significand times a window of 2/pi's bits chosen by the exponent (96 / 192 bits, picked from a
        table of 32-bit words by a barrel shifter of selects), in 32-bit integer columns, exact to 2^-62 / 2^-126 of
        a quarter turn, so it holds over the whole float range. Its cost is paid by every lane: float32 sin kernels
        take ~2x the time of Cody-Waite alone, float64 ~2.8x. Then a sin or cos Taylor polynomial of r by the
        quadrant q mod 4. sin(x + k*pi/2) for the constant k*pi/2 rounded to the dtype (cos x = sin(x + pi/2), the
        gradient of sin) reduces x alone and adds k to the quadrant: cos keeps its relative accuracy near its zeros
        (a 16-bit x + k*pi/2 is taken apart the same way before it is computed in float32).
        inf and nan -> nan; +-0 -> +-0.
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
SIN 1.5 ulp on |x| < 1.05e8. (Unfused, on a target without fma: EXP2 1.1, LOG2 1.9.) SIN past Cody-Waite (against
mpmath, 20k float32 / 3k float64 inputs per decade range up to the largest finite value): float32 sin 2.4, cos
(sin(x + pi/2)) 2.3 ulp; float64 2.0 ulp each; the nearest double to a multiple of pi/2 (6381956970095103*2^797)
0 ulp."""

from __future__ import annotations

import math
from fractions import Fraction

from unigrad.dtype import dtypes
from unigrad.helpers import record
from unigrad.ir.ops import Ops
from unigrad.ir.uop import UOp
from unigrad.pipeline.decomp.numerics import (
    COMPUTE_IN,
    FORMATS,
    FloatFormat,
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
    two_over_pi_bits,
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


@record(frozen=True)
class PayneHanek:
    """Payne-Hanek reduction constants of a float format: `words`, 2/pi's bits after PH_PAD zeros (so a window may
    start before its first bit) as 32-bit words (word j: bits 32j .. 32j+31; the first bit of 2/pi at index
    PH_PAD - 1); a window of `nwords` words; `keep` of its words below the top one make the fraction; used above
    `min_x`, where Cody-Waite's q*part products stop being exact."""

    words: tuple[int, ...]
    nwords: int
    keep: int
    min_x: float


PH_PAD = 32


def _payne_hanek_table(fmt: FloatFormat, nwords: int, keep: int, min_x: float) -> PayneHanek:
    top = (fmt.bias << 1) - (fmt.bias + fmt.mantissa + 2) + PH_PAD  # the last window's first bit (largest exponent)
    count = (top >> 5) + nwords + 1  # words v .. v + nwords for v up to top >> 5
    bits = two_over_pi_bits(32 * count - PH_PAD)  # 32*count bits, the first PH_PAD of them zero
    words = tuple((bits >> (32 * (count - 1 - j))) & 0xFFFFFFFF for j in range(count))
    return PayneHanek(words, nwords, keep, min_x)


# float32: x*2/pi mod 4 from 96 bits of 2/pi (24 x 96-bit product) to 2^-62; Cody-Waite holds for |q| < 2^16
# (|x| < 102943). float64: 192 bits (53 x 192) to 2^-126 (the nearest double to a multiple of pi/2 is 2^-61 of a
# quarter turn off it: 65 bits left of r's 53); Cody-Waite holds for |q| < 2^26 (|x| < 1.054e8). Cody-Waite's r is
# the more accurate (Payne-Hanek's r is rounded twice more: its limbs summed, times pi/2): kept up to its limit.
PAYNE_HANEK = {
    dtypes.float32: _payne_hanek_table(FORMATS[dtypes.float32], 3, 1, 1.0e5),
    dtypes.float64: _payne_hanek_table(FORMATS[dtypes.float64], 6, 3, 1.05e8),
}
# k*pi/2 rounded to each float dtype -> k, for the constants sin(x + k*pi/2) moves the quadrant by
# (as UOp.const stores it: 16-bit floats too, whose sin(x + k*pi/2) is computed in float32 from x and k)
QUARTER_TURNS = {
    dt: {UOp.const(dt, float(k * PI / 2)).value: k for k in (-3, -2, -1, 1, 2, 3)} for dt in (*FORMATS, *COMPUTE_IN)
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
    whole = _integral(x)  # an integer power (exp's 2^n): no fraction, no polynomial, never a nan
    n = xc if whole else rint(xc, fmt)
    # 2^n = 2^n1 * 2^n2 with n1 = floor(n/2), both in the normal range; the shift sees a non-negative int
    ni = n.cast(fmt.int)
    n1 = add_const(shr(add_const(ni, -2 * lo), 1), lo)
    if whole:
        return pow2(n1, fmt) * pow2(sub(ni, n1), fmt)
    f = sub(xc, n)  # exact: |f| <= 1/2
    p = horner(f, EXP2_POLY[u.dtype])  # 2^f in [0.7, 1.42]
    out = (p * pow2(n1, fmt)) * pow2(sub(ni, n1), fmt)
    return is_nan(x).where(x, out)


_INTEGRAL_OPS = frozenset({Ops.ADD, Ops.SUB, Ops.MUL, Ops.MAX, Ops.NEG})


def _integral(x: UOp, depth: int = 8) -> bool:
    """x is an integer for every input (a float cast of an int, integer constants, and sums, products and selects of
    those): looked for up to `depth` ops deep."""
    if x.op is Ops.CONST:
        return float(x.arg.value).is_integer()
    if x.op is Ops.CAST:
        return dtypes.is_int(x.src[0].dtype) or x.src[0].dtype is dtypes.bool
    if depth == 0:
        return False
    if x.op is Ops.WHERE:
        return _integral(x.src[1], depth - 1) and _integral(x.src[2], depth - 1)
    return x.op in _INTEGRAL_OPS and all(_integral(s, depth - 1) for s in x.src)


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
    (whole,) = u.src
    x, turns = _quarter_turns(whole)  # sin(x + k*pi/2) (cos x = sin(x + pi/2)): x reduced alone
    if (wide := COMPUTE_IN.get(u.dtype)) is not None and x is not whole:  # the 16-bit sum would round x + k*pi/2
        return UOp(Ops.SIN, (x.cast(wide) + float(turns * PI / 2),)).cast(u.dtype)
    if (r := via_float32(u)) is not None:
        return r
    fmt = FORMATS[u.dtype]
    bad = (x * 0.0).ne(0.0)  # inf or nan
    xs = bad.where(const(x, 0.0), x)
    shifted = rint_shifted(xs * (2 / math.pi), fmt)
    q = add_const(shifted, -fmt.rint_magic)  # rint(x*2/pi)
    r = xs
    for part in PIO2_PARTS[u.dtype]:  # r = x - q*pi/2, one exact product at a time
        r = r + q * (-part)
    quadrant = (bitcast(shifted, fmt.int) & 3).cast(dtypes.int32)  # q mod 4 from the low mantissa bits
    ph = PAYNE_HANEK[u.dtype]  # past Cody-Waite's range: Payne-Hanek's exact reduction, selected per lane
    big = const(xs, ph.min_x) < xs.maximum(neg(xs))
    r_big, quadrant_big = _payne_hanek(xs, fmt, ph)
    r, quadrant = big.where(r_big, r), big.where(quadrant_big, quadrant)
    if x is not whole:
        quadrant = (quadrant + turns) & 3
    r = clamp(r, -1.0, 1.0)  # no-op in range (|r| <= pi/4); beyond, it keeps both polynomials within [-1, 1]
    z = r * r
    s = r + (r * z) * horner(z, SIN_POLY[u.dtype][1:])
    hz = z * 0.5
    w = add_const(neg(hz), 1.0)  # cos(r) = w + ((1-w) - z/2) + z^2*C(z): (1-w) - z/2 is w's rounding error
    c = w + (sub(add_const(neg(w), 1.0), hz) + (z * z) * horner(z, COS_POLY[u.dtype][2:]))
    v = (quadrant & 1).ne(0).where(c, s)
    v = (quadrant & 2).ne(0).where(neg(v), v)
    return bad.where(const(x, NAN), v if x is not whole else x.ne(0.0).where(v, x))


def _quarter_turns(x: UOp) -> tuple[UOp, int]:
    """x as y + c with c the constant k*pi/2 rounded to x's dtype (k = +-1, +-2, +-3; nested sums too): (y, k mod 4),
    so that sin(y + c) is computed with y reduced alone and k added to the quadrant. The constant stands for the
    exact k*pi/2 it rounds: cos y = sin(y + pi/2) keeps its relative accuracy near its zeros and for large |y|, where
    the rounded sum would lose y's low bits and the rounded pi/2 would shift every zero by 4e-8. Else (x, 0)."""
    turns = 0
    while x.op is Ops.ADD:  # nested: the gradient of cos x is cos(x + pi/2) = sin((x + pi/2) + pi/2)
        for y, c in (x.src, x.src[::-1]):
            if c.op is Ops.CONST and c.value in QUARTER_TURNS.get(x.dtype, {}):
                x, turns = y, turns + QUARTER_TURNS[x.dtype][c.value]
                break
        else:
            break
    return x, turns % 4


def _payne_hanek(x: UOp, fmt: FloatFormat, ph: PayneHanek) -> tuple[UOp, UOp]:
    """(r, q mod 4) with x = q*pi/2 + r, |r| <= pi/4, for any finite x, in integer arithmetic.
    |x| = m * 2^(e-b) (m the significand as an integer, e the biased exponent, b = bias + mantissa), so x*2/pi =
    m * 2^(e-b) * sum t_k 2^-k over the bits t_k of 2/pi. Bits k < e-b-1 add whole turns (multiples of 4): dropped.
    The N = 32*nwords bits from k = e-b-1, W (words of ph.words shifted by the window's offset), give x*2/pi mod 4 =
    m*W / 2^(N-2) (the bits after them add less than the fraction's last kept bit). m*W is summed in 32-bit columns
    of 32x32-bit products (uint64); its top two bits are q, the fraction below is rounded to the nearest q (in
    [-1/2, 1/2): negated in integers when it rounds up) and converted to a float limb by limb (16-bit halves convert
    exactly, so a tiny r keeps its relative precision), times pi/2. Selects, compares and shifts are on 32-bit lanes
    (64-bit ones do not vectorize in C), only the products and their sums are 64-bit. Lanes with a smaller x (e
    clamped: the first window) compute garbage without UB; the caller selects."""
    u32, u64, i32, m32 = dtypes.uint32, dtypes.uint64, dtypes.int32, 0xFFFFFFFF
    bits = bitcast(x, fmt.uint)
    e = (shr(bits, fmt.mantissa) & ((1 << (fmt.bits - fmt.mantissa - 1)) - 1)).cast(i32)
    if fmt.mantissa < 32:
        m_limbs = [((bits & ((1 << fmt.mantissa) - 1)) | (1 << fmt.mantissa)).cast(u64)]
    else:  # low 32 bits, then the rest with the implicit bit
        high = (shr(bits, 32) & ((1 << (fmt.mantissa - 32)) - 1)) | (1 << (fmt.mantissa - 32))
        m_limbs = [(bits & m32).cast(u32).cast(u64), high.cast(u32).cast(u64)]
    first = fmt.bias + fmt.mantissa + 2 - PH_PAD  # the window's first bit e-b-1 is at index e - first of ph.words
    b0 = add_const(e.maximum(first), -first)
    v, sh = shr(b0, 5), (b0 & 31).cast(u32)
    # words v .. v + nwords of the table, by a barrel shifter over v's bits (from the top: 2^k words further on where
    # bit k is set): sum over k of (nwords + 2^k) selects, where picking each word from the table would take
    # nwords * len(table)
    span = len(ph.words) - ph.nwords  # v in [0, span)
    picked = [const(sh, w) for w in ph.words]
    for k in reversed(range(max(span - 1, 1).bit_length())):
        step, need = 1 << k, ph.nwords + (1 << k)  # after this bit, words 0 .. nwords + 2^k - 1 may still be read
        bit = (v & step).ne(0)
        picked = [bit.where(picked[i + step], picked[i]) if i + step < len(picked) else picked[i] for i in range(need)]
    back = add_const(neg_u(sh), 31)  # 31 - sh: (b >> 1) >> (31 - sh) is b >> (32 - sh) without a shift by 32
    words = [  # W's words, most significant first: bits b0+32i .. +31
        UOp(Ops.SHL, (picked[i], sh)) | UOp(Ops.SHR, (shr(picked[i + 1], 1), back)) for i in range(ph.nwords)
    ]
    n = ph.nwords
    cols: list[UOp | None] = [None] * n  # column c: weight 2^(32c) of m*W; columns from n on are whole turns
    for a, ma in enumerate(m_limbs):
        for i, w in enumerate(words):
            c = a + n - 1 - i
            if c >= n:
                continue
            p = ma * w.cast(u64)
            for cc, half in ((c, p & m32), (c + 1, shr(p, 32))):
                if cc < n:
                    cols[cc] = half if cols[cc] is None else cols[cc] + half
    limbs = []
    carry = None
    for c in range(n):  # carries: each column holds a few 32-bit halves, < 2^35
        col = cols[c] if carry is None else cols[c] + carry
        carry = shr(col, 32)
        limbs.append((col & m32).cast(u32))
    top = limbs[-1]  # bits 30-31: q; bits 0-29 and the `keep` limbs below: the fraction f in [0, 1)
    up = (top & (1 << 29)).ne(0)  # f >= 1/2: q + 1, r from f - 1 < 0
    q = shr(top, 30) + up.cast(u32)
    frac = [top & ((1 << 30) - 1)] + limbs[-1 - ph.keep : -1][::-1]  # most significant first
    negated, carry_in = [], const(top, 1)  # 2^(30 + 32*keep) - f = ~f + 1: the +1 carries past zero limbs
    for j in reversed(range(len(frac))):
        width = 30 if j == 0 else 32
        negated.append(((frac[j] ^ ((1 << width) - 1)) + carry_in) & ((1 << width) - 1))
        carry_in = frac[j].eq(0).where(carry_in, const(top, 0))
    negated.reverse()
    acc = None
    for j in range(len(frac)):  # Horner in the float format over 16-bit halves (int32 -> float: exact, vectorized)
        limb = up.where(negated[j], frac[j])
        for half in (shr(limb, 16), limb & 0xFFFF):
            h = half.cast(i32).cast(fmt.dtype)
            acc = h if acc is None else acc * 65536.0 + h
    assert acc is not None
    r = acc * float(PI / 2 * Fraction(2) ** -(30 + 32 * ph.keep))
    r = up.where(neg(r), r)
    quadrant = (q & 3).cast(i32)
    negative = x < 0.0  # sin(-x) = -sin(x): r -> -r, q -> -q mod 4
    return negative.where(neg(r), r), negative.where((quadrant * -1) & 3, quadrant)


def neg_u(x: UOp) -> UOp:
    """-x wrapping, for an unsigned int (x * -1 would need a negative constant of the unsigned type)."""
    return (x ^ ((1 << (8 * x.dtype.itemsize)) - 1)) + 1


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
    if (e := _const_value(b)) is not None and (r := _pow_const_exponent(a, float(e))) is not None:
        return r
    fmt = FORMATS[u.dtype]
    bits = bitcast(a, fmt.uint)
    absa = bitcast(bits & ((1 << (fmt.bits - 1)) - 1), u.dtype)
    if (c := _const_value(a)) is not None and c != 0 and math.isfinite(c):  # log2|a| of a constant, rounded once
        mag = UOp(Ops.EXP2, (b * math.log2(abs(c)),))
    else:
        mag = UOp(Ops.EXP2, (UOp(Ops.LOG2, (absa,)) * b,))  # the spec's law: |a|^b = 2^(log2|a| * b)
    mag = absa.ne(1.0).where(mag, const(a, 1.0))
    is_int = trunc(b).eq(b)  # +-inf count as (even) integers, nan does not
    odd = (trunc(b * 0.5) * 2.0).ne(b) & is_int
    out = ((bitcast(a, fmt.int) < 0) & odd).where(neg(mag), mag)  # sign bit: -0 and -inf included
    bad = (a < 0.0) & a.ne(-INF) & is_int.ne(True)  # a finite negative base to a non-integer power
    out = bad.where(const(a, NAN), out)
    return b.ne(0.0).where(out, const(a, 1.0))


def _const_value(x: UOp) -> float | None:
    """The value of a CONST (seen through CASTs, a 16-bit float op computing in float32), else None."""
    while x.op is Ops.CAST:
        x = x.src[0]
    return float(x.value) if x.op is Ops.CONST and not isinstance(x.value, bool) else None


def cheap_exponent(e: float) -> bool:
    """A constant exponent that pow_ computes with multiplies or a square root (no EXP2/LOG2)."""
    return e == 0 or abs(e) == 0.5 or (e.is_integer() and abs(e) <= 64)


def is_cheap_pow(u: UOp) -> bool:
    """A POW by a constant cheap_exponent (a float one, or an int one: square-and-multiply over its known bits):
    arithmetic, not a transcendental, for a cost model."""
    return u.op is Ops.POW and (e := _const_value(u.src[1])) is not None and cheap_exponent(e)


def _pow_const_exponent(a: UOp, e: float) -> UOp | None:
    """a^e for a constant e that torch computes without pow(): x^0 = 1 (nan too), x^(+-0.5) = sqrt(x) or
    1/sqrt(x) (sqrt(-0) = -0: (-0)^-0.5 = -inf, as torch), an integer |e| <= 64 by repeated squaring (a few
    ulp, where exp2(e*log2|x|) loses |e*log2 x| ulp), 1/x^|e| for a negative one. None: the general law."""
    if e == 0:
        return const(a, 1.0)
    if abs(e) == 0.5:
        s = UOp(Ops.SQRT, (a,))
        return s if e > 0 else recip(s)
    if not cheap_exponent(e):
        return None
    n, out, base = int(abs(e)), None, a
    while n:
        if n & 1:
            out = base if out is None else out * base
        n >>= 1
        if n:
            base = base * base
    assert out is not None
    return out if e > 0 else recip(out)


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
