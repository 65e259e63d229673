"""Kernelize and realize: tensor UOps -> scheduled CALLs -> programs run on devices.

kernelize(uops, device): callify -> rangeify (cached by the FUNCTION body) -> instantiate, giving each
tensor a UOp over new BUFFERs written by CALL(kernel, buffers...) nodes: RESHAPE(AFTER(BUFFER, CALL)).
realize(uops, device): kernelize, run every CALL not yet run (sources first), and strip the AFTERs.
Programs are compiled once per (device, kernel AST): expand -> isel -> linearize -> render -> compile.
"""

from __future__ import annotations

import functools
import itertools
import os
import time
import weakref
from collections.abc import Callable
from dataclasses import field
from typing import Any

import numpy as np

from unigrad import config
from unigrad.dtype import DType, dtypes
from unigrad.helpers import GlobalCounters, LRUCache, no_gc, record
from unigrad.ir.args import AddrSpace, BufferArg, ParamArg
from unigrad.ir.ops import Ops
from unigrad.ir.persist import loads
from unigrad.ir.spec import (
    verify_expanded,
    verify_function,
    verify_kernel,
    verify_linear,
    verify_selected,
    verify_tensor_graph,
)
from unigrad.ir.text import structure
from unigrad.ir.uop import UOp, toposort_memo, variables_of
from unigrad.pipeline.callify import callify, function_params, inline_functions, is_buffer_input, is_traced_call
from unigrad.pipeline.expand import expand
from unigrad.pipeline.isel import isel
from unigrad.pipeline.gpudims import gates_to_ifs, gpudims
from unigrad.pipeline.linearize import linearize
from unigrad.pipeline.memplan import MemoryPlan, first_written, plan_memory
from unigrad.pipeline.merge import kernel_outputs, merge_variant
from unigrad.pipeline.optimize import Target, optimize
from unigrad.pipeline.rangeify import rangeify
from unigrad.pipeline.rebase import Rebased, rebase
from unigrad.runtime import Buffer, Device, Lowered, disk_cache, jit, lowered_cache, to_numpy_dtype
from unigrad.runtime.offsets import AtOffsets
from unigrad.runtime.queue import run_steps

_buffer_ids = itertools.count()
buffers: weakref.WeakKeyDictionary[UOp, Buffer] = weakref.WeakKeyDictionary()
_executed: weakref.WeakSet[UOp] = weakref.WeakSet()
_launch_ids = itertools.count()
precompiled: weakref.WeakSet[UOp] = weakref.WeakSet()  # FUNCTIONs of @function(precompile=True), alive
# called with the buffers a kernel wrote right after it ran (and after a TinyJit capture noted it): DDP starts a bucket's
# all-reduce as soon as the kernel writing its last gradient ran, while the rest of the backward runs
after_kernel: list[Callable[[list[Buffer]], None]] = []
# bounded, least recently used out: a program holds its LINEAR and a loaded library, a schedule its graphs
_schedule_cache: LRUCache[tuple[UOp, str, tuple], CachedSchedule] = LRUCache(lambda: config.SCHEDULE_CACHE.value)
_program_cache: LRUCache[tuple, CompiledKernel] = LRUCache(lambda: config.PROGRAM_CACHE.value)
_saved_schedules = disk_cache.DiskCache("schedules")


@record
class Stats:
    """Counters for tests and DEBUG output."""

    kernels: int = 0  # launches
    programs: int = 0  # programs built (compiled, or found in the compiler's cache, and loaded)
    last_kernels: list[UOp] = field(default_factory=list)


stats = Stats()


def adopt_buffer(buf: Buffer) -> UOp:
    """A fresh BUFFER UOp standing for an existing Buffer (one a pickled TinyJit brought along)."""
    u = UOp(Ops.BUFFER, (UOp.shape_src((buf.size,)),), BufferArg(next(_buffer_ids), buf.dtype, buf.device))
    buffers[u] = buf
    return u


def new_buffer(size: int, dtype: DType, device: str) -> UOp:
    """A fresh BUFFER UOp (unique slot); its device memory is allocated when first used."""
    u = UOp(Ops.BUFFER, (UOp.shape_src((size,)),), BufferArg(next(_buffer_ids), dtype, device, AddrSpace.GLOBAL))
    buffers[u] = buf = Buffer(device, size, dtype)
    if jit.capturing() is not None:
        jit.note_buffer(buf)
    return u


def _base(u: UOp) -> UOp:
    """The BUFFER (or placeholder PARAM) under a view / a kernel's AFTER."""
    while u.op in (Ops.AFTER, Ops.RESHAPE):
        u = u.src[0]
    return u


def buffer_of(u: UOp) -> Buffer:
    return buffers[_base(u)]


def _is_ast(u: UOp) -> bool:
    return u.op is Ops.SINK or (u.op is Ops.LOAD and u.arg is not None and u.arg.device is not None)


@record(frozen=True)
class Step:
    """One kernel of a cached schedule: its AST and, per buffer argument, the placeholder PARAM it stands for."""

    ast: UOp
    params: tuple[UOp, ...]


@record(frozen=True)
class CachedSchedule:
    """A rangeified FUNCTION body and its placeholders: PARAMs for the caller's buffers (by slot) and
    PARAMs for the buffers each run allocates, and the names of the Variables its kernels take. Cached by
    (callified body, device).

    `steps` is the run plan realize() follows on buffers: the body's kernels in dependency order, and
    `outputs` the body's results with the kernels stripped (views of the placeholders); None where a CALL
    argument is not a placeholder (the general path then walks the instantiated graph). `memory`: on the run
    plan, the placeholders only its own kernels take share buffers where their lifetimes do not overlap."""

    body: UOp
    inputs: tuple[UOp, ...]
    fresh: tuple[UOp, ...]
    variables: frozenset[str]
    steps: tuple[Step, ...] | None
    outputs: UOp
    memory: MemoryPlan | None = None  # intermediates sharing buffers on the run plan (pipeline/memplan.py)


