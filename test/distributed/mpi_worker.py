"""Run by test_distributed.py under mpirun: `python mpi_worker.py SCENARIO` on every rank. Each check compares
unigrad.distributed against a numpy reference every rank computes for itself (every rank's input is a function of
its rank), raises on a mismatch (the job aborts and the test fails) and prints `ok SCENARIO rank R` at the end."""

import sys
import time

import numpy as np

import unigrad.distributed as dist
import unigrad.torch as torch
from unigrad import Tensor, TinyJit, config, dtypes, nn
from unigrad.nn.parallel import DistributedDataParallel as DDP

OPS = {
    dist.ReduceOp.SUM: lambda xs: np.sum(xs, axis=0),
    dist.ReduceOp.PRODUCT: lambda xs: np.prod(xs, axis=0),
    dist.ReduceOp.MIN: lambda xs: np.min(xs, axis=0),
    dist.ReduceOp.MAX: lambda xs: np.max(xs, axis=0),
}
DTYPES = [
    dtypes.float32,
    dtypes.float64,
    dtypes.int32,
    dtypes.int64,
    dtypes.uint8,
    dtypes.int8,
    dtypes.float16,
    dtypes.bool,
]


def data(rank: int, shape: tuple[int, ...], dt: np.dtype, salt: int = 0) -> np.ndarray:
    """Rank `rank`'s input: small values (products of a few ranks stay exact; bools both ways), a function of rank
    and salt."""
    rng = np.random.default_rng(1000 * salt + rank)
    return rng.integers(0 if dt == np.bool_ else 1, 2 if dt == np.bool_ else 4, size=shape).astype(dt)


def check(name: str, got: np.ndarray, want: np.ndarray, tol: float = 0.0) -> None:
    if got.shape != want.shape or not np.allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol):
        raise AssertionError(f"rank {dist.get_rank()}: {name}: got {got.ravel()[:8]} want {want.ravel()[:8]}")


