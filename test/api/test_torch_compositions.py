"""torch functions built as compositions of unigrad ops (tensordot, kron, cdist, pdist, block_diag, the *_scatter
family, histc, renorm, trapezoid, ...) and the top-level spellings of Tensor methods, against torch: shapes, dtypes,
values on random, empty, size-1 and non-contiguous inputs, gradients through backward, and torch's errors."""

import numpy as np
import pytest
import torch

import unigrad as u
from unigrad import Tensor

rng = np.random.default_rng(0)


def f32(*shape: int) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


def check(ours, ref, atol: float = 1e-5) -> None:
    """Same shape, dtype name and values (tuples pairwise)."""
    if isinstance(ref, (tuple, list)):
        assert len(ours) == len(ref)
        for a, b in zip(ours, ref):
            check(a, b, atol)
        return
    assert ours.shape == tuple(ref.shape), (ours.shape, tuple(ref.shape))
    assert ours.dtype.name == str(ref.dtype).removeprefix("torch."), (ours.dtype, ref.dtype)
    np.testing.assert_allclose(ours.numpy(), ref.detach().numpy(), atol=atol, rtol=1e-4, equal_nan=True)


def check_grads(fn_ours, fn_torch, *arrays: np.ndarray, atol: float = 1e-4) -> None:
    """Forward and the input gradients (through a random projection of the output) equal torch's."""
    ours = [Tensor(a, requires_grad=True) for a in arrays]
    refs = [torch.tensor(a, requires_grad=True) for a in arrays]
    out, ref = fn_ours(*ours), fn_torch(*refs)
    check(out, ref, atol)
    proj = rng.standard_normal(tuple(ref.shape)).astype(np.float32)
    (out * Tensor(proj)).sum().backward()
    (ref * torch.from_numpy(proj)).sum().backward()
    for o, r in zip(ours, refs):
        check(o.grad, r.grad, atol)


@pytest.mark.parametrize(
    "sa,sb,dims",
    [((2, 3, 4), (4, 3, 5), ([1, 2], [1, 0])), ((3, 4), (4, 5), 1), ((3, 4), (4, 5), 0), ((3, 4), (3, 4), 2)]
    + [((1, 1), (1, 1), 1), ((0, 3), (3, 2), 1), ((2, 5, 3), (5, 2), ([0, 1], [1, 0]))],
)
def test_tensordot(sa, sb, dims):
    check_grads(lambda a, b: u.tensordot(a, b, dims), lambda a, b: torch.tensordot(a, b, dims), f32(*sa), f32(*sb))


def test_tensordot_errors():
    with pytest.raises(RuntimeError, match="contracted dimensions need to match"):
        u.tensordot(Tensor(f32(2, 3)), Tensor(f32(4, 2)), 1)
    with pytest.raises(RuntimeError, match="same length"):
        u.tensordot(Tensor(f32(2, 3)), Tensor(f32(3, 2)), ([1], [0, 1]))


@pytest.mark.parametrize("sa,sb", [((2, 3), (3, 1, 2)), ((1,), (4,)), ((2, 2), (2, 2)), ((3,), (0, 2))])
def test_kron(sa, sb):
    check_grads(lambda a, b: a.kron(b), torch.kron, f32(*sa), f32(*sb))
    a, b = rng.integers(-3, 3, sa), rng.integers(-3, 3, sb)
    check(u.kron(Tensor(a), Tensor(b)), torch.kron(torch.tensor(a), torch.tensor(b)))


@pytest.mark.parametrize("p", [2.0, 1.0, 0.5, 3.0, float("inf")])
@pytest.mark.parametrize("sa,sb", [((5, 3), (4, 3)), ((2, 5, 3), (2, 1, 3)), ((1, 1), (1, 1)), ((0, 2), (3, 2))])
def test_cdist(p, sa, sb):
    a, b = f32(*sa), f32(*sb)
    check_grads(lambda x, y: u.cdist(x, y, p), lambda x, y: torch.cdist(x, y, p), a, b, atol=2e-4)


