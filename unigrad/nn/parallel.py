"""torch.nn.parallel: DataParallel on one process, DistributedDataParallel across processes (unigrad.distributed).

DataParallel(module) wraps a module and forwards to it, as torch's does on a machine without CUDA devices: the
wrapped module is `.module` (so state-dict keys gain torch's `module.` prefix), and a forward runs the whole batch
on the module's device; unigrad's kernels already use every core.

DistributedDataParallel(module) is data-parallel training over the ranks of a process group (one process each, launched
by mpirun): at wrap time rank 0's parameters and buffers are broadcast (every rank checks first that all have the same
parameter shapes and dtypes); in backward() the gradients are averaged over the ranks in buckets, as torch's: the
parameters in reverse order, a bucket closing once it holds bucket_cap_mb (25 MB; with that default the first 1 MB), one
bucket per dtype run. backward() fills every .grad as lazy tensors of one graph and then runs the parameters' post-
accumulate-grad hooks; the last one reduces: every gradient divided by the world size is assigned into its bucket's own
gradient buffers (made at wrap time), all in one schedule with the whole backward pass. A hook of the runtime
(realize.after_kernel) sees each kernel's written buffer as it runs: once a bucket's last gradient is written, the
bucket (and any ready ones after it, always in bucket order, the same on every rank) is packed into its flat host buffer
and its MPI all-reduce (summed) started on the progress thread, so it overlaps the backward's remaining kernels (the
schedule computes the last layers' gradients, bucket 0, before the earlier layers'). After the schedule it waits for
each bucket in turn and unpacks the sums into the gradient buffers, which become the .grad tensors (the same buffers
every step, as torch's gradient_as_bucket_view: a .grad kept from the previous step is overwritten). `no_sync()` skips
the reduction (gradients accumulate locally until the next backward outside it). Under TinyJit the pack/start and
wait/unpack of each bucket are captured steps between the kernels, right after the kernel that completed the bucket, so
a replayed step all-reduces in the same order and overlaps the same way. `timings` holds the last reduction's seconds
(compute, pack, exposed_wait: waiting for the all-reduces after the schedule) and how many kernels ran after the first
bucket started (kernels_after_first_start: 0 means nothing overlapped).
"""

from __future__ import annotations

import contextlib
import itertools
import time
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from unigrad.distributed import distributed_c10d as c10d
from unigrad.distributed.distributed_c10d import ProcessGroup, Work
from unigrad.helpers import tree_flatten
from unigrad.ir.ops import Ops
from unigrad.ir.uop import UOp
from unigrad.nn.module import Module
from unigrad.runtime import Buffer, Device, to_numpy_dtype
from unigrad.runtime import jit
from unigrad.runtime import realize as rt
from unigrad.tensor import Tensor

__all__ = ["DataParallel", "DistributedDataParallel"]


class DataParallel(Module):
    """torch.nn.DataParallel without CUDA devices: `DataParallel(model)(x)` is `model(x)`. device_ids and
    output_device are kept and unused (torch ignores them too when it has no CUDA device); dim is the batch
    dimension torch would scatter along."""

    def __init__(
        self, module: Module, device_ids: Sequence[Any] | None = None, output_device: Any = None, dim: int = 0
    ) -> None:
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"DataParallel: expected an nn.Module to wrap, got {type(module).__name__}")
        self.module, self.dim = module, dim
        self.device_ids, self.output_device = list(device_ids or []), output_device

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        return self.module(*inputs, **kwargs)


_FIRST_BUCKET_BYTES = 1 << 20  # torch's first bucket (dist._DEFAULT_FIRST_BUCKET_BYTES): a small one, sent early
_BUCKET_MB = 25  # torch's default bucket_cap_mb


class _Bucket:
    """Parameters whose gradients are all-reduced together: their offsets in one flat host array of their dtype, and
    the buffers their averaged gradients are written to (each backward's kernels write them; .grad views them)."""

    def __init__(self, index: int, params: list[Tensor]) -> None:
        self.index, self.params = index, params
        self.sizes = [p.numel() for p in params]
        self.offsets = [sum(self.sizes[:i]) for i in range(len(params))]
        self.flat = np.empty(sum(self.sizes), to_numpy_dtype(params[0].dtype))
        self.grads = [Tensor.zeros(*p.shape, dtype=p.dtype, device=p.device).contiguous().realize() for p in params]
        self.bufs = [rt.buffer_of(g.uop) for g in self.grads]
        self.unwritten = 0  # during a reduction: its gradient buffers no kernel has written yet
        self.work: Work | None = None


def _host_array(buf: Buffer) -> np.ndarray | None:
    """A buffer's memory as a typed numpy array (CPU), or None where the host cannot address it."""
    raw = Device[buf.device].allocator.host_view(buf.handle, buf.nbytes)
    return None if raw is None else raw.view(to_numpy_dtype(buf.dtype))


