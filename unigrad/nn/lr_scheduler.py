"""unigrad.nn.lr_scheduler: torch.optim.lr_scheduler's schedules (also unigrad.nn.optim.lr_scheduler, and each
class re-exported from unigrad.nn.optim).

A schedule sets each parameter group's 'lr' (and, for OneCycleLR and CyclicLR, its momentum or betas[0]) from the
step count in Python: closed forms in the epoch from each group's base rate, equal to torch's chained updates.
Writing an option writes it into the optimizer's buffer in place (unigrad.nn.optim.ParamGroup), so the next step,
eager or a TinyJit replay, reads the new value without compiling anything again.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from unigrad.nn.optim import Optimizer

__all__ = [
    "LRScheduler",
    "StepLR",
    "MultiStepLR",
    "ExponentialLR",
    "CosineAnnealingLR",
    "LinearLR",
    "LambdaLR",
    "SequentialLR",
    "ConstantLR",
    "PolynomialLR",
    "OneCycleLR",
    "CosineAnnealingWarmRestarts",
    "CyclicLR",
    "ReduceLROnPlateau",
]


class LRScheduler:
    """Sets each parameter group's lr from a closed form in the epoch count, as torch.optim.lr_scheduler:
    constructing it sets the epoch-0 rates; each `step()` advances one epoch. A group's base rate is its rate when
    the optimizer's first scheduler was made (kept as the group's 'initial_lr', and the first group's as
    optimizer.initial_lr, so schedulers combined in SequentialLR agree). Subclasses give `lr_at` (one rate from
    its base) or `_lrs` (every group's rates at once)."""

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1):
        self.optimizer = optimizer
        for g in optimizer.param_groups:
            if "initial_lr" not in g:
                g["initial_lr"] = g["lr"]
        if optimizer.initial_lr is None:
            optimizer.initial_lr = optimizer.param_groups[0]["initial_lr"]
        self.base_lrs = [g["initial_lr"] for g in optimizer.param_groups]
        self.base_lr = self.base_lrs[0]
        self.last_epoch = last_epoch
        self._last_lr = list(self.base_lrs)
        self.step()

    def lr_at(self, epoch: int, base: float) -> float:
        raise NotImplementedError

    def _lrs(self, epoch: float) -> list[float]:
        """Every group's rate at `epoch`."""
        return [self.lr_at(epoch, base) for base in self.base_lrs]  # type: ignore[arg-type]

    def get_lr(self) -> float:
        """The first group's rate at the current epoch."""
        return self._lrs(self.last_epoch)[0]

    def get_last_lr(self) -> list[float]:
        """The rates set by the last step, one per parameter group (as torch)."""
        return list(self._last_lr)

    def step(self) -> None:
        self.last_epoch += 1
        self._set_lrs(self._lrs(self.last_epoch))

    def _set_lrs(self, lrs: list[float]) -> None:
        self._last_lr = list(lrs)
        for g, lr in zip(self.optimizer.param_groups, self._last_lr):
            g["lr"] = lr


def _per_group(name: str, optimizer: Optimizer, value: float | Sequence[float]) -> list[float]:
    """A value for each parameter group: one for all, or a list with one per group (torch's _format_param)."""
    if isinstance(value, (list, tuple)):
        if len(value) != len(optimizer.param_groups):
            raise ValueError(
                f"{name} must have one value per parameter group: got {len(value)} for "
                f"{len(optimizer.param_groups)} groups"
            )
        return list(value)
    return [value] * len(optimizer.param_groups)  # type: ignore[list-item]


def _momentum_key(name: str, optimizer: Optimizer) -> str:
    """Which option cycle_momentum drives: betas[0] for the Adam family, else momentum (as torch)."""
    if "betas" in optimizer.defaults:
        return "betas"
    if "momentum" in optimizer.defaults:
        return "momentum"
    raise ValueError(f"{name}: optimizer must support momentum or beta1 with `cycle_momentum` option enabled")


def _set_momentum(group: dict[str, Any], key: str, value: float) -> None:
    group[key] = (value, *group["betas"][1:]) if key == "betas" else value


