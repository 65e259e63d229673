"""Rangeify: the kernel split and the index math movement ops become (notes-symbolic-shapes.md examples)."""

import numpy as np
import pytest
import torch

from unigrad import Tensor, Variable, dtypes
from unigrad.ir.args import AddrSpace, ParamArg
from unigrad.ir.ops import TRANSCENDENTAL_OPS, GroupOp, Ops
from unigrad.ir.spec import verify_kernel, verify_linear
from unigrad.ir.uop import UOp
from unigrad.pipeline.callify import callify
from unigrad.pipeline.expand import expand
from unigrad.pipeline.linearize import linearize
from unigrad.pipeline import rangeify as rangeify_mod
from unigrad.pipeline.rangeify import rangeify, view_index
from unigrad.runtime import realize as rt

k = Variable("k", 1, 100)
x, y = Variable("x", 0, 100), Variable("y", 0, 100)
BUF = UOp(Ops.PARAM, (UOp.shape_src((k * 3,)),), ParamArg(0, dtypes.float32, "CPU", AddrSpace.GLOBAL))
GRID = UOp(Ops.RESHAPE, (BUF, UOp.shape_src((k, 3))))  # a (k, 3) contiguous grid


def masked(rows: tuple[int, int], cols: tuple[int, int]) -> UOp:
    """The (k, 3) grid where only rows/cols in the given ranges are valid: SHRINK then PAD back."""
    size = (rows[1] - rows[0], cols[1] - cols[0])
    inner = UOp(Ops.SHRINK, (GRID, UOp.shape_src((rows[0], cols[0])), UOp.shape_src(size)))
    return UOp(Ops.PAD, (inner, UOp.shape_src((rows[0], cols[0])), UOp.shape_src((k, 3))))


def test_symbolic_grid_shape():
    assert GRID.shape == (k, 3) and repr(k) == "Variable('k', 1, 100)"


def test_notes_contiguous_grid_index():
    idx, valid = view_index(GRID, (x, y))
    assert idx.render() == "((x*3)+y)" and valid.op is Ops.CONST and valid.arg.value is True


def test_notes_masked_grid():
    idx, valid = view_index(masked((0, 2), (0, 2)), (x, y))
    assert idx.render() == "((x*3)+y)"
    assert valid.render() == "((x<2) and (y<2))"


def test_notes_single_row_mask_drops_x():
    idx, valid = view_index(masked((1, 2), (0, 2)), (x, y))
    assert idx.render() == "(y+3)"  # only row 1 is valid: the index no longer depends on x
    assert valid.render() == "((x>=1) and (x<2) and (y<2))"


def _kernels(*ts: Tensor) -> list[UOp]:
    fn = callify(UOp(Ops.SINK, tuple(t.uop for t in ts)))
    out = rangeify(fn, "CPU")
    return [u.src[0] for u in out.toposort() if u.op is Ops.CALL]


@pytest.fixture
def a() -> Tensor:
    return Tensor(np.arange(12, dtype=np.float32).reshape(3, 4)).realize()


def test_split_elementwise_chain_is_one_kernel(a):
    assert len(_kernels(((a + 1) * a - 2).exp2().permute(1, 0).flip(0))) == 1


def test_split_reduce_fuses_with_producers_and_consumers(a):
    assert len(_kernels((a * a).sum(1) + 1)) == 1
    assert len(_kernels((a * 2).sum(1).sum(0))) == 1


def test_split_reduce_broadcast_back_is_materialized(a):
    ks = _kernels(a - a.max(1, keepdim=True))
    assert len(ks) == 2
    assert any(u.op is Ops.REDUCE for u in ks[0].toposort())  # the max, alone
    softmax_num = (a - a.max(1, keepdim=True)).exp2()
    assert len(_kernels(softmax_num / softmax_num.sum(1, keepdim=True))) == 3


def test_split_contiguous_and_views(a):
    assert len(_kernels(a.reshape(12))) == 0  # a plain reshape of a buffer needs no kernel
    assert len(_kernels(a.permute(1, 0))) == 1  # an output must be row-major
    assert len(_kernels((a + 1).contiguous().flip(0) * 2)) == 2  # read back at other elements: a kernel each
    (merged,) = _kernels((a + 1).contiguous() * 2)  # at the element it stores: one kernel stores both (merge.py)
    assert merged.arg.outputs == 2


