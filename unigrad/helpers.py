"""Small utilities shared by every layer (no unigrad imports)."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any


@contextlib.contextmanager
def no_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while building or rewriting graphs.

    UOp graphs are acyclic and freed by reference counting; the collector only rescans the many young
    nodes a rewrite creates, which more than doubles the cost of building them."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


@dataclass(frozen=True)
class Slot:
    """Where leaf `index` sat in a structure flattened by tree_flatten."""

    index: int


def tree_flatten(
    x: Any, is_leaf: Callable[[Any], bool], other: Callable[[Any], Any] = lambda v: v, dedupe: bool = False
) -> tuple[Any, list[Any]]:
    """(structure, leaves): x (nested lists/tuples/dicts) with each leaf replaced by a Slot, the leaves in order
    (each object once with dedupe, by identity). Any other value v goes into the structure as other(v), which
    may raise to refuse it."""
    leaves: list[Any] = []
    seen: dict[int, int] = {}

    def walk(v: Any) -> Any:
        if is_leaf(v):
            if dedupe and id(v) in seen:
                return Slot(seen[id(v)])
            seen[id(v)] = len(leaves)
            leaves.append(v)
            return Slot(len(leaves) - 1)
        if isinstance(v, (list, tuple)):
            return type(v)(walk(e) for e in v)
        if isinstance(v, dict):
            return {k: walk(e) for k, e in v.items()}
        return other(v)

    return walk(x), leaves


def tree_fill(structure: Any, leaves: Sequence[Any]) -> Any:
    """The inverse of tree_flatten: the structure with each Slot replaced by its leaf."""
    if isinstance(structure, Slot):
        return leaves[structure.index]
    if isinstance(structure, (list, tuple)):
        return type(structure)(tree_fill(e, leaves) for e in structure)
    if isinstance(structure, dict):
        return {k: tree_fill(e, leaves) for k, e in structure.items()}
    return structure
