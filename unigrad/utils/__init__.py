"""torch.utils's counterparts: `unigrad.utils.data` (Dataset, DataLoader, samplers, random_split)."""

from unigrad.utils import data

__all__ = ["data"]
