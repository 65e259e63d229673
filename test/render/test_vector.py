"""Vector kernels: isel's vector selection + the C renderer's vector types give numpy's results on odd sizes and
views, bit-identical to the scalar code (the PYTHON device runs the same kernel unvectorized) and to one thread."""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np
import pytest

from unigrad import Context, Tensor, dtypes
from unigrad.ir.args import AxisType, KernelInfo
from unigrad.ir.ops import Ops
from unigrad.ir.uop import UOp
from unigrad.pipeline.optimize import Opt, OptOps, Target, axes, optimize
from unigrad.render.c import STREAM_MIN_BYTES, CLanguage
from unigrad.runtime import Buffer, Device
from unigrad.runtime import realize as rt

SIZES = (0, 1, 7, 17, 1000003, 1 << 20)
VECTOR_BYTES = Device["CPU"].renderer.vector_bytes  # this machine's (64 with AVX-512, 32 with AVX2)
F32 = VECTOR_BYTES // 4  # float32 lanes of one vector register
rng = np.random.default_rng(11)


def floats(n: int, dtype: type = np.float32) -> np.ndarray:
    x = rng.standard_normal(n).astype(dtype)
    if n > 3:
        x[:3] = (0.0, -0.0, np.nan)  # signed zeros and a nan go through every select
    return x


def sources() -> list[str]:
    """The C source of every kernel the last realize ran."""
    return [rt.get_kernel("CPU", ast).source for ast in rt.stats.last_kernels]


# (name, unigrad fn, numpy fn) on float32 inputs a, b, c
ELEMENTWISE: list[tuple[str, Callable, Callable]] = [
    ("chain", lambda a, b, c: (a * b + c).relu() * 0.5 + a, lambda a, b, c: np.maximum(a * b + c, 0) * 0.5 + a),
    ("maximum", lambda a, b, c: a.maximum(b) - c, lambda a, b, c: np.maximum(a, b) - c),
    ("where", lambda a, b, c: (a < b).where(c, a * 2), lambda a, b, c: np.where(a < b, c, a * 2)),
    ("cmp_cast", lambda a, b, c: (a != b).cast(dtypes.float32) + (a < c), lambda a, b, c: (a != b) + (a < c) * 1.0),
    ("div", lambda a, b, c: a / (b * b + 1), lambda a, b, c: a / (b * b + 1)),
    (
        "to_int",
        lambda a, b, c: (a * 100).cast(dtypes.int32) * 3 + 1,
        lambda a, b, c: (a * 100).astype(np.int32) * 3 + 1,
    ),
]


def _clean(*xs: np.ndarray) -> list[np.ndarray]:
    return [np.nan_to_num(x, nan=0.5) for x in xs]


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("name,fn,ref", ELEMENTWISE, ids=[e[0] for e in ELEMENTWISE])
def test_elementwise_matches_numpy(n: int, name: str, fn: Callable, ref: Callable) -> None:
    a, b, c = floats(n), floats(n), floats(n)
    if name == "to_int":  # float -> int of a nan is undefined in C
        a, b, c = _clean(a, b, c)
    got = fn(*(Tensor(x) for x in (a, b, c))).numpy()
    with np.errstate(all="ignore"):
        want = ref(a, b, c).astype(got.dtype)
    if name == "div":  # a * (1/b) in isel: within an ulp or two of numpy's a / b
        np.testing.assert_allclose(got, want, rtol=3e-7)
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("n", SIZES)
def test_reductions_match_numpy(n: int) -> None:
    a = np.nan_to_num(floats(n))
    t = Tensor(a)
    np.testing.assert_allclose(t.sum().numpy(), a.sum(dtype=np.float64), rtol=1e-5, atol=1e-3)
    if n:
        assert t.max().numpy() == a.max()


