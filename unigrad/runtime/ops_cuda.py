"""The CUDA device `CUDA` (`CUDA:1`, ...): CUDA C++ (render/cuda.py) -> a CUBIN for the GPU's own sm_XX made by
NVRTC (runtime/support/nvrtc.py), loaded and launched through the driver API (runtime/support/cuda.py).

- `CUDA:n` is the n-th GPU, wrapping around: on a machine with one GPU, CUDA:0 and CUDA:1 are two streams on it (in
  its primary context), as independent to the rest of unigrad as CPU:0 and CPU:1 are.
- `device.info` (CUDAInfo) is what the GPU reports of itself (cuDeviceGetAttribute); `device.target` is the
  optimizer's Target filled from it.
- Kernels are compiled to a CUBIN for the GPU's architecture (the knob CUDA_ARCH forces one), never PTX, so the
  driver never JIT-compiles; the NVRTC used is the newest whose CUDA major version the driver runs (a CUBIN loads on
  drivers of its own major version). CUBINs are cached on disk under CACHEDIR/cuda keyed by the source, the
  architecture, the NVRTC version and the options: a toolkit update never loads a stale binary. A refused source
  raises CompileError quoting NVRTC's log and the source lines it names.
- Everything of a device runs in order on one stream: kernels, and copies through two pinned staging buffers (a
  chunk is copied by DMA while the next is copied into the other buffer). A copy out waits for the kernels before.
- A program is called as `program(bufs, var_vals, grid=(x, y, z), block=(x, y, z), wait=False)`; grid and block
  default to the signature's launch sizes. It returns the kernel's seconds (from events) when waited for
  (wait=True or DEBUG>=2), else None. Faults surface at the next wait and name the kernel launched last.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import math
import re
import threading
from typing import Any

import numpy as np

from unigrad import config
from unigrad.dtype import DType
from unigrad.helpers import record
from unigrad.pipeline.optimize.opts import Target
from unigrad.render.cstyle import KernelSignature
from unigrad.render.cuda import CUDALanguage, tensor_cores_for
from unigrad.runtime import Allocator, Compiled, Compiler, CompileError, DeviceName, Lowered, disk_cache, to_numpy_dtype
from unigrad.runtime.cuda_graph import CUDAGraph
from unigrad.runtime.support import cuda, nvrtc

FORMAT = 2  # bump when what a cached CUBIN holds changes (2: sealed, disk_cache.seal)
MEMORY_ENTRIES = 256  # CUBINs a compiler keeps in memory when the disk cache is off
STAGING_BYTES = 1 << 24  # each of the two pinned staging buffers of a device
# NVRTC's options besides the architecture: no contraction of a*b+c into fma (the CPU's bits), helpers written as C
# are device functions (render/cuda.py)
OPTIONS = ("--fmad=false", "--device-as-default-execution-space")
# the limits of every NVIDIA GPU since sm_50: the NULL device's Target (a real device reads its own)
GENERIC = {"threads": 1024, "block": (1024, 1024, 64), "grid": (2**31 - 1, 65535, 65535), "shared": 48 * 1024}


@record(frozen=True)
class CUDAInfo:
    """What a GPU reports of itself: the source of truth of its Target.

    arch: the sm_XX kernels are compiled for; max_threads: threads a block may have; block_max/grid_max: the largest
    block and grid per dim; shared_bytes: static __shared__ memory per block; warp: threads of a warp (the preferred
    block multiple); driver: the CUDA version of the driver."""

    name: str
    arch: str
    capability: tuple[int, int]
    sm_count: int
    max_threads: int
    block_max: tuple[int, int, int]
    grid_max: tuple[int, int, int]
    shared_bytes: int
    warp: int
    total_bytes: int
    driver: tuple[int, int]


def query_info(device: int) -> CUDAInfo:
    """The CUDAInfo of one GPU (cuInit has run)."""
    capability = (
        cuda.attribute(device, cuda.COMPUTE_CAPABILITY_MAJOR),
        cuda.attribute(device, cuda.COMPUTE_CAPABILITY_MINOR),
    )
    return CUDAInfo(
        name=cuda.device_name(device),
        arch=str(config.CUDA_ARCH.value) or f"sm_{capability[0]}{capability[1]}",
        capability=capability,
        sm_count=cuda.attribute(device, cuda.MULTIPROCESSOR_COUNT),
        max_threads=cuda.attribute(device, cuda.MAX_THREADS_PER_BLOCK),
        block_max=tuple(cuda.attribute(device, a) for a in cuda.MAX_BLOCK_DIM),  # type: ignore[arg-type]
        grid_max=tuple(cuda.attribute(device, a) for a in cuda.MAX_GRID_DIM),  # type: ignore[arg-type]
        shared_bytes=cuda.attribute(device, cuda.MAX_SHARED_MEMORY_PER_BLOCK),
        warp=cuda.attribute(device, cuda.WARP_SIZE),
        total_bytes=int(cuda.out("cuDeviceTotalMem", cuda.SIZE, device)),
        driver=cuda.driver_version(),
    )


@functools.cache
def target_of(
    max_threads: int, block_max: tuple[int, ...], grid_max: tuple[int, ...], shared: int, warp: int, arch: str
) -> Target:
    """The optimizer's Target of a GPU: blocks are work-groups, threads work-items, __shared__ memory LOCAL; the
    tensor cores of its architecture (mma.sync from sm_80)."""
    return Target(
        gpu=True,
        global_max=grid_max,  # type: ignore[arg-type]
        local_max=block_max,  # type: ignore[arg-type]
        max_group=max_threads,
        local_bytes=shared,
        group_multiple=warp,
        nonuniform=False,  # a grid is whole blocks
        tensor_cores=tensor_cores_for(arch),
    )


# ---------------------------------------------------------------- the compiler

# "kernel.cu(12): error: ..." : a line of NVRTC's log naming an error and its source line
LOG_PLACE = re.compile(r"\((\d+)\): (?:catastrophe )?error")


def compile_error_message(where: str, src: str, log: str) -> str:
    """A refused source's message: NVRTC's log, then each source line the log names as an error (numbered); the
    whole source when it names none."""
    lines = src.splitlines()
    named = sorted({int(m.group(1)) for m in LOG_PLACE.finditer(log) if 1 <= int(m.group(1)) <= len(lines)})
    quoted = [f"{n:5d} | {lines[n - 1]}" for n in named] or [f"{i + 1:5d} | {s}" for i, s in enumerate(lines)]
    return f"NVRTC failed to compile a kernel for {where}:\n{log.strip()}\nin the source:\n" + "\n".join(quoted)


class CUDACompiler(Compiler):
    """CUDA C++ source -> a CUBIN for `arch`, from CACHEDIR/cuda when an earlier compile made it. NVRTC releases the
    GIL: the runtime's precompile compiles a schedule's kernels on several threads at once."""

    def __init__(self, nv: nvrtc.Nvrtc, arch: str) -> None:
        if not nv.supports(arch):
            have = ", ".join(f"sm_{a}" for a in nv.archs)
            raise ValueError(
                f"NVRTC {nv.version[0]}.{nv.version[1]} ({nv.path}) cannot compile for {arch}: it targets {have}. "
                "Set CUDA_ARCH to one of those, or install an NVRTC that targets it (pip install nvidia-cuda-nvrtc)"
            )
        self.nv, self.arch = nv, arch
        self.options = [f"--gpu-architecture={arch}", *OPTIONS]
        self.compiles = 0  # compiles from source (cache misses)
        self.cache = disk_cache.BinaryCache("cuda", ".cubin", MEMORY_ENTRIES)

    def key(self, src: str) -> str:
        """The cache entry of `src`: another NVRTC version, architecture or option set gives another one."""
        parts = (str(FORMAT), f"nvrtc {self.nv.version[0]}.{self.nv.version[1]}", *self.options, src)
        return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:32]

    def compile(self, src: str) -> bytes:
        """The CUBIN of `src`: from the cache, or compiled now."""
        return self.cache.get(self.key(src), lambda: self.build(src))

    def build(self, src: str) -> bytes:
        """Compile `src` now (no cache)."""
        try:
            cubin = self.nv.compile(src, "kernel.cu", self.options)
        except nvrtc.NvrtcCompileError as e:
            where = f"{self.arch} (NVRTC {self.nv.version[0]}.{self.nv.version[1]}, {self.nv.path})"
            raise CompileError(compile_error_message(where, src, e.log)) from None
        self.compiles += 1
        return cubin


# ---------------------------------------------------------------- the device: context, memory, programs

_current = threading.local()  # the context current on this thread (cuCtxSetCurrent is per thread)


class CUDAContext:
    """One GPU's primary context and one stream on it: what the allocator and programs of a CUDA device share."""

    def __init__(self, name: str, device: int, info: CUDAInfo) -> None:
        self.name, self.device, self.info = name, device, info
        self.context = cuda.out("cuDevicePrimaryCtxRetain", cuda.P, device)
        self.activate()
        self.stream = cuda.out("cuStreamCreate", cuda.P, cuda.STREAM_NON_BLOCKING)
        self.last_kernel = ""  # the kernel launched last: what a fault found at the next wait names
        self.staging: list[int] = []  # two pinned host buffers, made on the first copy
        self.staged: list[int] = []  # an event per staging buffer: recorded after the copy that uses it

    def activate(self) -> None:
        """Make this context current on the calling thread (a no-op when it is)."""
        if getattr(_current, "context", None) != self.context:
            cuda.check(cuda.lib().cuCtxSetCurrent(self.context), f"cuCtxSetCurrent on {self.name}")
            _current.context = self.context

    def check(self, status: int, what: str) -> None:
        """cuda.check, naming the kernel launched last when the error is a fault it left behind."""
        if status != cuda.SUCCESS and status >= 700 and self.last_kernel:
            what += f" (after kernel {self.last_kernel} on {self.name}: it faulted)"
        cuda.check(status, what)

    def synchronize(self) -> None:
        self.activate()
        self.check(cuda.lib().cuStreamSynchronize(self.stream), f"synchronizing {self.name}")

    def staging_buffers(self) -> tuple[list[int], list[int]]:
        if not self.staging:
            for _ in range(2):
                self.staging.append(cuda.out("cuMemHostAlloc", cuda.P, STAGING_BYTES, cuda.MEMHOSTALLOC_PORTABLE))
                self.staged.append(cuda.out("cuEventCreate", cuda.P, cuda.EVENT_DISABLE_TIMING))
        return self.staging, self.staged


