"""BEAM search: the search keeps the fastest candidate and skips illegal ones (pipeline/optimize/search.py, with
a made-up cost instead of timings); on the CPU, BEAM=2 chooses opts that compute what numpy and the plain kernel
compute, shows a progress line on stderr, and caches its choice on disk (runtime/beam.py)."""

from __future__ import annotations

import json
import math
import pathlib

import numpy as np
import pytest

from unigrad import Context, Tensor
from unigrad.ir.args import AxisType, KernelInfo
from unigrad.ir.ops import Ops
from unigrad.ir.uop import UOp
from unigrad.pipeline.optimize import Opt, OptError, OptOps, Target, apply_opt, apply_opts, axes, optimize, search
from unigrad.pipeline.optimize.opts import bound
from unigrad.runtime import Buffer, beam, disk_cache
from unigrad.runtime import realize as rt


def avx512(threads: int) -> Target:
    """The target the heuristics' tile sizes below were chosen for: 16 floats per vector, 32 vector registers."""
    return Target(threads, 64, 32)


rng = np.random.default_rng(11)
U, R, T = AxisType.UPCAST, AxisType.UNROLL, AxisType.THREAD


def kernel_of(out: Tensor) -> tuple[UOp, list[Buffer]]:
    """The single CPU kernel computing `out` (its inputs realized) and its buffers, output first."""
    (k,) = rt.kernelize([out.uop], "CPU")
    (call,) = [u for u in k.toposort() if u.op is Ops.CALL]
    return call.src[0], [rt.buffer_of(b) for b in call.src[1:]]


def matmul() -> tuple[Tensor, np.ndarray]:
    a, b = rng.standard_normal((16, 32), np.float32), rng.standard_normal((32, 16), np.float32)
    return Tensor(a).realize() @ Tensor(b).realize(), a @ b


def reduction() -> tuple[Tensor, np.ndarray]:
    a = rng.standard_normal((8, 256), np.float32)
    return Tensor(a).realize().sum(axis=1), a.sum(axis=1)


KERNELS = {"matmul": matmul, "reduction": reduction}


def run(ck: rt.CompiledKernel, bufs: list[Buffer]) -> np.ndarray:
    for b in bufs:
        b.ensure_allocated()
    ck.program(bufs, {})
    return bufs[0].numpy().copy()


def copies(sink: UOp) -> int:
    return math.prod(bound(r) or 1 for r in axes(sink) if r.arg.axis_type in (U, R))


def made_up_cost(sinks: list[UOp]) -> list[float]:
    """A deterministic stand-in for timings: more UPCAST/UNROLL copies are faster."""
    return [1.0 / copies(s) for s in sinks]


@pytest.fixture
def cachedir(tmp_path: pathlib.Path):
    with Context(CACHEDIR=str(tmp_path), DISABLE_COMPILER_CACHE=0):
        yield tmp_path


# ---- the search (no device)


def test_search_keeps_the_fastest_and_replays() -> None:
    out, ref = matmul()
    ast, bufs = kernel_of(out)
    best = search.beam_search(ast, Target(1), 2, made_up_cost)
    opts = best.arg.opts
    assert opts and copies(best) > 1, opts
    assert copies(best) * len(best.toposort()) <= search.MAX_BODY  # bounded: quick to compile
    assert apply_opts(ast, opts) is best  # the recorded opts replay to the same kernel
    with Context(BEAM=0):
        got = run(rt.get_kernel("CPU", ast.replace(arg=KernelInfo(ast.arg.name, opts))), bufs)
    np.testing.assert_allclose(got, ref.reshape(-1), rtol=1e-5, atol=1e-5)


def test_search_without_a_gain_keeps_the_plain_kernel() -> None:
    ast, _ = kernel_of(reduction()[0])
    calls: list[int] = []

    def flat(sinks: list[UOp]) -> list[float]:
        calls.append(len(sinks))
        return [1.0] * len(sinks)

    assert search.beam_search(ast, Target(2), 2, flat) is ast
    assert len(calls) == 2  # the plain kernel, then one round that found nothing faster


def test_illegal_candidates_are_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    ast, _ = kernel_of(reduction()[0])  # axes: 0 = output (8), 1 = reduce (256)
    legal = Opt(OptOps.SPLIT, 1, (4, R, False))
    illegal = [
        Opt(OptOps.SPLIT, 1, (4, U, False)),  # UPCAST of a reduce axis
        Opt(OptOps.SPLIT, 0, (3, U, False)),  # 8 is no multiple of 3
        Opt(OptOps.SPLIT, 5, (2, U, False)),  # no axis 5
        Opt(OptOps.SWAP, 0, 1),  # an output axis with a reduce axis
    ]
    for opt in illegal:
        with pytest.raises(OptError):
            apply_opt(ast, opt)
    monkeypatch.setattr(search, "actions", lambda threads, gpu=False: (*illegal, legal))
    measured: list[UOp] = []

    def measure(sinks: list[UOp]) -> list[float]:
        measured.extend(sinks)
        return made_up_cost(sinks)

    best = search.beam_search(ast, Target(1), 2, measure)
    assert best.arg.opts[0] == legal
    assert [s.arg.opts for s in measured[:2]] == [(), (legal,)]  # the plain kernel, then the one legal action
    assert all(s.arg.opts[-1] == legal for s in measured[1:])
    # the real action space: most actions are illegal for a given kernel, the candidates are the legal ones
    assert 0 < len(search.candidates(ast, Target(2))) < len(search.actions(2))


