"""The torch facade: `import unigrad.torch as torch` runs a PyTorch program on unigrad with torch's behaviour.

It is the same package as `unigrad` (the same Tensor, the same functions, `torch.nn` is unigrad.nn, `torch.optim`
unigrad.optim, `torch.utils.data` unigrad.utils.data, ...) in torch's flavor: importing it switches the process to
the torch flavor (unigrad/flavor.py lists what that changes: int64 integers, gradients only where asked for,
torch's error types, values fixed when a tensor is made). `import unigrad` alone keeps tinygrad's semantics where
the two libraries differ. `from unigrad.torch.nn import functional as F` and other dotted imports resolve to the
unigrad module of the same path.
"""

import builtins
import importlib
import importlib.abc
import importlib.machinery
import sys
from types import ModuleType

import unigrad
from unigrad import *  # noqa: F403 - torch's names are unigrad's
from unigrad import flavor as _flavor

_PREFIX = __name__ + "."
_REAL = "unigrad."


class _AliasLoader(importlib.abc.Loader):
    """Loads `unigrad.torch.X` as the already imported module `unigrad.X` (one module object, two names)."""

    def __init__(self, real: ModuleType) -> None:
        self.real, self.real_spec = real, real.__spec__

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        return self.real

    def exec_module(self, module: ModuleType) -> None:
        module.__spec__ = self.real_spec  # the import system stamped the alias's spec on it: give its own back


class _AliasFinder(importlib.abc.MetaPathFinder):
    """`import unigrad.torch.nn.functional` finds unigrad.nn.functional."""

    def find_spec(self, fullname: str, path: object, target: object = None) -> importlib.machinery.ModuleSpec | None:
        if not fullname.startswith(_PREFIX):
            return None
        try:
            real = importlib.import_module(_REAL + fullname[len(_PREFIX) :])
        except ModuleNotFoundError:
            return None
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(real), is_package=hasattr(real, "__path__"))


if not builtins.any(isinstance(f, _AliasFinder) for f in sys.meta_path):
    sys.meta_path.insert(0, _AliasFinder())

_flavor.set_flavor("torch")

__all__ = list(unigrad.__all__)


def __getattr__(name: str) -> object:
    """torch.nn, torch.optim, ... : the unigrad module of the same name, imported on first use."""
    try:
        return importlib.import_module(_PREFIX + name)
    except ModuleNotFoundError:
        raise AttributeError(f"module 'unigrad.torch' has no attribute {name!r}") from None
