"""Isel (instruction selection): the spec's decomposed ops become the primitives the target renders.

In: a kernel SINK after expand (scalar ALU on RANGEs, LOAD/STORE on INDEXes, register accumulators) and the
set of ops the target wants decomposed (its renderer's `decompose`, e.g. CLanguage.decompose).
Out: the same kernel where no op of that set remains. Each is rewritten into primitives: ADD, MUL, MAX, CMPLT,
CMPNE, WHERE, CAST, BITCAST, SHL, SHR, AND, OR, XOR, IDIV/MOD on ints, TRUNC, RECIP. A rule may build another
decomposed op (POW -> EXP2 and LOG2, a float16 EXP2 -> a float32 EXP2): the rewrite runs to a fixed point, so
those are decomposed in turn when they are in the set and left to the renderer when they are not.
After: `ir/spec.verify_selected` holds (no op of the set remains); RANGE/END, LOAD/STORE and the accumulators are
untouched, so what linearize and verify_linear need is unchanged.

Fused multiply-add: a target that keeps MULACC (C: fmaf/fma) gets each float32/float64 accumulation
STORE(acc, acc + a*b) as STORE(acc, MULACC(a, b, acc)), rounded once (ir/alu.fma is its definition).

Laws: the simple ops follow the spec's table, except CMPGE/CMPLE on floats, which must be false on nan (the
spec's CMPNE(CMPLT(a, b), 1) is true there): a >= b is (b < a) | (a == b). The transcendental rules
(decomp/transcendental.py) and THREEFRY (decomp/threefry.py) say their methods, accuracy and special cases.

Vector selection (`vectorize`, run by a renderer with vector types, e.g. the C renderer):
In: a kernel SINK after isel, where expand left the lanes of an UPCAST/UNROLL range as the sources of a GROUP
(the copies of an upcast body, the updates of split accumulators) or of an AFTER (accumulator inits), lane i
at position i. Out: the same kernel where each run of `lanes(dtype)` such lane copies that differ only in
their lane became one op on (k,)-shaped values (the spec's "(k,)-shaped index makes it k"):
    STORE(INDEX(buf, i_0 + STACK(0..k-1)), v)       k contiguous elements from i_0: a vector store
    LOAD(INDEX(buf, i_0 + STACK(0..k-1)))           a vector load; ALU on (k,) values is lane-wise
    a value equal in every lane stays scalar (shape (), broadcast by its users); CONSTs that differ are a STACK
Every lane computes the same ops in the same order as its scalar copy, so the results are bit-identical. A run
that does not match (a gather, an op the target cannot vectorize: `can_vector`) stays scalar; so does a gated
access, unless the target renders masked vectors (`masked`: C's LOAD(INDEX, alt, (k,) gate) is one vector load
where every lane is in and a lane-wise one where not, so a PADTO'd odd-sized axis runs as vectors).
A WMMA (tensor cores) is chosen by the TC opt and made of fragments by expand; isel leaves it as it is.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from unigrad.dtype import DType, dtypes
from unigrad.ir.args import AddrSpace
from unigrad.ir.ops import Ops
from unigrad.ir.pattern import PatternMatcher, Rule, UPat, graph_rewrite
from unigrad.ir.symbolic import build_sum, split_terms
from unigrad.ir.uop import UOp
from unigrad.pipeline.decomp.numerics import const, neg, recip
from unigrad.pipeline.decomp.threefry import threefry
from unigrad.pipeline.decomp.transcendental import exp2, log2, pow_, sin, sqrt

FLOATS = frozenset(dtypes.floats)
INTS = frozenset(dt for dt in dtypes.all() if dt.is_int)


def neg_(u: UOp) -> UOp:
    (x,) = u.src
    return x.ne(True) if x.dtype is dtypes.bool else neg(x)


def sub_(u: UOp) -> UOp:
    a, b = u.src
    return a ^ b if a.dtype is dtypes.bool else a + neg(b)


def int_div(u: UOp) -> UOp:
    """Truncating int division from IDIV (floor): one more where a nonzero remainder had a negative quotient."""
    a, b = u.src
    q = UOp(Ops.IDIV, (a, b))
    round_up = (q * b).ne(a) & (a < 0).ne(b < 0)
    return round_up.where(q + 1, q)


def cmpge(u: UOp) -> UOp:
    a, b = u.src
    if a.dtype.is_float:
        return (b < a) | a.eq(b)
    return (a < b).ne(True)


def not_(u: UOp) -> UOp:
    (x,) = u.src
    return x.ne(True) if x.dtype is dtypes.bool else x.ne(0).where(const(x, 0), const(x, 1))


A, B = UPat.var("a"), UPat.var("b")


def unfused_mulacc(u: UOp) -> UOp:
    a, b, c = u.src
    return a * b + c


# one rule per decomposed op (two for DIV); isel keeps those whose op is in the target's set
ISEL_RULES: list[Rule] = [
    (UPat(Ops.NEG, name="u"), neg_),  # -x -> x * -1 (bool: not x -> x != True)
    (UPat(Ops.SUB, name="u"), sub_),  # a - b -> a + b*-1 (bool: a ^ b)
    (UPat(Ops.DIV, src=(A, B), dtype=FLOATS), lambda a, b: a * recip(b)),  # a / b -> a * (1/b)
    (UPat(Ops.DIV, name="u", dtype=INTS), int_div),  # a / b on ints truncates: floor, +1 if rounded down below 0
    (UPat(Ops.CMPGT, src=(A, B)), lambda a, b: b < a),  # a > b -> b < a
    (UPat(Ops.CMPGE, name="u"), cmpge),  # a >= b -> (a < b) != 1; floats: (b < a) | (a == b), false on nan
    (UPat(Ops.CMPLE, src=(A, B)), lambda a, b: UOp(Ops.CMPGE, (b, a))),  # a <= b -> b >= a
    (UPat(Ops.CMPEQ, src=(A, B)), lambda a, b: a.eq(b)),  # a == b -> (a != b) != 1
    (UPat(Ops.NOT, name="u"), not_),  # not x -> x != 1 (ints: x != 0 ? 0 : 1)
    (UPat(Ops.MULACC, name="u"), unfused_mulacc),  # mulacc(a, b, c) -> a*b + c
    (UPat(Ops.EXP2, name="u", dtype=FLOATS), exp2),  # 2^x = 2^n * 2^f: exponent field * Taylor polynomial
    (UPat(Ops.LOG2, name="u", dtype=FLOATS), log2),  # log2(2^e * m) = e + ln(m)*log2(e): bits + atanh series
    (UPat(Ops.SIN, name="u", dtype=FLOATS), sin),  # sin(q*pi/2 + r): Cody-Waite r, sin/cos polynomial by q mod 4
    (UPat(Ops.SQRT, name="u", dtype=FLOATS), sqrt),  # sqrt(x) = x * rsqrt(x): bit-trick guess + Newton
    (UPat(Ops.POW, name="u"), pow_),  # a^b -> EXP2(LOG2(|a|) * b) + torch's special cases (ints: by squaring)
    (UPat(Ops.THREEFRY, name="u"), threefry),  # Threefry-2x32-20: 20 rounds of add-rotate-xor on uint32 words
]


@functools.lru_cache(maxsize=16)
def isel_matcher(decompose: frozenset[Ops]) -> PatternMatcher:
    rules = [(pat, fn) for pat, fn in ISEL_RULES if pat.op is not None and pat.op <= decompose]
    return PatternMatcher(rules, name="pm_isel")


def isel(sink: UOp, decompose: frozenset[Ops]) -> UOp:
    """Kernel SINK after expand -> the same kernel with every op of `decompose` rewritten into primitives, and,
    when the target keeps MULACC (it is not in `decompose`), each float accumulation acc + a*b fused into one."""
    if decompose and any(u.op in decompose for u in sink.toposort()):
        sink = graph_rewrite(sink, isel_matcher(frozenset(decompose)))
    if Ops.MULACC not in decompose:
        sink = graph_rewrite(sink, pm_fuse_mulacc)
    return sink


# ---------------------------------------------------------------- fused multiply-add

FMA_DTYPES = frozenset({dtypes.float32, dtypes.float64})  # the dtypes with a correctly rounded fma (C's fmaf/fma)


def fuse_accumulate(st: UOp) -> UOp | None:
    """STORE(acc, acc + a*b) into a register accumulator -> STORE(acc, MULACC(a, b, acc)): a reduction of products
    (matmul, convolution) rounds once per step, in one instruction. Only accumulations are fused here: elsewhere
    the decompositions' products (split constants, range reductions) are meant to round on their own, and their
    polynomials are built of MULACC already (numerics.horner)."""
    idx, val = st.src[0], st.src[1]
    if val.op is not Ops.ADD or val.dtype not in FMA_DTYPES or idx.op is not Ops.INDEX or reg_param(idx.src[0]) is None:
        return None
    for m, acc in ((val.src[1], val.src[0]), (val.src[0], val.src[1])):
        if m.op is Ops.MUL:
            return st.replace(src=(idx, UOp(Ops.MULACC, (m.src[0], m.src[1], acc)), *st.src[2:]))
    return None


pm_fuse_mulacc = PatternMatcher(
    [
        (UPat(Ops.STORE, name="st"), fuse_accumulate),
        # a target that keeps MULACC still gets a*b + c where the dtype has no correctly rounded fma
        (UPat(Ops.MULACC, name="u"), lambda u: unfused_mulacc(u) if u.dtype not in FMA_DTYPES else None),
    ],
    name="pm_fuse_mulacc",
)


# ---------------------------------------------------------------- vector selection


def iota(k: int) -> UOp:
    """STACK(0, 1, ..., k-1): the lane offsets of a contiguous vector access."""
    return UOp(Ops.STACK, tuple(UOp.index_const(i) for i in range(k)))


def lane_offset(idx: UOp, base: UOp) -> int | None:
    """idx - base when it is a constant (both int sums over the same terms), else None."""
    if idx is base:
        return 0
    (ta, ca), (tb, cb) = split_terms(idx), split_terms(base)
    return ca - cb if ta == tb else None


def vector_base(idx: UOp) -> UOp | None:
    """i_0 of a vector index i_0 + STACK(0..k-1); None for a scalar index."""
    if idx.op is Ops.ADD and idx.src[1].op is Ops.STACK and idx.shape != ():
        return idx.src[0]
    return None


def reg_param(u: UOp) -> UOp | None:
    """The REG accumulator PARAM under AFTERs, or None."""
    while u.op is Ops.AFTER:
        u = u.src[0]
    return u if u.op is Ops.PARAM and u.arg.addrspace is AddrSpace.REG else None


class Vectorizer:
    """Unifies k lane copies into one (k,)-shaped op (memoized per tuple of lanes); None where they differ."""

    def __init__(self, can_vector: Callable[[UOp], bool], lanes: Callable[[DType], int], masked: bool = False):
        self.can_vector, self.lanes, self.masked = can_vector, lanes, masked
        self.memo: dict[tuple[UOp, ...], UOp | None] = {}

    def unify(self, lanes: tuple[UOp, ...]) -> UOp | None:
        if lanes not in self.memo:
            self.memo[lanes] = self._unify(lanes)
        return self.memo[lanes]

    def _unify(self, lanes: tuple[UOp, ...]) -> UOp | None:
        first = lanes[0]
        if all(x is first for x in lanes):
            return first  # the same in every lane: a scalar, broadcast by its users
        op = first.op
        if op is Ops.CONST and all(x.op is Ops.CONST and x.dtype is first.dtype for x in lanes):
            return UOp(Ops.STACK, lanes) if self.can_vector(UOp(Ops.STACK, lanes)) else None
        if (first.dtype in INTS or first.dtype is dtypes.index) and (offset := self._offsets(lanes)) is not None:
            return offset
        if any(x.op is not op or x.arg != first.arg or len(x.src) != len(first.src) for x in lanes):
            if not self.masked:
                return None
            if first.dtype is not dtypes.bool:
                return self._regated(lanes)
            return self._bounds(lanes) or self._conjunction(lanes)
        if op is Ops.INDEX:
            return self._index(lanes)
        srcs = [self.unify(tuple(x.src[i] for x in lanes)) for i in range(len(first.src))]
        if any(s is None for s in srcs):
            return None
        out = UOp(op, tuple(srcs), first.arg, first.tag)  # type: ignore[arg-type]
        if op is Ops.GROUP:
            return out
        if op is Ops.LOAD or op is Ops.STORE:
            idx = out.src[0]
            if idx.op is not Ops.INDEX or vector_base(idx.src[1]) is None:
                return None  # a scalar address in every lane: stays scalar
            if len(out.src) != (op is Ops.STORE) + 1 and not self.masked:
                return None  # a gate, which the target does not vectorize: stays scalar
        return out if self.can_vector(out) else None

    def _bounds(self, lanes: tuple[UOp, ...]) -> UOp | None:
        """A padded axis's gate: lanes x < c_i that simplify made of (x*k + i) < n, where a lane that always holds
        (or never does) became a constant -> x < STACK(c_i), the constant lane's bound past x's range (or at its
        start); None for other lanes."""
        bounded = [x for x in lanes if x.op is Ops.CMPLT and x.src[1].op is Ops.CONST]
        if not bounded or any(x.src[0] is not bounded[0].src[0] for x in bounded):
            return None
        x = bounded[0].src[0]
        if not isinstance(x.vmin, int) or not isinstance(x.vmax, int):
            return None
        out = []
        for lane in lanes:
            if lane.op is Ops.CONST:
                lane = x < UOp.const(x.dtype, x.vmax + 1 if lane.arg.value else x.vmin)
            elif lane.op is not Ops.CMPLT or lane.src[0] is not x or lane.src[1].op is not Ops.CONST:
                return None
            out.append(lane)
        return self.unify(tuple(out))

    def _conjunction(self, lanes: tuple[UOp, ...]) -> UOp | None:
        """The gate of two padded axes, AND(row in, column in), where simplify dropped the terms that always hold in
        some lanes (an 8-column vector of a padded row: its first lanes test the row alone) -> AND(the terms every
        lane has, the one other term of each lane, True where it has none); None where a lane has two others."""
        if not any(x.op is Ops.AND for x in lanes):
            return None
        terms = [[t for t in _conjuncts(x) if not (t.op is Ops.CONST and t.arg.value)] for x in lanes]
        common = [t for t in terms[0] if all(t in ts for ts in terms[1:])]
        rest = [[t for t in ts if t not in common] for ts in terms]
        if not common or any(len(r) > 1 for r in rest):
            return None
        true = UOp.const(dtypes.bool, True)
        parts = [self.unify((t,) * len(lanes)) for t in common]
        if any(r for r in rest):
            parts.append(self.unify(tuple(r[0] if r else true for r in rest)))
        if any(x is None for x in parts):
            return None
        out = parts[0]
        for x in parts[1:]:
            out = UOp(Ops.AND, (out, x))
        return out if self.can_vector(out) else None

    def _regated(self, lanes: tuple[UOp, ...]) -> UOp | None:
        """A padded reduce axis's input, WHERE(gate, x, identity), where simplify dropped the WHERE of the lanes whose
        gate always holds -> each such lane as WHERE(True, x, identity), unified with the rest; None otherwise."""
        wheres = [x for x in lanes if x.op is Ops.WHERE]
        if not wheres or wheres[0].src[2].op is not Ops.CONST or any(w.src[2] is not wheres[0].src[2] for w in wheres):
            return None
        true, alt = UOp.const(dtypes.bool, True), wheres[0].src[2]
        return self.unify(tuple(x if x.op is Ops.WHERE else UOp(Ops.WHERE, (true, x, alt)) for x in lanes))

    def _offsets(self, lanes: tuple[UOp, ...]) -> UOp | None:
        """Int lanes that are one sum plus a different constant each (an arange's values, i + lane) ->
        sum + STACK(constants); None when the sums differ in more than their constant."""
        if not any(x.op is Ops.ADD for x in lanes):
            return None
        first = lanes[0]
        terms, c0 = split_terms(first)
        consts = [c0]
        for x in lanes[1:]:
            t, c = split_terms(x)
            if t != terms or x.dtype is not first.dtype:
                return None
            consts.append(c)
        if not terms:
            return None
        stack = UOp(Ops.STACK, tuple(UOp.const(first.dtype, c) for c in consts))
        base = self.unify((build_sum(first, terms, 0),) * len(lanes))
        out = UOp(Ops.ADD, (base, stack)) if base is not None else None
        return out if out is not None and self.can_vector(stack) and self.can_vector(out) else None

    def _index(self, lanes: tuple[UOp, ...]) -> UOp | None:
        """k INDEXes of one buffer at i_0, i_0+1, ..., i_0+k-1 -> INDEX(buf, i_0 + STACK(0..k-1))."""
        first = lanes[0]
        if len(first.src) != 2 or any(x.src[0] is not first.src[0] for x in lanes):
            return None
        base = first.src[1]
        if any(lane_offset(x.src[1], base) != i for i, x in enumerate(lanes)):
            return None
        k = len(lanes)
        if (reg := reg_param(first.src[0])) is not None:  # an accumulator: whole, aligned vectors of its slots
            # ... of its dtype's one width: the renderer holds it as vectors of one type (an int64 count read as 16
            # lanes beside a float32 store, and updated as 8, would mix two vector types)
            if base.op is not Ops.CONST or base.arg.value % k or reg.shape[0] % k or k != self.lanes(reg.dtype):
                return None
        return UOp(Ops.INDEX, (first.src[0], UOp(Ops.ADD, (base, iota(k)))))


def _conjuncts(u: UOp) -> list[UOp]:
    """The terms of a bool AND chain (u alone when it is no AND)."""
    if u.op is Ops.AND and u.dtype is dtypes.bool:
        return _conjuncts(u.src[0]) + _conjuncts(u.src[1])
    return [u]


def _always(u: UOp) -> bool:
    """A LOAD or STORE gated by the constant True (simplify's fold of a padded tile's gate in its inner lanes)."""
    return u.op in (Ops.LOAD, Ops.STORE) and len(u.src) == 3 and u.src[2].op is Ops.CONST and u.src[2].arg.value is True


def _first_store(u: UOp) -> UOp | None:
    while u.op is Ops.GROUP and u.src:
        u = u.src[0]
    return u if u.op is Ops.STORE else None


def vectorize_lanes(srcs: tuple[UOp, ...], v: Vectorizer, lanes: Callable[[DType], int]) -> tuple[UOp, ...]:
    """Runs of k consecutive STOREs (or GROUPs of them) among srcs unified into one vector STORE each."""
    out: list[UOp] = []
    i = 0
    while i < len(srcs):
        store = _first_store(srcs[i])
        k = lanes(store.src[1].dtype) if store is not None else 0
        run = srcs[i : i + k]
        if k > 1 and len(run) == k and all(_first_store(x) is not None for x in run):
            if (vec := v.unify(run)) is not None:
                out.append(vec)
                i += k
                continue
        out.append(srcs[i])
        i += 1
    return tuple(out)


def vectorize(sink: UOp, lanes: Callable[[DType], int], can_vector: Callable[[UOp], bool], masked: bool = False) -> UOp:
    """Kernel SINK after isel -> the same kernel with lane copies as vector ops (see the module doc).
    lanes(dtype): the vector width for a store of that dtype (< 2: none); can_vector(u): the target has u;
    masked: the target renders a gated vector LOAD/STORE (a (k,) gate: lane-wise where some lane is out), so
    the lanes of a padded axis (PADTO) become vectors too."""
    topo = sink.toposort()
    gated = any(u.op is Ops.LOAD and len(u.src) == 3 for u in topo)
    if gated and not masked:
        return sink  # gated loads (padding) stay scalar lanes beside vectors: measured slower (conv 2.5x)
    v = Vectorizer(can_vector, lanes, masked)
    memo: dict[UOp, UOp] = {}
    for u in topo:
        src = tuple(memo[s] for s in u.src)
        if u.op is Ops.GROUP or (u.op is Ops.AFTER and reg_param(u) is not None):
            src = vectorize_lanes(src, v, lanes)
        memo[u] = u if src == u.src else u.replace(src=src)
    out = memo[sink]
    if gated:
        # ... as where some gated load stays in scalar code (a padded matmul tile's rows, a convolution's border); a
        # gate that always holds is none (simplify's fold in a padded tile's inner lanes), and a load every user of
        # which is a vector op is a broadcast operand, loaded once per vector as scalar code would (a gradient
        # g.T @ h whose padded rows gate g's loads along g's contiguous axis while h's columns take the lanes)
        topo = out.toposort()
        users: dict[UOp, list[UOp]] = {}
        for u in topo:
            for s in u.src:
                users.setdefault(s, []).append(u)
        for u in topo:
            if u.op is Ops.LOAD and len(u.src) == 3 and u.shape == () and not _always(u):
                if any(c.shape == () for c in users.get(u, ())):
                    return sink
    return narrow_masks(out, lanes)


_INT32 = (-(1 << 31), (1 << 31) - 1)


def narrow_masks(sink: UOp, lanes: Callable[[DType], int]) -> UOp:
    """Lane masks compared in int32 where the 64-bit index compare is wider than a vector register: a padded axis's
    gate x < STACK(c_i) over 16 float lanes is a 16 x int64 compare (1024 bits), which gcc lowers through the stack
    every iteration (a 700 x 1000 row max: 206 -> 45 us a core once compared as 16 x int32). Compares of index or
    int64 values that fit in int32 (their ranges, or each constant) are made of CASTs to int32 (a STACK of constants
    becomes int32 constants); the mask then has the float lanes' width. Other kernels are returned as they are."""
    wide, narrow = lanes(dtypes.index), lanes(dtypes.int32)
    replace: dict[UOp, UOp] = {}
    for u in sink.toposort():
        if (
            u.op in (Ops.CMPLT, Ops.CMPNE)
            and len(u.shape) == 1
            and wide < u.shape[0] <= narrow
            and u.src[0].dtype in (dtypes.index, dtypes.int64)
            and all(_fits_int32(s) for s in u.src)
        ):
            replace[u] = UOp(u.op, tuple(_as_int32(s) for s in u.src))
    return sink.substitute(replace) if replace else sink


def _fits_int32(u: UOp) -> bool:
    if u.op is Ops.STACK:
        return all(s.op is Ops.CONST and _INT32[0] <= s.arg.value <= _INT32[1] for s in u.src)
    lo, hi = u.vmin, u.vmax
    return isinstance(lo, int) and isinstance(hi, int) and _INT32[0] <= lo and hi <= _INT32[1]


def _as_int32(u: UOp) -> UOp:
    if u.op is Ops.STACK:
        return UOp(Ops.STACK, tuple(UOp.const(dtypes.int32, s.arg.value) for s in u.src))
    return UOp.const(dtypes.int32, u.arg.value) if u.op is Ops.CONST else u.cast(dtypes.int32)
