"""torch.nn.modules.upsampling: the upsampling layers (unigrad.nn.vision)."""

from unigrad.nn.vision import Upsample, UpsamplingNearest2d, UpsamplingBilinear2d

__all__ = ["Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d"]
