"""Small datasets as tensors, for examples and tests. Nothing is downloaded.

scikit-learn is an optional dependency (`pip install scikit-learn`, or the `examples` extra): imported only
when a dataset that needs it is asked for.
"""

from __future__ import annotations

import numpy as np

from unigrad.tensor import Tensor

DIGITS_TEST_FRACTION = 0.2


def _splitmix64(x: np.ndarray) -> np.ndarray:
    """SplitMix64's output function on uint64s: a fixed, well-mixed hash that no numpy version can change
    (a seeded numpy Generator is free to change its algorithms between releases)."""
    x = x + np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def _digits_test_mask(y: np.ndarray) -> np.ndarray:
    """The fixed stratified split: within each class, the samples ordered by splitmix64(index), and the first
    round(20% of the class) of them are test samples."""
    key = _splitmix64(np.arange(len(y), dtype=np.uint64))
    test = np.zeros(len(y), dtype=bool)
    for c in np.unique(y):
        members = np.flatnonzero(y == c)
        members = members[np.argsort(key[members], kind="stable")]
        test[members[: round(len(members) * DIGITS_TEST_FRACTION)]] = True
    return test


def digits(flatten: bool = False, device: str | None = None) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """scikit-learn's bundled 8x8 handwritten digits (1797 images, 10 classes; `sklearn.datasets.load_digits`,
    no download) as (X_train, Y_train, X_test, Y_test).

    X is float32 in [0, 1] (the 0..16 pixel counts divided by 16), shaped (N, 1, 8, 8) (channels first, for
    convolutions) or, with flatten=True, (N, 64). Y is int64 class labels 0..9.

    The split is fixed and stratified: in each class, 20% of its samples (rounded; 359 in all) are the test set,
    chosen by a hash of the sample's index (SplitMix64), so every run and every numpy version gives the same
    1438 train / 359 test samples, each set in the dataset's original order. (The dataset is ordered by writer:
    its last 20% alone would test on unseen writers, a harder and lopsided split.)
    """
    try:
        from sklearn.datasets import load_digits
    except ImportError as e:
        raise ImportError(
            "unigrad.nn.datasets.digits needs scikit-learn: pip install scikit-learn (or unigrad[examples])"
        ) from e
    data = load_digits()
    x = (np.asarray(data.data, dtype=np.float32) / 16).reshape((-1, 64) if flatten else (-1, 1, 8, 8))
    y = np.asarray(data.target, dtype=np.int64)
    test = _digits_test_mask(y)
    return (
        Tensor(x[~test], device=device),
        Tensor(y[~test], device=device),
        Tensor(x[test], device=device),
        Tensor(y[test], device=device),
    )
