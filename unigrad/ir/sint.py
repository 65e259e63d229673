"""Symbolic ints: shape entries that are an int or an index UOp over Variables (`Variable("n", 1, 512)`).

Tensor-level shape math goes through these helpers: results are simplified, so equal expressions are the same
(hash-consed) node and a result that folds to a constant comes back as a plain int. Checks that must hold for
every value of the Variables ask the expression's range (vmin/vmax); `resolve` gives the value under the
Variables' bindings (what the runtime passes to a kernel).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Union

from unigrad.ir.ops import Ops
from unigrad.ir.symbolic import simplify
from unigrad.ir.uop import UOp

sint = Union[int, UOp]  # noqa: UP007 - used at run time in isinstance checks elsewhere


def is_sym(x: object) -> bool:
    return isinstance(x, UOp)


def _norm(u: UOp) -> sint:
    s = simplify(u)
    return s.arg.value if s.op is Ops.CONST else s


def _uop(x: sint) -> UOp:
    return x if isinstance(x, UOp) else UOp.index_const(x)


def sadd(a: sint, b: sint) -> sint:
    if isinstance(a, int) and isinstance(b, int):
        return a + b
    return _norm(_uop(a) + _uop(b))


def ssub(a: sint, b: sint) -> sint:
    if isinstance(a, int) and isinstance(b, int):
        return a - b
    return _norm(_uop(a) + _uop(b) * -1)


def smul(a: sint, b: sint) -> sint:
    if isinstance(a, int) and isinstance(b, int):
        return a * b
    return _norm(_uop(a) * _uop(b))


def sfloordiv(a: sint, b: sint) -> sint:
    if isinstance(a, int) and isinstance(b, int):
        return a // b
    return _norm(_uop(a) // _uop(b))


def sprod(xs: Iterable[sint]) -> sint:
    out: sint = 1
    for x in xs:
        out = smul(out, x)
    return out


def smin(x: sint) -> int:
    """The smallest value x takes over its Variables' ranges."""
    return x if isinstance(x, int) else int(x.vmin)


def smax(x: sint) -> int:
    """The largest value x takes over its Variables' ranges (room to allocate for it)."""
    return x if isinstance(x, int) else int(x.vmax)


def always_le(a: sint, b: sint) -> bool:
    """a <= b for every value of the Variables."""
    return smax(ssub(a, b)) <= 0


def bound_vars(x: sint) -> list[UOp]:
    if isinstance(x, int):
        return []
    return [v for v in x.toposort() if v.op is Ops.PARAM and v.arg.name is not None and len(v.src) == 4]


def resolve(x: sint) -> int:
    """x's value under its Variables' bindings; a ValueError names a Variable that is not bound."""
    if isinstance(x, int):
        return x
    bound = bound_vars(x)
    s = simplify(x.substitute({v: UOp.index_const(v.src[3].arg.value) for v in bound})) if bound else simplify(x)
    if s.op is not Ops.CONST:
        names = sorted({v.arg.name for v in s.toposort() if v.op is Ops.PARAM and v.arg.name is not None})
        raise ValueError(f"the size {s.render()} depends on unbound Variables {names}; bind them (v.bind(value))")
    return int(s.arg.value)


def fits_bound(start: sint, stop: sint, n: sint) -> bool:
    """0 <= start <= stop <= n for the values the Variables are bound to (tinygrad checks a bound Variable's value,
    not its whole range); False when one is unbound."""
    try:
        a, b, m = resolve(start), resolve(stop), resolve(n)
    except ValueError:
        return False
    return 0 <= a <= b <= m


def resolve_shape(shape: Sequence[sint]) -> tuple[int, ...]:
    return tuple(resolve(s) for s in shape)


def unbind(x: sint) -> sint:
    """x with its Variables unbound (what a kernel compiled once for every value sees)."""
    bound = bound_vars(x)
    return x.substitute({v: v.replace(src=v.src[:3]) for v in bound}) if bound else x  # type: ignore[union-attr]
