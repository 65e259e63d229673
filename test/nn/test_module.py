"""unigrad.nn.Module, its containers, the torch-named wrapper modules and nn.init, against torch.nn.

Models built with the same constructor calls in both libraries get torch's weights through our load_state_dict;
outputs and gradients (of inputs and of parameters) must then agree. Also: parameter/buffer/state-dict names
equal torch's for nested containers, train/eval behaviour, hooks, a training loop step by step, init statistics,
and the errors of bad loads and bad indexing."""

from __future__ import annotations

import copy
import math
from collections import OrderedDict
from typing import Any

import numpy as np
import pytest
import torch

from unigrad import Tensor, dtypes, nn
from unigrad.nn import optim
from unigrad.nn.state import get_parameters, get_state_dict

ATOL, RTOL = 1e-4, 1e-3


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def randn(*shape: int, seed: int = 0) -> np.ndarray:
    return rng(seed).standard_normal(shape).astype(np.float32)


def close(ours: Tensor, ref: torch.Tensor, what: str = "") -> None:
    assert ours.shape == tuple(ref.shape), (what, ours.shape, tuple(ref.shape))
    np.testing.assert_allclose(ours.numpy(), ref.detach().numpy(), atol=ATOL, rtol=RTOL, err_msg=what)


def load_torch_state(ours: nn.Module, tmod: torch.nn.Module) -> None:
    """torch's state (parameters and buffers) into ours through Module.load_state_dict; parameters then track
    gradients."""
    ours.load_state_dict({k: Tensor(v.detach().numpy().copy()) for k, v in tmod.state_dict().items()})
    ours.requires_grad_(True)


def compare_grads(ours: nn.Module, tmod: torch.nn.Module) -> None:
    theirs = dict(tmod.named_parameters())
    mine = dict(ours.named_parameters())
    assert list(mine) == list(theirs)
    for name, p in theirs.items():
        if p.grad is None:
            assert mine[name].grad is None, name
        else:
            close(mine[name].grad, p.grad, f"grad of {name}")


# ---------------------------------------------------------------- names: parameters, buffers, state dicts


def build_nest(lib: Any) -> Any:
    """The same nest of containers in either library (`lib` is torch.nn or unigrad.nn)."""
    block = lib.Sequential(
        OrderedDict([("conv", lib.Conv2d(2, 3, 3)), ("bn", lib.BatchNorm2d(3)), ("act", lib.ReLU())])
    )
    heads = lib.ModuleDict({"cls": lib.Linear(3, 2), "reg": lib.Sequential(lib.Linear(3, 1), lib.Tanh())})
    layers = lib.ModuleList([lib.Linear(4, 4), lib.LayerNorm(4), lib.Linear(4, 3, bias=False)])
    return lib.Sequential(block, lib.Flatten(), layers, heads, lib.Embedding(5, 2))


def test_names_equal_torch_for_nested_containers():
    ours, theirs = build_nest(nn), build_nest(torch.nn)
    ours.add_module("norm", nn.BatchNorm1d(3, bias=False))
    theirs.add_module("norm", torch.nn.BatchNorm1d(3, bias=False))
    assert [k for k, _ in ours.named_parameters()] == [k for k, _ in theirs.named_parameters()]
    assert [k for k, _ in ours.named_buffers()] == [k for k, _ in theirs.named_buffers()]
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [k for k, _ in ours.named_modules()] == [k for k, _ in theirs.named_modules()]
    assert [k for k, _ in ours.named_children()] == [k for k, _ in theirs.named_children()]
    for (k, p), (_, tp) in zip(ours.state_dict().items(), theirs.state_dict().items()):
        assert p.shape == tuple(tp.shape), k
    # the attribute walk of nn.state sees the same tensors under the same names
    assert set(get_state_dict(ours)) == set(ours.state_dict())
    assert len(list(ours.parameters())) == len(list(theirs.parameters()))
    assert len(list(ours.parameters(recurse=False))) == 0
    assert [k for k, _ in ours[2].named_parameters(prefix="layers")] == [
        "layers.0.weight",
        "layers.0.bias",
        "layers.1.weight",
        "layers.1.bias",
        "layers.2.weight",
    ]


