"""torch.nn.modules.linear: Linear, Bilinear, Identity (unigrad.nn.linear)."""

from unigrad.nn.linear import *  # noqa: F403
from unigrad.nn.linear import __all__ as __all__
