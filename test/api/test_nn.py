"""NN functional ops against torch.nn.functional: forward values, shapes, dtypes, and gradients."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from unigrad import Tensor
from unigrad.runtime import realize as rt

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


@pytest.mark.parametrize(
    "shape,axis", [((5,), 0), ((3, 7), -1), ((3, 7), 0), ((2, 1, 4), 1), ((0, 3), 1), ((3, 0), -1), ((0,), 0), ((), 0)]
)
def test_softmax_log_softmax(rng, shape, axis):
    x = randn(rng, *shape) * 5
    close(Tensor(x).softmax(axis), F.softmax(torch.tensor(x), axis))
    close(Tensor(x).log_softmax(axis), F.log_softmax(torch.tensor(x), axis))


@pytest.mark.parametrize("fn", ["softmax", "log_softmax", "logsumexp"])
@pytest.mark.parametrize("shape", [(4, 6), (1, 1), (3, 1), (2, 9)])
def test_softmax_family_backward_has_no_gradient_through_its_max(rng, fn, shape):
    """The max that keeps exp() in range shifts every element alike, so its gradient cancels: the backward is
    the softmax's alone (torch's), not a mask of the max's positions and a count of them (3 kernels more)."""
    from unigrad.runtime import realize as rt

    xn, gn = randn(rng, *shape) * 3, randn(rng, *shape[:-1], 1 if fn == "logsumexp" else shape[-1])
    xn[..., 0] = xn.max(-1)  # a tie at the max in every row
    x, xt = Tensor(xn, requires_grad=True), torch.tensor(xn, requires_grad=True)
    y = x.logsumexp(-1, keepdim=True) if fn == "logsumexp" else getattr(x, fn)(-1)
    yt = torch.logsumexp(xt, -1, keepdim=True) if fn == "logsumexp" else getattr(F, fn)(xt, -1)
    (y * Tensor(gn)).sum().backward()
    (yt * torch.tensor(gn)).sum().backward()
    k0 = rt.stats.kernels
    close(x.grad, xt.grad)
    assert rt.stats.kernels - k0 <= (3 if fn == "logsumexp" else 4)


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
def test_softmax_over_an_empty_axis_is_empty_and_a_bad_axis_is_refused(rng, fn):
    """As PyTorch: no element to normalize gives the empty tensor (and an empty gradient), not a max error."""
    xn = randn(rng, 4, 0)
    x, xt = Tensor(xn, requires_grad=True), torch.tensor(xn, requires_grad=True)
    close(getattr(x, fn)(-1), getattr(F, fn)(xt, -1))
    getattr(x, fn)(-1).sum().backward()
    assert x.grad is not None and x.grad.shape == (4, 0)
    with pytest.raises(IndexError, match=f"{fn}: dimension out of range .* but got 2"):
        getattr(x, fn)(2)


def test_softmax_of_a_permuted_view(rng):
    x = randn(rng, 4, 6)
    close(Tensor(x).T.softmax(-1), F.softmax(torch.tensor(x).T, -1))


@pytest.mark.parametrize("shape", [(3, 5), (2, 3, 5), (1, 5)])
def test_linear_layernorm_batchnorm(rng, shape):
    x, w, b = randn(rng, *shape), randn(rng, 5, 4), randn(rng, 4)
    close(Tensor(x).linear(Tensor(w), Tensor(b)), F.linear(torch.tensor(x), torch.tensor(w).T, torch.tensor(b)))
    close(Tensor(x).layernorm(), F.layer_norm(torch.tensor(x), (5,)), atol=1e-5)
    xb = randn(rng, 4, 3, 2)
    mean, var, g, bb = randn(rng, 3), np.abs(randn(rng, 3)) + 0.5, randn(rng, 3), randn(rng, 3)
    want = F.batch_norm(torch.tensor(xb), torch.tensor(mean), torch.tensor(var), torch.tensor(g), torch.tensor(bb))
    got = Tensor(xb).batchnorm(Tensor(g), Tensor(bb), Tensor(mean), (Tensor(var) + 1e-5).sqrt().reciprocal())
    close(got, want)