def test_cdist_and_pdist_errors():
    with pytest.raises(RuntimeError, match="same number of columns"):
        u.cdist(Tensor(f32(2, 3)), Tensor(f32(2, 4)))
    with pytest.raises(RuntimeError, match="at least 2D"):
        u.cdist(Tensor(f32(3)), Tensor(f32(2, 3)))
    with pytest.raises(RuntimeError, match="only supports 2D"):
        u.pdist(Tensor(f32(2, 3, 4)))


@pytest.mark.parametrize("n", [0, 1, 2, 6])
@pytest.mark.parametrize("p", [2.0, 1.0])
def test_pdist(n, p):
    x = f32(n, 3)
    check(u.pdist(Tensor(x), p), torch.pdist(torch.tensor(x), p), 1e-4)
    if n >= 2:
        check_grads(lambda t: u.pdist(t, p), lambda t: torch.pdist(t, p), x)


def test_broadcast_tensors_and_shapes():
    a, b = f32(3, 1), f32(1, 4)
    check(u.broadcast_tensors(Tensor(a), Tensor(b)), torch.broadcast_tensors(torch.tensor(a), torch.tensor(b)))
    assert u.broadcast_shapes((3, 1), (4,), 1) == tuple(torch.broadcast_shapes((3, 1), (4,), 1))
    with pytest.raises(RuntimeError):
        u.broadcast_shapes((3,), (4,))


def test_block_diag():
    a, b, c = f32(2, 3), f32(3), np.array(5.0, np.float32)
    check_grads(u.block_diag, torch.block_diag, a, b, c)
    ints = rng.integers(0, 9, (2, 2))
    check(u.block_diag(Tensor(ints), Tensor(a)), torch.block_diag(torch.tensor(ints), torch.tensor(a)))
    check(u.block_diag(Tensor(f32(0, 2)), Tensor(b)), torch.block_diag(torch.zeros(0, 2), torch.tensor(b)))
    assert u.block_diag().shape == tuple(torch.block_diag().shape)
    with pytest.raises(RuntimeError, match="2 or fewer dimensions"):
        u.block_diag(Tensor(f32(1, 2, 3)))


def test_cartesian_prod():
    xs = [np.array([1, 2, 3]), np.array([4, 5]), np.array([6, 7])]
    check(u.cartesian_prod(*map(Tensor, xs)), torch.cartesian_prod(*map(torch.tensor, xs)))
    check(u.cartesian_prod(Tensor(xs[0])), torch.cartesian_prod(torch.tensor(xs[0])))
    check(
        u.cartesian_prod(Tensor(xs[0]), Tensor(np.zeros(0, np.int64))),
        torch.cartesian_prod(*map(torch.tensor, [xs[0], np.zeros(0, np.int64)])),
    )


@pytest.mark.parametrize(
    "row,col,offset", [(3, 4, 0), (4, 3, 1), (4, 4, -1), (1, 1, 0), (0, 3, 0), (3, 3, 5), (5, 2, -9)]
)
def test_tril_triu_indices(row, col, offset):
    check(u.tril_indices(row, col, offset), torch.tril_indices(row, col, offset))
    check(u.triu_indices(row, col, offset), torch.triu_indices(row, col, offset))
    check(u.tril_indices(row, col, offset, dtype=u.int32), torch.tril_indices(row, col, offset, dtype=torch.int32))


@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (2, 3, 4)])
def test_atleast_nd(n, shape):
    x = f32(*shape)
    check(getattr(u, f"atleast_{n}d")(Tensor(x)), getattr(torch, f"atleast_{n}d")(torch.tensor(x)))
    pair = (f32(3), f32(2, 2))
    ours = getattr(u, f"atleast_{n}d")(*map(Tensor, pair))
    check(ours, getattr(torch, f"atleast_{n}d")(*map(torch.tensor, pair)))


