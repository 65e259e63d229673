"""unigrad: one UOp dialect from the Tensor API down to generated kernels."""

from unigrad.config import Context
from unigrad.dtype import dtypes
from unigrad.ir.uop import UOp
from unigrad.function import function
from unigrad.jit import TinyJit
from unigrad.runtime import Device
from unigrad.tensor import Tensor, no_grad


def Variable(name: str, vmin: int, vmax: int) -> UOp:
    """A named symbolic integer in [vmin, vmax]; `.bind(value)` gives it a value."""
    return UOp.variable(name, vmin, vmax)


__all__ = ["Tensor", "dtypes", "Device", "Variable", "Context", "UOp", "no_grad", "TinyJit", "function"]
