"""What a module's parameters are, in each flavor (unigrad/flavor.py: parameters_require_grad, attribute_parameters).

torch's facade: a parameter (nn.Parameter, a layer's weight) requires grad from birth, and only parameters and
registered buffers are a module's state (`self.src_mask = mask` is a plain attribute). tinygrad's native flavor:
a layer's parameters start undecided (turned on by an optimizer or by a backward() reaching them) and the attribute
walk finds state (any float leaf tensor attribute is a parameter). Checked against torch where torch has an answer.
"""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest
import torch

from unigrad import Context, Tensor, nn, no_grad
from unigrad.nn import optim
from unigrad.nn.state import get_parameters, get_state_dict

FLAVORS = ["tinygrad", "torch"]


def _randn(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("flavor", FLAVORS)
def test_layer_parameters_require_grad_by_flavor(flavor):
    """torch: on from birth (what requires_grad_() gives); tinygrad: undecided, reading True, until an optimizer."""
    with Context(FLAVOR=flavor):
        lin = nn.Linear(3, 2)
        assert lin.weight.requires_grad is True and lin.bias.requires_grad is True  # what both read
        assert lin.weight._requires_grad is (True if flavor == "torch" else None)
        assert lin.weight.is_leaf and lin.weight.grad_fn is None
        out = lin(Tensor(_randn(4, 3)))
        assert out.requires_grad is (True if flavor == "torch" else None)  # tinygrad: the forward tracks nothing yet
        optim.SGD(lin.parameters(), lr=0.1)
        assert lin.weight._requires_grad is True  # the optimizer turned it on (torch's already was)


@pytest.mark.parametrize("flavor", FLAVORS)
def test_parameter_marks_and_frozen_parameters(flavor):
    """nn.Parameter(t) is a parameter in both flavors, frozen or not, and survives copy.deepcopy and pickle; a
    tensor that merely requires grad is one only in tinygrad's flavor (its attribute walk's test)."""
    with Context(FLAVOR=flavor):
        p, frozen = nn.Parameter(Tensor(_randn(3))), nn.Parameter(Tensor(_randn(2)), requires_grad=False)
        assert isinstance(p, nn.Parameter) and isinstance(frozen, nn.Parameter) and frozen.requires_grad is False
        assert isinstance(Tensor(_randn(3), requires_grad=True), nn.Parameter) is (flavor == "tinygrad")
        assert not isinstance(p * 2, nn.Parameter) and not isinstance(Tensor([1, 2]), nn.Parameter)
        lin = nn.Linear(2, 2)
        for t in (copy.deepcopy(p), copy.deepcopy(lin).weight, pickle.loads(pickle.dumps(frozen))):
            assert isinstance(t, nn.Parameter)
        assert pickle.loads(pickle.dumps(frozen)).requires_grad is False
        # an undecided parameter stays undecided through a copy (tinygrad's), an on one stays on (torch's)
        assert copy.deepcopy(lin).weight._requires_grad is lin.weight._requires_grad
        assert pickle.loads(pickle.dumps(lin.weight))._requires_grad is lin.weight._requires_grad

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.scale = p
                self.frozen = frozen
                self.lin = lin

        assert [k for k, _ in Net().named_parameters()] == ["scale", "frozen", "lin.weight", "lin.bias"]


class _MaskedNet(nn.Module):
    """Sets a float tensor attribute in forward (an additive mask), as the word-language-model Transformer does."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.frozen = Tensor(_randn(4), requires_grad=False)  # an unregistered tensor that asks for no grad
        self.src_mask = None

    def forward(self, x: Tensor) -> Tensor:
        if self.src_mask is None or self.src_mask.shape[0] != x.shape[0]:
            self.src_mask = Tensor.ones(x.shape[0], 4).triu(1) + 0.5
        return self.lin(x) * self.src_mask + self.frozen


def test_torch_flavor_only_parameters_and_buffers_are_state():
    """torch's rule: the mask set in forward and the unregistered tensor are plain attributes: in neither
    parameters(), state_dict() nor nn.state's walk of the module, and a manual SGD loop over parameters() runs."""
    with Context(FLAVOR="torch"):
        net = _MaskedNet()
        x = Tensor(_randn(3, 4))
        losses = []
        for _ in range(3):
            loss = net(x).square().mean()
            losses.append(loss.item())  # read before backward(), as torch allows
            for p in net.parameters():
                p.grad = None
            loss.backward()
            with no_grad():
                for p in net.parameters():
                    p.data.add_(p.grad, alpha=-0.1)  # every parameter has a .grad: none is a mask
        assert losses[-1] < losses[0]
        assert [k for k, _ in net.named_parameters()] == ["lin.weight", "lin.bias"]
        assert list(net.state_dict()) == ["lin.weight", "lin.bias"] == list(get_state_dict(net))
        assert len(get_parameters(net)) == 2 and list(net.buffers()) == []
        state = {k: Tensor(np.zeros(v.shape, np.float32)) for k, v in net.state_dict().items()}
        assert net.load_state_dict(state) == ([], [])  # strict: the mask is no missing key
        np.testing.assert_equal(net.lin.bias.numpy(), np.zeros(4))
        # the same in torch: a plain tensor attribute is not state
        tnet = torch.nn.Module()
        tnet.lin, tnet.src_mask = torch.nn.Linear(4, 4), torch.zeros(3, 4)
        assert list(tnet.state_dict()) == ["lin.weight", "lin.bias"]


def test_tinygrad_flavor_walks_tensor_attributes():
    """tinygrad's rule: the attribute walk finds state: a float leaf attribute is a parameter, one marked
    requires_grad=False a buffer; a plain object holding layers is found through nn.state.get_parameters."""
    with Context(FLAVOR="tinygrad"):
        net = _MaskedNet()
        net(Tensor(_randn(3, 4)))
        assert [k for k, _ in net.named_parameters()] == ["src_mask", "lin.weight", "lin.bias"]
        assert [k for k, _ in net.named_buffers()] == ["frozen"]

        class Plain:  # not a Module: tinygrad style
            def __init__(self):
                self.w = Tensor(_randn(2, 2))
                self.layer = nn.Linear(2, 2)

        assert len(get_parameters(Plain())) == 3


@pytest.mark.parametrize("flavor", FLAVORS)
def test_deepcopied_layers_all_get_gradients(flavor):
    """nn.TransformerEncoder deep-copies its layer: after that, backward() must still fill .grad of every
    parameter (the embedding, the copies, the final norm and the head), in both flavors, as torch does."""
    with Context(FLAVOR=flavor):
        emb = nn.Embedding(11, 8)
        enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0), 2, norm=nn.LayerNorm(8))
        head = nn.Linear(8, 11)
        tokens = Tensor(np.random.default_rng(0).integers(0, 11, (5, 2)))
        loss = head(enc(emb(tokens))).square().mean()
        loss.backward()
        params = [*emb.named_parameters(), *enc.named_parameters(), *head.named_parameters()]
        missing = [name for name, p in params if p.grad is None]
        assert not missing
    temb, thead = torch.nn.Embedding(11, 8), torch.nn.Linear(8, 11)
    tenc = torch.nn.TransformerEncoder(
        torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0),
        2,
        norm=torch.nn.LayerNorm(8),
        enable_nested_tensor=False,
    )
    thead(tenc(temb(torch.from_numpy(tokens.numpy())))).square().mean().backward()
    tparams = [*temb.parameters(), *tenc.parameters(), *thead.parameters()]
    assert len(params) == len(tparams) and all(p.grad is not None for p in tparams)


def test_torch_flavor_manual_sgd_matches_torch():
    """loss.item() before backward(), then SGD on p.data without an optimizer: the same losses as torch."""
    tmod = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
    xn, yn = _randn(16, 5), _randn(16, 1, seed=1)
    with Context(FLAVOR="torch"):
        ours = nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 1))
        ours.load_state_dict({k: Tensor(v.detach().numpy().copy()) for k, v in tmod.state_dict().items()})
        x, y = Tensor(xn), Tensor(yn)
        got = []
        for _ in range(4):
            loss = (ours(x) - y).square().mean()
            got.append(loss.item())
            ours.zero_grad()
            loss.backward()
            with no_grad():
                for p in ours.parameters():
                    p.data.add_(p.grad, alpha=-0.2)
    want = []
    tx, ty = torch.from_numpy(xn), torch.from_numpy(yn)
    for _ in range(4):
        loss = (tmod(tx) - ty).square().mean()
        want.append(loss.item())
        tmod.zero_grad()
        loss.backward()
        with torch.no_grad():
            for p in tmod.parameters():
                p.data.add_(p.grad, alpha=-0.2)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
