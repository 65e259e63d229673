"""unigrad.nn: torch.nn's layers, containers and losses as Modules (unigrad.nn.module), and tinygrad's style too.

A layer's parameters and buffers are plain Tensor attributes, found by walking its attributes (unigrad.nn.state)
or by its Module methods (parameters(), state_dict(), ...), so their names are PyTorch's state-dict keys (weight,
bias, running_mean, ...) and their layouts PyTorch's: Linear's weight is (out, in), a convolution's
(C_out, C_in/groups, *k), a transposed convolution's (C_in, C_out/groups, *k). Initializations follow torch.nn's
defaults. Train-time behaviour (batch statistics, dropout) follows each module's `training` flag, which follows
the class-wide `Tensor.training` (tinygrad's switch) until `.train()` / `.eval()` set it.

Parameters start undecided: they read requires_grad True (torch's), but track nothing until an optimizer (as
tinygrad's) or the first backward() that reaches them turns them on; buffers (running statistics) have
requires_grad False. Constant-initialized tensors get their own buffer (copied in), so two layers never share one:
hash-consing would make two lazy Tensor.ones(n) the same node.

The activation, pooling, padding, resampling and loss modules are thin wrappers over unigrad.nn.functional with
torch's names and constructor signatures; `nn.functional` and `nn.init` are importable from here. The recurrent
layers (RNN, LSTM, GRU and their cells) live in unigrad.nn.rnn.
"""

from __future__ import annotations

from typing import Any

import copy
import math
from collections.abc import Callable, Sequence

import numpy as np

from unigrad.dtype import DType, dtypes
from unigrad.nn import functional, init, optim, rnn, state, utils
from unigrad.nn import functional as F
from unigrad.nn.module import (
    Flatten,
    Identity,
    Module,
    ModuleDict,
    ModuleList,
    Parameter,
    ParameterDict,
    ParameterList,
    Sequential,
    Unflatten,
)
from unigrad.nn.rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase
from unigrad.tensor import Tensor

