"""torch's process-level names under `import unigrad as torch`: torch.optim (and its lr_scheduler) as modules,
torch.device, Size, finfo/iinfo against torch's, threads, seeds, determinism, backends, compile, save/load (tensors
pickle by value; weights_only refuses code; PyTorch's own zip checkpoints load) and testing.assert_close."""

from __future__ import annotations

import io
import os
import pickle
import subprocess
import sys
from collections import OrderedDict
from pathlib import Path

import numpy as np
import pytest
import torch

import unigrad
from unigrad import Tensor, dtypes, nn

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.flavor("torch")  # torch's training loop: no train mode needed to step
def test_optim_is_a_module_like_torch_optim():
    import unigrad.optim as optim
    from unigrad.optim.lr_scheduler import StepLR

    assert unigrad.optim is optim and optim.SGD is unigrad.nn.optim.SGD and optim.lr_scheduler.StepLR is StepLR
    model = nn.Linear(3, 2)
    opt = unigrad.optim.Adam(model.parameters(), lr=0.1)
    sched = unigrad.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    model(Tensor.ones(4, 3)).sum().backward()
    opt.step()
    sched.step()
    assert sched.get_last_lr() == [0.05]


def test_device():
    d = unigrad.device("cpu")
    assert d == "CPU" and d.type == "cpu" and d.index is None and repr(d) == "device(type='cpu')"
    assert unigrad.device("cpu", 1).index == 1 and unigrad.device("cpu:1") == "CPU:1"
    assert unigrad.device(d) is d
    x = unigrad.zeros(2, 3, device=d)  # a device object is a device name everywhere
    assert x.to(unigrad.device("cpu")).device == "CPU" and x.device == d
    cuda = unigrad.device("cuda" if unigrad.cuda.is_available() else "cpu")
    assert cuda.type == "cpu"
    if not unigrad.cuda.is_available():  # CUDA is a device unigrad knows: without a driver, .to() says so
        with pytest.raises(RuntimeError, match="CUDA.*DEVICE=CPU"):
            Tensor.ones(2).to(unigrad.device("cuda"))
    with pytest.raises(ValueError, match="unknown device"):
        Tensor.ones(2).to(unigrad.device("tpu"))
    with pytest.raises(RuntimeError, match="invalid device string"):
        unigrad.device("cpu:x")


@pytest.mark.parametrize("name", ["float16", "bfloat16", "float32", "float64"])
def test_finfo_matches_torch(name):
    ours, theirs = unigrad.finfo(getattr(dtypes, name)), torch.finfo(getattr(torch, name))
    for attr in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution"):
        assert getattr(ours, attr) == pytest.approx(getattr(theirs, attr), rel=1e-6), attr
    assert unigrad.finfo().dtype is dtypes.default_float
    with pytest.raises(TypeError, match="floating point"):
        unigrad.finfo(dtypes.int32)


@pytest.mark.parametrize("name", ["uint8", "int8", "int16", "int32", "int64"])
def test_iinfo_matches_torch(name):
    ours, theirs = unigrad.iinfo(getattr(dtypes, name)), torch.iinfo(getattr(torch, name))
    assert (ours.bits, ours.min, ours.max) == (theirs.bits, theirs.min, theirs.max)
    with pytest.raises(TypeError, match="integer"):
        unigrad.iinfo(dtypes.float32)


def test_size_threads_seeds_determinism_backends_compile():
    s = unigrad.Size([2, 3, 4])
    assert s == (2, 3, 4) and s.numel() == 24 and Tensor.ones(2, 3, 4).shape == s
    before = unigrad.config.THREADS.value
    try:
        unigrad.set_num_threads(1)
        assert unigrad.get_num_threads() == 1
        assert (Tensor.arange(10) * 2).sum().item() == 90
    finally:
        unigrad.config.THREADS.value = before
    with pytest.raises(RuntimeError, match="positive int"):
        unigrad.set_num_threads(0)
    unigrad.manual_seed(1234)
    assert unigrad.initial_seed() == 1234
    a = unigrad.rand(3).numpy()
    unigrad.manual_seed(1234)
    assert np.array_equal(a, unigrad.rand(3).numpy())
    s = unigrad.seed()
    assert unigrad.initial_seed() == s
    unigrad.use_deterministic_algorithms(True)
    assert unigrad.are_deterministic_algorithms_enabled()
    unigrad.use_deterministic_algorithms(False)
    unigrad.backends.cudnn.benchmark = True
    assert unigrad.backends.cudnn.benchmark and not unigrad.backends.mps.is_available()
    assert not unigrad.backends.cudnn.is_available()
    model = nn.Linear(2, 2)
    assert unigrad.compile(model) is model and unigrad.compile(mode="max-autotune")(model) is model


