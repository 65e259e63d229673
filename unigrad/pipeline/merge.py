"""Merge kernels over one loop nest into one kernel with several outputs.

In: a rangeified FUNCTION body (rangeify.py): views over AFTER(buffer, CALL(kernel, out, inputs...)) nodes, each
kernel storing one output (KernelInfo.outputs == 1).
Out: the same body where a group of such CALLs became one CALL(kernel, out_0, ..., out_{n-1}, inputs...): its kernel
loops once and stores every member's value (SINK(END...(GROUP(STORE...)))), KernelInfo.outputs = n, PARAMs 0..n-1
the outputs and the rest the inputs of all members. Every AFTER of a member's CALL names the merged CALL instead.

Kernels merge when they store one ungated value at the same index expression over the same ranges on the same
device, at most one of them reduces (and then the others are light: few ops, no transcendental function of the loop
indices, which the reduction's register tile would copy) unless all are full reductions of few values or light
(loops one after the other, each over its own RANGEs: a loss and its labels' range check), and nothing between them
orders one after the other: a member may read another member's output only at the element it stores (the load
becomes the stored value: an optimizer step's moments feed its update, and a gradient summed over the batch feeds the
moments in the kernel that sums it), reads no buffer another member writes, and reads no kernel run after the first
member (with a reduction: no kernel that reads a member through other kernels and groups, as an optimizer's step
count is not; a grouping with a cycle falls back to the first rule). An Adam step's gradient, m, v and parameter
updates of one weight are one kernel instead of four; a matmul kept for the backward and the ReLU of it are one; two
outputs of one shape computed from the same inputs are one loop.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum, auto

from unigrad import config
from unigrad.dtype import dtypes
from unigrad.helpers import LRUCache, record
from unigrad.ir.args import AddrSpace, AxisType, KernelInfo, ParamArg
from unigrad.ir.ops import TRANSCENDENTAL_OPS, GroupOp, Ops
from unigrad.ir.uop import UOp
from unigrad.pipeline.expand import end_chain

MAX_MEMBERS = 16  # kernels merged into one at most
MAX_INPUTS = 32  # buffers a merged kernel reads at most (a cat merges its pieces in kernels of 32 reads)
# a merged kernel has at most this share of the ops a body is cut at: C compile time grows faster than the body, and
# a launch saved is worth microseconds (an LSTM LM step at the full limit: a 250 KB kernel, 1.4 s of gcc)
MERGED_OPS_SHARE = 4


def alias_groups(args: tuple[UOp, ...]) -> tuple[tuple[int, ...], ...]:
    """The FUNCTION argument slots that name one buffer, in groups (a BUFFER and that BUFFER after a kernelized,
    maybe not yet run, kernel: AFTER(BUFFER, CALL) are two arguments of one memory); () when all are distinct. Part
    of a schedule's cache key: kernels merge only where the buffers they write and read cannot be one."""
    if all(a.op is not Ops.AFTER for a in args):
        return ()
    slots: dict[UOp, list[int]] = {}
    for k, a in enumerate(args):
        if a.op is not Ops.PARAM:
            slots.setdefault(a.src[0] if a.op is Ops.AFTER else a, []).append(k)
    return tuple(tuple(s) for s in slots.values() if len(s) > 1)


def merge_variant(args: tuple[UOp, ...]) -> tuple:
    """What besides a FUNCTION's body decides its merged kernels (part of its schedule's cache keys): the
    MERGE_KERNELS knob and the argument slots that name one buffer."""
    return (config.MERGE_KERNELS.value, alias_groups(args))


def kernel_outputs(ast: UOp) -> int:
    """How many buffers a kernel (or a copy, an `ast` LOAD: 1) writes: its first arguments."""
    return ast.arg.outputs if isinstance(ast.arg, KernelInfo) else 1


class Kind(Enum):
    """What a mergeable kernel computes, which decides the kernels it may share a loop nest with (_mixable)."""

    LIGHT = auto()  # elementwise, a value a reduction's kernel may also compute: see EPILOGUE_OPS
    HEAVY = auto()  # elementwise, not light
    REDUCE = auto()  # it reduces
    SMALL = auto()  # a full reduction (one output) of at most SMALL_REDUCE values


