"""torch.cuda.amp: the CUDA spellings of GradScaler and autocast. Without CUDA both warn and disable themselves, as
torch's do: GradScaler().scale(loss) is loss and step(opt) is opt.step(); autocast() runs the region as written."""

from typing import Any

from unigrad import amp
from unigrad.dtype import dtypes

__all__ = ["GradScaler", "autocast"]


class GradScaler(amp.GradScaler):
    """torch.cuda.amp.GradScaler(init_scale, growth_factor, backoff_factor, growth_interval, enabled): a CUDA
    scaler, disabled (with torch's warning) as unigrad has no CUDA device."""

    def __init__(
        self,
        init_scale: float = 2.0**16,
        growth_factor: float = 2.0,
        backoff_factor: float = 0.5,
        growth_interval: int = 2000,
        enabled: bool = True,
    ) -> None:
        super().__init__("cuda", init_scale, growth_factor, backoff_factor, growth_interval, enabled)


class autocast(amp.autocast):
    """torch.cuda.amp.autocast(enabled=True, dtype=float16, cache_enabled=True): CUDA autocast, disabled."""

    def __init__(self, enabled: bool = True, dtype: Any = dtypes.float16, cache_enabled: bool = True) -> None:
        super().__init__("cuda", dtype, enabled, cache_enabled)
