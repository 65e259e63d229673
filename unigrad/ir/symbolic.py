"""The symbolic simplifier: rules that make index math come out as a person would write it.

In: any graph. Out: the same values, with ALU subgraphs on ints/index/bools simplified:
constant folding, identities, canonical order (constants right), sums with like terms combined,
IDIV/MOD folded from min_max, comparisons decided from min_max. Floats are only folded where exact.
IDIV/MOD are floor division/modulo (the spec's floor(a/b)), so x == d*(x//d) + x%d for every int x.
"""

from __future__ import annotations

import math
from typing import Any

from unigrad.dtype import dtypes
from unigrad.ir.alu import exec_alu
from unigrad.ir.ops import GroupOp, Ops
from unigrad.ir.pattern import PatternMatcher, UPat, graph_rewrite
from unigrad.ir.uop import UOp

INTS = frozenset(
    {dtypes.index, dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64}
    | {dtypes.uint8, dtypes.uint16, dtypes.uint32, dtypes.uint64}
)
INT_BOOL = INTS | {dtypes.bool}
ADD, MUL, CONST, IDIV, MOD = Ops.ADD, Ops.MUL, Ops.CONST, Ops.IDIV, Ops.MOD
FOLDABLE = GroupOp.ALU - GroupOp.Transcendental


def _c(like: UOp, v: Any) -> UOp:
    return UOp.const(like.dtype, v)


def fold_consts(u: UOp) -> UOp | None:
    """c0 op c1 -> c: every source is a CONST."""
    if u.op not in FOLDABLE or not u.src or any(s.op is not Ops.CONST for s in u.src):
        return None
    if u.op in (Ops.IDIV, Ops.MOD) and u.src[1].arg.value == 0 and not u.dtype.is_float:
        return None  # division by zero is left for the device to define
    return UOp.const(u.dtype, exec_alu(u.op, u.dtype, *(s.arg.value for s in u.src)))


def fold_by_range(u: UOp) -> UOp | None:
    """An int/bool ALU op whose min_max is one value is that value (e.g. x//8 with x in [0,7] -> 0)."""
    lo, hi = u.min_max
    return _c(u, lo) if lo == hi else None


# ---------------------------------------------------------------- sums


def split_terms(u: UOp) -> tuple[list[tuple[UOp, int]], int]:
    """A sum as [(term, coefficient)] and a constant: x*3 + y + 2 -> [(x, 3), (y, 1)], 2."""
    terms: list[tuple[UOp, int]] = []
    const = 0
    stack = [u]
    while stack:
        t = stack.pop()
        while t.op is ADD:  # walk down the left spine; right operands that are sums go on the stack
            t, right = t.src
            stack.append(t)
            t = right
        op = t.op
        if op is CONST:
            const += t.arg.value
        elif op is MUL and t.src[1].op is CONST:
            terms.append((t.src[0], t.src[1].arg.value))
        else:
            terms.append((t, 1))
    terms.reverse()
    return terms, const


def build_sum(like: UOp, terms: list[tuple[UOp, int]], const: int) -> UOp:
    """Inverse of split_terms, left-nested in term order with the constant last: ((x*3)+y)+2."""
    out: UOp | None = None
    for t, k in terms:
        if k == 0:
            continue
        term = t if k == 1 else UOp(Ops.MUL, (t, _c(like, k)))
        out = term if out is None else UOp(Ops.ADD, (out, term))
    if out is None:
        return _c(like, const)
    return out if const == 0 else UOp(Ops.ADD, (out, _c(like, const)))


def combine_terms(terms: list[tuple[UOp, int]]) -> list[tuple[UOp, int]]:
    """Like terms added, (x//c)*c + x%c -> x and ((x//c)%n)*c + x%c -> x%(c*n) (the digits of a number summed
    back: arange's binary digits become the index), repeated while a pair merges."""
    coef: dict[UOp, int] = {}
    for t, k in terms:
        coef[t] = coef.get(t, 0) + k
    merged = True
    while merged:
        merged = False
        for t in list(coef):
            if t.op is not Ops.MOD or t not in coef or t.src[1].op is not Ops.CONST:
                continue
            x, c_u = t.src
            c, k = c_u.arg.value, coef[t]
            if k == 0 or c <= 0:
                continue
            q = UOp(Ops.IDIV, (x, c_u))
            if coef.get(q) == c * k:  # (x//c)*c*k + (x%c)*k -> x*k, where the quotient was
                coef = _merged(coef, q, t, x, k)
                merged = True
                continue
            for d in list(coef):  # ((x//c)%n)*c*k + (x%c)*k -> (x%(c*n))*k
                if d.op is Ops.MOD and d.src[0] is q and d.src[1].op is Ops.CONST and coef[d] == c * k:
                    n = d.src[1].arg.value
                    if n > 0 and sum_fits(x, [], c * n):
                        coef = _merged(coef, d, t, UOp(Ops.MOD, (x, _c(x, c * n))), k)
                        merged = True
                        break
    return [(t, k) for t, k in coef.items() if k != 0]