def _plan(body: UOp) -> tuple[tuple[Step, ...], bool, UOp]:
    """The kernels of a scheduled body in run order, whether every argument is a placeholder (the plan can run
    straight on buffers), and its outputs with the kernels stripped."""
    steps: list[Step] = []

    def step(call: UOp) -> None:
        steps.append(Step(call.src[0], tuple(_base(b) for b in call.src[1:])))

    outputs = _strip_calls(body, step)
    return tuple(steps), all(p.op is Ops.PARAM for st in steps for p in st.params), outputs


def _strip_calls(root: UOp, on_call: Callable[[UOp], None]) -> UOp:
    """Walk `root` sources first, calling on_call for each CALL (kernels are opaque: never rebuilt); return root
    with every AFTER(buffer, CALL...) replaced by the buffer."""
    memo: dict[UOp, UOp] = {}
    for u in root.toposort(gate=lambda x: not _is_ast(x)):
        if _is_ast(u):
            memo[u] = u
        elif u.op is Ops.CALL:
            on_call(u)
            memo[u] = u
        elif u.op is Ops.AFTER and all(d.op is Ops.CALL for d in u.src[1:]):
            memo[u] = memo[u.src[0]]  # its kernels have run: the buffer itself
        else:
            new_src = tuple(memo[x] for x in u.src)
            memo[u] = u if new_src == u.src else u.replace(src=new_src)
    return memo[root]


def _plan_intermediates(steps: tuple[Step, ...], fresh: tuple[UOp, ...], outputs: UOp) -> MemoryPlan | None:
    """The memory plan of a run plan's intermediates: fresh placeholders of a static size that no output views and
    that the kernel first taking them writes (one of its first KernelInfo.outputs arguments); None when no two of
    them can share."""
    viewed = {p for p in outputs.toposort() if p.op is Ops.PARAM}
    made, params = set(fresh), [st.params for st in steps]
    written = first_written(params, [kernel_outputs(st.ast) for st in steps])
    sizes = {p: p.shape[0] for p in written if p in made and p not in viewed}
    candidates = {p: ((p.arg.device, p.arg.dtype), n) for p, n in sizes.items() if isinstance(n, int)}
    memory = plan_memory(params, candidates)  # type: ignore[arg-type]
    return memory if len(memory.shared) < len(memory.slot_of) else None


def _schedule_key(fn: UOp, device: str) -> tuple[UOp, str, tuple]:
    """A callified FUNCTION's schedule cache key: its body, the device, and what else decides its merged kernels."""
    return (fn.src[0], device, merge_variant(fn.src[1:]))


def _schedule(key: tuple[UOp, str, tuple], args: tuple[UOp, ...]) -> CachedSchedule:
    """The schedule cached under `key` (_schedule_key), else loaded or built for the body over `args`."""
    cs = _schedule_cache.get(key)
    if cs is None:
        body, device, variant = key
        cs = _schedule_cache[key] = _load_or_build_schedule(body, args, device, variant)
        # its kernels are compiled now, in parallel (those whose first buffer is on this device: the others later)
        steps = cs.steps if cs.steps is not None else _plan(cs.body)[0]
        precompile(device, [st.ast for st in steps if getattr(st.params[0].arg, "device", None) == device])
    return cs


def _load_or_build_schedule(body: UOp, args: tuple[UOp, ...], device: str, variant: tuple) -> CachedSchedule:
    """The schedule an earlier process saved for this body on this device (CACHEDIR/schedules: rangeify is most of
    a warm model's first step), else a new one, saved."""
    if not disk_cache.enabled():
        return _build_schedule(body, args, device)
    k = _saved_schedules.key(device, structure(body), repr(variant))
    if (cs := _saved_schedules.load(k, CachedSchedule)) is None:
        cs = _build_schedule(body, args, device)
        _saved_schedules.save(k, cs)
    return cs


def _build_schedule(body: UOp, args: tuple[UOp, ...], device: str) -> CachedSchedule:
    """rangeify the callified body, then its run plan: the placeholders of inputs and of fresh buffers, the kernels in
    order and the memory plan of the intermediates."""
    sched = rangeify(UOp(Ops.FUNCTION, (body, *args)), device).src[0]
    params = [u for u in sched.toposort(gate=lambda x: not _is_ast(x)) if u.op is Ops.PARAM and u.arg.name is None]
    n_in = sum(1 for a in args if a.op is not Ops.PARAM)
    inputs = tuple(sorted((p for p in params if p.arg.slot < n_in), key=lambda p: p.arg.slot))
    fresh = tuple(p for p in params if p.arg.slot >= n_in)
    names = frozenset(v.arg.name for v in variables_of(body))
    steps, plain, outputs = _plan(sched)
    memory = _plan_intermediates(steps, fresh, outputs) if plain else None
    return CachedSchedule(sched, inputs, fresh, names, steps if plain else None, outputs, memory)


def kernelize(uops: list[UOp], device: str) -> list[UOp]:
    """Decide the kernels for `uops` without running them; returns the new UOps (views over BUFFERs)."""
    with no_gc():
        return _kernelize(uops, device)[0]


