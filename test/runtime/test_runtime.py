"""Devices, the compile cache, DEBUG output and kernelize/realize, on CPU and PYTHON."""

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from unigrad import Context, Device, Tensor, dtypes
from unigrad.ir.ops import Ops
from unigrad.runtime import realize as rt
from unigrad.runtime.ops_cpu import GCC_FLAGS, HUGE_PAGE, CCompiler

DEVICES = ["CPU", "PYTHON"]


def run_py(code: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, **env}, timeout=120
    )


def test_issue_example_prints_11_from_a_generated_kernel():
    code = "from unigrad import Tensor; print(Tensor([1,2]).dot(Tensor([3,4])).numpy())"
    plain = run_py(code)
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout.strip() == "11"
    dbg = run_py(code, DEBUG="4")
    assert dbg.returncode == 0, dbg.stderr
    assert "void r_2(" in dbg.stdout and "for (long long ridx0 = 0; ridx0 < 2ll; ridx0++)" in dbg.stdout
    assert dbg.stdout.strip().endswith("11")


def test_debug_levels():
    code = "from unigrad import Tensor; (Tensor([1.0,2.0,3.0]) * 2).sum().realize()"
    out1 = run_py(code, DEBUG="1").stdout
    assert "kernelize:" in out1 and "scheduled in" in out1 and "realize: 1 kernels for" in out1 and "us/op" in out1
    out2 = run_py(code, DEBUG="2").stdout
    assert "GFLOP/s" in out2 and "GB/s" in out2 and "r_3" in out2
    out3 = run_py(code, DEBUG="3").stdout
    assert "ranges r0:R3" in out3 and "opts ()" in out3
    out5 = run_py(code, DEBUG="5").stdout
    assert "REDUCE" in out5 and "SINK" in out5


def test_device_registry():
    assert Device.DEFAULT == "CPU"
    for name in DEVICES:
        dev = Device[name]
        assert dev.renderer is not None and dev.compiler is not None and dev.allocator is not None
    with pytest.raises(ValueError, match="unknown device 'TPU'"):
        Tensor([1], device="TPU")


def test_device_env_picks_default():
    r = run_py("from unigrad import Tensor; t = Tensor([1, 2]) + 1; print(t.device, t.tolist())", DEVICE="PYTHON")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "PYTHON [2, 3]"


@pytest.mark.parametrize("src,dst", [("CPU", "PYTHON"), ("PYTHON", "CPU")])
def test_to_device(src, dst):
    a = Tensor(np.arange(6, dtype=np.float32).reshape(2, 3), device=src)
    b = (a * 2).to(dst) + 1
    assert b.device == dst
    np.testing.assert_allclose(b.numpy(), np.arange(6).reshape(2, 3) * 2 + 1)


@pytest.mark.parametrize("src,dst", [("CPU", "PYTHON"), ("PYTHON", "CPU")])
def test_copies_of_different_sizes_in_one_realize(src, dst):
    # the memory plan may put a small copy's destination (or source) on a larger shared buffer: only the copy's
    # elements move
    rng = np.random.default_rng(0)
    for n, m in ((3, 1), (1, 3), (6, 0), (4, 4)):
        xa, xb = rng.standard_normal(n).astype(np.float32), rng.standard_normal((m, 1)).astype(np.float32)
        a = (Tensor(xa, device=src) * 2).to(dst).contiguous()
        b = (Tensor(xb, device=src) + 1).to(dst).contiguous()
        c = Tensor(xb, device=src).to(dst).contiguous()
        a.realize(b, c)
        np.testing.assert_allclose(a.numpy(), xa * 2, rtol=1e-6)
        np.testing.assert_allclose(b.numpy(), xb + 1, rtol=1e-6)
        np.testing.assert_allclose(c.numpy(), xb)


def test_compile_cache_on_disk(tmp_path):
    src = "void k(float* restrict data0) { data0[0] = 1.0f; }"
    with Context(CACHEDIR=str(tmp_path)):
        cc = CCompiler()
        p1 = cc.compile_to_path(src)
        os.utime(p1, ns=(0, 0))
        p2 = cc.compile_to_path(src)
        assert p1 == p2 and cc.compiles == 1  # second time is a cache hit ...
        assert p2.stat().st_mtime_ns > 0  # ... that marks the entry used (the least recently used are pruned)
        assert p1.parent == tmp_path / "cpu"
        assert cc.compile_to_path(src + "\n") != p1  # the key is the source (and flags)
    with Context(CACHEDIR=str(tmp_path)), pytest.raises(RuntimeError, match="failed to compile"):
        cc.compile_to_path("this is not C")


def test_compiler_choice_and_flags():
    """gcc by default (GCC_FLAGS: its pre-allocation scheduling keeps a register tile's operands in registers);
    another compiler (clang) gets the common flags only, as it rejects gcc's."""
    with Context(CC=""):
        cc = CCompiler()
    if shutil.which("gcc"):
        assert cc.cc == "gcc" and cc.flags[-len(GCC_FLAGS) :] == GCC_FLAGS
    with Context(CC="clang"):
        assert not set(GCC_FLAGS) & set(CCompiler().flags)