@pytest.mark.parametrize(
    "view",
    [
        lambda x: x[::2],
        lambda x: x.reshape(1000, 1000).T,
        lambda x: x.reshape(1000, 1000)[:, 1:999],
        lambda x: x.reshape(1000, 1000)[:, :1] + x.reshape(1000, 1000)[:1, :] * 0,
    ],
    ids=["stride2", "transpose", "shrink", "broadcast"],
)
def test_views_match_numpy(view: Callable) -> None:
    a, b = floats(1000 * 1000), floats(1000 * 1000)
    ua, ub = Tensor(a), Tensor(b)
    got = (view(ua) * 2 + view(ub)).relu().numpy()
    want = np.maximum(view(a) * 2 + view(b), 0)
    np.testing.assert_array_equal(got, want)
    clean = np.nan_to_num(a)
    np.testing.assert_allclose(view(Tensor(clean)).sum().numpy(), view(clean).sum(), rtol=1e-4, atol=1e-2)


def test_one_thread_bit_identical() -> None:
    a, b, c = (np.nan_to_num(floats(1 << 20)) for _ in range(3))
    outs = []
    for threads in (0, 1):
        with Context(THREADS=threads):
            ua, ub, uc = (Tensor(x) for x in (a, b, c))
            outs.append(((ua * ub + uc).relu().numpy(), ua.sum().numpy(), (ua * ub).sum().numpy()))
    for x, y in zip(*outs):
        np.testing.assert_array_equal(x, y)


