"""unigrad.nn.init: torch.nn.init's in-place initializers.

Each function draws a new value with Tensor's random creation (Tensor.uniform / Tensor.normal, which follow
the global generator: Tensor.manual_seed), writes it into the tensor's buffer with `assign` under no_grad,
realizes it and returns the tensor: holders of the tensor (a module, an optimizer) see the new values.
Fans and gains are computed as torch.nn.init computes them: fan_in = size(1) * receptive field,
fan_out = size(0) * receptive field, the receptive field being the product of the dims after the first two.

trunc_normal_ maps a uniform draw between the bounds' CDF values through the inverse normal CDF (erfinv), as
torch does: one draw, exactly truncated. orthogonal_ orthonormalizes a normal draw by
Gram-Schmidt (twice per column, for stability) with Tensor ops: the Q of a QR factorization with R's diagonal
positive, the distribution torch's sign-corrected QR gives. dirac_ and sparse_ are not provided.
"""

from __future__ import annotations

import math

import numpy as np

from unigrad.tensor import Tensor, no_grad

__all__ = [
    "calculate_gain",
    "uniform_",
    "normal_",
    "trunc_normal_",
    "constant_",
    "ones_",
    "zeros_",
    "eye_",
    "xavier_uniform_",
    "xavier_normal_",
    "kaiming_uniform_",
    "kaiming_normal_",
    "orthogonal_",
]

_LINEAR = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d")


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended gain for a nonlinearity (torch's table): 1 for linear/conv/sigmoid, 5/3 for tanh,
    sqrt(2) for relu, sqrt(2 / (1 + slope^2)) for leaky_relu (slope `param`, default 0.01), 3/4 for selu."""
    if nonlinearity in _LINEAR or nonlinearity == "sigmoid":
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, (int, float)) and not isinstance(param, bool):
            slope = float(param)
        else:
            raise ValueError(f"calculate_gain: negative_slope {param!r} is not a valid number")
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"calculate_gain: unsupported nonlinearity {nonlinearity!r}")


def _fans(tensor: Tensor, who: str) -> tuple[int, int]:
    if tensor.ndim < 2:
        raise ValueError(
            f"{who}: fan in and fan out can not be computed for a tensor with fewer than 2 dimensions, "
            f"got shape {tensor.shape}"
        )
    receptive = math.prod(tensor.shape[2:])
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _fan(tensor: Tensor, mode: str, who: str) -> int:
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"{who}: mode {mode!r} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _fans(tensor, who)
    return fan_in if mode == "fan_in" else fan_out


def _write(tensor: Tensor, value: Tensor | float) -> Tensor:
    """Write `value` (cast to the tensor's dtype) into `tensor`, realized; returns `tensor`."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"nn.init: expected a Tensor, got {type(tensor).__name__}")
    if tensor.numel() == 0:
        return tensor
    with no_grad():
        tensor.assign(value.cast(tensor.dtype) if isinstance(value, Tensor) else value)
    return tensor.realize()


def _draw_dtype(tensor: Tensor) -> object:
    return tensor.dtype if tensor.dtype.is_float else None


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0) -> Tensor:
    """Fill with U(a, b)."""
    return _write(tensor, Tensor.uniform(*tensor.shape, low=a, high=b, dtype=_draw_dtype(tensor), device=tensor.device))


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0) -> Tensor:
    """Fill with N(mean, std^2)."""
    if std < 0:
        raise ValueError(f"normal_: std must be non-negative, got {std}")
    draw = Tensor.normal(*tensor.shape, mean=mean, std=std, dtype=_draw_dtype(tensor), device=tensor.device)
    return _write(tensor, draw)


def _normal_cdf(x: float) -> float:
    return 0.5 * (1 + math.erf(x / math.sqrt(2)))


