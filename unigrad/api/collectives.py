"""Collectives across the devices of a multi-device tensor, as the spec derives them from primitives.

Each is a composition of movement ops, reductions and copies (Tensor.shard): the multi lowering
(pipeline/multi.py) turns it into per-device kernels and copies between devices. n is the number of devices;
"sharded" means split on dim 0, block i on device i (Tensor.shard(devices, axis=0)).

  broadcast(t, D)     one-device t -> a whole copy on each device of D
  scatter(t, D)       one-device t -> sharded on D
  gather(t)           sharded t -> the whole on t's first device
  reduce(t)           sharded t of n blocks -> their sum, on t's first device
  allgather(t)        sharded t -> a whole copy on each of its devices
  reduce_scatter(t)   sharded t, each device's block its contribution -> their sum, sharded
  allreduce(t)        sharded t, each device's block its contribution -> their sum, whole on each device
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from unigrad.tensor import Tensor


def _devices(op: str, t: Tensor) -> tuple[str, ...]:
    if not isinstance(t.device, tuple):
        raise RuntimeError(f"{op}: expected a tensor on several devices, got one on {t.device}")
    return t.device


def _blocks(op: str, t: Tensor, n: int) -> int:
    """The size of dim 0 of one device's block."""
    if not t.shape or t.shape[0] % n:
        raise RuntimeError(f"{op}: dim 0 of shape {t.shape} does not split into {n} equal blocks")
    return t.shape[0] // n


def broadcast(t: Tensor, devices: tuple[str, ...]) -> Tensor:
    return t.shard(devices)


def scatter(t: Tensor, devices: tuple[str, ...]) -> Tensor:
    return t.shard(devices, axis=0)


def gather(t: Tensor) -> Tensor:
    return t.to(_devices("gather", t)[0])


def reduce(t: Tensor) -> Tensor:
    n = len(_devices("reduce", t))
    s = _blocks("reduce", t, n)
    return gather(t).reshape(n, s, *t.shape[1:]).sum(0)


def allgather(t: Tensor) -> Tensor:
    return t.shard(_devices("allgather", t))


def reduce_scatter(t: Tensor) -> Tensor:
    devices = _devices("reduce_scatter", t)
    n = len(devices)
    s = _blocks("reduce_scatter", t, n)
    if s % n:
        raise RuntimeError(f"reduce_scatter: a block of {s} rows (shape {t.shape}) does not split into {n} chunks")
    rest = tuple(t.shape[1:])
    # [j, i] = device j's chunk i -> [i, j] -> device i gets chunk i of every device's block, and sums them
    chunks = t.reshape(n, n, s // n, *rest).permute(1, 0, *range(2, 3 + len(rest)))
    return chunks.shard(devices, axis=0).sum(1).reshape(s, *rest)


def allreduce(t: Tensor) -> Tensor:
    return allgather(reduce_scatter(t))
