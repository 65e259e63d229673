"""InplaceMixin: torch's in-place Tensor methods (x.add_(y), w.uniform_(-b, b), x.t_(), ...).

Four kinds, each written back through the core's in-place rule (Tensor._inplace: the new value must be castable to
self's dtype and have self's shape, a leaf that requires grad refuses outside no_grad, and the write lands in self's
buffer at once, so views of the buffer see it):

  value ops     name_(...) is self.name(...) written back into self; generated from the table _VALUE_OPS
  random fills  uniform_, normal_, random_, bernoulli_, exponential_, log_normal_, cauchy_, geometric_: a new draw
                of self's shape and dtype (from the global generator, Tensor.manual_seed) written back
  view ops      t_, transpose_, swapaxes_, swapdims_, squeeze_, unsqueeze_: self becomes the view (no data moves)
  others        copy_, detach_, fill_diagonal_, index_put_/index_put, put_/put, take

Every value is computed by the same Tensor ops as the out-of-place method: only the write-back differs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from unigrad.dtype import dtypes

if TYPE_CHECKING:
    from unigrad.tensor import ConstType, Tensor

# name_ = self.name(*args, **kwargs) written back into self (torch's in-place twin of each out-of-place method)
_VALUE_OPS = (
    # arithmetic and comparisons (a comparison writes 1/0 in self's dtype, as torch)
    "add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide", "floor_divide", "remainder", "fmod",
    "pow", "neg", "negative", "reciprocal", "square", "addcmul", "addcdiv", "lerp", "hypot", "atan2", "arctan2",
    "copysign", "xlogy", "heaviside", "addmm", "addmv", "addr", "baddbmm",
    "eq", "ne", "not_equal", "lt", "less", "le", "less_equal", "gt", "greater", "ge", "greater_equal",
    # elementwise functions
    "abs", "absolute", "sign", "sgn", "sqrt", "rsqrt", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p",
    "sin", "cos", "tan", "asin", "acos", "atan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "asinh",
    "acosh", "atanh", "arcsinh", "arccosh", "arctanh", "sigmoid", "relu", "logit", "erf", "erfc", "sinc",
    "floor", "ceil", "round", "trunc", "fix", "frac", "deg2rad", "rad2deg", "nan_to_num", "clamp", "clip",
    "clamp_min", "clamp_max",
    # bitwise and logical
    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "bitwise_left_shift", "bitwise_right_shift",
    "logical_and", "logical_or", "logical_xor", "logical_not",
    # scans, triangles, indexing
    "cumsum", "cumprod", "tril", "triu", "masked_fill", "masked_scatter", "index_add", "index_copy", "index_fill",
    "scatter", "scatter_add", "scatter_reduce",
)  # fmt: skip


def _value_op(name: str) -> Callable[..., Tensor]:
    def method(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        return self._inplace(lambda t, _: getattr(t, name)(*args, **kwargs), None, f"{name}_")

    method.__name__ = method.__qualname__ = f"{name}_"
    method.__doc__ = f"In place (torch.Tensor.{name}_): self.{name}(...) written back into self, in self's dtype."
    return method


def _args(op: str, args: tuple[Any, ...], kwargs: dict[str, Any], defaults: dict[str, Any]) -> list[Any]:
    """torch's positional-or-keyword parameters (names such as `from` are Python keywords: passed in **kwargs)."""
    if len(args) > len(defaults):
        raise TypeError(f"{op}: takes at most {len(defaults)} arguments ({', '.join(defaults)}), got {len(args)}")
    unknown = sorted(set(kwargs) - set(defaults))
    if unknown:
        raise TypeError(f"{op}: unexpected keyword argument(s) {unknown}; it takes {list(defaults)}")
    values = dict(defaults, **dict(zip(defaults, args)))
    for k in list(defaults)[: len(args)]:
        if k in kwargs:
            raise TypeError(f"{op}: got multiple values for argument {k!r}")
    values.update(kwargs)
    return list(values.values())


