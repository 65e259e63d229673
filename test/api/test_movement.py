"""Movement, indexing, gather/scatter and sorting (unigrad/api/movement.py) against PyTorch, plus the spec's
compositions (gemm, prefix_sum, arange, gather, scatter_add) written as the spec writes them, against numpy.

Movement ops only move data, so values are compared exactly (float and int): shape, dtype (by name) and
every element. Inputs also come in as views (permuted, flipped, shrunk, padded) so the ops see index math,
not only plain buffers. Negative slice steps, which torch refuses, are compared with numpy. Error cases
check that unigrad raises the exception type torch raises. Most cases run on CPU; a few tiny ones run on the
PYTHON interpreter too.
"""

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from unigrad import Context, Tensor, dtypes

VIEWS = ("contiguous", "permuted", "flipped", "shrunk", "padded")


# ---------------------------------------------------------------- helpers


def check(out: Tensor, ref: torch.Tensor | np.ndarray) -> None:
    """`out` has the shape, dtype (by name) and exactly the values of the reference."""
    if isinstance(ref, torch.Tensor):
        ref_np, ref_dtype = ref.numpy(), str(ref.dtype).removeprefix("torch.")
    else:
        ref_np = np.asarray(ref)
        ref_dtype = ref_np.dtype.name
    assert out.shape == ref_np.shape, f"shape {out.shape} != {ref_np.shape}"
    assert out.dtype.name == ref_dtype, f"dtype {out.dtype.name} != {ref_dtype}"
    np.testing.assert_array_equal(out.numpy(), ref_np)


