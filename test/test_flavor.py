"""The two flavors (unigrad/flavor.py): tinygrad's semantics on the native API, torch's under the facade. Each
difference is pinned in both flavors; writes through views are the same in both."""

import subprocess
import sys

import numpy as np
import pytest
import torch

from unigrad import Context, Tensor, dtypes
from unigrad import config

rng = np.random.default_rng(0)
INDEX_OPS = {
    "argmax": lambda x: x.argmax(-1),
    "argmin": lambda x: x.argmin(),
    "sort": lambda x: x.sort()[1],
    "argsort": lambda x: x.argsort(),
    "topk": lambda x: x.topk(1)[1],
    "nonzero": lambda x: x.nonzero(),
    "cummax": lambda x: x.cummax(0)[1],
    "cummin": lambda x: x.cummin(0)[1],
    "max_pool2d": lambda x: _max_pool_indices(x.reshape(1, 1, *x.shape)),
}


def _max_pool_indices(x):
    if isinstance(x, torch.Tensor):
        return torch.nn.functional.max_pool2d(x, (1, 2), ceil_mode=True, return_indices=True)[1]
    return x.max_pool2d((1, 2), ceil_mode=True, return_indices=True)[1]


MADE_INTS = {
    "arange": lambda: Tensor.arange(5),
    "full": lambda: Tensor.full((2, 3), 4),
    "list": lambda: Tensor([1, 2]),
    "scalar": lambda: Tensor(3),
    "one_hot": lambda: Tensor([0, 2]).one_hot(3),
    "randint": lambda: Tensor.randint(4, high=9),
    "randperm": lambda: Tensor.randperm(5),
}


@pytest.mark.parametrize("shape", [(1, 1), (3, 5), (4, 7)])
@pytest.mark.parametrize("op", sorted(INDEX_OPS))
@pytest.mark.parametrize("flavor", ["tinygrad", "torch"])
def test_index_results_take_the_flavors_int(op, flavor, shape):
    """Indices are int32 in tinygrad, int64 in torch; the values are torch's in both."""
    a = rng.standard_normal(shape).astype(np.float32)
    with Context(FLAVOR=flavor):
        out = INDEX_OPS[op](Tensor(a))
        assert out.dtype is (dtypes.int32 if flavor == "tinygrad" else dtypes.int64)
    ref = INDEX_OPS[op](torch.tensor(a))
    np.testing.assert_array_equal(out.numpy(), ref.numpy())


@pytest.mark.parametrize("make", sorted(MADE_INTS))
@pytest.mark.parametrize("flavor", ["tinygrad", "torch"])
def test_ints_made_without_dtype(make, flavor):
    with Context(FLAVOR=flavor):
        assert MADE_INTS[make]().dtype is (dtypes.int32 if flavor == "tinygrad" else dtypes.int64)


@pytest.mark.parametrize(
    "dt, tiny, tor",
    [
        (dtypes.bool, dtypes.int32, dtypes.int64),
        (dtypes.int8, dtypes.int32, dtypes.int64),
        (dtypes.int32, dtypes.int32, dtypes.int64),
        (dtypes.int64, dtypes.int64, dtypes.int64),
        (dtypes.uint8, dtypes.uint32, dtypes.int64),
    ],
)
@pytest.mark.parametrize("op", ["sum", "prod", "cumsum"])
def test_integer_accumulation(op, dt, tiny, tor):
    a = rng.integers(0, 3, (3, 4)).astype(dt.fmt)
    for flavor, want in (("tinygrad", tiny), ("torch", tor)):
        with Context(FLAVOR=flavor):
            out = getattr(Tensor(a, dtype=dt), op)(0)
            assert out.dtype is want, (flavor, op, dt)
            ref = getattr(torch.tensor(a), op)(0).numpy()
            np.testing.assert_array_equal(out.numpy(), ref)


def test_default_dtype_knobs():
    with Context(DEFAULT_FLOAT="HALF"):
        assert Tensor([1.0]).dtype is dtypes.float16 and Tensor.rand(2).dtype is dtypes.float16
    assert Tensor([1.0]).dtype is dtypes.float32
    with Context(DEFAULT_INT="int64"):
        assert Tensor.arange(3).dtype is dtypes.int64
    dtypes.default_int = dtypes.int16  # tinygrad's spelling sets the knob (the test's fixture restores it)
    assert Tensor([1, 2]).dtype is dtypes.int16 and config.DEFAULT_INT.value == "int16"
    with pytest.raises(TypeError):
        dtypes.default_float = dtypes.int32


@pytest.mark.parametrize("shape", [(4,), (1,), (3, 5)])
def test_tinygrad_backward_fills_unmarked_leaves(shape):
    """tinygrad: a backward fills .grad of every leaf it reaches not marked requires_grad=False (a factory's result,
    a constructed tensor, a realized one); a tensor built from another one gets none."""
    a = rng.standard_normal(shape).astype(np.float32)
    tt, c = Tensor(a), Tensor.randn(*shape)
    r = Tensor.rand(*shape).realize()
    off = Tensor(a, requires_grad=False)
    mid = tt * c
    (mid * (tt < 0) + r * r + off).sum().backward()
    ta, tc = torch.tensor(a, requires_grad=True), torch.tensor(c.numpy(), requires_grad=True)
    tr = torch.tensor(r.numpy(), requires_grad=True)
    (ta * tc * (ta < 0) + tr * tr).sum().backward()
    for ours, theirs in ((tt, ta), (c, tc), (r, tr)):
        np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-6)
    assert off.grad is None and mid.grad is None


