"""The TC opt: a matmul-like REDUCE computed by a warp's tensor cores (spec: OptOps.TC, the WMMA op).

In: a kernel SINK for a GPU Target with `tensor_cores`, no opt applied yet (TC must be first), its output axes
GLOBAL; Opt(TC, axis, TCArg) where axis is a REDUCE axis. The REDUCE over it must be a sum of products of two casts,
    REDUCE(ADD, CAST(a) * CAST(b), k, ...)      a, b of a config's dtype_in, the CASTs and the sum in its dtype_out
(or of CAST(a * b), a product rounded to 16 bits before the sum, as convolutions are: the tensor core's is exact)
where `a` varies with an output axis m that `b` does not, `b` with an output axis n that `a` does not (the innermost
such is n: D's columns are the store's contiguous axis), and both with k.
Out: with the config's tile (M, N, K) and fragment layouts (ir/args.TensorCore):
  - m becomes m' (M/tile GLOBAL, keeping its id) and the dims of C's rows: lane dims as WARP ranges, element dims as
    UPCAST ranges; n likewise with C's columns; k becomes k' (K/tile REDUCE) and A's and B's other element dims as
    UNROLL ranges (and the lane dims they share with n);
  - the REDUCE sums WMMA(a', b', 0) over k' (and its other ranges), where a' is `a` at the (row, col) the lane's
    A fragment element holds (TensorCore.a), b' `b` at its B element's; the rest of the kernel (the store, an
    epilogue) sees m and n at the lane's C element, so each lane stores the D elements it holds.
Expand contracts the WMMA's UNROLL/UPCAST ranges into its fragments (pipeline/expand.py); gpudims makes the WARP
ranges the innermost 32 work-items of a group (one warp). A size that is not a multiple of its tile is padded
(TCArg.pad, PADTO's masks: padded lanes load 0 and store nothing), else the opt is refused.
"""

from __future__ import annotations

from unigrad.dtype import DType
from unigrad.helpers import record
from unigrad.ir.args import AxisType, KernelInfo, TensorCore, Term, WMMAArg
from unigrad.ir.ops import Ops
from unigrad.ir.uop import UOp
from unigrad.pipeline.optimize.opts import Opt, OptError, OptOps, Target, _padto, axes, bound, replace_ranges


@record(frozen=True)
class TCArg:
    """arg of Opt(TC): which of the target's tensor_cores (None: the first whose dtypes fit the kernel), and whether
    axes that are not a multiple of the tile are padded to one (else the opt is refused)."""

    tc: int | None = None
    pad: bool = True


def _fail(opt: Opt, msg: str) -> OptError:
    return OptError(f"{opt}: {msg}")


def _ranges(u: UOp) -> set[UOp]:
    return {x for x in u.toposort() if x.op is Ops.RANGE}


@record(frozen=True)
class TCMatch:
    """What the TC opt found in a kernel: the REDUCE, its operands a (rows of D) and b (columns), the axes' ids."""

    red: UOp
    a: UOp
    b: UOp
    m: int
    n: int
    k: int
    tc: TensorCore

    @property
    def ids(self) -> tuple[int, int, int]:
        return (self.m, self.n, self.k)