def data(shape: tuple[int, ...], dtype: str = "float32", seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return np.asarray(rng.random(shape) < 0.5)
    if dtype.startswith("float"):
        return np.asarray(rng.standard_normal(shape)).astype(dtype)
    return np.asarray(rng.integers(-9, 10, shape)).astype(dtype)


def make(shape: tuple[int, ...], dtype: str = "float32", view: str = "contiguous", device: str = "CPU", seed: int = 0):
    """(unigrad tensor, torch tensor) holding the same data; the unigrad one built as `view` over a buffer."""
    x = data(shape, dtype, seed)
    ref = torch.from_numpy(x.copy())
    if view == "contiguous" or x.ndim == 0:
        return Tensor(x, device=device), ref
    if view == "permuted":
        order = tuple(reversed(range(x.ndim)))
        return Tensor(np.ascontiguousarray(x.transpose(order)), device=device).permute(order), ref
    if view == "flipped":
        return Tensor(np.ascontiguousarray(np.flip(x)), device=device).flip(tuple(range(x.ndim))), ref
    if view == "shrunk":
        big = np.pad(x, [(1, 2)] * x.ndim, mode="edge" if x.size else "constant")
        return Tensor(big, device=device).shrink(tuple((1, 1 + s) for s in x.shape)), ref
    if view == "padded":  # zeros around an inner block: the first row/col of each dim comes from PAD
        inner = x[tuple(slice(1 if s else 0, None) for s in x.shape)]
        pads = tuple((1 if s else 0, 0) for s in x.shape)
        padded = np.pad(inner, pads)
        return Tensor(np.ascontiguousarray(inner), device=device).pad(pads), torch.from_numpy(padded.copy())
    raise ValueError(view)


def raises_like_torch(ours: Callable[[], Any], theirs: Callable[[], Any]) -> None:
    """Both raise, and unigrad raises the type torch raises."""
    with pytest.raises(Exception) as ref:
        theirs()
    with pytest.raises(ref.type):
        ours()


# ---------------------------------------------------------------- cat / stack


CAT_CASES = [
    ([(2, 3), (4, 3)], 0),
    ([(2, 3), (2, 1), (2, 5)], 1),
    ([(2, 3), (2, 0), (2, 2)], -1),
    ([(0, 3), (1, 3)], 0),
    ([(1,), (1,), (1,)], 0),
    ([(3, 2, 5), (3, 7, 5)], 1),
    ([(2, 3, 1), (2, 3, 1)], 2),
    ([(3,), (0,)], 0),
]


@pytest.mark.parametrize("dtype", ["float32", "int32", "bool"])
@pytest.mark.parametrize("shapes,dim", CAT_CASES)
def test_cat(shapes, dim, dtype):
    pairs = [make(s, dtype, VIEWS[i % len(VIEWS)], seed=i) for i, s in enumerate(shapes)]
    out = Tensor.cat([p[0] for p in pairs], dim=dim)
    check(out, torch.cat([p[1] for p in pairs], dim=dim))
    check(pairs[0][0].cat(*(p[0] for p in pairs[1:]), dim=dim), torch.cat([p[1] for p in pairs], dim=dim))


def test_cat_promotes_and_skips_legacy_empty():
    a, ta = make((2, 3), "int32")
    b, tb = make((2, 3), "float32", "flipped")
    check(a.cat(b, dim=0), torch.cat([ta, tb], 0))
    c, tc = make((0,), "int64")
    check(a.cat(c, dim=1), torch.cat([ta, tc], 1))


@pytest.mark.parametrize("shapes,dim", [([(0, 3), (2, 3), (0,)], 0), ([(2, 0), (2, 3), (2, 0)], 1), ([(0, 3)], 0)])
def test_cat_gradient_of_empty_pieces(shapes, dim):
    """Every piece that requires grad gets one, an empty tensor for an empty piece (legacy (0,) ones too), as in
    torch: not None."""
    arrays = [data(s, seed=i) for i, s in enumerate(shapes)]
    ours = [Tensor(a, requires_grad=True) for a in arrays]
    refs = [torch.tensor(a, requires_grad=True) for a in arrays]
    proj = data(tuple(torch.cat(refs, dim).shape), seed=9)
    (Tensor.cat(ours, dim=dim) * Tensor(proj)).sum().backward()
    (torch.cat(refs, dim) * torch.from_numpy(proj)).sum().backward()
    for o, r in zip(ours, refs):
        assert o.grad is not None
        check(o.grad, r.grad)


def test_cat_is_one_kernel():
    from unigrad.runtime import realize as rt

    a, b, c = Tensor(data((2, 3))), Tensor(data((4, 3))), Tensor(data((1, 3)))
    a.realize(), b.realize(), c.realize()
    before = rt.stats.kernels
    (a.cat(b, c) * 2).realize()
    assert rt.stats.kernels - before == 1


@pytest.mark.parametrize("dim", [0, 1, -1, 2])
@pytest.mark.parametrize("shape,view", [((2, 3), "contiguous"), ((3, 1), "permuted"), ((0, 4), "flipped")])
def test_stack(shape, view, dim):
    pairs = [make(shape, "float32", v, seed=i) for i, v in enumerate((view, "contiguous", "padded"))]
    check(pairs[0][0].stack(*(p[0] for p in pairs[1:]), dim=dim), torch.stack([p[1] for p in pairs], dim=dim))


def test_stack_scalars():
    check(Tensor.stack([Tensor(1.5), Tensor(2.0), Tensor(-1.0)]), torch.stack([torch.tensor(x) for x in (1.5, 2, -1)]))


# ---------------------------------------------------------------- repeat / split / unfold / roll


@pytest.mark.parametrize(
    "shape,reps",
    [
        ((3,), (2,)),
        ((2, 3), (1, 1)),
        ((2, 3), (2, 3)),
        ((2, 3), (2, 1, 2)),
        ((), (3, 2)),
        ((0, 2), (2, 2)),
        ((2, 1), (0, 3)),
    ],
)
@pytest.mark.parametrize("view", ["contiguous", "flipped"])
def test_repeat(shape, reps, view):
    t, r = make(shape, "int32", view)
    check(t.repeat(*reps), r.repeat(*reps))
    check(t.repeat(reps), r.repeat(reps))


@pytest.mark.parametrize("shape,dims", [((2, 3), (2,)), ((3,), (2, 2)), ((2, 3), (1, 2, 1))])
def test_tile(shape, dims):
    t, r = make(shape, "float32", "permuted")
    check(t.tile(dims), r.tile(dims))


@pytest.mark.parametrize(
    "shape,repeats,dim",
    [((3,), 2, None), ((2, 3), 3, 1), ((2, 3), 2, None), ((2, 3), 1, 0), ((), 4, None), ((2, 0), 2, 1), ((4, 2), 0, 0)],
)
def test_repeat_interleave_int(shape, repeats, dim):
    t, r = make(shape, "float32", "shrunk")
    check(t.repeat_interleave(repeats, dim=dim), r.repeat_interleave(repeats, dim=dim))


@pytest.mark.parametrize("shape,repeats,dim", [((4,), [1, 0, 3, 2], 0), ((2, 3), [2, 1, 0], 1), ((2, 2), [3], None)])
def test_repeat_interleave_tensor(shape, repeats, dim):
    t, r = make(shape, "int32", "flipped")
    check(t.repeat_interleave(Tensor(repeats), dim=dim), r.repeat_interleave(torch.tensor(repeats), dim=dim))


@pytest.mark.parametrize(
    "shape,arg,dim",
    [
        ((7,), 3, 0),
        ((5, 4), 2, 1),
        ((5, 4), [1, 3, 1], 0),
        ((3, 6), [6], -1),
        ((4,), 4, 0),
        ((0, 2), 1, 0),
        ((3,), [0, 3], 0),
    ],
)
def test_split(shape, arg, dim):
    t, r = make(shape, "float32", "permuted")
    ours, ref = t.split(arg, dim), r.split(arg, dim)
    assert len(ours) == len(ref)
    for a, b in zip(ours, ref):
        check(a, b)


@pytest.mark.parametrize("shape,chunks,dim", [((7,), 3, 0), ((5,), 4, 0), ((6, 2), 3, 0), ((2, 5), 2, 1), ((3,), 5, 0)])
def test_chunk(shape, chunks, dim):
    t, r = make(shape, "int64", "flipped")
    ours, ref = t.chunk(chunks, dim), r.chunk(chunks, dim)
    assert len(ours) == len(ref)
    for a, b in zip(ours, ref):
        check(a, b)


@pytest.mark.parametrize(
    "shape,dim,size,step",
    [
        ((8,), 0, 3, 1),
        ((8,), 0, 3, 2),
        ((9,), 0, 2, 4),
        ((3, 7), 1, 7, 1),
        ((3, 7), 0, 2, 1),
        ((2, 5, 3), 1, 2, 3),
        ((5,), 0, 0, 1),
        ((), 0, 1, 1),
        ((4, 3), -1, 1, 1),
    ],
)
@pytest.mark.parametrize("view", ["contiguous", "permuted", "padded"])
def test_unfold(shape, dim, size, step, view):
    t, r = make(shape, "float32", view)
    check(t.unfold(dim, size, step), r.unfold(dim, size, step))


@pytest.mark.parametrize(
    "shape,shifts,dims",
    [
        ((5,), 2, 0),
        ((5,), -7, 0),
        ((3, 4), (1, -1), (0, 1)),
        ((3, 4), 5, None),
        ((2, 3, 4), (2, 3), (2, 0)),
        ((0, 3), 1, 0),
    ],
)
@pytest.mark.parametrize("view", ["contiguous", "flipped"])
def test_roll(shape, shifts, dims, view):
    t, r = make(shape, "int32", view)
    check(t.roll(shifts, dims), r.roll(shifts, dims))


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize(
    "shape,pad", [((5,), (2, 1)), ((3, 4), (1, 2, 2, 0)), ((2, 3, 4), (0, 3, 1, 1)), ((2, 1, 3), (2, 2))]
)
def test_pad_modes(shape, pad, mode):
    """The helper behind pad(mode=...): flat torch-style pads on the last dims."""
    if mode == "reflect" and shape[-1] <= max(pad[:2]):
        pytest.skip("reflect needs pads below the size")
    t, r = make(shape, "float32", "flipped")
    pairs = [(0, 0)] * (len(shape) - len(pad) // 2) + [(pad[i], pad[i + 1]) for i in range(len(pad) - 2, -1, -2)]
    k = len(pad) // 2  # torch pads the last k dims of a (1, batch, *last k) tensor for these modes
    ref = torch.nn.functional.pad(r.reshape(1, -1, *shape[-k:]), pad, mode=mode)
    out = t._pad_mode(pairs, mode)
    check(out, ref.reshape(out.shape))


@pytest.mark.parametrize("k,dims", [(1, (0, 1)), (2, (0, 1)), (3, (1, 0)), (-1, (0, 2)), (4, (0, 1))])
def test_rot90(k, dims):
    t, r = make((2, 3, 4), "int32", "permuted")
    check(t.rot90(k, dims), r.rot90(k, dims))


# ---------------------------------------------------------------- diagonals and triangles


@pytest.mark.parametrize(
    "shape,k", [((4,), 0), ((3,), 2), ((3,), -1), ((0,), 0), ((1,), 0), ((4, 4), 0), ((3, 5), 1), ((5, 3), -2)]
)
@pytest.mark.parametrize("dtype", ["float32", "bool"])
def test_diag(shape, k, dtype):
    t, r = make(shape, dtype, "flipped")
    check(t.diag(k), r.diag(k))


@pytest.mark.parametrize(
    "shape,offset,d1,d2",
    [
        ((4, 4), 0, 0, 1),
        ((3, 5), 2, 0, 1),
        ((3, 5), -2, 0, 1),
        ((3, 5), 7, 0, 1),
        ((2, 3, 4), 1, 2, 0),
        ((2, 3, 4), -1, -1, 1),
    ],
)
def test_diagonal(shape, offset, d1, d2):
    t, r = make(shape, "float32", "permuted")
    check(t.diagonal(offset, d1, d2), r.diagonal(offset, d1, d2))


@pytest.mark.parametrize("shape", [(4, 4), (3, 5), (2, 4, 3), (0, 3)])
@pytest.mark.parametrize("k", [0, 1, -2])
def test_triu_tril(shape, k):
    t, r = make(shape, "int32", "padded")
    check(t.triu(k), r.triu(k))
    check(t.tril(k), r.tril(k))


# ---------------------------------------------------------------- axis moves, meshgrid


def test_axis_moves():
    t, r = make((2, 3, 4, 5), "float32", "flipped")
    check(t.movedim(0, -1), r.movedim(0, -1))
    check(t.movedim((0, 1), (3, 0)), r.movedim((0, 1), (3, 0)))
    check(t.moveaxis(2, 0), r.moveaxis(2, 0))
    check(t.swapaxes(1, 3), r.swapaxes(1, 3))
    check(t.unflatten(2, (2, 2)), r.unflatten(2, (2, 2)))
    check(t.unflatten(-1, (-1, 5)), r.unflatten(-1, (-1, 5)))
    check(t.narrow(1, 1, 2), r.narrow(1, 1, 2))
    check(t.narrow(3, -2, 2), r.narrow(3, -2, 2))
    check(t[0].expand_as(t), r[0].expand_as(r))
    check(t.reshape_as(t.reshape(6, 20)), r.reshape_as(r.reshape(6, 20)))


@pytest.mark.parametrize("indexing", ["ij", "xy"])
@pytest.mark.parametrize("sizes", [(3,), (3, 2), (2, 1, 4), (0, 3)])
def test_meshgrid(sizes, indexing):
    pairs = [make((s,), "int32", "flipped", seed=i) for i, s in enumerate(sizes)]
    ours = Tensor.meshgrid(*(p[0] for p in pairs), indexing=indexing)
    ref = torch.meshgrid(*(p[1] for p in pairs), indexing=indexing)
    assert len(ours) == len(ref)
    for a, b in zip(ours, ref):
        check(a, b)
    for a, b in zip(pairs[0][0].meshgrid(*(p[0] for p in pairs[1:]), indexing=indexing), ref):
        check(a, b)


# ---------------------------------------------------------------- __getitem__


def idx(*items):
    return items[0] if len(items) == 1 else items


ALL = slice(None)
GETITEM_CASES = [
    idx(0),
    idx(-1),
    idx(1, 2),
    idx(-2, -1, -3),
    idx(ALL, 1),
    idx(slice(1, 3)),
    idx(slice(None, None, 2)),
    idx(ALL, slice(1, None, 3)),
    idx(slice(-3, -1), slice(0, 5, 2), slice(5, 1)),
    idx(slice(10, 20)),
    idx(None),
    idx(None, 1, None),
    idx(Ellipsis),
    idx(Ellipsis, 0),
    idx(0, Ellipsis, slice(1, 4)),
    idx(Ellipsis, None),
    idx([0, 2]),
    idx(([[0, 1], [3, 3]],)),
    idx([-1, 0, -4]),
    idx(ALL, [4, 0, 0]),
    idx(ALL, ALL, [5, 1]),
    idx([0, 2], [1, 3]),
    idx([0, 2], ALL, [1, 3]),
    idx(ALL, [[0], [2]], [1, 3, 4]),
    idx(1, [0, 2], slice(1, 3)),
    idx(ALL, 1, [0, 2]),
    idx([0, 1], 2, [1, 3]),
    idx(Ellipsis, [1, 2], [2, 3]),
    idx(None, [0, 1], ALL, [0, 1]),
    idx([0, 1], None, [2, 3]),
    idx(slice(None, None, 2), [1, 3, 0], slice(1, None, 2)),
    idx([True, False, True, True]),
    idx(ALL, [True, False, True, True, False]),
    idx(1, [False] * 5),
    idx([]),
    idx(True),
    idx(False),
    idx(1, True, ALL),
]


@pytest.mark.parametrize("index", GETITEM_CASES, ids=[repr(i) for i in GETITEM_CASES])
def test_getitem(index):
    t, r = make((4, 5, 6), "float32", "permuted")
    check(t[index], r[index])


@pytest.mark.parametrize("view", VIEWS)
@pytest.mark.parametrize("dtype", ["float32", "int32", "bool"])
def test_getitem_views_and_dtypes(view, dtype):
    t, r = make((4, 5, 3), dtype, view)
    for index in [idx(1, slice(0, 4, 3)), idx([2, 0], ALL, [1, 1]), idx(ALL, [[4], [0]])]:
        check(t[index], r[index])


def test_getitem_tensor_indices():
    t, r = make((5, 6), "int64", "flipped")
    i, ri = make((2, 3), "int64", seed=3)
    i, ri = (i % 5), (ri % 5)
    check(t[i], r[ri])
    check(t[i, i], r[ri, ri])
    check(t[ALL, i.flip(0) - 6], r[:, ri.flip(0) - 6])  # negative indices
    check(t[Tensor(3)], r[torch.tensor(3)])
    check(t[i.cast(dtypes.int32), 1], r[ri.int(), 1])
    m, rm = make((5, 6), "bool", seed=4)
    check(t[m], r[rm])
    check(t[m[:, 0]], r[rm[:, 0]])
    check(t[ALL, m[0]], r[:, rm[0]])
    check(t[t > 2], r[r > 2])


@pytest.mark.parametrize(
    "index",
    [
        idx([3, 0, 3, 1]),  # repeated rows: their gradients add up
        idx(ALL, [[4, 0], [4, 4]]),
        idx([0, 2, 2], [1, 3, 1]),  # two adjacent advanced dims: one flattened index
        idx([1, 0], ALL, [5, 5]),  # separated: the broadcast dims first
        idx(slice(1, 4), [-1, 0, -5]),  # negatives, after a basic slice
        idx([], ALL),
    ],
    ids=repr,
)
def test_getitem_tensor_indices_forward_and_backward(index):
    """Advanced indexing over static sizes is an indirect load of the advanced dims flattened into one: values and
    the source's gradient (rows picked twice add up) equal torch's, on a non-contiguous source."""
    base = np.random.default_rng(7).standard_normal((4, 5, 6)).astype(np.float32)
    t, r = Tensor(base).permute(1, 0, 2).contiguous().permute(1, 0, 2), torch.from_numpy(base)
    t.requires_grad, r.requires_grad = True, True
    out, ref = t[index], r[index]
    check(out, ref.detach())
    w = np.random.default_rng(8).standard_normal(tuple(ref.shape)).astype(np.float32)
    (out * Tensor(w)).sum().backward()
    (ref * torch.from_numpy(w)).sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), r.grad.numpy(), rtol=1e-5, atol=1e-5)


