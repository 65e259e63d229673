"""unigrad.nn.dropout: the dropout layers, active in training mode only: Dropout (elements), Dropout1d/2d/3d
(whole channels), AlphaDropout and FeatureAlphaDropout (for SELU networks)."""

from __future__ import annotations

from unigrad.nn import functional as F
from unigrad.nn.module import Module
from unigrad.tensor import Tensor

__all__ = ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"]


class Dropout(Module):
    """Zero elements with probability p (scaling the rest by 1/(1-p)) in training mode."""

    def __init__(self, p: float = 0.5, inplace: bool = False):
        super().__init__()
        if not 0 <= p <= 1:
            raise ValueError(f"Dropout: p must be in [0, 1], got {p}")
        self.p = p

    def forward(self, x: Tensor) -> Tensor:
        return F.dropout(x, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace=False"


class Dropout1d(Dropout):
    """Whole channels of (N, C, L) zeroed with probability p in training mode."""

    def forward(self, x: Tensor) -> Tensor:
        return F.dropout1d(x, self.p, self.training)


class Dropout2d(Dropout):
    """Whole channels of (N, C, H, W) zeroed with probability p in training mode."""

    def forward(self, x: Tensor) -> Tensor:
        return F.dropout2d(x, self.p, self.training)


class Dropout3d(Dropout):
    """Whole channels of (N, C, D, H, W) zeroed with probability p in training mode."""

    def forward(self, x: Tensor) -> Tensor:
        return F.dropout3d(x, self.p, self.training)


class AlphaDropout(Dropout):
    """Dropout for SELU networks, in training mode: a dropped element takes SELU's saturation value and the
    result is rescaled by a*y + b so that zero mean and unit variance are kept, a = ((1-p)(1 + p a'^2))^-1/2,
    b = -a a' p (a' the saturation value); F.alpha_dropout."""

    def forward(self, x: Tensor) -> Tensor:
        return F.alpha_dropout(x, self.p, self.training)


class FeatureAlphaDropout(Dropout):
    """AlphaDropout of whole channels of (N, C, *): one draw per (sample, channel); F.feature_alpha_dropout."""

    def forward(self, x: Tensor) -> Tensor:
        return F.feature_alpha_dropout(x, self.p, self.training)
