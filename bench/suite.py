"""The benchmark suite (issue 5): unigrad against numpy and PyTorch on the same workloads, in one process.

Workloads (sizes in FULL below; `--quick` uses QUICK for CI smoke runs: arrays 16x smaller, fewer runs):

  1. elementwise   (a * b + c).relu() * 0.5 + a on 16M float32: 5 ops over 3 inputs
  2. sum           a.sum() of 16M float32; and of two such arrays in turn (each call reads from memory)
  3. softmax       row softmax of 4096x4096 float32 (numpy: exp(x - max) / sum)
  4. matmul        a @ b, float32, n = 512, 1024, 2048
  5. conv2d        batch 32, 32 -> 64 channels, 3x3, 32x32 input, padding 1: forward, and forward + backward
                   (the loss `(out * r).sum()` with r a fixed random tensor, and both gradients); numpy: forward only
                   (sliding windows + tensordot)
  6. MLP step      one Adam training step of a 64 -> 128 -> 10 MLP on scikit-learn's digits, batch 64, eager and
                   under TinyJit (its losses must equal the eager step's exactly) (the
                   batch is not shrunk by --quick); numpy n/a. The eager step runs 12 kernels (issue 34 asks at most
                   12), each a kernel of its own because: x W1 (kept for the ReLU's mask) with h = relu(x W1 + b1) in
                   one, read by two matmuls; the logits h W2; the row max and the row sum of exp, each a reduction
                   read back per element; the loss with the count of labels kept (ignore_index), the step counter and
                   the labels' range check (four full reductions of few values: one kernel); the gradient of the
                   logits, read by three matmuls; dh = dlogits W2 under the mask; dx, the batch's .grad, which
                   tinygrad's backward gives every unmarked leaf and which is computed before the weights it reads
                   are written; and per parameter one kernel summing its gradient over the batch and updating m, v
                   and the weight from it (4: kernels of different loop bounds do not merge)
  7. overhead      build and realize a fresh 200-op elementwise graph on 4-element tensors (bench.micro's chain)
                   with warm schedule and program caches: unigrad's Python cost per graph; numpy and torch run
                   the same chain eagerly
  8. startup       a fresh `python -c` printing a first small result, unigrad with a cold compile cache (CACHEDIR
                   a new empty directory) and with a warm one; numpy and torch print the same in their own terms
                   (unigrad's Python bytecode is compiled first, as a package install does)

What is timed: one call from building the graph to filled output buffers. A unigrad call builds the lazy graph and
`.realize()`s it; the CPU device runs its kernels synchronously inside realize, so the kernels are inside the timed
region, and the "kernels/run" note counts the kernels that ran (0 would mean nothing was computed). Reading a result
back (`.numpy()`) is outside it. numpy and torch (CPU, eager, torch.set_num_threads(2)) compute the same values.
Inputs are realized buffers made from numpy before timing. Every case is warmed up once (unigrad compiles, or loads
its disk cache) and its warm-up result is checked against numpy or torch (a FAIL line is printed, nothing raised);
then it runs up to `max_runs` more times, fewer when one run is slow (about `budget_s` per case at the first timed
run's speed: the unigrad matmul at 2048 and the convolutions run once or twice), and the median is reported. Each
case starts after a short pause (SETTLE_S), so the previous library's spinning worker threads have gone to sleep.

The memory-bound cases (1, 2) also time hand-written C doing the same traffic (bench.machine) right after unigrad:
this VM's memory bandwidth moves by up to 2x from minute to minute, and the note "hand-written C now X GB/s
(unigrad Y%)" says how close unigrad is to what the machine gave at that moment (JSON: *_machine_*).

Output: a table of medians (ms), unigrad / peer ratios (> 1: unigrad is slower) and derived throughput: GB/s of
minimum traffic (the bytes of the inputs and the output, each moved once), GFLOP/s (2 n^3 for a matmul, 2 MACs per
output element for a convolution, 3x that with its backward) or samples/s; then one line `JSON: {...}`.

  python -m bench suite [--quick] [--only=elementwise,sum]     # or: python -m bench.suite, python bench/run.py
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "2")  # read when numpy loads OpenBLAS: no effect if numpy is loaded

import argparse
import gc
import itertools
import json
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import torch
import torch.nn.functional as F
from numpy.lib.stride_tricks import sliding_window_view

from bench import machine
from bench.micro import N_OPS, chain, chain_consts, inputs, tensors
from unigrad import Tensor, TinyJit, config, nn
from unigrad.nn import optim
from unigrad.runtime import Device
from unigrad.runtime import realize as rt

R = TypeVar("R")
REPO = Path(__file__).resolve().parent.parent
TORCH_THREADS = 2
SEED = 0
CHAIN_REPS = 100  # numpy / torch chains per timed run in (7): one is ~0.1 ms
# A pause before each case, so the previous library's worker threads (OpenBLAS and OpenMP spin-wait after a call) are
# idle: on two cores a spinning thread can stall the next library's two threads by whole 4 ms scheduler ticks.
SETTLE_S = 0.25
BUSY_LOADAVG = 0.5  # a 1-minute load average above this at the start gets a warning: the machine is not idle


@dataclass(frozen=True)
class Sizes:
    """Every size and repetition count of one run of the suite."""

    elementwise_n: int
    sum_n: int
    softmax_shape: tuple[int, int]
    matmul_ns: tuple[int, ...]
    conv_batch: int
    conv_cin: int
    conv_cout: int
    conv_hw: int  # input height and width
    conv_k: int  # kernel height and width; padding k // 2 keeps the output size
    mlp_hidden: int
    mlp_batch: int
    max_runs: int  # timed runs per case after the warm-up
    budget_s: float  # fewer runs when one is slow: runs = budget_s / (warm-up time), at least 1
    startup_runs: int


FULL = Sizes(
    elementwise_n=1 << 24,
    sum_n=1 << 24,
    softmax_shape=(4096, 4096),
    matmul_ns=(512, 1024, 2048),
    conv_batch=32,
    conv_cin=32,
    conv_cout=64,
    conv_hw=32,
    conv_k=3,
    mlp_hidden=128,
    mlp_batch=64,
    max_runs=9,
    budget_s=3.0,
    startup_runs=5,
)
QUICK = Sizes(
    elementwise_n=1 << 20,
    sum_n=1 << 20,
    softmax_shape=(1024, 1024),
    matmul_ns=(128, 256, 512),
    conv_batch=2,
    conv_cin=32,
    conv_cout=64,
    conv_hw=32,
    conv_k=3,
    mlp_hidden=128,
    mlp_batch=64,
    max_runs=3,
    budget_s=0.3,
    startup_runs=2,
)

UNIT_SCALE = {"GB/s": 1e9, "GFLOP/s": 1e9, "samples/s": 1.0}


# ---------------------------------------------------------------- timing and checking


@dataclass(frozen=True)
class Timing:
    median_s: float
    runs: int
    warmup_s: float  # the first call (for unigrad: with compilation or a disk-cache load)
    min_s: float  # the fastest run: in the JSON, for a noisy machine
    kernels_per_run: float | None = None  # unigrad kernels run per timed call (in-process cases only)


def _synchronized(run: Callable[[], R]) -> Callable[[], R]:
    """run, waiting for the default device's queue when it runs kernels asynchronously (CL): a timed call ends when
    its kernels have run, not when they are queued."""
    sync = getattr(Device[str(config.DEVICE.value)], "synchronize", None)
    if sync is None or config.DEVICE.value == "CPU":
        return run

    def synced() -> R:
        out = run()
        sync()
        return out

    return synced


def measure(run: Callable[[], R], s: Sizes) -> tuple[Timing, R]:
    """Warm up with one call (its result is returned, for checking), then time up to s.max_runs calls: as many
    as fit in s.budget_s at the first timed call's speed, at least one."""
    timing, _, first = measure_beside(run, None, s)
    return timing, first


