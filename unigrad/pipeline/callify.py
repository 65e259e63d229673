"""Callify: a tensor graph -> one stateless FUNCTION.

In: SINK of tensor-level UOps over concrete BUFFERs (or AFTER(BUFFER, CALL...) for kernelized but not yet run
buffers), bound Variables and calls of @function bodies (GETTUPLE(FUNCTION)). Out: FUNCTION(TUPLE(outputs...), a_0,
a_1, ..., v_0, v_1, ...) whose body refers to its buffers a_k only through PARAM(k) placeholders and to each bound
Variable v_j by the unbound Variable, so structurally equal programs on different buffers share one body (and one
cached schedule). Each @function call is inlined by the same walk: its body's element, with the body's PARAM(k)
read as the call's k-th argument (rebuilt first).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable

from unigrad.ir.args import AddrSpace, FunctionArg, ParamArg
from unigrad.ir.ops import Ops
from unigrad.ir.uop import UOp


def is_buffer_input(u: UOp) -> bool:
    """A BUFFER, or a BUFFER after the kernel that writes it (kernelized, maybe not yet run)."""
    return u.op is Ops.BUFFER or (u.op is Ops.AFTER and u.src[0].op is Ops.BUFFER)


def callify(sink: UOp) -> UOp:
    """SINK(tensor uops) -> FUNCTION(TUPLE(body...), inputs...) with inputs replaced by PARAM(k).

    One sources-first walk (a hot path: every realize) that rebuilds each node over its sources' rebuilt nodes.
    A node with no input below it is marked `closed`, and later walks take it as it is (constants and shapes are
    shared by many graphs). The walk recurses, about a third faster than an explicit stack; a graph too deep
    for the interpreter's recursion limit takes the iterative walk instead."""
    walk = _Walk()
    body = walk.rebuild_any(sink)
    bound = sorted(walk.bound, key=lambda v: v.arg.name)
    walk.bodies.clear()  # the inner walks refer to this dict: a cycle holding their graphs until gc runs
    return UOp(Ops.FUNCTION, (UOp(Ops.TUPLE, body.src), *walk.args, *bound))


_LEAF_OPS = frozenset({Ops.BUFFER, Ops.AFTER, Ops.PARAM, Ops.GETTUPLE})  # the ops _Walk.leaf can take


