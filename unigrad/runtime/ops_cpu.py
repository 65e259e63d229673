"""The CPU device: C source -> shared object with the system compiler (clang if present, else cc), run
through ctypes. Binaries are cached on disk under CACHEDIR, keyed by source and compiler flags."""

from __future__ import annotations

import atexit
import ctypes
import functools
import hashlib
import mmap
import os
import pathlib
import platform
import shutil
import tempfile
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from unigrad import config
from unigrad.dtype import DType
from unigrad.pipeline.optimize import Target
from unigrad.render.c import CLanguage
from unigrad.render.cstyle import KernelSignature
from unigrad.runtime import Allocator, Compiled, Compiler, Lowered, disk_cache, to_numpy_dtype
from unigrad.runtime import cpu_pool
from unigrad.runtime.cpu_pool import n_threads, pool

FORMAT = 2  # bump when what a cached binary holds changes (2: sealed, disk_cache.seal)
ALIGN = CLanguage.buffer_align  # every buffer starts on a whole vector: the renderer emits aligned accesses
HUGE_PAGE = 1 << 21  # a buffer this big or bigger starts on a huge page and asks the OS for huge pages
# mmap's default is a shared mapping (no transparent huge pages): ask for a private one where the OS has flags
MAP_PRIVATE = {"flags": mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS} if hasattr(mmap, "MAP_ANONYMOUS") else {}


class CPUAllocator(Allocator):
    """Host memory (uninitialized, aligned to 64 bytes); the handle is (keep-alive array, address).

    A buffer of HUGE_PAGE bytes or more starts on a 2 MiB boundary and is advised MADV_HUGEPAGE before its
    first touch: streaming kernels then take one TLB miss per 2 MiB instead of per 4 KiB (under a VM's nested
    paging that is 5-40% of a memory-bound kernel's bandwidth), and a fresh buffer faults 512x less often.
    Freed buffers are kept by size and handed out again (up to CACHE_BYTES), so a step that allocates the
    same intermediates every time does not pay the kernel's page faults again."""

    CACHE_BYTES = 1 << 30
    can_offset = True

    def __init__(self) -> None:
        self.cache: dict[int, list[Any]] = {}
        self.cached = 0

    def alloc(self, nbytes: int, dtype: DType, size: int) -> Any:
        if free := self.cache.get(nbytes):
            self.cached -= nbytes
            return free.pop()
        try:
            return self._new(nbytes)
        except (MemoryError, OSError):  # out of memory: give the cached buffers back first
            self.cache.clear()
            self.cached = 0
            return self._new(nbytes)

    @staticmethod
    def _new(nbytes: int) -> Any:
        if nbytes < HUGE_PAGE:
            raw = np.empty(nbytes + ALIGN, np.uint8)
            addr = raw.ctypes.data
            return raw, addr + (-addr % ALIGN)
        # a private anonymous mapping (returned to the OS when freed), 2 MiB more than asked: the slack around the
        # aligned range is never touched, so it costs address space, not memory
        m = mmap.mmap(-1, nbytes + HUGE_PAGE, **MAP_PRIVATE)
        raw = np.frombuffer(m, np.uint8)  # keeps the mapping alive
        offset = -raw.ctypes.data % HUGE_PAGE
        if hasattr(mmap, "MADV_HUGEPAGE"):
            try:
                m.madvise(mmap.MADV_HUGEPAGE, offset, nbytes - nbytes % HUGE_PAGE)
            except OSError:  # a hint: the kernel may not do huge pages
                pass
        return raw, raw.ctypes.data + offset

    def free(self, handle: Any, nbytes: int) -> None:
        if self.cached + nbytes <= self.CACHE_BYTES:
            self.cache.setdefault(nbytes, []).append(handle)
            self.cached += nbytes

    def offset(self, handle: Any, nbytes: int) -> Any:
        return (handle[0], handle[1] + nbytes)

    def copyin(self, handle: Any, src: np.ndarray) -> None:
        ctypes.memmove(handle[1], src.ctypes.data, src.nbytes)

    def copyout(self, handle: Any, dtype: DType, size: int) -> np.ndarray:
        out = np.empty(size, dtype=to_numpy_dtype(dtype))
        ctypes.memmove(out.ctypes.data, handle[1], out.nbytes)
        return out

    def host_view(self, handle: Any, nbytes: int) -> np.ndarray:
        raw, addr = handle
        start = addr - raw.ctypes.data  # the aligned start inside the keep-alive array
        return raw[start : start + nbytes]


