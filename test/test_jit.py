"""TinyJit: replays equal the plain function (numpy reference, bit-identical training), misuse errors, the
random generator as an input, intermediate memory planned once, no scheduling or compiling in a replay."""

import numpy as np
import pytest

from unigrad import Tensor, TinyJit, nn
from unigrad.jit import JitError
from unigrad.nn import optim
from unigrad.runtime import realize as rt

RNG = np.random.default_rng(0)


def rand(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("shape", [(1, 1), (3, 8), (17, 5), (512, 160)])
def test_replay_matches_numpy(shape):
    """New input buffers every call: a replay's prepared kernel calls take them in place of the captured ones (at
    (512, 160) the matmul runs on the thread pool, whose argument array is refilled)."""
    w = rand(shape[1], 4)
    wt = Tensor(w)

    @TinyJit
    def f(x: Tensor, y: Tensor) -> Tensor:
        return ((x @ wt).relu() + y).sum(1) * 2

    for i in range(5):
        x, y = rand(*shape), rand(shape[0], 4)
        out = f(Tensor(x), Tensor(y))
        np.testing.assert_allclose(out.numpy(), ((np.maximum(x @ w, 0) + y).sum(1)) * 2, rtol=1e-5, atol=1e-5)
        assert (f.plan is not None) == (i >= 1)
    threaded = [prog.sig.threads for prog, _, holes in f.plan.steps if holes and hasattr(prog, "sig")]
    assert any(threaded) == (shape[0] >= 512)


def test_replay_builds_no_graph(monkeypatch):
    @TinyJit
    def f(x: Tensor) -> Tensor:
        return (x * 3).exp().sum()

    for _ in range(2):
        f(Tensor(rand(10)))

    def boom(*a, **k):
        raise AssertionError("a replay scheduled a graph")

    x = Tensor(rand(10)).realize()
    with monkeypatch.context() as m:
        m.setattr(rt, "_kernelize", boom)
        m.setattr(rt, "get_kernel", boom)
        out = f(x)
    np.testing.assert_allclose(out.numpy(), np.exp(x.numpy() * 3).sum(), rtol=1e-5)


def test_outputs_structure_and_input_returned():
    @TinyJit
    def f(x: Tensor, d: dict) -> dict:
        return {"a": x + d["y"], "b": [x * 2, x]}

    for _ in range(4):
        x, y = rand(5), rand(5)
        out = f(Tensor(x), {"y": Tensor(y)})
        np.testing.assert_allclose(out["a"].numpy(), x + y, rtol=1e-6)
        np.testing.assert_allclose(out["b"][0].numpy(), x * 2, rtol=1e-6)
        np.testing.assert_allclose(out["b"][1].numpy(), x)  # the input itself, this call's


def test_non_contiguous_input():
    @TinyJit
    def f(x: Tensor) -> Tensor:
        return x + 1

    for _ in range(4):
        x = rand(4, 6)
        np.testing.assert_allclose(f(Tensor(x).T).numpy(), x.T + 1)
        y = rand(8, 5)
        np.testing.assert_allclose(f(Tensor(y)[1:7, :4]).numpy(), y[1:7, :4] + 1)


def test_method_decorator():
    class Model:
        def __init__(self) -> None:
            self.w = Tensor(rand(3))

        @TinyJit
        def __call__(self, x: Tensor) -> Tensor:
            return x * self.w

    m = Model()
    for _ in range(4):
        x = rand(3)
        np.testing.assert_allclose(m(Tensor(x)).numpy(), x * m.w.numpy())


def _mlp():
    Tensor.manual_seed(0)
    l1, l2 = nn.Linear(6, 16), nn.Linear(16, 3)
    return l1, l2, optim.Adam([l1.weight, l1.bias, l2.weight, l2.bias], lr=1e-2)


def _step(l1, l2, opt, dropout: float):
    def step(x: Tensor, y: Tensor) -> Tensor:
        opt.zero_grad()
        loss = l2(l1(x).relu().dropout(dropout)).sparse_categorical_crossentropy(y)
        loss.backward()
        Tensor.realize(loss, *opt.schedule_step())
        return loss

    return step


@pytest.mark.parametrize("dropout", [0.0, 0.5])
def test_training_step_bit_identical(dropout):
    """The same steps with and without the JIT: the same losses and weights, dropout masks included (the
    generator's counter advances on every replay as it does on every eager call)."""
    a, b = _mlp(), _mlp()
    plain, jitted = _step(*a, dropout), TinyJit(_step(*b, dropout))
    data = [(rand(8, 6), RNG.integers(0, 3, 8)) for _ in range(6)]
    Tensor.training = True
    try:
        Tensor.manual_seed(1)
        la = [plain(Tensor(x), Tensor(y)).item() for x, y in data]
        Tensor.manual_seed(1)
        lb = [jitted(Tensor(x), Tensor(y)).item() for x, y in data]
    finally:
        Tensor.training = False
    assert la == lb
    np.testing.assert_array_equal(a[0].weight.numpy(), b[0].weight.numpy())
    assert jitted.plan is not None and jitted.plan.intermediate_bytes <= jitted.plan.captured_bytes


def test_random_changes_every_replay():
    @TinyJit
    def f(x: Tensor) -> Tensor:
        return x + Tensor.rand(16)

    x = Tensor.zeros(16).realize()
    outs = [f(x).numpy().copy() for _ in range(5)]
    for i in range(len(outs)):
        for j in range(i):
            assert not np.array_equal(outs[i], outs[j])
    assert all(((o >= 0) & (o < 1)).all() for o in outs)


def test_intermediates_share_memory():
    @TinyJit
    def f(x: Tensor) -> Tensor:
        for _ in range(6):  # each reads the one before reversed: six kernels (at one index they would merge)
            x = (x.flip(0) * 1.5 + 1).contiguous()
        return x

    for _ in range(3):
        x = rand(1000)
        ref = x.copy()
        for _ in range(6):
            ref = ref[::-1] * np.float32(1.5) + 1
        np.testing.assert_allclose(f(Tensor(x)).numpy(), ref, rtol=1e-5)
    plan = f.plan
    assert plan is not None and plan.n_kernels == 6
    # five temporaries (the sixth buffer is the output): the schedule's memory plan already ran them on two
    # buffers, ping-pong, and the replay plan keeps two
    assert plan.captured_bytes == 2 * 4000
    assert plan.intermediate_bytes == 2 * 4000


def test_python_device():
    @TinyJit
    def f(x: Tensor) -> Tensor:
        return (x * x).sum(0)

    for _ in range(4):
        x = rand(3, 2)
        out = f(Tensor(x, device="PYTHON"))
        assert out.device == "PYTHON"  # replays too (an output took the default device)
        np.testing.assert_allclose(out.numpy(), (x * x).sum(0), rtol=1e-6)
        np.testing.assert_allclose((out + 1).numpy(), (x * x).sum(0) + 1, rtol=1e-6)


def test_copy_between_devices_replays_raw_bits():
    # a replayed copy moves bfloat16 bits as they are (it went through float32 values and wrote garbage)
    from unigrad import dtypes

    @TinyJit
    def f(a: Tensor) -> Tensor:
        return a.to("CPU") * 2

    for i in range(4):
        x = rand(5) + i
        a = Tensor(x, device="PYTHON").cast(dtypes.bfloat16).realize()
        expected = Tensor(x).cast(dtypes.bfloat16).numpy().astype(np.float32) * 2
        np.testing.assert_array_equal(f(a).numpy().astype(np.float32), expected)


# ---------------------------------------------------------------- misuse


def _captured(fn):
    jit = TinyJit(fn)
    for _ in range(2):
        jit(Tensor(rand(4)))
    return jit


def test_error_changed_shape_dtype_device():
    jit = _captured(lambda x: x * 2)
    with pytest.raises(JitError, match=r"input tensor 0 has shape \(5,\).*captured for \(4,\)"):
        jit(Tensor(rand(5)))
    with pytest.raises(JitError, match="input tensor 0 has dtype dtypes.int64"):
        jit(Tensor(np.arange(4)))
    with pytest.raises(JitError, match="input tensor 0 has device PYTHON"):
        jit(Tensor(rand(4), device="PYTHON"))
    with pytest.raises(JitError, match="captured with 1 input tensors, called with 2"):
        jit(Tensor(rand(4)), Tensor(rand(4)))
    jit.reset()  # after a reset, a new shape captures again
    for _ in range(3):
        x = rand(5)
        np.testing.assert_allclose(jit(Tensor(x)).numpy(), x * 2)


def test_error_changed_python_argument():
    jit = TinyJit(lambda x, k: x * k)
    for _ in range(3):
        jit(Tensor(rand(4)), 2.0)
    with pytest.raises(JitError, match="non-Tensor arguments changed"):
        jit(Tensor(rand(4)), 3.0)


def test_error_same_buffer_twice():
    jit = TinyJit(lambda a, b: a + b)
    x = Tensor(rand(4))
    with pytest.raises(JitError, match="inputs 0 and 1 are the same buffer"):
        jit(x, x)


def test_error_non_tensor_output():
    jit = TinyJit(lambda x: (x * 2, 3))
    with pytest.raises(JitError, match="returned a int"):
        jit(Tensor(rand(4)))


def test_error_read_inside():
    def f(x: Tensor) -> Tensor:
        y = x * 2
        if y.sum().item() > 0:
            return y
        return -y

    with pytest.raises(JitError, match=r"reading a tensor's values \(.numpy\(\), .item\(\)"):
        TinyJit(f)(Tensor(rand(4)))


def test_error_no_kernels():
    jit = TinyJit(lambda x: x)
    jit(Tensor(rand(4)))
    with pytest.raises(JitError, match="ran no kernels"):
        jit(Tensor(rand(4)))


D2 = ("CPU:0", "CPU:1")


@pytest.mark.parametrize("axis", [0, None], ids=["data_parallel", "replicated_input"])
@Tensor.train()  # tinygrad's optimizers step only in train mode
def test_multi_device_training_step_replays_as_eager(axis):
    # an SGD step of an MLP with replicated weights on two devices, the batch split (or replicated): replays give
    # the eager step's losses and weights, on new inputs each call
    rng = np.random.default_rng(5)
    ws = [rng.standard_normal(s).astype(np.float32) * 0.5 for s in ((6, 8), (8, 3))]

    def make():
        w1, w2 = (Tensor(w, device=D2, requires_grad=True) for w in ws)
        opt = optim.SGD([w1, w2], lr=0.1, momentum=0.9)

        def step(x: Tensor, y: Tensor) -> Tensor:
            opt.zero_grad()
            loss = (((x @ w1).relu() @ w2 - y) ** 2).mean()
            loss.backward()
            opt.step()
            return loss.realize()

        return step, (w1, w2)

    eager, ew = make()
    jitted, jw = make()
    jitted = TinyJit(jitted)
    for i in range(5):
        xn, yn = rng.standard_normal((4, 6)).astype(np.float32), rng.standard_normal((4, 3)).astype(np.float32)
        e = eager(Tensor(xn).shard(D2, axis), Tensor(yn).shard(D2, axis))
        j = jitted(Tensor(xn).shard(D2, axis), Tensor(yn).shard(D2, axis))
        assert j.device == D2
        np.testing.assert_allclose(j.numpy(), e.numpy(), rtol=1e-6)
        for a, b in zip(jw, ew):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6, atol=1e-7)
    assert jitted.plan is not None and jitted.plan.n_kernels > 0