def test_one_hot():
    y = np.array([0, 3, 1, 1])
    close(Tensor(y).one_hot(5), F.one_hot(torch.tensor(y), 5))
    close(Tensor(y).one_hot(), F.one_hot(torch.tensor(y)))
    with pytest.raises(RuntimeError, match="one_hot"):
        Tensor([0.5]).one_hot(2)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_cross_entropy(rng, reduction, smoothing):
    x, y = randn(rng, 6, 5), rng.integers(0, 5, 6)
    want = F.cross_entropy(torch.tensor(x), torch.tensor(y), reduction=reduction, label_smoothing=smoothing)
    close(Tensor(x).cross_entropy(Tensor(y), reduction=reduction, label_smoothing=smoothing), want)
    p = F.softmax(torch.tensor(randn(rng, 6, 5)), 1).numpy()
    want = F.cross_entropy(torch.tensor(x), torch.tensor(p), reduction=reduction)
    close(Tensor(x).cross_entropy(Tensor(p), reduction=reduction), want)


def test_cross_entropy_spatial(rng):
    x, y = randn(rng, 2, 4, 3, 3), rng.integers(0, 4, (2, 3, 3))
    close(Tensor(x).cross_entropy(Tensor(y)), F.cross_entropy(torch.tensor(x), torch.tensor(y)))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("smoothing", [0.0, 0.2])
@pytest.mark.parametrize("shape", [(5,), (1, 5), (7, 5), (3, 4, 2, 3), (0, 5)], ids=str)
def test_cross_entropy_weight_and_ignore_index_forward_backward(rng, reduction, smoothing, shape):
    # the Tensor method takes torch's weight and ignore_index (F.cross_entropy delegates to it)
    c = shape[1] if len(shape) > 1 else shape[0]
    x = randn(rng, *shape)
    y = rng.integers(0, c, shape[:1] + shape[2:] if len(shape) > 1 else ())
    y = np.where(rng.random(y.shape) < 0.3, -100, y) if y.ndim else y  # some targets ignored
    w = rng.random(c).astype(np.float32) + 0.5
    xt = torch.tensor(x, requires_grad=True)
    want = F.cross_entropy(xt, torch.tensor(y), weight=torch.tensor(w), reduction=reduction, label_smoothing=smoothing)
    xu = Tensor(x, requires_grad=True)
    got = xu.cross_entropy(Tensor(y), reduction=reduction, label_smoothing=smoothing, weight=Tensor(w))
    close(got, want)
    if want.numel() and not torch.isnan(want).any():
        g = randn(rng, *want.shape)
        (want * torch.tensor(g)).sum().backward()
        (got * Tensor(g)).sum().backward()
        close(xu.grad, xt.grad)
    with pytest.raises(RuntimeError, match=r"cross_entropy: weight must have shape \(%d,\)" % c):
        Tensor(x).cross_entropy(Tensor(y), weight=Tensor(w[:-1]) if c > 1 else Tensor(np.ones(2, np.float32)))


@pytest.mark.parametrize("ignore", [None, 2])
def test_nll_and_sparse_categorical(rng, ignore):
    x, y = randn(rng, 7, 4), rng.integers(0, 4, 7)
    logp = F.log_softmax(torch.tensor(x), 1)
    kw = {} if ignore is None else {"ignore_index": ignore}
    close(Tensor(logp.numpy()).nll_loss(Tensor(y), **kw), F.nll_loss(logp, torch.tensor(y), **kw))
    want = F.cross_entropy(torch.tensor(x), torch.tensor(y), ignore_index=-1 if ignore is None else ignore)
    got = Tensor(x).sparse_categorical_crossentropy(Tensor(y), ignore_index=-1 if ignore is None else ignore)
    close(got, want)


@pytest.mark.parametrize("shape", [(1, 1), (7, 5), (4, 3, 6), (0, 4)], ids=str)
@pytest.mark.parametrize("smoothing", [0.0, 0.1])
@pytest.mark.parametrize("ignore", [-1, 2])
def test_sparse_categorical_crossentropy_forward_backward(rng, shape, smoothing, ignore):
    """Against torch's cross_entropy over the last axis, with large logits (the log-sum-exp keeps them finite), some
    targets ignored, label smoothing; forward and backward."""
    c = shape[-1]
    x = randn(rng, *shape) * 30
    y = rng.integers(0, c, shape[:-1])
    y = np.where(rng.random(y.shape) < 0.3, ignore, y)
    xt = torch.tensor(x, requires_grad=True)
    want = F.cross_entropy(xt.movedim(-1, 1), torch.tensor(y), ignore_index=ignore, label_smoothing=smoothing)
    xu = Tensor(x, requires_grad=True)
    got = xu.sparse_categorical_crossentropy(Tensor(y), ignore_index=ignore, label_smoothing=smoothing)
    close(got, want)
    if not torch.isnan(want):
        want.backward()
        got.backward()
        close(xu.grad, xt.grad)


