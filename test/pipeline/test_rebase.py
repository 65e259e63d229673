"""Rebased kernels (pipeline/rebase.py, runtime/offsets.py): kernels that differ only in where their read-only slices
start share one program, run from the offsets; results equal numpy's and REBASE=0's, eagerly and under TinyJit."""

import numpy as np
import pytest

from unigrad import Tensor, TinyJit, config, dtypes
from unigrad.ir.ops import Ops
from unigrad.pipeline.rebase import rebase
from unigrad.runtime import realize as rt


def rand(shape, seed=0, dtype=np.float32) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def recurrence(x: Tensor, w: Tensor, steps: int) -> Tensor:
    """h_t = tanh(x[t] @ w + h_{t-1}): one kernel per step (each reads the step before), the slices x[t] at offsets."""
    h = x[0] @ w
    outs = [h]
    for t in range(1, steps):
        h = (x[t] @ w + h).tanh()
        outs.append(h)
    return Tensor.stack(*outs)


def recurrence_ref(x: np.ndarray, w: np.ndarray, steps: int) -> np.ndarray:
    h = x[0] @ w
    outs = [h]
    for t in range(1, steps):
        h = np.tanh(x[t] @ w + h)
        outs.append(h)
    return np.stack(outs)


def programs_built(fn) -> tuple[int, object]:
    before = rt.stats.programs
    out = fn()
    return rt.stats.programs - before, out


