"""The OpenCL C dialect of the C-family renderer (cstyle.py): the tables a GPU kernel needs, nothing else.

In: LINEAR lowered for a GPU target (SPECIAL gidx/lidx indices, LOCAL arrays, BARRIERs; pipeline/gpudims.py).
Out: one `__kernel` whose buffers are `__global` pointers and Variables `long`s; KernelSignature.global_size and
local_size say how it launches (work-groups per dimension, work-items per group; the CL device multiplies them
into OpenCL's global work size).
Computation is the CPU's: isel decomposes the same ops (exp2/log2/sin/sqrt are our polynomials, MULACC is fma,
correctly rounded as C's fmaf), and contraction is off, so a CL kernel computes the CPU kernel's bits.
bfloat16 is computed in float and stored as 16 bits (round to nearest even); the fp8s have no CL rendering.
"""

from __future__ import annotations

from unigrad.dtype import DType, dtypes
from unigrad.ir.ops import GroupOp, Ops
from unigrad.ir.uop import UOp
from unigrad.render.cstyle import CStyleLanguage, KernelSignature, _num, vector_types

PRELUDE = """#pragma OPENCL FP_CONTRACT OFF
static inline long fl_idiv(long a, long b) { if (b == 0) return 0; long q = a / b; return q - ((a % b != 0) & ((a < 0) != (b < 0))); }
static inline long fl_imod(long a, long b) { if (b == 0) return 0; long m = a % b; return m + (((m != 0) & ((m < 0) != (b < 0))) ? b : 0); }
static inline float bf16_to_f32(ushort x) { return as_float((uint)x << 16); }
static inline ushort f32_to_bf16(float f) {
  uint u = as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (ushort)((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u); return (ushort)(u >> 16);
}"""
FP64_PRELUDE = """#pragma OPENCL EXTENSION cl_khr_fp64 : enable
static inline double fl_div(double a, double b) { return floor(a / b); }
static inline double fl_mod(double a, double b) { double r = fmod(a, b); return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r; }"""
FP32_FLOOR = """static inline float fl_divf(float a, float b) { return floor(a / b); }
static inline float fl_modf(float a, float b) { float r = fmod(a, b); return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r; }"""

CL_TYPES: dict[DType, str] = {
    dtypes.bool: "bool",
    dtypes.int8: "char",
    dtypes.int16: "short",
    dtypes.int32: "int",
    dtypes.int64: "long",
    dtypes.uint8: "uchar",
    dtypes.uint16: "ushort",
    dtypes.uint32: "uint",
    dtypes.uint64: "ulong",
    dtypes.float16: "half",
    dtypes.bfloat16: "float",  # computed in float, stored as ushort
    dtypes.float32: "float",
    dtypes.float64: "double",
    dtypes.index: "long",
}
BF16 = ("ushort", "f32_to_bf16", "bf16_to_f32")  # storage type, float -> storage, storage -> float


