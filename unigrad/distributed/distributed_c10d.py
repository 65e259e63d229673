"""torch.distributed's process groups and collectives, on MPI (Open MPI through mpi4py).

In: unigrad Tensors (one device each) on every rank of a process group. Out: the same tensors written in place with the
collective's result (all_reduce, broadcast, recv, ...), or None / a Work handle (async_op=True) whose wait() finishes
the op. The data moves through MPI's buffer protocol: a CPU tensor's own memory is handed to MPI (no copy; data small
enough for the check's packet is copied into it); another device's is copied out and back. The reductions are MPI's own
(ReduceOp.AVG: a SUM, then a division kernel; float16/bfloat16/fp8, for which MPI has no arithmetic: reduced in float32
and cast back by kernels).

The check (DIST_CHECK=1, the default, on a group of several ranks) and small data are one message: every
collective starts with ONE Allgather of a fixed-size packet per rank (the same size on every rank and for every op,
so MPI's counts match whatever the ranks passed): a header, the hash of the rank's signature (op, dtype, shape, root,
ReduceOp), then, where the op's data fits the group's inline bytes (2 KB on up to 4 ranks; see _HEADER_BYTES), the
data itself. Every rank compares every rank's hash: where they differ, every rank gathers the full signatures and
raises a DistError naming the op, the ranks and what each passed (a rank calling another op, passing another shape,
dtype, root or ReduceOp), instead of hanging or mixing data. Where they agree and the data travelled inline, every
rank finishes locally: all_reduce / reduce / reduce_scatter_tensor apply MPI's own reduction (Op.Reduce_local, its C
loop) to the gathered data in rank order (rank 0's op (rank 1's op (...))), the same on every rank, so every rank
gets the same bits; broadcast and scatter take the root's packet, the gathers every packet; a barrier is the
Allgather itself. Bigger data then moves by MPI's collective as without the check (the packet is a second round
trip, ~0.8 us on 2 ranks of one machine: noise from ~64 KB up). With DIST_CHECK=0 each op is MPI's collective alone.

A blocking collective (async_op=False, the default) is MPI's own blocking call (its latency is MPI's: no Python loop
polls it). A blocking all_reduce of a whole CPU tensor seen before by a collective is the latency path: its memory, its
signature's hash and the views its inline reduction reads are kept per tensor node, group and ReduceOp, so a small one
is the packet's Allgather on that memory's bytes and one Reduce_local per other rank, with little Python around them (on
2 ranks of a 2-core machine, 1 KB: ~1.7 us, about 2x mpi4py's one Allreduce, of which ~1.1 us are those two mpi4py
calls). An async one is started as MPI's nonblocking call, in program order (so every rank starts them in the same
order), and finished by one progress thread per process that waits for the async ones in order while the caller computes
(the all-reduce of a DDP bucket overlaps the rest of the step); one whose data travelled inline is complete when its
call returns. Timeouts (DIST_TIMEOUT seconds): an async op's wait() raises DistBackendError naming the op, the group and
the rank; a blocking call cannot be interrupted, so a watchdog thread that sees one in flight for longer prints that
DistBackendError with the caller's stack and aborts the job (as torch's NCCL watchdog tears the process down). An
uncaught exception on a rank of a job of several aborts the whole job (MPI_Abort): the survivors do not hang.

mpi4py is imported by init_process_group, never at import (importing it starts MPI).
"""

from __future__ import annotations

import datetime
from array import array as array_of
import enum
import os
import pickle
import queue
import sys
import threading
import time
import traceback
import weakref
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

import numpy as np

from unigrad import config
from unigrad.dtype import DType, dtypes
from unigrad.runtime import Device, to_numpy_dtype
from unigrad.runtime import realize as rt
from unigrad.tensor import Tensor, _assign_owner, _made, realize_readers

__all__ = [
    "Backend",
    "DistBackendError",
    "DistError",
    "GroupMember",
    "ProcessGroup",
    "ReduceOp",
    "Work",
    "all_gather",
    "all_gather_into_tensor",
    "all_gather_object",
    "all_reduce",
    "barrier",
    "broadcast",
    "broadcast_object_list",
    "destroy_process_group",
    "gather",
    "get_backend",
    "get_global_rank",
    "get_process_group_ranks",
    "get_rank",
    "get_world_size",
    "group",
    "init_process_group",
    "irecv",
    "is_available",
    "is_initialized",
    "is_mpi_available",
    "isend",
    "new_group",
    "recv",
    "reduce",
    "reduce_scatter_tensor",
    "scatter",
    "send",
]


class DistError(RuntimeError):
    """torch.distributed.DistError: a distributed operation failed."""


class DistBackendError(DistError):
    """torch.distributed.DistBackendError: the backend (MPI) failed or timed out."""


class ReduceOp(enum.Enum):
    """torch.distributed.ReduceOp: how all_reduce / reduce / reduce_scatter combine the ranks' values."""

    SUM = "sum"
    AVG = "avg"
    PRODUCT = "product"
    MIN = "min"
    MAX = "max"
    BAND = "band"
    BOR = "bor"
    BXOR = "bxor"

    # members are singletons: hashed by identity (Enum's hash of the name runs in Python, on every collective's
    # lookup of its MPI op)
    __hash__ = object.__hash__


class Backend(str):
    """torch.distributed.Backend: the backend's name. "mpi" is unigrad's; "gloo" (torch's CPU backend) is accepted
    and runs on MPI too; there is no CUDA backend (nccl)."""

    MPI = "mpi"
    GLOO = "gloo"
    NCCL = "nccl"
    UNDEFINED = "undefined"


# MPI's reduction per ReduceOp (AVG: a SUM, divided afterwards); bool tensors reduce logically, as torch's do
_MPI_OPS = {"sum": "SUM", "avg": "SUM", "product": "PROD", "min": "MIN", "max": "MAX", "band": "BAND", "bor": "BOR"}
_MPI_OPS["bxor"] = "BXOR"
_BOOL_OPS = {"sum": "LOR", "max": "LOR", "bor": "LOR", "product": "LAND", "min": "LAND", "band": "LAND"}
_BOOL_OPS["bxor"] = "LXOR"
_AVG = ReduceOp.AVG
_HALF_TYPES = (dtypes.float16, dtypes.bfloat16, dtypes.fp8e4m3, dtypes.fp8e5m2)
_DTYPES = dtypes.all()  # a dtype's code in a shape check
_POLL_S = 20e-6  # the progress thread's sleep between tests of an async op
_CHECK_DIMS = 8  # the dims a shape check compares one by one (longer shapes add a hash of the rest)
_HASH_MASK = (1 << 62) - 1  # a signature's hash: 62 bits, the same in every process
# The check's packet: the signature's hash (an int64), then up to a group's inline bytes of data (8-byte aligned).
# Inline bytes: 2 KB on up to 4 ranks, fewer on more (the gathered packets total at most 8 KB, so a big group's check
# stays small; at least 56 bytes: a few scalars). Open MPI's shared memory sends a message of up to 4 KB (its header
# included) eagerly: on a 2-core machine an Allgather of 2 ranks' packets took ~0.80 us at 1 KB, ~0.87 us at 2 KB,
# ~0.93 us just below 4 KB and ~4 us above, and an all_reduce of 4 KB through MPI ~1.4 us: 2 KB keeps the packet's
# cost to every larger collective low and sends the common small ones (scalars, biases, metrics) in the check itself.
_HEADER_BYTES = 8
_INLINE_MAX_BYTES = 2048
_GATHERED_MAX_BYTES = 8192
_INLINE_MIN_BYTES = 56
_get_ident = threading.get_ident
_WATCH_TICK_S = 1.0  # the watchdog's longest sleep between looks at the blocking call in flight
_OPS_CHECKED = (
    "all_reduce",
    "broadcast",
    "reduce",
    "all_gather",
    "all_gather_into_tensor",
    "reduce_scatter_tensor",
    "gather",
    "scatter",
    "barrier",
)
_OP_CODE = {op: i for i, op in enumerate(_OPS_CHECKED)}
_REDUCE_CODE = {op: i for i, op in enumerate(ReduceOp)}  # a reduction's ReduceOp in its signature
_CHECK_WHAT = {op: f"{op} (the shape check)" for op in _OPS_CHECKED}  # the watchdog's name of each check
_ALL_REDUCE_CHECK = _CHECK_WHAT["all_reduce"]
_DTYPE_CODE = {dt: i for i, dt in enumerate(_DTYPES)}


