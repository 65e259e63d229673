"""unigrad.nn.utils: torch.nn.utils' gradient clipping, parameter flattening and pad_sequence (also as
`nn.utils.rnn.pad_sequence`), as Tensor compositions.

The clipped gradients are new lazy tensors in `.grad` (torch scales them in place): they fuse into the
optimizer step that reads them, so clipping adds no kernel of its own beyond the norm.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from types import SimpleNamespace

from unigrad.tensor import Tensor

__all__ = ["clip_grad_norm_", "clip_grad_value_", "get_total_norm", "parameters_to_vector", "vector_to_parameters"]
__all__ += ["pad_sequence", "rnn"]


def _tensors(parameters: Tensor | Iterable[Tensor]) -> list[Tensor]:
    return [parameters] if isinstance(parameters, Tensor) else list(parameters)


def get_total_norm(tensors: Tensor | Iterable[Tensor], norm_type: float = 2.0) -> Tensor:
    """The norm of the tensors' norms (all their elements as one vector): p-norm, or max |x| for inf."""
    ts = [t.detach() for t in _tensors(tensors)]
    if not ts:
        return Tensor(0.0)
    if norm_type == math.inf:
        return Tensor.stack(*[t.abs().max().float() for t in ts]).max()
    if norm_type <= 0:
        raise RuntimeError(f"get_total_norm: norm_type must be positive or inf, got {norm_type}")
    total = sum((t.float().abs() ** norm_type).sum() for t in ts)
    return total ** (1 / norm_type)  # type: ignore[operator]


def clip_grad_norm_(
    parameters: Tensor | Iterable[Tensor],
    max_norm: float,
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
    foreach: bool | None = None,
) -> Tensor:
    """Scale the gradients so their total norm is at most max_norm (factor max_norm / (norm + 1e-6), capped at 1,
    as torch); returns the total norm before clipping. error_if_nonfinite reads the norm back (a sync point)."""
    params = [p for p in _tensors(parameters) if p.grad is not None]
    total = get_total_norm([p.grad for p in params], norm_type)  # type: ignore[misc]
    if error_if_nonfinite and not math.isfinite(float(total.item())):
        raise RuntimeError(
            f"clip_grad_norm_: the total norm of order {norm_type} for gradients from `parameters` is non-finite, so "
            "it cannot be clipped. To disable this error and scale the gradients by the non-finite norm anyway, set "
            "`error_if_nonfinite=False`"
        )
    coef = (max_norm / (total + 1e-6)).clamp(max=1.0)
    for p in params:
        p.grad = p.grad * coef.cast(p.grad.dtype)  # type: ignore[operator,union-attr]
    return total


def clip_grad_value_(parameters: Tensor | Iterable[Tensor], clip_value: float, foreach: bool | None = None) -> None:
    """Clamp every gradient element into [-clip_value, clip_value]."""
    for p in _tensors(parameters):
        if p.grad is not None:
            p.grad = p.grad.clamp(-clip_value, clip_value)


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """The parameters flattened and concatenated into one vector."""
    return Tensor.cat(*[p.reshape(-1) for p in parameters])


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Write consecutive slices of `vec` into the parameters (in place, as torch)."""
    if vec.ndim != 1:
        raise TypeError(f"vector_to_parameters: expected a 1-D vector, got shape {vec.shape}")
    params = list(parameters)
    need = sum(p.numel() for p in params)
    if vec.numel() != need:
        raise RuntimeError(f"vector_to_parameters: the vector has {vec.numel()} elements, the parameters {need}")
    start = 0
    for p in params:
        n = p.numel()
        p.assign(vec[start : start + n].reshape(p.shape).cast(p.dtype))
        start += n
    Tensor.realize(*params)


def pad_sequence(
    sequences: Iterable[Tensor], batch_first: bool = False, padding_value: float = 0.0, padding_side: str = "right"
) -> Tensor:
    """torch.nn.utils.rnn.pad_sequence: tensors of shape (L_i, *) padded with padding_value to the longest L and
    stacked: (L, B, *), or (B, L, *) with batch_first; padding_side 'left' pads before each sequence."""
    seqs = list(sequences)
    if not seqs:
        raise RuntimeError("pad_sequence: received an empty list of sequences")
    if padding_side not in ("left", "right"):
        raise ValueError(f"pad_sequence: padding_side must be 'left' or 'right', got {padding_side!r}")
    trailing = seqs[0].shape[1:]
    for i, s in enumerate(seqs):
        if s.ndim == 0 or s.shape[1:] != trailing:
            raise RuntimeError(
                f"pad_sequence: every sequence needs shape (L, *{trailing}); sequence {i} has shape {s.shape}"
            )
    longest = max(s.shape[0] for s in seqs)
    rest = ((0, 0),) * len(trailing)
    padded = [
        s.pad((((0, longest - s.shape[0]) if padding_side == "right" else (longest - s.shape[0], 0)), *rest),
              value=padding_value)
        for s in seqs
    ]  # fmt: skip
    return Tensor.stack(*padded, dim=0 if batch_first else 1)


# torch's spelling nn.utils.rnn.pad_sequence (packed sequences are not supported)
rnn = SimpleNamespace(pad_sequence=pad_sequence)
