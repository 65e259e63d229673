"""Fit a polynomial with one Linear layer: manual SGD on p.data, the loss logged with loss.item() before backward().

A PyTorch program as users write it (no optimizer: `param.data.add_(-lr * param.grad)` after `fc.zero_grad()`);
prints `RESULT {json}` with the first and last loss.
"""

import json
import time

import torch
import torch.nn.functional as F

DEGREE = 4
torch.manual_seed(0)
W_target = torch.randn(DEGREE, 1) * 2
b_target = torch.randn(1) * 2


def features(x):
    """Columns x, x^2, ..., x^DEGREE of a column vector x."""
    x = x.unsqueeze(1)
    return torch.cat([x**i for i in range(1, DEGREE + 1)], 1)


def target(x):
    return x.mm(W_target) + b_target.item()


def batch(size=32):
    x = features(torch.randn(size))
    return x, target(x)


def describe(weights, bias):
    terms = [f"{w:+.2f} x^{i}" for i, w in enumerate(weights.view(-1).tolist(), 1)]
    return f"y = {' '.join(terms)} {bias[0]:+.2f}"


def main():
    start = time.time()
    fc = torch.nn.Linear(W_target.size(0), 1)
    losses = []
    for step in range(1, 301):
        bx, by = batch()
        fc.zero_grad()
        out = F.smooth_l1_loss(fc(bx), by)
        loss = out.item()  # read before backward()
        losses.append(loss)
        out.backward()
        for param in fc.parameters():
            param.data.add_(-0.05 * param.grad)
        if loss < 1e-3:
            break
    print(f"loss {loss:.6f} after {step} batches")
    print("learned:", describe(fc.weight.view(-1), fc.bias))
    print("actual: ", describe(W_target.view(-1), b_target))
    first, last = sum(losses[:10]) / 10, sum(losses[-10:]) / 10
    print("RESULT " + json.dumps({"first": first, "last": last, "steps": step, "seconds": time.time() - start}))


if __name__ == "__main__":
    main()
