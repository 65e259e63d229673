"""Derived properties of a UOp: dtype, shape, device, addrspace, min_max, axis (spec: Derived Properties).

Each is a pure function of (op, src, arg), one table entry per op group, cached on the node by ir/uop.py.
Where the spec's table says "dtype range", min_max is tightened when that is provably sound (IDIV/MOD by
a positive constant, AND/OR on bools, PAD including its 0 fill) because index simplification needs it.
Device of an ALU op is the first source with a device (the spec's src[0].device when src[0] has one;
a CONST has none).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from unigrad.dtype import ConstType, DType, cast_scalar, dtypes
from unigrad.ir.args import AddrSpace
from unigrad.ir.ops import GroupOp, Ops

if TYPE_CHECKING:
    from unigrad.ir.uop import UOp

Shape = tuple[Any, ...]  # ints and index UOps


# ---------------------------------------------------------------- helpers on shapes


def prod(xs: Shape) -> Any:
    out: Any = 1
    for x in xs:
        out = out * x if not (isinstance(out, int) and not isinstance(x, int)) else x * out
    return out


def as_shape(u: UOp) -> Shape:
    """A (k,)-shaped index UOp (STACK of index CONSTs / index UOps) read as a shape tuple."""
    if u.op is not Ops.STACK:
        raise TypeError(f"expected a STACK of index UOps as a shape, got {u.op}")
    return tuple(s.arg.value if s.op is Ops.CONST else s for s in u.src)


def broadcast_shapes(*shapes: Shape) -> Shape:
    nd = max(len(s) for s in shapes)
    padded = [(1,) * (nd - len(s)) + tuple(s) for s in shapes]
    out = []
    for dims in zip(*padded):
        non1 = [d for d in dims if not (isinstance(d, int) and d == 1)]
        out.append(non1[0] if non1 else 1)
    return tuple(out)


# ---------------------------------------------------------------- dtype: one rule per op, default src[0].dtype


def src0_dtype(u: UOp) -> DType:
    return u.src[0].dtype


def _arg_dtype(u: UOp) -> DType:
    return u.arg.dtype


DTYPE_RULES: dict[Ops, Callable[[UOp], DType]] = {
    **{op: _arg_dtype for op in (Ops.BUFFER, Ops.PARAM, Ops.CONST, Ops.BUFFER_VIEW)},
    **{op: (lambda u: u.arg) for op in (Ops.CAST, Ops.BITCAST)},
    **{op: (lambda u: dtypes.bool) for op in GroupOp.Comparison},
    **{op: (lambda u: dtypes.void) for op in GroupOp.Codegen | {Ops.STORE, Ops.END, Ops.SINK, Ops.GROUP}},
    **{op: (lambda u: dtypes.void) for op in (Ops.LINEAR, Ops.TUPLE)},
    Ops.WHERE: lambda u: u.src[1].dtype,
    Ops.RANGE: lambda u: dtypes.index,
    Ops.SPECIAL: lambda u: dtypes.index,
    Ops.BINARY: lambda u: dtypes.uint8,
    Ops.STACK: lambda u: u.src[0].dtype if u.src else dtypes.index,
    Ops.GETTUPLE: lambda u: _tuple_elem(u).dtype,
    Ops.WMMA: lambda u: u.src[2].dtype,  # D has the accumulator's dtype
}


def dtype_of(u: UOp) -> DType:
    return DTYPE_RULES.get(u.op, src0_dtype)(u)


def _tuple_elem(u: UOp) -> UOp:
    t = u.src[0]
    if t.op in (Ops.FUNCTION, Ops.CALL):
        t = t.src[0]
    return t.src[u.arg]


# ---------------------------------------------------------------- shape


def _src0_shape(u: UOp) -> Shape:
    return u.src[0].shape


def _alu_shape(u: UOp) -> Shape:
    """Broadcast of the sources (tensor-level ALU sources are already equal: the common case is a tuple compare)."""
    first = u.src[0].shape
    if all(s.shape == first for s in u.src[1:]):
        return first
    return broadcast_shapes(*(s.shape for s in u.src))


def _permute_shape(u: UOp) -> Shape:
    s = u.src[0].shape
    return tuple(s[i] for i in u.arg)


def _collapse(axes: tuple[int, ...], s: Shape) -> Shape:
    return tuple(1 if i in axes else d for i, d in enumerate(s))


SHAPE_RULES: dict[Ops, Callable[[UOp], Shape]] = {
    **{op: _alu_shape for op in GroupOp.ALU - {Ops.CAST}},
    **{op: _src0_shape for op in GroupOp.Marker | {Ops.CAST, Ops.FLIP, Ops.BITCAST, Ops.LOAD, Ops.AFTER}},
    **{op: _src0_shape for op in (Ops.FUNCTION, Ops.CALL)},
    Ops.BUFFER: lambda u: as_shape(u.src[0]),
    Ops.PARAM: lambda u: as_shape(u.src[0]),
    Ops.RESHAPE: lambda u: as_shape(u.src[1]),
    Ops.EXPAND: lambda u: as_shape(u.src[1]),
    Ops.PAD: lambda u: as_shape(u.src[2]),
    Ops.SHRINK: lambda u: as_shape(u.src[2]),
    Ops.PERMUTE: _permute_shape,
    Ops.INDEX: lambda u: _index_shape(u),
    Ops.STACK: lambda u: (len(u.src),) + (u.src[0].shape if u.src else ()),
    Ops.REDUCE: lambda u: _collapse(u.arg.axes, u.src[0].shape),
    Ops.REPLICATED: lambda u: _collapse(u.arg, u.src[0].shape),
    Ops.BUFFER_VIEW: lambda u: (u.arg.size,),
    Ops.BINARY: lambda u: (len(u.arg),),
    Ops.GETTUPLE: lambda u: _tuple_elem(u).shape,
    Ops.WMMA: lambda u: u.src[2].shape,  # D is the accumulator fragment's shape
}


def shape_of(u: UOp) -> Shape:
    rule = SHAPE_RULES.get(u.op)
    return rule(u) if rule is not None else ()


def _index_shape(u: UOp) -> Shape:
    base = u.src[0].shape
    idxs = [i for i in u.src[1:] if i.dtype is not dtypes.bool]  # a bool source is the validity, not an index
    out: list[Any] = []
    for i in idxs:
        out.extend(i.shape)
    return tuple(out) + tuple(base[len(idxs) :])


# ---------------------------------------------------------------- device / addrspace / axis


def _derived_device(u: UOp) -> Any:
    return u.device


def device_of(u: UOp, src_device: Callable[[UOp], Any] = _derived_device) -> Any:
    """u's device: its own (a buffer, a copy), else its sources' first, as src_device gives them (their derived
    .device; rangeify passes the devices of the nodes it rebuilt them into)."""
    op = u.op
    if op in (Ops.BUFFER, Ops.PARAM):
        return u.arg.device
    if op is Ops.CONST or op is Ops.RANGE:
        return None
    if op is Ops.LOAD and u.arg is not None and u.arg.device is not None:
        return u.arg.device
    if op in (Ops.FUNCTION, Ops.CALL):
        return src_device(u.src[1]) if len(u.src) > 1 else None
    for s in u.src:
        if (d := src_device(s)) is not None:
            return d
    return None


def addrspace_of(u: UOp) -> AddrSpace | None:
    op = u.op
    if op in (Ops.BUFFER, Ops.PARAM):
        return u.arg.addrspace
    if op is Ops.LOAD:
        return u.arg.addrspace
    if op in GroupOp.Movement or op is Ops.AFTER:
        return u.src[0].addrspace if u.src else None
    return None


def axis_of(u: UOp) -> int | None:
    op = u.op
    if op is Ops.BUFFER:
        return 0 if isinstance(u.arg.device, tuple) else None
    if op is Ops.LOAD:
        return 0 if isinstance(u.arg.device, tuple) else None if u.arg.device is not None else u.src[0].axis
    if not u.src:
        return None
    a = u.src[0].axis
    if op in GroupOp.ALU:
        return next((s.axis for s in u.src if s.axis is not None), None)
    if op is Ops.INDEX and len(u.src) == 2 and u.src[1].dtype is not dtypes.bool:  # tensor-level rows by index
        return a - 1 + len(u.src[1].shape) if a else u.src[1].axis  # T split on a later dim; else as the index
    if a is None:
        return None
    if op is Ops.PERMUTE:
        return u.arg.index(a)
    if op is Ops.RESHAPE:
        return _reshape_axis(u.src[0].shape, u.shape, a, len(u.device))
    if op is Ops.REDUCE:
        return None if a in u.arg.axes else a
    if op is Ops.REPLICATED:
        return None if a in u.arg else a
    if op is Ops.FLIP:  # blocks would change devices
        return None if u.arg[a] else a
    if op in (Ops.PAD, Ops.SHRINK):  # the shard boundary moves unless dim a is left alone
        begin, new = as_shape(u.src[1]), u.shape
        return a if begin[a] == 0 and new[a] == u.src[0].shape[a] else None
    if op in GroupOp.Movement or op in (Ops.AFTER,) or op in GroupOp.Marker:
        return a
    return None


def _reshape_axis(old: Shape, new: Shape, axis: int, n: int) -> int | None:
    """The dim of `new` that keeps the n-way shard boundary of dim `axis` of `old` (each device's block stays one
    block of it), or None: the dims before it hold as many elements as before, and it splits n ways."""
    before = prod(old[:axis])
    for k in range(len(new)):
        if prod(new[:k]) == before and new[k] != 1:
            return k if isinstance(new[k], int) and new[k] % n == 0 else None
    return None


# ---------------------------------------------------------------- min_max: one rule per op

_RANGES: dict[DType, tuple[ConstType, ConstType]] = {}
_INDEX = dtypes.index


def dtype_range(dt: DType) -> tuple[ConstType, ConstType]:
    r = _RANGES.get(dt)
    if r is None:
        r = _RANGES[dt] = (dt.min, dt.max)
    return r


def _fits(dt: DType, lo: ConstType, hi: ConstType) -> tuple[ConstType, ConstType]:
    """Clamp to the dtype's range; ints that may overflow get the whole range (C wraps)."""
    if dt is _INDEX or dt.kind == "f":  # index math is unbounded integer math
        return lo, hi
    dlo, dhi = dtype_range(dt)
    if lo < dlo or hi > dhi:
        return dlo, dhi
    return lo, hi


