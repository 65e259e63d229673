"""A walkthrough of unigrad's pipeline: one small program followed from the Tensor API to a C kernel.

    a = Tensor([[1., 2., 3.], [4., 5., 6.]])
    out = (a * 2).sum(axis=1) + 1          # [13., 31.]

Every stage takes UOps and returns UOps: the same node type carries the program from the tensor graph
down to the list of instructions the C renderer prints. Run it with `python docs/walkthrough.py`.

`out.numpy()` does all of this for you (and caches each step); here each stage is called by hand so you
can see what it produces. Stages of the spec not shown here (Optimize, Instruction Selection, Memory
Plan) change nothing for a kernel this small. Section 7 lowers the same kernel for a GPU (on the PYTHON device's
GPU emulator): work-groups, a LOCAL array, a barrier.
"""

from __future__ import annotations

import numpy as np

from unigrad import Tensor
from unigrad.ir.args import AxisType
from unigrad.ir.ops import Ops
from unigrad.ir.symbolic import simplify
from unigrad.ir.uop import UOp
from unigrad.pipeline.callify import callify
from unigrad.pipeline.expand import expand
from unigrad.pipeline.isel import isel
from unigrad.pipeline.linearize import linearize
from unigrad.pipeline.optimize import Opt, OptError, OptOps, apply_opts, axes
from unigrad.pipeline.rangeify import flatten_index, rangeify, unflatten_index
from unigrad.runtime import Buffer, Device, Lowered
from unigrad.runtime import realize as rt

DEVICE = "CPU"  # the device that compiles generated C


def stage(title: str, text: str) -> None:
    """Print a stage heading, a short explanation and (after it) the graph."""
    print(f"\n{'=' * 100}\n{title}\n{'=' * 100}")
    print(text.strip() + "\n")


# ------------------------------------------------------------------------------------------------ 0
# The program. Tensors are lazy: these lines only build a graph of UOps; nothing is computed yet.
a_np = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=np.float32)
a = Tensor(a_np, device=DEVICE)
out = (a * 2).sum(axis=1) + 1

stage(
    "0. The tensor graph (Tensor API -> UOps)",
    """
Each line is one UOp: `%id = OP(sources) arg : dtype shape`. The data was copied into a BUFFER (6 floats);
RESHAPE gives it the shape (2, 3). The scalars 2 and 1 are CONSTs made the right shape by RESHAPE + EXPAND
(broadcasting is explicit in the graph). REDUCE sums axis 1 keeping it as size 1, the RESHAPE drops it.
Shapes are UOps too: STACK of index CONSTs.
""",
)
print(out.uop)

# ------------------------------------------------------------------------------------------------ 1
# Callify: the whole tensor graph becomes one stateless FUNCTION. Concrete buffers are pulled out as the
# FUNCTION's arguments and replaced in the body by PARAM(slot) placeholders.
fn = callify(UOp(Ops.SINK, (out.uop,)))

stage(
    "1. Callify: tensor graph -> FUNCTION(TUPLE(outputs), inputs...)",
    """
The BUFFER became `PARAM slot=0` inside the body; the real BUFFER is the FUNCTION's second source.
Because the body no longer mentions any particular buffer, the same program run on other data has the
same body, the very same object (UOps are hash-consed), so its schedule is cached once for both.
""",
)
print(fn)

b = Tensor(a_np + 10, device=DEVICE)  # other data, same program
same_body = callify(UOp(Ops.SINK, (((b * 2).sum(axis=1) + 1).uop,))).src[0] is fn.src[0]
print(f"\nsame program on another buffer has the identical body: {same_body}")
assert same_body

# ------------------------------------------------------------------------------------------------ 2
# Rangeify: decide which values are materialized in buffers (the kernel split), and rewrite each kernel
# so every movement op (RESHAPE, EXPAND, PERMUTE, PAD, ...) becomes integer index math on RANGE loops.
sched = rangeify(fn, DEVICE)
calls = [u for u in sched.toposort() if u.op is Ops.CALL]

stage(
    "2. Rangeify: kernel split, movement ops -> index math on RANGEs",
    f"""
The output is now RESHAPE(AFTER(PARAM out, CALL(kernel, out, in))): a view of a new buffer that is
valid after the CALL runs. Here there is {len(calls)} kernel: the REDUCE fuses into the `+ 1` that uses
it (a REDUCE gets its own kernel only when its result is broadcast back). The kernel's AST is the SINK
inside the CALL (the listing walks into the CALL, so the kernel's nodes come first): RANGE r0 (L, a loop
over the 2 rows) and r1 (R, a reduce loop over the 3 columns), INDEX into flat buffers, and
REDUCE(value, r1). No RESHAPE or EXPAND is left inside the kernel.
PARAM slots are numbered per scope: in the FUNCTION, slot 0 is the input `a` and slot 1 the new output
buffer; inside the kernel, slot 0 is the output and slot 1 the input (the CALL's sources bind them).
""",
)
print(sched)

kernel = calls[0].src[0]
name = kernel.arg.name
print(f"\nkernel {name!r}: where it reads and writes (rendered index expressions)")
for u in kernel.toposort():
    if u.op is Ops.INDEX:
        print(f"  {u.src[0].render()}[{u.src[1].render()}]")

