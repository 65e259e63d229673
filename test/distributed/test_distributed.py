"""unigrad.distributed on MPI (issue 35): the collectives, DistributedDataParallel and the fault cases run in real MPI
jobs (`mpirun` through the launcher, mpi_worker.py on every rank, on 1, 2 and 3 ranks); DistributedSampler is checked
against torch's index sets without MPI. The jobs need Open MPI's mpirun and mpi4py: without them the job tests skip
(CI installs both: .ci/run fails without mpirun)."""

import importlib.util
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from unigrad.distributed import run as launcher
from unigrad.utils.data import DistributedSampler

WORKER = Path(__file__).with_name("mpi_worker.py")
HAVE_MPI = shutil.which("mpirun") is not None and importlib.util.find_spec("mpi4py") is not None
needs_mpi = pytest.mark.skipif(
    not HAVE_MPI,
    reason="needs Open MPI's mpirun and mpi4py (apt-get install openmpi-bin libopenmpi-dev; pip install -e '.[test]')",
)


def job(n: int, scenario: str, timeout: float = 120, **env: str) -> subprocess.CompletedProcess:
    """`python -m unigrad.distributed.run -n n mpi_worker.py scenario`, its output captured."""
    cmd = [sys.executable, "-m", "unigrad.distributed.run", "-n", str(n), str(WORKER), scenario]
    full_env = {**os.environ, "THREADS": "1", **env}
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=full_env, check=False)


def passed(p: subprocess.CompletedProcess, n: int, scenario: str) -> None:
    out = p.stdout + p.stderr
    assert p.returncode == 0, out[-4000:]
    for r in range(n):
        assert f"ok {scenario} rank {r}" in p.stdout, out[-4000:]


@needs_mpi
@pytest.mark.parametrize("n", [1, 2, 3])
def test_collectives_against_numpy(n):
    passed(job(n, "collectives"), n, "collectives")


@needs_mpi
def test_collectives_without_the_check():
    """DIST_CHECK=0: each collective is MPI's alone (no packet; the worker checks the calls), the same results."""
    passed(job(2, "collectives", DIST_CHECK="0"), 2, "collectives")


@needs_mpi
def test_ddp_equals_one_process():
    passed(job(2, "ddp"), 2, "ddp")


@needs_mpi
@pytest.mark.parametrize("scenario", ["timeout", "timeout_kept"])
def test_a_stuck_rank_times_out_and_aborts_the_job(scenario):
    t0 = time.monotonic()
    p = job(2, scenario, DIST_TIMEOUT="1")
    out = p.stdout + p.stderr
    assert time.monotonic() - t0 < 40, "the job waited for the stuck rank"
    assert p.returncode != 0
    assert "DistBackendError: all_reduce" in out and "not completed after 1 s" in out, out[-3000:]
    assert "rank 0: DistBackendError in a blocking collective (the watchdog); aborting the job" in out, out[-3000:]
    assert 'mpi_worker.py", line' in out and f"in {scenario}" in out, "no stack of the blocked call: " + out[-3000:]


@needs_mpi
def test_a_rank_that_raises_aborts_the_job():
    p = job(2, "raises", timeout=60)
    out = p.stdout + p.stderr
    assert p.returncode != 0
    assert "ValueError: planted failure" in out and "rank 1 raised ValueError; aborting the job" in out, out[-3000:]


@pytest.mark.parametrize("n_items", [0, 1, 7, 10, 12])
@pytest.mark.parametrize("replicas", [1, 3, 4])
@pytest.mark.parametrize("drop_last", [False, True])
def test_distributed_sampler_without_shuffle_is_torchs(n_items, replicas, drop_last):
    for rank in range(replicas):
        ours = DistributedSampler(range(n_items), replicas, rank, shuffle=False, drop_last=drop_last)
        ref = torch.utils.data.DistributedSampler(range(n_items), replicas, rank, shuffle=False, drop_last=drop_last)
        assert list(ours) == list(ref) and len(ours) == len(ref) == ours.num_samples


