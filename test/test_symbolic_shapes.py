"""Symbolic shapes: dims that are Variables. Ops on them match numpy at several bound values, their kernels
compile once for every value (the value is passed at run time), TinyJit replays across values, bad bounds are
refused, and a KV-cache style attention runs under TinyJit with one compile for all positions."""

import numpy as np
import pytest

from unigrad import Tensor, TinyJit, Variable
from unigrad.runtime import realize as rt

RNG = np.random.default_rng(0)
A = RNG.standard_normal((10, 6)).astype(np.float32)
VALUES = [1, 4, 7, 10]  # includes both ends of the Variable's range


def _cases():
    """(name, unigrad fn of (a, n), numpy fn of (a, n)) with a (10, 6) and n bound in [1, 10]."""
    return [
        ("shrink", lambda a, n: a.shrink(((0, n), None)) * 2, lambda a, n: a[:n] * 2),
        ("slice", lambda a, n: a[:n, 1:4] + 1, lambda a, n: a[:n, 1:4] + 1),
        ("index", lambda a, n: a[n - 1], lambda a, n: a[n - 1]),
        ("sum0", lambda a, n: a[:n].sum(0), lambda a, n: a[:n].sum(0)),
        ("sum1", lambda a, n: a[:n].sum(1), lambda a, n: a[:n].sum(1)),
        ("max0", lambda a, n: a[:n].max(0), lambda a, n: a[:n].max(0)),
        ("mean0", lambda a, n: a[:n].mean(0), lambda a, n: a[:n].mean(0)),
        ("softmax0", lambda a, n: a[:n].softmax(0), lambda a, n: np.exp(a[:n]) / np.exp(a[:n]).sum(0)),
        ("reshape", lambda a, n: a[:n].reshape(n * 6), lambda a, n: a[:n].reshape(n * 6)),
        ("reshape-1", lambda a, n: a[:n].reshape(-1, 3), lambda a, n: a[:n].reshape(-1, 3)),
        ("permute", lambda a, n: a[:n].T.contiguous(), lambda a, n: a[:n].T),
        ("pad", lambda a, n: a[:n].pad(((1, 2), (0, 1))), lambda a, n: np.pad(a[:n], ((1, 2), (0, 1)))),
        ("pad_by_n", lambda a, n: a[:2].pad(((0, n), None)), lambda a, n: np.pad(a[:2], ((0, n), (0, 0)))),
        ("expand", lambda a, n: a[:1].expand(n, 6) + a[:n], lambda a, n: a[:1] + a[:n]),
        ("matmul", lambda a, n: a[:n] @ a[:n].T, lambda a, n: a[:n] @ a[:n].T),
        ("matmul_k", lambda a, n: a[:n].T @ a[:n], lambda a, n: a[:n].T @ a[:n]),
        ("cat", lambda a, n: a[:n].cat(a[:2]), lambda a, n: np.concatenate([a[:n], a[:2]])),
        ("full", lambda a, n: Tensor.ones(n, 6) + a[:n], lambda a, n: 1 + a[:n]),
    ]


@pytest.mark.parametrize("name,fn,ref", _cases(), ids=[c[0] for c in _cases()])
def test_op_matches_numpy_and_compiles_once(name, fn, ref):
    v = Variable("n", 1, 10)
    a = Tensor(A)
    compiled = None
    for n in VALUES:
        out = fn(a, v.bind(n))
        np.testing.assert_allclose(out.numpy(), ref(A, n), rtol=1e-5, atol=1e-5, err_msg=f"{name} at n={n}")
        if compiled is None:
            compiled = rt.stats.programs
        else:
            assert rt.stats.programs == compiled, f"{name}: a new kernel compiled at n={n}"


def test_symbolic_shape_prints_and_resolves():
    v = Variable("n", 1, 10).bind(4)
    t = Tensor(A)[:v].reshape(v * 6)
    assert str(t.shape[0]) == "(n*6)"
    assert t.numpy().shape == (24,)


def test_rand_symbolic_shape():
    v = Variable("n", 1, 10)
    out = Tensor.rand(v.bind(3), 5).numpy()
    assert out.shape == (3, 5) and ((out >= 0) & (out < 1)).all()


