"""unigrad.linalg: torch.linalg over unigrad Tensors (`torch.linalg.inv(A)` -> `unigrad.linalg.inv(A)`), torch's
top-level linear-algebra functions (TORCH_NAMES: det, logdet, slogdet, inverse, cholesky, pinverse, matrix_power, ...)
and LinalgMixin, their Tensor methods.

Every result is a composition of Tensor ops: a lazy graph compiled to kernels like any other, with gradients from the
ops' own rules. The factorizations are Python loops over the matrix size, one graph step per column (or per round
of rotations), batched over the leading dims:

  inv, solve, det, slogdet   Gauss-Jordan elimination with partial pivoting on [A | B]
  cholesky                   right-looking outer-product Cholesky
  qr                         Householder reflections (LAPACK's sign convention, so Q and R match torch's)
  eigh, eigvalsh             two-sided Jacobi rotations, n/2 disjoint pairs per round (round-robin order)
  svd, svdvals               one-sided (Hestenes) Jacobi rotations; U completed by a Householder QR
  pinv, matrix_rank, lstsq   from svd (or eigh when hermitian=True)

Each step works on row/column 0 of a rotated frame: the rows and columns it finished roll to the end, so every
step builds the same graph and its kernels compile once per matrix size, not once per column. Pivot choices are
data (argmax of a column, one-hot selects); Jacobi pairs follow a fixed permutation applied after each round.
Each step's state is materialized (forward and backward): n lazy rolls (a cat of two slices of the previous step)
would fuse into an index expression that doubles with every step.

Where this differs from torch, because nothing is read back from the device to decide it:
  - a singular matrix is not an error: inv and solve give inf/nan (a zero pivot divides), det gives 0 and slogdet
    (0, -inf); cholesky of a matrix that is not positive-definite gives nan. The *_ex variants (inv_ex, solve_ex,
    cholesky_ex) compute torch's `info` lazily; check_errors=True reads it back and raises.
  - eigh and svd do read one scalar per sweep (the largest off-diagonal ratio, to stop once converged), and
    matrix_exp one norm (its number of squarings): those are sync points, as sort is, and not for TinyJit capture.
  - gradients of eigh/svd go through the iterations: those of eigenvalues, singular values and (for
    well-separated values) of the vectors match torch's; for repeated values they are undefined, as in torch. The
    columns a full_matrices=True SVD adds (or a rank-deficient U gets) come from a QR and carry no meaningful
    gradient.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from unigrad.dtype import DType, dtypes, to_dtype

if TYPE_CHECKING:
    from unigrad.tensor import Tensor

Dims = int | Sequence[int] | None
_TORCH_DTYPE_NAMES = {"float16": "Half", "bfloat16": "BFloat16", "float32": "Float", "float64": "Double"}
_TORCH_DTYPE_NAMES |= {"int8": "Char", "int16": "Short", "int32": "Int", "int64": "Long", "uint8": "Byte"}
_TORCH_DTYPE_NAMES |= {"uint16": "UInt16", "uint32": "UInt32", "uint64": "UInt64", "bool": "Bool"}
MAX_SWEEPS = 40  # Jacobi sweeps before eigh/svd stop unconverged (convergence is quadratic: 4-10 are usual)


class SlogdetResult(NamedTuple):
    sign: Tensor
    logabsdet: Tensor


class QRResult(NamedTuple):
    Q: Tensor
    R: Tensor


class EighResult(NamedTuple):
    eigenvalues: Tensor
    eigenvectors: Tensor


class SVDResult(NamedTuple):
    U: Tensor
    S: Tensor
    Vh: Tensor


class TorchSVDResult(NamedTuple):
    """torch.svd's (U, S, V): V itself, not its transpose."""

    U: Tensor
    S: Tensor
    V: Tensor


class LstsqResult(NamedTuple):
    solution: Tensor
    residuals: Tensor
    rank: Tensor
    singular_values: Tensor


class InvExResult(NamedTuple):
    inverse: Tensor
    info: Tensor


class SolveExResult(NamedTuple):
    result: Tensor
    info: Tensor


class CholeskyExResult(NamedTuple):
    L: Tensor
    info: Tensor


# ---------------------------------------------------------------- helpers


def _tensor() -> type[Tensor]:
    from unigrad.tensor import Tensor

    return Tensor


def _dtype_name(dt: DType) -> str:
    return _TORCH_DTYPE_NAMES.get(dt.name, dt.name)


def _arange(n: int, device: Any) -> Tensor:
    return _tensor().arange(n, dtype=dtypes.int64, device=device)


def _eye(n: int, like: Tensor) -> Tensor:
    return _tensor().eye(n, dtype=like.dtype, device=like.device)


def _onehot(idx: Tensor, n: int, dtype: DType) -> Tensor:
    """(..., k) int indices -> (..., k, n): row j is e_{idx[j]}."""
    return (idx.unsqueeze(-1) == _arange(n, idx.device)).cast(dtype)


def _check_tensor(fn: str, A: Any, name: str = "A") -> Tensor:
    if not isinstance(A, _tensor()):
        raise TypeError(f"{fn}(): argument '{name}' must be Tensor, not {type(A).__name__}")
    return A


def _check_float(fn: str, A: Tensor, low_precision: bool = False) -> None:
    if not A.dtype.is_float:
        raise RuntimeError(f"{fn}: Expected a floating point or complex tensor as input. Got {_dtype_name(A.dtype)}")
    if not low_precision and A.dtype not in (dtypes.float32, dtypes.float64):
        raise RuntimeError(f"{fn}: Low precision dtypes not supported. Got {_dtype_name(A.dtype)}")


def _check_matrix(fn: str, A: Any, square: bool = False, name: str = "A") -> Tensor:
    """A batch of matrices of float32/float64 (square ones when asked), or torch's error for this call."""
    A = _check_tensor(fn, A, name)
    if A.ndim < 2:
        raise RuntimeError(f"{fn}: The input tensor {name} must have at least 2 dimensions.")
    if square and A.shape[-1] != A.shape[-2]:
        raise RuntimeError(
            f"{fn}: {name} must be batches of square matrices, but they are {A.shape[-2]} by {A.shape[-1]} matrices"
        )
    _check_float(fn, A)
    return A


def _check_same_dtype(fn: str, A: Tensor, B: Tensor) -> None:
    if A.dtype is not B.dtype:
        raise RuntimeError(
            f"{fn}: Expected A and B to have the same dtype, but found A of type {_dtype_name(A.dtype)} and B of type "
            f"{_dtype_name(B.dtype)} instead"
        )


