"""CUDA without a GPU: the CUDA C++ dialect (render/cuda.py) and NVRTC (runtime/support/nvrtc.py) through the NULL
device, which lowers and compiles every kernel and runs none; NVRTC's errors, its cache keys, finding libnvrtc;
the driver's absence (runtime/support/cuda.py). The NVRTC tests skip, with the reason, where no libnvrtc is found
(the test extra installs the nvidia-cuda-nvrtc wheel). test/gpu/check_cuda.py runs kernels on a real GPU."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from unigrad import Context, Tensor, Variable, dtypes
from unigrad.runtime import CompileError, Device, disk_cache
from unigrad.runtime import realize as rt
from unigrad.runtime.support import cuda, nvrtc

NO_NVRTC = nvrtc.unavailable()
needs_nvrtc = pytest.mark.skipif(NO_NVRTC is not None, reason=f"no NVRTC: {NO_NVRTC}")
ROOT = Path(__file__).resolve().parents[2]


def null_device(spec: str) -> str:
    """A NULL device compiling for `spec` (NULL_RENDERER), opened once per spec under its own name."""
    name = {"CUDA:sm_80": "NULL:80", "CUDA:sm_90": "NULL:90", "C": "NULL:1"}[spec]
    with Context(NULL_RENDERER=spec):
        Device[name]
    return name


def realized(device: str, fn: Callable[[str], Tensor]) -> list:
    """Realize fn(device) and return the compiled kernels it ran (CompiledKernel: .source, .program.binary)."""
    fn(device).realize()
    return [rt.get_kernel(device, ast) for ast in rt.stats.last_kernels]


def ones(device: str, *shape: int, dtype=dtypes.float32) -> Tensor:
    """A realized buffer of ones: the kernels reading it load it (not a constant folded into them)."""
    return Tensor.ones(*shape, dtype=dtype, device=device).contiguous().realize()


# a representative set of kernels: (name, builder, what each kernel's source must hold somewhere)
CASES: list[tuple[str, Callable[[str], Tensor], tuple[str, ...]]] = [
    ("elementwise", lambda d: (ones(d, 1000) * 2 + 1).exp() + ones(d, 1000).sin(), ("blockIdx.x", "threadIdx.x")),
    ("group_reduce", lambda d: ones(d, 1 << 16).sum(), ("__shared__ float", "__syncthreads();", "__launch_bounds__(")),
    ("softmax", lambda d: ones(d, 8, 1000).softmax(-1), ("__syncthreads();",)),
    ("matmul", lambda d: ones(d, 128, 128) @ ones(d, 128, 128), ("fmaf(",)),
    (
        "f16",
        lambda d: (ones(d, 256, dtype=dtypes.float16) * 3).sqrt().cast(dtypes.float32),
        ("unsigned short*", "f32_to_f16("),
    ),
    ("bf16", lambda d: ones(d, 256).cast(dtypes.bfloat16).exp().cast(dtypes.float16), ("f32_to_bf16(", "f16_to_f32(")),
    ("f64_to_f16", lambda d: ones(d, 64, dtype=dtypes.float64).cast(dtypes.float16), ("f64_to_f16(",)),
    ("bitcast", lambda d: ones(d, 64, dtype=dtypes.float16).bitcast(dtypes.int16) + 1, ("bits<short>",)),
    ("int_div", lambda d: ones(d, 64, dtype=dtypes.int32) // (ones(d, 64, dtype=dtypes.int32) - 3), ("fl_idiv(",)),
    ("fp8", lambda d: ones(d, 64).cast(dtypes.fp8e4m3).cast(dtypes.float32), ("f32_to_fp8e4m3(",)),
    ("symbolic", lambda d: (ones(d, 100)[: Variable("n", 1, 100).bind(37)] * 2).sum(), ("long long n",)),
    ("conv2d", lambda d: ones(d, 2, 3, 16, 16).conv2d(ones(d, 8, 3, 3, 3)), ()),
]


@needs_nvrtc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("name,build,needles", CASES, ids=[c[0] for c in CASES])
def test_kernels_compile_to_cubin(arch: str, name: str, build: Callable, needles: tuple[str, ...]) -> None:
    """Each kernel is CUDA C++ that NVRTC compiles to a CUBIN for that architecture (never PTX)."""
    device = null_device(f"CUDA:{arch}")
    cks = realized(device, build)
    assert cks, "the realize ran no kernel"
    for ck in cks:
        assert ck.source.count('extern "C" __global__ void ') == 1
        assert nvrtc.cubin_sm(ck.program.binary) == int(arch[3:])
    text = "\n".join(ck.source for ck in cks)
    for needle in needles:
        assert needle in text, f"{needle!r} not in the kernels of {name}:\n{text}"


@needs_nvrtc
def test_sixteen_bit_ops_round_at_once() -> None:
    """float16 is computed in float and every rounding op rounds to float16 there: the CPU's _Float16 results."""
    ck = realized(null_device("CUDA:sm_90"), lambda d: ones(d, 64, dtype=dtypes.float16) * 3 + 1)[-1]
    assert "f16_to_f32(f32_to_f16(" in ck.source and "unsigned short* __restrict__ data0" in ck.source