def test_errors():
    v = Variable("n", 1, 10)
    a = Tensor(A)
    # a bound Variable is checked for its value (as tinygrad): 2:n fits when n = 3, not when n = 1
    assert a.shrink(((2, v.bind(3)), None)).shape[0] is not None
    with pytest.raises(RuntimeError, match="for every value"):
        a.shrink(((2, v.bind(1)), None))
    with pytest.raises(IndexError, match="for every value"):
        a[:6][: v.bind(7)]  # 7 > 6
    with pytest.raises(ValueError, match="bound to both 3 and 4"):
        (a[: v.bind(3)].sum() + a[: v.bind(4)].sum()).realize()
    with pytest.raises(ValueError, match=r"unbound Variables \[.n.\]"):
        a[:v].numpy()


def test_jit_replays_across_bound_values():
    v = Variable("n", 1, 10)
    a = Tensor(A)

    @TinyJit
    def f(x: Tensor, n) -> Tensor:
        return (a[:n] * x).sum(0)

    compiled = None
    for n in [3, 5, 1, 10, 7]:
        x = RNG.standard_normal(6).astype(np.float32)
        np.testing.assert_allclose(f(Tensor(x), v.bind(n)).numpy(), (A[:n] * x).sum(0), rtol=1e-5, atol=1e-5)
        if f.plan is not None and compiled is None:
            compiled = rt.stats.programs
    assert compiled == rt.stats.programs


@pytest.mark.parametrize("in_place", [False, True])
def test_kv_cache_attention_under_jit(in_place):
    """Attention of each new token over the keys/values of all tokens so far, kept in fixed (L, D) buffers:
    the prefix length is a Variable, so one capture serves every position. The new row goes in by a functional
    setitem and a whole-cache assign, or in place by an assign through the symbolic one-row slice."""
    L, D = 12, 8
    wq, wk, wv = (RNG.standard_normal((D, D)).astype(np.float32) for _ in range(3))
    Wq, Wk, Wv = Tensor(wq), Tensor(wk), Tensor(wv)
    kc, vc = Tensor.zeros(L, D).contiguous().realize(), Tensor.zeros(L, D).contiguous().realize()
    pos_var = Variable("pos", 0, L - 1)

    @TinyJit
    def step(x: Tensor, pos) -> Tensor:
        q, k, v = x @ Wq, x @ Wk, x @ Wv
        for cache, new in ((kc, k), (vc, v)):
            if in_place:
                cache[pos : pos + 1].assign(new).realize()
                continue
            upd = cache.contiguous()
            upd[pos : pos + 1] = new
            cache.assign(upd)
        att = (q @ kc[: pos + 1].T / np.sqrt(D)).softmax(-1)
        return att @ vc[: pos + 1]

    xs = RNG.standard_normal((L, 1, D)).astype(np.float32)
    keys, vals = [], []
    compiled = None
    for i in range(L):
        out = step(Tensor(xs[i]), pos_var.bind(i)).numpy()
        keys.append(xs[i] @ wk)
        vals.append(xs[i] @ wv)
        s = (xs[i] @ wq) @ np.concatenate(keys).T / np.sqrt(D)
        p = np.exp(s - s.max())
        np.testing.assert_allclose(out, (p / p.sum()) @ np.concatenate(vals), rtol=1e-4, atol=1e-5)
        if i == 1:
            compiled = rt.stats.programs
    assert step.plan is not None and rt.stats.programs == compiled


def test_a_bound_variable_as_a_tensor_value_is_default_int():
    """Tensor(bound Variable) holds its value as dtypes.default_int (index is no tensor dtype), so it compares and
    computes with other tensors; promoting the index dtype itself is a clear TypeError, not a KeyError."""
    from unigrad.dtype import dtypes, promote_types

    t = Tensor(Variable("k", 0, 8).bind(3))
    assert t.dtype is dtypes.default_int and t.shape == () and t.item() == 3
    np.testing.assert_array_equal((Tensor.arange(8) < t).numpy(), np.arange(8) < 3)
    with pytest.raises(TypeError, match="not a tensor dtype"):
        promote_types(dtypes.index, dtypes.int32)
