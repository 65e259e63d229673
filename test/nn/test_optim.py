"""unigrad.nn.optim against torch.optim: the same model, data and hyperparameters give the same parameters after
several steps (every optimizer and option that changes the math; parameter groups, odd shapes, missing gradients,
checkpoints, TinyJit); LAMB against a numpy transcription of its update; learning-rate schedules against torch's
schedulers; a step is one realize whose kernels neither grow nor recompile from step to step."""

import importlib
import math

import numpy as np
import pytest
import torch

from unigrad import Tensor, nn
from unigrad.nn import optim
from unigrad.nn.state import get_parameters, get_state_dict
from unigrad.runtime import realize as rt

ATOL, RTOL = 1e-5, 1e-4
tensor_module = importlib.import_module("unigrad.tensor")  # the module (unigrad.tensor is torch.tensor's twin)
STEPS = 6


@pytest.fixture(autouse=True)
def _train_mode():
    """tinygrad's optimizers step only in train mode (Tensor.training): every test here trains."""
    with Tensor.train():
        yield


class MLP:
    """Linear -> (BatchNorm1d) -> relu -> Linear, with torch's attribute names."""

    def __init__(self, bn: bool = False):
        self.l1 = nn.Linear(4, 8)
        self.bn = nn.BatchNorm1d(8) if bn else None
        self.l2 = nn.Linear(8, 3)

    def __call__(self, x: Tensor) -> Tensor:
        h = self.l1(x)
        return self.l2((self.bn(h) if self.bn is not None else h).relu())


class TorchMLP(torch.nn.Module):
    def __init__(self, bn: bool = False):
        super().__init__()
        self.l1 = torch.nn.Linear(4, 8)
        self.bn = torch.nn.BatchNorm1d(8) if bn else None
        self.l2 = torch.nn.Linear(8, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.l1(x)
        return self.l2((self.bn(h) if self.bn is not None else h).relu())


def twin_models(bn: bool = False) -> tuple[MLP, TorchMLP]:
    """Our model holding a copy of torch's freshly initialized state."""
    torch.manual_seed(0)
    ours, theirs = MLP(bn), TorchMLP(bn)
    for key, value in theirs.state_dict().items():
        *path, name = key.split(".")
        obj = ours
        for part in path:
            obj = getattr(obj, part)
        t = Tensor(value.numpy().copy())
        if name.startswith(("running", "num_batches")):  # buffers; parameters get requires_grad from the optimizer
            t.requires_grad = False
        setattr(obj, name, t)
    return ours, theirs


def batch(step: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(step)
    return rng.standard_normal((6, 4)).astype(np.float32), rng.integers(0, 3, 6)


def loss_of(model, x: np.ndarray, y: np.ndarray):
    if isinstance(model, TorchMLP):
        return torch.nn.functional.cross_entropy(model(torch.tensor(x)), torch.tensor(y))
    return model(Tensor(x)).cross_entropy(Tensor(y))


def assert_same_state(ours: MLP, theirs: TorchMLP, what: str) -> None:
    state = get_state_dict(ours)
    for key, ref in theirs.state_dict().items():
        np.testing.assert_allclose(state[key].numpy(), ref.numpy(), atol=ATOL, rtol=RTOL, err_msg=f"{what}: {key}")


OPTIMIZERS = {
    "sgd": (lambda p: optim.SGD(p, lr=0.1), lambda p: torch.optim.SGD(p, lr=0.1)),
    "sgd_momentum": (lambda p: optim.SGD(p, lr=0.1, momentum=0.9), lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9)),
    "sgd_dampening": (
        lambda p: optim.SGD(p, lr=0.1, momentum=0.8, dampening=0.5),
        lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.8, dampening=0.5),
    ),
    "sgd_nesterov_weight_decay": (
        lambda p: optim.SGD(p, lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01),
        lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01),
    ),
    "sgd_weight_decay": (
        lambda p: optim.SGD(p, lr=0.1, weight_decay=0.1),
        lambda p: torch.optim.SGD(p, lr=0.1, weight_decay=0.1),
    ),
    "adam": (lambda p: optim.Adam(p, lr=0.01), lambda p: torch.optim.Adam(p, lr=0.01)),
    "adam_betas_eps_l2": (
        lambda p: optim.Adam(p, lr=0.02, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.05),
        lambda p: torch.optim.Adam(p, lr=0.02, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.05),
    ),
    "adam_amsgrad": (
        lambda p: optim.Adam(p, lr=0.01, amsgrad=True),
        lambda p: torch.optim.Adam(p, lr=0.01, amsgrad=True),
    ),
    "adamw": (lambda p: optim.AdamW(p, lr=0.01), lambda p: torch.optim.AdamW(p, lr=0.01)),
    "adamw_amsgrad": (
        lambda p: optim.AdamW(p, 0.01, 0.85, 0.995, weight_decay=0.1, amsgrad=True),
        lambda p: torch.optim.AdamW(p, lr=0.01, betas=(0.85, 0.995), weight_decay=0.1, amsgrad=True),
    ),
    "lamb_adam_mode_is_adamw": (
        lambda p: optim.LAMB(p, lr=0.01, weight_decay=0.02, adam=True),
        lambda p: torch.optim.AdamW(p, lr=0.01, weight_decay=0.02, eps=1e-6),
    ),
}


@pytest.mark.parametrize("case", OPTIMIZERS)
def test_optimizer_matches_torch(case):
    make, make_torch = OPTIMIZERS[case]
    ours, theirs = twin_models()
    opt, topt = make(get_parameters(ours)), make_torch(theirs.parameters())
    for step in range(STEPS):
        x, y = batch(step)
        opt.zero_grad()
        loss = loss_of(ours, x, y)
        loss.backward()
        loss.realize()  # before the step writes the parameters it reads
        topt.zero_grad()
        tloss = loss_of(theirs, x, y)
        tloss.backward()
        topt.step()
        opt.step()
        np.testing.assert_allclose(loss.item(), tloss.item(), atol=ATOL, rtol=RTOL)
        assert_same_state(ours, theirs, f"after step {step + 1}")
    for p, tp in zip(opt.params, theirs.parameters()):  # .grad holds the gradient the last step used
        np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), atol=ATOL, rtol=RTOL)


