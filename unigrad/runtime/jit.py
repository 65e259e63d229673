"""JIT capture and replay: the kernels a step runs, recorded once and run again on new input buffers.

In: while a `Capture` is active, realize.run_call reports every kernel it runs (program + Buffers + the
Variable values it got), new_buffer reports every Buffer it creates, and the random-number generator reports
the buffers that hold its counter. Out: a `JitPlan`, the steps in order with their programs and buffers:
- the caller's input buffers are slots, filled with the new inputs' buffers at each replay;
- intermediates (buffers created during the capture that a kernel writes before any reads them and that are
  not an output) share memory across non-overlapping lifetimes: planned once, reused by every replay;
- every other buffer (weights, optimizer state, constants copied in, outputs) is used as it is;
- each generator counter buffer gets the next counter values before a replay, so random draws change.
Replaying runs only the programs: no graph building, scheduling or compiling.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import field
from typing import Any

from unigrad import config
from unigrad.helpers import record
from unigrad.pipeline.memplan import first_written, plan_memory
from unigrad.runtime import Buffer


class JitError(RuntimeError):
    """A jitted function used in a way its replays could not honour."""


@record
class CapturedStep:
    """One kernel run (program is the compiled kernel) or one copy between devices (program is None).
    bufs[:outputs] are the buffers written; the rest are read."""

    name: str
    program: Callable[[list[Any], dict[str, int]], None] | None
    bufs: list[Buffer]
    kernel: Any = None  # the CompiledKernel (its ops and bytes for GlobalCounters)
    outputs: int = 1


@record
class Capture:
    """What a capture saw: the steps in order, the buffers created meanwhile, the generator's counters."""

    steps: list[CapturedStep] = field(default_factory=list)
    created: dict[int, Buffer] = field(default_factory=dict)
    rng: list[tuple[Buffer, int, Any]] = field(default_factory=list)  # (counter buffer, values drawn, draw state)
    var_vals: dict[str, int] = field(default_factory=dict)


_active: Capture | None = None
_inside: list[str] = []  # names of the jitted functions running now (first call and capture)


def capturing() -> Capture | None:
    return _active


def inside_jit() -> str | None:
    """The name of the jitted function running now (on its first call or its capture), else None."""
    return _inside[-1] if _inside else None


@contextlib.contextmanager
def running(name: str) -> Iterator[None]:
    _inside.append(name)
    try:
        yield
    finally:
        _inside.pop()


@contextlib.contextmanager
def capture() -> Iterator[Capture]:
    global _active
    if _active is not None:
        raise JitError("TinyJit: a jitted function was called while another one is being captured (nesting)")
    _active = cap = Capture()
    try:
        yield cap
    finally:
        _active = None


def note_step(
    name: str, program: Any, bufs: list[Buffer], var_vals: dict[str, int], kernel: Any = None, outputs: int = 1
) -> None:
    cap = _active
    if cap is not None:
        cap.steps.append(CapturedStep(name, program, list(bufs), kernel, outputs))
        cap.var_vals.update(var_vals)


def note_buffer(buf: Buffer) -> None:
    if _active is not None:
        _active.created[id(buf)] = buf


def note_rng(buf: Buffer, n: int, state: Any = None) -> None:
    if _active is not None:
        _active.rng.append((buf, n, state))


@record
class JitPlan:
    """Replayable steps: `args[i]` of a step is a fixed Buffer or None (slot `slots[i]` of the inputs)."""

    steps: list[tuple[Callable[..., None] | None, list[Buffer | None], list[tuple[int, int]]]]
    var_vals: dict[str, int]
    rng: list[tuple[Buffer, int, Any]]  # (counter buffer, values drawn, the generator's draw state)
    n_kernels: int
    intermediate_bytes: int  # memory of the planned intermediates (after reuse)
    captured_bytes: int  # what they took during the capture (no reuse)
    fresh: tuple[Buffer, ...] = ()  # outputs each replay writes into new buffers: the slots after the inputs
    kernels: tuple[Any, ...] = ()  # per step, its CompiledKernel (None for a copy): GlobalCounters, pickling

    def __post_init__(self) -> None:
        self.calls = [_bind(prog, bufs, holes) for prog, bufs, holes in self.steps]
        self.graph = _graph_of(self.steps)  # the device's runner of all steps at once (a CUDA graph), or None

    @property
    def flops(self) -> int:
        return sum(k.flops for k in self.kernels if k is not None)

    @property
    def mem(self) -> int:
        return sum(k.mem for k in self.kernels if k is not None)

    def __reduce__(self) -> tuple:
        """Pickled with its kernels (as lowered source: loading compiles them again, from the compiler's cache where
        it can) and its buffers (with their contents: weights, state)."""
        if len(self.kernels) != len(self.steps):
            raise TypeError("pickle: this JIT plan does not know its kernels")
        steps = [(bufs, holes) for _, bufs, holes in self.steps]
        fields = (self.var_vals, self.rng, self.n_kernels, self.intermediate_bytes, self.captured_bytes, self.fresh)
        return _load_plan, (steps, self.kernels, *fields)

    def run(self, inputs: list[Buffer], var_vals: dict[str, int]) -> None:
        vals = self.var_vals if not var_vals else {**self.var_vals, **var_vals}
        if self.graph is not None:
            self.graph(inputs, vals)
            return
        for call in self.calls:
            call(inputs, vals)


