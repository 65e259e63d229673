"""unigrad.nn: layers as plain classes with `__call__`, their parameters Tensor attributes.

A layer's parameters and buffers are found by walking its attributes (unigrad.nn.state), so their names are
PyTorch's state-dict keys (weight, bias, running_mean, ...) and their layouts PyTorch's: Linear's weight is
(out, in), a convolution's (C_out, C_in/groups, *k), a transposed convolution's (C_in, C_out/groups, *k).
Initializations follow torch.nn's defaults. Train-time behaviour (batch statistics, dropout) is gated by the
class-wide flag `Tensor.training`, as in tinygrad.

Parameters start with requires_grad None (an optimizer turns it on, as tinygrad's do); buffers (running
statistics) have requires_grad False. Constant-initialized tensors get their own buffer (copied in), so two
layers never share one: hash-consing would make two lazy Tensor.ones(n) the same node.
"""

from __future__ import annotations

from typing import Any

import math
from collections.abc import Sequence

import numpy as np

from unigrad.dtype import DType, dtypes
from unigrad.tensor import Tensor

__all__ = [
    "Linear",
    "Conv1d",
    "Conv2d",
    "ConvTranspose1d",
    "ConvTranspose2d",
    "BatchNorm",
    "BatchNorm1d",
    "BatchNorm2d",
    "BatchNorm3d",
    "LayerNorm",
    "RMSNorm",
    "GroupNorm",
    "InstanceNorm",
    "InstanceNorm1d",
    "InstanceNorm2d",
    "Embedding",
    "LSTMCell",
    "Dropout",
]


def _filled(shape: int | Sequence[int], value: float, dtype: DType = dtypes.float32) -> Tensor:
    """A tensor with its own buffer holding `value` (copied in: no kernel, and never shared with another)."""
    return Tensor(np.full(shape, value, dtype=dtype.fmt))


def _buffer(shape: int | Sequence[int], value: float, dtype: DType = dtypes.float32) -> Tensor:
    """A state tensor that is not trained (running statistics): requires_grad False keeps optimizers off it."""
    return _filled(shape, value, dtype).requires_grad_(False)


def _ntuple(x: int | Sequence[int], n: int) -> tuple[int, ...]:
    return (x,) * n if isinstance(x, int) else tuple(x)


def _uniform_bound(shape: tuple[int, ...], bound: float) -> Tensor:
    return Tensor.uniform(*shape, low=-bound, high=bound)


def _fan_in(shape: tuple[int, ...]) -> int:
    """torch.nn.init's fan_in: dim 1 times the receptive field (dims 2...)."""
    return shape[1] * math.prod(shape[2:]) if len(shape) > 1 else shape[0]


# ---------------------------------------------------------------- linear and convolutions


