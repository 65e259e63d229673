"""The OpenCL device `CL` (`CL:1`, ...): OpenCL C source -> a program binary built by the system's OpenCL driver,
launched over work-groups on one in-order command queue (profiling on) per device; through runtime/support/opencl.py.

- `CL:n` is the n-th device of all platforms, wrapping around: on a machine with one device (PoCL on the CPU) CL:0
  and CL:1 are two contexts and queues on it, as independent to the rest of unigrad as CPU:0 and CPU:1 are.
- `device.info` (CLInfo) is what the device reports of itself (clGetDeviceInfo); `device.target` is the optimizer's
  Target filled from it.
- Binaries are cached on disk under CACHEDIR/cl, keyed by the device, its driver and OpenCL C versions, the build
  options and the source: a driver update never finds an old binary. A build that fails raises CompileError quoting
  the build log and the source lines it names.
- A program is called as `program(bufs, var_vals, global_size=(x, y, z), local_size=(x, y, z) or None, wait=False)`;
  it returns the kernel's time in seconds from the queue's profiling events when waited for (wait=True or DEBUG>=2),
  else None (the launch is queued: copies out wait for it, as the queue is in order).
- float16 needs cl_khr_fp16 and float64 cl_khr_fp64: a buffer of a dtype the device lacks is refused when allocated.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import math
import re
from typing import Any

import numpy as np

from unigrad import config
from unigrad.dtype import DType, dtypes
from unigrad.helpers import record
from unigrad.pipeline.optimize.opts import Target
from unigrad.render.cstyle import KernelSignature
from unigrad.render.opencl import OpenCLLanguage
from unigrad.runtime import Allocator, Compiled, Compiler, CompileError, DeviceName, Lowered, disk_cache, to_numpy_dtype
from unigrad.runtime.support import opencl as cl

FORMAT = 2  # bump when what a cached binary holds changes (2: sealed, disk_cache.seal)
GLOBAL_MAX = (2**31 - 1,) * 3  # OpenCL bounds a global size by size_t only: this keeps a global index an int
MEMORY_ENTRIES = 256  # binaries a compiler keeps in memory when the disk cache is off
DEFAULT_GROUP_MULTIPLE = 32  # when neither the device nor a probe kernel says its preferred work-group multiple
# dtype -> the device extension it needs (the others are core OpenCL C; 64-bit ints: FULL_PROFILE, checked apart)
DTYPE_EXTENSION = {dtypes.float16: "cl_khr_fp16", dtypes.float64: "cl_khr_fp64"}


@record(frozen=True)
class CLInfo:
    """What an OpenCL device reports of itself (clGetDeviceInfo): the source of truth of its Target.

    local_max: the largest work-group size per dim; max_group: the most work-items in one group; local_bytes: __local
    memory per group; group_multiple: the preferred work-group size multiple; nonuniform: the global size need not
    be a multiple of the local size (OpenCL C 2.0+ and the device supports it: built with -cl-std=CL2.0 or later)."""

    name: str
    vendor: str
    driver_version: str
    version: str  # "OpenCL 3.0 PoCL ..."
    c_version: tuple[int, int]  # the OpenCL C version the device compiles
    profile: str  # FULL_PROFILE or EMBEDDED_PROFILE
    compute_units: int
    max_group: int
    local_max: tuple[int, int, int]
    local_bytes: int
    global_bytes: int
    max_alloc: int
    group_multiple: int
    extensions: frozenset[str]
    nonuniform: bool
    correct_div_sqrt: bool  # float32 division and sqrt may be asked to round correctly (as on the CPU)

    def supports(self, dtype: DType) -> bool:
        """Buffers of `dtype` can live on this device."""
        if (ext := DTYPE_EXTENSION.get(dtype)) is not None:
            return ext in self.extensions
        if dtype.itemsize == 8 and not dtype.is_float and self.profile != "FULL_PROFILE":
            return "cles_khr_int64" in self.extensions
        return True


def _version(text: str, prefix: str) -> tuple[int, int]:
    """(major, minor) of a version string "<prefix> 1.2 <vendor>"; (0, 0) when it does not read so."""
    m = re.match(rf"{prefix}\s+(\d+)\.(\d+)", text)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def query_info(device_id: int) -> CLInfo:
    """The CLInfo of one OpenCL device."""
    get = cl.lib().clGetDeviceInfo
    version = cl.info_str(get, device_id, param=cl.DEVICE_VERSION)
    c_version = _version(cl.info_str(get, device_id, param=cl.DEVICE_OPENCL_C_VERSION), "OpenCL C")
    major = _version(version, "OpenCL")[0]
    nonuniform = c_version >= (2, 0) and major == 2
    if c_version >= (2, 0) and major >= 3:  # optional since 3.0: asked
        nonuniform = bool(cl.info_int(get, device_id, param=cl.DEVICE_NON_UNIFORM_WORK_GROUP_SUPPORT, ctype=cl.U32))
    group_multiple = 0
    if major >= 3:
        group_multiple = cl.info_int(get, device_id, param=cl.DEVICE_PREFERRED_WORK_GROUP_SIZE_MULTIPLE)
    if group_multiple == 0:
        group_multiple = probe_group_multiple(device_id)
    sizes = cl.info_sizes(get, device_id, param=cl.DEVICE_MAX_WORK_ITEM_SIZES)
    fp_config = cl.info_int(get, device_id, param=cl.DEVICE_SINGLE_FP_CONFIG, ctype=cl.U64)
    return CLInfo(
        name=cl.info_str(get, device_id, param=cl.DEVICE_NAME),
        vendor=cl.info_str(get, device_id, param=cl.DEVICE_VENDOR),
        driver_version=cl.info_str(get, device_id, param=cl.DRIVER_VERSION),
        version=version,
        c_version=c_version,
        profile=cl.info_str(get, device_id, param=cl.DEVICE_PROFILE),
        compute_units=cl.info_int(get, device_id, param=cl.DEVICE_MAX_COMPUTE_UNITS, ctype=cl.U32),
        max_group=cl.info_int(get, device_id, param=cl.DEVICE_MAX_WORK_GROUP_SIZE),
        local_max=(tuple(sizes[:3]) + (1, 1, 1))[:3],  # type: ignore[arg-type]
        local_bytes=cl.info_int(get, device_id, param=cl.DEVICE_LOCAL_MEM_SIZE, ctype=cl.U64),
        global_bytes=cl.info_int(get, device_id, param=cl.DEVICE_GLOBAL_MEM_SIZE, ctype=cl.U64),
        max_alloc=cl.info_int(get, device_id, param=cl.DEVICE_MAX_MEM_ALLOC_SIZE, ctype=cl.U64),
        group_multiple=group_multiple,
        extensions=frozenset(cl.info_str(get, device_id, param=cl.DEVICE_EXTENSIONS).split()),
        nonuniform=nonuniform,
        correct_div_sqrt=bool(fp_config & cl.FP_CORRECTLY_ROUNDED_DIVIDE_SQRT),
    )


PROBE_SRC = "__kernel void probe(__global float *a) { a[get_global_id(0)] += 1.0f; }"


def probe_group_multiple(device_id: int) -> int:
    """The preferred work-group size multiple of a trivial kernel (what a pre-3.0 device tells only of a kernel), or
    DEFAULT_GROUP_MULTIPLE when the probe cannot be built."""
    ctx = CLContext.open("probe", device_id, None)
    try:
        program = ctx.build_source(PROBE_SRC, "")
    except (cl.CLError, CompileError):
        return DEFAULT_GROUP_MULTIPLE
    kernel = cl.create("clCreateKernel", program, b"probe")
    get = cl.lib().clGetKernelWorkGroupInfo
    multiple = cl.info_int(get, kernel, device_id, param=cl.KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE)
    cl.lib().clReleaseKernel(kernel)
    cl.lib().clReleaseProgram(program)
    return multiple or DEFAULT_GROUP_MULTIPLE


_infos: dict[int, CLInfo] = {}  # device id -> its info, asked once per process


def device_info(device_id: int) -> CLInfo:
    if (info := _infos.get(device_id)) is None:
        info = _infos[device_id] = query_info(device_id)
    return info


class CLContext:
    """One context and its in-order, profiling command queue on one device; what the allocator, compiler and
    programs of a CL device share. `name` is the unigrad device ("CL:1"); info is None only for the probe."""

    def __init__(self, name: str, device_id: int, info: CLInfo | None, context: int, queue: int) -> None:
        self.name, self.device_id, self.info, self.context, self.queue = name, device_id, info, context, queue

    @classmethod
    def open(cls, name: str, device_id: int, info: CLInfo | None) -> CLContext:
        dev = (cl.P * 1)(device_id)
        context = cl.create("clCreateContext", None, 1, dev, None, None)
        queue = cl.create("clCreateCommandQueue", context, device_id, cl.QUEUE_PROFILING_ENABLE)
        return cls(name, device_id, info, context, queue)

    def __del__(self) -> None:
        try:
            cl.lib().clReleaseCommandQueue(self.queue)
            cl.lib().clReleaseContext(self.context)
        except Exception:  # noqa: S110 - interpreter shutdown: the library may be gone already
            pass

    def build_source(self, src: str, options: str) -> int:
        """A program built from OpenCL C source (its handle); CompileError with the build log when it fails."""
        data = src.encode()
        strings, lengths = (ctypes.c_char_p * 1)(data), (cl.SIZE * 1)(len(data))
        program = cl.create("clCreateProgramWithSource", self.context, 1, strings, lengths)
        status = cl.lib().clBuildProgram(program, 1, (cl.P * 1)(self.device_id), options.encode(), None, None)
        if status != 0:
            log = self.build_log(program)
            cl.lib().clReleaseProgram(program)
            if status != -11:  # not CL_BUILD_PROGRAM_FAILURE: the call itself was wrong (options, device)
                cl.check(status, f"clBuildProgram on {self.name}")
            raise CompileError(compile_error_message(self.name, self.info, src, log))
        return program

    def build_binary(self, binary: bytes, options: str) -> int:
        """A program from a binary this device's driver made (clCreateProgramWithBinary, then built)."""
        dev = (cl.P * 1)(self.device_id)
        lengths = (cl.SIZE * 1)(len(binary))
        binaries = (ctypes.c_char_p * 1)(binary)
        status = cl.I32(0)
        program = cl.create("clCreateProgramWithBinary", self.context, 1, dev, lengths, binaries, ctypes.byref(status))
        cl.check(status.value, f"clCreateProgramWithBinary on {self.name}")
        built = cl.lib().clBuildProgram(program, 1, dev, options.encode(), None, None)
        if built != 0:
            log = self.build_log(program)
            cl.lib().clReleaseProgram(program)
            raise CompileError(f"{self.name}: a cached program binary did not build ({cl.ERRORS.get(built)}):\n{log}")
        return program

    def build_log(self, program: int) -> str:
        return cl.info_str(cl.lib().clGetProgramBuildInfo, program, self.device_id, param=cl.PROGRAM_BUILD_LOG)

    def binary(self, program: int) -> bytes:
        """The device binary of a program built for this context's one device."""
        (size,) = cl.info_sizes(cl.lib().clGetProgramInfo, program, param=cl.PROGRAM_BINARY_SIZES)
        buf = ctypes.create_string_buffer(size)
        ptrs = (ctypes.c_void_p * 1)(ctypes.addressof(buf))
        cl.check(
            cl.lib().clGetProgramInfo(program, cl.PROGRAM_BINARIES, ctypes.sizeof(ptrs), ptrs, None), "program binary"
        )
        return buf.raw


