"""PyTorch programs run unchanged through the torch facade (issue 32's corpus).

Each program in this folder is an ordinary PyTorch script (`import torch`, written in the styles of well-known
training scripts) that ends by printing `RESULT {json}` with its first and last loss. The test runs it twice, in
subprocesses: with real torch, and with `torch` resolving to unigrad's facade (facade.py). Both must run to the end,
and the facade's run must train comparably: its loss falls by a similar factor (not to equal values: the initial
weights and the sampled batches come from different random streams).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
PROGRAMS = {
    # program: (the least log(first/last) either run must reach, extra checks on the facade's result)
    "regression.py": 1.5,
    "gpt_train.py": 0.5,
    "sort_trainer.py": 1.5,
    "lstm_lm.py": 1.0,
    "transformer_lm.py": 1.0,
    "sine_lbfgs.py": 2.0,
    "generate.py": 3.0,
}


def _run(program: str, facade: bool) -> dict:
    """Run a program (through the facade or with real torch) in a subprocess; its RESULT line, parsed."""
    cmd = [sys.executable, str(HERE / "facade.py"), program] if facade else [sys.executable, program]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}  # torch's threads would fight the test workers for the cores
    env.pop("FLAVOR", None)
    proc = subprocess.run(cmd, cwd=HERE, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"{program} ({'facade' if facade else 'torch'}) failed:\n{proc.stderr[-4000:]}"
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, f"{program} printed no RESULT line:\n{proc.stdout[-2000:]}"
    return json.loads(lines[-1][len("RESULT ") :])


@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_program_trains_like_torch(program):
    want = PROGRAMS[program]
    ref, got = _run(program, facade=False), _run(program, facade=True)
    drop_ref, drop_got = math.log(ref["first"] / ref["last"]), math.log(got["first"] / got["last"])
    print(
        f"{program}: torch {ref['seconds']:.1f} s, facade {got['seconds']:.1f} s; log loss drop {drop_ref:.2f} vs {drop_got:.2f}"
    )
    assert drop_ref >= want, f"the program itself trains too little with torch ({ref})"
    assert drop_got >= want and drop_got >= 0.5 * drop_ref, f"facade {got} against torch {ref}"
    if "saved" in got:  # a checkpoint round trip gives the same loss
        assert got["reloaded"] == pytest.approx(got["saved"], rel=1e-5)
    if program == "lstm_lm.py":
        assert got["reloaded"] == pytest.approx(got["last"], rel=1e-5)
    if program == "transformer_lm.py":
        assert got["params"] == ref["params"] and got["no_grad"] == ref["no_grad"] == []
    if program == "generate.py":
        assert got["follows"] >= 0.8
    if program == "sort_trainer.py":
        assert got["accuracy"] >= 0.5 and got["iters"] == ref["iters"]
