"""The PYTHON device: interprets the same linearized UOps the C renderer sees, one scalar at a time.

It is the executable definition of the ops (ir/alu.py): slow, simple, and what the CPU device is
checked against. Memory is a Python list per buffer.

With the knob PYTHON_GPU set it is also the executable definition of the GPU ops: kernels are lowered for a GPU
target (work-group limits and LOCAL memory from the knob) and run group by group, each work-item (lane) with its
own registers and SPECIAL values, LOCAL arrays shared by the lanes of a group. Lanes run one after another up to
each BARRIER. It checks what lockstep execution would hide: between two barriers, a lane that loads a LOCAL
element another lane stored, or stores over one another lane loaded or stored, is a race (LocalRaceError naming
the kernel, the array, the element and the lanes); a barrier that not every lane reaches is an error too.

A WMMA (tensor cores, PYTHON_GPU with tc=1) is a warp's collective: every lane runs up to it and hands in its
fragments, then each warp (32 consecutive lanes of the group) computes D = A @ B + C from them (run_wmma, the
definition: the lanes' elements placed by the TensorCore's layout, sums in float32 in k order, C added last) and each
lane goes on with its own D elements. A WMMA that only some lanes of a group reach, or a group that is not whole
warps, is an error (mma.sync needs the whole warp)."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from unigrad import config
from unigrad.dtype import DType, dtypes
from unigrad.ir.alu import ALU_PY, bitcast, exec_alu, float_to_fp8, normalize
from unigrad.ir.args import AddrSpace, TensorCore
from unigrad.ir.ops import Ops
from unigrad.pipeline.optimize.opts import Target
from unigrad.render.cuda import CUDA_TENSOR_CORES
from unigrad.ir.uop import UOp
from unigrad.render.cstyle import KernelSignature
from unigrad.runtime import Allocator, Compiled, Compiler, Lowered, fp8_values, to_numpy_dtype


class PythonAllocator(Allocator):
    def __init__(self) -> None:
        self.fp8: dict[int, DType] = {}  # fp8 buffers (by id of the handle): copies carry their codes

    def alloc(self, nbytes: int, dtype: DType, size: int) -> Any:
        handle = [normalize(0, dtype)] * size
        if dtype in dtypes.fp8s:
            self.fp8[id(handle)] = dtype
        return handle

    def free(self, handle: Any, nbytes: int) -> None:
        self.fp8.pop(id(handle), None)

    def copyin(self, handle: Any, src: np.ndarray) -> None:
        vals = src.tolist()
        if (fp8 := self.fp8.get(id(handle))) is not None:  # fp8 codes
            vals = fp8_values(fp8)[src].tolist()
        elif src.dtype == np.uint16 and len(handle) and isinstance(handle[0], float):  # bfloat16 bits
            vals = (src.astype(np.uint32) << 16).view(np.float32).tolist()
        handle[: len(vals)] = vals

    def copyout(self, handle: Any, dtype: DType, size: int) -> np.ndarray:
        if dtype is dtypes.bfloat16:
            return (np.array(handle[:size], dtype=np.float32).view(np.uint32) >> 16).astype(np.uint16)
        if dtype in dtypes.fp8s:
            return np.array([float_to_fp8(v, dtype) for v in handle[:size]], dtype=np.uint8)
        return np.array(handle[:size], dtype=to_numpy_dtype(dtype))


class PythonCompiler(Compiler):
    def compile(self, src: str) -> bytes:
        return src.encode()


def _alu(op: Ops, dtype: DType) -> Callable[..., Any]:
    """The op on Python scalars: exec_alu, or the bare Python function where the dtype needs no rounding."""
    if dtype is dtypes.index and op in ALU_PY and op not in (Ops.IDIV, Ops.MOD):
        return ALU_PY[op]
    return functools.partial(exec_alu, op, dtype)


class PythonProgram:
    """Runs a LINEAR: RANGE starts a loop, END jumps back while the counter is below the bound.

    The LINEAR is decoded once into (kind, dst, srcs, extra) tuples over a register list, so a run does no
    dictionary lookups per instruction."""

    def __init__(self, name: str, linear: UOp, sig: KernelSignature):
        self.name, self.sig = name, sig
        uops = linear.src
        reg = {u: i for i, u in enumerate(uops)}
        self.code: list[tuple[Any, ...]] = []
        for i, u in enumerate(uops):
            srcs = tuple(reg[s] for s in u.src if s in reg)
            op = u.op
            if op is Ops.RANGE:
                end = next(j for j in range(i + 1, len(uops)) if uops[j].op is Ops.END and uops[j].src[1] is u)
                self.code.append(("range", i, srcs, end))
            elif op is Ops.END:
                self.code.append(("end", reg[u.src[1]], (reg[u.src[1].src[0]],), reg[u.src[1]]))
            elif op is Ops.CONST:
                self.code.append(("const", i, (), u.arg.value))
            elif op is Ops.PARAM:
                if u.arg.name is not None:
                    self.code.append(("var", i, (), u.arg.name))
                elif u.arg.addrspace is AddrSpace.REG:
                    self.code.append(("reg", i, (), (normalize(0, u.dtype), u.shape[0])))
                elif u.arg.addrspace is AddrSpace.LOCAL:
                    self.code.append(("local", i, (), (u.arg.slot, normalize(0, u.dtype), u.shape[0])))
                else:
                    self.code.append(("buf", i, (), u.arg.slot))
            elif op is Ops.SPECIAL:
                self.code.append(("special", i, (), u.arg))
            elif op is Ops.BARRIER:
                self.code.append(("barrier", i, (), None))
            elif op is Ops.WMMA:  # its sources are STACKs: the lane's fragment elements, A's then B's then C's
                self.code.append(("wmma", i, tuple(reg[x] for f in u.src for x in f.src), u.arg.tc))
            elif op is Ops.IF:
                endif = next(j for j in range(i + 1, len(uops)) if uops[j].op is Ops.ENDIF and uops[j].src[0] is u)
                self.code.append(("if", i, srcs, endif))
            elif op in (Ops.AFTER, Ops.INDEX, Ops.LOAD, Ops.STORE):
                self.code.append((op.name.lower(), i, srcs, None))
            elif op in (Ops.STACK, Ops.SINK, Ops.GROUP, Ops.ENDIF):
                self.code.append(("nop", i, (), None))
            elif op is Ops.BITCAST:
                self.code.append(("alu", i, srcs, functools.partial(bitcast, src=u.src[0].dtype, dst=u.dtype)))
            else:
                self.code.append(("alu", i, srcs, _alu(op, u.dtype)))

    def __call__(self, bufs: list[Any], var_vals: dict[str, int], wait: bool = False) -> None:
        """Run on `bufs` (by slot) and the Variables' values (`wait`: every run is synchronous here)."""
        mem = {slot: bufs[slot].handle for slot, _ in self.sig.buffers}  # unused buffers are not in the code
        if not self.sig.gpu:
            for _ in self._lane(mem, var_vals, {}, None, 0):
                raise RuntimeError(f"{self.name}: a BARRIER in a kernel lowered for a CPU")
            return
        groups, items = self.sig.launch_dims(var_vals)
        for gz, gy, gx in itertools.product(*(range(n) for n in groups[::-1])):
            self._group({"gidx0": gx, "gidx1": gy, "gidx2": gz}, items, mem, var_vals)

    def _group(self, gids: dict[str, int], items: tuple[int, ...], mem: dict, var_vals: dict[str, int]) -> None:
        """One work-group: every lane up to the next BARRIER, in turn, until all have returned."""
        shared: dict[int, list[Any]] = {}  # LOCAL arrays by slot, made by the first lane that declares them
        races = _RaceCheck(self.name)
        lanes = []
        for lane, (lz, ly, lx) in enumerate(itertools.product(*(range(n) for n in items[::-1]))):
            specials = {**gids, "lidx0": lx, "lidx1": ly, "lidx2": lz}
            lanes.append(self._lane(mem, var_vals, specials, (shared, races), lane))
        while lanes:
            steps = [(lane, next(lane, None)) for lane in lanes]
            waiting = [(lane, step) for lane, step in steps if step is not None]
            if waiting and len(waiting) != len(lanes):
                raise RuntimeError(
                    f"{self.name}: a BARRIER or WMMA that {len(lanes) - len(waiting)} of {len(lanes)} lanes "
                    "of a work-group never reach (under a branch some lanes skip)"
                )
            mmas = [step for _, step in waiting if isinstance(step, WarpMMA)]
            if mmas:
                self._warps(mmas, len(waiting))
            else:
                races.barrier()
            lanes = [lane for lane, _ in waiting]

    def _warps(self, mmas: list[WarpMMA], lanes: int) -> None:
        """Every lane of the group is at a WMMA: each warp's (32 consecutive lanes) D from their fragments."""
        if len(mmas) != lanes:
            raise RuntimeError(
                f"{self.name}: {lanes - len(mmas)} lanes of a work-group are at a BARRIER, the rest at a WMMA"
            )
        tc = mmas[0].tc
        if lanes % tc.threads:
            raise RuntimeError(
                f"{self.name}: a WMMA in a work-group of {lanes} work-items (not whole warps of {tc.threads})"
            )
        for w in range(0, lanes, tc.threads):
            warp = mmas[w : w + tc.threads]
            for lane, d in enumerate(run_wmma(tc, [m.frags for m in warp])):
                warp[lane].d = d

    def _lane(
        self, mem: dict, var_vals: dict[str, int], specials: dict[str, int], group: tuple | None, lane: int
    ) -> Iterator[bool]:
        """Run the code as one lane; yields at each BARRIER (a CPU kernel never yields)."""
        code = self.code
        r: list[Any] = [None] * len(code)
        pc, n = 0, len(code)
        while pc < n:
            kind, d, s, x = code[pc]
            if kind == "alu":
                r[d] = x(*[r[i] for i in s])
            elif kind == "index":
                r[d] = (r[s[0]], r[s[1]])
            elif kind == "load":
                if len(s) == 3 and not r[s[2]]:
                    r[d] = r[s[1]]
                else:
                    lst, i = r[s[0]]
                    if group is not None and id(lst) in group[1].arrays:
                        group[1].load(lst, i, lane)
                    r[d] = lst[i]
            elif kind == "store":
                if len(s) < 3 or r[s[2]]:
                    lst, i = r[s[0]]
                    if group is not None and id(lst) in group[1].arrays:
                        group[1].store(lst, i, lane)
                    lst[i] = r[s[1]]
            elif kind == "end":
                r[d] += 1
                if r[d] < r[s[0]]:
                    pc = x + 1
                    continue
            elif kind == "range":
                r[d] = 0
                if r[s[0]] <= 0:
                    pc = x + 1
                    continue
            elif kind == "after":
                r[d] = r[s[0]]
            elif kind == "const":
                r[d] = x
            elif kind == "buf":
                r[d] = mem[x]
            elif kind == "reg":
                r[d] = [x[0]] * x[1]
            elif kind == "var":
                r[d] = var_vals[x]
            elif kind == "special":
                r[d] = specials[x]
            elif kind == "local":
                if group is None:
                    raise RuntimeError(f"{self.name}: a LOCAL array in a kernel lowered for a CPU")
                slot, fill, size = x
                if slot not in group[0]:
                    group[0][slot] = [fill] * size
                    group[1].arrays[id(group[0][slot])] = f"temp{slot}"
                r[d] = group[0][slot]
            elif kind == "barrier":
                yield True
            elif kind == "wmma":
                mma = WarpMMA(x, [r[i] for i in s])
                yield mma
                r[d] = mma.d
            elif kind == "if":
                r[d] = bool(r[s[0]])
                if not r[d]:  # skip the block: on after its ENDIF
                    pc = x + 1
                    continue
            pc += 1


