"""Module paths PyTorch programs import by name, through the facade (issue 32): torch.nn.modules.* (torch's file
names holding unigrad's classes), torch.nn.parameter, torch.nn.parallel (DataParallel on one process), torch.onnx,
torch.serialization's safe globals, torch.amp / torch.cuda.amp (GradScaler against torch's, autocast)."""

import importlib
import io
import pickle
import warnings

import numpy as np
import pytest
import torch

import unigrad
import unigrad.torch as ut
from unigrad import Tensor

pytestmark = pytest.mark.flavor("torch")

NN_FILES = ["activation", "batchnorm", "channelshuffle", "container", "conv", "distance", "dropout", "flatten", "fold",
            "instancenorm", "linear", "loss", "module", "normalization", "padding", "pixelshuffle", "pooling", "rnn",
            "sparse", "transformer", "upsampling"]  # fmt: skip


@pytest.mark.parametrize("file", NN_FILES)
def test_nn_modules_files_hold_what_torch_keeps_there(file):
    """Each torch.nn.modules.<file> of ours holds every class torch keeps in that file that unigrad.nn has (the same
    object as unigrad.nn's), and nothing torch keeps elsewhere."""
    ours = importlib.import_module(f"unigrad.torch.nn.modules.{file}")
    ref = importlib.import_module(f"torch.nn.modules.{file}")
    ref_names = {n for n in ref.__all__ if isinstance(getattr(ref, n), type)}
    expected = {n for n in ref_names if hasattr(unigrad.nn, n)}
    assert expected and set(ours.__all__) == expected
    for name in expected:
        assert getattr(ours, name) is getattr(unigrad.nn, name)


def test_nn_paths_programs_use():
    from unigrad.torch.nn.modules.dropout import Dropout
    from unigrad.torch.nn.modules.module import Module
    from unigrad.torch.nn.modules.rnn import LSTM
    from unigrad.torch.nn.parameter import Parameter

    assert (LSTM, Dropout, Module, Parameter) == (ut.nn.LSTM, ut.nn.Dropout, ut.nn.Module, ut.nn.Parameter)
    assert ut.nn.modules.sparse.Embedding is ut.nn.Embedding and ut.nn.modules.Linear is ut.nn.Linear
    assert ut.nn.parallel.DataParallel is ut.nn.DataParallel


