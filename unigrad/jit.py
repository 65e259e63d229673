"""TinyJit: run a step function once, capture the kernels of its second call, replay them afterwards.

Call 1 runs the function as written (kernels compile). Call 2 runs it again while runtime/jit.py records
every kernel, then plans the replay (input slots, intermediate memory shared across lifetimes, generator
counters). Calls 3+ copy nothing and build no graph: they check the inputs against the captured ones and run
the recorded programs on the new inputs' buffers, with the Variable values bound in the arguments.

Each replay writes its outputs into new buffers (tinygrad reuses them): a returned loss stays valid after the next
call. An output that is state (read before it is written, or on several devices) keeps its buffer.
Multi-device inputs (tensors on a tuple of devices) are captured too: each device's part is an input slot.

Misuse that would make a replay compute something else raises JitError at the call: changed input shapes,
dtypes, devices or split axis, changed non-Tensor arguments, one buffer passed twice, non-Tensor outputs, reading values
(.numpy(), .item(), .tolist()) inside the function, and a function that runs no kernels.
"""

from __future__ import annotations

import functools
import sys
import time
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from unigrad.api import random as rng
from unigrad.helpers import GlobalCounters, tree_fill, tree_flatten
from unigrad.ir.ops import Ops
from unigrad.ir.sint import bound_vars, unbind
from unigrad.ir.uop import UOp
from unigrad.pipeline.rangeify import view_base
from unigrad.runtime import jit
from unigrad.runtime import multi as rt_multi
from unigrad.runtime import realize as rt
from unigrad.runtime.jit import JitError
from unigrad.tensor import Tensor, forget_backward_roots

ReturnType = TypeVar("ReturnType")
OUTPUT_RING = 4  # buffers per renewed output kept for reuse (a loop holding the last result frees the one before)

__all__ = ["JitError", "TinyJit"]


def _is_input(x: Any) -> bool:
    """A leaf of a jitted function's arguments: a Tensor or a bound Variable (its value changes per call)."""
    return isinstance(x, Tensor) or (isinstance(x, UOp) and x.op is Ops.PARAM and bound_vars(x) == [x])


def _leaf_kind(x: Any) -> str:
    return "tensor" if isinstance(x, Tensor) else f"Variable {x.arg.name}"


def _no_value_output(name: str) -> Callable[[Any], Any]:
    def refuse(v: Any) -> Any:
        if v is None:
            return None
        raise JitError(
            f"TinyJit({name}): the function returned a {type(v).__name__}; a replay could only return its value "
            "from the capture. Return Tensors (or lists/tuples/dicts of them) and read values outside the function"
        )

    return refuse


def _plain_base(u: UOp, numel: Any) -> UOp | None:
    """The BUFFER a tensor of `numel` elements holding a whole buffer in row-major order stands for, else None:
    RESHAPEs of a one-device BUFFER, or the global view of a tuple BUFFER (a multi-device tensor,
    runtime/multi.py) whose parts are such views."""
    if isinstance(u.device, tuple):
        base = view_base(u)
        if base.op is not Ops.BUFFER or u is not rt_multi.global_view(base, u.shape, u.axis):
            return None
        return base if all(_plain_base(p, p.shape[0]) is not None for p in rt_multi.parts[base]) else None
    while u.op is Ops.RESHAPE:
        u = u.src[0]
    return u if u.op is Ops.BUFFER and rt.buffers[u].size == numel else None


def _plain_input(t: Tensor) -> Tensor:
    """`t` realized as a whole row-major buffer (on several devices: whole row-major parts): captured kernels read
    inputs by that layout only."""
    if _plain_base(t.uop, t.numel()) is not None:
        return t
    t.realize()
    if _plain_base(t.uop, t.numel()) is not None:
        return t
    return t.contiguous().realize()