@record(eq=False)
class CUDABuffer:
    """A device allocation: its address and its context."""

    ptr: int
    nbytes: int
    ctx: CUDAContext


def _chunks(nbytes: int) -> list[tuple[int, int]]:
    """(offset, size) of each staging chunk of a copy of nbytes."""
    return [(off, min(STAGING_BYTES, nbytes - off)) for off in range(0, nbytes, STAGING_BYTES)]


class CUDAAllocator(Allocator):
    """Buffers of one GPU; copies in order on its stream through pinned staging (a copy out waits for the kernels)."""

    def __init__(self, ctx: CUDAContext) -> None:
        self.ctx = ctx

    def alloc(self, nbytes: int, dtype: DType, size: int) -> CUDABuffer:
        self.ctx.activate()
        ptr = ctypes.c_uint64()
        status = cuda.lib().cuMemAlloc(ctypes.byref(ptr), max(nbytes, 1))  # an empty buffer is one byte
        if status == cuda.OUT_OF_MEMORY:
            free, total = ctypes.c_size_t(), ctypes.c_size_t()
            cuda.lib().cuMemGetInfo(ctypes.byref(free), ctypes.byref(total))
            raise MemoryError(
                f"{self.ctx.name} ({self.ctx.info.name}) is out of memory: {nbytes} bytes asked for a {dtype} buffer, "
                f"{free.value} of {total.value} bytes free"
            )
        self.ctx.check(status, f"cuMemAlloc of {nbytes} bytes on {self.ctx.name}")
        return CUDABuffer(ptr.value, nbytes, self.ctx)

    def free(self, handle: CUDABuffer, nbytes: int) -> None:
        handle.ctx.activate()
        cuda.lib().cuMemFree(handle.ptr)  # waits for the work using it (cuMemFree synchronizes)

    def copyin(self, handle: CUDABuffer, src: np.ndarray) -> None:
        ctx, lib = self.ctx, cuda.lib()
        ctx.activate()
        bufs, events = ctx.staging_buffers()
        for i, (off, size) in enumerate(_chunks(src.nbytes)):
            k = i % 2
            ctx.check(lib.cuEventSynchronize(events[k]), "waiting for a staging buffer")  # its last copy is done
            ctypes.memmove(bufs[k], src.ctypes.data + off, size)
            ctx.check(lib.cuMemcpyHtoDAsync(handle.ptr + off, bufs[k], size, ctx.stream), f"copy in to {ctx.name}")
            ctx.check(lib.cuEventRecord(events[k], ctx.stream), "cuEventRecord")

    def copyout(self, handle: CUDABuffer, dtype: DType, size: int) -> np.ndarray:
        ctx, lib = self.ctx, cuda.lib()
        ctx.activate()
        out = np.empty(size, dtype=to_numpy_dtype(dtype))
        bufs, events = ctx.staging_buffers()
        chunks = _chunks(out.nbytes)

        def issue(i: int) -> None:  # chunk i copied by DMA into staging buffer i % 2
            off, n = chunks[i]
            ctx.check(lib.cuMemcpyDtoHAsync(bufs[i % 2], handle.ptr + off, n, ctx.stream), f"copy out of {ctx.name}")
            ctx.check(lib.cuEventRecord(events[i % 2], ctx.stream), "cuEventRecord")

        if chunks:
            issue(0)
        for i, (off, n) in enumerate(chunks):
            if i + 1 < len(chunks):
                issue(i + 1)  # its buffer held chunk i - 1, already read
            ctx.check(lib.cuEventSynchronize(events[i % 2]), f"copy out of {ctx.name}")
            ctypes.memmove(out.ctypes.data + off, bufs[i % 2], n)
        return out

    def transfer(self, dst: CUDABuffer, src: CUDABuffer, nbytes: int) -> None:
        """Copy nbytes of src to dst: on this stream within one context, else GPU to GPU after src's work is done."""
        if not nbytes:
            return
        self.ctx.activate()
        lib = cuda.lib()
        if dst.ctx.context == src.ctx.context:
            if src.ctx is not dst.ctx:
                src.ctx.synchronize()
                self.ctx.activate()
            self.ctx.check(lib.cuMemcpyDtoDAsync(dst.ptr, src.ptr, nbytes, dst.ctx.stream), "device copy")
            return
        src.ctx.synchronize()
        dst.ctx.activate()
        status = lib.cuMemcpyPeerAsync(dst.ptr, dst.ctx.context, src.ptr, src.ctx.context, nbytes, dst.ctx.stream)
        dst.ctx.check(status, f"peer copy {src.ctx.name} -> {dst.ctx.name}")