def _kernelize(uops: list[UOp], device: str, nested: bool = False) -> tuple[list[UOp], dict[str, int]]:
    """kernelize, also returning the values of the bound Variables (the FUNCTION's trailing args). nested: a
    precompiled @function's arguments or body (no view offsets lifted: lift_varying_constants)."""
    cs, mapping, var_vals, _ = _instantiate(uops, device, nested=nested)
    out = _launches(cs.body, mapping)
    return list(out.src), var_vals


def _launches(body: UOp, mapping: dict[UOp, UOp]) -> UOp:
    """A cached schedule's body over real buffers (its placeholders replaced by `mapping`), each CALL a new node (a
    unique tag): a CALL is one kernel launch, run once (run_pending remembers the CALLs run), and the same kernel on
    the same buffers again (x.assign(x + 1) twice) is another launch, not the first one found again by
    hash-consing while some graph still holds it. Kernel ASTs are kept as they are."""
    memo: dict[UOp, UOp] = dict(mapping)
    for u in body.toposort(gate=lambda x: x not in mapping and not _is_ast(x)):
        if u in memo:
            continue
        new_src = u.src if _is_ast(u) else tuple(memo[x] for x in u.src)
        if u.op is Ops.CALL:
            memo[u] = UOp(Ops.CALL, new_src, u.arg, next(_launch_ids))
        else:
            memo[u] = u if new_src == u.src else u.replace(src=new_src)
    return memo[body]


def _instantiate(
    uops: list[UOp], device: str, share: bool = False, nested: bool = False
) -> tuple[CachedSchedule, dict[UOp, UOp], dict[str, int], bool]:
    """uops -> their cached schedule, the mapping of its placeholders to BUFFERs (fresh ones allocated) and bound
    Variables, the Variables' values, and whether every input is a plain BUFFER (no kernel of it left to run).
    share (realize): when the run plan will run, its planned intermediates get no BUFFER here (shared_buffers)."""
    t0 = time.perf_counter()
    sink = UOp(Ops.SINK, tuple(uops))
    call_vals: dict[str, int] = {}
    if precompiled:
        sink = _lower_precompiled(sink, device, call_vals)
    if config.SPEC.value:
        verify_tensor_graph(sink)
    fn = callify(sink)
    key = _schedule_key(fn, device)
    if key not in _schedule_cache and jit.capturing() is None:
        if (lifted := lift_varying_constants(fn, device, offsets=not nested)) is not fn:
            fn, key = lifted, _schedule_key(lifted, device)
    if config.SPEC.value:
        verify_function(fn)
    args = fn.src[1:]
    cs = _schedule(key, args)
    mapping = {p: args[p.arg.slot] for p in cs.inputs}
    plain = all(a.op is not Ops.AFTER for a in args)
    planned = cs.memory.slot_of if share and plain and cs.steps is not None and cs.memory is not None else {}
    for p in cs.fresh:
        if p in planned:
            continue
        size = p.shape[0]  # a symbolic size (Variables) gets room for its largest value
        mapping[p] = new_buffer(size if isinstance(size, int) else int(size.vmax), p.arg.dtype, p.arg.device)
    bound = [a for a in args if a.op is Ops.PARAM]
    for v in bound:  # the results' shapes see the Variables bound again (kernels keep them unbound)
        mapping[v.replace(src=v.src[:3])] = v
    var_vals: dict[str, int] = dict(call_vals)
    for v in bound:
        name, value = v.arg.name, v.src[3].arg.value
        if var_vals.setdefault(name, value) != value:
            raise ValueError(
                f"realize: Variable {name!r} is bound to both {var_vals[name]} and {value} in one graph; a kernel "
                "gets one value per Variable. Bind it once and reuse the bound Variable"
            )
    if cs.variables and not cs.variables <= var_vals.keys():
        missing = sorted(cs.variables - var_vals.keys())
        raise ValueError(
            f"realize: the graph uses unbound Variables {missing}; bind each one (Variable(...).bind(value)) "
            "where it sets a shape, so its kernels know the value"
        )
    if config.DEBUG >= 1:
        print(f"kernelize: {len(uops)} outputs scheduled in {(time.perf_counter() - t0) * 1e3:.2f} ms")
    return cs, mapping, var_vals, plain


@record
class ConstantsSeen:
    """A graph structure's value constants and view offsets as last seen (their ConstArgs, one per use, in toposort
    order) and the uses whose value has changed between two realizes: those are kernel arguments from then on."""

    args: tuple[Any, ...]
    varying: frozenset[int]
    # the body with those uses lifted, the same for every later graph of the structure (on `device`), and which uses
    # it takes as value buffers and as bound Variables, in order: a later graph needs only its own arguments
    device: str = ""
    lifted: UOp | None = None
    value_uses: tuple[int, ...] = ()
    offset_uses: tuple[tuple[int, UOp], ...] = ()


_constants_seen: LRUCache[UOp, ConstantsSeen] = LRUCache(lambda: config.SCHEDULE_CACHE.value)
# shapes and index math stay static (view offsets are lifted apart: _OFFSET_USES); masks fold; 16-bit and 8-bit
# floats stored as other types' bits (bfloat16, the fp8s: a one-element buffer of them would need their encoding)
# stay constants
_NOT_VALUES = frozenset({dtypes.index, dtypes.bool, dtypes.bfloat16, *dtypes.fp8s})
# (op, source index) of view offsets, per axis: a SHRINK's start and a PAD's place (both (T, o, s')); lifted into
# bound Variables, never into buffers (they are index math)
_VIEWS_WITH_OFFSETS = (Ops.SHRINK, Ops.PAD)
_OFFSET_USES = frozenset((op, 1) for op in _VIEWS_WITH_OFFSETS)
# (op, source index) of uses whose constant decides how the op is lowered, not only what it computes: a POW's
# exponent (x**2 is x*x, x**0.5 torch's sqrt with sqrt(-0) = -0, a general exponent pow's law): never lifted
_STATIC_USES = frozenset({(Ops.POW, 1)})


