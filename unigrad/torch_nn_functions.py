"""torch's top-level spellings of nn.functional (torch.conv2d, torch.max_pool2d, torch.layer_norm, torch.dropout,
torch's losses with an int reduction, ...): the core (unigrad/api) sits below unigrad.nn, so these live above it.
`unigrad.<name>` resolves them on first use (unigrad/__init__.py's __getattr__ reads NN_FUNCTIONS in
api/torch_functions.py, which lists them without importing nn: startup stays small)."""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any

from unigrad.api.torch_functions import Size, _t
from unigrad.nn import functional
from unigrad.tensor import Tensor


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    cos = functional.cosine_similarity
    return cos(_t(x1, "cosine_similarity", "x1"), _t(x2, "cosine_similarity", "x2"), dim, eps)


def pairwise_distance(
    x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6, keepdim: builtins.bool = False
) -> Tensor:
    pd = functional.pairwise_distance
    return pd(_t(x1, "pairwise_distance", "x1"), _t(x2, "pairwise_distance", "x2"), p, eps, keepdim)


def dropout(input: Tensor, p: float = 0.5, train: builtins.bool = True) -> Tensor:
    drop = functional.dropout
    return drop(_t(input, "dropout"), p, train)


# ---------------------------------------------------------------- torch's top-level spellings of nn.functional


def _functional() -> Any:
    return functional


# torch's top-level losses take reduction as an int (at::Reduction); strings are accepted too
_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


def _reduction(fn: str, reduction: int | str) -> str:
    if isinstance(reduction, str) and reduction in _REDUCTIONS.values():
        return reduction
    if isinstance(reduction, builtins.int) and not isinstance(reduction, builtins.bool) and reduction in _REDUCTIONS:
        return _REDUCTIONS[reduction]
    raise ValueError(f"{fn}(): reduction must be 0 (none), 1 (mean) or 2 (sum), got {reduction!r}")


def _stride(stride: Any) -> Any:
    """torch's pooling default stride=[] (the kernel size) as nn.functional's None."""
    return None if stride is None or (isinstance(stride, (list, tuple)) and not stride) else stride


def _alias(name: str) -> Callable[..., Any]:
    """torch.<name>(...) as unigrad.nn.functional.<name>(...), for the names whose two signatures agree."""

    def fn(*args: Any, **kwargs: Any) -> Any:
        return getattr(_functional(), name)(*args, **kwargs)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"torch.{name}(...): unigrad.nn.functional.{name}(...), the same signature."
    return fn


# torch's top-level functions whose signature is nn.functional's
FUNCTIONAL_ALIASES = """
conv1d conv2d conv3d conv_transpose1d conv_transpose2d conv_transpose3d avg_pool1d pixel_shuffle pixel_unshuffle
channel_shuffle bilinear prelu hardshrink rms_norm
""".split()
for _name in FUNCTIONAL_ALIASES:
    globals()[_name] = _alias(_name)


def _max_pool(name: str) -> Callable[..., Tensor]:
    """torch.max_pool{1,2,3}d: nn.functional's without return_indices, stride [] meaning the kernel size."""

    def fn(
        input: Tensor,
        kernel_size: Size,
        stride: Size | None = None,
        padding: Size = 0,
        dilation: Size = 1,
        ceil_mode: builtins.bool = False,
    ) -> Tensor:
        return getattr(_functional(), name)(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"torch.{name}: unigrad.nn.functional.{name} without return_indices."
    return fn


max_pool1d = _max_pool("max_pool1d")
max_pool2d = _max_pool("max_pool2d")
max_pool3d = _max_pool("max_pool3d")


def selu(input: Tensor) -> Tensor:
    return _functional().selu(input)


def celu(input: Tensor, alpha: float = 1.0) -> Tensor:
    return _functional().celu(input, alpha)


def threshold(input: Tensor, threshold: float, value: float) -> Tensor:
    return _functional().threshold(input, threshold, value)


def alpha_dropout(input: Tensor, p: float, train: builtins.bool) -> Tensor:
    return _functional().alpha_dropout(input, p, train)


def feature_alpha_dropout(input: Tensor, p: float, train: builtins.bool) -> Tensor:
    return _functional().feature_alpha_dropout(input, p, train)


# torch's top-level losses: reduction is an int, and torch's Python binding defaults it to 0 (none), not the
# schema's Mean; these follow what torch returns


def cosine_embedding_loss(
    input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0, reduction: int | str = 0
) -> Tensor:
    red = _reduction("cosine_embedding_loss", reduction)
    return _functional().cosine_embedding_loss(input1, input2, target, margin, reduction=red)


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0, reduction: int | str = 0) -> Tensor:
    red = _reduction("hinge_embedding_loss", reduction)
    return _functional().hinge_embedding_loss(input, target, margin, reduction=red)


