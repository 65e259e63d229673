"""unigrad.nn.datasets.digits: shapes, dtypes, ranges, the fixed stratified split, determinism."""

import sys

import numpy as np
import pytest

from unigrad import dtypes
from unigrad.nn.datasets import digits

sklearn_datasets = pytest.importorskip("sklearn.datasets")


@pytest.fixture(scope="module")
def split():
    return [t.numpy() for t in digits()]


def test_shapes_dtypes_ranges():
    x_train, y_train, x_test, y_test = digits()
    assert x_train.shape == (1438, 1, 8, 8) and x_test.shape == (359, 1, 8, 8)
    assert y_train.shape == (1438,) and y_test.shape == (359,)
    assert x_train.dtype is dtypes.float32 and y_train.dtype is dtypes.int64
    for x in (x_train.numpy(), x_test.numpy()):
        assert x.min() == 0.0 and x.max() == 1.0
        np.testing.assert_array_equal(x * 16, np.round(x * 16))  # pixel counts 0..16, divided by 16
    for y in (y_train.numpy(), y_test.numpy()):
        assert sorted(set(y.tolist())) == list(range(10))


def test_flatten_and_device(split):
    x_train, y_train, x_test, y_test = digits(flatten=True, device="PYTHON")
    assert x_train.shape == (1438, 64) and x_test.shape == (359, 64) and x_train.device == "PYTHON"
    np.testing.assert_array_equal(x_train.numpy(), split[0].reshape(-1, 64))
    np.testing.assert_array_equal(x_test.numpy(), split[2].reshape(-1, 64))
    np.testing.assert_array_equal(y_test.numpy(), split[3])


def test_deterministic(split):
    again = [t.numpy() for t in digits()]
    for a, b in zip(split, again):
        np.testing.assert_array_equal(a, b)


def test_split_is_a_stratified_partition(split):
    """Train and test together are the whole dataset, each sample once; each class gives 20% to the test set."""
    ref = sklearn_datasets.load_digits()
    x_train, y_train, x_test, y_test = split
    rows = lambda x, y: sorted(map(tuple, np.concatenate([x.reshape(len(x), -1) * 16, y[:, None]], 1)))  # noqa: E731
    all_rows = rows(np.concatenate([x_train, x_test]), np.concatenate([y_train, y_test]))
    assert all_rows == rows(ref.data.astype(np.float32) / 16, ref.target)
    counts = np.bincount(ref.target)
    np.testing.assert_array_equal(np.bincount(y_test), np.round(counts * 0.2))


def _train_indices(ref, x_train):
    """Indices into load_digits() of the training images (the dataset's 1797 images are distinct)."""
    where = {tuple(r): i for i, r in enumerate(ref.data.astype(np.float32) / 16)}
    return [where[tuple(r)] for r in x_train.reshape(len(x_train), -1)]


def test_split_pinned(split):
    """The first and last test samples, pinned: the split must never change (results in READMEs depend on it)."""
    ref = sklearn_datasets.load_digits()
    idx = _train_indices(ref, split[0])
    assert idx == sorted(idx)  # each set in the dataset's order
    test = sorted(set(range(len(ref.target))) - set(idx))
    assert len(test) == 359 and test[:5] == PINNED_TEST_HEAD and test[-5:] == PINNED_TEST_TAIL


PINNED_TEST_HEAD = [3, 10, 18, 21, 33]
PINNED_TEST_TAIL = [1774, 1780, 1785, 1791, 1796]


def test_missing_sklearn(monkeypatch):
    monkeypatch.setitem(sys.modules, "sklearn.datasets", None)
    with pytest.raises(ImportError, match="pip install scikit-learn"):
        digits()
