"""unigrad.nn.embedding: lookup tables: Embedding (rows of a weight picked by an index tensor) and EmbeddingBag
(the sum, mean or max of bags of rows)."""

from __future__ import annotations

from unigrad.nn import functional as F
from unigrad.nn.module import Module, parameter
from unigrad.tensor import Tensor

__all__ = ["Embedding", "EmbeddingBag"]


class Embedding(Module):
    """Rows of weight (num_embeddings, embedding_dim) picked by an integer index tensor: idx (*) -> (*, dim).
    weight ~ N(0, 1) (the padding_idx row zero, and it gets no gradient), as torch."""

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None):
        super().__init__()
        if padding_idx is not None and padding_idx < 0:
            padding_idx += num_embeddings
        if padding_idx is not None and not 0 <= padding_idx < num_embeddings:
            raise ValueError(f"Embedding: padding_idx must be within num_embeddings ({num_embeddings})")
        self.num_embeddings, self.embedding_dim, self.padding_idx = num_embeddings, embedding_dim, padding_idx
        weight = Tensor.randn(num_embeddings, embedding_dim)
        if padding_idx is not None:
            keep = Tensor.arange(num_embeddings).reshape(-1, 1) != padding_idx
            weight = keep.where(weight, 0.0)
        self.weight = parameter(weight)

    def forward(self, idx: Tensor) -> Tensor:
        if idx.dtype.is_float or idx.dtype.is_bool:
            raise TypeError(f"Embedding: expected an integer index tensor, got {idx.dtype}")
        F.check_rows(idx, self.weight.shape[0], "Embedding")
        out = self.weight.take_rows(idx)  # an indirect load per row: O(idx.numel() * dim)
        if self.padding_idx is None:
            return out
        trained = (idx != self.padding_idx).unsqueeze(-1)  # the padding row's value, with no gradient
        return trained.where(out, out.detach())

    def extra_repr(self) -> str:
        pad = "" if self.padding_idx is None else f", padding_idx={self.padding_idx}"
        return f"{self.num_embeddings}, {self.embedding_dim}{pad}"


class EmbeddingBag(Module):
    """The sum, mean or max of bags of embedding rows (F.embedding_bag): forward(input, offsets, per_sample_weights)
    with a 2-D input (B, L) of B bags, or a 1-D input cut at offsets -> (B, embedding_dim). weight (num_embeddings,
    embedding_dim) ~ N(0, 1), the padding_idx row zero (its entries are left out of the bags), as torch."""

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        mode: str = "mean",
        sparse: bool = False,
        _weight: Tensor | None = None,
        include_last_offset: bool = False,
        padding_idx: int | None = None,
    ):
        super().__init__()
        if padding_idx is not None and padding_idx < 0:
            padding_idx += num_embeddings
        if padding_idx is not None and not 0 <= padding_idx < num_embeddings:
            raise ValueError(f"EmbeddingBag: padding_idx must be within num_embeddings ({num_embeddings})")
        if mode not in ("sum", "mean", "max"):
            raise ValueError(f"EmbeddingBag: mode has to be one of sum, mean or max, got {mode!r}")
        self.num_embeddings, self.embedding_dim, self.padding_idx = num_embeddings, embedding_dim, padding_idx
        self.max_norm, self.norm_type, self.scale_grad_by_freq = max_norm, norm_type, scale_grad_by_freq
        self.mode, self.sparse, self.include_last_offset = mode, sparse, include_last_offset
        if _weight is not None:
            if _weight.shape != (num_embeddings, embedding_dim):
                raise ValueError(
                    f"EmbeddingBag: _weight must have shape ({num_embeddings}, {embedding_dim}), got {_weight.shape}"
                )
            self.weight = parameter(_weight)
            return
        weight = Tensor.randn(num_embeddings, embedding_dim)
        if padding_idx is not None:
            weight = (Tensor.arange(num_embeddings).reshape(-1, 1) != padding_idx).where(weight, 0.0)
        self.weight = parameter(weight)

    def forward(self, input: Tensor, offsets: Tensor | None = None, per_sample_weights: Tensor | None = None) -> Tensor:
        return F.embedding_bag(
            input,
            self.weight,
            offsets,
            self.max_norm,
            self.norm_type,
            self.scale_grad_by_freq,
            self.mode,
            self.sparse,
            per_sample_weights,
            self.include_last_offset,
            self.padding_idx,
        )

    def extra_repr(self) -> str:
        out = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.max_norm is not None:
            out += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            out += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq:
            out += ", scale_grad_by_freq=True"
        out += f", mode={self.mode!r}"
        return out + ("" if self.padding_idx is None else f", padding_idx={self.padding_idx}")
