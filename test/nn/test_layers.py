"""unigrad.nn layers against torch.nn: same weights -> same outputs and gradients; train/eval behaviour of the
norms with running statistics; PyTorch's default initializations; state-dict keys equal to torch's."""

import math

import numpy as np
import pytest
import torch

from unigrad import Tensor, dtypes, nn
from unigrad.nn.state import get_state_dict

ATOL, RTOL = 1e-4, 1e-3


def load_from_torch(layer: object, tmod: torch.nn.Module) -> None:
    """Copy torch's state into ours via numpy; parameters require grad, buffers do not."""
    params = dict(tmod.named_parameters())
    for key, value in tmod.state_dict().items():
        t = Tensor(value.detach().numpy().copy())
        t.requires_grad = key in params
        setattr(layer, key, t)


def close(ours: Tensor, ref: torch.Tensor, what: str = "") -> None:
    assert ours.shape == tuple(ref.shape), (what, ours.shape, tuple(ref.shape))
    np.testing.assert_allclose(ours.numpy(), ref.detach().numpy(), atol=ATOL, rtol=RTOL, err_msg=what)


def check_against_torch(layer: object, tmod: torch.nn.Module, x: np.ndarray, train: bool = False) -> None:
    """Same weights -> same output, input gradient and parameter gradients (through a random projection)."""
    load_from_torch(layer, tmod)
    tmod.train(train)
    is_float = x.dtype.kind == "f"
    xt = torch.tensor(x, requires_grad=is_float)
    xu = Tensor(x, requires_grad=True) if is_float else Tensor(x)
    with Tensor.train(train):
        ref, out = tmod(xt), layer(xu)  # type: ignore[operator]
    close(out, ref, "output")
    proj = np.random.default_rng(1).standard_normal(tuple(ref.shape)).astype(np.float32)
    (ref * torch.tensor(proj)).sum().backward()
    (out * Tensor(proj)).sum().backward()
    if is_float:
        close(xu.grad, xt.grad, "input grad")
    ours = get_state_dict(layer)
    for name, p in tmod.named_parameters():
        close(ours[name].grad, p.grad, f"grad of {name}")


