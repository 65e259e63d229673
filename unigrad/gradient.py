"""Reverse-mode autodiff on tensor-level UOp graphs: one table of per-op rules and compute_gradient.

In: a tensor-level graph `root` (the ops tensor.py builds: elementwise ALU ops on equal shapes, movement
ops, REDUCE, LOAD, markers), the gradient of the result with root's shape and dtype, and a set of target
nodes. Out: for each target reached from the root, a tensor-level UOp graph of d(root)/d(target), with the
target's shape and dtype. Gradients are ordinary graphs, so they fuse and compile like any other; nothing
is evaluated here.

A rule maps (g, y) to one gradient per source of y, where g is the gradient flowing into y (y's shape and
dtype) and None means "this source gets no gradient". Elementwise sources have y's shape, so rules build
equal-shape elementwise nodes; scalars are broadcast the way tensor.py does it (CONST -> RESHAPE to 1s ->
EXPAND). Only float values carry gradients: a source with a non-float dtype never receives one.

@function calls stay calls: one with its own rule is differentiated by it; one whose body reads only its PARAMs by a
call of the body's vector-Jacobian product, traced once per body (`_vjp_of`: the body differentiated over its
PARAMs, the outputs' gradients PARAMs after the arguments); other calls are inlined first.

`gradients` is what tensor.py calls: compute_gradient seeing through values that realize() turned into
buffers (a tensor that requires grad leaves its graph in `realized_from` when it is realized).
"""

from __future__ import annotations

import functools
import math
import weakref
from collections.abc import Callable, Mapping

from unigrad.dtype import ConstType, dtypes
from unigrad.helpers import record
from unigrad.ir.args import FunctionArg, LoadArg, ParamArg, ReduceArg
from unigrad.ir.ops import Ops
from unigrad.ir.uop import UOp
from unigrad.pipeline import multi
from unigrad.pipeline.callify import body_self_contained, inline_functions

Grads = tuple[UOp | None, ...]
GradientRule = Callable[[UOp, UOp], Grads]

LN2 = math.log(2)


# ---------------------------------------------------------------- builders for equal-shape tensor-level nodes


def const_like(x: UOp, value: ConstType) -> UOp:
    """`value` in x's dtype broadcast to x's shape: EXPAND(RESHAPE(CONST, (1,)*ndim), shape)."""
    c = UOp.const(x.dtype, value)
    if not x.shape:
        return c
    ones = UOp(Ops.RESHAPE, (c, UOp.shape_src((1,) * len(x.shape))))
    return UOp(Ops.EXPAND, (ones, UOp.shape_src(x.shape)))


def add(a: UOp, b: UOp) -> UOp:
    return UOp(Ops.ADD, (a, b))


def mul(a: UOp, b: UOp) -> UOp:
    return UOp(Ops.MUL, (a, b))


def neg(a: UOp) -> UOp:
    return mul(a, const_like(a, -1))


def recip(a: UOp) -> UOp:
    return UOp(Ops.RECIP, (a,))


def scale(a: UOp, k: float) -> UOp:
    return mul(a, const_like(a, k))


def cos(x: UOp) -> UOp:
    """cos x = sin(x + pi/2), as tensor.py builds it."""
    return UOp(Ops.SIN, (add(x, const_like(x, math.pi / 2)),))


def where(cond: UOp, a: UOp, b: UOp) -> UOp:
    return UOp(Ops.WHERE, (cond, a, b))


def zero_unless(cond: UOp, a: UOp) -> UOp:
    """a where cond holds, else 0."""
    return where(cond, a, const_like(a, 0))


def lt(a: UOp, b: UOp) -> UOp:
    return UOp(Ops.CMPLT, (a, b))


def ne(a: UOp, b: UOp) -> UOp:
    return UOp(Ops.CMPNE, (a, b))


