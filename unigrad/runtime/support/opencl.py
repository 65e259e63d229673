"""ctypes bindings of the system's OpenCL ICD loader (libOpenCL.so.1), only what the CL device uses.

In: nothing at import (the library is loaded on first use). Out: `lib()`, the loaded library with every function's
signature set from SIGNATURES; `check` and `create` turn a status code into a CLError naming it (CL_INVALID_VALUE,
...); `info_*` read the clGet*Info queries; `device_ids()` lists every device of every platform. A machine without
the loader or without a driver (ICD) gets an OpenCLMissing error saying what to install and which DEVICE to use.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from unigrad.runtime.support import load_first
import functools
from collections.abc import Callable
from typing import Any

# ---------------------------------------------------------------- the functions, as data

P = ctypes.c_void_p  # every handle (cl_platform_id, cl_context, cl_mem, ...) and every pointer argument
I32, U32, U64, SIZE = ctypes.c_int32, ctypes.c_uint32, ctypes.c_uint64, ctypes.c_size_t
STR = ctypes.c_char_p

# name: (return type, argument types), in the order of the OpenCL 1.2 API (cl_int status returns, handle creators
# with a trailing cl_int* errcode)
SIGNATURES: dict[str, tuple[Any, tuple[Any, ...]]] = {
    "clGetPlatformIDs": (I32, (U32, P, P)),
    "clGetPlatformInfo": (I32, (P, U32, SIZE, P, P)),
    "clGetDeviceIDs": (I32, (P, U64, U32, P, P)),
    "clGetDeviceInfo": (I32, (P, U32, SIZE, P, P)),
    "clCreateContext": (P, (P, U32, P, P, P, P)),
    "clCreateCommandQueue": (P, (P, P, U64, P)),
    "clCreateBuffer": (P, (P, U64, SIZE, P, P)),
    "clEnqueueWriteBuffer": (I32, (P, P, U32, SIZE, SIZE, P, U32, P, P)),
    "clEnqueueReadBuffer": (I32, (P, P, U32, SIZE, SIZE, P, U32, P, P)),
    "clEnqueueCopyBuffer": (I32, (P, P, P, SIZE, SIZE, SIZE, U32, P, P)),
    "clCreateProgramWithSource": (P, (P, U32, P, P, P)),
    "clCreateProgramWithBinary": (P, (P, U32, P, P, P, P, P)),
    "clBuildProgram": (I32, (P, U32, P, STR, P, P)),
    "clGetProgramInfo": (I32, (P, U32, SIZE, P, P)),
    "clGetProgramBuildInfo": (I32, (P, P, U32, SIZE, P, P)),
    "clCreateKernel": (P, (P, STR, P)),
    "clSetKernelArg": (I32, (P, U32, SIZE, P)),
    "clGetKernelWorkGroupInfo": (I32, (P, P, U32, SIZE, P, P)),
    "clEnqueueNDRangeKernel": (I32, (P, P, U32, P, P, P, U32, P, P)),
    "clFinish": (I32, (P,)),
    "clWaitForEvents": (I32, (U32, P)),
    "clGetEventProfilingInfo": (I32, (P, U32, SIZE, P, P)),
    "clReleaseEvent": (I32, (P,)),
    "clReleaseMemObject": (I32, (P,)),
    "clReleaseKernel": (I32, (P,)),
    "clReleaseProgram": (I32, (P,)),
    "clReleaseCommandQueue": (I32, (P,)),
    "clReleaseContext": (I32, (P,)),
}

# ---------------------------------------------------------------- constants (cl.h)

DEVICE_TYPE_ALL = 0xFFFFFFFF
QUEUE_PROFILING_ENABLE = 1 << 1
MEM_READ_WRITE = 1 << 0
FP_CORRECTLY_ROUNDED_DIVIDE_SQRT = 1 << 7  # a bit of CL_DEVICE_SINGLE_FP_CONFIG
PLATFORM_NAME = 0x0902
DEVICE_MAX_COMPUTE_UNITS = 0x1002
DEVICE_MAX_WORK_ITEM_DIMENSIONS = 0x1003
DEVICE_MAX_WORK_GROUP_SIZE = 0x1004
DEVICE_MAX_WORK_ITEM_SIZES = 0x1005
DEVICE_MAX_MEM_ALLOC_SIZE = 0x1010
DEVICE_SINGLE_FP_CONFIG = 0x101B
DEVICE_GLOBAL_MEM_SIZE = 0x101F
DEVICE_LOCAL_MEM_SIZE = 0x1023
DEVICE_NAME = 0x102B
DEVICE_VENDOR = 0x102C
DRIVER_VERSION = 0x102D
DEVICE_PROFILE = 0x102E
DEVICE_VERSION = 0x102F
DEVICE_EXTENSIONS = 0x1030
DEVICE_OPENCL_C_VERSION = 0x103D
DEVICE_NON_UNIFORM_WORK_GROUP_SUPPORT = 0x1065  # OpenCL 3.0
DEVICE_PREFERRED_WORK_GROUP_SIZE_MULTIPLE = 0x1067  # OpenCL 3.0
PROGRAM_BINARY_SIZES = 0x1165
PROGRAM_BINARIES = 0x1166
PROGRAM_BUILD_LOG = 0x1183
KERNEL_WORK_GROUP_SIZE = 0x11B0
KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE = 0x11B3
PROFILING_COMMAND_START = 0x1282
PROFILING_COMMAND_END = 0x1283

ERRORS = {
    -1: "CL_DEVICE_NOT_FOUND",
    -2: "CL_DEVICE_NOT_AVAILABLE",
    -3: "CL_COMPILER_NOT_AVAILABLE",
    -4: "CL_MEM_OBJECT_ALLOCATION_FAILURE",
    -5: "CL_OUT_OF_RESOURCES",
    -6: "CL_OUT_OF_HOST_MEMORY",
    -7: "CL_PROFILING_INFO_NOT_AVAILABLE",
    -8: "CL_MEM_COPY_OVERLAP",
    -11: "CL_BUILD_PROGRAM_FAILURE",
    -12: "CL_MAP_FAILURE",
    -14: "CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST",
    -30: "CL_INVALID_VALUE",
    -31: "CL_INVALID_DEVICE_TYPE",
    -32: "CL_INVALID_PLATFORM",
    -33: "CL_INVALID_DEVICE",
    -34: "CL_INVALID_CONTEXT",
    -35: "CL_INVALID_QUEUE_PROPERTIES",
    -36: "CL_INVALID_COMMAND_QUEUE",
    -37: "CL_INVALID_HOST_PTR",
    -38: "CL_INVALID_MEM_OBJECT",
    -42: "CL_INVALID_BINARY",
    -43: "CL_INVALID_BUILD_OPTIONS",
    -44: "CL_INVALID_PROGRAM",
    -45: "CL_INVALID_PROGRAM_EXECUTABLE",
    -46: "CL_INVALID_KERNEL_NAME",
    -47: "CL_INVALID_KERNEL_DEFINITION",
    -48: "CL_INVALID_KERNEL",
    -49: "CL_INVALID_ARG_INDEX",
    -50: "CL_INVALID_ARG_VALUE",
    -51: "CL_INVALID_ARG_SIZE",
    -52: "CL_INVALID_KERNEL_ARGS",
    -53: "CL_INVALID_WORK_DIMENSION",
    -54: "CL_INVALID_WORK_GROUP_SIZE",
    -55: "CL_INVALID_WORK_ITEM_SIZE",
    -56: "CL_INVALID_GLOBAL_OFFSET",
    -57: "CL_INVALID_EVENT_WAIT_LIST",
    -58: "CL_INVALID_EVENT",
    -59: "CL_INVALID_OPERATION",
    -61: "CL_INVALID_BUFFER_SIZE",
    -63: "CL_INVALID_GLOBAL_WORK_SIZE",
    -64: "CL_INVALID_PROPERTY",
    -1001: "CL_PLATFORM_NOT_FOUND_KHR",  # the ICD loader found no driver
}

LIBRARIES = ("libOpenCL.so.1", "libOpenCL.so", "OpenCL")  # the ICD loader's names, tried in turn
INSTALL = (
    "install the OpenCL ICD loader and a driver (on Debian/Ubuntu: apt-get install ocl-icd-libopencl1 "
    "pocl-opencl-icd; PoCL runs OpenCL on the CPU), or use DEVICE=CPU (generated C) or DEVICE=PYTHON instead"
)


class OpenCLMissing(RuntimeError):
    """No OpenCL on this machine: the loader library or every driver (ICD) is missing."""


class CLError(RuntimeError):
    """An OpenCL call returned an error status: `code` and its `name` (CL_INVALID_VALUE, ...)."""

    def __init__(self, code: int, what: str) -> None:
        self.code = code
        self.name = ERRORS.get(code, f"OpenCL error {code}")
        super().__init__(f"{what}: {self.name} ({code})")


# ---------------------------------------------------------------- loading and calling


@functools.cache
def lib(names: tuple[str, ...] = LIBRARIES) -> ctypes.CDLL:
    """The OpenCL ICD loader, its functions typed from SIGNATURES (loaded once; OpenCLMissing when absent)."""
    if (cdll := load_first(names)) is not None:
        for fn, (restype, argtypes) in SIGNATURES.items():
            f = getattr(cdll, fn)
            f.restype, f.argtypes = restype, argtypes
        return cdll
    raise OpenCLMissing(f"DEVICE=CL: the OpenCL library ({names[0]}) was not found; {INSTALL}")


def check(status: int, what: str) -> None:
    """Raise CLError when an OpenCL call's status is not CL_SUCCESS; `what` says which call, on what."""
    if status != 0:
        raise CLError(status, what)


