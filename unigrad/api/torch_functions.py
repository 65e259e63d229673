"""torch's top-level functions over unigrad Tensors, so `import unigrad as torch` style code runs: constructors
(tensor, zeros, arange, rand, ...), math and reductions (sum, max, matmul, einsum, where, ...), movement (cat,
stack, reshape, split, ...), comparisons (allclose, equal, ...) and the grad-mode switches (no_grad, enable_grad,
set_grad_enabled, inference_mode). Each takes torch's signature and delegates to the Tensor method of the same
meaning; functions torch returns a (values, indices) pair from return one (ValuesIndices).

The names shadow Python builtins here (sum, max, min, abs, all, any, round, pow, range): this module's own code uses
`builtins.` for those. The dtype names (float32, long, ...) live in unigrad/__init__.py for the same reason.
"""

from __future__ import annotations

import builtins
import contextlib
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from unigrad.api.reduce import ValuesIndices
from unigrad.dtype import DType, dtypes, to_dtype
from unigrad.tensor import Tensor
from unigrad.tensor import no_grad as _no_grad

Size = int | Sequence[int]
Scalar = bool | int | float


def _t(x: Any, fn: str, name: str = "input") -> Tensor:
    """x when it is a Tensor, else torch's TypeError naming the function and argument."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn}(): argument '{name}' must be Tensor, not {type(x).__name__}")
    return x


def _shape(size: tuple[Any, ...], fn: str) -> tuple[int, ...]:
    """torch's size arguments: ints (zeros(2, 3)) or one sequence (zeros((2, 3)))."""
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    if not builtins.all(isinstance(s, int) and not isinstance(s, builtins.bool) for s in size):
        raise TypeError(f"{fn}(): size must be ints or one tuple of ints, got {size!r}")
    return size


def _grad(t: Tensor, requires_grad: builtins.bool) -> Tensor:
    return t.requires_grad_() if requires_grad else t


# ---------------------------------------------------------------- grad mode


def is_grad_enabled() -> builtins.bool:
    """Whether results built now track gradients (False inside no_grad / inference_mode)."""
    return not Tensor.no_grad


class set_grad_enabled(contextlib.ContextDecorator):
    """Turn gradient tracking on or off: called as a function it switches it now (as torch); used as a context
    manager or decorator, it also restores the previous mode on exit."""

    def __init__(self, mode: builtins.bool) -> None:
        self._prev = Tensor.no_grad
        Tensor.no_grad = not mode
        self._mode = mode

    def __enter__(self) -> set_grad_enabled:
        Tensor.no_grad = not self._mode  # again: a decorator re-enters on each call
        return self

    def __exit__(self, *exc: object) -> None:
        Tensor.no_grad = self._prev


class _BareDecorator:
    """Lets a grad-mode class decorate a function with or without the call: `@no_grad` as well as `@no_grad()`."""

    def __new__(cls, *args: Any, **kw: Any) -> Any:
        if len(args) == 1 and not kw and callable(args[0]) and not isinstance(args[0], builtins.bool):
            return cls()(args[0])  # a function, not an instance: __init__ is not run
        return super().__new__(cls)


class no_grad(_BareDecorator, _no_grad):
    """`with no_grad():`, `@no_grad()` or `@no_grad`: results built inside do not require grad (unigrad's no_grad,
    which sets Tensor.no_grad, usable bare as a decorator too)."""


class _GradMode(contextlib.ContextDecorator):
    """A context manager and decorator that sets gradient tracking to `enabled` and restores it on exit."""

    def __init__(self, enabled: builtins.bool) -> None:
        self._enabled = enabled
        self._saved: list[builtins.bool] = []

    def __enter__(self) -> _GradMode:
        self._saved.append(Tensor.no_grad)
        Tensor.no_grad = not self._enabled
        return self

    def __exit__(self, *exc: object) -> None:
        Tensor.no_grad = self._saved.pop()


class enable_grad(_BareDecorator, _GradMode):
    """`with enable_grad():` (or `@enable_grad()`): track gradients again, inside no_grad."""

    def __init__(self) -> None:
        super().__init__(True)


class inference_mode(_BareDecorator, _GradMode):
    """`with inference_mode():` (or `@inference_mode()`): no gradient tracking, as no_grad (mode=False: tracking
    is left as it is)."""

    def __init__(self, mode: builtins.bool = True) -> None:
        super().__init__(not mode)
        self._keep = not mode

    def __enter__(self) -> inference_mode:
        if self._keep:
            self._saved.append(Tensor.no_grad)
            return self
        super().__enter__()
        return self


# ---------------------------------------------------------------- dtypes and tensors


def get_default_dtype() -> DType:
    """The dtype of floats made without one (dtypes.default_float)."""
    return dtypes.default_float


def set_default_dtype(d: DType | str) -> None:
    """Set the default float dtype; only floating point dtypes, as torch."""
    dt = to_dtype(d)
    if not dt.is_float:
        raise TypeError(f"set_default_dtype(): only floating-point types are supported as the default type, got {dt}")
    dtypes.default_float = dt


def is_tensor(obj: Any) -> builtins.bool:
    return isinstance(obj, Tensor)


def is_floating_point(input: Tensor) -> builtins.bool:
    return _t(input, "is_floating_point").is_floating_point()


def numel(input: Tensor) -> int:
    return int(_t(input, "numel").numel())


def _plain(data: Any) -> Any:
    """Nested lists / tuples with any Tensors in them replaced by their values (numpy)."""
    if isinstance(data, Tensor):
        return data.numpy()
    if isinstance(data, (list, tuple)):
        return [_plain(d) for d in data]
    return data


def tensor(
    data: Any,
    dtype: DType | str | None = None,
    device: str | None = None,
    requires_grad: builtins.bool = False,
    pin_memory: builtins.bool = False,
) -> Tensor:
    """A new leaf tensor holding a copy of `data` (a scalar, nested lists, a numpy array or a Tensor): Python
    floats become the default float dtype, ints int64, numpy arrays keep theirs, as torch.tensor."""
    if isinstance(data, Tensor):
        t = data.detach().clone()
        t = t.cast(dtype) if dtype is not None else t
        t = t.to(device) if device is not None else t
    else:
        t = Tensor(_plain(data), device=device, dtype=dtype)
    return _grad(t, requires_grad)


def as_tensor(data: Any, dtype: DType | str | None = None, device: str | None = None) -> Tensor:
    """data itself when it is a Tensor of that dtype and device, else a converted copy."""
    if isinstance(data, Tensor):
        t = data.cast(dtype) if dtype is not None and to_dtype(dtype) is not data.dtype else data
        return t.to(device) if device is not None and t.device != device else t
    return tensor(data, dtype, device)


def from_numpy(ndarray: np.ndarray) -> Tensor:
    """A tensor of the array's dtype and shape (a copy: unigrad buffers live on the device, not in the array)."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"from_numpy(): expected np.ndarray (got {type(ndarray).__name__})")
    return Tensor(ndarray)


def manual_seed(seed: int) -> None:
    """Seed unigrad's random number generator (Tensor.manual_seed)."""
    Tensor.manual_seed(seed)


# ---------------------------------------------------------------- constructors


def zeros(
    *size: Any, dtype: DType | str | None = None, device: str | None = None, requires_grad: builtins.bool = False
) -> Tensor:
    return _grad(Tensor.zeros(_shape(size, "zeros"), dtype=dtype, device=device), requires_grad)


def ones(
    *size: Any, dtype: DType | str | None = None, device: str | None = None, requires_grad: builtins.bool = False
) -> Tensor:
    return _grad(Tensor.ones(_shape(size, "ones"), dtype=dtype, device=device), requires_grad)


def empty(
    *size: Any, dtype: DType | str | None = None, device: str | None = None, requires_grad: builtins.bool = False
) -> Tensor:
    return _grad(Tensor.empty(_shape(size, "empty"), dtype=dtype, device=device), requires_grad)


def full(
    size: Size,
    fill_value: Scalar,
    *,
    dtype: DType | str | None = None,
    device: str | None = None,
    requires_grad: builtins.bool = False,
) -> Tensor:
    """`size` filled with fill_value; the dtype follows the value (bool, int64, default float) unless given."""
    return _grad(Tensor.full(_shape((size,), "full"), fill_value, dtype=dtype, device=device), requires_grad)


def arange(
    start: Scalar,
    end: Scalar | None = None,
    step: Scalar = 1,
    *,
    dtype: DType | str | None = None,
    device: str | None = None,
    requires_grad: builtins.bool = False,
) -> Tensor:
    return _grad(Tensor.arange(start, end, step, dtype=dtype, device=device), requires_grad)


