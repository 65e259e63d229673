"""Tensor cores (issue 33, point 5): the TC opt, the WMMA op and its lane layout, without a GPU.

The layout data (render/cuda.mma_m16n8k16) is checked against the PTX ISA's formulas for mma.m16n8k16, transcribed
here on their own; the PYTHON device's WMMA (run_wmma) against numpy; whole float16/bfloat16 matmuls and a
convolution run on the emulated GPU with tensor cores (PYTHON_GPU tc=1) against numpy/torch, bit for bit where the
inputs are small integers (every product and sum exact, so any lane placed wrong shows); NVRTC compiles the same
kernels to CUBINs for sm_80 and sm_90 on the NULL device; the refusals name what does not fit."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch

from unigrad import Context, Tensor, dtypes
from unigrad.ir.args import AxisType, KernelInfo
from unigrad.ir.ops import Ops
from unigrad.pipeline.optimize import Opt, OptError, OptOps, apply_opt, axes, to_global_axes
from unigrad.pipeline.optimize.tensor_cores import TCArg
from unigrad.render.cuda import CUDA_TENSOR_CORES, tensor_cores_for
from unigrad.runtime import Device
from unigrad.runtime import realize as rt
from unigrad.runtime.ops_python import gpu_target, run_wmma
from unigrad.runtime.support import nvrtc

TC = "tc=1"  # PYTHON_GPU: an emulated GPU with sm_80's tensor cores
F16, BF16 = dtypes.float16, dtypes.bfloat16
rng = np.random.default_rng(33)
NO_NVRTC = nvrtc.unavailable()


# ---------------------------------------------------------------- the layout, against the PTX ISA's formulas


def ptx_a(lane: int, i: int) -> tuple[int, int]:
    """mma.m16n8k16 .f16/.bf16 A: row = groupID for a_i with i < 2 or 4 <= i < 6, else groupID + 8;
    col = threadID_in_group * 2 + (i & 1), + 8 for i >= 4."""
    g, t = lane >> 2, lane % 4
    return (g if i < 2 or 4 <= i < 6 else g + 8), t * 2 + (i & 1) + (8 if i >= 4 else 0)


def ptx_b(lane: int, i: int) -> tuple[int, int]:
    """B: row = threadID_in_group * 2 + (i & 1), + 8 for i >= 2; col = groupID."""
    g, t = lane >> 2, lane % 4
    return t * 2 + (i & 1) + (8 if i >= 2 else 0), g


def ptx_c(lane: int, i: int) -> tuple[int, int]:
    """C/D (.f32): row = groupID for c0, c1, groupID + 8 for c2, c3; col = threadID_in_group * 2 + (i & 1)."""
    g, t = lane >> 2, lane % 4
    return (g if i < 2 else g + 8), t * 2 + (i & 1)


@pytest.mark.parametrize("tc", CUDA_TENSOR_CORES, ids=lambda tc: tc.dtype_in.name)
def test_layout_is_ptx_mma_m16n8k16(tc):
    assert (tc.name, tc.dims, tc.threads, tc.dtype_out) == ("m16n8k16", (16, 8, 16), 32, dtypes.float32)
    for frag, ptx, shape in ((tc.a, ptx_a, (16, 16)), (tc.b, ptx_b, (16, 8)), (tc.c, ptx_c, (16, 8))):
        seen = set()
        for lane, i in itertools.product(range(32), range(frag.size)):
            assert tc.coord(frag, lane, i) == ptx(lane, i), (lane, i)
            seen.add(ptx(lane, i))
        assert len(seen) == shape[0] * shape[1]  # every element of the matrix in exactly one lane


def test_run_wmma_is_a_matmul():
    tc = CUDA_TENSOR_CORES[0]
    a, b, c = rng.integers(-8, 9, (16, 16)), rng.integers(-8, 9, (16, 8)), rng.integers(-99, 99, (16, 8))
    frags = [
        [float(a[ptx_a(lane, i)]) for i in range(8)]
        + [float(b[ptx_b(lane, i)]) for i in range(4)]
        + [float(c[ptx_c(lane, i)]) for i in range(4)]
        for lane in range(32)
    ]
    d = run_wmma(tc, frags)
    want = a @ b + c
    assert [[want[ptx_c(lane, i)] for i in range(4)] for lane in range(32)] == d


def test_run_wmma_rounds_the_sum_then_adds_c():
    tc = CUDA_TENSOR_CORES[0]
    frags = [[0.0] * 16 for _ in range(32)]
    frags[0][0], frags[0][8] = 1.0, 2.0**-30  # A[0, 0] = 1, B[0, 0] = 2^-30: D[0, 0] = C + 2^-30
    frags[0][12] = 1.0  # C[0, 0] = 1: 1 + 2^-30 rounds to 1 in float32
    assert run_wmma(tc, frags)[0][0] == 1.0
    frags[0][12] = 0.0
    assert run_wmma(tc, frags)[0][0] == 2.0**-30


# ---------------------------------------------------------------- whole kernels on the emulated GPU


def lowered(device: str) -> list:
    """The kernels the last realize ran on `device`, lowered (their LINEAR, opts)."""
    return [rt.get_kernel(device, ast).lowered for ast in rt.stats.last_kernels]


def wmmas(lows: list) -> int:
    return sum(u.op is Ops.WMMA for low in lows for u in low.linear.src)


def ints(*shape: int, lo: int = -3, hi: int = 3) -> np.ndarray:
    return rng.integers(lo, hi + 1, shape).astype(np.float32)


@pytest.mark.parametrize("dt", [F16, BF16], ids=lambda d: d.name)
@pytest.mark.parametrize("mnk", [(16, 8, 16), (64, 64, 64), (48, 40, 80), (33, 20, 50), (2, 32, 48, 32)])
def test_matmul_on_tensor_cores_is_exact(dt, mnk):
    """float32 sums of products of small integers are exact whatever the order: every lane must hold the right A, B
    and C elements and store the right D elements (a wrong layout gives wrong numbers). 33x20x50 is padded. SPEC=1:
    the verifiers accept every stage of a tensor-core kernel."""
    *batch, m, n, k = mnk
    a, b = ints(*batch, m, k), ints(*batch, k, n)
    with Context(PYTHON_GPU=TC, SPEC=1):
        x = Tensor(a, device="PYTHON").cast(dt).realize()
        y = Tensor(b, device="PYTHON").cast(dt).realize()
        got = (x.cast(dtypes.float32) @ y.cast(dtypes.float32)).numpy()
        lows = lowered("PYTHON")
    np.testing.assert_array_equal(got, a @ b)
    assert wmmas(lows) >= 1, "the matmul did not run on tensor cores"


@pytest.mark.parametrize("dt", [F16, BF16], ids=lambda d: d.name)
def test_half_matmul_matches_torch(dt):
    a, b = rng.standard_normal((48, 64)).astype(np.float32), rng.standard_normal((64, 24)).astype(np.float32)
    with Context(PYTHON_GPU=TC):
        got = (Tensor(a, device="PYTHON").cast(dt) @ Tensor(b, device="PYTHON").cast(dt)).cast(dtypes.float32).numpy()
        assert wmmas(lowered("PYTHON")) >= 1
    tdt = torch.float16 if dt is F16 else torch.bfloat16
    want = (torch.tensor(a).to(tdt).float() @ torch.tensor(b).to(tdt).float()).to(tdt).float().numpy()
    ulp = 2.0**-10 if dt is F16 else 2.0**-7
    np.testing.assert_allclose(got, want, rtol=ulp, atol=ulp)


def test_conv2d_on_tensor_cores():
    img, w = ints(2, 16, 10, 10), ints(16, 16, 3, 3, lo=-1, hi=1)
    with Context(PYTHON_GPU=TC):
        x, k = Tensor(img, device="PYTHON").cast(F16), Tensor(w, device="PYTHON").cast(F16)
        got = x.conv2d(k).cast(dtypes.float32).numpy()
        assert wmmas(lowered("PYTHON")) >= 1
    want = torch.nn.functional.conv2d(torch.tensor(img), torch.tensor(w)).numpy()
    np.testing.assert_array_equal(got, want)  # |sums| <= 16 * 9 * 3: exact in float16


@pytest.mark.parametrize("mnk", [(17, 9, 33), (5, 3, 7)])
def test_awkward_sizes_fall_back(mnk):
    """Padding 17 to 32 would double the work: the heuristics take the normal path (no WMMA), same results."""
    m, n, k = mnk
    a, b = ints(m, k), ints(k, n)
    with Context(PYTHON_GPU=TC):
        got = (Tensor(a, device="PYTHON").cast(F16).float() @ Tensor(b, device="PYTHON").cast(F16).float()).numpy()
        assert wmmas(lowered("PYTHON")) == 0
    np.testing.assert_array_equal(got, a @ b)


def test_float32_matmul_takes_no_tensor_cores():
    a, b = rng.standard_normal((32, 32)).astype(np.float32), rng.standard_normal((32, 32)).astype(np.float32)
    with Context(PYTHON_GPU=TC):
        got = (Tensor(a, device="PYTHON") @ Tensor(b, device="PYTHON")).numpy()
        assert wmmas(lowered("PYTHON")) == 0
    np.testing.assert_allclose(got, a @ b, rtol=1e-5, atol=1e-5)


def matmul_kernel(m: int, n: int, k: int, dt=F16):
    """The kernel of a float16 matmul (float32 out) on the emulated GPU, its output axes GLOBAL, and its buffers."""
    x = Tensor(ints(m, k), device="PYTHON").cast(dt).realize()
    y = Tensor(ints(k, n), device="PYTHON").cast(dt).realize()
    out = x.cast(dtypes.float32) @ y.cast(dtypes.float32)
    (sched,) = rt.kernelize([out.uop], "PYTHON")
    (call,) = [u for u in sched.toposort() if u.op is Ops.CALL]
    bufs = [rt.buffer_of(b) for b in call.src[1:]]
    return to_global_axes(call.src[0]), bufs, (x.numpy().astype(np.float32) @ y.numpy().astype(np.float32))


def reduce_axis(ast) -> int:
    return next(i for i, r in enumerate(axes(ast)) if r.arg.axis_type is AxisType.REDUCE)


@pytest.mark.parametrize(
    "extra",
    [
        (),
        ((1, 2, AxisType.UPCAST), (0, 2, AxisType.LOCAL), (2, 2, AxisType.UNROLL)),
        ((0, 2, AxisType.UPCAST), (1, 4, AxisType.LOCAL)),
    ],
    ids=["tc", "upcast_local_unroll", "upcast_m_four_warps"],
)
def test_opts_after_tc(extra):
    """More WMMAs per warp (UPCAST), several warps a group (LOCAL: the lanes stay the innermost 32 work-items) and an
    UNROLLed reduce, on the emulator: exact."""
    with Context(PYTHON_GPU=TC):
        ast, bufs, want = matmul_kernel(64, 32, 64)
        tc = Opt(OptOps.TC, reduce_axis(ast), TCArg())
        target = gpu_target(TC)
        k = apply_opt(ast, tc, target)
        opts = [tc]
        ids = dict(enumerate(r.arg.id for r in axes(ast)))  # M, N, K: what TC kept of them has their ids
        for which, amount, kind in extra:
            rs = axes(k)
            axis = next(i for i, r in enumerate(rs) if r.arg.id == ids[which])
            opt = Opt(OptOps.SPLIT, axis, (amount, kind, False))
            k = apply_opt(k, opt, target)
            opts.append(opt)
        ck = rt.get_kernel("PYTHON", ast.replace(arg=KernelInfo(ast.arg.name, tuple(opts))))
        for buf in bufs:
            buf.ensure_allocated()
        ck.program(bufs, {})
        got = bufs[0].numpy().reshape(want.shape)
    np.testing.assert_array_equal(got, want)
    copies = math.prod(amount for _, amount, kind in extra if kind is not AxisType.LOCAL)  # UPCAST and UNROLL
    assert sum(u.op is Ops.WMMA for u in ck.lowered.linear.src) == copies


# ---------------------------------------------------------------- refusals


def test_refusals():
    with Context(PYTHON_GPU=TC):
        ast, _, _ = matmul_kernel(33, 16, 32)
        f32, _, _ = matmul_kernel(32, 16, 32, dt=dtypes.float32)
    target = gpu_target(TC)
    r = reduce_axis(ast)
    tc = Opt(OptOps.TC, r, TCArg())
    cases = [
        (lambda: apply_opt(ast, tc), "no tensor cores"),  # no target: a CPU's
        (lambda: apply_opt(ast, tc, gpu_target("1")), "no tensor cores"),
        (lambda: apply_opt(apply_opt(ast, Opt(OptOps.SPLIT, 0, (3, AxisType.LOCAL, False))), tc, target), "first"),
        (lambda: apply_opt(ast, Opt(OptOps.TC, r, TCArg(pad=False)), target), "not a multiple of 16"),
        (lambda: apply_opt(ast, Opt(OptOps.TC, 0, TCArg()), target), "TC applies to a REDUCE axis"),
        (lambda: apply_opt(f32, tc, target), "no tensor core of this device takes float32 -> float32"),
        (lambda: apply_opt(ast, Opt(OptOps.TC, r, (0, 0, 0)), target), "TC takes arg TCArg"),
    ]
    for fn, msg in cases:
        with pytest.raises(OptError, match=msg):
            fn()
    k = apply_opt(ast, tc, target)
    warp = next(i for i, x in enumerate(axes(k)) if x.arg.axis_type is AxisType.WARP)
    upcast = next(i for i, x in enumerate(axes(k)) if x.arg.axis_type is AxisType.UPCAST)
    with pytest.raises(OptError, match="tensor core's"):
        apply_opt(k, Opt(OptOps.PADTO, upcast, 4))
    with pytest.raises(OptError, match="tensor core's"):
        apply_opt(k, Opt(OptOps.SWAP, warp, 0))
    with pytest.raises(OptError, match="GROUP_REDUCE after TC"):
        apply_opt(k, Opt(OptOps.SPLIT, reduce_axis(k), (2, AxisType.GROUP_REDUCE, False)))


def test_elementwise_kernel_refuses_tc():
    with Context(PYTHON_GPU=TC):
        out = Tensor(ints(64), device="PYTHON").cast(F16) * 2
        (sched,) = rt.kernelize([out.uop], "PYTHON")
        (call,) = [u for u in sched.toposort() if u.op is Ops.CALL]
        with pytest.raises(OptError, match="REDUCE axis"):
            apply_opt(to_global_axes(call.src[0]), Opt(OptOps.TC, 0, TCArg()), gpu_target(TC))


def test_which_archs_have_tensor_cores():
    assert tensor_cores_for("sm_75") == () and tensor_cores_for("sm_70") == ()
    assert tensor_cores_for("sm_80") == tensor_cores_for("sm_90a") == CUDA_TENSOR_CORES
    assert gpu_target("1").tensor_cores == () and gpu_target(TC).tensor_cores == CUDA_TENSOR_CORES


# ---------------------------------------------------------------- NVRTC: CUBINs with mma.sync


@pytest.mark.skipif(NO_NVRTC is not None, reason=f"no NVRTC: {NO_NVRTC}")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("dt", [F16, BF16], ids=lambda d: d.name)
@pytest.mark.parametrize("mnk", [(256, 128, 96), (100, 72, 130)])
def test_tensor_core_kernels_compile_to_cubin(arch, dt, mnk):
    name = {"sm_80": "NULL:80", "sm_90": "NULL:90"}[arch]
    with Context(NULL_RENDERER=f"CUDA:{arch}"):
        Device[name]
    m, n, k = mnk
    x = Tensor.ones(m, k, dtype=dt, device=name).contiguous()
    y = Tensor.ones(k, n, dtype=dt, device=name).contiguous()
    (x @ y).realize()
    cks = [rt.get_kernel(name, ast) for ast in rt.stats.last_kernels]
    src = "\n".join(ck.source for ck in cks)
    t = "f16" if dt is F16 else "bf16"
    assert f"mma.sync.aligned.m16n8k16.row.col.f32.{t}.{t}.f32" in src, src
    assert all(nvrtc.cubin_sm(ck.program.binary) == int(arch[3:]) for ck in cks)


def test_tc_opt_round_trips_through_beam_json():
    from unigrad.runtime.beam import opt_from_json, opt_to_json

    for opt in (Opt(OptOps.TC, 2, TCArg()), Opt(OptOps.TC, 1, TCArg(1, False)), Opt(OptOps.TC, 0, None)):
        assert opt_from_json(opt_to_json(opt)) == opt
