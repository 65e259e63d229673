"""unigrad.linalg (and torch's top-level linear-algebra names, Tensor methods) against torch.linalg on random data:
odd and even sizes, batched and not, float64 (tight) and float32 (loose), non-contiguous inputs, empty batches,
gradients against torch's autograd, and torch's errors at the call. Factorizations whose factors are unique only up
to sign (eigh, svd) are checked by their defining identities; QR follows LAPACK's signs, so Q and R match exactly."""

import math

import numpy as np
import pytest
import torch

import unigrad
from unigrad import Tensor
from unigrad.api import linalg as ulinalg

L = unigrad.linalg
rng = np.random.default_rng(0)
TOL = {np.float64: 1e-9, np.float32: 2e-4}


def randn(*shape: int, dtype=np.float64) -> np.ndarray:
    return rng.standard_normal(shape).astype(dtype)


def spd(*shape: int, dtype=np.float64) -> np.ndarray:
    """A well-conditioned symmetric positive-definite batch: shape is (*batch, n)."""
    a = randn(*shape, shape[-1])
    return (a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])).astype(dtype)


def check(u, t, tol: float = 1e-9) -> None:
    """unigrad result u against torch result t: shape, dtype and values (relative to t's magnitude); tuples
    pairwise."""
    if isinstance(t, (tuple, list)):
        assert len(u) == len(t)
        for a, b in zip(u, t):
            check(a, b, tol)
        return
    assert isinstance(u, Tensor), type(u)
    assert u.shape == tuple(t.shape), (u.shape, tuple(t.shape))
    assert u.dtype.name == str(t.dtype).removeprefix("torch."), (u.dtype, t.dtype)
    ref = t.detach().numpy()
    scale = max(1.0, float(np.abs(ref[np.isfinite(ref)]).max())) if ref.size and np.isfinite(ref).any() else 1.0
    np.testing.assert_allclose(u.numpy(), ref, rtol=tol, atol=tol * scale, equal_nan=True)


def check_grad(fu, ft, *arrays: np.ndarray, tol: float = 1e-8) -> None:
    """Gradients of sum(f(x) * w) for a random w, against torch's autograd; a tuple of outputs: the sum of those
    terms, so one backward covers them all."""
    xs = [Tensor(a, requires_grad=True) for a in arrays]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    ou, ot = fu(*xs), ft(*ts)
    ou, ot = (ou, ot) if isinstance(ot, tuple) else ((ou,), (ot,))
    ws = [rng.standard_normal(tuple(t.shape)) for t in ot]
    sum(((u * Tensor(w)).sum() for u, w in zip(ou, ws)), Tensor(0.0)).backward()
    sum((t * torch.tensor(w)).sum() for t, w in zip(ot, ws)).backward()
    for x, t in zip(xs, ts):
        ref = t.grad.numpy()
        np.testing.assert_allclose(x.grad.numpy(), ref, rtol=tol, atol=tol * max(1.0, np.abs(ref).max()))


# ---------------------------------------------------------------- inv, det, slogdet, solve

CASES = [(1, (), np.float64), (2, (), np.float64), (3, (), np.float64), (5, (), np.float64), (8, (), np.float64)]
CASES += [(3, (2, 3), np.float64), (8, (2, 3), np.float32)]


@pytest.mark.parametrize("n, batch, dtype", CASES)
def test_inv_det_slogdet_solve(n, batch, dtype):
    a = randn(*batch, n, n, dtype=dtype)
    b = randn(*batch, n, 2, dtype=dtype)
    A, T = Tensor(a), torch.tensor(a)
    tol = TOL[dtype]
    check(L.inv(A), torch.linalg.inv(T), tol * 10)
    check(L.det(A), torch.linalg.det(T), tol)
    check(L.slogdet(A), torch.linalg.slogdet(T), tol)
    check(L.solve(A, Tensor(b)), torch.linalg.solve(T, torch.tensor(b)), tol * 10)
    v = b[..., 0]
    check(L.solve(A, Tensor(v)), torch.linalg.solve(T, torch.tensor(v)), tol * 10)


