"""The symbolic simplifier: index expressions come out as a person writes them (hand-written cases)."""

import itertools

import pytest

from unigrad import Variable
from unigrad.dtype import dtypes
from unigrad.ir.alu import exec_alu
from unigrad.ir.args import ParamArg
from unigrad.ir.ops import GroupOp, Ops
from unigrad.ir.pattern import graph_rewrite
from unigrad.ir.symbolic import pm_symbolic, simplify, simplify_given_valid
from unigrad.ir.uop import UOp

x = Variable("x", 0, 100)
y = Variable("y", 0, 2)
z = Variable("z", -10, 10)
TRUE, FALSE = UOp.const(dtypes.bool, True), UOp.const(dtypes.bool, False)
FLT = UOp(Ops.PARAM, (UOp.shape_src(()),), ParamArg(0, dtypes.float32))  # a float scalar of unknown value


def c(v: int) -> UOp:
    return UOp.index_const(v)


def evaluate(e: UOp, env: dict[str, int]):
    vals: dict[UOp, object] = {}
    for u in e.toposort():
        if u.op is Ops.CONST:
            vals[u] = u.arg.value
        elif u.op is Ops.PARAM:
            vals[u] = env[u.arg.name]
        elif u.op in GroupOp.ALU:
            vals[u] = exec_alu(u.op, u.dtype, *(vals[s] for s in u.src))
    return vals[e]


# ---------------------------------------------------------------- the notes on symbolic shapes, with our API


def test_notes_access_pattern():
    assert simplify(x * 3 + y).render() == "((x*3)+y)"


def test_notes_masked_view_valid():
    assert simplify((x < 2) & (y < 2)).render() == "((x<2) and (y<2))"


def test_notes_single_row_no_longer_depends_on_x():
    valid = (x >= 1) & (x < 2) & (y < 2)
    idx = simplify_given_valid(x * 3 + y, valid)
    assert idx.render() == "(y+3)"
    assert x not in idx.toposort()
    assert simplify(valid).render() == "((x>=1) and (x<2) and (y<2))"
    assert valid.render() == "((x>=1) and (x<2) and (y<2))"


def test_notes_expressions_are_right_on_every_point():
    valid = (x >= 1) & (x < 2) & (y < 2)
    idx = simplify_given_valid(x * 3 + y, valid)
    for xv in range(0, 101):
        for yv in range(0, 3):
            env = {"x": xv, "y": yv}
            if evaluate(valid, env):
                assert evaluate(idx, env) == evaluate(x * 3 + y, env)


# ---------------------------------------------------------------- hand-written cases


def case(expr: UOp, text: str):
    return pytest.param(expr, text, id=f"{expr.render()} -> {text}")