def measure_unigrad(run: Callable[[], R], s: Sizes) -> tuple[Timing | None, R | None, str]:
    """measure(), but an exception is printed and returned as text (the peers of the case still run)."""
    try:
        timing, first = measure(run, s)
    except Exception as e:
        traceback.print_exc()
        return None, None, f"{type(e).__name__}: {e}"
    return timing, first, ""


def measure_beside(
    run: Callable[[], R], reference: Callable[[], None] | None, s: Sizes
) -> tuple[Timing, Timing | None, R]:
    """measure() for run and a reference (if any) taking turns call by call, so both see the same machine (its
    memory bandwidth drifts within seconds): (run's timing, the reference's, run's first result)."""
    time.sleep(SETTLE_S)
    run = _synchronized(run)
    t0 = time.perf_counter()
    first = run()
    warm = time.perf_counter() - t0
    fns = (run,) if reference is None else (run, reference)
    if reference is not None:
        reference()
    kernels0 = rt.stats.kernels  # the reference runs no unigrad kernels
    times: list[list[float]] = [[] for _ in fns]
    runs = 1
    # One full collection before the timed calls, not one before each: a full collection walks every tracked
    # object and leaves the CPU caches full of them, so the call after it starts cold (a 200-op graph read 0.95 ms
    # after one with a million objects in the heap, 0.55 ms without). A training loop runs between the collections
    # the interpreter makes itself; those that land in a timed call count, as they do in a program.
    gc.collect()
    while len(times[0]) < runs:
        for fn, ts in zip(fns, times):
            t0 = time.perf_counter()
            out = fn()
            ts.append(time.perf_counter() - t0)
            del out  # freeing the result is not part of the call
        if len(times[0]) == 1:
            runs = max(1, min(s.max_runs, int(s.budget_s / sum(ts[0] for ts in times))))
    kernels = (rt.stats.kernels - kernels0) / runs
    ug = Timing(statistics.median(times[0]), runs, warm, min(times[0]), kernels)
    ref = Timing(statistics.median(times[1]), runs, warm, min(times[1])) if reference is not None else None
    return ug, ref, first


