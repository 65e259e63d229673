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
        n = 2 if isinstance(kernel_size, int) else len(kernel_size)  # type: ignore[arg-type]
        k_ = _tuple(kernel_size, n, f"{name} kernel_size")  # type: ignore[arg-type]
        s_ = k_ if stride is None else _tuple(stride, n, f"{name} stride")  # type: ignore[arg-type]
        d_ = _tuple(dilation, n, f"{name} dilation")  # type: ignore[arg-type]
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
        int64 flat index (into the unpadded spatial plane, as torch) of the first maximum of each window in scan
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
        return out, hit.where(pos, plane).min(axes)

    # ---------------------------------------------------------------- einsum, resampling, unpooling
    @staticmethod
    def einsum(formula: str, *operands: Tensor | Sequence[Tensor], dtype: DType | str | None = None) -> Tensor:
        """Einstein summation as torch.einsum: explicit ('ij,jk->ik') or implicit output (the labels seen once,
        sorted), a label repeated in one operand takes the diagonal, '...' stands for broadcast dims, and labels
        of size 1 broadcast. Each operand is permuted and reshaped onto one shared label order (output labels
        first), so the whole contraction is one broadcast multiply and one sum over the trailing labels."""
        ops = list(operands[0]) if len(operands) == 1 and isinstance(operands[0], (list, tuple)) else list(operands)
        spec = _parse_einsum(formula, [t.ndim for t in ops])  # type: ignore[union-attr]
        sizes: dict[str | int, int] = {}
        views = []
        for k, (t, labels) in enumerate(zip(ops, spec.inputs)):
            t, labels = _einsum_diagonals(t, list(labels))  # type: ignore[arg-type]
            for lab, size in zip(labels, t.shape):
                seen = sizes.setdefault(lab, size)
                if size != seen and 1 not in (size, seen):
                    raise RuntimeError(
                        f"einsum: subscript {_label_name(lab)} has size {size} for operand {k} which does not "
                        f"broadcast with previously seen size {seen}"
                    )
                sizes[lab] = max(seen, size) if 1 in (size, seen) else seen
            views.append((t, labels))
        order = list(spec.output) + [lab for lab in spec.all_labels if lab not in spec.output]
        prod: Tensor | None = None
        for t, labels in views:
            t = t.permute(sorted(range(len(labels)), key=lambda a: order.index(labels[a])))
            dim_of = dict(zip(sorted(labels, key=order.index), t.shape))
            t = t.reshape(tuple(dim_of.get(lab, 1) for lab in order))  # a 1 for each label it lacks
            prod = t if prod is None else prod * t
        assert prod is not None
        out_dt = to_dtype(dtype) if dtype is not None else None
        if out_dt is not None:
            prod = prod.cast(out_dt)
        contracted = tuple(range(len(spec.output), len(order)))
        if contracted:
            keep = out_dt or (None if len(views) == 1 else prod.dtype)  # one operand: torch.sum's int64 rule
            prod = prod.sum(contracted, dtype=keep)
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
            raise NotImplementedError(f"interpolate: mode must be linear, bilinear, nearest or nearest-exact, got {mode!r}")
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
        the spatial size (o-1)*s - 2p + d*(k-1) + 1 per dim, or the last dims of output_size. A one-hot match of
        the indices against arange(plane); a position several windows chose takes their (equal) value once."""
        from unigrad.tensor import Tensor

        k_, s_, d_, pads = self._pool_args(kernel_size, stride, dilation, padding, "max_unpool2d")
        n = len(k_)
        if indices.shape != self.shape:
            raise RuntimeError(f"max_unpool2d: indices {indices.shape} must have the shape of the input {self.shape}")
        if output_size is not None:
            out_sp = tuple(output_size)[-n:]
        else:
            out_sp = tuple((o - 1) * s - 2 * p + d * (k - 1) + 1 for o, k, s, d, (p, _) in zip(self.shape[-n:], k_, s_, d_, pads))
        plane = math.prod(out_sp)
        lead = self.shape[:-n]
        vals = self.reshape(*lead, -1, 1)
        match = indices.reshape(*lead, -1, 1) == Tensor.arange(plane, dtype=indices.dtype, device=self.device)
        low = -math.inf if self.dtype.is_float else self.dtype.min
        picked = match.where(vals, low).max(-2) if vals.shape[-2] else Tensor.zeros(*lead, plane, dtype=self.dtype)
        return match.any(-2).where(picked, 0).cast(self.dtype).reshape(*lead, *out_sp)