def trunc_normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0) -> Tensor:
    """Fill with N(mean, std^2) truncated to [a, b] (absolute bounds, as torch): the inverse CDF (erfinv) of a
    uniform draw between the bounds' CDF values, clamped to [a, b] against rounding."""
    if not a < b:
        raise ValueError(f"trunc_normal_: need a < b, got a={a}, b={b}")
    if std <= 0:
        raise ValueError(f"trunc_normal_: std must be positive, got {std}")
    lo, hi = _normal_cdf((a - mean) / std), _normal_cdf((b - mean) / std)  # the bounds' places in the CDF
    u = Tensor.uniform(*tensor.shape, low=2 * lo - 1, high=2 * hi - 1, device=tensor.device)
    out = u.erfinv() * (std * math.sqrt(2.0)) + mean  # the inverse normal CDF of a uniform draw in [lo, hi]
    return _write(tensor, out.clamp(a, b))


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fill with `val`."""
    return _write(tensor, val)


def ones_(tensor: Tensor) -> Tensor:
    return _write(tensor, 1.0)


def zeros_(tensor: Tensor) -> Tensor:
    return _write(tensor, 0.0)


def eye_(tensor: Tensor) -> Tensor:
    """Fill a 2-D tensor with the identity (ones on the main diagonal)."""
    if tensor.ndim != 2:
        raise ValueError(f"eye_: only 2-D tensors are supported, got shape {tensor.shape}")
    return _write(tensor, Tensor.eye(tensor.shape[0], tensor.shape[1], device=tensor.device))


def xavier_uniform_(tensor: Tensor, gain: float = 1.0) -> Tensor:
    """U(-b, b), b = gain * sqrt(6 / (fan_in + fan_out)) (Glorot & Bengio)."""
    fan_in, fan_out = _fans(tensor, "xavier_uniform_")
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(tensor, -bound, bound)


def xavier_normal_(tensor: Tensor, gain: float = 1.0) -> Tensor:
    """N(0, std^2), std = gain * sqrt(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _fans(tensor, "xavier_normal_")
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)))


def kaiming_uniform_(tensor: Tensor, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu") -> Tensor:
    """U(-b, b), b = gain * sqrt(3 / fan) (He et al.); `a` is leaky_relu's negative slope."""
    fan = _fan(tensor, mode, "kaiming_uniform_")
    bound = math.sqrt(3.0) * calculate_gain(nonlinearity, a) / math.sqrt(fan) if fan else 0.0
    return uniform_(tensor, -bound, bound)


def kaiming_normal_(tensor: Tensor, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu") -> Tensor:
    """N(0, std^2), std = gain / sqrt(fan)."""
    fan = _fan(tensor, mode, "kaiming_normal_")
    return normal_(tensor, 0.0, calculate_gain(nonlinearity, a) / math.sqrt(fan) if fan else 0.0)


def orthogonal_(tensor: Tensor, gain: float = 1.0) -> Tensor:
    """A (semi-)orthogonal matrix (dims after the first flattened) times `gain`: orthonormal rows when there are
    fewer rows than columns, orthonormal columns otherwise."""
    if tensor.ndim < 2:
        raise ValueError(f"orthogonal_: only tensors with 2 or more dimensions are supported, got {tensor.shape}")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    a = Tensor.normal(rows, cols, device=tensor.device)
    if rows < cols:
        a = a.T
    n, k = a.shape
    a = a.contiguous().realize()
    q = Tensor(np.zeros((n, k), dtype=np.float32), device=tensor.device)
    basis = np.eye(k, dtype=np.float32)
    for j in range(k):  # one column a step; every step is the same graph (the column is picked by data, e_j)
        e = Tensor(basis[j], device=tensor.device)
        v = a @ e
        for _ in range(2):  # classical Gram-Schmidt, repeated once: orthogonal to working precision
            v = v - q @ (q.T @ v)
        v = v / (v * v).sum().sqrt()
        q = (q + v.reshape(n, 1) * e.reshape(1, k)).realize()
    if rows < cols:
        q = q.T
    return _write(tensor, (q * gain).reshape(tensor.shape))