def test_getitem_tensor_index_out_of_range_reads_zero():
    """An index entry outside its dim raises IndexError at the realize, and the kernel read 0 there (no wrong
    element): with two advanced dims, j = 6 in a dim of 6 would land on the next row's first element if the
    flattened position were not checked per dim."""
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    for index, want in [
        ((Tensor([0, 1, 2]), Tensor([6, 5, -7])), [0.0, 11.0, 0.0]),
        (Tensor([4, -5, 3]), np.stack([np.zeros(6), np.zeros(6), x[3]])),
    ]:
        out = Tensor(x)[index]  # built one at a time: a realize computes (and reports) every check queued before it
        with pytest.raises(IndexError, match="out of bounds"):
            out.realize()
        np.testing.assert_array_equal(out.numpy(), want)  # computed with the check, reported once


@pytest.mark.parametrize(
    "index",
    [
        idx(slice(None, None, -1)),
        idx(slice(None, None, -2), slice(4, 0, -3)),
        idx(ALL, slice(-1, -6, -2), 2),
        idx(slice(3, None, -1), [0, 2]),
        idx(slice(0, 3, -1)),
        idx([2, 0], slice(None, None, -1), slice(5, None, -4)),
    ],
    ids=repr,
)
def test_getitem_negative_steps(index):
    x = data((4, 5, 6), "int32")
    check(Tensor(x)[index], x[index])


def test_iter():
    t, r = make((3, 2), "float32", "flipped")
    rows = list(t)
    assert len(rows) == 3
    for a, b in zip(rows, r):
        check(a, b)


# ---------------------------------------------------------------- __setitem__

SETITEM_CASES = [
    (idx(0), 1.5),
    (idx(-1, 2), -2.0),
    (idx(ALL, slice(1, 4)), "row"),
    (idx(slice(None, None, 2), ALL, slice(1, None, 3)), 7.0),
    (idx(Ellipsis, 0), "tensor"),
    (idx(None, 1), 3.0),
    (idx([0, 2]), 0.25),
    (idx([0, 2], ALL, [1, 3]), "tensor"),
    (idx(ALL, [4, 0]), "tensor"),
    (idx([1, 1, 3], 2), "tensor"),  # duplicate index: the last write wins, as torch on CPU
    (idx(1, [0, 2], slice(1, 3)), 9.0),
    (idx([True, False, True, False]), -1.0),
    (idx(slice(3, 5)), 4.0),
]


@pytest.mark.parametrize("index,value", SETITEM_CASES, ids=[repr(c[0]) for c in SETITEM_CASES])
def test_setitem(index, value):
    t, r = make((4, 5, 6), "float32", "flipped")
    r = r.clone()
    target = r[index].shape
    if value == "tensor":
        v = data(target, "float32", seed=5)
        t[index], r[index] = Tensor(v), torch.from_numpy(v)
    elif value == "row":
        v = data(target[-1:], "float32", seed=6)
        t[index], r[index] = Tensor(v), torch.from_numpy(v)
    else:
        t[index], r[index] = value, value
    check(t, r)


def test_setitem_functional_and_dtype():
    t, r = make((3, 4), "int32")
    view = t[1]
    t[1, ::2] = 7.9  # cast to int32 like torch
    r[1, ::2] = 7.9
    check(t, r)
    check(view, r[1])  # a view of the realized tensor sees the write, as torch's views do
    t[t > 3] = Tensor(-1)
    r[r > 3] = torch.tensor(-1)
    check(t, r)
    x = data((4, 5), "int32")
    ours = Tensor(x)
    ours[::-2, 1] = 0
    x[::-2, 1] = 0
    check(ours, x)


