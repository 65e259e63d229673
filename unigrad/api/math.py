"""MathMixin: elementwise compositions (see unigrad/api/__init__.py). `self` is a Tensor; every method is built
from core Tensor methods (exp2/log2/sin/sqrt/reciprocal/trunc/maximum/where/cast, arithmetic, comparisons),
so each result is a graph of the spec's primitives and fuses into the kernels around it.

Numerics. Results match PyTorch float32 within atol 1e-6 / rtol 1e-3 (most within a few ulp):
  - half/bfloat16 inputs are computed in float32 and rounded back, as PyTorch does; int/bool inputs of float
    functions compute in the default float. float64 inputs compute in float64, but the polynomial
    approximations below (asin/acos/atan, erf, expm1/log1p near 0, sinh near 0) are float32-accurate.
  - cos and tan are sin(x + pi/2) and sin(x)/sin(x + pi/2): the SIN decomposition reduces x exactly over the
    whole float range and moves the quadrant for the + pi/2 (float32 and float64 to a few ulp). asin/acos/atan
    reduce to |t| <= 0.5 / 0.4142, then use a minimax polynomial (Cephes single precision).
  - pow is the spec's POW (decomposed with C pow's special cases; its gradient rule is torch's formula); sign,
    x**0 and copysign's sign operand give zero gradients (not None); acosh/atanh take torch's derivative formulas
    as their gradient (@function rules); sigmoid computes exp(-|x|) by Cody-Waite (~1 ulp at any x).
  - sinh/cosh/tanh/asinh/acosh/atanh avoid cancellation (expm1/log1p forms) and overflow (exp(|x| - ln 2),
    log(|x|) + ln 2 for huge |x|).
  - erf: odd Taylor series for |x| < 0.5, else 1 - erfc with the Chebyshev-fitted erfc of Numerical Recipes
    (fractional error < 1.2e-7 everywhere); gelu uses erfc directly, so large negative inputs keep their
    relative accuracy.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from unigrad.dtype import ConstType, DType, dtypes
from unigrad.ir.ops import Ops

if TYPE_CHECKING:
    from unigrad.tensor import Tensor

LN2 = math.log(2)
PI = math.pi
# atan(t) = t + t^3 * P(t^2) on |t| <= tan(pi/8) (Cephes atanf)
ATAN_P = (8.05374449538e-2, -1.38776856032e-1, 1.99777106478e-1, -3.33329491539e-1)
# asin(s) = s + s^3 * P(s^2) on |s| <= 0.5 (Cephes asinf)
ASIN_P = (4.2163199048e-2, 2.4181311049e-2, 4.5470025998e-2, 7.4953002686e-2, 1.6666752422e-1)
# erfc(z) = t * exp(-z^2 + P(t)), t = 1 / (1 + z/2), z >= 0 (Numerical Recipes erfcc, fractional error < 1.2e-7)
ERFC_P = (
    0.17087277,
    -0.82215223,
    1.48851587,
    -1.13520398,
    0.27886807,
    -0.18628806,
    0.09678418,
    0.37409196,
    1.00002368,
    -1.26551223,
)
# erf(x) = 2/sqrt(pi) * x * sum_n (-1)^n x^(2n) / (n! (2n+1)), |x| < 0.5: terms up to n = 6 (next < 1e-9 rel.)
ERF_TAYLOR = tuple((-1) ** n / (math.factorial(n) * (2 * n + 1)) for n in range(6, -1, -1))
# erfinv's starting point (M. Giles, "Approximating the erfinv function", single precision): x * P(w - 2.5) for
# w = -log(1 - x^2) < 5, x * Q(sqrt(w) - 3) beyond
ERFINV_CENTRE = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
                 -0.00417768164, 0.246640727, 1.50140941)  # fmt: skip
ERFINV_TAIL = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
               0.00943887047, 1.00167406, 2.83297682)  # fmt: skip
# Lanczos coefficients for g = 7, n = 9: Gamma(z + 1) = sqrt(2 pi) t^(z + 1/2) e^-t (c0 + sum c_i / (z + i)), t = z + 7.5
LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059,
           12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7)  # fmt: skip
# digamma(z) ~ log z - 1/(2z) - u P(u), u = 1/z^2: the Bernoulli-number series 1/12 - u/120 + u^2/252 - ...
DIGAMMA_ASYMPTOTIC = (1 / 132, -1 / 240, 1 / 252, -1 / 120, 1 / 12)
# i0(x) ~ e^x / sqrt(2 pi x) * (1 + sum_k c_k / x^k), c_k = prod_{j<=k} (2j - 1)^2 / (8j); highest first
I0_ASYMPTOTIC = tuple(math.prod((2 * j - 1) ** 2 / (8 * j) for j in range(1, k + 1)) for k in range(8, 0, -1))
# Euclid's algorithm needs at most n steps for inputs below Fibonacci(n + 1) (Lame): per itemsize
_EUCLID_STEPS = {1: 12, 2: 25, 4: 47, 8: 93}
SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946
HUGE = 2.0**28  # above this, x*x overflows float32 soon and asinh/acosh(x) = log(2x) to float32 precision
# the largest finite value of each float dtype (nan_to_num's default for +-inf)
FINITE_MAX = {
    "float16": 65504.0,
    "bfloat16": 3.3895313892515355e38,
    "float32": 3.4028234663852886e38,
    "float64": 1.7976931348623157e308,
}


# ---------------------------------------------------------------- helpers (graph builders on Tensors)


def _compute(x: Tensor) -> tuple[Tensor, DType]:
    """(x in the dtype to compute a float function in, the result dtype), as PyTorch: ints and bools give
    the default float; half and bfloat16 compute in float32 and round back."""
    if not x.dtype.is_float:
        return x.cast(dtypes.default_float), dtypes.default_float
    if x.dtype.itemsize < 4:
        return x.cast(dtypes.float32), x.dtype
    return x, x.dtype


def _poly(x: Tensor, coeffs: Sequence[float]) -> Tensor:
    """Horner: coeffs[0]*x^(n-1) + ... + coeffs[-1]."""
    acc = x * coeffs[0] + coeffs[1]
    for c in coeffs[2:]:
        acc = acc * x + c
    return acc


def _floor(x: Tensor) -> Tensor:
    t = x.trunc()
    return (x < t).where(t - 1, t)


def _is_odd(t: Tensor) -> Tensor:
    """For finite integer-valued floats t: is t odd."""
    return ((t * 0.5).trunc() * 2).ne(t)


def _abs(x: Tensor) -> Tensor:
    """|x| with gradient +1 at 0: an odd function written as sign(x) * f(|x|) then keeps its slope f'(0) there
    (the core abs splits a tie and has gradient 0 at 0)."""
    return (x < 0).where(-x, x)


def _safe(cond: Tensor, x: Tensor, fill: float) -> Tensor:
    """x where cond, else `fill`: the input of a `where` branch that is only used where cond holds, so the
    branch stays finite (and its gradient too) where it is not used; a 0 * inf in backward would give nan."""
    return cond.where(x, fill)


def _negative(x: Tensor) -> Tensor:
    """x < 0 including -0.0 (its reciprocal is -inf); the sign of nan cannot be seen without a bitcast."""
    return (x < 0) | (x.eq(0) & (x.reciprocal() < 0))


def _expm1(x: Tensor) -> Tensor:
    """exp(x) - 1 without cancellation: Taylor series (nested, to x^n/n!) for |x| < 0.5."""
    small = x.abs() < 0.5
    return small.where(_expm1_poly(_safe(small, x, 0.0)), x.exp() - 1)


def _expm1_poly(x: Tensor) -> Tensor:
    """x + x^2/2! + ... + x^n/n!: n = 9 leaves 0.5^10/10! = 3e-10 (float32's precision), float64 takes n = 17."""
    n = 17 if x.dtype == dtypes.float64 else 9
    acc = x * (1 / n) + 1
    for k in range(n - 1, 1, -1):
        acc = acc * x * (1 / k) + 1
    return acc * x


def _log1p(x: Tensor) -> Tensor:
    """log(1 + x) without cancellation: 2*atanh(s), s = x/(2+x), as a series in s^2 for |x| < 0.41 (s <= 0.17:
    to s^9 for float32's precision, to s^23 for float64's)."""
    s = x / (x + 2)
    z = s * s
    top = 23 if x.dtype == dtypes.float64 else 9
    series = _poly(z, tuple(1 / k for k in range(top, 2, -2)) + (1.0,)) * s * 2
    return (x.abs() < 0.41).where(series, (x + 1).log())


def _erfc_pos(z: Tensor) -> Tensor:
    """erfc(z) for z >= 0 (Numerical Recipes erfcc)."""
    t = (z * 0.5 + 1).reciprocal()
    return t * (_poly(t, ERFC_P) - z * z).exp()


def _erfc(x: Tensor) -> Tensor:
    e = _erfc_pos(_abs(x))
    return (x < 0).where(2 - e, e)


def _erf(x: Tensor) -> Tensor:
    small = x.abs() < 0.5
    xs = _safe(small, x, 0.0)
    taylor = _poly(xs * xs, ERF_TAYLOR) * xs * (2 / math.sqrt(PI))
    one_minus = 1 - _erfc_pos(x.abs())
    return small.where(taylor, (x < 0).where(-one_minus, one_minus))


def _tanh(x: Tensor) -> Tensor:
    """tanh(|x|) = -expm1(-2|x|) / (2 + expm1(-2|x|)): no overflow, no cancellation near 0."""
    e = _expm1(_abs(x) * -2)
    t = -e / (e + 2)
    return (x < 0).where(-t, t)


def _sigmoid(x: Tensor) -> Tensor:
    """1/(1 + exp(-x)) from e = exp(-|x|) <= 1: no overflow, so no inf meets a gradient (the core sigmoid's
    exp(-x) overflows for x < -88 and its gradient there is nan)."""
    e = (-_abs(x)).exp()
    r = (e + 1).reciprocal()
    return (x < 0).where(e * r, r)


# ln2 = LN2_HI + LN2_LO per float dtype (fdlibm's split): n * LN2_HI is exact for the n an exp can meet
LN2_HI = {"float32": 0.693145751953125, "float64": 6.93147180369123816490e-01}
LN2_LO = {"float32": 1.428606765330187045e-06, "float64": 1.90821492927058770002e-10}
EXP_FLOOR = {"float32": -120.0, "float64": -760.0}  # exp of anything below is 0 in the dtype


def _exp_nonpositive(x: Tensor) -> Tensor:
    """exp(x) for x <= 0 within ~1 ulp (float32/float64): 2^n * 2^(r*log2(e)) for n = rint(x*log2(e)) and
    r = x - n*ln2 (Cody-Waite, exact to the last bits), where exp2(x*log2(e)) loses |x*log2(e)| ulps to the
    rounding of the product (4e-6 at x = -85 in float32). 2^n of an integer is exact; nan stays nan."""
    name = x.dtype.name
    x = (x < EXP_FLOOR[name]).where(EXP_FLOOR[name], x)
    y = x * (1 / LN2) + 0.5  # in (EXP_FLOOR/ln2, 0.5]: an int32 holds its floor
    t = y.cast(dtypes.int32).cast(x.dtype)  # truncation toward 0, as vector code (a TRUNC op is scalar code)
    n = (y < t).where(t - 1, t)
    r = (x - n * LN2_HI[name]) - n * LN2_LO[name]
    return n.exp2() * (r * (1 / LN2)).exp2()


def _sigmoid_exact(x: Tensor) -> Tensor:
    """1/(1 + exp(-x)) from e = exp(-|x|) <= 1 computed to ~1 ulp (_exp_nonpositive): the value keeps its
    relative accuracy where it is tiny (x = -100: 3.8e-44, a denormal) and neither it nor its gradient overflows
    (the gradient is e/(1+e)^2, exact where torch's (1-y)*y has rounded y to 1)."""
    pos = x >= 0
    e = _exp_nonpositive(pos.where(-x, x))  # with the gradient of -x or x on each side (also at 0)
    return pos.where(1, e) / (1 + e)


def _sigmoid_derivative(x: Tensor) -> Tensor:
    """sigmoid'(x) = e/(1+e)^2 for e = exp(-|x|) to ~1 ulp: exact where torch's (1-y)*y has rounded y to 1."""
    e = _exp_nonpositive(-_abs(x))
    r = (1 + e).reciprocal()
    return e * r * r


def _silu(x: Tensor) -> Tensor:
    return x * _sigmoid(x)


def _gelu_exact(x: Tensor) -> Tensor:
    return x * 0.5 * _erfc(x * -math.sqrt(0.5))


def _gelu_exact_derivative(x: Tensor) -> Tensor:
    return (x * -math.sqrt(0.5)).erfc() * 0.5 + x * (x.square() * -0.5).exp() * (1 / math.sqrt(2 * PI))


def _gelu_tanh(x: Tensor) -> Tensor:
    u = (x + x * x * x * 0.044715) * math.sqrt(2 / PI)
    return x * _sigmoid(u * 2)


def _softplus(x: Tensor) -> Tensor:
    """log(1 + exp(x)) = max(x, 0) + log1p(exp(-|x|))."""
    return x.maximum(0) + _log1p((-x.abs()).exp())


def _float_only(x: Tensor, op: str) -> None:
    if not x.dtype.is_float:
        raise NotImplementedError(f"{op}: not implemented for {x.dtype} (needs a floating point tensor)")


def _pow(x: Tensor, y: Tensor) -> Tensor:
    """x ** y for tensors of one dtype and shape: the spec's POW. Its decomposition (isel) has C pow's special cases
    for floats (and torch's shortcuts for a constant exponent: x^0, x^(+-1/2), integers by squaring) and, for ints,
    square-and-multiply wrapping like C with torch's rule for y < 0 (1 for x == 1, +-1 for x == -1, else 0); its
    gradient rule is torch's formula (d/dx = y*x^(y-1), 0 where y == 0; d/dy = x^y*log(x), 0 where x == 0 and y >= 0):
    nan for a negative base, -inf for 0 to a negative power, zeros for x^0, as torch gives them."""
    return x._alu(Ops.POW, y)


def _acosh(x: Tensor) -> Tensor:
    big = x > HUGE
    t = big.where(0.0, x - 1)
    y = big.where(_safe(big, x, 1.0).log() + LN2, _log1p(t + (t * (t + 2)).sqrt()))
    return (x < 1).where(math.nan, y)


def _atanh(x: Tensor) -> Tensor:
    a = _abs(x)
    y = _log1p(2 * a / (1 - a)) * 0.5
    return (a > 1).where(math.nan, (x < 0).where(-y, y))


# name -> the @function of a composite (value, with the backward rule of its derivative where it has one), made when
# first used (function.py imports tensor.py)
_RULED: dict[str, Any] = {}


def _composite(
    x: Tensor, name: str, value: Callable[[Tensor], Tensor], derivative: Callable[[Tensor], Tensor] | None = None
) -> Tensor:
    """value(x), a composition of some 20-80 elementwise ops (tanh, sigmoid, erf...), computed as _compute says, as one
    @function call: its body is traced once per input shape, dtype and device, and a call is two nodes (tanh took 80 us
    of Python per call composed op by op, about 4 us as a call: function.call1); the scheduler inlines it, so the kernels are the
    composition's. derivative: the gradient is g * derivative(x), torch's formula evaluated as torch does, instead of
    the derivative of value's composition: the two differ where the composition selects a branch (outside the domain,
    a nan value picked by `where` has gradient 0; torch's formula gives its own value there) and in rounding; a
    derivative that calls the function itself (tanh's 1 - tanh(x)^2) reads the forward's call, the same node.
    Without one, autodiff goes through the inlined composition. A tensor over several devices is composed in place."""
    xc, dt = _compute(x)
    if not isinstance(xc.device, str):
        return value(xc).cast(dt)
    if (fn := _RULED.get(name)) is None:
        from unigrad.function import function

        rule = None if derivative is None else (lambda g, t, d=derivative: g * d(t))  # type: ignore[misc]
        fn = _RULED[name] = function(value, backward=rule)
        fn.name = name
    return fn.call1(xc).cast(dt)  # type: ignore[no-any-return]


def _zero_grad_to(out: Tensor, *srcs: Tensor) -> Tensor:
    """out, built from srcs (out's shape) with a derivative of zero, keeping them in the autograd graph: torch gives
    its leaves zeros for .grad (sign, x**0, copysign's sign operand), not None. WHERE(true, out, src) passes the
    gradient to out only; scheduling folds the constant condition away, so the kernels are out's own."""
    from unigrad.tensor import Tensor

    for s in srcs:
        if s.requires_grad and not Tensor.no_grad and s.dtype.is_float:
            out = out._const_like(True, dtypes.bool).where(out, s.cast(out.dtype))
    return out


class MathMixin:
    """Mixed into Tensor."""

    __slots__ = ()

    # ---------------------------------------------------------------- trigonometric
    def cos(self: Tensor) -> Tensor:
        """sin(x + pi/2): the SIN decomposition reduces x alone and moves the quadrant by one (the rounded sum would
        lose x's low bits), so cos keeps its relative accuracy near its zeros and for large |x|."""
        x, dt = _compute(self)
        return (x + PI / 2).sin().cast(dt)

    def tan(self: Tensor) -> Tensor:
        """sin(x) / cos(x), both reduced exactly over the whole float range (Payne-Hanek for large |x|) and accurate
        to a few ulp relative, near the poles too."""
        x, dt = _compute(self)
        return (x.sin() / (x + PI / 2).sin()).cast(dt)

    def atan(self: Tensor) -> Tensor:
        """atan(|x|) = base + atan(t): |x| > tan(3pi/8): pi/2 + atan(-1/|x|); > tan(pi/8): pi/4 +
        atan((|x|-1)/(|x|+1)); else atan(|x|); |t| <= tan(pi/8) for the polynomial."""
        x, dt = _compute(self)
        a = _abs(x)
        big, mid = a > 2.414213562373095, a > 0.4142135623730950
        t = big.where(-_safe(big, a, 1.0).reciprocal(), mid.where((a - 1) / (a + 1), a))
        base = big.where(PI / 2, mid.where(PI / 4, 0.0))
        z = t * t
        y = base + (_poly(z, ATAN_P) * z * t + t)
        return (x < 0).where(-y, y).cast(dt)

    def asin(self: Tensor) -> Tensor:
        """asin(x) = p(x) for |x| <= 0.5, else sign(x) * (pi/2 - 2*p(sqrt((1-|x|)/2))); nan outside [-1, 1]."""
        x, dt = _compute(self)
        a = x.abs()
        big = a > 0.5
        p = _asin_poly(big.where(((1 - a) * 0.5).sqrt(), x))
        y = big.where((x < 0).where(2 * p - PI / 2, PI / 2 - 2 * p), p)
        return (a > 1).where(math.nan, y).cast(dt)

    def acos(self: Tensor) -> Tensor:
        """acos(x) = pi - 2*asin(sqrt((1+x)/2)) for x < -0.5, 2*asin(sqrt((1-x)/2)) for x > 0.5, else
        pi/2 - asin(x); every asin argument is within [-0.5, 0.5]."""
        x, dt = _compute(self)
        lo, hi = x < -0.5, x > 0.5
        s = lo.where(((1 + x) * 0.5).sqrt(), hi.where(((1 - x) * 0.5).sqrt(), x))
        p = _asin_poly(s)
        y = lo.where(PI - 2 * p, hi.where(2 * p, PI / 2 - p))
        return (x.abs() > 1).where(math.nan, y).cast(dt)

    # ---------------------------------------------------------------- hyperbolic
    def sinh(self: Tensor) -> Tensor:
        """Taylor series (to x^11/11!) for |x| < 1; else e - 1/(4e) with e = exp(|x| - ln2) = exp(|x|)/2, which
        stays finite up to sinh's own overflow."""
        x, dt = _compute(self)
        a = x.abs()
        z = x * x
        acc = z * (1 / 110) + 1
        for k in (72, 42, 20, 6):
            acc = acc * z * (1 / k) + 1
        e = (a - LN2).exp()
        big = e - 0.25 * e.reciprocal()
        return (a < 1).where(acc * x, (x < 0).where(-big, big)).cast(dt)

    def cosh(self: Tensor) -> Tensor:
        """e + 1/(4e) with e = exp(|x| - ln2): finite up to cosh's own overflow."""
        x, dt = _compute(self)
        e = (x.abs() - LN2).exp()
        return (e + 0.25 * e.reciprocal()).cast(dt)

    def tanh(self: Tensor) -> Tensor:
        return _composite(self, "tanh", _tanh, lambda x: 1 - x.tanh().square())

    def asinh(self: Tensor) -> Tensor:
        """asinh(|x|) = log1p(|x| + x^2/(1 + sqrt(1 + x^2))); log(|x|) + ln2 for huge |x|."""
        x, dt = _compute(self)
        a = _abs(x)
        big = a > HUGE
        m = big.where(0.0, a)
        z = m * m
        y = big.where(_safe(big, a, 1.0).log() + LN2, _log1p(m + z / ((z + 1).sqrt() + 1)))
        return (x < 0).where(-y, y).cast(dt)

    def acosh(self: Tensor) -> Tensor:
        """acosh(x) = log1p(t + sqrt(t*(t+2))), t = x - 1 (exact near 1); log(x) + ln2 for huge x; nan below 1.
        Gradient: torch's formula 1/sqrt(x*x - 1) (inf at 1, nan below it, 0 where x*x overflows)."""
        return _composite(self, "acosh", _acosh, lambda x: (x * x - 1).sqrt().reciprocal())

    def atanh(self: Tensor) -> Tensor:
        """atanh(|x|) = log1p(2|x|/(1-|x|)) / 2 (1 - |x| is exact near 1): +-inf at +-1, nan beyond. Gradient:
        torch's formula 1/(1 - x*x), also outside [-1, 1] where the value is nan (inf at +-1)."""
        return _composite(self, "atanh", _atanh, lambda x: (1 - x * x).reciprocal())

    # ---------------------------------------------------------------- exp/log family
    def expm1(self: Tensor) -> Tensor:
        x, dt = _compute(self)
        return _expm1(x).cast(dt)

    def log1p(self: Tensor) -> Tensor:
        x, dt = _compute(self)
        return _log1p(x).cast(dt)

    def log10(self: Tensor) -> Tensor:
        x, dt = _compute(self)
        return (x.log2() * math.log10(2)).cast(dt)

    def rsqrt(self: Tensor) -> Tensor:
        x, dt = _compute(self)
        return x.sqrt().reciprocal().cast(dt)

    def erf(self: Tensor) -> Tensor:
        return _composite(self, "erf", _erf, lambda x: (-x.square()).exp() * (2 / math.sqrt(PI)))

    def erfc(self: Tensor) -> Tensor:
        return _composite(self, "erfc", _erfc, lambda x: (-x.square()).exp() * (-2 / math.sqrt(PI)))

    def logaddexp(self: Tensor, other: Tensor | ConstType) -> Tensor:
        """log(exp(x) + exp(y)) = max + log1p(exp(-|x - y|)); equal infinities give themselves."""
        x, y = self._broadcasted(other, "logaddexp")
        _float_only(x, "logaddexp")
        x, dt = _compute(x)
        y = y.cast(x.dtype)
        out = x.maximum(y) + _log1p((-(x - y).abs()).exp())
        return (x.eq(y) & x.abs().eq(math.inf)).where(x, out).cast(dt)

    # ---------------------------------------------------------------- rounding and sign
    def floor(self: Tensor) -> Tensor:
        _no_bool(self, "floor")
        return _floor(self) if self.dtype.is_float else self

    def ceil(self: Tensor) -> Tensor:
        _no_bool(self, "ceil")
        if not self.dtype.is_float:
            return self
        t = self.trunc()
        return (self > t).where(t + 1, t)

    def round(self: Tensor, decimals: int = 0) -> Tensor:
        """Round half to even, as torch.round; decimals > 0 rounds x * 10**d and divides back (< 0: the reverse)."""
        _no_bool(self, "round")
        if not self.dtype.is_float:
            return self
        if decimals > 0:
            return (self * 10.0**decimals).round() / 10.0**decimals
        if decimals < 0:
            return (self / 10.0 ** (-decimals)).round() * 10.0 ** (-decimals)
        t = self.trunc()
        frac = (self - t).abs()  # exact: x - trunc(x) is representable
        up = (frac > 0.5) | (frac.eq(0.5) & _is_odd(t))
        return up.where((self < 0).where(t - 1, t + 1), t)

    def sign(self: Tensor) -> Tensor:
        """-1, 0 or 1 in the input dtype (bool stays bool); 0 for nan, as PyTorch on CPU."""
        if self.dtype is dtypes.bool:
            return self
        return _zero_grad_to((self > 0).cast(self.dtype) - (self < 0).cast(self.dtype), self)

    def copysign(self: Tensor, other: Tensor | ConstType) -> Tensor:
        """|x| with the sign of other (-0.0 counts as negative); always a float result, as PyTorch."""
        x, y = self._broadcasted(other, "copysign")
        x, dt = _compute(x)
        a = x.abs()
        return _zero_grad_to(_negative(y.cast(x.dtype)).where(-a, a).cast(dt), y)

    # ---------------------------------------------------------------- clamping and interpolation
    def clamp(
        self: Tensor,
        min: Tensor | ConstType | None = None,
        max: Tensor | ConstType | None = None,
        *,
        min_: Tensor | ConstType | None = None,
        max_: Tensor | ConstType | None = None,
    ) -> Tensor:
        """min(max(x, min), max) with PyTorch's promotion of x and the bounds (min > max gives max); nan in x or a
        bound propagates. Built from `where`, so the gradient goes to x at the bounds too, as PyTorch. `min_` and
        `max_` are tinygrad's spellings."""
        min = min_ if min is None else min
        max = max_ if max is None else max
        if min is None and max is None:
            raise RuntimeError("clamp: at least one of 'min' or 'max' must not be None")
        out = self
        if min is not None:
            x, lo = out._broadcasted(min, "clamp")
            out = ((x < lo) | lo.ne(lo)).where(lo, x)
        if max is not None:
            x, hi = out._broadcasted(max, "clamp")
            out = ((x > hi) | hi.ne(hi)).where(hi, x)
        return out

    clip = clamp

    def clamp_min(self: Tensor, min: Tensor | ConstType) -> Tensor:
        return self.clamp(min=min)

    def clamp_max(self: Tensor, max: Tensor | ConstType) -> Tensor:
        return self.clamp(max=max)

    def lerp(self: Tensor, end: Tensor, weight: Tensor | ConstType) -> Tensor:
        """self + weight*(end - self), computed from the nearer end as PyTorch does (exact at weight 0 and 1)."""
        from unigrad.tensor import Tensor

        if not isinstance(end, Tensor):
            raise TypeError(f"lerp: end must be a Tensor, got {type(end).__name__}")
        _float_only(self, "lerp")
        if end.dtype != self.dtype:
            raise RuntimeError(f"lerp: expected dtype {self.dtype} for `end` but got dtype {end.dtype}")
        if isinstance(weight, Tensor) and weight.dtype != self.dtype:
            raise RuntimeError(f"lerp: expected dtype {self.dtype} for `weight` but got dtype {weight.dtype}")
        x, dt = _compute(self)
        e = end.cast(x.dtype)
        diff = e - x
        if not isinstance(weight, Tensor):
            w = float(weight)
            return (x + diff * w if abs(w) < 0.5 else e - diff * (1 - w)).cast(dt)
        w = weight.cast(x.dtype)
        return (w.abs() < 0.5).where(x + diff * w, e - diff * (1 - w)).cast(dt)

    # ---------------------------------------------------------------- classification
    def isnan(self: Tensor) -> Tensor:
        return self.ne(self) if self.dtype.is_float else self._const_like(False, dtypes.bool)

    def isinf(self: Tensor, detect_positive: bool = True, detect_negative: bool = True) -> Tensor:
        """x == +-inf (tinygrad's flags pick the signs)."""
        if not self.dtype.is_float or not (detect_positive or detect_negative):
            return self._const_like(False, dtypes.bool)
        if detect_positive and detect_negative:
            return self.abs().eq(math.inf)
        return self.eq(math.inf if detect_positive else -math.inf)

    def isfinite(self: Tensor) -> Tensor:
        return self.abs() < math.inf if self.dtype.is_float else self._const_like(True, dtypes.bool)

    # ---------------------------------------------------------------- logical (any dtype -> bool)
    def logical_and(self: Tensor, other: Tensor | ConstType) -> Tensor:
        return self.cast(dtypes.bool).bitwise_and(_as_bool(self, other))

    def logical_or(self: Tensor, other: Tensor | ConstType) -> Tensor:
        return self.cast(dtypes.bool).bitwise_or(_as_bool(self, other))

    def logical_xor(self: Tensor, other: Tensor | ConstType) -> Tensor:
        return self.cast(dtypes.bool).bitwise_xor(_as_bool(self, other))

    # ---------------------------------------------------------------- pow and remainders
    def pow(self: Tensor, exponent: Tensor | ConstType, reverse: bool = False) -> Tensor:
        """self ** exponent (or exponent ** self with reverse=True), with PyTorch's dtypes: integer results
        for integer operands (square-and-multiply, wrapping), float otherwise. Constant integer exponents
        use repeated squaring; others exp2(y*log2|x|) with C pow's sign and special-value rules."""
        from unigrad.tensor import Tensor

        if isinstance(exponent, np.generic):  # a numpy scalar is a Python scalar (as in torch)
            exponent = exponent.item()
        if isinstance(exponent, Tensor) or reverse:
            x, y = self._broadcasted(exponent, "pow", reverse)
            if x.dtype is dtypes.bool:
                raise NotImplementedError(f"pow: not implemented for {x.dtype} ** {y.dtype}")
            if not x.dtype.is_float:
                return _pow(x, y)
            xc, dt = _compute(x)  # a constant base: log2|base| is taken in double precision by the decomposition
            return _pow(xc, y.cast(xc.dtype)).cast(dt)
        if not isinstance(exponent, (bool, int, float)):
            raise TypeError(f"pow: unsupported exponent type {type(exponent).__name__}")
        x, _ = self._broadcasted(exponent, "pow")
        if x.dtype is dtypes.bool:
            raise NotImplementedError(f"pow: not implemented for {x.dtype} ** {exponent!r}")
        if not x.dtype.is_float:
            if exponent < 0:
                raise RuntimeError(
                    f"pow: integers to negative integer powers are not allowed ({x.dtype} ** {exponent})"
                )
            return _pow(x, x._const_like(int(exponent), x.dtype))
        xc, dt = _compute(x)  # a constant exponent: torch's shortcuts (squaring, sqrt) in the decomposition
        return _pow(xc, xc._const_like(float(exponent), xc.dtype)).cast(dt)

    def __pow__(self: Tensor, exponent: Tensor | ConstType) -> Tensor:
        return self.pow(exponent)

    def __rpow__(self: Tensor, base: ConstType) -> Tensor:
        return self.pow(base, reverse=True)

    def fmod(self: Tensor, other: Tensor | ConstType) -> Tensor:
        """C fmod: x - trunc(x/y)*y, with the sign of x. Floats compute in the next wider float (float32 for
        half/bfloat16, float64 for float32), where trunc(x/y)*y and the difference are exact for quotients
        below 2**29; the result is then repaired to keep x's sign and |r| < |y|. fmod(x, +-inf) = x."""
        x, y = self._broadcasted(other, "fmod")
        if not x.dtype.is_float:
            return x - x.div(y, rounding_mode="trunc") * y
        wide = dtypes.float32 if x.dtype.itemsize < 4 else dtypes.float64
        xw, yw = x.cast(wide), y.cast(wide)
        r = xw - (xw / yw).trunc() * yw
        ay = yw.abs()
        step = (xw < 0).where(-ay, ay)
        r = (r.ne(0) & (r < 0).ne(xw < 0)).where(r + step, r)
        r = (r.abs() >= ay).where(r - step, r)
        r = (ay.eq(math.inf) & (xw.abs() < math.inf)).where(xw, r)
        return r.cast(x.dtype)

    def remainder(self: Tensor, other: Tensor | ConstType) -> Tensor:
        """Python's %: the sign of the divisor (the core mod)."""
        return self.mod(other)

    # ---------------------------------------------------------------- activations
    def relu6(self: Tensor) -> Tensor:
        return self.hardtanh(0, 6)

    def hardtanh(self: Tensor, min_val: ConstType = -1.0, max_val: ConstType = 1.0) -> Tensor:
        """clamp(x, min_val, max_val) in x's dtype (integer tensors take integer bounds, as PyTorch); the gradient is
        0 at the bounds, as PyTorch's hardtanh (clamp's is 1)."""
        if self.dtype is dtypes.bool:
            raise RuntimeError("hardtanh: bool inputs are not supported")
        if not self.dtype.is_float:
            min_val, max_val = int(min_val), int(max_val)
        return (self <= min_val).where(min_val, (self >= max_val).where(max_val, self)).cast(self.dtype)

    def leaky_relu(self: Tensor, neg_slope: float = 0.01, *, negative_slope: float | None = None) -> Tensor:
        """x for x > 0, else x * slope (`negative_slope` is PyTorch's spelling, `neg_slope` tinygrad's)."""
        _float_only(self, "leaky_relu")
        slope = neg_slope if negative_slope is None else negative_slope
        return (self > 0).where(self, self * slope)

    def elu(self: Tensor, alpha: float = 1.0) -> Tensor:
        _float_only(self, "elu")
        x, dt = _compute(self)
        return (x > 0).where(x, _expm1((x > 0).where(0.0, x)) * alpha).cast(dt)

    def celu(self: Tensor, alpha: float = 1.0) -> Tensor:
        _float_only(self, "celu")
        x, dt = _compute(self)
        return (x > 0).where(x, _expm1((x > 0).where(0.0, x) * (1 / alpha)) * alpha).cast(dt)

    def selu(self: Tensor, alpha: float = SELU_ALPHA, gamma: float = SELU_SCALE) -> Tensor:
        """gamma * elu(x, alpha) with the self-normalizing constants by default."""
        _float_only(self, "selu")
        x, dt = _compute(self)
        return ((x > 0).where(x, _expm1((x > 0).where(0.0, x)) * alpha) * gamma).cast(dt)

    def hardshrink(self: Tensor, lambd: float = 0.5) -> Tensor:
        """x where |x| > lambd, else 0 (torch's Tensor.hardshrink; nn.functional.hardshrink calls it)."""
        return ((self > lambd) | (self < -lambd)).where(self, 0.0).cast(self.dtype)

    def prelu(self: Tensor, weight: Tensor) -> Tensor:
        """x where x > 0, else weight * x (torch's Tensor.prelu; nn.functional.prelu calls it); weight has 1 element
        or one per channel (dim 1; a 0-D or 1-D input has one channel, as torch)."""
        from unigrad.tensor import Tensor

        if not isinstance(weight, Tensor):
            raise TypeError(f"prelu(): argument 'weight' must be a Tensor, got {type(weight).__name__}")
        channels = self.shape[1] if self.ndim >= 2 else 1
        if weight.numel() not in (1, channels) or weight.ndim > 1:
            raise RuntimeError(
                f"prelu(): weight must have 1 element or {channels} (the input's channels), got shape {weight.shape}"
            )
        if weight.numel() != 1 and self.ndim >= 2:
            weight = weight.reshape(channels, *([1] * (self.ndim - 2)))
        elif weight.numel() == 1:
            weight = weight.reshape(())
        return (self > 0).where(self, self * weight)

    def gelu(self: Tensor, approximate: str = "tanh") -> Tensor:
        """x * Phi(x): 'tanh' (the default of tinygrad's Tensor.gelu; torch has no Tensor.gelu) is the tanh
        approximation x * sigmoid(2u) = x/2 * (1 + tanh(u)), u = sqrt(2/pi) * (x + 0.044715 x^3); 'none' is
        the exact x/2 * erfc(-x/sqrt(2)) of torch.nn.functional.gelu's default."""
        _float_only(self, "gelu")
        if approximate == "none":  # torch's derivative: Phi(x) + x phi(x)
            return _composite(self, "gelu", _gelu_exact, _gelu_exact_derivative)
        if approximate == "tanh":
            return _composite(self, "gelu_tanh", _gelu_tanh)
        raise RuntimeError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")

    def quick_gelu(self: Tensor) -> Tensor:
        _float_only(self, "quick_gelu")
        x, dt = _compute(self)
        return (x * _sigmoid(x * 1.702)).cast(dt)

    def sigmoid(self: Tensor) -> Tensor:
        return _composite(self, "sigmoid", _sigmoid_exact, lambda x: _composite(x, "sigmoid'", _sigmoid_derivative))

    def silu(self: Tensor) -> Tensor:
        _float_only(self, "silu")
        return _composite(self, "silu", _silu)

    swish = silu

    def mish(self: Tensor) -> Tensor:
        _float_only(self, "mish")
        x, dt = _compute(self)
        return (x * _tanh(_softplus(x))).cast(dt)

    def softplus(self: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
        """log(1 + exp(beta*x)) / beta, and x itself where beta*x > threshold (as PyTorch)."""
        _float_only(self, "softplus")
        x, dt = _compute(self)
        bx = x * beta
        return (bx > threshold).where(x, _softplus(bx) * (1 / beta)).cast(dt)

    def softsign(self: Tensor) -> Tensor:
        _no_bool(self, "softsign")
        x, dt = _compute(self)
        return (x / (x.abs() + 1)).cast(dt)

    def logsigmoid(self: Tensor) -> Tensor:
        """-softplus(-x) = min(x, 0) - log1p(exp(-|x|))."""
        _float_only(self, "logsigmoid")
        x, dt = _compute(self)
        return (x.minimum(0) - _log1p((-x.abs()).exp())).cast(dt)

    def hardsigmoid(self: Tensor, alpha: float = 1 / 6, beta: float = 0.5) -> Tensor:
        """clamp(alpha*x + beta, 0, 1) = relu6(x + 3) / 6 by default (the gradient is 0 at the kinks, as PyTorch)."""
        _float_only(self, "hardsigmoid")
        y = self * alpha + beta
        return (y <= 0).where(0.0, (y >= 1).where(1.0, y))

    def hardswish(self: Tensor) -> Tensor:
        """x * relu6(x + 3) / 6 = x * hardsigmoid(x)."""
        _float_only(self, "hardswish")
        return self * self.hardsigmoid()

    # ---------------------------------------------------------------- comparisons and aliases (torch/tinygrad names)
    def lt(self: Tensor, other: Tensor | ConstType) -> Tensor:
        return self < other

    def gt(self: Tensor, other: Tensor | ConstType) -> Tensor:
        return self > other

    def le(self: Tensor, other: Tensor | ConstType) -> Tensor:
        return self <= other

    def ge(self: Tensor, other: Tensor | ConstType) -> Tensor:
        return self >= other

    def isclose(
        self: Tensor, other: Tensor | ConstType, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False
    ) -> Tensor:
        """|x - y| <= atol + rtol * |y| elementwise, as torch.isclose: infinities are close only to themselves,
        nan only to nan and only with equal_nan."""
        x, y = self._broadcasted(other, "isclose")
        close = x.eq(y)
        xf, yf = x._float(), y._float()
        near = (xf - yf).abs() <= yf.abs() * rtol + atol
        if x.dtype.is_float:
            near = near & yf.isfinite()
        close = close | near
        if equal_nan and x.dtype.is_float:
            close = close | (x.isnan() & y.isnan())
        return close

    def idiv(self: Tensor, other: Tensor | ConstType, reverse: bool = False) -> Tensor:
        """tinygrad's integer division: the quotient truncated toward zero (C), for ints and floats."""
        return self.div(other, reverse, rounding_mode="trunc")

    def xor(self: Tensor, other: Tensor | ConstType, reverse: bool = False) -> Tensor:
        return self.bitwise_xor(other, reverse)

    def bitwise_not(self: Tensor) -> Tensor:
        if self.dtype.is_float:
            raise RuntimeError(f"bitwise_not: only defined for integer and bool tensors, got {self.dtype}")
        return ~self

    def __abs__(self: Tensor) -> Tensor:
        return self.abs()

    def __pos__(self: Tensor) -> Tensor:
        return self

    def __rlshift__(self: Tensor, x: ConstType) -> Tensor:
        return self.lshift(x, True)

    def __rrshift__(self: Tensor, x: ConstType) -> Tensor:
        return self.rshift(x, True)

    def __rmatmul__(self: Tensor, x: object) -> Tensor:
        """x @ self for x that is not a Tensor (a nested list): made a tensor of self's dtype first."""
        from unigrad.tensor import Tensor

        return Tensor(x, device=self.device, dtype=self.dtype).matmul(self)

    # ---------------------------------------------------------------- torch names: aliases
    def absolute(self: Tensor) -> Tensor:
        """torch.absolute: abs."""
        return self.abs()

    def negative(self: Tensor) -> Tensor:
        """torch.negative: -x (bool raises, as torch)."""
        return self.neg()

    def positive(self: Tensor) -> Tensor:
        """torch.positive: x itself; a bool tensor raises, as torch."""
        if self.dtype is dtypes.bool:
            raise RuntimeError("positive: the `+` operator on a bool tensor is not supported")
        return self

    def arccos(self: Tensor) -> Tensor:
        """torch.arccos: acos."""
        return self.acos()

    def arcsin(self: Tensor) -> Tensor:
        """torch.arcsin: asin."""
        return self.asin()

    def arctan(self: Tensor) -> Tensor:
        """torch.arctan: atan."""
        return self.atan()

    def sgn(self: Tensor) -> Tensor:
        """torch.sgn: sign for real tensors (0 for nan)."""
        return self.sign()

    def true_divide(self: Tensor, other: Tensor | ConstType) -> Tensor:
        """torch.true_divide: div without rounding (ints give the default float)."""
        return self.div(other)

    def divide(self: Tensor, other: Tensor | ConstType, *, rounding_mode: str | None = None) -> Tensor:
        """torch.divide: div."""
        return self.div(other, rounding_mode=rounding_mode)

    def multiply(self: Tensor, other: Tensor | ConstType) -> Tensor:
        """torch.multiply: mul."""
        return self.mul(other)

    def subtract(self: Tensor, other: Tensor | ConstType, *, alpha: ConstType = 1) -> Tensor:
        """torch.subtract: sub."""
        return self.sub(other, alpha=alpha)

    def greater(self: Tensor, other: Tensor | ConstType) -> Tensor:
        """torch.greater: gt."""
        return self.gt(other)

    def greater_equal(self: Tensor, other: Tensor | ConstType) -> Tensor:
        """torch.greater_equal: ge."""
        return self.ge(other)

    def less(self: Tensor, other: Tensor | ConstType) -> Tensor:
        """torch.less: lt."""
        return self.lt(other)

    def less_equal(self: Tensor, other: Tensor | ConstType) -> Tensor:
        """torch.less_equal: le."""
        return self.le(other)

    def not_equal(self: Tensor, other: Tensor | ConstType) -> Tensor:
        """torch.not_equal: ne."""
        return self.ne(other)

    def fix(self: Tensor) -> Tensor:
        """torch.fix: trunc."""
        return self.trunc()

    def arccosh(self: Tensor) -> Tensor:
        """torch.arccosh: acosh."""
        return self.acosh()

    def arcsinh(self: Tensor) -> Tensor:
        """torch.arcsinh: asinh."""
        return self.asinh()

    def arctanh(self: Tensor) -> Tensor:
        """torch.arctanh: atanh."""
        return self.atanh()

    def bitwise_left_shift(self: Tensor, other: Tensor | ConstType) -> Tensor:
        """torch.bitwise_left_shift: <<."""
        return self.lshift(other)

    def bitwise_right_shift(self: Tensor, other: Tensor | ConstType) -> Tensor:
        """torch.bitwise_right_shift: >> (arithmetic for signed ints)."""
        return self.rshift(other)

    def floor_divide(self: Tensor, other: Tensor | ConstType) -> Tensor:
        """torch.floor_divide: the quotient rounded down. Ints floor (a division by zero raises torch's
        ZeroDivisionError: Tensor._check_divisor); floats follow torch's div_floor: q = (x - fmod(x, y)) / y
        stepped down where the remainder's sign differs from y's, then floored (rounded to the nearer integer when
        the division was inexact), so the result is the floor of the exact quotient; x/y for y == 0, a signed zero
        for a zero quotient."""
        x, y = self._broadcasted(other, "floor_divide")
        if not x.dtype.is_float:
            if x.dtype is dtypes.bool:
                raise RuntimeError("floor_divide: not implemented for bool tensors")
            return x.div(y, rounding_mode="floor")
        x, dt = _compute(x)
        y = y.cast(x.dtype)
        mod = x.fmod(y)
        q = (x - mod) / y  # an integer in exact arithmetic
        q = (mod.ne(0) & (y < 0).ne(mod < 0)).where(q - 1, q)
        fq = _floor(q)
        fq = (q - fq > 0.5).where(fq + 1, fq)
        zero = _negative(x).ne(_negative(y)).where(-0.0, 0.0)  # the sign of x/y
        out = q.ne(0).where(fq, zero)
        return y.eq(0).where(x / y, out).cast(dt)

    # ---------------------------------------------------------------- torch names: elementwise functions
    def atan2(self: Tensor, other: Tensor | ConstType) -> Tensor:
        """torch.atan2(self, other): the angle of the point (other, self) in [-pi, pi]. From t = atan(min/max) of the
        absolute values (t in [0, pi/4]), reflected to pi/2 - t when |self| > |other|, to pi - angle when other is
        negative (-0.0 included) and negated when self is; +-0 and +-inf give C's values, nan propagates."""
        y, x = self._broadcasted(other, "atan2")
        y, dt = _compute(y)
        x = x.cast(y.dtype)
        ay, ax = _abs(y), _abs(x)
        steep = ay > ax
        lo, hi = steep.where(ax, ay), steep.where(ay, ax)
        both_inf = ay.eq(math.inf) & ax.eq(math.inf)
        ok = (hi > 0) & ~both_inf
        r = ok.where(lo / _safe(ok, hi, 1.0), both_inf.where(1.0, 0.0))  # in [0, 1]
        t = r.atan()
        angle = steep.where(PI / 2 - t, t)
        angle = _negative(x).where(PI - angle, angle)
        angle = _negative(y).where(-angle, angle)
        return (y.ne(y) | x.ne(x)).where(math.nan, angle).cast(dt)

    def arctan2(self: Tensor, other: Tensor | ConstType) -> Tensor:
        """torch.arctan2: atan2."""
        return self.atan2(other)

    def hypot(self: Tensor, other: Tensor | ConstType) -> Tensor:
        """sqrt(x^2 + y^2) as hi * sqrt(1 + (lo/hi)^2) for hi = max(|x|, |y|): no overflow or underflow; an infinite
        operand gives inf even beside nan (C hypot). Floats only, as torch.hypot."""
        x, y = self._broadcasted(other, "hypot")
        _float_only(x, "hypot")
        x, dt = _compute(x)
        y = y.cast(x.dtype)
        ax, ay = _abs(x), _abs(y)
        big = ax >= ay
        hi, lo = big.where(ax, ay), big.where(ay, ax)
        ok = (hi > 0) & (hi < math.inf)
        h_safe = _safe(ok, hi, 1.0)
        r = lo / h_safe
        out = ok.where(h_safe * (r * r + 1).sqrt(), hi + lo)  # else: both 0, an inf or a nan
        return (ax.eq(math.inf) | ay.eq(math.inf)).where(math.inf, out).cast(dt)

    def logit(self: Tensor, eps: float | None = None) -> Tensor:
        """log(x / (1 - x)), x clamped to [eps, 1 - eps] first when eps is given (the gradient is 0 outside, as
        torch); ints give the default float."""
        x, dt = _compute(self)
        if eps is not None:
            x = x.clamp(eps, 1 - eps)
        return (x / (1 - x)).log().cast(dt)

    def xlogy(self: Tensor, other: Tensor | ConstType) -> Tensor:
        """x * log(y) with 0 * log(y) = 0 for every y but nan (torch.xlogy); float result. The gradient in x is
        log(y) at x == 0 too, as torch (0 there for y == 0, and here also for y == inf)."""
        x, y = self._broadcasted(other, "xlogy")
        x, dt = _compute(x)
        y = y.cast(x.dtype)
        zero = x.eq(0) & y.eq(y)
        edge = y.eq(0) | y.eq(math.inf)
        slope = edge.where(0.0, _safe(~edge, y, 1.0).log())  # finite: x * slope is exactly 0 at x == 0
        return zero.where(x * slope, x * _safe(~zero, y, 1.0).log()).cast(dt)

    def nan_to_num(self: Tensor, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None) -> Tensor:
        """nan -> `nan`, +inf -> `posinf`, -inf -> `neginf` (by default the dtype's largest and lowest finite
        values); ints and bools are returned as they are."""
        if not self.dtype.is_float:
            return self
        big = FINITE_MAX[self.dtype.name]
        hi = big if posinf is None else posinf
        lo = -big if neginf is None else neginf
        x = self
        return x.ne(x).where(nan, x.eq(math.inf).where(hi, x.eq(-math.inf).where(lo, x)))

    def isposinf(self: Tensor) -> Tensor:
        """x == +inf (False for ints and bools)."""
        return self.isinf(detect_positive=True, detect_negative=False)

    def isneginf(self: Tensor) -> Tensor:
        """x == -inf (False for ints and bools)."""
        return self.isinf(detect_positive=False, detect_negative=True)

    def signbit(self: Tensor) -> Tensor:
        """Is the sign bit set: read from the float's bits, so -0.0 and a negative nan give True (torch.signbit);
        x < 0 for ints, False for unsigned and bool."""
        if self.dtype.is_float:
            signed = {2: dtypes.int16, 4: dtypes.int32, 8: dtypes.int64}[self.dtype.itemsize]
            return self.bitcast(signed) < 0
        if self.dtype is dtypes.bool or self.dtype.is_unsigned:
            return self._const_like(False, dtypes.bool)
        return self < 0

    def frac(self: Tensor) -> Tensor:
        """x - trunc(x), with x's sign (nan for +-inf); floats only, as torch."""
        _float_only(self, "frac")
        return self - self.trunc()

    def deg2rad(self: Tensor) -> Tensor:
        """x * pi / 180; ints give the default float."""
        x, dt = _compute(self)
        return (x * (PI / 180)).cast(dt)

    def rad2deg(self: Tensor) -> Tensor:
        """x * 180 / pi; ints give the default float."""
        x, dt = _compute(self)
        return (x * (180 / PI)).cast(dt)

    def heaviside(self: Tensor, values: Tensor) -> Tensor:
        """0 for x < 0, `values` for x == 0, 1 for x > 0 (0 for nan, as torch's CPU kernel); `values` must be a
        tensor of x's dtype."""
        from unigrad.tensor import Tensor

        if not isinstance(values, Tensor):
            raise TypeError(f"heaviside: values must be a Tensor, got {type(values).__name__}")
        if values.dtype != self.dtype:
            raise RuntimeError(
                f"heaviside: is not implemented for tensors with different dtypes (got {self.dtype} and {values.dtype})"
            )
        x, v = self._broadcasted(values, "heaviside")
        return x.eq(0).where(v, (x > 0).cast(x.dtype))

    def float_power(self: Tensor, exponent: Tensor | ConstType) -> Tensor:
        """pow with both operands in float64 (a float64 result, as torch.float_power)."""
        from unigrad.tensor import Tensor

        e = exponent.cast(dtypes.float64) if isinstance(exponent, Tensor) else float(exponent)
        return self.cast(dtypes.float64).pow(e)

    def sinc(self: Tensor) -> Tensor:
        """sin(pi x) / (pi x), 1 at x = 0 (where the gradient is 0); ints give the default float."""
        x, dt = _compute(self)
        nz = x.ne(0)
        px = _safe(nz, x, 1.0) * PI
        return nz.where(px.sin() / px, 1.0).cast(dt)

    def addcmul(self: Tensor, tensor1: Tensor, tensor2: Tensor, value: ConstType = 1) -> Tensor:
        """self + value * tensor1 * tensor2, all three promoted together; for an integer result `value` is
        truncated to an int, as torch."""
        prod = tensor1 * tensor2
        x, p = self._broadcasted(prod, "addcmul")
        v = value if x.dtype.is_float else int(value)
        return x + p * v

    def addcdiv(self: Tensor, tensor1: Tensor, tensor2: Tensor, value: ConstType = 1) -> Tensor:
        """self + value * tensor1 / tensor2; two integer tensors raise, as torch (no integer division)."""
        if not tensor1.dtype.is_float and not tensor2.dtype.is_float:
            raise RuntimeError(
                f"addcdiv: integer division with addcdiv is not supported (tensor1 {tensor1.dtype}, tensor2 "
                f"{tensor2.dtype}); use self + value * tensor1.true_divide(tensor2)"
            )
        quot = tensor1 / tensor2
        x, q = self._broadcasted(quot, "addcdiv")
        return x + q * value

    def fmax(self: Tensor, other: Tensor | ConstType) -> Tensor:
        """torch.fmax: maximum, except that a nan loses to a number (nan only where both are nan)."""
        x, y = self._broadcasted(other, "fmax")
        if not x.dtype.is_float:
            return x.maximum(y)
        return x.isnan().where(y, y.isnan().where(x, x.maximum(y)))

    def fmin(self: Tensor, other: Tensor | ConstType) -> Tensor:
        """torch.fmin: minimum, except that a nan loses to a number (nan only where both are nan)."""
        x, y = self._broadcasted(other, "fmin")
        if not x.dtype.is_float:
            return x.minimum(y)
        return x.isnan().where(y, y.isnan().where(x, x.minimum(y)))

    def logaddexp2(self: Tensor, other: Tensor | ConstType) -> Tensor:
        """log2(2**x + 2**y), through logaddexp in base e."""
        x, y = self._broadcasted(other, "logaddexp2")
        _float_only(x, "logaddexp2")
        return (x * math.log(2)).logaddexp(y * math.log(2)) * (1 / math.log(2))

    def ldexp(self: Tensor, other: Tensor) -> Tensor:
        """torch.ldexp: self * 2**other (a float result)."""
        x, dt = _compute(self._broadcasted(other, "ldexp")[0])
        return (x * (2.0 ** other.cast(x.dtype))).cast(dt)

    def frexp(self: Tensor) -> tuple[Tensor, Tensor]:
        """torch.frexp: (mantissa, exponent) with self = mantissa * 2**exponent, |mantissa| in [0.5, 1) (0 for 0;
        inf and nan keep themselves with exponent 0), read from the float's bits (subnormals scaled up first)."""
        if not self.dtype.is_float:
            raise RuntimeError(f"frexp: only supports floating-point dtypes, got {self.dtype.name}")
        x = self if self.dtype.itemsize >= 4 else self.cast(dtypes.float32)
        bits, mbits, ebias = (
            (dtypes.int64, 52, 1022) if x.dtype is dtypes.float64 else (dtypes.int32, 23, 126)
        )  # a normal float's bits: biased exponent, then mantissa
        tiny = x.abs() < 2.0 ** -(ebias - 1)  # subnormal: scaled by 2**mbits+1 to make it normal
        scaled = tiny.where(x * 2.0 ** (mbits + 1), x)
        raw = scaled.bitcast(bits)
        exp = (raw >> mbits) & ((1 << (x.dtype.itemsize * 8 - 1 - mbits)) - 1)
        mant_bits = (raw & ~(((1 << (x.dtype.itemsize * 8 - 1 - mbits)) - 1) << mbits)) | (ebias << mbits)
        mant = mant_bits.bitcast(x.dtype)
        e = (exp - ebias - tiny.where(mbits + 1, 0)).cast(dtypes.int32)
        special = x.eq(0) | x.isinf() | x.isnan()
        return special.where(x, mant).cast(self.dtype), special.where(0, e)

    # ---------------------------------------------------------------- torch names: special functions
    def erfinv(self: Tensor) -> Tensor:
        """The inverse of erf on (-1, 1) (+-inf at +-1, nan outside): a polynomial start in w = -log(1 - x^2), one
        piece for the centre and one for the tails, then a Newton step on erf(y) = |x|."""
        x, dt = _compute(self)
        a = x.abs()
        w = -((1 - a) * (1 + a)).log()
        centre = _poly(w - 2.5, ERFINV_CENTRE)
        tail = _poly(w.maximum(5).sqrt() - 3, ERFINV_TAIL)
        y = (w < 5).where(centre, tail) * a
        # Newton on erf(y) = a written as erfc(y) = 1 - a (exact for a near 1): erfc's relative accuracy holds there
        y = y - ((1 - a) - _erfc(y)) / ((-(y * y)).exp() * (2 / math.sqrt(math.pi)))
        out = (a > 1).where(math.nan, a.eq(1).where(math.inf, y))
        return _negative(x).where(-out, out).cast(dt)

    def lgamma(self: Tensor) -> Tensor:
        """log|Gamma(x)|: Lanczos (g = 7) for x >= 1/2, reflection log(pi / |sin(pi x)|) - lgamma(1 - x) below;
        +inf at the poles (0, -1, -2, ...)."""
        x, dt = _compute(self)
        x64 = x.cast(dtypes.float64)  # the Lanczos sum cancels: float64 keeps float32 results exact to rounding
        refl = x64 < 0.5
        z = refl.where(1 - x64, x64) - 1
        series = LANCZOS[0] + sum(c / (z + i) for i, c in enumerate(LANCZOS[1:], start=1))
        t = z + 7.5
        lanczos = 0.5 * math.log(2 * math.pi) + (z + 0.5) * t.log() - t + series.log()
        sin_pi = (x64 - x64.floor()).mul(math.pi).sin().abs()  # |sin(pi x)|, exact at integers
        out = refl.where(math.log(math.pi) - sin_pi.log() - lanczos, lanczos)
        pole = (x64 <= 0) & x64.eq(x64.floor())
        return pole.where(math.inf, x64.isinf().where(math.inf, out)).cast(dt)

    def digamma(self: Tensor) -> Tensor:
        """psi(x) = d/dx log Gamma(x): shifted up by psi(x) = psi(x + 1) - 1/x to x >= 6, then the asymptotic
        series; reflection psi(x) = psi(1 - x) - pi / tan(pi x) below 0. -inf at 0 (torch), nan at -1, -2, ..."""
        x, dt = _compute(self)
        x64 = x.cast(dtypes.float64)
        refl = x64 < 0
        z = refl.where(1 - x64, x64)
        acc = z.zeros_like()
        for _ in range(6):
            small = z < 6
            acc = small.where(acc - 1 / z, acc)
            z = small.where(z + 1, z)
        inv2 = 1 / (z * z)
        series = z.log() - 0.5 / z - inv2 * _poly(inv2, DIGAMMA_ASYMPTOTIC)
        out = acc + series
        frac = x64 - x64.floor()
        out = refl.where(out - math.pi / (frac * math.pi).tan(), out)
        out = x64.eq(0).where(-math.inf, ((x64 < 0) & frac.eq(0)).where(math.nan, out))
        return out.cast(dt)

    def i0(self: Tensor) -> Tensor:
        """The modified Bessel function of the first kind, order 0: its power series sum((x/2)^2k / (k!)^2) for
        |x| <= 15, the asymptotic series e^|x| / sqrt(2 pi |x|) * (1 + 1/(8|x|) + 9/(128 x^2) + ...) above."""
        x, dt = _compute(self)
        a = x.abs().cast(dtypes.float64)
        q = (a * 0.5) ** 2
        term, power = a.ones_like(), a.ones_like()
        for k in range(1, 60):
            term = term * q / (k * k)
            power = power + term
        inv = 1 / a.maximum(1)
        asym = (a.minimum(700)).exp() / (a.maximum(1) * 2 * math.pi).sqrt() * (1 + _poly(inv, I0_ASYMPTOTIC) * inv)
        return (a <= 15).where(power, a.isinf().where(math.inf, asym)).cast(dt)

    def gcd(self: Tensor, other: Tensor | ConstType) -> Tensor:
        """The greatest common divisor of integer tensors (non-negative; gcd(0, 0) = 0): Euclid's steps, as many as
        the dtype's largest inputs can need (the Fibonacci bound), all in one kernel."""
        x, y = self._broadcasted(other, "gcd")
        if not x.dtype.is_int or x.dtype is dtypes.bool:
            raise RuntimeError(f"gcd: expected integer tensors, got {x.dtype.name}")
        a, b = x.abs(), y.abs()
        for _ in range(_EUCLID_STEPS[x.dtype.itemsize]):
            nz = b.ne(0)
            a, b = nz.where(b, a), nz.where(a._mod_nonzero(nz.where(b, 1)), 0)
        return a

    def lcm(self: Tensor, other: Tensor | ConstType) -> Tensor:
        """The least common multiple of integer tensors: |x / gcd(x, y) * y| (0 when either is 0)."""
        x, y = self._broadcasted(other, "lcm")
        g = x.gcd(y)
        return g.eq(0).where(0, (x._floordiv_nonzero(g.eq(0).where(1, g)) * y).abs())


def _asin_poly(s: Tensor) -> Tensor:
    z = s * s
    return _poly(z, ASIN_P) * z * s + s


def _no_bool(x: Tensor, op: str) -> None:
    if x.dtype is dtypes.bool:
        raise NotImplementedError(f"{op}: not implemented for {x.dtype}")


def _as_bool(x: Tensor, other: Tensor | ConstType) -> Tensor:
    from unigrad.tensor import Tensor

    if isinstance(other, Tensor):
        return other.cast(dtypes.bool)
    return Tensor(bool(other), device=x.device)