def margin_ranking_loss(
    input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0, reduction: int | str = 0
) -> Tensor:
    red = _reduction("margin_ranking_loss", reduction)
    return _functional().margin_ranking_loss(input1, input2, target, margin, reduction=red)


def triplet_margin_loss(
    anchor: Tensor,
    positive: Tensor,
    negative: Tensor,
    margin: float = 1.0,
    p: float = 2.0,
    eps: float = 1e-6,
    swap: builtins.bool = False,
    reduction: int | str = 0,
) -> Tensor:
    red = _reduction("triplet_margin_loss", reduction)
    return _functional().triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap, reduction=red)


def poisson_nll_loss(
    input: Tensor, target: Tensor, log_input: builtins.bool, full: builtins.bool, eps: float, reduction: int | str
) -> Tensor:
    red = _reduction("poisson_nll_loss", reduction)
    return _functional().poisson_nll_loss(input, target, log_input, full, eps=eps, reduction=red)


def kl_div(input: Tensor, target: Tensor, reduction: int | str = 0, *, log_target: builtins.bool = False) -> Tensor:
    """Pointwise target * (log target - input); reduction 1 (mean) averages every element, as torch."""
    red = _reduction("kl_div", reduction)
    return _functional().kl_div(input, target, reduction=red, log_target=log_target)


def binary_cross_entropy_with_logits(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    pos_weight: Tensor | None = None,
    reduction: int | str = 0,
) -> Tensor:
    """pos_weight comes before reduction here (nn.functional has it last)."""
    red = _reduction("binary_cross_entropy_with_logits", reduction)
    F = _functional()
    return F.binary_cross_entropy_with_logits(input, target, weight, reduction=red, pos_weight=pos_weight)


def layer_norm(
    input: Tensor,
    normalized_shape: Size,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
    cudnn_enable: builtins.bool = True,
) -> Tensor:
    return _functional().layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm(
    input: Tensor,
    num_groups: int,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
    cudnn_enabled: builtins.bool = True,
) -> Tensor:
    return _functional().group_norm(input, num_groups, weight, bias, eps)


def instance_norm(
    input: Tensor,
    weight: Tensor | None,
    bias: Tensor | None,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    use_input_stats: builtins.bool,
    momentum: float,
    eps: float,
    cudnn_enabled: builtins.bool,
) -> Tensor:
    """nn.functional.instance_norm with torch's top-level order: weight and bias before the running stats."""
    F = _functional()
    return F.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)


def batch_norm(
    input: Tensor,
    weight: Tensor | None,
    bias: Tensor | None,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    training: builtins.bool,
    momentum: float,
    eps: float,
    cudnn_enabled: builtins.bool,
) -> Tensor:
    """nn.functional.batch_norm with torch's top-level order: weight and bias before the running stats."""
    F = _functional()
    return F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def embedding(
    weight: Tensor,
    indices: Tensor,
    padding_idx: int = -1,
    scale_grad_by_freq: builtins.bool = False,
    sparse: builtins.bool = False,
) -> Tensor:
    """weight's rows at indices: nn.functional.embedding with the arguments reversed, as torch's top level; a
    negative padding_idx means none (torch's -1)."""
    pad = None if padding_idx < 0 else padding_idx
    return _functional().embedding(indices, weight, pad, scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


__all__ = [
    name
    for name, value in list(globals().items())
    if not name.startswith("_") and callable(value) and getattr(value, "__module__", None) == __name__
]