@needs_nvrtc
def test_launch_bounds_is_the_block() -> None:
    cks = realized(null_device("CUDA:sm_90"), lambda d: ones(d, 1 << 16).sum())
    for ck in cks:
        block = ck.lowered.sig.local_size
        if block and all(isinstance(b, int) for b in block):
            assert f"__launch_bounds__({int(np.prod(block))})" in ck.source


@needs_nvrtc
def test_null_program_resolves_symbolic_launch() -> None:
    """A NULL launch checks the kernel's Variables are given (nothing runs)."""
    ck = realized(null_device("CUDA:sm_90"), lambda d: (ones(d, 100)[: Variable("m", 1, 100).bind(5)] * 2).sum())[-1]
    assert ck.lowered.sig.variables == ("m",)
    ck.program([], {"m": 5})
    with pytest.raises(ValueError, match="no value for the Variables"):
        ck.program([], {})


def test_null_copies_out_zeros_and_compiles_c() -> None:
    device = null_device("C")
    t = Tensor(np.arange(10, dtype=np.float32), device=device)
    cks = realized(device, lambda d: t * 2 + 1)
    assert "void " in cks[0].source and "__global__" not in cks[0].source
    assert (t * 2).numpy().tolist() == [0.0] * 10


def test_null_renderer_spec_refused() -> None:
    from unigrad.runtime import ops_null

    with pytest.raises(ValueError, match="NULL_RENDERER: expected C, CL, CUDA or CUDA:sm_XX"):
        ops_null._parts("METAL")


# ---------------------------------------------------------------- the compiler: errors, cache, finding NVRTC


def compiler(arch: str = "sm_90"):
    from unigrad.runtime.ops_cuda import CUDACompiler

    return CUDACompiler(nvrtc.load(), arch)


BAD_SRC = """extern "C" __global__ void k(float *a) {
  a[0] = 1.0f;
  a[1] = not_declared + 2.0f;
}"""


@needs_nvrtc
def test_compile_error_quotes_log_and_line() -> None:
    with Context(DISABLE_COMPILER_CACHE=1), pytest.raises(CompileError) as e:
        compiler().compile(BAD_SRC)
    msg = str(e.value)
    assert "NVRTC failed to compile a kernel for sm_90" in msg
    assert 'identifier "not_declared" is undefined' in msg
    assert "    3 |   a[1] = not_declared + 2.0f;" in msg  # the line the log names, numbered
    assert "    2 |" not in msg  # and only that one


@needs_nvrtc
def test_cache_key_has_source_arch_and_nvrtc_version() -> None:
    c80, c90 = compiler("sm_80"), compiler("sm_90")
    src = 'extern "C" __global__ void k(float *a) { a[0] = 1.0f; }'
    assert c90.key(src) == compiler("sm_90").key(src)
    assert c90.key(src) != c80.key(src)
    assert c90.key(src) != c90.key(src + "\n")
    older = compiler("sm_90")
    older.nv = type("Older", (), {"version": (c90.nv.version[0], c90.nv.version[1] - 1)})()
    assert older.key(src) != c90.key(src)  # a toolkit update never finds the old CUBIN