@record(frozen=True)
class _Kernel:
    """A mergeable kernel: its STORE, the index it stores at, its ranges (outermost first), its kind and its ALU ops
    (a transcendental counting TRANSCENDENTAL_OPS, as rangeify counts a body)."""

    store: UOp
    idx: UOp
    ranges: tuple[UOp, ...]
    kind: Kind
    ops: int


# a light value's ops that depend on the loop indices, at most. More, or a transcendental one, in a reduction's kernel
# (a matmul's register tile, unrolled) costs more than its own kernel: an LSTMCell's gates under g @ W_hh, 120 us
# apart, 313 us in one
EPILOGUE_OPS = 64
COSTLY_EPILOGUE = GroupOp.Transcendental - {Ops.SQRT}  # (a square root is one instruction)
# full reductions (one output) of at most this many values each merge with each other (a loss's count of targets and
# its labels' range check: two loops in one kernel, no launch between them); bigger ones split over the cores
SMALL_REDUCE = 1 << 14


def _kernel_of(call: UOp) -> _Kernel | None:
    """A CALL's kernel as it merges, when it can: one ungated STORE into its PARAM 0 at the end of its END chain;
    None otherwise."""
    ast = call.src[0]
    if ast.op is not Ops.SINK or len(ast.src) != 1 or not isinstance(ast.arg, KernelInfo) or ast.arg.outputs != 1:
        return None
    e, ranges = end_chain(ast.src[0])
    if e.op is not Ops.STORE or len(e.src) != 2 or e.src[0].op is not Ops.INDEX:
        return None
    if (p := e.src[0].src[0]).op is not Ops.PARAM or p.arg.slot != 0:
        return None
    topo = ast.toposort()
    if any(u.op is Ops.STORE and u is not e for u in topo):
        return None
    return _Kernel(e, e.src[0].src[1], tuple(ranges), _kind(topo, bool(ranges)), _ops(topo))


def _kind(topo: list[UOp], has_ranges: bool) -> Kind:
    """The kind of a kernel (its nodes in topological order; has_ranges: it stores more than one element)."""
    if any(u.op is Ops.REDUCE for u in topo):
        return Kind.REDUCE if has_ranges or not _small_reduce(topo) else Kind.SMALL
    varying: set[UOp] = set()  # what depends on a loop index (sources come first in topo)
    for u in topo:
        if u.op is Ops.RANGE or any(s in varying for s in u.src):
            varying.add(u)
    alu = [u for u in varying if u.op in GroupOp.ALU]
    return Kind.LIGHT if len(alu) <= EPILOGUE_OPS and not any(u.op in COSTLY_EPILOGUE for u in alu) else Kind.HEAVY


REDUCING = frozenset({Kind.REDUCE, Kind.SMALL})  # the kinds that reduce


def _mixable(kinds: list[Kind]) -> bool:
    """Whether kernels of these kinds may be one: small full reductions and light values (loops one after the
    other), or at most one reduction and then only light values beside it."""
    if all(k in (Kind.SMALL, Kind.LIGHT) for k in kinds):
        return True
    reductions = sum(k in REDUCING for k in kinds)
    return reductions == 0 or (reductions == 1 and Kind.HEAVY not in kinds)


def _small_reduce(topo: list[UOp]) -> bool:
    """Whether the kernel's reduce loops run at most SMALL_REDUCE iterations in all (their bounds known)."""
    n = 1
    for u in topo:
        if u.op is Ops.RANGE and u.arg.axis_type is AxisType.REDUCE:
            if u.src[0].op is not Ops.CONST:
                return False
            n *= u.src[0].arg.value
    return n <= SMALL_REDUCE


def _base(u: UOp) -> UOp:
    """The buffer placeholder an argument names: PARAM, or the PARAM under AFTER(PARAM, ...)."""
    return u.src[0] if u.op is Ops.AFTER else u


def _call_deps(*args: UOp) -> list[UOp]:
    """The CALLs that CALL arguments name directly (through AFTERs, not through other CALLs)."""
    out, seen, stack = [], set(), list(args)
    while stack:
        u = stack.pop()
        if u in seen:
            continue
        seen.add(u)
        if u.op is Ops.CALL:
            out.append(u)
        else:
            stack.extend(u.src)
    return out


