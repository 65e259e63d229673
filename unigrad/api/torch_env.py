"""torch's process-level names, so a training script's set-up lines run unchanged: torch.device, torch.Size,
torch.finfo / iinfo, the thread count, seeds, determinism switches and torch.compile.

- `device("cpu")` is a device name (a str subclass holding unigrad's canonical name, "CPU"), so every unigrad call
  taking a device takes it; `.type` and `.index` read as torch's, as they do on a Tensor's `.device`. A device
  unigrad lacks ("cuda") can be named (scripts build one before asking torch.cuda.is_available()); using it raises
  unigrad's unknown-device error.
- The legacy tensor types (`torch.FloatTensor(data)`, `x.type(torch.LongTensor)`) make or cast to their dtype.
- `set_num_threads(n)` sets the THREADS knob (worker threads per kernel); `get_num_threads()` reads what kernels use.
- `compile(model)` returns the model itself: unigrad already generates, optimizes and caches a kernel for every
  graph; torch.compile's options are accepted and have no effect.
- `use_deterministic_algorithms(True)` is kept and reported: unigrad's kernels are deterministic (a multi-threaded
  kernel gives the bits of a single-threaded one).
"""

from __future__ import annotations

import os
import warnings
from typing import Any

import numpy as np

from unigrad import config
from unigrad.dtype import DType, dtypes, to_dtype
from unigrad.runtime import DeviceName

__all__ = [
    "device",
    "Size",
    "finfo",
    "iinfo",
    "set_num_threads",
    "get_num_threads",
    "compile",
    "seed",
    "initial_seed",
    "use_deterministic_algorithms",
    "are_deterministic_algorithms_enabled",
    "autocast",
]


class device(DeviceName):
    """torch.device: device("cpu"), device("cpu", 0), device("cpu:1"), or another device (returned as is). A
    Tensor's .device is a DeviceName (the same .type and .index) that prints as the plain name."""

    def __new__(cls, type: Any, index: int | None = None) -> device:  # noqa: A002 - torch's argument name
        if isinstance(type, device) and index is None:
            return type
        text = str(type)
        if index is not None:
            if ":" in text:
                raise RuntimeError(f"device(): type ({text!r}) must not include an index because index was passed")
            if not isinstance(index, int) or index < 0:
                raise RuntimeError(f"device(): device index must be a non-negative int, got {index!r}")
            text = f"{text}:{index}"
        base, _, idx = text.partition(":")
        if not base or (idx and not idx.isdigit()):
            raise RuntimeError(f"device(): invalid device string {text!r}; expected 'cpu' or 'cpu:N'")
        return super().__new__(cls, text.upper())

    def __repr__(self) -> str:
        return f"device(type={self.type!r}" + (f", index={self.index})" if self.index is not None else ")")


class Size(tuple):
    """torch.Size: a tuple of ints (a Tensor's .shape is a plain tuple, equal to it)."""

    def numel(self) -> int:
        n = 1
        for s in self:
            n *= s
        return n

    def __repr__(self) -> str:
        return f"Size({list(self)})"


class finfo:
    """torch.finfo(dtype): bits, eps, max, min, tiny (smallest_normal) and resolution of a float dtype (default:
    the default float dtype)."""

    def __init__(self, type: DType | str | None = None) -> None:  # noqa: A002 - torch's argument name
        dt = dtypes.default_float if type is None else to_dtype(type)
        if not dt.is_float:
            raise TypeError(f"finfo(): expected a floating point dtype, got {dt}")
        self.dtype, self.bits = dt, dt.itemsize * 8
        if dt is dtypes.bfloat16:  # 8 exponent bits, 7 mantissa bits
            self.eps, self.max, self.tiny, self.resolution = 2.0**-7, float.fromhex("0x1.fep127"), 2.0**-126, 0.01
        else:
            info = np.finfo(dt.fmt)
            self.eps, self.max, self.tiny = float(info.eps), float(info.max), float(info.smallest_normal)
            self.resolution = 10.0**-info.precision
        self.min, self.smallest_normal = -self.max, self.tiny

    def __repr__(self) -> str:
        return (
            f"finfo(resolution={self.resolution}, min={self.min:g}, max={self.max:g}, eps={self.eps:g}, "
            f"smallest_normal={self.tiny:g}, tiny={self.tiny:g}, dtype={self.dtype.name})"
        )


class iinfo:
    """torch.iinfo(dtype): bits, min and max of an integer dtype."""

    def __init__(self, type: DType | str) -> None:  # noqa: A002 - torch's argument name
        dt = to_dtype(type)
        if dt.is_float or dt is dtypes.bool:
            raise TypeError(f"iinfo(): expected an integer dtype, got {dt}")
        info = np.iinfo(dt.fmt)
        self.dtype, self.bits, self.min, self.max = dt, dt.itemsize * 8, int(info.min), int(info.max)

    def __repr__(self) -> str:
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype.name})"