def _mul_range(a: tuple, b: tuple) -> tuple:
    if isinstance(a[0], int) and isinstance(a[1], int) and isinstance(b[0], int) and isinstance(b[1], int):
        p = (a[0] * b[0], a[0] * b[1], a[1] * b[0], a[1] * b[1])
        return min(p), max(p)
    vals = [x * y for x in a for y in b if not (math.isinf(x) or math.isinf(y)) or (x != 0 and y != 0)]
    if len(vals) < 4:  # 0*inf is nan: the product can be anything in float
        return -math.inf, math.inf
    return min(vals), max(vals)


def _ordered(lo: ConstType, hi: ConstType) -> tuple[ConstType, ConstType]:
    """Bounds that may be nan (a nan constant, inf - inf) say nothing: nan is unordered, and min/max of it depend
    on argument order, so comparisons would fold to wrong constants."""
    return (-math.inf, math.inf) if lo != lo or hi != hi else (lo, hi)


def _mm_const(u: UOp) -> tuple[ConstType, ConstType]:
    v = u.arg.value
    return _ordered(v, v)


def _mm_add(u: UOp) -> tuple[ConstType, ConstType]:
    (a, A), (b, B) = u.src[0].min_max, u.src[1].min_max
    dt = u.dtype
    return (a + b, A + B) if dt is _INDEX else _fits(dt, *_ordered(a + b, A + B))


