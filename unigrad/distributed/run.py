"""The launcher: `python -m unigrad.distributed.run -n N train.py args...` runs N processes of train.py on this machine.

In: a process count and a program (a script path, or `-m module`) with its arguments. Out: mpirun's exit status.
It calls Open MPI's mpirun with what one machine needs: the shared-memory and self transports only (loopback:
`--mca btl self,vader`, `sm` from Open MPI 5), `--oversubscribe` when N exceeds the cores, Open MPI's allow-run-as-root
settings when run as root (a container), and THREADS (unigrad's kernel threads) set to the cores per process unless
given. Each process then runs the program as __main__ with torch's RANK, LOCAL_RANK, WORLD_SIZE and LOCAL_WORLD_SIZE
taken from mpirun's own variables. `--print` shows the mpirun command instead of running it. Across machines, call
mpirun yourself (`mpirun -np N --host a,b python train.py`): the README says how.
"""

from __future__ import annotations

import argparse
import functools
import os
import runpy
import shutil
import subprocess
import sys

__all__ = ["main", "mpirun_command"]

_WORKER = "--unigrad-worker"  # what mpirun runs: this module, which sets torch's variables and runs the program
_RANK_VARS = {  # torch's variable: Open MPI's, then MPICH/Hydra's / PMI's
    "RANK": ("OMPI_COMM_WORLD_RANK", "PMI_RANK"),
    "WORLD_SIZE": ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE"),
    "LOCAL_RANK": ("OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID"),
    "LOCAL_WORLD_SIZE": ("OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"),
}


@functools.cache
def shared_memory_btl() -> str | None:
    """Open MPI's shared-memory transport's name: `vader` (Open MPI 4), `sm` (5); None if ompi_info is missing."""
    if shutil.which("ompi_info") is None:
        return None
    out = subprocess.run(["ompi_info"], capture_output=True, text=True, check=False).stdout
    return "vader" if "MCA btl: vader" in out else "sm"


def mpirun_command(n: int, program: list[str], mpirun_args: list[str] = ()) -> tuple[list[str], dict[str, str]]:
    """The mpirun command line that runs `program` (a script and its arguments, or ["-m", module, ...]) on n local
    processes, and the environment to run it in."""
    mpirun = shutil.which("mpirun")
    if mpirun is None:
        raise SystemExit(
            "unigrad.distributed.run: mpirun not found; install Open MPI (Debian/Ubuntu: apt-get install openmpi-bin "
            "libopenmpi-dev) and mpi4py (pip install -e '.[test]')"
        )
    env = dict(os.environ)
    cores = os.cpu_count() or 1
    cmd = [mpirun, "-np", str(n)]
    if (btl := shared_memory_btl()) is not None:
        cmd += ["--mca", "btl", f"self,{btl}"]  # one machine: no network transports are probed
        if n > cores:
            cmd += ["--oversubscribe"]
        if hasattr(os, "geteuid") and os.geteuid() == 0:  # root in a container: Open MPI refuses without these
            env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
            env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    env.setdefault("THREADS", str(max(1, cores // n)))  # the cores shared among the processes' kernel threads
    cmd += list(mpirun_args)
    return [*cmd, sys.executable, "-m", "unigrad.distributed.run", _WORKER, *program], env


def _worker(program: list[str]) -> None:
    """Inside one process of the job: torch's rank variables from mpirun's, then the program as __main__."""
    for name, sources in _RANK_VARS.items():
        for src in sources:
            if src in os.environ:
                os.environ.setdefault(name, os.environ[src])
                break
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29500")
    if program[0] == "-m":
        sys.argv = [program[1], *program[2:]]
        runpy.run_module(program[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = list(program)
        sys.path.insert(0, os.path.dirname(os.path.abspath(program[0])))
        runpy.run_path(program[0], run_name="__main__")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == _WORKER:
        _worker(argv[1:])
        return 0
    parser = argparse.ArgumentParser(
        prog="python -m unigrad.distributed.run",
        description="Run a program on N processes of this machine under mpirun (unigrad.distributed's launcher).",
    )
    parser.add_argument("-n", "--nproc", "--nproc-per-node", type=int, default=2, help="processes (default 2)")
    parser.add_argument("--mpirun-arg", action="append", default=[], help="one more argument for mpirun (repeat)")
    parser.add_argument("--print", action="store_true", help="print the mpirun command instead of running it")
    parser.add_argument("-m", dest="module", help="run a module (as python -m) instead of a script")
    parser.add_argument("program", nargs=argparse.REMAINDER, help="the script and its arguments")
    # `-m module args...`: everything after the module is the program's (argparse would read its options as ours)
    at = next((i for i, a in enumerate(argv) if a == "-m" and (i == 0 or argv[i - 1] != "--mpirun-arg")), None)
    own, rest = (argv, []) if at is None else (argv[: at + 2], argv[at + 2 :])
    args = parser.parse_args(own)
    program = ["-m", args.module, *args.program, *rest] if args.module else list(args.program)
    if not program:
        parser.error("give the script to run (or -m module)")
    if args.nproc < 1:
        parser.error(f"-n must be at least 1, got {args.nproc}")
    cmd, env = mpirun_command(args.nproc, program, args.mpirun_arg)
    if args.print:
        print(" ".join(cmd))
        return 0
    return subprocess.run(cmd, env=env, check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
