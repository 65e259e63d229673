"""Derived properties (spec: Derived Properties table and the paragraph on `axis`): dtype, shape, device,
addrspace, min_max and axis of every op group."""

import itertools
import math

import pytest

from unigrad.dtype import DType, dtypes
from unigrad.ir import props
from unigrad.ir.args import AddrSpace, BufferArg, BufferViewArg, LoadArg, ParamArg, ReduceArg
from unigrad.ir.ops import GroupOp, Ops
from unigrad.ir.uop import UOp

_slots = itertools.count(1000)
D2 = ("CPU:0", "CPU:1")


def buf(*shape, dtype: DType = dtypes.float32, device="CPU", addrspace=AddrSpace.GLOBAL) -> UOp:
    return UOp(Ops.BUFFER, (UOp.shape_src(shape),), BufferArg(next(_slots), dtype, device, addrspace))


def S(*shape) -> UOp:
    return UOp.shape_src(shape)


def c(v, dtype: DType = dtypes.index) -> UOp:
    return UOp.const(dtype, v)


def var(lo: int, hi: int, name: str = "v", dtype: DType = dtypes.index) -> UOp:
    return UOp.variable(name, lo, hi, dtype)


# ---------------------------------------------------------------- dtype


def test_dtype_sources():
    assert buf(3, dtype=dtypes.int16).dtype is dtypes.int16
    assert c(1.5, dtypes.float16).dtype is dtypes.float16
    assert UOp(Ops.PARAM, (S(3),), ParamArg(0, dtypes.uint8)).dtype is dtypes.uint8
    assert UOp(Ops.BINARY, (), b"abcd").dtype is dtypes.uint8


@pytest.mark.parametrize(
    "make",
    [
        lambda b: UOp(Ops.PERMUTE, (b,), (1, 0)),
        lambda b: UOp(Ops.FLIP, (b,), (True, False)),
        lambda b: UOp(Ops.RESHAPE, (b, S(6))),
        lambda b: UOp(Ops.EXPAND, (UOp(Ops.RESHAPE, (b, S(1, 2, 3))), S(4, 2, 3))),
        lambda b: UOp(Ops.PAD, (b, S(1, 0), S(4, 3))),
        lambda b: UOp(Ops.SHRINK, (b, S(0, 1), S(2, 2))),
        lambda b: UOp(Ops.INDEX, (b, c(1))),
        lambda b: UOp(Ops.STACK, (b, b)),
        lambda b: UOp(Ops.REDUCE, (b,), ReduceArg(Ops.ADD, (1,))),
        lambda b: UOp(Ops.NEG, (b,)),
        lambda b: UOp(Ops.ADD, (b, b)),
        lambda b: UOp(Ops.MAX, (b, b)),
        lambda b: UOp(Ops.CONTIGUOUS, (b,)),
        lambda b: UOp(Ops.DETACH, (b,)),
        lambda b: UOp(Ops.AFTER, (b, UOp(Ops.STORE, (b, b)))),
        lambda b: UOp(Ops.LOAD, (b,), LoadArg()),
    ],
)
def test_dtype_follows_src0(make):
    assert make(buf(2, 3, dtype=dtypes.int32)).dtype is dtypes.int32


def test_dtype_from_arg_and_fixed():
    b = buf(2, 3, dtype=dtypes.int32)
    assert UOp(Ops.CAST, (b,), dtypes.float16).dtype is dtypes.float16
    assert UOp(Ops.BITCAST, (b,), dtypes.float32).dtype is dtypes.float32
    for op in (Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ, Ops.CMPGE, Ops.CMPGT, Ops.CMPLE):
        assert UOp(op, (b, b)).dtype is dtypes.bool
    f = buf(2, 3, dtype=dtypes.float16)
    assert UOp(Ops.WHERE, (UOp(Ops.CMPLT, (b, b)), f, f)).dtype is dtypes.float16  # src[1], not the bool
    assert UOp.range(4, 0).dtype is dtypes.index
    assert UOp(Ops.STORE, (b, b)).dtype is dtypes.void
    assert UOp(Ops.SINK, (UOp(Ops.STORE, (b, b)),)).dtype is dtypes.void


def test_dtype_gettuple():
    a, b = buf(3, dtype=dtypes.int8), buf(2, 5, dtype=dtypes.float64)
    t = UOp(Ops.TUPLE, (a, b))
    assert UOp(Ops.GETTUPLE, (t,), 1).dtype is dtypes.float64
    fn = UOp(Ops.FUNCTION, (t, buf(3)))
    assert UOp(Ops.GETTUPLE, (fn,), 0).dtype is dtypes.int8
    assert UOp(Ops.GETTUPLE, (fn,), 1).shape == (2, 5)


