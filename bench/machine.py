"""What this machine's memory delivers right now: hand-written C for the suite's memory-bound cases.

The machine is a VM whose DRAM bandwidth moves by 2x from minute to minute (neighbours on the host), so a GB/s
figure alone does not say how close a kernel is to the limit. These references do the same traffic as the
suite's elementwise and sum cases with the best plain C we know (16-float vectors, non-temporal stores, loads
prefetched with the non-temporal hint so the stream does not evict the caches, four accumulators), on both cores through unigrad's worker pool, on buffers from the same allocator (huge pages): the
suite times them right beside unigrad and reports unigrad's share of them.

In: float32 arrays of n elements (n a multiple of CHUNKS * 64). Out: medians through bench.suite.measure.
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from unigrad.dtype import dtypes
from unigrad.runtime import Device
from unigrad.runtime.cpu_pool import n_threads, pool
from unigrad.runtime.ops_cpu import CCompiler

CHUNKS = 32  # chunks per call, taken by the pool's threads in turn (as unigrad's THREAD axis does)

SRC = r"""
typedef float v16 __attribute__((vector_size(64)));
typedef int i16 __attribute__((vector_size(64)));
#if defined(__clang__)
#define NT(p, v) __builtin_nontemporal_store((v), (v16 *)(p))
#elif defined(__AVX512F__)
typedef long long v8di __attribute__((vector_size(64)));
#define NT(p, v) __builtin_ia32_movntdq512((v8di *)(p), (v8di)(v))
#else
#define NT(p, v) (*(v16 *)(p) = (v))
#endif
#define PF(p) __builtin_prefetch((const char *)(p) + 4096, 0, 0)

/* out = max(a * b + c, 0) * 0.5 + a: three streams in, one out */
void stream_entry(void **bufs, long long *vars, long long core) {
  float *out = bufs[0], *a = bufs[1], *b = bufs[2], *c = bufs[3];
  long long per = vars[0] / vars[1], lo = core * per, hi = lo + per;
  for (long long i = lo; i < hi; i += 16) {
    PF(a + i); PF(b + i); PF(c + i);
    v16 va = *(v16 *)(a + i), x = va * *(v16 *)(b + i) + *(v16 *)(c + i);
    x = (v16)((i16)(x > 0) & (i16)x) * 0.5f + va;
    NT(out + i, x);
  }
#if defined(__x86_64__)
  __builtin_ia32_sfence();
#endif
}

/* out[core] = sum of the core's chunk of a */
void sum_entry(void **bufs, long long *vars, long long core) {
  float *out = bufs[0], *a = bufs[1];
  long long per = vars[0] / vars[1], lo = core * per, hi = lo + per;
  v16 s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0};
  for (long long i = lo; i < hi; i += 64) {
    PF(a + i); PF(a + i + 16); PF(a + i + 32); PF(a + i + 48);
    s0 += *(v16 *)(a + i); s1 += *(v16 *)(a + i + 16); s2 += *(v16 *)(a + i + 32); s3 += *(v16 *)(a + i + 48);
  }
  s0 += s1 + s2 + s3;
  float r = 0;
  for (int j = 0; j < 16; j++) r += s0[j];
  out[core] = r;
}
"""


@functools.cache
def _lib() -> ctypes.CDLL:
    return ctypes.CDLL(str(CCompiler().compile_to_path(SRC)))


def _buffer(x: np.ndarray | int) -> Any:
    """A CPU allocator handle (keep-alive, address) holding x, or n uninitialized float32s."""
    alloc = Device["CPU"].allocator
    n = x if isinstance(x, int) else x.size
    h = alloc.alloc(n * 4, dtypes.float32, n)
    if not isinstance(x, int):
        alloc.copyin(h, np.ascontiguousarray(x, dtype=np.float32))
    return h


class _Run:
    """One call of a reference kernel on the pool: keeps the buffers its pointers point into alive."""

    def __init__(self, entry: str, handles: list[Any], n: int) -> None:
        if n % (CHUNKS * 64):
            raise ValueError(f"bench.machine: n={n} must be a multiple of {CHUNKS * 64}")
        self.handles = handles
        self.ptrs = (ctypes.c_void_p * len(handles))(*(h[1] for h in handles))
        self.vals = (ctypes.c_longlong * 2)(n, CHUNKS)
        self.fn = ctypes.cast(getattr(_lib(), entry), ctypes.c_void_p)
        self.pool = pool(n_threads())

    def __call__(self) -> None:
        self.pool.pool_run(self.fn, self.ptrs, self.vals, CHUNKS)


def stream(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> tuple[Callable[[], None], Callable[[], np.ndarray]]:
    """(run, result): run() computes max(a * b + c, 0) * 0.5 + a in hand-written C; result() copies it out."""
    hs = [_buffer(a.size), _buffer(a), _buffer(b), _buffer(c)]
    return _Run("stream_entry", hs, a.size), lambda: Device["CPU"].allocator.copyout(hs[0], dtypes.float32, a.size)


def read_sum(a: np.ndarray) -> tuple[Callable[[], None], Callable[[], np.ndarray]]:
    """(run, partials): run() sums each of the CHUNKS chunks of a in hand-written C; partials() copies them out."""
    hs = [_buffer(CHUNKS), _buffer(a)]
    return _Run("sum_entry", hs, a.size), lambda: Device["CPU"].allocator.copyout(hs[0], dtypes.float32, CHUNKS)
