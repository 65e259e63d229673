"""Checks of the data that torch makes at the call (a class index, an embedding index, a gather or x[idx] index
out of range): unigrad computes them with the next realize and raises torch's error there, naming the op and a bad
value, instead of a silently wrong loss or lookup. In range values, ignore_index and TinyJit replays are not
affected, and ops whose indices are in range by construction (sort, median, topk, quantile) queue no check. The
torch ops that take an index tensor (index_select, index_fill, index_put, take) check theirs the same way: the call
reads no values."""

import importlib

import numpy as np
import pytest
import torch

import unigrad.nn.functional as F
from unigrad import Tensor, TinyJit, nn

rng = np.random.default_rng(0)
ut = importlib.import_module("unigrad.tensor")  # unigrad.tensor is torch.tensor, the function


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


@pytest.mark.parametrize("shape,dim", [((3, 5), 1), ((4, 1, 3), 0), ((2, 7), -1), ((1,), 0)])
@pytest.mark.parametrize("grad", [False, True])
def test_gather_index_out_of_range(shape, dim, grad):
    x = rng.standard_normal(shape).astype(np.float32)
    n = shape[dim]
    idx = rng.integers(0, n, size=shape).astype(np.int64)
    ours = Tensor(x, requires_grad=grad).gather(dim, Tensor(idx))
    np.testing.assert_array_equal(ours.numpy(), torch.from_numpy(x).gather(dim, torch.from_numpy(idx)).numpy())
    for bad in (n, -1):  # torch.gather counts no index from the end
        wrong = idx.copy()
        wrong.flat[-1] = bad
        with pytest.raises(RuntimeError, match=rf"gather: index {bad} is out of bounds for dimension \d with size {n}"):
            Tensor(x, requires_grad=grad).gather(dim, Tensor(wrong)).numpy()
        with pytest.raises(RuntimeError, match=f"index {bad} is out of bounds"):
            torch.from_numpy(x).gather(dim, torch.from_numpy(wrong))


@pytest.mark.parametrize("index", [lambda i: i, lambda i: (slice(None), i), lambda i: (i, slice(1, 3))])
def test_getitem_tensor_index_out_of_range(index):
    x = rng.standard_normal((4, 6)).astype(np.float32)
    good = np.array([[0, -1], [3, -4]], np.int64)  # negatives count from the end, as torch
    ours, ref = Tensor(x)[index(Tensor(good))], torch.from_numpy(x)[index(torch.from_numpy(good))]
    np.testing.assert_array_equal(ours.numpy(), ref.numpy())
    for bad in (4, -5):  # past either end of the 4 rows (or the first 4 of the 6 columns: 4 and -5 are in range)
        idx = np.array([[0, bad]], np.int64)
        out = Tensor(x)[index(Tensor(idx))]
        try:
            want = torch.from_numpy(x)[index(torch.from_numpy(idx))].numpy()
        except IndexError:
            with pytest.raises(IndexError, match=rf"__getitem__: index {bad} is out of bounds for dimension \d"):
                out.numpy()
        else:
            np.testing.assert_array_equal(out.numpy(), want)


def test_setitem_tensor_index_out_of_range():
    x = Tensor.zeros(3, 2).contiguous()
    x[Tensor([0, 5])] = 1.0
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 with size 3"):
        x.numpy()


def test_in_range_by_construction_queues_no_check():
    x = logits(5, 40)
    ut._checks.clear()
    outs = [x.sort(1)[0], x.median(1)[0], x.topk(3)[0], x.quantile(0.3, dim=1), x.nanmedian(1)[0], x.max(dim=1)[1]]
    assert not ut._checks
    Tensor.realize(*outs)


@pytest.mark.parametrize(
    "op,match",
    [
        (lambda x, i: x.index_select(1, i), "index_select: index 6 is out of range for dimension 1 with size 6"),
        (lambda x, i: x.index_fill(1, i, 2.0), "index_fill: index 6 is out of range for dimension 1 with size 6"),
        (lambda x, i: x.index_put((i,), Tensor(1.0), accumulate=True), "index_put: index 6 .* dimension 0 with size 4"),
        (lambda x, i: x.take(i), None),
        (lambda x, i: x.index_add(1, i.abs(), Tensor.ones(4, 3)), "index_add: index 6 is out of range for dimension 1"),
        (lambda x, i: x.index_add(1, i, Tensor.ones(4, 3)), "index_add: index -1 is out of range"),  # no negatives
    ],
)
def test_index_tensor_ops_check_at_the_realize(op, match):
    x = logits(4, 6)
    ok = Tensor(np.array([0, 3, -1], np.int64))
    if "-1" in (match or ""):  # the bad index is the -1 of these
        with pytest.raises(IndexError, match=match):
            op(x, ok).numpy()  # index_add sorts its index when called (that realize raises: at the call, as torch)
        return
    ut._checks.clear()
    op(x, ok).numpy()  # in range: nothing raised, the queued check passed
    bad = Tensor(np.array([1, 6, 2], np.int64))
    bad.realize()
    if match is None:  # take: 6 is a position of the 24 elements
        np.testing.assert_array_equal(op(x, bad).numpy(), x.numpy().reshape(-1)[[1, 6, 2]])
        return
    with pytest.raises(IndexError, match=match):
        op(x, bad).numpy()  # index_add (index_put accumulating) raises at the call, the others at the realize
    if "index_add" not in match and "index_put" not in match:
        out = op(x, bad)  # the call reads no values: it cannot raise yet
        with pytest.raises(IndexError, match=match):
            out.numpy()
