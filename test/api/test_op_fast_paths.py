"""The Tensor ops whose common case builds its nodes at once (one result tensor, no intermediate ones): matmul,
broadcasting binary ops, division, relu, detach and single-axis reductions. Each is checked against PyTorch forward
and backward on its fast path's edge cases (size 0 and 1, odd sizes, rank and batch broadcasting, reversed
operands, non-contiguous views, nan), under no_grad too, and for making exactly one tensor (the eager overhead the
fast path exists for: issue 34). Cases off the fast path (other dtypes, 1-d matmul operands) give the same values.
"""

import importlib

import numpy as np
import pytest
import torch

from unigrad import Tensor, dtypes

tensor_module = importlib.import_module("unigrad.tensor")  # (unigrad.tensor the name is torch's tensor())


def made_by(fn) -> int:
    """How many tensors fn() registered (Tensor._new and friends append each one to tensor._made)."""
    before = len(tensor_module._made)
    out = fn()
    assert isinstance(out, Tensor)
    return len(tensor_module._made) - before


def pair(rng: np.random.Generator, shape: tuple[int, ...], transposed: bool = False) -> tuple[Tensor, torch.Tensor]:
    """A leaf requiring grad and torch's twin; transposed: a transposed view of a buffer (non-contiguous)."""
    x = rng.standard_normal(shape).astype(np.float32)
    if transposed and len(shape) >= 2:
        base = Tensor(np.ascontiguousarray(np.swapaxes(x, -1, -2)), requires_grad=True)
        tbase = torch.tensor(np.ascontiguousarray(np.swapaxes(x, -1, -2)), requires_grad=True)
        return base, tbase  # the caller transposes both (their .grad land on these bases)
    return Tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)


def check_grads(out: Tensor, ref: torch.Tensor, ours: list[Tensor], theirs: list[torch.Tensor]) -> None:
    """Values equal torch's; after backward of sum(out * w) (w random), so are the leaves' gradients."""
    assert out.shape == tuple(ref.shape)
    np.testing.assert_allclose(out.numpy(), ref.detach().numpy(), rtol=1e-4, atol=1e-5, equal_nan=True)
    if out.numel() == 0:
        return
    w = np.random.default_rng(1).standard_normal(tuple(ref.shape)).astype(np.float32)
    (out * Tensor(w)).sum().backward()
    (ref * torch.tensor(w)).sum().backward()
    for a, b in zip(ours, theirs):
        assert a.grad is not None and b.grad is not None
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-4, atol=1e-5)


MATMUL = [
    ((3, 4), (4, 5)),
    ((1, 1), (1, 1)),
    ((7, 13), (13, 1)),
    ((2, 3, 4), (4, 5)),  # batch on the left only
    ((3, 4), (2, 4, 5)),  # ... on the right only
    ((2, 3, 4), (2, 4, 5)),
    ((2, 1, 3, 4), (5, 4, 6)),  # batch dims broadcast against each other
    ((0, 4), (4, 3)),
    ((3, 0), (0, 2)),
    ((3, 4), (4, 0)),
]


@pytest.mark.parametrize("xs,ys", MATMUL)
@pytest.mark.parametrize("transposed", [False, True])
def test_matmul(xs, ys, transposed):
    rng = np.random.default_rng(0)
    if transposed:  # y as a transposed view (nn.Linear's x @ W.T)
        x, tx = pair(rng, xs)
        yb, tyb = pair(rng, (*ys[:-2], ys[-1], ys[-2]))
        y, ty = yb.transpose(-1, -2), tyb.transpose(-1, -2)
        leaves, tleaves = [x, yb], [tx, tyb]
    else:
        (x, tx), (y, ty) = pair(rng, xs), pair(rng, ys)
        leaves, tleaves = [x, y], [tx, ty]
    check_grads(x @ y, tx @ ty, leaves, tleaves)


def test_matmul_makes_one_tensor():
    x, y = Tensor.rand(8, 16).realize(), Tensor.rand(16, 4).realize()
    assert made_by(lambda: x @ y) == 1
    w = Tensor.rand(4, 16).realize()
    assert made_by(lambda: x @ w.T) == 2  # (.T is a tensor of its own)
    xb = Tensor.rand(2, 8, 16).realize()
    assert made_by(lambda: xb @ y) == 1


@pytest.mark.parametrize("xs,ys", [((4,), (4, 3)), ((3, 4), (4,)), ((4,), (4,))])
def test_matmul_vector_operands(xs, ys):
    rng = np.random.default_rng(2)
    (x, tx), (y, ty) = pair(rng, xs), pair(rng, ys)
    check_grads(x @ y, tx @ ty, [x, y], [tx, ty])


