"""Verifiers: what a graph may contain at each stage boundary, with errors that say what is wrong.

verify_tensor_graph (tensor level, from tensor.py), verify_kernel (after rangeify: scalar math on RANGEs,
no movement ops), verify_expanded (after expand: no REDUCE), verify_linear (after linearize: sources
before users, RANGE/END balanced). Each raises SpecError naming the op, the operand, what was expected
and what was found. With SPEC=1 every tensor op and every pipeline stage is checked as it is built.
"""

from __future__ import annotations

from collections.abc import Callable

from unigrad.dtype import DType, dtypes
from unigrad.ir.args import ConstArg, ReduceArg
from unigrad.ir.ops import GroupOp, Ops
from unigrad.ir.props import prod
from unigrad.ir.uop import UOp


class SpecError(ValueError):
    """A malformed graph: which op, which source, what was expected, what was found."""


def _fail(u: UOp, what: str, expected: str, found: object) -> None:
    raise SpecError(f"{u.op.name}: {what}: expected {expected}, found {found}")


# number of sources per op: (min, max); None = unbounded
SRC_COUNT: dict[Ops, tuple[int, int | None]] = {
    **{op: (1, 1) for op in GroupOp.Unary | GroupOp.DecomposedUnary},
    **{op: (2, 2) for op in GroupOp.Binary | GroupOp.DecomposedBinary},
    Ops.WHERE: (3, 3),
    Ops.MULACC: (3, 3),
    Ops.CONST: (0, 0),
    Ops.BUFFER: (1, 1),
    Ops.PARAM: (1, 4),
    Ops.RESHAPE: (2, 2),
    Ops.EXPAND: (2, 2),
    Ops.PAD: (3, 3),
    Ops.SHRINK: (3, 3),
    Ops.PERMUTE: (1, 1),
    Ops.FLIP: (1, 1),
    Ops.BITCAST: (1, 1),
    Ops.REPLICATED: (1, 1),
    Ops.REDUCE: (1, None),
    Ops.LOAD: (1, 3),
    Ops.STORE: (2, 3),
    Ops.RANGE: (1, 1),
    Ops.END: (2, 2),
    Ops.IF: (1, 1),
    Ops.ENDIF: (2, None),
    Ops.SPECIAL: (1, 1),
    Ops.WMMA: (3, 3),
    Ops.BARRIER: (1, None),
    Ops.AFTER: (1, None),
    Ops.GETTUPLE: (1, 1),
    Ops.FUNCTION: (1, None),
    Ops.CALL: (1, None),
    Ops.INDEX: (1, None),
    Ops.DETACH: (1, 1),
    Ops.CONTIGUOUS: (1, 1),
    Ops.CONTIGUOUSBACKWARD: (1, 1),
}


def _check_src_count(u: UOp) -> None:
    lo, hi = SRC_COUNT.get(u.op, (0, None))
    n = len(u.src)
    if n < lo or (hi is not None and n > hi):
        _fail(u, "number of sources", f"{lo}" if lo == hi else f"{lo}..{hi if hi is not None else 'any'}", n)


def _int_dims(shape: tuple) -> bool:
    return all(isinstance(s, int) for s in shape)


# ---------------------------------------------------------------- tensor-level checks per op


def _check_elementwise(u: UOp) -> None:
    shapes = [s.shape for s in u.src]
    for i, s in enumerate(u.src[1:], 1):
        if s.shape != shapes[0]:
            _fail(u, f"shape of src[{i}]", f"{shapes[0]} (elementwise sources must match)", s.shape)
    if u.op is Ops.WHERE:
        if u.src[0].dtype is not dtypes.bool:
            _fail(u, "dtype of src[0] (condition)", "bool", u.src[0].dtype)
        if u.src[1].dtype != u.src[2].dtype:
            _fail(u, "dtype of src[2]", f"{u.src[1].dtype} (same as src[1])", u.src[2].dtype)
        return
    if u.op in (Ops.CAST, Ops.BITCAST):
        if not isinstance(u.arg, DType):
            _fail(u, "arg", "a DType", u.arg)
        return
    for i, s in enumerate(u.src[1:], 1):
        if s.dtype != u.src[0].dtype:
            _fail(u, f"dtype of src[{i}]", f"{u.src[0].dtype} (same as src[0])", s.dtype)
    if u.op in (Ops.XOR, Ops.OR, Ops.AND, Ops.SHL, Ops.SHR) and u.src[0].dtype.is_float:
        _fail(u, "dtype of src[0]", "an int or bool dtype (bitwise op)", u.src[0].dtype)