def lamb_reference(params, grads, state, step, lr, b1, b2, eps, wd):
    """LAMB (You et al. 2019, tinygrad's form) in float64 numpy: Adam direction plus decoupled decay, scaled by
    the trust ratio ||p|| / ||u||."""
    out = []
    for i, (p, g) in enumerate(zip(params, grads)):
        m, v = state.setdefault(i, (np.zeros_like(p), np.zeros_like(p)))
        m, v = b1 * m + (1 - b1) * g, b2 * v + (1 - b2) * g * g
        state[i] = (m, v)
        u = (m / (1 - b1**step)) / (np.sqrt(v / (1 - b2**step)) + eps) + wd * p
        r1, r2 = np.linalg.norm(p), np.linalg.norm(u)
        ratio = r1 / r2 if r1 > 0 and r2 > 0 else 1.0
        out.append(p - lr * ratio * u)
    return out


@pytest.mark.parametrize("wd", [0.0, 0.1])
def test_lamb_matches_reference(wd):
    ours, theirs = twin_models()
    opt = optim.LAMB(get_parameters(ours), lr=0.05, weight_decay=wd)
    state: dict = {}
    for step in range(1, STEPS + 1):
        x, y = batch(step)
        theirs.zero_grad()
        loss_of(theirs, x, y).backward()
        params = [p.detach().double().numpy() for p in theirs.parameters()]
        grads = [p.grad.double().numpy() for p in theirs.parameters()]
        new = lamb_reference(params, grads, state, step, 0.05, 0.9, 0.999, 1e-6, wd)
        with torch.no_grad():
            for p, n in zip(theirs.parameters(), new):
                p.copy_(torch.tensor(n))
        opt.zero_grad()
        loss_of(ours, x, y).backward()
        opt.step()
        assert_same_state(ours, theirs, f"after step {step}")


def test_batchnorm_model_trains_like_torch():
    """Running statistics are buffers among the optimizer's tensors: realized in the step (their pending
    updates read the parameters before the step writes them), equal to torch's after several steps."""
    ours, theirs = twin_models(bn=True)
    opt = optim.SGD(get_parameters(ours), lr=0.1, momentum=0.9)
    topt = torch.optim.SGD(theirs.parameters(), lr=0.1, momentum=0.9)
    bn = ours.bn
    assert [id(t) for t in opt.buffers] == [id(bn.running_mean), id(bn.running_var), id(bn.num_batches_tracked)]
    theirs.train()
    with Tensor.train(True):
        for step in range(4):
            x, y = batch(step)
            opt.zero_grad()
            loss_of(ours, x, y).backward()
            opt.step()
            topt.zero_grad()
            loss_of(theirs, x, y).backward()
            topt.step()
            assert ours.bn.running_mean.uop.op.name != "AFTER"  # realized by the step
    assert_same_state(ours, theirs, "after 4 steps")
    assert ours.bn.num_batches_tracked.item() == 4
    theirs.eval()
    x, _ = batch(10)
    with Tensor.train(False):
        out = ours(Tensor(x)).numpy()
    np.testing.assert_allclose(out, theirs(torch.tensor(x)).detach().numpy(), atol=ATOL, rtol=RTOL)


def test_pending_running_stats_are_realized_even_if_not_passed():
    """Only the weights are given to the optimizer (torch style): the step still runs the pending running-stat
    updates, before it overwrites the parameters they read."""
    ours, theirs = twin_models(bn=True)
    opt = optim.SGD([ours.l1.weight, ours.l1.bias, ours.l2.weight, ours.l2.bias], lr=0.5)
    topt = torch.optim.SGD([theirs.l1.weight, theirs.l1.bias, theirs.l2.weight, theirs.l2.bias], lr=0.5)
    theirs.train()
    with Tensor.train(True):
        for step in range(3):
            x, y = batch(step)
            opt.zero_grad()
            loss_of(ours, x, y).backward()
            opt.step()
            topt.zero_grad()
            loss_of(theirs, x, y).backward()
            topt.step()
    assert_same_state(ours, theirs, "after 3 steps")


def test_closure_and_schedule_step_see_the_loss_before_the_update():
    ours, theirs = twin_models()
    opt, topt = optim.Adam(get_parameters(ours), lr=0.1), torch.optim.Adam(theirs.parameters(), lr=0.1)
    for step in range(3):
        x, y = batch(step)

        def closure(x=x, y=y):
            opt.zero_grad()
            loss = loss_of(ours, x, y)
            loss.backward()
            return loss

        def tclosure(x=x, y=y):
            topt.zero_grad()
            loss = loss_of(theirs, x, y)
            loss.backward()
            return loss

        np.testing.assert_allclose(opt.step(closure).item(), topt.step(tclosure).item(), atol=ATOL, rtol=RTOL)
    x, y = batch(3)
    opt.zero_grad()
    loss = loss_of(ours, x, y)
    loss.backward()
    Tensor.realize(loss, *opt.schedule_step())  # tinygrad's spelling: the loss in the step's schedule
    np.testing.assert_allclose(loss.item(), topt.step(lambda: tclosure(x, y)).item(), atol=ATOL, rtol=RTOL)
    assert_same_state(ours, theirs, "after 4 steps")


@pytest.mark.parametrize("opt_name", ["SGD", "Adam"])
def test_loss_read_after_step_is_the_loss_before_the_update(opt_name):
    # torch's loop: backward, step, then read the loss; the lazy loss must not see the updated weights
    ours, theirs = twin_models()
    make = {
        "SGD": lambda p: (optim.SGD(p, lr=0.1, momentum=0.9), torch.optim.SGD, {"lr": 0.1, "momentum": 0.9}),
        "Adam": lambda p: (optim.Adam(p, lr=0.05), torch.optim.Adam, {"lr": 0.05}),
    }[opt_name]
    opt, tcls, kw = make(get_parameters(ours))
    topt = tcls(theirs.parameters(), **kw)
    for step in range(3):
        x, y = batch(step)
        opt.zero_grad()
        loss = loss_of(ours, x, y)
        loss.backward()
        opt.step()
        topt.zero_grad()
        tloss = loss_of(theirs, x, y)
        tloss.backward()
        topt.step()
        np.testing.assert_allclose(loss.item(), tloss.item(), atol=ATOL, rtol=RTOL)
    assert_same_state(ours, theirs, "after 3 steps")