def _merged(coef: dict[UOp, int], at: UOp, drop: UOp, new: UOp, k: int) -> dict[UOp, int]:
    """coef with the terms `at` and `drop` replaced by k*new, placed where `at` was (or added to new's own
    coefficient): a merged sum keeps its terms' order, so the same index built two ways is the same node."""
    out: dict[UOp, int] = {}
    for t, v in coef.items():
        if t is at:
            out[new] = out.get(new, 0) + k
        elif t is not drop:
            out[t] = out.get(t, 0) + v
    return out


def sum_is_canonical(u: UOp) -> bool:
    """True when fold_sum has nothing to do: u = a + b with b a term or the (nonzero) constant, a with no
    constant, and b's base not already among a's terms (nor its //,% partner). The sources are assumed to be
    fixed points already (graph_rewrite rewrites bottom-up), so a is canonical itself. No node is built."""
    a, b = u.src
    aop, bop = a.op, b.op
    if bop is ADD or aop is CONST or (aop is ADD and a.src[1].op is CONST):
        return False
    if bop is CONST:
        return b.arg.value != 0
    base = b.src[0] if bop is MUL and b.src[1].op is CONST else b
    bsrc = base.src
    partner = MOD if base.op is IDIV else IDIV if base.op is MOD else None  # x//c pairs with x%c
    # ... and (x//c)%n with x%c: the quotient inside a MOD pairs with a MOD of the same x and c
    digit = bsrc[0].src if base.op is MOD and bsrc[0].op is IDIV else None
    node = a
    while True:
        if node.op is ADD:
            node, t = node.src
        else:
            t, node = node, None
        if t.op is MUL and t.src[1].op is CONST:
            t = t.src[0]
        if t is base or (t.op is partner and t.src == bsrc):
            return False
        if t.op is MOD and (t.src == digit or (partner is IDIV and t.src[0].op is IDIV and t.src[0].src == bsrc)):
            return False
        if node is None:
            return True


def fold_sum(u: UOp) -> UOp | None:
    """(for an int ADD) Normalize an int sum: like terms combined, constants summed and placed last."""
    if sum_is_canonical(u):
        return None
    terms, const = split_terms(u)
    new = build_sum(u, combine_terms(terms), const)
    return None if new is u else new


def distribute(x: UOp, c: UOp) -> UOp | None:
    """(a+b)*c -> a*c + b*c for ints, so sums stay flat for div/mod folding."""
    if x.dtype not in INTS:
        return None
    terms, const = split_terms(x)
    k = c.arg.value
    return build_sum(x, [(t, m * k) for t, m in terms], const * k)


def fold_mul_const(x: UOp, c: UOp) -> UOp | None:
    """(x*c1)*c2 -> x*(c1*c2)."""
    if x.op is Ops.MUL and x.src[1].op is Ops.CONST:
        return UOp(Ops.MUL, (x.src[0], _c(x, x.src[1].arg.value * c.arg.value)))
    return None


# ---------------------------------------------------------------- div / mod


def sum_fits(like: UOp, terms: list[tuple[UOp, int]], const: int) -> bool:
    """True when sum(k*t) + const cannot wrap, so its value is the integer the terms say.

    ADD/MUL on sized ints wrap (int8: 2*64 is -128), which keeps sums right modulo 2**bits but breaks the
    rules that split a sum as integers: (x*64)//64 -> x and (x*64) < 100 -> x < 2 are wrong for int8 x = 2.
    index math is Python ints and never wraps."""
    if like.dtype is dtypes.index:
        return True
    lo = hi = const
    for t, k in terms:
        tlo, thi = t.min_max
        a, b = k * tlo, k * thi
        lo, hi = (lo + a, hi + b) if a <= b else (lo + b, hi + a)
    return like.dtype.min <= lo and hi <= like.dtype.max


