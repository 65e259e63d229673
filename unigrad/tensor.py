"""Tensor: a lazy handle on a UOp graph; the API users write against (PyTorch/tinygrad names).

Every method builds UOps; nothing computes until realize()/numpy()/item()/tolist(). Broadcasting is
explicit in the graph (EXPAND), so elementwise UOps always see equal shapes. Errors are raised here,
at the call that caused them, with the op, the shapes/dtypes and what was expected.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import itertools
import math
import operator
import pathlib
import weakref
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np

from unigrad import config, flavor
from unigrad.api.creation import CreationMixin
from unigrad.api.inplace import InplaceMixin
from unigrad.api.linalg import LinalgMixin
from unigrad.api.math import MathMixin
from unigrad.api.movement import MovementMixin
from unigrad.api.nn import NNMixin
from unigrad.api.random import RandomMixin
from unigrad.api.reduce import ReduceMixin, ValuesIndices
from unigrad.dtype import ConstType, DType, dtypes, promote_types, promote_with_dims, result_dtype_with_scalar, to_dtype
from unigrad.gradient import gradients, realized_from, remember_graph
from unigrad.helpers import RemovableHandle, no_gc, record
from unigrad.ir.args import LoadArg, ReduceArg
from unigrad.ir.ops import GroupOp, Ops
from unigrad.ir.props import broadcast_shapes
from unigrad.ir.sint import always_le, fits_bound, resolve_shape, sadd, sfloordiv, sint, smax, smin, smul, sprod, ssub
from unigrad.ir.spec import verify_tensor_op
from unigrad.ir.uop import UOp
from unigrad.pipeline import multi
from unigrad.pipeline.expand import identity_element
from unigrad.pipeline.rangeify import view_base
from unigrad.runtime import Device, to_numpy_dtype
from unigrad.runtime import jit as rt_jit
from unigrad.runtime import multi as rt_multi
from unigrad.runtime import realize as rt

Shape = tuple[int, ...]
# broadcast constants by (value, type, dtype, shape), kept alive: an op with a scalar (x + 1, lr * g) reuses the
# same three UOps instead of building and freeing them on every call (oldest dropped past the size; an OrderedDict
# drops it in O(1), where a dict's first key is found by skipping the deleted entries before it)
CONST_CACHE_SIZE = 4096
_const_uops: OrderedDict[tuple[Any, ...], UOp] = OrderedDict()
_arange_uops: OrderedDict[tuple[Any, ...], UOp] = OrderedDict()  # Tensor.arange's graphs by arguments (no device)
V = TypeVar("V")
_broadcasts: OrderedDict[tuple[Any, ...], Shape] = OrderedDict()  # _broadcast_shape's valid results by the shapes
_const_views: OrderedDict[Shape, tuple[UOp, UOp]] = OrderedDict()  # _const_uop's RESHAPE, EXPAND operands by shape

_NP_TO_DTYPE = {np.dtype(d.fmt): d for d in dtypes.all() if d.fmt is not None}


def _prod(xs: Sequence[int]) -> int:
    out = 1
    for x in xs:
        out *= x
    return out


def _shape_arg(shape: Sequence[Any]) -> Shape:
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = shape[0]
    return tuple(shape)


def creation_shape(op: str, shape: Sequence[Any]) -> tuple[sint, ...]:
    """`shape` of a creation function (zeros, empty, rand, ...) as ints (numpy ints too) or symbolic sizes; a
    negative size raises flavor.negative_size_error, a size that is no int flavor.non_int_size_error."""
    out: list[sint] = []
    for s in shape:
        if isinstance(s, UOp):
            v: sint = s
        else:
            try:
                v = operator.index(s)
            except TypeError:
                raise flavor.current().non_int_size_error(
                    f"{op}: sizes must be ints, got {type(s).__name__} in shape {tuple(shape)}"
                ) from None
        if smin(v) < 0:
            raise flavor.current().negative_size_error(
                f"{op}: trying to create tensor with negative dimension {v}: {list(shape)}"
            )
        out.append(v)
    return tuple(out)


def _acc_dtype(src: DType, dtype: DType | str | None) -> DType:
    """The dtype a sum or prod of `src` accumulates in: dtype= if given (a name that names none raises
    flavor.unknown_dtype_error: tinygrad's AttributeError, it looks the name up on dtypes; torch TypeError), else
    flavor.acc_dtype(src) (src for floats, the flavor's integer accumulator for ints and bools)."""
    if dtype is None:
        return flavor.acc_dtype(src)
    try:
        return to_dtype(dtype)
    except TypeError as e:
        if isinstance(dtype, str):
            raise flavor.current().unknown_dtype_error(str(e)) from None
        raise


def _norm_axis(op: str, axis: int, ndim: int) -> int:
    lo, hi = (-ndim, ndim - 1) if ndim > 0 else (-1, 0)
    try:
        axis = operator.index(axis)  # ints and numpy ints
    except TypeError:
        raise TypeError(f"{op}: a dimension must be an int, got {axis!r}") from None
    if not lo <= axis <= hi:
        raise IndexError(f"{op}: dimension out of range (expected to be in range of [{lo}, {hi}], but got {axis})")
    return axis + ndim if axis < 0 else axis


# torch's in-place cast rule: a result may be written into a tensor of the same or a higher kind (bool < int < float)
SPLIT_REDUCE_MIN = 1 << 17  # reduced elements per output from which a reduce runs as two kernels
SPLIT_REDUCE_MAX_OUT = 64  # ... when it has at most this many outputs (more outputs already fill the cores)
SPLIT_REDUCE_PARTS = (256, 128, 64, 32, 16)  # partial results of such a reduce, the most that leaves each >= 1024
# ... or, first, any count of parts in that range whose share is a multiple of this: each part's sum then gets split
# accumulators and vector lanes (optimize/heuristic.py SPLIT_ACC). 1000 x 1000 in 64 parts of 15625 was one
# scalar chain of 15625 adds per part (1e-3 relative error, and slow); in 250 parts of 4000 it is 32 chains
SPLIT_REDUCE_SHARE_MULTIPLE = 32
# matmul B packing (Tensor._packed_for_matmul): panels as wide as the register tile (16 floats: one AVX-512 vector,
# two AVX2 ones; optimize/heuristic.py TILE_INNER), for a B of at least PACK_MIN_BYTES multiplied by at least
# PACK_MIN_ROWS rows (the copy is then a small part of the work; a 512^3 matmul reads B's rows 2 KiB apart, which
# share few cache sets: packed, 2.67 -> 1.80 ms on a 2-core Zen 3)
PACK_LANES = 16
PACK_MIN_BYTES = 512 << 10
PACK_MIN_ROWS = 256
# a transposed B (x @ W.T) of at least PACK_T_MIN_BYTES is copied contiguous for this many rows or more: the copy
# (~40 / M of the matmul's time) pays once the packed matmul's third saved exceeds it (MiniLM's 66 tokens lost 1 ms)
PACK_T_MIN_ROWS = 128
# ... over a reduce axis shorter than this: a longer one reads W along it as well (the kernel's lanes on the reduce
# axis, split accumulators: 128 x 384 @ W.T(1536) 0.78 ms unpacked, 0.88 packed); a short one leaves those lanes few
# steps for their final sums (700 x 64 @ W.T(1000): 1.18 ms unpacked, 0.41 packed)
PACK_T_MAX_K = 256
PACK_T_MIN_BYTES = 64 << 10
_KIND_RANK = {"b": 0, "u": 1, "i": 1, "f": 2, "x": 1}
_TORCH_NAMES = {"int8": "Char", "int16": "Short", "int32": "Int", "int64": "Long", "uint8": "Byte", "float16": "Half"}
_TORCH_NAMES |= {"bfloat16": "BFloat16", "float32": "Float", "float64": "Double", "bool": "Bool"}


def _torch_name(dt: DType) -> str:
    """The name torch's messages give a dtype (Float, Long, ...)."""
    return _TORCH_NAMES.get(dt.name, dt.name.replace("uint", "UInt"))


# leaves with requires_grad=True, by id (a WeakSet would compare tensors with ==, which builds a Tensor);
# held weakly: backward() fills their .grad
_leaves: weakref.WeakValueDictionary[int, Tensor] = weakref.WeakValueDictionary()
# parameters, by id: `nn.Parameter(t)`, a layer's weights, a tensor under a module's parameter name (unigrad.nn.Module
# marks them; `isinstance(t, nn.Parameter)` reads the mark). In the torch flavor they require grad from birth; in
# tinygrad's a float one made without requires_grad stays undecided (None, read as True) until an optimizer or a
# backward() whose graph reads it turns it on (flavor.parameters_require_grad)
_params: weakref.WeakValueDictionary[int, Tensor] = weakref.WeakValueDictionary()
# tensors the user made (constructor, factories) in tinygrad's flavor without saying requires_grad, by id: a backward()
# whose graph reads one fills its .grad (tinygrad computes gradients for everything not marked requires_grad=False)
_unmarked: weakref.WeakValueDictionary[int, Tensor] = weakref.WeakValueDictionary()
# non-leaf tensors after retain_grad(), by id: backward() fills their .grad too (a realized one's buffer is a
# target gradients() sees through, as it sees through realized values on the way to the leaves)
_retained: weakref.WeakValueDictionary[int, Tensor] = weakref.WeakValueDictionary()
# tensors with gradient hooks (register_hook), by id, and their hooks by handle id (in registration order)
_hooked: weakref.WeakValueDictionary[int, Tensor] = weakref.WeakValueDictionary()
_hook_fns: dict[int, dict[int, Callable[[Tensor], Tensor | None]]] = {}
# hooks run by backward() on a leaf after its .grad got this backward's gradient (register_post_accumulate_grad_hook),
# by the leaf's id, then by handle id; the leaf's weak entry tells a freed leaf's hooks from a new one's
_post_hooked: weakref.WeakValueDictionary[int, Tensor] = weakref.WeakValueDictionary()
_post_hook_fns: dict[int, dict[int, Callable[[Tensor], None]]] = {}


def _gradient_hooks() -> dict[UOp, Callable[[UOp], UOp]]:
    """The hooks of the live hooked tensors, by their node: each runs the tensor's hooks in turn on its gradient
    (a hook returning None leaves it as it was)."""
    for key in [k for k in _hook_fns if k not in _hooked]:  # tensors freed since
        del _hook_fns[key]
    out: dict[UOp, Callable[[UOp], UOp]] = {}
    for key, t in list(_hooked.items()):
        fns = list(_hook_fns.get(key, {}).values())
        if fns:
            out[t.uop] = functools.partial(_run_hooks, fns, t.device)
    return out


def _register_hook(
    table: dict[int, dict[int, Callable[..., Any]]],
    owners: weakref.WeakValueDictionary[int, Tensor],
    t: Tensor,
    hook: Callable[..., Any],
) -> RemovableHandle:
    """hook added to t's hooks in `table` (by id: a new tensor under a freed one's id starts with none); its handle."""
    fns = table.setdefault(id(t), {})
    if owners.get(id(t)) is not t:
        fns.clear()
        owners[id(t)] = t
    handle = RemovableHandle(fns)
    fns[handle.id] = hook
    return handle


def _run_hooks(fns: list[Callable[[Tensor], Tensor | None]], device: Any, g: UOp) -> UOp:
    for fn in fns:
        r = fn(Tensor(g, device=device))
        if r is not None:
            if not isinstance(r, Tensor) or r.shape != tuple(g.shape):
                got = r.shape if isinstance(r, Tensor) else type(r).__name__
                raise RuntimeError(
                    f"register_hook: a hook must return None or a gradient of shape {tuple(g.shape)}, got {got}"
                )
            g = r.uop
    return g


def _rebuild(
    values: np.ndarray,
    dtype: DType,
    device: str | tuple[str, ...],
    axis: int | None,
    grad: bool | None,
    param: bool = False,
) -> Tensor:
    """An unpickled tensor (Tensor.__reduce__): its values in a buffer of its own, its requires_grad (None: an
    undecided parameter) and its parameter mark."""
    if isinstance(device, tuple):
        t = Tensor(values, dtype=dtype).shard(device, axis)
    else:
        t = Tensor(values, dtype=dtype, device=device)
    t.realize()
    if grad is not None and (grad or param):
        t.requires_grad = grad
    if param:
        t._mark_parameter()
    return t


def _is_buffer_view(u: UOp) -> bool:
    return u.op is Ops.BUFFER or (u.op is Ops.RESHAPE and u.src[0].op is Ops.BUFFER)


def _broadcast_shape(op: str, *shapes: Shape) -> Shape:
    """The broadcast of `shapes` (right-aligned, each axis equal or 1), or a RuntimeError naming them. Valid
    broadcasts are remembered (a bias add or a scalar tensor repeats the same pair every step)."""
    if (out := _broadcasts.get(shapes)) is not None:
        return out
    out = broadcast_shapes(*shapes)
    for sh in shapes:
        if any(a != b and a != 1 for a, b in zip(sh[::-1], out[::-1])):
            raise RuntimeError(f"{op}: shapes {' and '.join(map(str, shapes))} cannot be broadcast together")
    return _remember(_broadcasts, shapes, out)


# assigns not yet scheduled (the AFTER(target, STORE) node -> its tensor) and those scheduled (node -> the
# view of the written buffer that replaces it in any graph built before): an assign's kernel runs once
_assign_ids = itertools.count()
_assign_owner: weakref.WeakValueDictionary[UOp, Tensor] = weakref.WeakValueDictionary()
# bitcast results (by node) and the tensor each reinterprets: `t[a:b].bitcast(dt).assign(v)` writes t's bits, as
# tinygrad's bitcast is a view of the same memory
_bitcast_views: weakref.WeakKeyDictionary[UOp, Tensor] = weakref.WeakKeyDictionary()
# ... and held while pending when the target is a view of another tensor's buffer (`t[1].assign(v)`: the view is
# dropped at once, and the write must still reach t when t is read)
_view_assigns: dict[UOp, Tensor] = {}
_assigns_done: weakref.WeakKeyDictionary[UOp, UOp] = weakref.WeakKeyDictionary()

# the unrealized tensors backward() ran from (a loss), by id, held weakly: a schedule that writes buffers (pending
# assigns: an optimizer step) computes them too, before the writes, so `loss.item()` after `opt.step()` is the
# loss of the weights it was built from, as in torch
_backward_roots: weakref.WeakValueDictionary[int, Tensor] = weakref.WeakValueDictionary()

# every tensor an op made (Tensor._new), held weakly, until it is seen realized or gone: a schedule that writes
# buffers computes the live ones whose graphs read a written buffer first (_stale_readers), so `out = model(x)`
# read after `opt.step()` holds the outputs of the weights it was built from, as torch computed it at the call
_made: list[weakref.ReferenceType[Tensor]] = []
_weakref = weakref.ref
_MADE_PRUNE = 4096  # entries before a realize that writes nothing drops the dead and realized ones


_HOST_VIEWS = frozenset({Ops.RESHAPE, Ops.SHRINK, Ops.PERMUTE, Ops.EXPAND, Ops.FLIP})


def _view_values(u: UOp) -> np.ndarray | None:
    """The values of a view of a filled buffer (movement ops over a BUFFER) copied out on the host, where the device
    lets the host address the buffer (CPU): the same movements as numpy views of its memory (offsets and strides, no
    arithmetic), then one copy. `data[i].item()` reads its element without a kernel, a schedule and a temporary
    buffer (~130 us -> ~20). None where it does not apply (another device, symbolic sizes, a dtype numpy lacks, a
    buffer never allocated): numpy() then copies the view with a kernel."""
    chain = []
    while u.op in _HOST_VIEWS:
        if not all(d.__class__ is int for d in u.shape):
            return None
        chain.append(u)
        u = u.src[0]
    buf = rt.buffers.get(u) if u.op is Ops.BUFFER else None
    if buf is None or not buf.allocated or buf.dtype.fmt is None or buf.dtype is dtypes.bfloat16:
        return None
    raw = Device[buf.device].allocator.host_view(buf.handle, buf.nbytes)
    if raw is None:
        return None
    arr = raw.view(to_numpy_dtype(buf.dtype))
    for v in reversed(chain):
        if v.op is Ops.RESHAPE:
            arr = arr.reshape(v.shape)
        elif v.op is Ops.SHRINK:
            starts = v.src[1].as_shape
            if not all(b.__class__ is int for b in starts):
                return None
            arr = arr[tuple(slice(b, b + n) for b, n in zip(starts, v.shape))]
        elif v.op is Ops.PERMUTE:
            arr = arr.transpose(v.arg)
        elif v.op is Ops.EXPAND:
            arr = np.broadcast_to(arr, v.shape)
        else:  # FLIP
            arr = arr[tuple(slice(None, None, -1) if f else slice(None) for f in v.arg)]
    return np.array(arr)


def graph_tensor(u: UOp, device: str | tuple[str, ...]) -> Tensor:
    """A Tensor over a graph the library built (a gradient rule's operands: the function's arguments and the
    output's gradient), without the constructor's parsing and not registered as a tensor of the user's: it is
    read and dropped by the rule. Its results, made by Tensor ops, are tensors as any."""
    t = object.__new__(Tensor)
    t.uop, t.device, t._requires_grad, t.grad = u, device, None, None
    return t


def _buffer_under(u: UOp) -> UOp:
    """The BUFFER a view (of an assign, of an assign ...) of a buffer looks at."""
    u = view_base(u)
    while u.op is Ops.AFTER:
        u = view_base(u.src[0])
    return u


def _live_made() -> list[Tensor]:
    """The tensors in _made still alive and not yet views of filled buffers; in tinygrad's flavor all those alive
    (its backward looks for the user's leaves among them, realized ones too: flavor.grad_unmarked_leaves). The list
    keeps just those, so every walk of it prunes by the same rule."""
    keep_realized = flavor.current().grad_unmarked_leaves
    alive, refs = [], []
    for r in _made:
        t = r()
        if t is not None and (keep_realized or not _is_buffer_view(t.uop)):
            alive.append(t)
            refs.append(r)
    _made[:] = refs
    return alive


def _stale_readers(ts: tuple[Tensor, ...]) -> list[Tensor]:
    """The live tensors, not among ts, whose graphs compute from a buffer a pending assign writes (not through
    that assign: those read the new value by design). Realized before the writes, they keep the values torch gave
    them. A view (movement ops over a buffer: `u[1:]`) is no reader: it shows the buffer, as torch's views do."""
    pending = set(_assign_owner.keys())
    written = {_buffer_under(a.src[0]) for a in pending}
    given = {id(o) for o in ts}
    candidates = [
        t
        for t in _live_made()
        if id(t) not in given and t.uop not in pending and view_base(t.uop).op not in (Ops.BUFFER, Ops.AFTER)
    ]
    if not candidates:
        return []
    known: dict[UOp, bool] = {}  # shared by the candidates' walks (their graphs share most nodes)
    return [t for t in candidates if _reads_written(t.uop, written, pending, known)]


def _reads_written(root: UOp, written: set[UOp], pending: set[UOp], known: dict[UOp, bool]) -> bool:
    """Whether root's graph reads a buffer of `written`, not looking through the pending assigns: a node does when it
    is one or a source does. Depth first, each node's sources in order until one reads: a recurrent state reaches a
    weight within a few nodes, where a walk of its whole graph (an LSTM's 35 unrolled steps) took 3.5 ms a realize.
    `known`: the nodes decided so far."""
    stack: list[tuple[UOp, int]] = [(root, 0)]
    while stack:
        u, i = stack[-1]
        if u in known:
            stack.pop()
            continue
        if u in written or u in pending:
            known[u] = u in written
            stack.pop()
            continue
        src, found = u.src, False
        while i < len(src) and (k := known.get(src[i])) is not None:
            if k:
                found = True
                break
            i += 1
        if found or i == len(src):
            known[u] = found
            stack.pop()
        else:
            stack[-1] = (u, i)
            stack.append((src[i], 0))
    return known[root]


# the .grad tensors of the latest backward() calls, by id, until one of them is realized: then all of them are
# (their graphs share the backward pass, which one realize computes once instead of once per gradient read)
_grad_siblings: weakref.WeakValueDictionary[int, Tensor] = weakref.WeakValueDictionary()


def _with_grad_siblings(ts: tuple[Tensor, ...]) -> tuple[Tensor, ...]:
    """ts, after the unrealized sibling gradients when one of ts is a gradient from backward() or when the realize
    writes a buffer (an assign: `p.data -= lr * p.grad` one parameter at a time). The gradients read the values of
    before the write, as torch's, computed at backward(), do: they come first, and kernels run in output order. The
    last leaves' first, as torch's backward gives them (a network's last layers): DistributedDataParallel starts
    their buckets' all-reduce while the earlier layers' kernels run."""
    if not _assign_owner and not any(_grad_siblings.get(id(t)) is t for t in ts):
        return ts
    siblings = [g for g in _grad_siblings.values() if not _is_buffer_view(g.uop) and all(g is not t for t in ts)]
    _grad_siblings.clear()
    return (*siblings[::-1], *ts)


@record(eq=False)
class _Check:
    """A data-dependent precondition of an op (an index within its dim, a nonzero divisor, ...): `summary`, a bool
    scalar (is an element bad: one reduction), the flattened bad mask and values (UOps: the count and an example
    for the message are computed only when it fails), and the error to raise. It belongs to the tensors the op
    built from the checked values (`source`): `anchors`, held weakly, found as they are made (Tensor._new) until the
    first realize after the check. A realize whose graphs hold an anchor (the op's result, or anything computed from
    it) computes the summary with its outputs and raises; other realizes leave it queued, and once every anchor is
    freed the check is dropped."""

    summary: Tensor
    bad: UOp
    values: UOp
    error: Callable[[int, int], Exception]
    source: UOp
    anchors: list[weakref.ReferenceType[UOp]]


# the queued checks (not under TinyJit capture: a replay would not read them), and those still finding their anchors,
# by the UOp of the values they check
_checks: list[_Check] = []
_binding: dict[UOp, list[_Check]] = {}


def check_values(bad: Tensor, values: Tensor, error: Callable[[int, int], Exception]) -> None:
    """Have the realize of what is computed next from `values` (the op's result) raise error(count, example) when an
    element of the bool tensor `bad` is true; `values` (of bad's shape) gives the example reported."""
    if rt_jit.inside_jit() is not None or bad.numel() == 0:
        return
    b, v = bad.flatten(), values.flatten().cast(dtypes.int64)
    check = _Check(b.any(), b.uop, v.uop, error, values.uop, [])
    _checks.append(check)
    _binding.setdefault(values.uop, []).append(check)


def check_range(
    idx: Tensor, lo: int, hi: int, error: Callable[[int, int], Exception], allowed: int | None = None
) -> None:
    """check_values for an int tensor whose entries must lie in [lo, hi) (or equal `allowed`, an ignore_index)."""
    bad = (idx < lo) | (idx > hi - 1) if idx.dtype.kind in "iu" else (idx < lo) | (idx >= hi)  # (ints: 2 compares)
    check_values(bad if allowed is None else bad & (idx != allowed), idx, error)


def _bind_checks(u: UOp) -> None:
    """u was made from the values of checks still finding their anchors: it is one of theirs."""
    for s in u.src:
        for check in _binding.get(s, ()):
            check.anchors.append(_weakref(u))


def _due_checks(ts: Sequence[Tensor]) -> list[_Check]:
    """The queued checks with an anchor in the graphs of ts, taken off the queue (their summaries are computed with
    ts). Checks whose anchors are all freed are dropped; those that found anchors stop looking for more (the op
    that queued them has built its result: later tensors made from the same values are other computations)."""
    for check in _checks:
        if check.anchors and check in _binding.get(check.source, ()):
            _binding[check.source].remove(check)
            if not _binding[check.source]:
                del _binding[check.source]
    live: dict[UOp, list[_Check]] = {}
    kept: list[_Check] = []
    anchored = 0
    for check in _checks:
        anchors = [a for r in check.anchors if (a := r()) is not None]
        if anchors or not check.anchors:  # an unbound one waits for its op's result
            kept.append(check)
            anchored += bool(anchors)
            for a in anchors:
                live.setdefault(a, []).append(check)
    _checks[:] = kept
    if not live:
        return []
    found: dict[int, _Check] = {}  # a walk of ts' graphs that stops once every anchored check is found
    stack, seen = [t.uop for t in ts], set()
    while stack and len(found) < anchored:
        u = stack.pop()
        if u in seen:
            continue
        seen.add(u)
        for c in live.get(u, ()):
            found[id(c)] = c
        stack.extend(u.src)
    _checks[:] = [c for c in kept if id(c) not in found]
    return [c for c in kept if id(c) in found]  # in the order queued: the first op's error is raised


def _move_anchors(before: Sequence[UOp], after: Sequence[UOp]) -> None:
    """kernelize() replaced graphs `before` by `after` (which read their buffers): the queued checks anchored in a
    replaced graph are anchored to its replacement too, so realizing it still computes them."""
    anchored: dict[UOp, list[_Check]] = {}
    for check in _checks:
        for r in check.anchors:
            if (a := r()) is not None:
                anchored.setdefault(a, []).append(check)
    for b, a in zip(before, after):
        if a is not b and anchored:
            for check in {id(c): c for n in b.toposort() for c in anchored.get(n, ())}.values():
                check.anchors.append(_weakref(a))


def _raise_failed(checks: list[_Check]) -> None:
    """Raise the first error whose check found bad elements (the checks were realized with the outputs)."""
    for check in checks:
        if check.summary.item():
            b, v = Tensor(check.bad), Tensor(check.values)
            details = b.cast(dtypes.int64).sum().reshape(1).cat(b.where(v, dtypes.int64.min).max().reshape(1))
            count, example = details.tolist()  # the data it checked: nothing written it since this realize
            raise check.error(count, example)


def _same_size(a: sint, b: sint) -> bool:
    """a == b for symbolic sizes too: i+j is j+i (their difference simplifies to 0)."""
    if a is b or (a.__class__ is int and b.__class__ is int):
        return a == b
    d = ssub(a, b)
    return d.__class__ is int and d == 0


def _without_detach(u: UOp) -> UOp:
    """A view chain with its DETACH nodes dropped (`t.detach()[1:]` views t's buffer)."""
    chain = list(u.toposort(gate=lambda v: v.op in GroupOp.View or v.op is Ops.DETACH))
    cut = {v: v.src[0] for v in chain if v.op is Ops.DETACH}
    return u.substitute(cut) if cut else u


def _writes_read_by(ts: tuple[Tensor, ...]) -> list[Tensor]:
    """The owners of pending assigns (not in these graphs) that write a buffer the graphs of ts read: a write through
    a view (`t[1].assign(v)`, `t.T[0] = 5`) must run before its base, or another view of it, is read."""
    pending = {node: owner for node, owner in _assign_owner.items() if owner.uop is node}
    if not all(view_base(t.uop).op is Ops.BUFFER for t in ts):
        # a computation reads the buffer: only writes through views (its graph may hold earlier assigns to the
        # buffer itself, `r.assign(r * n); n.assign(n + 1)`, whose later ones must not run before it)
        pending = {node: owner for node, owner in pending.items() if node in _view_assigns}
    if not pending:
        return []
    nodes = set(UOp(Ops.SINK, tuple(t.uop for t in ts)).toposort())
    return [owner for node, owner in pending.items() if node not in nodes and _buffer_under(node.src[0]) in nodes]


def _held_intermediates(ts: tuple[Tensor, ...]) -> list[Tensor]:
    """The live lazy tensors, not among ts, that their graphs compute on the way (the torch flavor's
    compute_held_tensors): realized with them, so a value the user holds is computed once (a sampling loop's
    `idx = cat(idx, nxt)` stays one buffer instead of a graph of every earlier step). Views are left out (their base
    is a tensor of its own, or cheap to read again), as are bare leaves (a CONST)."""
    given = {id(t) for t in ts}
    held: dict[UOp, Tensor] = {}
    for t in _live_made():
        u = t.uop
        if id(t) not in given and u.op not in GroupOp.View and not _is_buffer_view(u) and u.src:
            held.setdefault(u, t)
    if not held:
        return []
    roots = {t.uop for t in ts}
    walk = UOp(Ops.SINK, tuple(roots)).toposort(gate=lambda n: not _is_buffer_view(n))
    return [held[n] for n in walk if n in held and n not in roots]


def _views_of(u: UOp, nodes: Mapping[UOp, UOp]) -> bool:
    """u is one of nodes, or movement ops over one."""
    while True:
        if u in nodes:
            return True
        if u.op not in GroupOp.View:
            return False
        u = u.src[0]


def _share_results(done: dict[UOp, UOp], ts: tuple[Tensor, ...]) -> None:
    """The live lazy tensors (not among ts) whose graphs hold a node just realized (in `done`: node -> the view of
    its buffer) read that buffer from now on instead of computing the node again (tinygrad's realize updates every
    tensor so). Only live tensors change: a graph built later from the same buffers (hash-consed to the same node)
    is computed afresh, so a buffer written in between is read as it is then."""
    given = {id(t) for t in ts}
    # a tensor that is the realized node itself or a view of it (another tensor hash-consed to the same graph:
    # two `zeros(3)`) stays lazy: as a view of that buffer, writes through either would reach the other
    live = [t for t in _live_made() if id(t) not in given and not _is_buffer_view(t.uop) and not _views_of(t.uop, done)]
    if not live:
        return
    sink = UOp(Ops.SINK, tuple(t.uop for t in live))
    if not any(n in done for n in sink.toposort(gate=lambda n: n not in done and not _is_buffer_view(n))):
        return
    before = [t.uop for t in live]
    for t, u in zip(live, sink.substitute(done, walk=lambda n: not _is_buffer_view(n)).src):
        t.uop = u
    if _checks:  # a queued check anchored in a rewritten graph is computed with its new graph
        _move_anchors(before, [t.uop for t in live])


def realize_readers(t: Tensor) -> None:
    """t's buffer is about to be written outside a kernel (a collective writing into it, unigrad.distributed): the
    live lazy tensors whose graphs read that buffer are computed first, so they keep the values from before the
    write (as torch computed them at their call). A view of the buffer is no reader: it shows the new values."""
    if not _made:  # no tensor made since the last look is alive and lazy (a loop of collectives): nothing to walk
        return
    written = _buffer_under(t.uop)
    candidates = [o for o in _live_made() if o is not t and view_base(o.uop).op not in (Ops.BUFFER, Ops.AFTER)]
    readers = [o for o in candidates if written in o.uop.toposort()]
    if readers:
        Tensor.realize(*readers)


def forget_backward_roots() -> None:
    """Drop the backward() roots and the tensors made registered so far (TinyJit, before it runs its function: a
    loss or a lazy tensor from outside must not become a kernel of every replay; one left lazy across jitted steps
    reads the buffers as they are when it is realized)."""
    _backward_roots.clear()
    _made.clear()


def _roots_to_compute(ts: tuple[Tensor, ...]) -> list[Tensor]:
    """The unrealized backward() roots not among `ts` (realized ones are forgotten)."""
    out = []
    for k, t in list(_backward_roots.items()):
        if _is_buffer_view(t.uop):
            _backward_roots.pop(k, None)
        elif all(t is not o for o in ts):
            out.append(t)
    return out


def _across_blocks(view: UOp) -> UOp | None:
    """The first op of a view of a multi-device buffer that moves its shard boundary (a slice or flip across the
    blocks), or None."""
    for u in view.toposort(gate=lambda v: v.op in GroupOp.View):
        if u.op in GroupOp.View and u.src[0].axis is not None and u.axis is None:
            return u
    return None


@record(frozen=True)
class GradFn:
    """What Tensor.grad_fn gives for a non-leaf: the name of the op that made it (torch's node's name())."""

    op: str

    def name(self) -> str:
        return self.op


def _to_args(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, DType | None, bool]:
    """Tensor.to's arguments -> (device or None, dtype or None, copy), refusing what torch refuses."""
    unknown = set(kwargs) - {"device", "dtype", "non_blocking", "copy", "memory_format"}
    if unknown:
        raise TypeError(f"to() got unexpected keyword arguments {sorted(unknown)}")
    device, dtype = kwargs.get("device"), kwargs.get("dtype")
    rest = list(args)
    if rest and isinstance(rest[0], Tensor):  # to(other): other's device and dtype
        other = rest.pop(0)
        device, dtype = other.device, other.dtype
    elif rest and not isinstance(rest[0], bool) and not _is_dtype_name(rest[0]):  # to(device, ...)
        device = rest.pop(0)
    if rest and _is_dtype_name(rest[0]):
        dtype = rest.pop(0)
    if rest and isinstance(rest[0], bool):  # torch's positional non_blocking, then copy
        rest.pop(0)
        if rest and isinstance(rest[0], bool):
            kwargs = {**kwargs, "copy": rest.pop(0)}
    if rest:
        raise TypeError(
            f"to() received an invalid combination of arguments: {args!r} (expected device, dtype or Tensor)"
        )
    return device, (None if dtype is None else to_dtype(dtype)), bool(kwargs.get("copy", False))


def _is_dtype_name(x: Any) -> bool:
    """A DType, or the name of one ("float16"; device names such as "CPU" are not)."""
    return isinstance(x, DType) or (isinstance(x, str) and isinstance(getattr(dtypes, x, None), DType))


def _is_assign(u: UOp) -> bool:
    return u.op is Ops.AFTER and len(u.src) == 2 and u.src[1].op is Ops.STORE


def _resolve_assigns(uops: list[UOp], ran: Mapping[UOp, UOp] = _assigns_done) -> list[UOp]:
    """`uops` with every already-scheduled assign (those in `ran`) replaced by the view of its buffer (one walk over
    them all)."""
    if not ran or not uops:
        return uops
    tup = UOp(Ops.TUPLE, tuple(uops))
    done = {n: ran[n] for n in tup.toposort() if _is_assign(n) and n in ran}
    return list(tup.substitute(done).src) if done else uops


def _pending_assigns(uops: list[UOp]) -> list[UOp]:
    """The assigns in the graphs of `uops` not among them (they run with them)."""
    if not _assign_owner:
        return []
    outs = set(uops)
    if all(n in outs for n in list(_assign_owner.keys())):  # an optimizer step realizes every assign it made
        return []  # no other assign node exists: nothing to find in the graphs
    return [n for n in UOp(Ops.TUPLE, tuple(uops)).toposort() if _is_assign(n) and n not in outs]


class _ClassFlag(contextlib.ContextDecorator):
    """Sets a class-wide Tensor flag inside `with` (or a decorated function) and restores it on exit."""

    flag = ""

    def __init__(self, value: bool) -> None:
        self.value = value
        self._saved: list[bool] = []

    def __enter__(self) -> _ClassFlag:
        self._saved.append(getattr(Tensor, self.flag))
        setattr(Tensor, self.flag, self.value)
        return self

    def __exit__(self, *exc: object) -> None:
        setattr(Tensor, self.flag, self._saved.pop())


class no_grad(_ClassFlag):
    """`with no_grad():` (or `@no_grad()`): results built inside do not require grad, as torch.no_grad.
    Sets the class-wide flag `Tensor.no_grad` (tinygrad spelling) and restores it on exit."""

    flag = "no_grad"

    def __init__(self) -> None:
        super().__init__(True)


class train(_ClassFlag):
    """`with Tensor.train():` (or `@Tensor.train()`, tinygrad's spelling): Tensor.training is `mode` inside (dropout,
    batch-norm statistics), restored on exit."""

    flag = "training"

    def __init__(self, mode: bool = True) -> None:
        super().__init__(mode)


def _remember(cache: OrderedDict[tuple[Any, ...], V], key: tuple[Any, ...], value: V) -> V:
    """Put value in a bounded cache (_const_uops, _arange_uops, _broadcasts, _const_views), dropping the oldest
    entry past CONST_CACHE_SIZE."""
    if len(cache) >= CONST_CACHE_SIZE:
        cache.popitem(last=False)
    cache[key] = value
    return value


_SAME_DTYPE = frozenset({Ops.ADD, Ops.MUL, Ops.SUB, Ops.MAX})  # binops whose result has the operands' dtype


def _broadcast_uop(u: UOp, shape: Shape) -> UOp:
    """u reshaped to the rank of `shape` (1s in front) and expanded to it: a broadcast the caller has checked
    (_broadcast_shape); u itself where it has that shape."""
    have = u.shape
    if len(have) < len(shape):
        have = (1,) * (len(shape) - len(have)) + have
        u = UOp(Ops.RESHAPE, (u, UOp.shape_src(have)))
    return UOp(Ops.EXPAND, (u, UOp.shape_src(shape))) if have != shape else u


def _const_uop(x: ConstType, dtype: DType, shape: Shape) -> UOp:
    """The scalar `x` as a `dtype` UOp of `shape`: EXPAND(RESHAPE(CONST, 1s), shape), cached by value and shape."""
    key = (x, type(x), dtype, shape)
    cached = x == x and (x != 0 or math.copysign(1.0, x) > 0)  # NaN and -0.0 would match other keys (0.0 == -0.0)
    if not cached or (u := _const_uops.get(key)) is None:
        u = UOp.const(dtype, x)
        if shape:
            if (view := _const_views.get(shape)) is None:
                view = _remember(_const_views, shape, (UOp.shape_src((1,) * len(shape)), UOp.shape_src(shape)))
            u = UOp(Ops.EXPAND, (UOp(Ops.RESHAPE, (u, view[0])), view[1]))
        if cached:
            _remember(_const_uops, key, u)
    return u


class _TensorClass(type):
    """`Tensor.training` is the knob TRAINING (tinygrad's `Context(TRAINING=1)` and `Tensor.training = True` are the
    same switch; `with Tensor.train():` scopes it)."""

    @property
    def training(cls) -> bool:
        return bool(config.TRAINING.value)

    @training.setter
    def training(cls, mode: bool) -> None:
        config.TRAINING.value = int(bool(mode))


class Tensor(
    MathMixin,
    ReduceMixin,
    MovementMixin,
    CreationMixin,
    NNMixin,
    RandomMixin,
    InplaceMixin,
    LinalgMixin,
    metaclass=_TensorClass,
):
    """A lazy n-dimensional array on a device."""

    __slots__ = ("uop", "device", "_requires_grad", "grad", "__weakref__")
    __array_priority__ = 1000  # numpy defers binops to us (np.float32(2) * t is t.__rmul__: a Tensor), as for torch
    no_grad: bool = False  # class-wide: results built while set do not require grad (see unigrad.no_grad)
    train = train  # `with Tensor.train():` sets it

    def __init__(
        self,
        data: Any,
        device: str | None = None,
        dtype: DType | str | None = None,
        requires_grad: bool | None = None,
    ):
        if isinstance(data, pathlib.PurePath):  # a file: its bytes on the DISK device (tinygrad's)
            data, device = Tensor._from_file(pathlib.Path(data), dtype, device)
        self.device = Device.canonicalize(device)
        self._requires_grad: bool | None = None
        self.grad: Tensor | None = None
        if isinstance(self.device, tuple) and not isinstance(data, UOp):  # made on the first, copied to each
            self.uop = Tensor(data, device=self.device[0], dtype=dtype).shard(self.device).uop
        else:
            self.uop = self._data_uop(data, to_dtype(dtype) if dtype is not None else None)
        if isinstance(data, UOp):  # a graph (detach(), a gradient): may read buffers an assign writes later
            _made.append(_weakref(self))
            if _binding:
                _bind_checks(self.uop)
        if requires_grad is not None:
            self.requires_grad = requires_grad
        elif flavor.current().grad_unmarked_leaves:  # tinygrad: a backward() reaching it fills its .grad
            _unmarked[id(self)] = self

    @staticmethod
    def _from_file(path: pathlib.Path, dtype: DType | str | None, device: str | None) -> tuple[UOp, Any]:
        """Tensor(path): the file on the DISK device as uint8 (or `dtype`: its bytes read as that dtype), copied to
        `device` when one is given. (graph, device)"""
        dt = to_dtype(dtype) if dtype is not None else dtypes.uint8
        t = Tensor.empty(path.stat().st_size // dt.itemsize, dtype=dt, device=f"DISK:{path.resolve()}")
        if device is not None:
            t = t.to(device)
        return t.uop, t.device

    def _data_uop(self, data: Any, dt: DType | None) -> UOp:
        """The graph of a new tensor holding `data`: a UOp, a Tensor, a Python scalar, a list/tuple or numpy data."""
        if isinstance(data, UOp):
            if data.dtype is dtypes.index and data.shape == ():  # a Variable or symbolic size as a value: int64
                return UOp(Ops.CAST, (data,), dt or dtypes.default_int)  # (index is no tensor dtype: no promotion)
            return data
        if isinstance(data, Tensor):
            data = data.numpy()
        if isinstance(data, (bytes, bytearray, memoryview)):  # raw bytes: uint8, or read as `dt` (tinygrad's)
            raw = Tensor(np.frombuffer(bytes(data), np.uint8), device=self.device)
            return raw.uop if dt is None or dt is dtypes.uint8 else raw.bitcast(dt).uop
        if isinstance(data, np.generic):  # numpy scalars keep their dtype (np.float64 is also a Python float)
            data = np.asarray(data)
        elif isinstance(data, (bool, int, float)):
            return UOp.const(dt or dtypes.from_py(data), data)
        if isinstance(data, (list, tuple)):
            try:
                arr = np.array(data)
            except ValueError:  # numpy refuses ragged nesting
                raise ValueError(f"Tensor: nested sequences of unequal lengths (ragged) in {data!r}") from None
            if arr.dtype == object:
                raise TypeError(f"Tensor: cannot build a tensor from ragged or non-numeric data {data!r}")
            if dt is None:
                dt = dtypes.bool if arr.dtype == np.bool_ else dtypes.default_int if arr.dtype.kind in "iu" else None
                dt = dt or (dtypes.default_float if arr.dtype.kind == "f" else None)
            data = arr
        if isinstance(data, np.ndarray):
            return self._from_numpy(data, dt)
        raise TypeError(f"Tensor: cannot build a tensor from {type(data).__name__}")

    def _from_numpy(self, arr: np.ndarray, dt: DType | None) -> UOp:
        src_dt = _NP_TO_DTYPE.get(arr.dtype)
        if src_dt is None:
            raise TypeError(f"Tensor: numpy dtype {arr.dtype} is not supported")
        target = dt or src_dt
        if target.fmt is None:  # bfloat16: copy in as float32, cast in a kernel
            return Tensor(arr.astype(np.float32), device=self.device).cast(target).uop
        buf = rt.new_buffer(arr.size, target, self.device)
        rt.buffers[buf].copyin(arr.astype(target.fmt))
        return UOp(Ops.RESHAPE, (buf, UOp.shape_src(arr.shape)))

    # ---------------------------------------------------------------- properties
    @property
    def shape(self) -> Shape:
        return self.uop.shape  # already a tuple (ints, or index UOps for symbolic dims)

    @property
    def dtype(self) -> DType:
        return self.uop.dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def numel(self) -> sint:
        return sprod(self.shape)

    def element_size(self) -> int:
        return self.dtype.itemsize

    def nbytes(self) -> int:
        return self.numel() * self.dtype.itemsize

    def is_floating_point(self) -> bool:
        return self.dtype.is_float

    def size(self, dim: int | None = None) -> Any:
        return self.shape if dim is None else self.shape[_norm_axis("size", dim, self.ndim)]

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __repr__(self) -> str:
        """torch's print: the values (a sync point), dtype, device and grad state (api/printing.py); the lazy
        form `<Tensor ADD (2, 3) dtypes.float32 on CPU>` where values cannot be read (inside TinyJit)."""
        from unigrad.api.printing import tensor_repr

        return tensor_repr(self)

    def __reduce__(self) -> tuple[Any, tuple]:
        """pickle (and unigrad.save): the values, read now, with dtype, device (a sharded tensor's devices and axis)
        and requires_grad; .grad is not kept (torch keeps it only for leaves, and checkpoints hold plain values).
        The lazy graph is not pickled: its buffers do not exist in another process."""
        if self.dtype.fmt is None and self.dtype is not dtypes.bfloat16 and self.dtype not in dtypes.fp8s:
            raise TypeError(f"pickle: a {self.dtype} tensor has no numpy dtype to store its values in")
        multi = isinstance(self.device, tuple)
        axis = self.uop.axis if multi else None
        dev = tuple(str(d) for d in self.device) if multi else str(self.device)  # plain names: any loader reads them
        param = self._is_parameter
        grad = self._requires_grad if param else bool(self._requires_grad)
        return _rebuild, (self.numpy(), self.dtype, dev, axis, grad, param)

    def __deepcopy__(self, memo: dict[int, Any]) -> Tensor:
        """copy.deepcopy(t): the values copied now into a buffer of its own; requires_grad kept and .grad
        deep-copied, as in torch. Only leaves can be copied (torch's rule): a result that requires grad raises."""
        return Tensor.deep_copies([self], memo)[0]

    @staticmethod
    def deep_copies(ts: Sequence[Tensor], memo: dict[int, Any] | None = None) -> list[Tensor]:
        """copy.deepcopy of each tensor, realized together. `memo` (deepcopy's) maps id(tensor) -> its copy: a
        tensor met twice is copied once."""
        memo = {} if memo is None else memo
        fresh: list[Tensor] = []
        for t in ts:
            if id(t) in memo:
                continue
            if not t.is_leaf:
                raise RuntimeError(
                    "deepcopy: only tensors created explicitly by the user (graph leaves) support the deepcopy "
                    f"protocol; this {t.shape} tensor is the result of ops that require grad (detach() it first)"
                )
            clone = Tensor(UOp(Ops.LOAD, (t.uop,), LoadArg()), device=t.device)  # a new buffer
            memo[id(t)] = clone
            fresh.append(clone)
        if fresh:
            Tensor.realize(*fresh)
        for t in ts:
            clone = memo[id(t)]
            if t._requires_grad is not None and clone._requires_grad is None:
                clone.requires_grad = t._requires_grad
                if t.grad is not None:
                    clone.grad = copy.deepcopy(t.grad, memo)
            if t._is_parameter:  # a parameter's copy is one (an undecided one stays undecided)
                clone._mark_parameter()
        return [memo[id(t)] for t in ts]

    def _new(self, u: UOp, *others: Tensor) -> Tensor:
        """A tensor on this device for a UOp built from this one and `others` (no argument parsing: the hot
        path). Pass every other tensor `u` reads: the result requires grad if one of them does."""
        if config.SPEC.value:
            verify_tensor_op(u)
        t = object.__new__(Tensor)
        t.uop, t.device, t._requires_grad, t.grad = u, self.device, None, None
        _made.append(_weakref(t))
        if _binding:  # a queued check's values: t may be the result of the op that checks them
            _bind_checks(u)
        if self._requires_grad:
            t._join_autograd()
        else:
            for o in others:  # (a loop: any() over a generator cost 0.2 us, a tenth of a binary op)
                if o._requires_grad:
                    t._join_autograd()
                    break
        return t

    # ---------------------------------------------------------------- creation
    @staticmethod
    def full(
        shape: Sequence[int] | int,
        fill_value: ConstType,
        dtype: DType | str | None = None,
        device: str | None = None,
        requires_grad: bool | None = None,
    ) -> Tensor:
        shp = (shape,) if isinstance(shape, UOp) or not hasattr(shape, "__iter__") else tuple(shape)
        if not all(s.__class__ is int and s >= 0 for s in shp):  # the common case: plain sizes, nothing to convert
            shp = creation_shape("full", shp)
        dt = to_dtype(dtype) if dtype is not None else dtypes.from_py(fill_value)
        if fill_value.__class__ in (int, float, bool) and all(s.__class__ is int for s in shp):
            t = Tensor(_const_uop(fill_value, dt, shp), device=device)  # the common case: the cached constant node
        else:
            t = Tensor(fill_value, device=device, dtype=dt).reshape((1,) * len(shp)).expand(shp)
        return t.requires_grad_() if requires_grad else t

    @staticmethod
    def zeros(*shape: Any, dtype: DType | str | None = None, device: str | None = None, **kw: Any) -> Tensor:
        """Zeros of `shape`; like every factory, requires_grad=True makes the result a leaf that requires grad."""
        return Tensor.full(_shape_arg(shape), 0, dtype=dtype or dtypes.default_float, device=device, **kw)

    @staticmethod
    def ones(*shape: Any, dtype: DType | str | None = None, device: str | None = None, **kw: Any) -> Tensor:
        return Tensor.full(_shape_arg(shape), 1, dtype=dtype or dtypes.default_float, device=device, **kw)

    @staticmethod
    def empty(
        *shape: Any, dtype: DType | str | None = None, device: str | None = None, requires_grad: bool | None = None
    ) -> Tensor:
        shp = creation_shape("empty", _shape_arg(shape))
        dev = Device.canonicalize(device)
        dt = to_dtype(dtype) if dtype is not None else dtypes.default_float
        if isinstance(dev, tuple):  # a whole (uninitialized) copy on each device
            t = Tensor(rt_multi.empty(shp, dt, dev), device=dev)
        else:
            buf = rt.new_buffer(_prod(shp), dt, dev)
            if dev.startswith("DISK:"):  # the file itself (runtime/ops_disk.py)
                Device[dev].allocator.map_file(rt.buffers[buf])
            t = Tensor(UOp(Ops.RESHAPE, (buf, UOp.shape_src(shp))), device=dev)
        return t.requires_grad_() if requires_grad else t

    def full_like(self, fill_value: ConstType, dtype: DType | str | None = None, **kw: Any) -> Tensor:
        return Tensor.full(self.shape, fill_value, dtype=dtype or self.dtype, device=self.device, **kw)

    def zeros_like(self, dtype: DType | str | None = None, **kw: Any) -> Tensor:
        return self.full_like(0, dtype, **kw)

    def ones_like(self, dtype: DType | str | None = None, **kw: Any) -> Tensor:
        return self.full_like(1, dtype, **kw)

    @staticmethod
    def arange(
        start: int | float,
        stop: int | float | None = None,
        step: int | float = 1,
        dtype: DType | str | None = None,
        device: str | None = None,
        requires_grad: bool | None = None,
    ) -> Tensor:
        """[start, start+step, ...) below stop. Built from movement ops on constants: element i is the sum
        of its binary digits, each digit a padded, tiled constant, so the whole thing is one fused kernel."""
        if stop is None:
            start, stop = 0, start
        if step == 0:
            raise RuntimeError("arange: step must be nonzero")
        if any(isinstance(v, UOp) for v in (start, stop, step)):
            return Tensor._symbolic_arange(start, stop, step, dtype, device, requires_grad)
        is_float = any(isinstance(v, float) for v in (start, stop, step))
        dt = to_dtype(dtype) if dtype is not None else dtypes.default_float if is_float else dtypes.default_int
        key = (start, stop, step, type(start), type(stop), type(step), dt)  # the graph holds no device
        if (u := _arange_uops.get(key)) is None:  # the same graph as last time: skip building it (losses call this)
            u = _remember(_arange_uops, key, _arange_uop(start, stop, step, dt))
        t = Tensor(u, device=device)
        return t.requires_grad_() if requires_grad else t

    @staticmethod
    def _symbolic_arange(start: sint, stop: sint, step: Any, dtype: Any, device: Any, requires_grad: Any) -> Tensor:
        """arange with Variable bounds (integer step): the arange of the largest count the Variables allow, shrunk
        to the count (a symbolic size), plus start."""
        if not isinstance(step, int) or any(isinstance(v, float) for v in (start, stop)):
            raise TypeError(f"arange: Variable bounds take an int step and int bounds, got {start}, {stop}, {step}")
        n = sfloordiv(sadd(ssub(stop, start), step - 1 if step > 0 else step + 1), step)
        most = smax(n)
        if most < 0 or smin(n) < 0:
            raise ValueError(f"arange: the count {n} of [{start}, {stop}) by {step} may be negative")
        dt = to_dtype(dtype) if dtype is not None else dtypes.default_int
        t = Tensor.arange(most, dtype=dt, device=device).shrink(((0, n),))
        if step != 1:
            t = t * step
        if not (isinstance(start, int) and start == 0):
            t = t + start
        t = t.cast(dt)
        return t.requires_grad_() if requires_grad else t

    # ---------------------------------------------------------------- realization
    def kernelize(self, *others: Tensor) -> Tensor:
        """Decide the kernels that compute these tensors (without running them); children will load
        their buffers instead of fusing their graphs."""
        return self._schedule_with(rt.kernelize, others)

    def realize(self, *others: Tensor) -> Tensor:
        """Run the kernels that compute these tensors; afterwards each is a view of a filled buffer."""
        return self._schedule_with(rt.realize, others)

    @staticmethod
    def pending_assigns() -> list[Tensor]:
        """Tensors whose latest assign has not been scheduled yet (an optimizer step realizes them with the
        update, so state such as BatchNorm's running statistics never stays pending across steps)."""
        return [t for node, t in list(_assign_owner.items()) if t.uop is node]

    def _schedule_with(self, schedule: Any, others: tuple[Tensor, ...]) -> Tensor:
        """Kernelize or realize these tensors per device. Pending assigns in their graphs are scheduled with
        them (once: afterwards every graph and the assigned tensor see the written buffer instead)."""
        ts = (self, *others)
        if _assign_owner and schedule is rt.realize and (writes := _writes_read_by(ts)):
            Tensor.realize(*writes)  # writes through views of buffers ts read: first (as the views' base sees them)
        if not _assign_owner and all(_is_buffer_view(t.uop) for t in ts):  # nothing to compute
            rt.stats.last_kernels = []
            return self
        if _assign_owner:
            if readers := _stale_readers(ts):  # they read buffers this schedule writes: first, as the gradients
                ts = (*readers, *ts)
        elif len(_made) > _MADE_PRUNE:
            _live_made()
        if _grad_siblings:
            ts = _with_grad_siblings(ts)
        if _assign_owner and _backward_roots:  # buffers are written: a loss built before reads the old values
            ts = (*ts, *_roots_to_compute(ts))
        checks, before = [], None
        if _checks and rt_jit.inside_jit() is None:  # checks of the data these graphs compute from: computed too
            if schedule is rt.realize:
                checks = _due_checks(ts)
                ts = (*ts, *(c.summary for c in checks))
            else:  # kernelize: the checks follow their anchors into the new graphs
                before = [t.uop for t in ts]
        # a jitted function's realizes share too: TinyJit forgets the tensors made before it runs (_made), so only
        # its own lazy tensors read its buffers, and a replay runs the kernels in the same order
        sharing = schedule is rt.realize
        if rt_multi.used:  # a graph may hold multi-device nodes: lowered to per-device ones first
            schedule = functools.partial(rt_multi.schedule, schedule)
        held_too = sharing and flavor.current().compute_held_tensors and rt_jit.inside_jit() is None
        if held_too and (held := _held_intermediates(ts)):
            ts = (*ts, *held)
        done: dict[UOp, UOp] = {}  # realized here: node -> its buffer's view, for the live graphs that hold it
        unmarked_grads = flavor.current().grad_unmarked_leaves
        for dev in {t.device for t in ts}:
            group = [t for t in ts if t.device == dev]
            uops = _resolve_assigns([t.uop for t in group])
            pending = _pending_assigns(uops)
            outs = schedule(uops + pending, dev)
            ran: dict[UOp, UOp] = {}
            for node, u in [*zip(uops, outs), *zip(pending, outs[len(group) :])]:
                if _is_assign(node):
                    ran[node] = _assigns_done[node] = u
            # a graph kept for gradients reads the assigns that ran here from their buffers, as their owners now do
            kept = [i for i, t in enumerate(group) if t._requires_grad and outs[i] is not t.uop and not t.is_leaf]
            for i, graph in zip(kept, _resolve_assigns([uops[i] for i in kept], ran)):
                remember_graph(outs[i], graph)
            for t, u in zip(group, outs):
                no_grads = Tensor.no_grad or not t.dtype.is_float
                if t.uop is not u and (t._requires_grad is not None or not unmarked_grads or no_grads):
                    done[t.uop] = u  # (an unmarked float one's graph stays: tinygrad's backward finds leaves in it)
                t.uop = u
            for node, u in ran.items():
                owner = _assign_owner.pop(node, None)  # no longer pending
                _view_assigns.pop(node, None)
                if owner is not None and owner.uop is node:
                    owner.uop = u
        if sharing and done:
            _share_results(done, ts)
        if before is not None:
            _move_anchors(before, [t.uop for t in ts])
        if checks:
            _raise_failed(checks)
        return self

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        """np.asarray(t) / np.array(t): the values, as .numpy() gives them (it was an object array of 0-d Tensors)."""
        out = self.numpy()
        return out if dtype is None else out.astype(dtype, copy=False)

    def numpy(self) -> np.ndarray:
        if (fn := rt_jit.inside_jit()) is not None:
            raise rt_jit.JitError(
                f"TinyJit({fn}): reading a tensor's values (.numpy(), .item(), .tolist()) inside a jitted function "
                "would give the captured value on every replay; return the tensor and read it after the call"
            )
        if self.dtype.fmt is None and self.dtype is not dtypes.bfloat16 and self.dtype not in dtypes.fp8s:
            raise TypeError(f"numpy: no numpy dtype for {self.dtype}")  # (bfloat16 and fp8 come out as float32)
        if isinstance(self.device, tuple):  # gathered on the first device
            return self.to(self.device[0]).numpy()
        if not _assign_owner and self.uop.op in _HOST_VIEWS and (values := _view_values(self.uop)) is not None:
            return values
        t = self.contiguous_view()
        flat = rt.buffer_of(t.uop).numpy()
        if isinstance(self.numel(), int):
            return flat.reshape(self.shape)
        shape = resolve_shape(self.shape)  # symbolic: the values under the Variables' bindings, a prefix of the buffer
        return flat[: math.prod(shape)].reshape(shape)

    def contiguous_view(self) -> Tensor:
        """This tensor realized as a row-major buffer (a plain reshape of one; with symbolic sizes, a reshape of a
        prefix of one). A view of a filled buffer stays a view (as in torch: a later write through it reaches the
        buffer); its values are copied out into a temporary."""
        if view_base(self.uop).op is not Ops.BUFFER:  # something to compute: this tensor becomes its result
            self.realize()
        elif _assign_owner and (writes := _writes_read_by((self,))):  # writes through other views of the buffer
            Tensor.realize(*writes)
        u = self.uop
        while u.op is Ops.RESHAPE:
            u = u.src[0]
        if u.op is Ops.BUFFER and (rt.buffers[u].size == self.numel() or not isinstance(self.numel(), int)):
            return self
        return Tensor(UOp(Ops.LOAD, (self.uop,), LoadArg()), device=self.device).realize()

    def item(self) -> ConstType:
        if self.numel() != 1:
            raise RuntimeError(f"item: a Tensor with {self.numel()} elements cannot be converted to a scalar")
        return self.numpy().reshape(-1)[0].item()

    def tolist(self) -> Any:
        return self.numpy().tolist()

    @property
    def data(self) -> Tensor:
        """torch's `.data`: this tensor's values as a tensor that tracks no gradient and shares the buffer, so an
        in-place op on it writes this tensor (`p.data.mul_(0.5)`, `w.data.normal_(0, 0.02)`, `p.data -= lr * p.grad`).
        Called, as tinygrad's `data()`, it gives the values as a memoryview. This tensor is realized first unless
        it already is a view of a filled buffer. (Math on the alias that meets a tensor requiring grad is tracked
        as math on this tensor: torch's `.data` cuts that gradient, ours does not.)"""
        if not _is_buffer_view(self.uop):
            self.realize()
        alias = object.__new__(_DataAlias)
        alias.uop, alias.device, alias._requires_grad, alias.grad = self.uop, self.device, None, None
        return alias

    @data.setter
    def data(self, value: Tensor) -> None:
        """torch's `p.data = t`: this tensor takes t's values (and shape, dtype and device), keeping its identity and
        requires_grad; it shares t's buffer when t is a filled one, as torch shares the storage."""
        if not isinstance(value, Tensor):
            raise TypeError(f"Tensor.data: assigned value must be a Tensor, got {type(value).__name__}")
        self.uop, self.device = value.uop, value.device
        self._own_buffer()

    def to(self, *args: Any, **kwargs: Any) -> Tensor:
        """torch's forms: to(device), to(dtype), to(device, dtype), to(other) (other's device and dtype), and the
        keywords device=, dtype=, non_blocking=, copy= (copy=True returns a new tensor even when nothing changes).
        To a tuple of devices, a whole copy on each (shard(devices)); from a tuple to one device, the gathered
        whole."""
        device, dtype, copy = _to_args(args, kwargs)
        out = self if dtype is None else self.cast(dtype)
        out = out if device is None else out._to_device(device)
        return out.clone() if copy and out is self else out

    def to_(self, device: str | tuple[str, ...]) -> Tensor:
        """to(device) in place: this tensor now lives on `device` (tinygrad's to_)."""
        out = self._to_device(device)
        self.uop, self.device = out.uop, out.device
        return self

    def replace(self, x: Tensor) -> Tensor:
        """This tensor now stands for x's value (tinygrad's replace: no copy, no kernel; shapes must match)."""
        if x.shape != self.shape:
            raise RuntimeError(f"replace: shape {x.shape} does not match this tensor's {self.shape}")
        self.uop, self.device = x.uop, x.device
        return self

    def _to_device(self, device: str | tuple[str, ...]) -> Tensor:
        dev = Device.canonicalize(device)
        if dev == self.device:
            return self
        if isinstance(dev, tuple):
            return self.shard(dev)
        Device[dev]  # opened now (once per device): a device this machine lacks (CUDA without a driver) fails here
        out = Tensor(UOp(Ops.LOAD, (self.uop,), LoadArg(dev)), device=dev)
        if self._requires_grad:
            out._join_autograd()
        return out

    def shard(self, devices: Sequence[str], axis: int | None = None) -> Tensor:
        """This tensor on several devices: split into equal blocks along dim `axis`, block i on `devices[i]`, or,
        with axis None, a whole copy on each (tinygrad's shard). Ops on it run on every device, on its block."""
        devs = Device.canonicalize(tuple(devices))
        if axis is not None:
            axis = _norm_axis("shard", axis, self.ndim)
            if not isinstance(self.shape[axis], int) or self.shape[axis] % len(devs):
                raise RuntimeError(
                    f"shard: dim {axis} of shape {self.shape} does not split into {len(devs)} equal blocks "
                    f"(one per device of {devs})"
                )
        if any(not isinstance(s, int) for s in self.shape):
            raise RuntimeError(f"shard: symbolic shape {self.shape} (multi-device tensors take constant sizes)")
        if devs == self.device and axis == self.uop.axis:
            return self
        rt_multi.mark_used()
        out = Tensor(multi.shard(self.uop, devs, axis), device=devs)
        if self._requires_grad:
            out._join_autograd()
        return out

    def shard_(self, devices: Sequence[str], axis: int | None = None) -> Tensor:
        """shard() in place: this tensor now lives on `devices`."""
        out = self.shard(devices, axis)
        self.uop, self.device = out.uop, out.device
        return self

    def contiguous(self) -> Tensor:
        return self._new(UOp(Ops.LOAD, (self.uop,), LoadArg()))

    def contiguous_backward(self) -> Tensor:
        """The same values; the gradient flowing back through it is made contiguous (tinygrad)."""
        return self._new(UOp(Ops.CONTIGUOUSBACKWARD, (self.uop,)))

    # ---------------------------------------------------------------- autograd
    @property
    def requires_grad(self) -> bool | None:
        """True for a leaf the user marked and for every float result built from one (outside no_grad), and for a
        parameter not decided yet (tinygrad's flavor: a layer's parameter tracks nothing until an optimizer or a
        backward() turns it on; see _params)."""
        v = self._requires_grad
        if v is None and _params and _params.get(id(self)) is self:
            return True
        return v

    @requires_grad.setter
    def requires_grad(self, value: bool | None) -> None:
        if value and not self._requires_grad:
            if not self.dtype.is_float:
                raise RuntimeError(f"only Tensors of floating point dtype can require gradients, got {self.dtype}")
            self._own_buffer()
            _leaves[id(self)] = self
        elif not value and self._requires_grad:
            if not self.is_leaf:
                raise RuntimeError(
                    "requires_grad: you can only change requires_grad flags of leaf variables; use detach() to "
                    "get a tensor that does not require grad"
                )
            del _leaves[id(self)]
        if value is not None:
            _unmarked.pop(id(self), None)
        self._requires_grad = value

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        self.requires_grad = requires_grad
        return self

    @property
    def is_param(self) -> bool:
        """tinygrad's mark of a parameter (what an optimizer trains): a leaf that requires grad, or a module's
        parameter not decided yet. Setting it marks the tensor (True) or unmarks it (False) as requires_grad does."""
        return bool(self.requires_grad) and self.is_leaf

    @is_param.setter
    def is_param(self, value: bool) -> None:
        self.requires_grad = bool(value)

    def _mark_parameter(self) -> None:
        """Mark this tensor a parameter (nn.Parameter, a layer's weight). A float one whose requires_grad is None
        requires grad from now on in the torch flavor; in tinygrad's it stays undecided (see _params)."""
        _params[id(self)] = self
        if self._requires_grad is None and self.dtype.is_float and flavor.current().parameters_require_grad:
            self.requires_grad = True

    @property
    def _is_parameter(self) -> bool:
        """Marked a parameter by _mark_parameter (what `isinstance(t, nn.Parameter)` tests in the torch flavor)."""
        return _params.get(id(self)) is self

    @property
    def is_leaf(self) -> bool:
        return not self._requires_grad or _leaves.get(id(self)) is self

    @property
    def grad_fn(self) -> GradFn | None:
        """None for a leaf and for a tensor that does not require grad (torch's test for "built by autograd");
        otherwise a record naming the op that made this tensor."""
        if self.is_leaf:
            return None
        return GradFn(f"{self.uop.op.name.title()}Backward")

    def retain_grad(self) -> None:
        """A non-leaf's .grad is filled by backward() too (torch's retain_grad; a no-op on a leaf)."""
        if not self._requires_grad:
            raise RuntimeError("retain_grad: can't retain_grad on a Tensor that has requires_grad=False")
        if not self.is_leaf:
            _retained[id(self)] = self

    def register_hook(self, hook: Callable[[Tensor], Tensor | None]) -> RemovableHandle:
        """hook(grad) runs when backward() (or gradient()) has this tensor's gradient; a Tensor it returns
        replaces the gradient (for .grad of a leaf, and for what flows on to the tensors this one was built from).
        Returns a handle whose remove() unregisters it."""
        if not self._requires_grad:
            raise RuntimeError("register_hook: cannot register a hook on a tensor that doesn't require gradient")
        return _register_hook(_hook_fns, _hooked, self, hook)

    def register_post_accumulate_grad_hook(self, hook: Callable[[Tensor], None]) -> RemovableHandle:
        """hook(self) runs in backward() after this leaf's .grad got the gradient of that backward (torch's name).
        backward() fills every .grad first (lazily, one graph), then runs these hooks, leaf by leaf: a hook sees the
        new .grad of every leaf. Returns a handle whose remove() unregisters it."""
        if not self.is_leaf:
            raise RuntimeError("register_post_accumulate_grad_hook: post accumulate grad hooks go on leaf tensors only")
        if not self._requires_grad:
            raise RuntimeError(
                "register_post_accumulate_grad_hook: cannot register a hook on a tensor that doesn't require gradient"
            )
        return _register_hook(_post_hook_fns, _post_hooked, self, hook)

    @property
    def retains_grad(self) -> bool:
        return _retained.get(id(self)) is self

    def detach(self) -> Tensor:
        """The same values, cut from the graph: no gradient flows through the result (requires_grad False).
        A realized value whose graph is kept for gradients (gradient.realized_from, keyed weakly by its view) is read
        through a node of the detached tensor's own, RESHAPE(DETACH(BUFFER)): a graph built on the result does not
        hold that view, so the kept graph goes with the tensor (an RNN's state detached step after step kept every
        earlier step's graph: 2k nodes and ~1 MB a step of the word language model)."""
        u = self.uop
        if u.op is Ops.RESHAPE and u.src[0].op is Ops.BUFFER and u in realized_from:
            return Tensor(
                UOp(Ops.RESHAPE, (UOp(Ops.DETACH, (u.src[0],)), u.src[1])), device=self.device, requires_grad=False
            )
        t = graph_tensor(UOp(Ops.DETACH, (u,)), self.device)  # (Tensor(..., requires_grad=False) without parsing)
        t._requires_grad = False
        _made.append(_weakref(t))  # registered as the user's tensor, as _new does
        if _binding:
            _bind_checks(t.uop)
        return t

    def _own_buffer(self) -> None:
        """Give a new leaf its own BUFFER: gradients find leaves by their node, and hash-consing would make
        two Tensor.zeros(3) leaves one node. Realizes the tensor unless it already is a view of a buffer."""
        if not _is_buffer_view(self.uop):
            self.realize()
        if not _is_buffer_view(self.uop):  # realize() left a view of another tensor's buffer: copy it
            self.uop = UOp(Ops.LOAD, (self.uop,), LoadArg())
            self.realize()

    def _join_autograd(self) -> None:
        """Built from a tensor that requires grad: so does this one if it holds floats (as PyTorch). Under
        no_grad it does not, and DETACH cuts its graph so no later backward() reaches through it."""
        if not self.uop.dtype.is_float:
            return
        if Tensor.no_grad:
            self.uop = UOp(Ops.DETACH, (self.uop,))
        else:
            self._requires_grad = True

    def _root_grad(self, op: str, gradient: Tensor | None) -> UOp:
        """d(loss)/d(self): `gradient`, or 1 for a one-element tensor."""
        if not self.dtype.is_float:
            raise RuntimeError(f"{op}: only Tensors of floating point dtype have gradients, got {self.dtype}")
        if gradient is None:
            if self.numel() != 1:
                raise RuntimeError(f"{op}: grad can be implicitly created only for scalar outputs, got {self.shape}")
            return self.ones_like().uop
        if gradient.shape != self.shape or gradient.device != self.device:
            raise RuntimeError(
                f"{op}: mismatch in shape or device: gradient has shape {gradient.shape} on {gradient.device}, "
                f"the tensor {self.shape} on {self.device}"
            )
        return gradient.cast(self.dtype).uop

    def gradient(
        self,
        *targets: Tensor,
        gradient: Tensor | None = None,
        materialize_grads: bool = False,
        allow_unused: bool = False,
    ) -> list[Tensor | None]:
        """d(self)/d(target) for each target, as new lazy tensors (functional: no .grad changes). `gradient`
        is d(loss)/d(self), default 1 for a one-element tensor. A target self does not depend on raises
        RuntimeError, gets zeros with materialize_grads=True, or None with allow_unused=True."""
        root_grad = self._root_grad("gradient", gradient)
        for t in targets:
            if not t.dtype.is_float:
                raise RuntimeError(f"gradient: only Tensors of floating point dtype have gradients, got {t.dtype}")
        out = []
        root, *graphs = _resolve_assigns([self.uop, *(t.uop for t in targets)])
        for t, g in zip(targets, gradients(root, root_grad, graphs, _gradient_hooks() if _hook_fns else None)):
            if g is None and not (materialize_grads or allow_unused):
                raise RuntimeError(
                    f"gradient: a target of shape {t.shape} is not used in the graph of this tensor "
                    "(materialize_grads=True gives zeros, allow_unused=True None)"
                )
            if g is None:
                out.append(t.zeros_like() if materialize_grads else None)
            else:
                out.append(Tensor(g, device=t.device))
        return out

    def backward(
        self, gradient: Tensor | None = None, retain_graph: bool | None = None, create_graph: bool = False
    ) -> Tensor:
        """Add d(self)/d(leaf) into .grad of every leaf with requires_grad=True that self depends on; .grad
        accumulates over calls as in PyTorch (reset it with `t.grad = None`). With create_graph the gradients
        require grad themselves (for higher derivatives). Graphs are never freed, so retain_graph is accepted
        and ignored. Returns self. In tinygrad's flavor every tensor made by the user (a leaf) that self depends on
        and that is not marked requires_grad=False gets its .grad too (flavor.grad_unmarked_leaves)."""
        unmarked = flavor.current().grad_unmarked_leaves
        lone: set[int] = set()  # the user's tensors decided here: their .grad is computed only when read
        order: list[UOp] = []  # the graph's toposort, when deciding walked it (the gradient walk reuses it)
        if unmarked or not self._requires_grad:
            self._decide_parameters(unmarked, lone, order)
        if not self._requires_grad:
            raise RuntimeError("backward: element 0 of tensors does not require grad and does not have a grad_fn")
        root_grad = self._root_grad("backward", gradient)
        if not _is_buffer_view(self.uop):
            _backward_roots[id(self)] = self
        leaves = list(_leaves.values()) + list(_retained.values())
        root, *graphs = _resolve_assigns([self.uop, *(t.uop for t in leaves)])
        with no_gc():  # the gradient graph is acyclic, freed by reference counting: the collector's passes over the
            hooks = _gradient_hooks() if _hook_fns else None  # (young nodes cost 2x)
            grads = gradients(root, root_grad, graphs, hooks, order if order and order[-1] is root else None)
        filled = []
        for t, g in zip(leaves, grads):
            if g is not None:
                gt = Tensor(g, device=t.device)
                if create_graph:
                    gt._join_autograd()
                t.grad = gt if t.grad is None else t.grad + gt
                if id(t) not in lone:
                    _grad_siblings[id(t.grad)] = t.grad
                filled.append(t)
        for t in filled if _post_hook_fns else ():
            if _post_hooked.get(id(t)) is t:
                for fn in list(_post_hook_fns.get(id(t), {}).values()):
                    fn(t)
        return self

    def _decide_parameters(
        self, unmarked: bool = False, lone: set[int] | None = None, order: list[UOp] | None = None
    ) -> bool:
        """Turn on requires_grad of the undecided module parameters this tensor's graph reads (their forward ran
        before anything required grad), and with `unmarked` of every float leaf the user made without saying
        requires_grad (tinygrad's backward); whether there were any. A tensor that turning on realizes into its own
        buffer is replaced by that buffer in this graph, so the gradient reaches it. The ids of those not from a
        module go into `lone` (an input batch's .grad should not be computed with the parameters' gradients).
        `order`, when given, receives the graph's toposort if one was walked (before any replacement)."""
        pool = [t for t in _params.values() if t._requires_grad is None]
        if unmarked:  # made by the constructor, or by a factory (randn, arange): then among the results of ops
            pool += [*_unmarked.values(), *_live_made()]
        if not pool or not self.dtype.is_float:
            return False
        topo = self.uop.toposort()
        if order is not None:
            order[:] = topo
        nodes = set(topo)
        found = list(
            {id(t): t for t in pool if t._requires_grad is None and t.dtype.is_float and t.uop in nodes}.values()
        )
        if unmarked:  # the leaves among them: a result computed from another of them (y = x * 2) gets no .grad,
            # nor does a placeholder of a traced @function body (its graph reads PARAMs, not buffers)
            uops = {t.uop for t in found}
            found = [
                t
                for t in found
                if not any(
                    (u in uops and u is not t.uop) or (u.op is Ops.PARAM and u.arg.name is None)
                    for u in t.uop.toposort()
                )
            ]
        moved: dict[UOp, UOp] = {}
        for t in found:
            if lone is not None and _params.get(id(t)) is not t:
                lone.add(id(t))
            before = t.uop
            t.requires_grad = True
            if t.uop is not before:
                moved[before] = t.uop
        if moved:
            self.uop = self.uop.substitute(moved)
        if found:
            self._requires_grad = True
        return bool(found)

    def assign(self, x: Tensor | ConstType) -> Tensor:
        """Write `x` into this tensor's buffer (the spec's assign: STORE, then AFTER); `x` is cast to this dtype
        and must have this shape. Returns self, now after the write.

        On a view of a buffer (a slice, a permute, a flip: `cache[pos:pos+1].assign(k)`) only the view's elements
        are written, in place, by a kernel that loops over the view: the tensor the view was taken from sees them
        once the assign has run (realize it first, as in tinygrad). A tensor with no buffer yet gets a new one."""
        if isinstance(x, (np.ndarray, list, tuple)):  # data: copied in as a tensor of this dtype
            x = Tensor(x, device=self.device, dtype=self.dtype)
        elif not isinstance(x, Tensor):
            x = self._const_like(x, self.dtype)
        if x.shape != self.shape:
            raise RuntimeError(f"assign: shape {x.shape} does not match the target's {self.shape}")
        if x.device != self.device and isinstance(self.device, str) and self.device.startswith("DISK:"):
            x = x.to(self.device)  # writing a file: the values are copied there (tinygrad's)
        if x.device != self.device:
            raise RuntimeError(f"assign: value on {x.device}, target on {self.device}")
        if (source := _bitcast_views.get(self.uop)) is not None:  # t.bitcast(dt).assign(v): writes t's bits
            source.assign(x.bitcast(source.dtype))
            self.uop = source.bitcast(self.dtype).uop
            return self
        if self.numel() == 0:  # nothing to write
            return self
        u = self.uop
        # a realized tensor itself (a parameter, an optimizer's state): no detach to see through, nothing expanded
        plain = u.op is Ops.BUFFER or (u.op is Ops.RESHAPE and u.src[0].op is Ops.BUFFER)
        target = u if plain else self._assign_target(x)
        store = UOp(Ops.STORE, (target, x.cast(self.dtype).uop))
        # each assign is its own event: the unique tag keeps hash-consing from returning an earlier assign with
        # the same graph (x.assign(x + 1) twice) that already ran (callify drops the tag: one cached schedule)
        # a view (or a detach) of a buffer another tensor owns: held until it runs (the view may be dropped at once)
        shared = target is not self.uop or (target.op in GroupOp.View and not _is_buffer_view(target))
        self.uop = UOp(Ops.AFTER, (target, store), tag=next(_assign_ids))
        _assign_owner[self.uop] = self
        if shared:
            _view_assigns[self.uop] = self
        return self

    def _assign_target(self, x: Tensor) -> UOp:
        """The view assign(x) stores through: this tensor's buffer (or the view of it) with DETACHes dropped, or a
        new buffer when it has none; raises for a target several of whose elements share a memory location."""
        target = _without_detach(self.uop)  # detach() shares the buffer: an assign to it writes the tensor
        base = view_base(target)
        if base.op not in (Ops.BUFFER, Ops.AFTER):  # no buffer yet: give it one
            if self.uop in x.uop.toposort():  # the new value reads the old one: materialize it first
                target = self.contiguous().realize().uop
            elif isinstance(self.device, tuple):  # every element is overwritten: new buffers, split as self is
                target = rt_multi.empty(self.shape, self.dtype, self.device, self.uop.axis)
            elif isinstance(self.device, str) and self.device.startswith("DISK:"):  # host memory, not the file
                buf = rt.new_buffer(_prod(self.shape), self.dtype, self.device)
                target = UOp(Ops.RESHAPE, (buf, UOp.shape_src(self.shape)))
            else:  # every element is overwritten: the old (lazy) value need not be computed at all
                target = Tensor.empty(*self.shape, dtype=self.dtype, device=self.device).uop
        elif expanded := [
            u
            for u in target.toposort(gate=lambda v: v.op in GroupOp.View)
            if u.op is Ops.EXPAND and u.shape != u.src[0].shape
        ]:
            raise RuntimeError(
                f"assign: the target is an expanded view {expanded[0].src[0].shape} -> {expanded[0].shape}: "
                "several of its elements share one memory location; assign to the tensor before the expand"
            )
        elif isinstance(self.device, tuple) and (cut := _across_blocks(target)) is not None:
            raise RuntimeError(
                f"assign: the target is a {cut.op.name} view across the blocks of a tensor split on dim "
                f"{cut.src[0].axis} over {self.device}: each device writes only its own block; assign to the whole "
                "tensor (or to a view along other dims)"
            )
        return target

    # ---------------------------------------------------------------- movement
    def reshape(self, *shape: Any) -> Tensor:
        """The same elements in `shape` (a tuple or separate sizes): one size may be -1 (inferred), and None keeps
        the size of the dim at its position (tinygrad's reshape(None, -1)). A shape of another element count raises
        flavor.shape_arg_error (tinygrad ValueError, torch RuntimeError)."""
        new, cur = _shape_arg(shape), self.shape
        if all(s.__class__ is int and s >= -1 for s in new) and all(c.__class__ is int for c in cur):
            # plain sizes, at most one -1 to infer (most reshapes: x.reshape(-1, d)): the checks below on ints
            numel = math.prod(cur)
            if -1 in new:
                known = -math.prod(new)  # (the product of the others: one -1 among them)
                if new.count(-1) == 1 and known > 0 and numel % known == 0:
                    new = tuple(numel // known if s == -1 else s for s in new)
            if -1 not in new:
                if math.prod(new) != numel:
                    raise flavor.current().shape_arg_error(
                        f"reshape: shape {list(new)} is invalid for input of size {numel} (shape {cur})"
                    )
                return self if new == cur else self._new(UOp(Ops.RESHAPE, (self.uop, UOp.shape_src(new))))
        if any(s is None for s in new):
            if any(s is None for s in new[self.ndim :]):
                raise flavor.current().shape_arg_error(f"reshape: None in {new} keeps a dim {self.shape} lacks")
            new = tuple(cur[i] if s is None else s for i, s in enumerate(new))
        shp = list(new)
        inferred_at = [i for i, s in enumerate(shp) if s.__class__ is int and s == -1]
        if len(inferred_at) > 1:
            raise RuntimeError(f"reshape: only one dimension can be inferred, got {tuple(shp)}")
        numel = self.numel()
        if inferred_at:
            known = sprod([s for s in shp if not (isinstance(s, int) and s == -1)])
            inferred = sfloordiv(numel, known) if known != 0 else 0
            if known == 0 or smul(inferred, known) != numel:
                raise flavor.current().shape_arg_error(
                    f"reshape: shape {list(shp)} is invalid for input of size {numel}"
                )
            shp[inferred_at[0]] = inferred
        new = tuple(shp)
        if any(not isinstance(s, (int, UOp)) or smin(s) < 0 for s in new) or not _same_size(sprod(new), numel):
            raise flavor.current().shape_arg_error(
                f"reshape: shape {list(new)} is invalid for input of size {numel} (shape {self.shape})"
            )
        if new == self.shape:
            return self
        return self._new(UOp(Ops.RESHAPE, (self.uop, UOp.shape_src(new))))

    view = reshape

    def expand(self, *shape: Any) -> Tensor:
        shp = _shape_arg(shape)
        if shp == self.shape:  # the common case (operands already broadcast): nothing to check or build
            return self
        if len(shp) < self.ndim:
            raise RuntimeError(f"expand: the target shape {shp} has fewer dims than the tensor's {self.shape}")
        base = (1,) * (len(shp) - self.ndim) + self.shape
        new = tuple(b if s == -1 else s for s, b in zip(shp, base))
        for b, s in zip(base, new):
            if b != s and b != 1:
                raise RuntimeError(
                    f"expand: size {b} of shape {self.shape} cannot expand to {s} (target {shp}); only size-1 dims expand"
                )
        t = self.reshape(base)
        if new == base:
            return t
        return t._new(UOp(Ops.EXPAND, (t.uop, UOp.shape_src(new))))

    def permute(self, *order: Any) -> Tensor:
        nd, given = len(self.uop.shape), _shape_arg(order)
        if all(a.__class__ is int and -nd <= a < nd for a in given):  # (the common case: ints in range)
            o = tuple(a + nd if a < 0 else a for a in given)
        else:
            o = tuple(_norm_axis("permute", a, nd) for a in given)
        identity = tuple(range(nd))
        if tuple(sorted(o)) != identity:
            raise RuntimeError(f"permute: order {tuple(given)} is not a permutation of the {nd} dims of {self.shape}")
        if o == identity:
            return self
        return self._new(UOp(Ops.PERMUTE, (self.uop,), o))

    def transpose(self, dim0: int = 1, dim1: int = 0) -> Tensor:
        order = list(range(self.ndim))
        a, b = _norm_axis("transpose", dim0, self.ndim), _norm_axis("transpose", dim1, self.ndim)
        order[a], order[b] = order[b], order[a]
        return self.permute(order)

    @property
    def T(self) -> Tensor:
        return self.permute(tuple(reversed(range(self.ndim))))

    def flip(self, *axis: Any, dims: Any = None) -> Tensor:
        """The elements in reverse order along each listed axis (torch's `dims=` keyword too)."""
        listed = [_norm_axis("flip", a, self.ndim) for a in _shape_arg(axis if dims is None else (dims,))]
        axes = set(listed)
        if len(axes) != len(listed):  # tinygrad and torch both refuse a repeated axis
            dup = next(a for a in listed if listed.count(a) > 1)
            raise RuntimeError(f"flip: dim {dup} appears multiple times in the list of dims {tuple(listed)}")
        if not axes:
            return self
        return self._new(UOp(Ops.FLIP, (self.uop,), tuple(i in axes for i in range(self.ndim))))

    def pad(
        self, padding: Sequence[tuple[int, int]] | Sequence[int], value: ConstType = 0.0, mode: str = "constant"
    ) -> Tensor:
        """Pad with `value` (mode 'constant') or by 'reflect', 'replicate', 'circular': padding is ((before, after),
        ...) per dim from the first (None for (0, 0)), or PyTorch's flat (last_before, last_after, prev_before, ...)
        form. Negative amounts crop; in the other modes the crop comes first and the mode pads what is left (as
        torch), so replicate may pad more than the size and circular up to it. A string second argument is the mode
        (tinygrad's order: pad(padding, mode, value))."""
        if isinstance(value, str):
            value, mode = (0.0 if mode == "constant" else mode), value  # type: ignore[assignment]
        if len(padding) == 0:  # torch's F.pad(x, ()): nothing to pad
            return self
        if padding[0] is not None and not isinstance(padding[0], (tuple, list)):
            flat = [p if isinstance(p, UOp) else operator.index(p) for p in padding]
            if len(flat) % 2 or len(flat) // 2 > self.ndim:
                raise RuntimeError(f"pad: flat padding {tuple(flat)} must have an even length <= 2*ndim ({self.ndim})")
            pairs = [(0, 0)] * (self.ndim - len(flat) // 2) + [
                (flat[i], flat[i + 1]) for i in range(len(flat) - 2, -1, -2)
            ]
        else:
            pairs = [(0, 0) if p is None else tuple(p) for p in padding]  # type: ignore[misc]
        if len(pairs) != self.ndim:
            raise RuntimeError(
                f"pad: need a (before, after) pair for each of the {self.ndim} dims of {self.shape}, got {len(pairs)}"
            )
        if mode != "constant":
            if mode not in ("reflect", "replicate", "circular"):
                raise NotImplementedError(f"pad: mode must be constant, reflect, replicate or circular, got {mode!r}")
            if any(b < 0 or a < 0 for b, a in pairs):  # crop first: pad(((-1, 2),)) reflects the cropped tensor
                cropped = self.pad(tuple((min(b, 0), min(a, 0)) for b, a in pairs))
                return cropped._pad_mode([(max(b, 0), max(a, 0)) for b, a in pairs], mode)
            return self._pad_mode(pairs, mode)
        # plain amounts over static sizes (cat pads each piece): the general path's node, built in one loop
        befores: list[int] = []
        new_shape: list[int] = []
        for (b, a), s in zip(pairs, self.shape):
            if b.__class__ is not int or a.__class__ is not int or s.__class__ is not int or b < 0 or a < 0:
                break
            befores.append(b)
            new_shape.append(s + b + a)
        else:
            if new_shape == list(self.shape):
                return self
            shape = tuple(new_shape)
            out = self._new(
                UOp.movement(Ops.PAD, (self.uop, UOp.shape_src(tuple(befores)), UOp.shape_src(shape)), shape)
            )
            return out if value == 0 else self._pad_value(out, pairs, value)
        if any((smin(b) < 0) != (smax(b) < 0) or (smin(a) < 0) != (smax(a) < 0) for b, a in pairs):
            raise RuntimeError(f"pad: symbolic amounts {pairs} must not change sign over their Variables' ranges")
        for (b, a), size in zip(pairs, self.shape):
            if all(isinstance(v, int) for v in (b, a, size)) and size + min(b, 0) + min(a, 0) < 0:
                raise RuntimeError(
                    f"pad: negative padding {(b, a)} crops more than the size {size} of a dim of {self.shape}"
                )
        crop = [(ssub(0, b) if smax(b) < 0 else 0, a if smax(a) < 0 else 0) for b, a in pairs]
        t = self.shrink(tuple((cb, sadd(s, ca)) for (cb, ca), s in zip(crop, self.shape)))
        pos = [(b if smin(b) >= 0 else 0, a if smin(a) >= 0 else 0) for b, a in pairs]
        if all(p == (0, 0) for p in pos):
            return t
        new = tuple(sadd(sadd(s, b), a) for s, (b, a) in zip(t.shape, pos))
        out = t._new(UOp(Ops.PAD, (t.uop, UOp.shape_src(tuple(b for b, _ in pos)), UOp.shape_src(new))))
        return out if value == 0 else t._pad_value(out, pos, value)

    def _pad_value(self, out: Tensor, pairs: Sequence[tuple[sint, sint]], value: ConstType) -> Tensor:
        """`out` (this tensor zero-padded by pairs) with `value` in the padding."""
        mask = Tensor.ones(self.shape, dtype=dtypes.bool, device=self.device).pad(pairs)
        return mask.where(out, Tensor(value, dtype=self.dtype, device=self.device))

    def shrink(self, arg: Sequence[tuple[int, int] | None]) -> Tensor:
        shape = self.uop.shape
        if len(arg) == len(shape):  # the common case, int bounds within int sizes: checked and built inline
            starts, sizes, whole = [], [], True
            for a, s in zip(arg, shape):
                b, e = (0, s) if a is None else a if a.__class__ is tuple and len(a) == 2 else (None, None)
                if not (b.__class__ is int and e.__class__ is int and s.__class__ is int and 0 <= b <= e <= s):
                    break
                starts.append(b)
                sizes.append(e - b)
                whole = whole and b == 0 and e == s
            else:
                if whole:
                    return self
                src = (self.uop, UOp.shape_src(tuple(starts)), UOp.shape_src(tuple(sizes)))
                return self._new(UOp(Ops.SHRINK, src))
        bounds = [(0, s) if a is None else tuple(a) for a, s in zip(arg, self.shape)]
        if len(arg) != self.ndim or any(
            not (0 <= b <= e <= s)
            if b.__class__ is int and e.__class__ is int and s.__class__ is int  # plain ints: compared directly
            else (smin(b) < 0 or not always_le(b, e) or not always_le(e, s)) and not fits_bound(b, e, s)
            for (b, e), s in zip(bounds, self.shape)
        ):
            raise RuntimeError(
                f"shrink: bounds {tuple(arg)} do not fit shape {self.shape}; need 0 <= begin <= end <= size per dim"
                " (for every value of a symbolic bound, or for the values its Variables are bound to)"
            )
        if all(isinstance(b, int) and b == 0 and e == s for (b, e), s in zip(bounds, self.shape)):
            return self
        new = tuple(ssub(e, b) for b, e in bounds)
        return self._new(UOp(Ops.SHRINK, (self.uop, UOp.shape_src(tuple(b for b, _ in bounds)), UOp.shape_src(new))))

    def squeeze(self, dim: int | Sequence[int] | None = None) -> Tensor:
        """Drop size-1 dims: all of them, or those among `dim` (an int or a tuple; others are kept)."""
        if dim is None:
            return self.reshape(tuple(s for s in self.shape if s != 1))
        dims = {_norm_axis("squeeze", d, self.ndim) for d in ((dim,) if isinstance(dim, int) else dim)}
        return self.reshape(tuple(s for i, s in enumerate(self.shape) if not (i in dims and s == 1)))

    def unsqueeze(self, dim: int) -> Tensor:
        u = self.uop
        shape = u.shape
        d = _norm_axis("unsqueeze", dim, len(shape) + 1)
        new = (*shape[:d], 1, *shape[d:])
        if all(s.__class__ is int for s in shape):  # the element count stays: reshape's node, without its checks
            return self._new(UOp.movement(Ops.RESHAPE, (u, UOp.shape_src(new)), new))
        return self.reshape(new)

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> Tensor:
        if self.ndim == 0:
            return self.reshape(1)
        s, e = _norm_axis("flatten", start_dim, self.ndim), _norm_axis("flatten", end_dim, self.ndim)
        return self.reshape(self.shape[:s] + (sprod(self.shape[s : e + 1]),) + self.shape[e + 1 :])

    # ---------------------------------------------------------------- elementwise
    def _const_like(self, x: ConstType, dtype: DType) -> Tensor:
        """The scalar `x` broadcast to this tensor's shape: EXPAND(RESHAPE(CONST, 1s), shape)."""
        return self._new(_const_uop(x, dtype, self.shape))

    def _broadcasted(self, other: Tensor | ConstType, op: str, reverse: bool = False) -> tuple[Tensor, Tensor]:
        if isinstance(other, np.ndarray) and other.ndim:  # an array operand is a tensor of its dtype (as in torch)
            other = Tensor(other, device=self.device)
        if isinstance(other, Tensor):
            if other.device != self.device:
                raise RuntimeError(f"{op}: tensors are on different devices ({self.device} and {other.device})")
            xs, ys = self.shape, other.shape
            if xs == ys and self.dtype is other.dtype:  # the common case: nothing to broadcast or promote
                return (other, self) if reverse else (self, other)
            dt = promote_with_dims(self.dtype, len(xs) == 0, other.dtype, len(ys) == 0)
            shape = _broadcast_shape(op, xs, ys)
            x, y = self.cast(dt)._broadcast_to(shape), other.cast(dt)._broadcast_to(shape)
        elif isinstance(other, UOp) and other.dtype is dtypes.index and other.shape == ():  # a (bound) Variable
            return self._broadcasted(Tensor(other, device=self.device), op, reverse)
        elif isinstance(other, (bool, int, float, np.bool_, np.integer, np.floating)):
            other = (
                other.item() if isinstance(other, np.generic) else other
            )  # a numpy scalar is a Python scalar (torch)
            dt = result_dtype_with_scalar(self.dtype, other)
            x = self.cast(dt)
            y = x._const_like(other, dt)
        else:
            raise TypeError(f"{op}: unsupported operand type {type(other).__name__}")
        return (y, x) if reverse else (x, y)

    def _broadcast_to(self, shape: Shape) -> Tensor:
        """expand(shape) for a shape already checked to be a broadcast of this one (_broadcast_shape): the
        RESHAPE to its rank and the EXPAND, without expand()'s argument parsing and checks (a hot path)."""
        u = self.uop
        return self if u.shape == shape else self._new(_broadcast_uop(u, shape))

    def _alu(self, op: Ops, *srcs: Tensor) -> Tensor:
        if not srcs:  # a unary op (the hot case: no generator)
            return self._new(UOp(op, (self.uop,)))
        return self._new(UOp(op, (self.uop, *(s.uop for s in srcs))), *srcs)

    def _plain_operands(self, other: Tensor | ConstType, name: str) -> tuple[UOp, UOp] | None:
        """The hot path of a binary op: this tensor's UOp and the other operand's, of one dtype and shape, when
        nothing is promoted: a tensor of this dtype on this device (both broadcast: a bias, a row of statistics),
        or a Python number a float tensor (or an int an int tensor) keeps its dtype for. None otherwise (the
        general path: _broadcasted)."""
        u = self.uop
        if other.__class__ is Tensor:
            v = other.uop  # type: ignore[union-attr]
            if u.dtype is not v.dtype or other.device != self.device:  # type: ignore[union-attr]
                return None
            if u.shape == v.shape:
                return u, v
            shape = _broadcast_shape(name, u.shape, v.shape)
            return _broadcast_uop(u, shape), _broadcast_uop(v, shape)
        if (
            (other.__class__ is float or other.__class__ is int)
            and u.dtype.is_float
            or (other.__class__ is int and u.dtype.kind in "iu")
        ):  # (a Python int is no higher kind than an int tensor)
            return u, _const_uop(other, u.dtype, u.shape)  # type: ignore[arg-type]
        return None

    def _binop(self, op: Ops, other: Tensor | ConstType, name: str, reverse: bool = False) -> Tensor:
        if (plain := self._plain_operands(other, name)) is not None:
            u, v = plain
            # the result's dtype is the operands' for the arithmetic ops (a comparison's is bool: derived)
            out = UOp.elementwise(op, (v, u) if reverse else (u, v), u.dtype if op in _SAME_DTYPE else None)
            return self._new(out, other) if other.__class__ is Tensor else self._new(out)  # type: ignore[arg-type]
        x, y = self._broadcasted(other, name, reverse)
        return x._alu(op, y)

    def add(self, other: Tensor | ConstType, reverse: bool = False, *, alpha: ConstType = 1) -> Tensor:
        """self + alpha * other (torch's alpha; tinygrad's reverse computes other + self)."""
        if alpha.__class__ is not int or alpha != 1:
            other = self._scaled("add", other, alpha)
        return self._binop(Ops.ADD, other, "add", reverse)

    def _scaled(self, op: str, other: Tensor | ConstType, alpha: ConstType) -> Tensor | ConstType:
        """alpha * other for add/sub's alpha: a float alpha with integral operands is refused, as in torch."""
        other_float = other.dtype.is_float if isinstance(other, Tensor) else isinstance(other, float)
        if isinstance(alpha, float) and not (self.dtype.is_float or other_float):
            raise RuntimeError(f"{op}: for integral input tensors, argument alpha must not be a floating point number")
        return other * alpha

    def mul(self, other: Tensor | ConstType, reverse: bool = False) -> Tensor:
        return self._binop(Ops.MUL, other, "mul", reverse)

    def neg(self) -> Tensor:
        if self.dtype is dtypes.bool:
            raise RuntimeError("neg: negation of a bool tensor is not supported; use logical_not()")
        return self * (-1.0 if self.dtype.is_float else -1)  # a float scalar takes the binop's hot path

    def sub(self, other: Tensor | ConstType, reverse: bool = False, *, alpha: ConstType = 1) -> Tensor:
        """self - alpha * other (torch's alpha; tinygrad's reverse computes other - self)."""
        if self.dtype is dtypes.bool or (isinstance(other, Tensor) and other.dtype is dtypes.bool):
            raise RuntimeError("sub: subtraction with a bool tensor is not supported; use logical_xor()")
        if alpha.__class__ is not int or alpha != 1:
            other = self._scaled("sub", other, alpha)
        return self._binop(Ops.SUB, other, "sub", reverse)

    def _float(self) -> Tensor:
        return self if self.dtype.is_float else self.cast(dtypes.default_float)

    def reciprocal(self) -> Tensor:
        return self._float()._alu(Ops.RECIP)

    def div(self, other: Tensor | ConstType, reverse: bool = False, rounding_mode: str | None = None) -> Tensor:
        if rounding_mode is None and self.uop.dtype.is_float and (plain := self._plain_operands(other, "div")):
            # a float divided by a float of its dtype or a Python number: x * reciprocal(y) (the nodes of the general
            # path below) as one tensor
            x, y = plain[::-1] if reverse else plain
            out = UOp.elementwise(Ops.MUL, (x, UOp(Ops.RECIP, (y,))), x.dtype)
            return self._new(out, other) if other.__class__ is Tensor else self._new(out)  # type: ignore[arg-type]
        if rounding_mode is not None:
            self._check_divisor(other, reverse, "div")
        x, y = self._broadcasted(other, "div", reverse)
        if rounding_mode == "floor":
            return x._alu(Ops.IDIV, y)
        if rounding_mode == "trunc":
            if x.dtype.is_float:
                return (x._float() * y._float().reciprocal()).trunc()
            q = x._alu(Ops.IDIV, y)
            return (q._alu(Ops.MUL, y)._alu(Ops.CMPNE, x) & ((x < 0) ^ (y < 0))).where(q + 1, q)
        if rounding_mode is not None:
            raise RuntimeError(f"div: rounding_mode must be None, 'trunc' or 'floor', got {rounding_mode!r}")
        return x._float() * y._float().reciprocal()

    def floordiv(self, other: Tensor | ConstType, reverse: bool = False) -> Tensor:
        self._check_divisor(other, reverse, "floor_divide")
        return self._binop(Ops.IDIV, other, "floor_divide", reverse)

    def mod(self, other: Tensor | ConstType, reverse: bool = False) -> Tensor:
        self._check_divisor(other, reverse, "remainder")
        return self._binop(Ops.MOD, other, "remainder", reverse)

    def _floordiv_nonzero(self, other: Tensor | ConstType) -> Tensor:
        """self // other for a divisor nonzero by construction (internal index math): no check queued."""
        return self._binop(Ops.IDIV, other, "floor_divide")

    def _mod_nonzero(self, other: Tensor | ConstType) -> Tensor:
        """self % other for a divisor nonzero by construction (internal index math): no check queued."""
        return self._binop(Ops.MOD, other, "remainder")

    def _check_divisor(self, other: Tensor | ConstType, reverse: bool, op: str) -> None:
        """torch's ZeroDivisionError for an integer division (//, %, a rounding div) by zero: a zero scalar divisor
        raises here, a tensor divisor's zeros at the next realize (unchecked, the kernel gives 0 or garbage).
        Float divisions give inf/nan as IEEE says."""
        divisor, dividend = (self, other) if reverse else (other, self)
        if isinstance(dividend, float) or (isinstance(dividend, Tensor) and dividend.dtype.is_float):
            return
        if isinstance(divisor, Tensor):
            if divisor.dtype.is_int and divisor.dtype is not dtypes.bool:
                check_values(
                    divisor == 0,
                    divisor,
                    lambda count, _: RuntimeError(f"{op}: ZeroDivisionError ({count} integer division(s) by zero)"),
                )
        elif divisor.__class__ is int and divisor == 0 and self.numel() != 0:  # an empty tensor divides nothing
            raise RuntimeError(f"{op}: ZeroDivisionError (an integer tensor divided by the integer 0)")

    def maximum(self, other: Tensor | ConstType) -> Tensor:
        return self._binop(Ops.MAX, other, "maximum")

    def minimum(self, other: Tensor | ConstType) -> Tensor:
        x, y = self._broadcasted(other, "minimum")
        return x._flip_order().maximum(y._flip_order())._flip_order()

    def _flip_order(self) -> Tensor:
        """An order-reversing involution, so min(x) = f(max(f(x))): -x for floats (nan stays nan),
        ~x for ints (no overflow at the most negative value, right for unsigned), not x for bools."""
        if self.dtype.is_float:
            return -self
        if self.dtype is dtypes.bool:
            return self.logical_not()
        return self ^ -1

    def _bitwise(self, op: Ops, other: Tensor | ConstType, name: str, reverse: bool = False) -> Tensor:
        x, y = self._broadcasted(other, name, reverse)
        if x.dtype.is_float:
            raise RuntimeError(f"{name}: bitwise ops are only defined for integer and bool tensors, got {x.dtype}")
        return x._alu(op, y)

    def bitwise_and(self, other: Tensor | ConstType, reverse: bool = False) -> Tensor:
        return self._bitwise(Ops.AND, other, "bitwise_and", reverse)

    def bitwise_or(self, other: Tensor | ConstType, reverse: bool = False) -> Tensor:
        return self._bitwise(Ops.OR, other, "bitwise_or", reverse)

    def bitwise_xor(self, other: Tensor | ConstType, reverse: bool = False) -> Tensor:
        return self._bitwise(Ops.XOR, other, "bitwise_xor", reverse)

    def lshift(self, other: Tensor | ConstType, reverse: bool = False) -> Tensor:
        return self._bitwise(Ops.SHL, other, "bitwise_left_shift", reverse)

    def rshift(self, other: Tensor | ConstType, reverse: bool = False) -> Tensor:
        return self._bitwise(Ops.SHR, other, "bitwise_right_shift", reverse)

    def logical_not(self) -> Tensor:
        return self.cast(dtypes.bool)._alu(Ops.CMPNE, self._const_like(True, dtypes.bool))

    def _cmp(self, op: Ops, other: Tensor | ConstType, name: str, reverse: bool = False) -> Tensor:
        return self._binop(op, other, name, reverse)  # its hot paths (the result is bool: UOp's derived dtype)

    def __lt__(self, other: Tensor | ConstType) -> Tensor:
        return self._cmp(Ops.CMPLT, other, "lt")

    def __gt__(self, other: Tensor | ConstType) -> Tensor:
        return self._cmp(Ops.CMPLT, other, "gt", reverse=True)

    def __ge__(self, other: Tensor | ConstType) -> Tensor:
        x, y = self._broadcasted(other, "ge")
        if x.dtype.is_float:  # not(x < y) would be True for nan
            return (y < x) | x.eq(y)
        return (x < y).logical_not()

    def __le__(self, other: Tensor | ConstType) -> Tensor:
        x, y = self._broadcasted(other, "le")
        return y >= x

    def ne(self, other: Tensor | ConstType) -> Tensor:
        return self._cmp(Ops.CMPNE, other, "ne")

    def eq(self, other: Tensor | ConstType) -> Tensor:
        return self.ne(other).logical_not()

    __ne__ = ne  # type: ignore[assignment]
    __eq__ = eq  # type: ignore[assignment]
    __hash__ = object.__hash__

    def where(self, x: Tensor | ConstType, y: Tensor | ConstType) -> Tensor:
        """self ? x : y, broadcasting all three; the result dtype promotes x and y."""
        if x.__class__ is Tensor and y.__class__ is Tensor:  # the hot path: a bool mask, x and y alike in everything
            c, a, b = self.uop, x.uop, y.uop  # type: ignore[union-attr]
            if (
                c.dtype is dtypes.bool
                and a.dtype is b.dtype
                and c.shape == a.shape == b.shape
                and self.device == x.device == y.device  # type: ignore[union-attr]
            ):
                return self._new(UOp.elementwise(Ops.WHERE, (c, a, b)), x, y)  # type: ignore[arg-type]
        elif x.__class__ is Tensor or y.__class__ is Tensor:  # a float tensor and a Python scalar alike in shape
            t, k = (x, y) if x.__class__ is Tensor else (y, x)
            c, a = self.uop, t.uop  # type: ignore[union-attr]
            if (
                (k.__class__ is float or k.__class__ is int)
                and c.dtype is dtypes.bool
                and a.dtype.is_float
                and c.shape == a.shape
                and self.device == t.device  # type: ignore[union-attr]
            ):
                b = _const_uop(k, a.dtype, a.shape)  # type: ignore[arg-type]
                srcs = (c, a, b) if t is x else (c, b, a)
                return self._new(UOp.elementwise(Ops.WHERE, srcs), t)  # type: ignore[arg-type]
        cond = self.cast(dtypes.bool)
        if isinstance(x, Tensor):
            xt, yt = x._broadcasted(y, "where")
        elif isinstance(y, Tensor):
            yt, xt = y._broadcasted(x, "where")
        else:
            dt = dtypes.from_py(x) if type(x) is type(y) else dtypes.default_float
            xt, yt = Tensor(x, dtype=dt, device=self.device), Tensor(y, dtype=dt, device=self.device)
        if xt.device != self.device:
            raise RuntimeError(f"where: the condition is on {self.device}, the values on {xt.device}")
        shape = _broadcast_shape("where", cond.shape, xt.shape)
        return cond._broadcast_to(shape)._alu(Ops.WHERE, xt._broadcast_to(shape), yt._broadcast_to(shape))

    def cast(self, dtype: DType | str) -> Tensor:
        dt = to_dtype(dtype)
        return self if dt == self.dtype else self._new(UOp(Ops.CAST, (self.uop,), dt))

    def bitcast(self, dtype: DType | str) -> Tensor:
        """Reinterpret the bits as `dtype`, as torch's Tensor.view(dtype) and tinygrad's bitcast. To a dtype of
        another size the last dim scales by the ratio of the sizes, its elements' bytes taken in memory order
        (little-endian): float32 (..., n) -> uint8 (..., 4n), uint8 (..., 4n) -> int32 (..., n)."""
        dt = to_dtype(dtype)
        if dt == self.dtype:
            return self
        out = self._new(UOp(Ops.BITCAST, (self.uop,), dt)) if dt.itemsize == self.dtype.itemsize else None
        out = self._bitcast_resized(dt) if out is None else out
        _bitcast_views[out.uop] = self  # an assign to the result writes self (a slice of a file on DISK, ...)
        return out

    def _bitcast_resized(self, dt: DType) -> Tensor:
        """bitcast to a dtype of another size: through unsigned ints of each size, split by shifts (narrower) or
        joined by shifts and ors (wider), in kernels."""
        src, n = self.dtype, self.shape[-1] if self.shape else None
        if not isinstance(n, int) or (n * src.itemsize) % dt.itemsize or dt.kind == "b" or src.kind == "b":
            raise RuntimeError(
                f"bitcast: {src} {self.shape} to {dt}: needs a last dim whose bytes ({n} x {src.itemsize}) divide into "
                f"{dt.itemsize}-byte elements (and no bool)"
            )
        uint_of = {1: dtypes.uint8, 2: dtypes.uint16, 4: dtypes.uint32, 8: dtypes.uint64}
        bits, udst = self.bitcast(uint_of[src.itemsize]), uint_of[dt.itemsize]
        if dt.itemsize < src.itemsize:  # each element's k pieces, lowest first
            k = src.itemsize // dt.itemsize
            pieces = [(bits >> (8 * dt.itemsize * j)).cast(udst) for j in range(k)]
            out = Tensor.stack(*pieces, dim=-1).reshape(*self.shape[:-1], n * k)
        else:  # k elements make one
            k = dt.itemsize // src.itemsize
            groups = bits.reshape(*self.shape[:-1], n // k, k).cast(udst)
            out = groups[..., 0]
            for j in range(1, k):
                out = out | (groups[..., j] << (8 * src.itemsize * j))
        return out.bitcast(dt)

    def take_rows(self, index: Tensor) -> Tensor:
        """self[index] for an int tensor `index` along dim 0, as an indirect load (the spec's INDEX with a tensor
        index): shape index.shape + self.shape[1:], cost O(output). Negative entries count from the end."""
        if not index.dtype.is_int or index.dtype.is_bool:
            raise IndexError(f"take_rows: index must be an int tensor, got {index.dtype}")
        if self.ndim == 0:
            raise IndexError("take_rows: cannot index a 0-d tensor")
        if index.device != self.device:
            raise RuntimeError(f"take_rows: index on {index.device}, tensor on {self.device}")
        return self._new(UOp(Ops.INDEX, (self.uop, index.uop)), index)

    def float(self) -> Tensor:
        return self.cast(dtypes.float32)

    def half(self) -> Tensor:
        return self.cast(dtypes.float16)

    def bfloat16(self) -> Tensor:
        return self.cast(dtypes.bfloat16)

    def double(self) -> Tensor:
        return self.cast(dtypes.float64)

    def short(self) -> Tensor:
        return self.cast(dtypes.int16)

    def int(self) -> Tensor:
        return self.cast(dtypes.int32)

    def long(self) -> Tensor:
        return self.cast(dtypes.int64)

    def bool(self) -> Tensor:
        return self.cast(dtypes.bool)

    # unary math on the spec's primitives
    def exp2(self) -> Tensor:
        return self._float()._alu(Ops.EXP2)

    def log2(self) -> Tensor:
        return self._float()._alu(Ops.LOG2)

    def sin(self) -> Tensor:
        return self._float()._alu(Ops.SIN)

    def sqrt(self) -> Tensor:
        return self._float()._alu(Ops.SQRT)

    def trunc(self) -> Tensor:
        return self if not self.dtype.is_float else self._alu(Ops.TRUNC)

    def exp(self) -> Tensor:
        return (self._float() * (1 / math.log(2))).exp2()

    def log(self) -> Tensor:
        return self.log2() * math.log(2)

    def relu(self) -> Tensor:
        """max(x, 0) with torch's gradient (0 at x == 0) and nan passed through."""
        u = self.uop
        if u.dtype.is_float:  # (x > 0).where(x, (x != x).where(x, 0)) as one tensor: its nodes, built at once
            zero = _const_uop(0, u.dtype, u.shape)
            keep_nan = UOp.elementwise(Ops.WHERE, (UOp.elementwise(Ops.CMPNE, (u, u)), u, zero))
            return self._new(UOp.elementwise(Ops.WHERE, (UOp.elementwise(Ops.CMPLT, (zero, u)), u, keep_nan)))
        return (self > 0).where(self, (self != self).where(self, 0))

    def abs(self) -> Tensor:
        return self if self.dtype is dtypes.bool or self.dtype.is_unsigned else self.maximum(-self)

    def square(self) -> Tensor:
        x = self.cast(dtypes.int64) if self.dtype is dtypes.bool else self
        return x * x

    # ---------------------------------------------------------------- reductions
    def _axes(self, axis: int | Sequence[int] | None, op: str) -> tuple[int, ...]:
        nd = len(self.uop.shape)
        if axis is None:
            return tuple(range(nd))
        if axis.__class__ is int and -nd <= axis < nd:  # type: ignore[operator]
            return (axis % nd,)  # type: ignore[operator]
        axs = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
        norm = [_norm_axis(op, a, self.ndim) for a in axs]
        if len(set(norm)) < len(norm):
            dup = next(a for a in norm if norm.count(a) > 1)
            raise RuntimeError(f"{op}: dim {dup} appears multiple times in the list of dims {axs}")
        return tuple(sorted(norm)) if self.ndim else ()  # a 0-d tensor takes axis 0/-1 and reduces nothing

    def _reduce(self, op: Ops, axis: int | Sequence[int] | None, keepdim: bool, name: str) -> Tensor:
        u = self.uop
        shape = u.shape
        if not (axes := self._axes(axis, name)):  # nothing to reduce (a 0-d tensor, or axis=())
            return self
        split = self._split_reduce(op, axes)
        if split is not None:
            return split if keepdim else split.reshape(tuple(s for i, s in enumerate(shape) if i not in axes))
        # the REDUCE and (without keepdim) the RESHAPE dropping its axes, as one tensor
        r = UOp(Ops.REDUCE, (u,), ReduceArg(op, axes))
        if not keepdim:
            r = UOp(Ops.RESHAPE, (r, UOp.shape_src(tuple(s for i, s in enumerate(shape) if i not in axes))))
        return self._new(r)

    def _split_reduce(self, op: Ops, axes: tuple[int, ...]) -> Tensor | None:
        """A long reduce into few outputs runs as two kernels, so every core takes part: (O, R) -> (O, P, R/P)
        reduced over R/P into a materialized (O, P), then over P. Only trailing axes with static sizes."""
        shape = self.shape
        if axes[-1] != len(shape) - 1 or axes != tuple(range(len(shape) - len(axes), len(shape))):
            return None
        if not all(d.__class__ is int for d in shape):
            return None
        n_out, n_red = math.prod(shape[: len(shape) - len(axes)]), math.prod(shape[len(shape) - len(axes) :])
        if n_red < SPLIT_REDUCE_MIN or n_out > SPLIT_REDUCE_MAX_OUT:
            return None
        keep = shape[: len(shape) - len(axes)]
        parts = next(
            (
                p
                for p in range(SPLIT_REDUCE_PARTS[0], SPLIT_REDUCE_PARTS[-1] - 1, -1)
                if n_red % p == 0 and n_red // p >= 1024 and (n_red // p) % SPLIT_REDUCE_SHARE_MULTIPLE == 0
            ),
            None,
        )
        if parts is None:
            parts = next((p for p in SPLIT_REDUCE_PARTS if n_red % p == 0 and n_red // p >= 1024), None)
        if parts is not None:
            x = self.reshape((*keep, parts, n_red // parts))
        else:  # no such divisor (a prime length): padded with the op's identity to a multiple of the parts
            parts = next(p for p in SPLIT_REDUCE_PARTS if n_red // p >= 1024)
            flat = self.reshape((*keep, n_red)).pad(
                ((0, 0),) * len(keep) + ((0, -n_red % parts),), value=identity_element(op, self.dtype)
            )
            x = flat.reshape((*keep, parts, flat.shape[-1] // parts))
        partial = x._new(UOp(Ops.REDUCE, (x.uop,), ReduceArg(op, (len(keep) + 1,)))).contiguous()
        out = partial._new(UOp(Ops.REDUCE, (partial.uop,), ReduceArg(op, (len(keep),))))
        return out.reshape((*keep, *([1] * len(axes))))

    def sum(
        self,
        axis: int | Sequence[int] | None = None,
        keepdim: bool = False,
        dtype: DType | str | None = None,
        *,
        dim: int | Sequence[int] | None = None,
    ) -> Tensor:
        """The sum over `axis` (torch's `dim=` keyword too; None: every element); ints and bools sum in the flavor's
        integer accumulator (int32 or wider native, int64 torch: flavor.acc_dtype)."""
        if dim is not None:
            axis = dim
        if dtype is None and (dt := self.uop.dtype).is_float and dt.itemsize >= 4:  # accumulates in its own dtype
            return self._reduce(Ops.ADD, axis, keepdim, "sum")
        acc = _acc_dtype(self.dtype, dtype)
        if acc.itemsize < 4 and acc.is_float:  # half and bfloat16 accumulate in float32 (as torch), then round once
            return self.cast(dtypes.float32)._reduce(Ops.ADD, axis, keepdim, "sum").cast(acc)
        return self.cast(acc)._reduce(Ops.ADD, axis, keepdim, "sum")

    def prod(
        self,
        axis: int | Sequence[int] | None = None,
        keepdim: bool = False,
        dtype: DType | str | None = None,
        *,
        dim: int | Sequence[int] | None = None,
    ) -> Tensor:
        """The product over `axis` (or torch's `dim=`); ints and bools multiply as sum adds (flavor.acc_dtype)."""
        if dim is not None:
            axis = dim
        acc = _acc_dtype(self.dtype, dtype)
        return self.cast(acc)._reduce(Ops.MUL, axis, keepdim, "prod")

    def max(self, axis: int | Sequence[int] | None = None, keepdim: bool = False, *, dim: int | None = None) -> Any:
        """The largest element over `axis` (tinygrad: the values). With torch's `dim=` keyword, torch's result:
        the (values, indices) pair along that dim."""
        if dim is not None:
            return ValuesIndices(self.max(dim, keepdim), self.argmax(dim, keepdim))
        self._check_nonempty("max", axis)
        return self._reduce(Ops.MAX, axis, keepdim, "max")

    def min(self, axis: int | Sequence[int] | None = None, keepdim: bool = False, *, dim: int | None = None) -> Any:
        """The smallest element over `axis`; with `dim=`, the (values, indices) pair as torch."""
        if dim is not None:
            return ValuesIndices(self.min(dim, keepdim), self.argmin(dim, keepdim))
        self._check_nonempty("min", axis)
        return self._flip_order().max(axis, keepdim)._flip_order()

    def _check_nonempty(self, op: str, axis: int | Sequence[int] | None) -> None:
        shape = self.uop.shape
        if all(d.__class__ is int and d > 0 for d in shape):  # (the common case: nothing empty anywhere)
            return
        if any(shape[a] == 0 for a in self._axes(axis, op)):
            raise RuntimeError(f"{op}: cannot reduce over a zero-size dimension of shape {self.shape}")

    def mean(
        self, axis: int | Sequence[int] | None = None, keepdim: bool = False, *, dim: int | Sequence[int] | None = None
    ) -> Tensor:
        """The mean over `axis` (or torch's `dim=`), in a float dtype; nan over nothing."""
        if dim is not None:
            axis = dim
        axes = self._axes(axis, "mean")
        n = sprod([self.shape[a] for a in axes])
        s = self._float().sum(axis, keepdim)
        if isinstance(n, UOp):  # a symbolic count: divide by its value at run time
            return s / Tensor(n, device=self.device).cast(s.dtype)
        return s * (1 / n) if n else s * math.nan

    # ---------------------------------------------------------------- matmul (the spec's gemm composition)
    def dot(self, w: Tensor) -> Tensor:
        """Matrix product as the spec writes gemm: (A.reshape(M,K,1) * B.reshape(1,K,N)).sum(1), batched."""
        xs, ws = self.uop.shape, w.uop.shape
        if not xs or not ws:
            raise RuntimeError(f"matmul: both arguments need at least 1 dimension, got {xs} and {ws}")
        x = self.unsqueeze(0) if len(xs) == 1 else self
        y = w.unsqueeze(-1) if len(ws) == 1 else w
        k, k2 = xs[-1], y.uop.shape[-2]
        if k != k2:
            raise RuntimeError(f"matmul: shapes {xs} and {ws} cannot be multiplied ({k} != {k2})")
        dt = promote_types(x.dtype, y.dtype)
        acc = dtypes.float32 if dt in (dtypes.float16, dtypes.bfloat16) else dt  # 16-bit: float32 sums, one rounding
        y = y._packed_for_matmul(x)
        x = x._rows_for_matmul()
        out = x._gemm(y, dt)
        if out is None:
            out = (x.unsqueeze(-1).cast(acc) * y.unsqueeze(-3).cast(acc)).sum(-2, dtype=acc).cast(dt)
        if len(xs) == 1:
            out = out.squeeze(-2)
        if len(ws) == 1:
            out = out.squeeze(-1)
        return out

    matmul = dot

    def _gemm(self, y: Tensor, dt: DType) -> Tensor | None:
        """dot's composition for the common case, (..., M, K) @ (..., K, N) of one float dtype of 32 bits or more
        with static shapes: the same nodes as the op-by-op path (RESHAPEs to (..., M, K, 1) and (..., 1, K, N), the
        EXPANDs to their broadcast, MUL, REDUCE over K, RESHAPE), built at once with one result tensor instead of
        seven (a linear layer's matmul: ~60 -> ~15 us of Python). None where it does not apply."""
        u, v = self.uop, y.uop
        xs, ys = u.shape, v.shape
        if (
            len(xs) < 2
            or len(ys) < 2
            or u.dtype is not dt
            or v.dtype is not dt
            or not dt.is_float
            or dt.itemsize < 4
            or self.device != y.device
            or not all(d.__class__ is int for d in (*xs, *ys))
        ):
            return None
        xe, ye = (*xs, 1), (*ys[:-2], 1, *ys[-2:])
        full = _broadcast_shape("mul", xe, ye)
        srcs = tuple(_broadcast_uop(UOp(Ops.RESHAPE, (w, UOp.shape_src(have))), full) for w, have in ((u, xe), (v, ye)))
        axis = len(full) - 2
        r = UOp(Ops.REDUCE, (UOp(Ops.MUL, srcs),), ReduceArg(Ops.ADD, (axis,)))
        return self._new(UOp(Ops.RESHAPE, (r, UOp.shape_src((*full[:axis], full[-1])))), y)

    def _rows_for_matmul(self) -> Tensor:
        """A of a big A @ B, copied row-major when it is a transposed view of a buffer (a.T @ b, a.mT @ b): the
        matmul kernel walks A along K, which in the view steps a whole row of the buffer at a time, one cache line
        per element and, at a power-of-two row length, every line in the same few cache sets (a.T @ a at 2048:
        358 -> 126 ms with the copy)."""
        u = self.uop
        if u.op is not Ops.PERMUTE or u.arg[-1] == len(u.arg) - 1 or not _is_buffer_view(u.src[0]):
            return self
        shape = u.shape
        if not all(isinstance(d, int) for d in shape) or shape[-2] < PACK_MIN_ROWS:
            return self
        return self.contiguous() if math.prod(shape) * u.dtype.itemsize >= PACK_MIN_BYTES else self

    def _packed_for_matmul(self, x: Tensor) -> Tensor:
        """B of a big x @ B (K, N) (or a batch of them), the same values read through a packed copy: panels of
        PACK_LANES columns, each K rows of contiguous lanes (BLIS-style packing, one copy kernel). The matmul kernel's
        vector loads of B then walk one contiguous panel instead of rows N elements apart (2048^3: 147 -> 90 ms with
        cache blocking), or, for a transposed B (q @ k^T), instead of gathering each vector from N rows (16 x
        512 x 64 by 64 x 512: 12.8 -> 5.3 ms)."""
        u = self.uop
        shape, xshape = u.shape, x.uop.shape
        if len(shape) < 2 or not all(d.__class__ is int for d in (*shape, *xshape)):
            return self
        *batch, k, n = shape
        # rows of x each B meets: all of x's for one B, one matrix's for a batch of Bs (attention's q @ k^T)
        m = math.prod(xshape[:-1]) if not batch else xshape[-2] if len(xshape) >= 2 else 1
        size = math.prod(shape) * u.dtype.itemsize
        transposed = u.op is Ops.PERMUTE and u.arg[-1] != len(shape) - 1 and _is_buffer_view(u.src[0])
        if (
            transposed
            and m >= PACK_T_MIN_ROWS
            and k < PACK_T_MAX_K
            and size >= PACK_T_MIN_BYTES
            and (n % PACK_LANES or m < PACK_MIN_ROWS)
        ):
            # a weight read transposed (nn.Linear's x @ W.T): the tile's vector lanes along N would gather each
            # vector from N rows K apart; one transposing copy (K * N elements, against M * K * N multiply-adds)
            # makes them contiguous loads (a (700, 64) @ (64, 1000) decoder: 1.2 -> 0.4 ms)
            return self.contiguous()
        if n % PACK_LANES or n == PACK_LANES or m < PACK_MIN_ROWS or size < PACK_MIN_BYTES:
            return self
        b = len(batch)
        swap = (*range(b), b + 1, b, b + 2)  # (..., k, panels, lanes) <-> (..., panels, k, lanes)
        packed = self.reshape(*batch, k, n // PACK_LANES, PACK_LANES).permute(swap).contiguous()
        return packed.permute(swap).reshape(*batch, k, n)

    # ---------------------------------------------------------------- python operators
    __add__ = add

    def __radd__(self, x: ConstType) -> Tensor:
        return self.add(x, True)

    __sub__ = sub

    def __rsub__(self, x: ConstType) -> Tensor:
        return self.sub(x, True)

    __mul__ = mul

    def __rmul__(self, x: ConstType) -> Tensor:
        return self.mul(x, True)

    __truediv__ = div

    def __rtruediv__(self, x: ConstType) -> Tensor:
        return self.div(x, True)

    def __floordiv__(self, x: Tensor | ConstType) -> Tensor:
        return self.floordiv(x)

    def __rfloordiv__(self, x: ConstType) -> Tensor:
        return self.floordiv(x, True)

    def __mod__(self, x: Tensor | ConstType) -> Tensor:
        return self.mod(x)

    def __rmod__(self, x: ConstType) -> Tensor:
        return self.mod(x, True)

    def __neg__(self) -> Tensor:
        return self.neg()

    def __matmul__(self, x: Tensor) -> Tensor:
        return self.matmul(x)

    def __and__(self, x: Tensor | ConstType) -> Tensor:
        return self.bitwise_and(x)

    def __rand__(self, x: ConstType) -> Tensor:
        return self.bitwise_and(x, True)

    def __or__(self, x: Tensor | ConstType) -> Tensor:
        return self.bitwise_or(x)

    def __ror__(self, x: ConstType) -> Tensor:
        return self.bitwise_or(x, True)

    def __xor__(self, x: Tensor | ConstType) -> Tensor:
        return self.bitwise_xor(x)

    def __rxor__(self, x: ConstType) -> Tensor:
        return self.bitwise_xor(x, True)

    def __lshift__(self, x: Tensor | ConstType) -> Tensor:
        return self.lshift(x)

    def __rshift__(self, x: Tensor | ConstType) -> Tensor:
        return self.rshift(x)

    # in-place operators: torch's rule (the result of the out-of-place op, which must be castable to self's dtype,
    # written back into self) through assign into this tensor's buffer, realized at once as torch writes at once:
    # views of the buffer see the new value, and no pending STORE is left in a graph (the runtime re-runs a STORE
    # that two separately realized graphs share, so a pending one is realized before it is read)
    def _inplace(self, fn: Callable[[Tensor, Any], Tensor], x: Tensor | ConstType, op: str) -> Tensor:
        if self.uop.op is Ops.AFTER:  # a pending assign (see _inplace's note): written before it is read again
            self.realize()
        out = fn(self, x)
        if _KIND_RANK[out.dtype.kind] > _KIND_RANK[self.dtype.kind]:
            raise RuntimeError(
                f"{op}: result type {_torch_name(out.dtype)} can't be cast to the desired output type "
                f"{_torch_name(self.dtype)}"
            )
        if out.shape != self.shape:
            raise RuntimeError(
                f"{op}: output with shape {list(self.shape)} doesn't match the broadcast shape {list(out.shape)}"
            )
        if self._requires_grad and self.is_leaf and not Tensor.no_grad:
            raise RuntimeError(f"{op}: a leaf Variable that requires grad is being used in an in-place operation.")
        if (self._requires_grad or out._requires_grad) and not Tensor.no_grad:
            # a STORE has no gradient: keep the graph (the new value replaces this tensor's, functionally)
            self.uop = out.cast(self.dtype).uop
            self._requires_grad = True
            return self
        written = self.assign(out)
        del out  # (held, the torch flavor would compute it as a value of its own: a second kernel and a copy)
        return written.realize()

    def __iadd__(self, x: Tensor | ConstType) -> Tensor:
        return self._inplace(Tensor.add, x, "add_")

    def __isub__(self, x: Tensor | ConstType) -> Tensor:
        return self._inplace(Tensor.sub, x, "sub_")

    def __imul__(self, x: Tensor | ConstType) -> Tensor:
        return self._inplace(Tensor.mul, x, "mul_")

    def __itruediv__(self, x: Tensor | ConstType) -> Tensor:
        return self._inplace(Tensor.div, x, "div_")

    def __ifloordiv__(self, x: Tensor | ConstType) -> Tensor:
        return self._inplace(Tensor.floordiv, x, "floor_divide_")

    def __imod__(self, x: Tensor | ConstType) -> Tensor:
        return self._inplace(Tensor.mod, x, "remainder_")

    def __ipow__(self, x: Tensor | ConstType) -> Tensor:
        return self._inplace(Tensor.pow, x, "pow_")

    def __iand__(self, x: Tensor | ConstType) -> Tensor:
        return self._inplace(Tensor.bitwise_and, x, "bitwise_and_")

    def __ior__(self, x: Tensor | ConstType) -> Tensor:
        return self._inplace(Tensor.bitwise_or, x, "bitwise_or_")

    def __ixor__(self, x: Tensor | ConstType) -> Tensor:
        return self._inplace(Tensor.bitwise_xor, x, "bitwise_xor_")

    def __ilshift__(self, x: Tensor | ConstType) -> Tensor:
        return self._inplace(Tensor.lshift, x, "bitwise_left_shift_")

    def __irshift__(self, x: Tensor | ConstType) -> Tensor:
        return self._inplace(Tensor.rshift, x, "bitwise_right_shift_")

    def __invert__(self) -> Tensor:
        return self.logical_not() if self.dtype is dtypes.bool else self ^ -1

    def __bool__(self) -> bool:
        if self.numel() != 1:
            raise RuntimeError(f"bool: the truth value of a tensor with {self.numel()} elements is ambiguous")
        return bool(self.item())

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __index__(self) -> int:
        """A one-element integer tensor as a Python index (`items[t]`, `range(t)`), as torch."""
        if self.dtype.is_float or self.dtype is dtypes.bool or self.numel() != 1:
            raise TypeError(
                f"only integer tensors of a single element can be converted to an index (got {self.dtype}, "
                f"shape {self.shape})"
            )
        return int(self.item())

    def __format__(self, spec: str) -> str:
        """f"{t:.2f}": a 0-d tensor formats its value (torch's rule); others take only an empty spec."""
        if not spec:
            return str(self)
        if self.ndim == 0:
            return format(self.item(), spec)
        raise TypeError(f"unsupported format string {spec!r} passed to a Tensor of shape {self.shape}")


def _arange_uop(start: int | float, stop: int | float, step: int | float, dt: DType) -> UOp:
    """Tensor.arange's graph (constants and views: on no device): element i is the sum of its binary digits, each
    digit a padded, tiled constant."""
    n = max(0, math.ceil((stop - start) / step))
    idx = Tensor.zeros(n, dtype=dtypes.int64)
    bit = 1
    while bit < n:
        digit = Tensor.full((bit,), bit, dtype=dtypes.int64).pad(((bit, 0),))  # 0*bit, then bit*bit
        reps = -(-n // (2 * bit))
        idx = idx + digit.reshape(1, 2 * bit).expand(reps, 2 * bit).reshape(reps * 2 * bit).shrink(((0, n),))
        bit *= 2
    return ((idx.cast(dt) * step + start).cast(dt) if (start, step) != (0, 1) else idx.cast(dt)).uop


class _DataAlias(Tensor):
    """What Tensor.data gives: a tensor (torch's `.data`) that is also callable (tinygrad's `data()`)."""

    __slots__ = ()

    def __call__(self) -> memoryview:
        """The values as a memoryview of the tensor's shape and format (a copy out, as numpy())."""
        return memoryview(self.numpy())