# "<source>:3:5: error: ..." (clang) or "error: <file>:3:5: ..." (PoCL): a line of the log naming an error and a place
LOG_PLACE = re.compile(r":(\d+):(\d+):")


def compile_error_message(device: str, info: CLInfo | None, src: str, log: str) -> str:
    """A failed build's message: the build log, then each source line the log names as an error (numbered, carets
    under the columns); the whole source when it names none."""
    lines = src.splitlines()
    where = f"{device} ({info.name}, driver {info.driver_version})" if info is not None else device
    columns: dict[int, set[int]] = {}  # line -> the columns of its errors
    for text in log.splitlines():
        if "error" in text and (m := LOG_PLACE.search(text)) and 1 <= int(m.group(1)) <= len(lines):
            columns.setdefault(int(m.group(1)), set()).add(int(m.group(2)))
    quoted = []
    for n, cols in sorted(columns.items()):
        carets = "".join("^" if c + 1 in cols else " " for c in range(max(cols)))
        quoted.append(f"{n:5d} | {lines[n - 1]}\n      | {carets}")
    body = "\n".join(quoted) if quoted else "\n".join(f"{i + 1:5d} | {s}" for i, s in enumerate(lines))
    return f"OpenCL build failed on {where}:\n{log.strip()}\nin the source:\n{body}"