# ---------------------------------------------------------------- shape


def test_shape_sources():
    assert buf(2, 3).shape == (2, 3)
    assert buf().shape == ()
    assert c(1).shape == ()
    assert UOp.range(8, 0).shape == ()
    assert UOp(Ops.BINARY, (), b"abcd").shape == (4,)
    assert UOp(Ops.BUFFER_VIEW, (buf(10),), BufferViewArg(4, dtypes.float32, 2)).shape == (4,)
    n = var(1, 16, "n")
    assert UOp(Ops.PARAM, (S(n, 3),), ParamArg(0, dtypes.float32)).shape == (n, 3)


@pytest.mark.parametrize(
    "make, shape",
    [
        (lambda b: UOp(Ops.PERMUTE, (b,), (2, 0, 1)), (4, 2, 3)),
        (lambda b: UOp(Ops.PERMUTE, (b,), (0, 1, 2)), (2, 3, 4)),
        (lambda b: UOp(Ops.FLIP, (b,), (True, False, True)), (2, 3, 4)),
        (lambda b: UOp(Ops.RESHAPE, (b, S(6, 4))), (6, 4)),
        (lambda b: UOp(Ops.RESHAPE, (b, S(24))), (24,)),
        (lambda b: UOp(Ops.RESHAPE, (b, S(1, 2, 1, 12))), (1, 2, 1, 12)),
        (lambda b: UOp(Ops.PAD, (b, S(1, 0, 2), S(4, 3, 8))), (4, 3, 8)),
        (lambda b: UOp(Ops.SHRINK, (b, S(1, 0, 1), S(1, 3, 2))), (1, 3, 2)),
        (lambda b: UOp(Ops.STACK, (b, b, b)), (3, 2, 3, 4)),
        (lambda b: UOp(Ops.INDEX, (b, c(1))), (3, 4)),  # a ()-shaped index removes the dim
        (lambda b: UOp(Ops.INDEX, (b, c(1), c(2))), (4,)),
        (lambda b: UOp(Ops.INDEX, (b, c(1), c(2), c(3))), ()),
        (lambda b: UOp(Ops.INDEX, (b, buf(5, dtype=dtypes.index))), (5, 3, 4)),  # a (k,)-shaped one makes it k
        (lambda b: UOp(Ops.INDEX, (b, c(0), buf(7, dtype=dtypes.index))), (7, 4)),
        (lambda b: UOp(Ops.BITCAST, (b,), dtypes.int32), (2, 3, 4)),
        (lambda b: UOp(Ops.CAST, (b,), dtypes.int8), (2, 3, 4)),
        (lambda b: UOp(Ops.LOAD, (b,), LoadArg("CPU:1")), (2, 3, 4)),
        (lambda b: UOp(Ops.CONTIGUOUS, (b,)), (2, 3, 4)),
        (lambda b: UOp(Ops.AFTER, (b, UOp(Ops.STORE, (b, b)))), (2, 3, 4)),
        (lambda b: UOp(Ops.STORE, (b, b)), ()),
    ],
)
def test_shape_movement_and_friends(make, shape):
    assert make(buf(2, 3, 4)).shape == shape


def test_shape_expand():
    b = buf(1, 3, 1)
    assert UOp(Ops.EXPAND, (b, S(5, 3, 7))).shape == (5, 3, 7)
    n = var(1, 9, "n")
    assert UOp(Ops.EXPAND, (b, S(n, 3, 1))).shape == (n, 3, 1)


def test_shape_stack_of_scalars_is_a_shape():
    assert S(2, 3).shape == (2,)
    assert S().shape == (0,)
    assert UOp(Ops.STACK, (c(1), c(2), c(3))).as_shape == (1, 2, 3)


@pytest.mark.parametrize(
    "axes, shape", [((0,), (1, 3, 4)), ((1, 2), (2, 1, 1)), ((), (2, 3, 4)), ((0, 1, 2), (1, 1, 1))]
)
def test_shape_reduce_collapses_to_one(axes, shape):
    for op in (Ops.ADD, Ops.MAX, Ops.MUL):
        r = UOp(Ops.REDUCE, (buf(2, 3, 4),), ReduceArg(op, axes))
        assert r.shape == shape
        assert r.dtype is dtypes.float32


