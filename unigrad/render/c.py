"""The C language for the CPU device: types, prelude (floor division, bfloat16 storage, bitcasts) and signature."""

from __future__ import annotations

from unigrad.dtype import DType, dtypes
from unigrad.ir.alu import FP8_FORMATS, FP8Format
from unigrad.ir.ops import GroupOp, Ops
from unigrad.ir.uop import UOp
from unigrad.render.cstyle import CStyleLanguage, KernelSignature, _num, _vec

# the libm/libc functions a kernel may call, declared instead of #include <math.h> and <string.h> (parsing them
# took ~18 ms of each ~70 ms kernel compile); compilers treat these names as builtins and inline most of them
PRELUDE = """double floor(double); double fmod(double, double); double trunc(double); float truncf(float);
double exp2(double); float exp2f(float); double log2(double); float log2f(float);
double sin(double); float sinf(float); double sqrt(double); float sqrtf(float);
void *memcpy(void *, const void *, __SIZE_TYPE__);
#define NAN __builtin_nanf("")
#define INFINITY __builtin_inff()
static inline long long fl_idiv(long long a, long long b) { if (b == 0) return 0; long long q = a / b; return q - ((a % b != 0) & ((a < 0) != (b < 0))); }
static inline long long fl_imod(long long a, long long b) { if (b == 0) return 0; long long m = a % b; return m + (((m != 0) & ((m < 0) != (b < 0))) ? b : 0); }
static inline double fl_div(double a, double b) { return floor(a / b); }
static inline double fl_mod(double a, double b) { double r = fmod(a, b); return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r; }
static inline float bf16_to_f32(unsigned short x) { unsigned int u = (unsigned int)x << 16; float f; memcpy(&f, &u, 4); return f; }
static inline unsigned short f32_to_bf16(float f) {
  unsigned int u; memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u); return (unsigned short)(u >> 16);
}"""

C_TYPES: dict[DType, str] = {
    dtypes.bool: "_Bool",
    dtypes.int8: "signed char",
    dtypes.int16: "short",
    dtypes.int32: "int",
    dtypes.int64: "long long",
    dtypes.uint8: "unsigned char",
    dtypes.uint16: "unsigned short",
    dtypes.uint32: "unsigned int",
    dtypes.uint64: "unsigned long long",
    dtypes.float16: "_Float16",
    dtypes.bfloat16: "float",  # computed in float, stored as 16 bits
    dtypes.fp8e4m3: "float",  # computed in float, stored as 8 bits
    dtypes.fp8e5m2: "float",
    dtypes.float32: "float",
    dtypes.float64: "double",
    dtypes.index: "long long",
}


def _fp8_helpers(name: str, f: FP8Format) -> str:
    """`float <name>_to_f32(unsigned char)` and `unsigned char f32_to_<name>(float)`: ir/alu.py's fp8_to_float and
    float_to_fp8 in C (round to nearest even; overflow and inf saturate to the top code; nan is 0x7f)."""
    e_mask, m_mask, m, bias = (1 << f.exp_bits) - 1, (1 << f.man_bits) - 1, f.man_bits, f.bias
    sub_scale = f"0x1p-{bias + m - 1}f"  # a subnormal is its mantissa times 2^(1 - bias - m)
    past_top = "m ? NAN : (s ? -INFINITY : INFINITY)" if name == "fp8e5m2" else "NAN"
    return (
        f"static inline float {name}_to_f32(unsigned char b) {{\n"
        f"  unsigned int s = (unsigned int)(b & 0x80u) << 24, e = (b >> {m}) & {e_mask}u, m = b & {m_mask}u, u; float f;\n"
        f"  if ((b & 0x7fu) > {f.top}u) return {past_top};\n"
        f"  if (e == 0) {{ f = (float)m * {sub_scale}; return s ? -f : f; }}\n"
        f"  u = s | ((e + {127 - bias}u) << 23) | (m << {23 - m}); memcpy(&f, &u, 4); return f;\n"
        f"}}\n"
        f"static inline unsigned char f32_to_{name}(float x) {{\n"
        f"  unsigned int u; memcpy(&u, &x, 4);\n"
        f"  unsigned int s = (u >> 24) & 0x80u, a = u & 0x7fffffffu, E = a >> 23, M = E ? (a & 0x7fffffu) | 0x800000u : a;\n"
        f"  if (a > 0x7f800000u) return (unsigned char)(s | 0x7fu);\n"
        f"  int e = (int)(E ? E : 1) - 127; if (e < {1 - bias}) e = {1 - bias};\n"
        f"  int sh = 150 + e - {m} - (int)(E ? E : 1);  /* |x| / 2^(e - {m}) = M >> sh */\n"
        f"  unsigned int r = sh > 24 ? 0u : (M + (1u << (sh - 1)) - 1u + ((M >> sh) & 1u)) >> sh;\n"
        f"  unsigned int code = (unsigned int)((e + {bias - 1}) << {m}) + r;\n"
        f"  return (unsigned char)(s | (code > {f.top}u ? {f.top}u : code));\n"
        f"}}"
    )


