"""unigrad.nn.padding: the padding layers: ConstantPad, ZeroPad, ReflectionPad, ReplicationPad and CircularPad,
each in 1d/2d/3d (F.pad with a fixed mode)."""

from __future__ import annotations

from collections.abc import Sequence

from unigrad.nn import functional as F
from unigrad.nn.module import Module
from unigrad.tensor import Tensor

__all__ = [
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
]


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