def test_parameter_list_and_dict_names_and_tied_weights():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.plist = nn.ParameterList([nn.Parameter(Tensor.ones(2)), nn.Parameter(Tensor.zeros(3))])
            self.pdict = nn.ParameterDict({"a": nn.Parameter(Tensor.ones(1))})
            self.enc = nn.Linear(3, 3)
            self.dec = nn.Linear(3, 3)
            self.dec.weight = self.enc.weight  # tied: one parameter, two state-dict keys

    class TorchNet(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.plist = torch.nn.ParameterList([torch.nn.Parameter(torch.ones(2)), torch.nn.Parameter(torch.zeros(3))])
            self.pdict = torch.nn.ParameterDict({"a": torch.nn.Parameter(torch.ones(1))})
            self.enc = torch.nn.Linear(3, 3)
            self.dec = torch.nn.Linear(3, 3)
            self.dec.weight = self.enc.weight

    ours, theirs = Net(), TorchNet()
    assert [k for k, _ in ours.named_parameters()] == [k for k, _ in theirs.named_parameters()]
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert ours.plist[1].shape == (3,) and len(ours.plist) == 2 and list(ours.pdict) == ["a"]
    assert all(p.requires_grad for p in ours.plist)


def test_buffers_registered_and_non_persistent():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(2, 2)
            self.register_buffer("steps", Tensor.zeros(1).contiguous())  # float, yet a buffer: registered
            self.register_buffer("cache", Tensor.ones(2).contiguous(), persistent=False)
            self.register_buffer("frozen", Tensor([1.0, 2.0], requires_grad=False))

    m = Net()
    assert [k for k, _ in m.named_parameters()] == ["lin.weight", "lin.bias"]
    assert [k for k, _ in m.named_buffers()] == ["steps", "cache", "frozen"]
    assert list(m.state_dict()) == ["steps", "frozen", "lin.weight", "lin.bias"]  # own tensors before children
    assert m.steps.requires_grad is False
    state = {k: Tensor(np.full(v.shape, 7.0, np.float32)) for k, v in m.state_dict().items()}
    assert m.load_state_dict(state) == ([], [])  # strict: the non-persistent buffer is not expected
    np.testing.assert_equal(m.steps.numpy(), [7.0])
    np.testing.assert_equal(m.cache.numpy(), [1.0, 1.0])
    # freezing keeps parameters parameters; a new tensor assigned to a parameter's name stays a parameter
    m.requires_grad_(False)
    assert [k for k, _ in m.named_parameters()] == ["lin.weight", "lin.bias"]
    assert all(p.requires_grad is False for p in m.parameters())
    m.lin.bias = Tensor.zeros(2, requires_grad=False)
    assert [k for k, _ in m.named_parameters()] == ["lin.weight", "lin.bias"]


def test_parameter_helper_and_register_parameter():
    p = nn.Parameter(Tensor.randn(3))
    assert isinstance(p, Tensor) and p.requires_grad is True
    frozen = nn.Parameter(Tensor.randn(3), requires_grad=False)
    assert frozen.requires_grad is False
    assert isinstance(p, nn.Parameter) and isinstance(nn.Linear(2, 2).weight, nn.Parameter)
    assert isinstance(frozen, nn.Parameter) and not isinstance(p * 2, nn.Parameter)  # frozen: still one, as torch
    assert not isinstance(nn.BatchNorm1d(2).running_mean, nn.Parameter) and not isinstance(1.0, nn.Parameter)
    assert not isinstance(Tensor.randn(3), nn.Parameter) and not isinstance(
        Tensor.randn(3).requires_grad_(), nn.Parameter
    )
    m = nn.Module()
    m.register_parameter("scale", p)
    m.add_module("inner", nn.Linear(3, 1))
    assert [k for k, _ in m.named_parameters()] == ["scale", "inner.weight", "inner.bias"]
    assert m.get_submodule("inner") is m.inner and m.get_submodule("") is m


# ---------------------------------------------------------------- tinygrad style keeps working


def test_plain_objects_and_lists_of_layers():
    class Block:  # tinygrad style: a plain class holding layers in a list
        def __init__(self):
            self.layers = [nn.Linear(3, 4), nn.Linear(4, 2)]
            self.norm = nn.BatchNorm1d(2)

        def __call__(self, x: Tensor) -> Tensor:
            return self.norm(x.sequential(self.layers))

    class Wrapper(nn.Module):
        def __init__(self):
            super().__init__()
            self.block = Block()
            self.heads = [nn.Linear(2, 1)]

        def forward(self, x: Tensor) -> Tensor:
            return self.heads[0](self.block(x))

    w = Wrapper()
    names = [k for k, _ in w.named_parameters()]
    assert names == [
        "block.layers.0.weight",
        "block.layers.0.bias",
        "block.layers.1.weight",
        "block.layers.1.bias",
        "block.norm.weight",
        "block.norm.bias",
        "heads.0.weight",
        "heads.0.bias",
    ]
    assert set(w.state_dict()) == set(get_state_dict(w))
    assert len(get_parameters(w)) == len(w.state_dict())  # get_parameters also lists the buffers
    assert "block.norm" in dict(w.named_modules())
    w.eval()
    assert w.get_submodule("block.layers.1").training is False and w.heads[0].training is False
    assert w(Tensor(randn(4, 3))).shape == (4, 1)


# ---------------------------------------------------------------- forward and backward against torch


def mlp(lib: Any, d_in: int, d_hidden: int, d_out: int) -> Any:
    return lib.Sequential(lib.Linear(d_in, d_hidden), lib.GELU(), lib.LayerNorm(d_hidden), lib.Linear(d_hidden, d_out))


def cnn(lib: Any) -> Any:
    return lib.Sequential(
        lib.Conv2d(3, 4, 3, padding=1),
        lib.BatchNorm2d(4),
        lib.ReLU(),
        lib.MaxPool2d(2, ceil_mode=True),
        lib.Conv2d(4, 2, (1, 2), stride=(1, 2)),
        lib.AdaptiveAvgPool2d((2, 1)),
        lib.Flatten(),
        lib.Linear(4, 3),
    )


MODELS = {
    "mlp_batch1": (lambda lib: mlp(lib, 5, 7, 3), (1, 5), False, None),
    "mlp_odd": (lambda lib: mlp(lib, 5, 7, 3), (9, 5), False, None),
    "mlp_3d_noncontiguous": (lambda lib: mlp(lib, 5, 7, 3), (5, 3, 2), False, (2, 1, 0)),  # (2, 3, 5) view
    "cnn_eval_batch1": (cnn, (1, 3, 5, 7), False, None),
    "cnn_train_odd": (cnn, (3, 3, 5, 7), True, None),
    "cnn_train_noncontiguous": (cnn, (7, 5, 3, 2), True, (3, 2, 1, 0)),  # (2, 3, 5, 7) view
}


@pytest.mark.parametrize("name", MODELS)
def test_models_match_torch(name):
    make, shape, train, perm = MODELS[name]
    torch.manual_seed(0)
    theirs, ours = make(torch.nn), make(nn)
    load_torch_state(ours, theirs)
    theirs.train(train)
    ours.train(train)
    x = randn(*shape)
    xt, xu = torch.tensor(x, requires_grad=True), Tensor(x, requires_grad=True)
    ref = theirs(xt.permute(perm) if perm else xt)
    out = ours(xu.permute(perm) if perm else xu)
    close(out, ref, "output")
    proj = randn(*ref.shape, seed=1)
    (ref * torch.tensor(proj)).sum().backward()
    (out * Tensor(proj)).sum().backward()
    close(xu.grad, xt.grad, "input grad")
    compare_grads(ours, theirs)
    for (k, b), (_, tb) in zip(ours.named_buffers(), theirs.named_buffers()):  # running statistics after the step
        close(b, tb, k)


class W:
    """A tensor constructor argument, made for each library from the same values."""

    def __init__(self, *shape: int, positive: bool = True):
        self.value = np.abs(randn(*shape, seed=5)) + 0.5 if positive else randn(*shape, seed=5)


def _arg(a: Any, torch_side: bool) -> Any:
    if isinstance(a, W):
        return torch.tensor(a.value) if torch_side else Tensor(a.value)
    return a


# inputs: "x" normal floats (require grad), "p" probabilities in (0.05, 0.95) ("px": requiring grad), "q" positive floats, "s" signs
# (+-1 floats, no grad), "t" normal floats with no grad (a regression target), ("i", classes) class indices
ACTS = "ReLU ReLU6 SELU SiLU Mish Sigmoid Tanh Hardswish Hardsigmoid Softsign LogSigmoid Tanhshrink".split()
WRAPPERS: dict[str, tuple[str, tuple, dict, list]] = {
    **{a: (a, (), {}, [("x", (2, 3, 5))]) for a in ACTS},
    "LeakyReLU": ("LeakyReLU", (0.2,), {}, [("x", (2, 3, 5))]),
    "ELU": ("ELU", (0.7,), {}, [("x", (2, 3, 5))]),
    "CELU": ("CELU", (1.3,), {}, [("x", (2, 3, 5))]),
    "GELU": ("GELU", (), {}, [("x", (2, 3, 5))]),
    "GELU_tanh": ("GELU", (), {"approximate": "tanh"}, [("x", (2, 3, 5))]),
    "Hardtanh": ("Hardtanh", (-0.5, 0.7), {}, [("x", (2, 3, 5))]),
    "Softplus": ("Softplus", (2.0, 3.0), {}, [("x", (2, 3, 5))]),
    "Softshrink": ("Softshrink", (0.3,), {}, [("x", (2, 3, 5))]),
    "Hardshrink": ("Hardshrink", (0.3,), {}, [("x", (2, 3, 5))]),
    "Threshold": ("Threshold", (0.1, -2.0), {}, [("x", (2, 3, 5))]),
    "GLU": ("GLU", (1,), {}, [("x", (2, 4, 5))]),
    "PReLU": ("PReLU", (3, 0.1), {}, [("x", (2, 3, 5))]),
    "Softmax": ("Softmax", (1,), {}, [("x", (2, 3, 5))]),
    "LogSoftmax": ("LogSoftmax", (-1,), {}, [("x", (2, 3, 5))]),
    "Softmin": ("Softmin", (0,), {}, [("x", (2, 3, 5))]),
    "CosineSimilarity": ("CosineSimilarity", (2, 1e-6), {}, [("x", (2, 3, 5)), ("x", (2, 3, 5))]),
    "PairwiseDistance": ("PairwiseDistance", (1.5, 1e-5, True), {}, [("x", (4, 5)), ("x", (4, 5))]),
    "MaxPool1d": ("MaxPool1d", (3, 2, 1), {}, [("x", (2, 3, 9))]),
    "MaxPool2d": ("MaxPool2d", (3, 2, 1, 1, False, True), {}, [("x", (2, 3, 7, 6))]),
    "AvgPool1d": ("AvgPool1d", (3, 2, 1, False, False), {}, [("x", (2, 3, 9))]),
    "AvgPool2d": ("AvgPool2d", (3, 2, 1, True, False), {}, [("x", (2, 3, 7, 6))]),
    "AdaptiveAvgPool1d": ("AdaptiveAvgPool1d", (4,), {}, [("x", (2, 3, 9))]),
    "AdaptiveAvgPool2d": ("AdaptiveAvgPool2d", ((3, None),), {}, [("x", (2, 3, 7, 6))]),
    "AdaptiveMaxPool1d": ("AdaptiveMaxPool1d", (4,), {}, [("x", (2, 3, 9))]),
    "AdaptiveMaxPool2d": ("AdaptiveMaxPool2d", ((2, 3),), {}, [("x", (2, 3, 7, 6))]),
    "LPPool1d": ("LPPool1d", (2, 3, 2), {}, [("x", (2, 3, 9))]),
    "LPPool2d": ("LPPool2d", (2, (2, 3), 2), {}, [("x", (2, 3, 7, 6))]),
    "ZeroPad1d": ("ZeroPad1d", ((1, 2),), {}, [("x", (2, 3, 9))]),
    "ZeroPad2d": ("ZeroPad2d", ((1, 0, 2, 1),), {}, [("x", (2, 3, 7, 6))]),
    "ConstantPad1d": ("ConstantPad1d", (2, 0.5), {}, [("x", (2, 3, 9))]),
    "ConstantPad2d": ("ConstantPad2d", ((1, 2, 0, 1), -1.0), {}, [("x", (2, 3, 7, 6))]),
    "ReflectionPad1d": ("ReflectionPad1d", ((2, 1),), {}, [("x", (2, 3, 9))]),
    "ReflectionPad2d": ("ReflectionPad2d", ((1, 2, 2, 0),), {}, [("x", (2, 3, 7, 6))]),
    "ReplicationPad1d": ("ReplicationPad1d", (2,), {}, [("x", (2, 3, 9))]),
    "ReplicationPad2d": ("ReplicationPad2d", ((0, 1, 2, 1),), {}, [("x", (2, 3, 7, 6))]),
    "CircularPad1d": ("CircularPad1d", ((1, 2),), {}, [("x", (2, 3, 9))]),
    "CircularPad2d": ("CircularPad2d", ((1, 1, 2, 0),), {}, [("x", (2, 3, 7, 6))]),
    "Upsample_nearest": ("Upsample", (), {"scale_factor": 2}, [("x", (2, 3, 7, 6))]),
    "Upsample_bilinear": ("Upsample", ((5, 9),), {"mode": "bilinear"}, [("x", (2, 3, 7, 6))]),
    "PixelShuffle": ("PixelShuffle", (2,), {}, [("x", (1, 8, 3, 3))]),
    "PixelUnshuffle": ("PixelUnshuffle", (2,), {}, [("x", (2, 3, 4, 6))]),
    "Unfold": ("Unfold", ((2, 3),), {"padding": 1, "stride": 2}, [("x", (2, 3, 7, 6))]),
    "Fold": ("Fold", ((4, 5), (2, 2)), {}, [("x", (2, 12, 12))]),
    "Flatten": ("Flatten", (0, 1), {}, [("x", (2, 3, 5))]),
    "Unflatten": ("Unflatten", (1, (2, 2)), {}, [("x", (2, 4, 5))]),
    "Identity": ("Identity", (54,), {"unused": 1}, [("x", (2, 3, 5))]),
    "MaxPool3d": ("MaxPool3d", (2, 1, 1), {}, [("x", (1, 2, 4, 5, 3))]),
    "AvgPool3d": ("AvgPool3d", ((2, 3, 2), 2), {"divisor_override": 3}, [("x", (1, 2, 4, 5, 3))]),
    "AdaptiveAvgPool3d": ("AdaptiveAvgPool3d", ((2, None, 2),), {}, [("x", (1, 2, 4, 5, 3))]),
    "AdaptiveMaxPool3d": ("AdaptiveMaxPool3d", (2,), {}, [("x", (1, 2, 4, 5, 3))]),
    "ReflectionPad3d": ("ReflectionPad3d", ((1, 0, 2, 1, 1, 2),), {}, [("x", (1, 2, 4, 5, 3))]),
    "ConstantPad3d": ("ConstantPad3d", (1, 2.5), {}, [("x", (1, 2, 4, 5, 3))]),
    "UpsamplingNearest2d": ("UpsamplingNearest2d", (), {"scale_factor": 2}, [("x", (2, 3, 7, 6))]),
    "UpsamplingBilinear2d": ("UpsamplingBilinear2d", ((5, 9),), {}, [("x", (2, 3, 7, 6))]),
    "Softmax2d": ("Softmax2d", (), {}, [("x", (2, 3, 7, 6))]),
    "LocalResponseNorm": ("LocalResponseNorm", (3, 1e-2, 0.6, 2.0), {}, [("x", (2, 3, 7, 6))]),
    "Bilinear": ("Bilinear", (5, 4, 3), {}, [("x", (2, 5)), ("x", (2, 4))]),
    "Conv3d": ("Conv3d", (2, 3, (2, 3, 1)), {"stride": (1, 2, 1), "padding": 1}, [("x", (1, 2, 4, 5, 3))]),
    "Dropout_eval": ("Dropout", (0.3,), {}, [("x", (2, 3, 5))]),
    "Dropout3d_eval": ("Dropout3d", (0.3,), {}, [("x", (1, 2, 4, 5, 3))]),
    "Dropout2d_eval": ("Dropout2d", (0.3,), {}, [("x", (2, 3, 7, 6))]),
    # losses
    "L1Loss": ("L1Loss", (), {}, [("x", (4, 5)), ("t", (4, 5))]),
    "MSELoss_sum": ("MSELoss", (), {"reduction": "sum"}, [("x", (4, 5)), ("t", (4, 5))]),
    "MSELoss_legacy": ("MSELoss", (None, False), {}, [("x", (4, 5)), ("t", (4, 5))]),
    "CrossEntropyLoss": ("CrossEntropyLoss", (), {"label_smoothing": 0.1}, [("x", (4, 5)), ("i", 5, (4,))]),
    "CrossEntropyLoss_weighted": (
        "CrossEntropyLoss",
        (W(5),),
        {"ignore_index": 1},
        [("x", (4, 5, 3)), ("i", 5, (4, 3))],
    ),
    "NLLLoss": ("NLLLoss", (), {"reduction": "sum"}, [("x", (4, 5)), ("i", 5, (4,))]),
    "BCELoss": ("BCELoss", (W(4, 5),), {}, [("px", (4, 5)), ("p", (4, 5))]),
    "BCEWithLogitsLoss": ("BCEWithLogitsLoss", (), {"pos_weight": W(5)}, [("x", (4, 5)), ("p", (4, 5))]),
    "SmoothL1Loss": ("SmoothL1Loss", (), {"beta": 0.5}, [("x", (4, 5)), ("t", (4, 5))]),
    "HuberLoss": ("HuberLoss", (), {"delta": 0.5}, [("x", (4, 5)), ("t", (4, 5))]),
    "KLDivLoss": ("KLDivLoss", (), {"reduction": "batchmean", "log_target": True}, [("x", (4, 5)), ("t", (4, 5))]),
    "PoissonNLLLoss": ("PoissonNLLLoss", (False, True), {}, [("q", (4, 5)), ("q", (4, 5))]),
    "GaussianNLLLoss": ("GaussianNLLLoss", (), {"full": True}, [("x", (4, 5)), ("t", (4, 5)), ("q", (4, 5))]),
    "MarginRankingLoss": ("MarginRankingLoss", (0.3,), {}, [("x", (4,)), ("x", (4,)), ("s", (4,))]),
    "HingeEmbeddingLoss": ("HingeEmbeddingLoss", (0.7,), {}, [("x", (4, 5)), ("s", (4, 5))]),
    "SoftMarginLoss": ("SoftMarginLoss", (), {}, [("x", (4, 5)), ("s", (4, 5))]),
    "TripletMarginLoss": (
        "TripletMarginLoss",
        (),
        {"margin": 0.5, "p": 1.5, "swap": True},
        [("x", (4, 5)), ("x", (4, 5)), ("x", (4, 5))],
    ),
    "CosineEmbeddingLoss": ("CosineEmbeddingLoss", (0.2,), {}, [("x", (4, 5)), ("x", (4, 5)), ("s", (4,))]),
    "MultiMarginLoss": ("MultiMarginLoss", (2, 0.5, W(5)), {}, [("x", (4, 5)), ("i", 5, (4,))]),
    "MultiLabelSoftMarginLoss": ("MultiLabelSoftMarginLoss", (W(5),), {}, [("x", (4, 5)), ("p", (4, 5))]),
}


def make_input(spec: tuple, seed: int) -> tuple[np.ndarray, bool]:
    kind, g = spec[0], rng(seed)
    if kind == "i":
        return g.integers(0, spec[1], spec[2]).astype(np.int64), False
    shape = spec[1]
    if kind in ("p", "px"):
        return g.uniform(0.05, 0.95, shape).astype(np.float32), kind == "px"
    if kind == "q":
        return g.uniform(0.2, 2.0, shape).astype(np.float32), True
    if kind == "s":
        return np.where(g.standard_normal(shape) > 0, 1.0, -1.0).astype(np.float32), False
    return (g.standard_normal(shape) * 1.5).astype(np.float32), kind == "x"


@pytest.mark.filterwarnings("ignore:size_average and reduce args will be deprecated")
@pytest.mark.parametrize("case", WRAPPERS)
def test_wrappers_match_torch(case):
    """The same constructor call in both libraries (torch's signature), then outputs and gradients agree."""
    name, args, kwargs, specs = WRAPPERS[case]
    theirs = getattr(torch.nn, name)(*(_arg(a, True) for a in args), **{k: _arg(v, True) for k, v in kwargs.items()})
    ours = getattr(nn, name)(*(_arg(a, False) for a in args), **{k: _arg(v, False) for k, v in kwargs.items()})
    assert isinstance(ours, nn.Module)
    theirs.eval()
    ours.eval()
    load_torch_state(ours, theirs)
    inputs = [make_input(s, seed) for seed, s in enumerate(specs)]
    tin = [torch.tensor(a, requires_grad=g) for a, g in inputs]
    uin = [Tensor(a, requires_grad=True) if g else Tensor(a) for a, g in inputs]
    ref, out = theirs(*tin), ours(*uin)
    close(out, ref, "output")
    proj = randn(*ref.shape, seed=9)
    (ref * torch.tensor(proj)).sum().backward()
    (out * Tensor(proj)).sum().backward()
    for i, (t, u) in enumerate(zip(tin, uin)):
        if t.requires_grad:
            close(u.grad, t.grad, f"grad of input {i}")
    compare_grads(ours, theirs)
    if name in REPR_CHECKED:
        assert repr(ours) == repr(theirs)


REPR_CHECKED = {"ReLU", "LeakyReLU", "GELU", "Softmax", "MaxPool2d", "Flatten", "Dropout", "PixelShuffle", "MSELoss"}


def test_repr_like_torch():
    def build(lib: Any) -> Any:
        return lib.Sequential(
            lib.Conv2d(3, 8, 3, stride=2, padding=1),
            lib.BatchNorm2d(8),
            lib.ReLU(),
            lib.Flatten(),
            lib.Sequential(lib.Linear(8, 4, bias=False), lib.Dropout(0.1), lib.LayerNorm(4)),
            lib.Embedding(10, 3),
            lib.GroupNorm(2, 8, bias=False),
            lib.InstanceNorm2d(8, affine=True),
            lib.Conv1d(2, 3, 4, padding="same", padding_mode="reflect", bias=False),
            lib.MaxPool2d(2),
            lib.ModuleDict({"gate": lib.Sigmoid()}),
        )

    assert repr(build(nn)) == repr(build(torch.nn))


# ---------------------------------------------------------------- attention


@pytest.mark.parametrize(
    "batch_first,need_weights,average,masks,kvdim",
    [
        (False, True, True, None, None),
        (True, False, True, "causal_bool", None),
        (True, True, False, "padding", None),
        (False, False, True, "float", (3, 5)),
        (False, True, True, "unbatched", None),
    ],
)
def test_multihead_attention_matches_torch(batch_first, need_weights, average, masks, kvdim):
    e, h, n, lq, s = 8, 2, 2, 3, 5
    kdim, vdim = kvdim or (None, None)
    torch.manual_seed(0)
    theirs = torch.nn.MultiheadAttention(e, h, batch_first=batch_first, kdim=kdim, vdim=vdim)
    ours = nn.MultiheadAttention(e, h, batch_first=batch_first, kdim=kdim, vdim=vdim)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    load_torch_state(ours, theirs)
    shape = (lambda length, d: (n, length, d)) if batch_first else (lambda length, d: (length, n, d))
    if masks == "unbatched":
        shape = lambda length, d: (length, d)  # noqa: E731
    arrays = [randn(*shape(lq, e), seed=1), randn(*shape(s, kdim or e), seed=2), randn(*shape(s, vdim or e), seed=3)]
    tin = [torch.tensor(a, requires_grad=True) for a in arrays]
    uin = [Tensor(a, requires_grad=True) for a in arrays]
    kw_t: dict[str, Any] = {"need_weights": need_weights, "average_attn_weights": average}
    kw_u = dict(kw_t)
    if masks == "causal_bool":
        causal = np.triu(np.ones((lq, s), dtype=bool), 1)
        kw_t["attn_mask"], kw_u["attn_mask"] = torch.tensor(causal), Tensor(causal)
    elif masks == "padding":
        pad = np.zeros((n, s), dtype=bool)
        pad[0, -2:] = True
        kw_t["key_padding_mask"], kw_u["key_padding_mask"] = torch.tensor(pad), Tensor(pad)
    elif masks == "float":
        bias = randn(n * h, lq, s, seed=4)
        kw_t["attn_mask"], kw_u["attn_mask"] = torch.tensor(bias), Tensor(bias)
    ref, ref_w = theirs(*tin, **kw_t)
    out, out_w = ours(*uin, **kw_u)
    close(out, ref, "output")
    if need_weights:
        close(out_w, ref_w, "weights")
    else:
        assert out_w is None and ref_w is None
    proj = randn(*ref.shape, seed=9)
    (ref * torch.tensor(proj)).sum().backward()
    (out * Tensor(proj)).sum().backward()
    for i, (t, u) in enumerate(zip(tin, uin)):
        close(u.grad, t.grad, f"grad of input {i}")
    compare_grads(ours, theirs)


def test_multihead_attention_dropout_in_training():
    mha = nn.MultiheadAttention(4, 2, dropout=0.5, batch_first=True).train()
    x = Tensor(randn(1, 6, 4))
    out, w = mha(x, x, x, average_attn_weights=False)
    weights = w.numpy()  # (1, heads, 6, 6): the weights applied, after dropout
    assert 0.2 < (weights == 0).mean() < 0.8
    v = x.linear(mha.in_proj_weight[8:].T, mha.in_proj_bias[8:]).reshape(1, 6, 2, 2).transpose(1, 2)
    expected = mha.out_proj((Tensor(weights) @ v).transpose(1, 2).reshape(1, 6, 4))
    np.testing.assert_allclose(out.numpy(), expected.numpy(), rtol=1e-5, atol=1e-6)
    mha.eval()
    np.testing.assert_allclose(mha(x, x, x)[1].numpy().sum(-1), np.ones((1, 6)), rtol=1e-5)


@pytest.mark.parametrize("norm_first,activation", [(False, "relu"), (True, "gelu")])
def test_transformer_encoder_layer_matches_torch(norm_first, activation):
    torch.manual_seed(0)
    kw = {"dim_feedforward": 16, "batch_first": True, "norm_first": norm_first, "activation": activation}
    theirs, ours = torch.nn.TransformerEncoderLayer(8, 2, **kw), nn.TransformerEncoderLayer(8, 2, **kw)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    load_torch_state(ours, theirs)
    theirs.eval()
    ours.eval()
    x = randn(2, 5, 8)
    pad = np.zeros((2, 5), dtype=bool)
    pad[1, 3:] = True
    xt, xu = torch.tensor(x, requires_grad=True), Tensor(x, requires_grad=True)
    ref = theirs(xt, src_key_padding_mask=torch.tensor(pad))
    out = ours(xu, src_key_padding_mask=Tensor(pad))
    close(out, ref, "output")
    proj = randn(*ref.shape, seed=9)
    (ref * torch.tensor(proj)).sum().backward()
    (out * Tensor(proj)).sum().backward()
    close(xu.grad, xt.grad, "input grad")
    compare_grads(ours, theirs)


def test_transformer_encoder_stack_matches_torch():
    torch.manual_seed(0)
    kw = {"dim_feedforward": 16, "batch_first": True}
    theirs = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(8, 2, **kw), 2, torch.nn.LayerNorm(8))
    ours = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, **kw), 2, nn.LayerNorm(8))
    assert list(ours.state_dict()) == list(theirs.state_dict())
    first, second = ours.layers[0].linear1.weight, ours.layers[1].linear1.weight
    assert first is not second and len({id(p) for p in ours.parameters()}) == len(list(theirs.parameters()))
    load_torch_state(ours, theirs)
    theirs.eval()
    ours.eval()
    x = randn(2, 5, 8)
    causal = np.triu(np.full((5, 5), -np.inf, np.float32), 1)
    xt, xu = torch.tensor(x, requires_grad=True), Tensor(x, requires_grad=True)
    ref = theirs(xt, mask=torch.tensor(causal), is_causal=True)
    out = ours(xu, mask=Tensor(causal), is_causal=True)
    close(out, ref, "output")
    ref.sum().backward()
    out.sum().backward()
    close(xu.grad, xt.grad, "input grad")
    compare_grads(ours, theirs)


