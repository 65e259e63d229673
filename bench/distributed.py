"""unigrad.distributed on 2 ranks: all_reduce bus bandwidth against mpi4py, and DDP's scaling efficiency (issue 35).

Two parts, each an MPI job this module starts itself (`python -m unigrad.distributed.run -n 2 -m bench.distributed
--worker PART`, THREADS=1: one core per rank), rank 0 printing a `RESULT:` line this driver reads:

  1. all_reduce  a float32 buffer of 1 KB to 256 MB (--quick: to 16 MB), summed in place: unigrad's
                 dist.all_reduce(tensor) (DIST_CHECK=1, the default: with the shape check; and DIST_CHECK=0) against
                 a plain mpi4py `comm.Allreduce(MPI.IN_PLACE, array, MPI.SUM)` of a numpy buffer of the same size.
                 The three are interleaved, round after round (a barrier before each), and the median round is
                 reported. Bus bandwidth is nccl-tests' definition: algbw x 2(n-1)/n, algbw = bytes / time (on 2
                 ranks busbw = algbw). Ratios are unigrad's bandwidth / mpi4py's (>= 0.9 is issue 35's target from
                 1 MB up; at 1 KB the time ratio, target <= 2). With the check, data that fits the check's packet
                 (up to 2 KB on 2 ranks: the 1 KB row) is one MPI round trip, the packets' Allgather (signature
                 hash + data), then MPI's Reduce_local on each rank; bigger data is that Allgather and then MPI's
                 Allreduce, two round trips (the 4 KB and 16 KB rows show the second; from 64 KB on it is noise).
                 The no-check column is one MPI Allreduce and the Python around it.
  2. ddp         one Adam training step of the digits MLP (64 -> 128 -> 10) and of the small CNN (conv 1 -> 16, 3x3,
                 maxpool, linear 256 -> 10), global batch 128: DistributedDataParallel on 2 ranks (64 samples each,
                 one core each) against one process of one core taking the whole batch (a third job, no mpirun).
                 Scaling efficiency = DDP samples/s / (2 x one process's). Both models fit torch's first 1 MB bucket
                 (one all-reduce, which can start only after the whole backward); the MLP in 4 KB buckets
                 (mlp_small_buckets: 2) shows the overlap. DDP's own timers split each step's reduction: `exposed` is
                 the time backward() waited for the all-reduces after its schedule ended (it includes waiting for
                 the other rank to arrive); `all-reduce` is a blocking all-reduce of the same bucket sizes timed
                 alone; what the step did not wait for of it is `overlapped` (all-reduce - exposed, at least 0);
                 `kernels after 1st start` counts the backward's kernels that ran while a bucket's all-reduce was
                 already in flight.

Every timed step or round runs after warm-up (compiles, caches); medians are printed with the 1-minute load average
of the machine before and after (on a shared 2-core machine the ranks' spin-waits are sensitive to any other load:
compare only numbers with a low load). The last line is `JSON: {...}`.

  python -m bench distributed [--quick]      # or: python -m bench.distributed
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

RANKS = 2
SIZES = [1 << k for k in range(10, 29, 2)]  # 1 KB, 4 KB, ..., 256 MB
QUICK_MAX = 16 << 20
GLOBAL_BATCH = 128
# (model, bucket_cap_mb): torch's default buckets (the digits models fit the first 1 MB bucket: one all-reduce, after
# the whole backward, nothing to overlap), and the MLP in 4 KB buckets (2: the last layer's, the first layer's; the
# last layer's all-reduce can start while the first layer's gradient kernels run)
# the models' steps under TinyJit too (mlp_jit, cnn_jit): less Python per step, so closer to the kernels' scaling
DDP_CASES = [("mlp", None), ("cnn", None), ("mlp_small_buckets", 0.004), ("mlp_jit", None), ("cnn_jit", None)]
BUSY_LOADAVG = 0.5


def loadavg() -> float:
    return os.getloadavg()[0]


# ---------------------------------------------------------------------------------------------- inside the MPI jobs
def _rounds(
    calls: dict[str, Callable[[], None]],
    reps: int,
    rounds: int,
    barrier: Callable[[], None],
    settings: dict[str, dict[str, Any]] | None = None,
) -> dict:
    """Seconds per call of each entry, the entries interleaved round by round (a barrier before each; an entry's
    `settings` are a Context around its round): the median round's under the entry's name, the fastest round's under
    name + "_min"."""
    from unigrad import Context

    times: dict[str, list[float]] = {k: [] for k in calls}
    for _ in range(rounds):
        for name, call in calls.items():
            with Context(**(settings or {}).get(name, {})):
                barrier()
                t0 = time.perf_counter()
                for _ in range(reps):
                    call()
                times[name].append((time.perf_counter() - t0) / reps)
    return {k: statistics.median(v) for k, v in times.items()} | {f"{k}_min": min(v) for k, v in times.items()}


def worker_allreduce(quick: bool) -> dict[str, Any]:
    """Every size: seconds per all_reduce of mpi4py, unigrad (check on), unigrad (check off); rank 0 returns them."""
    from mpi4py import MPI

    import unigrad.distributed as dist
    from unigrad import Tensor

    dist.init_process_group("mpi")
    comm, n, rank = MPI.COMM_WORLD, dist.get_world_size(), dist.get_rank()
    # correctness first: a rank-dependent buffer summed
    t = Tensor(np.arange(1000, dtype=np.float32) * (rank + 1))
    dist.all_reduce(t)
    want = np.arange(1000, dtype=np.float32) * sum(range(1, n + 1))
    if not np.array_equal(t.numpy(), want):
        raise AssertionError(f"rank {rank}: all_reduce differs from numpy's sum")
    out: dict[str, Any] = {"ranks": n, "sizes": []}
    for nbytes in [s for s in SIZES if not quick or s <= QUICK_MAX]:
        a = np.zeros(nbytes // 4, np.float32)
        x = Tensor(np.zeros(nbytes // 4, np.float32)).realize()
        reps = max(1, min(1000, (4 << 20) // nbytes))  # about 4 MB moved per round at most... at least one call
        rounds = 7 if nbytes < (64 << 20) else 3

        calls = {
            "mpi4py": lambda a=a: comm.Allreduce(MPI.IN_PLACE, a, MPI.SUM),
            "unigrad": lambda x=x: dist.all_reduce(x),
            "unigrad_nocheck": lambda x=x: dist.all_reduce(x),
        }
        settings = {"unigrad_nocheck": {"DIST_CHECK": 0}}
        _rounds(calls, max(1, reps // 10), 1, comm.Barrier, settings)  # warm-up
        med = _rounds(calls, reps, rounds, comm.Barrier, settings)
        out["sizes"].append({"bytes": nbytes, **{f"{k}_s": v for k, v in med.items()}})
        del a, x
    dist.destroy_process_group()
    return out


def digits_models() -> dict[str, Callable[[], Any]]:
    """The digits MLP and CNN (as examples/ddp_digits.py), each made from the same seed."""
    import unigrad.torch as torch
    from unigrad import nn

    def mlp() -> nn.Module:
        torch.manual_seed(1337)
        return nn.Sequential(nn.Flatten(), nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))

    def cnn() -> nn.Module:
        torch.manual_seed(1337)
        conv = nn.Conv2d(1, 16, 3, padding=1)
        return nn.Sequential(conv, nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(16 * 4 * 4, 10))

    return {"mlp": mlp, "cnn": cnn}


def worker_ddp(quick: bool, single: bool) -> dict[str, Any]:
    """Seconds per training step of each model: DDP on this job's ranks with GLOBAL_BATCH / ranks each, or (single)
    one process with the whole batch; DDP's exposed wait per step and a blocking all-reduce of its buckets alone."""
    import unigrad.distributed as dist
    import unigrad.torch as torch
    from unigrad import Tensor, TinyJit
    from unigrad.nn.datasets import digits
    from unigrad.nn.parallel import DistributedDataParallel as DDP

    x_train, y_train, _, _ = digits()
    ranks, rank = 1, 0
    if not single:
        dist.init_process_group("mpi")
        ranks, rank = dist.get_world_size(), dist.get_rank()
    local = GLOBAL_BATCH // ranks
    steps, warmup = (10, 3) if quick else (40, 5)
    rng = np.random.default_rng(0)
    batches = [rng.permutation(len(y_train.numpy()))[:GLOBAL_BATCH] for _ in range(steps + warmup)]
    out: dict[str, Any] = {"ranks": ranks}
    models = digits_models()
    for name, cap in DDP_CASES:
        model = models[name.split("_")[0]]()
        wrapped = model if single else DDP(model, bucket_cap_mb=cap)
        opt = torch.optim.Adam(model.parameters(), lr=1e-2)

        def step(x: Tensor, y: Tensor, wrapped: Any = wrapped, opt: Any = opt) -> Tensor:
            loss = torch.nn.functional.cross_entropy(wrapped(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            return loss.realize()

        jitted = name.endswith("_jit")
        run = TinyJit(step) if jitted else step
        exposed, times, overlap = [], [], []
        for i, idx in enumerate(batches):
            mine = Tensor(idx[rank * local : (rank + 1) * local].astype(np.int32))
            x, y = x_train[mine].realize(), y_train[mine].realize()
            if not single:
                dist.barrier()
            t0 = time.perf_counter()
            with Tensor.train():
                run(x, y)
            if i >= warmup:
                times.append(time.perf_counter() - t0)
                if not single and not jitted:  # a replayed step runs no hooks: its timers are the capture's
                    exposed.append(wrapped.timings.get("exposed_wait", 0.0))
                    overlap.append(wrapped.timings.get("kernels_after_first_start", 0))
        res: dict[str, Any] = {"step_s": statistics.median(times)}
        if not single:
            res["exposed_s"] = statistics.median(exposed) if exposed else None
            res["kernels_overlapped"] = statistics.median(overlap) if overlap else None
            res["buckets"] = len(wrapped.bucket_sizes)
            # the all-reduce alone: one blocking all_reduce per bucket, of its flat size
            flats = [Tensor(np.zeros(b.flat.size, b.flat.dtype)).realize() for b in wrapped._buckets]
            res["bucket_bytes"] = [int(b.flat.nbytes) for b in wrapped._buckets]

            def reduce_all(flats: list[Tensor] = flats) -> None:
                for f in flats:
                    dist.all_reduce(f)

            res["allreduce_s"] = _rounds({"a": reduce_all}, 20, 5, dist.barrier)["a"]
        out[name] = res
    if not single:
        dist.destroy_process_group()
    return out


# ---------------------------------------------------------------------------------------------- the driver
def run_job(part: str, quick: bool, ranks: int) -> dict[str, Any]:
    """Run `--worker part` on `ranks` processes (1: a plain process, no MPI job) and return rank 0's RESULT."""
    args = ["-m", "bench.distributed", "--worker", part] + (["--quick"] if quick else [])
    if ranks > 1:
        cmd = [sys.executable, "-m", "unigrad.distributed.run", "-n", str(ranks), *args]
    else:
        cmd = [sys.executable, *args, "--single"]
    env = {**os.environ, "THREADS": "1"}
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False, timeout=1800)
    lines = [line for line in p.stdout.splitlines() if line.startswith("RESULT: ")]
    if p.returncode != 0 or not lines:
        raise RuntimeError(
            f"bench.distributed: the {part} job failed ({p.returncode}):\n{(p.stdout + p.stderr)[-3000:]}"
        )
    return json.loads(lines[0].removeprefix("RESULT: "))


def _size(nbytes: int) -> str:
    return f"{nbytes >> 20} MB" if nbytes >= 1 << 20 else f"{nbytes >> 10} KB"


def report_allreduce(res: dict[str, Any]) -> dict[str, Any]:
    n = res["ranks"]
    factor = 2 * (n - 1) / n
    out: dict[str, Any] = {}
    print(f"\nall_reduce (float32 SUM, in place) on {n} ranks: median time, bus bandwidth, unigrad / mpi4py")
    print(f"{'size':>8} {'mpi4py us':>10} {'unigrad us':>11} {'no-check us':>12} {'mpi4py GB/s':>12} "
          f"{'unigrad GB/s':>13} {'bw ratio':>9} {'time ratio':>11} {'no-check ratio':>15}")  # fmt: skip
    for row in res["sizes"]:
        nbytes = row["bytes"]
        bus = {k: nbytes / row[f"{k}_s"] * factor / 1e9 for k in ("mpi4py", "unigrad", "unigrad_nocheck")}
        ratio = bus["unigrad"] / bus["mpi4py"]
        time_ratio = row["unigrad_s"] / row["mpi4py_s"]
        nocheck = row["unigrad_nocheck_s"] / row["mpi4py_s"]
        print(
            f"{_size(nbytes):>8} {row['mpi4py_s'] * 1e6:>10.1f} {row['unigrad_s'] * 1e6:>11.1f} "
            f"{row['unigrad_nocheck_s'] * 1e6:>12.1f} {bus['mpi4py']:>12.3f} {bus['unigrad']:>13.3f} {ratio:>9.2f} "
            f"{time_ratio:>11.2f} {nocheck:>15.2f}"
        )
        key = f"allreduce_{nbytes}"
        for lib in ("mpi4py", "unigrad", "unigrad_nocheck"):
            out |= {f"{key}_{lib}_us": row[f"{lib}_s"] * 1e6, f"{key}_{lib}_min_us": row[f"{lib}_min_s"] * 1e6}
        out |= {f"{key}_busbw_mpi4py_gbs": bus["mpi4py"], f"{key}_busbw_unigrad_gbs": bus["unigrad"]}
        out[f"{key}_busbw_ratio"] = ratio
    return out


def report_ddp(ddp: dict[str, Any], one: dict[str, Any]) -> dict[str, Any]:
    n = ddp["ranks"]
    out: dict[str, Any] = {}
    print(f"\nDDP training step, global batch {GLOBAL_BATCH}: {n} ranks (one core each) against one process (one core)")
    print(f"{'model':>18} {'1 proc ms':>10} {'DDP ms':>8} {'efficiency':>11} {'buckets':>8} {'all-reduce us':>14} "
          f"{'exposed us':>11} {'overlapped us':>14} {'kernels after 1st start':>24}")  # fmt: skip
    for name, _ in DDP_CASES:
        d, o = ddp[name], one[name]
        eff = o["step_s"] / (n * d["step_s"])
        timed = d["exposed_s"] is not None  # not under TinyJit
        overlapped = max(0.0, d["allreduce_s"] - d["exposed_s"]) if timed else None
        print(
            f"{name:>18} {o['step_s'] * 1e3:>10.2f} {d['step_s'] * 1e3:>8.2f} {eff:>11.2f} {d['buckets']:>8} "
            f"{d['allreduce_s'] * 1e6:>14.1f} "
            + (
                f"{d['exposed_s'] * 1e6:>11.1f} {overlapped * 1e6:>14.1f} {d['kernels_overlapped']:>24g}"
                if timed
                else ""
            )
        )
        out |= {f"ddp_{name}_one_ms": o["step_s"] * 1e3, f"ddp_{name}_ms": d["step_s"] * 1e3}
        out |= {f"ddp_{name}_efficiency": eff, f"ddp_{name}_buckets": d["buckets"]}
        out[f"ddp_{name}_allreduce_us"] = d["allreduce_s"] * 1e6
        if timed:
            out[f"ddp_{name}_exposed_us"] = d["exposed_s"] * 1e6
            out[f"ddp_{name}_overlapped_us"] = overlapped * 1e6
            out[f"ddp_{name}_kernels_after_first_start"] = d["kernels_overlapped"]
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m bench distributed", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="sizes up to 16 MB, fewer DDP steps")
    parser.add_argument("--only", default="", help="allreduce or ddp (default both)")
    parser.add_argument("--worker", default="", help=argparse.SUPPRESS)  # inside a job this module started
    parser.add_argument("--single", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_known_args(sys.argv[1:] if argv is None else argv)[0]
    if args.worker:
        res = worker_allreduce(args.quick) if args.worker == "allreduce" else worker_ddp(args.quick, args.single)
        if args.single or int(os.environ.get("RANK", "0")) == 0:
            print("RESULT: " + json.dumps(res), flush=True)
        return res
    if shutil.which("mpirun") is None:
        print("bench.distributed: skipped: needs Open MPI's mpirun and mpi4py (apt-get install openmpi-bin)")
        return {}
    before = loadavg()
    print(f"bench.distributed ({'quick' if args.quick else 'full'}): {RANKS} ranks, THREADS=1, cpus={os.cpu_count()}, "
          f"load average {before:.2f}")  # fmt: skip
    if before > BUSY_LOADAVG:
        print(f"WARNING: load average {before:.2f}: other processes share the CPUs, timings will be noisy")
    results: dict[str, Any] = {"quick": args.quick, "ranks": RANKS, "loadavg_1m_before": before}
    parts = [p for p in args.only.split(",") if p] or ["allreduce", "ddp"]
    t0 = time.perf_counter()
    if "allreduce" in parts:
        results |= report_allreduce(run_job("allreduce", args.quick, RANKS))
    if "ddp" in parts:
        results |= report_ddp(run_job("ddp", args.quick, RANKS), run_job("ddp", args.quick, 1))
    results["loadavg_1m_after"] = loadavg()
    results["total_s"] = time.perf_counter() - t0
    print(
        f"\n(total {results['total_s']:.1f} s; load average before {before:.2f}, "
        f"after {results['loadavg_1m_after']:.2f})"
    )
    print("JSON: " + json.dumps({k: round(v, 4) if isinstance(v, float) else v for k, v in results.items()}))
    return results


if __name__ == "__main__":
    main()