def test_a_missing_compiler_is_named_with_what_to_do(tmp_path):
    with Context(CC=str(tmp_path / "no-such-cc"), CACHEDIR=str(tmp_path)):
        with pytest.raises(RuntimeError, match=r"C compiler .*no-such-cc' not found .*install gcc or clang, or set CC"):
            CCompiler().compile_to_path("void k(void) {}")


def test_kernel_source_holds_only_the_helpers_it_calls():
    """A float32 kernel's C has no bitcast helper (no _Float16 at all: clang 14 rejects the type on x86 without
    AVX-512 FP16, and every kernel failed to compile with it); a bitcast kernel has exactly its own; both run."""
    x = Tensor(np.array([1.0, -2.5, 0.0], dtype=np.float32))
    np.testing.assert_array_equal((x * 2).numpy(), [2.0, -5.0, 0.0])
    (src,) = [rt.get_kernel("CPU", ast).source for ast in rt.stats.last_kernels]
    assert "bitcast_" not in src and "_Float16" not in src
    got = x.bitcast(dtypes.int32).numpy()
    np.testing.assert_array_equal(got, np.array([1.0, -2.5, 0.0], dtype=np.float32).view(np.int32))
    (src,) = [rt.get_kernel("CPU", ast).source for ast in rt.stats.last_kernels]
    assert "bitcast_float32_int32(" in src and src.count("static inline int bitcast_") == 1 and "_Float16" not in src


@pytest.mark.parametrize("device", DEVICES)
def test_kernelize_example(device):
    """notes-kernelize.md: a*b+c is one kernel; after out.kernelize(), out+2 loads out's buffer."""
    a, b, c = (Tensor([v], device=device).realize() for v in (1, 2, 3))
    out = a * b + c
    out.kernelize()
    assert any(u.op is Ops.CALL for u in out.uop.toposort())
    child = out + 2
    before = rt.stats.kernels
    child.realize()
    assert rt.stats.kernels - before == 2
    first, second = rt.stats.last_kernels
    assert any(u.op is Ops.MUL for u in first.toposort())
    assert not any(u.op is Ops.MUL for u in second.toposort())
    assert any(u.op is Ops.LOAD for u in second.toposort())
    assert out.item() == 5 and child.item() == 7
    before = rt.stats.kernels
    out.realize()
    assert rt.stats.kernels == before  # already run


@pytest.mark.parametrize("device", DEVICES)
def test_realize_one_kernel_for_mul_add(device):
    a, b, c = (Tensor([v], device=device).realize() for v in (1, 2, 3))
    before = rt.stats.kernels
    out = (a * b + c).realize()
    assert rt.stats.kernels - before == 1
    assert out.tolist() == [5]


