"""torch.utils.data.sampler: the orders in which a DataLoader visits a dataset's indices.

In: a dataset (or its length, or a list of indices or weights) and optionally a unigrad.Generator. Out: an iterator
of indices (a BatchSampler: of lists of them). Every sampler iterates lazily: a permutation of the dataset is drawn
when an epoch starts (one kernel), and draws with replacement come 32 at a time, as torch draws them, so a sampler
of 10**10 samples (an endless trainer's) yields its first batches at once in constant memory.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Generic, TypeVar

from unigrad.api.random import Generator
from unigrad.dtype import dtypes
from unigrad.tensor import Tensor

__all__ = [
    "Sampler",
    "SequentialSampler",
    "RandomSampler",
    "SubsetRandomSampler",
    "WeightedRandomSampler",
    "BatchSampler",
]

T = TypeVar("T")
CHUNK = 32  # draws with replacement per kernel (torch's chunk size)


def as_generator(generator: Generator | int | None) -> Generator | None:
    """A sampler's generator: None (the global one), a unigrad.Generator, or an int seed (a Generator seeded with
    it, made once, so later epochs still differ)."""
    if generator is None or isinstance(generator, Generator):
        return generator
    if isinstance(generator, int) and not isinstance(generator, bool):
        return Generator().manual_seed(generator)
    raise TypeError(f"generator: expected a unigrad.Generator (torch.Generator) or an int seed, got {generator!r}")


def permutation(n: int, generator: Generator | None = None) -> list[int]:
    """A random order of range(n), drawn from `generator` (None: the global generator)."""
    return Tensor.randperm(n, generator=generator).tolist() if n else []


def _positive_int(value: Any, name: str) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"{name} should be a positive integer value, but got {name}={value!r}")


class Sampler(Generic[T]):
    """An iterable of dataset indices (or of batches of them, for a batch sampler)."""

    def __init__(self, data_source: Any = None) -> None:
        pass

    def __iter__(self) -> Iterator[T]:
        raise NotImplementedError(f"{type(self).__name__} must define __iter__")


class SequentialSampler(Sampler[int]):
    """0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source: Any) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler[int]):
    """A new random order of the dataset each epoch (num_samples > len: one permutation after another); with
    replacement, num_samples independent uniform draws of an index."""

    def __init__(
        self,
        data_source: Any,
        replacement: bool = False,
        num_samples: int | None = None,
        generator: Generator | int | None = None,
    ) -> None:
        if not isinstance(replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={replacement!r}")
        if num_samples is not None:
            _positive_int(num_samples, "num_samples")
        self.data_source, self.replacement, self._num_samples = data_source, replacement, num_samples
        self.generator = as_generator(generator)

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        n, total = len(self.data_source), self.num_samples
        if n == 0:
            return
        if self.replacement:
            for start in range(0, total, CHUNK):  # always CHUNK draws: one kernel for every chunk, the last too
                yield from Tensor.randint(CHUNK, low=0, high=n, generator=self.generator).tolist()[: total - start]
            return
        for start in range(0, total, n):
            yield from permutation(n, self.generator)[: total - start]

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler[int]):
    """The given indices in a new random order each epoch."""

    def __init__(self, indices: Sequence[int], generator: Generator | int | None = None) -> None:
        self.indices, self.generator = indices, as_generator(generator)

    def __iter__(self) -> Iterator[int]:
        for i in permutation(len(self.indices), self.generator):
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler[int]):
    """num_samples indices of range(len(weights)), index i drawn with probability weights[i] / sum(weights); with
    replacement they are drawn CHUNK at a time, without it all at once (num_samples <= len(weights))."""

    def __init__(
        self,
        weights: Sequence[float] | Tensor,
        num_samples: int,
        replacement: bool = True,
        generator: Generator | int | None = None,
    ) -> None:
        _positive_int(num_samples, "num_samples")
        if not isinstance(replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={replacement!r}")
        w = weights if isinstance(weights, Tensor) else Tensor(list(weights))
        if w.ndim != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape {tuple(w.shape)}")
        if not replacement and num_samples > w.shape[0]:
            raise RuntimeError(f"cannot draw {num_samples} samples from {w.shape[0]} weights without replacement")
        self.weights = w if w.dtype.is_float else w.cast(dtypes.float64)
        self.num_samples, self.replacement, self.generator = num_samples, replacement, as_generator(generator)

    def __iter__(self) -> Iterator[int]:
        if not self.replacement:
            yield from self.weights.multinomial(self.num_samples, False, generator=self.generator).tolist()
            return
        for start in range(0, self.num_samples, CHUNK):
            chunk = self.weights.multinomial(CHUNK, True, generator=self.generator).tolist()
            yield from chunk[: self.num_samples - start]

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler[list[int]]):
    """Lists of batch_size indices from `sampler`, as they come (the last one shorter unless drop_last)."""

    def __init__(self, sampler: Iterable[int], batch_size: int, drop_last: bool) -> None:
        _positive_int(batch_size, "batch_size")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last!r}")
        self.sampler, self.batch_size, self.drop_last = sampler, batch_size, drop_last

    def __iter__(self) -> Iterator[list[int]]:
        batch: list[int] = []
        for i in self.sampler:
            batch.append(i)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self) -> int:
        n = len(self.sampler)  # type: ignore[arg-type]
        return n // self.batch_size if self.drop_last else math.ceil(n / self.batch_size)
