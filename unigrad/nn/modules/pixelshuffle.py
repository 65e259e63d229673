"""torch.nn.modules.pixelshuffle: PixelShuffle, PixelUnshuffle (unigrad.nn.vision)."""

from unigrad.nn.vision import PixelShuffle, PixelUnshuffle

__all__ = ["PixelShuffle", "PixelUnshuffle"]
