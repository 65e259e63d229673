"""The public names and knobs tinygrad programs use (issue 30): train mode and the optimizers' refusal to step
outside it, DEFAULT_FLOAT, the dtype groups and helpers on `dtypes`, fp8, GlobalCounters, LARS and SGD(classic=),
TinyJit(prune=) and pickled TinyJit, Tensor.is_param, Variable(dtype=), Tensor(bytes), size-changing bitcast,
pad_to(value=), the disk: device, pickle protocol 5, nn.BatchNorm(sz=), LayerNorm2d, Conv2d(padding='same'). Values
are checked against numpy or torch."""

import contextlib

import numpy as np
import pytest
import torch

from unigrad import Context, Tensor, dtypes, nn
from unigrad.nn import optim


# ---------------------------------------------------------------- train mode
def _one_step(opt: optim.Optimizer, w: Tensor) -> None:
    opt.zero_grad()
    (w * w).sum().backward()
    opt.step()


def test_optimizer_refuses_to_step_outside_train_mode():
    w = Tensor([1.0, 2.0])
    opt = optim.SGD([w], lr=0.1)
    with pytest.raises(RuntimeError, match=r"Tensor.train\(\)"):
        _one_step(opt, w)
    np.testing.assert_array_equal(w.numpy(), [1.0, 2.0])  # nothing was written
    with pytest.raises(RuntimeError, match="TRAINING=1"):
        opt.schedule_step()


@pytest.mark.parametrize("how", ["train", "context", "flag"])
def test_optimizer_steps_in_train_mode(how):
    w = Tensor([1.0, 2.0])
    opt = optim.SGD([w], lr=0.1)
    if how == "train":
        with Tensor.train():
            _one_step(opt, w)
    elif how == "context":
        with Context(TRAINING=1):
            assert Tensor.training
            _one_step(opt, w)
        assert not Tensor.training
    else:
        Tensor.training = True
        _one_step(opt, w)
    np.testing.assert_allclose(w.numpy(), [0.8, 1.6])


@pytest.mark.flavor("torch")
def test_torch_flavor_steps_without_train_mode():
    w = Tensor([1.0, 2.0], requires_grad=True)
    _one_step(optim.SGD([w], lr=0.1), w)
    np.testing.assert_allclose(w.numpy(), [0.8, 1.6])


def test_context_training_switches_dropout():
    x = Tensor.ones(1000)
    np.testing.assert_array_equal(x.dropout(0.5).numpy(), np.ones(1000))
    with Context(TRAINING=1):
        out = x.dropout(0.5).numpy()
    assert set(np.unique(out)) <= {0.0, 2.0} and 300 < (out == 0).sum() < 700
    with Context(TRAINING=1):
        layer = nn.Dropout(0.5)
        assert ((layer(x).numpy() == 0).sum()) > 0
    np.testing.assert_array_equal(nn.Dropout(0.5)(x).numpy(), np.ones(1000))


# ---------------------------------------------------------------- DEFAULT_FLOAT
@pytest.mark.parametrize(
    "name,dt", [("HALF", dtypes.float16), ("FLOAT", dtypes.float32), ("bfloat16", dtypes.bfloat16)]
)
def test_context_default_float(name, dt):
    with Context(DEFAULT_FLOAT=name):
        assert dtypes.default_float is dt
        made = [Tensor.rand(3), Tensor.randn(2, 2), Tensor.zeros(2), Tensor.ones(0), Tensor([1.0]), Tensor.empty(1)]
        made += [Tensor.full((2,), 1.5), Tensor.arange(0, 2, 0.5), Tensor.uniform(3), Tensor([1, 2]) * 0.5]
        assert all(t.dtype is dt for t in made), [t.dtype for t in made]
        np.testing.assert_allclose(Tensor([1.0, 2.5]).numpy(), [1.0, 2.5])
    assert dtypes.default_float is dtypes.float32 and Tensor([1.0]).dtype is dtypes.float32


