"""The command queue (runtime/queue.py): per-device queues with SYNC/WAIT where steps share buffers, run each on
its own thread, dependencies respected, errors handed back without a hang."""

import threading
import time

import numpy as np
import pytest

from unigrad import Tensor, dtypes
from unigrad.ir.args import LoadArg
from unigrad.ir.ops import Ops
from unigrad.ir.uop import UOp
from unigrad.runtime import Buffer
from unigrad.runtime.queue import CommandQueue, describe, run_steps

COPY = UOp(Ops.LOAD, (UOp.const(dtypes.float32, 0.0),), LoadArg("CPU:1"))


def kernel(name: str) -> UOp:
    return UOp(Ops.SINK, (), name)


def buf(device: str) -> Buffer:
    return Buffer(device, 4, dtypes.float32)


def test_copy_waits_for_its_source_and_the_reader_for_the_copy():
    a0, a1, b0 = buf("CPU:0"), buf("CPU:0"), buf("CPU:1")
    steps = [
        (kernel("k0"), [a0]),  # CPU:0 writes a0
        (COPY, [b0, a0]),  # CPU:1 copies it
        (kernel("k1"), [a1, a0]),  # CPU:0 reads a0 again: no wait (its own write)
        (kernel("k2"), [b0, b0]),  # CPU:1 in place on b0: after its own copy, no wait
    ]
    q = CommandQueue(steps)
    assert describe(q) == {"CPU:0": ["EXEC", "SYNC", "EXEC"], "CPU:1": ["WAIT CPU:0", "COPY", "EXEC"]}


def test_a_reused_buffer_waits_for_reads_on_other_queues():
    a, b = buf("CPU:0"), buf("CPU:1")
    steps = [
        (kernel("k0"), [a]),
        (COPY, [b, a]),  # CPU:1 reads a
        (kernel("k1"), [a]),  # CPU:0 overwrites a: must wait until the copy has read it
    ]
    q = CommandQueue(steps)
    assert describe(q) == {"CPU:0": ["EXEC", "SYNC", "WAIT CPU:1", "EXEC"], "CPU:1": ["WAIT CPU:0", "COPY", "SYNC"]}


def test_one_sync_serves_several_waits():
    a, b, c = buf("CPU:0"), buf("CPU:1"), buf("CPU:2")
    steps = [(kernel("k0"), [a]), (COPY, [b, a]), (COPY, [c, a])]
    q = CommandQueue(steps)
    assert describe(q)["CPU:0"] == ["EXEC", "SYNC"]
    assert describe(q)["CPU:1"] == ["WAIT CPU:0", "COPY"]
    assert describe(q)["CPU:2"] == ["WAIT CPU:0", "COPY"]


def test_runs_in_dependency_order_across_threads():
    """The writer sleeps: without the WAIT the copy on the other thread would run first."""
    a, b = buf("CPU:0"), buf("CPU:1")
    order, threads = [], set()
    lock = threading.Lock()

    def run(ast: UOp, bufs: list[Buffer]) -> None:
        if ast.arg == "slow":
            time.sleep(0.05)
        with lock:
            order.append("copy" if ast.op is Ops.LOAD else ast.arg)
            threads.add(threading.get_ident())

    CommandQueue([(kernel("slow"), [a]), (COPY, [b, a]), (kernel("after"), [b])])(run)
    assert order == ["slow", "copy", "after"]
    assert len(threads) == 2  # each device on its own thread


def test_independent_queues_overlap():
    a, b = buf("CPU:0"), buf("CPU:1")
    started = {}

    def run(ast: UOp, bufs: list[Buffer]) -> None:
        started[ast.arg] = time.perf_counter()
        time.sleep(0.1)

    t0 = time.perf_counter()
    CommandQueue([(kernel("x"), [a]), (kernel("y"), [b])])(run)
    assert abs(started["x"] - started["y"]) < 0.09  # side by side, not one after the other
    assert time.perf_counter() - t0 < 0.19


def test_an_error_on_one_queue_reaches_the_caller_without_a_hang():
    a, b = buf("CPU:0"), buf("CPU:1")

    def run(ast: UOp, bufs: list[Buffer]) -> None:
        if ast.arg == "bad":
            raise ValueError("kernel failed")

    with pytest.raises(ValueError, match="kernel failed"):
        CommandQueue([(kernel("bad"), [a]), (COPY, [b, a]), (kernel("z"), [b])])(run)


def test_one_device_runs_inline_in_order():
    a = buf("CPU:0")
    seen = []
    run_steps([(kernel("p"), [a]), (kernel("q"), [a])], lambda ast, bufs: seen.append((ast.arg, threading.get_ident())))
    assert [s[0] for s in seen] == ["p", "q"] and {s[1] for s in seen} == {threading.get_ident()}


@pytest.mark.parametrize("n", [2, 3])
def test_multi_device_realize_through_the_queue(n):
    devices = tuple(f"CPU:{i}" for i in range(n))
    x = np.random.default_rng(n).standard_normal((6 * n, 5)).astype(np.float32)
    t = Tensor(x).shard(devices, axis=0)
    out = (t.exp() * 2).sum(0)  # per-device kernels, then an all-reduce through copies
    np.testing.assert_allclose(out.numpy(), (np.exp(x) * 2).sum(0), rtol=1e-5)
