"""The runtime: the Device registry, Buffers, and the device contract (allocator + compiler + program).

A device is `Compiled(name, allocator, renderer, compiler, program_factory)`. `Device["CPU"]` opens a
device on first use; `Device.DEFAULT` is the DEVICE knob. Buffers allocate lazily and copy in/out
through numpy at the boundary only.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from typing import Any

import numpy as np

from unigrad import config
from unigrad.dtype import DType, dtypes
from unigrad.helpers import GlobalCounters, record
from unigrad.ir.alu import fp8_to_float
from unigrad.ir.persist import loads
from unigrad.ir.uop import UOp
from unigrad.pipeline.optimize.opts import Target
from unigrad.render.cstyle import KernelSignature

DEVICES = {
    "CPU": "unigrad.runtime.ops_cpu",
    "PYTHON": "unigrad.runtime.ops_python",
    "DISK": "unigrad.runtime.ops_disk",
    "CL": "unigrad.runtime.ops_cl",
    "CUDA": "unigrad.runtime.ops_cuda",
    "NULL": "unigrad.runtime.ops_null",
}


class Allocator:
    """Device memory: `alloc` returns an opaque handle; copies go through host numpy arrays."""

    # whether offset() can address a buffer from a byte offset on: kernels that differ only in where their read-only
    # slices start then share one program (pipeline/rebase.py, runtime/offsets.py)
    can_offset = False

    def offset(self, handle: Any, nbytes: int) -> Any:
        """The handle of the buffer's memory from byte `nbytes` on (where can_offset)."""
        raise NotImplementedError

    def alloc(self, nbytes: int, dtype: DType, size: int) -> Any:
        raise NotImplementedError

    def copyin(self, handle: Any, src: np.ndarray) -> None:
        """Write the flat `src` (at most the buffer's size) to the start of the buffer."""
        raise NotImplementedError

    def copyout(self, handle: Any, dtype: DType, size: int) -> np.ndarray:
        """The first `size` elements (at most the buffer's) as a flat numpy array (bfloat16: its raw bits)."""
        raise NotImplementedError

    def free(self, handle: Any, nbytes: int) -> None:
        """A buffer is gone: its memory may be reused (default: left to the garbage collector)."""

    def host_view(self, handle: Any, nbytes: int) -> np.ndarray | None:
        """The buffer's bytes as a writable uint8 numpy array over its own memory, where the host can address it
        (MPI reads and writes it without a copy: unigrad.distributed); None where it cannot (default)."""
        return None


class Compiler:
    def compile(self, src: str) -> bytes:
        raise NotImplementedError


class CompileError(RuntimeError):
    """A device's compiler refused a kernel's source; the message quotes the compiler's log and the lines it names."""


ProgramFactory = Callable[[str, bytes, KernelSignature, Any], Callable[..., None]]


@record(frozen=True)
class Lowered:
    """A kernel through the pipeline, before the device compiler: its LINEAR, source and signature.

    `graph` is the LINEAR, or its encoding (ir/persist.py) when the kernel was read from the disk cache: `linear`
    decodes it when first asked. A device that compiles the source (CPU) never needs it."""

    name: str
    graph: UOp | bytes
    src: str
    sig: KernelSignature

    @property
    def linear(self) -> UOp:
        g = self.graph
        if type(g) is bytes:
            g = loads(g)
            object.__setattr__(self, "graph", g)  # decoded once (a record's own refusal of assignment is skipped)
        return g  # type: ignore[return-value]


@record
class Compiled:
    name: str
    allocator: Allocator
    renderer: Any
    compiler: Compiler
    program: ProgramFactory

    @property
    def target(self) -> Target:
        """What the kernel optimizer may assume of this device: one thread, its renderer's vector width."""
        return Target(1, getattr(self.renderer, "vector_bytes", 0), 32)

    def wake(self) -> None:
        """Kernels are about to be scheduled and launched here: get ready (the CPU wakes its worker threads)."""


class DeviceName(str):
    """A canonical device name ("CPU", "CPU:1"), as Tensor.device holds it: a str everywhere, that also reads as a
    torch.device (`x.device.type == "cpu"`, `.index`)."""

    __slots__ = ()

    @property
    def type(self) -> str:
        return self.partition(":")[0].lower()

    @property
    def index(self) -> int | None:
        idx = self.partition(":")[2]
        return int(idx) if idx.isdigit() else None


