"""The CUDA C++ dialect of the C-family renderer (cstyle.py), compiled by NVRTC (runtime/support/nvrtc.py).

In: LINEAR lowered for a GPU target (SPECIAL gidx/lidx indices, LOCAL arrays, BARRIERs; pipeline/gpudims.py).
Out: one `extern "C" __global__` kernel (its name unmangled, for cuModuleGetFunction) with `__launch_bounds__` of
its block size where that is a number; gidx<d> is blockIdx.x/y/z, lidx<d> threadIdx.x/y/z, LOCAL arrays are
`__shared__`, a BARRIER is `__syncthreads()`. Buffers are `__restrict__` pointers, Variables `long long`s;
KernelSignature.global_size/local_size are the launch's grid (blocks per dim) and block (threads per block).

Computation is the CPU's, so a CUDA kernel computes the CPU kernel's bits: isel decomposes the same ops
(exp2/log2/sin/sqrt are our polynomials), MULACC is fmaf/fma (correctly rounded), and the kernels are compiled with
--fmad=false (NVRTC would otherwise contract a*b+c into an fma of its own), correctly rounded division and no
flush to zero (NVRTC's defaults).

16-bit floats: our own definitions, not the `__half`/`__nv_bfloat16` of cuda_fp16.h/cuda_bf16.h. Those headers
come with the nvidia-cuda-runtime wheel or a toolkit (one more thing to find at run time), add some 0.1 s of
parsing to every kernel's compile, and their arithmetic is per architecture (native f16 before or after sm_53).
Here float16 and bfloat16 are held as `unsigned short` in global memory and computed in `float`: a load widens
(exact), and every op that rounds (add, mul, recip, floor division, casts) rounds its float result to the 16-bit
type at once, which for one correctly rounded op is the 16-bit op's own result (float has more than twice the
bits), so kernels match the CPU's _Float16 and bf16 code. float16 conversions are the PTX cvt instructions (any
sm); bfloat16 rounds to nearest even in integer code (the CPU's, bit for bit; cvt.rn.bf16 needs sm_80). LOCAL
arrays and accumulators of 16-bit types are held as float. Helpers are written as C (plain `static inline`) and
compiled with -default-device, which makes them device functions: the CPU's fp8 conversions are reused as they are.

Tensor cores (sm_80 and newer; the TC opt, pipeline/optimize/tensor_cores.py): a WMMA is inline PTX
`mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32` in a helper; the lane's A and B elements (floats
holding 16-bit values) are converted to their 16-bit bits exactly and packed two to a 32-bit register, element 2r in
the low half of register r (PTX: "elements low to high"); its D is a `float d[4]` updated in place from C.
"""

from __future__ import annotations

import math

from unigrad.dtype import DType, dtypes
from unigrad.ir.args import Fragment, TensorCore
from unigrad.ir.ops import GroupOp, Ops
from unigrad.ir.uop import UOp
from unigrad.render.c import C_TYPES, FP8_HELPERS
from unigrad.render.cstyle import CStyleLanguage, KernelSignature

PRELUDE = """#define INFINITY __int_as_float(0x7f800000)
#define NAN __int_as_float(0x7fffffff)
static inline long long fl_idiv(long long a, long long b) { if (b == 0) return 0; long long q = a / b; return q - ((a % b != 0) & ((a < 0) != (b < 0))); }
static inline long long fl_imod(long long a, long long b) { if (b == 0) return 0; long long m = a % b; return m + (((m != 0) & ((m < 0) != (b < 0))) ? b : 0); }
static inline double fl_div(double a, double b) { return floor(a / b); }
static inline double fl_mod(double a, double b) { double r = fmod(a, b); return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r; }
template <class D, class S> static inline D bits(S x) { D y; memcpy(&y, &x, sizeof y); return y; }"""
F16_HELPERS = """static inline float f16_to_f32(unsigned short h) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f; }
static inline unsigned short f32_to_f16(float f) { unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
static inline unsigned short f64_to_f16(double d) { unsigned short h; asm("cvt.rn.f16.f64 %0, %1;" : "=h"(h) : "d"(d)); return h; }"""
BF16_HELPERS = """static inline float bf16_to_f32(unsigned short x) { return __uint_as_float((unsigned int)x << 16); }
static inline unsigned short f32_to_bf16(float f) {
  unsigned int u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u); return (unsigned short)(u >> 16);
}"""