class _Graph:
    """The CALLs of a body in topological order and the groups formed so far: what a cycle check walks."""

    def __init__(self, calls: list[UOp], strict: bool):
        self.calls, self.strict = calls, strict  # strict: reaches() never walks
        self.pos = {c: i for i, c in enumerate(calls)}
        self.group_of: dict[UOp, _Group] = {}
        self._deps: dict[UOp, list[UOp]] = {}

    def deps(self, call: UOp) -> list[UOp]:
        """The CALLs `call`'s arguments name directly (remembered)."""
        if (known := self._deps.get(call)) is None:
            known = self._deps[call] = _call_deps(*call.src[1:])
        return known

    def reaches(self, starts: list[UOp], group: _Group, walk: bool) -> bool:
        """Whether a member of `group` is among `starts` or what they read through other CALLs, a CALL of another
        group standing for all its members (those are one kernel). The walk stops at CALLs (and groups) that end
        before the group's first member: a group of such an early CALL that reaches past the first member is missed,
        so the groups are checked once formed (acyclic). Without `walk` (or strict), any CALL run after the first
        member counts: never a cycle, and kernels of one shape far apart in an unrolled loop stay apart (walking,
        an LSTMCell step's elementwise kernels merged in 70 variants to compile instead of 46)."""
        if self.strict or not walk:
            return any(self.pos[c] >= group.first for c in starts)
        members, seen, stack = set(group.calls), set(), list(starts)
        while stack:
            c = stack.pop()
            if c in members:
                return True
            g = self.group_of.get(c)
            key: object = c if g is None else g
            if key in seen or (self.pos[c] if g is None else g.last) < group.first:
                continue
            seen.add(key)
            for m in [c] if g is None else g.calls:
                stack.extend(self.deps(m))
        return False

    def acyclic(self) -> bool:
        """Whether the kernels, a group standing for its members, wait on each other in no cycle (Kahn's sort)."""
        group_of = self.group_of
        edges: dict[object, set[object]] = {}
        indegree: dict[object, int] = {group_of.get(c, c): 0 for c in self.calls}
        for c in self.calls:
            for d in self.deps(c):
                a, b = group_of.get(d, d), group_of.get(c, c)
                if a is not b and b not in (out := edges.setdefault(a, set())):
                    out.add(b)
                    indegree[b] += 1
        ready = [n for n, k in indegree.items() if k == 0]
        done = 0
        while ready:
            n = ready.pop()
            done += 1
            for m in edges.get(n, ()):
                indegree[m] -= 1
                if indegree[m] == 0:
                    ready.append(m)
        return done == len(indegree)


class _Group:
    """Calls to merge into one kernel, in run order, the positions of the first and the last in the body's
    topological order, and the memories its members write and read (`mem`: a placeholder's memory, one for arguments
    that alias)."""

    def __init__(self, call: UOp, k: _Kernel, graph: _Graph, mem: Callable[[UOp], object]):
        self.calls: list[UOp] = []
        self.kinds: list[Kind] = []
        self.ops, self.mem, self.first = 0, mem, graph.pos[call]
        self.outs: set[object] = set()
        self.reads: set[object] = set()
        self.inputs: set[UOp] = set()
        self.add(call, k, graph)

    def admits(self, call: UOp, k: _Kernel, graph: _Graph, max_ops: int) -> bool:
        """Whether `call` (of kernel `k`) can join: see the module doc."""
        if len(self.calls) >= MAX_MEMBERS or self.ops + k.ops > max_ops or not _mixable([*self.kinds, k.kind]):
            return False
        if len(self.inputs | set(call.src[2:])) > MAX_INPUTS:
            return False
        members = set(self.calls)
        if self.mem(call.src[1]) in self.outs | self.reads:
            return False
        if any(d in members for d in _call_deps(call.src[1])):  # its output waits for a member: ordered after it
            return False
        outside: list[UOp] = []
        for slot, a in enumerate(call.src[2:], start=1):
            deps = _call_deps(a)
            if inside := [d for d in deps if d in members]:
                if not (a.op is Ops.AFTER and a.src[1:] == tuple(inside) and len(inside) == 1):
                    return False
                if _base(inside[0].src[1]) is not a.src[0] or not _read_at(call.src[0], slot, k.idx):
                    return False
            elif self.mem(a) in self.outs:
                return False  # reads the old value of a buffer a member writes
            outside += [d for d in deps if d not in members]
        # a CALL it reads that is computed from a member (through other kernels): merged, the two would wait on each
        # other. (`call` is the newest CALL: no kernel reads it yet.)
        reduces = k.kind in REDUCING or not REDUCING.isdisjoint(self.kinds)
        return not graph.reaches(outside, self, walk=reduces)

    def add(self, call: UOp, k: _Kernel, graph: _Graph) -> None:
        self.calls.append(call)
        self.kinds.append(k.kind)
        self.last = graph.pos[call]
        graph.group_of[call] = self
        self.ops += k.ops
        self.outs.add(self.mem(call.src[1]))
        self.reads |= {self.mem(a) for a in call.src[2:]}
        self.inputs |= set(call.src[2:])