class Linear:
    """y = x @ weight.T + bias, weight (out_features, in_features)."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True):
        bound = 1 / math.sqrt(in_features) if in_features else 0.0
        self.weight = Tensor.kaiming_uniform(out_features, in_features, a=math.sqrt(5))
        self.bias = _uniform_bound((out_features,), bound) if bias else None

    def __call__(self, x: Tensor) -> Tensor:
        return x.linear(self.weight.T, self.bias)


class _ConvNd:
    """Shared by Conv1d/Conv2d: weight (C_out, C_in/groups, *kernel_size)."""

    ndim = 2

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: int | Sequence[int],
        stride: int | Sequence[int] = 1,
        padding: int | Sequence[int] | str = 0,
        dilation: int | Sequence[int] = 1,
        groups: int = 1,
        bias: bool = True,
        padding_mode: str = "zeros",
    ):
        if in_channels % groups or out_channels % groups:
            raise ValueError(f"{type(self).__name__}: in_channels and out_channels must be divisible by groups")
        if padding_mode not in ("zeros", "reflect", "replicate", "circular"):
            raise ValueError(f"{type(self).__name__}: padding_mode must be zeros, reflect, replicate or circular")
        n = self.ndim
        self.kernel_size = _ntuple(kernel_size, n)
        self.stride, self.dilation = _ntuple(stride, n), _ntuple(dilation, n)
        self.padding = padding if isinstance(padding, str) else _ntuple(padding, n)
        self.groups, self.padding_mode = groups, padding_mode
        shape = (out_channels, in_channels // groups, *self.kernel_size)
        fan_in = _fan_in(shape)
        self.weight = Tensor.kaiming_uniform(*shape, a=math.sqrt(5))
        self.bias = _uniform_bound((out_channels,), 1 / math.sqrt(fan_in)) if bias else None

    def _pads(self) -> list[tuple[int, int]]:
        """(before, after) per spatial dim for the explicit padding of a non-zeros padding_mode."""
        if self.padding == "valid":
            return [(0, 0)] * self.ndim
        if self.padding == "same":
            total = [d * (k - 1) for k, d in zip(self.kernel_size, self.dilation)]
            return [(t // 2, t - t // 2) for t in total]
        return [(p, p) for p in self.padding]  # type: ignore[union-attr]

    def __call__(self, x: Tensor) -> Tensor:
        padding = self.padding
        if self.padding_mode != "zeros":
            x = x.pad([(0, 0)] * (x.ndim - self.ndim) + self._pads(), mode=self.padding_mode)
            padding = 0
        return x.conv2d(
            self.weight, self.bias, groups=self.groups, stride=self.stride, dilation=self.dilation, padding=padding
        )


class Conv1d(_ConvNd):
    """x (N, C_in, L) -> (N, C_out, L_out); weight (C_out, C_in/groups, k)."""

    ndim = 1


class Conv2d(_ConvNd):
    """x (N, C_in, H, W) -> (N, C_out, H_out, W_out); weight (C_out, C_in/groups, kh, kw)."""

    ndim = 2


class _ConvTransposeNd:
    """Shared by ConvTranspose1d/2d: weight (C_in, C_out/groups, *kernel_size)."""

    ndim = 2

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: int | Sequence[int],
        stride: int | Sequence[int] = 1,
        padding: int | Sequence[int] = 0,
        output_padding: int | Sequence[int] = 0,
        groups: int = 1,
        bias: bool = True,
        dilation: int | Sequence[int] = 1,
    ):
        if in_channels % groups or out_channels % groups:
            raise ValueError(f"{type(self).__name__}: in_channels and out_channels must be divisible by groups")
        n = self.ndim
        self.kernel_size = _ntuple(kernel_size, n)
        self.stride, self.padding = _ntuple(stride, n), _ntuple(padding, n)
        self.output_padding, self.dilation = _ntuple(output_padding, n), _ntuple(dilation, n)
        self.groups = groups
        shape = (in_channels, out_channels // groups, *self.kernel_size)
        fan_in = _fan_in(shape)  # torch computes it from the weight as laid out: C_out/groups * prod(k)
        self.weight = Tensor.kaiming_uniform(*shape, a=math.sqrt(5))
        self.bias = _uniform_bound((out_channels,), 1 / math.sqrt(fan_in)) if bias else None

    def __call__(self, x: Tensor) -> Tensor:
        return x.conv_transpose2d(
            self.weight,
            self.bias,
            groups=self.groups,
            stride=self.stride,
            dilation=self.dilation,
            padding=self.padding,
            output_padding=self.output_padding,
        )


class ConvTranspose1d(_ConvTransposeNd):
    ndim = 1


class ConvTranspose2d(_ConvTransposeNd):
    ndim = 2


# ---------------------------------------------------------------- normalization


def _channel_shape(x: Tensor) -> tuple[int, ...]:
    """(1, C, 1, ...): a per-channel vector broadcast against x (N, C, *)."""
    return (1, x.shape[1]) + (1,) * (x.ndim - 2)


def _running_update(running: Tensor, batch: Tensor, factor: float | Tensor) -> Tensor:
    """(1 - factor) * running + factor * batch, written into `running` (lazily: it runs with the next
    realize that reaches it, or with the next optimizer step)."""
    return running.assign((1 - factor) * running + factor * batch.detach())


def _init_channel_norm(
    m: Any, num_features: int, eps: float, momentum: float | None, affine: bool, track_running_stats: bool
) -> None:
    """The parameters and running buffers shared by BatchNorm and InstanceNorm (torch's names and inits)."""
    m.num_features, m.eps, m.momentum = num_features, eps, momentum
    m.affine, m.track_running_stats = affine, track_running_stats
    m.weight = _filled(num_features, 1.0) if affine else None
    m.bias = _filled(num_features, 0.0) if affine else None
    m.running_mean = _buffer(num_features, 0.0) if track_running_stats else None
    m.running_var = _buffer(num_features, 1.0) if track_running_stats else None
    m.num_batches_tracked = _buffer((), 0, dtypes.int64) if track_running_stats else None


class BatchNorm:
    """Normalize each channel (dim 1) of x (N, C, *) by batch statistics when `Tensor.training` is set (and
    update the running statistics), by the running statistics otherwise; torch's BatchNorm1d/2d/3d.

    The running variance takes the unbiased batch variance; momentum None means a cumulative average
    (factor 1/num_batches_tracked). Without track_running_stats there are no running buffers and batch
    statistics are used in eval mode too."""

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
    ):
        _init_channel_norm(self, num_features, eps, momentum, affine, track_running_stats)

    def _check_input(self, x: Tensor) -> None:
        if x.ndim < 2 or x.shape[1] != self.num_features:
            raise ValueError(f"{type(self).__name__}: expected input (N, {self.num_features}, *), got shape {x.shape}")

    def __call__(self, x: Tensor) -> Tensor:
        self._check_input(x)
        if Tensor.training or self.running_mean is None:
            axes = tuple(i for i in range(x.ndim) if i != 1)
            n = x.numel() // x.shape[1]
            if Tensor.training and n <= 1:
                raise ValueError(f"{type(self).__name__}: expected more than 1 value per channel when training")
            mean = x.mean(axes)
            centered = x - mean.reshape(_channel_shape(x))
            var = (centered * centered).mean(axes)  # biased: what the batch is normalized by
            if Tensor.training and self.running_mean is not None:
                self._update_running(mean, var * (n / (n - 1)))
        else:
            mean, var = self.running_mean, self.running_var  # type: ignore[assignment]
        return x.batchnorm(self.weight, self.bias, mean, (var + self.eps).rsqrt())

    def _update_running(self, mean: Tensor, unbiased_var: Tensor) -> None:
        assert self.running_mean is not None and self.running_var is not None and self.num_batches_tracked is not None
        tracked = self.num_batches_tracked + 1
        factor = self.momentum if self.momentum is not None else 1 / tracked.cast(dtypes.float32)
        _running_update(self.running_mean, mean, factor)
        _running_update(self.running_var, unbiased_var, factor)
        self.num_batches_tracked.assign(tracked)