def mma_m16n8k16(dtype_in: DType) -> TensorCore:
    """mma.sync m16n8k16 with float32 accumulators (PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating point
    type"): with groupID g = laneid >> 2 and threadID_in_group t = laneid % 4,
      A (16x16): a_i, i = 4q + 2h + j, at row g + 8h, col 2t + j + 8q      (4 registers of two 16-bit elements)
      B (16x8):  b_i, i = 2q + j,      at row 2t + j + 8q, col g           (2 registers)
      C, D (16x8): c_i, i = 2h + n,    at row g + 8h, col 2t + n           (4 float registers)"""
    return TensorCore(
        "m16n8k16",
        (16, 8, 16),
        dtype_in,
        dtypes.float32,
        (("g", 8), ("t", 4)),
        a=Fragment((("q", 2), ("h", 2), ("j", 2)), (("g", 1), ("h", 8)), (("j", 1), ("t", 2), ("q", 8))),
        b=Fragment((("q", 2), ("j", 2)), (("j", 1), ("t", 2), ("q", 8)), (("g", 1),)),
        c=Fragment((("h", 2), ("n", 2)), (("g", 1), ("h", 8)), (("n", 1), ("t", 2))),
    )


CUDA_TENSOR_CORES = (mma_m16n8k16(dtypes.float16), mma_m16n8k16(dtypes.bfloat16))
PTX_TYPE = {dtypes.float16: "f16", dtypes.bfloat16: "bf16"}


def tensor_cores_for(arch: str) -> tuple[TensorCore, ...]:
    """The tensor cores kernels compiled for `arch` (sm_80, sm_90a, ...) may use: mma.sync m16n8k16 from sm_80."""
    digits = "".join(ch for ch in arch.removeprefix("sm_") if ch.isdigit())
    return CUDA_TENSOR_CORES if digits and int(digits) >= 80 else ()


def mma_helper(tc: TensorCore) -> str:
    """The device function running one WMMA of `tc`: d (C in, D out) and the packed A and B registers."""
    t = PTX_TYPE[tc.dtype_in]
    na, nb, nc = tc.a.size // 2, tc.b.size // 2, tc.c.size
    args = ", ".join([f"unsigned a{i}" for i in range(na)] + [f"unsigned b{i}" for i in range(nb)])
    regs = [f"%{i}" for i in range(nc + na + nb)]
    d, a, b = ", ".join(regs[:nc]), ", ".join(regs[nc : nc + na]), ", ".join(regs[nc + na :])
    outs = ", ".join(f'"+f"(d[{i}])' for i in range(nc))
    ins = ", ".join([f'"r"(a{i})' for i in range(na)] + [f'"r"(b{i})' for i in range(nb)])
    return (
        f"static inline void mma_{tc.name}_{t}(float *d, {args}) {{\n"
        f'  asm volatile("mma.sync.aligned.{tc.name}.row.col.f32.{t}.{t}.f32 {{{d}}}, {{{a}}}, {{{b}}}, {{{d}}};"'
        f" : {outs} : {ins});\n}}"
    )


PACK2 = (
    "static inline unsigned pack2(unsigned short lo, unsigned short hi) { return (unsigned)lo | ((unsigned)hi << 16); }"
)

# C's types, but C++'s bool, and float16 computed in float (stored as 16 bits, as bfloat16 and the fp8s are)
CUDA_TYPES: dict[DType, str] = {**C_TYPES, dtypes.bool: "bool", dtypes.float16: "float"}
# types computed in float: (storage type, float -> storage, storage -> float)
STORED_AS: dict[DType, tuple[str, str, str]] = {
    dtypes.float16: ("unsigned short", "f32_to_f16", "f16_to_f32"),
    dtypes.bfloat16: ("unsigned short", "f32_to_bf16", "bf16_to_f32"),
    **{dt: ("unsigned char", f"f32_to_{dt.name}", f"{dt.name}_to_f32") for dt in dtypes.fp8s},
}
ROUNDED = frozenset({Ops.ADD, Ops.MUL, Ops.RECIP, Ops.IDIV, Ops.MOD, Ops.MULACC})  # ops whose float result is inexact
FMA = {dtypes.float32: "fmaf", dtypes.float64: "fma"}  # isel fuses these dtypes only
DIMS = "xyz"


