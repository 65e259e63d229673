"""Derived properties of a UOp: dtype, shape, device, addrspace, min_max, axis (spec: Derived Properties).

Each is a pure function of (op, src, arg), one table entry per op group, cached on the node by ir/uop.py.
Where the spec's table says "dtype range", min_max is tightened when that is provably sound (IDIV/MOD by
a positive constant, AND/OR on bools, PAD including its 0 fill) because index simplification needs it.
Device of an ALU op is the first source with a device (the spec's src[0].device when src[0] has one;
a CONST has none).
"""

from __future__ import annotations

import math
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


# ---------------------------------------------------------------- dtype


def dtype_of(u: UOp) -> DType:
    op = u.op
    if op in (Ops.BUFFER, Ops.PARAM, Ops.CONST, Ops.BUFFER_VIEW):
        return u.arg.dtype
    if op in (Ops.CAST, Ops.BITCAST):
        return u.arg
    if op in GroupOp.Comparison:
        return dtypes.bool
    if op is Ops.WHERE:
        return u.src[1].dtype
    if op in (Ops.RANGE, Ops.SPECIAL):
        return dtypes.index
    if op is Ops.BINARY:
        return dtypes.uint8
    if op is Ops.STACK:
        return u.src[0].dtype if u.src else dtypes.index
    if op is Ops.GETTUPLE:
        return _tuple_elem(u).dtype
    if op in (Ops.STORE, Ops.END, Ops.SINK, Ops.GROUP, Ops.LINEAR, Ops.TUPLE) or op in GroupOp.Codegen:
        return dtypes.void
    return u.src[0].dtype


def _tuple_elem(u: UOp) -> UOp:
    t = u.src[0]
    if t.op in (Ops.FUNCTION, Ops.CALL):
        t = t.src[0]
    return t.src[u.arg]


# ---------------------------------------------------------------- shape


def shape_of(u: UOp) -> Shape:
    op = u.op
    if op in (Ops.BUFFER, Ops.PARAM):
        return as_shape(u.src[0])
    if op in (Ops.RESHAPE, Ops.EXPAND):
        return as_shape(u.src[1])
    if op in (Ops.PAD, Ops.SHRINK):
        return as_shape(u.src[2])
    if op is Ops.PERMUTE:
        s = u.src[0].shape
        return tuple(s[i] for i in u.arg)
    if op is Ops.INDEX:
        return _index_shape(u)
    if op is Ops.STACK:
        return (len(u.src),) + (u.src[0].shape if u.src else ())
    if op is Ops.REDUCE:
        s = u.src[0].shape
        return tuple(1 if i in u.arg.axes else d for i, d in enumerate(s))
    if op is Ops.REPLICATED:
        s = u.src[0].shape
        return tuple(1 if i in u.arg else d for i, d in enumerate(s))
    if op is Ops.BUFFER_VIEW:
        return (u.arg.size,)
    if op is Ops.BINARY:
        return (len(u.arg),)
    if op is Ops.GETTUPLE:
        return _tuple_elem(u).shape
    if op in GroupOp.ALU and op is not Ops.CAST:
        if len(u.src) == 1:
            return u.src[0].shape
        return broadcast_shapes(*(s.shape for s in u.src))
    if op in (Ops.CAST, Ops.FLIP, Ops.BITCAST, Ops.LOAD, Ops.AFTER, Ops.FUNCTION, Ops.CALL) or op in GroupOp.Marker:
        return u.src[0].shape
    return ()


def _index_shape(u: UOp) -> Shape:
    base = u.src[0].shape
    idxs = [i for i in u.src[1:] if i.dtype is not dtypes.bool]  # a bool source is the validity, not an index
    out: list[Any] = []
    for i in idxs:
        out.extend(i.shape)
    return tuple(out) + tuple(base[len(idxs) :])


# ---------------------------------------------------------------- device / addrspace / axis


def device_of(u: UOp) -> Any:
    op = u.op
    if op in (Ops.BUFFER, Ops.PARAM):
        return u.arg.device
    if op is Ops.CONST or op is Ops.RANGE:
        return None
    if op is Ops.LOAD and u.arg is not None and u.arg.device is not None:
        return u.arg.device
    if op in (Ops.FUNCTION, Ops.CALL):
        return u.src[1].device if len(u.src) > 1 else None
    for s in u.src:
        if (d := s.device) is not None:
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
    if op is Ops.PERMUTE:
        return None if a is None else u.arg.index(a)
    if op is Ops.RESHAPE:
        return None if a is None else _reshape_axis(u.src[0].shape, u.shape, a)
    if op is Ops.REDUCE:
        return None if a in u.arg.axes else a
    if op is Ops.REPLICATED:
        return None if a in u.arg else a
    if op in GroupOp.ALU:
        return next((s.axis for s in u.src if s.axis is not None), None)
    if op in GroupOp.Movement or op in (Ops.AFTER,) or op in GroupOp.Marker:
        return a
    return None


