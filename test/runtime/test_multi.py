"""Multi-device tensors (Tensor.shard / shard_ / to(tuple)): values against numpy, gradients and optimizer steps
against torch, on 2 and 3 CPU devices, sharded on every axis or replicated."""

import re

import numpy as np
import pytest
import torch

from unigrad import Tensor, dtypes
from unigrad.ir.ops import Ops
from unigrad.nn import optim
from unigrad.runtime import multi as rt_multi
from unigrad.runtime import realize as rt

D2 = ("CPU:0", "CPU:1")
D3 = ("CPU:0", "CPU:1", "CPU:2")


# ---------------------------------------------------------------- helpers
def rand(*shape: int, seed: int = 0, dtype=np.float32) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind in "iu":
        return rng.integers(-9, 10, size=shape).astype(dtype)
    if np.dtype(dtype).kind == "b":
        return rng.integers(0, 2, size=shape).astype(bool)
    return rng.standard_normal(shape).astype(dtype)


def on(x: np.ndarray, devices: tuple[str, ...], axis: int | None = None, realize: bool = False) -> Tensor:
    t = Tensor(x).shard(devices, axis)
    return t.realize() if realize else t


def check(t: Tensor, expected: np.ndarray, devices=None, axis="any", exact=False, rtol=1e-5, atol=1e-6) -> None:
    """t's values are `expected`; t lives on `devices` (when given) with shard axis `axis` (when given)."""
    if devices is not None:
        assert t.device == devices
    if axis != "any":
        assert t.uop.axis == axis
    out = t.numpy()
    assert out.shape == expected.shape, (out.shape, expected.shape)
    if exact:
        assert out.dtype == expected.dtype, (out.dtype, expected.dtype)
        np.testing.assert_array_equal(out, expected)
    else:
        np.testing.assert_allclose(out, expected, rtol=rtol, atol=atol)


def part_uops(t: Tensor) -> list:
    """The per-device parts (flat one-device UOps) of the tuple BUFFER a multi-device tensor is a view of."""
    t.realize()
    bufs = [u for u in t.uop.toposort() if u.op is Ops.BUFFER and isinstance(u.device, tuple)]
    assert len(bufs) == 1, bufs
    return list(rt_multi.parts[bufs[0]])


def device_parts(t: Tensor) -> list[tuple[str, np.ndarray]]:
    """Each device's part of a realized multi-device tensor, as (device, flat values)."""
    return [(p.device, rt.buffer_of(p).numpy().reshape(-1)[: p.shape[0]]) for p in part_uops(t)]


def device_buffers(t: Tensor) -> list:
    return [rt.buffer_of(p) for p in part_uops(t)]


def expected_parts(x: np.ndarray, devices: tuple[str, ...], axis: int | None) -> list[tuple[str, np.ndarray]]:
    """The documented layout: block i of dim `axis` on devices[i], or the whole on each device."""
    if axis is None:
        return [(d, x.reshape(-1)) for d in devices]
    return [(d, b.reshape(-1)) for d, b in zip(devices, np.split(x, len(devices), axis=axis))]


def assert_layout(t: Tensor, x: np.ndarray, devices: tuple[str, ...], axis: int | None) -> None:
    got, want = device_parts(t), expected_parts(x, devices, axis)
    assert [d for d, _ in got] == [d for d, _ in want]
    for (_, g), (_, w) in zip(got, want):
        np.testing.assert_array_equal(g, w)


# (devices, shape, axis): size-1 dims, odd sizes on 3 devices, negative axes
LAYOUTS = [
    (D2, (4,), 0),
    (D2, (2,), 0),
    (D2, (4, 6), None),
    (D2, (4, 6), 0),
    (D2, (4, 6), 1),
    (D2, (4, 6), -1),
    (D2, (4, 6), -2),
    (D2, (1, 6), 1),
    (D2, (6, 1), 0),
    (D2, (2, 3, 4), 2),
    (D3, (3, 5), 0),
    (D3, (5, 3), -1),
    (D3, (5, 3), None),
    (D3, (2, 3, 9), 2),
    (D3, (3, 1, 7), 0),
]


def _id(v):
    """Test ids: D2/D3 for the device tuples, 4x6 for shapes."""
    if v in (D2, D3):
        return "D2" if v == D2 else "D3"
    if isinstance(v, tuple) and all(isinstance(d, int) for d in v):
        return "x".join(map(str, v)) or "scalar"
    return None


# ---------------------------------------------------------------- 1. shard, layout, resharding, gathering
@pytest.mark.parametrize("devices,shape,axis", LAYOUTS, ids=_id)
def test_shard_roundtrip_and_layout(devices, shape, axis):
    x = rand(*shape)
    norm = None if axis is None else axis % len(shape)
    t = Tensor(x).shard(devices, axis)
    check(t, x, devices, norm, exact=True)
    t.realize()
    check(t, x, devices, norm, exact=True)
    assert_layout(t, x, devices, norm)


@pytest.mark.parametrize("dtype", [np.int32, np.bool_, np.float16, np.int8])
@pytest.mark.parametrize("axis", [None, 1])
def test_shard_roundtrip_dtypes(dtype, axis):
    x = rand(4, 6, seed=1, dtype=dtype)
    t = on(x, D2, axis)
    check(t, x, D2, axis, exact=True)


def test_shard_non_contiguous_inputs():
    x = rand(4, 6, 8, seed=2)
    base = Tensor(x).realize()
    check(base.permute(2, 0, 1).shard(D2, 0), x.transpose(2, 0, 1), D2, 0, exact=True)
    check(base.permute(1, 2, 0).shard(D2, -1), x.transpose(1, 2, 0), D2, 2, exact=True)
    check(base[1:3, ::2, 2:8].shard(D3, 1), x[1:3, ::2, 2:8], D3, 1, exact=True)
    check(base[:, 1:4, ::-1].shard(D3, 1), x[:, 1:4, ::-1], D3, 1, exact=True)
    check(base[::2, 2].shard(D2, 1), x[::2, 2], D2, 1, exact=True)
    t = base.permute(2, 0, 1).shard(D2, 1).realize()  # a permuted view realized into parts
    assert_layout(t, x.transpose(2, 0, 1), D2, 1)


def test_tensor_on_a_device_tuple_is_replicated():
    x = rand(3, 4, seed=3)
    t = Tensor(x, device=D2)
    check(t, x, D2, None, exact=True)
    assert_layout(t, x, D2, None)
    lst = Tensor([[1, 2], [3, 4]], device=D3)
    check(lst, np.array([[1, 2], [3, 4]], dtype=np.int64), D3, None, exact=True)
    check(Tensor(2.5, device=D2), np.array(2.5, dtype=np.float32), D2, None, exact=True)


