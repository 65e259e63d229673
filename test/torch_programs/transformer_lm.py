"""A Transformer language model that subclasses nn.Transformer: it uses the inherited encoder stack, replaces the
inherited decoder by a Linear to the vocabulary, and builds its additive float causal mask in forward, keeping it in
`self.src_mask` (a plain tensor attribute, not a parameter). Trained with hand-written SGD on p.data after clipping.
Prints `RESULT {json}`.
"""

import json
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class PositionalEncoding(nn.Module):
    """Adds fixed sine/cosine position codes (a registered buffer) to a (seq, batch, dim) input."""

    def __init__(self, d_model, dropout=0.1, max_len=64):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        position = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, d_model)
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe.unsqueeze(0).transpose(0, 1))

    def forward(self, x):
        return self.dropout(x + self.pe[: x.size(0), :])


class TransformerLM(nn.Transformer):
    def __init__(self, ntoken, d_model, nhead, d_hid, nlayers, dropout=0.1):
        super().__init__(d_model=d_model, nhead=nhead, dim_feedforward=d_hid, num_encoder_layers=nlayers)
        self.src_mask = None
        self.pos_encoder = PositionalEncoding(d_model, dropout)
        self.embedding = nn.Embedding(ntoken, d_model)
        self.d_model = d_model
        self.decoder = nn.Linear(d_model, ntoken)  # replaces the inherited TransformerDecoder
        self.init_weights()

    def causal_mask(self, size):
        return torch.triu(torch.full((size, size), float("-inf")), diagonal=1)

    def init_weights(self):
        nn.init.uniform_(self.embedding.weight, -0.1, 0.1)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -0.1, 0.1)

    def forward(self, src, has_mask=True):
        if has_mask:
            if self.src_mask is None or self.src_mask.size(0) != len(src):
                self.src_mask = self.causal_mask(len(src)).to(src.device)
        else:
            self.src_mask = None
        x = self.pos_encoder(self.embedding(src) * math.sqrt(self.d_model))
        out = self.decoder(self.encoder(x, mask=self.src_mask))
        return F.log_softmax(out, dim=-1)


def make_stream(n):
    """Tokens of a repeating grammar: each 'sentence' is a subject, a verb and an object from small fixed sets,
    chosen by a counter, then an end token."""
    subjects, verbs, objects = [1, 2, 3], [4, 5], [6, 7, 8, 9]
    out, k = [], 0
    while len(out) < n:
        out += [subjects[k % 3], verbs[(k // 3) % 2], objects[(k * 7) % 4], 0]
        k += 1
    return torch.tensor(out[:n], dtype=torch.long)


def batchify(data, bsz):
    nbatch = data.size(0) // bsz
    return data[: nbatch * bsz].view(bsz, -1).t().contiguous()


def main():
    start = time.time()
    torch.manual_seed(42)
    train_data, val_data = batchify(make_stream(800), 10), batchify(make_stream(200), 5)
    ntokens, bptt, lr = 10, 8, 0.5
    model = TransformerLM(ntokens, d_model=32, nhead=2, d_hid=64, nlayers=2, dropout=0.0)
    criterion = nn.NLLLoss()

    def get_batch(source, i):
        seq_len = min(bptt, len(source) - 1 - i)
        return source[i : i + seq_len], source[i + 1 : i + 1 + seq_len].reshape(-1)

    def evaluate(source):
        model.eval()
        total, count = 0.0, 0
        with torch.no_grad():
            for i in range(0, source.size(0) - 1, bptt):
                data, targets = get_batch(source, i)
                output = model(data)
                total += len(data) * criterion(output.view(-1, ntokens), targets).item()
                count += len(data)
        return total / count

    first = evaluate(val_data)
    losses = []
    for epoch in range(1, 4):
        model.train()
        for i in range(0, train_data.size(0) - 1, bptt):
            data, targets = get_batch(train_data, i)
            model.zero_grad()
            output = model(data)
            loss = criterion(output.view(-1, ntokens), targets)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
            for p in model.parameters():
                p.data.add_(p.grad, alpha=-lr)
            losses.append(loss.item())
        val_loss = evaluate(val_data)
        print(f"epoch {epoch}: train loss {sum(losses[-10:]) / 10:.3f}, valid loss {val_loss:.3f}")
    names = [name for name, _ in model.named_parameters()]
    assert "src_mask" not in names and "src_mask" not in model.state_dict(), "the mask became state"
    no_grad = [name for name, p in model.named_parameters() if p.grad is None]
    print(f"{len(names)} parameters, without a gradient: {no_grad}")
    result = {"first": first, "last": val_loss, "params": len(names), "no_grad": no_grad}
    print("RESULT " + json.dumps({**result, "seconds": time.time() - start}))


if __name__ == "__main__":
    main()