def _read_at(ast: UOp, slot: int, idx: UOp) -> bool:
    """Every use of PARAM `slot` in the kernel is an ungated LOAD of element `idx` (remembered per kernel AST, slot
    and index, as many as the schedules kept: merges ask again for every call of the same kernel)."""
    if (known := _reads_at.get((ast, slot, idx))) is None:
        known = _reads_at[(ast, slot, idx)] = _read_only_at(ast, slot, idx)
    return known


def _read_only_at(ast: UOp, slot: int, idx: UOp) -> bool:
    for u in ast.toposort():
        for s in u.src:
            if s.op is Ops.PARAM and s.arg.slot == slot:
                if u.op is not Ops.INDEX or u.src[1] is not idx:
                    return False
        if u.op is Ops.LOAD and u.src[0].op is Ops.INDEX:
            p = u.src[0].src[0]
            if p.op is Ops.PARAM and p.arg.slot == slot and len(u.src) != 1:
                return False
    return True


_reads_at: LRUCache[tuple[UOp, int, UOp], bool] = LRUCache(lambda: config.SCHEDULE_CACHE.value)


def _param(old: UOp, slot: int) -> UOp:
    return UOp(Ops.PARAM, old.src, ParamArg(slot, old.arg.dtype, old.arg.device, AddrSpace.GLOBAL))


def _merged_call(calls: list[UOp], kernels: dict[UOp, _Kernel]) -> UOp:
    """One CALL whose kernel stores what each of `calls` (their kernels: _kernel_of) stored (see the module doc)."""
    n = len(calls)
    inputs: list[UOp] = []
    slot_of: dict[UOp, int] = {}
    stored: dict[UOp, UOp] = {}  # a member's CALL -> its stored value in the merged kernel
    stores: list[UOp] = []
    ranges: tuple[UOp, ...] = ()
    next_id = 0  # a member's reduce loops get ids no other member's loops have (their bounds may be equal)
    for j, call in enumerate(calls):
        store, ranges = kernels[call].store, kernels[call].ranges
        ast, mapping = call.src[0], {}
        topo = ast.toposort()
        loops = [u for u in topo if u.op is Ops.RANGE and u not in ranges]
        if j:
            for u in loops:
                mapping[u] = UOp.range(u.src[0], next_id + u.arg.id, u.arg.axis_type)
        next_id += 1 + max((u.arg.id for u in topo if u.op is Ops.RANGE), default=0)
        params = {u.arg.slot: u for u in topo if u.op is Ops.PARAM and u.arg.name is None}
        for k, a in enumerate(call.src[2:], start=1):
            if k not in params:
                continue
            if a.op is Ops.AFTER and len(a.src) == 2 and a.src[1] in stored:  # another member's output: its value
                for u in topo:
                    if u.op is Ops.LOAD and u.src[0].op is Ops.INDEX and u.src[0].src[0] is params[k]:
                        mapping[u] = stored[a.src[1]]
                continue
            if a not in slot_of:
                slot_of[a] = n + len(inputs)
                inputs.append(a)
            mapping[params[k]] = _param(params[k], slot_of[a])
        if 0 in params:
            mapping[params[0]] = _param(params[0], j)
        value = store.src[1].substitute(mapping) if mapping else store.src[1]
        stored[call] = value
        stores.append(UOp(Ops.STORE, (store.src[0].substitute(mapping) if mapping else store.src[0], value)))
    body = UOp(Ops.GROUP, tuple(stores))
    for r in reversed(ranges):
        body = UOp(Ops.END, (body, r))
    first = calls[0].src[0].arg
    sink = UOp(Ops.SINK, (body,), KernelInfo(first.name, (), n))
    return UOp(Ops.CALL, (sink, *(c.src[1] for c in calls), *inputs))


