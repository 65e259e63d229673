"""einsum, interpolate, max_pool2d(return_indices / ceil_mode), max_unpool2d and N-d pooling against torch:
forward values, shapes and dtypes, gradients, and the exception types torch raises. Mostly CPU; a few cases
run on the PYTHON interpreter too."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from unigrad import Tensor

ATOL, RTOL = 1e-5, 1e-4


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(0)


def close(u: Tensor, t: torch.Tensor, atol: float = ATOL, rtol: float = RTOL) -> None:
    assert u.shape == tuple(t.shape), (u.shape, tuple(t.shape))
    assert u.dtype.name == str(t.dtype).removeprefix("torch."), (u.dtype, t.dtype)
    np.testing.assert_allclose(u.numpy(), t.detach().numpy(), atol=atol, rtol=rtol)


def randn(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


# ---------------------------------------------------------------- einsum
EINSUM_CASES = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),  # implicit output: the labels seen once, sorted
    ("bI,Ab", [(2, 3), (4, 2)]),  # upper case sorts first
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("i,j->ij", [(2,), (3,)]),
    ("i,i->", [(4,), (4,)]),
    ("ijk->", [(2, 3, 4)]),
    ("ij->ji", [(2, 3)]),
    ("ii", [(3, 3)]),  # trace
    ("ii->i", [(3, 3)]),  # diagonal
    ("iij->ji", [(3, 3, 2)]),
    ("ijji->i", [(2, 3, 3, 2)]),
    ("...j,jk", [(2, 3, 4), (4, 5)]),
    ("...j,jk->k", [(2, 3, 4), (4, 5)]),  # '...' dims left out of the output are summed
    ("i...->...", [(3, 2)]),
    ("...i->i...", [(3, 2)]),
    ("a...b,...b->a...", [(2, 3, 4), (5, 1, 4)]),  # '...' dims broadcast
    ("i,i", [(1,), (3,)]),  # a size-1 label broadcasts
    ("ij,ij->ij", [(1, 3), (2, 1)]),
    (" ij , jk -> ik ", [(2, 3), (3, 4)]),
    ("ij,jk->ik", [(0, 3), (3, 4)]),
]


@pytest.mark.parametrize("formula,shapes", EINSUM_CASES)
def test_einsum(rng, formula, shapes):
    xs = [randn(rng, *s) for s in shapes]
    close(Tensor.einsum(formula, *[Tensor(x) for x in xs]), torch.einsum(formula, *[torch.tensor(x) for x in xs]))


@pytest.mark.parametrize("formula,shapes", [("ij,jk->ik", [(2, 3), (3, 4)]), ("iij,j->i", [(3, 3, 2), (2,)])])
def test_einsum_gradient(rng, formula, shapes):
    xs = [randn(rng, *s) for s in shapes]
    ts = [torch.tensor(x, requires_grad=True) for x in xs]
    us = [Tensor(x, requires_grad=True) for x in xs]
    (torch.einsum(formula, *ts) ** 2).sum().backward()
    (Tensor.einsum(formula, *us) ** 2).sum().backward()
    for u, t in zip(us, ts):
        close(u.grad, t.grad, atol=1e-4, rtol=1e-3)


def test_einsum_operand_list_ints_and_python_device():
    a, b = np.arange(6).reshape(2, 3), np.arange(12).reshape(3, 4)
    out = Tensor.einsum("ij,jk->ik", [Tensor(a), Tensor(b)])
    close(out, torch.einsum("ij,jk->ik", [torch.tensor(a), torch.tensor(b)]))
    close(Tensor.einsum("ij->", Tensor(a, dtype="int32")), torch.einsum("ij->", torch.tensor(a, dtype=torch.int32)))
    x, y = np.ones((2, 3), np.float32), np.arange(3, dtype=np.float32)
    got = Tensor.einsum("ij,j->i", Tensor(x, device="PYTHON"), Tensor(y, device="PYTHON"))
    assert got.device == "PYTHON"
    close(got, torch.einsum("ij,j->i", torch.tensor(x), torch.tensor(y)))


@pytest.mark.parametrize(
    "formula,shapes,match",
    [
        ("ij,jk->ik", [(2, 3)], "fewer operands"),
        ("ij", [(2, 3), (3, 2)], "more operands"),
        ("ij->k", [(2, 3)], "output subscript k"),
        ("ij->ii", [(2, 3)], "more than once"),
        ("i->i", [(2, 3)], "number of subscripts"),
        ("ij,jk", [(2, 3), (4, 2)], "subscript j has size 4"),
        ("i.j", [(2, 3)], "invalid subscripts"),
    ],
)
def test_einsum_errors(formula, shapes, match):
    with pytest.raises(RuntimeError, match=match):
        Tensor.einsum(formula, *[Tensor.ones(*s) for s in shapes])
    if match != "invalid subscripts":
        with pytest.raises(RuntimeError):
            torch.einsum(formula, *[torch.ones(*s) for s in shapes])


# ---------------------------------------------------------------- interpolate
TORCH_LINEAR = {1: "linear", 2: "bilinear", 3: "trilinear"}


@pytest.mark.parametrize(
    "shape,size",
    [
        ((2, 3, 5), (9,)),
        ((2, 3, 5), (10,)),  # integral upsample: nearest is a repeat
        ((2, 3, 8), (3,)),
        ((2, 3, 8), (4,)),  # integral downsample: nearest is a strided slice
        ((1, 2, 4, 6), (7, 3)),
        ((1, 2, 3, 4), (6, 8)),
        ((1, 1, 3, 4, 5), (5, 2, 7)),
        ((2, 1, 1, 6), (4, 1)),
    ],
)
@pytest.mark.parametrize("mode", ["nearest", "nearest-exact", "linear", "linear-corners"])
def test_interpolate(rng, shape, size, mode):
    x = randn(rng, *shape)
    if mode.startswith("linear"):
        corners = mode == "linear-corners"
        want = F.interpolate(torch.tensor(x), size=size, mode=TORCH_LINEAR[len(size)], align_corners=corners)
        got = Tensor(x).interpolate(size, mode="linear", align_corners=corners)
    else:
        want = F.interpolate(torch.tensor(x), size=size, mode=mode)
        got = Tensor(x).interpolate(size, mode=mode)
    close(got, want, atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("mode", ["nearest", "nearest-exact", "bilinear"])
@pytest.mark.parametrize("scale", [0.5, 1.7, 2.0, (1.5, 0.75)])
def test_interpolate_scale_factor(rng, mode, scale):
    x = randn(rng, 2, 2, 5, 6)
    close(
        Tensor(x).interpolate(mode=mode, scale_factor=scale),
        F.interpolate(torch.tensor(x), scale_factor=scale, mode=mode),
    )


def test_interpolate_int_size_leading_dims_and_gradient(rng):
    x = randn(rng, 1, 2, 4, 5)
    close(Tensor(x).interpolate(7, mode="bilinear"), F.interpolate(torch.tensor(x), size=7, mode="bilinear"))
    # tinygrad's form: the last len(size) dims, with any number of leading dims
    y = randn(rng, 4, 5)
    want = F.interpolate(torch.tensor(y)[None, None], size=(3, 8), mode="bilinear")[0, 0]
    close(Tensor(y).interpolate((3, 8)), want, atol=1e-6)
    for mode, size, corners in [("bilinear", (6, 3), True), ("bilinear", (3, 7), False), ("nearest", (7, 3), None)]:
        t, u = torch.tensor(x, requires_grad=True), Tensor(x, requires_grad=True)
        w = randn(rng, 1, 2, *size)
        (F.interpolate(t, size=size, mode=mode, align_corners=corners) * torch.tensor(w)).sum().backward()
        (u.interpolate(size, mode=mode, align_corners=bool(corners)) * Tensor(w)).sum().backward()
        close(u.grad, t.grad, atol=1e-4, rtol=1e-3)


def test_interpolate_python_device_and_errors(rng):
    x = randn(rng, 1, 1, 3, 4)
    got = Tensor(x, device="PYTHON").interpolate((5, 2), mode="bilinear")
    assert got.device == "PYTHON"
    close(got, F.interpolate(torch.tensor(x), size=(5, 2), mode="bilinear"), atol=1e-6)
    close(Tensor(x, device="PYTHON").interpolate((6, 8), mode="nearest"), F.interpolate(torch.tensor(x), size=(6, 8)))
    with pytest.raises(ValueError):
        Tensor(x).interpolate((5, 2), mode="nearest", align_corners=True)
    with pytest.raises(ValueError):
        Tensor(x).interpolate()
    with pytest.raises(NotImplementedError):
        Tensor(x).interpolate((5, 2), mode="bicubic")


# ---------------------------------------------------------------- pooling with indices, ceil_mode, N-d
POOL_KW = [
    {"kernel_size": 2},
    {"kernel_size": 3, "stride": 2, "padding": 1},
    {"kernel_size": (2, 3), "stride": 2, "ceil_mode": True},
    {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True},
    {"kernel_size": 2, "stride": 1, "dilation": 2},
    {"kernel_size": (3, 3), "stride": (3, 2), "padding": 1, "ceil_mode": True},
]


@pytest.mark.parametrize("kw", POOL_KW)
def test_max_pool2d_indices(rng, kw):
    x = np.round(randn(rng, 2, 3, 7, 6))  # integer-valued: ties, where torch keeps the first maximum
    out, idx = Tensor(x).max_pool2d(**kw, return_indices=True)
    want, want_idx = F.max_pool2d(torch.tensor(x), **kw, return_indices=True)
    close(out, want)
    close(idx, want_idx)
    close(Tensor(x).max_pool2d(**kw), want)


@pytest.mark.parametrize("kw", [k for k in POOL_KW if "dilation" not in k])
@pytest.mark.parametrize("count_include_pad", [True, False])
def test_avg_pool2d_ceil_mode(rng, kw, count_include_pad):
    x = randn(rng, 2, 3, 7, 6)
    want = F.avg_pool2d(torch.tensor(x), **kw, count_include_pad=count_include_pad)
    close(Tensor(x).avg_pool2d(**kw, count_include_pad=count_include_pad), want)


def test_pool_1d_3d_and_gradient(rng):
    x1 = randn(rng, 2, 3, 9)
    out, idx = Tensor(x1).max_pool2d((3,), 2, return_indices=True, ceil_mode=True)
    want, want_idx = F.max_pool1d(torch.tensor(x1), 3, 2, return_indices=True, ceil_mode=True)
    close(out, want)
    close(idx, want_idx)
    close(Tensor(x1).avg_pool2d((3,), 2, padding=1), F.avg_pool1d(torch.tensor(x1), 3, 2, padding=1))
    x3 = randn(rng, 1, 2, 4, 5, 6)
    out, idx = Tensor(x3).max_pool2d((2, 2, 3), return_indices=True)
    want, want_idx = F.max_pool3d(torch.tensor(x3), (2, 2, 3), return_indices=True)
    close(out, want)
    close(idx, want_idx)
    x = randn(rng, 1, 2, 6, 6)
    t, u = torch.tensor(x, requires_grad=True), Tensor(x, requires_grad=True)
    F.max_pool2d(t, 3, 2, padding=1, ceil_mode=True).sum().backward()
    u.max_pool2d(3, 2, padding=1, ceil_mode=True).sum().backward()
    close(u.grad, t.grad, atol=1e-4, rtol=1e-3)


@pytest.mark.parametrize(
    "kw", [{"kernel_size": 2}, {"kernel_size": 3, "stride": 2, "padding": 1}, {"kernel_size": 3, "stride": 1}]
)
def test_max_unpool2d(rng, kw):
    x = randn(rng, 2, 2, 6, 5)
    out, idx = F.max_pool2d(torch.tensor(x), **kw, return_indices=True)
    kernel = kw["kernel_size"]
    unpool = {k: v for k, v in kw.items() if k != "kernel_size"}
    want = F.max_unpool2d(out, idx, kernel, **unpool, output_size=x.shape[-2:])
    got = Tensor(out.numpy()).max_unpool2d(Tensor(idx.numpy()), kernel, **unpool, output_size=x.shape[-2:])
    close(got, want)
    y = randn(rng, 1, 2, 4, 6)  # default output size: (o - 1) * s - 2p + k
    out, idx = F.max_pool2d(torch.tensor(y), 2, return_indices=True)
    close(Tensor(out.numpy()).max_unpool2d(Tensor(idx.numpy())), F.max_unpool2d(out, idx, 2))


def test_max_pool2d_indices_python_device():
    x = np.array([[[[1, 3, 2, 3], [4, 4, 0, 1], [5, 1, 1, 9]]]], dtype=np.float32)
    out, idx = Tensor(x, device="PYTHON").max_pool2d(2, return_indices=True, ceil_mode=True)
    want, want_idx = F.max_pool2d(torch.tensor(x), 2, return_indices=True, ceil_mode=True)
    assert idx.device == "PYTHON"
    close(out, want)
    close(idx, want_idx)


def test_pool_flat_asymmetric_padding(rng):
    x = randn(rng, 1, 2, 6, 7)
    padded = F.pad(torch.tensor(x), (1, 0, 2, 1), value=-np.inf)  # torch's flat order: last dim first
    close(Tensor(x).max_pool2d(3, 2, padding=(1, 0, 2, 1)), F.max_pool2d(padded, 3, 2))
    close(Tensor(x).avg_pool2d(3, 2, padding=(1, 0, 2, 1)), F.avg_pool2d(F.pad(torch.tensor(x), (1, 0, 2, 1)), 3, 2))


def test_max_unpool2d_gradient_with_overlapping_windows():
    """A position two windows chose: each value gets that position's gradient in full, as torch (not a share)."""
    x = np.array([[[[1.0, 5.0, 2.0, 0.0], [0.0, 1.0, 3.0, 4.0]]]], dtype=np.float32)
    out, idx = F.max_pool2d(torch.tensor(x), (2, 2), stride=(1, 1), return_indices=True)  # 5 chosen twice
    proj = np.arange(1, 9, dtype=np.float32).reshape(1, 1, 2, 4)
    v = torch.tensor(out.numpy(), requires_grad=True)
    (F.max_unpool2d(v, idx, (2, 2), stride=(1, 1), output_size=(2, 4)) * torch.tensor(proj)).sum().backward()
    u = Tensor(out.numpy(), requires_grad=True)
    got = u.max_unpool2d(Tensor(idx.numpy()), (2, 2), stride=(1, 1), output_size=(2, 4))
    (got * Tensor(proj)).sum().backward()
    np.testing.assert_allclose(got.numpy(), F.max_unpool2d(out, idx, (2, 2), stride=(1, 1), output_size=(2, 4)).numpy())
    np.testing.assert_allclose(u.grad.numpy(), v.grad.numpy())
