"""unigrad.nn.state: safetensors (against the `safetensors` package), PyTorch zip checkpoints (written by
torch.save), state dicts walked from attributes, and load_state_dict's errors (as PyTorch raises them)."""

import collections
import gc
import json
import os
import pickle
import struct
import tracemalloc
import zipfile
from typing import NamedTuple

import numpy as np
import pytest
import torch

from unigrad import Tensor, dtypes
from unigrad.nn import state
from unigrad.nn.state import (
    IncompatibleKeys,
    get_parameters,
    get_state_dict,
    load_state_dict,
    safe_load,
    safe_load_metadata,
    safe_save,
    torch_load,
)

safetensors_numpy = pytest.importorskip("safetensors.numpy")
safetensors_torch = pytest.importorskip("safetensors.torch")

# every dtype of the safetensors format that unigrad has, by the format's name
SAFE = {
    "BOOL": dtypes.bool,
    "U8": dtypes.uint8,
    "I8": dtypes.int8,
    "I16": dtypes.int16,
    "U16": dtypes.uint16,
    "I32": dtypes.int32,
    "U32": dtypes.uint32,
    "I64": dtypes.int64,
    "U64": dtypes.uint64,
    "F16": dtypes.float16,
    "BF16": dtypes.bfloat16,
    "F32": dtypes.float32,
    "F64": dtypes.float64,
}