def test_parameters_without_gradient_are_left_alone():
    a, b = Tensor([1.0, 2.0]), Tensor([3.0, 4.0])
    opt = optim.SGD([a, b], lr=0.5, momentum=0.9)
    assert a.requires_grad is True and b.requires_grad is True  # turned on, as tinygrad's optimizers do
    (a * a).sum().backward()
    opt.step()
    np.testing.assert_allclose(a.numpy(), [0.0, 0.0])
    np.testing.assert_allclose(b.numpy(), [3.0, 4.0])
    opt.zero_grad()
    assert a.grad is None and b.grad is None
    count = Tensor([1, 2])
    opt = optim.SGD([a, count], lr=0.1)  # an integer tensor can only be a buffer, realized with each step
    assert count.requires_grad is False and [id(t) for t in opt.buffers] == [id(count)]
    with pytest.raises(ValueError, match="empty parameter list"):
        optim.Adam([Tensor([1.0]).requires_grad_(False)])
    with pytest.raises(ValueError, match="nesterov"):
        optim.SGD([a], lr=0.1, nesterov=True)


# ---------------------------------------------------------------- one schedule per step, no recompiles


@pytest.mark.parametrize(
    "make,per_param",
    [
        (lambda p: optim.SGD(p, 0.1, momentum=0.9), 2),  # writes the parameter and its momentum
        (lambda p: optim.AdamW(p, 0.01), 3),  # the parameter, m and v
        (lambda p: optim.LAMB(p, 0.01), 6),  # also two norms, and a copy of p the update reads whole
    ],
    ids=["sgd", "adamw", "lamb"],
)
def test_step_is_one_realize_with_a_steady_kernel_count(make, per_param, monkeypatch):
    ours, _ = twin_models(bn=True)
    opt = make(get_parameters(ours))
    sched = optim.CosineAnnealingLR(opt, T_max=10)  # a new learning rate every step
    calls = []
    real = rt.realize

    def counting_realize(uops, device):
        calls.append(len(uops))
        return real(uops, device)

    kernels, programs = [], []
    with Tensor.train(True):
        for step in range(5):
            x, y = batch(step)
            opt.zero_grad()
            loss = loss_of(ours, x, y)
            loss.backward()
            Tensor.realize(loss, *[p.grad for p in opt.params])  # the forward and backward, apart from the step
            before, progs = rt.stats.kernels, rt.stats.programs
            monkeypatch.setattr(rt, "realize", counting_realize)
            opt.step()
            monkeypatch.setattr(rt, "realize", real)
            kernels.append(rt.stats.kernels - before)
            programs.append(rt.stats.programs - progs)
            sched.step()
            # nothing keeps the step's assigns alive: else every later realize searches its graphs for them
            assert not tensor_module._assigns_done, list(tensor_module._assigns_done)
    assert calls == [calls[0]] * 5, calls  # one realize per step, of the same tensors
    assert kernels == [kernels[0]] * 5, kernels
    # bounded by the tensors written: per parameter, and a few shared (running statistics, beta^t counters)
    assert kernels[0] <= per_param * len(opt.params) + 8, kernels
    assert programs[1:] == [0] * 4, programs  # a changing lr is a buffer: nothing is recompiled


def test_assigns_reading_each_others_target():
    a, b = Tensor([1.0, 2.0]), Tensor([10.0, 20.0])
    new_a, new_b = a + b.sum(), b + a.sum()  # both from the old a and b
    a.assign(new_a)
    b.assign(new_b)
    Tensor.realize(a, b)
    assert a.tolist() == [31.0, 32.0] and b.tolist() == [13.0, 23.0]


def test_lr_tensor_can_be_assigned_tinygrad_style():
    p = Tensor([1.0, 1.0])
    opt = optim.SGD([p], lr=0.5)
    assert isinstance(opt.lr, Tensor) and opt.lr.shape == () and opt.get_lr() == 0.5
    opt.lr.assign(0.25)
    (p * 2).sum().backward()
    opt.step()
    np.testing.assert_allclose(p.numpy(), [0.5, 0.5])
    opt.set_lr(1.0)
    assert opt.get_lr() == 1.0


# ---------------------------------------------------------------- learning-rate schedules


SCHEDULES = {
    "step": (lambda o: optim.StepLR(o, 3, gamma=0.5), lambda o: torch.optim.lr_scheduler.StepLR(o, 3, gamma=0.5)),
    "multistep": (
        lambda o: optim.MultiStepLR(o, [2, 5, 6], gamma=0.3),
        lambda o: torch.optim.lr_scheduler.MultiStepLR(o, [2, 5, 6], gamma=0.3),
    ),
    "exponential": (lambda o: optim.ExponentialLR(o, 0.9), lambda o: torch.optim.lr_scheduler.ExponentialLR(o, 0.9)),
    "cosine": (
        lambda o: optim.CosineAnnealingLR(o, T_max=5, eta_min=0.01),
        lambda o: torch.optim.lr_scheduler.CosineAnnealingLR(o, T_max=5, eta_min=0.01),
    ),
    "linear_warmup": (
        lambda o: optim.LinearLR(o, start_factor=0.1, total_iters=4),
        lambda o: torch.optim.lr_scheduler.LinearLR(o, start_factor=0.1, total_iters=4),
    ),
    "linear_decay": (
        lambda o: optim.LinearLR(o, start_factor=1.0, end_factor=0.2, total_iters=5),
        lambda o: torch.optim.lr_scheduler.LinearLR(o, start_factor=1.0, end_factor=0.2, total_iters=5),
    ),
    "lambda": (
        lambda o: optim.LambdaLR(o, lambda e: 1 / (e + 1)),
        lambda o: torch.optim.lr_scheduler.LambdaLR(o, lambda e: 1 / (e + 1)),
    ),
    "warmup_then_cosine": (
        lambda o: optim.SequentialLR(
            o, [optim.LinearLR(o, 0.1, total_iters=3), optim.CosineAnnealingLR(o, T_max=6)], milestones=[3]
        ),
        lambda o: torch.optim.lr_scheduler.SequentialLR(
            o,
            [
                torch.optim.lr_scheduler.LinearLR(o, 0.1, total_iters=3),
                torch.optim.lr_scheduler.CosineAnnealingLR(o, 6),
            ],
            milestones=[3],
        ),
    ),
}