def match_tc(sink: UOp, opt: Opt, target: Target | None) -> TCMatch:
    """The REDUCE the TC opt applies to and its parts, or OptError saying what does not fit."""
    cores = target.tensor_cores if target is not None else ()
    if not cores:
        raise _fail(opt, "this device has no tensor cores")
    if isinstance(sink.arg, KernelInfo) and sink.arg.opts:
        raise _fail(opt, f"TC must be the first opt (the kernel has {list(sink.arg.opts)})")
    arg = TCArg() if opt.arg is None else opt.arg
    if not isinstance(arg, TCArg):
        raise _fail(opt, f"TC takes arg TCArg(tc, pad) or None, got {opt.arg!r}")
    rs = axes(sink)
    if not isinstance(opt.axis, int) or not 0 <= opt.axis < len(rs):
        raise _fail(opt, f"axis must be an int in [0, {len(rs)}) for this kernel, got {opt.axis!r}")
    rk = rs[opt.axis]
    if rk.arg.axis_type is not AxisType.REDUCE:
        raise _fail(opt, f"axis {opt.axis} is {rk.arg.axis_type.name}: TC applies to a REDUCE axis")
    reds = [u for u in sink.toposort() if u.op is Ops.REDUCE and rk in u.src[1:]]
    if len(reds) != 1 or reds[0].arg.op is not Ops.ADD:
        raise _fail(opt, "TC needs one sum (REDUCE ADD) over the axis")
    red = reds[0]
    if (factors := _factors(red.src[0], red.dtype)) is None:
        raise _fail(opt, "TC needs a sum of products of two casts (a matmul or convolution of 16-bit floats)")
    x, y = factors
    fits = [i for i, tc in enumerate(cores) if tc.dtype_in is x.dtype is y.dtype and tc.dtype_out is red.dtype]
    if arg.tc is not None and arg.tc not in fits:
        raise _fail(opt, f"tensor core {arg.tc} of this device does not take {x.dtype.name} -> {red.dtype.name}")
    if not fits:
        have = ", ".join(f"{tc.dtype_in.name} -> {tc.dtype_out.name}" for tc in cores)
        raise _fail(opt, f"no tensor core of this device takes {x.dtype.name} -> {red.dtype.name} (it has {have})")
    tc = cores[arg.tc if arg.tc is not None else fits[0]]
    rx, ry = _ranges(x), _ranges(y)
    if rk not in rx or rk not in ry:
        raise _fail(opt, "both factors of the product must vary along the reduce axis")
    outs = {r for r in rs if r.arg.axis_type is AxisType.GLOBAL}
    only_x, only_y = sorted(outs & (rx - ry), key=_id), sorted(outs & (ry - rx), key=_id)
    if not only_x or not only_y:
        raise _fail(opt, "no pair of output axes that only one factor each varies along (not a matmul)")
    if _id(only_x[-1]) > _id(only_y[-1]):  # D's columns (n): the innermost of the two
        x, y, only_x, only_y = y, x, only_y, only_x
    m, n = only_x[-1], only_y[-1]
    if any(u.op is Ops.REDUCE and u is not red and rk in u.toposort() for u in sink.toposort()):
        raise _fail(opt, "the reduce axis is used outside its sum")
    for r, tile in zip((m, n, rk), (tc.dims[0], tc.dims[1], tc.dims[2])):
        size = bound(r)
        if size is None:
            raise _fail(opt, f"axis r{r.arg.id} has a symbolic size: tensor cores need constant sizes")
        if size % tile and not arg.pad:
            raise _fail(opt, f"axis r{r.arg.id} of size {size} is not a multiple of {tile} (TCArg(pad=True) pads it)")
    return TCMatch(red, x, y, m.arg.id, n.arg.id, rk.arg.id, tc)


def _factors(value: UOp, acc: DType) -> tuple[UOp, UOp] | None:
    """(a, b) of a summed product CAST(a) * CAST(b) (the casts to the sum's dtype `acc`), of CAST(a * b) (a 16-bit
    product rounded before the sum: the tensor core's is exact, as in torch's GPU convolutions) or of a * b (in the
    sum's dtype: which tensor core takes that is the caller's question); else None."""
    if value.op is Ops.MUL and all(s.op is Ops.CAST and s.dtype is acc for s in value.src):
        return value.src[0].src[0], value.src[1].src[0]
    if value.op is Ops.CAST and value.dtype is acc and value.src[0].op is Ops.MUL:
        return value.src[0].src[0], value.src[0].src[1]
    if value.op is Ops.MUL:  # a product summed in its own dtype (float32 x float32 -> float32)
        return value.src[0], value.src[1]
    return None


def _id(r: UOp) -> int:
    return r.arg.id


def _by_id(sink: UOp, rid: int) -> UOp:
    return next(r for r in axes(sink) if r.arg.id == rid)


