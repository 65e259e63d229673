"""torch.testing.assert_close: actual and expected agree in shape, dtype (check_dtype) and, element by element,
|actual - expected| <= atol + rtol * |expected|, with torch's default tolerances per dtype. The comparison runs as a
unigrad kernel; only its verdict and the worst element are read back for the message."""

from __future__ import annotations

from typing import Any

from unigrad.dtype import DType, dtypes
from unigrad.tensor import Tensor

__all__ = ["assert_close"]

# torch's defaults: (rtol, atol) by dtype; integers and bools compare exactly
_TOLERANCES = {
    dtypes.float16: (1e-3, 1e-5),
    dtypes.bfloat16: (1.6e-2, 1e-5),
    dtypes.float32: (1.3e-6, 1e-5),
    dtypes.float64: (1e-7, 1e-7),
}


def _tensor(x: Any, like: Tensor | None = None) -> Tensor:
    if isinstance(x, Tensor):
        return x
    if like is not None and not isinstance(x, (list, tuple)) and not hasattr(x, "shape"):
        return Tensor(x, dtype=like.dtype, device=like.device)  # a Python number against a tensor
    return Tensor(x)


def assert_close(
    actual: Any,
    expected: Any,
    *,
    rtol: float | None = None,
    atol: float | None = None,
    equal_nan: bool = False,
    check_device: bool = True,
    check_dtype: bool = True,
    msg: str | None = None,
    **_: Any,
) -> None:
    """Raise AssertionError, saying how many elements differ and where the worst one is, unless actual and expected
    are close. rtol and atol go together (both given or neither)."""
    if (rtol is None) != (atol is None):
        raise ValueError("assert_close: both 'rtol' and 'atol' must be given, or neither")
    a = _tensor(actual)
    e = _tensor(expected, a)
    if a.shape != e.shape:
        raise AssertionError(msg or f"The values for attribute 'shape' do not match: {a.shape} != {e.shape}.")
    if check_dtype and a.dtype is not e.dtype:
        raise AssertionError(msg or f"The values for attribute 'dtype' do not match: {a.dtype} != {e.dtype}.")
    if check_device and a.device != e.device:
        raise AssertionError(msg or f"The values for attribute 'device' do not match: {a.device} != {e.device}.")
    if rtol is None or atol is None:
        rtol, atol = max(_tol(a.dtype), _tol(e.dtype))
    if a.numel() == 0:
        return
    wide = dtypes.float64 if dtypes.float64 in (a.dtype, e.dtype) else dtypes.float32
    x, y = a.cast(wide), e.cast(wide)
    diff = (x - y).abs()
    ok = diff <= atol + rtol * y.abs()
    ok = ok | (x == y)  # equal infinities
    if equal_nan:
        ok = ok | (x.isnan() & y.isnan())
    bad = ok.logical_not()
    n_bad, worst = bad.sum(), bad.where(diff.isnan().where(float("inf"), diff), -1.0).flatten().argmax()
    count, at = int(n_bad.item()), int(worst.item())
    if count:
        where = _unravel(at, a.shape)
        got, want = x.flatten()[at].item(), y.flatten()[at].item()
        raise AssertionError(
            msg
            or f"Tensor-likes are not close!\n\nMismatched elements: {count} / {a.numel()}\nGreatest difference at "
            f"index {where}: {got} (actual) vs {want} (expected), |difference| {abs(got - want)} "
            f"(up to {atol} + {rtol} * |expected| allowed)"
        )


def _tol(dt: DType) -> tuple[float, float]:
    return _TOLERANCES.get(dt, (0.0, 0.0))


def _unravel(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    out = []
    for s in reversed(shape):
        out.append(flat % s)
        flat //= s
    return tuple(reversed(out))