class WarpMMA:
    """A lane at a WMMA: its fragments (A's, B's, C's elements in order) in, its D elements out."""

    def __init__(self, tc: TensorCore, frags: list[Any]) -> None:
        self.tc, self.frags = tc, frags
        self.d: list[Any] = []


def run_wmma(tc: TensorCore, frags: list[list[Any]]) -> list[list[float]]:
    """One warp's D = A @ B + C: frags[lane] is the lane's A, B and C elements (tc.a.size, tc.b.size, tc.c.size
    values in fragment order); the result is each lane's D elements (C's layout). The definition of a WMMA: each
    element of A, B and C comes from the lane and element TensorCore.coord places it at; D[m, n] sums the products
    A[m, k] * B[k, n] for k = 0..K-1 in order, from 0, rounding each add to dtype_out (the products of two float16 or
    bfloat16 values are exact in float32), then adds C[m, n] with one more rounding."""
    M, N, K = tc.dims
    na, nb = tc.a.size, tc.b.size
    mats = {"a": [[0.0] * K for _ in range(M)], "b": [[0.0] * N for _ in range(K)], "c": [[0.0] * N for _ in range(M)]}
    for lane, f in enumerate(frags):
        for name, frag, vals in (("a", tc.a, f[:na]), ("b", tc.b, f[na : na + nb]), ("c", tc.c, f[na + nb :])):
            for i, v in enumerate(vals):
                row, col = tc.coord(frag, lane, i)
                mats[name][row][col] = v
    A, B, C = mats["a"], mats["b"], mats["c"]
    out = []
    for lane in range(len(frags)):
        d = []
        for i in range(tc.c.size):
            m, n = tc.coord(tc.c, lane, i)
            acc = 0.0
            for k in range(K):
                acc = normalize(acc + A[m][k] * B[k][n], tc.dtype_out)
            d.append(normalize(acc + C[m][n], tc.dtype_out))
        out.append(d)
    return out