def build_options(info: CLInfo) -> str:
    """clBuildProgram's options for this device: its own OpenCL C version (2.0+ allows non-uniform work-groups) and
    correctly rounded float32 division and sqrt where the device offers them (the CPU device's results)."""
    opts = [f"-cl-std=CL{info.c_version[0]}.{info.c_version[1]}"] if info.c_version >= (1, 1) else []
    if info.correct_div_sqrt:
        opts.append("-cl-fp32-correctly-rounded-divide-sqrt")
    return " ".join(opts)


class CLCompiler(Compiler):
    """OpenCL C source -> the device's program binary, from CACHEDIR/cl when an earlier build made it. Builds release
    the GIL: the runtime's precompile builds a schedule's programs on several threads at once."""

    def __init__(self, ctx: CLContext) -> None:
        assert ctx.info is not None
        self.ctx, self.info = ctx, ctx.info
        self.options = build_options(ctx.info)
        self.compiles = 0  # builds from source (cache misses)
        self.cache = disk_cache.BinaryCache("cl", ".bin", MEMORY_ENTRIES)

    def key(self, src: str) -> str:
        """The cache entry of `src` on this device: a new driver, device or option set gives another one."""
        info = self.info
        parts = (str(FORMAT), info.name, info.vendor, info.driver_version, info.version, str(info.c_version))
        return hashlib.sha256("\0".join((*parts, self.options, src)).encode()).hexdigest()[:32]

    def compile(self, src: str, fresh: bool = False) -> bytes:
        """The binary of `src`: from the cache, or built now (fresh=True: built now, replacing the cached one)."""
        return self.cache.get(self.key(src), lambda: self.build(src), fresh)

    def build(self, src: str) -> bytes:
        """Build `src` now (no cache) and return its binary."""
        program = self.ctx.build_source(src, self.options)
        try:
            binary = self.ctx.binary(program)
        finally:
            cl.lib().clReleaseProgram(program)
        self.compiles += 1
        return binary