def test_cross_entropy_backward_sums_no_rows(rng):
    """The gradient of cross-entropy from logits is (softmax - onehot) scaled, at each element: its kernels are the
    labels' range check, their count, the row max, the row sum of exp and the gradient. (Differentiating a
    log_softmax tensor instead sums the incoming gradient over each row: one more reduction kernel.)"""
    losses = [
        lambda x, y: x.cross_entropy(y),
        lambda x, y: x.sparse_categorical_crossentropy(y),
        lambda x, y: x.cross_entropy(y, ignore_index=3),
    ]
    for loss_of in losses:
        x = Tensor(randn(rng, 33, 10), requires_grad=True).realize()
        y = Tensor(rng.integers(0, 10, 33)).realize()
        loss_of(x, y).backward()
        before = rt.stats.kernels
        x.grad.realize()
        assert rt.stats.kernels - before <= 5


def test_loss_target_shape_errors():
    """A target of the wrong shape is refused by the loss, naming it and the expected shape (torch refuses it too)."""
    x = Tensor.zeros(2, 3)
    with pytest.raises(RuntimeError, match=r"cross_entropy: target shape \(3,\) .* class indices of shape \(2,\)"):
        x.cross_entropy(Tensor([0, 1, 2]))
    with pytest.raises(RuntimeError, match=r"cross_entropy: .* class probabilities of shape \(2, 3\)"):
        x.cross_entropy(Tensor.zeros(2, 2))
    with pytest.raises(RuntimeError, match=r"nll_loss: target shape \(2, 1\)"):
        x.nll_loss(Tensor([[0], [1]]))
    with pytest.raises(RuntimeError, match=r"sparse_categorical_crossentropy: target shape \(3,\)"):
        x.sparse_categorical_crossentropy(Tensor([0, 1, 2]))
    for bad in (torch.tensor([0, 1, 2]), torch.zeros(2, 2)):
        with pytest.raises((RuntimeError, ValueError)):
            F.cross_entropy(torch.zeros(2, 3), bad)


def test_binary_losses(rng):
    logits, y = randn(rng, 9), (rng.random(9) > 0.5).astype(np.float32)
    p = torch.sigmoid(torch.tensor(logits))
    close(Tensor(p.numpy()).binary_crossentropy(Tensor(y)), F.binary_cross_entropy(p, torch.tensor(y)))
    want = F.binary_cross_entropy_with_logits(torch.tensor(logits), torch.tensor(y))
    close(Tensor(logits).binary_crossentropy_logits(Tensor(y)), want)
    a, b = randn(rng, 3, 4), randn(rng, 3, 4)
    close(Tensor(a).mse_loss(Tensor(b)), F.mse_loss(torch.tensor(a), torch.tensor(b)))
    close(Tensor(a).l1_loss(Tensor(b), reduction="sum"), F.l1_loss(torch.tensor(a), torch.tensor(b), reduction="sum"))


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("mask", [None, "bool", "float"])
def test_scaled_dot_product_attention(rng, causal, mask):
    q, k, v = randn(rng, 2, 3, 5, 8), randn(rng, 2, 3, 5, 8), randn(rng, 2, 3, 5, 8)
    m = None if mask is None else rng.random((5, 5)) > 0.3 if mask == "bool" else randn(rng, 5, 5)
    if m is not None and mask == "bool":
        m[:, 0] = True  # every row keeps one position
    tm = None if m is None else torch.tensor(m)
    if causal and m is not None:  # tinygrad refuses the pair (torch too, but for 4-D inputs it combines them)
        with pytest.raises(RuntimeError, match="attn_mask should not be set when is_causal=True"):
            Tensor(q).scaled_dot_product_attention(Tensor(k), Tensor(v), Tensor(m), is_causal=True)
        return
    want = F.scaled_dot_product_attention(torch.tensor(q), torch.tensor(k), torch.tensor(v), tm, is_causal=causal)
    got = Tensor(q).scaled_dot_product_attention(
        Tensor(k), Tensor(v), None if m is None else Tensor(m), is_causal=causal
    )
    close(got, want, atol=1e-5)


