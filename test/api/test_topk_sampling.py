"""topk, sort and multinomial against torch (issue 34: the per-token ops of a sampling loop, in few kernels).

topk takes the plan with the fewest kernels for its size: k rounds of a packed-key max (k = 1, or a few of many),
pairwise ranks (rows up to SORT_NETWORK_MIN), a sorting network beyond. Each plan is checked against torch at sizes
that take it, on contiguous and non-contiguous inputs, forward and backward; ties come in index order, as a stable
sort orders them (torch leaves the order of ties to its kernel: its values are compared, and the indices against
its stable sort). multinomial draws by exponential races: its frequencies are checked against the weights, with
and without replacement, from fixed seeds."""

import numpy as np
import pytest
import torch

import unigrad.torch as ut
from unigrad import Tensor
from unigrad.api.movement import SORT_NETWORK_MIN, TOPK_SELECT
from unigrad.ir.ops import Ops
from unigrad.runtime import realize as rt

pytestmark = pytest.mark.flavor("torch")


def distinct(shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    """Floats with no two equal (no ties: torch's topk order is then the only one)."""
    n = int(np.prod(shape))
    return (np.random.default_rng(seed).permutation(n).astype(np.float32) - n / 2).reshape(shape) / 4


def as_input(x: np.ndarray, contiguous: bool) -> Tensor:
    """x as a lazy unigrad tensor: computed (x + 0), or a transposed view of a transposed copy (non-contiguous)."""
    if contiguous:
        return Tensor(x) + 0
    axes = tuple(range(x.ndim))[::-1]
    return Tensor(np.ascontiguousarray(x.transpose(axes))).permute(axes)


def kernels_of(*ts: Tensor) -> int:
    before = rt.stats.kernels
    Tensor.realize(*ts)
    return rt.stats.kernels - before


# the plan each case takes: rank (n <= SORT_NETWORK_MIN), rounds (k = 1, or few of many), network (many of many)
TOPK_CASES = [
    ((1,), 0, 1),  # rounds
    ((7,), 0, 3),  # rank
    ((7,), 0, 0),  # rank, nothing picked
    ((3, 33), 1, 5),  # rank
    ((3, 33), 0, 2),  # rank along a leading dim
    ((2, 5, 9), 1, 1),  # rounds along a middle dim
    ((2, 5, 9), -1, 9),  # rank: the whole row
    ((4, 64), -1, 7),  # rank at SORT_NETWORK_MIN
    ((2, 100), -1, 3),  # rounds
    ((2, 100), -1, 30),  # network
]


@pytest.mark.parametrize("shape,dim,k", TOPK_CASES)
@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("contiguous", [True, False])
def test_topk_matches_torch(shape, dim, k, largest, contiguous):
    x = distinct(shape)
    v, i = ut.topk(as_input(x, contiguous), k, dim, largest)
    rv, ri = torch.topk(torch.from_numpy(x), k, dim, largest)
    assert v.shape == tuple(rv.shape) and i.dtype == ut.int64 and v.dtype == ut.float32
    np.testing.assert_array_equal(v.numpy(), rv.numpy())
    np.testing.assert_array_equal(i.numpy(), ri.numpy())


def stable_first(x: np.ndarray, k: int, largest: bool) -> tuple[np.ndarray, np.ndarray]:
    """torch's stable sort's first k along the last axis (values, indices)."""
    rv, ri = torch.sort(torch.from_numpy(x), dim=-1, descending=largest, stable=True)
    return rv[..., :k].numpy(), ri[..., :k].numpy()


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64", "int32", "int64", "uint8", "bool"])
@pytest.mark.parametrize("n,k", [(5, 1), (33, 4), (SORT_NETWORK_MIN, 3), (100, 2), (100, 40)])
@pytest.mark.parametrize("largest", [True, False])
def test_topk_ties_and_specials_as_a_stable_sort(dtype, n, k, largest):
    """Many ties (a few distinct values), NaN above everything, +-inf, -0.0 equal to 0.0, the dtype's extremes; on a
    non-contiguous view. Indices as torch's stable sort's first k; values as torch's topk's."""
    rng = np.random.default_rng(n * 7 + k)
    if dtype == "bool":
        x = rng.integers(0, 2, (3, n)).astype(bool)
    elif dtype.startswith("float"):
        x = (rng.integers(-3, 4, (3, n)) / 2).astype(dtype)
        x[0, :5] = [np.nan, -0.0, np.inf, 0.0, -np.inf][: min(5, n)]
        x[1, -2:] = np.nan
    else:
        info = np.iinfo(dtype)
        x = rng.integers(0 if info.min == 0 else -3, 4, (3, n)).astype(dtype)
        x[2, :2] = [info.max, info.min]
    t = Tensor(np.ascontiguousarray(x.T)).permute(1, 0)
    v, i = t.topk(k, -1, largest)
    want_v, want_i = stable_first(x, k, largest)
    np.testing.assert_array_equal(i.numpy(), want_i)
    np.testing.assert_array_equal(v.numpy(), want_v)
    if dtype != "bool":  # (torch's topk takes no bools on CPU)
        np.testing.assert_array_equal(v.numpy(), torch.topk(torch.from_numpy(x), k, -1, largest).values.numpy())


@pytest.mark.parametrize("shape,k", [((6,), 1), ((3, 20), 4), ((3, 20), 20), ((2, 100), 3), ((2, 100), 30)])
@pytest.mark.parametrize("largest", [True, False])
def test_topk_values_backward_matches_torch(shape, k, largest):
    x = distinct(shape, seed=3)
    w = np.random.default_rng(1).standard_normal((*shape[:-1], k)).astype(np.float32)
    t, r = Tensor(x, requires_grad=True), torch.from_numpy(x).requires_grad_()
    (ut.topk(t * 1, k, -1, largest).values * Tensor(w)).sum().backward()
    (torch.topk(r, k, -1, largest).values * torch.from_numpy(w)).sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), r.grad.numpy())


