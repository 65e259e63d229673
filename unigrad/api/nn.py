"""NNMixin: neural-network functional ops, composed from core Tensor ops (see unigrad/api/__init__.py).

Convolution and pooling share one movement-only helper, `_pool`, that turns each spatial dim of size i into
an (output, kernel) pair of dims with index math alone (expand, reshape, shrink), so a convolution is one
broadcast multiply and one sum: a single fused reduce kernel, with no im2col buffer.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from unigrad.dtype import dtypes

if TYPE_CHECKING:
    from unigrad.tensor import Tensor


def _tuple(x: int | Sequence[int], n: int, name: str) -> tuple[int, ...]:
    t = (x,) * n if isinstance(x, int) else tuple(x)
    if len(t) != n:
        raise RuntimeError(f"{name}: expected an int or {n} ints, got {x!r}")
    return t


def _out_size(i: int, k: int, s: int, d: int) -> int:
    return (i - d * (k - 1) - 1) // s + 1


class NNMixin:
    """Mixed into Tensor."""

    __slots__ = ()

    # ---------------------------------------------------------------- activations over an axis
    def softmax(self: Tensor, axis: int = -1, dtype: object = None) -> Tensor:
        x = self if dtype is None else self.cast(dtype)
        x = x._float()
        e = (x - x.max(axis, keepdim=True)).exp()
        return e / e.sum(axis, keepdim=True)

    def log_softmax(self: Tensor, axis: int = -1, dtype: object = None) -> Tensor:
        x = self if dtype is None else self.cast(dtype)
        x = x._float()
        shifted = x - x.max(axis, keepdim=True)
        return shifted - shifted.exp().sum(axis, keepdim=True).log()

    # ---------------------------------------------------------------- layers as functions
    def linear(self: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
        """x @ weight + bias, with weight of shape (in, out) as tinygrad's Tensor.linear (1-D: elementwise)."""
        x = self * weight if weight.ndim == 1 else self.dot(weight)
        return x if bias is None else x + bias

    def layernorm(self: Tensor, axis: int | tuple[int, ...] = -1, eps: float = 1e-5) -> Tensor:
        """Normalize over `axis` to zero mean and unit variance (biased variance, as torch's layer_norm)."""
        x = self._float()
        y = x - x.mean(axis, keepdim=True)
        return y * ((y * y).mean(axis, keepdim=True) + eps).sqrt().reciprocal()

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
        """int64 one-hot of an integer tensor along a new last axis (num_classes=-1: max + 1)."""
        from unigrad.tensor import Tensor

        if self.dtype.is_float or self.dtype.is_bool:
            raise RuntimeError(f"one_hot: expected an integer tensor, got {self.dtype}")
        n = int(self.max().item()) + 1 if num_classes == -1 else num_classes
        classes = Tensor.arange(n, device=self.device)
        return (self.unsqueeze(-1) == classes).cast(dtypes.int64)

    # ---------------------------------------------------------------- losses
    @staticmethod
    def _reduce_loss(loss: Tensor, reduction: str, op: str) -> Tensor:
        if reduction == "mean":
            return loss.mean()
        if reduction == "sum":
            return loss.sum()
        if reduction == "none":
            return loss
        raise ValueError(f"{op}: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")

    def cross_entropy(self: Tensor, Y: Tensor, reduction: str = "mean", label_smoothing: float = 0.0) -> Tensor:
        """Logits (N, C) or (C,) against class indices or class probabilities, as torch.nn.functional."""
        axis = 1 if self.ndim > 1 else 0
        logp = self.log_softmax(axis)
        target = Y if Y.dtype.is_float else Y.one_hot(self.shape[axis]).cast(logp.dtype)
        if Y.dtype.is_float is False and axis == 1 and self.ndim > 2:  # (N, C, d...): classes on axis 1
            target = target.permute(0, target.ndim - 1, *range(1, target.ndim - 1))
        if label_smoothing:
            target = target * (1 - label_smoothing) + label_smoothing / self.shape[axis]
        return NNMixin._reduce_loss(-(logp * target).sum(axis), reduction, "cross_entropy")

    def nll_loss(self: Tensor, Y: Tensor, reduction: str = "mean", ignore_index: int | None = None) -> Tensor:
        """Log-probabilities (N, C) against class indices; the mean is over targets not ignored."""
        axis = 1 if self.ndim > 1 else 0
        mask = Y.one_hot(self.shape[axis]).cast(self.dtype)
        if self.ndim > 2:
            mask = mask.permute(0, mask.ndim - 1, *range(1, mask.ndim - 1))
        picked = -(self * mask).sum(axis)
        if ignore_index is None:
            return NNMixin._reduce_loss(picked, reduction, "nll_loss")
        keep = (Y != ignore_index).cast(self.dtype)
        picked = picked * keep
        if reduction == "mean":
            return picked.sum() / keep.sum()
        return NNMixin._reduce_loss(picked, reduction, "nll_loss")

    def sparse_categorical_crossentropy(
        self: Tensor, Y: Tensor, ignore_index: int = -1, label_smoothing: float = 0.0, reduction: str = "mean"
    ) -> Tensor:
        """tinygrad's name: logits (..., C) against integer labels (...); labels == ignore_index don't count."""
        logp = self.log_softmax(-1)
        n = self.shape[-1]
        keep = (Y != ignore_index).cast(logp.dtype)
        onehot = (Y.unsqueeze(-1) == self._class_range(n)).cast(logp.dtype)
        smooth = -(logp.mean(-1)) * label_smoothing
        loss = (-(logp * onehot).sum(-1) * (1 - label_smoothing) + smooth) * keep
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

    def binary_crossentropy_logits(self: Tensor, Y: Tensor, reduction: str = "mean") -> Tensor:
        """Stable: max(x, 0) - x*y + log(1 + exp(-|x|))."""
        x = self._float()
        loss = x.maximum(0) - x * Y + (1 + (-x.abs()).exp()).log()
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
    ) -> Tensor:
        """softmax(q @ k^T / sqrt(d) + mask) @ v; a bool mask keeps True positions, a float mask is added."""
        if dropout_p:
            raise NotImplementedError("scaled_dot_product_attention: dropout_p needs random numbers (not yet)")
        scores = self.dot(key.transpose(-1, -2)) * (1 / math.sqrt(self.shape[-1]))
        if is_causal:
            lq, lk = self.shape[-2], key.shape[-2]
            rows = self._class_range(lq).reshape(lq, 1)
            cols = self._class_range(lk).reshape(1, lk)
            scores = (cols <= rows).where(scores, -math.inf)
        if attn_mask is not None:
            scores = attn_mask.where(scores, -math.inf) if attn_mask.dtype is dtypes.bool else scores + attn_mask
        return scores.softmax(-1).dot(value)

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
        *k) -> (N, C_out, *o): the pooled input times the weight, summed over (C_in/groups, *k)."""
        n = weight.ndim - 2
        (bs, cin), spatial = self.shape[:2], self.shape[2:]
        cout, cin_g, k_ = weight.shape[0], weight.shape[1], weight.shape[2:]
        if len(spatial) != n or cin != cin_g * groups or cout % groups:
            raise RuntimeError(
                f"conv: input {self.shape} and weight {weight.shape} with groups={groups} do not match "
                f"(expected input (N, {cin_g * groups}, {n} spatial dims) and C_out divisible by groups)"
            )
        s_, d_ = _tuple(stride, n, "conv stride"), _tuple(dilation, n, "conv dilation")
        pads = self._conv_padding(padding, k_, d_)
        x = self.pad(((0, 0), (0, 0), *pads)) if any(p != (0, 0) for p in pads) else self
        x = x._pool(k_, s_, d_)  # (N, C_in, *o, *k)
        o_ = x.shape[2 : 2 + n]
        x = x.reshape(bs, groups, 1, cin_g, *o_, *k_)
        w = weight.reshape(1, groups, cout // groups, cin_g, *([1] * n), *k_)
        axes = (3, *range(4 + n, 4 + 2 * n))
        out = (x * w).sum(axes).reshape(bs, cout, *o_)
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
        convolution with the flipped kernel and in/out channels swapped; weight (C_in, C_out/groups, *k)."""
        n = weight.ndim - 2
        s_, d_ = _tuple(stride, n, "conv_transpose stride"), _tuple(dilation, n, "conv_transpose dilation")
        p_, op_ = _tuple(padding, n, "conv_transpose padding"), _tuple(output_padding, n, "output_padding")
        cin, cout_g, k_ = weight.shape[0], weight.shape[1], weight.shape[2:]
        w = (
            weight.reshape(groups, cin // groups, cout_g, *k_)
            .transpose(1, 2)
            .reshape(groups * cout_g, cin // groups, *k_)
        )
        w = w.flip(*range(2, 2 + n))
        x = self
        if any(s > 1 for s in s_):  # insert s-1 zeros between elements along each spatial dim
            bs, c, sp = x.shape[0], x.shape[1], x.shape[2:]
            x = x.reshape(bs, c, *[v for i in sp for v in (i, 1)])
            x = x.pad(((0, 0), (0, 0), *[p for s in s_ for p in ((0, 0), (0, s - 1))]))
            x = x.reshape(bs, c, *[i * s for i, s in zip(sp, s_)])
            x = x.shrink(((0, bs), (0, c), *[(0, i * s - (s - 1)) for i, s in zip(sp, s_)]))
        pads = [(d * (k - 1) - p, d * (k - 1) - p + o) for k, d, p, o in zip(k_, d_, p_, op_)]
        return x.conv2d(w, bias, groups=groups, dilation=d_, padding=[v for pr in reversed(pads) for v in pr])

    def _pool_args(
        self: Tensor, kernel_size: object, stride: object, dilation: object, padding: object, name: str
    ) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], list]:
        k_ = _tuple(kernel_size, 2, f"{name} kernel_size")  # type: ignore[arg-type]
        s_ = k_ if stride is None else _tuple(stride, 2, f"{name} stride")  # type: ignore[arg-type]
        d_ = _tuple(dilation, 2, f"{name} dilation")  # type: ignore[arg-type]
        pads = [(p, p) for p in _tuple(padding, 2, f"{name} padding")]  # type: ignore[arg-type]
        return k_, s_, d_, pads

    def avg_pool2d(
        self: Tensor,
        kernel_size: int | tuple[int, int] = (2, 2),
        stride: int | tuple[int, int] | None = None,
        dilation: int | tuple[int, int] = 1,
        padding: int | tuple[int, int] = 0,
        count_include_pad: bool = True,
    ) -> Tensor:
        k_, s_, d_, pads = self._pool_args(kernel_size, stride, dilation, padding, "avg_pool2d")
        lead = [(0, 0)] * (self.ndim - 2)
        x = self._float().pad((*lead, *pads))._pool(k_, s_, d_)
        total = x.sum((-2, -1))
        if count_include_pad or all(p == (0, 0) for p in pads):
            return total / (k_[0] * k_[1])
        ones = self._float().ones_like().pad((*lead, *pads))._pool(k_, s_, d_)
        return total / ones.sum((-2, -1))

    def max_pool2d(
        self: Tensor,
        kernel_size: int | tuple[int, int] = (2, 2),
        stride: int | tuple[int, int] | None = None,
        dilation: int | tuple[int, int] = 1,
        padding: int | tuple[int, int] = 0,
    ) -> Tensor:
        k_, s_, d_, pads = self._pool_args(kernel_size, stride, dilation, padding, "max_pool2d")
        lead = [(0, 0)] * (self.ndim - 2)
        fill = -math.inf if self.dtype.is_float else self.dtype.min
        return self.pad((*lead, *pads), value=fill)._pool(k_, s_, d_).max((-2, -1))
