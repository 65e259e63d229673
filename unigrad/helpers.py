"""Small utilities shared by every layer (no unigrad imports)."""

from __future__ import annotations

import contextlib
import gc
import itertools
import operator
import os
import pathlib
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import MISSING, Field, FrozenInstanceError, field
from typing import Any, TypeVar, dataclass_transform

T = TypeVar("T")


@dataclass_transform(field_specifiers=(field,))
def record(cls: type[T] | None = None, /, *, frozen: bool = False, slots: bool = False, eq: bool = True) -> Any:
    """@dataclass for the package's records, declared the same way (annotated fields, defaults,
    `field(default_factory=...)`, `field(init=False)`, `__post_init__`): __init__, __repr__, __eq__ and __hash__
    by field values (eq=False: identity), frozen=True refuses assignment, slots=True gives __slots__. A method
    the class defines itself is kept. Unlike a dataclass, a record does not inherit another record's fields.

    Why not dataclasses: Python 3.11 builds each generated method with its own exec, about 1 ms per class; 32
    records were half of `import unigrad`. Here only __init__ is generated; the others compare the fields
    through one attrgetter (as fast: the tuple is built in C)."""

    def wrap(cls: type[T]) -> type[T]:
        if any(hasattr(b, "_record_fields") for b in cls.__bases__):
            raise TypeError(f"record {cls.__name__}: a record does not inherit another record's fields")
        names = [n for n, a in cls.__dict__.get("__annotations__", {}).items() if not str(a).startswith("ClassVar")]
        env: dict[str, Any] = {"_set": _set}
        params, sets = [], []
        for n in names:
            d = cls.__dict__.get(n, MISSING)
            init, factory = True, MISSING
            if isinstance(d, Field):
                init, factory, d = d.init, d.default_factory, d.default
            if factory is not MISSING:
                env[f"_f_{n}"] = factory
                value = f"_f_{n}()" if not init else f"_f_{n}() if {n} is _MISSING else {n}"
                params.append(f"{n}=_MISSING")
            elif d is not MISSING:
                if isinstance(d, (list, dict, set)):  # one object shared by every instance: as dataclasses, refused
                    raise ValueError(
                        f"record {cls.__name__}: mutable default for {n!r}; use field(default_factory=...)"
                    )
                env[f"_d_{n}"] = d
                value = n if init else f"_d_{n}"
                params.append(f"{n}=_d_{n}")
            elif init:
                value = n
                params.append(n)
            else:
                continue  # init=False without a default: __post_init__ sets it
            if not init:
                params.pop()
            sets.append(f"    _set(self, {n!r}, {value})" if frozen else f"    self.{n} = {value}")
        if frozen and slots and eq:
            sets.append("    _set(self, '_record_hash', -1)")  # (no hash is -1: not computed yet)
        if hasattr(cls, "__post_init__"):
            sets.append("    self.__post_init__()")
        env["_MISSING"] = MISSING
        exec(f"def __init__(self, {', '.join(params)}):\n" + ("\n".join(sets) or "    pass"), env)  # noqa: S102
        methods: dict[str, Any] = {
            "__init__": env["__init__"],
            "__repr__": _record_repr,
            "__match_args__": tuple(names),
        }
        if eq:
            key = operator.attrgetter(*names) if names else (lambda self: ())
            methods["__eq__"] = lambda self, other: (
                key(self) == key(other) if other.__class__ is self.__class__ else NotImplemented
            )
            # a frozen record with slots keeps its hash (computed on first use; not pickled: str hashes differ
            # between processes); others compute it each time
            methods["__hash__"] = (_cached_hash(key) if slots else lambda self: hash(key(self))) if frozen else None
        if frozen:
            methods["__setattr__"] = methods["__delattr__"] = _refuse_assignment
            if slots:  # pickle sets slots with setattr, which a frozen record refuses
                methods["__getstate__"] = lambda self: tuple(getattr(self, n) for n in names)
                restored = (*names, "_record_hash") if eq else tuple(names)
                methods["__setstate__"] = lambda self, state: [_set(self, n, v) for n, v in zip(restored, (*state, -1))]
        ns = {k: v for k, v in cls.__dict__.items() if k not in ("__dict__", "__weakref__")}
        for n in names:
            if slots or isinstance(ns.get(n), Field):
                ns.pop(n, None)  # a slot and a class attribute cannot share a name; a Field is not a default
        ns.update({k: v for k, v in methods.items() if k not in cls.__dict__})
        ns["_record_fields"] = tuple(names)
        if slots:
            ns["__slots__"] = (*names, "_record_hash") if frozen and eq else tuple(names)
        new = type(cls)(cls.__name__, cls.__bases__, ns)
        new.__qualname__ = cls.__qualname__
        return new

    return wrap if cls is None else wrap(cls)


