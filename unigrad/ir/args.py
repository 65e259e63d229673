"""Typed payloads for UOp.arg: small frozen dataclasses, one per op that carries more than one value.

Ops with a single value use a documented scalar: CAST/BITCAST a DType, PERMUTE a tuple of axes, FLIP a
tuple of bools, GETTUPLE an int, SPECIAL/CUSTOM/SOURCE a str, BINARY bytes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import Enum

from unigrad.dtype import ConstType, DType
from unigrad.ir.ops import Ops


class AddrSpace(Enum):
    GLOBAL = "GLOBAL"
    LOCAL = "LOCAL"
    REG = "REG"

    def __repr__(self) -> str:
        return f"AddrSpace.{self.name}"


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


def _const_key(v: ConstType) -> object:
    """Equality key of a constant: keeps -0.0 apart from 0.0, makes nan equal to itself, 1 apart from True."""
    if isinstance(v, float):
        return ("f", "nan") if math.isnan(v) else ("f", v, math.copysign(1.0, v))
    return (type(v).__name__, v)


@dataclass(frozen=True, slots=True, eq=False)
class ConstArg:
    value: ConstType
    dtype: DType
    key: object = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", (_const_key(self.value), self.dtype))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ConstArg) and self.key == other.key

    def __hash__(self) -> int:
        return hash(self.key)


@dataclass(frozen=True, slots=True)
class ParamArg:
    """A placeholder: slot k of a FUNCTION/kernel, or a named Variable (slot -1, name set)."""

    slot: int
    dtype: DType
    device: str | tuple[str, ...] | None = None
    addrspace: AddrSpace | None = None
    name: str | None = None


@dataclass(frozen=True, slots=True)
class BufferArg:
    """A concrete buffer; `slot` is unique per buffer so equal-looking buffers stay distinct."""

    slot: int
    dtype: DType
    device: str | tuple[str, ...]
    addrspace: AddrSpace = AddrSpace.GLOBAL


@dataclass(frozen=True, slots=True)
class BufferViewArg:
    size: int
    dtype: DType
    offset: int


@dataclass(frozen=True, slots=True)
class LoadArg:
    """LOAD into a new anonymous buffer: on `device` (None = same device) in `addrspace`.

    Tensor level: contiguous() is LOAD(GLOBAL), to(device) is LOAD(device, GLOBAL).
    Kernel level: reading an INDEX into a register is LOAD(REG)."""

    device: str | tuple[str, ...] | None = None
    addrspace: AddrSpace = AddrSpace.GLOBAL


@dataclass(frozen=True, slots=True)
class ReduceArg:
    """REDUCE with `op` (ADD, MAX or MUL) over tensor `axes`; kernel-level REDUCEs name ranges in src instead."""

    op: Ops
    axes: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class RangeArg:
    """A loop: `id` keeps two loops of equal bound apart; `axis_type` says how it runs."""

    id: int
    axis_type: AxisType = AxisType.LOOP


@dataclass(frozen=True, slots=True)
class KernelInfo:
    """Arg of a kernel's SINK: its name (for DEBUG and profiling) and the opts applied to it."""

    name: str
    opts: tuple = ()