# ---------------------------------------------------------------- dtype groups and helpers
def test_dtype_groups():
    assert dtypes.fp8s == (dtypes.fp8e4m3, dtypes.fp8e5m2)
    assert dtypes.floats == (*dtypes.fp8s, dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64)
    assert dtypes.uints == (dtypes.uint8, dtypes.uint16, dtypes.uint32, dtypes.uint64)
    assert dtypes.sints == (dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64)
    assert dtypes.ints == dtypes.uints + dtypes.sints
    assert all(dtypes.is_float(d) for d in dtypes.floats) and not any(dtypes.is_float(d) for d in dtypes.ints)
    assert all(dtypes.is_int(d) for d in dtypes.ints) and dtypes.is_int(dtypes.index)
    assert not dtypes.is_int(dtypes.bool) and not dtypes.is_int(dtypes.float32)
    assert [dtypes.is_unsigned(d) for d in (dtypes.uint8, dtypes.int8, dtypes.float32, dtypes.bool)] == [1, 0, 0, 0]


@pytest.mark.parametrize(
    "dt,tdt", [(dtypes.float16, torch.float16), (dtypes.bfloat16, torch.bfloat16), (dtypes.float32, torch.float32),
               (dtypes.float64, torch.float64), (dtypes.fp8e4m3, torch.float8_e4m3fn), (dtypes.fp8e5m2, torch.float8_e5m2)],
)  # fmt: skip
def test_finfo_is_exponent_and_mantissa_bits(dt, tdt):
    info = torch.finfo(tdt)
    exp, man = dtypes.finfo(dt)
    assert info.eps == 2.0**-man
    assert 1 + exp + man == 8 * dt.itemsize == info.bits
    assert 2.0 ** (1 - (2 ** (exp - 1) - 1)) == info.smallest_normal  # the exponent bias follows from the bits
    with pytest.raises(TypeError):
        dtypes.finfo(dtypes.int32)


@pytest.mark.parametrize("dt", [*dtypes.ints, dtypes.bool, dtypes.float32, dtypes.fp8e4m3])
def test_dtype_min_max(dt):
    if dt.is_int:
        info = np.iinfo(dt.fmt)
        assert (dtypes.min(dt), dtypes.max(dt)) == (info.min, info.max)
    elif dt is dtypes.bool:
        assert (dtypes.min(dt), dtypes.max(dt)) == (False, True)
    else:
        assert (dtypes.min(dt), dtypes.max(dt)) == (-float("inf"), float("inf"))
    assert (dtypes.min(dt), dtypes.max(dt)) == (dt.min, dt.max)


def test_from_py():
    assert dtypes.from_py(True) is dtypes.bool and dtypes.from_py(3) is dtypes.default_int
    assert dtypes.from_py(3.0) is dtypes.float32
    assert dtypes.from_py([True, 2]) is dtypes.default_int and dtypes.from_py([[1], [2.5]]) is dtypes.float32
    assert dtypes.from_py((True, False)) is dtypes.bool and dtypes.from_py([]) is dtypes.float32
    with Context(DEFAULT_FLOAT="HALF"):
        assert dtypes.from_py([1, 2.0]) is dtypes.float16


# ---------------------------------------------------------------- fp8
FP8 = [(dtypes.fp8e4m3, torch.float8_e4m3fn, 448.0), (dtypes.fp8e5m2, torch.float8_e5m2, 57344.0)]


def _fp8_ref(x: np.ndarray, tdt: torch.dtype, top: float) -> torch.Tensor:
    """torch's rounding (to nearest, ties to even), with tinygrad's saturation of overflow and inf."""
    return torch.from_numpy(x).clamp(-top, top).to(tdt)


def _fp8_inputs(n: int) -> np.ndarray:
    rng = np.random.default_rng(n)
    scales = rng.choice([1e-4, 0.02, 1.0, 40.0, 3e3, 1e5], n)
    special = np.array([0.0, -0.0, np.inf, -np.inf, 1e30, -500.0, 0.5, 0.0625], np.float32)
    return np.concatenate([(rng.standard_normal(n) * scales).astype(np.float32), special])[:n]


