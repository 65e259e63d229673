"""torch.nn.modules.activation: the activations, and MultiheadAttention (torch keeps it there)."""

from unigrad.nn.activation import *  # noqa: F403
from unigrad.nn.activation import __all__ as _activations
from unigrad.nn.transformer import MultiheadAttention

__all__ = [*_activations, "MultiheadAttention"]