def linspace(
    start: Scalar,
    end: Scalar,
    steps: int,
    *,
    dtype: DType | str | None = None,
    device: str | None = None,
    requires_grad: builtins.bool = False,
) -> Tensor:
    return _grad(Tensor.linspace(start, end, steps, dtype=dtype, device=device), requires_grad)


def eye(
    n: int,
    m: int | None = None,
    *,
    dtype: DType | str | None = None,
    device: str | None = None,
    requires_grad: builtins.bool = False,
) -> Tensor:
    return _grad(Tensor.eye(n, m, dtype=dtype, device=device), requires_grad)


def rand(
    *size: Any,
    generator: Any = None,
    dtype: DType | str | None = None,
    device: str | None = None,
    requires_grad: builtins.bool = False,
) -> Tensor:
    """Uniform in [0, 1) (from `generator`'s own state when given)."""
    return _grad(Tensor.rand(*_shape(size, "rand"), dtype=dtype, device=device, generator=generator), requires_grad)


def randn(
    *size: Any,
    generator: Any = None,
    dtype: DType | str | None = None,
    device: str | None = None,
    requires_grad: builtins.bool = False,
) -> Tensor:
    """Standard normal (from `generator`'s own state when given)."""
    return _grad(Tensor.randn(*_shape(size, "randn"), dtype=dtype, device=device, generator=generator), requires_grad)


def randint(
    *args: Any,
    size: Size | None = None,
    generator: Any = None,
    dtype: DType | str | None = None,
    device: str | None = None,
    requires_grad: builtins.bool = False,
) -> Tensor:
    """torch.randint(high, size) or randint(low, high, size): integers in [low, high), int64 by default."""
    if size is None:
        if not args:
            raise TypeError("randint(): missing the size argument (randint(low=0, high, size))")
        *args, size = args  # type: ignore[assignment]
    if len(args) not in (1, 2):
        raise TypeError(f"randint(): expected randint(high, size) or randint(low, high, size), got {len(args)} bounds")
    low, high = (0, args[0]) if len(args) == 1 else args
    if high <= low:
        raise RuntimeError(f"randint(): random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    shape = _shape((size,), "randint")
    out = Tensor.randint(*shape, low=low, high=high, dtype=dtype or dtypes.int64, device=device, generator=generator)
    return _grad(out, requires_grad)


def randperm(
    n: int,
    *,
    generator: Any = None,
    dtype: DType | str | None = None,
    device: str | None = None,
    requires_grad: builtins.bool = False,
) -> Tensor:
    """A random permutation of 0..n-1 (int64 by default)."""
    return _grad(Tensor.randperm(n, device=device, dtype=dtype or dtypes.int64, generator=generator), requires_grad)


def full_like(
    input: Tensor,
    fill_value: Scalar,
    *,
    dtype: DType | str | None = None,
    device: str | None = None,
    requires_grad: builtins.bool = False,
) -> Tensor:
    x = _t(input, "full_like")
    t = Tensor.full(x.shape, fill_value, dtype=dtype or x.dtype, device=device or x.device)
    return _grad(t, requires_grad)


def zeros_like(
    input: Tensor,
    *,
    dtype: DType | str | None = None,
    device: str | None = None,
    requires_grad: builtins.bool = False,
) -> Tensor:
    return full_like(_t(input, "zeros_like"), 0, dtype=dtype, device=device, requires_grad=requires_grad)


def ones_like(
    input: Tensor,
    *,
    dtype: DType | str | None = None,
    device: str | None = None,
    requires_grad: builtins.bool = False,
) -> Tensor:
    return full_like(_t(input, "ones_like"), 1, dtype=dtype, device=device, requires_grad=requires_grad)


def empty_like(
    input: Tensor,
    *,
    dtype: DType | str | None = None,
    device: str | None = None,
    requires_grad: builtins.bool = False,
) -> Tensor:
    x = _t(input, "empty_like")
    return _grad(Tensor.empty(x.shape, dtype=dtype or x.dtype, device=device or x.device), requires_grad)


def rand_like(
    input: Tensor,
    *,
    dtype: DType | str | None = None,
    device: str | None = None,
    requires_grad: builtins.bool = False,
) -> Tensor:
    x = _t(input, "rand_like")
    return rand(x.shape, dtype=dtype or x.dtype, device=device or x.device, requires_grad=requires_grad)


def randn_like(
    input: Tensor,
    *,
    dtype: DType | str | None = None,
    device: str | None = None,
    requires_grad: builtins.bool = False,
) -> Tensor:
    x = _t(input, "randn_like")
    return randn(x.shape, dtype=dtype or x.dtype, device=device or x.device, requires_grad=requires_grad)


# ---------------------------------------------------------------- products


def matmul(input: Tensor, other: Tensor) -> Tensor:
    return _t(input, "matmul").matmul(_t(other, "matmul", "other"))


def mm(input: Tensor, mat2: Tensor) -> Tensor:
    return _t(input, "mm").mm(_t(mat2, "mm", "mat2"))


def bmm(input: Tensor, mat2: Tensor) -> Tensor:
    """Batched (b, n, m) @ (b, m, p) -> (b, n, p); both must be 3-D with one batch size, as torch."""
    a, b = _t(input, "bmm"), _t(mat2, "bmm", "mat2")
    if a.ndim != 3 or b.ndim != 3 or a.shape[0] != b.shape[0] or a.shape[2] != b.shape[1]:
        raise RuntimeError(f"bmm(): expected 3-D tensors (b, n, m) and (b, m, p), got {a.shape} and {b.shape}")
    return a.matmul(b)


def einsum(equation: str, *operands: Tensor | Sequence[Tensor]) -> Tensor:
    return Tensor.einsum(equation, *operands)


def dot(input: Tensor, other: Tensor) -> Tensor:
    a, b = _t(input, "dot"), _t(other, "dot", "other")
    if a.ndim != 1 or b.ndim != 1:
        raise RuntimeError(f"dot(): 1D tensors expected, but got {a.ndim}D and {b.ndim}D tensors")
    return a.dot(b)


def outer(input: Tensor, vec2: Tensor) -> Tensor:
    return _t(input, "outer").outer(_t(vec2, "outer", "vec2"))


def mv(input: Tensor, vec: Tensor) -> Tensor:
    return _t(input, "mv").mv(_t(vec, "mv", "vec"))


def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta: Scalar = 1, alpha: Scalar = 1) -> Tensor:
    return _t(input, "addmm").addmm(mat1, mat2, beta=beta, alpha=alpha)


def baddbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: Scalar = 1, alpha: Scalar = 1) -> Tensor:
    return _t(input, "baddbmm").baddbmm(batch1, batch2, beta=beta, alpha=alpha)


def where(condition: Tensor, input: Tensor | Scalar | None = None, other: Tensor | Scalar | None = None) -> Any:
    """input where condition else other (scalars allowed); where(condition) alone is nonzero(as_tuple=True)."""
    cond = _t(condition, "where", "condition")
    if input is None and other is None:
        return cond.nonzero(as_tuple=True)
    if input is None or other is None:
        raise TypeError("where(): expected where(condition) or where(condition, input, other)")
    return cond.where(input, other)


# ---------------------------------------------------------------- elementwise


def _unary(name: str) -> Callable[[Tensor], Tensor]:
    """torch.<name>(input) as input.<name>()."""

    def fn(input: Tensor) -> Tensor:
        return getattr(_t(input, name), name)()

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"torch.{name}(input): input.{name}()."
    return fn


abs = _unary("abs")
absolute = _unary("absolute")
neg = _unary("neg")
negative = _unary("negative")
exp = _unary("exp")
exp2 = _unary("exp2")
expm1 = _unary("expm1")
log = _unary("log")
log2 = _unary("log2")
log10 = _unary("log10")
log1p = _unary("log1p")
sqrt = _unary("sqrt")
rsqrt = _unary("rsqrt")
square = _unary("square")
reciprocal = _unary("reciprocal")
sin = _unary("sin")
cos = _unary("cos")
tan = _unary("tan")
asin = _unary("asin")
acos = _unary("acos")
atan = _unary("atan")
sinh = _unary("sinh")
cosh = _unary("cosh")
asinh = _unary("asinh")
acosh = _unary("acosh")
atanh = _unary("atanh")
erf = _unary("erf")
erfc = _unary("erfc")
floor = _unary("floor")
ceil = _unary("ceil")
trunc = _unary("trunc")
frac = _unary("frac")
sign = _unary("sign")
sgn = _unary("sgn")
signbit = _unary("signbit")
sigmoid = _unary("sigmoid")
tanh = _unary("tanh")
relu = _unary("relu")
isnan = _unary("isnan")
isinf = _unary("isinf")
isfinite = _unary("isfinite")
isposinf = _unary("isposinf")
isneginf = _unary("isneginf")
logical_not = _unary("logical_not")
bitwise_not = _unary("bitwise_not")
t = _unary("t")
ravel = _unary("ravel")
trace = _unary("trace")
msort = _unary("msort")
corrcoef = _unary("corrcoef")