class _Walk:
    """One callify walk: node -> rebuilt node, the buffers found (in order: PARAM(k) stands for args[k]) and
    the bound Variables. Inside an inlined @function body a walk of its own (`params`: the call's rebuilt
    arguments, which the body's PARAM(k) stand for) keeps its own memo and shares the rest with the outer walk."""

    def __init__(self, outer: _Walk | None = None, params: tuple[UOp, ...] = ()) -> None:
        self.memo: dict[UOp, UOp] = {}
        self.params = params
        if outer is None:
            self.args: list[UOp] = []
            self.bound: list[UOp] = []
            self.inputs: dict[UOp, UOp] = {}  # buffer or bound Variable -> its rebuilt node, over every walk
            self.bodies: dict[tuple[UOp, ...], _Walk] = {}  # (FUNCTION, rebuilt args) -> the walk of its body
        else:
            self.args, self.bound, self.inputs, self.bodies = outer.args, outer.bound, outer.inputs, outer.bodies

    def leaf(self, u: UOp) -> UOp | None:
        """The rebuilt node for an input (a buffer, a bound Variable, a body's PARAM) or an @function call (its
        body's element, inlined); None for any other node."""
        op = u.op
        if op is Ops.BUFFER or (op is Ops.AFTER and u.src[0].op is Ops.BUFFER):
            if (r := self.inputs.get(u)) is None:
                buf = u if op is Ops.BUFFER else u.src[0]
                pa = ParamArg(len(self.args), buf.arg.dtype, buf.arg.device, AddrSpace.GLOBAL)
                self.args.append(u)
                r = self.inputs[u] = UOp(Ops.PARAM, (buf.src[0],), pa)
            return r
        if op is Ops.PARAM:
            if u.arg.name is None:  # a body's argument: inside its call, the call's; elsewhere itself (a leaf, so
                return self.params[u.arg.slot] if self.params else u  # never marked closed: a body walk must see it)
            if len(u.src) == 4:
                if (r := self.inputs.get(u)) is None:
                    self.bound.append(u)
                    r = self.inputs[u] = u.replace(src=u.src[:3])  # the body sees it unbound, the runtime its value
                return r
            return None
        if op is Ops.GETTUPLE and is_traced_call(u):
            return self.call(u) if self.params == () and body_self_contained(u.src[0].src[0]) else self.inline(u)
        return None

    def call(self, call: UOp) -> UOp:
        """An @function call kept as a call over its rebuilt arguments: its body (no buffer or bound Variable in it)
        is already stateless, and rebuilding it per call cost a node each (an unrolled LSTMCell's 2000 sigmoids and
        tanhs: 80k nodes per step). Rangeify inlines it when the schedule is built."""
        fn = call.src[0]
        args = self.arguments(fn)
        return call if args == fn.src[1:] else UOp(Ops.GETTUPLE, (fn.replace(src=(fn.src[0], *args)),), call.arg)

    def inline(self, call: UOp) -> UOp:
        """An @function call's result: its body's element rebuilt with PARAM(k) as the call's k-th argument (the
        arguments rebuilt by this walk; a body called again with the same arguments is rebuilt once)."""
        fn = call.src[0]
        args = self.arguments(fn)
        key = (fn, *args)
        if (body := self.bodies.get(key)) is None:
            body = self.bodies[key] = _Walk(self, args)
        return body.rebuild_any(fn.src[0].src[call.arg])

    def arguments(self, fn: UOp) -> tuple[UOp, ...]:
        """A FUNCTION's arguments rebuilt by this walk."""
        return tuple(a if a.closed else self.memo.get(a) or self.rebuild_any(a) for a in fn.src[1:])

    def rebuild_any(self, u: UOp) -> UOp:
        """rebuild(), or the iterative walk for a graph deeper than the recursion limit (it goes on from what the
        recursion finished: the memo holds only finished nodes, the inputs keep their slots)."""
        try:
            return self.rebuild(u)
        except RecursionError:
            return self.rebuild_iterative(u)

    def rebuild(self, u: UOp) -> UOp:
        """_over(u, its sources rebuilt), inlined: one Python frame per node (no comprehension, no helper call)."""
        memo = self.memo
        if u.op in _LEAF_OPS and (r := self.leaf(u)) is not None:
            memo[u] = r
            return r
        new: list[UOp] = []
        changed = False
        for s in u.src:
            if not s.closed:
                r = memo.get(s)
                if r is None:
                    r = self.rebuild(s)
                if r is not s:
                    changed = True
                    s = r
            new.append(s)
        if changed:
            r = UOp(u.op, tuple(new), u.arg)
        else:
            u.closed = True
            r = u
        memo[u] = r
        return r

    def rebuild_iterative(self, root: UOp) -> UOp:
        """rebuild() with an explicit stack: a node is pushed, then a None marker over it when it is expanded;
        popping the marker rebuilds the node from its sources' rebuilt nodes, all done by then."""
        memo = self.memo
        stack: list[UOp | None] = [root]
        while stack:
            u = stack.pop()
            if u is None:
                node: UOp = stack.pop()  # type: ignore[assignment]
                memo[node] = _over(node, tuple([s if s.closed else memo[s] for s in node.src]))
                continue
            if u in memo or u.closed:
                continue
            if (r := self.leaf(u)) is not None:
                memo[u] = r
                continue
            stack += (u, None)
            stack.extend(s for s in reversed(u.src) if not s.closed and s not in memo)
        return memo[root] if not root.closed else root


def _over(u: UOp, new_src: tuple[UOp, ...]) -> UOp:
    """u rebuilt over its sources' rebuilt nodes, without its tag (an assign's event id: the body is the same
    for every step that assigns the same way); u itself, marked closed, when nothing below it is an input
    (later walks then skip it)."""
    if new_src == u.src:
        u.closed = True
        return u
    return UOp(u.op, new_src, u.arg)


_CONTAINED: weakref.WeakKeyDictionary[UOp, bool] = weakref.WeakKeyDictionary()


