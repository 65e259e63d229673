"""Hand-coded GPU opts: the same design as the CPU heuristics (heuristic.py), for a Target with gpu=True.

In: a kernel SINK whose output axes are GLOBAL (optimize.to_global_axes), and the GPU Target (group limits, LOCAL
memory). Out: the list of Opts, each checked as it is chosen (apply_opt), so later axis numbers are right.
  - reductions to few outputs (a full sum, a softmax row): the innermost reduce axis split to GROUP_REDUCE, the
    work-items of a group each reducing a strided share (neighbours read neighbouring elements) and combining
    their partials through LOCAL memory (optimize/local_buffers.py);
  - matmul-like kernels (a load the output tile reuses): a work-group tile of LOCAL axes on the two innermost
    outputs, each work-item computing an UPCAST block of outputs with the reduce axis UNROLLed;
  - everything else (elementwise, reductions to many outputs): on a target with vector registers, the innermost
    output axis UPCAST by one vector's lanes where every store is contiguous in it (each work-item loads and stores
    a whole vector), then the innermost output axes split to LOCAL until a group holds GROUP_ITEMS work-items (the
    preferred multiple when the size allows; an elementwise axis no good size divides, a prime, is padded to whole
    groups of PAD_GROUP and its padded work-items store nothing), the reduce loops kept whole.
  - on a target with tensor cores, first: a sum of products of 16-bit floats (matmul, convolution) whose axes fit
    the tile (or pad to it with little waste: TC_MAX_PAD) on the tensor cores (TC on its largest reduce axis), each
    warp's tile then UPCAST to several WMMAs over the output axes (their A and B fragments reused) and LOCAL to a few
    warps a group; where TC does not apply, the paths below.
Symbolic sizes take no opts (each group then has one work-item).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from unigrad.ir.args import AxisType
from unigrad.ir.ops import Ops
from unigrad.ir.uop import UOp
from unigrad.pipeline.optimize.heuristic import MAX_VECTOR_BODY, _output_chain, _tile_reuses, _vector_lanes
from unigrad.pipeline.optimize.opts import Opt, OptError, OptOps, Target, apply_opt, axes, bound, check_gpu_limits
from unigrad.pipeline.optimize.tensor_cores import TCArg, match_tc

GROUP_ITEMS = 256  # work-items a group aims for (elementwise, group reductions)
FEW_OUTPUTS = 1024  # a reduction with at most this many outputs splits its reduce axis over a group
MIN_GROUP_REDUCE = 256  # ... when the reduce axis has at least this many elements
PAD_GROUP = 64  # an elementwise axis no good group size divides is padded to a multiple of this (or of the room left)
TILE_LOCAL = (16, 8, 4, 2)  # a matmul's LOCAL tile per output axis: the first dividing it
TILE_UPCAST = (4, 2)  # outputs per work-item along each tile axis
TILE_UNROLL = (4, 2)  # reduce steps unrolled
TC_MAX_PAD = 1.5  # TC pads an axis to its tile when that makes it at most this much bigger
TC_UPCAST = ((1, (4, 2)), (0, (2,)))  # WMMAs per warp: (tile axis 0 = M, 1 = N, the UPCASTs to try, first dividing)
TC_WARPS = 4  # warps a group aims for (LOCAL splits of the tile's axes)


def _divisor(n: int, choices: tuple[int, ...] | list[int], limit: int) -> int | None:
    return next((k for k in choices if k <= limit and n % k == 0 and k > 1), None)


def _group_sizes(limit: int, multiple: int) -> list[int]:
    """Candidate work-item counts up to limit, best first: multiples of the device's preferred multiple (largest
    first), then the rest (largest first): a group of 150 runs 5 warps of 32 with 10 lanes idle."""
    sizes = range(limit, 1, -1)
    return [k for k in sizes if k % multiple == 0] + [k for k in sizes if k % multiple]


class _Builder:
    """The opts chosen so far and the kernel they make (axes are numbered on the kernel as it is now)."""

    def __init__(self, sink: UOp, target: Target) -> None:
        self.sink, self.target = sink, target
        self.opts: list[Opt] = []

    def by_id(self, rid: int) -> UOp | None:
        return next((r for r in axes(self.sink) if r.arg.id == rid), None)

    def apply(self, rid: int, make: Callable[[int], Opt]) -> bool:
        """The opt make(axis of range rid) applied and kept, if it is legal and within the device's limits."""
        r = self.by_id(rid)
        if r is None:
            return False
        opt = make(axes(self.sink).index(r))
        try:
            sink = apply_opt(self.sink, opt)
            check_gpu_limits(sink, opt, self.target)
        except OptError:
            return False
        self.sink = sink
        self.opts.append(opt)
        return True

    def split(self, rid: int, k: int, kind: AxisType) -> bool:
        return self.apply(rid, lambda axis: Opt(OptOps.SPLIT, axis, (k, kind, False)))

    def padto(self, rid: int, m: int) -> bool:
        return self.apply(rid, lambda axis: Opt(OptOps.PADTO, axis, m))

    def size(self, rid: int) -> int:
        r = self.by_id(rid)
        return 0 if r is None else bound(r) or 0

    def group(self) -> int:
        kinds = (AxisType.LOCAL, AxisType.GROUP_REDUCE)
        return math.prod(bound(r) or 1 for r in axes(self.sink) if r.arg.axis_type in kinds)


