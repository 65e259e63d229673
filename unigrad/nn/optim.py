"""unigrad.nn.optim: torch.optim's optimizers (SGD, Adam, AdamW, RMSprop, Adagrad, Adadelta, Adamax, NAdam, RAdam,
LBFGS) and tinygrad's (SGD(classic=), LARS, LAMB, OptimizerGroup); the learning-rate schedules live in
unigrad.nn.lr_scheduler and are re-exported here.

An optimizer updates its parameters and its state in place with `assign`, and `step()` realizes every write
in one schedule: one `Tensor.realize` of the parameters, the state, the gradients and any assign still
pending (BatchNorm running statistics, ...), so a pending graph that reads a parameter runs before the
parameter is overwritten.

Nothing a step depends on is a Python number that changes from step to step, so the update graph keeps its
structure (schedules hit the schedule and program caches) and a step captured by TinyJit replays correctly:
- the learning rate is a 0-d float32 buffer (`optimizer.lr`, a Tensor as in tinygrad), and the options schedules
  cycle (momentum, betas) are float64 buffers; setting one (`group['lr'] = x`, `set_lr`, a scheduler) writes the
  new value into its buffer in place (a copy in and one small kernel, compiled once);
- the step count t is a 0-d float64 buffer per parameter group, advanced by the step; whatever depends on t
  (Adam's bias corrections, NAdam's momentum schedule, RAdam's rectification, Adagrad's lr decay) is computed from
  it on the device, in float64 (as torch does these scalars in Python), fused into the update kernels.

A lazy tensor built before a step reads the parameters' buffers when it is realized: realize the loss
before `step()`, with it (`Tensor.realize(loss, *opt.schedule_step())`), or pass a closure to `step` as in
torch (its loss is realized in the step's schedule, with the values from before the update).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from unigrad import flavor
from unigrad.api.torch_functions import enable_grad
from unigrad.dtype import DType, dtypes
from unigrad.nn import lr_scheduler
from unigrad.nn.lr_scheduler import (
    ConstantLR,
    CosineAnnealingLR,
    CosineAnnealingWarmRestarts,
    CyclicLR,
    ExponentialLR,
    LambdaLR,
    LinearLR,
    LRScheduler,
    MultiStepLR,
    OneCycleLR,
    PolynomialLR,
    ReduceLROnPlateau,
    SequentialLR,
    StepLR,
)
from unigrad.function import function
from unigrad.runtime.realize import end_step
from unigrad.tensor import Tensor

__all__ = [
    "Optimizer",
    "ParamGroup",
    "SGD",
    "LARS",
    "OptimizerGroup",
    "Adam",
    "AdamW",
    "LAMB",
    "RMSprop",
    "Adagrad",
    "Adadelta",
    "Adamax",
    "NAdam",
    "RAdam",
    "LBFGS",
    "lr_scheduler",
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

Params = Iterable[Tensor] | Iterable[dict[str, Any]]


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


def _scalar(value: Any, device: str | tuple[str, ...], dtype: DType = dtypes.float32) -> Tensor:
    """A fresh buffer holding `value` (a float: 0-d; a tuple of floats: 1-d)."""
    return Tensor(np.array(value, dtype=dtype.fmt), device=device).requires_grad_(False)


def _write(buf: Tensor, value: Any) -> None:
    """Write `value` into buf's buffer in place, now (a jitted step reads the same buffer on its next replay)."""
    new = Tensor(np.asarray(value, dtype=buf.dtype.fmt).reshape(buf.shape), device=buf.device)
    buf.assign(new).realize()


class ParamGroup(dict):
    """One of torch's parameter groups: {'params': [...], 'lr': ..., option: value, ...}. Its 'lr' lives in a 0-d
    float32 buffer (`lr_tensor`, tinygrad's `optimizer.lr`): reading group['lr'] reads the buffer, writing a
    number writes it into the buffer in place (writing a Tensor makes that tensor the rate). An optimizer asks
    for the options schedules change (momentum, betas) as buffers too (`tensor`), written in place the same way.
    The other options are plain values read at each step (changing one changes the update graph: it is compiled
    again once)."""

    def __init__(self, options: dict[str, Any], device: str | tuple[str, ...]):
        lr = options["lr"]
        super().__init__(options)
        self.device = device
        self.lr_tensor = lr if isinstance(lr, Tensor) else _scalar(lr, device)
        self._own_lr = not isinstance(lr, Tensor)  # a rate given as a Tensor is the caller's: never written into
        self._tensors: dict[str, Tensor] = {}

    def __getitem__(self, key: str) -> Any:
        if key == "lr" and self.lr_tensor.numel() == 1:
            value, given = float(self.lr_tensor.item()), super().__getitem__("lr")
            if isinstance(given, float | int) and float(np.float32(given)) == value:
                return given  # the value set, not its float32 rounding in the buffer
            super().__setitem__("lr", value)  # the buffer was written directly (optimizer.lr.assign)
            return value
        return super().__getitem__(key)

    def __setitem__(self, key: str, value: Any) -> None:
        if key == "lr" and isinstance(value, Tensor):
            self.lr_tensor, self._own_lr = value, False
        elif key == "lr" and self._own_lr:
            _write(self.lr_tensor, value)
        elif key == "lr":
            self.lr_tensor, self._own_lr = _scalar(value, self.device), True
        elif key in self._tensors:
            _write(self._tensors[key], value)
        super().__setitem__(key, value)

    def tensor(self, key: str) -> Tensor:
        """Option `key` (a float, or a tuple of floats such as betas) as a float64 buffer (0-d or 1-d), made on
        first use and written in place whenever the option is set: an update built from it is neither compiled
        again nor stale under TinyJit when a schedule changes the option every step."""
        if key not in self._tensors:
            self._tensors[key] = _scalar(super().__getitem__(key), self.device, dtypes.float64)
        return self._tensors[key]


