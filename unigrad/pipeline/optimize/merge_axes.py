"""Merge adjacent output axes that every index sees as one: a (6, 11) loop pair read and written only at 11*i + j is
one loop of 66.

In: a kernel SINK from rangeify (its output ranges closed by one END chain). Out: the same kernel where each pair of
adjacent LOOP ranges (a outer, b inner) that appears only in linear index terms with a's coefficient b's times b's
bound is one RANGE of their product (a's id): every index expression is rebuilt with the pair as that range. A
Linear over (batch, tokens, features) flattens its leading dims before the matmul, but a consumer reshaping the
result back (GELU of the (6, 11, 1536) output) gives the kernel the (6, 11) rows again: 11 rows tile badly (2-row
tiles, 40 GFLOP/s), 66 rows take 8-row tiles. An axis used any other way (compared, divided, read with another
stride by some load) keeps the pair apart.
"""

from __future__ import annotations

from unigrad.dtype import dtypes
from unigrad.ir.args import AxisType
from unigrad.ir.ops import Ops
from unigrad.ir.uop import UOp
from unigrad.pipeline.expand import chain_tops, end_chain

_Linear = tuple[dict[UOp, int], int]  # terms (a node each, not a sum) with their coefficients, and a constant


def _linear(u: UOp, memo: dict[UOp, _Linear]) -> _Linear:
    """u as a sum of terms: ADDs and MULs by a constant are opened, anything else is a term of its own."""
    if (hit := memo.get(u)) is not None:
        return hit
    if u.op is Ops.CONST:
        out: _Linear = ({}, u.arg.value)
    elif u.op is Ops.ADD:
        (ta, ca), (tb, cb) = _linear(u.src[0], memo), _linear(u.src[1], memo)
        terms = dict(ta)
        for t, k in tb.items():
            terms[t] = terms.get(t, 0) + k
        out = (terms, ca + cb)
    elif u.op is Ops.MUL and u.src[1].op is Ops.CONST:
        ts, c = _linear(u.src[0], memo)
        k = u.src[1].arg.value
        out = ({t: v * k for t, v in ts.items()}, c * k)
    else:
        out = ({u: 1}, 0)
    memo[u] = out
    return out


def _rebuild(terms: dict[UOp, int], const: int) -> UOp:
    out: UOp | None = None
    for t, k in terms.items():
        if k == 0:
            continue
        term = t if k == 1 else t * UOp.index_const(k)
        out = term if out is None else out + term
    if out is None:
        return UOp.index_const(const)
    return out if const == 0 else out + UOp.index_const(const)


def _roots(topo: list[UOp]) -> set[UOp]:
    """The index expressions no index ADD or MUL takes: an INDEX's address, a comparison's operand, a CAST's source
    (END's and REDUCE's ranges are loop structure, not values)."""
    roots = set()
    for v in topo:
        if v.op in (Ops.END, Ops.REDUCE, Ops.RANGE) or (v.dtype is dtypes.index and v.op in (Ops.ADD, Ops.MUL)):
            continue
        roots.update(s for s in v.src if s.dtype is dtypes.index and s.op is not Ops.CONST)
    return roots


def _merged(body: UOp, a: UOp, b: UOp) -> tuple[UOp, UOp] | None:
    """body with ranges a, b (adjacent, a outer) as one range, and that range; None where they do not merge."""
    nb = b.src[0].arg.value
    topo = body.toposort()
    memo: dict[UOp, _Linear] = {}
    mapping: dict[UOp, UOp] = {}
    m = UOp.range(a.src[0].arg.value * nb, a.arg.id, AxisType.LOOP)
    for root in _roots(topo):
        terms, const = _linear(root, memo)
        ka, kb = terms.get(a, 0), terms.get(b, 0)
        if ka == 0 and kb == 0:
            continue
        if ka != kb * nb:
            return None
        rest = {t: k for t, k in terms.items() if t is not a and t is not b}
        mapping[root] = _rebuild({**rest, m: kb}, const)
    out = body.substitute(mapping)
    if any(u is a or u is b for u in out.toposort()):  # used some other way (inside a term): not merged
        return None
    return out, m


def merge_output_axes(sink: UOp) -> UOp:
    """The kernel with its mergeable adjacent output axes merged (see the module doc); the same kernel otherwise."""
    tops = chain_tops(sink.toposort())
    if len(sink.src) != 1 or len(tops) != 1 or tops[0] is not sink.src[0]:
        return sink
    body, ranges = end_chain(tops[0])
    changed = False
    i = len(ranges) - 2
    while i >= 0:  # innermost pairs first: a merged axis may merge again with the one outside it
        a, b = ranges[i], ranges[i + 1]
        loops = all(r.arg.axis_type is AxisType.LOOP and r.src[0].op is Ops.CONST for r in (a, b))
        if loops and (merged := _merged(body, a, b)) is not None:
            body, m = merged
            ranges[i : i + 2] = [m]
            changed = True
        i -= 1
    if not changed:
        return sink
    for r in reversed(ranges):
        body = UOp(Ops.END, (body, r))
    return sink.replace(src=(body,))
