"""torch.nn.modules.loss: the losses (unigrad.nn.loss)."""

from unigrad.nn.loss import *  # noqa: F403
from unigrad.nn.loss import __all__ as __all__