def test_deepcopy_gives_own_buffers():
    model = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))
    model.append(model[0])  # tied: the copy keeps the tie
    model[0].weight.requires_grad_()
    clone = copy.deepcopy(model)
    assert clone[0].weight is not model[0].weight and clone[2] is clone[0]
    np.testing.assert_equal(clone[0].weight.numpy(), model[0].weight.numpy())
    assert clone[0].weight.requires_grad is True and clone[1].running_mean.requires_grad is False
    before = model[0].weight.numpy()
    nn.init.zeros_(clone[0].weight)
    np.testing.assert_equal(model[0].weight.numpy(), before)  # the original's buffer is untouched
    clone[0](Tensor(randn(2, 3))).sum().backward()
    assert clone[0].weight.grad is not None and model[0].weight.grad is None


# ---------------------------------------------------------------- train and eval


def test_training_flag_follows_tensor_training_until_set():
    model = nn.Sequential(nn.Linear(3, 3), nn.Dropout(0.5))
    with Tensor.train(True):
        assert model.training and model[1].training
    with Tensor.train(False):
        assert not model[1].training
    assert model.train() is model
    with Tensor.train(False):
        assert model.training and model[0].training and model[1].training  # its own flag wins
    model.eval()
    with Tensor.train(True):
        assert not model.training and not model[1].training
    model[1].train()  # one submodule only
    assert model[1].training and not model.training


