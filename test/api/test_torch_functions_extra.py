"""torch's top-level creation and random functions (normal, randint_like, logspace, range, asarray, vander,
combinations, unravel_index, ...), window functions and the top-level spellings of nn.functional (conv1d, layer_norm,
embedding, batch_norm, the losses with int reductions, ...), against torch: values, shapes and dtypes on random, empty
and size-1 inputs, gradients where they flow, statistics of the random ones, and errors naming the function."""

import warnings

import numpy as np
import pytest
import torch

import unigrad as u
from test.api.test_torch_compositions import check_grads
from unigrad import Tensor

rng = np.random.default_rng(0)


def f32(*shape: int) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


def check(ours, ref, atol: float = 1e-5, rtol: float = 1e-4) -> None:
    """Same shape, dtype name and values (tuples pairwise)."""
    if isinstance(ref, (tuple, list)):
        assert isinstance(ours, tuple) and len(ours) == len(ref)
        for a, b in zip(ours, ref):
            check(a, b, atol, rtol)
        return
    assert ours.shape == tuple(ref.shape), (ours.shape, tuple(ref.shape))
    assert ours.dtype.name == str(ref.dtype).removeprefix("torch."), (ours.dtype, ref.dtype)
    np.testing.assert_allclose(ours.numpy(), ref.detach().numpy(), atol=atol, rtol=rtol, equal_nan=True)


