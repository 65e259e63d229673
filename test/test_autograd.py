"""unigrad.autograd (torch.autograd.grad / backward) against torch: vector-Jacobian products of several outputs
and inputs, unused inputs, second derivatives through create_graph (a gradient penalty), and torch's errors."""

import numpy as np
import pytest
import torch

import unigrad
from unigrad import Tensor

rng = np.random.default_rng(0)


def pair(*shape: int) -> tuple[Tensor, torch.Tensor]:
    x = rng.standard_normal(shape).astype(np.float32)
    return Tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)


def close(ours, ref) -> None:
    np.testing.assert_allclose(ours.numpy(), ref.detach().numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("shape", [(3, 4), (1,), (5, 1, 2)])
def test_grad_of_several_outputs_and_inputs(shape):
    (a, ta), (b, tb) = pair(*shape), pair(*shape)
    w = rng.standard_normal(shape).astype(np.float32)
    outs = [(a * b).sin(), a.exp().sum()]
    touts = [(ta * tb).sin(), ta.exp().sum()]
    ours = unigrad.autograd.grad(outs, [a, b], grad_outputs=[Tensor(w), None])
    ref = torch.autograd.grad(touts, [ta, tb], grad_outputs=[torch.from_numpy(w), None])
    for o, r in zip(ours, ref):
        close(o, r)
    assert a.grad is None and b.grad is None  # grad() leaves .grad alone


def test_unused_inputs():
    (a, _), (b, _) = pair(3), pair(3)
    with pytest.raises(RuntimeError, match="allow_unused=True"):
        unigrad.autograd.grad(a.sum(), [a, b])
    ga, gb = unigrad.autograd.grad(a.sum(), [a, b], allow_unused=True)
    close(ga, torch.ones(3))
    assert gb is None
    _, gz = unigrad.autograd.grad(a.sum(), [a, b], allow_unused=True, materialize_grads=True)
    close(gz, torch.zeros(3))


def test_gradient_penalty_second_derivative():
    """create_graph=True: the gradient is itself differentiable (WGAN-GP's penalty on |d out / d x|)."""
    (x, tx), (w, tw) = pair(4, 3), pair(3, 2)

    def penalty(lib, x, w):
        out = (x @ w).tanh().sum()
        (g,) = lib.autograd.grad(out, x, create_graph=True)
        return ((g * g).sum(1).sqrt() - 1).square().mean()

    penalty(unigrad, x, w).backward()
    penalty(torch, tx, tw).backward()
    close(w.grad, tw.grad)
    close(x.grad, tx.grad)


def test_backward_of_several_tensors():
    (a, ta), (b, tb) = pair(2, 3), pair(2, 3)
    g = rng.standard_normal((2, 3)).astype(np.float32)
    unigrad.autograd.backward([(a * b).sum(), a * 3], [None, Tensor(g)])
    torch.autograd.backward([(ta * tb).sum(), ta * 3], [None, torch.from_numpy(g)])
    close(a.grad, ta.grad)
    close(b.grad, tb.grad)


def test_grad_of_module_parameters_before_any_optimizer():
    """A fresh module's parameters (requires_grad undecided) are differentiable inputs, as torch's."""
    tlin = torch.nn.Linear(4, 3)
    lin = unigrad.nn.Linear(4, 3)
    lin.load_state_dict({k: Tensor(v.detach().numpy().copy()) for k, v in tlin.state_dict().items()})
    x = rng.standard_normal((6, 4)).astype(np.float32)
    ours = unigrad.autograd.grad(lin(Tensor(x)).relu().sum(), [lin.weight, lin.bias])
    ref = torch.autograd.grad(tlin(torch.from_numpy(x)).relu().sum(), [tlin.weight, tlin.bias])
    for o, r in zip(ours, ref):
        close(o, r)
    assert lin.weight.grad is None  # grad() does not touch .grad


def test_errors():
    a, _ = pair(3)
    with pytest.raises(RuntimeError, match="implicitly created only for scalar outputs"):
        unigrad.autograd.grad(a * 2, a)
    with pytest.raises(RuntimeError, match="does not require grad"):
        unigrad.autograd.grad(Tensor(np.ones(1, np.float32)), a)
    with pytest.raises(RuntimeError, match="grad_outputs"):
        unigrad.autograd.grad([a.sum()], a, grad_outputs=[None, None])