_set = object.__setattr__


def _cached_hash(key: Callable[[Any], tuple]) -> Callable[[Any], int]:
    """A frozen record's __hash__: its fields' hash, computed once and kept (a UOp's arg is hashed at every
    construction and removal of a node: a PARAM's, a REDUCE's, a CONST's)."""

    def __hash__(self: Any) -> int:
        h = self._record_hash
        if h == -1:
            h = hash(key(self))
            _set(self, "_record_hash", h)
        return h

    return __hash__


def _record_repr(self: Any) -> str:
    return f"{type(self).__qualname__}(" + ", ".join(f"{n}={getattr(self, n)!r}" for n in self._record_fields) + ")"


def _refuse_assignment(self: Any, name: str, *value: Any) -> None:
    raise FrozenInstanceError(f"cannot assign to field {name!r} of a frozen {type(self).__name__}")


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


K = TypeVar("K")
V = TypeVar("V")
_MISSING = object()


class LRUCache(dict[K, V]):
    """A dict of at most limit() entries (limit is read at each store: a knob). get() marks an entry recently used;
    storing an entry past the limit drops the least recently used ones. Plain reads (`[]`, `in`) do not reorder."""

    def __init__(self, limit: Callable[[], int]) -> None:
        super().__init__()
        self.limit = limit

    def get(self, key: K, default: Any = None) -> Any:
        value = dict.pop(self, key, _MISSING)
        if value is _MISSING:
            return default
        dict.__setitem__(self, key, value)  # to the end: the most recently used
        return value

    def __setitem__(self, key: K, value: V) -> None:
        dict.pop(self, key, None)
        dict.__setitem__(self, key, value)
        limit = max(1, self.limit())
        while len(self) > limit:
            del self[next(iter(self))]


@record(frozen=True)
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
    return _flatten(x, is_leaf, other, {} if dedupe else None, leaves), leaves


def _flatten(
    v: Any, is_leaf: Callable[[Any], bool], other: Callable[[Any], Any], seen: dict | None, leaves: list
) -> Any:
    """tree_flatten's walk (a plain function: a recursive closure would be a reference cycle keeping the leaves, often
    tensors, alive until the garbage collector runs)."""
    if is_leaf(v):
        if seen is not None:
            if id(v) in seen:
                return Slot(seen[id(v)])
            seen[id(v)] = len(leaves)
        leaves.append(v)
        return Slot(len(leaves) - 1)
    if isinstance(v, (list, tuple)):
        return type(v)(_flatten(e, is_leaf, other, seen, leaves) for e in v)
    if isinstance(v, dict):
        return {k: _flatten(e, is_leaf, other, seen, leaves) for k, e in v.items()}
    return other(v)


def tree_fill(structure: Any, leaves: Sequence[Any]) -> Any:
    """The inverse of tree_flatten: the structure with each Slot replaced by its leaf."""
    if isinstance(structure, Slot):
        return leaves[structure.index]
    if isinstance(structure, (list, tuple)):
        return type(structure)(tree_fill(e, leaves) for e in structure)
    if isinstance(structure, dict):
        return {k: tree_fill(e, leaves) for k, e in structure.items()}
    return structure