def torch_range(*args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.range(*args, **kw)


# ---------------------------------------------------------------- normal


@pytest.mark.parametrize("size", [(), (0,), (1,), (200, 300)])
def test_normal_float_float(size):
    out = u.normal(2.0, 3.0, size)
    assert out.shape == size and out.dtype == u.float32
    if out.numel() > 1000:
        v = out.numpy()
        assert abs(v.mean() - 2.0) < 0.05 and abs(v.std() - 3.0) < 0.05


def test_normal_tensor_forms():
    mean = Tensor(np.full((400, 1), 5.0, np.float32))
    std = Tensor(np.full((300,), 0.5, np.float32))
    out = u.normal(mean, std)
    assert out.shape == tuple(torch.normal(torch.zeros(400, 1), torch.ones(300)).shape) == (400, 300)
    v = out.numpy()
    assert abs(v.mean() - 5.0) < 0.02 and abs(v.std() - 0.5) < 0.02
    v = u.normal(Tensor(np.full((100000,), -1.0, np.float64))).numpy()
    assert v.dtype == np.float64 and abs(v.mean() + 1) < 0.02 and abs(v.std() - 1) < 0.02
    v = u.normal(3.0, Tensor(np.full((100000,), 2.0, np.float32))).numpy()
    assert v.shape == (100000,) and abs(v.mean() - 3) < 0.05 and abs(v.std() - 2) < 0.05
    assert u.normal(u.zeros(0, 3), 1.0).shape == (0, 3)
    assert u.normal(u.zeros(()), u.ones(())).shape == ()
    assert u.normal(0.0, 1.0, size=(2, 3), dtype=u.float64).dtype == u.float64


def test_normal_gradients_flow():
    mean, std = Tensor(np.zeros(5, np.float32), requires_grad=True), Tensor(np.ones(5, np.float32), requires_grad=True)
    out = u.normal(mean, std)
    out.sum().backward()
    np.testing.assert_allclose(mean.grad.numpy(), np.ones(5))
    np.testing.assert_allclose(std.grad.numpy(), out.numpy(), rtol=1e-5)  # d(mean + std * eps)/dstd = eps


def test_normal_errors():
    with pytest.raises(RuntimeError, match="normal expects std >= 0.0"):
        u.normal(0.0, -1.0, (2,))
    with pytest.raises(TypeError, match="normal"):
        u.normal(0.0, 1.0)
    with pytest.raises(TypeError, match="normal"):
        u.normal(u.zeros(2), 1.0, (2,))
    with pytest.raises(RuntimeError, match="normal"):
        u.normal(u.zeros(2, dtype=u.int64))
    with pytest.raises(RuntimeError, match="normal"):
        u.normal(u.zeros(2), u.ones(3))
    with pytest.raises(TypeError, match="generator: expected a unigrad.Generator"):
        u.normal(0.0, 1.0, (2,), generator=object())


# ---------------------------------------------------------------- randint_like, logspace, range, scalar_tensor


@pytest.mark.parametrize("shape", [(), (0,), (1,), (300, 200)])
@pytest.mark.parametrize("dtype", ["float32", "int32", "int64"])
def test_randint_like(shape, dtype):
    x = u.zeros(shape, dtype=getattr(u, dtype))
    for args, lo, hi in (((7,), 0, 7), ((-3, 4), -3, 4)):
        out = u.randint_like(x, *args)
        ref = torch.randint_like(torch.zeros(shape, dtype=getattr(torch, dtype)), *args)
        assert out.shape == tuple(ref.shape) and out.dtype.name == str(ref.dtype).removeprefix("torch.")
        v = out.numpy()
        assert np.all((v >= lo) & (v < hi)) and np.all(v == np.floor(v))
        if v.size > 1000:
            assert set(np.unique(v).tolist()) == set(range(lo, hi))
            assert abs(v.mean() - (lo + hi - 1) / 2) < 0.05
    assert u.randint_like(x, high=3).shape == shape
    assert u.randint_like(x, 3, dtype=u.int16).dtype == u.int16


def test_randint_like_errors():
    with pytest.raises(TypeError, match="randint_like"):
        u.randint_like(u.zeros(2))
    with pytest.raises(RuntimeError, match="randint_like"):
        u.randint_like(u.zeros(2), 5, 5)
    with pytest.raises(TypeError, match="randint_like"):
        u.randint_like([1, 2], 5)


@pytest.mark.parametrize(
    "args,kw",
    [
        ((0, 3, 4), {}),
        ((-2, 2, 7), {}),
        ((0, 1, 1), {}),
        ((0, 1, 0), {}),
        ((1, 5, 5), {"base": 2.0}),
        ((0.5, -1.5, 6), {"base": 3.0}),
        ((0, 3, 4), {"dtype": "float64"}),
        ((0, 3, 4), {"dtype": "int64"}),
        ((0, 1, 3), {"dtype": "int64"}),
        ((0, 10, 11), {"base": 2, "dtype": "int32"}),
    ],
)
def test_logspace(args, kw):
    uk = {k: getattr(u, v) if k == "dtype" else v for k, v in kw.items()}
    tk = {k: getattr(torch, v) if k == "dtype" else v for k, v in kw.items()}
    check(u.logspace(*args, **uk), torch.logspace(*args, **tk))


def test_logspace_errors():
    with pytest.raises(RuntimeError, match="logspace"):
        u.logspace(0, 1, -1)


@pytest.mark.parametrize(
    "args,kw",
    [
        ((0, 5), {}),
        ((0, 1, 0.3), {}),
        ((1, 4, 0.5), {}),
        ((5, 0, -1), {}),
        ((2, 2), {}),
        ((-1.5, 2.5, 0.25), {}),
        ((0, 10, 3), {"dtype": "int64"}),
        ((0, 1, 0.1), {"dtype": "float64"}),
    ],
)
def test_range(args, kw):
    uk = {k: getattr(u, v) for k, v in kw.items()}
    tk = {k: getattr(torch, v) for k, v in kw.items()}
    check(u.range(*args, **uk), torch_range(*args, **tk), atol=1e-6)


def test_range_errors():
    with pytest.raises(RuntimeError, match="range"):
        u.range(0, 5, -1)
    with pytest.raises(RuntimeError, match="range"):
        u.range(0, 5, 0)


@pytest.mark.parametrize("s", [3, 2.5, True, -7])
def test_scalar_tensor(s):
    check(u.scalar_tensor(s), torch.scalar_tensor(s))
    check(u.scalar_tensor(s, dtype=u.int64), torch.scalar_tensor(s, dtype=torch.int64))
    with pytest.raises(TypeError, match="scalar_tensor"):
        u.scalar_tensor([1])


# ---------------------------------------------------------------- asarray, fill


@pytest.mark.parametrize(
    "obj",
    [[1, 2, 3], [1.0, 2.5], 3, 2.5, [[True, False]], np.arange(6, dtype=np.int32).reshape(2, 3), np.float64(1.5), []],
)
def test_asarray_values(obj):
    check(u.asarray(obj), torch.asarray(obj))
    check(u.asarray(obj, dtype=u.float64), torch.asarray(obj, dtype=torch.float64))


def test_asarray_tensor_identity_and_copy():
    x = Tensor(f32(3), requires_grad=True)
    assert u.asarray(x) is x
    c = u.asarray(x, copy=True)
    assert c is not x and c.requires_grad
    c.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.ones(3))
    d = u.asarray(x, dtype=u.float64)
    assert d.dtype == u.float64 and d.requires_grad
    assert not u.asarray(x, requires_grad=False).requires_grad
    assert u.asarray([1.0, 2.0], requires_grad=True).requires_grad
    with pytest.raises(ValueError, match="asarray"):
        u.asarray(x, dtype=u.float64, copy=False)
    with pytest.raises(ValueError, match="asarray"):
        u.asarray([1, 2], copy=False)


