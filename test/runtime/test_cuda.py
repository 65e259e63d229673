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
from unigrad.runtime import CompileError, Device
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
    return Tensor.ones(*shape, dtype=dtype, device=device).contiguous()


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
    assert (tmp_path / "cuda" / f"{c.key(src)}.cubin").read_bytes() == first
    assert nvrtc.cubin_sm(first) == 90


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