def test_larger_matrix():
    """Past ~32 columns: the loop's graph stays linear in n (each step's state is materialized)."""
    a = randn(40, 40)
    check(L.inv(Tensor(a)), torch.linalg.inv(torch.tensor(a)), 1e-8)
    check(L.slogdet(Tensor(a)), torch.linalg.slogdet(torch.tensor(a)), 1e-9)


def test_noncontiguous_and_empty():
    a = randn(3, 5, 4)
    view = a.transpose(0, 2, 1)  # (3, 4, 5)
    ut, tt = Tensor(a).permute(0, 2, 1)[:, :, :4], torch.tensor(a).permute(0, 2, 1)[:, :, :4]  # (3, 4, 4) views
    check(L.inv(ut), torch.linalg.inv(tt))
    check(L.det(ut), torch.linalg.det(tt))
    check(L.qr(Tensor(a).mT), torch.linalg.qr(torch.tensor(view)))
    s = spd(4)
    check(L.cholesky(Tensor(s).mT[1:, 1:]), torch.linalg.cholesky(torch.tensor(s).mT[1:, 1:]))
    e = randn(0, 3, 3)
    E, TE = Tensor(e), torch.tensor(e)
    check(L.inv(E), torch.linalg.inv(TE))
    check(L.det(E), torch.linalg.det(TE))
    check(L.slogdet(E), torch.linalg.slogdet(TE))
    check(L.solve(E, Tensor(randn(0, 3, 2))), torch.linalg.solve(TE, torch.tensor(randn(0, 3, 2))))
    check(L.cholesky(E), torch.linalg.cholesky(TE))
    check(L.qr(E), torch.linalg.qr(TE))
    check(L.eigvalsh(E), torch.linalg.eigvalsh(TE))
    check(L.svdvals(E), torch.linalg.svdvals(TE))
    z = randn(2, 0, 0)
    check(L.inv(Tensor(z)), torch.linalg.inv(torch.tensor(z)))
    check(L.det(Tensor(z)), torch.linalg.det(torch.tensor(z)))


def test_solve_broadcasting_and_left():
    a3, a23 = randn(3, 3), randn(2, 3, 3)
    for A, B in [
        (a3, randn(2, 3, 4)),
        (a23, randn(2, 3)),
        (a23, randn(3)),
        (a23, randn(3, 1)),
        (randn(2, 1, 3, 3), randn(4, 3, 2)),
    ]:
        check(L.solve(Tensor(A), Tensor(B)), torch.linalg.solve(torch.tensor(A), torch.tensor(B)))
    b = randn(2, 3)
    check(L.solve(Tensor(a3), Tensor(b), left=False), torch.linalg.solve(torch.tensor(a3), torch.tensor(b), left=False))


def test_singular_matrices():
    """Lazily, a singular matrix is not an error: inv gives non-finite values, det 0, slogdet (0, -inf); the _ex
    variants give torch's info."""
    s = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]])
    assert not np.isfinite(L.inv(Tensor(s)).numpy()).all()
    check(L.det(Tensor(np.zeros((2, 2)))), torch.linalg.det(torch.zeros(2, 2, dtype=torch.float64)))
    check(L.slogdet(Tensor(np.zeros((2, 2)))), torch.linalg.slogdet(torch.zeros(2, 2, dtype=torch.float64)))
    z = np.zeros((3, 3))
    z[0, 0] = z[1, 2] = 1.0  # column 1 is zero: info 2
    assert L.inv_ex(Tensor(z)).info.item() == torch.linalg.inv_ex(torch.tensor(z)).info.item() == 2
    assert L.solve_ex(Tensor(z), Tensor(randn(3))).info.item() == 2
    with pytest.raises(RuntimeError, match="The diagonal element 2 is zero"):
        L.inv_ex(Tensor(z), check_errors=True)
    assert (L.inv_ex(Tensor(randn(2, 3, 3))).info.numpy() == 0).all()


# ---------------------------------------------------------------- cholesky, qr


@pytest.mark.parametrize(
    "n, batch, dtype", [(1, (), np.float64), (3, (), np.float64), (8, (2, 3), np.float64), (5, (), np.float32)]
)
def test_cholesky(n, batch, dtype):
    s = spd(*batch, n, dtype=dtype)
    check(L.cholesky(Tensor(s)), torch.linalg.cholesky(torch.tensor(s)), TOL[dtype])
    check(L.cholesky(Tensor(s), upper=True), torch.linalg.cholesky(torch.tensor(s), upper=True), TOL[dtype])
    lower_only = np.tril(s) + np.triu(randn(n, n), 1).astype(dtype)  # only the lower triangle is read
    check(L.cholesky(Tensor(lower_only)), torch.linalg.cholesky(torch.tensor(lower_only)), TOL[dtype])