def expand_to(x: UOp, shape: tuple) -> UOp:
    """Broadcast the size-1 axes of x (same rank) to `shape`."""
    return x if tuple(x.shape) == tuple(shape) else UOp(Ops.EXPAND, (x, UOp.shape_src(shape)))


def reduce(x: UOp, op: Ops, axes: tuple[int, ...]) -> UOp:
    return UOp(Ops.REDUCE, (x,), ReduceArg(op, axes)) if axes else x


# ---------------------------------------------------------------- rules that do not fit on one line


def max_grad(g: UOp, y: UOp) -> Grads:
    """y = max(a, b): the larger source takes g; on a tie each takes g/2 (as torch.maximum)."""
    a, b = y.src
    differ, half = ne(a, b), scale(g, 0.5)
    return where(differ, zero_unless(lt(b, a), g), half), where(differ, zero_unless(lt(a, b), g), half)


def div_grad(g: UOp, y: UOp) -> Grads:
    """y = a/b: dy/da = 1/b, dy/db = -a/b^2 = -y/b."""
    inv_b = recip(y.src[1])
    return mul(g, inv_b), neg(mul(g, mul(y, inv_b)))


def where_grad(g: UOp, y: UOp) -> Grads:
    """y = c ? a : b: g goes to the branch that was taken; the condition gets none."""
    c = y.src[0]
    zero = const_like(g, 0)
    return None, where(c, g, zero), where(c, zero, g)


def mod_grad(g: UOp, y: UOp) -> Grads:
    """y = a mod b = a - b*floor(a/b) (floats): dy/da = 1, dy/db = -floor(a/b) = -(a - y)/b."""
    a, b = y.src
    return g, neg(mul(g, mul(add(a, neg(y)), recip(b))))


def pow_grad(g: UOp, y: UOp) -> Grads:
    """y = a^b: dy/da = b*a^(b-1) (0 where b == 0), dy/db = y*ln(a) (0 where a == 0 and b >= 0), torch's formulas
    as torch evaluates them: ln of a negative base is nan, 0 to a negative power gives inf * -inf = -inf."""
    a, b = y.src
    zero = const_like(b, 0)
    da = mul(g, mul(b, UOp(Ops.POW, (a, add(b, const_like(b, -1))))))
    db = mul(g, mul(y, scale(UOp(Ops.LOG2, (a,)), LN2)))
    keep_db = UOp(Ops.OR, (UOp(Ops.OR, (ne(a, zero), lt(b, zero))), ne(b, b)))  # not (a == 0 and b >= 0): nan b keeps
    return zero_unless(ne(b, zero), da), zero_unless(keep_db, db)


def expand_grad(g: UOp, y: UOp) -> Grads:
    """y = EXPAND(x): every copy of an element adds its gradient back: sum g over the expanded axes."""
    x = y.src[0]
    axes = tuple(i for i, (a, b) in enumerate(zip(x.shape, y.shape)) if a != b)
    return reduce(g, Ops.ADD, axes), None


def permute_grad(g: UOp, y: UOp) -> Grads:
    """y = PERMUTE(x, order): permute g back with the inverse order."""
    inverse = tuple(sorted(range(len(y.arg)), key=lambda i: y.arg[i]))
    return (UOp(Ops.PERMUTE, (g,), inverse),)


def stack_grad(g: UOp, y: UOp) -> Grads:
    """y = STACK(x_0, x_1, ...) along a new leading axis: x_i gets slice i of g."""
    out = []
    for i, x in enumerate(y.src):
        offsets = UOp.shape_src((i,) + (0,) * len(x.shape))
        piece = UOp(Ops.SHRINK, (g, offsets, UOp.shape_src((1, *x.shape))))
        out.append(UOp(Ops.RESHAPE, (piece, UOp.shape_src(x.shape))))
    return tuple(out)


def reduce_grad(g: UOp, y: UOp) -> Grads:
    """y = REDUCE(x, op, axes); g keeps the reduced axes as size 1."""
    return (REDUCE_RULES[y.arg.op](g, y, y.src[0], y.arg.axes),)