__all__ = [
    "Module",
    "Parameter",
    "Sequential",
    "ModuleList",
    "ModuleDict",
    "ParameterList",
    "ParameterDict",
    "Identity",
    "Flatten",
    "Unflatten",
    "Linear",
    "Bilinear",
    "Conv1d",
    "Conv2d",
    "Conv3d",
    "ConvTranspose1d",
    "ConvTranspose2d",
    "ConvTranspose3d",
    "BatchNorm",
    "BatchNorm1d",
    "BatchNorm2d",
    "BatchNorm3d",
    "LayerNorm",
    "RMSNorm",
    "GroupNorm",
    "LocalResponseNorm",
    "InstanceNorm",
    "InstanceNorm1d",
    "InstanceNorm2d",
    "InstanceNorm3d",
    "Embedding",
    "EmbeddingBag",
    "RNNCellBase",
    "RNNCell",
    "LSTMCell",
    "GRUCell",
    "RNNBase",
    "RNN",
    "LSTM",
    "GRU",
    "Dropout",
    "ReLU",
    "ReLU6",
    "SELU",
    "SiLU",
    "Mish",
    "Hardswish",
    "Hardsigmoid",
    "Sigmoid",
    "Tanh",
    "Softsign",
    "LogSigmoid",
    "Tanhshrink",
    "LeakyReLU",
    "ELU",
    "CELU",
    "GELU",
    "Hardtanh",
    "Softplus",
    "Softshrink",
    "Hardshrink",
    "Threshold",
    "GLU",
    "RReLU",
    "PReLU",
    "Softmax",
    "LogSoftmax",
    "Softmin",
    "Softmax2d",
    "CosineSimilarity",
    "PairwiseDistance",
    "MaxPool1d",
    "MaxPool2d",
    "MaxPool3d",
    "AvgPool1d",
    "AvgPool2d",
    "AvgPool3d",
    "AdaptiveAvgPool1d",
    "AdaptiveAvgPool2d",
    "AdaptiveAvgPool3d",
    "AdaptiveMaxPool1d",
    "AdaptiveMaxPool2d",
    "AdaptiveMaxPool3d",
    "LPPool1d",
    "LPPool2d",
    "LPPool3d",
    "MaxUnpool1d",
    "MaxUnpool2d",
    "MaxUnpool3d",
    "ConstantPad1d",
    "ConstantPad2d",
    "ConstantPad3d",
    "ZeroPad1d",
    "ZeroPad2d",
    "ZeroPad3d",
    "ReflectionPad1d",
    "ReflectionPad2d",
    "ReflectionPad3d",
    "ReplicationPad1d",
    "ReplicationPad2d",
    "ReplicationPad3d",
    "CircularPad1d",
    "CircularPad2d",
    "CircularPad3d",
    "Upsample",
    "UpsamplingNearest2d",
    "UpsamplingBilinear2d",
    "PixelShuffle",
    "PixelUnshuffle",
    "ChannelShuffle",
    "Unfold",
    "Fold",
    "Dropout1d",
    "Dropout2d",
    "Dropout3d",
    "AlphaDropout",
    "FeatureAlphaDropout",
    "L1Loss",
    "MSELoss",
    "CrossEntropyLoss",
    "NLLLoss",
    "BCELoss",
    "BCEWithLogitsLoss",
    "SmoothL1Loss",
    "HuberLoss",
    "KLDivLoss",
    "PoissonNLLLoss",
    "GaussianNLLLoss",
    "MarginRankingLoss",
    "HingeEmbeddingLoss",
    "SoftMarginLoss",
    "TripletMarginLoss",
    "CosineEmbeddingLoss",
    "MultiLabelSoftMarginLoss",
    "MultiMarginLoss",
    "MultiLabelMarginLoss",
    "TripletMarginWithDistanceLoss",
    "MultiheadAttention",
    "TransformerEncoderLayer",
    "TransformerEncoder",
    "TransformerDecoderLayer",
    "TransformerDecoder",
    "Transformer",
    "functional",
    "init",
    "optim",
    "rnn",
    "state",
    "utils",
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


def _conv_repr(m: Any) -> str:
    """torch's extra_repr of a convolution: the settings that differ from the defaults."""
    out = f"{m.in_channels}, {m.out_channels}, kernel_size={m.kernel_size}, stride={m.stride}"
    if m.padding != (0,) * len(m.kernel_size):
        out += f", padding={m.padding}"
    if m.dilation != (1,) * len(m.kernel_size):
        out += f", dilation={m.dilation}"
    if getattr(m, "output_padding", None) not in (None, (0,) * len(m.kernel_size)):
        out += f", output_padding={m.output_padding}"
    if m.groups != 1:
        out += f", groups={m.groups}"
    if m.bias is None:
        out += ", bias=False"
    if getattr(m, "padding_mode", "zeros") != "zeros":
        out += f", padding_mode={m.padding_mode}"
    return out


class Linear(Module):
    """y = x @ weight.T + bias, weight (out_features, in_features)."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        bound = 1 / math.sqrt(in_features) if in_features else 0.0
        self.weight = Tensor.kaiming_uniform(out_features, in_features, a=math.sqrt(5))
        self.bias = _uniform_bound((out_features,), bound) if bias else None

    def forward(self, x: Tensor) -> Tensor:
        return x.linear(self.weight.T, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class Bilinear(Module):
    """y = x1^T A x2 + b per output feature: weight (out, in1, in2), bias (out,), both ~ U(-1/sqrt(in1),
    1/sqrt(in1)) as torch."""

    def __init__(self, in1_features: int, in2_features: int, out_features: int, bias: bool = True):
        super().__init__()
        self.in1_features, self.in2_features, self.out_features = in1_features, in2_features, out_features
        bound = 1 / math.sqrt(in1_features) if in1_features else 0.0
        self.weight = _uniform_bound((out_features, in1_features, in2_features), bound)
        self.bias = _uniform_bound((out_features,), bound) if bias else None

    def forward(self, input1: Tensor, input2: Tensor) -> Tensor:
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (
            f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
            f"out_features={self.out_features}, bias={self.bias is not None}"
        )


class _ConvNd(Module):
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
        super().__init__()
        if in_channels % groups or out_channels % groups:
            raise ValueError(f"{type(self).__name__}: in_channels and out_channels must be divisible by groups")
        self.in_channels, self.out_channels = in_channels, out_channels
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

    def extra_repr(self) -> str:
        return _conv_repr(self)

    def _pads(self) -> list[tuple[int, int]]:
        """(before, after) per spatial dim for the explicit padding of a non-zeros padding_mode."""
        if self.padding == "valid":
            return [(0, 0)] * self.ndim
        if self.padding == "same":
            total = [d * (k - 1) for k, d in zip(self.kernel_size, self.dilation)]
            return [(t // 2, t - t // 2) for t in total]
        return [(p, p) for p in self.padding]  # type: ignore[union-attr]

    def forward(self, x: Tensor) -> Tensor:
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


class Conv3d(_ConvNd):
    """x (N, C_in, D, H, W) -> (N, C_out, D_out, H_out, W_out); weight (C_out, C_in/groups, kd, kh, kw)."""

    ndim = 3


class _ConvTransposeNd(Module):
    """Shared by ConvTranspose1d/2d/3d: weight (C_in, C_out/groups, *kernel_size). forward(x, output_size) picks
    the output_padding that gives output_size (spatial dims, or with the leading (N, C)), as torch; padding_mode
    can only be 'zeros', as torch."""

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
        padding_mode: str = "zeros",
    ):
        super().__init__()
        if in_channels % groups or out_channels % groups:
            raise ValueError(f"{type(self).__name__}: in_channels and out_channels must be divisible by groups")
        if padding_mode != "zeros":
            raise ValueError(f'{type(self).__name__}: only "zeros" padding mode is supported, got {padding_mode!r}')
        self.in_channels, self.out_channels = in_channels, out_channels
        n = self.ndim
        self.kernel_size = _ntuple(kernel_size, n)
        self.stride, self.padding = _ntuple(stride, n), _ntuple(padding, n)
        self.output_padding, self.dilation = _ntuple(output_padding, n), _ntuple(dilation, n)
        self.groups, self.padding_mode = groups, padding_mode
        shape = (in_channels, out_channels // groups, *self.kernel_size)
        fan_in = _fan_in(shape)  # torch computes it from the weight as laid out: C_out/groups * prod(k)
        self.weight = Tensor.kaiming_uniform(*shape, a=math.sqrt(5))
        self.bias = _uniform_bound((out_channels,), 1 / math.sqrt(fan_in)) if bias else None

    def _output_padding(self, x: Tensor, output_size: Sequence[int] | None) -> tuple[int, ...]:
        """output_padding, or the one that makes the output output_size: each size must lie in [smallest,
        smallest + stride - 1] (the smallest being that of output_padding 0)."""
        if output_size is None:
            return self.output_padding
        n, name = self.ndim, type(self).__name__
        lead = x.ndim - n
        size = tuple(output_size)
        if len(size) == lead + n:
            size = size[lead:]
        if len(size) != n:
            raise ValueError(
                f"{name}: for {x.ndim}D input, output_size must have {n} or {lead + n} elements (got {len(size)})"
            )
        smallest = [
            (i - 1) * s - 2 * p + d * (k - 1) + 1
            for i, s, p, d, k in zip(x.shape[lead:], self.stride, self.padding, self.dilation, self.kernel_size)
        ]
        largest = [m + s - 1 for m, s in zip(smallest, self.stride)]
        if any(not lo <= o <= hi for o, lo, hi in zip(size, smallest, largest)):
            raise ValueError(
                f"{name}: requested an output size of {list(size)}, but valid sizes range from {smallest} to "
                f"{largest} (for an input of {list(x.shape[lead:])})"
            )
        return tuple(o - m for o, m in zip(size, smallest))

    def forward(self, x: Tensor, output_size: Sequence[int] | None = None) -> Tensor:
        fn = getattr(F, f"conv_transpose{self.ndim}d")
        out_pad = self._output_padding(x, output_size)
        return fn(x, self.weight, self.bias, self.stride, self.padding, out_pad, self.groups, self.dilation)

    def extra_repr(self) -> str:
        return _conv_repr(self)


class ConvTranspose1d(_ConvTransposeNd):
    """x (N, C_in, L) or (C_in, L); weight (C_in, C_out/groups, k)."""

    ndim = 1


class ConvTranspose2d(_ConvTransposeNd):
    """x (N, C_in, H, W) or (C_in, H, W); weight (C_in, C_out/groups, kh, kw)."""

    ndim = 2


class ConvTranspose3d(_ConvTransposeNd):
    """x (N, C_in, D, H, W) or (C_in, D, H, W); weight (C_in, C_out/groups, kd, kh, kw)."""

    ndim = 3


# ---------------------------------------------------------------- normalization


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
    m.weight = _filled(num_features, 1.0) if affine else None
    m.bias = _filled(num_features, 0.0) if affine and bias else None
    m.running_mean = _buffer(num_features, 0.0) if track_running_stats else None
    m.running_var = _buffer(num_features, 1.0) if track_running_stats else None
    m.num_batches_tracked = _buffer((), 0, dtypes.int64) if track_running_stats else None


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
    statistics are used in eval mode too."""

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        *,
        bias: bool = True,
    ):
        _init_channel_norm(self, num_features, eps, momentum, affine, track_running_stats, bias)

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
        self.weight = _filled(self.normalized_shape, 1.0) if elementwise_affine else None
        self.bias = _filled(self.normalized_shape, 0.0) if elementwise_affine and bias else None

    def forward(self, x: Tensor) -> Tensor:
        n = len(self.normalized_shape)
        if x.shape[-n:] != self.normalized_shape:
            raise ValueError(f"LayerNorm: expected input (*, {self.normalized_shape}), got shape {x.shape}")
        x = x.layernorm(axis=tuple(range(-n, 0)), eps=self.eps)
        if self.weight is not None:
            x = x * self.weight
        return x if self.bias is None else x + self.bias

    def extra_repr(self) -> str:
        affine = f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}"
        return f"{self.normalized_shape}, eps={self.eps}, {affine}"


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
        self.weight = _filled(self.normalized_shape, 1.0) if elementwise_affine else None

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
        self.weight = _filled(num_channels, 1.0) if affine else None
        self.bias = _filled(num_channels, 0.0) if affine and bias else None

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


