"""unigrad.nn.linear: the affine layers, torch's layouts and initialization: Linear (y = x @ weight.T + bias,
weight (out, in)), Bilinear (y = x1^T A x2 + b), and Identity (which torch keeps here too)."""

from __future__ import annotations

import math
from typing import Any

from unigrad.nn import functional as F
from unigrad.nn._helpers import _uniform_bound
from unigrad.nn.module import Module, parameter
from unigrad.tensor import Tensor

__all__ = ["Linear", "Bilinear", "Identity"]


class Linear(Module):
    """y = x @ weight.T + bias, weight (out_features, in_features)."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        bound = 1 / math.sqrt(in_features) if in_features else 0.0
        self.weight = parameter(Tensor.kaiming_uniform(out_features, in_features, a=math.sqrt(5)))
        self.bias = parameter(_uniform_bound((out_features,), bound)) if bias else None

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
        self.weight = parameter(_uniform_bound((out_features, in1_features, in2_features), bound))
        self.bias = parameter(_uniform_bound((out_features,), bound)) if bias else None

    def forward(self, input1: Tensor, input2: Tensor) -> Tensor:
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (
            f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
            f"out_features={self.out_features}, bias={self.bias is not None}"
        )


class Identity(Module):
    """Returns its input; constructor arguments are accepted and ignored, as torch."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__()

    def forward(self, x: Any) -> Any:
        return x
