"""torch.nn.modules.padding: the padding layers (unigrad.nn.padding)."""

from unigrad.nn.padding import *  # noqa: F403
from unigrad.nn.padding import __all__ as __all__
