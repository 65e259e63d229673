"""CreationMixin: see unigrad/api/__init__.py. Methods use only core Tensor methods (self is a Tensor).

Constructors beyond the core's full/zeros/ones/empty/arange and full_like/zeros_like/ones_like. Random
numbers (manual_seed, rand, randn, randint, uniform, normal, kaiming_*, glorot_uniform, randperm,
multinomial, dropout, rand_like) wait for the THREEFRY primitive in the kernel pipeline.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from unigrad import flavor
from unigrad.dtype import ConstType, DType, dtypes, to_dtype

if TYPE_CHECKING:
    from unigrad.tensor import Tensor


class CreationMixin:
    """Mixed into Tensor."""

    __slots__ = ()

    @staticmethod
    def linspace(
        start: int | float,
        end: int | float,
        steps: int,
        dtype: DType | str | None = None,
        device: str | None = None,
        requires_grad: bool | None = None,
    ) -> Tensor:
        """`steps` evenly spaced values from start to end inclusive, computed as torch does: the first half
        counts up from start, the second half down from end (so both ends are exact). Float dtypes compute in
        their own precision (float32 for half types), integer dtypes in float64 and then truncate."""
        from unigrad.tensor import Tensor

        if not isinstance(steps, int):
            raise flavor.current().non_int_size_error(f"linspace: steps must be an int, got {steps!r}")
        if steps < 0:
            raise flavor.current().negative_size_error(f"linspace: number of steps must be non-negative, got {steps}")
        dt = to_dtype(dtype) if dtype is not None else dtypes.default_float
        if steps <= 1:
            return Tensor.full((steps,), start, dtype=dt, device=device, requires_grad=requires_grad)
        compute = dt if dt in (dtypes.float32, dtypes.float64) else dtypes.float64 if dt.is_int else dtypes.float32
        step = (end - start) / (steps - 1)
        i = Tensor.arange(steps, device=device).cast(compute)
        up = i * step + start
        down = (steps - 1 - i) * -step + end
        t = (i < steps // 2).where(up, down).cast(dt)
        return t.requires_grad_() if requires_grad else t

    @staticmethod
    def eye(
        n: int,
        m: int | None = None,
        dtype: DType | str | None = None,
        device: str | None = None,
        requires_grad: bool | None = None,
    ) -> Tensor:
        """The n x m identity: ones on the diagonal, built from movement ops alone (a column of ones padded
        with n zeros per row, read as (n, n)), so it folds into whatever uses it."""
        from unigrad.tensor import Tensor, creation_shape

        n, cols = creation_shape("eye", (n, n if m is None else m))
        dt = to_dtype(dtype) if dtype is not None else dtypes.default_float
        k = min(n, cols)
        ones = Tensor.ones(k, dtype=dt, device=device)
        t = ones.diag().pad(((0, n - k), (0, cols - k)))
        return t.requires_grad_() if requires_grad else t

    def empty_like(self: Tensor, dtype: DType | str | None = None, device: str | None = None) -> Tensor:
        """An uninitialized tensor of self's shape (and dtype/device unless given)."""
        from unigrad.tensor import Tensor

        return Tensor.empty(self.shape, dtype=dtype or self.dtype, device=device or self.device)

    def clone(self: Tensor) -> Tensor:
        """A copy in a buffer of its own, made now (as torch.clone): a later in-place write to either leaves the
        other. A tensor that requires grad is copied through a LOAD, so gradients flow back through the clone."""
        from unigrad.tensor import Tensor

        if self.requires_grad:
            return self.contiguous()
        return Tensor.empty(self.shape, dtype=self.dtype, device=self.device).assign(self).realize()

    def new_full(
        self: Tensor,
        size: Sequence[int],
        fill_value: ConstType,
        dtype: DType | str | None = None,
        device: str | None = None,
    ) -> Tensor:
        """torch's Tensor.new_*: a new tensor with self's dtype and device unless given."""
        from unigrad.tensor import Tensor

        return Tensor.full(tuple(size), fill_value, dtype=dtype or self.dtype, device=device or self.device)

    def new_zeros(self: Tensor, *size: Any, dtype: DType | str | None = None, device: str | None = None) -> Tensor:
        return self.new_full(_size_arg(size), 0, dtype, device)

    def new_ones(self: Tensor, *size: Any, dtype: DType | str | None = None, device: str | None = None) -> Tensor:
        return self.new_full(_size_arg(size), 1, dtype, device)

    def new_empty(self: Tensor, *size: Any, dtype: DType | str | None = None, device: str | None = None) -> Tensor:
        from unigrad.tensor import Tensor

        return Tensor.empty(_size_arg(size), dtype=dtype or self.dtype, device=device or self.device)

    def new_tensor(self: Tensor, data: Any, dtype: DType | str | None = None, device: str | None = None) -> Tensor:
        from unigrad.tensor import Tensor

        return Tensor(data, dtype=dtype or self.dtype, device=device or self.device)


def _size_arg(size: tuple) -> tuple[int, ...]:
    return tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else tuple(size)
