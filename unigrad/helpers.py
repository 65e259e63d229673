"""Small utilities shared by every layer (no unigrad imports)."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


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