class _DeviceRegistry:
    def __init__(self) -> None:
        self._open: dict[str, Compiled] = {}
        self._names: dict[str, DeviceName] = {}  # one DeviceName per canonical name

    def canonicalize(self, device: Any) -> Any:
        """A device name in canonical form ("cpu:1" -> "CPU:1"); a tuple or list of names is a multi-device
        tuple of distinct canonical names."""
        if isinstance(device, (tuple, list)):
            devices = tuple(self.canonicalize(d) for d in device)
            if len(devices) < 2 or len(set(devices)) != len(devices):
                raise ValueError(f"a multi-device tuple needs at least two distinct devices, got {device!r}")
            return devices
        if device is not None and not isinstance(device, str):
            raise TypeError(f"a device is a name such as 'CPU' or 'CPU:1' (or a tuple of them), got {device!r}")
        d = (device or self.DEFAULT).upper()
        base = d.split(":")[0]
        if base == "DISK":  # DISK:<path>: the path keeps its case
            d = "DISK:" + device.split(":", 1)[1] if ":" in device else d
        if base not in DEVICES:
            raise ValueError(f"unknown device {str(device)!r}; available: {sorted(DEVICES)}")
        if (name := self._names.get(d)) is None:
            name = self._names[d] = DeviceName(d)
        return name

    def __getitem__(self, device: str) -> Compiled:
        if (dev := self._open.get(device)) is not None:  # a canonical name already open: every kernel run asks
            return dev
        d = self.canonicalize(device)
        if isinstance(d, tuple):
            raise TypeError(f"Device[...] opens one device; got the multi-device tuple {d}")
        if d not in self._open:
            mod = importlib.import_module(DEVICES[d.split(":")[0]])
            self._open[d] = mod.open_device(d)
        return self._open[d]

    @property
    def DEFAULT(self) -> str:
        return str(config.DEVICE.value).upper()


Device = _DeviceRegistry()


def to_numpy_dtype(dt: DType) -> np.dtype:
    if dt is dtypes.bfloat16:
        return np.dtype(np.uint16)  # raw bits at the boundary
    if dt in dtypes.fp8s:
        return np.dtype(np.uint8)
    if dt.fmt is None:
        raise TypeError(f"{dt} has no numpy equivalent")
    return np.dtype(dt.fmt)


@functools.cache
def fp8_values(dt: DType) -> np.ndarray:
    """The float32 value of each of the 256 codes of an fp8 dtype (ir/alu.py's definition): the copy-out table."""
    return np.array([fp8_to_float(code, dt) for code in range(256)], dtype=np.float32)


class Buffer:
    """`size` elements of `dtype` on `device`, allocated on first use."""

    __slots__ = ("device", "size", "dtype", "_handle")

    def __init__(self, device: str, size: int, dtype: DType):
        self.device, self.size, self.dtype = device, size, dtype
        self._handle: Any = None

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def allocated(self) -> bool:
        return self._handle is not None

    def __del__(self) -> None:
        if self._handle is not None:
            GlobalCounters.allocated(-self.nbytes)
            try:
                Device[self.device].allocator.free(self._handle, self.nbytes)
            except Exception:  # noqa: S110 - interpreter shutdown: the registry may be gone already
                pass

    def ensure_allocated(self) -> Buffer:
        if self._handle is None:
            self._handle = Device[self.device].allocator.alloc(self.nbytes, self.dtype, self.size)
            GlobalCounters.allocated(self.nbytes)
        return self

    @property
    def handle(self) -> Any:
        return self.ensure_allocated()._handle

    def copyin(self, data: np.ndarray) -> Buffer:
        flat = np.ascontiguousarray(data).reshape(-1)
        if flat.size != self.size:
            raise ValueError(f"copyin: buffer holds {self.size} elements, got {flat.size}")
        Device[self.device].allocator.copyin(self.handle, flat.astype(to_numpy_dtype(self.dtype), copy=False))
        return self

    def copy_from(self, src: Buffer) -> Buffer:
        """Copy `src`'s elements here, through the host, as raw bits (bfloat16 stays bfloat16). Either buffer may be
        one the memory plan shares, larger than the values copied: the smaller size covers them."""
        n = min(self.size, src.size)
        Device[self.device].allocator.copyin(
            self.handle, Device[src.device].allocator.copyout(src.handle, src.dtype, n)
        )
        return self

    def numpy(self) -> np.ndarray:
        """A host copy as a flat numpy array (bfloat16 and the fp8s come out as float32)."""
        out = Device[self.device].allocator.copyout(self.handle, self.dtype, self.size)
        if self.dtype is dtypes.bfloat16:
            return (out.astype(np.uint32) << 16).view(np.float32)
        if self.dtype in dtypes.fp8s:
            return fp8_values(self.dtype)[out]
        return out

    def __repr__(self) -> str:
        return f"<Buffer {self.device} {self.size} {self.dtype}>"

    def __reduce__(self) -> tuple:
        """Pickled with its contents (raw, as stored), read now; an unallocated buffer without."""
        raw = Device[self.device].allocator.copyout(self.handle, self.dtype, self.size) if self.allocated else None
        return _load_buffer, (str(self.device), self.size, self.dtype, raw)


def _load_buffer(device: str, size: int, dtype: DType, raw: np.ndarray | None) -> Buffer:
    buf = Buffer(device, size, dtype)
    if raw is not None:
        Device[device].allocator.copyin(buf.ensure_allocated().handle, raw)
    return buf