@pytest.mark.parametrize("case", SCHEDULES)
def test_lr_schedule_matches_torch(case):
    make, make_torch = SCHEDULES[case]
    opt = optim.SGD([Tensor([1.0])], lr=0.2)
    topt = torch.optim.SGD([torch.nn.Parameter(torch.ones(1))], lr=0.2)
    sched, tsched = make(opt), make_torch(topt)
    for epoch in range(12):
        expected = topt.param_groups[0]["lr"]
        assert math.isclose(sched.get_last_lr()[0], expected, rel_tol=1e-6, abs_tol=1e-9), (epoch, expected)
        assert math.isclose(opt.get_lr(), expected, rel_tol=1e-6, abs_tol=1e-9), (epoch, expected)  # float32 buffer
        topt.step()
        tsched.step()
        sched.step()


# ---------------------------------------------------------------- torch's parameter groups, checkpoints, clipping


def _train(opt, topt, ours, theirs, steps, first=0, clip=None):
    from unigrad.nn import utils as nn_utils

    for step in range(first, first + steps):
        x, y = batch(step)
        opt.zero_grad()
        loss = loss_of(ours, x, y)
        loss.backward()
        loss.realize()
        topt.zero_grad()
        loss_of(theirs, x, y).backward()
        if clip is not None:
            norm = nn_utils.clip_grad_norm_(opt.params, clip)
            tnorm = torch.nn.utils.clip_grad_norm_(theirs.parameters(), clip)
            np.testing.assert_allclose(norm.numpy(), tnorm.numpy(), rtol=1e-5)
        topt.step()
        opt.step()
        assert_same_state(ours, theirs, f"after step {step + 1}")


GROUPED = {
    "sgd": (
        lambda m, **kw: optim.SGD(
            [{"params": [m.l1.weight, m.l1.bias], "lr": 0.05, "momentum": 0.5}, {"params": [m.l2.weight, m.l2.bias]}],
            lr=0.1, momentum=0.9, **kw,
        ),
        lambda m, **kw: torch.optim.SGD(
            [{"params": list(m.l1.parameters()), "lr": 0.05, "momentum": 0.5}, {"params": list(m.l2.parameters())}],
            lr=0.1, momentum=0.9, **kw,
        ),
    ),
    "adam": (
        lambda m, **kw: optim.Adam(
            [{"params": [m.l1.weight, m.l1.bias], "betas": (0.8, 0.99)}, {"params": [m.l2.weight, m.l2.bias], "lr": 0.05,
              "weight_decay": 0.1}], lr=0.01, **kw,
        ),
        lambda m, **kw: torch.optim.Adam(
            [{"params": list(m.l1.parameters()), "betas": (0.8, 0.99)}, {"params": list(m.l2.parameters()), "lr": 0.05,
              "weight_decay": 0.1}], lr=0.01, **kw,
        ),
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", GROUPED)
def test_param_groups_match_torch(case):
    make, make_torch = GROUPED[case]
    ours, theirs = twin_models()
    opt, topt = make(ours), make_torch(theirs)
    assert [len(g["params"]) for g in opt.param_groups] == [2, 2]
    assert opt.param_groups[1]["lr"] == topt.param_groups[1]["lr"]
    _train(opt, topt, ours, theirs, 3)
    for g, tg in zip(opt.param_groups, topt.param_groups):  # a rate changed through the group dict, mid-training
        g["lr"] = tg["lr"] = tg["lr"] * 0.5
    _train(opt, topt, ours, theirs, 3, first=3)


def test_add_param_group_and_errors():
    ours, theirs = twin_models()
    opt = optim.SGD([ours.l1.weight, ours.l1.bias], lr=0.1)
    topt = torch.optim.SGD(list(theirs.l1.parameters()), lr=0.1)
    opt.add_param_group({"params": [ours.l2.weight, ours.l2.bias], "lr": 0.3})
    topt.add_param_group({"params": list(theirs.l2.parameters()), "lr": 0.3})
    _train(opt, topt, ours, theirs, 2)
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter group"):
        opt.add_param_group({"params": [ours.l1.weight]})
    with pytest.raises(ValueError, match="a parameter group needs a 'params' entry"):
        opt.add_param_group({"lr": 0.1})
    with pytest.raises(ValueError, match="invalid beta parameters"):
        optim.Adam([Tensor([1.0])], betas=(1.5, 0.9))


@pytest.mark.parametrize("case", ["sgd", "adam"])
def test_state_dict_round_trip_resumes_training(case):
    make, make_torch = GROUPED[case]
    ours, theirs = twin_models()
    opt, topt = make(ours), make_torch(theirs)
    _train(opt, topt, ours, theirs, 3)
    sd, tsd = opt.state_dict(), topt.state_dict()
    assert sd["param_groups"][1]["params"] == tsd["param_groups"][1]["params"] == [2, 3]
    assert set(sd["state"][0]) == set(tsd["state"][0])  # torch's state names (momentum_buffer / exp_avg, ...)
    for i, st in tsd["state"].items():
        for k, v in st.items():
            np.testing.assert_allclose(sd["state"][i][k].numpy(), v.numpy(), atol=ATOL, rtol=RTOL, err_msg=k)
    # a new optimizer (fresh state) loading torch's checkpoint continues exactly as torch does
    fresh = make(ours)
    fresh.load_state_dict({"state": {i: {k: v.numpy() for k, v in st.items()} for i, st in tsd["state"].items()},
                           "param_groups": tsd["param_groups"]})  # fmt: skip
    _train(fresh, topt, ours, theirs, 3, first=3)
    with pytest.raises(ValueError, match="loaded parameter groups of sizes \\[4\\] do not match"):
        fresh.load_state_dict({"state": {}, "param_groups": [{"params": [0, 1, 2, 3]}]})


def test_schedulers_set_each_group():
    ours, theirs = twin_models()
    opt, topt = GROUPED["sgd"][0](ours), GROUPED["sgd"][1](theirs)
    sched = optim.CosineAnnealingLR(opt, T_max=5, eta_min=0.001)
    tsched = torch.optim.lr_scheduler.CosineAnnealingLR(topt, T_max=5, eta_min=0.001)
    for _ in range(4):
        np.testing.assert_allclose(sched.get_last_lr(), tsched.get_last_lr(), rtol=1e-6)
        np.testing.assert_allclose([g["lr"] for g in opt.param_groups], [g["lr"] for g in topt.param_groups], rtol=1e-6)
        topt.step()
        tsched.step()
        sched.step()


@pytest.mark.parametrize("norm_type", [2.0, 1.0, math.inf])
def test_clip_grad_norm_matches_torch(norm_type):
    from unigrad.nn import utils as nn_utils

    ours, theirs = twin_models()
    opt = optim.SGD(get_parameters(ours), lr=0.1)
    topt = torch.optim.SGD(theirs.parameters(), lr=0.1)
    _train(opt, topt, ours, theirs, 2, clip=0.05)
    x, y = batch(9)
    loss_of(ours, x, y).backward()
    loss_of(theirs, x, y).backward()
    norm = nn_utils.clip_grad_norm_(opt.params, 0.01, norm_type=norm_type)
    tnorm = torch.nn.utils.clip_grad_norm_(list(theirs.parameters()), 0.01, norm_type=norm_type)
    np.testing.assert_allclose(norm.numpy(), tnorm.numpy(), rtol=1e-5)
    for p, tp in zip(opt.params, theirs.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), atol=1e-7, rtol=1e-5)
    nn_utils.clip_grad_value_(opt.params, 1e-3)
    torch.nn.utils.clip_grad_value_(theirs.parameters(), 1e-3)
    for p, tp in zip(opt.params, theirs.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), atol=1e-7, rtol=1e-5)
    p = Tensor([1.0, 2.0], requires_grad=True)
    (p * math.inf).sum().backward()
    with pytest.raises(RuntimeError, match="clip_grad_norm_: the total norm of order 2.0 .* is non-finite"):
        nn_utils.clip_grad_norm_([p], 1.0, error_if_nonfinite=True)