class _LegacyTensorType:
    """torch.FloatTensor and its kin: `FloatTensor([1, 2])` a float32 tensor of the data, `FloatTensor(2, 3)` one
    of that shape (zeros: torch leaves it uninitialized), `x.type(torch.LongTensor)` a cast."""

    def __init__(self, name: str, dtype: DType) -> None:
        self.__name__ = self.__qualname__ = name
        self.dtype = dtype

    def __call__(self, *args: Any, device: Any = None) -> Any:
        from unigrad.tensor import Tensor

        if args and all(isinstance(a, int) and not isinstance(a, bool) for a in args):
            return Tensor.zeros(*args, dtype=self.dtype, device=device)
        if len(args) > 1:
            raise TypeError(f"{self.__name__}(): expected one sequence of data or ints giving a shape, got {args!r}")
        data = args[0] if args else []
        if isinstance(data, Tensor):
            return data.cast(self.dtype)
        return Tensor(data, dtype=self.dtype, device=device)

    def __repr__(self) -> str:
        return f"<class 'torch.{self.__name__}'>"


_LEGACY = {
    "FloatTensor": dtypes.float32,
    "DoubleTensor": dtypes.float64,
    "HalfTensor": dtypes.float16,
    "BFloat16Tensor": dtypes.bfloat16,
    "LongTensor": dtypes.int64,
    "IntTensor": dtypes.int32,
    "ShortTensor": dtypes.int16,
    "CharTensor": dtypes.int8,
    "ByteTensor": dtypes.uint8,
    "BoolTensor": dtypes.bool,
}
globals().update({name: _LegacyTensorType(name, dt) for name, dt in _LEGACY.items()})
__all__ += list(_LEGACY)


def set_num_threads(n: int) -> None:
    """Worker threads per CPU kernel (the THREADS knob); 1 runs every kernel on the calling thread."""
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise RuntimeError(f"set_num_threads(): expected a positive int, got {n!r}")
    config.THREADS.value = n


def get_num_threads() -> int:
    from unigrad.runtime.cpu_pool import n_threads

    return n_threads()


def compile(model: Any = None, **_: Any) -> Any:  # noqa: A001 - torch's name
    """torch.compile: the model (or function) itself; as a decorator with options, the identity decorator."""
    if model is None:
        return lambda fn: fn
    return model


def seed() -> int:
    """Seed the generator from the OS's entropy; returns the seed."""
    from unigrad.tensor import Tensor

    s = int.from_bytes(os.urandom(8), "little") >> 1
    Tensor.manual_seed(s)
    return s


def initial_seed() -> int:
    """The seed the generator was last seeded with."""
    from unigrad.api.random import _rng

    return int(_rng.seed)


_deterministic = [False]


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Kept for are_deterministic_algorithms_enabled(): every unigrad kernel is deterministic already."""
    _deterministic[0] = bool(mode)


def are_deterministic_algorithms_enabled() -> bool:
    return _deterministic[0]


class autocast:
    """torch.autocast: `autocast(device_type, dtype=None, enabled=True)` as a context manager or decorator.
    unigrad has no automatic mixed precision. Where torch switches autocast off itself (a device_type of "cuda"
    without CUDA, a CPU dtype other than bfloat16/float16), it warns as torch does and runs the region as written,
    and so does enabled=False; enabled=True on the CPU with a 16-bit dtype (torch's CPU default is bfloat16) raises,
    naming what to do instead, as its results would silently keep float32 where torch gives bfloat16/float16."""

    def __init__(self, device_type: str = "cpu", dtype: Any = None, enabled: bool = True, cache_enabled: Any = None):
        kind = str(getattr(device_type, "type", device_type)).lower()
        if kind not in ("cpu", "cuda"):
            raise RuntimeError(f"autocast: expected device_type 'cpu' or 'cuda', got {device_type!r}")
        self.device_type, self.enabled = kind, False
        if not enabled:
            return
        if kind == "cuda":
            warnings.warn("CUDA is not available. Disabling autocast.", UserWarning, stacklevel=2)
        elif dtype is not None and to_dtype(dtype) not in (dtypes.bfloat16, dtypes.float16):
            warnings.warn(
                "In CPU autocast, but the target dtype is not supported. Disabling autocast.\n"
                "CPU Autocast only supports dtypes of bfloat16, float16 currently.",
                UserWarning,
                stacklevel=2,
            )
        else:
            raise NotImplementedError(
                f"autocast({device_type!r}): automatic mixed precision is not implemented in unigrad; run in full "
                "precision (drop the autocast, or pass enabled=False), or cast the model and inputs yourself "
                "(model.half(), x.to(unigrad.bfloat16))"
            )

    def __enter__(self) -> autocast:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def __call__(self, fn: Any) -> Any:
        return fn