def _batch_shape(fn: str, a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    """The broadcast of two batch shapes (numpy's rules), or torch's error."""
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + tuple(a), (1,) * (n - len(b)) + tuple(b)
    out = []
    for x, y in zip(a, b):
        if x != y and 1 not in (x, y):
            raise RuntimeError(f"{fn}: the batch dimensions of the inputs do not broadcast: {a} and {b}")
        out.append(y if x == 1 else x)
    return tuple(out)


def _roll_cols(M: Tensor) -> Tensor:
    """Columns rolled left by one: column 0 becomes the last."""
    return M[..., :, 1:].cat(M[..., :, :1], dim=-1) if M.shape[-1] > 1 else M


def _roll_rows(M: Tensor) -> Tensor:
    """Rows rolled up by one: row 0 becomes the last."""
    return M[..., 1:, :].cat(M[..., :1, :], dim=-2) if M.shape[-2] > 1 else M


def _unroll_cols(M: Tensor, k: int) -> Tensor:
    """Columns rolled right by k (undoing k left rolls)."""
    k %= max(M.shape[-1], 1)
    return M[..., :, -k:].cat(M[..., :, :-k], dim=-1) if k else M


def _materialize(x: Tensor) -> Tensor:
    """x in a buffer of its own, and so is the gradient flowing back through it: one step's state of a loop that rolls
    rows or columns (unmaterialized, n nested rolls would index through a tree doubling at every step)."""
    return x.contiguous().contiguous_backward()


def _edge_mask(n: int, m: int, device: Any) -> Tensor:
    """(n, m) bool: True on row 0 and column 0."""
    return (_arange(n, device) == 0).reshape(n, 1) | (_arange(m, device) == 0).reshape(1, m)


def _symmetric(A: Tensor, upper: bool = False) -> Tensor:
    """The symmetric matrix torch reads from A's lower (upper) triangle. Its gradient is the symmetric part of the
    incoming one, as torch's for cholesky and eigh: the value is the triangle's, the graph is (A + A^T) / 2's."""
    tri = A.triu() if upper else A.tril()
    strict = A.triu(1) if upper else A.tril(-1)
    value = tri + strict.mT
    sym = (A + A.mT) * 0.5
    return value.detach() + (sym - sym.detach())


def _eps(dt: DType) -> float:
    return 2.220446049250313e-16 if dt is dtypes.float64 else 1.1920928955078125e-07


def _tiny(dt: DType) -> float:
    """The smallest normal number of dt."""
    return 2.2250738585072014e-308 if dt is dtypes.float64 else 1.1754943508222875e-38


# ---------------------------------------------------------------- Gauss-Jordan: inv, solve, det


class _Elimination(NamedTuple):
    X: Tensor  # (..., n, m): A^-1 B
    pivots: Tensor  # (..., n): the pivot of each column (their product times the permutation's sign is det A)
    rows: Tensor  # (..., n) int64: the row each column's pivot came from


def _gauss_jordan(A: Tensor, B: Tensor, skip_zero_pivots: bool = False) -> _Elimination:
    """Gauss-Jordan elimination with partial pivoting on M = [A | B] (..., n, n + m), batched.

    Step k works on column 0 of M: the pivot row p is the largest |M[i, 0]| among rows not yet used (argmax), row
    p is divided by the pivot and its multiples are subtracted from every other row, making column 0 e_p; then the
    columns roll left by one. Rows are never swapped: after n steps M = [X' | P] with P the permutation matrix
    (P[p_k, k] = 1, exactly, since x/x and y - y*1 are exact) and X' = P A^-1 B, so A^-1 B = P^T X'.
    skip_zero_pivots: a zero pivot leaves M unchanged (for det: the product is then 0, not nan)."""
    n, m = A.shape[-1], B.shape[-1]
    M = A.cat(B, dim=-1) if m else A
    ar = _arange(n, A.device)
    avail = ar >= 0  # rows not used as a pivot yet
    pivots, rows = [], []
    for _ in range(n):
        col = M[..., :, 0]  # (..., n)
        p = avail.where(col.abs(), -1.0).argmax(-1).unsqueeze(-1)  # (..., 1)
        hit = p == ar  # (..., n)
        P = hit.cast(M.dtype)
        rowp = (P.unsqueeze(-1) * M).sum(-2)  # (..., w): the pivot row
        piv = rowp[..., :1]
        if skip_zero_pivots:
            ok = piv != 0
            r = ok.where(rowp / ok.where(piv, 1.0), 0.0)
        else:
            r = rowp / piv
        M = _materialize(_roll_cols(M - (col - P).unsqueeze(-1) * r.unsqueeze(-2)))  # row p: r; others: minus r*col
        avail = avail & hit.logical_not()
        pivots.append(piv)
        rows.append(p)
    Tensor = _tensor()
    piv_t = Tensor.cat(*pivots, dim=-1) if n else A.sum(-1)[..., :0]
    rows_t = Tensor.cat(*rows, dim=-1) if n else piv_t.cast(dtypes.int64)
    if not m:
        return _Elimination(M[..., :, :0], piv_t, rows_t)
    X, perm = M[..., :, :m], M[..., :, m:].detach()
    return _Elimination(perm.mT @ X, piv_t, rows_t)


def _permutation_sign(rows: Tensor, dtype: DType) -> Tensor:
    """(-1)^(inversions of the sequence rows[..., k]): the sign of the permutation k -> rows[k]."""
    n = rows.shape[-1]
    ar = _arange(n, rows.device)
    later = ar.reshape(n, 1) < ar.reshape(1, n)  # k < l
    inversions = (later & (rows.unsqueeze(-1) > rows.unsqueeze(-2))).sum((-2, -1))
    return 1 - 2 * (inversions % 2).cast(dtype)


def _first_bad(bad: Tensor) -> Tensor:
    """(..., n) bool -> torch's int32 info: 1 + the first True position, 0 when none."""
    n = bad.shape[-1]
    if n == 0:
        return bad.sum(-1).cast(dtypes.int32)
    return bad.any(-1).where(bad.cast(dtypes.int32).argmax(-1) + 1, 0).cast(dtypes.int32)


def inv(A: Tensor) -> Tensor:
    """The inverse of each square matrix (Gauss-Jordan with partial pivoting). A singular matrix gives inf/nan
    (torch raises); inv_ex reports it."""
    A = _check_matrix("linalg.inv", A, square=True)
    n = A.shape[-1]
    if n == 0:
        return A.contiguous()
    return _gauss_jordan(A, _eye(n, A).expand(A.shape)).X


def inv_ex(A: Tensor, *, check_errors: bool = False) -> InvExResult:
    """(inverse, info): info is 0, or k + 1 for the first column k whose pivot was exactly 0 (then the inverse is
    inf/nan). check_errors=True reads info back and raises, as torch."""
    A = _check_matrix("linalg.inv_ex", A, square=True)
    n = A.shape[-1]
    if n == 0:
        return InvExResult(A.contiguous(), A.sum((-2, -1)).cast(dtypes.int32))
    e = _gauss_jordan(A, _eye(n, A).expand(A.shape))
    info = _first_bad(e.pivots == 0)
    if check_errors:
        _raise_info("linalg.inv_ex", info, "The diagonal element {} is zero, the inversion could not be completed")
    return InvExResult(e.X, info)


def _raise_info(fn: str, info: Tensor, message: str) -> None:
    """torch's check_errors=True: a sync point that raises on the first nonzero info."""
    bad = [int(i) for i in info.flatten().tolist() if i]
    if bad:
        raise RuntimeError(f"{fn}: " + message.format(bad[0]))


def _solve_operands(fn: str, A: Tensor, B: Tensor, left: bool) -> tuple[Tensor, Tensor, bool]:
    """A and B broadcast to (*, n, n) and (*, n, k), and whether B was a (batch of) vector(s) (torch's rule: B is 1-D,
    or B.shape == A.shape[:-1])."""
    A = _check_matrix(fn, A, square=True)
    B = _check_tensor(fn, B, "B")
    _check_same_dtype(fn, A, B)
    n = A.shape[-1]
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and B.shape == A.shape[:-1])
    if not left:
        if vector or B.ndim < 2:
            raise RuntimeError(f"{fn}: Vector broadcasting of the left hand side is not supported for left=False")
        A, B = A.mT, B.mT
    Bm = B.unsqueeze(-1) if vector else B
    if Bm.ndim < 2 or Bm.shape[-2] != n:
        k = Bm.shape[-1] if Bm.ndim >= 2 else 1
        rows = Bm.shape[-2] if Bm.ndim >= 2 else Bm.shape[-1]
        raise RuntimeError(f"{fn}: Incompatible shapes of A and B for the equation AX = B ({n}x{n} and {rows}x{k})")
    batch = _batch_shape(fn, A.shape[:-2], Bm.shape[:-2])
    return A.expand(*batch, n, n), Bm.expand(*batch, *Bm.shape[-2:]), vector


