"""Linearize: a kernel graph -> LINEAR, a toposorted instruction list with properly nested loops and IF blocks.

In: kernel SINK after expand (RANGE/END loops, IF/ENDIF blocks, STORE/LOAD on INDEXes, ALU). Out: LINEAR(u_0, ...)
where each scope opener (a RANGE r, an IF) is followed by the nodes that depend on it and precede its closer
(END(x, r), ENDIF(if, x)), and every node sits in the innermost scope it depends on (loop-invariant nodes are
hoisted out of loops, ungated ones out of IFs). Sources come before users.
"""

from __future__ import annotations

from collections import defaultdict

from unigrad.ir.ops import Ops
from unigrad.ir.uop import UOp


def _closed(u: UOp) -> UOp | None:
    """The scope a closer ends: END(x, r) ends r, ENDIF(if, x...) ends its IF; None for other ops."""
    if u.op is Ops.END:
        return u.src[1]
    return u.src[0] if u.op is Ops.ENDIF else None


def linearize(sink: UOp) -> UOp:
    topo = sink.toposort()
    open_r: dict[UOp, frozenset[UOp]] = {}
    end_of: dict[UOp, UOp] = {}
    for u in topo:
        acc: frozenset[UOp] = frozenset()
        for s in u.src:
            acc = acc | open_r[s]
        if u.op in (Ops.RANGE, Ops.IF):
            open_r[u] = acc | {u}
        elif (scope := _closed(u)) is not None:
            open_r[u] = acc - {scope}
            end_of[scope] = u
        else:
            open_r[u] = acc
    missing = [r for r in open_r if r.op in (Ops.RANGE, Ops.IF) and r not in end_of]
    if missing:
        raise ValueError(f"linearize: {missing[0].op.name} {missing[0].arg} is never closed by an END/ENDIF")
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
        rs = open_r[u] if u.op not in (Ops.RANGE, Ops.IF) else open_r[u] - {u}
        return max(rs, key=lambda r: depth[r]) if rs else None

    block: dict[UOp | None, list[UOp]] = defaultdict(list)
    for u in topo:
        if u.op not in (Ops.RANGE, Ops.IF):
            block[scope(u)].append(u)

    out: list[UOp] = []

    def emit(key: UOp | None) -> None:
        for u in block[key]:
            if (opened := _closed(u)) is not None:
                out.append(opened)
                emit(opened)
            out.append(u)

    emit(None)
    return UOp(Ops.LINEAR, tuple(out))
