"""print(tensor) as torch prints it: values (4 decimals, aligned rows, scientific where torch uses it), the dtype
when not the default, requires_grad; set_printoptions; the lazy form inside TinyJit."""

import numpy as np
import pytest
import torch

import unigrad
from unigrad import Tensor, TinyJit

rng = np.random.default_rng(0)


@pytest.mark.parametrize(
    "make",
    [
        lambda lib: lib.tensor([1.5, 2.0]),
        lambda lib: lib.tensor([1, 2]),
        lambda lib: lib.tensor([1, 2], dtype=lib.int32),
        lambda lib: lib.tensor([True, False]),
        lambda lib: lib.tensor(3.25),
        lambda lib: lib.tensor([1.5], dtype=lib.float64),
        lambda lib: lib.tensor([[1e-8, 1e8]]),
        lambda lib: lib.zeros(0, 3),
        lambda lib: lib.tensor([float("nan"), 1.25, float("inf")]),
        lambda lib: lib.tensor(rng.standard_normal((3, 4)).astype(np.float32).round(4)),
        lambda lib: lib.tensor([2.5], requires_grad=True),
        lambda lib: lib.tensor([3.0, -1.0]),
        lambda lib: lib.tensor(np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 8),
    ],
)
def test_prints_like_torch(make):
    state = rng.bit_generator.state
    ours = str(make(unigrad))
    rng.bit_generator.state = state
    assert ours == str(make(torch))


def test_long_tensors_are_summarized_and_options_apply():
    x = np.linspace(0, 1, 2001, dtype=np.float32)
    assert str(Tensor(x)) == str(torch.from_numpy(x))  # summarized with ..., in scientific notation
    try:
        unigrad.set_printoptions(precision=2)
        torch.set_printoptions(precision=2)
        y = rng.standard_normal(5).astype(np.float32)
        assert str(Tensor(y)) == str(torch.from_numpy(y))
        unigrad.set_printoptions(profile="full")
        assert "..." not in str(Tensor(x))
    finally:
        unigrad.set_printoptions(profile="default")
        torch.set_printoptions(profile="default")
    with pytest.raises(ValueError, match="profile"):
        unigrad.set_printoptions(profile="huge")


def test_non_leaf_and_device_and_jit():
    y = Tensor([1.0], requires_grad=True) * 2
    assert str(y).startswith("tensor([2.], grad_fn=<")
    assert str(Tensor.ones(2, device="PYTHON")) == "tensor([1., 1.], device='PYTHON')"
    seen = []

    @TinyJit
    def f(x: Tensor) -> Tensor:
        out = x + 1
        seen.append(repr(out))  # values cannot be read while capturing: the lazy form
        return out

    for _ in range(3):
        f(Tensor([1.0, 2.0]).realize())
    assert seen and all(s.startswith("<Tensor ") for s in seen)
