"""Train a tiny next-character model on a repeating text, then sample from it the way GPT sampling loops do:
crop the context, scale the last logits by a temperature, keep the top k (the rest set to -inf by a boolean index),
softmax, torch.multinomial, torch.cat the new token on. Prints `RESULT {json}` with the loss and how much of the
sampled text follows the pattern.
"""

import json
import time

import torch
import torch.nn as nn
from torch.nn import functional as F

TEXT = "hello world. " * 8


class NGramModel(nn.Module):
    """Embeds the last `context` tokens, concatenates them and predicts the next one with an MLP."""

    def __init__(self, vocab_size, context=4, n_embd=16, hidden=64):
        super().__init__()
        self.context = context
        self.embed = nn.Embedding(vocab_size, n_embd)
        self.mlp = nn.Sequential(nn.Linear(context * n_embd, hidden), nn.Tanh(), nn.Linear(hidden, vocab_size))

    def forward(self, idx, targets=None):
        logits = self.mlp(self.embed(idx).flatten(1))
        loss = None if targets is None else F.cross_entropy(logits, targets)
        return logits, loss

    @torch.no_grad()
    def generate(self, idx, max_new_tokens, temperature=1.0, top_k=None):
        for _ in range(max_new_tokens):
            idx_cond = idx if idx.size(1) <= self.context else idx[:, -self.context :]
            logits, _ = self(idx_cond)
            logits = logits / temperature
            if top_k is not None:
                v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
                logits[logits < v[:, [-1]]] = -float("Inf")
            probs = F.softmax(logits, dim=-1)
            idx_next = torch.multinomial(probs, num_samples=1)
            idx = torch.cat((idx, idx_next), dim=1)
        return idx


def main():
    start = time.time()
    torch.manual_seed(7)
    chars = sorted(set(TEXT))
    stoi, itos = {c: i for i, c in enumerate(chars)}, dict(enumerate(chars))
    data = torch.tensor([stoi[c] for c in TEXT], dtype=torch.long)
    model = NGramModel(len(chars))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    windows = torch.stack([data[i : i + model.context] for i in range(len(data) - model.context)])
    nexts = data[model.context :]
    losses = []
    for step in range(150):
        ix = torch.randint(len(windows), (32,))
        _, loss = model(windows[ix], nexts[ix])
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    prompt = torch.tensor([[stoi[c] for c in "hell"]], dtype=torch.long)
    out = model.generate(prompt, 24, temperature=0.8, top_k=3)
    text = "".join(itos[i] for i in out[0].tolist())
    expected = (TEXT * 2)[: len(text)]
    follows = sum(a == b for a, b in zip(text, expected)) / len(text)
    print(f"loss {losses[0]:.3f} -> {losses[-1]:.3f}; sampled {text!r}, {follows:.0%} as the pattern")
    first, last = sum(losses[:5]) / 5, sum(losses[-5:]) / 5
    print("RESULT " + json.dumps({"first": first, "last": last, "follows": follows, "seconds": time.time() - start}))


if __name__ == "__main__":
    main()
