"""Rebase: a kernel AST -> the same kernel with each read-only buffer's constant start moved into its argument.

A recurrent model's step runs one kernel per time step on slices of the same buffers: x[t], the gates of step t.
Their ASTs differ only in the constant that starts each slice's index (`e + 5120*t`), so each was compiled on its
own (the LSTM LM's first step compiled 35 copies each of three kernels). Here the constant moves out: a buffer the
kernel only reads, through INDEX nodes of the form ADD(e, CONST c) whose smallest index and c are at least o, is
read from element o on, passed as (buffer, o) at launch, and its indexes lose o (e + (c - o)). Every time step's
kernel is then one AST, one program.

In: a kernel SINK (rangeify's, before optimization). Out: Rebased(ast, offsets) with offsets ((slot, elements),
...) for the buffers moved, or None when nothing changes. Where o is no multiple of ALIGN_BYTES (the CPU allocator's
alignment), the moved buffer's PARAM says it starts element-aligned (ParamArg.align) and the renderer reads it with
unaligned vector accesses: a float64 column x[:, t] of each of 199 time steps is then two programs (an aligned t and
the others), not one per t mod 8. A buffer read through any other index form keeps o = 0. Rebasing never changes what is read, only whether two kernels share a program. A buffer's size in the AST
becomes the span its indexes reach from o (when known; offset 0 included), so kernels that read different-sized
buffers the same way share too.

Index constants used as data move out the same way: where an index ADD(e, CONST c) is cast to a value type (a
random stream's counter, `arange + c`: dropout in time step t counts from t * numel), the cast reads ADD(e, `_rb<k>`),
a Variable whose value is given at launch (Rebased.values), while the node's other uses (a load of step t's slice
at the same offset) keep c: the dropout of every time step, every layer, is one program too.
"""

from __future__ import annotations

import functools

from unigrad.dtype import dtypes
from unigrad.helpers import record
from unigrad.ir.args import AddrSpace, ParamArg
from unigrad.ir.ops import Ops
from unigrad.ir.uop import UOp

ALIGN_BYTES = 64
COUNTER_MAX = (1 << 62) - 1  # a lifted counter's Variable bound: any element index


@record(frozen=True)
class Rebased:
    """A rebased kernel AST and, per moved buffer argument, (slot, element offset) it is read from."""

    ast: UOp
    offsets: tuple[tuple[int, int], ...]
    values: tuple[tuple[str, int], ...] = ()  # the lifted counters' Variables and this kernel's values


def _split(idx: UOp) -> tuple[UOp | None, int]:
    """idx as (e, c) with idx = e + c for a top-level constant c (e None: idx is the constant)."""
    if idx.op is Ops.CONST:
        return None, int(idx.arg.value)
    if idx.op is Ops.ADD and idx.src[1].op is Ops.CONST:
        return idx.src[0], int(idx.src[1].arg.value)
    return idx, 0


def _shifted(idx: UOp, o: int) -> UOp:
    """idx - o for an index whose top-level constant c is at least o (rebase takes o <= c)."""
    e, c = _split(idx)
    if e is None:
        return UOp.index_const(c - o)
    return e if c == o else UOp(Ops.ADD, (e, UOp.index_const(c - o)))


def _global_param(u: UOp) -> bool:
    return u.op is Ops.PARAM and u.arg.addrspace is AddrSpace.GLOBAL and u.arg.name is None


def rebase(ast: UOp) -> Rebased | None:
    if ast.op is not Ops.SINK:
        return None
    nodes = ast.toposort()
    indexes: dict[UOp, list[UOp]] = {}
    skip: set[UOp] = set()  # stored to, or used other than as an INDEX's buffer
    # an index ADD(e, CONST c) that some CAST turns into data (a random stream's counter): its casts read ADD(e, var);
    # its other uses (an INDEX of a buffer at the same offset: the step's slice of an activation) keep the constant
    as_data: dict[UOp, bool] = {}
    for u in nodes:
        if u.op is Ops.CAST and u.dtype is not dtypes.index and u.src[0] in as_data:
            as_data[u.src[0]] = True
        if u.op is Ops.ADD and u.dtype is dtypes.index and u.src[1].op is Ops.CONST and u.src[1].arg.value > 0:
            as_data[u] = False
        for i, s in enumerate(u.src):
            if _global_param(s):
                if u.op is Ops.INDEX and i == 0:
                    indexes.setdefault(s, []).append(u)
                else:
                    skip.add(s)
        if u.op is Ops.STORE:
            target = u.src[0]
            while target.op is not Ops.PARAM and target.src:
                target = target.src[0]
            skip.add(target)
    moved: dict[UOp, tuple[UOp, int]] = {}  # buffer -> (its PARAM with the span as size, offset)
    for p, idxs in indexes.items():
        size = p.shape[0]
        if p in skip or not isinstance(size, int) or len(p.src) != 1:
            continue
        lows, highs = [], []
        for x in idxs:
            lo, hi = x.src[1].vmin, x.src[1].vmax
            lows.append(min(int(lo), _split(x.src[1])[1]) if isinstance(lo, int) else -1)
            highs.append(hi)
        o = max(0, min(lows))
        arg = p.arg if o % max(1, ALIGN_BYTES // p.arg.dtype.itemsize) == 0 else _element_aligned(p.arg)
        span = min(max(highs) + 1 - o, size - o) if all(isinstance(h, int) for h in highs) else size - o
        if o or span != size:
            moved[p] = (p.replace(src=(UOp.shape_src((span,)),), arg=arg), o)
    counters = [u for u, data in as_data.items() if data]
    if not moved and not counters:
        return None
    lifted = {u: _counter(k) for k, u in enumerate(counters)}
    memo: dict[UOp, UOp] = {}  # sources first: an index may itself read a moved buffer (a binary search)
    for u in nodes:
        src = tuple(memo[s] for s in u.src)
        if u.op is Ops.INDEX and u.src[0] in moved:
            q, o = moved[u.src[0]]
            src = (q, _shifted(src[1], o) if o else src[1], *src[2:])
        elif u.op is Ops.CAST and u.dtype is not dtypes.index and u.src[0] in lifted:
            src = (src[0].replace(src=(src[0].src[0], lifted[u.src[0]])),)
        memo[u] = u if src == u.src else u.replace(src=src)
    offsets = tuple(sorted((p.arg.slot, o) for p, (_, o) in moved.items() if o))
    values = tuple((lifted[u].arg.name, int(u.src[1].arg.value)) for u in counters)
    return Rebased(memo[ast], offsets, values)


def _element_aligned(a: ParamArg) -> ParamArg:
    """A buffer argument read from an offset off the allocator's alignment: its vector accesses are unaligned."""
    return ParamArg(a.slot, a.dtype, a.device, a.addrspace, a.name, a.dtype.itemsize)


@functools.lru_cache(maxsize=64)
def _counter(k: int) -> UOp:
    """The Variable the k-th lifted counter constant becomes (the same in every kernel: they then share a program)."""
    return UOp.variable(f"_rb{k}", 0, COUNTER_MAX)