def _check_reshape(u: UOp) -> None:
    old, new = u.src[0].shape, u.shape
    if _int_dims(old) and _int_dims(new) and prod(old) != prod(new):
        _fail(u, "element count of the new shape", f"{prod(old)} (from {old})", f"{prod(new)} (shape {new})")


def _check_expand(u: UOp) -> None:
    old, new = u.src[0].shape, u.shape
    if len(old) != len(new):
        _fail(u, "number of dims", f"{len(old)} (same as the source {old})", f"{len(new)} (shape {new})")
    for k, (a, b) in enumerate(zip(old, new)):
        if a != b and a != 1:
            _fail(u, f"axis {k}", f"size 1 or {b} in the source (only size-1 axes expand)", f"{a} (source {old})")


def _check_pad_shrink(u: UOp) -> None:
    old, offs, new = u.src[0].shape, u.src[1].as_shape, u.shape
    if not (len(old) == len(offs) == len(new)):
        _fail(u, "number of dims of offsets/new shape", f"{len(old)}", f"{len(offs)}/{len(new)}")
    for k, (o, a, b) in enumerate(zip(offs, old, new)):
        if not all(isinstance(v, int) for v in (o, a, b)):
            continue
        if u.op is Ops.PAD and (o < 0 or o + a > b):
            _fail(u, f"axis {k}", f"0 <= before and before+{a} <= {b}", f"before={o}")
        if u.op is Ops.SHRINK and (o < 0 or o + b > a):
            _fail(u, f"axis {k}", f"0 <= offset and offset+{b} <= {a}", f"offset={o}")


def _check_permute(u: UOp) -> None:
    n = len(u.src[0].shape)
    if sorted(u.arg) != list(range(n)):
        _fail(u, "arg", f"a permutation of range({n})", u.arg)


def _check_flip(u: UOp) -> None:
    if len(u.arg) != len(u.src[0].shape):
        _fail(u, "arg", f"{len(u.src[0].shape)} bools", u.arg)


def _check_bitcast(u: UOp) -> None:
    if not isinstance(u.arg, DType) or u.arg.itemsize != u.src[0].dtype.itemsize:
        want = f"a dtype of itemsize {u.src[0].dtype.itemsize} (same bytes as {u.src[0].dtype})"
        _fail(u, "arg", want, u.arg)


def _check_reduce(u: UOp) -> None:
    if not isinstance(u.arg, ReduceArg) or u.arg.op not in (Ops.ADD, Ops.MAX, Ops.MUL):
        _fail(u, "arg", "ReduceArg with op ADD, MAX or MUL", u.arg)
    n = len(u.src[0].shape)
    if len(u.src) == 1 and any(not 0 <= a < n for a in u.arg.axes):
        _fail(u, "axes", f"axes in [0, {n})", u.arg.axes)


def _check_const(u: UOp) -> None:
    if not isinstance(u.arg, ConstArg):
        _fail(u, "arg", "ConstArg(value, dtype)", u.arg)


TENSOR_CHECKS: dict[Ops, Callable[[UOp], None]] = {
    **{op: _check_elementwise for op in GroupOp.ALU},
    Ops.RESHAPE: _check_reshape,
    Ops.EXPAND: _check_expand,
    Ops.PAD: _check_pad_shrink,
    Ops.SHRINK: _check_pad_shrink,
    Ops.PERMUTE: _check_permute,
    Ops.FLIP: _check_flip,
    Ops.BITCAST: _check_bitcast,
    Ops.REDUCE: _check_reduce,
    Ops.CONST: _check_const,
}


def verify_tensor_op(u: UOp) -> None:
    """Check one tensor-level node against its sources."""
    _check_src_count(u)
    if (check := TENSOR_CHECKS.get(u.op)) is not None:
        check(u)


def verify_tensor_graph(root: UOp) -> None:
    for u in root.toposort():
        verify_tensor_op(u)


# ---------------------------------------------------------------- callify


def verify_function(fn: UOp) -> None:
    """After callify: FUNCTION(TUPLE(body...), args...) whose body reaches its buffers only through PARAM(k),
    k < number of buffer args; the args are BUFFERs (maybe after a kernel) or bound Variables."""
    if fn.op is not Ops.FUNCTION or not fn.src or fn.src[0].op is not Ops.TUPLE:
        raise SpecError(f"callify: expected FUNCTION(TUPLE(...), args...), found {fn.op.name}")
    n_buffers = sum(1 for a in fn.src[1:] if a.op is not Ops.PARAM)
    for i, a in enumerate(fn.src[1:]):
        ok = a.op is Ops.BUFFER or (a.op is Ops.AFTER and a.src[0].op is Ops.BUFFER) or a.op is Ops.PARAM
        if not ok:
            _fail(fn, f"arg {i}", "a BUFFER, AFTER(BUFFER, ...) or a bound Variable", a.op.name)
    for u in fn.src[0].toposort():
        if u.op in (Ops.BUFFER, Ops.AFTER):
            raise SpecError(f"{u.op.name}: found in a callified body; buffers must be PARAM placeholders")
        if u.op is Ops.PARAM and u.arg.name is None and not 0 <= u.arg.slot < n_buffers:
            _fail(u, "slot", f"a slot in [0, {n_buffers})", u.arg.slot)


