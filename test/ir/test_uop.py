"""The UOp node: hash-consing, the weak cache, replace/toposort/substitute, the printer, Variables and consts."""

import gc
import math
import pickle

import pytest

import unigrad
from unigrad.dtype import dtypes
from unigrad.ir import text
from unigrad.ir import uop as uop_module
from unigrad.ir.args import BufferArg, ConstArg, RangeArg
from unigrad.ir.ops import Ops
from unigrad.ir.symbolic import pm_symbolic
from unigrad.ir.uop import UOp, cache_size, variables_of

DEEP = 5000


def chain(n: int, leaf: UOp | None = None) -> UOp:
    """leaf+1+1+...: n ADD nodes, each the only user of the one below."""
    u = UOp.variable("deep", 0, 10) if leaf is None else leaf
    one = UOp.index_const(1)
    for _ in range(n):
        u = UOp(Ops.ADD, (u, one))
    return u


# ---------------------------------------------------------------- hash-consing


def test_structurally_equal_is_identical():
    x = UOp.variable("x", 0, 10)
    a = UOp(Ops.ADD, (x, UOp.index_const(3)))
    b = UOp(Ops.ADD, (UOp.variable("x", 0, 10), UOp.index_const(3)))
    assert a is b
    assert x * 3 + 1 is x * 3 + 1
    assert UOp.const(dtypes.float32, 1.5) is UOp.const(dtypes.float32, 1.5)


@pytest.mark.parametrize(
    "other",
    [
        lambda x: UOp(Ops.MUL, (x, UOp.index_const(3))),  # op differs
        lambda x: UOp(Ops.ADD, (UOp.index_const(3), x)),  # source order differs
        lambda x: UOp(Ops.ADD, (x, UOp.index_const(4))),  # a source differs
        lambda x: UOp(Ops.ADD, (x, UOp.index_const(3)), tag="t"),  # tag differs
        lambda x: UOp(Ops.ADD, (x, UOp.index_const(3)), arg=1),  # arg differs
        lambda x: UOp(Ops.ADD, (UOp.variable("x", 0, 11), UOp.index_const(3))),  # a Variable's bound differs
    ],
)
def test_structurally_different_is_distinct(other):
    x = UOp.variable("x", 0, 10)
    assert other(x) is not UOp(Ops.ADD, (x, UOp.index_const(3)))


def test_const_dtype_is_part_of_identity():
    assert UOp.const(dtypes.int32, 1) is not UOp.const(dtypes.int64, 1)
    assert UOp.const(dtypes.int32, 1) is not UOp.index_const(1)
    assert UOp.const(dtypes.bool, True) is not UOp.const(dtypes.int32, 1)


def test_const_negative_zero_is_not_zero():
    pz, nz = UOp.const(dtypes.float32, 0.0), UOp.const(dtypes.float32, -0.0)
    assert pz is not nz
    assert math.copysign(1.0, nz.arg.value) == -1.0 and math.copysign(1.0, pz.arg.value) == 1.0
    assert UOp.const(dtypes.float32, -0.0) is nz


def test_const_nan_dedupes():
    a, b = UOp.const(dtypes.float32, math.nan), UOp.const(dtypes.float32, float("nan"))
    assert a is b and math.isnan(a.arg.value)
    assert UOp.const(dtypes.float64, math.nan) is not a  # still keyed by dtype
    assert ConstArg(math.nan, dtypes.float32) == ConstArg(math.nan, dtypes.float32)


def test_const_value_is_cast_to_dtype():
    assert UOp.const(dtypes.float32, 2).arg.value == 2.0 and isinstance(UOp.const(dtypes.float32, 2).arg.value, float)
    assert UOp.const(dtypes.float32, 2) is UOp.const(dtypes.float32, 2.0)
    assert UOp.const(dtypes.int8, 200).arg.value == -56  # wraps like C
    assert UOp.const(dtypes.bool, 1) is UOp.const(dtypes.bool, True)


def test_pickle_round_trip_is_the_same_node():
    x = UOp.variable("x", 0, 10)
    e = (x * 3 + 1) // 2
    assert pickle.loads(pickle.dumps(e)) is e


def test_uop_is_not_iterable():
    with pytest.raises(TypeError, match="src"):
        list(UOp.variable("x", 0, 10))


# ---------------------------------------------------------------- the weak cache