@pytest.mark.parametrize(
    "a, b, out",
    [
        ((4, 1), (1, 3), (4, 3)),
        ((3,), (2, 3), (2, 3)),
        ((2, 1, 5), (4, 1), (2, 4, 5)),
        ((), (2, 3), (2, 3)),
        ((1,), (1,), (1,)),
        ((2, 3), (2, 3), (2, 3)),
    ],
)
def test_shape_alu_broadcast(a, b, out):
    x, y = buf(*a), buf(*b)
    assert UOp(Ops.ADD, (x, y)).shape == out
    assert UOp(Ops.ADD, (y, x)).shape == out
    assert UOp(Ops.CMPLT, (x, y)).shape == out
    cond = UOp(Ops.CMPLT, (x, x))
    assert UOp(Ops.WHERE, (cond, y, y)).shape == props.broadcast_shapes(a, b)


def test_shape_alu_with_const_and_unary():
    b = buf(2, 3)
    assert UOp(Ops.MUL, (b, c(2.0, dtypes.float32))).shape == (2, 3)
    assert UOp(Ops.RECIP, (b,)).shape == (2, 3)
    assert UOp(Ops.MULACC, (b, b, b)).shape == (2, 3)
    n = var(1, 8, "n")
    sym = UOp(Ops.PARAM, (S(n, 1),), ParamArg(0, dtypes.float32))
    assert UOp(Ops.ADD, (sym, buf(1, 3))).shape == (n, 3)


def test_shape_symbolic_permute_and_size():
    n = var(1, 8, "n")
    p = UOp(Ops.PARAM, (S(n, 3),), ParamArg(0, dtypes.float32))
    assert UOp(Ops.PERMUTE, (p,), (1, 0)).shape == (3, n)
    assert buf(2, 3, 4).size == 24
    assert isinstance(p.size, UOp) and p.size.min_max == (3, 24)


# ---------------------------------------------------------------- device and addrspace


def test_device():
    b = buf(3, device="CPU:1")
    assert b.device == "CPU:1"
    assert c(1).device is None and UOp.range(4, 0).device is None
    assert UOp(Ops.PERMUTE, (buf(2, 3, device="X"),), (1, 0)).device == "X"
    assert UOp(Ops.RESHAPE, (b, S(3, 1))).device == "CPU:1"
    assert UOp(Ops.ADD, (b, b)).device == "CPU:1"
    assert UOp(Ops.ADD, (c(1.0, dtypes.float32), b)).device == "CPU:1"  # a CONST has none: the next source's
    assert UOp(Ops.CAST, (b,), dtypes.int8).device == "CPU:1"
    assert UOp(Ops.REDUCE, (b,), ReduceArg(Ops.ADD, (0,))).device == "CPU:1"
    assert UOp(Ops.LOAD, (b,), LoadArg("GPU")).device == "GPU"  # a copy moves it
    assert UOp(Ops.LOAD, (b,), LoadArg()).device == "CPU:1"  # contiguous stays
    assert UOp(Ops.STORE, (b, b)).device == "CPU:1"
    assert UOp(Ops.AFTER, (b, UOp(Ops.STORE, (b, b)))).device == "CPU:1"
    assert buf(3, device=D2).device == D2
    fn = UOp(Ops.FUNCTION, (UOp(Ops.TUPLE, (buf(3, device="A"),)), buf(3, device="B")))
    assert fn.device == "B"  # src[1].device


def test_addrspace():
    g, loc = buf(4), buf(4, addrspace=AddrSpace.LOCAL)
    assert g.addrspace is AddrSpace.GLOBAL and loc.addrspace is AddrSpace.LOCAL
    assert UOp(Ops.RESHAPE, (loc, S(2, 2))).addrspace is AddrSpace.LOCAL
    assert UOp(Ops.INDEX, (loc, c(1))).addrspace is AddrSpace.LOCAL
    assert UOp(Ops.LOAD, (g,), LoadArg(None, AddrSpace.REG)).addrspace is AddrSpace.REG
    assert UOp(Ops.AFTER, (loc, UOp(Ops.STORE, (loc, loc)))).addrspace is AddrSpace.LOCAL
    assert c(1).addrspace is None
    assert UOp(Ops.PARAM, (S(4),), ParamArg(0, dtypes.float32, addrspace=AddrSpace.GLOBAL)).addrspace is (
        AddrSpace.GLOBAL
    )


# ---------------------------------------------------------------- min_max


