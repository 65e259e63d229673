"""Fuzz the symbolic simplifier: random int expressions over bounded Variables must keep their value.

Each case draws 2-3 Variables with random bounds, a random expression tree (+ - * // % max min < where) and a
seed for the assignments. The original and `simplify(expr)` are evaluated with `exec_alu` (the executable
definition of every op; IDIV/MOD are floor division/modulo) on the corners of the box and on random points:
they must agree, and the min_max of both roots must contain every value seen. The tests together run
more than 10,000 generated cases (see N_* below) in well under a minute on one core.
"""

import itertools
import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from unigrad.dtype import DType, dtypes
from unigrad.ir.alu import exec_alu
from unigrad.ir.ops import GroupOp, Ops
from unigrad.ir.symbolic import simplify
from unigrad.ir.uop import UOp

N_SIGNED, N_NONNEG, N_DIVMOD, N_COMPARE, N_SIZED = 3500, 2500, 2000, 1500, 1000  # 10,500 cases
RANDOM_POINTS = 6
MAX_DEPTH = 5
DIVISORS = [d for d in range(-7, 8) if d != 0] + [12, 16, -16]


def fuzz_settings(n: int):
    return settings(
        max_examples=n,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


# ---------------------------------------------------------------- evaluation


def evaluate(root: UOp, points: list[dict[str, int]]) -> list:
    """Values of `root` at each point: CONSTs are their value, Variables come from the point, ALU ops run
    exec_alu on their sources' values."""
    vals: dict[UOp, list] = {}
    n = len(points)
    for u in root.toposort(gate=lambda x: x.op is not Ops.PARAM):
        if u.op is Ops.CONST:
            vals[u] = [u.arg.value] * n
        elif u.op is Ops.PARAM:
            vals[u] = [p[u.arg.name] for p in points]
        elif u.op in GroupOp.ALU:
            cols = [vals[s] for s in u.src]
            vals[u] = [exec_alu(u.op, u.dtype, *args) for args in zip(*cols)]
        else:
            raise AssertionError(f"unexpected {u.op} in a fuzz expression")
    return vals[root]


def points_for(variables: list[UOp], seed: int) -> list[dict[str, int]]:
    """Every corner of the box, then random points inside it."""
    names = [v.arg.name for v in variables]
    ranges = [v.min_max for v in variables]
    pts = [dict(zip(names, corner)) for corner in itertools.product(*ranges)]
    rng = random.Random(seed)
    pts += [{n: rng.randint(lo, hi) for n, (lo, hi) in zip(names, ranges)} for _ in range(RANDOM_POINTS)]
    return pts


def check(expr: UOp, variables: list[UOp], seed: int) -> None:
    simple = simplify(expr)
    pts = points_for(variables, seed)
    want, got = evaluate(expr, pts), evaluate(simple, pts)
    for p, w, g in zip(pts, want, got):
        where = f"\n  expr:       {expr.render()}\n  simplified: {simple.render()}\n  at {p}"
        assert w == g, f"value {w} became {g}{where}"
        assert expr.vmin <= w <= expr.vmax, f"{w} outside the original's min_max {expr.min_max}{where}"
        assert simple.vmin <= g <= simple.vmax, f"{g} outside the simplified min_max {simple.min_max}{where}"


# ---------------------------------------------------------------- expression strategies


def draw_variables(draw, dtype: DType, lo_min: int, hi_max: int) -> list[UOp]:
    out = []
    for name in ("a", "b", "c")[: draw(st.integers(2, 3))]:
        lo = draw(st.integers(lo_min, hi_max))
        hi = draw(st.integers(lo, hi_max))
        out.append(UOp.variable(name, lo, hi, dtype))
    return out


def draw_leaf(draw, vs: list[UOp]) -> UOp:
    if draw(st.integers(0, 9)) < 6:
        return draw(st.sampled_from(vs))
    return UOp.const(vs[0].dtype, draw(st.integers(-12, 12)))


def draw_int(draw, vs: list[UOp], depth: int) -> UOp:
    if depth == 0 or draw(st.integers(0, 5)) == 0:
        return draw_leaf(draw, vs)
    op = draw(st.sampled_from(["+", "-", "*", "//", "%", "max", "min", "where", "neg"]))
    a = draw_int(draw, vs, depth - 1)
    if op in ("//", "%"):
        d = draw(st.sampled_from(DIVISORS))
        return a // d if op == "//" else a % d
    if op == "neg":
        return -a
    if op == "where":
        return draw_cond(draw, vs, depth - 1).where(a, draw_int(draw, vs, depth - 1))
    b = draw_int(draw, vs, depth - 1)
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    return a.maximum(b) if op == "max" else a.minimum(b)


def draw_cond(draw, vs: list[UOp], depth: int) -> UOp:
    """A comparison of two int expressions (sometimes two combined with and/or/not)."""
    if depth > 0 and draw(st.integers(0, 4)) == 0:
        p, q = draw_cond(draw, vs, depth - 1), draw_cond(draw, vs, depth - 1)
        kind = draw(st.sampled_from(["and", "or", "not"]))
        return p & q if kind == "and" else p | q if kind == "or" else p.ne(True)
    a = draw_int(draw, vs, max(depth - 1, 0))
    b = draw_int(draw, vs, max(depth - 1, 0)) if draw(st.booleans()) else UOp.const(a.dtype, draw(st.integers(-15, 15)))
    kind = draw(st.sampled_from(["<", ">", "<=", ">=", "!=", "=="]))
    if kind == "<":
        return a < b
    if kind == ">":
        return a > b
    if kind == "<=":
        return a <= b
    if kind == ">=":
        return a >= b
    return a.ne(b) if kind == "!=" else a.eq(b)


@st.composite
def int_cases(draw, lo_min: int, hi_max: int, dtype: DType = dtypes.index):
    vs = draw_variables(draw, dtype, lo_min, hi_max)
    expr = draw_int(draw, vs, draw(st.integers(1, MAX_DEPTH)))
    return expr, vs, draw(st.integers(0, 2**32 - 1))


@st.composite
def divmod_cases(draw):
    """(k0*t0 + k1*t1 + ... + c) // d or % d: the shapes fold_divmod splits into quotient and remainder."""
    vs = draw_variables(draw, dtypes.index, draw(st.sampled_from([-10, 0])), 20)
    terms = [draw_int(draw, vs, draw(st.integers(0, 2))) for _ in range(draw(st.integers(1, 3)))]
    coefs = [draw(st.sampled_from([-6, -4, -3, -2, -1, 1, 2, 3, 4, 6, 8, 12])) for _ in terms]
    x = UOp.const(dtypes.index, draw(st.integers(-20, 20)))
    for t, k in zip(terms, coefs):
        x = x + t * k
    d = draw(st.sampled_from(DIVISORS))
    expr = x // d if draw(st.booleans()) else x % d
    if draw(st.booleans()):  # nest once more: (x op d) op e, or (x op d)*e + x op e
        e = draw(st.sampled_from(DIVISORS))
        expr = (expr // e) if draw(st.booleans()) else (expr * e + x % e)
    return expr, vs, draw(st.integers(0, 2**32 - 1))


@st.composite
def compare_cases(draw):
    vs = draw_variables(draw, dtypes.index, -10, 10)
    return draw_cond(draw, vs, draw(st.integers(1, 4))), vs, draw(st.integers(0, 2**32 - 1))


@st.composite
def sized_cases(draw):
    """Sized ints wrap like C: int8 2*64 is -128. Folds that treat a sum as an integer must notice."""
    dtype = draw(st.sampled_from([dtypes.int8, dtypes.int16, dtypes.int32, dtypes.uint8]))
    lo_min = 0 if dtype is dtypes.uint8 else -10
    vs = draw_variables(draw, dtype, lo_min, 20)
    x = draw_int(draw, vs, draw(st.integers(1, 4)))
    if draw(st.booleans()):  # a big multiplier makes the sum wrap in the small dtypes
        k = draw(st.sampled_from([16, 64, 100, 1000, 2**14, 2**30]))
        x = x * UOp.const(dtype, k) + draw(st.sampled_from(vs))
    tail = draw(st.sampled_from(["//", "%", "<", "none"]))
    d = draw(st.sampled_from([2, 3, 4, 16, 64]))
    if tail == "//":
        x = x // UOp.const(dtype, d)
    elif tail == "%":
        x = x % UOp.const(dtype, d)
    elif tail == "<":
        x = x < UOp.const(dtype, draw(st.integers(-100, 100)))
    return x, vs, draw(st.integers(0, 2**32 - 1))


# ---------------------------------------------------------------- the fuzz tests


@fuzz_settings(N_SIGNED)
@given(int_cases(-10, 10))
def test_fuzz_signed_bounds(case):
    check(*case)


@fuzz_settings(N_NONNEG)
@given(int_cases(0, 20))
def test_fuzz_nonnegative_bounds(case):
    check(*case)


@fuzz_settings(N_DIVMOD)
@given(divmod_cases())
def test_fuzz_divmod_of_sums(case):
    check(*case)


@fuzz_settings(N_COMPARE)
@given(compare_cases())
def test_fuzz_comparisons(case):
    check(*case)


@fuzz_settings(N_SIZED)
@given(sized_cases())
def test_fuzz_sized_ints_wrap(case):
    check(*case)


def test_case_count():
    assert N_SIGNED + N_NONNEG + N_DIVMOD + N_COMPARE + N_SIZED >= 10_000


def test_evaluator_agrees_with_python():
    a, b = UOp.variable("a", -5, 5), UOp.variable("b", 1, 3)
    e = ((a * 3 + b) // 2) % 4 - a.maximum(b) + (a < b).where(a, b * -2)
    pts = points_for([a, b], 0)
    for p, v in zip(pts, evaluate(e, pts)):
        x, y = p["a"], p["b"]
        assert v == ((x * 3 + y) // 2) % 4 - max(x, y) + (x if x < y else y * -2)