def _reshape_axis(old: Shape, new: Shape, axis: int) -> int | None:
    before = prod(old[:axis])
    for k in range(len(new)):
        if prod(new[:k]) == before and new[k] != 1:
            return k
    return None


# ---------------------------------------------------------------- min_max


def dtype_range(dt: DType) -> tuple[ConstType, ConstType]:
    return dt.min, dt.max


def _fits(dt: DType, lo: ConstType, hi: ConstType) -> tuple[ConstType, ConstType]:
    """Clamp to the dtype's range; ints that may overflow get the whole range (C wraps)."""
    if dt.is_float:
        return lo, hi
    if lo < dt.min or hi > dt.max:
        return dtype_range(dt)
    return lo, hi


def _mul_range(a: tuple, b: tuple) -> tuple:
    vals = [x * y for x in a for y in b if not (math.isinf(x) or math.isinf(y)) or (x != 0 and y != 0)]
    if len(vals) < 4:  # 0*inf is nan: the product can be anything in float
        return -math.inf, math.inf
    return min(vals), max(vals)


def _floordiv(a: Any, b: Any) -> Any:
    return a // b


def min_max_of(u: UOp) -> tuple[ConstType, ConstType]:
    op, dt = u.op, u.dtype
    if op is Ops.CONST:
        return u.arg.value, u.arg.value
    if op is Ops.PARAM:
        if len(u.src) >= 3:
            return u.src[1].arg.value, u.src[2].arg.value
        return dtype_range(dt)
    if op is Ops.RANGE or op is Ops.SPECIAL:
        return 0, max(0, u.src[0].vmax - 1)
    if op is Ops.PAD:
        lo, hi = u.src[0].min_max
        return min(lo, 0), max(hi, 0)
    if op in GroupOp.Movement and op not in (Ops.BITCAST, Ops.STACK, Ops.INDEX):
        return u.src[0].min_max
    if op is Ops.STACK:
        if not u.src:
            return 0, 0
        return min(s.vmin for s in u.src), max(s.vmax for s in u.src)
    if op in (Ops.INDEX, Ops.AFTER, Ops.LOAD) or op in GroupOp.Marker:
        return u.src[0].min_max
    if op is Ops.CAST:
        lo, hi = u.src[0].min_max
        if dt.is_float or dt.is_bool:
            return (cast_scalar(lo, dt), cast_scalar(hi, dt)) if not dt.is_bool else (False, True)
        if math.isinf(lo) or math.isinf(hi) or isinstance(lo, float):
            return dtype_range(dt)
        return _fits(dt, int(lo), int(hi))
    if op in GroupOp.ALU:
        return _alu_min_max(u)
    return dtype_range(dt) if dt is not dtypes.void else (0, 0)


def _alu_min_max(u: UOp) -> tuple[ConstType, ConstType]:
    op, dt = u.op, u.dtype
    srcs = u.src
    if op is Ops.WHERE:
        c, b, e = srcs
        if c.vmin == c.vmax:
            return b.min_max if c.vmin else e.min_max
        return min(b.vmin, e.vmin), max(b.vmax, e.vmax)
    (a, A) = srcs[0].min_max
    if len(srcs) == 1:
        if op is Ops.NEG:
            return _fits(dt, -A, -a)
        if op is Ops.NOT:
            return (not A, not a)
        return dtype_range(dt)
    (b, B) = srcs[1].min_max
    if op is Ops.ADD:
        return _fits(dt, a + b, A + B)
    if op is Ops.SUB:
        return _fits(dt, a - B, A - b)
    if op is Ops.MUL:
        return _fits(dt, *_mul_range((a, A), (b, B)))
    if op is Ops.MAX:
        return max(a, b), max(A, B)
    if op is Ops.CMPLT:
        return A < b, a < B
    if op is Ops.CMPNE:
        if A < b or B < a:
            return True, True
        if a == A == b == B:
            return False, False
        return False, True
    if dt.is_bool and op in (Ops.AND, Ops.OR):
        return (a and b, A and B) if op is Ops.AND else (a or b, A or B)
    if dt.is_int and op in (Ops.IDIV, Ops.MOD) and b == B and isinstance(b, int) and b > 0:
        if op is Ops.IDIV:
            return _floordiv(a, b), _floordiv(A, b)
        if a >= 0 and A < b:
            return a, A
        if A - a < b and _floordiv(a, b) == _floordiv(A, b):
            return a % b, A % b
        return 0, b - 1
    if dt.is_int and op is Ops.IDIV and b > 0 and a >= 0 and not math.isinf(B):
        return _floordiv(a, B), _floordiv(A, b)
    if dt.is_int and op is Ops.AND and a >= 0 and b >= 0:
        return 0, min(A, B)
    return dtype_range(dt)