class _Pack:
    """Captured step (and the eager code): the bucket's gradient buffers packed into its flat array, and its
    all-reduce started on the progress thread. Called as a TinyJit step with the replay's buffers."""

    def __init__(self, bucket: _Bucket, group: ProcessGroup) -> None:
        self.bucket, self.group = bucket, group

    def __call__(self, bufs: list[Buffer], var_vals: dict[str, int] | None = None) -> None:
        b = self.bucket
        for buf, off, n in zip(bufs, b.offsets, b.sizes):
            arr = _host_array(buf)
            if arr is None:
                arr = Device[buf.device].allocator.copyout(buf.handle, buf.dtype, n)
            b.flat[off : off + n] = arr[:n]
        req = self.group.comm.Iallreduce(c10d._mpi().IN_PLACE, b.flat, c10d._mpi().SUM)
        b.work = c10d.Work(f"DistributedDataParallel bucket {b.index}", self.group, [req], b.flat, None)
        c10d._run(b.work, async_op=True)


class _Unpack:
    """Captured step (and the eager code): wait for the bucket's all-reduce, copy the sums back into the gradient
    buffers (they were divided by the world size before: the averages)."""

    def __init__(self, bucket: _Bucket) -> None:
        self.bucket = bucket

    def __call__(self, bufs: list[Buffer], var_vals: dict[str, int] | None = None) -> None:
        b = self.bucket
        assert b.work is not None, "DistributedDataParallel: a bucket's wait ran before its start"
        b.work.wait()
        b.work = None
        for buf, off, n in zip(bufs, b.offsets, b.sizes):
            arr = _host_array(buf)
            if arr is None:
                Device[buf.device].allocator.copyin(buf.handle, b.flat[off : off + n])
            else:
                arr[:n] = b.flat[off : off + n]


