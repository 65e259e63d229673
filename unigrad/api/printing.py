"""Printing a Tensor as torch does: its values, `tensor([[ 0.2358, -2.0597], ...])`, then the dtype when it is not
the default one, the device when it is not the CPU, and requires_grad / grad_fn; set_printoptions as torch's.

Reading the values realizes the tensor (print is a sync point, as .numpy() is). Where values cannot be read - inside
a TinyJit capture, a symbolic shape, a dtype numpy lacks - the lazy form prints: `<Tensor ADD (2, 3) dtypes.float32
on CPU>`. The numbers are formatted by numpy's array2string with torch's choices (4 decimals, scientific notation
when the magnitudes call for it, `...` past `threshold` elements).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from unigrad.dtype import dtypes

if TYPE_CHECKING:
    from unigrad.tensor import Tensor

__all__ = ["set_printoptions"]

_DEFAULTS = {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80, "sci_mode": None}
_options = dict(_DEFAULTS)
_PROFILES = {
    "default": _DEFAULTS,
    "short": {"precision": 2, "threshold": 1000, "edgeitems": 2, "linewidth": 80},
    "full": {"precision": 4, "threshold": np.inf, "edgeitems": 3, "linewidth": 80},
}


def set_printoptions(
    precision: int | None = None,
    threshold: float | None = None,
    edgeitems: int | None = None,
    linewidth: int | None = None,
    profile: str | None = None,
    sci_mode: bool | None = None,
) -> None:
    """torch.set_printoptions: a profile ("default", "short", "full") and any option given over it."""
    if profile is not None:
        if profile not in _PROFILES:
            raise ValueError(f"set_printoptions: profile must be one of {sorted(_PROFILES)}, got {profile!r}")
        _options.update(_PROFILES[profile])
    given = {"precision": precision, "threshold": threshold, "edgeitems": edgeitems, "linewidth": linewidth}
    _options.update({k: v for k, v in given.items() if v is not None})
    _options["sci_mode"] = sci_mode


def lazy_repr(t: Tensor) -> str:
    return f"<Tensor {t.uop.op.name} {t.shape} {t.dtype} on {t.device}>"


def tensor_repr(t: Tensor) -> str:
    from unigrad.runtime import jit

    if jit.inside_jit() is not None or not all(isinstance(s, int) for s in t.shape):
        return lazy_repr(t)
    if t.dtype.fmt is None and t.dtype is not dtypes.bfloat16 and t.dtype not in dtypes.fp8s:
        return lazy_repr(t)
    values = t.numpy()
    extras = []
    if values.size == 0:
        body = "[]"
        if values.ndim != 1:
            extras.append(f"size={t.shape}")
    else:
        body = _format(values, t.dtype.is_float)
    if t.dtype not in (dtypes.default_float, dtypes.int64, dtypes.bool):
        extras.append(f"dtype=torch.{t.dtype.name}")
    if t.device != "CPU":
        extras.append(f"device='{t.device}'")
    if t.requires_grad:
        fn = t.grad_fn
        extras.append("requires_grad=True" if fn is None else f"grad_fn=<{fn.name()}>")
    return "tensor(" + body + "".join(", " + e for e in extras) + ")"


def _format(values: np.ndarray, is_float: bool) -> str:
    opts: dict[str, Any] = {
        "separator": ", ",
        "prefix": "tensor(",
        "threshold": _options["threshold"],
        "edgeitems": _options["edgeitems"],
        "max_line_width": _options["linewidth"],
    }
    if is_float:
        finite = values[np.isfinite(values)]
        integral = finite.size == 0 or bool(np.all(finite == np.round(finite)))
        big = finite.size > 0 and float(np.abs(finite).max()) >= 1e8
        nonzero = np.abs(finite[finite != 0])
        spread = nonzero.size > 0 and (
            float(nonzero.max()) / float(nonzero.min()) > 1000 or float(nonzero.min()) < 1e-4
        )
        sci = _options["sci_mode"] if _options["sci_mode"] is not None else (big or (spread and not integral))
        if sci:
            p = _options["precision"]
            opts["formatter"] = {"float_kind": lambda v: np.format_float_scientific(v, precision=p, unique=False)}
        else:
            opts["precision"] = _options["precision"]
            opts["floatmode"] = "maxprec" if integral else "fixed"
    if values.ndim == 0:
        return np.array2string(values.reshape(1), **opts)[1:-1]
    return np.array2string(values, **opts).replace(", ...,", ",  ...,")  # torch's gap around the ellipsis
