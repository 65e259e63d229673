"""The CUDA device on a real GPU, in one run (issue 33): `python test/gpu/check_cuda.py [--only=info,ops,errors,tc,suite,bench]`.

Not part of the test suite (pytest collects test_*.py only) and it exits at once, saying why, where no GPU is.
Prepared for a machine with an NVIDIA H100/H200, PyTorch for CUDA and the NVRTC wheel, no internet, little GPU time
(a budget of about 8 minutes: each phase is capped, the op suite by a timeout):
  info    the GPU, its driver, NVRTC (version, path), the Target the optimizer gets, a cold NVRTC compile's time
  ops     each op on CUDA against the CPU device on the same inputs: elementwise ops of float32/float16/bfloat16/
          float64/int32 must be bit-identical (same decompositions, fma, no contraction, rounding per op);
          reductions, softmax, matmul and conv2d within a tolerance (another summation order); symbolic shapes
  errors  an out-of-memory allocation (bytes asked, bytes free), a block over the limit: clear errors, device usable
  tc      tensor cores (sm_80+): float16/bfloat16 matmuls, odd sizes (padded) and a convolution run with mma.sync
          (the kernel has a WMMA), bit for bit against numpy on small integers (exact sums: a lane layout that is
          wrong anywhere shows), within a tolerance against torch on normal data; matmul 4096 timed beside torch
  jit     TinyJit: a small MLP's Adam step replayed as one CUDA graph matches kernel-by-kernel replays; both timed
  suite   test/ops/test_ops.py on DEVICE=CUDA (pytest -k CUDA, capped at SUITE_S seconds): its closing line
  bench   medians beside torch.cuda in this process: elementwise chain, sum, softmax rows, matmul 4096 fp32/fp16/bf16,
          a scaled copy (the device's copy bandwidth), one tiny kernel's whole cost. A call is timed from building
          the graph to the kernels' end: Python's cost per call is in it (it dominates small kernels)
Output: one line per check (ok / FAIL), a table of bench ratios, then `JSON: {...}` with every number.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from unigrad import Tensor, Variable, dtypes  # noqa: E402
from unigrad.runtime import Device  # noqa: E402
from unigrad.runtime.support import cuda  # noqa: E402

SUITE_S = 240  # the op suite's cap
# the device checked: CUDA, or with --device=NAME another one (a dry run of this script itself, e.g. on CL or CPU)
DEV = next((a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--device=")), "CUDA")
RESULTS: dict[str, object] = {}
FAILED: list[str] = []


def report(name: str, ok: bool, note: str = "") -> None:
    print(f"{'ok  ' if ok else 'FAIL'} {name} {note}", flush=True)
    if not ok:
        FAILED.append(name)


def info() -> None:
    from unigrad.runtime.support import nvrtc

    dev = Device[DEV]
    if DEV != "CUDA":
        print(f"info: {DEV} is not CUDA, skipped")
        return
    i = dev.info  # type: ignore[attr-defined]
    nv = dev.compiler.nv  # type: ignore[attr-defined]
    print(f"GPU {i.name} {i.arch} ({i.sm_count} SMs, {i.total_bytes / 2**30:.1f} GiB), driver CUDA {i.driver}")
    print(f"NVRTC {nv.version} at {nv.path}; archs {nv.archs}")
    print(f"Target {dev.target}")
    src = 'extern "C" __global__ void probe(float *a) { a[threadIdx.x] += 1.0f; }'
    t0 = time.perf_counter()
    cubin = dev.compiler.build(src)  # type: ignore[attr-defined]
    RESULTS.update(
        gpu=i.name, arch=i.arch, driver=i.driver, nvrtc=nv.version, cold_compile_ms=(time.perf_counter() - t0) * 1e3
    )
    report("cubin for the GPU's arch", nvrtc.cubin_sm(cubin) == int(i.arch[3:].rstrip("af")))


rng = np.random.default_rng(0)


def data(shape: tuple[int, ...], dt: object) -> np.ndarray:
    x = rng.standard_normal(shape).astype(np.float32) * 3
    if dt is dtypes.int32:
        return (x * 10).astype(np.int32)
    return x.astype(np.float64) if dt is dtypes.float64 else x


def on(device: str, fn: Callable, arrays: list[np.ndarray], dt: object) -> np.ndarray:
    ts = [
        Tensor(a, device=device).cast(dt).contiguous() if a.dtype != np.int32 else Tensor(a, device=device)
        for a in arrays
    ]
    out = fn(*ts)
    return out.cast(dtypes.float32 if out.dtype in (dtypes.float16, dtypes.bfloat16) else out.dtype).numpy()


ELEMENTWISE: dict[str, Callable] = {
    "add_mul": lambda a, b: a * b + a,
    "div": lambda a, b: a / (b * b + 1),
    "exp": lambda a, b: (a * 0.3).exp(),
    "log": lambda a, b: a.abs().log(),
    "sin": lambda a, b: a.sin(),
    "sqrt": lambda a, b: a.abs().sqrt(),
    "sigmoid": lambda a, b: a.sigmoid(),
    "gelu": lambda a, b: a.gelu(),
    "where_max": lambda a, b: (a < b).where(a, b * 2).maximum(b),
    "floordiv": lambda a, b: a // 0.7,
}
REDUCE: dict[str, Callable] = {
    "sum": lambda a, b: a.sum(),
    "sum_rows": lambda a, b: a.reshape(64, -1).sum(1),
    "max": lambda a, b: a.max(),
    "mean_cols": lambda a, b: a.reshape(64, -1).mean(0),
    "softmax": lambda a, b: a.reshape(64, -1).softmax(-1),
    "cumsum": lambda a, b: a[:4096].cumsum(),
}


def ops() -> None:
    for dt in (dtypes.float32, dtypes.float16, dtypes.bfloat16, dtypes.float64):
        try:
            ops_of(dt)
        except Exception as e:  # one dtype's crash is reported, the others still run
            report(f"ops of {dt}", False, f"{type(e).__name__}: {e}")
    others()


def ops_of(dt: object) -> None:
    """Elementwise ops bit for bit, reductions within a tolerance, against the CPU device."""
    for name, fn in ELEMENTWISE.items():
        xs = [data((100003,), dt), data((100003,), dt)]
        got, want = on(DEV, fn, xs, dt), on("CPU", fn, xs, dt)
        same = np.array_equal(got.view(np.uint8), want.view(np.uint8)) or np.array_equal(got, want, equal_nan=True)
        bad = int(np.sum(got != want)) if got.shape == want.shape else -1
        report(f"bits {name} {dt}", same, "" if same else f"{bad} of {got.size} differ")
    for name, fn in REDUCE.items():
        xs = [data((1 << 16,), dt), data((1 << 16,), dt)]
        got, want = on(DEV, fn, xs, dt), on("CPU", fn, xs, dt)
        tol = {dtypes.float32: 1e-4, dtypes.float64: 1e-10}.get(dt, 2e-2)
        ok = np.allclose(got, want, rtol=tol, atol=tol * 10)
        report(f"reduce {name} {dt}", ok, "" if ok else f"max diff {np.max(np.abs(got - want))}")


def others() -> None:
    ints = [data((4099,), dtypes.int32), data((4099,), dtypes.int32)]
    for name, fn in {
        "idiv": lambda a, b: a // (b + 1000),
        "mod": lambda a, b: a % 7,
        "shift": lambda a, b: (a << 2) ^ b,
    }.items():
        report(f"int32 {name}", np.array_equal(on(DEV, fn, ints, dtypes.int32), on("CPU", fn, ints, dtypes.int32)))
    for dt, tol in ((dtypes.float32, 1e-3), (dtypes.float16, 3e-2), (dtypes.bfloat16, 1e-1)):
        for n, k, m in ((1, 1, 1), (17, 33, 65), (256, 256, 256), (512, 1024, 128)):
            xs = [data((n, k), dt) / 4, data((k, m), dt) / 4]
            try:
                got, want = on(DEV, lambda a, b: a @ b, xs, dt), xs[0] @ xs[1]
                report(f"matmul {n}x{k}x{m} {dt}", np.allclose(got, want, rtol=tol, atol=tol * np.sqrt(k)))
            except Exception as e:  # a dtype the device lacks: reported, the rest still run
                report(f"matmul {n}x{k}x{m} {dt}", False, f"{type(e).__name__}: {e}")
    xs = [data((2, 3, 17, 19), dtypes.float32), data((8, 3, 3, 3), dtypes.float32)]
    conv = on(DEV, lambda a, w: a.conv2d(w, padding=1), xs, dtypes.float32)
    report(
        "conv2d",
        np.allclose(conv, on("CPU", lambda a, w: a.conv2d(w, padding=1), xs, dtypes.float32), rtol=1e-4, atol=1e-4),
    )
    base = Tensor(np.arange(100, dtype=np.float32), device=DEV).realize()
    for n in (1, 37, 100):
        got = (base[: Variable("n", 1, 100).bind(n)] * 2).sum().numpy()
        report(f"symbolic n={n}", float(got) == float(np.arange(n).sum() * 2))


def errors() -> None:
    from unigrad.runtime import Buffer

    try:
        Buffer(DEV, 1 << 42, dtypes.float32).ensure_allocated()
        report("out of memory is an error", False)
    except MemoryError as e:
        report("out of memory is an error", "bytes free" in str(e), str(e))
    x = Tensor.ones(1000, device=DEV).contiguous().realize()
    report("device usable after", float((x * 2).sum().numpy()) == 2000.0)


def used_wmma() -> bool:
    """Whether the kernels of the last realize on DEV ran on tensor cores (a WMMA in one of them)."""
    from unigrad.ir.ops import Ops
    from unigrad.runtime import realize as rt

    kernels = [rt.get_kernel(DEV, ast).lowered for ast in rt.stats.last_kernels]
    return any(u.op is Ops.WMMA for k in kernels for u in k.linear.src)


def tensor_cores() -> None:
    import torch

    cores = Device[DEV].target.tensor_cores
    report("the target has tensor cores", bool(cores), f"{[(tc.name, tc.dtype_in.name) for tc in cores]}")
    if not cores:
        return
    for dt, tdt in ((dtypes.float16, torch.float16), (dtypes.bfloat16, torch.bfloat16)):
        sizes = ((16, 8, 16), (33, 20, 50), (256, 256, 256), (1000, 1000, 1000), (2048, 512, 1024))
        for m, n, k in sizes if DEV == "CUDA" else sizes[:2]:  # a dry run (the emulator: PYTHON_GPU=tc=1) small
            a, b = rng.integers(-2, 3, (m, k)).astype(np.float32), rng.integers(-2, 3, (k, n)).astype(np.float32)
            x, y = Tensor(a, device=DEV).cast(dt).realize(), Tensor(b, device=DEV).cast(dt).realize()
            got = (x.float() @ y.float()).numpy()
            note = "" if used_wmma() else "(no WMMA: the heuristics took the normal path)"
            bad = int(np.sum(got != a @ b))
            report(f"tc exact {m}x{n}x{k} {dt}", bad == 0 and note == "", f"{bad} differ {note}")
        a, b = data((64, 48), dtypes.float32) / 4, data((48, 32), dtypes.float32) / 4
        got = (Tensor(a, device=DEV).cast(dt) @ Tensor(b, device=DEV).cast(dt)).float().numpy()
        want = (torch.tensor(a).to(tdt).float() @ torch.tensor(b).to(tdt).float()).to(tdt).float().numpy()
        tol = 2.0**-9 if dt is dtypes.float16 else 2.0**-6
        ok = np.allclose(got, want, rtol=tol, atol=tol) and used_wmma()
        report(f"tc matmul vs torch {dt}", ok, f"max diff {np.max(np.abs(got - want)):.3g}")
    img, w = rng.integers(-1, 2, (2, 16, 10, 10)).astype(np.float32), rng.integers(-1, 2, (16, 16, 3, 3))
    got = Tensor(img, device=DEV).half().conv2d(Tensor(w.astype(np.float32), device=DEV).half()).float().numpy()
    want = torch.nn.functional.conv2d(torch.tensor(img), torch.tensor(w, dtype=torch.float32)).numpy()
    report("tc conv2d f16 exact", np.array_equal(got, want), "" if used_wmma() else "(no WMMA)")
    if not torch.cuda.is_available():
        return
    sync = _sync(Device[DEV])
    for dt, tdt in ((dtypes.float16, torch.float16), (dtypes.bfloat16, torch.bfloat16)):
        m = 4096
        x = Tensor(data((m, m), dtypes.float32), device=DEV).cast(dt).realize()
        tx = torch.randn(m, m, device="cuda", dtype=tdt)
        t, tt = median_s(lambda x=x: (x @ x).realize(), sync), median_s(lambda tx=tx: tx @ tx, torch.cuda.synchronize)
        wm = used_wmma()
        print(f"tc matmul{m} {dt}: {t * 1e3:.3f} ms ({2 * m**3 / t / 1e12:.1f} TFLOP/s), torch {tt * 1e3:.3f} ms")
        RESULTS[f"tc_matmul{m}_{tdt}_ms"], RESULTS[f"tc_matmul{m}_{tdt}_torch_ms"] = t * 1e3, tt * 1e3
        report(f"tc matmul{m} {dt} on tensor cores", wm, f"ratio to torch {t / tt:.2f} (target <= 2)")


def jit() -> None:
    """TinyJit on the GPU: an Adam step of a small MLP, replayed (as one CUDA graph on CUDA), gives eager's losses;
    its replay time with the graph and kernel by kernel (JIT_GRAPH=0)."""
    from bench.jit import make_step
    from unigrad import Context, TinyJit
    from unigrad.runtime.cuda_graph import CUDAGraph

    xs, ys = data((64, 64), dtypes.float32), rng.integers(0, 10, 64)

    def trainer(graph: int) -> tuple[Callable[[], Tensor], Callable[[], object]]:
        with Context(JIT_GRAPH=graph):
            x, y = Tensor(xs, device=DEV).realize(), Tensor(ys, device=DEV).realize()
            step = make_step(3, DEV)
            jitted = TinyJit(step)

        def run() -> Tensor:
            with Context(JIT_GRAPH=graph):  # read when the plan is made (the second call)
                return jitted(x, y)

        return run, (lambda: jitted.plan)  # type: ignore[attr-defined]

    eager_losses: list[float] = []
    graph_losses: list[float] = []
    for graph in (1, 0):
        run, plan = trainer(graph)
        losses = [float(run().numpy()) for _ in range(6)]
        if graph == 0:
            eager_losses = losses
            continue
        p = plan()
        on_graph = isinstance(getattr(p, "graph", None), CUDAGraph)
        report("TinyJit replays as a CUDA graph", on_graph or DEV != "CUDA", f"{type(getattr(p, 'graph', None))}")
        graph_losses = losses
    report("TinyJit graph replays match kernel-by-kernel replays", np.allclose(graph_losses, eager_losses, rtol=1e-5))
    sync = _sync(Device[DEV])
    for graph in (1, 0):
        run, _ = trainer(graph)
        for _ in range(3):
            run()
        t = median_s(run, sync, runs=20)
        RESULTS[f"jit_mlp_step_graph{graph}_ms"] = t * 1e3
        print(f"TinyJit MLP Adam step on {DEV}, JIT_GRAPH={graph}: {t * 1e3:.3f} ms")


def suite() -> None:
    cmd = [sys.executable, "-m", "pytest", "-q", "-x", "-k", DEV, "-p", "no:cacheprovider", "test/ops/test_ops.py"]
    try:
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=SUITE_S)
        tail = proc.stdout.strip().splitlines()[-15:]
        print("\n".join(tail))
        RESULTS["suite"] = tail[-1] if tail else ""
        report("op suite on CUDA", proc.returncode == 0)
    except subprocess.TimeoutExpired:
        report("op suite on CUDA", False, f"not done in {SUITE_S} s")


def _sync(dev: object) -> Callable[[], None]:
    return getattr(dev, "synchronize", lambda: None)


def median_s(fn: Callable[[], object], sync: Callable[[], None], runs: int = 10) -> float:
    fn()
    sync()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def bench() -> None:
    import torch

    dev = Device[DEV]
    sync = _sync(dev)
    has_torch = torch.cuda.is_available()  # without it (a dry run) torch's column is nan
    rows = []

    def case(name: str, ours: Callable, theirs: Callable | None, nbytes: int = 0, flops: int = 0) -> None:
        t = median_s(ours, sync)
        tt = median_s(theirs, torch.cuda.synchronize) if theirs is not None and has_torch else float("nan")
        rate = f"{nbytes / t / 1e9:8.1f} GB/s" if nbytes else f"{flops / t / 1e12:8.2f} TFLOP/s" if flops else ""
        rows.append(f"{name:<24} {t * 1e3:9.3f} ms  torch {tt * 1e3:9.3f} ms  ratio {t / tt:6.2f}  {rate}")
        print(rows[-1], flush=True)
        RESULTS[f"bench_{name}_ms"], RESULTS[f"bench_{name}_torch_ms"] = t * 1e3, tt * 1e3

    n = 1 << 24 if DEV == "CUDA" else 1 << 18  # a dry run elsewhere: small sizes
    a, b, c = (Tensor(data((n,), dtypes.float32), device=DEV).realize() for _ in range(3))
    ta, tb, tc = (torch.randn(n, device="cuda") for _ in range(3)) if has_torch else (None, None, None)
    case("scale", lambda: (a * 1.5).realize(), lambda: ta * 1.5, nbytes=8 * n)  # a copy's traffic
    case(
        "elementwise",
        lambda: ((a * b + c).relu() * 0.5 + a).realize(),
        lambda: (ta * tb + tc).relu() * 0.5 + ta,
        16 * n,
    )
    case("sum", lambda: a.sum().realize(), lambda: ta.sum(), nbytes=4 * n)
    rows_n = int(np.sqrt(n))
    s, ts = a.reshape(rows_n, rows_n), (ta.reshape(rows_n, rows_n) if has_torch else None)
    case("softmax", lambda: s.softmax(-1).realize(), lambda: ts.softmax(-1), nbytes=8 * n)
    for dt, tdt in ((dtypes.float32, "float32"), (dtypes.float16, "float16"), (dtypes.bfloat16, "bfloat16")):
        m = 4096 if DEV == "CUDA" else 256
        x = Tensor(data((m, m), dtypes.float32), device=DEV).cast(dt).realize()
        tx = torch.randn(m, m, device="cuda", dtype=getattr(torch, tdt)) if has_torch else None
        torch.backends.cuda.matmul.allow_tf32 = False
        case(f"matmul{m}_{tdt}", lambda x=x: (x @ x).realize(), lambda tx=tx: tx @ tx, flops=2 * m**3)
    tiny = Tensor.ones(4, device=DEV).contiguous().realize()
    case("launch", lambda: (tiny + 1).realize(), (lambda: torch.ones(4, device="cuda") + 1) if has_torch else None)
    print("---- bench (one call each: building the graph, realize, kernels; medians)\n" + "\n".join(rows))


PHASES = {
    "info": info,
    "ops": ops,
    "errors": errors,
    "tc": tensor_cores,
    "jit": jit,
    "suite": suite,
    "bench": bench,
}


def main() -> int:
    if DEV == "CUDA" and (why := cuda.unavailable()) is not None:
        print(f"no CUDA GPU here, nothing checked: {why}")
        return 0
    only = next((a.split("=", 1)[1].split(",") for a in sys.argv[1:] if a.startswith("--only=")), list(PHASES))
    for name in only:
        t0 = time.perf_counter()
        print(f"==== {name}", flush=True)
        try:
            PHASES[name]()
        except Exception as e:  # one phase's crash is reported, the others still run
            report(f"phase {name}", False, f"{type(e).__name__}: {e}")
        print(f"==== {name}: {time.perf_counter() - t0:.1f} s", flush=True)
    print(f"{len(FAILED)} failed: {FAILED}")
    print("JSON: " + json.dumps(RESULTS, default=str))
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
