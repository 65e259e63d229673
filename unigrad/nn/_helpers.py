"""unigrad.nn._helpers: private helpers shared by several layer families: initial tensors with a buffer of their
own, int-or-tuple arguments, and the repr of a module's settings."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from unigrad.dtype import DType, dtypes
from unigrad.nn.module import Module
from unigrad.tensor import Tensor


def _filled(shape: int | Sequence[int], value: float, dtype: DType = dtypes.float32) -> Tensor:
    """A tensor with its own buffer holding `value` (copied in: no kernel, and never shared with another)."""
    return Tensor(np.full(shape, value, dtype=dtype.fmt))


def _ntuple(x: int | Sequence[int], n: int) -> tuple[int, ...]:
    return (x,) * n if isinstance(x, int) else tuple(x)


def _uniform_bound(shape: tuple[int, ...], bound: float) -> Tensor:
    return Tensor.uniform(*shape, low=-bound, high=bound)


def _settings_repr(m: Module, names: Sequence[str]) -> str:
    return ", ".join(f"{k}={getattr(m, k)!r}" for k in names)
