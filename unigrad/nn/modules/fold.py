"""torch.nn.modules.fold: Fold, Unfold (unigrad.nn.vision)."""

from unigrad.nn.vision import Fold, Unfold

__all__ = ["Fold", "Unfold"]
