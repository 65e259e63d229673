"""OptOps: checked transformations of a kernel's RANGE axes (spec: Kernel Optimizations).

In: a kernel SINK from rangeify (STOREs closed by END chains, REDUCE(value, ranges...)), plus opts.
Out: the same computation over new ranges; KernelInfo.opts records every opt applied, in order, so a kernel
prints and replays its opts (DEBUG=3) and they are part of its cache key (the SINK itself).

Axes are the kernel's RANGEs sorted by id; a SPLIT keeps the id on the part that keeps the axis type and
appends the new part (the `target` type) as the last axis. A part of size 1 is no loop and no axis (axes after
it shift down by one). An illegal request raises OptError naming the
opt, the axis and what was expected.
"""

from __future__ import annotations

import math
from enum import Enum
from typing import Any

from unigrad.helpers import record
from unigrad.ir.args import AxisType, KernelInfo, TensorCore
from unigrad.ir.ops import Ops
from unigrad.ir.symbolic import simplify, split_terms
from unigrad.ir.uop import UOp
from unigrad.pipeline.expand import chain_tops, end_chain, identity_element


class OptOps(Enum):
    SPLIT = "SPLIT"
    PADTO = "PADTO"
    SWAP = "SWAP"
    NOLOCALS = "NOLOCALS"
    TC = "TC"

    def __repr__(self) -> str:
        return f"OptOps.{self.name}"


@record(frozen=True)
class Opt:
    """(op, axis, arg): SPLIT arg = (k, target AxisType, top); PADTO arg = multiple; SWAP arg = other axis; TC axis =
    a REDUCE axis, arg = tensor_cores.TCArg (or None: its defaults)."""

    op: OptOps
    axis: int | None = None
    arg: Any = None

    def __repr__(self) -> str:
        return f"Opt({self.op!r}, {self.axis}, {self.arg!r})"


@record(frozen=True, slots=True)  # (slots: its hash is kept; it is in every kernel's cache key)
class Target:
    """What the optimizer knows of the device a kernel will run on (the runtime's device says: CPUDevice.target).

    threads: cores a THREAD axis may split over; vector_bytes: the width of one vector register (0: scalar code
    only); vector_registers: how many vector registers there are (a register tile keeps its accumulators in half
    of them: the rest hold the loaded operands).
    A GPU (gpu=True) runs work-groups: output axes are GLOBAL (group ids), LOCAL and GROUP_REDUCE axes are the
    work-items of a group. global_max/local_max: the largest size per dimension (3 dimensions); max_group: the most
    work-items in a group; local_bytes: LOCAL memory per group; group_multiple: the preferred multiple of a group's
    size; nonuniform: the global size need not be a multiple of the group size; tensor_cores: the warp matrix
    multiply-accumulates the TC opt may use (tensor_cores.py; none: TC is refused). masked_tails: the renderer
    turns gated lane copies (a PADTO'd axis upcast: its last vector runs past the end) into vector loads and stores
    with a lane-wise tail, so padding an odd-sized axis to whole vectors pays."""

    threads: int = 1
    vector_bytes: int = 0
    vector_registers: int = 16
    gpu: bool = False
    global_max: tuple[int, int, int] = (0, 0, 0)
    local_max: tuple[int, int, int] = (0, 0, 0)
    max_group: int = 0
    local_bytes: int = 0
    group_multiple: int = 1
    nonuniform: bool = False
    tensor_cores: tuple[TensorCore, ...] = ()
    masked_tails: bool = False


class OptError(ValueError):
    """An opt that cannot apply to this kernel."""