def test_dropout_follows_module_mode():
    x = Tensor(np.ones((64, 64), np.float32))
    drop = nn.Dropout(0.5)
    with Tensor.train(False):
        drop.train()
        out = drop(x).numpy()
    assert set(np.unique(out)) == {0.0, 2.0} and 0.4 < (out == 0).mean() < 0.6
    drop.eval()
    with Tensor.train(True):
        np.testing.assert_equal(drop(x).numpy(), x.numpy())
    fresh = nn.Dropout2d(0.5)  # never set: follows Tensor.training
    with Tensor.train(True):
        out = fresh(Tensor(np.ones((8, 16, 3, 3), np.float32))).numpy()
    per_channel = out.reshape(8, 16, 9)
    assert np.all(per_channel.min(-1) == per_channel.max(-1)) and 0 < (per_channel[..., 0] == 0).mean() < 1


def test_alpha_dropout_keeps_values_affine():
    p, xs = 0.3, randn(2000)
    m = nn.AlphaDropout(p).train()
    out = m(Tensor(xs)).numpy()
    a = ((1 - p) * (1 + p * 1.7580993408473766**2)) ** -0.5
    dropped = np.isclose(out, a * -1.7580993408473766 + a * 1.7580993408473766 * p, atol=1e-6)
    assert 0.25 < dropped.mean() < 0.35
    np.testing.assert_allclose(out[~dropped], a * xs[~dropped] + a * 1.7580993408473766 * p, rtol=1e-5, atol=1e-6)
    np.testing.assert_equal(m.eval()(Tensor(xs)).numpy(), xs)