class LocalRaceError(RuntimeError):
    """Two lanes of a work-group touched one LOCAL element between barriers, one of them storing."""


class _RaceCheck:
    """Who loaded and stored each LOCAL element since the group's last barrier."""

    def __init__(self, kernel: str) -> None:
        self.kernel = kernel
        self.arrays: dict[int, str] = {}  # id of a LOCAL array -> its name
        self.stored: dict[tuple[int, int], int] = {}  # (array, element) -> the lane that stored it
        self.loaded: dict[tuple[int, int], set[int]] = {}  # (array, element) -> lanes that loaded it

    def _race(self, lst: list, i: int, what: str) -> LocalRaceError:
        return LocalRaceError(
            f"{self.kernel}: race on LOCAL {self.arrays[id(lst)]}[{i}]: {what} since the last barrier "
            "(a BARRIER is missing between them)"
        )

    def load(self, lst: list, i: int, lane: int) -> None:
        key = (id(lst), i)
        if (writer := self.stored.get(key, lane)) != lane:
            raise self._race(lst, i, f"lane {lane} loads the element lane {writer} stored")
        self.loaded.setdefault(key, set()).add(lane)

    def store(self, lst: list, i: int, lane: int) -> None:
        key = (id(lst), i)
        if (writer := self.stored.get(key, lane)) != lane:
            raise self._race(lst, i, f"lane {lane} stores over the element lane {writer} stored")
        if others := self.loaded.get(key, set()) - {lane}:
            raise self._race(lst, i, f"lane {lane} stores over the element lane {min(others)} loaded")
        self.stored[key] = lane

    def barrier(self) -> None:
        self.stored.clear()
        self.loaded.clear()


