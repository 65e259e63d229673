"""ctypes bindings of the CUDA driver API (libcuda.so.1, installed with the NVIDIA driver), only what the CUDA
device uses: no CUDA toolkit or pip binding is needed at run time.

In: nothing at import (the library is loaded on first use). Out: `lib()`, the loaded library with every function's
signature set from SIGNATURES (the `_v2` entry points of cuda.h's macros, called by their plain names here);
`check` turns a CUresult into a CudaError naming it (CUDA_ERROR_OUT_OF_MEMORY, ...); `init()` runs cuInit once;
`attribute`/`device_name`/`driver_version` read the device queries. A machine without the driver library or
without a GPU gets CudaMissing saying what is missing and which DEVICE to use instead.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from unigrad.runtime.support import load_first
import functools
from typing import Any

P, INT, UINT, SIZE, U64 = ctypes.c_void_p, ctypes.c_int, ctypes.c_uint, ctypes.c_size_t, ctypes.c_uint64
STR, FLOAT = ctypes.c_char_p, ctypes.c_float
# plain name: (the library's symbol, argument types); every function returns a CUresult (int). Handles (contexts,
# modules, functions, streams, events) are pointers; a device is an int; a device pointer (CUdeviceptr) is a u64.
SIGNATURES: dict[str, tuple[str, tuple[Any, ...]]] = {
    "cuInit": ("cuInit", (UINT,)),
    "cuDriverGetVersion": ("cuDriverGetVersion", (P,)),
    "cuGetErrorName": ("cuGetErrorName", (INT, P)),
    "cuDeviceGetCount": ("cuDeviceGetCount", (P,)),
    "cuDeviceGet": ("cuDeviceGet", (P, INT)),
    "cuDeviceGetName": ("cuDeviceGetName", (P, INT, INT)),
    "cuDeviceGetAttribute": ("cuDeviceGetAttribute", (P, INT, INT)),
    "cuDeviceTotalMem": ("cuDeviceTotalMem_v2", (P, INT)),
    "cuDeviceCanAccessPeer": ("cuDeviceCanAccessPeer", (P, INT, INT)),
    "cuDevicePrimaryCtxRetain": ("cuDevicePrimaryCtxRetain", (P, INT)),
    "cuCtxSetCurrent": ("cuCtxSetCurrent", (P,)),
    "cuCtxSynchronize": ("cuCtxSynchronize", ()),
    "cuCtxEnablePeerAccess": ("cuCtxEnablePeerAccess", (P, UINT)),
    "cuMemGetInfo": ("cuMemGetInfo_v2", (P, P)),
    "cuMemAlloc": ("cuMemAlloc_v2", (P, SIZE)),
    "cuMemFree": ("cuMemFree_v2", (U64,)),
    "cuMemHostAlloc": ("cuMemHostAlloc", (P, SIZE, UINT)),
    "cuMemFreeHost": ("cuMemFreeHost", (P,)),
    "cuMemcpyHtoDAsync": ("cuMemcpyHtoDAsync_v2", (U64, P, SIZE, P)),
    "cuMemcpyDtoHAsync": ("cuMemcpyDtoHAsync_v2", (P, U64, SIZE, P)),
    "cuMemcpyDtoDAsync": ("cuMemcpyDtoDAsync_v2", (U64, U64, SIZE, P)),
    "cuMemcpyPeerAsync": ("cuMemcpyPeerAsync", (U64, P, U64, P, SIZE, P)),
    "cuModuleLoadData": ("cuModuleLoadData", (P, P)),
    "cuModuleGetFunction": ("cuModuleGetFunction", (P, P, STR)),
    "cuModuleUnload": ("cuModuleUnload", (P,)),
    "cuFuncGetAttribute": ("cuFuncGetAttribute", (P, INT, P)),
    "cuLaunchKernel": ("cuLaunchKernel", (P, UINT, UINT, UINT, UINT, UINT, UINT, UINT, P, P, P)),
    "cuStreamCreate": ("cuStreamCreate", (P, UINT)),
    "cuStreamSynchronize": ("cuStreamSynchronize", (P,)),
    "cuStreamWaitEvent": ("cuStreamWaitEvent", (P, P, UINT)),
    "cuStreamDestroy": ("cuStreamDestroy_v2", (P,)),
    "cuEventCreate": ("cuEventCreate", (P, UINT)),
    "cuEventRecord": ("cuEventRecord", (P, P)),
    "cuEventSynchronize": ("cuEventSynchronize", (P,)),
    "cuEventElapsedTime": ("cuEventElapsedTime_v2", (P, P, P)),  # CUDA 12.8+; older drivers: the plain name
    "cuEventDestroy": ("cuEventDestroy_v2", (P,)),
    # CUDA graphs (TinyJit's replays): kernel nodes take CUDA_KERNEL_NODE_PARAMS_v2 (the v1 layout plus two trailing
    # pointers, so an old driver's plain entry point reads it too)
    "cuGraphCreate": ("cuGraphCreate", (P, UINT)),
    "cuGraphAddKernelNode": ("cuGraphAddKernelNode_v2", (P, P, P, SIZE, P)),
    "cuGraphInstantiateWithFlags": ("cuGraphInstantiateWithFlags", (P, P, U64)),
    "cuGraphExecKernelNodeSetParams": ("cuGraphExecKernelNodeSetParams_v2", (P, P, P)),
    "cuGraphLaunch": ("cuGraphLaunch", (P, P)),
    "cuGraphExecDestroy": ("cuGraphExecDestroy", (P,)),
    "cuGraphDestroy": ("cuGraphDestroy", (P,)),
}

# ---------------------------------------------------------------- constants (cuda.h)

# CUdevice_attribute
MAX_THREADS_PER_BLOCK = 1
MAX_BLOCK_DIM = (2, 3, 4)  # x, y, z
MAX_GRID_DIM = (5, 6, 7)
MAX_SHARED_MEMORY_PER_BLOCK = 8  # static __shared__ memory a block may have (48 KiB)
WARP_SIZE = 10
MULTIPROCESSOR_COUNT = 16
MEMORY_CLOCK_RATE = 36  # kHz
GLOBAL_MEMORY_BUS_WIDTH = 37  # bits
COMPUTE_CAPABILITY_MAJOR = 75
COMPUTE_CAPABILITY_MINOR = 76
# CUfunction_attribute
FUNC_MAX_THREADS_PER_BLOCK = 0
FUNC_SHARED_SIZE_BYTES = 1
FUNC_NUM_REGS = 4
# flags
STREAM_NON_BLOCKING = 0x1
EVENT_DEFAULT = 0x0
EVENT_DISABLE_TIMING = 0x2
MEMHOSTALLOC_PORTABLE = 0x1
# CUresult codes this runtime reads
SUCCESS = 0
OUT_OF_MEMORY = 2
NO_DEVICE = 100
PEER_ACCESS_ALREADY_ENABLED = 704

LIBRARIES = ("libcuda.so.1", "libcuda.so", "cuda")
INSTEAD = "use DEVICE=CPU (or DEVICE=CL for OpenCL; DEVICE=NULL compiles CUDA kernels with NVRTC without running them)"


class CudaMissing(RuntimeError):
    """No CUDA here: the driver library (libcuda.so.1) or every NVIDIA GPU is missing."""


class CudaError(RuntimeError):
    """A driver API call returned an error: `code` and its `name` (CUDA_ERROR_OUT_OF_MEMORY, ...)."""

    def __init__(self, code: int, what: str) -> None:
        self.code, self.name = code, error_name(code)
        super().__init__(f"{what}: {self.name} ({code})")


# ---------------------------------------------------------------- loading and calling


@functools.cache
def lib(names: tuple[str, ...] = LIBRARIES) -> Any:
    """The CUDA driver library, its functions typed from SIGNATURES under their plain names (loaded once)."""
    if (cdll := load_first(names)) is not None:
        for fn, (symbol, argtypes) in SIGNATURES.items():
            f = getattr(cdll, symbol, None) or getattr(cdll, symbol.removesuffix("_v2"))
            f.restype, f.argtypes = INT, argtypes
            setattr(cdll, fn, f)
        return cdll
    raise CudaMissing(
        f"DEVICE=CUDA: the NVIDIA driver library ({names[0]}) was not found: this machine has no NVIDIA driver "
        f"(install one for an NVIDIA GPU), so {INSTEAD}"
    )


def error_name(code: int) -> str:
    """CUDA_ERROR_... for a CUresult (from the driver itself; the number where it does not know it)."""
    name = ctypes.c_char_p()
    try:
        if lib().cuGetErrorName(code, ctypes.byref(name)) == SUCCESS and name.value:
            return name.value.decode()
    except CudaMissing:
        pass
    return f"CUDA error {code}"


def check(status: int, what: str) -> None:
    """Raise CudaError when a driver call's CUresult is not CUDA_SUCCESS; `what` says which call, on what."""
    if status != SUCCESS:
        raise CudaError(status, what)