CONV2D_CASES = [
    dict(),
    dict(stride=2),
    dict(padding=1),
    dict(padding="same"),
    dict(dilation=2, padding=2),
    dict(stride=(2, 1), padding=(1, 0)),
    dict(groups=3),
]


@pytest.mark.parametrize("kw", CONV2D_CASES)
def test_conv2d_forward_and_backward(rng, kw):
    groups = kw.get("groups", 1)
    x, w, b = randn(rng, 2, 3, 7, 6), randn(rng, 6, 3 // groups, 3, 3), randn(rng, 6)
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    ux, uw, ub = (Tensor(a, requires_grad=True) for a in (x, w, b))
    want = F.conv2d(tx, tw, tb, **kw)
    got = ux.conv2d(uw, ub, **kw)
    close(got, want, atol=1e-4)
    g = randn(rng, *want.shape)
    want.backward(torch.tensor(g))
    got.backward(Tensor(g))
    for u, t in ((ux, tx), (uw, tw), (ub, tb)):
        np.testing.assert_allclose(u.grad.numpy(), t.grad.numpy(), atol=1e-4, rtol=1e-3)


@pytest.mark.parametrize(
    "xs, ws, kw",
    [
        ((1, 1, 1, 1), (1, 1, 1, 1), dict()),  # size 1 everywhere
        ((3, 4, 9, 5), (6, 2, 2, 3), dict(groups=2, stride=(2, 3), dilation=(2, 1), padding=(2, 1))),
        ((2, 3, 11), (4, 3, 3), dict(stride=2, padding=1)),  # 1-d
        ((1, 2, 5, 4, 6), (3, 2, 2, 3, 2), dict(padding=1, stride=(1, 2, 1))),  # 3-d
        ((2, 32, 16, 16), (16, 32, 3, 3), dict(padding=1)),  # vector tiles in all three kernels
        ((0, 3, 5, 5), (2, 3, 3, 3), dict(padding=1)),  # empty batch
    ],
)
def test_conv_gradients_match_torch(rng, xs, ws, kw):
    """The convolution's own gradient rule (convolutions again) against torch's, with a random upstream gradient."""
    x, w = randn(rng, *xs), randn(rng, *ws)
    tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    ux, uw = Tensor(x, requires_grad=True), Tensor(w, requires_grad=True)
    conv = {3: F.conv1d, 4: F.conv2d, 5: F.conv3d}[len(xs)]
    want, got = conv(tx, tw, **kw), ux.conv2d(uw, **kw)
    close(got, want, atol=1e-4)
    g = randn(rng, *want.shape)
    want.backward(torch.tensor(g))
    got.backward(Tensor(g))
    np.testing.assert_allclose(ux.grad.numpy(), tx.grad.numpy(), atol=1e-4, rtol=1e-3)
    np.testing.assert_allclose(uw.grad.numpy(), tw.grad.numpy(), atol=1e-3, rtol=1e-3)


def test_conv_non_contiguous_input_and_second_order(rng):
    """A permuted (non-contiguous) input, and the gradient of a gradient (the rule's convolutions differentiate)."""
    x, w = randn(rng, 5, 6, 3, 2).transpose(3, 2, 1, 0), randn(rng, 4, 3, 3, 3)  # x: (2, 3, 6, 5), strided
    tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    ux, uw = Tensor(x, requires_grad=True), Tensor(w, requires_grad=True)
    tgx = torch.autograd.grad((F.conv2d(tx, tw, padding=1) ** 2).sum(), tx, create_graph=True)[0]
    (tgx * tgx).sum().backward()
    ux.conv2d(uw, padding=1).square().sum().backward(create_graph=True)
    gx = ux.grad
    ux.grad = uw.grad = None
    (gx * gx).sum().backward()
    close(gx, tgx.detach(), atol=1e-3)
    np.testing.assert_allclose(uw.grad.numpy(), tw.grad.numpy(), atol=1e-2, rtol=1e-3)


def test_conv1d_conv3d(rng):
    x, w = randn(rng, 2, 4, 11), randn(rng, 3, 4, 3)
    close(
        Tensor(x).conv1d(Tensor(w), stride=2, padding=1),
        F.conv1d(torch.tensor(x), torch.tensor(w), stride=2, padding=1),
    )
    x, w = randn(rng, 1, 2, 5, 4, 6), randn(rng, 3, 2, 2, 3, 2)
    close(Tensor(x).conv3d(Tensor(w)), F.conv3d(torch.tensor(x), torch.tensor(w)), atol=1e-4)


@pytest.mark.parametrize("dims", [1, 2, 3])
def test_unbatched_conv_matches_torch(rng, dims):
    """An input without its batch dim (C_in, *spatial), as torch takes it: (C_out, *out), forward and backward, for
    nn.Conv*d and conv_transpose2d."""
    import unigrad

    spatial, kernel = (7, 6, 5)[:dims], (3, 2, 2)[:dims]
    x, w, b = randn(rng, 4, *spatial), randn(rng, 6, 2, *kernel), randn(rng, 6)
    ux, uw, ub = (Tensor(a, requires_grad=True) for a in (x, w, b))
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    conv = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[dims]
    ours, want = ux.conv2d(uw, ub, groups=2, padding=1), conv(tx, tw, tb, groups=2, padding=1)
    close(ours, want, atol=1e-4)
    (ours * ours).sum().backward()
    (want * want).sum().backward()
    for u, t in ((ux, tx), (uw, tw), (ub, tb)):
        np.testing.assert_allclose(u.grad.numpy(), t.grad.numpy(), rtol=1e-4, atol=1e-4)
    module = {1: unigrad.nn.Conv1d, 2: unigrad.nn.Conv2d, 3: unigrad.nn.Conv3d}[dims](4, 3, 2)
    assert module(Tensor(x)).shape == (3, *(s - 1 for s in spatial))
    if dims == 2:
        wt = randn(rng, 4, 3, 3, 3)
        close(
            Tensor(x).conv_transpose2d(Tensor(wt), stride=2),
            F.conv_transpose2d(torch.tensor(x), torch.tensor(wt), stride=2),
            atol=1e-4,
        )


@pytest.mark.parametrize("kw", [dict(), dict(stride=2), dict(stride=2, padding=1, output_padding=1), dict(groups=2)])
def test_conv_transpose2d(rng, kw):
    x, w = randn(rng, 2, 4, 5, 6), randn(rng, 4, 3 if "groups" not in kw else 3, 3, 3)
    want = F.conv_transpose2d(torch.tensor(x), torch.tensor(w), **kw)
    close(Tensor(x).conv_transpose2d(Tensor(w), **kw), want, atol=1e-4)


@pytest.mark.parametrize(
    "kw", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1), dict(kernel_size=(2, 3), stride=1)]
)
def test_pooling(rng, kw):
    x = randn(rng, 2, 3, 9, 8)
    close(Tensor(x).max_pool2d(**kw), F.max_pool2d(torch.tensor(x), **kw))
    close(Tensor(x).avg_pool2d(**kw), F.avg_pool2d(torch.tensor(x), **kw))
    if kw.get("padding"):
        close(
            Tensor(x).avg_pool2d(**kw, count_include_pad=False),
            F.avg_pool2d(torch.tensor(x), **kw, count_include_pad=False),
        )


