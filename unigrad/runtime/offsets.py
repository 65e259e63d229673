"""Programs that read some buffers from an element offset on: the launch side of pipeline/rebase.py.

A rebased kernel's program is shared by every kernel that differs from it only in where its read-only buffers
start. Each of those runs it through an AtOffsets: the same call as a program's (buffers, Variable values), with
the buffers of the moved slots replaced by views that start at their offsets, and the values of its lifted counters
added to the Variables'. A device offers this when its allocator can address a buffer from a byte offset on
(Allocator.offset); the others keep one program per kernel.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from unigrad.dtype import DType


class BufferAt:
    """A buffer seen from an element offset on, as a program reads it: the device, the dtype, the size left and the
    device handle of its start (the base buffer is allocated when the view is made)."""

    __slots__ = ("base", "size", "handle")

    def __init__(self, base: Any, offset: int, allocator: Any) -> None:
        self.base = base
        self.size = base.size - offset
        self.handle = allocator.offset(base.handle, offset * base.dtype.itemsize)

    @property
    def device(self) -> str:
        return self.base.device  # type: ignore[no-any-return]

    @property
    def dtype(self) -> DType:
        return self.base.dtype  # type: ignore[no-any-return]

    @property
    def allocated(self) -> bool:
        return True

    def ensure_allocated(self) -> BufferAt:
        return self


class AtOffsets:
    """`program` run with buffer argument k read from element offsets[k] on (k in `offsets`) and the lifted
    counters' Variables at `values`."""

    def __init__(
        self, program: Any, offsets: tuple[tuple[int, int], ...], values: tuple[tuple[str, int], ...], allocator: Any
    ) -> None:
        self.program = program
        self.offsets = offsets
        self.values = dict(values)
        self.allocator = allocator

    def views(self, bufs: list[Any]) -> list[Any]:
        out = list(bufs)
        for slot, off in self.offsets:
            if out[slot] is not None:
                out[slot] = BufferAt(out[slot], off, self.allocator)
        return out

    def __call__(self, bufs: list[Any], var_vals: dict[str, int]) -> Any:
        return self.program(self.views(bufs), {**var_vals, **self.values} if self.values else var_vals)

    def prepare(
        self, bufs: list[Any], holes: list[tuple[int, int]]
    ) -> Callable[[list[Any], dict[str, int]], None] | None:
        """A replay call (TinyJit) as the program's own prepare makes it, on the views; None where it cannot serve
        (no prepare, or a moved slot filled from the inputs at each replay): the replay then calls this program."""
        moved = {slot for slot, _ in self.offsets}
        inner = getattr(self.program, "prepare", None)
        if inner is None or any(pos in moved for pos, _ in holes):
            return None
        call = inner(self.views(bufs), holes)
        if not self.values:
            return call  # type: ignore[no-any-return]
        values = self.values
        return lambda inputs, var_vals: call(inputs, {**var_vals, **values})