def _dims(size: tuple[int, ...], what: str) -> tuple[int, int, int]:
    if len(size) > 3 or any(s < 0 for s in size):
        raise ValueError(f"a {what} is up to three non-negative dims, got {size}")
    return (*(int(s) for s in size), *(1,) * (3 - len(size)))  # type: ignore[return-value]


class CUDAProgram:
    """One kernel of a CUBIN, loaded on one GPU."""

    graph = staticmethod(CUDAGraph.of)  # TinyJit replays a plan of kernels of one GPU as one CUDA graph

    def __init__(self, ctx: CUDAContext, name: str, binary: bytes, sig: KernelSignature) -> None:
        self.ctx, self.name, self.sig = ctx, name, sig
        ctx.activate()
        module = ctypes.c_void_p()
        status = cuda.lib().cuModuleLoadData(ctypes.byref(module), binary)
        if status != cuda.SUCCESS:
            raise CompileError(
                f"{ctx.name} ({ctx.info.name}, {ctx.info.arch}, driver CUDA {ctx.info.driver[0]}.{ctx.info.driver[1]}) "
                f"refused the CUBIN of {name}: {cuda.error_name(status)} ({status}). A CUBIN for another architecture "
                "(CUDA_ARCH), or from an NVRTC of a newer CUDA major version than the driver's, does not load"
            )
        self.module = module.value
        self.function = cuda.out("cuModuleGetFunction", cuda.P, self.module, name.encode())
        self.max_threads = int(cuda.out("cuFuncGetAttribute", cuda.INT, cuda.FUNC_MAX_THREADS_PER_BLOCK, self.function))
        self.slots = [slot for slot, _ in sig.buffers]
        n = len(self.slots) + len(sig.variables)
        self.args = (ctypes.c_uint64 * n)()  # every argument is 8 bytes: a device address or a long long
        self.params = (ctypes.c_void_p * n)(*(ctypes.addressof(self.args) + 8 * i for i in range(n)))

    def __del__(self) -> None:
        try:
            self.ctx.activate()
            cuda.lib().cuModuleUnload(self.module)
        except Exception:  # noqa: S110 - interpreter shutdown, or a constructor that failed half way
            pass

    def launch_dims(
        self, var_vals: dict[str, int], grid: tuple[int, ...] | None, block: tuple[int, ...] | None
    ) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        """(grid, block), checked against the GPU's and this kernel's limits; the signature's where not given."""
        sig_grid, sig_block = self.sig.launch_dims(var_vals) if self.sig.gpu else ((1, 1, 1), (1, 1, 1))
        g, b = (
            _dims(grid if grid is not None else sig_grid, "grid"),
            _dims(block if block is not None else sig_block, "block"),
        )
        info = self.ctx.info
        limit = min(info.max_threads, self.max_threads)
        if any(s < 1 for s in b) or math.prod(b) > limit or any(s > m for s, m in zip(b, info.block_max)):
            raise ValueError(
                f"kernel {self.name}: a block of {'x'.join(map(str, b))} = {math.prod(b)} threads does not fit "
                f"{self.ctx.name} ({info.name}): at most {limit} threads for this kernel and "
                f"{'x'.join(map(str, info.block_max))} per dim"
            )
        if any(s > m for s, m in zip(g, info.grid_max)):
            raise ValueError(
                f"kernel {self.name}: a grid of {'x'.join(map(str, g))} blocks is over {self.ctx.name}'s limit of "
                f"{'x'.join(map(str, info.grid_max))} per dim"
            )
        return g, b

    def __call__(
        self,
        bufs: list[Any],
        var_vals: dict[str, int],
        grid: tuple[int, ...] | None = None,
        block: tuple[int, ...] | None = None,
        wait: bool = False,
    ) -> float | None:
        """Launch on `bufs` (by slot) and the Variables' values; the kernel's seconds when waited for, else None."""
        g, b = self.launch_dims(var_vals, grid, block)
        for i, slot in enumerate(self.slots):
            self.args[i] = bufs[slot].handle.ptr
        for j, v in enumerate(self.sig.variables):
            self.args[len(self.slots) + j] = var_vals[v] & 0xFFFFFFFFFFFFFFFF  # a long long's bits
        timed = wait or config.DEBUG.value >= 2
        ctx, lib = self.ctx, cuda.lib()
        ctx.activate()
        if 0 in g:
            return 0.0 if timed else None
        events = [cuda.out("cuEventCreate", cuda.P, cuda.EVENT_DEFAULT) for _ in range(2)] if timed else []
        try:
            if timed:
                ctx.check(lib.cuEventRecord(events[0], ctx.stream), "cuEventRecord")
            status = lib.cuLaunchKernel(self.function, *g, *b, 0, ctx.stream, self.params, None)
            ctx.check(status, f"launching {self.name} on {ctx.name} (grid {g}, block {b})")
            ctx.last_kernel = self.name
            if not timed:
                return None
            ctx.check(lib.cuEventRecord(events[1], ctx.stream), "cuEventRecord")
            ctx.check(lib.cuEventSynchronize(events[1]), f"running {self.name} on {ctx.name}")
            ms = ctypes.c_float()
            ctx.check(lib.cuEventElapsedTime(ctypes.byref(ms), events[0], events[1]), "cuEventElapsedTime")
            return ms.value * 1e-3
        finally:
            for e in events:
                lib.cuEventDestroy(e)


