"""Multi: tensor graphs over an n-tuple device D -> one graph per device (the spec's multi-device rules).

In: tensor-level UOps (before callify). A node whose device is an n-tuple D is one *global* tensor held by n
devices: with `axis` a (the derived property), device i holds block i of dim a (shape[a] // n elements of it);
with axis None every device holds the whole tensor (replicated). Its sources may be nodes on D, nodes with no
device (constants and their views: the same value on every device) and, for a LOAD to D, a one-device node.

Out: for a node on D, n one-device UOps, the *pieces*: piece i is device i's part of the tensor, of the global
shape with shape[axis] // n (the whole shape when axis is None), and it only reads buffers on D[i] or copies
(LOAD with a device) from other devices. A node on one device comes back as one UOp with its multi-device
sources lowered (a LOAD from D to one device gathers the blocks).

The rules, by op (n = len(D), a = the node's axis):
  BUFFER on D          the per-device parts it was made of (`parts`, flat (size,) each)
  LOAD(x, D)           scatter: block i of x's dim 0 copied to D[i] (x gathered first when it is on a tuple)
  ALU, markers, CAST   each source *localized* to axis a (sliced from a replicated source, gathered from another
                       axis), then the op per device
  REDUCE               per device; on the shard axis the per-device partials are all-reduced (every device
                       combines its partial with copies of the others'), and the result is replicated
  movement             per device with local shapes where the shard boundary survives (the axis rules in
                       ir/props.py); otherwise on a gathered, replicated copy
  INDEX(table, idx)    rows of the table by index: per device on its block of the table's later dims (all the
                       indices), or on a whole table (its own block of the indices)
  REPLICATED(x, axes)  x's dim a has n entries, one per device: each device's entry is now the whole tensor
  STORE, AFTER         assign per device (the value localized to the target's axis)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from unigrad.dtype import dtypes
from unigrad.ir.args import LoadArg
from unigrad.ir.ops import GroupOp, Ops
from unigrad.ir.uop import UOp

Pieces = tuple[UOp, ...]


class MultiError(RuntimeError):
    """An op on a multi-device tensor that has no per-device form."""


def is_multi(device: Any) -> bool:
    return isinstance(device, tuple)


def local_shape(shape: tuple, axis: int | None, n: int) -> tuple:
    """A piece's shape: the global shape with dim `axis` split n ways."""
    if axis is None:
        return shape
    return tuple(s // n if i == axis else s for i, s in enumerate(shape))


def _shrink(u: UOp, begin: tuple, shape: tuple) -> UOp:
    if tuple(shape) == u.shape:
        return u
    return UOp(Ops.SHRINK, (u, UOp.shape_src(tuple(begin)), UOp.shape_src(tuple(shape))))


def block(u: UOp, axis: int, i: int, n: int) -> UOp:
    """Block i of n along `axis` of a (global-shaped) node."""
    k = u.shape[axis] // n
    begin = tuple(i * k if d == axis else 0 for d in range(len(u.shape)))
    return _shrink(u, begin, tuple(k if d == axis else s for d, s in enumerate(u.shape)))


def concat(pieces: Pieces, axis: int) -> UOp:
    """The pieces (equal shapes, one device) joined along `axis`: each padded into place, merged with WHERE (a sum
    of the padded pieces would turn -0.0 into 0.0)."""
    shape = pieces[0].shape
    k, n = shape[axis], len(pieces)
    full = tuple(s * n if d == axis else s for d, s in enumerate(shape))
    true = UOp.const(dtypes.bool, True).reshape_to((1,) * len(shape))
    true = UOp(Ops.EXPAND, (true, UOp.shape_src(shape))) if shape else true
    out = None
    for i, p in enumerate(pieces):
        begin = UOp.shape_src(tuple(i * k if d == axis else 0 for d in range(len(shape))))
        placed = UOp(Ops.PAD, (p, begin, UOp.shape_src(full)))
        if out is None:
            out = placed
        else:
            out = UOp(Ops.PAD, (true, begin, UOp.shape_src(full))).where(placed, out)
    assert out is not None
    return out


def _copy(u: UOp, device: str) -> UOp:
    return u if u.device == device else UOp(Ops.LOAD, (u,), LoadArg(device))


class MultiLowering:
    """Lowers one set of roots; memoized per node (a node shared by several roots is lowered once)."""

    def __init__(self, parts: Mapping[UOp, Pieces]) -> None:
        self.parts = parts
        self._pieces: dict[UOp, Pieces] = {}
        self._single: dict[UOp, UOp] = {}
        self._gathered: dict[UOp, Pieces] = {}

    # ---------------------------------------------------------------- entry points
    def single(self, u: UOp) -> UOp:
        """A node on one device (or none) with its multi-device sources lowered."""
        if (done := self._single.get(u)) is not None:
            return done
        for v in u.toposort(gate=lambda v: v not in self._single and not is_multi(v.device)):
            if v in self._single or is_multi(v.device):
                continue
            self._single[v] = self._rebuild_single(v)
        return self._single[u]

    def pieces(self, u: UOp, devices: tuple[str, ...]) -> Pieces:
        """Device i's piece of node `u` for each device of `devices` (u's own tuple device, or none)."""
        if not is_multi(u.device):  # a constant's graph: the same on every device
            return (self.single(u),) * len(devices)
        if (done := self._pieces.get(u)) is not None:
            return done
        # one-device and device-less sources are lowered when a rule asks for them (single): not walked here
        for v in u.toposort(gate=lambda v: v not in self._pieces and is_multi(v.device)):
            if v in self._pieces or not is_multi(v.device):
                continue
            self._pieces[v] = self._lower(v)
        return self._pieces[u]

    # ---------------------------------------------------------------- one-device nodes
    def _rebuild_single(self, u: UOp) -> UOp:
        srcs = []
        for s in u.src:
            if is_multi(s.device):
                if u.op is not Ops.LOAD or u.arg is None or u.arg.device is None:
                    raise MultiError(
                        f"{u.op.name}: a source is on devices {s.device} but the result is on {u.device}: "
                        "move it with .to(device) first"
                    )
                srcs.append(self.gather(s, u.arg.device))
            else:
                srcs.append(self._single[s])
        if (
            u.op is Ops.LOAD
            and srcs[0].op is Ops.LOAD
            and srcs[0].arg.device == u.arg.device
            and is_multi(u.src[0].device)
        ):
            return srcs[0]  # the gather already copied it there
        return u if all(a is b for a, b in zip(srcs, u.src)) else u.replace(src=tuple(srcs))

    def gather(self, x: UOp, device: str) -> UOp:
        """The whole of multi-device node x on one device."""
        ps = self.pieces(x, x.device)
        if x.axis is None:
            k = x.device.index(device) if device in x.device else 0
            return _copy(ps[k], device)
        return concat(tuple(_copy(p, device) for p in ps), x.axis)

    def allgather(self, x: UOp) -> Pieces:
        """The whole of x on every device of its tuple (x's pieces when it is replicated already)."""
        if x.axis is None:
            return self.pieces(x, x.device)
        if (done := self._gathered.get(x)) is None:
            ps = self.pieces(x, x.device)
            done = tuple(concat(tuple(_copy(p, d) for p in ps), x.axis) for d in x.device)
            self._gathered[x] = done
        return done

    def localize(self, s: UOp, axis: int | None, devices: tuple[str, ...]) -> Pieces:
        """Source s as pieces sharded on `axis` over `devices`."""
        n = len(devices)
        if not is_multi(s.device):
            whole = self.single(s)
            return (whole,) * n if axis is None or not s.shape else tuple(block(whole, axis, i, n) for i in range(n))
        if s.device != devices:
            raise MultiError(f"a tensor on {s.device} meets one on {devices}: move it with .to(devices) first")
        if s.axis == axis:
            return self.pieces(s, devices)
        whole = self.allgather(s)
        return whole if axis is None else tuple(block(w, axis, i, n) for i, w in enumerate(whole))

    # ---------------------------------------------------------------- multi-device nodes
    def _lower(self, u: UOp) -> Pieces:
        op, devices = u.op, u.device
        n = len(devices)
        if op is Ops.BUFFER:
            if u not in self.parts:
                raise MultiError(f"BUFFER on {devices} with no per-device parts (slot {u.arg.slot})")
            return self.parts[u]
        if op is Ops.LOAD:
            return self._load(u, devices)
        if op in GroupOp.ALU or op in GroupOp.Marker or op is Ops.STORE:
            axis = u.src[0].axis if op is Ops.STORE else u.axis
            srcs = [self.localize(s, axis, devices) for s in u.src]
            return tuple(u.replace(src=tuple(s[i] for s in srcs)) for i in range(n))
        if op is Ops.AFTER:
            srcs = [
                self.localize(s, u.axis, devices) if s.op is not Ops.STORE else self.pieces(s, devices) for s in u.src
            ]
            return tuple(u.replace(src=tuple(s[i] for s in srcs)) for i in range(n))
        if op is Ops.REDUCE:
            return self._reduce(u, devices)
        if op is Ops.REPLICATED:
            x = u.src[0]
            if x.axis not in u.arg or x.shape[x.axis] != n:
                raise MultiError(
                    f"REPLICATED{u.arg}: expected the shard axis {x.axis} among the axes, with {n} entries "
                    f"(one per device), found shape {x.shape}"
                )
            return self.pieces(x, devices)
        if op in GroupOp.View or op is Ops.BITCAST:
            return self._movement(u, devices)
        if op is Ops.INDEX and len(u.src) == 2:
            table, idx = u.src
            if table.axis:  # split on a later dim than the rows: every device looks up all the rows in its block
                tables, idxs = self.pieces(table, devices), self.localize(idx, None, devices)
            else:  # a whole table on every device (gathered when split on the rows): each looks up its indices
                tables, idxs = self.localize(table, None, devices), self.localize(idx, idx.axis, devices)
            return tuple(u.replace(src=(t, i)) for t, i in zip(tables, idxs))
        raise MultiError(f"{op.name} is not supported on multi-device tensors (on {devices})")

    def _load(self, u: UOp, devices: tuple[str, ...]) -> Pieces:
        x, n = u.src[0], len(devices)
        if u.arg.device is None:  # contiguous()
            return tuple(u.replace(src=(p,)) for p in self.pieces(x, devices))
        if is_multi(x.device) and x.device == devices:  # reshard on the same devices: no trip through one device
            ps = self.pieces(x, devices)
            if x.axis == 0:
                return ps  # already sharded so
            if x.axis is None:
                return tuple(block(p, 0, i, n) for i, p in enumerate(ps))  # each device keeps its block
            if x.shape[0] % n == 0:  # all-to-all: block i of dim 0 gathered from every device's piece onto D[i]
                return tuple(
                    concat(tuple(_copy(block(p, 0, i, n), d) for p in ps), x.axis) for i, d in enumerate(devices)
                )
        whole = self.gather(x, x.device[0]) if is_multi(x.device) else self.single(x)
        if not whole.shape or whole.shape[0] % n:
            raise MultiError(f"copy to {devices}: dim 0 of shape {whole.shape} does not split into {n} equal blocks")
        return tuple(_copy(block(whole, 0, i, n), d) for i, d in enumerate(devices))

    def _reduce(self, u: UOp, devices: tuple[str, ...]) -> Pieces:
        x = u.src[0]
        partial = tuple(u.replace(src=(p,)) for p in self.localize(x, x.axis, devices))
        if x.axis is None or x.axis not in u.arg.axes:
            return partial
        # all-reduce: each device combines its partial with the others' copied to it, in device order (every
        # device adds the same values in the same order: the copies are bit-identical)
        out = []
        for d in devices:
            acc = None
            for p in partial:
                p = _copy(p, d)
                acc = p if acc is None else acc.alu(u.arg.op, p)
            out.append(acc)
        return tuple(out)

    def _movement(self, u: UOp, devices: tuple[str, ...]) -> Pieces:
        x, n = u.src[0], len(devices)
        a = u.axis
        if x.axis is not None and a is None:  # the shard boundary does not survive: move a gathered copy
            srcs = self.allgather(x)
            return tuple(u.replace(src=(s, *u.src[1:])) for s in srcs)
        srcs = self.pieces(x, devices)
        if x.axis is None or u.op in (Ops.PERMUTE, Ops.FLIP, Ops.BITCAST):
            return tuple(u.replace(src=(s, *u.src[1:])) for s in srcs)
        shape = UOp.shape_src(local_shape(u.shape, a, n))
        if u.op in (Ops.RESHAPE, Ops.EXPAND):
            return tuple(u.replace(src=(s, shape)) for s in srcs)
        return tuple(u.replace(src=(s, u.src[1], shape)) for s in srcs)  # PAD/SHRINK off the shard axis


def shard(u: UOp, devices: tuple[str, ...], axis: int | None) -> UOp:
    """u (any device) as a tensor on `devices` sharded on `axis`, from the spec's collectives: a copy to a tuple
    device splits dim 0; a replicated tensor is n stacked copies, each device's entry made the whole (REPLICATED)."""
    n, shape = len(devices), u.shape
    if axis is None:
        rows = UOp(Ops.EXPAND, (u.reshape_to((1, *shape)), UOp.shape_src((n, *shape))))
        copied = UOp(Ops.LOAD, (rows,), LoadArg(devices))
        return UOp(Ops.REPLICATED, (copied,), (0,)).reshape_to(shape)
    if axis == 0:
        return UOp(Ops.LOAD, (u,), LoadArg(devices))
    order = (axis, *range(axis), *range(axis + 1, len(shape)))
    front = UOp(Ops.LOAD, (UOp(Ops.PERMUTE, (u,), order),), LoadArg(devices))
    return UOp(Ops.PERMUTE, (front,), tuple(order.index(i) for i in range(len(shape))))