class Embedding(Module):
    """Rows of weight (num_embeddings, embedding_dim) picked by an integer index tensor: idx (*) -> (*, dim).
    weight ~ N(0, 1) (the padding_idx row zero, and it gets no gradient), as torch."""

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None):
        super().__init__()
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

    def forward(self, idx: Tensor) -> Tensor:
        if idx.dtype.is_float or idx.dtype.is_bool:
            raise TypeError(f"Embedding: expected an integer index tensor, got {idx.dtype}")
        F.check_rows(idx, self.weight.shape[0], "Embedding")
        out = self.weight.take_rows(idx)  # an indirect load per row: O(idx.numel() * dim)
        if self.padding_idx is None:
            return out
        trained = (idx != self.padding_idx).unsqueeze(-1)  # the padding row's value, with no gradient
        return trained.where(out, out.detach())

    def extra_repr(self) -> str:
        pad = "" if self.padding_idx is None else f", padding_idx={self.padding_idx}"
        return f"{self.num_embeddings}, {self.embedding_dim}{pad}"


class EmbeddingBag(Module):
    """The sum, mean or max of bags of embedding rows (F.embedding_bag): forward(input, offsets, per_sample_weights)
    with a 2-D input (B, L) of B bags, or a 1-D input cut at offsets -> (B, embedding_dim). weight (num_embeddings,
    embedding_dim) ~ N(0, 1), the padding_idx row zero (its entries are left out of the bags), as torch."""

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        mode: str = "mean",
        sparse: bool = False,
        _weight: Tensor | None = None,
        include_last_offset: bool = False,
        padding_idx: int | None = None,
    ):
        super().__init__()
        if padding_idx is not None and padding_idx < 0:
            padding_idx += num_embeddings
        if padding_idx is not None and not 0 <= padding_idx < num_embeddings:
            raise ValueError(f"EmbeddingBag: padding_idx must be within num_embeddings ({num_embeddings})")
        if mode not in ("sum", "mean", "max"):
            raise ValueError(f"EmbeddingBag: mode has to be one of sum, mean or max, got {mode!r}")
        self.num_embeddings, self.embedding_dim, self.padding_idx = num_embeddings, embedding_dim, padding_idx
        self.max_norm, self.norm_type, self.scale_grad_by_freq = max_norm, norm_type, scale_grad_by_freq
        self.mode, self.sparse, self.include_last_offset = mode, sparse, include_last_offset
        if _weight is not None:
            if _weight.shape != (num_embeddings, embedding_dim):
                raise ValueError(
                    f"EmbeddingBag: _weight must have shape ({num_embeddings}, {embedding_dim}), got {_weight.shape}"
                )
            self.weight = _weight
            return
        weight = Tensor.randn(num_embeddings, embedding_dim)
        if padding_idx is not None:
            weight = (Tensor.arange(num_embeddings).reshape(-1, 1) != padding_idx).where(weight, 0.0)
        self.weight = weight

    def forward(self, input: Tensor, offsets: Tensor | None = None, per_sample_weights: Tensor | None = None) -> Tensor:
        return F.embedding_bag(
            input,
            self.weight,
            offsets,
            self.max_norm,
            self.norm_type,
            self.scale_grad_by_freq,
            self.mode,
            self.sparse,
            per_sample_weights,
            self.include_last_offset,
            self.padding_idx,
        )

    def extra_repr(self) -> str:
        out = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.max_norm is not None:
            out += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            out += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq:
            out += ", scale_grad_by_freq=True"
        out += f", mode={self.mode!r}"
        return out + ("" if self.padding_idx is None else f", padding_idx={self.padding_idx}")


class Dropout(Module):
    """Zero elements with probability p (scaling the rest by 1/(1-p)) in training mode."""

    def __init__(self, p: float = 0.5, inplace: bool = False):
        super().__init__()
        if not 0 <= p <= 1:
            raise ValueError(f"Dropout: p must be in [0, 1], got {p}")
        self.p = p

    def forward(self, x: Tensor) -> Tensor:
        return F.dropout(x, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace=False"


# ---------------------------------------------------------------- thin wrappers over unigrad.nn.functional
# torch's names and constructor signatures; `inplace` is accepted and ignored (results are new tensors, as in F).


def _settings_repr(m: Module, names: Sequence[str]) -> str:
    return ", ".join(f"{k}={getattr(m, k)!r}" for k in names)


class _Unary(Module):
    """An activation without settings: forward(x) = F.<_fn>(x)."""

    _fn = ""

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def forward(self, x: Tensor) -> Tensor:
        return getattr(F, self._fn)(x)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class ReLU(_Unary):
    _fn = "relu"


class ReLU6(_Unary):
    _fn = "relu6"


class SELU(_Unary):
    _fn = "selu"


class SiLU(_Unary):
    _fn = "silu"


class Mish(_Unary):
    _fn = "mish"


class Hardswish(_Unary):
    _fn = "hardswish"


class Hardsigmoid(_Unary):
    _fn = "hardsigmoid"


class Sigmoid(_Unary):
    _fn = "sigmoid"


class Tanh(_Unary):
    _fn = "tanh"


class Softsign(_Unary):
    _fn = "softsign"


class LogSigmoid(_Unary):
    _fn = "logsigmoid"


class Tanhshrink(_Unary):
    _fn = "tanhshrink"


class LeakyReLU(Module):
    def __init__(self, negative_slope: float = 0.01, inplace: bool = False):
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, x: Tensor) -> Tensor:
        return F.leaky_relu(x, self.negative_slope)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}"


class ELU(Module):
    def __init__(self, alpha: float = 1.0, inplace: bool = False):
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, x: Tensor) -> Tensor:
        return F.elu(x, self.alpha)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}"


class CELU(ELU):
    def forward(self, x: Tensor) -> Tensor:
        return F.celu(x, self.alpha)


class GELU(Module):
    """approximate='none' (erf) or 'tanh'."""

    def __init__(self, approximate: str = "none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, x: Tensor) -> Tensor:
        return F.gelu(x, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class Hardtanh(Module):
    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False):
        super().__init__()
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace

    def forward(self, x: Tensor) -> Tensor:
        return F.hardtanh(x, self.min_val, self.max_val)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}"


class Softplus(Module):
    def __init__(self, beta: float = 1.0, threshold: float = 20.0):
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, x: Tensor) -> Tensor:
        return F.softplus(x, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class Softshrink(Module):
    def __init__(self, lambd: float = 0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, x: Tensor) -> Tensor:
        return F.softshrink(x, self.lambd)

    def extra_repr(self) -> str:
        return str(self.lambd)


class Hardshrink(Softshrink):
    def forward(self, x: Tensor) -> Tensor:
        return F.hardshrink(x, self.lambd)


class Threshold(Module):
    """x where x > threshold, else value."""

    def __init__(self, threshold: float, value: float, inplace: bool = False):
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, x: Tensor) -> Tensor:
        return F.threshold(x, self.threshold, self.value)

    def extra_repr(self) -> str:
        return f"threshold={self.threshold}, value={self.value}"


class GLU(Module):
    def __init__(self, dim: int = -1):
        super().__init__()
        self.dim = dim

    def forward(self, x: Tensor) -> Tensor:
        return F.glu(x, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class RReLU(Module):
    """Leaky ReLU with a random slope in [lower, upper] per element in training mode, their mean in eval mode."""

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3, inplace: bool = False):
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, x: Tensor) -> Tensor:
        return F.rrelu(x, self.lower, self.upper, self.training)

    def extra_repr(self) -> str:
        return f"lower={self.lower}, upper={self.upper}"