def test_cholesky_ex_info():
    s = spd(4)
    s[2, 2] = -100.0
    s[3, 3] = -100.0  # leading minor of order 3 is not positive-definite
    L_, info = L.cholesky_ex(Tensor(s))
    assert info.dtype.name == "int32" and info.item() == torch.linalg.cholesky_ex(torch.tensor(s)).info.item() == 3
    with pytest.raises(RuntimeError, match="leading minor of order 3 is not positive-definite"):
        L.cholesky_ex(Tensor(s), check_errors=True)
    assert np.isnan(L.cholesky(Tensor(s)).numpy()).any()  # torch raises here; lazily it is nan


@pytest.mark.parametrize(
    "shape, dtype",
    [
        ((4, 4), np.float64),
        ((5, 3), np.float64),
        ((3, 5), np.float64),
        ((2, 3, 3, 2), np.float64),
        ((1, 1), np.float64),
        ((6, 4), np.float32),
    ],
)
def test_qr(shape, dtype):
    a = randn(*shape, dtype=dtype)
    A, T = Tensor(a), torch.tensor(a)
    for mode in ("reduced", "complete"):
        check(L.qr(A, mode), torch.linalg.qr(T, mode), TOL[dtype] * 10)
    Q, R = L.qr(A, "r")
    assert Q.shape == (0,)
    check(R, torch.linalg.qr(T, "r")[1], TOL[dtype] * 10)


# ---------------------------------------------------------------- eigh, svd and what is built on them


def check_eigh(a: np.ndarray, w: Tensor, V: Tensor, tol: float) -> None:
    sym = np.tril(a) + np.swapaxes(np.tril(a, -1), -1, -2)
    wn, Vn = w.numpy(), V.numpy()
    np.testing.assert_allclose(wn, torch.linalg.eigvalsh(torch.tensor(a)).numpy(), rtol=tol, atol=tol * 10)
    n = a.shape[-1]
    np.testing.assert_allclose(sym @ Vn, Vn * wn[..., None, :], atol=tol * 10 * max(1, np.abs(wn).max()))
    np.testing.assert_allclose(np.swapaxes(Vn, -1, -2) @ Vn, np.broadcast_to(np.eye(n), Vn.shape), atol=tol * 10)


@pytest.mark.parametrize(
    "n, batch, dtype",
    [(1, (), np.float64), (2, (), np.float64), (5, (), np.float64), (8, (2,), np.float64), (3, (2, 3), np.float32)],
)
def test_eigh(n, batch, dtype):
    a = randn(*batch, n, n, dtype=dtype)
    w, V = L.eigh(Tensor(a))
    check_eigh(a, w, V, TOL[dtype])
    check(L.eigvalsh(Tensor(a), UPLO="U"), torch.linalg.eigvalsh(torch.tensor(a), UPLO="U"), TOL[dtype] * 10)


def test_eigh_repeated_eigenvalues():
    q, _ = np.linalg.qr(randn(4, 4))
    a = q @ np.diag([1.0, 1.0, 3.0, -2.0]) @ q.T
    w, V = L.eigh(Tensor(a))
    check_eigh(a, w, V, 1e-9)
    w, V = L.eigh(Tensor(np.eye(3)))
    check_eigh(np.eye(3), w, V, 1e-12)