def test_conv_errors():
    with pytest.raises(RuntimeError, match="conv: input"):
        Tensor.ones(1, 3, 5, 5).conv2d(Tensor.ones(2, 4, 3, 3))
    with pytest.raises(RuntimeError, match="larger than the input"):
        Tensor.ones(1, 1, 2, 2).conv2d(Tensor.ones(1, 1, 3, 3))


def test_conv_is_one_reduce_kernel(rng):
    """A convolution is one reduce kernel; with padding, a padded copy of the input first (no gated loads)."""
    from unigrad.runtime import realize as rt

    x, w = Tensor(randn(rng, 2, 3, 8, 8)).realize(), Tensor(randn(rng, 4, 3, 3, 3)).realize()
    before = rt.stats.kernels
    x.conv2d(w).realize()
    assert rt.stats.kernels - before == 1
    before = rt.stats.kernels
    x.conv2d(w, padding=1).realize()
    assert rt.stats.kernels - before == 2
    assert [k.arg.name[0] for k in rt.stats.last_kernels] == ["E", "r"]


def test_conv_of_mismatched_ranks_says_what_it_expected():
    with pytest.raises(RuntimeError, match=r"conv: input \(3,\) and weight \(1, 1, 1, 1\): expected a weight"):
        Tensor.ones(3).conv2d(Tensor.ones(1, 1, 1, 1))
    with pytest.raises(RuntimeError, match=r"conv: input \(1, 1, 4, 4\) and weight \(3, 3\)"):
        Tensor.ones(1, 1, 4, 4).conv2d(Tensor.ones(3, 3))


