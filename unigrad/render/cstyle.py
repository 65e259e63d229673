"""C-family rendering: LINEAR -> source, as tables of per-op templates plus a short walk.

In: LINEAR from linearize (kernel params are PARAM(GLOBAL) buffers, named PARAMs are Variables,
PARAM(REG) are accumulators). Out: the source of one function `name(data0, data1, ..., vars...)`.
A language subclass only changes the tables (types, prelude, function signature).

Vectors: a language with `vector_bytes` first runs isel's vector selection (pipeline/isel.vectorize) on the
kernel and renders its (k,)-shaped values as GCC/clang vector types (`__attribute__((vector_size))`, typedefs
`<dtype>_v<k>` per kernel): lane-wise ALU, contiguous loads/stores through the vector type (aligned where the
index is a multiple of k, the allocator's alignment permitting), bools as int masks of the compared width
(-1/0, as vector compares make them) and WHERE as a bit select. A REG accumulator with vector accesses is held
as k-lane vector variables `acc<slot>_v<i>` (slot j is lane j%k of `_v<j//k>`).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from unigrad.dtype import DType, dtypes
from unigrad.helpers import record
from unigrad.ir.args import AddrSpace, AxisType
from unigrad.ir.ops import GroupOp, Ops
from unigrad.ir.symbolic import simplify, split_terms
from unigrad.ir.uop import UOp
from unigrad.pipeline.isel import reg_param, vector_base, vectorize
from unigrad.pipeline.linearize import linearize


@record(frozen=True)
class KernelSignature:
    """What a rendered kernel takes: buffer slots in order, then Variable names in order."""

    name: str
    buffers: tuple[tuple[int, DType], ...]
    variables: tuple[str, ...]
    threads: int = 0  # > 0: the kernel takes a last argument `core` and runs once per core in [0, threads)
    # a GPU kernel's launch: work-groups per dimension and work-items per group (index UOps where symbolic: the
    # launch resolves them with the Variables' values; launch_dims does); () for a CPU kernel
    global_size: tuple[int | UOp, ...] = ()
    local_size: tuple[int | UOp, ...] = ()

    @property
    def gpu(self) -> bool:
        return bool(self.global_size)

    def launch_dims(self, var_vals: dict[str, int]) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """(groups, items per group), three dimensions each, with symbolic sizes resolved."""
        return _resolved(self.global_size, var_vals), _resolved(self.local_size, var_vals)


def _resolved(sizes: tuple[int | UOp, ...], var_vals: dict[str, int]) -> tuple[int, ...]:
    out = [s if isinstance(s, int) else _evaluate(s, var_vals) for s in sizes]
    return tuple(out + [1] * (3 - len(out)))


def _evaluate(expr: UOp, var_vals: dict[str, int]) -> int:
    """An index expression over Variables at their values."""
    params = {p: UOp.const(p.dtype, var_vals[p.arg.name]) for p in expr.toposort() if p.op is Ops.PARAM}
    value = simplify(expr.substitute(params))
    if value.op is not Ops.CONST:
        raise ValueError(f"a launch size {expr.render()} does not resolve to a number: {value.render()}")
    return int(value.arg.value)


def _nonneg(u: UOp) -> bool:
    return u.vmin >= 0


def _buffer_bytes(idx: UOp) -> int:
    """Bytes of the buffer an INDEX points into (0 for a symbolic size)."""
    size = idx.src[0].shape[0]
    return size * idx.dtype.itemsize if isinstance(size, int) else 0


def read_once(idx: UOp, loops: frozenset[UOp]) -> bool:
    """The INDEX idx changes with every loop of the kernel: no element it reads is read twice."""
    return loops <= {x for x in idx.src[1].toposort() if x.op is Ops.RANGE}


def _vec(u: UOp) -> bool:
    """A (k,)-shaped value, k >= 2 (PARAMs and the STACKs spelling their shapes have shapes too, but are no
    values: a kernel's shape STACKs are of one dim, (size,), or none, a Variable's ())."""
    if u.op not in GroupOp.ALU and u.op not in (Ops.LOAD, Ops.STACK, Ops.INDEX, Ops.BITCAST):
        return False
    return len(u.shape) == 1 and isinstance(u.shape[0], int) and u.shape[0] >= 2


def _mask_bytes(u: UOp) -> int:
    """The int width a bool vector is held in: the itemsize of the values compared (0: not a known mask)."""
    if u.op in (Ops.CMPLT, Ops.CMPNE) and not u.src[0].dtype.is_bool:
        return u.src[0].dtype.itemsize
    if u.op in (Ops.CMPNE, Ops.AND, Ops.OR, Ops.XOR):  # of masks: the widest (valu widens the others)
        widths = {_mask_bytes(s) for s in u.src if _vec(s)}
        return max(widths) if widths and 0 not in widths else 0
    return 0


def _multiple_of(u: UOp, k: int) -> bool:
    """u is a multiple of k for every value of its ranges (each term's coefficient and the constant are)."""
    terms, const = split_terms(u)
    return const % k == 0 and all(c % k == 0 for _, c in terms)


# dtypes the C vector extensions compute lane-wise exactly as the scalar code (no bool, half or bfloat16)
VECTOR_DTYPES = frozenset(
    {dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64, dtypes.uint8, dtypes.uint16, dtypes.uint32}
    | {dtypes.uint64, dtypes.float32, dtypes.float64, dtypes.index}
)
_INT_OF_SIZE = {1: dtypes.int8, 2: dtypes.int16, 4: dtypes.int32, 8: dtypes.int64}


def _num(u: UOp) -> bool:
    return u.dtype in VECTOR_DTYPES


def _bool_ok(u: UOp) -> bool:
    return u.dtype.is_bool and _mask_bytes(u) > 0


def _where_ok(u: UOp) -> bool:
    c = u.src[0]
    return _num(u) and (not _vec(c) or _mask_bytes(c) > 0)


def _divmod_ok(u: UOp) -> bool:
    d = u.src[1]
    nonneg = u.dtype.is_unsigned or (_nonneg(u.src[0]) and _nonneg(d))
    return _num(u) and u.dtype.is_int and nonneg and d.op is Ops.CONST and d.arg.value != 0


def _cast_ok(u: UOp) -> bool:
    return _num(u) and (_num(u.src[0]) or _bool_ok(u.src[0]))


# which (k,)-shaped ops the C vector extensions render, one predicate per op
VECTOR_OPS: dict[Ops, Callable[[UOp], bool]] = {
    Ops.LOAD: _num,
    Ops.STORE: lambda u: _num(u.src[1]),
    Ops.GROUP: lambda u: True,
    Ops.STACK: lambda u: _num(u) and all(s.op is Ops.CONST for s in u.src),  # a vector constant
    Ops.ADD: _num,
    Ops.MUL: _num,
    Ops.MAX: _num,
    Ops.RECIP: lambda u: u.dtype.is_float and _num(u),
    Ops.CMPLT: lambda u: _num(u.src[0]),
    Ops.CMPNE: lambda u: _num(u.src[0]) or _bool_ok(u),
    Ops.AND: lambda u: (_num(u) and u.dtype.is_int) or _bool_ok(u),
    Ops.OR: lambda u: (_num(u) and u.dtype.is_int) or _bool_ok(u),
    Ops.XOR: lambda u: (_num(u) and u.dtype.is_int) or _bool_ok(u),
    Ops.SHL: lambda u: _num(u) and u.dtype.is_int,
    Ops.SHR: lambda u: _num(u) and u.dtype.is_int,
    Ops.IDIV: _divmod_ok,
    Ops.MOD: _divmod_ok,
    Ops.WHERE: _where_ok,
    Ops.CAST: _cast_ok,
    Ops.BITCAST: lambda u: _num(u) and _num(u.src[0]) and u.dtype.itemsize == u.src[0].dtype.itemsize,
}


class CStyleLanguage:
    types: dict[DType, str] = {}
    prelude: str = ""
    kernel_prefix: str = ""
    buffer_qualifier: str = ""
    float_funcs: dict[Ops, str] = {}
    # ops that isel rewrites to primitives before rendering (pipeline/isel.py); a language with native
    # transcendental functions may drop EXP2/LOG2/SIN/SQRT from its set and map them in float_funcs
    decompose: frozenset[Ops] = GroupOp.Decomposed
    vector_bytes: int = 0  # the widest vector register (0: scalar code only); k lanes of a dtype fill it
    buffer_align: int = 0  # bytes every kernel buffer is aligned to (the device allocator's promise)
    # gated vector loads and stores (a PADTO'd axis's last vector): one vector access where every lane is in, lane
    # by lane where some lane is out (an out lane's address may lie past the buffer's end: it is never touched)
    masked_vectors: bool = False

    # the sum of every lane of a vector accumulator (split accumulators' final adds) as halving vector adds in a
    # helper, lane_sum_<type>: the same pairwise order as the scalar tree expand builds (bit for bit), in about a
    # third of the instructions (C only: its vector registers)
    lane_sums = False

    def ctype(self, dt: DType) -> str:
        return self.types[dt]

    # ---- vectors ----
    def lanes(self, dt: DType) -> int:
        """Lanes of a vector of dt (< 2: dt is not vectorized)."""
        return self.vector_bytes // dt.itemsize if self.vector_bytes and dt in VECTOR_DTYPES else 0

    def can_vector(self, u: UOp) -> bool:
        if u.op in (Ops.LOAD, Ops.STORE) and len(u.src) == 3:  # gated: a mask of the lanes, or one bool for all
            gate = u.src[2]
            if not self.masked_vectors or gate.op is Ops.IF or (_vec(gate) and _mask_bytes(gate) == 0):
                return False
        rule = VECTOR_OPS.get(u.op)
        return rule is not None and rule(u)

    def vtype(self, u: UOp) -> str:
        """The vector type name of a (k,)-shaped value: `<dtype>_v<k>`; bools are int masks."""
        dt = _INT_OF_SIZE[_mask_bytes(u)] if u.dtype.is_bool else u.dtype
        return f"{dt.name}_v{u.shape[0]}"

    def vector_typedefs(self, uops: tuple[UOp, ...]) -> str:
        """typedefs for every vector type the kernel uses: aligned `T` and element-aligned `T_u`."""
        defs = []
        for dt, k in vector_types(uops):
            name, size, el = f"{dt.name}_v{k}", dt.itemsize * k, self.ctype(dt)
            defs.append(f"typedef {el} {name} __attribute__((vector_size({size})));")
            defs.append(f"typedef {el} {name}_u __attribute__((vector_size({size}), aligned({dt.itemsize})));")
        return "\n".join(defs)

    def bcast(self, u: UOp, like: UOp, r: dict[UOp, str]) -> str:
        """u as a vector of like's type: itself if it is one, else k copies of the scalar."""
        if _vec(u):
            return r[u]
        if u.dtype.is_bool:  # a bool scalar as a mask
            return f"(({self.vtype(like)}){{}}-(int)({r[u]}))" if like.dtype.is_bool else r[u]
        return f"(({self.vtype(like)}){{{', '.join([r[u]] * like.shape[0])}}})"

    @staticmethod
    def scalar_mask(s: UOp, r: dict[UOp, str]) -> str:
        """A scalar bool beside vector masks: all ones (-1) or all zeros, which C broadcasts to every lane."""
        if s.op is Ops.CONST:
            return "-1" if s.arg.value else "0"
        return f"(-(int)({r[s]}))"

    def valu(self, u: UOp, r: dict[UOp, str]) -> str:
        """One (k,)-shaped ALU op (sources may be scalars: C broadcasts them in binary ops)."""
        op, dt, T = u.op, u.dtype, self.vtype(u)
        a = [r[s] if _vec(s) or not s.dtype.is_bool else self.scalar_mask(s, r) for s in u.src]
        if dt.is_bool and op in (Ops.CMPNE, Ops.AND, Ops.OR, Ops.XOR):  # masks of narrower values widened
            a = [self.mask_as(s, a[i], _mask_bytes(u)) for i, s in enumerate(u.src)]
        binops = {Ops.ADD: "+", Ops.MUL: "*", Ops.AND: "&", Ops.OR: "|", Ops.XOR: "^", Ops.SHL: "<<", Ops.SHR: ">>"}
        binops |= {Ops.IDIV: "/", Ops.MOD: "%"}
        if op in binops:
            return f"({a[0]}{binops[op]}{a[1]})"
        if op is Ops.CMPNE and u.src[0].dtype.is_bool:
            return f"({a[0]}^{a[1]})"
        if op in (Ops.CMPLT, Ops.CMPNE):
            return f"(({T})({a[0]}{'<' if op is Ops.CMPLT else '!='}{a[1]}))"
        if op is Ops.RECIP:
            return f"({self.render_const(1.0, dt)}/{a[0]})"
        if op is Ops.CAST:
            src = f"({a[0]}&1)" if u.src[0].dtype.is_bool else self.bcast(u.src[0], u, r)
            return f"__builtin_convertvector({src}, {T})"
        if op is Ops.BITCAST:
            return f"(({T})({a[0]}))"
        if op is Ops.MAX:
            x, y = self.bcast(u.src[0], u, r), self.bcast(u.src[1], u, r)
            mask = f"({x}!={x})|({x}>{y})" if dt.is_float else f"({x}>{y})"
            return self.select(T, mask, x, y, dt)
        if op is Ops.WHERE:
            x, y = self.bcast(u.src[1], u, r), self.bcast(u.src[2], u, r)
            if not _vec(u.src[0]):
                return f"({a[0]}?{x}:{y})"
            return self.select(T, self.mask_as(u.src[0], a[0], dt.itemsize), x, y, dt)
        raise NotImplementedError(f"C renderer: no vector rule for {op} on {dt}")

    @staticmethod
    def mask_as(s: UOp, rendered: str, width: int) -> str:
        """A vector mask s as a mask of `width`-byte lanes (all ones stays all ones); scalars as they are."""
        if not _vec(s) or not s.dtype.is_bool or _mask_bytes(s) == width:
            return rendered
        return f"__builtin_convertvector({rendered}, {_INT_OF_SIZE[width].name}_v{s.shape[0]})"

    def select(self, T: str, mask: str, x: str, y: str, dt: DType) -> str:
        """mask ? x : y lane-wise, as bits: (x & m) | (y & ~m) (C has no vector ?:)."""
        M = f"{_INT_OF_SIZE[dt.itemsize].name}_v{T.rsplit('_v', 1)[1]}"
        return f"(({T})((({M})({x})&({M})({mask}))|(({M})({y})&~({M})({mask}))))"

    def align(self, idx: UOp) -> str:
        """The type suffix of a vector access at idx: "" (aligned) where the base index is a multiple of the lanes
        and the buffer is aligned to a whole vector (its PARAM's align, else the allocator's), else "_u"."""
        base, k, buf = vector_base(idx.src[1]), idx.shape[0], idx.src[0]
        start = buf.arg.align if buf.op is Ops.PARAM and buf.arg.align else self.buffer_align  # a rebased slice's
        aligned = base is not None and start >= k * idx.dtype.itemsize and _multiple_of(base, k)
        return "" if aligned else "_u"

    # a target that streams large outputs past the caches overrides these (c.py: x86 non-temporal stores)
    stream_prefix: str = "\0"  # how a streaming store's line starts
    stream_prelude: str = ""  # declarations a kernel with streaming stores needs
    stream_fence: str = ""  # the statement ending such a kernel (orders the streamed stores before its return)

    def load_hint(self, u: UOp, ptr: str, buffer_bytes: int, once: bool) -> str:
        """A statement before the contiguous vector load u at ptr from a buffer_bytes buffer ("" for none); `once`:
        the kernel reads each of the load's elements once (its index uses every loop)."""
        return ""

    def store_vector(self, u: UOp, ptr: str, value: str, aligned: bool, buffer_bytes: int) -> str:
        """A contiguous vector store of value at ptr (aligned to a whole vector or not) into a buffer_bytes buffer."""
        return f"*({self.pointer_space}{self.vtype(u.src[0])}{'' if aligned else '_u'}*){ptr} = {value};"

    def lanewise_load(self, u: UOp, r: dict[UOp, str]) -> str:
        """A gated vector LOAD(INDEX, alt, gate) lane by lane: each lane's element where its gate is in, else alt."""
        ptr, alt, gate, k = r[u.src[0]], u.src[1], u.src[2], u.shape[0]
        if not _vec(gate):
            return self.bcast(alt, u, r)
        alts = [f"{r[alt]}[{i}]" if _vec(alt) else r[alt] for i in range(k)]
        lanes = ", ".join(f"{r[gate]}[{i}]?{self.load(u, f'{ptr}[{i}]')}:{alts[i]}" for i in range(k))
        return f"(({self.vtype(u)}){{{lanes}}})"

    def masked_store(self, u: UOp, r: dict[UOp, str], value: str, every: str) -> list[str]:
        """A gated vector STORE(INDEX, value, gate): one vector store where every lane is in, else each lane's
        element where its gate is in."""
        idx, gate = u.src[0], u.src[2]
        whole = CStyleLanguage.store_vector(self, u, r[idx], value, self.align(idx) == "", 0)  # (never streamed)
        if not _vec(gate):
            return [f"if ({every}) {whole}"]
        k, T = idx.shape[0], self.vtype(idx)
        lanes = " ".join(f"if ({r[gate]}[{i}]) {self.store(u, f'{r[idx]}[{i}]', f'lanes[{i}]')}" for i in range(k))
        return [f"if ({every}) {whole}", f"else {{ {T} lanes = {value}; {lanes} }}"]

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

    # a GPU dialect names these (render/opencl.py): the work-group id and the work-item's id in its group per
    # dimension (SPECIAL gidx<d>/lidx<d>), the barrier of a group's LOCAL memory, LOCAL arrays' qualifier
    special_funcs: dict[str, str] = {}
    barrier: str = ""
    local_qualifier: str = ""
    pointer_space: str = ""  # the address space of a vector access's pointer cast (OpenCL: __global)

    def special(self, name: str) -> str:
        """The expression of SPECIAL `name` (gidx0, lidx1, ...)."""
        if not self.special_funcs:
            raise NotImplementedError(f"{type(self).__name__} renders no GPU index {name}: a CPU kernel has none")
        return f"({self.ctype(dtypes.index)}){self.special_funcs[name[0]]}({name[-1]})"

    def signature(self, sig: KernelSignature) -> str:
        args = [f"{self.buffer_qualifier}{self.ctype(dt)}* restrict data{slot}" for slot, dt in sig.buffers] + [
            f"{self.ctype(dtypes.index)} {v}" for v in sig.variables
        ]
        if sig.threads:
            args.append("long long core")
        return f"{self.kernel_prefix}void {sig.name}({', '.join(args)})"

    def render(self, name: str, linear: UOp) -> tuple[str, KernelSignature]:
        if self.vector_bytes and linear.src and linear.src[-1].op is Ops.SINK:
            linear = linearize(vectorize(linear.src[-1], self.lanes, self.can_vector, self.masked_vectors))
        uops = linear.src
        # REG accumulators with vector accesses are held as vectors of that many lanes
        vec_regs: dict[UOp, int] = {}
        for u in uops:
            if u.op is Ops.INDEX and _vec(u) and (reg := reg_param(u.src[0])) is not None:
                vec_regs[reg] = u.shape[0]
        sums, summed = _lane_sums(uops, vec_regs) if self.lane_sums and vec_regs else ({}, set())
        batches = _sum_batches(uops, sums)
        batch_sums: dict[UOp, str] = {}  # a batch's first root -> the vector of its sums
        streamed = False
        loops = frozenset(u for u in uops if u.op is Ops.RANGE)
        # a vector index base + STACK(0..k-1) is only an address unless some op other than INDEX uses its value
        values = {s for u in uops if u.op is not Ops.INDEX for s in u.src}
        buffers = sorted({(u.arg.slot, u.arg.dtype) for u in uops if _is_global(u)})
        variables = sorted({u.arg.name for u in uops if u.op is Ops.PARAM and u.arg.name is not None})
        threads = [u for u in uops if u.op is Ops.RANGE and u.arg.axis_type is AxisType.THREAD]
        if threads and threads[0].src[0].op is not Ops.CONST:
            raise ValueError(f"{name}: a THREAD range needs a constant size")
        specials = {u.arg: _size_of(u.src[0]) for u in uops if u.op is Ops.SPECIAL}
        sig = KernelSignature(
            name,
            tuple(buffers),
            tuple(variables),
            threads[0].src[0].arg.value if threads else 0,
            _dims(specials, "g") if specials else (),
            _dims(specials, "l") if specials else (),
        )
        index_t = self.ctype(dtypes.index)
        r: dict[UOp, str] = {}
        lines: list[str] = []
        depth = 1
        counter = 0
        every: dict[UOp, str] = {}  # a vector gate -> the variable that says every lane of it is in

        def emit(line: str) -> None:
            lines.append("  " * depth + line)

        def all_in(gate: UOp) -> str:
            """`every lane of gate is in`: a scalar gate itself; a mask's lanes ANDed, once per gate."""
            nonlocal counter
            if not _vec(gate):
                return r[gate]
            if gate not in every:
                counter += 1
                every[gate] = f"every{counter}"
                x, bounds = gate.src if gate.op is Ops.CMPLT else (None, None)
                if (
                    x is not None
                    and not _vec(x)
                    and bounds.op is Ops.STACK
                    and all(b.op is Ops.CONST for b in bounds.src)
                ):
                    # a padded axis's gate x < (c_0, ..., c_k-1): every lane is in where x is below the least bound
                    least = self.render_const(min(b.arg.value for b in bounds.src), x.dtype)
                    emit(f"int every{counter} = {r[x]}<{least};")
                else:
                    lanes = "&".join(f"{r[gate]}[{i}]" for i in range(gate.shape[0]))
                    emit(f"int every{counter} = ({lanes})!=0;")
            return every[gate]

        # a vector gate's `every` is defined right after the gate, in its scope: a gate outside a reduce loop gates
        # loads inside it and stores after it
        gates = {u.src[2] for u in uops if u.op in (Ops.LOAD, Ops.STORE) and len(u.src) == 3 and _vec(u.src[2])}
        prev: UOp | None = None
        for u in uops:
            if prev in gates:
                all_in(prev)
            prev = u
            op = u.op
            if u in summed:  # a lane read or a partial sum of a lane_sum below: computed by its helper
                continue
            if u in sums:
                reg, first, k = sums[u]
                counter += 1
                r[u] = v = f"alu{counter}"
                if (batch := batches.get(u)) is None:
                    emit(f"{self.ctype(u.dtype)} {v} = lane_sum_{u.dtype.name}_v{k}({r[reg]}_v{first // k});")
                    continue
                roots, i = batch
                if i == 0:  # the whole batch's sums at its first root, one lane each
                    batch_sums[u] = f"sums{counter}"
                    regs = ", ".join(f"{r[sums[x][0]]}_v{sums[x][1] // k}" for x in roots)
                    name, g = u.dtype.name, len(roots)
                    emit(f"{name}_x{g} sums{counter} = lane_sums_{name}_v{k}_x{g}({regs});")
                emit(f"{self.ctype(u.dtype)} {v} = {batch_sums[roots[0]]}[{i}];")
                continue
            if op is Ops.PARAM:
                if u.arg.name is not None:
                    r[u] = u.arg.name
                elif u.arg.addrspace is AddrSpace.REG and u in vec_regs:  # k-lane vectors of slots
                    k = vec_regs[u]
                    r[u] = f"acc{u.arg.slot}"
                    names = ", ".join(f"acc{u.arg.slot}_v{j}" for j in range(u.shape[0] // k))
                    emit(f"{u.dtype.name}_v{k} {names};")
                elif u.arg.addrspace is AddrSpace.LOCAL:  # an array shared by the work-items of a group
                    r[u] = f"temp{u.arg.slot}"
                    emit(f"{self.local_qualifier}{self.ctype(u.dtype)} temp{u.arg.slot}[{u.shape[0]}];")
                elif u.arg.addrspace is AddrSpace.REG:  # one scalar per slot: the compiler keeps them in registers
                    r[u] = f"acc{u.arg.slot}"
                    names = ", ".join(f"acc{u.arg.slot}_{j}" for j in range(u.shape[0]))
                    emit(f"{self.ctype(u.dtype)} {names};")
                else:
                    r[u] = f"data{u.arg.slot}"
            elif op is Ops.CONST:
                r[u] = self.render_const(u.arg.value, u.dtype)
            elif op is Ops.STACK and _vec(u) and all(x.op is Ops.CONST for x in u.src):  # a vector constant
                r[u] = f"(({self.vtype(u)}){{{', '.join(self.render_const(x.arg.value, x.dtype) for x in u.src)}}})"
            elif op in (Ops.STACK, Ops.GROUP):
                continue  # shapes of PARAMs, groups of stores: not code
            elif op is Ops.AFTER:
                r[u] = r[u.src[0]]
            elif op is Ops.INDEX and _vec(u):  # k contiguous elements from the base index
                base = vector_base(u.src[1])
                assert base is not None, f"{name}: a vector INDEX is base + STACK(0..k-1)"
                if (reg := reg_param(u.src[0])) is not None:
                    r[u] = f"{r[reg]}_v{base.arg.value // vec_regs[reg]}"
                else:
                    r[u] = f"({r[u.src[0]]}+{r[base]})"
            elif op is Ops.INDEX and (reg := reg_param(u.src[0])) in vec_regs:  # one lane of a vector register
                k = vec_regs[reg]  # type: ignore[index]
                j = u.src[1].arg.value
                r[u] = f"{r[u.src[0]]}_v{j // k}[{j % k}]"
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
                    emit(f"{{ {index_t} {name_r} = core;")
                else:
                    emit(f"for ({index_t} {name_r} = 0; {name_r} < {r[u.src[0]]}; {name_r}++) {{")
                depth += 1
            elif op is Ops.SPECIAL:
                r[u] = u.arg
                emit(f"{index_t} {u.arg} = {self.special(u.arg)};")
            elif op is Ops.BARRIER:
                emit(self.barrier)
            elif op is Ops.IF:
                emit(f"if ({r[u.src[0]]}) {{")
                depth += 1
            elif op is Ops.ENDIF:
                depth -= 1
                emit("}")
            elif op is Ops.END:
                depth -= 1
                emit("}")
            elif op is Ops.LOAD and _vec(u):
                counter += 1
                r[u] = v = f"val{counter}"
                idx = u.src[0]
                if _is_reg(idx.src[0]):
                    load = r[idx]
                else:
                    load = f"*({self.pointer_space}{self.vtype(u)}{self.align(idx)}*){r[idx]}"
                    if len(u.src) == 3:  # gated: the vector where every lane is in, else lane by lane
                        load = f"({all_in(u.src[2])}?{load}:{self.lanewise_load(u, r)})"
                    elif hint := self.load_hint(u, r[idx], _buffer_bytes(idx), read_once(idx, loops)):
                        emit(hint)
                emit(f"{self.vtype(u)} {v} = {load};")
            elif op is Ops.STORE and _vec(u.src[0]):
                idx, value = u.src[0], self.bcast(u.src[1], u.src[0], r)
                if _is_reg(idx.src[0]):
                    emit(f"{r[idx]} = {value};")
                elif len(u.src) == 3:  # gated: the vector where every lane is in, else each lane that is
                    for line in self.masked_store(u, r, value, all_in(u.src[2])):
                        emit(line)
                else:
                    store = self.store_vector(u, r[idx], value, self.align(idx) == "", _buffer_bytes(idx))
                    streamed = streamed or store.startswith(self.stream_prefix)
                    emit(store)
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
                gated = len(u.src) == 3 and u.src[2].op is not Ops.IF  # a store in an IF block is already inside it
                emit(f"if ({r[u.src[2]]}) {store}" if gated else store)
            elif op is Ops.SINK:
                continue
            elif _vec(u) and u not in values and vector_base(u) is not None:
                continue
            elif op is Ops.WMMA:  # a tensor core's D fragment: an array the dialect's instruction fills
                counter += 1
                r[u] = v = f"wmma{counter}"
                for line in self.wmma(u, v, r):
                    emit(line)
            elif _vec(u):
                counter += 1
                r[u] = v = f"alu{counter}"
                emit(f"{self.vtype(u)} {v} = {self.valu(u, r)};")
            else:
                counter += 1
                v = f"alu{counter}"
                r[u] = v
                emit(f"{self.ctype(u.dtype)} {v} = {self.alu(u, [r[s] for s in u.src])};")
        if streamed:
            lines.append("  " + self.stream_fence)
        body = "\n".join(lines)
        sum_types = sorted(
            {(u.dtype, k) for u, (_, _, k) in sums.items() if u not in batches}, key=lambda t: (t[0].name, t[1])
        )
        parts = (self.prelude, self.helpers(body), self.stream_prelude if streamed else "", self.vector_typedefs(uops))
        parts += tuple(_lane_sum_helper(self.ctype(dt), dt.name, k) for dt, k in sum_types)
        batch_types = sorted(
            {(x.dtype, sums[x][2], len(b)) for x, (b, _) in batches.items()}, key=lambda t: (t[0].name, *t[1:])
        )
        parts += tuple(_lane_sums_helper(self.ctype(dt), dt.name, k, g) for dt, k, g in batch_types)
        prelude = "\n".join(p for p in parts if p)
        src = f"{prelude}\n{self.signature(sig)} {{\n{body}\n}}\n"
        return (src + self.thread_entry(sig) if sig.threads else src), sig

    def helpers(self, body: str) -> str:
        """Definitions of the helper functions `body` calls that the prelude does not hold (default: none)."""
        return ""

    def wmma(self, u: UOp, name: str, r: dict[UOp, str]) -> list[str]:
        """The lines computing WMMA u's D fragment into array `name` (a dialect with tensor cores: render/cuda.py)."""
        raise NotImplementedError(f"{type(self).__name__} has no tensor cores: a WMMA does not render")

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


def _lane_of(x: UOp, vec_regs: dict[UOp, int]) -> tuple[UOp, int, int] | None:
    """A scalar LOAD of one lane of a vector register: (the register as indexed, its slot, the register's lanes)."""
    if x.op is not Ops.LOAD or len(x.src) != 1 or x.src[0].op is not Ops.INDEX or _vec(x.src[0]):
        return None
    idx = x.src[0]
    reg = reg_param(idx.src[0])
    if reg is None or reg not in vec_regs or idx.src[1].op is not Ops.CONST:
        return None
    return idx.src[0], idx.src[1].arg.value, vec_regs[reg]


def _lane_sums(uops: tuple[UOp, ...], vec_regs: dict[UOp, int]) -> tuple[dict[UOp, tuple[UOp, int, int]], set[UOp]]:
    """The float ADD trees that sum every lane of one vector register in expand's pairwise order (lanes j..j+k-1 of
    a k-lane register, k a power of two), whose lane reads and partial sums nothing else uses, and with no write to
    the register between its first lane read and the root: root -> (register, first slot, k); and the nodes the
    roots' helper computes instead (skipped when rendered)."""
    users: dict[UOp, int] = {}
    for u in uops:
        for s in u.src:
            users[s] = users.get(s, 0) + 1
    pos = {u: i for i, u in enumerate(uops)}
    sums: dict[UOp, tuple[UOp, int, int]] = {}
    summed: set[UOp] = set()
    for u in uops:
        if u.op is not Ops.ADD or _vec(u) or u.dtype not in (dtypes.float32, dtypes.float64):
            continue
        x, depth = u, 0
        while x.op is Ops.ADD and not _vec(x):
            x, depth = x.src[0], depth + 1
        lane = _lane_of(x, vec_regs)
        if lane is None or lane[2] != 1 << depth or lane[2] < 4 or lane[1] % lane[2]:
            continue
        reg, first, k = lane
        level, inner = [u], []
        for _ in range(depth):
            if any(n.op is not Ops.ADD or _vec(n) for n in level):
                break
            inner += level
            level = [s for n in level for s in n.src]
        else:
            if [_lane_of(leaf, vec_regs) for leaf in level] != [(reg, first + i, k) for i in range(k)]:
                continue
            if any(users.get(n, 0) != 1 for n in inner[1:] + level):
                continue
            written = reg_param(reg)
            start = min(pos[leaf] for leaf in level)
            if any(_stored_register(w) is written for w in uops[start : pos[u]]):
                continue
            sums[u] = lane
            summed.update(inner[1:] + level)
    return sums, summed


def _stored_register(u: UOp) -> UOp | None:
    """The REG accumulator a STORE writes, or None (not a store, or one to memory)."""
    return reg_param(u.src[0].src[0]) if u.op is Ops.STORE and u.src[0].op is Ops.INDEX else None


# ops a batch of lane sums is not computed across: loops, branches, barriers (a register's value may change there)
_BATCH_ENDS = frozenset({Ops.RANGE, Ops.END, Ops.IF, Ops.ENDIF, Ops.BARRIER})


def _sum_batches(
    uops: tuple[UOp, ...], sums: dict[UOp, tuple[UOp, int, int]]
) -> dict[UOp, tuple[tuple[UOp, ...], int]]:
    """Lane sums computed together (a register tile's accumulators summed after its reduce loop): runs of lane_sum
    roots of one dtype and width k with no loop, branch or write to a register between the first and the last, cut
    into batches of a power of two roots, at most k: root -> (its batch's roots, its place in the batch). A batch's
    sums are one vector (lane i: root i's sum), all computed at its first root: the registers hold their final values
    there (_lane_sums checked each root's reads against writes, and the run has none)."""
    out: dict[UOp, tuple[tuple[UOp, ...], int]] = {}
    run: list[UOp] = []

    def close() -> None:
        i = 0
        while len(run) - i >= 2:
            g = min(sums[run[i]][2], 1 << ((len(run) - i).bit_length() - 1))
            batch = tuple(run[i : i + g])
            out.update((x, (batch, j)) for j, x in enumerate(batch))
            i += g
        run.clear()

    for u in uops:
        if u in sums:
            if run and (u.dtype is not run[0].dtype or sums[u][2] != sums[run[0]][2]):
                close()
            run.append(u)
        elif u.op in _BATCH_ENDS or _stored_register(u) is not None:
            close()
    close()
    return out


def _lane_sums_helper(ctype: str, name: str, k: int, g: int) -> str:
    """lane_sums_<name>_v<k>_x<g>(a0, ..., a<g-1>): the lane sums of g k-lane vectors (g a power of two, at most k)
    as one g-lane vector (<name>_x<g>), lane i the sum of a<i>. Pairs of vectors are halved together (the even lanes
    of both plus their odd lanes: one vector holding both's pair sums), then pairs of those, and the last vector's own
    halves until each sum is one lane: lane_sum's pairwise order for every vector, bit for bit, in about a third of
    its instructions for a 4 x 4 tile (15 vector adds for 16 sums where lane_sum takes 4 each, and shorter chains)."""
    vt, out = f"{name}_v{k}", f"{name}_x{g}"
    lines = [
        f"typedef {ctype} {out} __attribute__((vector_size({g} * sizeof({ctype}))));",
        f"static inline {out} lane_sums_{vt}_x{g}({', '.join(f'{vt} a{i}' for i in range(g))}) {{",
    ]

    def halves(a: str, b: str, width: int, parity: int) -> str:
        return ", ".join(
            [f"{a}[{i}]" for i in range(parity, width, 2)] + [f"{b}[{i}]" for i in range(parity, width, 2)]
        )

    cur, n = [f"a{i}" for i in range(g)], 0
    while len(cur) > 1:  # pairs of vectors: each one's partial sums halve, side by side in one vector
        nxt = []
        for a, b in zip(cur[::2], cur[1::2]):
            n += 1
            lines.append(f"  {vt} p{n} = ({vt}){{{halves(a, b, k, 0)}}} + ({vt}){{{halves(a, b, k, 1)}}};")
            nxt.append(f"p{n}")
        cur = nxt
    v = _halved(lines, ctype, cur[0], k, g)  # one vector of g sums' partials: its own halves
    lines.append(f"  return {v};")
    return "\n".join(lines) + "\n}"


def _halved(lines: list[str], ctype: str, v: str, width: int, down_to: int) -> str:
    """Append the lines halving vector `v` of `width` lanes (its even lanes plus its odd lanes, each half a vector of
    its own type) until `down_to` lanes are left; the last vector's name."""
    while width > down_to:
        half = width // 2
        lines.append(f"  typedef {ctype} h{half} __attribute__((vector_size({half} * sizeof({ctype}))));")
        even = ", ".join(f"{v}[{i}]" for i in range(0, width, 2))
        odd = ", ".join(f"{v}[{i}]" for i in range(1, width, 2))
        lines.append(f"  h{half} s{half} = (h{half}){{{even}}} + (h{half}){{{odd}}};")
        v, width = f"s{half}", half
    return v


def _lane_sum_helper(ctype: str, name: str, k: int) -> str:
    """lane_sum_<name>_v<k>(v): the sum of v's k lanes as halving adds of its even and odd lanes (v[0]+v[1],
    v[2]+v[3], ... then pairs of those: the order of expand's pairwise tree), each half a vector of its own type."""
    lines = [f"static inline {ctype} lane_sum_{name}_v{k}({name}_v{k} v) {{"]
    cur = _halved(lines, ctype, "v", k, 2)
    lines.append(f"  return {cur}[0] + {cur}[1];")
    return "\n".join(lines) + "\n}"


def vector_types(uops: tuple[UOp, ...]) -> list[tuple[DType, int]]:
    """(element dtype, lanes) of every vector type a kernel's values use, and of their masks (selects), sorted; a
    bool vector is a mask of the compared values' width. A WMMA's fragments (STACKs of values) are no vector type."""
    used: set[tuple[DType, int]] = set()
    for u in uops:
        if _vec(u) and (u.op is not Ops.STACK or all(x.op is Ops.CONST for x in u.src)):
            dt = _INT_OF_SIZE[_mask_bytes(u)] if u.dtype.is_bool else u.dtype
            used |= {(dt, u.shape[0]), (_INT_OF_SIZE[dt.itemsize], u.shape[0])}
    return sorted(used, key=lambda x: (x[0].name, x[1]))


def _size_of(bound: UOp) -> int | UOp:
    return bound.arg.value if bound.op is Ops.CONST else bound


def _dims(specials: dict[str, int | UOp], kind: str) -> tuple[int | UOp, ...]:
    """Sizes of the SPECIALs gidx0.. (kind "g") or lidx0.. (kind "l") in dimension order; 1 where one is missing."""
    n = max((int(name[-1]) + 1 for name in specials if name[0] == kind), default=0)
    return tuple(specials.get(f"{kind}idx{d}", 1) for d in range(max(n, 1)))


def _is_reg(u: UOp) -> bool:
    while u.op is Ops.AFTER:
        u = u.src[0]
    return u.op is Ops.PARAM and u.arg.addrspace is AddrSpace.REG


def _is_global(u: UOp) -> bool:
    return u.op is Ops.PARAM and u.arg.name is None and u.arg.addrspace is AddrSpace.GLOBAL
