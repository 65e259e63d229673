"""The public names and knobs tinygrad programs use (issue 30): train mode and the optimizers' refusal to step
outside it, DEFAULT_FLOAT, the dtype groups and helpers on `dtypes`, fp8, GlobalCounters, LARS and SGD(classic=),
TinyJit(prune=) and pickled TinyJit, Tensor.is_param, Variable(dtype=), Tensor(bytes), size-changing bitcast,
pad_to(value=), the disk: device, pickle protocol 5. Values are checked against numpy or torch."""

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
