"""torch.nn.modules.distance: CosineSimilarity, PairwiseDistance (unigrad.nn.distance)."""

from unigrad.nn.distance import *  # noqa: F403
from unigrad.nn.distance import __all__ as __all__
