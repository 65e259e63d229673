"""KV-cache attention with a symbolic prefix length under TinyJit: one capture, one compile, every position.

Each step embeds one new token, writes its key and value into row `pos` of fixed (L, D) caches (in place: an
assign through the one-row slice, a kernel that writes just that row) and attends over rows [0, pos]. The prefix length is a Variable bound per step, so the kernels are compiled once for every length
and the jitted step replays them with the new value. Prints each step's error against numpy and the timings.

  python examples/kv_cache.py
"""

from __future__ import annotations

import time

import numpy as np

from unigrad import Tensor, TinyJit, Variable
from unigrad.runtime import realize as rt

L, D = 64, 32
rng = np.random.default_rng(0)
wq, wk, wv = (rng.standard_normal((D, D)).astype(np.float32) / np.sqrt(D) for _ in range(3))
Wq, Wk, Wv = Tensor(wq), Tensor(wk), Tensor(wv)
k_cache, v_cache = Tensor.zeros(L, D).contiguous().realize(), Tensor.zeros(L, D).contiguous().realize()
POS = Variable("pos", 0, L - 1)


@TinyJit
def step(x: Tensor, pos) -> Tensor:
    """x (1, D): the new token; pos: the bound Variable (its row). Returns its attention output (1, D)."""
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    for cache, new in ((k_cache, k), (v_cache, v)):
        cache[pos : pos + 1].assign(new).realize()  # row pos of the cache, in place: it persists across replays
    scores = q @ k_cache[: pos + 1].T / float(np.sqrt(D))  # (1, pos+1): symbolic width
    return scores.softmax(-1) @ v_cache[: pos + 1]


def main() -> None:
    xs = rng.standard_normal((L, 1, D)).astype(np.float32)
    keys, vals, worst, times = [], [], 0.0, []
    compiled_after_capture = 0
    for i in range(L):
        t0 = time.perf_counter()
        out = step(Tensor(xs[i]), POS.bind(i)).numpy()
        times.append(time.perf_counter() - t0)
        keys.append(xs[i] @ wk)
        vals.append(xs[i] @ wv)
        s = (xs[i] @ wq) @ np.concatenate(keys).T / np.sqrt(D)
        p = np.exp(s - s.max())
        worst = max(worst, float(np.abs(out - (p / p.sum()) @ np.concatenate(vals)).max()))
        if i == 1:
            compiled_after_capture = rt.stats.programs
    assert step.plan is not None
    print(f"{L} positions, max abs error vs numpy {worst:.2e}")
    if worst > 1e-4 or rt.stats.programs != compiled_after_capture:
        raise SystemExit("kv_cache: wrong results or kernels recompiled across positions")
    print(
        f"kernels per step: {step.plan.n_kernels}; compiled after the capture: {compiled_after_capture}, at the end: "
        f"{rt.stats.programs} (no recompiles)"
    )
    print(
        f"step time: first {times[0] * 1e3:.1f} ms (compile), capture {times[1] * 1e3:.1f} ms, replays median "
        f"{np.median(times[2:]) * 1e6:.0f} us (incl. copying the token in and the result out)"
    )


if __name__ == "__main__":
    main()
