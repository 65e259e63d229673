"""Hand-coded CPU opts: which OptOps to apply to a kernel when no search (BEAM) is asked for.

In: a kernel SINK from rangeify and the Target (threads, vector width and registers). Out: the list of Opts
(apply_opts applies them).
  - a THREAD axis split off the outermost output loop, one chunk per core, when the kernel is big enough
    to pay for a dispatch (elementwise and matmul results stay bit-identical: each output is computed by
    the same code in one thread);
  - matmul-like kernels (a reduce under two or more output axes, and a load the tile reuses: `_tile_reuses`):
    register tiling (`_register_tile`): vector lanes on the innermost output and a second axis chosen by load reuse
    (matmul m x n, convolution co x ow), rows padded to a whole tile (PADTO: padded rows read the last row, their
    stores gated); when the innermost output takes no whole vector, it is padded to whole vectors where the target
    has masked tails and that adds little (a 1000-word decoder), else a scalar tile of two outer
    output axes with complementary reuse (convolution co x batch), or,
    when the innermost output takes no vector (a weight gradient's kernel width) or its loads would gather the lanes
    from rows apart (x @ W.T: W contiguous along the reduce axis), lanes on the reduce axis (split accumulators)
    beside a small output tile, its rows padded to one; the reduce loop kept whole; a B panel too big for the cache is
    cut into blocks whose loop runs outermost (`_panel_blocks`);
  - column reductions (x.sum(0): the loads contiguous in the innermost output, not in the reduce axis): vector
    lanes on that output axis, the reduce loop whole (`_column_lanes`);
  - other reductions: split accumulators (the innermost reduce axis unrolled into independent partial sums;
    fewer when a gated or bool load keeps the kernel scalar and its body is big; a cheap body's row that is no
    multiple of them padded to one, the padding read as the identity); a short row reduction (a row max, a
    matrix-vector product) takes a few rows at once, one vector of accumulators each (`_reduce_rows`);
  - elementwise kernels: the innermost output axis upcast by one vector's lanes where the store is contiguous
    in it (isel's vector selection makes the lanes one vector op; render/c.py renders vector types), or, for a
    transpose, the axis the loads are contiguous in (`_transpose_axis`), beside a few rows of the store's axis;
    an axis that is no multiple of the lanes is padded to one first (PADTO) where the target renders the gated
    last vector as a masked tail (Target.masked_tails: the C renderer).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from unigrad.dtype import dtypes
from unigrad.ir.args import AxisType
from unigrad.ir.ops import TRANSCENDENTAL_OPS, GroupOp, Ops
from unigrad.ir.symbolic import simplify, split_terms
from unigrad.ir.uop import UOp
from unigrad.pipeline.decomp.transcendental import is_cheap_pow
from unigrad.pipeline.expand import chain_tops, end_chain
from unigrad.pipeline.optimize.opts import Opt, OptOps, Target, axes, bound

MIN_THREAD_WORK = 1 << 16  # iterations (outputs x reduce size) below which one thread is faster
# elementwise and plain reductions: iterations per thread chunk at most; the pool hands chunks out as cores free up,
# so a core slowed by other work (or woken late) gets fewer (measured 2-4% faster on the 16M elementwise chain than
# one chunk per core)
CHUNK_WORK = 1 << 19
# a transcendental in the body (a decomposition of tens of ops) counts as this many more iterations per element
# toward MIN_THREAD_WORK: an LSTMCell's 97 x 51 float64 cell math with 6 exps per element ran 105 us on one core
COSTLY_ITERATIONS = 4
SPLIT_ACC = 32  # independent accumulators of a reduction
# ... a rounding sum reduced a few rows at a time (one vector of accumulators per row) adds at most this many values
# into one accumulator, as 32 accumulators do over a 4096 row (a max is exact in any order: no limit)
MAX_CHAIN = 128
# ... fewer when a gated load (padding) or a bool load keeps the kernel scalar (isel does not vectorize it; gcc's
# own vectorizer does, for a small body): its C is one copy of the body per accumulator, held under SCALAR_BODY (a
# 40-op body with sines over a padded row was 10k lines and 7 s of gcc). A transcendental counts TRANSCENDENTAL_OPS
# (its decomposition)
SCALAR_BODY = 2048
THREEFRY_OPS = 100  # the ops of a THREEFRY's 20 add-rotate-xor rounds (a dropout mask's random bits)
# matmul register tile: amounts to try (largest first) for the outer and the inner (vector) axis, the first whose
# accumulators fit in half the vector registers: 8 x 16 floats on AVX-512 (8 of 32 zmm), 4 x 16 on AVX2 (8 of 16
# ymm; 8 x 16 spills), each measured best of the tiles these amounts allow (bench/suite.py, matmul 1024 on a 2-core
# Zen 5 and a 2-core Zen 3)
TILE_OUTER = (8, 4, 2)
TILE_INNER = (16, 8, 4)
PAD_WASTE = 8  # a register tile's rows are padded to a whole tile when that adds at most 1/PAD_WASTE of the rows
TILE_SMALL = (4, 2)  # output axes tiled beside vector lanes on a reduce axis (split accumulators)
# amounts for the first and second output axis of a tile without vector lanes (Zen 3, a (64, 3, 32, 32) by (16, 3, 5, 5)
# convolution: co 8 x batch 4 6.0 ms against 10.9 for co 8 x 4 lanes of ow; 30-wide rows 334 -> 36 ms)
SCALAR_TILE = ((8, 4, 2), (4, 2))
PANEL_BYTES = 4 << 20  # a matmul's B panel over this is cut into blocks (this machine: 1 MiB L2 per core, 32 MiB L3)
# UOps of the kernel (a transcendental counting its decomposition) times the tile's copies: the tile copies the
# whole body, the elementwise math after the reduce too (an LSTM's gate backward under its h @ W_hh: 2.5k ops upcast
# 32x was 4.4 MB of C, 36-76 s of gcc); bigger tiles only slow the C compiler
MAX_TILE_BODY = 16384
TRANSPOSE_STRIDE = 256  # a load this many elements apart along the store's contiguous axis makes a kernel a transpose
# ... whose store's contiguous axis is also upcast this much: a block of lanes x rows, each store line written several
# elements at a time (Zen 3, A/B of the same kernels: a 2048^2 transpose 7.4 -> 4.9 ms, (32, 64, 32, 32) to
# channels-last 4.2 -> 3.1 ms; 8 was better on one shape and worse on another)
TRANSPOSE_ROWS = 4
# a column reduction takes this many vectors of output lanes (the first amount dividing the axis): more independent
# accumulators per reduce step, each row's loads a few whole cache lines
COLUMN_VECTORS = (8, 4, 2, 1)
# UOps of an elementwise body upcast to a vector: expand copies it once per lane (an LSTMCell's float64 gate kernel,
# ~400 UOps with its tanh and sigmoid series: 398 -> 100 us as vectors, 0.6 s to compile; 256 kept it scalar)
MAX_VECTOR_BODY = 1024


def _output_chain(sink: UOp) -> list[UOp]:
    """Output ranges of the kernel's (first) store, outermost first."""
    tops = chain_tops(sink.toposort())
    return end_chain(tops[0])[1] if tops else []