@pytest.mark.parametrize("view", ["permuted", "padded", "shrunk"])
@pytest.mark.parametrize("dtype", ["float32", "int32", "bool"])
def test_setitem_views_and_dtypes(view, dtype):
    t, r = make((4, 3, 5), dtype, view)
    r = r.clone()
    v = data((2, 1, 3), dtype, seed=8)
    t[1:3, :, ::2] = Tensor(v)
    r[1:3, :, ::2] = torch.from_numpy(v)
    check(t, r)
    w = data((3, 5), dtype, seed=9)
    t[[3, 0], 2] = Tensor(w[0])
    r[[3, 0], 2] = torch.from_numpy(w[0])
    check(t, r)
    t[..., 0] = t[..., 4]  # reads the value before the write
    r[..., 0] = r[..., 4].clone()
    check(t, r)


@settings(max_examples=25, deadline=None, derandomize=True)
@given(st.data())
def test_basic_index_fuzz(draw):
    """Random basic index expressions (ints, slices with any steps, None, Ellipsis) against numpy."""
    shape = draw.draw(st.lists(st.integers(0, 4), min_size=1, max_size=3).map(tuple))
    items = []
    for n in shape:
        kind = draw.draw(st.sampled_from(["int", "slice", "none", "all"] if n else ["slice", "none", "all"]))
        if kind == "int":
            items.append(draw.draw(st.integers(-n, n - 1)))
        elif kind == "slice":
            bound = st.none() | st.integers(-n - 2, n + 2)
            step = draw.draw(st.none() | st.integers(-3, 3).filter(lambda s: s != 0))
            items.append(slice(draw.draw(bound), draw.draw(bound), step))
        elif kind == "none":
            items += [None, slice(None)]
        else:
            items.append(Ellipsis if Ellipsis not in items else slice(None))
    x = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape)
    index = tuple(items[: draw.draw(st.integers(0, len(items)))])
    try:
        want = x[index]
    except IndexError:  # e.g. (..., 0) on a size-0 last dim: an int after '...' binds from the right
        with pytest.raises(IndexError):
            Tensor(x)[index]
        return
    check(Tensor(x)[index], want)
    ours, ref = Tensor(x), x.copy()
    ours[index] = -1
    ref[index] = -1
    check(ours, ref)


# ---------------------------------------------------------------- gather / scatter


def rand_index(shape, n, seed=1, unique_along=None):
    rng = np.random.default_rng(seed)
    if unique_along is None:
        return rng.integers(0, n, shape).astype(np.int64)
    # a permutation prefix along `unique_along` (no duplicate targets: scatter is then deterministic)
    x = np.argsort(rng.random((*shape[:unique_along], n, *shape[unique_along + 1 :])), axis=unique_along)
    return np.take(x, range(shape[unique_along]), axis=unique_along).astype(np.int64)


@pytest.mark.parametrize(
    "shape,dim,ishape",
    [
        ((5,), 0, (3,)),
        ((4, 6), 1, (4, 9)),
        ((4, 6), 0, (2, 3)),
        ((3, 4, 5), -1, (3, 2, 5)),
        ((3, 4), 1, (3, 0)),
        ((), 0, ()),
    ],
)
@pytest.mark.parametrize("dtype,view", [("float32", "permuted"), ("int32", "flipped"), ("bool", "padded")])
def test_gather(shape, dim, ishape, dtype, view):
    t, r = make(shape, dtype, view)
    n = shape[dim] if shape else 1
    i = rand_index(ishape, n)
    check(t.gather(dim, Tensor(i)), r.gather(dim, torch.from_numpy(i)))


@pytest.mark.parametrize("shape,dim,ishape", [((4, 6), 1, (4, 9)), ((4, 6), 0, (2, 3)), ((3, 4, 5), 1, (3, 7, 2))])
def test_gather_values_equal_with_and_without_grad(shape, dim, ishape):
    """gather of a tensor that needs no gradient is an indirect load, of one that does a one-hot selection (its
    gradient): both give torch's values, and the second torch's gradient (repeated picks add up)."""
    x = np.random.default_rng(5).standard_normal(shape).astype(np.float32)
    i = rand_index(ishape, shape[dim], seed=6)
    ref = torch.from_numpy(x).requires_grad_()
    want = ref.gather(dim, torch.from_numpy(i))
    check(Tensor(x).gather(dim, Tensor(i)), want.detach())
    t = Tensor(x, requires_grad=True)
    out = t.gather(dim, Tensor(i))
    check(out, want.detach())
    w = np.random.default_rng(7).standard_normal(ishape).astype(np.float32)
    (out * Tensor(w)).sum().backward()
    (want * torch.from_numpy(w)).sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), ref.grad.numpy(), rtol=1e-6, atol=1e-6)


def test_gather_out_of_range_reads_zero():
    """An index outside [0, n) raises torch's RuntimeError at the realize, and reads 0 on both paths (never the
    element its flat position would land on)."""
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    i = Tensor([[4, 0], [-1, 3], [1, 2]])
    want = [[0.0, 0.0], [0.0, 7.0], [9.0, 10.0]]
    for grad in (False, True):
        out = Tensor(x, requires_grad=grad).gather(1, i)
        with pytest.raises(RuntimeError, match="gather: index 4 is out of bounds for dimension 1 with size 4"):
            out.realize()
        np.testing.assert_array_equal(out.numpy(), want)


@pytest.mark.parametrize(
    "shape,dim,ishape", [((5,), 0, (3,)), ((4, 6), 1, (3, 4)), ((4, 6), 0, (3, 2)), ((3, 4, 5), -1, (2, 3, 5))]
)
@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_scatter(shape, dim, ishape, dtype):
    t, r = make(shape, dtype, "flipped")
    s, rs = make(tuple(x + 1 for x in ishape), dtype, "permuted", seed=2)
    i = torch.from_numpy(rand_index(ishape, shape[dim], unique_along=dim % len(shape)))
    check(t.scatter(dim, Tensor(i.numpy()), s), r.scatter(dim, i, rs))
    check(t.scatter(dim, Tensor(i.numpy()), 3), r.scatter(dim, i, 3))


def test_scatter_duplicates_last_wins():
    t, r = make((6,), "float32")
    i = torch.tensor([1, 4, 1, 1, 4])
    s, rs = make((5,), "float32", seed=3)
    check(t.scatter(0, Tensor(i.numpy()), s), r.scatter(0, i, rs))


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_scatter_reduce(reduce, include_self, dtype):
    t, r = make((4, 5), dtype, "permuted")
    s, rs = make((3, 6), dtype, "flipped", seed=2)
    i = torch.from_numpy(rand_index((3, 4), 5, seed=4))
    ours = t.scatter_reduce(1, Tensor(i.numpy()), s, reduce, include_self=include_self)
    ref = r.scatter_reduce(1, i, rs, reduce, include_self=include_self)
    if dtype == "float32":
        assert ours.dtype.name == "float32" and ours.shape == tuple(ref.shape)
        np.testing.assert_allclose(ours.numpy(), ref.numpy(), rtol=1e-6, atol=1e-6)
    else:
        check(ours, ref)


def test_scatter_reduce_modes():
    t, r = make((5,), "float32")
    i = torch.tensor([0, 0, 3])
    s, rs = make((3,), "float32", seed=1)
    for mode, name in (("add", "sum"), ("multiply", "prod")):
        ours = t.scatter(0, Tensor(i.numpy()), s, reduce=mode).numpy()
        np.testing.assert_allclose(ours, r.scatter_reduce(0, i, rs, name), rtol=1e-6)


def test_index_select():
    t, r = make((4, 5), "int32", "flipped")
    i = torch.tensor([3, 0, 3])
    check(t.index_select(1, Tensor(i.numpy())), r.index_select(1, i))
    check(t.index_select(0, Tensor(i.numpy())), r.index_select(0, i))


# ---------------------------------------------------------------- masks


@pytest.mark.parametrize("shape,mshape", [((3, 4), (3, 4)), ((3, 4), (4,)), ((4,), (2, 4)), ((0, 2), (0, 2)), ((), ())])
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_masked_fill_select(shape, mshape, dtype):
    t, r = make(shape, dtype, "flipped")
    m, rm = make(mshape, "bool", seed=7)
    check(t.masked_fill(m, 2), r.masked_fill(rm, 2))
    check(t.masked_fill(m, Tensor(-1.5)), r.masked_fill(rm, torch.tensor(-1.5)))
    check(t.masked_select(m), r.masked_select(rm))


