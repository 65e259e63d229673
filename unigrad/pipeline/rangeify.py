"""Rangeify: decide the kernel split, and turn each kernel's movement ops into index math on RANGEs.

In: FUNCTION(TUPLE(outputs), args...) from callify (tensor-level ops over PARAM(k) inputs; the @function calls
callify kept are inlined first).
Out: FUNCTION(TUPLE(views), args...) where every materialized value is RESHAPE(AFTER(PARAM_m, CALL(kernel,
PARAM_m, inputs...)), shape): PARAM_m for m >= len(args) is a buffer the caller allocates, and `kernel` is
SINK(END(...STORE(INDEX(out, flat), value)...)) whose value is scalar ALU/LOAD/REDUCE math on RANGEs with
all movement ops gone and index expressions simplified.

An assign, STORE(target, value), becomes a kernel writing into the target's buffer; when the target is a view
(slice, permute, flip), the kernel loops over the view and stores through its index math, and the assign's
value stays that view of the written buffer.

Kernel split: outputs (unless a plain reshape of an input or an assigned view), LOADs (contiguous / copy to a
device), REDUCEs whose result is broadcast back by an EXPAND (they would be recomputed per element otherwise), big
REDUCEs under a transcendental (a register tile would copy it per element: a Linear under a GELU), costly
elementwise values broadcast by an EXPAND to a few thousand elements or more (many buffers or ops, or a
transcendental: the same reason) or padded to
twice their size or more (a cat of chunks: the padded kernel computes each chunk at every element), elementwise
values that read many buffers or compute two transcendentals or more and feed two kernels or more (a residual
stream; an LSTM's cell state, elementwise through time), REDUCEs that feed two kernels or more (recomputed, each kernel would round them its own way), and big REDUCEs reduced again by another REDUCE (a
nested reduction would be one loop nest that tiling cannot shape). A costly value is decided before the REDUCEs
under it: a LayerNorm's rsqrt(var + eps) is computed in the variance's kernel. Last, a kernel body past
MAX_KERNEL_OPS ops (transcendentals counted as their decomposition) is cut by materializing the elementwise value
where it passes the limit: C compile time grows faster than linearly with the body; and an elementwise value joining
more than MAX_KERNEL_REDUCES big REDUCEs (a shared weight's gradient summed over 199 steps), or more than
MAX_KERNEL_LOOPS REDUCEs of any size, is materialized. Everything else fuses into the kernel that consumes it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

from unigrad import config
from unigrad.dtype import DType, dtypes
from unigrad.helpers import LRUCache, record
from unigrad.ir.args import AddrSpace, AxisType, KernelInfo, LoadArg, ParamArg, ReduceArg
from unigrad.ir.ops import TRANSCENDENTAL_OPS, GroupOp, Ops
from unigrad.ir.pattern import PatternMatcher, UPat, graph_rewrite
from unigrad.ir.props import device_of, prod
from unigrad.ir.symbolic import pm_symbolic, simplify_given_valid
from unigrad.ir.uop import UOp
from unigrad.pipeline.callify import inline_functions, is_traced_call
from unigrad.pipeline.expand import identity_element
from unigrad.pipeline.merge import alias_groups, merge_kernels

TRUE = UOp.const(dtypes.bool, True)
NESTED_MIN_OUT = 4096  # a nested REDUCE with this many outputs (or more) ...
NESTED_MIN_SIZE = 8  # ... each a sum of this many values (or more) gets its own kernel
# ... as does one of NESTED_ROWS outputs or more that sums NESTED_WORK values or more in all: fused under the outer
# REDUCE, a sum of row sums (a word model's NLL mean over 700 rows of 1000 classes) is one loop nest with one output,
# which no THREAD axis can split (582 us on one core); on its own, its rows split over the cores
NESTED_ROWS = 64
NESTED_WORK = 1 << 18
# a value an EXPAND copies this many times or more is materialized when it is costly to recompute: it reads
# RECOMPUTE_LOADS buffers or more, or takes RECOMPUTE_OPS ALU ops or more, or a transcendental function
MIN_RECOMPUTE_FACTOR = 8
RECOMPUTE_LOADS = 3
RECOMPUTE_OPS = 8
# ... unless the broadcast has fewer than SMALL_BROADCAST elements: recomputing a few thousand values costs less than
# a kernel launch (a cross-entropy's per-sample gradient scale over a batch of 64 x 10 logits)
SMALL_BROADCAST = 1 << 12
MIN_PAD_FACTOR = 2  # ... and so is one under a PAD that makes it this many times bigger (a cat of two chunks or more)
SHARED_LOADS = 4  # an elementwise value two kernels read is materialized when it reads this many buffers
SHARED_TRANSCENDENTALS = 2  # ... or computes this many transcendentals (an LSTM's cell state: sigmoids and a tanh)
# a kernel body is cut past this many ops, a transcendental counting TRANSCENDENTAL_OPS (the primitives isel
# decomposes it into). A 1200-op chain with 600 sines and exps: one kernel 60 s to lower and compile; cut at 1024
# (21 kernels) 16 s, at 4096 (6 kernels) 10 s, at 8192 18 s; a 300-op one: about 3 s at 4096 or uncut
MAX_KERNEL_OPS = 4096
# an elementwise value joining more than this many big REDUCEs is materialized, so a kernel computes at most two:
# the gradient of a weight shared by the 199 steps of an unrolled LSTMCell is a sum of 199 matmuls, one kernel of
# 398 buffers and a nest of 199 reduce loops otherwise (LSTMCell training step, kernel time per step: 1, 598 ms;
# 2, 608; 4, 632; unbounded, 1619)
MAX_KERNEL_REDUCES = 1
# ... and one joining more than this many REDUCEs of any size: small ones side by side are one loop each (a bias's
# gradient summed over the batch at each of 199 traced LSTMCell steps: one kernel of 199 reduce loops, 130 kB of C
# and 2.6 s of gcc; cut past 32, 7 kernels of at most 33 loops)
MAX_KERNEL_LOOPS = 32


@record
class RangeifyCtx:
    next_range: int = 0
    pure: dict[UOp, bool] | None = None  # memo of _pure_of_index; None inside push_pure (no nesting)

    def new_range(self, bound: int | UOp, axis_type: AxisType = AxisType.LOOP) -> UOp:
        r = UOp.range(bound, self.next_range, axis_type)
        self.next_range += 1
        return r


# ---------------------------------------------------------------- index helpers


def _iu(x: int | UOp) -> UOp:
    return x if isinstance(x, UOp) else UOp.index_const(x)


def flatten_index(idxs: tuple[UOp, ...], shape: tuple) -> UOp:
    """Row-major offset of a multi-index: ((i0*s1 + i1)*s2 + i2)..., or f itself when the indices are
    unflatten_index(f, shape): a reshape read through another reshape, or a reshaped contiguous buffer, is
    addressed by the flat index it came from (its digits would have to be summed back by the simplifier, which
    cannot once f is a sum split at another stride: a 64x3x224x224 sum in 256 parts stayed div/mod math)."""
    if (f := _unflattened(idxs, shape)) is not None:
        return f
    out: UOp = UOp.index_const(0)
    for i, s in zip(idxs, shape):
        out = out * _iu(s) + i
    return out


def _unflattened(idxs: tuple[UOp, ...], shape: tuple) -> UOp | None:
    """f when idxs are exactly unflatten_index(f, shape) (then flattening them gives f for every integer f)."""
    if not idxs or len(idxs) != len(shape):
        return None
    f = idxs[-1]
    if f.op is Ops.MOD:
        f = f.src[0]
    if f.op is not Ops.IDIV or f.src[1].op is not Ops.CONST or f.src[1].arg.value != 1:
        return None
    f = f.src[0]
    return f if tuple(unflatten_index(f, shape)) == tuple(idxs) else None


def unflatten_index(flat: UOp, shape: tuple) -> list[UOp]:
    """Multi-index of a row-major offset into `shape`."""
    out: list[UOp] = []
    for k, s in enumerate(shape):
        q = flat // _iu(prod(shape[k + 1 :]))
        out.append(q if k == 0 else q % _iu(s))  # flat < prod(shape): the outermost index needs no mod
    return out


def _split(idx: UOp) -> tuple[tuple[UOp, ...], UOp] | None:
    """(indices, valid) of an INDEX in push form: INDEX(T, i_0.., valid) with a bool last source."""
    if len(idx.src) < 2 or idx.src[-1].dtype is not dtypes.bool:
        return None
    return idx.src[1:-1], idx.src[-1]


def _index(x: UOp, idxs: tuple[UOp, ...] | list[UOp], valid: UOp) -> UOp:
    return UOp(Ops.INDEX, (x, *idxs[: len(x.shape)], valid))


# ---------------------------------------------------------------- push rules: INDEX(op(x), idx) -> op'(INDEX(x, idx'))


_PURE_WALKED = frozenset({Ops.CONST, *GroupOp.View, *GroupOp.ALU})  # what _pure_of_index looks into


def _pure_of_index(u: UOp, memo: dict[UOp, bool]) -> bool:
    """True when u's value is a function of its element index alone and it has a PAD: constants, views and ALU
    ops, no buffer, Variable or reduction (arange's binary digits, masks made of aranges). One sources-first
    walk over the views and ALU ops not in `memo` yet (iterative: a long elementwise chain is deep)."""
    if (v := memo.get(u)) is not None:
        return v
    for n in u.toposort(gate=lambda x: x not in memo and x.op in _PURE_WALKED):
        if n in memo:
            continue
        if n.op in GroupOp.View:  # a PAD of a constant varies with the index; other views pass purity through
            v = memo[n.src[0]] or (n.op is Ops.PAD and _const_only(n.src[0]))
        elif n.op in GroupOp.ALU:
            v = all(_const_only(s) or memo[s] for s in n.src) and any(memo[s] for s in n.src)
        else:  # a constant, or no view or ALU op
            v = False
        memo[n] = v
    return memo[u]


def _const_only(u: UOp) -> bool:
    """A constant seen through views with no PAD (a broadcast scalar): the same value at every index."""
    while u.op in GroupOp.View and u.op is not Ops.PAD:
        u = u.src[0]
    return u.op is Ops.CONST


def push_pure(ctx: RangeifyCtx, idx: UOp, x: UOp) -> UOp | None:
    """An ALU op whose value depends on its index alone (arange: a sum of padded, tiled constants) is pushed and
    simplified on placeholder indices first, then the real indices go in. Simplifying after the substitution
    would split each binary digit of a compound index (a slice of an arange) into unrelated pieces; simplified
    on its own, arange's digit sum is the index itself."""
    if ctx.pure is None or (iv := _split(idx)) is None or not all(isinstance(s, int) for s in x.shape):
        return None
    if not _pure_of_index(x, ctx.pure):
        return None
    idxs, _ = iv  # no loads below: the validity gates nothing
    holders = [UOp.index_const(0) if s == 1 else UOp.variable(f"__pure{k}", 0, s - 1) for k, s in enumerate(x.shape)]
    inner = graph_rewrite(_index(x, holders, TRUE), pm_push_index, RangeifyCtx(pure=None), bottom_up=False)
    out = graph_rewrite(inner, pm_symbolic)
    return out.substitute({h: i for h, i in zip(holders, idxs) if h.op is not Ops.CONST})


def push_alu(idx: UOp, x: UOp) -> UOp | None:
    if (iv := _split(idx)) is None:
        return None
    idxs, valid = iv
    return UOp(x.op, tuple(_index(s, idxs, valid) for s in x.src), x.arg)


def push_gather(idx: UOp, x: UOp) -> UOp | None:
    """A gather, x = INDEX(src, t) with an int tensor t: element (i, r) reads src[t[i], r], an indirect load.
    Negative entries count from the end; entries out of range read 0 (the load is gated off)."""
    if (iv := _split(idx)) is None or len(x.src) != 2 or not x.src[1].dtype.is_int or x.src[1].dtype is dtypes.index:
        return None
    outer, valid = iv
    src, t = x.src
    k, n = len(t.shape), src.shape[0]
    v = UOp(Ops.INDEX, (t, *outer[:k], valid)).cast(dtypes.index)
    v = (v < 0).where(v + _iu(n), v)
    inb = valid & (v >= 0) & (v < _iu(n))
    return UOp(Ops.WHERE, (inb, _index(src, (v, *outer[k:]), inb), UOp.const(x.dtype, 0)))


def push_passthrough(idx: UOp, x: UOp) -> UOp | None:
    """Markers (DETACH, CONTIGUOUSBACKWARD) are identity on data."""
    if (iv := _split(idx)) is None:
        return None
    return _index(x.src[0], *iv)


def push_fused_load(idx: UOp, x: UOp) -> UOp | None:
    """A tensor-level LOAD (contiguous()) of a view that is already row-major is not materialized: index through."""
    if x.arg.addrspace is not AddrSpace.GLOBAL or x.arg.device is not None:
        return None
    return push_passthrough(idx, x)


def push_const(idx: UOp, x: UOp) -> UOp | None:
    return x if _split(idx) is not None else None


def push_variable(idx: UOp, x: UOp) -> UOp | None:
    return x if _split(idx) is not None and x.arg.name is not None else None


def push_reshape(idx: UOp, x: UOp) -> UOp | None:
    if (iv := _split(idx)) is None:
        return None
    idxs, valid = iv
    src = x.src[0]
    return _index(src, unflatten_index(flatten_index(idxs, x.shape), src.shape), valid)


def push_expand(idx: UOp, x: UOp) -> UOp | None:
    if (iv := _split(idx)) is None:
        return None
    idxs, valid = iv
    src_shape = x.src[0].shape
    new = [UOp.index_const(0) if s == 1 else i for i, s in zip(idxs, src_shape)]
    return _index(x.src[0], new, valid)


def push_permute(idx: UOp, x: UOp) -> UOp | None:
    if (iv := _split(idx)) is None:
        return None
    idxs, valid = iv
    new: list[UOp] = [UOp.index_const(0)] * len(idxs)
    for k, p in enumerate(x.arg):
        new[p] = idxs[k]
    return _index(x.src[0], new, valid)


def push_flip(idx: UOp, x: UOp) -> UOp | None:
    if (iv := _split(idx)) is None:
        return None
    idxs, valid = iv
    new = [(_iu(s) - 1 - i) if f else i for i, s, f in zip(idxs, x.shape, x.arg)]
    return _index(x.src[0], new, valid)


def push_shrink(idx: UOp, x: UOp) -> UOp | None:
    if (iv := _split(idx)) is None:
        return None
    idxs, valid = iv
    return _index(x.src[0], [i + _iu(o) for i, o in zip(idxs, x.src[1].as_shape)], valid)


def push_pad(idx: UOp, x: UOp) -> UOp | None:
    """Inside the pad the source is read at idx - before; outside the value is 0 and no load happens."""
    if (iv := _split(idx)) is None:
        return None
    idxs, valid = iv
    src = x.src[0]
    inb = valid
    new = []
    for i, before, s in zip(idxs, x.src[1].as_shape, src.shape):
        if before == 0 and s == x.shape[len(new)]:
            new.append(i)
            continue
        j = i - _iu(before)
        new.append(j)
        inb = inb & (j >= 0) & (j < _iu(s))
    zero = UOp.const(x.dtype, 0)
    return UOp(Ops.WHERE, (inb, _index(src, new, inb), zero))


def push_reduce(ctx: RangeifyCtx, idx: UOp, x: UOp) -> UOp | None:
    """out[i] = reduce over new RANGEs r of src[i with reduced axes replaced by r]."""
    if (iv := _split(idx)) is None:
        return None
    idxs, valid = iv
    src = x.src[0]
    new: list[UOp] = []
    ranges: list[UOp] = []
    if any(src.shape[ax] == 0 for ax in x.arg.axes):  # an empty reduction is its identity element
        return UOp.const(x.dtype, identity_element(x.arg.op, x.dtype))
    for ax, (i, s) in enumerate(zip(idxs, src.shape)):
        if ax in x.arg.axes and s != 1:
            r = ctx.new_range(s, AxisType.REDUCE)
            ranges.append(r)
            new.append(r)
        elif ax in x.arg.axes:
            new.append(UOp.index_const(0))
        else:
            new.append(i)
    inner = _index(src, new, valid)
    if not ranges:
        return inner
    return UOp(Ops.REDUCE, (inner, *ranges), ReduceArg(x.arg.op))


def push_load(idx: UOp, x: UOp) -> UOp | None:
    """INDEX of a global buffer -> LOAD of its flat element, gated by the validity when it can be false."""
    if (iv := _split(idx)) is None or x.arg.addrspace is not AddrSpace.GLOBAL:
        return None
    idxs, valid = iv
    target = UOp(Ops.INDEX, (x, flatten_index(idxs, x.shape)))
    reg = LoadArg(None, AddrSpace.REG)
    if valid is TRUE:
        return UOp(Ops.LOAD, (target,), reg)
    return UOp(Ops.LOAD, (target, UOp.const(x.dtype, 0), valid), reg)


pm_push_index = PatternMatcher(
    [
        (UPat(Ops.INDEX, src=(UPat(GroupOp.ALU, name="x"),), allow_any_len=True, name="idx"), push_pure),
        (UPat(Ops.INDEX, src=(UPat(GroupOp.ALU | {Ops.BITCAST}, name="x"),), allow_any_len=True, name="idx"), push_alu),
        (UPat(Ops.INDEX, src=(UPat(Ops.INDEX, name="x"),), allow_any_len=True, name="idx"), push_gather),
        (UPat(Ops.INDEX, src=(UPat(GroupOp.Marker, name="x"),), allow_any_len=True, name="idx"), push_passthrough),
        (UPat(Ops.INDEX, src=(UPat(Ops.CONST, name="x"),), allow_any_len=True, name="idx"), push_const),
        (UPat(Ops.INDEX, src=(UPat(Ops.LOAD, name="x"),), allow_any_len=True, name="idx"), push_fused_load),
        (UPat(Ops.INDEX, src=(UPat(Ops.RESHAPE, name="x"),), allow_any_len=True, name="idx"), push_reshape),
        (UPat(Ops.INDEX, src=(UPat(Ops.EXPAND, name="x"),), allow_any_len=True, name="idx"), push_expand),
        (UPat(Ops.INDEX, src=(UPat(Ops.PERMUTE, name="x"),), allow_any_len=True, name="idx"), push_permute),
        (UPat(Ops.INDEX, src=(UPat(Ops.FLIP, name="x"),), allow_any_len=True, name="idx"), push_flip),
        (UPat(Ops.INDEX, src=(UPat(Ops.SHRINK, name="x"),), allow_any_len=True, name="idx"), push_shrink),
        (UPat(Ops.INDEX, src=(UPat(Ops.PAD, name="x"),), allow_any_len=True, name="idx"), push_pad),
        (UPat(Ops.INDEX, src=(UPat(Ops.REDUCE, name="x"),), allow_any_len=True, name="idx"), push_reduce),
        (UPat(Ops.INDEX, src=(UPat(Ops.PARAM, name="x"),), allow_any_len=True, name="idx"), push_load),
        (UPat(Ops.INDEX, src=(UPat(Ops.PARAM, name="x"),), allow_any_len=True, name="idx"), push_variable),
    ],
    name="pm_push_index",
)


# ---------------------------------------------------------------- load clean-up after simplification


def simplify_gated_load(load: UOp) -> UOp | None:
    """A gate that is always true goes; the index is simplified knowing the gate holds."""
    if len(load.src) != 3:
        return None
    target, alt, gate = load.src
    if gate.op is Ops.CONST:
        return load.replace(src=(target,)) if gate.arg.value else alt
    new_idx = simplify_given_valid(target.src[1], gate)
    if new_idx is target.src[1]:
        return None
    return load.replace(src=(target.replace(src=(target.src[0], new_idx)), alt, gate))


def drop_where_on_load(g: UOp, load: UOp, alt: UOp) -> UOp | None:
    """g ? LOAD(i, alt, g) : alt -> LOAD(i, alt, g): the gated load already yields alt."""
    if len(load.src) == 3 and load.src[2] is g and load.src[1] is alt:
        return load
    return None


pm_loads = PatternMatcher(
    [
        (UPat(Ops.LOAD, src=(UPat(Ops.INDEX), UPat(), UPat()), name="load"), simplify_gated_load),
        (
            UPat(Ops.WHERE, src=(UPat.var("g"), UPat(Ops.LOAD, name="load"), UPat.var("alt"))),
            drop_where_on_load,
        ),
    ],
    name="pm_loads",
)


def view_index(view: UOp, idxs: tuple[UOp, ...]) -> tuple[UOp, UOp]:
    """(flat index, validity) of element `idxs` of a movement-op view of one global buffer: the index math
    rangeify emits for it, simplified (the validity is True when every element is in bounds)."""
    pushed = graph_rewrite(_index(view, idxs, TRUE), pm_push_index, RangeifyCtx(), bottom_up=False)
    out = graph_rewrite(pushed, pm_simplify_kernel)
    load = next(u for u in out.toposort() if u.op is Ops.LOAD)
    return load.src[0].src[1], load.src[2] if len(load.src) == 3 else TRUE


pm_simplify_kernel = pm_symbolic + pm_loads


# ---------------------------------------------------------------- kernels


def _is_buffer_leaf(u: UOp) -> bool:
    return (u.op is Ops.PARAM and u.arg.name is None) or (u.op is Ops.AFTER and u.src[0].op is Ops.PARAM)


def is_contiguous_view(u: UOp) -> bool:
    """A buffer seen through reshapes only (maybe after an assign to it): reading it needs no kernel."""
    while u.op is Ops.RESHAPE or (u.op is Ops.AFTER and u.src[0].op is Ops.RESHAPE):
        u = u.src[0]
    return _is_buffer_leaf(u)


def _param_like(buf: UOp, slot: int) -> UOp:
    p = buf if buf.op is Ops.PARAM else buf.src[0]
    return UOp(Ops.PARAM, p.src, ParamArg(slot, p.arg.dtype, p.arg.device, AddrSpace.GLOBAL))


NAME_LIMIT = 64  # a kernel name longer than this collapses runs of equal bounds (it names files and traces)


def kernel_name(sink: UOp) -> str:
    """E_4_3 for an elementwise kernel over 4x3, r_... when it reduces: the bounds of its loops in order. Past
    NAME_LIMIT characters a run of three equal bounds or more is written once with its count (r_97_51_204x12), and
    what is still too long ends in _etc."""
    topo = sink.toposort()
    prefix = "r" if any(u.op is Ops.REDUCE for u in topo) else "E"
    dims = [u.src[0] for u in sorted((u for u in topo if u.op is Ops.RANGE), key=lambda r: r.arg.id)]
    parts = [str(d.arg.value) if d.op is Ops.CONST else _symbolic_name(d) for d in dims]
    name = prefix + "".join(f"_{p}" for p in parts)
    if len(name) <= NAME_LIMIT:
        return name
    runs: list[list] = []  # [bound, count] of each run of equal bounds
    for p in parts:
        if runs and runs[-1][0] == p:
            runs[-1][1] += 1
        else:
            runs.append([p, 1])
    name = prefix + "".join(f"_{p}x{n}" if n >= 3 else f"_{p}" * n for p, n in runs)
    return name if len(name) <= NAME_LIMIT else name[: NAME_LIMIT - 4].rstrip("_") + "_etc"


def _symbolic_name(d: UOp) -> str:
    """A symbolic bound as a C identifier part: (n+1) -> n_plus_1, (n*3) -> n_times_3."""
    text = d.render().replace("+", "_plus_").replace("*", "_times_").replace("//", "_div_").replace("-", "m")
    return "".join(c for c in text if c.isalnum() or c == "_")


def build_kernel(
    value: UOp, out_dtype: DType, out_device: object, out_buffer: UOp | None = None, out_view: UOp | None = None
) -> tuple[UOp, list[UOp]]:
    """The kernel AST computing `value` into a flat buffer, and the buffers it reads (in PARAM order).

    The kernel's PARAM 0 is the output, PARAM k >= 1 the k-th buffer it reads. With `out_buffer` (an assign),
    the output is that existing buffer, and reads of it in `value` go through PARAM 0 too (no aliasing). With
    `out_view` too (the assign's target: movement ops over out_buffer, value's shape), element i of value goes to
    the buffer element that element i of the view shows: the kernel loops over the view only."""
    shape = value.shape
    size = prod(out_buffer.shape) if out_buffer is not None else prod(shape)
    out = UOp(Ops.PARAM, (UOp.shape_src((size,)),), ParamArg(0, out_dtype, out_device, AddrSpace.GLOBAL))
    local, leaves = _Localize(out_buffer, out).run(value)
    view = None if out_view is None or _strip_views(out_view) is out_buffer else out_view.substitute({out_buffer: out})
    if (sink := _built.get((local, out, view))) is None:
        sink = _built[(local, out, view)] = _build_kernel(local, out, view)
    return sink, leaves


class _Localize:
    """build_kernel's walk: a value -> (the value over PARAMs, the buffers it reads in PARAM order), in one walk down
    to its buffers (a toposort to find them and a substitute to replace them were two: 6k materializations of an
    unrolled LSTMCell's step). Each buffer read gets the next slot where the walk first meets it (sources in order,
    as toposort lists them); out_buffer is `out` (PARAM 0)."""

    def __init__(self, out_buffer: UOp | None, out: UOp) -> None:
        self.out_buffer, self.out = out_buffer, out
        self.leaves: list[UOp] = []
        self.memo: dict[UOp, UOp] = {}

    def run(self, value: UOp) -> tuple[UOp, list[UOp]]:
        try:
            return self.walk(value), self.leaves
        except RecursionError:  # deeper than the interpreter allows: the two iterative walks
            leaves = [u for u in value.toposort(gate=lambda x: not _is_buffer_leaf(x)) if _is_buffer_leaf(u)]
            leaves = [b for b in leaves if b is not self.out_buffer]
            mapping = {b: _param_like(b, k + 1) for k, b in enumerate(leaves)}
            if self.out_buffer is not None:
                mapping[self.out_buffer] = self.out
            return (value.substitute(mapping) if mapping else value), leaves

    def walk(self, u: UOp) -> UOp:
        if (r := self.memo.get(u)) is not None:
            return r
        if _is_buffer_leaf(u):
            if u is self.out_buffer:
                r = self.out
            else:
                self.leaves.append(u)
                r = _param_like(u, len(self.leaves))
        else:
            r = u.rebuilt(tuple([self.walk(s) for s in u.src]))  # (a PARAM for a buffer: of its shape)
        self.memo[u] = r
        return r


# kernels built, by (value over PARAMs, output PARAM, output view), as many as the SCHEDULE_CACHE knob keeps
# schedules (the most recently used): an unrolled loop materializes the same kernel once per step over other buffers
# (an LSTM LM step: 1576 kernels, about 200 distinct), and building one (pushing the indices, simplifying) takes
# milliseconds; bounded by the knob, a process making ever new kernels does not grow by them
_built: LRUCache[tuple[UOp, UOp, UOp | None], UOp] = LRUCache(lambda: config.SCHEDULE_CACHE.value)


def _build_kernel(local: UOp, out: UOp, view: UOp | None) -> UOp:
    """The kernel storing `local` (a value over PARAMs 1..n) into `out` (PARAM 0), through `view` of it if any."""
    shape = local.shape
    ctx = RangeifyCtx(pure={})
    idxs = [UOp.index_const(0) if s == 1 else ctx.new_range(s) for s in shape]
    if view is None:  # a row-major view: the flat index
        where, gate = flatten_index(tuple(idxs), shape), TRUE
    else:  # the view's index math, as a load through it would have: padding the view adds is not written
        where, gate = view_index(view, tuple(idxs))
    dest = (UOp(Ops.INDEX, (out, where)), _index(local, idxs, TRUE))
    store = UOp(Ops.STORE, dest if gate is TRUE else (*dest, gate))
    for r in reversed(idxs):
        if r.op is Ops.RANGE:
            store = UOp(Ops.END, (store, r))
    sink = UOp(Ops.SINK, (store,))
    sink = graph_rewrite(sink, pm_push_index, ctx, bottom_up=False)
    sink = graph_rewrite(sink, pm_simplify_kernel)
    return sink.replace(arg=KernelInfo(kernel_name(sink)))


def reads_output_elsewhere(ast: UOp) -> bool:
    """An assign kernel that reads its output buffer at another element than the one it writes (e.g.
    a.assign(a.flip(0))): running it in place would read values it already overwrote."""
    stores = [u for u in ast.toposort() if u.op is Ops.STORE]
    out = stores[0].src[0].src[0]
    written = stores[0].src[0].src[1]
    return any(u.op is Ops.LOAD and u.src[0].src[0] is out and u.src[0].src[1] is not written for u in ast.toposort())


def _is_kernel_ast(u: UOp) -> bool:
    return u.op is Ops.SINK or (u.op is Ops.LOAD and u.arg is not None and u.arg.device is not None)


def _strip_views(u: UOp) -> UOp:
    while u.op is Ops.RESHAPE:
        u = u.src[0]
    return u


def view_base(u: UOp) -> UOp:
    """What a view looks at (a buffer, an assign): `u` without its movement ops (and REPLICATED: a multi-device
    tensor is a view of its tuple BUFFER)."""
    while u.op in GroupOp.View or u.op is Ops.REPLICATED:
        u = u.src[0]
    return u


def _materialize_points(body: UOp, topo: list[UOp]) -> set[UOp]:
    consumers: dict[UOp, list[UOp]] = defaultdict(list)
    for u in topo:
        for s in u.src:
            consumers[s].append(u)
    # outputs are materialized, but for an assign through a view (a slice): its value stays that view of the buffer
    realize: set[UOp] = {o for o in body.src if not is_contiguous_view(o) and not _is_view_assign(o)}
    for u in topo:
        if u.op is Ops.LOAD and not (u.arg.device is None and is_contiguous_view(u.src[0])):
            realize.add(u)
    # an expensive value broadcast by an EXPAND is materialized: fused, it would be recomputed for every copy (a
    # LayerNorm under a Linear: once per output feature; softmax's probabilities under @ v: once per head dim;
    # through other views too: a cumsum's or a pool's overlapping windows are an EXPAND of a padded value)
    for u in topo:
        if u.op is Ops.EXPAND and _broadcast_factor(u) >= MIN_RECOMPUTE_FACTOR and not _small_broadcast(u):
            v = view_base(u.src[0])
            if v.op in GroupOp.ALU and v not in realize and _costly(v, realize):
                realize.add(v)
    # an expensive value under a PAD that makes it MIN_PAD_FACTOR times bigger or more is materialized:
    # fused, its math runs at every element of the padded result (only the loads are gated off), so a cat of chunks
    # computes every chunk everywhere (an LSTM's gate gradient, a sum of four padded chunks of sigmoid and tanh
    # derivatives: 4x the math, 70 such kernels took 19 ms of an 84 ms LSTM LM step)
    for u in topo:
        if u.op is Ops.PAD and _broadcast_factor(u) >= MIN_PAD_FACTOR:
            v = view_base(u.src[0])
            if v.op in GroupOp.ALU and v not in realize and _costly(v, realize):
                realize.add(v)
    # a value read through two different views is indexed once per view, so a kernel reading it both ways holds
    # its code twice: a chain of such reads (a roll done step by step, x = x[1:].cat(x[:1])) doubles the kernel
    # with every step (12 steps: 2.6 s to compile). A costly one is materialized (producers first: one just
    # materialized is a single load for the values above it)
    views: dict[UOp, set[UOp]] = defaultdict(set)
    for u in topo:
        if u.op in GroupOp.View and u.op is not Ops.RESHAPE:
            views[u.src[0]].add(u)
    for u in topo:
        if len(views.get(u, ())) > 1 and u.op in GroupOp.ALU and u not in realize and _costly(u, realize):
            realize.add(u)
    # a REDUCE whose value is broadcast back (EXPAND above it before the next kernel boundary) is materialized
    expanded_above: dict[UOp, bool] = {}
    for u in reversed(topo):
        ea = False
        for c in consumers[u]:
            if c.op is Ops.EXPAND and any(a != b for a, b in zip(u.shape, c.shape)):
                ea = True
            elif c not in realize and c.op is not Ops.REDUCE and expanded_above.get(c, False):
                ea = True
        expanded_above[u] = ea
        if ea and u.op is Ops.REDUCE:
            realize.add(u)
    # a big REDUCE whose value is summed again by another REDUCE of the same kernel is materialized: a nested
    # reduction is one loop nest that register tiling cannot shape (a convolution under a .sum() ran 30x slower)
    reduced_above: dict[UOp, bool] = {}
    for u in reversed(topo):
        reduced_above[u] = any(
            c.op is Ops.REDUCE or (c not in realize and reduced_above.get(c, False)) for c in consumers[u]
        )
        if reduced_above[u] and u.op is Ops.REDUCE and (_big_reduce(u) or _wide_reduce(u)):
            realize.add(u)
    # a big REDUCE under a transcendental of its kernel is materialized: fused, the register tile computes the
    # transcendental once per tile element, in scalar copies (a Linear of 66 x 1536 under an exact GELU: 2.1 ms, the
    # matmul alone 0.6 and the GELU on its own a fraction of that)
    transcendental_above: dict[UOp, bool] = {}
    for u in reversed(topo):
        transcendental_above[u] = any(
            c not in realize and (c.op in GroupOp.Transcendental or transcendental_above.get(c, False))
            for c in consumers[u]
        )
        if transcendental_above[u] and u.op is Ops.REDUCE and u not in realize and _big_reduce(u):
            realize.add(u)
    _materialize_reindexed_reduces(topo, consumers, realize)
    # an elementwise value read by two kernels or more is materialized when recomputing it reads SHARED_LOADS
    # buffers or more: a residual stream x = x + f(x) would otherwise be re-added from every earlier layer's
    # output in each kernel that reads it (quadratic in depth). A REDUCE read by two kernels or more always is:
    # each kernel's opts round it differently, and a max's gradient compares the input with the max it had
    # (recomputed elsewhere, no element matched: 0 / 0)
    reads, heavy = _reads_and_transcendentals(topo, realize)
    feeds: dict[UOp, tuple[UOp, ...]] = {}  # up to two kernels (their materialized roots) that read u
    for u in reversed(topo):
        ks: tuple[UOp, ...] = ()
        for c in consumers[u]:
            for k in (c,) if c in realize else feeds.get(c, ()):
                if k not in ks and len(ks) < 2:
                    ks = (*ks, k)
        if (
            u not in realize
            and len(ks) == 2
            and (
                u.op is Ops.REDUCE
                or (u.op in GroupOp.ALU and (len(reads[u]) >= SHARED_LOADS or len(heavy[u]) >= SHARED_TRANSCENDENTALS))
            )
        ):
            realize.add(u)
        feeds[u] = ks
    _cap_kernel_bodies(topo, realize)
    return realize


_REINDEX = frozenset({*GroupOp.View, Ops.REDUCE}) - {Ops.RESHAPE}  # ops that read their source at other indices


def _materialize_reindexed_reduces(topo: list[UOp], consumers: dict[UOp, list[UOp]], realize: set[UOp]) -> None:
    """Materialize each REDUCE that its kernel reads through two different chains of views (or reductions): fused,
    the kernel holds its reduce loop once per chain. The gradient of a cat of chunks (an LSTM's four gates) pads
    each chunk's gradient into place; each chunk reads h @ W_hh at its own offset, so the gate backward held four
    copies of the reduction and of the math around it (2.5k ops, 36 s of gcc once upcast). A REDUCE under a PAD
    is materialized too: fused, its loop runs for every element of the padded result, the padding's included (its
    loads gated off): a cat of 199 time steps' Linear outputs ran 199 reduce loops per element (161 ms a step, 1.4 s
    of gcc). A chain is numbered by (view, the chain above it); up to two distinct chains are kept per value,
    consumers first."""
    ids: dict[tuple[UOp, int], int] = {}
    chains: dict[UOp, tuple[int, ...]] = {}
    padded: dict[UOp, bool] = {}  # u reaches its kernel's root through a PAD (a consumer outside the kernel: no)
    for u in reversed(topo):
        seen: tuple[int, ...] = ()
        under_pad = False
        if u not in realize:
            for c in consumers[u]:
                if c in realize or not (c.op in GroupOp.ALU or c.op in GroupOp.View or c.op is Ops.REDUCE):
                    above: tuple[int, ...] = (0,)  # a kernel's root (or a boundary): read at the root's own index
                elif c.op in _REINDEX:
                    above = tuple(ids.setdefault((c, k), len(ids) + 1) for k in chains[c])
                else:
                    above = chains[c]
                for k in above:
                    if k not in seen and len(seen) < 2:
                        seen = (*seen, k)
            under_pad = any(c.op is Ops.PAD or padded[c] for c in consumers[u])
            if u.op is Ops.REDUCE and (len(seen) == 2 or under_pad):
                realize.add(u)
        chains[u], padded[u] = (seen, under_pad) if u not in realize else ((0,), False)


def _cap_kernel_bodies(topo: list[UOp], realize: set[UOp]) -> None:
    """Materialize each elementwise value whose kernel body (its graph down to materialized values and buffers)
    passes MAX_KERNEL_OPS ops, or joins more than MAX_KERNEL_REDUCES big REDUCEs or MAX_KERNEL_LOOPS REDUCEs, in
    topological order, so every kernel body stays within about twice the limit.

    A body is counted exactly, as a bitmask of its ALU and REDUCE nodes (the union of its sources' masks): a value
    used three times per step, y = where(y > a, y * b, y + c), makes a count of the body as a tree exponential in
    the chain's length. Transcendentals, also in a second mask, count TRANSCENDENTAL_OPS each; big REDUCEs are a
    third, all REDUCEs a fourth."""
    # u's body within its kernel: its nodes, one bit each (numbered in topological order), as masks shifted down by
    # the lowest bit (a mask of all the nodes before it, rebuilt for each node, was quadratic: 3 s of a 199-step
    # LSTMCell's schedule): (lowest bit, nodes, transcendentals, big REDUCEs, REDUCEs)
    body: dict[UOp, tuple[int, int, int, int, int]] = {}
    bits = 0  # nodes numbered so far
    for u in topo:
        if u in realize or _is_buffer_leaf(u):
            continue
        parts = [body[s] for s in u.src if s in body]
        if u.op not in GroupOp.ALU and u.op is not Ops.REDUCE and len(parts) <= 1:
            if parts:  # a view (or a load) of one body: the same body
                body[u] = parts[0]
            continue
        if u.op in GroupOp.ALU or u.op is Ops.REDUCE:
            reduce = u.op is Ops.REDUCE
            parts.append((bits, 1, int(u.op in GroupOp.Transcendental), int(reduce and _big_reduce(u)), int(reduce)))
            bits += 1
        base = min((p[0] for p in parts), default=0)
        nodes = heavy = big = loops = 0
        for b, n, h, r, lp in parts:
            shift = b - base
            nodes, heavy, big, loops = nodes | n << shift, heavy | h << shift, big | r << shift, loops | lp << shift
        ops = nodes.bit_count() + (TRANSCENDENTAL_OPS - 1) * heavy.bit_count()
        too_many = big.bit_count() > MAX_KERNEL_REDUCES or loops.bit_count() > MAX_KERNEL_LOOPS
        if u.op in GroupOp.ALU and (ops > MAX_KERNEL_OPS or too_many):
            realize.add(u)  # its consumers read it from a buffer: their bodies start again from nothing
        elif parts:
            body[u] = (base, nodes, heavy, big, loops)


def _small_broadcast(u: UOp) -> bool:
    """Whether u has fewer than SMALL_BROADCAST elements (known): recomputing a value for each of them costs less
    than a kernel of its own."""
    n = prod(u.shape)
    return isinstance(n, int) and n < SMALL_BROADCAST


def _broadcast_factor(e: UOp) -> int:
    """How many copies of each element an EXPAND makes, or how many times bigger a PAD makes its source (0 for
    symbolic shapes, and for a scalar: it does not depend on any loop, so the kernel computes it once, outside them)."""
    out, src = prod(e.shape), prod(e.src[0].shape)
    return out // src if isinstance(out, int) and isinstance(src, int) and src > 1 else 0


def _inside(v: UOp, realize: set[UOp]) -> Iterator[UOp]:
    """v's graph within its kernel: up to (and with) the materialized values and buffers it reads, each once, in no
    particular order. Lazy: a caller that knows its answer stops the walk (an unrolled recurrence's elementwise
    chain is long, and asking each of its values walked it whole: quadratic, 7 s of a 199-step LSTM's schedule)."""
    seen, stack = {v}, [v]
    while stack:
        x = stack.pop()
        yield x
        if x is v or (x not in realize and not _is_buffer_leaf(x)):
            for s in x.src:
                if s not in seen:
                    seen.add(s)
                    stack.append(s)


def _read_by(v: UOp, u: UOp, realize: set[UOp]) -> bool:
    """True when u, in v's graph, is a buffer or materialized value that computing v reads."""
    return u is not v and (u in realize or _is_buffer_leaf(u))


def _reads_and_transcendentals(
    topo: list[UOp], realize: set[UOp]
) -> tuple[dict[UOp, frozenset[UOp]], dict[UOp, frozenset[UOp]]]:
    """For each value, within its kernel: the buffers and materialized values computing it reads (up to SHARED_LOADS
    of them) and the transcendentals it computes (up to SHARED_TRANSCENDENTALS). Bottom-up, each from its sources'
    (a walk down from each value of an unrolled recurrence's elementwise chain was quadratic: 7 s of the schedule of
    a 199-step LSTMCell's training step). The kernel-split loop that asks adds only values above the one it asks
    about, so answers computed before it starts stay true."""
    reads: dict[UOp, frozenset[UOp]] = {}
    heavy: dict[UOp, frozenset[UOp]] = {}
    for u in topo:
        r: set[UOp] = set()
        h: set[UOp] = {u} if u.op in GroupOp.Transcendental else set()
        for s in u.src:
            if s in realize or _is_buffer_leaf(s):
                r.add(s)
            else:
                r |= reads[s]
                h |= heavy[s]
        reads[u] = frozenset(r) if len(r) <= SHARED_LOADS else frozenset(list(r)[:SHARED_LOADS])
        heavy[u] = frozenset(h) if len(h) <= SHARED_TRANSCENDENTALS else frozenset(list(h)[:SHARED_TRANSCENDENTALS])
    return reads, heavy


def _costly(v: UOp, realize: set[UOp]) -> bool:
    """True when computing v (within its kernel) reads RECOMPUTE_LOADS buffers or more, takes RECOMPUTE_OPS ALU
    ops or more over at least one buffer, a transcendental function, or a reduction not materialized yet. A value
    that reads no buffer is a function of the index (an arange's digits, a mask of aranges): push_pure folds it to
    index math, cheap everywhere."""
    loads, ops = 0, 0
    for u in _inside(v, realize):
        if _read_by(v, u, realize):
            loads += 1
        elif u.op in GroupOp.Transcendental or u.op is Ops.REDUCE:  # a reduction recomputed per copy: costly
            return True
        elif u.op in GroupOp.ALU and u.op is not Ops.CAST:
            ops += 1
        if loads >= RECOMPUTE_LOADS or (ops >= RECOMPUTE_OPS and loads > 0):
            return True
    return False


def _is_view_assign(u: UOp) -> bool:
    return u.op is Ops.AFTER and len(u.src) == 2 and u.src[1].op is Ops.STORE and u.src[0].op in GroupOp.View


def _big_reduce(u: UOp) -> bool:
    """A REDUCE with at least NESTED_MIN_OUT outputs, each summing at least NESTED_MIN_SIZE values (int shapes)."""
    out, full = prod(u.shape), prod(u.src[0].shape)
    if not isinstance(out, int) or not isinstance(full, int) or out == 0:
        return False
    return out >= NESTED_MIN_OUT and full // out >= NESTED_MIN_SIZE


def _wide_reduce(u: UOp) -> bool:
    """A REDUCE with at least NESTED_ROWS outputs summing at least NESTED_WORK values in all (int shapes)."""
    out, full = prod(u.shape), prod(u.src[0].shape)
    return isinstance(out, int) and isinstance(full, int) and out >= NESTED_ROWS and full >= NESTED_WORK


def _kernel_calls(materialized: UOp) -> list[UOp]:
    """The CALL that fills a materialized value, RESHAPE(AFTER(buffer, CALL)) -> [CALL]; [] for an empty value
    (nothing computes it)."""
    u = materialized
    while u.op is Ops.RESHAPE:
        u = u.src[0]
    return list(u.src[1:]) if u.op is Ops.AFTER else []


def rangeify(fn: UOp, default_device: str) -> UOp:
    """FUNCTION(TUPLE(outs), args) -> FUNCTION(TUPLE(views over kernel outputs), args); see module doc."""
    body = fn.src[0]
    topo = body.toposort()
    if any(is_traced_call(u) for u in topo):  # the @function calls callify keeps: inlined first
        body = inline_functions(body)
        topo = body.toposort()
    realize = _materialize_points(body, topo)
    next_slot = len(fn.src) - 1
    memo: dict[UOp, UOp] = {}

    def new_buffer(shape: tuple, dtype: DType, device: object) -> UOp:
        nonlocal next_slot
        p = UOp(Ops.PARAM, (UOp.shape_src((prod(shape),)),), ParamArg(next_slot, dtype, device, AddrSpace.GLOBAL))
        next_slot += 1
        return p

    def materialize(value: UOp, device: object) -> UOp:
        out = new_buffer(value.shape, value.dtype, device)
        if 0 in value.shape:  # nothing to compute
            return UOp(Ops.RESHAPE, (out, UOp.shape_src(value.shape)))
        ast, leaves = build_kernel(value, value.dtype, device)
        call = UOp(Ops.CALL, (ast, out, *leaves))
        return UOp(Ops.RESHAPE, (UOp(Ops.AFTER, (out, call)), UOp.shape_src(value.shape)))

    def copy(value: UOp, device: object) -> UOp:
        src = value if is_contiguous_view(value) else materialize(value, value.device or default_device)
        leaf = src
        while leaf.op is Ops.RESHAPE:
            leaf = leaf.src[0]
        out = new_buffer(value.shape, value.dtype, device)
        ast = UOp(Ops.LOAD, (_param_like(leaf, 1),), LoadArg(device, AddrSpace.GLOBAL))
        call = UOp(Ops.CALL, (ast, out, leaf))
        return UOp(Ops.RESHAPE, (UOp(Ops.AFTER, (out, call)), UOp.shape_src(value.shape)))

    def assign(store: UOp) -> UOp:
        """STORE(target view, value) at the tensor level: a kernel writing into the target's buffer."""
        target, value = store.src
        buf = view_base(target)
        ast, leaves = build_kernel(value.reshape_to(target.shape), value.dtype, buf.device, buf, target)
        if reads_output_elsewhere(ast):  # compute the new value aside first, then copy it in
            tmp = materialize(value, value.device or default_device)
            ast, leaves = build_kernel(tmp.reshape_to(target.shape), value.dtype, buf.device, buf, target)
        call = UOp(Ops.CALL, (ast, buf, *leaves))
        assigns.append((call, buf, target, value))
        return call

    def order_assigns(out: UOp) -> UOp:
        """Other kernels of this function that read an assigned buffer's old value must run before the write.
        When none of those readers is computed from an assign that waits too, the assign stays in place and waits
        for them (AFTER on its output: an optimizer's update of a weight the backward still reads). Otherwise it
        computes its value into a new buffer first, and the copy into the target waits for every old-value reader.
        A reader that is itself a moved assign reads the old value in its new-value kernel: the copy waits for that
        one (two assigns that read each other's targets both compute first, then both copy)."""
        topo = out.toposort(gate=lambda x: not _is_kernel_ast(x))
        calls = [u for u in topo if u.op is Ops.CALL]
        readers: dict[UOp, list[UOp]] = defaultdict(list)
        for c in calls:
            for a in c.src[1:]:
                if a.op is Ops.PARAM:
                    readers[a].append(c)
        waits: dict[UOp, list[UOp]] = {}  # an assign's call -> the old-value readers it (or its copy) waits for
        for call, buf, _, _ in assigns:
            before = set(call.toposort(gate=lambda x: not _is_kernel_ast(x)))  # kernels this one already waits for
            if others := [c for c in readers.get(buf, []) if c not in before and c.src[1] is not buf]:
                waits[call] = others
        if not waits:
            return out
        # an assign whose old-value readers wait for no waiting assign simply runs after them, in place (the
        # new edges reader -> assign close no cycle: no path leads from those readers to any waiting assign)
        after_waiting: set[UOp] = set()  # the waiting assigns and every node computed from one
        for u in topo:
            if u in waits or not after_waiting.isdisjoint(u.src):
                after_waiting.add(u)
        replace: dict[UOp, UOp] = {}
        for call, buf, _, _ in assigns:
            if call in waits and after_waiting.isdisjoint(waits[call]):
                replace[call] = UOp(Ops.CALL, (call.src[0], UOp(Ops.AFTER, (buf, *waits.pop(call))), *call.src[2:]))
        computed: dict[UOp, UOp] = {}  # a moved assign's call -> the new value in its own buffer
        for call, _, _, value in assigns:
            if call in waits:
                computed[call] = materialize(value, value.device or default_device)
        for call, buf, target, value in assigns:
            if call not in waits:
                continue
            tmp = computed[call]
            deps = [d for c in waits[call] for d in (_kernel_calls(computed[c]) if c in computed else [c])]
            ast, leaves = build_kernel(tmp.reshape_to(target.shape), value.dtype, buf.device, buf, target)
            replace[call] = UOp(Ops.CALL, (ast, UOp(Ops.AFTER, (buf, *deps)), *leaves))
        # a replacement may name (through a value it reads) another moved assign's old call: resolve them among
        # themselves, or the old in-place call stays in the graph and runs as well
        for _ in range(len(replace) + 1):  # each round resolves one more link of the longest chain
            changed = False
            for call, new in replace.items():
                if (resolved := new.substitute(replace, walk=lambda x: not _is_kernel_ast(x))) is not new:
                    replace[call], changed = resolved, True
            if not changed:
                return out.substitute(replace, walk=lambda x: not _is_kernel_ast(x))
        raise RuntimeError("rangeify: the assigns of this realize wait for each other in a cycle")

    assigns: list[tuple[UOp, UOp, UOp, UOp]] = []

    devices: dict[UOp, object] = {}  # node -> the device of its rebuilt node (memo[node]), as UOp.device says
    for u in topo:
        if u is body:
            continue
        nu = u.rebuilt(tuple(memo[s] for s in u.src))  # (materialized values are views of their shapes)
        if u.op is Ops.STORE:
            memo[u] = assign(nu)
            devices[u] = memo[u].device
            continue
        if u.op is Ops.AFTER and nu.src[0].op in GroupOp.View and any(s.op is Ops.CALL for s in nu.src[1:]):
            view = nu.src[0]  # AFTER(view of buf, CALL) -> view of AFTER(buf, CALL), one level of AFTER
            leaf = view_base(view)
            after = (
                leaf.replace(src=leaf.src + nu.src[1:]) if leaf.op is Ops.AFTER else UOp(Ops.AFTER, (leaf, *nu.src[1:]))
            )
            memo[u] = view.substitute({leaf: after})
            devices[u] = memo[u].device
            continue
        # nu's device, from its sources' (nu.device would walk down each materialized value's kernel: 6k walks of an
        # unrolled LSTMCell's schedule)
        device = devices[u] = device_of(u, devices.__getitem__)
        if u not in realize:
            memo[u] = nu
            continue
        if u.op is Ops.LOAD:
            src = nu.src[0]
            src_device = devices[u.src[0]]
            target = u.arg.device or src_device or default_device
            is_copy = u.arg.device is not None and src_device is not None and src_device != u.arg.device
            memo[u] = copy(src, target) if is_copy else materialize(src, target)
            devices[u] = target
        else:
            memo[u] = materialize(nu, device or default_device)
            devices[u] = device or default_device
    out = UOp(Ops.TUPLE, tuple(memo[o] for o in body.src))
    if assigns:
        out = order_assigns(out)
    if config.MERGE_KERNELS.value:
        out = merge_kernels(out, alias_groups(fn.src[1:]), MAX_KERNEL_OPS)
    return UOp(Ops.FUNCTION, (out,) + fn.src[1:])