def test_min_max_of_a_possible_nan_is_unbounded():
    # nan is unordered: min/max over it depend on argument order, and a comparison folded from such bounds was a
    # wrong constant (erfinv(x) < 0 folded to False through a where with a nan branch)
    nan = c(math.nan, dtypes.float32)
    assert nan.min_max == (-math.inf, math.inf)
    x = buf(3)
    pos = UOp(Ops.MAX, (x, c(0.5, dtypes.float32)))
    w = UOp(Ops.WHERE, (UOp(Ops.CMPLT, (x, c(0.0, dtypes.float32))), nan, pos))
    assert w.min_max == (-math.inf, math.inf)
    assert UOp(Ops.CMPLT, (UOp(Ops.NEG, (w,)), c(0.0, dtypes.float32))).min_max == (False, True)
    inf, ninf = c(math.inf, dtypes.float32), c(-math.inf, dtypes.float32)
    assert UOp(Ops.ADD, (inf, ninf)).min_max == (-math.inf, math.inf)  # inf + -inf is nan
    assert UOp(Ops.SUB, (inf, inf)).min_max == (-math.inf, math.inf)


def test_min_max_leaves():
    assert c(7).min_max == (7, 7)
    assert c(-2.5, dtypes.float32).min_max == (-2.5, -2.5)
    assert var(-3, 9).min_max == (-3, 9)
    assert var(-3, 9).bind(4).min_max == (-3, 9)
    assert UOp(Ops.PARAM, (S(3),), ParamArg(0, dtypes.int8)).min_max == (-128, 127)  # from the dtype
    assert buf(3, dtype=dtypes.uint8).min_max == (0, 255)
    assert buf(3, dtype=dtypes.bool).min_max == (False, True)
    assert buf(3).min_max == (-math.inf, math.inf)
    assert UOp.range(16, 0).min_max == (0, 15)
    assert UOp.range(var(4, 32, "n"), 0).min_max == (0, 31)


@pytest.mark.parametrize(
    "a, b, add, mul, mx",
    [
        ((0, 10), (2, 3), (2, 13), (0, 30), (2, 10)),
        ((-5, 4), (-3, 2), (-8, 6), (-12, 15), (-3, 4)),
        ((-5, -1), (-3, -2), (-8, -3), (2, 15), (-3, -1)),
        ((7, 7), (0, 0), (7, 7), (0, 0), (7, 7)),
    ],
)
def test_min_max_add_mul_max(a, b, add, mul, mx):
    x, y = var(*a, "x"), var(*b, "y")
    assert (x + y).min_max == add
    assert (x * y).min_max == mul
    assert x.maximum(y).min_max == mx
    assert (x - y).min_max == (a[0] - b[1], a[1] - b[0])
    assert UOp(Ops.SUB, (x, y)).min_max == (a[0] - b[1], a[1] - b[0])
    assert UOp(Ops.NEG, (x,)).min_max == (-a[1], -a[0])


def test_min_max_float_mul_with_infinity():
    f = buf(3)  # (-inf, inf)
    assert UOp(Ops.MUL, (f, c(2.0, dtypes.float32))).min_max == (-math.inf, math.inf)
    lo, hi = UOp(Ops.MUL, (f, c(0.0, dtypes.float32))).min_max  # 0*inf is nan: anything
    assert lo == -math.inf and hi == math.inf


def test_min_max_overflow_gives_dtype_range():
    x = var(0, 100, "x", dtypes.int8)
    assert (x * 2).min_max == (-128, 127)  # 200 wraps in int8
    assert (x + 27).min_max == (27, 127)
    assert (x + 28).min_max == (-128, 127)
    u = var(0, 3, "u", dtypes.uint8)
    assert (u - 1).min_max == (0, 255)  # u + 255 wraps


@pytest.mark.parametrize(
    "a, b, lt",
    [
        ((0, 3), (4, 9), (True, True)),  # always less
        ((4, 9), (0, 4), (False, False)),  # never less
        ((0, 5), (3, 9), (False, True)),
        ((2, 2), (2, 2), (False, False)),
    ],
)
def test_min_max_cmplt(a, b, lt):
    x, y = var(*a, "x"), var(*b, "y")
    assert (x < y).min_max == lt
    assert (x < y).dtype is dtypes.bool


@pytest.mark.parametrize(
    "a, b, ne",
    [((0, 3), (4, 9), (True, True)), ((2, 2), (2, 2), (False, False)), ((0, 5), (3, 9), (False, True))],
)
def test_min_max_cmpne(a, b, ne):
    assert var(*a, "x").ne(var(*b, "y")).min_max == ne


def test_min_max_where():
    x, y = var(0, 4, "x"), var(-10, 2, "y")
    cond = var(0, 9, "z") < 5
    assert cond.where(x, y).min_max == (-10, 4)
    assert UOp(Ops.WHERE, (UOp.const(dtypes.bool, True), x, y)).min_max == (0, 4)
    assert UOp(Ops.WHERE, (UOp.const(dtypes.bool, False), x, y)).min_max == (-10, 2)
    assert (var(0, 3, "z") < 5).where(x, y).min_max == (0, 4)  # the condition is decided by its range


