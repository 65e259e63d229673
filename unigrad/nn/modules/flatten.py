"""torch.nn.modules.flatten: Flatten, Unflatten (unigrad.nn.flatten)."""

from unigrad.nn.flatten import *  # noqa: F403
from unigrad.nn.flatten import __all__ as __all__