def test_weak_cache_frees_unused_nodes():
    UOp.shape_src(())  # the shape of a Variable: kept alive by a small constructor cache, so warm it first
    pm_symbolic.cache.clear()  # the simplifier's bounded memo holds nodes strongly; empty it for this count
    uop_module._int_consts.clear()
    gc.collect()
    before = cache_size()
    nodes = [UOp(Ops.ADD, (UOp.variable(f"weak{i}", 0, i + 1), UOp.index_const(7_000_000 + i))) for i in range(200)]
    assert cache_size() >= before + 200 * 3  # the ADD, the Variable, the bound consts at least
    del nodes
    uop_module._int_consts.clear()  # UOp.const's memo of int constants holds them strongly: empty it as well
    gc.collect()
    assert cache_size() <= before


def test_weak_cache_frees_deep_chain():
    gc.collect()
    before = cache_size()
    u = chain(DEEP, UOp.variable("weak_chain", 0, 10))
    assert cache_size() >= before + DEEP
    del u
    gc.collect()
    assert cache_size() <= before


def test_live_node_survives_gc_and_is_reused():
    x = UOp.variable("kept", 0, 10)
    e = x + 12345
    ident = id(e)
    gc.collect()
    assert id(x + 12345) == ident
    assert x + 12345 is e


# ---------------------------------------------------------------- replace


def test_replace_nothing_changed_is_same_object():
    x = UOp.variable("x", 0, 10)
    e = x * 3 + 1
    assert e.replace() is e
    assert e.replace(src=e.src, arg=e.arg, tag=e.tag, op=e.op) is e
    assert e.replace(src=tuple(e.src)) is e


def test_replace_changes_one_field():
    x = UOp.variable("x", 0, 10)
    e = x * 3
    m = e.replace(op=Ops.ADD)
    assert m is x + 3
    assert e.replace(tag="t") is not e and e.replace(tag="t").replace(tag=None) is e
    assert e.replace(src=(x, UOp.index_const(4))) is x * 4


# ---------------------------------------------------------------- toposort


def test_toposort_sources_first_each_once():
    x, y = UOp.variable("x", 0, 10), UOp.variable("y", 0, 10)
    a = x + y
    b = a * a  # a shared subgraph
    root = b + a
    order = root.toposort()
    assert order[-1] is root
    assert len(order) == len(set(order))
    pos = {u: i for i, u in enumerate(order)}
    for u in order:
        for s in u.src:
            assert pos[s] < pos[u], f"{s.op} must come before its user {u.op}"
    assert set(order) >= {x, y, a, b, root}


def test_toposort_is_deterministic_and_left_first():
    x, y = UOp.variable("x", 0, 10), UOp.variable("y", 0, 10)
    order = (x + y).toposort()
    assert order.index(x) < order.index(y)
    assert (x + y).toposort() == order


def test_toposort_gate_lists_but_does_not_enter():
    x = UOp.variable("x", 0, 10)
    inner = x * 3
    root = inner + 1
    order = root.toposort(gate=lambda u: u is not inner)
    assert inner in order and x not in order
    assert order[-1] is root


def test_toposort_deep_chain():
    u = chain(DEEP)
    order = u.toposort()
    assert len(order) == DEEP + 5  # ADDs, the const 1, the Variable and its shape/min/max
    assert order[-1] is u
    adds = [n for n in order if n.op is Ops.ADD]
    assert all(adds[i] is adds[i + 1].src[0] for i in range(len(adds) - 1))


# ---------------------------------------------------------------- substitute


def test_substitute_rebuilds_users():
    x, y = UOp.variable("x", 0, 10), UOp.variable("y", 0, 10)
    e = (x * 3 + y) // 2
    assert e.substitute({x: UOp.index_const(5)}) is (UOp.index_const(5) * 3 + y) // 2
    assert e.substitute({x: y, y: x}) is (y * 3 + x) // 2  # simultaneous, not into replacements


def test_substitute_nothing_matching_is_same_object():
    x, y = UOp.variable("x", 0, 10), UOp.variable("y", 0, 10)
    e = x * 3 + 1
    assert e.substitute({y: x}) is e
    assert e.substitute({}) is e


def test_substitute_inner_node_and_root():
    x = UOp.variable("x", 0, 10)
    inner = x * 3
    e = inner + inner
    z = UOp.variable("z", 0, 1)
    assert e.substitute({inner: z}) is z + z
    assert e.substitute({e: z}) is z


