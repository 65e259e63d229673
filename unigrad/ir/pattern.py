"""UPat, PatternMatcher and graph_rewrite: every transformation in unigrad is a table of these rules.

A rule is (UPat, fn): when the pattern matches a node, fn(**captures) (plus ctx= if it asks for it)
returns a replacement UOp or None. PatternMatcher indexes rules by op, so a node only tries the rules
that can match its op. graph_rewrite applies a matcher bottom-up to a fixed point (iteratively, memoized
per call); `bottom_up=False` rewrites a node before its sources (passes that push information down).
"""

from __future__ import annotations

import inspect
import itertools
from collections.abc import Callable, Iterable
from typing import Any

from unigrad.dtype import DType
from unigrad.ir.ops import GroupOp, Ops
from unigrad.ir.uop import UOp

_ANY = object()
Rule = tuple["UPat", Callable[..., UOp | None]]


class UPat:
    """A pattern over UOps.

    op: an Op, a set of Ops, or None for any. src: None (any), a tuple (in order), a list (any order;
    used for commutative ops) or a single UPat (every source matches it). name: capture the node; a name
    used twice must capture the same node. arg: match arg equality. value: match a CONST's value.
    dtype: a DType or set of DTypes. allow_any_len: a src tuple may be a prefix of the sources."""

    __slots__ = ("op", "src", "arg", "value", "name", "dtype", "allow_any_len")

    def __init__(
        self,
        op: Ops | Iterable[Ops] | None = None,
        src: tuple[UPat, ...] | list[UPat] | UPat | None = None,
        arg: Any = _ANY,
        name: str | None = None,
        dtype: DType | Iterable[DType] | None = None,
        value: Any = _ANY,
        allow_any_len: bool = False,
    ):
        self.op = None if op is None else frozenset((op,)) if isinstance(op, Ops) else frozenset(op)
        self.src = src
        self.arg = arg
        self.value = value
        self.name = name
        self.dtype = None if dtype is None else frozenset((dtype,)) if isinstance(dtype, DType) else frozenset(dtype)
        self.allow_any_len = allow_any_len

    # ---- shorthand constructors ----
    @staticmethod
    def var(name: str | None = None, dtype: DType | Iterable[DType] | None = None) -> UPat:
        return UPat(name=name, dtype=dtype)

    @staticmethod
    def cvar(name: str | None = None, dtype: DType | Iterable[DType] | None = None) -> UPat:
        return UPat(Ops.CONST, name=name, dtype=dtype)

    @staticmethod
    def const(value: Any, name: str | None = None) -> UPat:
        return UPat(Ops.CONST, name=name, value=value)

    def named(self, name: str) -> UPat:
        p = UPat.__new__(UPat)
        for k in UPat.__slots__:
            setattr(p, k, getattr(self, k))
        p.name = name
        return p

    # operators build binary patterns: commutative ops match either order
    def _bin(self, op: Ops, other: UPat | Any, commutative: bool) -> UPat:
        o = other if isinstance(other, UPat) else UPat.const(other)
        return UPat(op, [self, o] if commutative else (self, o))

    def __add__(self, other: UPat | Any) -> UPat:
        return self._bin(Ops.ADD, other, True)

    def __mul__(self, other: UPat | Any) -> UPat:
        return self._bin(Ops.MUL, other, True)

    def __floordiv__(self, other: UPat | Any) -> UPat:
        return self._bin(Ops.IDIV, other, False)

    def __mod__(self, other: UPat | Any) -> UPat:
        return self._bin(Ops.MOD, other, False)

    def lt(self, other: UPat | Any) -> UPat:
        return self._bin(Ops.CMPLT, other, False)

    def ne(self, other: UPat | Any) -> UPat:
        return self._bin(Ops.CMPNE, other, True)

    def __repr__(self) -> str:
        ops = "any" if self.op is None else "|".join(sorted(o.name for o in self.op))
        return f"UPat({ops}{', name=' + self.name if self.name else ''})"

    # ---- matching ----
    def match(self, u: UOp, store: dict[str, UOp]) -> dict[str, UOp] | None:
        """Captures as a new dict if `u` matches (given earlier captures in store), else None."""
        if self.op is not None and u.op not in self.op:
            return None
        if self.arg is not _ANY and u.arg != self.arg:
            return None
        if self.value is not _ANY and (u.op is not Ops.CONST or u.arg.value != self.value):
            return None
        if self.dtype is not None and u.dtype not in self.dtype:
            return None
        if self.name is not None:
            prev = store.get(self.name)
            if prev is not None:
                if prev is not u:
                    return None
            else:
                store = {**store, self.name: u}
        src = self.src
        if src is None:
            return store
        if isinstance(src, UPat):
            for s in u.src:
                store = src.match(s, store)
                if store is None:
                    return None
            return store
        n = len(src)
        if len(u.src) != n and not (self.allow_any_len and len(u.src) >= n):
            return None
        orders = (src,) if isinstance(src, tuple) else itertools.permutations(src)
        for order in orders:
            st: dict[str, UOp] | None = store
            for p, s in zip(order, u.src):
                st = p.match(s, st)
                if st is None:
                    break
            if st is not None:
                return st
        return None


