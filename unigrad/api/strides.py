"""torch's memory-layout queries (stride, storage_offset, is_contiguous) for lazy tensors.

unigrad's kernels never see strides: a view is a chain of movement UOps over a buffer or a computed value. The
layout torch would report is read off that chain: a computed value (or a buffer) is row-major; PERMUTE permutes
the strides, EXPAND gives stride 0 to the broadcast dims, SHRINK moves the offset, and RESHAPE keeps a view when
torch's view() could (else torch's reshape copies: row-major again). FLIP and PAD make new tensors in torch (a
copy), so the layout after them is row-major too.

In: a Tensor. Out: its strides in elements and its offset, as torch reports them for the same ops.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from unigrad.ir.ops import Ops
from unigrad.ir.props import as_shape
from unigrad.ir.uop import UOp

if TYPE_CHECKING:
    from unigrad.tensor import Tensor

_MOVES = (Ops.RESHAPE, Ops.PERMUTE, Ops.EXPAND, Ops.SHRINK, Ops.FLIP, Ops.PAD)


def contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Row-major strides (torch gives a size-1 or size-0 dim the stride the next dim would take)."""
    out, step = [], 1
    for s in reversed(shape):
        out.append(step)
        step *= max(s, 1)
    return tuple(reversed(out))


def view_strides(shape: tuple[int, ...], strides: tuple[int, ...], new: tuple[int, ...]) -> tuple[int, ...] | None:
    """The strides of `new` viewing memory laid out as (shape, strides) without a copy, or None when no view
    exists: each run of dims that are contiguous with each other splits or merges into dims of `new`."""
    if 0 in shape:
        return contiguous_strides(new)
    out = [0] * len(new)
    nd = len(new) - 1
    base = strides[-1] if strides else 1  # the stride of the current run's innermost dim
    run_numel, view_numel = 1, 1
    for d in range(len(shape) - 1, -1, -1):
        run_numel *= shape[d]
        if d == 0 or (shape[d - 1] != 1 and strides[d - 1] != run_numel * base):  # the run ends at dim d
            while nd >= 0 and (view_numel < run_numel or new[nd] == 1):
                out[nd] = view_numel * base
                view_numel *= new[nd]
                nd -= 1
            if view_numel != run_numel:
                return None
            if d > 0:
                base, run_numel, view_numel = strides[d - 1], 1, 1
    return tuple(out) if nd == -1 else None


def _ints(shape: tuple) -> tuple[int, ...] | None:
    return shape if all(isinstance(s, int) for s in shape) else None


def layout(t: Tensor) -> tuple[tuple[int, ...], int]:
    """(strides, offset) of t as torch lays out the same ops; a symbolic shape counts as row-major."""
    chain: list[UOp] = []
    u = t.uop
    while u.op in _MOVES:
        chain.append(u)
        u = u.src[0]
    shape = _ints(u.shape)
    if shape is None:
        return contiguous_strides(tuple(1 for _ in t.shape)), 0
    strides, offset = contiguous_strides(shape), 0
    for m in reversed(chain):
        new = _ints(m.shape)
        if new is None:
            return contiguous_strides(tuple(1 for _ in t.shape)), 0
        if m.op is Ops.PERMUTE:
            strides = tuple(strides[i] for i in m.arg)
        elif m.op is Ops.EXPAND:
            strides = tuple(0 if a != b else s for a, b, s in zip(shape, new, strides))
        elif m.op is Ops.SHRINK:
            offset += sum(b * s for b, s in zip(as_shape(m.src[1]), strides) if isinstance(b, int))
        elif m.op is Ops.RESHAPE:
            viewed = view_strides(shape, strides, new)
            strides, offset = (viewed, offset) if viewed is not None else (contiguous_strides(new), 0)
        else:  # FLIP, PAD: a new tensor in torch
            strides, offset = contiguous_strides(new), 0
        shape = new
    return strides, offset


def is_contiguous(t: Tensor) -> bool:
    """True when t's layout is row-major (dims of size 1 may take any stride, as in torch)."""
    strides, _ = layout(t)
    want = contiguous_strides(tuple(s if isinstance(s, int) else 1 for s in t.shape))
    return all(a == b or s == 1 for a, b, s in zip(strides, want, t.shape)) or 0 in t.shape
