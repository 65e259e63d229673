"""torch.nn.modules.container: Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict (unigrad.nn.containers)."""

from unigrad.nn.containers import *  # noqa: F403
from unigrad.nn.containers import __all__ as __all__