def test_optimize_needs_a_measure_to_search() -> None:
    ast, _ = kernel_of(matmul()[0])
    with Context(BEAM=2):
        assert optimize(ast, avx512(1)) is optimize(
            ast.replace(arg=KernelInfo(ast.arg.name)), avx512(1)
        )  # heuristics, no timer
        assert optimize(ast, avx512(1), made_up_cost) is search.beam_search(ast, Target(1), 2, made_up_cost)


# ---- on the CPU


@pytest.mark.parametrize("name", list(KERNELS))
def test_beam_matches_numpy_and_plain_kernel(name: str, cachedir: pathlib.Path, capsys: pytest.CaptureFixture) -> None:
    out, ref = KERNELS[name]()
    ast, bufs = kernel_of(out)
    with Context(NOOPT=1):
        plain = run(rt.get_kernel("CPU", ast), bufs)
    with Context(BEAM=2):
        ck = rt.get_kernel("CPU", ast)
    err = capsys.readouterr().err
    assert f"\rBEAM=2 {ast.arg.name}: round 1" in err and "candidates in" in err, err  # the progress line
    got = run(ck, bufs)
    np.testing.assert_allclose(got, ref.reshape(-1), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got, plain, rtol=1e-4, atol=1e-4)
    assert len(list((cachedir / "beam").glob("*.json"))) == 1


def test_candidates_that_fail_are_timed_as_infinite(cachedir: pathlib.Path, capsys: pytest.CaptureFixture) -> None:
    ast, _ = kernel_of(reduction()[0])

    def lower(device: str, sink: UOp) -> beam.Lowered:
        if sink.arg.opts:
            raise RuntimeError("cannot lower")
        return rt.lower(device, sink)

    with Context(BEAM=2):
        timer = beam.CandidateTimer("CPU", ast, lower)
        times = timer([ast, apply_opt(ast, Opt(OptOps.SPLIT, 1, (4, R, False)))])
    assert math.isfinite(times[0]) and times[0] > 0 and times[1] == math.inf
    assert "1 failed" in capsys.readouterr().err


def test_disk_cache_is_reused(cachedir: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ast, _ = kernel_of(matmul()[0])
    calls: list[int] = []

    def fake_timer(self: beam.CandidateTimer, sinks: list[UOp]) -> list[float]:
        calls.append(len(sinks))
        return made_up_cost(sinks)

    monkeypatch.setattr(beam.CandidateTimer, "__call__", fake_timer)
    with Context(BEAM=2):
        first = beam.beam_optimize("CPU", ast, avx512(2), rt.lower)
        searched = len(calls)
        assert searched > 1 and first.arg.opts
        (entry,) = (cachedir / "beam").glob("*.json")
        data = disk_cache.unseal(entry.stem, entry.read_bytes())  # JSON, then its seal
        assert data is not None and [beam.opt_from_json(o) for o in json.loads(data)["opts"]] == list(first.arg.opts)
        assert beam.beam_optimize("CPU", ast, avx512(2), rt.lower) is first  # from the cache: no search
        assert len(calls) == searched
        beam.beam_optimize("CPU", ast, avx512(1), rt.lower)  # another thread count is another entry
        assert len(calls) > searched
        with Context(DISABLE_COMPILER_CACHE=1):  # the cache off: searched again, nothing written
            before = len(calls)
            beam.beam_optimize("CPU", ast, avx512(2), rt.lower)
            assert len(calls) > before
    assert len(list((cachedir / "beam").glob("*.json"))) == 2


def test_opts_round_trip_through_json() -> None:
    opts = [Opt(OptOps.SPLIT, 0, (4, T, True)), Opt(OptOps.PADTO, 1, 16), Opt(OptOps.SWAP, 0, 2), Opt(OptOps.NOLOCALS)]
    assert [beam.opt_from_json(json.loads(json.dumps(beam.opt_to_json(o)))) for o in opts] == opts


def test_kernels_with_symbolic_sizes_are_not_searched() -> None:
    from unigrad import Variable

    ast, _ = kernel_of(reduction()[0])
    r = axes(ast)[1]
    symbolic = ast.substitute({r: UOp.range(Variable("n", 1, 256), r.arg.id, r.arg.axis_type)})
    assert beam.searchable(ast) and not beam.searchable(symbolic)
    with Context(BEAM=2):  # not timed: the hand-coded opts (none apply to a symbolic reduce)
        assert beam.beam_optimize("CPU", symbolic, avx512(2), rt.lower) is optimize(symbolic, avx512(2))
