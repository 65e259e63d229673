"""Register/Memory Plan: intermediates share GLOBAL buffers only across non-overlapping lifetimes."""

import numpy as np
import pytest

from unigrad import Tensor
from unigrad.pipeline.memplan import plan_memory
from unigrad.runtime import realize as rt


def _lifetimes(steps: list[list[str]]) -> dict[str, tuple[int, int]]:
    out: dict[str, tuple[int, int]] = {}
    for i, keys in enumerate(steps):
        for k in keys:
            out[k] = (out.get(k, (i, i))[0], i)
    return out


@pytest.mark.parametrize("seed", range(8))
def test_plan_never_shares_live_intermediates(seed):
    rng = np.random.default_rng(seed)
    names = [f"t{i}" for i in range(12)]
    steps = [list(rng.choice(names + ["input", "output"], size=rng.integers(1, 4), replace=False)) for _ in range(20)]
    kinds = {n: (("CPU", "float32" if rng.random() < 0.7 else "int32"), int(rng.integers(1, 50))) for n in names}
    used = {k for st in steps for k in st}
    inter = {n: kinds[n] for n in names if n in used}
    plan = plan_memory(steps, inter)
    assert set(plan.slot_of) == set(inter)  # every intermediate gets a shared buffer; "input"/"output" none
    life = _lifetimes(steps)
    for a in inter:
        s = plan.slot_of[a]
        kind, size = plan.shared[s]
        assert kind == inter[a][0] and size >= inter[a][1]
        for b in inter:
            if a < b and plan.slot_of[b] == s:  # one buffer: one lifetime ends before the other begins
                (fa, la), (fb, lb) = life[a], life[b]
                assert la < fb or lb < fa, (a, life[a], b, life[b])
    assert len(plan.shared) <= len(inter)


def test_plan_reads_and_writes_in_one_kernel_do_not_share():
    plan = plan_memory([["a"], ["b", "a"], ["c", "b"]], {k: (("CPU", "f"), 4) for k in "abc"})
    assert plan.slot_of["a"] != plan.slot_of["b"] and plan.slot_of["b"] != plan.slot_of["c"]
    assert plan.slot_of["a"] == plan.slot_of["c"]  # a is dead once b is written
    assert len(plan.shared) == 2


def test_plan_takes_the_smallest_free_buffer_that_fits():
    kinds = {"big": (("CPU", "f"), 100), "small": (("CPU", "f"), 10), "x": (("CPU", "f"), 8)}
    plan = plan_memory([["big"], ["small"], ["x"]], kinds)  # each one dead by the next kernel: one buffer
    assert len(plan.shared) == 1 and plan.shared[0][1] == 100
    plan = plan_memory([["big", "small"], ["x"]], {k: kinds[k] for k in ("big", "small", "x")})
    assert plan.slot_of["x"] == plan.slot_of["small"]  # both free: the smaller fits best
    other = plan_memory([["a"], ["b"]], {"a": (("CPU", "f"), 4), "b": (("CPU", "i"), 4)})
    assert other.slot_of["a"] != other.slot_of["b"]  # another dtype never shares


def _last_schedule(n_steps: int) -> rt.CachedSchedule:
    return next(cs for cs in reversed(rt._schedule_cache.values()) if cs.steps and len(cs.steps) == n_steps)


@pytest.mark.parametrize("shape", [(2,), (7, 3), (64, 33)])  # (1,): its flip is itself, the six merge
def test_realize_chain_runs_on_two_buffers(shape):
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    t = Tensor(x)
    ref = x.copy()
    for i in range(6):  # each reads the one before reversed: six kernels (at one index they would merge)
        t = (t.flip(0) * 1.5 + i).contiguous()
        ref = ref[::-1] * np.float32(1.5) + np.float32(i)
    np.testing.assert_allclose(t.numpy(), ref, rtol=1e-5)
    cs = _last_schedule(6)
    assert cs.memory is not None
    assert len(cs.memory.slot_of) == 5 and len(cs.memory.shared) == 2  # five temporaries, the sixth is the output


def test_realized_intermediate_that_is_an_output_keeps_its_buffer():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    a = (Tensor(x) * 2).contiguous()
    b = (a + 1).contiguous()
    c = (b * 3).contiguous()
    d = (c - 1).contiguous()
    Tensor.realize(a, d)  # a is returned: it must not be overwritten by a later temporary
    np.testing.assert_array_equal(a.numpy(), x * 2)
    np.testing.assert_array_equal(d.numpy(), ((x * 2 + 1) * 3) - 1)


def test_mlp_forward_backward_with_shared_intermediates_matches_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    xs = rng.standard_normal((16, 10)).astype(np.float32)
    ws = [rng.standard_normal((10, 10)).astype(np.float32) * 0.3 for _ in range(4)]
    uw = [Tensor(w, requires_grad=True) for w in ws]
    tw = [torch.tensor(w, requires_grad=True) for w in ws]
    h, th = Tensor(xs), torch.tensor(xs)
    for u, w in zip(uw, tw):
        h, th = (h @ u).tanh(), (th @ w).tanh()
    h.sum().backward()
    th.sum().backward()
    Tensor.realize(*(u.grad for u in uw))
    for u, w in zip(uw, tw):
        np.testing.assert_allclose(u.grad.numpy(), w.grad.numpy(), rtol=1e-4, atol=1e-5)