def test_substitute_walk_keeps_subgraphs():
    x = UOp.variable("x", 0, 10)
    kept = x * 3
    e = kept + x
    z = UOp.variable("z", 0, 1)
    assert e.substitute({x: z}, walk=lambda u: u is not kept) is kept + z


def test_substitute_deep_chain():
    leaf = UOp.variable("sub_leaf", 0, 10)
    new_leaf = UOp.variable("sub_new", 0, 10)
    assert chain(DEEP, leaf).substitute({leaf: new_leaf}) is chain(DEEP, new_leaf)


# ---------------------------------------------------------------- printer


def test_repr_is_a_numbered_listing():
    x = UOp.variable("x", 0, 100)
    r = repr(UOp.range(x, 0) * 3 + 1)
    lines = r.splitlines()
    assert lines[-1].startswith("%") and "ADD(" in lines[-1] and ": index ()" in lines[-1]
    assert any("PARAM(" in ln and ln.rstrip().endswith("x : index ()") for ln in lines)
    assert any("MUL(" in ln for ln in lines)
    assert any("CONST" in ln and ln.endswith(" 3 : index ()") for ln in lines)


def test_repr_of_a_symbolic_size_is_infix():
    """An index expression over Variables (a symbolic shape entry) prints as a person writes it."""
    x = UOp.variable("x", 0, 100)
    assert repr(x * 3 + 1) == "((x*3)+1)"
    assert repr((x.bind(4) * 2,)) == "((x*2),)"


def test_repr_single_node():
    r = repr(UOp.const(dtypes.float32, 1.5))
    assert r.startswith("UOp(%0 = CONST") and r.endswith(" 1.5 : float32 ())") and "\n" not in r


def test_repr_bounded_on_deep_graphs():
    r = repr(chain(DEEP))
    lines = r.splitlines()
    assert len(lines) <= text.MAX_LINES + 1
    assert lines[0].startswith("...") and "earlier nodes" in lines[0]
    assert len(r) < 100 * (text.MAX_LINES + 1)


def test_repr_survives_malformed_node():
    bad = UOp(Ops.RESHAPE, (UOp.index_const(1),))  # no shape source: shape_of raises
    assert "RESHAPE" in repr(bad)


