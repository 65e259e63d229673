"""unigrad.nn.functional: torch.nn.functional over unigrad Tensors (`import unigrad.nn.functional as F`).

Every function takes torch's signature (positional order, keyword names, defaults) and returns what torch returns.
Where a Tensor method does the work it is called with the arguments adapted; the rest are compositions of Tensor
methods, so all math runs as Tensor ops (numpy never touches data here). Arguments that only concern memory
(`inplace`, `sparse`) are accepted and ignored: results are new tensors. torch's legacy `size_average` / `reduce`
arguments map onto `reduction` as in torch.

Bad input (a non-Tensor, a wrong shape or dtype, an unknown reduction or mode) raises at the call, with a message
that names the function, what it got and what it expected.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from unigrad.api.nn import unpool_to_plane
from unigrad.dtype import DType, dtypes
from unigrad.tensor import Tensor, check_range

__all__ = [
    # activations
    "relu",
    "relu6",
    "leaky_relu",
    "elu",
    "selu",
    "celu",
    "gelu",
    "silu",
    "mish",
    "sigmoid",
    "tanh",
    "hardtanh",
    "hardswish",
    "hardsigmoid",
    "softplus",
    "softsign",
    "logsigmoid",
    "tanhshrink",
    "softshrink",
    "hardshrink",
    "threshold",
    "glu",
    "prelu",
    "rrelu",
    "relu_",
    "elu_",
    "leaky_relu_",
    "hardtanh_",
    "selu_",
    "celu_",
    "rrelu_",
    "threshold_",
    "softmax",
    "log_softmax",
    "softmin",
    "gumbel_softmax",
    # distances
    "normalize",
    "cosine_similarity",
    "pairwise_distance",
    # layers
    "linear",
    "bilinear",
    "conv1d",
    "conv2d",
    "conv3d",
    "conv_transpose1d",
    "conv_transpose2d",
    "conv_transpose3d",
    "max_pool1d",
    "max_pool2d",
    "max_pool3d",
    "max_pool1d_with_indices",
    "max_pool2d_with_indices",
    "max_pool3d_with_indices",
    "max_unpool1d",
    "max_unpool2d",
    "max_unpool3d",
    "avg_pool1d",
    "avg_pool2d",
    "avg_pool3d",
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "adaptive_avg_pool3d",
    "adaptive_max_pool1d",
    "adaptive_max_pool2d",
    "adaptive_max_pool3d",
    "adaptive_max_pool1d_with_indices",
    "adaptive_max_pool2d_with_indices",
    "adaptive_max_pool3d_with_indices",
    "lp_pool1d",
    "lp_pool2d",
    "lp_pool3d",
    "pad",
    "interpolate",
    "upsample",
    "upsample_nearest",
    "upsample_bilinear",
    "pixel_shuffle",
    "pixel_unshuffle",
    "channel_shuffle",
    "affine_grid",
    "grid_sample",
    "unfold",
    "fold",
    "embedding",
    "embedding_bag",
    "one_hot",
    "dropout",
    "dropout1d",
    "dropout2d",
    "dropout3d",
    "alpha_dropout",
    "feature_alpha_dropout",
    "batch_norm",
    "layer_norm",
    "group_norm",
    "instance_norm",
    "rms_norm",
    "local_response_norm",
    "scaled_dot_product_attention",
    # losses
    "cross_entropy",
    "nll_loss",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "mse_loss",
    "l1_loss",
    "smooth_l1_loss",
    "huber_loss",
    "kl_div",
    "poisson_nll_loss",
    "gaussian_nll_loss",
    "margin_ranking_loss",
    "hinge_embedding_loss",
    "soft_margin_loss",
    "triplet_margin_loss",
    "cosine_embedding_loss",
    "multi_margin_loss",
    "multilabel_soft_margin_loss",
    "multilabel_margin_loss",
    "triplet_margin_with_distance_loss",
]

IntOrTuple = int | Sequence[int]


# ---------------------------------------------------------------- argument checks


def _tensor(x: Any, fn: str, name: str = "input") -> Tensor:
    """x itself when it is a Tensor, else a TypeError naming the function and the argument."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn}(): argument '{name}' must be a Tensor, got {type(x).__name__}")
    return x


def _float_tensor(x: Any, fn: str, name: str = "input") -> Tensor:
    t = _tensor(x, fn, name)
    if not t.dtype.is_float:
        raise RuntimeError(f"{fn}(): argument '{name}' must be a floating point tensor, got {t.dtype}")
    return t


def _ndim_in(x: Tensor, allowed: Sequence[int], fn: str, what: str) -> None:
    if x.ndim not in allowed:
        dims = " or ".join(f"{d}-D" for d in allowed)
        raise RuntimeError(f"{fn}(): expected a {dims} input ({what}), got shape {x.shape}")


def _ntuple(x: IntOrTuple, n: int, fn: str, name: str) -> tuple[int, ...]:
    t = (x,) * n if isinstance(x, int) else tuple(x)
    if len(t) == 1 and n > 1:
        t = t * n
    if len(t) != n:
        raise RuntimeError(f"{fn}(): {name} must be an int or {n} ints, got {x!r}")
    return t


def _reduction(size_average: bool | None, reduce: bool | None, reduction: str, fn: str) -> str:
    """torch's legacy (size_average, reduce) pair, when either is given, overrides `reduction`; then check it."""
    if size_average is not None or reduce is not None:
        avg = True if size_average is None else size_average
        red = True if reduce is None else reduce
        reduction = "none" if not red else "mean" if avg else "sum"
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{fn}(): reduction must be 'mean', 'sum' or 'none', got {reduction!r}")
    return reduction


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    return loss.mean() if reduction == "mean" else loss.sum() if reduction == "sum" else loss


def _same_shape(a: Tensor, b: Tensor, fn: str, what: str = "target") -> None:
    if a.shape != b.shape:
        raise ValueError(f"{fn}(): {what} size {b.shape} must be the same as the input size {a.shape}")


def _broadcast_pair(a: Tensor, b: Tensor, fn: str) -> tuple[Tensor, Tensor]:
    """a and b broadcast to one shape and dtype (torch broadcasts a loss's input and target, with a warning); a
    RuntimeError naming fn when they cannot be."""
    return a._broadcasted(b, f"{fn}()")


# ---------------------------------------------------------------- activations


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    return _tensor(input, "relu").relu()


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    return _tensor(input, "relu6").relu6()


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    return _tensor(input, "leaky_relu").leaky_relu(negative_slope)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    return _tensor(input, "elu").elu(alpha)


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    return _tensor(input, "selu").selu()


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    return _tensor(input, "celu").celu(alpha)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """torch's default is the exact (erf) form; 'tanh' the approximation (Tensor.gelu defaults to 'tanh')."""
    if approximate not in ("none", "tanh"):
        raise RuntimeError(f"gelu(): approximate must be 'none' or 'tanh', got {approximate!r}")
    return _tensor(input, "gelu").gelu(approximate)


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    return _tensor(input, "silu").silu()


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    return _tensor(input, "mish").mish()


def sigmoid(input: Tensor) -> Tensor:
    return _tensor(input, "sigmoid").sigmoid()


def tanh(input: Tensor) -> Tensor:
    return _tensor(input, "tanh").tanh()


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> Tensor:
    if min_val > max_val:
        raise ValueError(f"hardtanh(): min_val ({min_val}) cannot be greater than max_val ({max_val})")
    return _tensor(input, "hardtanh").hardtanh(min_val, max_val)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    return _tensor(input, "hardswish").hardswish()


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    return _tensor(input, "hardsigmoid").hardsigmoid()


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    return _tensor(input, "softplus").softplus(beta, threshold)


def softsign(input: Tensor) -> Tensor:
    return _tensor(input, "softsign").softsign()


def logsigmoid(input: Tensor) -> Tensor:
    return _tensor(input, "logsigmoid").logsigmoid()


def tanhshrink(input: Tensor) -> Tensor:
    """x - tanh(x)."""
    x = _tensor(input, "tanhshrink")
    return x - x.tanh()


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """x - lambd above lambd, x + lambd below -lambd, 0 between."""
    x = _float_tensor(input, "softshrink")
    if lambd < 0:
        raise RuntimeError(f"softshrink(): lambda must be greater or equal to 0, got {lambd}")
    return (x > lambd).where(x - lambd, (x < -lambd).where(x + lambd, 0.0))


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """x where |x| > lambd, else 0 (Tensor.hardshrink)."""
    return _tensor(input, "hardshrink").hardshrink(lambd)


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """x where x > threshold, else value."""
    x = _tensor(input, "threshold")
    return (x > threshold).where(x, value).cast(x.dtype)


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """a * sigmoid(b) for the two halves a, b of `dim`."""
    x = _tensor(input, "glu")
    if x.ndim == 0:
        raise RuntimeError("glu(): does not support scalars because halving size must be even")
    n = x.shape[dim]
    if n % 2:
        raise RuntimeError(f"glu(): halving dimension must be even, but dimension {dim} is size {n}")
    a, b = x.split(n // 2, dim)
    return a * b.sigmoid()


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """x where x > 0, else weight * x; weight has 1 element or one per channel (Tensor.prelu)."""
    return _tensor(input, "prelu").prelu(weight)


def rrelu(
    input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False, inplace: bool = False
) -> Tensor:
    """Leaky ReLU with slope (lower + upper) / 2, or in training a slope drawn uniformly in [lower, upper] per
    element."""
    x = _float_tensor(input, "rrelu")
    if not training:
        return x.leaky_relu((lower + upper) / 2)
    slope = Tensor.uniform(*x.shape, low=lower, high=upper, dtype=x.dtype, device=x.device)
    return (x >= 0).where(x, x * slope)


def _softmax_dim(ndim: int, dim: int | None) -> int:
    """torch's implicit dim (deprecated there): 0 for 0-, 1- and 3-D inputs, else 1."""
    if dim is not None:
        return dim
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: DType | None = None) -> Tensor:
    x = _tensor(input, "softmax")
    return x.softmax(_softmax_dim(x.ndim, dim), dtype=dtype)


def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: DType | None = None) -> Tensor:
    x = _tensor(input, "log_softmax")
    return x.log_softmax(_softmax_dim(x.ndim, dim), dtype=dtype)


def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: DType | None = None) -> Tensor:
    """softmax(-x)."""
    x = _tensor(input, "softmin")
    x = x if dtype is None else x.cast(dtype)
    return (-x).softmax(_softmax_dim(x.ndim, dim))


def gumbel_softmax(logits: Tensor, tau: float = 1, hard: bool = False, eps: float = 1e-10, dim: int = -1) -> Tensor:
    """softmax((logits + g) / tau) over dim with g ~ Gumbel(0, 1) drawn from the global generator
    (Tensor.manual_seed); `hard` returns the one-hot of its argmax in the forward pass and the soft sample's
    gradient in the backward pass (straight-through). eps is unused, as in torch."""
    x = _float_tensor(logits, "gumbel_softmax")
    u = Tensor.rand(*x.shape, dtype=dtypes.float32, device=x.device)
    # -log(E) for E = -log(1 - u) ~ Exponential(1), in float32; E is kept above 0 (u == 0 would draw infinity)
    gumbels = (-(-(1 - u).log()).maximum(2.0**-30).log()).cast(x.dtype)
    y_soft = ((x + gumbels) / tau).softmax(dim)
    if not hard:
        return y_soft
    d = dim % x.ndim if x.ndim else 0
    index = y_soft.argmax(d, keepdim=True)
    positions = Tensor.arange(x.shape[d], device=x.device).reshape([-1 if i == d else 1 for i in range(x.ndim)])
    y_hard = (positions == index).cast(x.dtype)
    return y_hard - y_soft.detach() + y_soft


# ---------------------------------------------------------------- in-place activations
# torch's F.<name>_: the out-of-place function's value written into the input's buffer (Tensor._inplace: a leaf
# that requires grad refuses; inside a graph the input tensor takes the new value and its gradient).


def _in_place(input: Any, op: str, fn: Callable[[Tensor], Tensor]) -> Tensor:
    return _tensor(input, op)._inplace(lambda t, _: fn(t), None, op)


def relu_(input: Tensor) -> Tensor:
    return _in_place(input, "relu_", relu)


