"""ctypes bindings of NVRTC (libnvrtc), NVIDIA's runtime compiler of CUDA C++: source -> CUBIN for one sm_XX.

In: nothing at import (the library is found and loaded on first use). Out: `find()` lists the libnvrtc files of this
machine (the knob NVRTC_PATH first, then the pip wheels' nvidia/*/lib of every site-packages folder, newest CUDA
first, then system CUDA folders and the loader's path); `load(max_major)` loads the newest one a driver of that CUDA
major version can run the CUBINs of (a CUBIN loads on drivers of its own major CUDA version); `Nvrtc.compile` makes
a CUBIN (never PTX: the driver never JIT-compiles), raising NvrtcCompileError with NVRTC's log on a refused source.
A machine without NVRTC gets NvrtcMissing saying what to install.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import glob
import os
import re
import site
import sys
from typing import Any

from unigrad import config

P, INT, SIZE, STR = ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t, ctypes.c_char_p
# name: (return type, argument types); every function returns an nvrtcResult
SIGNATURES: dict[str, tuple[Any, tuple[Any, ...]]] = {
    "nvrtcVersion": (INT, (P, P)),
    "nvrtcGetNumSupportedArchs": (INT, (P,)),
    "nvrtcGetSupportedArchs": (INT, (P,)),
    "nvrtcCreateProgram": (INT, (P, STR, STR, INT, P, P)),
    "nvrtcDestroyProgram": (INT, (P,)),
    "nvrtcCompileProgram": (INT, (P, INT, P)),
    "nvrtcGetProgramLogSize": (INT, (P, P)),
    "nvrtcGetProgramLog": (INT, (P, P)),
    "nvrtcGetCUBINSize": (INT, (P, P)),
    "nvrtcGetCUBIN": (INT, (P, P)),
    "nvrtcGetErrorString": (STR, (INT,)),
}
COMPILATION_FAILED = 6  # NVRTC_ERROR_COMPILATION: the source was refused (the log says why)
SYSTEM_GLOBS = (
    "/usr/local/cuda/lib64/libnvrtc.so*",
    "/usr/local/cuda-*/lib64/libnvrtc.so*",
    "/usr/local/cuda*/targets/*/lib/libnvrtc.so*",
    "/usr/lib/x86_64-linux-gnu/libnvrtc.so*",
    "/usr/lib64/libnvrtc.so*",
)
INSTALL = (
    "pip install nvidia-cuda-nvrtc (or unigrad's extra: pip install 'unigrad[cuda]'), or install the CUDA toolkit, "
    "or point the knob NVRTC_PATH at libnvrtc.so"
)


class NvrtcMissing(RuntimeError):
    """No NVRTC library on this machine (or none a driver of the CUDA version asked can run the output of)."""


class NvrtcError(RuntimeError):
    """An NVRTC call failed (not a refused source: NvrtcCompileError)."""


class NvrtcCompileError(NvrtcError):
    """NVRTC refused a source: `log` is its compile log."""

    def __init__(self, log: str) -> None:
        self.log = log
        super().__init__(log)


def _major(path: str) -> int:
    """The CUDA major version of a libnvrtc file from its name (libnvrtc.so.13 -> 13; 0 when it has none)."""
    m = re.search(r"libnvrtc\.so\.(\d+)", os.path.basename(path))
    return int(m.group(1)) if m else 0


def find() -> list[str]:
    """Every libnvrtc of this machine, in the order tried: NVRTC_PATH (a file, or a folder holding one), the pip
    wheels' nvidia/<cuXX or cuda_nvrtc>/lib (newest CUDA first), system CUDA folders, the dynamic loader's path."""
    out: list[str] = []
    knob = str(config.NVRTC_PATH.value)
    if knob:
        out += (
            sorted(glob.glob(os.path.join(knob, "libnvrtc.so*")), key=_major, reverse=True)
            if os.path.isdir(knob)
            else [knob]
        )
    folders = [*site.getsitepackages(), site.getusersitepackages(), *sys.path]
    wheels = {
        os.path.realpath(p) for f in folders for p in glob.glob(os.path.join(f, "nvidia", "*", "lib", "libnvrtc.so*"))
    }
    out += sorted(wheels, key=_major, reverse=True)
    system = {os.path.realpath(p) for pattern in SYSTEM_GLOBS for p in glob.glob(pattern)}
    out += sorted(system, key=_major, reverse=True)
    if (found := ctypes.util.find_library("nvrtc")) is not None:
        out.append(found)
    # the loadable names only (libnvrtc.so.13, not libnvrtc.so.13.0.48's builtins or libnvrtc-builtins), each once
    return list(dict.fromkeys(p for p in out if "builtins" not in os.path.basename(p) and not p.endswith(".alt.so")))


class Nvrtc:
    """One loaded libnvrtc: its path, CUDA version (major, minor) and the architectures (sm numbers) it targets."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.lib = ctypes.CDLL(path)
        for fn, (restype, argtypes) in SIGNATURES.items():
            f = getattr(self.lib, fn)
            f.restype, f.argtypes = restype, argtypes
        major, minor = INT(0), INT(0)
        self.check(self.lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor)), "nvrtcVersion")
        self.version = (major.value, minor.value)
        n = INT(0)
        self.check(self.lib.nvrtcGetNumSupportedArchs(ctypes.byref(n)), "nvrtcGetNumSupportedArchs")
        archs = (INT * n.value)()
        self.check(self.lib.nvrtcGetSupportedArchs(archs), "nvrtcGetSupportedArchs")
        self.archs = tuple(archs)

    def check(self, status: int, what: str) -> None:
        if status != 0:
            raise NvrtcError(f"{what}: {self.lib.nvrtcGetErrorString(status).decode()} ({status}) [{self.path}]")

    def supports(self, arch: str) -> bool:
        """NVRTC can make CUBINs for `arch` (sm_90, sm_90a, ...)."""
        m = re.fullmatch(r"sm_(\d+)[af]?", arch)
        return m is not None and int(m.group(1)) in self.archs

    def compile(self, src: str, name: str, options: list[str]) -> bytes:
        """The CUBIN of `src` (a file called `name` in the log); NvrtcCompileError with the log when refused."""
        prog = P()
        self.check(
            self.lib.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), name.encode(), 0, None, None), "create"
        )
        try:
            opts = [o.encode() for o in options]
            status = self.lib.nvrtcCompileProgram(prog, len(opts), (STR * len(opts))(*opts))
            if status == COMPILATION_FAILED:
                raise NvrtcCompileError(self.log(prog))
            self.check(status, f"nvrtcCompileProgram({' '.join(options)})")
            size = SIZE(0)
            self.check(self.lib.nvrtcGetCUBINSize(prog, ctypes.byref(size)), "nvrtcGetCUBINSize")
            if size.value == 0:  # a virtual architecture (compute_XX) gives PTX only
                raise NvrtcError(f"NVRTC made no CUBIN with options {options}: a real architecture (sm_XX) is needed")
            cubin = ctypes.create_string_buffer(size.value)
            self.check(self.lib.nvrtcGetCUBIN(prog, cubin), "nvrtcGetCUBIN")
            return cubin.raw
        finally:
            self.lib.nvrtcDestroyProgram(ctypes.byref(prog))

    def log(self, prog: Any) -> str:
        size = SIZE(0)
        self.check(self.lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size)), "nvrtcGetProgramLogSize")
        buf = ctypes.create_string_buffer(size.value)
        self.check(self.lib.nvrtcGetProgramLog(prog, buf), "nvrtcGetProgramLog")
        return buf.value.decode(errors="replace")


