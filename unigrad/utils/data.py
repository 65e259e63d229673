"""torch.utils.data for unigrad: datasets, samplers and the DataLoader that batches them.

In: a dataset (indexable with a length, or iterable). Out: batches, as torch's default collation makes them
(tensors stacked along a new first dim, numbers become tensors, tuples/lists/dicts collated field by field).

Batches of a TensorDataset (or a Subset of one) are gathered with one indexing op per tensor (`t[index]`, a
kernel) instead of one lazy op per sample and a stack of them. Shuffling draws from unigrad's own generator
(Tensor.randperm), so `unigrad.manual_seed` makes it reproducible; a loader's `generator` may be an int seed.
Loading runs in the calling thread: num_workers is accepted and ignored (tensor ops already use every core).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Generic, TypeVar

import numpy as np

from unigrad.api.random import new_state
from unigrad.dtype import dtypes
from unigrad.tensor import Tensor

T = TypeVar("T")


class Dataset(Generic[T]):
    """A map-style dataset: `dataset[i]` for i in range(len(dataset)). `a + b` concatenates."""

    def __getitem__(self, index: int) -> T:
        raise NotImplementedError(f"{type(self).__name__} must define __getitem__")

    def __add__(self, other: Dataset[T]) -> ConcatDataset[T]:
        return ConcatDataset([self, other])


class IterableDataset(Dataset[T]):
    """A dataset read by iterating over it (a stream): the DataLoader batches what __iter__ yields."""

    def __iter__(self) -> Iterator[T]:
        raise NotImplementedError(f"{type(self).__name__} must define __iter__")


class TensorDataset(Dataset[tuple[Tensor, ...]]):
    """Samples are the rows of tensors of one first dim: dataset[i] = tuple(t[i] for t in tensors)."""

    def __init__(self, *tensors: Tensor) -> None:
        if not tensors:
            raise ValueError("TensorDataset: expected at least one tensor")
        sizes = {t.shape[0] if t.ndim else None for t in tensors}
        if len(sizes) != 1 or None in sizes:
            raise ValueError(f"TensorDataset: size mismatch between tensors: {[tuple(t.shape) for t in tensors]}")
        self.tensors = tensors

    def __getitem__(self, index: int) -> tuple[Tensor, ...]:
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].shape[0]

    def batch(self, indices: Sequence[int]) -> tuple[Tensor, ...]:
        """The samples at `indices`, stacked: one gather per tensor."""
        idx = Tensor(np.asarray(indices, dtype=np.int64), device=self.tensors[0].device)
        return tuple(t[idx] for t in self.tensors)


class Subset(Dataset[T]):
    """The samples of `dataset` at `indices`, in that order."""

    def __init__(self, dataset: Dataset[T], indices: Sequence[int]) -> None:
        self.dataset, self.indices = dataset, list(indices)

    def __getitem__(self, index: int | list[int]) -> T:
        if isinstance(index, list):
            return self.dataset[[self.indices[i] for i in index]]  # type: ignore[index]
        return self.dataset[self.indices[index]]

    def __len__(self) -> int:
        return len(self.indices)


class ConcatDataset(Dataset[T]):
    """The samples of each dataset in turn."""

    def __init__(self, datasets: Iterable[Dataset[T]]) -> None:
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ConcatDataset: datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise ValueError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = list(np.cumsum([len(d) for d in self.datasets]))  # type: ignore[arg-type]

    def __len__(self) -> int:
        return int(self.cumulative_sizes[-1])

    def __getitem__(self, index: int) -> T:
        if index < 0:
            if -index > len(self):
                raise IndexError(f"ConcatDataset: index {index} out of range for length {len(self)}")
            index += len(self)
        which = bisect.bisect_right(self.cumulative_sizes, index)
        if which == len(self.datasets):
            raise IndexError(f"ConcatDataset: index {index} out of range for length {len(self)}")
        start = 0 if which == 0 else int(self.cumulative_sizes[which - 1])
        return self.datasets[which][index - start]


def _permutation(n: int, generator: Any = None) -> list[int]:
    """A random order of range(n): unigrad's generator (Tensor.randperm), or a numpy one seeded by `generator`."""
    if n == 0:
        return []
    if generator is None:
        return Tensor.randperm(n).tolist()
    return np.random.default_rng(_seed_of(generator)).permutation(n).tolist()


