"""@function: trace a Python function on Tensors into one FUNCTION node (spec: The @function Decorator).

A call of a decorated function (1) finds every Tensor in its arguments (nested lists/tuples/dicts too) and
dedupes them by identity, (2) runs the function lazily on placeholders, (3) so each input is a PARAM(k) in the
body, (4) wraps the results in TUPLE and builds FUNCTION(TUPLE(body), a_0, a_1, ...), (5) returns GETTUPLE(i)
per result, in the structure the function returned. The traced body is kept per (input shapes/dtypes/devices,
non-Tensor arguments): later calls with other tensors of the same kind reuse it without running the Python.

Scheduling resolves a FUNCTION by substituting PARAM(k) -> a_k (inlined: it fuses with its callers), or, with
`@function(precompile=True)`, lowers it into its own kernels (an opaque CALL: the arguments are materialized and
the body is scheduled alone, once per body). Gradients flow through either as through the inlined code: a body
that reads only its arguments is differentiated once per trace (gradient.py's VJP body: a call's backward is one
call of it), another is inlined for the backward. A function can have its own rule instead:
`function(fxn, backward=bwd)` makes autodiff call `bwd(grad, *args, **kwargs)` (Tensors in, one gradient per Tensor
argument out) instead of differentiating the body (convolutions use it: their gradients are convolutions, not the
scatter that differentiating the sliding windows would give).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from unigrad.helpers import Slot, record, tree_fill, tree_flatten
from unigrad.ir.args import FunctionArg, ParamArg
from unigrad.ir.ops import Ops
from unigrad.ir.uop import UOp
from unigrad.runtime import realize as rt
from unigrad.tensor import Tensor, graph_tensor

__all__ = ["function"]

_ONE_TENSOR = ((Slot(0),), {})  # the argument structure of a call of one Tensor (call1's)


def _plain_key(args: tuple[Any, ...]) -> tuple[tuple[Any, ...], list[Tensor]] | None:
    """The trace key of positional arguments that are all Tensors or plain scalars (an optimizer's per-parameter
    calls), with the Tensors deduped in order as tree_flatten gives them: each Tensor's first place, shape, dtype
    and device (a repeat: its place), each scalar's type and value (a float's repr: -0.0 is not 0.0). None for any
    other argument (the general key: the flattened structure's repr). The keys never meet: this one starts "args"."""
    parts: list[Any] = ["args"]
    tensors: list[Tensor] = []
    places: dict[int, int] = {}
    for a in args:
        c = a.__class__
        if c is Tensor:
            if (i := places.get(id(a))) is None:
                i = places[id(a)] = len(tensors)
                tensors.append(a)
                u = a.uop
                parts.append((i, u.shape, u.dtype, a.device))
            else:
                parts.append(i)
        elif c is float:
            parts.append(("float", repr(a)))
        elif c is int or c is bool or c is str or a is None:
            parts.append((c, a))
        else:
            return None
    return tuple(parts), tensors


@record(frozen=True)
class Traced:
    """A traced body: TUPLE of the results over PARAM(k) inputs, the structure of the results (Tensors replaced
    by their index), and which results require grad through tensors the body closes over."""

    body: UOp
    structure: Any
    closure_grad: tuple[bool, ...]
    devices: tuple[str, ...]
    rule: Callable[[tuple[UOp | None, ...], tuple[UOp, ...]], tuple[UOp | None, ...]] | None = None


def _is_tensor(x: Any) -> bool:
    return isinstance(x, Tensor)


def _no_value_output(name: str) -> Callable[[Any], Any]:
    def refuse(v: Any) -> Any:
        raise TypeError(
            f"@function {name}: it returned a {type(v).__name__}; a traced function returns Tensors (or lists/"
            "tuples/dicts of them): other values would be frozen at their traced value"
        )

    return refuse


class function:  # noqa: N801 - the spec's and tinygrad's spelling: @function
    """`@function` or `@function(precompile=True)` on a function of Tensors returning a Tensor or a (nested)
    list/tuple/dict of Tensors."""

    def __init__(
        self,
        fxn: Callable[..., Any] | None = None,
        *,
        precompile: bool = False,
        backward: Callable[..., Any] | None = None,
    ):
        self.precompile = precompile
        self.backward = backward
        self.traces: dict[Any, Traced] = {}
        # the FUNCTION nodes' args, by (name, precompile, rule, fixed)
        self._args: dict[tuple[Any, ...], FunctionArg] = {}
        self.fxn: Callable[..., Any] | None = None
        if fxn is not None:
            self._wrap(fxn)

    def _wrap(self, fxn: Callable[..., Any]) -> None:
        self.fxn = fxn
        self.name = getattr(fxn, "__qualname__", getattr(fxn, "__name__", "function"))
        functools.update_wrapper(self, fxn)  # type: ignore[arg-type]

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        return self if obj is None else functools.partial(self.__call__, obj)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.fxn is None:  # @function(precompile=True): the decorator call receives the function
            if len(args) != 1 or kwargs or not callable(args[0]):
                raise TypeError("function(...): decorate a function, e.g. @function(precompile=True)")
            self._wrap(args[0])
            return self
        # Tensors and plain scalars: keyed without walking a structure, flattened only to trace
        structure, plain = None, None if kwargs else _plain_key(args)
        if plain is not None:
            key, tensors = plain
        else:
            structure, tensors = tree_flatten((args, kwargs), _is_tensor, dedupe=True)
            key = self._key(structure, tensors)
        traced = self.traces.get(key) if key is not None else None
        if traced is None:
            if structure is None:
                structure = tree_flatten((args, kwargs), _is_tensor, dedupe=True)[0]
            traced = self._trace(structure, tensors)
            if key is not None:
                self.traces[key] = traced
        fn = self._node(traced, tuple(t.uop for t in tensors))
        outs = []
        for i, device in enumerate(traced.devices):
            out = Tensor(UOp(Ops.GETTUPLE, (fn,), i), device=device)
            if traced.closure_grad[i] or any(t._requires_grad for t in tensors):  # tracked now (not undecided)
                out._join_autograd()
            outs.append(out)
        return tree_fill(traced.structure, outs)

    def call1(self, x: Tensor) -> Tensor:
        """fn(x) for a function of one Tensor returning one Tensor, without __call__'s argument walk (a composite
        elementwise op, tanh or sigmoid: a call per use). Traced once per (shape, dtype, device) like any call."""
        key = (x.uop.shape, x.dtype, x.device)
        if (traced := self.traces.get(key)) is None:
            traced = self.traces[key] = self._trace(_ONE_TENSOR, [x])
            if len(traced.devices) != 1 or traced.structure != Slot(0):
                raise TypeError(f"@function {self.name}: call1 takes a function of one Tensor returning one Tensor")
        out = x._new(UOp(Ops.GETTUPLE, (self._node(traced, (x.uop,), fixed=True),), 0), x)
        if traced.closure_grad[0] and not x._requires_grad:  # tracked through a tensor the body closes over
            out._join_autograd()
        return out

    def _node(self, traced: Traced, args: tuple[UOp, ...], fixed: bool = False) -> UOp:
        """The FUNCTION node of a call of `traced` on `args` (a precompiled one registered for the scheduler);
        fixed: traced from the Tensors' kinds alone (FunctionArg.fixed)."""
        key = (self.name, self.precompile, traced.rule, fixed)
        if (arg := self._args.get(key)) is None:  # one FunctionArg per kind of call: its hash is computed once
            arg = self._args[key] = FunctionArg(self.name, self.precompile, traced.rule, fixed)
        fn = UOp(Ops.FUNCTION, (traced.body, *args), arg)
        if self.precompile:
            rt.precompiled.add(fn)
        return fn

    def _key(self, structure: Any, tensors: list[Tensor]) -> Any:
        key = (repr(structure), tuple((t.shape, t.dtype, t.device) for t in tensors))
        try:
            hash(key)
        except TypeError:
            return None
        return key

    def _trace(self, structure: Any, tensors: list[Tensor]) -> Traced:
        assert self.fxn is not None
        params = [
            Tensor(UOp(Ops.PARAM, (UOp.shape_src(t.shape),), ParamArg(k, t.dtype, t.device)), device=t.device)
            for k, t in enumerate(tensors)
        ]
        f_args, f_kwargs = tree_fill(structure, params)
        result = self.fxn(*f_args, **f_kwargs)
        out_structure, outs = tree_flatten(result, _is_tensor, _no_value_output(self.name), dedupe=True)
        if not outs:
            raise TypeError(f"@function {self.name}: the function returned no Tensor; return the Tensors it computes")
        body = UOp(Ops.TUPLE, tuple(o.uop for o in outs))
        devices = tuple(o.device for o in outs)
        rule = None if self.backward is None else self._rule(structure, [t.device for t in tensors], devices)
        return Traced(body, out_structure, tuple(bool(o._requires_grad) for o in outs), devices, rule)

    def _rule(self, structure: Any, in_devices: list[str], out_devices: tuple[str, ...]) -> Callable[..., Any]:
        """The UOp-level gradient rule of one trace: `backward(grad, *args, **kwargs)` on Tensors (grad: the output's
        gradient, or a list of them for several outputs; None where an output gets none) returns one gradient per
        Tensor argument, in the order the Tensors appear in the arguments (None for no gradient)."""
        backward = self.backward
        assert backward is not None
        name = self.name

        one = structure == _ONE_TENSOR  # call1's traces (tanh, sigmoid): the argument is the Tensor, no tree to fill

        def rule(out_grads: tuple[UOp | None, ...], args: tuple[UOp, ...]) -> tuple[UOp | None, ...]:
            if one:
                f_args, f_kwargs = (graph_tensor(args[0], in_devices[0]),), {}
            else:
                f_args, f_kwargs = tree_fill(structure, [graph_tensor(a, d) for a, d in zip(args, in_devices)])
            gs = [None if g is None else graph_tensor(g, d) for g, d in zip(out_grads, out_devices)]
            res = backward(gs[0] if len(gs) == 1 else gs, *f_args, **f_kwargs)
            res = res if isinstance(res, (tuple, list)) else (res,)
            if len(res) != len(args):
                raise TypeError(f"@function {name}: backward returned {len(res)} gradients for {len(args)} Tensors")
            for g, a in zip(res, args):
                if g is not None and g.shape != a.shape:
                    raise ValueError(f"@function {name}: backward gave a gradient of shape {g.shape} for {a.shape}")
            return tuple(None if g is None else g.uop for g in res)

        return rule


class traced:  # noqa: N801 - used like @function
    """A library composite (a layer's step, a normalization, an attention) as a traced @function call where its
    arguments allow, else op by op: every Tensor argument on one device (not split across several) and of static
    shape (a symbolic shape's Variables would be traced into the body). A call is then
    one node, and its backward one call of the body's gradient (gradient._vjp_of), where its ops made a tensor each
    (~3-8 us apiece) and the backward walked them again for every call."""

    def __init__(self, fxn: Callable[..., Any]):
        self.fxn = fxn
        self.call = function(fxn)
        functools.update_wrapper(self, fxn)  # type: ignore[arg-type]

    def __call__(self, *args: Any) -> Any:
        for a in args:
            if a.__class__ is Tensor and (
                not isinstance(a.device, str) or not all(s.__class__ is int for s in a.uop.shape)
            ):
                return self.fxn(*args)
        return self.call(*args)