@pytest.mark.parametrize("drop_last", [False, True])
def test_distributed_sampler_shuffles_like_torch(drop_last):
    """torch's structure: per epoch one permutation shared by the ranks (disjoint shares covering the dataset, padded
    with its start), another one after set_epoch, the same again for the same seed and epoch."""
    n_items, replicas = 23, 4
    shares = {}
    for epoch in (0, 1):
        parts = []
        for rank in range(replicas):
            s = DistributedSampler(range(n_items), replicas, rank, shuffle=True, seed=7, drop_last=drop_last)
            s.set_epoch(epoch)
            parts.append(list(s))
            assert list(s) == parts[-1]  # the same order on a second pass of the same epoch
            ref = torch.utils.data.DistributedSampler(range(n_items), replicas, rank, drop_last=drop_last)
            assert len(s) == len(ref)
        order = [i for group in zip(*parts) for i in group]  # interleaved back: the epoch's permutation
        if drop_last:
            assert len(order) == 20 and len(set(order)) == 20
        else:
            assert sorted(order[:n_items]) == list(range(n_items)) and order[n_items:] == order[: 24 - n_items]
        shares[epoch] = parts
    assert shares[0] != shares[1]


def test_distributed_sampler_errors():
    with pytest.raises(RuntimeError, match="init_process_group"):
        DistributedSampler(range(4))
    with pytest.raises(ValueError, match="Invalid rank 3"):
        DistributedSampler(range(4), num_replicas=3, rank=3)


def test_collectives_before_init_say_what_to_call():
    import unigrad.distributed as dist
    from unigrad import Tensor

    with pytest.raises(RuntimeError, match="init_process_group"):
        dist.all_reduce(Tensor.ones(2))
    with pytest.raises(ValueError, match="unknown backend 'foo'"):
        dist.init_process_group("foo")
    assert not dist.is_initialized()


def test_launcher_command(monkeypatch):
    if shutil.which("mpirun") is None:
        pytest.skip("needs mpirun")
    cmd, env = launcher.mpirun_command(3, ["train.py", "--lr", "1"])
    assert cmd[1:3] == ["-np", "3"] and cmd[-4:] == ["--unigrad-worker", "train.py", "--lr", "1"]
    btl = launcher.shared_memory_btl()
    assert ["--mca", "btl", f"self,{btl}"] == cmd[3:6]
    assert ("--oversubscribe" in cmd) == (3 > (os.cpu_count() or 1))
    assert env["THREADS"] == str(max(1, (os.cpu_count() or 1) // 3)) or "THREADS" in os.environ


def test_post_accumulate_grad_hook_sees_the_accumulated_grad():
    """What DDP builds on: the hook runs after backward() filled .grad (accumulated), once per backward; remove()."""
    import unigrad.torch as ut

    w = ut.ones(3, requires_grad=True)
    seen = []
    handle = w.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.numpy().copy()))
    (w * 2).sum().backward()
    (w * 3).sum().backward()
    assert [s.tolist() for s in seen] == [[2.0] * 3, [5.0] * 3]
    handle.remove()
    (w * 3).sum().backward()
    assert len(seen) == 2
    with pytest.raises(RuntimeError, match="leaf"):
        (w * 2).register_post_accumulate_grad_hook(lambda t: None)


def test_launcher_passes_a_modules_options_on(capsys):
    """`-m module --opt`: the options after the module are the module's, not the launcher's."""
    if shutil.which("mpirun") is None:
        pytest.skip("needs mpirun")
    assert launcher.main(["-n", "2", "--print", "-m", "pkg.mod", "--worker", "x", "-n", "3"]) == 0
    line = capsys.readouterr().out.strip()
    assert line.endswith("--unigrad-worker -m pkg.mod --worker x -n 3") and " -np 2 " in line, line