@pytest.mark.parametrize("device", ["CPU", "PYTHON"])
@pytest.mark.parametrize("n", [0, 1, 7, 300])
@pytest.mark.parametrize("dt,tdt,top", FP8, ids=["e4m3", "e5m2"])
def test_fp8_casts_round_to_nearest_even_and_saturate(device, n, dt, tdt, top):
    x = _fp8_inputs(n)
    ref = _fp8_ref(x, tdt, top)
    t = Tensor(x, device=device).cast(dt)
    assert t.dtype is dt and t.element_size() == 1 and t.nbytes() == n
    np.testing.assert_array_equal(t.bitcast(dtypes.uint8).numpy(), ref.view(torch.uint8).numpy())  # the stored byte
    np.testing.assert_array_equal(t.numpy(), ref.float().numpy())
    np.testing.assert_array_equal(t.cast(dtypes.float32).numpy(), ref.float().numpy())
    np.testing.assert_array_equal(Tensor(x, dtype=dt, device=device).numpy(), ref.float().numpy())  # made as fp8
    # computed in float32, rounded back to fp8 (the scalar is an fp8 constant, as in tinygrad)
    c = torch.tensor(1.37).to(tdt).float().numpy()
    np.testing.assert_array_equal((t * 1.37).numpy(), _fp8_ref(ref.float().numpy() * c, tdt, top).float())
    codes = Tensor(ref.view(torch.uint8).numpy(), device=device).bitcast(dt)  # from the byte
    np.testing.assert_array_equal(codes.numpy(), ref.float().numpy())


@pytest.mark.parametrize("dt,tdt,top", FP8, ids=["e4m3", "e5m2"])
def test_fp8_every_code_and_nan(dt, tdt, top):
    codes = np.arange(256, dtype=np.uint8)
    ref = torch.from_numpy(codes).view(tdt).float().numpy()
    got = Tensor(codes).bitcast(dt).cast(dtypes.float32).numpy()
    np.testing.assert_array_equal(got, ref)  # nan where torch has nan (E4M3: 0x7f/0xff; E5M2: also inf at 0x7c)
    nan = Tensor([float("nan")]).cast(dt)
    assert np.isnan(nan.numpy()).all() and nan.bitcast(dtypes.uint8).item() == 0x7F
    assert Tensor([1e9, -float("inf")]).cast(dt).tolist() == [top, -top]


def test_fp8_ops_compute_in_float32():
    a = Tensor([1.0, 2.0, 3.5, -0.75], dtype=dtypes.fp8e4m3)
    b = Tensor([0.5, 0.125, 2.0, 4.0], dtype=dtypes.fp8e4m3)
    ta, tb = torch.tensor(a.numpy()).to(torch.float8_e4m3fn), torch.tensor(b.numpy()).to(torch.float8_e4m3fn)
    for got, want in [
        (a + b, ta.float() + tb.float()),
        (a * b, ta.float() * tb.float()),
        (a.sqrt(), ta.float().sqrt()),
    ]:
        assert got.dtype is dtypes.fp8e4m3
        np.testing.assert_array_equal(got.numpy(), want.to(torch.float8_e4m3fn).float())
    assert (a + b).cast(dtypes.float32).dtype is dtypes.float32 and (a.float() + 1).dtype is dtypes.float32
    assert a.sum().item() == 6.0  # the float32 sum 5.75 rounds to even
    assert (a + Tensor([1.0], dtype=dtypes.fp8e5m2)).dtype is dtypes.float16  # holds both exactly


# ---------------------------------------------------------------- GlobalCounters
def test_global_counters_count_kernels_ops_and_memory():
    import unigrad
    from unigrad import GlobalCounters, TinyJit
    from unigrad.helpers import GlobalCounters as from_helpers

    assert unigrad.GlobalCounters is GlobalCounters is from_helpers
    a, b = Tensor.rand(1000).realize(), Tensor.rand(1000).realize()
    GlobalCounters.reset()
    assert (GlobalCounters.kernel_count, GlobalCounters.global_ops, GlobalCounters.global_mem) == (0, 0, 0)
    (a + b).realize()
    assert GlobalCounters.kernel_count == 1 and GlobalCounters.global_ops >= 1000
    assert GlobalCounters.global_mem == 3 * 4000 and GlobalCounters.time_sum_s > 0  # two inputs, one output
    (a * b + 1).sum().realize()
    assert GlobalCounters.kernel_count >= 2 and GlobalCounters.global_ops >= 3000

    f = TinyJit(lambda x, y: (x * y).realize())
    counts = []
    for _ in range(4):
        x, y = Tensor.rand(1000).realize(), Tensor.rand(1000).realize()
        GlobalCounters.reset()
        f(x, y)
        counts.append((GlobalCounters.kernel_count, GlobalCounters.global_ops, GlobalCounters.global_mem))
    assert counts[0] == counts[2] == counts[3] and counts[3][0] == 1  # replays count what they run


