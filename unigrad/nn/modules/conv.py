"""torch.nn.modules.conv: the convolutions and transposed convolutions (unigrad.nn.conv)."""

from unigrad.nn.conv import *  # noqa: F403
from unigrad.nn.conv import __all__ as __all__
