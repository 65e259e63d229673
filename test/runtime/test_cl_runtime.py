"""The OpenCL runtime (runtime/ops_cl.py over runtime/support/opencl.py) with hand-written OpenCL C kernels: builds,
launches over work-groups (local memory and barriers), copies, the binary cache, and the errors of bad input.
Skipped, with the reason, where no OpenCL platform is found (CI installs PoCL)."""

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from unigrad.config import Context
from unigrad.dtype import dtypes
from unigrad.render.cstyle import KernelSignature
from unigrad.runtime import Buffer, CompileError, Device, Lowered
from unigrad.runtime.support import opencl as cl

NO_CL = cl.unavailable()
needs_cl = pytest.mark.skipif(NO_CL is not None, reason=f"no OpenCL platform: {NO_CL}")

ADD_SRC = """__kernel void add(__global float *out, __global const float *a, __global const float *b, long n) {
  size_t i = get_global_id(0);
  if (i < n) out[i] = a[i] + b[i];
}"""
ADD_SIG = KernelSignature("add", ((0, dtypes.float32), (1, dtypes.float32), (2, dtypes.float32)), ("n",))

# each work-group of 64 sums its 64 elements through __local memory: a tree of halvings, a barrier between steps
GROUP_SUM_SRC = """__kernel void group_sum(__global float *out, __global const float *a) {
  __local float part[64];
  size_t l = get_local_id(0);
  part[l] = a[get_global_id(0)];
  barrier(CLK_LOCAL_MEM_FENCE);
  for (size_t step = 32; step > 0; step >>= 1) {
    if (l < step) part[l] += part[l + step];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (l == 0) out[get_group_id(0)] = part[0];
}"""
GROUP_SUM_SIG = KernelSignature("group_sum", ((0, dtypes.float32), (1, dtypes.float32)), ())


def _filled(device: str, values: np.ndarray) -> Buffer:
    return Buffer(device, values.size, dtypes.float32).copyin(values.astype(np.float32))


def _info_with(info, **changes):  # a CLInfo with some fields changed (it is frozen)
    fields = {f: getattr(info, f) for f in type(info)._record_fields}
    return type(info)(**{**fields, **changes})


def test_missing_library_says_what_to_install():
    with pytest.raises(cl.OpenCLMissing, match="ocl-icd-libopencl1.*pocl-opencl-icd.*DEVICE=CPU"):
        cl.lib(("libNoSuchOpenCL.so.9",))


