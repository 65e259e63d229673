"""Small API additions for torch/tinygrad compatibility (aliases and thin compositions), against torch."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from unigrad import Tensor, dtypes


def check(u: Tensor, t: torch.Tensor, atol: float = 1e-6) -> None:
    assert u.shape == tuple(t.shape), (u.shape, tuple(t.shape))
    assert u.dtype.name == str(t.dtype).removeprefix("torch."), (u.dtype, t.dtype)
    np.testing.assert_allclose(u.numpy(), t.detach().numpy(), atol=atol, rtol=1e-5)


def test_comparison_methods_and_operator_aliases():
    a, b = np.array([1.0, 2.0, 3.0], np.float32), np.array([2.0, 2.0, 1.0], np.float32)
    for name in ("lt", "gt", "le", "ge"):
        check(getattr(Tensor(a), name)(Tensor(b)), getattr(torch.tensor(a), name)(torch.tensor(b)))
    check(abs(Tensor(-a)), abs(torch.tensor(-a)))
    check(+Tensor(a), +torch.tensor(a))
    i = np.array([1, 2, 3])
    check(2 << Tensor(i), 2 << torch.tensor(i))
    check(64 >> Tensor(i), 64 >> torch.tensor(i))
    check([[1.0, 2.0, 3.0]] @ Tensor(np.eye(3, dtype=np.float32)), torch.tensor([[1.0, 2.0, 3.0]]) @ torch.eye(3))
    check(Tensor(i).bitwise_not(), torch.tensor(i).bitwise_not())
    check(Tensor([True, False]).bitwise_not(), torch.tensor([True, False]).bitwise_not())
    check(Tensor(i).xor(6), torch.tensor(i).bitwise_xor(6))
    check(
        Tensor([-7, 7]).idiv(Tensor([2, -2])), torch.tensor([-7, 7]).div(torch.tensor([2, -2]), rounding_mode="trunc")
    )
    with pytest.raises(RuntimeError):
        Tensor(a).bitwise_not()


def test_isclose_allclose_trace():
    a = np.array([1.0, np.inf, -np.inf, np.nan, 1.0, 5.0], np.float32)
    b = np.array([1.0 + 1e-6, np.inf, np.inf, np.nan, 1.1, np.inf], np.float32)
    for kw in ({}, {"equal_nan": True}, {"rtol": 0.2}, {"atol": 0.5, "rtol": 0.0}):
        check(Tensor(a).isclose(Tensor(b), **kw), torch.tensor(a).isclose(torch.tensor(b), **kw))
    check(Tensor([1, 2]).isclose(Tensor([1, 3])), torch.tensor([1, 2]).isclose(torch.tensor([1, 3])))
    assert Tensor([1.0, 2.0]).allclose(Tensor([1.0, 2.0 + 1e-7])) is True
    assert Tensor([1.0, 2.0]).allclose(Tensor([1.0, 2.1])) is False
    m = np.arange(12).reshape(3, 4)
    check(Tensor(m).trace(), torch.tensor(m).trace())
    check(Tensor(m.astype(np.float32)).trace(), torch.tensor(m.astype(np.float32)).trace())


def test_clone_and_new_constructors():
    x = Tensor([1.0, 2.0]).realize()
    c = x.clone()
    c += 1  # the clone has its own buffer
    assert x.tolist() == [1.0, 2.0] and c.tolist() == [2.0, 3.0]
    w = Tensor([1.0, 2.0], requires_grad=True)
    (w.clone() * 3).sum().backward()
    assert w.grad.tolist() == [3.0, 3.0]
    i = Tensor([1, 2], dtype="int32")
    assert i.new_zeros(2, 3).shape == (2, 3) and i.new_zeros((2, 3)).dtype is dtypes.int32
    assert i.new_ones(2).tolist() == [1, 1] and i.new_full((2,), 7).tolist() == [7, 7]
    assert i.new_empty(4).shape == (4,) and i.new_tensor([5, 6]).dtype is dtypes.int32
    assert i.new_zeros(2, dtype="float32").dtype is dtypes.float32


def test_deepcopy_copies_values_grad_and_flags_as_torch():
    import copy

    from unigrad import no_grad

    rng = np.random.default_rng(0)
    for shape in ((0,), (1,), (3, 5)):
        x = rng.standard_normal(shape).astype(np.float32)
        u, t = Tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        (u * 2).sum().backward()
        (t * 2).sum().backward()
        cu, ct = copy.deepcopy(u), copy.deepcopy(t)
        assert cu.requires_grad is ct.requires_grad is True and cu.is_leaf
        check(cu.grad, ct.grad)
        assert cu.grad is not u.grad
        with no_grad():
            cu.add_(1)  # the copy has its own buffer: the original keeps its values
        check(u, t)
        check(cu, ct + 1)
        view = Tensor(x).realize().T if len(shape) == 2 else Tensor(x).realize()
        cv = copy.deepcopy(view)
        cv.mul_(3)
        np.testing.assert_array_equal(view.numpy(), x.T if len(shape) == 2 else x)
        np.testing.assert_allclose(cv.numpy(), (x.T if len(shape) == 2 else x) * 3)
        assert cv.requires_grad is None
    tied = Tensor(rng.standard_normal(3).astype(np.float32))
    a, b = copy.deepcopy([tied, tied])
    assert a is b  # a tensor met twice is copied once
    with pytest.raises(RuntimeError, match=r"deepcopy: only tensors created explicitly by the user .*detach"):
        copy.deepcopy(Tensor(x, requires_grad=True) * 2)


@pytest.mark.parametrize(
    "formula,shape,sizes,ref",
    [
        ("b c (h w) -> b (c h) w", (2, 3, 4), {"h": 2}, lambda x: x.reshape(2, 6, 2)),
        ("b c w -> w b c", (2, 3, 4), {}, lambda x: x.transpose(2, 0, 1)),
        ("a b c -> c (a b)", (2, 3, 4), {}, lambda x: x.transpose(2, 0, 1).reshape(4, 6)),
        ("... w -> w ...", (2, 3, 4), {}, lambda x: x.transpose(2, 0, 1)),
        ("b ... -> (...) b", (2, 3, 4), {}, lambda x: x.reshape(2, 12).T),
        ("b c w -> b 1 (c w)", (2, 3, 4), {}, lambda x: x.reshape(2, 1, 12)),
        ("b () c w -> (b c) w", (2, 1, 3, 4), {}, lambda x: x.reshape(6, 4)),
        ("(a b) c -> a b c", (6, 4), {"a": 3}, lambda x: x.reshape(3, 2, 4)),
    ],
)
def test_rearrange(formula, shape, sizes, ref):
    x = np.arange(np.prod(shape)).reshape(shape)
    np.testing.assert_array_equal(Tensor(x).rearrange(formula, **sizes).numpy(), ref(x))


def test_rearrange_errors():
    x = Tensor.ones(2, 3)
    with pytest.raises(RuntimeError):
        x.rearrange("a b c -> a b c")
    with pytest.raises(RuntimeError):
        x.rearrange("a b -> a")
    with pytest.raises(ValueError):
        x.rearrange("(a b) c -> a b c")  # two unknown sizes in one group


def test_nll_loss_weight_and_orders():
    rng = np.random.default_rng(0)
    lp = F.log_softmax(torch.tensor(rng.standard_normal((6, 4)).astype(np.float32)), 1)
    y, w = rng.integers(0, 4, 6), rng.random(4).astype(np.float32)
    for reduction in ("mean", "sum", "none"):
        for kw in ({}, {"ignore_index": 2}):
            want = F.nll_loss(lp, torch.tensor(y), weight=torch.tensor(w), reduction=reduction, **kw)
            check(Tensor(lp.numpy()).nll_loss(Tensor(y), Tensor(w), reduction=reduction, **kw), want, atol=1e-6)
    want = F.nll_loss(lp, torch.tensor(y), reduction="sum")
    check(Tensor(lp.numpy()).nll_loss(Tensor(y), "sum"), want, atol=1e-5)  # the older (Y, reduction) order


def test_pad_mode_positional_sequential_and_misc():
    x = np.arange(6, dtype=np.float32).reshape(1, 2, 3)
    check(Tensor(x).pad((1, 1), "reflect"), F.pad(torch.tensor(x), (1, 1), "reflect"))
    check(Tensor(x).pad((1, 1), "constant", 2.0), F.pad(torch.tensor(x), (1, 1), "constant", 2.0))
    check(Tensor(x).pad((None, (1, 0), None), value=3.0), F.pad(torch.tensor(x), (0, 0, 1, 0), value=3.0))
    out = Tensor(x).sequential([lambda t: t * 2, Tensor.relu, lambda t: t.sum(-1)])
    check(out, (torch.tensor(x) * 2).relu().sum(-1))
    assert Tensor.training is False
    w = Tensor([1.0, 2.0], requires_grad=True)
    (w.contiguous_backward() * w).sum().backward()
    assert w.grad.tolist() == [2.0, 4.0]
    mv = Tensor(x).data()
    assert mv.shape == (1, 2, 3) and mv.tolist() == x.tolist()
    values, idx = Tensor([3.0, 1.0, 2.0]).topk(2, sorted_=True)
    assert values.tolist() == [3.0, 2.0] and idx.tolist() == [0, 2]


def test_tinygrad_replace_to_and_scaled_uniform():
    """tinygrad's replace (rebind to another value), to_ (move in place) and scaled_uniform (U(-1,1)/sqrt(n))."""
    a = Tensor(np.array([1.0, 2.0], np.float32))
    assert a.replace(Tensor(np.array([3.0, 4.0], np.float32))) is a
    np.testing.assert_array_equal(a.numpy(), [3.0, 4.0])
    with pytest.raises(RuntimeError, match="does not match"):
        a.replace(Tensor(np.zeros(3, np.float32)))
    assert a.to_("CPU:1") is a and a.device == "CPU:1"
    np.testing.assert_array_equal(a.numpy(), [3.0, 4.0])
    Tensor.manual_seed(0)
    w = Tensor.scaled_uniform(64, 16).numpy()
    assert w.shape == (64, 16) and np.abs(w).max() <= 1 / 32 and np.abs(w).max() > 0.9 / 32
