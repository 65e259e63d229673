"""The on-disk cache of lowered kernels: a kernel AST -> its Lowered (LINEAR, source, signature), across processes.

In: a kernel SINK as rangeify made it (before Optimize), the device and its Target. Out: the Lowered that optimize ->
expand -> isel -> linearize -> render gave for it in an earlier process, or None. Lowering is most of the cost of a
model's first step (about 13 ms of Python per kernel): a script run again, or a test suite run twice, skips it. The
device compiler's own cache (CACHEDIR/cpu) then finds the binary too.

Entries live in CACHEDIR/lowered (runtime/disk_cache.py: keys carry the code version, values pickle their UOps as
a flat table, the folder is bounded). The key hashes the kernel's whole structure (ir.text.structure: every node,
not repr's shortened listing), the device, its renderer and Target, and the knob that decides the opts (NOOPT).
"""

from __future__ import annotations

from unigrad import config
from unigrad.ir.persist import UNPICKLABLE, dumps
from unigrad.ir.text import structure
from unigrad.ir.uop import UOp
from unigrad.pipeline.optimize.opts import Target
from unigrad.runtime import Device, Lowered
from unigrad.runtime.disk_cache import DiskCache, enabled

__all__ = ["enabled", "key", "load", "save"]
_entries = DiskCache("lowered")


def key(device: str, ast: UOp, target: Target) -> str:
    renderer = type(Device[device].renderer).__name__
    return _entries.key(device, renderer, repr(target), str(config.NOOPT.value), structure(ast))


def load(k: str) -> Lowered | None:
    """The Lowered saved under key k, or None."""
    return _entries.load(k, Lowered)


def save(k: str, lowered: Lowered) -> None:
    """Saved with its LINEAR encoded apart (ir/persist.py): a load decodes it only when a device asks for it."""
    try:
        graph = lowered.graph if type(lowered.graph) is bytes else dumps(lowered.graph)
    except UNPICKLABLE:
        return
    _entries.save(k, Lowered(lowered.name, graph, lowered.src, lowered.sig))
