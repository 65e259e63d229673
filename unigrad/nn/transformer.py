"""unigrad.nn.transformer: attention and the transformer stacks: MultiheadAttention, TransformerEncoderLayer,
TransformerEncoder, TransformerDecoderLayer, TransformerDecoder and Transformer, with torch's state keys, masks
and input layouts ((L, N, E), or (N, L, E) with batch_first)."""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from typing import Any

from unigrad.dtype import DType, dtypes
from unigrad.nn import functional as F
from unigrad.nn import init
from unigrad.nn._helpers import _filled
from unigrad.nn.containers import ModuleList
from unigrad.nn.dropout import Dropout
from unigrad.nn.linear import Linear
from unigrad.nn.module import Module, parameter
from unigrad.nn.norm import LayerNorm
from unigrad.tensor import Tensor

__all__ = [
    "MultiheadAttention",
    "TransformerEncoderLayer",
    "TransformerEncoder",
    "TransformerDecoderLayer",
    "TransformerDecoder",
    "Transformer",
]


def _additive_mask(mask: Tensor | None, dtype: DType) -> Tensor | None:
    """A mask as a float bias: torch.nn.MultiheadAttention's bool masks are True where attention is *not* allowed
    (-inf there); float masks are added as they are."""
    if mask is None:
        return None
    return mask.where(-math.inf, 0.0).cast(dtype) if mask.dtype is dtypes.bool else mask.cast(dtype)


