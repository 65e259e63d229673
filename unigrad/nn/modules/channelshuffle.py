"""torch.nn.modules.channelshuffle: ChannelShuffle (unigrad.nn.vision)."""

from unigrad.nn.vision import ChannelShuffle

__all__ = ["ChannelShuffle"]
