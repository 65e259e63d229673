"""Adjacent output axes that every index sees as one become one loop (pipeline/optimize/merge_axes.py), and a big
reduction under a transcendental gets its own kernel (rangeify): results equal numpy's on every device."""

import numpy as np
import pytest

from unigrad import Tensor
from unigrad.ir.ops import GroupOp, Ops
from unigrad.ir.uop import UOp
from unigrad.pipeline.callify import callify
from unigrad.pipeline.optimize.merge_axes import merge_output_axes
from unigrad.pipeline.rangeify import rangeify
from unigrad.runtime import realize as rt
from unigrad.runtime.support import cuda
from unigrad.runtime.support import opencl as cl

DEVICES = (
    ("CPU", "PYTHON")
    + (("CL",) if cl.unavailable() is None else ())
    + (("CUDA",) if cuda.unavailable() is None else ())
)


def kernels(*ts: Tensor) -> list[UOp]:
    fn = callify(UOp(Ops.SINK, tuple(t.uop for t in ts)))
    return [u.src[0] for u in rangeify(fn, "CPU").toposort() if u.op is Ops.CALL]


def loops(ast: UOp) -> list[int]:
    """The bounds of the kernel's RANGEs, by id."""
    rs = sorted((u for u in ast.toposort() if u.op is Ops.RANGE), key=lambda r: r.arg.id)
    return [r.src[0].arg.value for r in rs]


def rand(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_rows_read_and_written_as_one_merge():
    x = Tensor(rand(6, 11, 4)).realize()
    (ast,) = kernels((x + 1).exp())
    assert loops(ast) == [6, 11, 4] and loops(merge_output_axes(ast)) == [264]


def test_a_matmul_over_batch_and_tokens_tiles_its_rows_as_one_axis():
    """A Linear's result reshaped back to (batch, tokens, out) and used: one row axis of batch * tokens."""
    x, w = Tensor(rand(6, 11, 16)).realize(), Tensor(rand(16, 32, seed=1)).realize()
    (ast,) = kernels(x.linear(w) * 2)
    assert loops(merge_output_axes(ast)) == [66, 32, 16]


@pytest.mark.parametrize(
    "build",
    [
        lambda t: t.permute(2, 1, 0) * 2,  # every pair read with other strides
        lambda t: t[:, :, ::-1] + t.flip(1),  # a flipped axis: its coefficient is negative, not b's times b's bound
        lambda t: t.pad(((0, 0), (1, 0), (0, 0))) + 1,  # the padded axis is compared (a gate)
    ],
    ids=["permuted", "flipped", "padded"],
)
def test_axes_used_other_ways_stay_apart(build):
    t = Tensor(rand(3, 4, 5)).realize()
    (ast,) = kernels(build(t))
    assert loops(merge_output_axes(ast)) == loops(ast)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", [(1, 1, 3), (2, 3, 4), (5, 1, 7), (3, 0, 2)])
def test_merged_axes_compute_the_same_values(device, shape):
    x = rand(*shape)
    t = Tensor(x, device=device).realize()
    np.testing.assert_allclose(((t * 3).sin() + t).numpy(), np.sin(x * 3) + x, rtol=1e-5, atol=1e-6)
    v = t[:, ::-1] if shape[1] else t  # a non-contiguous read: the pair it reverses stays apart
    np.testing.assert_allclose((v + 1).numpy(), (x[:, ::-1] if shape[1] else x) + 1, rtol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
def test_a_linear_under_gelu_is_a_matmul_kernel_and_an_elementwise_one(device):
    """The exact GELU (erf) after a Linear of 6 x 11 tokens: the matmul's kernel holds no transcendental (its
    register tile would compute one per element, in scalar copies); the values equal numpy's."""
    from math import erf

    xn, wn, bn = rand(6, 11, 32), rand(32, 160, seed=1) / 4, rand(160, seed=2)
    x, w, b = (Tensor(a, device=device).realize() for a in (xn, wn, bn))
    y = x.linear(w, b).gelu("none")
    before = rt.stats.kernels
    got = y.numpy()
    assert rt.stats.kernels - before == 2
    reduce_kernel = next(a for a in rt.stats.last_kernels if any(u.op is Ops.REDUCE for u in a.toposort()))
    assert not any(u.op in GroupOp.Transcendental for u in reduce_kernel.toposort())
    h = xn @ wn + bn
    want = h * 0.5 * (1 + np.vectorize(erf)(h / np.sqrt(2)))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