@pytest.mark.parametrize("batch,hidden", [(1, 1), (4, 16), (5, 7), (20, 64)])
def test_time_steps_share_programs_and_match_numpy(batch, hidden):
    steps = 9
    x, w = rand((steps, batch, hidden)), rand((hidden, hidden), 1) * 0.3
    with config.Context(REBASE=0):
        built_off, off = programs_built(lambda: recurrence(Tensor(x), Tensor(w), steps).numpy())
    built_on, on = programs_built(lambda: recurrence(Tensor(x), Tensor(w), steps).numpy())
    ref = recurrence_ref(x.astype(np.float64), w.astype(np.float64), steps)
    np.testing.assert_allclose(on, ref, rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(on, off)  # the same kernels' arithmetic, only where the programs start reading
    if batch * hidden * 4 % 64 == 0:  # slices on 64-byte boundaries: the steps share one program
        assert built_on < built_off


@pytest.mark.parametrize("dtype", [np.float64, np.float16, np.int32, np.int8])
def test_slices_of_each_dtype(dtype):
    base = (np.arange(40 * 24) % 97 - 40).astype(dtype).reshape(40, 24)
    x = Tensor(base).realize()
    got = [((x[t * 4 : t * 4 + 4] * 2) + x[t * 4 + 1 : t * 4 + 5]).numpy() for t in range(9)]
    for t, g in enumerate(got):
        want = (base[t * 4 : t * 4 + 4] * 2 + base[t * 4 + 1 : t * 4 + 5]).astype(dtype)
        np.testing.assert_array_equal(g, want)


def test_views_with_gates_flips_and_empty():
    base = rand((12, 8))
    x = Tensor(base).realize()
    np.testing.assert_array_equal(x[5:9].flip(0).numpy(), base[5:9][::-1])
    np.testing.assert_array_equal(x[6:10].pad(((1, 2), (0, 1))).numpy(), np.pad(base[6:10], ((1, 2), (0, 1))))
    np.testing.assert_array_equal(x[8:8].numpy(), base[8:8])
    np.testing.assert_array_equal(x[11:12].contiguous().numpy(), base[11:12])
    np.testing.assert_array_equal(x[4:12:2, 1::3].numpy(), base[4:12:2, 1::3])  # strided, non-contiguous


def test_rebase_moves_a_slice_start_and_keeps_alignment():
    x = Tensor(rand((64, 16))).realize()
    with config.Context(MERGE_KERNELS=0):  # one graph (its constants as they are), a kernel per slice
        ys = rt.kernelize([(x[t * 8 : t * 8 + 8] + 1).uop for t in (1, 2, 3)] + [(x[3:5] * 2).uop], "CPU")
    calls = {u.src[0]: None for y in ys for u in y.toposort() if u.op is Ops.CALL}
    moved = [rebase(a) for a in calls]
    assert all(m is not None for m in moved)
    assert len({m.ast for m in moved[:3]}) == 1  # one program for the three
    assert sorted(m.offsets for m in moved) == [((1, 48),), ((1, 128),), ((1, 256),), ((1, 384),)]
    # z[21:29] starts 84 bytes in, off the allocator's 64-byte alignment: all of it moves and the PARAM says the
    # program reads it element-aligned, so z[5:13] shares that program (one for every start off the alignment)
    zn = rand((64,))
    z = Tensor(zn).realize()
    with config.Context(MERGE_KERNELS=0):
        ys = rt.kernelize([(z[start : start + 8] + 1).uop for start in (21, 5)], "CPU")
    rebased = [rebase(a) for a in {u.src[0]: None for y in ys for u in y.toposort() if u.op is Ops.CALL}]
    assert [m.offsets for m in rebased] == [((1, 21),), ((1, 5),)] and rebased[0].ast is rebased[1].ast
    assert {u.arg.align for u in rebased[0].ast.toposort() if u.op is Ops.PARAM} == {0, 4}
    for start in (5, 21, 16):  # computed from those offsets (16: aligned, its own program), vector loads and all
        np.testing.assert_array_equal((z[start : start + 8] + 1).numpy(), zn[start : start + 8] + 1)
    long = rand((300,))
    lt = Tensor(long).realize()
    for start in (3, 35, 16):  # whole vectors of 16 lanes read from 12 and 140 bytes in: unaligned accesses
        np.testing.assert_array_equal((lt[start : start + 256] * 2).numpy(), long[start : start + 256] * 2)


def test_a_written_buffer_is_not_moved():
    x = Tensor(rand((16, 8))).realize()
    x[8:12].assign(x[8:12] * 3).realize()
    calls = [c for c in rt.stats.last_kernels if c.op is Ops.SINK]
    for ast in calls:
        m = rebase(ast)
        stored = {u.src[0].src[0].arg.slot for u in ast.toposort() if u.op is Ops.STORE and u.src[0].op is Ops.INDEX}
        assert m is None or not {slot for slot, _ in m.offsets} & stored


def test_tinyjit_replays_kernels_read_from_offsets():
    w = Tensor(rand((16, 16), 1) * 0.3).realize()

    @TinyJit
    def f(x: Tensor) -> Tensor:
        return recurrence(x, w, 5).realize()

    for k in range(4):  # an input read from offsets: the view is made from each call's buffer
        xn = rand((5, 4, 16), 10 + k)
        np.testing.assert_allclose(
            f(Tensor(xn).realize()).numpy(), recurrence_ref(xn, w.numpy(), 5), rtol=1e-4, atol=1e-5
        )


def test_half_dtype_of_tensor_api():
    x = Tensor(rand((32, 16)), dtype=dtypes.float16).realize()
    got = [(x[t * 4 : t * 4 + 4].float() * 2).numpy() for t in range(6)]
    base = x.numpy().astype(np.float32)
    for t, g in enumerate(got):
        np.testing.assert_array_equal(g, base[t * 4 : t * 4 + 4] * 2)


def random_slices() -> list[Tensor]:
    """Slices of one random tensor, each computed by a kernel of its own: each draws its part of the random stream,
    counted from the slice's start (a constant per kernel, lifted into a Variable: one program for all)."""
    Tensor.manual_seed(7)
    r = Tensor.rand(5, 64)
    return [r[t] * 2.0 for t in range(1, 5)]


def test_lifted_random_counters_share_a_program_and_give_the_same_values():
    with config.Context(MERGE_KERNELS=0):
        ys = rt.kernelize([y.uop for y in random_slices()], "CPU")
        calls = list({u.src[0]: None for y in ys for u in y.toposort() if u.op is Ops.CALL})
        moved = [rebase(a) for a in calls]
        assert all(m is not None and m.values for m in moved)
        assert sorted(v for m in moved for _, v in m.values) == [64, 128, 192, 256]
        assert len({m.ast for m in moved}) == 1
        with config.Context(REBASE=0):
            off = [y.numpy() for y in random_slices()]
        on = [y.numpy() for y in random_slices()]
    for a, b in zip(on, off):
        np.testing.assert_array_equal(a, b)
    assert len({a.tobytes() for a in on}) == 4 and all(0 <= a.min() and a.max() < 2 for a in on)


def test_lstm_dropout_counters_are_lifted_where_the_offset_also_indexes_a_slice() -> None:
    """Between the layers of an nn.LSTM, step t's dropout counts from t * numel and reads step t's activations at
    the same offset: one index node, cast to the counter and used as a load's index. The cast's constant is lifted
    all the same (the load keeps it), so each time step's dropout kernels share one program: no more programs for 6
    steps as for 3 (an LSTM LM step compiled 34 copies of its gate-gradient matmul, 5.6 s of gcc)."""
    from unigrad import nn
    from unigrad.ir.uop import UOp
    from unigrad.pipeline.callify import callify
    from unigrad.pipeline.rangeify import rangeify

    def programs(steps: int) -> tuple[int, int]:
        Tensor.manual_seed(0)
        lstm = nn.LSTM(16, 16, 2, dropout=0.2)
        with Tensor.train():
            out, (h, c) = lstm(Tensor.randn(steps, 4, 16))
        (out.sum() + h.sum() + c.sum()).backward()
        fn = callify(UOp(Ops.SINK, tuple(p.grad.uop for p in lstm.parameters())))
        ks = [u.src[0] for u in rangeify(fn, "CPU").toposort() if u.op is Ops.CALL]
        hashing = [k for k in ks if any(u.op is Ops.THREEFRY for u in k.toposort())]
        moved = [rebase(k) for k in hashing]
        return len(hashing), len({k if m is None else m.ast for k, m in zip(hashing, moved)})

    (short, short_programs), (long, long_programs) = programs(3), programs(6)
    assert long > short and long_programs <= short_programs, (short, short_programs, long, long_programs)
