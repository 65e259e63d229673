"""examples/train_digits.py: a quick run of both models trains (the loss goes down) and reports test accuracy."""

import importlib.util
import re
import sys
from pathlib import Path

import pytest

from unigrad import Tensor

pytest.importorskip("sklearn.datasets")

SCRIPT = Path(__file__).resolve().parents[2] / "examples" / "train_digits.py"
EPOCH_LINE = re.compile(r"^(mlp|cnn) epoch +(\d+)/(\d+) .* loss (\d+\.\d+)  acc +(\d+\.\d+)%  +[\d,]+ samples/s$")


def load_example():
    """The script as a module, registered under its own name (its dataclasses look their module up there)."""
    if (module := sys.modules.get("examples_train_digits")) is not None:
        return module
    spec = importlib.util.spec_from_file_location("examples_train_digits", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_quick_run(capsys):
    assert load_example().main(["--quick"]) == 0
    out = capsys.readouterr().out
    assert not Tensor.training, "training mode must be switched off after training"
    losses: dict[str, list[float]] = {"mlp": [], "cnn": []}
    for line in out.splitlines():
        if m := EPOCH_LINE.match(line):
            assert 0 <= float(m[5]) <= 100
            losses[m[1]].append(float(m[4]))
    for name, per_epoch in losses.items():
        assert len(per_epoch) == 3, f"{name}: expected 3 epoch lines in:\n{out}"
        assert per_epoch[-1] < per_epoch[0], f"{name}: the loss did not go down: {per_epoch}"
        acc = re.search(rf"^{name}: test accuracy (\d+\.\d+)%", out, re.M)
        assert acc is not None, f"{name}: no test accuracy in:\n{out}"
        assert 0 <= float(acc[1]) <= 100


def test_same_seed_same_run():
    """Seeded by Tensor.manual_seed: two runs of the same recipe give the same losses."""
    example = load_example()
    runs = []
    for _ in range(2):
        Tensor.manual_seed(example.SEED)
        data = example.digits()
        runs.append(example.train("mlp", example.RECIPES["mlp"], data, epochs=1, max_steps=2).losses)
    assert runs[0] == runs[1]