@pytest.mark.parametrize("shape", [(7,), (3, 4), (2, 3, 2), (0, 3), (), (30,)])
@pytest.mark.parametrize("dtype", ["int32", "bool"])
def test_nonzero(shape, dtype):
    x = np.asarray(data(shape, dtype) * (data(shape, "bool", seed=9) if dtype != "bool" else True))
    t, r = Tensor(x).flip(tuple(range(len(shape)))), torch.from_numpy(np.array(np.flip(x)))
    check(t.nonzero(), r.nonzero())
    for a, b in zip(t.nonzero(as_tuple=True), r.nonzero(as_tuple=True)):
        check(a, b)


def test_nonzero_all_false_and_long():
    check(Tensor.zeros(4, 3).nonzero(), torch.zeros(4, 3).nonzero())
    x = data((1000,), "bool", seed=2)
    check(Tensor(x).nonzero(), torch.from_numpy(x).nonzero())


@pytest.mark.parametrize("n,rows", [(1, 1), (16, 3), (17, 5), (300, 40), (5000, 70)])
def test_scatter_add_rows_equals_a_loop(n, rows):
    """_scatter_add_rows (a sort of the index, running sums within each index value: blocks of 16, their tails
    carried, recursively) sums each target row's source rows as a plain loop does; indices out of range add
    nothing."""
    from unigrad.api.movement import _scatter_add_rows

    rng = np.random.default_rng(n)
    idx = rng.integers(-2, rows + 2, n)
    idx[: n // 3] = rows // 2  # one long run across many blocks
    src = rng.standard_normal((n, 3)).astype(np.float32)
    want = np.zeros((rows, 3))
    for i, r in zip(idx, src):
        if 0 <= i < rows:
            want[i] += r
    got = _scatter_add_rows(rows, Tensor(idx), Tensor(src)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    "shape,dim,n_index", [((5, 3), 0, 7), ((4, 6), 1, 9), ((2, 3, 4), -1, 1), ((6,), 0, 0), ((4, 3), 0, 0)]
)
def test_index_add_matches_torch(shape, dim, n_index):
    """index_add (repeated indices add up, alpha scales) equals torch's, values and both gradients; an index out of
    range raises as torch does."""
    rng = np.random.default_rng(n_index)
    x = rng.standard_normal(shape).astype(np.float32)
    src_shape = tuple(n_index if i == dim % len(shape) else s for i, s in enumerate(shape))
    src = rng.standard_normal(src_shape).astype(np.float32)
    idx = rng.integers(0, shape[dim], n_index)
    t, ts = Tensor(x, requires_grad=True), Tensor(src, requires_grad=True)
    r, rs = torch.from_numpy(x).requires_grad_(), torch.from_numpy(src).requires_grad_()
    out, ref = t.index_add(dim, Tensor(idx), ts, alpha=2.0), r.index_add(dim, torch.from_numpy(idx), rs, alpha=2.0)
    assert out.shape == tuple(ref.shape)
    np.testing.assert_allclose(out.numpy(), ref.detach().numpy(), rtol=1e-6, atol=1e-6)  # sums in another order
    w = rng.standard_normal(shape).astype(np.float32)
    (out * Tensor(w)).sum().backward()
    (ref * torch.from_numpy(w)).sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), r.grad.numpy(), rtol=1e-5, atol=1e-5)
    if n_index:  # an empty source takes no part (its grad stays None; torch's is empty)
        np.testing.assert_allclose(ts.grad.numpy(), rs.grad.numpy(), rtol=1e-5, atol=1e-5)
    with pytest.raises(IndexError, match=rf"index_add: index {shape[dim]} is out of range for dimension"):
        Tensor(x).index_add(
            dim,
            Tensor([shape[dim]]),
            Tensor(src).shrink(tuple((0, 1) if i == dim % len(shape) else None for i in range(len(shape))))
            if n_index
            else Tensor(np.zeros(tuple(1 if i == dim % len(shape) else s for i, s in enumerate(shape)), np.float32)),
        ).numpy()


@pytest.mark.parametrize("minlength", [0, 12])
def test_bincount_matches_torch(minlength):
    rng = np.random.default_rng(minlength)
    x = rng.integers(0, 9, 200)
    w = rng.standard_normal(200).astype(np.float32)
    check(Tensor(x).bincount(minlength=minlength), torch.from_numpy(x).bincount(minlength=minlength))
    got, want = Tensor(x).bincount(Tensor(w), minlength), torch.from_numpy(x).bincount(torch.from_numpy(w), minlength)
    assert got.dtype.name == "float32"
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-5)
    assert Tensor(x).bincount(Tensor(x)).dtype.name == "float64"
    check(Tensor(np.zeros(0, np.int64)).bincount(), torch.from_numpy(np.zeros(0, np.int64)).bincount())
    for bad in (Tensor([-1, 2]), Tensor([[1, 2]]), Tensor([1.0])):
        with pytest.raises(RuntimeError, match="non-negative integral"):
            bad.bincount()


@pytest.mark.parametrize("dim", [0, 1])
def test_cat_of_many_big_pieces(dim):
    """More than CAT_GROUP pieces of 64k elements in all are merged in a tree of cat kernels: values equal torch's
    (uneven pieces, one empty), and so do the pieces' gradients."""
    rng = np.random.default_rng(dim)
    sizes = [int(s) for s in rng.integers(1, 60, 37)] + [0]
    xs = [rng.standard_normal((s, 80) if dim == 0 else (80, s)).astype(np.float32) for s in sizes]
    ts = [Tensor(x, requires_grad=True) for x in xs]
    rs = [torch.from_numpy(x).requires_grad_() for x in xs]
    out, ref = ts[0].cat(*ts[1:], dim=dim), torch.cat(rs, dim)
    check(out, ref.detach())
    w = rng.standard_normal(tuple(ref.shape)).astype(np.float32)
    (out * Tensor(w)).sum().backward()
    (ref * torch.from_numpy(w)).sum().backward()
    for t, r in zip(ts[:-1], rs):  # the empty piece takes no part (its grad stays None; torch's is empty)
        np.testing.assert_array_equal(t.grad.numpy(), r.grad.numpy())


@pytest.mark.parametrize("density", [0.0, 0.03, 0.5, 1.0])
def test_data_dependent_selections_at_scale(density):
    """nonzero, masked_select and repeat_interleave over 20k elements (a binary search in a running count: the
    one-hot selections were O(n * count), minutes at 2048^2) equal torch's, from no True to all True."""
    rng = np.random.default_rng(int(density * 100))
    mask = rng.random((100, 200)) < density
    x = rng.standard_normal((100, 200)).astype(np.float32)
    check(Tensor(mask).nonzero(), torch.from_numpy(mask).nonzero())
    check(Tensor(x).masked_select(Tensor(mask)), torch.from_numpy(x).masked_select(torch.from_numpy(mask)))
    reps = rng.integers(0, 4, 200) * (rng.random(200) < max(density, 0.1))
    check(
        Tensor(x).repeat_interleave(Tensor(reps), dim=1),
        torch.from_numpy(x).repeat_interleave(torch.from_numpy(reps), dim=1),
    )


# ---------------------------------------------------------------- sorting


@pytest.mark.parametrize(
    "shape,dim", [((7,), 0), ((3, 5), 1), ((3, 5), 0), ((2, 3, 4), -2), ((0, 3), 1), ((1,), 0), ((), 0)]
)
@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_sort(shape, dim, descending, dtype):
    x = data(shape, dtype)
    if dtype == "int32":
        x = np.asarray(x % 4)  # many ties: the stable order is checked
    t, r = Tensor(x).permute(tuple(range(len(shape)))), torch.from_numpy(x)
    v, i = t.sort(dim, descending)
    rv, ri = r.sort(dim=dim, descending=descending, stable=True)
    check(v, rv)
    check(i, ri)
    check(t.argsort(dim, descending), r.argsort(dim=dim, descending=descending, stable=True))


def test_sort_nan_inf():
    x = np.array([1.0, np.nan, -np.inf, 0.0, np.inf, np.nan, -2.0], dtype=np.float32)
    for desc in (False, True):
        v, i = Tensor(x).sort(descending=desc)
        rv, ri = torch.from_numpy(x).sort(descending=desc, stable=True)
        check(v, rv)
        check(i, ri)