def sample(dt, shape=(3, 5), seed=0) -> np.ndarray:
    """Values of `dt` with the extremes and (for floats) nan, +-inf, -0 and subnormals; bfloat16 as uint16 bits,
    drawn over all bit patterns (nan payloads included), so a round trip that changes any bit fails."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    if dt is dtypes.bool:
        return rng.integers(0, 2, shape).astype(bool)
    if dt is dtypes.bfloat16:
        return rng.integers(0, 1 << 16, shape, dtype=np.uint16)
    npdt = np.dtype(dt.fmt)
    if dt.is_float:
        out = (rng.standard_normal(n) * 100).astype(npdt)
        special = np.array([np.nan, np.inf, -np.inf, -0.0, np.finfo(npdt).smallest_subnormal], dtype=npdt)
    else:
        info = np.iinfo(npdt)
        out = rng.integers(info.min, info.max, n, dtype=npdt, endpoint=True)
        special = np.array([info.min, info.max, 0], dtype=npdt)
    out[: min(n, len(special))] = special[: min(n, len(special))]
    return out.reshape(shape)


def make(arr: np.ndarray, dt) -> Tensor:
    return Tensor(arr).bitcast(dtypes.bfloat16) if dt is dtypes.bfloat16 else Tensor(arr)


def raw(t: Tensor) -> bytes:
    """Exact bits (bfloat16 comes out of numpy() as float32 whose top half is its bits)."""
    return t.numpy().tobytes()


def to_torch(arr: np.ndarray, dt) -> torch.Tensor:
    out = torch.from_numpy(arr.copy())  # (np.ascontiguousarray would make a 0-d array 1-d)
    return out.view(torch.bfloat16) if dt is dtypes.bfloat16 else out


def torch_bits(t: torch.Tensor) -> np.ndarray:
    return t.view(torch.uint16).numpy() if t.dtype is torch.bfloat16 else t.numpy()


def assert_same(out: Tensor, ref: Tensor) -> None:
    assert out.dtype is ref.dtype and out.shape == ref.shape
    assert raw(out) == raw(ref)


# ---------------------------------------------------------------- safetensors round trips


@pytest.mark.parametrize("code", SAFE)
def test_roundtrip_every_dtype(tmp_path, code):
    dt = SAFE[code]
    ts = {"x": make(sample(dt), dt), "scalar": make(sample(dt, ()), dt), "empty": make(sample(dt, (0, 4)), dt)}
    safe_save(ts, tmp_path / "t.safetensors")
    back = safe_load(tmp_path / "t.safetensors")
    assert set(back) == set(ts)
    for k in ts:
        assert_same(back[k], ts[k])
    assert back["scalar"].shape == () and back["empty"].shape == (0, 4)


@pytest.mark.parametrize("code", SAFE)
def test_ours_read_by_safetensors_torch(tmp_path, code):
    dt = SAFE[code]
    host = {"x": sample(dt, (4, 3)), "scalar": sample(dt, ()), "empty": sample(dt, (2, 0))}
    safe_save({k: make(v, dt) for k, v in host.items()}, tmp_path / "t.safetensors")
    ref = safetensors_torch.load_file(tmp_path / "t.safetensors")
    for k, v in host.items():
        assert str(ref[k].dtype) == f"torch.{dt.name}" and tuple(ref[k].shape) == v.shape
        assert torch_bits(ref[k]).tobytes() == v.tobytes()


@pytest.mark.parametrize("code", [c for c in SAFE if c != "BF16"])  # numpy has no bfloat16
def test_ours_read_by_safetensors_numpy(tmp_path, code):
    dt = SAFE[code]
    host = {"x": sample(dt, (2, 3, 4)), "scalar": sample(dt, ())}
    safe_save({k: make(v, dt) for k, v in host.items()}, tmp_path / "t.safetensors", metadata={"format": "np"})
    ref = safetensors_numpy.load_file(tmp_path / "t.safetensors")
    for k, v in host.items():
        assert ref[k].dtype == v.dtype and ref[k].shape == v.shape
        assert ref[k].tobytes() == v.tobytes()


@pytest.mark.parametrize("code", SAFE)
def test_written_by_safetensors_torch(tmp_path, code):
    dt = SAFE[code]
    host = {"w": sample(dt, (5, 2)), "s": sample(dt, ()), "e": sample(dt, (0,))}
    safetensors_torch.save_file({k: to_torch(v, dt) for k, v in host.items()}, tmp_path / "t.safetensors")
    out = safe_load(tmp_path / "t.safetensors")
    for k, v in host.items():
        assert out[k].dtype is dt and out[k].shape == v.shape
        assert raw(out[k]) == raw(make(v, dt))


@pytest.mark.parametrize("code", [c for c in SAFE if c != "BF16"])
def test_written_by_safetensors_numpy(tmp_path, code):
    dt = SAFE[code]
    host = {"a": sample(dt, (7,)), "b": sample(dt, (1, 2, 3), seed=1)}
    safetensors_numpy.save_file(host, tmp_path / "t.safetensors", metadata={"who": "numpy"})
    out = safe_load(tmp_path / "t.safetensors")
    for k, v in host.items():
        assert out[k].dtype is dt
        assert out[k].numpy().tobytes() == v.tobytes()
    assert safe_load_metadata(tmp_path / "t.safetensors") == {"who": "numpy"}


def test_bfloat16_values(tmp_path):
    """bf16 loads as the values torch has (not only the same bits), and arithmetic on it works."""
    ref = torch.tensor([1.5, -2.25, 3.0e38, 1e-40, float("nan")], dtype=torch.bfloat16)
    safetensors_torch.save_file({"w": ref}, tmp_path / "t.safetensors")
    w = safe_load(tmp_path / "t.safetensors")["w"]
    np.testing.assert_array_equal(w.numpy(), ref.float().numpy())
    np.testing.assert_array_equal((w.float() * 2).numpy()[:2], [3.0, -4.5])


def test_many_tensors_mixed_dtypes(tmp_path):
    ts = {f"layer.{i}.{dt.name}": make(sample(dt, (i + 1, 3), seed=i), dt) for i, dt in enumerate(SAFE.values())}
    safe_save(ts, tmp_path / "m.safetensors")
    back = safe_load(tmp_path / "m.safetensors")
    assert set(back) == set(ts)
    for k in ts:
        assert_same(back[k], ts[k])
    ref = safetensors_torch.load_file(tmp_path / "m.safetensors")
    assert set(ref) == set(ts)


def test_layout_padded_contiguous_aligned(tmp_path):
    ts = {"b": Tensor(np.ones(3, np.int8)), "a": Tensor(np.ones(3, np.float64)), "c": Tensor(np.ones(5, np.float16))}
    safe_save(ts, tmp_path / "t.safetensors", metadata={"k": "v"})
    data = (tmp_path / "t.safetensors").read_bytes()
    (n,) = struct.unpack("<Q", data[:8])
    assert n % 8 == 0 and data[8:9] == b"{"
    header = json.loads(data[8 : 8 + n])
    assert header.pop("__metadata__") == {"k": "v"}
    spans = sorted((v["data_offsets"], k) for k, v in header.items())
    assert [k for _, k in spans] == ["a", "c", "b"]  # widest first, then by name: each starts aligned
    pos = 0
    for (begin, end), k in spans:
        assert begin == pos and begin % ts[k].dtype.itemsize == 0
        pos = end
    assert 8 + n + pos == len(data)


def test_metadata(tmp_path):
    path = tmp_path / "t.safetensors"
    safe_save({"x": Tensor([1.0])}, path, metadata={"format": "pt", "note": "ünïcode"})
    assert safe_load_metadata(path) == {"format": "pt", "note": "ünïcode"}
    with open(path, "rb") as f:
        assert safetensors_torch.safe_open(f.name, "pt").metadata() == {"format": "pt", "note": "ünïcode"}
    safe_save({"x": Tensor([1.0])}, path)
    assert safe_load_metadata(path) == {}
    with pytest.raises(TypeError, match="strings"):
        safe_save({"x": Tensor([1.0])}, path, metadata={"epoch": 3})


def test_no_tensors(tmp_path):
    safe_save({}, tmp_path / "t.safetensors")
    assert safe_load(tmp_path / "t.safetensors") == {}
    assert safetensors_numpy.load_file(tmp_path / "t.safetensors") == {}


def test_load_from_bytes_and_device(tmp_path):
    x = sample(dtypes.float32, (4, 4))
    safetensors_numpy.save_file({"x": x}, tmp_path / "t.safetensors")
    data = (tmp_path / "t.safetensors").read_bytes()
    for src in (data, bytearray(data), memoryview(data), str(tmp_path / "t.safetensors")):
        np.testing.assert_array_equal(safe_load(src)["x"].numpy(), x)
    out = safe_load(tmp_path / "t.safetensors", device="PYTHON")["x"]
    assert out.device == "PYTHON"
    np.testing.assert_array_equal(out.numpy(), x)


def test_lazy_and_noncontiguous_tensors_save(tmp_path):
    base = Tensor(np.arange(12, dtype=np.float32).reshape(3, 4))
    ts = {"t": base.T, "s": base[1:, ::2], "e": base + 1, "c": Tensor.full((2, 2), 7, dtype=dtypes.bfloat16)}
    safe_save(ts, tmp_path / "t.safetensors")
    ref = safetensors_torch.load_file(tmp_path / "t.safetensors")
    for k, t in ts.items():
        np.testing.assert_array_equal(ref[k].float().numpy(), t.numpy())


def test_large_file_is_mapped_not_read(tmp_path, monkeypatch):
    """8 tensors of 4 MB: values right, the file is mapped (mmap.mmap called on it) and Python memory peaks at
    the loaded tensors' own buffers, not at another copy of the whole file."""
    n = 1 << 20
    path = tmp_path / "big.safetensors"
    safetensors_numpy.save_file(
        {f"t{i}": np.full(n, i, np.float32) + np.arange(n, dtype=np.float32) for i in range(8)}, path
    )
    size = os.path.getsize(path)
    mapped = []
    real_mmap = state.mmap.mmap

    def spy(fileno, length, *args, **kwargs):
        m = real_mmap(fileno, length, *args, **kwargs)
        if fileno != -1:  # a file (the CPU allocator maps anonymous memory for big buffers)
            mapped.append(m)
        return m

    monkeypatch.setattr(state.mmap, "mmap", spy)
    gc.collect()
    tracemalloc.start()
    try:
        out = safe_load(path, device="CPU")  # CPU buffers are raw bytes (PYTHON's are lists of Python numbers)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(mapped) == 1 and mapped[0].closed  # mapped, and unmapped once loaded
    assert peak < size + 2 * 4 * n, f"peak {peak} bytes loading a {size}-byte file"
    for i in (0, 5, 7):
        v = out[f"t{i}"].numpy()
        assert v[0] == i and v[-1] == i + n - 1 and v[123457] == i + 123457