def _mpi() -> Any:
    """mpi4py's MPI module (importing it initializes MPI); a clear error where mpi4py or MPI is missing."""
    try:
        from mpi4py import MPI
    except ImportError as e:
        raise RuntimeError(
            "unigrad.distributed needs MPI and mpi4py: on Debian/Ubuntu `apt-get install openmpi-bin libopenmpi-dev`, "
            "then `pip install -e '.[test]'` (or `pip install mpi4py`)"
        ) from e
    return MPI


def is_available() -> bool:
    """Whether unigrad.distributed can run: mpi4py is importable (its MPI starts only at init_process_group)."""
    import importlib.util

    return importlib.util.find_spec("mpi4py") is not None


is_mpi_available = is_available


class ProcessGroup:
    """A set of ranks that run collectives together: an MPI communicator and the global ranks it holds (in its own
    rank order). `rank()` / `size()` are this process's rank in it and its size."""

    def __init__(self, comm: Any, ranks: Sequence[int], name: str) -> None:
        self.comm, self.ranks, self.name = comm, list(ranks), name
        self._rank, self._size = comm.Get_rank(), comm.Get_size()
        # the check's packets (see _exchange), gathered in place: every rank's in group rank order, this rank's in its
        # row. One set per group (its collectives are made by one thread at a time, in order: MPI's rule), so a check
        # allocates nothing. `_headers`: the packets' hashes (a strided view, rank i's at [i]); `_gather`: the
        # packets as mpi4py's buffer spec, made once (it parses a numpy array's buffer on every call, 0.1 us)
        self._inline = _inline_bytes(self._size)
        packet = _HEADER_BYTES + self._inline
        self._packets = np.zeros((self._size, packet), np.uint8)
        raw = memoryview(self._packets).cast("B")
        self._headers = raw.cast("q")[:: packet // 8]
        self._gather = [raw, packet, _mpi().BYTE]
        self._mpi_in_place = _mpi().IN_PLACE  # (without _state.MPI's lookups: the latency path's Allgather)

    def rank(self) -> int:
        return self._rank

    def size(self) -> int:
        return self._size

    def __repr__(self) -> str:
        return f"<ProcessGroup {self.name} ranks={self.ranks}>"


def _inline_bytes(size: int) -> int:
    """The data a group of `size` ranks sends in its check's packets (see _HEADER_BYTES), a multiple of 8."""
    return min(_INLINE_MAX_BYTES, max(_INLINE_MIN_BYTES, _GATHERED_MAX_BYTES // size)) // 8 * 8


class GroupMember:
    """torch's GroupMember: WORLD is the default group once initialized; NON_GROUP_MEMBER is what new_group returns
    to a rank outside the new group (collectives on it do nothing there)."""

    WORLD: ProcessGroup | None = None
    NON_GROUP_MEMBER = object()


group = GroupMember  # torch.distributed.group.WORLD


class _State:
    """The process's distributed state: the default group, the backend, the timeout, the progress and watchdog
    threads, mpi4py's MPI module (once started)."""

    def __init__(self) -> None:
        self.world: ProcessGroup | None = None
        self.backend = ""
        self.timeout = 0.0
        self.groups: list[ProcessGroup] = []
        self.progress: _Progress | None = None
        self.watchdog: _Watchdog | None = None
        self.excepthook: Any = None
        self.MPI: Any = None


_state = _State()


def is_initialized() -> bool:
    return _state.world is not None


def _world() -> ProcessGroup:
    if _state.world is None:
        raise RuntimeError(
            "Default process group has not been initialized, please make sure to call init_process_group "
            "(unigrad.distributed.init_process_group(backend='mpi'), in a program launched by mpirun)"
        )
    return _state.world


def _abort_on_exception(kind: type, value: BaseException, tb: Any) -> None:
    """sys.excepthook of a rank of several: print the error, then abort the whole job (the others would wait for this
    rank in their next collective)."""
    traceback.print_exception(kind, value, tb)
    rank = _state.world.ranks[_state.world.rank()] if _state.world is not None else "?"
    print(f"unigrad.distributed: rank {rank} raised {kind.__name__}; aborting the job", file=sys.stderr, flush=True)
    _mpi().COMM_WORLD.Abort(1)


def init_process_group(
    backend: str | None = None,
    init_method: str | None = None,
    timeout: datetime.timedelta | None = None,
    world_size: int = -1,
    rank: int = -1,
    store: Any = None,
    group_name: str = "",
    pg_options: Any = None,
    device_id: Any = None,
) -> None:
    """Join the job's default process group. The ranks and the world size come from MPI's launcher (mpirun); a
    `world_size`/`rank` given (or torch's WORLD_SIZE/RANK variables) must agree with it. backend: "mpi" (None and
    torch's CPU "gloo" mean it too). timeout: how long a collective waits for the other ranks (default DIST_TIMEOUT)."""
    if _state.world is not None:
        raise RuntimeError("trying to initialize the default process group twice!")
    name = (backend or "mpi").lower()
    if name == Backend.NCCL:
        raise RuntimeError("init_process_group: backend 'nccl' needs CUDA devices; unigrad's backend is 'mpi'")
    if name not in (Backend.MPI, Backend.GLOO):
        raise ValueError(f"init_process_group: unknown backend {backend!r}; unigrad.distributed runs on 'mpi'")
    if init_method not in (None, "env://") and not str(init_method).startswith(("tcp://", "file://")):
        raise ValueError(f"init_process_group: init_method {init_method!r} is not a URL (env://, tcp://, file://)")
    MPI = _mpi()
    comm = MPI.COMM_WORLD.Dup()
    size, me = comm.Get_size(), comm.Get_rank()
    env_size, env_rank = int(os.environ.get("WORLD_SIZE", -1)), int(os.environ.get("RANK", -1))
    for what, given, actual in (("world_size", world_size, size), ("rank", rank, me)):
        env = env_size if what == "world_size" else env_rank
        if given not in (-1, actual) or (given == -1 and env not in (-1, actual)):
            raise ValueError(
                f"init_process_group: {what}={given if given != -1 else env} but MPI started {size} process(es) and "
                f"this is rank {me}: launch with `mpirun -np N python prog.py` or `python -m unigrad.distributed.run "
                "-n N prog.py`"
            )
    _state.world = GroupMember.WORLD = ProcessGroup(comm, range(size), "WORLD")
    _state.backend = name
    _state.timeout = timeout.total_seconds() if timeout is not None else float(config.DIST_TIMEOUT.value)
    _state.progress = _Progress()
    _state.watchdog = _Watchdog(_state.timeout)
    _state.MPI = MPI
    if size > 1 and _state.excepthook is None:
        _state.excepthook, sys.excepthook = sys.excepthook, _abort_on_exception


def destroy_process_group(group: ProcessGroup | None = None) -> None:
    """Leave a group (default: all of them; the process may init_process_group again afterwards)."""
    if group is not None and group is not _state.world:
        if group in _state.groups:
            _state.groups.remove(group)
            group.comm.Free()
        return
    world = _world()
    if _state.progress is not None:
        _state.progress.stop()
    if _state.watchdog is not None:
        _state.watchdog.stop()
    for g in _state.groups:
        g.comm.Free()
    world.comm.Free()
    _state.world = GroupMember.WORLD = None
    _state.groups, _state.progress, _state.watchdog = [], None, None
    if _state.excepthook is not None:
        sys.excepthook, _state.excepthook = _state.excepthook, None


def _group(g: ProcessGroup | None) -> ProcessGroup | None:
    """The group an op runs on (default: WORLD); None where this rank is not a member."""
    if g is None and _state.world is not None:  # the common case first: every collective asks
        return _state.world
    world = _world()
    if g is None or g is GroupMember.WORLD:
        return world
    if g is GroupMember.NON_GROUP_MEMBER:
        return None
    if not isinstance(g, ProcessGroup):
        raise TypeError(f"group: expected a ProcessGroup (from new_group) or None, got {g!r}")
    return g


def get_rank(group: ProcessGroup | None = None) -> int:
    """This process's rank in the group (default WORLD); -1 where it is not a member (as torch)."""
    g = _group(group)
    return -1 if g is None else g.rank()


def get_world_size(group: ProcessGroup | None = None) -> int:
    """The number of ranks in the group (default WORLD); -1 where this rank is not a member (as torch)."""
    g = _group(group)
    return -1 if g is None else g.size()


def get_backend(group: ProcessGroup | None = None) -> str:
    _world()
    return _state.backend


def get_process_group_ranks(group: ProcessGroup) -> list[int]:
    """The global ranks of a group, in its rank order."""
    g = _group(group)
    if g is None:
        raise ValueError("get_process_group_ranks: this rank is not in the group")
    return list(g.ranks)


def get_global_rank(group: ProcessGroup, group_rank: int) -> int:
    ranks = get_process_group_ranks(group)
    if not 0 <= group_rank < len(ranks):
        raise ValueError(f"get_global_rank: group rank {group_rank} is not in [0, {len(ranks)})")
    return ranks[group_rank]


def new_group(ranks: Sequence[int] | None = None, timeout: Any = None, backend: str | None = None, **kw: Any) -> Any:
    """A group of some ranks (every rank of WORLD must call it, with the same ranks, as in torch). Returns the group
    on its members and GroupMember.NON_GROUP_MEMBER on the others."""
    world = _world()
    members = sorted(set(range(world.size()) if ranks is None else ranks))
    if any(not isinstance(r, int) or not 0 <= r < world.size() for r in members):
        raise ValueError(f"new_group: ranks must be ints in [0, {world.size()}), got {ranks!r}")
    comm = world.comm.Create(world.comm.Get_group().Incl(members))
    if comm == _mpi().COMM_NULL:
        return GroupMember.NON_GROUP_MEMBER
    g = ProcessGroup(comm, members, f"group{len(_state.groups) + 1}")
    _state.groups.append(g)
    return g


def _group_rank(g: ProcessGroup, global_rank: int, what: str) -> int:
    if global_rank not in g.ranks:
        raise ValueError(f"{what}: rank {global_rank} is not in the group (its global ranks: {g.ranks})")
    return g.ranks.index(global_rank)


# ---------------------------------------------------------------------------------------------- work and progress
def _describe(what: str, g: ProcessGroup) -> str:
    return f"{what} on {g.name} (global ranks {g.ranks}), rank {g.rank()}"


def _timeout_error(what: str, g: ProcessGroup, seconds: float) -> DistBackendError:
    return DistBackendError(
        f"{_describe(what, g)}: not completed after {seconds:g} s (DIST_TIMEOUT): a rank of the group has not joined "
        "it: it died or exited, is stuck, or called the group's collectives in another order"
    )


class Work:
    """torch's Work: an async op's handle. wait() finishes it and returns True; is_completed() asks without waiting;
    result() is its output tensors. The progress thread tests the op's requests while the caller computes; a wait()
    without a timeout that finds the op unfinished takes the requests over and waits in MPI's blocking call (no thread
    handoff, which costs up to the interpreter's 5 ms switch interval while the caller runs Python), watched by the
    watchdog as a blocking collective; wait(timeout=) instead raises DistBackendError after that many seconds."""

    def __init__(self, op: str, g: ProcessGroup, requests: list[Any], keep: Any, finish: Callable[[], None] | None):
        self.op, self.group, self.requests, self.keep, self._finish = op, g, requests, keep, finish
        self.outputs: list[Tensor] = []
        self._done = threading.Event()  # set once the requests completed (or failed)
        self._testing = threading.Lock()  # held by the thread testing or waiting for the requests
        self._taken = False  # the caller's wait() waits for the requests itself: the progress thread leaves them
        self._finished = False
        self._error: BaseException | None = None

    def wait(self, timeout: datetime.timedelta | float | None = None) -> bool:
        if not self._finished:
            limit = timeout.total_seconds() if isinstance(timeout, datetime.timedelta) else timeout
            if limit is None and not self._done.is_set():
                self._taken = True
                with self._testing:  # the progress thread is out of its test and will not test these again
                    if not self._done.is_set():
                        try:
                            _blocking(self.op, self.group, _state.MPI.Request.Waitall, self.requests)
                        except BaseException as e:  # noqa: BLE001 - reported below, as the progress thread's are
                            self._error = e
                        self._done.set()
            seconds = _state.timeout if limit is None else limit
            if not self._done.wait(seconds):
                raise _timeout_error(self.op, self.group, seconds)
            if self._error is not None:
                raise DistBackendError(f"{_describe(self.op, self.group)}: {self._error}") from self._error
            self._finished = True
            self.keep = None
            if self._finish is not None:
                self._finish()
        return True

    def is_completed(self) -> bool:
        return self._finished or self._done.is_set()

    def is_success(self) -> bool:
        return self.is_completed() and self._error is None

    def exception(self) -> BaseException | None:
        return self._error

    def result(self) -> list[Tensor]:
        return self.outputs


class _Progress:
    """One thread per process that waits, in order, for the requests of async ops: MPI progresses them (shared memory
    copies, network transfers) inside its wait while the caller goes on computing."""

    def __init__(self) -> None:
        self.todo: queue.SimpleQueue[Work | None] = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._loop, name="unigrad.distributed progress", daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        MPI = _mpi()
        while (work := self.todo.get()) is not None:
            # polled, sleeping between tests: MPI's own wait spins, and on a machine with a core per rank that
            # spinning thread takes the core from the rank's kernels (each test moves the transfer on); a work whose
            # caller took it over (Work.wait) is left to the caller
            while not work._taken:
                with work._testing:
                    if work._taken or work._done.is_set():
                        break
                    try:
                        if MPI.Request.Testall(work.requests):
                            work._done.set()
                            break
                    except BaseException as e:  # noqa: BLE001 - handed to the waiting thread
                        work._error = e
                        work._done.set()
                        break
                time.sleep(_POLL_S)

    def submit(self, work: Work) -> None:
        self.todo.put(work)

    def stop(self) -> None:
        self.todo.put(None)
        self.thread.join(timeout=1.0)


class _Watchdog:
    """One thread per process that watches the blocking MPI call in flight (`_blocking` names it in `op`, a new tuple
    per call): one still in flight `timeout` seconds after the watchdog first saw it prints a DistBackendError naming
    the op, the group and the rank, with the calling thread's stack, and aborts the job (a blocking MPI call cannot be
    interrupted; the others would wait as long). It sleeps between looks (a tick of timeout/8, at most 1 s), so the
    caller pays a tuple and two attribute writes per call and the error comes within timeout + 2 ticks. It watches one
    call per process: where several threads make blocking calls at once, the latest one started."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        # (what, group, the calling thread's id) while in flight: a new tuple per call (the watchdog holds the one it
        # saw last, so the next call's is another object)
        self.op: tuple[str, ProcessGroup, int] | None = None
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, name="unigrad.distributed watchdog", daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        tick = min(_WATCH_TICK_S, max(0.01, self.timeout / 8))
        seen, since = None, 0.0
        while not self._stop.wait(tick):
            op = self.op
            if op is None:
                continue
            now = time.monotonic()
            if op is not seen:  # a new call in flight: its clock starts now
                seen, since = op, now
            elif now - since >= self.timeout:
                self._fire(*op)

    def _fire(self, what: str, g: ProcessGroup, ident: int) -> None:
        frame = sys._current_frames().get(ident)
        if frame is not None:
            print("Traceback of the blocked call (most recent call last):", file=sys.stderr)
            traceback.print_stack(frame, file=sys.stderr)
        rank = g.ranks[g.rank()]
        print(f"DistBackendError: {_timeout_error(what, g, self.timeout)}", file=sys.stderr)
        print(
            f"unigrad.distributed: rank {rank}: DistBackendError in a blocking collective (the watchdog); "
            "aborting the job",
            file=sys.stderr,
            flush=True,
        )
        _state.MPI.COMM_WORLD.Abort(1)

    def stop(self) -> None:
        self._stop.set()
        self.thread.join(timeout=_WATCH_TICK_S + 1.0)


def _blocking(what: str, g: ProcessGroup, call: Callable[..., Any], *args: Any, **kw: Any) -> Any:
    """MPI's blocking `call(*args, **kw)`, watched by the watchdog (DIST_TIMEOUT)."""
    dog = _state.watchdog
    assert dog is not None, "unigrad.distributed: a collective after destroy_process_group"
    dog.op = (what, g, _get_ident())
    try:
        return call(*args, **kw)
    finally:
        dog.op = None


def _allreduce_in_place(what: str, g: ProcessGroup, buf: Any, mpi_op: Any) -> None:
    """MPI's blocking Allreduce of `buf` in place on g, watched: `_blocking` without its argument packing (all_reduce's
    latency path without the check or beyond the check's packets)."""
    dog = _state.watchdog
    assert dog is not None, "unigrad.distributed: a collective after destroy_process_group"
    dog.op = (what, g, _get_ident())
    try:
        g.comm.Allreduce(_state.MPI.IN_PLACE, buf, mpi_op)
    finally:
        dog.op = None


def _collective(
    what: str,
    g: ProcessGroup,
    method: str,
    args: tuple,
    keep: Any,
    finish: Callable[[], None] | None,
    outputs: list[Tensor],
    async_op: bool,
    **kw: Any,
) -> Work | None:
    """Run MPI's collective `method` (e.g. "Allreduce") on g's communicator: blocking, then `finish()` (async_op
    False), or its nonblocking twin ("Iallreduce") handed to the progress thread as a Work whose wait() finishes it."""
    if not async_op:
        _blocking(what, g, getattr(g.comm, method), *args, **kw)
        if finish is not None:
            finish()
        return None
    req = getattr(g.comm, "I" + method[0].lower() + method[1:])(*args, **kw)
    work = Work(what, g, [req], keep, finish)
    work.outputs = outputs
    return _run(work, async_op=True)


def _run(work: Work, async_op: bool) -> Work | None:
    """An op just started: handed to the progress thread (async_op) or finished here."""
    if async_op:
        assert _state.progress is not None
        _state.progress.submit(work)
        return work
    work.wait()
    return None


# ---------------------------------------------------------------------------------------------- tensors as buffers
# A host-addressable buffer's memory as a typed numpy array, per BUFFER UOp: made once (the UOp keeps the buffer alive,
# so the array stays valid while the entry lives); a collective on the same tensor again skips the lookups.
_host_arrays: weakref.WeakKeyDictionary[Any, np.ndarray] = weakref.WeakKeyDictionary()


class _InPlace:
    """A whole realized tensor whose memory the host addresses (CPU): that memory as a flat typed numpy array MPI
    reads and writes in place, its dtype, and its all_reduce plans (one per group and ReduceOp). Made once per tensor
    UOp (a BUFFER, or a reshape of one: immutable, so always the same memory), so a collective on the same tensor
    again skips contiguous_view and the lookups (the readers are still realized first)."""

    __slots__ = ("uop", "array", "dtype", "mpi_reduces", "plan", "plans")

    def __init__(self, array: np.ndarray, t: Tensor) -> None:
        key = id(t.uop)

        def gone(_: Any) -> None:  # the UOp went: its entry leaves _in_place (another UOp's with its id stays)
            if (entry := _in_place.get(key)) is not None and entry.uop() is None:
                del _in_place[key]

        self.uop = weakref.ref(t.uop, gone)
        self.array, self.dtype = array, t.dtype
        self.mpi_reduces = t.dtype not in _HALF_TYPES  # MPI reduces it as it is (float16 and the like: through float32)
        self.plans: dict[tuple[ProcessGroup, ReduceOp], _ReducePlan] = {}
        self.plan: _ReducePlan | None = None  # the last one used (a loop all-reduces on one group with one op)


class _ReducePlan:
    """all_reduce's latency path for one kept tensor (_InPlace) on one group with one ReduceOp, made once: MPI's op,
    the signature's hash, and where the tensor fits the check's packets (`inline`) what its inline reduction compares,
    copies and reads: `want` (every rank's header as it must be), `src` (the tensor's bytes) into `mine` (this rank's
    packet), then `last` (the last rank's data; None on the last rank: its tensor holds it) into `src`, then each rank's
    data of `ins` (ranks n-2 .. 0, Reduce_local's buffer specs) reduced into `out` (the tensor): _reduce_rows' order
    without its lookups. Memoryviews, not numpy arrays: mpi4py and the copies read their buffers faster."""

    __slots__ = ("group", "op", "mpi_op", "reduce_local", "hash", "inline", "want", "src", "mine", "last", "ins", "out")

    def __init__(self, fast: _InPlace, g: ProcessGroup, op: ReduceOp, t: Tensor) -> None:
        self.group, self.op = g, op
        self.mpi_op = _mpi_op(op, fast.dtype, "all_reduce")
        self.reduce_local = self.mpi_op.Reduce_local
        self.hash = _signature_hash("all_reduce", t, -1, op)
        array = fast.array
        self.inline = g._size > 1 and array.nbytes <= g._inline
        if self.inline:
            rows = [memoryview(row) for row in g._packets[:, _HEADER_BYTES : _HEADER_BYTES + array.nbytes]]
            count, dt = array.size, _mpi_type(array.dtype)
            self.want = memoryview(array_of("q", [self.hash] * g._size))
            self.src = memoryview(array.view(np.uint8))
            self.mine = rows[g._rank]
            self.last = None if g._rank == g._size - 1 else rows[-1]
            self.ins = [[row, count, dt] for row in rows[-2::-1]]
            self.out = [self.src, count, dt]


# The kept tensors by the id of their UOp: a plain dict, as a WeakKeyDictionary's lookup makes a weakref each time (0.1
# us of all_reduce's latency path). An entry holds its UOp weakly and leaves when the UOp goes; a lookup (_kept) checks
# that the entry's UOp is the one asked about.
_in_place: dict[int, _InPlace] = {}


def _kept(uop: Any) -> _InPlace | None:
    """The _InPlace of a tensor's UOp, if kept."""
    fast = _in_place.get(id(uop))
    return fast if fast is not None and fast.uop() is uop else None


class _Host:
    """A tensor's values as a flat numpy array MPI reads and writes: the device memory itself where the host can
    address it (CPU), else a copy (written back by `commit`). `reduce_dtype` tensors (float16, bfloat16, fp8) go
    through a float32 copy made and cast back by kernels."""

    __slots__ = ("tensor", "writes", "widened", "whole", "view", "copied", "base", "array", "dtype")

    def __init__(self, t: Tensor, op: str, writes: bool, arith: bool = False) -> None:
        whole = _kept(t.uop) if isinstance(t, Tensor) else None
        # seen before, no write through another view pending, and MPI's arithmetic takes its dtype where it reduces
        if whole is not None and not _assign_owner and (whole.mpi_reduces or not arith):
            if writes:
                realize_readers(t)
            self.tensor, self.writes, self.widened, self.whole, self.view, self.copied = (
                t,
                writes,
                False,
                True,
                t,
                False,
            )
            self.base, self.array, self.dtype = None, whole.array, t.dtype  # base: only a copied array needs it
            return
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}: expected a unigrad Tensor, got {type(t).__name__}")
        if isinstance(t.device, tuple):
            raise ValueError(
                f"{op}: the tensor is on several devices {t.device}; a process's collectives take one-device tensors "
                "(collectives across the devices of one process are unigrad.api.collectives)"
            )
        self.tensor, self.writes = t, writes
        self.widened = arith and t.dtype in _HALF_TYPES
        work = t.float() if self.widened else t
        view = work.contiguous_view()
        self.whole = view is t  # t is a whole row-major buffer: MPI writes it directly
        self.view = view
        if writes:
            realize_readers(view)
        base = rt._base(view.uop)
        array = _host_arrays.get(base)
        self.copied = array is None
        if array is None:
            buf = rt.buffers[base]
            allocator = Device[buf.device].allocator
            raw = allocator.host_view(buf.handle, buf.nbytes)
            self.copied = raw is None
            if raw is None:
                array = allocator.copyout(buf.handle, buf.dtype, buf.size)
            else:
                array = _host_arrays[base] = raw.view(to_numpy_dtype(buf.dtype))
        if self.whole and not self.copied and not self.widened:
            _in_place[id(t.uop)] = _InPlace(array, t)
        self.base, self.array = base, array
        self.dtype: DType = view.dtype

    @property
    def bytes(self) -> np.ndarray:
        return self.array.view(np.uint8)

    def commit(self) -> None:
        """After MPI wrote the array: the values into the tensor (copied back; cast back; written through a view)."""
        if not self.writes:
            return
        if self.copied:
            buf = rt.buffers[self.base]
            Device[buf.device].allocator.copyin(buf.handle, self.array)
        if self.widened:
            self.tensor.assign(self.view.cast(self.tensor.dtype)).realize()
        elif not self.whole:
            self.tensor.assign(self.view).realize()


def _mpi_op(op: Any, dt: DType, what: str) -> Any:
    """MPI's reduction for a ReduceOp on a dtype (float16 and the like reduce in float32), or a TypeError."""
    found = _mpi_ops.get((op, dt)) if isinstance(op, ReduceOp) else None
    if found is None:
        found = _find_mpi_op(op, dtypes.float32 if dt in _HALF_TYPES else dt, what)  # raises where there is none
        _mpi_ops[(op, dt)] = found
    return found


_mpi_ops: dict[tuple[Any, DType], Any] = {}


def _find_mpi_op(op: Any, dt: DType, what: str) -> Any:
    if not isinstance(op, ReduceOp):
        raise TypeError(f"{what}: op must be a ReduceOp (ReduceOp.SUM, AVG, PRODUCT, MIN, MAX, ...), got {op!r}")
    if dt is dtypes.bool:
        if op is ReduceOp.AVG:
            raise TypeError(f"{what}: ReduceOp.AVG of a bool tensor")
        return getattr(_mpi(), _BOOL_OPS[op.value])
    if op in (ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR) and dt.is_float:
        raise TypeError(f"{what}: the bitwise {op.name} of a {dt} tensor")
    if op is ReduceOp.AVG and not dt.is_float:
        raise TypeError(f"{what}: ReduceOp.AVG of an integer tensor ({dt}); use SUM and divide")
    return getattr(_mpi(), _MPI_OPS[op.value])


def _mpi_type(dt: np.dtype) -> Any:
    """MPI's predefined datatype of a numpy dtype (a reduction's elements in Reduce_local)."""
    found = _mpi_types.get(dt)
    if found is None:
        found = _mpi_types[dt] = _state.MPI.Datatype.fromcode(dt.char)
    return found


_mpi_types: dict[np.dtype, Any] = {}


def _signature(op: str, t: Tensor | None, root: int, reduce_op: ReduceOp | None) -> np.ndarray:
    """What a rank passes to a collective, as int64s every rank compares: op, dtype, ndim, root, reduce op, dims."""
    sig = np.full(6 + _CHECK_DIMS, -1, np.int64)
    sig[0] = _OP_CODE[op]
    sig[3] = root
    sig[5] = -1 if reduce_op is None else _REDUCE_CODE[reduce_op]
    if t is not None:
        shape = tuple(int(s) for s in t.shape)
        sig[1] = _DTYPE_CODE[t.dtype]
        sig[2] = len(shape)
        sig[4] = hash(shape[_CHECK_DIMS:]) & _HASH_MASK
        sig[6 : 6 + min(len(shape), _CHECK_DIMS)] = shape[:_CHECK_DIMS]
    return sig


def _show(sig: np.ndarray) -> str:
    """A signature as the error shows it: `all_reduce float32 (3, 4) SUM`, with the root where the op has one."""
    out = _OPS_CHECKED[int(sig[0])]
    if sig[2] >= 0:
        shape = tuple(int(d) for d in sig[6 : 6 + min(int(sig[2]), _CHECK_DIMS)])
        out += f" {_DTYPES[int(sig[1])].name} {shape}{'...' if sig[2] > _CHECK_DIMS else ''}"
    out += f" {list(ReduceOp)[int(sig[5])].name}" if sig[5] >= 0 else ""
    return out + (f" root {int(sig[3])}" if sig[3] >= 0 else "")


def _checked(g: ProcessGroup) -> bool:
    """Whether g's collectives start with the check's exchange (DIST_CHECK, on a group of several ranks)."""
    return g._size > 1 and bool(config.DIST_CHECK.value)


def _signature_hash(op: str, t: Tensor | None, root: int, reduce_op: ReduceOp | None = None) -> int:
    """The hash of what a rank passes to a collective (op, dtype, shape, root, reduce op): the same in every process,
    as ints and tuples of ints hash alike everywhere (strings would not); non-negative."""
    reduced = -1 if reduce_op is None else _REDUCE_CODE[reduce_op]
    if t is None:
        return hash((_OP_CODE[op], root, reduced)) & _HASH_MASK
    shape = tuple(int(d) for d in t.shape)
    return hash((_OP_CODE[op], _DTYPE_CODE[t.dtype], shape, root, reduced)) & _HASH_MASK


def _exchange(
    op: str,
    g: ProcessGroup,
    t: Tensor | None,
    root: int,
    reduce_op: ReduceOp | None,
    nbytes: int,
    payload: Sequence[np.ndarray] = (),
    h: int | None = None,
) -> np.ndarray | None:
    """The check (DIST_CHECK, on a group of several ranks): ONE Allgather of a fixed-size packet per rank (the same
    size on every rank and for every op, so the counts always match, whatever the ranks passed): the signature's hash
    and, where the op's data (`nbytes`, a function of the signature) fits the group's inline bytes, the data itself
    (`payload`'s byte arrays one after another; none on a rank that sends none, as broadcast's non-roots). Every rank
    compares every rank's hash: where they differ, every rank raises the DistError (_disagree) naming the op, the ranks
    and what each passed. Where they agree, every rank passed the same signature, so the same nbytes: every rank
    returns every rank's data (a (ranks, nbytes) view of the packets, valid until the group's next collective) where
    it fitted, else None (the data collective follows). h: the signature's hash where the caller kept it."""
    if h is None:
        h = _signature_hash(op, t, root, reduce_op)
    g._headers[g._rank] = h
    inline = nbytes <= g._inline
    if inline and payload:
        mine, at = g._packets[g._rank], _HEADER_BYTES
        for part in payload:
            mine[at : at + part.size] = part
            at += part.size
    _gather_packets(_CHECK_WHAT[op], g)
    if g._headers.tolist().count(h) != g._size:
        _disagree(op, g, t, root, reduce_op)
    return g._packets[:, _HEADER_BYTES : _HEADER_BYTES + nbytes] if inline else None


def _gather_packets(what: str, g: ProcessGroup) -> None:
    """The check's Allgather of g's packets in place, watched (`_blocking` without its argument packing: this is the
    latency path)."""
    dog = _state.watchdog
    assert dog is not None, "unigrad.distributed: a collective after destroy_process_group"
    dog.op = (what, g, _get_ident())
    try:
        g.comm.Allgather(g._mpi_in_place, g._gather)
    finally:
        dog.op = None


def _disagree(op: str, g: ProcessGroup, t: Tensor | None, root: int, reduce_op: ReduceOp | None) -> NoReturn:
    """The ranks' hashes differ (every rank saw every hash, so every rank is here): gather the full signatures (a
    fixed size too) and raise the DistError naming what each rank passed."""
    mine = _signature(op, t, root, reduce_op)
    every = np.empty((g.size(), mine.size), np.int64)
    _blocking(_CHECK_WHAT[op], g, g.comm.Allgather, mine, every)
    lines = ", ".join(f"rank {g.ranks[i]}: {_show(s)}" for i, s in enumerate(every))
    raise DistError(f"{op}: the ranks of {g.name} disagree on the op or its tensor ({lines})")


def _reduce_rows(rows: np.ndarray, out: np.ndarray, mpi_op: Any) -> None:
    """out (a flat array, the data's dtype) becomes rows[0] op (rows[1] op (... op rows[-1])), rows being every rank's
    data as bytes: MPI's own reduction (Reduce_local, its C loop), every rank in the same order, so every rank gets
    the same bits."""
    count, dt = out.size, _mpi_type(out.dtype)
    out.view(np.uint8)[:] = rows[-1]
    for row in rows[-2::-1]:
        mpi_op.Reduce_local([row, count, dt], [out, count, dt])


def _done(
    what: str, g: ProcessGroup, finish: Callable[[], None] | None, outputs: list[Tensor], async_op: bool
) -> Work | None:
    """An op whose data travelled in the check's packets, already written: finished here (`finish`: written back,
    divided, ...); async_op: a Work already complete."""
    if finish is not None:
        finish()
    if not async_op:
        return None
    work = Work(what, g, [], None, None)
    work.outputs = outputs
    work._done.set()
    return work


# ---------------------------------------------------------------------------------------------- collectives
def _divide_after(host: _Host, n: int, later: Callable[[], None] | None = None) -> Callable[[], None]:
    def finish() -> None:
        host.commit()
        if later is not None:
            later()
        t = host.tensor
        t.assign(t / n).realize()

    return finish


def all_reduce(
    tensor: Tensor, op: ReduceOp = ReduceOp.SUM, group: ProcessGroup | None = None, async_op: bool = False
) -> Work | None:
    """Every rank's `tensor` becomes the op over all ranks' tensors (in place)."""
    g = _state.world if group is None else _group(group)  # (WORLD without _group's call: the common case)
    if g is None:  # not a member (or no init_process_group yet: _world raises)
        _world()
        return None
    if not async_op and isinstance(tensor, Tensor):
        # the latency path: a whole CPU tensor seen before (no write through another view pending), by its plan (made
        # once per group and op). Every lookup or call here is ~0.05 us of a ~1.7 us call, so the common case is
        # written out: _kept, _exchange and _reduce_rows by the plan, the Allgather watched as _gather_packets does
        uop = tensor.uop
        fast = _in_place.get(id(uop))
        # (_assign_owner's dict itself: WeakValueDictionary's len is a Python call; an entry pending removal only
        # sends this call down the general path)
        if fast is not None and fast.uop() is uop and fast.mpi_reduces and not _assign_owner.data:
            plan = fast.plan
            if plan is None or plan.group is not g or plan.op is not op:
                plan = fast.plan = _plan(fast, g, op, tensor)
            if _made:  # realize_readers' own first test, without its call (a loop of collectives makes no tensor)
                realize_readers(tensor)
            if plan.inline and config.DIST_CHECK.value:
                g._headers[g._rank] = plan.hash
                plan.mine[:] = plan.src
                dog = _state.watchdog  # (set: without init_process_group, _world or _group raised above)
                dog.op = (_ALL_REDUCE_CHECK, g, _get_ident())
                try:
                    g.comm.Allgather(g._mpi_in_place, g._gather)
                finally:
                    dog.op = None
                if g._headers != plan.want:
                    _disagree("all_reduce", g, tensor, -1, op)
                if plan.last is not None:
                    plan.src[:] = plan.last
                for spec in plan.ins:
                    plan.reduce_local(spec, plan.out)
            elif g._size > 1:  # (over one rank the op leaves the tensor as it is)
                if config.DIST_CHECK.value:
                    _exchange("all_reduce", g, tensor, -1, op, fast.array.nbytes, h=plan.hash)
                _allreduce_in_place("all_reduce", g, fast.array, plan.mpi_op)
            if op is _AVG:
                tensor.assign(tensor / g._size).realize()
            return None
    mpi_op = _mpi_op(op, tensor.dtype, "all_reduce")
    host = _Host(tensor, "all_reduce", writes=True, arith=True)
    finish = _divide_after(host, g._size) if op is ReduceOp.AVG else host.commit
    rows = _exchange("all_reduce", g, tensor, -1, op, host.array.nbytes, (host.bytes,)) if _checked(g) else None
    if rows is not None:
        _reduce_rows(rows, host.array, mpi_op)
        return _done("all_reduce", g, finish, [tensor], async_op)
    if not async_op:  # first seen, a view, another device, float16: the values through a host array, then back
        _allreduce_in_place("all_reduce", g, host.array, mpi_op)
        finish()
        return None
    args = (_state.MPI.IN_PLACE, host.array, mpi_op)
    return _collective("all_reduce", g, "Allreduce", args, host, finish, [tensor], async_op)


def _plan(fast: _InPlace, g: ProcessGroup, op: ReduceOp, t: Tensor) -> _ReducePlan:
    """The kept tensor's all_reduce plan for a group and op (made on first use)."""
    plan = fast.plans.get((g, op))
    if plan is None:
        plan = fast.plans[(g, op)] = _ReducePlan(fast, g, op, t)
    return plan


def broadcast(tensor: Tensor, src: int = 0, group: ProcessGroup | None = None, async_op: bool = False) -> Work | None:
    """Every rank's `tensor` becomes global rank src's (in place)."""
    g = _group(group)
    if g is None:
        return None
    root = _group_rank(g, src, "broadcast")
    mine = g.rank() == root
    host = _Host(tensor, "broadcast", writes=not mine)
    sent = (host.bytes,) if mine else ()
    rows = _exchange("broadcast", g, tensor, root, None, host.bytes.size, sent) if _checked(g) else None
    if rows is not None:
        if not mine:
            host.bytes[:] = rows[root]
        return _done("broadcast", g, host.commit, [tensor], async_op)
    return _collective("broadcast", g, "Bcast", (host.bytes,), host, host.commit, [tensor], async_op, root=root)


def reduce(
    tensor: Tensor, dst: int = 0, op: ReduceOp = ReduceOp.SUM, group: ProcessGroup | None = None, async_op: bool = False
) -> Work | None:
    """Global rank dst's `tensor` becomes the op over all ranks' tensors; the others' stay as they are."""
    g = _group(group)
    if g is None:
        return None
    root = _group_rank(g, dst, "reduce")
    mpi_op = _mpi_op(op, tensor.dtype, "reduce")
    mine = g.rank() == root
    host = _Host(tensor, "reduce", writes=mine, arith=True)
    finish = _divide_after(host, g.size()) if op is ReduceOp.AVG and mine else host.commit
    rows = _exchange("reduce", g, tensor, root, op, host.array.nbytes, (host.bytes,)) if _checked(g) else None
    if rows is not None:
        if mine:
            _reduce_rows(rows, host.array, mpi_op)
        return _done("reduce", g, finish, [tensor], async_op)
    args = (_state.MPI.IN_PLACE if mine else host.array, host.array if mine else None, mpi_op)
    return _collective("reduce", g, "Reduce", args, host, finish, [tensor], async_op, root=root)


def _same_as(ts: Sequence[Tensor], like: Tensor, op: str, what: str, n: int) -> None:
    if len(ts) != n:
        raise ValueError(f"{op}: {what} must hold {n} tensors (one per rank of the group), got {len(ts)}")
    for i, o in enumerate(ts):
        if not isinstance(o, Tensor) or o.shape != like.shape or o.dtype != like.dtype:
            got = f"{o.dtype} {o.shape}" if isinstance(o, Tensor) else type(o).__name__
            raise ValueError(f"{op}: {what}[{i}] is {got}; the input tensor is {like.dtype} {like.shape}")


def _scatter_rows(rows: np.ndarray, outs: Sequence[Tensor], op: str) -> None:
    """Write row i of `rows` (raw bytes) into outs[i], in place."""
    for row, o in zip(rows, outs):
        host = _Host(o, op, writes=True)
        host.bytes[:] = row
        host.commit()


def all_gather(
    tensor_list: list[Tensor], tensor: Tensor, group: ProcessGroup | None = None, async_op: bool = False
) -> Work | None:
    """tensor_list[i] becomes the `tensor` of the group's rank i (in place), on every rank."""
    g = _group(group)
    if g is None:
        return None
    _same_as(tensor_list, tensor, "all_gather", "tensor_list", g.size())
    host = _Host(tensor, "all_gather", writes=False)
    inline = _exchange("all_gather", g, tensor, -1, None, host.bytes.size, (host.bytes,)) if _checked(g) else None
    if inline is not None:
        _scatter_rows(inline, tensor_list, "all_gather")
        return _done("all_gather", g, None, tensor_list, async_op)
    rows = np.empty((g.size(), host.bytes.size), np.uint8)
    finish = lambda: _scatter_rows(rows, tensor_list, "all_gather")  # noqa: E731
    return _collective("all_gather", g, "Allgather", (host.bytes, rows), (host, rows), finish, tensor_list, async_op)


def all_gather_into_tensor(
    output_tensor: Tensor, input_tensor: Tensor, group: ProcessGroup | None = None, async_op: bool = False
) -> Work | None:
    """output_tensor (world_size times the input's first dim, or a new leading dim of world_size) becomes the
    ranks' inputs one after another, in group rank order."""
    g = _group(group)
    if g is None:
        return None
    _like(output_tensor, input_tensor, g.size(), "all_gather_into_tensor", "output_tensor", "input_tensor")
    src = _Host(input_tensor, "all_gather_into_tensor", writes=False)
    out = _Host(output_tensor, "all_gather_into_tensor", writes=True)
    nbytes = src.bytes.size
    rows = _exchange("all_gather_into_tensor", g, input_tensor, -1, None, nbytes, (src.bytes,)) if _checked(g) else None
    if rows is not None:
        out.bytes.reshape(g.size(), nbytes)[:] = rows
        return _done("all_gather_into_tensor", g, out.commit, [output_tensor], async_op)
    args = (src.bytes, out.bytes)
    return _collective(
        "all_gather_into_tensor", g, "Allgather", args, (src, out), out.commit, [output_tensor], async_op
    )


def _like(big: Tensor, small: Tensor, n: int, op: str, big_name: str, small_name: str) -> None:
    """big holds n of small, stacked (a new leading dim) or concatenated on dim 0, of small's dtype."""
    stacked = big.shape == (n, *small.shape)
    cat = len(big.shape) == len(small.shape) >= 1 and big.shape == (small.shape[0] * n, *small.shape[1:])
    if big.dtype != small.dtype or not (stacked or cat):
        raise ValueError(
            f"{op}: {big_name} ({big.dtype} {big.shape}) must be {n} times {small_name} ({small.dtype} {small.shape}) "
            "along dim 0 (or stacked on a new dim 0), of the same dtype"
        )


def reduce_scatter_tensor(
    output: Tensor,
    input: Tensor,
    op: ReduceOp = ReduceOp.SUM,
    group: ProcessGroup | None = None,
    async_op: bool = False,
) -> Work | None:
    """input holds world_size blocks (dim 0); `output` of rank i becomes the op over the ranks' block i."""
    g = _group(group)
    if g is None:
        return None
    _like(input, output, g.size(), "reduce_scatter_tensor", "input", "output")
    mpi_op = _mpi_op(op, output.dtype, "reduce_scatter_tensor")
    src = _Host(input, "reduce_scatter_tensor", writes=False, arith=True)
    out = _Host(output, "reduce_scatter_tensor", writes=True, arith=True)
    finish = _divide_after(out, g.size()) if op is ReduceOp.AVG else out.commit
    sent = (src.bytes,)
    rows = _exchange("reduce_scatter_tensor", g, input, -1, op, src.bytes.size, sent) if _checked(g) else None
    if rows is not None:  # this rank's block of every rank's input
        block = out.bytes.size
        _reduce_rows(rows[:, g.rank() * block : (g.rank() + 1) * block], out.array, mpi_op)
        return _done("reduce_scatter_tensor", g, finish, [output], async_op)
    args = (src.array, out.array, mpi_op)
    return _collective("reduce_scatter_tensor", g, "Reduce_scatter_block", args, (src, out), finish, [output], async_op)


def _rooted(
    g: ProcessGroup, op: str, tensor: Tensor, lst: list[Tensor] | None, list_name: str, root_rank: int, root_name: str
) -> tuple[int, bool]:
    """A rooted list collective's local checks (gather, scatter): the root's list holds one tensor like `tensor` per
    rank, other ranks pass none. (root's group rank, whether this rank is the root)."""
    root = _group_rank(g, root_rank, op)
    mine = g.rank() == root
    if mine:
        _same_as(lst or [], tensor, op, list_name, g.size())
    elif lst:
        raise ValueError(
            f"{op}: {list_name} is given on rank {g.ranks[g.rank()]}, which is not {root_name} ({root_rank})"
        )
    return root, mine


def gather(
    tensor: Tensor,
    gather_list: list[Tensor] | None = None,
    dst: int = 0,
    group: ProcessGroup | None = None,
    async_op: bool = False,
) -> Work | None:
    """On global rank dst, gather_list[i] becomes the `tensor` of the group's rank i; other ranks pass None."""
    g = _group(group)
    if g is None:
        return None
    root, mine = _rooted(g, "gather", tensor, gather_list, "gather_list", dst, "dst")
    host = _Host(tensor, "gather", writes=False)
    outs = list(gather_list or []) if mine else []
    inline = _exchange("gather", g, tensor, root, None, host.bytes.size, (host.bytes,)) if _checked(g) else None
    if inline is not None:
        _scatter_rows(inline, outs, "gather")
        return _done("gather", g, None, outs, async_op)
    rows = np.empty((g.size(), host.bytes.size), np.uint8) if mine else None
    finish = (lambda: _scatter_rows(rows, outs, "gather")) if mine else None
    return _collective("gather", g, "Gather", (host.bytes, rows), (host, rows), finish, outs, async_op, root=root)


def scatter(
    tensor: Tensor,
    scatter_list: list[Tensor] | None = None,
    src: int = 0,
    group: ProcessGroup | None = None,
    async_op: bool = False,
) -> Work | None:
    """Every rank's `tensor` becomes scatter_list[its group rank] of global rank src; other ranks pass None."""
    g = _group(group)
    if g is None:
        return None
    root, mine = _rooted(g, "scatter", tensor, scatter_list, "scatter_list", src, "src")
    out = _Host(tensor, "scatter", writes=True)
    parts = [_Host(t, "scatter", writes=False).bytes for t in scatter_list or []] if mine else []
    block = out.bytes.size
    inline = _exchange("scatter", g, tensor, root, None, g.size() * block, parts) if _checked(g) else None
    if inline is not None:  # this rank's block of the root's packet
        out.bytes[:] = inline[root, g.rank() * block : (g.rank() + 1) * block]
        return _done("scatter", g, out.commit, [tensor], async_op)
    rows = np.stack(parts) if mine else None
    return _collective(
        "scatter", g, "Scatter", (rows, out.bytes), (out, rows), out.commit, [tensor], async_op, root=root
    )


def barrier(group: ProcessGroup | None = None, async_op: bool = False, device_ids: Any = None) -> Work | None:
    """Wait until every rank of the group called barrier."""
    g = _group(group)
    if g is None:
        return None
    if _checked(g):  # the check's Allgather is a barrier: no rank leaves it before every rank entered it
        _exchange("barrier", g, None, -1, None, 0)
        return _done("barrier", g, None, [], async_op)
    return _collective("barrier", g, "Barrier", (), None, None, [], async_op)


# ---------------------------------------------------------------------------------------------- point to point
def _p2p(op: str, tensor: Tensor, peer: int | None, g: ProcessGroup, tag: int, async_op: bool) -> Work | int:
    """send (op "send") or receive `tensor` to/from global rank `peer` (a receive: None is any rank): a Work
    (async_op), else done here, returning the peer's global rank."""
    MPI = _state.MPI
    if peer is not None and not (isinstance(peer, int) and peer in g.ranks):
        raise ValueError(f"{op}: rank {peer!r} is not in the group (its global ranks: {g.ranks})")
    if peer is not None and peer == g.ranks[g.rank()]:
        raise ValueError(f"{op}: rank {peer} is this rank; {op} needs another rank")
    sending = op == "send"
    host = _Host(tensor, op, writes=not sending)
    what = f"{op} (peer {peer if peer is not None else 'any'}, tag {tag})"
    other = MPI.ANY_SOURCE if peer is None else g.ranks.index(peer)
    if not async_op:
        status = MPI.Status()
        if sending:
            _blocking(what, g, g.comm.Send, host.bytes, dest=other, tag=tag)
        else:
            _blocking(what, g, g.comm.Recv, host.bytes, source=other, tag=tag, status=status)
            host.commit()
        return peer if sending else g.ranks[status.Get_source()]
    if sending:
        req = g.comm.Isend(host.bytes, dest=other, tag=tag)
    else:
        req = g.comm.Irecv(host.bytes, source=other, tag=tag)
    work = Work(what, g, [req], host, host.commit)
    work.outputs = [tensor]
    return _run(work, async_op=True)


def isend(tensor: Tensor, dst: int, group: ProcessGroup | None = None, tag: int = 0) -> Work | None:
    """Send `tensor` to global rank dst; returns the Work (wait() before changing the tensor)."""
    g = _group(group)
    return None if g is None else _p2p("send", tensor, dst, g, tag, async_op=True)


def irecv(tensor: Tensor, src: int | None = None, group: ProcessGroup | None = None, tag: int = 0) -> Work | None:
    """Receive into `tensor` from global rank src (None: any); returns the Work."""
    g = _group(group)
    return None if g is None else _p2p("recv", tensor, src, g, tag, async_op=True)


def send(tensor: Tensor, dst: int, group: ProcessGroup | None = None, tag: int = 0) -> None:
    """Send `tensor` to global rank dst and wait until it left."""
    g = _group(group)
    if g is not None:
        _p2p("send", tensor, dst, g, tag, async_op=False)


def recv(tensor: Tensor, src: int | None = None, group: ProcessGroup | None = None, tag: int = 0) -> int:
    """Receive into `tensor` (in place) from global rank src (None: any rank); returns the sender's rank."""
    g = _group(group)
    return -1 if g is None else _p2p("recv", tensor, src, g, tag, async_op=False)


# ---------------------------------------------------------------------------------------------- Python objects
def all_gather_object(object_list: list[Any], obj: Any, group: ProcessGroup | None = None) -> None:
    """object_list[i] becomes the (picklable) obj of the group's rank i, on every rank."""
    g = _group(group)
    if g is None:
        return
    if len(object_list) != g.size():
        raise ValueError(f"all_gather_object: object_list must hold {g.size()} entries, got {len(object_list)}")
    mine = np.frombuffer(pickle.dumps(obj), np.uint8)
    sizes = np.empty(g.size(), np.int64)
    _blocking("all_gather_object", g, g.comm.Allgather, np.array([mine.size], np.int64), sizes)
    flat = np.empty(int(sizes.sum()), np.uint8)
    counts = (flat, (sizes, np.concatenate([[0], np.cumsum(sizes)[:-1]])))
    _blocking("all_gather_object", g, g.comm.Allgatherv, mine, counts)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    for i in range(g.size()):
        object_list[i] = pickle.loads(flat[offsets[i] : offsets[i + 1]].tobytes())


def broadcast_object_list(object_list: list[Any], src: int = 0, group: ProcessGroup | None = None, device: Any = None):
    """object_list's entries on every rank become those of global rank src (in place; picklable objects)."""
    g = _group(group)
    if g is None:
        return
    root = _group_rank(g, src, "broadcast_object_list")
    payload = np.frombuffer(pickle.dumps(list(object_list)), np.uint8) if g.rank() == root else None
    size = np.array([0 if payload is None else payload.size], np.int64)
    _blocking("broadcast_object_list", g, g.comm.Bcast, size, root=root)
    data = payload.copy() if payload is not None else np.empty(int(size[0]), np.uint8)
    _blocking("broadcast_object_list", g, g.comm.Bcast, data, root=root)
    got = pickle.loads(data.tobytes())
    if len(got) != len(object_list):
        raise ValueError(
            f"broadcast_object_list: rank {src} sent {len(got)} objects, this rank's list holds {len(object_list)}"
        )
    object_list[:] = got
