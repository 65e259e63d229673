"""Optimize: OptOps on a kernel's RANGE axes (opts.py), chosen by hand-coded heuristics (heuristic.py) or by
BEAM search (search.py).

In: a kernel SINK from rangeify. Out: the same computation over new ranges, the opts applied recorded in its
KernelInfo (they replay, print at DEBUG=3, and are part of every cache key as the SINK itself).
"""

from __future__ import annotations

from unigrad import config
from unigrad.ir.args import AxisType, KernelInfo
from unigrad.ir.uop import UOp
from unigrad.pipeline.optimize.heuristic import hand_coded_opts
from unigrad.pipeline.optimize.heuristic_gpu import gpu_opts
from unigrad.pipeline.optimize.local_buffers import group_reduces_to_locals
from unigrad.pipeline.optimize.merge_axes import merge_output_axes
from unigrad.pipeline.optimize.opts import Opt, OptError, OptOps, Target, apply_opt, apply_opts, axes, replace_ranges
from unigrad.pipeline.optimize.search import Measure, beam_search

__all__ = [
    "Measure",
    "Opt",
    "OptError",
    "OptOps",
    "Target",
    "apply_opt",
    "apply_opts",
    "axes",
    "beam_search",
    "optimize",
    "to_global_axes",
]


def optimize(sink: UOp, target: Target, measure: Measure | None = None) -> UOp:
    """Kernel SINK -> the same kernel with opts applied, the first that applies of:
    - the opts already recorded in its KernelInfo (replayed);
    - none with NOOPT=1;
    - with BEAM=n and a `measure` (the runtime's timer of candidate kernels, runtime/beam.py): the fastest
      kernel a beam search of width n finds;
    - the hand-coded heuristics for `target` (also with BEAM=n but no way to time candidates).
    The last three first merge the adjacent output axes every index sees as one (merge_axes.py).
    On a GPU target the output axes are GLOBAL first (to_global_axes), every opt is checked against the device's
    limits, and GROUP_REDUCE axes go through LOCAL buffers last (local_buffers.py)."""
    info = sink.arg if isinstance(sink.arg, KernelInfo) else None
    if info is None or not info.opts:  # recorded opts name rangeify's axes
        sink = merge_output_axes(sink)  # (6, 11) rows seen only as 11*i + j: one axis of 66 (merge_axes.py)
    if target.gpu:
        sink = to_global_axes(sink)
    if info is not None and info.opts:
        out = apply_opts(sink.replace(arg=KernelInfo(info.name, (), info.outputs)), info.opts, target)
    elif config.NOOPT.value:
        out = sink
    elif config.BEAM.value and measure is not None:
        timed = measure if not target.gpu else (lambda ks: measure([group_reduces_to_locals(k) for k in ks]))
        out = beam_search(sink, target, int(config.BEAM.value), timed)
    else:
        out = apply_opts(sink, (gpu_opts if target.gpu else hand_coded_opts)(sink, target), target)
    return group_reduces_to_locals(out) if target.gpu else out


def to_global_axes(sink: UOp) -> UOp:
    """A kernel's LOOP ranges (rangeify's output axes) as GLOBAL ranges: a GPU runs them as work-groups."""
    loops = [r for r in axes(sink) if r.arg.axis_type is AxisType.LOOP]
    if not loops:
        return sink
    new = {r: UOp.range(r.src[0], r.arg.id, AxisType.GLOBAL) for r in loops}
    return replace_ranges(sink, new, {r: (g,) for r, g in new.items()})