def test_batchnorm_train_then_eval_matches_torch():
    torch.manual_seed(0)
    theirs, ours = torch.nn.BatchNorm1d(3, momentum=0.3), nn.BatchNorm1d(3, momentum=0.3)
    load_torch_state(ours, theirs)
    ours.train()
    theirs.train()
    with Tensor.train(False):  # the module's own flag, not Tensor.training, decides
        for step in range(3):
            x = randn(5, 3, seed=step) * 2 + 1
            close(ours(Tensor(x)), theirs(torch.tensor(x)), f"train step {step}")
    close(ours.running_mean, theirs.running_mean, "running_mean")
    close(ours.running_var, theirs.running_var, "running_var")
    assert ours.num_batches_tracked.item() == 3
    ours.eval()
    theirs.eval()
    with Tensor.train(True):
        x = randn(4, 3, seed=7)
        close(ours(Tensor(x)), theirs(torch.tensor(x)), "eval")
    assert ours.num_batches_tracked.item() == 3


# ---------------------------------------------------------------- hooks


def test_forward_hooks():
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    seen: list[tuple[str, tuple[int, ...]]] = []
    handles = [
        m.register_forward_hook(lambda mod, args, out, name=name: seen.append((name, out.shape)))
        for name, m in model.named_children()
    ]
    x = Tensor(randn(5, 3))
    base = model(x).numpy()
    assert seen == [("0", (5, 4)), ("1", (5, 4)), ("2", (5, 2))]
    for h in handles:
        h.remove()
    expected = model(x * 2).numpy() + 1
    pre = model[0].register_forward_pre_hook(lambda mod, args: (args[0] * 2,))
    post = model.register_forward_hook(lambda mod, args, out: out + 1)
    np.testing.assert_allclose(model(x).numpy(), expected, rtol=1e-6)
    pre.remove()
    post.remove()
    seen.clear()
    np.testing.assert_allclose(model(x).numpy(), base, rtol=1e-6)
    assert seen == []