@pytest.mark.parametrize(
    "expr, text",
    [
        # constant folding
        case(c(3) + c(4), "7"),
        case(c(2) * c(3) + x, "(x+6)"),
        case(c(7) // c(2), "3"),
        case(c(-7) // c(2), "-4"),  # floor division
        case(c(-7) % c(2), "1"),  # floor modulo
        case(c(7) % c(-2), "-1"),
        case(c(3) < c(4), "True"),
        case(c(3).maximum(c(-4)), "3"),
        # identities
        case(x + 0, "x"),
        case(0 + x, "x"),
        case(x * 1, "x"),
        case(1 * x, "x"),
        case(x * 0, "0"),
        case(x // 1, "x"),
        case(x % 1, "0"),
        case(x - x, "0"),
        case((x + y) - y, "x"),
        case(10 - x + x, "10"),
        case(x.ne(x), "False"),
        case(x < x, "False"),
        # like terms, constants last
        case(x + x, "(x*2)"),
        case(x * 2 + x * 3, "(x*5)"),
        case(x + x * 2 + 3 + x, "((x*4)+3)"),
        case((x * 3) * 4, "(x*12)"),
        case((x + 2) * 3, "((x*3)+6)"),
        case(2 * (x + 1) + 3, "((x*2)+5)"),
        case(3 + x, "(x+3)"),
        # div / mod of sums
        case((x * 3 + y) // 3, "x"),
        case((x * 3 + y) % 3, "y"),
        case((x * 4 + y) // 4, "x"),
        case((x * 4 + y) % 4, "y"),
        case((x * 6 + 4) // 2, "((x*3)+2)"),
        case((x * 6 + 4) % 2, "0"),
        case((x * 3 + y + 3) // 3, "(x+1)"),
        case((x * 4 + 2) // 8, "(((x*2)+1)//4)"),
        case((x * 4 + 2) % 8, "((((x*2)+1)%4)*2)"),
        case((z + 10) % 4, "((z+2)%4)"),
        case(y % 3, "y"),
        case(y // 3, "0"),
        case((x // 4) * 4 + x % 4, "x"),
        case(x % 4 + (x // 4) * 4, "x"),
        case(((x // 4) * 4 + x % 4) * 2, "(x*2)"),
        # nested div / mod
        case((x // 2) // 3, "(x//6)"),
        case(((x // 2) // 3) // 5, "(x//30)"),
        case((x % 6) % 3, "(x%3)"),
        case((x % 6) % 4, "((x%6)%4)"),  # 4 does not divide 6: kept
        # comparisons decided by ranges
        case(x < 101, "True"),
        case(x < 0, "False"),
        case(x >= 0, "True"),
        case((x + 5) < 3, "False"),
        case(y < 5, "True"),
        case(z < -10, "False"),
        case((x + 3) < 10, "(x<7)"),
        case(x * 2 < 7, "(x<4)"),
        case(x * 4 + y * 2 < 9, "(((x*2)+y)<5)"),
        # max / min and where
        case(x.maximum(c(-1)), "x"),
        case(x.maximum(c(200)), "200"),
        case(x.maximum(x), "x"),
        case((x < 5).where(y, y), "y"),
        case(TRUE.where(x, y), "x"),
        case(FALSE.where(x, y), "y"),
        case((x < 200).where(x, y), "x"),
        # booleans
        case((x < 3) & TRUE, "(x<3)"),
        case((x < 3) & FALSE, "False"),
        case((x < 3) | TRUE, "True"),
        case((x < 3) | FALSE, "(x<3)"),
        case((x < 3) & (x < 3), "(x<3)"),
        case((x < 3).ne(FALSE), "(x<3)"),
        case((x < 3).ne(TRUE).ne(TRUE), "(x<3)"),
    ],
)
def test_simplify(expr, text):
    out = simplify(expr)
    assert out.render() == text
    assert simplify(out) is out  # a fixed point


@pytest.mark.parametrize(
    "expr",
    [
        x % 3,  # nothing known
        z // -3,  # negative divisor: left as written
        z % 4,
        (x + 1) * (y + 1),  # not a constant factor
        c(7) // c(0),  # division by zero is left for the device
        c(7) % c(0),
        x * y,
        x // y,
    ],
    ids=lambda e: e.render(),
)
def test_simplify_leaves_alone(expr):
    assert simplify(expr) is expr


def test_float_identities_only_where_exact():
    assert simplify(FLT * 1) is FLT
    assert simplify(FLT * 0) is FLT * 0  # nan*0 is nan, inf*0 is nan
    assert simplify(FLT + 0) is FLT + 0  # -0.0+0 is 0.0
    two = UOp.const(dtypes.float32, 2.0)
    assert simplify(two * 3.0).arg.value == 6.0


def test_simplify_is_pm_symbolic_rewrite():
    e = (x * 3 + y) // 3 + (x // 2) // 3
    assert simplify(e) is graph_rewrite(e, pm_symbolic)


def test_simplify_deep_sum():
    e = x
    for _ in range(5000):
        e = e + 1
    assert simplify(e).render() == "(x+5000)"


def test_simplify_bound_variable_keeps_binding():
    b = x.bind(7)
    assert simplify(b * 3 + 0) is b * 3


# ---------------------------------------------------------------- simplify_given_valid


def test_given_valid_tightens_bounds():
    valid = (x < 4) & (y < 2)
    assert simplify_given_valid((x * 3 + y) // 16, valid).render() == "0"  # x*3+y <= 10 under valid
    assert simplify_given_valid((x * 3 + y) // 16, TRUE).render() == "(((x*3)+y)//16)"
    assert simplify_given_valid(x % 8, x < 8).render() == "x"


def test_given_valid_pins_variables():
    assert simplify_given_valid(x * 3 + y, (x >= 5) & (x < 6)).render() == "(y+15)"
    assert simplify_given_valid(x + y, (x < 1) & (y >= 2)).render() == "2"


def test_given_valid_never_valid_is_left_alone():
    # x >= 5 and x < 2 cannot both hold: the gate keeps the access from running, so leave it as it is
    assert simplify_given_valid(x * 3 + y, (x >= 5) & (x < 2)).render() == "((x*3)+y)"


def test_given_valid_range_bounds():
    r = UOp.range(16, 0)
    assert simplify_given_valid(r // 4, r < 4).render() == "0"
    assert simplify_given_valid(r // 4, r < 8).render() == "(ridx0//4)"
    assert simplify_given_valid(r % 8, r < 8).render() == "ridx0"


# ---------------------------------------------------------------- sized ints wrap: no integer-only folds


I8 = UOp.variable("i8", 0, 3, dtypes.int8)


@pytest.mark.parametrize(
    "expr",
    [
        (I8 * 64 + 1) // 64,  # 2*64 wraps to -128 in int8: not i8
        (I8 * 64 + 1) % 64,
        (I8 * 64) < 100,  # not i8 < 2
        (I8 * 64 + 10) < 100,
        (UOp.variable("w8", -128, 127, dtypes.int8) // 16) // 16,  # 16*16 wraps to 0: not w8//0
    ],
    ids=lambda e: e.render(),
)
def test_wrapping_int8_agrees_with_evaluation(expr):
    out = simplify(expr)
    name = next(u.arg.name for u in expr.toposort() if u.op is Ops.PARAM)
    lo, hi = next(u.min_max for u in expr.toposort() if u.op is Ops.PARAM)
    for v in range(lo, hi + 1):
        assert evaluate(out, {name: v}) == evaluate(expr, {name: v}), f"{out.render()} at {name}={v}"


def test_wrapping_int32_compare():
    b = UOp.variable("b32", 0, 3, dtypes.int32)
    e = (b * 2**30) < 100  # b=2 wraps to -2**31
    out = simplify(e)
    assert [evaluate(out, {"b32": v}) for v in range(4)] == [True, False, True, True]


def test_small_int_folds_still_happen_without_overflow():
    s = UOp.variable("s8", 0, 3, dtypes.int8)
    assert simplify((s * 4 + 1) // 4) is s
    assert simplify((s * 4 + 3) % 4) is UOp.const(dtypes.int8, 3)
    assert simplify((s * 2) < 5).render() == "(s8<3)"


# ---------------------------------------------------------------- digit sums (arange's binary digits)

w = Variable("w", 0, 1000)
q = Variable("q", 0, 63)


def _digits(v: UOp, n: int, dt=dtypes.int64) -> UOp:
    """sum over bits b < n of (v % 2b < b ? 0 : b), as int64: the form a tiled, padded arange digit takes."""
    out, b = UOp.const(dt, 0), 1
    while b < n:
        out = out + ((v % c(2 * b)) < c(b)).ne(TRUE).where(UOp.const(dt, b), UOp.const(dt, 0))
        b *= 2
    return out


@pytest.mark.parametrize("n", [2, 3, 10, 64, 1000, 1001])
def test_digit_sum_is_the_index(n):
    """An arange of n built from binary digits (each a staircase where) simplifies to a cast of the index itself."""
    v = Variable("v", 0, n - 1)
    out = simplify(_digits(v, n))
    assert out.op is Ops.CAST and out.src[0] is v, out.render()
    for val in {0, 1, n // 2, n - 1}:
        assert evaluate(out, {"v": val}) == val == evaluate(_digits(v, n), {"v": val})


@pytest.mark.parametrize(
    "expr",
    [
        (w % c(12)) // c(4),  # a digit group's quotient: (w//4)%3
        w % c(4) + ((w // c(4)) % c(3)) * c(4),  # digits summed back: w%12
        (w % c(8)) * c(5) + ((w // c(8)) % c(2)) * c(40) + c(3),  # scaled digits: (w%16)*5+3
        ((w % c(16)) < c(8)).where(UOp.const(dtypes.int64, 2), UOp.const(dtypes.int64, 9)),  # a staircase step
        (w % c(8)).cast(dtypes.int64) + (w // c(8)).cast(dtypes.int64) * 3,  # index casts lifted
        (z % c(8)) // c(2),  # negative values too (floor semantics)
        z % c(2) + ((z // c(2)) % c(4)) * c(2),
    ],
    ids=lambda e: e.render(),
)
def test_digit_rules_agree_with_evaluation(expr):
    out = simplify(expr)
    for name, var in (("w", w), ("z", z)):
        if var in expr.toposort():
            for val in range(var.vmin, var.vmax + 1):
                assert evaluate(out, {name: val}) == evaluate(expr, {name: val}), (val, out.render())


def test_digit_rules_shapes():
    assert simplify((w % c(12)) // c(4)).render() == "((w//4)%3)"
    assert simplify(w % c(4) + ((w // c(4)) % c(3)) * c(4)).render() == "(w%12)"
    step = simplify(((q % c(16)) < c(8)).where(UOp.const(dtypes.int64, 0), UOp.const(dtypes.int64, 8)))
    assert step.op is Ops.CAST and not any(u.op is Ops.WHERE for u in step.toposort()), step.render()
    # not a power of two, or a range wider than one step: the where stays
    kept = ((w % c(16)) < c(6)).where(UOp.const(dtypes.int64, 0), UOp.const(dtypes.int64, 6))
    assert simplify(kept).op is Ops.WHERE


# ---------------------------------------------------------------- a sum with a small rest: x = c*S + T, 0 <= T < c


a4, b8, s3 = Variable("a4", -3, 4), Variable("b8", 0, 7), Variable("s3", 0, 2)


@pytest.mark.parametrize(
    "expr, want",
    [
        ((a4 * c(8) + b8) // c(16), "(a4//2)"),  # b8 < 8: the quotient does not see it
        ((a4 * c(8) + b8) % c(16), "(((a4%2)*8)+b8)"),
        ((a4 * c(24) + s3 * c(8) + b8) // c(48), "(a4//2)"),  # gcd 8, then s3 < 3 is a small rest of a4*3
        ((a4 * c(24) + s3 * c(8) + b8 + c(0)) % c(16), None),
        ((a4 * c(6) + b8) // c(12), None),  # b8 reaches 7 >= 6: not a small rest, nothing folds
        ((a4 * c(8) + b8 * c(2)) // c(16), None),  # the rest reaches 14 >= 8
    ],
    ids=lambda e: e.render() if isinstance(e, UOp) else str(e),
)
def test_small_rest_rule_agrees_with_evaluation(expr, want):
    """x // d and x % d for x = c*S + T with c | d and T in [0, c): S // (d/c) and (S % (d/c))*c + T, checked on
    every point (negative S included: floor semantics)."""
    out = simplify(expr)
    if want is not None:
        assert out.render() == want
    names = [v for v in (a4, b8, s3) if v in expr.toposort()]
    for point in itertools.product(*(range(v.vmin, v.vmax + 1) for v in names)):
        env = {v.arg.name: p for v, p in zip(names, point)}
        assert evaluate(out, env) == evaluate(expr, env), (env, out.render())


def test_reshaped_flat_index_folds_back():
    """A contiguous (32, 64, 32, 32) buffer read through a (256, 8192) split of its flat index (a split reduce),
    the inner axis upcast by 32: the unflattened 4-D index sums back to the flat index (it stayed div/mod math per
    lane, and the kernel ran scalar at a fifth of the memory speed)."""
    r0, r1, lane = UOp.range(256, 0), UOp.range(256, 1), UOp.range(32, 2)
    flat = r0 * 8192 + r1 * 32 + lane
    idx = (flat // c(65536)) * 65536 + ((flat // c(1024)) % c(64)) * 1024 + ((flat // c(32)) % c(32)) * 32
    assert simplify(idx + flat % c(32)) is simplify(flat)