def round(input: Tensor, *, decimals: int = 0) -> Tensor:
    return _t(input, "round").round(decimals)


def _binary(name: str) -> Callable[[Tensor, Tensor | Scalar], Tensor]:
    """torch.<name>(input, other) as input.<name>(other)."""

    def fn(input: Tensor, other: Tensor | Scalar) -> Tensor:
        return getattr(_t(input, name), name)(other)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"torch.{name}(input, other): input.{name}(other)."
    return fn


mul = _binary("mul")
multiply = _binary("mul")
true_divide = _binary("true_divide")
maximum = _binary("maximum")
minimum = _binary("minimum")
atan2 = _binary("atan2")
arctan2 = _binary("atan2")
hypot = _binary("hypot")
fmod = _binary("fmod")
remainder = _binary("remainder")
floor_divide = _binary("floor_divide")
float_power = _binary("float_power")
copysign = _binary("copysign")
xlogy = _binary("xlogy")
logaddexp = _binary("logaddexp")
eq = _binary("eq")
ne = _binary("ne")
lt = _binary("lt")
le = _binary("le")
gt = _binary("gt")
ge = _binary("ge")
logical_and = _binary("logical_and")
logical_or = _binary("logical_or")
logical_xor = _binary("logical_xor")
bitwise_and = _binary("bitwise_and")
bitwise_or = _binary("bitwise_or")
bitwise_xor = _binary("bitwise_xor")


def add(input: Tensor | Scalar, other: Tensor | Scalar, *, alpha: Scalar = 1) -> Tensor:
    """input + alpha * other."""
    if not isinstance(input, Tensor):
        return _t(other, "add", "other").mul(alpha).add(input, reverse=True)
    return input.add(other, alpha=alpha)


def sub(input: Tensor | Scalar, other: Tensor | Scalar, *, alpha: Scalar = 1) -> Tensor:
    """input - alpha * other."""
    if not isinstance(input, Tensor):
        return _t(other, "sub", "other").mul(alpha).sub(input, reverse=True)
    return input.sub(other, alpha=alpha)


subtract = sub


def div(input: Tensor | Scalar, other: Tensor | Scalar, *, rounding_mode: str | None = None) -> Tensor:
    """input / other; rounding_mode 'trunc' or 'floor' rounds the quotient."""
    if not isinstance(input, Tensor):
        return _t(other, "div", "other").div(input, reverse=True, rounding_mode=rounding_mode)
    return input.div(other, rounding_mode=rounding_mode)


divide = div


def pow(input: Tensor | Scalar, exponent: Tensor | Scalar) -> Tensor:
    """input ** exponent; a scalar base with a tensor exponent too."""
    if not isinstance(input, Tensor):
        return _t(exponent, "pow", "exponent").pow(input, reverse=True)
    return input.pow(exponent)


def clamp(input: Tensor, min: Tensor | Scalar | None = None, max: Tensor | Scalar | None = None) -> Tensor:
    if min is None and max is None:
        raise RuntimeError("clamp(): at least one of 'min' or 'max' must not be None")
    return _t(input, "clamp").clamp(min, max)


clip = clamp


def clamp_min(input: Tensor, min: Tensor | Scalar) -> Tensor:
    return _t(input, "clamp_min").clamp_min(min)


def clamp_max(input: Tensor, max: Tensor | Scalar) -> Tensor:
    return _t(input, "clamp_max").clamp_max(max)


def lerp(input: Tensor, end: Tensor, weight: Tensor | Scalar) -> Tensor:
    return _t(input, "lerp").lerp(end, weight)


def addcmul(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: Scalar = 1) -> Tensor:
    return _t(input, "addcmul").addcmul(tensor1, tensor2, value)


def addcdiv(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: Scalar = 1) -> Tensor:
    return _t(input, "addcdiv").addcdiv(tensor1, tensor2, value)


def nan_to_num(input: Tensor, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None) -> Tensor:
    return _t(input, "nan_to_num").nan_to_num(nan, posinf, neginf)


def softmax(input: Tensor, dim: int, dtype: DType | None = None) -> Tensor:
    return _t(input, "softmax").softmax(dim, dtype=dtype)


def log_softmax(input: Tensor, dim: int, dtype: DType | None = None) -> Tensor:
    return _t(input, "log_softmax").log_softmax(dim, dtype=dtype)


# ---------------------------------------------------------------- comparisons


def allclose(
    input: Tensor, other: Tensor, rtol: float = 1e-5, atol: float = 1e-8, equal_nan: builtins.bool = False
) -> builtins.bool:
    return _t(input, "allclose").allclose(_t(other, "allclose", "other"), rtol, atol, equal_nan)


def isclose(
    input: Tensor, other: Tensor, rtol: float = 1e-5, atol: float = 1e-8, equal_nan: builtins.bool = False
) -> Tensor:
    return _t(input, "isclose").isclose(_t(other, "isclose", "other"), rtol, atol, equal_nan)


def equal(input: Tensor, other: Tensor) -> builtins.bool:
    """True when both have the same shape and elements (False for different shapes, as torch)."""
    a, b = _t(input, "equal"), _t(other, "equal", "other")
    if a.shape != b.shape:
        return False
    return builtins.bool(a.eq(b).all().item())


def isin(elements: Tensor | Scalar, test_elements: Tensor | Scalar, *, invert: builtins.bool = False) -> Tensor:
    return _t(elements, "isin", "elements").isin(test_elements, invert=invert)


# ---------------------------------------------------------------- reductions


def sum(
    input: Tensor, dim: int | Sequence[int] | None = None, keepdim: builtins.bool = False, *, dtype: Any = None
) -> Tensor:
    return _t(input, "sum").sum(dim, keepdim, dtype=dtype)


def mean(
    input: Tensor, dim: int | Sequence[int] | None = None, keepdim: builtins.bool = False, *, dtype: Any = None
) -> Tensor:
    x = _t(input, "mean")
    if dtype is None and not x.dtype.is_float:
        raise RuntimeError(
            f"mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. "
            f"Got: {x.dtype}"
        )
    return (x if dtype is None else x.cast(dtype)).mean(dim, keepdim)


def prod(input: Tensor, dim: int | None = None, keepdim: builtins.bool = False, *, dtype: Any = None) -> Tensor:
    return _t(input, "prod").prod(dim, keepdim, dtype=dtype)


def _select(name: str, input: Tensor, dim: Any, keepdim: builtins.bool) -> Any:
    """max / min: over everything, against another tensor (elementwise), or along dim with its indices."""
    x = _t(input, name)
    if isinstance(dim, Tensor):
        return x.maximum(dim) if name == "max" else x.minimum(dim)
    if dim is None:
        if keepdim:
            raise TypeError(f"{name}(): keepdim needs a dim")
        return x.max() if name == "max" else x.min()
    values = x.max(dim, keepdim) if name == "max" else x.min(dim, keepdim)
    indices = x.argmax(dim, keepdim) if name == "max" else x.argmin(dim, keepdim)
    return ValuesIndices(values, indices)


def max(input: Tensor, dim: int | Tensor | None = None, keepdim: builtins.bool = False) -> Any:
    """max(input): the largest element; max(input, dim, keepdim): (values, indices); max(input, other): maximum."""
    return _select("max", input, dim, keepdim)


def min(input: Tensor, dim: int | Tensor | None = None, keepdim: builtins.bool = False) -> Any:
    """min(input): the smallest element; min(input, dim, keepdim): (values, indices); min(input, other): minimum."""
    return _select("min", input, dim, keepdim)


def argmax(input: Tensor, dim: int | None = None, keepdim: builtins.bool = False) -> Tensor:
    return _t(input, "argmax").argmax(dim, keepdim)


def argmin(input: Tensor, dim: int | None = None, keepdim: builtins.bool = False) -> Tensor:
    return _t(input, "argmin").argmin(dim, keepdim)


def amax(input: Tensor, dim: int | Sequence[int] = (), keepdim: builtins.bool = False) -> Tensor:
    return _t(input, "amax").amax(dim, keepdim)