# ---------------------------------------------------------------- a torch-style training loop


@pytest.mark.flavor("torch")  # torch's training loop: no train mode needed to step
def test_training_loop_matches_torch():
    torch.manual_seed(0)
    theirs = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))
    model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 3))
    model.load_state_dict({k: Tensor(v.detach().numpy().copy()) for k, v in theirs.state_dict().items()})
    x = randn(32, 4, seed=3)
    y = (x[:, 0] > 0).astype(np.int64) + (x[:, 1] > 0.5).astype(np.int64)
    topt = torch.optim.SGD(theirs.parameters(), lr=0.2)
    opt = optim.SGD(model.parameters(), lr=0.2)
    tloss_fn, loss_fn = torch.nn.CrossEntropyLoss(), nn.CrossEntropyLoss()
    xt, yt, xu, yu = torch.tensor(x), torch.tensor(y), Tensor(x), Tensor(y)
    losses = []
    for step in range(15):
        tl = tloss_fn(theirs(xt), yt)
        topt.zero_grad()
        tl.backward()
        topt.step()
        loss = loss_fn(model(xu), yu)
        opt.zero_grad()
        loss.backward()
        losses.append(loss.item())  # before the step: a lazy loss realized later would read the updated weights
        opt.step()
        assert abs(losses[-1] - tl.item()) < 1e-4 * max(1.0, tl.item()), step
    assert losses[-1] < 0.7 * losses[0]
    for (k, p), (_, tp) in zip(model.named_parameters(), theirs.named_parameters()):
        close(p, tp, k)


