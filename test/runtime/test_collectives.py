"""The spec's collectives (api/collectives.py) on 2 and 3 CPU devices, against numpy; each device's own part is
read back, so a result that is right on device 0 only fails."""

import numpy as np
import pytest

from unigrad import Tensor
from unigrad.api import collectives as C
from unigrad.ir.ops import Ops
from unigrad.runtime import multi as rt_multi
from unigrad.runtime import realize as rt


def device_parts(t: Tensor) -> list[np.ndarray]:
    """What each device holds of realized multi-device tensor t, flat, in device order."""
    t.realize()
    u = t.uop
    while u.op is not Ops.BUFFER:
        u = u.src[0]
    out = []
    for part, device in zip(rt_multi.parts[u], u.device):
        buf = rt.buffer_of(part)
        assert buf.device == device
        out.append(buf.numpy()[: part.shape[0]])
    return out


def devices(n: int) -> tuple[str, ...]:
    return tuple(f"CPU:{i}" for i in range(n))


@pytest.fixture(params=[2, 3])
def n(request: pytest.FixtureRequest) -> int:
    return request.param


def data(n: int, rows: int, cols: int = 5) -> np.ndarray:
    return np.random.default_rng(rows * 10 + n).standard_normal((rows, cols)).astype(np.float32)


def test_broadcast_puts_a_whole_copy_on_each_device(n):
    x = data(n, 7)
    t = C.broadcast(Tensor(x), devices(n))
    assert t.device == devices(n) and t.uop.axis is None
    for part in device_parts(t):
        np.testing.assert_array_equal(part, x.reshape(-1))


def test_scatter_then_gather(n):
    x = data(n, 4 * n)
    t = C.scatter(Tensor(x), devices(n))
    assert t.uop.axis == 0
    for i, part in enumerate(device_parts(t)):
        np.testing.assert_array_equal(part, x[4 * i : 4 * (i + 1)].reshape(-1))
    g = C.gather(t)
    assert g.device == "CPU:0"
    np.testing.assert_array_equal(g.numpy(), x)


def test_reduce_sums_the_blocks_on_the_first_device(n):
    x = data(n, 3 * n)
    r = C.reduce(C.scatter(Tensor(x), devices(n)))
    assert r.device == "CPU:0"
    np.testing.assert_allclose(r.numpy(), x.reshape(n, 3, 5).sum(0), rtol=1e-6, atol=1e-6)


def test_allgather_gives_every_device_the_whole(n):
    x = data(n, 2 * n)
    t = C.allgather(C.scatter(Tensor(x), devices(n)))
    assert t.uop.axis is None
    for part in device_parts(t):
        np.testing.assert_array_equal(part, x.reshape(-1))


def test_reduce_scatter_and_allreduce(n):
    s = 2 * n  # each device's block: s rows, its contribution
    x = data(n, n * s)
    total = x.reshape(n, s, 5).sum(0)
    t = C.scatter(Tensor(x), devices(n))
    rs = C.reduce_scatter(t)
    assert rs.shape == (s, 5) and rs.uop.axis == 0
    for i, part in enumerate(device_parts(rs)):
        np.testing.assert_allclose(part, total[2 * i : 2 * (i + 1)].reshape(-1), rtol=1e-6, atol=1e-6)
    ar = C.allreduce(t)
    assert ar.shape == (s, 5) and ar.uop.axis is None
    parts = device_parts(ar)
    for part in parts:
        np.testing.assert_allclose(part, total.reshape(-1), rtol=1e-6, atol=1e-6)
        np.testing.assert_array_equal(part, parts[0])  # bit-identical on every device


def test_sum_over_the_shard_axis_is_the_same_on_every_device(n):
    x = data(n, 5 * n, 3)
    s = Tensor(x).shard(devices(n), axis=0).sum(0)
    parts = device_parts(s)
    for part in parts:
        np.testing.assert_allclose(part, x.sum(0), rtol=1e-5)
        np.testing.assert_array_equal(part, parts[0])


def test_collective_errors_name_the_problem():
    with pytest.raises(RuntimeError, match="expected a tensor on several devices"):
        C.gather(Tensor([1.0, 2.0]))
    t = Tensor(np.zeros((6, 2), np.float32)).shard(devices(2), axis=0)
    with pytest.raises(RuntimeError, match=r"reduce_scatter: a block of 3 rows .* does not split into 2 chunks"):
        C.reduce_scatter(t)