def test_parameters_to_vector_and_back():
    from unigrad.nn import utils as nn_utils

    a, b = Tensor(np.arange(6, dtype=np.float32).reshape(2, 3)), Tensor(np.float32([7, 8]))
    v = nn_utils.parameters_to_vector([a, b])
    np.testing.assert_array_equal(v.numpy(), [0, 1, 2, 3, 4, 5, 7, 8])
    nn_utils.vector_to_parameters(v * 2, [a, b])
    np.testing.assert_array_equal(a.numpy(), np.arange(6).reshape(2, 3) * 2)
    np.testing.assert_array_equal(b.numpy(), [14, 16])
    with pytest.raises(RuntimeError, match="the vector has 3 elements, the parameters 8"):
        nn_utils.vector_to_parameters(Tensor.zeros(3), [a, b])


# ---------------------------------------------------------------- torch's other optimizers (same names, signatures)

# (class name in both libraries, keyword arguments): every option that changes the math, alone or combined
TORCH_OPTIMIZERS = {
    "rmsprop": ("RMSprop", {}),
    "rmsprop_momentum_l2_eps": ("RMSprop", {"lr": 0.005, "momentum": 0.8, "weight_decay": 0.1, "eps": 1e-4}),
    "rmsprop_centered_momentum_maximize": (
        "RMSprop", {"lr": 0.005, "momentum": 0.5, "centered": True, "maximize": True}
    ),
    "adagrad": ("Adagrad", {"lr": 0.1}),
    "adagrad_decay_l2_init_eps": (
        "Adagrad",
        {"lr": 0.1, "lr_decay": 0.2, "weight_decay": 0.05, "initial_accumulator_value": 0.3, "eps": 1e-6},
    ),
    "adadelta": ("Adadelta", {}),
    "adadelta_rho_eps_l2_maximize": (
        "Adadelta", {"lr": 0.5, "rho": 0.7, "eps": 1e-4, "weight_decay": 0.1, "maximize": True}
    ),
    "adamax": ("Adamax", {}),
    "adamax_betas_eps_l2": ("Adamax", {"lr": 0.01, "betas": (0.8, 0.95), "eps": 1e-3, "weight_decay": 0.1}),
    "nadam": ("NAdam", {"lr": 0.01}),
    "nadam_l2_momentum_decay": (
        "NAdam", {"lr": 0.01, "betas": (0.8, 0.99), "eps": 1e-6, "weight_decay": 0.1, "momentum_decay": 0.05}
    ),
    "nadamw_maximize": ("NAdam", {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True, "maximize": True}),
    "radam": ("RAdam", {"lr": 0.01}),  # rho_t passes 5 at step 6: both branches
    "radam_l2_betas": ("RAdam", {"lr": 0.01, "betas": (0.8, 0.9), "eps": 1e-6, "weight_decay": 0.1}),
    "radamw_maximize": ("RAdam", {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True, "maximize": True}),
}  # fmt: skip
ODD_SHAPE_CASES = {"adam_maximize": ("Adam", {"lr": 0.01, "maximize": True, "amsgrad": True})}


def make_pair(case: str, ours, theirs):
    name, kw = {**TORCH_OPTIMIZERS, **ODD_SHAPE_CASES}[case]
    return getattr(optim, name)(ours, **kw), getattr(torch.optim, name)(theirs, **kw)


@pytest.mark.parametrize("case", TORCH_OPTIMIZERS)
def test_torch_optimizer_trains_like_torch(case):
    ours, theirs = twin_models()
    opt, topt = make_pair(case, get_parameters(ours), theirs.parameters())
    _train(opt, topt, ours, theirs, STEPS)


# parameters of odd sizes (empty, one element, 0-d, 3-d), in two groups with different rates
SHAPES = [(3, 5, 2), (1,), (), (0,), (7,)]
# steps where some parameters have no gradient: late start (4), a gap (2), a whole group without (0 and 1)
NO_GRAD = {0: [4], 1: [4], 2: [2], 4: [0, 1]}


def _odd_loss(params, step: int, wrap):
    rng = np.random.default_rng(100 + step)
    total = 0
    for p in params:
        target, w = rng.standard_normal(p.shape).astype(np.float32), rng.uniform(0.5, 2, p.shape).astype(np.float32)
        total = total + ((p - wrap(target)) ** 2 * wrap(w)).sum() + (p * 3).tanh().sum()
    return total


@pytest.mark.parametrize("case", ["rmsprop_centered_momentum_maximize", "adagrad_decay_l2_init_eps",
                                  "adadelta_rho_eps_l2_maximize", "adamax_betas_eps_l2", "nadamw_maximize",
                                  "radam_l2_betas", "adam_maximize"])  # fmt: skip