def reduce_max_grad(g: UOp, y: UOp, x: UOp, axes: tuple[int, ...]) -> UOp:
    """Every element equal to the max shares g evenly (torch.amax / Tensor.max() semantics; torch's
    max(dim) instead gives it all to one index). A nan max matches no element: its gradient is nan."""
    is_max = where(ne(x, expand_to(y, x.shape)), const_like(x, 0), const_like(x, 1))
    share = mul(g, recip(reduce(is_max, Ops.ADD, axes)))
    return mul(is_max, expand_to(share, x.shape))


def reduce_mul_grad(g: UOp, y: UOp, x: UOp, axes: tuple[int, ...]) -> UOp:
    """d(prod x)/dx_i = prod of the others, exact with zeros: with no zero in the group it is p/x_i (p the
    product), with one zero it is p_nonzero at the zero and 0 elsewhere, with two or more zeros it is 0."""
    nonzero = ne(x, const_like(x, 0))
    safe = where(nonzero, x, const_like(x, 1))
    p = expand_to(reduce(safe, Ops.MUL, axes), x.shape)  # product of the nonzero elements
    zeros = expand_to(reduce(where(nonzero, const_like(x, 0), const_like(x, 1)), Ops.ADD, axes), x.shape)
    at_nonzero = where(ne(zeros, const_like(x, 0)), const_like(x, 0), mul(p, recip(safe)))
    at_zero = where(ne(zeros, const_like(x, 1)), const_like(x, 0), p)
    return mul(expand_to(g, x.shape), where(nonzero, at_nonzero, at_zero))


REDUCE_RULES: dict[Ops, Callable[[UOp, UOp, UOp, tuple[int, ...]], UOp]] = {
    Ops.ADD: lambda g, y, x, axes: expand_to(g, x.shape),  # d(sum x)/dx_i = 1: broadcast g back
    Ops.MAX: reduce_max_grad,
    Ops.MUL: reduce_mul_grad,
}


EXPAND_TERMS = 8  # an EXPAND's gradient with more terms than this is reduced this many terms at a time
SCATTER_MIN_WORK = 1 << 26  # a gather's gradient as a one-hot product of this many multiply-adds or more: sort-based


def gather_grad(g: UOp, y: UOp) -> Grads:
    """y = INDEX(src, t), rows of src picked by the int tensor t: d src[j] = sum of g[p] over the positions p
    with t[p] == j, a scatter-add: a one-hot (n, P) @ (P, rest) product, or, from SCATTER_MIN_WORK of that
    product's multiply-adds on (an embedding's gradient), the rows summed in index order after a sort of the
    index; the index gets none."""
    from unigrad.tensor import Tensor  # the Tensor API composes the one-hot product (imported when first used)

    src, t = y.src
    n, k = src.shape[0], len(t.shape)
    rest = tuple(src.shape[1:])
    idx = Tensor(t, device=src.device or t.device)
    idx = (idx < 0).where(idx + n, idx)
    sizes = (n, *t.shape, *rest)
    if all(isinstance(s, int) for s in sizes) and math.prod(sizes) >= SCATTER_MIN_WORK:
        from unigrad.api.movement import _scatter_add_rows

        p, r = math.prod(t.shape), math.prod(rest)
        rows = Tensor(g, device=idx.device).reshape(p, r)
        return _scatter_add_rows(n, idx.reshape(p).cast(dtypes.int64), rows).reshape(n, *rest).uop, None
    rows = Tensor.arange(n, device=idx.device).reshape(n, *([1] * k))
    onehot = (idx.unsqueeze(0) == rows).cast(g.dtype).reshape(n, -1)  # (n, P)
    grad = onehot.dot(Tensor(g, device=idx.device).reshape(onehot.shape[1], math.prod(rest)))  # (n, prod(rest))
    return grad.reshape(n, *rest).uop, None


