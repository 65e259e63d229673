"""GPU dims: a GPU kernel's GLOBAL, LOCAL and GROUP_REDUCE ranges become SPECIAL indices; barriers and one-writer
gates are inserted by rules.

In: an optimized kernel SINK for a GPU target (optimize made its output axes GLOBAL, split some to LOCAL, and put
its GROUP_REDUCEs through LOCAL buffers: optimize/local_buffers.py). Out: the same kernel where
  - GLOBAL ranges are group ids: the innermost output axis is SPECIAL gidx0, the next gidx1, and the rest are
    merged into gidx2 (each a quotient/remainder of it) when there are more than three; when a dimension would
    exceed the device's limit (CUDA's 65535 groups in y and z) all of them are merged into gidx0;
  - LOCAL, GROUP_REDUCE and WARP ranges are the work-item's id in its group: one SPECIAL lidx0 over the whole group
    (each axis a quotient/remainder of it), so no per-dimension local limit is ever exceeded; WARP ranges (a tensor
    core's lanes, 32 of them) are its innermost part, so each warp of the group is one tensor core's;
  - their ENDs are gone (a SPECIAL is no loop: every work-item runs the body once);
  - a global STORE whose address does not depend on some GROUP_REDUCE/LOCAL axis (a group reduction's result,
    the same in every work-item) is gated to the work-item where that axis is 0: one writer per group;
  - pm_insert_barriers: a LOAD of a LOCAL buffer that reads after stores to it reads after a BARRIER of them, and a
    store into a reused one after the earlier use's loads stores after a BARRIER of them.
After expand, gates_to_ifs turns gated stores into IF/ENDIF blocks (linearize nests them like loops).
A SPECIAL's bound is its dimension's size (an index UOp: symbolic where the axis is); the renderer collects them
into the kernel's launch sizes (KernelSignature.global_size/local_size: groups per dimension, work-items per group).
"""

from __future__ import annotations

from functools import reduce

from unigrad.ir.args import AddrSpace, AxisType
from unigrad.ir.ops import Ops
from unigrad.ir.pattern import PatternMatcher, UPat, graph_rewrite
from unigrad.ir.uop import UOp
from unigrad.pipeline.optimize.opts import GROUP_TYPES, axes, replace_ranges

MAX_DIMS = 3


def _size(r: UOp) -> UOp:
    return r.src[0]


def _merged(rs: list[UOp], special: UOp) -> dict[UOp, UOp]:
    """Each range of rs (outermost first) as a quotient/remainder of one SPECIAL over their product."""
    out: dict[UOp, UOp] = {}
    stride: UOp | int = 1
    for r in reversed(rs):
        v = special if stride == 1 else special // stride
        out[r] = v if r is rs[0] else v % _size(r)
        stride = _size(r) if stride == 1 else stride * _size(r)
    return out


def _special(name: str, size: UOp) -> UOp:
    return UOp(Ops.SPECIAL, (size,), name)


def _product(rs: list[UOp]) -> UOp:
    return reduce(lambda a, b: a * b, [_size(r) for r in rs])


def _gate_one_writer(sink: UOp, group: list[UOp]) -> UOp:
    """Global STOREs whose address misses some group axis, gated to that axis' 0 (see the module doc)."""
    mapping: dict[UOp, UOp] = {}
    for u in sink.toposort():
        if u.op is not Ops.STORE or u.src[0].op is not Ops.INDEX:
            continue
        buf = u.src[0].src[0]
        while buf.op is Ops.AFTER:
            buf = buf.src[0]
        if buf.op is not Ops.PARAM or buf.arg.addrspace is not AddrSpace.GLOBAL:
            continue
        used = set(u.src[0].toposort())
        missing = [r for r in group if r not in used]
        if not missing:
            continue
        gate = reduce(lambda a, b: a & b, [r.eq(0) for r in missing])
        if len(u.src) == 3:
            gate = u.src[2] & gate
        mapping[u] = UOp(Ops.STORE, (u.src[0], u.src[1], gate))
    return sink.substitute(mapping) if mapping else sink


