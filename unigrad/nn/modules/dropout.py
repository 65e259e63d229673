"""torch.nn.modules.dropout: the dropouts (unigrad.nn.dropout)."""

from unigrad.nn.dropout import *  # noqa: F403
from unigrad.nn.dropout import __all__ as __all__