def amin(input: Tensor, dim: int | Sequence[int] = (), keepdim: builtins.bool = False) -> Tensor:
    return _t(input, "amin").amin(dim, keepdim)


def aminmax(input: Tensor, *, dim: int | None = None, keepdim: builtins.bool = False) -> Any:
    return _t(input, "aminmax").aminmax(dim=dim, keepdim=keepdim)


def all(input: Tensor, dim: int | Sequence[int] | None = None, keepdim: builtins.bool = False) -> Tensor:
    return _t(input, "all").all(dim, keepdim)


def any(input: Tensor, dim: int | Sequence[int] | None = None, keepdim: builtins.bool = False) -> Tensor:
    return _t(input, "any").any(dim, keepdim)


def _moments(
    name: str, input: Tensor, dim: Any, unbiased: Any, keepdim: builtins.bool, correction: float | None
) -> Any:
    """std / var / std_mean / var_mean in torch's overloads: (input, dim, unbiased, keepdim), (input, unbiased)
    and the keyword correction."""
    x = _t(input, name)
    if isinstance(dim, builtins.bool):  # std(input, unbiased)
        dim, unbiased = None, dim
    return getattr(x, name)(dim, keepdim, correction, unbiased=unbiased)


def std(
    input: Tensor,
    dim: int | Sequence[int] | None = None,
    unbiased: builtins.bool | None = None,
    keepdim: builtins.bool = False,
    *,
    correction: float | None = None,
) -> Tensor:
    return _moments("std", input, dim, unbiased, keepdim, correction)


def var(
    input: Tensor,
    dim: int | Sequence[int] | None = None,
    unbiased: builtins.bool | None = None,
    keepdim: builtins.bool = False,
    *,
    correction: float | None = None,
) -> Tensor:
    return _moments("var", input, dim, unbiased, keepdim, correction)


def std_mean(
    input: Tensor,
    dim: int | Sequence[int] | None = None,
    unbiased: builtins.bool | None = None,
    keepdim: builtins.bool = False,
    *,
    correction: float | None = None,
) -> tuple[Tensor, Tensor]:
    return _moments("std_mean", input, dim, unbiased, keepdim, correction)


def var_mean(
    input: Tensor,
    dim: int | Sequence[int] | None = None,
    unbiased: builtins.bool | None = None,
    keepdim: builtins.bool = False,
    *,
    correction: float | None = None,
) -> tuple[Tensor, Tensor]:
    return _moments("var_mean", input, dim, unbiased, keepdim, correction)


def logsumexp(input: Tensor, dim: int | Sequence[int], keepdim: builtins.bool = False) -> Tensor:
    return _t(input, "logsumexp").logsumexp(dim, keepdim)


def norm(
    input: Tensor,
    p: float | str | None = "fro",
    dim: int | Sequence[int] | None = None,
    keepdim: builtins.bool = False,
    dtype: Any = None,
) -> Tensor:
    return _t(input, "norm").norm(p, dim, keepdim, dtype)


def median(input: Tensor, dim: int | None = None, keepdim: builtins.bool = False) -> Any:
    return _t(input, "median").median(dim, keepdim)


def count_nonzero(input: Tensor, dim: int | Sequence[int] | None = None) -> Tensor:
    return _t(input, "count_nonzero").count_nonzero(dim)


def cumsum(input: Tensor, dim: int, *, dtype: Any = None) -> Tensor:
    return _t(input, "cumsum").cumsum(dim, dtype)


def cumprod(input: Tensor, dim: int, *, dtype: Any = None) -> Tensor:
    return _t(input, "cumprod").cumprod(dim, dtype)


def cummax(input: Tensor, dim: int) -> ValuesIndices:
    return ValuesIndices(*_t(input, "cummax").cummax(dim))


def cummin(input: Tensor, dim: int) -> ValuesIndices:
    return ValuesIndices(*_t(input, "cummin").cummin(dim))


def logcumsumexp(input: Tensor, dim: int) -> Tensor:
    return _t(input, "logcumsumexp").logcumsumexp(dim)


def sort(
    input: Tensor, dim: int = -1, descending: builtins.bool = False, stable: builtins.bool = False
) -> ValuesIndices:
    return ValuesIndices(*_t(input, "sort").sort(dim, descending, stable=True))


def argsort(input: Tensor, dim: int = -1, descending: builtins.bool = False, stable: builtins.bool = False) -> Tensor:
    return _t(input, "argsort").argsort(dim, descending, stable=True)


def topk(
    input: Tensor, k: int, dim: int = -1, largest: builtins.bool = True, sorted: builtins.bool = True
) -> ValuesIndices:
    return ValuesIndices(*_t(input, "topk").topk(k, dim, largest, sorted))


def kthvalue(input: Tensor, k: int, dim: int = -1, keepdim: builtins.bool = False) -> ValuesIndices:
    return _t(input, "kthvalue").kthvalue(k, dim, keepdim)


# ---------------------------------------------------------------- joining and movement


def _tensors(tensors: Any, fn: str) -> list[Tensor]:
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{fn}(): argument 'tensors' must be a tuple or list of Tensors, not {type(tensors).__name__}")
    if not tensors:
        raise RuntimeError(f"{fn}(): expected a non-empty list of Tensors")
    return [_t(x, fn, "tensors") for x in tensors]


def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    ts = _tensors(tensors, "cat")
    return ts[0].cat(*ts[1:], dim=dim)


concat = cat
concatenate = cat