def _barrier_after(a: UOp, buf: UOp) -> UOp | None:
    deps = a.src[1:]
    if buf.arg.addrspace is not AddrSpace.LOCAL or not deps or any(s.op is Ops.BARRIER for s in deps):
        return None
    return UOp(Ops.AFTER, (buf, UOp(Ops.BARRIER, deps)))


pm_insert_barriers = PatternMatcher(
    [
        # AFTER(local buffer, deps...) -> AFTER(local buffer, BARRIER(deps...)): a LOCAL array is shared by the group,
        # and AFTER alone orders one work-item's code. A load after stores (the deps): every work-item's stores land
        # before any reads; a store after loads (a reused array: the deps are the earlier use's reads): every
        # work-item has read before any overwrites
        (UPat(Ops.AFTER, src=(UPat(Ops.PARAM, name="buf"),), allow_any_len=True, name="a"), _barrier_after),
    ],
    name="pm_insert_barriers",
)


def gates_to_ifs(sink: UOp) -> UOp:
    """Each gated STORE (a one-writer gate, a padded lane) -> an IF block: ENDIF(IF(gate), STORE(idx, val, IF)).
    A STORE whose third source is an IF is inside that block, not gated; each block has its own IF (the arg numbers
    them: blocks with one condition in two places stay two blocks). After expand: the lanes' copies are stores."""
    mapping: dict[UOp, UOp] = {}
    for u in sink.toposort():
        if u.op is Ops.STORE and len(u.src) == 3 and u.src[2].op is not Ops.IF:
            block = UOp(Ops.IF, (u.src[2],), len(mapping))
            mapping[u] = UOp(Ops.ENDIF, (block, UOp(Ops.STORE, (u.src[0], u.src[1], block))))
    return sink.substitute(mapping) if mapping else sink


def _fits(rs: list[UOp], limit: int) -> bool:
    """The ranges' product is known to be at most limit (a symbolic one: its largest value)."""
    size = 1
    for r in rs:
        size *= int(_size(r).vmax)
    return size <= limit


def gpudims(sink: UOp, global_max: tuple[int, int, int] = (2**31 - 1,) * 3) -> UOp:
    """Kernel SINK with GLOBAL/LOCAL/GROUP_REDUCE RANGEs -> the same kernel on SPECIAL indices (module doc).
    global_max: the most groups per dimension (CUDA: 65535 in y and z); output axes that do not fit their dimension
    all go into dimension 0, merged."""
    rs = axes(sink)
    glob = [r for r in rs if r.arg.axis_type is AxisType.GLOBAL]
    # a tensor core's WARP ranges are the innermost work-items: lidx0 % 32 is the lane in its warp
    group = sorted((r for r in rs if r.arg.axis_type in GROUP_TYPES), key=lambda r: r.arg.axis_type is AxisType.WARP)
    if group:
        sink = _gate_one_writer(sink, group)
        rs = axes(sink)
    value: dict[UOp, UOp] = {}
    inner = glob[::-1]  # innermost output axis first: gidx0 varies fastest between neighbouring groups
    dims = [[r] for r in inner[: MAX_DIMS - 1]] + ([inner[MAX_DIMS - 1 :][::-1]] if len(inner) >= MAX_DIMS else [])
    if not all(_fits(rs_d, limit) for rs_d, limit in zip(dims, global_max)):
        dims = [glob] if glob else []  # one dimension, the largest
    for d, rs_d in enumerate(dims):
        special = _special(f"gidx{d}", _product(rs_d))
        value.update({rs_d[0]: special} if len(rs_d) == 1 else _merged(rs_d, special))
    if len(group) == 1:
        value[group[0]] = _special("lidx0", _size(group[0]))
    elif group:
        value.update(_merged(group, _special("lidx0", _product(group))))
    if not value:
        return sink
    out = replace_ranges(sink, value, {r: () for r in value})
    return graph_rewrite(out, pm_insert_barriers)