def _mm_sub(u: UOp) -> tuple[ConstType, ConstType]:
    (a, A), (b, B) = u.src[0].min_max, u.src[1].min_max
    return _fits(u.dtype, *_ordered(a - B, A - b))


def _mm_cmplt(u: UOp) -> tuple[ConstType, ConstType]:
    (a, A), (b, B) = u.src[0].min_max, u.src[1].min_max
    return A < b, a < B


def _mm_cast(u: UOp) -> tuple[ConstType, ConstType]:
    dt = u.dtype
    lo, hi = u.src[0].min_max
    if dt.is_bool:
        return (bool(lo), bool(hi)) if lo == hi else (False, True)
    if dt.is_float:
        return cast_scalar(lo, dt), cast_scalar(hi, dt)
    if math.isinf(lo) or math.isinf(hi) or isinstance(lo, float) or isinstance(hi, float):
        return dtype_range(dt)
    return _fits(dt, int(lo), int(hi))


def _mm_where(u: UOp) -> tuple[ConstType, ConstType]:
    c, b, e = u.src
    if c.vmin == c.vmax:
        return b.min_max if c.vmin else e.min_max
    return min(b.vmin, e.vmin), max(b.vmax, e.vmax)


def _mm_cmpne(u: UOp) -> tuple[ConstType, ConstType]:
    (a, A), (b, B) = u.src[0].min_max, u.src[1].min_max
    if A < b or B < a:
        return True, True
    if a == A == b == B:
        return False, False
    return False, True