# Where those index expressions come from: reading `a` (2, 3) at (r0, r1) through RESHAPE of the flat
# (6,) buffer flattens the multi-index, then unflattens it into the buffer's shape. The symbolic
# simplifier knows r0 < 2 and r1 < 3 (every UOp has a min/max), so the // and % disappear.
r0, r1 = UOp.range(2, 0), UOp.range(3, 1)
raw = unflatten_index(flatten_index((r0, r1), (2, 3)), (6,))[0]
print(f"\nindex of a[r0, r1] in its flat buffer: {raw.render()}  ->  simplified: {simplify(raw).render()}")

# ------------------------------------------------------------------------------------------------ 2b
# Optimize: OptOps rewrite the kernel's RANGEs. The hand-coded heuristics leave a kernel this small alone (a
# thread dispatch or unrolled copies would cost more than they save), so here we apply opts by hand.
try:
    apply_opts(kernel, [Opt(OptOps.SPLIT, 1, (3, AxisType.UPCAST, False))])
except OptError as e:
    refused = str(e)
opts = (Opt(OptOps.SPLIT, 1, (3, AxisType.UNROLL, False)), Opt(OptOps.SPLIT, 0, (2, AxisType.THREAD, True)))
optimized = apply_opts(kernel, opts)
stage(
    "2b. Optimize: OptOps on the kernel's axes",
    f"""
Axes are the kernel's RANGEs by id: axis 0 is r0 (the 2 rows, LOOP), axis 1 is r1 (the 3 columns, REDUCE).
Each opt is checked; an UPCAST of a reduce axis is refused:
  {refused}
We split the reduce into UNROLL 3 (three independent accumulators, unrolled) and the rows into a THREAD axis of
2 (one chunk per core, run by the worker pool). The opts are recorded in the kernel's KernelInfo, so a kernel
replays them; the new sub-axis is the last axis. Below: the axes, the KernelInfo, and the rendered C.
""",
)
print(" ".join(f"r{r.arg.id}:{r.arg.axis_type.name}({r.src[0].render()})" for r in axes(optimized)))
print(optimized.arg)
opt_src, _ = Device["CPU"].renderer.render(
    "optimized", linearize(isel(expand(optimized), Device["CPU"].renderer.decompose))
)
print(opt_src[opt_src.index("void optimized(") :])

# ------------------------------------------------------------------------------------------------ 3
# Expand: a REDUCE becomes a register accumulator (and UPCAST/UNROLL ranges become copies of the body).
expanded = expand(kernel)

stage(
    "3. Expand: REDUCE -> accumulator in a register",
    """
The REDUCE is gone. A register `PARAM slot=0` (no device: REG address space, shape (1,)) is reset to 0.0 once
per row (STORE after r0), updated inside the r1 loop (STORE of LOAD(acc) + value), the r1 loop is closed
by END, and the result is LOADed after it. AFTER nodes order the accesses to the register.
""",
)
print(expanded)

# ------------------------------------------------------------------------------------------------ 3b
# Isel (instruction selection): ops the target cannot run directly are rewritten into primitives. Our
# kernel has none (MUL, ADD, LOAD, STORE are all primitives), so isel leaves it as it is; a kernel with
# sin() gets a range reduction and a polynomial in ADD/MUL/CAST/BITCAST, the same on every device.
decompose = Device["CPU"].renderer.decompose
selected = isel(expanded, decompose)
sin_fn = callify(UOp(Ops.SINK, (Tensor([0.5, 1.0]).sin().uop,)))
sin_kernel = next(u for u in rangeify(sin_fn, "CPU").toposort() if u.op is Ops.CALL).src[0]
sin_ops = {u.op.name for u in isel(expand(sin_kernel), decompose).toposort()}

stage(
    "3b. Isel: decomposed ops -> primitives",
    f"""
This kernel is unchanged by isel: {selected is expanded}. A kernel computing sin() loses its SIN: after isel
it holds only {sorted(o for o in sin_ops if o in ("ADD", "MUL", "CAST", "BITCAST", "WHERE", "TRUNC"))} and friends,
and 'SIN' in it: {"SIN" in sin_ops}.
""",
)

# ------------------------------------------------------------------------------------------------ 4
# Linearize: the graph becomes LINEAR, one list of instructions in execution order with properly nested
# loops. Each node lands in the innermost loop it depends on, so loop-invariant work is hoisted.
linear = linearize(selected)

stage(
    "4. Linearize: graph -> LINEAR (an ordered instruction list)",
    """
Read the LINEAR sources top to bottom as a program: constants and PARAMs first, then RANGE r0 opens the
row loop, RANGE r1 the reduce loop, each END closes one. `r0*3` sits between the two RANGEs: it does not
depend on r1, so it is computed once per row, not once per element.
""",
)
print(linear)

# ------------------------------------------------------------------------------------------------ 5
# Render: LINEAR -> C source. One line of C per instruction; RANGE/END become for-loops.
src, sig = Device[DEVICE].renderer.render(name, linear)

