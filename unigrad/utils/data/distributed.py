"""torch.utils.data.distributed: DistributedSampler, each rank's share of a dataset for data-parallel training.

In: a dataset (its length), the number of ranks and this rank (by default from unigrad.distributed's process group),
shuffle/seed/drop_last. Out: an iterator of this rank's indices, `num_samples` of them. torch's rules: without
drop_last the order is padded by repeating its start so that every rank gets as many indices (the ranks together see
every sample, a few twice); with drop_last the tail that does not divide evenly is left out. Rank r takes positions
r, r + num_replicas, ... of the (shuffled) order. With shuffle, the order is a permutation drawn from a generator
seeded with seed + epoch (set_epoch), so every rank draws the same permutation and an epoch's shares are disjoint.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from unigrad.api.random import Generator
from unigrad.utils.data.sampler import Sampler, permutation

__all__ = ["DistributedSampler"]


def _default_group_value(what: str) -> int:
    """The world size or rank of unigrad.distributed's default group; a clear error before init_process_group."""
    from unigrad import distributed as dist

    if not dist.is_initialized():
        raise RuntimeError(
            f"DistributedSampler: {what} not given and the default process group is not initialized: call "
            "unigrad.distributed.init_process_group() first (launch with mpirun), or pass num_replicas and rank"
        )
    return dist.get_world_size() if what == "num_replicas" else dist.get_rank()


class DistributedSampler(Sampler[int]):
    """torch.utils.data.DistributedSampler: this rank's indices of `dataset` (see the module docstring)."""

    def __init__(
        self,
        dataset: Any,
        num_replicas: int | None = None,
        rank: int | None = None,
        shuffle: bool = True,
        seed: int = 0,
        drop_last: bool = False,
    ) -> None:
        if num_replicas is None:
            num_replicas = _default_group_value("num_replicas")
        if rank is None:
            rank = _default_group_value("rank")
        if not isinstance(num_replicas, int) or isinstance(num_replicas, bool) or num_replicas < 1:
            raise ValueError(f"DistributedSampler: num_replicas must be a positive int, got {num_replicas!r}")
        if not isinstance(rank, int) or isinstance(rank, bool) or not 0 <= rank < num_replicas:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset, self.num_replicas, self.rank = dataset, num_replicas, rank
        self.shuffle, self.seed, self.drop_last, self.epoch = shuffle, seed, drop_last, 0
        n = len(dataset)
        if drop_last and n % num_replicas != 0:  # the tail that does not divide evenly is left out
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas

    def __iter__(self) -> Iterator[int]:
        n = len(self.dataset)
        if self.shuffle:  # the same permutation on every rank: a generator seeded with seed + epoch
            indices = permutation(n, Generator().manual_seed(self.seed + self.epoch)) if n else []
        else:
            indices = list(range(n))
        if not self.drop_last:  # padded with the order's start (repeated as often as needed) to total_size
            pad = self.total_size - len(indices)
            if pad > 0 and indices:
                indices += (indices * math.ceil(pad / len(indices)))[:pad]
        else:
            indices = indices[: self.total_size]
        return iter(indices[self.rank : self.total_size : self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """The epoch whose permutation the next iteration draws (call it before each epoch, as with torch)."""
        self.epoch = epoch