@pytest.mark.parametrize("src,dst", [(0, 1), (1, 0), (0, None), (None, 1), (1, -1), (None, None)])
def test_reshard_realized_multi_tensor(src, dst):
    x = rand(4, 6, seed=4)
    t = on(x, D2, src, realize=True)
    norm = None if dst is None else dst % 2
    u = t.shard(D2, dst)
    check(u, x, D2, norm, exact=True)
    assert_layout(u, x, D2, norm)
    check(t, x, D2, src, exact=True)  # the source is unchanged


def test_reshard_lazy_multi_tensor():
    x = rand(6, 6, seed=5)
    t = (on(x, D3, 0) * 2).shard(D3, 1)
    check(t, x * 2, D3, 1, exact=True)
    assert_layout(t, x * 2, D3, 1)


def test_shard_in_place():
    x = rand(4, 6, seed=6)
    t = Tensor(x)
    assert t.shard_(D2, 1) is t
    check(t, x, D2, 1, exact=True)
    t.shard_(D2, 0)
    check(t, x, D2, 0, exact=True)


@pytest.mark.parametrize("axis", [None, 0, 1])
def test_gather_to_one_device(axis):
    x = rand(6, 6, seed=7)
    for t, expected in ((on(x, D3, axis), x), (on(x, D3, axis, realize=True), x), (on(x, D3, axis) + 1, x + 1)):
        for device in ("CPU", "CPU:0", "CPU:2"):
            g = t.to(device)
            assert g.device == device
            check(g, expected, exact=True)


@pytest.mark.parametrize("axis", [None, 0, 1])
def test_to_another_device_tuple(axis):
    x = rand(6, 6, seed=8)
    t = on(x, D2, axis, realize=True)
    u = t.to(D3)  # to a tuple: a whole copy on each
    check(u, x, D3, None, exact=True)
    assert_layout(u, x, D3, None)
    rev = ("CPU:1", "CPU:0")
    r = t.to(rev)
    check(r, x, rev, None, exact=True)
    s = t.shard(rev, 0)  # block 0 now on CPU:1
    check(s, x, rev, 0, exact=True)
    assert_layout(s, x, rev, 0)


def test_to_same_tuple_keeps_the_sharding():
    x = rand(4, 6, seed=9)
    t = on(x, D2, 1)
    check(t.to(D2), x, D2, 1, exact=True)
    check(t.to(["cpu:0", "cpu:1"]), x, D2, 1, exact=True)


def test_empty_on_a_device_tuple():
    t = Tensor.empty(4, 6, device=D2)
    assert t.shape == (4, 6) and t.device == D2 and t.uop.axis is None and t.dtype == dtypes.float32
    x = rand(4, 6, seed=10)
    t.assign(Tensor(x, device=D2))
    check(t, x, D2, None, exact=True)
    e = Tensor.empty(3, dtype=dtypes.int32, device=D3)
    assert e.dtype == dtypes.int32 and e.device == D3 and e.numpy().shape == (3,)


# ---------------------------------------------------------------- 2. elementwise
UNARY = [
    ("neg", lambda t: -t, lambda x: -x),
    ("exp", lambda t: t.exp(), np.exp),
    ("relu", lambda t: t.relu(), lambda x: np.maximum(x, 0)),
    ("sigmoid", lambda t: t.sigmoid(), lambda x: 1 / (1 + np.exp(-x))),
    ("sqrt_abs", lambda t: t.abs().sqrt(), lambda x: np.sqrt(np.abs(x))),
    ("log1p_abs", lambda t: (t.abs() + 1).log(), lambda x: np.log(np.abs(x) + 1)),
]
ELEMENTWISE_LAYOUTS = [(D2, (4, 6), -1), (D3, (3, 5), 0)]


@pytest.mark.parametrize("name,fn,ref", UNARY, ids=[u[0] for u in UNARY])
@pytest.mark.parametrize("devices,shape,axis", ELEMENTWISE_LAYOUTS, ids=_id)
def test_unary(name, fn, ref, devices, shape, axis):
    x = rand(*shape, seed=11)
    norm = None if axis is None else axis % len(shape)
    check(fn(on(x, devices, axis)), ref(x), devices, norm, rtol=1e-5, atol=1e-6)


BINARY = [
    ("add", lambda a, b: a + b, lambda a, b: a + b),
    ("sub", lambda a, b: a - b, lambda a, b: a - b),
    ("mul", lambda a, b: a * b, lambda a, b: a * b),
    ("max", lambda a, b: a.maximum(b), np.maximum),
    ("lt", lambda a, b: a < b, lambda a, b: a < b),
    ("eq", lambda a, b: a == b, lambda a, b: a == b),
]
# (axis of a, axis of b) for (4, 6) tensors on D2
AXIS_PAIRS = [(0, 0), (1, 1), (None, None), (0, None), (None, 1), (0, 1), (1, 0), (-1, 1)]


@pytest.mark.parametrize("name,fn,ref", BINARY, ids=[b[0] for b in BINARY])
@pytest.mark.parametrize("ax_a,ax_b", [(0, 0), (None, 1), (0, 1)])
def test_binary_int_exact(name, fn, ref, ax_a, ax_b):
    x, y = rand(4, 6, seed=12, dtype=np.int32), rand(4, 6, seed=13, dtype=np.int32)
    y[0, :3] = x[0, :3]  # some equal entries for ==
    out = fn(on(x, D2, ax_a), on(y, D2, ax_b, realize=True))
    check(out, ref(x, y), D2, exact=True)


@pytest.mark.parametrize("ax_a,ax_b", AXIS_PAIRS)
def test_binary_float_div(ax_a, ax_b):
    x, y = rand(4, 6, seed=14), rand(4, 6, seed=15) + 3
    check(on(x, D2, ax_a) / on(y, D2, ax_b), x / y, D2)


def test_binary_three_devices():
    x, y = rand(3, 6, seed=16, dtype=np.int32), rand(3, 6, seed=17, dtype=np.int32)
    for ax_a, ax_b in [(0, 0), (1, 1), (0, 1), (None, 0), (1, None)]:
        check(on(x, D3, ax_a) * on(y, D3, ax_b) + on(x, D3, ax_b), x * y + x, D3, exact=True)


def test_binary_result_axis():
    x = rand(4, 6, seed=18)
    assert (on(x, D2, 0) + on(x, D2, 0)).uop.axis == 0
    assert (on(x, D2, 1) + on(x, D2, None)).uop.axis == 1
    assert (on(x, D2, None) + on(x, D2, 1)).uop.axis == 1
    assert (on(x, D2, None) * 2).uop.axis is None
    assert (on(x, D2, 1) * 2).uop.axis == 1