class DistributedDataParallel(Module):
    """torch.nn.parallel.DistributedDataParallel over unigrad.distributed's process group (see the module docstring).
    device_ids/output_device are accepted (one device per process); gradient_as_bucket_view and static_graph are
    accepted and change nothing here."""

    def __init__(
        self,
        module: Module,
        device_ids: Sequence[Any] | None = None,
        output_device: Any = None,
        dim: int = 0,
        broadcast_buffers: bool = True,
        process_group: ProcessGroup | None = None,
        bucket_cap_mb: float | None = None,
        find_unused_parameters: bool = False,
        check_reduction: bool = False,
        gradient_as_bucket_view: bool = False,
        static_graph: bool = False,
        init_sync: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"DistributedDataParallel: expected an nn.Module to wrap, got {type(module).__name__}")
        group = c10d._group(process_group)  # raises before init_process_group, saying what to call
        if group is None:
            raise ValueError("DistributedDataParallel: this rank is not in the process group it was given")
        self.module, self.dim, self.device_ids, self.output_device = module, dim, list(device_ids or []), output_device
        self._group = group
        self.broadcast_buffers, self.find_unused_parameters = broadcast_buffers, find_unused_parameters
        self.require_backward_grad_sync = True
        named = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
        for _, p in named:
            if p._requires_grad is None:  # tinygrad's undecided parameters: DDP trains them
                p.requires_grad_(True)
        self._params = [p for _, p in named]
        self._grad_names = [n for n, _ in named]
        self._verify_across_ranks(named)
        # the buffers broadcast before each forward, as torch's modules_buffers: listed once (a forward of a model
        # without buffers then costs nothing here; walking the modules for them took ~50 us per step)
        self._module_buffers = list(module.buffers())
        if init_sync and group.size() > 1:
            src = group.ranks[0]
            for t in [*self._params, *self._module_buffers]:
                c10d.broadcast(t, src=src, group=group)
        cap = int((_BUCKET_MB if bucket_cap_mb is None else bucket_cap_mb) * (1 << 20))
        # torch: the small first bucket only with the default cap (a cap given applies to every bucket)
        self._buckets = self._make_buckets(_FIRST_BUCKET_BYTES if bucket_cap_mb is None else cap, cap)
        self._ready: set[int] = set()
        self._handles = [p.register_post_accumulate_grad_hook(self._grad_ready) for p in self._params]
        self.timings: dict[str, float] = {}  # the last reduction's: compute, pack, exposed wait, all-reduce time

    def _verify_across_ranks(self, named: list[tuple[str, Tensor]]) -> None:
        """Every rank wraps parameters of the same names, shapes and dtypes (else the buckets would mix data)."""
        mine = [(n, tuple(p.shape), p.dtype.name) for n, p in named]
        every: list[Any] = [None] * self._group.size()
        c10d.all_gather_object(every, mine, group=self._group)
        for r, theirs in zip(self._group.ranks, every):
            if theirs != mine:
                diff = next((a, b) for a, b in itertools.zip_longest(mine, theirs) if a != b)
                raise c10d.DistError(
                    f"DistributedDataParallel: rank {r}'s parameters differ from rank "
                    f"{self._group.ranks[self._group.rank()]}'s:"
                    f" {diff[1]} there, {diff[0]} here (every rank must wrap the same model)"
                )

    def _make_buckets(self, first: int, cap: int) -> list[_Bucket]:
        """torch's bucketing: parameters in reverse order, a bucket closes once it reaches its cap (the first one
        `first` bytes) or the dtype changes."""
        buckets: list[_Bucket] = []
        current: list[Tensor] = []
        size = 0
        for p in reversed(self._params):
            if current and p.dtype != current[0].dtype:
                buckets.append(_Bucket(len(buckets), current))
                current, size = [], 0
            current.append(p)
            size += p.numel() * p.dtype.itemsize
            if size >= (first if not buckets else cap):
                buckets.append(_Bucket(len(buckets), current))
                current, size = [], 0
        if current:
            buckets.append(_Bucket(len(buckets), current))
        return buckets

    @property
    def bucket_sizes(self) -> list[int]:
        """The number of parameters in each bucket, in all-reduce order."""
        return [len(b.params) for b in self._buckets]

    @contextlib.contextmanager
    def no_sync(self) -> Iterator[None]:
        """Backward passes inside accumulate gradients locally; the first backward after it averages the sum."""
        old, self.require_backward_grad_sync = self.require_backward_grad_sync, False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        if self._ready and self.require_backward_grad_sync:
            missing = [n for n, p in zip(self._grad_names, self._params) if id(p) not in self._ready]
            raise RuntimeError(
                "DistributedDataParallel: expected to have finished reduction in the prior iteration before starting "
                f"a new one; these parameters got no gradient: {missing[:8]}. Pass find_unused_parameters=True "
                "when some parameters do not take part in the loss"
            )
        if self.broadcast_buffers and self._group.size() > 1:
            for buf in self._module_buffers:
                c10d.broadcast(buf, src=self._group.ranks[0], group=self._group)
        out = self.module(*inputs, **kwargs)
        if self.find_unused_parameters and self.require_backward_grad_sync and Tensor.no_grad is False:
            _, leaves = tree_flatten(out, lambda v: isinstance(v, Tensor))
            nodes = set(UOp(Ops.SINK, tuple(t.uop for t in leaves)).toposort()) if leaves else set()
            self._ready = {id(p) for p in self._params if p.uop not in nodes}  # unused: reduced as zeros
        return out

    def _grad_ready(self, p: Tensor) -> None:
        """A parameter's post-accumulate-grad hook: once every parameter has its gradient, the buckets reduce."""
        if not self.require_backward_grad_sync:
            return
        self._ready.add(id(p))
        if len(self._ready) == len(self._params):
            self._ready = set()
            self._reduce()

    def _reduce(self) -> None:
        """Average every .grad over the ranks, bucket by bucket (see the module docstring)."""
        n = self._group.size()
        if n == 1:
            return
        t0 = time.perf_counter()
        assigns = []
        writer: dict[int, _Bucket] = {}  # a gradient buffer's id -> its bucket
        for b in self._buckets:
            for p, g in zip(b.params, b.grads):
                assigns.append(g.assign((p.grad if p.grad is not None else p.zeros_like()) / n))
            b.unwritten = len(b.bufs)
            writer.update((id(buf), b) for buf in b.bufs)
        started = 0  # buckets started, in bucket order (every rank starts them in the same order)
        pack, first_start_kernels = 0.0, -1

        def start_ready(every: bool = False) -> None:
            nonlocal started, pack, first_start_kernels
            while started < len(self._buckets) and (every or self._buckets[started].unwritten == 0):
                ta = time.perf_counter()
                if started == 0:
                    first_start_kernels = rt.stats.kernels
                b = self._buckets[started]
                start = _Pack(b, self._group)
                start(b.bufs)
                jit.note_step(f"ddp_start_bucket{b.index}", start, b.bufs, {})
                started += 1
                pack += time.perf_counter() - ta

        def written(bufs: list[Buffer]) -> None:  # after each kernel of the backward: the buffers it wrote
            for buf in bufs:
                b = writer.pop(id(buf), None)
                if b is not None:
                    b.unwritten -= 1
                    if b.unwritten == 0:
                        start_ready()

        rt.after_kernel.append(written)
        try:
            Tensor.realize(*assigns)  # the backward pass and the divisions, one schedule: buckets start inside it
        finally:
            rt.after_kernel.remove(written)
        during = started
        overlapped_kernels = rt.stats.kernels - first_start_kernels if first_start_kernels >= 0 else 0
        tb = time.perf_counter()
        start_ready(every=True)  # any bucket whose buffers no kernel wrote (nothing to wait for)
        tw = time.perf_counter()
        for b in self._buckets:
            finish = _Unpack(b)
            finish(b.bufs)
            jit.note_step(f"ddp_wait_bucket{b.index}", finish, b.bufs, {})
            for p, g in zip(b.params, b.grads):
                p.grad = g
        end = time.perf_counter()
        self.timings = {
            "total": end - t0,
            "compute": tb - t0 - pack,
            "pack": pack,
            "exposed_wait": end - tw,
            "buckets_started_in_backward": during,
            "kernels_after_first_start": overlapped_kernels,  # kernels run while a bucket's all-reduce was in flight
        }
