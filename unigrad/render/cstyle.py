"""C-family rendering: LINEAR -> source, as tables of per-op templates plus a short walk.

In: LINEAR from linearize (kernel params are PARAM(GLOBAL) buffers, named PARAMs are Variables,
PARAM(REG) are accumulators). Out: the source of one function `name(data0, data1, ..., vars...)`.
A language subclass only changes the tables (types, prelude, function signature).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from unigrad.dtype import DType, dtypes
from unigrad.ir.args import AddrSpace, AxisType
from unigrad.ir.ops import GroupOp, Ops
from unigrad.ir.uop import UOp


@dataclass(frozen=True)
class KernelSignature:
    """What a rendered kernel takes: buffer slots in order, then Variable names in order."""

    name: str
    buffers: tuple[tuple[int, DType], ...]
    variables: tuple[str, ...]
    threads: int = 0  # > 0: the kernel takes a last argument `core` and runs once per core in [0, threads)


def _nonneg(u: UOp) -> bool:
    return u.vmin >= 0


class CStyleLanguage:
    types: dict[DType, str] = {}
    prelude: str = ""
    kernel_prefix: str = ""
    buffer_qualifier: str = ""
    float_funcs: dict[Ops, str] = {}
    # ops that isel rewrites to primitives before rendering (pipeline/isel.py); a language with native
    # transcendental functions may drop EXP2/LOG2/SIN/SQRT from its set and map them in float_funcs
    decompose: frozenset[Ops] = GroupOp.Decomposed

    def ctype(self, dt: DType) -> str:
        return self.types[dt]

    def render_const(self, v: object, dt: DType) -> str:
        if dt.is_bool:
            return "1" if v else "0"
        if dt.is_float:
            assert isinstance(v, float)
            if math.isnan(v):
                return "NAN"
            if math.isinf(v):
                return "INFINITY" if v > 0 else "(-INFINITY)"
            # repr of a value exactly representable in dt round-trips through C's parser (shortest, readable)
            text = repr(float(v)) + ("f" if dt is dtypes.float32 else "")
            return text if dt in (dtypes.float32, dtypes.float64) else f"(({self.ctype(dt)}){text})"
        if dt.is_unsigned:
            return f"{v}u" if dt.itemsize <= 4 else f"{v}ull"
        if dt.itemsize == 8 or dt is dtypes.index:
            return f"{v}ll" if v != -(2**63) else "(-9223372036854775807ll-1)"
        return str(v)

    def alu(self, u: UOp, a: list[str]) -> str:
        op, dt = u.op, u.dtype
        sdt = u.src[0].dtype
        binops: dict[Ops, str] = {
            Ops.ADD: "+",
            Ops.MUL: "*",
            Ops.CMPLT: "<",
            Ops.CMPNE: "!=",
            Ops.XOR: "^",
            Ops.OR: "|",
            Ops.AND: "&",
            Ops.SHR: ">>",
            Ops.SHL: "<<",
            Ops.SUB: "-",
            Ops.DIV: "/",
        }
        if op in binops:
            if sdt.is_bool and op in (Ops.ADD, Ops.MUL):
                return f"({a[0]}{'|' if op is Ops.ADD else '&'}{a[1]})"
            return f"({a[0]}{binops[op]}{a[1]})"
        if op is Ops.MAX:
            if sdt.is_float:
                return f"({a[0]}!={a[0]}||{a[0]}>{a[1]}?{a[0]}:{a[1]})"
            return f"({a[0]}>{a[1]}?{a[0]}:{a[1]})"
        if op in (Ops.IDIV, Ops.MOD):
            if sdt.is_float:
                return f"fl_{'div' if op is Ops.IDIV else 'mod'}({a[0]},{a[1]})"
            if sdt.is_unsigned or (_nonneg(u.src[0]) and _nonneg(u.src[1])):
                expr = f"({a[0]}{'/' if op is Ops.IDIV else '%'}{a[1]})"
                d = u.src[1]
                # x/0 traps in C: a divisor that may be 0 yields 0 there, as on the PYTHON device
                return expr if d.op is Ops.CONST and d.arg.value != 0 else f"({a[1]}?{expr}:0)"
            return f"fl_i{'div' if op is Ops.IDIV else 'mod'}({a[0]},{a[1]})"
        if op is Ops.WHERE:
            return f"({a[0]}?{a[1]}:{a[2]})"
        if op is Ops.NEG:
            return f"(!{a[0]})" if dt.is_bool else f"(-{a[0]})"
        if op is Ops.RECIP:
            return f"(({self.ctype(dt)})1/{a[0]})"
        if op is Ops.CAST:
            return f"(({self.ctype(dt)})({a[0]}))"
        if op is Ops.BITCAST:
            return f"bitcast_{u.src[0].dtype.name}_{dt.name}({a[0]})"
        if op in self.float_funcs:
            f = self.float_funcs[op]
            return f"{f}{'f' if dt is dtypes.float32 else ''}({a[0]})"
        if op is Ops.TRUNC:
            return a[0] if not dt.is_float else f"trunc{'f' if dt is dtypes.float32 else ''}({a[0]})"
        raise NotImplementedError(f"C renderer: no rule for {op} on {dt}")

    def signature(self, sig: KernelSignature) -> str:
        args = [f"{self.buffer_qualifier}{self.ctype(dt)}* restrict data{slot}" for slot, dt in sig.buffers] + [
            f"long long {v}" for v in sig.variables
        ]
        if sig.threads:
            args.append("long long core")
        return f"{self.kernel_prefix}void {sig.name}({', '.join(args)})"

    def render(self, name: str, linear: UOp) -> tuple[str, KernelSignature]:
        uops = linear.src
        buffers = sorted({(u.arg.slot, u.arg.dtype) for u in uops if _is_global(u)})
        variables = sorted({u.arg.name for u in uops if u.op is Ops.PARAM and u.arg.name is not None})
        threads = [u for u in uops if u.op is Ops.RANGE and u.arg.axis_type is AxisType.THREAD]
        if threads and threads[0].src[0].op is not Ops.CONST:
            raise ValueError(f"{name}: a THREAD range needs a constant size")
        sig = KernelSignature(name, tuple(buffers), tuple(variables), threads[0].src[0].arg.value if threads else 0)
        r: dict[UOp, str] = {}
        lines: list[str] = []
        depth = 1
        counter = 0

        def emit(line: str) -> None:
            lines.append("  " * depth + line)

        for u in uops:
            op = u.op
            if op is Ops.PARAM:
                if u.arg.name is not None:
                    r[u] = u.arg.name
                elif u.arg.addrspace is AddrSpace.REG:  # one scalar per slot: the compiler keeps them in registers
                    r[u] = f"acc{u.arg.slot}"
                    names = ", ".join(f"acc{u.arg.slot}_{j}" for j in range(u.shape[0]))
                    emit(f"{self.ctype(u.dtype)} {names};")
                else:
                    r[u] = f"data{u.arg.slot}"
            elif op is Ops.CONST:
                r[u] = self.render_const(u.arg.value, u.dtype)
            elif op in (Ops.STACK, Ops.GROUP):
                continue  # shapes of PARAMs, groups of stores: not code
            elif op is Ops.AFTER:
                r[u] = r[u.src[0]]
            elif op is Ops.INDEX:
                if _is_reg(u.src[0]):
                    if u.src[1].op is not Ops.CONST:
                        raise ValueError(f"{name}: a register accumulator is indexed by a constant, got {u.src[1].op}")
                    r[u] = f"{r[u.src[0]]}_{u.src[1].arg.value}"
                else:
                    r[u] = f"{r[u.src[0]]}[{r[u.src[1]]}]"
            elif op is Ops.RANGE:
                name_r = f"ridx{u.arg.id}"
                r[u] = name_r
                if u.arg.axis_type is AxisType.THREAD:  # not a loop: each worker runs one value, `core`
                    emit(f"{{ long long {name_r} = core;")
                else:
                    emit(f"for (long long {name_r} = 0; {name_r} < {r[u.src[0]]}; {name_r}++) {{")
                depth += 1
            elif op is Ops.END:
                depth -= 1
                emit("}")
            elif op is Ops.LOAD:
                counter += 1
                v = f"val{counter}"
                r[u] = v
                load = self.load(u, r[u.src[0]])
                if len(u.src) == 3:
                    load = f"({r[u.src[2]]}?{load}:{r[u.src[1]]})"
                emit(f"{self.ctype(u.dtype)} {v} = {load};")
            elif op is Ops.STORE:
                store = self.store(u, r[u.src[0]], r[u.src[1]])
                emit(f"if ({r[u.src[2]]}) {store}" if len(u.src) == 3 else store)
            elif op is Ops.SINK:
                continue
            else:
                counter += 1
                v = f"alu{counter}"
                r[u] = v
                emit(f"{self.ctype(u.dtype)} {v} = {self.alu(u, [r[s] for s in u.src])};")
        body = "\n".join(lines)
        src = f"{self.prelude}\n{self.signature(sig)} {{\n{body}\n}}\n"
        return (src + self.thread_entry(sig) if sig.threads else src), sig

    def thread_entry(self, sig: KernelSignature) -> str:
        """`name_entry(bufs, vars, core)`: the kernel behind one generic signature, for the worker pool."""
        args = [f"bufs[{i}]" for i in range(len(sig.buffers))]
        args += [f"vars[{i}]" for i in range(len(sig.variables))] + ["core"]
        return f"void {sig.name}_entry(void **bufs, long long *vars, long long core) {{ {sig.name}({', '.join(args)}); }}\n"

    # loads/stores of storage types that compute in another type (bfloat16) override these
    def load(self, u: UOp, target: str) -> str:
        return target

    def store(self, u: UOp, target: str, value: str) -> str:
        return f"{target} = {value};"


def _is_reg(u: UOp) -> bool:
    while u.op is Ops.AFTER:
        u = u.src[0]
    return u.op is Ops.PARAM and u.arg.addrspace is AddrSpace.REG


def _is_global(u: UOp) -> bool:
    return u.op is Ops.PARAM and u.arg.name is None and u.arg.addrspace is AddrSpace.GLOBAL
