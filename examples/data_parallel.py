"""Data-parallel training on several devices: the digits MLP with every minibatch split across CPU:0 and CPU:1.

Two copies of the same model (same initial weights) train side by side on the same minibatches: one on a single
device, one with its parameters replicated on the devices (`shard_(devices)`) and each minibatch sharded on its
batch dim (`shard(devices, axis=0)`). Each device runs the forward and backward pass on its half of the batch;
the reductions over the batch (the mean loss, the weight gradients) all-reduce across the devices, so each device
holds the same gradients and takes the same Adam step. The script prints both loss curves, and exits 1 unless
they agree (to float32 rounding: the sums run in a different order) and the sharded model reaches 95% test
accuracy.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import numpy as np

from unigrad import Tensor, nn
from unigrad.nn import optim
from unigrad.nn.datasets import digits
from unigrad.nn.state import get_parameters

SEED = 1337
TARGET_ACCURACY = 0.95


class MLP:
    """64 pixels -> 128 hidden units (ReLU) -> 10 class logits."""

    def __init__(self) -> None:
        self.l1 = nn.Linear(64, 128)
        self.l2 = nn.Linear(128, 10)

    def __call__(self, x: Tensor) -> Tensor:
        return self.l2(self.l1(x).relu())


@Tensor.train()  # tinygrad's optimizers step only in train mode
def step(model: MLP, opt: optim.Optimizer, x: Tensor, y: Tensor) -> float:
    opt.zero_grad()
    loss = model(x).sparse_categorical_crossentropy(y)
    loss.backward()
    Tensor.realize(loss, *opt.schedule_step())
    return loss.item()


def accuracy(model: MLP, x: Tensor, y: Tensor) -> float:
    return (model(x).argmax(-1) == y).float().mean().item()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", type=int, default=2, help="how many CPU devices share each minibatch")
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--steps", type=int, default=None, help="at most this many steps per epoch")
    parser.add_argument("--batch-size", type=int, default=128)
    args = parser.parse_args(argv)
    devices = tuple(f"CPU:{i}" for i in range(args.devices))
    if args.batch_size % len(devices):
        parser.error(f"--batch-size {args.batch_size} does not split into {len(devices)} equal shards")

    x_train, y_train, x_test, y_test = digits(flatten=True)
    Tensor.manual_seed(SEED)
    single = MLP()
    Tensor.manual_seed(SEED)
    sharded = MLP()
    for p in get_parameters(sharded):
        p.shard_(devices).realize()  # a whole copy of each parameter on every device
    opts = optim.Adam(get_parameters(single), lr=1e-2), optim.Adam(get_parameters(sharded), lr=1e-2)

    rng = np.random.default_rng(SEED)
    steps = x_train.shape[0] // args.batch_size
    steps = min(steps, args.steps) if args.steps else steps
    worst = 0.0
    for epoch in range(args.epochs):
        order = rng.permutation(x_train.shape[0])
        losses = np.zeros((2, steps))
        for s in range(steps):
            idx = Tensor(order[s * args.batch_size : (s + 1) * args.batch_size])
            x, y = x_train[idx].realize(), y_train[idx].realize()
            losses[0, s] = step(single, opts[0], x, y)
            losses[1, s] = step(sharded, opts[1], x.shard(devices, axis=0), y.shard(devices, axis=0))
        worst = max(worst, float(np.abs(losses[0] - losses[1]).max()))
        print(
            f"epoch {epoch + 1:2d}/{args.epochs}  loss on 1 device {losses[0].mean():.4f}  "
            f"on {len(devices)} devices {losses[1].mean():.4f}"
        )
    acc = accuracy(sharded, x_test.shard(devices), y_test.shard(devices))
    print(
        f"test accuracy on {len(devices)} devices {acc:.2%}  (1 device {accuracy(single, x_test, y_test):.2%}); "
        f"largest loss difference {worst:.2e}"
    )
    ok = worst < 1e-3 and (acc >= TARGET_ACCURACY or args.steps is not None)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
