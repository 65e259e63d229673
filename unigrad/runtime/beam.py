"""BEAM search on a device: time candidate kernels for pipeline/optimize/search.py, and cache its choices.

beam_optimize(device, ast, target, lower): with BEAM=n, a kernel SINK -> the kernel with the opts a beam search
of width n chose for it on `device`. The chosen opts are cached on disk (CACHEDIR/beam, one JSON file per
kernel, device, target (threads, vector unit) and width), so another process reuses them without searching.

The search times candidates with a CandidateTimer: each round's candidates are lowered here (Python: one
thread, the UOp tables are not thread-safe), compiled in parallel by the device compiler (a thread pool; the C
compiler runs as a subprocess and caches its binaries on disk), then run one at a time on random inputs of the
kernel's buffer sizes. A progress line on stderr shows the round, the counts and the best time.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import pathlib
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from unigrad import config
from unigrad.helpers import write_atomic
from unigrad.dtype import DType, dtypes
from unigrad.ir.args import AddrSpace, AxisType, KernelInfo
from unigrad.ir.ops import Ops
from unigrad.ir.text import structure
from unigrad.ir.uop import UOp
from unigrad.pipeline.optimize import Opt, OptError, OptOps, Target, apply_opts, axes, optimize
from unigrad.pipeline.optimize.merge_axes import merge_output_axes
from unigrad.pipeline.optimize.opts import bound
from unigrad.pipeline.optimize.tensor_cores import TCArg
from unigrad.runtime import Buffer, Device, Lowered, disk_cache

CACHE_VERSION = 3  # bump when the search changes what it would choose or the entries' layout (3: sealed)
MIN_RUNS, MAX_RUNS = 3, 20  # runs of one candidate: the minimum counts
MIN_RUN_SECONDS = 2e-3  # keep running a fast candidate until its runs add up to this
HOPELESS = 3.0  # a first run this many times slower than the best so far is not run again


Lower = Callable[[str, UOp], Lowered]  # (device, optimized kernel SINK) -> Lowered: realize.lower


def searchable(ast: UOp) -> bool:
    """Whether a kernel can be timed on random inputs: constant sizes, no Variables, and no index computed from
    loaded data (random data there could address outside a buffer)."""
    nodes = ast.toposort()
    if any(r.op is Ops.RANGE and bound(r) is None for r in nodes):
        return False
    for u in nodes:
        if u.op is Ops.PARAM and (u.arg.name is not None or not isinstance(u.shape[0], int)):
            return False
        if u.op is Ops.INDEX and any(x.op is Ops.LOAD for s in u.src[1:] for x in s.toposort()):
            return False
    return True


def beam_optimize(device: str, ast: UOp, target: Target, lower: Lower) -> UOp:
    """With BEAM=n: a kernel SINK -> the kernel with the opts cached for it, else those a beam search of width n
    finds (then cached). Kernels with recorded opts, NOOPT=1, or kernels not searchable get optimize()'s opts."""
    info = ast.arg if isinstance(ast.arg, KernelInfo) else None
    if (info is not None and info.opts) or config.NOOPT.value or not axes(ast) or not searchable(ast):
        return optimize(ast, target)
    key = cache_key(device, ast, target, int(config.BEAM.value))
    opts = load_opts(key)
    if opts is not None:
        try:
            return apply_opts(merge_output_axes(ast), opts)  # found on the merged axes, as optimize() searches
        except OptError:  # a stale entry (the opts changed meaning): search again
            pass
    timer = CandidateTimer(device, ast, lower)
    best = optimize(ast, target, measure=timer)
    chosen = best.arg.opts if isinstance(best.arg, KernelInfo) else ()
    timer.finish(chosen)
    save_opts(key, chosen)
    return best


# ---- timing candidates