def _vector_lanes(sink: UOp, r: UOp, vector_bytes: int) -> int:
    """Lanes of one vector of the kernel's stored dtype when every store is contiguous in r (stride 1), else 0."""
    stores = [u for u in sink.toposort() if u.op is Ops.STORE]
    if not stores or any(len(st.src[0].src) != 2 for st in stores):
        return 0
    itemsize = max(st.src[1].dtype.itemsize for st in stores)
    for st in stores:
        terms, _ = split_terms(st.src[0].src[1])
        if dict(terms).get(r) != 1:
            return 0
    return vector_bytes // itemsize


def _loads(sink: UOp) -> list[UOp]:
    return [u for u in sink.toposort() if u.op is Ops.LOAD and u.src[0].op is Ops.INDEX]


def _load_indices(sink: UOp) -> list[UOp]:
    return [u.src[0].src[1] for u in _loads(sink)]


def _transpose_axis(sink: UOp, outputs: list[UOp]) -> UOp | None:
    """For an elementwise kernel whose store is contiguous along the innermost output but some load reads it with a
    stride of TRANSPOSE_STRIDE elements or more (a transpose): the innermost other output axis along which every
    load is contiguous, else None. Lanes there read whole cache lines at once; lanes along the store's axis would
    gather from lines a page apart that all fall in one cache set (a (32, 64, 32, 32) -> (32, 32, 32, 64) copy ran
    at 5 GB/s)."""
    loads = _load_indices(sink)
    inner = outputs[-1]
    if not any(dict(split_terms(idx)[0]).get(inner, 0) >= TRANSPOSE_STRIDE for idx in loads):
        return None
    return next((r for r in reversed(outputs[:-1]) if all(_contiguous_in(idx, r) for idx in loads)), None)


