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
from unigrad.helpers import no_gc
from unigrad.ir.ops import GroupOp, Ops
from unigrad.ir.uop import UOp

_ANY = object()
_ALL_OK = object()  # generated code: "every source matched"
Rule = tuple["UPat", Callable[..., UOp | None]]


class UPat:
    """A pattern over UOps.

    op: an Op, a set of Ops, or None for any. src: None (any), a tuple (in order), a list (any order;
    used for commutative ops) or a single UPat (every source matches it). name: capture the node; a name
    used twice must capture the same node. arg: match arg equality. value: match a CONST's value.
    dtype: a DType or set of DTypes. allow_any_len: a src tuple may be a prefix of the sources."""

    __slots__ = ("op", "src", "arg", "value", "name", "dtype", "allow_any_len", "_fn")

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
        for k in UPat.__slots__[:-1]:  # not the compiled matcher: the name changes it
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
        st = dict(store)
        return st if self.matcher(u, st) else None

    @property
    def matcher(self) -> Callable[[UOp, dict[str, UOp]], bool]:
        """The pattern compiled to a Python function `m(u, captures) -> bool` (built once, on first use)."""
        try:
            return self._fn
        except AttributeError:
            self._fn = _compile(self)
            return self._fn


class _Unsupported(Exception):
    """A pattern the inline generator does not handle (any-order sources, captures under an all-sources
    pattern); its rule is matched through the generic matcher instead."""


class _Gen:
    """Generates Python source for matching. Two modes: a matcher `m(u, st) -> bool` that records captures in
    the dict `st` (permutations become alternative functions tried on snapshots), and inline code inside a
    per-op rewrite function where captures are local variables and a failed check runs `fail` (`break`)."""

    def __init__(self) -> None:
        self.env: dict[str, Any] = {"Ops": Ops}
        self.n = 0

    def const(self, obj: Any) -> str:
        self.n += 1
        self.env[f"K{self.n}"] = obj
        return f"K{self.n}"

    def var(self) -> str:
        self.n += 1
        return f"v{self.n}"

    def emit(
        self,
        p: UPat,
        v: str,
        out: list[str],
        ind: str,
        fail: str = "return False",
        names: dict | None = None,
        late: list[str] | None = None,
    ) -> None:
        """Checks of `p` against the UOp in variable `v`. names=None: dict captures; else local captures.

        dtype checks (a property, derived on first use) go to `late` when given, so the caller emits them
        after every structural check: most candidates fail on an op and never pay for a dtype."""
        if p.op is not None and v != "u":  # the root's op is already known from the dispatch
            if len(p.op) == 1:
                out.append(f"{ind}if {v}.op is not {self.const(next(iter(p.op)))}: {fail}")
            else:
                out.append(f"{ind}if {v}.op not in {self.const(p.op)}: {fail}")
        elif p.op is not None and names is None:
            out.append(f"{ind}if {v}.op not in {self.const(p.op)}: {fail}")
        if p.arg is not _ANY:
            out.append(f"{ind}if {v}.arg != {self.const(p.arg)}: {fail}")
        if p.value is not _ANY:
            out.append(f"{ind}if {v}.op is not Ops.CONST or {v}.arg.value != {self.const(p.value)}: {fail}")
        if p.dtype is not None:
            dt = "udt" if v == "u" and names is not None else f"{v}.dtype"  # udt: the root's, read once
            (out if late is None else late).append(f"{ind}if {dt} not in {self.const(p.dtype)}: {fail}")
        if p.name is not None:
            if names is None:
                prev = self.var()
                out.append(f"{ind}{prev} = st.get({p.name!r})")
                out.append(f"{ind}if {prev} is None: st[{p.name!r}] = {v}")
                out.append(f"{ind}elif {prev} is not {v}: {fail}")
            elif p.name in names:
                out.append(f"{ind}if {v} is not {names[p.name]}: {fail}")
            else:
                names[p.name] = f"c_{p.name}"
                out.append(f"{ind}c_{p.name} = {v}")
        src = p.src
        if src is None:
            return
        if type(src) is UPat:
            if names is not None:
                if _has_names(src):
                    raise _Unsupported
                # every source matches: a for loop whose checks `break` out of it; the else marks success
                s, ok = self.var(), self.const(_ALL_OK)
                out.append(f"{ind}for {s} in {v}.src:")
                inner: list[str] = []
                self.emit(src, s, out, ind + "    ", "break", names, inner)
                out.extend(inner)
                out.append(f"{ind}else:")
                out.append(f"{ind}    {s} = {ok}")
                out.append(f"{ind}if {s} is not {ok}: {fail}")
                return
            s = self.var()
            out.append(f"{ind}for {s} in {v}.src:")
            out.append(f"{ind}    if not {self.const(src.matcher)}({s}, st): {fail}")
            return
        n = len(src)
        cmp = "<" if p.allow_any_len else "!="
        out.append(f"{ind}if len({v}.src) {cmp} {n}: {fail}")
        if type(src) is tuple:
            for i, sp in enumerate(src):
                sv = self.var()
                out.append(f"{ind}{sv} = {v}.src[{i}]")
                self.emit(sp, sv, out, ind, fail, names, late)
            return
        if names is not None:
            raise _Unsupported
        alts = [
            self.const(_compile(UPat(src=tuple(order), allow_any_len=p.allow_any_len)))
            for order in itertools.permutations(src)
        ]
        snap = self.var()
        for k, alt in enumerate(alts):
            kw = "if" if k == 0 else "elif"
            out.append(f"{ind}{kw} {alt}({v}, {snap} := dict(st)): st.update({snap})")
        out.append(f"{ind}else: {fail}")

    def rule(self, pat: UPat, fn: Callable[..., UOp | None], out: list[str]) -> None:
        """One rule inside a per-op rewrite function: inline match, then call fn with its captures."""
        params = list(inspect.signature(fn).parameters)
        body: list[str] = []
        names: dict[str, str] = {}
        f = self.const(fn)
        try:
            late: list[str] = []
            self.emit(pat, "u", body, "        ", "break", names, late)
            body.extend(late)
            if any(p not in names and p != "ctx" for p in params):
                raise _Unsupported  # fn wants a name the pattern does not capture: let the call fail loudly
            args = ", ".join("ctx" if p == "ctx" else names[p] for p in params)
            out.append("    while True:")
            out.extend(body)
            out.append(f"        r = {f}({args})")
            out.append("        if r is not None and r is not u: return r")
            out.append("        break")
        except _Unsupported:
            m = self.const(pat.matcher)
            call = f"{f}(ctx=ctx, **caps)" if "ctx" in params else f"{f}(**caps)"
            out.append("    caps = {}")
            out.append(f"    if {m}(u, caps):")
            out.append(f"        r = {call}")
            out.append("        if r is not None and r is not u: return r")


