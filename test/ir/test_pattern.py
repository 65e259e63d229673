"""UPat, PatternMatcher and graph_rewrite: matching, dispatch by op, bottom-up/top-down rewriting to a fixed point,
memoization, loop detection and deep graphs."""

from collections import Counter

import pytest

from unigrad.dtype import dtypes
from unigrad.ir.ops import GroupOp, Ops
from unigrad.ir.pattern import MAX_REWRITES_PER_NODE, PatternMatcher, RewriteLoopError, UPat, graph_rewrite
from unigrad.ir.uop import UOp

DEEP = 5000


def v(name: str, hi: int = 10) -> UOp:
    return UOp.variable(name, 0, hi)


def c(x) -> UOp:
    return UOp.index_const(x)


def m(p: UPat, u: UOp) -> dict | None:
    return p.match(u, {})


# ---------------------------------------------------------------- UPat matching


def test_match_any_and_capture():
    x = v("x")
    assert m(UPat(), x) == {}
    assert m(UPat.var("a"), x) == {"a": x}


def test_match_op_and_op_sets():
    x, y = v("x"), v("y")
    assert m(UPat(Ops.ADD), x + y) is not None
    assert m(UPat(Ops.MUL), x + y) is None
    assert m(UPat({Ops.ADD, Ops.MUL}), x * y) is not None
    assert m(UPat((Ops.IDIV, Ops.MOD)), x % 3) is not None
    assert m(UPat(GroupOp.Comparison), x < y) is not None
    assert m(UPat(GroupOp.Comparison), x + y) is None


def test_match_src_tuple_is_ordered():
    x, y = v("x"), v("y")
    p = UPat(Ops.ADD, src=(UPat.var("a"), UPat.cvar("k")))
    assert m(p, x + 3) == {"a": x, "k": c(3)}
    assert m(p, 3 + x) is None  # a tuple does not try the other order
    assert m(p, x + y) is None


def test_match_src_list_is_any_permutation():
    x = v("x")
    p = UPat(Ops.ADD, src=[UPat.var("a"), UPat.cvar("k")])
    assert m(p, x + 3) == {"a": x, "k": c(3)}
    assert m(p, 3 + x) == {"a": x, "k": c(3)}
    p3 = UPat(Ops.MULACC, src=[UPat.cvar("k"), UPat(Ops.ADD, name="s"), UPat.var("r")])
    s = x + 1
    for order in [(c(2), s, x), (s, x, c(2)), (x, c(2), s)]:
        assert m(p3, UOp(Ops.MULACC, order)) == {"k": c(2), "s": s, "r": x}


def test_match_src_list_backtracks_captures():
    """A permutation that fails halfway must not leave its captures behind."""
    x, y = v("x"), v("y")
    p = UPat(Ops.ADD, src=[UPat.var("a"), UPat(Ops.MUL, src=(UPat.var("a"), UPat.cvar()))])
    assert m(p, (y * 2) + x) is None
    assert m(p, x + (x * 2)) == {"a": x}
    assert m(p, (x * 2) + x) == {"a": x}