def _contiguous_in(idx: UOp, r: UOp) -> bool:
    return dict(split_terms(idx)[0]).get(r) == 1


def _contiguous_in_runs(idxs: list[UOp], r: UOp, size: int, run: int) -> bool:
    """Every index is contiguous along the inner part of r split in runs of `run` (r = outer * run + inner): a reduce
    axis a reshape merged from dims apart in memory (attention's context, (heads, 32) read as one axis of 384 through
    r // 32 and r % 32) is contiguous within each run of 32, and so within runs of 16 lanes."""
    if size % run or size <= run:
        return False
    top = max(u.arg.id for idx in idxs for u in idx.toposort() if u.op is Ops.RANGE)
    outer, inner = UOp.range(size // run, top + 1, AxisType.REDUCE), UOp.range(run, top + 2, AxisType.UNROLL)
    parts = {r: outer * UOp.index_const(run) + inner}
    return all(_contiguous_in(simplify(idx.substitute(parts)), inner) for idx in idxs)


def _register_tile(
    sink: UOp, outputs: list[UOp], reduce: UOp, size_of: Callable[[UOp], int], target: Target
) -> list[tuple[UOp, int, AxisType | None]]:
    """Register tiling of a matmul-like kernel (a reduce under two or more output axes): (axis, amount, type) splits.

    Vector lanes go on the innermost output axis when the store is contiguous in it (matmul C[m, n] = A[m, k] B[k, n]:
    n); the second tile axis is then the output axis that the most loads varying along the lanes do not depend on
    (each such load then serves a whole row of the tile: matmul m; a convolution out[n, co, oh, ow] tiles co x ow,
    not oh x ow), the innermost of equals. When the innermost output cannot take lanes (a weight gradient
    dw[co, ci, kh, kw] = sum over n, oh, ow), the lanes go on the innermost reduce axis if every load is contiguous
    in it (split accumulators, one vector each), and two output axes that complement each other's reuse (co: the
    input loads do not depend on it; ci: the gradient loads do not) take a small tile. Every tile's accumulators
    (vectors) fit in half of the target's vector registers."""
    body = _kernel_body(sink)
    loads = _load_indices(sink)
    accumulators = max(1, target.vector_registers // 2)
    itemsize = _acc_itemsize(sink)

    def registers(elements: int) -> int:  # vector registers that many accumulated elements take
        return -(-elements * itemsize // target.vector_bytes) if target.vector_bytes else elements

    def fit(r: UOp, amounts: tuple[int, ...], copies: int, size: int | None = None) -> int | None:
        size = size_of(r) if size is None else size
        ok = (a for a in amounts if size % a == 0 and size > a and body * copies * a <= MAX_TILE_BODY)
        return next((a for a in ok if registers(copies * a) <= accumulators), None)

    def reuse(r: UOp, of: list[UOp]) -> frozenset[UOp]:
        return frozenset(idx for idx in of if r not in idx.toposort())

    inner = outputs[-1]
    stored_lanes = _vector_lanes(sink, inner, target.vector_bytes) > 1
    inner_lanes = fit(inner, TILE_INNER, 1) if stored_lanes else None
    full = target.vector_bytes // itemsize if target.vector_bytes else 1

    def with_inner_lanes(lanes: int) -> list[tuple[UOp, int, AxisType | None]]:
        varying = [idx for idx in loads if inner in idx.toposort()]
        order = sorted(reversed(outputs[:-1]), key=lambda r: -len(reuse(r, varying)))  # stable: innermost first
        found = [(outer, amount) for outer in order if (amount := fit(outer, TILE_OUTER, lanes)) is not None]
        if not found or found[0][1] < TILE_OUTER[0]:
            # no full-height tile divides the rows (66 = 2 x 3 x 11 tokens): rows padded up to one, when that adds
            # at most 1/PAD_WASTE of the work (a 66x384 @ 384x1536 in 2-row tiles ran at a third of 64 rows' speed)
            m = TILE_OUTER[0]
            for outer in order:
                padded = -(-size_of(outer) // m) * m
                if (padded - size_of(outer)) * PAD_WASTE <= size_of(outer) and fit(outer, (m,), lanes, padded) == m:
                    return [(outer, m, None), (outer, m, AxisType.UPCAST), (inner, lanes, AxisType.UPCAST)]
        if found:
            return [(found[0][0], found[0][1], AxisType.UPCAST), (inner, lanes, AxisType.UPCAST)]
        return [(inner, lanes, AxisType.UPCAST)]

    varying = [idx for idx in loads if reduce in idx.toposort()]
    along_reduce = bool(varying) and all(_contiguous_in(idx, reduce) for idx in varying)
    if varying and not along_reduce and (lanes := fit(reduce, TILE_INNER, 1)):
        along_reduce = _contiguous_in_runs(varying, reduce, size_of(reduce), lanes)  # the UNROLL split makes the runs
    gathers = any(inner in idx.toposort() and not _contiguous_in(idx, inner) for idx in loads)
    if inner_lanes is not None and inner_lanes >= full and not (gathers and along_reduce):
        return with_inner_lanes(inner_lanes)
    if along_reduce and (lanes := fit(reduce, TILE_INNER, 1)):
        tile: list[tuple[UOp, int, AxisType | None]] = []
        copies, taken = lanes, frozenset[UOp]()
        for r in sorted(reversed(outputs), key=lambda r: -len(reuse(r, loads))):
            if not reuse(r, loads) or reuse(r, loads) <= taken:
                continue
            m, padded = TILE_SMALL[0], -(-size_of(r) // TILE_SMALL[0]) * TILE_SMALL[0]
            amount = fit(r, TILE_SMALL, copies)
            if (amount or 0) < m and (padded - size_of(r)) * PAD_WASTE <= size_of(r) and fit(r, (m,), copies, padded):
                tile.append((r, m, None))  # padded to a whole tile (66 tokens -> 68), its padded rows' stores gated
                amount = m
            if amount:
                tile.append((r, amount, AxisType.UPCAST))
                copies, taken = copies * amount, taken | reuse(r, loads)
        return [*tile, (reduce, lanes, AxisType.UNROLL)]

    def padded_lanes() -> list[tuple[UOp, int, AxisType | None]]:
        # lanes of half a vector are scalar code (a 1000-wide output in 8 lanes ran at 24 GFLOP/s): padded to whole
        # vectors, the last one's lanes past the end gated, when that adds at most 1/PAD_WASTE of the columns
        padded = -(-size_of(inner) // full) * full
        if not target.masked_tails or padded <= full or (padded - size_of(inner)) * PAD_WASTE > size_of(inner):
            return []
        return [(inner, full, None), *with_inner_lanes(full)] if fit(inner, (full,), 1, padded) == full else []

    if inner_lanes is not None and (tile := padded_lanes()):
        return tile
    # the innermost output takes no whole vector (a convolution's 28- or 30-wide rows): a tile of two outer output
    # axes with complementary reuse, the one reusing a load no other axis reuses first (convolution: co, whose 8
    # outputs share each input load, then the batch, whose 4 share each weight load)
    others = outputs[:-1]
    sharing = {r: sum(reuse(o, loads) == reuse(r, loads) for o in others) for r in others}
    scalar: list[tuple[UOp, int, AxisType]] = []
    copies, taken = 1, frozenset[UOp]()
    for r in sorted(others, key=lambda r: sharing[r]):  # stable: outermost of equals
        if reuse(r, loads) and not reuse(r, loads) <= taken and (amount := fit(r, SCALAR_TILE[len(scalar)], copies)):
            scalar.append((r, amount, AxisType.UPCAST))
            copies, taken = copies * amount, taken | reuse(r, loads)
            if len(scalar) == len(SCALAR_TILE):
                return scalar
    if inner_lanes is not None:
        return with_inner_lanes(inner_lanes)
    # no lanes divide the innermost output and no scalar tile fits (g @ W_hh of an LSTMCell: 97 x 51 outputs):
    # padded to whole vectors where the target has masked tails (a scalar dot product per output: 3 GFLOP/s)
    return padded_lanes() if stored_lanes else []


def _tile_reuses(sink: UOp, outputs: list[UOp], reduce: UOp) -> bool:
    """Some load that varies along the reduce axis does not depend on some output axis (matmul: A[m, k] is the same
    for every n), so a register tile over the outputs loads it once for several of them. Without that (a row mean
    of a (16, 512, 768) tensor: every element read once) the kernel is a plain reduction: a tile would only turn
    its contiguous row loads into gathers a row apart (layernorm's mean and variance: 3.2 ms at 8 GB/s)."""
    varying = [idx.toposort() for idx in _load_indices(sink) if reduce in idx.toposort()]
    return any(r not in topo for topo in varying for r in outputs)


def _panel_blocks(sink: UOp, tile: list[tuple[UOp, int, AxisType]], size_of: Callable[[UOp], int]) -> int | None:
    """Cache blocking of a big matmul: how many blocks to cut the tile's inner (vector) axis into, the block loop
    moved outermost, or None. Each row of tiles sweeps the whole panel of the loads that do not depend on the outer
    tile axis (matmul: all of B); when that panel is over PANEL_BYTES, blocks of the inner axis keep one block's
    panel in cache across all rows (2048^3 matmul, packed B: 147 -> 90 ms)."""
    if len(tile) != 2 or tile[1][2] is not AxisType.UPCAST:
        return None
    (outer, _, _), (inner, _, _) = tile
    sizes: dict[UOp, int] = {}
    for load in _loads(sink):
        rs = [u for u in load.src[0].src[1].toposort() if u.op is Ops.RANGE]
        if inner in rs and outer not in rs:
            sizes[load] = math.prod(bound(r) or 1 for r in rs) * load.dtype.itemsize
    panel = max(sizes.values(), default=0)
    if panel <= PANEL_BYTES:
        return None
    want = -(-panel // PANEL_BYTES)
    n = size_of(inner)
    return next((k for k in range(want, n) if n % k == 0), None)


def _acc_itemsize(sink: UOp) -> int:
    """Bytes of one accumulated element (the widest REDUCE dtype of the kernel)."""
    return max(u.dtype.itemsize for u in sink.toposort() if u.op is Ops.REDUCE)


def _reduce_rows(
    sink: UOp, outputs: list[UOp], reduce: UOp, target: Target, size_of: Callable[[UOp], int]
) -> tuple[UOp, int] | None:
    """(axis, rows) for a row reduction (every load varying along the reduce axis is contiguous in it, and the
    innermost output picks the row of one of them: a row sum, a matrix-vector product): that many rows reduced
    together, each in one vector of split accumulators, SPLIT_ACC accumulators in all (AVX2: 4 rows of 8; AVX-512:
    2 of 16). Independent rows beside each other give the loop more parallel work and their horizontal sums are one
    vector each: a 512 x 128 row max 32 -> 17 us, a 4096 x 4096 row sum 4.8 -> 3.8 ms on one Zen 3 core, against 32
    accumulators in one row."""
    lanes = target.vector_bytes // _acc_itemsize(sink)
    if not outputs or lanes < 2 or SPLIT_ACC % lanes or SPLIT_ACC // lanes < 2:
        return None
    topo = sink.toposort()
    if any(_costly(u) for u in topo):
        return None  # a compute-bound body (softmax's sum of exp) ran 2% slower in rows than along one row
    if size_of(reduce) // lanes > MAX_CHAIN and any(u.op is Ops.REDUCE and u.arg.op is not Ops.MAX for u in topo):
        return None  # a long sum keeps SPLIT_ACC accumulators per row: fewer, each adds more, and rounds more
    varying = [idx for idx in _load_indices(sink) if reduce in idx.toposort()]
    row, rows = outputs[-1], SPLIT_ACC // lanes
    if not all(_contiguous_in(idx, reduce) for idx in varying) or not any(row in idx.toposort() for idx in varying):
        return None
    return (row, rows) if size_of(row) % rows == 0 and size_of(row) > rows else None


def _column_lanes(
    sink: UOp, outputs: list[UOp], reduce: UOp, target: Target, size_of: Callable[[UOp], int]
) -> int | None:
    """Lanes on the innermost output axis of a column reduction (x.sum(0) of a row-major matrix: every load varying
    along the reduce axis is contiguous in the innermost output instead, and so is the store), or None. Each step of
    the reduce loop then adds COLUMN_VECTORS whole vectors of one row into as many accumulator vectors, one per
    output lane, in the unoptimized kernel's order; split accumulators along the reduce axis would load one scalar
    per row, a row apart (a 2048^2 column sum ran 17 ms, 22x torch's time). Reductions side by side (a gradient
    summed in chunks) are checked alike."""
    if not outputs:
        return None
    inner = outputs[-1]
    lanes = _vector_lanes(sink, inner, target.vector_bytes)
    reduces = [r for r in axes(sink) if r.arg.axis_type is AxisType.REDUCE] or [reduce]
    varying = []  # (a load's index, the reductions it varies along, whether it varies along the lanes)
    for idx in _load_indices(sink):
        topo = idx.toposort()
        if own := [r for r in reduces if r in topo]:
            varying.append((idx, own, inner in topo))
    # (a load the lanes do not vary, a bias gradient's x[b, t] beside g_t[b, j], is one scalar for every lane)
    if (
        lanes < 2
        or not any(across for _, _, across in varying)
        or not all(
            (_contiguous_in(idx, inner) or not across) and not any(_contiguous_in(idx, r) for r in own)
            for idx, own, across in varying
        )
    ):
        return None
    # (a width no whole vectors divide stays scalar: padded, 25 chunks of a gate gradient's 204 columns were 168 kB
    # of lane-by-lane gated loads and 4 s of gcc for a 1 ms gain)
    size = size_of(inner)
    return next((k * lanes for k in COLUMN_VECTORS if size % (k * lanes) == 0 and size > k * lanes), None)


def _costly(u: UOp) -> bool:
    """A transcendental op (a decomposition of tens of ops); x**2 and the like are a multiply or two."""
    return u.op in GroupOp.Transcendental and not is_cheap_pow(u)


def _stays_scalar(sink: UOp, lanes_on: UOp | None = None) -> bool:
    """The kernel's lanes will stay scalar copies: a gated load (padding), or a load or store of bools (isel's
    vector selection takes neither), so an UPCAST or UNROLL copies the body once per lane into the C source.
    lanes_on: the axis the lanes would take, on a target that renders gated vector loads (masked_tails); a gate that
    does not depend on it is one bool for all lanes, a vector load or none (the pieces of a cat, or the gradient of
    35 slices of a (35, 20, 256) tensor summed as pads: scalar, 35 gated loads per element took 1.7 ms)."""
    return any(
        (u.op is Ops.LOAD and (u.dtype is dtypes.bool or (len(u.src) == 3 and _lane_gate(u.src[2], lanes_on))))
        or (u.op is Ops.STORE and u.src[1].dtype is dtypes.bool)
        for u in sink.toposort()
    )


def _lane_gate(gate: UOp, lanes_on: UOp | None) -> bool:
    """A gate that may differ between the lanes of lanes_on (any gate when there is no such axis)."""
    return lanes_on is None or lanes_on in gate.toposort()


def _kernel_body(sink: UOp) -> int:
    """UOps of the kernel, a transcendental counting TRANSCENDENTAL_OPS and a THREEFRY THREEFRY_OPS (their
    decompositions): what each copy of the body an UPCAST or UNROLL makes costs the C compiler."""
    return sum(
        THREEFRY_OPS if u.op is Ops.THREEFRY else TRANSCENDENTAL_OPS if _costly(u) else 1 for u in sink.toposort()
    )


def _scalar_copies(sink: UOp) -> int:
    """Accumulators (a power of two up to SPLIT_ACC) whose scalar copies of the body stay under SCALAR_BODY."""
    body = _kernel_body(sink)
    acc = SPLIT_ACC
    while acc > 1 and body * acc > SCALAR_BODY:
        acc //= 2
    return acc


def hand_coded_opts(sink: UOp, target: Target) -> list[Opt]:
    """The opts for a kernel on `target` (see the module docstring); [] for symbolic sizes."""
    threads = target.threads
    rs = axes(sink)
    if any(bound(r) is None for r in rs):
        return []  # symbolic sizes: leave the loops as they are
    outputs = [r for r in _output_chain(sink) if r.arg.axis_type is AxisType.LOOP]
    reduces = [r for r in rs if r.arg.axis_type is AxisType.REDUCE]
    work = _work(sink, rs)
    costly = sum(_costly(u) for u in sink.toposort())  # transcendentals in the body
    opts: list[Opt] = []
    blocks: int | None = None
    whole: list[bool] = []
    sizes = {rs.index(r): bound(r) or 0 for r in rs}  # current size of each axis as opts split them

    def split(r: UOp, amount: int, kind: AxisType, top: bool = False) -> None:
        i = rs.index(r)
        opts.append(Opt(OptOps.SPLIT, i, (amount, kind, top)))
        sizes[i] //= amount
        whole.append(sizes[i] == 1)  # a part of size 1 is no axis: later axis indices shift

    matmul_like = bool(reduces) and len(outputs) >= 2 and _tile_reuses(sink, outputs, reduces[-1])
    if matmul_like:  # register tiles pay at any size (threads do not)
        tile = _register_tile(sink, outputs, reduces[-1], lambda r: sizes[rs.index(r)], target)
        for r, amount, kind in tile:
            if kind is None:  # PADTO a multiple of amount first (the padded rows are computed, not stored)
                opts.append(Opt(OptOps.PADTO, rs.index(r), amount))
                sizes[rs.index(r)] = -(-sizes[rs.index(r)] // amount) * amount
            else:
                split(r, amount, kind)
        tile = [t for t in tile if t[2] is not None]
        blocks = _panel_blocks(sink, tile, lambda r: sizes[rs.index(r)])
    elif reduces:
        r = reduces[-1]
        rows = None
        if _stays_scalar(sink):
            acc = _scalar_copies(sink)
        elif (columns := _column_lanes(sink, outputs, r, target, lambda x: sizes[rs.index(x)])) is not None:
            acc = 1  # one accumulator per output lane: the lanes are the columns
            split(outputs[-1], columns, AxisType.UPCAST)
        elif (rows := _reduce_rows(sink, outputs, r, target, lambda x: sizes[rs.index(x)])) is not None:
            acc = SPLIT_ACC // rows[1]  # one vector of accumulators per row, SPLIT_ACC elements in all
        else:
            acc = SPLIT_ACC
        n_r = sizes[rs.index(r)]
        # (padded lanes of a costly body stay scalar copies)
        if acc > 1 and n_r % acc and n_r >= 4 * acc and target.masked_tails and not costly and not _stays_scalar(sink):
            padded = -(-n_r // acc) * acc
            if (padded - n_r) * PAD_WASTE <= n_r:
                # a row of 1000 (a vocabulary's log-softmax) in one accumulator ran at a tenth of the split speed:
                # padded to whole accumulators, the padding reads nothing and adds the reduction's identity
                opts.append(Opt(OptOps.PADTO, rs.index(r), acc))
                sizes[rs.index(r)] = padded
        if acc > 1 and sizes[rs.index(r)] % acc == 0 and sizes[rs.index(r)] >= 4 * acc:
            split(r, acc, AxisType.UNROLL)
            if rows is not None:
                split(*rows, AxisType.UPCAST)
    elif outputs and len(sink.toposort()) <= MAX_VECTOR_BODY:  # vector lanes pay at any size (threads do not)
        r = outputs[-1]
        lanes = _vector_lanes(sink, r, target.vector_bytes)
        if lanes > 1 and (other := _transpose_axis(sink, outputs)) is not None:
            r = other  # a transpose: lanes along the loads' contiguous axis, the stores scattered
        # (lanes padded to whole vectors join their gate to such a gate: isel leaves that scalar, one copy per lane)
        scalar = _stays_scalar(sink, r if target.masked_tails and sizes[rs.index(r)] % max(lanes, 1) == 0 else None)
        if scalar and _kernel_body(sink) * lanes > SCALAR_BODY:
            lanes = 0  # scalar lanes are one copy of the body each: an LSTM's gate backward (bool masks) was 6k lines
        n_r = sizes[rs.index(r)]
        if lanes > 1 and n_r % lanes and n_r > lanes and target.masked_tails and not scalar:
            # an odd size (an LSTM's 51 hidden units): padded to whole vectors, the last one's lanes past the end
            # gated (PADTO), which the renderer runs as a vector where every lane is in, lane by lane where not
            opts.append(Opt(OptOps.PADTO, rs.index(r), lanes))
            sizes[rs.index(r)] = -(-n_r // lanes) * lanes
        if lanes > 1 and sizes[rs.index(r)] % lanes == 0 and sizes[rs.index(r)] > lanes:
            split(r, lanes, AxisType.UPCAST)
            store = outputs[-1]
            if (
                r is not store
                and sizes[rs.index(store)] % TRANSPOSE_ROWS == 0
                and sizes[rs.index(store)] > TRANSPOSE_ROWS
            ):
                split(store, TRANSPOSE_ROWS, AxisType.UPCAST)  # a block: each store line gets several elements
    if threads > 1 and outputs and work * (1 + COSTLY_ITERATIONS * costly) >= MIN_THREAD_WORK:
        n = sizes[rs.index(outputs[0])]
        # one chunk per core (matmul-like: each core keeps its panel of the output), else chunks of at most
        # CHUNK_WORK; up to 4x as many that divide the outermost loop evenly, the count keeping the cores busiest
        # (k chunks on `threads` cores keep k / (threads * ceil(k / threads)) of them busy: 3 on 2 cores, the M=66
        # matmul's 9 row tiles, 0.75), then the fewest. A matmul whose row tiles balance badly splits its columns
        # instead where that balances better. Options: (balance, the outermost axis first, fewer chunks, axis, chunks)
        want = min(n, threads if matmul_like else max(threads, work // CHUNK_WORK))
        options = [(_balance(k, threads), 1, -k, outputs[0], k) for k in range(want, 4 * want + 1) if n % k == 0]
        if matmul_like and blocks is None and len(outputs) >= 2 and max(options, default=(0.0,))[0] < 1:
            n1 = sizes[rs.index(outputs[1])]
            options += [
                (_balance(k, threads), 0, -k, outputs[1], k) for k in range(threads, 4 * threads + 1) if n1 % k == 0
            ]
        uneven = not options and not reduces and len(outputs) >= 2 and n == bound(outputs[0]) and n > threads
        if uneven and (-(-n // threads) * threads - n) * PAD_WASTE <= n:
            # no chunk count divides the rows (an LSTMCell's batch of 97): padded to one, the last chunk's extra row
            # computed from the last row's loads and not stored
            opts.append(Opt(OptOps.PADTO, rs.index(outputs[0]), threads))
            sizes[rs.index(outputs[0])] = -(-n // threads) * threads
            options = [(1.0, 1, -threads, outputs[0], threads)]
        if options and (best := max(options))[4] > 1:
            axis, chunks = best[3], best[4]
            if axis is not outputs[0]:  # the columns' loop outermost first: only an outermost loop splits into THREADs
                opts.append(Opt(OptOps.SWAP, rs.index(outputs[0]), rs.index(axis)))
            split(axis, chunks, AxisType.THREAD, top=True)
    if blocks is not None and not any(whole):
        # the block loop outermost (inside the THREAD axis): swapped with the outermost output
        split(tile[-1][0], blocks, AxisType.LOOP, top=True)
        opts.append(Opt(OptOps.SWAP, len(rs) + len(opts) - 1, rs.index(outputs[0])))  # every split added an axis
    return opts


def _work(sink: UOp, rs: list[UOp]) -> int:
    """The kernel's iterations: its output loops times the iterations of its reductions, which are a sum where it
    has several side by side (a bias's gradient summed in 25 chunks of 8 time steps, each REDUCE over the batch: the
    product of their 25 loops made it one thread chunk per output, 6.6 ms where 0.4 would do) and a product within
    one REDUCE (a convolution's channels and window)."""
    reduced: set[UOp] = set()
    total = 0
    for u in sink.toposort():
        if u.op is Ops.REDUCE and (own := [r for r in u.src[1:] if r.op is Ops.RANGE and r in rs]):
            reduced.update(own)
            total += math.prod(bound(r) or 1 for r in own)
    return math.prod(bound(r) or 1 for r in rs if r not in reduced) * max(1, total)


def _balance(chunks: int, threads: int) -> float:
    """The share of `threads` cores busy over a kernel of `chunks` equal chunks."""
    return chunks / (threads * -(-chunks // threads))