def _is_value(u: UOp) -> bool:
    return u.op is Ops.CONST and u.dtype not in _NOT_VALUES


_HAS_VALUES, _HAS_VIEWS = 1, 2
# what a constant subgraph (callify marks it closed: no buffer or Variable below) holds (value CONSTs, SHRINK/PAD
# views), found once per subgraph: shapes and constants are the same nodes realize after realize (hash-consing), and
# every use of each is looked at on each realize
_tree_kinds: weakref.WeakKeyDictionary[UOp, int] = weakref.WeakKeyDictionary()


def _tree_kind(tree: UOp) -> int:
    if not tree.src:
        return _HAS_VALUES if _is_value(tree) else 0
    kind = _tree_kinds.get(tree)
    if kind is None:
        kind = 0
        for x in tree.toposort():
            kind |= _HAS_VALUES if _is_value(x) else _HAS_VIEWS if x.op in _VIEWS_WITH_OFFSETS else 0
        _tree_kinds[tree] = kind
    return kind


def _rebuild_uses(nodes: list[UOp], use: Callable[[UOp], UOp], offset: Callable[[UOp, int], UOp] | None = None) -> UOp:
    """The body (nodes: its walk up to constant subgraphs, the body last) with each use of a constant subgraph (a
    source of a node that is not one, in toposort order: one that hash-consing shares between two nodes is two uses,
    so a value that happens to equal another constant gives the same structure) replaced by use(subgraph), and, when
    `offset` is given, each constant offset of a view (a SHRINK's start or a PAD's place, per axis that has room for
    more than one; those inside a constant subgraph first, before its use) by offset(const, room): the offset lies
    in [0, room]."""
    memo: dict[UOp, UOp] = {}
    for u in nodes:
        if u.closed or not u.src:
            memo[u] = u
            continue
        new_src = []
        for i, x in enumerate(u.src):
            if offset is not None and (u.op, i) in _OFFSET_USES and x.op is Ops.STACK and x.closed:
                new_src.append(_rebuild_offsets(u, x, offset))
            elif x.closed:
                kind = _tree_kind(x)
                tree = _rebuild_closed(x, offset) if offset is not None and kind & _HAS_VIEWS else x
                new_src.append(use(tree) if kind & _HAS_VALUES and (u.op, i) not in _STATIC_USES else tree)
            else:
                new_src.append(memo[x])
        new = tuple(new_src)
        memo[u] = u if new == u.src else u.replace(src=new)
    return memo[nodes[-1]]


def _rebuild_closed(tree: UOp, offset: Callable[[UOp, int], UOp]) -> UOp:
    """A constant subgraph with the offsets of its views replaced (a mask or a value padded into place: x[i] = v)."""
    memo: dict[UOp, UOp] = {}
    for u in tree.toposort():
        new = tuple(memo[x] for x in u.src)
        if u.op in _VIEWS_WITH_OFFSETS and u.src[1].op is Ops.STACK:
            new = (new[0], _rebuild_offsets(u, u.src[1], offset), *new[2:])
        memo[u] = u if new == u.src else u.replace(src=new)
    return memo[tree]


def _rebuild_offsets(view: UOp, offsets: UOp, offset: Callable[[UOp, int], UOp]) -> UOp:
    """A SHRINK's or PAD's offsets (STACK, one per axis) with each constant one that has room replaced by
    offset(const, room); room is how far the view can move on that axis: |source size - view size|."""
    entries = []
    for o, n_in, n_out in zip(offsets.src, view.src[0].shape, view.shape, strict=True):
        room = abs(n_in - n_out) if isinstance(n_in, int) and isinstance(n_out, int) else 0
        entries.append(offset(o, room) if o.op is Ops.CONST and room > 0 else o)
    return offsets.replace(src=tuple(entries))


def _values_of(tree: UOp) -> list[UOp]:
    return [x for x in tree.toposort() if _is_value(x)]


