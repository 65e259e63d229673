"""The command queue: a schedule's steps spread over one queue per device, synchronized where they share buffers.

In: a schedule's steps in dependency order, each (ast, buffers): a kernel writing its first KernelInfo.outputs
buffers (more than one: a merged kernel, pipeline/merge.py), or a copy (an `ast` LOAD) of buffers[1] into
buffers[0]. A step belongs to the queue of the device it writes (a copy to the destination's queue, as the spec's
notes put it).

Out: CommandQueue, per device a list of items: Exec(step), Sync (a point in this queue others wait for) and
Wait(sync) (do not go on before that point of another queue was reached). A step waits for the last write of
every buffer it reads or writes, and a write waits for the reads of that buffer since (a memory-planned buffer
is reused), each when it happened on another queue. Calling the queue runs every device's list on its own
thread (kernels release the GIL, so devices run side by side); a schedule on one device runs inline, in order.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from unigrad.helpers import record
from unigrad.ir.ops import Ops
from unigrad.ir.uop import UOp
from unigrad.pipeline.merge import kernel_outputs
from unigrad.runtime import Buffer

RunStep = Callable[[UOp, list[Buffer]], None]


@record(eq=False)
class Sync:
    """A point in `device`'s queue: every item before it has run once `done` is set."""

    device: str
    done: threading.Event


@record(frozen=True)
class Wait:
    sync: Sync


@record(frozen=True)
class Exec:
    ast: UOp
    bufs: list[Buffer]


Item = Exec | Sync | Wait


def _readers(ast: UOp, bufs: Sequence[Buffer]) -> Sequence[Buffer]:
    """The buffers a step reads: a copy its source; a kernel every argument (an in-place update reads its
    output; reading too many only adds waits)."""
    return bufs[1:2] if ast.op is Ops.LOAD else bufs


class CommandQueue:
    def __init__(self, steps: Sequence[tuple[UOp, list[Buffer]]]) -> None:
        self.queues: dict[str, list[Item]] = {}
        last_write: dict[int, tuple[str, int]] = {}  # buffer id -> (queue, its length after the write)
        reads: dict[int, list[tuple[str, int]]] = {}  # buffer id -> reads since that write
        syncs: dict[tuple[str, int], Sync] = {}
        waited: dict[str, set[int]] = {}  # the syncs each queue already waits for
        count: dict[str, int] = {}  # steps per queue

        def wait_for(device: str, point: tuple[str, int]) -> None:
            src, pos = point
            if src == device:
                return  # one queue runs in order
            if (sync := syncs.get(point)) is None:
                sync = syncs[point] = Sync(src, threading.Event())
                self.queues[src].insert(self._after_step(src, pos), sync)
            if id(sync) not in waited.setdefault(device, set()):
                waited[device].add(id(sync))
                self.queues[device].append(Wait(sync))

        for ast, bufs in steps:
            device = bufs[0].device
            self.queues.setdefault(device, [])
            outs = [id(b) for b in bufs[: kernel_outputs(ast)]]
            for b in _readers(ast, bufs):
                if (w := last_write.get(id(b))) is not None:
                    wait_for(device, w)
            for out in outs:
                for r in reads.get(out, ()):
                    wait_for(device, r)
                if (w := last_write.get(out)) is not None:
                    wait_for(device, w)
            self.queues[device].append(Exec(ast, bufs))
            count[device] = count.get(device, 0) + 1
            point = (device, count[device])
            for b in _readers(ast, bufs):
                reads.setdefault(id(b), []).append(point)
            for out in outs:
                last_write[out] = point
                reads[out] = []

    def _after_step(self, device: str, k: int) -> int:
        """The index in `device`'s queue just after its k-th step (before the waits of the step after it)."""
        seen = 0
        for i, it in enumerate(self.queues[device]):
            if isinstance(it, Exec):
                seen += 1
                if seen == k:
                    return i + 1
        raise AssertionError(f"queue {device} has fewer than {k} steps")

    def __call__(self, run: RunStep) -> None:
        """Run every queue, each on its own thread (the first on this one); re-raise the first error."""
        errors: list[BaseException] = []
        syncs = [it for q in self.queues.values() for it in q if isinstance(it, Sync)]

        def work(items: list[Item]) -> None:
            try:
                for it in items:
                    if isinstance(it, Exec):
                        run(it.ast, it.bufs)
                    elif isinstance(it, Sync):
                        it.done.set()
                    elif not errors:
                        it.sync.done.wait()
                    if errors:
                        return
            except BaseException as e:  # noqa: BLE001 - handed to the caller below
                errors.append(e)
                for s in syncs:  # nobody waits forever on a queue that stopped
                    s.done.set()

        queues = list(self.queues.values())
        threads = [threading.Thread(target=work, args=(q,), daemon=True) for q in queues[1:]]
        for t in threads:
            t.start()
        work(queues[0])
        for t in threads:
            t.join()
        if errors:
            raise errors[0]


def run_steps(steps: Sequence[tuple[UOp, list[Buffer]]], run: RunStep, inline: bool = False) -> None:
    """Run a schedule's steps: in order on this thread when they are all on one device (or `inline`), else
    through a CommandQueue."""
    if not steps:
        return
    first = steps[0][1][0].device
    if inline or all(bufs[0].device == first for _, bufs in steps):
        for ast, bufs in steps:
            run(ast, bufs)
        return
    CommandQueue(steps)(run)


def describe(q: CommandQueue) -> dict[str, list[str]]:
    """Each queue as names (tests, DEBUG): EXEC <kernel or COPY>, SYNC, WAIT <device>."""
    out: dict[str, list[str]] = {}
    for device, items in q.queues.items():
        names = []
        for it in items:
            if isinstance(it, Exec):
                names.append("COPY" if it.ast.op is Ops.LOAD else "EXEC")
            elif isinstance(it, Sync):
                names.append("SYNC")
            else:
                names.append(f"WAIT {it.sync.device}")
        out[device] = names
    return out
