"""Expand: UPCAST/UNROLL ranges become copies of the kernel body; REDUCEs become register accumulators.

In: a kernel SINK after optimize (scalar math on RANGEs, REDUCE(value, ranges...) nodes).
Out: the same kernel with no UPCAST/UNROLL ranges and no REDUCE:
  - an UPCAST range r of size k (an output axis) is moved innermost in its END chains and expanded: the body
    it closes becomes GROUP(body[r:=0], ..., body[r:=k-1]); REDUCEs inside are copied with it. These lane copies
    are the unrolled form of a (k,) shape: every target can run them as they are (the PYTHON device does), and
    isel's vector selection (isel.vectorize) folds them back into (k,)-shaped ops for targets with vector types.
  - an UNROLL range of size k in a REDUCE (a reduce axis) splits it into k partial REDUCEs over the other
    ranges, combined after the loops: k independent accumulators (the split accumulators of a sum).
  - REDUCEs over the same ranges (and the same enclosing loops) share one loop and one register array:
        acc = PARAM(REG, shape (n,))
        STORE(INDEX(AFTER(acc, outer ranges), j), identity)                    for each member j, before the loop
        END(GROUP(STORE(INDEX(AFTER(acc, inits, r...), j), op(LOAD(acc[j]), value_j))...), r...)
        LOAD(INDEX(AFTER(acc, END), j))                                        member j's result, after the loop
  - a WMMA of the TC opt (its arg names the ranges of each operand's fragment elements) is contracted first, before
    any copies are made: its A, B and C sources become STACKs of one copy per fragment element (the ranges set to
    the element's values, in the fragment's element order), and the WMMA, a (c,)-shaped D fragment now, is read as
    LOAD(INDEX(WMMA, i)) with i the D element its remaining (C's UPCAST) ranges pick. The sums of a WMMA's D
    elements then share one accumulator group, and their updates acc[j] + D[i] (C = 0) become one WMMA with the
    accumulators as C: STORE(acc[j], LOAD(INDEX(WMMA(A, B, acc...), i))) (exact: the WMMA adds C to its sum last).
"""

from __future__ import annotations

import itertools
from collections import defaultdict

from unigrad.dtype import DType
from unigrad.helpers import record
from unigrad.ir.args import AddrSpace, AxisType, LoadArg, ParamArg, WMMAArg
from unigrad.ir.ops import Ops
from unigrad.ir.symbolic import simplify
from unigrad.ir.uop import UOp

REG = LoadArg(None, AddrSpace.REG)
EXPANDED = (AxisType.UPCAST, AxisType.UNROLL)


def identity_element(op: Ops, dtype: DType) -> object:
    if op is Ops.ADD:
        return 0
    if op is Ops.MUL:
        return 1
    return dtype.min  # MAX: -inf for floats, the smallest int, False


def open_ranges(u: UOp) -> dict[UOp, frozenset[UOp]]:
    """For `u` and every node below it: the RANGEs it depends on that are not closed (by an END) below it."""
    memo: dict[UOp, frozenset[UOp]] = {}
    none: frozenset[UOp] = frozenset()
    for x in u.toposort():
        if x.op is Ops.RANGE:
            memo[x] = frozenset((x,))
        elif x.op is Ops.END:
            memo[x] = memo[x.src[0]] - {x.src[1]}
        elif len(x.src) == 1:
            memo[x] = memo[x.src[0]]
        else:
            acc = none
            for s in x.src:
                if (m := memo[s]) and m is not acc:
                    acc = acc | m
            memo[x] = acc
    return memo


def _bound(r: UOp) -> int:
    if r.src[0].op is not Ops.CONST:
        raise ValueError(f"expand: {r.arg.axis_type.name} range r{r.arg.id} needs a constant size")
    return r.src[0].arg.value


def _combos(rs: list[UOp]) -> list[dict[UOp, UOp]]:
    """Every assignment of constants to the ranges rs."""
    return [
        {r: UOp.index_const(i) for r, i in zip(rs, vals)} for vals in itertools.product(*(range(_bound(r)) for r in rs))
    ]


def _copies(x: UOp, rs: list[UOp]) -> list[UOp]:
    """x.substitute(c) for each assignment c of constants to the ranges rs (_combos), from one walk of x: only
    the nodes that depend on one of the ranges are rebuilt per copy (a 4 x 16 register tile made 64 walks)."""
    on = set(rs)
    deps: list[UOp] = []
    for u in x.toposort(gate=lambda n: n not in on):
        if u in on or not on.isdisjoint(u.src):
            on.add(u)
            deps.append(u)
    out = []
    for c in _combos(rs):
        memo: dict[UOp, UOp] = dict(c)
        for u in deps:
            if u not in memo:
                new_src = tuple([memo.get(s, s) for s in u.src])
                memo[u] = u if new_src == u.src else u.replace(src=new_src)
        out.append(memo.get(x, x))
    return out