def lift_varying_constants(fn: UOp, device: str, offsets: bool = True) -> UOp:
    """A Python scalar that changes between realizes (a step counter, a learning rate, `x + i` in a loop, the index
    of `data[i]`) would make each value a new schedule and new kernels. On a schedule-cache miss the callified
    FUNCTION's value constants and view offsets are compared, use by use, with the last graph of the same structure
    but for those: the uses that changed become kernel arguments, so every later value finds the same schedule and
    programs. A value becomes a one-element buffer (a new input of the FUNCTION); a view offset (a SHRINK's start, a
    PAD's place: `data[i]`, `x[i:i+8]` and their gradients) a bound Variable named by its use (`_off<k>`) in
    [0, room], the symbolic-shape machinery, so the kernels index by it. Sizes stay static. The first value of a
    structure keeps its constants (and the folding they allow), and so do those that never change. offsets=False
    (a precompiled @function's nested schedules, whose Variables share one namespace with their caller's) lifts
    values only. Returns fn, or fn with those constants lifted (its @function calls inlined first: a constant of a
    body is a use like any other, and a lifted one must not stay inside a body, whose PARAMs are its arguments)."""
    given = fn
    # calls of fixed bodies stay calls (their constants never vary; inlined, an unrolled LSTMCell's 2000 tanh and
    # sigmoid calls made the structure kept here three times the size of its schedule's graph)
    if any(is_traced_call(u) and not u.src[0].arg.fixed for u in fn.src[0].toposort()):
        fn = fn.replace(src=(inline_functions(fn.src[0], keep=lambda f: f.arg.fixed), *fn.src[1:]))
    body = fn.src[0]
    uses: list[UOp] = []

    def placeholder(tree: UOp) -> UOp:  # the tree with its values erased: a dict key, never run
        consts = _values_of(tree)
        uses.extend(consts)
        # numbered within the tree: a tree whose values coincide (one node shared) is another structure
        return tree.substitute({c: UOp(Ops.CONST, (), ("lifted", c.dtype, i)) for i, c in enumerate(consts)})

    def offset_placeholder(const: UOp, room: int) -> UOp:  # a Variable: the tree's values are found around it
        uses.append(const)
        return _offset_variable(-1, room)

    nodes = body.toposort(gate=lambda x: not x.closed)
    erased = _rebuild_uses(nodes, placeholder, offset_placeholder if offsets else None)
    if not uses:
        return given
    args = tuple(c.arg for c in uses)
    seen = _constants_seen.get(erased)
    if seen is not None and len(seen.args) != len(args):  # counted over other `closed` marks (a body's constants
        seen = None  # that a callify walk has not seen yet are not uses): a structure met anew
    varying = frozenset() if seen is None else seen.varying | {k for k, a in enumerate(args) if a != seen.args[k]}
    n_buffers = sum(1 for a in fn.src[1:] if a.op is not Ops.PARAM)  # buffers come first, bound Variables after
    args_in = fn.src[1:]
    if seen is not None and seen.lifted is not None and seen.varying == varying and seen.device == device:
        seen.args = args
        values = [_value_buffer(uses[k], device) for k in seen.value_uses]
        bound = [var.bind(uses[k].arg.value) for k, var in seen.offset_uses]
        return fn.replace(src=(seen.lifted, *args_in[:n_buffers], *values, *args_in[n_buffers:], *bound))
    _constants_seen[erased] = ConstantsSeen(args, varying)
    if not varying:
        return given
    values = []
    bound = []
    value_uses: list[int] = []
    offset_uses: list[tuple[int, UOp]] = []
    counted = [0]  # constants met so far, over the uses in the order placeholder() met them (numbers in `varying`)

    def lift(tree: UOp) -> UOp:
        mapping = {}
        for const in _values_of(tree):
            if counted[0] in varying:
                slot = n_buffers + len(values)
                value_uses.append(counted[0])
                values.append(_value_buffer(const, device))
                param = UOp(Ops.PARAM, (UOp.shape_src((1,)),), ParamArg(slot, const.dtype, device, AddrSpace.GLOBAL))
                mapping[const] = UOp(Ops.RESHAPE, (param, UOp.shape_src(())))
            counted[0] += 1
        return tree.substitute(mapping) if mapping else tree

    def lift_offset(const: UOp, room: int) -> UOp:
        k = counted[0]
        counted[0] += 1
        if k not in varying:
            return const
        var = _offset_variable(k, room)
        offset_uses.append((k, var))
        bound.append(var.bind(const.arg.value))
        return var

    lifted = _rebuild_uses(nodes, lift, lift_offset if offsets else None)
    _constants_seen[erased] = ConstantsSeen(args, varying, device, lifted, tuple(value_uses), tuple(offset_uses))
    return fn.replace(src=(lifted, *args_in[:n_buffers], *values, *args_in[n_buffers:], *bound))


@functools.lru_cache(maxsize=4096)
def _offset_variable(k: int, room: int) -> UOp:
    """The Variable a lifted view offset becomes: named by its use's number k (the same in every graph of one
    structure), in [0, room]. k = -1: the placeholder of an erased structure."""
    return UOp.variable("_off" if k < 0 else f"_off{k}", 0, room)


def _value_buffer(const: UOp, device: str) -> UOp:
    """A CONST's value in a new one-element buffer on `device` (copied in: the value is the user's Python scalar,
    the boundary where numpy may appear)."""
    u = new_buffer(1, const.dtype, device)
    buffers[u].ensure_allocated().copyin(np.array([const.arg.value], to_numpy_dtype(const.dtype)))
    return u


def _lower_precompiled(sink: UOp, device: str, var_vals: dict[str, int]) -> UOp:
    """Each call of a precompiled @function becomes an opaque CALL: its arguments are kernelized, its body is
    scheduled alone over them (its own kernels, the schedule cached by the body) and each GETTUPLE is replaced by
    a view of the output buffer. Other @function calls are inlined (callify)."""
    sink = inline_functions(sink, keep=lambda fn: fn.arg.precompile)
    calls = [u for u in sink.toposort(gate=lambda x: not is_buffer_input(x)) if is_traced_call(u)]
    mapping: dict[UOp, UOp] = {}
    for fn in dict.fromkeys(c.src[0] for c in calls):
        args, vals = _kernelize(list(fn.src[1:]), device, nested=True) if len(fn.src) > 1 else ([], {})
        body = fn.src[0].substitute({p: args[p.arg.slot] for p in function_params(fn)})
        outs, out_vals = _kernelize(list(body.src), device, nested=True)
        var_vals.update(vals, **out_vals)
        for c in calls:
            if c.src[0] is fn:
                mapping[c] = outs[c.arg]
    return sink.substitute(mapping) if mapping else sink