def _graph_of(steps: list[tuple[Callable[..., None] | None, list[Buffer | None], list[tuple[int, int]]]]) -> Any:
    """A runner of every step at once that the steps' device offers (`program.graph(steps)`: CUDA graphs), or None:
    JIT_GRAPH=0, DEBUG=2 (kernels timed one by one), no steps, or a device without one."""
    if not steps or not config.JIT_GRAPH.value or config.DEBUG.value >= 2:
        return None
    make = getattr(steps[0][0], "graph", None)
    return make(steps) if make is not None else None


def _bind(
    prog: Callable[..., None] | None, bufs: list[Buffer | None], holes: list[tuple[int, int]]
) -> Callable[[list[Buffer], dict[str, int]], None]:
    """One replay step as call(inputs, var_vals): the program's own prepared call where it makes one (the CPU's binds
    the buffer addresses once; a prepare may return None), else the buffers completed from the inputs and the program
    called on them."""
    if prog is not None and (prepare := getattr(prog, "prepare", None)) is not None:
        if (prepared := prepare(bufs, holes)) is not None:
            return prepared  # type: ignore[no-any-return]

    def call(inputs: list[Buffer], var_vals: dict[str, int]) -> None:
        full = list(bufs)
        for pos, slot in holes:
            full[pos] = inputs[slot]
        if prog is None:  # a copy between devices, through the host
            full[0].copy_from(full[1])  # type: ignore[union-attr, arg-type]
        else:
            prog(full, var_vals)

    return call


def _load_plan(steps: list[tuple[list[Buffer | None], Any]], kernels: tuple[Any, ...], *fields: Any) -> JitPlan:
    full = [(None if k is None else k.program, bufs, holes) for k, (bufs, holes) in zip(kernels, steps)]
    return JitPlan(full, *fields, kernels=kernels)


def input_independent(cap: Capture, inputs: list[Buffer]) -> set[int]:
    """The steps (by index) whose results do not depend on a call's inputs: they read no input, no buffer a step
    depending on them wrote, no generator counter and no Variable (TinyJit(prune=True) runs them only once)."""
    depends = {id(b) for b in inputs} | {id(buf) for buf, _, _ in cap.rng}
    pruned = set()
    for i, st in enumerate(cap.steps):
        uses_vars = st.kernel is not None and bool(st.kernel.lowered.sig.variables)
        if uses_vars or any(id(b) in depends for b in st.bufs[st.outputs :]):
            depends.update(id(b) for b in st.bufs[: st.outputs])
        else:
            pruned.add(i)
    return pruned


def plan(
    cap: Capture, inputs: list[Buffer], outputs: set[int], renewable: set[int] = frozenset(), prune: bool = False
) -> JitPlan:
    """The replay plan of a capture. `inputs` are the caller's buffers (slots by position); `outputs` the ids
    of buffers the function returns. Of those, the `renewable` ones the capture made and wrote before any read
    become slots after the inputs (JitPlan.fresh): a replay passes new buffers there, so an output of an earlier
    call is not overwritten. Other outputs (state read before it is written) keep their buffers. `prune` leaves
    out the steps that do not depend on the inputs (input_independent): their results, computed by the capture,
    keep their buffers."""
    if prune:
        pruned = input_independent(cap, inputs)
        kept = {id(b) for i in pruned for b in cap.steps[i].bufs[: cap.steps[i].outputs]}  # results stay put
        cap = Capture([st for i, st in enumerate(cap.steps) if i not in pruned], cap.created, cap.rng, cap.var_vals)
        outputs, renewable = outputs | kept, renewable - kept
    slot_of = {id(b): i for i, b in enumerate(inputs)}
    ids = [[id(b) for b in st.bufs] for st in cap.steps]
    written_first = first_written(ids, [st.outputs for st in cap.steps])
    fresh = [cap.created[k] for k in written_first if k in cap.created and k in renewable and k not in slot_of]
    slot_of.update({id(b): len(inputs) + j for j, b in enumerate(fresh)})
    temps = [k for k in written_first if k in cap.created and k not in outputs and k not in slot_of]
    # intermediates share memory across non-overlapping lifetimes (pipeline/memplan.py): planned once, reused by
    # every replay
    memory = plan_memory(ids, {k: ((cap.created[k].device, cap.created[k].dtype), cap.created[k].size) for k in temps})
    pool = [Buffer(device, size, dtype) for (device, dtype), size in memory.shared]  # type: ignore[misc]
    replacement = {k: pool[s] for k, s in memory.slot_of.items()}
    steps = []
    for st in cap.steps:
        bufs: list[Buffer | None] = []
        holes: list[tuple[int, int]] = []
        for pos, b in enumerate(st.bufs):
            k = id(b)
            if k in slot_of:
                holes.append((pos, slot_of[k]))
                bufs.append(None)
            else:
                bufs.append(replacement.get(k, b).ensure_allocated())
        steps.append((st.program, bufs, holes))
    return JitPlan(
        steps,
        dict(cap.var_vals),
        list(cap.rng),
        sum(1 for st in cap.steps if st.program is not None),
        sum(b.nbytes for b in pool),
        sum(cap.created[k].nbytes for k in temps),
        tuple(fresh),
        tuple(st.kernel for st in cap.steps),
    )
