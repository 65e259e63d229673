"""Typed payloads for UOp.arg: small frozen records (helpers.record), one per op that carries more than one value.

Ops with a single value use a documented scalar: CAST/BITCAST a DType, PERMUTE a tuple of axes, FLIP a
tuple of bools, GETTUPLE an int, SPECIAL/CUSTOM/SOURCE a str, BINARY bytes.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from enum import Enum
from typing import TYPE_CHECKING

from unigrad.dtype import ConstType, DType
from unigrad.helpers import record
from unigrad.ir.ops import Ops

if TYPE_CHECKING:
    from unigrad.ir.uop import UOp


class AddrSpace(Enum):
    GLOBAL = "GLOBAL"
    LOCAL = "LOCAL"
    REG = "REG"

    def __repr__(self) -> str:
        return f"AddrSpace.{self.name}"

    __hash__ = object.__hash__  # identity hash in C (Enum's hashes the name in Python): in every PARAM's arg


class AxisType(Enum):
    """Kind of a RANGE (spec: Kernel Optimizations); the letter is what DEBUG=3 prints."""

    GLOBAL = "g"
    LOCAL = "l"
    WARP = "w"
    THREAD = "t"
    LOOP = "L"
    REDUCE = "R"
    GROUP_REDUCE = "G"
    UPCAST = "u"
    UNROLL = "r"

    def __repr__(self) -> str:
        return f"AxisType.{self.name}"

    __hash__ = object.__hash__  # identity hash in C: in every RANGE's arg


_NAN = float("nan")


class ConstArg(tuple):
    """(value, dtype) of a CONST. A tuple so hashing and equality run in C (every node build hashes its arg).

    -0.0 and 0.0 compare equal in Python, so a third field keeps them apart; every nan becomes one object,
    so nan constants dedupe (tuple equality checks identity first)."""

    __slots__ = ()

    def __new__(cls, value: ConstType, dtype: DType) -> ConstArg:
        neg_zero = False
        if isinstance(value, float):
            if value != value:
                value = _NAN
            elif value == 0.0:
                neg_zero = math.copysign(1.0, value) < 0
        return tuple.__new__(cls, (value, dtype, neg_zero))

    value = property(operator.itemgetter(0), doc="the Python value (bool, int or float)")
    dtype = property(operator.itemgetter(1), doc="the DType")

    def __repr__(self) -> str:
        return f"ConstArg(value={self[0]!r}, dtype={self[1]!r})"

    def __getnewargs__(self) -> tuple:
        return (self[0], self[1])


@record(frozen=True, slots=True)
class ParamArg:
    """A placeholder: slot k of a FUNCTION/kernel, or a named Variable (slot -1, name set)."""

    slot: int
    dtype: DType
    device: str | tuple[str, ...] | None = None
    addrspace: AddrSpace | None = None
    name: str | None = None


@record(frozen=True, slots=True)
class FunctionArg:
    """A traced @function: its name, whether scheduling lowers it into its own kernels (precompile: an opaque
    CALL, never fused with its callers) or inlines its body (PARAM substitution), and its gradient rule when it
    has its own (`backward(out_grads, args) -> arg grads`: UOps, None for no gradient; autodiff calls it instead
    of differentiating the body)."""

    name: str
    precompile: bool = False
    backward: Callable[[tuple[UOp | None, ...], tuple[UOp, ...]], tuple[UOp | None, ...]] | None = None


@record(frozen=True, slots=True)
class BufferArg:
    """A concrete buffer; `slot` is unique per buffer so equal-looking buffers stay distinct."""

    slot: int
    dtype: DType
    device: str | tuple[str, ...]
    addrspace: AddrSpace = AddrSpace.GLOBAL


@record(frozen=True, slots=True)
class BufferViewArg:
    size: int
    dtype: DType
    offset: int


@record(frozen=True, slots=True)
class LoadArg:
    """LOAD into a new anonymous buffer: on `device` (None = same device) in `addrspace`.

    Tensor level: contiguous() is LOAD(GLOBAL), to(device) is LOAD(device, GLOBAL).
    Kernel level: reading an INDEX into a register is LOAD(REG)."""

    device: str | tuple[str, ...] | None = None
    addrspace: AddrSpace = AddrSpace.GLOBAL


@record(frozen=True, slots=True)
class ReduceArg:
    """REDUCE with `op` (ADD, MAX or MUL) over tensor `axes`; kernel-level REDUCEs name ranges in src instead."""

    op: Ops
    axes: tuple[int, ...] = ()


@record(frozen=True, slots=True)
class RangeArg:
    """A loop: `id` keeps two loops of equal bound apart; `axis_type` says how it runs."""

    id: int
    axis_type: AxisType = AxisType.LOOP


@record(frozen=True, slots=True)
class KernelInfo:
    """Arg of a kernel's SINK: its name (for DEBUG and profiling) and the opts applied to it."""

    name: str
    opts: tuple = ()