stage(
    "5. Render: LINEAR -> C source",
    f"""
data0 is the kernel's PARAM 0 (the output), data1 its PARAM 1 (the input); acc0 is the register.
Float constants are printed as exact hex literals (0x1.0000000000000p+1f is 2.0f). The source also starts
with a small prelude of helpers (floor division, bfloat16), omitted here. The runtime calls it by:
  {sig}
""",
)
start = src.find(f"void {name}(")
print(src[start:] if start >= 0 else src)

# ------------------------------------------------------------------------------------------------ 6
# Run: compile the C, bind the kernel's PARAMs to buffers, call it. Kernel PARAM k is the CALL's source
# k+1; a PARAM slot below the FUNCTION's argument count is one of its inputs, the others are new buffers.
dev = Device[DEVICE]
program = dev.build(Lowered(name, linear, src, sig))  # the device compiles the source (the PYTHON device runs linear)
call = calls[0]
fn_args = fn.src[1:]
bufs = []
for p in call.src[1:]:
    if p.arg.slot < len(fn_args):
        bufs.append(rt.buffer_of(fn_args[p.arg.slot]))
    else:
        bufs.append(Buffer(DEVICE, p.shape[0], p.arg.dtype))
for buf in bufs:
    buf.ensure_allocated()
program(bufs, {})
by_hand = bufs[0].numpy().reshape(out.shape)

# The same through the runtime: realize() = kernelize (callify + rangeify, cached by the FUNCTION body)
# + for each CALL: get_kernel (expand -> isel -> linearize -> render -> compile, cached by the kernel AST) + run.
result = out.numpy()
expected = (a_np * 2).sum(axis=1) + 1

stage(
    "6. Run: compile, bind buffers, call",
    f"""
The compiled kernel, called by hand on the input buffer and a new output buffer: {by_hand}
out.numpy() through the runtime (the same stages, cached):                {result}
numpy reference (a * 2).sum(axis=1) + 1:                                  {expected}
""",
)
assert np.allclose(by_hand, expected), (by_hand, expected)
assert np.allclose(result, expected), (result, expected)
assert rt.get_kernel(DEVICE, kernel).name == name  # the runtime compiled (and cached) this very kernel
print("both agree with numpy. Run any program with DEBUG=4 to see its kernels' C source, DEBUG=5 for the graphs.")

# ------------------------------------------------------------------------------------------------ 7
# The same kernel lowered for a GPU. The PYTHON device emulates one with PYTHON_GPU (work-groups, LOCAL memory,
# barriers, a race check): optimize makes the output axis GLOBAL and, here by hand, splits the reduce axis over a
# work-group (GROUP_REDUCE 3: three work-items per row, each reducing its share); local_buffers puts the partials
# through a LOCAL array; gpudims turns the axes into SPECIAL indices and inserts the BARRIER by rule.
from unigrad import Context  # noqa: E402 - the GPU part of the walkthrough
from unigrad.ir.args import KernelInfo  # noqa: E402
from unigrad.pipeline.gpudims import gpudims  # noqa: E402
from unigrad.pipeline.optimize import optimize  # noqa: E402

with Context(PYTHON_GPU="1"):
    gpu_target = Device["PYTHON"].target
    grouped = kernel.replace(
        arg=KernelInfo(kernel.arg.name, (Opt(OptOps.SPLIT, 1, (3, AxisType.GROUP_REDUCE, False)),))
    )
    gpu_kernel = optimize(grouped, gpu_target)
    on_gpu = gpudims(gpu_kernel, gpu_target.global_max)
    gpu_lowered = rt.lower("PYTHON", gpu_kernel)
    gpu_result = Tensor(a_np, device="PYTHON")
    gpu_out = ((gpu_result * 2).sum(axis=1) + 1).numpy()
stage(
    "7. The same kernel for a GPU: GLOBAL/GROUP_REDUCE axes, SPECIAL indices, a LOCAL array, a BARRIER",
    f"""
Optimize on a GPU target: the output axis is GLOBAL (a work-group per row), the reduce axis is split into a
GROUP_REDUCE of 3 work-items; each reduces its share into a register and stores it into a LOCAL array; after a
BARRIER every work-item sums the partials, and the global store is gated to one writer (IF/ENDIF). Axes:
  {" ".join(f"r{r.arg.id}:{r.arg.axis_type.name}({r.src[0].render()})" for r in axes(gpu_kernel))}
After gpudims the ranges are SPECIALs (gidx0: the group, lidx0: the work-item) and the BARRIER is in the graph:
  {sorted({u.arg for u in on_gpu.toposort() if u.op is Ops.SPECIAL})}, {sum(u.op is Ops.BARRIER for u in on_gpu.toposort())} BARRIER
Launch: {gpu_lowered.sig.global_size} groups x {gpu_lowered.sig.local_size} work-items. The kernel as OpenCL C
(`DEVICE=CL` runs it on an OpenCL device) is below; on the emulator it computes {gpu_out}.
""",
)
print(gpu_lowered.src[gpu_lowered.src.index("__kernel") :])
assert np.allclose(gpu_out, expected), (gpu_out, expected)