@pytest.mark.parametrize("ignore", [None, -100, 1])
@pytest.mark.parametrize("shape", [(5,), (1, 5), (7, 5), (3, 4, 2, 3), (0, 5)], ids=str)
def test_nll_mean_counts_the_targets(rng, shape, ignore):
    """nll_loss's mean without class weights divides by the targets that count: all of them, or those not
    ignore_index (a count over the targets, not a sum of the one-hot mask over every class); forward and backward
    equal torch's, an all-ignored batch gives nan."""
    c = shape[1] if len(shape) > 1 else shape[0]
    x = randn(rng, *shape)
    y = rng.integers(0, c, shape[:1] + shape[2:] if len(shape) > 1 else ())
    if ignore is not None and y.ndim:
        y = np.where(rng.random(y.shape) < 0.4, ignore, rng.integers(0, c, y.shape))
    xt = torch.tensor(x, requires_grad=True)
    want = F.nll_loss(xt, torch.tensor(y), ignore_index=-100 if ignore is None else ignore)
    xu = Tensor(x, requires_grad=True)
    got = xu.nll_loss(Tensor(y), ignore_index=ignore)
    close(got, want)
    if not torch.isnan(want):
        want.backward()
        got.backward()
        close(xu.grad, xt.grad)
    if ignore is not None and y.ndim:
        every = np.full(y.shape, ignore)
        assert np.isnan(Tensor(x).nll_loss(Tensor(every), ignore_index=ignore).item())


@pytest.mark.parametrize("shape", [(1, 4), (3, 5, 4), (2, 0, 4)], ids=str)
def test_composites_are_traced_calls(shape):
    """Linear, an affine layer norm and attention without dropout run as traced calls (function.traced: a call is
    one node, its backward one call of its VJP): the graphs hold their FUNCTION nodes, and values and gradients
    equal torch's (sizes 0, 1 and odd); tensors over several devices, or in training with dropout, go op by op."""
    import torch

    from unigrad import nn
    from unigrad.ir.ops import Ops

    gen = np.random.default_rng(11)
    xn, wn, bn = gen.standard_normal(shape), gen.standard_normal((3, 4)), gen.standard_normal(3)
    x, w, b = (Tensor(a, requires_grad=True) for a in (xn, wn, bn))
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (xn, wn, bn))
    norm = nn.LayerNorm(3)
    norm.weight, norm.bias = Tensor(wn[0, :3], requires_grad=True), Tensor(bn, requires_grad=True)
    y = norm(x.linear(w.T, b))
    q = y.reshape(-1, 1, 3)
    out = q.scaled_dot_product_attention(q, q).sum() + y.square().sum()
    names = {u.arg.name.split(".")[-1] for u in out.uop.toposort() if u.op is Ops.FUNCTION}
    assert {"_linear", "_affine_layernorm_ops", "_attention"} <= names, names
    out.backward()
    ty = torch.nn.functional.layer_norm(
        torch.nn.functional.linear(tx, tw, tb), (3,), torch.tensor(wn[0, :3]), torch.tensor(bn)
    )
    tq = ty.reshape(-1, 1, 3)
    (torch.nn.functional.scaled_dot_product_attention(tq, tq, tq).sum() + ty.square().sum()).backward()
    for ours, theirs in ((x, tx), (w, tw), (b, tb)):
        np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-9, atol=1e-12)
    multi = Tensor(xn).shard(("CPU:0", "CPU:1"), axis=None) if shape[0] else None
    if multi is not None:  # op by op: no call node over tensors on two devices
        lin = multi.linear(Tensor(wn).shard(("CPU:0", "CPU:1"), axis=None).T)
        assert not any(u.op is Ops.FUNCTION for u in lin.uop.toposort())
        np.testing.assert_allclose(lin.numpy(), xn @ wn.T, rtol=1e-9)
    with Tensor.train():
        d = q.scaled_dot_product_attention(q, q, dropout_p=0.5)
        assert not any(u.op is Ops.FUNCTION and u.arg.name.endswith("_attention") for u in d.uop.toposort())
