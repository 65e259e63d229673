"""examples/data_parallel.py: the sharded model's losses track the one-device model's, step for step."""

import importlib.util
import re
from pathlib import Path

import pytest

pytest.importorskip("sklearn.datasets")

SCRIPT = Path(__file__).resolve().parents[2] / "examples" / "data_parallel.py"
LINE = re.compile(r"^epoch +\d+/\d+  loss on 1 device (\d+\.\d+)  on (\d) devices (\d+\.\d+)$")


@pytest.mark.parametrize("devices", [2, 3])
def test_sharded_training_tracks_one_device(devices, capsys):
    spec = importlib.util.spec_from_file_location("examples_data_parallel", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(["--devices", str(devices), "--epochs", "2", "--steps", "3", "--batch-size", "96"]) == 0
    lines = [m for line in capsys.readouterr().out.splitlines() if (m := LINE.match(line))]
    assert len(lines) == 2
    first, second = (float(m.group(1)) for m in lines)
    assert second < first  # it trains
    for m in lines:
        assert m.group(2) == str(devices)
        assert abs(float(m.group(1)) - float(m.group(3))) < 1e-4
