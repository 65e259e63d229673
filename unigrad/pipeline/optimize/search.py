"""BEAM search: choose a kernel's opts by timing candidates instead of by the hand-coded heuristics.

In: a kernel SINK from rangeify (no opts applied), the Target, the beam width and `measure`, a callback
from the runtime that times candidate kernels on the device (this stage cannot run anything itself).
Out: the fastest kernel found, opts applied and recorded in its KernelInfo (so they replay and cache).

Each round applies every action (one Opt from `actions`) to every kernel in the beam; illegal ones (OptError)
and candidates too big to compile quickly are skipped, and candidates whose body another candidate already
has are timed once. The `width` fastest form the next beam. The search stops when a round finds nothing
faster than the best so far, or after MAX_ROUNDS rounds.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

from unigrad.ir.args import AxisType, KernelInfo
from unigrad.ir.uop import UOp
from unigrad.pipeline.expand import EXPANDED
from unigrad.pipeline.optimize.opts import Opt, OptError, OptOps, Target, apply_opt, axes, bound, check_gpu_limits
from unigrad.pipeline.optimize.tensor_cores import TCArg

# measure(candidates) -> seconds per candidate (math.inf for one that failed to compile or run)
Measure = Callable[[list[UOp]], list[float]]

MAX_AXES = 8  # actions address axes 0..MAX_AXES-1; kernels with more keep their later axes as they are
UPCAST_AMOUNTS = (2, 3, 4, 8, 16)  # register tiles of an output axis
UNROLL_AMOUNTS = (2, 4, 8, 16, 32)  # split accumulators of a reduce axis
GROUP_AMOUNTS = (2, 4, 8, 16, 32, 64, 128, 256)  # work-items a LOCAL/GROUP_REDUCE split gives a group (GPU)
MAX_ROUNDS = 5  # opts added at most: bounds the search of a kernel to a few seconds
MAX_BODY = 4096  # UOps of the kernel times its UPCAST/UNROLL copies: bigger candidates compile too slowly
MIN_GAIN = 0.99  # a round must beat the best time by 1% to go on (timings are noisy)


@functools.cache
def actions(threads: int, gpu: bool = False) -> tuple[Opt, ...]:
    """The action space: every Opt a round tries on a kernel (most are illegal for a given kernel and skipped).
    A GPU's adds work-group splits (LOCAL from an output axis, GROUP_REDUCE from a reduce axis) and has no THREAD."""
    out: list[Opt] = []
    for axis in range(MAX_AXES):
        out += [Opt(OptOps.SPLIT, axis, (k, AxisType.UPCAST, False)) for k in UPCAST_AMOUNTS]
        out += [Opt(OptOps.SPLIT, axis, (k, AxisType.UNROLL, False)) for k in UNROLL_AMOUNTS]
        if threads > 1 and not gpu:  # one chunk per core, or two (uneven work per chunk evens out)
            out += [Opt(OptOps.SPLIT, axis, (k, AxisType.THREAD, True)) for k in (threads, 2 * threads)]
        if gpu:
            out += [Opt(OptOps.SPLIT, axis, (k, AxisType.LOCAL, False)) for k in GROUP_AMOUNTS]
            out += [Opt(OptOps.SPLIT, axis, (k, AxisType.GROUP_REDUCE, top)) for k in GROUP_AMOUNTS for top in (0, 1)]
        out += [Opt(OptOps.SWAP, axis, other) for other in range(axis + 1, MAX_AXES)]
    return tuple(out)


def _small_enough(sink: UOp) -> bool:
    """Whether a candidate's expanded body stays within MAX_BODY UOps."""
    copies = math.prod(bound(r) or 1 for r in axes(sink) if r.arg.axis_type in EXPANDED)
    return copies * len(sink.toposort()) <= MAX_BODY


def candidates(sink: UOp, target: Target) -> list[UOp]:
    """`sink` with each legal action applied: one candidate kernel per action (illegal actions, and on a GPU those
    over its limits, are skipped)."""
    out: list[UOp] = []
    tc: tuple[Opt, ...] = ()
    if target.tensor_cores and not (isinstance(sink.arg, KernelInfo) and sink.arg.opts):  # TC comes first or never
        tc = tuple(Opt(OptOps.TC, i, TCArg()) for i, r in enumerate(axes(sink)) if r.arg.axis_type is AxisType.REDUCE)
    for opt in tc + actions(target.threads, target.gpu):
        try:
            c = apply_opt(sink, opt, target)
            if target.gpu:
                check_gpu_limits(c, opt, target)
        except OptError:
            continue
        out.append(c)
    return [c for c in out if _small_enough(c)]


def beam_search(sink: UOp, target: Target, width: int, measure: Measure) -> UOp:
    """The fastest of the kernels reachable from `sink` by a few actions, as `measure` times them.

    In: a kernel SINK without opts. Out: the chosen kernel with its opts applied (KernelInfo.opts records them);
    `sink` itself when no candidate is faster."""
    best_time, best = measure([sink])[0], sink
    beam = [sink]
    seen = {sink.src}  # kernel bodies already timed: the same body reached by other opts is not timed again
    for _ in range(MAX_ROUNDS):
        fresh: list[UOp] = []
        for k in beam:
            for c in candidates(k, target):
                if c.src not in seen:
                    seen.add(c.src)
                    fresh.append(c)
        if not fresh:
            break
        timed = sorted(zip(measure(fresh), fresh, strict=True), key=lambda tc: tc[0])
        timed = [(t, c) for t, c in timed if math.isfinite(t)]
        if not timed or timed[0][0] >= best_time * MIN_GAIN:
            break
        best_time, best = timed[0]
        beam = [c for _, c in timed[:width]]
    return best