REDUCE_TYPES = frozenset({AxisType.REDUCE, AxisType.GROUP_REDUCE, AxisType.UNROLL})
# which axis types a SPLIT may make from which (spec table "Split from"; on CPU kernels LOOP plays GLOBAL)
SPLIT_FROM: dict[AxisType, frozenset[AxisType]] = {
    AxisType.LOCAL: frozenset({AxisType.GLOBAL, AxisType.LOOP}),
    AxisType.THREAD: frozenset({AxisType.GLOBAL, AxisType.LOOP}),
    AxisType.UPCAST: frozenset({AxisType.GLOBAL, AxisType.LOCAL, AxisType.LOOP}),
    AxisType.UNROLL: frozenset({AxisType.REDUCE, AxisType.GROUP_REDUCE}),
    AxisType.GROUP_REDUCE: frozenset({AxisType.REDUCE}),
    AxisType.LOOP: frozenset({AxisType.GLOBAL, AxisType.LOOP}),
    AxisType.REDUCE: frozenset({AxisType.REDUCE}),
}
MAX_EXPANDED = 1024  # product of all UPCAST/UNROLL amounts: the copies expand makes of one kernel body


def axes(sink: UOp) -> list[UOp]:
    """The kernel's RANGEs sorted by id: axis i of an Opt."""
    return sorted({u for u in sink.toposort() if u.op is Ops.RANGE}, key=lambda r: r.arg.id)


def bound(r: UOp) -> int | None:
    return r.src[0].arg.value if r.src[0].op is Ops.CONST else None


def _fail(opt: Opt, msg: str) -> OptError:
    return OptError(f"{opt}: {msg}")


def _axis(sink: UOp, opt: Opt) -> tuple[list[UOp], UOp]:
    rs = axes(sink)
    if not isinstance(opt.axis, int) or not 0 <= opt.axis < len(rs):
        raise _fail(opt, f"axis must be an int in [0, {len(rs)}) for this kernel, got {opt.axis!r}")
    return rs, rs[opt.axis]


def replace_ranges(sink: UOp, value: dict[UOp, UOp], loops: dict[UOp, tuple[UOp, ...]]) -> UOp:
    """Rebuild the kernel with each RANGE r in `loops` replaced: as a value by value[r], as a loop (in an END
    chain or a REDUCE's ranges) by loops[r], outermost first. Index math is simplified afterwards."""
    memo: dict[UOp, UOp] = {}
    for u in sink.toposort():
        if u in value:
            memo[u] = value[u]
            continue
        if u.op is Ops.END and u.src[1] in loops:
            out = memo[u.src[0]]
            for r in reversed(loops[u.src[1]]):
                out = UOp(Ops.END, (out, r))
            memo[u] = out
            continue
        if u.op is Ops.REDUCE:
            rs: list[UOp] = []
            for r in u.src[1:]:
                rs.extend(loops.get(r, (r,)))
            memo[u] = UOp(Ops.REDUCE, (memo[u.src[0]], *rs), u.arg, u.tag)
            continue
        new_src = tuple(memo[s] for s in u.src)
        memo[u] = u if new_src == u.src else u.replace(src=new_src)
    return simplify(memo[sink])


def _with_opt(sink: UOp, opt: Opt) -> UOp:
    info = sink.arg if isinstance(sink.arg, KernelInfo) else KernelInfo("kernel")
    return sink.replace(arg=KernelInfo(info.name, info.opts + (opt,), info.outputs))


def _tc_ranges(sink: UOp) -> set[int]:
    """Ids of the ranges a WMMA contracts into its fragments (the TC opt's WARP/UPCAST/UNROLL dims): no later opt
    pads, splits or swaps them, the tensor core's layout fixes them."""
    return {i for u in sink.toposort() if u.op is Ops.WMMA and u.arg.axes for ids in u.arg.axes for i in ids}


def _not_tc(sink: UOp, opt: Opt, *rs: UOp) -> None:
    tc = _tc_ranges(sink)
    if tc and any(r.arg.id in tc or r.arg.axis_type is AxisType.WARP for r in rs):
        raise _fail(opt, "the axis is a tensor core's (TC fixed it)")


