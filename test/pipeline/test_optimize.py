"""OptOps: every opt gives the unoptimized kernel's results on random inputs, on CPU and PYTHON; illegal opts
are refused with an error naming the opt; the thread pool gives bit-identical results; heuristics apply."""

from __future__ import annotations

import ctypes
import threading

import numpy as np
import torch
import pytest

from unigrad import Context, Tensor
from unigrad.ir.args import AxisType, KernelInfo
from unigrad.ir.ops import Ops
from unigrad.ir.uop import UOp
from unigrad.pipeline.optimize import Opt, OptError, OptOps, Target, apply_opt, axes, optimize
from unigrad.pipeline.optimize.heuristic import CHUNK_WORK, MAX_TILE_BODY, _kernel_body, hand_coded_opts
from unigrad.runtime import Buffer, Device
from unigrad.runtime import realize as rt
from unigrad.runtime.cpu_pool import n_threads, pool
from unigrad.runtime.ops_cpu import CCompiler, host_vector_unit, vector_unit


def avx512(threads: int) -> Target:
    """The target the heuristics' tile sizes below were chosen for: 16 floats per vector, 32 vector registers."""
    return Target(threads, 64, 32)


DEVICES = ("CPU", "PYTHON")
U, R, L, T = AxisType.UPCAST, AxisType.UNROLL, AxisType.LOOP, AxisType.THREAD
rng = np.random.default_rng(7)


def kernel_of(out: Tensor, device: str) -> tuple[UOp, list[Buffer]]:
    """The single kernel computing `out` (its inputs are realized) and its buffers, output first."""
    (k,) = rt.kernelize([out.uop], device)
    calls = [u for u in k.toposort() if u.op is Ops.CALL]
    assert len(calls) == 1, f"expected one kernel, got {len(calls)}"
    return calls[0].src[0], [rt.buffer_of(b) for b in calls[0].src[1:]]


def run(ast: UOp, bufs: list[Buffer], opts: tuple[Opt, ...] | None, device: str) -> np.ndarray:
    """Run the kernel with exactly `opts` (None: the heuristics, for the device's threads) and read its output."""
    if opts:
        ast = ast.replace(arg=KernelInfo(ast.arg.name, tuple(opts)))
    with Context(NOOPT=int(opts == ())):  # () is the plain kernel, not "let the heuristics choose"
        ck = rt.get_kernel(device, ast)
    for b in bufs:
        b.ensure_allocated()
    ck.program(bufs, {})
    return bufs[0].numpy().copy()


def realized(*shape: int, device: str) -> tuple[Tensor, np.ndarray]:
    a = rng.standard_normal(shape).astype(np.float32)
    return Tensor(a, device=device).realize(), a


def elementwise(device: str) -> tuple[Tensor, np.ndarray]:
    (a, an), (b, bn) = realized(12, 16, device=device), realized(12, 16, device=device)
    return (a * b + a).relu(), np.maximum(an * bn + an, 0)


def reduction(device: str) -> tuple[Tensor, np.ndarray]:
    a, an = realized(6, 32, device=device)
    return a.sum(axis=1), an.sum(axis=1)


def matmul(device: str) -> tuple[Tensor, np.ndarray]:
    (a, an), (b, bn) = realized(8, 16, device=device), realized(16, 12, device=device)
    return a @ b, an @ bn


def full_sum(device: str) -> tuple[Tensor, np.ndarray]:
    a, an = realized(4, 6, 8, device=device)
    return a.sum(axis=(1, 2)), an.sum(axis=(1, 2))


KERNELS = {"elementwise": elementwise, "reduction": reduction, "matmul": matmul, "full_sum": full_sum}

