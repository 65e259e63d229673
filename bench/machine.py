"""What this machine's memory delivers right now: hand-written C for the suite's memory-bound cases.

The machine is a VM whose DRAM bandwidth moves by 2x from minute to minute (neighbours on the host), so a GB/s
figure alone does not say how close a kernel is to the limit. These references do the same traffic as the
suite's elementwise and sum cases with the best plain C we know (vectors of the machine's register width,
non-temporal stores, loads prefetched with the non-temporal hint so the stream does not evict the caches, four
accumulators), on both cores through unigrad's worker pool, on buffers from the same allocator (huge pages): the
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
#if defined(__AVX512F__) || !defined(__AVX__)
#define LANES 16
#else
#define LANES 8
#endif
typedef float vf __attribute__((vector_size(LANES * 4)));
typedef int vi __attribute__((vector_size(LANES * 4)));
#if defined(__clang__)
#define NT(p, v) __builtin_nontemporal_store((v), (vf *)(p))
#elif defined(__AVX512F__)
typedef long long v8di __attribute__((vector_size(64)));
#define NT(p, v) __builtin_ia32_movntdq512((v8di *)(p), (v8di)(v))
#elif defined(__AVX__)
typedef long long v4di __attribute__((vector_size(32)));
#define NT(p, v) __builtin_ia32_movntdq256((v4di *)(p), (v4di)(v))
#else
#define NT(p, v) (*(vf *)(p) = (v))
#endif
#if LANES == 16
#define PF(p) __builtin_prefetch((const char *)(p) + 4096, 0, 0)
#else
#define PF(p) ((void)0) /* 32-byte vectors: prefetching each one (two per line) was slower than none on Zen 3 */
#endif

/* out = max(a * b + c, 0) * 0.5 + a: three streams in, one out */
void stream_entry(void **bufs, long long *vars, long long core) {
  float *out = bufs[0], *a = bufs[1], *b = bufs[2], *c = bufs[3];
  long long per = vars[0] / vars[1], lo = core * per, hi = lo + per;
  for (long long i = lo; i < hi; i += LANES) {
    PF(a + i); PF(b + i); PF(c + i);
    vf va = *(vf *)(a + i), x = va * *(vf *)(b + i) + *(vf *)(c + i);
    x = (vf)((vi)(x > 0) & (vi)x) * 0.5f + va;
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
  vf s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0};
  for (long long i = lo; i < hi; i += 4 * LANES) {
    PF(a + i); PF(a + i + LANES); PF(a + i + 2 * LANES); PF(a + i + 3 * LANES);
    s0 += *(vf *)(a + i); s1 += *(vf *)(a + i + LANES); s2 += *(vf *)(a + i + 2 * LANES);
    s3 += *(vf *)(a + i + 3 * LANES);
  }
  s0 += s1 + s2 + s3;
  float r = 0;
  for (int j = 0; j < LANES; j++) r += s0[j];
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