def load_grad(g: UOp, y: UOp) -> Grads:
    """y = LOAD(x) (contiguous() or to(device)): identity on data; a device copy copies g back."""
    x = y.src[0]
    if y.arg.device is None or y.arg.device == x.device:
        back = g
    elif isinstance(x.device, tuple):  # back onto x's devices, sharded as x is
        back = multi.shard(g, x.device, x.axis)
    else:
        back = UOp(Ops.LOAD, (g,), LoadArg(x.device))
    return (back,) + (None,) * (len(y.src) - 1)


def replicated_grad(g: UOp, y: UOp) -> Grads:
    """y = REPLICATED(x, axes): each device's entry of x along the axes is the whole of y. y is one value, so
    its gradient goes to one entry (index 0) and the others get zeros."""
    x = y.src[0]
    return (UOp(Ops.PAD, (g, UOp.shape_src((0,) * len(x.shape)), UOp.shape_src(x.shape))),)


def no_gradient(g: UOp, y: UOp) -> Grads:
    """Leaves, and ops whose result is piecewise constant in or unrelated to float sources."""
    return (None,) * len(y.src)


# ---------------------------------------------------------------- the table: one rule per op

GRADIENT_RULES: dict[Ops, GradientRule] = {
    # leaves: nothing to pass on (their sources, if any, are shapes)
    Ops.BUFFER: no_gradient,
    Ops.BUFFER_VIEW: no_gradient,
    Ops.CONST: no_gradient,
    Ops.PARAM: no_gradient,
    Ops.BINARY: no_gradient,
    Ops.AFTER: no_gradient,  # a kernelized buffer: data, not a computation we can differentiate
    Ops.INDEX: gather_grad,  # rows picked by an int tensor (Tensor.take_rows)
    # elementwise, primitive
    Ops.ADD: lambda g, y: (g, g),  # d(a+b) = da + db
    Ops.MUL: lambda g, y: (mul(g, y.src[1]), mul(g, y.src[0])),  # d(ab) = b da + a db
    Ops.MAX: max_grad,
    Ops.RECIP: lambda g, y: (neg(mul(mul(g, y), y)),),  # d(1/x) = -y^2 dx: (g*y)*y, as a/b's -(a/b)/b (no underflow)
    Ops.TRUNC: lambda g, y: (const_like(g, 0),),  # piecewise constant: zero almost everywhere
    Ops.CAST: lambda g, y: (UOp(Ops.CAST, (g,), y.src[0].dtype),),  # cast the gradient back
    Ops.WHERE: where_grad,
    Ops.MOD: mod_grad,
    Ops.IDIV: no_gradient,  # floor(a/b): torch implements no derivative
    Ops.CMPLT: no_gradient,
    Ops.CMPNE: no_gradient,
    Ops.AND: no_gradient,
    Ops.OR: no_gradient,
    Ops.XOR: no_gradient,
    Ops.SHL: no_gradient,
    Ops.SHR: no_gradient,
    # elementwise, decomposed by the spec (tensor.py builds EXP2, LOG2, SIN, SQRT; the rest have rules too)
    Ops.EXP2: lambda g, y: (mul(g, scale(y, LN2)),),  # d(2^x) = 2^x ln2 dx
    Ops.LOG2: lambda g, y: (mul(g, recip(scale(y.src[0], LN2))),),  # d(log2 x) = dx / (x ln2)
    Ops.SIN: lambda g, y: (mul(g, cos(y.src[0])),),  # d(sin x) = cos x dx
    Ops.SQRT: lambda g, y: (mul(g, recip(scale(y, 2))),),  # d(sqrt x) = dx / (2 sqrt x)
    Ops.NEG: lambda g, y: (neg(g),),  # d(-x) = -dx
    Ops.SUB: lambda g, y: (g, neg(g)),  # d(a-b) = da - db
    Ops.DIV: div_grad,
    Ops.MULACC: lambda g, y: (mul(g, y.src[1]), mul(g, y.src[0]), g),  # d(ab+c) = b da + a db + dc
    Ops.POW: pow_grad,
    Ops.CMPGT: no_gradient,
    Ops.CMPGE: no_gradient,
    Ops.CMPLE: no_gradient,
    Ops.CMPEQ: no_gradient,
    Ops.NOT: no_gradient,
    Ops.THREEFRY: no_gradient,  # random bits
    # movement: move the gradient back
    Ops.RESHAPE: lambda g, y: (UOp(Ops.RESHAPE, (g, UOp.shape_src(y.src[0].shape))), None),
    Ops.EXPAND: expand_grad,
    Ops.PERMUTE: permute_grad,
    Ops.FLIP: lambda g, y: (UOp(Ops.FLIP, (g,), y.arg),),  # flipping is its own inverse
    Ops.PAD: lambda g, y: (UOp(Ops.SHRINK, (g, y.src[1], UOp.shape_src(y.src[0].shape))), None, None),  # cut it out
    Ops.SHRINK: lambda g, y: (UOp(Ops.PAD, (g, y.src[1], UOp.shape_src(y.src[0].shape))), None, None),  # 0 outside
    Ops.STACK: stack_grad,
    Ops.BITCAST: no_gradient,  # reinterpreted bits: not differentiable (as torch's view(dtype))
    # reduce
    Ops.REDUCE: reduce_grad,
    # load and markers
    Ops.LOAD: load_grad,
    Ops.REPLICATED: replicated_grad,
    Ops.CONTIGUOUS: lambda g, y: (g,),  # identity on data
    Ops.DETACH: no_gradient,  # stops gradients, by definition
    Ops.CONTIGUOUSBACKWARD: lambda g, y: (UOp(Ops.LOAD, (g,), LoadArg()),),  # make the gradient contiguous
}


