"""torch.nn.modules.instancenorm: the instance normalizations (unigrad.nn.norm)."""

from unigrad.nn.norm import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"]