def body_self_contained(body: UOp) -> bool:
    """A traced body that reads nothing but its PARAMs (no buffer it closes over, no bound Variable, and only calls
    of bodies like it: an LSTM step's sigmoids; none precompiled, lowered apart); per body."""
    if (known := _CONTAINED.get(body)) is None:
        known = _CONTAINED[body] = not any(
            is_buffer_input(u)
            or (u.op is Ops.PARAM and len(u.src) == 4)
            or (is_traced_call(u) and u.src[0].arg.precompile)
            for u in body.toposort()
        )
    return known


def is_traced_call(u: UOp) -> bool:
    """GETTUPLE(FUNCTION(TUPLE(body), args...)) from @function."""
    return u.op is Ops.GETTUPLE and u.src[0].op is Ops.FUNCTION and isinstance(u.src[0].arg, FunctionArg)


def function_params(fn: UOp) -> dict[UOp, UOp]:
    """PARAM(k) of a traced FUNCTION's body -> its argument a_k (bodies hold no nested FUNCTIONs: inline first)."""
    params = [u for u in fn.src[0].toposort() if u.op is Ops.PARAM and u.arg.name is None]
    return {p: fn.src[1 + p.arg.slot] for p in params}


def inline_functions(root: UOp, keep: Callable[[UOp], bool] = lambda fn: False) -> UOp:
    """root with every GETTUPLE(FUNCTION) of @function replaced by its body element, PARAM(k) -> a_k (spec: a
    FUNCTION resolved by substitution), innermost first. FUNCTIONs for which `keep` holds stay (their bodies and
    arguments are inlined inside)."""
    return _Inliner(keep).walk(root)


class _Inliner:
    """inline_functions' walk: one pass over the graph, sources first, each node rebuilt once over its rebuilt
    sources, a call's sources being its arguments (a graph with a long chain of calls, an unrolled LSTM's gates, is
    walked once, not once per call). A body is rebuilt once per call arguments, its PARAM(k) read as argument k (or,
    kept, with its PARAMs and its own calls inlined). Methods, not closures calling each other: those would be a
    reference cycle holding the graphs until the garbage collector runs."""

    def __init__(self, keep: Callable[[UOp], bool]) -> None:
        self.keep = keep
        self.memo: dict[UOp, UOp] = {}
        # (FUNCTION, rebuilt arguments...) -> its rebuilt body TUPLE; (body,) -> a kept one's
        self.bodies: dict[tuple[UOp, ...], UOp] = {}

    def walk(self, root: UOp) -> UOp:
        return self._rebuild(root, self.memo, None)

    def _rebuild(self, root: UOp, memo: dict[UOp, UOp], params: tuple[UOp, ...] | None) -> UOp:
        """root rebuilt (memo: this scope's rebuilt nodes; params: inside a body inlined, its call's arguments)."""
        stack: list[tuple[UOp, bool]] = [(root, False)]
        while stack:
            u, expanded = stack.pop()
            if u in memo:
                continue
            if not expanded:
                if params is not None and u.op is Ops.PARAM and u.arg.name is None:
                    memo[u] = params[u.arg.slot]
                    continue
                stack.append((u, True))
                stack.extend((s, False) for s in (u.src[0].src[1:] if is_traced_call(u) else u.src) if s not in memo)
            elif is_traced_call(u):
                memo[u] = self._call(u, tuple(memo[a] for a in u.src[0].src[1:]))
            else:
                memo[u] = u.rebuilt(tuple(memo[s] for s in u.src))  # (arguments of their PARAMs' shapes)
        return memo[root]

    def _call(self, call: UOp, args: tuple[UOp, ...]) -> UOp:
        fn = call.src[0]
        if self.keep(fn):  # stays a call: its body with its own calls inlined, over the rebuilt arguments
            if (body := self.bodies.get((fn.src[0],))) is None:  # once per traced body
                body = self.bodies[(fn.src[0],)] = self._rebuild(fn.src[0], {}, None)
            return call.replace(src=(fn.replace(src=(body, *args)),))
        if (body := self.bodies.get((fn, *args))) is None:
            body = self.bodies[(fn, *args)] = self._rebuild(fn.src[0], {}, args)
        return body.src[call.arg]
