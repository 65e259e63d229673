"""The on-disk caches shared across processes: lowered kernels, schedules (and the size bound of the compiler's).

In: a folder under CACHEDIR, a key made of strings, and a value: any picklable object, UOp graphs inside it
included. Out: the value an earlier process saved under the same key, or None.

- Keys hash their parts with the version of unigrad's code (each source file's size and modification time), so an
  edit anywhere gives new keys, never a stale entry.
- Values are pickled with their UOps as one flat table (ir/persist.py): a graph of any depth, each shared node
  written once, rebuilt through hash-consing.
- Writes are atomic (helpers.write_atomic). Every entry of every cache folder (these, the compilers' binaries, BEAM's
  opts) ends in a seal: the SHA-256 of its key and its bytes. An entry that is truncated, garbled, or written under
  another key is caught by the seal before it is used (before a shared object is mapped: a garbled one can kill the
  process with SIGBUS), warned about once and rebuilt. A value that cannot be pickled is not written.
- Each folder is bounded: a folder over CACHE_MB megabytes loses its least recently used entries (a read refreshes an
  entry's modification time) until it is under three quarters of that. Its size is looked at (a scan: ~0.5 s for
  100k entries) after a process wrote a sixteenth of CACHE_MB into it, and at a process's first write when no
  process has for a day (a stamp file in the folder), so a folder is scanned rarely and never grows unchecked.
- Off (no reads, no writes) with DISABLE_COMPILER_CACHE, under BEAM (the search keeps its own cache of opts) and
  under SPEC or DEBUG >= 3 (they verify or print what each stage makes).
"""

from __future__ import annotations

import functools
import hashlib
import os
import pathlib
import time
import warnings
from collections.abc import Callable
from typing import Any

from unigrad import config
from unigrad.helpers import write_atomic
from unigrad.ir.persist import UNPICKLABLE, dumps, loads

FORMAT = 3  # bump when the layout of entries changes
PACKAGE = pathlib.Path(__file__).resolve().parent.parent
PRUNE_AGE_S = 24 * 3600  # a folder nobody pruned for this long is looked at by the next process writing into it
STAMP = ".pruned"  # the file whose modification time says when the folder was last looked at
_warned: set[str] = set()  # folders whose damaged entries were warned about
_written: dict[str, int] = {}  # folder -> bytes this process wrote into it since it last looked at its size


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


# ---------------------------------------------------------------- seals: an entry checked before it is used

SEAL_MAGIC = b"\nunigrad-seal "  # then the hex SHA-256 of (key, data) and a newline: 80 bytes of text at the end
SEAL_BYTES = len(SEAL_MAGIC) + 64 + 1


def _digest(key: str, data: bytes | memoryview) -> bytes:
    h = hashlib.sha256(key.encode())
    h.update(b"\0")
    h.update(data)
    return h.hexdigest().encode()


def seal(key: str, data: bytes) -> bytes:
    """data followed by its seal (the checksum of key and data). Bytes appended to a shared object do not change
    what the loader maps, so a compiled kernel is sealed in place too."""
    return data + SEAL_MAGIC + _digest(key, data) + b"\n"


def unseal(key: str, blob: bytes) -> bytes | None:
    """The data that seal(key, data) made `blob` from, or None: blob is truncated, garbled, unsealed (an older
    format) or sealed under another key."""
    if len(blob) < SEAL_BYTES:
        return None
    body = memoryview(blob)[: len(blob) - SEAL_BYTES]
    tail = blob[len(blob) - SEAL_BYTES :]
    if not tail.startswith(SEAL_MAGIC) or tail[len(SEAL_MAGIC) : -1] != _digest(key, body):
        return None
    return bytes(body)


def damaged(path: pathlib.Path) -> None:
    """Remove a cache entry that failed its seal (the caller rebuilds it); warn once per folder per process."""
    if str(path.parent) not in _warned:
        _warned.add(str(path.parent))
        warnings.warn(
            f"unigrad: damaged cache entries in {path.parent} (truncated, garbled or foreign; first {path.name}) are "
            "rebuilt",
            RuntimeWarning,
            stacklevel=3,
        )
    try:
        path.unlink()
    except OSError:
        pass


def read_sealed(path: pathlib.Path, key: str) -> bytes | None:
    """The data of the sealed entry at path, or None: no entry, or a damaged one (warned about and removed). A hit
    refreshes the entry's modification time (recently used: the last to be pruned)."""
    try:
        blob = path.read_bytes()
    except OSError:
        return None
    data = unseal(key, blob)
    if data is None:
        damaged(path)
        return None
    try:
        os.utime(path)
    except OSError:
        pass
    return data


