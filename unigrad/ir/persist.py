"""Pickling values that hold UOp graphs: the UOps as one flat table, sources first, then the value over their numbers.

In: any picklable value (UOps anywhere inside it). Out: bytes, and back. A node is a row (op, source numbers, arg,
tag): a graph of any depth pickles (UOp.__reduce__ recurses once per level and stops at the recursion limit), each
shared node is written once, and loading rebuilds the nodes in order through hash-consing, so DTypes, Ops and
graphs equal to live ones come back as this process's objects. The disk caches (runtime/disk_cache.py) store their
entries this way.
"""

from __future__ import annotations

import io
import pickle
from typing import Any

from unigrad.ir.ops import Ops
from unigrad.ir.uop import UOp

# what dumps raises for a value it cannot write (a lambda in an arg, a graph the table pickle cannot reach, ...)
UNPICKLABLE = (RecursionError, pickle.PicklingError, TypeError, AttributeError, KeyError)


class _FindUOps(pickle.Pickler):
    """A pickling pass that only collects the UOps the value refers to (not the nodes under them)."""

    def __init__(self, found: dict[UOp, None]) -> None:
        super().__init__(io.BytesIO(), protocol=pickle.HIGHEST_PROTOCOL)
        self.found = found

    def persistent_id(self, obj: Any) -> int | None:
        if type(obj) is UOp:
            self.found[obj] = None
            return 0
        return None


class _NumberUOps(pickle.Pickler):
    """Pickles the value with each UOp as its number in the table written before it."""

    def __init__(self, file: io.BytesIO, number: dict[UOp, int]) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.number = number

    def persistent_id(self, obj: Any) -> int | None:
        return self.number[obj] if type(obj) is UOp else None


def dumps(value: Any) -> bytes:
    """value as bytes: the table of every UOp it reaches (sources first), then the value over their numbers."""
    found: dict[UOp, None] = {}
    _FindUOps(found).dump(value)
    # one walk over every root: a SINK over them, which comes last in its toposort and is left out
    nodes = UOp(Ops.SINK, tuple(found)).toposort()[:-1] if found else []
    number = {u: i for i, u in enumerate(nodes)}
    table = [(u.op, tuple([number[s] for s in u.src]), u.arg, u.tag) for u in nodes]
    out = io.BytesIO()
    pickle.dump(table, out, protocol=pickle.HIGHEST_PROTOCOL)
    _NumberUOps(out, number).dump(value)
    return out.getvalue()


def loads(data: bytes) -> Any:
    """dumps' inverse: the table's nodes rebuilt in order (hash-consed), then the value over them."""
    f = io.BytesIO(data)
    nodes: list[UOp] = []
    add = nodes.append
    for op, src, arg, tag in pickle.load(f):
        add(UOp(op, tuple([nodes[i] for i in src]), arg, tag))
    unpickler = pickle.Unpickler(f)
    unpickler.persistent_load = nodes.__getitem__  # type: ignore[assignment]
    return unpickler.load()