def _tree(op: Ops, xs: list[UOp]) -> UOp:
    """xs combined pairwise with op (a balanced tree: independent adds run in parallel)."""
    while len(xs) > 1:
        xs = [UOp(op, (xs[i], xs[i + 1])) if i + 1 < len(xs) else xs[i] for i in range(0, len(xs), 2)]
    return xs[0]


def end_chain(e: UOp) -> tuple[UOp, list[UOp]]:
    """END(...END(body, r_inner)..., r_outer) as (body, [r_outer, ..., r_inner])."""
    ranges: list[UOp] = []
    while e.op is Ops.END:
        ranges.append(e.src[1])
        e = e.src[0]
    return e, ranges


def chain_tops(topo: list[UOp]) -> list[UOp]:
    """The ENDs that close a chain: those no other END has as its body."""
    inside = {x.src[0] for x in topo if x.op is Ops.END}
    return [x for x in topo if x.op is Ops.END and x not in inside]


# ---------------------------------------------------------------- WMMA: fragments


def contract_wmmas(sink: UOp) -> UOp:
    """Each WMMA over ranges (the TC opt's) -> a WMMA of fragments, read at its D element (see the module doc)."""
    wmmas = [u for u in sink.toposort() if u.op is Ops.WMMA and u.arg.axes]
    if not wmmas:
        return sink
    by_id = {u.arg.id: u for u in sink.toposort() if u.op is Ops.RANGE}
    mapping: dict[UOp, UOp] = {}
    for w in wmmas:
        rs = [[by_id[i] for i in ids] for ids in w.arg.axes]
        frags = [UOp(Ops.STACK, tuple(_copies(src, r))) for src, r in zip(w.src, rs)]
        d = UOp(Ops.WMMA, tuple(frags), WMMAArg(w.arg.tc))
        i = UOp.index_const(0)
        for r in rs[2]:  # D's element: row-major over C's element dims
            i = i * _bound(r) + r
        mapping[w] = UOp(Ops.LOAD, (UOp(Ops.INDEX, (d, i)),), REG)
    return sink.substitute(mapping)


def _wmma_element(u: UOp) -> tuple[UOp, int] | None:
    """(the WMMA, i) of LOAD(INDEX(WMMA, i)) with C all zeros (an update acc + D[i] folds into it), else None."""
    if u.op is not Ops.LOAD or u.src[0].op is not Ops.INDEX:
        return None
    d, i = u.src[0].src
    if d.op is not Ops.WMMA or i.op is not Ops.CONST:
        return None
    if any(c.op is not Ops.CONST or c.arg.value != 0 for c in d.src[2].src):
        return None
    return d, i.arg.value


# ---------------------------------------------------------------- UNROLL: split accumulators


def unroll_reduces(sink: UOp) -> UOp:
    """REDUCE(v, ..., r_unroll, ...) -> op-tree of REDUCE(v[r_unroll:=i], other ranges) over i."""
    memo: dict[UOp, UOp] = {}
    for u in sink.toposort():
        new_src = tuple(memo[s] for s in u.src)
        nu = u if new_src == u.src else u.replace(src=new_src)
        if nu.op is Ops.REDUCE and any(r.arg.axis_type is AxisType.UNROLL for r in nu.src[1:]):
            unrolled = [r for r in nu.src[1:] if r.arg.axis_type is AxisType.UNROLL]
            others = tuple(r for r in nu.src[1:] if r.arg.axis_type is not AxisType.UNROLL)
            parts = _copies(nu.src[0], unrolled)
            if others:
                parts = [UOp(Ops.REDUCE, (p, *others), nu.arg, nu.tag) for p in parts]
            nu = _tree(nu.arg.op, parts)
        memo[u] = nu
    return memo[sink]


# ---------------------------------------------------------------- UPCAST: copies of the body


def upcast_ends(sink: UOp) -> UOp:
    """END chains with UPCAST ranges: those ranges moved innermost, then expanded into a GROUP of copies."""
    topo = sink.toposort()
    tops = set(chain_tops(topo))
    memo: dict[UOp, UOp] = {}
    for u in topo:
        if u.op is Ops.END and u not in tops:
            continue  # rebuilt with the chain it belongs to, from the chain's top END
        if u.op is Ops.END:
            body, order = end_chain(u)
            body = memo[body]
            up = [r for r in order if r.arg.axis_type is AxisType.UPCAST]
            if up:
                copies = _copies(body, up)
                body = copies[0] if len(copies) == 1 else UOp(Ops.GROUP, tuple(copies))
            for r in reversed(order):  # order is outermost first: wrap the innermost first
                if r.arg.axis_type is not AxisType.UPCAST:
                    body = UOp(Ops.END, (body, r))
            memo[u] = body
            continue
        new_src = tuple(memo[s] for s in u.src)
        memo[u] = u if new_src == u.src else u.replace(src=new_src)
    return memo[sink]


