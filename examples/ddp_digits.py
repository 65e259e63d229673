"""Train the digits MLP and CNN data-parallel on N processes with DistributedDataParallel, as a torch program would.

python -m unigrad.distributed.run -n 2 examples/ddp_digits.py             # 2 ranks (mpirun underneath)
mpirun -np 2 python examples/ddp_digits.py --model cnn --epochs 5         # the same with mpirun itself
python examples/ddp_digits.py                                             # 1 rank (MPI starts as a singleton)

Each epoch a DistributedSampler gives every rank its share of a permutation of the 1438 training images; a step
takes the next `batch/N` of them on each rank (the global batch is `batch`), DDP averages the gradients, Adam steps.
Afterwards rank 0 trains the same model in one process on the same global batches (the ranks' local batches
together) and compares: the parameters agree to float32 summation order (exit 1 if not, or under --min-acc test
accuracy). It prints samples/s of the data-parallel epochs after the first (which compiles) and of the one-process
run, and the scaling efficiency: ddp samples/s / (N x one process's). With the launcher each rank runs its kernels on
cores/N threads (THREADS), so the comparison is N processes of one core each against one of one core on 2 cores.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import unigrad.distributed as dist
import unigrad.torch as torch
from unigrad import nn
from unigrad.nn.datasets import digits
from unigrad.nn.parallel import DistributedDataParallel as DDP
from unigrad.utils.data import DistributedSampler

SEED = 1337


def make(kind: str) -> nn.Module:
    torch.manual_seed(SEED)
    if kind == "mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(16 * 4 * 4, 10)
    )


def epoch_batches(n_train: int, epoch: int, ranks: int, local: int) -> list[list[np.ndarray]]:
    """Per step, every rank's local batch of indices: rank r's DistributedSampler share, `local` at a time."""
    shares = []
    for r in range(ranks):
        sampler = DistributedSampler(range(n_train), num_replicas=ranks, rank=r, shuffle=True, seed=SEED)
        sampler.set_epoch(epoch)
        shares.append(np.array(list(sampler)))
    steps = len(shares[0]) // local
    return [[s[i * local : (i + 1) * local] for s in shares] for i in range(steps)]


def train(model: nn.Module, step_model: nn.Module, x: torch.Tensor, y: torch.Tensor, batches: list, lr: float) -> float:
    """Adam over the given batches (each a list of index arrays, concatenated); returns the seconds of all but the
    first epoch (steady state)."""
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()
    timed = 0.0
    for epoch, steps in enumerate(batches):
        t0 = time.perf_counter()
        for idx in steps:
            i = torch.tensor(np.concatenate(idx))
            loss = torch.nn.functional.cross_entropy(step_model(x[i]), y[i])
            opt.zero_grad()
            loss.backward()
            opt.step()
        loss.item()
        if epoch > 0:
            timed += time.perf_counter() - t0
    return timed


def accuracy(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    model.eval()
    with torch.no_grad():
        return float((model(x).argmax(1) == y).float().mean().item())


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", choices=["mlp", "cnn", "both"], default="both")
    p.add_argument("--epochs", type=int, default=8)
    p.add_argument("--batch", type=int, default=128, help="the global batch (divided among the ranks)")
    p.add_argument("--lr", type=float, default=1e-2)
    p.add_argument("--min-acc", type=float, default=0.9, help="exit 1 under this test accuracy")
    p.add_argument("--no-check", action="store_true", help="skip the one-process comparison on rank 0")
    args = p.parse_args(argv)
    dist.init_process_group(backend="mpi")
    rank, ranks = dist.get_rank(), dist.get_world_size()
    if args.batch % ranks:
        raise SystemExit(f"--batch {args.batch} does not divide among {ranks} ranks")
    local = args.batch // ranks
    x_train, y_train, x_test, y_test = digits()
    failed = False
    for kind in ["mlp", "cnn"] if args.model == "both" else [args.model]:
        batches = [epoch_batches(len(y_train), e, ranks, local) for e in range(args.epochs)]
        mine = [[[b[rank]] for b in steps] for steps in batches]  # this rank's local batches
        model = make(kind)
        seconds = train(model, DDP(model), x_train, y_train, mine, args.lr)
        samples = sum(len(steps) for steps in batches[1:]) * args.batch
        acc = accuracy(model, x_test, y_test)
        line = f"{kind}: {ranks} rank(s), test accuracy {acc:.3f}"
        if seconds > 0:
            line += f", {samples / seconds:,.0f} samples/s (epochs 2-{args.epochs})"
        if rank == 0:
            print(line, flush=True)
        failed |= acc < args.min_acc
        if rank == 0 and not args.no_check and ranks > 1:
            ref = make(kind)
            ref_seconds = train(ref, ref, x_train, y_train, batches, args.lr)  # the global batches, one process
            diff = max(float(np.abs(a.numpy() - b.numpy()).max()) for a, b in zip(model.parameters(), ref.parameters()))
            line = f"{kind}: one process on the same global batches: max parameter difference {diff:.2e}"
            if seconds > 0 and ref_seconds > 0:
                one = samples / ref_seconds
                line += f"; {one:,.0f} samples/s, scaling efficiency {samples / seconds / (ranks * one):.2f}"
            print(line, flush=True)
            failed |= diff > 1e-3
        dist.barrier()
    dist.destroy_process_group()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