def _coord(outer: UOp | None, tile: int, terms: tuple[Term, ...], dims: dict[str, UOp]) -> UOp:
    """outer * tile + the sum of the layout's terms over the new ranges."""
    out = outer * tile if outer is not None else UOp.index_const(0)
    for name, stride in terms:
        out = out + dims[name] * stride
    return out


def apply_tc(sink: UOp, opt: Opt, target: Target | None) -> UOp:
    """Opt(TC, axis, TCArg) on a kernel SINK (see the module doc); OptError where it does not apply."""
    found = match_tc(sink, opt, target)
    tc = found.tc
    info = sink.arg if isinstance(sink.arg, KernelInfo) else KernelInfo("kernel")
    # pad each axis to a multiple of its tile (PADTO's masks), then find the parts again on the padded kernel
    for rid, tile in zip((found.m, found.n, found.k), tc.dims):
        if (bound(_by_id(sink, rid)) or 0) % tile:
            sink = _padto(sink, Opt(OptOps.PADTO, axes(sink).index(_by_id(sink, rid)), tile))
    rm, rn, rk = (_by_id(sink, rid) for rid in (found.m, found.n, found.k))
    red = next(u for u in sink.toposort() if u.op is Ops.REDUCE and rk in u.src[1:])
    value, gate = red.src[0], None
    if value.op is Ops.WHERE:  # a padded reduce axis: WHERE(k < K, product, 0); the gate moves onto a factor
        gate, value = value.src[0], value.src[1]
    if (factors := _factors(value, red.dtype)) is None:
        raise _fail(opt, f"padding made the product a {value.op.name}: not a product of two casts")
    x, y = factors
    a, b = (x, y) if rm in _ranges(x) else (y, x)
    if gate is not None:
        a = gate.where(a, UOp.const(a.dtype, 0))
    # the new ranges: lane dims WARP, C's element dims UPCAST, A's and B's other element dims UNROLL
    next_id = max(_id(r) for r in axes(sink)) + 1
    dims: dict[str, UOp] = {}
    kinds = [(tc.lanes, AxisType.WARP), (tc.c.elements, AxisType.UPCAST)]
    kinds += [(tc.a.elements + tc.b.elements, AxisType.UNROLL)]
    for named, kind in kinds:
        for name, size in named:
            if name not in dims:
                dims[name] = UOp.range(size, next_id, kind)
                next_id += 1
    outer = {}
    for r, tile in zip((rm, rn, rk), tc.dims):
        size = (bound(r) or 0) // tile
        outer[r] = UOp.range(size, r.arg.id, r.arg.axis_type) if size > 1 else None
    om, on, ok = outer[rm], outer[rn], outer[rk]
    a2 = a.substitute({rm: _coord(om, tc.dims[0], tc.a.row, dims), rk: _coord(ok, tc.dims[2], tc.a.col, dims)})
    b2 = b.substitute({rk: _coord(ok, tc.dims[2], tc.b.row, dims), rn: _coord(on, tc.dims[1], tc.b.col, dims)})
    ids = tuple(tuple(_id(dims[name]) for name, _ in f.elements) for f in (tc.a, tc.b, tc.c))
    wmma = UOp(Ops.WMMA, (a2, b2, UOp.const(red.dtype, 0)), WMMAArg(tc, ids))  # type: ignore[arg-type]
    loops = [ok if r is rk else r for r in red.src[1:]]
    loops = [r for r in loops if r is not None]
    new_red = UOp(Ops.REDUCE, (wmma, *loops), red.arg, red.tag) if loops else wmma
    sink = sink.substitute({red: new_red})

    def chain(o: UOp | None, terms: tuple[Term, ...]) -> tuple[UOp, ...]:
        return tuple(r for r in [o, *(dims[name] for name, _ in terms)] if r is not None)

    values = {rm: _coord(om, tc.dims[0], tc.c.row, dims), rn: _coord(on, tc.dims[1], tc.c.col, dims)}
    out = replace_ranges(sink, values, {rm: chain(om, tc.c.row), rn: chain(on, tc.c.col)})
    return out.replace(arg=KernelInfo(info.name, (opt,), info.outputs))