def _mm_bitwise(u: UOp) -> tuple[ConstType, ConstType]:
    (a, A), (b, B) = u.src[0].min_max, u.src[1].min_max
    if u.dtype.is_bool:
        if u.op is Ops.AND:
            return a and b, A and B
        if u.op is Ops.OR:
            return a or b, A or B
    elif u.op is Ops.AND and a >= 0 and b >= 0:
        return 0, min(A, B)
    return dtype_range(u.dtype)


def _mm_divmod(u: UOp) -> tuple[ConstType, ConstType]:
    """Floor IDIV/MOD by a positive divisor (constant or with a positive range)."""
    (a, A), (b, B) = u.src[0].min_max, u.src[1].min_max
    if not u.dtype.is_int or not isinstance(b, int) or b <= 0 or isinstance(B, float):
        return dtype_range(u.dtype)
    if b == B:
        if u.op is Ops.IDIV:
            return a // b, A // b
        if a >= 0 and A < b:
            return a, A
        if A - a < b and a // b == A // b:
            return a % b, A % b
        return 0, b - 1
    if u.op is Ops.IDIV and a >= 0:
        return a // B, A // b
    if u.op is Ops.MOD and a >= 0:
        return 0, min(A, B - 1)
    return dtype_range(u.dtype)


def _src0_mm(u: UOp) -> tuple[ConstType, ConstType]:
    return u.src[0].min_max


def _range_mm(u: UOp) -> tuple[ConstType, ConstType]:
    return 0, max(0, u.src[0].vmax - 1)


def _param_mm(u: UOp) -> tuple[ConstType, ConstType]:
    return (u.src[1].arg.value, u.src[2].arg.value) if len(u.src) >= 3 else dtype_range(u.dtype)


def _pad_mm(u: UOp) -> tuple[ConstType, ConstType]:
    lo, hi = u.src[0].min_max
    return min(lo, 0), max(hi, 0)


def _stack_mm(u: UOp) -> tuple[ConstType, ConstType]:
    if not u.src:
        return 0, 0
    return min(s.vmin for s in u.src), max(s.vmax for s in u.src)


def dtype_mm(u: UOp) -> tuple[ConstType, ConstType]:
    return dtype_range(u.dtype) if u.dtype is not dtypes.void else (0, 0)


MIN_MAX_RULES: dict[Ops, Callable[[UOp], tuple[ConstType, ConstType]]] = {
    **{op: _src0_mm for op in GroupOp.Movement - {Ops.BITCAST, Ops.STACK, Ops.INDEX, Ops.PAD}},
    **{op: _src0_mm for op in GroupOp.Marker | {Ops.INDEX, Ops.AFTER, Ops.LOAD}},
    Ops.CONST: _mm_const,
    Ops.PARAM: _param_mm,
    Ops.RANGE: _range_mm,
    Ops.SPECIAL: _range_mm,
    Ops.PAD: _pad_mm,
    Ops.STACK: _stack_mm,
    Ops.CAST: _mm_cast,
    Ops.WHERE: _mm_where,
    Ops.NEG: lambda u: _fits(u.dtype, -u.src[0].vmax, -u.src[0].vmin),
    Ops.NOT: lambda u: (not u.src[0].vmax, not u.src[0].vmin),
    Ops.ADD: _mm_add,
    Ops.SUB: _mm_sub,
    Ops.MUL: lambda u: _fits(u.dtype, *_mul_range(u.src[0].min_max, u.src[1].min_max)),
    Ops.MAX: lambda u: (max(u.src[0].vmin, u.src[1].vmin), max(u.src[0].vmax, u.src[1].vmax)),
    Ops.CMPLT: _mm_cmplt,
    Ops.CMPNE: _mm_cmpne,
    Ops.AND: _mm_bitwise,
    Ops.OR: _mm_bitwise,
    Ops.IDIV: _mm_divmod,
    Ops.MOD: _mm_divmod,
}


def min_max_of(u: UOp) -> tuple[ConstType, ConstType]:
    return MIN_MAX_RULES.get(u.op, dtype_mm)(u)