def test_zero_size_output_has_no_kernel():
    assert len(_kernels(Tensor.ones(0, 3) + 1)) == 0


def test_reshape_index_math_is_simplified(a):
    (ast,) = _kernels(a.reshape(2, 6).reshape(6, 2).reshape(4, 3) + 1)
    loads = [u for u in ast.toposort() if u.op is Ops.LOAD]
    stores = [u for u in ast.toposort() if u.op is Ops.STORE]
    assert loads[0].src[0].src[1] is stores[0].src[0].src[1]  # reading and writing the same flat index
    assert not any(u.op in (Ops.IDIV, Ops.MOD) for u in ast.toposort())


def test_pad_gates_loads_and_stages_verify(a):
    (ast,) = _kernels(a.pad(((1, 1), (2, 0))).flip(1) * 3)
    verify_kernel(ast)
    load = next(u for u in ast.toposort() if u.op is Ops.LOAD)
    assert len(load.src) == 3 and load.src[2].dtype is dtypes.bool  # gated: no read outside the buffer
    verify_linear(linearize(expand(ast)))
    np.testing.assert_allclose(
        (a.pad(((1, 1), (2, 0))).flip(1) * 3).numpy(),
        np.pad(np.arange(12.0).reshape(3, 4), ((1, 1), (2, 0)))[:, ::-1] * 3,
    )


def test_loop_nesting_of_reduce_inside_output_loop(a):
    (ast,) = _kernels((a * 2).sum(1))
    lin = linearize(expand(ast))
    ops = [u.op for u in lin.src]
    first_range = ops.index(Ops.RANGE)
    second_range = ops.index(Ops.RANGE, first_range + 1)
    # the accumulator is reset inside the output loop, before the reduce loop opens
    reset = next(i for i, u in enumerate(lin.src) if u.op is Ops.STORE and u.src[1].op is Ops.CONST)
    assert first_range < reset < second_range


def test_reduce_that_skips_an_outer_loop_nests_correctly():
    """The second sum does not depend on the row loop (r0) but on the column loop it sits in: its loop must
    still nest inside the loops of its own value (regression: linearize used the END's open-set size)."""
    x = Tensor(np.arange(24, dtype=np.float32).reshape(2, 3, 4)).realize()
    w = Tensor(np.arange(12, dtype=np.float32).reshape(3, 4)).realize()
    out = x.sum(2) / w.reshape(1, 3, 4).expand(2, 3, 4).sum(2)  # (2, 3): the w-sum does not use the row loop
    (ast,) = _kernels(out)
    verify_linear(linearize(expand(ast)))
    np.testing.assert_allclose(
        out.numpy(), np.arange(24.0).reshape(2, 3, 4).sum(2) / np.arange(12.0).reshape(3, 4).sum(1)
    )


def test_callify_marks_input_free_subgraphs_closed_and_gives_one_body(a):
    """Callify replaces buffers and bound Variables by PARAMs; a node with none below is marked closed and later
    walks keep it as it is: the same graph on other buffers gets the same body, the same PARAM slots."""
    b = Tensor(np.ones((3, 4), np.float32)).realize()
    n = Variable("n", 1, 8).bind(3)

    def graph(x: Tensor, y: Tensor) -> UOp:
        return UOp(Ops.SINK, (((x + 0.25) * y + x.sum() - Tensor.arange(4).float()).uop, n))

    f1 = callify(graph(a, b))
    walked = graph(a, b).toposort(gate=lambda u: u.op not in (Ops.BUFFER, Ops.PARAM))  # inputs are not entered
    consts = [u for u in walked if u.op is Ops.CONST]
    assert consts and all(c.closed for c in consts)
    inputs = {Ops.BUFFER, Ops.PARAM}
    for u in walked:  # closed exactly where no input is below
        assert u.closed == (u.op not in inputs and not any(v.op in inputs for v in u.toposort())), u
    c, d = Tensor(np.zeros((3, 4), np.float32)).realize(), Tensor(np.zeros((3, 4), np.float32)).realize()
    f2 = callify(graph(c, d))
    assert f2.src[0] is f1.src[0]  # one body: only the arguments differ
    assert [x.op for x in f2.src[1:]] == [Ops.BUFFER, Ops.BUFFER, Ops.PARAM]
    assert [x.arg.slot for x in f2.src[1:3]] == [x.uop.src[0].arg.slot for x in (c, d)]  # c's buffer, then d's
    body_params = {u.arg.slot for u in f2.src[0].toposort() if u.op is Ops.PARAM and u.arg.name is None}
    assert body_params == {0, 1}
    assert not any(u.op is Ops.BUFFER for u in f2.src[0].toposort())