def stack(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    ts = _tensors(tensors, "stack")
    return ts[0].stack(*ts[1:], dim=dim)


def hstack(tensors: Sequence[Tensor]) -> Tensor:
    """Concatenated along dim 1 (dim 0 for 1-D tensors)."""
    ts = [x.reshape(1) if x.ndim == 0 else x for x in _tensors(tensors, "hstack")]
    return cat(ts, 0 if ts[0].ndim == 1 else 1)


def vstack(tensors: Sequence[Tensor]) -> Tensor:
    """Concatenated along dim 0, 0-D and 1-D tensors first made rows."""
    ts = [x.reshape(1, -1) if x.ndim < 2 else x for x in _tensors(tensors, "vstack")]
    return cat(ts, 0)


def reshape(input: Tensor, shape: Sequence[int]) -> Tensor:
    return _t(input, "reshape").reshape(tuple(shape))


def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    return _t(input, "flatten").flatten(start_dim, end_dim)


def unflatten(input: Tensor, dim: int, sizes: Sequence[int]) -> Tensor:
    return _t(input, "unflatten").unflatten(dim, sizes)


def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:
    return _t(input, "transpose").transpose(dim0, dim1)


swapaxes = transpose
swapdims = transpose


def permute(input: Tensor, dims: Sequence[int]) -> Tensor:
    return _t(input, "permute").permute(tuple(dims))


def movedim(input: Tensor, source: int | Sequence[int], destination: int | Sequence[int]) -> Tensor:
    return _t(input, "movedim").movedim(source, destination)


moveaxis = movedim


def squeeze(input: Tensor, dim: int | Sequence[int] | None = None) -> Tensor:
    return _t(input, "squeeze").squeeze(dim)


def unsqueeze(input: Tensor, dim: int) -> Tensor:
    return _t(input, "unsqueeze").unsqueeze(dim)


def broadcast_to(input: Tensor, size: Sequence[int]) -> Tensor:
    return _t(input, "broadcast_to").broadcast_to(tuple(size))


def split(tensor: Tensor, split_size_or_sections: int | Sequence[int], dim: int = 0) -> tuple[Tensor, ...]:
    return _t(tensor, "split", "tensor").split(split_size_or_sections, dim)


def chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    return _t(input, "chunk").chunk(chunks, dim)


def tensor_split(input: Tensor, indices_or_sections: Any, dim: int = 0) -> tuple[Tensor, ...]:
    return _t(input, "tensor_split").tensor_split(indices_or_sections, dim)


def unbind(input: Tensor, dim: int = 0) -> tuple[Tensor, ...]:
    return _t(input, "unbind").unbind(dim)


def gather(input: Tensor, dim: int, index: Tensor, *, sparse_grad: builtins.bool = False) -> Tensor:
    return _t(input, "gather").gather(dim, _t(index, "gather", "index"))


def take_along_dim(input: Tensor, indices: Tensor, dim: int | None = None) -> Tensor:
    return _t(input, "take_along_dim").take_along_dim(indices, dim)


def index_select(input: Tensor, dim: int, index: Tensor) -> Tensor:
    return _t(input, "index_select").index_select(dim, _t(index, "index_select", "index"))


def masked_fill(input: Tensor, mask: Tensor, value: Tensor | Scalar) -> Tensor:
    return _t(input, "masked_fill").masked_fill(_t(mask, "masked_fill", "mask"), value)


def masked_select(input: Tensor, mask: Tensor) -> Tensor:
    return _t(input, "masked_select").masked_select(mask)


def scatter(input: Tensor, dim: int, index: Tensor, src: Tensor | Scalar, reduce: str | None = None) -> Tensor:
    return _t(input, "scatter").scatter(dim, index, src, reduce=reduce)


def scatter_add(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    return _t(input, "scatter_add").scatter_add(dim, index, src)


def index_add(input: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha: Scalar = 1) -> Tensor:
    return _t(input, "index_add").index_add(dim, index, source, alpha)


def nonzero(input: Tensor, *, as_tuple: builtins.bool = False) -> Any:
    return _t(input, "nonzero").nonzero(as_tuple=as_tuple)


def narrow(input: Tensor, dim: int, start: int, length: int) -> Tensor:
    return _t(input, "narrow").narrow(dim, start, length)


def flip(input: Tensor, dims: Sequence[int]) -> Tensor:
    return _t(input, "flip").flip(*dims)


def roll(input: Tensor, shifts: int | Sequence[int], dims: int | Sequence[int] | None = None) -> Tensor:
    return _t(input, "roll").roll(shifts, dims)


def rot90(input: Tensor, k: int = 1, dims: Sequence[int] = (0, 1)) -> Tensor:
    return _t(input, "rot90").rot90(k, dims)


def tile(input: Tensor, dims: Sequence[int]) -> Tensor:
    return _t(input, "tile").tile(*dims)


def repeat_interleave(
    input: Tensor, repeats: int | Tensor, dim: int | None = None, *, output_size: int | None = None
) -> Tensor:
    return _t(input, "repeat_interleave").repeat_interleave(repeats, dim, output_size)


def tril(input: Tensor, diagonal: int = 0) -> Tensor:
    return _t(input, "tril").tril(diagonal)


def triu(input: Tensor, diagonal: int = 0) -> Tensor:
    return _t(input, "triu").triu(diagonal)


def diag(input: Tensor, diagonal: int = 0) -> Tensor:
    return _t(input, "diag").diag(diagonal)


def diagonal(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    return _t(input, "diagonal").diagonal(offset, dim1, dim2)


def diff(
    input: Tensor, n: int = 1, dim: int = -1, prepend: Tensor | None = None, append: Tensor | None = None
) -> Tensor:
    return _t(input, "diff").diff(n, dim, prepend, append)


def cross(input: Tensor, other: Tensor, dim: int | None = None) -> Tensor:
    return _t(input, "cross").cross(other, dim)


def meshgrid(*tensors: Tensor | Sequence[Tensor], indexing: str = "ij") -> tuple[Tensor, ...]:
    ts = list(tensors[0]) if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)) else list(tensors)
    ts = _tensors(ts, "meshgrid")
    return ts[0].meshgrid(*ts[1:], indexing=indexing)


def searchsorted(
    sorted_sequence: Tensor,
    input: Tensor | Scalar,
    *,
    out_int32: builtins.bool = False,
    right: builtins.bool = False,
    side: str | None = None,
    sorter: Tensor | None = None,
) -> Tensor:
    seq = _t(sorted_sequence, "searchsorted", "sorted_sequence")
    return seq.searchsorted(input, out_int32=out_int32, right=right, side=side, sorter=sorter)


def bucketize(
    input: Tensor, boundaries: Tensor, *, out_int32: builtins.bool = False, right: builtins.bool = False
) -> Tensor:
    return _t(input, "bucketize").bucketize(boundaries, out_int32=out_int32, right=right)


def unique(
    input: Tensor,
    sorted: builtins.bool = True,
    return_inverse: builtins.bool = False,
    return_counts: builtins.bool = False,
    dim: int | None = None,
) -> Any:
    return _t(input, "unique").unique(sorted, return_inverse, return_counts, dim)


def bincount(input: Tensor, weights: Tensor | None = None, minlength: int = 0) -> Tensor:
    return _t(input, "bincount").bincount(weights, minlength)


def clone(input: Tensor) -> Tensor:
    return _t(input, "clone").clone()


def detach(input: Tensor) -> Tensor:
    return _t(input, "detach").detach()


# ---------------------------------------------------------------- torch.<name>(input, ...) = input.<name>(...)


def _method(name: str) -> Callable[..., Any]:
    """torch.<name>(input, *args, **kwargs) as input.<name>(*args, **kwargs): the top-level spelling of a method."""

    def fn(input: Tensor, *args: Any, **kwargs: Any) -> Any:
        return getattr(_t(input, name), name)(*args, **kwargs)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"torch.{name}(input, ...): input.{name}(...)."
    return fn


# torch's top-level functions that are the Tensor methods of the same name (the in-place ones included)
METHOD_FUNCTIONS = """
abs_ acos_ acosh_ addmv addmv_ addr adjoint arccos arccos_ arccosh arccosh_ arcsin arcsin_ arcsinh arcsinh_ arctan
arctan_ arctanh arctanh_ asin_ asinh_ atan_ atanh_ bernoulli bitwise_left_shift bitwise_right_shift ceil_ clamp_
clamp_max_ clamp_min_ clip_ conj conj_physical cos_ cosh_ cov deg2rad deg2rad_ detach_ digamma dist dsplit erf_ erfc_
erfinv exp2_ exp_ expm1_ fill_ fix fix_ fliplr flipud floor_ fmax fmin frac_ frexp gcd ger greater greater_equal
heaviside hsplit i0 index_copy index_fill index_put index_put_ inner is_complex is_conj is_neg is_nonzero is_same_size
is_signed lcm ldexp less less_equal lgamma log10_ log1p_ log2_ log_ logaddexp2 logit logit_ masked_scatter mode
multinomial nan_to_num_ nanmean nanmedian nanquantile nansum narrow_copy neg_ negative_ not_equal positive put
quantile rad2deg rad2deg_ reciprocal_ relu_ resolve_conj resolve_neg round_ rsqrt_ scatter_reduce select sigmoid_
sin_ sinc sinc_ sinh_ split_with_sizes sqrt_ square_ take tan_ tanh_ trunc_ unique_consecutive vsplit xlogy_ zero_
""".split()


METHOD_FUNCTIONS += "addbmm argwhere diag_embed diagflat diagonal_scatter histc kron renorm select_scatter".split()
METHOD_FUNCTIONS += "slice_scatter vdot".split()
for _name in METHOD_FUNCTIONS:
    globals()[_name] = _method(_name)


# ---------------------------------------------------------------- functions with no Tensor method of the name


def tensordot(a: Tensor, b: Tensor, dims: int | Sequence[Any] = 2) -> Tensor:
    """Sum over the last `dims` dims of a and the first `dims` of b (or over the listed pairs of dims): a's free
    dims, then b's, as one matmul of the two moved and flattened."""
    x, y = _t(a, "tensordot", "a"), _t(b, "tensordot", "b")
    if isinstance(dims, builtins.int):
        if dims < 0:
            raise RuntimeError(f"tensordot: expects dims >= 0, but got dims={dims}")
        da, db = list(builtins.range(x.ndim - dims, x.ndim)), list(builtins.range(dims))
    else:
        if len(dims) != 2:
            raise RuntimeError(f"tensordot: dims must be an int or a pair of dim lists, got {dims!r}")
        da = [dims[0]] if isinstance(dims[0], builtins.int) else list(dims[0])
        db = [dims[1]] if isinstance(dims[1], builtins.int) else list(dims[1])
    if len(da) != len(db):
        raise RuntimeError(f"tensordot: both dim lists should have the same length, got {da} and {db}")
    da, db = [d % x.ndim if x.ndim else d for d in da], [d % y.ndim if y.ndim else d for d in db]
    for i, j in zip(da, db):
        if x.shape[i] != y.shape[j]:
            raise RuntimeError(
                f"tensordot: contracted dimensions need to match, but first has size {x.shape[i]} in dim {i} and "
                f"second has size {y.shape[j]} in dim {j}"
            )
    fa = [i for i in builtins.range(x.ndim) if i not in da]
    fb = [j for j in builtins.range(y.ndim) if j not in db]
    k = int(np.prod([x.shape[i] for i in da]))
    xm = x.permute(fa + da).reshape(-1, k) if fa else x.permute(da).reshape(1, k)
    ym = y.permute(db + fb).reshape(k, -1) if fb else y.permute(db).reshape(k, 1)
    return xm.matmul(ym).reshape(tuple(x.shape[i] for i in fa) + tuple(y.shape[j] for j in fb))


def cdist(x1: Tensor, x2: Tensor, p: float = 2.0, compute_mode: str | None = None) -> Tensor:
    """The p-norm distance between each row of x1 (..., P, M) and each row of x2 (..., R, M): (..., P, R)."""
    a, b = _t(x1, "cdist", "x1"), _t(x2, "cdist", "x2")
    if a.ndim < 2 or b.ndim < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {a.ndim}D, X2 got: {b.ndim}D")
    if a.shape[-1] != b.shape[-1]:
        raise RuntimeError(
            f"cdist: X1 and X2 must have the same number of columns. X1: {a.shape[-1]} X2: {b.shape[-1]}"
        )
    if not a.dtype.is_float or not b.dtype.is_float:
        raise RuntimeError(f"cdist only supports floating-point dtypes, X1 got: {a.dtype}, X2 got: {b.dtype}")
    if p < 0:
        raise RuntimeError(f"cdist only supports non-negative p values, got {p}")
    return (a.unsqueeze(-2) - b.unsqueeze(-3)).norm(p, -1)


def pdist(input: Tensor, p: float = 2.0) -> Tensor:
    """The p-norm distance of each pair of rows i < j of a 2-D input, in row-major order of (i, j)."""
    x = _t(input, "pdist")
    if x.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {x.ndim}D")
    n = x.shape[0]
    if n < 2:
        return x.sum(1)[:0]
    i, j = triu_indices(n, n, 1, device=x.device)
    return (x.take_rows(i) - x.take_rows(j)).norm(p, -1)


def broadcast_shapes(*shapes: int | Sequence[int]) -> tuple[int, ...]:
    """The shape all of `shapes` broadcast to (an int is a 1-D shape)."""
    from unigrad.tensor import _broadcast_shape

    return _broadcast_shape("broadcast_shapes", *((s,) if isinstance(s, builtins.int) else tuple(s) for s in shapes))


def broadcast_tensors(*tensors: Tensor) -> tuple[Tensor, ...]:
    """Each tensor expanded to their common broadcast shape."""
    ts = _tensors(list(tensors), "broadcast_tensors")
    shape = broadcast_shapes(*(x.shape for x in ts))
    return tuple(x.expand(shape) for x in ts)


def block_diag(*tensors: Tensor) -> Tensor:
    """The tensors (0-d: 1x1, 1-D: a row) on the diagonal of one matrix, zeros elsewhere, dtypes promoted."""
    ts = [_t(x, "block_diag", "tensors") for x in tensors]
    if not ts:
        return Tensor.zeros(1, 0)
    for i, x in enumerate(ts):
        if x.ndim > 2:
            raise RuntimeError(f"block_diag: Input tensors must have 2 or fewer dimensions. Input {i} has {x.ndim}")
    mats = [x.reshape(1, 1) if x.ndim == 0 else x.reshape(1, -1) if x.ndim == 1 else x for x in ts]
    from unigrad.dtype import least_upper_dtype

    dt = least_upper_dtype(*(m.dtype for m in mats))
    cols = builtins.sum(m.shape[1] for m in mats)
    rows, left = [], 0
    for m in mats:
        rows.append(m.cast(dt).pad(((0, 0), (left, cols - left - m.shape[1]))))
        left += m.shape[1]
    return rows[0].cat(*rows[1:], dim=0)


def cartesian_prod(*tensors: Tensor) -> Tensor:
    """Every combination of one element of each 1-D tensor, as rows (itertools.product order); one tensor: itself."""
    ts = _tensors(list(tensors), "cartesian_prod")
    for x in ts:
        if x.ndim != 1:
            raise RuntimeError(f"cartesian_prod: expect a 1D vector, but got shape {x.shape}")
    if len(ts) == 1:
        return ts[0]
    grids = ts[0].meshgrid(*ts[1:], indexing="ij")
    return stack([g.flatten() for g in grids], 1)


def _tri_indices(op: str, row: int, col: int, offset: int, upper: builtins.bool, dtype: Any, device: Any) -> Tensor:
    """The (2, N) coordinates of the lower (upper) triangle of a row x col matrix, row-major: nonzero() of the
    triangle's mask, computed by a kernel."""
    if row < 0 or col < 0:
        raise RuntimeError(f"{op}: row and col must be non-negative, got {row} and {col}")
    mask = Tensor.ones(row, col, dtype=dtypes.bool, device=device)
    mask = mask.triu(offset) if upper else mask.tril(offset)
    return mask.nonzero().T.cast(to_dtype(dtype) if dtype is not None else dtypes.int64).contiguous()


def tril_indices(row: int, col: int, offset: int = 0, *, dtype: Any = None, device: Any = None) -> Tensor:
    return _tri_indices("tril_indices", row, col, offset, False, dtype, device)


def triu_indices(row: int, col: int, offset: int = 0, *, dtype: Any = None, device: Any = None) -> Tensor:
    return _tri_indices("triu_indices", row, col, offset, True, dtype, device)


def _atleast(n: int, tensors: tuple[Any, ...]) -> Any:
    """atleast_1d/2d/3d: each tensor with dims added as torch adds them; one tensor in, one out."""
    ts = list(tensors[0]) if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)) else list(tensors)
    out = []
    for x in ts:
        x = _t(x, f"atleast_{n}d", "tensors")
        if x.ndim == 0:
            x = x.reshape((1,) * n)
        elif x.ndim == 1 and n >= 2:
            x = x.reshape((1, -1, 1) if n == 3 else (1, -1))
        elif x.ndim == 2 and n == 3:
            x = x.unsqueeze(-1)
        out.append(x)
    return out[0] if len(tensors) == 1 and isinstance(tensors[0], Tensor) else tuple(out)


