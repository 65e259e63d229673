"""The torch.nn / torch.nn.functional pieces beyond the basics, against torch: the transformer decoder and
nn.Transformer, 3-D transposed convolution / instance norm / LP pooling, channel shuffle, max pooling's indices and
max unpooling, embedding bags, affine grids and grid sampling, the margin losses, Gumbel-softmax, alpha dropout and
the in-place activations. Forward values, input and parameter gradients (through a random projection), torch's
state-dict keys and reprs, and the errors raised for bad shapes."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import unigrad.nn.functional as F
from test.nn.test_functional import check, check_grad
from test.nn.test_layers import check_against_torch, close, load_from_torch, randn
from test.nn.test_module import load_torch_state
from unigrad import Tensor, dtypes, nn
from unigrad.nn.state import get_state_dict


def compare_all_grads(ours: nn.Module, theirs: torch.nn.Module, *pairs: tuple[Tensor, torch.Tensor]) -> None:
    """Input gradients (ours, torch's) and every parameter's gradient against torch's, realized together: one
    schedule for the whole backward graph instead of one per gradient."""
    mine, ref = dict(ours.named_parameters()), dict(theirs.named_parameters())
    assert list(mine) == list(ref)
    Tensor.realize(*[u.grad for u, _ in pairs], *[p.grad for p in mine.values()])
    for i, (u, t) in enumerate(pairs):
        close(u.grad, t.grad, f"grad of input {i}")
    for name, p in ref.items():
        close(mine[name].grad, p.grad, f"grad of {name}")


def grads_through(fu, ft, *arrays: np.ndarray, ints: tuple = ()) -> None:
    """check_grad with integer arguments passed through unchanged (each side gets its own tensor)."""
    check_grad(
        lambda *u: fu(*u, *(Tensor(i) for i in ints)), lambda *t: ft(*t, *(torch.tensor(i) for i in ints)), *arrays
    )


# ---------------------------------------------------------------- transformer decoder and nn.Transformer


def _torch_pair(ours: nn.Module, theirs: torch.nn.Module) -> None:
    assert list(ours.state_dict()) == list(theirs.state_dict())
    load_torch_state(ours, theirs)
    ours.eval()
    theirs.eval()


@pytest.mark.parametrize("norm_first,activation,batch_first", [(False, "relu", True), (True, "gelu", False)])
def test_transformer_decoder_layer_matches_torch(norm_first, activation, batch_first):
    torch.manual_seed(0)
    kw = {"dim_feedforward": 16, "batch_first": batch_first, "norm_first": norm_first, "activation": activation}
    theirs, ours = torch.nn.TransformerDecoderLayer(8, 2, **kw), nn.TransformerDecoderLayer(8, 2, **kw)
    _torch_pair(ours, theirs)
    n, t, s = 2, 4, 5
    tgt, mem = (randn(n, t, 8, seed=1), randn(n, s, 8, seed=2)) if batch_first else (randn(t, n, 8), randn(s, n, 8))
    causal = np.triu(np.full((t, t), -np.inf, np.float32), 1)
    mem_pad = np.zeros((n, s), dtype=bool)
    mem_pad[1, 3:] = True
    tin = [torch.tensor(a, requires_grad=True) for a in (tgt, mem)]
    uin = [Tensor(a, requires_grad=True) for a in (tgt, mem)]
    ref = theirs(*tin, tgt_mask=torch.tensor(causal), memory_key_padding_mask=torch.tensor(mem_pad), tgt_is_causal=True)
    out = ours(*uin, tgt_mask=Tensor(causal), memory_key_padding_mask=Tensor(mem_pad), tgt_is_causal=True)
    close(out, ref, "output")
    proj = randn(*ref.shape, seed=9)
    (ref * torch.tensor(proj)).sum().backward()
    (out * Tensor(proj)).sum().backward()
    compare_all_grads(ours, theirs, *zip(uin, tin))


def test_transformer_matches_torch():
    """nn.Transformer (encoder + decoder stacks with their final norms), batch 1, bool padding masks and a float
    causal mask from generate_square_subsequent_mask; then the unbatched form."""
    torch.manual_seed(0)
    kw = {"dim_feedforward": 12, "batch_first": True}
    theirs = torch.nn.Transformer(8, 2, num_encoder_layers=1, num_decoder_layers=2, **kw)
    ours = nn.Transformer(8, 2, num_encoder_layers=1, num_decoder_layers=2, **kw)
    _torch_pair(ours, theirs)
    src, tgt = randn(1, 5, 8, seed=3), randn(1, 3, 8, seed=4)
    mask_t = torch.nn.Transformer.generate_square_subsequent_mask(3)
    mask_u = nn.Transformer.generate_square_subsequent_mask(3)
    check(mask_u, mask_t)
    src_pad = np.array([[False, False, False, False, True]])
    tin = [torch.tensor(a, requires_grad=True) for a in (src, tgt)]
    uin = [Tensor(a, requires_grad=True) for a in (src, tgt)]
    ref = theirs(*tin, tgt_mask=mask_t, src_key_padding_mask=torch.tensor(src_pad), tgt_is_causal=True)
    out = ours(*uin, tgt_mask=mask_u, src_key_padding_mask=Tensor(src_pad), tgt_is_causal=True)
    close(out, ref, "output")
    proj = randn(*ref.shape, seed=9)
    (ref * torch.tensor(proj)).sum().backward()
    (out * Tensor(proj)).sum().backward()
    compare_all_grads(ours, theirs, *zip(uin, tin))
    with torch.no_grad():
        close(ours(Tensor(src[0]), Tensor(tgt[0])), theirs(torch.tensor(src[0]), torch.tensor(tgt[0])), "unbatched")


def test_transformer_init_keys_and_errors():
    model, ref = nn.Transformer(16, 4, 1, 1, 32, bias=False), torch.nn.Transformer(16, 4, 1, 1, 32, bias=False)
    assert {k: v.shape for k, v in model.state_dict().items()} == {
        k: tuple(v.shape) for k, v in ref.state_dict().items()
    }
    w = model.decoder.layers[0].linear1.weight.numpy()  # xavier_uniform_: U(-b, b), b = sqrt(6 / (fan_in + fan_out))
    bound = math.sqrt(6 / (16 + 32))
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
    np.testing.assert_array_equal(model.decoder.norm.weight.numpy(), 1.0)  # 1-D parameters keep their init
    check(nn.Transformer.generate_square_subsequent_mask(1), torch.nn.Transformer.generate_square_subsequent_mask(1))
    mask64 = nn.Transformer.generate_square_subsequent_mask(4, dtype=dtypes.float64)
    check(mask64, torch.nn.Transformer.generate_square_subsequent_mask(4, dtype=torch.float64))
    small = nn.Transformer(8, 2, 1, 1, 8)
    with pytest.raises(RuntimeError, match="the batch number of src and tgt must be equal"):
        small(Tensor.zeros(3, 2, 8), Tensor.zeros(4, 3, 8))
    with pytest.raises(RuntimeError, match="the feature number of src and tgt must be equal to d_model"):
        small(Tensor.zeros(3, 2, 8), Tensor.zeros(4, 2, 6))
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        nn.TransformerDecoderLayer(8, 2, activation="tanh")
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not silu"):
        nn.TransformerEncoderLayer(8, 2, activation="silu")
    with pytest.raises(RuntimeError, match="is_causal is a hint"):
        nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, 8), 1)(
            Tensor.zeros(3, 1, 8), Tensor.zeros(2, 1, 8), tgt_is_causal=True
        )


# ---------------------------------------------------------------- 3-D layers, channel shuffle

LAYERS = {
    "conv_transpose3d": (
        lambda: nn.ConvTranspose3d(
            2, 4, (3, 2, 2), stride=(2, 1, 2), padding=(1, 0, 1), output_padding=(1, 0, 1), groups=2
        ),
        lambda: torch.nn.ConvTranspose3d(
            2, 4, (3, 2, 2), stride=(2, 1, 2), padding=(1, 0, 1), output_padding=(1, 0, 1), groups=2
        ),
        (2, 2, 3, 2, 3),
    ),
    "conv_transpose3d_unbatched_dilated": (
        lambda: nn.ConvTranspose3d(3, 2, 2, dilation=2, bias=False),
        lambda: torch.nn.ConvTranspose3d(3, 2, 2, dilation=2, bias=False),
        (3, 2, 3, 1),
    ),
    "instancenorm3d_affine": (
        lambda: nn.InstanceNorm3d(3, affine=True),
        lambda: torch.nn.InstanceNorm3d(3, affine=True),
        (2, 3, 3, 2, 3),
    ),
    "instancenorm3d_unbatched": (lambda: nn.InstanceNorm3d(2), lambda: torch.nn.InstanceNorm3d(2), (2, 3, 3, 2)),
    "lppool3d": (lambda: nn.LPPool3d(2, (2, 2, 1)), lambda: torch.nn.LPPool3d(2, (2, 2, 1)), (1, 2, 5, 4, 3)),
    "lppool3d_strided_p3": (lambda: nn.LPPool3d(3, 2, 1), lambda: torch.nn.LPPool3d(3, 2, 1), (2, 1, 3, 3, 3)),
    "channel_shuffle": (lambda: nn.ChannelShuffle(3), lambda: torch.nn.ChannelShuffle(3), (2, 6, 3, 1)),
    "channel_shuffle_3d": (lambda: nn.ChannelShuffle(2), lambda: torch.nn.ChannelShuffle(2), (1, 4, 5)),
}


@pytest.mark.parametrize("case", LAYERS)
def test_layers_match_torch(case):
    make, make_torch, shape = LAYERS[case]
    x = randn(*shape)
    if "lppool" in case:
        x = np.abs(x) + 0.1  # torch's LP pool of a negative window sum is nan for odd p
    check_against_torch(make(), make_torch(), x, train=True)


def test_instancenorm3d_running_stats_and_permuted_input():
    layer, tmod = (
        nn.InstanceNorm3d(2, affine=True, track_running_stats=True),
        torch.nn.InstanceNorm3d(2, affine=True, track_running_stats=True),
    )
    load_from_torch(layer, tmod)
    x = randn(3, 3, 2, 2, 4) * 2 + 1  # permuted to (N, C=2, ...): a non-contiguous view
    with Tensor.train(True):
        out = layer(Tensor(x).permute(0, 3, 1, 2, 4))
    close(out, tmod.train()(torch.tensor(x).permute(0, 3, 1, 2, 4)), "training output")
    close(layer.running_mean, tmod.running_mean, "running_mean")
    close(layer.running_var, tmod.running_var, "running_var")
    with Tensor.train(False):
        close(layer(Tensor(x[0]).permute(2, 0, 1, 3)), tmod.eval()(torch.tensor(x[0]).permute(2, 0, 1, 3)), "eval")


def test_conv_transpose_output_size():
    torch.manual_seed(0)
    layer, tmod = (
        nn.ConvTranspose3d(2, 3, 3, stride=(2, 3, 1), padding=1),
        torch.nn.ConvTranspose3d(2, 3, 3, stride=(2, 3, 1), padding=1),
    )
    load_from_torch(layer, tmod)
    x = randn(1, 2, 3, 2, 2)
    for size in [(6, 5, 2), (1, 3, 5, 6, 2)]:
        close(layer(Tensor(x), output_size=size), tmod(torch.tensor(x), output_size=size), f"output_size {size}")
    layer2, tmod2 = nn.ConvTranspose2d(2, 2, 3, stride=2), torch.nn.ConvTranspose2d(2, 2, 3, stride=2)
    load_from_torch(layer2, tmod2)
    close(layer2(Tensor(x[0, :, 0]), output_size=(6, 5)), tmod2(torch.tensor(x[0, :, 0]), output_size=(6, 5)), "2d")
    with pytest.raises(
        ValueError,
        match=r"requested an output size of \[8, 5, 2\], but valid sizes range from \[5, 4, 2\] to \[6, 6, 2\]",
    ):
        layer(Tensor(x), output_size=(8, 5, 2))
    with pytest.raises(ValueError, match="output_size must have 3 or 5 elements"):
        layer(Tensor(x), output_size=(6, 5))
    with pytest.raises(ValueError, match='only "zeros" padding mode is supported'):
        nn.ConvTranspose3d(2, 3, 3, padding_mode="reflect")


def test_channel_shuffle_function_and_errors():
    x = randn(3, 6, 4)
    check_grad(
        lambda t: F.channel_shuffle(t.transpose(1, 2), 2),
        lambda t: TF.channel_shuffle(t.transpose(1, 2), 2),
        randn(3, 4, 6),
    )
    check(F.channel_shuffle(Tensor(x), 6), TF.channel_shuffle(torch.tensor(x), 6))
    with pytest.raises(
        RuntimeError, match=r"channel_shuffle\(\): expects input with > 2 dims, but got input with sizes \[2, 6\]"
    ):
        F.channel_shuffle(Tensor(randn(2, 6)), 3)
    with pytest.raises(RuntimeError, match="Got 6 channels and 4 groups"):
        F.channel_shuffle(Tensor(x), 4)
    with pytest.raises(RuntimeError, match="must be positive"):
        F.channel_shuffle(Tensor(x), 0)


# ---------------------------------------------------------------- losses


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_multilabel_margin_loss(reduction):
    x = randn(4, 5) * 2
    t = np.array([[1, 2, -1, 0, 4], [4, 4, 3, -1, 1], [-1, 0, 0, 0, 0], [0, 1, 2, 3, 4]], dtype=np.int64)
    grads_through(
        lambda a, b: F.multilabel_margin_loss(a, b, reduction=reduction),
        lambda a, b: TF.multilabel_margin_loss(a, b, reduction=reduction),
        x,
        ints=(t,),
    )
    # one sample (C,), batch 1, a permuted input, and the module
    grads_through(
        lambda a, b: F.multilabel_margin_loss(a, b, reduction=reduction),
        lambda a, b: TF.multilabel_margin_loss(a, b, reduction=reduction),
        x[0],
        ints=(t[0],),
    )
    grads_through(
        lambda a, b: F.multilabel_margin_loss(a.T, b, reduction=reduction),
        lambda a, b: TF.multilabel_margin_loss(a.T, b, reduction=reduction),
        x[:1].T.copy(),
        ints=(t[:1],),
    )
    check(
        nn.MultiLabelMarginLoss(reduction=reduction)(Tensor(x), Tensor(t)),
        torch.nn.MultiLabelMarginLoss(reduction=reduction)(torch.tensor(x), torch.tensor(t)),
    )


def test_multilabel_margin_loss_errors():
    x = Tensor(randn(3, 4))
    with pytest.raises(RuntimeError, match=r"inconsistent target size: \[3, 3\] for input of size: \[3, 4\]"):
        F.multilabel_margin_loss(x, Tensor(np.zeros((3, 3), np.int64)))
    with pytest.raises(RuntimeError, match=r"expected non-empty vector or matrix .* but got: \[3, 4, 2\]"):
        F.multilabel_margin_loss(Tensor(randn(3, 4, 2)), Tensor(np.zeros((3, 4, 2), np.int64)))
    with pytest.raises(RuntimeError, match="integer"):
        F.multilabel_margin_loss(x, x)
    with pytest.raises(ValueError, match="reduction must be"):
        F.multilabel_margin_loss(x, Tensor(np.zeros((3, 4), np.int64)), reduction="avg")


def _cosine_distance(a, b):
    lib = F if isinstance(a, Tensor) else TF
    return 1 - lib.cosine_similarity(a, b)


@pytest.mark.parametrize(
    "kw",
    [
        {},
        {"margin": 0.5, "swap": True, "reduction": "sum"},
        {"distance_function": _cosine_distance, "reduction": "none"},
    ],
)
def test_triplet_margin_with_distance_loss(kw):
    a, p, n = randn(5, 4, seed=1), randn(5, 4, seed=2), randn(5, 4, seed=3) * 0.5
    check_grad(
        lambda *t: F.triplet_margin_with_distance_loss(*t, **kw),
        lambda *t: TF.triplet_margin_with_distance_loss(*t, **kw),
        a,
        p,
        n,
    )
    ours, theirs = nn.TripletMarginWithDistanceLoss(**kw), torch.nn.TripletMarginWithDistanceLoss(**kw)
    check(
        ours(Tensor(a[:1]), Tensor(p[:1]), Tensor(n[:1])),
        theirs(torch.tensor(a[:1]), torch.tensor(p[:1]), torch.tensor(n[:1])),
    )
    if "distance_function" not in kw:  # the default shows as a PairwiseDistance submodule, as torch's
        assert repr(ours) == repr(theirs)


def test_triplet_margin_with_distance_loss_errors():
    a = Tensor(randn(3, 4))
    with pytest.raises(ValueError, match="margin must be greater than 0, got 0"):
        F.triplet_margin_with_distance_loss(a, a, a, margin=0)
    with pytest.raises(ValueError, match="expected margin to be greater than 0, got -1"):
        nn.TripletMarginWithDistanceLoss(margin=-1)
    with pytest.raises(RuntimeError, match="anchor 2D, positive 2D, and negative 1D inputs"):
        F.triplet_margin_with_distance_loss(a, a, Tensor(randn(3)))


# ---------------------------------------------------------------- random: gumbel-softmax, alpha dropout


def test_gumbel_softmax_statistics():
    Tensor.manual_seed(0)
    probs = np.array([0.1, 0.2, 0.7], np.float32)
    logits = Tensor(np.log(np.tile(probs, (4000, 1))))
    hard = F.gumbel_softmax(logits, hard=True).numpy()
    assert set(np.unique(hard)) == {0.0, 1.0} and (hard.sum(-1) == 1).all()
    np.testing.assert_allclose(hard.mean(0), probs, atol=0.03)  # the argmax is a sample of softmax(logits)
    soft = F.gumbel_softmax(logits, tau=0.5).numpy()
    np.testing.assert_allclose(soft.sum(-1), 1.0, rtol=1e-5)
    assert (soft > 0).all() and (soft.max(-1) > 0.9).mean() > 0.5  # a low temperature: near one-hot
    spread = F.gumbel_softmax(Tensor(np.log(np.tile(probs, (6, 2, 1)))).transpose(1, 2), tau=5.0, dim=1)
    assert spread.shape == (6, 3, 2)  # softmax over dim 1 of a transposed view
    np.testing.assert_allclose(spread.numpy().sum(1), 1.0, rtol=1e-5)
    assert spread.numpy().max() < 0.99  # a high temperature: spread out


def test_gumbel_softmax_straight_through_gradient():
    """hard=True: one-hot values, the gradient of the soft sample drawn with the same noise: for y = softmax(z/tau),
    d(sum(y w))/dz = y (w - sum(y w)) / tau."""
    x, w, tau = randn(5, 4), randn(5, 4, seed=1), 0.7
    Tensor.manual_seed(3)
    soft = F.gumbel_softmax(Tensor(x), tau=tau).numpy()
    Tensor.manual_seed(3)
    logits = Tensor(x, requires_grad=True)
    hard = F.gumbel_softmax(logits, tau=tau, hard=True)
    (hard * Tensor(w)).sum().backward()
    np.testing.assert_array_equal(hard.numpy(), np.eye(4, dtype=np.float32)[soft.argmax(-1)])
    expected = soft * (w - (soft * w).sum(-1, keepdims=True)) / tau
    np.testing.assert_allclose(logits.grad.numpy(), expected, atol=1e-5, rtol=1e-4)


SELU_SAT = 1.7580993408473766  # -(the value SELU tends to at -inf)


def alpha_scale(p: float) -> float:
    """alpha dropout's a: kept x -> a x + a SAT p, dropped -> a SAT (p - 1)."""
    return ((1 - p) * (1 + p * SELU_SAT**2)) ** -0.5


def test_alpha_dropout():
    Tensor.manual_seed(0)
    x = randn(400, 50)
    check(F.alpha_dropout(Tensor(x), 0.3), torch.tensor(x))  # torch's default training=False
    check(F.alpha_dropout(Tensor(x), 1.0, True), TF.alpha_dropout(torch.tensor(x), 1.0, True))
    y, a = F.alpha_dropout(Tensor(x), 0.2, True).numpy(), alpha_scale(0.2)
    dropped = np.isclose(y, a * SELU_SAT * (0.2 - 1), atol=1e-6)
    assert abs(dropped.mean() - 0.2) < 0.02
    np.testing.assert_allclose(y[~dropped], x[~dropped] * a + a * SELU_SAT * 0.2, rtol=1e-5, atol=1e-6)
    assert abs(y.mean()) < 0.03 and abs(y.std() - 1) < 0.03  # self-normalizing: mean 0, std 1 kept
    z = F.feature_alpha_dropout(Tensor(randn(8, 40, 3, 5)), 0.5, True).numpy().reshape(320, 15)
    const = np.ptp(z, axis=1) == 0  # a dropped channel is one constant
    assert 0.3 < const.mean() < 0.7
    with Tensor.train(True):
        w = nn.FeatureAlphaDropout(0.5)(Tensor(randn(8, 40))).numpy()  # (N, C): one draw per element
    assert 0.3 < np.isclose(w, alpha_scale(0.5) * SELU_SAT * -0.5).mean() < 0.7
    with Tensor.train(False):
        np.testing.assert_array_equal(nn.FeatureAlphaDropout(0.5)(Tensor(x)).numpy(), x)
        np.testing.assert_array_equal(nn.AlphaDropout(0.5)(Tensor(x)).numpy(), x)
    t = Tensor(x, requires_grad=True)
    out = F.alpha_dropout(t, 0.5, True)
    out.sum().backward()
    kept = ~np.isclose(out.numpy(), alpha_scale(0.5) * SELU_SAT * -0.5)
    np.testing.assert_allclose(t.grad.numpy(), kept * alpha_scale(0.5), rtol=1e-5)
    with pytest.raises(
        ValueError, match=r"alpha_dropout\(\): dropout probability has to be between 0 and 1, but got 1.5"
    ):
        F.alpha_dropout(Tensor(x), 1.5, True)
    with pytest.raises(RuntimeError, match="Feature dropout requires at least 2 dimensions in the input"):
        F.feature_alpha_dropout(Tensor(randn(3)), 0.5, True)
    assert repr(nn.FeatureAlphaDropout(0.2)) == repr(torch.nn.FeatureAlphaDropout(0.2))


# ---------------------------------------------------------------- in-place activations

INPLACE = [
    ("relu_", {}),
    ("elu_", {"alpha": 0.7}),
    ("leaky_relu_", {"negative_slope": 0.2}),
    ("hardtanh_", {"min_val": -0.5, "max_val": 2.0}),
    ("selu_", {}),
    ("celu_", {"alpha": 1.3}),
    ("rrelu_", {}),
    ("threshold_", {"threshold": 0.3, "value": -2.0}),
]


@pytest.mark.parametrize("name,kw", INPLACE, ids=[n for n, _ in INPLACE])
def test_inplace_activations(name, kw):
    x = randn(3, 5) * 2
    ours, theirs = Tensor(x), torch.tensor(x)
    view = ours[1:]  # a view taken before the write sees it
    assert getattr(F, name)(ours, **kw) is ours
    getattr(TF, name)(theirs, **kw)
    check(ours, theirs)
    check(view, theirs[1:])
    # inside a graph: the input takes the new value and its gradient (a permuted, non-leaf input)
    leaf_u, leaf_t = Tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    mid_u, mid_t = leaf_u.T * 1.5, leaf_t.T * 1.5
    getattr(F, name)(mid_u, **kw)
    getattr(TF, name)(mid_t, **kw)
    w = randn(5, 3, seed=2)
    (mid_u * Tensor(w)).sum().backward()
    (mid_t * torch.tensor(w)).sum().backward()
    check(leaf_u.grad, leaf_t.grad, atol=1e-5)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place operation"):
        getattr(F, name)(Tensor(x, requires_grad=True), **kw)


def test_inplace_activation_dtypes_and_training_rrelu():
    Tensor.manual_seed(0)
    x = -np.abs(randn(2000)) - 0.1
    t = Tensor(x)
    F.rrelu_(t, 0.1, 0.3, training=True)
    slope = t.numpy() / x
    assert slope.min() >= 0.1 - 1e-6 and slope.max() <= 0.3 + 1e-6 and slope.std() > 0.03
    ints = Tensor(np.array([-2, 0, 3]))
    F.relu_(ints)
    np.testing.assert_array_equal(ints.numpy(), [0, 0, 3])
    with pytest.raises(NotImplementedError, match="elu: not implemented for dtypes.int64"):  # as torch's elu_
        F.elu_(Tensor(np.array([-2, 0, 3])))


# ---------------------------------------------------------------- max pooling's indices, max unpooling

POOLS = [  # n, input shape, pooling settings
    (1, (2, 3, 9), {"kernel_size": 3, "stride": 2, "padding": 1}),
    (2, (1, 2, 7, 6), {"kernel_size": 2}),
    (2, (3, 5, 5), {"kernel_size": (3, 2), "stride": (2, 1), "padding": (1, 0)}),
    (3, (1, 2, 4, 4, 3), {"kernel_size": 2, "stride": (2, 2, 1)}),
]


@pytest.mark.parametrize("n,shape,kw", POOLS, ids=[f"{n}d_{i}" for i, (n, _, _) in enumerate(POOLS)])
def test_max_pool_indices_and_unpool(n, shape, kw):
    x = randn(*shape)
    pool_u, pool_t = getattr(F, f"max_pool{n}d_with_indices"), getattr(TF, f"max_pool{n}d_with_indices")
    vals_t, idx_t = pool_t(torch.tensor(x), **kw)
    check(pool_u(Tensor(x), **kw), (vals_t, idx_t))
    check(getattr(F, f"max_pool{n}d")(Tensor(x), **kw, return_indices=True), (vals_t, idx_t))
    unpool_u, unpool_t = getattr(F, f"max_unpool{n}d"), getattr(TF, f"max_unpool{n}d")
    ukw = {k: v for k, v in kw.items() if k in ("kernel_size", "stride", "padding")}
    grads_through(
        lambda v, i: unpool_u(v, i, **ukw, output_size=shape[-n:]),
        lambda v, i: unpool_t(v, i, **ukw, output_size=shape[-n:]),
        vals_t.numpy(),
        ints=(idx_t.numpy(),),
    )
    grads_through(
        lambda v, i: unpool_u(v, i, **ukw), lambda v, i: unpool_t(v, i, **ukw), vals_t.numpy(), ints=(idx_t.numpy(),)
    )
    ours, theirs = getattr(nn, f"MaxUnpool{n}d")(**ukw), getattr(torch.nn, f"MaxUnpool{n}d")(**ukw)
    assert repr(ours) == repr(theirs)
    size = shape if len(shape) == n + 2 else shape[-n:]  # (N, C, *spatial) or the spatial dims
    check(ours(Tensor(vals_t.numpy()), Tensor(idx_t.numpy()), size), theirs(vals_t, idx_t, size))


def test_max_pool_indices_of_a_permuted_input_and_adaptive():
    x = randn(2, 6, 3, 5)
    vals, idx = F.max_pool2d(Tensor(x).permute(0, 2, 3, 1), 2, return_indices=True)
    check((vals, idx), TF.max_pool2d(torch.tensor(x).permute(0, 2, 3, 1), 2, return_indices=True))
    for n, size in [(1, 4), (2, (3, 2)), (3, (2, 3, 2))]:
        xa = randn(2, *[5] * n)
        fu, ft = getattr(F, f"adaptive_max_pool{n}d_with_indices"), getattr(TF, f"adaptive_max_pool{n}d_with_indices")
        check(fu(Tensor(xa), size), ft(torch.tensor(xa), size))


def test_max_unpool_errors():
    vals, idx = F.max_pool2d(Tensor(randn(2, 3, 4, 4)), 2, return_indices=True)
    with pytest.raises(RuntimeError, match="elements in indices should be type int64 but got"):
        F.max_unpool2d(vals, idx.int(), 2)
    with pytest.raises(
        RuntimeError, match=r"expected shape of indices to be same as that of the input tensor \(\[2, 3, 2, 2\]\)"
    ):
        F.max_unpool2d(vals, idx[:, :2], 2)
    with pytest.raises(ValueError, match=r'invalid output_size "\(6, 5\)" \(dim 0 must be between 2 and 6\)'):
        F.max_unpool2d(vals, idx, 2, output_size=(6, 5))
    with pytest.raises(ValueError, match="output_size should be a sequence containing 2 or 4 elements"):
        F.max_unpool2d(vals, idx, 2, output_size=(1, 2, 5))
    with pytest.raises(RuntimeError, match=r"max_unpool2d\(\): expected a 3-D or 4-D input"):
        F.max_unpool2d(vals[0, 0], idx[0, 0], 2)


# ---------------------------------------------------------------- embedding bags


BAGS = {  # input, offsets, F.embedding_bag settings
    "sum_offsets": (np.array([1, 2, 4, 5, 4, 3, 2, 9]), np.array([0, 3, 3, 6]), {"mode": "sum"}),
    "mean_offsets_padding": (np.array([1, 2, 4, 5, 4, 3, 2, 9]), np.array([0, 3, 3, 6]), {"padding_idx": 4}),
    "max_last_offset": (
        np.array([1, 2, 4, 5, 4, 3, 2, 9]),
        np.array([0, 2, 7, 8]),
        {"mode": "max", "include_last_offset": True},
    ),
    "max_2d_padding": (np.array([[1, 2, 4], [4, 4, 4], [0, 9, 9]]), None, {"mode": "max", "padding_idx": -6}),
    "mean_2d_batch1": (np.array([[3, 3, 7, 1, 0]]), None, {}),
    "sum_2d_int32": (np.array([[3, 8], [7, 1]], np.int32), None, {"mode": "sum"}),
}


@pytest.mark.parametrize("case", BAGS)
def test_embedding_bag_matches_torch(case):
    idx, offsets, kw = BAGS[case]
    w = randn(10, 3)
    ints = (idx,) if offsets is None else (idx, offsets)
    grads_through(
        lambda w_, *r: F.embedding_bag(r[0], w_, *r[1:], **kw),
        lambda w_, *r: TF.embedding_bag(r[0], w_, *r[1:], **kw),
        w,
        ints=ints,
    )
    ours, theirs = nn.EmbeddingBag(10, 3, **kw), torch.nn.EmbeddingBag(10, 3, **kw)
    load_from_torch(ours, theirs)
    assert repr(ours) == repr(theirs) and list(get_state_dict(ours)) == list(theirs.state_dict())
    args_u, args_t = [Tensor(a) for a in ints], [torch.tensor(a) for a in ints]
    out, ref = ours(*args_u), theirs(*args_t)
    close(out, ref, "module output")
    proj = randn(*ref.shape, seed=5)
    (out * Tensor(proj)).sum().backward()
    (ref * torch.tensor(proj)).sum().backward()
    close(ours.weight.grad, theirs.weight.grad, "weight grad")


def test_embedding_bag_per_sample_weights_max_norm_and_init():
    idx, offsets, w = np.array([1, 2, 4, 5, 4, 3]), np.array([0, 2]), randn(6, 4) * 2
    psw = randn(6, seed=1)
    check_grad(
        lambda w_, p: F.embedding_bag(Tensor(idx), w_, Tensor(offsets), mode="sum", per_sample_weights=p),
        lambda w_, p: TF.embedding_bag(torch.tensor(idx), w_, torch.tensor(offsets), mode="sum", per_sample_weights=p),
        w,
        psw,
    )
    check_grad(
        lambda w_, p: F.embedding_bag(Tensor(idx.reshape(2, 3)), w_, mode="sum", per_sample_weights=p.T),
        lambda w_, p: TF.embedding_bag(torch.tensor(idx.reshape(2, 3)), w_, mode="sum", per_sample_weights=p.T),
        w,
        psw.reshape(3, 2),
    )  # per_sample_weights as a transposed (non-contiguous) view
    wu, wt = Tensor(w), torch.tensor(w)
    out = F.embedding_bag(Tensor(idx), wu, Tensor(offsets), max_norm=1.0)
    ref = TF.embedding_bag(torch.tensor(idx), wt, torch.tensor(offsets), max_norm=1.0)
    check(out, ref)
    check(wu, wt)  # the looked-up rows renormalized in place, as torch
    layer = nn.EmbeddingBag(1000, 8, padding_idx=3)
    weight = layer.weight.numpy()
    assert (weight[3] == 0).all() and abs(weight.std() - 1) < 0.05


def test_embedding_bag_errors():
    w = Tensor(randn(10, 3))
    with pytest.raises(ValueError, match="offsets has to be a 1D Tensor but got None"):
        F.embedding_bag(Tensor(np.array([1, 2])), w)
    with pytest.raises(ValueError, match="if input is 2D, then offsets has to be None"):
        F.embedding_bag(Tensor(np.array([[1, 2]])), w, Tensor(np.array([0])))
    with pytest.raises(ValueError, match="input has to be 1D or 2D Tensor, but got Tensor of dimension 3"):
        F.embedding_bag(Tensor(np.zeros((1, 1, 2), np.int64)), w)
    with pytest.raises(
        NotImplementedError, match="per_sample_weights is only supported for mode='sum' \\(got mode='max'\\)"
    ):
        F.embedding_bag(Tensor(np.array([[1, 2]])), w, mode="max", per_sample_weights=Tensor(randn(1, 2)))
    with pytest.raises(ValueError, match="must have the same shape as the input"):
        F.embedding_bag(Tensor(np.array([[1, 2]])), w, mode="sum", per_sample_weights=Tensor(randn(2)))
    with pytest.raises(ValueError, match="mode has to be one of sum, mean or max"):
        nn.EmbeddingBag(10, 3, mode="min")
    with pytest.raises(RuntimeError, match="expected an integer index tensor"):
        F.embedding_bag(Tensor(randn(1, 2)), w)


# ---------------------------------------------------------------- affine grids and grid sampling


@pytest.mark.parametrize("align_corners", [False, True])
def test_affine_grid(align_corners):
    for theta, size in [
        (randn(2, 2, 3), (2, 3, 4, 5)),
        (randn(1, 2, 3), (1, 1, 1, 3)),
        (randn(2, 3, 4), (2, 1, 3, 2, 4)),
    ]:
        check_grad(
            lambda t: F.affine_grid(t, size, align_corners), lambda t: TF.affine_grid(t, size, align_corners), theta
        )


GRID_SAMPLES = [
    (mode, pad, ac)
    for mode in ("bilinear", "nearest")
    for pad in ("zeros", "border", "reflection")
    for ac in (False, True)
]


@pytest.mark.parametrize("mode,padding_mode,align_corners", GRID_SAMPLES)
def test_grid_sample(mode, padding_mode, align_corners):
    """Gradients to the input and the grid; grid points reach past [-1, 1] so that every padding rule is used."""
    kw = {"mode": mode, "padding_mode": padding_mode, "align_corners": align_corners}
    x = randn(2, 3, 5, 4)
    grid = np.random.default_rng(7).uniform(-1.6, 1.6, (2, 3, 7, 2)).astype(np.float32)
    check_grad(lambda a, g: F.grid_sample(a, g, **kw), lambda a, g: TF.grid_sample(a, g, **kw), x, grid)
    # batch 1, a one-pixel-wide image, a permuted input
    check_grad(
        lambda a, g: F.grid_sample(a.permute(0, 3, 1, 2), g, **kw),
        lambda a, g: TF.grid_sample(a.permute(0, 3, 1, 2), g, **kw),
        randn(1, 3, 1, 2),
        grid[:1, :2],
    )


def test_affine_grid_and_grid_sample_errors():
    x, g = Tensor(randn(2, 3, 4, 5)), Tensor(randn(2, 3, 6, 2))
    with pytest.raises(ValueError, match="expected mode to be 'bilinear', 'nearest' or 'bicubic', but got: 'foo'"):
        F.grid_sample(x, g, mode="foo")
    with pytest.raises(ValueError, match="expected padding_mode to be 'zeros', 'border', or 'reflection'"):
        F.grid_sample(x, g, padding_mode="foo")
    with pytest.raises(RuntimeError, match=r"expected input \(N, C, H, W\) and grid \(N, H_out, W_out, 2\)"):
        F.grid_sample(x, g[:1])
    with pytest.raises(RuntimeError, match=r"grid \(N, H_out, W_out, 2\)"):
        F.grid_sample(x, g[..., :1])
    with pytest.raises(NotImplementedError, match="bicubic"):
        F.grid_sample(x, g, mode="bicubic")
    with pytest.raises(NotImplementedError, match=r"only 4D and 5D sizes are supported.* Got size \[2, 3, 4\]"):
        F.affine_grid(Tensor(randn(2, 2, 3)), (2, 3, 4))
    with pytest.raises(ValueError, match=r"Expected a batch of 3D affine matrices of shape Nx3x4 for size"):
        F.affine_grid(Tensor(randn(2, 2, 3)), (2, 3, 4, 5, 6))
    with pytest.raises(ValueError, match="Expected non-zero, positive output size"):
        F.affine_grid(Tensor(randn(2, 2, 3)), (2, 3, 0, 5))


# ---------------------------------------------------------------- state dicts and reprs

MODULES = {
    "conv_transpose3d": (lambda m: m.ConvTranspose3d(2, 4, 3, groups=2, bias=False)),
    "instancenorm3d": (lambda m: m.InstanceNorm3d(3, affine=True, track_running_stats=True)),
    "lppool3d": (lambda m: m.LPPool3d(2, (2, 1, 2), stride=1)),
    "maxunpool3d": (lambda m: m.MaxUnpool3d(2, stride=(1, 2, 1))),
    "channel_shuffle": (lambda m: m.ChannelShuffle(4)),
    "embedding_bag": (lambda m: m.EmbeddingBag(5, 3, max_norm=2.0, mode="sum", padding_idx=1)),
    "multilabel_margin": (lambda m: m.MultiLabelMarginLoss(reduction="sum")),
    "decoder_layer": (lambda m: m.TransformerDecoderLayer(8, 2, 16, norm_first=True)),
    "decoder": (lambda m: m.TransformerDecoder(m.TransformerDecoderLayer(8, 2, 16), 2, m.LayerNorm(8))),
}


@pytest.mark.parametrize("case", MODULES)
def test_state_dict_keys_and_repr_equal_torch(case):
    ours, theirs = MODULES[case](nn), MODULES[case](torch.nn)
    assert {k: v.shape for k, v in get_state_dict(ours).items()} == {
        k: tuple(v.shape) for k, v in theirs.state_dict().items()
    }
    if "decoder" not in case:  # torch's repr of an activation function differs
        assert repr(ours) == repr(theirs)