class StepLR(LRScheduler):
    """base_lr * gamma ** (epoch // step_size)."""

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1):
        self.step_size, self.gamma = step_size, gamma
        super().__init__(optimizer, last_epoch)

    def lr_at(self, epoch: int, base: float) -> float:
        return base * self.gamma ** (epoch // self.step_size)


class MultiStepLR(LRScheduler):
    """base_lr * gamma ** (number of milestones <= epoch)."""

    def __init__(self, optimizer: Optimizer, milestones: Sequence[int], gamma: float = 0.1, last_epoch: int = -1):
        self.milestones, self.gamma = sorted(milestones), gamma
        super().__init__(optimizer, last_epoch)

    def lr_at(self, epoch: int, base: float) -> float:
        return base * self.gamma ** sum(1 for m in self.milestones if m <= epoch)


class ExponentialLR(LRScheduler):
    """base_lr * gamma ** epoch."""

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1):
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def lr_at(self, epoch: int, base: float) -> float:
        return base * self.gamma**epoch


class CosineAnnealingLR(LRScheduler):
    """eta_min + (base_lr - eta_min) * (1 + cos(pi * epoch / T_max)) / 2 (past T_max the cosine goes on)."""

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0, last_epoch: int = -1):
        self.T_max, self.eta_min = T_max, eta_min
        super().__init__(optimizer, last_epoch)

    def lr_at(self, epoch: int, base: float) -> float:
        return self.eta_min + (base - self.eta_min) * (1 + math.cos(math.pi * epoch / self.T_max)) / 2


class LinearLR(LRScheduler):
    """Linear warmup (or decay): base_lr times a factor going linearly from start_factor to end_factor over
    total_iters epochs, then staying at end_factor."""

    def __init__(
        self,
        optimizer: Optimizer,
        start_factor: float = 1 / 3,
        end_factor: float = 1.0,
        total_iters: int = 5,
        last_epoch: int = -1,
    ):
        if not 0 < start_factor <= 1 or not 0 <= end_factor <= 1:
            raise ValueError("LinearLR: start_factor must be in (0, 1] and end_factor in [0, 1]")
        self.start_factor, self.end_factor, self.total_iters = start_factor, end_factor, total_iters
        super().__init__(optimizer, last_epoch)

    def lr_at(self, epoch: int, base: float) -> float:
        frac = min(epoch, self.total_iters) / self.total_iters if self.total_iters else 1.0
        return base * (self.start_factor + (self.end_factor - self.start_factor) * frac)


class LambdaLR(LRScheduler):
    """base_lr * lr_lambda(epoch)."""

    def __init__(self, optimizer: Optimizer, lr_lambda: Callable[[int], float], last_epoch: int = -1):
        self.lr_lambda = lr_lambda
        super().__init__(optimizer, last_epoch)

    def lr_at(self, epoch: int, base: float) -> float:
        return base * self.lr_lambda(epoch)


class SequentialLR(LRScheduler):
    """schedulers[k] from milestones[k-1] on (its own epoch count restarting at 0 there), e.g. a LinearLR
    warmup followed by CosineAnnealingLR."""

    def __init__(
        self, optimizer: Optimizer, schedulers: Sequence[LRScheduler], milestones: Sequence[int], last_epoch: int = -1
    ):
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(
                f"SequentialLR: expected {len(schedulers) - 1} milestones for {len(schedulers)} schedulers"
            )
        if any(s.optimizer is not optimizer for s in schedulers):
            raise ValueError("SequentialLR: every scheduler must belong to the given optimizer")
        self.schedulers, self.milestones = list(schedulers), list(milestones)
        super().__init__(optimizer, last_epoch)

    def _lrs(self, epoch: float) -> list[float]:
        k = sum(1 for m in self.milestones if m <= epoch)
        start = self.milestones[k - 1] if k else 0
        self.schedulers[k].last_epoch = int(epoch - start)
        return self.schedulers[k]._lrs(epoch - start)


class ConstantLR(LRScheduler):
    """base_lr * factor until epoch total_iters, base_lr from there on."""

    def __init__(self, optimizer: Optimizer, factor: float = 1 / 3, total_iters: int = 5, last_epoch: int = -1):
        if not 0 <= factor <= 1:
            raise ValueError(f"ConstantLR: the factor must be in [0, 1], got {factor}")
        self.factor, self.total_iters = factor, total_iters
        super().__init__(optimizer, last_epoch)

    def lr_at(self, epoch: int, base: float) -> float:
        return base * (self.factor if epoch < self.total_iters else 1.0)


class PolynomialLR(LRScheduler):
    """base_lr * (1 - min(epoch, total_iters) / total_iters) ** power: down to 0 at total_iters."""

    def __init__(self, optimizer: Optimizer, total_iters: int = 5, power: float = 1.0, last_epoch: int = -1):
        if total_iters <= 0:
            raise ValueError(f"PolynomialLR: total_iters must be positive, got {total_iters}")
        self.total_iters, self.power = total_iters, power
        super().__init__(optimizer, last_epoch)

    def lr_at(self, epoch: int, base: float) -> float:
        return base * (1.0 - min(self.total_iters, epoch) / self.total_iters) ** self.power


