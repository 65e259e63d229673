"""UOp: the one IR node. `UOp(op, src, arg, tag)` is immutable and hash-consed.

Structurally equal UOps are the same Python object: construction looks the key (op, src, arg, tag) up in a
weak cache, so identity comparison is structural comparison and graphs are freed when no longer used.
Derived properties (dtype, shape, device, addrspace, min_max, axis) come from ir/props.py, computed on
first use and cached on the node.
"""

from __future__ import annotations

import functools
import threading
import weakref
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from unigrad.dtype import ConstType, DType, dtypes
from unigrad.ir import props
from unigrad.ir.alu import normalize
from unigrad.ir.args import AddrSpace, AxisType, ConstArg, ParamArg, RangeArg
from unigrad.ir.ops import Ops

# The hash-consing tables, values are weak references. Nodes with neither arg nor tag (most ALU nodes) are
# keyed by their src tuple in a table per op, so no key tuple is built for them; the rest by (op, src, arg, tag).
_plain: dict[Ops, dict[tuple, weakref.ReferenceType[UOp]]] = {op: {} for op in Ops}
_cache: dict[tuple, weakref.ReferenceType[UOp]] = {}
_MISSING: Any = object()  # a derived property not computed yet
INT_CONST_CACHE = 8192  # UOp.const's memo of (dtype, int value) -> CONST: strong references, dropped when full
_int_consts: dict[tuple[DType, int], UOp] = {}
_object_new = object.__new__
_weakref = weakref.ref
_dtype_of, _shape_of, _min_max_of = props.dtype_of, props.shape_of, props.min_max_of
# the per-op rule tables, looked up directly by the properties (one call less on the hottest derivations)
_dtype_rule, _src0_dtype = props.DTYPE_RULES.get, props.src0_dtype
_mm_rule, _dtype_mm = props.MIN_MAX_RULES.get, props.dtype_mm
# per thread: inside toposort_memo(), the toposorts (without gate) done so far, by root
_walks = threading.local()
_walks.memo = None


@contextmanager
def toposort_memo() -> Iterator[None]:
    """Within: toposort() without a gate remembers its results, so the passes lowering one kernel (each walking
    the graphs the one before made, some more than once) walk each graph once. Scoped, so no graph outlives it."""
    prev = getattr(_walks, "memo", None)
    _walks.memo = {}
    try:
        yield
    finally:
        _walks.memo = prev