def _has_names(p: UPat) -> bool:
    if p.name is not None:
        return True
    src = p.src
    if src is None:
        return False
    return _has_names(src) if type(src) is UPat else any(_has_names(s) for s in src)


def _compile(p: UPat) -> Callable[[UOp, dict[str, UOp]], bool]:
    g = _Gen()
    body: list[str] = []
    late: list[str] = []
    g.emit(p, "u", body, "    ", late=late)
    body.extend(late)
    src = "def m(u, st):\n" + "\n".join(body) + "\n    return True\n"
    exec(compile(src, f"<UPat {p!r}>", "exec"), g.env)  # noqa: S102 - our own generated matcher
    return g.env["m"]


def _compile_rules(op: Ops, rules: list[Rule], name: str) -> Callable[[UOp, Any], UOp | None]:
    """All rules for one op as one generated function `rewrite(u, ctx)`: each rule's checks inlined, its
    captures passed positionally; the first rule returning a new node wins."""
    g = _Gen()
    out = ["def rewrite(u, ctx):"]
    if any(pat.dtype is not None for pat, _ in rules):
        out.append("    udt = u.dtype")
    for pat, fn in rules:
        g.rule(pat, fn, out)
    out.append("    return None")
    exec(compile("\n".join(out) + "\n", f"<{name} {op.name}>", "exec"), g.env)  # noqa: S102
    return g.env["rewrite"]


def _no_rules(u: UOp, ctx: Any) -> None:
    return None


class PatternMatcher:
    """Rules indexed by op, each op's rules compiled into one function. `rewrite(u, ctx)` returns the first
    rule's replacement, or None."""

    def __init__(self, rules: list[Rule], name: str = "pm", cache: bool = False):
        """cache=True remembers each node's fixed point across graph_rewrite calls (for context-free rule
        sets such as the symbolic simplifier, which sees the same index expressions over and over)."""
        self.name = name
        self.rules = rules
        self.cache: dict[UOp, UOp] | None = {} if cache else None
        by_op: dict[Ops, list[Rule]] = {}
        for pat, fn in rules:
            for op in pat.op if pat.op is not None else GroupOp.All:
                by_op.setdefault(op, []).append((pat, fn))
        # each op's function is generated on its first use: a process compiles only the rules its graphs reach
        self.fns: dict[Ops, Callable[[UOp, Any], UOp | None]] = {op: self._lazy(op, rs) for op, rs in by_op.items()}

    def _lazy(self, op: Ops, rules: list[Rule]) -> Callable[[UOp, Any], UOp | None]:
        def first_call(u: UOp, ctx: Any) -> UOp | None:
            fn = self.fns[op] = _compile_rules(op, rules, self.name)
            return fn(u, ctx)

        return first_call

    def __add__(self, other: PatternMatcher) -> PatternMatcher:
        return PatternMatcher(self.rules + other.rules, f"{self.name}+{other.name}")

    def rewrite(self, u: UOp, ctx: Any = None) -> UOp | None:
        return self.fns.get(u.op, _no_rules)(u, ctx)


class RewriteLoopError(RuntimeError):
    pass


MAX_REWRITES_PER_NODE = 10_000
CACHE_LIMIT = 50_000