@pytest.mark.flavor("torch")
def test_torch_backward_needs_requires_grad():
    tt = Tensor.randn(4)
    with pytest.raises(RuntimeError, match="does not require grad"):
        (tt * 2).sum().backward()
    w = Tensor.randn(4, requires_grad=True)
    x = Tensor.randn(4)
    (w * x).sum().backward()
    assert x.grad is None
    np.testing.assert_allclose(w.grad.numpy(), x.numpy())


def test_detach_never_gets_a_grad():
    x = Tensor.randn(3)
    d = x.detach()
    assert d.requires_grad is False
    (x * d).sum().backward()
    assert d.grad is None and x.grad is not None


@pytest.mark.parametrize("flavor", ["tinygrad", "torch"])
def test_cummax_returns_values_and_indices(flavor):
    a = rng.standard_normal((5, 3)).astype(np.float32)
    with Context(FLAVOR=flavor):
        v, i = Tensor.cummax(Tensor(a), axis=0)
        vm, im = Tensor(a).cummin(1)
    tv, ti = torch.cummax(torch.tensor(a), 0)
    tvm, tim = torch.cummin(torch.tensor(a), 1)
    np.testing.assert_array_equal(v.numpy(), tv.numpy())
    np.testing.assert_array_equal(i.numpy(), ti.numpy())
    np.testing.assert_array_equal(vm.numpy(), tvm.numpy())
    np.testing.assert_array_equal(im.numpy(), tim.numpy())


def _base() -> tuple[np.ndarray, Tensor]:
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    return a, Tensor(a).realize()


WRITES = {
    "T[0]=5": (lambda t: t.T.__setitem__(0, 5), lambda a: a.T.__setitem__(0, 5)),
    "t[1].assign": (lambda t: t[1].assign(Tensor.ones(4)), lambda a: a[1].__setitem__(slice(None), 1)),
    "flip[2]=1": (lambda t: t[::-1].__setitem__(2, 1), lambda a: a[::-1].__setitem__(2, 1)),
    "detach.assign": (lambda t: t.detach().assign(Tensor.zeros(3, 4)), lambda a: a.__setitem__(slice(None), 0)),
    "t[:2].assign": (lambda t: t[:2].assign(Tensor.full((2, 4), 7.0)), lambda a: a[:2].__setitem__(slice(None), 7)),
    "t[:, 1:3][0]=-1": (lambda t: t[:, 1:3].__setitem__(0, -1), lambda a: a[:, 1:3].__setitem__(0, -1)),
    "t[1, 2]=9": (lambda t: t.__setitem__((1, 2), 9), lambda a: a.__setitem__((1, 2), 9)),
}


@pytest.mark.parametrize("flavor", ["tinygrad", "torch"])
@pytest.mark.parametrize("case", sorted(WRITES))
def test_writes_through_views_reach_the_base(case, flavor):
    a, t = _base()
    view = t[1:]  # another view of the same buffer sees the write too
    with Context(FLAVOR=flavor):
        WRITES[case][0](t)
        WRITES[case][1](a)
        np.testing.assert_array_equal(t.numpy(), a)
        np.testing.assert_array_equal(view.numpy(), a[1:])


@pytest.mark.parametrize("flavor", ["tinygrad", "torch"])
def test_lazy_reader_keeps_the_values_of_its_making(flavor):
    """A computed tensor made before a write through a view holds the values of its making (flavor.py:
    both flavors keep torch's values-at-making for now); the base and its views see the write."""
    a, t = _base()
    with Context(FLAVOR=flavor):
        y = t * 2
        t[1:].assign(Tensor.zeros(2, 4))
        np.testing.assert_array_equal(y.numpy()[1], a[1] * 2)
        np.testing.assert_array_equal(t.numpy()[1], 0)


def test_setitem_on_a_lazy_tensor_stays_functional():
    """A tensor with no buffer yet, or a value that requires grad: the graph is replaced, nothing else changes."""
    a = rng.standard_normal((3, 4)).astype(np.float32)
    base = Tensor(a)
    lazy = base * 1
    lazy[0] = 0
    np.testing.assert_array_equal(base.numpy(), a)
    np.testing.assert_array_equal(lazy.numpy()[0], 0)
    w = Tensor.ones(4, requires_grad=True)
    x = Tensor(a).realize()
    x[1] = w * 3
    x.sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), np.full(4, 3.0))


def test_training_knob_is_tensor_training():
    assert not Tensor.training
    with Context(TRAINING=1):
        assert Tensor.training
    with Tensor.train():
        assert config.TRAINING.value == 1
    assert not Tensor.training


@pytest.mark.flavor("torch")  # what the import selects (checked in a fresh interpreter below)
def test_facade_imports_switch_to_torch_and_alias_modules():
    import unigrad.nn.functional as F
    import unigrad.torch as ut
    import unigrad.torch.nn.functional as TF
    from unigrad.torch.optim.lr_scheduler import StepLR
    from unigrad.torch.utils.data import DataLoader

    from unigrad.optim.lr_scheduler import StepLR as S2
    from unigrad.utils.data import DataLoader as D2

    # the first import switches the process (seen in a fresh interpreter: other tests may have imported it already)
    code = "import unigrad.torch; from unigrad import config; print(config.FLAVOR.value)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "torch"
    assert TF is F and StepLR is S2 and DataLoader is D2 and ut.nn is __import__("unigrad").nn
    assert ut.arange(3).dtype is dtypes.int64 and F.__spec__.name == "unigrad.nn.functional"
    with pytest.raises(ModuleNotFoundError):
        import unigrad.torch.no_such_module  # noqa: F401