def vector_unit(flags: frozenset[str], machine: str) -> tuple[int, int]:
    """(bytes per vector register, vector registers) of a CPU with these /proc/cpuinfo flags ("flags" on x86,
    "Features" on ARM) and `platform.machine()`: what `-march=native` code can use."""
    if machine in ("x86_64", "AMD64", "i686", "i386"):
        if "avx512f" in flags:
            return 64, 32
        return (32, 16) if "avx2" in flags or "avx" in flags else (16, 16)
    if machine in ("aarch64", "arm64"):
        return 16, 32  # NEON (SVE's width is not known at compile time)
    return 16, 16


@functools.cache
def host_cpu() -> tuple[frozenset[str], str]:
    """This machine's CPU: (its feature flags, a name that changes with the model and flags: compiled kernels and
    BEAM choices are cached under it, as -march=native code for one CPU may not run on another)."""
    flags: frozenset[str] = frozenset()
    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key in ("flags", "Features") and not flags:
                    flags = frozenset(value.split())
                elif key in ("model name", "CPU part") and not model:
                    model = value.strip()
                if flags and model:
                    break  # the first core's lines: the others repeat them
    except OSError:  # not Linux: the compiler still targets the host; the name is the platform's
        model = platform.processor()
    digest = hashlib.sha256(" ".join(sorted(flags)).encode()).hexdigest()[:8]
    return flags, f"{platform.machine()} {model} {digest}"


def host_vector_unit() -> tuple[int, int]:
    """(vector bytes, vector registers) of this machine (64, 32 with AVX-512; 32, 16 with AVX2)."""
    return vector_unit(host_cpu()[0], platform.machine())


def _find_cc() -> str:
    """CC, else gcc (it compiles a kernel in about a third of clang's time, and with GCC_FLAGS its register tiles
    run as fast or faster), else cc, else clang."""
    if config.CC.value:
        return str(config.CC.value)
    return next((cc for cc in ("gcc", "cc", "clang") if shutil.which(cc)), "cc")


@functools.cache
def _scratch_dir() -> pathlib.Path:
    """One temporary directory per process for binaries when the disk cache is off; removed at exit."""
    d = pathlib.Path(tempfile.mkdtemp(prefix="unigrad-nocache-"))
    atexit.register(shutil.rmtree, d, ignore_errors=True)
    return d


# gcc's scheduling before register allocation (register-pressure aware): it loads a matmul tile's B vectors into
# registers once instead of folding them into every FMA as memory operands, which saturated the load ports (the
# 4 x 16 AVX2 tile on one Zen 3 core: 64 -> 96 GFLOP/s, 96% of its FMA peak; clang does this by itself)
GCC_FLAGS = ("-fschedule-insns", "-fsched-pressure")


def _append_seal(path: pathlib.Path, key: str) -> None:
    """Seal a freshly compiled shared object in place (disk_cache.seal: the loader ignores the bytes after it)."""
    data = path.read_bytes()
    with open(path, "ab") as f:
        f.write(disk_cache.seal(key, data)[len(data) :])


