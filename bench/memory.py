"""Memory of a process that realizes ever new kernels: resident memory grown over N distinct kernels.

The runtime keeps at most PROGRAM_CACHE loaded programs and SCHEDULE_CACHE schedules (least recently used out; a
dropped CPU program's shared object is unmapped), so a process that keeps making new kernels stays bounded. Issue
34's target: at most 64 MiB grown over 10k distinct kernels. Kernel n applies y*y or y*0.5 by each bit of n to the
same tensor: the same shapes and constants, a structure of its own. Nothing is timed but the total.

  python -m bench memory                   # 10000 kernels (a cold compile cache: about a minute per 1000)
  python -m bench memory --kernels=2000    # fewer (memory grows until the caches are full, then stays)
  PROGRAM_CACHE=100 SCHEDULE_CACHE=100 python -m bench memory --kernels=1000   # the plateau sooner
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import sys
import time
from typing import Any

import numpy as np

from unigrad import Tensor
from unigrad.runtime import realize as rt

TARGET_MIB = 64  # over 10k kernels: the caches (1024 programs and schedules by default) are full long before
WARMUP = 64  # kernels run before the first measure: the caches and the process's one-time imports settle


def resident_mib() -> float:
    """This process's resident memory now (Linux /proc), else its peak (getrusage)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / (1 << 20)
    except OSError:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak / (1 << 20) if sys.platform == "darwin" else peak / 1024


def kernel(x: Tensor, n: int, bits: int) -> Tensor:
    """A kernel of its own per n: y*y or y*0.5 by each of `bits` bits of n, summed."""
    y = x
    for bit in range(bits):
        y = y * y if n >> bit & 1 else y * 0.5
    return y.sum()


def measure(count: int) -> dict[str, Any]:
    """Realize WARMUP + count distinct kernels; resident memory before and after the `count`, programs built."""
    bits = max(1, (WARMUP + count - 1).bit_length())
    x = Tensor(np.linspace(-1, 1, 64, dtype=np.float32)).realize()
    for n in range(WARMUP):
        kernel(x, n, bits).numpy()
    gc.collect()
    before, built = resident_mib(), rt.stats.programs
    t0 = time.perf_counter()
    step = max(1, count // 10)
    for i, n in enumerate(range(WARMUP, WARMUP + count)):
        kernel(x, n, bits).numpy()
        if (i + 1) % step == 0:
            print(f"  {i + 1:>6} kernels: +{resident_mib() - before:7.1f} MiB", file=sys.stderr, flush=True)
    gc.collect()
    grown = resident_mib() - before
    return {
        "kernels": count,
        "programs_built": rt.stats.programs - built,
        "programs_loaded": len(rt._program_cache),
        "schedules_kept": len(rt._schedule_cache),
        "grown_mib": round(grown, 2),
        "bound_mib": TARGET_MIB,
        "seconds": round(time.perf_counter() - t0, 1),
    }


def main(argv: list[str]) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m bench memory", description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", type=int, default=10_000, help="distinct kernels to realize (default 10000)")
    args = parser.parse_known_args(argv)[0]
    r = measure(args.kernels)
    ok = "within" if r["grown_mib"] <= r["bound_mib"] else "OVER"
    print(f"{r['kernels']} distinct kernels ({r['programs_built']} programs built) in {r['seconds']} s")
    print(f"  resident memory grown: {r['grown_mib']:.1f} MiB ({ok} the bound {r['bound_mib']:.1f} MiB)")
    print(f"  kept: {r['programs_loaded']} programs, {r['schedules_kept']} schedules")
    print("JSON: " + json.dumps(r))
    return r


if __name__ == "__main__":
    main(sys.argv[1:])