def graph_rewrite(root: UOp, pm: PatternMatcher, ctx: Any = None, bottom_up: bool = True) -> UOp:
    """Apply `pm` over the graph under `root` to a fixed point and return the new root.

    bottom_up (default): sources are rewritten first, then the node; a replacement is itself rewritten
    until no rule matches. bottom_up=False: rules are applied to a node (to a fixed point at that node)
    before its sources are rewritten; the rebuilt node is not retried."""
    with no_gc():
        if bottom_up:
            return _rewrite_bottom_up(root, pm, ctx)
        return _rewrite_top_down(root, pm, ctx)


def _rewrite_bottom_up(root: UOp, pm: PatternMatcher, ctx: Any) -> UOp:
    """Rewrite by recursion (one Python frame per node: the fast path); a graph too deep for the recursion
    limit is finished by the iterative walk, which keeps every result the recursion completed."""
    done: dict[UOp, UOp] = {}
    depth: dict[UOp, int] = {}  # how many rewrites led to a node: a rule that never settles is caught
    cache = pm.cache if ctx is None else None
    try:
        out = _rewrite_recursive(root, pm, ctx, done, depth, cache)
    except RecursionError:
        out = _rewrite_iterative(root, pm, ctx, done, depth, cache)
    if cache is not None:
        if len(cache) > CACHE_LIMIT:  # a bounded memo: strong references, dropped wholesale when it grows
            cache.clear()
        cache.update(done)
    return out


def _rewrite_recursive(
    root: UOp, pm: PatternMatcher, ctx: Any, done: dict[UOp, UOp], depth: dict[UOp, int], cache: dict | None
) -> UOp:
    """Sources first, then the node's rules; a replacement is rewritten in turn. `done` only ever holds finished
    results, so an interrupted walk (RecursionError) can be resumed from it."""
    done_get, cache_get = done.get, (cache.get if cache is not None else {}.get)
    rules_get, no_rules = pm.fns.get, _no_rules

    def rw(u: UOp) -> UOp:
        r = done_get(u)
        if r is not None:
            return r
        if (r := cache_get(u)) is not None:
            done[u] = r
            return r
        src = u.src
        nu = u
        if len(src) == 2:  # most nodes: no tuple built unless a source changed, a done source costs no call
            a, b = src
            na, nb = done_get(a) or rw(a), done_get(b) or rw(b)
            if na is not a or nb is not b:
                nu = UOp(u.op, (na, nb), u.arg, u.tag)
                if (r := done_get(nu)) is not None:
                    done[u] = r
                    return r
        elif src:
            new_src = tuple(map(rw, src))
            if new_src != src:
                nu = UOp(u.op, new_src, u.arg, u.tag)
                if (r := done_get(nu)) is not None:
                    done[u] = r
                    return r
        r = rules_get(nu.op, no_rules)(nu, ctx)
        if r is None:
            done[u] = nu
            if nu is not u:
                done[nu] = nu
            return nu
        n = depth[r] = depth.get(u, 0) + 1
        if n > MAX_REWRITES_PER_NODE:
            raise RewriteLoopError(f"{pm.name}: rules keep rewriting {nu.op} (last result {r.op}); a rule loops")
        r = done[u] = rw(r)
        return r

    return rw(root)


_REBUILD, _LINK = object(), object()  # stack markers: "rebuild the node below me", "link node to its rewrite"


def _rewrite_iterative(
    root: UOp, pm: PatternMatcher, ctx: Any, done: dict[UOp, UOp], depth: dict[UOp, int], cache: dict | None
) -> UOp:
    """The same rewrite without recursion. The stack holds UOps to visit, and markers followed by their operands:
    _REBUILD over u (its sources are done: rebuild it and try the rules), _LINK over (u, r) (u's result is r's
    result). No tuples are allocated per node."""
    stack: list[Any] = [root]
    push, pop = stack.append, stack.pop
    cache_get = cache.get if cache is not None else {}.get
    rules_get, no_rules, getitem = pm.fns.get, _no_rules, done.__getitem__
    rebuild, link = _REBUILD, _LINK
    while stack:
        u = pop()
        if u is rebuild:
            u = pop()
            if u in done:
                continue
            src = u.src
            new_src = tuple(map(getitem, src))
            if new_src == src:
                nu = u
            else:
                nu = UOp(u.op, new_src, u.arg, u.tag)
                if nu in done:
                    done[u] = done[nu]
                    continue
            r = rules_get(nu.op, no_rules)(nu, ctx)
            if r is None:
                done[u] = nu
                if nu is not u:
                    done[nu] = nu
                continue
            n = depth[r] = depth.get(u, 0) + 1
            if n > MAX_REWRITES_PER_NODE:
                raise RewriteLoopError(f"{pm.name}: rules keep rewriting {nu.op} (last result {r.op}); a rule loops")
            push(u)
            push(r)
            push(link)
            push(r)
        elif u is link:
            r = pop()
            done[pop()] = done[r]
        elif u not in done:
            if (hit := cache_get(u)) is not None:
                done[u] = hit
                continue
            push(u)
            push(rebuild)
            for s in reversed(u.src):
                if s not in done:
                    push(s)
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
