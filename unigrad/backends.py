"""torch.backends' switches, so set-up lines (`torch.backends.cudnn.benchmark = True`, `torch.backends.mps.
is_available()`) run: unigrad has no cuDNN, MPS or CUDA backend, each reports unavailable and its flags are kept
but change nothing (unigrad's CPU kernels are chosen by its own heuristics or BEAM)."""

from __future__ import annotations


class _Backend:
    """A backend unigrad lacks: is_available()/is_built() are False; flags set on it are remembered."""

    def __init__(self, **flags: object) -> None:
        self.__dict__.update(flags)

    def is_available(self) -> bool:
        return False

    def is_built(self) -> bool:
        return False


cudnn = _Backend(enabled=True, benchmark=False, deterministic=False, allow_tf32=True)
mps = _Backend()
cuda = _Backend(matmul=_Backend(allow_tf32=False, allow_fp16_reduced_precision_reduction=True))
mkldnn = _Backend(enabled=True)
