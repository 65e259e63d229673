"""Recurrent models through the torch facade (issue 34): compile time, cold and warm steps against PyTorch.

Workloads (the same code runs on `torch` and on `unigrad.torch`, passed in as the module `tm`):

  1. lstm_lm    one training step of a word-level LSTM language model (pytorch/examples' word_language_model):
                embedding 64 -> 2-layer nn.LSTM (hidden 64, dropout 0.2) -> Linear to 1000 words, batch 20, bptt 35;
                NLL of log_softmax, backward, clip_grad_norm_(0.25), p.data.add_(p.grad, alpha=-lr) (float32)
  2. lstmcell   a training step of two stacked nn.LSTMCell (1 -> 51 -> 51) and a Linear unrolled over 199 steps
                of sine waves, batch 97, float64 (pytorch/examples' time_sequence_prediction): MSE loss, backward,
                an SGD step (the gradients are read: unigrad's, lazy until then, are computed too)

What is timed: one step from building the graph to the loss read back with .item() (so every kernel has run; the
CPU device runs them synchronously). unigrad runs in a child process (`--child NAME`) with CACHEDIR a fresh empty
directory: "cold" is its first step (every kernel compiled), "warm" the median of the following steps (in-memory
caches hit); a second child on the same CACHEDIR gives "disk" (the first step of a new process, the compile cache
on disk full). The child also reports the kernels launched per warm step, the distinct kernels compiled, and the
slowest compile with its kernel's name and C size. torch (torch.set_num_threads(2)) runs the same steps in the
parent: its first step and median. Output: a table, then one line `JSON: {...}`.

  python -m bench recurrent [--quick] [--only=lstm_lm,lstmcell] [--steps=N]     # or: python -m bench.recurrent
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np

TORCH_THREADS = 2
BUSY_LOADAVG = 0.5


@dataclass(frozen=True)
class Sizes:
    vocab: int
    seq: int  # lstm_lm: bptt
    batch: int
    hidden: int
    layers: int
    cell_steps: int  # lstmcell: time steps
    cell_batch: int
    cell_hidden: int


FULL = Sizes(vocab=1000, seq=35, batch=20, hidden=64, layers=2, cell_steps=199, cell_batch=97, cell_hidden=51)
QUICK = Sizes(vocab=100, seq=6, batch=4, hidden=16, layers=2, cell_steps=12, cell_batch=6, cell_hidden=8)


# ---------------------------------------------------------------- the workloads, written against a torch module


def lstm_lm(tm: ModuleType, s: Sizes) -> Callable[[], float]:
    """A training step of the word-language model; returns a closure that runs one step and returns the loss."""
    nn = tm.nn
    tm.manual_seed(0)
    rng = np.random.default_rng(0)

    class RNNModel(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.drop = nn.Dropout(0.2)
            self.encoder = nn.Embedding(s.vocab, s.hidden)
            self.rnn = nn.LSTM(s.hidden, s.hidden, s.layers, dropout=0.2)
            self.decoder = nn.Linear(s.hidden, s.vocab)

        def forward(self, x: Any, hidden: Any) -> Any:
            emb = self.drop(self.encoder(x))
            out, hidden = self.rnn(emb, hidden)
            decoded = self.decoder(self.drop(out)).view(-1, s.vocab)
            return nn.functional.log_softmax(decoded, dim=1), hidden

    model = RNNModel()
    criterion = nn.NLLLoss()
    tokens = rng.integers(0, s.vocab, (s.seq + 1, s.batch))
    data, targets = tm.tensor(tokens[:-1]), tm.tensor(tokens[1:].reshape(-1))
    zeros = (tm.zeros(s.layers, s.batch, s.hidden), tm.zeros(s.layers, s.batch, s.hidden))
    state = {"hidden": zeros}

    def step() -> float:
        model.train()
        hidden = tuple(h.detach() for h in state["hidden"])
        model.zero_grad()
        output, hidden = model(data, hidden)
        loss = criterion(output, targets)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-1.0)
        state["hidden"] = hidden
        return loss.item()

    return step


def lstmcell(tm: ModuleType, s: Sizes) -> Callable[[], float]:
    """A training step (forward, backward, SGD) of the unrolled two-cell sine model in float64."""
    nn = tm.nn
    tm.manual_seed(0)
    h = s.cell_hidden

    class Sequence(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lstm1, self.lstm2, self.linear = nn.LSTMCell(1, h), nn.LSTMCell(h, h), nn.Linear(h, 1)

        def forward(self, x: Any) -> Any:
            zeros = [tm.zeros(x.size(0), h, dtype=tm.double) for _ in range(4)]
            h_t, c_t, h_t2, c_t2 = zeros
            outputs = []
            for x_t in x.split(1, dim=1):
                h_t, c_t = self.lstm1(x_t, (h_t, c_t))
                h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
                outputs.append(self.linear(h_t2))
            return tm.cat(outputs, dim=1)

    seq = Sequence().double()
    rng = np.random.default_rng(2)
    shift = rng.integers(-80, 80, (s.cell_batch, 1))
    wave = np.sin((np.arange(s.cell_steps + 1) + shift) / 20.0 * 2 * np.pi)
    x, y = tm.from_numpy(wave[:, :-1].copy()), tm.from_numpy(wave[:, 1:].copy())
    criterion = nn.MSELoss()
    opt = tm.optim.SGD(seq.parameters(), lr=0.01)

    def step() -> float:
        opt.zero_grad()
        loss = criterion(seq(x), y)
        loss.backward()
        opt.step()
        return loss.item()

    return step


WORKLOADS: dict[str, Callable[[ModuleType, Sizes], Callable[[], float]]] = {"lstm_lm": lstm_lm, "lstmcell": lstmcell}


def time_steps(step: Callable[[], float], steps: int) -> tuple[float, list[float], float]:
    """(first step's seconds, the following steps' seconds, the first loss)."""
    t0 = time.perf_counter()
    loss = step()
    first = time.perf_counter() - t0
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    return first, times, loss


# ---------------------------------------------------------------- the unigrad child


def child(name: str, s: Sizes, steps: int) -> dict[str, Any]:
    """Run the workload on unigrad.torch in this process; CACHEDIR comes from the parent's environment."""
    import unigrad.torch as utorch
    from unigrad.runtime import realize as rt

    compiles: list[tuple[float, str, int]] = []
    _record_compiles(compiles)
    step = WORKLOADS[name](utorch, s)
    k0 = rt.stats.kernels
    first, times, loss = time_steps(step, 0)
    k1 = rt.stats.kernels
    _, times, _ = time_steps(step, steps)
    k2 = rt.stats.kernels
    slowest = max(compiles, default=(0.0, "", 0))
    return {
        "first_s": first,
        "warm_s": statistics.median(times) if times else None,
        "loss": loss,
        "kernels_first": k1 - k0,
        "kernels_per_step": (k2 - k1) / max(1, steps + 1) if steps else None,
        "compiled": len(compiles),
        "compile_s": sum(c[0] for c in compiles),
        "slowest_compile_s": slowest[0],
        "slowest_kernel": slowest[1],
        "slowest_source_chars": slowest[2],
        "largest_source_chars": max((c[2] for c in compiles), default=0),
    }


