"""The disk caches (runtime/disk_cache.py): lowered kernels (runtime/lowered_cache.py) and schedules. A kernel lowered
or a graph scheduled once is read back, in this process after its program is dropped and in a fresh process, with the
same results; a change of code version or a broken entry is a miss; the caches are off with DISABLE_COMPILER_CACHE
and SPEC; a folder over CACHE_MB loses its least recently used entries."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from unigrad import Context, Tensor
from unigrad.ir.ops import Ops
from unigrad.ir.uop import UOp
from unigrad.runtime import disk_cache
from unigrad.runtime import realize as rt

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def lowerings(monkeypatch):
    """The kernels lowered from scratch (not read from the cache), by name, as the test goes."""
    seen: list[str] = []
    inner = rt._lower_new

    def counting(device, ast, target):
        lowered = inner(device, ast, target)
        seen.append(lowered.name)
        return lowered

    monkeypatch.setattr(rt, "_lower_new", counting)
    rt._program_cache.clear()  # kernels an earlier test built are not lowered again: start from none
    return seen


def kernel(x: np.ndarray, c: float) -> Tensor:
    t = Tensor(x)
    return ((t * c).exp() + t.square()).sum(1)  # a reduce over an elementwise body: one kernel


def want(x: np.ndarray, c: float) -> np.ndarray:
    return (np.exp(x * np.float32(c)) + x * x).sum(1)


def test_lowered_once_then_read_back(tmp_path, lowerings):
    x = np.random.default_rng(0).standard_normal((5, 7)).astype(np.float32)
    with Context(CACHEDIR=str(tmp_path), DISABLE_COMPILER_CACHE=0):
        np.testing.assert_allclose(kernel(x, 0.123).numpy(), want(x, 0.123), rtol=1e-5)
        assert len(lowerings) == 1
        assert len(list((tmp_path / "lowered").glob("*.pkl"))) == 1
        rt._program_cache.clear()  # as a new process would: the program is built from the entry
        np.testing.assert_allclose(kernel(x + 1, 0.123).numpy(), want(x + 1, 0.123), rtol=1e-5)
        assert len(lowerings) == 1
        np.testing.assert_allclose(kernel(x, 0.5).numpy(), want(x, 0.5), rtol=1e-5)  # another kernel: lowered
        assert len(lowerings) == 2


def test_new_code_version_or_broken_entry_is_a_miss(tmp_path, lowerings, monkeypatch):
    x = np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32)
    with Context(CACHEDIR=str(tmp_path), DISABLE_COMPILER_CACHE=0):
        kernel(x, 0.25).numpy()
        monkeypatch.setattr(disk_cache, "code_version", lambda: "an-edited-tree")
        rt._program_cache.clear()
        kernel(x, 0.25).numpy()
        assert len(lowerings) == 2  # keyed by the code: never a lowering from older code
        for entry in (tmp_path / "lowered").glob("*.pkl"):
            entry.write_bytes(b"not a pickle")
        rt._program_cache.clear()
        with pytest.warns(RuntimeWarning, match="damaged cache entries"):  # caught by its seal, rebuilt
            np.testing.assert_allclose(kernel(x, 0.25).numpy(), want(x, 0.25), rtol=1e-5)
        assert len(lowerings) == 3


@pytest.mark.parametrize("knob", [{"DISABLE_COMPILER_CACHE": 1}, {"SPEC": 1}])
def test_off(tmp_path, lowerings, knob):
    x = np.ones((2, 3), np.float32)
    with Context(CACHEDIR=str(tmp_path), **{"DISABLE_COMPILER_CACHE": 0, **knob}):
        kernel(x, 0.75).numpy()
        rt._program_cache.clear()
        kernel(x, 0.75).numpy()
    assert len(lowerings) == 2
    assert not (tmp_path / "lowered").exists()


@pytest.mark.parametrize("device", ["CPU", "PYTHON"])
def test_fresh_process_reads_the_entries(tmp_path, device):
    """UOps pickle as constructor calls: a fresh process rebuilds the LINEAR through hash-consing, its DTypes the
    interned ones, and runs the kernels without lowering them (the PYTHON device interprets that LINEAR)."""
    script = (
        "import numpy as np\n"
        "from unigrad import Tensor\n"
        "from unigrad.runtime import realize as rt\n"
        "n = []\n"
        "inner = rt._lower_new\n"
        "rt._lower_new = lambda *a: n.append(1) or inner(*a)\n"
        "x = Tensor(np.arange(12, dtype=np.float32).reshape(3, 4))\n"
        "y = (x @ x.T).relu().softmax(1).numpy()\n"
        "print(len(n), ' '.join(f'{v:.6f}' for v in y.ravel()))\n"
    )
    env = {**os.environ, "CACHEDIR": str(tmp_path), "DISABLE_COMPILER_CACHE": "0", "PYTHONPATH": str(REPO)}
    env["DEVICE"] = device
    runs = [subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env) for _ in range(2)]
    for r in runs:
        assert r.returncode == 0, r.stderr
    (first, *values1), (second, *values2) = (r.stdout.split() for r in runs)
    assert int(first) >= 2 and int(second) == 0  # every kernel came from the cache the second time
    assert values1 == values2
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    e = np.exp(np.maximum(x @ x.T, 0) - np.maximum(x @ x.T, 0).max(1, keepdims=True))
    np.testing.assert_allclose(np.array(values2, np.float64), (e / e.sum(1, keepdims=True)).ravel(), atol=1e-6)


def test_kernels_differing_early_in_a_long_graph_do_not_share_an_entry(tmp_path, lowerings):
    """The key hashes every node: repr() lists only the last nodes of a long graph, so two kernels that differ in
    an early constant print alike (a sum loss once came back as the mean's kernel, a third of the value)."""
    from unigrad.ir.text import structure

    x = np.random.default_rng(2).standard_normal(6).astype(np.float32)

    def chain(first: float) -> Tensor:
        t = Tensor(x) * first
        for i in range(60):
            t = (t + 0.5 * i).sin()
        return t

    a, b = chain(2.0).uop, chain(3.0).uop
    assert repr(a) == repr(b) and structure(a) != structure(b)
    with Context(CACHEDIR=str(tmp_path), DISABLE_COMPILER_CACHE=0):
        for first in (2.0, 3.0):
            ref = x * np.float32(first)
            for i in range(60):
                ref = np.sin(ref + np.float32(0.5 * i))
            np.testing.assert_allclose(chain(first).numpy(), ref, rtol=1e-4, atol=1e-5)
    assert len(lowerings) == 2


@pytest.fixture
def schedulings(monkeypatch):
    """The graphs rangeified from scratch (not read from the schedule cache), as the test goes."""
    seen: list[UOp] = []
    inner = rt.rangeify

    def counting(fn, device):
        seen.append(fn)
        return inner(fn, device)

    monkeypatch.setattr(rt, "rangeify", counting)
    return seen


def forget_schedules():
    """As a new process would start: no schedule or program in memory."""
    rt._schedule_cache.clear()
    rt._program_cache.clear()


def two_kernels(x: np.ndarray) -> Tensor:
    t = Tensor(x)
    return (t - t.max(1, keepdim=True)).exp().sum(1) * 0.5


def test_schedule_saved_then_read_back(tmp_path, schedulings, lowerings):
    x = np.random.default_rng(3).standard_normal((6, 9)).astype(np.float32)
    e = np.exp(x - x.max(1, keepdims=True)).sum(1) * 0.5
    with Context(CACHEDIR=str(tmp_path), DISABLE_COMPILER_CACHE=0):
        forget_schedules()
        np.testing.assert_allclose(two_kernels(x).numpy(), e, rtol=1e-5)
        n_sched, n_lowered = len(schedulings), len(lowerings)
        assert n_sched >= 1 and n_lowered >= 2
        assert list((tmp_path / "schedules").glob("*.pkl"))
        forget_schedules()
        np.testing.assert_allclose(two_kernels(x + 2).numpy(), np.exp(x - x.max(1, keepdims=True)).sum(1) * 0.5,
                                   rtol=1e-5)  # fmt: skip
        assert len(schedulings) == n_sched and len(lowerings) == n_lowered  # both from disk
        forget_schedules()
        y = np.random.default_rng(4).standard_normal((6, 10)).astype(np.float32)  # another shape: a new schedule
        two_kernels(y).numpy()
        assert len(schedulings) > n_sched


def test_loaded_kernel_decodes_its_linear_only_when_asked(tmp_path, lowerings):
    x = np.ones((2, 5), np.float32)
    with Context(CACHEDIR=str(tmp_path), DISABLE_COMPILER_CACHE=0):
        kernel(x, 0.3).numpy()
        forget_schedules()
        kernel(x, 0.3).numpy()
        (ck,) = rt._program_cache.values()
        assert type(ck.lowered.graph) is bytes  # the CPU device built it from the source alone
        assert ck.linear.op is Ops.LINEAR and ck.flops > 0
        assert ck.lowered.graph is ck.linear  # decoded once


def test_folder_is_bounded_least_recently_used_first(tmp_path, monkeypatch):
    folder = tmp_path / "entries"
    folder.mkdir()
    for i in range(10):
        (folder / f"{i}.pkl").write_bytes(b"x" * 200_000)
        os.utime(folder / f"{i}.pkl", ns=(i * 10**9, i * 10**9))  # 0 is the oldest
    os.utime(folder / "0.pkl")  # ... until read again now
    (folder / "keep.so").write_bytes(b"y" * 500_000)  # another suffix: not this cache's
    with Context(CACHE_MB=1):
        disk_cache.prune(folder, ".pkl")
    left = sorted(p.name for p in folder.glob("*.pkl"))
    assert sum(p.stat().st_size for p in folder.glob("*.pkl")) <= 3 * (1 << 20) // 4
    assert "0.pkl" in left and "9.pkl" in left and "1.pkl" not in left
    assert (folder / "keep.so").exists()


def test_saves_prune_their_folder(tmp_path, monkeypatch):
    """The size is looked at after a sixteenth of CACHE_MB written (here 64 KiB: each save), and at the first write
    of a process when no one has for a day."""
    cache = disk_cache.DiskCache("bounded")
    scans = []
    real = disk_cache.prune
    monkeypatch.setattr(disk_cache, "prune", lambda folder, suffix: scans.append(folder) or real(folder, suffix))
    with Context(CACHEDIR=str(tmp_path), CACHE_MB=1, DISABLE_COMPILER_CACHE=0):
        for i in range(40):
            cache.save(cache.key(str(i)), b"z" * 100_000)
        assert sum(p.stat().st_size for p in (tmp_path / "bounded").glob("*.pkl")) <= (1 << 20) + 100_100
        assert len(scans) == 40
    scans.clear()
    with Context(CACHEDIR=str(tmp_path), CACHE_MB=1024, DISABLE_COMPILER_CACHE=0):
        for i in range(40):
            cache.save(cache.key(f"small{i}"), b"s" * 1000)  # 40 KB of 1 GiB, stamped just now: no scan
        assert not scans
        os.utime(tmp_path / "bounded" / disk_cache.STAMP, (0, 0))  # nobody looked for a day ...
        disk_cache._written.pop(str(tmp_path / "bounded"))  # ... and this is a new process's first write
        cache.save(cache.key("late"), b"l")
        assert len(scans) == 1
        assert cache.load(cache.key("39"), bytes) == b"z" * 100_000
        assert cache.load(cache.key("39"), str) is None  # not the kind asked for: a miss


DAMAGE_SCRIPT = (
    "import numpy as np\n"
    "from unigrad import Tensor\n"
    "x = Tensor(np.arange(12, dtype=np.float32).reshape(3, 4))\n"
    "y = ((x @ x.T).relu().softmax(1) + x.sum()).numpy()\n"
    "print(' '.join(f'{v:.6f}' for v in y.ravel()))\n"
)


def _damage(path: Path, how: str, other: Path) -> None:
    data = path.read_bytes()
    if how == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif how == "empty":
        path.write_bytes(b"")
    elif how == "garbled":  # bytes flipped all through the file, its seal too
        path.write_bytes(bytes(b ^ 0x5A if i % 97 == 13 else b for i, b in enumerate(data)))
    elif how == "garbled_body":  # the body's bytes flipped, its seal intact
        path.write_bytes(bytes(b ^ 0xFF if 64 <= i < len(data) // 2 else b for i, b in enumerate(data)))
    else:  # "foreign": another entry's bytes (sealed under another key: another version, machine or kernel)
        path.write_bytes(other.read_bytes())


@pytest.mark.parametrize("how", ["truncated", "empty", "garbled", "garbled_body", "foreign"])
def test_damaged_entries_are_rebuilt(tmp_path, how):
    """Every entry of every cache folder damaged between two processes: the second still gives the right answer,
    with one warning per folder, and rebuilds the entries (a garbled shared object mapped as it was kills the
    process with SIGBUS; a truncated one fails in dlopen)."""
    env = {**os.environ, "CACHEDIR": str(tmp_path), "DISABLE_COMPILER_CACHE": "0", "PYTHONPATH": str(REPO)}
    env["DEVICE"] = "CPU"
    first = subprocess.run([sys.executable, "-c", DAMAGE_SCRIPT], capture_output=True, text=True, env=env)
    assert first.returncode == 0, first.stderr
    folders = sorted(f for f in tmp_path.iterdir() if f.is_dir())
    assert {f.name for f in folders} >= {"cpu", "lowered", "schedules"}
    damaged: dict[Path, bytes] = {}  # entry -> its damaged bytes (a folder of one entry has no foreign one)
    for folder in folders:
        entries = sorted(p for p in folder.iterdir() if p.suffix in (".so", ".pkl"))
        for i, entry in enumerate(entries):
            before = entry.read_bytes()
            _damage(entry, how, entries[(i + 1) % len(entries)])
            if entry.read_bytes() != before:
                damaged[entry] = entry.read_bytes()
    assert damaged
    second = subprocess.run([sys.executable, "-c", DAMAGE_SCRIPT], capture_output=True, text=True, env=env)
    assert second.returncode == 0, second.stderr
    assert second.stdout == first.stdout
    for folder in {p.parent for p in damaged}:
        rebuilt = [p for p, b in damaged.items() if p.parent == folder and p.exists() and p.read_bytes() != b]
        assert rebuilt, f"no entry of {folder.name} was rebuilt"
    warned = [line for line in second.stderr.splitlines() if "damaged cache entries" in line]
    assert 1 <= len(warned) <= len(folders), second.stderr
    third = subprocess.run([sys.executable, "-c", DAMAGE_SCRIPT], capture_output=True, text=True, env=env)
    assert third.returncode == 0 and third.stdout == first.stdout and "damaged" not in third.stderr, third.stderr


def test_seal_detects_truncation_garbling_and_another_key():
    data = b"\x7fELF some bytes" * 10
    blob = disk_cache.seal("k1", data)
    assert disk_cache.unseal("k1", blob) == data
    assert disk_cache.unseal("k2", blob) is None  # sealed under another key
    assert disk_cache.unseal("k1", blob[:-1]) is None
    assert disk_cache.unseal("k1", blob[1:]) is None
    assert disk_cache.unseal("k1", b"") is None
    assert disk_cache.unseal("k1", data) is None  # never sealed (an older format)
    assert disk_cache.unseal("k1", blob[:5] + b"X" + blob[6:]) is None


def test_beam_opts_entry_damaged_is_a_miss(tmp_path):
    from unigrad.pipeline.optimize import Opt, OptOps
    from unigrad.runtime import beam

    opts = (Opt(OptOps.PADTO, 0, 32),)
    with Context(CACHEDIR=str(tmp_path), DISABLE_COMPILER_CACHE=0):
        beam.save_opts("abc", opts)
        assert beam.load_opts("abc") == opts
        path = tmp_path / "beam" / "abc.json"
        path.write_bytes(path.read_bytes().replace(b"32", b"64"))  # still JSON, the wrong opts
        with pytest.warns(RuntimeWarning, match="damaged"):
            assert beam.load_opts("abc") is None
        assert not path.exists()