def test_vector_types_and_streaming_stores() -> None:
    """A contiguous elementwise kernel is one vector op per register of floats; an output past STREAM_MIN_BYTES
    streams."""
    for n, streamed in ((1 << 20, False), (STREAM_MIN_BYTES // 4, True)):
        a = Tensor(floats(n))
        (a * 2 + 1).realize()
        (src,) = sources()
        assert f"float32_v{F32} " in src and "data1[" not in src, src
        assert (f"nt_store{VECTOR_BYTES}(" in src) is streamed
    Tensor(floats(1 << 20)).sum().realize()
    split = ", ".join(f"acc0_v{i}" for i in range(32 // F32))
    assert f"float32_v{F32} {split};" in sources()[0]  # 32 split accumulators held as whole vectors


def sources_for(vector_bytes: int, registers: int) -> list[str]:
    """The C source of every kernel the last realize ran, optimized and rendered for a CPU of that vector width."""
    dev = Device["CPU"]
    old = dev.renderer
    dev.renderer = CLanguage(vector_bytes)
    try:
        target = Target(2, vector_bytes, registers)
        return [rt.lower("CPU", optimize(ast, target)).src for ast in rt.stats.last_kernels]
    finally:
        dev.renderer = old


@pytest.mark.parametrize("vector_bytes,registers", [(64, 32), (32, 16)], ids=["avx512", "avx2"])
def test_streamed_inputs_prefetched_non_temporal(vector_bytes: int, registers: int) -> None:
    """With 64-byte vectors (one cache line each), a load of a buffer past STREAM_MIN_BYTES that reads each element
    once is prefetched with the non-temporal hint (locality 0); a small input, or a big one read again by another
    loop (a matmul's A row), is not. With 32-byte vectors nothing is (measured slower on Zen 3)."""
    prefetched = vector_bytes == 64
    n = STREAM_MIN_BYTES // 4
    a, b = floats(n), floats(n)
    ua, ub = Tensor(a), Tensor(b)
    out = (ua * ub + 1).numpy()
    (src,) = sources_for(vector_bytes, registers)
    assert src.count(", 0, 0);") == (2 if prefetched else 0), src  # both inputs
    np.testing.assert_array_equal(out, a * b + 1)
    total = ua.sum().numpy()
    assert (", 0, 0);" in sources_for(vector_bytes, registers)[0]) is prefetched
    np.testing.assert_allclose(total, a.astype(np.float64).sum(), rtol=1e-4)
    (Tensor(floats(1 << 20)) * 2).realize()
    assert "__builtin_prefetch" not in sources_for(vector_bytes, registers)[0]
    rows = n // 1024  # (rows, 1024) @ (1024, 64): each A element is read by the 4 column tiles' loop
    x, w = np.nan_to_num(floats(rows * 1024)).reshape(rows, 1024), np.nan_to_num(floats(1024 * 64)).reshape(1024, 64)
    got = (Tensor(x) @ Tensor(w)).numpy()
    (src,) = sources_for(vector_bytes, registers)
    assert "__builtin_prefetch" not in src, src
    np.testing.assert_allclose(got, x @ w, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("vector_bytes,registers", [(64, 32), (32, 16), (16, 16)], ids=["avx512", "avx2", "sse"])
def test_streaming_kernel_of_any_width_compiles_and_runs(vector_bytes: int, registers: int) -> None:
    """A streamed elementwise kernel rendered for 64-, 32- or 16-byte vector registers compiles for this machine
    whatever its own width (a non-temporal store the compiler has no instruction for is a plain store) and gives
    numpy's result."""
    n = STREAM_MIN_BYTES // 4
    a = np.nan_to_num(floats(n))
    ast, bufs = kernel_of(Tensor(a).realize() * 2 + 1, "CPU")
    dev = Device["CPU"]
    old = dev.renderer
    dev.renderer = CLanguage(vector_bytes)
    try:
        lowered = rt.lower("CPU", optimize(ast, Target(2, vector_bytes, registers)))
    finally:
        dev.renderer = old
    assert (f"nt_store{vector_bytes}(" in lowered.src) is (vector_bytes >= 32), lowered.src
    program = dev.build(lowered)
    for b in bufs:
        b.ensure_allocated()
    program(bufs, {})
    np.testing.assert_array_equal(bufs[0].numpy(), a * 2 + 1)


# ---------------------------------------------------------------- vector code == scalar code, op by op


def kernel_of(out: Tensor, device: str) -> tuple[UOp, list[Buffer]]:
    (k,) = rt.kernelize([out.uop], device)
    (call,) = [u for u in k.toposort() if u.op is Ops.CALL]
    return call.src[0], [rt.buffer_of(b) for b in call.src[1:]]


def run_upcast(fn: Callable, inputs: list[np.ndarray], device: str) -> tuple[np.ndarray, str]:
    """fn's single kernel with its innermost axis upcast by 16 lanes, run on device: (output, source)."""
    ast, bufs = kernel_of(fn(*(Tensor(x, device=device).realize() for x in inputs)), device)
    inner = axes(ast).index(max((r for r in axes(ast) if r.arg.axis_type is AxisType.LOOP), key=lambda r: r.arg.id))
    ast = ast.replace(arg=KernelInfo(ast.arg.name, (Opt(OptOps.SPLIT, inner, (16, AxisType.UPCAST, False)),)))
    ck = rt.get_kernel(device, ast)
    for b in bufs:
        b.ensure_allocated()
    ck.program(bufs, {})
    return bufs[0].numpy().copy(), ck.source


SCALAR_CHECKS: list[tuple[str, Callable, type]] = [
    ("exp", lambda a: a.exp(), np.float32),  # isel's exp2: bitcasts, shifts, int math, selects
    ("log", lambda a: a.abs().log(), np.float32),
    ("sqrt", lambda a: a.abs().sqrt(), np.float32),
    ("sigmoid", lambda a: a.sigmoid(), np.float32),
    ("float64", lambda a: (a * a + 1).maximum(a), np.float64),
    ("int_math", lambda a: ((a * a) // 3 + a % 5) ^ (a << 2), np.uint32),  # signed // and % are helper calls
    ("bool_logic", lambda a: ((a > 0) & (a < 3) | (a == -2)).where(a, -a), np.int32),
]


@pytest.mark.parametrize("name,fn,dtype", SCALAR_CHECKS, ids=[c[0] for c in SCALAR_CHECKS])
def test_vector_kernel_equals_scalar_interpreter(name: str, fn: Callable, dtype: type) -> None:
    """The PYTHON device interprets the scalar lane copies; the CPU renders them as vectors: same bits."""
    if np.issubdtype(dtype, np.integer):
        x = rng.integers(0 if name == "int_math" else -50, 50, (4, 32)).astype(dtype)
    else:
        x = (rng.standard_normal((4, 32)) * 4).astype(dtype)
    got, src = run_upcast(fn, [x], "CPU")
    want, _ = run_upcast(fn, [x], "PYTHON")
    assert re.search(r"_v\d+ ", src), f"{name}: not vectorized\n{src}"
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("n", [1 << 16, 16 * 12345, 1000003])
def test_random_bits_and_aranges_vectorize(n: int) -> None:
    """Values built from the index (an arange, rand's Threefry counters) are i + STACK(0..k-1) lanes: the kernel
    is vector code (it was 16 scalar copies of the Threefry rounds), with the same bits as the unoptimized kernel.
    A prime size is padded to whole vectors (PADTO; the last one's lanes past the end gated, a masked tail): vector
    code too, with the same bits."""
    Tensor.manual_seed(3)
    r = Tensor.rand(n).realize()
    (src,) = sources()
    assert f"uint32_v{F32} " in src, src
    assert ("every" in src) is (n % F32 != 0), src  # the masked tail's test: every lane in
    got = r.numpy()
    Tensor.manual_seed(3)
    with Context(NOOPT=1):
        want = Tensor.rand(n).numpy()
    np.testing.assert_array_equal(got, want)
    idx = (Tensor.arange(n) * 3).realize()  # int32 in the native flavor (tinygrad's default int)
    lanes = VECTOR_BYTES // idx.dtype.itemsize
    assert f"{idx.dtype.name}_v{lanes} " in sources()[0], sources()[0]
    np.testing.assert_array_equal(idx.numpy(), np.arange(n) * 3)


@pytest.mark.parametrize("rows", [3, 1100])
def test_scalar_bool_loaded_beside_vector_lanes(rows: int) -> None:
    """A bool loaded once per row (scalar) used in ops whose other sources are vectors along the row: as a where's
    condition and in a logical and. The renderer took every scalar bool source of a vector op for a constant."""
    rng = np.random.default_rng(5)
    mn = rng.random((rows, 1)) < 0.5
    xn, yn = rng.standard_normal((2, rows, 64)).astype(np.float32)
    m, x, y = Tensor(mn), Tensor(xn), Tensor(yn)
    np.testing.assert_array_equal(m.where(x, y).numpy(), np.where(mn, xn, yn))
    np.testing.assert_array_equal((m & (x > 0)).numpy(), mn & (xn > 0))
    np.testing.assert_array_equal((m & (x > 0)).where(x, 0.0).numpy(), np.where(mn & (xn > 0), xn, 0))


@pytest.mark.parametrize("n", [16, 4096, 4099])
def test_masks_of_different_widths_combine_in_vectors(n: int) -> None:
    """A float32 compare (a mask of 4-byte lanes) and an int64 compare (8-byte lanes) combined by and/or, and a
    where over float32 on the 8-byte mask: the narrower mask is widened (or the wider narrowed), so the kernel stays
    vector code; it was scalar copies of every lane. The stable sort's rank (float and index compares) is one."""
    x = floats(n)
    ux, idx = Tensor(x), Tensor.arange(n, dtype=dtypes.int64)
    first = idx < n // 3
    out = ((ux > 0) & first) | ux.isnan()
    np.testing.assert_array_equal(out.numpy(), ((x > 0) & (np.arange(n) < n // 3)) | np.isnan(x))
    picked = first.where(ux, -ux)
    np.testing.assert_array_equal(picked.numpy(), np.where(np.arange(n) < n // 3, x, -x))
    (src,) = sources()
    if n % F32 == 0 and n > 16:  # (2 x 8 lanes at n = 16 stay scalar: the lanes' compares fold differently)
        assert f"float32_v{F32} " in src and "__builtin_convertvector(" in src, src
    if n == 4096:  # the rank of a stable sort compares floats and indices
        y = np.nan_to_num(floats(257))
        values, indices = Tensor(y).sort(descending=True)
        order = np.argsort(-y, kind="stable")
        np.testing.assert_array_equal(indices.numpy(), order)
        np.testing.assert_array_equal(values.numpy(), y[order])


# (name, unigrad fn, numpy fn) of one elementwise kernel each: cheap ALU, a decomposed transcendental, int math
TAIL_FNS: list[tuple[str, Callable, Callable]] = [
    ("affine", lambda a: a * 3 + 1, lambda a: a * 3 + 1),
    ("sigmoid_tanh", lambda a: a.sigmoid() * a.tanh(), lambda a: 1 / (1 + np.exp(-a)) * np.tanh(a)),
    ("int", lambda a: (a * 7 + 3) ^ (a << 1), lambda a: (a * 7 + 3) ^ (a << 1)),  # (signed % is a helper call)
]


@pytest.mark.parametrize("name,fn,ref", TAIL_FNS, ids=[c[0] for c in TAIL_FNS])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(9,), (51,), (97, 51), (3, 17), (2, 1, 23)], ids=str)
def test_odd_sizes_vectorize_with_masked_tail(
    name: str, fn: Callable, ref: Callable, dtype: type, shape: tuple
) -> None:
    """An innermost axis that is no multiple of the lanes (an LSTM's 51 hidden units) is padded to whole vectors
    (PADTO): every vector but the last is one load and store, the last one's lanes past the end are gated (loaded
    lane by lane, stored only where in). Vector code, numpy's values, and the same bits as the scalar kernel."""
    x = rng.standard_normal(shape) * 3
    x = (x.astype(np.int32) if name == "int" else x).astype(dtype if name != "int" else np.int32)
    got = fn(Tensor(x)).realize()
    src = sources()[0]
    lanes = VECTOR_BYTES // x.dtype.itemsize
    if shape[-1] > lanes:
        assert re.search(r"_v\d+ ", src) and "every" in src, src
    np.testing.assert_allclose(got.numpy(), ref(x), rtol=1e-6 if x.dtype == np.float32 else 1e-12, atol=1e-6)
    with Context(NOOPT=1):
        scalar = fn(Tensor(x)).numpy()
    np.testing.assert_array_equal(got.numpy(), scalar)


@pytest.mark.parametrize("rows,cols,start", [(97, 51, 51), (5, 13, 1), (1, 33, 0)])
def test_masked_tail_on_views_leaves_the_rest(rows: int, cols: int, start: int) -> None:
    """A slice of a wider buffer, read and written in place (an LSTM's gate columns): the padded lanes of the last
    vector would read and write the next columns; gated, they do neither, forward and backward."""
    big = rng.standard_normal((rows, 4 * cols)).astype(np.float64)
    t = Tensor(big.copy())
    part = t[:, start : start + cols]
    t[:, start : start + cols] = (part.sigmoid() * 2).contiguous()
    want = big.copy()
    want[:, start : start + cols] = 2 / (1 + np.exp(-big[:, start : start + cols]))
    np.testing.assert_allclose(t.numpy(), want, rtol=1e-12)
    # backward through the same slice: the gradient's other columns are exactly 0
    w = Tensor(big.copy(), requires_grad=True)
    w[:, start : start + cols].tanh().sum().backward()
    g = np.zeros_like(big)
    g[:, start : start + cols] = 1 - np.tanh(big[:, start : start + cols]) ** 2
    np.testing.assert_allclose(w.grad.numpy(), g, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("shape", [(97, 51, 204), (13, 20, 72), (700, 64, 1000)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_padded_matmul_tile_is_vector_code(shape: tuple[int, int, int], dtype: type) -> None:
    """A matmul whose register tile pads its rows (97 rows in tiles of 8) reads A's padded rows at its last row (plain
    loads: the gated store drops those results), and one whose output width is no multiple of the vector (1000 floats:
    62.5 vectors of 16) pads its columns to whole vectors, the last one masked: the kernel stays vector code. Rows
    gated instead left scalar loads beside vectors (an LSTMCell's gate matmul 4x slower vectorized around them), and
    half-vector lanes were scalar copies (a 1000-wide weight gradient at 24 GFLOP/s)."""
    m, k, n = shape
    a, b = rng.standard_normal((m, k)).astype(dtype), rng.standard_normal((k, n)).astype(dtype)
    got = (Tensor(a) @ Tensor(b)).realize()
    srcs = sources()
    assert any(re.search(r"_v\d+ acc\d+_v0", s) for s in srcs), srcs  # vector accumulators
    assert not any(re.search(r"acc\d+_v\d+\[\d+\] =", s) for s in srcs), srcs  # none written lane by lane
    assert not any(re.search(r"\?data\d+\[", s) for s in srcs), srcs  # no gated scalar load
    tol = 1e-12 if dtype is np.float64 else 1e-4
    np.testing.assert_allclose(got.numpy(), a @ b, rtol=tol, atol=tol)
    bt = Tensor(np.ascontiguousarray(b.T))  # a weight read transposed (nn.Linear's x @ W.T)
    np.testing.assert_allclose((Tensor(a) @ bt.T).numpy(), a @ b, rtol=tol, atol=tol)


@pytest.mark.parametrize("n", [1000, 51 * 4, 999])
@pytest.mark.parametrize(
    "name,fn,ref",
    [
        ("sum", lambda x: x.sum(-1), lambda x: x.sum(-1)),
        ("max", lambda x: x.max(-1), lambda x: x.max(-1)),  # negative rows: a padded lane must not read 0
        ("min", lambda x: x.min(-1), lambda x: x.min(-1)),
        ("sum_of_product", lambda x: (x * 2 - 1).sum(-1), lambda x: (x * 2 - 1).sum(-1)),
    ],
    ids=["sum", "max", "min", "sum_of_product"],
)
def test_row_reduction_of_odd_length_is_vector_code(n: int, name: str, fn: Callable, ref: Callable) -> None:
    """A row reduction whose length is no multiple of the split accumulators (a 1000-word vocabulary) pads the row
    to whole accumulators, the padding read as the reduction's identity (-inf for a max: rows of negative numbers
    stay negative): vector accumulators instead of one scalar chain (a (700, 1000) row sum: 231 -> 60 us)."""
    x = rng.standard_normal((37, n)).astype(np.float32) - 4
    got = fn(Tensor(x)).realize()
    srcs = sources()
    assert any(re.search(r"_v\d+ acc\d+_v0", s) for s in srcs), srcs
    np.testing.assert_allclose(got.numpy(), ref(x), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("shape", [(37, 1000), (5, 51), (3, 17)], ids=str)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_lane_masks_fit_a_vector_register(shape: tuple, dtype: type) -> None:
    """A padded axis's lane mask (x < STACK(c_i)) over float32 lanes is compared in int32, not as 16 int64 lanes
    (a 1024-bit vector gcc builds on the stack every iteration: a (700, 1000) row max ran 4.6x slower); float64 lanes
    keep int64 masks (8 of them fill a register). Row max, row sum and an elementwise op equal numpy's."""
    x = (rng.standard_normal(shape) - 2).astype(dtype)
    t = Tensor(x)
    lanes = VECTOR_BYTES // x.dtype.itemsize
    for fn, ref in ((lambda a: a.max(-1), lambda a: a.max(-1)), (lambda a: a.sum(-1), lambda a: a.sum(-1))):
        got = fn(t).realize()
        srcs = sources()
        # (a padded row's mask, where the heuristics pad: no 64-bit lane compare wider than a register)
        assert not any(re.search(rf"index_v{lanes}\)\{{", s) for s in srcs if lanes * 8 > VECTOR_BYTES), srcs
        np.testing.assert_allclose(got.numpy(), ref(x), rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose((t * 2 + 1).exp().numpy(), np.exp(x * 2 + 1), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("k", [96, 384, 100])
def test_split_accumulators_summed_by_vector_halves(dtype: type, k: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """x @ W.T puts its lanes on the reduce axis: each output's split accumulators (one vector) are summed at the
    end by halving vector adds of the even and odd lanes, in expand's pairwise order; a register tile's accumulators
    are summed together (lane_sums_<type>_x<n>: pairs of vectors halved side by side, one vector of the tile's sums):
    the result is bit for bit the scalar tree's (rendered with lane_sums off) and numpy's within rounding."""
    x, w = rng.standard_normal((12, k)).astype(dtype), rng.standard_normal((40, k)).astype(dtype)
    results, srcs = [], []
    for default in (True, False):  # the CPU renderer as it is, then with lane_sums off
        if not default:
            monkeypatch.setattr(CLanguage, "lane_sums", False)
        with Context(DISABLE_COMPILER_CACHE=1):
            rt._program_cache.clear()
            results.append((Tensor(x) @ Tensor(w).T).numpy())
            srcs.append("\n".join(sources()))
    lanes = VECTOR_BYTES // x.dtype.itemsize
    if k % lanes == 0:
        name = "float32" if dtype is np.float32 else "float64"
        assert re.search(rf"lane_sums_{name}_v{lanes}_x(4|8|16)\(acc", srcs[0]), srcs[0][-3000:]
    assert "lane_sum_" not in srcs[1]
    np.testing.assert_array_equal(results[0], results[1])
    np.testing.assert_allclose(results[0], x @ w.T, rtol=1e-4 if dtype is np.float32 else 1e-12, atol=1e-4)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(8, 256), (6, 64), (5, 1), (0, 64)], ids=str)
def test_row_sums_summed_together(dtype: type, shape: tuple, monkeypatch: pytest.MonkeyPatch) -> None:
    """A row reduction of a few rows at once (one vector of accumulators per row) sums those rows' vectors together
    (lane_sums_<type>_x<rows>: the pairs halved side by side, then the last vector's own halves): bit for bit the
    scalar tree's (lane_sums off), and numpy's within rounding, on a strided view too."""
    x = rng.standard_normal((shape[0], 2 * shape[1])).astype(dtype)
    results, srcs = [], []
    for default in (True, False):
        if not default:
            monkeypatch.setattr(CLanguage, "lane_sums", False)
        with Context(DISABLE_COMPILER_CACHE=1):
            rt._program_cache.clear()
            t = Tensor(x)[:, ::2].contiguous().realize()  # from a strided view: the rows' elements two apart
            results.append([t.sum(-1).numpy()])
            srcs.append("\n".join(sources()))
            results[-1].append((t * 3).max(-1).numpy())
    if shape == (8, 256):  # rows taken a few at once (2 or 4 of float32, 4 of float64)
        assert re.search(r"lane_sums_float(32|64)_v\d+_x\d+\(", srcs[0]), srcs[0][-3000:]
    assert "lane_sum" not in srcs[1]
    np.testing.assert_array_equal(results[0][0], results[1][0])
    np.testing.assert_allclose(results[0][0], x[:, ::2].sum(-1), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(results[0][1], results[1][1])
    if shape[0] and shape[1]:
        np.testing.assert_array_equal(results[0][1], (x[:, ::2] * 3).max(-1))