def test_callify_recursive_and_iterative_walks_agree(a):
    """callify recurses and falls back to an explicit stack on RecursionError: both walks give the same FUNCTION
    (buffers numbered in the same order, a buffer read twice is one argument, bound Variables last)."""
    from unigrad.pipeline.callify import _Walk

    b = Tensor(np.arange(12, dtype=np.float32).reshape(3, 4)).realize()
    n = Variable("n", 1, 8).bind(3)
    shared = (a * b).exp()
    sink = UOp(Ops.SINK, ((shared + a - shared.sum(1, keepdim=True) * b).uop, (b.T @ a).uop, n))
    fn = callify(sink)
    walk = _Walk()
    body = walk.rebuild_iterative(sink)
    assert fn.src[0].src == body.src and list(fn.src[1:]) == [*walk.args, *walk.bound]
    assert [x.arg.slot for x in fn.src[1:3]] == [a.uop.src[0].arg.slot, b.uop.src[0].arg.slot]


def test_callify_graph_deeper_than_the_recursion_limit():
    """A chain of 3000 ops (deeper than Python's default recursion limit) realizes through the iterative walk."""
    x = Tensor(np.full(5, 0.5, np.float32)).realize()
    y = x
    for i in range(3000):
        y = y * 1.0001 if i % 2 else y + 0.001
    want = np.full(5, 0.5, np.float64)
    for i in range(3000):
        want = want * np.float32(1.0001) if i % 2 else want + np.float32(0.001)
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-4)


def _body_ops(ast: UOp) -> int:
    """A kernel's ALU and REDUCE ops, a transcendental counted as rangeify does."""
    return sum(
        TRANSCENDENTAL_OPS if u.op in GroupOp.Transcendental else 1
        for u in ast.toposort()
        if u.op in GroupOp.ALU or u.op is Ops.REDUCE
    )


@pytest.mark.parametrize("shared", [False, True], ids=["sin_exp_chain", "where_chain"])
def test_kernel_bodies_are_cut_past_the_limit(monkeypatch: pytest.MonkeyPatch, shared: bool) -> None:
    """A long elementwise chain is cut into kernels of at most about twice MAX_KERNEL_OPS (here made small): one
    kernel took a minute of C compile for 1200 ops with sines. A value used three times a step (where) is counted
    once per node, not as a tree (exponential); a short chain stays one kernel. Results equal numpy's."""
    monkeypatch.setattr(rangeify_mod, "MAX_KERNEL_OPS", 200)
    xn = np.random.default_rng(0).standard_normal(33).astype(np.float32)
    x = Tensor(xn)

    def chain(y, lib, steps):
        for i in range(steps):
            if shared:
                y = lib.where(y > 0.1, y * np.float32(0.9), y + np.float32(0.05))
            else:
                y = lib.sin(y * np.float32(0.5) + np.float32(0.1)) if i % 2 else lib.exp(y * np.float32(0.25)) - 1
        return y

    lib = type("lib", (), {"where": staticmethod(lambda c, a, b: c.where(a, b)), "sin": Tensor.sin, "exp": Tensor.exp})
    steps = 120 if shared else 24
    got = chain(x, lib, steps).numpy()
    np.testing.assert_allclose(got, chain(xn, np, steps), rtol=1e-5, atol=1e-5)
    kernels = list(rt.stats.last_kernels)
    assert len(kernels) >= 3 and all(_body_ops(k) <= 2 * 200 + 2 * TRANSCENDENTAL_OPS for k in kernels)
    chain(x, lib, 2).realize()
    assert len(rt.stats.last_kernels) == 1


