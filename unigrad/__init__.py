"""unigrad: one UOp dialect from the Tensor API down to generated kernels.

Besides the core API (Tensor, dtypes, Device, ...), the package carries torch's top-level functions and dtype names
(unigrad/api/torch_functions.py), so `import unigrad as torch` style code runs: unigrad.zeros, unigrad.cat,
unigrad.float32, unigrad.no_grad, ... Note that `unigrad.tensor` is then the function torch.tensor, not the
submodule unigrad/tensor.py; `from unigrad.tensor import Tensor` still imports from the submodule.
"""

import gc as _gc

from unigrad.config import Context
from unigrad.dtype import DType, dtypes
from unigrad.helpers import GlobalCounters
from unigrad.ir.uop import UOp
from unigrad.function import function
from unigrad.jit import TinyJit
from unigrad.runtime import Device
from unigrad.tensor import Tensor
from unigrad.api import torch_functions
from unigrad.api.torch_functions import no_grad  # unigrad.tensor's no_grad, usable bare as a decorator
from unigrad.api.torch_functions import *  # noqa: F403 - torch's top-level names, listed in its __all__
from unigrad import autograd, backends, cuda, testing, utils
from unigrad.api.torch_env import *  # noqa: F403 - torch.device, Size, finfo, set_num_threads, ...
from unigrad.api import torch_env
from unigrad.serialization import load, save
from unigrad.api.printing import set_printoptions
from unigrad.utils.data import Generator
from unigrad.api import linalg  # torch.linalg: unigrad.linalg.inv, ...
from unigrad.api.linalg import TORCH_NAMES as _LINALG_NAMES


def __getattr__(name: str) -> object:
    """`unigrad.nn` and `unigrad.optim` without importing them (as torch.nn, torch.optim), and torch's top-level
    spellings of nn.functional (unigrad/torch_nn_functions.py), imported on first use: startup stays small."""
    import importlib

    if name in ("nn", "optim"):
        return importlib.import_module(f"unigrad.{name}")
    if name in torch_functions.NN_FUNCTIONS:  # torch.conv2d, torch.layer_norm, ...: they call nn.functional
        return getattr(importlib.import_module("unigrad.torch_nn_functions"), name)
    raise AttributeError(f"module 'unigrad' has no attribute {name!r}")


def Variable(name: str, vmin: int, vmax: int, dtype: DType = dtypes.index) -> UOp:
    """A named symbolic integer in [vmin, vmax]; `.bind(value)` gives it a value. `dtype` (tinygrad's): the int dtype
    it has as a value (index, the default, is what sizes take; a Tensor of it is int64)."""
    if not dtype.is_int:
        raise TypeError(f"Variable {name!r}: dtype must be an int dtype, got {dtype}")
    return UOp.variable(name, vmin, vmax, dtype)


# torch's dtype names (they shadow the builtins bool, int and float in this module only)
float32 = float = dtypes.float32
float16 = half = dtypes.float16
bfloat16 = dtypes.bfloat16
float64 = double = dtypes.float64
int8 = dtypes.int8
int16 = short = dtypes.int16
int32 = int = dtypes.int32
int64 = long = dtypes.int64
uint8 = dtypes.uint8
uint16 = dtypes.uint16
uint32 = dtypes.uint32
uint64 = dtypes.uint64
bool = dtypes.bool
DTYPE_NAMES = ["float32", "float", "float16", "half", "bfloat16", "float64", "double", "int8", "int16", "short"]
DTYPE_NAMES += ["int32", "int", "int64", "long", "uint8", "uint16", "uint32", "uint64", "bool"]

__all__ = [
    "Tensor",
    "dtypes",
    "Device",
    "Variable",
    "Context",
    "GlobalCounters",
    "UOp",
    "no_grad",
    "TinyJit",
    "function",
    "Generator",
    "utils",
    "cuda",
    "autograd",
    "backends",
    "testing",
    "save",
    "load",
    "set_printoptions",
]
__all__ += torch_env.__all__
__all__ += [name for name in torch_functions.__all__ if name not in __all__] + DTYPE_NAMES
__all__ += [name for name in torch_functions.NN_FUNCTIONS if name not in __all__]

# torch's top-level linear algebra (torch.det, torch.inverse, torch.svd in its old (U, S, V) form, ...)
globals().update(_LINALG_NAMES)
__all__ += ["linalg", *_LINALG_NAMES]

# What the import built (rule tables and their compiled matchers, dtypes, module objects) lives as long as the
# process: frozen, it is left out of every later full collection and of the collections at interpreter exit
# (about 30 ms of a short script's exit).
_gc.freeze()