class PatternMatcher:
    """Rules indexed by op. `rewrite(u, ctx)` returns the first rule's replacement, or None."""

    def __init__(self, rules: list[Rule], name: str = "pm"):
        self.name = name
        self.rules = rules
        self.pdict: dict[Ops, list[tuple[UPat, Callable[..., UOp | None], bool]]] = {}
        for pat, fn in rules:
            has_ctx = "ctx" in inspect.signature(fn).parameters
            for op in pat.op if pat.op is not None else GroupOp.All:
                self.pdict.setdefault(op, []).append((pat, fn, has_ctx))

    def __add__(self, other: PatternMatcher) -> PatternMatcher:
        return PatternMatcher(self.rules + other.rules, f"{self.name}+{other.name}")

    def rewrite(self, u: UOp, ctx: Any = None) -> UOp | None:
        for pat, fn, has_ctx in self.pdict.get(u.op, ()):
            caps = pat.match(u, {})
            if caps is None:
                continue
            r = fn(ctx=ctx, **caps) if has_ctx else fn(**caps)
            if r is not None and r is not u:
                return r
        return None


class RewriteLoopError(RuntimeError):
    pass


MAX_REWRITES_PER_NODE = 1000


def graph_rewrite(root: UOp, pm: PatternMatcher, ctx: Any = None, bottom_up: bool = True) -> UOp:
    """Apply `pm` over the graph under `root` to a fixed point and return the new root.

    bottom_up (default): sources are rewritten first, then the node; a replacement is itself rewritten
    until no rule matches. bottom_up=False: rules are applied to a node (to a fixed point at that node)
    before its sources are rewritten; the rebuilt node is not retried."""
    if bottom_up:
        return _rewrite_bottom_up(root, pm, ctx)
    return _rewrite_top_down(root, pm, ctx)


def _rewrite_bottom_up(root: UOp, pm: PatternMatcher, ctx: Any) -> UOp:
    done: dict[UOp, UOp] = {}
    count: dict[UOp, int] = {}
    stack: list[tuple[UOp, int, UOp | None]] = [(root, 0, None)]
    while stack:
        u, stage, r = stack.pop()
        if stage == 0:
            if u in done:
                continue
            stack.append((u, 1, None))
            stack.extend((s, 0, None) for s in reversed(u.src) if s not in done)
        elif stage == 1:
            if u in done:
                continue
            new_src = tuple(done[s] for s in u.src)
            nu = u if new_src == u.src else UOp(u.op, new_src, u.arg, u.tag)
            if nu is not u and nu in done:
                done[u] = done[nu]
                continue
            r = pm.rewrite(nu, ctx)
            if r is None:
                done[u] = nu
                done[nu] = nu
                continue
            n = count[u] = count.get(u, 0) + 1
            if n > MAX_REWRITES_PER_NODE:
                raise RewriteLoopError(f"{pm.name}: rules keep rewriting {nu.op} (last result {r.op}); a rule loops")
            stack.append((u, 2, r))
            stack.append((r, 0, None))
        else:
            done[u] = done[r]
    return done[root]


def _rewrite_top_down(root: UOp, pm: PatternMatcher, ctx: Any) -> UOp:
    done: dict[UOp, UOp] = {}
    stack: list[tuple[UOp, int, UOp | None]] = [(root, 0, None)]
    while stack:
        u, stage, cur = stack.pop()
        if stage == 0:
            if u in done:
                continue
            cur = u
            for _ in range(MAX_REWRITES_PER_NODE):
                r = pm.rewrite(cur, ctx)
                if r is None:
                    break
                cur = r
            else:
                raise RewriteLoopError(f"{pm.name}: rules keep rewriting {u.op}; a rule loops")
            stack.append((u, 1, cur))
            stack.extend((s, 0, None) for s in reversed(cur.src) if s not in done)
        else:
            assert cur is not None
            new_src = tuple(done[s] for s in cur.src)
            done[u] = cur if new_src == cur.src else UOp(cur.op, new_src, cur.arg, cur.tag)
    return done[root]