def check_svd(a: np.ndarray, U: Tensor, S: Tensor, Vh: Tensor, full: bool, tol: float) -> None:
    m, n = a.shape[-2:]
    k = min(m, n)
    Un, Sn, Vn = U.numpy(), S.numpy(), Vh.numpy()
    assert Un.shape[-2:] == ((m, m) if full else (m, k)) and Vn.shape[-2:] == ((n, n) if full else (k, n))
    np.testing.assert_allclose(Sn, torch.linalg.svdvals(torch.tensor(a)).numpy(), rtol=tol, atol=tol * 10)
    rec = (Un[..., :, :k] * Sn[..., None, :]) @ Vn[..., :k, :]
    np.testing.assert_allclose(rec, a, atol=tol * 10 * max(1, np.abs(a).max()))
    for M, size in ((Un, Un.shape[-1]), (np.swapaxes(Vn, -1, -2), Vn.shape[-2])):
        np.testing.assert_allclose(
            np.swapaxes(M, -1, -2) @ M, np.broadcast_to(np.eye(size), M.shape[:-2] + (size, size)), atol=tol * 10
        )


@pytest.mark.parametrize(
    "shape, dtype",
    [
        ((1, 1), np.float64),
        ((3, 3), np.float64),
        ((5, 3), np.float64),
        ((2, 3, 2, 5), np.float64),
        ((8, 8), np.float64),
        ((4, 6), np.float32),
    ],
)
def test_svd(shape, dtype):
    a = randn(*shape, dtype=dtype)
    for full in (True, False):
        U, S, Vh = L.svd(Tensor(a), full_matrices=full)
        check_svd(a, U, S, Vh, full, TOL[dtype])
    check(L.svdvals(Tensor(a)), torch.linalg.svdvals(torch.tensor(a)), TOL[dtype] * 10)


def test_svd_rank_deficient():
    """Zero singular values: U is still completed to an orthonormal basis; rank and pinv drop them."""
    a = randn(5, 2) @ randn(2, 4)  # rank 2
    U, S, Vh = L.svd(Tensor(a))
    check_svd(a, U, S, Vh, True, 1e-9)
    check(L.matrix_rank(Tensor(a)), torch.linalg.matrix_rank(torch.tensor(a)))
    check(L.pinv(Tensor(a)), torch.linalg.pinv(torch.tensor(a)), 1e-8)


def test_pinv_rank_lstsq_cond():
    for a in (randn(5, 3), randn(3, 5), randn(2, 4, 4)):
        A, T = Tensor(a), torch.tensor(a)
        check(L.pinv(A), torch.linalg.pinv(T), 1e-8)
        check(L.matrix_rank(A), torch.linalg.matrix_rank(T))
        check(L.cond(A), torch.linalg.cond(T), 1e-8)
    s = randn(4, 4)
    s = s + s.T
    check(L.pinv(Tensor(s), hermitian=True), torch.linalg.pinv(torch.tensor(s), hermitian=True), 1e-8)
    check(L.matrix_rank(Tensor(s), hermitian=True), torch.linalg.matrix_rank(torch.tensor(s), hermitian=True))
    check(L.matrix_rank(Tensor(s), atol=1.0, rtol=0.0), torch.linalg.matrix_rank(torch.tensor(s), atol=1.0, rtol=0.0))
    check(L.cond(Tensor(s), 1), torch.linalg.cond(torch.tensor(s), 1), 1e-8)
    for a, b in ((randn(5, 3), randn(5, 2)), (randn(3, 5), randn(3, 2)), (randn(5, 3), randn(5))):
        A, B, T, TB = Tensor(a), Tensor(b), torch.tensor(a), torch.tensor(b)
        check(L.lstsq(A, B), torch.linalg.lstsq(T, TB), 1e-8)
        for driver in ("gels", "gelsd", "gelss") if a.shape[0] > a.shape[1] and b.ndim == 2 else ():
            check(L.lstsq(A, B, driver=driver), torch.linalg.lstsq(T, TB, driver=driver), 1e-8)


# ---------------------------------------------------------------- norms


