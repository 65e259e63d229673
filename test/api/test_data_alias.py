"""Tensor.data as torch has it (an alias of the values that tracks no gradient, written in place by the idioms torch
code uses on parameters) and as tinygrad has it (called: the values as a memoryview)."""

import numpy as np
import pytest
import torch

import unigrad
from unigrad import Tensor, nn

rng = np.random.default_rng(0)


def pair(*shape: int) -> tuple[Tensor, torch.Tensor]:
    x = rng.standard_normal(shape).astype(np.float32)
    return Tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)


@pytest.mark.parametrize("shape", [(), (1,), (5,), (3, 4), (0, 2)])
def test_in_place_on_data_writes_the_tensor(shape):
    u, t = pair(*shape)
    u.data.mul_(2).add_(1)
    t.data.mul_(2).add_(1)
    np.testing.assert_allclose(u.numpy(), t.detach().numpy(), rtol=1e-6)
    assert u.requires_grad and u.is_leaf and not u.data.requires_grad
    u.data.zero_()
    assert not u.numpy().any()


def test_manual_sgd_step_matches_torch():
    """One parameter at a time: the bias's gradient (still lazy, reading the weight) must see the weight from before
    its in-place update, as torch's gradients, computed at backward(), do."""
    x = rng.standard_normal((6, 4)).astype(np.float32)
    um, tm = nn.Linear(4, 3), torch.nn.Linear(4, 3)
    um.weight, um.bias = Tensor(tm.weight.detach().numpy().copy()), Tensor(tm.bias.detach().numpy().copy())
    for _ in range(3):
        for m, xx in ((um, Tensor(x)), (tm, torch.from_numpy(x))):
            m.zero_grad() if isinstance(m, torch.nn.Module) else None
            for p in m.parameters():
                p.grad = None
            m(xx).square().mean().backward()
            for p in m.parameters():
                p.data -= 0.1 * p.grad  # the classic torch update: __isub__ on the alias, then the setter
    np.testing.assert_allclose(um.weight.numpy(), tm.weight.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(um.bias.numpy(), tm.bias.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_init_through_data_and_copy():
    m = nn.Linear(64, 32)
    m.weight.data.normal_(0.0, 0.02)
    assert abs(float(m.weight.numpy().std()) - 0.02) < 0.004
    src = rng.standard_normal((32,)).astype(np.float32)
    m.bias.data.copy_(Tensor(src))
    np.testing.assert_array_equal(m.bias.numpy(), src)
    assert m.bias.requires_grad


def test_setter_keeps_identity_and_requires_grad():
    u, _ = pair(2, 3)
    ident = id(u)
    new = rng.standard_normal((4,)).astype(np.float32)
    u.data = Tensor(new) * 2  # a lazy value: realized into the tensor's own buffer
    assert id(u) == ident and u.shape == (4,) and u.requires_grad and u.is_leaf
    np.testing.assert_allclose(u.numpy(), new * 2)
    (u * u).sum().backward()
    np.testing.assert_allclose(u.grad.numpy(), 4 * new, rtol=1e-6)
    with pytest.raises(TypeError, match="Tensor.data: assigned value must be a Tensor"):
        u.data = [1.0, 2.0]


def test_setter_shares_a_filled_buffer_as_torch_shares_storage():
    a, b = Tensor.zeros(3).contiguous().realize(), Tensor.ones(3).contiguous().realize()
    a.data = b
    a.data.add_(1)
    ta, tb = torch.zeros(3), torch.ones(3)
    ta.data = tb
    ta.data.add_(1)
    np.testing.assert_array_equal(b.numpy(), tb.numpy())
    np.testing.assert_array_equal(a.numpy(), ta.numpy())


def test_a_lazy_tensor_is_realized_and_the_alias_reads_its_values():
    x = rng.standard_normal((3, 3)).astype(np.float32)
    u = Tensor(x) * 3 + 1
    d = u.data
    np.testing.assert_allclose(d.numpy(), x * 3 + 1, rtol=1e-6)
    np.testing.assert_allclose((d.sum() * 2).numpy(), (x * 3 + 1).sum() * 2, rtol=1e-5)
    assert isinstance(d, Tensor) and d.shape == (3, 3)


def test_called_data_is_tinygrads_memoryview():
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    mv = Tensor(x).data()
    assert isinstance(mv, memoryview) and mv.shape == (2, 3) and mv.format == "i"
    assert mv.tolist() == x.tolist()


def test_torch_style_module_code_runs_unchanged():
    """The shape of torch code that touches .data: weight tying init, a no_grad clamp, printing."""
    model = unigrad.nn.Sequential(unigrad.nn.Linear(5, 5), unigrad.nn.ReLU(), unigrad.nn.Linear(5, 2))
    for p in model.parameters():
        p.data.uniform_(-0.1, 0.1)
    with unigrad.no_grad():
        for p in model.parameters():
            p.data.clamp_(-0.05, 0.05)
    lim = np.float32(0.05)
    assert all(p.numpy().max() <= lim and p.numpy().min() >= -lim for p in model.parameters())
    assert any(p.numpy().max() == lim for p in model.parameters())  # the clamp reached the parameters
    assert "tensor(" in repr(model[0].bias.data)


def test_no_grad_in_place_update_one_parameter_at_a_time_matches_torch():
    """`with no_grad(): p -= lr * p.grad` over the parameters: each later gradient still reads the values of before
    the earlier parameters' writes (the same lazy-gradient hazard as through .data)."""
    x = rng.standard_normal((5, 3)).astype(np.float32)
    w0, b0 = rng.standard_normal((2, 3)).astype(np.float32), rng.standard_normal(2).astype(np.float32)
    uw, ub = Tensor(w0.copy(), requires_grad=True), Tensor(b0.copy(), requires_grad=True)
    tw, tb = torch.tensor(w0, requires_grad=True), torch.tensor(b0, requires_grad=True)
    for _ in range(3):
        for (w, b), xx, ng in (((uw, ub), Tensor(x), unigrad.no_grad), ((tw, tb), torch.from_numpy(x), torch.no_grad)):
            w.grad = b.grad = None
            (xx @ w.T + b).square().sum().backward()
            with ng():
                for p in (w, b):
                    p -= 0.01 * p.grad
    np.testing.assert_allclose(uw.numpy(), tw.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ub.numpy(), tb.detach().numpy(), rtol=1e-5, atol=1e-6)
