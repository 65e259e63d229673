"""MovementMixin: see unigrad/api/__init__.py. Methods use only core Tensor methods (self is a Tensor).

Movement, indexing, gather/scatter and sorting, all written over the core's movement ops (reshape, expand,
permute, flip, pad, shrink), comparisons, where and reductions. There is no gather primitive: a lookup
`out[i] = x[idx[i]]` is the spec's one-hot composition, `where(idx[i] == k, x[k], 0).sum(k)`, so it costs
O(len(idx) * n) work (fused into one reduce kernel, never materialized as a mask buffer). Sorting ranks each
element by counting the elements that sort before it: O(n^2) comparisons along the sorted dim.

Ops whose output shape depends on data (nonzero, masked_select, boolean-mask indexing, unique, tensor-valued
repeat_interleave) realize a count first (`.item()`/`.tolist()`: a sync point), then build the result.

Selections sum one value with zeros, so a selected -0.0 comes back as 0.0. Index values outside their
dimension that are only known at run time (tensor indices of x[idx] and gather) raise torch's error at the next
realize (tensor.check_values); ops whose indices are in range by construction (sort, topk, median) use _gather
with check=False.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from unigrad import flavor
from unigrad.dtype import ConstType, DType, dtypes, least_upper_dtype
from unigrad.api.reduce import ValuesIndices
from unigrad.api.strides import is_contiguous as row_major, layout
from unigrad.helpers import record
from unigrad.ir.sint import always_le, fits_bound, sadd, sint, smin, ssub
from unigrad.ir.ops import GroupOp, Ops
from unigrad.ir.uop import UOp
from unigrad.pipeline.rangeify import view_base

if TYPE_CHECKING:
    from unigrad.dtype import ConstType
    from unigrad.tensor import Tensor


# ---------------------------------------------------------------- helpers (module level: no Tensor state)


def _dim(op: str, d: int, ndim: int) -> int:
    """`d` normalized into [0, ndim), or torch's IndexError (a 0-d tensor takes -1 and 0)."""
    lo, hi = (-ndim, ndim - 1) if ndim > 0 else (-1, 0)
    if not isinstance(d, int) or not lo <= d <= hi:
        raise IndexError(f"{op}: dimension out of range (expected to be in range of [{lo}, {hi}], but got {d})")
    return d + ndim if d < 0 else d


def _ints(args: Sequence[Any]) -> tuple[int, ...]:
    """Varargs or one sequence: f(1, 2) and f((1, 2)) both give (1, 2)."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        return tuple(args[0])
    return tuple(args)


def _tensor_list(first: Any, rest: Sequence[Any]) -> list[Tensor]:
    """cat/stack/meshgrid arguments: `a.cat(b, c)`, `Tensor.cat(a, b)` or `Tensor.cat([a, b])`."""
    if isinstance(first, (list, tuple)):
        return [*first, *rest]
    return [first, *rest]


def _zero(x: Tensor) -> Tensor:
    """A 0-d zero of x's dtype on x's device (False for bool)."""
    from unigrad.tensor import Tensor

    return Tensor(False if x.dtype is dtypes.bool else 0, dtype=x.dtype, device=x.device)


def _select_sum(x: Tensor, axis: int | tuple[int, ...]) -> Tensor:
    """Sum over `axis` of a tensor with at most one nonzero along it (a one-hot selection), in x's dtype."""
    if x.dtype is dtypes.bool:
        return x.cast(dtypes.uint8).sum(axis, dtype=dtypes.uint8).cast(dtypes.bool)
    return x.sum(axis, dtype=x.dtype)


TOPK_SELECT = 16  # topk of up to this many of more than SORT_NETWORK_MIN elements picks them one at a time
CAT_GROUP, CAT_TREE_MIN = 4, 1 << 16  # cat merges more pieces than this, of that many elements in all, in a tree
# ... and more than CAT_MAX_PIECES pieces of any size in groups of that many: a kernel holds every piece's code (a
# cat of 199 time steps' (97, 1) outputs under an MSE loss was one 199-deep where chain: 2.6 s of gcc)
CAT_MAX_PIECES = 32
SORT_NETWORK_MIN = 64  # sort (and topk of more than TOPK_SELECT) over more elements than this: a sorting network
_earlier_uops: OrderedDict[tuple[Any, ...], UOp] = OrderedDict()  # _earlier's graphs by n


def _masked_fill(x: Tensor, index: Any, value: Any) -> Tensor | None:
    """x[mask] = value for a bool tensor mask over x's leading dims and one value (a Python scalar or a one-element
    tensor): torch's masked_fill, a where() with no data-dependent shape (the general path finds the mask's positions
    first, a realize). None for any other index or value."""
    from unigrad.tensor import Tensor

    if not (isinstance(index, Tensor) and index.dtype is dtypes.bool and 0 < index.ndim <= x.ndim):
        return None
    if tuple(index.shape) != tuple(x.shape[: index.ndim]) or index.device != x.device:
        return None
    if isinstance(value, Tensor):
        if value.numel() != 1 or value.ndim > 1 or value.device != x.device:
            return None
        v = value.reshape(()).cast(x.dtype).expand(x.shape)
    elif isinstance(value, (bool, int, float)):
        v = x._const_like(value, x.dtype)
    else:
        return None
    mask = index.reshape(*index.shape, *(1,) * (x.ndim - index.ndim)).expand(x.shape)
    return mask.where(v, x)


def _writes_in_place(t: Tensor) -> bool:
    """Whether t is a view of a buffer that a setitem may write in place: on one device, a chain of movement ops
    (or detach) over a BUFFER or an assign, with no EXPAND (several elements would share one memory location) and
    no PAD (the padding has no memory to write)."""
    from unigrad.tensor import _without_detach

    if isinstance(t.device, tuple):
        return False
    u = _without_detach(t.uop)
    if view_base(u).op not in (Ops.BUFFER, Ops.AFTER):
        return False
    chain = u.toposort(gate=lambda v: v.op in GroupOp.View)
    return not any(v.op in (Ops.EXPAND, Ops.PAD) and v.shape != v.src[0].shape for v in chain)


def _arange(n: int, device: str) -> Tensor:
    from unigrad.tensor import Tensor

    return Tensor.arange(n, dtype=dtypes.int64, device=device)


def _check_index_dtype(op: str, idx: Tensor) -> None:
    if not (idx.dtype.is_int or idx.dtype is dtypes.bool):
        raise IndexError(f"{op}: tensors used as indices must be long, int, byte or bool tensors, got {idx.dtype}")


def _count_at_most(cum: Tensor, targets: Tensor) -> Tensor:
    """For a 1-D non-decreasing int64 tensor `cum` (n,) and int64 `targets`: how many entries of cum are <= each
    target (searchsorted, side right), by binary search: log2(n)+1 rounds of an indirect load each, one fused
    kernel, O(targets * log n)."""
    n = cum.shape[0]
    lo = targets * 0
    hi = lo + n
    for _ in range(n.bit_length()):
        mid = (lo + hi) // 2
        right = (mid < hi) & (cum.take_rows(mid) <= targets)  # mid == hi reads past the end: no step
        lo, hi = right.where(mid + 1, lo), right.where(hi, mid)
    return lo