@pytest.mark.parametrize("shape", [(6, 3, 100, 80), (5, 7, 41, 97)])
def test_split_reduce_of_a_reshaped_buffer_reads_the_flat_index(shape: tuple[int, ...]) -> None:
    """A sum over a whole multi-dim tensor runs as a split reduce over a (parts, rest) reshape of it: its loads
    address the buffer by the flat index itself, no div/mod per element (the 4-D index of the split flat index
    stayed div/mod math, scalar, a fifth of the memory speed); the result equals numpy's."""
    xn = np.random.default_rng(1).random(shape).astype(np.float32)
    got = Tensor(xn).sum().numpy()
    np.testing.assert_allclose(got, xn.astype(np.float64).sum(), rtol=1e-5)
    for ast in rt.stats.last_kernels:
        assert not any(u.op in (Ops.IDIV, Ops.MOD) for u in ast.toposort()), ast


# ---------------------------------------------------------------- arange folding and recompute


@pytest.mark.parametrize(
    "make, ref",
    [
        (lambda: Tensor.arange(1000).reshape(10, 100)[3:5, ::7], np.arange(1000).reshape(10, 100)[3:5, ::7]),
        (lambda: Tensor.arange(37).flip(0)[1:30:3], np.arange(37)[::-1][1:30:3]),
        (lambda: Tensor.arange(5, 50, 3).reshape(3, 5).T, np.arange(5, 50, 3).reshape(3, 5).T),
        (lambda: Tensor.arange(1), np.arange(1)),
    ],
)
def test_arange_views_fold_to_index_math(make, ref):
    """An arange (a sum of binary digits) seen through views is affine index math: no digit (MOD, WHERE) is left."""
    (ast,) = _kernels(make())
    assert not any(u.op in (Ops.MOD, Ops.IDIV, Ops.WHERE) for u in ast.toposort()), ast
    np.testing.assert_array_equal(make().numpy(), ref)


def test_causal_mask_from_aranges_is_one_compare():
    i, j = Tensor.arange(6).reshape(6, 1), Tensor.arange(9).reshape(1, 9)
    (ast,) = _kernels(j <= i + 2)
    assert not any(u.op in (Ops.MOD, Ops.IDIV, Ops.WHERE) for u in ast.toposort())
    np.testing.assert_array_equal((j <= i + 2).numpy(), np.arange(9)[None, :] <= np.arange(6)[:, None] + 2)


def _reads(ast: UOp) -> int:
    return len({u.src[0].src[0] for u in ast.toposort() if u.op is Ops.LOAD and u.src[0].src[0].op is Ops.PARAM})