class PReLU(Module):
    """x where x > 0, else weight * x; a learnable weight (num_parameters,): one slope, or one per channel."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25):
        super().__init__()
        self.num_parameters = num_parameters
        self.weight = _filled(num_parameters, init)

    def forward(self, x: Tensor) -> Tensor:
        return F.prelu(x, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


class Softmax(Module):
    def __init__(self, dim: int | None = None):
        super().__init__()
        self.dim = dim

    def forward(self, x: Tensor) -> Tensor:
        return F.softmax(x, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class LogSoftmax(Softmax):
    def forward(self, x: Tensor) -> Tensor:
        return F.log_softmax(x, self.dim)


class Softmin(Softmax):
    def forward(self, x: Tensor) -> Tensor:
        return F.softmin(x, self.dim)


class Softmax2d(Module):
    """Softmax over the channels of (N, C, H, W) or (C, H, W)."""

    def forward(self, x: Tensor) -> Tensor:
        if x.ndim not in (3, 4):
            raise ValueError(f"Softmax2d: expected a 3-D or 4-D input, got shape {x.shape}")
        return F.softmax(x, -3)


class CosineSimilarity(Module):
    def __init__(self, dim: int = 1, eps: float = 1e-8):
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return F.cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False):
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


# ---------------------------------------------------------------- pooling


class _MaxPoolNd(Module):
    _fn = ""

    def __init__(
        self,
        kernel_size: int | Sequence[int],
        stride: int | Sequence[int] | None = None,
        padding: int | Sequence[int] = 0,
        dilation: int | Sequence[int] = 1,
        return_indices: bool = False,
        ceil_mode: bool = False,
    ):
        super().__init__()
        self.kernel_size, self.stride = kernel_size, stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def forward(self, x: Tensor) -> Any:
        fn = getattr(F, self._fn)
        return fn(x, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode, self.return_indices)

    def extra_repr(self) -> str:
        return _settings_repr(self, ("kernel_size", "stride", "padding", "dilation", "ceil_mode"))


class MaxPool1d(_MaxPoolNd):
    _fn = "max_pool1d"


class MaxPool2d(_MaxPoolNd):
    _fn = "max_pool2d"


class MaxPool3d(_MaxPoolNd):
    _fn = "max_pool3d"


class AvgPool1d(Module):
    def __init__(
        self,
        kernel_size: int | Sequence[int],
        stride: int | Sequence[int] | None = None,
        padding: int | Sequence[int] = 0,
        ceil_mode: bool = False,
        count_include_pad: bool = True,
    ):
        super().__init__()
        self.kernel_size, self.stride = kernel_size, stride if stride is not None else kernel_size
        self.padding, self.ceil_mode, self.count_include_pad = padding, ceil_mode, count_include_pad

    def forward(self, x: Tensor) -> Tensor:
        return F.avg_pool1d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad)

    def extra_repr(self) -> str:
        return _settings_repr(self, ("kernel_size", "stride", "padding"))


class AvgPool2d(Module):
    _fn = "avg_pool2d"

    def __init__(
        self,
        kernel_size: int | Sequence[int],
        stride: int | Sequence[int] | None = None,
        padding: int | Sequence[int] = 0,
        ceil_mode: bool = False,
        count_include_pad: bool = True,
        divisor_override: int | None = None,
    ):
        super().__init__()
        self.kernel_size, self.stride = kernel_size, stride if stride is not None else kernel_size
        self.padding, self.ceil_mode, self.count_include_pad = padding, ceil_mode, count_include_pad
        self.divisor_override = divisor_override

    def forward(self, x: Tensor) -> Tensor:
        return getattr(F, self._fn)(
            x,
            self.kernel_size,
            self.stride,
            self.padding,
            self.ceil_mode,
            self.count_include_pad,
            self.divisor_override,
        )

    def extra_repr(self) -> str:
        return _settings_repr(self, ("kernel_size", "stride", "padding"))


class AvgPool3d(AvgPool2d):
    _fn = "avg_pool3d"


class _AdaptiveAvgPoolNd(Module):
    _fn = ""

    def __init__(self, output_size: int | Sequence[int | None]):
        super().__init__()
        self.output_size = output_size

    def forward(self, x: Tensor) -> Tensor:
        return getattr(F, self._fn)(x, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size!r}"


class AdaptiveAvgPool1d(_AdaptiveAvgPoolNd):
    _fn = "adaptive_avg_pool1d"


class AdaptiveAvgPool2d(_AdaptiveAvgPoolNd):
    _fn = "adaptive_avg_pool2d"


class AdaptiveAvgPool3d(_AdaptiveAvgPoolNd):
    _fn = "adaptive_avg_pool3d"


class _AdaptiveMaxPoolNd(Module):
    _fn = ""

    def __init__(self, output_size: int | Sequence[int | None], return_indices: bool = False):
        super().__init__()
        self.output_size, self.return_indices = output_size, return_indices

    def forward(self, x: Tensor) -> Any:
        return getattr(F, self._fn)(x, self.output_size, self.return_indices)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size!r}"


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    _fn = "adaptive_max_pool1d"


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    _fn = "adaptive_max_pool2d"


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    _fn = "adaptive_max_pool3d"


class _LPPoolNd(Module):
    _fn = ""

    def __init__(
        self,
        norm_type: float,
        kernel_size: int | Sequence[int],
        stride: int | Sequence[int] | None = None,
        ceil_mode: bool = False,
    ):
        super().__init__()
        self.norm_type, self.kernel_size, self.stride, self.ceil_mode = norm_type, kernel_size, stride, ceil_mode

    def forward(self, x: Tensor) -> Tensor:
        return getattr(F, self._fn)(x, self.norm_type, self.kernel_size, self.stride, self.ceil_mode)

    def extra_repr(self) -> str:
        return _settings_repr(self, ("norm_type", "kernel_size", "stride", "ceil_mode"))


class LPPool1d(_LPPoolNd):
    _fn = "lp_pool1d"


class LPPool2d(_LPPoolNd):
    _fn = "lp_pool2d"


class LPPool3d(_LPPoolNd):
    _fn = "lp_pool3d"


class _MaxUnpoolNd(Module):
    """forward(input, indices, output_size=None): F.max_unpool<n>d with this module's settings."""

    ndim = 2

    def __init__(
        self,
        kernel_size: int | Sequence[int],
        stride: int | Sequence[int] | None = None,
        padding: int | Sequence[int] = 0,
    ):
        super().__init__()
        n = self.ndim
        self.kernel_size = _ntuple(kernel_size, n)
        self.stride = _ntuple(stride if stride is not None else kernel_size, n)
        self.padding = _ntuple(padding, n)

    def forward(self, input: Tensor, indices: Tensor, output_size: Sequence[int] | None = None) -> Tensor:
        fn = getattr(F, f"max_unpool{self.ndim}d")
        return fn(input, indices, self.kernel_size, self.stride, self.padding, output_size)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    ndim = 1


class MaxUnpool2d(_MaxUnpoolNd):
    ndim = 2


class MaxUnpool3d(_MaxUnpoolNd):
    ndim = 3


# ---------------------------------------------------------------- padding