# ---------------------------------------------------------------- REDUCE -> accumulators


@record
class ExpandCtx:
    next_acc: int = 0


def _leaf_reduces(sink: UOp) -> list[UOp]:
    """REDUCEs whose value holds no other REDUCE, in graph order."""
    has: dict[UOp, bool] = {}
    out = []
    for u in sink.toposort():
        inner = any(has[s] for s in u.src)
        if u.op is Ops.REDUCE and not inner:
            out.append(u)
        has[u] = inner or u.op is Ops.REDUCE
    return out


def reduces_to_accs(sink: UOp, ctx: ExpandCtx) -> UOp:
    """Replace the REDUCEs (innermost first) by register accumulators, one loop per group of REDUCEs that
    share their ranges, enclosing loops, op and dtype."""
    while leaves := _leaf_reduces(sink):
        groups: dict[tuple, list[UOp]] = defaultdict(list)
        open_at = open_ranges(sink)  # one walk for every leaf
        for red in leaves:
            ranges = red.src[1:]
            outer = open_at[red.src[0]] - set(ranges)
            groups[(ranges, outer, red.arg.op, red.dtype)].append(red)
        mapping: dict[UOp, UOp] = {}
        for (ranges, outer, op, dt), members in groups.items():
            mapping.update(_accumulate(ctx, list(ranges), sorted(outer, key=lambda r: r.arg.id), op, dt, members))
        sink = sink.substitute(mapping)
    return sink


def _accumulate(
    ctx: ExpandCtx, ranges: list[UOp], outer: list[UOp], op: Ops, dt: DType, members: list[UOp]
) -> dict[UOp, UOp]:
    n = len(members)
    acc = UOp(Ops.PARAM, (UOp.shape_src((n,)),), ParamArg(ctx.next_acc, dt, None, AddrSpace.REG))
    ctx.next_acc += 1
    ident = UOp.const(dt, identity_element(op, dt))
    at_outer = UOp(Ops.AFTER, (acc, *outer))
    inits = [UOp(Ops.STORE, (UOp(Ops.INDEX, (at_outer, UOp.index_const(j))), ident)) for j in range(n)]
    in_loop = UOp(Ops.AFTER, (acc, *inits, *ranges))
    slots = [UOp(Ops.INDEX, (in_loop, UOp.index_const(j))) for j in range(n)]
    fused = _fold_wmmas(members, slots) if op is Ops.ADD else {}
    updates = []
    for j, red in enumerate(members):
        slot = slots[j]
        new = fused.get(j, UOp(op, (UOp(Ops.LOAD, (slot,), REG), red.src[0])))
        updates.append(UOp(Ops.STORE, (slot, new)))
    end = updates[0] if n == 1 else UOp(Ops.GROUP, tuple(updates))
    for r in reversed(ranges):
        end = UOp(Ops.END, (end, r))
    done = UOp(Ops.AFTER, (acc, end))
    return {red: UOp(Ops.LOAD, (UOp(Ops.INDEX, (done, UOp.index_const(j))),), REG) for j, red in enumerate(members)}


def _fold_wmmas(members: list[UOp], slots: list[UOp]) -> dict[int, UOp]:
    """Member j -> its new accumulator value where the members sum every element of one WMMA (C = 0): that WMMA
    with C = the members' accumulators, read at j's element."""
    owners: dict[UOp, dict[int, int]] = defaultdict(dict)  # WMMA -> its element i -> the member summing it
    for j, red in enumerate(members):
        if (found := _wmma_element(red.src[0])) is not None:
            owners[found[0]][found[1]] = j
    out: dict[int, UOp] = {}
    for d, elems in owners.items():
        if sorted(elems) != list(range(d.arg.tc.c.size)):
            continue
        c = UOp(Ops.STACK, tuple(UOp(Ops.LOAD, (slots[elems[i]],), REG) for i in range(len(elems))))
        fused = d.replace(src=(d.src[0], d.src[1], c))
        out.update({j: UOp(Ops.LOAD, (UOp(Ops.INDEX, (fused, UOp.index_const(i))),), REG) for i, j in elems.items()})
    return out


def expand(sink: UOp) -> UOp:
    """Kernel SINK (optimized) -> kernel SINK without UPCAST/UNROLL ranges or REDUCEs (see module doc)."""
    sink = contract_wmmas(sink)
    topo = sink.toposort()
    if any(u.op is Ops.RANGE and u.arg.axis_type in EXPANDED for u in topo):
        sink = simplify(upcast_ends(unroll_reduces(sink)))
    if not any(u.op is Ops.REDUCE for u in sink.toposort()):
        return sink
    return reduces_to_accs(sink, ExpandCtx())