class CUDADevice(Compiled):
    """A CUDA device: `info` what the GPU reports, `target` the optimizer's view of it, `ctx` its context/stream."""

    ctx: CUDAContext

    @property
    def info(self) -> CUDAInfo:
        return self.ctx.info

    @property
    def target(self) -> Target:
        i = self.ctx.info
        return target_of(i.max_threads, i.block_max, i.grid_max, i.shared_bytes, i.warp, i.arch)

    def build(self, lowered: Lowered) -> CUDAProgram:
        """The program of a lowered kernel: its CUBIN compiled (or found in the cache) and loaded."""
        return CUDAProgram(self.ctx, lowered.name, self.compiler.compile(lowered.src), lowered.sig)

    def synchronize(self) -> None:
        """Wait until everything queued on this device has run."""
        self.ctx.synchronize()


_infos: dict[int, CUDAInfo] = {}  # device ordinal -> its info, asked once per process


def open_device(name: str) -> Compiled:
    """Open `CUDA` / `CUDA:n`: a stream on the n-th GPU (wrapping around), its NVRTC and renderer."""
    count = cuda.init()  # CudaMissing: no driver or no GPU, saying which DEVICE to use instead
    ordinal = (DeviceName(name).index or 0) % count
    device = int(cuda.out("cuDeviceGet", cuda.INT, ordinal))
    if (info := _infos.get(ordinal)) is None:
        info = _infos[ordinal] = query_info(device)
    compiler = CUDACompiler(nvrtc.load(max_major=info.driver[0]), info.arch)
    ctx = CUDAContext(name, device, info)
    dev = CUDADevice(name, CUDAAllocator(ctx), CUDALanguage(info.arch), compiler, functools.partial(CUDAProgram, ctx))
    dev.ctx = ctx
    return dev