def gpu_opts(sink: UOp, target: Target) -> list[Opt]:
    """The opts for a kernel on a GPU `target` (see the module doc); [] for symbolic sizes."""
    rs = axes(sink)
    if any(bound(r) is None for r in rs) or target.max_group < 2:
        return []
    outputs = [r.arg.id for r in _output_chain(sink) if r.arg.axis_type is AxisType.GLOBAL]
    reduces = [r for r in rs if r.arg.axis_type is AxisType.REDUCE]
    out_size = math.prod(bound(r) or 1 for r in rs if r.arg.axis_type is AxisType.GLOBAL)
    if target.tensor_cores and (tc := tc_opts(sink, target)):
        return tc
    b = _Builder(sink, target)
    limit = min(GROUP_ITEMS, target.max_group)
    if reduces and out_size <= FEW_OUTPUTS and (bound(reduces[-1]) or 0) >= MIN_GROUP_REDUCE:
        rid = reduces[-1].arg.id
        itemsize = max(u.dtype.itemsize for u in sink.toposort() if u.op is Ops.REDUCE)
        fit = min(limit, target.local_bytes // max(itemsize, 1))
        if (k := _divisor(b.size(rid), _group_sizes(fit, target.group_multiple), fit)) is not None:
            b.split(rid, k, AxisType.GROUP_REDUCE)
        return b.opts
    if reduces and len(outputs) >= 2 and _tile_reuses(sink, [b.by_id(i) for i in outputs], reduces[-1]):  # type: ignore[misc]
        for rid in outputs[-2:][::-1]:  # innermost first
            if (u := _divisor(b.size(rid), TILE_UPCAST, b.size(rid) // 2)) is not None:
                b.split(rid, u, AxisType.UPCAST)
            room = limit // b.group()
            if (k := _divisor(b.size(rid), TILE_LOCAL, room)) is not None:
                b.split(rid, k, AxisType.LOCAL)
        rid = reduces[-1].arg.id
        if (k := _divisor(b.size(rid), TILE_UNROLL, b.size(rid))) is not None:
            b.split(rid, k, AxisType.UNROLL)
        return b.opts
    if outputs and target.vector_bytes and len(sink.toposort()) <= MAX_VECTOR_BODY:
        # each work-item a vector of neighbouring outputs where every store is contiguous in the innermost axis
        lanes = _vector_lanes(sink, b.by_id(outputs[-1]), target.vector_bytes)  # type: ignore[arg-type]
        if lanes > 1 and b.size(outputs[-1]) % lanes == 0 and b.size(outputs[-1]) > lanes:
            b.split(outputs[-1], lanes, AxisType.UPCAST)
    for rid in outputs[::-1]:  # innermost outputs first, until the group is full
        room = limit // b.group()
        if room < 2:
            break
        k = _divisor(b.size(rid), _group_sizes(room, target.group_multiple), room)
        pad = 1 << (min(room, PAD_GROUP).bit_length() - 1)
        if (k is None or k < pad // 4) and b.size(rid) >= 2 * pad and not reduces and b.padto(rid, pad):
            k = pad  # an awkward size (a prime): padded to whole groups, the padded work-items store nothing
        if k is not None:
            b.split(rid, k, AxisType.LOCAL)
    return b.opts


def tc_opts(sink: UOp, target: Target) -> list[Opt]:
    """TC on the kernel's largest reduce axis that fits, then more WMMAs per warp and a few warps per group; [] where
    TC does not apply (dtypes, not a matmul) or its padding would waste too much (TC_MAX_PAD)."""
    reduces = sorted((r for r in axes(sink) if r.arg.axis_type is AxisType.REDUCE), key=lambda r: -(bound(r) or 0))
    for r in reduces:
        opt = Opt(OptOps.TC, axes(sink).index(r), TCArg())
        try:
            found = match_tc(sink, opt, target)
            if any(_pad_ratio(_size(sink, rid), t) > TC_MAX_PAD for rid, t in zip(found.ids, found.tc.dims)):
                continue
            k = apply_opt(sink, opt, target)
            check_gpu_limits(k, opt, target)
        except OptError:
            continue
        b = _Builder(k, target)
        b.opts = [opt]
        for which, amounts in TC_UPCAST:
            rid = found.ids[which]
            if (u := _divisor(b.size(rid), amounts, b.size(rid))) is not None:
                b.split(rid, u, AxisType.UPCAST)
        for rid in found.ids[1::-1]:  # N, then M
            if b.group() * 2 <= TC_WARPS and b.size(rid) % 2 == 0 and b.size(rid) > 2:  # LOCAL: warps
                b.split(rid, 2, AxisType.LOCAL)
        return b.opts
    return []


def _size(sink: UOp, rid: int) -> int:
    return next(bound(r) or 0 for r in axes(sink) if r.arg.id == rid)


def _pad_ratio(size: int, tile: int) -> float:
    """How much bigger padding to a multiple of tile makes an axis of `size`."""
    return -(-size // tile) * tile / max(size, 1)