def per_call(t: Timing, reps: int) -> Timing:
    """A timing of runs that each made `reps` calls, as the time of one call."""
    return Timing(t.median_s / reps, t.runs, t.warmup_s / reps, t.min_s / reps, t.kernels_per_run)


def check(name: str, got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> bool:
    """np.allclose(got, want), printing a FAIL line with the worst error when they differ."""
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    if got.shape != want.shape:
        print(f"FAIL {name}: unigrad shape {got.shape}, reference {want.shape}")
        return False
    if np.allclose(got, want, rtol=rtol, atol=atol):
        return True
    err = np.abs(got - want)
    flat = int(np.argmax(np.where(np.isnan(err), np.inf, err)))  # a NaN counts as the worst
    worst = tuple(int(i) for i in np.unravel_index(flat, err.shape))
    print(f"FAIL {name}: max |unigrad - reference| {err[worst]:.3g} at {worst}: {got[worst]} vs {want[worst]}")
    return False


def rng(salt: int = 0) -> np.random.Generator:
    return np.random.default_rng(SEED + salt)


# ---------------------------------------------------------------- results


@dataclass
class Row:
    """One case: the three timings, the work of one call (for throughput) and unigrad's check."""

    key: str  # prefix of its JSON keys
    name: str
    unigrad: Timing | None
    numpy: Timing | None = None
    torch: Timing | None = None
    work: float = 0.0  # bytes, flops or samples per call; 0: no throughput column
    unit: str = ""  # a key of UNIT_SCALE
    ok: bool | None = None  # unigrad's result matched the reference; None: not checked
    error: str = ""  # unigrad raised this
    notes: list[str] = field(default_factory=list)
    machine: Timing | None = None  # hand-written C doing the same traffic (bench.machine), memory-bound cases

    def throughput(self, t: Timing | None) -> float | None:
        return self.work / t.median_s / UNIT_SCALE[self.unit] if t is not None and self.work else None

    def ratio(self, peer: Timing | None) -> float | None:
        return self.unigrad.median_s / peer.median_s if self.unigrad is not None and peer is not None else None


# ---------------------------------------------------------------- (1) - (3) memory-bound ops


def bench_elementwise(s: Sizes) -> list[Row]:
    n = s.elementwise_n
    a, b, c = (rng(k).standard_normal(n, dtype=np.float32) for k in range(3))
    ua, ub, uc = (Tensor(x).realize() for x in (a, b, c))
    ta, tb, tc = (torch.from_numpy(x) for x in (a, b, c))
    run_c, out_c = machine.stream(a, b, c)
    ug, c_t, out = measure_beside(lambda: ((ua * ub + uc).relu() * 0.5 + ua).realize(), run_c, s)
    np_t, ref = measure(lambda: np.maximum(a * b + c, 0) * 0.5 + a, s)
    th_t, _ = measure(lambda: (ta * tb + tc).relu() * 0.5 + ta, s)
    ok = check("elementwise", out.numpy(), ref, rtol=1e-6, atol=1e-6)
    check("elementwise hand-written C", out_c(), ref, rtol=1e-6, atol=1e-6)
    name = f"elementwise 5 ops, {n / 2**20:g}M f32"
    return [Row("elementwise", name, ug, np_t, th_t, machine=c_t, work=4 * 4 * n, unit="GB/s", ok=ok)]


def bench_sum(s: Sizes) -> list[Row]:
    n = s.sum_n
    a = rng().random(n, dtype=np.float32)  # positive: the float64 sum is a sharp reference
    ua, ta = Tensor(a).realize(), torch.from_numpy(a)
    run_c, partials = machine.read_sum(a)
    ug, c_t, out = measure_beside(lambda: ua.sum().realize(), run_c, s)
    np_t, _ = measure(lambda: a.sum(), s)
    th_t, _ = measure(lambda: ta.sum(), s)
    ok = check("sum", out.numpy(), a.sum(dtype=np.float64), rtol=1e-5, atol=0)
    check("sum hand-written C", partials().sum(dtype=np.float64), a.sum(dtype=np.float64), rtol=1e-5, atol=0)
    name = f"sum, {n / 2**20:g}M f32"
    rows = [Row("sum", name, ug, np_t, th_t, machine=c_t, work=4 * n, unit="GB/s", ok=ok)]
    # The same array summed again and again is partly in the L3 cache from the call before (64 MiB against 32):
    # a read that leaves its lines there (torch's) gains from it, one that streams past the caches (ours: the
    # non-temporal prefetch) does not. Two arrays in turn read from memory on every call, as a program's sum of a
    # fresh big tensor does.
    b = a[::-1].copy()
    ug_turn = itertools.cycle((ua, Tensor(b).realize()))
    np_turn, th_turn = itertools.cycle((a, b)), itertools.cycle((ta, torch.from_numpy(b)))
    ug2, out2, _ = measure_unigrad(lambda: next(ug_turn).sum().realize(), s)
    ok2 = check("sum in turn", out2.numpy(), a.sum(dtype=np.float64), rtol=1e-5, atol=0) if out2 is not None else None
    np2, _ = measure(lambda: next(np_turn).sum(), s)
    th2, _ = measure(lambda: next(th_turn).sum(), s)
    rows.append(Row("sum_memory", name + ", two arrays in turn", ug2, np2, th2, work=4 * n, unit="GB/s", ok=ok2))
    return rows


def softmax_numpy(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def bench_softmax(s: Sizes) -> list[Row]:
    rows, cols = s.softmax_shape
    x = rng().standard_normal((rows, cols), dtype=np.float32)
    ux, tx = Tensor(x).realize(), torch.from_numpy(x)
    ug, out, err = measure_unigrad(lambda: ux.softmax(-1).realize(), s)
    np_t, ref = measure(lambda: softmax_numpy(x), s)
    th_t, _ = measure(lambda: tx.softmax(-1), s)
    ok = check("softmax", out.numpy(), ref, rtol=1e-4, atol=1e-7) if out is not None else None
    name = f"softmax(-1), {rows}x{cols} f32"
    return [Row("softmax", name, ug, np_t, th_t, work=2 * 4 * rows * cols, unit="GB/s", ok=ok, error=err)]


# ---------------------------------------------------------------- (4) - (5) compute-bound ops


def bench_matmul(s: Sizes) -> list[Row]:
    rows = []
    for n in s.matmul_ns:
        a, b = (rng(k).standard_normal((n, n), dtype=np.float32) for k in range(2))
        ua, ub = Tensor(a).realize(), Tensor(b).realize()
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
        ug, out, err = measure_unigrad(lambda: (ua @ ub).realize(), s)
        np_t, ref = measure(lambda: a @ b, s)
        th_t, _ = measure(lambda: ta @ tb, s)
        # entries are sums of n products of N(0, 1) values: the rounding error grows with n
        ok = check(f"matmul {n}", out.numpy(), ref, rtol=1e-4, atol=1e-5 * n) if out is not None else None
        rows.append(Row(f"matmul_{n}", f"matmul {n}x{n} f32", ug, np_t, th_t, 2 * n**3, "GFLOP/s", ok, err))
    return rows


def conv2d_numpy(x: np.ndarray, w: np.ndarray, pad: int) -> np.ndarray:
    """Cross-correlation as torch's conv2d: every (kh, kw) window, contracted with w over (C_in, kh, kw)."""
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    windows = sliding_window_view(xp, w.shape[2:], axis=(2, 3))  # (N, C_in, H, W, kh, kw)
    out = np.tensordot(windows, w, axes=([1, 4, 5], [1, 2, 3]))  # (N, H, W, C_out)
    return np.ascontiguousarray(out.transpose(0, 3, 1, 2))


def bench_conv(s: Sizes) -> list[Row]:
    bs, cin, cout, hw, k = s.conv_batch, s.conv_cin, s.conv_cout, s.conv_hw, s.conv_k
    pad = k // 2
    x = rng(0).standard_normal((bs, cin, hw, hw), dtype=np.float32)
    w = rng(1).standard_normal((cout, cin, k, k), dtype=np.float32) / np.float32(np.sqrt(cin * k * k))
    flops = 2 * bs * cout * hw * hw * cin * k * k
    name = f"conv2d {bs}x{cin}x{hw}x{hw} -> {cout}, {k}x{k}"

    ux, uw = Tensor(x).realize(), Tensor(w).realize()
    tx, tw = torch.from_numpy(x), torch.from_numpy(w)
    ug, out, err = measure_unigrad(lambda: ux.conv2d(uw, padding=pad).realize(), s)
    np_t, _ = measure(lambda: conv2d_numpy(x, w, pad), s)
    th_t, ref = measure(lambda: F.conv2d(tx, tw, padding=pad), s)
    ok = check("conv2d forward", out.numpy(), ref.numpy(), rtol=1e-4, atol=1e-4) if out is not None else None
    forward = Row("conv2d_fwd", f"{name} fwd", ug, np_t, th_t, flops, "GFLOP/s", ok, err)

    # the loss weights the output by a fixed random tensor: its gradient is a real tensor, not the constant 1 of a
    # plain .sum() (which would let the weight gradient skip reading it)
    r = rng(2).standard_normal((bs, cout, hw, hw), dtype=np.float32)
    gx, gw, ur = Tensor(x, requires_grad=True).realize(), Tensor(w, requires_grad=True).realize(), Tensor(r).realize()
    tr = torch.from_numpy(r)

    def unigrad_step() -> tuple[Tensor, Tensor, Tensor]:
        gx.grad = None
        gw.grad = None
        loss = (gx.conv2d(gw, padding=pad) * ur).sum()
        loss.backward()
        assert gx.grad is not None and gw.grad is not None
        Tensor.realize(loss, gx.grad, gw.grad)  # the loss too: the gradients alone do not need the forward
        return loss, gx.grad, gw.grad

    tgx, tgw = tx.clone().requires_grad_(True), tw.clone().requires_grad_(True)

    def torch_step() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        tgx.grad = None
        tgw.grad = None
        loss = (F.conv2d(tgx, tgw, padding=pad) * tr).sum()
        loss.backward()
        assert tgx.grad is not None and tgw.grad is not None
        return loss, tgx.grad, tgw.grad

    ug, out, err = measure_unigrad(unigrad_step, s)
    th_t, ref = measure(torch_step, s)
    ok = None
    if out is not None:
        oks = [
            check("conv2d loss", out[0].numpy(), ref[0].detach().numpy(), rtol=1e-4, atol=1e-2),
            check("conv2d grad input", out[1].numpy(), ref[1].numpy(), rtol=1e-4, atol=1e-3),
            check("conv2d grad weight", out[2].numpy(), ref[2].numpy(), rtol=1e-4, atol=2e-2),  # sums of 32k terms
        ]
        ok = all(oks)
    both = Row("conv2d_fwd_bwd", f"{name} fwd+bwd", ug, None, th_t, 3 * flops, "GFLOP/s", ok, err)
    both.notes.append("numpy n/a")
    return [forward, both]


# ---------------------------------------------------------------- (6) an MLP training step


def digits_batches(batch: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """scikit-learn's 8x8 digits as (x (batch, 64) float32 in [0, 1], y (batch,) int64) minibatches."""
    from sklearn.datasets import load_digits

    data = load_digits()
    x = (np.asarray(data.data, dtype=np.float32) / 16).reshape(-1, 64)
    y = np.asarray(data.target, dtype=np.int64)
    return [(x[i : i + batch], y[i : i + batch]) for i in range(0, len(y) - batch + 1, batch)]


class UnigradMLP:
    """64 -> hidden (ReLU) -> 10, its parameters copied from a torch model of the same layout."""

    def __init__(self, model: torch.nn.Sequential) -> None:
        self.l1, self.l2 = nn.Linear(64, model[0].out_features), nn.Linear(model[0].out_features, 10)
        for mine, theirs in ((self.l1, model[0]), (self.l2, model[2])):
            mine.weight = Tensor(theirs.weight.detach().numpy().copy())
            mine.bias = Tensor(theirs.bias.detach().numpy().copy())

    def parameters(self) -> list[Tensor]:
        return [self.l1.weight, self.l1.bias, self.l2.weight, self.l2.bias]  # type: ignore[list-item]

    def __call__(self, x: Tensor) -> Tensor:
        return self.l2(self.l1(x).relu())


def bench_mlp(s: Sizes) -> list[Row]:
    verify_steps, lr = 3, 1e-3
    batches = digits_batches(s.mlp_batch)
    torch.manual_seed(SEED)
    tmodel = torch.nn.Sequential(torch.nn.Linear(64, s.mlp_hidden), torch.nn.ReLU(), torch.nn.Linear(s.mlp_hidden, 10))
    umodel = UnigradMLP(tmodel)  # the same initial weights
    jmodel = UnigradMLP(tmodel)  # ... for the TinyJit step
    jopt = optim.Adam(jmodel.parameters(), lr=lr)
    topt = torch.optim.Adam(tmodel.parameters(), lr=lr)
    uopt = optim.Adam(umodel.parameters(), lr=lr)
    tbatches = itertools.cycle([(torch.from_numpy(x), torch.from_numpy(y)) for x, y in batches])
    ubatches: Iterator[tuple[Tensor, Tensor]] = itertools.cycle(
        [(Tensor(x).realize(), Tensor(y).realize()) for x, y in batches]
    )
    jbatches: Iterator[tuple[Tensor, Tensor]] = itertools.cycle(
        [(Tensor(x).realize(), Tensor(y).realize()) for x, y in batches]
    )

    @Tensor.train()  # tinygrad's optimizers step only in train mode
    def unigrad_step() -> Tensor:
        x, y = next(ubatches)
        uopt.zero_grad()
        loss = umodel(x).sparse_categorical_crossentropy(y)
        loss.backward()
        Tensor.realize(loss, *uopt.schedule_step())  # the loss with the update, in one schedule
        return loss

    @TinyJit
    @Tensor.train()
    def jit_body(x: Tensor, y: Tensor) -> Tensor:  # the same step: replayed from the third call on
        jopt.zero_grad()
        loss = jmodel(x).sparse_categorical_crossentropy(y)
        loss.backward()
        Tensor.realize(loss, *jopt.schedule_step())
        return loss

    def jit_step() -> Tensor:
        return jit_body(*next(jbatches))

    def torch_step() -> torch.Tensor:
        x, y = next(tbatches)
        topt.zero_grad()
        loss = F.cross_entropy(tmodel(x), y)
        loss.backward()
        topt.step()
        return loss

    # the same first steps from the same weights on the same batches: the losses and weights must agree
    ok, err = None, ""
    try:
        ulosses = [unigrad_step().item() for _ in range(verify_steps)]
        jlosses = [jit_step().item() for _ in range(verify_steps)]
        tlosses = [torch_step().item() for _ in range(verify_steps)]
        oks = [
            check("mlp losses", np.array(ulosses), np.array(tlosses), rtol=1e-4, atol=1e-5),
            check("mlp jit losses", np.array(jlosses), np.array(ulosses), rtol=0, atol=0),
            check("mlp weight", umodel.l1.weight.numpy(), tmodel[0].weight.detach().numpy(), rtol=1e-4, atol=1e-5),
        ]
        ok = all(oks)
    except Exception as e:
        traceback.print_exc()
        err = f"{type(e).__name__}: {e}"
    ug = jt = None
    jerr = err
    if not err:
        ug, _, err = measure_unigrad(unigrad_step, s)
        jt, _, jerr = measure_unigrad(jit_step, s)
    th_t, _ = measure(torch_step, s)
    name = f"MLP 64-{s.mlp_hidden}-10 Adam step, batch {s.mlp_batch}"
    row = Row("mlp_step", name, ug, None, th_t, s.mlp_batch, "samples/s", ok, err)
    row.notes.append("numpy n/a")
    jrow = Row("mlp_step_jit", name + " (TinyJit)", jt, None, th_t, s.mlp_batch, "samples/s", ok, jerr)
    jrow.notes.append("numpy n/a")
    return [row, jrow]


# ---------------------------------------------------------------- (7) Python overhead of a small graph


def bench_overhead(s: Sizes) -> list[Row]:
    consts = chain_consts(SEED)  # one structure: after the warm-up, the schedule and program caches hit
    fresh = iter([tensors(k) for k in range(s.max_runs + 1)])  # new input buffers for each call
    ug, out, err = measure_unigrad(lambda: chain(*next(fresh), consts).realize(), s)
    xn, wn = inputs(0)  # tensors(0)'s values: the warm-up's inputs
    np_t, ref = measure(lambda: [chain(xn, wn, consts) for _ in range(CHAIN_REPS)], s)
    xt, wt = torch.from_numpy(xn), torch.from_numpy(wn)
    th_t, _ = measure(lambda: [chain(xt, wt, consts) for _ in range(CHAIN_REPS)], s)
    ok = check("overhead chain", out.numpy(), ref[0], rtol=1e-4, atol=1e-5) if out is not None else None
    np_call, th_call = per_call(np_t, CHAIN_REPS), per_call(th_t, CHAIN_REPS)
    row = Row("overhead", f"{N_OPS}-op graph on 4 elements, build+realize", ug, np_call, th_call, ok=ok, error=err)
    if ug is not None:
        row.notes.append(f"{ug.median_s / N_OPS * 1e6:.1f} us/op")
    return [row]


# ---------------------------------------------------------------- (8) time to a first result


SNIPPETS = {
    "unigrad": "from unigrad import Tensor; print((Tensor([1.,2.])+1).numpy())",
    "numpy": "import numpy as np; print(np.array([1.,2.])+1)",
    "torch": "import torch; print(torch.tensor([1.,2.])+1)",
    "python": "pass",
}


def run_snippet(code: str, cachedir: str) -> tuple[float, str]:
    """Seconds from starting `python -c code` to its exit (this unigrad on its path, CACHEDIR set), and stdout."""
    env = dict(os.environ, CACHEDIR=cachedir)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", code], env=env, cwd=REPO, capture_output=True, text=True, check=False)
    dt = time.perf_counter() - t0
    if p.returncode != 0:
        raise RuntimeError(f"python -c {code!r} exited {p.returncode}: {p.stderr.strip()[-2000:]}")
    return dt, p.stdout.strip()


def time_snippet(code: str, runs: int, cold: bool) -> tuple[Timing, str]:
    """Median over `runs` fresh processes; cold: each with a new empty compile cache; warm: one filled first."""
    times, out = [], ""
    shared = tempfile.mkdtemp(prefix="unigrad-bench-cache-")
    try:
        warmup, _ = run_snippet(code, shared)
        for _ in range(runs):
            cachedir = tempfile.mkdtemp(prefix="unigrad-bench-cache-") if cold else shared
            try:
                dt, out = run_snippet(code, cachedir)
            finally:
                if cold:
                    shutil.rmtree(cachedir, ignore_errors=True)
            times.append(dt)
    finally:
        shutil.rmtree(shared, ignore_errors=True)
    return Timing(statistics.median(times), runs, warmup, min(times)), out


def bench_startup(s: Sizes) -> list[Row]:
    # unigrad's bytecode compiled first, as installing a package does (numpy's and torch's ship compiled): an
    # editable checkout under PYTHONDONTWRITEBYTECODE=1 would otherwise compile every module in every process
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "unigrad")], check=True, capture_output=True)
    peers = {name: time_snippet(SNIPPETS[name], s.startup_runs, cold=False)[0] for name in ("numpy", "torch")}
    python = time_snippet(SNIPPETS["python"], s.startup_runs, cold=False)[0]
    rows = []
    for cold in (True, False):
        label = "cold" if cold else "warm"
        try:
            ug, out = time_snippet(SNIPPETS["unigrad"], s.startup_runs, cold=cold)
            ok, err = out == "[2. 3.]", ""
            if not ok:
                print(f"FAIL startup {label}: printed {out!r}, expected '[2. 3.]'")
        except Exception as e:
            traceback.print_exc()
            ug, ok, err = None, None, f"{type(e).__name__}: {e}"
        row = Row(f"startup_{label}", f"fresh process to a result, {label} cache", ug, peers["numpy"], peers["torch"])
        row.ok, row.error = ok, err
        row.notes.append(f"python -c pass {python.median_s * 1e3:.0f} ms")
        rows.append(row)
    return rows


