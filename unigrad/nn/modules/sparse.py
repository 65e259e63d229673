"""torch.nn.modules.sparse: Embedding, EmbeddingBag (unigrad.nn.embedding)."""

from unigrad.nn.embedding import *  # noqa: F403
from unigrad.nn.embedding import __all__ as __all__