def test_multi_device_outputs_and_returned_inputs():
    @TinyJit
    def f(x: Tensor, y: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        return (x * 2 + y).realize(), x, (x.sum(0)).realize()

    for i in range(4):
        xn, yn = rand(4, 3) + i, rand(4, 3)
        x, y = Tensor(xn).shard(D2, 0), Tensor(yn).shard(D2, 0)
        a, same, s = f(x, y)
        assert a.device == same.device == s.device == D2 and a.uop.axis == 0
        np.testing.assert_allclose(a.numpy(), xn * 2 + yn, rtol=1e-6)
        np.testing.assert_array_equal(same.numpy(), xn)
        np.testing.assert_allclose(s.numpy(), xn.sum(0), rtol=1e-5)
        np.testing.assert_allclose((a + 1).numpy(), xn * 2 + yn + 1, rtol=1e-6)  # a usable multi-device tensor


def test_multi_device_changed_split_axis_is_refused():
    f = TinyJit(lambda x: (x * 2).realize())
    for _ in range(2):
        f(Tensor(rand(4, 2)).shard(D2, 0))
    with pytest.raises(JitError, match=r"input tensor 0 has split axis across its devices 1, .* captured for 0"):
        f(Tensor(rand(4, 2)).shard(D2, 1))
    xn = rand(4, 2)
    view = Tensor(xn).shard(D2, 0).realize().flip(1)  # a view of the parts: copied to plain ones first
    np.testing.assert_allclose(f(view).numpy(), xn[:, ::-1] * 2)


@Tensor.train()  # tinygrad's optimizers step only in train mode
def test_a_loss_read_after_the_step_inside_and_a_loss_from_outside():
    # torch's loop inside the function: the returned loss is the one before the update; a loss left unrealized
    # from before the first call is not captured into the replays
    w0 = rand(3, 2)

    def make():
        w = Tensor(w0, requires_grad=True)
        opt = optim.SGD([w], lr=0.1)

        def step(x: Tensor) -> Tensor:
            opt.zero_grad()
            loss = (x @ w).square().sum()
            loss.backward()
            opt.step()
            return loss

        return step, w

    eager, ew = make()
    jitted, jw = make()
    jitted = TinyJit(jitted)
    for i in range(4):
        if i == 1:  # before the capture
            stale = (jw * 2).sum()
            stale.backward()
            jw.grad = None
        x = rand(5, 3)
        np.testing.assert_allclose(jitted(Tensor(x)).numpy(), eager(Tensor(x)).numpy(), rtol=1e-5)
    np.testing.assert_allclose(jw.numpy(), ew.numpy(), rtol=1e-5)
    assert jitted.plan is not None
    n = jitted.plan.n_kernels
    jitted.reset()
    for _ in range(3):
        jitted(Tensor(rand(5, 3)))
    assert jitted.plan is not None and jitted.plan.n_kernels == n


def test_each_replay_returns_its_own_outputs():
    """torch's results: a replay writes its outputs into buffers no earlier result still holds (tinygrad reuses one
    buffer, so a kept loss would change under the caller); buffers nothing holds any more are reused."""

    @TinyJit
    def f(x: Tensor) -> tuple[Tensor, Tensor]:
        return (x * 2).sum(), x + 1

    xs = [rand(4) for _ in range(7)]
    kept = [f(Tensor(x)) for x in xs]
    for (s, p), x in zip(kept, xs):
        np.testing.assert_allclose(s.numpy(), (x * 2).sum(), rtol=1e-6)
        np.testing.assert_allclose(p.numpy(), x + 1, rtol=1e-6)
    total = Tensor(0.0)
    for x in xs:  # a lazy sum over the results reads each one's buffer later
        total = total + f(Tensor(x))[0]
    np.testing.assert_allclose(total.numpy(), sum((x * 2).sum() for x in xs), rtol=1e-5)
    seen = set()
    for x in xs:  # results dropped at once: the same buffers come back
        s, _ = f(Tensor(x))
        seen.add(id(rt.buffer_of(s.uop)))
        del s
    assert len(seen) <= 2
    assert all(len(ring) <= 4 for ring in f._rings)


def test_an_output_that_is_state_keeps_its_buffer():
    """A returned buffer the function reads before it writes (an accumulator made at the first call) carries state
    from replay to replay: it is not renewed."""
    acc = Tensor.zeros(3).contiguous().realize()

    @TinyJit
    def f(x: Tensor) -> Tensor:
        acc.assign(acc + x)
        return acc

    total = np.zeros(3, np.float32)
    for _ in range(5):
        x = rand(3)
        total += x
        out = f(Tensor(x))
    np.testing.assert_allclose(out.numpy(), total, rtol=1e-5)
    np.testing.assert_allclose(acc.numpy(), total, rtol=1e-5)
    assert f.plan is not None and f.plan.fresh == ()