class MultiheadAttention(Module):
    """torch.nn.MultiheadAttention: heads of scaled dot-product attention between projected queries, keys and
    values, then an output projection. Inputs are (L, N, E) (or (N, L, E) with batch_first, or unbatched
    (L, E)); returns (output, weights averaged over heads, or per head, or None with need_weights=False).

    State is torch's: in_proj_weight (3E, E) stacking the q, k, v projections (q_proj_weight, k_proj_weight,
    v_proj_weight instead when kdim or vdim differ from E), in_proj_bias (3E), out_proj (a Linear). Masks are
    torch's: a bool attn_mask (L, S) or (N*H, L, S) and key_padding_mask (N, S) are True where attention is not
    allowed; float masks are added to the scores. add_bias_kv and add_zero_attn are not supported."""

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        dropout: float = 0.0,
        bias: bool = True,
        add_bias_kv: bool = False,
        add_zero_attn: bool = False,
        kdim: int | None = None,
        vdim: int | None = None,
        batch_first: bool = False,
    ):
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0 or embed_dim % num_heads:
            raise ValueError(
                f"MultiheadAttention: embed_dim ({embed_dim}) must be divisible by num_heads ({num_heads})"
            )
        if add_bias_kv or add_zero_attn:
            raise NotImplementedError("MultiheadAttention: add_bias_kv and add_zero_attn are not supported")
        self.embed_dim, self.num_heads, self.dropout, self.batch_first = embed_dim, num_heads, dropout, batch_first
        self.kdim, self.vdim = kdim or embed_dim, vdim or embed_dim
        self.head_dim = embed_dim // num_heads
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        if self._qkv_same_embed_dim:
            self.in_proj_weight = parameter(init.xavier_uniform_(Tensor.empty(3 * embed_dim, embed_dim)))
        else:
            self.q_proj_weight = parameter(init.xavier_uniform_(Tensor.empty(embed_dim, embed_dim)))
            self.k_proj_weight = parameter(init.xavier_uniform_(Tensor.empty(embed_dim, self.kdim)))
            self.v_proj_weight = parameter(init.xavier_uniform_(Tensor.empty(embed_dim, self.vdim)))
        self.in_proj_bias = parameter(_filled(3 * embed_dim, 0.0)) if bias else None
        self.out_proj = Linear(embed_dim, embed_dim, bias=bias)
        if bias:
            self.out_proj.bias = _filled(embed_dim, 0.0)

    def _project(self, query: Tensor, key: Tensor, value: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        e = self.embed_dim
        if self._qkv_same_embed_dim:
            wq, wk, wv = self.in_proj_weight[:e], self.in_proj_weight[e : 2 * e], self.in_proj_weight[2 * e :]
        else:
            wq, wk, wv = self.q_proj_weight, self.k_proj_weight, self.v_proj_weight
        b = self.in_proj_bias
        bq, bk, bv = (None, None, None) if b is None else (b[:e], b[e : 2 * e], b[2 * e :])
        return query.linear(wq.T, bq), key.linear(wk.T, bk), value.linear(wv.T, bv)

    def forward(
        self,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        key_padding_mask: Tensor | None = None,
        need_weights: bool = True,
        attn_mask: Tensor | None = None,
        average_attn_weights: bool = True,
        is_causal: bool = False,
    ) -> tuple[Tensor, Tensor | None]:
        if is_causal and attn_mask is None:
            raise RuntimeError("MultiheadAttention: is_causal is a hint that attn_mask is the causal mask; pass it")
        unbatched = query.ndim == 2
        if unbatched:
            query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
            key_padding_mask = None if key_padding_mask is None else key_padding_mask.unsqueeze(0)
        elif query.ndim != 3:
            raise ValueError(f"MultiheadAttention: expected a 2-D or 3-D query, got shape {query.shape}")
        if not self.batch_first or unbatched:  # (L, N, E) -> (N, L, E)
            query, key, value = query.transpose(0, 1), key.transpose(0, 1), value.transpose(0, 1)
        if query.shape[-1] != self.embed_dim:
            raise ValueError(f"MultiheadAttention: expected embed_dim {self.embed_dim}, got query {query.shape}")
        n, lq, s, h, d = query.shape[0], query.shape[1], key.shape[1], self.num_heads, self.head_dim
        q, k, v = self._project(query, key, value)
        q, k, v = (t.reshape(n, t.shape[1], h, d).transpose(1, 2) for t in (q, k, v))  # (N, H, L|S, D)
        bias = _additive_mask(attn_mask, q.dtype)
        if bias is not None and bias.ndim == 3:
            bias = bias.reshape(n, h, lq, s)
        if (pad := _additive_mask(key_padding_mask, q.dtype)) is not None:
            pad = pad.reshape(n, 1, 1, s)
            bias = pad if bias is None else bias + pad
        dropout = self.dropout if self.training else 0.0
        if need_weights or dropout:
            scores = q.matmul(k.transpose(-2, -1)) * (1.0 / math.sqrt(d))
            weights = F.dropout((scores if bias is None else scores + bias).softmax(-1), dropout, dropout > 0)
            out = weights.matmul(v)  # the weights returned are those applied, after dropout (as torch)
        else:
            weights, out = None, F.scaled_dot_product_attention(q, k, v, attn_mask=bias)
        out = self.out_proj(out.transpose(1, 2).reshape(n, lq, self.embed_dim))
        if not self.batch_first or unbatched:
            out = out.transpose(0, 1)
        if weights is not None:
            weights = weights.mean(1) if average_attn_weights else weights
            weights = weights.squeeze(0) if unbatched else weights
        return (out.squeeze(1) if unbatched else out), (weights if need_weights else None)


_ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu}


def _activation(activation: str | Callable[[Tensor], Tensor]) -> Callable[[Tensor], Tensor]:
    """A transformer layer's activation: 'relu', 'gelu' or a callable (torch's RuntimeError for another name)."""
    if not isinstance(activation, str):
        return activation
    if activation not in _ACTIVATIONS:
        raise RuntimeError(f"activation should be relu/gelu, not {activation}")
    return _ACTIVATIONS[activation]