@needs_nvrtc
def test_disk_cache_hit(tmp_path: Path) -> None:
    src = 'extern "C" __global__ void k(float *a) { a[0] = 2.0f; }'
    c = compiler()
    with Context(CACHEDIR=str(tmp_path), DISABLE_COMPILER_CACHE=0):
        first = c.compile(src)
        again = compiler().compile(src)
    assert c.compiles == 1 and first == again
    entry = tmp_path / "cuda" / f"{c.key(src)}.cubin"
    assert disk_cache.unseal(c.key(src), entry.read_bytes()) == first  # the CUBIN, then its seal
    assert nvrtc.cubin_sm(first) == 90
    entry.write_bytes(entry.read_bytes()[:-100])  # truncated: caught by its seal, compiled again
    with Context(CACHEDIR=str(tmp_path), DISABLE_COMPILER_CACHE=0), pytest.warns(RuntimeWarning, match="damaged"):
        fresh = compiler()
        assert fresh.compile(src) == first and fresh.compiles == 1


@needs_nvrtc
def test_arch_nvrtc_cannot_target() -> None:
    with pytest.raises(ValueError, match="cannot compile for sm_30: it targets .*sm_90.*Set CUDA_ARCH"):
        compiler("sm_30")


@needs_nvrtc
def test_nvrtc_path_knob_comes_first(tmp_path: Path) -> None:
    found = nvrtc.load().path
    (tmp_path / "libnvrtc.so.99").write_bytes(b"not a library")
    with Context(NVRTC_PATH=str(tmp_path)):
        assert nvrtc.find()[0] == str(tmp_path / "libnvrtc.so.99")
        assert nvrtc.load().path == found  # the knob's file does not load: the next one is used
    with Context(NVRTC_PATH=found):
        assert nvrtc.find()[0] == found


@needs_nvrtc
def test_nvrtc_newer_than_driver_refused() -> None:
    """A driver of CUDA 1 could load none of the found NVRTCs' CUBINs: say what to install."""
    with pytest.raises(nvrtc.NvrtcMissing, match=r"for CUDA 1 or older.*pip install nvidia-cuda-nvrtc"):
        nvrtc.load(max_major=1)


# ---------------------------------------------------------------- no driver


def test_missing_driver_library_says_what_to_use() -> None:
    with pytest.raises(cuda.CudaMissing, match=r"libNoSuchCuda\.so\.9.*no NVIDIA driver.*DEVICE=CPU.*DEVICE=NULL"):
        cuda.lib(("libNoSuchCuda.so.9",))


@pytest.mark.skipif(cuda.unavailable() is None, reason="this machine has a CUDA GPU")
def test_open_without_driver_fails_clearly() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    code = "from unigrad import Tensor\nTensor([1.0], device='CUDA').realize()"
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert "CudaMissing" in proc.stderr and "DEVICE=CPU" in proc.stderr, proc.stderr[-2000:]


# ---------------------------------------------------------------- the driver layer over a fake libcuda