def test_render_infix():
    x, y = UOp.variable("x", 0, 100), UOp.variable("y", 0, 2)
    assert (x * 3 + y).render() == "((x*3)+y)"
    assert ((x < 2) & (y < 2)).render() == "((x<2) and (y<2))"
    assert (x >= 1).render() == "(x>=1)"
    assert (x // 4 % 3).render() == "((x//4)%3)"
    assert (x < 2).where(x, y).render() == "((x<2) ? x : y)"
    assert x.maximum(y).render() == "max(x, y)"
    assert UOp.range(16, 2).render() == "ridx2"


# ---------------------------------------------------------------- Variables


def test_variable_is_a_named_param():
    x = unigrad.Variable("x", 1, 10)
    assert x is UOp.variable("x", 1, 10)
    assert x.op is Ops.PARAM and x.expr == "x"
    assert x.min_max == (1, 10) and x.dtype is dtypes.index and x.shape == ()


@pytest.mark.parametrize("lo, hi", [(5, 4), (0.0, 3), (0, 3.5), (None, 3)])
def test_variable_bad_bounds(lo, hi):
    with pytest.raises(ValueError, match="Variable"):
        UOp.variable("v", lo, hi)


def test_bind_and_unbind():
    x = UOp.variable("x", 1, 10)
    b = x.bind(4)
    assert b is not x and b is x.bind(4) and b is not x.bind(5)
    assert b.unbind() == (x, 4)
    assert b.unbind()[0] is x
    assert b.min_max == (1, 10)  # the bound value does not narrow the range kernels see
    assert variables_of(b * 2 + x) == [x]


@pytest.mark.parametrize("v", [1, 10])
def test_bind_at_the_bounds(v):
    assert UOp.variable("x", 1, 10).bind(v).unbind()[1] == v


@pytest.mark.parametrize("v", [0, 11, -5, 2.0, "3"])
def test_bind_outside_or_not_int(v):
    with pytest.raises(ValueError, match=r"\[1, 10\]"):
        UOp.variable("x", 1, 10).bind(v)


def test_bind_twice_raises():
    b = UOp.variable("x", 1, 10).bind(3)
    with pytest.raises(ValueError, match="already bound"):
        b.bind(4)


def test_bind_non_variable_raises():
    with pytest.raises(TypeError, match="Variable"):
        UOp.index_const(3).bind(3)
    buf = UOp(Ops.BUFFER, (UOp.shape_src((4,)),), BufferArg(0, dtypes.float32, "CPU"))
    with pytest.raises(TypeError):
        buf.bind(1)


def test_unbind_unbound_raises():
    with pytest.raises(TypeError, match="bound Variable"):
        UOp.variable("x", 1, 10).unbind()
    with pytest.raises(TypeError):
        UOp.index_const(1).unbind()


# ---------------------------------------------------------------- constructors


def test_range_constructor():
    r = UOp.range(8, 0)
    assert r.op is Ops.RANGE and r.arg == RangeArg(0) and r.src == (UOp.index_const(8),)
    assert r is not UOp.range(8, 1)  # the id keeps equal loops apart
    n = UOp.variable("n", 1, 32)
    assert UOp.range(n, 3).src == (n,)


def test_operators_build_alu_nodes_without_simplifying():
    x = UOp.variable("x", 0, 10)
    assert (x + 0).op is Ops.ADD and (x * 1).op is Ops.MUL
    assert (x - 2).src[1].op is Ops.MUL  # x + (2*-1): SUB is decomposed
    assert (3 - x).op is Ops.ADD and (3 + x).src[0] is UOp.index_const(3)
    assert (x > 2).src == (UOp.index_const(2), x)  # CMPGT(a, b) = CMPLT(b, a)
    assert (x >= 2).op is Ops.CMPNE and (x >= 2).src[0] is (x < 2)
    assert x.eq(2).src[0] is x.ne(2)
    assert (x // 2).op is Ops.IDIV and (x % 2).op is Ops.MOD
    assert x.minimum(3).op is Ops.MUL  # -max(-x, -3)
    assert (x < 1).where(x, 2).src[2] is UOp.index_const(2)


@pytest.mark.parametrize("op", [Ops.ADD, Ops.MUL, Ops.CMPLT, Ops.MAX])
def test_elementwise_shape_is_the_derived_shape(op):
    """UOp.elementwise sets the node's shape from its sources (the Tensor binop hot path): the same value the
    shape rule derives, and the same node (hash-consing) as UOp(op, src)."""
    from unigrad.ir import props

    a = unigrad.Tensor.empty(3, 1, 5).expand(3, 4, 5).uop
    b = unigrad.Tensor.empty(3, 4, 5).uop
    u = UOp.elementwise(op, (a, b))
    assert u is UOp(op, (a, b))
    assert u.shape == props.shape_of(u) == (3, 4, 5)


def test_rebuilt_takes_the_derived_shape_and_dtype():
    """rebuilt(src): the same node when nothing changed; a node over other sources of the same shapes (an inlined
    call's arguments for its PARAMs) takes the shape and dtype derived so far, and they equal what deriving gives;
    an inlined @function's nodes agree with their derivation too."""
    from unigrad import Tensor
    from unigrad.ir.args import ParamArg
    from unigrad.pipeline.callify import inline_functions

    p = UOp(Ops.PARAM, (UOp.shape_src((3, 5)),), ParamArg(0, dtypes.float32, "CPU"))
    body = UOp(Ops.MUL, (UOp(Ops.ADD, (p, p)), p))
    assert body.shape == (3, 5) and body.dtype is dtypes.float32
    assert body.rebuilt(body.src) is body
    q = UOp(Ops.PARAM, (UOp.shape_src((3, 5)),), ParamArg(1, dtypes.float32, "CPU"))
    add = body.src[0].rebuilt((q, q))
    new = body.rebuilt((add, q))
    assert new is not body and new._shape == (3, 5) and new._dtype is dtypes.float32
    assert uop_module._shape_of(new) == new.shape and uop_module._dtype_of(new) is new.dtype
    x = Tensor.rand(4, 7).realize()
    y = ((x * 2).sigmoid() + (x - 1).tanh()).uop
    for u in inline_functions(y).toposort():
        assert uop_module._shape_of(u) == u.shape and uop_module._dtype_of(u) is u.dtype, u.op
