"""The on-disk cache of lowered kernels: a kernel AST -> its Lowered (LINEAR, source, signature), across processes.

In: a kernel SINK as rangeify made it (before Optimize), the device and its Target. Out: the Lowered that optimize ->
expand -> isel -> linearize -> render gave for it in an earlier process, or None. Lowering is most of the cost of a
model's first step (about 13 ms of Python per kernel): a script run again, or a test suite run twice, skips it. The
device compiler's own cache (CACHEDIR/cpu) then finds the binary too.

An entry is a pickle (UOps pickle as their constructor calls, so the LINEAR is rebuilt through hash-consing and
DTypes come back as the interned ones) under CACHEDIR/lowered/<key>.pkl, where the key hashes the kernel's whole
structure (ir.text.structure: every node, not repr's shortened listing), the device, its renderer and Target, the
knobs that decide the opts (NOOPT), and the version of unigrad's code (each source file's size and modification
time: an edit anywhere gives new keys, never a stale lowering).
Off with DISABLE_COMPILER_CACHE, under BEAM (the search keeps its own cache of opts) and under SPEC or DEBUG >= 3
(they verify or print what each stage makes). An entry that cannot be read is a miss; one that cannot be pickled
(a graph deeper than the recursion limit) is not written.
"""

from __future__ import annotations

import functools
import hashlib
import os
import pathlib
import pickle

from unigrad import config
from unigrad.helpers import write_atomic
from unigrad.ir.text import structure
from unigrad.ir.uop import UOp
from unigrad.pipeline.optimize.opts import Target
from unigrad.runtime import Device, Lowered

FORMAT = 1  # bump when the pickled layout changes
PACKAGE = pathlib.Path(__file__).resolve().parent.parent


def enabled() -> bool:
    return not (
        config.DISABLE_COMPILER_CACHE.value or config.BEAM.value or config.SPEC.value or config.DEBUG.value >= 3
    )


@functools.cache
def code_version() -> str:
    """A hash of every source file of the package (path, size, modification time): any edit changes it."""
    parts = []
    for folder, dirs, files in os.walk(PACKAGE):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for name in files:
            if name.endswith(".py"):
                st = os.stat(os.path.join(folder, name))
                parts.append(f"{folder[len(str(PACKAGE)) :]}/{name}\0{st.st_size}\0{st.st_mtime_ns}")
    return hashlib.sha256("\n".join(sorted(parts)).encode()).hexdigest()[:16]


def key(device: str, ast: UOp, target: Target) -> str:
    renderer = type(Device[device].renderer).__name__
    parts = (str(FORMAT), code_version(), device, renderer, repr(target), str(config.NOOPT.value), structure(ast))
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:32]


def _path(k: str) -> pathlib.Path:
    return pathlib.Path(config.CACHEDIR.value) / "lowered" / f"{k}.pkl"


def load(k: str) -> Lowered | None:
    """The Lowered saved under key k, or None (no entry, or one that cannot be read)."""
    try:
        data = _path(k).read_bytes()
    except OSError:
        return None
    try:
        lowered = pickle.loads(data)
    except Exception:  # a truncated or foreign file: a miss, overwritten by the next save
        return None
    return lowered if isinstance(lowered, Lowered) else None


def save(k: str, lowered: Lowered) -> None:
    """Write the entry atomically (a parallel process may write the same one); nothing when it cannot be pickled
    or written."""
    try:
        data = pickle.dumps(lowered, protocol=pickle.HIGHEST_PROTOCOL)
    except (RecursionError, pickle.PicklingError, TypeError, AttributeError):
        return
    try:
        write_atomic(_path(k), data)
    except OSError:
        return