def test_costly_value_under_a_matmul_is_materialized():
    """A LayerNorm under a Linear is computed once, in its own kernel, not once per output feature."""
    rng = np.random.default_rng(0)
    xn, wn = rng.standard_normal((4, 32)).astype(np.float32), rng.standard_normal((32, 48)).astype(np.float32)
    x, w = Tensor(xn).realize(), Tensor(wn).realize()
    out = x.layernorm() @ w
    ks = _kernels(out)
    matmul = ks[-1]
    assert not any(u.op in (Ops.SQRT, Ops.RECIP) for u in matmul.toposort())  # the normalization is not in there
    assert _reads(matmul) == 2
    mu, var = xn.mean(-1, keepdims=True), xn.var(-1, keepdims=True)
    np.testing.assert_allclose(out.numpy(), (xn - mu) / np.sqrt(var + 1e-5) @ wn, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("affine", [False, True])
def test_layernorm_is_three_kernels(affine):
    """mean, variance, output: the normalization factor rsqrt(var + eps) is computed in the variance's kernel (it
    was a fourth kernel of its own: materialized as a costly value, with the variance materialized too)."""
    from unigrad import nn

    rng = np.random.default_rng(3)
    an, bn = rng.standard_normal((5, 33)).astype(np.float32), rng.standard_normal((5, 33)).astype(np.float32)
    a, b = Tensor(an).realize(), Tensor(bn).realize()
    ln = nn.LayerNorm(33, elementwise_affine=affine)
    x = a + b
    out = ln(x) + x  # a residual block: x is read by the statistics and the output
    assert len(_kernels(out)) == 3
    xn = an + bn
    mu, var = xn.mean(-1, keepdims=True), xn.var(-1, keepdims=True)
    np.testing.assert_allclose(out.numpy(), (xn - mu) / np.sqrt(var + 1e-5) + xn, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape", [(4, 8, 16, 3), (64, 64, 128, 10), (1, 5, 7, 2)])
@pytest.mark.parametrize("loss_fn", ["max", "logsumexp"])
def test_reduce_read_by_two_kernels_is_computed_once(shape, loss_fn):
    """The gradient of a max over a Linear's output, realized as one graph: the logits (a matmul, a REDUCE) feed
    the max's kernel and the gradient's. Recomputed in each, they rounded differently (each kernel has its own
    opts), and the max's gradient, which compares the input with its max, found no element equal: 0 / 0 = NaN."""
    b, i, h, o = shape
    rng = np.random.default_rng(1)
    xn = rng.random((b, i)).astype(np.float32)
    w1n, w2n = (rng.standard_normal(s).astype(np.float32) * 0.1 for s in ((h, i), (o, h)))
    w1, w2 = Tensor(w1n, requires_grad=True), Tensor(w2n, requires_grad=True)
    bias = Tensor(np.zeros(o, np.float32), requires_grad=True)
    logits = (Tensor(xn) @ w1.T).relu() @ w2.T + bias
    if loss_fn == "max":
        loss = logits.max(-1).mean()
    else:  # logsumexp spelled out, with a gradient through the max (it cancels)
        loss = ((logits - logits.max(-1, keepdim=True)).exp().sum(-1).log() + logits.max(-1)).mean()
    loss.backward()
    got = bias.grad.numpy()  # realized alone: nothing of the graph was materialized before
    ln = np.maximum(xn @ w1n.T, 0) @ w2n.T
    if loss_fn == "max":
        want = np.zeros_like(ln)
        want[np.arange(b), ln.argmax(1)] = 1
    else:
        want = np.exp(ln - ln.max(1, keepdims=True))
        want /= want.sum(1, keepdims=True)
    np.testing.assert_allclose(got, want.sum(0) / b, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("n", [1, 9, 512])
def test_costly_value_under_overlapping_windows_is_materialized(n):
    """softmax(x).cumsum(-1): the cumsum's windows are an EXPAND of the padded probabilities, so fused, each
    probability (an exp and a division) was recomputed once per window that holds it. It gets its own kernel, unless
    the windows hold fewer than SMALL_BROADCAST values in all (3 x 9 x 9: recomputing costs less than a kernel)."""
    xn = np.random.default_rng(2).standard_normal((3, n)).astype(np.float32)
    x = Tensor(xn).realize()
    out = x.softmax(-1).cumsum(-1)
    if n == 512:  # 3 x 32 blocks of 16 x 16 windows (the cumsum's blocked scan): each value copied 16 times
        divides = [[u.op for u in k.toposort()] for k in _kernels(out) if any(u.op is Ops.RECIP for u in k.toposort())]
        assert len(divides) == 1 and Ops.REDUCE not in divides[0]  # the probabilities: once, in their own kernel
    p = np.exp(xn - xn.max(-1, keepdims=True))
    np.testing.assert_allclose(out.numpy(), np.cumsum(p / p.sum(-1, keepdims=True), -1), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("n", [5, 300])
def test_arange_under_a_broadcast_stays_index_math(n):
    """A strictly-lower-triangular mask of two aranges, broadcast n-fold, is one kernel: an arange reads no buffer,
    so however many ops build it, it folds to the loop index (it was materialized as a costly value)."""
    xn = np.random.default_rng(3).standard_normal((n,)).astype(np.float32)
    x = Tensor(xn).realize()
    earlier = Tensor.arange(n).reshape(1, n) < Tensor.arange(n).reshape(n, 1)
    out = (x.reshape(1, n) * earlier).sum(1)
    assert len(_kernels(out)) == 1
    np.testing.assert_allclose(out.numpy(), np.tril(np.broadcast_to(xn, (n, n)), -1).sum(1), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("rows,kernels", [(6, 1), (64, 1), (700, 2)])
def test_costly_value_broadcast_over_few_elements_is_recomputed(rows, kernels):
    """A value of many ops broadcast over a row of 10 (a per-sample scale of a loss's gradient) is recomputed in the
    kernel that reads it when the broadcast has fewer than SMALL_BROADCAST elements (a kernel launch costs more), and
    materialized in a kernel of its own when it has more."""
    rng = np.random.default_rng(4)
    xn, yn = rng.standard_normal((rows, 10)).astype(np.float32), rng.random(rows).astype(np.float32) + 0.5
    x, y = Tensor(xn).realize(), Tensor(yn).realize()
    scale = ((y * 3 - 1).abs() + 2).sqrt() * (y + 1) / (y * y + 1)
    out = x * scale.reshape(rows, 1)
    assert len(_kernels(out)) == kernels
    want = np.sqrt(np.abs(yn * 3 - 1) + 2) * (yn + 1) / (yn * yn + 1)
    np.testing.assert_allclose(out.numpy(), xn * want[:, None], rtol=1e-5, atol=1e-6)


def test_cheap_value_under_a_matmul_stays_fused(a):
    ks = _kernels((a * 2).T @ a)  # one buffer, one op: recomputing beats a kernel and a buffer
    assert len(ks) == 1


def test_residual_stream_is_not_recomputed_from_every_layer():
    """x = x + f(x) over 8 layers: each kernel reads a bounded number of buffers (before, the last layers re-added
    every earlier layer's output), and the result matches numpy."""
    rng = np.random.default_rng(1)
    xn = rng.standard_normal((3, 16)).astype(np.float32)
    x = Tensor(xn).realize()
    ref = xn
    for k in range(8):
        x = x + (x - x.mean(-1, keepdim=True)) * 0.5
        ref = ref + (ref - ref.mean(-1, keepdims=True)) * 0.5
    ks = _kernels(x)
    assert max(_reads(k) for k in ks) <= 4, [_reads(k) for k in ks]
    np.testing.assert_allclose(x.numpy(), ref, rtol=1e-4, atol=1e-4)


def test_reduce_read_at_several_offsets_is_computed_once():
    """A cat of chunks that each read one matmul at their own offset (an LSTM's gates i, f, g, o, and their
    gradient): fused, the cat's kernel held the reduce loop once per chunk. It gets its own kernel."""
    rng = np.random.default_rng(4)
    xn, wn = rng.standard_normal((4, 32)).astype(np.float32), rng.standard_normal((32, 16)).astype(np.float32)
    r = Tensor(xn).realize() @ Tensor(wn).realize()
    out = r.sigmoid().cat(r.tanh(), r * 2, r + 1, dim=-1)
    ks = _kernels(out)
    assert max(sum(u.op is Ops.REDUCE for u in k.toposort()) for k in ks) == 1
    rn = xn @ wn
    want = np.concatenate([1 / (1 + np.exp(-rn)), np.tanh(rn), rn * 2, rn + 1], -1)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-5)


def test_lstm_training_graph_kernels_stay_small():
    """Forward and backward of a 2-layer nn.LSTM (with dropout) as one graph: no kernel nests a reduction in
    another's value (side by side, small ones may share a kernel: a bias's gradient, summed over the batch at each
    step), and each lowers to a bounded C source. A kernel of this graph once fused a chain of the recurrent gate
    matmuls (r_4_64_64_64_64_64: four copies of h @ W_hh and of the gate math, tiled 32x): 4.4 MB of C and 36-76 s
    of gcc; now the biggest is about 100 kB."""
    from unigrad import nn
    from unigrad.pipeline.optimize import optimize
    from unigrad.runtime import Device

    Tensor.manual_seed(0)
    lstm = nn.LSTM(16, 16, 2, dropout=0.2)
    out, (h, c) = lstm(Tensor.randn(6, 4, 16))
    (out.sum() + h.sum() + c.sum()).backward()
    ks = _kernels(*(p.grad for p in lstm.parameters()))
    for k in ks:
        reduces = [u for u in k.toposort() if u.op is Ops.REDUCE]
        assert not any(v.op is Ops.REDUCE for r in reduces for v in r.src[0].toposort()), k.arg.name
    target = Device["CPU"].target
    biggest = max((len(rt.lower("CPU", optimize(k, target)).src), k.arg.name) for k in ks)
    assert biggest[0] < 250_000, biggest


def test_kernel_names_stay_short():
    """A kernel name lists its loop bounds; past NAME_LIMIT characters, runs of equal bounds are written once with
    their count and the rest is cut (a sum of 40 nested-looking reduce loops once named a 200-character file);
    short names are unchanged."""
    from unigrad.pipeline.rangeify import NAME_LIMIT, kernel_name

    rng = np.random.default_rng(6)
    xs = [Tensor(rng.standard_normal((3, 5)).astype(np.float32)).realize() for _ in range(33)]  # (one kernel)
    total = xs[0].sum(1, keepdim=True)
    for x in xs[1:]:
        total = total + x.sum(1, keepdim=True)
    (k,) = _kernels(total)
    name = kernel_name(k)
    assert name.startswith("r_3_5x") and len(name) <= NAME_LIMIT, name
    assert kernel_name(_kernels(xs[0].sum(1))[0]) == "r_3_5"
    np.testing.assert_allclose(total.numpy()[:, 0], sum(x.numpy().sum(1) for x in xs), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("n", [1, 33, 70])
def test_side_by_side_reductions_are_capped(n):
    """A sum of n small reductions (a bias's gradient summed over the batch at each step of a traced recurrence) is cut
    where it passes MAX_KERNEL_LOOPS reduce loops, the value that passes it materialized with them (199 in one kernel:
    130 kB of C, 2.6 s of gcc); the result equals numpy's."""
    from unigrad.pipeline.rangeify import MAX_KERNEL_LOOPS

    rng = np.random.default_rng(7)
    xs_np = [rng.standard_normal((3, 5)).astype(np.float32) for _ in range(n)]
    xs = [Tensor(x).realize() for x in xs_np]
    total = xs[0].sum(1)
    for x in xs[1:]:
        total = total + x.sum(1)
    ks = _kernels(total)
    assert max(sum(u.op is Ops.REDUCE for u in k.toposort()) for k in ks) <= MAX_KERNEL_LOOPS + 1
    assert len(ks) == -(-n // (MAX_KERNEL_LOOPS + 1)), [k.arg.name for k in ks]
    np.testing.assert_allclose(total.numpy(), sum(x.sum(1) for x in xs_np), rtol=1e-5, atol=1e-5)


def test_reduce_under_a_pad_is_materialized():
    """A cat of Linear outputs (a sequence model's per-step predictions): fused, each piece's reduce loop ran for
    every element of the cat, the padding's included (199 loops per element: 161 ms a step). Each reduce gets its
    kernel (one program: the same AST over other buffers) and the cat reads their buffers."""
    rng = np.random.default_rng(5)
    wn, hn = rng.standard_normal((1, 8)).astype(np.float32), rng.standard_normal((20, 5, 8)).astype(np.float32)
    w = Tensor(wn).realize()
    out = Tensor.cat(*[Tensor(h).realize() @ w.T for h in hn], dim=1)
    ks = _kernels(out)
    assert [sum(u.op is Ops.REDUCE for u in k.toposort()) for k in ks] == [1] * 20 + [0]
    assert len({k for k in ks[:-1]}) == 1
    np.testing.assert_allclose(out.numpy(), (hn @ wn.T)[..., 0].T, rtol=1e-5, atol=1e-5)


def test_cat_of_many_pieces_merges_in_groups():
    """A cat of more than CAT_MAX_PIECES small pieces is merged in groups: one kernel holding a 199-deep where chain
    (199 time steps' outputs under an MSE loss) took 2.6 s of gcc."""
    from unigrad.api.movement import CAT_MAX_PIECES

    pn = np.random.default_rng(6).standard_normal((199, 7, 1)).astype(np.float32)
    out = Tensor.cat(*[Tensor(p).realize() for p in pn], dim=1)
    loss = (out * out).sum()
    assert max(_reads(k) for k in _kernels(loss)) <= CAT_MAX_PIECES
    np.testing.assert_allclose(loss.numpy(), (pn * pn).sum(), rtol=1e-4)


@pytest.mark.parametrize("pieces", [2, 4])
def test_costly_value_under_a_pad_is_materialized(pieces: int) -> None:
    """A cat of chunks of transcendental math (an LSTM's gate gradient: each chunk's sigmoid or tanh derivative padded
    into place): fused, the cat's kernel ran every chunk's math at every element, the padding's included (only the
    loads are gated off). Each chunk's math is computed once over its own elements; the cat only copies."""
    rng = np.random.default_rng(7)
    xn = rng.standard_normal((pieces, 5, 9)).astype(np.float32)
    xs = [Tensor(p).realize() for p in xn]
    out = Tensor.cat(*[(x.sigmoid() * (1 - x.sigmoid())) if k % 2 else x.tanh() for k, x in enumerate(xs)], dim=1)
    ks = _kernels(out)
    cat = ks[-1]
    assert len(ks) > 1 and not any(u.op in GroupOp.Transcendental for u in cat.toposort())
    s = 1 / (1 + np.exp(-xn))
    want = np.concatenate([s[k] * (1 - s[k]) if k % 2 else np.tanh(xn[k]) for k in range(pieces)], axis=1)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-6)
    cheap = Tensor.cat(*[x * 2 for x in xs], dim=1)  # a cheap piece stays fused in the cat
    assert len(_kernels(cheap)) == 1


def test_costly_value_read_by_two_kernels_is_computed_once() -> None:
    """An LSTM's cell state c_t = sigmoid(f) * c_{t-1} + sigmoid(i) * tanh(g) is elementwise through time: read by
    step t's kernel (h_t = sigmoid(o) * tanh(c_t)) and by step t+1's, it was recomputed from c_0 in each (the step
    kernels' transcendentals grew 8, 13, 18, 20 over 4 steps, and a 35-step LM compiled 19 kinds of such kernels).
    Two transcendentals or more read by two kernels are materialized: every step's kernel computes as much."""
    from unigrad import nn

    Tensor.manual_seed(0)
    lstm = nn.LSTM(16, 16, 1)
    for p in lstm.parameters():
        p.realize()
    xn = np.random.default_rng(8).standard_normal((6, 4, 16)).astype(np.float32)
    out, (h, c) = lstm(Tensor(xn).realize())
    ks = _kernels(out, c)
    counts = [sum(u.op in GroupOp.Transcendental for u in k.toposort()) for k in ks]
    steps = [n for n in counts if n]
    assert len(steps) >= 6 and len(set(steps[1:])) == 1, counts  # the first step starts from zeros
    tl = torch.nn.LSTM(16, 16, 1)
    with torch.no_grad():
        for name, p in zip(("weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"), lstm.parameters()):
            getattr(tl, name).copy_(torch.from_numpy(p.numpy()))
        want, (_, wc) = tl(torch.from_numpy(xn))
    np.testing.assert_allclose(out.numpy(), want.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(c.numpy(), wc.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("depth", [1, 40, 5000])
def test_build_kernel_numbers_buffers_in_walk_order(depth):
    """build_kernel's one walk (buffers to PARAMs while it rebuilds the value) numbers the buffers a value reads as
    a toposort lists them, each once, and a chain deeper than the recursion limit takes the iterative walks; the
    PARAMs keep the buffers' shapes, and the kernel computes numpy's result."""
    rng = np.random.default_rng(depth)
    arrays = [rng.standard_normal(6).astype(np.float32) for _ in range(3)]
    a, b, c = (Tensor(x).realize() for x in arrays)
    v, ref = a * b - c, arrays[0] * arrays[1] - arrays[2]
    for i in range(depth):
        v, ref = (v + c, ref + arrays[2]) if i % 2 else (v * 0.5, ref * np.float32(0.5))
    value = callify(UOp(Ops.SINK, ((v + a).uop,))).src[0].src[0]  # the buffers as PARAMs, as rangeify sees them
    want = [
        u for u in value.toposort(gate=lambda x: not rangeify_mod._is_buffer_leaf(x)) if rangeify_mod._is_buffer_leaf(u)
    ]
    ast, leaves = rangeify_mod.build_kernel(value, dtypes.float32, "CPU")
    assert leaves == want and len(leaves) == len(set(leaves)) == 3, (len(leaves), len(want))
    params = {u.arg.slot: u for u in ast.toposort() if u.op is Ops.PARAM}
    assert all(params[k + 1].shape == leaf.shape for k, leaf in enumerate(leaves) if k + 1 in params)
    np.testing.assert_allclose((v + a).numpy(), ref + arrays[0], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("rows,cols,kernels", [(700, 1000, 2), (64, 4096, 2), (64, 100, 1), (3, 100000, 1)])
def test_wide_nested_reduce_gets_its_own_kernel(rows, cols, kernels):
    """A sum of row sums (an NLL mean over a batch of class rows) fused is one loop nest with a single output that
    no thread can split; a nested REDUCE of NESTED_ROWS outputs or more summing NESTED_WORK values in all gets its
    own kernel (its rows split over the cores), smaller ones stay fused (a long row of few outputs is the split
    reduce's business). The sums equal numpy's."""
    x = np.random.default_rng(rows).standard_normal((rows, cols)).astype(np.float32)
    t = Tensor(x)
    got = (t * 2).sum(1).sum()
    assert len(_kernels(got)) == kernels
    np.testing.assert_allclose(got.numpy(), (x * 2).sum(), rtol=1e-4, atol=1e-2)