def create(fn: str, *args: Any) -> int:
    """Call a handle-creating function (its last argument the cl_int* errcode) and return the new handle."""
    err = I32(0)
    handle = getattr(lib(), fn)(*args, ctypes.byref(err))
    check(err.value, fn)
    return handle  # type: ignore[no-any-return]


def info_bytes(getter: Callable[..., int], *handles: Any, param: int) -> bytes:
    """The raw value of one clGet*Info query: its size asked first, then the value."""
    size = SIZE(0)
    check(getter(*handles, param, 0, None, ctypes.byref(size)), f"{getter.__name__}({param:#x})")
    buf = ctypes.create_string_buffer(size.value)
    check(getter(*handles, param, size.value, buf, None), f"{getter.__name__}({param:#x})")
    return buf.raw


def info_str(getter: Callable[..., int], *handles: Any, param: int) -> str:
    return info_bytes(getter, *handles, param=param).rstrip(b"\0").decode(errors="replace")


def info_int(getter: Callable[..., int], *handles: Any, param: int, ctype: Any = SIZE) -> int:
    """An integer query; `ctype` its C type (size_t, cl_uint, cl_ulong, cl_bool)."""
    return int(ctype.from_buffer_copy(info_bytes(getter, *handles, param=param)).value)


def info_sizes(getter: Callable[..., int], *handles: Any, param: int) -> tuple[int, ...]:
    """A size_t[] query (CL_DEVICE_MAX_WORK_ITEM_SIZES, CL_PROGRAM_BINARY_SIZES)."""
    raw = info_bytes(getter, *handles, param=param)
    return tuple((SIZE * (len(raw) // ctypes.sizeof(SIZE))).from_buffer_copy(raw))


def platform_ids() -> list[int]:
    """Every OpenCL platform (driver) the ICD loader found; none is an OpenCLMissing error."""
    n = U32(0)
    status = lib().clGetPlatformIDs(0, None, ctypes.byref(n))
    if status == -1001 or (status == 0 and n.value == 0):
        raise OpenCLMissing(f"DEVICE=CL: the OpenCL loader found no driver (no ICD in /etc/OpenCL/vendors); {INSTALL}")
    check(status, "clGetPlatformIDs")
    ids = (P * n.value)()
    check(lib().clGetPlatformIDs(n.value, ids, None), "clGetPlatformIDs")
    return [int(p) for p in ids]


def device_ids() -> list[int]:
    """Every device of every platform, in the loader's platform order then each platform's device order."""
    out: list[int] = []
    for platform in platform_ids():
        n = U32(0)
        status = lib().clGetDeviceIDs(platform, DEVICE_TYPE_ALL, 0, None, ctypes.byref(n))
        if status == -1:  # CL_DEVICE_NOT_FOUND: a platform without devices
            continue
        check(status, "clGetDeviceIDs")
        ids = (P * n.value)()
        check(lib().clGetDeviceIDs(platform, DEVICE_TYPE_ALL, n.value, ids, None), "clGetDeviceIDs")
        out += [int(d) for d in ids]
    if not out:
        raise OpenCLMissing(f"DEVICE=CL: the OpenCL drivers report no device; {INSTALL}")
    return out


def unavailable() -> str | None:
    """Why no OpenCL device can be opened here (a test's skip reason), or None when one can."""
    try:
        device_ids()
    except (OpenCLMissing, CLError) as e:
        return str(e)
    return None