@record
class CompiledKernel:
    """A kernel ready to run. flops and mem (for DEBUG=2's rates) are counted from the LINEAR when first asked."""

    name: str
    program: Any
    lowered: Lowered
    device: str = ""
    _stats: tuple[int, int] | None = None
    rebased: Rebased | None = None  # a rebased kernel's offsets and values (its program is the rebased AST's)
    shared: CompiledKernel | None = None  # a rebased kernel's: the program's own, which counts flops and mem once

    def __reduce__(self) -> tuple:
        """Pickled as its lowered kernel (source and signature): loading builds the program again (from the
        compiler's cache where it has it)."""
        return load_kernel, (self.device, self.lowered, self.rebased)

    @property
    def linear(self) -> UOp:
        return self.lowered.linear

    @property
    def source(self) -> str:
        return self.lowered.src

    @property
    def flops(self) -> int:
        return self._counted()[0]

    @property
    def mem(self) -> int:
        """Bytes of the global buffers it takes (static sizes)."""
        return self._counted()[1]

    def _counted(self) -> tuple[int, int]:
        if self._stats is None and self.shared is not None:  # (an unrolled LSTMCell: 2269 kernels of 40 programs)
            self._stats = self.shared._counted()
        if self._stats is None:
            graph = self.lowered.graph  # an encoded LINEAR (from the disk cache) is decoded to count, not kept
            linear = graph if isinstance(graph, UOp) else loads(graph)
            mem = sum(
                u.shape[0] * u.dtype.itemsize
                for u in linear.src
                if u.op is Ops.PARAM and u.arg.addrspace is AddrSpace.GLOBAL and isinstance(u.shape[0], int)
            )
            self._stats = (_count(linear), mem)
        return self._stats


def _count(linear: UOp) -> int:
    """ALU ops executed, counting each loop body bound times (symbolic bounds count as 1)."""
    mult, stack, flops = 1, [], 0
    for u in linear.src:
        if u.op is Ops.RANGE:
            b = u.src[0].arg.value if u.src[0].op is Ops.CONST else 1
            stack.append(b)
            mult *= b
        elif u.op is Ops.END:
            b = stack.pop()
            mult = mult // b if b else 1
        elif u.op in (Ops.ADD, Ops.MUL, Ops.MAX, Ops.RECIP, Ops.EXP2, Ops.LOG2, Ops.SIN, Ops.SQRT) and u.dtype.is_float:
            flops += mult
        elif u.op is Ops.MULACC and u.dtype.is_float:
            flops += 2 * mult  # a multiply and an add
    return flops


def _kernel_key(device: str, ast: UOp, target: Target) -> tuple:
    # what decides the opts is part of the key, and whether the kernel runs a rebased program (REBASE)
    return (device, ast, config.NOOPT.value, config.BEAM.value, config.REBASE.value, target)


def get_kernel(device: str, ast: UOp) -> CompiledKernel:
    """A kernel SINK -> its program on `device`: optimized (hand-coded opts, or BEAM search), lowered, compiled;
    cached by what decides the result."""
    target = Device[device].target
    key = _kernel_key(device, ast, target)
    if (ck := _program_cache.get(key)) is not None:
        return ck
    if (rb := _rebased(device, ast)) is not None:
        return _variant(key, device, rb)
    return _build_kernel(key, device, _lower_kernel(device, ast, target))


def _variant(key: tuple, device: str, rb: Rebased) -> CompiledKernel:
    """A rebased kernel: its rebased AST's program (built if need be), run from its offsets; cached under `key`."""
    shared = get_kernel(device, rb.ast)
    ck = _program_cache[key] = _at_offsets(shared, rb) if rb.offsets or rb.values else shared
    return ck


def _rebased(device: str, ast: UOp) -> Rebased | None:
    """The kernel with its read-only slices' starts moved into its arguments (pipeline/rebase.py), where the device
    can pass a buffer from an offset on; None where nothing moves."""
    if not config.REBASE.value or config.BEAM.value or not Device[device].allocator.can_offset:
        return None
    return rebase(ast)


def _at_offsets(ck: CompiledKernel, rb: Rebased) -> CompiledKernel:
    program = AtOffsets(ck.program, rb.offsets, rb.values, Device[ck.device].allocator)
    return CompiledKernel(ck.name, program, ck.lowered, ck.device, rebased=rb, shared=ck)


def precompile(device: str, asts: list[UOp]) -> None:
    """Build the programs of a new schedule's kernels before they run: each is optimized and lowered here, in
    turn, while the device compiler (a subprocess, one per core) already compiles the ones before it. A model's
    first step compiles its kernels in parallel instead of one by one as they run. Under BEAM the search
    compiles its candidates in parallel itself: nothing is done here."""
    if config.BEAM.value:
        return
    dev = Device[device]
    target = dev.target
    todo: dict[tuple, UOp] = {}
    variants: list[tuple[tuple, Rebased]] = []  # rebased kernels: installed once their shared program is built
    for ast in asts:
        if ast.op is Ops.SINK and (key := _kernel_key(device, ast, target)) not in _program_cache:
            if (rb := _rebased(device, ast)) is not None:
                variants.append((key, rb))
                ast = rb.ast
            if (k := _kernel_key(device, ast, target)) not in _program_cache:
                todo[k] = ast
    if len(todo) >= 2:  # fewer: nothing to overlap (get_kernel builds it)
        _compile_in_parallel(dev, device, target, todo)
    for key, rb in variants:
        _variant(key, device, rb)