# ---------------------------------------------------------------- the walk


def _has_rule(fn: UOp) -> bool:
    """A FUNCTION from @function with its own gradient rule (autodiff calls it instead of inlining the body)."""
    return isinstance(fn.arg, FunctionArg) and fn.arg.backward is not None


def _kept(fn: UOp) -> bool:
    """A call autodiff keeps as a call: one with its own rule, or one whose body is differentiated once per trace
    (_vjp_of: a self-contained body, not precompiled, over no tensor split across devices)."""
    return _has_rule(fn) or (
        isinstance(fn.arg, FunctionArg)
        and not fn.arg.precompile
        and not any(isinstance(a.device, tuple) for a in fn.src[1:])
        and body_self_contained(fn.src[0])
    )


@record(frozen=True)
class _VJP:
    """A traced body's vector-Jacobian product, for one set of outputs given a gradient and of arguments asked
    for one: `body` a TUPLE over PARAM(k) (the call's arguments, then the outputs' gradients), `arg` its
    FunctionArg, and for each argument the TUPLE index of its gradient (None: it gets none)."""

    body: UOp
    arg: FunctionArg
    index: tuple[int | None, ...]


# traced body -> {(outputs with a gradient, arguments that need one): its VJP}; a body lives as long as its traces
_vjps: weakref.WeakKeyDictionary[UOp, dict[tuple[tuple[bool, ...], tuple[bool, ...]], _VJP]] = (
    weakref.WeakKeyDictionary()
)


_bodies: weakref.WeakKeyDictionary[UOp, frozenset[UOp]] = weakref.WeakKeyDictionary()


def _body_nodes(body: UOp) -> frozenset[UOp]:
    """The nodes of a traced body (nested bodies' too), once per body; without the body's TUPLE itself (the entry
    would hold its own key alive)."""
    if (nodes := _bodies.get(body)) is None:
        nodes = _bodies[body] = frozenset(body.toposort()) - {body}
    return nodes


