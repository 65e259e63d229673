"""torch.nn.parallel: DataParallel on one process, and the place of DistributedDataParallel.

DataParallel(module) wraps a module and forwards to it, as torch's does on a machine without CUDA devices: the
wrapped module is `.module` (so state-dict keys gain torch's `module.` prefix), and a forward runs the whole batch
on the module's device; unigrad's kernels already use every core. DistributedDataParallel needs several processes
(issue 35, unigrad.distributed on MPI): it is importable, and making one raises until that exists.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from unigrad.nn.module import Module

__all__ = ["DataParallel", "DistributedDataParallel"]


class DataParallel(Module):
    """torch.nn.DataParallel without CUDA devices: `DataParallel(model)(x)` is `model(x)`. device_ids and
    output_device are kept and unused (torch ignores them too when it has no CUDA device); dim is the batch
    dimension torch would scatter along."""

    def __init__(
        self, module: Module, device_ids: Sequence[Any] | None = None, output_device: Any = None, dim: int = 0
    ) -> None:
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"DataParallel: expected an nn.Module to wrap, got {type(module).__name__}")
        self.module, self.dim = module, dim
        self.device_ids, self.output_device = list(device_ids or []), output_device

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        return self.module(*inputs, **kwargs)


class DistributedDataParallel(Module):
    """torch.nn.parallel.DistributedDataParallel: not available yet (unigrad.distributed, on MPI, is issue 35)."""

    def __init__(self, module: Module, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError(
            "DistributedDataParallel: unigrad has no distributed training yet (torch.distributed on MPI is issue 35); "
            "train on one process, or wrap the model in nn.DataParallel, which forwards to it"
        )