@pytest.mark.parametrize(
    "lo, hi, dtype, out",
    [
        (0, 100, dtypes.int8, (0, 100)),
        (0, 300, dtypes.uint8, (0, 255)),  # may wrap: the whole range
        (-1, 5, dtypes.uint8, (0, 255)),
        (-7, 7, dtypes.float32, (-7.0, 7.0)),
        (0, 7, dtypes.bool, (False, True)),
        (3, 3, dtypes.bool, (True, True)),
        (0, 0, dtypes.bool, (False, False)),
    ],
)
def test_min_max_cast_clamped_to_dtype(lo, hi, dtype, out):
    assert UOp(Ops.CAST, (var(lo, hi),), dtype).min_max == out


def test_min_max_cast_float_to_int_is_dtype_range():
    assert UOp(Ops.CAST, (buf(3),), dtypes.int16).min_max == (-32768, 32767)
    assert UOp(Ops.CAST, (c(2.5, dtypes.float32),), dtypes.int8).min_max == (-128, 127)


def test_min_max_bitcast_and_reduce_are_dtype_range():
    b = buf(4, dtype=dtypes.uint8)
    assert UOp(Ops.BITCAST, (b,), dtypes.int8).min_max == (-128, 127)
    x = UOp(Ops.RESHAPE, (var(0, 3, "x"), S(1)))
    assert UOp(Ops.REDUCE, (x,), ReduceArg(Ops.MAX, (0,))).min_max == (dtypes.index.min, dtypes.index.max)
    assert UOp(Ops.REDUCE, (buf(4, dtype=dtypes.int8),), ReduceArg(Ops.ADD, (0,))).min_max == (-128, 127)


def test_min_max_movement_is_src0():
    x = var(2, 9, "x")
    r = UOp(Ops.RESHAPE, (x, S(1, 1)))
    assert r.min_max == (2, 9)
    assert UOp(Ops.EXPAND, (r, S(4, 5))).min_max == (2, 9)
    assert UOp(Ops.PERMUTE, (r,), (1, 0)).min_max == (2, 9)
    assert UOp(Ops.SHRINK, (r, S(0, 0), S(1, 1))).min_max == (2, 9)
    assert UOp(Ops.INDEX, (r, c(0))).min_max == (2, 9)
    assert UOp(Ops.PAD, (r, S(1, 0), S(2, 1))).min_max == (0, 9)  # the fill is 0
    assert UOp(Ops.STACK, (x, var(-4, 3, "y"))).min_max == (-4, 9)


