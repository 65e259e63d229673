"""torch.utils.data's module files (dataset, sampler, dataloader) through the torch facade, lazy samplers (an endless
RandomSampler yields its first batches at once in little memory), WeightedRandomSampler against torch's, and
seeded orders that repeat."""

import importlib
import time
import tracemalloc

import pytest
import torch
import torch.utils.data as tdata

import unigrad
from unigrad import Tensor
from unigrad.utils import data

pytestmark = pytest.mark.flavor("torch")

TORCH_FILES = {
    "dataset": ["Dataset", "IterableDataset", "TensorDataset", "Subset", "ConcatDataset", "random_split"],
    "sampler": [
        "Sampler",
        "SequentialSampler",
        "RandomSampler",
        "SubsetRandomSampler",
        "WeightedRandomSampler",
        "BatchSampler",
    ],  # fmt: skip
    "dataloader": ["DataLoader", "default_collate", "get_worker_info"],
}


@pytest.mark.parametrize("file", sorted(TORCH_FILES))
def test_torch_module_files_hold_torch_names(file):
    """`from torch.utils.data.<file> import <name>` finds each name torch keeps there, the same object as
    unigrad.utils.data's."""
    ours = importlib.import_module(f"unigrad.torch.utils.data.{file}")
    ref = importlib.import_module(f"torch.utils.data.{file}")
    for name in TORCH_FILES[file]:
        assert hasattr(ref, name), f"torch.utils.data.{file} has no {name}: the table is wrong"
        assert getattr(ours, name) is getattr(data, name)


def test_package_still_exports_what_the_module_did():
    names = ["Dataset", "IterableDataset", "TensorDataset", "Subset", "ConcatDataset", "random_split", "Generator",
             "Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "BatchSampler", "DataLoader",
             "default_collate"]  # fmt: skip
    for name in names:
        assert name in data.__all__ and getattr(data, name) is not None
    assert data.Generator is unigrad.Generator
    assert data.get_worker_info() is tdata.get_worker_info() is None


def _first_batches(make, n: int) -> tuple[list, float, int]:
    """The first n items of make(), the seconds it took and the peak memory Python allocated meanwhile."""
    tracemalloc.start()
    start = time.perf_counter()
    it = iter(make())
    out = [next(it) for _ in range(n)]
    seconds = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return out, seconds, peak


@pytest.mark.parametrize("replacement", [True, False])
def test_endless_random_sampler_is_lazy(replacement):
    """RandomSampler(num_samples=10**10), an endless trainer's: the first batches come at once, in constant memory
    (10**10 indices drawn up front would take 80 GB and minutes)."""
    ds = data.TensorDataset(Tensor.arange(50).reshape(50, 1))
    sampler = data.RandomSampler(ds, replacement=replacement, num_samples=10**10)
    assert len(sampler) == 10**10
    loader = data.DataLoader(ds, batch_size=8, sampler=sampler)
    batches, seconds, peak = _first_batches(lambda: loader, 20)
    assert seconds < 30 and peak < 50 * 2**20, (seconds, peak)
    rows = [int(v) for (xb,) in batches for v in xb.reshape(-1).tolist()]
    assert len(rows) == 160 and all(0 <= v < 50 for v in rows)
    if not replacement:  # permutation after permutation: each run of 50 holds every index once
        assert sorted(rows[:50]) == sorted(rows[50:100]) == list(range(50))


def test_sampler_lengths_and_counts_match_torch():
    ds = list(range(10))
    for kw in [dict(replacement=True, num_samples=45), dict(num_samples=23), dict()]:
        ours, ref = list(data.RandomSampler(ds, **kw)), list(tdata.RandomSampler(ds, **kw))
        assert len(ours) == len(ref) and set(ours) <= set(range(10))
        if not kw.get("replacement"):
            whole = len(ref) // 10 * 10  # whole permutations, then a part of one (distinct indices)
            assert sorted(ours[:whole]) == sorted(ref[:whole]) and len(set(ours[whole:])) == len(ref) - whole
    sub = list(data.SubsetRandomSampler([3, 5, 7, 9]))
    assert sorted(sub) == [3, 5, 7, 9]
    assert list(data.BatchSampler(data.SequentialSampler(ds), 4, False)) == list(
        tdata.BatchSampler(tdata.SequentialSampler(ds), 4, False)
    )


def test_weighted_random_sampler():
    """Indices by weight: a zero weight is never drawn, frequencies follow the weights (as torch's), without
    replacement each index at most once; torch's errors for bad arguments."""
    weights = [0.0, 1.0, 3.0, 0.0, 6.0]
    unigrad.manual_seed(0)
    ours = list(data.WeightedRandomSampler(weights, 5000))
    ref = list(tdata.WeightedRandomSampler(weights, 5000, generator=torch.Generator().manual_seed(0)))
    assert len(ours) == len(ref) == 5000 and {0, 3}.isdisjoint(ours)
    for i in (1, 2, 4):
        assert abs(ours.count(i) / 5000 - ref.count(i) / 5000) < 0.04, i
    once = list(data.WeightedRandomSampler(weights, 3, replacement=False))
    assert sorted(once) == [1, 2, 4]
    with pytest.raises(ValueError, match="num_samples should be a positive integer"):
        data.WeightedRandomSampler(weights, 0)
    with pytest.raises(TypeError, match="replacement should be a boolean"):
        data.WeightedRandomSampler(weights, 3, replacement=1)
    with pytest.raises(ValueError, match="weights should be a 1d sequence"):
        data.WeightedRandomSampler([[1.0, 2.0]], 3)


def test_generators_repeat_their_orders():
    """The same seed gives the same order (per sampler, loader and split); an int seed works as a Generator seeded
    with it; successive epochs of one generator differ."""
    ds = list(range(40))

    def orders(gen):
        sampler = data.RandomSampler(ds, generator=gen)
        return [list(sampler), list(sampler)]

    a, b = orders(unigrad.Generator().manual_seed(5)), orders(unigrad.Generator().manual_seed(5))
    assert a == b and a[0] != a[1] and sorted(a[0]) == ds
    assert orders(5) == a
    withrep = [list(data.RandomSampler(ds, True, 70, generator=unigrad.Generator().manual_seed(2))) for _ in range(2)]
    assert withrep[0] == withrep[1]
    splits = [
        [s.indices for s in data.random_split(ds, [0.25, 0.75], generator=unigrad.Generator().manual_seed(9))]
        for _ in range(2)
    ]
    assert splits[0] == splits[1]
    with pytest.raises(TypeError, match="generator: expected a unigrad.Generator"):
        data.RandomSampler(ds, generator="seed")
