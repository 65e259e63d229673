"""torch.nn.modules.normalization: layer, group, RMS and local response normalization (unigrad.nn.norm)."""

from unigrad.nn.norm import LayerNorm, GroupNorm, RMSNorm, LocalResponseNorm

__all__ = ["LayerNorm", "GroupNorm", "RMSNorm", "LocalResponseNorm"]