def test_binary_with_python_scalars():
    x = rand(4, 6, seed=19, dtype=np.int32)
    t = on(x, D2, 1)
    check(t + 2, x + 2, D2, 1, exact=True)
    check(3 - t, 3 - x, D2, 1, exact=True)
    check(t * -4, x * -4, D2, 1, exact=True)
    check(t**2, x**2, D2, 1, exact=True)
    f = rand(4, 6, seed=20)
    tf = on(f, D2, 0)
    check(tf * 1.5 + 0.25, f * np.float32(1.5) + np.float32(0.25), D2, 0)
    check(2.0 / (tf.abs() + 1), np.float32(2.0) / (np.abs(f) + 1), D2, 0)


@pytest.mark.parametrize(
    "a_shape,a_axis,b_shape,b_axis",
    [
        ((4, 6), 0, (6,), None),  # sharded rows + a replicated row vector
        ((4, 6), 1, (4, 1), None),  # sharded columns + a replicated column
        ((4, 6), 1, (6,), 0),  # the (6,) block aligns with dim 1's blocks
        ((4, 6), 0, (1, 6), 1),  # sharded on different dims, broadcast
        ((2, 4, 6), 1, (4, 1), 0),
        ((4, 1), 0, (1, 6), None),  # both broadcast
    ],
    ids=_id,
)
def test_binary_broadcasting(a_shape, a_axis, b_shape, b_axis):
    x, y = rand(*a_shape, seed=21, dtype=np.int32), rand(*b_shape, seed=22, dtype=np.int32)
    check(on(x, D2, a_axis) * 10 + on(y, D2, b_axis), x * 10 + y, D2, exact=True)
    check(on(y, D2, b_axis) - on(x, D2, a_axis), y - x, D2, exact=True)


@pytest.mark.parametrize("ax_c,ax_x,ax_y", [(0, 0, 0), (1, None, 1), (None, 1, 0), (0, None, "scalar")])
def test_where(ax_c, ax_x, ax_y):
    c, x = rand(4, 6, seed=23, dtype=np.bool_), rand(4, 6, seed=24)
    y = np.float32(-7.5) if ax_y == "scalar" else rand(4, 6, seed=25)
    yt = -7.5 if ax_y == "scalar" else on(y, D2, ax_y)
    check(on(c, D2, ax_c).where(on(x, D2, ax_x), yt), np.where(c, x, y), D2, exact=True)
    check((on(x, D2, ax_x) > 0).where(on(x, D2, ax_x), 0.0), np.where(x > 0, x, np.float32(0)), D2, exact=True)


@pytest.mark.parametrize("axis", [None, 0, 1])
def test_cast(axis):
    x = rand(4, 6, seed=26) * 10
    t = on(x, D2, axis)
    check(t.cast(dtypes.int32), x.astype(np.int32), D2, axis, exact=True)
    check(t.cast(dtypes.int32).cast(dtypes.float32), x.astype(np.int32).astype(np.float32), D2, axis, exact=True)
    check(t.cast(dtypes.float16), x.astype(np.float16), D2, axis, exact=True)
    check((t > 1).cast(dtypes.int32) + 1, (x > 1).astype(np.int32) + 1, D2, axis, exact=True)


def test_dtype_promotion_and_assign_cast():
    xi, f = rand(4, 6, seed=79, dtype=np.int32), rand(4, 6, seed=80)
    mixed = on(xi, D2, 0) + on(f, D2, 1)
    assert mixed.dtype == dtypes.float32
    check(mixed, xi + f, D2, 0)
    half = on(f.astype(np.float16), D2, 1) * on(f, D2, None)
    assert half.dtype == dtypes.float32
    check(half, f.astype(np.float16).astype(np.float32) * f, D2, 1)
    t = on(f, D2, 1, realize=True)
    t.assign(on(xi, D2, 0))  # int value, float target on another axis
    check(t, xi.astype(np.float32), D2, 1, exact=True)


def test_elementwise_on_non_contiguous_sharded_views():
    x, y = rand(4, 6, seed=27), rand(6, 4, seed=28)
    a = on(x, D2, 0, realize=True)
    b = on(y, D2, 1, realize=True)
    check(a + b.permute(1, 0), x + y.T, D2, exact=True)  # b's axis 1 is dim 0 after the permute
    check(a[:, 1:5] * b.permute(1, 0)[:, ::-1][:, 1:5], x[:, 1:5] * y.T[:, ::-1][:, 1:5], D2)
    check(a.permute(1, 0) - b, x.T - y, D2, exact=True)


# ---------------------------------------------------------------- 3. reductions
REDUCE_OPS = [
    ("sum", lambda t, **k: t.sum(**k), np.sum),
    ("max", lambda t, **k: t.max(**k), np.max),
    ("min", lambda t, **k: t.min(**k), np.min),
    ("mean", lambda t, **k: t.mean(**k), np.mean),
]


@pytest.mark.parametrize("name,fn,ref", REDUCE_OPS, ids=[r[0] for r in REDUCE_OPS])
@pytest.mark.parametrize("shard_axis", [None, 0, 1])
@pytest.mark.parametrize("red_axis,keepdim", [(0, False), (1, True), (-1, False), (None, False), ((0, 1), True)])
def test_reduce(name, fn, ref, shard_axis, red_axis, keepdim):
    x = rand(4, 6, seed=29)
    out = fn(on(x, D2, shard_axis), axis=red_axis, keepdim=keepdim)
    expected = ref(x, axis=red_axis, keepdims=keepdim)
    check(out, np.asarray(expected, dtype=np.float32), D2)
    reduced = {0, 1} if red_axis is None else {a % 2 for a in np.atleast_1d(red_axis)}
    # over the shard axis: all-reduced, replicated; otherwise the shard axis is kept (same dim with keepdim)
    if shard_axis is None or shard_axis in reduced:
        assert out.uop.axis is None
    else:
        assert out.uop.axis == (shard_axis if keepdim else shard_axis - sum(a < shard_axis for a in reduced))


@pytest.mark.parametrize("devices,shape,axis", LAYOUTS, ids=_id)
def test_sum_over_the_shard_axis_every_layout(devices, shape, axis):
    x = rand(*shape, seed=30, dtype=np.int32)
    t = on(x, devices, axis)
    norm = 0 if axis is None else axis % len(shape)
    check(t.sum(norm), x.sum(norm), devices, None, exact=True)


@pytest.mark.parametrize("shard_axis", [0, 1])
@pytest.mark.parametrize("red_axis", [0, 1, None])
def test_argmax(shard_axis, red_axis):
    x = rand(6, 6, seed=31)
    t = on(x, D3, shard_axis)
    check(t.argmax(red_axis), np.asarray(x.argmax(red_axis)), D3, exact=True)


def test_argmin():
    x = rand(6, 6, seed=31)
    check(on(x, D3, 1).argmin(1), x.argmin(1), D3, exact=True)
    check(on(x, D3, 0).argmin(), np.asarray(x.argmin()), D3, exact=True)