class _PadNd(Module):
    """F.pad with a fixed mode over the last `_ndim` dims; padding is an int (every side) or 2*ndim ints
    (last dim first: left, right, top, bottom)."""

    _ndim, _mode = 1, "constant"

    def __init__(self, padding: int | Sequence[int]):
        super().__init__()
        pads = (padding,) * (2 * self._ndim) if isinstance(padding, int) else tuple(padding)
        if len(pads) != 2 * self._ndim:
            raise ValueError(f"{type(self).__name__}: padding must be an int or {2 * self._ndim} ints, got {padding}")
        self.padding = pads
        self.value: float | None = None

    def forward(self, x: Tensor) -> Tensor:
        return F.pad(x, self.padding, self._mode, self.value)

    def extra_repr(self) -> str:
        return f"{self.padding}" + ("" if self.value is None else f", value={self.value}")


class _ConstantPadNd(_PadNd):
    def __init__(self, padding: int | Sequence[int], value: float):
        super().__init__(padding)
        self.value = value


class ConstantPad1d(_ConstantPadNd):
    _ndim = 1


class ConstantPad2d(_ConstantPadNd):
    _ndim = 2


class ConstantPad3d(_ConstantPadNd):
    _ndim = 3


class ZeroPad1d(_PadNd):
    _ndim = 1


class ZeroPad2d(_PadNd):
    _ndim = 2


class ZeroPad3d(_PadNd):
    _ndim = 3


class ReflectionPad1d(_PadNd):
    _ndim, _mode = 1, "reflect"


class ReflectionPad2d(_PadNd):
    _ndim, _mode = 2, "reflect"


class ReflectionPad3d(_PadNd):
    _ndim, _mode = 3, "reflect"


class ReplicationPad1d(_PadNd):
    _ndim, _mode = 1, "replicate"


class ReplicationPad2d(_PadNd):
    _ndim, _mode = 2, "replicate"


class ReplicationPad3d(_PadNd):
    _ndim, _mode = 3, "replicate"


class CircularPad1d(_PadNd):
    _ndim, _mode = 1, "circular"


class CircularPad2d(_PadNd):
    _ndim, _mode = 2, "circular"


class CircularPad3d(_PadNd):
    _ndim, _mode = 3, "circular"


# ---------------------------------------------------------------- resampling and patches


class Upsample(Module):
    def __init__(
        self,
        size: int | Sequence[int] | None = None,
        scale_factor: float | Sequence[float] | None = None,
        mode: str = "nearest",
        align_corners: bool | None = None,
        recompute_scale_factor: bool | None = None,
    ):
        super().__init__()
        self.size, self.scale_factor, self.mode = size, scale_factor, mode
        self.align_corners, self.recompute_scale_factor = align_corners, recompute_scale_factor

    def forward(self, x: Tensor) -> Tensor:
        return F.interpolate(
            x, self.size, self.scale_factor, self.mode, self.align_corners, self.recompute_scale_factor
        )

    def extra_repr(self) -> str:
        what = f"scale_factor={self.scale_factor!r}" if self.scale_factor is not None else f"size={self.size!r}"
        return f"{what}, mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    def __init__(self, size: int | Sequence[int] | None = None, scale_factor: float | Sequence[float] | None = None):
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """Bilinear with align_corners=True, as torch's."""

    def __init__(self, size: int | Sequence[int] | None = None, scale_factor: float | Sequence[float] | None = None):
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)


class PixelShuffle(Module):
    """(N, C*r^2, H, W) -> (N, C, H*r, W*r)."""

    def __init__(self, upscale_factor: int):
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, x: Tensor) -> Tensor:
        return F.pixel_shuffle(x, self.upscale_factor)

    def extra_repr(self) -> str:
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """(N, C, H*r, W*r) -> (N, C*r^2, H, W)."""

    def __init__(self, downscale_factor: int):
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, x: Tensor) -> Tensor:
        return F.pixel_unshuffle(x, self.downscale_factor)

    def extra_repr(self) -> str:
        return f"downscale_factor={self.downscale_factor}"


class ChannelShuffle(Module):
    """(N, C, *) -> its channels in `groups` groups, interleaved (F.channel_shuffle)."""

    def __init__(self, groups: int):
        super().__init__()
        self.groups = groups

    def forward(self, x: Tensor) -> Tensor:
        return F.channel_shuffle(x, self.groups)

    def extra_repr(self) -> str:
        return f"groups={self.groups}"


class Unfold(Module):
    """Sliding blocks: (N, C, H, W) -> (N, C*kh*kw, L)."""

    def __init__(
        self,
        kernel_size: int | Sequence[int],
        dilation: int | Sequence[int] = 1,
        padding: int | Sequence[int] = 0,
        stride: int | Sequence[int] = 1,
    ):
        super().__init__()
        self.kernel_size, self.dilation, self.padding, self.stride = kernel_size, dilation, padding, stride

    def forward(self, x: Tensor) -> Tensor:
        return F.unfold(x, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return _settings_repr(self, ("kernel_size", "dilation", "padding", "stride"))


class Fold(Module):
    """Sliding blocks summed back: (N, C*kh*kw, L) -> (N, C, *output_size)."""

    def __init__(
        self,
        output_size: int | Sequence[int],
        kernel_size: int | Sequence[int],
        dilation: int | Sequence[int] = 1,
        padding: int | Sequence[int] = 0,
        stride: int | Sequence[int] = 1,
    ):
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, x: Tensor) -> Tensor:
        return F.fold(x, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return _settings_repr(self, ("output_size", "kernel_size", "dilation", "padding", "stride"))


# ---------------------------------------------------------------- channel dropout


class Dropout1d(Dropout):
    """Whole channels of (N, C, L) zeroed with probability p in training mode."""

    def forward(self, x: Tensor) -> Tensor:
        return F.dropout1d(x, self.p, self.training)


class Dropout2d(Dropout):
    """Whole channels of (N, C, H, W) zeroed with probability p in training mode."""

    def forward(self, x: Tensor) -> Tensor:
        return F.dropout2d(x, self.p, self.training)


class Dropout3d(Dropout):
    """Whole channels of (N, C, D, H, W) zeroed with probability p in training mode."""

    def forward(self, x: Tensor) -> Tensor:
        return F.dropout3d(x, self.p, self.training)


class AlphaDropout(Dropout):
    """Dropout for SELU networks, in training mode: a dropped element takes SELU's saturation value and the
    result is rescaled by a*y + b so that zero mean and unit variance are kept, a = ((1-p)(1 + p a'^2))^-1/2,
    b = -a a' p (a' the saturation value); F.alpha_dropout."""

    def forward(self, x: Tensor) -> Tensor:
        return F.alpha_dropout(x, self.p, self.training)


class FeatureAlphaDropout(Dropout):
    """AlphaDropout of whole channels of (N, C, *): one draw per (sample, channel); F.feature_alpha_dropout."""

    def forward(self, x: Tensor) -> Tensor:
        return F.feature_alpha_dropout(x, self.p, self.training)


# ---------------------------------------------------------------- losses


def _legacy_reduction(size_average: bool | None, reduce: bool | None, reduction: str) -> str:
    """torch's deprecated (size_average, reduce) pair overrides `reduction` when either is given."""
    if size_average is None and reduce is None:
        return reduction
    if reduce is False:
        return "none"
    return "sum" if size_average is False else "mean"


class _Loss(Module):
    def __init__(self, size_average: bool | None = None, reduce: bool | None = None, reduction: str = "mean"):
        super().__init__()
        self.reduction = _legacy_reduction(size_average, reduce, reduction)


class _WeightedLoss(_Loss):
    """A loss with a per-class `weight` buffer (in the state dict when given, as torch's)."""

    def __init__(
        self,
        weight: Tensor | None = None,
        size_average: bool | None = None,
        reduce: bool | None = None,
        reduction: str = "mean",
    ):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


class L1Loss(_Loss):
    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.l1_loss(input, target, reduction=self.reduction)


class MSELoss(_Loss):
    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.mse_loss(input, target, reduction=self.reduction)


class CrossEntropyLoss(_WeightedLoss):
    """input (N, C, *) logits, target (N, *) class indices or (N, C, *) probabilities."""

    def __init__(
        self,
        weight: Tensor | None = None,
        size_average: bool | None = None,
        ignore_index: int = -100,
        reduce: bool | None = None,
        reduction: str = "mean",
        label_smoothing: float = 0.0,
    ):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index, self.label_smoothing = ignore_index, label_smoothing

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.cross_entropy(
            input,
            target,
            weight=self.weight,
            ignore_index=self.ignore_index,
            reduction=self.reduction,
            label_smoothing=self.label_smoothing,
        )


class NLLLoss(_WeightedLoss):
    """input (N, C, *) log-probabilities, target (N, *) class indices."""

    def __init__(
        self,
        weight: Tensor | None = None,
        size_average: bool | None = None,
        ignore_index: int = -100,
        reduce: bool | None = None,
        reduction: str = "mean",
    ):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index, reduction=self.reduction)


