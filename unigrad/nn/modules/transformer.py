"""torch.nn.modules.transformer: the Transformer and its encoder and decoder stacks and layers (unigrad.nn.transformer)."""

from unigrad.nn.transformer import (
    Transformer,
    TransformerEncoder,
    TransformerDecoder,
    TransformerEncoderLayer,
    TransformerDecoderLayer,
)

__all__ = [
    "Transformer",
    "TransformerEncoder",
    "TransformerDecoder",
    "TransformerEncoderLayer",
    "TransformerDecoderLayer",
]