def test_vector_and_matrix_norms():
    x = randn(3, 4, 5)
    X, T = Tensor(x), torch.tensor(x)
    for ord in (2, 1, 0, 3.5, -1, math.inf, -math.inf):
        check(L.vector_norm(X, ord), torch.linalg.vector_norm(T, ord))
        check(
            L.vector_norm(X, ord, dim=(0, 2), keepdim=True), torch.linalg.vector_norm(T, ord, dim=(0, 2), keepdim=True)
        )
    check(L.vector_norm(X, keepdim=True), torch.linalg.vector_norm(T, keepdim=True))
    check(L.vector_norm(X.cast("float32"), dim=-1), torch.linalg.vector_norm(T.float(), dim=-1), 1e-5)
    for ord in ("fro", "nuc", math.inf, -math.inf, 1, -1, 2, -2):
        check(L.matrix_norm(X, ord), torch.linalg.matrix_norm(T, ord), 1e-8)
    for ord in ("fro", math.inf, -1, 2):  # 2: the singular values of X permuted to (4, 5, 3)
        check(
            L.matrix_norm(X, ord, dim=(2, 0), keepdim=True),
            torch.linalg.matrix_norm(T, ord, dim=(2, 0), keepdim=True),
            1e-8,
        )
    m = x[0]
    for ord, dim in ((None, None), (None, 1), (None, (0, 1)), ("fro", None), (1, None), (math.inf, (1, 0)), (3, 1)):
        check(L.norm(Tensor(m), ord, dim), torch.linalg.norm(torch.tensor(m), ord, dim), 1e-8)
    check(L.norm(X), torch.linalg.norm(T))
    check(L.norm(Tensor(m[0]), 1), torch.linalg.norm(torch.tensor(m[0]), 1))


# ---------------------------------------------------------------- products and small compositions


def test_matrix_power_multi_dot_and_friends():
    a = randn(2, 3, 3)
    A, T = Tensor(a), torch.tensor(a)
    for k in (0, 1, 2, 3, 5, -1, -2):
        check(L.matrix_power(A, k), torch.linalg.matrix_power(T, k), 1e-8)
    check(
        L.matrix_power(Tensor(np.arange(4).reshape(2, 2)), 3),
        torch.linalg.matrix_power(torch.arange(4).reshape(2, 2), 3),
    )
    ms = [randn(4), randn(4, 6), randn(6, 2), randn(2, 5), randn(5)]
    for sel in (ms, ms[1:4], ms[:2], ms[1:]):
        check(L.multi_dot([Tensor(m) for m in sel]), torch.linalg.multi_dot([torch.tensor(m) for m in sel]))
    u, v = randn(4, 3), randn(1, 3)
    check(L.cross(Tensor(u), Tensor(v)), torch.linalg.cross(torch.tensor(u), torch.tensor(v)))
    v = v[0]
    check(
        L.cross(Tensor(u.T), Tensor(u[::-1].T.copy()), dim=0),
        torch.linalg.cross(torch.tensor(u.T), torch.tensor(u[::-1].T.copy()), dim=0),
    )
    check(L.diagonal(A), torch.linalg.diagonal(T))
    check(L.diagonal(A, offset=1, dim1=0, dim2=2), torch.linalg.diagonal(T, offset=1, dim1=0, dim2=2))
    check(L.vecdot(Tensor(u), Tensor(v)), torch.linalg.vecdot(torch.tensor(u), torch.tensor(v)))
    check(L.vander(Tensor(v)), torch.linalg.vander(torch.tensor(v)))
    check(L.vander(Tensor(u), N=2), torch.linalg.vander(torch.tensor(u), N=2))
    check(L.matmul(A, A), torch.linalg.matmul(T, T))
    for upper, left, unit in ((True, True, False), (False, True, True), (False, False, False)):
        b = randn(2, 3, 2) if left else randn(2, 2, 3)
        check(
            L.solve_triangular(A, Tensor(b), upper=upper, left=left, unitriangular=unit),
            torch.linalg.solve_triangular(T, torch.tensor(b), upper=upper, left=left, unitriangular=unit),
        )
    t = randn(4, 2, 2, 4)
    check(L.tensorinv(Tensor(t)), torch.linalg.tensorinv(torch.tensor(t)), 1e-8)
    b = randn(4, 2)
    check(L.tensorsolve(Tensor(t), Tensor(b)), torch.linalg.tensorsolve(torch.tensor(t), torch.tensor(b)), 1e-8)
    for x in (a, a * 4, np.zeros((2, 2)), randn(3, 3, dtype=np.float32)):
        check(
            L.matrix_exp(Tensor(x)), torch.linalg.matrix_exp(torch.tensor(x)), 1e-5 if x.dtype == np.float32 else 1e-10
        )


# ---------------------------------------------------------------- torch top-level names and Tensor methods