def _compile_in_parallel(dev: Any, device: str, target: Target, todo: dict[tuple, UOp]) -> None:
    from concurrent.futures import ThreadPoolExecutor  # only here: importing it costs a fresh process ~7 ms

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        jobs = []
        for key, ast in todo.items():
            lowered = _lower_kernel(device, ast, target)
            jobs.append((key, lowered, pool.submit(dev.compiler.compile, lowered.src)))
        for key, lowered, job in jobs:
            job.result()  # the binary is in the compiler's cache now: build() loads it from there
            _build_kernel(key, device, lowered)


def _lower_kernel(device: str, ast: UOp, target: Target) -> Lowered:
    """A kernel SINK -> optimized (the heuristics, or BEAM) and lowered to source for `device`; from the disk
    cache of lowered kernels when an earlier process lowered it."""
    if not lowered_cache.enabled():
        return _lower_new(device, ast, target)
    k = lowered_cache.key(device, ast, target)
    if (lowered := lowered_cache.load(k)) is None:
        lowered = _lower_new(device, ast, target)
        lowered_cache.save(k, lowered)
    return lowered


def _lower_new(device: str, ast: UOp, target: Target) -> Lowered:
    with toposort_memo():
        return _optimize_and_lower(device, ast, target)


def _optimize_and_lower(device: str, ast: UOp, target: Target) -> Lowered:
    if config.DEBUG >= 5:
        print(f"--- kernel {ast.arg.name if ast.arg is not None else 'kernel'} ---\n{ast}")
    if config.SPEC.value:
        verify_kernel(ast)
    if config.BEAM.value:
        from unigrad.runtime.beam import beam_optimize  # its thread pool and JSON cache only under BEAM

        ast = beam_optimize(device, ast, target, lower)
    else:
        ast = optimize(ast, target)
    lowered = lower(device, ast)
    if config.DEBUG >= 3:
        rs = [u for u in lowered.linear.src if u.op is Ops.RANGE]
        print(
            f"{lowered.name}: ranges " + " ".join(f"r{r.arg.id}:{r.arg.axis_type.value}{r.src[0].render()}" for r in rs)
        )
        print(f"{lowered.name}: opts {ast.arg.opts if ast.arg is not None else ()}")
    if config.DEBUG >= 4:
        print(lowered.src)
    return lowered


def _build_kernel(key: tuple, device: str, lowered: Lowered) -> CompiledKernel:
    """Compile (or find in the compiler's cache) and load a lowered kernel; cached under `key`."""
    ck = _program_cache[key] = load_kernel(device, lowered)
    stats.programs += 1
    return ck


def load_kernel(device: str, lowered: Lowered, rebased: Rebased | None = None) -> CompiledKernel:
    """A lowered kernel compiled (or found in the compiler's cache) and loaded on `device`; what an unpickled
    CompiledKernel (a pickled TinyJit's) is rebuilt with."""
    ck = CompiledKernel(lowered.name, Device[device].build(lowered), lowered, device)  # type: ignore[attr-defined]
    return _at_offsets(ck, rebased) if rebased is not None else ck


def lower(device: str, sink: UOp) -> Lowered:
    """An optimized kernel SINK -> expand -> isel -> linearize -> render for `device` (not compiled, not cached)."""
    dev = Device[device]
    name = sink.arg.name if sink.arg is not None else "kernel"
    gpu = dev.target.gpu
    if gpu:
        sink = gpudims(sink, dev.target.global_max)
    sink = expand(sink)
    if gpu:
        sink = gates_to_ifs(sink)
    if config.SPEC.value:
        verify_expanded(sink)
    sink = isel(sink, dev.renderer.decompose)
    if config.SPEC.value:
        verify_selected(sink, dev.renderer.decompose)
    linear = linearize(sink)
    if config.SPEC.value:
        verify_linear(linear)
    src, sig = dev.renderer.render(name, linear)
    return Lowered(name, linear, src, sig)


def shared_buffers(memory: MemoryPlan) -> dict[UOp, Buffer]:
    """A new Buffer per shared buffer of the plan (allocated when first used), for each intermediate its own."""
    shared = [Buffer(device, size, dtype) for (device, dtype), size in memory.shared]  # type: ignore[misc]
    if jit.capturing() is not None:
        for buf in shared:
            jit.note_buffer(buf)
    return {p: shared[s] for p, s in memory.slot_of.items()}  # type: ignore[misc]


def run_call(call: UOp, var_vals: dict[str, int]) -> None:
    _run(call.src[0], [buffer_of(b) for b in call.src[1:]], var_vals)


def _run(ast: UOp, bufs: list[Buffer], var_vals: dict[str, int]) -> None:
    """Run one kernel (or a copy between devices, an `ast` LOAD) on its buffers."""
    if ast.op is Ops.LOAD:  # copy between devices, through the host
        bufs[0].copy_from(bufs[1])
        if jit.capturing() is not None:
            jit.note_step("copy", None, bufs, var_vals)
        return
    ck = get_kernel(bufs[0].device, ast)
    for b in bufs:
        b.ensure_allocated()
    t0 = time.perf_counter()
    event_time = ck.program(bufs, var_vals)  # a GPU program gives its device-event time when DEBUG>=2
    dt = event_time if isinstance(event_time, float) else time.perf_counter() - t0
    GlobalCounters.launched(ck, dt)
    stats.kernels += 1
    stats.last_kernels.append(ast)
    if jit.capturing() is not None:
        jit.note_step(ck.name, ck.program, bufs, var_vals, ck, kernel_outputs(ast))
    if config.DEBUG >= 2:
        print(f"  {ck.name:<30} {dt * 1e6:9.1f} us  {ck.flops / dt / 1e9:8.2f} GFLOP/s  {ck.mem / dt / 1e9:8.2f} GB/s")
    for hook in after_kernel:
        hook(bufs[: kernel_outputs(ast)])