class BatchNorm1d(BatchNorm):
    """x (N, C) or (N, C, L)."""

    def _check_input(self, x: Tensor) -> None:
        if x.ndim not in (2, 3):
            raise ValueError(f"BatchNorm1d: expected 2D or 3D input, got shape {x.shape}")
        super()._check_input(x)


class BatchNorm2d(BatchNorm):
    """x (N, C, H, W)."""

    def _check_input(self, x: Tensor) -> None:
        if x.ndim != 4:
            raise ValueError(f"BatchNorm2d: expected 4D input, got shape {x.shape}")
        super()._check_input(x)


class BatchNorm3d(BatchNorm):
    """x (N, C, D, H, W)."""

    def _check_input(self, x: Tensor) -> None:
        if x.ndim != 5:
            raise ValueError(f"BatchNorm3d: expected 5D input, got shape {x.shape}")
        super()._check_input(x)


class LayerNorm:
    """Normalize over the trailing `normalized_shape` dims (biased variance), then * weight + bias."""

    def __init__(
        self,
        normalized_shape: int | Sequence[int],
        eps: float = 1e-5,
        elementwise_affine: bool = True,
        bias: bool = True,
    ):
        self.normalized_shape = _ntuple(normalized_shape, 1)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        self.weight = _filled(self.normalized_shape, 1.0) if elementwise_affine else None
        self.bias = _filled(self.normalized_shape, 0.0) if elementwise_affine and bias else None

    def __call__(self, x: Tensor) -> Tensor:
        n = len(self.normalized_shape)
        if x.shape[-n:] != self.normalized_shape:
            raise ValueError(f"LayerNorm: expected input (*, {self.normalized_shape}), got shape {x.shape}")
        x = x.layernorm(axis=tuple(range(-n, 0)), eps=self.eps)
        if self.weight is not None:
            x = x * self.weight
        return x if self.bias is None else x + self.bias