@pytest.mark.parametrize("shape", [(), (0,), (1,), (2, 3)])
@pytest.mark.parametrize("dtype", ["float32", "int64", "bool"])
def test_fill(shape, dtype):
    x = np.zeros(shape, dtype=dtype)
    for value in (2.7, -3, True):
        check(u.fill(Tensor(x), value), torch.fill(torch.tensor(x), value))
    check(u.fill(Tensor(x), Tensor(np.float32(1.5))), torch.fill(torch.tensor(x), torch.tensor(1.5)))


def test_fill_value_gradient_and_errors():
    v = Tensor(np.float32(2.0), requires_grad=True)
    u.fill(u.zeros(2, 3), v).sum().backward()
    assert v.grad.item() == 6.0
    with pytest.raises(RuntimeError, match="fill"):
        u.fill(u.zeros(2), u.ones(2))
    with pytest.raises(TypeError, match="fill"):
        u.fill(np.zeros(2), 1)


# ---------------------------------------------------------------- vander, combinations, unravel_index, rsub


@pytest.mark.parametrize("n", [0, 1, 4])
@pytest.mark.parametrize("N", [None, 0, 1, 5])
@pytest.mark.parametrize("increasing", [False, True])
def test_vander(n, N, increasing):
    for x in (f32(n), rng.integers(-3, 4, n).astype(np.int32), rng.integers(-3, 4, n), rng.random(n) > 0.5):
        check(u.vander(Tensor(x), N, increasing), torch.vander(torch.tensor(x), N, increasing))


def torch_powers(t, n, increasing):
    """vander's reference for gradients: torch.vander's own backward fails (an in-place cumprod) in torch 2.x."""
    out = torch.stack([t**k for k in range(n)], 1)
    return out if increasing else out.flip(1)


def test_vander_grad():
    x = f32(4)
    x[1] = 0.0
    check_grads(lambda t: u.vander(t, 4), lambda t: torch_powers(t, 4, False), x)
    check_grads(lambda t: u.vander(t, increasing=True), lambda t: torch_powers(t, 4, True), x)


def test_vander_errors():
    with pytest.raises(RuntimeError, match="vander"):
        u.vander(u.zeros(2, 2))
    with pytest.raises(RuntimeError, match="vander"):
        u.vander(u.zeros(2), -1)


@pytest.mark.parametrize("n", [0, 1, 2, 5])
@pytest.mark.parametrize("r", [0, 1, 2, 3])
@pytest.mark.parametrize("with_replacement", [False, True])
def test_combinations(n, r, with_replacement):
    for x in (f32(n), rng.integers(-9, 9, n)):
        check(u.combinations(Tensor(x), r, with_replacement), torch.combinations(torch.tensor(x), r, with_replacement))


def test_combinations_grad_and_errors():
    check_grads(lambda t: u.combinations(t, 2), lambda t: torch.combinations(t, 2), f32(4))
    with pytest.raises(RuntimeError, match="combinations"):
        u.combinations(u.zeros(2, 2))
    with pytest.raises(RuntimeError, match="combinations"):
        u.combinations(u.zeros(2), -1)


@pytest.mark.parametrize(
    "shape,idx_shape", [((3, 2), (6,)), ((10, 10, 10, 10), (2, 3)), ((7,), (4,)), ((2, 3, 4), ()), ((5, 1), (0,))]
)
@pytest.mark.parametrize("dtype", [np.int64, np.int32])
def test_unravel_index(shape, idx_shape, dtype):
    idx = rng.integers(0, int(np.prod(shape)), idx_shape).astype(dtype)
    check(u.unravel_index(Tensor(idx), shape), torch.unravel_index(torch.tensor(idx), shape))
    check(u.unravel_index(Tensor(np.int64(4)), 7), torch.unravel_index(torch.tensor(4), 7))