class CosineAnnealingWarmRestarts(LRScheduler):
    """SGDR (Loshchilov & Hutter): eta_min + (base_lr - eta_min) * (1 + cos(pi * T_cur / T_i)) / 2, where T_cur
    counts the epochs since the last restart and the i-th period lasts T_i = T_0 * T_mult**i epochs. step(epoch)
    takes a fractional epoch (torch's `scheduler.step(epoch + i / iters)`)."""

    def __init__(self, optimizer: Optimizer, T_0: int, T_mult: int = 1, eta_min: float = 0.0, last_epoch: int = -1):
        if not isinstance(T_0, int) or T_0 <= 0:
            raise ValueError(f"CosineAnnealingWarmRestarts: expected a positive integer T_0, got {T_0}")
        if not isinstance(T_mult, int) or T_mult < 1:
            raise ValueError(f"CosineAnnealingWarmRestarts: expected an integer T_mult >= 1, got {T_mult}")
        if not isinstance(eta_min, (float, int)):
            raise ValueError(f"CosineAnnealingWarmRestarts: expected a float or int eta_min, got {eta_min!r}")
        self.T_0, self.T_mult, self.eta_min = T_0, T_mult, eta_min
        self.T_i, self.T_cur = T_0, float(last_epoch)
        self._epoch: float = last_epoch  # where the schedule is: last_epoch, or the fraction step(epoch) gave
        super().__init__(optimizer, last_epoch)

    def _period(self, epoch: float) -> tuple[float, int]:
        """(T_cur, T_i) at `epoch`: the time into the current period and its length."""
        if self.T_mult == 1:
            return epoch % self.T_0, self.T_0
        t_cur, t_i = epoch, self.T_0
        while t_cur >= t_i:
            t_cur, t_i = t_cur - t_i, t_i * self.T_mult
        return t_cur, t_i

    def _lrs(self, epoch: float) -> list[float]:
        t_cur, t_i = self._period(epoch)
        cos = (1 + math.cos(math.pi * t_cur / t_i)) / 2
        return [self.eta_min + (base - self.eta_min) * cos for base in self.base_lrs]

    def get_lr(self) -> float:
        return self._lrs(self._epoch)[0]

    def step(self, epoch: float | None = None) -> None:  # type: ignore[override]
        if epoch is not None and epoch < 0:
            raise ValueError(f"CosineAnnealingWarmRestarts: expected a non-negative epoch, got {epoch}")
        self._epoch = max(self._epoch + 1, 0) if epoch is None else epoch
        self.last_epoch = math.floor(self._epoch)
        self.T_cur, self.T_i = self._period(self._epoch)
        self._set_lrs(self._lrs(self._epoch))


