"""Local buffers for GROUP_REDUCE axes: the last step of Optimize on a GPU target.

In: an optimized kernel SINK whose REDUCEs may range over GROUP_REDUCE axes (a reduce axis split across the
work-items of a group). Out: the same computation where each such REDUCE is
    partial = REDUCE(value, its other ranges)                       each work-item's share, in a register
    lbuf    = PARAM(LOCAL, shape (n,))                              n = the work-items (and lanes) of a group
    STORE(INDEX(lbuf, item), partial)                               every work-item stores its partial
    REDUCE(LOAD(INDEX(AFTER(lbuf, store), item with G := g')), g')  and reduces all of them over new REDUCE
                                                                    ranges g' (one per GROUP_REDUCE axis)
`item` is the work-item's place in the group: its LOCAL and GROUP_REDUCE ranges (and the UPCAST lanes the partial
has), row-major. Every work-item computes the same total, so the kernel's result does not depend on its
GROUP_REDUCE ranges any more; gpudims gates the global store to one writer per group, and its barrier rule puts a
BARRIER between the stores and the loads (nothing here orders them but AFTER).

LOCAL storage is planned here too (the Register/Memory Plan's LOCAL part: the order of the uses is decided where the
buffers are made): the group reductions of one dtype share one array, as big as the largest needs. A later use's
stores go to AFTER(array, the earlier use's result), so every work-item has read the earlier partials before any
overwrites them (the barrier rule makes that AFTER a BARRIER too). A softmax row's max and sum take one array.
A group reduction inside a loop (a sum over rows of row sums) stores into the array once per iteration, after the
previous iteration's reads: its stores go to AFTER(array, partial), a barrier inside the loop before the store.
"""

from __future__ import annotations

import math

from unigrad.dtype import DType
from unigrad.ir.args import AddrSpace, AxisType, LoadArg, ParamArg
from unigrad.ir.ops import Ops
from unigrad.ir.uop import UOp
from unigrad.pipeline.expand import open_ranges
from unigrad.pipeline.optimize.opts import GROUP_TYPES, axes, bound

LOCAL = LoadArg(None, AddrSpace.LOCAL)
# ranges that are a work-item's own coordinates in its group (its partial's slot depends on them); GLOBAL ranges
# (group ids) need no slot: each group has its own LOCAL memory
SLOT_TYPES = (*GROUP_TYPES, AxisType.UPCAST, AxisType.UNROLL)


def _linear(rs: list[UOp]) -> UOp:
    """Row-major position of the ranges' values (the last varies fastest); 0 for none."""
    out = UOp.index_const(0)
    for r in rs:
        out = out * bound(r) + r
    return out


def group_reduces_to_locals(sink: UOp) -> UOp:
    """Kernel SINK -> each REDUCE over GROUP_REDUCE ranges through a LOCAL buffer (see the module doc)."""
    reduces = [u for u in sink.toposort() if u.op is Ops.REDUCE and _groups(u)]
    if not reduces:
        return sink
    next_id = max(r.arg.id for r in axes(sink)) + 1
    group = {r for r in axes(sink) if r.arg.axis_type in GROUP_TYPES}
    plans = [_plan(red, group) for red in reduces]
    sizes: dict[DType, int] = {}
    for red, (_, slots) in zip(reduces, plans):
        sizes[red.dtype] = max(sizes.get(red.dtype, 1), math.prod(bound(r) for r in slots))  # type: ignore[misc]
    arrays = {
        dt: UOp(Ops.PARAM, (UOp.shape_src((n,)),), ParamArg(i, dt, None, AddrSpace.LOCAL))
        for i, (dt, n) in enumerate(sizes.items())
    }
    last_reader: dict[DType, UOp] = {}  # the REDUCE that last read each array
    mapping: dict[UOp, UOp] = {}
    for orig, (partial, slots) in zip(reduces, plans):  # sources first: a later REDUCE may read an earlier one
        partial = partial.substitute(mapping)
        lbuf = arrays[orig.dtype]
        deps = [last_reader[orig.dtype]] if orig.dtype in last_reader else []
        if _in_loop(partial):  # the previous iteration's reads come first: a barrier in the loop, before the store
            deps.append(partial)
        target = UOp(Ops.AFTER, (lbuf, *deps)) if deps else lbuf
        store = UOp(Ops.STORE, (UOp(Ops.INDEX, (target, _linear(slots))), partial))
        groups = _groups(orig)
        fresh = {g: UOp.range(bound(g), next_id + i, AxisType.REDUCE) for i, g in enumerate(groups)}  # type: ignore[arg-type]
        next_id += len(groups)
        read = UOp(Ops.INDEX, (UOp(Ops.AFTER, (lbuf, store)), _linear([fresh.get(r, r) for r in slots])))
        mapping[orig] = last_reader[orig.dtype] = UOp(
            Ops.REDUCE, (UOp(Ops.LOAD, (read,), LOCAL), *fresh.values()), orig.arg
        )
    return sink.substitute(mapping)


def _open(partial: UOp) -> set[UOp]:
    """The ranges the partial's value varies with (open_ranges counts a REDUCE's own ranges as open: they are not)."""
    own = set(partial.src[1:]) if partial.op is Ops.REDUCE else set()
    return set(open_ranges(partial)[partial]) - own


def _in_loop(partial: UOp) -> bool:
    """The partial is computed inside a loop of the kernel (an enclosing reduce): each iteration stores into the
    array the previous one's reads came from."""
    return any(r.arg.axis_type not in SLOT_TYPES + (AxisType.GLOBAL,) for r in _open(partial))


def _plan(red: UOp, group: set[UOp]) -> tuple[UOp, list[UOp]]:
    """(each work-item's partial, the ranges its slot in the LOCAL array is indexed by: every work-item of the group
    has its own slot, also where its partial does not depend on some of the group's axes, so no two store to one)."""
    groups = _groups(red)
    others = [r for r in red.src[1:] if r not in groups]
    partial = UOp(Ops.REDUCE, (red.src[0], *others), red.arg) if others else red.src[0]
    slots = sorted({r for r in _open(partial) if r.arg.axis_type in SLOT_TYPES} | group, key=lambda r: r.arg.id)
    return partial, slots


def _groups(red: UOp) -> list[UOp]:
    return [r for r in red.src[1:] if r.op is Ops.RANGE and r.arg.axis_type is AxisType.GROUP_REDUCE]