class TransformerEncoderLayer(Module):
    """torch.nn.TransformerEncoderLayer: self-attention then a feed-forward block (linear1, activation, dropout,
    linear2), each with dropout and a residual connection and LayerNorm after it (before it, with norm_first).
    State keys are torch's: self_attn.*, linear1.*, linear2.*, norm1.*, norm2.*."""

    def __init__(
        self,
        d_model: int,
        nhead: int,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: str | Callable[[Tensor], Tensor] = "relu",
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
    ):
        super().__init__()
        act = _activation(activation)
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.activation = act

    def _sa_block(self, x: Tensor, mask: Tensor | None, padding_mask: Tensor | None, is_causal: bool) -> Tensor:
        out = self.self_attn(
            x, x, x, attn_mask=mask, key_padding_mask=padding_mask, need_weights=False, is_causal=is_causal
        )[0]
        return self.dropout1(out)

    def _ff_block(self, x: Tensor) -> Tensor:
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))

    def forward(
        self,
        src: Tensor,
        src_mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
        is_causal: bool = False,
    ) -> Tensor:
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            return x + self._ff_block(self.norm2(x))
        x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
        return self.norm2(x + self._ff_block(x))


class TransformerEncoder(Module):
    """A stack of `num_layers` copies of `encoder_layer` (layers.0, layers.1, ...: torch's keys), then `norm`
    when given. Each copy has its own parameters (copy.deepcopy gives every module its own buffers)."""

    def __init__(
        self,
        encoder_layer: TransformerEncoderLayer,
        num_layers: int,
        norm: Module | None = None,
        enable_nested_tensor: bool = True,
        mask_check: bool = True,
    ):
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(encoder_layer) for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm

    def forward(
        self,
        src: Tensor,
        mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
        is_causal: bool | None = None,
    ) -> Tensor:
        out = src
        for layer in self.layers:
            out = layer(out, src_mask=mask, src_key_padding_mask=src_key_padding_mask, is_causal=bool(is_causal))
        return out if self.norm is None else self.norm(out)


class TransformerDecoderLayer(Module):
    """torch.nn.TransformerDecoderLayer: self-attention over tgt, attention from tgt to memory, then a feed-forward
    block (linear1, activation, dropout, linear2); each with dropout and a residual connection and LayerNorm after
    it (before it, with norm_first). State keys are torch's: self_attn.*, multihead_attn.*, linear1.*, linear2.*,
    norm1.*, norm2.*, norm3.*. The *_is_causal flags are hints that the matching mask is the causal one: the
    mask must be given with them (as torch)."""

    def __init__(
        self,
        d_model: int,
        nhead: int,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: str | Callable[[Tensor], Tensor] = "relu",
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
    ):
        super().__init__()
        act = _activation(activation)
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.activation = act

    def _sa_block(self, x: Tensor, mask: Tensor | None, padding_mask: Tensor | None, is_causal: bool) -> Tensor:
        out = self.self_attn(
            x, x, x, attn_mask=mask, key_padding_mask=padding_mask, need_weights=False, is_causal=is_causal
        )[0]
        return self.dropout1(out)

    def _mha_block(
        self, x: Tensor, mem: Tensor, mask: Tensor | None, padding_mask: Tensor | None, is_causal: bool
    ) -> Tensor:
        out = self.multihead_attn(
            x, mem, mem, attn_mask=mask, key_padding_mask=padding_mask, need_weights=False, is_causal=is_causal
        )[0]
        return self.dropout2(out)

    def _ff_block(self, x: Tensor) -> Tensor:
        return self.dropout3(self.linear2(self.dropout(self.activation(self.linear1(x)))))

    def forward(
        self,
        tgt: Tensor,
        memory: Tensor,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        tgt_is_causal: bool = False,
        memory_is_causal: bool = False,
    ) -> Tensor:
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask, memory_key_padding_mask, memory_is_causal)
            return x + self._ff_block(self.norm3(x))
        x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
        x = self.norm2(x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask, memory_is_causal))
        return self.norm3(x + self._ff_block(x))