def fold_divmod(u: UOp) -> UOp | None:
    """x // d and x % d for a constant d > 0, by splitting x = d*Q + R (exact for floor semantics).

    Terms whose coefficient is a multiple of d move into Q; when R's range sits inside one multiple of d,
    R // d is that multiple and R % d is R shifted. A common factor of R and d is divided out."""
    x, d_u = u.src
    d = d_u.arg.value
    xop = x.op
    if d <= 0 or (xop is not ADD and xop is not MUL) or u.dtype not in INTS:
        return None  # a single term: only its range can fold it (fold_by_range)
    terms, const = split_terms(x)
    # the common case first, without building lists: nothing moves into Q, no common factor, R's range
    # spans more than one multiple of d
    q_const, r_const = divmod(const, d)
    moved, g, lo, hi, kmax = q_const != 0, math.gcd(d, r_const), r_const, r_const, 0
    for t, k in terms:
        if 0 < k < d:  # most terms: k is its own remainder
            r = k
        else:
            r = k % d
            moved = moved or k != r
            if not r:
                continue
        g = math.gcd(g, r)
        tlo, thi = t.min_max
        lo += r * tlo
        hi += r * thi
        if r > kmax:
            kmax = r
    if lo // d != hi // d and g == 1 and not moved and (u.op is Ops.IDIV or r_const == const):
        # x is its own remainder part; unless its largest coefficient (all are in (0, d) here) shares a factor
        # with d: then x may be c*S + T with a small T
        return fold_divmod_small_rest(u, x, terms, const, d) if math.gcd(kmax, d) > 1 else None
    q_terms = [(t, k // d) for t, k in terms if k // d != 0]
    r_terms = [(t, k % d) for t, k in terms if k % d != 0]
    if not (sum_fits(x, terms, const) and sum_fits(x, r_terms, r_const)):
        return None  # a sized int sum that may wrap is not d*Q + R as integers
    r = build_sum(x, r_terms, r_const)
    if lo // d == hi // d:
        k = lo // d
        if u.op is Ops.IDIV:
            return build_sum(x, q_terms, q_const + k)
        return r if k == 0 else build_sum(x, r_terms, r_const - k * d)
    if g > 1:
        r2 = build_sum(x, [(t, k // g) for t, k in r_terms], r_const // g)
        if u.op is Ops.IDIV:
            return build_sum(x, q_terms + [(UOp(Ops.IDIV, (r2, _c(x, d // g))), 1)], q_const)
        return UOp(Ops.MUL, (UOp(Ops.MOD, (r2, _c(x, d // g))), _c(x, g)))
    if u.op is Ops.IDIV and (q_terms or q_const):
        return build_sum(x, q_terms + [(UOp(Ops.IDIV, (r, d_u)), 1)], q_const)
    if u.op is Ops.MOD and r is not x:
        return UOp(Ops.MOD, (r, d_u))
    return None


def fold_divmod_small_rest(u: UOp, x: UOp, terms: list[tuple[UOp, int]], const: int, d: int) -> UOp | None:
    """x = c*S + T with c > 1 dividing d and 0 <= T < c (T: the terms of smallest coefficients and the constant):
    x // d -> S // (d/c) and x % d -> (S % (d/c))*c + T, exact for floor semantics. A flattened index split at
    another stride: (r0*8192 + r1) // 65536 -> r0 // 8 for r1 in [0, 8192), which lets a reshaped contiguous
    buffer's unflattened index fold back to the flat one."""
    if len(terms) < 2 or not sum_fits(x, terms, const):
        return None
    order = sorted(range(len(terms)), key=lambda j: -abs(terms[j][1]))  # term positions, largest coefficient first
    # lo[i], hi[i]: the range of T = the terms at order[i:] + const, each suffix summed once
    n = len(order)
    lo, hi = [const] * (n + 1), [const] * (n + 1)
    for j in range(n - 1, 0, -1):
        t, k = terms[order[j]]
        tlo, thi = t.min_max
        a, b = (k * tlo, k * thi) if k >= 0 else (k * thi, k * tlo)
        lo[j], hi[j] = lo[j + 1] + a, hi[j + 1] + b
    c = 0
    for i in range(1, n):
        c = math.gcd(c, terms[order[i - 1]][1])
        if c <= 1:
            return None  # the gcd only shrinks as more terms join the big part
        if d % c == 0 and 0 <= lo[i] and hi[i] < c:
            return _small_rest_split(u, x, terms, const, d, c, frozenset(order[:i]))
    return None


def _small_rest_split(
    u: UOp, x: UOp, terms: list[tuple[UOp, int]], const: int, d: int, c: int, big: frozenset[int]
) -> UOp:
    """fold_divmod_small_rest's result, the terms kept in their order (S where its first term was)."""
    s = build_sum(x, [(t, k // c) for j, (t, k) in enumerate(terms) if j in big], 0)
    if u.op is Ops.IDIV:
        return UOp(Ops.IDIV, (s, _c(x, d // c)))
    wrapped = UOp(Ops.MUL, (UOp(Ops.MOD, (s, _c(x, d // c))), _c(x, c)))
    first = min(big)
    kept = [(wrapped, 1) if j == first else (t, k) for j, (t, k) in enumerate(terms) if j == first or j not in big]
    return build_sum(x, kept, const)


def fold_nested_div(x: UOp, a: UOp, b: UOp) -> UOp | None:
    """(x//a)//b -> x//(a*b) for a, b > 0 (when a*b is a value of the dtype: int8 16*16 would wrap to 0)."""
    if a.arg.value > 0 and b.arg.value > 0 and x.dtype in INTS and sum_fits(x, [], a.arg.value * b.arg.value):
        return UOp(Ops.IDIV, (x, _c(x, a.arg.value * b.arg.value)))
    return None


def fold_nested_mod(x: UOp, a: UOp, b: UOp) -> UOp | None:
    """(x%a)%b -> x%b when b divides a."""
    if b.arg.value > 0 and a.arg.value % b.arg.value == 0 and x.dtype in INTS:
        return UOp(Ops.MOD, (x, b))
    return None


def fold_div_of_mod(x: UOp, m: UOp, c: UOp) -> UOp | None:
    """(x%m)//c -> (x//c)%(m//c) when c divides m (floor semantics: exact for every x): the quotient of a digit
    group, in the form combine_terms pairs with x%c."""
    cv, mv = c.arg.value, m.arg.value
    if x.dtype in INTS and cv > 1 and mv > 0 and mv % cv == 0:
        return UOp(Ops.MOD, (UOp(Ops.IDIV, (x, c)), _c(x, mv // cv)))
    return None


def where_step(c: UOp, x: UOp, p: UOp, q: UOp) -> UOp | None:
    """(x < c) ? p : q -> p + (x//c)*(q-p) for int x in [0, 2c) with c a power of two and int constants p, q:
    one step of a staircase, as index math (a pad's validity over a tiled constant: arange's binary digits)."""
    cv = c.arg.value
    if x.dtype not in INTS or p.dtype not in INTS or cv <= 0 or cv & (cv - 1) or not (0 <= x.vmin and x.vmax < 2 * cv):
        return None
    step = UOp(Ops.IDIV, (x, c)).cast(p.dtype)
    if not sum_fits(p, [(step, q.arg.value - p.arg.value)], p.arg.value):
        return None
    return build_sum(p, [(step, q.arg.value - p.arg.value)], p.arg.value)


def lift_cast_sum(u: UOp) -> UOp | None:
    """cast(a) + cast(b) -> cast(a + b) and cast(a) * c -> cast(a * c) for index a, b cast to a sized int, when
    the index result fits the int (then both are the same integer): index math simplifies what is inside."""
    a, b = u.src
    if a.op is not Ops.CAST or a.src[0].dtype is not dtypes.index:
        return None
    if b.op is Ops.CAST and b.src[0].dtype is dtypes.index:
        inner = UOp(u.op, (a.src[0], b.src[0]))
    elif b.op is Ops.CONST:
        inner = UOp(u.op, (a.src[0], UOp.const(dtypes.index, b.arg.value)))
    else:
        return None
    lo, hi = inner.min_max
    return inner.cast(u.dtype) if u.dtype.min <= lo and hi <= u.dtype.max else None


def fold_mod_by_range(x: UOp, y: UOp) -> UOp | None:
    """x % y -> x when 0 <= x < y."""
    if x.dtype in INTS and x.vmin >= 0 and x.vmax < y.vmin:
        return x
    return None


# ---------------------------------------------------------------- comparisons


def fold_lt_sum(x: UOp, c: UOp) -> UOp | None:
    """(x + c0) < c -> x < c - c0; (x*k) < c -> x < ceil(c/k) for k > 0; common factors divided out."""
    if x.op is not ADD and (x.op is not MUL or x.src[1].op is not CONST):
        return None  # one term of coefficient 1, no constant: nothing to move or divide out
    if x.dtype not in INTS:
        return None
    terms, const = split_terms(x)
    if const == 0:
        g = 0
        for _, k in terms:
            g = math.gcd(g, k)
            if g == 1:
                return None  # the common case: nothing to move, no common factor
    if not sum_fits(x, terms, const):
        return None  # x may wrap: x*64 < 100 is not x < 2 in int8
    if const != 0:
        if not (sum_fits(x, terms, 0) and sum_fits(x, [], c.arg.value - const)):
            return None
        return UOp(Ops.CMPLT, (build_sum(x, terms, 0), _c(x, c.arg.value - const)))
    g = math.gcd(*(k for _, k in terms)) if terms else 0
    if g > 1 and all(k > 0 for _, k in terms):
        return UOp(Ops.CMPLT, (build_sum(x, [(t, k // g) for t, k in terms], 0), _c(x, -(-c.arg.value // g))))
    return None


def fold_max(x: UOp, y: UOp) -> UOp | None:
    """max(x, y) -> x when x >= y everywhere (and the other way round)."""
    if x.vmin >= y.vmax:
        return x
    if y.vmin >= x.vmax:
        return y
    return None


def swap_const_left(u: UOp) -> UOp | None:
    """c op x -> x op c for commutative ops, so constants sit on the right."""
    a, b = u.src
    if a.op is Ops.CONST and b.op is not Ops.CONST:
        return UOp(u.op, (b, a), u.arg, u.tag)
    return None


x_, y_, c_ = UPat.var("x"), UPat.var("y"), UPat.cvar("c")
xi = UPat.var("x", dtype=INTS)
xb = UPat.var("x", dtype=dtypes.bool)

pm_symbolic = PatternMatcher(
    [
        (UPat(GroupOp.ALU, src=UPat(Ops.CONST), name="u"), fold_consts),
        (UPat(GroupOp.Commutative, src=(UPat(Ops.CONST), UPat()), name="u"), swap_const_left),
        # identities
        # (constants are on the right from here on: swap_const_left runs first, so patterns are ordered)
        # (int x+0 -> x is fold_sum's: a sum drops a zero constant)
        (UPat(Ops.MUL, src=(x_, UPat.const(1))), lambda x: x),  # x*1 -> x
        (UPat(Ops.MUL, src=(xi, UPat.const(0))), lambda x: UOp.const(x.dtype, 0)),  # x*0 -> 0 (ints: nan*0 is nan)
        (xi // 1, lambda x: x),  # x//1 -> x
        (xi % 1, lambda x: UOp.const(x.dtype, 0)),  # x%1 -> 0
        (UPat(Ops.MAX, src=(x_, x_)), lambda x: x),  # max(x,x) -> x
        (UPat(Ops.WHERE, src=(UPat(), x_, x_)), lambda x: x),  # c ? x : x -> x
        (UPat(Ops.WHERE, src=(UPat.const(True), x_, y_)), lambda x, y: x),  # True ? x : y -> x
        (UPat(Ops.WHERE, src=(UPat.const(False), x_, y_)), lambda x, y: y),  # False ? x : y -> y
        # !c ? x : y -> c ? y : x
        (
            UPat(Ops.WHERE, src=(UPat(Ops.CMPNE, src=(xb, UPat.const(True))), y_, UPat.var("z"))),
            lambda x, y, z: x.where(z, y),
        ),
        (UPat(Ops.WHERE, src=(UPat(Ops.CMPLT, src=(x_, c_)), UPat.cvar("p"), UPat.cvar("q"))), where_step),
        (UPat(Ops.CMPLT, src=(xi, xi)), lambda x: UOp.const(dtypes.bool, False)),  # x<x -> False
        (UPat(Ops.CMPNE, src=(xi, xi)), lambda x: UOp.const(dtypes.bool, False)),  # x!=x -> False (ints)
        # booleans
        (UPat(Ops.AND, src=(xb, UPat.const(True))), lambda x: x),  # x&True -> x
        (UPat(Ops.AND, src=(xb, UPat.const(False))), lambda x: UOp.const(dtypes.bool, False)),  # x&False -> False
        (UPat(Ops.OR, src=(xb, UPat.const(False))), lambda x: x),  # x|False -> x
        (UPat(Ops.OR, src=(xb, UPat.const(True))), lambda x: UOp.const(dtypes.bool, True)),  # x|True -> True
        (UPat(Ops.AND, src=(xb, xb)), lambda x: x),  # x&x -> x
        (UPat(Ops.OR, src=(xb, xb)), lambda x: x),  # x|x -> x
        (UPat(Ops.CMPNE, src=(xb, UPat.const(False))), lambda x: x),  # x!=False -> x
        (UPat(Ops.CMPNE, src=(UPat(Ops.CMPNE, src=(xb, UPat.const(True))), UPat.const(True))), lambda x: x),  # !!x
        # decided by min_max
        (UPat(GroupOp.ALU, dtype=INT_BOOL, name="u"), fold_by_range),
        (UPat(Ops.MAX, src=(x_, y_)), fold_max),
        # sums and products (ints)
        (UPat(Ops.ADD, dtype=INTS, name="u"), fold_sum),
        (UPat(Ops.MUL, src=(UPat(Ops.ADD, name="x"), c_)), distribute),
        (UPat(Ops.MUL, src=(x_, c_)), fold_mul_const),
        # div / mod
        (UPat(Ops.IDIV, src=(UPat(Ops.IDIV, src=(x_, UPat.cvar("a"))), UPat.cvar("b"))), fold_nested_div),
        (UPat(Ops.MOD, src=(UPat(Ops.MOD, src=(x_, UPat.cvar("a"))), UPat.cvar("b"))), fold_nested_mod),
        (UPat((Ops.IDIV, Ops.MOD), src=(UPat(), UPat.cvar()), name="u"), fold_divmod),
        (UPat(Ops.IDIV, src=(UPat(Ops.MOD, src=(x_, UPat.cvar("m"))), c_)), fold_div_of_mod),
        (UPat(Ops.MOD, src=(x_, y_)), fold_mod_by_range),
        (UPat((Ops.ADD, Ops.MUL), dtype=INTS - {dtypes.index}, src=(UPat(Ops.CAST), UPat()), name="u"), lift_cast_sum),
        # comparisons
        (UPat(Ops.CMPLT, src=(x_, c_)), fold_lt_sum),
    ],
    name="pm_symbolic",
    cache=True,
)


def simplify(u: UOp) -> UOp:
    """Run the symbolic rules over a graph to a fixed point."""
    return graph_rewrite(u, pm_symbolic)


# ---------------------------------------------------------------- simplification under a validity predicate


def _clauses(valid: UOp) -> list[UOp]:
    if valid.op is Ops.AND and valid.dtype is dtypes.bool:
        return _clauses(valid.src[0]) + _clauses(valid.src[1])
    return [valid]


def bounds_from_valid(valid: UOp) -> dict[UOp, tuple[int, int]]:
    """Tightest [lo, hi] per expression implied by a conjunction of `x < c` and `!(x < c)` clauses."""
    out: dict[UOp, tuple[int, int]] = {}
    for cl in _clauses(valid):
        neg = cl.op is Ops.CMPNE and cl.src[1].op is Ops.CONST and cl.src[1].arg.value is True
        cmp = cl.src[0] if neg else cl
        if cmp.op is not Ops.CMPLT or cmp.src[1].op is not Ops.CONST or cmp.src[0].dtype not in INTS:
            continue
        x, c = cmp.src[0], cmp.src[1].arg.value
        lo, hi = out.get(x, (x.vmin, x.vmax))
        out[x] = (max(lo, c), hi) if neg else (lo, min(hi, c - 1))
    return out


def simplify_given_valid(expr: UOp, valid: UOp) -> UOp:
    """Simplify `expr` knowing `valid` holds: variables pinned to one value become constants, others get
    tightened bounds for the duration of the simplification (e.g. x in [1,1] turns x*3+y into y+3)."""
    bounds = bounds_from_valid(valid)
    fixed: dict[UOp, UOp] = {}
    proxies: dict[UOp, UOp] = {}
    for i, (x, (lo, hi)) in enumerate(bounds.items()):
        if lo > hi:
            continue  # never valid: the gate keeps this load from running
        if lo == hi:
            fixed[x] = UOp.const(x.dtype, lo)
        elif (lo, hi) != (x.vmin, x.vmax) and x.op in (Ops.RANGE, Ops.PARAM, Ops.SPECIAL):
            proxies[x] = UOp.variable(f"__valid{i}", lo, hi, x.dtype)
    if not fixed and not proxies:
        return simplify(expr)
    out = simplify(expr.substitute({**fixed, **proxies}))
    return out.substitute({v: k for k, v in proxies.items()}) if proxies else out
