"""unigrad.nn.activation: the activations (ReLU, GELU, Sigmoid, ..., PReLU with its learnable slope) and the
softmax family (Softmax, LogSoftmax, Softmin, Softmax2d).

Thin wrappers over unigrad.nn.functional with torch's names and constructor signatures; `inplace` is accepted
and ignored (results are new tensors, as in F)."""

from __future__ import annotations

from unigrad.nn import functional as F
from unigrad.nn._helpers import _filled
from unigrad.nn.module import Module, parameter
from unigrad.tensor import Tensor

__all__ = [
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
]


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
        self.weight = parameter(_filled(num_parameters, init))

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