def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    return _in_place(input, "elu_", lambda t: elu(t, alpha))


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    return _in_place(input, "leaky_relu_", lambda t: leaky_relu(t, negative_slope))


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    return _in_place(input, "hardtanh_", lambda t: hardtanh(t, min_val, max_val))


def selu_(input: Tensor) -> Tensor:
    return _in_place(input, "selu_", selu)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    return _in_place(input, "celu_", lambda t: celu(t, alpha))


def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False) -> Tensor:
    return _in_place(input, "rrelu_", lambda t: rrelu(t, lower, upper, training))


_threshold = threshold  # threshold_'s own parameter is called threshold, as torch's


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    return _in_place(input, "threshold_", lambda t: _threshold(t, threshold, value))


# ---------------------------------------------------------------- distances


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12, out: Tensor | None = None) -> Tensor:
    """x / max(||x||_p over dim, eps)."""
    if out is not None:
        raise NotImplementedError("normalize(): out= is not supported; use the returned tensor")
    x = _float_tensor(input, "normalize")
    return x / x.norm(p, dim, keepdim=True).maximum(eps)


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """sum(x1/||x1|| * x2/||x2||) over dim (broadcast), each norm clamped below at eps as torch."""
    a, b = _float_tensor(x1, "cosine_similarity", "x1"), _float_tensor(x2, "cosine_similarity", "x2")
    if a.ndim != b.ndim and min(a.ndim, b.ndim) == 0:
        raise RuntimeError(f"cosine_similarity(): x1 {a.shape} and x2 {b.shape} must have at least one dim")
    a, b = _broadcast_pair(a, b, "cosine_similarity")
    na = a.norm(2, dim, keepdim=True).maximum(eps)
    nb = b.norm(2, dim, keepdim=True).maximum(eps)
    return ((a / na) * (b / nb)).sum(dim)


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> Tensor:
    """||x1 - x2 + eps||_p over the last dim."""
    a, b = _float_tensor(x1, "pairwise_distance", "x1"), _float_tensor(x2, "pairwise_distance", "x2")
    d = a - b + eps
    if d.ndim == 0:
        return d.abs()  # torch: a 0-D difference is its own norm
    return d.norm(p, -1, keepdim=keepdim)


# ---------------------------------------------------------------- linear and convolution


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """x @ weight.T + bias with torch's weight layout (out_features, in_features) (1-D weight: a dot product)."""
    x, w = _tensor(input, "linear"), _tensor(weight, "linear", "weight")
    if w.ndim not in (1, 2) or x.ndim == 0 or x.shape[-1] != w.shape[-1]:
        raise RuntimeError(
            f"linear(): input {x.shape} and weight {w.shape} do not match: expected a weight (out_features, "
            f"in_features) or (in_features,) with in_features equal to the input's last dim"
        )
    y = x.matmul(w.T) if w.ndim == 2 else x.matmul(w)
    return y if bias is None else y + bias


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """y[..., o] = sum_ij x1[..., i] weight[o, i, j] x2[..., j] + bias[o]."""
    a, b = _tensor(input1, "bilinear", "input1"), _tensor(input2, "bilinear", "input2")
    w = _tensor(weight, "bilinear", "weight")
    if w.ndim != 3 or a.shape[-1] != w.shape[1] or b.shape[-1] != w.shape[2] or a.shape[:-1] != b.shape[:-1]:
        raise RuntimeError(
            f"bilinear(): input1 {a.shape}, input2 {b.shape} and weight {w.shape} do not match: expected weight "
            f"(out, in1, in2) and inputs (..., in1), (..., in2) with equal leading dims"
        )
    y = Tensor.einsum("...i,oij,...j->...o", a, w, b)
    return y if bias is None else y + bias


def _conv(
    fn: str,
    n: int,
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None,
    stride: IntOrTuple,
    padding: IntOrTuple | str,
    dilation: IntOrTuple,
    groups: int,
) -> Tensor:
    """An n-d convolution: batched (N, C, *n) or unbatched (C, *n) input, weight (C_out, C_in/groups, *k)."""
    x, w = _tensor(input, fn), _tensor(weight, fn, "weight")
    if w.ndim != n + 2:
        raise RuntimeError(f"{fn}(): expected a {n + 2}-D weight (C_out, C_in/groups, *kernel), got shape {w.shape}")
    _ndim_in(x, (n + 1, n + 2), fn, f"(N, C, {n} spatial dims) or unbatched (C, {n} spatial dims)")
    if isinstance(padding, str) and padding not in ("same", "valid"):
        raise ValueError(f"{fn}(): padding must be 'same', 'valid', an int or {n} ints, got {padding!r}")
    if padding == "same" and any(s != 1 for s in _ntuple(stride, n, fn, "stride")):
        raise RuntimeError(f"{fn}(): padding='same' is not supported for strided convolutions")
    pads = padding if isinstance(padding, str) else _ntuple(padding, n, fn, "padding")
    unbatched = x.ndim == n + 1
    xb = x.unsqueeze(0) if unbatched else x
    out = xb.conv2d(
        w,
        bias,
        groups=groups,
        stride=_ntuple(stride, n, fn, "stride"),
        dilation=_ntuple(dilation, n, fn, "dilation"),
        padding=pads,
    )
    return out.squeeze(0) if unbatched else out


def conv1d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: IntOrTuple = 1,
    padding: IntOrTuple | str = 0,
    dilation: IntOrTuple = 1,
    groups: int = 1,
) -> Tensor:
    return _conv("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: IntOrTuple = 1,
    padding: IntOrTuple | str = 0,
    dilation: IntOrTuple = 1,
    groups: int = 1,
) -> Tensor:
    return _conv("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


def conv3d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: IntOrTuple = 1,
    padding: IntOrTuple | str = 0,
    dilation: IntOrTuple = 1,
    groups: int = 1,
) -> Tensor:
    return _conv("conv3d", 3, input, weight, bias, stride, padding, dilation, groups)


def _conv_transpose(
    fn: str,
    n: int,
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None,
    stride: IntOrTuple,
    padding: IntOrTuple,
    output_padding: IntOrTuple,
    groups: int,
    dilation: IntOrTuple,
) -> Tensor:
    """An n-d transposed convolution: input (N, C_in, *n) or (C_in, *n), weight (C_in, C_out/groups, *k)."""
    x, w = _tensor(input, fn), _tensor(weight, fn, "weight")
    if w.ndim != n + 2:
        raise RuntimeError(f"{fn}(): expected a {n + 2}-D weight (C_in, C_out/groups, *kernel), got shape {w.shape}")
    _ndim_in(x, (n + 1, n + 2), fn, f"(N, C_in, {n} spatial dims) or unbatched (C_in, {n} spatial dims)")
    unbatched = x.ndim == n + 1
    xb = x.unsqueeze(0) if unbatched else x
    if xb.shape[1] != w.shape[0] or w.shape[0] % groups:
        raise RuntimeError(
            f"{fn}(): input {x.shape} and weight {w.shape} with groups={groups} do not match: expected "
            f"{w.shape[0]} input channels, divisible by groups"
        )
    s_, d_ = _ntuple(stride, n, fn, "stride"), _ntuple(dilation, n, fn, "dilation")
    p_, op_ = _ntuple(padding, n, fn, "padding"), _ntuple(output_padding, n, fn, "output_padding")
    for o, s, d in zip(op_, s_, d_):
        if o >= max(s, d):
            raise RuntimeError(f"{fn}(): output padding must be smaller than either stride or dilation, got {op_}")
    out = xb.conv_transpose2d(w, bias, groups=groups, stride=s_, dilation=d_, padding=p_, output_padding=op_)
    return out.squeeze(0) if unbatched else out


def conv_transpose1d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: IntOrTuple = 1,
    padding: IntOrTuple = 0,
    output_padding: IntOrTuple = 0,
    groups: int = 1,
    dilation: IntOrTuple = 1,
) -> Tensor:
    return _conv_transpose(
        "conv_transpose1d", 1, input, weight, bias, stride, padding, output_padding, groups, dilation
    )


def conv_transpose2d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: IntOrTuple = 1,
    padding: IntOrTuple = 0,
    output_padding: IntOrTuple = 0,
    groups: int = 1,
    dilation: IntOrTuple = 1,
) -> Tensor:
    return _conv_transpose(
        "conv_transpose2d", 2, input, weight, bias, stride, padding, output_padding, groups, dilation
    )


def conv_transpose3d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: IntOrTuple = 1,
    padding: IntOrTuple = 0,
    output_padding: IntOrTuple = 0,
    groups: int = 1,
    dilation: IntOrTuple = 1,
) -> Tensor:
    return _conv_transpose(
        "conv_transpose3d", 3, input, weight, bias, stride, padding, output_padding, groups, dilation
    )


# ---------------------------------------------------------------- pooling


def _pool_check(fn: str, n: int, x: Tensor, k_: tuple[int, ...], p_: tuple[int, ...]) -> None:
    _ndim_in(x, (n + 1, n + 2), fn, f"(N, C, {n} spatial dims) or unbatched (C, {n} spatial dims)")
    for k, p in zip(k_, p_):
        if k <= 0:
            raise RuntimeError(f"{fn}(): kernel_size must be greater than zero, got {k_}")
        if p > k // 2:
            raise RuntimeError(f"{fn}(): pad should be at most half of effective kernel size, got padding {p_}")


def _max_pool(
    fn: str,
    n: int,
    input: Tensor,
    kernel_size: IntOrTuple,
    stride: IntOrTuple | None,
    padding: IntOrTuple,
    dilation: IntOrTuple,
    ceil_mode: bool,
    return_indices: bool,
) -> Tensor | tuple[Tensor, Tensor]:
    x = _tensor(input, fn)
    k_ = _ntuple(kernel_size, n, fn, "kernel_size")
    s_ = k_ if stride is None or stride == [] or stride == () else _ntuple(stride, n, fn, "stride")
    p_, d_ = _ntuple(padding, n, fn, "padding"), _ntuple(dilation, n, fn, "dilation")
    _pool_check(fn, n, x, k_, p_)
    return x.max_pool2d(k_, s_, d_, p_, ceil_mode=ceil_mode, return_indices=return_indices)