class BCELoss(_WeightedLoss):
    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.binary_cross_entropy(input, target, weight=self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    def __init__(
        self,
        weight: Tensor | None = None,
        size_average: bool | None = None,
        reduce: bool | None = None,
        reduction: str = "mean",
        pos_weight: Tensor | None = None,
    ):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.binary_cross_entropy_with_logits(
            input, target, weight=self.weight, reduction=self.reduction, pos_weight=self.pos_weight
        )


class SmoothL1Loss(_Loss):
    def __init__(
        self, size_average: bool | None = None, reduce: bool | None = None, reduction: str = "mean", beta: float = 1.0
    ):
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    def __init__(self, reduction: str = "mean", delta: float = 1.0):
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class KLDivLoss(_Loss):
    def __init__(
        self,
        size_average: bool | None = None,
        reduce: bool | None = None,
        reduction: str = "mean",
        log_target: bool = False,
    ):
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class PoissonNLLLoss(_Loss):
    def __init__(
        self,
        log_input: bool = True,
        full: bool = False,
        size_average: bool | None = None,
        eps: float = 1e-8,
        reduce: bool | None = None,
        reduction: str = "mean",
    ):
        super().__init__(size_average, reduce, reduction)
        self.log_input, self.full, self.eps = log_input, full, eps

    def forward(self, log_input: Tensor, target: Tensor) -> Tensor:
        return F.poisson_nll_loss(
            log_input, target, log_input=self.log_input, full=self.full, eps=self.eps, reduction=self.reduction
        )


class GaussianNLLLoss(_Loss):
    def __init__(self, *, full: bool = False, eps: float = 1e-6, reduction: str = "mean"):
        super().__init__(reduction=reduction)
        self.full, self.eps = full, eps

    def forward(self, input: Tensor, target: Tensor, var: Tensor | float) -> Tensor:
        return F.gaussian_nll_loss(input, target, var, full=self.full, eps=self.eps, reduction=self.reduction)


class MarginRankingLoss(_Loss):
    def __init__(
        self,
        margin: float = 0.0,
        size_average: bool | None = None,
        reduce: bool | None = None,
        reduction: str = "mean",
    ):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1: Tensor, input2: Tensor, target: Tensor) -> Tensor:
        return F.margin_ranking_loss(input1, input2, target, margin=self.margin, reduction=self.reduction)


class HingeEmbeddingLoss(_Loss):
    def __init__(
        self,
        margin: float = 1.0,
        size_average: bool | None = None,
        reduce: bool | None = None,
        reduction: str = "mean",
    ):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.hinge_embedding_loss(input, target, margin=self.margin, reduction=self.reduction)


class SoftMarginLoss(_Loss):
    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.soft_margin_loss(input, target, reduction=self.reduction)


class TripletMarginLoss(_Loss):
    def __init__(
        self,
        margin: float = 1.0,
        p: float = 2.0,
        eps: float = 1e-6,
        swap: bool = False,
        size_average: bool | None = None,
        reduce: bool | None = None,
        reduction: str = "mean",
    ):
        super().__init__(size_average, reduce, reduction)
        self.margin, self.p, self.eps, self.swap = margin, p, eps, swap

    def forward(self, anchor: Tensor, positive: Tensor, negative: Tensor) -> Tensor:
        return F.triplet_margin_loss(
            anchor,
            positive,
            negative,
            margin=self.margin,
            p=self.p,
            eps=self.eps,
            swap=self.swap,
            reduction=self.reduction,
        )


class CosineEmbeddingLoss(_Loss):
    def __init__(
        self,
        margin: float = 0.0,
        size_average: bool | None = None,
        reduce: bool | None = None,
        reduction: str = "mean",
    ):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1: Tensor, input2: Tensor, target: Tensor) -> Tensor:
        return F.cosine_embedding_loss(input1, input2, target, margin=self.margin, reduction=self.reduction)


class MultiLabelSoftMarginLoss(_WeightedLoss):
    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.multilabel_soft_margin_loss(input, target, weight=self.weight, reduction=self.reduction)


class MultiMarginLoss(_WeightedLoss):
    def __init__(
        self,
        p: int = 1,
        margin: float = 1.0,
        weight: Tensor | None = None,
        size_average: bool | None = None,
        reduce: bool | None = None,
        reduction: str = "mean",
    ):
        super().__init__(weight, size_average, reduce, reduction)
        self.p, self.margin = p, margin

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.multi_margin_loss(
            input, target, p=self.p, margin=self.margin, weight=self.weight, reduction=self.reduction
        )


