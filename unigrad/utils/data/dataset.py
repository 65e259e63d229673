"""torch.utils.data.dataset: map-style and iterable datasets, their subsets and concatenations, random_split.

In: tensors, other datasets, index lists. Out: datasets indexable by position (`dataset[i]`, len) or iterable.
A TensorDataset (or a Subset of one) also answers `batch(indices)`: the rows gathered with one indexing op per
tensor, which the DataLoader uses instead of one lazy op per sample and a stack of them.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Iterable, Iterator, Sequence
from typing import Generic, TypeVar

import numpy as np

from unigrad.api.random import Generator
from unigrad.tensor import Tensor
from unigrad.utils.data.sampler import as_generator, permutation

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "Subset", "ConcatDataset", "random_split"]

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
        self.cumulative_sizes = list(itertools.accumulate(len(d) for d in self.datasets))  # type: ignore[arg-type]

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


def random_split(
    dataset: Dataset[T], lengths: Sequence[int | float], generator: Generator | int | None = None
) -> list[Subset[T]]:
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
    order = permutation(n, as_generator(generator))
    out, start = [], 0
    for size in sizes:
        out.append(Subset(dataset, order[start : start + size]))
        start += size
    return out