class CUDALanguage(CStyleLanguage):
    types = CUDA_TYPES
    prelude = PRELUDE
    kernel_prefix = 'extern "C" __global__ '
    local_qualifier = "__shared__ "
    barrier = "__syncthreads();"
    decompose = GroupOp.Decomposed - {Ops.MULACC}  # as the CPU's C: the same primitives, the same bits

    def __init__(self, arch: str = "sm_90") -> None:
        """arch: the architecture kernels are compiled for (sm_80, sm_90, ...): bfloat16 needs sm_80 or newer."""
        self.arch = arch

    def special(self, name: str) -> str:
        """gidx<d> -> blockIdx, lidx<d> -> threadIdx (as `long long`: index math is 64-bit)."""
        return f"(long long){'blockIdx' if name[0] == 'g' else 'threadIdx'}.{DIMS[int(name[-1])]}"

    def signature(self, sig: KernelSignature) -> str:
        args = [f"{self.storage_type(dt)}* __restrict__ data{slot}" for slot, dt in sig.buffers]
        args += [f"long long {v}" for v in sig.variables]
        block = sig.local_size
        bounds = f"__launch_bounds__({math.prod(block)}) " if block and all(isinstance(s, int) for s in block) else ""
        return f"{self.kernel_prefix}void {bounds}{sig.name}({', '.join(args)})"

    def helpers(self, body: str) -> str:
        """The 16-bit and fp8 conversions and the tensor core instructions `body` calls."""
        defs = [F16_HELPERS] if "f16_to" in body or "_f16(" in body else []
        defs += [BF16_HELPERS] if "bf16" in body else []
        defs += [definition for name, definition in FP8_HELPERS.items() if name in body]
        defs += [PACK2] if "pack2(" in body else []
        defs += [mma_helper(tc) for tc in CUDA_TENSOR_CORES if f"mma_{tc.name}_{PTX_TYPE[tc.dtype_in]}(" in body]
        return "\n".join(defs)

    def wmma(self, u: UOp, name: str, r: dict[UOp, str]) -> list[str]:
        """A WMMA (its sources: STACKs of the lane's A, B and C elements) as `float name[c] = C;` and the mma helper
        updating it to D; the 16-bit A and B elements converted to their bits (exact) and packed two a register."""
        tc = u.arg.tc
        if tc not in CUDA_TENSOR_CORES or int("".join(ch for ch in self.arch[3:] if ch.isdigit()) or 0) < 80:
            raise NotImplementedError(f"CUDA {self.arch}: no tensor core {tc.name} {tc.dtype_in.name}")
        to_bits = STORED_AS[tc.dtype_in][1]
        a, b, c = ([r[x] for x in f.src] for f in u.src)
        regs = [f"pack2({to_bits}({xs[i]}), {to_bits}({xs[i + 1]}))" for xs in (a, b) for i in range(0, len(xs), 2)]
        return [
            f"float {name}[{len(c)}] = {{{', '.join(c)}}};",
            f"mma_{tc.name}_{PTX_TYPE[tc.dtype_in]}({name}, {', '.join(regs)});",
        ]

    def storage_type(self, dt: DType) -> str:
        return STORED_AS[dt][0] if dt in STORED_AS else self.ctype(dt)

    def load(self, u: UOp, target: str) -> str:
        return f"{STORED_AS[u.dtype][2]}({target})" if u.dtype in STORED_AS and target.startswith("data") else target

    def store(self, u: UOp, target: str, value: str) -> str:
        if u.src[1].dtype in STORED_AS and target.startswith("data"):
            return f"{target} = {STORED_AS[u.src[1].dtype][1]}({value});"
        return f"{target} = {value};"

    def alu(self, u: UOp, a: list[str]) -> str:
        dt, src = u.dtype, u.src[0].dtype
        if u.op is Ops.MULACC:
            return f"{FMA[dt]}({a[0]}, {a[1]}, {a[2]})"
        if u.op is Ops.BITCAST:  # through the storage types' bits
            x = f"{STORED_AS[src][1]}({a[0]})" if src in STORED_AS else a[0]
            y = f"bits<{self.storage_type(dt)}>({x})"
            return f"{STORED_AS[dt][2]}({y})" if dt in STORED_AS else y
        if u.op is Ops.CAST and dt in STORED_AS:  # rounded through the storage type (float16 from double directly)
            _, to, back = STORED_AS[dt]
            if dt is dtypes.float16 and src is dtypes.float64:
                return f"{back}(f64_to_f16({a[0]}))"
            return f"{back}({to}((float)({a[0]})))"
        if u.op in ROUNDED and dt in STORED_AS:
            _, to, back = STORED_AS[dt]
            return f"{back}({to}({super().alu(u, a)}))"
        return super().alu(u, a)