def collectives() -> None:
    r, n = dist.get_rank(), dist.get_world_size()
    shape = (3, 7)  # odd sizes
    alone = [dist.new_group([k]) for k in range(n)][r]  # this rank alone
    for i, dt in enumerate(DTYPES):
        npdt = np.dtype(dt.fmt)
        every = [data(k, shape, npdt, i) for k in range(n)]
        for op, ref in OPS.items():
            t = Tensor(every[r], dtype=dt)
            dist.all_reduce(t, op=op)
            check(f"all_reduce {op.name} {dt}", t.numpy(), ref(np.stack(every)).astype(npdt))
            # a tensor seen before (by an all_reduce over this rank alone, which leaves it as it is): the latency path
            kept = Tensor(every[r], dtype=dt).realize()
            dist.all_reduce(kept, op=op, group=alone)
            dist.all_reduce(kept, op=op)
            check(f"all_reduce {op.name} {dt} seen before", kept.numpy(), ref(np.stack(every)).astype(npdt))
        if dt.is_float:
            t = Tensor(every[r], dtype=dt)
            dist.all_reduce(t, op=dist.ReduceOp.AVG)
            check(f"all_reduce AVG {dt}", t.numpy(), np.mean(np.stack(every).astype(np.float64), 0), 1e-3)
        t = Tensor(every[r], dtype=dt)
        dist.broadcast(t, src=n - 1)
        check(f"broadcast {dt}", t.numpy(), every[n - 1])
        outs = [Tensor.zeros(*shape, dtype=dt) for _ in range(n)]
        dist.all_gather(outs, Tensor(every[r], dtype=dt))
        for k in range(n):
            check(f"all_gather {dt} [{k}]", outs[k].numpy(), every[k])
    bools = [np.arange(5) % (k + 2) == 0 for k in range(n)]
    t = Tensor(bools[r])
    dist.all_reduce(t, op=dist.ReduceOp.SUM)  # logical or, as torch
    check("all_reduce bool", t.numpy(), np.any(bools, axis=0))
    every = [data(k, (5,), np.float32, 77) for k in range(n)]
    for op, ref in [*OPS.items(), (dist.ReduceOp.AVG, lambda xs: np.mean(xs, axis=0))]:
        bf = Tensor(every[r]).cast(dtypes.bfloat16)
        dist.all_reduce(bf, op=op)
        check(f"all_reduce {op.name} bfloat16", bf.float().numpy(), ref(np.stack(every)), 1e-2)
    across_the_inline_bytes(r, n)
    # a view: a slice of a bigger tensor is written through, the rest untouched
    base = Tensor(np.arange(10, dtype=np.float32) + r)
    dist.all_reduce(base[2:5])
    want = np.arange(10, dtype=np.float32) + r
    want[2:5] = sum(np.arange(10, dtype=np.float32)[2:5] + k for k in range(n))
    check("all_reduce of a slice", base.numpy(), want)
    # a lazy tensor computed from the input keeps the value from before the collective
    x = Tensor(np.ones(4, np.float32) * (r + 1)).realize()
    y = x * 10
    dist.all_reduce(x)
    check("lazy reader before the write", y.numpy(), np.full(4, 10.0 * (r + 1)))
    in_place_again(r, n)
    # reduce, gather, scatter, reduce_scatter_tensor, all_gather_into_tensor
    every = [data(k, (5,), np.float32, 99) for k in range(n)]
    t = Tensor(every[r])
    dist.reduce(t, dst=0, op=dist.ReduceOp.MAX)
    check("reduce", t.numpy(), np.max(every, 0) if r == 0 else every[r])
    gl = [Tensor.zeros(5) for _ in range(n)] if r == n - 1 else None
    dist.gather(Tensor(every[r]), gl, dst=n - 1)
    for k in range(n if gl else 0):
        check(f"gather [{k}]", gl[k].numpy(), every[k])
    t = Tensor.zeros(5)
    dist.scatter(t, [Tensor(e) for e in every] if r == 0 else None, src=0)
    check("scatter", t.numpy(), every[r])
    big = [data(k, (2 * n, 3), np.float32, 7) for k in range(n)]
    out = Tensor.zeros(2, 3)
    dist.reduce_scatter_tensor(out, Tensor(big[r]))
    check("reduce_scatter_tensor", out.numpy(), np.sum(big, 0)[2 * r : 2 * r + 2])
    out = Tensor.zeros(n * 5)
    dist.all_gather_into_tensor(out, Tensor(every[r]))
    check("all_gather_into_tensor", out.numpy(), np.concatenate(every))
    # async handles: started together, finished in any order; a wait with a timeout on a finished op returns
    w = dist.all_reduce(Tensor.ones(2), async_op=True)
    assert w.wait(timeout=30.0) and w.is_success() and w.exception() is None
    ts = [Tensor(np.full(1000 + k, float(r + k), np.float32)) for k in range(3)]
    works = [dist.all_reduce(t, async_op=True) for t in ts]
    assert all(isinstance(w, dist.Work) for w in works)
    for k in (2, 0, 1):
        assert works[k].wait() is True and works[k].is_completed()
        check(
            f"async all_reduce {k}",
            works[k].result()[0].numpy(),
            np.full(1000 + k, float(sum(j + k for j in range(n)))),
        )
    dist.barrier()
    # objects
    objs = [None] * n
    dist.all_gather_object(objs, {"rank": r})
    assert objs == [{"rank": k} for k in range(n)], objs
    lst = [r, "x"] if r == 0 else [None, None]
    dist.broadcast_object_list(lst, src=0)
    assert lst == [0, "x"], lst
    # groups: the even ranks
    evens = list(range(0, n, 2))
    g = dist.new_group(evens)
    t = Tensor(np.full(3, float(r + 1), np.float32))
    res = dist.all_reduce(t, group=g)
    if r in evens:
        assert dist.get_rank(g) == evens.index(r) and dist.get_world_size(g) == len(evens)
        check("all_reduce on a group", t.numpy(), np.full(3, float(sum(k + 1 for k in evens))))
    else:
        assert res is None and dist.get_rank(g) == -1
        check("a non-member's tensor is untouched", t.numpy(), np.full(3, float(r + 1)))
    # point to point: a ring
    if n > 1:
        send = Tensor(np.full(4, float(r), np.float32))
        got = Tensor.zeros(4)
        sw = dist.isend(send, (r + 1) % n, tag=3)
        src = dist.recv(got, src=None, tag=3)
        sw.wait()
        assert src == (r - 1) % n, src
        check("send/recv ring", got.numpy(), np.full(4, float((r - 1) % n)))
    # an async op's wait(timeout=) raises DistBackendError (catchable) and the op can still finish: rank 1 sends
    # only after rank 0's first wait timed out (the barrier orders them)
    if n > 1:
        got = Tensor.zeros(4).contiguous().realize()
        if r == 0:
            w = dist.irecv(got, src=1, tag=9)
            try:
                w.wait(timeout=0.2)
                raise AssertionError("an async wait did not time out")
            except dist.DistBackendError as e:
                assert "recv" in str(e) and "not completed after 0.2 s" in str(e), e
            dist.barrier()
            assert w.wait() and w.is_completed()
            check("recv after a timed-out wait", got.numpy(), np.full(4, 7.0))
        else:
            dist.barrier()
            if r == 1:
                dist.send(Tensor(np.full(4, 7.0, np.float32)), dst=0, tag=9)
    # errors: the same on every rank, no hang
    if n > 1 and config.DIST_CHECK.value:
        try:
            dist.all_reduce(Tensor.ones(3 + r))
            raise AssertionError("mismatched shapes did not raise")
        except dist.DistError as e:
            assert "all_reduce" in str(e) and "rank 0: all_reduce float32 (3,)" in str(e) and "(4,)" in str(e), e
        try:
            if r == 0:
                dist.broadcast(Tensor.ones(2), src=0)
            else:
                dist.all_reduce(Tensor.ones(2))
            raise AssertionError("mismatched ops did not raise")
        except dist.DistError as e:
            assert "broadcast" in str(e) and "all_reduce" in str(e), e
        try:
            dist.all_reduce(Tensor.ones(2), op=dist.ReduceOp.SUM if r == 0 else dist.ReduceOp.MAX)
            raise AssertionError("mismatched reduce ops did not raise")
        except dist.DistError as e:
            assert "rank 0: all_reduce float32 (2,) SUM" in str(e) and "rank 1: all_reduce float32 (2,) MAX" in str(
                e
            ), e
    checked = n > 1 and config.DIST_CHECK.value
    if checked:  # one rank's tensor fits the check's packet, the others' do not: the error, not a hang
        small, big = dist.group.WORLD._inline // 4, 64 * dist.group.WORLD._inline
        shape = (small,) if r == 0 else (big,)
        for name, call in (
            ("all_reduce", lambda t: dist.all_reduce(t)),
            ("broadcast", lambda t: dist.broadcast(t, src=0)),
            ("all_gather", lambda t: dist.all_gather([Tensor.zeros(*shape) for _ in range(n)], t)),
        ):
            for seen in (False, True):
                t = Tensor.ones(*shape).contiguous().realize()
                if seen:
                    dist.all_reduce(t, group=alone)
                try:
                    call(t)
                    raise AssertionError(f"{name} of a small and a big tensor did not raise")
                except dist.DistError as e:
                    want = [f"rank 0: {name} float32 ({small},)", f"rank 1: {name} float32 ({big},)"]
                    assert all(w in str(e) for w in want), e
    for bad, err in (
        (lambda: dist.all_reduce(Tensor.ones(2), op="sum"), TypeError),
        (lambda: dist.broadcast(Tensor.ones(2), src=n), ValueError),
        (lambda: dist.all_reduce(Tensor.ones(2, dtype=dtypes.int32), op=dist.ReduceOp.AVG), TypeError),
        (lambda: dist.init_process_group("mpi"), RuntimeError),
    ):
        try:
            bad()
            raise AssertionError(f"{bad} did not raise")
        except err:
            pass


