"""unigrad.nn.optim: optimizers (SGD, Adam, AdamW, LAMB) and learning-rate schedules.

An optimizer updates its parameters and its state in place with `assign`, and `step()` realizes every write
in one schedule: one `Tensor.realize` of the parameters, the state, the gradients and any assign still
pending (BatchNorm running statistics, ...), so a pending graph that reads a parameter runs before the
parameter is overwritten.

The learning rate is a 0-d float32 buffer (`optimizer.lr`, a Tensor as in tinygrad), not a constant in the
update graph: `set_lr` swaps in a new buffer holding the value (a copy in, no kernel), so the update graph
keeps its structure and schedules hit the schedule and program caches when the rate changes every step.
Adam's bias corrections come from running products beta^t kept in 0-d buffers for the same reason.

A lazy tensor built before a step reads the parameters' buffers when it is realized: realize the loss
before `step()`, with it (`Tensor.realize(loss, *opt.schedule_step())`), or pass a closure to `step` as in
torch (its loss is realized in the step's schedule, with the values from before the update).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence

import numpy as np

from unigrad.tensor import Tensor

__all__ = [
    "Optimizer",
    "SGD",
    "Adam",
    "AdamW",
    "LAMB",
    "LRScheduler",
    "StepLR",
    "MultiStepLR",
    "ExponentialLR",
    "CosineAnnealingLR",
    "LinearLR",
    "LambdaLR",
    "SequentialLR",
]


def _unique(tensors: Iterable[Tensor]) -> list[Tensor]:
    """Each tensor once, in order (by identity: == on tensors builds a comparison)."""
    seen: dict[int, Tensor] = {}
    for t in tensors:
        seen.setdefault(id(t), t)
    return list(seen.values())


def _pending_assigns() -> list[Tensor]:
    """Tensors whose latest assign has not run yet."""
    return Tensor.pending_assigns()


def _state_like(p: Tensor, value: float = 0.0) -> Tensor:
    """A fresh buffer of p's shape and dtype holding `value` (copied in: never shared with another tensor)."""
    arr = np.full(p.shape, value, dtype=p.dtype.fmt or np.float32)
    return Tensor(arr, device=p.device, dtype=p.dtype).requires_grad_(False)


def _scalar(value: float, device: str) -> Tensor:
    return Tensor(np.array(value, dtype=np.float32), device=device).requires_grad_(False)


class Optimizer:
    """Base: holds the parameters (tensors with requires_grad True; None is turned on, as in tinygrad) and
    the buffers passed along with them (requires_grad False, e.g. running statistics from get_parameters),
    which are realized with each step. Subclasses build one parameter's update in `_update`."""

    def __init__(self, params: Iterable[Tensor], lr: float | Tensor):
        tensors = _unique(params)
        for t in tensors:
            if t.requires_grad is None:
                t.requires_grad = t.dtype.is_float  # an integer tensor can only be a buffer
        self.params = [t for t in tensors if t.requires_grad]
        self.buffers = [t for t in tensors if not t.requires_grad]
        if not self.params:
            raise ValueError(f"{type(self).__name__}: got an empty parameter list")
        self.device = self.params[0].device
        self.lr = lr if isinstance(lr, Tensor) else _scalar(lr, self.device)
        self.initial_lr: float | None = None  # the rate lr schedules start from (torch's 'initial_lr')

    # ------------------------------------------------------------ learning rate
    def get_lr(self) -> float:
        return float(self.lr.item())

    def set_lr(self, lr: float) -> None:
        """Use `lr` from the next step on: a new 0-d buffer (no kernel runs, no kernel is recompiled)."""
        self.lr = _scalar(lr, self.device)

    def _lr(self, p: Tensor) -> Tensor:
        lr = self.lr.reshape(()) if self.lr.shape != () and self.lr.numel() == 1 else self.lr
        return lr.to(p.device)

    # ------------------------------------------------------------ steps
    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    def step(self, closure: Callable[[], Tensor] | None = None) -> Tensor | None:
        """Update every parameter that has a gradient, in one schedule. A closure (torch's) is called first: it
        recomputes the loss and its gradients; its loss is realized with the update and returned."""
        loss = closure() if closure is not None else None
        extra = [loss] if isinstance(loss, Tensor) else []
        Tensor.realize(*extra, *self.schedule_step())
        return loss

    def schedule_step(self) -> list[Tensor]:
        """Build the update (assigns, not yet run) and return every tensor the step must realize (tinygrad's
        name): realize them, with anything else that should see the parameters from before the update."""
        live = [(i, p) for i, p in enumerate(self.params) if p.grad is not None]
        # what reads the old parameters comes first: the gradients (realized too, so .grad keeps the values the
        # step used) and the assigns already pending. The runtime runs kernels in this order, and it does not yet
        # order a read of a buffer before another output's write into it (test_optim's
        # test_assigns_reading_each_others_target); the gradient of one parameter reads the others.
        reads = [*(p.grad for _, p in live), *self.buffers, *_pending_assigns()]
        updated = self._step_counters() if live else []
        for i, p in live:
            assert p.grad is not None
            updated += self._update(i, p, p.grad.detach())
        self._step_done()
        return _unique([*reads, *updated, *self.params])  # type: ignore[list-item]

    def _step_counters(self) -> list[Tensor]:
        """Advance state shared by all parameters (once per step); returns the tensors written."""
        return []

    def _update(self, i: int, p: Tensor, g: Tensor) -> list[Tensor]:
        """Assign parameter i's new value (and its state's); return the tensors written."""
        raise NotImplementedError

    def _step_done(self) -> None:
        """Drop what the step's updates shared (a graph kept past its step keeps its assigns alive, and every
        realize then looks for them in its graphs)."""


