"""torch.utils.data.dataloader: the DataLoader that batches a dataset, and torch's default collation.

In: a dataset (indexable with a length, or iterable) and how to batch it. Out: batches, as torch's default collation
makes them (tensors stacked along a new first dim, numbers become tensors, tuples/lists/dicts collated field by
field). Iteration is lazy: each batch's indices are drawn from the sampler when the batch is asked for.

Batches of a TensorDataset (or a Subset of one) are gathered with one indexing op per tensor (`t[index]`, a kernel)
instead of one lazy op per sample and a stack of them. Loading runs in the calling thread: num_workers is accepted
and ignored (tensor ops already use every core), and get_worker_info() is None, as in torch's main process.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Generic, TypeVar

import numpy as np

from unigrad.api.random import Generator
from unigrad.dtype import dtypes
from unigrad.tensor import Tensor
from unigrad.utils.data.dataset import Dataset, IterableDataset, Subset, TensorDataset
from unigrad.utils.data.sampler import BatchSampler, RandomSampler, SequentialSampler, as_generator

__all__ = ["DataLoader", "default_collate", "get_worker_info"]

T = TypeVar("T")


def get_worker_info() -> None:
    """torch's worker information: None, as in torch's main process (unigrad loads in the calling thread)."""
    return None


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
        generator: Generator | int | None = None,
        **kwargs: Any,
    ) -> None:
        self.dataset, self.num_workers, self.generator = dataset, num_workers, as_generator(generator)
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
            sampler = RandomSampler(dataset, generator=self.generator) if shuffle else SequentialSampler(dataset)
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