def solve(A: Tensor, B: Tensor, *, left: bool = True) -> Tensor:
    """X with A X = B (left=False: X A = B), batched with broadcasting; B is a vector when it is 1-D or has shape
    A.shape[:-1] (torch's rule). A singular A gives inf/nan (torch raises)."""
    return _solve("linalg.solve", A, B, left, check_errors=False).result


def solve_ex(A: Tensor, B: Tensor, *, left: bool = True, check_errors: bool = False) -> SolveExResult:
    """(result, info) of solve: info is 0, or k + 1 for the first column k of A whose pivot was exactly 0."""
    return _solve("linalg.solve_ex", A, B, left, check_errors)


def _solve(fn: str, A: Tensor, B: Tensor, left: bool, check_errors: bool) -> SolveExResult:
    A2, B2, vector = _solve_operands(fn, A, B, left)
    n = A2.shape[-1]
    if n == 0 or B2.shape[-1] == 0:
        X, info = B2.contiguous(), A2.sum((-2, -1)).cast(dtypes.int32)
    else:
        e = _gauss_jordan(A2, B2)
        X, info = e.X, _first_bad(e.pivots == 0)
    if check_errors:
        _raise_info(fn, info, "The solver failed because the input matrix is singular (pivot {} is zero).")
    if vector:
        X = X.squeeze(-1)
    elif not left:
        X = X.mT
    return SolveExResult(X, info)


def _det_parts(fn: str, A: Tensor) -> tuple[Tensor, Tensor]:
    """(pivots, permutation sign) of A: det A = sign * prod(pivots)."""
    A = _check_matrix(fn, A, square=True)
    if A.shape[-1] == 0:
        return A.sum(-1), A.sum((-2, -1)) + 1
    e = _gauss_jordan(A, A[..., :, :0], skip_zero_pivots=True)
    return e.pivots, _permutation_sign(e.rows, A.dtype)


def det(A: Tensor) -> Tensor:
    """The determinant: the product of the Gauss-Jordan pivots, times the sign of the row permutation."""
    pivots, sign = _det_parts("linalg.det", A)
    return pivots.prod(-1) * sign


def slogdet(A: Tensor) -> SlogdetResult:
    """(sign, log|det|): from the pivots, without the product's overflow; (0, -inf) for a singular matrix."""
    pivots, sign = _det_parts("linalg.slogdet", A)
    return SlogdetResult(pivots.sign().prod(-1) * sign, pivots.abs().log().sum(-1))


def logdet(A: Tensor) -> Tensor:
    """log(det A): nan when det < 0, -inf when it is 0 (torch.logdet)."""
    sign, logabs = slogdet(_check_matrix("logdet", A, square=True))
    return (sign < 0).where(math.nan, logabs)


# ---------------------------------------------------------------- Cholesky


def _cholesky(S: Tensor) -> tuple[Tensor, Tensor]:
    """(L, the diagonal of L) of a symmetric S (..., n, n), right-looking: step k takes d = sqrt(T[0, 0]) and the
    column l = T[:, 0] / d of the trailing matrix T, subtracts l l^T, zeroes row and column 0, and rolls T's rows
    and columns by one (finished rows and columns of T stay zero, so l is zero there). L keeps the columns in
    order: l is appended as its last column as the others roll left, in T's row frame, so after n steps both
    frames are back where they started."""
    n = S.shape[-1]
    edge = _edge_mask(n, n, S.device)
    T = S
    L = _tensor().zeros(S.shape, dtype=S.dtype, device=S.device)  # the zero columns roll out as L's come in
    diag = []
    for _ in range(n):
        d = T[..., :1, :1].sqrt()
        col = T[..., :, :1] / d  # (..., n, 1)
        T = _materialize(_roll_rows(_roll_cols(edge.where(0.0, T - col * col.mT))))
        L = _materialize(_roll_rows(L[..., :, 1:].cat(col, dim=-1)))
        diag.append(d[..., 0])
    Tensor = _tensor()
    return L, Tensor.cat(*diag, dim=-1) if n else S.sum(-1)


def cholesky(A: Tensor, *, upper: bool = False) -> Tensor:
    """L with A = L L^T from A's lower triangle (upper=True: U = L^T, with A = U^T U). A matrix that is not
    positive-definite gives nan (torch raises); cholesky_ex reports it."""
    return _cholesky_ex("linalg.cholesky", A, upper, check_errors=False).L


def cholesky_ex(A: Tensor, *, upper: bool = False, check_errors: bool = False) -> CholeskyExResult:
    """(L, info): info is 0, or the order k of the first leading minor that is not positive-definite."""
    return _cholesky_ex("linalg.cholesky_ex", A, upper, check_errors)


def _cholesky_ex(fn: str, A: Tensor, upper: bool, check_errors: bool) -> CholeskyExResult:
    A = _check_matrix(fn, A, square=True)
    L, d = _cholesky(_symmetric(A))
    info = _first_bad((d > 0).logical_not())
    if check_errors:
        message = "The factorization could not be completed because the input is not positive-definite (the leading "
        _raise_info(fn, info, message + "minor of order {} is not positive-definite).")
    return CholeskyExResult(L.mT if upper else L, info)


def cholesky_solve(B: Tensor, L: Tensor, upper: bool = False) -> Tensor:
    """X with (L L^T) X = B from the Cholesky factor L (upper=True: U^T U), torch.cholesky_solve."""
    L = _check_matrix("cholesky_solve", L, square=True)
    A = L.mT @ L if upper else L @ L.mT
    return solve(A, B)


def cholesky_inverse(L: Tensor, upper: bool = False) -> Tensor:
    """The inverse of L L^T (upper=True: U^T U) from its Cholesky factor, torch.cholesky_inverse."""
    L = _check_matrix("cholesky_inverse", L, square=True)
    Linv = inv(L)
    return Linv @ Linv.mT if upper else Linv.mT @ Linv


# ---------------------------------------------------------------- QR (Householder)