def test_data_parallel_wraps_and_forwards_like_torch():
    """On one process DataParallel is its module: the same output, `.module`, state-dict keys prefixed `module.`
    (torch's, so checkpoints of wrapped models load), the same parameters."""
    torch.manual_seed(0)
    ref_inner = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    ref = torch.nn.DataParallel(ref_inner)
    inner = ut.nn.Sequential(ut.nn.Linear(3, 4), ut.nn.ReLU(), ut.nn.Linear(4, 2))
    model = ut.nn.DataParallel(inner, device_ids=[0])
    assert model.module is inner
    assert list(model.state_dict()) == list(ref.state_dict())
    model.load_state_dict({k: Tensor(v.numpy()) for k, v in ref.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    np.testing.assert_allclose(model(Tensor(x)).numpy(), ref(torch.from_numpy(x)).detach().numpy(), rtol=1e-6)
    assert [id(p) for p in model.parameters()] == [id(p) for p in inner.parameters()]
    with pytest.raises(TypeError, match="DataParallel: expected an nn.Module"):
        ut.nn.DataParallel(lambda x: x)


def test_distributed_data_parallel_before_init_says_what_to_call():
    import unigrad.torch.distributed as dist
    from unigrad.torch.nn.parallel import DistributedDataParallel

    assert dist is importlib.import_module("unigrad.distributed") and not dist.is_initialized()
    with pytest.raises(RuntimeError, match="init_process_group"):
        DistributedDataParallel(ut.nn.Linear(2, 2))


def test_onnx_imports_and_export_says_it_cannot():
    import unigrad.torch.onnx

    assert ut.onnx is unigrad.torch.onnx and ut.onnx.is_in_onnx_export() is False
    with pytest.raises(NotImplementedError, match="cannot export ONNX"):
        ut.onnx.export(ut.nn.Linear(2, 2), Tensor.zeros(1, 2), "model.onnx")


class LM(ut.nn.Module):
    """A small model saved whole (torch.save(model)), as the LSTM language model example does."""

    def __init__(self) -> None:
        super().__init__()
        self.embed, self.rnn = ut.nn.Embedding(7, 3), ut.nn.LSTM(3, 4)
        self.drop, self.out = ut.nn.Dropout(0.2), ut.nn.Linear(4, 7)


def test_safe_globals_let_weights_only_load_a_whole_model():
    """torch.load(weights_only=True) of a whole model refuses its classes until they are allowed: for a block
    (safe_globals, undone after) or for the process (add_safe_globals); the (object, "module.name") form maps a
    file's name to a class."""
    from unigrad.torch.serialization import add_safe_globals, clear_safe_globals, get_safe_globals, safe_globals

    model = LM()
    buf = io.BytesIO()
    ut.save(model, buf)
    classes = [LM, ut.nn.Embedding, ut.nn.modules.rnn.LSTM, ut.nn.modules.dropout.Dropout, ut.nn.Linear]
    with pytest.raises(pickle.UnpicklingError, match=r"test_torch_paths.LM.*safe_globals"):
        ut.load(io.BytesIO(buf.getvalue()))
    with safe_globals(classes):
        loaded = ut.load(io.BytesIO(buf.getvalue()))
        assert set(classes) <= set(get_safe_globals())
    assert type(loaded) is LM and get_safe_globals() == []
    for (k, a), (k2, b) in zip(model.state_dict().items(), loaded.state_dict().items()):
        assert k == k2
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    with pytest.raises(pickle.UnpicklingError, match="neither data"):
        ut.load(io.BytesIO(buf.getvalue()))
    try:
        add_safe_globals(classes[1:])
        add_safe_globals([(ut.nn.Module, f"{__name__}.LM")])  # the file's LM read as a plain Module
        assert type(ut.load(io.BytesIO(buf.getvalue()))) is ut.nn.Module
    finally:
        clear_safe_globals()
    assert get_safe_globals() == []
    with pytest.raises(TypeError, match="add_safe_globals: expected an object or an"):
        add_safe_globals([(LM, 3)])


def test_cuda_grad_scaler_and_autocast_disable_themselves_as_torch():
    """Without CUDA torch's CUDA GradScaler and autocast warn and switch off: scale(loss) is loss, step(opt) is
    opt.step(), the state dict is empty."""
    for make in (lambda: ut.cuda.amp.GradScaler(), lambda: ut.amp.GradScaler(), lambda: ut.amp.GradScaler("cuda")):
        with pytest.warns(UserWarning, match="CUDA is not available.  Disabling"):
            scaler = make()
        assert not scaler.is_enabled() and scaler.get_scale() == 1.0 and scaler.state_dict() == {}
        w = Tensor([1.0, 2.0], requires_grad=True)
        opt = ut.optim.SGD([w], lr=0.5)
        loss = (w * w).sum()
        assert scaler.scale(loss) is loss
        loss.backward()
        scaler.unscale_(opt)
        scaler.step(opt)
        scaler.update()
        scaler.load_state_dict({})
        np.testing.assert_allclose(w.numpy(), [0.0, 0.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ut.amp.GradScaler(enabled=False)
    for ctx in (lambda: ut.cuda.amp.autocast(), lambda: ut.amp.autocast("cuda"), lambda: ut.autocast("cuda")):
        with pytest.warns(UserWarning, match="CUDA is not available. Disabling autocast"):
            with ctx():
                y = Tensor([1.0]) * 2
        assert y.dtype == ut.float32
    with pytest.warns(UserWarning, match="target dtype is not supported"):
        with ut.autocast("cpu", dtype=ut.float32):
            pass
    with pytest.raises(RuntimeError, match="autocast: expected device_type"):
        ut.autocast("tpu")


def test_cpu_grad_scaler_matches_torch():
    """GradScaler("cpu") is enabled, as torch's: the same scaled losses, skipped steps after an overflow, scales
    (backed off, grown every growth_interval good steps), parameters and state dict as torch's."""
    w0 = np.array([0.5, -1.5, 2.0], dtype=np.float32)
    factors = [1.0, float("inf"), 1.0, 1.0, 1.0, float("nan"), 1.0]
    runs = {}
    for lib, T in (("torch", torch), ("ours", ut)):
        w = T.tensor(w0.copy(), requires_grad=True)
        opt = T.optim.SGD([w], lr=0.1, momentum=0.9)
        scaler = T.amp.GradScaler("cpu", init_scale=1024.0, growth_interval=2)
        trace = []
        for f in factors:
            opt.zero_grad()
            loss = (w * w * T.tensor([1.0, 2.0, 3.0])).sum() * f
            scaled = scaler.scale(loss)
            scaled.backward()
            scaler.step(opt)
            scaler.update()
            trace.append((float(scaled.item()), scaler.get_scale(), w.detach().numpy().copy()))
        runs[lib] = (trace, scaler.state_dict())
    for (ls, s, w), (rls, rs, rw) in zip(*(runs[k][0] for k in ("ours", "torch"))):
        assert s == rs
        np.testing.assert_allclose(ls, rls, rtol=1e-6)  # nan == nan here
        np.testing.assert_allclose(w, rw, rtol=1e-6, atol=1e-6)
    assert runs["ours"][1] == runs["torch"][1]


def test_cpu_grad_scaler_errors_as_torch():
    w = Tensor([1.0], requires_grad=True)
    opt = ut.optim.SGD([w], lr=0.1)
    scaler = ut.amp.GradScaler("cpu")
    scaler.scale((w * w).sum()).backward()
    scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match="unscale_\\(\\) has already been called"):
        scaler.unscale_(opt)
    scaler.step(opt)
    with pytest.raises(RuntimeError, match="step\\(\\) has already been called"):
        scaler.step(opt)
    with pytest.raises(RuntimeError, match="Closure use is not currently supported"):
        ut.amp.GradScaler("cpu").step(opt, closure=lambda: None)
    with pytest.raises(RuntimeError, match="The source state dict is empty"):
        ut.amp.GradScaler("cpu").load_state_dict({})
    with pytest.raises(ValueError, match="growth factor must be > 1.0"):
        ut.amp.GradScaler("cpu", growth_factor=1.0)