def test_global_counters_mem_used_is_live_buffers():
    from unigrad import GlobalCounters

    before = GlobalCounters.mem_used
    t = Tensor.zeros(1000).contiguous().realize()
    assert GlobalCounters.mem_used - before == 4000
    GlobalCounters.reset()  # not a counter of work: it stays
    assert GlobalCounters.mem_used - before == 4000
    del t
    assert GlobalCounters.mem_used == before


# ---------------------------------------------------------------- optimizers: LARS, SGD(classic=), OptimizerGroup
def _lars_reference(w0, c, steps, lr, momentum, weight_decay, nesterov, classic, tcoef):
    """A numpy transcription of LARS (and tinygrad's SGD: tcoef=0) on the loss sum((c * w)^2)."""
    w, buf, wd = w0.astype(np.float64), np.zeros_like(w0, dtype=np.float64), weight_decay
    for _ in range(steps):
        g = 2 * c * c * w
        r1, r2 = np.sqrt((w * w).sum()), np.sqrt((g * g).sum())
        r = tcoef * r1 / (r2 + wd * r1) if tcoef and r1 > 0 and r2 > 0 else 1.0
        g = g + wd * w
        if classic:
            g = g * r * lr
        if momentum:
            buf = momentum * buf + g
            g = g + momentum * buf if nesterov else buf
        if not classic:
            g = g * r * lr
        w = w - g
    return w


def _run_optimizer(make, w0, c, steps):
    w = Tensor(w0)
    opt = make([w])
    with Tensor.train():
        for _ in range(steps):
            opt.zero_grad()
            (Tensor(c) * w).square().sum().backward()
            opt.step()
    return w.numpy()


@pytest.mark.parametrize("shape", [(3, 4), (1,), (5,)])
@pytest.mark.parametrize(
    "kw",
    [
        {},
        {"classic": False},
        {"nesterov": True},
        {"momentum": 0.0},
        {"tcoef": 0.0},
        {"weight_decay": 0.0, "tcoef": 0.02},
    ],
)
def test_lars_matches_its_formula(shape, kw):
    rng = np.random.default_rng(len(shape))
    w0, c = rng.standard_normal(shape).astype(np.float32), rng.uniform(0.5, 2, shape).astype(np.float32)
    args = {"lr": 0.5, "momentum": 0.9, "weight_decay": 1e-4, "nesterov": False, "classic": True, "tcoef": 0.001, **kw}
    got = _run_optimizer(lambda p: optim.LARS(p, **args), w0, c, 4)
    np.testing.assert_allclose(got, _lars_reference(w0, c, 4, **args), rtol=1e-5, atol=1e-6)


def test_lars_defaults_and_zero_norms():
    w = Tensor.zeros(3)
    opt = optim.LARS([w], lr=0.1)
    g = opt.param_groups[0]
    assert (g["momentum"], g["weight_decay"], g["nesterov"], g["classic"], g["tcoef"]) == (0.9, 1e-4, False, True, 1e-3)
    with Tensor.train():
        opt.zero_grad()
        (w * Tensor([1.0, 2.0, 3.0])).sum().backward()  # ||w|| = 0: the ratio is 1
        opt.step()
    np.testing.assert_allclose(w.numpy(), [-0.1, -0.2, -0.3], rtol=1e-6)