def test_argmax_ties_pick_the_first():
    x = np.zeros((4, 4), dtype=np.float32)
    x[:, 1] = x[:, 3] = 5  # a tie across the two devices' blocks of dim 1
    x[2, 0] = 5
    check(on(x, D2, 1).argmax(1), np.array([1, 1, 0, 1]), D2, exact=True)
    check(on(x, D2, 0).argmax(0), x.argmax(0), D2, exact=True)


def test_reduce_then_elementwise_with_the_sharded_input():
    x = rand(4, 6, seed=32)
    t = on(x, D2, 1)
    softmax = (t - t.max(1, keepdim=True)).exp()
    softmax = softmax / softmax.sum(1, keepdim=True)
    e = np.exp(x - x.max(1, keepdims=True))
    check(softmax, e / e.sum(1, keepdims=True), D2, 1)
    centered = t - t.mean(0)  # reduce off the shard axis, broadcast back
    check(centered, x - x.mean(0), D2, 1)


def test_reduce_three_devices_float():
    x = rand(6, 9, seed=33)
    for axis in (0, 1):
        t = on(x, D3, axis)
        check(t.sum(axis), x.sum(axis), D3, None, rtol=1e-5, atol=1e-5)
        parts = [p for _, p in device_parts(t.sum(axis))]
        assert all(np.array_equal(parts[0], p) for p in parts)  # every device combined the partials in one order
        check(t.mean(), np.array(x.mean(), dtype=np.float32), D3, None, atol=1e-6)
        check(t.max(), np.array(x.max()), D3, None, exact=True)


COMPOSITE = [
    ("softmax", lambda t: t.softmax(1), lambda x: np.exp(x) / np.exp(x).sum(1, keepdims=True)),
    ("log_softmax", lambda t: t.log_softmax(0), lambda x: x - np.log(np.exp(x).sum(0, keepdims=True))),
    ("cumsum", lambda t: t.cumsum(1), lambda x: np.cumsum(x, 1)),
    ("var", lambda t: t.var(0), lambda x: x.var(0, ddof=1)),
    ("std_all", lambda t: t.std(), lambda x: np.array(x.std(ddof=1), dtype=np.float32)),
    ("cat0", lambda t: t.cat(t * 2, dim=0), lambda x: np.concatenate([x, x * 2], 0)),
    ("cat1", lambda t: t.cat(t * 2, dim=1), lambda x: np.concatenate([x, x * 2], 1)),
    ("stack", lambda t: Tensor.stack(t, -t, dim=1), lambda x: np.stack([x, -x], 1)),
]


