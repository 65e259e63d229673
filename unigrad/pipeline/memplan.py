"""Register/Memory Plan for GLOBAL buffers: intermediates whose lifetimes do not overlap share one buffer.

In: a run plan, the kernels in order, each with the buffers (or placeholders) it takes, and which of them are
intermediates: made for the run, written by the kernel that first takes them, read by later kernels only, never
seen by the caller. Out: a MemoryPlan, the shared buffers as (kind, size) (kind: what must match to share, the
device and dtype) and the shared buffer of each intermediate.

Invariant: two intermediates on one shared buffer are never live at the same kernel: the first one's last kernel
runs before the second one's first kernel (a kernel that reads one intermediate and writes another never gets
the same memory for both). A shared buffer is at least as big as each intermediate on it.

Used twice: a cached schedule's intermediates share buffers on every realize of it (peak memory falls from the
sum of the intermediates to what is live at once, and a chain of layers reuses memory that is still in cache),
and TinyJit's replays share the buffers its capture created. REG storage is the C compiler's (its register
allocator), and CPU kernels take no LOCAL buffers: this stage plans the GLOBAL ones.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

from unigrad.helpers import record


@record(frozen=True)
class MemoryPlan:
    """shared[k]: (kind, size) of shared buffer k; slot_of: intermediate -> k."""

    shared: tuple[tuple[Hashable, int], ...]
    slot_of: dict[Hashable, int]


def first_written(steps: Sequence[Sequence[Hashable]], outputs: Sequence[int] | None = None) -> list[Hashable]:
    """The keys whose first kernel writes them (takes them among its first `outputs[i]` arguments, 1 when not
    given), in order of first use: the candidates for intermediates (a key read before it is written holds data
    from before the run)."""
    seen: set[Hashable] = set()
    out: list[Hashable] = []
    for i, keys in enumerate(steps):
        n = 1 if outputs is None else outputs[i]
        for pos, k in enumerate(keys):
            if k not in seen:
                seen.add(k)
                if pos < n:
                    out.append(k)
    return out


def plan_memory(steps: Sequence[Sequence[Hashable]], intermediates: dict[Hashable, tuple[Hashable, int]]) -> MemoryPlan:
    """Greedy, in order of first use: an intermediate takes the smallest free shared buffer of its kind that fits,
    else a new one; a shared buffer is free again after the kernel that last takes its current intermediate.
    `intermediates`: each one's (kind, size); other keys in `steps` are left alone."""
    first: dict[Hashable, int] = {}
    last: dict[Hashable, int] = {}
    for i, keys in enumerate(steps):
        for k in keys:
            if k in intermediates:
                first.setdefault(k, i)
                last[k] = i
    shared: list[tuple[Hashable, int]] = []
    slot_of: dict[Hashable, int] = {}
    free: list[int] = []
    busy: list[tuple[int, int]] = []  # (last step, shared buffer)
    for k in sorted(first, key=first.__getitem__):
        start = first[k]
        for end, s in [x for x in busy if x[0] < start]:
            busy.remove((end, s))
            free.append(s)
        kind, size = intermediates[k]
        fits = [s for s in free if shared[s][0] == kind and shared[s][1] >= size]
        if fits:
            s = min(fits, key=lambda s: shared[s][1])
            free.remove(s)
        else:
            s = len(shared)
            shared.append((kind, size))
        slot_of[k] = s
        busy.append((last[k], s))
    return MemoryPlan(tuple(shared), slot_of)
