"""TinyJit benchmarks: what a replayed step costs in Python, and what the JIT saves on a training step.

  (a) replay cost per kernel: a jitted chain of N kernels on 16-element tensors (each `.contiguous()` ends a
      kernel), N = 1, 10 and 100; the per-kernel cost is the slope between N = 10 and N = 100 (the fixed cost
      of a call - checking and wrapping inputs and outputs - is the time at N = 1). The same chain without
      the JIT (graph building, scheduling with warm caches, running) is shown beside it.
  (b) an Adam training step of a 64 -> 128 -> 10 MLP on scikit-learn's digits (batch 64): unigrad eager,
      unigrad under TinyJit, PyTorch eager (2 threads). The first steps of eager and jitted unigrad are
      checked to give the same losses.

Medians over many runs (time.perf_counter around one call); a table, then one line `JSON: {...}`.

  python -m bench.jit          # or: python -m bench jit
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from unigrad import Tensor, TinyJit, nn
from unigrad.nn import optim

RUNS = 200
CHAIN = (1, 10, 100)


def median_time(run: Callable[[], Any], runs: int = RUNS) -> float:
    for _ in range(3):  # warm up: compile, capture
        run()
    gc.collect()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        run()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


# ---------------------------------------------------------------- (a) replay cost per kernel


def chain(x: Tensor, n: int) -> Tensor:
    for i in range(n):  # each reads the one before reversed: a kernel each (read at its own index, they would merge)
        x = (x.flip(0) * 1.0001 + i).contiguous()
    return x


def bench_replay() -> dict[str, float]:
    x = Tensor(np.arange(16, dtype=np.float32)).realize()
    out: dict[str, float] = {}
    for n in CHAIN:
        jitted = TinyJit(lambda t, n=n: chain(t, n))
        out[f"jit_{n}"] = median_time(lambda jitted=jitted: jitted(x))
        assert jitted.plan is not None and jitted.plan.n_kernels == n, "the chain did not capture one kernel per op"
        out[f"eager_{n}"] = median_time(lambda n=n: chain(x, n).realize(), runs=max(20, RUNS // n))
    lo, hi = CHAIN[1], CHAIN[2]
    out["jit_per_kernel"] = (out[f"jit_{hi}"] - out[f"jit_{lo}"]) / (hi - lo)
    out["eager_per_kernel"] = (out[f"eager_{hi}"] - out[f"eager_{lo}"]) / (hi - lo)
    return out


# ---------------------------------------------------------------- (b) MLP training step


def digits(batch: int) -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import load_digits

    data = load_digits()
    return (np.asarray(data.data[:batch], np.float32) / 16), np.asarray(data.target[:batch], np.int64)


def make_step(seed: int, device: str | None = None) -> Callable[[Tensor, Tensor], Tensor]:
    """An Adam step of a 64-128-10 MLP (its weights from `seed`, on `device`): (x, y) -> the loss."""
    Tensor.manual_seed(seed)
    l1, l2 = nn.Linear(64, 128), nn.Linear(128, 10)
    if device is not None:
        for p in (l1.weight, l1.bias, l2.weight, l2.bias):
            p.to_(device)
    opt = optim.Adam([l1.weight, l1.bias, l2.weight, l2.bias], lr=1e-3)

    @Tensor.train()  # tinygrad's optimizers step only in train mode
    def step(x: Tensor, y: Tensor) -> Tensor:
        opt.zero_grad()
        loss = l2(l1(x).relu()).sparse_categorical_crossentropy(y)
        loss.backward()
        Tensor.realize(loss, *opt.schedule_step())
        return loss

    return step


def bench_mlp() -> dict[str, float]:
    import torch

    torch.set_num_threads(2)
    xn, yn = digits(64)
    x, y = Tensor(xn).realize(), Tensor(yn).realize()
    eager, jitted = make_step(0), TinyJit(make_step(0))
    losses = [(eager(x, y).item(), jitted(x, y).item()) for _ in range(4)]
    if any(a != b for a, b in losses):
        print(f"FAIL: eager and jitted losses differ: {losses}", file=sys.stderr)
    tmodel = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
    topt = torch.optim.Adam(tmodel.parameters(), lr=1e-3)
    tx, ty = torch.from_numpy(xn), torch.from_numpy(yn)

    def torch_step() -> None:
        topt.zero_grad()
        loss = torch.nn.functional.cross_entropy(tmodel(tx), ty)
        loss.backward()
        topt.step()

    assert jitted.plan is not None
    return {
        "eager": median_time(lambda: eager(x, y), runs=50),
        "jit": median_time(lambda: jitted(x, y)),
        "torch": median_time(torch_step),
        "jit_kernels": float(jitted.plan.n_kernels),
    }


def main(argv: list[str]) -> None:
    argparse.ArgumentParser(prog="python -m bench jit", description=__doc__.splitlines()[0]).parse_known_args(argv)
    r = bench_replay()
    m = bench_mlp()
    us = 1e6
    print(f"{'case':<44}{'median':>12}")
    for n in CHAIN:
        print(f"{f'jitted chain of {n} kernels (one call)':<44}{r[f'jit_{n}'] * us:>9.1f} us")
    print(f"{'  replay cost per kernel (slope 10 -> 100)':<44}{r['jit_per_kernel'] * us:>9.2f} us")
    for n in CHAIN:
        print(f"{f'eager chain of {n} kernels (build+realize)':<44}{r[f'eager_{n}'] * us:>9.1f} us")
    print(f"{'  eager cost per kernel (slope 10 -> 100)':<44}{r['eager_per_kernel'] * us:>9.2f} us")
    k = int(m["jit_kernels"])
    print(f"{'MLP Adam step, unigrad eager':<44}{m['eager'] * 1e3:>9.3f} ms")
    print(f"{f'MLP Adam step, unigrad TinyJit ({k} kernels)':<44}{m['jit'] * 1e3:>9.3f} ms")
    print(f"{'MLP Adam step, PyTorch eager':<44}{m['torch'] * 1e3:>9.3f} ms")
    print(
        f"JIT speed-up over eager: {m['eager'] / m['jit']:.1f}x; unigrad TinyJit / torch: {m['jit'] / m['torch']:.2f}"
    )
    print("JSON: " + json.dumps({"replay": r, "mlp": m}))


if __name__ == "__main__":
    main(sys.argv[1:])