class CountingComm:
    """A communicator that records the names of the MPI calls made on it (a group's comm, swapped in by a test)."""

    def __init__(self, comm) -> None:
        self.comm, self.calls = comm, []

    def __getattr__(self, name: str):
        attr = getattr(self.comm, name)
        if not name[0].isupper() or not callable(attr):
            return attr

        def call(*args, **kw):
            self.calls.append(name)
            return attr(*args, **kw)

        return call


def mpi_calls(g, collective) -> list[str]:
    """The MPI calls `collective()` makes on group g's communicator."""
    real = g.comm
    g.comm = CountingComm(real)
    try:
        collective()
        return g.comm.calls
    finally:
        g.comm = real


def across_the_inline_bytes(r: int, n: int) -> None:
    """Every collective with data just within, just over and far over what the check's packet carries (the group's
    inline bytes): random floats, against numpy, every rank the same bits; the MPI calls each makes (with the check:
    one Allgather where the data fits, that and MPI's collective where it does not; without: the collective)."""
    world = dist.group.WORLD
    limit = world._inline
    checked = n > 1 and config.DIST_CHECK.value
    for count in (limit // 4 - 1, limit // 4, limit // 4 + 1, 16 * limit // 4):
        inline = checked and 4 * count <= limit
        every = [np.random.default_rng(100 * count + k).standard_normal(count).astype(np.float32) for k in range(n)]
        stacked = np.stack(every)
        for op in (dist.ReduceOp.SUM, dist.ReduceOp.AVG, dist.ReduceOp.MAX):
            want = {"SUM": np.sum, "AVG": np.mean, "MAX": np.max}[op.name](stacked.astype(np.float64), axis=0)
            first = Tensor(every[r]).realize()
            calls = mpi_calls(world, lambda t=first, op=op: dist.all_reduce(t, op=op))
            check(f"all_reduce {op.name} of {count}", first.numpy(), want, 1e-5)
            # seen by the first call, so the latency path now; its values are the same on every rank
            held = first.numpy()
            calls_again = mpi_calls(world, lambda t=first, op=op: dist.all_reduce(t, op=op))
            want_again = held.astype(np.float64) * (n if op is dist.ReduceOp.SUM else 1)
            check(f"all_reduce {op.name} of {count} seen before", first.numpy(), want_again, 1e-5)
            same = [None] * n
            dist.all_gather_object(same, (held.tobytes(), first.numpy().tobytes()))
            assert all(s == same[0] for s in same), f"all_reduce {op.name} of {count}: the ranks' results differ"
            if n > 1:
                expect = ["Allgather"] if inline else ["Allgather", "Allreduce"] if checked else ["Allreduce"]
                assert calls == expect and calls_again == expect, (count, op, calls, calls_again, expect)
        t = Tensor(every[r])
        dist.broadcast(t, src=n - 1)
        check(f"broadcast of {count}", t.numpy(), every[n - 1])
        t = Tensor(every[r])
        dist.reduce(t, dst=0, op=dist.ReduceOp.MIN)
        check(f"reduce of {count}", t.numpy(), stacked.min(0) if r == 0 else every[r])
        outs = [Tensor.zeros(count) for _ in range(n)]
        dist.all_gather(outs, Tensor(every[r]))
        for k in range(n):
            check(f"all_gather of {count} [{k}]", outs[k].numpy(), every[k])
        out = Tensor.zeros(n * count)
        dist.all_gather_into_tensor(out, Tensor(every[r]))
        check(f"all_gather_into_tensor of {count}", out.numpy(), stacked.reshape(-1))
        gl = [Tensor.zeros(count) for _ in range(n)] if r == 0 else None
        dist.gather(Tensor(every[r]), gl, dst=0)
        for k in range(n if gl else 0):
            check(f"gather of {count} [{k}]", gl[k].numpy(), every[k])
    # the ops whose data is every rank's block: blocks within, at and over the packet's bytes in all
    for block in (limit // (4 * n), limit // (4 * n) + 1, 16 * limit // (4 * n)):
        every = [np.random.default_rng(7 * block + k).standard_normal(n * block).astype(np.float32) for k in range(n)]
        out = Tensor.zeros(block)
        dist.reduce_scatter_tensor(out, Tensor(every[r]))
        check(
            f"reduce_scatter_tensor of {block} a rank", out.numpy(), np.sum(every, 0)[r * block : (r + 1) * block], 1e-5
        )
        out = Tensor.zeros(block)
        dist.scatter(out, [Tensor(every[0][k * block : (k + 1) * block]) for k in range(n)] if r == 0 else None, src=0)
        check(f"scatter of {block} a rank", out.numpy(), every[0][r * block : (r + 1) * block])
    # async handles of inline ops: complete when the call returns, their outputs written
    t = Tensor(np.full(3, float(r + 1), np.float32))
    w = dist.broadcast(t, src=0, async_op=True)
    assert w.wait() and w.is_completed() and w.result() == [t]
    check("async broadcast", t.numpy(), np.full(3, 1.0))
    outs = [Tensor.zeros(2) for _ in range(n)]
    w = dist.all_gather(outs, Tensor(np.full(2, float(r), np.float32)), async_op=True)
    assert w.wait() and w.is_success()
    for k in range(n):
        check(f"async all_gather [{k}]", outs[k].numpy(), np.full(2, float(k)))
    if n > 1:
        calls = mpi_calls(world, dist.barrier)
        assert calls == (["Allgather"] if checked else ["Barrier"]), calls


def in_place_again(r: int, n: int) -> None:
    """Collectives on a tensor seen before (all_reduce's latency path: MPI works on its memory in place): every op
    again and again, a lazy reader, a pending write through a view, float16 after a broadcast, a mismatched shape."""
    start = data(r, (3, 5), np.float32, 42)
    every = [data(k, (3, 5), np.float32, 42) for k in range(n)]
    x = Tensor(start).realize()
    want = start.astype(np.float64)
    for step, op in enumerate([*OPS, dist.ReduceOp.SUM, dist.ReduceOp.AVG, dist.ReduceOp.SUM]):
        lazy = x * 2  # computed from x before the collective writes x: keeps the value from before
        before = want.copy()
        dist.all_reduce(x, op=op)
        # every rank held `before` (its own values at first, the same values afterwards)
        held = [before] * n if step else [e.astype(np.float64) for e in every]
        want = np.mean(held, 0) if op is dist.ReduceOp.AVG else OPS[op](np.stack(held))
        check(f"all_reduce {op.name} again ({step})", x.numpy(), want, 1e-5)
        check(f"lazy reader before all_reduce {op.name} again", lazy.numpy(), 2 * before, 1e-5)
    x[1:2].assign(Tensor.full((1, 5), float(r + 1)))  # pending until x is read: the collective reads it
    dist.all_reduce(x)
    want = n * want
    want[1] = sum(k + 1 for k in range(n))
    check("all_reduce after a write through a view", x.numpy(), want, 1e-5)
    h = Tensor(np.full(5, float(r + 1), np.float16)).realize()
    dist.broadcast(h, src=0)  # seen whole by a collective with no arithmetic: float16 as it is
    for k in range(2):
        dist.all_reduce(h)  # float16: MPI sums a float32 copy
        check(f"float16 all_reduce after a broadcast ({k})", h.numpy(), np.full(5, float(n ** (k + 1))))
    # a mismatched shape on tensors seen before (by an all_reduce on a group of one rank each)
    alone = [dist.new_group([k]) for k in range(n)]
    y = Tensor.ones(3 + r).contiguous().realize()
    dist.all_reduce(y, group=alone[r])
    if n > 1 and config.DIST_CHECK.value:
        try:
            dist.all_reduce(y)
            raise AssertionError("mismatched shapes of tensors seen before did not raise")
        except dist.DistError as e:
            assert "rank 0: all_reduce float32 (3,)" in str(e) and "rank 1: all_reduce float32 (4,)" in str(e), e


def mlp() -> nn.Module:
    return nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 3))