def max_pool1d(
    input: Tensor,
    kernel_size: IntOrTuple,
    stride: IntOrTuple | None = None,
    padding: IntOrTuple = 0,
    dilation: IntOrTuple = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Tensor | tuple[Tensor, Tensor]:
    return _max_pool("max_pool1d", 1, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool2d(
    input: Tensor,
    kernel_size: IntOrTuple,
    stride: IntOrTuple | None = None,
    padding: IntOrTuple = 0,
    dilation: IntOrTuple = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Tensor | tuple[Tensor, Tensor]:
    return _max_pool("max_pool2d", 2, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool3d(
    input: Tensor,
    kernel_size: IntOrTuple,
    stride: IntOrTuple | None = None,
    padding: IntOrTuple = 0,
    dilation: IntOrTuple = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Tensor | tuple[Tensor, Tensor]:
    return _max_pool("max_pool3d", 3, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool1d_with_indices(
    input: Tensor,
    kernel_size: IntOrTuple,
    stride: IntOrTuple | None = None,
    padding: IntOrTuple = 0,
    dilation: IntOrTuple = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> tuple[Tensor, Tensor]:
    """max_pool1d's (values, indices), whatever return_indices says (torch's)."""
    args = (kernel_size, stride, padding, dilation, ceil_mode, True)
    return _max_pool("max_pool1d_with_indices", 1, input, *args)  # type: ignore[return-value]


def max_pool2d_with_indices(
    input: Tensor,
    kernel_size: IntOrTuple,
    stride: IntOrTuple | None = None,
    padding: IntOrTuple = 0,
    dilation: IntOrTuple = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> tuple[Tensor, Tensor]:
    args = (kernel_size, stride, padding, dilation, ceil_mode, True)
    return _max_pool("max_pool2d_with_indices", 2, input, *args)  # type: ignore[return-value]


def max_pool3d_with_indices(
    input: Tensor,
    kernel_size: IntOrTuple,
    stride: IntOrTuple | None = None,
    padding: IntOrTuple = 0,
    dilation: IntOrTuple = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> tuple[Tensor, Tensor]:
    args = (kernel_size, stride, padding, dilation, ceil_mode, True)
    return _max_pool("max_pool3d_with_indices", 3, input, *args)  # type: ignore[return-value]


def _unpool_size(
    fn: str, default: tuple[int, ...], stride: tuple[int, ...], output_size: Sequence[int] | None
) -> tuple[int, ...]:
    """The spatial output size: the default (i-1)*s - 2p + k per dim, or output_size (spatial dims, or with the
    leading (N, C)), each strictly within stride of the default, as torch."""
    if output_size is None:
        return default
    n = len(default)
    size = tuple(output_size)
    if len(size) == n + 2:
        size = size[2:]
    if len(size) != n:
        raise ValueError(
            f"{fn}(): output_size should be a sequence containing {n} or {n + 2} elements, but it has a length of "
            f"'{len(size)}'"
        )
    for d, (o, i, s) in enumerate(zip(size, default, stride)):
        if not i - s < o < i + s:
            raise ValueError(f'{fn}(): invalid output_size "{size}" (dim {d} must be between {i - s} and {i + s})')
    return size


def _max_unpool(
    fn: str,
    n: int,
    input: Tensor,
    indices: Tensor,
    kernel_size: IntOrTuple,
    stride: IntOrTuple | None,
    padding: IntOrTuple,
    output_size: Sequence[int] | None,
) -> Tensor:
    """max_pool's inverse: each value of (N, C, *o) (or (C, *o)) written at its flat index (into its output plane,
    as max_pool's return_indices gives) of a zero (N, C, *output_size) (api/nn.py's unpool_to_plane)."""
    x, idx = _tensor(input, fn), _tensor(indices, fn, "indices")
    _ndim_in(x, (n + 1, n + 2), fn, f"(N, C, {n} spatial dims) or unbatched (C, {n} spatial dims)")
    if idx.dtype is not dtypes.int64:
        raise RuntimeError(f"{fn}(): elements in indices should be type int64 but got: {idx.dtype}")
    if idx.shape != x.shape:
        raise RuntimeError(
            f"{fn}(): expected shape of indices to be same as that of the input tensor ({list(x.shape)}) but got "
            f"indices tensor with shape: {list(idx.shape)}"
        )
    k_ = _ntuple(kernel_size, n, fn, "kernel_size")
    s_ = k_ if stride is None else _ntuple(stride, n, fn, "stride")
    p_ = _ntuple(padding, n, fn, "padding")
    default = tuple((i - 1) * s - 2 * p + k for i, k, s, p in zip(x.shape[-n:], k_, s_, p_))
    size = _unpool_size(fn, default, s_, output_size)
    return unpool_to_plane(x, idx, x.shape[:-n], size)


def max_unpool1d(
    input: Tensor,
    indices: Tensor,
    kernel_size: IntOrTuple,
    stride: IntOrTuple | None = None,
    padding: IntOrTuple = 0,
    output_size: Sequence[int] | None = None,
) -> Tensor:
    return _max_unpool("max_unpool1d", 1, input, indices, kernel_size, stride, padding, output_size)


def max_unpool2d(
    input: Tensor,
    indices: Tensor,
    kernel_size: IntOrTuple,
    stride: IntOrTuple | None = None,
    padding: IntOrTuple = 0,
    output_size: Sequence[int] | None = None,
) -> Tensor:
    return _max_unpool("max_unpool2d", 2, input, indices, kernel_size, stride, padding, output_size)


def max_unpool3d(
    input: Tensor,
    indices: Tensor,
    kernel_size: IntOrTuple,
    stride: IntOrTuple | None = None,
    padding: IntOrTuple = 0,
    output_size: Sequence[int] | None = None,
) -> Tensor:
    return _max_unpool("max_unpool3d", 3, input, indices, kernel_size, stride, padding, output_size)


def _avg_pool(
    fn: str,
    n: int,
    input: Tensor,
    kernel_size: IntOrTuple,
    stride: IntOrTuple | None,
    padding: IntOrTuple,
    ceil_mode: bool,
    count_include_pad: bool,
    divisor_override: int | None,
) -> Tensor:
    x = _tensor(input, fn)
    k_ = _ntuple(kernel_size, n, fn, "kernel_size")
    s_ = k_ if stride is None or stride == [] or stride == () else _ntuple(stride, n, fn, "stride")
    p_ = _ntuple(padding, n, fn, "padding")
    _pool_check(fn, n, x, k_, p_)
    if divisor_override is not None:
        if divisor_override == 0:
            raise RuntimeError(f"{fn}(): divisor must be not zero")
        if ceil_mode:
            raise NotImplementedError(f"{fn}(): divisor_override together with ceil_mode is not supported")
        # window sums: the mean with the padding counted, times the window size
        total = x.avg_pool2d(k_, s_, 1, p_, ceil_mode=False, count_include_pad=True) * math.prod(k_)
        return total / divisor_override
    return x.avg_pool2d(k_, s_, 1, p_, ceil_mode=ceil_mode, count_include_pad=count_include_pad)


def avg_pool1d(
    input: Tensor,
    kernel_size: IntOrTuple,
    stride: IntOrTuple | None = None,
    padding: IntOrTuple = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
) -> Tensor:
    return _avg_pool("avg_pool1d", 1, input, kernel_size, stride, padding, ceil_mode, count_include_pad, None)


def avg_pool2d(
    input: Tensor,
    kernel_size: IntOrTuple,
    stride: IntOrTuple | None = None,
    padding: IntOrTuple = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> Tensor:
    args = (kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)
    return _avg_pool("avg_pool2d", 2, input, *args)


def avg_pool3d(
    input: Tensor,
    kernel_size: IntOrTuple,
    stride: IntOrTuple | None = None,
    padding: IntOrTuple = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> Tensor:
    args = (kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)
    return _avg_pool("avg_pool3d", 3, input, *args)


def _adaptive_sizes(fn: str, n: int, x: Tensor, output_size: int | None | Sequence[int | None]) -> tuple[int, ...]:
    _ndim_in(x, (n + 1, n + 2), fn, f"(N, C, {n} spatial dims) or unbatched (C, {n} spatial dims)")
    sizes = (output_size,) * n if output_size is None or isinstance(output_size, int) else tuple(output_size)
    if len(sizes) != n:
        raise ValueError(f"{fn}(): output_size must be an int or {n} ints (None keeps a dim), got {output_size!r}")
    spatial = x.shape[-n:]
    out = tuple(i if o is None else o for i, o in zip(spatial, sizes))
    if any(o < 0 for o in out) or any(i == 0 for i in spatial):
        raise RuntimeError(f"{fn}(): expected non-empty spatial dims and output sizes >= 0, got input {x.shape}")
    return out


def _window_mask(i: int, o: int, device: Any) -> Tensor:
    """(o, i) bool: output position q averages inputs [floor(q*i/o), ceil((q+1)*i/o)), torch's adaptive windows."""
    q = Tensor.arange(o, device=device).reshape(o, 1)
    start = (q * i) // o
    end = ((q + 1) * i + o - 1) // o
    pos = Tensor.arange(i, device=device).reshape(1, i)
    return (pos >= start) & (pos < end)


def _adaptive_avg(fn: str, n: int, input: Tensor, output_size: Any) -> Tensor:
    x = _tensor(input, fn)
    out = _adaptive_sizes(fn, n, x, output_size)
    spatial = x.shape[-n:]
    if all(o and i % o == 0 for i, o in zip(spatial, out)):  # even windows: a plain average pool
        k = tuple(i // o for i, o in zip(spatial, out))
        return x.avg_pool2d(k, k)
    y = x._float()
    for j, (i, o) in enumerate(zip(spatial, out)):
        ax = y.ndim - n + j
        mask = _window_mask(i, o, x.device)  # (o, i)
        moved = y.movedim(ax, -1).unsqueeze(-2)  # (..., 1, i)
        y = (mask.where(moved, 0.0).sum(-1) / mask.sum(-1).cast(y.dtype)).movedim(-1, ax)
    return y


def _adaptive_max(
    fn: str, n: int, input: Tensor, output_size: Any, return_indices: bool
) -> Tensor | tuple[Tensor, Tensor]:
    x = _tensor(input, fn)
    out = _adaptive_sizes(fn, n, x, output_size)
    spatial = x.shape[-n:]
    if all(o and i % o == 0 for i, o in zip(spatial, out)):  # even windows: a plain max pool
        k = tuple(i // o for i, o in zip(spatial, out))
        return x.max_pool2d(k, k, return_indices=return_indices)
    # every output position against the whole plane: (..., *o, *i) masked to each window, reduced over *i
    lead = x.shape[:-n]
    mask = None
    for j, (i, o) in enumerate(zip(spatial, out)):
        shape = [1] * (2 * n)
        shape[j], shape[n + j] = o, i
        m = _window_mask(i, o, x.device).reshape(shape)
        mask = m if mask is None else mask & m
    low = -math.inf if x.dtype.is_float else x.dtype.min
    windows = mask.where(x.reshape(*lead, *([1] * n), *spatial), low)  # type: ignore[union-attr]
    axes = tuple(range(-n, 0))
    vals = windows.max(axes)
    if not return_indices:
        return vals
    plane = math.prod(spatial)
    pos = Tensor.arange(plane, dtype=dtypes.int64, device=x.device).reshape(spatial)
    hit = mask & (windows == vals.reshape(*vals.shape, *([1] * n)))  # type: ignore[operator]
    return vals, hit.where(pos, plane).min(axes)


def adaptive_avg_pool1d(input: Tensor, output_size: int) -> Tensor:
    return _adaptive_avg("adaptive_avg_pool1d", 1, input, output_size)


def adaptive_avg_pool2d(input: Tensor, output_size: int | Sequence[int | None]) -> Tensor:
    return _adaptive_avg("adaptive_avg_pool2d", 2, input, output_size)


def adaptive_avg_pool3d(input: Tensor, output_size: int | Sequence[int | None]) -> Tensor:
    return _adaptive_avg("adaptive_avg_pool3d", 3, input, output_size)


def adaptive_max_pool1d(
    input: Tensor, output_size: int, return_indices: bool = False
) -> Tensor | tuple[Tensor, Tensor]:
    return _adaptive_max("adaptive_max_pool1d", 1, input, output_size, return_indices)


def adaptive_max_pool2d(
    input: Tensor, output_size: int | Sequence[int | None], return_indices: bool = False
) -> Tensor | tuple[Tensor, Tensor]:
    return _adaptive_max("adaptive_max_pool2d", 2, input, output_size, return_indices)


def adaptive_max_pool3d(
    input: Tensor, output_size: int | Sequence[int | None], return_indices: bool = False
) -> Tensor | tuple[Tensor, Tensor]:
    return _adaptive_max("adaptive_max_pool3d", 3, input, output_size, return_indices)


def adaptive_max_pool1d_with_indices(
    input: Tensor, output_size: int, return_indices: bool = False
) -> tuple[Tensor, Tensor]:
    """adaptive_max_pool1d's (values, indices), whatever return_indices says (torch's)."""
    return _adaptive_max("adaptive_max_pool1d_with_indices", 1, input, output_size, True)  # type: ignore[return-value]


def adaptive_max_pool2d_with_indices(
    input: Tensor, output_size: int | Sequence[int | None], return_indices: bool = False
) -> tuple[Tensor, Tensor]:
    return _adaptive_max("adaptive_max_pool2d_with_indices", 2, input, output_size, True)  # type: ignore[return-value]


def adaptive_max_pool3d_with_indices(
    input: Tensor, output_size: int | Sequence[int | None], return_indices: bool = False
) -> tuple[Tensor, Tensor]:
    return _adaptive_max("adaptive_max_pool3d_with_indices", 3, input, output_size, True)  # type: ignore[return-value]


def _lp_pool(
    fn: str, n: int, input: Tensor, norm_type: float, kernel_size: IntOrTuple, stride: Any, ceil_mode: bool
) -> Tensor:
    """(sum over the window of x^p)^(1/p), as torch: the window average of x^p times the window size, its negative
    part cut to 0 before the root."""
    x = _tensor(input, fn)
    k_ = _ntuple(kernel_size, n, fn, "kernel_size")
    s_ = k_ if stride is None else _ntuple(stride, n, fn, "stride")
    avg = _avg_pool(fn, n, x.pow(norm_type), k_, s_, 0, ceil_mode, True, None)
    return (avg.sign() * avg.abs().relu() * math.prod(k_)).pow(1.0 / norm_type)


def lp_pool1d(
    input: Tensor, norm_type: float, kernel_size: int, stride: IntOrTuple | None = None, ceil_mode: bool = False
) -> Tensor:
    return _lp_pool("lp_pool1d", 1, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool2d(
    input: Tensor, norm_type: float, kernel_size: IntOrTuple, stride: IntOrTuple | None = None, ceil_mode: bool = False
) -> Tensor:
    return _lp_pool("lp_pool2d", 2, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool3d(
    input: Tensor, norm_type: float, kernel_size: IntOrTuple, stride: IntOrTuple | None = None, ceil_mode: bool = False
) -> Tensor:
    return _lp_pool("lp_pool3d", 3, input, norm_type, kernel_size, stride, ceil_mode)


# ---------------------------------------------------------------- padding, resampling, rearranging


def pad(input: Tensor, pad: Sequence[int], mode: str = "constant", value: float | None = None) -> Tensor:
    """torch's flat padding (last_before, last_after, prev_before, ...): mode constant (value, default 0),
    reflect, replicate or circular."""
    x = _tensor(input, "pad")
    p = tuple(pad)
    if len(p) % 2 or len(p) // 2 > x.ndim:
        raise ValueError(f"pad(): padding length must be even and at most 2 * ndim ({2 * x.ndim}), got {len(p)}")
    if mode not in ("constant", "reflect", "replicate", "circular"):
        raise NotImplementedError(f"pad(): mode must be constant, reflect, replicate or circular, got {mode!r}")
    if mode != "constant" and value is not None and value != 0:
        raise RuntimeError(f"pad(): padding mode {mode!r} doesn't take in value argument")
    if mode == "reflect":
        for d in range(len(p) // 2):
            size = x.shape[x.ndim - 1 - d]
            if max(p[2 * d], p[2 * d + 1]) >= size:
                raise RuntimeError(
                    f"pad(): reflect padding size should be less than the corresponding input dimension, got "
                    f"padding ({p[2 * d]}, {p[2 * d + 1]}) at dim {x.ndim - 1 - d} of size {size}"
                )
    return x.pad(p, value=0.0 if value is None else value, mode=mode)


_INTERP_MODES = ("nearest", "nearest-exact", "linear", "bilinear", "trilinear", "area", "bicubic")
_INTERP_DIMS = {"linear": 3, "bilinear": 4, "trilinear": 5}


def interpolate(
    input: Tensor,
    size: int | Sequence[int] | None = None,
    scale_factor: float | Sequence[float] | None = None,
    mode: str = "nearest",
    align_corners: bool | None = None,
    recompute_scale_factor: bool | None = None,
    antialias: bool = False,
) -> Tensor:
    """Resample the spatial dims of (N, C, *spatial): nearest, nearest-exact, linear/bilinear/trilinear (on 3-,
    4-, 5-D inputs, as torch), or area (adaptive average pooling)."""
    x = _tensor(input, "interpolate")
    if mode not in _INTERP_MODES:
        raise NotImplementedError(f"interpolate(): mode must be one of {_INTERP_MODES}, got {mode!r}")
    if mode == "bicubic":
        raise NotImplementedError("interpolate(): mode 'bicubic' is not supported")
    if antialias:
        raise NotImplementedError("interpolate(): antialias=True is not supported")
    if x.ndim < 3:
        raise ValueError(f"interpolate(): expected a 3-D, 4-D or 5-D input (N, C, *spatial), got shape {x.shape}")
    if mode in _INTERP_DIMS and x.ndim != _INTERP_DIMS[mode]:
        raise NotImplementedError(
            f"interpolate(): mode {mode!r} needs a {_INTERP_DIMS[mode]}-D input, got a {x.ndim}-D input"
        )
    if align_corners is not None and mode not in _INTERP_DIMS:
        raise ValueError(
            "interpolate(): align_corners option can only be set with the interpolating modes: "
            "linear | bilinear | bicubic | trilinear"
        )
    if (size is None) == (scale_factor is None):
        raise ValueError("interpolate(): only one of size or scale_factor should be defined")
    n = x.ndim - 2
    if size is not None:
        outs = (size,) * n if isinstance(size, int) else tuple(size)
        if len(outs) != n:
            raise ValueError(
                f"interpolate(): input and output must have the same number of spatial dimensions, but got input "
                f"with spatial dimensions of {list(x.shape[2:])} and output size of {list(outs)}"
            )
        scales = None
    else:
        sf = (scale_factor,) * n if not isinstance(scale_factor, (list, tuple)) else tuple(scale_factor)
        if len(sf) != n:
            raise ValueError(f"interpolate(): scale_factor must have {n} entries, got {scale_factor!r}")
        outs = tuple(math.floor(i * f) for i, f in zip(x.shape[2:], sf))  # type: ignore[operator]
        scales = None if recompute_scale_factor else sf
    if mode == "area":
        return _adaptive_avg("interpolate", n, x, outs)
    if scales is None:
        return x.interpolate(size=outs, mode=mode, align_corners=bool(align_corners))
    return x.interpolate(mode=mode, align_corners=bool(align_corners), scale_factor=scales)  # type: ignore[arg-type]


def upsample(
    input: Tensor,
    size: int | Sequence[int] | None = None,
    scale_factor: float | Sequence[float] | None = None,
    mode: str = "nearest",
    align_corners: bool | None = None,
) -> Tensor:
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(
    input: Tensor, size: int | Sequence[int] | None = None, scale_factor: float | None = None
) -> Tensor:
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(
    input: Tensor, size: int | Sequence[int] | None = None, scale_factor: float | None = None
) -> Tensor:
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """(*, C*r*r, H, W) -> (*, C, H*r, W*r)."""
    x = _tensor(input, "pixel_shuffle")
    r = upscale_factor
    if x.ndim < 3 or x.shape[-3] % (r * r):
        raise RuntimeError(
            f"pixel_shuffle(): expected an input (*, C*{r * r}, H, W) with channels divisible by "
            f"upscale_factor^2 = {r * r}, got shape {x.shape}"
        )
    *lead, c, h, w = x.shape
    y = x.reshape(*lead, c // (r * r), r, r, h, w)
    k = len(lead)
    y = y.permute(*range(k), k, k + 3, k + 1, k + 4, k + 2)  # (*, C, H, r, W, r)
    return y.reshape(*lead, c // (r * r), h * r, w * r)


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """(*, C, H*r, W*r) -> (*, C*r*r, H, W)."""
    x = _tensor(input, "pixel_unshuffle")
    r = downscale_factor
    if x.ndim < 3 or x.shape[-2] % r or x.shape[-1] % r:
        raise RuntimeError(
            f"pixel_unshuffle(): expected an input (*, C, H, W) with H and W divisible by downscale_factor {r}, "
            f"got shape {x.shape}"
        )
    *lead, c, h, w = x.shape
    y = x.reshape(*lead, c, h // r, r, w // r, r)
    k = len(lead)
    y = y.permute(*range(k), k, k + 2, k + 4, k + 1, k + 3)  # (*, C, r, r, H/r, W/r)
    return y.reshape(*lead, c * r * r, h // r, w // r)


def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """(N, C, *) with its channels split into `groups` groups of C/groups and interleaved: channel g*(C/groups)+j
    moves to j*groups+g (a reshape, transpose, reshape)."""
    x = _tensor(input, "channel_shuffle")
    if x.ndim <= 2:
        raise RuntimeError(f"channel_shuffle(): expects input with > 2 dims, but got input with sizes {list(x.shape)}")
    if groups <= 0:
        raise RuntimeError(f"channel_shuffle(): number of groups to divide channels in must be positive, got {groups}")
    n, c, *rest = x.shape
    if c % groups:
        raise RuntimeError(
            f"channel_shuffle(): number of channels must be divisible by groups. Got {c} channels and {groups} groups."
        )
    return x.reshape(n, groups, c // groups, *rest).transpose(1, 2).reshape(x.shape)


def _grid_coords(size: int, align_corners: bool, dtype: DType, device: Any) -> Tensor:
    """The normalized coordinates in [-1, 1] of `size` positions: the pixel centres, or with align_corners the
    corner pixels' centres at -1 and 1; a single position sits at 0 (torch's affine_grid)."""
    pos = Tensor.arange(size, device=device).cast(dtype)
    if size <= 1:
        return pos * 0
    if align_corners:
        return pos * (2 / (size - 1)) - 1
    return (pos * 2 + 1) / size - 1


def affine_grid(theta: Tensor, size: Sequence[int], align_corners: bool | None = None) -> Tensor:
    """The sampling grid of a batch of affine maps: theta (N, 2, 3) and size (N, C, H, W) give (N, H, W, 2), theta
    (N, 3, 4) and size (N, C, D, H, W) give (N, D, H, W, 3): each output position's normalized (x, y[, z]),
    with a 1 appended, times theta^T. align_corners None means False, as torch (which warns)."""
    t = _float_tensor(theta, "affine_grid", "theta")
    size = tuple(size)
    if len(size) not in (4, 5):
        raise NotImplementedError(
            f"affine_grid(): only 4D and 5D sizes are supported, for 2D and 3D affine transforms, respectively. "
            f"Got size {list(size)}."
        )
    d = len(size) - 2
    if t.ndim != 3 or t.shape != (size[0], d, d + 1):
        raise ValueError(
            f"affine_grid(): Expected a batch of {d}D affine matrices of shape Nx{d}x{d + 1} for size {list(size)}. "
            f"Got {t.shape}."
        )
    if min(size) <= 0:
        raise ValueError(f"affine_grid(): Expected non-zero, positive output size. Got {list(size)}")
    spatial = size[2:]  # (D,) H, W
    # (*spatial, d + 1): the last spatial dim (W) is x, the first coordinate
    axes = [_grid_coords(s, bool(align_corners), t.dtype, t.device) for s in spatial]
    parts = []
    for j in range(d):
        dim = d - 1 - j  # coordinate j varies along spatial dim d-1-j
        parts.append(axes[dim].reshape([-1 if i == dim else 1 for i in range(d)]).expand(spatial))
    parts.append(Tensor.ones(*spatial, dtype=t.dtype, device=t.device))
    base = Tensor.stack(*parts, dim=-1)
    grid = base.reshape(1, -1, d + 1).matmul(t.transpose(1, 2))  # (N, prod(spatial), d)
    return grid.reshape(size[0], *spatial, d)


def _unnormalize(coord: Tensor, size: int, align_corners: bool) -> Tensor:
    """[-1, 1] -> pixel coordinates: -1 and 1 are the corner pixels' centres (align_corners) or edges."""
    if align_corners:
        return (coord + 1) * ((size - 1) / 2)
    return ((coord + 1) * size - 1) / 2


def _reflect(coord: Tensor, twice_low: int, twice_high: int) -> Tensor:
    """coord reflected back and forth off low and high (given doubled, so that half-pixel bounds are ints)."""
    if twice_low == twice_high:
        return coord * 0
    low, span = twice_low / 2, (twice_high - twice_low) / 2
    c = (coord - low).abs()
    flips = (c / span).floor()
    extra = c - flips * span  # fmod(c, span), with c's gradient
    even = (flips * 0.5).floor() * 2 == flips
    return even.where(extra + low, span - extra + low)


def _source_coord(coord: Tensor, size: int, padding_mode: str, align_corners: bool) -> Tensor:
    c = _unnormalize(coord, size, align_corners)
    if padding_mode == "reflection":
        c = _reflect(c, 0, 2 * (size - 1)) if align_corners else _reflect(c, -1, 2 * size - 1)
    if padding_mode in ("border", "reflection"):
        c = c.clamp(0, size - 1)
    return c


def _gather_pixels(plane: Tensor, nhw: tuple[int, int, int], x: Tensor, y: Tensor) -> Tensor:
    """plane (N*H*W, C) read at integer-valued (x, y) of shape (..., N, Ho, Wo) -> (..., N, Ho, Wo, C): one
    indirect load per pixel, zero where (x, y) falls outside the H x W image (the address clamped inside, the
    value masked)."""
    n, h, w = nhw
    inside = (x >= 0) & (x <= w - 1) & (y >= 0) & (y <= h - 1)
    xi, yi = x.clamp(0, w - 1).cast(dtypes.int64), y.clamp(0, h - 1).cast(dtypes.int64)
    batch = Tensor.arange(n, dtype=dtypes.int64, device=x.device).reshape(n, 1, 1) * (h * w)
    rows = plane.take_rows(batch + yi * w + xi)
    return inside.unsqueeze(-1).where(rows, 0.0).cast(plane.dtype)


def grid_sample(
    input: Tensor,
    grid: Tensor,
    mode: str = "bilinear",
    padding_mode: str = "zeros",
    align_corners: bool | None = None,
) -> Tensor:
    """Sample input (N, C, H, W) at grid (N, Ho, Wo, 2) of normalized (x, y) in [-1, 1] -> (N, C, Ho, Wo):
    bilinear (the four neighbours weighted; the gradient reaches input and grid) or nearest (rounded half to
    even; no gradient to grid). Outside the image: zeros, the border pixel ('border') or the image reflected
    ('reflection'). align_corners None means False, as torch (which warns). Each pixel is an indirect load."""
    x, g = _float_tensor(input, "grid_sample"), _float_tensor(grid, "grid_sample", "grid")
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(
            f"grid_sample(): expected padding_mode to be 'zeros', 'border', or 'reflection', but got: '{padding_mode}'"
        )
    if mode == "bicubic":
        raise NotImplementedError("grid_sample(): mode 'bicubic' is not supported")
    if x.ndim == 5:
        raise NotImplementedError("grid_sample(): 5-D (volumetric) input is not supported")
    if x.ndim != 4 or g.ndim != 4 or g.shape[-1] != 2 or g.shape[0] != x.shape[0]:
        raise RuntimeError(
            f"grid_sample(): expected input (N, C, H, W) and grid (N, H_out, W_out, 2) with the same N, got input "
            f"{x.shape} and grid {g.shape}"
        )
    n, c, h, w = x.shape
    align = bool(align_corners)
    g = g.cast(x.dtype)
    ix = _source_coord(g[..., 0], w, padding_mode, align)  # (N, Ho, Wo)
    iy = _source_coord(g[..., 1], h, padding_mode, align)
    plane = x.permute(0, 2, 3, 1).reshape(n * h * w, c)
    if mode == "nearest":
        out = _gather_pixels(plane, (n, h, w), ix.round().detach(), iy.round().detach())
    else:
        x0, y0 = ix.floor().detach(), iy.floor().detach()
        wx, wy = ix - x0, iy - y0  # the weights of the right and lower neighbours
        # the four neighbours (4, N, Ho, Wo) in one load, so the input's gradient is one scatter
        xs, ys = Tensor.stack(x0, x0 + 1, x0, x0 + 1), Tensor.stack(y0, y0, y0 + 1, y0 + 1)
        weights = Tensor.stack((1 - wx) * (1 - wy), wx * (1 - wy), (1 - wx) * wy, wx * wy)
        out = (_gather_pixels(plane, (n, h, w), xs, ys) * weights.unsqueeze(-1)).sum(0)
    return out.permute(0, 3, 1, 2)


def _fold_args(
    fn: str, kernel_size: IntOrTuple, dilation: IntOrTuple, padding: IntOrTuple, stride: IntOrTuple
) -> tuple[tuple[int, ...], ...]:
    return tuple(
        _ntuple(v, 2, fn, name)
        for v, name in [(kernel_size, "kernel_size"), (dilation, "dilation"), (padding, "padding"), (stride, "stride")]
    )


def unfold(
    input: Tensor, kernel_size: IntOrTuple, dilation: IntOrTuple = 1, padding: IntOrTuple = 0, stride: IntOrTuple = 1
) -> Tensor:
    """im2col: (N, C, H, W) -> (N, C*kh*kw, L), column l holding the l-th window (row-major over the output
    positions), rows ordered (c, ki, kj). One strided slice of the padded input per kernel offset, stacked."""
    x = _tensor(input, "unfold")
    _ndim_in(x, (3, 4), "unfold", "(N, C, H, W) or unbatched (C, H, W)")
    k_, d_, p_, s_ = _fold_args("unfold", kernel_size, dilation, padding, stride)
    unbatched = x.ndim == 3
    xb = x.unsqueeze(0) if unbatched else x
    n, c, h, w = xb.shape
    oh, ow = ((i + 2 * p - d * (k - 1) - 1) // s + 1 for i, k, d, p, s in zip((h, w), k_, d_, p_, s_))
    if oh <= 0 or ow <= 0:
        raise RuntimeError(
            f"unfold(): the kernel {k_} (dilation {d_}) does not fit the input {(h, w)} padded by {p_}: "
            f"expected a positive output size, got ({oh}, {ow})"
        )
    xp = xb.pad((p_[1], p_[1], p_[0], p_[0]))
    cols = [
        xp[
            :,
            :,
            a * d_[0] : a * d_[0] + (oh - 1) * s_[0] + 1 : s_[0],
            b * d_[1] : b * d_[1] + (ow - 1) * s_[1] + 1 : s_[1],
        ]
        for a in range(k_[0])
        for b in range(k_[1])
    ]
    out = Tensor.stack(*cols, dim=2).reshape(n, c * k_[0] * k_[1], oh * ow)
    return out.squeeze(0) if unbatched else out


def _spread_into(block: Tensor, start: tuple[int, int], step: tuple[int, int], size: tuple[int, int]) -> Tensor:
    """(N, C, oh, ow) placed at rows start[0] + step[0]*i and columns start[1] + step[1]*j of a zero (N, C, *size)
    plane: zeros inserted between elements (pad and reshape), then padded into place."""
    n, c, oh, ow = block.shape
    sh, sw = step
    y = block.reshape(n, c, oh, 1, ow, 1).pad(((0, 0), (0, 0), (0, 0), (0, sh - 1), (0, 0), (0, sw - 1)))
    y = y.reshape(n, c, oh * sh, ow * sw)[:, :, : (oh - 1) * sh + 1, : (ow - 1) * sw + 1]
    rows, cols = y.shape[2], y.shape[3]
    return y.pad(((0, 0), (0, 0), (start[0], size[0] - start[0] - rows), (start[1], size[1] - start[1] - cols)))


def fold(
    input: Tensor,
    output_size: IntOrTuple,
    kernel_size: IntOrTuple,
    dilation: IntOrTuple = 1,
    padding: IntOrTuple = 0,
    stride: IntOrTuple = 1,
) -> Tensor:
    """col2im, the adjoint of unfold: (N, C*kh*kw, L) -> (N, C, *output_size), overlapping window entries summed.
    Each kernel offset's (N, C, oh, ow) block is spread by the stride into the padded plane; the planes are
    summed and the padding cut."""
    x = _tensor(input, "fold")
    _ndim_in(x, (2, 3), "fold", "(N, C*kh*kw, L) or unbatched (C*kh*kw, L)")
    k_, d_, p_, s_ = _fold_args("fold", kernel_size, dilation, padding, stride)
    size = _ntuple(output_size, 2, "fold", "output_size")
    unbatched = x.ndim == 2
    xb = x.unsqueeze(0) if unbatched else x
    n, ck, length = xb.shape
    kk = k_[0] * k_[1]
    oh, ow = ((i + 2 * p - d * (k - 1) - 1) // s + 1 for i, k, d, p, s in zip(size, k_, d_, p_, s_))
    if ck % kk or oh * ow != length or oh <= 0 or ow <= 0:
        raise RuntimeError(
            f"fold(): input {x.shape} does not match output_size {size}, kernel_size {k_}, dilation {d_}, padding "
            f"{p_}, stride {s_}: expected dim 1 divisible by {kk} and {max(oh, 0) * max(ow, 0)} blocks in the last dim"
        )
    c = ck // kk
    blocks = xb.reshape(n, c, k_[0], k_[1], oh, ow)
    padded = (size[0] + 2 * p_[0], size[1] + 2 * p_[1])
    planes = [
        _spread_into(blocks[:, :, a, b], (a * d_[0], b * d_[1]), s_, padded) for a in range(k_[0]) for b in range(k_[1])
    ]
    out = planes[0]
    for pl in planes[1:]:
        out = out + pl
    out = out[:, :, p_[0] : p_[0] + size[0], p_[1] : p_[1] + size[1]]
    return out.squeeze(0) if unbatched else out


# ---------------------------------------------------------------- embedding, one_hot, dropout


def check_rows(idx: Tensor, n: int, fn: str) -> None:
    """Have the next realize raise torch's IndexError when an embedding index is outside [0, n) (unchecked, the
    lookup would read zeros: a silently wrong result)."""

    def error(count: int, value: int) -> IndexError:
        return IndexError(f"{fn}(): index {value} is out of range for {n} embeddings ({count} such index(es))")

    check_range(idx, 0, n, error)


def embedding(
    input: Tensor,
    weight: Tensor,
    padding_idx: int | None = None,
    max_norm: float | None = None,
    norm_type: float = 2.0,
    scale_grad_by_freq: bool = False,
    sparse: bool = False,
) -> Tensor:
    """Rows of weight (num_embeddings, dim) picked by the integer input; the row at padding_idx gets no gradient.
    max_norm renormalizes, in place as torch, each looked-up row whose norm_type-norm exceeds it (to max_norm);
    scale_grad_by_freq divides each row's gradient by how often the row occurs in the input."""
    idx, w = _tensor(input, "embedding"), _tensor(weight, "embedding", "weight")
    if idx.dtype.is_float or idx.dtype is dtypes.bool:
        raise RuntimeError(f"embedding(): expected an integer index tensor (Long or Int), got {idx.dtype}")
    if w.ndim != 2:
        raise RuntimeError(f"embedding(): weight must be 2-D (num_embeddings, embedding_dim), got shape {w.shape}")
    if padding_idx is not None:
        if not -w.shape[0] <= padding_idx < w.shape[0]:
            raise AssertionError(f"embedding(): padding_idx must be within num_embeddings ({w.shape[0]})")
        padding_idx %= w.shape[0]
    used = None
    if max_norm is not None or scale_grad_by_freq:
        rows = Tensor.arange(w.shape[0], device=w.device)
        used = (idx.reshape(-1, 1) == rows).cast(dtypes.int64).sum(0)  # (num_embeddings,) lookups per row
    if max_norm is not None:
        wd = w.detach()
        norms = wd.norm(norm_type, 1, keepdim=True)
        renorm = (used.reshape(-1, 1) > 0) & (norms > max_norm)  # type: ignore[union-attr]
        w.assign(renorm.where(wd * (max_norm / (norms + 1e-7)), wd))
    check_rows(idx, w.shape[0], "embedding")
    out = w.take_rows(idx)  # checked: no second check of x[idx]'s
    if scale_grad_by_freq:  # the same values, the gradient of each lookup divided by its row's count
        freq = used.take_rows(idx).cast(out.dtype).unsqueeze(-1)  # type: ignore[union-attr]
        out = out.detach() + (out - out.detach()) / freq
    if padding_idx is None:
        return out
    return (idx == padding_idx).unsqueeze(-1).where(out.detach(), out)


def _bag_membership(idx: Tensor, offsets: Tensor | None, include_last_offset: bool, fn: str) -> Tensor | None:
    """For a 1-D input with offsets: (bags, n) bool, True where position i lies in bag b, [offsets[b], end_b) with
    end_b the next offset (or n; with include_last_offset the last offset closes the last bag). None for a 2-D
    input: row b is bag b."""
    if idx.ndim == 2:
        if offsets is not None:
            raise ValueError(
                f"{fn}(): if input is 2D, then offsets has to be None, as input is treated is a mini-batch of fixed "
                f"length sequences. However, found offsets of type {type(offsets).__name__}"
            )
        return None
    if idx.ndim != 1:
        raise ValueError(f"{fn}(): input has to be 1D or 2D Tensor, but got Tensor of dimension {idx.ndim}")
    if offsets is None:
        raise ValueError(f"{fn}(): offsets has to be a 1D Tensor but got None")
    off = _tensor(offsets, fn, "offsets")
    if off.ndim != 1 or off.dtype.is_float or off.dtype is dtypes.bool:
        raise ValueError(f"{fn}(): offsets has to be a 1D integer Tensor, got {off.dtype} of shape {off.shape}")
    if include_last_offset and off.shape[0] < 1:
        raise ValueError(f"{fn}(): include_last_offset needs at least one offset")
    n = idx.shape[0]
    off = off.cast(dtypes.int64)
    if include_last_offset:
        starts, ends = off[:-1], off[1:]
    else:
        ends = off[1:].cat(Tensor([n], dtype=dtypes.int64, device=off.device)) if off.shape[0] else off
        starts = off
    pos = Tensor.arange(n, dtype=dtypes.int64, device=idx.device).reshape(1, n)
    return (pos >= starts.reshape(-1, 1)) & (pos < ends.reshape(-1, 1))


def embedding_bag(
    input: Tensor,
    weight: Tensor,
    offsets: Tensor | None = None,
    max_norm: float | None = None,
    norm_type: float = 2,
    scale_grad_by_freq: bool = False,
    mode: str = "mean",
    sparse: bool = False,
    per_sample_weights: Tensor | None = None,
    include_last_offset: bool = False,
    padding_idx: int | None = None,
) -> Tensor:
    """The sum, mean or max of the embedding rows of each bag -> (bags, dim): a 2-D input (B, L) is B bags of L
    indices; a 1-D input is cut into bags at `offsets`. per_sample_weights (the input's shape, mode 'sum') scale
    each row first; entries equal to padding_idx are left out of every bag (and of the mean's count); an empty
    bag gives zeros. max_norm and scale_grad_by_freq act on the looked-up rows as in embedding()."""
    fn = "embedding_bag"
    idx, w = _tensor(input, fn), _tensor(weight, fn, "weight")
    if idx.dtype.is_float or idx.dtype is dtypes.bool:
        raise RuntimeError(f"{fn}(): expected an integer index tensor (Long or Int), got {idx.dtype}")
    if w.ndim != 2:
        raise RuntimeError(f"{fn}(): weight must be 2-D (num_embeddings, embedding_dim), got shape {w.shape}")
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"{fn}(): mode has to be one of sum, mean or max, got {mode!r}")
    if per_sample_weights is not None:
        if mode != "sum":
            raise NotImplementedError(
                f"{fn}(): per_sample_weights was not None. per_sample_weights is only supported for mode='sum' "
                f"(got mode='{mode}')"
            )
        if _tensor(per_sample_weights, fn, "per_sample_weights").shape != idx.shape:
            raise ValueError(
                f"{fn}(): embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is not None, then it "
                f"must have the same shape as the input ({idx.shape})"
            )
    if padding_idx is not None:
        if not -w.shape[0] <= padding_idx < w.shape[0]:
            raise AssertionError(f"{fn}(): padding_idx must be within num_embeddings ({w.shape[0]})")
        padding_idx %= w.shape[0]
    member = _bag_membership(idx, offsets, include_last_offset, fn)
    rows = embedding(idx, w, None, max_norm, norm_type, scale_grad_by_freq)  # (*idx.shape, dim)
    if per_sample_weights is not None:
        rows = rows * per_sample_weights.cast(rows.dtype).unsqueeze(-1)
    used = None if padding_idx is None else idx != padding_idx
    if member is None:  # 2-D: (B, L) entries, (B, L, dim) rows
        mask = used if used is not None else Tensor.ones(*idx.shape, dtype=dtypes.bool, device=idx.device)
        vals = rows
    else:  # 1-D: (B, n) membership against the (1, n, dim) rows
        mask = member if used is None else member & used.reshape(1, -1)
        vals = rows.unsqueeze(0)
    count = mask.sum(-1)  # (B,) entries per bag
    if mode == "max":
        low = mask.unsqueeze(-1).where(vals, -math.inf).max(1)
        return (count > 0).unsqueeze(-1).where(low, 0.0).cast(w.dtype)
    if member is None:
        total = mask.unsqueeze(-1).where(vals, 0.0).sum(1)
    else:
        total = mask.cast(rows.dtype).matmul(rows)  # (B, n) @ (n, dim)
    if mode == "sum":
        return total.cast(w.dtype)
    return (total / count.maximum(1).cast(total.dtype).unsqueeze(-1)).cast(w.dtype)


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    x = _tensor(tensor, "one_hot", "tensor")
    if x.dtype.is_float or x.dtype is dtypes.bool:
        raise RuntimeError(f"one_hot(): one_hot is only applicable to index tensor (integer), got {x.dtype}")
    return x.one_hot(num_classes)


def _check_p(p: float, fn: str) -> None:
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"{fn}(): dropout probability has to be between 0 and 1, but got {p}")


def _dropout_mask(x: Tensor, p: float, mask_shape: tuple[int, ...]) -> Tensor:
    """x with the entries where a uniform draw of mask_shape (broadcast to x) is below p zeroed, the rest scaled
    by 1/(1-p)."""
    if p == 1.0:
        return x * 0
    keep = Tensor.rand(*mask_shape, device=x.device) >= p
    return keep.where(x, 0.0).cast(x.dtype) * (1.0 / (1.0 - p))


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Each element zeroed with probability p and the rest scaled by 1/(1-p) when `training` (torch's default
    True, unlike nn.Dropout, which passes its module's mode)."""
    x = _tensor(input, "dropout")
    _check_p(p, "dropout")
    if not training or p == 0.0:
        return x
    return _dropout_mask(x, p, x.shape)


def _feature_dropout(fn: str, x: Tensor, p: float, training: bool, batched_ndim: int) -> Tensor:
    """Whole channels zeroed: one draw per (N, C) of an input (N, C, *spatial), or per C of an unbatched one."""
    _tensor(x, fn)
    _check_p(p, fn)
    _ndim_in(x, (batched_ndim - 1, batched_ndim), fn, f"(N, C, {batched_ndim - 2} spatial dims) or unbatched")
    if not training or p == 0.0:
        return x
    lead = 1 if x.ndim == batched_ndim - 1 else 2
    return _dropout_mask(x, p, x.shape[:lead] + (1,) * (x.ndim - lead))


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    return _feature_dropout("dropout1d", input, p, training, 3)


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Input (N, C, H, W) or (C, H, W); a 3-D input is taken as (N, C, L), as torch does (with its warning)."""
    x = _tensor(input, "dropout2d")
    _check_p(p, "dropout2d")
    _ndim_in(x, (3, 4), "dropout2d", "(N, C, H, W) or (N, C, L)")
    if not training or p == 0.0:
        return x
    return _dropout_mask(x, p, x.shape[:2] + (1,) * (x.ndim - 2))


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    return _feature_dropout("dropout3d", input, p, training, 5)


_SELU_SATURATION = -1.7580993408473766  # -scale * alpha of SELU: the value SELU tends to for x -> -inf


def _alpha_dropout_mask(x: Tensor, p: float, mask_shape: tuple[int, ...]) -> Tensor:
    """Dropped entries (a uniform draw of mask_shape, broadcast, below p) set to SELU's saturation value a', then
    everything mapped by a*y + b with a = ((1 - p)(1 + p a'^2))^-1/2, b = -a a' p: zero mean and unit variance
    are kept for a standardized input."""
    if p == 1.0:
        return x * 0
    a = ((1 - p) * (1 + p * _SELU_SATURATION**2)) ** -0.5
    keep = Tensor.rand(*mask_shape, device=x.device) >= p
    return (keep.where(x, _SELU_SATURATION) * a - a * _SELU_SATURATION * p).cast(x.dtype)


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    """Dropout that keeps a SELU network's self-normalization (torch's default training=False: the identity)."""
    x = _tensor(input, "alpha_dropout")
    _check_p(p, "alpha_dropout")
    if not training or p == 0.0:
        return x
    return _alpha_dropout_mask(x, p, x.shape)


def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    """alpha_dropout of whole channels: one draw per (N, C) of an input (N, C, *), as torch."""
    x = _tensor(input, "feature_alpha_dropout")
    _check_p(p, "feature_alpha_dropout")
    if not training or p == 0.0:
        return x
    if x.ndim < 2:
        raise RuntimeError("feature_alpha_dropout(): Feature dropout requires at least 2 dimensions in the input")
    return _alpha_dropout_mask(x, p, x.shape[:2] + (1,) * (x.ndim - 2))


# ---------------------------------------------------------------- normalization


def _channel_shape(x: Tensor) -> tuple[int, ...]:
    """(1, C, 1, ...) to broadcast a per-channel vector along dim 1."""
    return tuple(s if i == 1 else 1 for i, s in enumerate(x.shape))


def _check_channel_vec(v: Tensor | None, c: int, fn: str, name: str) -> None:
    if v is not None and (_tensor(v, fn, name).ndim != 1 or v.shape[0] != c):
        raise RuntimeError(f"{fn}(): {name} must have shape ({c},) (one per channel), got {v.shape}")


def _affine(y: Tensor, weight: Tensor | None, bias: Tensor | None, shape: tuple[int, ...]) -> Tensor:
    if weight is not None:
        y = y * weight.reshape(shape)
    return y if bias is None else y + bias.reshape(shape)


def _update_running(stat: Tensor, batch: Tensor, momentum: float) -> None:
    """stat <- (1 - momentum) * stat + momentum * batch, in place (outside the autograd graph)."""
    stat.assign((stat * (1 - momentum) + batch.detach().cast(stat.dtype) * momentum).detach())


def batch_norm(
    input: Tensor,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    training: bool = False,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Normalize each channel (dim 1) of (N, C, *) by the batch statistics when `training` (running_mean and
    running_var, if given, are updated in place with the unbiased variance, as torch), else by the running ones."""
    x = _float_tensor(input, "batch_norm")
    if x.ndim < 2:
        raise ValueError(f"batch_norm(): expected an input (N, C, *) with at least 2 dims, got shape {x.shape}")
    c = x.shape[1]
    for v, name in [(running_mean, "running_mean"), (running_var, "running_var"), (weight, "weight"), (bias, "bias")]:
        _check_channel_vec(v, c, "batch_norm", name)
    shape = _channel_shape(x)
    if training:
        count = x.numel() // c
        if count <= 1:
            raise ValueError(
                f"batch_norm(): expected more than 1 value per channel when training, got input size {x.shape}"
            )
        axes = tuple(a for a in range(x.ndim) if a != 1)
        mean = x.mean(axes)
        var = (x - mean.reshape(shape)).square().mean(axes)
        if running_mean is not None:
            _update_running(running_mean, mean, momentum)
        if running_var is not None:
            _update_running(running_var, var * (count / (count - 1)), momentum)
    else:
        if running_mean is None or running_var is None:
            raise RuntimeError("batch_norm(): running_mean and running_var must be defined in evaluation mode")
        mean, var = running_mean.cast(x.dtype), running_var.cast(x.dtype)
    y = (x - mean.reshape(shape)) * (var.reshape(shape) + eps).rsqrt()
    return _affine(y, weight, bias, shape)


def instance_norm(
    input: Tensor,
    running_mean: Tensor | None = None,
    running_var: Tensor | None = None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    use_input_stats: bool = True,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Normalize each (sample, channel) over its spatial dims; running stats, if given, take the batch average of
    the per-instance statistics (in place), and are used instead when use_input_stats is False."""
    x = _float_tensor(input, "instance_norm")
    if x.ndim < 3:
        raise ValueError(f"instance_norm(): expected an input (N, C, *spatial) with at least 3 dims, got {x.shape}")
    c = x.shape[1]
    for v, name in [(running_mean, "running_mean"), (running_var, "running_var"), (weight, "weight"), (bias, "bias")]:
        _check_channel_vec(v, c, "instance_norm", name)
    shape = _channel_shape(x)
    if not use_input_stats:
        if running_mean is None or running_var is None:
            raise ValueError("instance_norm(): expected running_mean and running_var when use_input_stats=False")
        y = (x - running_mean.reshape(shape)) * (running_var.reshape(shape) + eps).rsqrt()
        return _affine(y, weight, bias, shape)
    axes = tuple(range(2, x.ndim))
    count = math.prod(x.shape[2:])
    if count <= 1:
        raise ValueError(
            f"instance_norm(): expected more than 1 spatial element when training, got input size {x.shape}"
        )
    mean = x.mean(axes, keepdim=True)
    var = (x - mean).square().mean(axes, keepdim=True)
    if running_mean is not None:
        _update_running(running_mean, mean.reshape(x.shape[0], c).mean(0), momentum)
    if running_var is not None:
        _update_running(running_var, var.reshape(x.shape[0], c).mean(0) * (count / (count - 1)), momentum)
    return _affine((x - mean) * (var + eps).rsqrt(), weight, bias, shape)


def _normalized_axes(x: Tensor, normalized_shape: int | Sequence[int], fn: str) -> tuple[int, ...]:
    ns = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if not ns or x.shape[x.ndim - len(ns) :] != ns or len(ns) > x.ndim:
        raise RuntimeError(
            f"{fn}(): given normalized_shape={list(ns)}, expected input with shape [*, {', '.join(map(str, ns))}], "
            f"but got input of size {list(x.shape)}"
        )
    return tuple(range(x.ndim - len(ns), x.ndim))


def layer_norm(
    input: Tensor,
    normalized_shape: int | Sequence[int],
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    """Normalize over the trailing dims normalized_shape (biased variance), then weight and bias of that shape."""
    x = _float_tensor(input, "layer_norm")
    axes = _normalized_axes(x, normalized_shape, "layer_norm")
    return x._affine_layernorm(weight, bias, len(axes), eps)


def rms_norm(
    input: Tensor, normalized_shape: int | Sequence[int], weight: Tensor | None = None, eps: float | None = None
) -> Tensor:
    """x / sqrt(mean(x^2 over the trailing dims) + eps) * weight; eps None is the dtype's machine epsilon."""
    x = _float_tensor(input, "rms_norm")
    axes = _normalized_axes(x, normalized_shape, "rms_norm")
    if eps is None:
        eps = {dtypes.float16: 2.0**-10, dtypes.bfloat16: 2.0**-7, dtypes.float64: 2.0**-52}.get(x.dtype, 2.0**-23)
    y = x * (x.square().mean(axes, keepdim=True) + eps).rsqrt()
    return y if weight is None else y * weight


def group_norm(
    input: Tensor, num_groups: int, weight: Tensor | None = None, bias: Tensor | None = None, eps: float = 1e-5
) -> Tensor:
    """Normalize each group of C/num_groups channels of (N, C, *) over its channels and spatial dims."""
    x = _float_tensor(input, "group_norm")
    if x.ndim < 2 or x.shape[1] % num_groups:
        raise RuntimeError(
            f"group_norm(): expected an input (N, C, *) with C divisible by num_groups={num_groups}, got shape "
            f"{x.shape}"
        )
    c = x.shape[1]
    _check_channel_vec(weight, c, "group_norm", "weight")
    _check_channel_vec(bias, c, "group_norm", "bias")
    y = x.reshape(x.shape[0], num_groups, -1).layernorm(-1, eps).reshape(x.shape)
    return _affine(y, weight, bias, _channel_shape(x))


def local_response_norm(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> Tensor:
    """x / (k + alpha * mean of x^2 over a window of `size` channels)^beta, the window zero-padded by size//2
    before and (size-1)//2 after each channel."""
    x = _float_tensor(input, "local_response_norm")
    if x.ndim < 3:
        raise ValueError(f"local_response_norm(): expected 3D or higher dimensionality input, got shape {x.shape}")
    if x.numel() == 0:
        return x
    c = x.shape[1]
    sq = x.square()
    padded = sq.pad(((0, 0), (size // 2, (size - 1) // 2), *[(0, 0)] * (x.ndim - 2)))
    total = padded[:, 0:c]
    for j in range(1, size):
        total = total + padded[:, j : j + c]
    return x / (total * (alpha / size) + k).pow(beta)


# ---------------------------------------------------------------- attention


def scaled_dot_product_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Tensor | None = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
    enable_gqa: bool = False,
) -> Tensor:
    """softmax(q @ k^T * scale + mask) @ v, scale 1/sqrt(E) by default; a bool mask keeps True positions, a float
    mask is added; is_causal keeps key j <= query i (top-left aligned); dropout on the attention weights when
    dropout_p > 0; enable_gqa repeats key/value heads (dim -3) to the query's."""
    q = _float_tensor(query, "scaled_dot_product_attention", "query")
    k = _float_tensor(key, "scaled_dot_product_attention", "key")
    v = _float_tensor(value, "scaled_dot_product_attention", "value")
    if is_causal and attn_mask is not None:  # torch refuses both (the Tensor method applies both, as tinygrad)
        raise RuntimeError("scaled_dot_product_attention(): explicit attn_mask should not be set when is_causal=True")
    weights, v = q._attention_weights(k, v, attn_mask, is_causal, scale, enable_gqa)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p, training=True)
    return weights.matmul(v)


# ---------------------------------------------------------------- losses


def _class_dim(x: Tensor) -> int:
    return 1 if x.ndim >= 2 else 0


def _check_index_target(x: Tensor, target: Tensor, fn: str) -> None:
    """Class-index target: an integer tensor of the input's shape without the class dim."""
    if x.ndim == 0:
        raise ValueError(f"{fn}(): expected an input with a class dimension, got a 0-D tensor")
    if target.dtype.is_float or target.dtype is dtypes.bool:
        raise RuntimeError(f"{fn}(): expected an integer (Long) class-index target, got {target.dtype}")
    cd = _class_dim(x)
    want = x.shape[:cd] + x.shape[cd + 1 :]
    if target.shape != want:
        raise ValueError(
            f"{fn}(): expected target of shape {want} (the input {x.shape} without its class dim), got {target.shape}"
        )


def _class_weight(weight: Tensor | None, x: Tensor, fn: str) -> Tensor | None:
    """A (C,) per-class weight, checked and shaped to broadcast along x's class dim."""
    return None if weight is None else Tensor._class_weight(x, _tensor(weight, fn, "weight"), f"{fn}()")


def nll_loss(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    ignore_index: int = -100,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """-input[n, target[n]] * weight[target[n]] for log-probabilities (N, C, *) or (C,); 'mean' divides by the
    summed weights of the targets that are not ignore_index (Tensor.nll_loss)."""
    x, t = _float_tensor(input, "nll_loss"), _tensor(target, "nll_loss", "target")
    red = _reduction(size_average, reduce, reduction, "nll_loss")
    _check_index_target(x, t, "nll_loss")
    return x._nll(t, _class_weight(weight, x, "nll_loss"), ignore_index, red)


def cross_entropy(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    ignore_index: int = -100,
    reduce: bool | None = None,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
) -> Tensor:
    """Logits (N, C, *) or (C,) against class indices (N, *) or class probabilities of the input's shape, as torch
    (Tensor.cross_entropy: weight per class, ignore_index, label_smoothing)."""
    x, t = _float_tensor(input, "cross_entropy"), _tensor(target, "cross_entropy", "target")
    red = _reduction(size_average, reduce, reduction, "cross_entropy")
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"cross_entropy(): label_smoothing must be between 0.0 and 1.0, got {label_smoothing}")
    if x.ndim == 0:
        raise ValueError("cross_entropy(): expected an input with a class dimension, got a 0-D tensor")
    if t.dtype.is_float and t.shape != x.shape:
        raise ValueError(
            f"cross_entropy(): expected a probability target of the input's shape {x.shape}, got {t.shape}"
        )
    if not t.dtype.is_float:
        _check_index_target(x, t, "cross_entropy")
    w = None if weight is None else _tensor(weight, "cross_entropy", "weight")
    _class_weight(w, x, "cross_entropy")  # checked here too: the error names this function
    return x.cross_entropy(t, red, label_smoothing, weight=w, ignore_index=ignore_index)


def binary_cross_entropy(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """-(y log x + (1 - y) log(1 - x)) * weight for probabilities x, each log clamped at -100 as torch."""
    x, t = _float_tensor(input, "binary_cross_entropy"), _tensor(target, "binary_cross_entropy", "target")
    red = _reduction(size_average, reduce, reduction, "binary_cross_entropy")
    _same_shape(x, t, "binary_cross_entropy")
    t = t.cast(x.dtype)
    loss = x.binary_crossentropy(t, reduction="none")  # each log clamped at -100, as torch
    if weight is not None:
        loss = loss * _tensor(weight, "binary_cross_entropy", "weight")
    return _reduce(loss, red)


def binary_cross_entropy_with_logits(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
    pos_weight: Tensor | None = None,
) -> Tensor:
    """(1 - y) x - (1 + (pos_weight - 1) y) logsigmoid(x), times weight: stable for any logit."""
    fn = "binary_cross_entropy_with_logits"
    x, t = _float_tensor(input, fn), _tensor(target, fn, "target")
    red = _reduction(size_average, reduce, reduction, fn)
    _same_shape(x, t, fn)
    t = t.cast(x.dtype)
    log_weight = 1.0 if pos_weight is None else (_tensor(pos_weight, fn, "pos_weight") - 1) * t + 1
    loss = (1 - t) * x - x.logsigmoid() * log_weight
    if weight is not None:
        loss = loss * _tensor(weight, fn, "weight")
    return _reduce(loss, red)


def _weighted(loss: Tensor, x: Tensor, weight: Tensor | None, red: str, fn: str, mean_by_weight: bool) -> Tensor:
    """torch's elementwise-weighted regression losses: weight of the input's shape; 'mean' divides by the summed
    weights (mse, l1) or by the element count (huber)."""
    if weight is None:
        return _reduce(loss, red)
    if _tensor(weight, fn, "weight").shape != x.shape:
        raise ValueError(f"{fn}(): weights and input must have the same size, got {weight.shape} and {x.shape}")
    loss = loss * weight
    if red == "mean" and mean_by_weight:
        return loss.sum() / weight.sum()
    return _reduce(loss, red)


def mse_loss(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
    weight: Tensor | None = None,
) -> Tensor:
    x, t = _tensor(input, "mse_loss"), _tensor(target, "mse_loss", "target")
    red = _reduction(size_average, reduce, reduction, "mse_loss")
    a, b = _broadcast_pair(x, t, "mse_loss")
    return _weighted(a.mse_loss(b, reduction="none"), x, weight, red, "mse_loss", True)


def l1_loss(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
    weight: Tensor | None = None,
) -> Tensor:
    x, t = _tensor(input, "l1_loss"), _tensor(target, "l1_loss", "target")
    red = _reduction(size_average, reduce, reduction, "l1_loss")
    a, b = _broadcast_pair(x, t, "l1_loss")
    return _weighted(a.l1_loss(b, reduction="none"), x, weight, red, "l1_loss", True)


def smooth_l1_loss(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
    beta: float = 1.0,
) -> Tensor:
    """0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (beta 0: the L1 loss)."""
    x, t = _tensor(input, "smooth_l1_loss"), _tensor(target, "smooth_l1_loss", "target")
    red = _reduction(size_average, reduce, reduction, "smooth_l1_loss")
    if beta < 0:
        raise RuntimeError(f"smooth_l1_loss(): beta must be non-negative, got {beta}")
    a, b = _broadcast_pair(x, t, "smooth_l1_loss")
    d = (a - b).abs()
    loss = d if beta == 0 else (d < beta).where(d.square() * (0.5 / beta), d - 0.5 * beta)
    return _reduce(loss, red)


def huber_loss(
    input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0, weight: Tensor | None = None
) -> Tensor:
    """0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta)."""
    x, t = _tensor(input, "huber_loss"), _tensor(target, "huber_loss", "target")
    red = _reduction(None, None, reduction, "huber_loss")
    if delta <= 0:
        raise RuntimeError(f"huber_loss(): delta must be positive, got {delta}")
    a, b = _broadcast_pair(x, t, "huber_loss")
    d = (a - b).abs()
    loss = (d < delta).where(d.square() * 0.5, (d - 0.5 * delta) * delta)
    return _weighted(loss, x, weight, red, "huber_loss", False)


def kl_div(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
    log_target: bool = False,
) -> Tensor:
    """target * (log target - input) for log-probabilities input (0 where target is 0); 'batchmean' divides the
    sum by the batch size, which is what the KL divergence means."""
    x, t = _float_tensor(input, "kl_div"), _tensor(target, "kl_div", "target")
    if reduction == "batchmean" and size_average is None and reduce is None:
        red = "batchmean"
    else:
        red = _reduction(size_average, reduce, reduction, "kl_div")
    loss = t.exp() * (t - x) if log_target else t.xlogy(t) - t * x
    if red == "batchmean":
        return loss.sum() / x.shape[0] if x.ndim else loss.sum()
    return _reduce(loss, red)


def poisson_nll_loss(
    input: Tensor,
    target: Tensor,
    log_input: bool = True,
    full: bool = False,
    size_average: bool | None = None,
    eps: float = 1e-8,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """exp(x) - y x (log_input) or x - y log(x + eps); `full` adds Stirling's y log y - y + 0.5 log(2 pi y) where
    y > 1."""
    x, t = _float_tensor(input, "poisson_nll_loss"), _tensor(target, "poisson_nll_loss", "target")
    red = _reduction(size_average, reduce, reduction, "poisson_nll_loss")
    loss = x.exp() - t * x if log_input else x - t * (x + eps).log()
    if full:
        tf = t.cast(x.dtype)
        safe = (tf > 1).where(tf, 2.0)  # the term is only taken where y > 1; keep log's input positive elsewhere
        stirling = safe * safe.log() - safe + (safe * (2 * math.pi)).log() * 0.5
        loss = loss + (tf > 1).where(stirling, 0.0)
    return _reduce(loss, red)


def gaussian_nll_loss(
    input: Tensor, target: Tensor, var: Tensor | float, full: bool = False, eps: float = 1e-6, reduction: str = "mean"
) -> Tensor:
    """0.5 (log var + (x - y)^2 / var) (+ 0.5 log 2 pi when full); var of the input's shape, or one dim short or
    with one dim of size 1 (shared variance). var is clamped at eps for the value only, as torch (its gradient
    passes as if unclamped)."""
    x, t = _float_tensor(input, "gaussian_nll_loss"), _tensor(target, "gaussian_nll_loss", "target")
    if isinstance(var, (int, float)):
        if var < 0:
            raise ValueError("gaussian_nll_loss(): var has negative entry/entries")
        v = Tensor.full(x.shape, float(var), dtype=x.dtype, device=x.device)
    else:
        v = _tensor(var, "gaussian_nll_loss", "var")
        if (v < 0).any().item():
            raise ValueError("gaussian_nll_loss(): var has negative entry/entries")
    if v.shape != x.shape:
        if x.shape[:-1] == v.shape:
            v = v.unsqueeze(-1)
        elif not (x.ndim == v.ndim and sum(b for a, b in zip(x.shape, v.shape) if a != b) == 1):
            raise ValueError(f"gaussian_nll_loss(): var is of incorrect size {v.shape} for input {x.shape}")
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"gaussian_nll_loss(): reduction must be 'mean', 'sum' or 'none', got {reduction!r}")
    v = v + (v.maximum(eps) - v).detach()
    loss = ((x - t).square() / v + v.log()) * 0.5
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def margin_ranking_loss(
    input1: Tensor,
    input2: Tensor,
    target: Tensor,
    margin: float = 0.0,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """max(0, -y (x1 - x2) + margin)."""
    fn = "margin_ranking_loss"
    a, b, y = _tensor(input1, fn, "input1"), _tensor(input2, fn, "input2"), _tensor(target, fn, "target")
    red = _reduction(size_average, reduce, reduction, fn)
    if not a.ndim == b.ndim == y.ndim:
        raise RuntimeError(
            f"{fn}(): all input tensors should have the same dimension but got sizes: input1: {a.shape}, "
            f"input2: {b.shape}, target: {y.shape}"
        )
    return _reduce((-y * (a - b) + margin).relu(), red)


def hinge_embedding_loss(
    input: Tensor,
    target: Tensor,
    margin: float = 1.0,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """x where y == 1, max(0, margin - x) where y == -1 (torch's sum of the two, for y in {1, -1})."""
    x, y = _tensor(input, "hinge_embedding_loss"), _tensor(target, "hinge_embedding_loss", "target")
    red = _reduction(size_average, reduce, reduction, "hinge_embedding_loss")
    loss = (y != 1).where((margin - x).relu(), 0.0) + (y != -1).where(x, 0.0)
    return _reduce(loss, red)


def soft_margin_loss(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """log(1 + exp(-y x)) = -logsigmoid(y x)."""
    x, y = _float_tensor(input, "soft_margin_loss"), _tensor(target, "soft_margin_loss", "target")
    red = _reduction(size_average, reduce, reduction, "soft_margin_loss")
    return _reduce(-(y * x).logsigmoid(), red)


def multilabel_soft_margin_loss(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """-(y logsigmoid(x) + (1 - y) logsigmoid(-x)) * weight, averaged over the classes (last dim)."""
    fn = "multilabel_soft_margin_loss"
    x, y = _float_tensor(input, fn), _tensor(target, fn, "target")
    red = _reduction(size_average, reduce, reduction, fn)
    _same_shape(x, y, fn)
    loss = -(y * x.logsigmoid() + (1 - y) * (-x).logsigmoid())
    if weight is not None:
        loss = loss * _tensor(weight, fn, "weight")
    return _reduce(loss.mean(-1) if x.ndim else loss, red)


def triplet_margin_loss(
    anchor: Tensor,
    positive: Tensor,
    negative: Tensor,
    margin: float = 1.0,
    p: float = 2,
    eps: float = 1e-6,
    swap: bool = False,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """max(d(a, p) - d(a, n) + margin, 0) with pairwise distances; swap takes min(d(a, n), d(p, n))."""
    fn = "triplet_margin_loss"
    a, pos, neg = _tensor(anchor, fn, "anchor"), _tensor(positive, fn, "positive"), _tensor(negative, fn, "negative")
    red = _reduction(size_average, reduce, reduction, fn)
    if not a.ndim == pos.ndim == neg.ndim or a.ndim not in (1, 2):
        raise RuntimeError(
            f"{fn}(): the anchor, positive and negative must have the same number of dims (1 or 2), got "
            f"{a.shape}, {pos.shape}, {neg.shape}"
        )
    if margin <= 0:
        raise ValueError(f"{fn}(): margin must be greater than 0, got {margin}")
    d_pos = pairwise_distance(a, pos, p, eps)
    d_neg = pairwise_distance(a, neg, p, eps)
    if swap:
        d_neg = d_neg.minimum(pairwise_distance(pos, neg, p, eps))
    return _reduce((d_pos - d_neg + margin).relu(), red)


def triplet_margin_with_distance_loss(
    anchor: Tensor,
    positive: Tensor,
    negative: Tensor,
    *,
    distance_function: Any = None,
    margin: float = 1.0,
    swap: bool = False,
    reduction: str = "mean",
) -> Tensor:
    """max(d(a, p) - d(a, n) + margin, 0) for any distance function (pairwise_distance by default); swap takes
    min(d(a, n), d(p, n))."""
    fn = "triplet_margin_with_distance_loss"
    a, pos, neg = _tensor(anchor, fn, "anchor"), _tensor(positive, fn, "positive"), _tensor(negative, fn, "negative")
    red = _reduction(None, None, reduction, fn)
    if margin <= 0:
        raise ValueError(f"{fn}(): margin must be greater than 0, got {margin}")
    if not a.ndim == pos.ndim == neg.ndim:
        raise RuntimeError(
            f"{fn}(): The anchor, positive, and negative tensors are expected to have the same number of dimensions, "
            f"but got: anchor {a.ndim}D, positive {pos.ndim}D, and negative {neg.ndim}D inputs"
        )
    dist = pairwise_distance if distance_function is None else distance_function
    d_pos, d_neg = dist(a, pos), dist(a, neg)
    if swap:
        d_neg = d_neg.minimum(dist(pos, neg))
    return _reduce((d_pos - d_neg + margin).relu(), red)


def multilabel_margin_loss(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """Per sample, the sum over its target classes j and every non-target class i of max(0, 1 - (x[j] - x[i])),
    divided by C. target holds class indices of the input's shape (C,) or (N, C); the first negative entry
    ends the sample's targets."""
    fn = "multilabel_margin_loss"
    x, t = _float_tensor(input, fn), _tensor(target, fn, "target")
    red = _reduction(size_average, reduce, reduction, fn)
    if x.ndim not in (1, 2) or (x.ndim == 2 and x.shape[1] == 0) or (x.ndim == 1 and x.shape[0] == 0):
        raise RuntimeError(
            f"{fn}(): expected non-empty vector or matrix with optional 0-dim batch size, but got: {list(x.shape)}"
        )
    if t.dtype.is_float or t.dtype is dtypes.bool:
        raise RuntimeError(f"{fn}(): expected an integer (Long) target of class indices, got {t.dtype}")
    if t.shape != x.shape:
        raise RuntimeError(f"{fn}(): inconsistent target size: {list(t.shape)} for input of size: {list(x.shape)}")
    c = x.shape[-1]
    xb, tb = x.reshape(-1, c), t.reshape(-1, c).cast(dtypes.int64)
    valid = (tb < 0).cast(dtypes.int32).cumsum(-1) == 0  # (N, K): the entries before the first negative one
    classes = Tensor.arange(c, dtype=dtypes.int64, device=x.device)
    picks = valid.unsqueeze(-1) & (tb.unsqueeze(-1) == classes)  # (N, K, C): entry k names class c
    is_target = picks.any(1)  # (N, C)
    x_target = picks.where(xb.unsqueeze(1), 0.0).sum(-1)  # (N, K): x at each target entry
    margins = (1 - x_target.unsqueeze(-1) + xb.unsqueeze(1)).relu()  # (N, K, C)
    counted = valid.unsqueeze(-1) & is_target.logical_not().unsqueeze(1)
    loss = counted.where(margins, 0.0).sum((1, 2)).cast(x.dtype) / c
    return _reduce(loss.reshape(x.shape[:-1]), red)


def cosine_embedding_loss(
    input1: Tensor,
    input2: Tensor,
    target: Tensor,
    margin: float = 0.0,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """1 - cos(x1, x2) where y == 1, max(0, cos(x1, x2) - margin) where y == -1; cos over the last dim with
    1e-12 added to each squared norm, as torch."""
    fn = "cosine_embedding_loss"
    a, b, y = _float_tensor(input1, fn, "input1"), _float_tensor(input2, fn, "input2"), _tensor(target, fn, "target")
    red = _reduction(size_average, reduce, reduction, fn)
    if a.shape != b.shape or a.ndim not in (1, 2) or y.shape != a.shape[:-1]:
        raise RuntimeError(
            f"{fn}(): expected input1 and input2 of one shape (N, D) or (D,) and target (N,) or (), got "
            f"{a.shape}, {b.shape}, {y.shape}"
        )
    eps = 1e-12
    cos = (a * b).sum(-1) / ((a.square().sum(-1) + eps) * (b.square().sum(-1) + eps)).sqrt()
    loss = (y == 1).where(1 - cos, 0.0) + (y == -1).where((cos - margin).relu(), 0.0)
    return _reduce(loss, red)


def multi_margin_loss(
    input: Tensor,
    target: Tensor,
    p: int = 1,
    margin: float = 1.0,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """Per sample, sum over classes j != y of max(0, margin - x[y] + x[j])^p * weight[y], divided by C."""
    x, t = _float_tensor(input, "multi_margin_loss"), _tensor(target, "multi_margin_loss", "target")
    red = _reduction(size_average, reduce, reduction, "multi_margin_loss")
    if p not in (1, 2):
        raise ValueError(f"multi_margin_loss(): only p == 1 and p == 2 supported, got {p}")
    if x.ndim not in (1, 2):
        raise RuntimeError(f"multi_margin_loss(): expected a 1-D (C,) or 2-D (N, C) input, got shape {x.shape}")
    _check_index_target(x, t, "multi_margin_loss")
    w = _class_weight(weight, x, "multi_margin_loss")
    onehot = x._picked_onehot(t)
    cd = x.ndim - 1
    xy = (onehot * x).sum(cd, keepdim=True)
    m = (x - xy + margin).relu()
    if p == 2:
        m = m.square()
    if w is not None:
        m = m * (onehot * w).sum(cd, keepdim=True)
    loss = (m * (1 - onehot)).sum(cd) / x.shape[cd]
    return _reduce(loss, red)
