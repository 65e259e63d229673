"""unigrad.nn's recurrent layers (RNN, LSTM, GRU and their cells) against torch.nn: torch's state dict loaded into
ours -> the same outputs, final states and gradients (of the input, the initial states and every parameter);
torch's parameter names, shapes, initialization and repr; dropout between layers; errors for bad shapes."""

import math
import warnings

import numpy as np
import pytest
import torch

from unigrad import Tensor, nn
from unigrad.nn.state import get_state_dict

ATOL, RTOL = 1e-4, 1e-3


def randn(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def load_from_torch(layer: nn.Module, tmod: torch.nn.Module) -> None:
    """torch's parameters copied into ours (via numpy), requiring grad."""
    for key, value in tmod.state_dict().items():
        setattr(layer, key, Tensor(value.detach().numpy().copy(), requires_grad=True))


def close(ours: Tensor, ref: torch.Tensor, what: str) -> None:
    assert ours.shape == tuple(ref.shape), (what, ours.shape, tuple(ref.shape))
    np.testing.assert_allclose(ours.numpy(), ref.detach().numpy(), atol=ATOL, rtol=RTOL, err_msg=what)


def flat(out: object) -> list:
    """The tensors of a forward's result, in order: (output, h_n) or (output, (h_n, c_n)) or a cell's h / (h, c)."""
    if isinstance(out, (tuple, list)):
        return [t for item in out for t in flat(item)]
    return [out]


def compare(layer: nn.Module, tmod: torch.nn.Module, x: np.ndarray, hx: list[np.ndarray] | None, view=None) -> None:
    """Forward both on x (and hx, a list of arrays: [h_0] or [h_0, c_0]), compare every result, then backward
    through a random projection of all of them and compare the gradients of x, hx and every parameter.
    `view(t)` (the same for both libraries) makes the input from x, e.g. a transposed view."""
    load_from_torch(layer, tmod)
    view = view or (lambda t: t)
    xt, xu = torch.tensor(x, requires_grad=True), Tensor(x, requires_grad=True)
    ht = None if hx is None else [torch.tensor(h, requires_grad=True) for h in hx]
    hu = None if hx is None else [Tensor(h, requires_grad=True) for h in hx]
    takes_pair = isinstance(tmod, (torch.nn.LSTM, torch.nn.LSTMCell))  # hx is (h_0, c_0), else h_0 alone
    refs = flat(tmod(view(xt), None if ht is None else tuple(ht) if takes_pair else ht[0]))
    outs = flat(layer(view(xu), None if hu is None else tuple(hu) if takes_pair else hu[0]))
    Tensor.realize(*outs)
    assert len(outs) == len(refs)
    for i, (ours, ref) in enumerate(zip(outs, refs)):
        close(ours, ref, f"result {i}")
    projections = [randn(*r.shape, seed=10 + i) for i, r in enumerate(refs)]
    sum(((r * torch.tensor(p)).sum() for r, p in zip(refs, projections)), torch.tensor(0.0)).backward()
    loss = outs[0] * Tensor(projections[0])
    sum(((o * Tensor(p)).sum() for o, p in zip(outs[1:], projections[1:])), loss.sum()).backward()
    params = get_state_dict(layer)
    names = [name for name, _ in tmod.named_parameters()]
    ours_grads = [xu.grad] + [h.grad for h in hu or []] + [params[name].grad for name in names]
    Tensor.realize(*ours_grads)  # one schedule for all of them: the backward graph is shared
    ref_grads = [xt.grad] + [h.grad for h in ht or []] + [p.grad for _, p in tmod.named_parameters()]
    labels = ["input"] + [f"hx[{i}]" for i in range(len(ht or []))] + names
    for label, ours, ref in zip(labels, ours_grads, ref_grads):
        close(ours, ref, f"grad of {label}")


def states(mode: str, shape: tuple[int, ...], proj_size: int = 0, seed: int = 1) -> list[np.ndarray]:
    """Random initial states: h_0 (with proj_size features when set) and, for LSTM, c_0."""
    h_shape = shape[:-1] + (proj_size,) if proj_size else shape
    return [randn(*h_shape, seed=seed)] + ([randn(*shape, seed=seed + 1)] if mode == "LSTM" else [])


# ---------------------------------------------------------------- layers against torch

# name: (mode, constructor kwargs, input shape as the layer reads it, hidden_size, whether hx is given). Sequences
# are short: each step adds kernels to the backward graph, and compiling those is most of this file's time.
LAYER_CASES = {
    "rnn_tanh": ("RNN", {}, (3, 2, 3), 4, True),
    "rnn_relu_bidirectional": ("RNN", {"nonlinearity": "relu", "bidirectional": True}, (3, 2, 3), 4, True),
    "rnn_hidden1_2layers": ("RNN", {"num_layers": 2}, (2, 2, 3), 1, True),
    "lstm_no_hx": ("LSTM", {}, (3, 2, 3), 4, False),
    "lstm_2layers_bidirectional_batch_first": (
        "LSTM",
        {"num_layers": 2, "bidirectional": True, "batch_first": True},
        (2, 2, 3),
        4,
        True,
    ),
    "lstm_proj_2layers_bidirectional": (
        "LSTM",
        {"num_layers": 2, "bidirectional": True, "proj_size": 2},
        (2, 2, 3),
        4,
        True,
    ),
    "lstm_no_bias_odd_sizes": ("LSTM", {"bias": False}, (2, 3, 7), 3, True),
    "lstm_seq_len1_2layers": ("LSTM", {"num_layers": 2}, (1, 2, 3), 4, True),
    "gru": ("GRU", {}, (3, 2, 3), 4, True),
    "gru_2layers_bidirectional_batch_first_no_bias": (
        "GRU",
        {"num_layers": 2, "bidirectional": True, "batch_first": True, "bias": False},
        (2, 2, 3),
        4,
        True,
    ),
    "gru_batch1_no_hx": ("GRU", {}, (3, 1, 3), 4, False),
    "gru_hidden1": ("GRU", {}, (2, 2, 3), 1, True),
}


def make_pair(mode: str, input_size: int, hidden_size: int, **kwargs) -> tuple[nn.Module, torch.nn.Module]:
    torch.manual_seed(0)
    return getattr(nn, mode)(input_size, hidden_size, **kwargs), getattr(torch.nn, mode)(
        input_size, hidden_size, **kwargs
    )


def hx_shape(kwargs: dict, batch: int | None, hidden: int) -> tuple[int, ...]:
    stacks = kwargs.get("num_layers", 1) * (2 if kwargs.get("bidirectional") else 1)
    return (stacks, hidden) if batch is None else (stacks, batch, hidden)


@pytest.mark.filterwarnings("ignore:LSTM with projections is not supported with oneDNN")  # torch's, harmless
@pytest.mark.parametrize("case", LAYER_CASES)
def test_layer_matches_torch(case):
    mode, kwargs, shape, hidden, with_hx = LAYER_CASES[case]
    layer, tmod = make_pair(mode, shape[-1], hidden, **kwargs)
    batch = shape[0] if kwargs.get("batch_first") else shape[1]
    hx = states(mode, hx_shape(kwargs, batch, hidden), kwargs.get("proj_size", 0)) if with_hx else None
    compare(layer, tmod, randn(*shape), hx)


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
def test_unbatched_input_matches_torch(mode):
    kwargs = {"bidirectional": True, "batch_first": True}  # batch_first does not apply to an unbatched input
    layer, tmod = make_pair(mode, 3, 4, **kwargs)
    compare(layer, tmod, randn(2, 3), states(mode, hx_shape(kwargs, None, 4)))


def test_unbatched_input_without_hx_matches_torch():
    layer, tmod = make_pair("RNN", 3, 4, num_layers=2)
    compare(layer, tmod, randn(3, 3), None)


def test_non_contiguous_input_matches_torch():
    """A transposed view (N, L, H_in) -> (L, N, H_in): the gradient lands on the untransposed tensor."""
    layer, tmod = make_pair("LSTM", 3, 4)
    compare(layer, tmod, randn(2, 3, 3), states("LSTM", (1, 2, 4)), view=lambda t: t.transpose(0, 1))


# ---------------------------------------------------------------- cells against torch

CELL_CASES = {
    "rnn_cell_tanh": (lambda: nn.RNNCell(3, 4), lambda: torch.nn.RNNCell(3, 4), 1),
    "rnn_cell_relu_no_bias": (
        lambda: nn.RNNCell(3, 4, bias=False, nonlinearity="relu"),
        lambda: torch.nn.RNNCell(3, 4, bias=False, nonlinearity="relu"),
        1,
    ),
    "gru_cell": (lambda: nn.GRUCell(3, 4), lambda: torch.nn.GRUCell(3, 4), 1),
    "gru_cell_no_bias": (lambda: nn.GRUCell(3, 4, bias=False), lambda: torch.nn.GRUCell(3, 4, bias=False), 1),
    "lstm_cell": (lambda: nn.LSTMCell(3, 4), lambda: torch.nn.LSTMCell(3, 4), 2),
}


@pytest.mark.parametrize("case", CELL_CASES)
@pytest.mark.parametrize("batched", [True, False])
def test_cell_matches_torch(case, batched):
    make, make_torch, n_states = CELL_CASES[case]
    torch.manual_seed(0)
    layer, tmod = make(), make_torch()
    shape = (2,) if batched else ()
    hx = [randn(*shape, 4, seed=1 + i) for i in range(n_states)]
    compare(layer, tmod, randn(*shape, 3), hx)


@pytest.mark.parametrize("case", CELL_CASES)
def test_cell_two_steps_without_state_matches_torch(case):
    """No hx (zeros), then a second step from the first one's state: the gradient flows through both."""
    make, make_torch, _ = CELL_CASES[case]
    torch.manual_seed(0)
    layer, tmod = make(), make_torch()
    load_from_torch(layer, tmod)
    x = randn(2, 3)
    xt, xu = torch.tensor(x, requires_grad=True), Tensor(x, requires_grad=True)
    ref, out = tmod(xt), layer(xu)
    ref2, out2 = tmod(xt * 2, ref), layer(xu * 2, out)
    for ours, theirs in zip(flat(out2), flat(ref2)):
        close(ours, theirs, "second step")
    sum(t.sum() for t in flat(ref2)).backward()
    sum(t.sum() for t in flat(out2)).backward()
    close(xu.grad, xt.grad, "input grad")


# ---------------------------------------------------------------- dropout and modes


def test_dropout_is_off_in_eval_mode():
    layer, tmod = make_pair("GRU", 3, 4, num_layers=3, dropout=0.5)
    load_from_torch(layer, tmod)
    layer.eval()
    tmod.eval()
    x = randn(3, 2, 3)
    out, h = layer(Tensor(x))
    ref, ref_h = tmod(torch.tensor(x))
    close(out, ref, "output")
    close(h, ref_h, "h_n")


def test_train_mode_without_dropout_matches_torch():
    layer, tmod = make_pair("LSTM", 3, 4, num_layers=2)
    load_from_torch(layer, tmod)
    layer.train()
    tmod.train()
    x = randn(3, 2, 3)
    for ours, ref in zip(flat(layer(Tensor(x))), flat(tmod(torch.tensor(x)))):
        close(ours, ref, "train mode")


def test_dropout_between_layers_in_train_mode():
    """dropout=1 zeroes every layer's output but the last's (a deterministic check against torch), and a
    dropout in (0, 1) changes the output in train mode only."""
    layer, tmod = make_pair("RNN", 3, 4, num_layers=2, dropout=1.0)
    load_from_torch(layer, tmod)
    layer.train()
    tmod.train()
    x = randn(3, 2, 3)
    for ours, ref in zip(flat(layer(Tensor(x))), flat(tmod(torch.tensor(x)))):
        close(ours, ref, "dropout 1")
    layer = nn.RNN(3, 4, num_layers=2, dropout=0.5)
    evaluated = layer.eval()(Tensor(x))[0].numpy()
    trained = layer.train()(Tensor(x))[0].numpy()
    assert evaluated.shape == trained.shape and not np.allclose(evaluated, trained)


def test_dropout_with_one_layer_warns_as_torch():
    with pytest.warns(UserWarning, match="num_layers greater than 1"):
        nn.GRU(3, 4, dropout=0.2)


# ---------------------------------------------------------------- parameters: names, shapes, init, repr

STATE_CASES = {
    "rnn": ("RNN", {"num_layers": 2, "bidirectional": True, "nonlinearity": "relu"}),
    "lstm": ("LSTM", {"num_layers": 3}),
    "lstm_proj_bidirectional": ("LSTM", {"num_layers": 2, "bidirectional": True, "proj_size": 3}),
    "gru_no_bias_bidirectional": ("GRU", {"num_layers": 2, "bidirectional": True, "bias": False}),
}


@pytest.mark.parametrize("case", STATE_CASES)
def test_state_dict_keys_shapes_and_repr_equal_torch(case):
    mode, kwargs = STATE_CASES[case]
    layer, tmod = make_pair(mode, 5, 6, **kwargs)
    ours = [(k, v.shape) for k, v in layer.state_dict().items()]
    assert ours == [(k, tuple(v.shape)) for k, v in tmod.state_dict().items()]
    assert [n for n, _ in layer.named_parameters()] == [n for n, _ in tmod.named_parameters()]
    assert repr(layer) == repr(tmod)
    assert [[w.shape for w in ws] for ws in layer.all_weights] == [
        [tuple(w.shape) for w in ws] for ws in tmod.all_weights
    ]


def test_torch_state_dict_loads_and_runs():
    layer, tmod = make_pair("LSTM", 3, 4, bidirectional=True)
    layer.load_state_dict({k: Tensor(v.numpy()) for k, v in tmod.state_dict().items()})
    layer.flatten_parameters()  # torch code calls it; nothing to do here
    x = randn(3, 2, 3)
    for ours, ref in zip(flat(layer(Tensor(x))), flat(tmod(torch.tensor(x)))):
        close(ours, ref, "after load_state_dict")


def test_init_is_uniform_within_one_over_sqrt_hidden():
    Tensor.manual_seed(0)
    hidden = 16
    bound = 1 / math.sqrt(hidden)
    layers = (
        nn.LSTM(8, hidden, num_layers=2, proj_size=4),
        nn.GRU(8, hidden),
        nn.RNN(8, hidden),
        nn.GRUCell(8, hidden),
    )
    for layer in layers:
        params = dict(layer.named_parameters())
        Tensor.realize(*params.values())
        assert all(p._requires_grad is True for p in params.values())  # the torch flavor: on from birth
        for name, p in params.items():
            assert np.abs(p.numpy()).max() <= bound and p.numpy().std() > 0.3 * bound, name
        values = np.concatenate([p.numpy().ravel() for p in params.values()])  # U(-b, b): mean 0, std b/sqrt(3)
        assert np.abs(values).max() > 0.95 * bound and abs(values.mean()) < 0.05 * bound
        assert abs(values.std() - bound / math.sqrt(3)) < 0.05 * bound


def test_cell_repr_equals_torch():
    assert repr(nn.RNNCell(3, 4, bias=False, nonlinearity="relu")) == repr(
        torch.nn.RNNCell(3, 4, bias=False, nonlinearity="relu")
    )
    assert repr(nn.GRUCell(3, 4)) == repr(torch.nn.GRUCell(3, 4))
    assert repr(nn.LSTMCell(3, 4, bias=False)) == repr(torch.nn.LSTMCell(3, 4, bias=False))


# ---------------------------------------------------------------- errors


def test_layer_input_errors():
    lstm = nn.LSTM(3, 4, batch_first=True)
    with pytest.raises(ValueError, match=r"LSTM: Expected input to be 2D .* got 4D input of shape \(1, 2, 3, 3\)"):
        lstm(Tensor.zeros(1, 2, 3, 3))
    with pytest.raises(ValueError, match=r"GRU: Expected input to be 2D .* got 1D input"):
        nn.GRU(3, 4)(Tensor.zeros(3))
    with pytest.raises(RuntimeError, match=r"LSTM: input.size\(-1\) must be equal to input_size. Expected 3, got 5"):
        lstm(Tensor.zeros(2, 4, 5))
    with pytest.raises(RuntimeError, match=r"RNN: .*Expected 3, got 2 \(input shape \(4, 2\)\)"):
        nn.RNN(3, 4)(Tensor.zeros(4, 2))
    with pytest.raises(RuntimeError, match=r"RNN: Expected sequence length to be larger than 0, got .* \(2, 0, 3\)"):
        nn.RNN(3, 4, batch_first=True)(Tensor.zeros(2, 0, 3))


def test_layer_hidden_state_errors():
    gru = nn.GRU(3, 4, num_layers=2)
    with pytest.raises(RuntimeError, match=r"GRU: Expected h_0 of shape \(2, 5, 4\) .* got \(1, 5, 4\)"):
        gru(Tensor.zeros(3, 5, 3), Tensor.zeros(1, 5, 4))
    with pytest.raises(RuntimeError, match=r"GRU: Expected h_0 of shape \(2, 4\) .*unbatched input, got \(2, 1, 4\)"):
        gru(Tensor.zeros(3, 3), Tensor.zeros(2, 1, 4))
    lstm = nn.LSTM(3, 4, proj_size=2, bidirectional=True)
    h, c = Tensor.zeros(2, 5, 2), Tensor.zeros(2, 5, 4)
    lstm(Tensor.zeros(3, 5, 3), (h, c))  # h_0 has proj_size features, c_0 hidden_size
    with pytest.raises(RuntimeError, match=r"LSTM: Expected h_0 of shape \(2, 5, 2\) .*proj_size.*got \(2, 5, 4\)"):
        lstm(Tensor.zeros(3, 5, 3), (c, c))
    with pytest.raises(RuntimeError, match=r"LSTM: Expected c_0 of shape \(2, 5, 4\) .*got \(2, 5, 2\)"):
        lstm(Tensor.zeros(3, 5, 3), (h, h))
    with pytest.raises(TypeError, match=r"LSTM: Expected hx to be a tuple \(h_0, c_0\), got Tensor"):
        lstm(Tensor.zeros(3, 5, 3), h)


def test_cell_errors():
    with pytest.raises(ValueError, match=r"LSTMCell: Expected input to be 1D or 2D, got 3D input of shape \(1, 2, 3\)"):
        nn.LSTMCell(3, 4)(Tensor.zeros(1, 2, 3))
    with pytest.raises(RuntimeError, match=r"GRUCell: input has inconsistent input_size: got 5, expected 3"):
        nn.GRUCell(3, 4)(Tensor.zeros(2, 5))
    with pytest.raises(RuntimeError, match=r"RNNCell: Expected hx of shape \(2, 4\) .* got \(3, 4\)"):
        nn.RNNCell(3, 4)(Tensor.zeros(2, 3), Tensor.zeros(3, 4))
    with pytest.raises(RuntimeError, match=r"LSTMCell: Expected c of shape \(4,\) .* got \(1, 4\)"):
        nn.LSTMCell(3, 4)(Tensor.zeros(3), (Tensor.zeros(4), Tensor.zeros(1, 4)))
    with pytest.raises(TypeError, match=r"LSTMCell: Expected hx to be a tuple \(h, c\), got Tensor"):
        nn.LSTMCell(3, 4)(Tensor.zeros(2, 3), Tensor.zeros(2, 4))


def test_constructor_errors():
    with pytest.raises(ValueError, match="Unknown nonlinearity 'gelu'"):
        nn.RNN(3, 4, nonlinearity="gelu")
    with pytest.raises(ValueError, match="Unknown nonlinearity 'sigmoid'"):
        nn.RNNCell(3, 4, nonlinearity="sigmoid")
    with pytest.raises(ValueError, match="proj_size has to be smaller than hidden_size"):
        nn.LSTM(3, 4, proj_size=4)
    with pytest.raises(ValueError, match="dropout should be a number in range"):
        nn.GRU(3, 4, num_layers=2, dropout=1.5)
    with pytest.raises(ValueError, match="num_layers must be greater than zero"):
        nn.LSTM(3, 4, num_layers=0)
    with pytest.raises(ValueError, match="hidden_size must be greater than zero"):
        nn.GRU(3, 0)
    with pytest.raises(TypeError, match="batch_first should be of type bool"):
        nn.RNN(3, 4, batch_first=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nn.LSTM(3, 4, num_layers=2, dropout=0.3)  # no warning with more than one layer


@pytest.mark.parametrize("mode", ["LSTM", "GRU", "RNN"])
def test_steps_are_traced_calls(mode):
    """A layer's steps (and a cell's) are calls of the step function traced once per argument kinds: the forward
    graph holds one call per step, not the step's ~20 ops, and the backward one call of the step's gradient body per
    step (gradient._vjp_of), so a step's Python cost does not grow with its ops; results and gradients equal torch's
    (a 5-step sequence, batch 3, odd sizes)."""
    from unigrad.ir.ops import Ops
    from unigrad.ir.uop import UOp

    steps = 5
    layer, tmod = make_pair(mode, 3, 5)
    load_from_torch(layer, tmod)
    x = randn(steps, 3, 3, seed=4)
    xu, xt = Tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out = layer(xu)[0]
    calls = [u for u in out.uop.toposort() if u.op is Ops.FUNCTION and u.arg.name.endswith("_step")]
    assert len(calls) == steps, [u.arg.name for u in calls]
    out.square().sum().backward()
    tmod(xt)[0].square().sum().backward()
    grads = UOp(Ops.TUPLE, (xu.grad.uop, layer.weight_hh_l0.grad.uop)).toposort()
    assert sum(u.op is Ops.FUNCTION and u.arg.name.endswith("_step.vjp") for u in grads) == steps
    close(xu.grad, xt.grad, "grad of input")
    close(layer.weight_hh_l0.grad, tmod.weight_hh_l0.grad, "grad of weight_hh_l0")
    cell = getattr(nn, mode + "Cell")(3, 5)
    state = cell(Tensor(x[0]))
    first = state[0] if mode == "LSTM" else state
    assert any(u.op is Ops.FUNCTION for u in first.uop.toposort())
