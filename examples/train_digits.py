"""Train an MLP and a small CNN on scikit-learn's 8x8 handwritten digits with Adam, then test them.

python examples/train_digits.py                  # both models; exits 1 if either is under 97% test accuracy
python examples/train_digits.py --model cnn      # one model (mlp, cnn or both)
python examples/train_digits.py --epochs 30      # train longer
python examples/train_digits.py --quick          # a few steps of each, no accuracy target (what the test runs)

The dataset is `unigrad.nn.datasets.digits()`: 1438 training and 359 test images, a fixed split. Each epoch
visits the training set once in an order drawn with `Tensor.randperm` (the samples are gathered on the device),
in minibatches of a fixed size (the last partial one is dropped, so every step has the same shapes: after the first
epoch, steps hit the schedule and program caches). Each step realizes the loss and the hit count together with
Adam's update, in one schedule. Everything random comes from `Tensor.manual_seed`: two runs print the same numbers.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from unigrad import Tensor, nn, no_grad
from unigrad.nn import optim
from unigrad.nn.datasets import digits
from unigrad.nn.state import get_parameters

TARGET_ACCURACY = 0.97
SEED = 1337


class MLP:
    """64 pixels -> 128 hidden units (ReLU) -> 10 class logits."""

    def __init__(self) -> None:
        self.l1 = nn.Linear(64, 128)
        self.l2 = nn.Linear(128, 10)

    def __call__(self, x: Tensor) -> Tensor:
        return self.l2(self.l1(x.flatten(1)).relu())


class CNN:
    """(1, 8, 8) -> 3x3 convolution to 16 channels (ReLU) -> 2x2 max pool to (16, 4, 4) -> 10 class logits."""

    def __init__(self) -> None:
        self.conv = nn.Conv2d(1, 16, 3, padding=1)
        self.fc = nn.Linear(16 * 4 * 4, 10)

    def __call__(self, x: Tensor) -> Tensor:
        return self.fc(self.conv(x).relu().max_pool2d(2).flatten(1))


@dataclass(frozen=True)
class Recipe:
    """How one model is trained: the model, epochs, minibatch size and Adam's learning rate."""

    make: Callable[[], MLP | CNN]
    epochs: int
    batch_size: int
    lr: float


RECIPES = {
    "mlp": Recipe(MLP, epochs=15, batch_size=128, lr=1e-2),
    "cnn": Recipe(CNN, epochs=20, batch_size=128, lr=1e-2),
}


@dataclass
class History:
    """Per epoch: the mean training loss and training accuracy over its steps; then the test accuracy."""

    losses: list[float]
    accuracies: list[float]
    test_accuracy: float = 0.0
    seconds: float = 0.0


def progress(name: str, epoch: int, epochs: int, done: int, total: int, loss: float, acc: float, rate: float) -> str:
    width = 20
    filled = width * done // total
    bar = "#" * filled + "." * (width - filled)
    return (
        f"{name} epoch {epoch:>{len(str(epochs))}}/{epochs} [{bar}] {done:>{len(str(total))}}/{total}"
        f"  loss {loss:.4f}  acc {acc:6.2%}  {rate:8,.0f} samples/s"
    )


def train_epoch(
    name: str,
    model: MLP | CNN,
    opt: optim.Optimizer,
    x_train: Tensor,
    y_train: Tensor,
    batch_size: int,
    steps: int,
    epoch: int,
    epochs: int,
) -> tuple[float, float]:
    """One pass over the training set in a fresh random order, `steps` minibatches of `batch_size` samples, with a
    progress line (refreshed in place after every step on a terminal). Returns the mean loss and accuracy."""
    refresh = sys.stdout.isatty()
    t0 = time.perf_counter()
    order = Tensor.randperm(x_train.shape[0]).realize()  # realized once: every step slices the same permutation
    loss_sum, correct, seen = 0.0, 0, 0
    for step in range(steps):
        idx = order[step * batch_size : (step + 1) * batch_size]
        x, y = x_train[idx], y_train[idx]
        opt.zero_grad()
        logits = model(x)
        loss = logits.sparse_categorical_crossentropy(y)
        loss.backward()
        hits = (logits.argmax(-1) == y).sum()
        # the loss and hits read the parameters from before the update: realize them in the step's schedule
        Tensor.realize(loss, hits, *opt.schedule_step())
        loss_sum += loss.item() * batch_size
        correct += int(hits.item())
        seen += batch_size
        last = step == steps - 1
        if refresh or last:
            rate = seen / (time.perf_counter() - t0)
            line = progress(name, epoch, epochs, step + 1, steps, loss_sum / seen, correct / seen, rate)
            print(f"\r{line}" if refresh else line, end="\n" if last else "", flush=True)
    return loss_sum / seen, correct / seen


def train(name: str, recipe: Recipe, data: tuple[Tensor, ...], epochs: int, max_steps: int | None = None) -> History:
    """Train a fresh model from `recipe` for `epochs` epochs (each at most `max_steps` steps when given), then
    measure its test accuracy."""
    x_train, y_train, x_test, y_test = data
    model = recipe.make()
    opt = optim.Adam(get_parameters(model), lr=recipe.lr)
    steps = x_train.shape[0] // recipe.batch_size  # the last partial batch is dropped: one set of shapes
    if max_steps is not None:
        steps = min(steps, max_steps)
    history = History([], [])
    start = time.perf_counter()
    was_training, Tensor.training = Tensor.training, True
    try:
        for epoch in range(1, epochs + 1):
            loss, acc = train_epoch(name, model, opt, x_train, y_train, recipe.batch_size, steps, epoch, epochs)
            history.losses.append(loss)
            history.accuracies.append(acc)
    finally:
        Tensor.training = was_training
    history.seconds = time.perf_counter() - start
    with no_grad():
        history.test_accuracy = (model(x_test).argmax(-1) == y_test).mean().item()
    return history


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=["mlp", "cnn", "both"], default="both")
    parser.add_argument("--epochs", type=int, default=None, help="epochs per model (default: each model's recipe)")
    parser.add_argument("--quick", action="store_true", help="a short run: 3 epochs of 2 steps, no accuracy target")
    args = parser.parse_args(argv)

    Tensor.manual_seed(SEED)
    data = digits()
    print(f"digits: {data[0].shape[0]} training and {data[2].shape[0]} test images of 8x8 pixels, 10 classes")
    names = ["mlp", "cnn"] if args.model == "both" else [args.model]
    start = time.perf_counter()
    results = {}
    for name in names:
        recipe = RECIPES[name]
        epochs = args.epochs or (3 if args.quick else recipe.epochs)
        results[name] = train(name, recipe, data, epochs, max_steps=2 if args.quick else None)
    total = time.perf_counter() - start

    print()
    for name, h in results.items():
        print(f"{name}: test accuracy {h.test_accuracy:.2%} (trained in {h.seconds:.1f} s)")
    print(f"total time {total:.1f} s")
    missed = [name for name, h in results.items() if h.test_accuracy < TARGET_ACCURACY]
    if missed and not args.quick:
        print(f"under the {TARGET_ACCURACY:.0%} target: {', '.join(missed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