def atleast_1d(*tensors: Any) -> Any:
    return _atleast(1, tensors)


def atleast_2d(*tensors: Any) -> Any:
    return _atleast(2, tensors)


def atleast_3d(*tensors: Any) -> Any:
    return _atleast(3, tensors)


def column_stack(tensors: Sequence[Tensor]) -> Tensor:
    """0-D and 1-D tensors as columns, then concatenated along dim 1."""
    ts = [x.reshape(-1, 1) if x.ndim < 2 else x for x in _tensors(tensors, "column_stack")]
    return cat(ts, 1)


def dstack(tensors: Sequence[Tensor]) -> Tensor:
    """Concatenated along dim 2, after atleast_3d."""
    return cat(list(atleast_3d(*_tensors(tensors, "dstack"))), 2)


row_stack = vstack


def _trapezoid_terms(op: str, y: Tensor, x: Tensor | None, dx: float, dim: int) -> Tensor:
    """The areas of the trapezoids between neighbours along dim (one fewer than y's size there)."""
    y = _t(y, op, "y")
    n = y.shape[dim]
    mid = (y.narrow(dim, 1, n - 1) + y.narrow(dim, 0, n - 1)) * 0.5 if n > 0 else y
    if x is None:
        return mid * dx
    steps = x.diff(dim=dim if x.ndim == y.ndim else -1)
    if x.ndim == 1 and y.ndim > 1:
        d = dim % y.ndim
        steps = steps.reshape((1,) * d + (-1,) + (1,) * (y.ndim - d - 1))
    return mid * steps


def trapezoid(y: Tensor, x: Tensor | None = None, *, dx: float | None = None, dim: int = -1) -> Tensor:
    """The trapezoidal rule along dim: spacing dx (default 1), or the sample points x."""
    if x is not None and dx is not None:
        raise RuntimeError("trapezoid: takes either x or dx, not both")
    y = _t(y, "trapezoid", "y")
    if y.shape[dim] == 0:
        return y.sum(dim)
    return _trapezoid_terms("trapezoid", y, x, 1.0 if dx is None else dx, dim).sum(dim)


trapz = trapezoid


def cumulative_trapezoid(y: Tensor, x: Tensor | None = None, *, dx: float | None = None, dim: int = -1) -> Tensor:
    """trapezoid's running sums along dim (one fewer element there than y)."""
    if x is not None and dx is not None:
        raise RuntimeError("cumulative_trapezoid: takes either x or dx, not both")
    y = _t(y, "cumulative_trapezoid", "y")
    if y.shape[dim] == 0:
        return y
    return _trapezoid_terms("cumulative_trapezoid", y, x, 1.0 if dx is None else dx, dim).cumsum(dim)


# ---------------------------------------------------------------- more creation and random functions


