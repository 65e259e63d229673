"""GPU code generation end to end: GLOBAL/LOCAL/GROUP_REDUCE axes, SPECIAL indices, LOCAL buffers and barriers, on the
OpenCL device (PoCL here, skipped where no OpenCL platform is found) and on the PYTHON device emulating a GPU
(PYTHON_GPU), which also catches missing barriers. Results are compared with numpy (and torch for gradients)."""

import contextlib

import numpy as np
import pytest
import torch

from unigrad import Context, Tensor, TinyJit, Variable
from unigrad.ir.args import AxisType, KernelInfo
from unigrad.ir.ops import Ops
from unigrad.ir.pattern import PatternMatcher, UPat, graph_rewrite
from unigrad.pipeline.optimize import Opt, OptError, OptOps, apply_opts, optimize, to_global_axes
from unigrad.runtime import Device
from unigrad.runtime import realize as rt
from unigrad.runtime.ops_python import LocalRaceError, gpu_target
from unigrad.runtime.support import opencl as cl

NO_CL = cl.unavailable()
needs_cl = pytest.mark.skipif(NO_CL is not None, reason=f"no OpenCL platform: {NO_CL}")
GPUS = [pytest.param("CL", marks=needs_cl), "PYTHON"]
rng = np.random.default_rng(31)
G, L, R = AxisType.GROUP_REDUCE, AxisType.LOCAL, AxisType.REDUCE


@contextlib.contextmanager
def on_gpu(device: str):
    """CL as it is; PYTHON as an emulated GPU (groups of up to 256 work-items)."""
    with Context(PYTHON_GPU="1" if device == "PYTHON" else ""):
        yield


def rand(*shape: int) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


def kernel_of(out: Tensor, device: str):
    (k,) = rt.kernelize([out.uop], device)
    calls = [u for u in k.toposort() if u.op is Ops.CALL]
    assert len(calls) == 1, f"expected one kernel, got {len(calls)}"
    return calls[0].src[0], [rt.buffer_of(b) for b in calls[0].src[1:]]


def run(ast, bufs, opts, device: str) -> np.ndarray:
    """The kernel with exactly `opts` (() : the unoptimized kernel) on device; its output."""
    if opts:
        ast = ast.replace(arg=KernelInfo(ast.arg.name, tuple(opts)))
    with Context(NOOPT=int(opts == ())):
        ck = rt.get_kernel(device, ast)
    for b in bufs:
        b.ensure_allocated()
    ck.program(bufs, {})
    return bufs[0].numpy().copy()