def test_column_stack_dstack_row_stack():
    a, b = f32(3), f32(3, 2)
    check(u.column_stack([Tensor(a), Tensor(b)]), torch.column_stack([torch.tensor(a), torch.tensor(b)]))
    c, d = f32(2, 3), f32(2, 3)
    check(u.dstack([Tensor(c), Tensor(d)]), torch.dstack([torch.tensor(c), torch.tensor(d)]))
    check(u.row_stack([Tensor(a), Tensor(a)]), torch.vstack([torch.tensor(a), torch.tensor(a)]))


@pytest.mark.parametrize("shape,dim", [((3, 5), -1), ((3, 5), 0), ((4,), 0), ((3, 1), -1), ((3, 0), -1)])
def test_trapezoid(shape, dim):
    y = f32(*shape)
    check(u.trapezoid(Tensor(y), dim=dim), torch.trapezoid(torch.tensor(y), dim=dim))
    check(u.trapezoid(Tensor(y), dx=0.5, dim=dim), torch.trapezoid(torch.tensor(y), dx=0.5, dim=dim))
    check(u.cumulative_trapezoid(Tensor(y), dim=dim), torch.cumulative_trapezoid(torch.tensor(y), dim=dim))
    x = np.sort(f32(shape[dim]))
    check(u.trapezoid(Tensor(y), Tensor(x), dim=dim), torch.trapezoid(torch.tensor(y), torch.tensor(x), dim=dim))
    if shape[dim] > 1:
        check_grads(lambda t: u.trapezoid(t, dim=dim), lambda t: torch.trapezoid(t, dim=dim), y)


@pytest.mark.parametrize("offset,d1,d2", [(0, -2, -1), (1, 0, 2), (-2, 1, 0), (0, 0, 1)])
def test_diag_embed(offset, d1, d2):
    check_grads(lambda t: t.diag_embed(offset, d1, d2), lambda t: t.diag_embed(offset, d1, d2), f32(2, 3, 4))
    b = rng.random((3,)) > 0.5
    check(u.diag_embed(Tensor(b), offset), torch.diag_embed(torch.tensor(b), offset))


def test_diagflat():
    x = f32(2, 3)
    check(u.diagflat(Tensor(x), -1), torch.diagflat(torch.tensor(x), -1))


@pytest.mark.parametrize("offset,d1,d2", [(0, 0, 1), (1, 1, 2), (-1, 2, 0), (2, -1, -2), (5, 0, 1)])
def test_diagonal_scatter(offset, d1, d2):
    x = f32(2, 3, 4)
    src = f32(*torch.tensor(x).diagonal(offset, d1, d2).shape)
    check_grads(
        lambda a, s: a.diagonal_scatter(s, offset, d1, d2),
        lambda a, s: torch.diagonal_scatter(a, s, offset, d1, d2),
        x,
        src,
    )


@pytest.mark.parametrize("dim,index", [(0, 1), (1, -1), (2, 0)])
def test_select_scatter(dim, index):
    x = f32(2, 3, 4)
    src = f32(*torch.tensor(x).select(dim, index).shape)
    check_grads(
        lambda a, s: a.select_scatter(s, dim, index), lambda a, s: torch.select_scatter(a, s, dim, index), x, src
    )


@pytest.mark.parametrize(
    "dim,start,end,step",
    [(2, None, None, 1), (2, 1, None, 2), (1, 0, 3, 2), (2, -3, None, 3), (0, 1, 1, 1), (2, 1, 3, 5)],
)
def test_slice_scatter(dim, start, end, step):
    """Into a permuted view (2, 3, 4) of a (4, 3, 2) tensor: the index math of a non-contiguous input."""
    x = f32(4, 3, 2)
    src = f32(*torch.tensor(x).permute(2, 1, 0)[(slice(None),) * dim + (slice(start, end, step),)].shape)
    check_grads(
        lambda a, s: a.permute(2, 1, 0).slice_scatter(s, dim, start, end, step),
        lambda a, s: torch.slice_scatter(a.permute(2, 1, 0), s, dim, start, end, step),
        x,
        src,
    )


