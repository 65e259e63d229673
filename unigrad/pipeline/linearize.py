"""Linearize: a kernel graph -> LINEAR, a toposorted instruction list with properly nested loops.

In: kernel SINK after expand (RANGE/END loops, STORE/LOAD on INDEXes, ALU). Out: LINEAR(u_0, u_1, ...)
where each RANGE r is followed by the nodes that depend on r and precede its END, and every node sits
in the innermost loop it depends on (loop-invariant nodes are hoisted out). Sources come before users.
"""

from __future__ import annotations

from collections import defaultdict

from unigrad.ir.ops import Ops
from unigrad.ir.uop import UOp


def linearize(sink: UOp) -> UOp:
    topo = sink.toposort()
    open_r: dict[UOp, frozenset[UOp]] = {}
    end_of: dict[UOp, UOp] = {}
    for u in topo:
        if u.op is Ops.RANGE:
            open_r[u] = frozenset((u,))
        elif u.op is Ops.END:
            open_r[u] = open_r[u.src[0]] - {u.src[1]}
            end_of[u.src[1]] = u
        else:
            acc: frozenset[UOp] = frozenset()
            for s in u.src:
                acc = acc | open_r[s]
            open_r[u] = acc
    missing = [r for r in open_r if r.op is Ops.RANGE and r not in end_of]
    if missing:
        raise ValueError(f"linearize: RANGE r{missing[0].arg.id} is never closed by an END")
    # a loop's depth is one more than the deepest loop still open at its END (its enclosing loop): loops
    # that do not depend on every outer range (a hoisted reduce) still nest inside the innermost one they use
    depth: dict[UOp, int] = {}

    def depth_of(r: UOp) -> int:
        if r not in depth:
            depth[r] = 1 + max((depth_of(p) for p in open_r[end_of[r]]), default=-1)
        return depth[r]

    for r in end_of:
        depth_of(r)

    def scope(u: UOp) -> UOp | None:
        rs = open_r[u] if u.op is not Ops.RANGE else open_r[u] - {u}
        return max(rs, key=lambda r: depth[r]) if rs else None

    block: dict[UOp | None, list[UOp]] = defaultdict(list)
    for u in topo:
        if u.op is not Ops.RANGE:
            block[scope(u)].append(u)

    out: list[UOp] = []

    def emit(key: UOp | None) -> None:
        for u in block[key]:
            if u.op is Ops.END:
                out.append(u.src[1])
                emit(u.src[1])
            out.append(u)

    emit(None)
    return UOp(Ops.LINEAR, tuple(out))