class MultiLabelMarginLoss(_Loss):
    """input (C,) or (N, C) scores, target of the same shape holding class indices, ended by the first -1."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.multilabel_margin_loss(input, target, reduction=self.reduction)


class TripletMarginWithDistanceLoss(_Loss):
    """max(d(a, p) - d(a, n) + margin, 0) with distance_function (a PairwiseDistance module by default, as torch:
    it shows in the repr)."""

    def __init__(
        self,
        *,
        distance_function: Callable[[Tensor, Tensor], Tensor] | None = None,
        margin: float = 1.0,
        swap: bool = False,
        reduction: str = "mean",
    ):
        super().__init__(reduction=reduction)
        if margin <= 0:
            raise ValueError(
                f"TripletMarginWithDistanceLoss: expected margin to be greater than 0, got {margin} instead"
            )
        self.distance_function = distance_function if distance_function is not None else PairwiseDistance()
        self.margin, self.swap = margin, swap

    def forward(self, anchor: Tensor, positive: Tensor, negative: Tensor) -> Tensor:
        return F.triplet_margin_with_distance_loss(
            anchor,
            positive,
            negative,
            distance_function=self.distance_function,
            margin=self.margin,
            swap=self.swap,
            reduction=self.reduction,
        )


# ---------------------------------------------------------------- attention


def _additive_mask(mask: Tensor | None, dtype: DType) -> Tensor | None:
    """A mask as a float bias: torch.nn.MultiheadAttention's bool masks are True where attention is *not* allowed
    (-inf there); float masks are added as they are."""
    if mask is None:
        return None
    return mask.where(-math.inf, 0.0).cast(dtype) if mask.dtype is dtypes.bool else mask.cast(dtype)


class MultiheadAttention(Module):
    """torch.nn.MultiheadAttention: heads of scaled dot-product attention between projected queries, keys and
    values, then an output projection. Inputs are (L, N, E) (or (N, L, E) with batch_first, or unbatched
    (L, E)); returns (output, weights averaged over heads, or per head, or None with need_weights=False).

    State is torch's: in_proj_weight (3E, E) stacking the q, k, v projections (q_proj_weight, k_proj_weight,
    v_proj_weight instead when kdim or vdim differ from E), in_proj_bias (3E), out_proj (a Linear). Masks are
    torch's: a bool attn_mask (L, S) or (N*H, L, S) and key_padding_mask (N, S) are True where attention is not
    allowed; float masks are added to the scores. add_bias_kv and add_zero_attn are not supported."""

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        dropout: float = 0.0,
        bias: bool = True,
        add_bias_kv: bool = False,
        add_zero_attn: bool = False,
        kdim: int | None = None,
        vdim: int | None = None,
        batch_first: bool = False,
    ):
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0 or embed_dim % num_heads:
            raise ValueError(
                f"MultiheadAttention: embed_dim ({embed_dim}) must be divisible by num_heads ({num_heads})"
            )
        if add_bias_kv or add_zero_attn:
            raise NotImplementedError("MultiheadAttention: add_bias_kv and add_zero_attn are not supported")
        self.embed_dim, self.num_heads, self.dropout, self.batch_first = embed_dim, num_heads, dropout, batch_first
        self.kdim, self.vdim = kdim or embed_dim, vdim or embed_dim
        self.head_dim = embed_dim // num_heads
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        if self._qkv_same_embed_dim:
            self.in_proj_weight = init.xavier_uniform_(Tensor.empty(3 * embed_dim, embed_dim))
        else:
            self.q_proj_weight = init.xavier_uniform_(Tensor.empty(embed_dim, embed_dim))
            self.k_proj_weight = init.xavier_uniform_(Tensor.empty(embed_dim, self.kdim))
            self.v_proj_weight = init.xavier_uniform_(Tensor.empty(embed_dim, self.vdim))
        self.in_proj_bias = _filled(3 * embed_dim, 0.0) if bias else None
        self.out_proj = Linear(embed_dim, embed_dim, bias=bias)
        if bias:
            self.out_proj.bias = _filled(embed_dim, 0.0)

    def _project(self, query: Tensor, key: Tensor, value: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        e = self.embed_dim
        if self._qkv_same_embed_dim:
            wq, wk, wv = self.in_proj_weight[:e], self.in_proj_weight[e : 2 * e], self.in_proj_weight[2 * e :]
        else:
            wq, wk, wv = self.q_proj_weight, self.k_proj_weight, self.v_proj_weight
        b = self.in_proj_bias
        bq, bk, bv = (None, None, None) if b is None else (b[:e], b[e : 2 * e], b[2 * e :])
        return query.linear(wq.T, bq), key.linear(wk.T, bk), value.linear(wv.T, bv)

    def forward(
        self,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        key_padding_mask: Tensor | None = None,
        need_weights: bool = True,
        attn_mask: Tensor | None = None,
        average_attn_weights: bool = True,
        is_causal: bool = False,
    ) -> tuple[Tensor, Tensor | None]:
        if is_causal and attn_mask is None:
            raise RuntimeError("MultiheadAttention: is_causal is a hint that attn_mask is the causal mask; pass it")
        unbatched = query.ndim == 2
        if unbatched:
            query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
            key_padding_mask = None if key_padding_mask is None else key_padding_mask.unsqueeze(0)
        elif query.ndim != 3:
            raise ValueError(f"MultiheadAttention: expected a 2-D or 3-D query, got shape {query.shape}")
        if not self.batch_first or unbatched:  # (L, N, E) -> (N, L, E)
            query, key, value = query.transpose(0, 1), key.transpose(0, 1), value.transpose(0, 1)
        if query.shape[-1] != self.embed_dim:
            raise ValueError(f"MultiheadAttention: expected embed_dim {self.embed_dim}, got query {query.shape}")
        n, lq, s, h, d = query.shape[0], query.shape[1], key.shape[1], self.num_heads, self.head_dim
        q, k, v = self._project(query, key, value)
        q, k, v = (t.reshape(n, t.shape[1], h, d).transpose(1, 2) for t in (q, k, v))  # (N, H, L|S, D)
        bias = _additive_mask(attn_mask, q.dtype)
        if bias is not None and bias.ndim == 3:
            bias = bias.reshape(n, h, lq, s)
        if (pad := _additive_mask(key_padding_mask, q.dtype)) is not None:
            pad = pad.reshape(n, 1, 1, s)
            bias = pad if bias is None else bias + pad
        dropout = self.dropout if self.training else 0.0
        if need_weights or dropout:
            scores = q.matmul(k.transpose(-2, -1)) * (1.0 / math.sqrt(d))
            weights = F.dropout((scores if bias is None else scores + bias).softmax(-1), dropout, dropout > 0)
            out = weights.matmul(v)  # the weights returned are those applied, after dropout (as torch)
        else:
            weights, out = None, F.scaled_dot_product_attention(q, k, v, attn_mask=bias)
        out = self.out_proj(out.transpose(1, 2).reshape(n, lq, self.embed_dim))
        if not self.batch_first or unbatched:
            out = out.transpose(0, 1)
        if weights is not None:
            weights = weights.mean(1) if average_attn_weights else weights
            weights = weights.squeeze(0) if unbatched else weights
        return (out.squeeze(1) if unbatched else out), (weights if need_weights else None)


_ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu}


def _activation(activation: str | Callable[[Tensor], Tensor]) -> Callable[[Tensor], Tensor]:
    """A transformer layer's activation: 'relu', 'gelu' or a callable (torch's RuntimeError for another name)."""
    if not isinstance(activation, str):
        return activation
    if activation not in _ACTIVATIONS:
        raise RuntimeError(f"activation should be relu/gelu, not {activation}")
    return _ACTIVATIONS[activation]


class TransformerEncoderLayer(Module):
    """torch.nn.TransformerEncoderLayer: self-attention then a feed-forward block (linear1, activation, dropout,
    linear2), each with dropout and a residual connection and LayerNorm after it (before it, with norm_first).
    State keys are torch's: self_attn.*, linear1.*, linear2.*, norm1.*, norm2.*."""

    def __init__(
        self,
        d_model: int,
        nhead: int,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: str | Callable[[Tensor], Tensor] = "relu",
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
    ):
        super().__init__()
        act = _activation(activation)
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.activation = act

    def _sa_block(self, x: Tensor, mask: Tensor | None, padding_mask: Tensor | None, is_causal: bool) -> Tensor:
        out = self.self_attn(
            x, x, x, attn_mask=mask, key_padding_mask=padding_mask, need_weights=False, is_causal=is_causal
        )[0]
        return self.dropout1(out)

    def _ff_block(self, x: Tensor) -> Tensor:
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))

    def forward(
        self,
        src: Tensor,
        src_mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
        is_causal: bool = False,
    ) -> Tensor:
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            return x + self._ff_block(self.norm2(x))
        x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
        return self.norm2(x + self._ff_block(x))