class OpenCLLanguage(CStyleLanguage):
    types = CL_TYPES
    prelude = PRELUDE
    kernel_prefix = "__kernel "
    buffer_qualifier = "__global "
    local_qualifier = "__local "
    barrier = "barrier(CLK_LOCAL_MEM_FENCE);"
    special_funcs = {"g": "get_group_id", "l": "get_local_id"}
    decompose = GroupOp.Decomposed - {Ops.MULACC}  # as the CPU's C: the same primitives, the same bits

    pointer_space = "__global "
    vector_bytes = 16  # float4/int4/double2: what GPUs load in one instruction per work-item
    buffer_align = 128  # OpenCL aligns every buffer to CL_DEVICE_MEM_BASE_ADDR_ALIGN (1024 bits at least)

    def __init__(self, device: str = "CL", half: bool = True, double: bool = True) -> None:
        """device: the name errors give; half/double: the device has cl_khr_fp16/cl_khr_fp64."""
        self.device, self.unsupported = device, {dtypes.float16: half, dtypes.float64: double}

    # ---- vectors: OpenCL C's own vector types (float4, int4, ...), which its builtins (fma) take
    def vector_typedefs(self, uops: tuple[UOp, ...]) -> str:
        defs = []
        for dt, k in vector_types(uops):
            defs.append(f"typedef {CL_TYPES[dt]}{k} {dt.name}_v{k};")
            defs.append(f"typedef {CL_TYPES[dt]}{k} {dt.name}_v{k}_u __attribute__((aligned({dt.itemsize})));")
        return "\n".join(defs)

    def can_vector(self, u: UOp) -> bool:
        if u.op is Ops.MULACC:
            return u.dtype in (dtypes.float32, dtypes.float64) and _num(u)
        return super().can_vector(u)

    def valu(self, u: UOp, r: dict[UOp, str]) -> str:
        if u.op is Ops.MULACC:
            return f"fma({', '.join(self.bcast(s, u, r) for s in u.src)})"
        if u.op is Ops.BITCAST:  # OpenCL reinterprets bits with as_<type>, never with a cast
            return f"as_{CL_TYPES[u.dtype]}{u.shape[0]}({r[u.src[0]]})"
        return super().valu(u, r)

    def select(self, T: str, mask: str, x: str, y: str, dt: DType) -> str:
        """mask ? x : y lane-wise: OpenCL's select(y, x, mask) takes the lanes whose mask has its top bit set."""
        return f"select({y}, {x}, {mask})"  # the mask: an int vector of dt's width (compares make them)

    def ctype(self, dt: DType) -> str:
        if dt not in self.types or not self.unsupported.get(dt, True):
            raise NotImplementedError(
                f"{dt} is not supported on {self.device}: compute in float32 there, or use DEVICE=CPU"
                + (f" (the device lacks cl_khr_fp{dt.itemsize * 8})" if dt in self.unsupported else "")
            )
        return self.types[dt]

    def render(self, name: str, linear: UOp) -> tuple[str, KernelSignature]:
        src, sig = super().render(name, linear)
        half = "#pragma OPENCL EXTENSION cl_khr_fp16 : enable\n" if "half" in src else ""
        double = FP64_PRELUDE + "\n" if "double" in src else ""
        return half + double + src, sig

    def signature(self, sig: KernelSignature) -> str:
        args = [f"__global {self.storage_type(dt)}* restrict data{slot}" for slot, dt in sig.buffers]
        args += [f"long {v}" for v in sig.variables]
        return f"__kernel void {sig.name}({', '.join(args)})"

    def helpers(self, body: str) -> str:
        return FP32_FLOOR if "fl_divf" in body or "fl_modf" in body else ""

    @staticmethod
    def storage_type(dt: DType) -> str:
        return BF16[0] if dt is dtypes.bfloat16 else CL_TYPES[dt]

    def render_const(self, v: object, dt: DType) -> str:
        if dt is dtypes.float16:
            return f"((half){super().render_const(v, dtypes.float32)})"
        if dt is dtypes.index or (dt.itemsize == 8 and dt.is_int):
            text = super().render_const(v, dt)
            return text.replace("ll", "l") if not dt.is_unsigned else text.replace("ull", "ul")
        return super().render_const(v, dt)

    def load(self, u: UOp, target: str) -> str:
        return f"{BF16[2]}({target})" if u.dtype is dtypes.bfloat16 and target.startswith("data") else target

    def store(self, u: UOp, target: str, value: str) -> str:
        if u.src[1].dtype is dtypes.bfloat16 and target.startswith("data"):
            return f"{target} = {BF16[1]}({value});"
        return f"{target} = {value};"

    def alu(self, u: UOp, a: list[str]) -> str:
        dt = u.dtype
        if u.op is Ops.MULACC:
            return f"fma({a[0]}, {a[1]}, {a[2]})"
        if u.op is Ops.BITCAST:
            if dtypes.bfloat16 in (dt, u.src[0].dtype) or dt.is_bool:
                raise NotImplementedError(f"OpenCL renderer: no bitcast {u.src[0].dtype} -> {dt}")
            return f"as_{CL_TYPES[dt]}({a[0]})"
        if u.op in (Ops.IDIV, Ops.MOD) and u.src[0].dtype.is_float:
            suffix = "f" if u.src[0].dtype is not dtypes.float64 else ""
            return f"fl_{'div' if u.op is Ops.IDIV else 'mod'}{suffix}({a[0]},{a[1]})"
        if u.op is Ops.TRUNC and dt.is_float:
            return f"trunc({a[0]})"
        if u.op is Ops.CAST and dt is dtypes.bfloat16:  # rounded through the storage type
            return f"{BF16[2]}({BF16[1]}((float)({a[0]})))"
        if u.op in (Ops.ADD, Ops.MUL, Ops.RECIP) and dt is dtypes.bfloat16:
            return f"{BF16[2]}({BF16[1]}({super().alu(u, a)}))"
        if u.op is Ops.CAST and dt.is_bool:
            return f"(({a[0]})!=0)"
        return super().alu(u, a)