@pytest.mark.parametrize("shape,dim", [((1,), 0), ((9,), 0), ((4, 17), 1), ((4, 17), 0), ((3, 64), -1), ((2, 65), 1)])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_matches_torch_stable(shape, dim, descending):
    x = (np.random.default_rng(2).integers(-4, 5, shape) / 2).astype(np.float32)  # ties
    t = as_input(x, contiguous=False)
    v, i = ut.sort(t, dim, descending)
    rv, ri = torch.sort(torch.from_numpy(x), dim=dim, descending=descending, stable=True)
    np.testing.assert_array_equal(v.numpy(), rv.numpy())
    np.testing.assert_array_equal(i.numpy(), ri.numpy())
    assert i.dtype == ut.int64


def test_topk_and_multinomial_kernels():
    """A sampling step's topk of a short row is two reduce kernels (the ranks, then the values), k = 1 is one, and
    one multinomial draw is one: exponential races whose first arrival is a max of packed keys."""
    w = Tensor(distinct((2, 32))).realize()
    # each result is made outside the assert (pytest keeps what an assert line made alive: a live lazy tensor, the
    # other half of a (values, indices) pair, would be realized with it)
    values = ut.topk(w * 2, 5).values
    assert kernels_of(values) == 2
    first = ut.topk(w * 2, 1).indices
    assert kernels_of(first) == 1
    draw = ut.multinomial(w.sigmoid(), 1)
    assert kernels_of(draw) == 1
    draws = ut.multinomial(w.sigmoid(), 4, replacement=True)
    assert kernels_of(draws) == 1


def test_a_list_index_stepping_evenly_is_a_slice():
    """x[:, [-1]] of a lazy tensor is x[:, -1:] (no index buffer, no indirect load); other lists stay advanced
    indices. Over a buffer a list index stays a copy, as torch's: a write to it leaves the buffer alone."""
    x = distinct((3, 6))
    t, r = Tensor(x) * 1, torch.from_numpy(x)
    last = t[:, [-1]]
    assert Ops.INDEX not in [u.op for u in last.uop.toposort()]
    for index in [(slice(None), [-1]), (slice(None), [1, 3, 5]), ([-2, -1],), (1, [0, 1, 2]), (slice(None), [2, 0])]:
        np.testing.assert_array_equal(t[index].numpy(), r[index].numpy())
    np.testing.assert_array_equal(t[:, [4, 4]].numpy(), r[:, [4, 4]].numpy())
    with pytest.raises(IndexError, match="index 6 is out of bounds for dimension 1 with size 6"):
        t[:, [5, 6]]
    buf = Tensor(x).realize()
    copy = buf[:, [0]]
    copy[0] = 100.0
    assert buf.numpy()[0, 0] == x[0, 0] and copy.numpy()[0, 0] == 100.0


def frequencies(draws: np.ndarray, n: int) -> np.ndarray:
    return np.bincount(draws.reshape(-1), minlength=n) / draws.size


def assert_near(freq: np.ndarray, p: np.ndarray, draws: int) -> None:
    """Observed frequencies within 5 standard deviations of the probabilities (exact where p is 0)."""
    assert (np.abs(freq - p) <= 5 * np.sqrt(p * (1 - p) / draws)).all(), (freq, p)