def _record_compiles(out: list[tuple[float, str, int]]) -> None:
    """Wrap the CPU compiler's compile_to_path() so each real compile (not a disk-cache hit) is recorded as
    (seconds, kernel name, source chars)."""
    from unigrad.runtime import Device

    compiler = Device["CPU"].compiler
    inner = compiler.compile_to_path

    def compile_to_path(src: str) -> Any:
        before, t0 = compiler.compiles, time.perf_counter()
        res = inner(src)
        if compiler.compiles != before:
            out.append((time.perf_counter() - t0, _kernel_name(src), len(src)))
        return res

    compiler.compile_to_path = compile_to_path


def _kernel_name(src: str) -> str:
    """The name of the last function the source defines (the kernel; helpers come before it)."""
    names = [line.split("(")[0].split()[-1] for line in src.splitlines() if line.startswith("void ") and "(" in line]
    return names[-1].removesuffix("_entry") if names else "?"  # a threaded kernel ends with its entry wrapper


def run_child(name: str, s: Sizes, quick: bool, steps: int, cachedir: str) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "bench.recurrent", "--child", name, f"--steps={steps}"] + (
        ["--quick"] if quick else []
    )
    env = dict(os.environ, CACHEDIR=cachedir)
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=os.path.dirname(os.path.dirname(__file__)))
    for line in proc.stdout.splitlines():
        if line.startswith("CHILD "):
            return json.loads(line[len("CHILD ") :])
    sys.stderr.write(proc.stdout[-4000:] + proc.stderr[-4000:])
    return {"error": f"child exited {proc.returncode}"}