def _every(x: Tensor, steps: Sequence[int]) -> Tensor:
    """x[::s0, ::s1, ...] for positive steps: pad each dim to a multiple of its step, split it into
    (count, step) and keep column 0."""
    if all(s == 1 for s in steps):
        return x
    counts = [-(-n // s) for n, s in zip(x.shape, steps)]
    x = x.pad(tuple((0, m * s - n) for n, m, s in zip(x.shape, counts, steps)))
    x = x.reshape(tuple(d for m, s in zip(counts, steps) for d in (m, s)))
    x = x.shrink(tuple(b for m in counts for b in ((0, m), (0, 1))))
    return x.reshape(tuple(counts))


def _every_inverse(v: Tensor, steps: Sequence[int], sizes: Sequence[int]) -> Tensor:
    """The inverse of _every: v's elements at every step-th position of a zero-filled tensor of `sizes`."""
    if all(s == 1 for s in steps):
        return v
    v = v.reshape(tuple(d for m in v.shape for d in (m, 1)))
    v = v.pad(tuple(p for s in steps for p in ((0, 0), (0, s - 1))))
    v = v.reshape(tuple(m * s for m, s in zip(v.shape[::2], steps)))
    return v.shrink(tuple((0, n) for n in sizes))


# ---------------------------------------------------------------- indexing plan


@record(frozen=True)
class _DimIndex:
    """How basic indexing treats one dim of the source: keep [start, stop), flip it if `flip`, take every
    `step`-th element; `drop` for an integer index (the dim is removed)."""

    start: int
    stop: int
    step: int = 1
    flip: bool = False
    drop: bool = False


@record(frozen=True)
class _IndexPlan:
    """An index expression split into its basic part (per source dim, plus new None/bool dims) and its
    advanced part (index tensors by position in the basic result)."""

    dims: tuple[_DimIndex, ...]
    basic_shape: tuple[int, ...]  # shape after basic indexing (ints dropped, None dims inserted)
    empty: tuple[int, ...]  # positions in basic_shape of new dims from a False index (size 0)
    adv: tuple[tuple[int, Tensor], ...]  # (position in basic_shape, int64 index tensor)


@record(frozen=True)
class _Progression:
    """A list of ints, the only advanced index, in a graph no write goes through in place: if its values (negatives
    counted from the end) step up evenly it selects what a slice does (x[:, [-1]] is x[:, -1:]), so it becomes one,
    with no index buffer to copy in and no indirect load. A copy and a view of a lazy tensor read alike and a
    setitem on either is functional; a list over a buffer keeps the advanced path (its result is a copy)."""

    values: tuple[int, ...]

    def as_slice(self, n: int) -> slice | None:
        """The slice selecting the same elements of a dim of size n (all in range), or None."""
        v = [i + n if i < 0 else i for i in self.values]
        step = v[1] - v[0] if len(v) > 1 else 1
        if step < 1 or v != list(range(v[0], v[0] + step * len(v), step)):
            return None
        return slice(v[0], v[-1] + 1, step)


@record(frozen=True)
class _Mask:
    """A bool tensor index: it covers mask.ndim dims and stands for the coordinates of its True elements."""

    mask: Tensor


def _slice_bounds(s: slice) -> slice:
    """A slice whose bounds are not all ints or None: numpy ints as ints, symbolic bounds kept, and 0-d Tensors
    as their values where the flavor takes them (torch; tinygrad raises TypeError)."""
    from unigrad.tensor import Tensor

    def bound(v: Any) -> Any:
        if isinstance(v, Tensor):
            if not flavor.current().tensor_slice_bounds:
                raise TypeError(f"__getitem__: slice bounds must be ints or None, got a Tensor in {s}")
            return v.__index__()
        return v if v is None or isinstance(v, UOp) else v.__index__() if hasattr(v, "__index__") else v

    return slice(bound(s.start), bound(s.stop), bound(s.step))


def _slice_dim(s: slice, n: sint) -> _DimIndex:
    if not all(v is None or v.__class__ is int for v in (s.start, s.stop, s.step)):
        s = _slice_bounds(s)
    if s.step == 0:
        raise ValueError("__getitem__: slice step cannot be zero")
    if any(isinstance(v, UOp) for v in (s.start, s.stop, n)):
        return _symbolic_slice(s, n)
    start, stop, step = s.indices(n)  # type: ignore[arg-type]
    length = len(range(start, stop, step))
    if length == 0:
        return _DimIndex(0, 0)
    if step > 0:
        return _DimIndex(start, start + (length - 1) * step + 1, step)
    last = start + (length - 1) * step  # the lowest element taken
    return _DimIndex(last, start + 1, -step, flip=True)


def _symbolic_slice(s: slice, n: sint) -> _DimIndex:
    """x[a:b] where a, b or the size are symbolic (Variables): step 1, bounds 0 <= a <= b <= n for every value."""
    if s.step not in (None, 1):
        raise IndexError(f"__getitem__: a slice with symbolic bounds takes step 1, got {s.step}")
    start = 0 if s.start is None else s.start
    stop = n if s.stop is None else s.stop
    if any(isinstance(v, int) and v < 0 for v in (start, stop)):
        raise IndexError(f"__getitem__: negative bounds with a symbolic size are not supported, got {s}")
    if smin(start) < 0 or not always_le(start, stop) or not always_le(stop, n):
        if not fits_bound(start, stop, n):
            raise IndexError(
                f"__getitem__: slice {start}:{stop} does not fit size {n} for every value of its Variables"
            )
    return _DimIndex(start, stop, 1)


def _index_array(item: Any) -> np.ndarray:
    """A list or numpy array used as an index, as int64 or bool data (IndexError for anything else)."""
    arr = np.asarray(item)
    if arr.dtype == object or (arr.dtype.kind not in "biu" and arr.size):
        raise IndexError(f"__getitem__: tensors used as indices must be long, int or bool, got {item!r}")
    return arr.astype(np.bool_ if arr.dtype.kind == "b" else np.int64)


def _index_plan(x: Tensor, index: Any) -> _IndexPlan:
    """Parse a Python index expression as numpy/torch do: ints and slices are basic, None/True insert a
    dim, Ellipsis fills the dims not named, and int/bool tensors (and lists) are advanced indices."""
    from unigrad.tensor import Tensor

    items = list(index) if isinstance(index, tuple) else [index]
    bounds: dict[int, tuple[int, int]] = {}  # id of an index tensor made from a list -> (min, max) of its values
    advanced = sum(isinstance(it, (list, tuple, np.ndarray, Tensor)) for it in items)
    for i, it in enumerate(items):
        if isinstance(it, np.integer):
            items[i] = int(it)
        elif isinstance(it, (list, tuple, np.ndarray)):
            arr = _index_array(it)
            if advanced == 1 and arr.ndim == 1 and arr.size and arr.dtype.kind != "b" and not _writes_in_place(x):
                items[i] = _Progression(tuple(arr.tolist()))
                continue
            items[i] = Tensor(arr, device=x.device)
            if arr.dtype.kind != "b" and arr.size:
                bounds[id(items[i])] = (int(arr.min()), int(arr.max()))
        elif not isinstance(it, (int, slice, type(None), type(Ellipsis), Tensor, UOp)):
            raise IndexError(
                f"__getitem__: only integers, slices, None, Ellipsis and int/bool tensors are valid indices, "
                f"got {type(it).__name__}"
            )
    # bool tensors: 0-d ones act as True/False, others become one int index tensor per dim they cover
    expanded: list[Any] = []
    for it in items:
        if isinstance(it, Tensor):
            _check_index_dtype("__getitem__", it)
            if it.dtype is dtypes.bool:
                if it.ndim == 0:
                    expanded.append(bool(it.item()))
                    continue
                expanded.append(_Mask(it))
                continue
        expanded.append(it)
    consumed = sum(
        it.mask.ndim if isinstance(it, _Mask) else 1
        for it in expanded
        if isinstance(it, (_Mask, _Progression, slice, Tensor, UOp))
        or (isinstance(it, int) and not isinstance(it, bool))
    )
    if sum(it is Ellipsis for it in expanded) > 1:
        raise IndexError("__getitem__: an index can only have a single ellipsis ('...')")
    if consumed > x.ndim:
        raise IndexError(f"__getitem__: too many indices for tensor of dimension {x.ndim} (got {consumed})")
    if any(it is Ellipsis for it in expanded):
        at = next(i for i, it in enumerate(expanded) if it is Ellipsis)
        expanded[at : at + 1] = [slice(None)] * (x.ndim - consumed)
    else:
        expanded += [slice(None)] * (x.ndim - consumed)

    dims: list[_DimIndex] = []
    basic_shape: list[int] = []
    adv: list[tuple[int, Tensor]] = []
    empty: list[int] = []
    d = 0  # current source dim
    for it in expanded:
        if it is None or isinstance(it, bool):
            if it is False:
                empty.append(len(basic_shape))
            basic_shape.append(1)
        elif isinstance(it, int):
            n = x.shape[d]
            if not -n <= it < n:
                raise IndexError(f"__getitem__: index {it} is out of bounds for dimension {d} with size {n}")
            i = it + n if it < 0 else it
            dims.append(_DimIndex(i, i + 1, drop=True))
            d += 1
        elif isinstance(it, UOp):  # a symbolic index (Variables): in range for every value
            if smin(it) < 0 or not always_le(sadd(it, 1), x.shape[d]):
                raise IndexError(f"__getitem__: index {it} is out of bounds for dimension {d} with size {x.shape[d]}")
            dims.append(_DimIndex(it, sadd(it, 1), drop=True))
            d += 1
        elif isinstance(it, slice):
            di = _slice_dim(it, x.shape[d])
            dims.append(di)
            width = ssub(di.stop, di.start)
            basic_shape.append(width if di.step == 1 else len(range(0, width, di.step)))  # type: ignore[arg-type]
            d += 1
        else:
            if isinstance(it, _Progression):
                n = x.shape[d]
                lo, hi = min(it.values), max(it.values)
                if isinstance(n, int) and -n <= lo and hi < n and (sl := it.as_slice(n)) is not None:
                    dims.append(_slice_dim(sl, n))
                    basic_shape.append(len(it.values))
                    d += 1
                    continue
                arr = np.array(it.values, dtype=np.int64)  # not a progression: the advanced path's index tensor
                it = Tensor(arr, device=x.device)
                bounds[id(it)] = (lo, hi)
            if isinstance(it, _Mask):  # a bool mask over mask.ndim dims: its nonzero() coordinates (a sync point)
                mask = it.mask
                covered = x.shape[d : d + mask.ndim]
                if mask.shape != covered:
                    raise IndexError(
                        f"__getitem__: the shape of the mask {mask.shape} at index {d} does not match the shape "
                        f"of the indexed tensor {covered}"
                    )
                coords = mask.nonzero()
                idxs = [coords[:, k] for k in range(mask.ndim)]
            else:
                lo, hi = bounds.get(id(it), (0, -1))
                if lo < -x.shape[d] or hi >= x.shape[d]:
                    raise IndexError(
                        f"__getitem__: index {hi if hi >= x.shape[d] else lo} is out of bounds for dimension {d} "
                        f"with size {x.shape[d]}"
                    )
                if id(it) not in bounds and isinstance(x.shape[d], int):  # a tensor's values: checked when computed
                    _check_positions("__getitem__", it, d, x.shape[d], negative=True)
                idxs = [it]
            for idx in idxs:
                n = x.shape[d]
                dims.append(_DimIndex(0, n))
                adv.append((len(basic_shape), idx.cast(dtypes.int64)))
                basic_shape.append(n)
                d += 1
    return _IndexPlan(tuple(dims), tuple(basic_shape), tuple(empty), tuple(adv))


def _ints_and_slices(x: Tensor, index: Any) -> Tensor | None:
    """The common index, in-range ints and nonempty step-1 slices of static sizes (x[i], x[a:b], x[:, a:b]): one shrink
    and, with an int, one reshape, the nodes the general path builds, without its parsing (~4x faster). None for
    anything else (the general path also gives the errors)."""
    items = index if index.__class__ is tuple else (index,)
    shape = x.shape
    if len(items) > len(shape):
        return None
    bounds: list[tuple[int, int] | None] = []
    kept: list[int] = []
    for it, n in zip(items, shape):
        if n.__class__ is not int:
            return None
        if it.__class__ is int:
            i = it + n if it < 0 else it
            if not 0 <= i < n:
                return None
            bounds.append((i, i + 1))
        elif it.__class__ is slice and (it.step is None or it.step == 1):
            if not (it.start is None or it.start.__class__ is int) or not (it.stop is None or it.stop.__class__ is int):
                return None  # Tensor or symbolic bounds: the general path
            try:
                start, stop, _ = it.indices(n)
            except TypeError:  # a symbolic bound
                return None
            if stop <= start:
                return None  # empty: the general path's node
            bounds.append((start, stop))
            kept.append(stop - start)
        else:
            return None
    out = x.shrink(bounds + [None] * (len(shape) - len(items)))
    if len(kept) < len(items):  # an int drops its dim
        out = out.reshape((*kept, *shape[len(items) :]))
    return out


def _basic_index(x: Tensor, plan: _IndexPlan) -> Tensor:
    """Apply the basic part of a plan: one shrink, one flip, the strides, one reshape (drop/insert dims)."""
    x = x.shrink(tuple((di.start, di.stop) for di in plan.dims))
    flips = [i for i, di in enumerate(plan.dims) if di.flip]
    if flips:
        x = x.flip(flips)
    x = _every(x, [di.step for di in plan.dims])
    x = x.reshape(plan.basic_shape)
    if plan.empty:
        x = x.shrink(tuple((0, 0) if i in plan.empty else None for i in range(x.ndim)))
    return x


def _basic_unindex(v: Tensor, plan: _IndexPlan, shape: tuple[int, ...]) -> Tensor:
    """The inverse of _basic_index: v (of the basic shape) placed where it came from in a zero-filled tensor
    of `shape`."""
    sizes = [ssub(di.stop, di.start) for di in plan.dims]
    kept = [s if di.step == 1 else len(range(0, s, di.step)) for s, di in zip(sizes, plan.dims)]  # type: ignore[arg-type]
    v = v.reshape(tuple(kept))
    v = _every_inverse(v, [di.step for di in plan.dims], sizes)
    flips = [i for i, di in enumerate(plan.dims) if di.flip]
    if flips:
        v = v.flip(flips)
    return v.pad(tuple((di.start, ssub(n, di.stop)) for di, n in zip(plan.dims, shape)))


def _adv_layout(plan: _IndexPlan) -> tuple[tuple[int, ...], tuple[int, ...], bool]:
    """(advanced positions, other positions, adjacent?) in the basic shape. Adjacent advanced indices keep
    their place in the result; separated ones put the broadcast index shape first (numpy/torch rule)."""
    pos = tuple(p for p, _ in plan.adv)
    rest = tuple(p for p in range(len(plan.basic_shape)) if p not in pos)
    adjacent = pos == tuple(range(pos[0], pos[0] + len(pos)))
    return pos, rest, adjacent


def _adv_indices(plan: _IndexPlan, op: str) -> tuple[tuple[int, ...], list[Tensor]]:
    """The broadcast shape of the index tensors, and each one broadcast to it with negatives wrapped."""
    from unigrad.tensor import _broadcast_shape

    shapes = [idx.shape for _, idx in plan.adv]
    try:
        bshape = _broadcast_shape(op, *shapes)
    except RuntimeError:
        raise IndexError(
            f"{op}: shape mismatch: indexing tensors could not be broadcast together with shapes "
            f"{', '.join(map(str, shapes))}"
        ) from None
    out = []
    for p, idx in plan.adv:
        n = plan.basic_shape[p]
        out.append((idx < 0).where(idx + n, idx).expand(bshape))
    return bshape, out


def _adv_match(plan: _IndexPlan, bshape: tuple[int, ...], idxs: list[Tensor], n_rest: int) -> Tensor:
    """[b..., k_1..k_m, 1...]: True where index tuple b selects source position (k_1..k_m) (the one-hot
    masks of the spec's gather, one per advanced dim, AND-ed)."""
    m = len(idxs)
    match = None
    for j, ((p, _), idx) in enumerate(zip(plan.adv, idxs)):
        n = plan.basic_shape[p]
        pos_shape = (1,) * len(bshape) + tuple(n if i == j else 1 for i in range(m)) + (1,) * n_rest
        one = idx.reshape(bshape + (1,) * (m + n_rest)) == _arange(n, idx.device).reshape(pos_shape)
        match = one if match is None else match & one
    assert match is not None
    return match


def _advanced_get(x: Tensor, plan: _IndexPlan) -> Tensor:
    """x (already basic-indexed) gathered at the advanced indices: [B..., rest...], then B moved to the first
    advanced position if the advanced indices are adjacent. Over static sizes an indirect load (take_rows) of the
    advanced dims flattened into one: O(output); symbolic sizes sum one-hot selections, O(output * positions).
    Either way an index out of range reads 0 (_index_plan has queued the check that raises)."""
    pos, rest, adjacent = _adv_layout(plan)
    bshape, idxs = _adv_indices(plan, "__getitem__")
    xp = x.permute(pos + rest)  # [k_1..k_m, rest...]
    nb, m = len(bshape), len(pos)
    if all(isinstance(s, int) for s in xp.shape):
        out = xp.reshape(-1, *xp.shape[m:]).take_rows(_flat_index(idxs, xp.shape[:m]))  # [B..., rest...]
    else:
        xe = xp.reshape((1,) * len(bshape) + xp.shape)
        match = _adv_match(plan, bshape, idxs, len(rest))
        out = _select_sum(match.where(xe, _zero(x)), tuple(range(nb, nb + m)))  # [B..., rest...]
    if adjacent and pos[0] > 0:
        before = pos[0]  # rest dims that come before the advanced block
        order = tuple(range(nb, nb + before)) + tuple(range(nb)) + tuple(range(nb + before, out.ndim))
        out = out.permute(order)
    return out


def _flat_index(idxs: list[Tensor], sizes: tuple[int, ...]) -> Tensor:
    """The row-major position of (idx_1, ..., idx_m) (negatives already wrapped) in dims of `sizes`; a tuple with
    any entry out of its dim's range gets -N-1 (N = prod(sizes)), a row no entry reaches even after take_rows
    wraps it, so the indirect load reads 0 as a one-hot selection would (not the element a wrapped or flattened
    position lands on)."""
    flat, valid = None, None
    for idx, n, stride in zip(idxs, sizes, [math.prod(sizes[i + 1 :]) for i in range(len(sizes))]):
        i = idx.cast(dtypes.int64)
        inside = (i >= 0) & (i < n)
        flat = i * stride if flat is None else flat + i * stride
        valid = inside if valid is None else valid & inside
    assert flat is not None and valid is not None
    return valid.where(flat, -math.prod(sizes) - 1)


def _advanced_set(x: Tensor, plan: _IndexPlan, value: Tensor) -> Tensor:
    """x (already basic-indexed) with `value` (broadcast to x[advanced]'s shape) written at the advanced
    indices. Where several index tuples hit one position, the last one wins (as PyTorch on CPU)."""
    pos, rest, adjacent = _adv_layout(plan)
    bshape, idxs = _adv_indices(plan, "__setitem__")
    nb, m = len(bshape), len(pos)
    if adjacent and pos[0] > 0:  # bring value to the [B..., rest...] layout
        before = pos[0]
        order = tuple(range(before, before + nb)) + tuple(range(before)) + tuple(range(before + nb, value.ndim))
        value = value.permute(order)
    nflat = math.prod(bshape)
    if nflat == 0:
        return x
    xp = x.permute(pos + rest)  # [k..., rest...]
    match = _adv_match(plan, bshape, idxs, 0)  # [B..., k...]
    flat_b = _arange(nflat, x.device).reshape(bshape + (1,) * m)
    last = match.where(flat_b, -1).reshape(nflat, *xp.shape[:m]).max(0)  # [k...]: the winning index tuple
    win = last.reshape((1,) * nb + last.shape) == flat_b  # [B..., k...]
    win = win.reshape(win.shape + (1,) * len(rest))
    val = value.reshape(bshape + (1,) * m + value.shape[nb:])
    picked = _select_sum(win.where(val, _zero(x)), tuple(range(nb)))  # [k..., rest...]
    hit = (last >= 0).reshape(last.shape + (1,) * len(rest))
    new = hit.where(picked, xp)
    inverse = [0] * xp.ndim
    for i, p in enumerate(pos + rest):
        inverse[p] = i
    return new.permute(inverse)


def _scatter_dim(self: Tensor, op: str, dim: int, index: Tensor) -> int:
    """Checks shared by gather/scatter: same ndim, int index, index no larger than self off `dim`."""
    d = _dim(op, dim, self.ndim)
    if not index.dtype.is_int:
        raise RuntimeError(f"{op}: expected an integer index tensor, got {index.dtype}")
    if index.ndim != self.ndim:
        raise RuntimeError(
            f"{op}: index tensor must have the same number of dimensions as the input tensor "
            f"(index {index.shape}, input {self.shape})"
        )
    for i, (a, b) in enumerate(zip(index.shape, self.shape)):
        if i != d and a > b:
            raise RuntimeError(f"{op}: size of index {index.shape} does not fit input {self.shape} at dimension {i}")
    return d


# ---------------------------------------------------------------- the mixin


def _check_positions(
    op: str,
    index: Tensor,
    d: int | None,
    n: int,
    negative: bool,
    kind: type[Exception] | None = None,
    verb: str = "out of bounds",
) -> None:
    """Have the next realize raise torch's error when an entry of `index` is no position of dim d of size n (d None:
    of the flattened tensor of n elements): outside [-n, n) with negative counting from the end (indexing:
    IndexError), else outside [0, n) (gather: RuntimeError), unless `kind` is given. Unchecked, the indirect load
    reads 0: a silently wrong result."""
    from unigrad.tensor import check_range

    err = kind or (IndexError if negative else RuntimeError)
    where = f"dimension {d} with size {n}" if d is not None else f"a tensor of {n} elements"

    def error(count: int, value: int) -> Exception:
        return err(f"{op}: index {value} is {verb} for {where} ({count} such index(es))")

    check_range(index, -n if negative else 0, n, error)


def _check_index_range(op: str, index: Tensor, n: int | UOp, dim: int | None = None, negative: bool = True) -> None:
    """torch's IndexError for the index-tensor ops (index_select, index_fill, index_add, index_put, take): an entry
    outside [-n, n) ([0, n) when negative=False), checked at the next realize (_check_positions)."""
    if isinstance(n, int):  # a symbolic size is not known until the Variables are bound
        _check_positions(op, index, dim, n, negative, IndexError, "out of range")


def _gather(x: Tensor, dim: int, index: Tensor, check: bool) -> Tensor:
    """Tensor.gather; check=False for indices in range by construction (sort, median, ...): no check kernels."""
    x = x.reshape(1) if x.ndim == 0 else x
    idx = index.reshape(1) if index.ndim == 0 else index
    d = _scatter_dim(x, "gather", dim, idx)
    n = x.shape[d]
    if check and isinstance(n, int):
        _check_positions("gather", idx, d, n, negative=False)
    if not x.requires_grad and all(isinstance(s, int) for s in x.shape + idx.shape):
        # no gradient to take: an indirect load of x's flat position, O(index.numel()) (the one-hot form's
        # gradient is cheaper than this one's through a flat x, so it stays where a gradient may be asked)
        coords = [
            idx if i == d else _arange(s, x.device).reshape([s if j == i else 1 for j in range(idx.ndim)])
            for i, s in enumerate(idx.shape)
        ]
        return x.reshape(-1).take_rows(_flat_index(coords, x.shape)).reshape(index.shape)
    x = x.shrink(tuple(None if i == d else (0, s) for i, s in enumerate(idx.shape)))
    xe = x.movedim(d, -1).unsqueeze(d)  # [..., 1 at d, ..., n]
    match = idx.unsqueeze(-1) == _arange(n, x.device)  # [..., m at d, ..., n]
    out = _select_sum(match.where(xe, _zero(x)), -1)
    return out.reshape(index.shape)


def _joined(parts: list[Tensor], d: int) -> Tensor:
    """cat of checked pieces of static sizes along d: each padded into place and merged by where() under a mask
    of its range, the nodes Tensor.pad, Tensor.ones and Tensor.where make, built here directly (through the Tensor
    methods a piece cost ~40 us: a stack of an LSTM's 35 step outputs took 1.5 ms, four of them a training step)."""
    from unigrad.tensor import _const_uop

    ndim = len(parts[0].uop.shape)
    total = sum(t.uop.shape[d] for t in parts)
    full = tuple(total if j == d else n for j, n in enumerate(parts[0].uop.shape))
    to = UOp.shape_src(full)
    out: UOp | None = None
    offset = total
    for t in reversed(parts):
        u = t.uop
        offset -= u.shape[d]
        placed, mask = u, _const_uop(1, dtypes.bool, u.shape)
        if u.shape[d] != total:  # (the only piece with elements, beside empty ones that require grad: in place)
            at = UOp.shape_src(tuple(offset if j == d else 0 for j in range(ndim)))
            placed, mask = UOp.movement(Ops.PAD, (u, at, to), full), UOp.movement(Ops.PAD, (mask, at, to), full)
        out = placed if out is None else UOp.elementwise(Ops.WHERE, (mask, placed, out))
    assert out is not None
    return parts[0]._new(out, *parts[1:])


class MovementMixin:
    """Mixed into Tensor."""

    __slots__ = ()

    # ------------------------------------------------------------ joining and splitting
    def cat(self: Tensor, *args: Tensor, dim: int = 0) -> Tensor:
        """Concatenate along `dim` (dtypes promote as in torch.cat). Each input is padded into place and the
        pieces merged with where(), so the result is one fused kernel; more than CAT_GROUP big pieces are merged
        in a tree of such kernels (each element then tests CAT_GROUP ranges per level, not one per piece)."""
        from unigrad.tensor import Tensor

        tensors = _tensor_list(self, args)
        if not tensors:
            raise ValueError("cat: expected a non-empty list of Tensors")
        if any(not isinstance(t, Tensor) for t in tensors):
            raise TypeError(f"cat: expected Tensors, got {[type(t).__name__ for t in tensors]}")
        if any(t.ndim == 0 for t in tensors):
            raise RuntimeError("cat: zero-dimensional tensor cannot be concatenated")
        if len({t.device for t in tensors}) > 1:
            raise RuntimeError(f"cat: expected all tensors on one device, got {[t.device for t in tensors]}")
        dts = {t.uop.dtype for t in tensors}
        dt = dts.pop() if len(dts) == 1 else least_upper_dtype(*dts)
        # torch skips legacy empty tensors of shape (0,) beside tensors of other ranks
        ref = next((t for t in tensors if t.uop.shape != (0,)), tensors[0])
        ref_shape = ref.uop.shape
        d = _dim("cat", dim, len(ref_shape))
        empty = tuple(0 if j == d else s for j, s in enumerate(ref_shape))  # a legacy piece that requires grad
        parts = [
            (t if t.uop.dtype is dt else t.cast(dt)) if t.uop.shape != (0,) or t is ref else t.reshape(empty).cast(dt)
            for t in tensors
            if t.uop.shape != (0,) or t is ref or t.requires_grad
        ]
        for i, t in enumerate(parts):
            shape = t.uop.shape
            if len(shape) != len(ref_shape) or any(a != b for j, (a, b) in enumerate(zip(shape, ref_shape)) if j != d):
                raise RuntimeError(
                    f"cat: sizes of tensors must match except in dimension {d}: expected {ref_shape} (off dim {d}), "
                    f"got {shape} for tensor {i}"
                )
        # pieces empty along dim add nothing (and an empty input buffer is best kept out of the kernel); one that
        # requires grad stays, so its gradient is an empty tensor as in torch rather than None
        parts = [t for t in parts if t.uop.shape[d] or t.requires_grad] or parts[:1]
        if len(parts) == 1:
            return parts[0]
        numel = sum(t.numel() for t in parts)
        big = len(parts) > CAT_GROUP and isinstance(numel, int) and numel >= CAT_TREE_MIN
        if big or len(parts) > CAT_MAX_PIECES:
            # every output element tests each piece's range: cat groups into buffers first, so it tests at most
            # CAT_GROUP per level (64 pieces of 64x256: 83 -> 15 ms)
            group = CAT_GROUP if big else CAT_MAX_PIECES
            groups = [parts[i : i + group] for i in range(0, len(parts), group)]
            parts = [g[0].cat(*g[1:], dim=d).contiguous() if len(g) > 1 else g[0] for g in groups]
            return parts[0].cat(*parts[1:], dim=d)
        if all(s.__class__ is int for t in parts for s in t.uop.shape):
            return _joined(parts, d)
        total: sint = 0
        for t in parts:
            total = sadd(total, t.shape[d])
        out: Tensor | None = None
        offset = total
        where = [(0, 0)] * ref.ndim
        for t in reversed(parts):
            size = t.shape[d]
            offset = ssub(offset, size)
            where[d] = (offset, ssub(ssub(total, offset), size))
            placed = t.pad(where)
            if out is None:
                out = placed
            else:
                mask = Tensor.ones(t.shape, dtype=dtypes.bool, device=t.device).pad(where)
                out = mask.where(placed, out)
        assert out is not None
        return out

    def stack(self: Tensor, *args: Tensor, dim: int = 0) -> Tensor:
        """Join equal-shaped tensors along a new dim `dim`."""
        tensors = _tensor_list(self, args)
        if not tensors:
            raise RuntimeError("stack: expected a non-empty list of Tensors")
        shape = tensors[0].shape
        for i, t in enumerate(tensors):
            if t.shape != shape:
                raise RuntimeError(f"stack: expects each tensor to be equal size, but got {shape} and {t.shape} ({i})")
        d = _dim("stack", dim, len(shape) + 1)
        first, *rest = (t.unsqueeze(d) for t in tensors)
        return first.cat(*rest, dim=d)

    def split(self: Tensor, split_size_or_sections: int | Sequence[int], dim: int = 0) -> tuple[Tensor, ...]:
        """Pieces of `split_size` along dim (the last may be smaller), or of the listed sizes."""
        d = _dim("split", dim, self.ndim)
        n = self.shape[d]
        if isinstance(split_size_or_sections, int):
            size = split_size_or_sections
            if size < 0 or (size == 0 and n != 0):
                raise RuntimeError(f"split: split_size must be positive (or 0 for a 0-size dim), got {size}")
            sizes = [min(size, n - i) for i in range(0, n, size)] if n else [0]
        else:
            sizes = list(split_size_or_sections)
            if any(s < 0 for s in sizes) or sum(sizes) != n:
                raise RuntimeError(
                    f"split: split_with_sizes expects split_sizes to sum exactly to {n} (dim {d} of {self.shape}), "
                    f"got {sizes}"
                )
        out = []
        start, before, after = 0, (None,) * d, (None,) * (self.ndim - d - 1)
        for s in sizes:
            out.append(self.shrink((*before, (start, start + s), *after)))
            start += s
        return tuple(out)

    def chunk(self: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
        """At most `chunks` pieces of ceil(n/chunks) along dim (fewer if they run out, as torch)."""
        if chunks <= 0:
            raise RuntimeError(f"chunk: expects `chunks` to be greater than 0, got {chunks}")
        d = _dim("chunk", dim, self.ndim)
        n = self.shape[d]
        if n == 0:
            return tuple(self for _ in range(chunks))
        return self.split(-(-n // chunks), d)

    def unflatten(self: Tensor, dim: int, sizes: Sequence[int]) -> Tensor:
        """Dim `dim` split into `sizes` (one may be -1)."""
        d = _dim("unflatten", dim, self.ndim)
        sizes = tuple(sizes)
        if sizes.count(-1) > 1:
            raise RuntimeError(f"unflatten: only one dimension can be inferred, got sizes {sizes}")
        known = math.prod([s for s in sizes if s != -1])
        if -1 in sizes:
            if known == 0 or self.shape[d] % known:
                raise RuntimeError(f"unflatten: sizes {sizes} do not fit dim {d} of {self.shape}")
            sizes = tuple(self.shape[d] // known if s == -1 else s for s in sizes)
        elif known != self.shape[d]:
            raise RuntimeError(
                f"unflatten: provided sizes {sizes} don't multiply up to the size of dim {d} ({self.shape[d]}) of "
                f"{self.shape}"
            )
        return self.reshape(self.shape[:d] + sizes + self.shape[d + 1 :])

    # ------------------------------------------------------------ repeating
    def repeat(self: Tensor, *repeats: int) -> Tensor:
        """Tile the tensor `repeats[i]` times along dim i (leading repeats add dims): reshape to (1, s) per
        dim, expand to (r, s), merge."""
        reps = _ints(repeats)
        if len(reps) < self.ndim:
            raise flavor.current().shape_arg_error(
                f"repeat: number of dimensions of repeat dims {reps} can not be smaller than the number of "
                f"dimensions of the tensor {self.shape}"
            )
        if any(r < 0 for r in reps):
            raise RuntimeError(f"repeat: repeats must be non-negative, got {reps}")
        base = (1,) * (len(reps) - self.ndim) + self.shape
        x = self.reshape(tuple(d for s in base for d in (1, s)))
        x = x.expand(tuple(d for r, s in zip(reps, base) for d in (r, s)))
        return x.reshape(tuple(r * s for r, s in zip(reps, base)))

    def tile(self: Tensor, *dims: int) -> Tensor:
        """torch.tile: repeat, with missing leading repeats taken as 1."""
        reps = _ints(dims)
        return self.repeat((1,) * (self.ndim - len(reps)) + reps)

    def repeat_interleave(
        self: Tensor, repeats: int | Sequence[int] | Tensor, dim: int | None = None, output_size: int | None = None
    ) -> Tensor:
        """Repeat each element `repeats` times along dim (flattened when dim is None). Per-element repeats
        from a tensor make the output length data-dependent: it is read back first (a sync point)."""
        from unigrad.tensor import Tensor

        x = self.flatten() if dim is None else self
        d = 0 if dim is None else _dim("repeat_interleave", dim, self.ndim)
        if isinstance(repeats, int):
            if repeats < 0:
                raise RuntimeError(f"repeat_interleave: repeats can not be negative, got {repeats}")
            if x.ndim == 0:
                x = x.reshape(1)
            y = x.unsqueeze(d + 1)
            y = y.expand(y.shape[: d + 1] + (repeats,) + y.shape[d + 2 :])
            return y.flatten(d, d + 1)
        reps = repeats if isinstance(repeats, Tensor) else Tensor(list(repeats), dtype=dtypes.int64, device=x.device)
        if not reps.dtype.is_int:
            raise RuntimeError(f"repeat_interleave: repeats must be an integer tensor, got {reps.dtype}")
        n = x.shape[d] if x.ndim else 1
        if reps.ndim > 1 or (reps.numel() not in (1, n)):
            raise RuntimeError(
                f"repeat_interleave: repeats must have the same size as input along dim {d} ({n}), got {reps.shape}"
            )
        reps = reps.reshape(-1).cast(dtypes.int64).expand(n)
        total = int(reps.sum().item()) if output_size is None else output_size
        cum = reps.cumsum(0)  # (n,) inclusive
        src = _count_at_most(cum, _arange(total, x.device))  # (total,) source index: the entries ending at or before it
        return x.index_select(d, src)

    # ------------------------------------------------------------ windows and rotations
    def unfold(self: Tensor, dimension: int, size: int, step: int) -> Tensor:
        """torch.Tensor.unfold: windows of `size` every `step` along `dimension`; that dim becomes the window
        count and a new last dim holds each window. Built by tiling the dim `size` times with a row length of
        n+1, so row k starts k elements later (a movement-only composition, like the spec's prefix_sum)."""
        if self.ndim == 0:  # torch: a 0-d tensor unfolds into `size` (0 or 1) copies of itself
            _dim("unfold", dimension, 0)
            if size not in (0, 1) or step <= 0:
                raise RuntimeError(f"unfold: size {size} and step {step} do not fit a 0-d tensor")
            return self.reshape(1).shrink(((0, size),))
        x = self
        d = _dim("unfold", dimension, x.ndim)
        n = x.shape[d]
        if size < 0 or size > n:
            raise RuntimeError(f"unfold: maximum size for tensor at dimension {d} is {n} but size is {size}")
        if step <= 0:
            raise RuntimeError(f"unfold: step is {step} but must be > 0")
        windows = (n - size) // step + 1
        x = x.movedim(d, -1)  # (..., n)
        lead = x.shape[:-1]
        if size == 0:
            out = x.shrink(tuple((0, s) for s in lead) + ((0, 0),)).reshape(*lead, 0, 0)
            out = out.pad(tuple((0, 0) for _ in lead) + ((0, windows), (0, 0)))
        else:
            tiled = x.unsqueeze(-2).expand(*lead, size, n).reshape(*lead, size * n)
            tiled = tiled.pad(tuple((0, 0) for _ in lead) + ((0, size),)).reshape(*lead, size, n + 1)
            shifted = tiled.shrink(tuple((0, s) for s in lead) + ((0, size), (0, n - size + 1)))  # [k, j] = x[j+k]
            out = _every(shifted, (1,) * len(lead) + (1, step))  # (..., size, windows)
            out = out.transpose(-1, -2)
        return out.movedim(-2, d)

    def roll(self: Tensor, shifts: int | Sequence[int], dims: int | Sequence[int] | None = None) -> Tensor:
        """Rotate elements by `shifts` along `dims` (the flattened tensor when dims is None): the dim is
        doubled by expand and a window of it kept."""
        if dims is None:
            if not isinstance(shifts, int) and len(shifts) != 1:
                raise RuntimeError(f"roll: with dims=None shifts must be a single int, got {shifts}")
            s = shifts if isinstance(shifts, int) else shifts[0]
            return self.flatten().roll(s, 0).reshape(self.shape)
        sh = (shifts,) if isinstance(shifts, int) else tuple(shifts)
        ds = (dims,) if isinstance(dims, int) else tuple(dims)
        if len(sh) != len(ds):
            raise RuntimeError(f"roll: shifts {sh} and dims {ds} must have the same length")
        x = self
        for s, dim in zip(sh, ds):
            d = _dim("roll", dim, x.ndim)
            n = x.shape[d]
            k = s % n if n else 0
            if k == 0:
                continue
            twice = x.unsqueeze(d)
            twice = twice.expand(twice.shape[:d] + (2,) + twice.shape[d + 1 :]).flatten(d, d + 1)
            x = twice.shrink(tuple((n - k, 2 * n - k) if i == d else None for i in range(x.ndim)))
        return x

    def rot90(self: Tensor, k: int = 1, dims: Sequence[int] = (0, 1)) -> Tensor:
        """Rotate by 90 degrees k times in the plane of dims (from the first dim towards the second)."""
        if len(dims) != 2:
            raise RuntimeError(f"rot90: expected 2 dims, got {len(dims)}")
        d0, d1 = _dim("rot90", dims[0], self.ndim), _dim("rot90", dims[1], self.ndim)
        if d0 == d1:
            raise RuntimeError(f"rot90: rotation dims must differ, got {tuple(dims)}")
        k %= 4
        if k == 1:
            return self.flip(d1).transpose(d0, d1)
        if k == 2:
            return self.flip(d0, d1)
        if k == 3:
            return self.flip(d0).transpose(d0, d1)
        return self

    def _pad_mode(self: Tensor, padding: Sequence[tuple[int, int]], mode: str) -> Tensor:
        """Pad with mode 'reflect', 'replicate' or 'circular' by non-negative (before, after) amounts per dim:
        each side is a slice of the tensor itself (mirrored without the edge, the edge expanded, or the far
        end) joined by cat, so the result is one fused kernel. The core's pad(mode=...) can dispatch here."""
        x = self
        for d, (before, after) in enumerate(padding):
            if before == 0 and after == 0:
                continue
            n = x.shape[d]

            def part(lo: int, hi: int, x: Tensor = x, d: int = d) -> Tensor:
                return x.shrink(tuple((lo, hi) if i == d else None for i in range(x.ndim)))

            def widen(t: Tensor, size: int, d: int = d) -> Tensor:
                return t.expand(tuple(size if i == d else s for i, s in enumerate(t.shape)))

            if mode == "reflect":
                if before >= n or after >= n:
                    raise RuntimeError(
                        f"pad: reflect padding ({before}, {after}) must be less than the size {n} of dim {d}"
                    )
                left, right = part(1, before + 1).flip(d), part(n - 1 - after, n - 1).flip(d)
            elif mode == "replicate":
                if n == 0:
                    raise RuntimeError(f"pad: replicate padding needs a non-empty dim {d}, got shape {x.shape}")
                left, right = widen(part(0, 1), before), widen(part(n - 1, n), after)
            elif mode == "circular":
                if before > n or after > n:
                    raise RuntimeError(f"pad: circular padding ({before}, {after}) exceeds the size {n} of dim {d}")
                left, right = part(n - before, n), part(0, after)
            else:
                raise NotImplementedError(f"pad: mode {mode!r} (expected constant, reflect, replicate or circular)")
            x = left.cat(x, right, dim=d)
        return x

    def diagonal(self: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
        """The diagonal of dims (dim1, dim2) as a new last dim: shrink to the square below/above the offset,
        flatten it, and read every (m+1)-th element."""
        d1, d2 = _dim("diagonal", dim1, self.ndim), _dim("diagonal", dim2, self.ndim)
        if d1 == d2:
            raise RuntimeError(f"diagonal: dimensions cannot be identical {dim1}, {dim2}")
        rest = tuple(i for i in range(self.ndim) if i not in (d1, d2))
        x = self.permute(rest + (d1, d2))  # (..., a, b)
        lead = x.shape[:-2]
        a, b = x.shape[-2:]
        r0, c0 = max(-offset, 0), max(offset, 0)
        m = max(0, min(a - r0, b - c0))
        keep = tuple((0, s) for s in lead)
        x = x.shrink(keep + ((min(r0, a), min(r0, a) + m), (min(c0, b), min(c0, b) + m)))
        x = x.reshape(*lead, m * m).pad(tuple((0, 0) for _ in lead) + ((0, m),)).reshape(*lead, m, m + 1)
        return x.shrink(keep + ((0, m), (0, 1))).reshape(*lead, m)

    def diag(self: Tensor, diagonal: int = 0) -> Tensor:
        """1-D -> the square matrix with it on the `diagonal`-th diagonal; 2-D -> that diagonal. A vector
        becomes a matrix by padding each element with n zeros and reading the result as (n, n)."""
        if self.ndim == 2:
            return self.diagonal(diagonal)
        if self.ndim != 1:
            raise RuntimeError(f"diag: supports 1D or 2D tensors, got a {self.ndim}D tensor of shape {self.shape}")
        n = self.shape[0]
        x = self.reshape(n, 1).pad(((0, 0), (0, n))).reshape(n * (n + 1)).shrink(((0, n * n),)).reshape(n, n)
        k = abs(diagonal)
        return x.pad(((0, k), (k, 0)) if diagonal >= 0 else ((k, 0), (0, k)))

    def diag_embed(self: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
        """Matrices with the last dim on their `offset`-th diagonal, in dims (dim1, dim2) of a result one dim
        larger (torch.diag_embed): each vector times an identity mask, padded for the offset."""
        if self.ndim == 0:
            raise RuntimeError("diag_embed: expected a tensor with at least 1 dimension, got a 0-d tensor")
        d1, d2 = _dim("diag_embed", dim1, self.ndim + 1), _dim("diag_embed", dim2, self.ndim + 1)
        if d1 == d2:
            raise RuntimeError(f"diag_embed: diagonal dimensions cannot be identical {dim1}, {dim2}")
        n, k = self.shape[-1], abs(offset)
        eye = _arange(n, self.device).reshape(n, 1) == _arange(n, self.device).reshape(1, n)
        x = eye.where(self.unsqueeze(-1), _zero(self))  # (..., n, n)
        lead = ((0, 0),) * (self.ndim - 1)
        x = x.pad(lead + (((0, k), (k, 0)) if offset >= 0 else ((k, 0), (0, k))))
        return x.movedim((-2, -1), (d1, d2))

    def diagflat(self: Tensor, offset: int = 0) -> Tensor:
        """The flattened input on the `offset`-th diagonal of a square matrix (torch.diagflat)."""
        return self.flatten().diag(offset)

    def _diagonal_plane(self: Tensor, op: str, offset: int, dim1: int, dim2: int) -> tuple[Tensor, tuple[int, ...]]:
        """(self with dims dim1, dim2 moved last, the permutation that did it) for the *_scatter of a diagonal."""
        d1, d2 = _dim(op, dim1, self.ndim), _dim(op, dim2, self.ndim)
        if d1 == d2:
            raise RuntimeError(f"{op}: dimensions cannot be identical {dim1}, {dim2}")
        order = tuple(i for i in range(self.ndim) if i not in (d1, d2)) + (d1, d2)
        return self.permute(order), order

    def diagonal_scatter(self: Tensor, src: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
        """self with its diagonal (as diagonal(offset, dim1, dim2) reads it) replaced by src (torch.diagonal_scatter)."""
        want = self.diagonal(offset, dim1, dim2).shape
        if src.shape != want:
            raise RuntimeError(f"diagonal_scatter: src must have shape {want} (the diagonal's), got {src.shape}")
        x, order = self._diagonal_plane("diagonal_scatter", offset, dim1, dim2)
        a, b = x.shape[-2:]
        m = want[-1]
        r0, c0 = min(max(-offset, 0), a), min(max(offset, 0), b)
        lead = ((0, 0),) * (x.ndim - 2)
        place = lead + ((r0, a - r0 - m), (c0, b - c0 - m))
        values = src.cast(self.dtype).diag_embed().pad(place)
        eye = _arange(m, self.device).reshape(m, 1) == _arange(m, self.device).reshape(1, m)
        out = eye.pad(((r0, a - r0 - m), (c0, b - c0 - m))).where(values, x)
        return out.permute(tuple(order.index(i) for i in range(self.ndim)))

    def select_scatter(self: Tensor, src: Tensor, dim: int, index: int) -> Tensor:
        """self with the slice select(dim, index) replaced by src (torch.select_scatter)."""
        d = _dim("select_scatter", dim, self.ndim)
        want = self.select(d, index).shape
        if src.shape != want:
            raise RuntimeError(f"select_scatter: src must have shape {want} (the selected slice's), got {src.shape}")
        i = index + self.shape[d] if index < 0 else index
        return self.slice_scatter(src.unsqueeze(d), d, i, i + 1)

    def slice_scatter(
        self: Tensor, src: Tensor, dim: int = 0, start: int | None = None, end: int | None = None, step: int = 1
    ) -> Tensor:
        """self with the slice [start:end:step] along dim replaced by src (torch.slice_scatter): src spread to
        every step-th position (padding each element with step-1 zeros), then placed by a mask."""
        d = _dim("slice_scatter", dim, self.ndim)
        if step <= 0:
            raise RuntimeError(f"slice_scatter: slice step must be positive, got {step}")
        lo, hi, _ = slice(start, end, step).indices(self.shape[d])
        hi = max(hi, lo)
        k = len(range(lo, hi, step))
        want = self.shape[:d] + (k,) + self.shape[d + 1 :]
        if src.shape != want:
            raise RuntimeError(f"slice_scatter: src must have shape {want} (the slice's), got {src.shape}")
        from unigrad.tensor import Tensor

        n = self.shape[d]
        ones = Tensor.ones(src.shape, dtype=dtypes.bool, device=src.device)
        spread = []
        after = ((0, 0),) * (self.ndim - d - 1)
        for t in (src.cast(self.dtype), ones):
            if step > 1:
                t = t.unsqueeze(d + 1).pad(((0, 0),) * (d + 1) + ((0, step - 1),) + after).flatten(d, d + 1)
            t = t.narrow(d, 0, min(t.shape[d], n - lo))
            spread.append(t.pad(((0, 0),) * d + ((lo, n - lo - t.shape[d]),) + after))
        return spread[1].where(spread[0], self)

    def triu(self: Tensor, diagonal: int = 0) -> Tensor:
        """Zero the elements below the `diagonal`-th diagonal of the last two dims."""
        return self._tri_keep("triu", diagonal, upper=True)

    def tril(self: Tensor, diagonal: int = 0) -> Tensor:
        """Zero the elements above the `diagonal`-th diagonal of the last two dims."""
        return self._tri_keep("tril", diagonal, upper=False)

    def _tri_keep(self: Tensor, op: str, diagonal: int, upper: bool) -> Tensor:
        if self.ndim < 2:
            raise RuntimeError(f"{op}: input tensor must have at least 2 dimensions, got {self.shape}")
        r, c = self.shape[-2:]
        off = _arange(c, self.device).reshape(1, c) - _arange(r, self.device).reshape(r, 1)  # col - row
        keep = off >= diagonal if upper else off <= diagonal
        return keep.where(self, _zero(self))

    # ------------------------------------------------------------ axis moves
    def movedim(self: Tensor, source: int | Sequence[int], destination: int | Sequence[int]) -> Tensor:
        src = (source,) if isinstance(source, int) else tuple(source)
        dst = (destination,) if isinstance(destination, int) else tuple(destination)
        if len(src) != len(dst):
            raise RuntimeError(f"movedim: source {src} and destination {dst} must have the same number of dims")
        s = [_dim("movedim", a, self.ndim) for a in src]
        t = [_dim("movedim", a, self.ndim) for a in dst]
        if len(set(s)) != len(s) or len(set(t)) != len(t):
            raise RuntimeError(f"movedim: repeated dim in source {src} or destination {dst}")
        order: list[int | None] = [None] * self.ndim
        for a, b in zip(s, t):
            order[b] = a
        others = iter(i for i in range(self.ndim) if i not in s)
        return self.permute(tuple(o if o is not None else next(others) for o in order))

    moveaxis = movedim

    def swapaxes(self: Tensor, axis0: int, axis1: int) -> Tensor:
        return self.transpose(axis0, axis1)

    swapdims = swapaxes

    def expand_as(self: Tensor, other: Tensor) -> Tensor:
        return self.expand(other.shape)

    def reshape_as(self: Tensor, other: Tensor) -> Tensor:
        return self.reshape(other.shape)

    view_as = reshape_as

    def narrow(self: Tensor, dim: int, start: int, length: int) -> Tensor:
        d = _dim("narrow", dim, self.ndim)
        n = self.shape[d]
        s = start + n if start < 0 else start
        if not 0 <= s <= n or length < 0 or s + length > n:
            raise IndexError(f"narrow: start {start} + length {length} exceeds dim {d} of size {n}")
        return self.shrink(tuple((s, s + length) if i == d else None for i in range(self.ndim)))

    def shrink_to(self: Tensor, *shape: int | None) -> Tensor:
        """Keep the first shape[i] elements of each dim (None keeps the dim), as the spec's compositions use."""
        shp = _ints(shape)
        if len(shp) != self.ndim:
            raise RuntimeError(f"shrink_to: shape {shp} needs one size per dim of {self.shape}")
        return self.shrink(tuple(None if s is None else (0, s) for s in shp))

    def pad_to(self: Tensor, *shape: int | None, value: ConstType = 0.0) -> Tensor:
        """Pad each dim at its end up to shape[i] with `value` (zeros by default; None keeps the dim)."""
        shp = _ints(shape)
        if len(shp) != self.ndim:
            raise RuntimeError(f"pad_to: shape {shp} needs one size per dim of {self.shape}")
        return self.pad(tuple((0, 0 if s is None else s - n) for s, n in zip(shp, self.shape)), value=value)

    def meshgrid(self: Tensor, *args: Tensor, indexing: str = "ij") -> tuple[Tensor, ...]:
        """Coordinate grids of 1-D tensors: `Tensor.meshgrid(x, y)` or `x.meshgrid(y)`; 'xy' swaps the first
        two output dims (Cartesian indexing)."""
        tensors = _tensor_list(self, args)
        if indexing not in ("ij", "xy"):
            raise RuntimeError(f"meshgrid: indexing must be one of 'xy' or 'ij', got {indexing!r}")
        if any(t.ndim > 1 for t in tensors):
            raise RuntimeError(f"meshgrid: expects 0D or 1D tensors, got shapes {[t.shape for t in tensors]}")
        vecs = [t.reshape(-1) for t in tensors]
        shape = tuple(v.shape[0] for v in vecs)
        k = len(vecs)
        grids = [v.reshape(tuple(-1 if i == j else 1 for i in range(k))).expand(shape) for j, v in enumerate(vecs)]
        if indexing == "xy" and k >= 2:
            grids = [g.transpose(0, 1) for g in grids]
        return tuple(grids)

    # ------------------------------------------------------------ indexing
    def __getitem__(self: Tensor, index: Any) -> Tensor:
        """numpy/torch indexing. Ints (negative too), slices (negative steps too) and None/Ellipsis are
        movement ops. Int/bool tensors and lists are advanced indices: they broadcast together, and each
        result element is a one-hot selection summed over the indexed dims (O(result * prod(indexed dims)));
        a bool mask is first turned into coordinates by nonzero() (a sync point). List/int index values are
        checked here (IndexError), tensor index values at the next realize (the same IndexError)."""
        if (fast := _ints_and_slices(self, index)) is not None:
            return fast
        plan = _index_plan(self, index)
        x = _basic_index(self, plan)
        return _advanced_get(x, plan) if plan.adv else x

    def __setitem__(self: Tensor, index: Any, value: Tensor | ConstType) -> None:
        """self[index] = value. On a view of a filled buffer (a realized tensor, a slice or transpose of one) the
        buffer is written in place, so the tensor it views and its other views see the write (`t.T[0] = 5`
        changes t, as in torch and tinygrad). Otherwise (a lazy tensor, or a value that requires grad) the
        assignment is functional: this Tensor's graph becomes where(indexed region, value, old). `value` is cast
        to this tensor's dtype and broadcast to self[index]'s shape."""
        if self.requires_grad and self.is_leaf:
            raise RuntimeError("__setitem__: a leaf Variable that requires grad is being used in an in-place operation")
        if (new := _masked_fill(self, index, value)) is None:
            new = self._set_indexed(index, value)
            if new is None:  # nothing is written
                return
        if not new.requires_grad and _writes_in_place(self):  # views of the buffer see it (torch, tinygrad)
            self.assign(new)
            return
        self.uop = new.uop
        if new.requires_grad:  # a value that requires grad makes self a non-leaf that does
            self._requires_grad = True

    def _set_indexed(self: Tensor, index: Any, value: Tensor | ConstType) -> Tensor | None:
        """The tensor self[index] = value makes (None when the indexed region is empty)."""
        from unigrad.tensor import Tensor

        plan = _index_plan(self, index)
        x = _basic_index(self, plan)
        target = _advanced_get(x, plan).shape if plan.adv else x.shape
        v = value if isinstance(value, Tensor) else Tensor(value, dtype=self.dtype, device=self.device)
        vshape = v.shape
        while len(vshape) > len(target) and vshape[0] == 1:  # torch allows extra leading 1s
            vshape = vshape[1:]
        if len(vshape) > len(target) or any(a not in (1, b) for a, b in zip(vshape[::-1], target[::-1])):
            raise RuntimeError(
                f"__setitem__: shape mismatch: value tensor of shape {v.shape} cannot be broadcast to indexing "
                f"result of shape {target}"
            )
        v = v.reshape(vshape)
        if any(isinstance(d, int) and d == 0 for d in target):  # nothing is written
            return None
        v = v.cast(self.dtype).expand(target)
        region = _advanced_set(x, plan, v) if plan.adv else v
        full = _basic_unindex(region, plan, self.shape)
        ones = Tensor.ones(plan.basic_shape, dtype=dtypes.bool, device=self.device)
        mask = _basic_unindex(ones, plan, self.shape)
        return mask.where(full, self)

    def __iter__(self: Tensor) -> Any:
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self.shape[0]))

    def index_select(self: Tensor, dim: int, index: Tensor) -> Tensor:
        """self indexed by the 1-D int tensor `index` along dim."""
        d = _dim("index_select", dim, self.ndim)
        if index.ndim > 1 or not index.dtype.is_int:
            raise IndexError(f"index_select: index must be a 1-D int tensor, got {index.shape} {index.dtype}")
        if self.ndim == 0:
            return self.reshape(1)[index.reshape(-1)].reshape(index.shape)
        _check_index_range("index_select", index, self.shape[d], d)
        return self.movedim(d, 0).take_rows(index.reshape(-1)).movedim(0, d)  # an indirect load: O(output)

    def index_add(self: Tensor, dim: int, index: Tensor, source: Tensor, alpha: ConstType = 1) -> Tensor:
        """self with alpha * source[i] added at position index[i] along dim (torch.Tensor.index_add): a repeated
        index adds every slice sent to it. A scatter-add from a sort of the index (O(P log^2 P + P * slice)); an index
        outside [0, n) raises torch's IndexError at the next realize."""
        d = _dim("index_add", dim, max(self.ndim, 1))
        if index.ndim > 1 or not index.dtype.is_int:
            raise IndexError(f"index_add: index must be a 1-D int tensor, got {index.shape} {index.dtype}")
        x, src = (self.reshape(1), source.reshape(-1)) if self.ndim == 0 else (self, source)
        want = x.shape[:d] + (index.numel(),) + x.shape[d + 1 :]
        if src.shape != want:
            raise RuntimeError(f"index_add: source of shape {source.shape} does not fit: expected {want}")
        if src.dtype != x.dtype:
            raise RuntimeError(f"index_add: self ({x.dtype}) and source ({src.dtype}) must have the same dtype")
        n = x.shape[d]
        if index.numel() == 0:
            return self.contiguous()  # nothing added: a copy, as torch returns
        _check_index_range("index_add", index, n, d, negative=False)
        idx = index.reshape(-1).cast(dtypes.int64)
        rows = src.movedim(d, 0).reshape(index.numel(), -1)
        rest = x.movedim(d, 0).shape[1:]
        added = _scatter_add_rows(n, idx, rows * alpha if alpha != 1 else rows).reshape(n, *rest)
        return (x.movedim(d, 0) + added).movedim(0, d).reshape(self.shape)

    def bincount(self: Tensor, weights: Tensor | None = None, minlength: int = 0) -> Tensor:
        """Counts of each value of a 1-D tensor of non-negative ints (torch.bincount): length max + 1 (read back:
        a sync point) or minlength; with weights, their sums (float weights keep their dtype, int ones give
        float64, as torch). A scatter-add from a sort of the values."""
        from unigrad.tensor import Tensor

        if self.ndim != 1 or not self.dtype.is_int or self.dtype is dtypes.bool:
            raise RuntimeError(
                f"bincount only supports 1-d non-negative integral inputs, got {self.shape} {self.dtype}"
            )
        if weights is not None and weights.shape != self.shape:
            raise RuntimeError(f"bincount: weights of shape {weights.shape} must match the input's {self.shape}")
        dt = dtypes.int64 if weights is None else weights.dtype if weights.dtype.is_float else dtypes.float64
        if self.numel() == 0:
            return Tensor.zeros(minlength, dtype=dt, device=self.device)
        lo, hi = int(self.min().item()), int(self.max().item())
        if lo < 0:
            raise RuntimeError(f"bincount only supports 1-d non-negative integral inputs, got a value {lo}")
        rows = Tensor.ones(self.shape, dtype=dt, device=self.device) if weights is None else weights.cast(dt)
        n = max(hi + 1, minlength)
        return _scatter_add_rows(n, self.cast(dtypes.int64), rows.reshape(-1, 1)).reshape(n)

    # ------------------------------------------------------------ gather / scatter
    def gather(self: Tensor, dim: int, index: Tensor) -> Tensor:
        """out[..i..] = self[..index[..i..]..] along dim (torch.gather): the spec's gather composition, a
        one-hot mask over the n positions of dim summed away: O(index.numel() * n); an indirect load when self
        needs no gradient. An index out of [0, n) raises torch's RuntimeError at the next realize."""
        return _gather(self, dim, index, check=True)

    def _scatter_match(self: Tensor, op: str, dim: int, index: Tensor) -> tuple[int, Tensor, Tensor]:
        """(d, region, match): region is self cut to index's extent off dim, moved to [..., n]; match is
        [..., n, m]: True where index (moved to [..., m]) sends source m to target position n."""
        d = _scatter_dim(self, op, dim, index)
        region = self.shrink(tuple(None if i == d else (0, s) for i, s in enumerate(index.shape))).movedim(d, -1)
        n = self.shape[d]
        idx = index.movedim(d, -1)
        match = idx.unsqueeze(-2) == _arange(n, self.device).reshape(n, 1)
        return d, region, match

    def _scatter_finish(self: Tensor, d: int, index: Tensor, new_region: Tensor) -> Tensor:
        """Put a [..., n] region (index's extent off dim) back into self."""
        from unigrad.tensor import Tensor

        new_region = new_region.movedim(-1, d)
        pads = tuple((0, 0) if i == d else (0, s - r) for i, (s, r) in enumerate(zip(self.shape, new_region.shape)))
        if all(p == (0, 0) for p in pads):
            return new_region
        mask = Tensor.ones(new_region.shape, dtype=dtypes.bool, device=self.device).pad(pads)
        return mask.where(new_region.pad(pads), self)

    def _scatter_src(self: Tensor, op: str, index: Tensor, src: Tensor | ConstType) -> Tensor:
        from unigrad.tensor import Tensor

        if not isinstance(src, Tensor) or src.ndim == 0:  # a scalar value, sent to every index
            v = src.cast(self.dtype) if isinstance(src, Tensor) else Tensor(src, dtype=self.dtype, device=self.device)
            return v.reshape((1,) * index.ndim).expand(index.shape)
        if src.dtype != self.dtype:
            raise RuntimeError(f"{op}: expected self.dtype to be equal to src.dtype, got {self.dtype} and {src.dtype}")
        if src.ndim != index.ndim or any(a > b for a, b in zip(index.shape, src.shape)):
            raise RuntimeError(f"{op}: index {index.shape} does not fit src {src.shape}")
        return src.shrink(tuple((0, s) for s in index.shape))

    def scatter(self: Tensor, dim: int, index: Tensor, src: Tensor | ConstType, reduce: str | None = None) -> Tensor:
        """Out-of-place torch.scatter: self with src[..i..] written at [..index[..i..]..] along dim. Where
        several sources hit one position, the last one (in index order) wins. reduce='add'/'multiply' is
        scatter_reduce's sum/prod with include_self. O(index.numel() * n) per the one-hot composition."""
        if reduce is not None:
            modes = {"add": "sum", "multiply": "prod"}
            if reduce not in modes:
                raise RuntimeError(f"scatter: reduce argument must be either 'add' or 'multiply', got {reduce!r}")
            return self.scatter_reduce(dim, index, src, modes[reduce])
        x = self.reshape(1) if self.ndim == 0 else self
        idx = index.reshape(1) if index.ndim == 0 else index
        d, region, match = x._scatter_match("scatter", dim, idx)
        srcs = x._scatter_src("scatter", idx, src).movedim(d, -1)
        m = idx.shape[d]
        if idx.numel() == 0:
            return self
        pos = _arange(m, x.device)
        last = match.where(pos, -1).max(-1)  # [..., n]: the winning source along m, -1 for none
        picked = _select_sum((last.unsqueeze(-1) == pos).where(srcs.unsqueeze(-2), _zero(x)), -1)
        out = x._scatter_finish(d, idx, (last >= 0).where(picked, region))
        return out.reshape(self.shape)

    def scatter_reduce(
        self: Tensor, dim: int, index: Tensor, src: Tensor | ConstType, reduce: str, include_self: bool = True
    ) -> Tensor:
        """torch.scatter_reduce: reduce ('sum', 'prod', 'mean', 'amax', 'amin') the sources sent to each
        position, with self's value when include_self. Integer 'mean' rounds down, as torch."""
        if reduce not in ("sum", "prod", "mean", "amax", "amin"):
            raise RuntimeError(f"scatter_reduce: reduce must be one of sum, prod, mean, amax, amin, got {reduce!r}")
        x = self.reshape(1) if self.ndim == 0 else self
        idx = index.reshape(1) if index.ndim == 0 else index
        d, region, match = x._scatter_match("scatter_reduce", dim, idx)
        srcs = x._scatter_src("scatter_reduce", idx, src)
        if idx.numel() == 0:
            return self
        srcs = srcs.movedim(d, -1).unsqueeze(-2)  # [..., 1, m]
        count = match.sum(-1)  # [..., n]
        hit = count > 0
        dt = x.dtype
        if reduce in ("sum", "mean"):
            total = match.where(srcs, _zero(x)).sum(-1, dtype=dt)
            if include_self:
                total = total + region
            if reduce == "sum":
                new = total if include_self else hit.where(total, region)
            else:
                k = count + 1 if include_self else count.maximum(1)
                mean = total._floordiv_nonzero(k.cast(dt)) if dt.is_int else total / k.cast(dt)
                new = hit.where(mean.cast(dt), region)
        elif reduce == "prod":
            prod = match.where(srcs, _const(x, 1)).prod(-1, dtype=dt)
            new = region * prod if include_self else hit.where(prod, region)
        elif reduce == "amax":
            picked = match.where(srcs, _const(x, _extreme(dt, highest=False))).max(-1)
            new = hit.where(region.maximum(picked) if include_self else picked, region)
        else:
            picked = match.where(srcs, _const(x, _extreme(dt, highest=True))).min(-1)
            new = hit.where(region.minimum(picked) if include_self else picked, region)
        return x._scatter_finish(d, idx, new.cast(dt)).reshape(self.shape)

    # ------------------------------------------------------------ masks
    def masked_fill(self: Tensor, mask: Tensor, value: Tensor | ConstType) -> Tensor:
        """where(mask, value, self) in self's dtype; mask must be bool; value a scalar or 0-d tensor."""
        from unigrad.tensor import Tensor

        if mask.dtype is not dtypes.bool:
            raise RuntimeError(f"masked_fill: only supports boolean masks, but got mask with dtype {mask.dtype}")
        if isinstance(value, Tensor):
            if value.ndim != 0:
                raise RuntimeError(
                    f"masked_fill: only supports a 0-dimensional value tensor, but got tensor with {value.ndim} dims"
                )
            v = value.cast(self.dtype)
        else:
            v = Tensor(value, dtype=self.dtype, device=self.device)
        return mask.where(v, self)

    def argwhere(self: Tensor) -> Tensor:
        """The (N, ndim) coordinates of the nonzero elements (torch.argwhere: nonzero())."""
        return self.nonzero()  # type: ignore[return-value]

    def nonzero(
        self: Tensor, as_tuple: bool = False, *, size: int | None = None, fill_value: int = 0
    ) -> Tensor | tuple[Tensor, ...]:
        """Coordinates (count, ndim) in dtypes.default_int of the nonzero elements in row-major order. The count is read back
        first (`.item()`: a sync point); each output row then finds its element by a binary search in the running
        count of the mask (a scan, O(n), then O(count * log n)). With tinygrad's size=, no read back: the first
        `size` coordinates, the rows past the count filled with fill_value."""
        flat = self.reshape(-1) != 0 if self.dtype is not dtypes.bool else self.reshape(-1)
        if size is not None:  # static size (tinygrad's): no count read back; rows past the count are fill_value
            pos, valid = _first_positions(flat, size)
            pos = pos.cast(dtypes.default_int)
        else:
            pos = _nonzero_positions(flat).cast(dtypes.default_int)
        coords = []
        stride = 1
        for s in reversed(self.shape):
            coords.append((pos // stride) % s if stride and s else pos * 0)  # no division by a 0-size dim
            stride *= s
        coords.reverse()
        if size is not None:
            coords = [valid.where(c, fill_value).cast(c.dtype) for c in coords]
            pos = valid.where(pos, fill_value).cast(pos.dtype)
        if as_tuple:
            return tuple(coords) if coords else (pos,)
        if not coords:
            return pos.reshape(pos.shape[0], 0)
        return coords[0].stack(*coords[1:], dim=1)

    def masked_select(self: Tensor, mask: Tensor, *, size: int | None = None, fill_value: ConstType = 0) -> Tensor:
        """The elements of self (broadcast with mask) where mask is True, as 1-D. The count is read back first
        (a sync point); with tinygrad's size=, no read back: the first `size` of them, padded with fill_value."""
        from unigrad.tensor import Tensor, _broadcast_shape

        if mask.dtype is not dtypes.bool:
            raise RuntimeError(f"masked_select: expected a boolean mask, got {mask.dtype}")
        shape = _broadcast_shape("masked_select", self.shape, mask.shape)
        values = self.expand(shape).reshape(-1)
        if size is None:
            return values.take_rows(_nonzero_positions(mask.expand(shape).reshape(-1)))
        pos, valid = _first_positions(mask.expand(shape).reshape(-1), size)
        if values.shape[0] == 0:  # nothing to select: all fill
            return Tensor.full((size,), fill_value, dtype=self.dtype, device=self.device)
        return valid.where(values.take_rows(valid.where(pos, 0)), fill_value).cast(self.dtype)

    # ------------------------------------------------------------ sorting
    def sort(self: Tensor, dim: int = -1, descending: bool = False, stable: bool = True) -> tuple[Tensor, Tensor]:
        """(values, indices in dtypes.default_int) (a named pair, as torch's), always stable (equal elements keep
        their order); NaN sorts as the largest value, as torch. Over more than SORT_NETWORK_MIN elements a bitonic
        sorting network orders (key, position) pairs, O(n log^2 n), its kernels run at the call; shorter rows rank
        each element by the elements sorting before it (O(n^2) comparisons), then select by rank."""
        x = self.reshape(1) if self.ndim == 0 else self
        d = _dim("sort", dim, x.ndim)
        values, indices = _first_k(x, d, x.shape[d], descending)
        if self.ndim == 0:
            return ValuesIndices(values.reshape(()), indices.reshape(()))
        return ValuesIndices(values, indices)

    def argsort(self: Tensor, dim: int = -1, descending: bool = False, stable: bool = True) -> Tensor:
        return self.sort(dim, descending)[1]

    def topk(
        self: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True, *, sorted_: bool | None = None
    ) -> tuple[Tensor, Tensor]:
        """The k largest (smallest) elements along dim and their indices (dtypes.default_int), as the first k of a
        stable sort: ties in index order, NaN above everything, always in sorted order (which torch allows for
        sorted=False too; `sorted_` is tinygrad's spelling). Torch leaves the order of ties unspecified (its CPU
        kernel's partial sort gives no fixed rule); this one is the stable sort's. See _first_k for the cost."""
        x = self.reshape(1) if self.ndim == 0 else self
        d = _dim("topk", dim, x.ndim)
        n = x.shape[d]
        if not 0 <= k <= n:
            raise RuntimeError(f"topk: selected index k={k} out of range for dim {d} of size {n}")
        values, indices = _first_k(x, d, k, largest)
        if self.ndim == 0:
            return ValuesIndices(values.reshape(()), indices.reshape(()))
        return ValuesIndices(values, indices)

    def unique(
        self: Tensor,
        sorted: bool = True,
        return_inverse: bool = False,
        return_counts: bool = False,
        dim: int | None = None,
    ) -> Tensor | tuple[Tensor, ...]:
        """The distinct values of the flattened tensor in ascending order (optionally the index of each input
        element in them, and their counts); the count is read back first (a sync point). NaNs compare unequal to
        everything, so each NaN is its own value. Over more than SORT_NETWORK_MIN elements from a sort (O(n log^2
        n)), else O(n^2) comparisons. Only dim=None is supported."""
        if dim is not None:
            raise NotImplementedError("unique: only dim=None (the flattened tensor) is supported")
        flat = self.reshape(-1)
        n = flat.shape[0]
        if isinstance(n, int) and n > SORT_NETWORK_MIN:
            out = _unique_sorted(flat, return_inverse, return_counts)
            if return_inverse:
                out[1] = out[1].reshape(self.shape)
            return out[0] if len(out) == 1 else tuple(out)
        a, b = flat.reshape(n, 1), flat.reshape(1, n)  # a: element i, b: element j
        earlier = _arange(n, self.device).reshape(1, n) < _arange(n, self.device).reshape(n, 1)  # [i, j]: j < i
        first = (a.eq(b) & earlier).sum(1) == 0  # no equal element before i
        distinct = int(first.sum().item())
        smaller = (first.reshape(1, n) & (b < a)).sum(1)  # [i]: distinct values below element i
        uniq_rank = first.where(smaller, -1)
        sel = uniq_rank.reshape(1, n) == _arange(distinct, self.device).reshape(distinct, 1)
        values = _select_sum(sel.where(flat.reshape(1, n), _zero(flat)), 1)
        out: list[Tensor] = [values]
        if return_inverse:
            out.append(smaller.reshape(self.shape))
        if return_counts:
            out.append((smaller.reshape(1, n) == _arange(distinct, self.device).reshape(distinct, 1)).sum(1))
        return out[0] if len(out) == 1 else tuple(out)

    # ------------------------------------------------------------ torch names: views and splits
    def t(self: Tensor) -> Tensor:
        """Transpose of a 2-D tensor; 0-D and 1-D tensors come back as they are; more dims raise, as torch.t."""
        if self.ndim > 2:
            raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {self.ndim}D ({self.shape})")
        return self.transpose(0, 1) if self.ndim == 2 else self

    def dim(self: Tensor) -> int:
        """The number of dims (ndim), as torch.Tensor.dim()."""
        return self.ndim

    def broadcast_to(self: Tensor, *shape: Any) -> Tensor:
        """torch.broadcast_to: expand (-1 keeps a dim)."""
        return self.expand(*shape)

    def type_as(self: Tensor, other: Tensor) -> Tensor:
        """self cast to other's dtype."""
        return self.cast(other.dtype)

    # ------------------------------------------------------------ torch names: small views and metadata
    def select(self: Tensor, dim: int, index: int) -> Tensor:
        """torch.select: the slice at `index` along dim, that dim removed (negative counts from the end)."""
        d = _dim("select", dim, self.ndim)
        n = self.shape[d]
        if not -n <= index < n:
            raise IndexError(f"select: index {index} out of range for dim {d} of size {n}")
        i = index + n if index < 0 else index
        return self.shrink(tuple((i, i + 1) if k == d else None for k in range(self.ndim))).squeeze(d)

    def narrow_copy(self: Tensor, dim: int, start: int, length: int) -> Tensor:
        """torch.narrow_copy: narrow, as a new tensor."""
        return self.narrow(dim, start, length).contiguous()

    def fliplr(self: Tensor) -> Tensor:
        """torch.fliplr: flip dim 1 (needs 2 or more dims)."""
        if self.ndim < 2:
            raise RuntimeError(f"fliplr: input must be >= 2-d, got shape {self.shape}")
        return self.flip(1)

    def flipud(self: Tensor) -> Tensor:
        """torch.flipud: flip dim 0 (needs 1 or more dims)."""
        if self.ndim < 1:
            raise RuntimeError("flipud: input must be >= 1-d, got a 0-d tensor")
        return self.flip(0)

    def split_with_sizes(self: Tensor, split_sizes: Sequence[int], dim: int = 0) -> tuple[Tensor, ...]:
        """torch.split_with_sizes: split into pieces of these sizes (summing to the dim's size)."""
        d = _dim("split_with_sizes", dim, self.ndim)
        if sum(split_sizes) != self.shape[d] or any(s < 0 for s in split_sizes):
            raise RuntimeError(
                f"split_with_sizes: expects split_sizes {list(split_sizes)} to be non-negative and sum exactly to "
                f"{self.shape[d]} (input tensor's size at dimension {d})"
            )
        return self.split(list(split_sizes), d)

    def sum_to_size(self: Tensor, *size: Any) -> Tensor:
        """torch.sum_to_size: summed over the dims that `size` broadcasts to self's shape (kept as size 1)."""
        shape = _ints(size[0] if len(size) == 1 and isinstance(size[0], (tuple, list)) else size)
        lead = self.ndim - len(shape)
        if lead < 0 or any(s not in (1, n) for s, n in zip(shape, self.shape[lead:])):
            raise RuntimeError(f"sum_to_size: size {shape} is not expandable to size {self.shape}")
        axes = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(shape) if s == 1 and self.shape[lead + i] != 1)
        out = self.sum(axes, keepdim=True) if axes else self
        return out.reshape(shape)

    @property
    def mT(self: Tensor) -> Tensor:
        """The last two dims swapped (a batch of matrices transposed)."""
        if self.ndim < 2:
            raise RuntimeError(f"mT: tensor.mT is only supported on matrices or batches of matrices, got {self.ndim}-D")
        return self.transpose(-2, -1)

    @property
    def mH(self: Tensor) -> Tensor:
        """mT (real tensors: the conjugate is the tensor itself)."""
        return self.mT

    @property
    def H(self: Tensor) -> Tensor:
        """The transpose of a matrix (2-D; real tensors: no conjugation)."""
        if self.ndim != 2:
            raise RuntimeError(f"H: tensor.H is only supported on matrices (2-D tensors), got {self.ndim}-D")
        return self.transpose(0, 1)

    def adjoint(self: Tensor) -> Tensor:
        """torch.adjoint: mH."""
        return self.mH

    def conj(self: Tensor) -> Tensor:
        """The complex conjugate: a real tensor itself (unigrad has no complex dtypes)."""
        return self

    def conj_physical(self: Tensor) -> Tensor:
        """conj (a real tensor itself)."""
        return self

    def resolve_conj(self: Tensor) -> Tensor:
        """A real tensor carries no lazy conjugation: itself."""
        return self

    def resolve_neg(self: Tensor) -> Tensor:
        """unigrad carries no lazy negation bit: itself."""
        return self

    def is_conj(self: Tensor) -> bool:
        return False

    def is_neg(self: Tensor) -> bool:
        return False

    def is_complex(self: Tensor) -> bool:
        return False

    def is_signed(self: Tensor) -> bool:
        """Whether the dtype holds negative values (floats and signed ints)."""
        return self.dtype.is_float or (
            self.dtype.is_int and not self.dtype.is_unsigned and self.dtype is not dtypes.bool
        )

    def is_same_size(self: Tensor, other: Tensor) -> bool:
        return self.shape == other.shape

    def is_nonzero(self: Tensor) -> bool:
        """The truth of a one-element tensor (torch.is_nonzero); more or fewer elements raise."""
        if self.numel() != 1:
            raise RuntimeError(f"is_nonzero: boolean value of Tensor with {self.numel()} elements is ambiguous")
        return bool(self.item())

    def ndimension(self: Tensor) -> int:
        """The number of dims (torch's old name of dim())."""
        return self.ndim

    def nelement(self: Tensor) -> int:
        """The number of elements (numel)."""
        return self.numel()

    @property
    def itemsize(self: Tensor) -> int:
        """Bytes per element."""
        return self.dtype.itemsize

    def cpu(self: Tensor) -> Tensor:
        """This tensor on the CPU device (itself when it is there)."""
        return self.to("CPU")

    def stride(self: Tensor, dim: int | None = None) -> tuple[int, ...] | int:
        """The strides (in elements) torch gives the same ops: a view keeps its buffer's, a result is row-major
        (unigrad/api/strides.py)."""
        strides = layout(self)[0]
        return strides if dim is None else strides[_dim("stride", dim, self.ndim)]

    def storage_offset(self: Tensor) -> int:
        """Where the view starts in its buffer, in elements (0 for a computed result)."""
        return layout(self)[1]

    def is_contiguous(self: Tensor, memory_format: Any = None) -> bool:
        """True when the strides are row-major (as torch.is_contiguous)."""
        return row_major(self)

    @property
    def is_cpu(self: Tensor) -> bool:
        return isinstance(self.device, str) and self.device.split(":")[0] == "CPU"

    @property
    def is_cuda(self: Tensor) -> bool:
        return False  # no CUDA device in unigrad yet (unigrad.cuda.is_available() is False)

    def get_device(self: Tensor) -> int:
        """torch's device index: -1 for the CPU."""
        return -1

    def cuda(self: Tensor, device: Any = None, non_blocking: bool = False) -> Tensor:
        raise RuntimeError(
            "cuda: unigrad has no CUDA device (unigrad.cuda.is_available() is False); keep the tensor on "
            f"{self.device} or use .to(unigrad.Device.DEFAULT)"
        )

    def pin_memory(self: Tensor) -> Tensor:
        """Itself: host buffers need no pinning here."""
        return self

    def share_memory_(self: Tensor) -> Tensor:
        """Itself (torch moves the storage to shared memory for multiprocessing; unigrad runs in one process)."""
        return self

    def type(self: Tensor, dtype: DType | str | Any | None = None) -> Any:
        """torch's Tensor.type: with a dtype, a legacy type (torch.LongTensor) or its name ("torch.LongTensor"),
        this tensor cast to it; without, the type's name ("torch.FloatTensor")."""
        if isinstance(dtype, str) and dtype.startswith("torch.") and dtype.endswith("Tensor"):
            from unigrad.api import torch_env

            dtype = getattr(torch_env, dtype[len("torch.") :], dtype)
        if dtype is not None:
            return self.cast(getattr(dtype, "dtype", dtype))
        from unigrad.tensor import _torch_name

        return f"torch.{_torch_name(self.dtype)}Tensor"

    def byte(self: Tensor) -> Tensor:
        return self.cast(dtypes.uint8)

    def char(self: Tensor) -> Tensor:
        return self.cast(dtypes.int8)

    def equal(self: Tensor, other: Tensor) -> bool:
        """torch.equal: the same shape and the same values (nan is not equal to nan)."""
        if self.shape != other.shape:
            return False
        return bool(self.eq(other).all().item()) if self.numel() else True

    def ravel(self: Tensor) -> Tensor:
        """The flattened tensor (1-D)."""
        return self.reshape(-1)

    def msort(self: Tensor) -> Tensor:
        """Sorted along dim 0 (values only), as torch.msort."""
        return self.sort(0)[0]

    def unbind(self: Tensor, dim: int = 0) -> tuple[Tensor, ...]:
        """The slices along dim as a tuple of views, the dim removed."""
        if self.ndim == 0:
            raise IndexError("unbind: dimension specified as 0 but tensor has no dimensions")
        d = _dim("unbind", dim, self.ndim)
        return tuple(self[(slice(None),) * d + (i,)] for i in range(self.shape[d]))

    def tensor_split(
        self: Tensor, indices_or_sections: int | Sequence[int] | Tensor, dim: int = 0
    ) -> tuple[Tensor, ...]:
        """torch.tensor_split: an int k gives k pieces (the first n % k one longer); a list of indices gives the
        pieces self[i_(j-1):i_j] along dim as Python slices (negatives count from the end, empty pieces allowed). A
        tensor argument (0-D: sections, 1-D: indices) is read back first (a sync point)."""
        from unigrad.tensor import Tensor

        if self.ndim == 0:
            raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims")
        d = _dim("tensor_split", dim, self.ndim)
        ios = indices_or_sections
        if isinstance(ios, Tensor):
            if not ios.dtype.is_int or ios.dtype is dtypes.bool or ios.ndim > 1:
                raise RuntimeError(
                    f"tensor_split expected tensor_indices_or_sections to be a 0-D or 1-D integer tensor, got "
                    f"{ios.dtype} of shape {ios.shape}"
                )
            ios = ios.tolist()
        n = self.shape[d]
        if isinstance(ios, int):
            if ios <= 0:
                raise RuntimeError(f"tensor_split: number of sections must be larger than 0, got {ios}")
            q, r = divmod(n, ios)
            bounds = [i * q + min(i, r) for i in range(ios + 1)]
            pieces = zip(bounds[:-1], bounds[1:])
        else:
            idx = [int(i) for i in ios]
            pieces = zip([0, *idx], [*idx, None])
        return tuple(self[(slice(None),) * d + (slice(a, b),)] for a, b in pieces)

    def _split_along(self: Tensor, op: str, d: int, min_ndim: int, sections: int | Sequence[int]) -> tuple:
        """hsplit/vsplit/dsplit: tensor_split along d, an int must divide the dim evenly (as torch)."""
        if self.ndim < min_ndim:
            raise RuntimeError(
                f"torch.{op} requires a tensor with at least {min_ndim} dimension, but got a tensor with {self.ndim} "
                f"dimensions!"
            )
        if isinstance(sections, int) and (sections == 0 or self.shape[d] % sections):
            raise RuntimeError(
                f"torch.{op} attempted to split along dimension {d}, but the size of the dimension {self.shape[d]} "
                f"is not divisible by the split_size {sections}!"
            )
        return self.tensor_split(sections, d)

    def hsplit(self: Tensor, sections: int | Sequence[int]) -> tuple[Tensor, ...]:
        """tensor_split along dim 1 (dim 0 of a 1-D tensor); an int must divide the dim evenly."""
        return self._split_along("hsplit", 1 if self.ndim > 1 else 0, 1, sections)

    def vsplit(self: Tensor, sections: int | Sequence[int]) -> tuple[Tensor, ...]:
        """tensor_split along dim 0 of a tensor of 2 or more dims."""
        return self._split_along("vsplit", 0, 2, sections)

    def dsplit(self: Tensor, sections: int | Sequence[int]) -> tuple[Tensor, ...]:
        """tensor_split along dim 2 of a tensor of 3 or more dims."""
        return self._split_along("dsplit", 2, 3, sections)

    # ------------------------------------------------------------ torch names: gather, scatter, fill
    def take_along_dim(self: Tensor, indices: Tensor, dim: int | None = None) -> Tensor:
        """torch.take_along_dim: gather along dim after broadcasting self and the int64 indices in every other dim
        (dim=None: of the flattened tensor). Indices outside [0, n) raise, as torch.gather (checked on the values
        read back: a sync point)."""
        from unigrad.tensor import _broadcast_shape

        if indices.dtype is not dtypes.int64:
            raise RuntimeError(f"take_along_dim: dtype of indices should be int64 but got {indices.dtype}")
        if dim is None:
            return self.reshape(-1).take_along_dim(indices.reshape(-1), 0).reshape(indices.shape)
        if self.ndim != indices.ndim:
            raise RuntimeError(
                f"take_along_dim: input and indices should have the same number of dimensions, but got {self.ndim} "
                f"dimensions for input, and {indices.ndim} dimensions for indices"
            )
        x = self.reshape(1) if self.ndim == 0 else self
        idx = indices.reshape(1) if indices.ndim == 0 else indices
        d = _dim("take_along_dim", dim, x.ndim)
        n = x.shape[d]
        if idx.numel():
            lo, hi = int(idx.min().item()), int(idx.max().item())
            if lo < 0 or hi >= n:
                raise IndexError(
                    f"take_along_dim: index {lo if lo < 0 else hi} is out of bounds for dimension {d} with size {n}"
                )

        rest = _broadcast_shape(
            "take_along_dim", x.shape[:d] + (1,) + x.shape[d + 1 :], idx.shape[:d] + (1,) + idx.shape[d + 1 :]
        )
        x = x.expand(rest[:d] + (n,) + rest[d + 1 :])
        idx = idx.expand(rest[:d] + (idx.shape[d],) + rest[d + 1 :])
        out = _gather(x, d, idx, check=False)  # checked above, at the call
        return out.reshape(()) if self.ndim == 0 else out

    def scatter_add(self: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
        """Out-of-place torch.scatter_add: the src values sent to each position along dim added to self's."""
        from unigrad.tensor import Tensor

        if not isinstance(src, Tensor):
            raise TypeError(f"scatter_add: src must be a Tensor, got {type(src).__name__}")
        return self.scatter_reduce(dim, index, src, "sum")

    def index_fill(self: Tensor, dim: int, index: Tensor, value: Tensor | ConstType) -> Tensor:
        """self with the slices at the int64 indices along dim set to value (a scalar or 0-d tensor, cast to self's
        dtype; it gets the gradient of those positions). Negative indices count from the end; out of range raises
        (checked on the values read back: a sync point)."""
        from unigrad.tensor import Tensor

        if index.dtype is not dtypes.int64:
            raise IndexError(f"index_fill: expected dtype int64 for index, got {index.dtype}")
        if index.ndim > 1:
            raise RuntimeError(f"index_fill: index has to be a vector or scalar, got shape {index.shape}")
        if isinstance(value, Tensor) and value.ndim != 0:
            raise RuntimeError(
                f"index_fill: only supports a 0-dimensional value tensor, but got tensor with {value.ndim} dimension(s)"
            )
        x = self.reshape(1) if self.ndim == 0 else self
        d = _dim("index_fill", dim, x.ndim)
        n = x.shape[d]
        _check_index_range("index_fill", index, n, d)
        idx = index.reshape(1, -1)
        hit = (_arange(n, x.device).reshape(n, 1) == (idx < 0).where(idx + n, idx)).any(1)
        hit = hit.reshape([n if i == d else 1 for i in range(x.ndim)])
        v = value.cast(x.dtype) if isinstance(value, Tensor) else _const(x, value)
        return hit.where(v, x).reshape(self.shape)

    def index_copy(self: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
        """Out-of-place torch.index_copy: slice i of source (along dim) written at position index[i]; a repeated
        index keeps the last slice sent to it. Indices must lie in [0, n) (checked on the values read back: a sync
        point); source must have self's dtype and shape except len(index) along dim."""
        if index.dtype is not dtypes.int64:
            raise RuntimeError(f"index_copy: expected a long (int64) tensor for index, but got {index.dtype}")
        if index.ndim > 1:
            raise IndexError(f"index_copy: index should have dimension 1 or 0, got shape {index.shape}")
        if source.dtype != self.dtype:
            raise RuntimeError(
                f"index_copy: self and source expected to have the same dtype, but got {self.dtype} and {source.dtype}"
            )
        x = self.reshape(1) if self.ndim == 0 else self
        src = source.reshape(1) if source.ndim == 0 else source
        d = _dim("index_copy", dim, x.ndim)
        m, n = index.numel(), x.shape[d]
        want = x.shape[:d] + (m,) + x.shape[d + 1 :]
        if src.shape != want:
            raise IndexError(f"index_copy: source of shape {source.shape} does not fit: expected {want}")
        if m == 0:
            return self
        lo, hi = int(index.min().item()), int(index.max().item())
        if lo < 0 or hi >= n:
            raise IndexError(
                f"index_copy: index {lo if lo < 0 else hi} is out of bounds for dimension {d} with size {n}"
            )
        match = _arange(n, x.device).reshape(n, 1) == index.reshape(1, m)  # [target, source slice]
        last = match.where(_arange(m, x.device).reshape(1, m), -1).max(1)  # (n,): the slice written, -1 for none
        picked = src.movedim(d, 0).take_rows(last.maximum(0))
        keep = (last >= 0).reshape(n, *(1,) * (x.ndim - 1))
        return keep.where(picked, x.movedim(d, 0)).movedim(0, d).reshape(self.shape)

    def masked_scatter(self: Tensor, mask: Tensor, source: Tensor) -> Tensor:
        """Out-of-place torch.masked_scatter: the positions where the bool mask (broadcast with self) is True take
        source's elements in row-major order. The count of Trues is read back first (a sync point): source must
        have at least that many elements."""
        from unigrad.tensor import _broadcast_shape

        if mask.dtype is not dtypes.bool:
            raise RuntimeError(f"masked_scatter: only supports boolean masks, but got mask with dtype {mask.dtype}")
        if source.dtype != self.dtype:
            raise RuntimeError(
                f"masked_scatter: expected self and source to have same dtypes but got {self.dtype} and {source.dtype}"
            )
        shape = _broadcast_shape("masked_scatter", self.shape, mask.shape)
        flat_mask, flat = mask.expand(shape).reshape(-1), self.expand(shape).reshape(-1)
        count = int(flat_mask.sum().item()) if flat_mask.numel() else 0
        if count > source.numel():
            raise RuntimeError(
                f"masked_scatter: number of elements of source ({source.numel()}) < number of ones in mask ({count})"
            )
        if count == 0:
            return flat.reshape(shape)
        pos = flat_mask.cast(dtypes.int64).cumsum(0) - 1  # the source element of each True
        return flat_mask.where(source.reshape(-1).take_rows(pos.maximum(0)), flat).reshape(shape)

    def fill_(self: Tensor, value: Tensor | ConstType) -> Tensor:
        """In place (torch.Tensor.fill_): every element set to value (a scalar or 0-d tensor, cast to self's dtype);
        in-place rules as +=."""
        from unigrad.tensor import Tensor

        if isinstance(value, Tensor) and value.ndim != 0:
            raise RuntimeError(
                f"fill_: only supports a 0-dimension value tensor but got tensor with {value.ndim} dimensions"
            )
        return self._inplace(_filled, value, "fill_")

    def zero_(self: Tensor) -> Tensor:
        """In place: every element set to 0 (fill_(0))."""
        return self.fill_(0)

    # ------------------------------------------------------------ torch names: membership and search
    def isin(
        self: Tensor, test_elements: Tensor | ConstType, *, assume_unique: bool = False, invert: bool = False
    ) -> Tensor:
        """torch.isin(self, test_elements): is each element equal to one of test_elements (promoted; nan is in
        nothing); invert negates. Compares every pair: O(self.numel() * test_elements.numel())."""
        from unigrad.tensor import Tensor

        test = test_elements if isinstance(test_elements, Tensor) else Tensor(test_elements, device=self.device)
        if self.dtype is dtypes.bool or test.dtype is dtypes.bool:
            raise RuntimeError(f"isin: unsupported input type bool (got {self.dtype} and {test.dtype})")
        m = test.numel()
        if m == 0:
            found = self._const_like(False, dtypes.bool)
        else:
            found = self.reshape(-1, 1).eq(test.reshape(1, m)).any(1).reshape(self.shape)
        return found.logical_not() if invert else found

    def searchsorted(
        self: Tensor,
        values: Tensor | ConstType,
        *,
        out_int32: bool = False,
        right: bool = False,
        side: str | None = None,
        sorter: Tensor | None = None,
    ) -> Tensor:
        """torch.searchsorted(self, values) for a sorted self: for each value, how many entries of its row of self
        sort before it (< for side 'left', <= for 'right'; a nan value after all). A 1-D self serves every value,
        an N-D one the values of the matching leading dims. Compares every value with every boundary: fine for
        moderate sizes. `sorter` (int64 indices) sorts an unsorted self first."""
        from unigrad.tensor import Tensor

        if side not in (None, "left", "right"):
            raise RuntimeError(f"searchsorted: side can only be 'left' or 'right' but got {side!r}")
        if side == "left" and right:
            raise RuntimeError(
                "searchsorted: side and right can't be set to opposites, got side of left while right was True"
            )
        right = right or side == "right"
        if self.ndim == 0:
            raise RuntimeError("searchsorted: boundaries tensor should have positive dimension, but got 0 dimension")
        v = values if isinstance(values, Tensor) else Tensor(values, device=self.device)
        if self.ndim > 1 and (v.ndim != self.ndim or v.shape[:-1] != self.shape[:-1]):
            raise RuntimeError(
                f"searchsorted: boundaries tensor should be 1 dimension or the first N-1 dimensions of boundaries "
                f"tensor and input value tensor must match, but got boundaries {self.shape} and values {v.shape}"
            )
        seq = self if sorter is None else self.gather(-1, sorter)
        b = seq.unsqueeze(-2) if self.ndim > 1 else seq
        vv = v.unsqueeze(-1)
        before = (b <= vv) if right else (b < vv)
        if vv.dtype.is_float or b.dtype.is_float:
            before = before | vv.ne(vv)
        return before.sum(-1, dtype=dtypes.int32 if out_int32 else dtypes.int64)

    def bucketize(self: Tensor, boundaries: Tensor, *, out_int32: bool = False, right: bool = False) -> Tensor:
        """torch.bucketize(self, boundaries): the bucket of each element in 1-D sorted boundaries, i.e.
        boundaries.searchsorted(self) with the same `right`."""
        if boundaries.ndim != 1:
            raise RuntimeError(f"bucketize: boundaries tensor must be 1 dimension, but got shape {boundaries.shape}")
        return boundaries.searchsorted(self, out_int32=out_int32, right=right)

    def unique_consecutive(
        self: Tensor, return_inverse: bool = False, return_counts: bool = False, dim: int | None = None
    ) -> Tensor | tuple[Tensor, ...]:
        """The flattened tensor with runs of equal consecutive elements collapsed to their first (nans never equal),
        optionally each element's run index (input's shape) and the run lengths. The run count is read back (a sync
        point). Only dim=None is supported."""
        from unigrad.tensor import Tensor

        if dim is not None:
            raise NotImplementedError("unique_consecutive: only dim=None (the flattened tensor) is supported")
        flat = self.reshape(-1)
        n = flat.shape[0]
        if n == 0:
            values = flat
            inverse = Tensor.zeros(self.shape, dtype=dtypes.int64, device=self.device)
            counts = _arange(0, self.device)
        else:
            starts_mask = flat[1:].ne(flat[:-1]).pad(((1, 0),), value=True)
            starts = _nonzero_positions(starts_mask)
            values = flat.take_rows(starts)
            inverse = (starts_mask.cast(dtypes.int64).cumsum(0) - 1).reshape(self.shape)
            counts = starts.pad(((0, 1),), value=n)[1:] - starts
        out = [values] + ([inverse] if return_inverse else []) + ([counts] if return_counts else [])
        return out[0] if len(out) == 1 else tuple(out)

    # ---------------------------------------------------------------- helpers that need Tensor methods

    # ------------------------------------------------------------ einops-style
    def rearrange(self: Tensor, formula: str, **sizes: int) -> Tensor:
        """einops.rearrange: 'b c (h w) -> b (c h) w' with h= or w= given. Names on the left split the dims
        (a group is unflattened; one size per group may be inferred), the right side orders and merges them:
        a reshape, a permute and a reshape. '...' stands for the dims no name covers ('(...)' on the right
        merges them); '1' or '()' is a size-1 dim."""
        lhs, arrow, rhs = formula.partition("->")
        if not arrow:
            raise ValueError(f"rearrange: formula {formula!r} needs '->'")
        left, right = _einops_groups(lhs), _einops_groups(rhs)
        n_ell = self.ndim - len(left) + 1 if ["..."] in left else 0
        if n_ell < 0 or (not n_ell and len(left) != self.ndim):
            raise RuntimeError(f"rearrange: {lhs.strip()!r} names {len(left)} dims, the tensor has {self.ndim}")
        ell = [f"...{i}" for i in range(n_ell)]
        names: list[str] = []
        dims: list[int] = []
        d = 0
        for group in left:
            if group == ["..."]:
                names += ell
                dims += self.shape[d : d + n_ell]
                d += n_ell
                continue
            group = [n for n in group if n not in ("(", "1")]
            size = self.shape[d]
            d += 1
            known = [sizes.get(n) for n in group]
            if known.count(None) > 1:
                raise ValueError(f"rearrange: cannot infer more than one size in the group ({' '.join(group)})")
            rest = math.prod(k for k in known if k is not None)
            if (None not in known and rest != size) or (None in known and (rest == 0 or size % rest)):
                raise RuntimeError(f"rearrange: group ({' '.join(group)}) does not split a dim of size {size}")
            names += group
            dims += [k if k is not None else size // rest for k in known]
        out_groups: list[list[str]] = []
        for g in right:  # a bare '...' keeps its dims apart, a parenthesized group merges its names
            if g == ["..."]:
                out_groups += [[e] for e in ell]
            else:
                out_groups.append([e for n in g if n not in ("(", "1") for e in (ell if n == "..." else [n])])
        out_names = [n for g in out_groups for n in g]
        if sorted(out_names) != sorted(names) or len(set(names)) != len(names):
            raise RuntimeError(f"rearrange: {formula!r} must use each name once on each side")
        x = self.reshape(dims).permute([names.index(n) for n in out_names])
        size_of = dict(zip(names, dims))
        return x.reshape([math.prod(size_of[n] for n in g) for g in out_groups])


def _filled(x: Tensor, value: Tensor | ConstType) -> Tensor:
    """x's shape filled with value (fill_'s out-of-place result)."""
    from unigrad.tensor import Tensor

    v = value.cast(x.dtype) if isinstance(value, Tensor) else _const(x, value)
    return v.reshape((1,) * x.ndim).expand(x.shape)


def _const(x: Tensor, value: ConstType) -> Tensor:
    """A 0-d constant of x's dtype on x's device."""
    from unigrad.tensor import Tensor

    return Tensor(value, dtype=x.dtype, device=x.device)


def _extreme(dt: DType, highest: bool) -> ConstType:
    """The value of dt that loses every max comparison (lowest) or every min comparison (highest)."""
    if dt.is_float:
        return math.inf if highest else -math.inf
    if dt is dtypes.bool:
        return highest
    return dt.max if highest else dt.min


def _einops_groups(side: str) -> list[list[str]]:
    """'b (h w) 1 ... (...)' -> [['b'], ['h', 'w'], ['1'], ['...'], ['(', '...']]: one list per dim; a
    parenthesized group starts with '(' (so '(...)' merges what a bare '...' keeps apart; '()' is size 1)."""
    groups: list[list[str]] = []
    current: list[str] | None = None
    for tok in side.replace("(", " ( ").replace(")", " ) ").split():
        if tok == "(":
            if current is not None:
                raise ValueError(f"rearrange: nested parentheses in {side!r}")
            current = ["("]
        elif tok == ")":
            if current is None:
                raise ValueError(f"rearrange: unbalanced parentheses in {side!r}")
            groups.append(current)
            current = None
        elif current is not None:
            current.append(tok)
        else:
            groups.append([tok])
    if current is not None:
        raise ValueError(f"rearrange: unbalanced parentheses in {side!r}")
    return groups


def _first_positions(flat: Tensor, size: int) -> tuple[Tensor, Tensor]:
    """(int64 positions of the first `size` True elements of a 1-D bool tensor, which of the `size` rows have one):
    nonzero/masked_select with a static size, no count read back (rows past the count hold flat's length)."""
    if not isinstance(size, int) or size < 0:
        raise ValueError(f"size must be a non-negative int, got {size!r}")
    targets = _arange(size, flat.device)
    if flat.shape[0] == 0:
        return targets * 0, targets < 0
    cum = flat.cast(dtypes.int64).cumsum(0)
    return _count_at_most(cum, targets), targets < cum[-1]


def _nonzero_positions(flat: Tensor) -> Tensor:
    """int64 positions of the True elements of a 1-D bool tensor, in order. Reads the count back."""
    n = flat.shape[0]
    count = int(flat.sum().item()) if n else 0
    if count == 0:
        return _arange(0, flat.device)
    # the j-th True is where the running count of Trues first exceeds j: the count of prefixes holding <= j
    return _count_at_most(flat.cast(dtypes.int64).cumsum(0), _arange(count, flat.device))


def _unique_sorted(flat: Tensor, return_inverse: bool, return_counts: bool) -> list[Tensor]:
    """unique() of a 1-D tensor from its stable sort: a group starts where a sorted value differs from the one
    before (NaN differs from everything, so each NaN is a group); the values are the groups' first elements,
    each element's inverse the count of distinct order keys at or below its own (NaNs: the non-NaN groups, then
    their order among the NaNs), the counts the gaps between group starts."""
    n = flat.shape[0]
    order = _sort_network_indices(flat, descending=False)
    ordered = flat.take_rows(order)
    starts_mask = ordered[1:].ne(ordered[:-1]).pad(((1, 0),), value=True)
    starts = _nonzero_positions(starts_mask)  # reads the distinct count back
    out = [ordered.take_rows(starts)]
    if return_inverse:
        key = _order_key(flat).cast(dtypes.int64)
        distinct = key.take_rows(order).take_rows(starts)  # the groups' keys, ascending (NaNs' all alike, last)
        inverse = _count_at_most(distinct, key) - 1
        if flat.dtype.is_float:
            nan = flat.isnan()
            before = (nan.cast(dtypes.int64).cumsum(0) - 1).realize()  # NaNs before each, in index order
            inverse = nan.where(_count_at_most(distinct, key - 1) + before, inverse)
        out.append(inverse)
    if return_counts:
        out.append(starts.pad(((0, 1),), value=n)[1:] - starts)
    return out


def _segmented_scan(x: Tensor, seg: Tensor) -> Tensor:
    """Inclusive running sums of the rows of x (P, R) within runs of equal `seg` (P,) int64, non-decreasing: row i
    sums the rows j <= i with seg[j] == seg[i]. Blocks of SCAN_BLOCK rows are scanned by a masked window; each
    block's tail sum (the rows of its last run) is scanned the same way across blocks (a run that reaches a block's
    start covers the blocks before it back to where it began), and carried into the next block's first run."""
    from unigrad.api.reduce import SCAN_BLOCK

    n = x.shape[0]
    b = min(n, SCAN_BLOCK)
    nb = -(-n // b)
    xb = x.pad(((0, nb * b - n), (0, 0))).reshape(nb, b, x.shape[1])  # padded rows are zeros: they add nothing
    sb = seg.pad(((0, nb * b - n),), value=dtypes.int64.max).reshape(nb, b)
    i = _arange(b, x.device)
    same = (i.reshape(b, 1) >= i.reshape(1, b)) & sb.unsqueeze(2).eq(sb.unsqueeze(1))  # [block, i, j]
    inner = same.unsqueeze(3).where(xb.unsqueeze(1), 0).sum(2)  # (nb, b, R)
    if nb == 1:
        return inner.reshape(b, x.shape[1])[:n]
    last = sb[:, b - 1]  # each block's last run
    tails = _segmented_scan(inner[:, b - 1], last)  # (nb, R): the last run's sum up to each block's end
    carry_seg = last.pad(((1, 0),), value=dtypes.int64.min)[:nb]  # the previous block's last run
    carry = tails.pad(((1, 0), (0, 0)))[:nb]
    out = inner + sb.eq(carry_seg.unsqueeze(1)).unsqueeze(2).where(carry.unsqueeze(1), 0)
    return out.reshape(nb * b, x.shape[1])[:n]


def _scatter_add_rows(n: int, index: Tensor, rows: Tensor) -> Tensor:
    """(n, R): row j the sum of the rows (P, R) whose index (P,) int64 is j, in index order (an index outside
    [0, n) adds nothing). From a sort of the index: the rows in index order, their running sums within each index
    value, and each j's sum read at its last row (a binary search): O(P log^2 P + P R + n (log P + R)), where a
    one-hot matrix product is O(n P R)."""
    from unigrad.tensor import Tensor

    if index.shape[0] == 0:  # no rows: nothing added
        return Tensor.zeros(n, rows.shape[1], dtype=rows.dtype, device=rows.device)
    inside = (index >= 0) & (index < n)
    key = inside.where(index, n)  # outside: after every row's index
    # keys in [0, n] fit 32 bits (n < 2^31): the network then packs key and position in one int64 (one kernel a step)
    order = _sort_network_indices(key.cast(dtypes.int32) if n < 2**31 else key, descending=False)
    keys = key.take_rows(order)
    sums = _segmented_scan(rows.take_rows(order), keys)
    j = _arange(n, index.device)
    end, start = _count_at_most(keys, j), _count_at_most(keys, j - 1)
    return (end > start).unsqueeze(1).where(sums.take_rows(end - 1), 0)


def _reinterpret(x: Tensor, dt: DType) -> Tensor:
    """x's bits as dt, of the same size, for a value computed on the way (an order key). Not Tensor.bitcast: that
    registers its result as a view of x, so that an assign to it writes x, and holds x alive for it, and a live
    lazy tensor is realized with any graph that reads it (a kernel more per call). No assign reaches a key."""
    return x._new(UOp(Ops.BITCAST, (x.uop,), dt))


def _order_key(x: Tensor) -> Tensor:
    """An int tensor whose order is x's sort order (torch's: NaN above everything, -0.0 equal to 0.0): floats as
    their bits with the negatives' order reversed, ints as they are, bools as int32."""
    if x.dtype is dtypes.bool:
        return x.cast(dtypes.int32)
    if not x.dtype.is_float:
        return x
    wide = x.dtype is dtypes.float64
    f = (x if x.dtype in (dtypes.float32, dtypes.float64) else x.cast(dtypes.float32)) + 0.0  # -0.0 + 0.0 is 0.0
    f = f.isnan().where(math.nan, f)  # every NaN as the one positive NaN (its bits sort above +inf's)
    bits = _reinterpret(f, dtypes.int64 if wide else dtypes.int32)
    return (bits < 0).where(bits ^ (dtypes.int64 if wide else dtypes.int32).max, bits)  # negatives: -magnitude-1


def _sort_network_indices(x: Tensor, descending: bool) -> Tensor:
    """int64 indices [..., n] of x's stable sort along the last axis by a bitonic sorting network over (order key,
    position) pairs (unique, so the network's lack of stability does not matter), padded to a power of two n2 with
    the largest key, then log2(n2) merges of compare-exchange steps, each element against its partner p = i ^ mask
    (the mirror in its block for a merge's first step, then half the distance each step), keeping the pair that
    sorts first where i < p. O(n log^2 n) work. A key of up to 32 bits and its position share one int64; wider
    keys are exchanged beside their positions. Every step is the same kernel (the mask is a 0-d buffer) and is
    realized at once, so two buffers of the rows live at a time: sort runs its kernels when called."""
    from unigrad.tensor import Tensor

    key = ~_order_key(x) if descending else _order_key(x)  # ~: order-reversing; equal keys keep position order
    *lead, n = x.shape
    n2 = 1 << (n - 1).bit_length()
    rows = math.prod(lead)
    pos = _arange(n2, x.device)
    packed = key.dtype.itemsize <= 4
    if packed:
        k = (key.cast(dtypes.int64).reshape(rows, n) * n2 + pos[:n]).pad(((0, 0), (0, n2 - n)), value=dtypes.int64.max)
        p = None
    else:
        k = key.reshape(rows, n).pad(((0, 0), (0, n2 - n)), value=key.dtype.max)
        p = pos.reshape(1, n2).expand(rows, n2).contiguous()
    # the rows one after another: a mask below n2 flips only bits inside a row, so the flat position ^ mask is the
    # partner in the same row, and flat positions order the pair as the row's do
    k = k.reshape(-1).realize()
    if p is not None:
        p = p.reshape(-1).realize()
    flat = _arange(rows * n2, x.device)
    for a in range(1, n2.bit_length()):
        for mask in [(1 << a) - 1, *(1 << b for b in range(a - 2, -1, -1))]:
            partner = flat ^ Tensor(np.array(mask, dtype=np.int64), device=x.device)
            ok = k.take_rows(partner)
            if p is None:  # packed keys are unique: i < partner keeps the smaller of the pair, else the larger
                k = (flat < partner).eq(k < ok).where(k, ok).realize()
                continue
            op = p.take_rows(partner)
            keep = (flat < partner).eq((k < ok) | (k.eq(ok) & (p < op)))  # i < partner keeps the pair sorting first
            k, p = keep.where(k, ok), keep.where(p, op)
            Tensor.realize(k, p)
    out = k.reshape(rows, n2)[:, :n] % n2 if p is None else p.reshape(rows, n2)[:, :n]
    return out.reshape(*lead, n)


def _first_k(x: Tensor, d: int, k: int, first_largest: bool) -> tuple[Tensor, Tensor]:
    """(values, default_int indices) of the first k elements of x's stable sort along dim d (largest first when
    `first_largest`), by the plan with the fewest kernels for the size (n along d):
    - k = 1, or k <= TOPK_SELECT and 8k < n over SORT_NETWORK_MIN: k rounds, each the greatest packed key below the
      last round's (one reduce kernel a round, O(n*k)); the values are loaded at the indices;
    - n <= SORT_NETWORK_MIN: each element's rank from pairwise comparisons (one n*n reduce kernel), then the values
      and the indices of the ranks below k as one-hot selections (a reduce kernel each, computed only if read);
    - otherwise a bitonic sorting network (O(n log^2 n), its kernels run at the call)."""
    xm = x.movedim(d, -1)  # [..., n]
    if _by_rounds(xm, k) or _by_network(xm):
        indices = _first_k_indices(xm, k, first_largest)
        values = _take_last(xm, indices)
    else:
        values, indices = _first_k_by_rank(xm, k, first_largest)
    return values.movedim(-1, d), indices.cast(dtypes.default_int).movedim(-1, d)


def _by_rounds(x: Tensor, k: int) -> bool:
    n = x.shape[-1]
    static = all(isinstance(s, int) for s in x.shape)
    return static and k > 0 and (k == 1 or (n > SORT_NETWORK_MIN and k <= TOPK_SELECT and 8 * k < n))


def _by_network(x: Tensor) -> bool:
    return all(isinstance(s, int) for s in x.shape) and x.shape[-1] > SORT_NETWORK_MIN


def _first_k_indices(x: Tensor, k: int, first_largest: bool) -> Tensor:
    """int64 indices [..., k] of the first k elements of x's stable sort along the last axis (_first_k's plans)."""
    if _by_rounds(x, k):
        return _first_k_by_selection(x, k, first_largest)
    if _by_network(x):
        return _sort_network_indices(x, first_largest)[..., :k]
    return _first_k_by_rank(x, k, first_largest)[1]


def _take_last(x: Tensor, index: Tensor) -> Tensor:
    """x gathered along its last axis at int64 `index` (same leading dims, every entry in range): an indirect load
    of x's flat position, O(index.numel()), or the one-hot selection when x requires grad (as _gather)."""
    from unigrad.tensor import Tensor

    *lead, n = x.shape
    if x.requires_grad or not all(isinstance(s, int) for s in x.shape + index.shape):
        return _gather(x, -1, index, check=False)
    rows = math.prod(lead)
    start = Tensor.arange(0, rows * n, n, dtype=dtypes.int64, device=x.device).reshape(*lead, 1)  # rows' offsets
    return x.reshape(-1).take_rows(index + start)


def _packed_order(x: Tensor, first_largest: bool) -> tuple[Tensor, int] | None:
    """(keys, n2): x's order key along the last axis (its complement when the smallest come first) times a power of
    two n2 >= n, plus n2 - 1 - position, as int64 [..., n]. Every key is distinct and greater for the element that
    sorts first (among equal elements, the earlier one), so a max picks it (an int min is a max of complements: more
    ops); the position reads back as n2 - 1 - (key & (n2 - 1)). None when a key and a position do not fit 63 bits
    (64-bit keys, or uint32 keys over 2^31 positions)."""
    from unigrad.tensor import Tensor

    n = x.shape[-1]
    if not isinstance(n, int) or x.dtype.itemsize > 4:
        return None
    n2 = 1 << max(n - 1, 0).bit_length()
    if n2 > (1 << 31 if x.dtype is dtypes.uint32 else 1 << 32):
        return None
    key = _order_key(x) if first_largest else ~_order_key(x)  # ~: order-reversing in the key's own dtype
    back = Tensor.arange(n2 - 1, n2 - 1 - n, -1, dtype=dtypes.int64, device=x.device)  # n2 - 1 - position
    return key.cast(dtypes.int64) * n2 + back, n2


def _first_k_by_selection(x: Tensor, k: int, first_largest: bool) -> Tensor:
    """int64 indices [..., k] of the first k elements of x's stable sort along the last axis: k rounds, each the
    element after the previous round's in that order (the greatest packed key below it). Each round is one reduce
    kernel over x (two for keys wider than 32 bits: the greatest key after the previous pick, then its first
    index), no mask of the elements taken is kept: O(n*k) work."""
    picked: list[Tensor] = []
    if (packed := _packed_order(x, first_largest)) is not None:
        both, n2 = packed
        best: Tensor | None = None
        for _ in range(k):
            best = (both if best is None else (both < best).where(both, dtypes.int64.min)).max(-1, keepdim=True)
            if k > 1:
                best = best.contiguous()  # its own buffer: the rounds after and the cat below read it
            picked.append((n2 - 1) - (best & (n2 - 1)))
        return picked[0].cat(*picked[1:], dim=-1) if k > 1 else picked[0]
    key = _order_key(x) if first_largest else ~_order_key(x)
    n = x.shape[-1]
    pos = _arange(n, x.device)
    prev: tuple[Tensor, Tensor] | None = None  # the previous pick's key and index
    for _ in range(k):
        after = None if prev is None else (key < prev[0]) | (key.eq(prev[0]) & (pos > prev[1]))
        cand = key if after is None else after.where(key, key.dtype.min)
        top = cand.max(-1, keepdim=True).contiguous()
        hit = cand.eq(top) if after is None else cand.eq(top) & after  # the sentinel is no pick
        idx = hit.where(pos, n).min(-1, keepdim=True).contiguous()
        picked.append(idx)
        prev = (top, idx)
    return picked[0].cat(*picked[1:], dim=-1)


def _first_k_by_rank(x: Tensor, k: int, first_largest: bool) -> tuple[Tensor, Tensor]:
    """(values, int64 indices) [..., k] of the first k elements of x's stable sort along the last axis: each
    element's rank (n*n comparisons), then a one-hot selection of the element of each rank below k (k*n), for the
    values (differentiable: the gradient flows back through the selection) and for the positions."""
    from unigrad.tensor import Tensor

    ranks = Tensor.arange(k, dtype=dtypes.int64, device=x.device).reshape(k, 1)
    other = _sort_rank(x, first_largest).ne(ranks)  # [..., k, n]: element i is not the one of rank r
    values = _select_sum(other.where(_zero(x), x.unsqueeze(-2)), -1)
    return values, _select_sum(other.where(0, _arange(x.shape[-1], x.device)), -1)


def _sort_rank(x: Tensor, first_largest: bool) -> Tensor:
    """[..., 1, n]: for each element i along the last axis, how many elements sort before it (largest first when
    `first_largest`; stable: an equal element sorts before i iff it comes earlier; NaN is the largest value and
    NaNs are equal). The comparisons take x's values as they are, so the n*n of them fuse into the reduce over x
    (an order key computed first would be a kernel of its own: too costly to recompute n times)."""
    n = x.shape[-1]
    shape = (*x.shape[:-1], n, n)
    a, b = x.unsqueeze(-2).expand(shape), x.unsqueeze(-1).expand(shape)  # [..., j, i]: element i, element j
    hi, lo = (b, a) if first_largest else (a, b)
    ahead, behind = hi > lo, lo > hi  # j's value sorts before i's; i's before j's
    if x.dtype.is_float:
        hi_nan, lo_nan = hi.ne(hi), lo.ne(lo)
        ahead, behind = ahead | (hi_nan > lo_nan), behind | (lo_nan > hi_nan)
    tie_before = _earlier(n, x.device)  # [j, i]: j < i, so j sorts before i unless i's value sorts first
    return (tie_before.where(behind, ahead) ^ tie_before).sum(-2, keepdim=True)  # where j < i: not behind


def _earlier(n: int, device: Any) -> Tensor:
    """[n, n] bool: [j, i] is j < i (its graph is built once per n)."""
    from unigrad.tensor import Tensor, _remember

    if (u := _earlier_uops.get((n,))) is None:
        pos = Tensor.arange(n, dtype=dtypes.int64)
        u = _remember(_earlier_uops, (n,), (pos.reshape(n, 1) < pos.reshape(1, n)).uop)
    return Tensor(u, device=device)