@pytest.mark.filterwarnings("ignore::UserWarning")  # torch's deprecation warnings for torch.cholesky, qr, svd
def test_top_level_names_and_tensor_methods():
    a, s = randn(3, 3), spd(3)
    A, T, S, TS = Tensor(a), torch.tensor(a), Tensor(s), torch.tensor(s)
    assert unigrad.linalg is ulinalg
    names = ulinalg.TORCH_NAMES
    check(names["det"](A), torch.det(T))
    check(names["logdet"](S), torch.logdet(TS))
    check(names["logdet"](Tensor(-s)), torch.logdet(-TS))  # det < 0: nan
    check(names["slogdet"](A), torch.slogdet(T))
    check(names["inverse"](A), torch.inverse(T))
    check(names["cholesky"](S, True), torch.cholesky(TS, True))
    check(names["pinverse"](A), torch.pinverse(T), 1e-8)
    check(names["matrix_power"](A, -3), torch.matrix_power(T, -3), 1e-8)
    check(
        names["cholesky_solve"](Tensor(a[:, :2]), L.cholesky(S)),
        torch.cholesky_solve(T[:, :2], torch.linalg.cholesky(TS)),
    )
    check(names["cholesky_inverse"](L.cholesky(S)), torch.cholesky_inverse(torch.linalg.cholesky(TS)))
    check(names["chain_matmul"](A, A, A), torch.linalg.multi_dot([T, T, T]))
    check(names["qr"](Tensor(a[:, :2]), some=False), torch.qr(T[:, :2], some=False))
    U, S_, V = names["svd"](A)
    _, TS_, TV = torch.svd(T)
    check(S_, TS_)
    check_svd(a, U, S_, V.mT, False, 1e-9)
    check(A.det(), T.det())
    check(S.logdet(), TS.logdet())
    check(A.slogdet(), T.slogdet())
    check(A.inverse(), T.inverse())
    check(S.cholesky(), TS.cholesky())
    check(A.pinverse(), T.pinverse(), 1e-8)
    check(A.matrix_power(2), T.matrix_power(2))
    check(A.matrix_exp(), T.matrix_exp(), 1e-10)
    check(A.qr(), T.qr())
    check(A.svd()[1], T.svd()[1])


# ---------------------------------------------------------------- gradients


def values_and_abs(result):
    return result[0], result[1].abs()


def test_gradients():
    a, b = randn(2, 4, 4), randn(2, 4, 3)
    check_grad(L.inv, torch.linalg.inv, a)
    check_grad(lambda x: (L.det(x), L.slogdet(x)[1]), lambda x: (torch.linalg.det(x), torch.linalg.slogdet(x)[1]), a)
    check_grad(L.solve, torch.linalg.solve, a, b)
    check_grad(L.cholesky, torch.linalg.cholesky, spd(2, 4))
    check_grad(lambda x: tuple(L.qr(x)), lambda x: tuple(torch.linalg.qr(x)), randn(5, 3))
    check_grad(L.pinv, torch.linalg.pinv, randn(3, 5), tol=1e-7)
    # eigenvectors and singular vectors are unique up to sign: through |V|, accurate for well-separated values
    check_grad(
        lambda x: values_and_abs(L.eigh(x)), lambda x: values_and_abs(torch.linalg.eigh(x)), randn(4, 4), tol=1e-6
    )
    check_grad(
        lambda x: tuple(t.abs() for t in L.svd(x, full_matrices=False)),
        lambda x: tuple(t.abs() for t in torch.linalg.svd(x, full_matrices=False)),
        randn(5, 3),
        tol=1e-6,
    )


def test_gradients_float32_and_powers():
    a = randn(3, 3, dtype=np.float32)
    check_grad(L.inv, torch.linalg.inv, a, tol=1e-3)
    check_grad(lambda x: L.matrix_power(x, -2), lambda x: torch.linalg.matrix_power(x, -2), randn(3, 3), tol=1e-7)
    check_grad(lambda x: L.matrix_norm(x, "nuc"), lambda x: torch.linalg.matrix_norm(x, "nuc"), randn(3, 4))


# ---------------------------------------------------------------- errors at the call