def _call_order(roots: list[UOp]) -> list[UOp]:
    """The graph under `roots`, sources first, a call's body left out (its arguments in): a body's nodes are over its
    own PARAMs, which hash-consing may share with another body's (a nested call's PARAM(0) is its caller's PARAM(0)
    when of the same shape), and its constants with the caller's graph."""
    out: list[UOp] = []
    seen: set[UOp] = set()
    stack: list[tuple[UOp, bool]] = [(r, False) for r in reversed(roots)]
    while stack:
        u, done = stack.pop()
        if done:
            out.append(u)
            continue
        if u in seen:
            continue
        seen.add(u)
        stack.append((u, True))
        srcs = u.src[1:] if u.op is Ops.FUNCTION else u.src
        stack.extend((x, False) for x in reversed(srcs) if x not in seen)
    return out


def _vjp_of(fn: UOp, present: tuple[bool, ...], needs: tuple[bool, ...]) -> _VJP:
    """The VJP body of a call of `fn` (once per traced body, gradients present and arguments needing one): the
    body differentiated over its PARAMs, each output's gradient a PARAM after the arguments. A call's backward is
    then one FUNCTION node (its forward recomputed inside is the forward's own nodes once inlined: hash-consing)
    where inlining the body rebuilt and walked all of it for every call (an LSTM's 70 steps a training step)."""
    body = fn.src[0]
    per_body = _vjps.setdefault(body, {})
    if (vjp := per_body.get((present, needs))) is not None:
        return vjp
    n = len(fn.src) - 1
    order = _call_order(list(body.src))
    params = {u.arg.slot: u for u in order if u.op is Ops.PARAM and u.arg.name is None}
    seeds: dict[UOp, UOp] = {}
    slot = n
    for out, given in zip(body.src, present):
        if given:
            g = UOp(Ops.PARAM, (UOp.shape_src(out.shape),), ParamArg(slot, out.dtype, out.device))
            seeds[out] = g if out not in seeds else add(seeds[out], g)
            slot += 1
    targets = {params[k] for k in range(n) if needs[k] and k in params}
    grads = _walk(order, seeds, targets, opaque=True)
    index: list[int | None] = []
    outs: list[UOp] = []
    for k in range(n):
        g = grads.get(params[k]) if needs[k] and k in params else None
        index.append(None if g is None else len(outs))
        if g is not None:
            outs.append(g)
    arg = FunctionArg(f"{fn.arg.name}.vjp", fixed=fn.arg.fixed)
    vjp = per_body[(present, needs)] = _VJP(UOp(Ops.TUPLE, tuple(outs)), arg, tuple(index))
    return vjp


def _traced_backward(fn: UOp, outs_g: tuple[UOp | None, ...], needs: tuple[bool, ...]) -> Grads:
    """The arguments' gradients of a call of `fn` as GETTUPLEs of one call of its VJP (None where none)."""
    vjp = _vjp_of(fn, tuple(g is not None for g in outs_g), needs)
    if not vjp.body.src:
        return (None,) * len(needs)
    call = UOp(Ops.FUNCTION, (vjp.body, *fn.src[1:], *(g for g in outs_g if g is not None)), vjp.arg)
    return tuple(None if i is None else UOp(Ops.GETTUPLE, (call,), i) for i in vjp.index)


def compute_gradient(
    root: UOp,
    root_grad: UOp,
    targets: set[UOp],
    order: list[UOp] | None = None,
    hooks: Mapping[UOp, Callable[[UOp], UOp]] | None = None,
) -> dict[UOp, UOp]:
    """d(root)/d(t) for each target t reached from root along float values, as UOp graphs.

    Walks the nodes between root and the targets in reverse topological order, applies each node's rule to
    its accumulated gradient and adds the results into its sources' gradients (a node used twice gets the
    sum). Targets not reached are missing from the result. Raises NotImplementedError for an op on the
    path without a rule. `order`: root.toposort() when the caller has it already. `hooks`: node -> function of
    its complete gradient giving the gradient that flows on (Tensor.register_hook)."""
    if tuple(root_grad.shape) != tuple(root.shape):
        raise ValueError(f"compute_gradient: root gradient shape {root_grad.shape} != root shape {root.shape}")
    return _walk(root.toposort() if order is None else order, {root: root_grad}, targets, hooks)