def normal(
    mean: Tensor | float,
    std: Tensor | float = 1.0,
    size: Size | None = None,
    *,
    generator: Any = None,
    dtype: DType | str | None = None,
    device: str | None = None,
    requires_grad: builtins.bool = False,
) -> Tensor:
    """Normal samples, in torch's four forms: normal(mean, std, size) with floats; normal(mean_tensor, std=1.0),
    normal(mean, std_tensor) and normal(mean_tensor, std_tensor), shaped as the tensors broadcast. The tensor forms
    are mean + std * randn, so gradients reach mean and std as torch's do. A negative float std raises; a tensor
    std is not checked (that would read it back)."""
    if not isinstance(std, Tensor) and std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    tensors = [x for x in (mean, std) if isinstance(x, Tensor)]
    if not tensors:
        if size is None:
            raise TypeError("normal(): with a float mean and std, the size argument is required")
        shape = _shape((size,), "normal")
        out = Tensor.normal(*shape, mean=mean, std=std, dtype=dtype, device=device, generator=generator)
        return _grad(out, requires_grad)
    if size is not None or dtype is not None:
        raise TypeError("normal(): size and dtype are taken only with a float mean and std; here the tensors set them")
    for x in tensors:
        if not x.dtype.is_float:
            raise RuntimeError(f"normal expects floating point mean and std, got {x.dtype}")
    from unigrad.dtype import least_upper_dtype
    from unigrad.tensor import _broadcast_shape

    dt = least_upper_dtype(*(x.dtype for x in tensors))
    shape = _broadcast_shape("normal", *(x.shape for x in tensors))
    noise = Tensor.randn(*shape, dtype=dt, device=tensors[0].device, generator=generator)
    return noise * std + mean


def randint_like(
    input: Tensor,
    low: int | None = None,
    high: int | None = None,
    *,
    generator: Any = None,
    dtype: DType | str | None = None,
    device: str | None = None,
    requires_grad: builtins.bool = False,
) -> Tensor:
    """Integers in [low, high) in input's shape (and dtype unless given): randint_like(input, high) or
    randint_like(input, low, high)."""
    x = _t(input, "randint_like")
    if high is None:
        if low is None:
            raise TypeError("randint_like(): missing the high argument (randint_like(input, low=0, high))")
        low, high = 0, low
    low = 0 if low is None else low
    if high <= low:
        raise RuntimeError(f"randint_like(): expects 'low' to be less than 'high', but got low={low} >= high={high}")
    t = Tensor.randint(
        *x.shape, low=low, high=high, dtype=dtype or x.dtype, device=device or x.device, generator=generator
    )
    return _grad(t, requires_grad)


def _scalar(value: Any) -> Any:
    """A Python number, or a one-element Tensor's value (torch's Scalar-or-Tensor bounds)."""
    return value.item() if isinstance(value, Tensor) else value


def logspace(
    start: Scalar | Tensor,
    end: Scalar | Tensor,
    steps: int,
    base: float = 10.0,
    *,
    dtype: DType | str | None = None,
    device: str | None = None,
    requires_grad: builtins.bool = False,
) -> Tensor:
    """base ** linspace(start, end, steps). Integer dtypes compute in float64 and truncate, as torch, with powers
    that land within rounding of an integer taken as that integer."""
    if steps < 0:
        raise RuntimeError(f"logspace(): number of steps must be non-negative, got {steps}")
    dt = to_dtype(dtype) if dtype is not None else dtypes.default_float
    start, end = _scalar(start), _scalar(end)
    if dt.is_float:
        out = Tensor.linspace(start, end, steps, dtype=dt, device=device).pow(base, reverse=True)
    else:
        v = Tensor.linspace(start, end, steps, dtype=dtypes.float64, device=device).pow(base, reverse=True)
        out = v.isclose(v.round(), rtol=1e-12, atol=0.0).where(v.round(), v.trunc()).cast(dt)
    return _grad(out, requires_grad)


def range(
    start: Scalar,
    end: Scalar,
    step: Scalar = 1,
    *,
    dtype: DType | str | None = None,
    device: str | None = None,
    requires_grad: builtins.bool = False,
) -> Tensor:
    """torch.range (deprecated there): start, start + step, ... up to end inclusive, floor((end - start) / step) + 1
    values of the default float dtype even for ints. Shadows the builtin here: this module uses builtins.range."""
    start, end, step = _scalar(start), _scalar(end), _scalar(step)
    if step == 0:
        raise RuntimeError("range(): step must be nonzero")
    if (step > 0 and end < start) or (step < 0 and end > start):
        raise RuntimeError(f"range(): upper bound and lower bound inconsistent with step sign ({start}, {end}, {step})")
    n = int(math.floor((end - start) / step)) + 1
    dt = to_dtype(dtype) if dtype is not None else dtypes.default_float
    ramp = Tensor.arange(n, dtype=dt if dt.is_float else dtypes.int64, device=device)
    return _grad((ramp * step + start).cast(dt), requires_grad)


def scalar_tensor(
    s: Scalar,
    *,
    dtype: DType | str | None = None,
    device: str | None = None,
    requires_grad: builtins.bool = False,
) -> Tensor:
    """A 0-d tensor holding s, of the default float dtype unless given (also for int and bool s, as torch)."""
    if not isinstance(s, (builtins.bool, builtins.int, builtins.float)):
        raise TypeError(f"scalar_tensor(): argument 's' must be Number, not {type(s).__name__}")
    t = Tensor.full((), s, dtype=dtype or dtypes.default_float, device=device)
    return _grad(t, requires_grad)


def asarray(
    obj: Any,
    *,
    dtype: DType | str | None = None,
    device: str | None = None,
    copy: builtins.bool | None = None,
    requires_grad: builtins.bool | None = None,
) -> Tensor:
    """obj as a tensor: a Tensor itself when dtype and device already match (copy=True clones it, keeping its
    graph; copy=False raises where a conversion is needed), else as torch.tensor. unigrad cannot alias a numpy
    array's memory, so copy=False with one copies it (as from_numpy); copy=False with a Python sequence raises,
    as torch. requires_grad None keeps a Tensor's, False detaches, True makes the result require grad."""
    if isinstance(obj, Tensor):
        t = as_tensor(obj, dtype, device)
        if copy is False and t is not obj:
            raise ValueError(f"asarray(): can't alias a {obj.dtype} tensor on {obj.device} into {dtype} on {device}")
        t = obj.clone() if copy and t is obj else t
    else:
        if copy is False and not isinstance(obj, np.ndarray) and isinstance(obj, (list, tuple)):
            raise ValueError("asarray(): can't alias arbitrary sequence into a tensor (copy=False)")
        t = tensor(obj, dtype, device)
    if requires_grad is False and t.requires_grad:
        t = t.detach()
    return t.requires_grad_() if requires_grad and not t.requires_grad else t


def fill(input: Tensor, value: Scalar | Tensor) -> Tensor:
    """A new tensor of input's shape and dtype filled with value (a number or a 0-d tensor, whose gradient is the
    sum of the result's)."""
    x = _t(input, "fill")
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError(f"fill(): only supports 0-dimension value tensor but got tensor with {value.ndim} dims")
        return value.cast(x.dtype).reshape((1,) * x.ndim).expand(x.shape)
    return Tensor.full(x.shape, value, dtype=x.dtype, device=x.device)


def vander(x: Tensor, N: int | None = None, increasing: builtins.bool = False) -> Tensor:
    """The Vandermonde matrix (n, N) of 1-D x: columns x^(N-1), ..., x, 1 (increasing=True: 1, x, ..., x^(N-1)),
    as a cumulative product (exact for ints, differentiable); bool and int x give int64, as torch."""
    v = _t(x, "vander", "x")
    if v.ndim != 1:
        raise RuntimeError(f"vander(): x must be a one-dimensional tensor, got shape {v.shape}")
    n = v.shape[0]
    N = n if N is None else N
    if N < 0:
        raise RuntimeError(f"vander(): N must be non-negative, got {N}")
    from unigrad.dtype import least_upper_dtype

    dt = least_upper_dtype(v.dtype, dtypes.int64)
    if N == 0:
        return Tensor.zeros(n, 0, dtype=dt, device=v.device)
    ones_col = Tensor.ones(n, 1, dtype=dt, device=v.device)
    out = ones_col.cat(v.cast(dt).reshape(n, 1).expand(n, N - 1), dim=1).cumprod(1)
    return out if increasing else out.flip(1)


