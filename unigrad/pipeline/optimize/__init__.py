"""Optimize: OptOps on a kernel's RANGE axes (opts.py), chosen by hand-coded heuristics (heuristic.py)."""

from __future__ import annotations

from unigrad import config
from unigrad.ir.args import KernelInfo
from unigrad.ir.uop import UOp
from unigrad.pipeline.optimize.heuristic import hand_coded_opts
from unigrad.pipeline.optimize.opts import Opt, OptError, OptOps, apply_opt, apply_opts, axes

__all__ = ["Opt", "OptError", "OptOps", "apply_opt", "apply_opts", "axes", "optimize"]


def optimize(sink: UOp, threads: int) -> UOp:
    """Kernel SINK -> the same kernel with opts applied: the ones already recorded in its KernelInfo (replayed),
    else the hand-coded heuristics (none with NOOPT=1)."""
    info = sink.arg if isinstance(sink.arg, KernelInfo) else None
    if info is not None and info.opts:
        return apply_opts(sink.replace(arg=KernelInfo(info.name)), info.opts)
    if config.NOOPT.value:
        return sink
    if config.BEAM.value:
        raise NotImplementedError("BEAM search is not implemented yet: unset BEAM to use the hand-coded opts")
    return apply_opts(sink, hand_coded_opts(sink, threads))
