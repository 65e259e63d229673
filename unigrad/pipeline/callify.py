"""Callify: a tensor graph -> one stateless FUNCTION.

In: SINK of tensor-level UOps over concrete BUFFERs (or AFTER(BUFFER, CALL...) for kernelized but not yet
run buffers) and bound Variables. Out: FUNCTION(TUPLE(outputs...), a_0, a_1, ..., v_0, v_1, ...) whose body refers to its
buffers a_k only through PARAM(k) placeholders and to each bound Variable v_j by the unbound Variable, so structurally equal programs on different buffers
share one body (and one cached schedule).
"""

from __future__ import annotations

from unigrad.ir.args import AddrSpace, ParamArg
from unigrad.ir.ops import Ops
from unigrad.ir.uop import UOp


def is_buffer_input(u: UOp) -> bool:
    """A BUFFER, or a BUFFER after the kernel that writes it (kernelized, maybe not yet run)."""
    return u.op is Ops.BUFFER or (u.op is Ops.AFTER and u.src[0].op is Ops.BUFFER)


def callify(sink: UOp) -> UOp:
    """SINK(tensor uops) -> FUNCTION(TUPLE(body...), inputs...) with inputs replaced by PARAM(k)."""
    mapping: dict[UOp, UOp] = {}
    args: list[UOp] = []
    bound: list[UOp] = []
    for u in sink.toposort(gate=lambda x: not is_buffer_input(x)):
        if is_buffer_input(u):
            buf = u if u.op is Ops.BUFFER else u.src[0]
            pa = ParamArg(len(args), buf.arg.dtype, buf.arg.device, AddrSpace.GLOBAL)
            mapping[u] = UOp(Ops.PARAM, (buf.src[0],), pa)
            args.append(u)
        elif u.op is Ops.PARAM and u.arg.name is not None and len(u.src) == 4:
            mapping[u] = u.replace(src=u.src[:3])  # bound Variable: the body sees it unbound, the runtime its value
            bound.append(u)
    body = sink.substitute(mapping) if mapping else sink
    return UOp(Ops.FUNCTION, (UOp(Ops.TUPLE, body.src), *args, *sorted(bound, key=lambda v: v.arg.name)))
