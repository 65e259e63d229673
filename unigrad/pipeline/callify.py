"""Callify: a tensor graph -> one stateless FUNCTION.

In: SINK of tensor-level UOps (calls of @function bodies, GETTUPLE(FUNCTION), are inlined first) over concrete BUFFERs (or AFTER(BUFFER, CALL...) for kernelized but not yet
run buffers) and bound Variables. Out: FUNCTION(TUPLE(outputs...), a_0, a_1, ..., v_0, v_1, ...) whose body refers to its
buffers a_k only through PARAM(k) placeholders and to each bound Variable v_j by the unbound Variable, so structurally equal programs on different buffers
share one body (and one cached schedule).
"""

from __future__ import annotations

from collections.abc import Callable

from unigrad.ir.args import AddrSpace, FunctionArg, ParamArg
from unigrad.ir.ops import Ops
from unigrad.ir.uop import UOp


def is_buffer_input(u: UOp) -> bool:
    """A BUFFER, or a BUFFER after the kernel that writes it (kernelized, maybe not yet run)."""
    return u.op is Ops.BUFFER or (u.op is Ops.AFTER and u.src[0].op is Ops.BUFFER)


def callify(sink: UOp) -> UOp:
    """SINK(tensor uops) -> FUNCTION(TUPLE(body...), inputs...) with inputs replaced by PARAM(k).

    One depth-first walk (a hot path: every realize): a node is pushed, then a None marker over it when it is
    expanded; popping the marker rebuilds the node from its sources' rebuilt nodes, all done by then. A node
    with no input below it is marked `closed`, and later walks take it as it is (constants and shapes are
    shared by many graphs)."""
    memo: dict[UOp, UOp] = {}  # node -> its rebuilt node
    expanded: set[UOp] = set()
    args: list[UOp] = []
    bound: list[UOp] = []
    stack: list[UOp | None] = [sink]
    push, pop = stack.append, stack.pop
    while stack:
        u = pop()
        if u is None:
            u = pop()
            src = u.src  # type: ignore[union-attr]
            new_src = tuple([memo[s] for s in src])
            if new_src == src:  # nothing below is an input: later walks skip this node
                memo[u] = u
                u.closed = True  # type: ignore[union-attr]
            else:
                memo[u] = UOp(u.op, new_src, u.arg, u.tag)  # type: ignore[union-attr, index]
            continue
        if u in expanded or u in memo:
            continue
        if u.closed:
            memo[u] = u
            continue
        op = u.op
        if op is Ops.BUFFER or (op is Ops.AFTER and u.src[0].op is Ops.BUFFER):
            buf = u if op is Ops.BUFFER else u.src[0]
            pa = ParamArg(len(args), buf.arg.dtype, buf.arg.device, AddrSpace.GLOBAL)
            memo[u] = UOp(Ops.PARAM, (buf.src[0],), pa)
            args.append(u)
        elif op is Ops.PARAM and u.arg.name is not None and len(u.src) == 4:
            memo[u] = u.replace(src=u.src[:3])  # bound Variable: the body sees it unbound, the runtime its value
            bound.append(u)
        elif op is Ops.GETTUPLE and is_traced_call(u):  # @function calls: substitute their bodies first
            return callify(inline_functions(sink))
        else:
            expanded.add(u)
            push(u)
            push(None)
            for s in reversed(u.src):
                if s not in memo:
                    push(s)
    body = memo[sink]
    return UOp(Ops.FUNCTION, (UOp(Ops.TUPLE, body.src), *args, *sorted(bound, key=lambda v: v.arg.name)))


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
    memo: dict[UOp, UOp] = {}

    def walk(u: UOp) -> UOp:
        mapping: dict[UOp, UOp] = {}
        for n in u.toposort(gate=lambda x: not is_traced_call(x)):
            if is_traced_call(n):
                mapping[n] = resolve(n)
        return u.substitute(mapping) if mapping else u

    def resolve(call: UOp) -> UOp:
        if call not in memo:
            fn = call.src[0]
            body = walk(fn.src[0])
            args = tuple(walk(a) for a in fn.src[1:])
            new_fn = fn.replace(src=(body, *args))
            if keep(fn):
                memo[call] = call.replace(src=(new_fn,))
            else:
                memo[call] = body.src[call.arg].substitute(function_params(new_fn))
        return memo[call]

    return walk(root)
