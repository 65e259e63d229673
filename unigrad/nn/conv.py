"""unigrad.nn.conv: the convolutions Conv1d/2d/3d and the transposed convolutions ConvTranspose1d/2d/3d.

Weights are laid out as torch's: a convolution's (C_out, C_in/groups, *k), a transposed convolution's
(C_in, C_out/groups, *k); both are initialized as torch.nn's (kaiming_uniform with a=sqrt(5), the bias
U(-1/sqrt(fan_in), 1/sqrt(fan_in)))."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from unigrad.nn import functional as F
from unigrad.nn._helpers import _ntuple, _uniform_bound
from unigrad.nn.module import Module, parameter
from unigrad.tensor import Tensor

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"]


def _fan_in(shape: tuple[int, ...]) -> int:
    """torch.nn.init's fan_in: dim 1 times the receptive field (dims 2...)."""
    return shape[1] * math.prod(shape[2:]) if len(shape) > 1 else shape[0]


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
        self.weight = parameter(Tensor.kaiming_uniform(*shape, a=math.sqrt(5)))
        self.bias = parameter(_uniform_bound((out_channels,), 1 / math.sqrt(fan_in))) if bias else None

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
        self.weight = parameter(Tensor.kaiming_uniform(*shape, a=math.sqrt(5)))
        self.bias = parameter(_uniform_bound((out_channels,), 1 / math.sqrt(fan_in))) if bias else None

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
