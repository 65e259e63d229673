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

import bisect
import heapq
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
    """Greedy, in order of first use: an intermediate takes the smallest free shared buffer of its kind that fits
    (of equal sizes, the one freed first), else a new one; a shared buffer is free again after the kernel that last
    takes its current intermediate (those freed at one kernel in the order they were taken). `intermediates`: each
    one's (kind, size); other keys in `steps` are left alone. O(n log n): the busy buffers in a heap by their last
    kernel, the free ones of each kind sorted by size (a 2270-kernel unrolled LSTM's 6k intermediates, many alive
    at once, took 0.6 s as lists scanned per intermediate)."""
    first: dict[Hashable, int] = {}
    last: dict[Hashable, int] = {}
    for i, keys in enumerate(steps):
        for k in keys:
            if k in intermediates:
                first.setdefault(k, i)
                last[k] = i
    shared: list[tuple[Hashable, int]] = []
    slot_of: dict[Hashable, int] = {}
    free: dict[Hashable, list[tuple[int, int, int]]] = {}  # kind -> sorted (size, when freed, shared buffer)
    busy: list[tuple[int, int, int]] = []  # heap of (last step, when taken, shared buffer)
    freed = taken = 0
    for k in sorted(first, key=first.__getitem__):
        start = first[k]
        done = []
        while busy and busy[0][0] < start:
            done.append(heapq.heappop(busy))
        for _, _, s in sorted(done, key=lambda x: x[1]):
            bisect.insort(free.setdefault(shared[s][0], []), (shared[s][1], freed, s))
            freed += 1
        kind, size = intermediates[k]
        pool = free.get(kind, [])
        if (i := bisect.bisect_left(pool, (size,))) < len(pool):
            s = pool.pop(i)[2]
        else:
            s = len(shared)
            shared.append((kind, size))
        slot_of[k] = s
        heapq.heappush(busy, (last[k], taken, s))
        taken += 1
    return MemoryPlan(tuple(shared), slot_of)
