"""torch.nn.parameter: Parameter (unigrad.nn.module's), for `from torch.nn.parameter import Parameter`."""

from unigrad.nn.module import Parameter

__all__ = ["Parameter"]