def _seed_of(generator: Any) -> int:
    """The seed of a generator's next draw: an int as it is, a Generator's next one."""
    return generator if isinstance(generator, int) else generator.next_seed()


class Generator:
    """torch.Generator: `Generator().manual_seed(0)`, for samplers and random_split, and for the random tensor ops'
    `generator=` (rand, randn, randint, randperm, normal, multinomial draw from its own counter-based state, apart
    from the global one). Each draw from it advances its state, so successive epochs differ and a reseed repeats
    them."""

    def __init__(self, device: str = "CPU") -> None:
        self._seed = self._state = 0
        self.rng_state = new_state(0)  # what random tensor ops draw from with generator=self

    def manual_seed(self, seed: int) -> Generator:
        self._seed = self._state = int(seed)
        self.rng_state = new_state(self._seed)
        return self

    def initial_seed(self) -> int:
        return self._seed

    def next_seed(self) -> int:
        """The seed of the next draw; the state moves on (a 64-bit LCG step)."""
        seed, self._state = self._state, (self._state * 6364136223846793005 + 1442695040888963407) % 2**63
        return seed


class Sampler(Generic[T]):
    """An iterable of dataset indices (or of batches of them, for a batch sampler)."""

    def __iter__(self) -> Iterator[T]:
        raise NotImplementedError(f"{type(self).__name__} must define __iter__")


class SequentialSampler(Sampler[int]):
    def __init__(self, data_source: Any) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler[int]):
    """A new random order of the dataset each epoch; with replacement, num_samples draws of any index."""

    def __init__(
        self, data_source: Any, replacement: bool = False, num_samples: int | None = None, generator: Any = None
    ) -> None:
        if num_samples is not None and (not isinstance(num_samples, int) or num_samples <= 0):
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={num_samples}")
        self.data_source, self.replacement, self._num_samples, self.generator = (
            data_source,
            replacement,
            num_samples,
            generator,
        )

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        n = len(self.data_source)
        if self.replacement:
            if self.generator is None:
                return iter(Tensor.randint(self.num_samples, low=0, high=n).tolist())
            return iter(np.random.default_rng(_seed_of(self.generator)).integers(0, n, self.num_samples).tolist())
        order: list[int] = []
        while len(order) < self.num_samples:
            order += _permutation(n, self.generator)
        return iter(order[: self.num_samples])

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler[int]):
    """The given indices in a random order each epoch."""

    def __init__(self, indices: Sequence[int], generator: Any = None) -> None:
        self.indices, self.generator = list(indices), generator

    def __iter__(self) -> Iterator[int]:
        return iter([self.indices[i] for i in _permutation(len(self.indices), self.generator)])

    def __len__(self) -> int:
        return len(self.indices)


class BatchSampler(Sampler[list[int]]):
    """Lists of batch_size indices from `sampler` (the last one shorter unless drop_last)."""

    def __init__(self, sampler: Iterable[int], batch_size: int, drop_last: bool) -> None:
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
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


def default_collate(batch: Sequence[Any]) -> Any:
    """torch's collation: tensors (and numpy arrays) stacked along a new first dim, numbers into a tensor (int64,
    float64 or bool), and
    tuples, lists and dicts collated field by field; strings stay a list."""
    first = batch[0]
    if isinstance(first, Tensor):
        return Tensor.stack(*batch)
    if isinstance(first, np.ndarray):
        return Tensor(np.stack(batch))
    if isinstance(first, np.generic):  # numpy scalars keep their dtype
        return Tensor(np.stack(batch))
    if isinstance(first, bool):
        return Tensor(list(batch), dtype=dtypes.bool)
    if isinstance(first, int):
        return Tensor(list(batch), dtype=dtypes.int64)
    if isinstance(first, float):  # Python floats are doubles: torch collates them as float64
        return Tensor(list(batch), dtype=dtypes.float64)
    if isinstance(first, (str, bytes)):
        return list(batch)
    if isinstance(first, Mapping):
        return {k: default_collate([b[k] for b in batch]) for k in first}
    if isinstance(first, tuple) and hasattr(first, "_fields"):  # a namedtuple
        return type(first)(*(default_collate(list(f)) for f in zip(*batch)))
    if isinstance(first, (tuple, list)):
        if len({len(b) for b in batch}) != 1:
            raise RuntimeError("default_collate: each element in list of batch should be of equal size")
        return [default_collate(list(f)) for f in zip(*batch)]
    raise TypeError(
        f"default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {type(first)}"
    )


