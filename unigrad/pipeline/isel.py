"""Isel (instruction selection): the spec's decomposed ops become the primitives the target renders.

In: a kernel SINK after expand (scalar ALU on RANGEs, LOAD/STORE on INDEXes, register accumulators) and the
set of ops the target wants decomposed (its renderer's `decompose`, e.g. CLanguage.decompose).
Out: the same kernel where no op of that set remains. Each is rewritten into primitives: ADD, MUL, MAX, CMPLT,
CMPNE, WHERE, CAST, BITCAST, SHL, SHR, AND, OR, XOR, IDIV/MOD on ints, TRUNC, RECIP. A rule may build another
decomposed op (POW -> EXP2 and LOG2, a float16 EXP2 -> a float32 EXP2): the rewrite runs to a fixed point, so
those are decomposed in turn when they are in the set and left to the renderer when they are not.
After: `ir/spec.verify_selected` holds (no op of the set remains); RANGE/END, LOAD/STORE and the accumulators are
untouched, so what linearize and verify_linear need is unchanged.

Laws: the simple ops follow the spec's table, except CMPGE/CMPLE on floats, which must be false on nan (the
spec's CMPNE(CMPLT(a, b), 1) is true there): a >= b is (b < a) | (a == b). The transcendental rules
(decomp/transcendental.py) and THREEFRY (decomp/threefry.py) say their methods, accuracy and special cases.
Devectorization and WMMA selection will join this stage with vector kernels.
"""

from __future__ import annotations

import functools

from unigrad.dtype import dtypes
from unigrad.ir.ops import Ops
from unigrad.ir.pattern import PatternMatcher, Rule, UPat, graph_rewrite
from unigrad.ir.uop import UOp
from unigrad.pipeline.decomp.numerics import const, neg, recip
from unigrad.pipeline.decomp.threefry import threefry
from unigrad.pipeline.decomp.transcendental import exp2, log2, pow_, sin, sqrt

FLOATS = frozenset({dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64})
INTS = frozenset(dt for dt in dtypes.all() if dt.is_int)


def neg_(u: UOp) -> UOp:
    (x,) = u.src
    return x.ne(True) if x.dtype is dtypes.bool else neg(x)


def sub_(u: UOp) -> UOp:
    a, b = u.src
    return a ^ b if a.dtype is dtypes.bool else a + neg(b)


def int_div(u: UOp) -> UOp:
    """Truncating int division from IDIV (floor): one more where a nonzero remainder had a negative quotient."""
    a, b = u.src
    q = UOp(Ops.IDIV, (a, b))
    round_up = (q * b).ne(a) & (a < 0).ne(b < 0)
    return round_up.where(q + 1, q)


def cmpge(u: UOp) -> UOp:
    a, b = u.src
    if a.dtype.is_float:
        return (b < a) | a.eq(b)
    return (a < b).ne(True)


def not_(u: UOp) -> UOp:
    (x,) = u.src
    return x.ne(True) if x.dtype is dtypes.bool else x.ne(0).where(const(x, 0), const(x, 1))


A, B, C = UPat.var("a"), UPat.var("b"), UPat.var("c")

# one rule per decomposed op (two for DIV); isel keeps those whose op is in the target's set
ISEL_RULES: list[Rule] = [
    (UPat(Ops.NEG, name="u"), neg_),  # -x -> x * -1 (bool: not x -> x != True)
    (UPat(Ops.SUB, name="u"), sub_),  # a - b -> a + b*-1 (bool: a ^ b)
    (UPat(Ops.DIV, src=(A, B), dtype=FLOATS), lambda a, b: a * recip(b)),  # a / b -> a * (1/b)
    (UPat(Ops.DIV, name="u", dtype=INTS), int_div),  # a / b on ints truncates: floor, +1 if rounded down below 0
    (UPat(Ops.CMPGT, src=(A, B)), lambda a, b: b < a),  # a > b -> b < a
    (UPat(Ops.CMPGE, name="u"), cmpge),  # a >= b -> (a < b) != 1; floats: (b < a) | (a == b), false on nan
    (UPat(Ops.CMPLE, src=(A, B)), lambda a, b: UOp(Ops.CMPGE, (b, a))),  # a <= b -> b >= a
    (UPat(Ops.CMPEQ, src=(A, B)), lambda a, b: a.eq(b)),  # a == b -> (a != b) != 1
    (UPat(Ops.NOT, name="u"), not_),  # not x -> x != 1 (ints: x != 0 ? 0 : 1)
    (UPat(Ops.MULACC, src=(A, B, C)), lambda a, b, c: a * b + c),  # mulacc(a, b, c) -> a*b + c
    (UPat(Ops.EXP2, name="u", dtype=FLOATS), exp2),  # 2^x = 2^n * 2^f: exponent field * Taylor polynomial
    (UPat(Ops.LOG2, name="u", dtype=FLOATS), log2),  # log2(2^e * m) = e + ln(m)*log2(e): bits + atanh series
    (UPat(Ops.SIN, name="u", dtype=FLOATS), sin),  # sin(q*pi/2 + r): Cody-Waite r, sin/cos polynomial by q mod 4
    (UPat(Ops.SQRT, name="u", dtype=FLOATS), sqrt),  # sqrt(x) = x * rsqrt(x): bit-trick guess + Newton
    (UPat(Ops.POW, name="u"), pow_),  # a^b -> EXP2(LOG2(|a|) * b) + torch's special cases (ints: by squaring)
    (UPat(Ops.THREEFRY, name="u"), threefry),  # Threefry-2x32-20: 20 rounds of add-rotate-xor on uint32 words
]


@functools.lru_cache(maxsize=16)
def isel_matcher(decompose: frozenset[Ops]) -> PatternMatcher:
    rules = [(pat, fn) for pat, fn in ISEL_RULES if pat.op is not None and pat.op <= decompose]
    return PatternMatcher(rules, name="pm_isel")


def isel(sink: UOp, decompose: frozenset[Ops]) -> UOp:
    """Kernel SINK after expand -> the same kernel with every op of `decompose` rewritten into primitives."""
    if not decompose or not any(u.op in decompose for u in sink.toposort()):
        return sink
    return graph_rewrite(sink, isel_matcher(frozenset(decompose)))