def combinations(input: Tensor, r: int = 2, with_replacement: builtins.bool = False) -> Tensor:
    """The length-r combinations of a 1-D tensor's elements as rows (C, r), in itertools.combinations order
    (combinations_with_replacement with the flag): the index tuples are nonzero() of an r-dim mask i1 < i2 < ...
    (i1 <= i2 <= ...), computed by a kernel, then gathered. r=0 gives an empty 1-D tensor, as torch."""
    x = _t(input, "combinations")
    if x.ndim != 1:
        raise RuntimeError(f"combinations(): expect a 1D vector, but got shape {x.shape}")
    if r < 0:
        raise RuntimeError(f"combinations(): r must be non-negative, got {r}")
    n = x.shape[0]
    if r == 0:
        return x[:0]
    if n == 0:
        return Tensor.zeros(0, r, dtype=x.dtype, device=x.device)
    mask = Tensor.ones(*((n,) * r), dtype=dtypes.bool, device=x.device)
    axes = [Tensor.arange(n, device=x.device).reshape((1,) * k + (n,) + (1,) * (r - k - 1)) for k in builtins.range(r)]
    for a, b in zip(axes, axes[1:]):
        mask = mask & (a <= b if with_replacement else a < b)
    return x.take_rows(mask.nonzero())


def unravel_index(indices: Tensor, shape: int | Sequence[int]) -> tuple[Tensor, ...]:
    """Flat indices into a tensor of `shape` as one coordinate tensor per dim (each indices' shape, int64):
    (indices // stride) % size per dim. Indices are not bounds-checked (torch does not either)."""
    idx = _t(indices, "unravel_index", "indices")
    if not idx.dtype.is_int or idx.dtype is dtypes.bool:
        raise TypeError(f"unravel_index(): expected 'indices' to be integer dtype, but got {idx.dtype}")
    dims = (shape,) if isinstance(shape, builtins.int) else tuple(shape)
    if not builtins.all(isinstance(d, builtins.int) and not isinstance(d, builtins.bool) for d in dims):
        raise TypeError(f"unravel_index(): expected 'shape' to be int or sequence of ints, but got {shape!r}")
    if builtins.any(d < 0 for d in dims):
        raise ValueError(f"unravel_index(): 'shape' cannot have negative values, but got {dims}")
    i64 = idx.cast(dtypes.int64)
    if 0 in dims and idx.numel() > 0:
        raise RuntimeError(f"unravel_index(): indices out of range for the empty shape {dims}")
    strides = [int(np.prod(dims[k + 1 :])) for k in builtins.range(len(dims))]
    return tuple(i64.floor_divide(s).remainder(d) if d else i64 for s, d in zip(strides, dims))


def rsub(input: Tensor, other: Tensor | Scalar, alpha: Scalar = 1) -> Tensor:
    """other - alpha * input (sub with the operands swapped)."""
    return sub(other, _t(input, "rsub"), alpha=alpha)


# ---------------------------------------------------------------- window functions


def _window_ramp(
    fn: str, window_length: int, periodic: builtins.bool, dtype: Any, device: Any
) -> tuple[Tensor, int] | Tensor:
    """The sample positions 0..M-1 of a window (M = window_length + 1 when periodic, the last sample dropped after),
    or the finished window for lengths 0 and 1 (empty, [1.]), as torch."""
    if not isinstance(window_length, builtins.int) or window_length < 0:
        raise RuntimeError(f"{fn} requires non-negative window_length, got window_length={window_length}")
    dt = to_dtype(dtype) if dtype is not None else dtypes.default_float
    if not dt.is_float:
        raise RuntimeError(f"{fn} expects floating point dtypes, got: {dt}")
    if window_length <= 1:
        return Tensor.ones(window_length, dtype=dt, device=device)
    m = window_length + 1 if periodic else window_length
    return Tensor.arange(m, dtype=dt, device=device), m


def _cosine_window(
    fn: str, window_length: int, periodic: builtins.bool, coefs: Sequence[float], dtype: Any, device: Any
) -> Tensor:
    """sum_k coefs[k] * cos(2 pi k n / (M - 1)): the generalized cosine windows (hann, hamming, blackman)."""
    ramp = _window_ramp(fn, window_length, periodic, dtype, device)
    if isinstance(ramp, Tensor):
        return ramp
    n, m = ramp
    phase = n * (2 * math.pi / (m - 1))
    out = builtins.sum(((phase * k).cos() * c for k, c in enumerate(coefs[1:], 1)), n.full_like(coefs[0]))
    return out[:window_length]


def hann_window(
    window_length: int,
    periodic: builtins.bool = True,
    *,
    dtype: DType | str | None = None,
    device: str | None = None,
    requires_grad: builtins.bool = False,
) -> Tensor:
    """0.5 - 0.5 cos(2 pi n / (M - 1))."""
    return _grad(_cosine_window("hann_window", window_length, periodic, (0.5, -0.5), dtype, device), requires_grad)


def hamming_window(
    window_length: int,
    periodic: builtins.bool = True,
    alpha: float = 0.54,
    beta: float = 0.46,
    *,
    dtype: DType | str | None = None,
    device: str | None = None,
    requires_grad: builtins.bool = False,
) -> Tensor:
    """alpha - beta cos(2 pi n / (M - 1))."""
    w = _cosine_window("hamming_window", window_length, periodic, (alpha, -beta), dtype, device)
    return _grad(w, requires_grad)


def blackman_window(
    window_length: int,
    periodic: builtins.bool = True,
    *,
    dtype: DType | str | None = None,
    device: str | None = None,
    requires_grad: builtins.bool = False,
) -> Tensor:
    """0.42 - 0.5 cos(2 pi n / (M - 1)) + 0.08 cos(4 pi n / (M - 1))."""
    w = _cosine_window("blackman_window", window_length, periodic, (0.42, -0.5, 0.08), dtype, device)
    return _grad(w, requires_grad)


def bartlett_window(
    window_length: int,
    periodic: builtins.bool = True,
    *,
    dtype: DType | str | None = None,
    device: str | None = None,
    requires_grad: builtins.bool = False,
) -> Tensor:
    """The triangle 1 - |2n / (M - 1) - 1|."""
    ramp = _window_ramp("bartlett_window", window_length, periodic, dtype, device)
    if isinstance(ramp, Tensor):
        return _grad(ramp, requires_grad)
    n, m = ramp
    return _grad((1 - (n * (2 / (m - 1)) - 1).abs())[:window_length], requires_grad)


def kaiser_window(
    window_length: int,
    periodic: builtins.bool = True,
    beta: float = 12.0,
    *,
    dtype: DType | str | None = None,
    device: str | None = None,
    requires_grad: builtins.bool = False,
) -> Tensor:
    """i0(beta * sqrt(1 - ((n - a) / a)^2)) / i0(beta), a = (M - 1) / 2 (Tensor.i0, the Bessel function)."""
    ramp = _window_ramp("kaiser_window", window_length, periodic, dtype, device)
    if isinstance(ramp, Tensor):
        return _grad(ramp, requires_grad)
    n, m = ramp
    a = (m - 1) / 2
    arg = (1 - ((n - a) / a).square()).maximum(0).sqrt() * beta
    return _grad((arg.i0() / n.full_like(beta).i0())[:window_length], requires_grad)


# torch's top-level functions that call nn.functional: unigrad/torch_nn_functions.py (above nn), resolved by
# unigrad.__getattr__ on first use; listed here so `from unigrad import *` and unigrad.__all__ have them
NN_FUNCTIONS = (
    "alpha_dropout",
    "avg_pool1d",
    "batch_norm",
    "bilinear",
    "binary_cross_entropy_with_logits",
    "celu",
    "channel_shuffle",
    "conv1d",
    "conv2d",
    "conv3d",
    "conv_transpose1d",
    "conv_transpose2d",
    "conv_transpose3d",
    "cosine_embedding_loss",
    "cosine_similarity",
    "dropout",
    "embedding",
    "feature_alpha_dropout",
    "group_norm",
    "hardshrink",
    "hinge_embedding_loss",
    "instance_norm",
    "kl_div",
    "layer_norm",
    "margin_ranking_loss",
    "max_pool1d",
    "max_pool2d",
    "max_pool3d",
    "pairwise_distance",
    "pixel_shuffle",
    "pixel_unshuffle",
    "poisson_nll_loss",
    "prelu",
    "rms_norm",
    "selu",
    "threshold",
    "triplet_margin_loss",
)

# every public function and grad-mode class defined here
__all__ = [
    name
    for name, value in list(globals().items())
    if not name.startswith("_") and callable(value) and getattr(value, "__module__", None) == __name__
]
