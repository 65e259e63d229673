"""The DISK device (tinygrad's `disk:<path>`): a file as a tensor's memory.

`Tensor.empty(n, dtype=dtypes.uint8, device="disk:/path/to/file")`, or `Tensor(pathlib.Path(...))`, makes a tensor
whose buffer is the file mapped into memory (created, or grown, to the tensor's size): a slice of it read with
`.to("CPU")` or `.numpy()` reads those bytes, and an assign into it (or into a slice of it) writes the file. Kernels
run on the device as on the CPU (the same generated C, over the mapping); any other buffer on the device (a
kernel's output) is host memory, so only the file's own tensor touches the file. A file that cannot be written is
mapped copy-on-write: writes stay in memory.
"""

from __future__ import annotations

import mmap
import os
from typing import Any

import numpy as np

from unigrad.helpers import GlobalCounters
from unigrad.render.c import CLanguage
from unigrad.runtime import Buffer, Compiled
from unigrad.runtime.ops_cpu import CCompiler, CPUAllocator, CPUDevice, CPUProgram, host_vector_unit


class FileMapping:
    """A file mapped into memory from its start: `mm` (None for an empty file) and the numpy view keeping it."""

    def __init__(self, path: str, nbytes: int) -> None:
        self.path, self.nbytes = path, nbytes
        flags = os.O_RDWR | os.O_CREAT
        try:
            fd = os.open(path, flags, 0o644)
            writable = True
        except PermissionError:
            fd = os.open(path, os.O_RDONLY)
            writable = False
        try:
            if writable and os.fstat(fd).st_size < nbytes:
                os.ftruncate(fd, nbytes)  # grown with zeros, as tinygrad's disk tensors
            if os.fstat(fd).st_size < nbytes:
                raise ValueError(f"DISK:{path}: the file holds {os.fstat(fd).st_size} bytes, the tensor needs {nbytes}")
            access = mmap.ACCESS_WRITE if writable else mmap.ACCESS_COPY
            self.mm = mmap.mmap(fd, nbytes, access=access) if nbytes else None
        finally:
            os.close(fd)
        self.array = np.frombuffer(self.mm, np.uint8) if self.mm is not None else np.zeros(64, np.uint8)


class DiskAllocator(CPUAllocator):
    """The CPU's host memory for every buffer, but the file's own one (`map_file`). A handle is (keep-alive, address),
    a file's (FileMapping, address, path): never cached for reuse by another buffer."""

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path

    def map_file(self, buf: Buffer) -> None:
        """Make `buf` (not yet allocated) the file itself, mapped from its start."""
        if buf.allocated:
            raise RuntimeError(f"DISK:{self.path}: the buffer already has memory")
        fm = FileMapping(self.path, buf.nbytes)
        buf._handle = (fm, fm.array.ctypes.data, self.path)
        GlobalCounters.allocated(buf.nbytes)

    def host_view(self, handle: Any, nbytes: int) -> np.ndarray:
        """The file's mapped bytes (its handle is (FileMapping, address, path)), or another buffer's memory."""
        if len(handle) == 3:
            return handle[0].array.view(np.uint8)[:nbytes]
        return super().host_view(handle, nbytes)

    def free(self, handle: Any, nbytes: int) -> None:
        if len(handle) == 3:  # the file: its writes are in the page cache; unmapped when the mapping is collected
            return
        super().free(handle, nbytes)


def open_device(name: str) -> Compiled:
    path = name.split(":", 1)[1]
    if not path:
        raise ValueError("a DISK device names its file: 'disk:/path/to/file'")
    renderer = CLanguage(host_vector_unit()[0])
    return CPUDevice(name, DiskAllocator(path), renderer, CCompiler(), CPUProgram)  # type: ignore[arg-type]