@pytest.mark.parametrize("dt", ["float16", "int32"])
def test_matmul_off_the_fast_path(dt):
    """Other dtypes take the general composition (float16 sums in float32; ints exact)."""
    rng = np.random.default_rng(3)
    a, b = rng.integers(-3, 4, (5, 7)), rng.integers(-3, 4, (7, 2))
    got = (Tensor(a).cast(dt) @ Tensor(b).cast(dt)).numpy()
    np.testing.assert_array_equal(got, (a @ b).astype(got.dtype))


BROADCAST = [((5, 3), (3,)), ((3,), (5, 3)), ((4, 1, 3), (2, 1)), ((1,), (1,)), ((0, 3), (3,)), ((2, 3), ())]


@pytest.mark.parametrize("xs,ys", BROADCAST)
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "rsub", "rdiv", "maximum", "lt"])
def test_broadcasting_binary_ops(xs, ys, op):
    rng = np.random.default_rng(4)
    (x, tx), (y, ty) = pair(rng, xs), pair(rng, ys)
    if op in ("div", "rdiv"):  # divisors away from 0
        xn, yn = (np.abs(rng.standard_normal(s)).astype(np.float32) + 0.5 for s in (xs, ys))
        x, tx = Tensor(xn, requires_grad=True), torch.tensor(xn, requires_grad=True)
        y, ty = Tensor(yn, requires_grad=True), torch.tensor(yn, requires_grad=True)
    ours = {"add": lambda: x + y, "sub": lambda: x - y, "mul": lambda: x * y, "div": lambda: x / y,
            "rsub": lambda: y - x, "rdiv": lambda: y / x, "maximum": lambda: x.maximum(y), "lt": lambda: x < y}[op]  # fmt: skip
    theirs = {"add": lambda: tx + ty, "sub": lambda: tx - ty, "mul": lambda: tx * ty, "div": lambda: tx / ty,
              "rsub": lambda: ty - tx, "rdiv": lambda: ty / tx, "maximum": lambda: torch.maximum(tx, ty),
              "lt": lambda: tx < ty}[op]  # fmt: skip
    if op == "lt":
        out, ref = ours(), theirs()
        assert out.dtype is dtypes.bool and out.shape == tuple(ref.shape)
        np.testing.assert_array_equal(out.numpy(), ref.numpy())
        return
    check_grads(ours(), theirs(), [x, y], [tx, ty])


def test_broadcast_and_div_make_one_tensor():
    x, b = Tensor.rand(8, 16).realize(), Tensor.rand(16).realize()
    for fn in (lambda: x + b, lambda: b - x, lambda: x / b, lambda: x / 3, lambda: 2.0 / x, lambda: x * b):
        assert made_by(fn) == 1


def test_broadcast_errors_name_the_op():
    with pytest.raises(RuntimeError, match="add: shapes"):
        Tensor.rand(2, 3) + Tensor.rand(4)
    with pytest.raises(RuntimeError, match="div: shapes"):
        Tensor.rand(2, 3) / Tensor.rand(4)


@pytest.mark.parametrize("scalar", [2, 0.5, -3.0])
@pytest.mark.parametrize("reverse", [False, True])
def test_division_by_python_numbers(scalar, reverse):
    rng = np.random.default_rng(6)
    x, tx = pair(rng, (3, 5))
    out, ref = (scalar / x, scalar / tx) if reverse else (x / scalar, tx / scalar)
    check_grads(out, ref, [x], [tx])
    assert out.dtype is dtypes.float32


def test_division_of_ints_and_mixed_dtypes():
    a, b = Tensor([7, -7, 3]), Tensor([2, 2, 4])
    np.testing.assert_allclose((a / b).numpy(), np.array([3.5, -3.5, 0.75], np.float32))
    h = Tensor([1.0, 2.0], dtype=dtypes.float16) / Tensor([4.0, 8.0])  # promoted: float32
    assert h.dtype is dtypes.float32
    np.testing.assert_allclose(h.numpy(), [0.25, 0.25])


@pytest.mark.parametrize("shape", [(0,), (1,), (7, 3), (2, 3, 5)])
def test_relu(shape):
    rng = np.random.default_rng(7)
    x = rng.standard_normal(shape).astype(np.float32)
    if x.size:
        x.flat[0] = 0.0  # torch's gradient at 0 is 0
    ux, tx = Tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    check_grads(ux.relu(), tx.relu(), [ux], [tx])