def _walk(
    order: list[UOp],
    seeds: dict[UOp, UOp],
    targets: set[UOp],
    hooks: Mapping[UOp, Callable[[UOp], UOp]] | None = None,
    opaque: bool = False,
) -> dict[UOp, UOp]:
    """compute_gradient's walk over `order` (the graph's toposort, its roots last; opaque: without the calls'
    bodies, _call_order's) from the gradients `seeds` of its roots."""
    # @function calls: use the function's own rule, or differentiate its body once per trace (_vjp_of); a call of a
    # body that reads a buffer (or is precompiled) is differentiated inlined. The walk also reaches the calls inside
    # bodies, so where every call is kept inlining changes nothing and is skipped (an unrolled LSTMCell's 2k sigmoid
    # and tanh calls: a rebuild and a second walk of an 80k-node graph per backward)
    calls = [u for u in order if u.op is Ops.FUNCTION]
    inlined = any(not _kept(u) for u in calls)
    if inlined:  # (targets are buffers and views: inlining leaves them as they are)
        roots = UOp(Ops.TUPLE, tuple(seeds))
        new_roots = inline_functions(roots, keep=_kept)
        seeds = {new: seeds[old] for old, new in zip(roots.src, new_roots.src)}
    # the bodies of the calls kept are theirs: their nodes are not walked here where a target is among them (a
    # PARAM, in a VJP's body; a user's leaf that is a constant a body makes too); elsewhere they reach no target,
    # get no gradient and cost only their place in the order
    if inlined or (
        calls and not opaque and any(not targets.isdisjoint(_body_nodes(b)) for b in {c.src[0] for c in calls})
    ):
        order = _call_order(list(seeds))
    on_path: set[UOp] = set()  # nodes with a float path down to a target
    for u in order:
        if u in targets or ((u.dtype.is_float or u.op is Ops.FUNCTION) and not on_path.isdisjoint(u.src)):
            on_path.add(u)
    grads: dict[UOp, UOp] = dict(seeds)
    seeded = set(seeds.values())
    out_grads: dict[UOp, dict[int, UOp]] = {}  # FUNCTION with its own rule -> gradients of its outputs (GETTUPLEs)
    # an EXPAND's gradient terms, summed over the expanded axes EXPAND_TERMS at a time: a weight shared by the steps
    # of an unrolled recurrence is one hash-consed EXPAND, and the sum of its 199 terms under one REDUCE is one kernel
    # reading 398 buffers (an LSTMCell's weight gradient: 0.4 s); as a sum of REDUCEs the kernel split can cut it
    expand_terms: dict[UOp, list[UOp]] = {}

    def accumulate(srcs: tuple[UOp, ...], src_grads: Grads) -> None:
        for s, sg in zip(srcs, src_grads):
            if sg is not None and s in on_path and s.dtype.is_float:
                grads[s] = sg if s not in grads else add(grads[s], sg)
                if s.op is Ops.EXPAND:
                    expand_terms.setdefault(s, []).append(sg)

    for u in reversed(order):
        if u.op is Ops.FUNCTION and u in out_grads:
            outs_g = tuple(out_grads[u].get(i) for i in range(len(u.src[0].src)))  # None: an output not used
            if _has_rule(u):
                accumulate(u.src[1:], u.arg.backward(outs_g, u.src[1:]))
            else:
                needs = tuple(a in on_path and a.dtype.is_float for a in u.src[1:])
                accumulate(u.src[1:], _traced_backward(u, outs_g, needs))
            continue
        g = grads.get(u)
        if g is not None and hooks and u in hooks:  # every user of u is done: its gradient is complete
            g = grads[u] = hooks[u](g)
        if u.op is Ops.GETTUPLE and u.src[0] in on_path and g is not None:  # an output of a function with a rule
            outs = out_grads.setdefault(u.src[0], {})
            outs[u.arg] = g if u.arg not in outs else add(outs[u.arg], g)
            continue
        if g is None or on_path.isdisjoint(u.src):
            continue
        rule = GRADIENT_RULES.get(u.op)
        if rule is None:
            raise NotImplementedError(f"gradient: no rule for {u.op.name} (shape {u.shape}, dtype {u.dtype})")
        terms = expand_terms.get(u, ()) if u.op is Ops.EXPAND and g is grads[u] and g not in seeded else ()
        if len(terms) > EXPAND_TERMS:
            for i in range(0, len(terms), EXPAND_TERMS):
                accumulate(u.src, rule(functools.reduce(add, terms[i : i + EXPAND_TERMS]), u))
        else:
            accumulate(u.src, rule(g, u))
    return {t: grads[t] for t in targets if t in grads}