class TransformerEncoder(Module):
    """A stack of `num_layers` copies of `encoder_layer` (layers.0, layers.1, ...: torch's keys), then `norm`
    when given. Each copy has its own parameters (copy.deepcopy gives every module its own buffers)."""

    def __init__(
        self,
        encoder_layer: TransformerEncoderLayer,
        num_layers: int,
        norm: Module | None = None,
        enable_nested_tensor: bool = True,
        mask_check: bool = True,
    ):
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(encoder_layer) for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm

    def forward(
        self,
        src: Tensor,
        mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
        is_causal: bool | None = None,
    ) -> Tensor:
        out = src
        for layer in self.layers:
            out = layer(out, src_mask=mask, src_key_padding_mask=src_key_padding_mask, is_causal=bool(is_causal))
        return out if self.norm is None else self.norm(out)


class TransformerDecoderLayer(Module):
    """torch.nn.TransformerDecoderLayer: self-attention over tgt, attention from tgt to memory, then a feed-forward
    block (linear1, activation, dropout, linear2); each with dropout and a residual connection and LayerNorm after
    it (before it, with norm_first). State keys are torch's: self_attn.*, multihead_attn.*, linear1.*, linear2.*,
    norm1.*, norm2.*, norm3.*. The *_is_causal flags are hints that the matching mask is the causal one: the
    mask must be given with them (as torch)."""

    def __init__(
        self,
        d_model: int,
        nhead: int,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: str | Callable[[Tensor], Tensor] = "relu",
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
    ):
        super().__init__()
        act = _activation(activation)
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.activation = act

    def _sa_block(self, x: Tensor, mask: Tensor | None, padding_mask: Tensor | None, is_causal: bool) -> Tensor:
        out = self.self_attn(
            x, x, x, attn_mask=mask, key_padding_mask=padding_mask, need_weights=False, is_causal=is_causal
        )[0]
        return self.dropout1(out)

    def _mha_block(
        self, x: Tensor, mem: Tensor, mask: Tensor | None, padding_mask: Tensor | None, is_causal: bool
    ) -> Tensor:
        out = self.multihead_attn(
            x, mem, mem, attn_mask=mask, key_padding_mask=padding_mask, need_weights=False, is_causal=is_causal
        )[0]
        return self.dropout2(out)

    def _ff_block(self, x: Tensor) -> Tensor:
        return self.dropout3(self.linear2(self.dropout(self.activation(self.linear1(x)))))

    def forward(
        self,
        tgt: Tensor,
        memory: Tensor,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        tgt_is_causal: bool = False,
        memory_is_causal: bool = False,
    ) -> Tensor:
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask, memory_key_padding_mask, memory_is_causal)
            return x + self._ff_block(self.norm3(x))
        x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
        x = self.norm2(x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask, memory_is_causal))
        return self.norm3(x + self._ff_block(x))


class TransformerDecoder(Module):
    """A stack of `num_layers` copies of `decoder_layer` (layers.0, layers.1, ...: torch's keys), each attending
    to the same memory, then `norm` when given."""

    def __init__(self, decoder_layer: TransformerDecoderLayer, num_layers: int, norm: Module | None = None):
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(decoder_layer) for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm

    def forward(
        self,
        tgt: Tensor,
        memory: Tensor,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        tgt_is_causal: bool | None = None,
        memory_is_causal: bool = False,
    ) -> Tensor:
        out = tgt
        for layer in self.layers:
            out = layer(
                out,
                memory,
                tgt_mask=tgt_mask,
                memory_mask=memory_mask,
                tgt_key_padding_mask=tgt_key_padding_mask,
                memory_key_padding_mask=memory_key_padding_mask,
                tgt_is_causal=bool(tgt_is_causal),
                memory_is_causal=memory_is_causal,
            )
        return out if self.norm is None else self.norm(out)


class Transformer(Module):
    """torch.nn.Transformer: a TransformerEncoder over src (num_encoder_layers, then a LayerNorm) whose output is
    the memory of a TransformerDecoder over tgt (num_decoder_layers, then a LayerNorm); or custom_encoder /
    custom_decoder. Every parameter with more than one dim is re-drawn by xavier_uniform_, as torch. Inputs are
    (S, N, E) and (T, N, E) ((N, S, E) and (N, T, E) with batch_first, or unbatched (S, E), (T, E))."""

    def __init__(
        self,
        d_model: int = 512,
        nhead: int = 8,
        num_encoder_layers: int = 6,
        num_decoder_layers: int = 6,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: str | Callable[[Tensor], Tensor] = "relu",
        custom_encoder: Module | None = None,
        custom_decoder: Module | None = None,
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
    ):
        super().__init__()
        layer_kw: dict[str, Any] = {
            "dim_feedforward": dim_feedforward,
            "dropout": dropout,
            "activation": activation,
            "layer_norm_eps": layer_norm_eps,
            "batch_first": batch_first,
            "norm_first": norm_first,
            "bias": bias,
        }
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            enc_layer = TransformerEncoderLayer(d_model, nhead, **layer_kw)
            enc_norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
            self.encoder = TransformerEncoder(enc_layer, num_encoder_layers, enc_norm)
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            dec_layer = TransformerDecoderLayer(d_model, nhead, **layer_kw)
            dec_norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
            self.decoder = TransformerDecoder(dec_layer, num_decoder_layers, dec_norm)
        for p in self.parameters():
            if p.ndim > 1:
                init.xavier_uniform_(p)
        self.d_model, self.nhead, self.batch_first = d_model, nhead, batch_first

    def forward(
        self,
        src: Tensor,
        tgt: Tensor,
        src_mask: Tensor | None = None,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        src_is_causal: bool | None = None,
        tgt_is_causal: bool | None = None,
        memory_is_causal: bool = False,
    ) -> Tensor:
        batch_dim = 0 if self.batch_first else 1
        if src.ndim == 3 and (tgt.ndim != 3 or src.shape[batch_dim] != tgt.shape[batch_dim]):
            raise RuntimeError("the batch number of src and tgt must be equal")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise RuntimeError("the feature number of src and tgt must be equal to d_model")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask, is_causal=src_is_causal)
        return self.decoder(
            tgt,
            memory,
            tgt_mask=tgt_mask,
            memory_mask=memory_mask,
            tgt_key_padding_mask=tgt_key_padding_mask,
            memory_key_padding_mask=memory_key_padding_mask,
            tgt_is_causal=tgt_is_causal,
            memory_is_causal=memory_is_causal,
        )

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device: str | None = None, dtype: DType | None = None) -> Tensor:
        """(sz, sz) float mask: 0 where key j <= query i, -inf above the diagonal (the causal mask)."""
        pos = Tensor.arange(sz, device=device)
        above = pos.reshape(1, sz) > pos.reshape(sz, 1)
        return above.where(-math.inf, 0.0).cast(dtype or dtypes.float32)