_MACHINE_EPS = {dtypes.float16: 2.0**-10, dtypes.bfloat16: 2.0**-7, dtypes.float32: 2.0**-23, dtypes.float64: 2.0**-52}


class RMSNorm:
    """x / sqrt(mean(x^2 over the trailing normalized_shape dims) + eps) * weight; eps None means the machine
    epsilon of x's dtype (torch.nn.RMSNorm)."""

    def __init__(
        self, normalized_shape: int | Sequence[int], eps: float | None = None, elementwise_affine: bool = True
    ):
        self.normalized_shape = _ntuple(normalized_shape, 1)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        self.weight = _filled(self.normalized_shape, 1.0) if elementwise_affine else None

    def __call__(self, x: Tensor) -> Tensor:
        n = len(self.normalized_shape)
        if x.shape[-n:] != self.normalized_shape:
            raise ValueError(f"RMSNorm: expected input (*, {self.normalized_shape}), got shape {x.shape}")
        eps = self.eps if self.eps is not None else _MACHINE_EPS.get(x.dtype, _MACHINE_EPS[dtypes.float32])
        x = x * ((x * x).mean(tuple(range(-n, 0)), keepdim=True) + eps).rsqrt()
        return x if self.weight is None else x * self.weight


class GroupNorm:
    """Split the C channels of x (N, C, *) into num_groups groups, normalize each (N, group) over its channels
    and spatial positions, then per-channel * weight + bias."""

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True):
        if num_channels % num_groups:
            raise ValueError(f"GroupNorm: num_channels ({num_channels}) must be divisible by num_groups ({num_groups})")
        self.num_groups, self.num_channels, self.eps, self.affine = num_groups, num_channels, eps, affine
        self.weight = _filled(num_channels, 1.0) if affine else None
        self.bias = _filled(num_channels, 0.0) if affine else None

    def __call__(self, x: Tensor) -> Tensor:
        if x.ndim < 2 or x.shape[1] != self.num_channels:
            raise ValueError(f"GroupNorm: expected input (N, {self.num_channels}, *), got shape {x.shape}")
        y = x.reshape(x.shape[0], self.num_groups, -1).layernorm(-1, self.eps).reshape(x.shape)
        if self.weight is None:
            return y
        return y * self.weight.reshape(_channel_shape(x)) + self.bias.reshape(_channel_shape(x))  # type: ignore[union-attr]


class InstanceNorm:
    """Normalize each (sample, channel) of x (N, C, *) over its spatial positions, then per-channel * weight +
    bias when affine. With track_running_stats, training updates running statistics (the batch average of
    the per-instance mean and unbiased variance; momentum None leaves them, and num_batches_tracked is not
    counted, as torch) and eval mode normalizes by them.

    `InstanceNorm` keeps tinygrad's default affine=True; InstanceNorm1d/2d have torch's affine=False."""

    spatial_dims: int | None = None  # 1d/2d: also accept an unbatched (C, *spatial) input, as torch

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = False,
    ):
        _init_channel_norm(self, num_features, eps, momentum, affine, track_running_stats)

    def __call__(self, x: Tensor) -> Tensor:
        unbatched = self.spatial_dims is not None and x.ndim == self.spatial_dims + 1
        if unbatched:
            x = x.unsqueeze(0)
        if x.ndim < 3 or x.shape[1] != self.num_features:
            raise ValueError(f"{type(self).__name__}: expected input (N, {self.num_features}, *), got {x.shape}")
        axes = tuple(range(2, x.ndim))
        cshape = _channel_shape(x)
        if Tensor.training or self.running_mean is None:
            mean = x.mean(axes, keepdim=True)
            centered = x - mean
            var = (centered * centered).mean(axes, keepdim=True)
            if Tensor.training and self.running_mean is not None and self.running_var is not None:
                n = math.prod(x.shape[2:])
                factor = self.momentum or 0.0  # as torch: no cumulative average, num_batches_tracked stays 0
                _running_update(self.running_mean, mean.mean(0).reshape(-1), factor)
                _running_update(self.running_var, (var * (n / max(n - 1, 1))).mean(0).reshape(-1), factor)
            y = centered * (var + self.eps).rsqrt()
        else:
            y = (x - self.running_mean.reshape(cshape)) * (self.running_var.reshape(cshape) + self.eps).rsqrt()  # type: ignore[union-attr]
        if self.weight is not None:
            y = y * self.weight.reshape(cshape) + self.bias.reshape(cshape)  # type: ignore[union-attr]
        return y.squeeze(0) if unbatched else y


