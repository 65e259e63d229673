"""A word-level LSTM language model trained with plain SGD written by hand (`p.data.add_(p.grad, alpha=-lr)` after
clipping), truncated backpropagation through time with detached hidden states, an annealed rate, and the whole model
saved with torch.save(model) and loaded back under torch.serialization.safe_globals. Prints `RESULT {json}`.
"""

import json
import math
import os
import tempfile
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

SENTENCES = [
    "the cat sat on the mat",
    "the dog sat on the log",
    "a bird sang in the tree",
    "the cat saw a bird",
    "a dog ran to the tree",
    "the bird flew over the dog",
]


class Vocabulary:
    def __init__(self):
        self.word2idx, self.idx2word = {}, []

    def add(self, word):
        if word not in self.word2idx:
            self.idx2word.append(word)
            self.word2idx[word] = len(self.idx2word) - 1
        return self.word2idx[word]

    def __len__(self):
        return len(self.idx2word)


def tokenize(vocab, lines):
    ids = [vocab.add(w) for line in lines for w in line.split() + ["<eos>"]]
    return torch.tensor(ids, dtype=torch.long)


def corpus(seed, n_lines):
    """Lines drawn from SENTENCES in a fixed pseudo-random order."""
    rng = [seed]

    def draw():
        rng[0] = (rng[0] * 1103515245 + 12345) % 2**31
        return rng[0] % len(SENTENCES)

    return [SENTENCES[draw()] for _ in range(n_lines)]


class RNNModel(nn.Module):
    """Embedding -> multi-layer LSTM -> Linear to the vocabulary, dropout in between."""

    def __init__(self, ntoken, ninp, nhid, nlayers, dropout=0.2, tie_weights=False):
        super().__init__()
        self.ntoken = ntoken
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=dropout if nlayers > 1 else 0.0)
        self.decoder = nn.Linear(nhid, ntoken)
        if tie_weights:
            if nhid != ninp:
                raise ValueError("tied weights need nhid == ninp")
            self.decoder.weight = self.encoder.weight
        self.init_weights()
        self.nhid, self.nlayers = nhid, nlayers

    def init_weights(self):
        initrange = 0.1
        nn.init.uniform_(self.encoder.weight, -initrange, initrange)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -initrange, initrange)

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        output = self.drop(output)
        decoded = self.decoder(output).view(-1, self.ntoken)
        return F.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        return (weight.new_zeros(self.nlayers, bsz, self.nhid), weight.new_zeros(self.nlayers, bsz, self.nhid))


def batchify(data, bsz):
    nbatch = data.size(0) // bsz
    data = data.narrow(0, 0, nbatch * bsz)
    return data.view(bsz, -1).t().contiguous()


def get_batch(source, i, bptt):
    seq_len = min(bptt, len(source) - 1 - i)
    return source[i : i + seq_len], source[i + 1 : i + 1 + seq_len].reshape(-1)


def repackage_hidden(h):
    """Cut the graph at the hidden state, so backprop stops at the start of each chunk."""
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)


def main():
    start = time.time()
    torch.manual_seed(1111)
    vocab = Vocabulary()
    train_data = batchify(tokenize(vocab, corpus(1, 64)), 8)
    val_data = batchify(tokenize(vocab, corpus(2, 24)), 8)
    ntokens, bptt, clip = len(vocab), 6, 0.25
    model = RNNModel(ntokens, 16, 32, 1, dropout=0.1)
    criterion = nn.NLLLoss()

    def evaluate(source):
        model.eval()
        total = 0.0
        hidden = model.init_hidden(source.size(1))
        with torch.no_grad():
            for i in range(0, source.size(0) - 1, bptt):
                data, targets = get_batch(source, i, bptt)
                output, hidden = model(data, hidden)
                hidden = repackage_hidden(hidden)
                total += len(data) * criterion(output, targets).item()
        return total / (len(source) - 1)

    def train_epoch(lr):
        model.train()
        hidden = model.init_hidden(train_data.size(1))
        for i in range(0, train_data.size(0) - 1, bptt):
            data, targets = get_batch(train_data, i, bptt)
            hidden = repackage_hidden(hidden)
            model.zero_grad()
            output, hidden = model(data, hidden)
            loss = criterion(output, targets)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
            for p in model.parameters():
                p.data.add_(p.grad, alpha=-lr)

    path = os.path.join(tempfile.mkdtemp(), "model.pt")
    first = evaluate(val_data)
    best, lr = None, 10.0
    for epoch in range(1, 6):
        train_epoch(lr)
        val_loss = evaluate(val_data)
        print(f"epoch {epoch}: valid loss {val_loss:.3f}, ppl {math.exp(val_loss):.2f}, lr {lr}")
        if best is None or val_loss < best:
            with open(path, "wb") as f:
                torch.save(model, f)
            best = val_loss
        else:
            lr /= 4.0

    with open(path, "rb") as f:
        allowed = [
            RNNModel,
            torch.nn.modules.dropout.Dropout,
            torch.nn.modules.sparse.Embedding,
            torch.nn.modules.rnn.LSTM,
            torch.nn.modules.linear.Linear,
            torch.nn.modules.loss.NLLLoss,
        ]
        with torch.serialization.safe_globals(allowed):
            model = torch.load(f)
    model.rnn.flatten_parameters()
    reloaded = evaluate(val_data)
    print(f"best valid loss {best:.3f}, the reloaded model's {reloaded:.3f}")
    print("RESULT " + json.dumps({"first": first, "last": best, "reloaded": reloaded, "seconds": time.time() - start}))


if __name__ == "__main__":
    main()