def test_odd_shapes_param_groups_and_missing_grads(case):
    rng = np.random.default_rng(3)
    init = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
    ours = [Tensor(x.copy()) for x in init]
    theirs = [torch.tensor(x, requires_grad=True) for x in init]
    opt, topt = make_pair(case, [{"params": ours[:2], "lr": 0.03}, {"params": ours[2:]}],
                          [{"params": theirs[:2], "lr": 0.03}, {"params": theirs[2:]}])  # fmt: skip
    for step in range(6):
        opt.zero_grad()
        topt.zero_grad()
        _odd_loss(ours, step, Tensor).backward()
        _odd_loss(theirs, step, torch.tensor).backward()
        for k in NO_GRAD.get(step, []):
            ours[k].grad = theirs[k].grad = None
        opt.step()
        topt.step()
        for k, (p, tp) in enumerate(zip(ours, theirs)):
            assert p.shape == tuple(tp.shape)
            np.testing.assert_allclose(p.numpy(), tp.detach().numpy(), atol=ATOL, rtol=RTOL, err_msg=f"{step}: {k}")
    sd, tsd = opt.state_dict(), topt.state_dict()
    for i, st in tsd["state"].items():  # torch's per-parameter step counts, missed steps included
        assert set(sd["state"][i]) == set(st), i
        for k, v in st.items():
            np.testing.assert_allclose(sd["state"][i][k].numpy(), v.numpy(), atol=ATOL, rtol=RTOL, err_msg=f"{i}: {k}")


@pytest.mark.parametrize("case", ["rmsprop_centered_momentum_maximize", "adagrad_decay_l2_init_eps", "nadam"])
def test_torch_optimizer_state_dict_round_trip(case):
    name, kw = TORCH_OPTIMIZERS[case]

    def groups(m):
        return [
            {"params": [m.l1.weight, m.l1.bias], "lr": kw.get("lr", 0.01) / 2},
            {"params": [m.l2.weight, m.l2.bias]},
        ]

    ours, theirs = twin_models()
    opt, topt = getattr(optim, name)(groups(ours), **kw), getattr(torch.optim, name)(groups(theirs), **kw)
    _train(opt, topt, ours, theirs, 3)
    sd, tsd = opt.state_dict(), topt.state_dict()
    assert sd["param_groups"][1]["params"] == tsd["param_groups"][1]["params"] == [2, 3]
    for i, st in tsd["state"].items():
        assert set(sd["state"][i]) == set(st)
        for k, v in st.items():
            np.testing.assert_allclose(sd["state"][i][k].numpy(), v.numpy(), atol=ATOL, rtol=RTOL, err_msg=k)
    # a fresh optimizer loading torch's checkpoint (arrays) goes on as torch does, step counts included
    fresh = getattr(optim, name)(groups(ours), **kw)
    fresh.load_state_dict({"state": {i: {k: v.numpy() for k, v in st.items()} for i, st in tsd["state"].items()},
                           "param_groups": tsd["param_groups"]})  # fmt: skip
    _train(fresh, topt, ours, theirs, 3, first=3)
    again = getattr(optim, name)(groups(ours), **kw)  # and our own state_dict loads into ours
    again.load_state_dict(fresh.state_dict())
    _train(again, topt, ours, theirs, 1, first=6)


def test_torch_optimizer_arguments_are_checked():
    p = [Tensor([1.0])]
    bad = [
        ("RMSprop", {"lr": -1.0}, "invalid learning rate -1.0"),
        ("RMSprop", {"alpha": -0.5}, "invalid alpha value"),
        ("RMSprop", {"momentum": -0.1}, "invalid momentum value"),
        ("Adagrad", {"lr_decay": -1}, "invalid lr_decay value"),
        ("Adagrad", {"initial_accumulator_value": -1}, "invalid initial_accumulator_value value"),
        ("Adadelta", {"rho": 1.5}, "invalid rho value 1.5"),
        ("Adadelta", {"eps": -1e-6}, "invalid eps value"),
        ("Adamax", {"betas": (0.9, 1.0)}, "invalid beta parameters"),
        ("NAdam", {"momentum_decay": -1}, "invalid momentum_decay value"),
        ("RAdam", {"weight_decay": -0.1}, "invalid weight_decay value"),
        ("SGD", {"lr": -0.1}, "invalid learning rate"),
        ("Adam", {"eps": -1.0}, "invalid epsilon value"),
    ]
    for name, kw, message in bad:
        with pytest.raises(ValueError, match=f"{name}: {message}"):
            getattr(optim, name)(p, **kw)
    with pytest.raises(ValueError, match="NAdam: invalid learning rate -0.5"):  # a group's own options too
        optim.NAdam([{"params": p, "lr": -0.5}])


def test_jitted_step_with_schedules_matches_eager_and_torch():
    """RAdam (the step count drives its bias corrections and rectification) under TinyJit, with OneCycleLR
    changing the rate and betas[0] every step: replays read the counters and the buffers the schedule writes in
    place, equal to the eager steps and to torch; nothing recompiles after the capture."""
    from unigrad import TinyJit

    def run(jit: bool):
        ours, _ = twin_models()
        opt = optim.RAdam(get_parameters(ours), lr=0.01, weight_decay=0.01)
        sched = optim.OneCycleLR(opt, max_lr=0.05, total_steps=10, pct_start=0.4)

        def step(x: Tensor, y: Tensor) -> Tensor:
            opt.zero_grad()
            loss = ours(x).cross_entropy(y)
            loss.backward()
            Tensor.realize(loss, *opt.schedule_step())
            return loss

        fn = TinyJit(step) if jit else step
        losses, programs = [], []
        for i in range(8):
            x, y = batch(i)
            before = rt.stats.programs
            losses.append(fn(Tensor(x), Tensor(y)).item())
            programs.append(rt.stats.programs - before)
            sched.step()
        return ours, opt, losses, programs

    eager, eager_opt, eager_losses, _ = run(False)
    jitted, jit_opt, jit_losses, programs = run(True)
    assert programs[3:] == [0] * 5, programs  # replays: no new programs
    np.testing.assert_allclose(jit_losses, eager_losses, rtol=1e-6)
    assert_same_state(jitted, TorchMLPState(eager), "jitted vs eager")
    _, theirs = twin_models()
    topt = torch.optim.RAdam(theirs.parameters(), lr=0.01, weight_decay=0.01)
    tsched = torch.optim.lr_scheduler.OneCycleLR(topt, max_lr=0.05, total_steps=10, pct_start=0.4)
    for i in range(8):
        x, y = batch(i)
        topt.zero_grad()
        tloss = loss_of(theirs, x, y)
        tloss.backward()
        topt.step()
        tsched.step()
        np.testing.assert_allclose(jit_losses[i], tloss.item(), atol=ATOL, rtol=RTOL)
    assert_same_state(jitted, theirs, "jitted vs torch")
    assert jit_opt.param_groups[0]["betas"] == topt.param_groups[0]["betas"]
    assert jit_opt.state_dict()["state"][0]["step"].item() == 8  # counted on the device, replays included


