"""Common tensor ops beside PyTorch: a survey that catches an op whose composition or kernel falls far behind.

Each case builds the op on realized inputs, realizes it, and is timed against the same op in PyTorch (CPU, eager,
2 threads) in one process run, taking turns call by call; its first result is checked against PyTorch's. The
cases are the ones users reach for beside the suite's workloads: movement (transpose, permute, pad), pooling,
normalization, activations, reductions along either axis, scans, cat of many pieces, indexing (embedding lookup,
data[i].item() over new Python ints i, gather, masked_select, topk, sort), attention scores, convolutions with few input channels, and matmuls with a
transposed operand.

Output: a table of medians (ms) and unigrad / torch ratios (> 1: unigrad is slower), then one line `JSON: {...}`.
A ratio over FLAG_RATIO is marked; a result that does not match torch's is marked, and the run raises at the end.

  python -m bench ops [--quick]     # or: python -m bench.ops; --quick: smaller sizes, fewer runs (CI smoke run)
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from unigrad import Tensor

FLAG_RATIO = 3.0  # a ratio above this is marked in the table


def median_ms(fns: tuple[Callable[[], Any], Callable[[], Any]], runs: int) -> tuple[float, float]:
    """Medians (ms) of the two callables over `runs` calls each, taking turns (both see the same machine)."""
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(runs):
        for fn, ts in zip(fns, times):
            t0 = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t0)
    return statistics.median(times[0]) * 1e3, statistics.median(times[1]) * 1e3


def embedding_grad_u(w: Tensor, idx: Tensor) -> Tensor:
    """The gradient of an embedding table under a fixed projection of its lookup (a scatter-add of rows)."""
    leaf = Tensor(w.uop, requires_grad=True)
    (leaf[idx] * 0.5).sum().backward()
    assert leaf.grad is not None
    return leaf.grad


def embedding_grad_t(w: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    leaf = w.detach().requires_grad_()
    (leaf[idx] * 0.5).sum().backward()
    assert leaf.grad is not None
    return leaf.grad


def items_u(data: Tensor, rows: Any) -> Tensor:
    """data[i].item() for a batch of rows never read before (a Dataset's __getitem__): one kernel serves every i."""
    return Tensor([data[int(i)].item() for i in next(rows)])


def items_t(data: torch.Tensor, rows: Any) -> torch.Tensor:
    return torch.tensor([data[int(i)].item() for i in next(rows)])


def cases(q: int) -> list[tuple[str, Callable[[], Tensor], Callable[[], torch.Tensor], float]]:
    """(name, unigrad op, torch op, tolerance) at sizes divided by q (1: full, 4: quick)."""
    rng = np.random.default_rng(0)

    def pair(*shape: int) -> tuple[Tensor, torch.Tensor]:
        a = rng.standard_normal(shape, dtype=np.float32)
        return Tensor(a).realize(), torch.from_numpy(a)

    n = 2048 // q
    (ua, ta), (ub, tb) = pair(n, n), pair(32 // q, 64, 56 // q, 56 // q)
    ux, tx = pair(16 // q, 512 // q, 768)
    idx = rng.integers(0, 30000, (64, 128 // q))
    (ue, te), (ui, ti) = pair(30000, 256), (Tensor(idx).realize(), torch.from_numpy(idx))
    (uc, tc), (uw, tw) = pair(64 // q, 3, 32, 32), pair(16, 3, 5, 5)
    gidx = rng.integers(0, n, (n, 16))
    ug, tg = Tensor(gidx).realize(), torch.from_numpy(gidx)
    lw, lb = Tensor.ones(768).realize(), Tensor.zeros(768).realize()
    cat_u, cat_t = zip(*(pair(64 // q, 256) for _ in range(64)))
    items = rng.standard_normal(30000, dtype=np.float32)
    (ud, td), order = (Tensor(items).realize(), torch.from_numpy(items)), rng.permutation(29952).reshape(-1, 64)
    rows_u, rows_t = iter(order), iter(order)  # the same new rows on both sides, call by call
    q_u, k_u = ux[:, :, :64], ux[:, :, 64:128]
    q_t, k_t = tx[:, :, :64], tx[:, :, 64:128]
    return [
        ("transpose, contiguous", lambda: ua.T.contiguous(), lambda: ta.T.contiguous(), 0),
        (
            "permute NCHW -> NHWC",
            lambda: ub.permute(0, 2, 3, 1).contiguous(),
            lambda: tb.permute(0, 2, 3, 1).contiguous(),
            0,
        ),
        ("pad by 1", lambda: ua.pad((1, 1, 1, 1)), lambda: F.pad(ta, (1, 1, 1, 1)), 0),
        ("max_pool2d 2x2", lambda: ub.max_pool2d(2), lambda: F.max_pool2d(tb, 2), 0),
        ("avg_pool2d 2x2", lambda: ub.avg_pool2d(2), lambda: F.avg_pool2d(tb, 2), 1e-5),
        ("layernorm (affine)", lambda: ux.layernorm().mul(lw).add(lb), lambda: F.layer_norm(tx, (768,)), 1e-4),
        ("gelu (tanh)", lambda: ux.gelu(), lambda: F.gelu(tx, approximate="tanh"), 1e-5),
        ("softmax rows", lambda: ua.softmax(-1), lambda: ta.softmax(-1), 1e-5),
        ("sum rows", lambda: ua.sum(1), lambda: ta.sum(1), 1e-3),
        ("sum columns", lambda: ua.sum(0), lambda: ta.sum(0), 1e-3),
        ("max columns", lambda: ua.max(0), lambda: ta.max(0).values, 0),
        ("argmax rows", lambda: ua.argmax(1), lambda: ta.argmax(1), 0),
        ("std rows", lambda: ua.std(1), lambda: ta.std(1), 1e-4),
        ("cumsum rows", lambda: ua.cumsum(1), lambda: ta.cumsum(1), 1e-3),
        ("cumsum columns", lambda: ua.cumsum(0), lambda: ta.cumsum(0), 1e-3),
        ("topk 8 of rows", lambda: ua.topk(8, 1)[0], lambda: ta.topk(8, 1).values, 0),
        ("sort rows", lambda: ua.sort(1)[0], lambda: ta.sort(dim=1, stable=True).values, 0),
        ("cat of 64 pieces", lambda: cat_u[0].cat(*cat_u[1:]), lambda: torch.cat(cat_t), 0),
        ("masked_select", lambda: ua.masked_select(ua > 0.5), lambda: ta.masked_select(ta > 0.5), 0),
        ("embedding lookup x[idx]", lambda: ue[ui], lambda: te[ti], 0),
        ("embedding gradient", lambda: embedding_grad_u(ue, ui), lambda: embedding_grad_t(te, ti), 1e-4),
        ("data[i].item(), 64 new i per call", lambda: items_u(ud, rows_u), lambda: items_t(td, rows_t), 0),
        ("gather 16 per row", lambda: ua.gather(1, ug), lambda: ta.gather(1, tg), 0),
        (
            "q @ k^T, softmax",
            lambda: (q_u @ k_u.transpose(1, 2)).softmax(-1),
            lambda: (q_t @ k_t.transpose(1, 2)).softmax(-1),
            1e-4,
        ),
        ("a.T @ a", lambda: ua.T @ ua, lambda: ta.T @ ta, 1e-2),
        ("conv2d 3 -> 16 channels, 5x5", lambda: uc.conv2d(uw), lambda: F.conv2d(tc, tw), 1e-3),
    ]


def main(argv: list[str]) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m bench ops")
    parser.add_argument("--quick", action="store_true", help="smaller sizes, fewer runs (CI smoke run)")
    args = parser.parse_args(argv)
    torch.set_num_threads(2)
    q, runs = (4, 3) if args.quick else (1, 7)
    results: dict[str, Any] = {"quick": args.quick}
    print(f"{'op':<34}{'unigrad ms':>12}{'torch ms':>10}{'ratio':>8}  check")
    for name, ours, theirs, tol in cases(q):
        run_ours = lambda ours=ours: ours().realize()  # noqa: E731
        got, want = run_ours().numpy(), theirs().numpy()
        ok = got.shape == want.shape and np.allclose(got, want, rtol=tol, atol=tol, equal_nan=True)
        ug, th = median_ms((run_ours, theirs), runs)
        flag = "  <-- slow" if ug / th > FLAG_RATIO else ""
        print(f"{name:<34}{ug:>12.3f}{th:>10.3f}{ug / th:>8.2f}  {'ok' if ok else 'MISMATCH'}{flag}")
        results[name] = {"unigrad_ms": round(ug, 4), "torch_ms": round(th, 4), "ok": bool(ok)}
    print("JSON: " + json.dumps(results))
    wrong = [k for k, v in results.items() if isinstance(v, dict) and not v["ok"]]
    if wrong:
        raise RuntimeError(f"bench.ops: results differ from torch's for {wrong}")
    return results


if __name__ == "__main__":
    main(sys.argv[1:])