def _householder_qr(A: Tensor, want_q: bool = True) -> tuple[Tensor | None, Tensor]:
    """(Q (..., m, m), R (..., K, n)) with A = Q[:, :K] R, K = min(m, n), by Householder reflections.

    Step k reflects column 0 of the trailing matrix T onto alpha e_0 with H = I - beta v v^T, alpha =
    -sign(x_0) |x| (H = I when x below x_0 is zero, as LAPACK, so a final 1-row step keeps its sign); row 0 of H T
    is row k of R. T's finished row and column are zeroed and rolled to the end (so x is zero there), R gets the new
    row at its bottom as its rows roll up, Q's columns (T's row frame) roll with T's rows."""
    m, n = A.shape[-2:]
    K = min(m, n)
    T = A
    Q = _eye(m, A).expand(*A.shape[:-2], m, m) if want_q else None
    R = _tensor().zeros(*A.shape[:-2], K, n, dtype=A.dtype, device=A.device)  # zero rows roll out as R's come in
    edge = _edge_mask(m, n, A.device)
    first_col = (_arange(n, A.device) == 0).reshape(1, n)
    e0 = (_arange(m, A.device) == 0).cast(A.dtype)
    for _ in range(K):
        x = T[..., :, 0]  # (..., m)
        x0 = x[..., :1]
        tail = (x[..., 1:] * x[..., 1:]).sum(-1, keepdim=True) if m > 1 else x0 * 0
        flat = tail == 0
        sgn = (x0 >= 0).where(1.0, -1.0)
        alpha = flat.where(x0, -sgn * (x0 * x0 + flat.where(1.0, tail)).sqrt())
        v = x - alpha * e0
        vv = (v * v).sum(-1, keepdim=True)
        beta = flat.where(0.0, 2.0 / flat.where(1.0, vv))  # (..., 1)
        w = (v.unsqueeze(-1) * T).sum(-2)  # v^T T: (..., n)
        HT = T - (beta * v).unsqueeze(-1) * w.unsqueeze(-2)
        row = first_col.where(alpha.unsqueeze(-1), HT[..., :1, :])  # (..., 1, n): R's row, alpha exactly
        R = _materialize(_roll_cols(R[..., 1:, :].cat(row, dim=-2)))
        T = _materialize(_roll_rows(_roll_cols(edge.where(0.0, HT))))
        if Q is not None:
            Qv = (Q * v.unsqueeze(-2)).sum(-1)  # (..., m)
            Q = _materialize(_roll_cols(Q - (beta * Qv).unsqueeze(-1) * v.unsqueeze(-2)))
    R = _unroll_cols(R, K)  # K left rolls of n columns
    return (_unroll_cols(Q, K) if Q is not None else None), R


def qr(A: Tensor, mode: str = "reduced") -> QRResult:
    """A = Q R with Q orthonormal and R upper triangular (Householder, LAPACK's signs: as torch's). mode 'reduced':
    Q (m, K), R (K, n) with K = min(m, n); 'complete': Q (m, m), R (m, n); 'r': R only (Q is an empty tensor)."""
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(
            f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), 'r', or 'complete'"
        )
    A = _check_matrix("linalg.qr", A)
    m, n = A.shape[-2:]
    K = min(m, n)
    Q, R = _householder_qr(A, want_q=mode != "r")
    if mode == "complete":
        R = R.pad(((0, 0),) * (A.ndim - 2) + ((0, m - K), (0, 0))) if m > K else R
        return QRResult(Q, R)
    if mode == "r":
        return QRResult(A[..., :0, :0].reshape(0), R)
    assert Q is not None
    return QRResult(Q[..., :, :K], R)


# ---------------------------------------------------------------- Jacobi rotations: eigh, svd


def _round_robin(N: int) -> list[int]:
    """The slot each slot reads from between rounds of a round-robin tournament on N (even) players paired as
    (2i, 2i+1): slot 0 stays, the others move one place along a circle. After N - 1 rounds every pair has met once
    and the order is back to the start."""
    h = N // 2
    circle = [2 * i for i in range(1, h)] + [2 * i + 1 for i in reversed(range(h))]
    src = list(range(N))
    for j in range(len(circle)):
        src[circle[(j + 1) % len(circle)]] = circle[j]
    return src


def _rotation_matrix(alpha: Tensor, beta: Tensor, gamma: Tensor, perm: Tensor) -> Tensor:
    """G = J Pi (..., N, N): J rotates each pair (2i, 2i+1) by the Jacobi angle that zeroes gamma (the pair's
    off-diagonal entry, or the inner product of two columns), with alpha, beta the diagonal entries (squared column
    norms); Pi is the fixed round-robin permutation. All of (..., N/2)."""
    zero = gamma == 0
    zeta = (beta - alpha) / (2 * zero.where(1.0, gamma))
    t = (zeta >= 0).where(1.0, -1.0) / (zeta.abs() + (1 + zeta * zeta).sqrt())
    t = zero.where(0.0, t)
    c = (1 + t * t).rsqrt()
    s = c * t
    Tensor = _tensor()
    blocks = Tensor.stack(Tensor.stack(c, s, dim=-1), Tensor.stack(-s, c, dim=-1), dim=-2)  # (..., h, 2, 2)
    h = blocks.shape[-3]
    eye_h = _eye(h, blocks).reshape(h, 1, h, 1)
    J = (blocks.unsqueeze(-2) * eye_h).reshape(*blocks.shape[:-3], 2 * h, 2 * h)  # block diagonal
    return J @ perm


def _perm_matrix(N: int, like: Tensor) -> Tensor:
    """Pi[old, new] = 1 where the round robin moves slot old to slot new."""
    src = _tensor()(_round_robin(N), dtype=dtypes.int64, device=like.device)
    return (src.reshape(1, N) == _arange(N, like.device).reshape(N, 1)).cast(like.dtype)


