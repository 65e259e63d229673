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
    align: int = 0  # bytes the buffer's start is aligned to, where less than its allocator's (a rebased slice)


@record(frozen=True, slots=True)
class FunctionArg:
    """A traced @function: its name, whether scheduling lowers it into its own kernels (precompile: an opaque
    CALL, never fused with its callers) or inlines its body (PARAM substitution), and its gradient rule when it
    has its own (`backward(out_grads, args) -> arg grads`: UOps, None for no gradient; autodiff calls it instead
    of differentiating the body)."""

    name: str
    precompile: bool = False
    backward: Callable[[tuple[UOp | None, ...], tuple[UOp, ...]], tuple[UOp | None, ...]] | None = None
    # the body is the same for every call at these input kinds (traced once per shape, dtype and device from Tensors
    # alone: function.call1's composites, tanh or sigmoid), so its constants never vary from one realize to the next
    fixed: bool = False

    def __repr__(self) -> str:
        """The same text in every process (the rule by whether there is one, not its address): a graph's structure
        keys the schedules saved on disk, and a call's rule decides gradients, never what the body computes."""
        rule = ", backward=<rule>" if self.backward is not None else ""
        fixed = ", fixed=True" if self.fixed else ""
        return f"FunctionArg(name={self.name!r}, precompile={self.precompile}{rule}{fixed})"


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
    """Arg of a kernel's SINK: its name (for DEBUG and profiling), the opts applied to it, and how many outputs it
    writes: PARAMs 0 .. outputs-1 (pipeline/merge.py merges kernels into one of several outputs)."""

    name: str
    opts: tuple = ()
    outputs: int = 1


# a term of a matrix coordinate in a tensor core's layout: (named dim, stride); a coordinate is the sum of its terms
Term = tuple[str, int]


@record(frozen=True, slots=True)
class Fragment:
    """One operand's share of a tensor core's matrix in each lane: `elements` are its register elements as named
    dims (element i is row-major over them, the first slowest); row and col are sums of (named dim, stride) terms
    over the lane dims (TensorCore.lanes) and the element dims."""

    elements: tuple[tuple[str, int], ...]
    row: tuple[Term, ...]
    col: tuple[Term, ...]

    @property
    def size(self) -> int:
        return math.prod(n for _, n in self.elements)


@record(frozen=True, slots=True)
class TensorCore:
    """A warp matrix multiply-accumulate D = A @ B + C over a (M, K) x (K, N) tile, as data (WMMA's config).

    `lanes` are the warp's lanes as named dims (lane = row-major over them, the first slowest); a, b, c say which
    element of which matrix each lane holds (c is also D's layout). The TC opt maps a kernel's M, N and K axes onto
    these dims (lane dims -> WARP ranges, C's element dims -> UPCAST, A's and B's other element dims -> UNROLL),
    the PYTHON device runs a WMMA by gathering the lanes' fragments into matrices through `coord`, and a renderer
    packs the fragments into its instruction's registers in element order."""

    name: str  # the instruction's shape, e.g. "m16n8k16"
    dims: tuple[int, int, int]  # (M, N, K)
    dtype_in: DType  # of A and B
    dtype_out: DType  # of C and D
    lanes: tuple[tuple[str, int], ...]
    a: Fragment
    b: Fragment
    c: Fragment

    @property
    def threads(self) -> int:
        return math.prod(n for _, n in self.lanes)

    def dim_values(self, frag: Fragment, lane: int, i: int) -> dict[str, int]:
        """The named dims' values of element i of `frag` in `lane`."""
        out: dict[str, int] = {}
        for dims, x in ((self.lanes, lane), (frag.elements, i)):
            for name, n in reversed(dims):
                out[name] = x % n
                x //= n
        return out

    def coord(self, frag: Fragment, lane: int, i: int) -> tuple[int, int]:
        """(row, col) in its matrix of element i of operand `frag` (self.a, self.b or self.c) held by `lane`."""
        v = self.dim_values(frag, lane, i)
        return sum(v[n] * s for n, s in frag.row), sum(v[n] * s for n, s in frag.col)


@record(frozen=True, slots=True)
class WMMAArg:
    """Arg of a WMMA UOp. After expand its sources are the lane's fragments: STACKs of tc.a.size A elements,
    tc.b.size B elements and tc.c.size accumulators; its value is the (tc.c.size,)-shaped D fragment. Between the TC
    opt and expand (`axes` set) its sources are scalar expressions over the ranges named by id in `axes`, one tuple
    per operand A, B, C in the order of that fragment's element dims: expand contracts each into its fragment (one
    copy per element) and the WMMA stands for the element of D its C ranges pick."""

    tc: TensorCore
    axes: tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]] | None = None