# (kernel, opts): every OptOp and every legal split kind, alone and composed
LEGAL = [
    ("elementwise", (Opt(OptOps.SPLIT, 1, (4, U, False)),)),
    ("elementwise", (Opt(OptOps.SPLIT, 0, (3, L, True)),)),
    ("elementwise", (Opt(OptOps.SPLIT, 0, (2, T, True)),)),
    ("elementwise", (Opt(OptOps.SPLIT, 0, (4, T, True)), Opt(OptOps.SPLIT, 1, (8, U, False)))),
    ("elementwise", (Opt(OptOps.PADTO, 1, 24),)),
    ("elementwise", (Opt(OptOps.PADTO, 0, 8), Opt(OptOps.SPLIT, 0, (8, U, False)))),
    ("elementwise", (Opt(OptOps.SWAP, 0, 1),)),
    ("elementwise", (Opt(OptOps.NOLOCALS),)),
    ("reduction", (Opt(OptOps.SPLIT, 1, (8, R, False)),)),
    ("reduction", (Opt(OptOps.SPLIT, 1, (4, AxisType.GROUP_REDUCE, False)),)),
    ("reduction", (Opt(OptOps.SPLIT, 1, (4, AxisType.REDUCE, True)),)),
    ("reduction", (Opt(OptOps.PADTO, 1, 40),)),
    ("reduction", (Opt(OptOps.SPLIT, 0, (2, U, False)), Opt(OptOps.SPLIT, 1, (4, R, False)))),
    ("reduction", (Opt(OptOps.SPLIT, 0, (3, T, True)),)),
    ("matmul", (Opt(OptOps.SPLIT, 0, (4, U, False)), Opt(OptOps.SPLIT, 1, (4, U, False)))),
    ("matmul", (Opt(OptOps.SPLIT, 2, (4, R, False)), Opt(OptOps.SPLIT, 0, (2, T, True)))),
    ("matmul", (Opt(OptOps.PADTO, 1, 16), Opt(OptOps.SPLIT, 1, (16, U, False)))),
    ("matmul", (Opt(OptOps.SWAP, 0, 1), Opt(OptOps.SPLIT, 0, (2, U, False)))),
    ("full_sum", (Opt(OptOps.SWAP, 1, 2),)),
    ("full_sum", (Opt(OptOps.SPLIT, 2, (2, R, False)), Opt(OptOps.SPLIT, 1, (3, R, False)))),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name,opts", LEGAL, ids=[f"{k}-{i}" for i, (k, _) in enumerate(LEGAL)])
def test_opt_matches_unoptimized(name: str, opts: tuple[Opt, ...], device: str) -> None:
    out, ref = KERNELS[name](device)
    ast, bufs = kernel_of(out, device)
    plain = run(ast, bufs, (), device)
    np.testing.assert_allclose(plain, ref.reshape(-1), rtol=1e-5, atol=1e-5)
    got = run(ast, bufs, opts, device)
    if name == "elementwise" or all(o.op is not OptOps.SPLIT or o.arg[1] is not R for o in opts):
        if name != "full_sum" and name != "reduction":
            np.testing.assert_array_equal(got, plain)  # no reduce order changed: bit-identical
    np.testing.assert_allclose(got, plain, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "name,opt,msg",
    [
        ("elementwise", Opt(OptOps.SPLIT, 5, (2, U, False)), "axis must be an int in"),
        ("elementwise", Opt(OptOps.SPLIT, 1, (5, U, False)), "not a multiple of 5"),
        ("elementwise", Opt(OptOps.SPLIT, 1, (0, U, False)), "positive int"),
        ("elementwise", Opt(OptOps.SPLIT, 1, (4, R, False)), "UNROLL axis splits from"),
        ("reduction", Opt(OptOps.SPLIT, 1, (4, U, False)), "UPCAST axis splits from"),
        ("elementwise", Opt(OptOps.SPLIT, 0, (2, T, False)), "top must be True"),
        ("elementwise", Opt(OptOps.SPLIT, 1, (2, T, True)), "not an outermost loop"),
        ("elementwise", Opt(OptOps.SPLIT, 1, (4, U, True)), "top must be False"),
        ("elementwise", Opt(OptOps.SPLIT, 1, (4, "UPCAST", False)), "cannot split into"),
        ("elementwise", Opt(OptOps.SPLIT, 1, 4), "SPLIT takes arg"),
        ("elementwise", Opt(OptOps.PADTO, 1, 0), "positive int multiple"),
        ("elementwise", Opt(OptOps.SWAP, 0, 0), "another axis"),
        ("matmul", Opt(OptOps.SWAP, 0, 2), "only swaps with another reduce axis"),
        ("elementwise", Opt(OptOps.TC, 0, None), "no tensor cores"),
        ("elementwise", Opt(OptOps.NOLOCALS, 0, None), "takes no axis"),
    ],
)
def test_illegal_opt_refused(name: str, opt: Opt, msg: str) -> None:
    out, _ = KERNELS[name]("CPU")
    ast, _ = kernel_of(out, "CPU")
    with pytest.raises(OptError, match=msg) as e:
        apply_opt(ast, opt)
    assert repr(opt) in str(e.value)  # the error names the opt


def test_refusals_that_depend_on_earlier_opts() -> None:
    out, _ = elementwise("CPU")
    ast, _ = kernel_of(out, "CPU")
    k = apply_opt(ast, Opt(OptOps.NOLOCALS))
    with pytest.raises(OptError, match="NOLOCALS was applied"):
        apply_opt(k, Opt(OptOps.SPLIT, 0, (2, AxisType.LOCAL, False)))
    k = apply_opt(ast, Opt(OptOps.SPLIT, 0, (2, T, True)))
    with pytest.raises(OptError, match="already has a THREAD axis"):
        apply_opt(k, Opt(OptOps.SPLIT, 0, (2, T, True)))
    k = apply_opt(ast, Opt(OptOps.SPLIT, 1, (16, U, False)))
    with pytest.raises(OptError, match="multiply to"):
        big = Tensor(np.ones((128, 128), np.float32)).realize() + 1
        kb, _ = kernel_of(big, "CPU")
        kb = apply_opt(kb, Opt(OptOps.SPLIT, 1, (128, U, False)))
        apply_opt(kb, Opt(OptOps.SPLIT, 0, (16, U, False)))


def test_split_records_opts_and_new_axis_is_last() -> None:
    out, _ = matmul("CPU")
    ast, _ = kernel_of(out, "CPU")
    n = len(axes(ast))
    opt = Opt(OptOps.SPLIT, 1, (4, U, False))
    k = apply_opt(ast, opt)
    assert k.arg.opts == (opt,)
    rs = axes(k)
    assert len(rs) == n + 1 and rs[-1].arg.axis_type is U and rs[-1].src[0].arg.value == 4
    assert rs[1].src[0].arg.value == 3  # 12 / 4, kept in place


def test_opts_print_and_replay_at_debug_3(capsys: pytest.CaptureFixture[str]) -> None:
    out, ref = matmul("CPU")
    ast, bufs = kernel_of(out, "CPU")
    opts = (Opt(OptOps.SPLIT, 0, (2, U, False)),)
    with Context(DEBUG=3):
        got = run(ast, bufs, opts, "CPU")
    printed = capsys.readouterr().out
    assert "Opt(OptOps.SPLIT, 0, (2, AxisType.UPCAST, False))" in printed
    np.testing.assert_allclose(got, ref.reshape(-1), rtol=1e-5, atol=1e-5)


def test_opts_are_part_of_the_cache_key() -> None:
    out, _ = matmul("CPU")
    ast, bufs = kernel_of(out, "CPU")
    a = rt.get_kernel("CPU", ast.replace(arg=KernelInfo(ast.arg.name, (Opt(OptOps.SPLIT, 0, (2, U, False)),))))
    b = rt.get_kernel("CPU", ast.replace(arg=KernelInfo(ast.arg.name, (Opt(OptOps.SPLIT, 0, (4, U, False)),))))
    assert a is not b and a.source != b.source


# ---------------------------------------------------------------- the thread pool


@pytest.mark.parametrize("threads", [2, 3, 4, 8])
def test_thread_pool_bit_identical(threads: int) -> None:
    """Elementwise and matmul kernels split over a THREAD axis equal the one-thread kernel bit for bit,
    with more chunks than cores too."""
    (a, an), (b, bn) = realized(24, 40, device="CPU"), realized(40, 16, device="CPU")
    for out in (a @ b, (a * 2 + 1).exp()):
        ast, bufs = kernel_of(out, "CPU")
        one = run(ast, bufs, (), "CPU")
        many = run(ast, bufs, (Opt(OptOps.SPLIT, 0, (threads, T, True)),), "CPU")
        np.testing.assert_array_equal(many, one)
    np.testing.assert_allclose((a @ b).numpy(), an @ bn, rtol=1e-4, atol=1e-4)


def test_thread_pool_many_dispatches() -> None:
    a, an = realized(64, 64, device="CPU")
    ast, bufs = kernel_of(a * 3 - 1, "CPU")
    opts = (Opt(OptOps.SPLIT, 0, (2, T, True)), Opt(OptOps.SPLIT, 1, (16, U, False)))
    for _ in range(200):
        np.testing.assert_array_equal(run(ast, bufs, opts, "CPU"), (an * 3 - 1).reshape(-1))


COUNT_SRC = r"""
void count_entry(void **bufs, long long *vars, long long core) {
  __atomic_fetch_add((int *)bufs[0] + core, 1, __ATOMIC_RELAXED);
}
"""


@pytest.mark.parametrize("chunks", [0, 1, 2, 3, 5, 32, 33, 1000])
def test_thread_pool_runs_every_chunk_once(chunks: int) -> None:
    """pool_run runs each chunk exactly once, however many chunks there are against threads (each thread takes
    its own share first, then what is left of the others'), on every one of many back-to-back dispatches."""
    lib = ctypes.CDLL(str(CCompiler().compile_to_path(COUNT_SRC)))
    fn = ctypes.cast(lib.count_entry, ctypes.c_void_p)
    counts = np.zeros(max(chunks, 1), dtype=np.int32)
    bufs = (ctypes.c_void_p * 1)(counts.ctypes.data)
    vals = (ctypes.c_longlong * 1)(0)
    p = pool(2)
    for _ in range(50):
        p.pool_run(fn, bufs, vals, chunks)
    np.testing.assert_array_equal(counts[:chunks], np.full(chunks, 50, dtype=np.int32))


def test_thread_pool_serializes_callers_on_other_threads() -> None:
    """Python threads dispatching at once (ctypes drops the GIL) each get their own job run in full: pool_run
    holds one job at a time, so no caller's chunks run another caller's entry or buffers."""
    lib = ctypes.CDLL(str(CCompiler().compile_to_path(COUNT_SRC)))
    fn = ctypes.cast(lib.count_entry, ctypes.c_void_p)
    p = pool(2)
    chunks, reps, callers = 37, 300, 4
    counts = [np.zeros(chunks, dtype=np.int32) for _ in range(callers)]

    def dispatch(c: np.ndarray) -> None:
        bufs = (ctypes.c_void_p * 1)(c.ctypes.data)
        vals = (ctypes.c_longlong * 1)(0)
        for _ in range(reps):
            p.pool_run(fn, bufs, vals, chunks)

    threads = [threading.Thread(target=dispatch, args=(c,)) for c in counts]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "pool_run hung with concurrent callers"
    for c in counts:
        np.testing.assert_array_equal(c, np.full(chunks, reps, dtype=np.int32))


def test_thread_pool_wake_between_and_during_jobs() -> None:
    """pool_wake (a realize calls it before scheduling, Device.wake) makes sleeping workers poll again; woken with no
    job, they go back to sleep; wakes from another thread while jobs run neither lose nor repeat a chunk nor hang,
    and a realize wakes its device."""
    from unigrad.runtime import cpu_pool

    lib = ctypes.CDLL(str(CCompiler().compile_to_path(COUNT_SRC)))
    fn = ctypes.cast(lib.count_entry, ctypes.c_void_p)
    p = pool(2)
    chunks, reps = 13, 300
    counts = np.zeros(chunks, dtype=np.int32)
    bufs = (ctypes.c_void_p * 1)(counts.ctypes.data)
    vals = (ctypes.c_longlong * 1)(0)
    p.pool_spin(0)  # workers sleep at once: each job and each wake goes through the condition variable
    try:
        stop = threading.Event()

        def waker() -> None:
            while not stop.is_set():
                cpu_pool.wake()

        w = threading.Thread(target=waker)
        w.start()
        for i in range(reps):
            if i % 7 == 0:
                cpu_pool.wake()
            p.pool_run(fn, bufs, vals, chunks)
        stop.set()
        w.join(timeout=60)
        assert not w.is_alive()
    finally:
        from unigrad import config

        p.pool_spin(max(0, int(config.POOL_SPIN_US.value)) * 1000)
    np.testing.assert_array_equal(counts, np.full(chunks, reps, dtype=np.int32))
    woken = []
    dev = Device["CPU"]
    inner = type(dev).wake
    type(dev).wake = lambda self: woken.append(self)  # type: ignore[method-assign]
    try:
        a, an = realized(8, 8, device="CPU")
        np.testing.assert_array_equal((a + 1).numpy(), an + 1)
    finally:
        type(dev).wake = inner  # type: ignore[method-assign]
    assert woken == [dev]


def test_threads_knob() -> None:
    with Context(THREADS=1):
        assert n_threads() == 1
    with Context(THREADS=3):
        assert n_threads() == 3


# ---------------------------------------------------------------- heuristics


def test_heuristics_tile_and_thread_a_matmul() -> None:
    (a, an), (b, bn) = realized(128, 64, device="CPU"), realized(64, 96, device="CPU")
    ast, bufs = kernel_of(a @ b, "CPU")
    opts = hand_coded_opts(ast, avx512(2))
    kinds = [o.arg[1] for o in opts]
    assert kinds.count(U) == 2 and T in kinds
    np.testing.assert_allclose(run(ast, bufs, None, "CPU"), (an @ bn).reshape(-1), rtol=1e-4, atol=1e-4)
    assert hand_coded_opts(ast, avx512(1)) == [o for o in opts if o.arg[1] is not T]


@pytest.mark.parametrize("rows,padded", [(66, 72), (70, 72), (130, 136), (11, None), (12, None), (64, None)])
def test_heuristics_pad_matmul_rows_to_a_whole_tile(rows: int, padded: int | None) -> None:
    """Rows with no divisor of a full register tile (66 tokens = 2 x 3 x 11) are padded to one when that adds at most
    an eighth of the work (a 66-row matmul in 2-row tiles ran at a third of 64 rows' speed); the padded rows are
    computed, not stored: the results equal numpy's."""
    (a, an), (b, bn) = realized(rows, 96, device="CPU"), realized(96, 64, device="CPU")
    ast, bufs = kernel_of(a @ b, "CPU")
    opts = hand_coded_opts(ast, avx512(2))
    pads = [o for o in opts if o.op is OptOps.PADTO]
    if padded is None:
        assert pads == []
    else:
        assert [(o.axis, o.arg) for o in pads] == [(0, 8)]
        assert opts[opts.index(pads[0]) + 1].arg[:2] == (8, U)  # then the 8-row tile
    np.testing.assert_allclose(run(ast, bufs, None, "CPU"), (an @ bn).reshape(-1), rtol=1e-4, atol=1e-4)


def test_heuristics_split_accumulators_of_a_sum() -> None:
    a, an = realized(1 << 16, device="CPU")
    ast, bufs = kernel_of(a.sum(), "CPU")
    opts = hand_coded_opts(ast, avx512(2))
    assert [o.arg[1] for o in opts] == [R]
    np.testing.assert_allclose(run(ast, bufs, None, "CPU"), [an.sum(dtype=np.float64)], rtol=1e-4)


def test_heuristics_fewer_accumulators_for_a_big_scalar_body() -> None:
    """A reduction over a padded row (gated loads: the kernel stays scalar) keeps SPLIT_ACC accumulators for a small
    body, and fewer for a big one (a copy of the body per accumulator: 40 ops with sines made 10k lines of C and
    7 s of gcc); the results equal numpy's."""
    x, xn = realized(8, 254, device="CPU")
    small = (x.pad(((0, 0), (1, 1))) * 2).sum(1)
    ast, bufs = kernel_of(small, "CPU")
    assert [(o.arg[0], o.arg[1]) for o in hand_coded_opts(ast, avx512(2))] == [(32, R)]
    np.testing.assert_allclose(
        run(ast, bufs, None, "CPU"), (np.pad(xn, ((0, 0), (1, 1))) * 2).sum(1), rtol=1e-5, atol=1e-5
    )
    y, yn = x.pad(((0, 0), (1, 1))), np.pad(xn, ((0, 0), (1, 1)))
    for i in range(40):
        y, yn = (
            ((y * 1.0001 + 0.5).sin(), np.sin(yn * 1.0001 + 0.5))
            if i % 10 == 0
            else (y * 1.0001 + 0.01, yn * 1.0001 + 0.01)
        )
    ast, bufs = kernel_of(y.sum(1), "CPU")
    (opt,) = hand_coded_opts(ast, avx512(2))
    assert opt.arg[1] is R and 1 < opt.arg[0] < 32
    np.testing.assert_allclose(run(ast, bufs, None, "CPU"), yn.sum(1), rtol=1e-4, atol=1e-3)


def test_heuristics_chunk_a_long_reduction() -> None:
    """A reduction's THREAD axis takes chunks of about CHUNK_WORK iterations (the pool hands them out as cores
    free up), capped by its outer loop: few outputs with long reduces get one chunk per output (a count larger than
    the loop used to leave the kernel on one core, or search for a divisor for minutes)."""
    a, an = realized(64, 1 << 14, device="CPU")  # the partial sums of a long sum: 64 rows of 16k
    ast, bufs = kernel_of(a.sum(axis=1), "CPU")
    (thread,) = [o for o in hand_coded_opts(ast, avx512(2)) if o.arg[1] is T]
    assert thread.arg[0] == 64 * (1 << 14) // CHUNK_WORK
    np.testing.assert_allclose(run(ast, bufs, None, "CPU"), an.sum(axis=1), rtol=1e-4, atol=1e-4)
    b, bn = realized(1 << 20, 3, device="CPU")  # 3 outputs, each a strided reduce of 1M: 6 chunks wanted
    ast, bufs = kernel_of(b.sum(axis=0), "CPU")
    (thread,) = [o for o in hand_coded_opts(ast, avx512(2)) if o.arg[1] is T]
    assert thread.arg[0] == 3
    np.testing.assert_allclose(run(ast, bufs, None, "CPU"), bn.sum(axis=0), rtol=1e-4, atol=1e-3)


def test_heuristics_sibling_column_sums_take_lanes() -> None:
    """A bias gradient summed in chunks: sum_k (g_k * x_k).sum(0) over g_k of 97 x 208, five REDUCEs side by side in
    one kernel. Its work is the sum of their loops, not their product (which made one THREAD chunk per output,
    each a scalar walk down a column); the lanes go on the 208 columns (x_k's loads do not vary along them: one
    scalar for every lane); the result equals numpy's."""
    gs = [rng.standard_normal((97, 208)) for _ in range(5)]
    xs = [rng.standard_normal((97, 3)) for _ in range(5)]
    total = None
    for t, (g, x) in enumerate(zip(gs, xs)):  # x[:, t]: a step's column of the input, as an RNN reads it
        term = (Tensor(g, device="CPU").realize() * Tensor(x, device="CPU").realize()[:, t % 3 : t % 3 + 1]).sum(0)
        total = term if total is None else total + term
    ast, bufs = kernel_of(total, "CPU")
    assert sum(u.op is Ops.REDUCE for u in ast.toposort()) == 5
    opts = hand_coded_opts(ast, Target(2, 64, 32, masked_tails=True))
    assert [(o.op, o.axis, o.arg) for o in opts] == [(OptOps.SPLIT, 0, (16, U, False))], opts
    want = sum((g * x[:, t % 3 : t % 3 + 1]).sum(0) for t, (g, x) in enumerate(zip(gs, xs)))
    np.testing.assert_allclose(run(ast, bufs, tuple(opts), "CPU"), want, rtol=1e-10, atol=1e-10)


def test_heuristics_thread_costly_cell_math_over_prime_rows() -> None:
    """An LSTMCell's cell math in float64: 97 x 51 elements reading a gate slice of a 97 x 204 buffer, with
    transcendentals. Each transcendental counts COSTLY_ITERATIONS more iterations toward MIN_THREAD_WORK, so the
    kernel takes two THREAD chunks; 97 rows divide into none, so they are padded to 98 (the extra row is computed
    from the last row's loads and not stored). The same kernel without transcendentals stays on one thread. Both
    equal numpy's."""
    gn, cn = rng.standard_normal((97, 204)), rng.standard_normal((97, 51))
    g, c = Tensor(gn, device="CPU").realize(), Tensor(cn, device="CPU").realize()
    target = Target(2, 64, 32, masked_tails=True)
    costly = g[:, 153:].sigmoid() * c.tanh() + g[:, :51].exp()
    ast, bufs = kernel_of(costly, "CPU")
    opts = hand_coded_opts(ast, target)
    assert [(o.op, o.axis, o.arg) for o in opts][-2:] == [(OptOps.PADTO, 0, 2), (OptOps.SPLIT, 0, (2, T, True))], opts
    want = 1 / (1 + np.exp(-gn[:, 153:])) * np.tanh(cn) + np.exp(gn[:, :51])
    np.testing.assert_allclose(run(ast, bufs, tuple(opts), "CPU"), want.reshape(-1), rtol=1e-12, atol=1e-12)
    cheap = g[:, 153:] * c + g[:, :51]
    ast, bufs = kernel_of(cheap, "CPU")
    assert not any(o.arg[1] is T for o in hand_coded_opts(ast, target) if o.op is OptOps.SPLIT)
    np.testing.assert_array_equal(run(ast, bufs, None, "CPU"), (gn[:, 153:] * cn + gn[:, :51]).reshape(-1))


def _upcast_sizes(ast: UOp, opts: list[Opt]) -> dict[int, tuple[int, AxisType]]:
    """{original size of the split axis: (amount, kind)} for the tile splits of `opts`."""
    sizes = {i: r.src[0].arg.value for i, r in enumerate(axes(ast))}
    return {sizes[o.axis]: (o.arg[0], o.arg[1]) for o in opts if o.op is OptOps.SPLIT and o.arg[1] in (U, R)}


def test_heuristics_tile_a_convolution_by_reuse() -> None:
    """out[n, co, oh, ow]: the weight load does not vary along ow, the input load does not vary along co, so the tile
    is co x ow (vector lanes on ow), not oh x ow; the result equals numpy's."""
    (x, xn), (w, wn) = realized(2, 8, 10, 34, device="CPU"), realized(24, 8, 3, 3, device="CPU")
    ast, bufs = kernel_of(x.conv2d(w), "CPU")  # no padding: one kernel over n 2, co 24, oh 8, ow 32
    opts = hand_coded_opts(ast, avx512(2))
    tile = _upcast_sizes(ast, opts)
    assert tile[24][1] is U and tile[32] == (16, U) and 8 not in tile, opts
    want = np.einsum("ncpqhw,ochw->nopq", np.lib.stride_tricks.sliding_window_view(xn, (3, 3), axis=(2, 3)), wn)
    np.testing.assert_allclose(run(ast, bufs, None, "CPU").reshape(want.shape), want, rtol=1e-4, atol=1e-4)


def test_heuristics_vector_lanes_on_a_reduce_axis() -> None:
    """dw[co, k] = sum_p g[co, p] x[k, p] with k of size 3 (a kernel width): the innermost output takes no vector,
    so the lanes go on the reduce axis p, contiguous in both loads (split accumulators), and co takes a small tile;
    the result equals numpy's."""
    (g, gn), (x, xn) = realized(8, 4096, device="CPU"), realized(3, 4096, device="CPU")
    ast, bufs = kernel_of((g.reshape(8, 1, 4096) * x.reshape(1, 3, 4096)).sum(2), "CPU")
    tile = _upcast_sizes(ast, hand_coded_opts(ast, avx512(2)))
    assert tile == {4096: (16, R), 8: (4, U)}
    np.testing.assert_allclose(run(ast, bufs, None, "CPU"), (gn @ xn.T).reshape(-1), rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("rows,padded", [(66, 68), (64, None)])
def test_heuristics_transposed_weight_takes_lanes_on_the_reduce_axis(rows: int, padded: int | None) -> None:
    """x @ W.T (nn.Linear, W stored (out, in)): W's loads are contiguous along the reduce axis and a row apart along
    the outputs, so the lanes go on the reduce axis (split accumulators) and not on the outputs, where each vector
    would gather 16 elements from 16 rows (MiniLM's 66 x 1536 @ 1536 x 384: 0.63 -> 0.33 ms); the rows take a 4-row
    tile, padded to one where they have no such divisor (66 tokens -> 68); the result equals numpy's."""
    (x, xn), (w, wn) = realized(rows, 384, device="CPU"), realized(96, 384, device="CPU")
    ast, bufs = kernel_of(x @ w.T, "CPU")
    opts = hand_coded_opts(ast, avx512(2))
    tile = _upcast_sizes(ast, opts)
    assert tile[384] == (16, R) and tile[96] == (4, U) and tile[rows] == (4, U), opts
    pads = [(o.axis, o.arg) for o in opts if o.op is OptOps.PADTO]
    assert pads == ([] if padded is None else [(0, 4)])
    np.testing.assert_allclose(run(ast, bufs, None, "CPU"), (xn @ wn.T).reshape(-1), rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("target", [Target(2, 64, 32), Target(2, 32, 16)], ids=["avx512", "avx2"])
def test_heuristics_reduce_lanes_over_merged_heads(target: Target) -> None:
    """Attention's output projection: context (B, H, T, D) transposed to (B, T, H * D) @ W.T reads the reduce axis
    through r // D and r % D (the heads apart in memory): contiguous within each head's D = 32, so the lanes still go
    on the reduce axis (the UNROLL split's runs are contiguous) and the outputs take a tile, where they took the
    lanes and read W 16 rows apart (MiniLM's r_66_384_384 260 -> 140 us); the result equals numpy's."""
    (c, cn), (w, wn) = realized(2, 3, 5, 32, device="CPU"), realized(40, 96, device="CPU")
    ast, bufs = kernel_of(c.transpose(1, 2).reshape(2, 5, 96) @ w.T, "CPU")
    opts = hand_coded_opts(ast, target)
    assert any(kind is R and n >= target.vector_bytes // 4 for n, kind in _upcast_sizes(ast, opts).values()), opts
    want = cn.transpose(0, 2, 1, 3).reshape(2, 5, 96) @ wn.T
    np.testing.assert_allclose(run(ast, bufs, None, "CPU"), want.reshape(-1), rtol=1e-4, atol=1e-4)


def test_heuristics_pad_an_output_no_lanes_divide() -> None:
    """g @ W_hh of an LSTMCell in float64 (97 x 204 @ 204 x 51): no lane count divides 51 or 97 and no scalar tile
    fits, so on a target with masked tails the outputs are padded to whole vectors (51 -> 56 in 8 lanes, a row tile
    of 8 over 97 -> 104) instead of a scalar dot product per output (580 -> 118 us); without masked tails nothing is
    padded; the results equal numpy's."""
    an, bn = rng.standard_normal((97, 204)), rng.standard_normal((204, 51))
    ast, bufs = kernel_of(Tensor(an, device="CPU").realize() @ Tensor(bn, device="CPU").realize(), "CPU")
    opts = hand_coded_opts(ast, Target(2, 64, 32, masked_tails=True))
    assert [(o.axis, o.arg) for o in opts if o.op is OptOps.PADTO] == [(1, 8), (0, 8)]
    assert _upcast_sizes(ast, opts) == {51: (8, U), 97: (8, U)}, opts
    np.testing.assert_allclose(run(ast, bufs, tuple(opts), "CPU"), (an @ bn).reshape(-1), rtol=1e-10, atol=1e-10)
    assert not any(o.op is OptOps.PADTO for o in hand_coded_opts(ast, Target(2, 64, 32)))


def test_padded_gradient_tile_is_vector_code() -> None:
    """p + g.T @ h in float64 (an LSTMCell's weight gradient added to the previous chunks': 204 x 51 outputs): both
    output axes are padded (51 -> 56 for the lanes, 204 -> 208 for the 8-row tile), so g's loads are gated along
    its rows and h's along its lanes, and the row gate joins the column gate in the lanes that can be past both.
    The kernel is vector code (it stayed scalar: 143 kB of C, 290 us a call), and equals numpy."""
    from unigrad.pipeline.optimize import optimize
    from unigrad.runtime import realize as rt

    gn, hn, pn = rng.standard_normal((97, 204)), rng.standard_normal((97, 51)), rng.standard_normal((204, 51))
    g, h, p = (Tensor(a, device="CPU").realize() for a in (gn, hn, pn))
    ast, bufs = kernel_of(p + g.T @ h, "CPU")
    target = Target(2, 64, 32, masked_tails=True)
    opts = hand_coded_opts(ast, target)
    assert [(o.axis, o.arg) for o in opts if o.op is OptOps.PADTO] == [(1, 8), (0, 8)], opts
    src = rt.lower("CPU", optimize(ast, target)).src
    assert "float64_v" in src, src[:2000]
    np.testing.assert_allclose(run(ast, bufs, tuple(opts), "CPU"), (pn + gn.T @ hn).reshape(-1), rtol=1e-10, atol=1e-9)


# AVX-512, AVX2, SSE, NEON, and the rows of their matmul tile (16 floats wide)
TARGETS = [(Target(2, 64, 32), 8), (Target(2, 32, 16), 4), (Target(2, 16, 16), 2), (Target(1, 16, 32), 4)]


@pytest.mark.parametrize("target,rows", TARGETS, ids=["avx512", "avx2", "sse", "neon"])
def test_heuristics_fit_the_target_vector_unit(target: Target, rows: int) -> None:
    """The register tile's accumulators fit in half the target's vector registers and the elementwise lanes fill
    one of its vectors: a matmul on AVX-512 tiles 8 x 16 floats (8 of 32 zmm), on AVX2 4 x 16 (8 of 16 ymm: 8 x 16
    spilled and ran at half the speed); the kernels, compiled for this machine whatever the target, equal numpy."""
    (a, an), (b, bn) = realized(64, 96, device="CPU"), realized(96, 128, device="CPU")
    ast, bufs = kernel_of(a @ b, "CPU")
    opts = hand_coded_opts(ast, target)
    tile = _upcast_sizes(ast, opts)
    lanes = target.vector_bytes // 4
    registers = tile[64][0] * tile[128][0] // lanes
    assert tile == {64: (rows, U), 128: (16, U)} and registers <= target.vector_registers // 2, opts
    np.testing.assert_allclose(run(ast, bufs, tuple(opts), "CPU"), (an @ bn).reshape(-1), rtol=1e-5, atol=1e-5)
    (x, xn), (y, yn) = realized(4, 1024, device="CPU"), realized(4, 1024, device="CPU")
    ast, bufs = kernel_of(x * y + 1, "CPU")
    opts = hand_coded_opts(ast, target)
    assert [(o.arg[0], o.arg[1]) for o in opts] == [(lanes, U)]
    np.testing.assert_array_equal(run(ast, bufs, tuple(opts), "CPU"), (xn * yn + 1).reshape(-1))


@pytest.mark.parametrize("target,lanes", [(Target(2, 64, 32), 16), (Target(2, 32, 16), 8)], ids=["avx512", "avx2"])
def test_heuristics_reduce_rows_together(target: Target, lanes: int) -> None:
    """A short row reduction (a row max, a matrix-vector product) reduces SPLIT_ACC // lanes rows at once, one
    vector of split accumulators each; a long row sum keeps 32 accumulators per row (fewer would add more values
    into each: more rounding), as does a sum of exps (compute-bound: measured slower in rows). Results equal
    numpy's."""
    rows = 32 // lanes
    (x, xn), (v, vn) = realized(64, 128, device="CPU"), realized(128, device="CPU")
    for out, want in ((x.max(1), xn.max(1)), (x @ v, xn @ vn)):
        ast, bufs = kernel_of(out, "CPU")
        opts = hand_coded_opts(ast, target)
        assert _upcast_sizes(ast, opts) == {128: (lanes, R), 64: (rows, U)}, opts
        np.testing.assert_allclose(run(ast, bufs, tuple(opts), "CPU"), want, rtol=1e-5, atol=1e-5)
    (y, yn) = realized(8, 8192, device="CPU")
    for out in (y.sum(1), y.exp().sum(1)):
        ast, _ = kernel_of(out, "CPU")
        assert _upcast_sizes(ast, hand_coded_opts(ast, target)) == {8192: (32, R)}
    ast, _ = kernel_of(y.max(1), "CPU")  # a max is exact in any order: rows at any length
    assert _upcast_sizes(ast, hand_coded_opts(ast, target)) == {8192: (lanes, R), 8: (rows, U)}


@pytest.mark.parametrize("shape,kernel", [((8, 3, 20, 20), (16, 3, 5, 5)), ((8, 4, 12, 12), (16, 4, 3, 3))])
def test_heuristics_scalar_tile_when_rows_take_no_whole_vector(shape, kernel) -> None:
    """A convolution whose output rows take no whole vector (16- and 10-wide rows on AVX-512) and whose reduce
    axes take no lanes either is tiled over its output channels (8, sharing each input load) and its batch (4,
    sharing each weight load), not left untiled or given partial vectors; results equal torch's."""
    (x, xn), (w, wn) = realized(*shape, device="CPU"), realized(*kernel, device="CPU")
    ast, bufs = kernel_of(x.conv2d(w), "CPU")
    opts = hand_coded_opts(ast, avx512(2))
    assert _upcast_sizes(ast, opts) == {kernel[0]: (8, U), shape[0]: (4, U)}, opts
    want = torch.nn.functional.conv2d(torch.from_numpy(xn), torch.from_numpy(wn)).numpy()
    np.testing.assert_allclose(run(ast, bufs, tuple(opts), "CPU"), want.reshape(-1), rtol=1e-4, atol=1e-4)


def test_heuristics_do_not_tile_a_reduction_without_reuse() -> None:
    """A row reduction over a 3-D tensor (layernorm's mean, and its variance reading the mean) has two output axes
    but no load a register tile would reuse: it is reduced along its contiguous rows (split accumulators), not
    tiled; a matmul over the same axes is tiled. Results equal numpy's."""
    x, xn = realized(4, 16, 64, device="CPU")
    mean = x.mean(-1, keepdim=True).realize()  # a buffer: the variance is then one kernel reading it
    for out, want in (
        (x.sum(-1), xn.sum(-1)),
        (((x - mean) ** 2).sum(-1), ((xn - xn.mean(-1, keepdims=True)) ** 2).sum(-1)),
    ):
        ast, bufs = kernel_of(out, "CPU")
        opts = hand_coded_opts(ast, avx512(2))
        assert R in [o.arg[1] for o in opts] and [o.arg[1] for o in opts].count(U) <= 1, opts
        np.testing.assert_allclose(run(ast, bufs, tuple(opts), "CPU"), want.reshape(-1), rtol=1e-4, atol=1e-4)
    (a, an), (b, bn) = realized(4, 16, 64, device="CPU"), realized(4, 64, 32, device="CPU")
    ast, bufs = kernel_of(a @ b, "CPU")
    opts = hand_coded_opts(ast, avx512(2))
    assert [o.arg[1] for o in opts].count(U) == 2
    np.testing.assert_allclose(run(ast, bufs, tuple(opts), "CPU"), (an @ bn).reshape(-1), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("target,lanes", [(Target(2, 64, 32), 16), (Target(2, 32, 16), 8)], ids=["avx512", "avx2"])
def test_heuristics_column_reduction_takes_output_lanes(target: Target, lanes: int) -> None:
    """x.sum(0) / x.max(0) of a row-major matrix (the loads contiguous in the output axis, a row apart along the
    reduce axis): vector lanes on the output axis, up to 8 vectors, the reduce loop kept whole (one accumulator per
    output, numpy's order) instead of split accumulators loading one scalar per row; results equal numpy's. An
    output axis no vector divides keeps the split accumulators."""
    x, xn = realized(96, 16 * lanes, device="CPU")
    for out, want in ((x.sum(0), xn.sum(0)), (x.max(0), xn.max(0)), ((x * 2 + 1).sum(0), (xn * 2 + 1).sum(0))):
        ast, bufs = kernel_of(out, "CPU")
        opts = hand_coded_opts(ast, target)
        assert _upcast_sizes(ast, opts) == {16 * lanes: (8 * lanes, U)}, opts
        np.testing.assert_allclose(run(ast, bufs, tuple(opts), "CPU"), want, rtol=1e-5, atol=1e-5)
    y, yn = realized(256, 2 * lanes, device="CPU")
    ast, bufs = kernel_of(y.sum(0), "CPU")
    opts = hand_coded_opts(ast, target)
    assert _upcast_sizes(ast, opts) == {2 * lanes: (lanes, U)}, opts
    np.testing.assert_allclose(run(ast, bufs, tuple(opts), "CPU"), yn.sum(0), rtol=1e-5, atol=1e-5)
    z, zn = realized(256, 5, device="CPU")
    ast, bufs = kernel_of(z.sum(0), "CPU")
    assert _upcast_sizes(ast, hand_coded_opts(ast, target)) == {256: (32, R)}
    np.testing.assert_allclose(run(ast, bufs, None, "CPU"), zn.sum(0), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "flags,machine,unit",
    [
        ("fpu sse sse2 avx avx2 fma avx512f avx512bw", "x86_64", (64, 32)),
        ("fpu sse sse2 avx avx2 fma", "x86_64", (32, 16)),
        ("fpu sse sse2 avx", "x86_64", (32, 16)),
        ("fpu sse sse2", "x86_64", (16, 16)),
        ("fp asimd evtstrm aes", "aarch64", (16, 32)),
        ("", "riscv64", (16, 16)),
    ],
)
def test_vector_unit_from_cpu_flags(flags: str, machine: str, unit: tuple[int, int]) -> None:
    assert vector_unit(frozenset(flags.split()), machine) == unit


def test_cpu_device_targets_this_machine() -> None:
    """The CPU device's target and renderer use this machine's vector width (what -march=native code has), and the
    compile cache key names the machine: a binary compiled for one CPU is not reused on another."""
    vector_bytes, registers = host_vector_unit()
    dev = Device["CPU"]
    assert dev.target == Target(n_threads(), vector_bytes, registers, masked_tails=True)
    assert dev.renderer.vector_bytes == vector_bytes
    cc = CCompiler()
    key = cc.key("int f(void) { return 0; }")
    cc.machine = "another cpu"
    assert cc.key("int f(void) { return 0; }") != key


def test_heuristics_block_a_big_matmul() -> None:
    """B's panel over PANEL_BYTES: the vector axis's outer part is cut into blocks, the block loop swapped outermost
    (inside the THREAD axis); without threads too; results equal numpy's (a size-limited matmul through the same
    kernel shape, with the blocking forced by a small panel limit)."""
    from unigrad.pipeline.optimize import heuristic

    (a, an), (b, bn) = realized(64, 256, device="CPU"), realized(256, 128, device="CPU")
    ast, bufs = kernel_of(a @ b, "CPU")
    assert not any(o.op is OptOps.SWAP for o in hand_coded_opts(ast, avx512(2)))  # 128 KiB: no blocking
    old = heuristic.PANEL_BYTES
    heuristic.PANEL_BYTES = 32 << 10
    try:
        for threads in (2, 1):
            opts = hand_coded_opts(ast, avx512(threads))
            assert opts[-1].op is OptOps.SWAP and opts[-2].arg[1:] == (L, True), opts
            ast_o = ast.replace(arg=KernelInfo(ast.arg.name, tuple(opts)))
            with Context(THREADS=threads):
                got = run(ast_o, bufs, tuple(opts), "CPU")
                np.testing.assert_allclose(got, (an @ bn).reshape(-1), rtol=1e-4, atol=1e-4)
    finally:
        heuristic.PANEL_BYTES = old


def test_heuristics_transpose_vectorizes_along_the_loads() -> None:
    """(4, 64, 32, 32) -> (4, 32, 32, 64): the store is contiguous along the channels but the load reads them 1024
    apart, so the lanes go along the loads' contiguous axis (width 32), beside TRANSPOSE_ROWS channels (each store
    line gets that many elements at once); the copy is exact, and a 2-D transpose too."""
    a, an = realized(4, 64, 32, 32, device="CPU")
    ast, bufs = kernel_of(a.permute(0, 2, 3, 1).contiguous(), "CPU")
    assert _upcast_sizes(ast, hand_coded_opts(ast, avx512(2))) == {32: (16, U), 64: (4, U)}
    np.testing.assert_array_equal(run(ast, bufs, None, "CPU"), an.transpose(0, 2, 3, 1).reshape(-1))
    for n, m in ((256, 333), (1000, 64)):
        b, bn = realized(n, m, device="CPU")
        np.testing.assert_array_equal(b.T.contiguous().numpy(), bn.T)


def test_noopt_keeps_the_plain_kernel() -> None:
    (a, _), (b, _) = realized(128, 64, device="CPU"), realized(64, 96, device="CPU")
    ast, _ = kernel_of(a @ b, "CPU")
    with Context(NOOPT=1):
        assert optimize(ast, avx512(2)) is ast


def test_small_kernels_get_vectors_and_tiles_but_no_threads() -> None:
    """Vector lanes and register tiles pay at any size; a THREAD axis only from MIN_THREAD_WORK iterations (a
    dispatch to the pool costs more than a small kernel). A 4 x 128 x 32 elementwise kernel and a 4 x 128 by 32
    matmul (a decode step's attention scores) were plain scalar loops."""
    (a, an), (b, bn) = realized(4, 128, 32, device="CPU"), realized(4, 128, 32, device="CPU")
    ast, bufs = kernel_of((a * b + a).relu(), "CPU")
    opts = hand_coded_opts(ast, avx512(2))
    assert [(o.arg[0], o.arg[1]) for o in opts] == [(16, U)]
    np.testing.assert_allclose(run(ast, bufs, None, "CPU"), np.maximum(an * bn + an, 0).reshape(-1))
    (q, qn), (k, kn) = realized(4, 1, 32, device="CPU"), realized(4, 128, 32, device="CPU")
    ast, bufs = kernel_of(q @ k.transpose(1, 2), "CPU")
    kinds = [o.arg[1] for o in hand_coded_opts(ast, avx512(2))]
    assert U in kinds and T not in kinds
    np.testing.assert_allclose(
        run(ast, bufs, None, "CPU"), (qn @ kn.transpose(0, 2, 1)).reshape(-1), rtol=1e-5, atol=1e-5
    )
    out, _ = elementwise("CPU")  # 12 x 16: one vector per row is already the whole row
    ast, _ = kernel_of(out, "CPU")
    assert hand_coded_opts(ast, avx512(2)) == []


@pytest.mark.parametrize("device", DEVICES)
def test_heuristic_results_through_tensor_api(device: str) -> None:
    n = 64 if device == "CPU" else 16
    (a, an), (b, bn) = realized(n, n, device=device), realized(n, n, device=device)
    np.testing.assert_allclose((a @ b).numpy(), an @ bn, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(a.sum().numpy(), an.sum(), rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(a.max(axis=0).numpy(), an.max(axis=0))


def test_expand_copies_are_the_substituted_bodies():
    """expand._copies walks the body once and rebuilds only what depends on the upcast ranges: each copy is the
    node body.substitute({ranges: constants}) gives (hash-consing: the very same node)."""
    from unigrad.pipeline import expand

    a, b = Tensor.empty(64, 48).realize(), Tensor.empty(48, 32).realize()
    (a @ b).realize()
    ast = next(k for k in rt.stats.last_kernels if k.op is Ops.SINK)
    tiled = apply_opt(
        apply_opt(ast, Opt(OptOps.SPLIT, 0, (4, AxisType.UPCAST, False))),
        Opt(OptOps.SPLIT, 1, (8, AxisType.UPCAST, False)),
    )
    ranges = [u for u in tiled.toposort() if u.op is Ops.RANGE and u.arg.axis_type is AxisType.UPCAST]
    assert len(ranges) == 2
    copies = expand._copies(tiled, ranges)
    assert len(copies) == 32 and len(set(copies)) == 32
    assert all(c is tiled.substitute(m) for c, m in zip(copies, expand._combos(ranges)))


def test_heuristics_bound_the_copies_of_a_big_body() -> None:
    """An UPCAST copies the whole kernel body: a register tile counts the math after the reduce too (an LSTM's gate
    backward under h @ W_hh, 2.5k ops tiled 32x, was 4.4 MB of C and 36-76 s of gcc), and an elementwise kernel
    that stays scalar (a bool load: no vector selection) takes lanes only while its copies stay under SCALAR_BODY.
    A small body keeps its tile and its lanes; the results equal numpy's."""
    (a, an), (w, wn) = realized(8, 64, device="CPU"), realized(64, 64, device="CPU")
    y, yn = a @ w, an @ wn
    for _ in range(12):
        y, yn = (y * 0.5).sigmoid().tanh(), np.tanh(1 / (1 + np.exp(-yn * 0.5)))
    ast, bufs = kernel_of(y, "CPU")
    copies = [o.arg[0] for o in hand_coded_opts(ast, avx512(2)) if o.arg[1] is U]
    assert np.prod(copies) * _kernel_body(ast) <= MAX_TILE_BODY and np.prod(copies) < 16, copies
    np.testing.assert_allclose(run(ast, bufs, None, "CPU"), yn.reshape(-1), rtol=1e-4, atol=1e-5)
    ast, _ = kernel_of((a @ w).sigmoid(), "CPU")
    assert np.prod([o.arg[0] for o in hand_coded_opts(ast, avx512(2)) if o.arg[1] is U]) >= 16
    m = Tensor(rng.random((8, 64)) > 0.5).realize()
    z, zn = a, an
    for _ in range(6):
        z, zn = m.where(z.sin(), z.tanh()), np.where(m.numpy(), np.sin(zn), np.tanh(zn))
    ast, bufs = kernel_of(z, "CPU")
    assert any(u.op is Ops.LOAD and u.dtype.is_bool for u in ast.toposort())
    assert [o for o in hand_coded_opts(ast, avx512(2)) if o.arg[1] is U] == []
    np.testing.assert_allclose(run(ast, bufs, None, "CPU"), zn.reshape(-1), rtol=1e-4, atol=1e-5)
    ast, _ = kernel_of(m.where(a, 0.0), "CPU")
    assert [o.arg[1] for o in hand_coded_opts(ast, avx512(2))] == [U]
    ast, bufs = kernel_of(z.sum(1), "CPU")  # a reduction of that body: fewer split accumulators, as a gated one
    (opt,) = hand_coded_opts(ast, avx512(2))
    assert opt.arg[1] is R and opt.arg[0] < 32
    np.testing.assert_allclose(run(ast, bufs, None, "CPU"), zn.sum(1), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("width", [256, 51, 1])
def test_pieces_gated_by_an_outer_axis_are_vector_code(width: int) -> None:
    """The gradient of 35 slices x[t] of a (35, 20, width) tensor is a sum of 35 pads: each element's 35 loads are
    gated by the time step alone, one bool for all lanes of the innermost axis, so the kernel still takes vector
    lanes (it stayed scalar: 35 scalar gated loads per element, an LSTM language model's 1.7 ms kernel). An odd
    width stays scalar (padded lanes would join their gate to the step's, which isel leaves as scalar copies), as
    does a width of 1. The result equals numpy's, and the gradient through slicing equals torch's."""
    pieces = [realized(1, 20, width, device="CPU") for _ in range(35)]
    total = pieces[0][0].pad(((0, 34), None, None))
    for t, (p, _) in enumerate(pieces[1:], 1):
        total = total + p.pad(((t, 34 - t), None, None))
    ast, bufs = kernel_of(total, "CPU")
    target = Device["CPU"].target  # (this machine's vector width: the source is rendered for it)
    lanes = target.vector_bytes // 4
    opts = hand_coded_opts(ast, target)
    src = rt.lower("CPU", optimize(ast, target)).src
    if width % lanes == 0:
        assert _upcast_sizes(ast, opts) == {width: (lanes, U)}, opts
        assert f"float32_v{lanes}" in src, src[:2000]
    else:
        assert _upcast_sizes(ast, opts) == {} and "float32_v" not in src, opts
    np.testing.assert_array_equal(run(ast, bufs, tuple(opts), "CPU"), np.concatenate([a for _, a in pieces]).ravel())
    x, xn = realized(35, 20, width, device="CPU")
    w, wn = realized(35, 20, width, device="CPU")
    xt = torch.tensor(xn, requires_grad=True)
    sum(((xt[t] * torch.tensor(wn[t])).tanh()).sum() for t in range(35)).backward()
    x.requires_grad_()
    sum(((x[t] * w[t]).tanh()).sum() for t in range(35)).backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-5)
