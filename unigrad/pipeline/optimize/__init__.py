"""Optimize: OptOps on a kernel's RANGE axes (opts.py), chosen by hand-coded heuristics (heuristic.py) or by
BEAM search (search.py).

In: a kernel SINK from rangeify. Out: the same computation over new ranges, the opts applied recorded in its
KernelInfo (they replay, print at DEBUG=3, and are part of every cache key as the SINK itself).
"""

from __future__ import annotations

from unigrad import config
from unigrad.ir.args import KernelInfo
from unigrad.ir.uop import UOp
from unigrad.pipeline.optimize.heuristic import hand_coded_opts
from unigrad.pipeline.optimize.opts import Opt, OptError, OptOps, Target, apply_opt, apply_opts, axes
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
]


def optimize(sink: UOp, target: Target, measure: Measure | None = None) -> UOp:
    """Kernel SINK -> the same kernel with opts applied, the first that applies of:
    - the opts already recorded in its KernelInfo (replayed);
    - none with NOOPT=1;
    - with BEAM=n and a `measure` (the runtime's timer of candidate kernels, runtime/beam.py): the fastest
      kernel a beam search of width n finds;
    - the hand-coded heuristics for `target` (also with BEAM=n but no way to time candidates)."""
    info = sink.arg if isinstance(sink.arg, KernelInfo) else None
    if info is not None and info.opts:
        return apply_opts(sink.replace(arg=KernelInfo(info.name)), info.opts)
    if config.NOOPT.value:
        return sink
    if config.BEAM.value and measure is not None:
        return beam_search(sink, target.threads, int(config.BEAM.value), measure)
    return apply_opts(sink, hand_coded_opts(sink, target))
