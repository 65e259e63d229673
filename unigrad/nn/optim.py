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
from typing import Any

import numpy as np

from unigrad.tensor import Tensor

__all__ = [
    "Optimizer",
    "ParamGroup",
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


class ParamGroup(dict):
    """One of torch's parameter groups: {'params': [...], 'lr': ..., option: value, ...}. Its 'lr' lives in a 0-d
    buffer (`lr_tensor`, tinygrad's `optimizer.lr`): reading group['lr'] reads the buffer, writing it swaps in a
    new buffer (no kernel, nothing recompiled). The other options are plain values read at each step (changing
    one changes the update graph: it is compiled again once)."""

    def __init__(self, options: dict[str, Any], lr: Tensor):
        super().__init__(options)
        self.lr_tensor = lr

    def __getitem__(self, key: str) -> Any:
        if key == "lr" and self.lr_tensor.numel() == 1:
            value, given = float(self.lr_tensor.item()), super().__getitem__("lr")
            if isinstance(given, float | int) and float(np.float32(given)) == value:
                return given  # the value set, not its float32 rounding in the buffer
            super().__setitem__("lr", value)  # the buffer was written directly (optimizer.lr.assign)
            return value
        return super().__getitem__(key)

    def __setitem__(self, key: str, value: Any) -> None:
        if key == "lr":
            self.lr_tensor = value if isinstance(value, Tensor) else _scalar(value, self.lr_tensor.device)
        super().__setitem__(key, value)


class Optimizer:
    """Base: holds the parameters (tensors with requires_grad True; None is turned on, as in tinygrad) in torch's
    parameter groups (`params` an iterable of tensors, or of dicts {'params': [...], option: value} whose options
    override the optimizer's defaults), and the buffers passed along with them (requires_grad False, e.g. running
    statistics from get_parameters), which are realized with each step. Subclasses build one parameter's update
    in `_update` from its group's options, and name each parameter's state in `_init_state`."""

    def __init__(self, params: Iterable[Tensor] | Iterable[dict[str, Any]], defaults: dict[str, Any]):
        self.defaults = defaults
        self.param_groups: list[ParamGroup] = []
        self.params: list[Tensor] = []
        self.buffers: list[Tensor] = []
        self.state: list[dict[str, Tensor]] = []  # per parameter (in self.params' order), by torch's names
        self._group_of: list[ParamGroup] = []
        items = list(params)
        groups = items if items and all(isinstance(g, dict) for g in items) else [{"params": items}]
        for g in groups:
            self.add_param_group(g)  # type: ignore[arg-type]
        if not self.params:
            raise ValueError(f"{type(self).__name__}: got an empty parameter list")
        self.device = self.params[0].device
        self.initial_lr: float | None = None  # the rate lr schedules start from (torch's 'initial_lr')

    def add_param_group(self, group: dict[str, Any]) -> None:
        """Add a group of parameters with its own options (the optimizer's defaults fill the rest), as torch."""
        if "params" not in group:
            raise ValueError(f"{type(self).__name__}: a parameter group needs a 'params' entry, got keys {list(group)}")
        given = group["params"]
        tensors = _unique([given] if isinstance(given, Tensor) else given)
        seen = {id(p) for p in self.params}
        if any(id(t) in seen for t in tensors):
            raise ValueError(f"{type(self).__name__}: some parameters appear in more than one parameter group")
        for t in tensors:
            if t.requires_grad is None:
                t.requires_grad = t.dtype.is_float  # an integer tensor can only be a buffer
        trainable = [t for t in tensors if t.requires_grad]
        self.buffers += [t for t in tensors if not t.requires_grad]
        options = {**self.defaults, **{k: v for k, v in group.items() if k != "params"}}
        lr = options.pop("lr")
        device = trainable[0].device if trainable else (self.params[0].device if self.params else tensors[0].device)
        pg = ParamGroup(
            {"params": trainable, "lr": lr, **options}, lr if isinstance(lr, Tensor) else _scalar(lr, device)
        )
        self._new_group(pg)
        self.param_groups.append(pg)
        for p in trainable:
            self.params.append(p)
            self._group_of.append(pg)
            self.state.append(self._init_state(p, pg))

    def _new_group(self, group: ParamGroup) -> None:
        """Check a new group's options (a clear error for bad ones) and make the state its parameters share
        (subclasses)."""

    def _init_state(self, p: Tensor, group: ParamGroup) -> dict[str, Tensor]:
        """A new parameter's state tensors by torch's names (subclasses)."""
        return {}

    # ------------------------------------------------------------ learning rate
    @property
    def lr(self) -> Tensor:
        """The first group's learning rate, a 0-d buffer (tinygrad's `optimizer.lr`)."""
        return self.param_groups[0].lr_tensor

    @lr.setter
    def lr(self, value: float | Tensor) -> None:
        self.param_groups[0]["lr"] = value

    def get_lr(self) -> float:
        return float(self.lr.item())

    def set_lr(self, lr: float) -> None:
        """Use `lr` in every group from the next step on: a new 0-d buffer (no kernel runs, nothing recompiled)."""
        for g in self.param_groups:
            g["lr"] = lr

    def _lr(self, i: int, p: Tensor) -> Tensor:
        lr = self._group_of[i].lr_tensor
        lr = lr.reshape(()) if lr.shape != () and lr.numel() == 1 else lr
        return lr.to(p.device)

    # ------------------------------------------------------------ checkpoints
    def state_dict(self) -> dict[str, Any]:
        """torch's layout: {'state': {param index: {name: tensor}}, 'param_groups': [{option: value, 'params':
        [param indices]}]}. The tensors are the optimizer's own (as torch's): save or copy them."""
        groups, start = [], 0
        for g in self.param_groups:
            n = len(g["params"])
            groups.append(
                {
                    **{k: v for k, v in g.items() if k != "params"},
                    "lr": g["lr"],
                    "params": list(range(start, start + n)),
                }
            )
            start += n
        return {"state": {i: dict(st) for i, st in enumerate(self.state) if st}, "param_groups": groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load a state_dict (ours or torch's layout, tensors or arrays): the groups' options and each parameter's
        state, written into the optimizer's buffers. The groups must have the same sizes."""
        groups = state_dict["param_groups"]
        sizes, ours = [len(g["params"]) for g in groups], [len(g["params"]) for g in self.param_groups]
        if sizes != ours:
            raise ValueError(
                f"{type(self).__name__}.load_state_dict: loaded parameter groups of sizes {sizes} do not match the "
                f"optimizer's {ours}"
            )
        for g, saved in zip(self.param_groups, groups):
            for k, v in saved.items():
                if k != "params":
                    g[k] = v
        index = {int(k): v for k, v in state_dict["state"].items()}
        flat = [i for g in groups for i in g["params"]]
        for pos, key in enumerate(flat):
            self._load_state(pos, index.get(int(key), {}))

    def _load_state(self, i: int, saved: dict[str, Any]) -> None:
        for name, value in saved.items():
            if name in self.state[i]:
                t = self.state[i][name]
                v = value if isinstance(value, Tensor) else Tensor(np.asarray(value, dtype=t.dtype.fmt))
                t.assign(v.to(t.device).cast(t.dtype).reshape(t.shape)).realize()

    # ------------------------------------------------------------ steps
    def zero_grad(self, set_to_none: bool = True) -> None:
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
        updated = self._step_counters({id(self._group_of[i]) for i, _ in live}) if live else []
        for i, p in live:
            assert p.grad is not None
            updated += self._update(i, p, p.grad.detach())
        self._step_done()
        return _unique([*reads, *updated, *self.params])  # type: ignore[list-item]

    def _step_counters(self, groups: set[int]) -> list[Tensor]:
        """Advance state shared by a group's parameters (once per step, for the groups by id that step); returns
        the tensors written."""
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
    with nesterov; p -= lr * g (maximize: +=). Positional order as tinygrad's SGD (lr, momentum, weight_decay,
    nesterov)."""

    def __init__(
        self,
        params: Iterable[Tensor] | Iterable[dict[str, Any]],
        lr: float | Tensor = 0.001,
        momentum: float = 0.0,
        weight_decay: float = 0.0,
        nesterov: bool = False,
        dampening: float = 0.0,
        *,
        maximize: bool = False,
    ):
        defaults = {"lr": lr, "momentum": momentum, "weight_decay": weight_decay, "nesterov": nesterov,
                    "dampening": dampening, "maximize": maximize}  # fmt: skip
        self._started: set[int] = set()  # parameters whose momentum buffer has been written
        super().__init__(params, defaults)

    def _new_group(self, group: ParamGroup) -> None:
        if group["nesterov"] and (group["momentum"] <= 0 or group["dampening"] != 0):
            raise ValueError("SGD: nesterov momentum requires a momentum and zero dampening")

    def _init_state(self, p: Tensor, group: ParamGroup) -> dict[str, Tensor]:
        return {"momentum_buffer": _state_like(p)} if group["momentum"] else {}

    def _update(self, i: int, p: Tensor, g: Tensor) -> list[Tensor]:
        group = self._group_of[i]
        if group["maximize"]:
            g = -g
        if group["weight_decay"]:
            g = g + group["weight_decay"] * p.detach()
        written = [p]
        momentum, dampening = group["momentum"], group["dampening"]
        if momentum:
            buf = self.state[i].setdefault("momentum_buffer", _state_like(p))
            if i in self._started or not dampening:  # from a zero buffer the general rule gives buf = g too
                buf.assign(momentum * buf + (1 - dampening) * g)
            else:
                buf.assign(g)
            self._started.add(i)
            g = g + momentum * buf if group["nesterov"] else buf
            written.append(buf)
        p.assign(p.detach() - self._lr(i, p) * g)
        return written

    def _load_state(self, i: int, saved: dict[str, Any]) -> None:
        super()._load_state(i, saved)
        if "momentum_buffer" in saved and saved["momentum_buffer"] is not None:  # the buffer goes on from its value
            self._started.add(i)


def _betas(b1: float, b2: float, betas: tuple[float, float] | None) -> tuple[float, float]:
    return (b1, b2) if betas is None else (float(betas[0]), float(betas[1]))


class _AdamFamily(Optimizer):
    """Adam's moments and bias corrections, shared by Adam, AdamW and LAMB:
    m = b1 m + (1 - b1) g, v = b2 v + (1 - b2) g^2, up = (m / (1 - b1^t)) / (sqrt(v) / sqrt(1 - b2^t) + eps).
    b1^t and b2^t are running products in 0-d buffers (one pair per parameter group: t counts its steps); `steps`
    counts them in Python too (torch's per-parameter 'step' in state_dict)."""

    def __init__(self, params: Iterable[Tensor] | Iterable[dict[str, Any]], defaults: dict[str, Any]):
        self._powers: dict[int, tuple[Tensor, Tensor]] = {}  # per group (by id): the running b1^t, b2^t
        self._steps: dict[int, int] = {}
        self._corrections: dict[tuple[int, str], tuple[Tensor, Tensor]] = {}  # this step's: _bias_corrections
        super().__init__(params, defaults)

    def _new_group(self, group: ParamGroup) -> None:
        b1, b2 = group["betas"]
        if not (0 <= b1 < 1 and 0 <= b2 < 1):
            raise ValueError(f"{type(self).__name__}: invalid beta parameters {group['betas']}: each must be in [0, 1)")
        if group["eps"] < 0:
            raise ValueError(f"{type(self).__name__}: invalid epsilon value {group['eps']}")
        device = group["params"][0].device if group["params"] else "CPU"
        self._powers[id(group)] = (_scalar(1.0, device), _scalar(1.0, device))
        self._steps[id(group)] = 0

    def _init_state(self, p: Tensor, group: ParamGroup) -> dict[str, Tensor]:
        st = {"exp_avg": _state_like(p), "exp_avg_sq": _state_like(p)}
        if group["amsgrad"]:
            st["max_exp_avg_sq"] = _state_like(p)
        return st

    def _step_counters(self, groups: set[int]) -> list[Tensor]:
        written = []
        for g in self.param_groups:
            if id(g) in groups:
                b1, b2 = g["betas"]
                b1_t, b2_t = self._powers[id(g)]
                b1_t.assign(b1_t * b1)
                b2_t.assign(b2_t * b2)
                self._steps[id(g)] += 1
                written += [b1_t, b2_t]
        return written

    def _step_done(self) -> None:
        self._corrections.clear()

    def _bias_corrections(self, group: ParamGroup, device: str) -> tuple[Tensor, Tensor]:
        """1 / (1 - b1^t) and 1 / sqrt(1 - b2^t) on `device`: 0-d tensors built once per step, group and device."""
        if (c := self._corrections.get((id(group), device))) is None:
            b1_t, b2_t = (t.to(device) for t in self._powers[id(group)])
            c = self._corrections[(id(group), device)] = ((1 - b1_t).reciprocal(), (1 - b2_t).rsqrt())
        return c

    def _adam_direction(self, i: int, g: Tensor) -> tuple[Tensor, list[Tensor]]:
        """The bias-corrected Adam direction for parameter i after folding in gradient g; the state written."""
        group, st = self._group_of[i], self.state[i]
        b1, b2 = group["betas"]
        m, v = st["exp_avg"], st["exp_avg_sq"]
        m.assign(b1 * m + (1 - b1) * g)
        v.assign(b2 * v + (1 - b2) * (g * g))
        written = [m, v]
        if group["amsgrad"]:
            v_max = st.setdefault("max_exp_avg_sq", _state_like(v))
            v_max.assign(v_max.maximum(v))
            v = v_max
            written.append(v)
        inv_c1, inv_sqrt_c2 = self._bias_corrections(group, g.device)
        return m * inv_c1 / (v.sqrt() * inv_sqrt_c2 + group["eps"]), written

    def state_dict(self) -> dict[str, Any]:
        sd = super().state_dict()
        for i, st in sd["state"].items():
            st["step"] = Tensor(np.float32(self._steps[id(self._group_of[i])]))
        return sd

    def _load_state(self, i: int, saved: dict[str, Any]) -> None:
        super()._load_state(i, saved)
        if "step" in saved:  # the group's step count and its running powers of the betas
            step = saved["step"]
            t = int(step.item() if isinstance(step, Tensor) else np.asarray(step).item())
            group = self._group_of[i]
            b1, b2 = group["betas"]
            self._steps[id(group)] = t
            for buf, beta in zip(self._powers[id(group)], (b1, b2)):
                buf.assign(Tensor(np.float32(beta**t), device=buf.device)).realize()


class Adam(_AdamFamily):
    """torch.optim.Adam: weight_decay is an L2 term added to the gradient (g += wd * p), then
    p -= lr * up. Positional order as tinygrad's (lr, b1, b2, eps); torch's `betas` as a keyword."""

    default_weight_decay = 0.0

    def __init__(
        self,
        params: Iterable[Tensor] | Iterable[dict[str, Any]],
        lr: float | Tensor = 0.001,
        b1: float = 0.9,
        b2: float = 0.999,
        eps: float = 1e-8,
        weight_decay: float | None = None,
        amsgrad: bool = False,
        *,
        betas: tuple[float, float] | None = None,
        maximize: bool = False,
    ):
        wd = self.default_weight_decay if weight_decay is None else weight_decay
        defaults = {"lr": lr, "betas": _betas(b1, b2, betas), "eps": eps, "weight_decay": wd, "amsgrad": amsgrad,
                    "maximize": maximize}  # fmt: skip
        super().__init__(params, defaults)

    def _update(self, i: int, p: Tensor, g: Tensor) -> list[Tensor]:
        group = self._group_of[i]
        if group["maximize"]:
            g = -g
        if group["weight_decay"]:
            g = g + group["weight_decay"] * p.detach()
        up, written = self._adam_direction(i, g)
        p.assign(p.detach() - self._lr(i, p) * up)
        return [p, *written]


class AdamW(Adam):
    """torch.optim.AdamW: decoupled weight decay, p -= lr * (up + wd * p); Adam's arguments, wd default 0.01."""

    default_weight_decay = 0.01

    def _update(self, i: int, p: Tensor, g: Tensor) -> list[Tensor]:
        group = self._group_of[i]
        if group["maximize"]:
            g = -g
        up, written = self._adam_direction(i, g)
        lr = self._lr(i, p)
        p.assign(p.detach() * (1 - lr * group["weight_decay"]) - lr * up)
        return [p, *written]


class LAMB(_AdamFamily):
    """LAMB (You et al., 2019, as tinygrad's): the AdamW direction u = up + wd * p scaled per parameter by the
    trust ratio ||p|| / ||u|| (1 where either norm is 0): p -= lr * ratio * u. adam=True skips the ratio."""

    def __init__(
        self,
        params: Iterable[Tensor] | Iterable[dict[str, Any]],
        lr: float | Tensor = 0.001,
        b1: float = 0.9,
        b2: float = 0.999,
        eps: float = 1e-6,
        weight_decay: float = 0.0,
        adam: bool = False,
        *,
        betas: tuple[float, float] | None = None,
    ):
        defaults = {"lr": lr, "betas": _betas(b1, b2, betas), "eps": eps, "weight_decay": weight_decay,
                    "amsgrad": False, "adam": adam}  # fmt: skip
        super().__init__(params, defaults)

    def _update(self, i: int, p: Tensor, g: Tensor) -> list[Tensor]:
        group = self._group_of[i]
        up, written = self._adam_direction(i, g)
        w = p.detach()
        wd = group["weight_decay"]
        u = up + wd * w if wd else up
        if not group["adam"]:
            r1, r2 = w.square().sum().sqrt(), u.square().sum().sqrt()
            u = u * (r1 > 0).where((r2 > 0).where(r1 / r2, 1.0), 1.0)
        p.assign(w - self._lr(i, p) * u)
        return [p, *written]


# ---------------------------------------------------------------- learning-rate schedules


class LRScheduler:
    """Sets each parameter group's lr from a closed form in the epoch count, as torch.optim.lr_scheduler:
    constructing it sets the epoch-0 rates; each `step()` advances one epoch. A group's base rate is its rate when
    the optimizer's first scheduler was made (kept as the group's 'initial_lr', and the first group's as
    optimizer.initial_lr, so schedulers combined in SequentialLR agree)."""

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

    def get_lr(self) -> float:
        """The first group's rate at the current epoch."""
        return self.lr_at(self.last_epoch, self.base_lr)

    def get_last_lr(self) -> list[float]:
        """The rates set by the last step, one per parameter group (as torch)."""
        return list(self._last_lr)

    def step(self) -> None:
        self.last_epoch += 1
        self._last_lr = [self.lr_at(self.last_epoch, base) for base in self.base_lrs]
        for g, lr in zip(self.optimizer.param_groups, self._last_lr):
            g["lr"] = lr


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

    def lr_at(self, epoch: int, base: float) -> float:
        k = sum(1 for m in self.milestones if m <= epoch)
        start = self.milestones[k - 1] if k else 0
        self.schedulers[k].last_epoch = epoch - start
        return self.schedulers[k].lr_at(epoch - start, base)
