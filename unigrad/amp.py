"""torch.amp: GradScaler and autocast.

unigrad has no automatic mixed precision (autocast is unigrad.autocast: it warns and runs the region as written where
torch disables itself, as on a machine without CUDA). GradScaler follows torch's: for a device without CUDA
(torch's default device "cuda") torch warns and disables it, and so does unigrad: scale(loss) is loss, step(opt) is
opt.step(), update() does nothing. GradScaler("cpu") is enabled, as torch's: the loss is multiplied by the scale,
unscale_ divides the gradients by it and looks for inf/nan, step skips the optimizer's step when it found one, and
update() halves the scale after an overflow and doubles it after growth_interval steps without one.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from typing import Any

from unigrad.api.torch_env import autocast
from unigrad.dtype import dtypes
from unigrad.tensor import Tensor

__all__ = ["GradScaler", "autocast"]

_READY, _UNSCALED, _STEPPED = "ready", "unscaled", "stepped"  # an optimizer's stage between two update()s


class GradScaler:
    """torch.amp.GradScaler(device="cuda", init_scale=2**16, growth_factor=2.0, backoff_factor=0.5,
    growth_interval=2000, enabled=True). The scale is a float32 value, as torch keeps it."""

    def __init__(
        self,
        device: str = "cuda",
        init_scale: float = 2.0**16,
        growth_factor: float = 2.0,
        backoff_factor: float = 0.5,
        growth_interval: int = 2000,
        enabled: bool = True,
    ) -> None:
        self.device = str(getattr(device, "type", device)).lower()
        if enabled and self.device == "cuda":
            warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.", stacklevel=2)
            enabled = False
        self._enabled = enabled
        if not enabled:
            return
        if growth_factor <= 1.0:
            raise ValueError("The growth factor must be > 1.0.")
        if backoff_factor >= 1.0:
            raise ValueError("The backoff factor must be < 1.0.")
        self._scale, self._growth_factor, self._backoff_factor = _float32(init_scale), growth_factor, backoff_factor
        self._growth_interval, self._growth_tracker = growth_interval, 0
        self._stage: dict[int, str] = {}  # by id(optimizer)
        self._found_inf: dict[int, bool] = {}

    def is_enabled(self) -> bool:
        return self._enabled

    def scale(self, outputs: Any) -> Any:
        """outputs (a tensor, or tensors in lists/tuples) times the scale; as they are when disabled."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, Tensor):
            return outputs * Tensor(self._scale, dtype=dtypes.float32, device=outputs.device)
        if isinstance(outputs, Iterable):
            return type(outputs)(self.scale(o) for o in outputs)  # type: ignore[call-arg]
        raise ValueError("outputs must be a Tensor or an iterable of Tensors")

    def unscale_(self, optimizer: Any) -> None:
        """Divide the gradients of optimizer's parameters by the scale (once per step) and note whether any is
        inf or nan."""
        if not self._enabled:
            return
        stage = self._stage.get(id(optimizer), _READY)
        if stage == _UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if stage == _STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        inv = Tensor(1.0 / self._scale, dtype=dtypes.float32)
        bad: list[Tensor] = []
        for group in optimizer.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    p.grad = p.grad * inv.to(p.grad.device).cast(p.grad.dtype)
                    bad.append((~p.grad.isfinite()).any().to(bad[0].device if bad else p.grad.device))
        self._found_inf[id(optimizer)] = bool(Tensor.stack(*bad).any().item()) if bad else False
        self._stage[id(optimizer)] = _UNSCALED

    def step(self, optimizer: Any, *args: Any, **kwargs: Any) -> Any:
        """optimizer.step(), unless the unscaled gradients hold an inf or nan (then the step is skipped)."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        if self._stage.get(id(optimizer), _READY) == _STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if self._stage.get(id(optimizer), _READY) == _READY:
            self.unscale_(optimizer)
        out = None if self._found_inf[id(optimizer)] else optimizer.step(*args, **kwargs)
        self._stage[id(optimizer)] = _STEPPED
        return out

    def update(self, new_scale: float | Tensor | None = None) -> None:
        """The scale for the next iteration: new_scale if given; else backed off after an inf/nan this iteration,
        grown after growth_interval iterations without one."""
        if not self._enabled:
            return
        if new_scale is not None:
            self._scale = _float32(new_scale.item() if isinstance(new_scale, Tensor) else new_scale)
        elif not self._found_inf:
            raise AssertionError("No inf checks were recorded prior to update.")
        elif any(self._found_inf.values()):
            self._scale, self._growth_tracker = _float32(self._scale * self._backoff_factor), 0
        else:
            self._growth_tracker += 1
            if self._growth_tracker == self._growth_interval:
                self._scale, self._growth_tracker = _float32(self._scale * self._growth_factor), 0
        self._stage.clear()
        self._found_inf.clear()

    def get_scale(self) -> float:
        return self._scale if self._enabled else 1.0

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def state_dict(self) -> dict[str, Any]:
        """torch's keys; {} when disabled."""
        if not self._enabled:
            return {}
        return {"scale": self._scale, "growth_factor": self._growth_factor, "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval, "_growth_tracker": self._growth_tracker}  # fmt: skip

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        if not self._enabled:
            return
        if not state_dict:
            raise RuntimeError(
                "The source state dict is empty, possibly because it was saved from a disabled instance of GradScaler."
            )
        self._scale = _float32(state_dict["scale"])
        self._growth_factor, self._backoff_factor = state_dict["growth_factor"], state_dict["backoff_factor"]
        self._growth_interval, self._growth_tracker = state_dict["growth_interval"], state_dict["_growth_tracker"]


def _float32(value: float) -> float:
    """value rounded to float32, as torch keeps the scale."""
    return float(Tensor(float(value), dtype=dtypes.float32).item())
