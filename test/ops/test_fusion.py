"""Kernel counts: what fuses into one kernel and what is materialized.

`rt.stats.kernels` counts every kernel run; `rt.stats.last_kernels` holds the ASTs (SINKs) run by the
last realize. Inputs are realized first so only the op under test is counted.
"""

import numpy as np
import pytest

from unigrad import Tensor
from unigrad.ir.ops import Ops
from unigrad.runtime import realize as rt

DEVICES = ("CPU", "PYTHON")


def kernels_run(*ts: Tensor) -> int:
    """Realize the tensors; return how many kernels that ran."""
    before = rt.stats.kernels
    ts[0].realize(*ts[1:])
    return rt.stats.kernels - before


def realized(x: np.ndarray, device: str) -> Tensor:
    return Tensor(x, device=device).realize()


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(0)


@pytest.mark.parametrize("device", DEVICES)
def test_elementwise_chain_is_one_kernel(device, rng):
    x, y = rng.uniform(0.5, 2, (4, 5)).astype(np.float32), rng.uniform(0.5, 2, (4, 5)).astype(np.float32)
    a, b = realized(x, device), realized(y, device)
    out = ((((a + b) * 2 - a) / b).sqrt() + 1).log2().exp2().maximum(b) * a + 3  # 11 elementwise ops
    assert kernels_run(out) == 1
    ref = np.maximum(np.sqrt(((x + y) * 2 - x) / y) + 1, y) * x + 3
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
def test_mul_add_is_one_kernel(device):
    a, b, c = (Tensor([v], device=device).realize() for v in (1, 2, 3))
    out = a * b + c
    assert kernels_run(out) == 1
    assert len(rt.stats.last_kernels) == 1
    assert out.tolist() == [5]


@pytest.mark.parametrize("device", DEVICES)
def test_kernelize_makes_a_boundary(device):
    a, b, c = (Tensor([v], device=device).realize() for v in (1, 2, 3))
    out = a * b + c
    before = rt.stats.kernels
    out.kernelize()
    assert rt.stats.kernels == before  # kernelize decides the kernels without running them
    final = out + 2
    assert kernels_run(final) == 2
    assert len(rt.stats.last_kernels) == 2
    second = rt.stats.last_kernels[1]
    ops = [u.op for u in second.toposort()]
    assert Ops.MUL not in ops, "the consumer kernel recomputed a*b instead of loading out's buffer"
    assert Ops.LOAD in ops
    assert len({u for u in second.toposort() if u.op is Ops.PARAM}) == 2  # its output and out's buffer
    assert final.tolist() == [7]
    assert out.tolist() == [5]