@pytest.mark.parametrize("kw", [{"momentum": 0.9}, {"momentum": 0.9, "nesterov": True}, {"weight_decay": 0.1}])
def test_sgd_classic(kw):
    rng = np.random.default_rng(1)
    w0, c = rng.standard_normal((4, 3)).astype(np.float32), rng.uniform(0.5, 2, (4, 3)).astype(np.float32)
    args = {"lr": 0.1, "momentum": 0.0, "weight_decay": 0.0, "nesterov": False, **kw}
    for classic in (True, False):
        got = _run_optimizer(lambda p: optim.SGD(p, **args, classic=classic), w0, c, 3)
        want = _lars_reference(w0, c, 3, **args, classic=classic, tcoef=0.0)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    # classic=False is torch's SGD
    tw = torch.tensor(w0, requires_grad=True)
    topt = torch.optim.SGD([tw], **args)
    for _ in range(3):
        topt.zero_grad()
        (torch.tensor(c) * tw).square().sum().backward()
        topt.step()
    got = _run_optimizer(
        lambda p: optim.SGD(p, args["lr"], args["momentum"], args["weight_decay"], args["nesterov"]), w0, c, 3
    )
    np.testing.assert_allclose(got, tw.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_tinygrad_optimizer_forms():
    w = Tensor([1.0, 2.0])
    adam = optim.Adam([w], 0.01, 0.8, 0.99, 1e-7, fused=False)
    assert adam.param_groups[0]["betas"] == (0.8, 0.99) and adam.param_groups[0]["eps"] == 1e-7
    adamw = optim.AdamW([Tensor([1.0])], 0.01, 0.9, 0.999, 1e-8, 0.05)
    assert adamw.param_groups[0]["weight_decay"] == 0.05
    lamb = optim.LAMB([Tensor([1.0])], 0.01, 0.9, 0.999, 1e-6, 0.1, True)
    assert lamb.param_groups[0]["adam"] and lamb.param_groups[0]["weight_decay"] == 0.1


def test_optimizer_group_steps_all_in_one_schedule():
    a, b = Tensor([1.0, 2.0]), Tensor([3.0])
    group = optim.OptimizerGroup(optim.SGD([a], lr=0.1), optim.Adam([b], lr=0.1))
    assert group[0].params == [a] and len(group) == 2
    with Tensor.train():
        group.zero_grad()
        ((a * a).sum() + (b * b).sum()).backward()
        group.step()
    np.testing.assert_allclose(a.numpy(), [0.8, 1.6], rtol=1e-6)
    np.testing.assert_allclose(b.numpy(), [2.9], rtol=1e-6)
    with pytest.raises(RuntimeError, match="train"):
        group.step()


# ---------------------------------------------------------------- Variable(dtype=)
def test_variable_dtype():
    from unigrad import Variable

    v = Variable("i", 1, 10, dtype=dtypes.int32).bind(3)
    assert v.dtype is dtypes.int32 and Tensor(v).dtype is dtypes.int32 and Tensor(v).item() == 3
    n = Variable("n", 1, 10).bind(4)  # the default: an index, what sizes take
    assert n.dtype is dtypes.index and Tensor.ones(n).sum().item() == 4.0
    with pytest.raises(TypeError, match="int dtype"):
        Variable("x", 0, 1, dtype=dtypes.float32)


# ---------------------------------------------------------------- bitcast, Tensor(bytes), pad_to, is_param
BITCAST_CASES = [
    (np.float32, np.uint8),
    (np.uint8, np.int32),
    (np.float32, np.float64),
    (np.float64, np.float16),
    (np.int16, np.uint32),
    (np.uint32, np.int8),
    (np.float32, np.int32),
]


@pytest.mark.parametrize("device", ["CPU", "PYTHON"])
@pytest.mark.parametrize("lead", [(), (0,), (1,), (2, 3)])
@pytest.mark.parametrize("src,dst", BITCAST_CASES, ids=[f"{np.dtype(a)}-{np.dtype(b)}" for a, b in BITCAST_CASES])
def test_bitcast_changes_the_last_dim(device, lead, src, dst):
    from unigrad.tensor import _NP_TO_DTYPE

    last = 8  # bytes divide into every pair's sizes
    rng = np.random.default_rng(len(lead))
    x = rng.integers(0, 256, (*lead, last * np.dtype(src).itemsize), dtype=np.uint8).view(src)
    want = x.view(dst)  # numpy's view scales the last dim the same way (little-endian)
    got = Tensor(x, device=device).bitcast(_NP_TO_DTYPE[np.dtype(dst)])
    assert got.shape == want.shape
    if device == "CPU":  # bit-exact, nan payloads too
        np.testing.assert_array_equal(got.numpy().view(np.uint8), want.view(np.uint8))
    else:  # the interpreter holds floats as Python floats: a nan is a nan, its payload is not kept
        np.testing.assert_array_equal(got.numpy(), want)


def test_bitcast_refuses_what_does_not_divide():
    with pytest.raises(RuntimeError, match="bitcast"):
        Tensor([1, 2, 3], dtype=dtypes.uint8).bitcast(dtypes.int32)  # 3 bytes
    with pytest.raises(RuntimeError, match="bitcast"):
        Tensor(1.0).bitcast(dtypes.uint8)  # 0-d: no last dim to scale
    assert Tensor([1.0]).bitcast(dtypes.int32).item() == 0x3F800000


@pytest.mark.parametrize("data", [b"", b"\x07", b"\x00\x00\x80\x3f\x00\x00\x00\xc0", bytearray(b"\x01\x02\x03\x04")])
def test_tensor_from_bytes(data):
    t = Tensor(data)
    assert t.dtype is dtypes.uint8 and t.shape == (len(data),)
    assert t.tolist() == list(data)
    if len(data) % 4 == 0:  # read as another dtype: the bytes reinterpreted
        np.testing.assert_array_equal(
            Tensor(data, dtype=dtypes.float32).numpy(), np.frombuffer(bytes(data), np.float32)
        )


@pytest.mark.parametrize("value", [0.0, -1.5, float("inf")])
def test_pad_to_value(value):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    got = Tensor(x).pad_to(4, 5, value=value).numpy()
    np.testing.assert_array_equal(got, np.pad(x, ((0, 2), (0, 2)), constant_values=value))
    np.testing.assert_array_equal(Tensor(x).pad_to(None, 3, value=value).numpy(), x)
    assert Tensor.ones(0, 1).pad_to(2, 1, value=value).tolist() == [[value], [value]]


def test_is_param():
    assert not Tensor([1.0]).is_param
    w = nn.Linear(2, 3).weight
    assert w.is_param  # a module's parameter
    leaf = Tensor([1.0, 2.0], requires_grad=True)
    assert leaf.is_param and not (leaf * 2).is_param
    x = Tensor([3.0])
    x.is_param = True
    assert x.requires_grad and x.is_param
    opt = optim.SGD([Tensor([1.0])], lr=0.1)
    assert all(p.is_param for p in opt.params)
    x.is_param = False
    assert not x.is_param and x.requires_grad is False


# ---------------------------------------------------------------- the disk: device
@pytest.mark.parametrize("n", [1, 7, 4096 + 3])
def test_disk_tensor_reads_the_file(tmp_path, n):
    import pathlib

    data = np.random.default_rng(n).integers(0, 256, n, dtype=np.uint8)
    path = tmp_path / "blob.bin"
    path.write_bytes(data.tobytes())
    t = Tensor.empty(n, dtype=dtypes.uint8, device=f"disk:{path}")
    assert t.device == f"DISK:{path}" and t.shape == (n,)
    np.testing.assert_array_equal(t.numpy(), data)
    np.testing.assert_array_equal(t[n // 3 : n].to("CPU").numpy(), data[n // 3 :])
    t2 = Tensor(pathlib.Path(path))  # tinygrad's Tensor(Path): the file's bytes on DISK
    assert t2.dtype is dtypes.uint8 and t2.device == t.device and t2.shape == (n,)
    np.testing.assert_array_equal((t2.to("CPU").cast(dtypes.int32) + 1).numpy(), data.astype(np.int32) + 1)
    if n >= 4:
        k = n // 4 * 4
        np.testing.assert_array_equal(t[:k].bitcast(dtypes.float32).to("CPU").numpy().view(np.uint8), data[:k])


def test_disk_tensor_writes_the_file(tmp_path):
    path = tmp_path / "out.bin"  # made by the tensor, with its size
    t = Tensor.empty(8 + 16, dtype=dtypes.uint8, device=f"disk:{path}")
    assert path.stat().st_size == 24
    t[0:8].bitcast(dtypes.int64).assign([16]).realize()  # tinygrad's safe_save pattern: typed slices of the bytes
    t[8:24].bitcast(dtypes.float32).assign(Tensor([1.5, -2.0, 3.25, 1e-3])).realize()
    raw = path.read_bytes()
    assert np.frombuffer(raw[:8], np.int64).tolist() == [16]
    np.testing.assert_array_equal(np.frombuffer(raw[8:], np.float32), np.float32([1.5, -2.0, 3.25, 1e-3]))
    t.assign(Tensor(np.arange(24, dtype=np.uint8))).realize()  # the whole file, from CPU values
    assert path.read_bytes() == bytes(range(24))
    f = Tensor.empty(3, dtype=dtypes.float32, device=f"disk:{tmp_path / 'f32.bin'}")
    f.assign(Tensor([1.0, 2.0, 3.0])).realize()
    np.testing.assert_array_equal(np.fromfile(tmp_path / "f32.bin", np.float32), [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(f.numpy(), [1.0, 2.0, 3.0])


def test_bitcast_of_a_tensor_assigns_through():
    x = Tensor([1.0, 2.0])
    x.bitcast(dtypes.int32).assign(Tensor([0x40400000, 0x40800000], dtype=dtypes.int32)).realize()
    np.testing.assert_array_equal(x.numpy(), [3.0, 4.0])
    y = Tensor.zeros(2, dtype=dtypes.float32).contiguous().realize()
    y.bitcast(dtypes.uint8).assign(Tensor(np.float32([5.0, 6.0]).view(np.uint8))).realize()
    np.testing.assert_array_equal(y.numpy(), [5.0, 6.0])


# ---------------------------------------------------------------- pickle protocol 5
@pytest.mark.parametrize("shape", [(0,), (1,), (3, 4)])
@pytest.mark.parametrize("dt", [dtypes.float32, dtypes.int32, dtypes.uint8, dtypes.bfloat16, dtypes.fp8e4m3])
def test_pickle_protocol_5_out_of_band(shape, dt):
    import pickle

    t = Tensor(np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)).cast(dt)
    buffers: list[pickle.PickleBuffer] = []
    blob = pickle.dumps(t, protocol=5, buffer_callback=buffers.append)
    assert len(buffers) == 1  # the values went out of band
    back = pickle.loads(blob, buffers=buffers)
    assert back.dtype is dt and back.shape == t.shape
    np.testing.assert_array_equal(back.numpy(), t.numpy())
    assert pickle.loads(pickle.dumps(t, protocol=5)).tolist() == t.tolist()  # in band too


# ---------------------------------------------------------------- TinyJit(prune=), pickled TinyJit
def test_tinyjit_prune_drops_kernels_not_depending_on_inputs():
    from unigrad import TinyJit

    rng = np.random.default_rng(3)
    w = Tensor(rng.random((8, 8), dtype=np.float32)).realize()
    want_w = np.exp(w.numpy()) * 2 + 1

    def f(x: Tensor) -> Tensor:
        return x @ (w.exp() * 2 + 1).contiguous()  # the weight's preprocessing reads no input

    kernels = {}
    for prune in (False, True):
        jitted = TinyJit(f, prune=prune)
        for _ in range(4):
            x = rng.random((3, 8), dtype=np.float32)
            np.testing.assert_allclose(jitted(Tensor(x)).numpy(), x @ want_w, rtol=1e-5)
        assert jitted.plan is not None
        kernels[prune] = jitted.plan.n_kernels
    assert kernels[True] == kernels[False] - 1


def test_tinyjit_prune_keeps_what_depends_on_inputs_and_random():
    from unigrad import TinyJit

    jitted = TinyJit(lambda x: x + Tensor.rand(4), prune=True)
    outs = [jitted(Tensor.zeros(4).contiguous()).numpy() for _ in range(4)]
    assert not np.array_equal(outs[2], outs[3])  # the random draw is not pruned: it changes every replay
    assert TinyJit(lambda x: x * 2, prune=True, optimize=True)(Tensor([1.0])).item() == 2.0


def test_pickled_tinyjit_replays_on_new_inputs():
    import pickle

    from unigrad import TinyJit

    rng = np.random.default_rng(4)
    w, b = rng.random((2, 3), dtype=np.float32), rng.random(3, dtype=np.float32)
    wt, bt = Tensor(w), Tensor(b)

    @TinyJit
    def f(x: Tensor) -> Tensor:
        return (x @ wt + bt).relu()

    with pytest.raises(TypeError, match="has not captured"):
        pickle.dumps(f)
    for _ in range(3):
        f(Tensor(rng.random((4, 2), dtype=np.float32)))
    g = pickle.loads(pickle.dumps(f))
    for _ in range(3):
        x = rng.random((4, 2), dtype=np.float32)
        np.testing.assert_allclose(g(Tensor(x)).numpy(), np.maximum(x @ w + b, 0), rtol=1e-6)
    with pytest.raises(Exception, match="shape"):
        g(Tensor(rng.random((5, 2), dtype=np.float32)))  # only the captured shapes replay


def test_pickled_tinyjit_training_step_carries_its_state():
    import pickle

    from unigrad import TinyJit

    layer = nn.Linear(3, 2)
    opt = optim.SGD([layer.weight, layer.bias], lr=0.1, momentum=0.9)

    @TinyJit
    @Tensor.train()
    def step(x: Tensor, y: Tensor) -> Tensor:
        opt.zero_grad()
        loss = (layer(x) - y).square().mean()
        loss.backward()
        opt.step()
        return loss.realize()

    rng = np.random.default_rng(5)
    data = [(rng.random((4, 3), dtype=np.float32), rng.random((4, 2), dtype=np.float32)) for _ in range(7)]
    for x, y in data[:3]:
        step(Tensor(x), Tensor(y))
    loaded = pickle.loads(pickle.dumps(step))  # the weights and momentum as they are now, in buffers of its own
    ours = [step(Tensor(x), Tensor(y)).item() for x, y in data[3:]]
    theirs = [loaded(Tensor(x), Tensor(y)).item() for x, y in data[3:]]
    assert ours == theirs  # the same steps from the same state


# ---------------------------------------------------------------- nn: BatchNorm(sz=), LayerNorm2d, Conv2d(padding='same')
def test_batchnorm_takes_tinygrad_sz():
    for cls in (nn.BatchNorm, nn.BatchNorm2d):
        bn = cls(sz=3)
        assert bn.num_features == 3 and bn.weight.shape == (3,) and bn.running_var.shape == (3,)
    assert nn.BatchNorm(4, eps=1e-3).num_features == 4
    with pytest.raises(TypeError, match="sz"):
        nn.BatchNorm()
    with pytest.raises(TypeError, match="sz"):
        nn.BatchNorm(3, sz=3)
    x = np.random.default_rng(6).random((4, 3, 2, 2), dtype=np.float32)
    with Tensor.train():
        out = nn.BatchNorm(sz=3)(Tensor(x)).numpy()
    ref = torch.nn.functional.batch_norm(torch.tensor(x), None, None, training=True).numpy()
    np.testing.assert_allclose(out, ref, atol=1e-5)


@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (1, 1, 1, 1), (1, 4, 3, 1)])
def test_layernorm2d(shape):
    x = np.random.default_rng(7).standard_normal(shape).astype(np.float32)
    ln = nn.LayerNorm2d(shape[1], eps=1e-5)
    ln.weight, ln.bias = Tensor(np.linspace(0.5, 2, shape[1], dtype=np.float32)), Tensor.full((shape[1],), 0.25)
    ref = torch.nn.functional.layer_norm(
        torch.tensor(x).permute(0, 2, 3, 1), (shape[1],), torch.tensor(ln.weight.numpy()), torch.full((shape[1],), 0.25)
    ).permute(0, 3, 1, 2)
    np.testing.assert_allclose(ln(Tensor(x)).numpy(), ref.numpy(), atol=1e-5)
    with pytest.raises(ValueError, match="LayerNorm2d"):
        ln(Tensor.ones(3, 2))


@pytest.mark.parametrize("k,dilation,size", [(3, 1, (8, 8)), (4, 1, (7, 9)), (3, 2, (10, 10)), (1, 1, (1, 1))])
def test_conv2d_padding_same(k, dilation, size):
    torch.manual_seed(0)
    theirs = torch.nn.Conv2d(3, 4, k, padding="same", dilation=dilation)
    ours = nn.Conv2d(3, 4, k, padding="same", dilation=dilation)
    ours.weight, ours.bias = Tensor(theirs.weight.detach().numpy()), Tensor(theirs.bias.detach().numpy())
    x = np.random.default_rng(k).random((2, 3, *size), dtype=np.float32)
    with pytest.warns(UserWarning) if k % 2 == 0 else contextlib.nullcontext():
        want = theirs(torch.tensor(x)).detach().numpy()
    got = ours(Tensor(x)).numpy()
    assert got.shape == (2, 4, *size)
    np.testing.assert_allclose(got, want, atol=1e-5)