# The driver API functions runtime/support/cuda.py binds, as a host library: memory is malloc'd (device pointers are
# host addresses), copies are memcpy, a launch records its grid, block and first three parameters. It checks the
# ctypes layer (argument types and order, staging in chunks, launch sizes, error names) where no GPU is.
FAKE_DRIVER = r"""
#include <stdlib.h>
#include <string.h>
typedef unsigned long long u64;
unsigned last_launch[6]; u64 last_params[3]; int launches;
int cuInit(unsigned f) { return 0; }
int cuDriverGetVersion(int *v) { *v = 13000; return 0; }
int cuGetErrorName(int e, const char **s) { *s = e == 2 ? "CUDA_ERROR_OUT_OF_MEMORY" : "CUDA_ERROR_INVALID_IMAGE"; return 0; }
int cuDeviceGetCount(int *n) { *n = 1; return 0; }
int cuDeviceGet(int *d, int i) { *d = i; return 0; }
int cuDeviceGetName(char *s, int n, int d) { strncpy(s, "Fake GPU", n); return 0; }
int cuDeviceGetAttribute(int *v, int a, int d) {
  static const int attrs[][2] = {{1, 1024}, {2, 1024}, {3, 1024}, {4, 64}, {5, 2147483647}, {6, 65535}, {7, 65535},
                                 {8, 49152}, {10, 32}, {16, 132}, {75, 9}, {76, 0}};
  *v = 0;
  for (int i = 0; i < 12; i++) if (attrs[i][0] == a) *v = attrs[i][1];
  return 0;
}
int cuDeviceTotalMem_v2(size_t *b, int d) { *b = 1ull << 36; return 0; }
int cuDeviceCanAccessPeer(int *c, int a, int b) { *c = 0; return 0; }
int cuDevicePrimaryCtxRetain(void **c, int d) { *c = (void *)0x1234; return 0; }
int cuCtxSetCurrent(void *c) { return 0; }
int cuCtxSynchronize(void) { return 0; }
int cuCtxEnablePeerAccess(void *c, unsigned f) { return 0; }
int cuMemGetInfo_v2(size_t *f, size_t *t) { *f = 1ull << 30; *t = 1ull << 36; return 0; }
int cuMemAlloc_v2(u64 *p, size_t n) { if (n > (1ull << 40)) return 2; *p = (u64)malloc(n); return 0; }
int cuMemFree_v2(u64 p) { free((void *)p); return 0; }
int cuMemHostAlloc(void **p, size_t n, unsigned f) { *p = malloc(n); return 0; }
int cuMemFreeHost(void *p) { free(p); return 0; }
int cuMemcpyHtoDAsync_v2(u64 d, const void *s, size_t n, void *st) { memcpy((void *)d, s, n); return 0; }
int cuMemcpyDtoHAsync_v2(void *d, u64 s, size_t n, void *st) { memcpy(d, (void *)s, n); return 0; }
int cuMemcpyDtoDAsync_v2(u64 d, u64 s, size_t n, void *st) { memcpy((void *)d, (void *)s, n); return 0; }
int cuMemcpyPeerAsync(u64 d, void *dc, u64 s, void *sc, size_t n, void *st) { memcpy((void *)d, (void *)s, n); return 0; }
int cuModuleLoadData(void **m, const void *img) { if (memcmp(img, "\x7f" "ELF", 4)) return 200; *m = (void *)0x10; return 0; }
int cuModuleGetFunction(void **f, void *m, const char *name) { *f = (void *)0x20; return 0; }
int cuModuleUnload(void *m) { return 0; }
int cuFuncGetAttribute(int *v, int a, void *f) { *v = a == 0 ? 512 : 0; return 0; }
int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned sh,
                   void *st, void **params, void **extra) {
  unsigned dims[6] = {gx, gy, gz, bx, by, bz};
  memcpy(last_launch, dims, sizeof dims);
  for (int i = 0; i < 3; i++) last_params[i] = *(u64 *)params[i];
  launches++;
  return 0;
}
int cuStreamCreate(void **s, unsigned f) { *s = (void *)0x30; return 0; }
int cuStreamSynchronize(void *s) { return 0; }
int cuStreamWaitEvent(void *s, void *e, unsigned f) { return 0; }
int cuStreamDestroy_v2(void *s) { return 0; }
int cuEventCreate(void **e, unsigned f) { *e = (void *)0x40; return 0; }
int cuEventRecord(void *e, void *s) { return 0; }
int cuEventSynchronize(void *e) { return 0; }
int cuEventElapsedTime_v2(float *ms, void *a, void *b) { *ms = 0.5f; return 0; }
int cuEventDestroy_v2(void *e) { return 0; }
typedef struct { void *func; unsigned grid[3], block[3], shared; void **params; void **extra; void *kern, *ctx; } KP;
int graph_nodes, graph_launches, node_updates, node_deps[64]; unsigned node_dims[64][6]; u64 node_params[64][3];
static void record_node(int i, const KP *p) {  /* the test's kernels take three arguments */
  memcpy(node_dims[i], p->grid, sizeof node_dims[i]);
  for (int k = 0; k < 3; k++) node_params[i][k] = *(u64 *)p->params[k];
}
int cuGraphCreate(void **g, unsigned f) { *g = (void *)0x50; graph_nodes = 0; return 0; }
int cuGraphAddKernelNode_v2(void **node, void *g, void **deps, size_t n, const KP *p) {
  int i = graph_nodes++;
  if (n != (i > 0) || (n && deps[0] != (void *)(long)i)) return 1;  /* each node after the one before */
  node_deps[i] = (int)n; record_node(i, p); *node = (void *)(long)(i + 1);
  return 0;
}
int cuGraphInstantiateWithFlags(void **e, void *g, u64 f) { *e = (void *)0x60; return 0; }
int cuGraphExecKernelNodeSetParams_v2(void *e, void *node, const KP *p) { record_node((int)(long)node - 1, p); node_updates++; return 0; }
int cuGraphLaunch(void *e, void *s) { graph_launches++; return 0; }
int cuGraphExecDestroy(void *e) { return 0; }
int cuGraphDestroy(void *g) { return 0; }
"""