class SGD(Optimizer):
    """Stochastic gradient descent as torch.optim.SGD: g += weight_decay * p; with momentum,
    buf = momentum * buf + (1 - dampening) * g (buf = g on the first step) and g = buf, or g + momentum * buf
    with nesterov; p -= lr * g. Positional order as tinygrad's SGD (lr, momentum, weight_decay, nesterov)."""

    def __init__(
        self,
        params: Iterable[Tensor],
        lr: float | Tensor = 0.001,
        momentum: float = 0.0,
        weight_decay: float = 0.0,
        nesterov: bool = False,
        dampening: float = 0.0,
    ):
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("SGD: nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, lr)
        self.momentum, self.weight_decay, self.nesterov, self.dampening = momentum, weight_decay, nesterov, dampening
        self.momentum_buffer = [_state_like(p) for p in self.params] if momentum else []
        self._started = [False] * len(self.params)

    def _update(self, i: int, p: Tensor, g: Tensor) -> list[Tensor]:
        if self.weight_decay:
            g = g + self.weight_decay * p.detach()
        written = [p]
        if self.momentum:
            buf = self.momentum_buffer[i]
            if self._started[i] or not self.dampening:  # from a zero buffer the general rule gives buf = g too
                buf.assign(self.momentum * buf + (1 - self.dampening) * g)
            else:
                buf.assign(g)
            self._started[i] = True
            g = g + self.momentum * buf if self.nesterov else buf
            written.append(buf)
        p.assign(p.detach() - self._lr(p) * g)
        return written


def _betas(b1: float, b2: float, betas: tuple[float, float] | None) -> tuple[float, float]:
    return (b1, b2) if betas is None else (float(betas[0]), float(betas[1]))


class _AdamFamily(Optimizer):
    """Adam's moments and bias corrections, shared by Adam, AdamW and LAMB:
    m = b1 m + (1 - b1) g, v = b2 v + (1 - b2) g^2, up = (m / (1 - b1^t)) / (sqrt(v) / sqrt(1 - b2^t) + eps).
    b1^t and b2^t are running products in 0-d buffers (one pair per optimizer: t counts steps)."""

    def __init__(
        self,
        params: Iterable[Tensor],
        lr: float | Tensor,
        b1: float,
        b2: float,
        eps: float,
        weight_decay: float,
        amsgrad: bool = False,
    ):
        super().__init__(params, lr)
        self.b1, self.b2, self.eps, self.weight_decay, self.amsgrad = b1, b2, eps, weight_decay, amsgrad
        self.m = [_state_like(p) for p in self.params]
        self.v = [_state_like(p) for p in self.params]
        self.v_max = [_state_like(p) for p in self.params] if amsgrad else []
        self.b1_t, self.b2_t = _scalar(1.0, self.device), _scalar(1.0, self.device)
        self._corrections: dict[str, tuple[Tensor, Tensor]] = {}  # this step's, by device: _bias_corrections

    def _step_counters(self) -> list[Tensor]:
        self.b1_t.assign(self.b1_t * self.b1)
        self.b2_t.assign(self.b2_t * self.b2)
        return [self.b1_t, self.b2_t]

    def _step_done(self) -> None:
        self._corrections.clear()

    def _bias_corrections(self, device: str) -> tuple[Tensor, Tensor]:
        """1 / (1 - b1^t) and 1 / sqrt(1 - b2^t) on `device`: 0-d tensors built once per step and device."""
        if (c := self._corrections.get(device)) is None:
            b1_t, b2_t = self.b1_t.to(device), self.b2_t.to(device)
            c = self._corrections[device] = ((1 - b1_t).reciprocal(), (1 - b2_t).rsqrt())
        return c

    def _adam_direction(self, i: int, g: Tensor) -> tuple[Tensor, list[Tensor]]:
        """The bias-corrected Adam direction for parameter i after folding in gradient g; the state written."""
        m, v = self.m[i], self.v[i]
        m.assign(self.b1 * m + (1 - self.b1) * g)
        v.assign(self.b2 * v + (1 - self.b2) * (g * g))
        written = [m, v]
        if self.amsgrad:
            self.v_max[i].assign(self.v_max[i].maximum(v))
            v = self.v_max[i]
            written.append(v)
        inv_c1, inv_sqrt_c2 = self._bias_corrections(g.device)
        return m * inv_c1 / (v.sqrt() * inv_sqrt_c2 + self.eps), written


class Adam(_AdamFamily):
    """torch.optim.Adam: weight_decay is an L2 term added to the gradient (g += wd * p), then
    p -= lr * up. Positional order as tinygrad's (lr, b1, b2, eps); torch's `betas` as a keyword."""

    default_weight_decay = 0.0

    def __init__(
        self,
        params: Iterable[Tensor],
        lr: float | Tensor = 0.001,
        b1: float = 0.9,
        b2: float = 0.999,
        eps: float = 1e-8,
        weight_decay: float | None = None,
        amsgrad: bool = False,
        *,
        betas: tuple[float, float] | None = None,
    ):
        wd = self.default_weight_decay if weight_decay is None else weight_decay
        super().__init__(params, lr, *_betas(b1, b2, betas), eps, wd, amsgrad)

    def _update(self, i: int, p: Tensor, g: Tensor) -> list[Tensor]:
        if self.weight_decay:
            g = g + self.weight_decay * p.detach()
        up, written = self._adam_direction(i, g)
        p.assign(p.detach() - self._lr(p) * up)
        return [p, *written]


class AdamW(Adam):
    """torch.optim.AdamW: decoupled weight decay, p -= lr * (up + wd * p); Adam's arguments, wd default 0.01."""

    default_weight_decay = 0.01

    def _update(self, i: int, p: Tensor, g: Tensor) -> list[Tensor]:
        up, written = self._adam_direction(i, g)
        lr = self._lr(p)
        p.assign(p.detach() * (1 - lr * self.weight_decay) - lr * up)
        return [p, *written]


class LAMB(_AdamFamily):
    """LAMB (You et al., 2019, as tinygrad's): the AdamW direction u = up + wd * p scaled per parameter by the
    trust ratio ||p|| / ||u|| (1 where either norm is 0): p -= lr * ratio * u. adam=True skips the ratio."""

    def __init__(
        self,
        params: Iterable[Tensor],
        lr: float | Tensor = 0.001,
        b1: float = 0.9,
        b2: float = 0.999,
        eps: float = 1e-6,
        weight_decay: float = 0.0,
        adam: bool = False,
        *,
        betas: tuple[float, float] | None = None,
    ):
        super().__init__(params, lr, *_betas(b1, b2, betas), eps, weight_decay)
        self.adam = adam

    def _update(self, i: int, p: Tensor, g: Tensor) -> list[Tensor]:
        up, written = self._adam_direction(i, g)
        w = p.detach()
        u = up + self.weight_decay * w if self.weight_decay else up
        if not self.adam:
            r1, r2 = w.square().sum().sqrt(), u.square().sum().sqrt()
            u = u * (r1 > 0).where((r2 > 0).where(r1 / r2, 1.0), 1.0)
        p.assign(w - self._lr(p) * u)
        return [p, *written]


# ---------------------------------------------------------------- learning-rate schedules


class LRScheduler:
    """Sets optimizer's lr from a closed form in the epoch count, as torch.optim.lr_scheduler: constructing it
    sets the epoch-0 rate; each `step()` advances one epoch. The base rate is the optimizer's rate when its
    first scheduler was made (kept as optimizer.initial_lr, so schedulers combined in SequentialLR agree)."""

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1):
        self.optimizer = optimizer
        if optimizer.initial_lr is None:
            optimizer.initial_lr = optimizer.get_lr()
        self.base_lr = optimizer.initial_lr
        self.last_epoch = last_epoch
        self._last_lr = self.base_lr
        self.step()

    def lr_at(self, epoch: int) -> float:
        raise NotImplementedError

    def get_lr(self) -> float:
        return self.lr_at(self.last_epoch)

    def get_last_lr(self) -> list[float]:
        """The rate set by the last step, in a list as torch (one entry per parameter group; we have one)."""
        return [self._last_lr]

    def step(self) -> None:
        self.last_epoch += 1
        self._set(self.get_lr())

    def _set(self, lr: float) -> None:
        self._last_lr = lr
        self.optimizer.set_lr(lr)