@pytest.mark.parametrize("device", DEVICES)
def test_reduce_fuses_with_elementwise_producers(device, rng):
    x, y = rng.uniform(-1, 1, (3, 7)).astype(np.float32), rng.uniform(-1, 1, (3, 7)).astype(np.float32)
    a, b = realized(x, device), realized(y, device)
    out = (a * b).sum(1)
    assert kernels_run(out) == 1
    np.testing.assert_allclose(out.numpy(), (x * y).sum(1), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
def test_reduce_fuses_with_elementwise_consumer(device, rng):
    x, y, z = (rng.uniform(-1, 1, s).astype(np.float32) for s in ((3, 7), (3, 7), (3,)))
    a, b, c = realized(x, device), realized(y, device), realized(z, device)
    out = (a * b).sum(1) + c
    assert kernels_run(out) == 1
    np.testing.assert_allclose(out.numpy(), (x * y).sum(1) + z, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
def test_reduce_broadcast_back_is_materialized(device, rng):
    v = rng.uniform(-1, 1, (4, 5)).astype(np.float32)
    x = realized(v, device)
    out = x - x.max(1, keepdim=True)
    assert kernels_run(out) == 2
    np.testing.assert_allclose(out.numpy(), v - v.max(1, keepdims=True), rtol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
def test_softmax_kernels(device, rng):
    v = rng.uniform(-1, 1, (4, 5)).astype(np.float32)
    x = realized(v, device)
    e = (x - x.max(1, keepdim=True)).exp()
    out = e / e.sum(1, keepdim=True)
    assert kernels_run(out) == 3  # the max, the sum of exps, and the normalized output
    ref = np.exp(v - v.max(1, keepdims=True))
    np.testing.assert_allclose(out.numpy(), ref / ref.sum(1, keepdims=True), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
def test_reduce_of_reduce_is_one_kernel(device, rng):
    v = rng.uniform(0, 1, (4, 5)).astype(np.float32)
    x = realized(v, device)
    out = x.sum(1).sum(0)
    assert kernels_run(out) == 1
    np.testing.assert_allclose(out.numpy(), v.sum(), rtol=1e-5)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shapes", [((3, 4), (4, 5)), ((2, 3, 4), (2, 4, 2)), ((4,), (4, 3))], ids=str)
def test_matmul_is_one_kernel(shapes, device, rng):
    x, y = rng.uniform(-1, 1, shapes[0]).astype(np.float32), rng.uniform(-1, 1, shapes[1]).astype(np.float32)
    out = realized(x, device) @ realized(y, device)
    assert kernels_run(out) == 1
    np.testing.assert_allclose(out.numpy(), x @ y, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
def test_matmul_with_bias_and_relu_is_one_kernel(device, rng):
    x, w, bias = (rng.uniform(-1, 1, s).astype(np.float32) for s in ((3, 4), (4, 5), (5,)))
    out = (realized(x, device) @ realized(w, device) + realized(bias, device)).relu()
    assert kernels_run(out) == 1
    np.testing.assert_allclose(out.numpy(), np.maximum(x @ w + bias, 0), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
def test_view_of_realized_runs_nothing(device, rng):
    x = realized(rng.uniform(-1, 1, (4, 6)).astype(np.float32), device)
    assert kernels_run(x.reshape(2, 12)) == 0
    assert kernels_run(x.reshape(-1)) == 0
    assert kernels_run(x.unsqueeze(0)) == 0
    assert rt.stats.last_kernels == []


@pytest.mark.parametrize("device", DEVICES)
def test_realize_twice_runs_nothing_the_second_time(device, rng):
    x = realized(rng.uniform(-1, 1, (4, 6)).astype(np.float32), device)
    out = (x + 1) * 2
    assert kernels_run(out) == 1
    assert kernels_run(out) == 0
    assert rt.stats.last_kernels == []
    before = rt.stats.kernels
    out.numpy()
    out.tolist()
    assert rt.stats.kernels == before


@pytest.mark.parametrize("device", DEVICES)
def test_construction_runs_nothing(device, rng):
    before = rt.stats.kernels
    Tensor(rng.uniform(-1, 1, (3, 4)).astype(np.float32), device=device).realize()
    Tensor([[1, 2], [3, 4]], device=device).realize().numpy()
    assert rt.stats.kernels == before


@pytest.mark.parametrize("device", DEVICES)
def test_arange_is_one_kernel(device):
    t = Tensor.arange(3, 40, 3, device=device)
    assert kernels_run(t) == 1
    assert t.tolist() == list(range(3, 40, 3))


@pytest.mark.parametrize("device", DEVICES)
def test_movement_chain_is_one_kernel(device, rng):
    v = rng.uniform(-1, 1, (4, 6)).astype(np.float32)
    x = realized(v, device)
    out = x.T.flip(0).pad(((1, 0), (0, 2)), value=3.0).shrink(((0, 5), (1, 5))) * 2
    assert kernels_run(out) == 1
    ref = np.pad(np.flip(v.T, 0), ((1, 0), (0, 2)), constant_values=3.0)[0:5, 1:5] * 2
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
def test_contiguous_of_view_is_one_kernel(device, rng):
    v = rng.uniform(-1, 1, (4, 6)).astype(np.float32)
    out = realized(v, device).permute(1, 0).contiguous()
    assert kernels_run(out) == 1
    np.testing.assert_array_equal(out.numpy(), v.T)


@pytest.mark.parametrize("device", DEVICES)
def test_realized_input_is_not_recomputed(device, rng):
    v = rng.uniform(-1, 1, (4, 6)).astype(np.float32)
    x = realized(v, device)
    mid = (x * 3).realize()
    out = mid + 1
    assert kernels_run(out) == 1
    assert Ops.MUL not in [u.op for u in rt.stats.last_kernels[0].toposort() if u.dtype == out.dtype]
    np.testing.assert_allclose(out.numpy(), v * 3 + 1, rtol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
def test_kernel_count_accumulates(device, rng):
    x = realized(rng.uniform(-1, 1, (2, 3)).astype(np.float32), device)
    before = rt.stats.kernels
    a, b = x + 1, x * 2
    a.realize()
    b.realize()
    assert rt.stats.kernels - before == 2
    assert len(rt.stats.last_kernels) == 1  # only the last realize's kernels


def test_a_value_read_through_two_views_is_not_inlined_twice_at_every_step():
    """x = x[1:].cat(x[:1]) reads x through two shrinks: fused, each step would hold the step before twice (2^k
    code; 12 steps took 2.6 s to compile). A costly value read through two views is materialized instead."""
    x = Tensor(np.arange(16, dtype=np.float32))
    for _ in range(12):
        x = x[1:].cat(x[:1]) * 1.0
    n = kernels_run(x)
    np.testing.assert_array_equal(x.numpy(), np.roll(np.arange(16, dtype=np.float32), -12))
    assert 2 <= n <= 6
