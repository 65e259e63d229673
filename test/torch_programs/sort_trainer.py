"""A minGPT-style Trainer: an endless RandomSampler feeds a DataLoader, the loop pulls batches with next() and stops
after a number of iterations; callbacks report progress. The task: sort a short sequence of digits (the model reads
the digits and predicts the sorted ones, one at a time; targets of the prompt positions are -1, ignored).
Prints `RESULT {json}`.
"""

import json
import random
import time
from collections import defaultdict

import torch
import torch.nn as nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.sampler import RandomSampler


class SortDataset(Dataset):
    """Sequences of `length` digits below `num_digits`, followed by the same digits sorted: an item's input x is the
    sequence and all but the last sorted digit, its target y the next token at each position (-1 where the input is
    still being read: not predicted). The train and test splits hold different sequences."""

    def __init__(self, split, length=5, num_digits=3, size=2000):
        self.split, self.length, self.num_digits, self.size = split, length, num_digits, size
        rng = random.Random(0)
        every = sorted({tuple(rng.randrange(num_digits) for _ in range(length)) for _ in range(4 * size)})
        rng.shuffle(every)
        mine = every[: len(every) // 4] if split == "test" else every[len(every) // 4 :]
        self.sequences = [list(mine[i % len(mine)]) for i in range(size)]

    def __len__(self):
        return self.size

    def get_vocab_size(self):
        return self.num_digits

    def get_block_size(self):
        return self.length * 2 - 1

    def __getitem__(self, idx):
        digits = self.sequences[idx]
        both = digits + sorted(digits)
        x = torch.tensor(both[:-1], dtype=torch.long)
        y = torch.tensor(both[1:], dtype=torch.long)
        y[: self.length - 1] = -1
        return x, y


class TinyTransformer(nn.Module):
    def __init__(self, vocab_size, block_size, d_model=32, nhead=2):
        super().__init__()
        self.tok = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Parameter(torch.zeros(1, block_size, d_model))
        layer = nn.TransformerEncoderLayer(d_model, nhead, 4 * d_model, dropout=0.0, batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, num_layers=1)
        self.ln = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size)
        nn.init.normal_(self.pos, std=0.02)

    def forward(self, idx, targets=None):
        t = idx.size(1)
        mask = nn.Transformer.generate_square_subsequent_mask(t)
        x = self.blocks(self.tok(idx) + self.pos[:, :t], mask=mask, is_causal=True)
        logits = self.head(self.ln(x))
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        return logits, loss


class Trainer:
    def __init__(self, model, train_dataset, batch_size=32, learning_rate=3e-3, max_iters=100, grad_norm_clip=1.0):
        self.model, self.train_dataset = model, train_dataset
        self.batch_size, self.learning_rate, self.max_iters = batch_size, learning_rate, max_iters
        self.grad_norm_clip = grad_norm_clip
        self.callbacks = defaultdict(list)
        self.device = "cpu"
        self.iter_num, self.iter_time, self.iter_dt = 0, 0.0, 0.0
        self.loss = None

    def add_callback(self, event, callback):
        self.callbacks[event].append(callback)

    def trigger_callbacks(self, event):
        for callback in self.callbacks.get(event, []):
            callback(self)

    def run(self):
        model = self.model
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=self.learning_rate, betas=(0.9, 0.95))
        train_loader = DataLoader(
            self.train_dataset,
            sampler=RandomSampler(self.train_dataset, replacement=True, num_samples=int(1e10)),
            shuffle=False,
            pin_memory=False,
            batch_size=self.batch_size,
            num_workers=0,
        )
        model.train()
        self.iter_num = 0
        self.iter_time = time.time()
        data_iter = iter(train_loader)
        while True:
            try:
                batch = next(data_iter)
            except StopIteration:
                data_iter = iter(train_loader)
                batch = next(data_iter)
            batch = [t.to(self.device) for t in batch]
            x, y = batch
            _, self.loss = model(x, y)
            model.zero_grad(set_to_none=True)
            self.loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), self.grad_norm_clip)
            self.optimizer.step()
            self.trigger_callbacks("on_batch_end")
            self.iter_num += 1
            now = time.time()
            self.iter_dt, self.iter_time = now - self.iter_time, now
            if self.iter_num >= self.max_iters:
                break


@torch.no_grad()
def evaluate(model, dataset, n=200):
    """Mean loss and the fraction of sequences sorted right (greedy, all positions at once: teacher forcing)."""
    model.eval()
    loader = DataLoader(dataset, batch_size=100, shuffle=False)
    losses, correct, seen = [], 0, 0
    for x, y in loader:
        logits, loss = model(x, y)
        losses.append(loss.item())
        pred = logits.argmax(dim=-1)
        keep = y != -1
        correct += int(((pred == y) | ~keep).all(dim=1).sum().item())
        seen += x.size(0)
        if seen >= n:
            break
    model.train()
    return sum(losses) / len(losses), correct / seen


def main():
    start = time.time()
    torch.manual_seed(3407)
    train_dataset, test_dataset = SortDataset("train"), SortDataset("test")
    model = TinyTransformer(train_dataset.get_vocab_size(), train_dataset.get_block_size())
    first_loss, first_acc = evaluate(model, test_dataset)
    trainer = Trainer(model, train_dataset, max_iters=120)
    log = []

    def on_batch_end(tr):
        log.append(tr.loss.item())
        if tr.iter_num % 40 == 0:
            print(f"iter {tr.iter_num}: train loss {tr.loss.item():.5f}")

    trainer.add_callback("on_batch_end", on_batch_end)
    trainer.run()
    last_loss, last_acc = evaluate(model, test_dataset)
    print(f"test loss {first_loss:.4f} -> {last_loss:.4f}, sorted right {first_acc:.2f} -> {last_acc:.2f}")
    result = {"first": first_loss, "last": last_loss, "accuracy": last_acc, "iters": trainer.iter_num}
    print("RESULT " + json.dumps({**result, "seconds": time.time() - start}))


if __name__ == "__main__":
    main()