def test_relu_passes_nan_and_makes_one_tensor():
    x = Tensor([float("nan"), -1.0, 0.0, 2.0]).realize()
    np.testing.assert_array_equal(x.relu().numpy(), [np.nan, 0.0, 0.0, 2.0])
    assert made_by(lambda: x.relu()) == 1
    np.testing.assert_array_equal(Tensor([-2, 0, 3]).relu().numpy(), [0, 0, 3])  # ints: the general path


@pytest.mark.parametrize("op", ["sum", "max", "mean"])
@pytest.mark.parametrize("axis", [0, 1, -1, -2, None, (0, 2)])
@pytest.mark.parametrize("keepdim", [False, True])
def test_reductions_on_a_noncontiguous_view(op, axis, keepdim):
    rng = np.random.default_rng(8)
    base = rng.standard_normal((5, 3, 4)).astype(np.float32)
    ub, tb = Tensor(base, requires_grad=True), torch.tensor(base, requires_grad=True)
    x, tx = ub.permute(2, 0, 1), tb.permute(2, 0, 1)  # (4, 5, 3), not contiguous
    ours = getattr(x, op)(axis, keepdim=keepdim) if axis is not None else getattr(x, op)()
    if axis is None:
        ref = getattr(tx, op)()
    elif op == "max":
        ref = tx.amax(axis, keepdim=keepdim)
    else:
        ref = getattr(tx, op)(axis, keepdim=keepdim)
    check_grads(ours, ref, [ub], [tb])


@pytest.mark.parametrize("shape,axis", [((0, 3), 1), ((3, 0), 1), ((1,), 0), ((1, 1), -1), ((), 0), ((), -1)])
def test_sum_edge_shapes(shape, axis):
    x = np.ones(shape, np.float32)
    out, ref = Tensor(x).sum(axis), torch.tensor(x).sum(axis)
    assert out.shape == tuple(ref.shape)
    np.testing.assert_allclose(out.numpy(), ref.numpy())


def test_reduction_axis_errors_and_empty_max():
    with pytest.raises(IndexError, match="sum: dimension out of range"):
        Tensor.rand(2, 3).sum(2)
    with pytest.raises(IndexError, match="max: dimension out of range"):
        Tensor.rand(2, 3).max(-3)
    with pytest.raises(RuntimeError, match="max: cannot reduce over a zero-size dimension"):
        Tensor.rand(2, 0).max(1)
    assert Tensor.rand(0, 2).max(1).shape == (0,)  # nothing empty along the reduced dim


def test_reductions_make_one_tensor():
    x = Tensor.rand(8, 16).realize()
    for fn in (lambda: x.sum(1), lambda: x.sum(-1, keepdim=True), lambda: x.max(0), lambda: x.sum()):
        assert made_by(fn) == 1


def test_reductions_of_ints_and_halves_accumulate_as_before():
    i = Tensor([[1, 2], [3, 4]], dtype=dtypes.int8)
    assert i.sum(1).dtype is dtypes.int32 and i.sum(1).tolist() == [3, 7]
    h = Tensor(np.full(4096, 0.1, np.float16))
    assert h.sum().dtype is dtypes.float16
    np.testing.assert_allclose(float(h.sum().item()), 409.5, rtol=1e-3)  # float32 sums, one rounding


def test_detach_cuts_the_gradient_and_makes_one_tensor():
    x = Tensor([1.0, 2.0, 3.0], requires_grad=True)
    d = x.detach()
    assert d.requires_grad is False
    (x * d).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [1.0, 2.0, 3.0])  # d counts as a constant
    assert made_by(lambda: (x * 2).detach()) == 2


def test_no_grad_results_do_not_require_grad():
    rng = np.random.default_rng(9)
    (x, _), (w, _), (b, _) = pair(rng, (4, 6)), pair(rng, (6, 3)), pair(rng, (3,))
    Tensor.no_grad = True  # (the class flag: tinygrad's spelling)
    try:
        out = ((x @ w + b).relu() / 2).sum(1)
        assert not out.requires_grad
        want = np.maximum(x.numpy() @ w.numpy() + b.numpy(), 0).sum(1) / 2
        np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-6)
    finally:
        Tensor.no_grad = False


@pytest.mark.parametrize("shape", [(-1, 384), (6, -1), (-1,), (2, -1, 3, 64), (66, 384)])
def test_reshape_infers_one_size(shape):
    x = np.arange(6 * 11 * 384, dtype=np.float32).reshape(6, 11, 384)
    t = Tensor(x).realize()
    out = t.reshape(*shape)
    assert out.shape == x.reshape(*shape).shape
    np.testing.assert_array_equal(out.numpy(), x.reshape(*shape))
    assert made_by(lambda: t.reshape(*shape)) == 1