class TorchMLPState:
    """Our model's state seen through torch's state_dict() interface (to compare two of our models)."""

    def __init__(self, model: MLP):
        self.model = model

    def state_dict(self):
        return {k: torch.tensor(v.numpy()) for k, v in get_state_dict(self.model).items()}


def test_torch_optimizer_on_sharded_parameters():
    rng = np.random.default_rng(61)
    w0, x = rng.standard_normal((6, 4)).astype(np.float32), rng.standard_normal((3, 6)).astype(np.float32)
    devices = ("CPU:0", "CPU:1")
    tw = torch.tensor(w0, requires_grad=True)
    uw = Tensor(w0).shard(devices, 0).requires_grad_()
    topt, uopt = torch.optim.NAdam([tw], lr=0.05), optim.NAdam([uw], lr=0.05)
    ux = Tensor(x, device=devices)
    for _ in range(3):
        topt.zero_grad()
        (torch.tensor(x) @ tw).square().sum().backward()
        topt.step()
        uopt.zero_grad()
        (ux @ uw).square().sum().backward()
        uopt.step()
        assert uw.device == devices and uw.uop.axis == 0
        np.testing.assert_allclose(uw.numpy(), tw.detach().numpy(), rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- torch's other schedules

LRS = torch.optim.lr_scheduler
SCHEDULES.update(
    {
        "constant": (lambda o: optim.ConstantLR(o, factor=0.5, total_iters=4), lambda o: LRS.ConstantLR(o, 0.5, 4)),
        "polynomial": (
            lambda o: optim.PolynomialLR(o, total_iters=8, power=2.0), lambda o: LRS.PolynomialLR(o, 8, 2.0)
        ),
        "polynomial_linear": (lambda o: optim.PolynomialLR(o), lambda o: LRS.PolynomialLR(o)),
        "warm_restarts": (
            lambda o: optim.CosineAnnealingWarmRestarts(o, T_0=3, eta_min=0.01),
            lambda o: LRS.CosineAnnealingWarmRestarts(o, T_0=3, eta_min=0.01),
        ),
        "warm_restarts_mult": (
            lambda o: optim.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=2, eta_min=0.001),
            lambda o: LRS.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=2, eta_min=0.001),
        ),
        "one_cycle_cos": (
            lambda o: optim.OneCycleLR(o, max_lr=1.0, total_steps=12), lambda o: LRS.OneCycleLR(o, 1.0, 12)
        ),
        "one_cycle_linear_three_phase": (
            lambda o: optim.OneCycleLR(o, 0.5, total_steps=12, pct_start=0.25, anneal_strategy="linear",
                                       div_factor=10, final_div_factor=100, three_phase=True),
            lambda o: LRS.OneCycleLR(o, 0.5, total_steps=12, pct_start=0.25, anneal_strategy="linear",
                                     div_factor=10, final_div_factor=100, three_phase=True),
        ),
        "one_cycle_epochs": (
            lambda o: optim.OneCycleLR(o, 0.3, epochs=3, steps_per_epoch=5, pct_start=0.5, cycle_momentum=False),
            lambda o: LRS.OneCycleLR(o, 0.3, epochs=3, steps_per_epoch=5, pct_start=0.5, cycle_momentum=False),
        ),
        "cyclic_triangular": (
            lambda o: optim.CyclicLR(o, 0.01, 0.1, step_size_up=3), lambda o: LRS.CyclicLR(o, 0.01, 0.1, 3)
        ),
        "cyclic_triangular2": (
            lambda o: optim.CyclicLR(o, 0.01, 0.1, 2, step_size_down=3, mode="triangular2"),
            lambda o: LRS.CyclicLR(o, 0.01, 0.1, 2, step_size_down=3, mode="triangular2"),
        ),
        "cyclic_exp_range": (
            lambda o: optim.CyclicLR(o, 0.05, 0.2, 2, mode="exp_range", gamma=0.9),
            lambda o: LRS.CyclicLR(o, 0.05, 0.2, 2, mode="exp_range", gamma=0.9),
        ),
        "cyclic_scale_fn": (
            lambda o: optim.CyclicLR(o, 0.05, 0.2, 3, scale_fn=lambda x: 0.8**x, scale_mode="iterations"),
            lambda o: LRS.CyclicLR(o, 0.05, 0.2, 3, scale_fn=lambda x: 0.8**x, scale_mode="iterations"),
        ),
        "warmup_then_restarts": (
            lambda o: optim.SequentialLR(
                o, [optim.ConstantLR(o, 0.1, 2), optim.CosineAnnealingWarmRestarts(o, 3, 2)], milestones=[2]
            ),
            lambda o: LRS.SequentialLR(o, [LRS.ConstantLR(o, 0.1, 2), LRS.CosineAnnealingWarmRestarts(o, 3, 2)], [2]),
        ),
    }
)  # fmt: skip


@pytest.mark.parametrize("case", ["one_cycle", "cyclic"])
@pytest.mark.parametrize("opt_case", ["sgd", "adam"])
def test_cycled_momentum_trains_like_torch(case, opt_case):
    """OneCycleLR and CyclicLR move each group's rate and momentum (SGD) or betas[0] (Adam) every step, with a
    value per group: the same rates, momenta and parameters as torch."""
    kw = {"max_lr": [0.05, 0.1]}
    if case == "one_cycle":
        make = (optim.OneCycleLR, LRS.OneCycleLR)
        kw.update(total_steps=8, pct_start=0.4, base_momentum=[0.8, 0.7], three_phase=opt_case == "adam")
    else:
        make = (optim.CyclicLR, LRS.CyclicLR)
        kw.update(base_lr=0.01, step_size_up=2, max_momentum=[0.95, 0.9])
    ours, theirs = twin_models()
    opt, topt = GROUPED[opt_case][0](ours), GROUPED[opt_case][1](theirs)
    sched, tsched = make[0](opt, **kw), make[1](topt, **kw)
    key = "betas" if opt_case == "adam" else "momentum"
    for step in range(6):
        assert sched.get_last_lr() == pytest.approx(tsched.get_last_lr(), rel=1e-9)
        # betas are tuples: compared flat (pytest.approx takes no nested data since pytest 9.2)
        flat = [np.ravel(g[key]).tolist() for g in opt.param_groups]
        assert flat == [pytest.approx(np.ravel(g[key]).tolist(), rel=1e-9) for g in topt.param_groups]
        _train(opt, topt, ours, theirs, 1, first=step)
        sched.step()
        tsched.step()


