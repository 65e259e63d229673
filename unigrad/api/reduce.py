"""ReduceMixin: reductions and scans (see unigrad/api/__init__.py). `self` is a Tensor; every method is built
from core Tensor methods (sum/max/min/mean, movement ops, where, comparisons), so results fuse like any graph.

Axes follow PyTorch and tinygrad: `axis` (or the keyword `dim`) is an int, a tuple of ints (reductions) or None
for all; negative axes count from the end; out-of-range axes raise IndexError. Positional arguments follow
tinygrad's order (e.g. `var(axis, keepdim, correction)`); PyTorch's keywords (`dim`, `unbiased`) are accepted.

Scans (cumsum, cumprod, cummax, cummin, logcumsumexp) run along one axis, in place (no permute):
  - up to SCAN_BLOCK elements: a window. Element i reduces x[j] for j <= i under a triangular mask (where, the
    identity elsewhere): O(n^2) work, one fused reduce kernel.
  - longer: a blocked scan. Split the axis into blocks of SCAN_BLOCK, scan inside each block (windows), scan the
    block totals (recursively), and combine each block with the total of the blocks before it: about
    SCAN_BLOCK operations per element, a few kernels (a 2048^2 row cumsum 116 -> 8 ms against blocks of
    sqrt(n) scanned in two levels, whose padded windows cost a // and % per load).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from unigrad.dtype import ConstType, DType, dtypes, to_dtype
from unigrad.flavor import acc_dtype

if TYPE_CHECKING:
    from unigrad.tensor import Tensor

Axis = int | Sequence[int] | None
SCAN_BLOCK = 16  # longest axis scanned with one window, and the block of longer ones
QUANTILE_MODES = ("linear", "lower", "higher", "midpoint", "nearest")


class ValuesIndices(NamedTuple):
    """(values, indices) of a selecting reduction, as torch.return_types (median, kthvalue, mode, ...)."""

    values: Tensor
    indices: Tensor


class MinMax(NamedTuple):
    """(min, max), as torch.return_types.aminmax."""

    min: Tensor
    max: Tensor


# ---------------------------------------------------------------- axis handling


def _pick(axis: Any, dim: Any) -> Any:
    return axis if dim is None else dim


def _norm_dim(op: str, dim: int, ndim: int) -> int:
    lo, hi = (-ndim, ndim - 1) if ndim > 0 else (-1, 0)
    if not isinstance(dim, int) or not lo <= dim <= hi:
        raise IndexError(f"{op}: dimension out of range (expected to be in range of [{lo}, {hi}], but got {dim})")
    return dim + ndim if dim < 0 and ndim > 0 else max(dim, 0)


def _out_shape(x: Tensor, axes: tuple[int, ...], keepdim: bool) -> tuple[int, ...]:
    return tuple(1 if i in axes else s for i, s in enumerate(x.shape) if keepdim or i not in axes)


def _full(x: Tensor, shape: tuple[int, ...], value: Any, dtype: DType) -> Tensor:
    from unigrad.tensor import Tensor

    return Tensor.full(shape, value, dtype=dtype, device=x.device)


def _compute(x: Tensor) -> tuple[Tensor, DType]:
    """(x in the dtype to compute a float result in, the result dtype): ints give the default float, half and
    bfloat16 compute in float32 and round back (as PyTorch accumulates them)."""
    if not x.dtype.is_float:
        return x.cast(dtypes.default_float), dtypes.default_float
    if x.dtype.itemsize < 4:
        return x.cast(dtypes.float32), x.dtype
    return x, x.dtype


def _lowest(dt: DType) -> Any:
    return -math.inf if dt.is_float else dt.min


def _flip(x: Tensor) -> Tensor:
    """An order-reversing involution: -x for floats (nan stays nan), ~x for ints (no overflow), not x for bools."""
    return -x if x.dtype.is_float else ~x


# ---------------------------------------------------------------- scans


def _window_scan(x: Tensor, ax: int, reduce: Callable[[Tensor, int], Tensor], identity: Any) -> Tensor:
    """Inclusive scan along axis `ax` by a triangular mask: out[i] = reduce of x[j] over j <= i, the others the
    identity (a where, not a product: 0 * inf would be nan). O(n^2) work in one fused reduce kernel, whose loads
    are plain views of x (the spec's prefix_sum padding trick indexes them through // and %)."""
    from unigrad.tensor import Tensor

    n = x.shape[ax]
    i = Tensor.arange(n, dtype=dtypes.int32, device=x.device)
    tri = (i.reshape(n, 1) >= i.reshape(1, n)).reshape((1,) * ax + (n, n) + (1,) * (x.ndim - ax - 1))  # [i, j]
    return reduce(tri.where(x.unsqueeze(ax), identity), ax + 1)


def _scan_axis(
    x: Tensor,
    ax: int,
    reduce: Callable[[Tensor, int], Tensor],
    combine: Callable[[Tensor, Tensor], Tensor],
    identity: Any,
) -> Tensor:
    """Inclusive scan along axis `ax`: one window up to SCAN_BLOCK elements, else blocks of SCAN_BLOCK scanned by
    windows, the block totals scanned (recursively), and each block combined with the total before it."""
    n = x.shape[ax]
    if n <= SCAN_BLOCK:
        return _window_scan(x, ax, reduce, identity)
    b = SCAN_BLOCK
    nb = -(-n // b)
    lead, rest = x.shape[:ax], x.shape[ax + 1 :]
    at = lambda lo_hi: (None,) * ax + (lo_hi,) + (None,) * len(rest)  # noqa: E731 - bounds on axis ax only
    if nb * b != n:
        x = x.pad(((0, 0),) * ax + ((0, nb * b - n),) + ((0, 0),) * len(rest), value=identity)
    inner = _window_scan(x.reshape(*lead, nb, b, *rest), ax + 1, reduce, identity)  # (..., nb, b, rest...)
    totals = inner.shrink((None,) * (ax + 1) + ((b - 1, b),) + (None,) * len(rest)).reshape(*lead, nb, *rest)
    carry = _scan_axis(totals, ax, reduce, combine, identity)  # inclusive scan of the block totals
    before = carry.pad(((0, 0),) * ax + ((1, 0),) + ((0, 0),) * len(rest), value=identity).shrink(at((0, nb)))
    out = combine(inner, before.unsqueeze(ax + 1)).reshape(*lead, nb * b, *rest)
    return out if nb * b == n else out.shrink(at((0, n)))


def _scan(
    x: Tensor,
    axis: int,
    op: str,
    reduce: Callable[[Tensor, int], Tensor],
    combine: Callable[[Tensor, Tensor], Tensor],
    identity: Any,
) -> Tensor:
    """Inclusive scan of x along `axis`, in place (no permute: a scan down the columns of a row-major matrix loads
    whole rows, the optimizer's column reduction)."""
    ax = _norm_dim(op, axis, x.ndim)
    if x.ndim == 0 or x.numel() == 0:
        return x
    return _scan_axis(x, ax, reduce, combine, identity)


def _cummax_values(x: Tensor, axis: int, op: str) -> Tensor:
    return _scan(x, axis, op, lambda t, a: t.max(a), lambda a, b: a.maximum(b), _lowest(x.dtype))


def _cum_indices(x: Tensor, values: Tensor, axis: int, op: str) -> Tensor:
    """For a running max (or min) `values` of x: the last index j <= i with x[j] == values[i] (nan matches nan),
    as PyTorch. v only grows, so that j is the last position where x equals its own running value."""
    from unigrad.tensor import Tensor

    ax = _norm_dim(op, axis, x.ndim)
    hit = x.eq(values)
    if x.dtype.is_float:
        hit = hit | (x.ne(x) & values.ne(values))
    if x.ndim == 0:
        return _full(x, (), 0, dtypes.default_int)
    n = x.shape[ax]
    idx = Tensor.arange(n, dtype=dtypes.default_int, device=x.device).reshape(
        [n if i == ax else 1 for i in range(x.ndim)]
    )
    return _cummax_values(hit.where(idx, 0), ax, op)


def _argmax(x: Tensor, axis: int | None, keepdim: bool, op: str) -> Tensor:
    from unigrad.tensor import Tensor

    if x.dtype is dtypes.bool:
        raise RuntimeError(f"{op}: does not support bool input")
    if axis is None:
        if x.numel() == 0:
            raise IndexError(f"{op}: expected reduction dim to be specified for an empty input of shape {x.shape}")
        out = _argmax(x.reshape(-1), 0, False, op)
        return out.reshape((1,) * x.ndim) if keepdim else out
    ax = _norm_dim(op, axis, x.ndim)
    if x.ndim == 0:
        return _full(x, (), 0, dtypes.default_int)
    n = x.shape[ax]
    if n == 0:
        raise IndexError(f"{op}: expected reduction dim {ax} to have non-zero size, got shape {x.shape}")
    hit = x.eq(x.max(ax, keepdim=True))
    if x.dtype.is_float:
        hit = hit | x.ne(x)  # a nan makes the max nan: then the nans are the hits
    idx = Tensor.arange(n, dtype=dtypes.default_int, device=x.device).reshape(
        [n if i == ax else 1 for i in range(x.ndim)]
    )
    return hit.where(idx, n).min(ax, keepdim)


def _logsumexp_axis(t: Tensor, axis: int) -> Tensor:
    m = t.max(axis, keepdim=True)
    m = (m.abs().eq(math.inf)).where(0.0, m)
    return ((t - m).exp().sum(axis, keepdim=True).log() + m).squeeze(axis)


# ---------------------------------------------------------------- selection helpers (median, quantile, mode, ...)


def _evenly(x: Tensor, v: Tensor) -> Tensor:
    """The 0-d value v (already computed from x, no gradient), with torch's gradient for a reduction that picks one
    value out of all of x (median(), nanmedian()): split evenly among the elements equal to it (nan: among the
    nans). The forward value is v exactly: v + (s - s) for the finite mean s of those elements, s itself when v is
    +-inf or nan (then s is that too)."""
    mask = x.eq(v)
    if x.dtype.is_float:
        mask = mask | (x.ne(x) & v.ne(v))
    s = mask.where(x, 0.0).sum() / mask.sum()
    return v.abs().lt(math.inf).where(v + (s - s.detach()), s)


def _first_nan(x: Tensor, d: int) -> tuple[Tensor, Tensor]:
    """(has a nan, int64 index of the first nan) along dim d, keepdim."""
    nan = x.ne(x)
    return nan.any(d, keepdim=True), _argmax(nan.cast(dtypes.int32), d, True, "median")


def _gather_in_range(x: Tensor, d: int, idx: Tensor) -> Tensor:
    """x.gather(d, idx) for indices in range by construction (ranks, sort orders): no check kernels."""
    from unigrad.api.movement import _gather  # movement imports this module

    return _gather(x, d, idx, check=False)


def _selected(x: Tensor, d: int, idx: Tensor, keepdim: bool) -> ValuesIndices:
    """(x gathered at the int64 keepdim indices idx along d, idx), dim d dropped unless keepdim; the gradient goes
    to the selected elements."""
    values = _gather_in_range(x, d, idx)
    return ValuesIndices(values, idx) if keepdim else ValuesIndices(values.squeeze(d), idx.squeeze(d))


def _median_dim(self: Tensor, dim: int, keepdim: bool, op: str, ignore_nan: bool) -> ValuesIndices:
    """median/nanmedian along dim: the lower median of the stable sort (nan last). median: a row with a nan gives
    nan at its first nan, as torch; nanmedian: the lower median of the non-nan elements (all nan: the first)."""
    if self.dtype is dtypes.bool:
        raise NotImplementedError(f"{op}: not implemented for bool tensors")
    x = self.reshape(1) if self.ndim == 0 else self
    d = _norm_dim(op, dim, x.ndim)
    n = x.shape[d]
    if n == 0:
        raise IndexError(f"{op}(): Expected reduction dim {d} to have non-zero size (shape {self.shape})")
    order = x.detach().sort(d)[1]
    if ignore_nan and x.dtype.is_float:
        count = x.eq(x).sum(d, keepdim=True)
        idx = _gather_in_range(order, d, ((count - 1) // 2).maximum(0))
    else:
        idx = order.narrow(d, (n - 1) // 2, 1)
        if x.dtype.is_float:
            has_nan, first = _first_nan(x, d)
            idx = has_nan.where(first, idx)
    out = _selected(x, d, idx, keepdim or self.ndim == 0)
    if self.ndim == 0:
        return ValuesIndices(out.values.reshape(()), out.indices.reshape(()))
    return out


def _median_all(self: Tensor, op: str, ignore_nan: bool) -> Tensor:
    """median()/nanmedian() of all elements: the lower median (median: nan if any element is nan; nanmedian: of the
    non-nan elements), nan when empty; the gradient is split among the elements equal to it, as torch."""
    if self.dtype is dtypes.bool:
        raise NotImplementedError(f"{op}: not implemented for bool tensors")
    flat = self.reshape(-1)
    n = flat.shape[0]
    if n == 0:
        if not self.dtype.is_float:
            raise RuntimeError(f"{op}: cannot compute the median of an empty {self.dtype} tensor")
        return _full(self, (), math.nan, self.dtype)
    ordered = flat.detach().sort()[0]
    if ignore_nan and flat.dtype.is_float:
        k = ((flat.eq(flat).sum() - 1) // 2).maximum(0)
        v = ordered.take_rows(k.reshape(1)).reshape(())
    else:
        v = ordered[(n - 1) // 2]
        if flat.dtype.is_float:
            v = flat.ne(flat).any().where(math.nan, v)
    return _evenly(flat, v) if flat.dtype.is_float else v


def _quantile(
    self: Tensor, q: Any, dim: int | None, keepdim: bool, interpolation: str, op: str, ignore_nan: bool
) -> Tensor:
    """torch.quantile / nanquantile (torch's algorithm): sort (nan last), rank = q * (n - 1) (n: the non-nan count
    for nanquantile; a row with a nan takes the last rank for quantile, so it gives nan), moved by the
    interpolation mode (floor, ceil, round half to even), then the sorted values at floor and ceil of the rank
    lerped by its fraction (0.5 for midpoint). q's dim (a 1-D q) comes first in the result."""
    from unigrad.tensor import Tensor

    if self.dtype not in (dtypes.float32, dtypes.float64):
        raise RuntimeError(f"{op}() input tensor must be either float or double dtype, got {self.dtype}")
    if self.numel() == 0:
        raise RuntimeError(f"{op}() input tensor must be non-empty, got shape {self.shape}")
    if interpolation not in QUANTILE_MODES:
        raise RuntimeError(
            f"{op}() interpolation must be one of linear, lower, higher, midpoint or nearest, but got {interpolation}"
        )
    if isinstance(q, Tensor):
        if q.ndim > 1:
            raise RuntimeError(f"{op}() q must be a scalar or 1D tensor, got shape {q.shape}")
        if q.dtype != self.dtype:
            raise RuntimeError(f"{op}() q tensor must be same dtype as the input tensor ({self.dtype}), got {q.dtype}")
        if q.numel() and not (float(q.min().item()) >= 0 and float(q.max().item()) <= 1):
            raise RuntimeError(f"{op}() q values must be in the range [0, 1], got {q.tolist()}")
        scalar, qt = q.ndim == 0, q.reshape(-1)
    else:
        if not 0 <= q <= 1:
            raise RuntimeError(f"{op}() q must be in the range [0, 1] but got {q}")
        scalar, qt = True, Tensor([q], dtype=self.dtype, device=self.device)
    if dim is None:
        x, d = self.reshape(-1), 0
    else:
        x = self.reshape(1) if self.ndim == 0 else self
        d = _norm_dim(op, dim, x.ndim)
    xm = x.movedim(d, -1)  # (..., n)
    n = xm.shape[-1]
    ordered = xm.sort(-1)[0]
    if ignore_nan:
        count = xm.eq(xm).sum(-1, keepdim=True)  # (..., 1)
        ranks = qt * (count - 1).cast(x.dtype)
        ranks = (ranks < 0).where(0.0, ranks)  # all nan: rank 0, a nan
    else:
        ranks = xm.ne(xm).any(-1, keepdim=True).where(float(n - 1), qt * (n - 1))  # (..., Q)
    if interpolation == "lower":
        ranks = ranks.floor()
    elif interpolation == "higher":
        ranks = ranks.ceil()
    elif interpolation == "nearest":
        ranks = ranks.round()
    ranks = ranks.expand(*xm.shape[:-1], qt.shape[0])
    below = ranks.cast(dtypes.int64)
    out = _gather_in_range(ordered, -1, below)
    if interpolation in ("linear", "midpoint"):
        weights = (ranks - below.cast(x.dtype)) if interpolation == "linear" else ranks * 0 + 0.5
        out = out.lerp(_gather_in_range(ordered, -1, ranks.ceil().cast(dtypes.int64)), weights)
    if keepdim and self.ndim > 0:  # the reduced dim (every dim for dim=None) kept as size 1
        out = out.reshape(*((1,) * self.ndim if dim is None else xm.shape[:d] + (1,) + xm.shape[d:-1]), -1)
    return out.squeeze(-1) if scalar else out.movedim(-1, 0)


def _check_matrix(op: str, name: str, t: Tensor, ndim: int) -> None:
    if t.ndim != ndim:
        kind = {1: "a vector (1-D)", 2: "a matrix (2-D)", 3: "a 3-D tensor"}[ndim]
        raise RuntimeError(f"{op}: {name} must be {kind}, got a {t.ndim}-D tensor of shape {t.shape}")


def _same_dtype(op: str, *named: tuple[str, Tensor]) -> None:
    if len({t.dtype for _, t in named}) > 1:
        got = ", ".join(f"{n} {t.dtype}" for n, t in named)
        raise RuntimeError(f"{op}: expected all inputs to have the same dtype, got {got}")


def _scaled_sum(op: str, inp: Tensor, prod: Tensor, beta: ConstType, alpha: ConstType) -> Tensor:
    """beta * inp + alpha * prod (torch's addmm family): inp broadcast to prod's shape, ignored when beta is 0
    (its nan and inf too); integer results truncate beta and alpha, bools combine with and/or."""
    from unigrad.tensor import _broadcast_shape

    if _broadcast_shape(op, inp.shape, prod.shape) != prod.shape:
        raise RuntimeError(f"{op}: input of shape {inp.shape} does not broadcast to the product's shape {prod.shape}")
    dt = prod.dtype
    if dt is dtypes.bool:
        term = prod if alpha else prod.logical_and(False)
        return term if not beta else term.logical_or(inp.cast(dt).expand(prod.shape))
    if not dt.is_float:
        beta, alpha = int(beta), int(alpha)
    term = prod if alpha == 1 else prod * alpha
    if beta == 0:
        return term
    x = inp.cast(dt).expand(prod.shape)
    return (x if beta == 1 else x * beta) + term


def _safe_pow(a: Tensor, nz: Tensor, p: float) -> Tensor:
    """a ** p where nz, 1 elsewhere: the branch of a where() over nonzero |x| (0 ** p would give an inf gradient)."""
    return nz.where(a, 1.0).pow(p)


def _arange64(n: int, device: str) -> Tensor:
    from unigrad.tensor import Tensor

    return Tensor.arange(n, dtype=dtypes.int64, device=device)


class ReduceMixin:
    """Mixed into Tensor."""

    __slots__ = ()

    # ---------------------------------------------------------------- boolean reductions
    def any(self: Tensor, axis: Axis = None, keepdim: bool = False, *, dim: Axis = None) -> Tensor:
        """Is any element nonzero (nan counts): bool, or uint8 for uint8 input (as PyTorch); False when empty."""
        axes = self._axes(_pick(axis, dim), "any")
        if any(self.shape[a] == 0 for a in axes):
            out = _full(self, _out_shape(self, axes, keepdim), False, dtypes.bool)
        else:
            out = self.cast(dtypes.bool).max(axes, keepdim)
        return out.cast(dtypes.uint8) if self.dtype is dtypes.uint8 else out

    def all(self: Tensor, axis: Axis = None, keepdim: bool = False, *, dim: Axis = None) -> Tensor:
        """Are all elements nonzero: not any(not x); True when empty."""
        out = self.cast(dtypes.bool).logical_not().any(_pick(axis, dim), keepdim).logical_not()
        return out.cast(dtypes.uint8) if self.dtype is dtypes.uint8 else out

    # ---------------------------------------------------------------- moments
    def var(
        self: Tensor,
        axis: Axis = None,
        keepdim: bool = False,
        correction: float | None = None,
        *,
        dim: Axis = None,
        unbiased: bool | None = None,
    ) -> Tensor:
        """sum((x - mean)^2) / max(0, N - correction), correction 1 by default (unbiased=False means 0); as
        PyTorch, N <= correction gives inf (or nan for 0/0)."""
        if not self.dtype.is_float:
            raise RuntimeError(f"var: std and var only support floating point dtypes, got {self.dtype}")
        axes = self._axes(_pick(axis, dim), "var")
        corr = correction if correction is not None else 1 if unbiased is None else int(unbiased)
        n = math.prod(self.shape[a] for a in axes)
        x, dt = _compute(self)
        d = x - x.mean(axes, keepdim=True)
        return ((d * d).sum(axes, keepdim) / max(0, n - corr)).cast(dt)

    def std(
        self: Tensor,
        axis: Axis = None,
        keepdim: bool = False,
        correction: float | None = None,
        *,
        dim: Axis = None,
        unbiased: bool | None = None,
    ) -> Tensor:
        """sqrt(var(...)), with var's arguments; the gradient is 0 where the variance is 0, as PyTorch."""
        x, dt = _compute(self) if self.dtype.is_float else (self, self.dtype)
        v = x.var(axis, keepdim, correction, dim=dim, unbiased=unbiased)
        zero = v.eq(0)
        return zero.where(0.0, zero.where(1.0, v).sqrt()).cast(dt)

    def var_mean(
        self: Tensor,
        axis: Axis = None,
        keepdim: bool = False,
        correction: float | None = None,
        *,
        dim: Axis = None,
        unbiased: bool | None = None,
    ) -> tuple[Tensor, Tensor]:
        """(var, mean) over the same axes."""
        v = self.var(axis, keepdim, correction, dim=dim, unbiased=unbiased)
        return v, self.mean(self._axes(_pick(axis, dim), "var_mean"), keepdim)

    def std_mean(
        self: Tensor,
        axis: Axis = None,
        keepdim: bool = False,
        correction: float | None = None,
        *,
        dim: Axis = None,
        unbiased: bool | None = None,
    ) -> tuple[Tensor, Tensor]:
        """(std, mean) over the same axes."""
        s = self.std(axis, keepdim, correction, dim=dim, unbiased=unbiased)
        return s, self.mean(self._axes(_pick(axis, dim), "std_mean"), keepdim)

    # ---------------------------------------------------------------- arg reductions
    def argmax(self: Tensor, axis: int | None = None, keepdim: bool = False, *, dim: int | None = None) -> Tensor:
        """Index (dtypes.default_int) of the first maximum along `axis` (of the flattened tensor for None); a nan counts as
        the maximum, as PyTorch. Built as max, a mask of the positions equal to it, and the min index among them."""
        return _argmax(self, _pick(axis, dim), keepdim, "argmax")

    def argmin(self: Tensor, axis: int | None = None, keepdim: bool = False, *, dim: int | None = None) -> Tensor:
        """Index (int64) of the first minimum: argmax of the order-reversed tensor."""
        if self.dtype is dtypes.bool:
            raise RuntimeError("argmin: does not support bool input")
        return _argmax(_flip(self), _pick(axis, dim), keepdim, "argmin")

    # ---------------------------------------------------------------- logsumexp
    def logsumexp(self: Tensor, axis: Axis = None, keepdim: bool = False, *, dim: Axis = None) -> Tensor:
        """log(sum(exp(x))) = m + log(sum(exp(x - m))), m the max (0 where it is +-inf, so all -inf gives -inf
        and any +inf gives inf); -inf over an empty axis. Ints give the default float."""
        axes = self._axes(_pick(axis, dim), "logsumexp")
        x, dt = _compute(self)
        if any(self.shape[a] == 0 for a in axes):
            return _full(self, _out_shape(self, axes, keepdim), -math.inf, dt)
        m = x.max(axes, keepdim=True).detach()  # the shift's gradients cancel: d/dm (m + log sum exp(x - m)) = 0
        m = (m.abs().eq(math.inf)).where(0.0, m)
        out = (x - m).exp().sum(axes, keepdim=True).log() + m
        return (out if keepdim else out.reshape(_out_shape(self, axes, False))).cast(dt)

    # ---------------------------------------------------------------- scans
    def cumsum(self: Tensor, axis: int = 0, dtype: DType | str | None = None, *, dim: int | None = None) -> Tensor:
        """Running sum along `axis`; ints and bools accumulate as sum does (flavor.acc_dtype: int64 in torch)."""
        out_dt = to_dtype(dtype) if dtype is not None else acc_dtype(self.dtype)
        x = self.cast(out_dt)
        acc = dtypes.float32 if out_dt.is_float and out_dt.itemsize < 4 else out_dt
        x = x.cast(acc)
        out = _scan(x, _pick(axis, dim), "cumsum", lambda t, a: t.sum(a), lambda a, b: a + b, 0)
        return out.cast(out_dt)

    def cumprod(self: Tensor, axis: int = 0, dtype: DType | str | None = None, *, dim: int | None = None) -> Tensor:
        """Running product along `axis`; ints and bools as sum (flavor.acc_dtype: int64 in torch)."""
        out_dt = to_dtype(dtype) if dtype is not None else acc_dtype(self.dtype)
        x = self.cast(out_dt)
        acc = dtypes.float32 if out_dt.is_float and out_dt.itemsize < 4 else out_dt
        x = x.cast(acc)
        out = _scan(x, _pick(axis, dim), "cumprod", lambda t, a: t.prod(a), lambda a, b: a * b, 1)
        return out.cast(out_dt)

    def cummax(self: Tensor, axis: int = 0, *, dim: int | None = None) -> ValuesIndices:
        """(running max along `axis`, its indices), as tinygrad and torch.cummax (nan propagates; indices in
        dtypes.default_int, the last position of the max)."""
        axis = _pick(axis, dim)
        values = _cummax_values(self, axis, "cummax")
        return ValuesIndices(values, _cum_indices(self, values, axis, "cummax"))

    def cummin(self: Tensor, axis: int = 0, *, dim: int | None = None) -> ValuesIndices:
        """(running min along `axis`, its indices): cummax of the order-reversed tensor."""
        axis = _pick(axis, dim)
        values = _flip(_cummax_values(_flip(self), axis, "cummin"))
        return ValuesIndices(values, _cum_indices(self, values, axis, "cummin"))

    def logcumsumexp(self: Tensor, axis: int = 0, *, dim: int | None = None) -> Tensor:
        """Running logsumexp along `axis` (each window max-shifted, so no overflow or underflow); floats only."""
        if not self.dtype.is_float:
            raise NotImplementedError(f"logcumsumexp: not implemented for {self.dtype}")
        x, dt = _compute(self)
        out = _scan(x, _pick(axis, dim), "logcumsumexp", _logsumexp_axis, lambda a, b: a.logaddexp(b), -math.inf)
        return out.cast(dt)

    def allclose(
        self: Tensor, other: Tensor | Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False
    ) -> bool:
        """True when every element is isclose (a sync point: reads one bool back), as torch.allclose."""
        return bool(self.isclose(other, rtol, atol, equal_nan).all().item())

    def trace(self: Tensor) -> Tensor:
        """Sum of the main diagonal of a 2-D tensor (torch.trace; ints sum to int64)."""
        if self.ndim != 2:
            raise RuntimeError(f"trace: expected a matrix, got a {self.ndim}-D tensor of shape {self.shape}")
        return self.diagonal().sum()

    # ---------------------------------------------------------------- torch names: reductions
    def amax(self: Tensor, dim: Axis = (), keepdim: bool = False) -> Tensor:
        """Max over dim (an int or tuple; () or None: every dim); nan propagates; the gradient is split evenly among
        tied maxima, as torch.amax."""
        axes = self._axes(None if dim == () else dim, "amax")
        for a in axes:
            if self.shape[a] == 0:
                raise IndexError(f"amax(): Expected reduction dim {a} to have non-zero size (shape {self.shape})")
        return self.max(axes, keepdim)

    def amin(self: Tensor, dim: Axis = (), keepdim: bool = False) -> Tensor:
        """Min over dim (an int or tuple; () or None: every dim); the gradient is split evenly among tied minima."""
        axes = self._axes(None if dim == () else dim, "amin")
        for a in axes:
            if self.shape[a] == 0:
                raise IndexError(f"amin(): Expected reduction dim {a} to have non-zero size (shape {self.shape})")
        return self.min(axes, keepdim)

    def aminmax(self: Tensor, *, dim: int | None = None, keepdim: bool = False) -> MinMax:
        """(min, max) over one dim or all (torch.aminmax, a named pair)."""
        if dim is not None and not isinstance(dim, int):
            raise TypeError(f"aminmax(): argument 'dim' must be int, not {type(dim).__name__}")
        axes = self._axes(dim, "aminmax")
        if any(self.shape[a] == 0 for a in axes) or (dim is None and self.numel() == 0):
            raise RuntimeError(
                f"aminmax(): cannot compute aminmax over an empty dimension as the operation has no identity "
                f"(shape {self.shape})"
            )
        return MinMax(self.min(axes, keepdim), self.max(axes, keepdim))

    def nansum(self: Tensor, dim: Axis = None, keepdim: bool = False, *, dtype: DType | str | None = None) -> Tensor:
        """sum treating nan as 0 (ints sum to int64, as sum)."""
        x = self.ne(self).where(0.0, self) if self.dtype.is_float else self
        return x.sum(dim, keepdim, dtype=dtype)

    def nanmean(self: Tensor, dim: Axis = None, keepdim: bool = False, *, dtype: DType | str | None = None) -> Tensor:
        """Mean of the non-nan elements (nan when there are none); floats only, as torch."""
        if not self.dtype.is_float:
            raise RuntimeError(f"nanmean(): expected input to have floating point dtype but got {self.dtype}")
        return self.nansum(dim, keepdim, dtype=dtype) / self.eq(self).sum(dim, keepdim)

    def count_nonzero(self: Tensor, dim: Axis = None) -> Tensor:
        """int64 count of the nonzero elements (nan counts) over dim (an int, a tuple, or None for all)."""
        return self.cast(dtypes.bool).sum(dim)

    def median(self: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor | ValuesIndices:
        """The lower median (the ((n-1)//2)-th of the sorted elements); nan if any element is nan, as torch. No dim:
        of all elements (nan when empty), the gradient split among the elements equal to it. With dim: (values,
        indices); a row with a nan gives its first nan; among equal medians the index is that of the stable sort's
        ((n-1)//2)-th element (torch leaves the choice among ties unspecified)."""
        if dim is None:
            return _median_all(self, "median", ignore_nan=False)
        return _median_dim(self, dim, keepdim, "median", ignore_nan=False)

    def nanmedian(self: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor | ValuesIndices:
        """median ignoring nan: the lower median of the non-nan elements (nan if all are nan; with dim, the first
        nan's index then)."""
        if dim is None:
            return _median_all(self, "nanmedian", ignore_nan=True)
        return _median_dim(self, dim, keepdim, "nanmedian", ignore_nan=True)

    def kthvalue(self: Tensor, k: int, dim: int = -1, keepdim: bool = False) -> ValuesIndices:
        """(values, indices) of the k-th smallest element (k from 1) along dim, nan counting as the largest; among
        equal values the index is the stable sort's (torch leaves it unspecified)."""
        if self.dtype is dtypes.bool:
            raise NotImplementedError("kthvalue: not implemented for bool tensors")
        x = self.reshape(1) if self.ndim == 0 else self
        d = _norm_dim("kthvalue", dim, x.ndim)
        n = x.shape[d]
        if not 1 <= k <= n:
            raise RuntimeError(f"kthvalue(): selected number k={k} out of range for dimension {d} of size {n}")
        idx = x.detach().sort(d)[1].narrow(d, k - 1, 1)
        out = _selected(x, d, idx, keepdim or self.ndim == 0)
        if self.ndim == 0:
            return ValuesIndices(out.values.reshape(()), out.indices.reshape(()))
        return out

    def mode(self: Tensor, dim: int = -1, keepdim: bool = False) -> ValuesIndices:
        """(values, indices): the most frequent value along dim, the smallest among equally frequent ones, and the
        index of its last occurrence, as torch on CPU. Counts come from comparing every pair: O(n^2) per row. nans
        count as one value (torch's index for a nan mode is not specified)."""
        from unigrad.api.movement import _order_key

        x = self.reshape(1) if self.ndim == 0 else self
        d = _norm_dim("mode", dim, x.ndim)
        n = x.shape[d]
        if n == 0:
            raise IndexError(f"mode(): Expected reduction dim {d} to have non-zero size (shape {self.shape})")
        key = _order_key(x.detach().movedim(d, -1))  # (..., n): equal values (nans, +-0) have equal keys
        counts = key.unsqueeze(-1).eq(key.unsqueeze(-2)).sum(-1)
        frequent = counts.eq(counts.max(-1, keepdim=True))
        smallest = frequent.where(key, key.dtype.max).min(-1, keepdim=True)
        pos = _arange64(n, x.device)
        idx = (frequent & key.eq(smallest)).where(pos, -1).max(-1, keepdim=True).movedim(-1, d)
        out = _selected(x, d, idx, keepdim or self.ndim == 0)
        if self.ndim == 0:
            return ValuesIndices(out.values.reshape(()), out.indices.reshape(()))
        return out

    def quantile(
        self: Tensor, q: float | Tensor, dim: int | None = None, keepdim: bool = False, *, interpolation: str = "linear"
    ) -> Tensor:
        """torch.quantile: the q-th quantiles (q a float or a 1-D tensor of self's dtype, in [0, 1]) over dim (None:
        all elements), interpolation 'linear', 'lower', 'higher', 'midpoint' or 'nearest'; nan if a reduced row
        holds a nan. A 1-D q adds a first dim."""
        return _quantile(self, q, dim, keepdim, interpolation, "quantile", ignore_nan=False)

    def nanquantile(
        self: Tensor, q: float | Tensor, dim: int | None = None, keepdim: bool = False, *, interpolation: str = "linear"
    ) -> Tensor:
        """quantile of the non-nan elements of each row (nan for a row of nans)."""
        return _quantile(self, q, dim, keepdim, interpolation, "nanquantile", ignore_nan=True)

    def norm(
        self: Tensor,
        p: float | str | None = "fro",
        dim: Axis = None,
        keepdim: bool = False,
        dtype: DType | str | None = None,
    ) -> Tensor:
        """torch.norm: the vector p-norm over dim (None: all elements): 'fro' and 2 sqrt(sum x^2), inf / -inf the
        max / min of |x|, 0 the count of nonzeros, else sum(|x|^p)^(1/p). The gradient is 0 where the norm is 0
        (and at zero elements for p < 1), as torch. 'nuc' (singular values) is not supported."""
        if p is None:
            p = "fro"
        if isinstance(p, str):
            if p == "nuc":
                raise NotImplementedError("norm: p='nuc' (the nuclear norm, from singular values) is not supported")
            if p != "fro":
                raise RuntimeError(f"norm: order {p!r} not supported (expected 'fro', 'nuc' or a number)")
            if isinstance(dim, (tuple, list)) and len(dim) > 2:
                raise RuntimeError(f"norm: the Frobenius norm takes a dim of at most 2 dims, got {tuple(dim)}")
            p = 2
        if not self.dtype.is_float:
            raise RuntimeError(f"norm: expected a floating point tensor as input, got {self.dtype}")
        x, dt = (self.cast(dtype), to_dtype(dtype)) if dtype is not None else _compute(self)
        axes = self._axes(dim, "norm")
        a = x.abs()
        if p in (math.inf, -math.inf):
            if any(self.shape[i] == 0 for i in axes):
                raise RuntimeError(f"norm: cannot compute the {p} norm over an empty dim (shape {self.shape})")
            out = a.max(axes, keepdim) if p > 0 else a.min(axes, keepdim)
        elif p == 0:
            out = x.ne(0).sum(axes, keepdim).cast(x.dtype)
        elif p == 1:
            out = a.sum(axes, keepdim)
        elif p == 2:
            s = (x * x).sum(axes, keepdim)
            zero = s.eq(0)
            out = zero.where(0.0, zero.where(1.0, s).sqrt())
        else:
            nz = a.ne(0)
            ap = nz.where(_safe_pow(a, nz, p), 0.0 if p > 0 else math.inf)
            out = ap.sum(axes, keepdim).pow(1 / p)
        return out.cast(dt)

    def renorm(self: Tensor, p: float, dim: int, maxnorm: float) -> Tensor:
        """Each slice along `dim` whose p-norm exceeds maxnorm scaled down to norm maxnorm (by maxnorm / (norm +
        1e-7), as torch.renorm); the others unchanged."""
        if not self.dtype.is_float:
            raise RuntimeError(f"renorm: expected a floating point tensor, got {self.dtype}")
        if p <= 0:
            raise RuntimeError(f"renorm: non-positive norm (p={p}) not supported")
        if maxnorm < 0:
            raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
        d = _norm_dim("renorm", dim, self.ndim)
        norms = self.norm(p, tuple(i for i in range(self.ndim) if i != d), keepdim=True)
        return self * (norms > maxnorm).where(maxnorm / (norms + 1e-7), 1.0)

    def histc(self: Tensor, bins: int = 100, min: float = 0, max: float = 0) -> Tensor:
        """Counts of the elements in `bins` equal-width bins over [min, max] (the data's own range when min == max;
        a range of one value widens by 1 each side), elements outside ignored, max itself in the last bin; in the
        input's float dtype (torch.histc)."""
        if not self.dtype.is_float:
            raise RuntimeError(f"histc: expected a floating point tensor, got {self.dtype}")
        if bins <= 0:
            raise RuntimeError(f"histc: bins must be > 0, but got {bins}")
        if min > max:
            raise RuntimeError(f"histc: max must be larger than min, got min={min} and max={max}")
        from unigrad.tensor import Tensor

        x = self.detach().flatten()
        if min == max and x.numel() > 0:
            lo, hi = x.min(), x.max()
        else:
            lo, hi = (Tensor(v, dtype=x.dtype, device=x.device) for v in (min, max))
        same = lo == hi
        lo, hi = same.where(lo - 1, lo), same.where(hi + 1, hi)
        pos = ((x - lo) * bins / (hi - lo)).floor().cast(dtypes.int64)
        pos = (x == hi).where(bins - 1, pos)
        inside = (x >= lo) & (x <= hi)
        hits = inside.unsqueeze(-1) & (pos.unsqueeze(-1) == _arange64(bins, self.device))
        return hits.sum(0, dtype=dtypes.int64).cast(self.dtype)

    def dist(self: Tensor, other: Tensor, p: float = 2) -> Tensor:
        """The p-norm of self - other (broadcast); floats only, as torch.dist."""
        x, y = self._broadcasted(other, "dist")
        if not x.dtype.is_float:
            raise RuntimeError(f"dist: expected floating point inputs, got {self.dtype} and {other.dtype}")
        return (x - y).norm(p)

    def diff(
        self: Tensor, n: int = 1, dim: int = -1, prepend: Tensor | None = None, append: Tensor | None = None
    ) -> Tensor:
        """n-th forward difference along dim (x[1:] - x[:-1], xor for bools) of prepend, self and append joined
        along dim (promoted as cat); empty along dim once n reaches its length."""
        from unigrad.tensor import Tensor

        if self.ndim == 0:
            raise RuntimeError("diff: expects input to be at least one-dimensional")
        if n < 0:
            raise RuntimeError(f"diff: order must be non-negative but got {n}")
        d = _norm_dim("diff", dim, self.ndim)
        for name, t in (("prepend", prepend), ("append", append)):
            if t is None:
                continue
            if not isinstance(t, Tensor):
                raise TypeError(f"diff: {name} must be a Tensor, got {type(t).__name__}")
            if t.ndim != self.ndim:
                raise RuntimeError(f"diff: expects {name} ({t.shape}) to have as many dims as the input ({self.shape})")
            if any(a != b for i, (a, b) in enumerate(zip(t.shape, self.shape)) if i != d):
                raise RuntimeError(
                    f"diff: expects the shape of {name} ({t.shape}) to match the input's ({self.shape}) except "
                    f"along dim {d}"
                )
        parts = [t for t in (prepend, self, append) if t is not None]
        x = parts[0].cat(*parts[1:], dim=d) if len(parts) > 1 else self
        for _ in range(n):
            m = x.shape[d]
            if m == 0:
                break
            hi, lo = x.narrow(d, 1, m - 1), x.narrow(d, 0, m - 1)
            x = hi.logical_xor(lo) if x.dtype is dtypes.bool else hi - lo
        return x

    def cov(
        self: Tensor, *, correction: int = 1, fweights: Tensor | None = None, aweights: Tensor | None = None
    ) -> Tensor:
        """torch.cov: the covariance of the rows (variables) over the columns (observations) of a 1-D or 2-D tensor,
        optionally weighted by int frequency weights and float observation weights (torch's formula: a weighted
        mean, normalized by sum(w) - correction (* sum(w * aweights) / sum(w))); a normalizer <= 0 becomes 0
        (inf/nan results, torch warns); size-1 dims are squeezed."""
        if self.ndim > 2:
            raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got shape {self.shape}")
        x = self.reshape(1, -1) if self.ndim < 2 else self
        n = x.shape[1]
        w: Tensor | None = None
        for name, t in (("fweights", fweights), ("aweights", aweights)):
            if t is None:
                continue
            if t.ndim > 1:
                raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions, got shape {t.shape}")
            if t.numel() != n:
                raise RuntimeError(f"cov(): expected {name} to have {n} elements (the observations), got {t.numel()}")
            if name == "fweights" and (t.dtype.is_float or t.dtype is dtypes.bool):
                raise RuntimeError(f"cov(): expected fweights to have integral dtype, got {t.dtype}")
            if name == "aweights" and not t.dtype.is_float:
                raise RuntimeError(f"cov(): expected aweights to have floating point dtype, got {t.dtype}")
            if n and float(t.min().item()) < 0:
                raise RuntimeError(f"cov(): {name} cannot be negative")
            w = t.reshape(-1) if w is None else w * t.reshape(-1)
        if w is None:
            avg = x.sum(1) / n
            norm: Tensor | int = n - correction
            norm = max(norm, 0)
        else:
            w_sum = w.sum()
            if float(w_sum.item()) == 0:
                raise RuntimeError("cov(): weights sum to zero, can't be normalized")
            avg = (x * w).sum(1) / w_sum
            if correction != 0 and aweights is not None:
                norm = w_sum - (w * aweights.reshape(-1)).sum() * correction / w_sum
            else:
                norm = w_sum - correction
            norm = (norm <= 0).where(0, norm)
        xc = x - avg.unsqueeze(1)
        c = xc.matmul((xc if w is None else xc * w).transpose(0, 1))
        return (c / norm).squeeze()

    def corrcoef(self: Tensor) -> Tensor:
        """torch.corrcoef: cov scaled by the rows' standard deviations, clipped to [-1, 1]."""
        c = self.cov()
        if c.ndim == 0:
            return c / c
        std = c.diagonal().sqrt()
        c = c / std.reshape(-1, 1)
        c = c / std.reshape(1, -1)
        return c.clamp(-1, 1)

    # ---------------------------------------------------------------- torch names: matrix and vector products
    def mm(self: Tensor, mat2: Tensor) -> Tensor:
        """Matrix product of two 2-D tensors of one dtype (torch.mm's checks)."""
        _check_matrix("mm", "self", self, 2)
        _check_matrix("mm", "mat2", mat2, 2)
        if self.shape[1] != mat2.shape[0]:
            raise RuntimeError(
                f"mm: mat1 and mat2 shapes cannot be multiplied ({self.shape[0]}x{self.shape[1]} and "
                f"{mat2.shape[0]}x{mat2.shape[1]})"
            )
        _same_dtype("mm", ("self", self), ("mat2", mat2))
        return self.matmul(mat2)

    def bmm(self: Tensor, mat2: Tensor) -> Tensor:
        """Batched matrix product of (b, n, m) and (b, m, p) tensors of one dtype (no broadcasting, as torch.bmm)."""
        _check_matrix("bmm", "batch1", self, 3)
        _check_matrix("bmm", "batch2", mat2, 3)
        want = (self.shape[0], self.shape[2])
        if mat2.shape[:2] != want:
            raise RuntimeError(
                f"bmm: expected size for first two dimensions of batch2 tensor to be: {list(want)} but got: "
                f"{list(mat2.shape[:2])}"
            )
        _same_dtype("bmm", ("batch1", self), ("batch2", mat2))
        return self.matmul(mat2)

    def mv(self: Tensor, vec: Tensor) -> Tensor:
        """Matrix (n, m) times vector (m,), of one dtype (torch.mv's checks)."""
        if self.ndim != 2 or vec.ndim != 1:
            raise RuntimeError(f"mv: matrix @ vector expected, got shapes {self.shape} and {vec.shape}")
        if self.shape[1] != vec.shape[0]:
            raise RuntimeError(f"mv: size mismatch, got mat ({self.shape[0]}x{self.shape[1]}), vec ({vec.shape[0]})")
        _same_dtype("mv", ("self", self), ("vec", vec))
        return self.matmul(vec)

    def outer(self: Tensor, vec2: Tensor) -> Tensor:
        """Outer product of two 1-D tensors: (n, 1) * (1, m), dtypes promoted (torch.outer)."""
        for name, t in (("self", self), ("vec2", vec2)):
            if t.ndim != 1:
                raise RuntimeError(f"outer: Expected 1-D argument {name}, but got {t.ndim}-D (shape {t.shape})")
        return self.reshape(-1, 1) * vec2.reshape(1, -1)

    def ger(self: Tensor, vec2: Tensor) -> Tensor:
        """torch.ger: outer."""
        return self.outer(vec2)

    def inner(self: Tensor, other: Tensor) -> Tensor:
        """Sum over the last dims of both (shape self.shape[:-1] + other.shape[:-1]); a 0-d operand multiplies.
        Both of one dtype, as torch.inner."""
        if self.ndim == 0 or other.ndim == 0:
            return self * other
        _same_dtype("inner", ("self", self), ("other", other))
        if self.shape[-1] != other.shape[-1]:
            raise RuntimeError(
                f"inner() the last dimension must match on both input tensors but got shapes {self.shape} and "
                f"{other.shape}"
            )
        a, b = self.shape[:-1], other.shape[:-1]
        k = self.shape[-1]
        x = self.reshape(*a, *(1,) * len(b), k)
        y = other.reshape(*(1,) * len(a), *b, k)
        return (x * y).sum(-1, dtype=self.dtype)

    def addmm(self: Tensor, mat1: Tensor, mat2: Tensor, *, beta: ConstType = 1, alpha: ConstType = 1) -> Tensor:
        """beta * self + alpha * (mat1 @ mat2), self broadcast to the product (ignored when beta is 0); one dtype."""
        prod = mat1.mm(mat2)
        _same_dtype("addmm", ("self", self), ("mat1", mat1), ("mat2", mat2))
        return _scaled_sum("addmm", self, prod, beta, alpha)

    def addmv(self: Tensor, mat: Tensor, vec: Tensor, *, beta: ConstType = 1, alpha: ConstType = 1) -> Tensor:
        """beta * self + alpha * (mat @ vec) (self ignored when beta is 0); one dtype."""
        prod = mat.mv(vec)
        _same_dtype("addmv", ("self", self), ("mat", mat), ("vec", vec))
        return _scaled_sum("addmv", self, prod, beta, alpha)

    def addr(self: Tensor, vec1: Tensor, vec2: Tensor, *, beta: ConstType = 1, alpha: ConstType = 1) -> Tensor:
        """beta * self + alpha * outer(vec1, vec2), dtypes promoted (self ignored when beta is 0; bools: and/or)."""
        prod = vec1.outer(vec2)
        x, prod = self._broadcasted(prod, "addr")
        return _scaled_sum("addr", x, prod, beta, alpha)

    def baddbmm(self: Tensor, batch1: Tensor, batch2: Tensor, *, beta: ConstType = 1, alpha: ConstType = 1) -> Tensor:
        """beta * self + alpha * bmm(batch1, batch2) (self ignored when beta is 0); one dtype."""
        prod = batch1.bmm(batch2)
        _same_dtype("baddbmm", ("self", self), ("batch1", batch1), ("batch2", batch2))
        return _scaled_sum("baddbmm", self, prod, beta, alpha)

    def addbmm(self: Tensor, batch1: Tensor, batch2: Tensor, *, beta: ConstType = 1, alpha: ConstType = 1) -> Tensor:
        """beta * self + alpha * (the sum over the batch of bmm(batch1, batch2)) (self ignored when beta is 0)."""
        prod = batch1.bmm(batch2).sum(0, dtype=batch1.dtype)
        _same_dtype("addbmm", ("self", self), ("batch1", batch1), ("batch2", batch2))
        return _scaled_sum("addbmm", self, prod, beta, alpha)

    def vdot(self: Tensor, other: Tensor) -> Tensor:
        """The dot product of two 1-D tensors of one size and dtype (torch.vdot; real numbers: no conjugate)."""
        _check_matrix("vdot", "self", self, 1)
        _check_matrix("vdot", "other", other, 1)
        _same_dtype("vdot", ("self", self), ("other", other))
        if self.shape != other.shape:
            raise RuntimeError(f"vdot: inconsistent tensor size, expected {self.shape} and {other.shape} to match")
        return (self * other).sum(dtype=self.dtype)

    def kron(self: Tensor, other: Tensor) -> Tensor:
        """The Kronecker product: block (i, j, ...) is self[i, j, ...] * other; the operand with fewer dims gets
        leading 1s, each result dim is the product of the two (torch.kron)."""
        nd = max(self.ndim, other.ndim)
        a = self.reshape((1,) * (nd - self.ndim) + self.shape)
        b = other.reshape((1,) * (nd - other.ndim) + other.shape)
        x = a.reshape(tuple(d for s in a.shape for d in (s, 1)))  # (a0, 1, a1, 1, ...)
        y = b.reshape(tuple(d for s in b.shape for d in (1, s)))  # (1, b0, 1, b1, ...)
        out = x * y if x.dtype is not dtypes.bool or y.dtype is not dtypes.bool else x.logical_and(y)
        return out.reshape(tuple(i * j for i, j in zip(a.shape, b.shape)))

    def cross(self: Tensor, other: Tensor, dim: int | None = None) -> Tensor:
        """Cross product of 3-vectors along dim (broadcast elsewhere); dim=None takes self's first dim of size 3,
        as torch.cross (torch.linalg.cross defaults to -1). Both of one dtype and ndim."""
        if self.ndim != other.ndim:
            raise RuntimeError(
                f"cross: inputs must have the same number of dimensions, got {self.shape} and {other.shape}"
            )
        _same_dtype("cross", ("self", self), ("other", other))
        if dim is None:
            d = next((i for i, s in enumerate(self.shape) if s == 3), None)
            if d is None:
                raise RuntimeError(f"cross: no dimension of size 3 in input of shape {self.shape}")
        else:
            d = _norm_dim("cross", dim, self.ndim)
        if self.shape[d] != 3 or other.shape[d] != 3:
            raise RuntimeError(
                f"cross: inputs dimension {d} must have length 3, got {self.shape[d]} and {other.shape[d]}"
            )
        x, y = self._broadcasted(other, "cross")
        x0, x1, x2 = (x.narrow(d, i, 1) for i in range(3))
        y0, y1, y2 = (y.narrow(d, i, 1) for i in range(3))
        return (x1 * y2 - x2 * y1).cat(x2 * y0 - x0 * y2, x0 * y1 - x1 * y0, dim=d)