class _InstanceNormNd(InstanceNorm):
    """InstanceNorm1d/2d: torch's defaults, affine=False and track_running_stats=False."""

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = False,
        track_running_stats: bool = False,
    ):
        super().__init__(num_features, eps, momentum, affine, track_running_stats)


class InstanceNorm1d(_InstanceNormNd):
    """x (N, C, L) or (C, L)."""

    spatial_dims = 1


class InstanceNorm2d(_InstanceNormNd):
    """x (N, C, H, W) or (C, H, W)."""

    spatial_dims = 2


class Embedding:
    """Rows of weight (num_embeddings, embedding_dim) picked by an integer index tensor: idx (*) -> (*, dim).
    weight ~ N(0, 1) (the padding_idx row zero, and it gets no gradient), as torch."""

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None):
        if padding_idx is not None and padding_idx < 0:
            padding_idx += num_embeddings
        if padding_idx is not None and not 0 <= padding_idx < num_embeddings:
            raise ValueError(f"Embedding: padding_idx must be within num_embeddings ({num_embeddings})")
        self.num_embeddings, self.embedding_dim, self.padding_idx = num_embeddings, embedding_dim, padding_idx
        weight = Tensor.randn(num_embeddings, embedding_dim)
        if padding_idx is not None:
            keep = Tensor.arange(num_embeddings).reshape(-1, 1) != padding_idx
            weight = keep.where(weight, 0.0)
        self.weight = weight

    def __call__(self, idx: Tensor) -> Tensor:
        if idx.dtype.is_float or idx.dtype.is_bool:
            raise TypeError(f"Embedding: expected an integer index tensor, got {idx.dtype}")
        out = self.weight.take_rows(idx)  # an indirect load per row: O(idx.numel() * dim)
        if self.padding_idx is None:
            return out
        trained = (idx != self.padding_idx).unsqueeze(-1)  # the padding row's value, with no gradient
        return trained.where(out, out.detach())


class LSTMCell:
    """One LSTM step: (x, (h, c)) -> (h', c') with gates i, f, g, o stacked in weight_ih (4H, I) and
    weight_hh (4H, H); every parameter ~ U(-1/sqrt(H), 1/sqrt(H)), as torch."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True):
        self.input_size, self.hidden_size = input_size, hidden_size
        bound = 1 / math.sqrt(hidden_size) if hidden_size else 0.0
        self.weight_ih = _uniform_bound((4 * hidden_size, input_size), bound)
        self.weight_hh = _uniform_bound((4 * hidden_size, hidden_size), bound)
        self.bias_ih = _uniform_bound((4 * hidden_size,), bound) if bias else None
        self.bias_hh = _uniform_bound((4 * hidden_size,), bound) if bias else None

    def __call__(self, x: Tensor, hc: tuple[Tensor, Tensor] | None = None) -> tuple[Tensor, Tensor]:
        if hc is None:
            zeros = Tensor.zeros(*x.shape[:-1], self.hidden_size, dtype=x.dtype, device=x.device)
            hc = (zeros, zeros)
        h, c = hc
        gates = x.linear(self.weight_ih.T, self.bias_ih) + h.linear(self.weight_hh.T, self.bias_hh)
        i, f, g, o = gates.chunk(4, dim=-1)
        c_new = f.sigmoid() * c + i.sigmoid() * g.tanh()
        return o.sigmoid() * c_new.tanh(), c_new


class Dropout:
    """Zero elements with probability p (scaling the rest by 1/(1-p)) while `Tensor.training` is set."""

    def __init__(self, p: float = 0.5):
        if not 0 <= p <= 1:
            raise ValueError(f"Dropout: p must be in [0, 1], got {p}")
        self.p = p

    def __call__(self, x: Tensor) -> Tensor:
        return x.dropout(self.p)
