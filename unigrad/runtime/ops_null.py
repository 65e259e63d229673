"""The NULL device (the spec's NULL backend): every stage runs, every kernel is rendered and compiled, nothing runs.

Its use: CI compiles every kernel of a test suite or a model for a device it does not have, CUDA above all (NVRTC
compiles anywhere; no GPU is needed). What it compiles for is the knob NULL_RENDERER, read when the device opens:
  - `CUDA:sm_80`, `CUDA:sm_90`, ... (`CUDA`: sm_90): CUDA C++ compiled to a CUBIN for that architecture by NVRTC,
    for a GPU Target with the limits every NVIDIA GPU since sm_50 has (1024 threads a block, 48 KiB __shared__) and
    the architecture's tensor cores (sm_80 and newer: float16/bfloat16 matmuls compile to mma.sync);
  - `CL`: OpenCL C built by the machine's OpenCL driver, for its first device's Target (DEVICE=CL must open);
  - `C`: the CPU device's C, compiled by its C compiler, for this CPU's Target;
  - empty: `CUDA:sm_90` where NVRTC is found, else `C`.
Buffers hold no memory: a copy in is dropped and a copy out gives zeros (outputs are unspecified). A kernel's launch
is checked (its symbolic launch sizes resolve) and does nothing. DEBUG=4 prints each kernel's source, as on any
device; a source the compiler refuses raises CompileError at the realize that needs it.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from unigrad import config
from unigrad.dtype import DType
from unigrad.helpers import record
from unigrad.pipeline.optimize.opts import Target
from unigrad.render.cstyle import KernelSignature
from unigrad.runtime import Allocator, Compiled, Compiler, Device, Lowered, to_numpy_dtype


@record(eq=False)
class NullBuffer:
    nbytes: int


class NullAllocator(Allocator):
    """Allocations that hold nothing: copies in are dropped, copies out are zeros."""

    def alloc(self, nbytes: int, dtype: DType, size: int) -> NullBuffer:
        return NullBuffer(nbytes)

    def copyin(self, handle: NullBuffer, src: np.ndarray) -> None:
        pass

    def copyout(self, handle: NullBuffer, dtype: DType, size: int) -> np.ndarray:
        return np.zeros(size, dtype=to_numpy_dtype(dtype))


class NullProgram:
    """A compiled kernel that is never run: a call checks its launch sizes resolve for the Variables' values."""

    def __init__(self, name: str, binary: bytes, sig: KernelSignature) -> None:
        self.name, self.binary, self.sig = name, binary, sig

    def __call__(self, bufs: list[Any], var_vals: dict[str, int], **launch: Any) -> None:
        missing = [v for v in self.sig.variables if v not in var_vals]
        if missing:
            raise ValueError(f"kernel {self.name}: no value for the Variables {missing}")
        if self.sig.gpu:
            self.sig.launch_dims(var_vals)


class NullDevice(Compiled):
    """The NULL device: `kind` says what it compiles for ("CUDA:sm_90", "CL", "C"), `target_for` the Target."""

    kind: str
    target_for: Target

    @property
    def target(self) -> Target:
        return self.target_for

    def build(self, lowered: Lowered) -> NullProgram:
        """The kernel's source compiled (or found in the compiler's cache), never loaded."""
        return NullProgram(lowered.name, self.compiler.compile(lowered.src), lowered.sig)


def renderer_spec() -> str:
    """What NULL compiles for: the knob NULL_RENDERER, or CUDA:sm_90 where NVRTC is found, else C."""
    from unigrad.runtime.support import nvrtc

    spec = str(config.NULL_RENDERER.value).strip()
    if not spec:
        spec = "CUDA:sm_90" if nvrtc.unavailable() is None else "C"
    return spec


def _cuda(arch: str) -> tuple[Any, Compiler, Target]:
    from unigrad.render.cuda import CUDALanguage
    from unigrad.runtime.ops_cuda import GENERIC, CUDACompiler, target_of
    from unigrad.runtime.support import nvrtc

    target = target_of(GENERIC["threads"], GENERIC["block"], GENERIC["grid"], GENERIC["shared"], 32, arch)
    return CUDALanguage(arch), CUDACompiler(nvrtc.load(), arch), target


def _cl() -> tuple[Any, Compiler, Target]:
    dev = Device["CL"]
    return dev.renderer, dev.compiler, dev.target


def _c() -> tuple[Any, Compiler, Target]:
    from unigrad.render.c import CLanguage
    from unigrad.runtime.ops_cpu import CCompiler, _target, host_vector_unit, n_threads

    return CLanguage(host_vector_unit()[0]), CCompiler(), _target(n_threads())


@functools.cache
def _parts(spec: str) -> tuple[Any, Compiler, Target]:
    kind, _, arch = spec.partition(":")
    if kind.upper() == "CUDA":
        return _cuda(arch or "sm_90")
    if kind.upper() == "CL" and not arch:
        return _cl()
    if kind.upper() == "C" and not arch:
        return _c()
    raise ValueError(f"NULL_RENDERER: expected C, CL, CUDA or CUDA:sm_XX (sm_80, sm_90, ...), got {spec!r}")


def open_device(name: str) -> Compiled:
    spec = renderer_spec()
    renderer, compiler, target = _parts(spec)
    dev = NullDevice(name, NullAllocator(), renderer, compiler, NullProgram)  # type: ignore[arg-type]
    dev.kind, dev.target_for = spec, target
    return dev