@pytest.mark.parametrize("device", GPUS)
@pytest.mark.parametrize("shape", [(0,), (1,), (7,), (1009,), (37, 45), (2, 3, 4, 5, 6)])
def test_elementwise_forward_and_backward(device, shape):
    a, b = rand(*shape), rand(*shape)
    with on_gpu(device):
        x, y = Tensor(a, device=device, requires_grad=True), Tensor(b, device=device, requires_grad=True)
        out = (x * y + x.exp()).relu()
        out.sum().backward()
        got, gx, gy = out.numpy(), x.grad.numpy(), y.grad.numpy()
    tx, ty = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    tout = (tx * ty + tx.exp()).relu()
    tout.sum().backward()
    np.testing.assert_allclose(got, tout.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gx, tx.grad.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gy, ty.grad.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("device", GPUS)
def test_non_contiguous_views_and_more_than_three_global_dims(device):
    a = rand(3, 4, 5, 6, 7)
    with on_gpu(device):
        t = Tensor(a, device=device)
        got = (t.permute(4, 2, 0, 3, 1)[:, 1:, :, ::2] * 2).contiguous().numpy()
        flipped = t.flip(0).sum(axis=(1, 3)).numpy()
    np.testing.assert_allclose(got, a.transpose(4, 2, 0, 3, 1)[:, 1:, :, ::2] * 2, rtol=1e-6)
    np.testing.assert_allclose(flipped, a[::-1].sum(axis=(1, 3)), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("device", GPUS)
@pytest.mark.parametrize("n", [1, 255, 256, 4096 + 7, 65536])
def test_reductions(device, n):
    a = rand(n)
    with on_gpu(device):
        t = Tensor(a, device=device)
        got = [t.sum().numpy(), t.max().numpy(), t.argmax().numpy(), t.mean().numpy()]
    want = [a.astype(np.float64).sum(), a.max(), a.argmax(), a.astype(np.float64).mean()]
    np.testing.assert_allclose(got[0], want[0], rtol=1e-4, atol=1e-4)
    assert got[1] == want[1] and got[2] == want[2]
    np.testing.assert_allclose(got[3], want[3], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("device", GPUS)
def test_softmax_matmul_conv_and_cumsum(device):
    x, w, img, k = rand(33, 64), rand(64, 24), rand(2, 3, 9, 8), rand(4, 3, 3, 3)
    with on_gpu(device):
        got_soft = Tensor(x, device=device).softmax(-1).numpy()
        got_mm = (Tensor(x, device=device) @ Tensor(w, device=device)).numpy()
        got_conv = Tensor(img, device=device).conv2d(Tensor(k, device=device), padding=1).numpy()
        got_cum = Tensor(x, device=device).cumsum(1).numpy()
    np.testing.assert_allclose(got_soft, torch.tensor(x).softmax(-1).numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_mm, x @ w, rtol=1e-4, atol=1e-4)
    want_conv = torch.nn.functional.conv2d(torch.tensor(img), torch.tensor(k), padding=1).numpy()
    np.testing.assert_allclose(got_conv, want_conv, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got_cum, np.cumsum(x, 1), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("device", GPUS)
def test_symbolic_sizes_resolve_at_each_launch(device):
    a = rand(40, 8)
    v = Variable("n", 1, 40)
    with on_gpu(device):
        t = Tensor(a, device=device)
        for n in (1, 7, 40):
            got = (t[: v.bind(n)] * 3).sum(1).numpy()
            np.testing.assert_allclose(got, (a[:n] * 3).sum(1), rtol=1e-5, atol=1e-5)


@needs_cl
def test_16m_sum_is_a_work_group_reduction_through_local_memory():
    """rangeify splits the sum in two kernels (256 partial sums, then their sum); each reduces across a work-group
    through LOCAL memory."""
    a = rng.standard_normal(1 << 24).astype(np.float32)
    t = Tensor(a, device="CL").realize()
    (k,) = rt.kernelize([t.sum().uop], "CL")
    calls = [u for u in k.toposort() if u.op is Ops.CALL]
    assert len(calls) == 2
    for call in calls:
        ast = call.src[0]
        assert G in [o.arg[1] for o in optimize(ast, Device["CL"].target).arg.opts]
        ck = rt.get_kernel("CL", ast)
        assert "__local float temp0[" in ck.source and "barrier(CLK_LOCAL_MEM_FENCE);" in ck.source, ck.source
        assert ck.lowered.sig.local_size[0] > 1
    np.testing.assert_allclose(t.sum().numpy(), a.astype(np.float64).sum(), rtol=1e-4)


@needs_cl
def test_matmul_takes_a_work_group_tile_with_upcast_outputs():
    a, b = rand(64, 48), rand(48, 32)
    x, y = Tensor(a, device="CL").realize(), Tensor(b, device="CL").realize()
    ast, _ = kernel_of(x @ y, "CL")
    opts = optimize(ast, Device["CL"].target).arg.opts
    kinds = [o.arg[1] for o in opts]
    assert kinds.count(L) == 2 and AxisType.UPCAST in kinds, opts
    np.testing.assert_allclose((x @ y).numpy(), a @ b, rtol=1e-4, atol=1e-4)


def _gpu_opts_cases():
    # (output, numpy reference, opts): each opt's result equals the unoptimized kernel's
    yield "local", lambda t: t * 2 + 1, lambda a: a * 2 + 1, (Opt(OptOps.SPLIT, 1, (8, L, False)),)
    yield "local_top", lambda t: t * 2 + 1, lambda a: a * 2 + 1, (Opt(OptOps.SPLIT, 0, (4, L, True)),)
    yield "group", lambda t: t.sum(1), lambda a: a.sum(1), (Opt(OptOps.SPLIT, 1, (16, G, False)),)
    yield "group_top", lambda t: t.sum(1), lambda a: a.sum(1), (Opt(OptOps.SPLIT, 1, (8, G, True)),)
    yield (
        "group_upcast",
        lambda t: t.max(1),
        lambda a: a.max(1),
        (Opt(OptOps.SPLIT, 1, (16, G, False)), Opt(OptOps.SPLIT, 0, (4, AxisType.UPCAST, False))),
    )
    yield (
        "local_group",
        lambda t: t.sum(1),
        lambda a: a.sum(1),
        (Opt(OptOps.SPLIT, 0, (4, L, False)),) + (Opt(OptOps.SPLIT, 1, (8, G, False)),),
    )


@pytest.mark.parametrize("device", GPUS)
@pytest.mark.parametrize("name,fn,ref,opts", list(_gpu_opts_cases()), ids=[c[0] for c in _gpu_opts_cases()])
def test_each_gpu_opt_equals_the_unoptimized_kernel(device, name, fn, ref, opts):
    a = rand(16, 64)
    with on_gpu(device):
        t = Tensor(a, device=device).realize()
        ast, bufs = kernel_of(fn(t), device)
        plain = run(ast, bufs, (), device)
        got = run(ast, bufs, opts, device)
    np.testing.assert_allclose(got, plain, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got, ref(a).reshape(-1), rtol=1e-5, atol=1e-5)


def test_opts_over_the_device_limits_are_refused():
    target = gpu_target("max_group=64,local_bytes=128")
    a = Tensor(rand(16, 256), device="CPU").realize()
    ast = to_global_axes(kernel_of(a.sum(1), "CPU")[0])
    with pytest.raises(OptError, match="work-group of 128 work-items is over this device's limit of 64"):
        apply_opts(ast, [Opt(OptOps.SPLIT, 1, (128, G, False))], target)
    with pytest.raises(OptError, match="LOCAL memory"):
        apply_opts(ast, [Opt(OptOps.SPLIT, 1, (64, G, False))], target)
    with pytest.raises(OptError, match="THREAD axes are CPU threads"):
        apply_opts(ast, [Opt(OptOps.SPLIT, 0, (2, AxisType.THREAD, True))], target)
    with pytest.raises(OptError, match="NOLOCALS was applied"):
        apply_opts(ast, [Opt(OptOps.NOLOCALS), Opt(OptOps.SPLIT, 1, (16, G, False))], target)


def _without_barriers(linear_sink):
    drop = PatternMatcher([(UPat(Ops.BARRIER, name="b"), lambda b: b.src[0] if len(b.src) == 1 else None)])
    return graph_rewrite(linear_sink, drop)


def test_emulator_catches_a_missing_barrier():
    """A group reduction with its BARRIER removed races on LOCAL memory: the emulator names the array, the element
    and the lanes; the same kernel with its barrier computes the sum."""
    a = rand(4, 64)
    with on_gpu("PYTHON"):
        t = Tensor(a, device="PYTHON").realize()
        ast, bufs = kernel_of(t.sum(1), "PYTHON")
        opts = (Opt(OptOps.SPLIT, 1, (16, G, False)),)
        np.testing.assert_allclose(run(ast, bufs, opts, "PYTHON"), a.sum(1), rtol=1e-5)
        sink = optimize(ast.replace(arg=KernelInfo(ast.arg.name, opts)), Device["PYTHON"].target)
        from unigrad.pipeline.gpudims import gpudims

        planted = _without_barriers(gpudims(sink))
        assert not any(u.op is Ops.BARRIER for u in planted.toposort())
        lowered = rt.lower("PYTHON", planted.replace(arg=KernelInfo(ast.arg.name, opts)))
        prog = Device["PYTHON"].build(lowered)
        for b in bufs:
            b.ensure_allocated()
        with pytest.raises(LocalRaceError, match=r"race on LOCAL temp0\[\d+\]: lane \d+ (loads|stores)"):
            prog(bufs, {})


@needs_cl
def test_debug_source_shows_local_buffers_and_barriers(capsys):
    t = Tensor(rand(1 << 12), device="CL").realize()
    with Context(DEBUG=4, DISABLE_COMPILER_CACHE=1):
        t.sum().numpy()
    out = capsys.readouterr().out
    assert "__local float temp0[" in out and "barrier(CLK_LOCAL_MEM_FENCE);" in out and "get_local_id(0)" in out


@needs_cl
def test_mixed_cpu_and_cl_graph():
    a = rand(17, 5)
    c = Tensor(a, device="CPU")
    g = (c.to("CL") * 2).exp()
    out = (g.to("CPU") + c).sum(0)
    np.testing.assert_allclose(out.numpy(), (np.exp(a * 2) + a).sum(0), rtol=1e-5, atol=1e-5)


@needs_cl
def test_data_parallel_on_two_cl_devices():
    a, w = rand(8, 6), rand(6, 3)
    x = Tensor(a).shard(("CL:0", "CL:1"), axis=0)
    y = x @ Tensor(w).shard(("CL:0", "CL:1"))
    np.testing.assert_allclose(y.numpy(), a @ w, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(x.sum().numpy(), a.sum(), rtol=1e-5, atol=1e-5)


@needs_cl
def test_tinyjit_captures_and_replays_on_cl():
    @TinyJit
    def step(x: Tensor, y: Tensor) -> Tensor:
        return (x * y).sum(0).realize()

    for _ in range(4):
        a, b = rand(9, 4), rand(9, 4)
        got = step(Tensor(a, device="CL"), Tensor(b, device="CL")).numpy()
        np.testing.assert_allclose(got, (a * b).sum(0), rtol=1e-5, atol=1e-5)


@needs_cl
def test_unsupported_dtype_on_cl_is_a_clear_error():
    info = Device["CL"].info
    if info.supports(Tensor([1.0]).half().dtype):
        pytest.skip("this OpenCL device has cl_khr_fp16")
    with pytest.raises((TypeError, NotImplementedError), match="float16.*CL"):
        Tensor(rand(4), device="CL").half().numpy()


@pytest.mark.parametrize("device", GPUS)
def test_beam_searches_work_group_splits(device, tmp_path):
    """BEAM on a GPU device tries LOCAL and GROUP_REDUCE splits (timed with device events on CL) and the kernel it
    picks computes the same result."""
    a = rand(8, 256)
    with on_gpu(device), Context(BEAM=2, CACHEDIR=str(tmp_path)):
        t = Tensor(a, device=device).realize()
        ast, _ = kernel_of(t.sum(1), device)
        from unigrad.pipeline.optimize import search

        kinds = {c.arg.opts[-1].arg[1] for c in search.candidates(ast, Device[device].target) if c.arg.opts}
        assert {L, G} <= kinds and AxisType.THREAD not in kinds
        got = t.sum(1).numpy()
    np.testing.assert_allclose(got, a.sum(1), rtol=1e-5, atol=1e-5)


def test_spec_verifies_gpu_kernels_after_every_stage():
    """SPEC=1 runs ir/spec.py after each stage: GPU kernels (SPECIAL, LOCAL arrays, BARRIER, IF/ENDIF) pass it."""
    x, w = rand(12, 300), rand(300, 8)
    with on_gpu("PYTHON"), Context(SPEC=1, DISABLE_COMPILER_CACHE=1):
        got = (Tensor(x, device="PYTHON").softmax(-1) @ Tensor(w, device="PYTHON")).sum(0).numpy()
    want = (torch.tensor(x).softmax(-1) @ torch.tensor(w)).sum(0).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_spec_refuses_a_barrier_inside_an_if_block():
    from unigrad.dtype import dtypes
    from unigrad.ir.spec import SpecError, verify_linear
    from unigrad.ir.uop import UOp

    gate = UOp.const(dtypes.bool, True)
    block = UOp(Ops.IF, (gate,), 0)
    barrier = UOp(Ops.BARRIER, (block,))
    linear = UOp(Ops.LINEAR, (gate, block, barrier, UOp(Ops.ENDIF, (block, barrier))))
    with pytest.raises(SpecError, match="BARRIER at position 2: inside an IF block"):
        verify_linear(linear)
    other = UOp(Ops.IF, (gate,), 1)
    with pytest.raises(SpecError, match="ENDIF at position 3: closes a scope that is not the innermost open one"):
        verify_linear(UOp(Ops.LINEAR, (gate, block, other, UOp(Ops.ENDIF, (block, gate)))))


def test_output_axes_over_a_dimension_limit_merge_into_dimension_0():
    """A device with few groups allowed in dimensions 1 and 2 (CUDA: 65535) gets every output axis in gidx0."""
    a = rand(6, 5, 7)

    def permuted(t: Tensor) -> Tensor:
        return (t.permute(2, 1, 0) * 2).contiguous()  # three output axes that do not merge (merge_axes.py)

    for knob, dims in (("max_group=4,global_max=3", 1), ("max_group=4", 3)):
        with Context(PYTHON_GPU=knob):
            t = Tensor(a, device="PYTHON").realize()
            ck = rt.get_kernel("PYTHON", kernel_of(permuted(t), "PYTHON")[0])
            assert len(ck.lowered.sig.global_size) == dims, ck.lowered.sig
            np.testing.assert_allclose(permuted(t).numpy(), a.transpose(2, 1, 0) * 2)


def test_group_reductions_share_one_local_array_with_barriers_between_uses():
    """Two group reductions of one dtype in one kernel (a row max and a row sum, each split over the group) share one
    LOCAL array: the second use stores after a barrier that follows the first use's reads; no barrier is added
    where no loop or earlier use needs one. UNROLLed partials index the array by work-item only."""
    a = rand(4, 512)
    opts = (Opt(OptOps.SPLIT, 1, (16, G, False)), Opt(OptOps.SPLIT, 2, (16, G, False)))
    with on_gpu("PYTHON"), Context(DISABLE_COMPILER_CACHE=1):
        t = Tensor(a, device="PYTHON").realize()
        ast, bufs = kernel_of(t.max(1) + t.sum(1), "PYTHON")
        got = run(ast, bufs, opts, "PYTHON")
        src = rt.get_kernel("PYTHON", ast.replace(arg=KernelInfo(ast.arg.name, opts))).source
        assert src.count("__local float temp") == 1 and src.count("barrier(") == 3, src
        unrolled = (Opt(OptOps.SPLIT, 1, (8, G, False)), Opt(OptOps.SPLIT, 1, (4, AxisType.UNROLL, False)))
        ast2, bufs2 = kernel_of(t.sum(1), "PYTHON")
        got2 = run(ast2, bufs2, unrolled, "PYTHON")
        src2 = rt.get_kernel("PYTHON", ast2.replace(arg=KernelInfo(ast2.arg.name, unrolled))).source
        assert "__local float temp0[8];" in src2 and src2.count("barrier(") == 1, src2
    np.testing.assert_allclose(got, a.max(1) + a.sum(1), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got2, a.sum(1), rtol=1e-5, atol=1e-5)


@needs_cl
def test_elementwise_takes_vector_lanes_and_a_work_group():
    """Each work-item loads and stores a whole float4 (OpenCL's own vector type: fma and select take it), groups of
    LOCAL work-items; an odd size keeps scalar lanes and agrees all the same."""
    for n, vector in ((4096, True), (4099, False)):
        a = rand(n)
        t = Tensor(a, device="CL").realize()
        ast, _ = kernel_of((t * 2 + 1).exp().relu(), "CL")
        ck = rt.get_kernel("CL", ast)
        assert ("*(__global float32_v4*)" in ck.source and "typedef float4 float32_v4;" in ck.source) is vector
        assert ck.lowered.sig.local_size[0] > 1
        got = (t * 2 + 1).exp().relu().numpy()
        np.testing.assert_allclose(got, np.maximum(np.exp(a * 2 + 1), 0), rtol=1e-6)