def test_unravel_index_errors():
    with pytest.raises(TypeError, match="unravel_index"):
        u.unravel_index(u.zeros(2), (3,))
    with pytest.raises(TypeError, match="unravel_index"):
        u.unravel_index(u.tensor([1]), (3, 2.0))
    with pytest.raises(ValueError, match="unravel_index"):
        u.unravel_index(u.tensor([1]), (3, -1))


@pytest.mark.parametrize("shape", [(), (0,), (1,), (3, 4)])
def test_rsub(shape):
    a, b = f32(*shape), f32(*shape)
    check(u.rsub(Tensor(a), Tensor(b)), torch.rsub(torch.tensor(a), torch.tensor(b)))
    check(u.rsub(Tensor(a), Tensor(b), alpha=2.5), torch.rsub(torch.tensor(a), torch.tensor(b), alpha=2.5))
    check(u.rsub(Tensor(a), 3.0), torch.rsub(torch.tensor(a), 3.0))
    ints = rng.integers(-5, 5, shape)
    check(u.rsub(Tensor(ints), 2), torch.rsub(torch.tensor(ints), 2))
    check(u.rsub(Tensor(ints), 2.5), torch.rsub(torch.tensor(ints), 2.5))
    check_grads(lambda x, y: u.rsub(x, y, alpha=2), lambda x, y: torch.rsub(x, y, alpha=2), f32(3), f32(3))


# ---------------------------------------------------------------- windows


WINDOWS = ["hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window"]


@pytest.mark.parametrize("name", WINDOWS)
@pytest.mark.parametrize("length", [0, 1, 2, 7, 16])
@pytest.mark.parametrize("periodic", [True, False])
def test_windows(name, length, periodic):
    ours, ref = getattr(u, name), getattr(torch, name)
    check(ours(length), ref(length), atol=2e-6)
    check(ours(length, periodic), ref(length, periodic), atol=2e-6)
    check(ours(length, periodic, dtype=u.float64), ref(length, periodic, dtype=torch.float64), atol=2e-6)


@pytest.mark.parametrize("length", [1, 7, 16])
def test_window_parameters(length):
    check(u.hamming_window(length, False, 0.6, 0.3), torch.hamming_window(length, False, 0.6, 0.3))
    for beta in (0.0, 5.0, 12.0, 20.0):
        check(u.kaiser_window(length, False, beta), torch.kaiser_window(length, False, beta), atol=2e-6)
        check(u.kaiser_window(length, True, beta=beta), torch.kaiser_window(length, True, beta=beta), atol=2e-6)


@pytest.mark.parametrize("name", WINDOWS)
def test_window_errors(name):
    with pytest.raises(RuntimeError, match=name):
        getattr(u, name)(-1)
    with pytest.raises(RuntimeError, match=name):
        getattr(u, name)(4, dtype=u.int64)


# ---------------------------------------------------------------- nn.functional under torch's top-level names


ALIASES = """conv1d conv2d conv3d conv_transpose1d conv_transpose2d conv_transpose3d avg_pool1d pixel_shuffle
pixel_unshuffle channel_shuffle bilinear prelu hardshrink rms_norm max_pool1d max_pool2d max_pool3d selu celu threshold
alpha_dropout feature_alpha_dropout cosine_embedding_loss hinge_embedding_loss margin_ranking_loss triplet_margin_loss
poisson_nll_loss kl_div binary_cross_entropy_with_logits layer_norm group_norm instance_norm batch_norm embedding
""".split()


def test_aliases_exported():
    for name in ALIASES:
        assert callable(getattr(u, name)) and name in u.__all__, name


def run_both(name, arrays, *args, **kw):
    """u.<name> and torch.<name> on the same arrays (then args), compared."""
    ours = getattr(u, name)(*(Tensor(a) for a in arrays), *args, **kw)
    ref = getattr(torch, name)(*(torch.tensor(a) for a in arrays), *args, **kw)
    check(ours, ref, atol=1e-4)


@pytest.mark.parametrize("batch", [1, 2])
def test_conv_aliases(batch):
    run_both("conv1d", [f32(batch, 4, 9), f32(6, 2, 3), f32(6)], 2, 1, 1, 2)
    run_both("conv2d", [f32(batch, 3, 7, 6), f32(4, 3, 3, 2)], None, 1, "same")
    run_both("conv3d", [f32(batch, 2, 5, 4, 4), f32(3, 2, 2, 2, 2), f32(3)], (1, 2, 1), 1)
    run_both("conv_transpose1d", [f32(batch, 4, 5), f32(4, 3, 3), f32(3)], 2, 1, 1)
    run_both("conv_transpose2d", [f32(batch, 4, 3, 3), f32(4, 2, 2, 2)], None, 2, 0, 0, 2)
    run_both("conv_transpose3d", [f32(batch, 2, 3, 3, 2), f32(2, 3, 2, 2, 2)])
    check_grads(
        lambda x, w: u.conv1d(x, w, padding=1), lambda x, w: torch.conv1d(x, w, padding=1), f32(2, 3, 6), f32(4, 3, 3)
    )