def _split(sink: UOp, opt: Opt) -> UOp:
    rs, r = _axis(sink, opt)
    _not_tc(sink, opt, r)
    if not (isinstance(opt.arg, tuple) and len(opt.arg) == 3):
        raise _fail(opt, "SPLIT takes arg (k, target AxisType, top)")
    k, target, top = opt.arg
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise _fail(opt, f"split factor must be a positive int, got {k!r}")
    if not isinstance(target, AxisType) or target not in SPLIT_FROM:
        raise _fail(opt, f"cannot split into axis type {target!r}")
    kind = r.arg.axis_type
    if kind not in SPLIT_FROM[target]:
        allowed = ", ".join(sorted(t.name for t in SPLIT_FROM[target]))
        raise _fail(opt, f"a {target.name} axis splits from {allowed}, but axis {opt.axis} is {kind.name}")
    n = bound(r)
    if n is None:
        raise _fail(opt, f"axis {opt.axis} has a symbolic size {r.src[0].render()}: only constant sizes split")
    if n % k != 0:
        raise _fail(opt, f"axis {opt.axis} of size {n} is not a multiple of {k} (PADTO it first)")
    if target is AxisType.THREAD:
        if not top:
            raise _fail(opt, "a THREAD axis splits off the top (outer part): top must be True")
        if any(x.arg.axis_type is AxisType.THREAD for x in rs):
            raise _fail(opt, "the kernel already has a THREAD axis")
        chains = [end_chain(t)[1] for t in chain_tops(sink.toposort())]
        if any(ch[0] is not r for ch in chains if r in ch):
            raise _fail(opt, f"axis {opt.axis} is not an outermost loop: only those split into THREADs")
    if target is AxisType.GROUP_REDUCE and _tc_ranges(sink):
        raise _fail(opt, "a tensor core's sum does not split over a group (GROUP_REDUCE after TC)")
    if target in (AxisType.UPCAST, AxisType.UNROLL):
        if top:
            raise _fail(opt, f"{target.name} is an inner axis: top must be False")
        expanded = k * math.prod(bound(x) or 1 for x in rs if x.arg.axis_type in (AxisType.UPCAST, AxisType.UNROLL))
        if expanded > MAX_EXPANDED:
            raise _fail(opt, f"UPCAST/UNROLL amounts would multiply to {expanded} (at most {MAX_EXPANDED})")
    new_id = max(x.arg.id for x in rs) + 1
    # the part that keeps the kind keeps the id; the target part is the new last axis
    if top:
        a = UOp.range(k, new_id, target)  # outer: k
        b = UOp.range(n // k, r.arg.id, kind)  # inner: n/k
        expr = a * (n // k) + b
    else:
        a = UOp.range(n // k, r.arg.id, kind)
        b = UOp.range(k, new_id, target)
        expr = a * k + b
    # a part of size 1 is no loop: its value is 0 (the kernel keeps no RANGE of bound 1 from a split)
    zero = UOp.index_const(0)
    expr = expr.substitute({x: zero for x in (a, b) if bound(x) == 1})
    loops = tuple(x for x in (a, b) if bound(x) != 1)
    return _with_opt(replace_ranges(sink, {r: expr}, {r: loops}), opt)


def _padto(sink: UOp, opt: Opt) -> UOp:
    """The axis padded up to a multiple: an output axis's stores gated off past its size, its loads gated (along their
    contiguous axis) or read at the last valid index (others); a reduce axis's input the reduction's identity there."""
    rs, r = _axis(sink, opt)
    _not_tc(sink, opt, r)
    m = opt.arg
    if not isinstance(m, int) or isinstance(m, bool) or m < 1:
        raise _fail(opt, f"PADTO takes a positive int multiple, got {m!r}")
    n = bound(r)
    if n is None:
        raise _fail(opt, f"axis {opt.axis} has a symbolic size: only constant sizes pad")
    padded = -(-n // m) * m
    if padded == n:
        return _with_opt(sink, opt)
    r2 = UOp.range(padded, r.arg.id, r.arg.axis_type)
    valid = r2 < n
    reduce_axis = r.arg.axis_type in REDUCE_TYPES
    memo: dict[UOp, UOp] = {r: r2}
    uses_r: dict[UOp, bool] = {}  # does the node depend on the padded range
    for u in sink.toposort():
        uses_r[u] = u is r or any(uses_r[s] for s in u.src)
        if u in memo:
            continue
        new_src = tuple(memo[s] for s in u.src)
        nu = u if new_src == u.src else u.replace(src=new_src)
        if uses_r[u]:
            if u.op is Ops.LOAD and u.src[0].op is Ops.INDEX and not reduce_axis and not _unit_stride(u, r):
                # an output axis the load does not read contiguously (a matmul's A along its rows): read at the last
                # valid index (a plain load, which the vectorizer keeps beside vectors) where the gated store drops
                # the element; a load along its contiguous axis is gated (vector lanes: one masked vector access)
                nu = u.substitute({r: valid.where(r2, UOp.index_const(n - 1))})
            elif u.op is Ops.LOAD and u.src[0].op is Ops.INDEX and len(nu.src) == 1:
                nu = nu.replace(src=(nu.src[0], UOp.const(nu.dtype, 0), valid))  # a padded lane reads 0
            elif u.op is Ops.LOAD and u.src[0].op is Ops.INDEX:  # padded along another axis too: both gates
                nu = nu.replace(src=(nu.src[0], nu.src[1], nu.src[2] & valid))
            elif u.op is Ops.STORE and not reduce_axis:
                nu = nu.replace(src=(*nu.src[:2], nu.src[2] & valid if len(nu.src) == 3 else valid))  # writes nothing
            elif u.op is Ops.REDUCE and r in u.src[1:]:
                ident = UOp.const(u.dtype, identity_element(u.arg.op, u.dtype))
                x = nu.src[0]
                if x.op is Ops.LOAD and len(x.src) == 3 and x.src[2] is valid and x.dtype == u.dtype:
                    x = x.replace(src=(x.src[0], ident, valid))  # a padded lane reads the identity: no select
                else:
                    x = valid.where(x, ident)
                nu = nu.replace(src=(x, *nu.src[1:]))
        memo[u] = nu
    return _with_opt(simplify(memo[sink]), opt)


def _unit_stride(load: UOp, r: UOp) -> bool:
    """The load's index moves by one element per step of r."""
    return dict(split_terms(load.src[0].src[1])[0]).get(r) == 1


def _swap(sink: UOp, opt: Opt) -> UOp:
    rs, a = _axis(sink, opt)
    j = opt.arg
    if not isinstance(j, int) or not 0 <= j < len(rs) or j == opt.axis:
        raise _fail(opt, f"SWAP takes another axis in [0, {len(rs)}), got {j!r}")
    b = rs[j]
    _not_tc(sink, opt, a, b)
    if (a.arg.axis_type in REDUCE_TYPES) != (b.arg.axis_type in REDUCE_TYPES):
        raise _fail(opt, "a reduce axis only swaps with another reduce axis")
    pair = {a: b, b: a}
    topo = sink.toposort()
    tops = set(chain_tops(topo))
    memo: dict[UOp, UOp] = {}
    for u in topo:
        if u.op is Ops.END and u not in tops:
            continue  # rebuilt with its chain, from the chain's top END
        if u.op is Ops.END:  # the chain with a and b exchanged when both are in it
            body, order = end_chain(u)
            out = memo[body]
            for r in reversed(order):  # order is outermost first: wrap the innermost first
                out = UOp(Ops.END, (out, pair.get(r, r) if a in order and b in order else r))
            memo[u] = out
            continue
        if u.op is Ops.REDUCE and a in u.src[1:] and b in u.src[1:]:
            memo[u] = UOp(Ops.REDUCE, (memo[u.src[0]], *(pair.get(r, r) for r in u.src[1:])), u.arg, u.tag)
            continue
        new_src = tuple(memo[s] for s in u.src)
        memo[u] = u if new_src == u.src else u.replace(src=new_src)
    return _with_opt(memo[sink], opt)


def _nolocals(sink: UOp, opt: Opt) -> UOp:
    if opt.axis is not None or opt.arg is not None:
        raise _fail(opt, "NOLOCALS takes no axis and no arg")
    if any(r.arg.axis_type is AxisType.LOCAL for r in axes(sink)):
        raise _fail(opt, "the kernel already has LOCAL axes")
    return _with_opt(sink, opt)


def apply_opt(sink: UOp, opt: Opt, target: Target | None = None) -> UOp:
    """One checked opt; raises OptError when it cannot apply. TC needs the `target` (its tensor cores)."""
    if not isinstance(opt, Opt):
        raise OptError(f"expected an Opt, got {opt!r}")
    opts = sink.arg.opts if isinstance(sink.arg, KernelInfo) else ()
    if opt.op is OptOps.TC:
        from unigrad.pipeline.optimize.tensor_cores import apply_tc  # it builds on this module's PADTO

        return apply_tc(sink, opt, target)
    if opt.op is OptOps.SPLIT:
        if any(o.op is OptOps.NOLOCALS for o in opts) and isinstance(opt.arg, tuple) and len(opt.arg) == 3:
            if opt.arg[1] in (AxisType.LOCAL, AxisType.GROUP_REDUCE):
                raise _fail(opt, "NOLOCALS was applied: no LOCAL or GROUP_REDUCE axes")
        return _split(sink, opt)
    if opt.op is OptOps.PADTO:
        return _padto(sink, opt)
    if opt.op is OptOps.SWAP:
        return _swap(sink, opt)
    if opt.op is OptOps.NOLOCALS:
        return _nolocals(sink, opt)
    raise _fail(opt, "unknown OptOp")


def apply_opts(sink: UOp, opts: list[Opt] | tuple[Opt, ...], target: Target | None = None) -> UOp:
    """The opts applied in order; on a GPU target each result is checked against the device's limits."""
    for o in opts:
        sink = apply_opt(sink, o, target)
        if target is not None and target.gpu:
            check_gpu_limits(sink, o, target)
    return sink


# the axes whose values are the work-items of one group (WARP: a tensor core's lanes)
GROUP_TYPES = (AxisType.LOCAL, AxisType.GROUP_REDUCE, AxisType.WARP)


def check_gpu_limits(sink: UOp, opt: Opt, target: Target) -> None:
    """Raise OptError when the kernel after `opt` would not launch on the GPU `target`: more work-items in a group
    than max_group, or LOCAL memory (GROUP_REDUCE partials) over local_bytes. THREAD axes are a CPU's."""
    rs = axes(sink)
    if any(r.arg.axis_type is AxisType.THREAD for r in rs):
        raise _fail(opt, "THREAD axes are CPU threads: a GPU kernel runs work-groups (split to LOCAL instead)")
    group = math.prod(bound(r) or 1 for r in rs if r.arg.axis_type in GROUP_TYPES)
    if group > target.max_group:
        raise _fail(opt, f"a work-group of {group} work-items is over this device's limit of {target.max_group}")
    if group > target.local_max[0]:  # gpudims puts a group's work-items in dimension 0
        raise _fail(
            opt, f"a work-group of {group} work-items is over the device's dimension-0 limit {target.local_max[0]}"
        )
    reduces = [u for u in sink.toposort() if u.op is Ops.REDUCE]
    if any(r.arg.axis_type is AxisType.GROUP_REDUCE for r in rs):
        need = sum(group * u.dtype.itemsize for u in reduces)
        if need > target.local_bytes:
            raise _fail(
                opt, f"GROUP_REDUCE partials need {need} bytes of LOCAL memory, the device has {target.local_bytes}"
            )