def test_multinomial_with_replacement_follows_the_weights():
    ut.manual_seed(0)
    w = np.array([0.0, 1.0, 2.0, 0.0, 5.0, 0.5], dtype=np.float32)
    p = w / w.sum()
    draws = ut.multinomial(Tensor(w), 20000, replacement=True)
    assert draws.shape == (20000,) and draws.dtype == ut.int64
    f = frequencies(draws.numpy(), 6)
    assert f[0] == 0 and f[3] == 0
    assert_near(f, p, 20000)
    rows = ut.multinomial(Tensor(np.tile(w, (5000, 1))), 1)  # one draw from each of many rows
    assert rows.shape == (5000, 1)
    assert_near(frequencies(rows.numpy(), 6), p, 5000)


def test_multinomial_without_replacement_follows_the_weights():
    """Two draws without replacement from many rows of [1, 2, 3, 4]: P(i then j) = w_i / W * w_j / (W - w_i)."""
    ut.manual_seed(1)
    w = np.array([1.0, 2.0, 3.0, 4.0], dtype=np.float32)
    draws = ut.multinomial(Tensor(np.tile(w, (20000, 1))), 2).numpy()
    assert (draws[:, 0] != draws[:, 1]).all()
    pairs = np.bincount(draws[:, 0] * 4 + draws[:, 1], minlength=16).reshape(4, 4) / 20000
    want = np.array([[wi / 10 * wj / (10 - wi) if i != j else 0 for j, wj in enumerate(w)] for i, wi in enumerate(w)])
    assert_near(pairs, want, 20000)
    # zero weights come after every positive one, in index order (the race's ties)
    rows = ut.multinomial(Tensor(np.tile(np.array([0.0, 3.0, 0.0, 1.0], np.float32), (50, 1))), 4).numpy()
    assert {tuple(sorted(r[:2])) for r in rows} == {(1, 3)} and (rows[:, 2:] == [0, 2]).all()
    permutation = ut.multinomial(Tensor(w), 4).numpy()
    assert sorted(permutation.tolist()) == [0, 1, 2, 3]


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_multinomial_dtypes_views_and_tiny_weights(dtype):
    ut.manual_seed(2)
    w = np.array([[0.0, 2.0], [1.0, 0.0], [1.0, 1.0]], dtype=dtype)
    t = Tensor(np.ascontiguousarray(w.T)).permute(1, 0)  # non-contiguous rows
    draws = ut.multinomial(t, 3, replacement=True).numpy()
    assert draws.shape == (3, 3) and (draws[0] == 1).all() and (draws[1] == 0).all()
    tiny = np.array([0.0, 1e-30 if dtype != "float16" else 1e-7, 0.0], dtype=dtype)  # never a zero weight instead
    assert (ut.multinomial(Tensor(tiny), 50, replacement=True).numpy() == 1).all()
    if dtype == "float32":
        assert (ut.multinomial(Tensor(np.array([0, 1e-45, 0], np.float32)), 50, True).numpy() == 1).all()
    logits = Tensor(distinct((2, 8))) * 1  # softmax probabilities of a lazy tensor, as a sampling loop draws them
    assert ut.multinomial(ut.softmax(logits, -1), 1).shape == (2, 1)


def test_multinomial_repeats_from_a_seed_and_a_generator():
    w = Tensor(np.arange(1, 9, dtype=np.float32))
    ut.manual_seed(5)
    first = [ut.multinomial(w, 3).numpy(), ut.multinomial(w, 6, True).numpy()]
    ut.manual_seed(5)
    again = [ut.multinomial(w, 3).numpy(), ut.multinomial(w, 6, True).numpy()]
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)
    g = ut.Generator().manual_seed(3)
    one = ut.multinomial(w, 5, generator=g).numpy()
    np.testing.assert_array_equal(one, ut.multinomial(w, 5, generator=g.manual_seed(3)).numpy())


@pytest.mark.parametrize(
    "shape,num_samples,replacement",
    [((2, 2, 2), 1, False), ((), 1, False), ((3,), 0, False), ((3,), -1, True), ((3,), 4, False), ((2, 0), 1, False)],
)
def test_multinomial_errors_are_torchs(shape, num_samples, replacement):
    with pytest.raises(RuntimeError) as ours:
        ut.multinomial(Tensor(np.ones(shape, np.float32)), num_samples, replacement)
    with pytest.raises(RuntimeError) as theirs:
        torch.multinomial(torch.ones(shape), num_samples, replacement)
    assert str(ours.value) == str(theirs.value)


def test_topk_select_bound_is_the_rounds_limit():
    """k up to TOPK_SELECT of many elements are picked in rounds: one reduce kernel each."""
    x = Tensor(distinct((2, 200))).realize()
    indices = ut.topk(x, TOPK_SELECT).indices
    assert kernels_of(indices) == TOPK_SELECT + 1  # and the one that joins the picks