@pytest.mark.flavor("torch")  # torch's training loop: no train mode needed to step
def test_save_load_round_trip(tmp_path):
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    opt = unigrad.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model.train()
    model(Tensor.randn(5, 3)).sum().backward()
    opt.step()
    checkpoint = {
        "epoch": 3,
        "model": model.state_dict(),
        "opt": opt.state_dict(),
        "note": "ok",
        "h": Tensor([1.5]).half(),
    }
    unigrad.save(checkpoint, tmp_path / "ck.pt")
    back = unigrad.load(tmp_path / "ck.pt")
    assert back["epoch"] == 3 and back["note"] == "ok" and isinstance(back["model"], OrderedDict)
    assert back["h"].dtype is dtypes.float16 and back["h"].item() == 1.5
    for k, v in model.state_dict().items():
        assert back["model"][k].dtype is v.dtype and np.array_equal(back["model"][k].numpy(), v.numpy()), k
    fresh = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    fresh.load_state_dict(back["model"])
    x = Tensor.randn(2, 3)
    model.eval()
    fresh.eval()
    np.testing.assert_allclose(fresh(x).numpy(), model(x).numpy(), rtol=1e-6)
    buf = io.BytesIO()
    unigrad.save([Tensor([1, 2]), (Tensor([3.0]),)], buf)
    buf.seek(0)
    lst = unigrad.load(buf, map_location=unigrad.device("cpu"))
    assert lst[0].tolist() == [1, 2] and lst[1][0].tolist() == [3.0]


def test_load_weights_only_refuses_code(tmp_path):
    class Evil:
        def __reduce__(self):
            return os.system, ("echo pwned",)

    path = tmp_path / "evil.pt"
    path.write_bytes(pickle.dumps({"w": Tensor([1.0]), "x": Evil()}))
    with pytest.raises(pickle.UnpicklingError, match="posix.system|os.system"):
        unigrad.load(path)
    unigrad.save({"w": Tensor([1.0]), "n": np.arange(3)}, path)
    assert unigrad.load(path, weights_only=True)["n"].tolist() == [0, 1, 2]


def test_load_reads_a_pytorch_checkpoint(tmp_path):
    tmod = torch.nn.Linear(3, 2)
    torch.save(tmod.state_dict(), tmp_path / "torch.pt")
    sd = unigrad.load(tmp_path / "torch.pt", map_location="cpu")
    ours = nn.Linear(3, 2)
    ours.load_state_dict(sd)
    x = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
    np.testing.assert_allclose(ours(Tensor(x)).numpy(), tmod(torch.from_numpy(x)).detach().numpy(), rtol=1e-5)


def test_tensors_pickle_by_value_across_processes(tmp_path):
    """A pickled tensor holds its values (a lazy one is computed), not its graph: the buffers of this process do not
    exist in another one."""
    path = tmp_path / "t.pkl"
    x = Tensor([1.0, 2.0, 3.0]) * 2
    sharded = Tensor.arange(8).reshape(4, 2).float().shard(("CPU:0", "CPU:1"), axis=0)
    with open(path, "wb") as f:
        pickle.dump({"x": x, "w": Tensor([5.0], requires_grad=True), "s": sharded, "e": Tensor.zeros(0, 2)}, f)
    code = (
        "import pickle, sys\n"
        f"d = pickle.load(open({str(path)!r}, 'rb'))\n"
        "print(d['x'].tolist(), d['w'].tolist(), d['w'].requires_grad, d['s'].device, d['s'].uop.axis, "
        "d['s'].tolist(), d['e'].shape)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == (
        "[2.0, 4.0, 6.0] [5.0] True ('CPU:0', 'CPU:1') 0 [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0], [6.0, 7.0]] (0, 2)"
    )


