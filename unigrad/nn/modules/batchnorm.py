"""torch.nn.modules.batchnorm: the batch normalizations (unigrad.nn.norm)."""

from unigrad.nn.norm import BatchNorm1d, BatchNorm2d, BatchNorm3d

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d"]
