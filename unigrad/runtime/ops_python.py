"""The PYTHON device: interprets the same linearized UOps the C renderer sees, one scalar at a time.

It is the executable definition of the ops (ir/alu.py): slow, simple, and what the CPU device is
checked against. Memory is a Python list per buffer."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from unigrad.dtype import DType, dtypes
from unigrad.ir.alu import ALU_PY, bitcast, exec_alu, float_to_fp8, normalize
from unigrad.ir.args import AddrSpace
from unigrad.ir.ops import Ops
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
                else:
                    self.code.append(("buf", i, (), u.arg.slot))
            elif op in (Ops.AFTER, Ops.INDEX, Ops.LOAD, Ops.STORE):
                self.code.append((op.name.lower(), i, srcs, None))
            elif op in (Ops.STACK, Ops.SINK, Ops.GROUP):
                self.code.append(("nop", i, (), None))
            elif op is Ops.BITCAST:
                self.code.append(("alu", i, srcs, functools.partial(bitcast, src=u.src[0].dtype, dst=u.dtype)))
            else:
                self.code.append(("alu", i, srcs, _alu(op, u.dtype)))

    def __call__(self, bufs: list[Any], var_vals: dict[str, int]) -> None:
        mem = {slot: bufs[slot].handle for slot, _ in self.sig.buffers}  # unused buffers are not in the code
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
                    r[d] = lst[i]
            elif kind == "store":
                if len(s) < 3 or r[s[2]]:
                    lst, i = r[s[0]]
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
            pc += 1


class PythonDevice(Compiled):
    def build(self, lowered: Lowered) -> PythonProgram:
        """The program of a lowered kernel: an interpreter of its LINEAR (the source is only shown at DEBUG=4)."""
        return PythonProgram(lowered.name, lowered.linear, lowered.sig)


def open_device(name: str) -> Compiled:
    from unigrad.render.c import CLanguage

    # the PYTHON device renders C only to show it at DEBUG=4; it runs the LINEAR itself
    return PythonDevice(name, PythonAllocator(), CLanguage(), PythonCompiler(), PythonProgram)  # type: ignore[arg-type]
