"""Every knob, declared once: name, type, default, one line of help.

Read a knob as `config.DEBUG.value` (or `int(config.DEBUG)`); scope a change with `Context(DEBUG=4)`.
Environment variables of the same name set the starting values.
"""

from __future__ import annotations

import contextlib
import os
import pathlib
from collections.abc import Iterator
from dataclasses import field
from typing import Any

from unigrad.helpers import record


@record
class Knob:
    name: str
    type: type
    default: Any
    help: str
    value: Any = field(init=False)

    def __post_init__(self) -> None:
        env = os.environ.get(self.name)
        self.value = self.default if env is None or env == "" else self.type(env)

    def __int__(self) -> int:
        return int(self.value)

    def __bool__(self) -> bool:
        return bool(self.value)

    def __ge__(self, other: int) -> bool:
        return self.value >= other

    def __gt__(self, other: int) -> bool:
        return self.value > other


KNOBS: dict[str, Knob] = {}


def _knob(name: str, typ: type, default: Any, help: str) -> Knob:
    KNOBS[name] = k = Knob(name, typ, default, help)
    return k


DEBUG = _knob("DEBUG", int, 0, "1 kernels, ops, us/op per realize and step; 2 per kernel; 3 opts; 4 source; 5 graphs")
DEVICE = _knob("DEVICE", str, "CPU", "default device (CPU, PYTHON, CL, CUDA, NULL)")
CACHEDIR = _knob(
    "CACHEDIR", str, str(pathlib.Path.home() / ".cache" / "unigrad"), "directory of the on-disk compile cache"
)
DISABLE_COMPILER_CACHE = _knob("DISABLE_COMPILER_CACHE", int, 0, "1 disables the on-disk compile cache")
CACHE_MB = _knob("CACHE_MB", int, 1024, "megabytes each on-disk cache folder may hold; its least recently used go")
PROGRAM_CACHE = _knob("PROGRAM_CACHE", int, 1024, "kernels kept loaded in memory; the least recently used go past it")
REBASE = _knob(
    "REBASE", int, 1, "1: kernels that differ only in where their read-only slices start share one program (0: never)"
)
MERGE_KERNELS = _knob(
    "MERGE_KERNELS", int, 1, "1: kernels over one loop nest merge into one of several outputs (0: never)"
)
SCHEDULE_CACHE = _knob("SCHEDULE_CACHE", int, 1024, "schedules kept in memory; the least recently used go past it")
CC = _knob("CC", str, "", "C compiler for the CPU device; empty picks gcc if present, else cc, else clang")
SPEC = _knob("SPEC", int, 0, "1 runs the verifier (ir/spec.py) after every pipeline stage")
BEAM = _knob("BEAM", int, 0, "beam width of the kernel search (0 = hand-coded heuristics)")
NOOPT = _knob("NOOPT", int, 0, "1 disables kernel optimizations")
THREADS = _knob("THREADS", int, 0, "worker threads per kernel (0 = one per core, 1 = off)")
FLAVOR = _knob(
    "FLAVOR", str, "tinygrad", "whose semantics where tinygrad and torch differ: tinygrad (native) or torch (facade)"
)
DEFAULT_FLOAT = _knob("DEFAULT_FLOAT", str, "float32", "dtype of floats made without one (float32, HALF, ...)")
DEFAULT_INT = _knob("DEFAULT_INT", str, "", "dtype of ints made without one; empty: the flavor's (int32 / int64)")
TRAINING = _knob("TRAINING", int, 0, "tinygrad's train mode: dropout active, optimizers may step (Tensor.training)")
PYTHON_GPU = _knob(
    "PYTHON_GPU",
    str,
    "",
    "the PYTHON device emulates a GPU: '1' (groups of up to 256 work-items, 16 KiB LOCAL memory) or "
    "'max_group=N,local_bytes=M,global_max=K,tc=1' (tc=1: sm_80 tensor cores); empty: kernels lowered for a CPU",
)
NVRTC_PATH = _knob("NVRTC_PATH", str, "", "libnvrtc.so (or its folder) for CUDA; empty: pip wheels, then system CUDA")
CUDA_ARCH = _knob("CUDA_ARCH", str, "", "the sm_XX CUDA kernels are compiled for (sm_90, ...); empty: the device's own")
NULL_RENDERER = _knob(
    "NULL_RENDERER",
    str,
    "",
    "what DEVICE=NULL renders and compiles kernels as: C, CL, CUDA:sm_80, CUDA:sm_90, ...; empty: CUDA:sm_90 where "
    "NVRTC is found, else C",
)
JIT_GRAPH = _knob(
    "JIT_GRAPH", int, 1, "1: TinyJit replays a step of CUDA kernels as one CUDA graph (0: kernel by kernel)"
)
POOL_SPIN_US = _knob(
    "POOL_SPIN_US", int, 1000, "microseconds an idle worker thread polls for the next kernel before it sleeps"
)
DIST_TIMEOUT = _knob(
    "DIST_TIMEOUT", float, 300.0, "seconds a unigrad.distributed collective waits for the other ranks before it raises"
)
DIST_CHECK = _knob(
    "DIST_CHECK", int, 1, "1: every collective first compares shapes and dtypes across its ranks (0 skips that)"
)


@contextlib.contextmanager
def Context(**kwargs: Any) -> Iterator[None]:
    """Temporarily set knobs: `with Context(DEBUG=4): ...`."""
    old = {}
    for k, v in kwargs.items():
        if k not in KNOBS:
            raise KeyError(f"unknown config knob {k!r}; known: {sorted(KNOBS)}")
        old[k] = KNOBS[k].value
        KNOBS[k].value = KNOBS[k].type(v)
    try:
        yield
    finally:
        for k, v in old.items():
            KNOBS[k].value = v