def test_warm_restarts_fractional_and_interleaved_epochs():
    opt = optim.SGD([Tensor([1.0])], lr=0.1)
    topt = torch.optim.SGD([torch.nn.Parameter(torch.ones(1))], lr=0.1)
    sched = optim.CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=3, eta_min=0.01)
    tsched = LRS.CosineAnnealingWarmRestarts(topt, T_0=2, T_mult=3, eta_min=0.01)
    epochs = [0.25, 0.5, 1.75, 2.0, 3.5, 7.9, None, None, 12, None, 30.5, None]  # None: step() goes on by one
    for epoch in epochs:
        sched.step(epoch)
        tsched.step(epoch)
        assert sched.get_last_lr() == pytest.approx(tsched.get_last_lr(), rel=1e-9), epoch
        assert (sched.last_epoch, sched.T_i) == (tsched.last_epoch, tsched.T_i)
        assert opt.param_groups[0]["lr"] == pytest.approx(topt.param_groups[0]["lr"], rel=1e-9)


PLATEAU = {
    "min_rel": {"patience": 2},
    "max_abs_cooldown": {"mode": "max", "threshold_mode": "abs", "threshold": 0.5, "patience": 1, "cooldown": 2,
                         "factor": 0.5},
    "min_lr_per_group_eps": {"patience": 0, "factor": 0.3, "min_lr": [0.01, 0.005], "eps": 1e-3},
}  # fmt: skip


@pytest.mark.parametrize("case", PLATEAU)
def test_reduce_lr_on_plateau_matches_torch(case):
    kw = PLATEAU[case]
    opt = optim.SGD([{"params": [Tensor([1.0])], "lr": 0.1}, {"params": [Tensor([2.0])], "lr": 0.05}])
    tps = [torch.nn.Parameter(torch.ones(1)), torch.nn.Parameter(torch.ones(1))]
    topt = torch.optim.SGD([{"params": [tps[0]], "lr": 0.1}, {"params": [tps[1]], "lr": 0.05}])
    sched, tsched = optim.ReduceLROnPlateau(opt, **kw), LRS.ReduceLROnPlateau(topt, **kw)
    metrics = [5.0, 4.0, 3.9996, 4.0, 4.1, 4.2, 3.0, 3.0, 3.0, 3.0, 3.5, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0]
    for k, m in enumerate(metrics):
        sched.step(Tensor([m]) if k % 2 else m)  # a float or a one-element tensor (odd k: exact in float32)
        tsched.step(m)
        assert sched.get_last_lr() == pytest.approx(tsched.get_last_lr(), rel=1e-9), (k, m)
        assert [g["lr"] for g in opt.param_groups] == pytest.approx([g["lr"] for g in topt.param_groups], rel=1e-9)
        assert (sched.num_bad_epochs, sched.cooldown_counter, sched.best) == (
            tsched.num_bad_epochs,
            tsched.cooldown_counter,
            tsched.best,
        )


def test_scheduler_arguments_are_checked():
    opt = optim.SGD([Tensor([1.0])], lr=0.1)
    adagrad = optim.Adagrad([Tensor([1.0])])
    bad = [
        (lambda: optim.ConstantLR(opt, factor=1.5), "ConstantLR: the factor must be in \\[0, 1\\]"),
        (lambda: optim.PolynomialLR(opt, total_iters=0), "total_iters must be positive"),
        (lambda: optim.CosineAnnealingWarmRestarts(opt, T_0=0), "expected a positive integer T_0"),
        (lambda: optim.CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=0), "expected an integer T_mult >= 1"),
        (lambda: optim.OneCycleLR(opt, 0.1), "either total_steps OR \\(epochs AND steps_per_epoch\\)"),
        (lambda: optim.OneCycleLR(opt, 0.1, total_steps=-1), "positive integer total_steps"),
        (lambda: optim.OneCycleLR(opt, 0.1, 10, pct_start=1.5), "pct_start between 0 and 1"),
        (lambda: optim.OneCycleLR(opt, 0.1, 10, anneal_strategy="exp"), "anneal_strategy must be one of"),
        (lambda: optim.OneCycleLR(opt, [0.1, 0.2], 10), "max_lr must have one value per parameter group"),
        (lambda: optim.OneCycleLR(adagrad, 0.1, 10), "optimizer must support momentum or beta1"),
        (lambda: optim.CyclicLR(opt, 0.01, 0.1, mode="sine"), "mode 'sine' is invalid and scale_fn is None"),
        (lambda: optim.ReduceLROnPlateau(opt, factor=1.0), "the factor must be < 1.0"),
        (lambda: optim.ReduceLROnPlateau(opt, mode="up"), "mode 'up' is unknown"),
        (lambda: optim.ReduceLROnPlateau(opt, threshold_mode="pct"), "threshold mode 'pct' is unknown"),
    ]
    for make, message in bad:
        with pytest.raises(ValueError, match=message):
            make()
    sched = optim.OneCycleLR(opt, 0.1, total_steps=2)
    sched.step()
    sched.step()
    with pytest.raises(ValueError, match="tried to step 3 times; the specified number of total steps is 2"):
        sched.step()
    assert optim.lr_scheduler.StepLR is optim.StepLR  # torch's module path: nn.optim.lr_scheduler.StepLR


def test_zero_grad_keeping_zeros_matches_torch():
    """zero_grad(set_to_none=False): the gradients become zeros, so a step without a new backward still moves the
    parameters by their momentum, as torch's does."""
    w0 = np.random.default_rng(5).standard_normal((3, 2)).astype(np.float32)
    uw, tw = Tensor(w0.copy(), requires_grad=True), torch.tensor(w0, requires_grad=True)
    uo, to = optim.SGD([uw], lr=0.1, momentum=0.9), torch.optim.SGD([tw], lr=0.1, momentum=0.9)
    for w, o in ((uw, uo), (tw, to)):
        (w * w).sum().backward()
        o.step()
        o.zero_grad(set_to_none=False)
        o.step()  # zero gradient: the momentum alone
    assert uw.grad is not None and not uw.grad.numpy().any()
    np.testing.assert_allclose(uw.numpy(), tw.detach().numpy(), rtol=1e-6)