def test_errors():
    with pytest.raises(RuntimeError, match="linalg.inv: A must be batches of square matrices, but they are 3 by 4 "):
        L.inv(Tensor(randn(3, 4)))
    with pytest.raises(RuntimeError, match="linalg.det: A must be batches of square matrices, but they are 2 by 3 "):
        L.det(Tensor(randn(2, 3)))
    with pytest.raises(RuntimeError, match="linalg.inv: The input tensor A must have at least 2 dimensions."):
        L.inv(Tensor(randn(3)))
    with pytest.raises(
        RuntimeError, match="linalg.inv: Expected a floating point or complex tensor as input. Got Long"
    ):
        L.inv(Tensor(np.ones((3, 3), dtype=np.int64)))
    with pytest.raises(RuntimeError, match="linalg.slogdet: Low precision dtypes not supported. Got Half"):
        L.slogdet(Tensor(randn(3, 3)).half())
    with pytest.raises(
        RuntimeError,
        match=r"linalg.solve: Incompatible shapes of A and B for the equation AX = B "
        r"\(3x3 and 4x1\)",
    ):
        L.solve(Tensor(randn(3, 3)), Tensor(randn(4)))
    with pytest.raises(
        RuntimeError,
        match="linalg.solve: Expected A and B to have the same dtype, but found A of "
        "type Float and B of type Double instead",
    ):
        L.solve(Tensor(randn(3, 3, dtype=np.float32)), Tensor(randn(3)))
    with pytest.raises(RuntimeError, match="linalg.cholesky: A must be batches of square matrices"):
        L.cholesky(Tensor(randn(3, 4)))
    with pytest.raises(RuntimeError, match="qr received unrecognized mode 'x'"):
        L.qr(Tensor(randn(3, 3)), mode="x")
    with pytest.raises(RuntimeError, match="linalg.eigh: A must be batches of square matrices"):
        L.eigh(Tensor(randn(3, 4)))
    with pytest.raises(RuntimeError, match="linalg.svd: The input tensor A must have at least 2 dimensions."):
        L.svd(Tensor(randn(3)))
    with pytest.raises(RuntimeError, match="linalg.matrix_power: A must be batches of square matrices"):
        L.matrix_power(Tensor(randn(3, 4)), 2)
    with pytest.raises(RuntimeError, match=r"multi_dot\(\): expected at least 2 tensors but got 1"):
        L.multi_dot([Tensor(randn(3, 3))])
    with pytest.raises(RuntimeError, match=r"multi_dot\(\): the last tensor must be 1D or 2D but got 3D"):
        L.multi_dot([Tensor(randn(3, 3)), Tensor(randn(2, 3, 3))])
    with pytest.raises(RuntimeError, match=r"multi_dot\(\): tensors 0 and 1 with shapes \[3, 4\] and \[3, 3\]"):
        L.multi_dot([Tensor(randn(3, 4)), Tensor(randn(3, 3))])
    with pytest.raises(
        RuntimeError, match="linalg.vector_norm: Expected a floating point or complex tensor as input. Got Long"
    ):
        L.vector_norm(Tensor(np.ones(3, dtype=np.int64)))
    with pytest.raises(RuntimeError, match="linalg.matrix_norm: Order 3 not supported."):
        L.matrix_norm(Tensor(randn(3, 3)), ord=3)
    with pytest.raises(RuntimeError, match="linalg.matrix_norm: The input tensor A must have at least 2 dimensions."):
        L.matrix_norm(Tensor(randn(3)))
    with pytest.raises(
        RuntimeError, match="linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got 3D."
    ):
        L.norm(Tensor(randn(2, 3, 3)), ord=2)
    with pytest.raises(RuntimeError, match=r"linalg.pinv\(Float\{\[3\]\}\): expected a tensor with 2 or more "):
        L.pinv(Tensor(randn(3, dtype=np.float32)))
    with pytest.raises(RuntimeError, match="linalg.cross: inputs dimension -1 must have length 3. Got 2 and 2"):
        L.cross(Tensor(randn(3, 2)), Tensor(randn(3, 2)))
    with pytest.raises(RuntimeError, match="torch.linalg.lstsq: input.size"):
        L.lstsq(Tensor(randn(3, 2)), Tensor(randn(4, 2)))
    with pytest.raises(TypeError, match=r"linalg.inv\(\): argument 'A' must be Tensor, not ndarray"):
        L.inv(randn(3, 3))