class PythonDevice(Compiled):
    @property
    def target(self) -> Target:
        """A CPU's (one thread, scalar), or with PYTHON_GPU a GPU's: the emulator runs what a GPU would."""
        if not config.PYTHON_GPU.value:
            return super().target
        return gpu_target(str(config.PYTHON_GPU.value))

    def build(self, lowered: Lowered) -> PythonProgram:
        """The program of a lowered kernel: an interpreter of its LINEAR (the source is only shown at DEBUG=4)."""
        return PythonProgram(lowered.name, lowered.linear, lowered.sig)


@functools.cache
def gpu_target(spec: str) -> Target:
    """The GPU Target the knob PYTHON_GPU describes: '1' or 'max_group=N,local_bytes=M,global_max=K,tc=1' (any may be
    left out; global_max bounds the groups in dimensions 1 and 2, as CUDA's 65535 does; tc=1 gives it the tensor
    cores of CUDA's sm_80 and newer, whose WMMAs the emulator runs lane by lane, and shows kernels as CUDA C++)."""
    fields = {"max_group": 256, "local_bytes": 16384, "global_max": 2**31 - 1, "tc": 0}
    if spec.strip() != "1":
        for part in spec.split(","):
            key, _, value = part.partition("=")
            if key.strip() not in fields or not value.strip().isdigit():
                raise ValueError(
                    f"PYTHON_GPU: expected '1' or 'max_group=N,local_bytes=M,global_max=K,tc=1', got {spec!r}"
                )
            fields[key.strip()] = int(value)
    n, g = fields["max_group"], fields["global_max"]
    cores = CUDA_TENSOR_CORES if fields["tc"] else ()
    return Target(
        1, 0, 16, True, (2**31 - 1, g, g), (n, n, n), n, fields["local_bytes"], 32 if cores else 1, True, cores
    )


class ShownAs:
    """The PYTHON device's renderer: C for a CPU kernel, OpenCL C for a GPU one (PYTHON_GPU), CUDA C++ for a GPU with
    tensor cores (tc=1: the mma.sync a WMMA is). It renders only to show the source at DEBUG=4 and to make the
    kernel's signature; the device runs the LINEAR itself."""

    def __init__(self) -> None:
        from unigrad.render.c import CLanguage
        from unigrad.render.cuda import CUDALanguage
        from unigrad.render.opencl import OpenCLLanguage

        self.cpu, self.gpu, self.cuda = CLanguage(), OpenCLLanguage(), CUDALanguage("sm_80")

    def __getattr__(self, name: str) -> Any:
        spec = str(config.PYTHON_GPU.value)
        if not spec:
            return getattr(self.cpu, name)
        return getattr(self.cuda if gpu_target(spec).tensor_cores else self.gpu, name)


def open_device(name: str) -> Compiled:
    return PythonDevice(name, PythonAllocator(), ShownAs(), PythonCompiler(), PythonProgram)  # type: ignore[arg-type]