def test_operator_shorthands():
    x = v("x")
    assert m(UPat.var("a") + 0, 0 + x) == {"a": x}  # + is commutative: either order
    assert m(UPat.var("a") * UPat.cvar("k"), 5 * x) == {"a": x, "k": c(5)}
    assert m(UPat.var("a") // 2, x // 2) == {"a": x}
    assert m(UPat.var("a") // 2, UOp(Ops.IDIV, (c(2), x))) is None  # // is not
    assert m(UPat.var("a") % 2, x % 2) == {"a": x}
    assert m(UPat.var("a").lt(3), x < 3) == {"a": x}
    assert m(UPat.var("a").ne(3), UOp(Ops.CMPNE, (c(3), x))) == {"a": x}


def test_match_same_name_twice_must_be_same_node():
    x, y = v("x"), v("y")
    p = UPat(Ops.ADD, src=(UPat.var("a"), UPat.var("a")))
    assert m(p, x + x) == {"a": x}
    assert m(p, x + y) is None
    nested = UPat(Ops.MUL, src=(UPat(Ops.ADD, src=(UPat.var("a"), UPat())), UPat.var("a")))
    assert m(nested, (x + 1) * x) == {"a": x}
    assert m(nested, (x + 1) * y) is None


def test_match_earlier_captures_from_store():
    x, y = v("x"), v("y")
    assert UPat.var("a").match(x, {"a": x}) == {"a": x}
    assert UPat.var("a").match(x, {"a": y}) is None
    store = {"b": y}
    assert UPat.var("a").match(x, store) == {"b": y, "a": x}
    assert store == {"b": y}  # the caller's dict is not changed


def test_match_dtype_filter():
    i = UOp.variable("i", 0, 10, dtypes.int32)
    x = v("x")
    f = UOp.const(dtypes.float32, 1.0)
    assert m(UPat.var("a", dtype=dtypes.int32), i) == {"a": i}
    assert m(UPat.var("a", dtype=dtypes.int32), x) is None
    assert m(UPat.var("a", dtype={dtypes.int32, dtypes.index}), x) == {"a": x}
    assert m(UPat.cvar("k", dtype=dtypes.float32), f) == {"k": f}
    assert m(UPat(GroupOp.Comparison, dtype=dtypes.bool), x < 3) is not None


def test_match_arg_and_value():
    x = v("x")
    assert m(UPat(Ops.CONST, arg=c(3).arg), c(3)) is not None
    assert m(UPat(Ops.CONST, arg=c(3).arg), c(4)) is None
    assert m(UPat.const(3), c(3)) is not None
    assert m(UPat.const(3), c(4)) is None
    assert m(UPat.const(3), x) is None  # value only matches CONSTs
    assert m(UPat.const(True), UOp.const(dtypes.bool, True)) is not None
    assert m(UPat(Ops.PERMUTE, arg=(1, 0)), UOp(Ops.PERMUTE, (x,), (1, 0))) is not None
    assert m(UPat(Ops.PERMUTE, arg=(1, 0)), UOp(Ops.PERMUTE, (x,), (0, 1))) is None
    assert m(UPat(Ops.ADD, arg=None), x + 1) is not None


def test_match_src_length_and_allow_any_len():
    x, y, z = v("x"), v("y"), v("z")
    w = UOp(Ops.WHERE, (x < 1, y, z))
    assert m(UPat(Ops.WHERE, src=(UPat(), UPat())), w) is None
    assert m(UPat(Ops.WHERE, src=(UPat.var("cond"), UPat.var("t")), allow_any_len=True), w) == {"cond": x < 1, "t": y}
    sink = UOp(Ops.SINK, (x, y, z))
    assert m(UPat(Ops.SINK, src=(UPat.var("first"),), allow_any_len=True), sink) == {"first": x}
    assert m(UPat(Ops.SINK, src=(UPat(), UPat(), UPat(), UPat()), allow_any_len=True), sink) is None


def test_match_single_upat_src_applies_to_every_source():
    x = v("x")
    all_consts = UPat(Ops.ADD, src=UPat(Ops.CONST))
    assert m(all_consts, c(1) + c(2)) is not None
    assert m(all_consts, x + 2) is None
    assert m(UPat(Ops.SINK, src=UPat.var("s")), UOp(Ops.SINK, (x, x))) == {"s": x}
    assert m(UPat(Ops.SINK, src=UPat.var("s")), UOp(Ops.SINK, (x, c(1)))) is None


def test_named_copies_pattern():
    p = UPat(Ops.ADD, src=(UPat.var("a"), UPat.cvar("k")))
    x = v("x")
    assert m(p, x + 1) is not None  # compile p before copying it
    q = p.named("root")
    assert m(q, x + 1) == {"root": x + 1, "a": x, "k": c(1)}
    assert "root" not in m(p, x + 1)


# ---------------------------------------------------------------- PatternMatcher


def test_dispatch_by_op_only_tries_rules_for_that_op():
    calls: Counter = Counter()

    def on_mul(u):
        calls["mul"] += 1

    def on_any(u):
        calls["any"] += 1

    pm = PatternMatcher([(UPat(Ops.MUL, name="u"), on_mul), (UPat(name="u"), on_any)])
    x = v("x")
    assert pm.rewrite(x + 1) is None
    assert calls == {"any": 1}
    assert pm.rewrite(x * 2) is None
    assert calls == {"any": 2, "mul": 1}
    assert set(pm.fns) == set(Ops)  # the catch-all rule is compiled into every op's function


def test_first_rule_wins_and_none_falls_through():
    x = v("x")
    pm = PatternMatcher(
        [
            (UPat(Ops.ADD, name="u"), lambda u: None),  # declines
            (UPat(Ops.ADD, name="u"), lambda u: u),  # returns the node itself: no rewrite either
            (UPat(Ops.ADD, src=(UPat.var("a"), UPat())), lambda a: a),
            (UPat(Ops.ADD, name="u"), lambda u: c(99)),  # never reached
        ]
    )
    assert pm.rewrite(x + 1) is x
    assert pm.rewrite(x * 1) is None


def test_rule_gets_ctx_when_it_asks():
    x = v("x")
    seen = []
    pm = PatternMatcher(
        [
            (UPat(Ops.ADD, name="u"), lambda u, ctx: seen.append(ctx)),
            (UPat(Ops.MUL, name="u"), lambda u: seen.append("no ctx")),
        ]
    )
    pm.rewrite(x + 1, ctx="context")
    pm.rewrite(x * 2, ctx="context")
    assert seen == ["context", "no ctx"]
    assert graph_rewrite(x + 1, pm, ctx={"k": 1}) is x + 1
    assert seen[-1] == {"k": 1}


def test_matchers_add():
    x = v("x")
    a = PatternMatcher([(UPat(Ops.ADD, src=(UPat.var("a"), UPat.const(0))), lambda a: a)], name="a")
    b = PatternMatcher([(UPat(Ops.MUL, src=(UPat.var("a"), UPat.const(1))), lambda a: a)], name="b")
    ab = a + b
    assert ab.name == "a+b"
    assert graph_rewrite((x * 1) + 0, ab) is x


# ---------------------------------------------------------------- graph_rewrite


add0 = (UPat(Ops.ADD, src=(UPat.var("a"), UPat.const(0))), lambda a: a)  # x+0 -> x
mul1 = (UPat(Ops.MUL, src=(UPat.var("a"), UPat.const(1))), lambda a: a)  # x*1 -> x


def fold(u):
    if u.dtype is dtypes.index and len(u.src) == 2 and all(s.op is Ops.CONST for s in u.src):
        a, b = (s.arg.value for s in u.src)
        return c(a + b if u.op is Ops.ADD else a * b)
    return None


fold_rule = (UPat((Ops.ADD, Ops.MUL), name="u"), fold)


def test_bottom_up_to_fixed_point():
    x = v("x")
    pm = PatternMatcher([add0, mul1, fold_rule])
    # (x * (2 + -1)) + (3*0): the sources fold first, which makes the parents match
    e = UOp(Ops.ADD, (UOp(Ops.MUL, (x, UOp(Ops.ADD, (c(2), c(-1))))), UOp(Ops.MUL, (c(3), c(0)))))
    assert graph_rewrite(e, pm) is x
    assert graph_rewrite(((x + 0) + 0) * 1, pm) is x


def test_bottom_up_rewrites_the_replacement_again():
    x = v("x")
    # a -> b -> c chain of rewrites at one node: the result of a rule is itself rewritten
    pm = PatternMatcher(
        [
            (UPat(Ops.ADD, src=(UPat.var("a"), UPat.const(1))), lambda a: a + 2),
            (UPat(Ops.ADD, src=(UPat.var("a"), UPat.const(2))), lambda a: a * 3),
            (UPat(Ops.MUL, src=(UPat.var("a"), UPat.const(3))), lambda a: a % 4),
        ]
    )
    assert graph_rewrite(x + 1, pm) is x % 4
    # and the replacement's new sources are rewritten too
    pm2 = PatternMatcher([add0, (UPat(Ops.MUL, src=(UPat.var("a"), UPat.const(5))), lambda a: (a + 0) * (a + 0))])
    assert graph_rewrite(x * 5, pm2) is x * x


def test_bottom_up_no_match_keeps_identity():
    x, y = v("x"), v("y")
    e = (x * 3 + y) // 2
    assert graph_rewrite(e, PatternMatcher([add0])) is e


def test_top_down_rewrites_parent_before_sources():
    x = v("x")
    order: list[Ops] = []

    def record(u):
        order.append(u.op)

    pm = PatternMatcher([(UPat((Ops.ADD, Ops.MUL, Ops.IDIV), name="u"), record)])
    e = ((x + 1) * 2) // 3
    graph_rewrite(e, pm, bottom_up=False)
    assert order == [Ops.IDIV, Ops.MUL, Ops.ADD]
    order.clear()
    graph_rewrite(e, pm)
    assert order == [Ops.ADD, Ops.MUL, Ops.IDIV]


def test_top_down_pushes_information_down():
    """The children of a rule's result are walked after it: a constant is pushed down to the innermost leaf."""
    x, y, z = v("x"), v("y"), v("z")
    # (a*b)*k -> (a*k)*b
    push = (
        UPat(Ops.MUL, src=(UPat(Ops.MUL, src=(UPat.var("a"), UPat.var("b"))), UPat.cvar("k"))),
        lambda a, b, k: (a * k) * b,
    )
    e = ((x * y) * z) * c(7)
    assert graph_rewrite(e, PatternMatcher([push]), bottom_up=False) is ((x * c(7)) * y) * z


def test_top_down_does_not_retry_rebuilt_node():
    x = v("x")
    # MUL(a, 1) -> a only matches once the source was rewritten (x+0 -> x is irrelevant here); top-down
    # rewrites the parent first, so a parent that only matches after its sources change stays as rebuilt
    pm = PatternMatcher([(UPat(Ops.ADD, src=(UPat.var("a"), UPat.const(0))), lambda a: a), mul1])
    e = UOp(Ops.MUL, (x, UOp(Ops.ADD, (c(1), c(0)))))
    assert graph_rewrite(e, pm, bottom_up=False) is UOp(Ops.MUL, (x, c(1)))
    assert graph_rewrite(e, pm) is x  # bottom-up does


@pytest.mark.parametrize("bottom_up", [True, False])
def test_shared_subgraph_rewritten_once(bottom_up):
    x, y = v("x"), v("y")
    calls: Counter = Counter()

    def count_mul(u):
        calls[u] += 1

    pm = PatternMatcher([(UPat(Ops.MUL, name="u"), count_mul)])
    s = x * y
    t = s * 2
    e = UOp(Ops.SINK, ((s + t) + s, t * s, s // 3, t + t))
    assert graph_rewrite(e, pm, bottom_up=bottom_up) is e
    assert calls[s] == 1 and calls[t] == 1
    assert calls[t * s] == 1


def test_shared_subgraph_replacement_is_shared():
    x = v("x")
    pm = PatternMatcher([add0])
    s = x + 0
    out = graph_rewrite(UOp(Ops.SINK, (s * 2, s * 3, s)), pm)
    assert out is UOp(Ops.SINK, (x * 2, x * 3, x))


def test_memoized_within_one_call_only():
    x = v("x")
    calls: Counter = Counter()

    def count(a):
        calls["n"] += 1
        return a

    pm = PatternMatcher([(UPat(Ops.ADD, src=(UPat.var("a"), UPat.const(0))), count)])
    graph_rewrite(x + 0, pm)
    graph_rewrite(x + 0, pm)
    assert calls["n"] == 2


@pytest.mark.parametrize("bottom_up", [True, False])
def test_ping_pong_rule_raises_loop_error(bottom_up):
    x, y = v("x"), v("y")
    swap = (UPat(Ops.ADD, src=(UPat.var("a"), UPat.var("b"))), lambda a, b: UOp(Ops.ADD, (b, a)))  # a+b -> b+a
    with pytest.raises(RewriteLoopError, match="loops"):
        graph_rewrite(x + y, PatternMatcher([swap], name="pm_swap"), bottom_up=bottom_up)


class Runaway(Exception):
    pass


def test_growing_rule_raises_loop_error():
    x = v("x")
    calls = Counter()

    def grow(a, k):  # x+k -> x+(k+1): never reaches a fixed point
        calls["n"] += 1
        if calls["n"] > 50 * MAX_REWRITES_PER_NODE:
            raise Runaway("the loop was not detected")
        return a + c(k.arg.value + 1)

    with pytest.raises(RewriteLoopError):
        graph_rewrite(x + 0, PatternMatcher([(UPat(Ops.ADD, src=(UPat.var("a"), UPat.cvar("k"))), grow)]))


def test_growing_rule_raises_loop_error_top_down():
    x = v("x")
    grow = (UPat(Ops.ADD, src=(UPat.var("a"), UPat.cvar("k"))), lambda a, k: a + c(k.arg.value + 1))
    with pytest.raises(RewriteLoopError):
        graph_rewrite(x + 0, PatternMatcher([grow]), bottom_up=False)


def test_loop_error_names_the_matcher():
    x, y = v("x"), v("y")
    swap = (UPat(Ops.MUL, src=(UPat.var("a"), UPat.var("b"))), lambda a, b: UOp(Ops.MUL, (b, a)))
    with pytest.raises(RewriteLoopError, match="pm_swap_mul"):
        graph_rewrite(x * y, PatternMatcher([swap], name="pm_swap_mul"))


# ---------------------------------------------------------------- deep graphs


def deep_chain(leaf: UOp, k: int = 0) -> UOp:
    u = leaf
    for _ in range(DEEP):
        u = UOp(Ops.ADD, (u, c(k)))
    return u


def test_bottom_up_deep_chain_to_leaf():
    x = v("deep_bu")
    assert graph_rewrite(deep_chain(x), PatternMatcher([add0])) is x


def test_bottom_up_deep_chain_no_match():
    x = v("deep_nm")
    e = deep_chain(x, 1)
    assert graph_rewrite(e, PatternMatcher([add0])) is e


def test_bottom_up_deep_chain_folding():
    x = v("deep_fold")
    e = deep_chain(x, 1)
    # (x+1)+1 -> x+2: each step merges into the node below
    merge = (
        UPat(Ops.ADD, src=(UPat(Ops.ADD, src=(UPat.var("a"), UPat.cvar("k1"))), UPat.cvar("k2"))),
        lambda a, k1, k2: a + c(k1.arg.value + k2.arg.value),
    )
    assert graph_rewrite(e, PatternMatcher([merge])) is x + DEEP


def test_top_down_deep_chain():
    x = v("deep_td")
    leaf_to = v("deep_td_new")
    pm = PatternMatcher([(UPat(Ops.PARAM, name="p"), lambda p: leaf_to if p is x else None)])
    assert graph_rewrite(deep_chain(x, 1), pm, bottom_up=False) is deep_chain(leaf_to, 1)
    bump = (UPat(Ops.ADD, src=(UPat.var("a"), UPat.const(1))), lambda a: UOp(Ops.ADD, (a, c(2))))  # once per node
    assert graph_rewrite(deep_chain(x, 1), PatternMatcher([bump]), bottom_up=False) is deep_chain(x, 2)


def test_top_down_deep_chain_collapses_at_root():
    x = v("deep_td_collapse")
    assert graph_rewrite(deep_chain(x), PatternMatcher([add0]), bottom_up=False) is x


def test_top_down_deep_chain_dtype_filter_cold():
    e = deep_chain(v("deep_td_cold"), 1)
    pm = PatternMatcher([(UPat(Ops.ADD, dtype=dtypes.int32, name="u"), lambda u: None)])
    try:
        graph_rewrite(e, pm, bottom_up=False)
        recursed = False
    except RecursionError:
        recursed = True
    if recursed:  # fail without a 1000-frame traceback: pytest takes ~30 s to format one
        pytest.fail("RecursionError", pytrace=False)


def test_deep_chain_dtype_filter_bottom_up():
    # bottom-up reaches the leaf first, so each .dtype finds its source's already cached
    e = deep_chain(v("deep_bu_dt"))
    pm = PatternMatcher([(UPat(Ops.ADD, src=(UPat.var("a"), UPat.const(0)), dtype=dtypes.index), lambda a: a)])
    assert graph_rewrite(e, pm) is v("deep_bu_dt")