def test_no_driver_says_what_to_install(tmp_path):
    """Opening CL where the loader finds no driver (an empty vendors folder) names the packages and other devices."""
    env = {**os.environ, "OCL_ICD_VENDORS": str(tmp_path), "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    code = "from unigrad.runtime import Device\nDevice['CL']"
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0
    assert "OpenCLMissing" in proc.stderr and "pocl-opencl-icd" in proc.stderr and "DEVICE=CPU" in proc.stderr


@needs_cl
def test_cl_error_names_the_status():
    with pytest.raises(cl.CLError, match="launching k: CL_INVALID_WORK_GROUP_SIZE \\(-54\\)"):
        cl.check(-54, "launching k")


@needs_cl
@pytest.mark.parametrize("n", [0, 1, 7, 1001])
def test_vector_add(n):
    dev = Device["CL"]
    prog = dev.program("add", dev.compiler.compile(ADD_SRC), ADD_SIG, guarded=True)
    a, b = np.arange(n, dtype=np.float32), np.full(n, 0.5, np.float32)
    out = Buffer("CL", n, dtypes.float32).ensure_allocated()
    # the guarded kernel's global size is padded to a multiple of 64 on a device of uniform work-groups
    prog([out, _filled("CL", a), _filled("CL", b)], {"n": n}, global_size=(n,), local_size=(64,))
    np.testing.assert_array_equal(out.numpy(), a + b)


@needs_cl
def test_vector_add_driver_chooses_local_size_and_timing():
    dev = Device["CL"]
    prog = dev.program("add", dev.compiler.compile(ADD_SRC), ADD_SIG)
    a = np.random.default_rng(0).standard_normal(1000).astype(np.float32)
    out = Buffer("CL", 1000, dtypes.float32).ensure_allocated()
    seconds = prog([out, _filled("CL", a), _filled("CL", a)], {"n": 1000}, global_size=(1000,), wait=True)
    assert isinstance(seconds, float) and 0 < seconds < 10
    np.testing.assert_array_equal(out.numpy(), a + a)


@needs_cl
def test_group_sum_through_local_memory():
    dev = Device["CL"]
    prog = dev.program("group_sum", dev.compiler.compile(GROUP_SUM_SRC), GROUP_SUM_SIG)
    a = np.random.default_rng(1).integers(-50, 50, 64 * 5).astype(np.float32)  # integers: exact in any order
    out = Buffer("CL", 5, dtypes.float32).ensure_allocated()
    prog([out, _filled("CL", a)], {}, global_size=(64 * 5,), local_size=(64,))
    np.testing.assert_array_equal(out.numpy(), a.reshape(5, 64).sum(axis=1))


@needs_cl
@pytest.mark.parametrize(
    "dtype", [dtypes.float32, dtypes.float64, dtypes.int8, dtypes.uint8, dtypes.int16, dtypes.int32, dtypes.int64]
)
@pytest.mark.parametrize("n", [0, 1, 13])
def test_copy_in_out(dtype, n):
    if not Device["CL"].info.supports(dtype):
        pytest.skip(f"{dtype} not on this OpenCL device")
    values = (np.arange(n) * 3 - 7).astype(dtype.fmt)
    buf = Buffer("CL", n, dtype).copyin(values)
    out = buf.numpy()
    assert out.dtype == values.dtype
    np.testing.assert_array_equal(out, values)


@needs_cl
def test_copy_bool_and_bfloat16_bits():
    flags = np.array([True, False, True])
    np.testing.assert_array_equal(Buffer("CL", 3, dtypes.bool).copyin(flags).numpy(), flags)
    values = np.array([1.5, -2.0, 3.25], np.float32)
    np.testing.assert_array_equal(Buffer("CL", 3, dtypes.bfloat16).copyin(values.view(np.uint32) >> 16).numpy(), values)


@needs_cl
def test_copies_between_devices_and_within_one():
    values = np.arange(101, dtype=np.float32)
    src = _filled("CL:0", values)
    dst = Buffer("CL:1", 101, dtypes.float32).copy_from(src)
    assert Device["CL:0"].ctx is not Device["CL:1"].ctx  # two contexts (on PoCL: on its one device)
    np.testing.assert_array_equal(dst.numpy(), values)
    alloc = Device["CL:0"].allocator
    same = Buffer("CL:0", 101, dtypes.float32).ensure_allocated()
    alloc.transfer(same.handle, src.handle, 404)  # clEnqueueCopyBuffer: one context
    np.testing.assert_array_equal(same.numpy(), values)
    other = Buffer("CL:1", 101, dtypes.float32).ensure_allocated()
    alloc.transfer(other.handle, src.handle, 404)  # two contexts: through the host
    np.testing.assert_array_equal(other.numpy(), values)


@needs_cl
def test_binary_cache_hit_and_driver_version_miss(tmp_path):
    dev = Device["CL"]
    src = ADD_SRC + "\n// cache test\n"
    with Context(CACHEDIR=str(tmp_path), DISABLE_COMPILER_CACHE=0):
        comp = type(dev.compiler)(dev.ctx)
        first = comp.compile(src)
        assert comp.compiles == 1 and list((tmp_path / "cl").glob("*.bin"))
        assert comp.compile(src) == first and comp.compiles == 1  # from the disk cache
        fresh = type(dev.compiler)(dev.ctx)  # a new process's compiler: the same entry
        fresh.compile(src)
        assert fresh.compiles == 0
        fresh.info = _info_with(fresh.info, driver_version=fresh.info.driver_version + "-updated")
        assert fresh.key(src) != comp.key(src)
        fresh.compile(src)  # a driver update never reads the old binary
        assert fresh.compiles == 1


@needs_cl
def test_parallel_builds():
    dev = Device["CL"]
    srcs = [ADD_SRC.replace("a[i] + b[i]", f"a[i] + b[i] * {k}.0f") for k in range(3)]
    with Context(DISABLE_COMPILER_CACHE=1), ThreadPoolExecutor(3) as pool:
        binaries = list(pool.map(type(dev.compiler)(dev.ctx).compile, srcs))
    out = Buffer("CL", 4, dtypes.float32).ensure_allocated()
    a = np.arange(4, dtype=np.float32)
    for k, binary in enumerate(binaries):
        dev.program("add", binary, ADD_SIG)([out, _filled("CL", a), _filled("CL", a)], {"n": 4}, global_size=(4,))
        np.testing.assert_array_equal(out.numpy(), a + a * k)


@needs_cl
def test_build_error_quotes_log_and_line():
    src = "__kernel void bad(__global float *a) {\n  a[0] = undefined_thing;\n}"
    with Context(DISABLE_COMPILER_CACHE=1), pytest.raises(CompileError) as e:
        Device["CL"].compiler.compile(src)
    msg = str(e.value)
    assert "undefined_thing" in msg and "OpenCL build failed on CL" in msg
    assert "    2 |   a[0] = undefined_thing;" in msg  # the offending line, numbered
    assert "    1 | __kernel" not in msg  # only the lines the log names


@needs_cl
def test_unsupported_dtype_names_dtype_and_device():
    dev = Device["CL"]
    lacking = type(dev.allocator)(
        type(dev.ctx)("CL", dev.ctx.device_id, _info_with(dev.info, extensions=frozenset()), 0, 0)
    )
    for dtype, ext in ((dtypes.float16, "cl_khr_fp16"), (dtypes.float64, "cl_khr_fp64")):
        with pytest.raises(TypeError, match=f"{dtype}.*CL.*{ext}"):
            lacking.alloc(8, dtype, 2)
    if not dev.info.supports(dtypes.float16):  # this device itself (PoCL: no cl_khr_fp16)
        with pytest.raises(TypeError, match="float16 is not supported on device CL"):
            Buffer("CL", 4, dtypes.float16).ensure_allocated()


@needs_cl
def test_bad_launches_are_clear_errors():
    dev = Device["CL"]
    prog = dev.program("add", dev.compiler.compile(ADD_SRC), ADD_SIG)
    bufs = [Buffer("CL", 8, dtypes.float32).ensure_allocated() for _ in range(3)]
    too_big = dev.info.max_group * 2
    with pytest.raises(ValueError, match=f"work-group of {too_big}x1x1 = {too_big} work-items does not fit device CL"):
        prog(bufs, {"n": 8}, global_size=(too_big,), local_size=(too_big,))
    with pytest.raises(ValueError, match="three"):
        prog(bufs, {"n": 8}, global_size=(1, 1, 1, 1))
    if not dev.info.nonuniform:  # an unguarded kernel is not padded
        with pytest.raises(ValueError, match="not a multiple of the local size.*uniform work-groups"):
            prog(bufs, {"n": 8}, global_size=(7,), local_size=(4,))


@needs_cl
def test_info_and_target():
    from unigrad.runtime.ops_cl import probe_group_multiple

    dev = Device["CL"]
    info = dev.info
    assert info.max_group >= 1 and len(info.local_max) == 3 and info.local_bytes > 0 and info.group_multiple >= 1
    assert info.supports(dtypes.float64) == ("cl_khr_fp64" in info.extensions)
    assert probe_group_multiple(dev.ctx.device_id) >= 1
    target = dev.target
    for field in ("max_group", "local_bytes", "group_multiple", "nonuniform", "local_max"):
        if hasattr(target, field):  # the GPU fields of Target, where this version has them
            assert getattr(target, field) == getattr(info, field)


@needs_cl
def test_damaged_cached_binary_is_rebuilt(tmp_path):
    dev = Device["CL"]
    src = ADD_SRC + "\n// damaged cache entry\n"
    with Context(CACHEDIR=str(tmp_path), DISABLE_COMPILER_CACHE=0):
        (tmp_path / "cl").mkdir()
        (tmp_path / "cl" / f"{dev.compiler.key(src)}.bin").write_bytes(b"not a program binary")
        prog = dev.build(Lowered("add", b"", src, ADD_SIG))
    a = np.arange(5, dtype=np.float32)
    out = Buffer("CL", 5, dtypes.float32).ensure_allocated()
    prog([out, _filled("CL", a), _filled("CL", a)], {"n": 5}, global_size=(5,))
    np.testing.assert_array_equal(out.numpy(), a + a)