def random_inputs(device: str, ast: UOp, seed: int = 0) -> list[Buffer | None]:
    """A buffer of random values for each GLOBAL PARAM slot of the kernel (None for a slot it does not use)."""
    rng = np.random.default_rng(seed)
    params = {u.arg.slot: u for u in ast.toposort() if u.op is Ops.PARAM and u.arg.addrspace is AddrSpace.GLOBAL}
    bufs: list[Buffer | None] = [None] * (max(params) + 1 if params else 0)
    for slot, p in params.items():
        bufs[slot] = Buffer(device, p.shape[0], p.arg.dtype).copyin(_random_values(p.arg.dtype, p.shape[0], rng))
    return bufs


def _random_values(dtype: DType, size: int, rng: np.random.Generator) -> np.ndarray:
    if dtype is dtypes.bfloat16:  # raw bits: the top half of float32 values
        return (rng.standard_normal(size).astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    if dtype in dtypes.fp8s:  # raw codes of small finite values (sign, low exponents)
        return rng.integers(0, 0x40, size).astype(np.uint8) | (rng.integers(0, 2, size).astype(np.uint8) << 7)
    if dtype.is_float:
        return rng.standard_normal(size)
    if dtype is dtypes.bool:
        return rng.random(size) < 0.5
    return rng.integers(1, 8, size)  # small and nonzero: no division by zero


class CandidateTimer:
    """The `measure` of beam_search on a device: candidate kernels -> seconds per run (the minimum of a few runs;
    math.inf for one that failed to lower, compile or run). Shows a progress line on stderr."""

    def __init__(self, device: str, ast: UOp, lower: Lower):
        self.device, self.lower, self.dev = device, lower, Device[device]
        self.name = ast.arg.name if isinstance(ast.arg, KernelInfo) else "kernel"
        self.bufs = random_inputs(device, ast)
        self.best = math.inf
        self.gpu = Device[device].target.gpu  # its programs time themselves with device events (wait=True)
        self.rounds = self.timed = self.failed = 0
        self.start = time.perf_counter()

    def __call__(self, sinks: list[UOp]) -> list[float]:
        self.rounds += 1
        programs = self._compile(sinks)
        times = []
        for i, (sink, program) in enumerate(zip(sinks, programs, strict=True)):
            t = math.inf
            if program is not None:
                try:
                    t = self._time(program)
                except Exception as e:  # noqa: BLE001 - a candidate that fails to run is skipped
                    self._fail(sink, e)
            self.best = min(self.best, t)
            times.append(t)
            self.timed += 1
            self._progress(f"timed {i + 1}/{len(sinks)}")
        return times

    def _compile(self, sinks: list[UOp]) -> list[Any]:
        """Lower each candidate here, compile them all in parallel, and load the programs (None: failed)."""
        lowered: list[Lowered | None] = []
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
            futures = []
            for s in sinks:
                lw = None
                try:
                    lw = self.lower(self.device, s)
                except Exception as e:  # noqa: BLE001 - a candidate the pipeline cannot lower is skipped
                    self._fail(s, e)
                lowered.append(lw)
                futures.append(pool.submit(self.dev.compiler.compile, lw.src) if lw is not None else None)
                self._progress(f"lowered {len(lowered)}/{len(sinks)}")
            programs = []
            for s, lw, fut in zip(sinks, lowered, futures, strict=True):
                program = None
                if lw is not None and fut is not None:
                    try:
                        fut.result()  # the binary is in the compiler's cache: build() finds it there
                        program = self.dev.build(lw)  # type: ignore[attr-defined]
                    except Exception as e:  # noqa: BLE001 - a candidate that fails to compile is skipped
                        self._fail(s, e)
                programs.append(program)
                self._progress(f"compiled {len(programs)}/{len(sinks)}")
        return programs

    def _time(self, program: Any) -> float:
        runs: list[float] = []
        while len(runs) < MAX_RUNS:
            t0 = time.perf_counter()
            event_time = program(self.bufs, {}, wait=True) if self.gpu else program(self.bufs, {})
            runs.append(event_time if isinstance(event_time, float) else time.perf_counter() - t0)
            if runs[0] > HOPELESS * self.best:
                break
            if len(runs) >= MIN_RUNS and sum(runs) >= MIN_RUN_SECONDS:
                break
        return min(runs)

    def _fail(self, sink: UOp, err: Exception) -> None:
        self.failed += 1
        if config.DEBUG >= 2:
            opts = sink.arg.opts if isinstance(sink.arg, KernelInfo) else ()
            print(f"\nBEAM {self.name}: candidate {opts} failed: {err}", file=sys.stderr)

    def _progress(self, step: str) -> None:
        failed = f", {self.failed} failed" if self.failed else ""
        best = f"{self.best * 1e3:.3f} ms" if math.isfinite(self.best) else "-"
        line = f"BEAM={config.BEAM.value} {self.name}: round {self.rounds} {step}, best {best}{failed}"
        sys.stderr.write(f"\r{line:<100}")
        sys.stderr.flush()

    def finish(self, opts: tuple[Opt, ...]) -> None:
        """End the progress line with the outcome."""
        elapsed = time.perf_counter() - self.start
        line = f"BEAM={config.BEAM.value} {self.name}: {self.timed} candidates in {elapsed:.1f} s, best"
        line += f" {self.best * 1e3:.3f} ms with opts {list(opts)}"
        sys.stderr.write(f"\r{line:<100}\n")
        sys.stderr.flush()


# ---- the disk cache of chosen opts


def cache_key(device: str, ast: UOp, target: Target, width: int) -> str:
    """A stable name for (kernel, device, compiler and the machine it compiles for, target, width): the hash of the
    kernel's whole structure (not its repr, which shortens a long graph: two kernels differing early would share
    a name)."""
    compiler = Device[device].compiler
    machine = getattr(compiler, "machine", "")
    parts = (str(CACHE_VERSION), device, type(compiler).__name__, getattr(compiler, "cc", ""), machine, repr(target))
    text = "\0".join((*parts, str(width), structure(ast)))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _cache_path(key: str) -> pathlib.Path | None:
    if config.DISABLE_COMPILER_CACHE.value:
        return None
    return pathlib.Path(config.CACHEDIR.value) / "beam" / f"{key}.json"


def load_opts(key: str) -> tuple[Opt, ...] | None:
    """The opts cached under `key`, or None (no entry, an unreadable one, or the cache is off)."""
    path = _cache_path(key)
    if path is None or (data := disk_cache.read_sealed(path, key)) is None:
        return None
    try:
        return tuple(opt_from_json(o) for o in json.loads(data)["opts"])
    except (ValueError, KeyError, TypeError):  # sealed, but by a version that wrote opts another way
        return None


def save_opts(key: str, opts: tuple[Opt, ...]) -> None:
    path = _cache_path(key)
    if path is None:
        return
    data = json.dumps({"opts": [opt_to_json(o) for o in opts]}).encode()
    try:
        write_atomic(path, disk_cache.seal(key, data))
    except OSError:  # an unwritable cache: searched again next time, still correct
        pass


def opt_to_json(opt: Opt) -> list:
    """Opt -> [op, axis, arg], a SPLIT's arg as [k, axis type name, top], a TC's TCArg as [tc, pad]."""
    arg = opt.arg
    if opt.op is OptOps.SPLIT:
        arg = [opt.arg[0], opt.arg[1].name, opt.arg[2]]
    elif opt.op is OptOps.TC and isinstance(opt.arg, TCArg):
        arg = [opt.arg.tc, opt.arg.pad]
    return [opt.op.name, opt.axis, arg]


def opt_from_json(value: list) -> Opt:
    op, axis, arg = value
    if op == OptOps.SPLIT.name:
        arg = (int(arg[0]), AxisType[arg[1]], bool(arg[2]))
    elif op == OptOps.TC.name and arg is not None:
        arg = TCArg(arg[0], bool(arg[1]))
    return Opt(OptOps[op], axis, arg)