@pytest.mark.parametrize("shape,k,dim", [((7,), 3, 0), ((3, 6), 2, 1), ((4, 3), 4, 0), ((5,), 0, 0), ((5,), 5, -1)])
@pytest.mark.parametrize("largest", [True, False])
def test_topk(shape, k, dim, largest):
    t, r = make(shape, "float32", "flipped")  # random floats: no ties
    v, i = t.topk(k, dim, largest)
    rv, ri = r.topk(k, dim, largest)
    check(v, rv)
    check(i, ri)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int32", "int64", "uint8", "bool"])
@pytest.mark.parametrize("largest", [True, False])
def test_topk_by_selection_matches_a_stable_sort(dtype, largest):
    """topk of a few out of many (picked one at a time) equals the first k of a stable sort along the axis, ties in
    index order, NaN above everything, -0.0 equal to 0.0, the dtype's extremes included; on a non-contiguous view,
    along the last axis and along axis 0; values and indices (gradients through the values too, for floats)."""
    rng = np.random.default_rng(11)
    if dtype == "bool":
        x = rng.integers(0, 2, (5, 90)).astype(bool)
    elif dtype.startswith("float"):
        x = rng.integers(-4, 5, (5, 90)).astype(dtype) / 2  # many ties
        x[0, :6] = [np.nan, -0.0, 0.0, np.inf, -np.inf, np.nan]
    else:
        info = np.iinfo(dtype)
        x = rng.integers(-3 if info.min < 0 else 0, 4, (5, 90)).astype(dtype)
        x[1, :3] = [info.min, info.max, info.min]

    def stable_first(a: np.ndarray, k: int, axis: int) -> np.ndarray:
        """Indices of the first k of a stable sort along axis: NaN above every value, ties in index order."""
        v = a.astype(np.float64)
        nan = np.isnan(v)
        v = np.where(nan, 0.0, v)
        primary, secondary = (~nan, -v) if largest else (nan, v)  # np.lexsort: the last key sorts first
        order = np.lexsort((secondary, primary), axis=axis)
        return np.take(order, range(k), axis=axis)

    for axis, k in ((1, 7), (0, 1)):
        src = np.ascontiguousarray(x.T).T if axis == 1 else x
        t = Tensor(np.ascontiguousarray(src.T)).permute(1, 0) if axis == 1 else Tensor(src)
        v, i = t.topk(k, axis, largest)
        want = stable_first(src, k, axis)
        np.testing.assert_array_equal(i.numpy(), want)
        np.testing.assert_array_equal(v.numpy(), np.take_along_axis(src, want, axis))
    if dtype == "float32":
        t = Tensor(x, requires_grad=True)
        v, _ = t.topk(7, 1, largest)
        v.sum().backward()
        g = np.zeros_like(x)
        np.put_along_axis(g, stable_first(x, 7, 1), 1.0, 1)
        np.testing.assert_array_equal(t.grad.numpy(), g)


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64", "int32", "int64", "uint8", "bool"])
@pytest.mark.parametrize("n", [65, 128, 300])
def test_sort_network_is_a_stable_sort(dtype, n):
    """Rows longer than SORT_NETWORK_MIN are sorted by a bitonic network over (key, position): the same indices and
    values as a stable sort, ties in index order, NaN last ascending and first descending, -0.0 equal to 0.0; along
    the last axis of a non-contiguous view and along axis 0; topk of more than TOPK_SELECT takes its first k."""
    rng = np.random.default_rng(n)
    x = rng.integers(-5, 6, (3, n)).astype(dtype) if dtype != "bool" else rng.integers(0, 2, (3, n)).astype(bool)
    if dtype.startswith("float"):
        x = x / 2
        x[0, :5] = [np.nan, -0.0, 0.0, np.inf, np.nan]
    t = Tensor(np.ascontiguousarray(x.T)).permute(1, 0)
    for desc in (False, True):
        v, i = t.sort(-1, descending=desc)
        rv, ri = torch.from_numpy(x).sort(dim=-1, descending=desc, stable=True)
        check(i, ri)
        check(v, rv)
        v0, i0 = Tensor(np.ascontiguousarray(x.T)).sort(0, descending=desc)
        check(i0, ri.T)
        tv, ti = t.topk(20, -1, largest=desc)
        np.testing.assert_array_equal(ti.numpy(), ri.numpy()[:, :20])


def test_sort_network_values_carry_gradients():
    x = np.random.default_rng(3).standard_normal((2, 100)).astype(np.float32)
    t, r = Tensor(x, requires_grad=True), torch.from_numpy(x).requires_grad_()
    w = np.arange(100, dtype=np.float32)
    (t.sort(-1)[0] * Tensor(w)).sum().backward()
    (r.sort(-1)[0] * torch.from_numpy(w)).sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), r.grad.numpy())


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64", "int32", "int64", "uint8", "bool"])
def test_unique_from_a_sort(dtype):
    """unique over more than SORT_NETWORK_MIN elements comes from a sort: values, inverse and counts equal torch's;
    each NaN is its own value (torch orders their inverses as its sort happens to; here in index order)."""
    rng = np.random.default_rng(1)
    if dtype in ("bool", "uint8"):
        x = rng.integers(0, 2 if dtype == "bool" else 255, (20, 25)).astype(dtype)
    else:
        x = rng.integers(-20, 20, (20, 25)).astype(dtype)
    if dtype.startswith("float"):
        x = x / 4
        x[0, :4] = [np.nan, -0.0, np.nan, 0.0]
    values, inverse, counts = Tensor(x).unique(return_inverse=True, return_counts=True)
    rv, ri, rc = torch.from_numpy(x).unique(return_inverse=True, return_counts=True)
    check(values, rv)
    check(counts, rc)
    nan = np.isnan(x.astype(np.float64))
    assert inverse.shape == x.shape
    np.testing.assert_array_equal(inverse.numpy()[~nan], ri.numpy()[~nan])
    assert np.isnan(values.numpy()[inverse.numpy()[nan]]).all() and len(set(inverse.numpy()[nan])) == nan.sum()
    check(Tensor(x).unique(), rv)


@pytest.mark.parametrize("x", [[3, 1, 2, 3, 1, 5], [[2, 2], [0, 2]], [7], [], [1.5, -0.5, 1.5, 0.0]])
def test_unique(x):
    t, r = Tensor(x), torch.tensor(x)
    check(t.unique(), r.unique())
    for a, b in zip(
        t.unique(return_inverse=True, return_counts=True), r.unique(return_inverse=True, return_counts=True)
    ):
        check(a, b)


# ---------------------------------------------------------------- errors (same exception type as torch)