def _pairs(x: Tensor) -> tuple[Tensor, Tensor]:
    """(..., N) -> the even and the odd entries, each (..., N/2)."""
    y = x.reshape(*x.shape[:-1], x.shape[-1] // 2, 2)
    return y[..., 0], y[..., 1]


def _converged(ratio: Tensor, n: int) -> bool:
    """Read back (one scalar, a sync point) whether ratio <= eps * n everywhere in the batch."""
    if ratio.numel() == 0:
        return True
    return bool((ratio <= _eps(ratio.dtype) * max(n, 1)).all().item())


def _jacobi_eigh(S: Tensor) -> tuple[Tensor, Tensor]:
    """(diagonal, V) with S = V diag V^T for symmetric S (..., n, n): parallel two-sided Jacobi. Odd n gets a zero
    row and column (an isolated dummy index no rotation touches), dropped at the end. Sweeps until the
    off-diagonal mass is below eps * n * |S|_F."""
    n = S.shape[-1]
    N = n + n % 2
    A = S.pad(((0, 0),) * (S.ndim - 2) + ((0, N - n), (0, N - n))) if N != n else S
    V = _eye(N, S).expand(A.shape)
    perm = _perm_matrix(N, S)
    ar = _arange(N, S.device)
    off_diag = (ar.reshape(N, 1) != ar.reshape(1, N)).cast(S.dtype)
    scale = (S * S).sum((-2, -1)).sqrt().maximum(_tiny(S.dtype))
    h = N // 2
    for _ in range(MAX_SWEEPS if n > 1 else 0):
        for _ in range(N - 1):
            app, aqq = _pairs(A.diagonal(dim1=-2, dim2=-1))
            apq = A.reshape(*A.shape[:-2], h, 2, h, 2).diagonal(dim1=-4, dim2=-2)[..., 0, 1, :]  # A[2i, 2i+1]
            G = _rotation_matrix(app, aqq, apq, perm)
            A = G.mT @ A @ G
            V = V @ G
        A, V = A.contiguous(), V.contiguous()
        A.realize(V)
        if _converged(((A * off_diag) ** 2).sum((-2, -1)).sqrt() / scale, n):
            break
    return A.diagonal(dim1=-2, dim2=-1)[..., :n], V[..., :n, :n]


def _sort_by(values: Tensor, descending: bool, *vectors: Tensor) -> tuple[Tensor, ...]:
    """values (..., n) sorted, and the columns of each of vectors (..., m, n) in the same order: by a one-hot
    permutation matrix, so gradients flow as through a matmul."""
    n = values.shape[-1]
    if n <= 1:
        return (values, *vectors)
    idx = values.detach().sort(-1, descending=descending)[1]
    P = _onehot(idx, n, values.dtype).mT  # P[i, j] = 1 where idx[j] = i
    return ((values.unsqueeze(-1) * P).sum(-2), *(v @ P for v in vectors))


def eigh(A: Tensor, UPLO: str = "L") -> EighResult:
    """(eigenvalues ascending, orthonormal eigenvectors as columns) of the symmetric matrix in A's lower (UPLO='U':
    upper) triangle, by Jacobi rotations. Eigenvectors are unique only up to sign (and within repeated
    eigenvalues): compare A V = V diag(w), not V itself."""
    A = _check_matrix("linalg.eigh", A, square=True)
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"linalg.eigh: Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    w, V = _jacobi_eigh(_symmetric(A, upper=UPLO == "U"))
    w, V = _sort_by(w, False, V)
    return EighResult(w, V)


def eigvalsh(A: Tensor, UPLO: str = "L") -> Tensor:
    """The eigenvalues of eigh, ascending."""
    A = _check_matrix("linalg.eigvalsh", A, square=True)
    return eigh(A, UPLO).eigenvalues


def _jacobi_svd(A: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """(W = U diag(S), S, V) for a tall A (..., m, n), m >= n, unsorted: one-sided Jacobi rotates pairs of columns
    of W (starting at A) until they are orthogonal (V accumulates the rotations). Odd n gets a zero column."""
    m, n = A.shape[-2:]
    N = n + n % 2
    W = A.pad(((0, 0),) * (A.ndim - 2) + ((0, 0), (0, N - n))) if N != n else A
    V = _eye(N, A).expand(*A.shape[:-2], N, N)
    perm = _perm_matrix(N, A)
    ar = _arange(N, A.device)
    off_diag = (ar.reshape(N, 1) != ar.reshape(1, N)).cast(A.dtype)
    for _ in range(MAX_SWEEPS if n > 1 else 0):
        for _ in range(N - 1):
            alpha, beta = _pairs((W * W).sum(-2))  # squared norms of the columns 2i and 2i+1
            even, odd = _pairs(W)
            G = _rotation_matrix(alpha, beta, (even * odd).sum(-2), perm)
            W, V = W @ G, V @ G
        W, V = W.contiguous(), V.contiguous()
        W.realize(V)
        gram = W.mT @ W
        d = gram.diagonal(dim1=-2, dim2=-1).sqrt()
        denom = d.unsqueeze(-1) * d.unsqueeze(-2)
        cosines = (gram * off_diag).abs() / (denom == 0).where(1.0, denom)  # of the angles between columns
        if _converged(cosines.max((-2, -1)), m):
            break
    W, V = W[..., :, :n], V[..., :n, :n]
    return W, (W * W).sum(-2).sqrt(), V


def _svd_parts(A: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """(W, S, V) of a tall A sorted by S descending: A = W V^T with W = U diag(S)."""
    W, S, V = _jacobi_svd(A)
    S, W, V = _sort_by(S, True, W, V)
    return W, S, V


def _divide_cols(X: Tensor, S: Tensor) -> Tensor:
    """X's columns divided by S (..., n); a zero S gives a zero column."""
    s = S.unsqueeze(-2)
    zero = s == 0
    return zero.where(0.0, X / zero.where(1.0, s))


def _orthonormal_completion(U: Tensor, S: Tensor, full: bool) -> Tensor:
    """U's columns for the singular values above the rank tolerance, the others (and, full=True, the m - K extra
    ones) completed to an orthonormal basis by a Householder QR of U with those columns zeroed. QR keeps an
    orthonormal column up to sign; the sign of R's diagonal restores it."""
    m, K = U.shape[-2:]
    tol = S[..., :1] * (_eps(S.dtype) * max(m, K))
    keep = (S > tol).unsqueeze(-2)
    Q, R = _householder_qr(keep.where(U, 0.0))
    assert Q is not None
    d = R.diagonal(dim1=-2, dim2=-1)  # (..., K)
    signs = (d >= 0).where(1.0, -1.0)
    if m > K:
        signs = signs.pad(((0, 0),) * (signs.ndim - 1) + ((0, m - K),), value=1.0)
    Q = Q * signs.unsqueeze(-2)
    return Q if full else Q[..., :, :K]


def svd(A: Tensor, full_matrices: bool = True, *, driver: str | None = None) -> SVDResult:
    """A = U diag(S) Vh with S descending (>= 0), U and Vh orthonormal, by one-sided Jacobi. full_matrices: U is
    (m, m) and Vh (n, n), else (m, K) and (K, n) with K = min(m, n). Singular vectors are unique only up to sign
    (and within repeated values): compare U diag(S) Vh with A, not U itself. driver (torch's CUDA-only choice) is
    ignored."""
    A = _check_matrix("linalg.svd", A)
    m, n = A.shape[-2:]
    K = min(m, n)
    if K == 0:
        batch = A.shape[:-2]
        U = _eye(m, A).expand(*batch, m, m) if full_matrices else A[..., :, :0]
        Vh = _eye(n, A).expand(*batch, n, n) if full_matrices else A[..., :0, :]
        return SVDResult(U.contiguous(), A.sum((-2, -1))[..., None][..., :0], Vh.contiguous())
    tall = m >= n
    W, S, V = _svd_parts(A if tall else A.mT)  # X = W V^T for the tall one of A, A^T
    U = _orthonormal_completion(_divide_cols(W, S), S, full_matrices)
    return SVDResult(U, S, V.mT) if tall else SVDResult(V, S, U.mT)  # A = X^T = V S U^T when wide


def svdvals(A: Tensor, *, driver: str | None = None) -> Tensor:
    """The singular values, descending."""
    A = _check_matrix("linalg.svdvals", A)
    if min(A.shape[-2:]) == 0:
        return A.sum((-2, -1))[..., None][..., :0]
    return _svd_parts(A if A.shape[-2] >= A.shape[-1] else A.mT)[1]


# ---------------------------------------------------------------- from the SVD: pinv, matrix_rank, lstsq, cond


def _rank_tol(S: Tensor, m: int, n: int, atol: Any, rtol: Any) -> Tensor:
    """torch's tolerance max(atol, rtol * S_max), (..., 1): rtol defaults to eps * max(m, n) when atol is not given
    (or is <= 0), else to 0."""
    Tensor = _tensor()
    given_atol = atol is not None and not (isinstance(atol, (int, float)) and atol <= 0)
    if rtol is None:
        rtol = 0.0 if given_atol else _eps(S.dtype) * max(m, n)
    smax = S[..., :1] if S.shape[-1] else S.sum(-1, keepdim=True)
    tol = smax * (rtol.unsqueeze(-1) if isinstance(rtol, Tensor) else rtol)
    if atol is not None:
        tol = tol.maximum(atol.unsqueeze(-1) if isinstance(atol, Tensor) else atol)
    return tol


def pinv(A: Tensor, *, atol: Any = None, rtol: Any = None, hermitian: bool = False) -> Tensor:
    """The Moore-Penrose pseudo-inverse V diag(1/S) U^T, dropping singular values <= max(atol, rtol * S_max)
    (torch's defaults); hermitian=True uses eigh of A's lower triangle instead."""
    A = _check_tensor("linalg.pinv", A)
    if A.ndim < 2 or not A.dtype.is_float:
        raise RuntimeError(
            f"linalg.pinv({_dtype_name(A.dtype)}{{{list(A.shape)}}}): expected a tensor with 2 or more dimensions of "
            "float, double, cfloat or cdouble types"
        )
    _check_float("linalg.pinv", A)
    m, n = A.shape[-2:]
    if min(m, n) == 0:
        return A.mT.contiguous()
    if hermitian:
        A = _check_matrix("linalg.pinv", A, square=True)
        w, V = eigh(A)
        mag = w.abs()
        tol = _rank_tol(mag.max(-1, keepdim=True), m, n, atol, rtol)
        keep = mag > tol
        inv_w = keep.where(1.0 / keep.where(w, 1.0), 0.0)
        return (V * inv_w.unsqueeze(-2)) @ V.mT
    tall = m >= n
    W, S, V = _svd_parts(A if tall else A.mT)
    return _pinv_from_svd(W, S, V, _rank_tol(S, m, n, atol, rtol), tall)


def _pinv_from_svd(W: Tensor, S: Tensor, V: Tensor, tol: Tensor, tall: bool) -> Tensor:
    """pinv(X) = V S^-1 U^T = V S^-2 W^T for X = W V^T (W = U S), singular values <= tol dropped; transposed back
    when X was A^T."""
    keep = S > tol
    inv_s2 = keep.where(1.0 / keep.where(S * S, 1.0), 0.0)
    P = (V * inv_s2.unsqueeze(-2)) @ W.mT
    return P if tall else P.mT


def matrix_rank(A: Tensor, *, atol: Any = None, rtol: Any = None, hermitian: bool = False, tol: Any = None) -> Tensor:
    """The number of singular values (|eigenvalues| when hermitian) above max(atol, rtol * S_max), int64."""
    A = _check_matrix("linalg.matrix_rank", A)
    if tol is not None:
        atol, rtol = tol, 0.0
    m, n = A.shape[-2:]
    S = eigvalsh(A).abs() if hermitian else svdvals(A)
    if hermitian and S.shape[-1]:
        S = S.sort(-1, descending=True)[0]
    return (S > _rank_tol(S, m, n, atol, rtol)).sum(-1).cast(dtypes.int64)


def lstsq(A: Tensor, B: Tensor, rcond: float | None = None, *, driver: str | None = None) -> LstsqResult:
    """The least-squares (minimum-norm) solution of A X = B by the pseudo-inverse, with torch's extra outputs per
    driver (default 'gelsy'): residuals (sum of squared residuals per column, when m > n) for gels/gelsd/gelss,
    rank for all but gels, singular values for gelsd/gelss; the others are empty tensors. Unlike torch, residuals
    are given even when A is rank-deficient (that check would read values back)."""
    drivers = ("gels", "gelsy", "gelsd", "gelss")
    driver = "gelsy" if driver is None else driver
    if driver not in drivers:
        raise RuntimeError(f"torch.linalg.lstsq: parameter `driver` should be one of {drivers}")
    A = _check_matrix("torch.linalg.lstsq", A)
    B = _check_tensor("torch.linalg.lstsq", B, "B")
    _check_same_dtype("torch.linalg.lstsq", A, B)
    vector = B.ndim == A.ndim - 1
    Bm = B.unsqueeze(-1) if vector else B
    if Bm.ndim < 2 or Bm.shape[-2] != A.shape[-2]:
        raise RuntimeError("torch.linalg.lstsq: input.size(-2) should match other.size(-2)")
    m, n = A.shape[-2:]
    batch = _batch_shape("torch.linalg.lstsq", A.shape[:-2], Bm.shape[:-2])
    A, Bm = A.expand(*batch, m, n), Bm.expand(*batch, *Bm.shape[-2:])
    rtol = rcond if rcond is not None and rcond > 0 else _eps(A.dtype) * max(m, n)
    empty = A.flatten()[:0]
    if min(m, n) == 0:
        X = Bm.sum(-2, keepdim=True).expand(*batch, n, Bm.shape[-1]) * 0
        S = rank = None
    else:
        tall = m >= n
        W, S, V = _svd_parts(A if tall else A.mT)
        tol = S[..., :1] * rtol
        X = _pinv_from_svd(W, S, V, tol, tall) @ Bm
        rank = (S > tol).sum(-1).cast(dtypes.int64)
    residuals = ((A @ X - Bm) ** 2).sum(-2) if driver != "gelsy" and m > n else empty
    return LstsqResult(
        X.squeeze(-1) if vector else X,
        residuals,
        rank if rank is not None and driver != "gels" else empty.cast(dtypes.int64),
        S if S is not None and driver in ("gelsd", "gelss") else empty,
    )


def cond(A: Tensor, p: Any = None) -> Tensor:
    """The condition number in norm p: S_max / S_min for p None/2 (-2: the inverse), else |A|_p |A^-1|_p."""
    A = _check_matrix("linalg.cond", A)
    if p in (None, 2, -2):
        S = svdvals(A)
        r = S[..., :1] / S[..., -1:]
        return (r if p != -2 else 1.0 / r).squeeze(-1)
    A = _check_matrix("linalg.cond", A, square=True)
    return matrix_norm(A, p) * matrix_norm(inv(A), p)


# ---------------------------------------------------------------- norms


def vector_norm(x: Tensor, ord: Any = 2, dim: Dims = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """The ord-norm over dim (None: all elements): sum(|x|^ord)^(1/ord); inf/-inf the max/min of |x|, 0 the count
    of nonzeros."""
    x = _check_tensor("linalg.vector_norm", x, "x")
    _check_float("linalg.vector_norm", x, low_precision=True)
    if isinstance(ord, str) or isinstance(ord, bool):
        raise RuntimeError(f"linalg.vector_norm: ord must be a number, got {ord!r}")
    if dim is None and keepdim:
        return vector_norm(x.flatten(), ord, 0, True, dtype=dtype).reshape((1,) * x.ndim)
    if dim is None:
        x, dim = x.flatten(), 0
    return x.norm(ord, dim, keepdim, dtype)


def matrix_norm(
    A: Tensor, ord: Any = "fro", dim: tuple[int, int] = (-2, -1), keepdim: bool = False, *, dtype: Any = None
) -> Tensor:
    """The matrix norm over the two dims: 'fro', 'nuc' (sum of singular values), inf / -inf (max / min row sum of
    |A|), 1 / -1 (max / min column sum), 2 / -2 (largest / smallest singular value)."""
    A = _check_tensor("linalg.matrix_norm", A)
    if A.ndim < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
    _check_float("linalg.matrix_norm", A, low_precision=True)
    if dtype is not None:
        A = A.cast(to_dtype(dtype))
    if not isinstance(dim, (tuple, list)) or len(dim) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {dim}")
    d0, d1 = (d % A.ndim if -A.ndim <= d < A.ndim else None for d in dim)
    if d0 is None or d1 is None or d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different and in range. Got {tuple(dim)}")
    if ord == "fro":
        return vector_norm(A, 2, (d0, d1), keepdim)
    if ord not in ("nuc", math.inf, -math.inf, 1, -1, 2, -2):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    if ord in ("nuc", 2, -2):
        rest = [i for i in range(A.ndim) if i not in (d0, d1)]
        S = svdvals(A.permute(*rest, d0, d1))
        out = S.sum(-1) if ord == "nuc" else S[..., 0] if ord == 2 else S[..., -1]
        if keepdim:
            for d in sorted((d0, d1)):
                out = out.unsqueeze(d)
        return out
    a = A.abs()
    inner, outer = (d1, d0) if ord in (math.inf, -math.inf) else (d0, d1)  # row sums for inf, column sums for 1
    sums = a.sum(inner, keepdim=True)
    out = sums.max(outer, keepdim=True) if ord > 0 else sums.min(outer, keepdim=True)
    return out if keepdim else out.squeeze(max(d0, d1)).squeeze(min(d0, d1))


def norm(A: Tensor, ord: Any = None, dim: Dims = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """torch.linalg.norm: a vector norm when dim is an int (or ord and dim are None: of all elements), a matrix norm
    when dim is a 2-tuple (or ord is given and A is 2-D)."""
    A = _check_tensor("linalg.norm", A)
    if dim is not None:
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        if len(dims) == 1:
            return vector_norm(A, 2 if ord is None else ord, dims, keepdim, dtype=dtype)
        if len(dims) == 2:
            return matrix_norm(A, "fro" if ord is None else ord, dims, keepdim, dtype=dtype)
        raise RuntimeError(f"linalg.norm: If dim is specified, it must be of length 1 or 2. Got {list(dims)}")
    if ord is None:
        return vector_norm(A, 2, None, keepdim, dtype=dtype)
    if A.ndim == 1:
        return vector_norm(A, ord, None, keepdim, dtype=dtype)
    if A.ndim == 2:
        return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype)
    raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got {A.ndim}D.")


# ---------------------------------------------------------------- products and small compositions


def matrix_power(A: Tensor, n: int) -> Tensor:
    """A^n by repeated squaring; n = 0 the identity, n < 0 powers of inv(A)."""
    A = _check_tensor("linalg.matrix_power", A)
    if A.ndim < 2:
        raise RuntimeError("linalg.matrix_power: The input tensor A must have at least 2 dimensions.")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(
            f"linalg.matrix_power: A must be batches of square matrices, but they are {A.shape[-2]} by "
            f"{A.shape[-1]} matrices"
        )
    if not isinstance(n, int) or isinstance(n, bool):
        raise TypeError(f"linalg.matrix_power(): argument 'n' must be int, not {type(n).__name__}")
    if n == 0:
        return _eye(A.shape[-1], A).expand(A.shape).contiguous()
    if n < 0:
        A, n = inv(_check_matrix("linalg.matrix_power", A, square=True)), -n
    result, base = None, A
    while n:
        if n & 1:
            result = base if result is None else result @ base
        n >>= 1
        if n:
            base = base @ base
    assert result is not None
    return result


def multi_dot(tensors: Sequence[Tensor]) -> Tensor:
    """The product of a chain of matrices in the cheapest order (dynamic programming on the shapes); the first may be
    a 1-D row vector and the last a 1-D column vector."""
    ts = list(tensors)
    if len(ts) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(ts)}")
    for i, t in enumerate(ts):
        _check_tensor("multi_dot", t, f"tensors[{i}]")
        allowed = (1, 2) if i in (0, len(ts) - 1) else (2,)
        if t.ndim not in allowed:
            where = "first" if i == 0 else "last" if i == len(ts) - 1 else None
            raise RuntimeError(
                f"multi_dot(): the {where} tensor must be 1D or 2D but got {t.ndim}D"
                if where
                else f"multi_dot(): tensor {i} must be 2D but got {t.ndim}D"
            )
        if t.dtype is not ts[0].dtype:
            raise RuntimeError(
                f"multi_dot(): all tensors must have be the same dtype but tensor 0 is {_dtype_name(ts[0].dtype)} "
                f"and tensor {i} is {_dtype_name(t.dtype)}"
            )
    first_vec, last_vec = ts[0].ndim == 1, ts[-1].ndim == 1
    mats = [ts[0].unsqueeze(0) if first_vec else ts[0]] + ts[1:-1] + [ts[-1].unsqueeze(-1) if last_vec else ts[-1]]
    for i in range(len(mats) - 1):
        if mats[i].shape[1] != mats[i + 1].shape[0]:
            raise RuntimeError(
                f"multi_dot(): tensors {i} and {i + 1} with shapes {list(ts[i].shape)} and {list(ts[i + 1].shape)} "
                "cannot be multiplied"
            )
    dims = [mats[0].shape[0]] + [t.shape[1] for t in mats]
    k = len(mats)
    cost = [[0] * k for _ in range(k)]
    split = [[0] * k for _ in range(k)]
    for length in range(1, k):
        for i in range(k - length):
            j = i + length
            options = [(cost[i][s] + cost[s + 1][j] + dims[i] * dims[s + 1] * dims[j + 1], s) for s in range(i, j)]
            cost[i][j], split[i][j] = min(options)

    def product(i: int, j: int) -> Tensor:
        return mats[i] if i == j else product(i, split[i][j]) @ product(split[i][j] + 1, j)

    out = product(0, k - 1)
    if first_vec:
        out = out.squeeze(0)
    if last_vec:
        out = out.squeeze(-1)
    return out


def chain_matmul(*matrices: Tensor) -> Tensor:
    """torch.chain_matmul: multi_dot of 2-D matrices (one matrix is returned as is)."""
    return matrices[0] if len(matrices) == 1 else multi_dot(matrices)


def matmul(input: Tensor, other: Tensor) -> Tensor:
    return _check_tensor("linalg.matmul", input, "input").matmul(other)


def vecdot(x: Tensor, y: Tensor, *, dim: int = -1) -> Tensor:
    """The dot product of x and y (broadcast) along dim."""
    x, y = _check_tensor("linalg.vecdot", x, "x"), _check_tensor("linalg.vecdot", y, "y")
    return (x * y).sum(dim)


def cross(input: Tensor, other: Tensor, *, dim: int = -1) -> Tensor:
    """The cross product of 3-vectors along dim (default -1, unlike torch.cross); other dims broadcast (both of one
    ndim, as torch)."""
    a, b = _check_tensor("linalg.cross", input, "input"), _check_tensor("linalg.cross", other, "other")
    if a.ndim != b.ndim:
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    if a.ndim and -a.ndim <= dim < a.ndim and (a.shape[dim] != 3 or b.shape[dim] != 3):
        raise RuntimeError(
            f"linalg.cross: inputs dimension {dim} must have length 3. Got {a.shape[dim]} and {b.shape[dim]}"
        )
    return a.cross(b, dim=dim)


def diagonal(A: Tensor, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """The diagonal of the last two dims (torch.linalg.diagonal's defaults)."""
    return _check_tensor("linalg.diagonal", A).diagonal(offset, dim1, dim2)


def vander(x: Tensor, *, N: int | None = None) -> Tensor:
    """The Vandermonde matrix of the last dim: columns x^0, x^1, ..., x^(N-1) (N defaults to len(x))."""
    x = _check_tensor("linalg.vander", x, "x")
    if x.ndim == 0:
        raise RuntimeError("linalg.vander: x must have at least one dimension")
    N = x.shape[-1] if N is None else N
    if N < 0:
        raise RuntimeError(f"linalg.vander: N must be non-negative, got {N}")
    if N == 0:
        return x.unsqueeze(-1)[..., :0]
    cols = [x.ones_like().unsqueeze(-1)]
    for _ in range(N - 1):
        cols.append(cols[-1] * x.unsqueeze(-1))
    return _tensor().cat(*cols, dim=-1)


def solve_triangular(A: Tensor, B: Tensor, *, upper: bool, left: bool = True, unitriangular: bool = False) -> Tensor:
    """X with A X = B (left=False: X A = B) for triangular A, reading only its upper (lower) triangle and, when
    unitriangular, taking its diagonal as ones."""
    A = _check_matrix("linalg.solve_triangular", A, square=True)
    B = _check_matrix("linalg.solve_triangular", B, name="B")
    tri = A.triu(1) if upper else A.tril(-1)
    if unitriangular:
        tri = tri + _eye(A.shape[-1], A)
    else:
        tri = tri + A * _eye(A.shape[-1], A)
    return solve(tri, B, left=left)


def tensorinv(A: Tensor, ind: int = 2) -> Tensor:
    """The inverse of A read as a (prod(shape[:ind]), prod(shape[ind:])) matrix, shaped shape[ind:] + shape[:ind]."""
    A = _check_tensor("linalg.tensorinv", A)
    if ind <= 0:
        raise RuntimeError(f"linalg.tensorinv: Expected a strictly positive integer for 'ind', but got {ind}")
    rows, cols = math.prod(A.shape[:ind]), math.prod(A.shape[ind:])
    if rows != cols:
        raise RuntimeError(
            f"linalg.tensorinv: Expected self to satisfy the requirement prod(self.shape[ind:]) == "
            f"prod(self.shape[:ind]), but got {cols} != {rows}"
        )
    return inv(A.reshape(rows, cols)).reshape(*A.shape[ind:], *A.shape[:ind])


def tensorsolve(A: Tensor, B: Tensor, dims: Sequence[int] | None = None) -> Tensor:
    """X with tensordot(A, X, X.ndim) = B: A read as a (B.numel(), rest) matrix."""
    A, B = _check_tensor("linalg.tensorsolve", A), _check_tensor("linalg.tensorsolve", B, "B")
    if dims is not None:
        moved = [d % A.ndim for d in dims]
        A = A.permute(*[i for i in range(A.ndim) if i not in moved], *moved)
    x_shape = A.shape[B.ndim :]
    rows, cols = math.prod(B.shape), math.prod(x_shape)
    if rows != cols:
        raise RuntimeError(
            f"linalg.tensorsolve: Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
            f"prod(self.shape[:other.ndim]), but got {cols} != {rows}"
        )
    return solve(A.reshape(rows, cols), B.reshape(rows)).reshape(x_shape)


def matrix_exp(A: Tensor) -> Tensor:
    """e^A by scaling and squaring: A / 2^s with s from the largest 1-norm in the batch (read back, a sync point), a
    degree-18 Taylor polynomial in Horner form, then s squarings."""
    A = _check_matrix("linalg.matrix_exp", A, square=True)
    n = A.shape[-1]
    if n == 0 or A.numel() == 0:
        return A.contiguous()
    size = float(matrix_norm(A, 1).max().item())
    s = max(0, math.ceil(math.log2(size)) + 1) if size > 0 and math.isfinite(size) else 0
    X = A * (0.5**s)
    eye = _eye(n, A)
    degree = 18 if A.dtype is dtypes.float64 else 10
    E = eye + X / degree
    for k in range(degree - 1, 0, -1):
        E = eye + (X @ E) / k
    for _ in range(s):
        E = E @ E
    return E


# ---------------------------------------------------------------- torch top-level names and Tensor methods


def inverse(input: Tensor) -> Tensor:
    """torch.inverse: linalg.inv."""
    return inv(input)


def pinverse(input: Tensor, rcond: float = 1e-15) -> Tensor:
    """torch.pinverse: linalg.pinv with rtol=rcond."""
    return pinv(input, rtol=rcond)


def torch_cholesky(input: Tensor, upper: bool = False) -> Tensor:
    """torch.cholesky (deprecated in torch): linalg.cholesky."""
    return cholesky(input, upper=upper)


def torch_qr(input: Tensor, some: bool = True) -> QRResult:
    """torch.qr (deprecated in torch): linalg.qr with mode 'reduced' (some=True) or 'complete'."""
    return qr(input, "reduced" if some else "complete")


def torch_svd(input: Tensor, some: bool = True, compute_uv: bool = True) -> TorchSVDResult:
    """torch.svd (deprecated in torch): (U, S, V) with V = Vh^T; some=False gives full matrices; compute_uv=False
    gives zero U and V."""
    U, S, Vh = svd(input, full_matrices=not some)
    if not compute_uv:
        return TorchSVDResult(U.zeros_like(), S, Vh.mT.zeros_like())
    return TorchSVDResult(U, S, Vh.mT)


# torch's top-level names for unigrad/__init__.py (the functions above, under torch's spelling)
TORCH_NAMES = {
    "det": det,
    "logdet": logdet,
    "slogdet": slogdet,
    "inverse": inverse,
    "cholesky": torch_cholesky,
    "cholesky_solve": cholesky_solve,
    "cholesky_inverse": cholesky_inverse,
    "pinverse": pinverse,
    "matrix_power": matrix_power,
    "matrix_exp": matrix_exp,
    "chain_matmul": chain_matmul,
    "qr": torch_qr,
    "svd": torch_svd,
}


class LinalgMixin:
    """Tensor methods of torch's linear algebra (see the module docstring)."""

    def det(self: Tensor) -> Tensor:  # type: ignore[misc]
        return det(self)

    def logdet(self: Tensor) -> Tensor:  # type: ignore[misc]
        return logdet(self)

    def slogdet(self: Tensor) -> SlogdetResult:  # type: ignore[misc]
        return slogdet(self)

    def inverse(self: Tensor) -> Tensor:  # type: ignore[misc]
        return inv(self)

    def cholesky(self: Tensor, upper: bool = False) -> Tensor:  # type: ignore[misc]
        return cholesky(self, upper=upper)

    def cholesky_solve(self: Tensor, input2: Tensor, upper: bool = False) -> Tensor:  # type: ignore[misc]
        return cholesky_solve(self, input2, upper)

    def cholesky_inverse(self: Tensor, upper: bool = False) -> Tensor:  # type: ignore[misc]
        return cholesky_inverse(self, upper)

    def pinverse(self: Tensor, rcond: float = 1e-15) -> Tensor:  # type: ignore[misc]
        return pinverse(self, rcond)

    def matrix_power(self: Tensor, n: int) -> Tensor:  # type: ignore[misc]
        return matrix_power(self, n)

    def matrix_exp(self: Tensor) -> Tensor:  # type: ignore[misc]
        return matrix_exp(self)

    def qr(self: Tensor, some: bool = True) -> QRResult:  # type: ignore[misc]
        return torch_qr(self, some)

    def svd(self: Tensor, some: bool = True, compute_uv: bool = True) -> TorchSVDResult:  # type: ignore[misc]
        return torch_svd(self, some, compute_uv)
