"""ir/persist.py: values holding UOp graphs pickled as one flat table of nodes, and read back as the same nodes."""

import pickle
import sys

import pytest

from unigrad.dtype import dtypes
from unigrad.helpers import record
from unigrad.ir.args import BufferArg, AddrSpace
from unigrad.ir.ops import Ops
from unigrad.ir.persist import UNPICKLABLE, dumps, loads
from unigrad.ir.uop import UOp


@record(frozen=True)
class Holder:
    """A record as the caches store them: UOps in fields, in a tuple and as dict keys."""

    root: UOp
    parts: tuple[UOp, ...]
    slots: dict
    note: str


def chain(n: int, seed: int) -> UOp:
    u = UOp.variable(f"persist{seed}", 0, 10)
    for i in range(n):
        u = UOp(Ops.ADD, (u, UOp.index_const(i % 7 + seed)))
    return u


def table_rows(data: bytes) -> list:
    """The first pickle in an encoding: the node table."""
    import io

    return pickle.load(io.BytesIO(data))


def test_round_trip_gives_the_live_nodes():
    a = chain(30, 1)
    b = UOp(Ops.MUL, (a, UOp.index_const(3)))
    h = Holder(b, (a, b, UOp.index_const(5)), {a: 0, b: 1}, "x")
    back = loads(dumps(h))
    assert back == h
    assert back.root is b and back.parts[0] is a  # hash-consing: the very nodes this process holds
    assert back.slots[a] == 0 and back.slots[b] == 1


def test_rebuilt_in_a_process_where_the_nodes_are_gone():
    data = dumps([chain(12, 2)])
    text = repr(chain(12, 2))
    import gc

    gc.collect()  # the chain is freed: loading builds its nodes anew
    (back,) = loads(data)
    assert repr(back) == text
    assert back.dtype is dtypes.index and back.vmin == sum(i % 7 + 2 for i in range(12))


def test_shared_nodes_written_once():
    a = chain(50, 3)
    both = [UOp(Ops.ADD, (a, a)), UOp(Ops.MUL, (a, a)), a]
    rows = table_rows(dumps(both))
    assert len(rows) == len(UOp(Ops.SINK, tuple(both)).toposort()) - 1  # every node once, no wrapper
    assert len({(r[0], r[1], repr(r[2])) for r in rows}) == len(rows)


def test_deeper_than_the_recursion_limit():
    deep = chain(sys.getrecursionlimit() * 3, 4)
    with pytest.raises(RecursionError):
        pickle.dumps(deep)  # UOp.__reduce__ recurses once per level
    back = loads(dumps(deep))
    assert back is deep


def test_values_without_uops_and_empty():
    assert loads(dumps({"a": (1, 2.5, None)})) == {"a": (1, 2.5, None)}
    assert loads(dumps(())) == ()


def test_buffer_args_round_trip():
    buf = UOp(Ops.BUFFER, (UOp.shape_src((4,)),), BufferArg(10**9 + 7, dtypes.float32, "CPU", AddrSpace.GLOBAL))
    assert loads(dumps(buf)) is buf


def test_unpicklable_arg_raises_one_of_the_named_errors():
    odd = UOp(Ops.CUSTOM, (), lambda: 1)
    with pytest.raises(UNPICKLABLE):
        dumps([odd])