# ---------------------------------------------------------------- the parent


def fmt(v: float | None, scale: float = 1e3) -> str:
    return "-" if v is None else f"{v * scale:.1f}"


def main(argv: list[str]) -> None:
    ap = argparse.ArgumentParser(prog="python -m bench recurrent", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (CI smoke run)")
    ap.add_argument("--only", default="", help="comma-separated workloads: " + ",".join(WORKLOADS))
    ap.add_argument("--steps", type=int, default=5, help="warm steps after the first (median)")
    ap.add_argument("--child", default="", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    s = QUICK if args.quick else FULL
    if args.child:
        print("CHILD " + json.dumps(child(args.child, s, args.steps)))
        return
    import torch

    torch.set_num_threads(TORCH_THREADS)
    load = os.getloadavg()[0]
    if load > BUSY_LOADAVG:
        print(f"warning: load average {load:.2f}: timings are noisy")
    names = [n for n in args.only.split(",") if n] or list(WORKLOADS)
    results: dict[str, Any] = {"load": load}
    print(
        f"{'workload':<10} {'ug cold':>9} {'ug disk':>9} {'ug warm':>9} {'torch 1st':>9} {'torch':>8} {'warm x':>7}"
        f"  kernels/step  compiled  slowest compile"
    )
    for name in names:
        t_first, t_times, t_loss = time_steps(WORKLOADS[name](torch, s), args.steps)
        with tempfile.TemporaryDirectory(prefix="unigrad-recurrent-") as cachedir:
            cold = run_child(name, s, args.quick, args.steps, cachedir)
            disk = run_child(name, s, args.quick, 0, cachedir)
        t_med = statistics.median(t_times)
        row = {
            "cold": cold,
            "disk_first_s": disk.get("first_s"),
            "torch_first_s": t_first,
            "torch_s": t_med,
            "torch_loss": t_loss,
        }
        results[name] = row
        warm = cold.get("warm_s")
        ratio = f"{warm / t_med:.2f}" if warm else "-"
        print(
            f"{name:<10} {fmt(cold.get('first_s')):>9} {fmt(disk.get('first_s')):>9} {fmt(warm):>9} "
            f"{fmt(t_first):>9} {fmt(t_med):>8} {ratio:>7}  {cold.get('kernels_per_step') or '-':>12}  "
            f"{cold.get('compiled', '-'):>8}  {cold.get('slowest_compile_s', 0):.2f} s "
            f"{cold.get('slowest_kernel', '')} ({cold.get('slowest_source_chars', 0)} chars)"
        )
        if "loss" in cold and abs(cold["loss"] - t_loss) > 1e-3 * max(1.0, abs(t_loss)):
            print(f"note {name}: first loss unigrad {cold['loss']:.6f}, torch {t_loss:.6f} (different init)")
    print(f"(ms; load average at start {load:.2f}; torch {TORCH_THREADS} threads)")
    print("JSON: " + json.dumps(results))


if __name__ == "__main__":
    main(sys.argv[1:])