def test_cpu_buffers_aligned_big_ones_on_huge_pages():
    """Every CPU buffer starts on a 64-byte vector; one of HUGE_PAGE bytes or more on a 2 MiB boundary (advised for
    huge pages); values round-trip through both and a kernel over both (sizes around the boundary)."""
    for n in (1, 17, HUGE_PAGE // 4 - 1, HUGE_PAGE // 4, HUGE_PAGE // 4 + 5, 3 * HUGE_PAGE // 4):
        x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
        t = Tensor(x).realize()
        out = (t * 2 + 1).realize()
        addr = rt.buffer_of(out.uop).ensure_allocated().handle[1]
        assert addr % (HUGE_PAGE if n * 4 >= HUGE_PAGE else 64) == 0, (n, addr)
        np.testing.assert_array_equal(t.numpy(), x)
        np.testing.assert_array_equal(out.numpy(), x * 2 + 1)


def test_schedule_cache_reuses_structure():
    def prog(x):
        return ((x + 1) * x).sum(0)

    x1, x2 = Tensor.ones(3, 4).realize(), Tensor.full((3, 4), 2.0).realize()
    np.testing.assert_allclose(prog(x1).numpy(), [6.0] * 4)
    keys = set(rt._schedule_cache)
    np.testing.assert_allclose(prog(x2).numpy(), [18.0] * 4)
    assert set(rt._schedule_cache) <= keys  # one schedule for both: same graph on other buffers


def test_realize_runs_the_cached_plan_on_buffers():
    """realize() on filled buffers follows the cached schedule's plan (kernels straight on buffers); on inputs
    still pending (kernelized, not run) it walks the CALL graph. Both give the same values, kernel by kernel."""
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((7, 5)).astype(np.float32), rng.standard_normal(5).astype(np.float32)

    def prog(a, b):  # several kernels (two reduces over one intermediate), outputs that are views
        h = (a * b).exp()
        return (h / h.sum(1, keepdim=True)).T, h.max(0)[1:4]

    ref0 = np.exp(x * w) / np.exp(x * w).sum(1, keepdims=True)
    for _ in range(2):  # the second call hits the schedule cache
        a, b = Tensor(x).realize(), Tensor(w).realize()
        before = rt.stats.kernels
        o0, o1 = prog(a, b)
        Tensor.realize(o0, o1)
        n_plan = rt.stats.kernels - before
        cs = rt._schedule_cache[next(reversed(rt._schedule_cache))]
        assert cs.steps is not None and len(cs.steps) == n_plan >= 2
        np.testing.assert_allclose(o0.numpy(), ref0.T, rtol=1e-5)
        np.testing.assert_allclose(o1.numpy(), np.exp(x * w).max(0)[1:4], rtol=1e-6)
    a, b = Tensor(x).kernelize(), Tensor(w).realize()  # a pending input: the general path runs its kernel too
    o0, o1 = prog(a * 1, b)
    Tensor.realize(o0, o1)
    np.testing.assert_allclose(o0.numpy(), ref0.T, rtol=1e-5)
    c = Tensor(x).realize()
    for k in range(1, 3):  # an assign into an input buffer runs every time (no fresh buffer, same kernel)
        c.assign(c + 1).realize()
        np.testing.assert_allclose(c.numpy(), x + k)


@pytest.mark.parametrize("device", DEVICES)
def test_bfloat16_and_half_roundtrip(device):
    x = np.array([1.0, -2.5, 3.140625, 0.0], dtype=np.float32)
    for dt in (dtypes.bfloat16, dtypes.float16):
        t = Tensor(x, device=device, dtype=dt)
        np.testing.assert_allclose((t * 2).float().numpy(), x * 2)


@pytest.mark.parametrize("device", DEVICES)
def test_unused_input_buffer_keeps_the_others_in_their_slots(device):
    """A size-0 input whose loads are simplified away is not a kernel parameter; the rest still line up."""
    a = Tensor(np.zeros((0, 3), np.float32), device=device)
    b = Tensor(np.arange(3, dtype=np.float32).reshape(1, 3), device=device)
    np.testing.assert_allclose((a.pad(((0, 1), (0, 0))) + b).numpy(), [[0.0, 1.0, 2.0]])


def test_a_new_schedule_builds_all_its_kernels_before_running(monkeypatch):
    """precompile: the kernels of a new schedule are lowered in turn and compiled in parallel when it is made,
    not one by one as they run; the results are the same."""
    built: list[str] = []
    orig = rt._build_kernel
    monkeypatch.setattr(rt, "_build_kernel", lambda key, dev, lw: built.append(lw.name) or orig(key, dev, lw))
    ran_before_build: list[int] = []
    orig_run = rt._run
    monkeypatch.setattr(
        rt, "_run", lambda ast, bufs, vv: ran_before_build.append(len(built)) or orig_run(ast, bufs, vv)
    )
    rng = np.random.default_rng(7)
    a, b, c = rng.standard_normal((37, 19)).astype(np.float32), rng.standard_normal(19).astype(np.float32), 0.25
    x = Tensor(a).realize()
    y = ((x + c).exp().sum(1).contiguous() * 3.0).softmax(0)  # a new structure: several kernels
    out = (y.reshape(37, 1) * Tensor(b).reshape(1, 19)).max(0).numpy()
    s = np.exp(a + c).sum(1) * 3.0
    ref = np.exp(s - s.max()) / np.exp(s - s.max()).sum()
    np.testing.assert_allclose(out, (ref[:, None] * b[None, :]).max(0), rtol=1e-4, atol=1e-6)
    assert len(built) >= 2 and ran_before_build and ran_before_build[0] == len(built)  # all built before the first ran


def test_debug_lines_report_kernels_ops_and_steps(capsys):
    """DEBUG=1: a line per realize (kernels, tensor ops, eager overhead per op) and one per optimizer step (totals)."""
    import re

    from unigrad.nn import optim

    w = Tensor(np.ones((4, 3), np.float32), requires_grad=True)
    opt = optim.SGD([w], lr=0.1)
    x = Tensor(np.arange(8, dtype=np.float32).reshape(2, 4))
    with Context(DEBUG=1), Tensor.train():
        rt.end_step()  # totals from before this test: printed and dropped
        capsys.readouterr()
        opt.zero_grad()
        loss = (x @ w).relu().sum()
        loss.backward()
        before = rt.stats.kernels
        opt.step()
        ran = rt.stats.kernels - before
    out = capsys.readouterr().out
    lines = re.findall(r"realize: (\d+) kernels for (\d+) ops: .* = ([\d.]+) us/op", out)
    steps = re.findall(r"step: (\d+) kernels in (\d+) realizes for (\d+) ops", out)
    assert lines and len(steps) == 1, out
    assert int(lines[-1][0]) == ran and int(lines[-1][1]) > 0
    assert int(steps[0][0]) == sum(int(k) for k, _, _ in lines) and int(steps[0][1]) == len(lines)