class CCompiler(Compiler):
    base_flags = (
        "-O2",
        "-march=native",
        "-shared",
        "-fPIC",
        "-ffp-contract=off",
        "-fno-math-errno",
        "-fno-trapping-math",
    )

    def __init__(self) -> None:
        self.cc = _find_cc()
        self.flags = self.base_flags + (GCC_FLAGS if "gcc" in os.path.basename(self.cc) else ())
        self.machine = host_cpu()[1]  # -march=native: a binary is for this CPU only
        self.compiles = 0

    def key(self, src: str) -> str:
        parts = (str(FORMAT), self.cc, self.machine, *self.flags, src)
        return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:32]

    def compile(self, src: str) -> bytes:
        return self.compile_to_path(src).read_bytes()

    def compile_to_path(self, src: str) -> pathlib.Path:
        """Path of the shared object for `src`, compiling only on a cache miss."""
        scratch = bool(config.DISABLE_COMPILER_CACHE.value)
        cache = _scratch_dir() if scratch else pathlib.Path(config.CACHEDIR.value) / "cpu"
        key = self.key(src)
        out = cache / f"{key}.so"
        # a hit is mapped only after its seal is checked: a truncated .so fails in dlopen, a garbled one can SIGBUS
        if out.exists() and disk_cache.read_sealed(out, key) is not None:
            return out
        try:
            cache.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(suffix=".so", dir=cache)
        except OSError:  # a cache folder not ours to write: built in this process's scratch folder
            scratch, cache = True, _scratch_dir()
            out = cache / f"{key}.so"
            fd, tmp = tempfile.mkstemp(suffix=".so", dir=cache)
        os.close(fd)
        import subprocess  # only on a cache miss: a process whose kernels are all cached never loads it

        try:
            proc = subprocess.run(
                [self.cc, *self.flags, "-x", "c", "-", "-o", tmp, "-lm"], input=src.encode(), capture_output=True
            )
        except FileNotFoundError:
            os.unlink(tmp)
            how = "the CC environment variable names it" if config.CC.value else "no gcc, cc or clang on PATH"
            raise RuntimeError(
                f"CPU device: C compiler {self.cc!r} not found ({how}); install gcc or clang, or set CC to one"
            ) from None
        if proc.returncode != 0:
            os.unlink(tmp)
            raise RuntimeError(f"{self.cc} failed to compile a generated kernel:\n{proc.stderr.decode()}\n{src}")
        _append_seal(pathlib.Path(tmp), key)
        os.replace(tmp, out)  # atomic: parallel compiles of the same kernel are safe
        self.compiles += 1
        if not scratch:
            disk_cache.note_written(cache, ".so", out.stat().st_size)  # bounded as the other disk caches (CACHE_MB)
        return out


@functools.cache
def _loader() -> tuple[Any, Any]:
    """The dynamic loader's dlsym and dlclose (in the C library, or the libdl the interpreter links)."""
    libc = ctypes.CDLL(None)
    dlsym, dlclose = libc.dlsym, libc.dlclose
    dlsym.argtypes, dlsym.restype = [ctypes.c_void_p, ctypes.c_char_p], ctypes.c_void_p
    dlclose.argtypes, dlclose.restype = [ctypes.c_void_p], ctypes.c_int
    return dlsym, dlclose


def _symbol(lib: ctypes.CDLL, name: str) -> int:
    """The address of a kernel's function in its loaded shared object."""
    address = _loader()[0](lib._handle, name.encode())
    if not address:
        raise RuntimeError(f"CPU device: {lib._name} has no function {name!r}")
    return address


def _unload(handle: int) -> None:
    """Close a kernel's shared object (the loader unmaps it when no other handle to it is open)."""
    _loader()[1](handle)


