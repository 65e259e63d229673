"""Expand: REDUCE becomes an accumulator in registers and an END-closed loop.

In: a kernel SINK from rangeify (scalar math on RANGEs with REDUCE(value, ranges...) nodes).
Out: the same kernel without REDUCE: each becomes
    acc = PARAM(REG)                                  one register slot
    STORE(INDEX(AFTER(acc, outer ranges), 0), identity)   reset once per iteration of the enclosing loops
    STORE(INDEX(AFTER(acc_init, r...), 0), op(LOAD(acc), value))  inside the reduce loops, closed by END
    LOAD(INDEX(AFTER(acc, END), 0))                  the result, read after the loops
(UPCAST/UNROLL ranges becoming vector shapes will join this stage with the kernel optimizer.)
"""

from __future__ import annotations

from dataclasses import dataclass

from unigrad.dtype import DType
from unigrad.ir.args import AddrSpace, LoadArg, ParamArg
from unigrad.ir.ops import Ops
from unigrad.ir.pattern import PatternMatcher, UPat, graph_rewrite
from unigrad.ir.uop import UOp

REG = LoadArg(None, AddrSpace.REG)


def identity_element(op: Ops, dtype: DType) -> object:
    if op is Ops.ADD:
        return 0
    if op is Ops.MUL:
        return 1
    return dtype.min  # MAX: -inf for floats, the smallest int, False


def open_ranges(u: UOp) -> set[UOp]:
    """RANGEs that `u` depends on and that are not closed (by an END) below it."""
    memo: dict[UOp, frozenset[UOp]] = {}
    for x in u.toposort():
        if x.op is Ops.RANGE:
            memo[x] = frozenset((x,))
        elif x.op is Ops.END:
            memo[x] = memo[x.src[0]] - {x.src[1]}
        else:
            acc: frozenset[UOp] = frozenset()
            for s in x.src:
                acc = acc | memo[s]
            memo[x] = acc
    return set(memo[u])


@dataclass
class ExpandCtx:
    next_acc: int = 0


def reduce_to_acc(ctx: ExpandCtx, red: UOp) -> UOp:
    value, ranges = red.src[0], red.src[1:]
    op, dt = red.arg.op, red.dtype
    outer = sorted(open_ranges(value) - set(ranges), key=lambda r: r.arg.id)
    acc = UOp(Ops.PARAM, (UOp.shape_src((1,)),), ParamArg(ctx.next_acc, dt, None, AddrSpace.REG))
    ctx.next_acc += 1
    zero = UOp.index_const(0)
    init = UOp(
        Ops.STORE, (UOp(Ops.INDEX, (UOp(Ops.AFTER, (acc, *outer)), zero)), UOp.const(dt, identity_element(op, dt)))
    )
    in_loop = UOp(Ops.INDEX, (UOp(Ops.AFTER, (acc, init, *ranges)), zero))
    update = UOp(Ops.STORE, (in_loop, UOp(op, (UOp(Ops.LOAD, (in_loop,), REG), value))))
    end = update
    for r in reversed(ranges):
        end = UOp(Ops.END, (end, r))
    return UOp(Ops.LOAD, (UOp(Ops.INDEX, (UOp(Ops.AFTER, (acc, end)), zero)),), REG)


pm_reduce_to_acc = PatternMatcher([(UPat(Ops.REDUCE, name="red"), reduce_to_acc)], name="pm_reduce_to_acc")


def expand(sink: UOp) -> UOp:
    """Kernel SINK with REDUCEs -> kernel SINK with register accumulators (see module doc)."""
    if not any(u.op is Ops.REDUCE for u in sink.toposort()):
        return sink
    return graph_rewrite(sink, pm_reduce_to_acc, ExpandCtx())