# ---------------------------------------------------------------- safetensors errors


def _file(header, data=b"", pad=True) -> bytes:
    raw_header = header if isinstance(header, bytes) else json.dumps(header).encode()
    return struct.pack("<Q", len(raw_header)) + raw_header + data


F32_4 = np.arange(4, dtype=np.float32).tobytes()
BAD_FILES = {
    "too short": (b"\x01\x00", ValueError, "too short"),
    "header past end": (struct.pack("<Q", 1000) + b"{}", ValueError, "header length"),
    "huge header": (struct.pack("<Q", 1 << 62) + b"{}", ValueError, "header length"),
    "not json": (_file(b"{not json"), ValueError, "JSON"),
    "not utf8": (_file(b'{"\xff": 1}'), ValueError, "UTF-8"),
    "not an object": (_file([1, 2]), ValueError, "JSON object"),
    "unknown dtype": (_file({"a": {"dtype": "F33", "shape": [4], "data_offsets": [0, 16]}}, F32_4), ValueError, "F33"),
    "missing field": (_file({"a": {"dtype": "F32", "shape": [4]}}, F32_4), ValueError, "data_offsets"),
    "bad shape": (_file({"a": {"dtype": "F32", "shape": [-4], "data_offsets": [0, 16]}}, F32_4), ValueError, "shape"),
    "size mismatch": (_file({"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 16]}}, F32_4), ValueError, "12"),
    "past end": (_file({"a": {"dtype": "F32", "shape": [8], "data_offsets": [0, 32]}}, F32_4), ValueError, "cover"),
    "trailing bytes": (
        _file({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}, F32_4 + b"xx"),
        ValueError,
        "cover",
    ),
    "hole": (_file({"a": {"dtype": "F32", "shape": [2], "data_offsets": [8, 16]}}, F32_4), ValueError, "hole"),
    "overlap": (
        _file(
            {
                "a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 12]},
                "b": {"dtype": "F32", "shape": [2], "data_offsets": [8, 16]},
            },
            F32_4,
        ),
        ValueError,
        "overlaps",
    ),
    "duplicate name": (
        _file(
            b'{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},'
            b'"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}',
            F32_4,
        ),
        ValueError,
        "twice",
    ),
    "bad metadata": (_file({"__metadata__": {"epoch": 3}}), ValueError, "__metadata__"),
    "f8": (
        _file({"a": {"dtype": "F8_E4M3", "shape": [4], "data_offsets": [0, 4]}}, b"abcd"),
        NotImplementedError,
        "F8_E4M3",
    ),
    "f8 e5m2": (
        _file({"a": {"dtype": "F8_E5M2", "shape": [1], "data_offsets": [0, 1]}}, b"a"),
        NotImplementedError,
        "F8_E5M2",
    ),
}


@pytest.mark.parametrize("name", BAD_FILES)
def test_corrupt_files(tmp_path, name):
    data, exc, match = BAD_FILES[name]
    with pytest.raises(exc, match=match):
        safe_load(data)
    (tmp_path / "bad.safetensors").write_bytes(data)
    with pytest.raises(exc, match=match):
        safe_load(tmp_path / "bad.safetensors")


def test_empty_file(tmp_path):
    (tmp_path / "e.safetensors").write_bytes(b"")
    with pytest.raises(ValueError, match="empty"):
        safe_load(tmp_path / "e.safetensors")


def test_safe_save_errors(tmp_path):
    with pytest.raises(TypeError, match="expected a Tensor"):
        safe_save({"x": np.zeros(3)}, tmp_path / "t.safetensors")
    with pytest.raises(TypeError, match="names"):
        safe_save({"__metadata__": Tensor([1.0])}, tmp_path / "t.safetensors")
    with pytest.raises(TypeError, match="names"):
        safe_save({3: Tensor([1.0])}, tmp_path / "t.safetensors")


# ---------------------------------------------------------------- state dicts


class Lin:
    def __init__(self, i, o, bias=True):
        self.weight = Tensor(np.random.default_rng(i * 10 + o).standard_normal((o, i)).astype(np.float32))
        self.bias = Tensor(np.zeros(o, np.float32)) if bias else None
        self._cache = Tensor([1.0])  # private: not state
        self.name = "lin"


class Norm:
    __slots__ = ("weight", "running_mean", "num_batches_tracked", "_hidden")

    def __init__(self, n):
        self.weight = Tensor(np.ones(n, np.float32))
        self.running_mean = Tensor(np.zeros(n, np.float32))
        self.num_batches_tracked = Tensor(np.array(0, np.int64))
        self._hidden = Tensor([2.0])


class Pair(NamedTuple):
    first: Tensor
    second: Tensor


class Net:
    def __init__(self):
        self.layers = [Lin(4, 8), Lin(8, 3, bias=False)]
        self.norm = Norm(8)
        self.heads = {"cls": Lin(3, 2), "reg": (Lin(3, 1),)}
        self.pair = Pair(Tensor([1.0, 2.0]), Tensor([3.0]))
        self.act = Tensor.relu  # functions, classes and modules hold no state
        self.kind = Lin
        self.np = np
        self.parent = self  # cycles end the walk


NET_KEYS = [
    "layers.0.weight",
    "layers.0.bias",
    "layers.1.weight",
    "norm.weight",
    "norm.running_mean",
    "norm.num_batches_tracked",
    "heads.cls.weight",
    "heads.cls.bias",
    "heads.reg.0.weight",
    "heads.reg.0.bias",
    "pair.first",
    "pair.second",
]


def test_get_state_dict_names():
    net = Net()
    sd = get_state_dict(net)
    assert list(sd) == NET_KEYS
    assert sd["layers.1.weight"] is net.layers[1].weight and sd["norm.running_mean"] is net.norm.running_mean
    assert list(get_state_dict(net, prefix="model.")) == ["model." + k for k in NET_KEYS]
    assert list(get_state_dict(net, prefix="model")) == ["model." + k for k in NET_KEYS]
    assert list(get_state_dict(net.layers)) == ["0.weight", "0.bias", "1.weight"]
    t = Tensor([1.0])
    assert get_state_dict(t) == {"": t} and get_state_dict(t, "w") == {"w": t}


def test_state_dict_names_match_torch():
    """The same structure in torch.nn gives the same keys (lists as Sequential/ModuleList, attributes as modules)."""

    class TorchNet(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = torch.nn.ModuleList([torch.nn.Linear(4, 8), torch.nn.Linear(8, 3, bias=False)])
            self.heads = torch.nn.ModuleDict(
                {"cls": torch.nn.Linear(3, 2), "reg": torch.nn.Sequential(torch.nn.Linear(3, 1))}
            )

    class Ours:
        def __init__(self):
            self.layers = [Lin(4, 8), Lin(8, 3, bias=False)]
            self.heads = {"cls": Lin(3, 2), "reg": [Lin(3, 1)]}

    assert list(get_state_dict(Ours())) == list(TorchNet().state_dict())


def test_shared_tensor_and_get_parameters():
    net = Net()
    net.layers[1].weight = net.layers[0].weight.T.contiguous()
    tied = Lin(2, 2)
    net.tied = [tied, tied]  # the same layer under two names
    sd = get_state_dict(net)
    assert sd["tied.0.weight"] is sd["tied.1.weight"]
    params = get_parameters(net)
    assert len(params) == len({id(t) for t in sd.values()}) == len(sd) - 2
    assert params[0] is net.layers[0].weight
    assert get_parameters([]) == [] and get_state_dict(object()) == {}


# ---------------------------------------------------------------- load_state_dict


def _state_of(net) -> dict:
    return {
        k: Tensor(np.random.default_rng(i).standard_normal(t.shape).astype(np.float64))
        for i, (k, t) in enumerate(get_state_dict(net).items())
    }


def test_load_state_dict_assigns_and_casts():
    net = Net()
    before = get_state_dict(net)
    new = _state_of(net)
    assert load_state_dict(net, new) == IncompatibleKeys([], [])
    after = get_state_dict(net)
    for k, t in after.items():
        assert t is before[k]  # written into the model's own tensors
        assert t.dtype is (dtypes.int64 if k.endswith("num_batches_tracked") else dtypes.float32)
        np.testing.assert_array_equal(t.numpy(), new[k].numpy().astype(t.dtype.fmt))


def test_load_state_dict_missing_and_unexpected():
    net = Net()
    new = _state_of(net)
    del new["layers.0.bias"], new["norm.weight"]
    new["extra.weight"] = Tensor([1.0])
    old = net.layers[0].weight.numpy()
    with pytest.raises(RuntimeError) as e:
        load_state_dict(net, new)
    msg = str(e.value)
    assert msg.startswith("Error(s) in loading state_dict for Net:")
    assert 'Missing key(s) in state_dict: "layers.0.bias", "norm.weight".' in msg
    assert 'Unexpected key(s) in state_dict: "extra.weight".' in msg
    np.testing.assert_array_equal(net.layers[0].weight.numpy(), old)  # an error writes nothing
    keys = load_state_dict(net, new, strict=False)
    assert keys.missing_keys == ["layers.0.bias", "norm.weight"] and keys.unexpected_keys == ["extra.weight"]
    np.testing.assert_array_equal(net.layers[0].weight.numpy(), new["layers.0.weight"].numpy().astype(np.float32))
    np.testing.assert_array_equal(net.norm.weight.numpy(), np.ones(8, np.float32))  # missing: untouched


@pytest.mark.parametrize("strict", [True, False])
def test_load_state_dict_shape_mismatch(strict):
    net = Net()
    new = _state_of(net)
    new["layers.0.weight"] = Tensor(np.zeros((4, 8), np.float32))
    new["pair.second"] = np.zeros((2,), np.float32)
    with pytest.raises(RuntimeError) as e:
        load_state_dict(net, new, strict=strict)
    msg = str(e.value)
    assert (
        "size mismatch for layers.0.weight: copying a param with shape (4, 8) from checkpoint, the shape in "
        "current model is (8, 4)." in msg
    )
    assert "size mismatch for pair.second" in msg and "(2,)" in msg and "(1,)" in msg
    assert not np.array_equal(net.layers[0].bias.numpy(), new["layers.0.bias"].numpy())  # nothing written


def test_load_state_dict_from_numpy_device_dtype_consume():
    net = Net()
    net.layers[0].weight = Tensor(np.zeros((8, 4), np.float32)).cast(dtypes.bfloat16).realize()
    net.layers[0].bias = Tensor(np.zeros(8, np.float32), device="PYTHON")
    sd = {k: t.numpy() for k, t in get_state_dict(Net()).items()}
    sd["layers.0.bias"] = Tensor(np.arange(8, dtype=np.float32))  # on CPU: moved to the model's PYTHON tensor
    sd["layers.0.weight"] = Tensor(np.full((8, 4), 1.5, np.float32), device="PYTHON")
    load_state_dict(net, sd, consume=True)
    assert sd == {}
    assert net.layers[0].weight.dtype is dtypes.bfloat16 and net.layers[0].bias.device == "PYTHON"
    np.testing.assert_array_equal(net.layers[0].weight.numpy(), np.full((8, 4), 1.5, np.float32))
    np.testing.assert_array_equal(net.layers[0].bias.numpy(), np.arange(8, dtype=np.float32))


def test_load_state_dict_keeps_gradients_and_tied_weights():
    lin = Lin(3, 2)
    lin.weight.requires_grad = True
    lin.tied = lin.weight
    w = np.arange(6, dtype=np.float32).reshape(2, 3)
    load_state_dict(lin, {"weight": Tensor(w), "tied": Tensor(w), "bias": Tensor([1.0, 2.0])})
    assert lin.weight.requires_grad and lin.tied is lin.weight
    x = Tensor(np.ones((1, 3), np.float32))
    (x @ lin.weight.T + lin.bias).sum().backward()
    np.testing.assert_array_equal(lin.weight.grad.numpy(), np.ones((2, 3), np.float32))
    np.testing.assert_array_equal((x @ lin.weight.T + lin.bias).numpy(), [[4.0, 14.0]])


def test_save_load_model_roundtrip(tmp_path):
    a, b = Net(), Net()
    for t in get_state_dict(a).values():
        t.assign(t + 1).realize()
    safe_save(get_state_dict(a), tmp_path / "m.safetensors")
    load_state_dict(b, safe_load(tmp_path / "m.safetensors"))
    for k, t in get_state_dict(b).items():
        assert_same(t, get_state_dict(a)[k])


def test_load_torch_module_state(tmp_path):
    """A torch.nn model saved both ways loads into the same-named unigrad structure."""
    ref = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3, bias=False))
    torch.save(ref.state_dict(), tmp_path / "m.pt")
    safetensors_torch.save_file(ref.state_dict(), tmp_path / "m.safetensors")
    x = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    expected = ref(torch.from_numpy(x)).detach().numpy()
    for sd in (torch_load(tmp_path / "m.pt"), safe_load(tmp_path / "m.safetensors")):
        net = {"0": Lin(4, 8), "2": Lin(8, 3, bias=False)}
        load_state_dict(net, sd)
        out = (Tensor(x) @ net["0"].weight.T + net["0"].bias).relu() @ net["2"].weight.T
        np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------- torch_load

TORCH_DTYPES = [
    torch.float32,
    torch.float16,
    torch.bfloat16,
    torch.float64,
    torch.int64,
    torch.int32,
    torch.int16,
    torch.int8,
    torch.uint8,
    torch.bool,
]


def _torch_sample(dtype, shape=(4, 6)) -> torch.Tensor:
    g = torch.Generator().manual_seed(0)
    if dtype is torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    if dtype.is_floating_point:
        return (torch.randn(shape, generator=g, dtype=torch.float64) * 50).to(dtype)
    info = torch.iinfo(dtype)
    return torch.randint(max(info.min, -(2**31)), min(info.max, 2**31 - 1), shape, generator=g, dtype=dtype)


def check_torch(out, ref: torch.Tensor) -> None:
    assert isinstance(out, Tensor)
    assert out.dtype.name == str(ref.dtype).removeprefix("torch.") and out.shape == tuple(ref.shape)
    assert out.numpy().tobytes() == (ref.float() if ref.dtype is torch.bfloat16 else ref).detach().numpy().tobytes()


@pytest.mark.parametrize("dtype", TORCH_DTYPES, ids=str)
def test_torch_load_dtypes_and_views(tmp_path, dtype):
    base = _torch_sample(dtype)
    saved = collections.OrderedDict(
        full=base,
        transposed=base.t(),  # strides (1, 6)
        slice=base[1:3, 2:5],  # an offset into the shared storage
        stepped=base[::2, ::3],
        expanded=base[0:1, 1:2].expand(3, 4),  # stride 0
        scalar=base[2, 3],  # 0-d, offset 15
        empty=base[:, 6:],
        own=base[1].clone(),
    )
    torch.save(saved, tmp_path / "t.pt")
    out = torch_load(tmp_path / "t.pt")
    assert type(out) is collections.OrderedDict and list(out) == list(saved)
    for k, ref in saved.items():
        check_torch(out[k], ref)


def test_torch_load_nested(tmp_path):
    lin = torch.nn.Linear(3, 2)
    obj = {
        "model": lin.state_dict(),
        "epoch": 7,
        "lr": 1e-3,
        "name": "ckpt",
        "none": None,
        "history": [torch.arange(3), (torch.ones(2, dtype=torch.float16), {"deep": torch.tensor(True)})],
        "param": torch.nn.Parameter(torch.full((2,), 0.5)),
        "size": torch.Size([2, 3]),
    }
    torch.save(obj, tmp_path / "c.pth")
    out = torch_load(tmp_path / "c.pth")
    assert (out["epoch"], out["lr"], out["name"], out["none"], out["size"]) == (7, 1e-3, "ckpt", None, (2, 3))
    assert list(out["model"]) == ["weight", "bias"]
    check_torch(out["model"]["weight"], lin.weight)
    check_torch(out["history"][0], obj["history"][0])
    check_torch(out["history"][1][0], obj["history"][1][0])
    check_torch(out["history"][1][1]["deep"], obj["history"][1][1]["deep"])
    check_torch(out["param"], obj["param"])


def test_torch_load_device_and_compressed(tmp_path, monkeypatch):
    x = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    torch.save({"x": x.t()}, tmp_path / "t.pt")
    mapped, real_mmap = [], state.mmap.mmap
    monkeypatch.setattr(
        state.mmap, "mmap", lambda *args, **kwargs: mapped.append(real_mmap(*args, **kwargs)) or mapped[-1]
    )
    out = torch_load(tmp_path / "t.pt", device="PYTHON")["x"]
    assert len(mapped) == 1 and mapped[0].closed  # storages were views of the mapped file, all released
    assert out.device == "PYTHON"
    check_torch(out, x.t())
    # the same archive re-zipped with deflate: storages are inflated instead of mapped
    with (
        zipfile.ZipFile(tmp_path / "t.pt") as src,
        zipfile.ZipFile(tmp_path / "z.pt", "w", zipfile.ZIP_DEFLATED) as dst,
    ):
        for info in src.infolist():
            dst.writestr(info.filename, src.read(info))
    check_torch(torch_load(tmp_path / "z.pt")["x"], x.t())


def test_torch_load_refuses_globals(tmp_path):
    torch.save({"f": os.system}, tmp_path / "evil.pt")
    with pytest.raises(pickle.UnpicklingError, match="refusing to load global (posix|nt).system"):
        torch_load(tmp_path / "evil.pt")
    torch.save({"m": torch.nn.Linear(2, 2)}, tmp_path / "module.pt")  # a whole module, not a state dict
    with pytest.raises(pickle.UnpicklingError, match="refusing"):
        torch_load(tmp_path / "module.pt")
    torch.save({"c": torch.zeros(2, dtype=torch.complex64)}, tmp_path / "complex.pt")
    with pytest.raises(NotImplementedError, match="ComplexFloatStorage"):
        torch_load(tmp_path / "complex.pt")


def test_torch_load_legacy_format(tmp_path):
    torch.save({"x": torch.ones(2)}, tmp_path / "old.pt", _use_new_zipfile_serialization=False)
    with pytest.raises(ValueError, match="legacy"):
        torch_load(tmp_path / "old.pt")


def _binunicode(s: str) -> bytes:
    return b"X" + struct.pack("<I", len(s)) + s.encode()


def _crafted(
    tmp_path, offset, size, stride, numel, storage_bytes=None, rebuild=b"torch._utils\n_rebuild_tensor_v2\n", pid=None
):
    """A checkpoint whose data.pkl is written opcode by opcode: one tensor view of storage '0' (float32)."""
    ints = lambda xs: b"(" + b"".join(b"J" + struct.pack("<i", x) for x in xs) + b"t"  # noqa: E731
    persistent = pid or (
        b"("
        + _binunicode("storage")
        + b"ctorch\nFloatStorage\n"
        + _binunicode("0")
        + _binunicode("cpu")
        + b"J"
        + struct.pack("<i", numel)
        + b"t"
    )
    pkl = (
        b"\x80\x02c"
        + rebuild
        + b"("
        + persistent
        + b"Q"
        + b"J"
        + struct.pack("<i", offset)
        + ints(size)
        + ints(stride)
        + b"\x89ccollections\nOrderedDict\n)RtR."
    )
    data = storage_bytes if storage_bytes is not None else np.arange(numel, dtype=np.float32).tobytes()
    with zipfile.ZipFile(tmp_path / "c.pt", "w") as z:
        z.writestr("archive/data.pkl", pkl)
        z.writestr("archive/byteorder", "little")
        z.writestr("archive/data/0", data)
    return tmp_path / "c.pt"


def test_torch_load_crafted(tmp_path):
    out = torch_load(_crafted(tmp_path, 2, (2, 2), (1, 3), 8))
    np.testing.assert_array_equal(out.numpy(), [[2, 5], [3, 6]])
    with pytest.raises(pickle.UnpicklingError, match="reaches element 8 of a storage of 8"):
        torch_load(_crafted(tmp_path, 2, (2, 2), (1, 5), 8))
    with pytest.raises(pickle.UnpicklingError, match="bad tensor view"):
        torch_load(_crafted(tmp_path, 0, (2,), (-1,), 8))
    with pytest.raises(ValueError, match="holds 12 bytes"):
        torch_load(_crafted(tmp_path, 0, (2,), (1,), 8, storage_bytes=b"\0" * 12))
    with pytest.raises(pickle.UnpicklingError, match="refusing to load global builtins.eval"):
        torch_load(_crafted(tmp_path, 0, (2,), (1,), 8, rebuild=b"builtins\neval\n"))
    with pytest.raises(pickle.UnpicklingError, match="persistent id"):
        torch_load(_crafted(tmp_path, 0, (2,), (1,), 8, pid=b"(" + _binunicode("module") + b"t"))
