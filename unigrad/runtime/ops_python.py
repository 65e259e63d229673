"""The PYTHON device: interprets the same linearized UOps the C renderer sees, one scalar at a time.

It is the executable definition of the ops (ir/alu.py): slow, simple, and what the CPU device is
checked against. Memory is a Python list per buffer."""

from __future__ import annotations

from typing import Any

import numpy as np

from unigrad.dtype import DType, dtypes
from unigrad.ir.alu import exec_alu, normalize
from unigrad.ir.args import AddrSpace
from unigrad.ir.ops import Ops
from unigrad.ir.uop import UOp
from unigrad.render.cstyle import KernelSignature
from unigrad.runtime import Allocator, Compiled, Compiler, to_numpy_dtype


class PythonAllocator(Allocator):
    def alloc(self, nbytes: int, dtype: DType, size: int) -> Any:
        return [normalize(0, dtype)] * size

    def copyin(self, handle: Any, src: np.ndarray) -> None:
        vals = src.tolist()
        if src.dtype == np.uint16 and len(handle) and isinstance(handle[0], float):  # bfloat16 bits
            vals = (src.astype(np.uint32) << 16).view(np.float32).tolist()
        handle[:] = vals

    def copyout(self, handle: Any, dtype: DType, size: int) -> np.ndarray:
        if dtype is dtypes.bfloat16:
            return (np.array(handle, dtype=np.float32).view(np.uint32) >> 16).astype(np.uint16)
        return np.array(handle, dtype=to_numpy_dtype(dtype)).reshape(size)


class PythonCompiler(Compiler):
    def compile(self, src: str) -> bytes:
        return src.encode()


class PythonProgram:
    """Runs a LINEAR: RANGE starts a loop, END jumps back while the counter is below the bound."""

    def __init__(self, name: str, linear: UOp, sig: KernelSignature):
        self.name, self.uops, self.sig = name, linear.src, sig
        self.jump: dict[int, int] = {}
        pos = {u: i for i, u in enumerate(self.uops)}
        for i, u in enumerate(self.uops):
            if u.op is Ops.END:
                self.jump[i] = pos[u.src[1]]
                self.jump[pos[u.src[1]]] = i

    def __call__(self, bufs: list[Any], var_vals: dict[str, int]) -> None:
        mem = {slot: b.handle for (slot, _), b in zip(self.sig.buffers, bufs)}
        uops, jump = self.uops, self.jump
        v: dict[UOp, Any] = {}
        pc, n = 0, len(uops)
        while pc < n:
            u = uops[pc]
            op = u.op
            if op is Ops.RANGE:
                v[u] = 0
                if v[u.src[0]] <= 0:
                    pc = jump[pc] + 1
                    continue
            elif op is Ops.END:
                r = u.src[1]
                v[r] += 1
                if v[r] < v[r.src[0]]:
                    pc = jump[pc] + 1
                    continue
            elif op is Ops.CONST:
                v[u] = u.arg.value
            elif op is Ops.PARAM:
                if u.arg.name is not None:
                    v[u] = var_vals[u.arg.name]
                elif u.arg.addrspace is AddrSpace.REG:
                    v[u] = [normalize(0, u.dtype)]
                else:
                    v[u] = mem[u.arg.slot]
            elif op is Ops.AFTER:
                v[u] = v[u.src[0]]
            elif op is Ops.INDEX:
                v[u] = (v[u.src[0]], v[u.src[1]])
            elif op is Ops.LOAD:
                if len(u.src) == 3 and not v[u.src[2]]:
                    v[u] = v[u.src[1]]
                else:
                    lst, i = v[u.src[0]]
                    v[u] = lst[i]
            elif op is Ops.STORE:
                if len(u.src) < 3 or v[u.src[2]]:
                    lst, i = v[u.src[0]]
                    lst[i] = v[u.src[1]]
            elif op in (Ops.STACK, Ops.SINK):
                pass
            else:
                v[u] = exec_alu(op, u.dtype if op is not Ops.BITCAST else u.arg, *(v[s] for s in u.src))
            pc += 1


class PythonDevice(Compiled):
    def build(self, name: str, src: str, sig: KernelSignature, linear: UOp) -> tuple[bytes, PythonProgram]:
        return self.compiler.compile(src), PythonProgram(name, linear, sig)


def open_device(name: str) -> Compiled:
    from unigrad.render.c import CLanguage

    # the PYTHON device renders C only to show it at DEBUG=4; it runs the LINEAR itself
    return PythonDevice(name, PythonAllocator(), CLanguage(), PythonCompiler(), PythonProgram)  # type: ignore[arg-type]