ERROR_CASES = {
    "cat_empty": (lambda T: T.cat([]), lambda: torch.cat([])),
    "cat_shape": (
        lambda T: T.cat([T.zeros(2, 3), T.zeros(3, 2)]),
        lambda: torch.cat([torch.zeros(2, 3), torch.zeros(3, 2)]),
    ),
    "cat_ndim": (lambda T: T.cat([T.zeros(2, 3), T.zeros(2)]), lambda: torch.cat([torch.zeros(2, 3), torch.zeros(2)])),
    "cat_dim": (lambda T: T.zeros(2).cat(T.zeros(2), dim=1), lambda: torch.cat([torch.zeros(2), torch.zeros(2)], 1)),
    "cat_0d": (lambda T: T(1.0).cat(T(2.0)), lambda: torch.cat([torch.tensor(1.0), torch.tensor(2.0)])),
    "stack_shape": (lambda T: T.zeros(2).stack(T.zeros(3)), lambda: torch.stack([torch.zeros(2), torch.zeros(3)])),
    "stack_dim": (lambda T: T.zeros(2).stack(T.zeros(2), dim=3), lambda: torch.stack([torch.zeros(2)] * 2, 3)),
    "getitem_int": (lambda T: T.zeros(3, 4)[3], lambda: torch.zeros(3, 4)[3]),
    "getitem_neg": (lambda T: T.zeros(3, 4)[:, -5], lambda: torch.zeros(3, 4)[:, -5]),
    "getitem_many": (lambda T: T.zeros(3, 4)[0, 0, 0], lambda: torch.zeros(3, 4)[0, 0, 0]),
    "getitem_list": (lambda T: T.zeros(3, 4)[[0, 3]], lambda: torch.zeros(3, 4)[[0, 3]]),
    "getitem_float": (lambda T: T.zeros(3)[T([0.5])], lambda: torch.zeros(3)[torch.tensor([0.5])]),
    "getitem_mask": (lambda T: T.zeros(3)[T([True, False])], lambda: torch.zeros(3)[torch.tensor([True, False])]),
    "getitem_bcast": (lambda T: T.zeros(3, 4)[[0, 1], [0, 1, 2]], lambda: torch.zeros(3, 4)[[0, 1], [0, 1, 2]]),
    "getitem_step0": (lambda T: T.zeros(3)[::0], lambda: torch.zeros(3)[::0]),
    "getitem_type": (lambda T: T.zeros(3)[1.5], lambda: torch.zeros(3)[1.5]),
    "setitem_shape": (
        lambda T: T.zeros(3, 4).__setitem__(0, T.zeros(3)),
        lambda: torch.zeros(3, 4).__setitem__(0, torch.zeros(3)),
    ),
    "split_sum": (lambda T: T.zeros(5).split([2, 2]), lambda: torch.zeros(5).split([2, 2])),
    "split_dim": (lambda T: T.zeros(5).split(2, 1), lambda: torch.zeros(5).split(2, 1)),
    "chunk_zero": (lambda T: T.zeros(5).chunk(0), lambda: torch.zeros(5).chunk(0)),
    "repeat_dims": (lambda T: T.zeros(2, 3).repeat(2), lambda: torch.zeros(2, 3).repeat(2)),
    "unfold_size": (lambda T: T.zeros(3).unfold(0, 4, 1), lambda: torch.zeros(3).unfold(0, 4, 1)),
    "unfold_step": (lambda T: T.zeros(3).unfold(0, 2, 0), lambda: torch.zeros(3).unfold(0, 2, 0)),
    "roll_len": (lambda T: T.zeros(3, 3).roll((1, 2), (0,)), lambda: torch.zeros(3, 3).roll((1, 2), (0,))),
    "roll_dim": (lambda T: T.zeros(3).roll(1, 2), lambda: torch.zeros(3).roll(1, 2)),
    "diag_3d": (lambda T: T.zeros(2, 2, 2).diag(), lambda: torch.zeros(2, 2, 2).diag()),
    "diagonal_same": (lambda T: T.zeros(2, 2).diagonal(0, 1, 1), lambda: torch.zeros(2, 2).diagonal(0, 1, 1)),
    "triu_1d": (lambda T: T.zeros(3).triu(), lambda: torch.zeros(3).triu()),
    "gather_ndim": (
        lambda T: T.zeros(3, 4).gather(1, T([0, 1])),
        lambda: torch.zeros(3, 4).gather(1, torch.tensor([0, 1])),
    ),
    "gather_dim": (
        lambda T: T.zeros(3, 4).gather(2, T([[0]])),
        lambda: torch.zeros(3, 4).gather(2, torch.tensor([[0]])),
    ),
    "gather_size": (
        lambda T: T.zeros(3, 4).gather(1, T([[0]] * 4)),
        lambda: torch.zeros(3, 4).gather(1, torch.tensor([[0]] * 4)),
    ),
    "scatter_dtype": (
        lambda T: T.zeros(3).scatter(0, T([0]), T([1])),
        lambda: torch.zeros(3).scatter(0, torch.tensor([0]), torch.tensor([1])),
    ),
    "scatter_reduce_mode": (
        lambda T: T.zeros(3).scatter_reduce(0, T([0]), T([1.0]), "median"),
        lambda: torch.zeros(3).scatter_reduce(0, torch.tensor([0]), torch.tensor([1.0]), "median"),
    ),
    "masked_fill_mask": (
        lambda T: T.zeros(3).masked_fill(T([1, 0, 1]), 1.0),
        lambda: torch.zeros(3).masked_fill(torch.tensor([1, 0, 1]), 1.0),
    ),
    "masked_fill_value": (
        lambda T: T.zeros(3).masked_fill(T([True, False, True]), T([1.0])),
        lambda: torch.zeros(3).masked_fill(torch.tensor([True, False, True]), torch.tensor([1.0])),
    ),
    "topk_k": (lambda T: T.zeros(3).topk(4), lambda: torch.zeros(3).topk(4)),
    "sort_dim": (lambda T: T.zeros(3).sort(1), lambda: torch.zeros(3).sort(1)),
    "movedim_repeat": (
        lambda T: T.zeros(2, 3).movedim((0, 0), (0, 1)),
        lambda: torch.zeros(2, 3).movedim((0, 0), (0, 1)),
    ),
    "unflatten_sizes": (lambda T: T.zeros(6).unflatten(0, (4, 2)), lambda: torch.zeros(6).unflatten(0, (4, 2))),
    "pad_crops_too_much": (
        lambda T: T.zeros(2, 3).pad((-4, 2)),
        lambda: torch.nn.functional.pad(torch.zeros(2, 3), (-4, 2)),
    ),
    "meshgrid_2d": (
        lambda T: T.meshgrid(T.zeros(2, 2), T.zeros(2)),
        lambda: torch.meshgrid(torch.zeros(2, 2), torch.zeros(2), indexing="ij"),
    ),
}


@pytest.mark.flavor("torch")  # torch's exception types (tinygrad's differ for some: test_tinygrad_forms.py)
@pytest.mark.parametrize("name", list(ERROR_CASES))
def test_errors(name):
    ours, theirs = ERROR_CASES[name]
    raises_like_torch(lambda: ours(Tensor), theirs)


def test_errors_numpy_rules():
    with pytest.raises(IndexError):  # numpy allows one ellipsis (torch ignores the rest)
        Tensor.zeros(3, 4)[..., ...]
    with pytest.raises(ValueError):
        Tensor.zeros(3)[::0]


def test_error_messages_name_the_op():
    with pytest.raises(RuntimeError, match=r"pad: negative padding \(-5, 0\) crops more than the size 3"):
        Tensor.zeros(2, 3).pad(((0, 0), (-5, 0)))
    with pytest.raises(ValueError, match=r"Tensor: nested sequences of unequal lengths"):
        Tensor([[1, 2], [3]])
    with pytest.raises(RuntimeError, match=r"cat: sizes of tensors must match.*\(3, 2\)"):
        Tensor.zeros(2, 3).cat(Tensor.zeros(3, 2))
    with pytest.raises(IndexError, match=r"index 3 is out of bounds for dimension 0 with size 3"):
        Tensor.zeros(3, 4)[3]


# ---------------------------------------------------------------- gradients flow through the compositions


def test_gradients():
    x = data((4, 5), "float32")
    i = np.array([[0, 2], [1, 1], [4, 0], [3, 3]])

    def f(lib, X, idx):
        cat = X.cat(X[:2] * 2, dim=0) if lib is Tensor else torch.cat([X, X[:2] * 2], 0)
        v = X.sort(1)[0] if lib is Tensor else X.sort(dim=1, stable=True)[0]
        w = lib.arange(5).reshape(1, 5) if lib is Tensor else torch.arange(5).reshape(1, 5)
        out = cat[[0, 5, 2], 1:4].sum() + (X.gather(1, idx) * 3).sum() + (v * w).sum()
        out = out + X.unfold(1, 2, 1).roll(1, 0).diagonal().sum() + X.masked_fill(X > 0, 0.0).sum()
        src = X[:2, :3] * X[1:3, 1:4]
        return out + X.scatter_reduce(1, idx[:2], src[:, :2], "sum").sum()

    a = Tensor(x, requires_grad=True)
    t = torch.tensor(x, requires_grad=True)
    f(Tensor, a, Tensor(i)).backward()
    f(torch, t, torch.from_numpy(i)).backward()
    np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------- PYTHON device (tiny)


