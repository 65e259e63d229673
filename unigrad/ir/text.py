"""Printing UOps: a numbered listing of a graph (repr) and infix text of expressions (render_expr)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from unigrad.dtype import dtypes
from unigrad.ir.args import ConstArg, ParamArg, RangeArg
from unigrad.ir.ops import Ops

if TYPE_CHECKING:
    from unigrad.ir.uop import UOp

MAX_LINES = 80

_INFIX = {
    Ops.ADD: "+",
    Ops.SUB: "-",
    Ops.MUL: "*",
    Ops.DIV: "/",
    Ops.IDIV: "//",
    Ops.MOD: "%",
    Ops.CMPLT: "<",
    Ops.CMPNE: "!=",
    Ops.CMPGT: ">",
    Ops.CMPGE: ">=",
    Ops.CMPLE: "<=",
    Ops.CMPEQ: "==",
    Ops.XOR: "^",
    Ops.OR: "|",
    Ops.AND: "&",
    Ops.SHL: "<<",
    Ops.SHR: ">>",
}


def _fmt_arg(u: UOp) -> str:
    a = u.arg
    if a is None:
        return ""
    if isinstance(a, ConstArg):
        return repr(a.value)
    if isinstance(a, ParamArg):
        if a.name is not None:
            return a.name
        space = a.addrspace.name if a.addrspace is not None else ""
        return f"slot={a.slot} {space} {a.device or ''}".rstrip()
    if isinstance(a, RangeArg):
        return f"r{a.id} {a.axis_type.value}"
    return repr(a)


def uop_repr(root: UOp) -> str:
    """A numbered listing, sources first: `%3 = ADD(%1, %2) : float32 (4,)`; a Variable prints as itself."""
    if root.op is Ops.PARAM and isinstance(root.arg, ParamArg) and root.arg.name is not None and len(root.src) >= 3:
        bound = f"={root.src[3].arg.value}" if len(root.src) == 4 else ""
        return f"Variable({root.arg.name!r}, {root.src[1].arg.value}, {root.src[2].arg.value}){bound}"
    nodes = root.toposort()
    small = len(nodes) <= MAX_LINES
    if small and root.dtype is dtypes.index and root.op is not Ops.STACK and all(_is_sym_int(u) for u in nodes):
        return render_expr(root)  # a symbolic size, e.g. in a shape: (n*3)
    names = {u: f"%{i}" for i, u in enumerate(nodes)}
    lines = []
    for u in nodes[-MAX_LINES:]:
        src = ", ".join(names[s] for s in u.src)
        arg = _fmt_arg(u)
        try:
            meta = f"{u.dtype.name} {u.shape}" if u.dtype is not dtypes.void else ""
        except Exception as e:  # a malformed node still prints
            meta = f"<{type(e).__name__}>"
        call = f"{u.op.name}({src})" if u.src else u.op.name
        lines.append(f"{names[u]} = {call}{' ' + arg if arg else ''} : {meta}".rstrip(" :"))
    if len(nodes) > MAX_LINES:
        lines.insert(0, f"... {len(nodes) - MAX_LINES} earlier nodes")
    return "\n".join(lines) if len(lines) > 1 else f"UOp({lines[0]})"


def structure(root: UOp) -> str:
    """The whole graph as text, one line per node (op, its sources by number, repr of arg and tag): equal texts
    are equal graphs, in any process (the disk caches' keys). repr() is for people: it shortens long graphs."""
    nodes = root.toposort()
    num = {u: i for i, u in enumerate(nodes)}
    return "\n".join(f"{u.op.name} {' '.join(str(num[s]) for s in u.src)} {u.arg!r} {u.tag!r}" for u in nodes)


def _is_sym_int(u: UOp) -> bool:
    """A node of an index expression over Variables: what a symbolic shape entry is made of."""
    if u.op is Ops.PARAM:
        return isinstance(u.arg, ParamArg) and u.arg.name is not None
    return u.op in (Ops.CONST, Ops.STACK) or (u.op in _INFIX and u.dtype is dtypes.index)


def _and_chain(u: UOp) -> list[UOp]:
    if u.op is Ops.AND and u.dtype is dtypes.bool:
        return _and_chain(u.src[0]) + _and_chain(u.src[1])
    return [u]


def render_expr(u: UOp) -> str:
    """Infix text as a person writes index math: ((x*3)+y), ((x<2) and (y<2)), (x>=1)."""
    op = u.op
    if op is Ops.CONST:
        return str(u.arg.value)
    if op is Ops.PARAM:
        return u.arg.name if u.arg.name is not None else f"buf{u.arg.slot}"
    if op is Ops.RANGE:
        return f"ridx{u.arg.id}"
    if op is Ops.SPECIAL:
        return str(u.arg)
    if op is Ops.AND and u.dtype is dtypes.bool:
        return "(" + " and ".join(render_expr(c) for c in _and_chain(u)) + ")"
    if op is Ops.OR and u.dtype is dtypes.bool:
        return f"({render_expr(u.src[0])} or {render_expr(u.src[1])})"
    if op is Ops.CMPNE and u.src[1].op is Ops.CONST and u.src[1].arg.value is True:
        inner = u.src[0]
        if inner.op is Ops.CMPLT:
            return f"({render_expr(inner.src[0])}>={render_expr(inner.src[1])})"
        if inner.op is Ops.CMPNE:
            return f"({render_expr(inner.src[0])}=={render_expr(inner.src[1])})"
        return f"(not {render_expr(inner)})"
    if op in _INFIX and len(u.src) == 2:
        return f"({render_expr(u.src[0])}{_INFIX[op]}{render_expr(u.src[1])})"
    if op is Ops.WHERE:
        return f"({render_expr(u.src[0])} ? {render_expr(u.src[1])} : {render_expr(u.src[2])})"
    if op is Ops.CAST:
        return f"{u.arg.name}({render_expr(u.src[0])})"
    return f"{op.name.lower()}({', '.join(render_expr(s) for s in u.src)})"