# storage types that compute in float: (C storage type, float -> storage, storage -> float)
STORED_AS: dict[DType, tuple[str, str, str]] = {
    dtypes.bfloat16: ("unsigned short", "f32_to_bf16", "bf16_to_f32"),
    **{dt: ("unsigned char", f"f32_to_{dt.name}", f"{dt.name}_to_f32") for dt in FP8_FORMATS},
}
# the fp8 conversions, by the name a kernel calls them with (a kernel's source holds only those it needs)
FP8_HELPERS = {dt.name: _fp8_helpers(dt.name, f) for dt, f in FP8_FORMATS.items()}


def _bitcast_helper(src: DType, dst: DType) -> str:
    """`dst bitcast_<src>_<dst>(src x)`, the function cstyle renders BITCAST as: the bytes copied with memcpy
    (defined behaviour in C, one register move once optimized). bfloat16 and the fp8s are computed as float: their
    bits are taken from that float (exact: it holds a value of the type) and it is rebuilt from them."""
    s, d = C_TYPES[src], C_TYPES[dst]
    load, var = "", "x"
    if src in STORED_AS:
        load, var = f"{STORED_AS[src][0]} b = {STORED_AS[src][1]}(x); ", "b"
    if dst in STORED_AS:
        body = f"{STORED_AS[dst][0]} c; memcpy(&c, &{var}, {dst.itemsize}); return {STORED_AS[dst][2]}(c);"
    else:
        body = f"{d} y; memcpy(&y, &{var}, sizeof y); return y;"
    return f"static inline {d} bitcast_{src.name}_{dst.name}({s} x) {{ {load}{body} }}"


# every pair of distinct int/float dtypes of one size (bool and index have no bit layout to reinterpret)
_BITS_TYPES = [dt for dt in C_TYPES if dt.kind in "iuf"]
# ... by name; a kernel's source holds only those it calls (clang 14 refuses any _Float16 on x86 without AVX-512 FP16)
BITCAST_HELPERS = {
    f"bitcast_{a.name}_{b.name}(": _bitcast_helper(a, b)
    for a in _BITS_TYPES
    for b in _BITS_TYPES
    if a is not b and a.itemsize == b.itemsize
}


# non-temporal stores of one whole vector register without <immintrin.h> (it costs ~0.1 s of compile time per
# kernel), by its size: clang's generic builtin, gcc's AVX-512 (64 bytes) or AVX (32 bytes) one, else a plain store
# (a kernel rendered for a wider register than the compiler targets still compiles); the fence orders them before
# the kernel returns to the pool
STREAM_PRELUDE = """#if defined(__clang__)
#define nt_store64(p, v) __builtin_nontemporal_store((v), (__typeof__(v) *)(p))
#define nt_store32(p, v) __builtin_nontemporal_store((v), (__typeof__(v) *)(p))
#else
#if defined(__AVX512F__)
typedef long long nt_v8di __attribute__((vector_size(64)));
#define nt_store64(p, v) __builtin_ia32_movntdq512((nt_v8di *)(p), (nt_v8di)(v))
#else
#define nt_store64(p, v) (*(__typeof__(v) *)(p) = (v))
#endif
#if defined(__AVX__)
typedef long long nt_v4di __attribute__((vector_size(32)));
#define nt_store32(p, v) __builtin_ia32_movntdq256((nt_v4di *)(p), (nt_v4di)(v))
#else
#define nt_store32(p, v) (*(__typeof__(v) *)(p) = (v))
#endif
#endif
#if defined(__x86_64__)
#define nt_fence() __builtin_ia32_sfence()
#else
#define nt_fence() ((void)0)
#endif"""
# outputs at least this big are streamed past the caches (non-temporal stores, no read for ownership): bigger
# than a core's share of this machine's 32 MiB L3, they would be evicted before a next kernel reads them anyway
STREAM_MIN_BYTES = 1 << 24
# inputs that big, each element read once, are prefetched this many bytes ahead with the non-temporal hint: the
# stream passes through L1 without evicting L2/L3 (the interpreter's objects, the next kernel's small inputs). Only
# where one vector load is one cache line (AVX-512): with 32-byte vectors (AVX2) the hint cost a 2-core Zen 3 9% on a
# 64 MiB sum and 4% on the elementwise chain against no prefetch (same kernels, alternating calls)
PREFETCH_AHEAD = 4096
CACHE_LINE = 64
FMA_FUNCS = {dtypes.float32: "__builtin_fmaf", dtypes.float64: "__builtin_fma"}  # isel fuses these dtypes only