class UOp:
    __slots__ = ("op", "src", "arg", "tag", "_dtype", "_shape", "_mm", "_device", "_axis", "closed", "__weakref__")
    op: Ops
    src: tuple[UOp, ...]
    arg: Any
    tag: Any

    def __new__(cls, op: Ops, src: tuple[UOp, ...] = (), arg: Any = None, tag: Any = None) -> UOp:
        if arg is None and tag is None:
            table, key = _plain[op], src
        else:
            table, key = _cache, (op, src, arg, tag)
        ref = table.get(key)
        if ref is not None and (hit := ref()) is not None:
            return hit
        self = _object_new(cls)
        self.op = op
        self.src = src
        self.arg = arg
        self.tag = tag
        self._dtype = self._shape = self._mm = _MISSING  # the hot derived properties, filled on first use
        self.closed = False  # set by callify on a node with no buffer, bound Variable or @function call below it
        table[key] = _weakref(self)
        return self

    @staticmethod
    def elementwise(op: Ops, src: tuple[UOp, ...], dtype: DType | None = None) -> UOp:
        """An ALU node over sources of one shape (the caller has checked it: the Tensor binop hot path): its shape
        is theirs, and its dtype `dtype` when the caller knows it, set here instead of derived when first asked."""
        u = UOp(op, src)
        if u._shape is _MISSING:
            u._shape = src[0].shape
            if dtype is not None:
                u._dtype = dtype
        return u

    @staticmethod
    def movement(op: Ops, src: tuple[UOp, ...], shape: tuple[int, ...]) -> UOp:
        """A movement node whose resulting shape the caller has computed (and checked): set here instead of read
        back from its shape operand when first asked."""
        u = UOp(op, src)
        if u._shape is _MISSING:
            u._shape = shape
        return u

    def __del__(self) -> None:
        try:
            if self.arg is None and self.tag is None:
                table, key = _plain[self.op], self.src
            else:
                table, key = _cache, (self.op, self.src, self.arg, self.tag)
            ref = table.get(key)
            if ref is not None and ref() in (self, None):
                del table[key]
        except (AttributeError, TypeError, KeyError):  # interpreter shutdown: module globals are already gone
            pass

    def __reduce__(self) -> tuple:
        return UOp, (self.op, self.src, self.arg, self.tag)

    def replace(self, **kwargs: Any) -> UOp:
        """A copy with some of op/src/arg/tag changed; the same object when nothing changed."""
        return UOp(
            kwargs.get("op", self.op),
            kwargs.get("src", self.src),
            kwargs.get("arg", self.arg),
            kwargs.get("tag", self.tag),
        )

    def rebuilt(self, src: tuple[UOp, ...]) -> UOp:
        """self over `src`, sources of the same shapes and dtypes as its own (an inlined call's arguments for its
        PARAMs, a buffer for the value it holds): self when nothing changed, else a node that takes self's shape and
        dtype as derived so far instead of deriving them again (an unrolled LSTMCell's 139k inlined nodes: 0.5 s)."""
        if src == self.src:
            return self
        u = UOp(self.op, src, self.arg, self.tag)
        if u._shape is _MISSING:
            u._shape = self._shape
        if u._dtype is _MISSING:
            u._dtype = self._dtype
        return u

    # ---- derived properties (ir/props.py), cached per node ----
    @property
    def dtype(self) -> DType:
        v = self._dtype
        if v is _MISSING:
            try:
                v = self._dtype = _dtype_rule(self.op, _src0_dtype)(self)  # sources derive theirs recursively
            except RecursionError:
                v = _derive(self, "_dtype", _dtype_of)
        return v

    @property
    def shape(self) -> tuple[int | UOp, ...]:
        v = self._shape
        if v is _MISSING:
            try:
                v = self._shape = _shape_of(self)  # sources derive theirs recursively
            except RecursionError:
                v = _derive(self, "_shape", _shape_of)
        return v

    @property
    def min_max(self) -> tuple[ConstType, ConstType]:
        v = self._mm
        if v is _MISSING:
            try:
                v = self._mm = _mm_rule(self.op, _dtype_mm)(self)  # sources derive theirs recursively
            except RecursionError:
                v = _derive(self, "_mm", _min_max_of)
        return v

    @property
    def vmin(self) -> ConstType:
        return self.min_max[0]

    @property
    def vmax(self) -> ConstType:
        return self.min_max[1]

    @property
    def device(self) -> str | tuple[str, ...] | None:
        try:
            return self._device
        except AttributeError:
            return _derive(self, "_device", props.device_of)

    @property
    def addrspace(self) -> AddrSpace | None:
        return props.addrspace_of(self)

    @property
    def axis(self) -> int | None:
        try:
            return self._axis
        except AttributeError:
            return _derive(self, "_axis", props.axis_of)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int | UOp:
        """Number of elements (an index UOp when a dimension is symbolic)."""
        return props.prod(self.shape)

    @property
    def as_shape(self) -> tuple[int | UOp, ...]:
        """Read this (k,)-shaped index UOp (a STACK of CONSTs / index UOps) as a shape tuple."""
        return props.as_shape(self)

    # ---- graph walking ----
    def toposort(self, gate: Callable[[UOp], bool] | None = None) -> list[UOp]:
        """Every node reachable from self, sources before users (iterative, no recursion limit).

        With `gate`, nodes for which gate(node) is False are listed but not walked into. Inside toposort_memo(),
        a walk without gate is remembered (the list returned is always a new one)."""
        memo = getattr(_walks, "memo", None) if gate is None else None
        if memo is not None and (hit := memo.get(self)) is not None:
            return list(hit)
        visited: set[UOp] = set()
        out: list[UOp] = []
        # a node is pushed, then a None marker over it when it is expanded: popping the marker emits the node
        # below it (its sources, pushed above the marker, are all emitted by then)
        stack: list[UOp | None] = [self]
        push, pop, emit, seen = stack.append, stack.pop, out.append, visited.add
        while stack:
            u = pop()
            if u is None:
                emit(pop())  # type: ignore[arg-type]
                continue
            if u in visited:
                continue
            seen(u)
            push(u)
            push(None)
            if gate is None or gate(u):
                for s in reversed(u.src):
                    if s not in visited:
                        push(s)
        if memo is not None:
            memo[self] = tuple(out)
        return out

    def substitute(self, mapping: Mapping[UOp, UOp], walk: Callable[[UOp], bool] | None = None) -> UOp:
        """Replace nodes by the mapping (not recursively into replacements) and rebuild the users.

        With `walk`, nodes for which walk(node) is False are kept as they are (not walked into). A recursive
        walk (one Python frame per node: the hot path of every realize); a graph deeper than the interpreter's
        recursion limit takes the iterative one."""
        try:
            return _substitute(self, dict(mapping), walk)
        except RecursionError:
            pass
        memo: dict[UOp, UOp] = dict(mapping)
        for u in self.toposort(gate=lambda x: x not in mapping and (walk is None or walk(x))):
            if u in memo:
                continue
            if walk is not None and not walk(u):
                memo[u] = u
                continue
            new_src = tuple(memo[s] for s in u.src)
            memo[u] = u if new_src == u.src else u.replace(src=new_src)
        return memo[self]

    def __iter__(self) -> Iterator[UOp]:
        raise TypeError("a UOp is not iterable; use .src")

    def __repr__(self) -> str:
        from unigrad.ir.text import uop_repr

        return uop_repr(self)

    def render(self) -> str:
        """Infix text of an index/ALU expression, e.g. ((x*3)+y)."""
        from unigrad.ir.text import render_expr

        return render_expr(self)

    # ---- constructors ----
    @staticmethod
    def const(dtype: DType, value: ConstType) -> UOp:
        if value.__class__ is int:  # the symbolic rules build small int constants over and over
            if (u := _int_consts.get((dtype, value))) is None:
                if len(_int_consts) >= INT_CONST_CACHE:
                    _int_consts.clear()
                u = _int_consts[(dtype, value)] = UOp(Ops.CONST, (), ConstArg(normalize(value, dtype), dtype))
            return u
        return UOp(Ops.CONST, (), ConstArg(normalize(value, dtype), dtype))

    @staticmethod
    def index_const(value: int) -> UOp:
        return UOp.const(dtypes.index, int(value))

    @staticmethod
    def shape_src(shape: tuple[int | UOp, ...]) -> UOp:
        """The (k,)-shaped index UOp spelling a shape: STACK of index CONSTs / index UOps."""
        for s in shape:  # a loop, not all(generator): this runs for every movement op
            if type(s) is not int:
                return UOp(Ops.STACK, tuple(UOp.index_const(s) if isinstance(s, int) else s for s in shape))
        return _int_shape_src(shape)

    @staticmethod
    def range(bound: int | UOp, rid: int, axis_type: AxisType = AxisType.LOOP) -> UOp:
        b = UOp.index_const(bound) if isinstance(bound, int) else bound
        return UOp(Ops.RANGE, (b,), RangeArg(rid, axis_type))

    @staticmethod
    def variable(name: str, vmin: int, vmax: int, dtype: DType = dtypes.index) -> UOp:
        """A named symbolic integer in [vmin, vmax]: PARAM(shape (), min, max)."""
        if not isinstance(vmin, int) or not isinstance(vmax, int) or vmin > vmax:
            raise ValueError(f"Variable {name!r}: need int bounds with min <= max, got [{vmin!r}, {vmax!r}]")
        src = (UOp.shape_src(()), UOp.const(dtype, vmin), UOp.const(dtype, vmax))
        return UOp(Ops.PARAM, src, ParamArg(-1, dtype, name=name))

    def bind(self, value: int) -> UOp:
        """A Variable with a value: PARAM(shape, min, max, value). Kernels see the unbound Variable."""
        if self.op is not Ops.PARAM or self.arg.name is None:
            raise TypeError(f"bind: expected a Variable (named PARAM), got {self.op}")
        if len(self.src) != 3:
            raise ValueError(f"bind: Variable {self.arg.name!r} is already bound to {self.src[3].arg.value}")
        lo, hi = self.src[1].arg.value, self.src[2].arg.value
        if not isinstance(value, int) or not lo <= value <= hi:
            raise ValueError(f"bind: Variable {self.arg.name!r} takes ints in [{lo}, {hi}], got {value!r}")
        return self.replace(src=self.src + (UOp.const(self.dtype, value),))

    def unbind(self) -> tuple[UOp, int]:
        if self.op is not Ops.PARAM or len(self.src) != 4:
            raise TypeError(f"unbind: expected a bound Variable, got {self.op}")
        return self.replace(src=self.src[:3]), self.src[3].arg.value

    @property
    def expr(self) -> str:
        """Name of a Variable."""
        return self.arg.name

    # ---- building ALU nodes (no simplification here; ir/symbolic.py does that) ----
    def alu(self, op: Ops, *src: UOp | ConstType) -> UOp:
        return UOp(op, (self,) + tuple(s if isinstance(s, UOp) else UOp.const(self.dtype, s) for s in src))

    def _rconst(self, x: UOp | ConstType) -> UOp:
        return x if isinstance(x, UOp) else UOp.const(self.dtype, x)

    def __add__(self, x: UOp | ConstType) -> UOp:
        if not isinstance(x, (UOp, int, float)):  # a Tensor operand (`v * t` of a bound Variable): the Tensor's op
            return NotImplemented
        return UOp(Ops.ADD, (self, self._rconst(x)))

    def __radd__(self, x: ConstType) -> UOp:
        return UOp(Ops.ADD, (self._rconst(x), self))

    def __sub__(self, x: UOp | ConstType) -> UOp:
        if not isinstance(x, (UOp, int, float)):  # a Tensor operand (`v * t` of a bound Variable): the Tensor's op
            return NotImplemented
        return UOp(Ops.ADD, (self, self._rconst(x) * -1))

    def __rsub__(self, x: ConstType) -> UOp:
        return UOp(Ops.ADD, (self._rconst(x), self * -1))

    def __mul__(self, x: UOp | ConstType) -> UOp:
        if not isinstance(x, (UOp, int, float)):  # a Tensor operand (`v * t` of a bound Variable): the Tensor's op
            return NotImplemented
        return UOp(Ops.MUL, (self, self._rconst(x)))

    def __rmul__(self, x: ConstType) -> UOp:
        return UOp(Ops.MUL, (self._rconst(x), self))

    def __neg__(self) -> UOp:
        return self * -1

    def __floordiv__(self, x: UOp | ConstType) -> UOp:
        return UOp(Ops.IDIV, (self, self._rconst(x)))

    def __mod__(self, x: UOp | ConstType) -> UOp:
        return UOp(Ops.MOD, (self, self._rconst(x)))

    def __lt__(self, x: UOp | ConstType) -> UOp:
        return UOp(Ops.CMPLT, (self, self._rconst(x)))

    def __gt__(self, x: UOp | ConstType) -> UOp:
        return UOp(Ops.CMPLT, (self._rconst(x), self))

    def __ge__(self, x: UOp | ConstType) -> UOp:
        return UOp(Ops.CMPNE, (self < x, UOp.const(dtypes.bool, True)))

    def __le__(self, x: UOp | ConstType) -> UOp:
        return UOp(Ops.CMPNE, (self > x, UOp.const(dtypes.bool, True)))

    def ne(self, x: UOp | ConstType) -> UOp:
        return UOp(Ops.CMPNE, (self, self._rconst(x)))

    def eq(self, x: UOp | ConstType) -> UOp:
        return UOp(Ops.CMPNE, (self.ne(x), UOp.const(dtypes.bool, True)))

    def __and__(self, x: UOp | ConstType) -> UOp:
        return UOp(Ops.AND, (self, self._rconst(x)))

    def __or__(self, x: UOp | ConstType) -> UOp:
        return UOp(Ops.OR, (self, self._rconst(x)))

    def __xor__(self, x: UOp | ConstType) -> UOp:
        return UOp(Ops.XOR, (self, self._rconst(x)))

    def maximum(self, x: UOp | ConstType) -> UOp:
        return UOp(Ops.MAX, (self, self._rconst(x)))

    def minimum(self, x: UOp | ConstType) -> UOp:
        return -((-self).maximum(-self._rconst(x)))

    def where(self, a: UOp | ConstType, b: UOp | ConstType) -> UOp:
        ua = a if isinstance(a, UOp) else UOp.const(b.dtype if isinstance(b, UOp) else dtypes.index, a)
        return UOp(Ops.WHERE, (self, ua, ua._rconst(b)))

    def reshape_to(self, shape: tuple[int | UOp, ...]) -> UOp:
        """RESHAPE to `shape` (self when it already has it)."""
        return self if self.shape == tuple(shape) else UOp(Ops.RESHAPE, (self, UOp.shape_src(tuple(shape))))

    def cast(self, dtype: DType) -> UOp:
        return self if self.dtype == dtype else UOp(Ops.CAST, (self,), dtype)

    @property
    def is_const(self) -> bool:
        return self.op is Ops.CONST

    @property
    def value(self) -> ConstType:
        """Value of a CONST."""
        return self.arg.value


