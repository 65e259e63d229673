"""Run a PyTorch program with `torch` resolving to unigrad's facade: `python facade.py program.py [args...]`.

`torch` is unigrad.torch and every `torch.X` (torch.nn.functional, torch.utils.data.dataloader, ...) the module
the facade gives for `unigrad.torch.X`; the program itself runs unchanged, as `__main__`.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import runpy
import sys
from types import ModuleType

import unigrad.torch


class _Loader(importlib.abc.Loader):
    """Gives `torch.X` as the already imported facade module (one module object, two names)."""

    def __init__(self, real: ModuleType) -> None:
        self.real, self.real_spec = real, real.__spec__

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        return self.real

    def exec_module(self, module: ModuleType) -> None:
        module.__spec__ = self.real_spec  # the import system stamped torch.X's spec on it: give its own back


class _TorchFinder(importlib.abc.MetaPathFinder):
    """`import torch.X` finds `unigrad.torch.X`."""

    def find_spec(self, fullname: str, path: object, target: object = None) -> importlib.machinery.ModuleSpec | None:
        if not fullname.startswith("torch."):
            return None
        try:
            real = importlib.import_module("unigrad." + fullname)
        except ModuleNotFoundError:
            return None
        return importlib.machinery.ModuleSpec(fullname, _Loader(real), is_package=hasattr(real, "__path__"))


def install() -> None:
    """Make `import torch` (and its submodules) resolve to the facade in this process."""
    sys.modules["torch"] = unigrad.torch
    sys.meta_path.insert(0, _TorchFinder())


if __name__ == "__main__":
    install()
    program = sys.argv[1]
    sys.argv = sys.argv[1:]
    runpy.run_path(program, run_name="__main__")
