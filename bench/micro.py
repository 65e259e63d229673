"""Micro-benchmarks of unigrad's Python-side costs: building UOps, rewriting graphs, scheduling.

  (a) hash-consing: building a new UOp node, rebuilding an existing one (cache hit), freeing nodes
  (b) graph_rewrite with pm_symbolic over ~1000 nodes of index math, per node: the pass itself (fresh nodes
      already in normal form: every rule tried, none fires), simplifying fresh index math, and memoized
  (c) a 200-op elementwise chain on 4-element tensors: building it, kernelize with a cold and a warm
      schedule cache, realize with warm caches (and once with a cold compile), against numpy and PyTorch

Every number is the median over several runs; a run times one call (or a batch of many calls for the
sub-microsecond cases) with time.perf_counter. The table goes to stdout, then one line `JSON: {...}`.

  python -m bench.micro              # or: python -m bench (all benchmarks)
  python -m bench.micro --profile    # also cProfile one cold kernelize of the 200-op chain
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import json
import pstats
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from unigrad import Context, Tensor, dtypes
from unigrad.helpers import no_gc
from unigrad.ir.ops import Ops
from unigrad.ir.pattern import graph_rewrite
from unigrad.ir.symbolic import pm_symbolic
from unigrad.ir.uop import UOp
from unigrad.runtime import realize as rt

RUNS = 7  # runs per measurement; the median is reported
N_NODES = 20_000  # nodes built per run in (a)
N_OPS = 200  # length of the elementwise chain in (c)
REPS = 100  # numpy / torch chains per run (each is ~0.1 ms)
DEVICE = "CPU"

TARGET_NEW_NODE_US = 1.0
TARGET_REWRITE_US = 3.0


def median_time(run: Callable[[Any], object], setup: Callable[[], Any] | None = None, runs: int = RUNS) -> float:
    """Median seconds of run(state) over `runs` runs; setup() builds a fresh state, untimed, before each."""
    times = []
    for _ in range(runs):
        state = setup() if setup is not None else None
        gc.collect()
        t0 = time.perf_counter()
        out = run(state)
        times.append(time.perf_counter() - t0)
        del out  # freeing what run built is not part of its time (the free cost is measured on its own)
    return statistics.median(times)


# ---------------------------------------------------------------- (a) hash-consed node construction


def bench_uop_build() -> dict[str, float]:
    """us per node: a new ADD node (its sources exist, the node does not), a cache hit, a free."""
    x = UOp.variable("x", 0, 1 << 20)
    run_id = iter(range(1 << 30))

    def fresh_consts() -> list[UOp]:  # new constants each run, so every ADD over them is a new node
        base = next(run_id) * N_NODES
        return [UOp.index_const(base + i) for i in range(N_NODES)]

    def build(consts: list[UOp]) -> list[UOp]:
        return [UOp(Ops.ADD, (x, c)) for c in consts]

    new = median_time(build, fresh_consts)

    def build_no_gc(consts: list[UOp]) -> list[UOp]:
        with no_gc():  # as inside graph_rewrite and kernelize, which pause the cyclic collector
            return build(consts)

    new_no_gc = median_time(build_no_gc, fresh_consts)

    def setup_hit() -> tuple[list[UOp], list[UOp]]:
        consts = fresh_consts()
        return consts, build(consts)  # the nodes exist (and stay alive) before the timed rebuild

    hit = median_time(lambda s: build(s[0]), setup_hit)

    def setup_free() -> tuple[list[UOp], list[UOp]]:
        consts = fresh_consts()  # kept alive, so only the ADDs are freed
        return consts, build(consts)

    def free(s: tuple[list[UOp], list[UOp]]) -> None:
        s[1].clear()  # drops the last reference to every ADD: UOp.__del__ removes its cache entry

    freed = median_time(free, setup_free)

    def fresh_values() -> list[float]:
        base = next(run_id) * N_NODES
        return [float(base + i) + 0.5 for i in range(N_NODES)]

    const = median_time(lambda vals: [UOp.const(dtypes.float32, v) for v in vals], fresh_values)
    loop = median_time(lambda consts: [(x, c) for c in consts], fresh_consts)  # the comprehension alone
    # hashing the parts of a node's cache key: these run on every build, lookup and free
    hashes = {}
    for key, obj in (
        ("object", object()),
        ("ops", Ops.ADD),
        ("dtype", dtypes.float32),
        ("constarg", UOp.const(dtypes.float32, 1.5).arg),
    ):
        objs = [obj] * N_NODES
        hashes[key] = median_time(lambda _, objs=objs: [hash(o) for o in objs])
    us = 1e6 / N_NODES
    return {
        "uop_new_us": new * us,
        "uop_new_no_gc_us": new_no_gc * us,
        "uop_cache_hit_us": hit * us,
        "uop_free_us": freed * us,
        "uop_const_new_us": const * us,
        "loop_overhead_us": loop * us,
        **{f"hash_{k}_us": v * us for k, v in hashes.items()},
    }


# ---------------------------------------------------------------- (b) graph_rewrite on index math


def index_graph(seed: int, n_exprs: int = 70) -> UOp:
    """~1000 nodes of the index math rangeify writes: flattened multi-indices, // and %, validity gates.

    RANGE ids come from `seed`, so each seed gives a graph of entirely new nodes."""
    rs = [UOp.range(b, seed * 16 + i) for i, b in enumerate((4, 3, 8, 6))]
    exprs = []
    for k in range(n_exprs):
        a, b, c = rs[k % 4], rs[(k + 1) % 4], rs[(k + 2) % 4]
        flat = (a * (k % 5 + 3) + b) * 6 + c + k  # row-major offset, shifted
        e = (flat // (k % 7 + 2)) % (k % 5 + 3) + (flat % 6) * 2 - 1  # unflatten-style div/mod
        valid = (e < 9) & (flat < 40 + k)
        exprs.append(valid.where(e, 0))
    return UOp(Ops.SINK, tuple(exprs))


def renamed(g: UOp, seed: int) -> UOp:
    """The same graph over new RANGEs: every node is new, the structure (and its normal form) unchanged."""
    ranges = [u for u in g.toposort() if u.op is Ops.RANGE]
    return g.substitute({r: UOp.range(r.src[0], seed * 16 + i) for i, r in enumerate(ranges)})


def bench_rewrite() -> dict[str, float]:
    seeds = iter(range(1, 1 << 30))
    n_in = len(index_graph(0).toposort())
    cold = median_time(lambda g: graph_rewrite(g, pm_symbolic), lambda: index_graph(next(seeds)))
    g = index_graph(next(seeds))
    out = graph_rewrite(g, pm_symbolic)
    n_out = len(out.toposort())
    warm = median_time(lambda _: graph_rewrite(g, pm_symbolic))
    # the pass machinery: every rule is tried on every node of fresh graphs already in normal form
    normal = median_time(lambda h: graph_rewrite(h, pm_symbolic), lambda: renamed(out, next(seeds)))
    return {
        "rewrite_nodes_in": n_in,
        "rewrite_nodes_out": n_out,
        "rewrite_pass_us_per_node": normal / n_out * 1e6,
        "rewrite_cold_us_per_node": cold / n_in * 1e6,
        "rewrite_warm_us_per_node": warm / n_in * 1e6,
    }


# ---------------------------------------------------------------- (c) scheduling a 200-op elementwise chain


def chain_consts(seed: int) -> list[float]:
    """The constants of the chain; a new seed gives a structurally new graph (new schedule, new kernel)."""
    return [float(np.float32(0.01 + seed * 1e-3 + i * 1e-5)) for i in range(N_OPS)]


def chain(x: Any, w: Any, consts: list[float]) -> Any:
    """N_OPS elementwise ops; the same code runs on unigrad Tensors, numpy arrays and torch tensors."""
    y = x
    for i, c in enumerate(consts):
        k = i % 5
        if k == 0:
            y = y + c
        elif k == 1:
            y = y * w
        elif k == 2:
            y = y - x
        elif k == 3:
            y = y * (1.0 - c)
        else:
            y = y + w
    return y


def inputs(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.uniform(0.5, 1.5, 4).astype(np.float32), rng.uniform(0.9, 1.1, 4).astype(np.float32)


def tensors(seed: int = 0) -> tuple[Tensor, Tensor]:
    """Fresh input buffers (new BUFFER UOps): realized 4-element tensors."""
    xn, wn = inputs(seed)
    return Tensor(xn, device=DEVICE).realize(), Tensor(wn, device=DEVICE).realize()


def bench_schedule() -> dict[str, float]:
    seeds = iter(range(1, 1 << 30))
    x, w = tensors()
    n_uops = len(chain(x, w, chain_consts(0)).uop.toposort())

    build = median_time(lambda xwc: chain(*xwc), lambda: (x, w, chain_consts(next(seeds))))

    def cold_setup() -> UOp:  # a structurally new graph: the schedule cache misses
        return chain(x, w, chain_consts(next(seeds))).uop

    cold = median_time(lambda u: rt.kernelize([u], DEVICE), cold_setup, runs=2 * RUNS + 1)

    consts = chain_consts(next(seeds))
    rt.kernelize([chain(x, w, consts).uop], DEVICE)  # fill the schedule cache for this structure

    def warm_setup() -> UOp:  # the same structure over new input buffers: the schedule cache hits
        return chain(*tensors(), consts).uop

    warm = median_time(lambda u: rt.kernelize([u], DEVICE), warm_setup, runs=2 * RUNS + 1)

    xs, ws = tensors()
    first = chain(xs, ws, consts).realize()  # compile (or load from the disk cache) once
    n_kernels = len(rt.stats.last_kernels)
    xn, wn = inputs()
    ref = chain(xn, wn, consts)
    if not np.allclose(first.numpy(), ref, rtol=1e-4, atol=1e-5):
        raise AssertionError(f"200-op chain disagrees with numpy: {first.numpy()} vs {ref}")
    realize_warm = median_time(lambda t: t.realize(), lambda: chain(*tensors(), consts), runs=2 * RUNS + 1)

    def cold_realize(t: Tensor) -> None:
        with Context(CACHEDIR=cachedir):  # an empty compile cache: the C compiler really runs
            t.realize()

    cachedir = tempfile.mkdtemp(prefix="unigrad-bench-")
    try:
        realize_cold = median_time(cold_realize, lambda: chain(x, w, chain_consts(next(seeds))), runs=3)
    finally:
        shutil.rmtree(cachedir, ignore_errors=True)

    np_time = median_time(lambda _: [chain(xn, wn, consts) for _ in range(REPS)]) / REPS
    out = {
        "chain_ops": N_OPS,
        "chain_uops": n_uops,
        "chain_kernels": n_kernels,
        "build_ms": build * 1e3,
        "kernelize_cold_ms": cold * 1e3,
        "kernelize_warm_ms": warm * 1e3,
        "realize_warm_ms": realize_warm * 1e3,
        "realize_cold_compile_ms": realize_cold * 1e3,
        "numpy_chain_ms": np_time * 1e3,
        "ratio_realize_warm_vs_numpy": realize_warm / np_time,
        "ratio_build_plus_realize_warm_vs_numpy": (build + realize_warm) / np_time,
    }
    try:
        import torch
    except ImportError:
        return out
    xt, wt = torch.from_numpy(xn), torch.from_numpy(wn)
    torch_time = median_time(lambda _: [chain(xt, wt, consts) for _ in range(REPS)]) / REPS
    out["torch_chain_ms"] = torch_time * 1e3
    out["ratio_realize_warm_vs_torch"] = realize_warm / torch_time
    return out


def profile_cold_kernelize(top: int = 25) -> str:
    """cProfile of one cold kernelize of the chain, sorted by cumulative and by own time."""
    x, w = tensors()
    u = chain(x, w, chain_consts(10_000)).uop
    prof = cProfile.Profile()
    prof.enable()
    rt.kernelize([u], DEVICE)
    prof.disable()
    buf = io.StringIO()
    stats = pstats.Stats(prof, stream=buf).strip_dirs()
    stats.sort_stats("cumulative").print_stats(top)
    stats.sort_stats("tottime").print_stats(top)
    return buf.getvalue()


# ---------------------------------------------------------------- report


def _row(name: str, value: float, unit: str, note: str = "") -> str:
    return f"  {name:<46} {value:>10.3f} {unit:<8} {note}"


def _target(value: float, target: float) -> str:
    return f"target < {target:g}: {'ok' if value < target else 'OVER'}"


def report(r: dict[str, float]) -> str:
    lines = [f"unigrad micro-benchmarks (median of {RUNS}+ runs)", "", "(a) hash-consed UOp construction"]
    lines += [
        _row("new node (ADD, sources exist)", r["uop_new_us"], "us/node", _target(r["uop_new_us"], TARGET_NEW_NODE_US)),
        _row(
            "new node, cyclic GC paused (in passes)",
            r["uop_new_no_gc_us"],
            "us/node",
            _target(r["uop_new_no_gc_us"], TARGET_NEW_NODE_US),
        ),
        _row("cache hit (rebuild an existing node)", r["uop_cache_hit_us"], "us/node"),
        _row("free (last reference dropped)", r["uop_free_us"], "us/node"),
        _row("new CONST (UOp.const, builds a ConstArg)", r["uop_const_new_us"], "us/node"),
        _row("loop overhead included above", r["loop_overhead_us"], "us/node"),
        _row("hash(object) (identity hash, for scale)", r["hash_object_us"], "us"),
        _row("hash(Ops member)", r["hash_ops_us"], "us"),
        _row("hash(DType)", r["hash_dtype_us"], "us"),
        _row("hash(ConstArg)", r["hash_constarg_us"], "us"),
        "",
        f"(b) graph_rewrite(pm_symbolic), {r['rewrite_nodes_in']} index-math nodes -> {r['rewrite_nodes_out']}",
    ]
    pass_rw = r["rewrite_pass_us_per_node"]
    lines += [
        _row("pass over fresh nodes in normal form", pass_rw, "us/node", _target(pass_rw, TARGET_REWRITE_US)),
        _row("simplifying fresh index math (all rewrites)", r["rewrite_cold_us_per_node"], "us/node"),
        _row("same graph again (memoized across calls)", r["rewrite_warm_us_per_node"], "us/node"),
        "",
        f"(c) {r['chain_ops']}-op elementwise chain on 4 elements ({r['chain_uops']} UOps, "
        f"{r['chain_kernels']} kernel)",
        _row("build the graph (Tensor API)", r["build_ms"], "ms"),
        _row("kernelize, cold schedule cache", r["kernelize_cold_ms"], "ms"),
        _row("kernelize, warm schedule cache", r["kernelize_warm_ms"], "ms"),
        _row("realize, warm schedule + compile caches", r["realize_warm_ms"], "ms"),
        _row("realize, new structure + C compile", r["realize_cold_compile_ms"], "ms"),
        _row("numpy, same chain", r["numpy_chain_ms"], "ms"),
        _row("ratio realize warm / numpy", r["ratio_realize_warm_vs_numpy"], "x"),
        _row("ratio (build + realize warm) / numpy", r["ratio_build_plus_realize_warm_vs_numpy"], "x"),
    ]
    if "torch_chain_ms" in r:
        lines += [
            _row("torch (CPU, eager), same chain", r["torch_chain_ms"], "ms"),
            _row("ratio realize warm / torch", r["ratio_realize_warm_vs_torch"], "x"),
        ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(prog="python -m bench micro", description=__doc__.splitlines()[0])
    parser.add_argument("--profile", action="store_true", help="also cProfile one cold kernelize of the chain")
    args = parser.parse_known_args(sys.argv[1:] if argv is None else argv)[0]  # others' options (--quick) pass
    t0 = time.perf_counter()
    results: dict[str, float] = {}
    results.update(bench_uop_build())
    results.update(bench_rewrite())
    results.update(bench_schedule())
    print(report(results))
    if args.profile:
        print("\ncProfile: one cold kernelize of the chain\n")
        print(profile_cold_kernelize())
    print(f"\n(total {time.perf_counter() - t0:.1f} s)")
    print("JSON: " + json.dumps({k: round(v, 4) if isinstance(v, float) else v for k, v in results.items()}))
    return results


if __name__ == "__main__":
    main()