def _derive(u: UOp, slot: str, fn: Callable[[UOp], Any]) -> Any:
    """Compute and cache a derived property with the sources' values filled in first by one iterative
    sources-first walk: the path for graphs too deep to derive by recursion (dtype/shape/min_max fall back
    to it on RecursionError; device/axis always take it)."""
    if any(getattr(s, slot, _MISSING) is _MISSING for s in u.src):  # unset (device/axis) or _MISSING
        for x in u.toposort(gate=lambda n: getattr(n, slot, _MISSING) is _MISSING):
            if getattr(x, slot, _MISSING) is _MISSING:
                setattr(x, slot, fn(x))
    v = fn(u)
    setattr(u, slot, v)
    return v


def _substitute(u: UOp, memo: dict[UOp, UOp], walk: Callable[[UOp], bool] | None) -> UOp:
    """UOp.substitute's walk below u; memo starts as the mapping and ends holding every node's result."""
    r = memo.get(u)
    if r is not None:
        return r
    if walk is not None and not walk(u):
        memo[u] = u
        return u
    new: list[UOp] = []
    changed = False
    for s in u.src:
        r = memo.get(s)
        if r is None:
            r = _substitute(s, memo, walk)
        if r is not s:
            changed = True
        new.append(r)
    r = UOp(u.op, tuple(new), u.arg, u.tag) if changed else u
    memo[u] = r
    return r


@functools.lru_cache(maxsize=4096)
def _int_shape_src(shape: tuple[int, ...]) -> UOp:
    return UOp(Ops.STACK, tuple(UOp.index_const(s) for s in shape))


def variables_of(u: UOp) -> list[UOp]:
    """Unbound Variables (named PARAMs) in a graph, sorted by name."""
    vs = {x if len(x.src) == 3 else x.replace(src=x.src[:3]) for x in u.toposort() if _is_var(x)}
    return sorted(vs, key=lambda v: v.arg.name)


def _is_var(u: UOp) -> bool:
    return u.op is Ops.PARAM and isinstance(u.arg, ParamArg) and u.arg.name is not None


def cache_size() -> int:
    """Live hash-consed nodes (for tests of garbage collection)."""
    tables = [_cache, *_plain.values()]
    return sum(1 for t in tables for r in t.values() if r() is not None)
