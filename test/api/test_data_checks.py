"""Checks of the data that torch makes at the call (a class index or an embedding index out of range): unigrad
computes them with the next realize and raises torch's IndexError there, naming the op and a bad value, instead of
a silently wrong loss or lookup. In range values, ignore_index and TinyJit replays are not affected."""

import numpy as np
import pytest

import unigrad.nn.functional as F
from unigrad import Tensor, TinyJit, nn

rng = np.random.default_rng(0)


def logits(*shape: int) -> Tensor:
    return Tensor(rng.standard_normal(shape).astype(np.float32))


@pytest.mark.parametrize(
    "loss,match",
    [
        (lambda x, y: F.cross_entropy(x, y), r"cross_entropy: target 7 is out of bounds .*\[0, 4\]"),
        (lambda x, y: x.cross_entropy(y), r"cross_entropy: target 7 is out of bounds"),
        (lambda x, y: F.nll_loss(x.log_softmax(1), y), r"nll_loss: target 7 is out of bounds"),
        (lambda x, y: x.sparse_categorical_crossentropy(y), r"sparse_categorical_crossentropy: target 7"),
    ],
)
def test_out_of_range_class_raises_at_the_realize(loss, match):
    x = logits(4, 5)
    out = loss(x, Tensor([1, 2, 7, 0]))
    with pytest.raises(IndexError, match=match):
        out.item()
    out.item()  # reported once: the value itself was computed
    assert np.isfinite(loss(x, Tensor([1, 2, 4, 0])).item())  # in range: no error


def test_ignore_index_and_negative_targets():
    x = logits(3, 4)
    assert np.isfinite(F.cross_entropy(x, Tensor([1, -100, 2])).item())
    with pytest.raises(IndexError, match="target -5 is out of bounds"):
        F.cross_entropy(x, Tensor([1, -5, 2])).item()
    with pytest.raises(IndexError, match="2 such target"):
        F.cross_entropy(x, Tensor([9, -5, 2]), ignore_index=-1).item()


def test_embedding_index_out_of_range():
    e = nn.Embedding(10, 3)
    with pytest.raises(IndexError, match=r"Embedding\(\): index 12 is out of range for 10 embeddings"):
        e(Tensor([1, 12, 3])).numpy()
    with pytest.raises(IndexError, match=r"embedding\(\): index -1 is out of range for 4 embeddings"):
        F.embedding(Tensor([-1, 0]), Tensor(np.ones((4, 2), np.float32))).numpy()
    assert e(Tensor([0, 9])).shape == (2, 3)


def test_checks_stay_out_of_tinyjit_replays():
    x = logits(4, 5)
    step = TinyJit(lambda y: F.cross_entropy(x, y))
    for _ in range(3):
        assert np.isfinite(step(Tensor([1, 2, 3, 0])).item())
