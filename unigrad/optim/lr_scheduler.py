"""torch.optim.lr_scheduler's place: the schedules of unigrad.nn.lr_scheduler."""

from unigrad.nn.lr_scheduler import *  # noqa: F403 - the same names as unigrad.nn.lr_scheduler
from unigrad.nn.lr_scheduler import __all__ as __all__