DEVICE_WORKLOADS = ("elementwise", "sum", "softmax", "matmul", "conv")  # what --device runs by default
WORKLOADS: tuple[Callable[[Sizes], list[Row]], ...] = (
    bench_elementwise,
    bench_sum,
    bench_softmax,
    bench_matmul,
    bench_conv,
    bench_mlp,
    bench_overhead,
    bench_startup,
)


# ---------------------------------------------------------------- report


def _ms(t: Timing | None) -> str:
    return f"{t.median_s * 1e3:10.3f}" if t is not None else f"{'n/a':>10}"


def _num(v: float | None, width: int) -> str:
    if v is None:
        return f"{'-':>{width}}"
    return f"{v:>{width},.0f}" if abs(v) >= 1000 else f"{v:>{width}.2f}"


def _check(row: Row) -> str:
    if row.error:
        return "ERROR"
    return {None: "-", True: "ok", False: "FAIL"}[row.ok]


def table(rows: Sequence[Row]) -> str:
    head = (
        f"{'workload':<42} {'runs':>4} {'unigrad ms':>10} {'numpy ms':>10} {'torch ms':>10} {'ug/np':>7} "
        f"{'ug/torch':>8}  {'unit':<9} {'unigrad':>8} {'numpy':>8} {'torch':>8}  check  notes"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        unit = r.unit if r.work else ""
        notes = list(r.notes)
        if r.unigrad is not None and r.unigrad.kernels_per_run is not None:
            notes.insert(0, f"{r.unigrad.kernels_per_run:g} kernels/run")
        if r.unigrad is not None:
            notes.insert(0, f"warm-up {r.unigrad.warmup_s * 1e3:.0f} ms")
        if r.machine is not None and r.unigrad is not None:
            share = r.machine.median_s / r.unigrad.median_s
            notes.append(
                f"hand-written C now {_num(r.throughput(r.machine), 0).strip()} {r.unit} (unigrad {share:.0%})"
            )
        if r.error:
            notes.append(r.error.splitlines()[0][:200])
        lines.append(
            f"{r.name:<42} {r.unigrad.runs if r.unigrad else 0:>4} {_ms(r.unigrad)} {_ms(r.numpy)} {_ms(r.torch)} "
            f"{_num(r.ratio(r.numpy), 7)} {_num(r.ratio(r.torch), 8)}  {unit:<9} "
            f"{_num(r.throughput(r.unigrad), 8)} {_num(r.throughput(r.numpy), 8)} {_num(r.throughput(r.torch), 8)}"
            f"  {_check(r):<5}  {'; '.join(notes)}"
        )
    return "\n".join(lines)


def to_json(rows: Sequence[Row]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for r in rows:
        for lib, t in (("unigrad", r.unigrad), ("numpy", r.numpy), ("torch", r.torch), ("machine", r.machine)):
            if t is None:
                continue
            out[f"{r.key}_{lib}_ms"] = t.median_s * 1e3
            out[f"{r.key}_{lib}_runs"] = t.runs
            out[f"{r.key}_{lib}_min_ms"] = t.min_s * 1e3
            out[f"{r.key}_{lib}_warmup_ms"] = t.warmup_s * 1e3
            if r.work:
                unit = r.unit.replace("/", "_per_").replace("GFLOP", "gflop").replace("GB", "gb")
                out[f"{r.key}_{lib}_{unit}"] = r.throughput(t)
        if r.unigrad is not None and r.unigrad.kernels_per_run is not None:
            out[f"{r.key}_unigrad_kernels_per_run"] = r.unigrad.kernels_per_run
        for peer, t in (("numpy", r.numpy), ("torch", r.torch)):
            ratio = r.ratio(t)
            if ratio is not None:
                out[f"{r.key}_ratio_{peer}"] = ratio
        out[f"{r.key}_ok"] = r.ok
        if r.error:
            out[f"{r.key}_error"] = r.error
    return out


def environment() -> dict[str, Any]:
    info: dict[str, Any] = {
        "python": platform.python_version(),
        "cpu_count": os.cpu_count(),
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "numpy": np.__version__,
        "unigrad_threads_knob": int(config.THREADS),
        "openblas_num_threads_env": os.environ.get("OPENBLAS_NUM_THREADS"),
        "loadavg_1m": os.getloadavg()[0],  # other work on the machine skews every number: check it is ~0
    }
    try:
        from threadpoolctl import threadpool_info

        info["numpy_blas_threads"] = [p["num_threads"] for p in threadpool_info() if p.get("user_api") == "blas"]
    except ImportError:
        pass
    return info


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m bench.suite", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="every size ~16x smaller, fewer runs (CI smoke run)")
    names = [w.__name__.removeprefix("bench_") for w in WORKLOADS]
    parser.add_argument("--only", default="", help=f"comma-separated workloads to run, of: {','.join(names)}")
    parser.add_argument(
        "--device",
        default="CPU",
        help=f"the device unigrad runs on (CL: OpenCL); numpy and torch stay on the CPU beside it. Not on the CPU, "
        f"--only defaults to the kernel workloads ({','.join(DEVICE_WORKLOADS)})",
    )
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    config.DEVICE.value = args.device.upper()
    only = [w for w in args.only.split(",") if w] or (list(DEVICE_WORKLOADS) if config.DEVICE.value != "CPU" else [])
    if unknown := sorted(set(only) - set(names)):
        parser.error(f"--only: unknown workloads {unknown}; known: {names}")
    s = QUICK if args.quick else FULL
    torch.set_num_threads(TORCH_THREADS)
    env = environment()
    mode = "quick" if args.quick else "full"
    print(f"unigrad suite ({mode}, unigrad on {config.DEVICE.value}): " + ", ".join(f"{k}={v}" for k, v in env.items()))
    if env["loadavg_1m"] > BUSY_LOADAVG:
        print(f"WARNING: load average {env['loadavg_1m']:.2f}: other processes share the CPUs, timings will be noisy")

    # The import-time objects (torch's and numpy's module state included) are frozen: the collections during the
    # workloads skip them, as a program's young-generation collections do.
    gc.collect()
    gc.freeze()
    t0 = time.perf_counter()
    rows: list[Row] = []
    crashed: dict[str, str] = {}
    for workload in WORKLOADS:
        name = workload.__name__.removeprefix("bench_")
        if only and name not in only:
            continue
        t1 = time.perf_counter()
        try:
            rows += workload(s)
        except Exception as e:  # a peer or the harness itself: the other workloads still run
            traceback.print_exc()
            crashed[name] = f"{type(e).__name__}: {e}"
        print(f"  {name}: {time.perf_counter() - t1:.1f} s", flush=True)
        gc.collect()

    total = time.perf_counter() - t0
    print()
    print(table(rows))
    failed = [r.key for r in rows if r.ok is False]
    errors = {r.key: r.error for r in rows if r.error} | crashed
    if failed:
        print(f"\nFAIL (unigrad differs from the reference): {', '.join(failed)}")
    if errors:
        print(f"\nERROR (raised): {', '.join(errors)}")
    print(f"\n(total {total:.1f} s)")
    results: dict[str, Any] = {"quick": args.quick, **env, **to_json(rows), "total_s": total}
    results["failed"], results["errors"] = failed, errors
    print("JSON: " + json.dumps({k: round(v, 4) if isinstance(v, float) else v for k, v in results.items()}))
    if crashed:  # the driver (python -m bench) reports a module that raises
        raise RuntimeError(f"bench.suite: workloads crashed: {crashed}")
    return results


if __name__ == "__main__":
    main()
