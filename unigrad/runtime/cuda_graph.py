"""TinyJit's replays on a GPU as CUDA graphs (issue 33): the kernels of a captured step launched as one graph.

In: a JitPlan's steps (program, buffers, holes), every program a CUDAProgram of one context (`CUDAGraph.of` answers
None otherwise: copies between devices, other devices, DEBUG=2's per-kernel timing, JIT_GRAPH=0). Out: a runner
`call(inputs, var_vals)`. Its first call builds the graph, a kernel node per launch in the plan's order (each node
depends on the one before: the order the plan's stream gave them), and instantiates it; every call then updates only
the nodes whose arguments changed since the last one (a buffer in an input slot, a Variable's value, the grid a
Variable sets) and launches the graph on the context's stream: one driver call instead of one per kernel.
A call where some launch has an empty grid (a Variable made it 0) launches kernel by kernel, as eager code does.
"""

from __future__ import annotations

import ctypes
from typing import Any

from unigrad.helpers import record
from unigrad.runtime.support import cuda

_MASK = 0xFFFFFFFFFFFFFFFF


class KernelNodeParams(ctypes.Structure):
    """cuda.h's CUDA_KERNEL_NODE_PARAMS_v2 (v1's fields, then kern and ctx, left NULL: func names the kernel)."""

    _fields_ = [
        ("func", ctypes.c_void_p),
        ("grid", ctypes.c_uint * 3),
        ("block", ctypes.c_uint * 3),
        ("shared_bytes", ctypes.c_uint),
        ("kernel_params", ctypes.c_void_p),
        ("extra", ctypes.c_void_p),
        ("kern", ctypes.c_void_p),
        ("ctx", ctypes.c_void_p),
    ]


@record(eq=False)
class _Node:
    """One launch: its program, its fixed buffers (None in an input slot: `holes` are (position, slot)), the argument
    values it was last given (`args`, pointed to by `pointers`), its parameters and its node in the graph."""

    program: Any
    bufs: list[Any]
    holes: list[tuple[int, int]]
    args: Any
    pointers: Any
    params: KernelNodeParams
    handle: ctypes.c_void_p
    varying: bool  # an input slot or a Variable: its arguments may change between calls

    def buffers(self, inputs: list[Any]) -> list[Any]:
        """The launch's buffers in this call: the fixed ones, the input slots filled from `inputs`."""
        full = list(self.bufs)
        for pos, slot in self.holes:
            full[pos] = inputs[slot]
        return full


class CUDAGraph:
    """The runner of one plan's kernels as a CUDA graph (see the module docstring)."""

    @staticmethod
    def of(steps: list[tuple[Any, list[Any], list[tuple[int, int]]]]) -> CUDAGraph | None:
        """A runner for these steps, or None where a graph does not apply (not all kernels of one GPU context)."""
        progs = [p for p, _, _ in steps]
        if not progs or any(getattr(p, "graph", None) is not CUDAGraph.of for p in progs):
            return None
        if len({id(p.ctx) for p in progs}) != 1:
            return None
        return CUDAGraph(steps)

    def __init__(self, steps: list[tuple[Any, list[Any], list[tuple[int, int]]]]) -> None:
        self.ctx = steps[0][0].ctx
        self.nodes = []
        for prog, bufs, holes in steps:
            n = len(prog.slots) + len(prog.sig.variables)
            args = (ctypes.c_uint64 * max(n, 1))()
            pointers = (ctypes.c_void_p * max(n, 1))(*(ctypes.addressof(args) + 8 * i for i in range(max(n, 1))))
            params = KernelNodeParams(func=prog.function, kernel_params=ctypes.addressof(pointers))
            varying = bool(holes) or bool(prog.sig.variables)
            self.nodes.append(_Node(prog, list(bufs), list(holes), args, pointers, params, ctypes.c_void_p(), varying))
        self.graph: int | None = None
        self.exec: int | None = None
        self.launches = 0  # graph launches (tests and DEBUG read it)
        self.updates = 0  # node parameter updates after the first launch

    def _launch_state(self, node: _Node, inputs: list[Any], var_vals: dict[str, int]) -> tuple | None:
        """(argument values, grid, block) of the node's launch in this call; None for an empty grid."""
        prog = node.program
        full = node.buffers(inputs)
        values = [full[slot].handle.ptr for slot in prog.slots]
        values += [var_vals[v] & _MASK for v in prog.sig.variables]
        grid, block = prog.launch_dims(var_vals, None, None)
        return None if 0 in grid else (values, grid, block)

    @staticmethod
    def _write(node: _Node, state: tuple) -> bool:
        """Set the node's arguments and dims to `state`; whether they differ from what it had."""
        values, grid, block = state
        if (
            list(node.args[: len(values)]) == values
            and tuple(node.params.grid) == grid
            and tuple(node.params.block) == block
        ):
            return False
        for i, v in enumerate(values):
            node.args[i] = v
        node.params.grid[:], node.params.block[:] = grid, block
        return True

    def _build(self) -> None:
        lib, ctx = cuda.lib(), self.ctx
        self.graph = cuda.out("cuGraphCreate", cuda.P, 0)
        before: ctypes.c_void_p | None = None
        for node in self.nodes:
            deps, count = (ctypes.byref(before), 1) if before is not None else (None, 0)
            status = lib.cuGraphAddKernelNode(
                ctypes.byref(node.handle), self.graph, deps, count, ctypes.byref(node.params)
            )
            ctx.check(status, f"adding kernel {node.program.name} to a CUDA graph on {ctx.name}")
            before = node.handle
        self.exec = cuda.out("cuGraphInstantiateWithFlags", cuda.P, self.graph, 0)

    def __call__(self, inputs: list[Any], var_vals: dict[str, int]) -> None:
        ctx, lib = self.ctx, cuda.lib()
        ctx.activate()
        first = self.exec is None
        nodes = self.nodes if first else [n for n in self.nodes if n.varying]
        states = [self._launch_state(node, inputs, var_vals) for node in nodes]
        if any(st is None for st in states):  # an empty launch this call: kernel by kernel (the graph is kept)
            self._eager(inputs, var_vals)
            return
        changed = [node for node, st in zip(nodes, states) if self._write(node, st)]  # type: ignore[arg-type]
        if first:
            self._build()
        else:
            for node in changed:
                status = lib.cuGraphExecKernelNodeSetParams(self.exec, node.handle, ctypes.byref(node.params))
                ctx.check(status, f"updating kernel {node.program.name} of a CUDA graph on {ctx.name}")
            self.updates += len(changed)
        ctx.check(lib.cuGraphLaunch(self.exec, ctx.stream), f"launching a CUDA graph on {ctx.name}")
        ctx.last_kernel = f"a CUDA graph of {len(self.nodes)} kernels ({self.nodes[0].program.name} ...)"
        self.launches += 1

    def _eager(self, inputs: list[Any], var_vals: dict[str, int]) -> None:
        for node in self.nodes:
            node.program(node.buffers(inputs), var_vals)

    def __del__(self) -> None:
        try:
            lib = cuda.lib()
            if self.exec is not None:
                lib.cuGraphExecDestroy(self.exec)
            if self.graph is not None:
                lib.cuGraphDestroy(self.graph)
        except Exception:  # noqa: S110 - interpreter shutdown
            pass