class InplaceMixin:
    """Mixed into Tensor: torch's in-place methods beyond the operators (+=, ...) and fill_/zero_."""

    __slots__ = ()

    # ------------------------------------------------------------ random fills
    def _fill_random(self: Tensor, op: str, draw: Callable[[], Tensor], floats_only: bool = True) -> Tensor:
        if floats_only and not self.dtype.is_float:
            raise RuntimeError(f"{op}: expected a floating point tensor, got {self.dtype.name}")
        return self._inplace(lambda t, _: draw(), None, op)

    def uniform_(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        """In place: uniform in [from, to) (torch.Tensor.uniform_(from=0, to=1))."""
        low, high = _args("uniform_", args, kwargs, {"from": 0.0, "to": 1.0})
        if low > high:
            raise RuntimeError(f"uniform_: expects to return a [from, to) range, but found from={low} > to={high}")
        return self._fill_random(
            "uniform_",
            lambda: type(self).uniform(*self.shape, low=low, high=high, dtype=self.dtype, device=self.device),
        )

    def normal_(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        """In place: normal with mean and std (torch.Tensor.normal_(mean=0, std=1))."""
        mean, std = _args("normal_", args, kwargs, {"mean": 0.0, "std": 1.0})
        if std < 0:
            raise RuntimeError(f"normal_: expects std >= 0.0, but found std {std}")
        return self._fill_random(
            "normal_", lambda: type(self).normal(*self.shape, mean=mean, std=std, dtype=self.dtype, device=self.device)
        )

    def log_normal_(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        """In place: exp of a normal(mean, std) draw (torch.Tensor.log_normal_(mean=1, std=2))."""
        mean, std = _args("log_normal_", args, kwargs, {"mean": 1.0, "std": 2.0})
        if std <= 0:
            raise RuntimeError(f"log_normal_: expects std > 0.0, but found std={std}")
        return self._fill_random("log_normal_", lambda: (self.randn_like() * std + mean).exp())

    def exponential_(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        """In place: exponential with rate lambd, -log(1 - u) / lambd (torch.Tensor.exponential_(lambd=1))."""
        (lambd,) = _args("exponential_", args, kwargs, {"lambd": 1.0})
        if lambd <= 0:
            raise RuntimeError(f"exponential_: expects lambd > 0.0, but found lambd={lambd}")
        return self._fill_random("exponential_", lambda: -(1 - self.rand_like()).log() / lambd)

    def cauchy_(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        """In place: Cauchy, median + sigma * tan(pi * (u - 1/2)) (torch.Tensor.cauchy_(median=0, sigma=1))."""
        median, sigma = _args("cauchy_", args, kwargs, {"median": 0.0, "sigma": 1.0})
        if sigma <= 0:
            raise RuntimeError(f"cauchy_: expects sigma > 0.0, but found sigma={sigma}")
        return self._fill_random("cauchy_", lambda: ((self.rand_like() - 0.5) * math.pi).tan() * sigma + median)

    def geometric_(self: Tensor, p: float) -> Tensor:
        """In place: the number of Bernoulli(p) trials to the first success, ceil(log(1 - u) / log(1 - p)) >= 1."""
        if not 0 < p < 1:
            raise RuntimeError(f"geometric_: expects p to be in (0, 1), but got p={p}")

        def draw() -> Tensor:
            u = self.rand_like(dtypes.float32)
            return ((1 - u).log() / math.log1p(-p)).ceil().maximum(1)

        return self._fill_random("geometric_", draw, floats_only=False)

    def bernoulli_(self: Tensor, p: Tensor | float = 0.5) -> Tensor:
        """In place: 1 with probability p (a float, or a tensor of probabilities broadcast to self), else 0."""
        from unigrad.tensor import Tensor

        if not isinstance(p, Tensor) and not 0 <= p <= 1:
            raise RuntimeError(f"bernoulli_: expects p to be in [0, 1], but got p={p}")
        return self._fill_random("bernoulli_", lambda: self.rand_like(dtypes.float32) < p, floats_only=False)

    def bernoulli(self: Tensor, p: float | None = None) -> Tensor:
        """A new tensor of 0/1 in self's dtype: 1 with probability self (or p when given), as torch.bernoulli."""
        probs = self if p is None else p
        if not self.dtype.is_float:
            raise RuntimeError(f"bernoulli: expected a floating point tensor of probabilities, got {self.dtype.name}")
        return (self.rand_like() < probs).cast(self.dtype)

    def random_(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        """In place: integers uniform in [from, to - 1] (torch.Tensor.random_(from=0, to=None)); random_(to) is
        [0, to - 1]. Without `to`: [0, 2**mantissa - 1] for floats, the dtype's non-negative range for ints."""
        if len(args) == 1 and not kwargs:
            args = (0, args[0])
        low, high = _args("random_", args, kwargs, {"from": 0, "to": None})
        if high is None:
            if self.dtype is dtypes.bool:
                bits = 1
            elif self.dtype.is_float:
                bits = {dtypes.float64: 53, dtypes.float32: 24, dtypes.float16: 11, dtypes.bfloat16: 8}[self.dtype]
            else:
                bits = self.dtype.itemsize * 8 - (0 if self.dtype.is_unsigned else 1)
            high = low + 2**bits
        if high <= low:
            raise RuntimeError(f"random_: expects 'from' to be less than 'to', but got from={low} >= to={high}")

        def draw() -> Tensor:
            return type(self).randint(*self.shape, low=low, high=high, device=self.device).cast(self.dtype)

        return self._fill_random("random_", draw, floats_only=False)

    # ------------------------------------------------------------ views in place
    def _view_inplace(self: Tensor, view: Tensor, op: str) -> Tensor:
        """self becomes `view` of itself (torch's in-place view ops change the tensor's shape, not its data)."""
        from unigrad.tensor import Tensor

        if self.requires_grad and self.is_leaf and not Tensor.no_grad:
            raise RuntimeError(f"{op}: a leaf Variable that requires grad is being used in an in-place operation.")
        self.uop = view.uop
        return self

    def t_(self: Tensor) -> Tensor:
        """In place: t()."""
        return self._view_inplace(self.t(), "t_")

    def transpose_(self: Tensor, dim0: int, dim1: int) -> Tensor:
        """In place: transpose(dim0, dim1)."""
        return self._view_inplace(self.transpose(dim0, dim1), "transpose_")

    def swapaxes_(self: Tensor, axis0: int, axis1: int) -> Tensor:
        """In place: swapaxes(axis0, axis1)."""
        return self._view_inplace(self.swapaxes(axis0, axis1), "swapaxes_")

    def swapdims(self: Tensor, dim0: int, dim1: int) -> Tensor:
        """torch.swapdims: transpose(dim0, dim1)."""
        return self.transpose(dim0, dim1)

    def swapdims_(self: Tensor, dim0: int, dim1: int) -> Tensor:
        """In place: swapdims(dim0, dim1)."""
        return self._view_inplace(self.transpose(dim0, dim1), "swapdims_")

    def squeeze_(self: Tensor, dim: int | Sequence[int] | None = None) -> Tensor:
        """In place: squeeze(dim)."""
        return self._view_inplace(self.squeeze(dim), "squeeze_")

    def unsqueeze_(self: Tensor, dim: int) -> Tensor:
        """In place: unsqueeze(dim)."""
        return self._view_inplace(self.unsqueeze(dim), "unsqueeze_")

    # ------------------------------------------------------------ others
    def copy_(self: Tensor, src: Tensor, non_blocking: bool = False) -> Tensor:
        """In place: src's values (broadcast to self's shape, moved to self's device, cast to self's dtype whatever
        the kinds: a float source truncates into an int tensor, as in torch). Gradients flow to src."""
        from unigrad.tensor import Tensor

        if not isinstance(src, Tensor):
            raise TypeError(f"copy_: src must be a Tensor, got {type(src).__name__}")
        if src.device != self.device:
            src = src.to(self.device)
        try:
            value = src.expand(self.shape) if src.shape != self.shape else src
        except (RuntimeError, ValueError) as e:
            raise RuntimeError(f"copy_: the source of shape {src.shape} does not broadcast to {self.shape}") from e
        return self._inplace(lambda t, v: v.cast(t.dtype), value, "copy_")

    def detach_(self: Tensor) -> Tensor:
        """In place: this tensor leaves the graph (a leaf that does not require grad)."""
        self.uop = self.detach().uop
        self._requires_grad = False
        return self

    def fill_diagonal_(self: Tensor, fill_value: ConstType, wrap: bool = False) -> Tensor:
        """In place: the main diagonal (every index equal) set to fill_value. A tensor of more than 2 dims needs all
        dims equal. wrap (2-D, more rows than columns): the diagonal restarts N + 1 rows down, as torch."""
        from unigrad.tensor import Tensor

        if self.ndim < 2:
            raise RuntimeError(f"fill_diagonal_: dimensions must be larger than 1, got shape {self.shape}")
        if self.ndim > 2 and len(set(self.shape)) != 1:
            raise RuntimeError(f"fill_diagonal_: all dimensions of input must be of equal length, got {self.shape}")
        strides = [math.prod(self.shape[i + 1 :]) for i in range(self.ndim)]
        step, numel = sum(strides), self.numel()  # the flat distance between diagonal elements
        limit = numel if wrap and self.ndim == 2 else min(self.shape) * step
        flat = Tensor.arange(numel, device=self.device)
        mask = ((flat % step).eq(0) & (flat < limit)).reshape(self.shape)
        return self._inplace(lambda t, _: t.masked_fill(mask, fill_value), None, "fill_diagonal_")

    def index_put(
        self: Tensor, indices: Sequence[Tensor], values: Tensor | ConstType, accumulate: bool = False
    ) -> Tensor:
        """Out of place torch.index_put: self[indices] = values (accumulate: += with repeated positions summed).
        indices: a tuple of int tensors (broadcast together) for the leading dims, or one bool mask."""
        from unigrad.api.movement import _check_index_range
        from unigrad.tensor import Tensor, _broadcast_shape

        indices = tuple(indices)
        if not indices or len(indices) > self.ndim:
            raise IndexError(f"index_put: expected 1 to {self.ndim} index tensors, got {len(indices)}")
        if not accumulate:
            out = self.clone()
            out[indices] = values
            return out
        if any(not isinstance(i, Tensor) or i.dtype is dtypes.bool or not i.dtype.is_int for i in indices):
            if len(indices) == 1 and isinstance(indices[0], Tensor) and indices[0].dtype is dtypes.bool:
                out = self.clone()  # a mask names each position once: accumulate is an add there
                out[indices] = self[indices] + values
                return out
            raise IndexError("index_put: with accumulate=True the indices must be int tensors (or a single bool mask)")
        lead, rest = self.shape[: len(indices)], self.shape[len(indices) :]
        shape = _broadcast_shape("index_put", *(i.shape for i in indices))
        pos = Tensor.zeros(*shape, dtype=dtypes.int64, device=self.device)
        for k, (i, n) in enumerate(zip(indices, lead)):
            _check_index_range("index_put", i, n, k)
            pos = pos * n + (i < 0).where(i + n, i).cast(dtypes.int64)
        v = values if isinstance(values, Tensor) else Tensor(values, dtype=self.dtype, device=self.device)
        v = v.cast(self.dtype).expand(*shape, *rest).reshape(-1, *rest)
        flat = self.reshape(math.prod(lead), *rest)
        return flat.index_add(0, pos.reshape(-1), v).reshape(self.shape)

    def index_put_(
        self: Tensor, indices: Sequence[Tensor], values: Tensor | ConstType, accumulate: bool = False
    ) -> Tensor:
        """In place: index_put."""
        return self._inplace(lambda t, _: t.index_put(indices, values, accumulate), None, "index_put_")

    def take(self: Tensor, index: Tensor) -> Tensor:
        """torch.take: self flattened, indexed by `index` (any shape; negative counts from the end)."""
        from unigrad.api.movement import _check_index_range

        if not index.dtype.is_int or index.dtype is dtypes.bool:
            raise RuntimeError(f"take: expected a long (int64) tensor for index, got {index.dtype.name}")
        if self.numel() == 0 and index.numel():
            raise IndexError("take: tried to take from an empty tensor")
        _check_index_range("take", index, self.numel())
        return self.reshape(-1).take_rows(index)

    def put(self: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
        """torch.put: source's elements written at the flat positions `index` of self (accumulate: added)."""
        if index.numel() != source.numel():
            raise RuntimeError(
                f"put: expected source and index to have the same number of elements, got {source.numel()} and "
                f"{index.numel()}"
            )
        out = self.reshape(-1).index_put((index.reshape(-1),), source.reshape(-1), accumulate)
        return out.reshape(self.shape)

    def put_(self: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
        """In place: put."""
        return self._inplace(lambda t, _: t.put(index, source, accumulate), None, "put_")

    def float_power_(self: Tensor, exponent: Tensor | ConstType) -> Tensor:
        """In place: float_power; torch requires a float64 base (the result's dtype)."""
        if self.dtype is not dtypes.float64:
            raise RuntimeError(
                f"float_power_: the base given to float_power_ has dtype {self.dtype.name} but the operation's "
                "result requires dtype float64"
            )
        return self._inplace(lambda t, _: t.float_power(exponent), None, "float_power_")


for _name in _VALUE_OPS:
    setattr(InplaceMixin, f"{_name}_", _value_op(_name))
