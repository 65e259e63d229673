"""unigrad.utils.data against torch.utils.data: the same batches (values, shapes, dtypes, structure) for
sequential loading and every collation case, shuffles that are permutations and repeat under a seed, and the
split sizes and errors torch gives."""

import numpy as np
import pytest
import torch
import torch.utils.data as tdata

import unigrad
from unigrad import Tensor
from unigrad.utils import data


def same(ours, ref) -> None:
    """Collated structures equal: containers field by field, tensors by shape, dtype name and values."""
    if isinstance(ref, torch.Tensor):
        assert isinstance(ours, Tensor), type(ours)
        assert ours.shape == tuple(ref.shape) and ours.dtype.name == str(ref.dtype).removeprefix("torch.")
        np.testing.assert_array_equal(ours.numpy(), ref.numpy())
    elif isinstance(ref, dict):
        assert ours.keys() == ref.keys()
        for k in ref:
            same(ours[k], ref[k])
    elif isinstance(ref, (list, tuple)):
        assert len(ours) == len(ref)
        for a, b in zip(ours, ref):
            same(a, b)
    else:
        assert ours == ref


def arrays(n: int = 10) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.standard_normal((n, 3)).astype(np.float32), rng.integers(0, 5, n)


@pytest.mark.parametrize("n", [0, 1, 7, 10])
@pytest.mark.parametrize("batch_size,drop_last", [(1, False), (3, False), (3, True), (16, False), (16, True)])
def test_sequential_batches_of_a_tensor_dataset(n, batch_size, drop_last):
    x, y = arrays(n)
    ours = data.DataLoader(data.TensorDataset(Tensor(x), Tensor(y)), batch_size=batch_size, drop_last=drop_last)
    ref = tdata.DataLoader(
        tdata.TensorDataset(torch.tensor(x), torch.tensor(y)), batch_size=batch_size, drop_last=drop_last
    )
    assert len(ours) == len(ref)
    same(list(ours), list(ref))


class Pairs(data.Dataset):
    """A map-style dataset of mixed samples: exercises default_collate on every kind of field."""

    def __init__(self, kind, n: int = 5) -> None:
        self.kind, self.n = kind, n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int):
        x = np.arange(3, dtype=np.float32) + i
        return {
            "tuple": (x, i),
            "dict": {"x": x, "label": float(i) / 2, "name": f"s{i}"},
            "list": [i, i * 2],
            "int": i,
            "array": x.reshape(1, 3),
        }[self.kind]


@pytest.mark.parametrize("kind", ["tuple", "dict", "list", "int", "array"])
def test_default_collation_matches_torch(kind):
    ours = list(data.DataLoader(Pairs(kind), batch_size=2))
    ref = list(tdata.DataLoader(Pairs(kind), batch_size=2))
    same(ours, ref)


def test_batch_size_none_and_custom_collate():
    x, y = arrays(4)
    ds = data.TensorDataset(Tensor(x), Tensor(y))
    samples = list(data.DataLoader(ds, batch_size=None))
    assert len(samples) == 4 and samples[2][0].shape == (3,)
    np.testing.assert_array_equal(samples[2][0].numpy(), x[2])
    sums = list(data.DataLoader(ds, batch_size=2, collate_fn=lambda b: sum(int(s[1].item()) for s in b)))
    assert sums == [int(y[0] + y[1]), int(y[2] + y[3])]


def test_shuffle_is_a_permutation_that_a_seed_repeats():
    x, y = arrays(23)
    ds = data.TensorDataset(Tensor(x), Tensor(np.arange(23)))
    loader = data.DataLoader(ds, batch_size=5, shuffle=True)
    unigrad.manual_seed(3)
    first = [int(i) for _, idx in loader for i in idx.tolist()]
    second = [int(i) for _, idx in loader for i in idx.tolist()]
    assert sorted(first) == sorted(second) == list(range(23)) and first != second
    unigrad.manual_seed(3)
    assert [int(i) for _, idx in loader for i in idx.tolist()] == first
    rows = np.concatenate([xb.numpy() for xb, _ in data.DataLoader(ds, batch_size=5, shuffle=True)])
    np.testing.assert_array_equal(np.sort(rows, axis=0), np.sort(x, axis=0))  # the rows themselves, reordered
    g = lambda: unigrad.Generator().manual_seed(7)  # noqa: E731
    a = [i.tolist() for _, i in data.DataLoader(ds, batch_size=4, shuffle=True, generator=g())]
    b = [i.tolist() for _, i in data.DataLoader(ds, batch_size=4, shuffle=True, generator=g())]
    assert a == b