def test_pool_and_shape_aliases():
    run_both("max_pool1d", [f32(2, 3, 9)], 3)
    run_both("max_pool1d", [f32(2, 3, 9)], 3, 2, 1, 1, True)
    run_both("max_pool2d", [f32(2, 3, 7, 6)], 2, [])
    run_both("max_pool2d", [f32(1, 3, 7, 6)], (3, 2), (2, 1), 1)
    run_both("max_pool3d", [f32(1, 2, 4, 5, 6)], 2)
    run_both("avg_pool1d", [f32(2, 3, 9)], 3, 2, 1, False, False)
    run_both("avg_pool1d", [f32(2, 3, 9)], 2)
    run_both("pixel_shuffle", [f32(2, 8, 3, 3)], 2)
    run_both("pixel_unshuffle", [f32(2, 2, 4, 6)], 2)
    run_both("channel_shuffle", [f32(2, 6, 3, 3)], 3)


@pytest.mark.parametrize("shape", [(0,), (1,), (2, 5), (2, 3, 4)])
def test_activation_aliases(shape):
    x = f32(*shape)
    run_both("selu", [x])
    run_both("celu", [x])
    run_both("celu", [x], 0.5)
    run_both("threshold", [x], 0.1, -2.0)
    run_both("hardshrink", [x])
    run_both("hardshrink", [x], 0.3)
    check(Tensor(x).hardshrink(0.3), torch.tensor(x).hardshrink(0.3))
    w = np.array([0.25], np.float32)
    run_both("prelu", [x, w])
    check(Tensor(x).prelu(Tensor(w)), torch.tensor(x).prelu(torch.tensor(w)))
    if len(shape) >= 2:
        wc = f32(shape[1])
        run_both("prelu", [x, wc])
        check(Tensor(x).prelu(Tensor(wc)), torch.tensor(x).prelu(torch.tensor(wc)))
    check_grads(lambda t: u.celu(t, 0.7), lambda t: torch.celu(t, 0.7), f32(3, 4))


def test_dropout_aliases():
    x = f32(4, 5)
    for name in ("alpha_dropout", "feature_alpha_dropout"):
        run_both(name, [x], 0.5, False)  # not training: the identity
        out = getattr(u, name)(Tensor(np.ones((200, 300), np.float32)), 0.3, True)
        assert out.shape == (200, 300)
    v = u.alpha_dropout(Tensor(rng.standard_normal((400, 500)).astype(np.float32)), 0.2, True).numpy()
    assert abs(v.mean()) < 0.02 and abs(v.std() - 1) < 0.02  # alpha dropout keeps mean 0, std 1


def test_bilinear_alias():
    run_both("bilinear", [f32(3, 4), f32(3, 5), f32(2, 4, 5), f32(2)])
    run_both("bilinear", [f32(0, 4), f32(0, 5), f32(2, 4, 5)])


@pytest.mark.parametrize("reduction", [0, 1, 2, None])
def test_loss_aliases(reduction):
    kw = {} if reduction is None else {"reduction": reduction}
    a, b, c = f32(4, 5), f32(4, 5), f32(4, 5)
    sign = np.where(rng.random(4) > 0.5, 1.0, -1.0).astype(np.float32)
    sign45 = np.where(rng.random((4, 5)) > 0.5, 1.0, -1.0).astype(np.float32)
    run_both("cosine_embedding_loss", [a, b, sign], 0.1, **kw)
    run_both("hinge_embedding_loss", [a, sign45], 0.5, **kw)
    run_both("margin_ranking_loss", [a[0], b[0], sign45[0]], 0.2, **kw)
    run_both("triplet_margin_loss", [a, b, c], 1.0, 2.0, 1e-6, True, **kw)
    target = rng.random((4, 5)).astype(np.float32)
    run_both("kl_div", [a, target], **kw)
    run_both("kl_div", [a, b], log_target=True, **kw)
    run_both("binary_cross_entropy_with_logits", [a, target], **kw)
    run_both("binary_cross_entropy_with_logits", [a, target, f32(5), np.abs(f32(5))], **kw)
    if reduction is not None:
        run_both("poisson_nll_loss", [a, np.abs(b)], True, False, 1e-8, reduction)
        run_both("poisson_nll_loss", [np.abs(a), np.abs(b) * 3], False, True, 1e-8, reduction)


