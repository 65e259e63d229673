"""The verifier: malformed graphs raise SpecError naming the op, the operand, what was expected and found."""

import numpy as np
import pytest

from unigrad import Context, Tensor, dtypes
from unigrad.ir.args import ReduceArg
from unigrad.ir.ops import Ops
from unigrad.ir.spec import (
    SpecError,
    verify_expanded,
    verify_function,
    verify_kernel,
    verify_linear,
    verify_tensor_graph,
    verify_tensor_op,
)
from unigrad.ir.uop import UOp
from unigrad.pipeline.callify import callify
from unigrad.pipeline.expand import expand
from unigrad.pipeline.linearize import linearize
from unigrad.runtime import realize as rt


def buf(*shape: int, dtype=dtypes.float32) -> UOp:
    return Tensor.empty(*shape, dtype=dtype).uop


def S(*shape: int) -> UOp:
    return UOp.shape_src(shape)


@pytest.mark.parametrize(
    "make, words",
    [
        (lambda: UOp(Ops.ADD, (buf(3),)), ["ADD", "number of sources", "expected 2", "found 1"]),
        (lambda: UOp(Ops.ADD, (buf(3), buf(4))), ["ADD", "shape of src[1]", "(3,)", "(4,)"]),
        (lambda: UOp(Ops.MUL, (buf(3), buf(3, dtype=dtypes.int32))), ["MUL", "dtype of src[1]", "float32", "int32"]),
        (lambda: UOp(Ops.WHERE, (buf(3), buf(3), buf(3))), ["WHERE", "condition", "bool", "float32"]),
        (lambda: UOp(Ops.AND, (buf(3), buf(3))), ["AND", "int or bool", "float32"]),
        (lambda: UOp(Ops.EXPAND, (buf(2, 3), S(4, 3))), ["EXPAND", "axis 0", "size 1", "found 2"]),
        (lambda: UOp(Ops.EXPAND, (buf(3), S(2, 3))), ["EXPAND", "number of dims", "1", "2"]),
        (lambda: UOp(Ops.RESHAPE, (buf(2, 3), S(5))), ["RESHAPE", "element count", "6", "5"]),
        (lambda: UOp(Ops.BITCAST, (buf(4),), dtypes.int16), ["BITCAST", "itemsize 4", "int16"]),
        (lambda: UOp(Ops.PERMUTE, (buf(2, 3),), (0, 0)), ["PERMUTE", "permutation", "(0, 0)"]),
        (lambda: UOp(Ops.FLIP, (buf(2, 3),), (True,)), ["FLIP", "2 bools"]),
        (lambda: UOp(Ops.PAD, (buf(3), S(2), S(4))), ["PAD", "axis 0", "before=2"]),
        (lambda: UOp(Ops.SHRINK, (buf(3), S(2), S(2))), ["SHRINK", "axis 0", "offset=2"]),
        (lambda: UOp(Ops.REDUCE, (buf(3),), ReduceArg(Ops.AND, (0,))), ["REDUCE", "ADD, MAX or MUL"]),
        (lambda: UOp(Ops.REDUCE, (buf(3),), ReduceArg(Ops.ADD, (1,))), ["REDUCE", "axes", "[0, 1)", "(1,)"]),
        (lambda: UOp(Ops.CONST, (), 3), ["CONST", "ConstArg"]),
    ],
)
def test_malformed_tensor_ops(make, words):
    u = make()
    with pytest.raises(SpecError) as e:
        verify_tensor_op(u)
    for w in words:
        assert w in str(e.value), (w, str(e.value))
    with pytest.raises(SpecError):
        verify_tensor_graph(UOp(Ops.SINK, (u,)))


def test_wellformed_graph_passes():
    a, b = Tensor.ones(3, 4), Tensor.ones(4, 5)
    verify_tensor_graph(UOp(Ops.SINK, ((a @ b + 1).pad(((1, 0), (0, 2))).flip(0).uop,)))


def _kernel_of(t: Tensor) -> UOp:
    (u,) = rt.kernelize([t.uop], "CPU")
    call = next(x for x in u.toposort() if x.op is Ops.CALL)
    return call.src[0]


def test_lowered_stages_verify():
    a = Tensor(np.arange(12, dtype=np.float32).reshape(3, 4)).realize()
    ast = _kernel_of((a.permute(1, 0) * 2).sum(1).pad(((1, 1),)))
    verify_kernel(ast)
    expanded = expand(ast)
    verify_expanded(expanded)
    verify_linear(linearize(expanded))
    with pytest.raises(SpecError, match="REDUCE: not allowed after expand"):
        verify_expanded(ast)


def test_kernel_rejects_movement_ops():
    bad = UOp(Ops.SINK, (UOp(Ops.STORE, (buf(3), UOp(Ops.RESHAPE, (buf(3), S(3))))),))
    with pytest.raises(SpecError, match="not allowed after rangeify"):
        verify_kernel(bad)


def test_linear_rejects_bad_order():
    r = UOp.range(4, 0)
    x = r + 1
    with pytest.raises(SpecError, match="used before it is listed"):
        verify_linear(UOp(Ops.LINEAR, (UOp.index_const(4), x, r)))
    with pytest.raises(SpecError, match="never closed"):
        verify_linear(UOp(Ops.LINEAR, (UOp.index_const(4), r)))


def test_callified_function_verifies():
    a = Tensor.ones(2, 3).realize()
    fn = callify(UOp(Ops.SINK, ((a * 2 + a).sum(0).uop,)))
    verify_function(fn)
    with pytest.raises(SpecError, match="buffers must be PARAM placeholders"):
        verify_function(fn.replace(src=(UOp(Ops.TUPLE, (a.uop,)),) + fn.src[1:]))
    with pytest.raises(SpecError, match="expected FUNCTION"):
        verify_function(fn.src[0])


def test_spec_flag_checks_every_stage():
    with Context(SPEC=1):
        a = Tensor([[1.0, 2.0], [3.0, 4.0]])
        np.testing.assert_allclose(((a @ a).sum(0) + a.max(1)).numpy(), [24.0, 36.0])
