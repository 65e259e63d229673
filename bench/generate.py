"""A GPT-style sampling loop through the torch facade beside PyTorch: time per token, early and late (issue 34).

The loop is what nanoGPT-style `generate` functions do, written once for both libraries: crop the context to the
last CONTEXT tokens, embed and project them (a small MLP language model), scale the last logits by a temperature,
keep the top k (the others set to -inf by a boolean index: a realize per token), softmax, `multinomial`, and
`cat` the new token onto `idx`, then read the sequence out. `idx` is held by the loop and grows by one token per step;
a library that recomputes what the loop holds pays more per token as the sequence grows. Each library samples N and
2N tokens (after a warm-up run of each, so unigrad's kernels are compiled and cached); the table shows the median
time per token of each, their ratio (1.0: a constant cost per token), tokens/s of the longer run, and unigrad's
kernel launches per token (of the longer run: the MLP's two, topk's two, softmax's two reductions, multinomial's
one, and the three of nn.Embedding's index check).

  python -m bench generate [--quick]     # or: python -m bench.generate; --quick: fewer tokens (CI smoke run)
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch as real_torch

from unigrad import Context
from unigrad.runtime import realize as rt

VOCAB, CONTEXT, EMBED, HIDDEN = 32, 8, 16, 64


def sampler(tlib: Any) -> Callable[[int], list[int]]:
    """The sampling loop written against a torch-like module `tlib` (real torch or unigrad's facade); calling the
    result samples n tokens and returns the sequence (read out: every token computed)."""
    tlib.manual_seed(0)
    nn, F = tlib.nn, tlib.nn.functional
    embed = nn.Embedding(VOCAB, EMBED)
    mlp = nn.Sequential(nn.Linear(CONTEXT * EMBED, HIDDEN), nn.Tanh(), nn.Linear(HIDDEN, VOCAB))

    def sample(n: int) -> list[int]:
        idx = tlib.zeros((1, CONTEXT), dtype=tlib.long)
        with tlib.no_grad():
            for _ in range(n):
                logits = mlp(embed(idx[:, -CONTEXT:]).flatten(1)) / 0.8
                v, _ = tlib.topk(logits, 5)
                logits[logits < v[:, [-1]]] = -float("inf")
                nxt = tlib.multinomial(F.softmax(logits, dim=-1), num_samples=1)
                idx = tlib.cat((idx, nxt), dim=1)
        out = idx.tolist()[0]
        assert len(out) == CONTEXT + n
        return out

    return sample


def per_token_ms(sample: Callable[[int], list[int]], n: int, runs: int) -> float:
    """Median over runs of the milliseconds per token of sampling n tokens (the tokens read out at the end). Each
    run starts after a full garbage collection: one walks every tracked object of the process (torch's and the
    compile caches', ~430k: 150-250 ms), and where it lands would decide the early/late ratio, not the loop."""
    times = []
    for _ in range(runs):
        gc.collect()
        t0 = time.perf_counter()
        sample(n)
        times.append((time.perf_counter() - t0) / n)
    return statistics.median(times) * 1e3


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(prog="python -m bench.generate", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer tokens (CI smoke run)")
    args = ap.parse_args(argv)
    tokens, runs = (16, 2) if args.quick else (48, 5)
    real_torch.set_num_threads(min(2, os.cpu_count() or 1))
    rows = {}
    with Context(FLAVOR="torch"):  # the facade's semantics for this benchmark only (importing it sets them for good)
        import unigrad.torch as facade

        for name, lib in (("unigrad (facade)", facade), ("torch", real_torch)):
            sample = sampler(lib)
            sample(tokens), sample(2 * tokens)  # warm-up: compiles and caches
            early, k0 = per_token_ms(sample, tokens, runs), rt.stats.kernels
            late, k1 = per_token_ms(sample, 2 * tokens, runs), rt.stats.kernels  # torch's runs launch none of ours
            kernels = (k1 - k0) / (runs * 2 * tokens)
            rows[name] = {"early_ms": early, "late_ms": late, "tokens_per_s": 1e3 / late, "kernels_per_token": kernels}
    print(
        f"sampling loop, {tokens} and {2 * tokens} tokens, vocab {VOCAB}, context {CONTEXT}; load {os.getloadavg()[0]:.2f}"
    )
    head = (
        f"{'library':<18} {f'ms/token ({tokens})':>15} {f'ms/token ({2 * tokens})':>15} {'ratio':>7} {'tokens/s':>10}"
    )
    print(f"{head} {'kernels/token':>14}")
    for name, r in rows.items():
        growth = r["late_ms"] / r["early_ms"]
        r["late_over_early"] = growth
        kernels = f"{r['kernels_per_token']:.1f}" if name != "torch" else "-"
        print(
            f"{name:<18} {r['early_ms']:>15.3f} {r['late_ms']:>15.3f} {growth:>7.2f} {r['tokens_per_s']:>10.0f} "
            f"{kernels:>14}"
        )
    ours, theirs = rows["unigrad (facade)"], rows["torch"]
    result = {"tokens": tokens, "rows": rows, "late_ratio_to_torch": ours["late_ms"] / theirs["late_ms"]}
    print(f"unigrad / torch per token (late): {result['late_ratio_to_torch']:.1f}x")
    print("JSON: " + json.dumps(result))
    return result


if __name__ == "__main__":
    main()