def test_zero_grad_and_requires_grad():
    model = nn.Sequential(nn.Linear(3, 2))
    model.requires_grad_()
    model(Tensor(randn(4, 3))).sum().backward()
    assert all(p.grad is not None for p in model.parameters())
    model.zero_grad(set_to_none=False)
    assert all(p.grad is not None and not p.grad.numpy().any() for p in model.parameters())
    model.zero_grad()
    assert all(p.grad is None for p in model.parameters())


@pytest.mark.parametrize("realized", [False, True])
def test_backward_without_optimizer_fills_parameter_grads(realized):
    """torch's parameters require grad from the start: `loss.backward()` before any optimizer (or requires_grad_())
    fills every parameter's .grad, and not the input's; a frozen parameter keeps None."""
    tmod = torch.nn.Sequential(torch.nn.Linear(5, 4), torch.nn.Tanh(), torch.nn.Linear(4, 3))
    ours = nn.Sequential(nn.Linear(5, 4), nn.Tanh(), nn.Linear(4, 3))
    ours.load_state_dict({k: Tensor(v.detach().numpy().copy()) for k, v in tmod.state_dict().items()})
    assert all(p._requires_grad is True for p in ours.parameters())  # the torch flavor: on from birth
    assert sum(p.numel() for p in ours.parameters() if p.requires_grad) == 5 * 4 + 4 + 4 * 3 + 3  # torch's count
    if realized:
        Tensor.realize(*ours.parameters())
    ours[2].bias.requires_grad_(False)
    tmod[2].bias.requires_grad_(False)
    xn = randn(7, 5)
    x = Tensor(xn)
    loss = ours(x).square().mean()
    assert loss.requires_grad is True and loss.item() > 0  # read before backward(), as torch
    loss.backward()
    tmod(torch.from_numpy(xn)).square().mean().backward()
    compare_grads(ours, tmod)
    assert x.grad is None and ours[2].bias.grad is None
    assert all(p.requires_grad for name, p in ours.named_parameters() if name != "2.bias")
    with pytest.raises(RuntimeError, match="does not require grad"):  # tensors outside modules stay as they are
        (Tensor(xn) * 2).sum().backward()


def test_to_half_keeps_identity_and_apply():
    model = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))
    weight, tracked = model[0].weight, model[1].num_batches_tracked
    before = weight.numpy()
    assert model.half() is model
    assert model[0].weight is weight and weight.dtype is dtypes.float16
    assert tracked.dtype is dtypes.int64  # only floating-point tensors are cast
    np.testing.assert_allclose(weight.numpy(), before, rtol=1e-3, atol=1e-3)
    model.float()
    assert weight.dtype is dtypes.float32 and model(Tensor(randn(4, 3))).dtype is dtypes.float32
    assert model.to("CPU") is model
    before = weight.numpy()
    model.to("PYTHON")
    assert weight.device == "PYTHON" and tracked.device == "PYTHON"
    assert model(Tensor(randn(4, 3), device="PYTHON")).device == "PYTHON"
    model.cpu()
    assert weight.device == "CPU" and model[0].weight is weight
    np.testing.assert_equal(weight.numpy(), before)
    visited: list[str] = []
    model.apply(lambda m: visited.append(type(m).__name__))
    assert visited == ["Linear", "BatchNorm1d", "Sequential"]

    def init_linear(m: nn.Module) -> None:
        if isinstance(m, nn.Linear):
            nn.init.zeros_(m.weight)

    model.apply(init_linear)
    assert not model[0].weight.numpy().any()


def test_sequential_container_operations():
    a, b, c = nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1)
    seq = nn.Sequential(a, b)
    seq.append(c)
    assert len(seq) == 3 and list(seq) == [a, b, c] and seq[-1] is c
    sub = seq[1:]
    assert isinstance(sub, nn.Sequential) and list(sub) == [b, c]
    assert list(sub.state_dict()) == ["2.weight", "2.bias"]  # a slice keeps the names, as torch
    del seq[0]
    assert list(seq.state_dict()) == ["1.weight", "1.bias"] and seq[0] is b  # renumbered
    seq.insert(0, a)
    assert list(seq) == [a, b, c]
    named = nn.Sequential(OrderedDict([("first", a), ("act", b)]))
    assert named.first is a and [k for k, _ in named.named_children()] == ["first", "act"]
    ml = nn.ModuleList([a])
    ml += [b]
    ml.append(c)
    assert len(ml) == 3 and ml[1:][0] is b and ml.pop() is c and len(ml) == 2
    md = nn.ModuleDict({"x": a})
    md["y"] = b
    assert list(md) == ["x", "y"] and "y" in md and md.pop("x") is a and list(md.keys()) == ["y"]


# ---------------------------------------------------------------- errors


def test_errors():
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    state = {k: Tensor(v.numpy()) for k, v in model.state_dict().items()}
    bad = dict(state, **{"0.weight": Tensor.zeros(4, 4)})
    with pytest.raises(RuntimeError, match=r"size mismatch for 0\.weight.*\(4, 4\).*\(4, 3\)"):
        model.load_state_dict(bad)
    missing = {k: v for k, v in state.items() if k != "2.bias"}
    with pytest.raises(
        RuntimeError, match=r'(?s)Error\(s\) in loading state_dict for Sequential.*Missing key\(s\).*"2\.bias"'
    ):
        model.load_state_dict(missing)
    with pytest.raises(RuntimeError, match=r'Unexpected key\(s\) in state_dict: "extra"'):
        model.load_state_dict(dict(state, extra=Tensor.zeros(1)))
    result = model.load_state_dict(dict(missing, extra=Tensor.zeros(1)), strict=False)
    assert result.missing_keys == ["2.bias"] and result.unexpected_keys == ["extra"]
    with pytest.raises(IndexError, match="index 3 is out of range"):
        model[3]
    with pytest.raises(IndexError, match="index -4 is out of range"):
        model[-4]
    with pytest.raises(TypeError, match="is not a Module subclass"):
        nn.Sequential(nn.Linear(2, 2), lambda x: x)
    with pytest.raises(KeyError, match="attribute 'train' already exists"):
        nn.ModuleDict({"train": nn.ReLU()})
    with pytest.raises(AttributeError, match="has no attribute `nope`"):
        model.get_submodule("0.nope")
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        model.train("yes")  # type: ignore[arg-type]
    with pytest.raises(NotImplementedError, match='missing the required "forward"'):
        nn.Module()(Tensor.zeros(1))
    with pytest.raises(KeyError, match=r'empty or contain "\."'):
        model.register_buffer("a.b", Tensor.zeros(1))
    with pytest.raises(RuntimeError, match="is_causal is a hint"):
        nn.MultiheadAttention(4, 2)(*[Tensor.zeros(3, 1, 4)] * 3, is_causal=True)


