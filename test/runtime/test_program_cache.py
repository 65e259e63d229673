"""The runtime's in-memory caches are bounded (issue 34): a process that realizes ever new kernels keeps at most
PROGRAM_CACHE programs loaded (their shared objects unmapped when dropped) and SCHEDULE_CACHE schedules, least recently
used out. Memory is measured with tracemalloc and /proc/self/maps, never timed; bench/memory.py measures 10k kernels."""

from __future__ import annotations

import gc
import os
import tracemalloc

import numpy as np
import pytest

from unigrad import Context, Tensor
from unigrad.helpers import GlobalCounters, LRUCache
from unigrad.runtime import realize as rt
from unigrad.runtime.ops_cpu import CPUProgram

BOUND_PER_KERNEL = 64 * (1 << 20) // 10_000  # the bound: 64 MiB over 10k distinct kernels


def test_lru_cache_drops_least_recently_used():
    limit = [3]
    cache: LRUCache[str, int] = LRUCache(lambda: limit[0])
    for i, k in enumerate("abc"):
        cache[k] = i
    assert cache.get("a") == 0  # a is now the most recently used
    cache["d"] = 3
    assert list(cache) == ["c", "a", "d"]  # b, the least recently used, went
    assert cache.get("b") is None and cache.get("b", -1) == -1
    limit[0] = 1  # the knob read at the next store
    cache["e"] = 4
    assert dict(cache) == {"e": 4}


def _mapped_kernels() -> int:
    """Shared objects of the CPU compiler's cache mapped into this process now."""
    with open("/proc/self/maps") as f:
        return len({line.split()[-1] for line in f if line.rstrip().endswith(".so") and "/cpu/" in line})


@pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="needs /proc to see mapped libraries")
def test_distinct_kernels_do_not_grow_memory(monkeypatch):
    monkeypatch.setattr(GlobalCounters, "LAUNCHED_HELD", 4)  # launches counted for global_ops hold no kernel long
    x_np = np.linspace(-1, 1, 64, dtype=np.float32)
    x = Tensor(x_np).realize()

    def run(n: int) -> None:  # a kernel of its own per n: y*y or y+1 by each bit of n (same shapes and constants)
        y, want = x, x_np
        for bit in range(6):
            y, want = (y * y, want * want) if n >> bit & 1 else (y + 1, want + 1)
        np.testing.assert_allclose(y.sum().numpy(), want.sum(), rtol=1e-5)

    # programs and libraries other tests of this worker keep (a jitted function held by a module, say) are theirs
    kept_before = {id(o) for o in gc.get_objects() if type(o) is CPUProgram}
    tracemalloc.start()  # before the caches fill: what they drop later is counted as freed
    try:
        with Context(DEVICE="CPU", PROGRAM_CACHE=8, SCHEDULE_CACHE=8):
            for n in range(0, 34):  # the caches full
                run(n)
            gc.collect()
            before = tracemalloc.get_traced_memory()[0]
            for n in range(34, 64):  # 30 new kernels (a multiple of LAUNCHED_HELD + 1: as many held at both ends)
                run(n)
            gc.collect()
            grown = tracemalloc.get_traced_memory()[0] - before
            assert len(rt._program_cache) <= 8 and len(rt._schedule_cache) <= 8
    finally:
        tracemalloc.stop()
    # (type(): no lazy module attribute looked up)
    programs = sum(1 for o in gc.get_objects() if type(o) is CPUProgram and id(o) not in kept_before)
    assert programs <= 8 + 4 + 2, f"{programs} CPU programs alive"  # cached, held for global_ops, running
    mapped = _mapped_kernels() - len(kept_before)  # (the programs kept by others: at most one library each)
    assert mapped <= 8 + 4 + 2 + 1, "dropped programs' libraries still mapped"  # + the thread pool's
    assert grown <= 30 * BOUND_PER_KERNEL, f"{grown / 1024:.0f} KiB for 30 kernels"
