"""unigrad.nn.norm: the normalization layers: BatchNorm (1d/2d/3d), InstanceNorm (1d/2d/3d), LayerNorm (and
tinygrad's LayerNorm2d), RMSNorm, GroupNorm, LocalResponseNorm.

Batch and instance norms keep torch's running statistics (running_mean, running_var, num_batches_tracked) as
buffers, updated lazily in training mode; the affine weight starts at 1 and the bias at 0."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from unigrad.dtype import DType, dtypes
from unigrad.nn import functional as F
from unigrad.nn._helpers import _filled, _ntuple
from unigrad.nn.module import Module, parameter
from unigrad.tensor import Tensor

__all__ = [
    "BatchNorm",
    "BatchNorm1d",
    "BatchNorm2d",
    "BatchNorm3d",
    "LayerNorm",
    "LayerNorm2d",
    "RMSNorm",
    "GroupNorm",
    "LocalResponseNorm",
    "InstanceNorm",
    "InstanceNorm1d",
    "InstanceNorm2d",
    "InstanceNorm3d",
]


def _buffer(shape: int | Sequence[int], value: float, dtype: DType = dtypes.float32) -> Tensor:
    """A state tensor that is not trained (running statistics): requires_grad False keeps optimizers off it."""
    return _filled(shape, value, dtype).requires_grad_(False)


def _channel_shape(x: Tensor) -> tuple[int, ...]:
    """(1, C, 1, ...): a per-channel vector broadcast against x (N, C, *)."""
    return (1, x.shape[1]) + (1,) * (x.ndim - 2)


def _running_update(running: Tensor, batch: Tensor, factor: float | Tensor) -> Tensor:
    """(1 - factor) * running + factor * batch, written into `running` (lazily: it runs with the next
    realize that reaches it, or with the next optimizer step)."""
    return running.assign((1 - factor) * running + factor * batch.detach())


def _init_channel_norm(
    m: Any,
    num_features: int,
    eps: float,
    momentum: float | None,
    affine: bool,
    track_running_stats: bool,
    bias: bool = True,
) -> None:
    """The parameters and running buffers shared by BatchNorm and InstanceNorm (torch's names and inits); the
    affine bias only when `bias` too (torch's keyword-only argument)."""
    Module.__init__(m)
    m.num_features, m.eps, m.momentum = num_features, eps, momentum
    m.affine, m.track_running_stats = affine, track_running_stats
    m.weight = parameter(_filled(num_features, 1.0)) if affine else None
    m.bias = parameter(_filled(num_features, 0.0)) if affine and bias else None
    m.register_buffer("running_mean", _buffer(num_features, 0.0) if track_running_stats else None)
    m.register_buffer("running_var", _buffer(num_features, 1.0) if track_running_stats else None)
    m.register_buffer("num_batches_tracked", _buffer((), 0, dtypes.int64) if track_running_stats else None)


def _channel_norm_repr(m: Any) -> str:
    return (
        f"{m.num_features}, eps={m.eps}, momentum={m.momentum}, affine={m.affine}, bias={m.bias is not None}, "
        f"track_running_stats={m.track_running_stats}"
    )


class BatchNorm(Module):
    """Normalize each channel (dim 1) of x (N, C, *) by batch statistics in training mode (and
    update the running statistics), by the running statistics otherwise; torch's BatchNorm1d/2d/3d.

    The running variance takes the unbiased batch variance; momentum None means a cumulative average
    (factor 1/num_batches_tracked). Without track_running_stats there are no running buffers and batch
    statistics are used in eval mode too. The channel count is torch's num_features or tinygrad's `sz=`."""

    def __init__(
        self,
        num_features: int | None = None,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        *,
        bias: bool = True,
        sz: int | None = None,
    ):
        if (num_features is None) == (sz is None):
            raise TypeError(f"{type(self).__name__}: give the channel count as num_features (torch) or sz (tinygrad)")
        n = num_features if num_features is not None else sz
        _init_channel_norm(self, n, eps, momentum, affine, track_running_stats, bias)  # type: ignore[arg-type]

    def _check_input(self, x: Tensor) -> None:
        if x.ndim < 2 or x.shape[1] != self.num_features:
            raise ValueError(f"{type(self).__name__}: expected input (N, {self.num_features}, *), got shape {x.shape}")

    def forward(self, x: Tensor) -> Tensor:
        self._check_input(x)
        training = self.training
        if training or self.running_mean is None:
            axes = tuple(i for i in range(x.ndim) if i != 1)
            n = x.numel() // x.shape[1]
            if training and n <= 1:
                raise ValueError(f"{type(self).__name__}: expected more than 1 value per channel when training")
            mean = x.mean(axes)
            centered = x - mean.reshape(_channel_shape(x))
            var = (centered * centered).mean(axes)  # biased: what the batch is normalized by
            if training and self.running_mean is not None:
                self._update_running(mean, var * (n / (n - 1)))
        else:
            mean, var = self.running_mean, self.running_var  # type: ignore[assignment]
        return x.batchnorm(self.weight, self.bias, mean, (var + self.eps).rsqrt())

    def extra_repr(self) -> str:
        return _channel_norm_repr(self)

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


class LayerNorm(Module):
    """Normalize over the trailing `normalized_shape` dims (biased variance), then * weight + bias."""

    def __init__(
        self,
        normalized_shape: int | Sequence[int],
        eps: float = 1e-5,
        elementwise_affine: bool = True,
        bias: bool = True,
    ):
        super().__init__()
        self.normalized_shape = _ntuple(normalized_shape, 1)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        self.weight = parameter(_filled(self.normalized_shape, 1.0)) if elementwise_affine else None
        self.bias = parameter(_filled(self.normalized_shape, 0.0)) if elementwise_affine and bias else None

    def forward(self, x: Tensor) -> Tensor:
        n = len(self.normalized_shape)
        if x.shape[-n:] != self.normalized_shape:
            raise ValueError(f"LayerNorm: expected input (*, {self.normalized_shape}), got shape {x.shape}")
        return x._affine_layernorm(self.weight, self.bias, n, self.eps)

    def extra_repr(self) -> str:
        affine = f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}"
        return f"{self.normalized_shape}, eps={self.eps}, {affine}"


class LayerNorm2d(LayerNorm):
    """tinygrad's LayerNorm2d(channels): LayerNorm over the channels (dim 1) of x (N, C, H, W), at each position."""

    def forward(self, x: Tensor) -> Tensor:
        if x.ndim != 4:
            raise ValueError(f"LayerNorm2d: expected input (N, C, H, W), got shape {x.shape}")
        return super().forward(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


_MACHINE_EPS = {dtypes.float16: 2.0**-10, dtypes.bfloat16: 2.0**-7, dtypes.float32: 2.0**-23, dtypes.float64: 2.0**-52}


class RMSNorm(Module):
    """x / sqrt(mean(x^2 over the trailing normalized_shape dims) + eps) * weight; eps None means the machine
    epsilon of x's dtype (torch.nn.RMSNorm)."""

    def __init__(
        self, normalized_shape: int | Sequence[int], eps: float | None = None, elementwise_affine: bool = True
    ):
        super().__init__()
        self.normalized_shape = _ntuple(normalized_shape, 1)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        self.weight = parameter(_filled(self.normalized_shape, 1.0)) if elementwise_affine else None

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"

    def forward(self, x: Tensor) -> Tensor:
        n = len(self.normalized_shape)
        if x.shape[-n:] != self.normalized_shape:
            raise ValueError(f"RMSNorm: expected input (*, {self.normalized_shape}), got shape {x.shape}")
        eps = self.eps if self.eps is not None else _MACHINE_EPS.get(x.dtype, _MACHINE_EPS[dtypes.float32])
        x = x * ((x * x).mean(tuple(range(-n, 0)), keepdim=True) + eps).rsqrt()
        return x if self.weight is None else x * self.weight


class GroupNorm(Module):
    """Split the C channels of x (N, C, *) into num_groups groups, normalize each (N, group) over its channels
    and spatial positions, then per-channel * weight + bias."""

    def __init__(
        self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True, *, bias: bool = True
    ):
        super().__init__()
        if num_channels % num_groups:
            raise ValueError(f"GroupNorm: num_channels ({num_channels}) must be divisible by num_groups ({num_groups})")
        self.num_groups, self.num_channels, self.eps, self.affine = num_groups, num_channels, eps, affine
        self.weight = parameter(_filled(num_channels, 1.0)) if affine else None
        self.bias = parameter(_filled(num_channels, 0.0)) if affine and bias else None

    def forward(self, x: Tensor) -> Tensor:
        if x.ndim < 2 or x.shape[1] != self.num_channels:
            raise ValueError(f"GroupNorm: expected input (N, {self.num_channels}, *), got shape {x.shape}")
        y = x.reshape(x.shape[0], self.num_groups, -1).layernorm(-1, self.eps).reshape(x.shape)
        if self.weight is not None:
            y = y * self.weight.reshape(_channel_shape(x))
        return y if self.bias is None else y + self.bias.reshape(_channel_shape(x))

    def extra_repr(self) -> str:
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, bias={self.bias is not None}"


class LocalResponseNorm(Module):
    """Each channel divided by (k + alpha/size * sum of squares over `size` neighbouring channels)^beta."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, x: Tensor) -> Tensor:
        return F.local_response_norm(x, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class InstanceNorm(Module):
    """Normalize each (sample, channel) of x (N, C, *) over its spatial positions, then per-channel * weight +
    bias when affine. With track_running_stats, training updates running statistics (the batch average of
    the per-instance mean and unbiased variance; momentum None leaves them, and num_batches_tracked is not
    counted, as torch) and eval mode normalizes by them.

    `InstanceNorm` keeps tinygrad's default affine=True; InstanceNorm1d/2d/3d have torch's affine=False."""

    spatial_dims: int | None = None  # 1d/2d/3d: also accept an unbatched (C, *spatial) input, as torch

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = False,
        *,
        bias: bool = True,
    ):
        _init_channel_norm(self, num_features, eps, momentum, affine, track_running_stats, bias)

    def forward(self, x: Tensor) -> Tensor:
        unbatched = self.spatial_dims is not None and x.ndim == self.spatial_dims + 1
        if unbatched:
            x = x.unsqueeze(0)
        if x.ndim < 3 or x.shape[1] != self.num_features:
            raise ValueError(f"{type(self).__name__}: expected input (N, {self.num_features}, *), got {x.shape}")
        axes = tuple(range(2, x.ndim))
        cshape = _channel_shape(x)
        training = self.training
        if training or self.running_mean is None:
            mean = x.mean(axes, keepdim=True)
            centered = x - mean
            var = (centered * centered).mean(axes, keepdim=True)
            if training and self.running_mean is not None and self.running_var is not None:
                n = math.prod(x.shape[2:])
                factor = self.momentum or 0.0  # as torch: no cumulative average, num_batches_tracked stays 0
                _running_update(self.running_mean, mean.mean(0).reshape(-1), factor)
                _running_update(self.running_var, (var * (n / max(n - 1, 1))).mean(0).reshape(-1), factor)
            y = centered * (var + self.eps).rsqrt()
        else:
            y = (x - self.running_mean.reshape(cshape)) * (self.running_var.reshape(cshape) + self.eps).rsqrt()  # type: ignore[union-attr]
        if self.weight is not None:
            y = y * self.weight.reshape(cshape)
        if self.bias is not None:
            y = y + self.bias.reshape(cshape)
        return y.squeeze(0) if unbatched else y

    def extra_repr(self) -> str:
        return _channel_norm_repr(self)


class _InstanceNormNd(InstanceNorm):
    """InstanceNorm1d/2d/3d: torch's defaults, affine=False and track_running_stats=False."""

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = False,
        track_running_stats: bool = False,
        *,
        bias: bool = True,
    ):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, bias=bias)


class InstanceNorm1d(_InstanceNormNd):
    """x (N, C, L) or (C, L)."""

    spatial_dims = 1


class InstanceNorm2d(_InstanceNormNd):
    """x (N, C, H, W) or (C, H, W)."""

    spatial_dims = 2


class InstanceNorm3d(_InstanceNormNd):
    """x (N, C, D, H, W) or (C, D, H, W)."""

    spatial_dims = 3
