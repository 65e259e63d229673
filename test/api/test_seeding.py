"""A facade program seeded with torch.manual_seed / torch.Generator gives the same output on every run (issue 32):
the same small program, run twice in fresh interpreters (with different hash seeds), prints the same values, and a
different seed prints different ones. It draws from every seeded stream a training script uses: nn init, randn,
dropout, a shuffling DataLoader, RandomSampler and random_split with a generator, randperm, multinomial."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.flavor("torch")

PROGRAM = """
import sys
import unigrad.torch as torch
from unigrad.torch import nn
from unigrad.torch.utils.data import DataLoader, RandomSampler, TensorDataset, random_split

torch.manual_seed(int(sys.argv[1]))
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Dropout(0.3), nn.Linear(8, 1))
model.train()
x, y = torch.randn(40, 4), torch.randn(40, 1)
ds = TensorDataset(x, y)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
losses = []
for xb, yb in DataLoader(ds, batch_size=8, shuffle=True):
    opt.zero_grad()
    loss = ((model(xb) - yb) ** 2).mean()
    loss.backward()
    opt.step()
    losses.append(round(loss.item(), 6))
g = torch.Generator().manual_seed(int(sys.argv[1]) + 1)
order = list(RandomSampler(ds, replacement=True, num_samples=10, generator=g))
split = [s.indices for s in random_split(ds, [0.5, 0.5], generator=g)]
extra = torch.randperm(6).tolist() + torch.multinomial(torch.ones(5), 3).tolist()
print(losses, order, split, extra, round(sum(p.sum().item() for p in model.parameters()), 6))
"""


def run(tmp_path: Path, seed: int, hash_seed: str) -> str:
    script = tmp_path / "program.py"
    script.write_text(PROGRAM)
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    root = Path(__file__).resolve().parents[2]
    env["PYTHONPATH"] = os.pathsep.join([str(root), env.get("PYTHONPATH", "")])
    done = subprocess.run(
        [sys.executable, str(script), str(seed)], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_seeded_program_repeats_run_to_run(tmp_path):
    first, second = run(tmp_path, 7, "1"), run(tmp_path, 7, "2")
    assert first == second and first.strip()
    assert run(tmp_path, 8, "1") != first  # the seed is what fixes it