class OneCycleLR(LRScheduler):
    """The 1cycle policy (Smith & Topin): from max_lr / div_factor up to max_lr over the first pct_start of
    total_steps, then down to max_lr / div_factor / final_div_factor (three_phase: back to the start rate over a
    second pct_start, then down to the end), annealed by cosine ('cos') or linearly ('linear'). cycle_momentum
    moves momentum (or betas[0]) the other way, between max_momentum and base_momentum. One step per batch;
    stepping past total_steps is an error. max_lr, base_momentum and max_momentum may be lists (one per group)."""

    def __init__(
        self,
        optimizer: Optimizer,
        max_lr: float | Sequence[float],
        total_steps: int | None = None,
        epochs: int | None = None,
        steps_per_epoch: int | None = None,
        pct_start: float = 0.3,
        anneal_strategy: str = "cos",
        cycle_momentum: bool = True,
        base_momentum: float | Sequence[float] = 0.85,
        max_momentum: float | Sequence[float] = 0.95,
        div_factor: float = 25.0,
        final_div_factor: float = 1e4,
        three_phase: bool = False,
        last_epoch: int = -1,
    ):
        if total_steps is None:
            if epochs is None or steps_per_epoch is None:
                raise ValueError("OneCycleLR: you must define either total_steps OR (epochs AND steps_per_epoch)")
            for name, n in (("epochs", epochs), ("steps_per_epoch", steps_per_epoch)):
                if not isinstance(n, int) or n <= 0:
                    raise ValueError(f"OneCycleLR: expected a positive integer {name}, got {n}")
            total_steps = epochs * steps_per_epoch
        if not isinstance(total_steps, int) or total_steps <= 0:
            raise ValueError(f"OneCycleLR: expected a positive integer total_steps, got {total_steps}")
        if not 0 <= pct_start <= 1:
            raise ValueError(f"OneCycleLR: expected pct_start between 0 and 1, got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"OneCycleLR: anneal_strategy must be one of 'cos' or 'linear', got {anneal_strategy!r}")
        self.total_steps, self.anneal_strategy = total_steps, anneal_strategy
        up = float(pct_start * total_steps) - 1
        # (last step of the phase, rate from, rate to, momentum from, momentum to), by group keys as torch
        if three_phase:
            self.phases = [
                (up, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                (float(2 * pct_start * total_steps) - 2, "max_lr", "initial_lr", "base_momentum", "max_momentum"),
                (total_steps - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum"),
            ]
        else:
            self.phases = [
                (up, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                (total_steps - 1, "max_lr", "min_lr", "base_momentum", "max_momentum"),
            ]
        max_lrs = _per_group("max_lr", optimizer, max_lr)
        if last_epoch == -1:
            for group, top in zip(optimizer.param_groups, max_lrs):
                group["initial_lr"] = top / div_factor
                group["max_lr"] = top
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self.momentum_key = _momentum_key("OneCycleLR", optimizer)
            highs = _per_group("max_momentum", optimizer, max_momentum)
            lows = _per_group("base_momentum", optimizer, base_momentum)
            if last_epoch == -1:
                for group, high, low in zip(optimizer.param_groups, highs, lows):
                    _set_momentum(group, self.momentum_key, high)
                    group["max_momentum"], group["base_momentum"] = high, low
        super().__init__(optimizer, last_epoch)

    def _anneal(self, start: float, end: float, pct: float) -> float:
        if self.anneal_strategy == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def _lrs(self, epoch: float) -> list[float]:
        if epoch > self.total_steps:
            raise ValueError(
                f"OneCycleLR: tried to step {epoch} times; the specified number of total steps is {self.total_steps}"
            )
        lrs = []
        for group in self.optimizer.param_groups:
            start = 0.0
            for k, (end, lr_from, lr_to, m_from, m_to) in enumerate(self.phases):
                if epoch <= end or k == len(self.phases) - 1:
                    pct = (epoch - start) / (end - start)
                    lrs.append(self._anneal(group[lr_from], group[lr_to], pct))
                    if self.cycle_momentum:
                        _set_momentum(group, self.momentum_key, self._anneal(group[m_from], group[m_to], pct))
                    break
                start = end
        return lrs


class CyclicLR(LRScheduler):
    """The cyclical learning rate policy (Smith 2017): the rate climbs from base_lr to max_lr over step_size_up
    steps and back over step_size_down (default step_size_up), the height scaled per cycle ('triangular': 1,
    'triangular2': halved every cycle) or per step ('exp_range': gamma**step), or by scale_fn(cycle or step, as
    scale_mode says). cycle_momentum moves momentum (or betas[0]) between max_momentum and base_momentum the
    other way. One step per batch. base_lr, max_lr and the momenta may be lists (one per group)."""

    def __init__(
        self,
        optimizer: Optimizer,
        base_lr: float | Sequence[float],
        max_lr: float | Sequence[float],
        step_size_up: int = 2000,
        step_size_down: int | None = None,
        mode: str = "triangular",
        gamma: float = 1.0,
        scale_fn: Callable[[float], float] | None = None,
        scale_mode: str = "cycle",
        cycle_momentum: bool = True,
        base_momentum: float | Sequence[float] = 0.8,
        max_momentum: float | Sequence[float] = 0.9,
        last_epoch: int = -1,
    ):
        lows = _per_group("base_lr", optimizer, base_lr)
        if last_epoch == -1:
            for group, low in zip(optimizer.param_groups, lows):
                group["lr"] = low
        self.max_lrs = _per_group("max_lr", optimizer, max_lr)
        up = float(step_size_up)
        down = float(step_size_down) if step_size_down is not None else up
        self.total_size, self.step_ratio = up + down, up / (up + down)
        if scale_fn is None:
            if mode not in ("triangular", "triangular2", "exp_range"):
                raise ValueError(f"CyclicLR: mode {mode!r} is invalid and scale_fn is None")
            scale_mode = "iterations" if mode == "exp_range" else "cycle"
        elif scale_mode not in ("cycle", "iterations"):
            raise ValueError(f"CyclicLR: scale_mode must be 'cycle' or 'iterations', got {scale_mode!r}")
        self.mode, self.gamma, self.custom_scale_fn, self.scale_mode = mode, gamma, scale_fn, scale_mode
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self.momentum_key = _momentum_key("CyclicLR", optimizer)
            self.base_momentums = _per_group("base_momentum", optimizer, base_momentum)
            self.max_momentums = _per_group("max_momentum", optimizer, max_momentum)
            if last_epoch == -1:
                for group, high, low in zip(optimizer.param_groups, self.max_momentums, self.base_momentums):
                    _set_momentum(group, self.momentum_key, high)
                    group["max_momentum"], group["base_momentum"] = high, low
        self.cycle_base_lrs = lows
        super().__init__(optimizer, last_epoch)
        self.base_lrs = lows

    def scale_fn(self, x: float) -> float:
        if self.custom_scale_fn is not None:
            return self.custom_scale_fn(x)
        if self.mode == "triangular2":
            return 1 / (2.0 ** (x - 1))
        return self.gamma**x if self.mode == "exp_range" else 1.0

    def _lrs(self, epoch: float) -> list[float]:
        cycle = math.floor(1 + epoch / self.total_size)
        x = 1.0 + epoch / self.total_size - cycle
        height = x / self.step_ratio if x <= self.step_ratio else (x - 1) / (self.step_ratio - 1)
        scale = self.scale_fn(cycle if self.scale_mode == "cycle" else epoch)
        lrs = [low + (high - low) * height * scale for low, high in zip(self.cycle_base_lrs, self.max_lrs)]
        if self.cycle_momentum:
            for group, low, high in zip(self.optimizer.param_groups, self.base_momentums, self.max_momentums):
                _set_momentum(group, self.momentum_key, high - (high - low) * height * scale)
        return lrs


class ReduceLROnPlateau(LRScheduler):
    """Multiply each group's rate by `factor` (not below its min_lr; a change smaller than eps is skipped) once the
    metric passed to step(metric) (a float or a one-element Tensor) has not improved for more than `patience`
    steps, then wait `cooldown` steps before counting again. Improving means below (mode 'min') or above ('max')
    the best value so far by more than `threshold`: relative (best * (1 -+ threshold), threshold_mode 'rel') or
    absolute (best -+ threshold, 'abs')."""

    def __init__(
        self,
        optimizer: Optimizer,
        mode: str = "min",
        factor: float = 0.1,
        patience: int = 10,
        threshold: float = 1e-4,
        threshold_mode: str = "rel",
        cooldown: int = 0,
        min_lr: float | Sequence[float] = 0.0,
        eps: float = 1e-8,
    ):
        if factor >= 1.0:
            raise ValueError(f"ReduceLROnPlateau: the factor must be < 1.0, got {factor}")
        if mode not in ("min", "max"):
            raise ValueError(f"ReduceLROnPlateau: mode {mode!r} is unknown (expected 'min' or 'max')")
        if threshold_mode not in ("rel", "abs"):
            raise ValueError(
                f"ReduceLROnPlateau: threshold mode {threshold_mode!r} is unknown (expected 'rel' or 'abs')"
            )
        self.optimizer = optimizer
        self.min_lrs = _per_group("min_lr", optimizer, min_lr)
        self.mode, self.factor, self.patience, self.cooldown, self.eps = mode, factor, patience, cooldown, eps
        self.threshold, self.threshold_mode = threshold, threshold_mode
        self.last_epoch = 0
        self.best = math.inf if mode == "min" else -math.inf
        self.num_bad_epochs = self.cooldown_counter = 0
        self._last_lr = [g["lr"] for g in optimizer.param_groups]

    def is_better(self, a: float, best: float) -> bool:
        if self.mode == "min":
            return a < (best * (1.0 - self.threshold) if self.threshold_mode == "rel" else best - self.threshold)
        return a > (best * (self.threshold + 1.0) if self.threshold_mode == "rel" else best + self.threshold)

    @property
    def in_cooldown(self) -> bool:
        return self.cooldown_counter > 0

    def step(self, metrics: Any) -> None:  # type: ignore[override]
        current = float(metrics.item()) if hasattr(metrics, "item") else float(metrics)
        self.last_epoch += 1
        if self.is_better(current, self.best):
            self.best, self.num_bad_epochs = current, 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0  # bad epochs during the cooldown do not count
        if self.num_bad_epochs > self.patience:
            for group, floor in zip(self.optimizer.param_groups, self.min_lrs):
                old = float(group["lr"])
                new = max(old * self.factor, floor)
                if old - new > self.eps:
                    group["lr"] = new
            self.cooldown_counter, self.num_bad_epochs = self.cooldown, 0
        self._last_lr = [g["lr"] for g in self.optimizer.param_groups]