def test_scatter_family_errors():
    x = Tensor(f32(2, 3))
    with pytest.raises(RuntimeError, match="src must have shape"):
        x.slice_scatter(Tensor(f32(2, 2)), 1, 0, 3)
    with pytest.raises(RuntimeError, match="src must have shape"):
        x.select_scatter(Tensor(f32(3)), 1, 0)
    with pytest.raises(RuntimeError, match="src must have shape"):
        x.diagonal_scatter(Tensor(f32(3)))


def test_argwhere():
    b = rng.random((3, 4)) > 0.5
    check(u.argwhere(Tensor(b)), torch.argwhere(torch.tensor(b)))
    check(Tensor(np.zeros((2, 0))).argwhere(), torch.argwhere(torch.zeros(2, 0)))


@pytest.mark.parametrize("shape", [(7,), (3, 4), (0,), (1,), (500,)])
@pytest.mark.parametrize("args", [(10, 0, 0), (5, -1, 1), (3, 0.5, 0.5), (1, 0, 0), (7, -0.5, 2)])
def test_histc(shape, args):
    x = f32(*shape)
    check(Tensor(x).histc(*args), torch.tensor(x).histc(*args))
    same = np.full(4, 2.0, np.float32)
    check(u.histc(Tensor(same), 4), torch.histc(torch.tensor(same), 4))


def test_histc_errors():
    with pytest.raises(RuntimeError, match="bins must be > 0"):
        Tensor(f32(3)).histc(0)
    with pytest.raises(RuntimeError, match="max must be larger than min"):
        Tensor(f32(3)).histc(4, 1, 0)


@pytest.mark.parametrize("p,dim,maxnorm", [(2, 0, 1.0), (1, 1, 2.0), (3, -1, 0.5), (2, 0, 100.0)])
def test_renorm(p, dim, maxnorm):
    check_grads(lambda t: t.renorm(p, dim, maxnorm), lambda t: torch.renorm(t, p, dim, maxnorm), f32(3, 4, 5))


def test_vdot_addbmm():
    a, b = f32(5), f32(5)
    check_grads(u.vdot, torch.vdot, a, b)
    with pytest.raises(RuntimeError, match="inconsistent tensor size"):
        u.vdot(Tensor(a), Tensor(f32(4)))
    m, b1, b2 = f32(3, 4), f32(2, 3, 5), f32(2, 5, 4)
    check_grads(
        lambda x, y, z: u.addbmm(x, y, z, beta=0.5, alpha=2),
        lambda x, y, z: torch.addbmm(x, y, z, beta=0.5, alpha=2),
        m,
        b1,
        b2,
    )


def test_top_level_spellings_of_methods():
    """torch.<name>(input, ...) is input.<name>(...) for the names torch has both ways."""
    x = f32(3, 4)
    x[0, 1] = np.nan
    check(u.nanmean(Tensor(x), 1), torch.nanmean(torch.tensor(x), 1))
    check(u.nansum(Tensor(x)), torch.nansum(torch.tensor(x)))
    check(u.fliplr(Tensor(x)), torch.fliplr(torch.tensor(x)))
    check(u.greater(Tensor(x), 0.5), torch.greater(torch.tensor(x), 0.5))
    t, r = Tensor(np.abs(f32(3))), torch.tensor(np.abs(f32(3)))
    t, r = Tensor(r.numpy()), r
    u.sqrt_(t)
    torch.sqrt_(r)
    check(t, r)
    with pytest.raises(TypeError, match=r"nanmean\(\): argument 'input' must be Tensor"):
        u.nanmean(x)