@record(eq=False)
class CLBuffer:
    """A device buffer: its cl_mem handle and its context (copies between contexts go through the host)."""

    mem: int
    nbytes: int
    ctx: CLContext


class CLAllocator(Allocator):
    """Buffers of one context; copies through its queue (blocking: in order after the kernels queued before)."""

    def __init__(self, ctx: CLContext) -> None:
        self.ctx = ctx

    def alloc(self, nbytes: int, dtype: DType, size: int) -> CLBuffer:
        info = self.ctx.info
        assert info is not None
        if not info.supports(dtype):
            need = DTYPE_EXTENSION.get(dtype, "cles_khr_int64")
            raise TypeError(
                f"{dtype} is not supported on device {self.ctx.name} ({info.name}): it lacks the OpenCL extension "
                f"{need}; use another dtype, or keep the tensor on CPU"
            )
        if nbytes > info.max_alloc:
            raise MemoryError(
                f"{self.ctx.name}: a buffer of {nbytes} bytes is over the device's largest allocation ({info.max_alloc})"
            )
        # an empty buffer is refused by OpenCL (CL_INVALID_BUFFER_SIZE): one byte stands for it
        mem = cl.create("clCreateBuffer", self.ctx.context, cl.MEM_READ_WRITE, max(nbytes, 1), None)
        return CLBuffer(mem, nbytes, self.ctx)

    def free(self, handle: CLBuffer, nbytes: int) -> None:
        cl.lib().clReleaseMemObject(handle.mem)  # a kernel still queued keeps it until it finished

    def copyin(self, handle: CLBuffer, src: np.ndarray) -> None:
        if src.nbytes:
            status = cl.lib().clEnqueueWriteBuffer(
                self.ctx.queue, handle.mem, 1, 0, src.nbytes, src.ctypes.data, 0, None, None
            )
            cl.check(status, f"copy in to {self.ctx.name}")

    def copyout(self, handle: CLBuffer, dtype: DType, size: int) -> np.ndarray:
        out = np.empty(size, dtype=to_numpy_dtype(dtype))
        if out.nbytes:
            status = cl.lib().clEnqueueReadBuffer(
                self.ctx.queue, handle.mem, 1, 0, out.nbytes, out.ctypes.data, 0, None, None
            )
            cl.check(status, f"copy out of {self.ctx.name}")
        return out

    def transfer(self, dst: CLBuffer, src: CLBuffer, nbytes: int) -> None:
        """Copy `nbytes` of src to dst: on this queue when both are in this context, else through the host."""
        if not nbytes:
            return
        if dst.ctx is self.ctx and src.ctx is self.ctx:
            cl.check(
                cl.lib().clEnqueueCopyBuffer(self.ctx.queue, src.mem, dst.mem, 0, 0, nbytes, 0, None, None),
                f"copy within {self.ctx.name}",
            )
            return
        staged = CLAllocator(src.ctx).copyout(src, dtypes.uint8, nbytes)
        CLAllocator(dst.ctx).copyin(dst, staged)