class Optimizer:
    """Base: holds the parameters (tensors with requires_grad True; None is turned on, as in tinygrad) in torch's
    parameter groups (`params` an iterable of tensors, or of dicts {'params': [...], option: value} whose options
    override the optimizer's defaults), and the buffers passed along with them (requires_grad False, e.g. running
    statistics from get_parameters), which are realized with each step. Subclasses check a group's options in
    `_new_group`, build one parameter's update in `_update` from its group's options, and name each parameter's
    state in `_init_state`."""

    def __init__(self, params: Params, defaults: dict[str, Any]):
        self.defaults = defaults
        self.param_groups: list[ParamGroup] = []
        self.params: list[Tensor] = []
        self.buffers: list[Tensor] = []
        self.state: list[dict[str, Tensor]] = []  # per parameter (in self.params' order), by torch's names
        self._group_of: list[ParamGroup] = []
        items = list(params)
        if not items:
            raise ValueError(f"{type(self).__name__}: got an empty parameter list")
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
        for t in tensors:
            if not isinstance(t, Tensor):
                raise TypeError(
                    f"{type(self).__name__} can only optimize Tensors, but one of the params is {type(t).__name__}"
                )
        seen = {id(p) for p in self.params}
        if any(id(t) in seen for t in tensors):
            raise ValueError(f"{type(self).__name__}: some parameters appear in more than one parameter group")
        for t in tensors:
            if t._requires_grad is None:  # undecided (a module's parameter reads True until then): decided here
                t.requires_grad = t.dtype.is_float  # an integer tensor can only be a buffer
        trainable = [t for t in tensors if t.requires_grad]
        self.buffers += [t for t in tensors if not t.requires_grad]
        options = {**self.defaults, **{k: v for k, v in group.items() if k != "params"}}
        lr = options["lr"]
        self._check(isinstance(lr, Tensor) or lr >= 0, f"learning rate {lr} (must be >= 0)")
        device = trainable[0].device if trainable else (self.params[0].device if self.params else tensors[0].device)
        pg = ParamGroup({"params": trainable, **options}, device)
        self._new_group(pg)
        self.param_groups.append(pg)
        for p in trainable:
            self.params.append(p)
            self._group_of.append(pg)
            self.state.append(self._init_state(p, pg))

    def _check(self, ok: bool, what: str) -> None:
        """torch's argument checks: a ValueError naming the optimizer and the bad value."""
        if not ok:
            raise ValueError(f"{type(self).__name__}: invalid {what}")

    def _check_options(self, group: ParamGroup, *keys: str) -> None:
        """Options that must be >= 0, by name (torch's 'Invalid epsilon value', ...)."""
        for key in keys:
            self._check(group[key] >= 0, f"{key} value {group[key]} (must be >= 0)")

    def _new_group(self, group: ParamGroup) -> None:
        """Check a new group's options (a clear error for bad ones) and make the state its parameters share
        (subclasses)."""

    def _init_state(self, p: Tensor, group: ParamGroup) -> dict[str, Tensor]:
        """A new parameter's state tensors by torch's names (subclasses)."""
        return {}

    # ------------------------------------------------------------ learning rate and scheduled options
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
        """Use `lr` in every group from the next step on (written into each group's rate buffer in place)."""
        for g in self.param_groups:
            g["lr"] = lr

    def _lr(self, i: int, p: Tensor) -> Tensor:
        lr = self._group_of[i].lr_tensor
        lr = lr.reshape(()) if lr.shape != () and lr.numel() == 1 else lr
        return lr.to(p.device)

    def _option(self, i: int, key: str, device: str | tuple[str, ...]) -> Tensor:
        """Parameter i's group option `key` as its float64 buffer (ParamGroup.tensor) on `device`."""
        return self._group_of[i].tensor(key).to(device)

    def _grad(self, i: int, p: Tensor, g: Tensor) -> Tensor:
        """The gradient the update follows: negated with maximize, plus torch's coupled (L2) weight decay
        weight_decay * p."""
        group = self._group_of[i]
        if group.get("maximize"):
            g = -g
        return g + group["weight_decay"] * p.detach() if group["weight_decay"] else g

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
        """Drop the gradients (set_to_none=False: zeros in their place, as torch, so the next step still updates
        those parameters: momentum and Adam's moments go on with a zero gradient)."""
        for p in self.params:
            p.grad = None if set_to_none or p.grad is None else p.grad.zeros_like()

    def step(self, closure: Callable[[], Tensor] | None = None) -> Tensor | None:
        """Update every parameter that has a gradient, in one schedule. A closure (torch's) is called first: it
        recomputes the loss and its gradients; its loss is realized with the update and returned."""
        loss = closure() if closure is not None else None
        extra = [loss] if isinstance(loss, Tensor) else []
        Tensor.realize(*extra, *self.schedule_step())
        end_step()  # DEBUG=1: the step's kernels and eager overhead
        return loss

    def schedule_step(self) -> list[Tensor]:
        """Build the update (assigns, not yet run) and return every tensor the step must realize (tinygrad's
        name): realize them, with anything else that should see the parameters from before the update. In tinygrad's
        flavor a step needs train mode (Tensor.training), as tinygrad asserts."""
        if flavor.current().step_needs_training and not Tensor.training:
            raise RuntimeError(
                f"{type(self).__name__}.step(): Tensor.training is False; an optimizer steps only in train mode "
                "(tinygrad's rule). Wrap the training loop in `with Tensor.train():`, or set `Tensor.training = True` "
                "or `Context(TRAINING=1)`"
            )
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
    nesterov, classic). classic=True (tinygrad's) scales g by lr before the momentum: buf = momentum * buf + lr * g,
    p -= buf. `fused` (tinygrad's) is accepted: every step is one schedule already."""

    def __init__(
        self,
        params: Params,
        lr: float | Tensor = 0.001,
        momentum: float = 0.0,
        weight_decay: float = 0.0,
        nesterov: bool = False,
        classic: bool = False,
        *,
        dampening: float = 0.0,
        maximize: bool = False,
        fused: bool | None = None,
    ):
        defaults = {"lr": lr, "momentum": momentum, "weight_decay": weight_decay, "nesterov": nesterov,
                    "classic": classic, "dampening": dampening, "maximize": maximize}  # fmt: skip
        self._init_sgd(params, defaults)

    def _init_sgd(self, params: Params, defaults: dict[str, Any]) -> None:
        self._started: set[int] = set()  # parameters whose momentum buffer has been written
        Optimizer.__init__(self, params, defaults)

    def _new_group(self, group: ParamGroup) -> None:
        self._check_options(group, "momentum", "weight_decay")
        if group["nesterov"] and (group["momentum"] <= 0 or group["dampening"] != 0):
            raise ValueError("SGD: nesterov momentum requires a momentum and zero dampening")

    def _init_state(self, p: Tensor, group: ParamGroup) -> dict[str, Tensor]:
        return {"momentum_buffer": _state_like(p)} if group["momentum"] else {}

    def _trust_ratio(self, i: int, p: Tensor, g: Tensor) -> Tensor | None:
        """A per-parameter factor on the learning rate (LARS), or None."""
        return None

    def _update(self, i: int, p: Tensor, g: Tensor) -> list[Tensor]:
        group = self._group_of[i]
        ratio = self._trust_ratio(i, p, g)
        g = self._grad(i, p, g)
        rate = self._lr(i, p) if ratio is None else self._lr(i, p) * ratio
        if group.get("classic"):  # the rate applied before the momentum
            g = g * rate
        written = [p]
        if group["momentum"]:
            momentum, dampening = self._option(i, "momentum", p.device).cast(g.dtype), group["dampening"]
            buf = self.state[i].setdefault("momentum_buffer", _state_like(p))
            if i in self._started or not dampening:  # from a zero buffer the general rule gives buf = g too
                buf.assign(momentum * buf + (1 - dampening) * g)
            else:
                buf.assign(g)
            self._started.add(i)
            g = g + momentum * buf if group["nesterov"] else buf
            written.append(buf)
        p.assign(p.detach() - (g if group.get("classic") else rate * g))
        return written

    def _load_state(self, i: int, saved: dict[str, Any]) -> None:
        super()._load_state(i, saved)
        if "momentum_buffer" in saved and saved["momentum_buffer"] is not None:  # the buffer goes on from its value
            self._started.add(i)


class LARS(SGD):
    """LARS (You et al., 2017, as tinygrad's): SGD whose rate is scaled per parameter by the trust ratio
    tcoef * ||p|| / (||g|| + weight_decay * ||p||) (1 where ||p|| or ||g|| is 0; tcoef=0 turns it off: plain SGD),
    g the gradient before weight decay. Then as SGD: g += weight_decay * p; classic (the default): the scaled rate
    before the momentum, buf = momentum * buf + lr * ratio * g, p -= buf; else p -= lr * ratio * buf."""

    def __init__(
        self,
        params: Params,
        lr: float | Tensor = 0.001,
        momentum: float = 0.9,
        weight_decay: float = 1e-4,
        nesterov: bool = False,
        classic: bool = True,
        tcoef: float = 0.001,
        *,
        dampening: float = 0.0,
        maximize: bool = False,
        fused: bool | None = None,
    ):
        defaults = {"lr": lr, "momentum": momentum, "weight_decay": weight_decay, "nesterov": nesterov,
                    "classic": classic, "tcoef": tcoef, "dampening": dampening, "maximize": maximize}  # fmt: skip
        self._init_sgd(params, defaults)

    def _new_group(self, group: ParamGroup) -> None:
        super()._new_group(group)
        self._check_options(group, "tcoef")

    def _trust_ratio(self, i: int, p: Tensor, g: Tensor) -> Tensor | None:
        group = self._group_of[i]
        if not group["tcoef"]:
            return None
        w = p.detach()
        r1, r2 = w.square().sum().sqrt(), g.square().sum().sqrt()
        ratio = group["tcoef"] * r1 / (r2 + group["weight_decay"] * r1)
        return (r1 > 0).where((r2 > 0).where(ratio, 1.0), 1.0)


class OptimizerGroup(Optimizer):
    """tinygrad's OptimizerGroup: several optimizers (each over its own parameters) stepped as one, in one
    schedule; `group[i]` is the i-th."""

    def __init__(self, *optimizers: Optimizer):
        if not optimizers:
            raise ValueError("OptimizerGroup: needs at least one optimizer")
        self.optimizers = list(optimizers)
        self.params = [p for o in optimizers for p in o.params]
        self.buffers = [b for o in optimizers for b in o.buffers]
        self.param_groups = [g for o in optimizers for g in o.param_groups]
        self.device = optimizers[0].device

    def __getitem__(self, i: int) -> Optimizer:
        return self.optimizers[i]

    def __len__(self) -> int:
        return len(self.optimizers)

    def zero_grad(self, set_to_none: bool = True) -> None:
        for o in self.optimizers:
            o.zero_grad(set_to_none)

    def schedule_step(self) -> list[Tensor]:
        return _unique([t for o in self.optimizers for t in o.schedule_step()])

    def state_dict(self) -> dict[str, Any]:
        return {"optimizers": [o.state_dict() for o in self.optimizers]}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        for o, sd in zip(self.optimizers, state_dict["optimizers"], strict=True):
            o.load_state_dict(sd)


class _StepCounted(Optimizer):
    """An optimizer with torch's per-parameter state['step'] (the number of updates a parameter has had): t lives
    in a 0-d float64 buffer per parameter group, advanced by each step that updates any of the group's
    parameters, so a jitted step replays with the right count. A parameter without a gradient in a step its group
    takes falls behind, as in torch: its t is the group's plus an offset kept in Python (0 unless it missed steps
    or loaded another count; a new offset changes the update graph once)."""

    def __init__(self, params: Params, defaults: dict[str, Any]):
        self._counts: dict[int, Tensor] = {}  # per group (by id): its step count
        self._offsets: dict[int, int] = {}  # per parameter index, where not 0
        super().__init__(params, defaults)

    def _new_group(self, group: ParamGroup) -> None:
        self._counts[id(group)] = _scalar(0.0, group.device, dtypes.float64)

    def _step_counters(self, groups: set[int]) -> list[Tensor]:
        written = []
        for g in self.param_groups:
            if id(g) in groups:
                count = self._counts[id(g)]
                count.assign(count + 1)
                written.append(count)
        for i, p in enumerate(self.params):
            if p.grad is None and id(self._group_of[i]) in groups:
                self._offsets[i] = self._offsets.get(i, 0) - 1
        return written

    def _step_count(self, i: int, device: str | tuple[str, ...]) -> Tensor:
        """Parameter i's step count t (counting the step being built), a float64 0-d tensor on `device`."""
        t = self._counts[id(self._group_of[i])].to(device)
        offset = self._offsets.get(i, 0)
        return t + offset if offset else t

    def state_dict(self) -> dict[str, Any]:
        sd = super().state_dict()
        for i, st in sd["state"].items():
            count = self._counts[id(self._group_of[i])].item() + self._offsets.get(i, 0)
            st["step"] = Tensor(np.float32(count))
        return sd

    def _load_state(self, i: int, saved: dict[str, Any]) -> None:
        super()._load_state(i, saved)
        if "step" in saved:  # the parameter's count: an offset from its group's
            step = saved["step"]
            t = int(step.item() if isinstance(step, Tensor) else np.asarray(step).item())
            self._offsets[i] = t - int(self._counts[id(self._group_of[i])].item())


def _betas(b1: float, b2: float, betas: tuple[float, float] | None) -> tuple[float, float]:
    return (b1, b2) if betas is None else (float(betas[0]), float(betas[1]))


class _AdamFamily(_StepCounted):
    """Adam's moments and bias corrections, shared by Adam, AdamW and LAMB:
    m = b1 m + (1 - b1) g, v = b2 v + (1 - b2) g^2, up = (m / (1 - b1^t)) / (sqrt(v) / sqrt(1 - b2^t) + eps),
    with torch's betas**step from the step count and the betas' buffers (float64)."""

    def __init__(self, params: Params, defaults: dict[str, Any]):
        self._corrections: dict[tuple[Any, ...], tuple[Tensor, ...]] = {}  # this step's: _adam_scalars
        super().__init__(params, defaults)

    def _new_group(self, group: ParamGroup) -> None:
        _check_betas(self, group)
        self._check(group["eps"] >= 0, f"epsilon value {group['eps']} (must be >= 0)")
        self._check(group["weight_decay"] >= 0, f"weight_decay value {group['weight_decay']} (must be >= 0)")
        super()._new_group(group)

    def _init_state(self, p: Tensor, group: ParamGroup) -> dict[str, Tensor]:
        st = {"exp_avg": _state_like(p), "exp_avg_sq": _state_like(p)}
        if group["amsgrad"]:
            st["max_exp_avg_sq"] = _state_like(p)
        return st

    def _step_done(self) -> None:
        self._corrections.clear()

    def _bias_corrections(self, i: int, device: str | tuple[str, ...]) -> tuple[Tensor, Tensor]:
        """1 / (1 - b1^t) and 1 / sqrt(1 - b2^t) (float64, 0-d) for parameter i: built once per step for the
        parameters of a group that share a step count."""
        key = (id(self._group_of[i]), self._offsets.get(i, 0), device)
        if (c := self._corrections.get(key)) is None:
            t, b = self._step_count(i, device), self._option(i, "betas", device)
            c = self._corrections[key] = ((1 - _pow(b[0], t)).reciprocal(), (1 - _pow(b[1], t)).rsqrt())
        return c

    def _adam_scalars(self, i: int, g: Tensor) -> tuple[Tensor, ...]:
        """b2, 1 - b1, 1 - b2, 1 / (1 - b1^t) and 1 / sqrt(1 - b2^t) in g's dtype (0-d): the same for the parameters
        of a group that share a step count, device and dtype, so built once a step for them."""
        key = ("scalars", id(self._group_of[i]), self._offsets.get(i, 0), g.device, g.dtype)
        if (s := self._corrections.get(key)) is None:
            b1, b2 = _beta_weights(self._option(i, "betas", g.device), g.dtype)
            inv_c1, inv_sqrt_c2 = (c.cast(g.dtype) for c in self._bias_corrections(i, g.device))
            s = self._corrections[key] = (b2, 1 - b1, 1 - b2, inv_c1, inv_sqrt_c2)
        return s

    def _adam_direction(self, i: int, g: Tensor) -> tuple[Tensor, list[Tensor]]:
        """The bias-corrected Adam direction for parameter i after folding in gradient g; the state written."""
        group, st = self._group_of[i], self.state[i]
        b2, one_minus_b1, one_minus_b2, inv_c1, inv_sqrt_c2 = self._adam_scalars(i, g)
        m, v = st["exp_avg"], st["exp_avg_sq"]
        new_m, new_v = _adam_moments(g, m, v, b2, one_minus_b1, one_minus_b2)
        m.assign(new_m)
        v.assign(new_v)
        written = [m, v]
        if group["amsgrad"]:
            v_max = st.setdefault("max_exp_avg_sq", _state_like(v))
            v_max.assign(v_max.maximum(v))
            v = v_max
            written.append(v)
        return _adam_up(m, v, inv_c1, inv_sqrt_c2, group["eps"]), written


def _check_betas(opt: Optimizer, group: ParamGroup) -> None:
    b1, b2 = group["betas"]
    if not (0 <= b1 < 1 and 0 <= b2 < 1):
        raise ValueError(f"{type(opt).__name__}: invalid beta parameters {group['betas']}: each must be in [0, 1)")


def _pow(base: Tensor | float, t: Tensor) -> Tensor:
    """base ** t for a base in [0, 1) and an exponent t >= 0 (a step count), as exp2(t * log2(base)): the three
    ops of a non-negative base (Tensor.pow's general case, negative bases and integer exponents included, builds
    some 40 nodes, about 0.6 ms of Python each step)."""
    log_base = math.log2(base) if isinstance(base, float) else base.log2()
    return (t * log_base).exp2()


def _beta_weights(betas: Tensor, dtype: DType) -> tuple[Tensor, Tensor]:
    """b1 and b2 from the betas' float64 buffer, in the update's dtype (1 - b is best taken from these, as torch
    rounds its Python 1 - beta once)."""
    return betas[0].cast(dtype), betas[1].cast(dtype)


def _adam_moments(g: Tensor, m: Tensor, v: Tensor, b2: Tensor, one_minus_b1: Tensor, one_minus_b2: Tensor) -> tuple:
    """Adam's new moments from gradient g: m lerped toward g (torch's lerp), v toward g^2."""
    return m + (g - m) * one_minus_b1, v * b2 + one_minus_b2 * (g * g)


def _adam_up(m: Tensor, v: Tensor, inv_c1: Tensor, inv_sqrt_c2: Tensor, eps: float) -> Tensor:
    """The bias-corrected direction from the moments: (m / (1 - b1^t)) / (sqrt(v) / sqrt(1 - b2^t) + eps)."""
    return m * inv_c1 / (v.sqrt() * inv_sqrt_c2 + eps)


def _decayed_step(p: Tensor, up: Tensor, lr: Tensor, decoupled: float) -> Tensor:
    """p - lr * up, after AdamW's decoupled weight decay p * (1 - lr * decoupled) (0: Adam, none)."""
    return p * (1 - lr * decoupled) - lr * up if decoupled else p - lr * up


def _adam_param(
    p: Tensor, m: Tensor, v: Tensor, lr: Tensor, inv_c1: Tensor, inv_sqrt_c2: Tensor, eps: float, decoupled: float
) -> Tensor:
    """The new parameter from the new moments m and v."""
    return _decayed_step(p, _adam_up(m, v, inv_c1, inv_sqrt_c2, eps), lr, decoupled)


# a parameter's update as two @function calls, traced once per shapes and dtypes (and eps, weight decay): a call is a
# few nodes where the composition op by op built ~15 tensors (~45 us of Python per parameter per step). Two, with the
# moments assigned in between: the parameter's update reads them as written, which lets the scheduler merge the three
# stores into one kernel (merge.py: a member reads another's output only at the element it stores)
_adam_moments_call = function(_adam_moments)
_adam_param_call = function(_adam_param)


class Adam(_AdamFamily):
    """torch.optim.Adam: weight_decay is an L2 term added to the gradient (g += wd * p), then
    p -= lr * up. Positional order as tinygrad's (lr, b1, b2, eps); torch's `betas` as a keyword."""

    default_weight_decay = 0.0

    def __init__(
        self,
        params: Params,
        lr: float | Tensor = 0.001,
        b1: float = 0.9,
        b2: float = 0.999,
        eps: float = 1e-8,
        weight_decay: float | None = None,
        amsgrad: bool = False,
        *,
        betas: tuple[float, float] | None = None,
        maximize: bool = False,
        fused: bool | None = None,  # tinygrad's: accepted (a step is one schedule already)
    ):
        wd = self.default_weight_decay if weight_decay is None else weight_decay
        defaults = {"lr": lr, "betas": _betas(b1, b2, betas), "eps": eps, "weight_decay": wd, "amsgrad": amsgrad,
                    "maximize": maximize}  # fmt: skip
        super().__init__(params, defaults)

    def _update(self, i: int, p: Tensor, g: Tensor) -> list[Tensor]:
        return self._step(i, p, self._grad(i, p, g), 0.0)

    def _step(self, i: int, p: Tensor, g: Tensor, decoupled: float) -> list[Tensor]:
        """Parameter i's update after gradient g (decoupled: AdamW's weight decay): as two calls, the moments
        (_adam_moments), assigned, then the parameter from them; amsgrad, or a tensor over several devices, op by
        op."""
        st, group = self.state[i], self._group_of[i]
        if group["amsgrad"] or not isinstance(p.device, str):
            up, written = self._adam_direction(i, g)
            p.assign(_decayed_step(p.detach(), up, self._lr(i, p), decoupled))
            return [p, *written]
        m, v = st["exp_avg"], st["exp_avg_sq"]
        b2, one_minus_b1, one_minus_b2, inv_c1, inv_sqrt_c2 = self._adam_scalars(i, g)
        new_m, new_v = _adam_moments_call(g, m, v, b2, one_minus_b1, one_minus_b2)
        m.assign(new_m)
        v.assign(new_v)
        lr = self._lr(i, p)
        p.assign(_adam_param_call(p.detach(), m, v, lr, inv_c1, inv_sqrt_c2, float(group["eps"]), decoupled))
        return [p, m, v]


class AdamW(Adam):
    """torch.optim.AdamW: decoupled weight decay, p -= lr * (up + wd * p); Adam's arguments, wd default 0.01."""

    default_weight_decay = 0.01

    def _update(self, i: int, p: Tensor, g: Tensor) -> list[Tensor]:
        group = self._group_of[i]
        return self._step(i, p, -g if group["maximize"] else g, float(group["weight_decay"]))


class LAMB(_AdamFamily):
    """LAMB (You et al., 2019, as tinygrad's): the AdamW direction u = up + wd * p scaled per parameter by the
    trust ratio ||p|| / ||u|| (1 where either norm is 0): p -= lr * ratio * u. adam=True skips the ratio."""

    def __init__(
        self,
        params: Params,
        lr: float | Tensor = 0.001,
        b1: float = 0.9,
        b2: float = 0.999,
        eps: float = 1e-6,
        weight_decay: float = 0.0,
        adam: bool = False,
        *,
        betas: tuple[float, float] | None = None,
        fused: bool | None = None,  # tinygrad's: accepted (a step is one schedule already)
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


# ---------------------------------------------------------------- torch's other optimizers


class RMSprop(_StepCounted):
    """torch.optim.RMSprop: v = alpha v + (1 - alpha) g^2; centered: ga = lerp(ga, g, 1 - alpha) and
    avg = sqrt(v - ga^2) + eps, else sqrt(v) + eps; with momentum, buf = momentum buf + g / avg and p -= lr buf,
    else p -= lr g / avg (g with maximize and L2 weight decay first)."""

    def __init__(
        self,
        params: Params,
        lr: float | Tensor = 0.01,
        alpha: float = 0.99,
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        momentum: float = 0.0,
        centered: bool = False,
        *,
        maximize: bool = False,
    ):
        defaults = {"lr": lr, "alpha": alpha, "eps": eps, "weight_decay": weight_decay, "momentum": momentum,
                    "centered": centered, "maximize": maximize}  # fmt: skip
        super().__init__(params, defaults)

    def _new_group(self, group: ParamGroup) -> None:
        self._check_options(group, "alpha", "eps", "momentum", "weight_decay")
        super()._new_group(group)

    def _init_state(self, p: Tensor, group: ParamGroup) -> dict[str, Tensor]:
        st = {"square_avg": _state_like(p)}
        if group["momentum"] > 0:
            st["momentum_buffer"] = _state_like(p)
        if group["centered"]:
            st["grad_avg"] = _state_like(p)
        return st

    def _update(self, i: int, p: Tensor, g: Tensor) -> list[Tensor]:
        group, st = self._group_of[i], self.state[i]
        g, alpha = self._grad(i, p, g), group["alpha"]
        v = st["square_avg"]
        v.assign(v * alpha + (1 - alpha) * (g * g))
        written = [p, v]
        if group["centered"]:
            ga = st.setdefault("grad_avg", _state_like(p))
            ga.assign(ga.lerp(g, 1 - alpha))
            avg = (v - ga * ga).sqrt() + group["eps"]
            written.append(ga)
        else:
            avg = v.sqrt() + group["eps"]
        if group["momentum"] > 0:
            buf = st.setdefault("momentum_buffer", _state_like(p))
            buf.assign(buf * self._option(i, "momentum", p.device).cast(g.dtype) + g / avg)
            written.append(buf)
            direction = buf
        else:
            direction = g / avg
        p.assign(p.detach() - self._lr(i, p) * direction)
        return written


class Adagrad(_StepCounted):
    """torch.optim.Adagrad: sum += g^2, p -= clr g / (sqrt(sum) + eps) with clr = lr / (1 + (t - 1) lr_decay);
    the sums start at initial_accumulator_value."""

    def __init__(
        self,
        params: Params,
        lr: float | Tensor = 0.01,
        lr_decay: float = 0.0,
        weight_decay: float = 0.0,
        initial_accumulator_value: float = 0.0,
        eps: float = 1e-10,
        *,
        maximize: bool = False,
    ):
        defaults = {"lr": lr, "lr_decay": lr_decay, "weight_decay": weight_decay, "eps": eps, "maximize": maximize,
                    "initial_accumulator_value": initial_accumulator_value}  # fmt: skip
        super().__init__(params, defaults)

    def _new_group(self, group: ParamGroup) -> None:
        self._check_options(group, "lr_decay", "weight_decay", "initial_accumulator_value", "eps")
        super()._new_group(group)

    def _init_state(self, p: Tensor, group: ParamGroup) -> dict[str, Tensor]:
        return {"sum": _state_like(p, group["initial_accumulator_value"])}

    def _update(self, i: int, p: Tensor, g: Tensor) -> list[Tensor]:
        group, total = self._group_of[i], self.state[i]["sum"]
        g = self._grad(i, p, g)
        total.assign(total + g * g)
        lr = self._lr(i, p)
        if group["lr_decay"]:
            t = self._step_count(i, p.device)
            lr = (lr.cast(dtypes.float64) / (1 + (t - 1) * group["lr_decay"])).cast(lr.dtype)
        p.assign(p.detach() - lr * (g / (total.sqrt() + group["eps"])))
        return [p, total]


class Adadelta(_StepCounted):
    """torch.optim.Adadelta: v = rho v + (1 - rho) g^2, delta = sqrt(u + eps) / sqrt(v + eps) g with u the running
    average of delta^2 from before this step, u = rho u + (1 - rho) delta^2, p -= lr delta."""

    def __init__(
        self,
        params: Params,
        lr: float | Tensor = 1.0,
        rho: float = 0.9,
        eps: float = 1e-6,
        weight_decay: float = 0.0,
        *,
        maximize: bool = False,
    ):
        defaults = {"lr": lr, "rho": rho, "eps": eps, "weight_decay": weight_decay, "maximize": maximize}
        super().__init__(params, defaults)

    def _new_group(self, group: ParamGroup) -> None:
        self._check(0 <= group["rho"] <= 1, f"rho value {group['rho']} (must be in [0, 1])")
        self._check_options(group, "eps", "weight_decay")
        super()._new_group(group)

    def _init_state(self, p: Tensor, group: ParamGroup) -> dict[str, Tensor]:
        return {"square_avg": _state_like(p), "acc_delta": _state_like(p)}

    def _update(self, i: int, p: Tensor, g: Tensor) -> list[Tensor]:
        group, st = self._group_of[i], self.state[i]
        g, rho, eps = self._grad(i, p, g), group["rho"], group["eps"]
        v, u = st["square_avg"], st["acc_delta"]
        v.assign(v * rho + (1 - rho) * (g * g))
        delta = (u + eps).sqrt() / (v + eps).sqrt() * g  # u from before its assign below (both assigns read it)
        p.assign(p.detach() - self._lr(i, p) * delta)
        u.assign(u * rho + (1 - rho) * (delta * delta))
        return [p, v, u]


class Adamax(_StepCounted):
    """torch.optim.Adamax (Adam with the infinity norm): m = lerp(m, g, 1 - b1), u = max(b2 u, |g| + eps),
    p -= lr / (1 - b1^t) m / u."""

    def __init__(
        self,
        params: Params,
        lr: float | Tensor = 0.002,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        *,
        maximize: bool = False,
    ):
        defaults = {"lr": lr, "betas": _betas(*betas, None), "eps": eps, "weight_decay": weight_decay,
                    "maximize": maximize}  # fmt: skip
        super().__init__(params, defaults)

    def _new_group(self, group: ParamGroup) -> None:
        _check_betas(self, group)
        self._check_options(group, "eps", "weight_decay")
        super()._new_group(group)

    def _init_state(self, p: Tensor, group: ParamGroup) -> dict[str, Tensor]:
        return {"exp_avg": _state_like(p), "exp_inf": _state_like(p)}

    def _update(self, i: int, p: Tensor, g: Tensor) -> list[Tensor]:
        group, st = self._group_of[i], self.state[i]
        g, betas = self._grad(i, p, g), self._option(i, "betas", p.device)
        b1, b2 = _beta_weights(betas, g.dtype)
        m, u = st["exp_avg"], st["exp_inf"]
        m.assign(m + (g - m) * (1 - b1))
        u.assign((u * b2).maximum(g.abs() + group["eps"]))
        t = self._step_count(i, p.device)
        clr = (self._lr(i, p).cast(dtypes.float64) / (1 - _pow(betas[0], t))).cast(g.dtype)
        p.assign(p.detach() - clr * (m / u))
        return [p, m, u]


class NAdam(_StepCounted):
    """torch.optim.NAdam (Adam with Nesterov momentum, Dozat 2016): mu_t = b1 (1 - 0.5 * 0.96^(t momentum_decay)),
    mu_product the running product of the mu_t (per parameter, as torch's state), then
    p -= lr (1 - mu_t) / (1 - mu_product) g / denom + lr mu_{t+1} / (1 - mu_product mu_{t+1}) m / denom with
    denom = sqrt(v / (1 - b2^t)) + eps. decoupled_weight_decay: p *= 1 - lr wd first (NAdamW), else L2."""

    def __init__(
        self,
        params: Params,
        lr: float | Tensor = 0.002,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        momentum_decay: float = 0.004,
        decoupled_weight_decay: bool = False,
        *,
        maximize: bool = False,
    ):
        defaults = {"lr": lr, "betas": _betas(*betas, None), "eps": eps, "weight_decay": weight_decay,
                    "momentum_decay": momentum_decay, "decoupled_weight_decay": decoupled_weight_decay,
                    "maximize": maximize}  # fmt: skip
        super().__init__(params, defaults)

    def _new_group(self, group: ParamGroup) -> None:
        _check_betas(self, group)
        self._check_options(group, "eps", "weight_decay", "momentum_decay")
        super()._new_group(group)

    def _init_state(self, p: Tensor, group: ParamGroup) -> dict[str, Tensor]:
        mu_product = _scalar(1.0, p.device)
        return {"mu_product": mu_product, "exp_avg": _state_like(p), "exp_avg_sq": _state_like(p)}

    def _update(self, i: int, p: Tensor, g: Tensor) -> list[Tensor]:
        group, st, f64 = self._group_of[i], self.state[i], dtypes.float64
        w, g, lr = _weight_decay(self, i, p, g)
        betas, t, decay = self._option(i, "betas", p.device), self._step_count(i, p.device), group["momentum_decay"]
        b1, b2 = _beta_weights(betas, g.dtype)
        mu = betas[0] * (1 - 0.5 * _pow(0.96, t * decay))
        mu_next = betas[0] * (1 - 0.5 * _pow(0.96, (t + 1) * decay))
        mu_product, m, v = st["mu_product"], st["exp_avg"], st["exp_avg_sq"]
        mu_product.assign(mu_product * mu.cast(mu_product.dtype))
        m.assign(m + (g - m) * (1 - b1))
        v.assign(v * b2 + (1 - b2) * (g * g))
        denom = (v / (1 - _pow(betas[1], t)).cast(g.dtype)).sqrt() + group["eps"]
        lr64, prod = lr.cast(f64), mu_product.cast(f64)
        c_grad = (lr64 * (1 - mu) / (1 - prod)).cast(g.dtype)
        c_avg = (lr64 * mu_next / (1 - prod * mu_next)).cast(g.dtype)
        p.assign(w - c_grad * (g / denom) - c_avg * (m / denom))
        return [p, mu_product, m, v]


class RAdam(_StepCounted):
    """torch.optim.RAdam (rectified Adam, Liu et al. 2019): with rho_inf = 2 / (1 - b2) - 1 and
    rho_t = rho_inf - 2 t b2^t / (1 - b2^t), p -= lr m / (1 - b1^t) * (rect sqrt(1 - b2^t) / (sqrt(v) + eps)) where
    rho_t > 5 (rect = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t))), else
    p -= lr m / (1 - b1^t). decoupled_weight_decay: p *= 1 - lr wd first (RAdamW), else L2."""

    def __init__(
        self,
        params: Params,
        lr: float | Tensor = 0.001,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        decoupled_weight_decay: bool = False,
        *,
        maximize: bool = False,
    ):
        defaults = {"lr": lr, "betas": _betas(*betas, None), "eps": eps, "weight_decay": weight_decay,
                    "decoupled_weight_decay": decoupled_weight_decay, "maximize": maximize}  # fmt: skip
        super().__init__(params, defaults)

    def _new_group(self, group: ParamGroup) -> None:
        _check_betas(self, group)
        self._check_options(group, "eps", "weight_decay")
        super()._new_group(group)

    def _init_state(self, p: Tensor, group: ParamGroup) -> dict[str, Tensor]:
        return {"exp_avg": _state_like(p), "exp_avg_sq": _state_like(p)}

    def _update(self, i: int, p: Tensor, g: Tensor) -> list[Tensor]:
        group, st = self._group_of[i], self.state[i]
        w, g, lr = _weight_decay(self, i, p, g)
        betas, t = self._option(i, "betas", p.device), self._step_count(i, p.device)
        b1, b2 = _beta_weights(betas, g.dtype)
        m, v = st["exp_avg"], st["exp_avg_sq"]
        m.assign(m + (g - m) * (1 - b1))
        v.assign(v * b2 + (1 - b2) * (g * g))
        b2_t = _pow(betas[1], t)
        rho_inf = 2 / (1 - betas[1]) - 1
        rho_t = rho_inf - 2 * t * b2_t / (1 - b2_t)
        rect = ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)).sqrt()
        rectified = rho_t > 5  # the variance estimate is trusted from here on
        step_size = (lr.cast(dtypes.float64) / (1 - _pow(betas[0], t))).cast(g.dtype)
        adaptive = rectified.where(rect * (1 - b2_t).sqrt(), 0.0).cast(g.dtype)
        p.assign(w - step_size * m * rectified.where(adaptive / (v.sqrt() + group["eps"]), 1.0))
        return [p, m, v]


def _weight_decay(opt: Optimizer, i: int, p: Tensor, g: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """NAdam's and RAdam's weight decay: the parameter the update starts from, the gradient it follows and the
    rate. Decoupled: p (1 - lr wd) and the gradient as is (maximize applied); else p and the L2 gradient."""
    group, lr = opt._group_of[i], opt._lr(i, p)
    if not (group["decoupled_weight_decay"] and group["weight_decay"]):
        return p.detach(), opt._grad(i, p, g), lr
    return p.detach() * (1 - lr * group["weight_decay"]), -g if group["maximize"] else g, lr


# ------------------------------------------------------------ LBFGS
# torch.optim.LBFGS: limited-memory BFGS with torch's algorithm, options and state.
#
# In: parameters (one group) and, at each `step(closure)`, a closure that zeroes the gradients, recomputes the loss,
# calls backward() and returns the loss. Out: the parameters moved by up to max_iter quasi-Newton iterations; step
# returns the closure's first loss, as torch's.
#
# Each iteration takes the direction from the two-loop recursion over the last history_size curvature pairs
# (s = the step taken, y = the change of the gradient; a pair enters only when y.s > 1e-10), scaled by y.s / y.y of the
# newest pair. The step length is lr (on the very first iteration min(1, 1/|g|_1) * lr), or with
# line_search_fn="strong_wolfe" the one a bracketing line search with cubic interpolation finds (sufficient decrease
# c1 = 1e-4, curvature c2 = 0.9, at most the evaluations max_eval leaves, as torch 2.x). It stops after max_iter
# iterations or max_eval closure calls, when the largest gradient entry is <= tolerance_grad, or when the step, the
# loss change or the directional derivative falls below tolerance_change.
#
# The vectors (the flat gradient, the direction, the curvature pairs) are unigrad Tensors on the parameters'
# device, realized as they are made so that no graph grows across iterations; the step length reaches the kernels as
# a 0-d buffer, so a new length does not compile a new kernel. The scalars the algorithm branches on (the loss,
# directional derivatives, y.s) are read with `.item()`, as torch reads them, and the line search's interpolation is
# arithmetic on those numbers.

Closure = Callable[[], Tensor]


def _dot(a: Tensor, b: Tensor) -> Tensor:
    return (a * b).sum()


def _cubic_minimum(
    x1: float, f1: float, g1: float, x2: float, f2: float, g2: float, bounds: tuple[float, float] | None = None
) -> float:
    """The minimizer, clamped to `bounds` (default: between x1 and x2), of the cubic through (x1, f1) and (x2, f2)
    with slopes g1 and g2; the middle of the bounds when the cubic has no minimum."""
    lo, hi = bounds if bounds is not None else (min(x1, x2), max(x1, x2))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1 * d1 - g1 * g2
    if d2_square < 0:
        return (lo + hi) / 2
    d2 = math.sqrt(d2_square)
    if x1 <= x2:
        at = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        at = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(at, lo), hi)


class _Point:
    """One evaluation on the search line: step t, loss f, flat gradient g and directional derivative gtd = g.d."""

    def __init__(self, t: float, f: float, g: Tensor, gtd: float) -> None:
        self.t, self.f, self.g, self.gtd = t, f, g, gtd


def _strong_wolfe(
    evaluate: Callable[[float], tuple[float, Tensor]],
    d: Tensor,
    start: _Point,
    t: float,
    c1: float = 1e-4,
    c2: float = 0.9,
    tolerance_change: float = 1e-9,
    max_ls: int = 25,
) -> tuple[_Point, int]:
    """The step along d that satisfies the strong Wolfe conditions (or the best one found), from `start` (t = 0)
    and a first trial step t: (that point, the number of evaluations made). `evaluate(t)` is (loss, gradient) at
    the parameters + t * d."""
    f0, gtd0 = start.f, start.gtd
    d_norm = d.abs().max().item()

    def point(step: float) -> _Point:
        f, g = evaluate(step)
        return _Point(step, f, g, _dot(g, d).item())

    def armijo_fails(p: _Point) -> bool:
        return p.f > f0 + c1 * p.t * gtd0

    new, evals, ls_iter, done = point(t), 1, 0, False
    prev = _Point(0.0, f0, start.g, gtd0)
    bracket: list[_Point] = []
    while ls_iter < max_ls:  # grow the step until a bracket holds a point satisfying the conditions
        if armijo_fails(new) or (ls_iter > 1 and new.f >= prev.f):
            bracket = [prev, new]
            break
        if abs(new.gtd) <= -c2 * gtd0:
            bracket, done = [new], True
            break
        if new.gtd >= 0:  # past a minimum of the line
            bracket = [prev, new]
            break
        bounds = (new.t + 0.01 * (new.t - prev.t), new.t * 10)
        step = _cubic_minimum(prev.t, prev.f, prev.gtd, new.t, new.f, new.gtd, bounds)
        prev, new = new, point(step)
        evals, ls_iter = evals + 1, ls_iter + 1
    if ls_iter == max_ls:
        bracket = [_Point(0.0, f0, start.g, gtd0), new]

    insufficient = False
    low, high = (0, 1) if bracket[0].f <= bracket[-1].f else (1, 0)
    while not done and ls_iter < max_ls:  # zoom: shrink the bracket around a point satisfying the conditions
        if abs(bracket[1].t - bracket[0].t) * d_norm < tolerance_change:
            break
        a, b = bracket
        step = _cubic_minimum(a.t, a.f, a.gtd, b.t, b.f, b.gtd)
        top, bottom = max(a.t, b.t), min(a.t, b.t)
        eps = 0.1 * (top - bottom)
        if min(top - step, step - bottom) < eps:  # too close to an end: move away unless the last try was fine
            if insufficient or step >= top or step <= bottom:
                step = top - eps if abs(step - top) < abs(step - bottom) else bottom + eps
                insufficient = False
            else:
                insufficient = True
        else:
            insufficient = False
        new = point(step)
        evals, ls_iter = evals + 1, ls_iter + 1
        if armijo_fails(new) or new.f >= bracket[low].f:
            bracket[high] = new
            low, high = (0, 1) if bracket[0].f <= bracket[1].f else (1, 0)
        else:
            if abs(new.gtd) <= -c2 * gtd0:
                done = True
            elif new.gtd * (bracket[high].t - bracket[low].t) >= 0:
                bracket[high] = bracket[low]
            bracket[low] = new
    return bracket[low], evals


class LBFGS(Optimizer):
    """torch.optim.LBFGS(params, lr=1, max_iter=20, max_eval=max_iter * 5 // 4, tolerance_grad=1e-7,
    tolerance_change=1e-9, history_size=100, line_search_fn=None or "strong_wolfe"). One parameter group only, as
    torch; `step(closure)` is required. Its state (torch's names: d, t, old_dirs, old_stps, ro, H_diag,
    prev_flat_grad, prev_loss, n_iter, func_evals) carries over from step to step and is state_dict()['state'][0]."""

    def __init__(
        self,
        params: Params,
        lr: float = 1,
        max_iter: int = 20,
        max_eval: int | None = None,
        tolerance_grad: float = 1e-7,
        tolerance_change: float = 1e-9,
        history_size: int = 100,
        line_search_fn: str | None = None,
    ) -> None:
        if isinstance(lr, Tensor) or not lr >= 0:
            raise ValueError(f"LBFGS: invalid learning rate {lr!r} (must be a number >= 0)")
        if line_search_fn not in (None, "strong_wolfe"):
            raise RuntimeError(f"LBFGS: only 'strong_wolfe' is supported as line_search_fn, got {line_search_fn!r}")
        for name, value in (("max_iter", max_iter), ("history_size", history_size)):
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"LBFGS: invalid {name} {value!r} (must be a positive int)")
        defaults = dict(lr=lr, max_iter=max_iter, max_eval=max_iter * 5 // 4 if max_eval is None else max_eval,
                        tolerance_grad=tolerance_grad, tolerance_change=tolerance_change, history_size=history_size,
                        line_search_fn=line_search_fn)  # fmt: skip
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params: list[Tensor] = self.param_groups[0]["params"]
        if len({p.device for p in self._params}) != 1:
            raise ValueError("LBFGS: every parameter must be on one device (the flat vectors join them)")

    def _init_state(self, p: Tensor, group: Any) -> dict[str, Any]:
        return {}  # the algorithm's state is one dict, kept in the first parameter's place (torch's layout)

    @property
    def _state(self) -> dict[str, Any]:
        return self.state[0]

    def _load_state(self, i: int, saved: dict[str, Any]) -> None:
        if i == 0:
            self.state[0] = dict(saved)

    # ------------------------------------------------------------ flat views of the parameters
    def _flat_grad(self) -> Tensor:
        """Every parameter's gradient (zeros for none) as one realized vector."""
        parts = [(p.grad if p.grad is not None else p.zeros_like()).reshape(-1) for p in self._params]
        return parts[0].cat(*parts[1:]).realize() if len(parts) > 1 else parts[0].contiguous().realize()

    def _move(self, t: float, d: Tensor) -> None:
        """Parameters += t * d (d flat, in the parameters' order), now."""
        step, offset, written = self._number(t), 0, []
        for p in self._params:
            n = p.numel()
            written.append(p.assign(p.detach() + step * d[offset : offset + n].reshape(p.shape)))
            offset += n
        Tensor.realize(*written)

    def _number(self, value: float) -> Tensor:
        """value as a 0-d buffer of the parameters' dtype (data, not a constant: no new kernel per value)."""
        p = self._params[0]
        return Tensor(np.array(value, dtype=p.dtype.fmt), device=p.device)

    def _evaluate(self, closure: Closure) -> float:
        with enable_grad():
            return float(closure().item())

    # ------------------------------------------------------------ the step
    def step(self, closure: Closure | None = None) -> Tensor:  # type: ignore[override]
        """Up to max_iter L-BFGS iterations; the closure's first loss is returned."""
        if closure is None:
            raise RuntimeError("LBFGS.step: a closure that recomputes the loss and its gradients is required")
        group, state = self.param_groups[0], self._state
        lr, max_iter, max_eval = group["lr"], group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        with enable_grad():
            orig_loss = closure()
        loss = float(orig_loss.item())
        evals = 1
        state["func_evals"] += 1
        flat_grad = self._flat_grad()
        if flat_grad.abs().max().item() <= tolerance_grad:
            return orig_loss

        d, t = state.get("d"), state.get("t")
        old_dirs, old_stps, ro = state.get("old_dirs"), state.get("old_stps"), state.get("ro")
        h_diag, prev_flat_grad, prev_loss = state.get("H_diag"), state.get("prev_flat_grad"), state.get("prev_loss")
        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                d, old_dirs, old_stps, ro, h_diag = (-flat_grad).realize(), [], [], [], 1.0
            else:
                y = (flat_grad - prev_flat_grad).realize()
                s = (d * self._number(t)).realize()
                ys = _dot(y, s).item()
                if ys > 1e-10:  # a pair of positive curvature: remembered (the oldest dropped)
                    if len(old_dirs) == group["history_size"]:
                        old_dirs.pop(0), old_stps.pop(0), ro.pop(0)
                    old_dirs.append(y), old_stps.append(s), ro.append(self._number(1.0 / ys))
                    h_diag = ys / _dot(y, y).item()
                d = self._direction(flat_grad, old_dirs, old_stps, ro, h_diag)
            prev_flat_grad, prev_loss = flat_grad, loss
            t = min(1.0, 1.0 / flat_grad.abs().sum().item()) * lr if state["n_iter"] == 1 else lr
            gtd = _dot(flat_grad, d).item()
            if gtd > -tolerance_change:  # not a descent direction
                break

            if group["line_search_fn"] == "strong_wolfe":
                x_init = [p.clone().realize() for p in self._params]

                def evaluate(step: float, d: Tensor = d, x_init: list[Tensor] = x_init) -> tuple[float, Tensor]:
                    self._move(step, d)
                    value = self._evaluate(closure)
                    grad = self._flat_grad()
                    Tensor.realize(*(p.assign(x) for p, x in zip(self._params, x_init)))
                    return value, grad

                start = _Point(0.0, loss, flat_grad, gtd)
                found, ls_evals = _strong_wolfe(evaluate, d, start, t, max_ls=max_eval - evals)  # what is left
                loss, flat_grad, t = found.f, found.g, found.t
                self._move(t, d)
                grad_small = flat_grad.abs().max().item() <= tolerance_grad
            else:
                self._move(t, d)
                ls_evals, grad_small = 0, False
                if n_iter != max_iter:  # no evaluation after the last iteration: the next step starts with one
                    loss = self._evaluate(closure)
                    flat_grad = self._flat_grad()
                    grad_small, ls_evals = flat_grad.abs().max().item() <= tolerance_grad, 1
            evals += ls_evals
            state["func_evals"] += ls_evals

            if n_iter == max_iter or evals >= max_eval or grad_small:
                break
            if (d * self._number(t)).abs().max().item() <= tolerance_change or abs(loss - prev_loss) < tolerance_change:
                break  # the parameters or the loss stopped changing

        state.update(d=d, t=t, old_dirs=old_dirs, old_stps=old_stps, ro=ro, H_diag=h_diag)
        state.update(prev_flat_grad=prev_flat_grad, prev_loss=prev_loss)
        return orig_loss

    def _direction(self, g: Tensor, dirs: list[Tensor], stps: list[Tensor], ro: list[Tensor], h_diag: float) -> Tensor:
        """-H g by the two-loop recursion: H the L-BFGS inverse-Hessian estimate from the pairs (s = stps[i],
        y = dirs[i], ro[i] = 1 / y.s, a 0-d buffer) over the initial h_diag * I. Each update is realized with its
        coefficient (a handful of small kernels per pair, compiled once)."""
        q, alphas = -g, list(dirs)
        for i in reversed(range(len(dirs))):
            alpha = _dot(stps[i], q) * ro[i]
            q = q - dirs[i] * alpha
            Tensor.realize(q, alpha)
            alphas[i] = alpha
        r = q * self._number(h_diag)
        for i in range(len(dirs)):
            beta = _dot(dirs[i], r) * ro[i]
            r = (r + stps[i] * (alphas[i] - beta)).realize()
        return r

    def add_param_group(self, group: dict[str, Any]) -> None:
        if self.param_groups:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        super().add_param_group(group)
