"""Two "machines" on one: Linux network namespaces joined by a veth pair, one rank in each, over Open MPI's TCP
transport (issue 35). mpirun runs in the first namespace; it starts the second rank's daemon through a remote-shell
agent that is `ip netns exec` into the second namespace (where a cluster would use ssh), and every MPI byte (the
daemons' wiring, the ranks' collectives) goes over TCP on the private test addresses 10.231.35.1 and 10.231.35.2 of
the veth pair (`btl self,tcp`: no shared memory between the ranks). The job trains (mpi_worker.py's `two_hosts`:
DDP equals one process) after checking that its two ranks are in different network namespaces.

Creating namespaces needs root (CAP_SYS_ADMIN for `ip netns add`, CAP_NET_ADMIN for the veth pair) and iproute2's
`ip`: without them the test skips and says which is missing. The namespaces and the pair are removed afterwards.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from test.distributed.test_distributed import HAVE_MPI, WORKER, passed

SUBNET = "10.231.35"  # private addresses, only on the veth pair this test makes


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check)


def _why_not() -> str | None:
    """Why two network namespaces cannot be made here (None: they can)."""
    if not HAVE_MPI:
        return "needs Open MPI's mpirun and mpi4py (apt-get install openmpi-bin libopenmpi-dev; pip install mpi4py)"
    if shutil.which("ip") is None:
        return "needs iproute2's `ip` (apt-get install iproute2)"
    if os.geteuid() != 0:
        return "needs root: CAP_SYS_ADMIN to create network namespaces (ip netns add), CAP_NET_ADMIN for a veth pair"
    probe = f"ugprobe{os.getpid()}"
    made = _ip("netns", "add", probe, check=False)
    if made.returncode != 0:
        return f"`ip netns add` is not permitted here (needs CAP_SYS_ADMIN): {made.stderr.strip()}"
    _ip("netns", "del", probe, check=False)
    return None


@pytest.fixture
def two_hosts(tmp_path: Path):
    """Namespaces a and b, joined by a veth pair with SUBNET.1 (a) and SUBNET.2 (b); yields (ns_a, ns_b, agent)."""
    reason = _why_not()
    if reason is not None:
        pytest.skip(reason)
    pid = os.getpid()
    ns = (f"ug{pid}a", f"ug{pid}b")
    veth = (f"ugv{pid % 100000}a", f"ugv{pid % 100000}b")  # interface names: at most 15 characters
    try:
        for n in ns:
            _ip("netns", "add", n)
            _ip("-n", n, "link", "set", "lo", "up")
        _ip("link", "add", veth[0], "netns", ns[0], "type", "veth", "peer", "name", veth[1], "netns", ns[1])
        for i, (n, v) in enumerate(zip(ns, veth)):
            _ip("-n", n, "addr", "add", f"{SUBNET}.{i + 1}/24", "dev", v)
            _ip("-n", n, "link", "set", v, "up")
        # mpirun's remote shell: `agent HOST COMMAND...` runs COMMAND in HOST's namespace (ssh's role on a cluster)
        agent = tmp_path / "netns_rsh"
        agent.write_text(
            "#!/bin/sh\n"
            f'case "$1" in {SUBNET}.1) ns={ns[0]} ;; {SUBNET}.2) ns={ns[1]} ;; '
            '*) echo "unknown host $1" >&2; exit 1 ;; esac\n'
            'shift\nexec ip netns exec "$ns" /bin/sh -c "$*"\n'
        )
        agent.chmod(0o755)
        yield ns[0], ns[1], agent
    finally:
        for n in ns:  # deleting a namespace deletes its end of the pair, and so the pair
            _ip("netns", "del", n, check=False)


def test_two_ranks_in_two_network_namespaces_train_over_tcp(two_hosts):
    ns_a, _, agent = two_hosts
    net = f"{SUBNET}.0/24"
    mpirun = [
        shutil.which("mpirun"),
        "-np", "2",
        "--host", f"{SUBNET}.1:1,{SUBNET}.2:1",
        "--mca", "plm_rsh_agent", str(agent),
        "--mca", "btl", "self,tcp",  # no shared memory: the ranks talk over the veth pair
        "--mca", "btl_tcp_if_include", net,
        "--mca", "oob_tcp_if_include", net,
        "-x", "THREADS=1", "-x", "PATH", "-x", "PYTHONPATH",
        sys.executable, "-m", "unigrad.distributed.run", "--unigrad-worker", str(WORKER), "two_hosts",
    ]  # fmt: skip
    env = {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parents[2]), env.get("PYTHONPATH", "")])
    p = subprocess.run(
        ["ip", "netns", "exec", ns_a, *mpirun], capture_output=True, text=True, timeout=300, env=env, check=False
    )
    passed(p, 2, "two_hosts")
