"""Hand-coded CPU opts: which OptOps to apply to a kernel when no search (BEAM) is asked for.

In: a kernel SINK from rangeify and the number of threads. Out: the list of Opts (apply_opts applies them).
  - a THREAD axis split off the outermost output loop, one chunk per core, when the kernel is big enough
    to pay for a dispatch (elementwise and matmul results stay bit-identical: each output is computed by
    the same code in one thread);
  - matmul-like kernels (a reduce under two or more output axes): register tiling, the two innermost
    output axes upcast (8 x 16 accumulators) and the reduce loop kept whole;
  - other reductions: split accumulators (the innermost reduce axis unrolled into independent partial sums);
  - elementwise kernels: the innermost output axis upcast by one vector's lanes where the store is contiguous
    in it (isel's vector selection makes the lanes one vector op; render/c.py renders vector types).
"""

from __future__ import annotations

import math

from unigrad.ir.args import AxisType
from unigrad.ir.ops import Ops
from unigrad.ir.symbolic import split_terms
from unigrad.ir.uop import UOp
from unigrad.pipeline.expand import chain_tops, end_chain
from unigrad.pipeline.optimize.opts import Opt, OptOps, axes, bound

MIN_THREAD_WORK = 1 << 16  # iterations (outputs x reduce size) below which one thread is faster
# elementwise: iterations per thread chunk at most; the pool hands chunks out as cores free up, so a core slowed by
# other work gets fewer (measured 2-4% faster on the 16M elementwise chain than one chunk per core)
CHUNK_WORK = 1 << 19
SPLIT_ACC = 32  # independent accumulators of a reduction
# matmul register tile: (output axis counted from the innermost, amounts to try, largest first); 8 x 16 measured
# best of the tiles the scalar accumulators allow (bench/suite.py, matmul 1024 on this 2-core Zen 5)
TILE = ((1, (8, 4, 2)), (0, (16, 8, 4)))
MAX_TILE_BODY = 4096  # UOps of the reduce body times its upcast copies: bigger tiles only slow the C compiler
VECTOR_BYTES = 64  # the CPU target's vector register (render/c.py CLanguage.vector_bytes: AVX-512)
MAX_VECTOR_BODY = 256  # UOps of an elementwise body upcast to a vector: expand copies it once per lane


def _output_chain(sink: UOp) -> list[UOp]:
    """Output ranges of the kernel's (first) store, outermost first."""
    tops = chain_tops(sink.toposort())
    return end_chain(tops[0])[1] if tops else []


def _vector_lanes(sink: UOp, r: UOp) -> int:
    """Lanes of one vector of the kernel's stored dtype when every store is contiguous in r (stride 1), else 0."""
    stores = [u for u in sink.toposort() if u.op is Ops.STORE]
    if not stores or any(len(st.src[0].src) != 2 for st in stores):
        return 0
    itemsize = max(st.src[1].dtype.itemsize for st in stores)
    for st in stores:
        terms, _ = split_terms(st.src[0].src[1])
        if dict(terms).get(r) != 1:
            return 0
    return VECTOR_BYTES // itemsize


def hand_coded_opts(sink: UOp, threads: int) -> list[Opt]:
    rs = axes(sink)
    if any(bound(r) is None for r in rs):
        return []  # symbolic sizes: leave the loops as they are
    outputs = [r for r in _output_chain(sink) if r.arg.axis_type is AxisType.LOOP]
    reduces = [r for r in rs if r.arg.axis_type is AxisType.REDUCE]
    work = math.prod(bound(r) or 1 for r in rs)
    opts: list[Opt] = []
    sizes = {rs.index(r): bound(r) or 0 for r in rs}  # current size of each axis as opts split them

    def split(r: UOp, amount: int, kind: AxisType, top: bool = False) -> None:
        i = rs.index(r)
        opts.append(Opt(OptOps.SPLIT, i, (amount, kind, top)))
        sizes[i] //= amount

    if reduces and len(outputs) >= 2 and work >= MIN_THREAD_WORK:
        body = max(len(u.src[0].toposort()) for u in sink.toposort() if u.op is Ops.REDUCE)
        copies = 1
        for pos, amounts in TILE:  # register tiling: upcast the innermost output axes
            r = outputs[-1 - pos]
            size = sizes[rs.index(r)]
            fits = (a for a in amounts if size % a == 0 and size > a and body * copies * a <= MAX_TILE_BODY)
            if (amount := next(fits, None)) is not None:
                split(r, amount, AxisType.UPCAST)
                copies *= amount
    elif reduces:
        r = reduces[-1]
        if sizes[rs.index(r)] % SPLIT_ACC == 0 and sizes[rs.index(r)] >= 4 * SPLIT_ACC:
            split(r, SPLIT_ACC, AxisType.UNROLL)
    elif outputs and work >= MIN_THREAD_WORK and len(sink.toposort()) <= MAX_VECTOR_BODY:
        r = outputs[-1]
        lanes = _vector_lanes(sink, r)
        if lanes > 1 and sizes[rs.index(r)] % lanes == 0 and sizes[rs.index(r)] > lanes:
            split(r, lanes, AxisType.UPCAST)
    if threads > 1 and outputs and work >= MIN_THREAD_WORK:
        n = sizes[rs.index(outputs[0])]
        # one chunk per core (elementwise: chunks of at most CHUNK_WORK), or the fewest chunks (up to 4x as many)
        # that divide the outermost loop evenly
        want = threads if reduces else max(threads, work // CHUNK_WORK)
        chunks = next((k for k in range(want, 4 * want + 1) if n % k == 0), None)
        if chunks is not None:
            split(outputs[0], chunks, AxisType.THREAD, top=True)
    return opts