def test_python_device():
    t, r = make((3, 4), "float32", "flipped", device="PYTHON")
    assert t.device == "PYTHON"
    check(t.cat(t[:1], dim=0), torch.cat([r, r[:1]], 0))
    check(t[[2, 0], 1::2], r[[2, 0], 1::2])
    v, i = t.sort(1)
    rv, ri = r.sort(dim=1, stable=True)
    check(v, rv)
    check(i, ri)
    i2 = torch.tensor([[0, 2], [1, 1]])
    check(t.gather(1, Tensor(i2.numpy(), device="PYTHON")), r.gather(1, i2))
    check(t.roll(1, 1).diagonal(), r.roll(1, 1).diagonal())
    check(t.unfold(1, 2, 1), r.unfold(1, 2, 1))
    check((t > 0).nonzero(), (r > 0).nonzero())


# ---------------------------------------------------------------- the spec's compositions, as written


def gemm(A, B):
    M, K = A.shape
    _, N = B.shape
    return (A.reshape(M, K, 1) * B.reshape(1, K, N)).sum(1)


def prefix_sum(T):
    n = T.shape[0]
    x = T.pad((n - 1, 0))  # (2n-1,)
    x = x.reshape(1, 2 * n - 1).expand(n + 1, 2 * n - 1)  # tile
    x = x.reshape((n + 1) * (2 * n - 1)).shrink_to(2 * n * n)  # trim
    x = x.reshape(n, 2 * n).shrink_to(n, n)  # windows
    return x.sum(-1)  # reduce


def arange(n):
    return prefix_sum(Tensor(1).reshape(1).expand(n)) - 1


def gather(T, idx):
    K = T.shape[0]
    pos = arange(K).reshape(K, 1)  # (K, 1)
    mask = (pos == idx.reshape(1, -1)).cast(T.dtype)  # (K, D)
    return (T.reshape(K, 1) * mask).sum(0)  # (D,)


def scatter_add(T, idx, val):
    K, D = T.shape[0], idx.shape[0]
    pos = arange(K).reshape(K, 1)  # (K, 1)
    mask = (pos == idx.reshape(1, D)).cast(T.dtype)  # (K, D)
    return T + (mask * val.reshape(1, D)).sum(1)  # (K,)


@pytest.mark.parametrize("device", ["CPU", "PYTHON"])
def test_spec_compositions(device):
    with Context(DEVICE=device):  # the spec's arange builds Tensor(1) on the default device
        spec_compositions(device)


def spec_compositions(device):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((5, 3)).astype(np.float32), rng.standard_normal((3, 4)).astype(np.float32)
    np.testing.assert_allclose(
        gemm(Tensor(a, device=device), Tensor(b, device=device)).numpy(), a @ b, rtol=1e-5, atol=1e-6
    )
    v = rng.integers(-5, 6, 9).astype(np.int32)
    out = prefix_sum(Tensor(v, device=device))
    np.testing.assert_array_equal(out.numpy(), np.cumsum(v))
    for n in (1, 5, 8):
        np.testing.assert_array_equal(arange(n).numpy(), np.arange(n))
    t = rng.standard_normal(6).astype(np.float32)
    i = rng.integers(0, 6, 10).astype(np.int64)
    np.testing.assert_allclose(gather(Tensor(t, device=device), Tensor(i, device=device)).numpy(), t[i])
    val = rng.standard_normal(10).astype(np.float32)
    ref = t.copy()
    np.add.at(ref, i, val)
    out = scatter_add(Tensor(t, device=device), Tensor(i, device=device), Tensor(val, device=device))
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_core_pad_modes(mode):
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    want = torch.nn.functional.pad(torch.tensor(x), (1, 2, 2, 0), mode=mode)
    np.testing.assert_array_equal(Tensor(x).pad((1, 2, 2, 0), mode=mode).numpy(), want.numpy())


def test_core_squeeze_dims_tuple():
    x = torch.ones(1, 3, 1, 2)
    for dims in ((0, 2), (0, 1), (-2,)):
        assert Tensor.ones(1, 3, 1, 2).squeeze(dims).shape == tuple(x.squeeze(dims).shape)


@pytest.mark.parametrize("device", ["CPU", "PYTHON"])
def test_take_rows_is_an_indirect_load(device):
    w = np.arange(24, dtype=np.float32).reshape(6, 4)
    idx = np.array([[3, 0, 5], [3, -1, 2]])
    np.testing.assert_array_equal(Tensor(w, device=device).take_rows(Tensor(idx, device=device)).numpy(), w[idx])
    g = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    t, tt = Tensor(w, device=device, requires_grad=True), torch.tensor(w, requires_grad=True)
    t.take_rows(Tensor(idx, device=device)).backward(Tensor(g, device=device))
    tt[torch.tensor(idx)].backward(torch.tensor(g))
    np.testing.assert_allclose(t.grad.numpy(), tt.grad.numpy())


def test_take_rows_out_of_range_reads_zero_and_errors():
    w = Tensor(np.ones((3, 2), np.float32))
    np.testing.assert_array_equal(w.take_rows(Tensor([0, 7])).numpy(), [[1, 1], [0, 0]])
    with pytest.raises(IndexError, match="take_rows"):
        w.take_rows(Tensor([0.5]))
    with pytest.raises(IndexError, match="index_select: index 3 is out of range for dimension 0 with size 3"):
        w.index_select(0, Tensor([3])).numpy()
    ok = w.index_select(0, Tensor([2, -3]))  # negative counts from the end, as torch's indexing
    np.testing.assert_array_equal(ok.numpy(), np.ones((2, 2), np.float32))


def test_int_and_slice_fast_path_builds_the_general_paths_nodes():
    """__getitem__'s fast path (in-range ints, nonempty step-1 slices) gives the very node the general index plan
    builds (hash-consing), and the values numpy gives; anything else falls through to the general path."""
    import random

    from unigrad.api import movement

    r = random.Random(5)
    xn = np.random.default_rng(5).standard_normal((5, 7, 3)).astype(np.float32)
    x = Tensor(xn)
    fast_taken = 0
    for _ in range(400):
        items = []
        for n in x.shape[: r.randint(1, 3)]:
            if r.random() < 0.4:
                items.append(r.randint(-n, n - 1))
            else:
                items.append(
                    slice(r.choice([None, r.randint(-n - 2, n + 2)]), r.choice([None, r.randint(-n - 2, n + 2)]))
                )
        index = tuple(items) if len(items) > 1 or r.random() < 0.5 else items[0]
        fast = movement._ints_and_slices(x, index)
        general = movement._basic_index(x, movement._index_plan(x, index))
        if fast is not None:
            fast_taken += 1
            assert fast.uop is general.uop, index
        assert x[index].shape == xn[index].shape
        if fast_taken < 40 and fast is not None:
            np.testing.assert_array_equal(x[index].numpy(), xn[index])
    assert fast_taken > 200
    assert movement._ints_and_slices(x, (slice(0, 4, 2),)) is None and movement._ints_and_slices(x, 9) is None


def test_cat_builds_the_nodes_of_pad_and_where():
    """cat of static pieces builds its graph directly (a piece through the Tensor methods cost ~40 us): the very nodes
    (hash-consed) of each piece padded into place and merged by where() under a padded mask of ones, the last piece
    first; stack's the same over unsqueezed pieces; empty pieces that require grad stay in the graph."""
    from unigrad import dtypes

    a, b, c = Tensor(data((2, 3))), Tensor(data((4, 3))), Tensor(data((1, 3)))
    want = c.pad(((6, 0), (0, 0)))
    for t, before, after in ((b, 2, 1), (a, 0, 5)):
        mask = Tensor.ones(t.shape, dtype=dtypes.bool).pad(((before, after), (0, 0)))
        want = mask.where(t.pad(((before, after), (0, 0))), want)
    assert a.cat(b, c).uop is want.uop
    stacked = Tensor.stack(a, a * 2, dim=1)
    assert stacked.uop is a.unsqueeze(1).cat((a * 2).unsqueeze(1), dim=1).uop
    check(stacked, torch.stack([torch.from_numpy(data((2, 3)))] * 2, 1) * torch.tensor([1.0, 2.0]).reshape(1, 2, 1))