def test_min_max_divmod_by_positive_const():
    x = var(-7, 20, "x")
    assert (x // 4).min_max == (-2, 5)
    assert (x % 4).min_max == (0, 3)
    assert (var(0, 2, "x") % 4).min_max == (0, 2)
    assert (var(5, 6, "x") % 4).min_max == (1, 2)
    assert (x // -4).min_max == (dtypes.index.min, dtypes.index.max)  # not tightened for negative divisors


def test_min_max_bool_logic():
    t, f = UOp.const(dtypes.bool, True), UOp.const(dtypes.bool, False)
    maybe = var(0, 9, "x") < 5
    assert (maybe & f).min_max == (False, False)
    assert (maybe | t).min_max == (True, True)
    assert (maybe & t).min_max == (False, True)


def test_min_max_is_sound_on_samples():
    x, y = var(-6, 7, "x"), var(1, 5, "y")
    exprs = [x * y + 3, (x * 3 + y) // 4, x % 5, x.maximum(y * -2), (x < y).where(x * 2, y), x.minimum(y) - x]
    for e in exprs:
        lo, hi = e.min_max
        for xv in range(-6, 8):
            for yv in range(1, 6):
                v = eval_index(e, {"x": xv, "y": yv})
                assert lo <= v <= hi, f"{e.render()} = {v} at x={xv} y={yv} outside {e.min_max}"


def eval_index(e: UOp, env: dict[str, int]):
    from unigrad.ir.alu import exec_alu

    vals: dict[UOp, object] = {}
    for u in e.toposort():
        if u.op is Ops.CONST:
            vals[u] = u.arg.value
        elif u.op is Ops.PARAM:
            vals[u] = env[u.arg.name]
        elif u.op in GroupOp.ALU:
            vals[u] = exec_alu(u.op, u.dtype, *(vals[s] for s in u.src))
    return vals[e]


# ---------------------------------------------------------------- axis (multi-device sharding)


def test_axis_buffer():
    assert buf(4, 6, device=D2).axis == 0
    assert buf(4, 6).axis is None
    assert c(1).axis is None


@pytest.mark.parametrize(
    "new, axis",
    [
        ((2, 2, 6), 0),  # the shard axis splits: its leading part still carries the boundary
        ((1, 4, 6), 1),  # a new leading 1 moves it right
        ((4, 6, 1), 0),
        ((24,), 0),  # flattening keeps contiguous shards
        ((4, 2, 3), 0),
        ((3, 8), None),  # device 0's rows 0-1 are not a block of 3 rows
    ],
)
def test_axis_reshape_remaps(new, axis):
    b = buf(4, 6, device=D2)
    assert UOp(Ops.RESHAPE, (b, S(*new))).axis == axis


def test_axis_reshape_of_inner_shard_axis():
    p = UOp(Ops.PERMUTE, (buf(4, 6, device=D2),), (1, 0))  # (6, 4), axis 1
    assert p.axis == 1
    assert UOp(Ops.RESHAPE, (p, S(6, 2, 2))).axis == 1
    assert UOp(Ops.RESHAPE, (p, S(3, 2, 4))).axis == 2
    assert UOp(Ops.RESHAPE, (p, S(24))).axis is None  # the shard boundary cannot be kept


@pytest.mark.parametrize("perm, axis", [((1, 0, 2), 1), ((0, 1, 2), 0), ((2, 0, 1), 1), ((1, 2, 0), 2)])
def test_axis_permute_follows(perm, axis):
    b = buf(4, 6, 2, device=D2)
    assert UOp(Ops.PERMUTE, (b,), perm).axis == axis


def test_axis_reduce():
    b = buf(4, 6, device=D2)
    assert UOp(Ops.REDUCE, (b,), ReduceArg(Ops.ADD, (0,))).axis is None  # reduced over the shard axis
    assert UOp(Ops.REDUCE, (b,), ReduceArg(Ops.ADD, (0, 1))).axis is None
    assert UOp(Ops.REDUCE, (b,), ReduceArg(Ops.MAX, (1,))).axis == 0
    p = UOp(Ops.PERMUTE, (b,), (1, 0))
    assert UOp(Ops.REDUCE, (p,), ReduceArg(Ops.ADD, (1,))).axis is None
    assert UOp(Ops.REDUCE, (p,), ReduceArg(Ops.ADD, (0,))).axis == 1


def test_axis_load():
    b = buf(4, 6, device=D2)
    assert UOp(Ops.LOAD, (b,), LoadArg("CPU")).axis is None  # COPY to one device gathers
    assert UOp(Ops.LOAD, (buf(4, 6),), LoadArg(D2)).axis == 0  # COPY to a tuple device shards on axis 0
    assert UOp(Ops.LOAD, (UOp(Ops.PERMUTE, (b,), (1, 0)),), LoadArg()).axis == 1  # contiguous keeps it


def test_axis_replicated():
    b = buf(4, 6, device=D2)
    assert UOp(Ops.REPLICATED, (b,), (0,)).axis is None
    assert UOp(Ops.REPLICATED, (b,), (1,)).axis == 0


def test_axis_alu_inherits():
    s, r = buf(4, 6, device=D2), buf(4, 6)
    assert UOp(Ops.ADD, (s, r)).axis == 0
    assert UOp(Ops.ADD, (r, s)).axis == 0
    p = UOp(Ops.PERMUTE, (buf(6, 4, device=D2),), (1, 0))
    assert UOp(Ops.MUL, (r, p)).axis == 1
    assert UOp(Ops.CAST, (s,), dtypes.int32).axis == 0
    assert UOp(Ops.WHERE, (UOp(Ops.CMPLT, (r, r)), s, r)).axis == 0
    assert UOp(Ops.ADD, (r, r)).axis is None


def test_axis_movement_and_markers_keep_it():
    s = buf(4, 6, device=D2)
    assert UOp(Ops.FLIP, (s,), (False, True)).axis == 0
    assert UOp(Ops.FLIP, (s,), (True, False)).axis is None  # device i would hold block n-1-i
    assert UOp(Ops.SHRINK, (s, S(0, 1), S(4, 2))).axis == 0
    assert UOp(Ops.SHRINK, (s, S(1, 0), S(2, 6))).axis is None  # the shard boundary moves
    assert UOp(Ops.PAD, (s, S(0, 1), S(4, 8))).axis == 0
    assert UOp(Ops.PAD, (s, S(1, 0), S(5, 6))).axis is None
    assert UOp(Ops.EXPAND, (UOp(Ops.RESHAPE, (s, S(4, 1, 6))), S(4, 3, 6))).axis == 0
    assert UOp(Ops.CONTIGUOUS, (s,)).axis == 0
    assert UOp(Ops.DETACH, (s,)).axis == 0
    assert UOp(Ops.AFTER, (s, UOp(Ops.STORE, (s, s)))).axis == 0


# ---------------------------------------------------------------- every op has a rule


def _instances() -> dict[Ops, UOp]:
    """A minimal well-formed instance of every op (codegen ops included: they are cheap to build)."""
    f = buf(2, 3)
    i = buf(2, 3, dtype=dtypes.int32)
    u = buf(2, dtype=dtypes.uint64)
    b = UOp(Ops.CMPLT, (f, f))
    st = UOp(Ops.STORE, (f, f))
    r = UOp.range(4, 0)
    tup = UOp(Ops.TUPLE, (f,))
    lin = UOp(Ops.LINEAR, (r,))
    ifu = UOp(Ops.IF, (c(True, dtypes.bool),))
    binary = UOp(Ops.BINARY, (), b"\x00\x01")
    unary = {Ops.RECIP, Ops.TRUNC, Ops.NEG, Ops.EXP2, Ops.LOG2, Ops.SIN, Ops.SQRT}
    binary_f = {Ops.ADD, Ops.MUL, Ops.MAX, Ops.SUB, Ops.DIV, Ops.POW} | GroupOp.Comparison
    binary_i = {Ops.MOD, Ops.IDIV, Ops.XOR, Ops.OR, Ops.AND, Ops.SHR, Ops.SHL}
    out: dict[Ops, UOp] = {
        Ops.PARAM: UOp(Ops.PARAM, (S(2, 3),), ParamArg(0, dtypes.float32)),
        Ops.BUFFER: f,
        Ops.BUFFER_VIEW: UOp(Ops.BUFFER_VIEW, (f,), BufferViewArg(2, dtypes.float32, 1)),
        Ops.CONST: c(1),
        Ops.BINARY: binary,
        Ops.PERMUTE: UOp(Ops.PERMUTE, (f,), (1, 0)),
        Ops.FLIP: UOp(Ops.FLIP, (f,), (True, False)),
        Ops.RESHAPE: UOp(Ops.RESHAPE, (f, S(6))),
        Ops.EXPAND: UOp(Ops.EXPAND, (buf(1, 3), S(2, 3))),
        Ops.PAD: UOp(Ops.PAD, (f, S(1, 1), S(4, 5))),
        Ops.SHRINK: UOp(Ops.SHRINK, (f, S(0, 1), S(2, 2))),
        Ops.INDEX: UOp(Ops.INDEX, (f, c(1))),
        Ops.STACK: UOp(Ops.STACK, (f, f)),
        Ops.BITCAST: UOp(Ops.BITCAST, (f,), dtypes.int32),
        Ops.REPLICATED: UOp(Ops.REPLICATED, (buf(2, 3, device=D2),), (0,)),
        Ops.REDUCE: UOp(Ops.REDUCE, (f,), ReduceArg(Ops.ADD, (1,))),
        Ops.FUNCTION: UOp(Ops.FUNCTION, (tup, f)),
        Ops.CALL: UOp(Ops.CALL, (tup, f)),
        Ops.TUPLE: tup,
        Ops.GETTUPLE: UOp(Ops.GETTUPLE, (tup,), 0),
        Ops.LOAD: UOp(Ops.LOAD, (f,), LoadArg()),
        Ops.STORE: st,
        Ops.RANGE: r,
        Ops.END: UOp(Ops.END, (st, r)),
        Ops.AFTER: UOp(Ops.AFTER, (f, st)),
        Ops.GROUP: UOp(Ops.GROUP, (st, UOp(Ops.STORE, (i, i)))),
        Ops.SINK: UOp(Ops.SINK, (st,)),
        Ops.LINEAR: lin,
        Ops.CAST: UOp(Ops.CAST, (f,), dtypes.int8),
        Ops.WHERE: UOp(Ops.WHERE, (b, f, f)),
        Ops.NOT: UOp(Ops.NOT, (b,)),
        Ops.MULACC: UOp(Ops.MULACC, (f, f, f)),
        Ops.THREEFRY: UOp(Ops.THREEFRY, (u, u)),
        Ops.BARRIER: UOp(Ops.BARRIER, (st,)),
        Ops.INS: UOp(Ops.INS, (), "nop"),
        Ops.GETADDR: UOp(Ops.GETADDR, (f,), "CPU"),
        Ops.SPECIAL: UOp(Ops.SPECIAL, (c(16),), "gidx0"),
        Ops.IF: ifu,
        Ops.ENDIF: UOp(Ops.ENDIF, (ifu,)),
        Ops.WMMA: UOp(Ops.WMMA, (f, f, f), "wmma_cfg"),
        Ops.CUSTOM: UOp(Ops.CUSTOM, (f,), "custom({0})"),
        Ops.ATOMICADD: UOp(Ops.ATOMICADD, (UOp(Ops.INDEX, (f, c(0), c(0))), c(1.0, dtypes.float32))),
        Ops.CUSTOMFUNCTION: UOp(Ops.CUSTOMFUNCTION, (), "decode"),
        Ops.PROGRAM: UOp(Ops.PROGRAM, (lin, UOp(Ops.SOURCE, (), "void k(){}"), binary)),
        Ops.SOURCE: UOp(Ops.SOURCE, (), "void k(){}"),
        Ops.CONTIGUOUS: UOp(Ops.CONTIGUOUS, (f,)),
        Ops.CONTIGUOUSBACKWARD: UOp(Ops.CONTIGUOUSBACKWARD, (f,)),
        Ops.DETACH: UOp(Ops.DETACH, (f,)),
    }
    out.update({op: UOp(op, (f,)) for op in unary})
    out.update({op: UOp(op, (f, f)) for op in binary_f})
    out.update({op: UOp(op, (i, i)) for op in binary_i})
    return out


INSTANCES = _instances()


def test_every_op_has_an_instance():
    assert set(INSTANCES) == set(Ops), f"add an instance for {set(Ops) - set(INSTANCES)}"


@pytest.mark.parametrize("op", list(Ops), ids=lambda o: o.name)
def test_every_op_has_derived_properties(op):
    u = INSTANCES[op]
    assert u.op is op
    assert isinstance(props.dtype_of(u), DType)
    shape = props.shape_of(u)
    assert isinstance(shape, tuple) and all(isinstance(d, int | UOp) for d in shape)
    props.device_of(u)
    props.addrspace_of(u)
    props.axis_of(u)
    lo, hi = props.min_max_of(u)
    assert not lo > hi


@pytest.mark.parametrize(
    "op, dtype, shape",
    [
        (Ops.RANGE, dtypes.index, ()),
        (Ops.SPECIAL, dtypes.index, ()),
        (Ops.STORE, dtypes.void, ()),
        (Ops.SINK, dtypes.void, ()),
        (Ops.END, dtypes.void, ()),
        (Ops.GROUP, dtypes.void, ()),
        (Ops.TUPLE, dtypes.void, ()),
        (Ops.BINARY, dtypes.uint8, (2,)),
        (Ops.CAST, dtypes.int8, (2, 3)),
        (Ops.WHERE, dtypes.float32, (2, 3)),
        (Ops.NOT, dtypes.bool, (2, 3)),
        (Ops.THREEFRY, dtypes.uint64, (2,)),
        (Ops.CMPEQ, dtypes.bool, (2, 3)),
        (Ops.IDIV, dtypes.int32, (2, 3)),
        (Ops.GETTUPLE, dtypes.float32, (2, 3)),
        (Ops.PAD, dtypes.float32, (4, 5)),
        (Ops.CONTIGUOUSBACKWARD, dtypes.float32, (2, 3)),
    ],
)
def test_instance_table_values(op, dtype, shape):
    u = INSTANCES[op]
    assert u.dtype is dtype and u.shape == shape


def test_properties_are_cached_on_the_node():
    u = UOp(Ops.RESHAPE, (buf(2, 3), S(3, 2)))
    assert u.shape is u.shape and u.min_max is u.min_max
    assert u.shape == (3, 2)


# ---------------------------------------------------------------- deep graphs

DEEP = 5000


def _deep_chain(name: str) -> UOp:
    u = var(0, 10, name)
    for _ in range(DEEP):
        u = UOp(Ops.ADD, (u, c(1)))
    return u


def test_properties_of_deep_chain_built_incrementally():
    u = var(0, 10, "inc")
    for _ in range(DEEP):
        u = UOp(Ops.ADD, (u, c(1)))
        assert u.dtype is dtypes.index and u.shape == ()  # as the Tensor API does: each node as it is built
        _ = u.min_max
    assert u.min_max == (DEEP, 10 + DEEP)


@pytest.mark.parametrize("prop", ["dtype", "shape", "min_max"])
def test_properties_of_deep_chain_cold(prop):
    u = _deep_chain(f"cold_{prop}")
    try:
        getattr(u, prop)
        recursed = False
    except RecursionError:
        recursed = True
    if recursed:  # fail without a 1000-frame traceback: pytest takes ~30 s to format one
        pytest.fail(f"RecursionError computing .{prop} of a {DEEP}-deep chain", pytrace=False)