def _ops(topo: list[UOp]) -> int:
    """A kernel's ALU ops (its nodes), a transcendental counting TRANSCENDENTAL_OPS (as rangeify counts a body)."""
    return sum(TRANSCENDENTAL_OPS if u.op in GroupOp.Transcendental else 1 for u in topo if u.op in GroupOp.ALU)


def _form_groups(
    calls: list[UOp],
    graph: _Graph,
    kernels: dict[UOp, _Kernel],
    mem: Callable[[UOp], object],
    max_ops: int,
) -> list[_Group]:
    """The groups of `calls` (in topological order), each joining the open group of its store's index, ranges,
    device and kind while that group admits it."""
    open_groups: dict[tuple, _Group] = {}
    groups: list[_Group] = []
    for call in calls:
        if (k := kernels.get(call)) is None:
            continue
        # bool outputs apart: their lanes stay scalar (isel vectorizes no bools), the others' would with them
        key = (
            k.store.src[0].src[0].arg.device,
            k.idx,
            k.ranges,
            bool(k.ranges) and k.store.src[1].dtype is dtypes.bool,
        )
        g = open_groups.get(key)
        if g is not None and g.admits(call, k, graph, max_ops):
            g.add(call, k, graph)
            continue
        g = open_groups[key] = _Group(call, k, graph, mem)
        groups.append(g)
    return groups


_UNSEEN = object()  # a kernel AST not yet looked at (None: looked at, not mergeable)


def merge_kernels(out: UOp, aliases: tuple[tuple[int, ...], ...], max_ops: int) -> UOp:
    """Merge the mergeable kernels under `out` (a rangeified body's TUPLE); see the module doc. `aliases`: the
    argument slots that name one buffer (alias_groups); a merged kernel has at most `max_ops` / MERGED_OPS_SHARE ALU
    ops (`max_ops`: the limit rangeify cuts bodies at, a transcendental counting TRANSCENDENTAL_OPS)."""
    group_of = {s: i for i, g in enumerate(aliases) for s in g}

    def mem(u: UOp) -> object:
        p = _base(u)
        return ("aliased", group_of[p.arg.slot]) if p.op is Ops.PARAM and p.arg.slot in group_of else p

    calls = [u for u in out.toposort(gate=lambda x: x.op is not Ops.SINK) if u.op is Ops.CALL]
    kernels: dict[UOp, _Kernel] = {}
    # what each kernel AST tells, once per AST: an unrolled loop runs the same few kernels on other buffers (an
    # LSTMCell step: 6k calls of about 100 ASTs)
    facts: dict[UOp, _Kernel | None] = {}
    for call in calls:
        if (k := facts.get(call.src[0], _UNSEEN)) is _UNSEEN:
            k = facts[call.src[0]] = _kernel_of(call)
        if k is not None:
            kernels[call] = k
    graph = _Graph(calls, strict=False)
    groups = _form_groups(calls, graph, kernels, mem, max_ops // MERGED_OPS_SHARE)
    if not graph.acyclic():  # (rare) groups that wait on each other through kernels of other groups
        graph = _Graph(calls, strict=True)
        groups = _form_groups(calls, graph, kernels, mem, max_ops // MERGED_OPS_SHARE)
    alias = {}
    for g in groups:
        if len(g.calls) > 1:
            merged = _merged_call(g.calls, kernels)
            alias.update({c: merged for c in g.calls})
    return _rebuild(out, alias) if alias else out


def _rebuild(root: UOp, alias: dict[UOp, UOp]) -> UOp:
    """root with each member CALL replaced by its merged CALL, whose arguments (built from the original graph) may
    name members of other groups: one walk, sources first, where a member stands for its merged CALL (the groups
    close no cycle, so this is a DAG). Kernel ASTs are kept as they are."""
    memo: dict[UOp, UOp] = {}
    stack: list[tuple[UOp, bool]] = [(root, False)]
    while stack:
        u, ready = stack.pop()
        if u in memo:
            continue
        v = alias.get(u, u)
        if v.op is Ops.SINK:
            memo[u] = v
        elif v is not u and v in memo:
            memo[u] = memo[v]
        elif ready:
            new_src = tuple(memo[s] for s in v.src)
            memo[v] = memo[u] = v if new_src == v.src else v.replace(src=new_src)
        else:
            stack.append((u, True))
            stack.extend((s, False) for s in v.src if s not in memo)
    return memo[root]
