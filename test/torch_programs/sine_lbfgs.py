"""Predict sine waves with two stacked LSTMCells in float64, trained with L-BFGS (`optimizer.step(closure)`), then
let the model continue the waves on its own for a few steps (no_grad). Prints `RESULT {json}`.
"""

import json
import time

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim

HIDDEN = 8


class Sequence(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm1 = nn.LSTMCell(1, HIDDEN)
        self.lstm2 = nn.LSTMCell(HIDDEN, HIDDEN)
        self.linear = nn.Linear(HIDDEN, 1)

    def forward(self, input, future=0):
        outputs = []
        h_t = torch.zeros(input.size(0), HIDDEN, dtype=torch.double)
        c_t = torch.zeros(input.size(0), HIDDEN, dtype=torch.double)
        h_t2 = torch.zeros(input.size(0), HIDDEN, dtype=torch.double)
        c_t2 = torch.zeros(input.size(0), HIDDEN, dtype=torch.double)
        for input_t in input.split(1, dim=1):
            h_t, c_t = self.lstm1(input_t, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        for _ in range(future):  # the model's own output is the next input
            h_t, c_t = self.lstm1(output, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        return torch.cat(outputs, dim=1)


def waves(n, length, period=20.0, seed=2):
    rng = np.random.RandomState(seed)
    x = np.empty((n, length), "int64")
    x[:] = np.array(range(length)) + rng.randint(-4 * period, 4 * period, n).reshape(n, 1)
    return np.sin(x / 1.0 / period * 2 * np.pi).astype("float64")


def main():
    start = time.time()
    np.random.seed(0)
    torch.manual_seed(0)
    data = waves(8, 12)
    input, target = torch.from_numpy(data[2:, :-1]), torch.from_numpy(data[2:, 1:])
    test_input, test_target = torch.from_numpy(data[:2, :-1]), torch.from_numpy(data[:2, 1:])
    seq = Sequence()
    seq.double()
    criterion = nn.MSELoss()
    optimizer = optim.LBFGS(seq.parameters(), lr=0.8, max_iter=10)
    with torch.no_grad():
        first = criterion(seq(test_input), test_target).item()
    for i in range(4):

        def closure():
            optimizer.zero_grad()
            out = seq(input)
            loss = criterion(out, target)
            loss.backward()
            return loss

        loss = optimizer.step(closure)
        with torch.no_grad():
            future = 4
            pred = seq(test_input, future=future)
            test_loss = criterion(pred[:, :-future], test_target).item()
        print(f"step {i}: train loss {loss.item():.6f}, test loss {test_loss:.6f}")
    y = pred.detach().numpy()
    assert y.dtype == np.float64 and y.shape == (2, test_input.size(1) + future)
    print("RESULT " + json.dumps({"first": first, "last": test_loss, "seconds": time.time() - start}))


if __name__ == "__main__":
    main()