# ---------------------------------------------------------------- gradients through realized values

# realize() replaces a tensor's graph by a view of its buffer; for a tensor that requires grad the graph is
# kept here (keyed weakly by the realized view), so a later backward() still reaches the leaves behind it.
realized_from: weakref.WeakKeyDictionary[UOp, UOp] = weakref.WeakKeyDictionary()


def remember_graph(realized: UOp, graph: UOp) -> None:
    """`realized` (a view of a buffer) holds the value of `graph`."""
    realized_from[realized] = realized_from.get(graph, graph)


def unrealize(u: UOp, memo: dict[UOp, UOp], realized: dict[UOp, UOp]) -> UOp:
    """u with every remembered realized value replaced by the graph that computed it, recursively.
    memo maps each realized value met to its unrealized graph; `realized` is a snapshot of realized_from (a
    plain dict: the walk asks every node, and a WeakKeyDictionary answers in Python)."""
    mapping: dict[UOp, UOp] = {}
    # no gradient flows through a DETACH: a realized value only under one (a recurrent state carried over from the
    # last step, h.detach()) is left as it is, and a graph with nothing else realized is not rebuilt at all
    for n in u.toposort(gate=lambda x: x not in realized and x.op is not Ops.DETACH):
        if n in realized:
            if n not in memo:
                memo[n] = unrealize(realized[n], memo, realized)
            mapping[n] = memo[n]
    return u.substitute(mapping) if mapping else u


def gradients(
    root: UOp,
    root_grad: UOp,
    targets: list[UOp],
    hooks: Mapping[UOp, Callable[[UOp], UOp]] | None = None,
    order: list[UOp] | None = None,
) -> list[UOp | None]:
    """compute_gradient for a tensor graph, seeing through realized values: the walk runs on the graphs
    that computed them, and the gradients read each such value from its buffer again. None for a target
    the root does not depend on. `order`: root.toposort() when the caller has it already."""
    order = root.toposort() if order is None else order
    realized = dict(realized_from.items())
    if (
        realized.keys().isdisjoint(order)
        and realized.keys().isdisjoint(targets)
        and realized.keys().isdisjoint(hooks or ())
    ):
        grads = compute_gradient(root, root_grad, set(targets), order, hooks)
        return [grads.get(t) for t in targets]
    memo: dict[UOp, UOp] = {}
    graph_targets = [unrealize(t, memo, realized) for t in targets]
    graph_hooks = {unrealize(u, memo, realized): fn for u, fn in (hooks or {}).items()}
    grads = compute_gradient(unrealize(root, memo, realized), root_grad, set(graph_targets), hooks=graph_hooks)
    found = [grads.get(t) for t in graph_targets]
    back = {graph: value for value, graph in memo.items()}
    if not back or all(g is None for g in found):
        return found
    rebuilt = iter(UOp(Ops.TUPLE, tuple(g for g in found if g is not None)).substitute(back).src)
    return [None if g is None else next(rebuilt) for g in found]