# ---------------------------------------------------------------- nn.init


def stats(t: Tensor) -> tuple[float, float]:
    a = t.numpy()
    return float(a.mean()), float(a.std())


def test_init_in_place_statistics():
    Tensor.manual_seed(0)
    t = Tensor.empty(256, 128)
    assert nn.init.uniform_(t, -2.0, 3.0) is t and t.shape == (256, 128)
    a = t.numpy()
    assert a.min() >= -2.0 and a.max() < 3.0 and abs(a.mean() - 0.5) < 0.05
    nn.init.normal_(t, 1.0, 0.5)
    mean, std = stats(t)
    assert abs(mean - 1.0) < 0.01 and abs(std - 0.5) < 0.01
    bound = math.sqrt(6 / (256 + 128))
    nn.init.xavier_uniform_(t, gain=2.0)
    assert np.abs(t.numpy()).max() <= 2 * bound and np.abs(t.numpy()).max() > 1.9 * bound
    nn.init.xavier_normal_(t)
    assert abs(stats(t)[1] - math.sqrt(2 / 384)) < 0.003
    conv = Tensor.empty(16, 8, 3, 3)
    nn.init.kaiming_normal_(conv, mode="fan_out", nonlinearity="relu")
    assert abs(stats(conv)[1] - math.sqrt(2 / (16 * 9))) < 0.01
    nn.init.kaiming_uniform_(conv, a=math.sqrt(5))
    torch_bound = math.sqrt(6 / ((1 + 5) * 8 * 9))
    assert np.abs(conv.numpy()).max() <= torch_bound and np.abs(conv.numpy()).max() > 0.95 * torch_bound
    nn.init.trunc_normal_(t, mean=0.5, std=1.0, a=-1.0, b=1.5)
    a = t.numpy()
    assert a.min() >= -1.0 and a.max() <= 1.5
    ref = torch.nn.init.trunc_normal_(torch.empty(256, 128), 0.5, 1.0, -1.0, 1.5).numpy()
    assert abs(a.mean() - ref.mean()) < 0.02 and abs(a.std() - ref.std()) < 0.02


def test_init_constants_and_seed():
    t = Tensor.empty(3, 4)
    np.testing.assert_equal(nn.init.constant_(t, 0.25).numpy(), np.full((3, 4), 0.25))
    np.testing.assert_equal(nn.init.ones_(t).numpy(), np.ones((3, 4)))
    np.testing.assert_equal(nn.init.zeros_(t).numpy(), np.zeros((3, 4)))
    np.testing.assert_equal(nn.init.eye_(t).numpy(), np.eye(3, 4))
    # a parameter that requires grad is written in place and stays a leaf an optimizer can train
    lin = nn.Linear(4, 3)
    lin.weight.requires_grad_()
    nn.init.ones_(lin.weight)
    lin(Tensor(randn(2, 4))).sum().backward()
    np.testing.assert_equal(lin.weight.numpy(), np.ones((3, 4)))
    assert lin.weight.grad is not None and lin.weight.grad.shape == (3, 4)
    Tensor.manual_seed(7)
    first = nn.init.normal_(Tensor.empty(5)).numpy()
    Tensor.manual_seed(7)
    np.testing.assert_equal(nn.init.normal_(Tensor.empty(5)).numpy(), first)


@pytest.mark.parametrize("shape", [(6, 4), (3, 2, 2), (1, 5)])
def test_init_orthogonal(shape):
    t = nn.init.orthogonal_(Tensor.empty(*shape), gain=1.5)
    q = t.numpy().reshape(shape[0], -1)
    gram = q.T @ q if q.shape[0] >= q.shape[1] else q @ q.T
    np.testing.assert_allclose(gram, 2.25 * np.eye(gram.shape[0]), atol=1e-5)


def test_init_gains_and_errors():
    for args in [("linear",), ("conv2d",), ("sigmoid",), ("tanh",), ("relu",), ("leaky_relu",), ("leaky_relu", 0.2)]:
        assert nn.init.calculate_gain(*args) == pytest.approx(torch.nn.init.calculate_gain(*args))
    assert nn.init.calculate_gain("selu") == 0.75
    with pytest.raises(ValueError, match="unsupported nonlinearity 'swish'"):
        nn.init.calculate_gain("swish")
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        nn.init.xavier_uniform_(Tensor.empty(5))
    with pytest.raises(ValueError, match="mode 'fan_avg' not supported"):
        nn.init.kaiming_uniform_(Tensor.empty(2, 2), mode="fan_avg")
    with pytest.raises(ValueError, match="only 2-D tensors"):
        nn.init.eye_(Tensor.empty(2, 2, 2))


def test_namespaces():
    assert nn.functional.relu is not None and nn.init.xavier_uniform_ is not None
    import unigrad.nn.functional as F

    assert F is nn.functional
    for name in nn.__all__:
        assert hasattr(nn, name), name


LAYER_FAMILIES = """module containers linear flatten conv norm embedding rnn dropout activation distance pooling padding
vision loss transformer""".split()


def test_layer_families_are_reexported():
    """Every public class of a layer-family module is unigrad.nn.<name> itself, and listed in nn.__all__."""
    import importlib

    for family in LAYER_FAMILIES:
        mod = importlib.import_module(f"unigrad.nn.{family}")
        classes = [k for k, v in vars(mod).items() if isinstance(v, type) and v.__module__ == mod.__name__]
        for name in (k for k in classes if not k.startswith("_")):
            assert getattr(nn, name) is getattr(mod, name), f"{family}.{name}"
            assert name in nn.__all__, f"{family}.{name}"
    assert len(nn.__all__) == len(set(nn.__all__))


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("side", ["right", "left"])
def test_pad_sequence(batch_first, side):
    rng = np.random.default_rng(0)
    seqs = [rng.standard_normal((n, 3)).astype(np.float32) for n in (4, 1, 3)]
    ours = nn.utils.rnn.pad_sequence([Tensor(s) for s in seqs], batch_first, -1.0, side)
    ref = torch.nn.utils.rnn.pad_sequence([torch.tensor(s) for s in seqs], batch_first, -1.0, side)
    assert ours.shape == tuple(ref.shape)
    np.testing.assert_array_equal(ours.numpy(), ref.numpy())
    with pytest.raises(RuntimeError, match="every sequence needs shape"):
        nn.utils.pad_sequence([Tensor(seqs[0]), Tensor(np.zeros((2, 4), np.float32))])