def randn(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


# ---------------------------------------------------------------- forward and backward against torch

LINEAR_CONV = {
    "linear": (lambda: nn.Linear(5, 3), lambda: torch.nn.Linear(5, 3), (4, 5)),
    "linear_3d_nobias": (lambda: nn.Linear(5, 3, bias=False), lambda: torch.nn.Linear(5, 3, bias=False), (2, 4, 5)),
    "conv1d": (lambda: nn.Conv1d(3, 4, 3), lambda: torch.nn.Conv1d(3, 4, 3), (2, 3, 9)),
    "conv1d_strided_groups": (
        lambda: nn.Conv1d(4, 6, 3, stride=2, padding=2, dilation=2, groups=2),
        lambda: torch.nn.Conv1d(4, 6, 3, stride=2, padding=2, dilation=2, groups=2),
        (2, 4, 11),
    ),
    "conv1d_same_reflect": (
        lambda: nn.Conv1d(2, 3, 4, padding="same", padding_mode="reflect"),
        lambda: torch.nn.Conv1d(2, 3, 4, padding="same", padding_mode="reflect"),
        (2, 2, 8),
    ),
    "conv2d": (lambda: nn.Conv2d(3, 4, 3), lambda: torch.nn.Conv2d(3, 4, 3), (2, 3, 7, 6)),
    "conv2d_strided_padded_nobias": (
        lambda: nn.Conv2d(3, 4, (3, 2), stride=(2, 1), padding=(1, 2), bias=False),
        lambda: torch.nn.Conv2d(3, 4, (3, 2), stride=(2, 1), padding=(1, 2), bias=False),
        (2, 3, 7, 6),
    ),
    "conv2d_dilated_groups": (
        lambda: nn.Conv2d(4, 4, 3, padding=2, dilation=2, groups=4),
        lambda: torch.nn.Conv2d(4, 4, 3, padding=2, dilation=2, groups=4),
        (1, 4, 6, 6),
    ),
    "conv2d_same": (
        lambda: nn.Conv2d(2, 3, (3, 4), padding="same"),
        lambda: torch.nn.Conv2d(2, 3, (3, 4), padding="same"),
        (2, 2, 5, 6),
    ),
    "conv2d_circular": (
        lambda: nn.Conv2d(2, 3, 3, padding=1, padding_mode="circular"),
        lambda: torch.nn.Conv2d(2, 3, 3, padding=1, padding_mode="circular"),
        (2, 2, 5, 5),
    ),
    "conv2d_replicate": (
        lambda: nn.Conv2d(2, 3, 3, padding=(1, 2), padding_mode="replicate"),
        lambda: torch.nn.Conv2d(2, 3, 3, padding=(1, 2), padding_mode="replicate"),
        (1, 2, 5, 5),
    ),
    "conv_transpose1d": (
        lambda: nn.ConvTranspose1d(3, 4, 3, stride=2, padding=1, output_padding=1),
        lambda: torch.nn.ConvTranspose1d(3, 4, 3, stride=2, padding=1, output_padding=1),
        (2, 3, 5),
    ),
    "conv_transpose2d": (
        lambda: nn.ConvTranspose2d(3, 2, 3),
        lambda: torch.nn.ConvTranspose2d(3, 2, 3),
        (2, 3, 4, 5),
    ),
    "conv_transpose2d_strided_groups": (
        lambda: nn.ConvTranspose2d(4, 6, (3, 2), stride=(2, 3), padding=(1, 0), output_padding=(1, 2), groups=2),
        lambda: torch.nn.ConvTranspose2d(4, 6, (3, 2), stride=(2, 3), padding=(1, 0), output_padding=(1, 2), groups=2),
        (2, 4, 3, 4),
    ),
    "conv_transpose2d_dilated_nobias": (
        lambda: nn.ConvTranspose2d(2, 3, 3, dilation=2, bias=False),
        lambda: torch.nn.ConvTranspose2d(2, 3, 3, dilation=2, bias=False),
        (1, 2, 4, 4),
    ),
}


@pytest.mark.filterwarnings("ignore:Using padding='same'")  # torch's note on its own padding copy
@pytest.mark.parametrize("case", LINEAR_CONV)
def test_linear_and_conv_match_torch(case):
    make, make_torch, shape = LINEAR_CONV[case]
    check_against_torch(make(), make_torch(), randn(*shape))


NORMS = {
    "batchnorm1d_2d_input": (lambda: nn.BatchNorm1d(4), lambda: torch.nn.BatchNorm1d(4), (6, 4)),
    "batchnorm1d_3d_input": (lambda: nn.BatchNorm1d(3), lambda: torch.nn.BatchNorm1d(3), (4, 3, 5)),
    "batchnorm2d": (lambda: nn.BatchNorm2d(3), lambda: torch.nn.BatchNorm2d(3), (4, 3, 5, 2)),
    "batchnorm2d_no_affine": (
        lambda: nn.BatchNorm2d(3, affine=False),
        lambda: torch.nn.BatchNorm2d(3, affine=False),
        (2, 3, 4, 4),
    ),
    "batchnorm2d_untracked": (
        lambda: nn.BatchNorm2d(3, track_running_stats=False),
        lambda: torch.nn.BatchNorm2d(3, track_running_stats=False),
        (2, 3, 4, 4),
    ),
    "batchnorm3d": (lambda: nn.BatchNorm3d(2), lambda: torch.nn.BatchNorm3d(2), (3, 2, 2, 3, 2)),
    "layernorm": (lambda: nn.LayerNorm(6), lambda: torch.nn.LayerNorm(6), (3, 4, 6)),
    "layernorm_2dims_nobias": (
        lambda: nn.LayerNorm((4, 6), eps=1e-3, bias=False),
        lambda: torch.nn.LayerNorm((4, 6), eps=1e-3, bias=False),
        (3, 4, 6),
    ),
    "layernorm_no_affine": (
        lambda: nn.LayerNorm(6, elementwise_affine=False),
        lambda: torch.nn.LayerNorm(6, elementwise_affine=False),
        (3, 6),
    ),
    "rmsnorm": (lambda: nn.RMSNorm(6), lambda: torch.nn.RMSNorm(6), (3, 4, 6)),
    "rmsnorm_eps_2dims": (lambda: nn.RMSNorm((4, 6), eps=1e-2), lambda: torch.nn.RMSNorm((4, 6), eps=1e-2), (3, 4, 6)),
    "rmsnorm_no_affine": (
        lambda: nn.RMSNorm(6, elementwise_affine=False),
        lambda: torch.nn.RMSNorm(6, elementwise_affine=False),
        (3, 6),
    ),
    "groupnorm": (lambda: nn.GroupNorm(2, 6), lambda: torch.nn.GroupNorm(2, 6), (3, 6, 4, 2)),
    "groupnorm_3d_no_affine": (
        lambda: nn.GroupNorm(3, 3, affine=False),
        lambda: torch.nn.GroupNorm(3, 3, affine=False),
        (2, 3, 5),
    ),
    "instancenorm1d": (lambda: nn.InstanceNorm1d(3), lambda: torch.nn.InstanceNorm1d(3), (2, 3, 7)),
    "instancenorm1d_unbatched": (lambda: nn.InstanceNorm1d(3), lambda: torch.nn.InstanceNorm1d(3), (3, 7)),
    "instancenorm_tinygrad_default_affine": (
        lambda: nn.InstanceNorm(3),
        lambda: torch.nn.InstanceNorm2d(3, affine=True),
        (2, 3, 4, 5),
    ),
    "instancenorm2d_affine": (
        lambda: nn.InstanceNorm2d(3, affine=True),
        lambda: torch.nn.InstanceNorm2d(3, affine=True),
        (2, 3, 4, 5),
    ),
}


@pytest.mark.parametrize("train", [True, False], ids=["train", "eval"])
@pytest.mark.parametrize("case", NORMS)
def test_norms_match_torch(case, train):
    make, make_torch, shape = NORMS[case]
    check_against_torch(make(), make_torch(), randn(*shape) * 2 + 0.5, train=train)


def test_batchnorm_eval_uses_running_stats():
    tmod = torch.nn.BatchNorm2d(3)
    with torch.no_grad():  # non-trivial running statistics
        tmod.running_mean.copy_(torch.tensor([0.5, -1.0, 2.0]))
        tmod.running_var.copy_(torch.tensor([2.0, 0.5, 1.5]))
        tmod.weight.copy_(torch.tensor([1.5, 0.5, -1.0]))
    check_against_torch(nn.BatchNorm2d(3), tmod, randn(2, 3, 4, 4), train=False)


@pytest.mark.parametrize("momentum", [0.1, 0.3, None])
@pytest.mark.parametrize(
    "ours,theirs,shape",
    [
        (nn.BatchNorm2d, torch.nn.BatchNorm2d, (4, 3, 3, 2)),
        (nn.BatchNorm1d, torch.nn.BatchNorm1d, (5, 3)),
        (nn.InstanceNorm2d, torch.nn.InstanceNorm2d, (4, 3, 3, 2)),
    ],
    ids=["batchnorm2d", "batchnorm1d", "instancenorm2d"],
)
def test_running_stats_after_several_training_steps(ours, theirs, shape, momentum):
    kw = {"track_running_stats": True} if ours is nn.InstanceNorm2d else {}
    layer, tmod = ours(3, momentum=momentum, **kw), theirs(3, momentum=momentum, **kw)
    load_from_torch(layer, tmod)
    tmod.train()
    for step in range(3):
        x = randn(*shape, seed=step) * (step + 1) + step
        with Tensor.train(True):
            out = layer(Tensor(x))
        close(out, tmod(torch.tensor(x)), f"training output, step {step}")
        if momentum is None:  # see test_cumulative_running_stats_pending_over_several_steps
            Tensor.realize(layer.running_mean, layer.running_var, layer.num_batches_tracked)
    close(layer.running_mean, tmod.running_mean, "running_mean")
    close(layer.running_var, tmod.running_var, "running_var")
    assert layer.num_batches_tracked.dtype == dtypes.int64 and layer.num_batches_tracked.shape == ()
    assert layer.num_batches_tracked.item() == tmod.num_batches_tracked.item()  # 3, or 0 for InstanceNorm
    x = randn(*shape, seed=9)
    tmod.eval()
    with Tensor.train(False):  # eval: normalized by the running statistics, which stay as they are
        close(layer(Tensor(x)), tmod(torch.tensor(x)), "eval output")
    close(layer.running_mean, tmod.running_mean, "running_mean after eval")


def test_cumulative_running_stats_pending_over_several_steps():
    layer, tmod = nn.BatchNorm2d(3, momentum=None), torch.nn.BatchNorm2d(3, momentum=None)
    tmod.train()
    for step in range(3):  # the statistics stay pending: nothing realizes them between the steps
        x = randn(4, 3, 2, 2, seed=step) + step
        with Tensor.train(True):
            layer(Tensor(x))
        tmod(torch.tensor(x))
    close(layer.running_mean, tmod.running_mean, "running_mean")


def test_batchnorm_training_needs_more_than_one_value_per_channel():
    with Tensor.train(True), pytest.raises(ValueError, match="more than 1 value per channel"):
        nn.BatchNorm1d(3)(Tensor(randn(1, 3)))
    with pytest.raises(ValueError, match=r"expected 4D input"):
        nn.BatchNorm2d(3)(Tensor(randn(2, 3)))


def test_embedding_matches_torch():
    idx = np.array([[0, 3, 5], [5, 1, 0]], dtype=np.int64)
    check_against_torch(nn.Embedding(7, 4), torch.nn.Embedding(7, 4), idx)


@pytest.mark.parametrize("padding_idx", [None, 3])
def test_embedding_gradient_at_scale_matches_torch(padding_idx):
    """A big embedding's gradient (rows x tokens x dim past SCATTER_MIN_WORK) sums each row's tokens after a sort of
    the index instead of a one-hot product: equal to torch's, with rows picked many times, never, and a padding row."""
    from unigrad.gradient import SCATTER_MIN_WORK

    rows, dim = 3000, 96
    idx = np.random.default_rng(4).integers(0, rows // 10, (8, 40))  # rows 0..299 picked ~1 time each, the rest never
    idx[0, :10] = 7  # one row picked many times
    assert rows * idx.size * dim >= SCATTER_MIN_WORK
    check_against_torch(nn.Embedding(rows, dim, padding_idx), torch.nn.Embedding(rows, dim, padding_idx), idx)


def test_embedding_padding_idx_has_zero_row_and_no_gradient():
    layer = nn.Embedding(6, 3, padding_idx=2)
    assert np.all(layer.weight.numpy()[2] == 0) and np.any(layer.weight.numpy()[1] != 0)
    idx = np.array([2, 0, 2, 4], dtype=np.int64)
    check_against_torch(layer, torch.nn.Embedding(6, 3, padding_idx=2), idx)


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("with_state", [True, False])
def test_lstm_cell_matches_torch(bias, with_state):
    layer, tmod = nn.LSTMCell(4, 5, bias=bias), torch.nn.LSTMCell(4, 5, bias=bias)
    load_from_torch(layer, tmod)
    x, h0, c0 = randn(3, 4), randn(3, 5, seed=1), randn(3, 5, seed=2)
    xt, xu = torch.tensor(x, requires_grad=True), Tensor(x, requires_grad=True)
    ht, ct = tmod(xt, (torch.tensor(h0), torch.tensor(c0)) if with_state else None)
    hu, cu = layer(xu, (Tensor(h0), Tensor(c0)) if with_state else None)
    close(hu, ht, "h")
    close(cu, ct, "c")
    # two steps, so the second one's gradient flows through the first one's state
    ht2, ct2 = tmod(xt * 2, (ht, ct))
    hu2, cu2 = layer(xu * 2, (hu, cu))
    (ht2.sum() + (ct2 * ct2).sum()).backward()
    (hu2.sum() + (cu2 * cu2).sum()).backward()
    close(xu.grad, xt.grad, "input grad")
    ours = get_state_dict(layer)
    for name, p in tmod.named_parameters():
        close(ours[name].grad, p.grad, f"grad of {name}")


def test_dropout_train_and_eval():
    x = Tensor.ones(200, 50)
    layer = nn.Dropout(0.25)
    with Tensor.train(False):
        np.testing.assert_array_equal(layer(x).numpy(), 1.0)
    with Tensor.train(True):
        out = layer(x).numpy()
    assert set(np.unique(out)) <= {0.0, np.float32(1 / 0.75)}
    assert abs((out == 0).mean() - 0.25) < 0.02
    with Tensor.train(True):
        np.testing.assert_array_equal(nn.Dropout(0.0)(x).numpy(), 1.0)
    with pytest.raises(ValueError):
        nn.Dropout(1.5)


# ---------------------------------------------------------------- initialization


UNIFORM_INITS = {  # the layer, torch's, and the bound b of U(-b, b) per parameter (1/sqrt(fan_in) or 1/sqrt(hidden))
    "linear": (lambda: nn.Linear(300, 100), lambda: torch.nn.Linear(300, 100), {"weight": 300, "bias": 300}),
    "conv2d": (lambda: nn.Conv2d(16, 64, 3), lambda: torch.nn.Conv2d(16, 64, 3), {"weight": 144, "bias": 144}),
    "conv1d_groups": (
        lambda: nn.Conv1d(8, 128, 5, groups=2),
        lambda: torch.nn.Conv1d(8, 128, 5, groups=2),
        {"weight": 20, "bias": 20},
    ),
    "conv_transpose2d": (  # weight (C_in, C_out, k, k): fan_in is C_out * k * k
        lambda: nn.ConvTranspose2d(64, 16, 3),
        lambda: torch.nn.ConvTranspose2d(64, 16, 3),
        {"weight": 144, "bias": 144},
    ),
    "lstm_cell": (
        lambda: nn.LSTMCell(40, 50),
        lambda: torch.nn.LSTMCell(40, 50),
        {"weight_ih": 50, "weight_hh": 50, "bias_ih": 50, "bias_hh": 50},
    ),
}


@pytest.mark.parametrize("case", UNIFORM_INITS)
def test_uniform_inits_match_torch_bounds(case):
    make, make_torch, fans = UNIFORM_INITS[case]
    layer, theirs = make(), dict(make_torch().named_parameters())
    for name, fan in fans.items():
        ours, ref = getattr(layer, name).numpy(), theirs[name].detach().numpy()
        assert ours.shape == ref.shape and ours.dtype == np.float32
        bound = 1 / math.sqrt(fan)
        assert np.abs(ref).max() <= bound and np.abs(ours).max() <= bound, name
        if ours.size >= 200:  # extremes come close to the bound (P(max < 0.9 b) = 0.9**size)
            assert np.abs(ours).max() > 0.9 * bound, name
        if ours.size >= 1000:  # mean 0, std of U(-b, b) is b/sqrt(3)
            assert abs(ours.mean()) < 0.1 * bound, name
            assert abs(ours.std() - bound / math.sqrt(3)) < 0.05 * bound, name
            assert abs(ours.std() - ref.std()) < 0.06 * bound, name


def test_embedding_init_is_standard_normal():
    w = nn.Embedding(1000, 20).weight.numpy()
    assert abs(w.mean()) < 0.02 and abs(w.std() - 1) < 0.02


@pytest.mark.parametrize(
    "make,make_torch",
    [
        (lambda: nn.BatchNorm2d(5), lambda: torch.nn.BatchNorm2d(5)),
        (lambda: nn.LayerNorm((2, 3)), lambda: torch.nn.LayerNorm((2, 3))),
        (lambda: nn.RMSNorm(4), lambda: torch.nn.RMSNorm(4)),
        (lambda: nn.GroupNorm(2, 4), lambda: torch.nn.GroupNorm(2, 4)),
        (
            lambda: nn.InstanceNorm2d(3, affine=True, track_running_stats=True),
            lambda: torch.nn.InstanceNorm2d(3, affine=True, track_running_stats=True),
        ),
    ],
    ids=["batchnorm", "layernorm", "rmsnorm", "groupnorm", "instancenorm"],
)
def test_norm_inits_equal_torch(make, make_torch):
    ours = get_state_dict(make())
    for name, ref in make_torch().state_dict().items():
        assert ours[name].dtype.name == str(ref.dtype).removeprefix("torch."), name
        np.testing.assert_array_equal(ours[name].numpy(), ref.numpy(), err_msg=name)


def test_constant_inits_have_their_own_buffers():
    a, b = nn.LayerNorm(4), nn.LayerNorm(4)
    Tensor.realize(a.weight, b.weight)
    b.weight.assign(b.weight * 3).realize()
    np.testing.assert_array_equal(a.weight.numpy(), 1.0)
    np.testing.assert_array_equal(b.weight.numpy(), 3.0)


# ---------------------------------------------------------------- state-dict keys

STATE_DICT_CASES = {
    "linear": (lambda: nn.Linear(3, 2), lambda: torch.nn.Linear(3, 2)),
    "linear_nobias": (lambda: nn.Linear(3, 2, bias=False), lambda: torch.nn.Linear(3, 2, bias=False)),
    "conv1d": (lambda: nn.Conv1d(2, 4, 3), lambda: torch.nn.Conv1d(2, 4, 3)),
    "conv2d_nobias": (lambda: nn.Conv2d(2, 4, 3, bias=False), lambda: torch.nn.Conv2d(2, 4, 3, bias=False)),
    "conv_transpose1d": (lambda: nn.ConvTranspose1d(2, 4, 3), lambda: torch.nn.ConvTranspose1d(2, 4, 3)),
    "conv_transpose2d": (
        lambda: nn.ConvTranspose2d(2, 4, 3, groups=2),
        lambda: torch.nn.ConvTranspose2d(2, 4, 3, groups=2),
    ),
    "batchnorm1d": (lambda: nn.BatchNorm1d(3), lambda: torch.nn.BatchNorm1d(3)),
    "batchnorm2d": (lambda: nn.BatchNorm2d(3), lambda: torch.nn.BatchNorm2d(3)),
    "batchnorm2d_no_affine_untracked": (
        lambda: nn.BatchNorm2d(3, affine=False, track_running_stats=False),
        lambda: torch.nn.BatchNorm2d(3, affine=False, track_running_stats=False),
    ),
    "layernorm": (lambda: nn.LayerNorm(3), lambda: torch.nn.LayerNorm(3)),
    "layernorm_nobias": (lambda: nn.LayerNorm(3, bias=False), lambda: torch.nn.LayerNorm(3, bias=False)),
    "rmsnorm": (lambda: nn.RMSNorm(3), lambda: torch.nn.RMSNorm(3)),
    "groupnorm": (lambda: nn.GroupNorm(1, 3), lambda: torch.nn.GroupNorm(1, 3)),
    "instancenorm1d": (lambda: nn.InstanceNorm1d(3), lambda: torch.nn.InstanceNorm1d(3)),
    "instancenorm2d_full": (
        lambda: nn.InstanceNorm2d(3, affine=True, track_running_stats=True),
        lambda: torch.nn.InstanceNorm2d(3, affine=True, track_running_stats=True),
    ),
    "embedding": (lambda: nn.Embedding(5, 3), lambda: torch.nn.Embedding(5, 3)),
    "lstm_cell": (lambda: nn.LSTMCell(3, 4), lambda: torch.nn.LSTMCell(3, 4)),
    "lstm_cell_nobias": (lambda: nn.LSTMCell(3, 4, bias=False), lambda: torch.nn.LSTMCell(3, 4, bias=False)),
    "dropout": (lambda: nn.Dropout(0.1), lambda: torch.nn.Dropout(0.1)),
}


@pytest.mark.parametrize("case", STATE_DICT_CASES)
def test_state_dict_keys_and_shapes_equal_torch(case):
    make, make_torch = STATE_DICT_CASES[case]
    ours = {k: v.shape for k, v in get_state_dict(make()).items()}
    theirs = {k: tuple(v.shape) for k, v in dict(make_torch().state_dict()).items()}
    assert ours == theirs


def test_parameters_and_buffers_requires_grad():
    bn = nn.BatchNorm2d(3)
    assert bn.weight._requires_grad is True and bn.bias._requires_grad is True  # from birth, as torch's
    assert bn.running_mean.requires_grad is False and bn.num_batches_tracked.requires_grad is False
