"""unigrad.nn.functional against torch.nn.functional: values and dtypes on empty, size-1, odd and non-contiguous
inputs, gradients against torch autograd, every reduction of each loss, and the errors raised at the call."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import unigrad.nn.functional as F
from unigrad import Tensor, dtypes

rng = np.random.default_rng(0)


def check(u, t, atol: float = 1e-5, rtol: float = 1e-4) -> None:
    """unigrad result u against torch result t: shape, dtype name and values (nan equal to nan); tuples pairwise."""
    if isinstance(t, (tuple, list)):
        assert isinstance(u, (tuple, list)) and len(u) == len(t), (u, t)
        for a, b in zip(u, t):
            check(a, b, atol, rtol)
        return
    assert isinstance(u, Tensor), type(u)
    assert u.shape == tuple(t.shape), (u.shape, tuple(t.shape))
    assert u.dtype.name == str(t.dtype).removeprefix("torch."), (u.dtype, t.dtype)
    np.testing.assert_allclose(u.numpy(), t.detach().numpy(), atol=atol, rtol=rtol, equal_nan=True)


def check_grad(fu, ft, *arrays: np.ndarray, atol: float = 1e-4, rtol: float = 1e-3) -> None:
    """fu over unigrad leaves and ft over torch leaves made from `arrays`: forward values, then the gradient of
    sum(out * w) for a random w (each output element weighs differently) against torch autograd."""
    us = [Tensor(a, requires_grad=True) for a in arrays]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    ou, ot = fu(*us), ft(*ts)
    check(ou, ot, atol, rtol)
    w = rng.standard_normal(tuple(ot.shape)).astype(np.float32 if ot.dtype == torch.float32 else np.float64)
    (ou * Tensor(w)).sum().backward()
    (ot * torch.tensor(w)).sum().backward()
    for u, t in zip(us, ts):
        tg = torch.zeros_like(t) if t.grad is None else t.grad
        ug = np.zeros(u.shape, np.float32) if u.grad is None else u.grad.numpy()
        np.testing.assert_allclose(ug, tg.numpy(), atol=atol, rtol=rtol)


def randn(*shape: int, dtype=np.float32) -> np.ndarray:
    return rng.standard_normal(shape).astype(dtype)


def uniform(lo: float, hi: float, *shape: int) -> np.ndarray:
    return rng.uniform(lo, hi, shape).astype(np.float32)


def labels(n: int, *shape: int) -> np.ndarray:
    return rng.integers(0, n, shape).astype(np.int64)


SHAPES = [(0,), (1,), (7,), (3, 5)]
REDUCTIONS = ["mean", "sum", "none"]

# ---------------------------------------------------------------- activations

ACTIVATIONS = [
    ("relu", {}),
    ("relu6", {}),
    ("leaky_relu", {}),
    ("leaky_relu", {"negative_slope": 0.2}),
    ("elu", {"alpha": 0.7}),
    ("selu", {}),
    ("celu", {"alpha": 1.3}),
    ("gelu", {}),
    ("gelu", {"approximate": "tanh"}),
    ("silu", {}),
    ("mish", {}),
    ("sigmoid", {}),
    ("tanh", {}),
    ("hardtanh", {"min_val": -0.5, "max_val": 2.0}),
    ("hardswish", {}),
    ("hardsigmoid", {}),
    ("softplus", {}),
    ("softplus", {"beta": 2.0, "threshold": 1.5}),
    ("softsign", {}),
    ("logsigmoid", {}),
    ("tanhshrink", {}),
    ("softshrink", {}),
    ("softshrink", {"lambd": 1.0}),
    ("hardshrink", {"lambd": 0.3}),
    ("rrelu", {}),
]


@pytest.mark.parametrize("name,kw", ACTIVATIONS, ids=[f"{n}{i}" for i, (n, _) in enumerate(ACTIVATIONS)])
def test_activations(name, kw):
    fu, ft = getattr(F, name), getattr(TF, name)
    for shape in SHAPES:
        x = randn(*shape) * 3
        check_grad(lambda t: fu(t, **kw), lambda t: ft(t, **kw), x)
    x = randn(5, 3) * 3  # non-contiguous: a transposed view
    check_grad(lambda t: fu(t.T, **kw), lambda t: ft(t.T, **kw), x)
    check(fu(Tensor(x.astype(np.float64)), **kw), ft(torch.tensor(x.astype(np.float64)), **kw))


def test_threshold_glu_prelu():
    x = randn(4, 6) * 2
    check_grad(lambda t: F.threshold(t, 0.3, -2.0), lambda t: TF.threshold(t, 0.3, -2.0), x)
    for dim in (-1, 0, 1):
        check_grad(lambda t: F.glu(t, dim), lambda t: TF.glu(t, dim), x)
    check_grad(lambda t: F.glu(t.T), lambda t: TF.glu(t.T), randn(6, 4))
    for shape, wshape in [((4, 3, 5), (3,)), ((4, 3, 5), (1,)), ((2, 3), (3,)), ((5,), (1,)), ((), (1,))]:
        check_grad(F.prelu, TF.prelu, randn(*shape), uniform(0.1, 0.5, *wshape))
    with pytest.raises(RuntimeError, match=r"glu\(\): halving dimension must be even, but dimension 1 is size 5"):
        F.glu(Tensor(randn(2, 5)), 1)
    with pytest.raises(RuntimeError, match=r"prelu\(\): weight must have 1 element or 3"):
        F.prelu(Tensor(randn(2, 3)), Tensor(randn(2)))
    with pytest.raises(RuntimeError, match=r"gelu\(\): approximate must be 'none' or 'tanh', got 'erf'"):
        F.gelu(Tensor(x), "erf")
    with pytest.raises(ValueError, match=r"hardtanh\(\): min_val \(2\) cannot be greater than max_val \(1\)"):
        F.hardtanh(Tensor(x), 2, 1)
    with pytest.raises(RuntimeError, match=r"softshrink\(\): lambda must be greater or equal to 0, got -1"):
        F.softshrink(Tensor(x), -1)
    with pytest.raises(TypeError, match=r"relu\(\): argument 'input' must be a Tensor, got list"):
        F.relu([1.0])


def test_rrelu_training_slopes_in_range():
    x = -np.abs(randn(2000)) - 0.1
    y = F.rrelu(Tensor(x), 0.1, 0.3, training=True).numpy()
    slope = y / x
    assert slope.min() >= 0.1 - 1e-6 and slope.max() <= 0.3 + 1e-6 and slope.std() > 0.03


def test_softmax_family():
    x = randn(3, 4, 5)
    for dim in (0, 1, 2, -1):
        for name in ("softmax", "log_softmax", "softmin"):
            fu, ft = getattr(F, name), getattr(TF, name)
            check_grad(lambda t: fu(t, dim), lambda t: ft(t, dim), x)
    for shape in [(5,), (3, 4), (2, 3, 4), (2, 3, 4, 2)]:  # the implicit dim (0 for 1-D and 3-D, else 1)
        a = randn(*shape)
        with pytest.warns(UserWarning):
            want = TF.softmax(torch.tensor(a))
        check(F.softmax(Tensor(a)), want)
    check(F.softmax(Tensor(x), 1, dtype=dtypes.float64), TF.softmax(torch.tensor(x), 1, dtype=torch.float64))
    check(F.log_softmax(Tensor(x).permute(2, 0, 1), -1), TF.log_softmax(torch.tensor(x).permute(2, 0, 1), -1))
    check(F.softmax(Tensor(randn(0, 3)), 1), TF.softmax(torch.tensor(randn(0, 3)), 1))


# ---------------------------------------------------------------- distances and linear layers


def test_normalize_cosine_pairwise():
    x, y = randn(4, 6), randn(4, 6)
    for p, dim in [(2.0, 1), (1.0, 0), (3.0, -1)]:
        check_grad(lambda t: F.normalize(t, p, dim), lambda t: TF.normalize(t, p, dim), x)
    check(F.normalize(Tensor(np.zeros((2, 3), np.float32))), TF.normalize(torch.zeros(2, 3)))
    for dim in (1, 0, -1):
        check_grad(lambda a, b: F.cosine_similarity(a, b, dim), lambda a, b: TF.cosine_similarity(a, b, dim), x, y)
    check_grad(F.cosine_similarity, TF.cosine_similarity, randn(3, 5), randn(1, 5))  # broadcast
    for p in (2.0, 1.0, 3.0):
        check_grad(
            lambda a, b: F.pairwise_distance(a, b, p), lambda a, b: TF.pairwise_distance(a, b, p), x, y, atol=1e-3
        )
    check(
        F.pairwise_distance(Tensor(x), Tensor(y), keepdim=True),
        TF.pairwise_distance(torch.tensor(x), torch.tensor(y), keepdim=True),
    )


def test_linear_bilinear():
    for xs in [(5,), (3, 5), (2, 3, 5), (0, 5)]:
        check_grad(F.linear, TF.linear, randn(*xs), randn(4, 5), randn(4))
    check_grad(lambda x, w: F.linear(x.T, w), lambda x, w: TF.linear(x.T, w), randn(5, 3), randn(4, 5))
    check_grad(F.bilinear, TF.bilinear, randn(3, 4), randn(3, 5), randn(2, 4, 5), randn(2))
    check_grad(F.bilinear, TF.bilinear, randn(2, 3, 4), randn(2, 3, 5), randn(2, 4, 5))
    with pytest.raises(RuntimeError, match=r"linear\(\): input \(3, 5\) and weight \(4, 6\) do not match"):
        F.linear(Tensor(randn(3, 5)), Tensor(randn(4, 6)))
    with pytest.raises(TypeError, match=r"linear\(\): argument 'input' must be a Tensor, got ndarray"):
        F.linear(randn(3, 5), Tensor(randn(4, 5)))


# ---------------------------------------------------------------- convolution


@pytest.mark.parametrize(
    "n,kw",
    [
        (1, {}),
        (1, {"stride": 2, "padding": 1, "dilation": 2}),
        (1, {"padding": "same", "groups": 2}),
        (2, {}),
        (2, {"stride": (2, 1), "padding": (1, 0), "groups": 2}),
        (2, {"padding": "valid", "dilation": (1, 2)}),
        (3, {"padding": 1}),
    ],
)
def test_conv(n, kw):
    fu, ft = getattr(F, f"conv{n}d"), getattr(TF, f"conv{n}d")
    spatial = (7, 6, 5)[:n]
    k = (3, 2, 3)[:n]
    x, w, b = randn(2, 4, *spatial), randn(6, 4 // kw.get("groups", 1), *k), randn(6)
    check_grad(lambda a, c, d: fu(a, c, d, **kw), lambda a, c, d: ft(a, c, d, **kw), x, w, b)
    check(fu(Tensor(x[0]), Tensor(w), **kw), ft(torch.tensor(x[0]), torch.tensor(w), **kw))  # unbatched


@pytest.mark.parametrize(
    "n,kw",
    [
        (1, {}),
        (1, {"stride": 2, "padding": 1, "output_padding": 1}),
        (2, {"stride": (2, 1), "padding": (1, 0), "groups": 2, "dilation": (1, 2)}),
        (2, {"stride": 3, "output_padding": (2, 0)}),
    ],
)
def test_conv_transpose(n, kw):
    fu, ft = getattr(F, f"conv_transpose{n}d"), getattr(TF, f"conv_transpose{n}d")
    spatial = (5, 4)[:n]
    k = (3, 2)[:n]
    x, w, b = randn(2, 4, *spatial), randn(4, 6 // kw.get("groups", 1), *k), randn(6)
    check_grad(lambda a, c, d: fu(a, c, d, **kw), lambda a, c, d: ft(a, c, d, **kw), x, w, b)
    check(fu(Tensor(x[0]), Tensor(w), **kw), ft(torch.tensor(x[0]), torch.tensor(w), **kw))


def test_3d_conv_transpose_and_pools():
    x = randn(1, 2, 5, 4, 3)
    check_grad(
        lambda a, w: F.conv_transpose3d(a, w, stride=2, padding=1),
        lambda a, w: TF.conv_transpose3d(a, w, stride=2, padding=1),
        x,
        randn(2, 3, 2, 2, 2),
    )
    check_grad(lambda a: F.max_pool3d(a, 2, 1), lambda a: TF.max_pool3d(a, 2, 1), x)
    check_grad(lambda a: F.avg_pool3d(a, (3, 2, 2), padding=1), lambda a: TF.avg_pool3d(a, (3, 2, 2), padding=1), x)
    check_grad(lambda a: F.adaptive_avg_pool3d(a, (2, 3, 1)), lambda a: TF.adaptive_avg_pool3d(a, (2, 3, 1)), x)
    check_grad(lambda a: F.adaptive_max_pool3d(a, (5, 2, 2)), lambda a: TF.adaptive_max_pool3d(a, (5, 2, 2)), x)


def test_conv_errors():
    x, w = Tensor(randn(2, 4, 7)), Tensor(randn(6, 4, 3))
    with pytest.raises(RuntimeError, match=r"conv2d\(\): expected a 4-D weight \(C_out, C_in/groups, \*kernel\)"):
        F.conv2d(x, w)
    with pytest.raises(RuntimeError, match=r"conv1d\(\): expected a 2-D or 3-D input .* got shape \(7,\)"):
        F.conv1d(Tensor(randn(7)), w)
    with pytest.raises(ValueError, match=r"conv1d\(\): padding must be 'same', 'valid', an int or 1 ints, got 'full'"):
        F.conv1d(x, w, padding="full")
    with pytest.raises(RuntimeError, match="padding='same' is not supported for strided convolutions"):
        F.conv1d(x, w, stride=2, padding="same")
    with pytest.raises(RuntimeError, match=r"conv_transpose1d\(\): output padding must be smaller"):
        F.conv_transpose1d(x, Tensor(randn(4, 2, 3)), output_padding=1)


# ---------------------------------------------------------------- pooling


@pytest.mark.parametrize(
    "kw",
    [
        {"kernel_size": 2},
        {"kernel_size": 3, "stride": 2, "padding": 1},
        {"kernel_size": 3, "stride": 2, "ceil_mode": True},
        {"kernel_size": 2, "dilation": 2},
    ],
)
def test_max_pool(kw):
    for n, shape in [(1, (2, 3, 9)), (2, (2, 3, 7, 6)), (2, (3, 7, 6))]:
        fu, ft = getattr(F, f"max_pool{n}d"), getattr(TF, f"max_pool{n}d")
        x = randn(*shape)
        check_grad(lambda t: fu(t, **kw), lambda t: ft(t, **kw), x)
        check(fu(Tensor(x), **kw, return_indices=True), ft(torch.tensor(x), **kw, return_indices=True))
    x = randn(2, 3, 8, 6)
    check_grad(lambda t: F.max_pool2d(t.transpose(2, 3), **kw), lambda t: TF.max_pool2d(t.transpose(2, 3), **kw), x)


@pytest.mark.parametrize(
    "kw",
    [
        {"kernel_size": 2},
        {"kernel_size": 3, "stride": 2, "padding": 1},
        {"kernel_size": 3, "stride": 2, "padding": 1, "count_include_pad": False},
        {"kernel_size": 3, "stride": 2, "ceil_mode": True},
        {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True, "count_include_pad": False},
    ],
)
def test_avg_pool(kw):
    for n, shape in [(1, (2, 3, 9)), (2, (2, 3, 7, 6)), (2, (3, 7, 6))]:
        fu, ft = getattr(F, f"avg_pool{n}d"), getattr(TF, f"avg_pool{n}d")
        check_grad(lambda t: fu(t, **kw), lambda t: ft(t, **kw), randn(*shape))


def test_avg_pool_divisor_and_lp_pool():
    x = randn(2, 3, 7, 6)
    kw = {"kernel_size": 3, "stride": 2, "padding": 1, "divisor_override": 5}
    check_grad(lambda t: F.avg_pool2d(t, **kw), lambda t: TF.avg_pool2d(t, **kw), x)
    xp = uniform(0.1, 2.0, 2, 3, 7, 6)
    for p, k, s, ceil in [(2.0, 2, None, False), (3.0, (3, 2), 2, False), (1.5, 3, 2, True)]:
        check_grad(lambda t: F.lp_pool2d(t, p, k, s, ceil), lambda t: TF.lp_pool2d(t, p, k, s, ceil), xp)
        check_grad(
            lambda t: F.lp_pool1d(t, p, 3, s, ceil), lambda t: TF.lp_pool1d(t, p, 3, s, ceil), xp.reshape(6, 7, 6)
        )
    with pytest.raises(RuntimeError, match=r"max_pool2d\(\): pad should be at most half of effective kernel size"):
        F.max_pool2d(Tensor(x), 2, padding=2)
    with pytest.raises(RuntimeError, match=r"avg_pool1d\(\): expected a 2-D or 3-D input"):
        F.avg_pool1d(Tensor(x), 2)


@pytest.mark.parametrize("out", [1, 3, (2, 4), (5, None), (7, 6)])
def test_adaptive_pools(out):
    x = randn(2, 3, 7, 6)
    check_grad(lambda t: F.adaptive_avg_pool2d(t, out), lambda t: TF.adaptive_avg_pool2d(t, out), x)
    check_grad(lambda t: F.adaptive_max_pool2d(t, out), lambda t: TF.adaptive_max_pool2d(t, out), x)
    u, t = F.adaptive_max_pool2d(Tensor(x[0]), out, True), TF.adaptive_max_pool2d(torch.tensor(x[0]), out, True)
    check(u, t)
    o1 = out if isinstance(out, int) else out[0]
    x1 = randn(2, 3, 7)
    check_grad(lambda t: F.adaptive_avg_pool1d(t, o1), lambda t: TF.adaptive_avg_pool1d(t, o1), x1)
    check_grad(lambda t: F.adaptive_max_pool1d(t, o1), lambda t: TF.adaptive_max_pool1d(t, o1), x1)
    check(F.adaptive_max_pool1d(Tensor(x1), o1, True), TF.adaptive_max_pool1d(torch.tensor(x1), o1, True))


# ---------------------------------------------------------------- padding, resampling, rearranging


def test_pad():
    x = randn(2, 3, 5, 4)
    for p, mode in [
        ((1, 2), "constant"),
        ((1, 0, 2, 1), "constant"),
        ((-1, 1), "constant"),
        ((1, 2, 0, 3), "reflect"),
        ((1, 2, 2, 0), "replicate"),
        ((1, 2, 2, 3), "circular"),
    ]:
        check_grad(lambda t: F.pad(t, p, mode), lambda t: TF.pad(t, p, mode), x)
    check_grad(lambda t: F.pad(t, (2, 1), "reflect"), lambda t: TF.pad(t, (2, 1), "reflect"), x[0])
    check(F.pad(Tensor(x), (1, 1), value=2.5), TF.pad(torch.tensor(x), (1, 1), value=2.5))
    check(F.pad(Tensor(x).permute(0, 2, 3, 1), (1, 1, 2, 0)), TF.pad(torch.tensor(x).permute(0, 2, 3, 1), (1, 1, 2, 0)))
    with pytest.raises(ValueError, match=r"pad\(\): padding length must be even"):
        F.pad(Tensor(x), (1, 2, 3))
    with pytest.raises(RuntimeError, match=r"pad\(\): reflect padding size should be less than"):
        F.pad(Tensor(x), (4, 0), "reflect")
    with pytest.raises(RuntimeError, match=r"pad\(\): padding mode 'reflect' doesn't take in value argument"):
        F.pad(Tensor(x), (1, 1), "reflect", 1.0)
    with pytest.raises(NotImplementedError, match=r"pad\(\): mode must be .* got 'wrap'"):
        F.pad(Tensor(x), (1, 0), "wrap")


@pytest.mark.parametrize(
    "shape,kw",
    [
        ((2, 3, 5), {"size": 8}),
        ((2, 3, 5), {"scale_factor": 2.0, "mode": "linear"}),
        ((2, 3, 5), {"size": 3, "mode": "linear", "align_corners": True}),
        ((1, 2, 5, 4), {"size": (7, 3), "mode": "bilinear"}),
        ((1, 2, 5, 4), {"scale_factor": (1.5, 2.0), "mode": "nearest"}),
        ((1, 2, 5, 4), {"size": (3, 6), "mode": "nearest-exact"}),
        ((1, 2, 6, 4), {"size": (4, 3), "mode": "area"}),
        ((1, 2, 5, 4), {"scale_factor": 1.7, "mode": "bilinear", "recompute_scale_factor": True}),
        ((1, 2, 3, 4, 2), {"size": (4, 2, 3), "mode": "trilinear"}),
    ],
)
def test_interpolate(shape, kw):
    check_grad(lambda t: F.interpolate(t, **kw), lambda t: TF.interpolate(t, **kw), randn(*shape))


def test_interpolate_upsample_errors():
    x = randn(1, 2, 5, 4)
    check(F.upsample_nearest(Tensor(x), scale_factor=2), TF.interpolate(torch.tensor(x), scale_factor=2))
    check(F.upsample(Tensor(x), (3, 3), mode="bilinear"), TF.interpolate(torch.tensor(x), (3, 3), mode="bilinear"))
    with pytest.warns(UserWarning):
        want = TF.upsample_bilinear(torch.tensor(x), (7, 5))
    check(F.upsample_bilinear(Tensor(x), (7, 5)), want)
    with pytest.raises(NotImplementedError, match=r"interpolate\(\): mode 'linear' needs a 3-D input, got a 4-D"):
        F.interpolate(Tensor(x), size=3, mode="linear")
    with pytest.raises(ValueError, match="only one of size or scale_factor should be defined"):
        F.interpolate(Tensor(x), size=3, scale_factor=2)
    with pytest.raises(ValueError, match="align_corners option can only be set with the interpolating modes"):
        F.interpolate(Tensor(x), size=3, align_corners=True)
    with pytest.raises(ValueError, match=r"interpolate\(\): input and output must have the same number of spatial"):
        F.interpolate(Tensor(x), size=[3])
    with pytest.raises(NotImplementedError, match=r"interpolate\(\): mode must be one of"):
        F.interpolate(Tensor(x), size=3, mode="cubic")


def test_pixel_shuffle_unshuffle():
    for shape, r in [((2, 8, 3, 2), 2), ((9, 2, 1), 3), ((2, 1, 4, 3, 2), 2)]:
        check_grad(lambda t: F.pixel_shuffle(t, r), lambda t: TF.pixel_shuffle(t, r), randn(*shape))
    for shape, r in [((2, 2, 6, 4), 2), ((1, 6, 3), 3)]:
        check_grad(lambda t: F.pixel_unshuffle(t, r), lambda t: TF.pixel_unshuffle(t, r), randn(*shape))
    with pytest.raises(RuntimeError, match=r"pixel_shuffle\(\): expected an input .* divisible by upscale_factor"):
        F.pixel_shuffle(Tensor(randn(1, 6, 2, 2)), 2)
    with pytest.raises(RuntimeError, match=r"pixel_unshuffle\(\): expected .* divisible by downscale_factor 2"):
        F.pixel_unshuffle(Tensor(randn(1, 1, 3, 2)), 2)


@pytest.mark.parametrize(
    "kw", [{"kernel_size": 2}, {"kernel_size": (3, 2), "stride": 2, "padding": 1}, {"kernel_size": 2, "dilation": 2}]
)
def test_unfold_fold(kw):
    x = randn(2, 3, 7, 6)
    check_grad(lambda t: F.unfold(t, **kw), lambda t: TF.unfold(t, **kw), x)
    check(F.unfold(Tensor(x[0]), **kw), TF.unfold(torch.tensor(x[0]), **kw))
    cols = TF.unfold(torch.tensor(x), **kw).detach().numpy()
    check_grad(lambda t: F.fold(t, (7, 6), **kw), lambda t: TF.fold(t, (7, 6), **kw), cols)
    check(F.fold(Tensor(cols[0]), (7, 6), **kw), TF.fold(torch.tensor(cols[0]), (7, 6), **kw))
    with pytest.raises(RuntimeError, match=r"fold\(\): input \(2, 5, 3\) does not match output_size"):
        F.fold(Tensor(randn(2, 5, 3)), (7, 6), **kw)


# ---------------------------------------------------------------- embedding, one_hot, dropout


def test_embedding_one_hot():
    w = randn(10, 4)
    for idx in [labels(10, 5), labels(10, 2, 3), labels(10, 0), np.array(3)]:
        check_grad(lambda t: F.embedding(Tensor(idx), t), lambda t: TF.embedding(torch.tensor(idx), t), w)
    idx = np.array([[1, 0, 3], [0, 0, 9]])
    for pad_idx in (0, -1):
        check_grad(
            lambda t: F.embedding(Tensor(idx), t, padding_idx=pad_idx),
            lambda t: TF.embedding(torch.tensor(idx), t, padding_idx=pad_idx),
            w,
        )
    check_grad(
        lambda t: F.embedding(Tensor(idx), t, scale_grad_by_freq=True, padding_idx=3),
        lambda t: TF.embedding(torch.tensor(idx), t, scale_grad_by_freq=True, padding_idx=3),
        w,
    )
    for p in (2.0, 1.0):  # max_norm renormalizes the looked-up rows of the weight in place
        wu, wt = Tensor(w * 3), torch.tensor(w * 3)
        check(
            F.embedding(Tensor(idx), wu, max_norm=1.5, norm_type=p),
            TF.embedding(torch.tensor(idx), wt, max_norm=1.5, norm_type=p),
        )
        check(wu, wt)
    # the gradient through renormalized rows, with backward before and after the output (and so the in-place
    # renormalization of the trainable weight) is realized
    g = randn(2, 3, 4)
    wt = torch.tensor(w * 3, requires_grad=True)
    (TF.embedding(torch.tensor(idx), wt, max_norm=1.5) * torch.tensor(g)).sum().backward()
    for realize_first in (False, True):
        wu = Tensor(w * 3, requires_grad=True)
        loss = (F.embedding(Tensor(idx), wu, max_norm=1.5) * Tensor(g)).sum()
        if realize_first:
            loss.realize()
        loss.backward()
        np.testing.assert_allclose(wu.grad.numpy(), wt.grad.numpy(), atol=1e-6)
        check(wu, wt)
    with pytest.raises(RuntimeError, match=r"embedding\(\): expected an integer index tensor .* got dtypes.float32"):
        F.embedding(Tensor(randn(3)), Tensor(w))
    i = labels(5, 4, 3)
    check(F.one_hot(Tensor(i)), TF.one_hot(torch.tensor(i)))
    check(F.one_hot(Tensor(i), 7), TF.one_hot(torch.tensor(i), 7))
    with pytest.raises(RuntimeError, match=r"one_hot\(\): one_hot is only applicable to index tensor"):
        F.one_hot(Tensor(randn(3)))


def test_dropout():
    x = randn(40, 50) + 3.0
    check(F.dropout(Tensor(x), 0.3, training=False), torch.tensor(x))
    check(F.dropout(Tensor(x), 0.0), torch.tensor(x))
    check(F.dropout(Tensor(x), 1.0), TF.dropout(torch.tensor(x), 1.0))
    y = F.dropout(Tensor(x), 0.4).numpy()  # training=True by default, as torch
    kept = y != 0
    assert abs(kept.mean() - 0.6) < 0.05
    np.testing.assert_allclose(y[kept], x[kept] / 0.6, rtol=1e-5)
    xc = randn(8, 30, 5, 4) + 3.0
    for fn, arr in [
        (F.dropout2d, xc),
        (F.dropout1d, xc[:, :, :, 0]),
        (F.dropout3d, xc[..., None]),
        (F.dropout2d, xc[0]),
    ]:
        z = fn(Tensor(arr), 0.5).numpy()
        kept = (z != 0).reshape(z.shape[0] * z.shape[1], -1)  # (N*C, spatial): one draw per channel
        assert (kept.all(1) | ~kept.any(1)).all()
        assert 0.3 < kept.all(1).mean() < 0.7
        np.testing.assert_allclose(z[z != 0], arr[z != 0] * 2, rtol=1e-5)
    z = F.dropout1d(Tensor(randn(30, 5) + 3.0), 0.5).numpy()  # an unbatched (C, L) input: one draw per channel
    assert ((z != 0).all(1) | (z == 0).all(1)).all()
    # gradients flow through the kept entries, scaled
    t = Tensor(x, requires_grad=True)
    out = F.dropout(t, 0.5)
    out.sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), (out.numpy() != 0) * 2.0)
    with pytest.raises(ValueError, match=r"dropout\(\): dropout probability has to be between 0 and 1, but got 1.5"):
        F.dropout(Tensor(x), 1.5)
    with pytest.raises(RuntimeError, match=r"dropout2d\(\): expected a 3-D or 4-D input"):
        F.dropout2d(Tensor(x), 0.5)


# ---------------------------------------------------------------- normalization


def test_batch_norm_training_updates_running_stats():
    for shape in [(4, 3), (4, 3, 5), (2, 3, 4, 5)]:
        x = randn(*shape) * 2 + 1
        rm_u, rv_u = Tensor(np.zeros(3, np.float32)), Tensor(np.ones(3, np.float32))
        rm_t, rv_t = torch.zeros(3), torch.ones(3)
        w, b = randn(3), randn(3)
        check_grad(
            lambda a, c, d: F.batch_norm(a, rm_u, rv_u, c, d, training=True, momentum=0.3),
            lambda a, c, d: TF.batch_norm(a, rm_t, rv_t, c, d, training=True, momentum=0.3),
            x,
            w,
            b,
        )
        check(rm_u, rm_t)
        check(rv_u, rv_t)
        check_grad(lambda a: F.batch_norm(a, rm_u, rv_u), lambda a: TF.batch_norm(a, rm_t, rv_t), x)  # eval mode
    x = randn(4, 3)
    check(F.batch_norm(Tensor(x), None, None, training=True), TF.batch_norm(torch.tensor(x), None, None, training=True))
    with pytest.raises(ValueError, match=r"batch_norm\(\): expected more than 1 value per channel when training"):
        F.batch_norm(Tensor(randn(1, 3)), None, None, training=True)
    with pytest.raises(RuntimeError, match=r"batch_norm\(\): running_mean must have shape \(3,\)"):
        F.batch_norm(Tensor(x), Tensor(randn(4)), Tensor(randn(3)))
    with pytest.raises(RuntimeError, match="running_mean and running_var must be defined in evaluation mode"):
        F.batch_norm(Tensor(x), None, None)


def test_instance_norm():
    x = randn(2, 3, 5, 4)
    w, b = randn(3), randn(3)
    check_grad(
        lambda a, c, d: F.instance_norm(a, weight=c, bias=d),
        lambda a, c, d: TF.instance_norm(a, weight=c, bias=d),
        x,
        w,
        b,
    )
    rm_u, rv_u, rm_t, rv_t = (
        Tensor(np.zeros(3, np.float32)),
        Tensor(np.ones(3, np.float32)),
        torch.zeros(3),
        torch.ones(3),
    )
    check(
        F.instance_norm(Tensor(x), rm_u, rv_u, momentum=0.2),
        TF.instance_norm(torch.tensor(x), rm_t, rv_t, momentum=0.2),
    )
    check(rm_u, rm_t)
    check(rv_u, rv_t)
    check(
        F.instance_norm(Tensor(x), rm_u, rv_u, use_input_stats=False),
        TF.instance_norm(torch.tensor(x), rm_t, rv_t, use_input_stats=False),
    )


def test_layer_group_rms_norm():
    x = randn(2, 6, 5)
    for ns in [(5,), (6, 5), 5]:  # an int is accepted too (torch's functional form wants a list)
        tns = (ns,) if isinstance(ns, int) else ns
        w, b = randn(*tns), randn(*tns)
        check_grad(lambda a, c, d: F.layer_norm(a, ns, c, d), lambda a, c, d: TF.layer_norm(a, tns, c, d), x, w, b)
        check_grad(lambda a, c: F.rms_norm(a, ns, c), lambda a, c: TF.rms_norm(a, tns, c), x, w)
        check_grad(lambda a: F.rms_norm(a, ns, eps=0.1), lambda a: TF.rms_norm(a, tns, eps=0.1), x)
    check_grad(lambda a: F.layer_norm(a.transpose(1, 2), (6,)), lambda a: TF.layer_norm(a.transpose(1, 2), (6,)), x)
    for g in (1, 3):
        check_grad(
            lambda a, c, d: F.group_norm(a, g, c, d), lambda a, c, d: TF.group_norm(a, g, c, d), x, randn(6), randn(6)
        )
    check_grad(lambda a: F.group_norm(a, 2), lambda a: TF.group_norm(a, 2), randn(3, 4))
    with pytest.raises(
        RuntimeError, match=r"layer_norm\(\): given normalized_shape=\[4\], expected input with shape \[\*, 4\]"
    ):
        F.layer_norm(Tensor(x), (4,))
    with pytest.raises(
        RuntimeError, match=r"group_norm\(\): expected an input \(N, C, \*\) with C divisible by num_groups=4"
    ):
        F.group_norm(Tensor(x), 4)


def test_local_response_norm():
    for shape, size in [((2, 6, 5), 3), ((2, 5, 4, 3), 2), ((1, 4, 3, 2, 2), 5)]:
        check_grad(
            lambda t: F.local_response_norm(t, size, 0.1, 0.7, 2.0),
            lambda t: TF.local_response_norm(t, size, 0.1, 0.7, 2.0),
            randn(*shape),
        )


def test_scaled_dot_product_attention():
    q, k, v = randn(2, 3, 5, 4), randn(2, 3, 6, 4), randn(2, 3, 6, 7)
    sdpa_u, sdpa_t = F.scaled_dot_product_attention, TF.scaled_dot_product_attention
    check_grad(sdpa_u, sdpa_t, q, k, v)
    check_grad(
        lambda a, b, c: sdpa_u(a, b, c, is_causal=True, scale=0.3),
        lambda a, b, c: sdpa_t(a, b, c, is_causal=True, scale=0.3),
        q,
        k,
        v,
    )
    bool_mask = rng.random((5, 6)) > 0.3
    bool_mask[:, 0] = True
    check_grad(
        lambda a, b, c: sdpa_u(a, b, c, attn_mask=Tensor(bool_mask)),
        lambda a, b, c: sdpa_t(a, b, c, attn_mask=torch.tensor(bool_mask)),
        q,
        k,
        v,
    )
    fmask = randn(5, 6)
    check_grad(
        lambda a, b, c: sdpa_u(a, b, c, Tensor(fmask)), lambda a, b, c: sdpa_t(a, b, c, torch.tensor(fmask)), q, k, v
    )
    kg, vg = randn(2, 1, 6, 4), randn(2, 1, 6, 7)
    check_grad(
        lambda a, b, c: sdpa_u(a, b, c, enable_gqa=True), lambda a, b, c: sdpa_t(a, b, c, enable_gqa=True), q, kg, vg
    )
    with pytest.raises(RuntimeError, match=r"scaled_dot_product_attention\(\): query \(2, 3, 5, 4\), key"):
        sdpa_u(Tensor(q), Tensor(randn(2, 3, 6, 3)), Tensor(v))


# ---------------------------------------------------------------- losses


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_and_nll(reduction):
    # every option on (N, C); the other layouts ((C,), (N, C, d1, d2), empty) with and without them all at once
    cases = [((6, 5), (6,)), ((5,), ()), ((3, 4, 2, 3), (3, 2, 3)), ((0, 4), (0,))]
    for k, (xs, ts) in enumerate(cases):
        c = xs[1] if len(xs) > 1 else xs[0]
        x, t = randn(*xs) * 2, labels(c, *ts)
        if t.size:
            t.flat[0] = -100  # an ignored target
        w = uniform(0.2, 2.0, c)
        options = [
            {},
            {"weight": w},
            {"label_smoothing": 0.2},
            {"weight": w, "label_smoothing": 0.3},
            {"ignore_index": 1},
        ]
        for kw in options if k == 0 else options[::3]:
            if xs[0] == 0 and reduction == "mean":
                continue  # torch: nan for an empty mean
            kwt = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
            kwu = {k: Tensor(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
            if "ignore_index" in kw and t.size:
                t = t.copy()
                t.flat[0] = kw["ignore_index"]
            check_grad(
                lambda a: F.cross_entropy(a, Tensor(t), reduction=reduction, **kwu),
                lambda a: TF.cross_entropy(a, torch.tensor(t), reduction=reduction, **kwt),
                x,
            )
            if "label_smoothing" not in kw:
                check_grad(
                    lambda a: F.nll_loss(
                        a.log_softmax(-1 if a.ndim == 1 else 1), Tensor(t), reduction=reduction, **kwu
                    ),
                    lambda a: TF.nll_loss(
                        a.log_softmax(-1 if a.ndim == 1 else 1), torch.tensor(t), reduction=reduction, **kwt
                    ),
                    x,
                )
    # class probabilities (soft targets), with weight and smoothing
    x, p = randn(4, 5), TF.softmax(torch.tensor(randn(4, 5)), 1).numpy()
    for kw in [{}, {"label_smoothing": 0.1}, {"weight": uniform(0.5, 1.5, 5)}]:
        kwt = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
        kwu = {k: Tensor(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
        check_grad(
            lambda a, b: F.cross_entropy(a, b, reduction=reduction, **kwu),
            lambda a, b: TF.cross_entropy(a, b, reduction=reduction, **kwt),
            x,
            p,
        )


def test_cross_entropy_legacy_args_and_errors():
    x, t = randn(6, 5), labels(5, 6)
    for sa, rd in [(False, None), (None, False), (True, True)]:
        with pytest.warns(UserWarning):
            want = TF.cross_entropy(torch.tensor(x), torch.tensor(t), size_average=sa, reduce=rd)
        check(F.cross_entropy(Tensor(x), Tensor(t), size_average=sa, reduce=rd), want)
    xt = randn(5, 6)  # a transposed (non-contiguous) input
    check_grad(lambda a: F.cross_entropy(a.T, Tensor(t)), lambda a: TF.cross_entropy(a.T, torch.tensor(t)), xt)
    with pytest.raises(ValueError, match=r"cross_entropy\(\): reduction must be 'mean', 'sum' or 'none', got 'avg'"):
        F.cross_entropy(Tensor(x), Tensor(t), reduction="avg")
    with pytest.raises(ValueError, match=r"cross_entropy\(\): expected target of shape \(6,\) .* got \(5,\)"):
        F.cross_entropy(Tensor(x), Tensor(labels(5, 5)))
    with pytest.raises(
        RuntimeError, match=r"nll_loss\(\): expected an integer \(Long\) class-index target, got dtypes.bool"
    ):
        F.nll_loss(Tensor(x), Tensor(t > 2))
    with pytest.raises(RuntimeError, match=r"cross_entropy\(\): weight must have shape \(5,\) \(one per class\)"):
        F.cross_entropy(Tensor(x), Tensor(t), weight=Tensor(randn(4)))
    with pytest.raises(ValueError, match=r"cross_entropy\(\): expected a probability target of the input's shape"):
        F.cross_entropy(Tensor(x), Tensor(randn(6, 4)))
    with pytest.raises(RuntimeError, match=r"cross_entropy\(\): argument 'input' must be a floating point tensor"):
        F.cross_entropy(Tensor(t), Tensor(t))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_losses(reduction):
    for shape in [(7,), (3, 4), (0,)]:
        if shape == (0,) and reduction == "mean":
            continue
        p, y, w = uniform(0.05, 0.95, *shape), rng.random(shape).astype(np.float32), uniform(0.5, 2, *shape)
        x = randn(*shape) * 3
        check_grad(
            lambda a, b: F.binary_cross_entropy(a, b, reduction=reduction),
            lambda a, b: TF.binary_cross_entropy(a, b, reduction=reduction),
            p,
            y,
        )
        check_grad(  # torch: no gradient for the weight
            lambda a: F.binary_cross_entropy(a, Tensor(y), Tensor(w), reduction=reduction),
            lambda a: TF.binary_cross_entropy(a, torch.tensor(y), torch.tensor(w), reduction=reduction),
            p,
        )
        check_grad(
            lambda a, b: F.binary_cross_entropy_with_logits(a, b, reduction=reduction),
            lambda a, b: TF.binary_cross_entropy_with_logits(a, b, reduction=reduction),
            x,
            y,
        )
        pw = uniform(0.5, 3.0, shape[-1])
        check_grad(  # torch: no gradient for weight and pos_weight
            lambda a: F.binary_cross_entropy_with_logits(
                a, Tensor(y), Tensor(w), reduction=reduction, pos_weight=Tensor(pw)
            ),
            lambda a: TF.binary_cross_entropy_with_logits(
                a, torch.tensor(y), torch.tensor(w), reduction=reduction, pos_weight=torch.tensor(pw)
            ),
            x,
        )
        check_grad(
            lambda a, b: F.multilabel_soft_margin_loss(a, b, reduction=reduction),
            lambda a, b: TF.multilabel_soft_margin_loss(a, b, reduction=reduction),
            x,
            y,
        )
    check(
        F.binary_cross_entropy(Tensor([0.0, 1.0]), Tensor([1.0, 0.0])),
        TF.binary_cross_entropy(torch.tensor([0.0, 1.0]), torch.tensor([1.0, 0.0])),
    )
    with pytest.raises(
        ValueError, match=r"binary_cross_entropy\(\): target size \(3,\) must be the same as the input size \(4,\)"
    ):
        F.binary_cross_entropy(Tensor(uniform(0.1, 0.9, 4)), Tensor(uniform(0.1, 0.9, 3)))
    with pytest.raises(ValueError, match=r"binary_cross_entropy_with_logits\(\): target size"):
        F.binary_cross_entropy_with_logits(Tensor(randn(4)), Tensor(randn(2, 4)))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_regression_losses(reduction):
    for shape in [(3, 4), (1,)]:
        x, y, w = randn(*shape), randn(*shape), uniform(0.5, 2, *shape)
        for name, kw in [
            ("mse_loss", {}),
            ("l1_loss", {}),
            ("smooth_l1_loss", {"beta": 0.5}),
            ("smooth_l1_loss", {"beta": 0.0}),
            ("huber_loss", {"delta": 0.7}),
        ]:
            fu, ft = getattr(F, name), getattr(TF, name)
            check_grad(
                lambda a, b: fu(a, b, reduction=reduction, **kw), lambda a, b: ft(a, b, reduction=reduction, **kw), x, y
            )
            if name != "smooth_l1_loss":
                check_grad(
                    lambda a, c: fu(a, Tensor(y), reduction=reduction, weight=c, **kw),
                    lambda a, c: ft(a, torch.tensor(y), reduction=reduction, weight=c, **kw),
                    x,
                    w,
                )
        check_grad(
            lambda a: F.soft_margin_loss(a, Tensor(np.sign(y)), reduction=reduction),
            lambda a: TF.soft_margin_loss(a, torch.tensor(np.sign(y)), reduction=reduction),
            x,
        )
    x, y = randn(3, 4), randn(4)  # torch broadcasts the target (with a warning)
    with pytest.warns(UserWarning):
        want = TF.mse_loss(torch.tensor(x), torch.tensor(y), reduction=reduction)
    check(F.mse_loss(Tensor(x), Tensor(y), reduction=reduction), want)
    check_grad(lambda a, b: F.l1_loss(a.T, b), lambda a, b: TF.l1_loss(a.T, b), randn(4, 3), randn(3, 4))
    with pytest.raises(RuntimeError, match=r"mse_loss\(\): shapes \(3, 4\) and \(3,\) cannot be broadcast together"):
        F.mse_loss(Tensor(x), Tensor(randn(3)))
    with pytest.raises(ValueError, match=r"l1_loss\(\): weights and input must have the same size"):
        F.l1_loss(Tensor(x), Tensor(x), weight=Tensor(randn(4)))


@pytest.mark.filterwarnings("ignore:reduction. 'mean' divides the total loss")
@pytest.mark.parametrize("reduction", REDUCTIONS + ["batchmean"])
def test_kl_div(reduction):
    x = TF.log_softmax(torch.tensor(randn(4, 5)), 1).numpy()
    p = TF.softmax(torch.tensor(randn(4, 5)), 1).numpy()
    check_grad(
        lambda a, b: F.kl_div(a, b, reduction=reduction), lambda a, b: TF.kl_div(a, b, reduction=reduction), x, p
    )
    p[0, 0] = 0.0  # a zero target contributes 0 (torch's gradient for that target is nan: not compared)
    check_grad(
        lambda a: F.kl_div(a, Tensor(p), reduction=reduction),
        lambda a: TF.kl_div(a, torch.tensor(p), reduction=reduction),
        x,
    )
    lp = np.log(p + 0.01).astype(np.float32)
    check_grad(
        lambda a, b: F.kl_div(a, b, reduction=reduction, log_target=True),
        lambda a, b: TF.kl_div(a, b, reduction=reduction, log_target=True),
        x,
        lp,
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_poisson_gaussian_nll(reduction):
    x, y = randn(3, 4), rng.poisson(2.0, (3, 4)).astype(np.float32)
    for kw in [{}, {"full": True}, {"log_input": False}, {"log_input": False, "full": True}]:
        xin = x if kw.get("log_input", True) else np.abs(x) + 0.1
        check_grad(
            lambda a: F.poisson_nll_loss(a, Tensor(y), reduction=reduction, **kw),
            lambda a: TF.poisson_nll_loss(a, torch.tensor(y), reduction=reduction, **kw),
            xin,
        )
    mu, t = randn(3, 4), randn(3, 4)
    for vshape in [(3, 4), (3,), (3, 1), (1, 4)]:
        var = uniform(0.1, 2.0, *vshape)
        var.flat[0] = 1e-9  # clamped at eps for the value; the gradient passes unclamped
        for full in (False, True):
            check_grad(
                lambda a, b, c: F.gaussian_nll_loss(a, b, c, full, reduction=reduction),
                lambda a, b, c: TF.gaussian_nll_loss(a, b, c, full, reduction=reduction),
                mu,
                t,
                var,
                rtol=2e-3,
            )
    check(F.gaussian_nll_loss(Tensor(mu), Tensor(t), 0.5), TF.gaussian_nll_loss(torch.tensor(mu), torch.tensor(t), 0.5))
    with pytest.raises(ValueError, match=r"gaussian_nll_loss\(\): var has negative entry/entries"):
        F.gaussian_nll_loss(Tensor(mu), Tensor(t), Tensor(-np.ones((3, 4), np.float32)))
    with pytest.raises(ValueError, match=r"gaussian_nll_loss\(\): var is of incorrect size \(2, 4\)"):
        F.gaussian_nll_loss(Tensor(mu), Tensor(t), Tensor(np.ones((2, 4), np.float32)))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_margin_losses(reduction):
    a, b = randn(6), randn(6)
    y = np.where(rng.random(6) > 0.5, 1.0, -1.0).astype(np.float32)
    for m in (0.0, 0.5):
        check_grad(
            lambda p, q: F.margin_ranking_loss(p, q, Tensor(y), m, reduction=reduction),
            lambda p, q: TF.margin_ranking_loss(p, q, torch.tensor(y), m, reduction=reduction),
            a,
            b,
        )
        check_grad(
            lambda p: F.hinge_embedding_loss(p, Tensor(y), m + 0.5, reduction=reduction),
            lambda p: TF.hinge_embedding_loss(p, torch.tensor(y), m + 0.5, reduction=reduction),
            a,
        )
    x1, x2 = randn(6, 4), randn(6, 4)
    for m in (0.0, -0.3):
        check_grad(
            lambda p, q: F.cosine_embedding_loss(p, q, Tensor(y), m, reduction=reduction),
            lambda p, q: TF.cosine_embedding_loss(p, q, torch.tensor(y), m, reduction=reduction),
            x1,
            x2,
        )
    anc, pos, neg = randn(6, 4), randn(6, 4), randn(6, 4)
    for kw in [{}, {"margin": 2.0, "p": 1.0}, {"swap": True}]:
        check_grad(
            lambda p, q, r: F.triplet_margin_loss(p, q, r, reduction=reduction, **kw),
            lambda p, q, r: TF.triplet_margin_loss(p, q, r, reduction=reduction, **kw),
            anc,
            pos,
            neg,
        )
    check_grad(F.triplet_margin_loss, TF.triplet_margin_loss, randn(4), randn(4), randn(4))
    x, t, w = randn(5, 4), labels(4, 5), uniform(0.5, 2.0, 4)
    for kw in [{}, {"p": 2}, {"margin": 0.4, "weight": w}]:
        kwt = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
        kwu = {k: Tensor(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
        check_grad(
            lambda p: F.multi_margin_loss(p, Tensor(t), reduction=reduction, **kwu),
            lambda p: TF.multi_margin_loss(p, torch.tensor(t), reduction=reduction, **kwt),
            x,
        )
    check_grad(
        lambda p: F.multi_margin_loss(p, Tensor(np.array(2))),
        lambda p: TF.multi_margin_loss(p, torch.tensor(2)),
        randn(4),
    )


def test_margin_loss_errors():
    with pytest.raises(
        RuntimeError, match=r"margin_ranking_loss\(\): all input tensors should have the same dimension"
    ):
        F.margin_ranking_loss(Tensor(randn(3)), Tensor(randn(3)), Tensor(randn(1, 3)))
    with pytest.raises(ValueError, match=r"multi_margin_loss\(\): only p == 1 and p == 2 supported, got 3"):
        F.multi_margin_loss(Tensor(randn(3, 4)), Tensor(labels(4, 3)), p=3)
    with pytest.raises(RuntimeError, match=r"cosine_embedding_loss\(\): expected input1 and input2 of one shape"):
        F.cosine_embedding_loss(Tensor(randn(3, 4)), Tensor(randn(3, 5)), Tensor(np.ones(3, np.float32)))
    with pytest.raises(ValueError, match=r"triplet_margin_loss\(\): margin must be greater than 0, got 0"):
        F.triplet_margin_loss(Tensor(randn(3, 4)), Tensor(randn(3, 4)), Tensor(randn(3, 4)), margin=0)
    with pytest.raises(ValueError, match=r"kl_div\(\): reduction must be 'mean', 'sum' or 'none', got 'max'"):
        F.kl_div(Tensor(randn(3)), Tensor(randn(3)), reduction="max")