def test_loss_reduction_errors():
    with pytest.raises(ValueError, match="kl_div"):
        u.kl_div(u.zeros(2), u.zeros(2), 3)
    with pytest.raises(ValueError, match="hinge_embedding_loss"):
        u.hinge_embedding_loss(u.zeros(2), u.ones(2), 1.0, "batchmean")


def test_loss_grad():
    t = rng.random((3, 4)).astype(np.float32)
    check_grads(
        lambda x: u.binary_cross_entropy_with_logits(x, Tensor(t), reduction=1),
        lambda x: torch.binary_cross_entropy_with_logits(x, torch.tensor(t), reduction=1),
        f32(3, 4),
    )


def both(name, *args, **kw):
    """u.<name> and torch.<name> on the same arguments (numpy arrays become tensors), compared."""
    ours = getattr(u, name)(*(Tensor(a) if isinstance(a, np.ndarray) else a for a in args), **kw)
    ref = getattr(torch, name)(*(torch.tensor(a) if isinstance(a, np.ndarray) else a for a in args), **kw)
    check(ours, ref, atol=1e-4)


@pytest.mark.parametrize("shape", [(1, 4), (3, 4), (2, 3, 4), (0, 4)])
def test_norm_aliases(shape):
    x, w, b = f32(*shape), f32(shape[-1]), f32(shape[-1])
    both("layer_norm", x, [shape[-1]])
    both("layer_norm", x, (shape[-1],), w, b, 1e-3, False)
    both("layer_norm", x, shape[-2:], None, None)
    both("rms_norm", x, [shape[-1]], w)
    both("rms_norm", x, [shape[-1]], None, 1e-3)
    if shape[0]:
        check_grads(
            lambda t, v: u.layer_norm(t, [shape[-1]], v), lambda t, v: torch.layer_norm(t, [shape[-1]], v), x, w
        )


def test_group_instance_batch_norm_aliases():
    x = f32(3, 4, 5)
    w, b = f32(4), f32(4)
    mean, var = f32(4), np.abs(f32(4)) + 0.5
    both("group_norm", x, 2)
    both("group_norm", x, 4, w, b, 1e-3, True)
    both("instance_norm", x, w, b, None, None, True, 0.1, 1e-5, False)
    both("instance_norm", x, None, None, None, None, True, 0.1, 1e-3, False)
    both("batch_norm", x, w, b, None, None, True, 0.1, 1e-5, False)
    both("batch_norm", x, w, b, mean, var, False, 0.1, 1e-5, False)
    # training with running stats: they are updated in place, as torch
    um, uv, tm, tv = Tensor(mean.copy()), Tensor(var.copy()), torch.tensor(mean), torch.tensor(var)
    ours = u.batch_norm(Tensor(x), None, None, um, uv, True, 0.2, 1e-5, False)
    check(ours, torch.batch_norm(torch.tensor(x), None, None, tm, tv, True, 0.2, 1e-5, False))
    np.testing.assert_allclose(um.numpy(), tm.numpy(), atol=1e-5)
    np.testing.assert_allclose(uv.numpy(), tv.numpy(), atol=1e-5)
    check_grads(lambda t, v: u.group_norm(t, 2, v), lambda t, v: torch.group_norm(t, 2, v), x, w)


def test_embedding_alias():
    w = f32(6, 3)
    idx = rng.integers(0, 6, (2, 4))
    check(u.embedding(Tensor(w), Tensor(idx)), torch.embedding(torch.tensor(w), torch.tensor(idx)))
    check(u.embedding(Tensor(w), Tensor(idx[0, :0])), torch.embedding(torch.tensor(w), torch.tensor(idx[0, :0])))
    # padding_idx: that row gets no gradient
    uw, tw = Tensor(w, requires_grad=True), torch.tensor(w, requires_grad=True)
    idx[0, 0] = 2
    u.embedding(uw, Tensor(idx), 2).sum().backward()
    torch.embedding(tw, torch.tensor(idx), 2).sum().backward()
    np.testing.assert_allclose(uw.grad.numpy(), tw.grad.numpy())