class StepLR(LRScheduler):
    """base_lr * gamma ** (epoch // step_size)."""

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1):
        self.step_size, self.gamma = step_size, gamma
        super().__init__(optimizer, last_epoch)

    def lr_at(self, epoch: int) -> float:
        return self.base_lr * self.gamma ** (epoch // self.step_size)


class MultiStepLR(LRScheduler):
    """base_lr * gamma ** (number of milestones <= epoch)."""

    def __init__(self, optimizer: Optimizer, milestones: Sequence[int], gamma: float = 0.1, last_epoch: int = -1):
        self.milestones, self.gamma = sorted(milestones), gamma
        super().__init__(optimizer, last_epoch)

    def lr_at(self, epoch: int) -> float:
        return self.base_lr * self.gamma ** sum(1 for m in self.milestones if m <= epoch)


class ExponentialLR(LRScheduler):
    """base_lr * gamma ** epoch."""

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1):
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def lr_at(self, epoch: int) -> float:
        return self.base_lr * self.gamma**epoch


class CosineAnnealingLR(LRScheduler):
    """eta_min + (base_lr - eta_min) * (1 + cos(pi * epoch / T_max)) / 2 (past T_max the cosine goes on)."""

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0, last_epoch: int = -1):
        self.T_max, self.eta_min = T_max, eta_min
        super().__init__(optimizer, last_epoch)

    def lr_at(self, epoch: int) -> float:
        return self.eta_min + (self.base_lr - self.eta_min) * (1 + math.cos(math.pi * epoch / self.T_max)) / 2


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

    def lr_at(self, epoch: int) -> float:
        frac = min(epoch, self.total_iters) / self.total_iters if self.total_iters else 1.0
        return self.base_lr * (self.start_factor + (self.end_factor - self.start_factor) * frac)


class LambdaLR(LRScheduler):
    """base_lr * lr_lambda(epoch)."""

    def __init__(self, optimizer: Optimizer, lr_lambda: Callable[[int], float], last_epoch: int = -1):
        self.lr_lambda = lr_lambda
        super().__init__(optimizer, last_epoch)

    def lr_at(self, epoch: int) -> float:
        return self.base_lr * self.lr_lambda(epoch)


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

    def lr_at(self, epoch: int) -> float:
        k = sum(1 for m in self.milestones if m <= epoch)
        start = self.milestones[k - 1] if k else 0
        self.schedulers[k].last_epoch = epoch - start
        return self.schedulers[k].lr_at(epoch - start)
