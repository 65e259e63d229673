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
from typing import TYPE_CHECKING, Any

from unigrad.dtype import DType, dtypes, to_dtype

if TYPE_CHECKING:
    from unigrad.tensor import Tensor

Axis = int | Sequence[int] | None
SCAN_BLOCK = 16  # longest axis scanned with one window, and the block of longer ones


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
        return _full(x, (), 0, dtypes.int64)
    n = x.shape[ax]
    idx = Tensor.arange(n, dtype=dtypes.int64, device=x.device).reshape([n if i == ax else 1 for i in range(x.ndim)])
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
        return _full(x, (), 0, dtypes.int64)
    n = x.shape[ax]
    if n == 0:
        raise IndexError(f"{op}: expected reduction dim {ax} to have non-zero size, got shape {x.shape}")
    hit = x.eq(x.max(ax, keepdim=True))
    if x.dtype.is_float:
        hit = hit | x.ne(x)  # a nan makes the max nan: then the nans are the hits
    idx = Tensor.arange(n, dtype=dtypes.int64, device=x.device).reshape([n if i == ax else 1 for i in range(x.ndim)])
    return hit.where(idx, n).min(ax, keepdim)


def _logsumexp_axis(t: Tensor, axis: int) -> Tensor:
    m = t.max(axis, keepdim=True)
    m = (m.abs().eq(math.inf)).where(0.0, m)
    return ((t - m).exp().sum(axis, keepdim=True).log() + m).squeeze(axis)


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
        """Index (int64) of the first maximum along `axis` (of the flattened tensor for None); a nan counts as
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
        """Running sum along `axis`; ints and bools accumulate (and return) int64, as PyTorch."""
        out_dt = to_dtype(dtype) if dtype is not None else dtypes.int64 if not self.dtype.is_float else self.dtype
        x = self.cast(out_dt)
        acc = dtypes.float32 if out_dt.is_float and out_dt.itemsize < 4 else out_dt
        x = x.cast(acc)
        out = _scan(x, _pick(axis, dim), "cumsum", lambda t, a: t.sum(a), lambda a, b: a + b, 0)
        return out.cast(out_dt)

    def cumprod(self: Tensor, axis: int = 0, dtype: DType | str | None = None, *, dim: int | None = None) -> Tensor:
        """Running product along `axis`; ints and bools give int64, as PyTorch."""
        out_dt = to_dtype(dtype) if dtype is not None else dtypes.int64 if not self.dtype.is_float else self.dtype
        x = self.cast(out_dt)
        acc = dtypes.float32 if out_dt.is_float and out_dt.itemsize < 4 else out_dt
        x = x.cast(acc)
        out = _scan(x, _pick(axis, dim), "cumprod", lambda t, a: t.prod(a), lambda a, b: a * b, 1)
        return out.cast(out_dt)

    def cummax(
        self: Tensor, axis: int = 0, return_indices: bool = False, *, dim: int | None = None
    ) -> Tensor | tuple[Tensor, Tensor]:
        """Running max along `axis` (nan propagates). Values only, as tinygrad; return_indices=True gives
        (values, indices) as torch.cummax (indices: int64, the last position of the running max)."""
        axis = _pick(axis, dim)
        values = _cummax_values(self, axis, "cummax")
        return (values, _cum_indices(self, values, axis, "cummax")) if return_indices else values

    def cummin(
        self: Tensor, axis: int = 0, return_indices: bool = False, *, dim: int | None = None
    ) -> Tensor | tuple[Tensor, Tensor]:
        """Running min along `axis`: cummax of the order-reversed tensor (see cummax for return_indices)."""
        axis = _pick(axis, dim)
        values = _flip(_cummax_values(_flip(self), axis, "cummin"))
        return (values, _cum_indices(self, values, axis, "cummin")) if return_indices else values

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