def test_assert_close_like_torch():
    a = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    unigrad.testing.assert_close(Tensor(a), Tensor(a + 1e-7))
    torch.testing.assert_close(torch.from_numpy(a), torch.from_numpy(a + 1e-7))
    b = a.copy()
    b[1, 2] += 0.5
    with pytest.raises(AssertionError, match=r"Mismatched elements: 1 / 12[\s\S]*index \(1, 2\)"):
        unigrad.testing.assert_close(Tensor(a), Tensor(b))
    with pytest.raises(AssertionError, match="Mismatched elements: 1 / 12"):
        torch.testing.assert_close(torch.from_numpy(a), torch.from_numpy(b))
    unigrad.testing.assert_close(Tensor(a), Tensor(b), rtol=0, atol=0.6)
    with pytest.raises(AssertionError, match="dtype"):
        unigrad.testing.assert_close(Tensor([1, 2]), Tensor([1.0, 2.0]))
    unigrad.testing.assert_close(Tensor([1, 2]), Tensor([1.0, 2.0]), check_dtype=False)
    with pytest.raises(AssertionError, match="shape"):
        unigrad.testing.assert_close(Tensor([1.0, 2.0]), Tensor([1.0]))
    nan = Tensor([float("nan"), float("inf")])
    with pytest.raises(AssertionError):
        unigrad.testing.assert_close(nan, nan)
    unigrad.testing.assert_close(nan, nan, equal_nan=True)
    unigrad.testing.assert_close(Tensor.zeros(0, 3), Tensor.zeros(0, 3))


def test_tensor_device_reads_as_torch_device():
    x = Tensor.ones(2)
    assert x.device == "CPU" and x.device.type == "cpu" and x.device.index is None
    assert Tensor.ones(2, device="cpu:1").device.index == 1
    assert f"{x.device}" == "CPU" and repr(x.device) == "'CPU'"  # prints as the plain name


def test_legacy_tensor_types():
    f = unigrad.FloatTensor([1, 2])
    assert f.dtype is dtypes.float32 and f.tolist() == [1.0, 2.0]
    assert unigrad.LongTensor(2, 3).shape == (2, 3) and unigrad.LongTensor(2, 3).dtype is dtypes.int64
    assert unigrad.ByteTensor([1]).dtype is dtypes.uint8 and unigrad.BoolTensor([1, 0]).tolist() == [True, False]
    x = Tensor([1.7, -2.2])
    assert x.type(unigrad.LongTensor).tolist() == [1, -2] and x.type("torch.IntTensor").dtype is dtypes.int32
    assert x.type() == "torch.FloatTensor" and unigrad.FloatTensor(x).dtype is dtypes.float32
    with pytest.raises(TypeError, match="FloatTensor"):
        unigrad.FloatTensor([1], [2])


def test_cuda_seeding_is_a_no_op_and_synchronize_raises():
    unigrad.cuda.manual_seed(0)
    unigrad.cuda.manual_seed_all(0)
    unigrad.cuda.empty_cache()
    with pytest.raises(RuntimeError, match="no CUDA device"):
        unigrad.cuda.synchronize()


def test_load_reads_a_pytorch_checkpoint_from_a_file_object():
    buf = io.BytesIO()
    torch.save({"w": torch.arange(4.0), "nested": [torch.ones(2, dtype=torch.int32)]}, buf)
    buf.seek(0)
    back = unigrad.load(buf, map_location="cpu")
    assert back["w"].tolist() == [0.0, 1.0, 2.0, 3.0] and back["nested"][0].dtype is dtypes.int32


def test_module_cuda_says_there_is_no_cuda():
    with pytest.raises(RuntimeError, match="Linear.cuda: unigrad has no CUDA device"):
        nn.Linear(2, 2).cuda()
    assert nn.Linear(2, 2).cpu().weight.device == "CPU"


def test_index_and_format_like_torch():
    items = list(range(10))
    assert items[unigrad.tensor(2)] == items[torch.tensor(2)] == 2 and len(range(unigrad.tensor([3]))) == 3
    with pytest.raises(TypeError, match="only integer tensors of a single element"):
        items[unigrad.tensor(1.0)]
    assert f"{unigrad.tensor(1.5):.2f}" == f"{torch.tensor(1.5):.2f}" == "1.50"
    assert f"{unigrad.tensor([1, 2])}" == f"{torch.tensor([1, 2])}" == "tensor([1, 2])"
    for value in ([1.0, 2.0], [2.25]):  # not 0-d: refused, as torch
        with pytest.raises(TypeError, match="format"):
            f"{unigrad.tensor(value):.2f}"
        with pytest.raises(TypeError, match="format"):
            f"{torch.tensor(value):.2f}"


def test_autocast_off_runs_the_region_and_on_says_what_to_do():
    x = unigrad.ones(2, 2)
    with unigrad.autocast("cpu", enabled=False):
        y = (x @ x).numpy()
    assert y.dtype == np.float32 and (y == 2).all()
    assert unigrad.autocast("cpu", enabled=False)(lambda: 3)() == 3
    with pytest.raises(NotImplementedError, match=r"autocast\('cpu'\): automatic mixed precision is not implemented"):
        unigrad.autocast("cpu", dtype=unigrad.bfloat16)
