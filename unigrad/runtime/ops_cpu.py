"""The CPU device: C source -> shared object with the system compiler (clang if present, else cc), run
through ctypes. Binaries are cached on disk under CACHEDIR, keyed by source and compiler flags."""

from __future__ import annotations

import atexit
import ctypes
import functools
import hashlib
import os
import pathlib
import shutil
import subprocess
import tempfile
from typing import Any

import numpy as np

from unigrad import config
from unigrad.dtype import DType
from unigrad.render.c import CLanguage
from unigrad.render.cstyle import KernelSignature
from unigrad.runtime import Allocator, Compiled, Compiler, to_numpy_dtype

ALIGN = 64


class CPUAllocator(Allocator):
    """Host memory from ctypes, aligned to 64 bytes; the handle is (keep-alive object, address)."""

    def alloc(self, nbytes: int, dtype: DType, size: int) -> Any:
        raw = (ctypes.c_uint8 * (nbytes + ALIGN))()
        addr = ctypes.addressof(raw)
        return raw, addr + (-addr % ALIGN)

    def copyin(self, handle: Any, src: np.ndarray) -> None:
        ctypes.memmove(handle[1], src.ctypes.data, src.nbytes)

    def copyout(self, handle: Any, dtype: DType, size: int) -> np.ndarray:
        out = np.empty(size, dtype=to_numpy_dtype(dtype))
        ctypes.memmove(out.ctypes.data, handle[1], out.nbytes)
        return out


def _find_cc() -> str:
    if config.CC.value:
        return str(config.CC.value)
    return "clang" if shutil.which("clang") else "cc"


@functools.cache
def _scratch_dir() -> pathlib.Path:
    """One temporary directory per process for binaries when the disk cache is off; removed at exit."""
    d = pathlib.Path(tempfile.mkdtemp(prefix="unigrad-nocache-"))
    atexit.register(shutil.rmtree, d, ignore_errors=True)
    return d


class CCompiler(Compiler):
    flags = ("-O2", "-march=native", "-shared", "-fPIC", "-ffp-contract=off", "-fno-math-errno", "-fno-trapping-math")

    def __init__(self) -> None:
        self.cc = _find_cc()

    def key(self, src: str) -> str:
        return hashlib.sha256("\0".join((self.cc, *self.flags, src)).encode()).hexdigest()[:32]

    def compile(self, src: str) -> bytes:
        return self.compile_to_path(src).read_bytes()

    def compile_to_path(self, src: str) -> pathlib.Path:
        """Path of the shared object for `src`, compiling only on a cache miss."""
        if config.DISABLE_COMPILER_CACHE.value:
            cache = _scratch_dir()
        else:
            cache = pathlib.Path(config.CACHEDIR.value) / "cpu"
        out = cache / f"{self.key(src)}.so"
        if out.exists():
            return out
        cache.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(suffix=".so", dir=cache)
        os.close(fd)
        proc = subprocess.run(
            [self.cc, *self.flags, "-x", "c", "-", "-o", tmp, "-lm"], input=src.encode(), capture_output=True
        )
        if proc.returncode != 0:
            os.unlink(tmp)
            raise RuntimeError(f"{self.cc} failed to compile a generated kernel:\n{proc.stderr.decode()}\n{src}")
        os.replace(tmp, out)  # atomic: parallel compiles of the same kernel are safe
        return out


class CPUProgram:
    def __init__(self, name: str, lib_path: pathlib.Path, sig: KernelSignature):
        self.lib = ctypes.CDLL(str(lib_path))
        self.fxn = getattr(self.lib, name)
        self.fxn.argtypes = [ctypes.c_void_p] * len(sig.buffers) + [ctypes.c_int64] * len(sig.variables)
        self.fxn.restype = None
        self.sig = sig

    def __call__(self, bufs: list[Any], var_vals: dict[str, int]) -> None:
        # the kernel takes the buffers it uses, by slot (a buffer whose loads were simplified away is not one)
        self.fxn(*(bufs[slot].handle[1] for slot, _ in self.sig.buffers), *(var_vals[v] for v in self.sig.variables))


class CPUDevice(Compiled):
    def build(self, name: str, src: str, sig: KernelSignature, linear: Any) -> tuple[bytes, CPUProgram]:
        path = self.compiler.compile_to_path(src)  # type: ignore[attr-defined]
        return path.read_bytes(), CPUProgram(name, path, sig)


def open_device(name: str) -> Compiled:
    return CPUDevice(name, CPUAllocator(), CLanguage(), CCompiler(), CPUProgram)  # type: ignore[arg-type]