class RemovableHandle:
    """Returned by the register_*_hook methods: `remove()` unregisters the hook."""

    _ids = itertools.count()

    def __init__(self, hooks: dict[int, Callable[..., Any]]):
        self.hooks_dict = hooks
        self.id = next(RemovableHandle._ids)

    def remove(self) -> None:
        self.hooks_dict.pop(self.id, None)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()


def write_atomic(path: pathlib.Path, data: bytes) -> None:
    """Write a disk-cache entry so that a process reading it sees all of it or none (a parallel process may write the
    same one): a temporary file beside it, then renamed. Raises OSError; the temporary file is removed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(suffix=path.suffix, dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except OSError:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


_counters_lock = threading.RLock()  # re-entrant: a GC inside a count can free a Buffer, which counts too


class _Counters(type):
    """GlobalCounters' ops and bytes are summed when read: a launch only counts the kernel (its ops are counted from
    its program once, not at every launch)."""

    def _fold(cls) -> None:
        with _counters_lock:
            launched = list(cls._launched.values())
            cls._launched.clear()
        ops = sum(kernel.flops * n for kernel, n in launched)
        mem = sum(kernel.mem * n for kernel, n in launched)
        with _counters_lock:
            cls._ops += ops
            cls._mem += mem

    @property
    def global_ops(cls) -> int:
        cls._fold()
        return cls._ops

    @global_ops.setter
    def global_ops(cls, value: int) -> None:
        cls._fold()
        cls._ops = value

    @property
    def global_mem(cls) -> int:
        cls._fold()
        return cls._mem

    @global_mem.setter
    def global_mem(cls, value: int) -> None:
        cls._fold()
        cls._mem = value


class GlobalCounters(metaclass=_Counters):
    """tinygrad's process-wide counters, fed by the runtime: kernel_count (kernels launched, TinyJit replays'
    included), global_ops (ALU ops they executed), global_mem (bytes of the buffers they took), time_sum_s (seconds
    spent in them), mem_used (bytes of the device buffers alive now). `GlobalCounters.reset()` zeroes all but
    mem_used."""

    kernel_count: int = 0
    time_sum_s: float = 0.0
    mem_used: int = 0
    _ops: int = 0
    _mem: int = 0
    _launched: dict[int, list[Any]] = {}  # noqa: RUF012 - id(kernel) -> [kernel, launches]: summed when read
    LAUNCHED_HELD = 64  # distinct kernels held for the sum at most (counting a kernel's ops once costs ~0.2 ms)

    @staticmethod
    def launched(kernel: Any, seconds: float, kernels: int = 1) -> None:
        """Count a launch of `kernel` (anything with `flops` and `mem`: one kernel, or a replayed JIT plan of
        `kernels` kernels) that took `seconds`. (Devices' queues run on threads of their own: counts are locked.)"""
        with _counters_lock:
            GlobalCounters.kernel_count += kernels
            GlobalCounters.time_sum_s += seconds
            entry = GlobalCounters._launched.get(id(kernel))
            if entry is None:
                GlobalCounters._launched[id(kernel)] = [kernel, 1]
                due = len(GlobalCounters._launched) > GlobalCounters.LAUNCHED_HELD
            else:
                entry[1] += 1
                due = False
        if due:  # summed now (outside the lock: counting may free a Buffer), so kernels do not outlive the caches
            GlobalCounters._fold()

    @staticmethod
    def allocated(nbytes: int) -> None:
        """Count device memory taken (nbytes > 0) or given back (< 0)."""
        with _counters_lock:
            GlobalCounters.mem_used += nbytes

    @staticmethod
    def reset() -> None:
        GlobalCounters.kernel_count, GlobalCounters.time_sum_s = 0, 0.0
        GlobalCounters._ops, GlobalCounters._mem = 0, 0
        GlobalCounters._launched.clear()