def load(max_major: int = 0) -> Nvrtc:
    """The first NVRTC of find() that loads, of CUDA major version at most `max_major` (0: any); NvrtcMissing when
    none does. Loaded once per (max_major, NVRTC_PATH)."""
    return _load(max_major, str(config.NVRTC_PATH.value))


@functools.cache
def _load(max_major: int, knob: str) -> Nvrtc:
    tried = []
    for path in find():
        try:
            nv = Nvrtc(path)
        except (OSError, AttributeError, NvrtcError) as e:
            tried.append(f"{path} ({e})")
            continue
        if max_major and nv.version[0] > max_major:
            tried.append(f"{path} (CUDA {nv.version[0]}.{nv.version[1]}: newer than the driver's CUDA {max_major})")
            continue
        return nv
    seen = "; tried " + ", ".join(tried) if tried else ""
    need = f" for CUDA {max_major} or older (the driver's)" if max_major else ""
    raise NvrtcMissing(f"NVRTC (libnvrtc.so{need}) was not found{seen}: {INSTALL}")


def cubin_sm(cubin: bytes) -> int:
    """The sm number a CUBIN is for (90 for sm_90): bits 8-15 of its ELF64 header's e_flags (at byte 48)."""
    if cubin[:4] != b"\x7fELF" or len(cubin) < 52:
        raise ValueError("not a CUBIN (an ELF file)")
    return (int.from_bytes(cubin[48:52], "little") >> 8) & 0xFF


def unavailable() -> str | None:
    """Why NVRTC cannot be used here (a test's skip reason), or None when it can."""
    try:
        load()
    except NvrtcMissing as e:
        return str(e)
    return None