class CPUProgram:
    """A compiled kernel. One with a THREAD axis runs through the worker pool: one dispatch, one chunk per core.

    Its shared object is closed (unmapped) as soon as nothing can call into it: the program, and every function
    prepare() made, hold the library. The functions are made from the symbols' addresses: one a CDLL hands out
    refers to itself (a cycle only the collector frees), so a program the runtime's bounded cache dropped would keep
    its library mapped until a full collection."""

    def __init__(self, name: str, lib_path: pathlib.Path, sig: KernelSignature):
        self.lib = ctypes.CDLL(str(lib_path))
        weakref.finalize(self.lib, _unload, self.lib._handle).atexit = False
        args = [ctypes.c_void_p] * len(sig.buffers) + [ctypes.c_int64] * len(sig.variables)
        self.fxn = ctypes.CFUNCTYPE(None, *args)(_symbol(self.lib, name))
        self.fxn.lib = self.lib  # whoever holds the function holds its library
        self.sig = sig
        self.slots = [slot for slot, _ in sig.buffers]
        if sig.threads:
            self.entry = ctypes.c_void_p(_symbol(self.lib, f"{name}_entry"))
            self.pool = pool(n_threads())
            self.ptrs_t = ctypes.c_void_p * max(1, len(sig.buffers))
            self.vals_t = ctypes.c_longlong * max(1, len(sig.variables))

    def __call__(self, bufs: list[Any], var_vals: dict[str, int]) -> None:
        # the kernel takes the buffers it uses, by slot (a buffer whose loads were simplified away is not one)
        ptrs = [bufs[slot].handle[1] for slot in self.slots]
        vals = [var_vals[v] for v in self.sig.variables] if self.sig.variables else []
        if self.sig.threads:
            self.pool.pool_run(self.entry, self.ptrs_t(*ptrs), self.vals_t(*vals), self.sig.threads)
        else:
            self.fxn(*ptrs, *vals)

    def prepare(self, bufs: list[Any], holes: list[tuple[int, int]]) -> Callable[[list[Any], dict[str, int]], None]:
        """This kernel bound to `bufs` for replays (TinyJit): call(inputs, var_vals) runs it. The addresses of the
        fixed buffers are read once, here; a hole (pos, slot) takes inputs[slot] at each call, in place of
        bufs[pos] (None). About half the cost of __call__ per kernel."""
        args = [0 if bufs[s] is None else bufs[s].handle[1] for s in self.slots]
        fill = [(i, slot) for i, s in enumerate(self.slots) for pos, slot in holes if s == pos]
        names = self.sig.variables
        if self.sig.threads:
            run, program, threads = self.pool.pool_run, self, self.sig.threads  # the program: its library stays open
            ptrs, vals = self.ptrs_t(*args), self.vals_t()

            def threaded(inputs: list[Any], var_vals: dict[str, int]) -> None:
                for i, slot in fill:
                    ptrs[i] = inputs[slot].handle[1]
                for j, v in enumerate(names):
                    vals[j] = var_vals[v]
                run(program.entry, ptrs, vals, threads)

            return threaded
        fxn = self.fxn
        if not fill and not names:
            fixed = tuple(args)
            return lambda inputs, var_vals: fxn(*fixed)

        def call(inputs: list[Any], var_vals: dict[str, int]) -> None:
            a = list(args)
            for i, slot in fill:
                a[i] = inputs[slot].handle[1]
            fxn(*a, *[var_vals[v] for v in names])

        return call


class CPUDevice(Compiled):
    @property
    def target(self) -> Target:
        """The cores (THREADS), this CPU's vector width and its vector registers."""
        return _target(n_threads())

    def wake(self) -> None:
        cpu_pool.wake()

    def build(self, lowered: Lowered) -> CPUProgram:
        """The program of a lowered kernel: its C source compiled (or found in the compiler's cache) and loaded."""
        path = self.compiler.compile_to_path(lowered.src)  # type: ignore[attr-defined]
        return CPUProgram(lowered.name, path, lowered.sig)


@functools.cache
def _target(threads: int) -> Target:
    vector_bytes, registers = host_vector_unit()
    return Target(threads, vector_bytes, registers, masked_tails=CLanguage.masked_vectors)


def open_device(name: str) -> Compiled:
    renderer = CLanguage(host_vector_unit()[0])
    return CPUDevice(name, CPUAllocator(), renderer, CCompiler(), CPUProgram)  # type: ignore[arg-type]