class TransformerDecoder(Module):
    """A stack of `num_layers` copies of `decoder_layer` (layers.0, layers.1, ...: torch's keys), each attending
    to the same memory, then `norm` when given."""

    def __init__(self, decoder_layer: TransformerDecoderLayer, num_layers: int, norm: Module | None = None):
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(decoder_layer) for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm

    def forward(
        self,
        tgt: Tensor,
        memory: Tensor,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        tgt_is_causal: bool | None = None,
        memory_is_causal: bool = False,
    ) -> Tensor:
        out = tgt
        for layer in self.layers:
            out = layer(
                out,
                memory,
                tgt_mask=tgt_mask,
                memory_mask=memory_mask,
                tgt_key_padding_mask=tgt_key_padding_mask,
                memory_key_padding_mask=memory_key_padding_mask,
                tgt_is_causal=bool(tgt_is_causal),
                memory_is_causal=memory_is_causal,
            )
        return out if self.norm is None else self.norm(out)


class Transformer(Module):
    """torch.nn.Transformer: a TransformerEncoder over src (num_encoder_layers, then a LayerNorm) whose output is
    the memory of a TransformerDecoder over tgt (num_decoder_layers, then a LayerNorm); or custom_encoder /
    custom_decoder. Every parameter with more than one dim is re-drawn by xavier_uniform_, as torch. Inputs are
    (S, N, E) and (T, N, E) ((N, S, E) and (N, T, E) with batch_first, or unbatched (S, E), (T, E))."""

    def __init__(
        self,
        d_model: int = 512,
        nhead: int = 8,
        num_encoder_layers: int = 6,
        num_decoder_layers: int = 6,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: str | Callable[[Tensor], Tensor] = "relu",
        custom_encoder: Module | None = None,
        custom_decoder: Module | None = None,
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
    ):
        super().__init__()
        layer_kw: dict[str, Any] = {
            "dim_feedforward": dim_feedforward,
            "dropout": dropout,
            "activation": activation,
            "layer_norm_eps": layer_norm_eps,
            "batch_first": batch_first,
            "norm_first": norm_first,
            "bias": bias,
        }
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            enc_layer = TransformerEncoderLayer(d_model, nhead, **layer_kw)
            enc_norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
            self.encoder = TransformerEncoder(enc_layer, num_encoder_layers, enc_norm)
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            dec_layer = TransformerDecoderLayer(d_model, nhead, **layer_kw)
            dec_norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
            self.decoder = TransformerDecoder(dec_layer, num_decoder_layers, dec_norm)
        for p in self.parameters():
            if p.ndim > 1:
                init.xavier_uniform_(p)
        self.d_model, self.nhead, self.batch_first = d_model, nhead, batch_first

    def forward(
        self,
        src: Tensor,
        tgt: Tensor,
        src_mask: Tensor | None = None,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        src_is_causal: bool | None = None,
        tgt_is_causal: bool | None = None,
        memory_is_causal: bool = False,
    ) -> Tensor:
        batch_dim = 0 if self.batch_first else 1
        if src.ndim == 3 and (tgt.ndim != 3 or src.shape[batch_dim] != tgt.shape[batch_dim]):
            raise RuntimeError("the batch number of src and tgt must be equal")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise RuntimeError("the feature number of src and tgt must be equal to d_model")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask, is_causal=src_is_causal)
        return self.decoder(
            tgt,
            memory,
            tgt_mask=tgt_mask,
            memory_mask=memory_mask,
            tgt_key_padding_mask=tgt_key_padding_mask,
            memory_key_padding_mask=memory_key_padding_mask,
            tgt_is_causal=tgt_is_causal,
            memory_is_causal=memory_is_causal,
        )

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device: str | None = None, dtype: DType | None = None) -> Tensor:
        """(sz, sz) float mask: 0 where key j <= query i, -inf above the diagonal (the causal mask)."""
        pos = Tensor.arange(sz, device=device)
        above = pos.reshape(1, sz) > pos.reshape(sz, 1)
        return above.where(-math.inf, 0.0).cast(dtype or dtypes.float32)