# ---------------------------------------------------------------- folders of entries


def prune(folder: pathlib.Path, suffix: str) -> None:
    """Drop a folder's least recently used entries (`*suffix` files, by modification time) while it holds more than
    CACHE_MB megabytes, down to three quarters of that. Entries another process removes meanwhile are skipped."""
    limit = config.CACHE_MB.value * (1 << 20)
    entries = []
    total = 0
    try:
        with os.scandir(folder) as it:
            for e in it:
                if e.name.endswith(suffix):
                    try:
                        st = e.stat()
                    except OSError:
                        continue
                    entries.append((st.st_mtime_ns, st.st_size, e.path))
                    total += st.st_size
    except OSError:
        return
    if total <= limit:
        return
    entries.sort()
    for _, size, path in entries:
        if total <= limit * 3 // 4:
            break
        try:
            os.unlink(path)
        except OSError:
            continue
        total -= size


def note_written(folder: pathlib.Path, suffix: str, nbytes: int) -> None:
    """Count an entry of nbytes written into folder (its files end in suffix) and prune the folder when it is due."""
    key = str(folder)
    first = key not in _written
    total = _written[key] = _written.get(key, 0) + nbytes
    if total * 16 < config.CACHE_MB.value * (1 << 20) and not (first and _stamp_older(folder, PRUNE_AGE_S)):
        return
    _written[key] = 0
    prune(folder, suffix)
    try:
        (folder / STAMP).touch()
    except OSError:
        pass


def _stamp_older(folder: pathlib.Path, seconds: float) -> bool:
    try:
        return time.time() - (folder / STAMP).stat().st_mtime > seconds
    except OSError:
        return True  # never pruned


class DiskCache:
    """One folder of entries under CACHEDIR: `key(parts...)`, `load(k, kind)` and `save(k, value)`."""

    def __init__(self, name: str) -> None:
        self.name = name

    def folder(self) -> pathlib.Path:
        return pathlib.Path(config.CACHEDIR.value) / self.name

    def key(self, *parts: str) -> str:
        """The entry name for these parts, in this version of the code."""
        return hashlib.sha256("\0".join((str(FORMAT), code_version(), *parts)).encode()).hexdigest()[:32]

    def load(self, k: str, kind: type) -> Any | None:
        """The value saved under key k if it is a `kind`, else None (no entry, or one that cannot be read)."""
        path = self.folder() / f"{k}.pkl"
        if (data := read_sealed(path, k)) is None:
            return None
        try:
            value = loads(data)
        except Exception:  # sealed by another version of the pickled classes: a miss, overwritten by the next save
            return None
        return value if isinstance(value, kind) else None

    def save(self, k: str, value: Any) -> None:
        """Write the entry atomically (a parallel process may write the same one); nothing when the value cannot be
        pickled or the file cannot be written."""
        try:
            data = dumps(value)
        except UNPICKLABLE:
            return
        try:
            write_atomic(self.folder() / f"{k}.pkl", seal(k, data))
        except OSError:
            return
        note_written(self.folder(), ".pkl", len(data) + SEAL_BYTES)


class BinaryCache:
    """A device compiler's binaries by key (the key names all that decides the binary: source, device, driver or
    compiler version, options): sealed files CACHEDIR/<folder>/<key><suffix>, bounded like every cache folder; while
    the disk cache is off (DISABLE_COMPILER_CACHE), the last `memory` binaries in this process."""

    def __init__(self, folder: str, suffix: str, memory: int = 256) -> None:
        self.folder, self.suffix, self.memory = folder, suffix, memory
        self._memory: dict[str, bytes] = {}

    def get(self, key: str, build: Callable[[], bytes], fresh: bool = False) -> bytes:
        """The binary under `key`: cached, or `build()` now and cached (fresh=True: built now, replacing it)."""
        if config.DISABLE_COMPILER_CACHE.value:
            if fresh or (binary := self._memory.get(key)) is None:
                binary = self._memory[key] = build()
                if len(self._memory) > self.memory:
                    del self._memory[next(iter(self._memory))]  # the oldest
            return binary
        folder = pathlib.Path(config.CACHEDIR.value) / self.folder
        path = folder / f"{key}{self.suffix}"
        if not fresh and (binary := read_sealed(path, key)) is not None:  # a damaged one is removed and rebuilt
            return binary
        binary = build()
        try:
            write_atomic(path, seal(key, binary))
            note_written(folder, self.suffix, len(binary) + SEAL_BYTES)
        except OSError:  # an unwritable cache: built every time, still correct
            pass
        return binary
