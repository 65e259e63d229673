"""Multi-device buffers and realize: tensors held by an n-tuple of devices.

A realized multi-device tensor is a view of a BUFFER on the tuple D (the spec's "fully sized buffer across
multiple devices": shape (n * size,), axis 0). The BUFFER node holds no memory itself: `parts` gives its n
per-device UOps, each a flat (size,) view of a one-device buffer. `global_view` turns it into the tensor's
shape and shard axis with movement ops (and REPLICATED when every device holds the whole tensor), so the
multi lowering (pipeline/multi.py) reads each device's part back through the same derived-property rules.

schedule(fn, uops, device): lower the tuple-device roots to per-device pieces, kernelize or realize all of
them as one schedule (`fn`), and give each multi-device root a new tuple BUFFER over its pieces' buffers.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable

from unigrad.dtype import DType
from unigrad.ir.args import AddrSpace, BufferArg, LoadArg
from unigrad.ir.ops import Ops
from unigrad.ir.uop import UOp
from unigrad.pipeline.multi import MultiLowering, is_multi, local_shape
from unigrad.pipeline.rangeify import view_base
from unigrad.runtime import realize as rt

parts: weakref.WeakKeyDictionary[UOp, tuple[UOp, ...]] = weakref.WeakKeyDictionary()
used = False  # set by the first multi-device buffer or copy: graphs are walked for tuple devices from then on


def mark_used() -> None:
    global used
    used = True


def new_multi_buffer(pieces: tuple[UOp, ...], devices: tuple[str, ...]) -> UOp:
    """A BUFFER on `devices` whose parts are `pieces` (one flat (size,) UOp per device, equal sizes)."""
    size, dtype = pieces[0].shape[0], pieces[0].dtype
    shape = UOp.shape_src((len(devices) * size,))
    buf = UOp(Ops.BUFFER, (shape,), BufferArg(next(rt._buffer_ids), dtype, devices, AddrSpace.GLOBAL))
    parts[buf] = pieces
    mark_used()
    return buf


def global_view(buf: UOp, shape: tuple[int, ...], axis: int | None) -> UOp:
    """The tensor of `shape` sharded on `axis` (None: replicated) that tuple BUFFER `buf` holds."""
    n = len(buf.device)
    if axis is None:  # (n, *shape): entry i on device i; REPLICATED makes each device's entry the whole tensor
        rows = buf.reshape_to((n, *shape))
        return UOp(Ops.REPLICATED, (rows,), (0,)).reshape_to(shape)
    loc = local_shape(shape, axis, n)
    order = (*range(1, axis + 1), 0, *range(axis + 1, len(loc) + 1))  # the device dim just before dim `axis`
    return UOp(Ops.PERMUTE, (buf.reshape_to((n, *loc)),), order).reshape_to(shape)


def empty(shape: tuple[int, ...], dtype: DType, devices: tuple[str, ...], axis: int | None = None) -> UOp:
    """An uninitialized tensor of `shape` on `devices`, sharded on `axis` (None: a whole copy on each)."""
    size = math.prod(local_shape(shape, axis, len(devices)))
    pieces = tuple(rt.new_buffer(size, dtype, d) for d in devices)
    return global_view(new_multi_buffer(pieces, devices), shape, axis)


def _moves_ones_only(u: UOp) -> bool:
    """A PERMUTE that keeps the order of the dims larger than 1 (row-major order unchanged)."""
    big = [i for i in u.arg if u.src[0].shape[i] != 1]
    return big == sorted(big)


def _strip_views(u: UOp, through_after: bool) -> UOp:
    """u without the views that keep row-major order (reshapes, permutes of size-1 dims)."""
    while u.op is Ops.RESHAPE or (u.op is Ops.PERMUTE and _moves_ones_only(u)) or (through_after and u.op is Ops.AFTER):
        u = u.src[0]
    return u


def _plain(u: UOp, numel: int) -> bool:
    """A view of a whole one-device buffer in row-major order (a part as it is)."""
    base = _strip_views(u, through_after=True)
    return base.op is Ops.BUFFER and base.shape == (numel,)


def _part(u: UOp) -> UOp:
    """A plain output as a part: its buffer (or the buffer after its kernel), without the views over it (a view
    chain kept here would grow by one view per step of a training loop)."""
    return _strip_views(u, through_after=False)


def schedule(fn: Callable[[list[UOp], str], list[UOp]], uops: list[UOp], device: str | tuple[str, ...]) -> list[UOp]:
    """Kernelize or realize (`fn`) roots of which some are on tuple devices; returns their UOps as `fn` does,
    a multi-device root as the global view of a new tuple BUFFER."""
    lowering = MultiLowering(parts)
    default = device[0] if isinstance(device, tuple) else device
    flat: list[UOp] = []
    piece_at: list[int] = []  # where the pieces sit in `flat`
    roots: list[tuple[UOp, tuple[str, ...]] | None] = []  # each multi-device root with its devices
    for u in uops:
        # a root with no device (a constant's graph) belongs to the devices it was asked for
        devices = u.device if is_multi(u.device) else device if u.device is None and is_multi(device) else None
        if devices is None:
            roots.append(None)
            flat.append(lowering.single(u))
            continue
        if view_base(u).op is Ops.BUFFER:  # a view of a tuple BUFFER: realized already, kept as it is
            roots.append((u, ()))
            continue
        roots.append((u, devices))
        piece_at += range(len(flat), len(flat) + len(devices))
        pieces = lowering.pieces(u, devices)
        flat += [p if p.device is not None else UOp(Ops.LOAD, (p,), LoadArg(d)) for p, d in zip(pieces, devices)]
    outs = fn(flat, default)
    # a multi-device root's pieces become its parts: each must be a whole buffer in row-major order
    again = [i for i in piece_at if not _plain(outs[i], math.prod(outs[i].shape))]
    if again:
        for i, o in zip(again, fn([UOp(Ops.LOAD, (outs[i],), LoadArg()) for i in again], default)):
            outs[i] = o
    result = []
    pos = 0
    for root in roots:
        if root is None:
            result.append(outs[pos])
            pos += 1
            continue
        u, devices = root
        if not devices:
            result.append(u)
            continue
        pieces = tuple(_part(o) for o in outs[pos : pos + len(devices)])
        axis = u.axis if is_multi(u.device) else None
        result.append(global_view(new_multi_buffer(pieces, devices), u.shape, axis))
        pos += len(devices)
    return result
