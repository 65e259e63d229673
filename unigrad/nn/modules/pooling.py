"""torch.nn.modules.pooling: the poolings (unigrad.nn.pooling)."""

from unigrad.nn.pooling import *  # noqa: F403
from unigrad.nn.pooling import __all__ as __all__
