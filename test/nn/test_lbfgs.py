"""torch.optim.LBFGS against torch's: the same trajectory (parameters after each step, the losses step returns,
the number of closure calls) on float64 problems, with and without the strong-Wolfe line search, across steps that
carry the curvature history over, with a history shorter than the run; torch's errors."""

import numpy as np
import pytest
import torch

import unigrad.torch as ut

pytestmark = pytest.mark.flavor("torch")


def rosenbrock(T, xy):
    x, y = xy[0], xy[1]
    return (1 - x) ** 2 + 100 * (y - x * x) ** 2


def regression(T, params):
    """Least squares with a weight matrix and a bias (two parameters, so the flat vectors join them)."""
    w, b = params
    rng = np.random.default_rng(0)
    x = T.tensor(rng.standard_normal((20, 3)), dtype=T.float64)
    y = T.tensor(rng.standard_normal((20, 2)), dtype=T.float64)
    return ((x @ w + b - y) ** 2).mean() + 0.1 * (w**4).sum()


PROBLEMS = {
    "rosenbrock": (rosenbrock, [np.array([-1.5, 2.0])]),
    "regression": (regression, [np.full((3, 2), 0.5), np.array([0.3, -0.2])]),
}


def run(T, problem: str, steps: int, **options) -> list[tuple]:
    """(returned loss, closure calls so far, parameters) after each step of LBFGS on `problem` with library T."""
    fn, init = PROBLEMS[problem]
    params = [T.tensor(v.copy(), dtype=T.float64, requires_grad=True) for v in init]
    opt = T.optim.LBFGS(params, **options)
    calls = [0]

    def closure():
        calls[0] += 1
        opt.zero_grad()
        loss = fn(T, params[0] if problem == "rosenbrock" else params)
        loss.backward()
        return loss

    trace = []
    for _ in range(steps):
        loss = opt.step(closure)
        trace.append((float(loss.item()), calls[0], [p.detach().numpy().copy() for p in params]))
    return trace


CASES = [
    ("rosenbrock", dict(line_search_fn="strong_wolfe", max_iter=6)),
    ("rosenbrock", dict(lr=0.05, max_iter=7)),
    ("rosenbrock", dict(line_search_fn="strong_wolfe", lr=0.01, max_iter=8)),  # first steps too short: extrapolates
    ("rosenbrock", dict(line_search_fn="strong_wolfe", lr=30, max_iter=8)),  # too long: zooms in
    ("rosenbrock", dict(line_search_fn="strong_wolfe", lr=100, max_iter=20)),  # zoom steps moved off the ends
    ("regression", dict(line_search_fn="strong_wolfe", lr=1000, max_iter=10)),
    ("regression", dict(line_search_fn="strong_wolfe", max_iter=4, history_size=2)),
    ("regression", dict(lr=0.5, max_iter=5, history_size=3)),
    ("regression", dict(lr=1, max_iter=30, tolerance_change=1e-6)),  # stops early on a small change
]


@pytest.mark.parametrize("problem,options", CASES)
def test_lbfgs_follows_torch_trajectory(problem, options):
    ours, ref = run(ut, problem, 4, **options), run(torch, problem, 4, **options)
    for step, ((loss, calls, params), (rloss, rcalls, rparams)) in enumerate(zip(ours, ref)):
        assert calls == rcalls, f"step {step}: {calls} closure calls, torch {rcalls}"
        np.testing.assert_allclose(loss, rloss, rtol=1e-7, atol=1e-12, err_msg=f"step {step}")
        for p, rp in zip(params, rparams):
            np.testing.assert_allclose(p, rp, rtol=1e-8, atol=1e-12, err_msg=f"step {step}")


def test_lbfgs_minimizes_rosenbrock():
    _, _, params = run(ut, "rosenbrock", 10, line_search_fn="strong_wolfe", max_iter=20)[-1]
    np.testing.assert_allclose(params[0], [1.0, 1.0], atol=1e-4)


def test_lbfgs_state_dict_and_errors_as_torch():
    w = ut.tensor([1.0, 2.0], dtype=ut.float64, requires_grad=True)
    opt = ut.optim.LBFGS([w], history_size=5)

    def closure():
        opt.zero_grad()
        loss = ((w - 3) ** 2).sum()
        loss.backward()
        return loss

    opt.step(closure)
    state = opt.state_dict()
    assert state["param_groups"][0]["max_eval"] == 25 and state["param_groups"][0]["history_size"] == 5
    assert {"d", "t", "old_dirs", "old_stps", "ro", "H_diag", "prev_flat_grad", "prev_loss", "n_iter",
            "func_evals"} <= set(state["state"][0])  # fmt: skip
    np.testing.assert_allclose(w.numpy(), [3.0, 3.0])
    with pytest.raises(RuntimeError, match="closure .* is required"):
        opt.step()
    with pytest.raises(ValueError, match="doesn't support per-parameter options"):
        ut.optim.LBFGS([{"params": [w]}, {"params": [ut.zeros(2, requires_grad=True)]}])
    with pytest.raises(RuntimeError, match="only 'strong_wolfe' is supported"):
        ut.optim.LBFGS([w], line_search_fn="armijo")
    with pytest.raises(ValueError, match="invalid learning rate"):
        ut.optim.LBFGS([w], lr=-1)