def test_subset_and_concat():
    x, y = arrays(10)
    ds = data.TensorDataset(Tensor(x), Tensor(y))
    sub = data.Subset(data.Subset(ds, [9, 7, 5, 3, 1]), [4, 0, 2])  # rows 1, 9, 5: the gathered fast path
    xb, yb = next(iter(data.DataLoader(sub, batch_size=3)))
    np.testing.assert_array_equal(xb.numpy(), x[[1, 9, 5]])
    np.testing.assert_array_equal(yb.numpy(), y[[1, 9, 5]])
    cat = ds + Pairs("int", 3)
    assert len(cat) == 13 and cat[11] == 1 and cat[-1] == 2
    np.testing.assert_array_equal(cat[2][0].numpy(), x[2])
    with pytest.raises(IndexError):
        cat[13]


@pytest.mark.parametrize("lengths", [[3, 7], [0.3, 0.7], [0.33, 0.33, 0.34], [10, 0], [0.5, 0.5]])
def test_random_split_sizes_match_torch(lengths):
    ds = data.TensorDataset(Tensor(np.arange(10)))
    ours = data.random_split(ds, lengths, generator=unigrad.Generator().manual_seed(0))
    ref = tdata.random_split(range(10), lengths, generator=torch.Generator().manual_seed(0))
    assert [len(s) for s in ours] == [len(s) for s in ref]
    assert sorted(i for s in ours for i in s.indices) == list(range(10))


class Stream(data.IterableDataset):
    def __init__(self, n: int) -> None:
        self.n = n

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self) -> int:
        return self.n


@pytest.mark.parametrize("drop_last", [False, True])
def test_iterable_dataset(drop_last):
    ours = data.DataLoader(Stream(7), batch_size=3, drop_last=drop_last)
    ref = tdata.DataLoader(list(range(7)), batch_size=3, drop_last=drop_last)
    assert len(ours) == len(ref)
    same(list(ours), list(ref))


def test_samplers():
    assert list(data.SequentialSampler(range(4))) == [0, 1, 2, 3]
    assert list(data.BatchSampler(range(5), 2, False)) == [[0, 1], [2, 3], [4]]
    assert len(data.BatchSampler(range(5), 2, True)) == 2
    drawn = list(data.RandomSampler(range(5), replacement=True, num_samples=12))
    assert len(drawn) == 12 and all(0 <= i < 5 for i in drawn)
    assert sorted(data.SubsetRandomSampler([4, 8, 9])) == [4, 8, 9]
    assert len(list(data.RandomSampler(range(3), num_samples=7))) == 7


def test_errors():
    with pytest.raises(ValueError, match="size mismatch"):
        data.TensorDataset(Tensor(np.zeros(3)), Tensor(np.zeros(4)))
    with pytest.raises(ValueError, match="mutually exclusive"):
        data.DataLoader(range(4), sampler=[0, 1], shuffle=True)
    with pytest.raises(ValueError, match="batch_size should be a positive integer"):
        data.DataLoader(range(4), batch_size=0)
    with pytest.raises(ValueError, match="sum of input lengths"):
        data.random_split(range(4), [2, 3])
    with pytest.raises(ValueError, match="IterableDataset"):
        data.DataLoader(Stream(3), shuffle=True)


def test_torch_spelling_through_the_package():
    """`import unigrad as torch; torch.utils.data.DataLoader` works as torch's does."""
    x, y = arrays(6)
    loader = unigrad.utils.data.DataLoader(unigrad.utils.data.TensorDataset(Tensor(x), Tensor(y)), batch_size=4)
    assert [xb.shape for xb, _ in loader] == [(4, 3), (2, 3)]