@pytest.mark.parametrize("name,fn,ref", COMPOSITE, ids=[c[0] for c in COMPOSITE])
@pytest.mark.parametrize("axis", [0, 1])
def test_composite_ops(name, fn, ref, axis):
    x = rand(4, 6, seed=72)
    check(fn(on(x, D2, axis)), ref(x).astype(np.float32), D2, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("w_axis,i_axis", [(None, 0), (None, None), (0, None)])
def test_tensor_indexing(w_axis, i_axis):
    w, idx = rand(10, 4, seed=73), np.array([[1, 2, 3], [0, 9, 8], [4, 4, 4], [7, 6, 5]])
    check(on(w, D2, w_axis)[on(idx, D2, i_axis)], w[idx], D2, exact=True)


def test_gather():
    x, idx = rand(4, 6, seed=74), np.array([[0], [5], [2], [1]])
    check(on(x, D2, 0).gather(1, on(idx, D2, 0)), np.take_along_axis(x, idx, 1), D2, exact=True)


# ---------------------------------------------------------------- 4. movement
@pytest.mark.parametrize(
    "shape,axis,new,new_axis",
    [
        ((4, 6), 0, (2, 2, 6), 0),  # keeps the shard axis
        ((4, 6), 0, (24,), 0),
        ((4, 6), 0, (1, 4, 6), 1),
        ((4, 6), 1, (4, 2, 3), 1),
        ((4, 6), 1, (4, 3, 2), None),  # blocks of 3 columns are not blocks of dim 1 any more: gathered
        ((4, 6), 1, (24,), None),
        ((4, 6), 1, (2, 12), None),
        ((4, 6, 5), 1, (4, 30), 1),
        ((6, 4), 0, (3, 2, 4), None),
    ],
    ids=_id,
)
def test_reshape(shape, axis, new, new_axis):
    x = rand(*shape, seed=34)
    t = on(x, D2, axis).reshape(new)
    check(t, x.reshape(new), D2, new_axis, exact=True)
    check(t * 2 + 1, x.reshape(new) * 2 + 1, D2, new_axis)  # and further ops on it


def test_reshape_realized_and_three_devices():
    x = rand(6, 6, seed=35)
    t = on(x, D3, 0, realize=True)
    check(t.reshape(3, 2, 6), x.reshape(3, 2, 6), D3, 0, exact=True)
    check(t.reshape(2, 18), x.reshape(2, 18), D3, None, exact=True)
    check(on(x, D3, 1, realize=True).reshape(6, 3, 2), x.reshape(6, 3, 2), D3, 1, exact=True)
    check(on(x, D3, 1, realize=True).reshape(36), x.reshape(36), D3, None, exact=True)


@pytest.mark.parametrize(
    "axis,order", [(0, (2, 0, 1)), (1, (2, 0, 1)), (2, (1, 0, 2)), (2, (0, 2, 1)), (None, (2, 0, 1)), (1, (0, 1, 2))]
)
def test_permute(axis, order):
    x = rand(2, 4, 6, seed=36)
    t = on(x, D2, axis).permute(order)
    check(t, x.transpose(order), D2, None if axis is None else order.index(axis), exact=True)
    check(t + on(x.transpose(order), D2, 0), x.transpose(order) * 2, D2, exact=True)


def test_transpose_and_realized_permute():
    x = rand(4, 6, seed=37)
    t = on(x, D2, 1, realize=True)
    check(t.T, x.T, D2, 0, exact=True)
    check(t.T.realize(), x.T, D2, 0, exact=True)
    check(t.T.T, x, D2, 1, exact=True)


@pytest.mark.parametrize(
    "shape,axis,new",
    [((4, 1), 0, (4, 6)), ((1, 6), 1, (3, 6)), ((4, 1), None, (4, 5)), ((2, 1, 4), 2, (2, 3, 4))],
    ids=_id,
)
def test_expand(shape, axis, new):
    x = rand(*shape, seed=38)
    t = on(x, D2, axis).expand(new)
    check(t, np.broadcast_to(x, new), D2, axis, exact=True)
    check(t.sum(0), np.broadcast_to(x, new).sum(0), D2)


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("pad", [((1, 2), (0, 0)), ((0, 0), (3, 1)), ((2, 2), (1, 1)), ((0, 0), (0, 0))])
def test_pad(axis, pad):
    x = rand(4, 6, seed=39)
    t = on(x, D2, axis).pad(pad)
    expected = np.pad(x, pad)
    kept = axis is not None and pad[axis] == (0, 0)
    check(t, expected, D2, axis if kept else None, exact=True)
    check(t * 3, expected * 3, D2, exact=True)


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize(
    "index",
    [
        (slice(1, 3),),
        (slice(None), slice(2, 5)),
        (slice(None), slice(None, None, 2)),
        (slice(None, None, -1),),
        (1,),
        (slice(None), 4),
        (None, Ellipsis, slice(3, 6)),
    ],
)
def test_slicing(axis, index):
    x = rand(4, 6, seed=40)
    t = on(x, D2, axis)
    check(t[index], x[index], D2, exact=True)
    check(t[index] + 1, x[index] + 1, D2, exact=True)


def test_shrink_axis_rules():
    x = rand(4, 6, seed=41)
    t = on(x, D2, 0)
    check(t.shrink(((0, 4), (1, 5))), x[:, 1:5], D2, 0, exact=True)  # off the shard axis: kept
    check(t.shrink(((1, 3), None)), x[1:3], D2, None, exact=True)  # on it: gathered
    check(t.shrink(((0, 2), None)), x[0:2], D2, None, exact=True)  # exactly device 0's block
    s = on(x, D2, 1, realize=True)[1:, 3:]
    check(s.realize(), x[1:, 3:], D2, exact=True)


@pytest.mark.parametrize("axis", [0, 1, None])
def test_flip(axis):
    x = rand(4, 6, seed=42)
    for flip_axis in (0, 1, (0, 1)):
        t = on(x, D2, axis).flip(flip_axis)
        expected = np.flip(x, flip_axis)
        flipped = {flip_axis} if isinstance(flip_axis, int) else set(flip_axis)
        check(t, expected, D2, axis if axis not in flipped else None, exact=True)
        check(t - on(x, D2, axis), expected - x, D2, exact=True)


def test_flip_three_devices_realized():
    x = rand(3, 6, seed=43)
    t = on(x, D3, 0, realize=True).flip(0)
    check(t, x[::-1], D3, exact=True)
    check(t.realize(), x[::-1], D3, exact=True)
    check(t.sum(0), x[::-1].sum(0), D3)


def test_movement_chain_then_reduce():
    x = rand(2, 4, 6, seed=44)
    t = on(x, D2, 1).permute(2, 1, 0)[1:5].reshape(4, 8).pad(((0, 0), (1, 1)))
    expected = np.pad(x.transpose(2, 1, 0)[1:5].reshape(4, 8), ((0, 0), (1, 1)))
    check(t, expected, D2, exact=True)
    check(t.sum(1), expected.sum(1), D2)


# ---------------------------------------------------------------- 5. matmul
@pytest.mark.parametrize("devices,batch", [(D2, 8), (D3, 6), (D2, 2)], ids=["D2", "D3", "D2-batch2"])
def test_matmul_data_parallel(devices, batch):
    x, w = rand(batch, 5, seed=45), rand(5, 7, seed=46)
    out = on(x, devices, 0) @ on(w, devices, None)
    check(out, x @ w, devices, 0, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("devices,k", [(D2, 6), (D3, 9), (D2, 2)], ids=["D2", "D3", "D2-k2"])
def test_matmul_sharded_on_k(devices, k):
    x, w = rand(4, k, seed=47), rand(k, 5, seed=48)
    out = on(x, devices, 1) @ on(w, devices, 0)
    check(out, x @ w, devices, None, rtol=1e-5, atol=1e-5)  # summed over the shard axis: all-reduced


def test_matmul_other_layouts():
    x, w = rand(4, 6, seed=49), rand(6, 8, seed=50)
    check(on(x, D2, None) @ on(w, D2, 1), x @ w, D2, 1, rtol=1e-5, atol=1e-5)  # column parallel
    check(on(x, D2, 0) @ on(w, D2, 1), x @ w, D2, rtol=1e-5, atol=1e-5)
    check(on(x, D2, 1) @ on(w, D2, None), x @ w, D2, rtol=1e-5, atol=1e-5)
    xi, wi = rand(4, 6, seed=51, dtype=np.int32), rand(6, 8, seed=52, dtype=np.int32)
    check(on(xi, D2, 1) @ on(wi, D2, 0), xi @ wi, D2, None, exact=True)
    b = rand(3, 4, 6, seed=53)  # batched, sharded on the batch
    check(on(b, D3, 0) @ on(w, D3), b @ w, D3, 0, rtol=1e-5, atol=1e-5)


def test_matmul_realized_and_transposed():
    x, w = rand(6, 4, seed=54), rand(5, 6, seed=55)
    xt = on(x, D2, 0, realize=True).T  # (4, 6) sharded on dim 1
    wt = on(w, D2, 1, realize=True).T  # (6, 5) sharded on dim 0
    check(xt @ wt, x.T @ w.T, D2, None, rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------- 6. realize
def test_realize_then_more_ops():
    x, y = rand(4, 6, seed=56), rand(4, 6, seed=57)
    a, b = on(x, D2, 0), on(y, D2, 1)
    c = (a * b + 1).realize()
    check(c, x * y + 1, D2, 0)
    d = (c.exp() - a).realize()
    check(d, np.exp(x * y + 1) - x, D2, 0, rtol=1e-5, atol=1e-5)
    e = d.sum(0).realize()
    check(e, (np.exp(x * y + 1) - x).sum(0), D2, None, rtol=1e-5, atol=1e-4)
    check(e + c, (np.exp(x * y + 1) - x).sum(0) + x * y + 1, D2, 0, rtol=1e-5, atol=1e-4)


def test_realize_several_at_once():
    x = rand(6, 6, seed=58, dtype=np.int32)
    a = on(x, D3, 0)
    b, c, d = a + 1, (a * 2).shard(D3, 1), a.sum(1)
    single = Tensor(x) - 1
    other = on(x, D2, 1) * 3
    Tensor.realize(b, c, d, single, other)
    for t in (b, c, d, other):
        assert t.uop.op is not Ops.ADD and any(u.op is Ops.BUFFER for u in t.uop.toposort())
    check(b, x + 1, D3, 0, exact=True)
    check(c, x * 2, D3, 1, exact=True)
    check(d, x.sum(1), D3, 0, exact=True)  # summed off the shard axis: still sharded
    check(single, x - 1, exact=True)
    assert single.device == "CPU"
    check(other, x * 3, D2, 1, exact=True)


def test_realize_is_idempotent_and_shares_nothing_between_devices():
    x = rand(4, 6, seed=59, dtype=np.int32)
    t = on(x, D2, 1).realize()
    parts = device_parts(t)
    t.realize()
    assert [d for d, _ in device_parts(t)] == [d for d, _ in parts] == list(D2)
    assert len({id(b) for b in device_buffers(t)}) == 2


def test_realize_mixed_devices_at_once():
    x = rand(6, 6, seed=77)
    a = on(x, D2, 0)
    gathered = a.to("CPU")  # with the multi tensor it reads
    from_other = Tensor(x, device="CPU:1").shard(D2, 1)  # sharded from a tensor on another device
    far = Tensor(x, device="CPU:1").shard(("CPU:2", "CPU:3"), 0) + 1
    plus, times = a + 1, on(x, D3, 1) * 2
    Tensor.realize(plus, gathered, from_other, far, times)
    check(plus, x + 1, D2, 0, exact=True)
    check(gathered, x, exact=True)
    check(from_other, x, D2, 1, exact=True)
    check(times, x * 2, D3, 1, exact=True)
    check(far, x + 1, ("CPU:2", "CPU:3"), 0, exact=True)


# ---------------------------------------------------------------- 7. backward and optimizers vs torch
def _mlp(x, w1, b1, w2, b2, y):
    h = (x @ w1 + b1).relu()
    out = h @ w2 + b2
    return ((out - y) ** 2).mean() + out.sum(1).max() * 0.1


def _mlp_data(batch: int):
    rng = np.random.default_rng(60)
    x, y = rng.standard_normal((batch, 5)).astype(np.float32), rng.standard_normal((batch, 3)).astype(np.float32)
    ws = [rng.standard_normal(s).astype(np.float32) * 0.5 for s in ((5, 8), (8,), (8, 3), (3,))]
    return x, y, ws


def _torch_mlp(x, y, ws):
    tws = [torch.tensor(w, requires_grad=True) for w in ws]
    loss = _mlp(torch.tensor(x), *tws[:2], *tws[2:], torch.tensor(y))
    loss.backward()
    return loss, tws


def _params(ws, devices, how):
    """The MLP's weights as leaves: replicated multi leaves, or one-device leaves copied .to(devices)."""
    if how == "multi_leaf":
        leaves = [Tensor(w, device=devices, requires_grad=True) for w in ws]
        return leaves, leaves
    leaves = [Tensor(w, requires_grad=True) for w in ws]
    return leaves, [w.to(devices) for w in leaves]


@pytest.mark.parametrize("how", ["multi_leaf", "to_tuple"])
@pytest.mark.parametrize("devices,batch", [(D2, 8), (D3, 6)], ids=["D2", "D3"])
def test_mlp_backward_matches_torch(how, devices, batch):
    x, y, ws = _mlp_data(batch)
    tloss, tws = _torch_mlp(x, y, ws)
    leaves, used = _params(ws, devices, how)
    loss = _mlp(on(x, devices, 0), *used[:2], *used[2:], on(y, devices, 0))
    assert loss.device == devices and loss.shape == ()
    loss.backward()
    np.testing.assert_allclose(loss.numpy(), tloss.detach().numpy(), rtol=1e-5)
    for leaf, tw in zip(leaves, tws):
        assert leaf.grad is not None and leaf.grad.device == leaf.device and leaf.grad.shape == leaf.shape
        np.testing.assert_allclose(leaf.grad.numpy(), tw.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_backward_to_a_sharded_input_and_sharded_weights():
    x, y, ws = _mlp_data(8)
    tx = torch.tensor(x, requires_grad=True)
    tws = [torch.tensor(w, requires_grad=True) for w in ws]
    tloss = _mlp(tx, *tws[:2], *tws[2:], torch.tensor(y))
    tloss.backward()
    ux = on(x, D2, 0).requires_grad_()
    # tensor parallel: w1 split by columns, b1 with it, w2 split by rows, b2 replicated
    uws = [on(ws[0], D2, 1), on(ws[1], D2, 0), on(ws[2], D2, 0), on(ws[3], D2)]
    for w in uws:
        w.requires_grad_()
    loss = _mlp(ux, *uws[:2], *uws[2:], on(y, D2, 0))
    loss.backward()
    np.testing.assert_allclose(loss.numpy(), tloss.detach().numpy(), rtol=1e-5)
    assert ux.grad is not None and ux.grad.device == D2
    np.testing.assert_allclose(ux.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-6)
    for w, tw in zip(uws, tws):
        assert w.grad is not None and w.grad.device == D2
        np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-5, atol=1e-6)


# name: (unigrad loss, torch loss), each of a (4, 6) tensor
GRAD_CASES = {
    "flip_shrink": ((lambda t: (t.flip(0)[1:3] * 2).sum()),) * 2,
    "pad": (
        lambda t: (t.pad(((1, 1), (0, 2))) ** 2).mean(),
        lambda t: (torch.nn.functional.pad(t, (0, 2, 1, 1)) ** 2).mean(),
    ),
    "reshape_permute": ((lambda t: (t.reshape(2, 12).permute(1, 0).exp() * t.reshape(12, 2)).sum()),) * 2,
    "expand": ((lambda t: (t.reshape(4, 1, 6).expand(4, 3, 6).sum(1) * t).sum()),) * 2,
    "max": (
        lambda t: t.max(0).sum() + t.max(1).sum(),
        lambda t: t.max(0).values.sum() + t.max(1).values.sum(),
    ),
    "softmax": ((lambda t: (t.softmax(1) * t).sum()),) * 2,
}


@pytest.mark.parametrize("case", list(GRAD_CASES))
@pytest.mark.parametrize("axis", [0, 1])
def test_grad_through_movement_and_reduce(case, axis):
    """Gradients of a one-device leaf through shard, ops that keep or gather the shard axis, and back."""
    ug_loss, torch_loss = GRAD_CASES[case]
    x = rand(4, 6, seed=75)
    tx = torch.tensor(x, requires_grad=True)
    tloss = torch_loss(tx)
    tloss.backward()
    leaf = Tensor(x, requires_grad=True)
    loss = ug_loss(leaf.shard(D2, axis))
    loss.backward()
    np.testing.assert_allclose(loss.numpy(), tloss.detach().numpy(), rtol=1e-5)
    assert leaf.grad is not None and leaf.grad.device == "CPU"
    np.testing.assert_allclose(leaf.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_grad_through_gather_and_reshard():
    x = rand(4, 6, seed=76)
    tx = torch.tensor(x, requires_grad=True)
    ((tx * 3).sum() + (tx.exp() * tx).sum()).backward()
    leaf = Tensor(x, requires_grad=True)
    s = leaf.shard(D2, 0)
    loss = (s.to("CPU") * 3).sum() + (s.shard(D2, 1).exp() * s).sum().to("CPU")
    loss.backward()
    assert leaf.grad is not None
    np.testing.assert_allclose(leaf.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("how", ["multi_leaf", "to_tuple"])
@pytest.mark.parametrize("opt", ["SGD", "Adam"])
@Tensor.train()  # tinygrad's optimizers step only in train mode
def test_optimizer_steps_match_torch(how, opt):
    x, y, ws = _mlp_data(8)
    tws = [torch.tensor(w, requires_grad=True) for w in ws]
    leaves, _ = _params(ws, D2, how)
    if opt == "SGD":
        topt, uopt = torch.optim.SGD(tws, lr=0.1, momentum=0.9), optim.SGD(leaves, lr=0.1, momentum=0.9)
    else:
        topt, uopt = torch.optim.Adam(tws, lr=0.01), optim.Adam(leaves, lr=0.01)
    ux, uy = on(x, D2, 0), on(y, D2, 0)
    for _ in range(3):
        topt.zero_grad()
        tloss = _mlp(torch.tensor(x), *tws[:2], *tws[2:], torch.tensor(y))
        tloss.backward()
        topt.step()
        uopt.zero_grad()
        used = leaves if how == "multi_leaf" else [w.to(D2) for w in leaves]
        loss = _mlp(ux, *used[:2], *used[2:], uy)
        loss.backward()
        np.testing.assert_allclose(loss.numpy(), tloss.detach().numpy(), rtol=1e-5)  # read before the step
        uopt.step()
        for leaf, tw in zip(leaves, tws):
            assert leaf.device == (D2 if how == "multi_leaf" else "CPU")
            np.testing.assert_allclose(leaf.numpy(), tw.detach().numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("opt", ["SGD", "Adam"])
@Tensor.train()  # tinygrad's optimizers step only in train mode
def test_optimizer_on_sharded_parameters(opt):
    rng = np.random.default_rng(61)
    w0, x = rng.standard_normal((6, 4)).astype(np.float32), rng.standard_normal((3, 6)).astype(np.float32)
    tw = torch.tensor(w0, requires_grad=True)
    uw = on(w0, D2, 0).requires_grad_()
    topt = torch.optim.SGD([tw], lr=0.1) if opt == "SGD" else torch.optim.Adam([tw], lr=0.01)
    uopt = optim.SGD([uw], lr=0.1) if opt == "SGD" else optim.Adam([uw], lr=0.01)
    ux = Tensor(x, device=D2)
    for _ in range(3):
        topt.zero_grad()
        (torch.tensor(x) @ tw).square().sum().backward()
        topt.step()
        uopt.zero_grad()
        (ux @ uw).square().sum().backward()
        uopt.step()
        assert uw.device == D2 and uw.uop.axis == 0
        np.testing.assert_allclose(uw.numpy(), tw.detach().numpy(), rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- 8. assign
@pytest.mark.parametrize("devices,axis", [(D2, None), (D2, 1), (D3, -1)], ids=_id)
def test_assign(devices, axis):
    x = rand(4, 6, seed=62, dtype=np.int32)
    norm = None if axis is None else axis % 2
    t = on(x, devices, axis, realize=True)
    t.assign(t + 1)
    check(t, x + 1, devices, norm, exact=True)
    t.assign(t * 2).realize()
    t.assign(t - on(x, devices, axis))
    check(t, (x + 1) * 2 - x, devices, norm, exact=True)
    t.assign(7)
    check(t, np.full((4, 6), 7, dtype=np.int32), devices, norm, exact=True)
    t.assign(on(x, devices, axis).flip(0))  # a value reading other devices' blocks
    check(t, x[::-1], devices, norm, exact=True)


@pytest.mark.parametrize("axis", [None, 0, 1])
def test_assign_keeps_the_device_buffers(axis):
    x = rand(4, 6, seed=78, dtype=np.int32)
    t = on(x, D2, axis, realize=True)
    before = device_buffers(t)
    t.assign(t * 3).realize()
    check(t, x * 3, D2, axis, exact=True)
    assert device_buffers(t) == before  # written in place


@pytest.mark.parametrize(
    "axis,assigns",
    [
        (0, 1),
        (1, 1),
        (None, 1),
        (None, 3),
        (0, 2),
        (1, 3),
    ],
)
def test_assign_is_seen_by_earlier_views(axis, assigns):
    """As on one device: assign writes the tensor's buffers in place, so every view of them sees each write."""
    x = rand(4, 6, seed=69, dtype=np.int32)
    t = on(x, D2, axis, realize=True)
    view = t.reshape(24)
    expected = x
    for i in range(assigns):
        t.assign(t + 10 * (i + 1)).realize()
        expected = expected + 10 * (i + 1)
    check(t, expected, D2, axis, exact=True)
    check(view, expected.reshape(24), D2, exact=True)


@pytest.mark.parametrize(
    "devices,axis",
    [
        ("CPU", None),
        (D2, None),
        (D2, 0),
        (D2, 1),
    ],
)
def test_lazy_graph_built_before_an_assign_keeps_the_values_of_before(devices, axis):
    """As on one device (the first case), and as torch computes at the call: a lazy tensor made from the buffer
    before an assign is computed before the write (a model's outputs read after an optimizer step are the ones
    of the weights they were made from); one made after the assigns sees the new values."""
    x = rand(4, 6, seed=71, dtype=np.int32)
    t = Tensor(x, device=devices).realize() if devices == "CPU" else on(x, devices, axis, realize=True)
    doubled = t * 2
    t.assign(t + 1).realize()
    t.assign(t + 1).realize()
    check(doubled, x * 2, exact=True)
    check(t * 2, (x + 2) * 2, exact=True)


@pytest.mark.parametrize("target_axis,value_axis", [(0, 1), (1, None), (None, 0)])
def test_assign_value_on_another_axis(target_axis, value_axis):
    x, y = rand(4, 6, seed=63), rand(4, 6, seed=64)
    t = on(x, D2, target_axis, realize=True)
    t.assign(on(y, D2, value_axis) + t)
    check(t, x + y, D2, target_axis, exact=True)


def test_assign_unrealized_multi_target_reading_itself():
    x = rand(4, 6, seed=65)
    t = on(x, D2, 0) * 2  # no buffer yet
    t.assign(t + 1)
    check(t, x * 2 + 1, D2, 0, exact=True)


def test_assign_unrealized_multi_target_keeps_its_sharding():
    x = rand(4, 6, seed=65)
    u = on(x, D2, 1)
    u.assign(on(x[::-1].copy(), D2, 1))
    check(u, x[::-1], D2, 1, exact=True)


@pytest.mark.parametrize(
    "axis,index",
    [
        (None, (slice(None), slice(1, 3))),
        (None, (slice(1, 3),)),
        (0, (slice(None), slice(1, 3))),
        (0, (slice(None), slice(None, None, -1))),
        (1, (slice(1, 3),)),
    ],
)
def test_assign_to_a_view(axis, index):
    """As on one device: the view's elements are written in place and the tensor it was taken from sees them."""
    x = rand(4, 6, seed=70, dtype=np.int32)
    t = on(x, D2, axis, realize=True)
    v = t[index]
    v.assign(-v).realize()
    expected = x.copy()
    expected[index] = -expected[index]
    check(t, expected, D2, axis, exact=True)


@pytest.mark.parametrize(
    "axis,index,op", [(0, (slice(1, 3),), "SHRINK"), (1, (slice(None), slice(None, None, -1)), "FLIP")]
)
def test_assign_to_a_view_across_the_blocks_is_refused(axis, index, op):
    t = on(rand(4, 6, seed=70, dtype=np.int32), D2, axis, realize=True)
    v = t[index]
    with pytest.raises(
        RuntimeError, match=rf"assign: the target is a {op} view across the blocks .* split on dim {axis}"
    ):
        v.assign(-v)


def test_assign_to_a_permuted_view():
    x = rand(4, 6, seed=70, dtype=np.int32)
    p = on(x, D2, 1, realize=True)
    q = p.permute(1, 0)  # sharded on dim 0 now
    check(q.assign(q * 3), x.T * 3, D2, 0, exact=True)
    check(p, x * 3, D2, 1, exact=True)


def test_assign_errors_on_multi_tensors():
    t = on(rand(4, 6, seed=66), D2, 0, realize=True)
    with pytest.raises(RuntimeError, match="CPU"):
        t.assign(Tensor(rand(4, 6)))
    with pytest.raises(RuntimeError, match=r"\(3, 6\)"):
        t.assign(on(rand(3, 6), D3, 0))


# ---------------------------------------------------------------- 9. errors
@pytest.mark.parametrize(
    "shape,devices,axis",
    [((5, 4), D2, 0), ((4, 5), D2, 1), ((4,), D3, 0), ((3, 7), D3, -1), ((1, 4), D2, 0)],
    ids=_id,
)
def test_shard_not_divisible(shape, devices, axis):
    with pytest.raises(RuntimeError, match=re.escape(str(shape))):
        Tensor(rand(*shape)).shard(devices, axis)
    with pytest.raises(RuntimeError, match=re.escape(str(shape))):
        on(rand(*shape), devices).shard(devices, axis)  # from a replicated multi tensor too


@pytest.mark.parametrize(
    "devices", [("CPU:0",), ("CPU:0", "CPU:0"), ("CPU:1", "cpu:1"), (), ("CPU:0", "CPU:1", "CPU:0")]
)
def test_bad_device_tuples(devices):
    x = rand(4, 4)
    with pytest.raises(ValueError):
        Tensor(x).shard(devices, 0)
    with pytest.raises(ValueError):
        Tensor(x, device=devices)
    with pytest.raises(ValueError):
        Tensor(x).to(devices)
    with pytest.raises(ValueError):
        Tensor.empty(4, 4, device=devices)


def test_shard_axis_out_of_range():
    with pytest.raises((IndexError, RuntimeError)):
        Tensor(rand(4, 6)).shard(D2, 2)
    with pytest.raises((IndexError, RuntimeError)):
        Tensor(rand(4, 6)).shard(D2, -3)


SINGLE_DEVICE = {
    "lazy": lambda x: Tensor(x) * 1,
    "realized": lambda x: Tensor(x).realize(),
    "ones": lambda x: Tensor.ones(*x.shape),
}


def _raises_naming_both(fn, devices) -> None:
    with pytest.raises(RuntimeError) as err:
        fn().numpy()
    msg = str(err.value)
    assert str(devices) in msg and "CPU" in msg.replace(str(devices), ""), msg  # names both devices


@pytest.mark.parametrize("single", list(SINGLE_DEVICE))
@pytest.mark.parametrize("axis", [None, 0])
def test_multi_with_single_device_tensor(single, axis):
    x = rand(4, 6, seed=67)
    a, b = on(x, D2, axis), SINGLE_DEVICE[single](x)
    _raises_naming_both(lambda: a + b, D2)
    _raises_naming_both(lambda: b * a, D2)
    _raises_naming_both(lambda: (a > 0).where(b, a), D2)
    _raises_naming_both(lambda: a @ b.T, D2)
    if single != "ones":
        _raises_naming_both(lambda: (b > 0).where(a, 0), D2)  # raised when realized


@pytest.mark.parametrize("single,multi_cond", [("realized", True), ("ones", False)])
@pytest.mark.parametrize("axis", [None, 0])
def test_where_condition_on_another_device(single, multi_cond, axis):
    x = rand(4, 6, seed=67)
    a, b = on(x, D2, axis), SINGLE_DEVICE[single](x)
    if multi_cond:
        _raises_naming_both(lambda: (a > 0).where(b, 0), D2)
    else:
        _raises_naming_both(lambda: (b > 0).where(a, 0), D2)


def test_multi_with_another_device_tuple():
    with pytest.raises(RuntimeError) as err:
        (on(rand(6, 6), D2, 0) + on(rand(6, 6), D3, 0)).numpy()
    assert str(D2) in str(err.value) and str(D3) in str(err.value)
    with pytest.raises(RuntimeError):
        (on(rand(6, 6), D2, 0) + on(rand(6, 6), ("CPU:1", "CPU:0"), 0)).numpy()


# ---------------------------------------------------------------- 10. size-0 and size-1 edge cases
def test_size_zero():
    x = np.zeros((0, 4), dtype=np.float32)
    t = on(x, D2, 1)
    check(t, x, D2, 1, exact=True)
    check(t + 1, x + 1, D2, 1, exact=True)
    check(t.sum(0), np.zeros(4, dtype=np.float32), D2, 0, exact=True)
    check(t.sum(1), np.zeros(0, dtype=np.float32), D2, exact=True)
    check(t.sum(), np.array(0, dtype=np.float32), D2, None, exact=True)
    check(on(x, D2, 0), x, D2, 0, exact=True)  # 0 splits into two blocks of 0
    check(on(x, D3, None).reshape(4, 0), x.reshape(4, 0), D3, exact=True)


def test_size_one():
    x = np.array([3, -5], dtype=np.int32)
    t = on(x, D2, 0)
    assert_layout(t, x, D2, 0)
    check(t.sum(), np.array(-2, dtype=np.int64), D2, None, exact=True)
    assert t.sum().item() == -2 and t.max().item() == 3 and t.tolist() == [3, -5]
    check(t * t, x * x, D2, 0, exact=True)
    one = on(np.array([[4.5]], dtype=np.float32), D2)
    check(one, np.array([[4.5]], dtype=np.float32), D2, None, exact=True)
    check(one.expand(2, 3) + on(rand(2, 3), D2, None), 4.5 + rand(2, 3), D2)
    assert one.item() == 4.5


def test_zero_dim_replicated():
    s = Tensor(2.0).to(D3)
    assert s.shape == () and s.device == D3 and s.uop.axis is None
    check(s * 3, np.array(6.0, dtype=np.float32), D3, None, exact=True)
    x = rand(3, 4, seed=68)
    check(on(x, D3, 0) * s, x * 2, D3, 0, exact=True)
    assert s.item() == 2.0