def train(model: nn.Module, opt, xs, ys, steps: int, accumulate: int = 1, ddp: DDP | None = None) -> None:
    F = torch.nn.functional
    for s in range(steps):
        opt.zero_grad()
        for a in range(accumulate):
            x, y = xs[s * accumulate + a], ys[s * accumulate + a]
            if ddp is not None and a < accumulate - 1:
                with ddp.no_sync():
                    (F.cross_entropy((ddp or model)(x), y) / accumulate).backward()
            else:
                (F.cross_entropy((ddp or model)(x), y) / accumulate).backward()
        opt.step()


def ddp() -> None:
    r, n = dist.get_rank(), dist.get_world_size()
    rng = np.random.default_rng(5)
    B = 4 * n  # the global batch: rank r takes rows r, r + n, ...
    X = rng.standard_normal((12, B, 12)).astype(np.float32)
    Y = rng.integers(0, 3, (12, B))
    torch.manual_seed(0)
    ref = mlp()
    init = [p.numpy().copy() for p in ref.parameters()]
    torch.manual_seed(100 + r)  # each rank starts elsewhere: DDP broadcasts rank 0's
    model = mlp()
    if r == 0:
        for p, v in zip(model.parameters(), init):
            p.assign(Tensor(v)).realize()
    wrapped = DDP(model, bucket_cap_mb=0.0002)  # 210 bytes: several buckets
    assert len(wrapped.bucket_sizes) > 1 and sum(wrapped.bucket_sizes) == 4, wrapped.bucket_sizes
    for p, v in zip(model.parameters(), init):
        check("broadcast at wrap", p.numpy(), v)
    full = ([Tensor(x) for x in X], [Tensor(y) for y in Y])
    part = ([Tensor(x[r::n]) for x in X], [Tensor(y[r::n]) for y in Y])
    train(ref, torch.optim.SGD(ref.parameters(), lr=0.5, momentum=0.9), *full, steps=4)
    train(model, torch.optim.SGD(wrapped.parameters(), lr=0.5, momentum=0.9), *part, steps=4, ddp=wrapped)
    for p, q in zip(model.parameters(), ref.parameters()):
        check("DDP equals one process with the global batch", p.numpy(), q.numpy(), 1e-5)
    # overlap: the first bucket (the last layer's gradients) started while the backward's other kernels still ran
    assert wrapped.timings["kernels_after_first_start"] > 0, wrapped.timings
    # no_sync: two half-batches accumulated locally, averaged once, equal two accumulated full half-batches
    ref_opt, opt = torch.optim.SGD(ref.parameters(), lr=0.5), torch.optim.SGD(wrapped.parameters(), lr=0.5)
    train(ref, ref_opt, full[0][4:], full[1][4:], steps=2, accumulate=2)
    train(model, opt, part[0][4:], part[1][4:], steps=2, accumulate=2, ddp=wrapped)
    for p, q in zip(model.parameters(), ref.parameters()):
        check("no_sync accumulation", p.numpy(), q.numpy(), 1e-5)
    # TinyJit: the captured step all-reduces too (the bucket steps are in its plan)
    opt = torch.optim.Adam(wrapped.parameters(), lr=0.01)
    ref_opt = torch.optim.Adam(ref.parameters(), lr=0.01)

    def step(m, o, x, y):
        o.zero_grad()
        loss = torch.nn.functional.cross_entropy(m(x), y)
        loss.backward()
        o.step()
        return loss.realize()

    jstep = TinyJit(lambda x, y: step(wrapped, opt, x, y))
    with Tensor.train():
        for s in range(8, 12):
            jstep(part[0][s], part[1][s])
            step(ref, ref_opt, full[0][s], full[1][s])
    for p, q in zip(model.parameters(), ref.parameters()):
        check("DDP under TinyJit", p.numpy(), q.numpy(), 1e-4)

    # an unused parameter: find_unused_parameters reduces it as zeros; without it, the next forward says which
    class Two(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(2, 2), nn.Linear(2, 2)

        def forward(self, x):
            return self.a(x)

    for find in (True, False):
        m = DDP(Two(), find_unused_parameters=find)
        m(Tensor.ones(1, 2)).sum().backward()
        try:
            m(Tensor.ones(1, 2))
            assert find, "a missing gradient did not raise"
        except RuntimeError as e:
            assert not find and "b.weight" in str(e) and "find_unused_parameters" in str(e), e


def timeout() -> None:
    """Rank 1 is stuck: rank 0's all_reduce raises DistBackendError after DIST_TIMEOUT (the test sets 1 s), uncaught,
    so the job is aborted long before rank 1 wakes."""
    if dist.get_rank() == 1:
        time.sleep(60)
    dist.all_reduce(Tensor.ones(3))


def timeout_kept() -> None:
    """timeout on all_reduce's latency path: the tensor is seen before (its data travels in the check's packet)."""
    x = Tensor.ones(3).contiguous().realize()
    dist.all_reduce(x)
    dist.all_reduce(x)
    if dist.get_rank() == 1:
        time.sleep(60)
    dist.all_reduce(x)


def two_hosts() -> None:
    """test_two_hosts.py: the ranks are in different network namespaces (two "machines"), then they train."""
    import os

    spaces = [None] * dist.get_world_size()
    dist.all_gather_object(spaces, os.stat("/proc/self/ns/net").st_ino)
    assert len(set(spaces)) == len(spaces), f"the ranks share a network namespace: {spaces}"
    ddp()


def raises() -> None:
    if dist.get_rank() == 1:
        raise ValueError("planted failure")
    dist.barrier()  # rank 0 would wait here forever: the job is aborted instead


if __name__ == "__main__":
    dist.init_process_group(backend="mpi")
    scenario = sys.argv[1]
    scenarios = {"collectives": collectives, "ddp": ddp, "timeout": timeout, "raises": raises, "two_hosts": two_hosts}
    scenarios["timeout_kept"] = timeout_kept
    scenarios[scenario]()
    dist.barrier()
    print(f"ok {scenario} rank {dist.get_rank()}", flush=True)
    dist.destroy_process_group()