def _tensor_rows(dataset: Any) -> tuple[TensorDataset, list[int] | None] | None:
    """(the TensorDataset under a dataset, the index map of the Subsets over it), or None for another dataset."""
    mapping: list[int] | None = None
    while isinstance(dataset, Subset):
        mapping = list(dataset.indices) if mapping is None else [dataset.indices[i] for i in mapping]
        dataset = dataset.dataset
    return (dataset, mapping) if isinstance(dataset, TensorDataset) else None


class DataLoader(Generic[T]):
    """Batches of a dataset, as torch.utils.data.DataLoader: batch_size, shuffle, sampler / batch_sampler,
    drop_last, collate_fn, generator. batch_size=None yields single samples (no collation)."""

    def __init__(
        self,
        dataset: Dataset[T] | Any,
        batch_size: int | None = 1,
        shuffle: bool | None = None,
        sampler: Iterable[int] | None = None,
        batch_sampler: Iterable[list[int]] | None = None,
        num_workers: int = 0,
        collate_fn: Callable[[list[Any]], Any] | None = None,
        pin_memory: bool = False,
        drop_last: bool = False,
        timeout: float = 0,
        worker_init_fn: Callable[[int], None] | None = None,
        generator: Any = None,
        **kwargs: Any,
    ) -> None:
        self.dataset, self.num_workers, self.generator = dataset, num_workers, generator
        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable and (shuffle or sampler is not None or batch_sampler is not None):
            raise ValueError("DataLoader with IterableDataset: expected unspecified shuffle, sampler and batch_sampler")
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None and (batch_size != 1 or shuffle or sampler is not None or drop_last):
            raise ValueError(
                "batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last"
            )
        if sampler is None and not self._iterable:
            sampler = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
        if batch_sampler is None and batch_size is not None and not self._iterable:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)  # type: ignore[arg-type]
        self.sampler, self.batch_sampler = sampler, batch_sampler
        self.batch_size, self.drop_last = batch_size, drop_last
        self.collate_fn = collate_fn or default_collate
        self._default_collate = collate_fn is None

    def __iter__(self) -> Iterator[Any]:
        if self._iterable:
            yield from self._iter_stream()
            return
        if self.batch_sampler is None:  # batch_size=None: samples one by one
            for i in self.sampler:  # type: ignore[union-attr]
                yield self.dataset[i]
            return
        rows = _tensor_rows(self.dataset) if self._default_collate else None
        for indices in self.batch_sampler:
            if rows is not None:
                base, mapping = rows
                yield list(base.batch(indices if mapping is None else [mapping[i] for i in indices]))
            else:
                yield self.collate_fn([self.dataset[i] for i in indices])

    def _iter_stream(self) -> Iterator[Any]:
        if self.batch_size is None:
            yield from self.dataset
            return
        batch: list[Any] = []
        for sample in self.dataset:
            batch.append(sample)
            if len(batch) == self.batch_size:
                yield self.collate_fn(batch)
                batch = []
        if batch and not self.drop_last:
            yield self.collate_fn(batch)

    def __len__(self) -> int:
        if self._iterable:
            n = len(self.dataset)
            if self.batch_size is None:
                return n
            return n // self.batch_size if self.drop_last else math.ceil(n / self.batch_size)
        return len(self.batch_sampler if self.batch_sampler is not None else self.sampler)  # type: ignore[arg-type]


def random_split(dataset: Dataset[T], lengths: Sequence[int | float], generator: Any = None) -> list[Subset[T]]:
    """Non-overlapping random Subsets of the given lengths (or fractions summing to 1, the remainder spread
    one by one over the first subsets, as torch)."""
    n = len(dataset)  # type: ignore[arg-type]
    sizes = [int(x) for x in lengths]
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1 and any(isinstance(x, float) for x in lengths):
        for x in lengths:
            if not 0 <= x <= 1:
                raise ValueError(f"random_split: fraction at index {lengths.index(x)} is not between 0 and 1")
        sizes = [int(math.floor(n * frac)) for frac in lengths]
        for i in range(n - sum(sizes)):
            sizes[i % len(sizes)] += 1
    if sum(sizes) != n:
        raise ValueError("random_split: sum of input lengths does not equal the length of the input dataset!")
    order = _permutation(n, generator)
    out, start = [], 0
    for size in sizes:
        out.append(Subset(dataset, order[start : start + size]))
        start += size
    return out
