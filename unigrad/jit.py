"""TinyJit: run a step function once, capture the kernels of its second call, replay them afterwards.

Call 1 runs the function as written (kernels compile). Call 2 runs it again while runtime/jit.py records
every kernel, then plans the replay (input slots, intermediate memory shared across lifetimes, generator
counters). Calls 3+ copy nothing and build no graph: they check the inputs against the captured ones and run
the recorded programs on the new inputs' buffers, with the Variable values bound in the arguments.

Outputs of a replay are views of the same buffers every time (as tinygrad): read them before the next call.
Misuse that would make a replay compute something else raises JitError at the call: changed input shapes,
dtypes or devices, changed non-Tensor arguments, one buffer passed twice, non-Tensor outputs, reading values
(.numpy(), .item(), .tolist()) inside the function, and a function that runs no kernels.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from unigrad.api import random as rng
from unigrad.ir.ops import Ops
from unigrad.ir.uop import UOp
from unigrad.runtime import jit
from unigrad.runtime import realize as rt
from unigrad.runtime.jit import JitError
from unigrad.tensor import Tensor

ReturnType = TypeVar("ReturnType")

__all__ = ["JitError", "TinyJit"]


def _flatten(x: Any, tensors: list[Tensor], bound: list[UOp]) -> Any:
    """The structure of x with every Tensor replaced by its index in `tensors` (a marker) and bound Variables
    collected; used to check that non-Tensor arguments do not change between calls."""
    if isinstance(x, Tensor):
        tensors.append(x)
        return ("<tensor>", len(tensors) - 1)
    if isinstance(x, UOp):
        if x.op is Ops.PARAM and x.arg.name is not None and len(x.src) == 4:
            bound.append(x)
            return ("<var>", x.arg.name)
        return x
    if isinstance(x, (list, tuple)):
        return type(x)(_flatten(v, tensors, bound) for v in x)
    if isinstance(x, dict):
        return {k: _flatten(v, tensors, bound) for k, v in x.items()}
    return x


def _rebuild(x: Any, tensors: list[Tensor], bound: dict[str, UOp]) -> Any:
    """The arguments back from their structure: markers replaced by the tensors and bound Variables."""
    if isinstance(x, tuple) and len(x) == 2 and x[0] == "<tensor>":
        return tensors[x[1]]
    if isinstance(x, tuple) and len(x) == 2 and x[0] == "<var>":
        return bound[x[1]]
    if isinstance(x, (list, tuple)):
        return type(x)(_rebuild(v, tensors, bound) for v in x)
    if isinstance(x, dict):
        return {k: _rebuild(v, tensors, bound) for k, v in x.items()}
    return x


def _dim_key(d: Any) -> Any:
    """A shape entry as a replay must match it: ints exactly, symbolic dims by their unbound form."""
    if isinstance(d, UOp):
        bound = [v for v in d.toposort() if v.op is Ops.PARAM and v.arg.name is not None and len(v.src) == 4]
        return d.substitute({v: v.unbind()[0] for v in bound}) if bound else d
    return d


def _bound_vars(t: Tensor) -> dict[str, int]:
    out = {}
    for d in t.shape:
        if isinstance(d, UOp):
            for v in d.toposort():
                if v.op is Ops.PARAM and v.arg.name is not None and len(v.src) == 4:
                    out[v.arg.name] = v.src[3].arg.value
    return out


def _base_buffer(u: UOp) -> UOp | None:
    """The BUFFER a view of a whole buffer stands for (RESHAPEs of a BUFFER), else None."""
    while u.op is Ops.RESHAPE:
        u = u.src[0]
    return u if u.op is Ops.BUFFER else None


def _plain_input(t: Tensor) -> Tensor:
    """`t` realized as a whole row-major buffer: captured kernels read inputs by that layout only."""
    base = _base_buffer(t.uop)
    if base is not None and rt.buffers[base].size == t.numel():
        return t
    t.realize()
    base = _base_buffer(t.uop)
    if base is not None and rt.buffers[base].size == t.numel():
        return t
    return t.contiguous().realize()


class TinyJit(Generic[ReturnType]):
    """`@TinyJit` on a function of Tensors (and bound Variables): replays its kernels from the third call on."""

    def __init__(self, fxn: Callable[..., ReturnType]):
        self.fxn = fxn
        self.name = getattr(fxn, "__qualname__", getattr(fxn, "__name__", "function"))
        functools.update_wrapper(self, fxn)  # type: ignore[arg-type]
        self.reset()

    def reset(self) -> None:
        """Forget the capture: the next call runs normally again, the one after captures."""
        self.cnt = 0
        self.plan: jit.JitPlan | None = None
        self._signature: list[tuple[Any, Any, str]] = []
        self._structure: Any = None
        self._input_uops: list[UOp] = []
        self._outputs: Any = None
        self._output_uops: list[UOp] = []

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        """As a method decorator: bind the instance (one capture per TinyJit object, as tinygrad)."""
        return self if obj is None else functools.partial(self.__call__, obj)

    # ---------------------------------------------------------------- calls
    def __call__(self, *args: Any, **kwargs: Any) -> ReturnType:
        tensors: list[Tensor] = []
        bound: list[UOp] = []
        structure = _flatten((args, kwargs), tensors, bound)
        tensors = [_plain_input(t) for t in tensors]
        args, kwargs = _rebuild(structure, tensors, {v.arg.name: v for v in bound})
        bufs = [rt.buffer_of(t.uop) for t in tensors]
        self._check_distinct(tensors, bufs)
        var_vals = {v.arg.name: v.src[3].arg.value for v in bound}
        for t in tensors:
            var_vals.update(_bound_vars(t))
        if self.plan is not None:
            return self._replay(structure, tensors, bufs, var_vals)
        self.cnt += 1
        if self.cnt == 1:  # run as written; realize like a replay would (outputs and writes are done on return)
            with jit.running(self.name):
                out = self.fxn(*args, **kwargs)
                _realize_all(_output_tensors(self.name, out))
            return out
        return self._capture(structure, tensors, bufs, args, kwargs)

    def _capture(self, structure: Any, tensors: list[Tensor], bufs: list[Any], args: Any, kwargs: Any) -> Any:
        with jit.running(self.name), jit.capture() as cap:
            out = self.fxn(*args, **kwargs)
            outs = _output_tensors(self.name, out)
            _realize_all(outs)
        if not any(st.program is not None for st in cap.steps):
            raise JitError(
                f"TinyJit({self.name}): the function ran no kernels while it was captured, so there is nothing to "
                "replay; jit a function that computes something on its inputs"
            )
        out_bufs = {id(rt.buffer_of(t.uop)) for t in outs}
        self.plan = jit.plan(cap, bufs, out_bufs)
        self._signature = [self._sig(t) for t in tensors]
        self._structure = structure
        self._input_uops = [_base_buffer(t.uop) for t in tensors]  # type: ignore[misc]
        self._outputs = out
        self._output_uops = [t.uop for t in outs]
        return out

    def _replay(self, structure: Any, tensors: list[Tensor], bufs: list[Any], var_vals: dict[str, int]) -> Any:
        assert self.plan is not None
        self._check_inputs(structure, tensors)
        for buf, n in self.plan.rng:  # the generator counter is an input: the next offsets, every replay
            buf.copyin(rng.next_state(n))
        self.plan.run(bufs, var_vals)
        rt.stats.kernels += self.plan.n_kernels
        new_inputs = {old: _base_buffer(t.uop) for old, t in zip(self._input_uops, tensors)}
        outs = []
        for u in self._output_uops:
            base = _base_buffer(u)
            if base is not None and base in new_inputs:  # the function returned (a view of) an input
                u = u.substitute({base: new_inputs[base]})  # type: ignore[dict-item]
            outs.append(Tensor(u))
        return _replace_outputs(self._outputs, iter(outs))

    # ---------------------------------------------------------------- checks
    @staticmethod
    def _sig(t: Tensor) -> tuple[Any, Any, str]:
        return tuple(_dim_key(d) for d in t.shape), t.dtype, t.device

    def _check_distinct(self, tensors: list[Tensor], bufs: list[Any]) -> None:
        seen: dict[int, int] = {}
        for i, b in enumerate(bufs):
            if id(b) in seen:
                raise JitError(
                    f"TinyJit({self.name}): inputs {seen[id(b)]} and {i} are the same buffer; a replay would alias "
                    "them. Pass distinct tensors (e.g. x and x.clone())"
                )
            seen[id(b)] = i

    def _check_inputs(self, structure: Any, tensors: list[Tensor]) -> None:
        if len(tensors) != len(self._signature):
            raise JitError(
                f"TinyJit({self.name}): captured with {len(self._signature)} input tensors, called with "
                f"{len(tensors)}; call jit.reset() to capture again"
            )
        for i, (t, want) in enumerate(zip(tensors, self._signature)):
            got = self._sig(t)
            if got != want:
                what = "shape" if got[0] != want[0] else "dtype" if got[1] != want[1] else "device"
                idx = {"shape": 0, "dtype": 1, "device": 2}[what]
                raise JitError(
                    f"TinyJit({self.name}): input tensor {i} has {what} {got[idx]}, but the kernels were captured "
                    f"for {want[idx]}; call jit.reset() to capture again (or use a separate TinyJit per {what})"
                )
        if not _same(structure, self._structure):
            raise JitError(
                f"TinyJit({self.name}): the non-Tensor arguments changed since the capture ({self._structure!r} -> "
                f"{structure!r}); captured kernels bake them in. Pass changing values as Tensors or bound Variables"
            )


def _realize_all(outs: list[Tensor]) -> None:
    """Realize the outputs and every assign still pending, in one schedule."""
    pending = Tensor.pending_assigns()
    if outs or pending:
        Tensor.realize(*outs, *pending)


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - objects whose == does not give a bool (numpy arrays): compare identity
        return a is b


def _output_tensors(name: str, out: Any) -> list[Tensor]:
    """The Tensors a jitted function returned: a Tensor, None, or (nested) lists/tuples/dicts of Tensors."""
    if out is None:
        return []
    if isinstance(out, Tensor):
        return [out]
    if isinstance(out, (list, tuple)):
        return [t for v in out for t in _output_tensors(name, v)]
    if isinstance(out, dict):
        return [t for v in out.values() for t in _output_tensors(name, v)]
    raise JitError(
        f"TinyJit({name}): the function returned a {type(out).__name__}; a replay could only return its value from "
        "the capture. Return Tensors (or lists/tuples/dicts of them) and read values outside the function"
    )


def _replace_outputs(out: Any, new: Any) -> Any:
    if out is None:
        return None
    if isinstance(out, Tensor):
        return next(new)
    if isinstance(out, (list, tuple)):
        return type(out)(_replace_outputs(v, new) for v in out)
    if isinstance(out, dict):
        return {k: _replace_outputs(v, new) for k, v in out.items()}
    return out
