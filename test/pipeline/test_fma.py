"""Fused multiply-add: isel makes each float32/float64 accumulation acc + a*b one MULACC, rendered as C's
fmaf/fma (one rounding) and defined exactly by ir/alu.fma, so the CPU and PYTHON devices agree bit for bit."""

from __future__ import annotations

import sys
from fractions import Fraction

import numpy as np
import pytest

from unigrad import Tensor, dtypes
from unigrad.ir.alu import exec_alu, fma
from unigrad.ir.ops import Ops
from unigrad.runtime import realize as rt

F32, F64 = dtypes.float32, dtypes.float64
A = 1 + 2.0**-12  # A*A = 1 + 2^-11 + 2^-24: exactly halfway between two float32s


def nearest_float32(e: Fraction) -> float:
    """The float32 nearest to the exact e, ties to even (brute force over the neighbours of a float guess)."""
    guess = np.float32(float(e))
    cands = [guess, np.nextafter(guess, np.float32(np.inf)), np.nextafter(guess, np.float32(-np.inf))]
    return float(min(cands, key=lambda c: (abs(Fraction(float(c)) - e), int(c.view(np.uint32)) & 1)))


def test_fma_rounds_once():
    assert fma(A, A, -(1 + 2.0**-11), F32) == 2.0**-24  # unfused: A*A rounds to 1 + 2^-11, then 0
    assert exec_alu(Ops.MULACC, F32, A, A, -(1 + 2.0**-11)) == 2.0**-24
    # the float64 sum A*A + c lands on the float32 tie; the exact value is just above or below it
    assert fma(A, A, 2.0**-100, F32) == 1 + 2.0**-11 + 2.0**-23
    assert fma(A, A, -(2.0**-100), F32) == 1 + 2.0**-11
    assert fma(A, A, 0.0, F32) == 1 + 2.0**-11  # a true tie: to even
    x = 1 + 2.0**-30  # float64: x*x needs 61 bits
    assert fma(x, x, -1.0, F64) == 2.0**-29 + 2.0**-60
    assert fma(2.0**512, 2.0**512, -sys.float_info.max, F64) == 2.0**971  # the product alone overflows


def test_fma_special_values():
    assert str(fma(-0.0, 1.0, -0.0, F32)) == "-0.0" and str(fma(0.0, -1.0, 0.0, F32)) == "0.0"
    assert str(fma(1.0, 1.0, -1.0, F64)) == "0.0"
    assert np.isnan(fma(float("inf"), 0.0, 1.0, F32)) and fma(2.0, 3.0, float("-inf"), F32) == float("-inf")
    assert fma(3e38, 2.0, -3e38, F32) == pytest.approx(3e38, rel=1e-6)  # the product overflows only unfused
    assert fma(3e38, 3e38, 0.0, F32) == float("inf")


def test_fma_matches_exact_rounding_on_random_float32():
    rng = np.random.default_rng(0)
    vals = (rng.standard_normal((3000, 3)) * np.float32(2.0) ** rng.integers(-40, 40, (3000, 3))).astype(np.float32)
    for a, b, c in vals.astype(np.float64):
        assert fma(a, b, c, F32) == nearest_float32(Fraction(a) * Fraction(b) + Fraction(c))


def test_matmul_kernel_uses_fma_and_equals_numpy():
    rng = np.random.default_rng(1)
    for m, k, n in ((1, 1, 1), (7, 13, 5), (64, 48, 32), (33, 100, 17)):
        a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
        got = (Tensor(a) @ Tensor(b)).numpy()
        src = "\n".join(rt.get_kernel("CPU", ast).source for ast in rt.stats.last_kernels)
        assert ("__builtin_fmaf(" in src) is (k > 1), src  # k == 1: a product, no accumulation
        np.testing.assert_allclose(got, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)
    a64, b64 = rng.standard_normal((9, 20)), rng.standard_normal((20, 6))
    np.testing.assert_allclose((Tensor(a64) @ Tensor(b64)).numpy(), a64 @ b64, rtol=1e-12)
    assert "__builtin_fma(" in rt.get_kernel("CPU", rt.stats.last_kernels[0]).source


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cpu_and_python_agree_bit_for_bit(dtype):
    """Dot products on both devices (vector FMA on CPU, the exact definition on PYTHON) give the same bits,
    including a case where fused and unfused differ."""
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((5, 24)).astype(dtype), rng.standard_normal((24, 7)).astype(dtype)
    outs = [(Tensor(a, device=d) @ Tensor(b, device=d)).numpy() for d in ("CPU", "PYTHON")]
    np.testing.assert_array_equal(outs[0], outs[1])
    x = np.array([2.0**-50, A], dtype=dtype)  # acc = 2^-100, then fma(A, A, acc): above the float32 tie
    sums = [(Tensor(x, device=d) * Tensor(x, device=d)).sum().numpy() for d in ("CPU", "PYTHON")]
    assert sums[0] == sums[1]
    if dtype is np.float32:
        assert sums[0] == np.float32(1 + 2.0**-11 + 2.0**-23)  # unfused: 1 + 2^-11


def test_only_float_accumulations_fuse():
    """Ints accumulate unfused (no fma for them); a half dot accumulates in float32 (as torch does), so its fma is a
    float32 one on the widened operands; elementwise a*b+c stays two ops."""
    ai = np.arange(12, dtype=np.int32).reshape(3, 4)
    np.testing.assert_array_equal((Tensor(ai) @ Tensor(ai.T)).numpy(), ai @ ai.T)
    assert "fma" not in rt.get_kernel("CPU", rt.stats.last_kernels[0]).source
    ah = np.linspace(-1, 1, 12, dtype=np.float16).reshape(3, 4)
    np.testing.assert_allclose((Tensor(ah) @ Tensor(ah.T)).numpy(), ah @ ah.T, rtol=1e-2, atol=1e-2)
    src = rt.get_kernel("CPU", rt.stats.last_kernels[0]).source
    assert "float acc0" in src and "_Float16 acc" not in src
    a, b, c = (Tensor(np.full(8, v, np.float32)) for v in (A, A, -(1 + 2.0**-11)))
    out = (a * b + c).numpy()
    assert "fma" not in rt.get_kernel("CPU", rt.stats.last_kernels[0]).source
    np.testing.assert_array_equal(out, np.float32(A) * np.float32(A) + np.float32(-(1 + 2.0**-11)))


@pytest.mark.parametrize("fn", ["exp", "log", "sin"])
def test_transcendental_polynomials_fuse_and_devices_agree(fn):
    """The polynomials of exp2, log2 and sin are chains of MULACC (p*x + c, one rounding each): the CPU kernel
    calls fma, and the PYTHON device, which evaluates MULACC exactly, gives the same bits."""
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.uniform(0.01, 30, 200), [1.0, 0.5, 1e-30, 80.0]]).astype(np.float32)
    if fn != "log":
        x = np.concatenate([x, -x])
    cpu = getattr(Tensor(x), fn)().numpy()
    src = rt.get_kernel("CPU", rt.stats.last_kernels[0]).source
    assert "fma" in src, src
    py = getattr(Tensor(x, device="PYTHON"), fn)().numpy()
    np.testing.assert_array_equal(cpu, py)
    # exp(x) is exp2(x*log2(e)): the product's rounding costs up to |x|*2^-24 of relative error (x = 30: 2e-6)
    np.testing.assert_allclose(cpu, getattr(np, fn)(x.astype(np.float64)), rtol=2e-6, atol=1e-37)
