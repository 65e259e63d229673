"""torch.nn.modules.module: the Module base class (unigrad.nn.module)."""

from unigrad.nn.module import Module

__all__ = ["Module"]