# ---------------------------------------------------------------- lowered stages

KERNEL_OPS = GroupOp.ALU | {Ops.SINK, Ops.END, Ops.STORE, Ops.INDEX, Ops.LOAD, Ops.RANGE, Ops.CONST, Ops.PARAM}
KERNEL_OPS = KERNEL_OPS | {Ops.REDUCE, Ops.STACK, Ops.BITCAST}
# ... and GROUPs: merge's (the stores of a kernel of several outputs), later expand's (the copies of an upcast body,
# the updates of an accumulator group)
KERNEL_OPS = KERNEL_OPS | {Ops.GROUP}
# ... and a GPU kernel's: SPECIAL indices, LOCAL arrays' BARRIERs (gpudims), IF blocks (gates_to_ifs); a tensor core's
# WMMA
EXPANDED_OPS = (KERNEL_OPS - {Ops.REDUCE}) | {Ops.AFTER, Ops.SPECIAL, Ops.BARRIER, Ops.IF, Ops.ENDIF, Ops.WMMA}


def _verify_lowered(sink: UOp, allowed: frozenset[Ops] | set[Ops], stage: str) -> None:
    if sink.op is not Ops.SINK:
        raise SpecError(f"{stage}: expected a SINK at the root, found {sink.op.name}")
    for u in sink.toposort(gate=lambda x: x.op is not Ops.PARAM):
        if u.op not in allowed:
            raise SpecError(f"{u.op.name}: not allowed after {stage} (movement/tensor ops must be gone)")
        _check_src_count(u)
        if u.op in GroupOp.ALU:
            for i, s in enumerate(u.src):
                if s.shape != ():
                    _fail(u, f"shape of src[{i}] after {stage}", "() (scalar)", s.shape)


def verify_kernel(sink: UOp) -> None:
    """After rangeify: SINK of END-closed STOREs over scalar math on RANGEs; no movement ops."""
    _verify_lowered(sink, KERNEL_OPS, "rangeify")


def verify_expanded(sink: UOp) -> None:
    """After expand: as verify_kernel, with REDUCE replaced by register accumulators."""
    _verify_lowered(sink, EXPANDED_OPS, "expand")


def verify_linear(linear: UOp) -> None:
    """After linearize: every source listed before its user; RANGE/END and IF/ENDIF properly nested."""
    if linear.op is not Ops.LINEAR:
        raise SpecError(f"linearize: expected LINEAR, found {linear.op.name}")
    seen: set[UOp] = set()
    open_ranges: list[UOp] = []
    for i, u in enumerate(linear.src):
        for s in u.src:
            if s not in seen and s.op is not Ops.STACK and u.op is not Ops.PARAM:
                raise SpecError(f"{u.op.name} at position {i}: source {s.op.name} is used before it is listed")
        if u.op in (Ops.RANGE, Ops.IF):
            open_ranges.append(u)
        elif u.op in (Ops.END, Ops.ENDIF):
            if not open_ranges or open_ranges[-1] is not u.src[1 if u.op is Ops.END else 0]:
                raise SpecError(f"{u.op.name} at position {i}: closes a scope that is not the innermost open one")
            open_ranges.pop()
        elif u.op is Ops.SPECIAL and not (isinstance(u.arg, str) and u.arg[:4] in ("gidx", "lidx")):
            _fail(u, "arg", "gidx<d> or lidx<d>", u.arg)
        elif u.op is Ops.BARRIER and any(x.op is Ops.IF for x in open_ranges):
            raise SpecError(
                f"BARRIER at position {i}: inside an IF block (work-items that skip it would never reach it)"
            )
        seen.add(u)
    if open_ranges:
        raise SpecError(f"LINEAR: {len(open_ranges)} RANGE(s) never closed")


def verify_selected(sink: UOp, decompose: frozenset[Ops]) -> None:
    """After isel: no op of the target's decompose set is left (its renderer has no rule for it)."""
    for u in sink.toposort():
        if u.op in decompose:
            dt = u.dtype.name
            raise SpecError(f"{u.op.name}: not allowed after isel (in the renderer's decompose set), found on {dt}")
