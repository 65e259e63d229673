"""NNMixin: neural-network functional ops, composed from core Tensor ops (see unigrad/api/__init__.py).

Convolution and pooling share one movement-only helper, `_pool`, that turns each spatial dim of size i into
an (output, kernel) pair of dims with index math alone (expand, reshape, shrink), so a convolution is one
broadcast multiply and one sum: a single reduce kernel, with no im2col buffer (a padded input is copied first,
so that kernel reads without bounds checks). A convolution is a traced function with its own gradient rule
(`_conv_backward`): both gradients are convolutions again, one reduce kernel each.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from unigrad.dtype import DType, dtypes
from unigrad.helpers import record

if TYPE_CHECKING:
    from unigrad.tensor import Tensor


def _tuple(x: int | Sequence[int], n: int, name: str) -> tuple[int, ...]:
    t = (x,) * n if isinstance(x, int) else tuple(x)
    if len(t) != n:
        raise RuntimeError(f"{name}: expected an int or {n} ints, got {x!r}")
    return t


def _out_size(i: int, k: int, s: int, d: int) -> int:
    return (i - d * (k - 1) - 1) // s + 1


def _ceil_extra(
    spatial: Sequence[int], k_: Sequence[int], s_: Sequence[int], d_: Sequence[int], pads: list, ceil_mode: bool
) -> list[int]:
    """Padding past the end that ceil_mode needs per dim: torch rounds the output size up, but a last window
    must start inside the input or its left padding."""
    if not ceil_mode:
        return [0] * len(k_)
    out = []
    for i, k, s, d, (b, a) in zip(spatial, k_, s_, d_, pads):
        span = i + b + a
        o = -(-(span - d * (k - 1) - 1) // s) + 1
        if (o - 1) * s >= i + b:
            o -= 1
        out.append(max(0, (o - 1) * s + d * (k - 1) + 1 - span))
    return out


# ---------------------------------------------------------------- einsum formula parsing
Label = str | int  # a subscript letter, or the position of a dim that '...' stands for (right-aligned)


@record(frozen=True)
class EinsumSpec:
    inputs: tuple[tuple[Label, ...], ...]  # per operand, one label per dim
    output: tuple[Label, ...]
    all_labels: tuple[Label, ...]  # every input label, in order of first appearance


def _label_name(lab: Label) -> str:
    return lab if isinstance(lab, str) else "..."


def _split_subscripts(part: str, what: str) -> tuple[str, bool, str]:
    """'ab...c' -> ('ab', True, 'c'); letters only, at most one ellipsis."""
    before, ell, after = part.partition("...")
    if "..." in after or not all(c.isalpha() and c.isascii() for c in before + after):
        raise RuntimeError(f"einsum(): invalid subscripts {part!r} in {what}; expected letters and at most one '...'")
    return before, bool(ell), after


def _parse_einsum(formula: str, ndims: list[int]) -> EinsumSpec:
    """Labels for each operand's dims and for the output (torch's implicit form: '...' dims, then the letters
    that appear exactly once, sorted)."""
    f = formula.replace(" ", "")
    lhs, arrow, rhs = f.partition("->")
    parts = lhs.split(",")
    if len(parts) != len(ndims):
        more = "fewer" if len(ndims) < len(parts) else "more"
        raise RuntimeError(f"einsum(): {more} operands were provided than specified in the equation {formula!r}")
    split = [_split_subscripts(p, f"operand {k}") for k, p in enumerate(parts)]
    n_ell = []
    for k, ((before, ell, after), nd) in enumerate(zip(split, ndims)):
        letters = len(before) + len(after)
        if (not ell and letters != nd) or letters > nd:
            raise RuntimeError(
                f"einsum(): the number of subscripts in the equation ({letters}) does not match the number of "
                f"dimensions ({nd}) for operand {k}" + ("" if ell else " and no ellipsis was given")
            )
        n_ell.append(nd - letters if ell else 0)
    e = max(n_ell, default=0)
    inputs = tuple(
        (*before, *range(e - m, e), *after)
        for (before, _, after), m in zip(split, n_ell)  # type: ignore[misc]
    )
    all_labels = tuple(dict.fromkeys(lab for labels in inputs for lab in labels))
    if not arrow:
        counts = [lab for labels in inputs for lab in labels if isinstance(lab, str)]
        once = sorted(lab for lab in set(counts) if counts.count(lab) == 1)
        return EinsumSpec(inputs, (*range(e), *once), all_labels)
    before, ell, after = _split_subscripts(rhs, "the output")
    output = (*before, *(range(e) if ell else ()), *after)
    for lab in before + after:
        if lab not in all_labels:
            raise RuntimeError(
                f"einsum(): output subscript {lab} does not appear in the equation for any input operand"
            )
        if (before + after).count(lab) > 1:
            raise RuntimeError(f"einsum(): output subscript {lab} appears more than once in the output")
    return EinsumSpec(inputs, output, all_labels)  # type: ignore[arg-type]


def _einsum_diagonals(t: Tensor, labels: list[Label]) -> tuple[Tensor, list[Label]]:
    """A label repeated within one operand ('ii->i') reads the diagonal of those dims (moved last)."""
    while len(set(labels)) != len(labels):
        lab = next(lab for lab in labels if labels.count(lab) > 1)
        p = labels.index(lab)
        q = labels.index(lab, p + 1)
        t = t.diagonal(0, p, q)
        labels = [x for a, x in enumerate(labels) if a not in (p, q)] + [lab]
    return t, labels


# ---------------------------------------------------------------- interpolation along the last dim
def _resample_linear(x: Tensor, o: int, align_corners: bool, scale: float | None) -> Tensor:
    """(..., i) -> (..., o) by torch's linear rule: source coordinate src from arange (half-pixel centers, clamped
    at 0, or corner-aligned), taps i0 = floor(src) and min(i0 + 1, i - 1) weighted 1 - l and l = src - i0. Each
    tap is a one-hot select over the i inputs (where, not multiply: an inf elsewhere does not leak)."""
    from unigrad.tensor import Tensor

    i = x.shape[-1]
    cdt = dtypes.float64 if x.dtype is dtypes.float64 else dtypes.float32  # torch's opmath type
    dst = Tensor.arange(o, dtype=cdt, device=x.device)
    if align_corners:
        src = dst * ((i - 1) / (o - 1) if o > 1 else 0.0)
    else:
        src = ((dst + 0.5) * (scale if scale is not None else i / o) - 0.5).maximum(0.0)
    i0 = src.cast(dtypes.int64)  # trunc is floor: src >= 0
    lam = src - i0.cast(cdt)
    i1 = (i0 + 1).minimum(i - 1)
    pos = Tensor.arange(i, device=x.device).reshape(i, 1)
    xe = x.unsqueeze(-1)  # (..., i, 1) against (i, o) masks
    taps = (pos == i0.reshape(1, o)).where(xe, 0) * (1 - lam) + (pos == i1.reshape(1, o)).where(xe, 0) * lam
    return taps.sum(-2).cast(x.dtype)


def _nearest_indices(i: int, o: int, mode: str, scale: float | None) -> list[int]:
    """torch's source index for each output position, in its float32 arithmetic so the rounding matches:
    nearest floor(dst * scale), nearest-exact floor((dst + 0.5) * scale), scale = i/o or 1/scale_factor.
    Shape metadata only: no tensor data is read."""
    sc = np.float32(scale) if scale is not None else np.float32(i) / np.float32(o)
    dst = np.arange(o)
    if mode == "nearest":
        src = np.floor(dst.astype(np.float32) * sc)
    else:
        src = np.floor(((dst + 0.5) * np.float64(sc)).astype(np.float32))
    return [min(int(v), i - 1) for v in src]


def _resample_nearest(x: Tensor, o: int, mode: str, scale: float | None) -> Tensor:
    """(..., i) -> (..., o) picking torch's nearest source: a repeat when every input is taken k times in a row,
    a strided slice when the sources step evenly, otherwise a gather by the index list."""
    i = x.shape[-1]
    idx = _nearest_indices(i, o, mode, scale)
    if o % i == 0 and idx == [q // (o // i) for q in range(o)]:
        k = o // i
        return x.unsqueeze(-1).expand(*x.shape, k).reshape(*x.shape[:-1], o)
    step = idx[1] - idx[0] if o > 1 else 1
    if step >= 1 and idx == list(range(idx[0], idx[0] + step * o, step)):
        return x[..., idx[0] : idx[0] + step * (o - 1) + 1 : step]
    return x[..., idx]


def unpool_to_plane(x: Tensor, idx: Tensor, lead: tuple[int, ...], size: tuple[int, ...]) -> Tensor:
    """Each value of x (lead + window dims) written at its flat index (idx, x's shape) into a zero plane of `size`
    per lead position: a one-hot match of the indices against the plane, O(values * plane). A position several
    values go to (overlapping pooling windows) takes their mean, which is each of them when they come from
    max_pool; the gradient is torch's, each value getting its position's gradient in full (a gather). Indices
    outside the plane are dropped (torch raises on them: a check of the data that would need a sync here)."""
    from unigrad.tensor import Tensor

    plane = math.prod(size)
    match = idx.reshape(*lead, -1, 1) == Tensor.arange(plane, dtype=idx.dtype, device=x.device)  # (..., L, plane)
    total = match.where(x.reshape(*lead, -1, 1), 0).cast(x.dtype).sum(-2, dtype=x.dtype)  # (..., plane)
    count = match.sum(-2)
    mean = total / count.maximum(1).cast(total.dtype) if total.dtype.is_float else total // count.maximum(1)
    # the mean's value with the sum's gradient only where values meet: total + (mean - total) would make an inf nan
    return (count > 1).where(total + (mean - total).detach(), total).reshape(*lead, *size)


@record(frozen=True)
class _Composites:
    """The composites run as traced calls (function.traced): linear, layer norm with its weight and bias, attention
    without dropout."""

    linear: Callable[..., Tensor]
    layernorm: Callable[..., Tensor]
    attention: Callable[..., Tensor]


@functools.cache
def _composites() -> _Composites:
    """Made on first use: function.py imports the Tensor these methods are mixed into."""
    from unigrad.function import traced

    return _Composites(traced(NNMixin._linear), traced(NNMixin._affine_layernorm_ops), traced(NNMixin._attention))


class NNMixin:
    """Mixed into Tensor."""

    __slots__ = ()

    # ---------------------------------------------------------------- activations over an axis
    def softmax(self: Tensor, axis: int = -1, dtype: object = None, *, dim: int | None = None) -> Tensor:
        if dim is not None:  # torch's keyword
            axis = dim
        x = self if dtype is None else self.cast(dtype)
        x = x._float()
        if _empty_axis(x, axis, "softmax"):
            return x  # no element: nothing to normalize (PyTorch gives the empty tensor too)
        e = (x - x.max(axis, keepdim=True).detach()).exp()  # any shift gives the same result: no gradient through it
        return e / e.sum(axis, keepdim=True)

    def log_softmax(self: Tensor, axis: int = -1, dtype: object = None, *, dim: int | None = None) -> Tensor:
        if dim is not None:  # torch's keyword
            axis = dim
        x = self if dtype is None else self.cast(dtype)
        x = x._float()
        if _empty_axis(x, axis, "log_softmax"):
            return x
        shifted = x - x.max(axis, keepdim=True).detach()  # any shift gives the same result: no gradient through it
        return shifted - shifted.exp().sum(axis, keepdim=True).log()

    def softmin(self: Tensor, axis: int = -1, dtype: object = None, *, dim: int | None = None) -> Tensor:
        """softmax(-x) over `axis` (tinygrad's Tensor.softmin, torch's F.softmin)."""
        x = self if dtype is None else self.cast(dtype)
        return (-x._float()).softmax(axis, dim=dim)

    def normalize(self: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12) -> Tensor:
        """x / max(||x||_p over `dim`, eps): Lp normalization, as torch's F.normalize."""
        x = self._float()
        return x / x.norm(p, dim, keepdim=True).maximum(eps)

    # ---------------------------------------------------------------- layers as functions
    def linear(self: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
        """x @ weight + bias, with weight of shape (in, out) as tinygrad's Tensor.linear (1-D: elementwise); a traced
        call (function.traced) where the tensors allow."""
        return _composites().linear(self, weight, bias)

    def _linear(self: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
        shape, w_shape = self.uop.shape, weight.uop.shape
        if len(w_shape) == 2 and len(shape) > 2 and all(isinstance(d, int) for d in shape):
            # the leading dims as one (as torch's GEMM sees them): a kernel tiles 6 x 11 tokens as 66 rows
            x = self.reshape(-1, shape[-1]).dot(weight).reshape(*shape[:-1], w_shape[1])
        else:
            x = self * weight if len(w_shape) == 1 else self.dot(weight)
        return x if bias is None else x + bias

    def layernorm(self: Tensor, axis: int | tuple[int, ...] = -1, eps: float = 1e-5) -> Tensor:
        """Normalize over `axis` to zero mean and unit variance (biased variance, as torch's layer_norm)."""
        x = self._float()
        axis = self._axes(axis, "layernorm")  # checked here, so an error names layernorm
        y = x - x.mean(axis, keepdim=True)
        return y * ((y * y).mean(axis, keepdim=True) + eps).sqrt().reciprocal()

    def _affine_layernorm(self: Tensor, weight: Tensor | None, bias: Tensor | None, dims: int, eps: float) -> Tensor:
        """layernorm over the last `dims` dims * weight + bias (either None: left out): nn.LayerNorm's and
        F.layer_norm's, a traced call where the tensors allow."""
        return _composites().layernorm(self, weight, bias, dims, eps)

    def _affine_layernorm_ops(
        self: Tensor, weight: Tensor | None, bias: Tensor | None, dims: int, eps: float
    ) -> Tensor:
        y = self.layernorm(tuple(range(-dims, 0)), eps)
        if weight is not None:
            y = y * weight
        return y if bias is None else y + bias

    def batchnorm(
        self: Tensor, weight: Tensor | None, bias: Tensor | None, mean: Tensor, invstd: Tensor, axis: int = 1
    ) -> Tensor:
        """(x - mean) * invstd * weight + bias with the per-channel vectors broadcast along `axis`."""
        shape = tuple(s if i == axis % self.ndim else 1 for i, s in enumerate(self.shape))
        x = (self - mean.reshape(shape)) * invstd.reshape(shape)
        if weight is not None:
            x = x * weight.reshape(shape)
        return x if bias is None else x + bias.reshape(shape)

    def one_hot(self: Tensor, num_classes: int = -1) -> Tensor:
        """One-hot (dtypes.default_int) of an integer tensor along a new last axis (num_classes=-1: max + 1)."""
        from unigrad.tensor import Tensor

        if self.dtype.is_float or self.dtype.is_bool:
            raise RuntimeError(f"one_hot: expected an integer tensor, got {self.dtype}")
        n = int(self.max().item()) + 1 if num_classes == -1 else num_classes
        classes = Tensor.arange(n, device=self.device)
        return (self.unsqueeze(-1) == classes).cast(dtypes.default_int)

    # ---------------------------------------------------------------- losses
    @staticmethod
    def _check_reduction(reduction: str, op: str) -> None:
        if reduction not in ("mean", "sum", "none"):
            raise ValueError(f"{op}: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")

    @staticmethod
    def _reduce_loss(loss: Tensor, reduction: str, op: str) -> Tensor:
        NNMixin._check_reduction(reduction, op)
        return loss.mean() if reduction == "mean" else loss.sum() if reduction == "sum" else loss

    @staticmethod
    def _check_target(x: Tensor, Y: Tensor, axis: int, op: str, probabilities: bool = False) -> None:
        """Y must be class indices of x's shape without the class axis (or probabilities of x's shape)."""
        if x.ndim == 0:
            raise RuntimeError(f"{op}: expected an input with a class dimension, got a 0-d tensor")
        want = x.shape if probabilities else x.shape[:axis] + x.shape[axis + 1 :]
        if Y.shape != want:
            kind = "class probabilities" if probabilities else "class indices"
            raise RuntimeError(
                f"{op}: target shape {Y.shape} does not match input shape {x.shape}: expected {kind} of shape {want}"
            )

    def cross_entropy(
        self: Tensor,
        Y: Tensor,
        reduction: str = "mean",
        label_smoothing: float = 0.0,
        weight: Tensor | None = None,
        ignore_index: int | None = -100,
    ) -> Tensor:
        """Logits (N, C, d...) or (C,) against class indices (N, d...) or class probabilities of the logits' shape,
        as torch.nn.functional.cross_entropy: `weight` per class; index targets equal to ignore_index don't count,
        and the mean divides by the summed weights of the targets that count; label_smoothing mixes in the uniform
        distribution (for indices: (1 - s) * nll + s/C * the weighted sum of -log-probabilities over the classes)."""
        axis = 1 if self.ndim > 1 else 0
        probabilities = Y.dtype.is_float
        NNMixin._check_target(self, Y, axis, "cross_entropy", probabilities=probabilities)
        NNMixin._check_reduction(reduction, "cross_entropy")
        if not 0.0 <= label_smoothing <= 1.0:
            raise ValueError(f"cross_entropy: label_smoothing must be between 0.0 and 1.0, got {label_smoothing}")
        c = self.shape[axis]
        w = NNMixin._class_weight(self, weight, "cross_entropy")
        if probabilities:
            logp = self.log_softmax(axis)
            p = Y.cast(self.dtype)
            if label_smoothing:
                p = p * (1 - label_smoothing) + label_smoothing / c
            loss = -(logp * p if w is None else logp * p * w).sum(axis)
            if reduction == "mean":  # over the targets (all the input's elements but the class dim)
                return loss.sum() / (self.numel() // c) if self.numel() else loss.sum() * math.nan
            return NNMixin._reduce_loss(loss, reduction, "cross_entropy")
        shifted, log_norm = self._log_normalizer(axis)
        nll = shifted._nll(Y, w, ignore_index, reduction, "cross_entropy", log_norm)
        if not label_smoothing:
            return nll
        logp = shifted - log_norm.unsqueeze(axis)
        keep = (Y != ignore_index).cast(self.dtype) if ignore_index is not None else Y.ones_like().cast(self.dtype)
        smooth = -(logp if w is None else logp * w).sum(axis) * keep
        if reduction == "mean":
            denom = keep.sum() if w is None else (logp._picked_onehot(Y) * w).sum(axis).mul(keep).sum()
            smooth = NNMixin._weighted_mean(smooth.sum(), denom)
        else:
            smooth = NNMixin._reduce_loss(smooth, reduction, "cross_entropy")
        return nll * (1 - label_smoothing) + smooth * (label_smoothing / c)

    def nll_loss(
        self: Tensor,
        Y: Tensor,
        weight: Tensor | str | None = None,
        ignore_index: int | None = None,
        reduction: str = "mean",
    ) -> Tensor:
        """Log-probabilities (N, C, d...) or (C,) against class indices, as torch.nn.functional.nll_loss (tinygrad's
        argument order; the older (Y, reduction, ignore_index) order still works). Each picked term is scaled by
        weight[class]; the mean divides by the summed weights of the targets not ignored."""
        if isinstance(weight, str):  # nll_loss(Y, reduction, ignore_index)
            reduction, weight = weight, None
        NNMixin._check_target(self, Y, 1 if self.ndim > 1 else 0, "nll_loss")
        NNMixin._check_reduction(reduction, "nll_loss")
        return self._nll(Y, NNMixin._class_weight(self, weight, "nll_loss"), ignore_index, reduction)

    def _log_normalizer(self: Tensor, axis: int) -> tuple[Tensor, Tensor]:
        """(x - max, log(sum(exp(x - max)))) along `axis` (the second without it): log_softmax(x) is their
        difference. The max is detached: any shift gives the same result. Over an empty axis (no class), x and zeros:
        log_softmax gives x itself there."""
        x = self._float()
        if _empty_axis(x, axis, "log_softmax"):
            return x, x.sum(axis)
        shifted = x - x.max(axis, keepdim=True).detach()
        return shifted, shifted.exp().sum(axis).log()

    def _nll(
        self: Tensor,
        Y: Tensor,
        w: Tensor | None,
        ignore_index: int | None,
        reduction: str,
        op: str = "nll_loss",
        log_norm: Tensor | None = None,
    ) -> Tensor:
        """-self[n, Y[n]] * w[Y[n]] over the class dim (1, or 0 for a 1-d input), then reduced; w: None or the
        class weights along that dim (_class_weight). A target outside the classes raises at the realize.

        With `log_norm` (_log_normalizer), self is shifted logits whose log-probabilities are self - log_norm: the
        loss of a target is w[Y[n]] * log_norm[n] - w[Y[n]] * self[n, Y[n]], so the log-probabilities are never
        a tensor. Their gradient is then softmax - onehot, elementwise: differentiating log_softmax instead sums the
        incoming gradient over each row, a reduction kernel of its own (and one more kernel for its scale)."""
        axis = 1 if self.ndim > 1 else 0
        NNMixin._check_classes(Y, self.shape[axis], ignore_index, op)
        mask = self._picked_onehot(Y)
        keep = None if ignore_index is None else (Y != ignore_index).cast(self.dtype)
        if w is not None:
            mask = mask * w
        if keep is not None:
            mask = mask * keep.unsqueeze(axis)
        loss = -((mask != 0).where(self, 0.0) * mask).sum(axis)  # where first: a -inf elsewhere adds no nan
        if log_norm is not None:  # the target's weight times the log normalizer: w[Y[n]] (0 where ignored)
            loss = loss + log_norm * (mask.sum(axis) if w is not None else 1 if keep is None else keep)
        if reduction == "mean":
            # unweighted, the targets that count (each a class: checked) are Y's entries, or those not ignored: a
            # count over Y, not a sum of the one-hot mask over every class (700 x 1000 for a word model's batch)
            if w is None and ignore_index is None and isinstance(n := Y.numel(), int) and n:
                return loss.sum() / n
            if w is None and keep is not None:
                return NNMixin._weighted_mean(loss.sum(), keep.sum())
            return NNMixin._weighted_mean(loss.sum(), mask.sum())
        return NNMixin._reduce_loss(loss, reduction, "nll_loss")

    @staticmethod
    def _check_classes(Y: Tensor, c: int, ignore_index: int | None, op: str) -> None:
        """Have the next realize raise torch's IndexError when a class index of Y is outside [0, c) and is not
        ignore_index (unchecked, it would pick no class: a silently wrong loss)."""
        from unigrad.tensor import check_range

        skip = "" if ignore_index is None else f", or ignore_index {ignore_index}"

        def error(count: int, value: int) -> IndexError:
            return IndexError(
                f"{op}: target {value} is out of bounds (expected a class in [0, {c - 1}]{skip}; {count} such target(s))"
            )

        check_range(Y, 0, c, error, ignore_index)

    def _picked_onehot(self: Tensor, Y: Tensor) -> Tensor:
        """self's dtype one-hot of the class indices Y along self's class dim (1, or 0 for a 1-d self); all zeros
        where Y is no class (an ignore_index)."""
        from unigrad.tensor import Tensor

        axis = 1 if self.ndim > 1 else 0
        c = self.shape[axis]
        classes = Tensor.arange(c, device=self.device).reshape(tuple(c if i == axis else 1 for i in range(self.ndim)))
        return (Y.unsqueeze(axis) == classes).cast(self.dtype)

    @staticmethod
    def _class_weight(x: Tensor, weight: Tensor | None, op: str) -> Tensor | None:
        """A loss's per-class weight (C,) checked, cast to x's dtype and shaped to broadcast along x's class dim."""
        if weight is None:
            return None
        axis = 1 if x.ndim > 1 else 0
        c = x.shape[axis]
        if weight.shape != (c,):
            raise RuntimeError(f"{op}: weight must have shape ({c},) (one per class), got {weight.shape}")
        return weight.cast(x.dtype).reshape(tuple(c if i == axis else 1 for i in range(x.ndim)))

    @staticmethod
    def _weighted_mean(total: Tensor, weight_sum: Tensor) -> Tensor:
        """total / weight_sum; nan when no target counts (all ignored), with a zero gradient there, as torch."""
        none = weight_sum == 0
        return none.where(math.nan, total / none.where(1.0, weight_sum))

    def sparse_categorical_crossentropy(
        self: Tensor, Y: Tensor, ignore_index: int = -1, label_smoothing: float = 0.0, reduction: str = "mean"
    ) -> Tensor:
        """tinygrad's name: logits (..., C) against integer labels (...); labels == ignore_index don't count."""
        NNMixin._check_target(self, Y, self.ndim - 1, "sparse_categorical_crossentropy")
        n = self.shape[-1]
        NNMixin._check_classes(Y, n, ignore_index, "sparse_categorical_crossentropy")
        shifted, log_norm = self._log_normalizer(-1)  # -log_softmax at the label, as log_norm - shifted: see _nll
        onehot = Y.unsqueeze(-1) == self._class_range(n)
        loss = log_norm - onehot.where(shifted, 0.0).sum(-1)
        keep = (Y != ignore_index).cast(loss.dtype)
        if label_smoothing:  # (1 - s) * nll + s * (mean of -logp over the classes)
            logp = shifted - log_norm.unsqueeze(-1)
            loss = loss * (1 - label_smoothing) - logp.mean(-1) * label_smoothing
        loss = loss * keep
        if reduction == "mean":
            return loss.sum() / keep.sum()
        return NNMixin._reduce_loss(loss, reduction, "sparse_categorical_crossentropy")

    def _class_range(self: Tensor, n: int) -> Tensor:
        from unigrad.tensor import Tensor

        return Tensor.arange(n, device=self.device)

    def binary_crossentropy(self: Tensor, Y: Tensor, reduction: str = "mean") -> Tensor:
        """Probabilities against targets in [0, 1]; log terms clamped at -100 as torch does."""
        lp = self.log().maximum(-100)
        l1p = (1 - self).log().maximum(-100)
        return NNMixin._reduce_loss(-(Y * lp + (1 - Y) * l1p), reduction, "binary_crossentropy")

    def binary_crossentropy_logits(
        self: Tensor, Y: Tensor, reduction: str = "mean", pos_weight: Tensor | None = None
    ) -> Tensor:
        """Stable: (1 - y) x + (1 + (pos_weight - 1) y) softplus(-x), softplus(-x) = max(-x, 0) + log(1 + exp(-|x|))
        (pos_weight None: 1, max(x, 0) - x*y + log(1 + exp(-|x|)))."""
        x = self._float()
        if pos_weight is None:
            loss = x.maximum(0) - x * Y + (1 + (-x.abs()).exp()).log()
        else:
            softplus_neg = (-x).maximum(0) + (1 + (-x.abs()).exp()).log()
            loss = (1 - Y) * x + ((pos_weight - 1) * Y + 1) * softplus_neg
        return NNMixin._reduce_loss(loss, reduction, "binary_crossentropy_logits")

    def mse_loss(self: Tensor, Y: Tensor, reduction: str = "mean") -> Tensor:
        return NNMixin._reduce_loss((self - Y).square(), reduction, "mse_loss")

    def l1_loss(self: Tensor, Y: Tensor, reduction: str = "mean") -> Tensor:
        return NNMixin._reduce_loss((self - Y).abs(), reduction, "l1_loss")

    # ---------------------------------------------------------------- attention
    def scaled_dot_product_attention(
        self: Tensor,
        key: Tensor,
        value: Tensor,
        attn_mask: Tensor | None = None,
        dropout_p: float = 0.0,
        is_causal: bool = False,
        scale: float | None = None,
        enable_gqa: bool = False,
    ) -> Tensor:
        """softmax(q @ k^T * scale + mask) @ v; dropout on the attention weights while Tensor.training is set (as
        tinygrad; torch's F.scaled_dot_product_attention drops always). See _attention_weights."""
        if is_causal and attn_mask is not None:  # tinygrad and torch both refuse the pair
            raise RuntimeError("scaled_dot_product_attention: explicit attn_mask should not be set when is_causal=True")
        if dropout_p == 0 or not type(self).training:  # no random draw: a traced call where the tensors allow
            return _composites().attention(self, key, value, attn_mask, is_causal, scale, enable_gqa)
        weights, value = self._attention_weights(key, value, attn_mask, is_causal, scale, enable_gqa)
        return weights.dropout(dropout_p).matmul(value)

    def _attention(self: Tensor, *args: Any) -> Tensor:
        """Attention without dropout (scaled_dot_product_attention's traced body), of _attention_weights' arguments."""
        weights, value = self._attention_weights(*args)
        return weights.matmul(value)

    def _attention_weights(
        self: Tensor,
        key: Tensor,
        value: Tensor,
        attn_mask: Tensor | None,
        is_causal: bool,
        scale: float | None,
        enable_gqa: bool,
    ) -> tuple[Tensor, Tensor]:
        """(softmax(q @ k^T * scale + mask), value with its heads repeated for enable_gqa): scale 1/sqrt(E) by
        default; a bool mask keeps True positions, a float mask is added; is_causal keeps key j <= query i (top-left
        aligned); enable_gqa repeats key/value heads (dim -3) to the query's."""
        q, k, v = self, key, value
        if q.ndim < 2 or k.ndim < 2 or v.ndim < 2 or q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2]:
            raise RuntimeError(
                f"scaled_dot_product_attention(): query {q.shape}, key {k.shape}, value {v.shape} do not match: "
                f"expected (..., L, E), (..., S, E), (..., S, Ev)"
            )
        if enable_gqa and q.ndim >= 3 and k.shape[-3] != q.shape[-3]:
            k = k.repeat_interleave(q.shape[-3] // k.shape[-3], dim=-3)
            v = v.repeat_interleave(q.shape[-3] // v.shape[-3], dim=-3)
        scores = q.matmul(k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]) if scale is None else scale)
        if is_causal:
            lq, lk = q.shape[-2], k.shape[-2]
            rows = q._class_range(lq).reshape(lq, 1)
            cols = q._class_range(lk).reshape(1, lk)
            scores = (cols <= rows).where(scores, -math.inf)
        if attn_mask is not None:
            scores = attn_mask.where(scores, -math.inf) if attn_mask.dtype is dtypes.bool else scores + attn_mask
        return scores.softmax(-1), v

    # ---------------------------------------------------------------- convolution and pooling
    def _pool(self: Tensor, k_: tuple[int, ...], stride: tuple[int, ...], dilation: tuple[int, ...]) -> Tensor:
        """(*prefix, *spatial) -> (*prefix, *out, *k): element [..., o, kk] is x[..., o*stride + kk*dilation].

        Per spatial dim of size i: repeat the row e times (EXPAND) and re-cut the flat sequence into k rows
        of length L = m*i + d, so row kk starts kk*d further into x; keep every stride-th column."""
        n = len(k_)
        x = self
        nd = x.ndim
        for j, (k, s, d) in enumerate(zip(k_, stride, dilation)):
            ax = nd - n + j  # this spatial dim, moved last, handled, moved back; kernels go to the end
            order = [a for a in range(x.ndim) if a != ax] + [ax]
            x = x.permute(order)
            i = x.shape[-1]
            o = _out_size(i, k, s, d)
            if o <= 0:
                raise RuntimeError(f"pool: kernel {k} (dilation {d}) is larger than the input size {i}")
            m = max(1, -(-(o * s - d) // i))
            row = m * i + d
            e = -(-(k * row) // i)
            lead = x.shape[:-1]
            x = x.reshape(*lead, 1, i).expand(*lead, e, i).reshape(*lead, e * i)
            x = x.shrink(tuple((0, sz) for sz in lead) + ((0, k * row),)).reshape(*lead, k, row)
            x = x.shrink(tuple((0, sz) for sz in lead) + ((0, k), (0, o * s))).reshape(*lead, k, o, s)
            x = x.shrink(tuple((0, sz) for sz in lead) + ((0, k), (0, o), (0, 1))).reshape(*lead, k, o)
            # (rest..., k, o): o back to the spatial slot, k after everything
            rest = len(lead)
            back = list(range(rest))
            back.insert(ax, rest + 1)
            x = x.permute(*back, rest)
        return x

    def _conv_padding(self: Tensor, padding: object, k_: tuple[int, ...], dilation: tuple[int, ...]) -> list:
        n = len(k_)
        if padding == "valid":
            return [(0, 0)] * n
        if padding == "same":
            total = [d * (k - 1) for k, d in zip(k_, dilation)]
            return [(t // 2, t - t // 2) for t in total]
        if isinstance(padding, int):
            return [(padding, padding)] * n
        p = tuple(padding)  # type: ignore[arg-type]
        if len(p) == n:
            return [(v, v) for v in p]
        if len(p) == 2 * n:  # torch's flat form, last dim first
            return [(p[2 * (n - 1 - j)], p[2 * (n - 1 - j) + 1]) for j in range(n)]
        raise RuntimeError(f"conv: padding {padding!r} must be an int, 'same', 'valid' or {n} or {2 * n} ints")

    def conv2d(
        self: Tensor,
        weight: Tensor,
        bias: Tensor | None = None,
        groups: int = 1,
        stride: int | Sequence[int] = 1,
        dilation: int | Sequence[int] = 1,
        padding: int | Sequence[int] | str = 0,
    ) -> Tensor:
        """N-d convolution (1-d, 2-d, 3-d by the weight's rank): x (N, C_in, *s), weight (C_out, C_in/groups,
        *k) -> (N, C_out, *o): the pooled input times the weight, summed over (C_in/groups, *k). An unbatched
        input (C_in, *s) gives (C_out, *o), as torch's."""
        n = weight.ndim - 2
        if n >= 1 and self.ndim == n + 1:
            return self.unsqueeze(0).conv2d(weight, bias, groups, stride, dilation, padding).squeeze(0)
        if n < 1 or self.ndim != n + 2:
            raise RuntimeError(
                f"conv: input {self.shape} and weight {weight.shape}: expected a weight (C_out, C_in/groups, *kernel) "
                f"with at least 1 kernel dim and an input (N, C_in, *spatial) with as many spatial dims"
            )
        cin, spatial = self.shape[1], self.shape[2:]
        cout, cin_g, k_ = weight.shape[0], weight.shape[1], weight.shape[2:]
        if len(spatial) != n or cin != cin_g * groups or cout % groups:
            raise RuntimeError(
                f"conv: input {self.shape} and weight {weight.shape} with groups={groups} do not match "
                f"(expected input (N, {cin_g * groups}, {n} spatial dims) and C_out divisible by groups)"
            )
        s_, d_ = _tuple(stride, n, "conv stride"), _tuple(dilation, n, "conv dilation")
        pads = tuple(self._conv_padding(padding, k_, d_))
        for i, k, s, d, (p0, p1) in zip(spatial, k_, s_, d_, pads):
            if _out_size(i + p0 + p1, k, s, d) <= 0:
                raise RuntimeError(
                    f"conv: kernel {tuple(k_)} (dilation {d_}) is larger than the input {tuple(spatial)} "
                    f"padded by {list(pads)}"
                )
        out = _conv_function()(self, weight, groups=groups, stride=s_, dilation=d_, pads=pads)
        return out if bias is None else out + bias.reshape(1, cout, *([1] * n))

    def conv1d(self: Tensor, weight: Tensor, bias: Tensor | None = None, **kw: object) -> Tensor:
        return self.conv2d(weight, bias, **kw)  # type: ignore[arg-type]

    def conv3d(self: Tensor, weight: Tensor, bias: Tensor | None = None, **kw: object) -> Tensor:
        return self.conv2d(weight, bias, **kw)  # type: ignore[arg-type]

    def conv_transpose2d(
        self: Tensor,
        weight: Tensor,
        bias: Tensor | None = None,
        groups: int = 1,
        stride: int | Sequence[int] = 1,
        dilation: int | Sequence[int] = 1,
        padding: int | Sequence[int] = 0,
        output_padding: int | Sequence[int] = 0,
    ) -> Tensor:
        """Transposed convolution: zeros inserted between inputs (stride), padded by d*(k-1)-p, then a
        convolution with the flipped kernel and in/out channels swapped; weight (C_in, C_out/groups, *k). An
        unbatched input (C_in, *s) gives (C_out, *o), as torch's."""
        n = weight.ndim - 2
        if n >= 1 and self.ndim == n + 1:
            out = self.unsqueeze(0).conv_transpose2d(weight, bias, groups, stride, dilation, padding, output_padding)
            return out.squeeze(0)
        s_, d_ = _tuple(stride, n, "conv_transpose stride"), _tuple(dilation, n, "conv_transpose dilation")
        p_, op_ = _tuple(padding, n, "conv_transpose padding"), _tuple(output_padding, n, "output_padding")
        cin, cout_g, k_ = weight.shape[0], weight.shape[1], weight.shape[2:]
        w = (
            weight.reshape(groups, cin // groups, cout_g, *k_)
            .transpose(1, 2)
            .reshape(groups * cout_g, cin // groups, *k_)
        )
        w = w.flip(*range(2, 2 + n))
        x = _spread(self, s_)
        pads = [(d * (k - 1) - p, d * (k - 1) - p + o) for k, d, p, o in zip(k_, d_, p_, op_)]
        return x.conv2d(w, bias, groups=groups, dilation=d_, padding=[v for pr in reversed(pads) for v in pr])

    def _pool_args(
        self: Tensor, kernel_size: object, stride: object, dilation: object, padding: object, name: str
    ) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], list]:
        n = 2 if isinstance(kernel_size, int) else len(kernel_size)  # type: ignore[arg-type]
        k_ = _tuple(kernel_size, n, f"{name} kernel_size")  # type: ignore[arg-type]
        s_ = k_ if stride is None else _tuple(stride, n, f"{name} stride")  # type: ignore[arg-type]
        d_ = _tuple(dilation, n, f"{name} dilation")  # type: ignore[arg-type]
        if not isinstance(padding, int) and len(padding) == 2 * n:  # type: ignore[arg-type]
            flat = tuple(padding)  # type: ignore[arg-type]  # torch's flat (last_before, last_after, ...) form
            return k_, s_, d_, [(flat[2 * (n - 1 - j)], flat[2 * (n - 1 - j) + 1]) for j in range(n)]
        pads = [(p, p) for p in _tuple(padding, n, f"{name} padding")]  # type: ignore[arg-type]
        return k_, s_, d_, pads

    def avg_pool2d(
        self: Tensor,
        kernel_size: int | tuple[int, ...] = (2, 2),
        stride: int | tuple[int, ...] | None = None,
        dilation: int | tuple[int, ...] = 1,
        padding: int | tuple[int, ...] = 0,
        ceil_mode: bool = False,
        count_include_pad: bool = True,
    ) -> Tensor:
        """Mean over each window of the last len(kernel_size) dims (2 for an int). As torch, the divisor counts the
        explicit padding when count_include_pad, but never the extra windows ceil_mode adds past it."""
        from unigrad.tensor import Tensor

        k_, s_, d_, pads = self._pool_args(kernel_size, stride, dilation, padding, "avg_pool2d")
        n = len(k_)
        extra = _ceil_extra(self.shape[-n:], k_, s_, d_, pads, ceil_mode)
        lead = [(0, 0)] * (self.ndim - n)
        full = [(b, a + e) for (b, a), e in zip(pads, extra)]
        axes = tuple(range(-n, 0))
        total = self._float().pad((*lead, *full))._pool(k_, s_, d_).sum(axes)
        if not any(extra) and (count_include_pad or all(p == (0, 0) for p in pads)):
            return total / math.prod(k_)
        ones = Tensor.ones(self.shape[-n:], dtype=total.dtype, device=self.device)
        ones = ones.pad(pads, value=1.0 if count_include_pad else 0.0).pad([(0, e) for e in extra])
        return total / ones._pool(k_, s_, d_).sum(axes)

    def max_pool2d(
        self: Tensor,
        kernel_size: int | tuple[int, ...] = (2, 2),
        stride: int | tuple[int, ...] | None = None,
        dilation: int | tuple[int, ...] = 1,
        padding: int | tuple[int, ...] = 0,
        ceil_mode: bool = False,
        return_indices: bool = False,
    ) -> Tensor | tuple[Tensor, Tensor]:
        """Max over each window of the last len(kernel_size) dims (2 for an int). With return_indices, also the
        flat index (dtypes.default_int; into the unpadded spatial plane, as torch) of the first maximum of each window in scan
        order: the smallest plane index among the window's positions equal to the max."""
        from unigrad.tensor import Tensor

        k_, s_, d_, pads = self._pool_args(kernel_size, stride, dilation, padding, "max_pool2d")
        n = len(k_)
        extra = _ceil_extra(self.shape[-n:], k_, s_, d_, pads, ceil_mode)
        full = [(b, a + e) for (b, a), e in zip(pads, extra)]
        lead = [(0, 0)] * (self.ndim - n)
        fill = -math.inf if self.dtype.is_float else self.dtype.min
        axes = tuple(range(-n, 0))
        windows = self.pad((*lead, *full), value=fill)._pool(k_, s_, d_)  # (..., *o, *k)
        out = windows.max(axes)
        if not return_indices:
            return out
        plane = math.prod(self.shape[-n:])
        pos = Tensor.arange(plane, dtype=dtypes.int64, device=self.device).reshape(self.shape[-n:])
        pos = pos.pad(full, value=plane)._pool(k_, s_, d_)  # (*o, *k): padding never wins the min below
        hit = windows == out.reshape(out.shape + (1,) * n)
        return out, hit.where(pos, plane).min(axes).cast(dtypes.default_int)

    def sequential(self: Tensor, ll: Sequence[object]) -> Tensor:
        """Apply each callable in `ll` in turn (tinygrad's Tensor.sequential)."""
        x = self
        for f in ll:
            x = f(x)  # type: ignore[operator]
        return x

    # ---------------------------------------------------------------- einsum, resampling, unpooling
    @staticmethod
    def einsum(formula: str, *operands: Tensor | Sequence[Tensor], dtype: DType | str | None = None) -> Tensor:
        """Einstein summation as torch.einsum: explicit ('ij,jk->ik') or implicit output (the labels seen once,
        sorted), a label repeated in one operand takes the diagonal, '...' stands for broadcast dims, and labels
        of size 1 broadcast. Operands are folded in left to right: each is permuted and reshaped onto the running
        product's labels (a broadcast multiply), then the labels no later operand and not the output uses are
        summed away, so 'ij,jk,kl->il' costs two matmuls, not one i*j*k*l product."""
        ops = list(operands[0]) if len(operands) == 1 and isinstance(operands[0], (list, tuple)) else list(operands)
        spec = _parse_einsum(formula, [t.ndim for t in ops])  # type: ignore[union-attr]
        sizes: dict[Label, int] = {}
        views = []
        for k, (t, labels) in enumerate(zip(ops, spec.inputs)):
            t, labs = _einsum_diagonals(t.cast(dtype) if dtype is not None else t, list(labels))  # type: ignore[union-attr]
            for lab, size in zip(labs, t.shape):
                seen = sizes.setdefault(lab, size)
                if size != seen and 1 not in (size, seen):
                    raise RuntimeError(
                        f"einsum(): subscript {_label_name(lab)} has size {size} for operand {k} which does not "
                        f"broadcast with previously seen size {seen}"
                    )
                sizes[lab] = max(seen, size)
            views.append((t, labs))
        prod, cur = views[0]
        for k in range(len(views)):
            if k:
                t, labs = views[k]
                cur = cur + [lab for lab in labs if lab not in cur]
                t = t.permute(sorted(range(len(labs)), key=lambda a: cur.index(labs[a])))
                dim_of = dict(zip(sorted(labs, key=cur.index), t.shape))
                prod = prod.reshape(prod.shape + (1,) * (len(cur) - prod.ndim)) * t.reshape(
                    tuple(dim_of.get(lab, 1) for lab in cur)  # a 1 for each label this operand lacks
                )
            later = {lab for _, labs in views[k + 1 :] for lab in labs}
            drop = tuple(a for a, lab in enumerate(cur) if lab not in spec.output and lab not in later)
            if drop:
                prod = prod.sum(drop, dtype=None if len(views) == 1 else prod.dtype)  # one operand: torch.sum's int64
                cur = [lab for a, lab in enumerate(cur) if a not in drop]
        prod = prod.permute(tuple(cur.index(lab) for lab in spec.output))
        return prod.expand(tuple(sizes[lab] for lab in spec.output))

    def interpolate(
        self: Tensor,
        size: int | Sequence[int] | None = None,
        mode: str = "linear",
        align_corners: bool = False,
        scale_factor: float | Sequence[float] | None = None,
    ) -> Tensor:
        """Resample the last len(size) dims (tinygrad: any number of leading dims; an int size or scale_factor
        means every dim after (N, C), as torch) to `size`, or to floor(in * scale_factor), matching
        torch.nn.functional.interpolate. mode 'linear' (aliases 'bilinear', 'trilinear'): per dim, two taps
        weighted by the distance to the source coordinate computed from arange; 'nearest' / 'nearest-exact':
        torch's float32 source index, by repeat or a strided slice when the pattern is regular, else a gather."""
        lin = mode in ("linear", "bilinear", "trilinear")
        if not lin and mode not in ("nearest", "nearest-exact"):
            raise NotImplementedError(
                f"interpolate: mode must be linear, bilinear, nearest or nearest-exact, got {mode!r}"
            )
        if align_corners and not lin:
            raise ValueError("interpolate: align_corners option can only be set with the interpolating modes")
        if (size is None) == (scale_factor is None):
            raise ValueError("interpolate: exactly one of size or scale_factor should be defined")
        given = size if size is not None else scale_factor
        n = len(given) if isinstance(given, (list, tuple)) else self.ndim - 2  # type: ignore[arg-type]
        if n < 1 or n > self.ndim:
            raise ValueError(f"interpolate: cannot resample {n} dims of a tensor of shape {self.shape}")
        spatial = self.shape[self.ndim - n :]
        if size is not None:
            outs = _tuple(size, n, "interpolate size")  # type: ignore[arg-type]
            scales: list[float | None] = [None] * n
        else:
            sf = (scale_factor,) * n if not isinstance(scale_factor, (list, tuple)) else tuple(scale_factor)
            if len(sf) != n:
                raise ValueError(f"interpolate: expected {n} scale factors, got {scale_factor!r}")
            outs = tuple(math.floor(i * f) for i, f in zip(spatial, sf))
            scales = [1 / f for f in sf]  # torch indexes with 1/scale_factor when one is given
        x = self if self.dtype.is_float or not lin else self._float()
        for j, (i, o, sc) in enumerate(zip(spatial, outs, scales)):
            ax = self.ndim - n + j
            if o == i and sc is None:
                continue
            x = x.movedim(ax, -1)
            x = _resample_linear(x, o, align_corners, sc) if lin else _resample_nearest(x, o, mode, sc)
            x = x.movedim(-1, ax)
        return x

    def max_unpool2d(
        self: Tensor,
        indices: Tensor,
        kernel_size: int | tuple[int, ...] = (2, 2),
        stride: int | tuple[int, ...] | None = None,
        dilation: int | tuple[int, ...] = 1,
        padding: int | tuple[int, ...] = 0,
        output_size: Sequence[int] | None = None,
    ) -> Tensor:
        """The inverse of max_pool2d(return_indices=True): each value goes to its flat index in a zero plane of
        the spatial size (o-1)*s - 2p + d*(k-1) + 1 per dim, or the last dims of output_size (unpool_to_plane)."""
        k_, s_, d_, pads = self._pool_args(kernel_size, stride, dilation, padding, "max_unpool2d")
        n = len(k_)
        if indices.shape != self.shape:
            raise RuntimeError(f"max_unpool2d: indices {indices.shape} must have the shape of the input {self.shape}")
        if output_size is not None:
            out_sp = tuple(output_size)[-n:]
        else:
            out_sp = tuple(
                (o - 1) * s - 2 * p + d * (k - 1) + 1 for o, k, s, d, (p, _) in zip(self.shape[-n:], k_, s_, d_, pads)
            )
        return unpool_to_plane(self, indices, self.shape[:-n], out_sp)


# ---------------------------------------------------------------- convolution: forward and its own gradient


def _spread(x: Tensor, stride: Sequence[int]) -> Tensor:
    """(N, C, *s) with s-1 zeros inserted between elements along each spatial dim (a transposed convolution's input,
    a strided convolution's input gradient): size i becomes (i-1)*s + 1."""
    if all(s == 1 for s in stride):
        return x
    bs, c, sp = x.shape[0], x.shape[1], x.shape[2:]
    x = x.reshape(bs, c, *[v for i in sp for v in (i, 1)])
    x = x.pad(((0, 0), (0, 0), *[p for s in stride for p in ((0, 0), (0, s - 1))]))
    x = x.reshape(bs, c, *[i * s for i, s in zip(sp, stride)])
    return x.shrink(((0, bs), (0, c), *[(0, (i - 1) * s + 1) for i, s in zip(sp, stride)]))


def _padded(x: Tensor, pads: Sequence[tuple[int, int]]) -> Tensor:
    """x with its trailing len(pads) dims padded by (before, after) zeros (cut where negative), made contiguous so the
    convolution kernel reading it has no gated (bounds-checked) loads and its windows vectorize."""
    lead = [(0, 0)] * (x.ndim - len(pads))
    if any(p0 < 0 or p1 < 0 for p0, p1 in pads):
        x = x.shrink(
            tuple((0, s) for s in x.shape[: len(lead)])
            + tuple((max(0, -p0), s - max(0, -p1)) for s, (p0, p1) in zip(x.shape[len(lead) :], pads))
        )
        pads = [(max(0, p0), max(0, p1)) for p0, p1 in pads]
    if all(p == (0, 0) for p in pads):
        return x
    return x.pad((*lead, *pads)).contiguous()


def _conv_forward(
    x: Tensor, w: Tensor, groups: int, stride: tuple[int, ...], dilation: tuple[int, ...], pads: tuple
) -> Tensor:
    """(N, C_in, *s) * (C_out, C_in/groups, *k) -> (N, C_out, *o): windows of the padded input (`_pool`: index math
    only) times the weight, summed over (C_in/groups, *k): one reduce kernel."""
    n = w.ndim - 2
    bs, cout, cin_g, k_ = x.shape[0], w.shape[0], w.shape[1], w.shape[2:]
    xw = _padded(x, pads)._pool(k_, stride, dilation)  # (N, C_in, *o, *k)
    o_ = xw.shape[2 : 2 + n]
    xw = xw.reshape(bs, groups, 1, cin_g, *o_, *k_)
    wr = w.reshape(1, groups, cout // groups, cin_g, *([1] * n), *k_)
    return (xw * wr).sum((3, *range(4 + n, 4 + 2 * n))).reshape(bs, cout, *o_)


def _conv_backward(
    g: Tensor | None, x: Tensor, w: Tensor, groups: int, stride: tuple[int, ...], dilation: tuple[int, ...], pads: tuple
) -> tuple[Tensor | None, Tensor | None]:
    """Gradients of _conv_forward, themselves convolutions (one reduce kernel each):
    - input: out[o] = sum_k xp[o*s + k*d] w[k], so dxp[j] = sum_k gz[j - k*d] w[k] with gz the gradient spread out
      by the stride (s-1 zeros between elements): a correlation of gz, padded by d*(k-1) in front, with the flipped
      weight (in/out channels swapped per group); the input's own padding is cut from both ends;
    - weight: dw[co, ci, k] = sum_{n, o} xp[n, ci, o*s + k*d] g[n, co, o]: the input's windows times the gradient,
      summed over batch and output positions."""
    if g is None:
        return None, None
    n = w.ndim - 2
    bs, cout, cin_g, k_ = x.shape[0], w.shape[0], w.shape[1], w.shape[2:]
    spatial, o_ = x.shape[2:], g.shape[2:]
    gz = _spread(g, stride)
    # dx[j] (j in the unpadded input) = dxp[j + p0]: gz padded by d*(k-1) - p0 in front and to length i + d*(k-1)
    gpads = [
        (d * (k - 1) - p0, i + d * (k - 1) - (d * (k - 1) - p0) - z)
        for i, k, d, (p0, _), z in zip(spatial, k_, dilation, pads, gz.shape[2:])
    ]
    wt = w.reshape(groups, cout // groups, cin_g, *k_).transpose(1, 2).reshape(groups * cin_g, cout // groups, *k_)
    wt = wt.flip(*range(2, 2 + n)).contiguous()  # small; keeps the regrouping's div/mod out of the inner loop
    no_pad = tuple((0, 0) for _ in range(n))
    dx = _conv_function()(_padded(gz, gpads), wt, groups=groups, stride=(1,) * n, dilation=dilation, pads=no_pad)
    # the batch is summed in two steps, per chunk of batch elements first: one chunk's windows and gradient stay in
    # cache while the kernel's tiles (co, ci, kh, kw) reread them
    per = max(1, min(bs, WEIGHT_GRAD_CHUNK // max(1, math.prod(o_))))
    chunks = bs // per if bs and bs % per == 0 else 1
    # dw is computed as (groups, C_in/groups, *k, C_out/groups), output channels innermost: the kernel is a matmul
    # whose vector lanes run along output channels of the gradient, moved last (a copy); the windows are broadcast
    cout_g = cout // groups
    gt = g.reshape(bs, groups, cout_g, *o_).permute(0, *range(3, 3 + n), 1, 2).contiguous()  # (N, *o, G, C_out/G)
    gt = gt.reshape(chunks, bs // chunks, *o_, groups, 1, *([1] * n), cout_g)
    xw = _padded(x, pads)._pool(k_, stride, dilation)  # (N, C_in, *o, *k)
    xw = xw.reshape(bs, groups, cin_g, *o_, *k_).permute(0, *range(3, 3 + n), 1, 2, *range(3 + n, 3 + 2 * n))
    xw = xw.reshape(chunks, bs // chunks, *o_, groups, cin_g, *k_, 1)
    dw = (xw * gt).sum(tuple(range(1, 2 + n))).sum(0)  # (G, C_in/G, *k, C_out/G)
    dw = dw.permute(0, 2 + n, 1, *range(2, 2 + n)).reshape(cout, cin_g, *k_)
    return dx, dw


WEIGHT_GRAD_CHUNK = 4096  # batch x output positions summed per chunk by the weight gradient's first kernel


@functools.cache
def _conv_function():  # noqa: ANN202 - a unigrad.function (imported late: function.py imports tensor.py)
    """The convolution as a traced function with its own gradient rule (created on first use)."""
    from unigrad.function import function

    return function(_conv_forward, backward=_conv_backward)


def _empty_axis(x: Tensor, axis: int, op: str) -> bool:
    """Whether `axis` of x has no element (an axis out of range raises, naming op)."""
    return any(isinstance(n := x.shape[a], int) and n == 0 for a in x._axes(axis, op))