def out(fn: str, ctype: Any, *args: Any) -> Any:
    """Call `fn(&value, *args)` and return the value (a handle, a count, an attribute)."""
    value = ctype()
    check(getattr(lib(), fn)(ctypes.byref(value), *args), fn)
    return value.value


@functools.cache
def init() -> int:
    """cuInit once; the number of CUDA devices (CudaMissing when there is none)."""
    status = lib().cuInit(0)
    if status == NO_DEVICE:
        raise CudaMissing(f"DEVICE=CUDA: the NVIDIA driver is installed but reports no GPU; {INSTEAD}")
    check(status, "cuInit")
    count = out("cuDeviceGetCount", INT)
    if count == 0:
        raise CudaMissing(f"DEVICE=CUDA: the NVIDIA driver reports no GPU; {INSTEAD}")
    return int(count)


def attribute(device: int, attr: int) -> int:
    return int(out("cuDeviceGetAttribute", INT, attr, device))


def device_name(device: int) -> str:
    buf = ctypes.create_string_buffer(256)
    check(lib().cuDeviceGetName(buf, 256, device), "cuDeviceGetName")
    return buf.value.decode(errors="replace")


def driver_version() -> tuple[int, int]:
    """The CUDA version the driver supports, (major, minor): 12040 -> (12, 4)."""
    v = int(out("cuDriverGetVersion", INT))
    return v // 1000, (v % 1000) // 10


def unavailable() -> str | None:
    """Why no CUDA device can be opened here (a test's skip reason), or None when one can."""
    try:
        init()
    except (CudaMissing, CudaError) as e:
        return str(e)
    return None