@pytest.fixture
def fake_gpu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The CUDA device opened over FAKE_DRIVER (an sm_90 'Fake GPU'); yields (device, the fake library)."""
    import shutil
    import threading

    from unigrad.runtime import ops_cuda

    src, so = tmp_path / "fake_cuda.c", tmp_path / "libfakecuda.so"
    src.write_text(FAKE_DRIVER)
    cc = shutil.which("gcc") or shutil.which("cc") or "cc"
    subprocess.run([cc, "-shared", "-fPIC", "-O1", "-o", str(so), str(src)], check=True)
    fake = cuda.lib.__wrapped__((str(so),))
    monkeypatch.setattr(cuda, "lib", lambda names=cuda.LIBRARIES: fake)
    monkeypatch.setattr(ops_cuda, "_infos", {})
    monkeypatch.setattr(ops_cuda, "_current", threading.local())
    monkeypatch.setattr(ops_cuda, "STAGING_BYTES", 1 << 16)  # copies of a few chunks
    cuda.init.cache_clear()
    try:
        yield ops_cuda.open_device("CUDA:3"), fake
    finally:
        cuda.init.cache_clear()


@needs_nvrtc
def test_fake_driver_device_info_and_target(fake_gpu) -> None:
    dev, _ = fake_gpu
    assert dev.info.name == "Fake GPU" and dev.info.arch == "sm_90" and dev.info.driver == (13, 0)
    t = dev.target
    assert (t.gpu, t.max_group, t.local_max, t.global_max, t.local_bytes, t.group_multiple) == (
        True,
        1024,
        (1024, 1024, 64),
        (2**31 - 1, 65535, 65535),
        49152,
        32,
    )


@needs_nvrtc
@pytest.mark.parametrize("n", [0, 1, 1 << 14, (1 << 16) + 3, 5 << 16])
def test_fake_driver_copies_round_trip_through_staging(fake_gpu, n: int) -> None:
    dev, _ = fake_gpu
    x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    buf = dev.allocator.alloc(x.nbytes, dtypes.float32, n)
    dev.allocator.copyin(buf, x)
    assert np.array_equal(dev.allocator.copyout(buf, dtypes.float32, n), x)
    other = dev.allocator.alloc(x.nbytes, dtypes.float32, n)
    dev.allocator.transfer(other, buf, x.nbytes)
    assert np.array_equal(dev.allocator.copyout(other, dtypes.float32, n), x)
    dev.allocator.free(buf, x.nbytes)


@needs_nvrtc
def test_fake_driver_out_of_memory_says_asked_and_free(fake_gpu) -> None:
    dev, _ = fake_gpu
    with pytest.raises(
        MemoryError, match=r"CUDA:3 \(Fake GPU\) is out of memory: 4398046511104 bytes .* 1073741824 of"
    ):
        dev.allocator.alloc(1 << 42, dtypes.float32, 1 << 40)


@needs_nvrtc
def test_fake_driver_launch_sizes_and_arguments(fake_gpu) -> None:
    import ctypes

    from unigrad.render.cstyle import KernelSignature

    dev, fake = fake_gpu
    sig = KernelSignature("k", ((0, dtypes.float32), (1, dtypes.float32)), ("n",), 0, (40, 2), (128, 2))
    program = dev.program("k", dev.compiler.compile('extern "C" __global__ void k(float *a) {}'), sig)
    bufs = [type("B", (), {"handle": dev.allocator.alloc(64, dtypes.float32, 16)})() for _ in range(2)]
    assert program(bufs, {"n": -5}, wait=True) == pytest.approx(5e-4)  # the events' 0.5 ms
    assert list((ctypes.c_uint * 6).in_dll(fake, "last_launch")) == [40, 2, 1, 128, 2, 1]
    params = list((ctypes.c_uint64 * 3).in_dll(fake, "last_params"))
    assert params == [bufs[0].handle.ptr, bufs[1].handle.ptr, (-5) & (2**64 - 1)]
    with pytest.raises(ValueError, match=r"a block of 1024x1x1 = 1024 threads does not fit .* at most 512 threads"):
        program(bufs, {"n": 1}, block=(1024, 1, 1))  # the fake kernel's own limit is 512
    with pytest.raises(
        ValueError, match=r"a grid of 1x70000x1 blocks is over CUDA:3's limit of 2147483647x65535x65535"
    ):
        program(bufs, {"n": 1}, grid=(1, 70000, 1))
    with pytest.raises(CompileError, match=r"refused the CUBIN of k: CUDA_ERROR_INVALID_IMAGE \(200\)"):
        dev.program("k", b"not a cubin", sig)


@needs_nvrtc
def test_fake_driver_jit_plan_replays_as_one_cuda_graph(fake_gpu) -> None:
    """A TinyJit plan of kernels on one GPU runs as one CUDA graph: built on the first call (a node per kernel, each
    after the one before), then each call updates only the nodes whose arguments changed and launches once."""
    import ctypes

    from unigrad.render.cstyle import KernelSignature
    from unigrad.runtime.cuda_graph import CUDAGraph
    from unigrad.runtime.jit import JitPlan

    dev, fake = fake_gpu
    sig = KernelSignature("k", ((0, dtypes.float32), (1, dtypes.float32)), ("n",), 0, (40, 2), (128, 2))
    fixed_sig = KernelSignature(
        "f", ((0, dtypes.float32), (1, dtypes.float32), (2, dtypes.float32)), (), 0, (8,), (32,)
    )
    cubin = dev.compiler.compile('extern "C" __global__ void k(float *a) {}')
    k, f = dev.program("k", cubin, sig), dev.program("f", cubin, fixed_sig)

    def buf():
        return type("B", (), {"handle": dev.allocator.alloc(64, dtypes.float32, 16)})()

    a, b, c, x, y = (buf() for _ in range(5))
    # input slot 0 read by the first and last kernels; the middle one reads and writes fixed buffers only
    steps = [(k, [a, None], [(1, 0)]), (f, [b, a, c], []), (k, [c, None], [(1, 0)])]
    plan = JitPlan(steps, {"n": 3}, [], 3, 0, 0)
    assert isinstance(plan.graph, CUDAGraph)
    count = {name: ctypes.c_int.in_dll(fake, name) for name in ("graph_nodes", "graph_launches", "node_updates")}
    nodes = (ctypes.c_uint64 * 3 * 64).in_dll(fake, "node_params")
    plan.run([x], {})
    assert (count["graph_nodes"].value, count["graph_launches"].value, count["node_updates"].value) == (3, 1, 0)
    assert list(nodes[0]) == [a.handle.ptr, x.handle.ptr, 3] and list(nodes[2]) == [c.handle.ptr, x.handle.ptr, 3]
    assert list(nodes[1]) == [b.handle.ptr, a.handle.ptr, c.handle.ptr]
    plan.run([x], {})  # nothing changed: launched as it is
    assert (count["graph_launches"].value, count["node_updates"].value) == (2, 0)
    plan.run([y], {})  # a new input buffer: the two nodes reading it
    assert (count["graph_launches"].value, count["node_updates"].value) == (3, 2)
    assert nodes[0][1] == nodes[2][1] == y.handle.ptr
    plan.run([y], {"n": 7})  # a Variable's value: the nodes of the kernel taking it
    assert count["node_updates"].value == 4 and nodes[0][2] == nodes[2][2] == 7
    assert count["graph_nodes"].value == 3  # built once
    with Context(JIT_GRAPH=0):
        assert JitPlan(steps, {"n": 3}, [], 3, 0, 0).graph is None
    assert CUDAGraph.of([(None, [a, b], [])]) is None  # a copy between devices: kernel by kernel