class TinyJit(Generic[ReturnType]):
    """`@TinyJit` on a function of Tensors (and bound Variables): replays its kernels from the third call on.

    prune=True (tinygrad's) leaves out of the replays the kernels that do not depend on the inputs (preprocessing
    of constants, weights): the capture computed them, replays reuse their results (so a state update that reads
    no input is not repeated either). `optimize` is accepted (kernels are optimized anyway). A TinyJit that has
    captured pickles (pickle.dumps/loads) with its kernels and buffers, weights and state included, but not its
    function: the loaded one replays on new inputs of the captured shapes."""

    def __init__(self, fxn: Callable[..., ReturnType] | None, prune: bool = False, optimize: bool = False):
        self.fxn = fxn
        self.prune = prune
        self.name = getattr(fxn, "__qualname__", getattr(fxn, "__name__", "function"))
        if fxn is not None:
            functools.update_wrapper(self, fxn)  # type: ignore[arg-type]
        self.reset()

    def reset(self) -> None:
        """Forget the capture: the next call runs normally again, the one after captures."""
        self.cnt = 0
        self.plan: jit.JitPlan | None = None
        self._signature: list[tuple[Any, ...]] = []
        self._structure: Any = None
        self._input_uops: list[UOp] = []
        self._out_structure: Any = None
        self._outputs: list[tuple[UOp, str | tuple[str, ...]]] = []  # (uop, device) of each output
        self._fresh_uops: list[UOp] = []  # the captured BUFFERs of the outputs a replay writes into new buffers
        self._rings: list[list[UOp]] = []  # per such output, the BUFFERs replays handed out lately

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        """As a method decorator: bind the instance (one capture per TinyJit object, as tinygrad)."""
        return self if obj is None else functools.partial(self.__call__, obj)

    # ---------------------------------------------------------------- calls
    def __call__(self, *args: Any, **kwargs: Any) -> ReturnType:
        structure, leaves = tree_flatten((args, kwargs), _is_input)
        leaves = [_plain_input(x) if isinstance(x, Tensor) else x for x in leaves]
        args, kwargs = tree_fill(structure, leaves)
        structure = (structure, tuple(_leaf_kind(x) for x in leaves))  # what must not change between calls
        tensors = [x for x in leaves if isinstance(x, Tensor)]
        bufs = [b for t in tensors for b in _buffers(t)]  # the replay's input slots, a multi-device tensor's parts
        self._check_distinct(tensors, bufs)
        bound = [x for x in leaves if isinstance(x, UOp)] + [v for t in tensors for d in t.shape for v in bound_vars(d)]
        var_vals = {v.arg.name: v.src[3].arg.value for v in bound}
        if self.plan is not None:
            return self._replay(structure, tensors, bufs, var_vals)
        if self.fxn is None:
            raise JitError(
                f"TinyJit({self.name}): no function to run (a pickled TinyJit brings its capture, not its function); "
                "call it only after it has captured"
            )
        self.cnt += 1
        forget_backward_roots()
        if self.cnt == 1:  # run as written; realize like a replay would (outputs and writes are done on return)
            with jit.running(self.name):
                out = self.fxn(*args, **kwargs)
                _realize_all(tree_flatten(out, _is_tensor, _no_value_output(self.name))[1])
            return out
        return self._capture(structure, tensors, bufs, args, kwargs)

    def _capture(self, structure: Any, tensors: list[Tensor], bufs: list[Any], args: Any, kwargs: Any) -> Any:
        with jit.running(self.name), jit.capture() as cap:
            out = self.fxn(*args, **kwargs)
            self._out_structure, outs = tree_flatten(out, _is_tensor, _no_value_output(self.name))
            _realize_all(outs)
        if not any(st.program is not None for st in cap.steps):
            raise JitError(
                f"TinyJit({self.name}): the function ran no kernels while it was captured, so there is nothing to "
                "replay; jit a function that computes something on its inputs"
            )
        out_bufs = {id(b) for t in outs for b in _buffers(t)}
        # a single-device output's BUFFER, by its Buffer: a replay gives it a new one (multi-device ones are kept)
        bases = {
            id(rt.buffer_of(b)): b
            for t in outs
            if isinstance(t.device, str) and (b := view_base(t.uop)).op is Ops.BUFFER
        }
        self.plan = jit.plan(cap, bufs, out_bufs, set(bases), self.prune)
        self._fresh_uops = [bases[id(b)] for b in self.plan.fresh]
        self._rings = [[] for _ in self.plan.fresh]
        self._signature = [self._sig(t) for t in tensors]
        self._structure = structure
        self._input_uops = [view_base(t.uop) for t in tensors]
        self._outputs = [(t.uop, t.device) for t in outs]
        return out

    def _replay(self, structure: Any, tensors: list[Tensor], bufs: list[Any], var_vals: dict[str, int]) -> Any:
        assert self.plan is not None
        self._check_inputs(structure, tensors)
        for buf, n, state in self.plan.rng:  # the generator counter is an input: the next offsets, every replay
            buf.copyin(rng.next_state(n, state))
        fresh = self._output_buffers()  # this call's outputs: buffers no earlier output still holds
        args = bufs + [rt.buffers[u].ensure_allocated() for u in fresh]
        t0 = time.perf_counter()
        self.plan.run(args, var_vals)
        GlobalCounters.launched(self.plan, time.perf_counter() - t0, self.plan.n_kernels)
        rt.stats.kernels += self.plan.n_kernels
        new_bases = {old: view_base(t.uop) for old, t in zip(self._input_uops, tensors)}
        new_bases.update(zip(self._fresh_uops, fresh))
        outs = []
        for u, device in self._outputs:
            base = view_base(u)
            if (new := new_bases.get(base)) is not None:  # (a view of) an input, or an output in its new buffer
                # the usual output, RESHAPE(BUFFER), rebuilt directly
                u = (
                    new
                    if u is base
                    else u.replace(src=(new, *u.src[1:]))
                    if u.src[0] is base
                    else u.substitute({base: new})
                )
            outs.append(_tensor_of(u, device))
        return tree_fill(self._out_structure, outs)

    def _output_buffers(self) -> list[UOp]:
        """A BUFFER for each output a replay renews: one handed out before that nothing holds any more (only its
        ring refers to it: its tensors and graphs are gone), else a new one (the ring keeps the latest few)."""
        assert self.plan is not None
        out = []
        for ring, b in zip(self._rings, self.plan.fresh):
            for i in range(len(ring)):
                if sys.getrefcount(ring[i]) == 2:  # the ring's reference and the call's argument: free
                    out.append(ring[i])
                    break
            else:
                u = rt.new_buffer(b.size, b.dtype, b.device)
                if len(ring) >= OUTPUT_RING:
                    ring.pop(0)  # still held by its reader: no longer ours to reuse
                ring.append(u)
                out.append(u)
        return out

    # ---------------------------------------------------------------- pickling
    def __getstate__(self) -> dict[str, Any]:
        """The capture (its plan, input checks and outputs) and the buffers the outputs keep; not the function."""
        if self.plan is None:
            raise TypeError(f"pickle: TinyJit({self.name}) has not captured yet (call it twice first)")
        if any(isinstance(d, tuple) for _, d in self._outputs):
            raise TypeError(
                f"pickle: TinyJit({self.name}) returns multi-device tensors; pickling them is not supported"
            )
        renewed = set(self._input_uops) | set(self._fresh_uops)
        held = {b: rt.buffers[b] for u, _ in self._outputs if (b := view_base(u)).op is Ops.BUFFER and b not in renewed}
        keep = ("name", "prune", "cnt", "plan", "_signature", "_structure", "_input_uops", "_out_structure")
        return {**{k: self.__dict__[k] for k in keep}, "_outputs": self._outputs, "_fresh_uops": self._fresh_uops,
                "held": held}  # fmt: skip

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Loaded: every BUFFER node of the capture gets a fresh slot (the pickled ones may be another process's, or
        this one's own live buffers); the buffers the outputs keep are registered under theirs."""
        held: dict[UOp, Any] = state.pop("held")
        self.__dict__.update(state)
        self.fxn = None
        bases = {view_base(u) for u, _ in self._outputs} | set(self._input_uops) | set(self._fresh_uops)
        new: dict[UOp, UOp] = {}
        for b in (b for b in bases if b.op is Ops.BUFFER):
            buf = held[b] if b in held else rt.Buffer(b.arg.device, b.shape[0], b.arg.dtype)  # (inputs: a key only)
            new[b] = rt.adopt_buffer(buf)
        self._input_uops = [new.get(u, u) for u in self._input_uops]
        self._fresh_uops = [new.get(u, u) for u in self._fresh_uops]
        self._outputs = [(u.substitute(new), d) for u, d in self._outputs]
        self._rings = [[] for _ in self._fresh_uops]

    # ---------------------------------------------------------------- checks
    @staticmethod
    def _sig(t: Tensor) -> tuple[Any, ...]:
        # symbolic dims match for every value; a multi-device tensor's split axis (None: a whole copy on each)
        return tuple(unbind(d) for d in t.shape), t.dtype, t.device, t.uop.axis

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
                idx = next(i for i in range(4) if got[i] != want[i])
                what = ("shape", "dtype", "device", "split axis across its devices")[idx]
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


def _tensor_of(u: UOp, device: str | tuple[str, ...]) -> Tensor:
    """A tensor of a replay's output: the UOp and (canonical) device as they are, without Tensor()'s parsing."""
    t = object.__new__(Tensor)
    t.uop, t.device, t._requires_grad, t.grad = u, device, None, None
    return t


def _buffers(t: Tensor) -> list[Any]:
    """The device buffers a realized tensor is a view of: one, or one per device of a multi-device tensor."""
    base = view_base(t.uop)
    if isinstance(t.device, tuple):
        return [rt.buffer_of(p) for p in rt_multi.parts[base]]
    return [rt.buffer_of(base)]


def _is_tensor(x: Any) -> bool:
    return isinstance(x, Tensor)
