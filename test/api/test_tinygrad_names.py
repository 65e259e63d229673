"""The public names and knobs tinygrad programs use (issue 30): train mode and the optimizers' refusal to step
outside it, DEFAULT_FLOAT, the dtype groups and helpers on `dtypes`, fp8, GlobalCounters, LARS and SGD(classic=),
TinyJit(prune=) and pickled TinyJit, Tensor.is_param, Variable(dtype=), Tensor(bytes), size-changing bitcast,
pad_to(value=), the disk: device, pickle protocol 5. Values are checked against numpy or torch."""

import numpy as np
import pytest
import torch

from unigrad import Context, Tensor, dtypes, nn
from unigrad.nn import optim


# ---------------------------------------------------------------- train mode
def _one_step(opt: optim.Optimizer, w: Tensor) -> None:
    opt.zero_grad()
    (w * w).sum().backward()
    opt.step()


def test_optimizer_refuses_to_step_outside_train_mode():
    w = Tensor([1.0, 2.0])
    opt = optim.SGD([w], lr=0.1)
    with pytest.raises(RuntimeError, match=r"Tensor.train\(\)"):
        _one_step(opt, w)
    np.testing.assert_array_equal(w.numpy(), [1.0, 2.0])  # nothing was written
    with pytest.raises(RuntimeError, match="TRAINING=1"):
        opt.schedule_step()


@pytest.mark.parametrize("how", ["train", "context", "flag"])
def test_optimizer_steps_in_train_mode(how):
    w = Tensor([1.0, 2.0])
    opt = optim.SGD([w], lr=0.1)
    if how == "train":
        with Tensor.train():
            _one_step(opt, w)
    elif how == "context":
        with Context(TRAINING=1):
            assert Tensor.training
            _one_step(opt, w)
        assert not Tensor.training
    else:
        Tensor.training = True
        _one_step(opt, w)
    np.testing.assert_allclose(w.numpy(), [0.8, 1.6])


@pytest.mark.flavor("torch")
def test_torch_flavor_steps_without_train_mode():
    w = Tensor([1.0, 2.0], requires_grad=True)
    _one_step(optim.SGD([w], lr=0.1), w)
    np.testing.assert_allclose(w.numpy(), [0.8, 1.6])


def test_context_training_switches_dropout():
    x = Tensor.ones(1000)
    np.testing.assert_array_equal(x.dropout(0.5).numpy(), np.ones(1000))
    with Context(TRAINING=1):
        out = x.dropout(0.5).numpy()
    assert set(np.unique(out)) <= {0.0, 2.0} and 300 < (out == 0).sum() < 700
    with Context(TRAINING=1):
        layer = nn.Dropout(0.5)
        assert ((layer(x).numpy() == 0).sum()) > 0
    np.testing.assert_array_equal(nn.Dropout(0.5)(x).numpy(), np.ones(1000))