def _dims(size: tuple[int, ...] | None, what: str) -> tuple[int, int, int] | None:
    """A launch size as three dims (missing ones 1)."""
    if size is None:
        return None
    if len(size) > 3 or any(s < 0 for s in size):
        raise ValueError(f"a {what} size is up to three non-negative dims, got {size}")
    return (*(int(s) for s in size), *(1,) * (3 - len(size)))  # type: ignore[return-value]


class CLProgram:
    """One kernel of a program binary, on one device. `guarded`: the kernel checks its global indices against the
    real sizes, so its global size may be padded up to a multiple of the local size on a device that needs
    uniform work-groups; an unguarded kernel with a size that does not divide is refused there instead."""

    def __init__(self, ctx: CLContext, name: str, binary: bytes, sig: KernelSignature, guarded: bool = False) -> None:
        assert ctx.info is not None
        self.ctx, self.info, self.name, self.sig, self.guarded = ctx, ctx.info, name, sig, guarded
        self.program = ctx.build_binary(binary, build_options(ctx.info))
        self.kernel = cl.create("clCreateKernel", self.program, name.encode())
        get = cl.lib().clGetKernelWorkGroupInfo
        self.max_group = cl.info_int(get, self.kernel, ctx.device_id, param=cl.KERNEL_WORK_GROUP_SIZE)
        self.group_multiple = cl.info_int(
            get, self.kernel, ctx.device_id, param=cl.KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE
        )
        self.slots = [slot for slot, _ in sig.buffers]

    def __del__(self) -> None:
        try:
            cl.lib().clReleaseKernel(self.kernel)
            cl.lib().clReleaseProgram(self.program)
        except Exception:  # noqa: S110 - interpreter shutdown, or a constructor that failed half way
            pass

    def launch_sizes(
        self, global_size: tuple[int, ...], local_size: tuple[int, ...] | None
    ) -> tuple[tuple[int, int, int], tuple[int, int, int] | None]:
        """The (global, local) sizes to enqueue, checked against the device's and this kernel's limits; a global
        size padded to a multiple of the local size where the device needs it and the kernel guards."""
        gs = _dims(global_size, "global")
        ls = _dims(local_size, "local")
        assert gs is not None
        if ls is None:
            return gs, None
        limit = min(self.info.max_group, self.max_group)
        if any(s < 1 for s in ls) or math.prod(ls) > limit or any(s > m for s, m in zip(ls, self.info.local_max)):
            raise ValueError(
                f"kernel {self.name}: a work-group of {'x'.join(map(str, ls))} = {math.prod(ls)} work-items does not "
                f"fit device {self.ctx.name} ({self.info.name}): at most {limit} work-items per group for this kernel "
                f"and {'x'.join(map(str, self.info.local_max))} per dim"
            )
        if not self.info.nonuniform and any(g % s for g, s in zip(gs, ls)):
            if not self.guarded:
                raise ValueError(
                    f"kernel {self.name}: global size {gs} is not a multiple of the local size {ls}, and device "
                    f"{self.ctx.name} ({self.info.name}) needs uniform work-groups (the kernel does not guard its "
                    "indices, so it cannot be padded)"
                )
            gs = tuple(-(-g // s) * s for g, s in zip(gs, ls))  # type: ignore[assignment]
        return gs, ls

    def __call__(
        self,
        bufs: list[Any],
        var_vals: dict[str, int],
        global_size: tuple[int, ...] | None = None,
        local_size: tuple[int, ...] | None = None,
        wait: bool = False,
    ) -> float | None:
        """Launch on `bufs` (by slot) and the Variables' values; the kernel's seconds when waited for, else None.
        Sizes not given are the signature's (work-groups x work-items per group, resolved for var_vals; else one
        work-item): OpenCL's global size is the work-items of all groups."""
        if global_size is None and self.sig.gpu:  # a pipeline kernel: groups x items per dimension
            groups, local_size = self.sig.launch_dims(var_vals)
            global_size = tuple(g * n for g, n in zip(groups, local_size))
        elif global_size is None:
            global_size = (1, 1, 1)
        gs, ls = self.launch_sizes(global_size, local_size)
        timed = wait or config.DEBUG.value >= 2
        for i, slot in enumerate(self.slots):
            mem = ctypes.c_void_p(bufs[slot].handle.mem)
            cl.check(cl.lib().clSetKernelArg(self.kernel, i, 8, ctypes.byref(mem)), f"{self.name}: buffer arg {i}")
        for j, v in enumerate(self.sig.variables):  # Variables are 64-bit: OpenCL C's `long`
            val = ctypes.c_int64(var_vals[v])
            status = cl.lib().clSetKernelArg(self.kernel, len(self.slots) + j, 8, ctypes.byref(val))
            cl.check(status, f"{self.name}: Variable {v}")
        if 0 in gs:  # nothing to run (OpenCL before 2.1 refuses an empty range)
            return 0.0 if timed else None
        event = ctypes.c_void_p()
        status = cl.lib().clEnqueueNDRangeKernel(
            self.ctx.queue,
            self.kernel,
            3,
            None,
            (cl.SIZE * 3)(*gs),
            None if ls is None else (cl.SIZE * 3)(*ls),
            0,
            None,
            ctypes.byref(event) if timed else None,
        )
        cl.check(status, f"launching {self.name} on {self.ctx.name} (global {gs}, local {ls})")
        if not timed:
            return None
        try:
            cl.check(cl.lib().clWaitForEvents(1, ctypes.byref(event)), f"running {self.name} on {self.ctx.name}")
            get = cl.lib().clGetEventProfilingInfo
            start = cl.info_int(get, event, param=cl.PROFILING_COMMAND_START, ctype=cl.U64)
            end = cl.info_int(get, event, param=cl.PROFILING_COMMAND_END, ctype=cl.U64)
        finally:
            cl.lib().clReleaseEvent(event)
        return (end - start) * 1e-9


class CLDevice(Compiled):
    """A CL device: `info` what the device reports, `target` the optimizer's view of it, `ctx` its context/queue."""

    ctx: CLContext

    @property
    def info(self) -> CLInfo:
        assert self.ctx.info is not None
        return self.ctx.info

    @property
    def target(self) -> Target:
        return target_of(self.info, getattr(self.renderer, "vector_bytes", 0))

    def build(self, lowered: Lowered) -> CLProgram:
        """The program of a lowered kernel: its source built (or its binary found in the cache) and loaded. A pipeline
        kernel launches whole work-groups (its sizes are groups x work-items per group): it is never guarded."""
        compiler: CLCompiler = self.compiler  # type: ignore[assignment]
        try:
            return CLProgram(self.ctx, lowered.name, compiler.compile(lowered.src), lowered.sig)
        except (cl.CLError, CompileError):  # a cached binary the driver refuses (a foreign or damaged file): rebuilt
            return CLProgram(self.ctx, lowered.name, compiler.compile(lowered.src, fresh=True), lowered.sig)

    def synchronize(self) -> None:
        """Wait until every command queued on this device has run."""
        cl.check(cl.lib().clFinish(self.ctx.queue), f"clFinish on {self.name}")


@functools.cache
def target_of(info: CLInfo, vector_bytes: int = 0) -> Target:
    """The optimizer's Target of an OpenCL device (the GPU fields only where this version of Target has them); one
    per device: every kernel lookup asks for it."""
    fields = {
        "threads": 1,
        "vector_bytes": vector_bytes,
        "gpu": True,
        "global_max": GLOBAL_MAX,
        "local_max": info.local_max,
        "max_group": info.max_group,
        "local_bytes": info.local_bytes,
        "group_multiple": info.group_multiple,
        "nonuniform": info.nonuniform,
    }
    known = Target._record_fields  # type: ignore[attr-defined]
    return Target(**{k: v for k, v in fields.items() if k in known})


def _renderer(name: str, info: CLInfo) -> OpenCLLanguage:
    """The OpenCL C renderer for this device (half and double only where its extensions say)."""
    return OpenCLLanguage(name, info.supports(dtypes.float16), info.supports(dtypes.float64))


def open_device(name: str) -> Compiled:
    """Open `CL` / `CL:n`: a new context and queue on the n-th OpenCL device (wrapping around)."""
    ids = cl.device_ids()
    device_id = ids[(DeviceName(name).index or 0) % len(ids)]
    ctx = CLContext.open(name, device_id, device_info(device_id))
    program = functools.partial(CLProgram, ctx)  # (name, binary, sig, guarded=False) -> a launchable kernel
    dev = CLDevice(name, CLAllocator(ctx), _renderer(name, ctx.info), CLCompiler(ctx), program)
    dev.ctx = ctx
    return dev