class CLanguage(CStyleLanguage):
    prelude = PRELUDE
    types = C_TYPES
    vector_bytes = 64  # the default (AVX-512); the CPU device passes its host's width (ops_cpu.host_vector_unit)
    buffer_align = 64  # ops_cpu.CPUAllocator aligns every buffer to this
    masked_vectors = True  # a padded axis's gated last vector: lane by lane (Target.masked_tails)
    lane_sums = True
    stream_prefix = "nt_store"
    stream_prelude = STREAM_PRELUDE
    stream_fence = "nt_fence();"
    # isel replaces all of the spec's decomposed ops, libm's exp2/log2/sin/sqrt included: the PYTHON device
    # shares this renderer and interprets the same primitives, so both devices compute the same bits
    # ... but MULACC, which isel makes of each float accumulation (acc + a*b) and is rendered as C's fmaf/fma
    decompose = GroupOp.Decomposed - {Ops.MULACC}
    float_funcs = {Ops.EXP2: "exp2", Ops.LOG2: "log2", Ops.SIN: "sin", Ops.SQRT: "sqrt"}

    def __init__(self, vector_bytes: int = 64) -> None:
        """vector_bytes: the width of the target's vector registers (64 AVX-512, 32 AVX2, 16 SSE/NEON): vector
        values are that wide, and only whole registers are streamed (nt_store)."""
        self.vector_bytes = vector_bytes

    def helpers(self, body: str) -> str:
        """The fp8 conversions and bitcast helpers `body` calls (the conversions first: helpers call them)."""
        if "bitcast_" not in body and "fp8" not in body:
            return ""
        defs = [definition for call, definition in BITCAST_HELPERS.items() if call in body]
        fp8 = [definition for name, definition in FP8_HELPERS.items() if name in body]
        return "\n".join(fp8 + defs)

    def load_hint(self, u: UOp, ptr: str, buffer_bytes: int, once: bool) -> str:
        if (
            once
            and buffer_bytes >= STREAM_MIN_BYTES
            and u.shape[0] * u.dtype.itemsize == self.vector_bytes == CACHE_LINE
        ):
            return f"__builtin_prefetch((const char *)({ptr}) + {PREFETCH_AHEAD}, 0, 0);"
        return ""

    def store_vector(self, u: UOp, ptr: str, value: str, aligned: bool, buffer_bytes: int) -> str:
        if (
            aligned
            and buffer_bytes >= STREAM_MIN_BYTES
            and u.src[0].shape[0] * u.src[0].dtype.itemsize == self.vector_bytes
            and self.vector_bytes in (32, 64)  # the sizes STREAM_PRELUDE defines
        ):
            return f"nt_store{self.vector_bytes}({ptr}, {value});"
        return super().store_vector(u, ptr, value, aligned, buffer_bytes)

    def can_vector(self, u: UOp) -> bool:
        return u.dtype in FMA_FUNCS and _num(u) if u.op is Ops.MULACC else super().can_vector(u)

    def vector_typedefs(self, uops: tuple[UOp, ...]) -> str:
        """The vector types, and an fma_<type> for each vector type a MULACC takes: C's fmaf/fma lane by lane,
        which the compiler turns into one vector FMA instruction."""
        fused = {self.vtype(u): u for u in uops if u.op is Ops.MULACC and _vec(u)}
        defs = [super().vector_typedefs(uops)]
        for T, u in sorted(fused.items()):
            defs.append(
                f"static inline {T} fma_{T}({T} a, {T} b, {T} c) {{ {T} r; for (int i = 0; i < {u.shape[0]}; i++) "
                f"r[i] = {FMA_FUNCS[u.dtype]}(a[i], b[i], c[i]); return r; }}"
            )
        return "\n".join(defs)

    def valu(self, u: UOp, r: dict[UOp, str]) -> str:
        if u.op is Ops.MULACC:
            return f"fma_{self.vtype(u)}({', '.join(self.bcast(s, u, r) for s in u.src)})"
        return super().valu(u, r)

    def storage_type(self, dt: DType) -> str:
        return STORED_AS[dt][0] if dt in STORED_AS else self.ctype(dt)

    def signature(self, sig: KernelSignature) -> str:
        args = [f"{self.storage_type(dt)}* restrict data{slot}" for slot, dt in sig.buffers]
        args += [f"long long {v}" for v in sig.variables]
        if sig.threads:
            args.append("long long core")
        return f"void {sig.name}({', '.join(args)})"

    def load(self, u: UOp, target: str) -> str:
        return f"{STORED_AS[u.dtype][2]}({target})" if u.dtype in STORED_AS and "acc" not in target else target

    def store(self, u: UOp, target: str, value: str) -> str:
        if u.src[1].dtype in STORED_AS and not target.startswith("acc"):
            return f"{target} = {STORED_AS[u.src[1].dtype][1]}({value});"
        return f"{target} = {value};"

    def alu(self, u: UOp, a: list[str]) -> str:
        if u.op is Ops.MULACC:
            return f"{FMA_FUNCS[u.dtype]}({a[0]}, {a[1]}, {a[2]})"
        if u.dtype is dtypes.float16 and u.op in self.float_funcs:  # no half libm: compute in float
            return f"(_Float16){self.float_funcs[u.op]}f((float){a[0]})"
        if u.op is Ops.CAST and u.dtype in STORED_AS:  # rounded through the storage type
            _, to, back = STORED_AS[u.dtype]
            return f"{back}({to}((float)({a[0]})))"
        if u.op in (Ops.ADD, Ops.MUL, Ops.RECIP) and u.dtype in STORED_AS:
            _, to, back = STORED_AS[u.dtype]
            return f"{back}({to}({super().alu(u, a)}))"
        return super().alu(u, a)