@pytest.mark.parametrize("shape,error", [((-1, -1), "only one dimension"), ((5, -1), "invalid"), ((0, -1), "invalid"),
                                         ((-1, 0), "invalid")])  # fmt: skip
def test_reshape_refuses_what_it_cannot_infer(shape, error):
    with pytest.raises((RuntimeError, ValueError), match=error):
        Tensor.rand(6, 11, 384).reshape(*shape)
    with pytest.raises((RuntimeError, ValueError)):  # 0 elements: -1 could be any size (torch refuses too)
        Tensor.rand(0, 3).reshape(0, -1)
    assert Tensor.rand(0, 3).reshape(-1, 3).shape == (0, 3)


@pytest.mark.parametrize("order", [(1, 0, 2), (-1, 0, 1), (2, -2, 0), (0, 1, 2)])
def test_permute_with_negative_axes(order):
    x = np.random.default_rng(10).standard_normal((2, 3, 4)).astype(np.float32)
    np.testing.assert_array_equal(Tensor(x).permute(*order).numpy(), np.transpose(x, [a % 3 for a in order]))
    with pytest.raises(RuntimeError, match="not a permutation"):
        Tensor(x).permute(0, 0, 1)
    with pytest.raises(IndexError, match="permute: dimension out of range"):
        Tensor(x).permute(0, 1, 3)


def test_shrink_and_chunk():
    x = np.arange(3 * 4 * 10, dtype=np.float32).reshape(3, 4, 10)
    t = Tensor(x).realize()
    np.testing.assert_array_equal(t.shrink(((1, 3), None, (2, 7))).numpy(), x[1:3, :, 2:7])
    np.testing.assert_array_equal(t.shrink(([1, 3], None, [2, 7])).numpy(), x[1:3, :, 2:7])  # lists: the general path
    assert t.shrink((None, (0, 4), None)) is t
    assert made_by(lambda: t.shrink(((0, 1), None, None))) == 1
    for got, want in zip(t.chunk(3, dim=-1), np.array_split(x, [4, 8], axis=-1)):
        np.testing.assert_array_equal(got.numpy(), want)
    for bad in [((0, 4), None, None), ((2, 1), None, None), ((-1, 2), None, None)]:
        with pytest.raises(RuntimeError, match="shrink: bounds"):
            t.shrink(bad)


def test_reading_a_view_of_a_buffer_runs_no_kernel(tmp_path):
    """numpy()/item() of movement ops over a filled CPU buffer copy the view out on the host: no kernel."""
    from unigrad.runtime import realize as rt

    x = np.random.default_rng(11).standard_normal((4, 5, 6)).astype(np.float32)
    t = Tensor(x).realize()
    views = [
        (lambda: t[1:3, :, 1], x[1:3, :, 1]),
        (lambda: t.permute(2, 0, 1)[1], x.transpose(2, 0, 1)[1]),
        (lambda: t.flip(1), x[:, ::-1]),
        (lambda: t[0:1].expand(3, 5, 6), np.broadcast_to(x[0:1], (3, 5, 6))),
        (lambda: t.T.reshape(-1), x.T.reshape(-1)),
        (lambda: t[:, 1:2, 2:4].reshape(8), x[:, 1:2, 2:4].reshape(8)),
        (lambda: t[0:0], x[0:0]),
    ]
    for make, want in views:
        v = make()
        before = rt.stats.kernels
        got = v.numpy()
        assert rt.stats.kernels == before and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
    assert t[2, 3, 4].item() == float(x[2, 3, 4])
    got = t[1].numpy()
    got[:] = 0  # a copy: the buffer keeps its values
    np.testing.assert_array_equal(t.numpy(), x)


def test_reading_a_view_after_a_pending_write_and_of_other_buffers(tmp_path):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = Tensor(x).realize()
    t[0].assign(Tensor(np.full(4, -1.0, np.float32)))  # pending until read
    np.testing.assert_array_equal(t[0:2, 1:3].numpy(), np.array([[-1, -1], [5, 6]], np.float32))
    b = Tensor(x).cast(dtypes.bfloat16).realize()  # no numpy dtype: copied by a kernel, as float32
    np.testing.assert_array_equal(b[1:, 2].numpy(), x[1:, 2])
    path = tmp_path / "blob.bin"
    path.write_bytes(np.arange(16, dtype=np.uint8).tobytes())
    d = Tensor(path)  # the file on the DISK device
    np.testing.assert_array_equal(d[4:8].numpy(), np.arange(4, 8, dtype=np.uint8))
    np.testing.assert_array_equal(
        d.reshape(4, 4)[1:3, ::-1].numpy(), np.arange(16, dtype=np.uint8).reshape(4, 4)[1:3, ::-1]
    )