def run_pending(uops: list[UOp], var_vals: dict[str, int]) -> list[UOp]:
    """Run every CALL under `uops` not yet run, sources first; return the uops with AFTERs stripped."""

    calls: list[UOp] = []

    def run_once(call: UOp) -> None:  # a rebuilt CALL would look like a new kernel: CALLs are kept as they are
        if call not in _executed:
            calls.append(call)
            _executed.add(call)

    outs = list(_strip_calls(UOp(Ops.TUPLE, tuple(uops)), run_once).src)
    _run_all([(c.src[0], [buffer_of(b) for b in c.src[1:]]) for c in calls], var_vals)
    return outs


def _run_all(steps: list[tuple[UOp, list[Buffer]]], var_vals: dict[str, int]) -> None:
    """Run a schedule's steps in order; steps on several devices go through the command queue (runtime/queue.py),
    each device's on its own thread (in order, on this thread, while a TinyJit captures them)."""
    run_steps(steps, lambda ast, bufs: _run(ast, bufs, var_vals), inline=jit.capturing() is not None)


@record
class StepTotals:
    """What DEBUG=1 reports per step (an optimizer's step() ends one): realizes, kernels, tensor ops, seconds in
    kernels and seconds of Python around them (graph building since the previous realize, scheduling, launching)."""

    realizes: int = 0
    kernels: int = 0
    ops: int = 0
    kernel_s: float = 0.0
    python_s: float = 0.0
    last_end: float = 0.0  # perf_counter when the previous realize ended (0: none yet)

    def add(self, kernels: int, ops: int, kernel_s: float, python_s: float) -> None:
        self.realizes += 1
        self.kernels += kernels
        self.ops += ops
        self.kernel_s += kernel_s
        self.python_s += python_s

    def reset(self) -> None:
        self.realizes = self.kernels = self.ops = 0
        self.kernel_s = self.python_s = 0.0


_step = StepTotals()
_NOT_OPS = frozenset({Ops.CONST, Ops.STACK, Ops.BUFFER, Ops.PARAM, Ops.SINK, Ops.AFTER})  # leaves and shapes


def _tensor_ops(uops: list[UOp]) -> int:
    """Nodes of the tensor graphs that compute (ops, movements, reductions), not the realized buffers below them."""
    roots = UOp(Ops.SINK, tuple(uops)).toposort(gate=lambda x: not is_buffer_input(x))
    return sum(1 for u in roots if u.op not in _NOT_OPS)


def _debug_realize(uops: list[UOp], t0: float, kernel_s0: float) -> None:
    """DEBUG=1's line per realize: kernels, tensor ops, and the eager overhead per op (the Python since the previous
    realize ended, graph building included, less the time in kernels)."""
    end = time.perf_counter()
    ops, kernels = _tensor_ops(uops), len(stats.last_kernels)
    kernel_s = GlobalCounters.time_sum_s - kernel_s0
    python_s = (end - (_step.last_end or t0)) - kernel_s
    _step.last_end = end
    _step.add(kernels, ops, kernel_s, python_s)
    print(
        f"realize: {kernels} kernels for {ops} ops: kernels {kernel_s * 1e3:.2f} ms, Python {python_s * 1e3:.2f} ms "
        f"(schedule+launch {(end - t0 - kernel_s) * 1e3:.2f} ms) = {python_s * 1e6 / max(ops, 1):.1f} us/op"
    )


def end_step() -> None:
    """DEBUG=1: print the totals of the step that ends here (an optimizer's step() calls it) and start the next."""
    s = _step
    if config.DEBUG >= 1 and s.realizes:
        print(
            f"step: {s.kernels} kernels in {s.realizes} realizes for {s.ops} ops: kernels {s.kernel_s * 1e3:.2f} ms, "
            f"Python {s.python_s * 1e3:.2f} ms = {s.python_s * 1e6 / max(s.ops, 1):.1f} us/op"
        )
    _step.reset()


def realize(uops: list[UOp], device: str) -> list[UOp]:
    """Kernelize and run; returns UOps that are views of concrete, filled BUFFERs. When every input is a filled
    buffer the cached schedule's plan runs straight on the buffers (no CALL graph is built and walked)."""
    if config.DEBUG >= 1:
        t0, kernel_s0 = time.perf_counter(), GlobalCounters.time_sum_s
    Device[device].wake()  # (the CPU's worker threads wake up while the schedule is looked up)
    with no_gc():
        cs, mapping, var_vals, plain = _instantiate(uops, device, share=True)
        stats.last_kernels = []
        if plain and cs.steps is not None:
            bufs = {p: buffer_of(u) for p, u in mapping.items() if u.op is not Ops.PARAM}  # each buffer looked up once
            if cs.memory is not None:
                bufs.update(shared_buffers(cs.memory))
            _run_all([(step.ast, [bufs[p] for p in step.params]) for step in cs.steps], var_vals)
            outs = list(cs.outputs.substitute(mapping).src)
        else:
            out = _launches(cs.body, mapping)
            outs = run_pending(list(out.src), var_vals)
        if config.DEBUG >= 1:
            _debug_realize(uops, t0, kernel_s0)
        return outs
