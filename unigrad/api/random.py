"""RandomMixin: random numbers from the spec's Threefry-2x32 counter-based generator.

Every draw is THREEFRY(counter, key) on uint64 lanes: the key is the seed, the counters are consecutive
numbers from a running offset, so results are reproducible across devices and independent of kernel
splits. A draw of n values advances the offset by n. Uniform floats take the top mantissa-many bits;
normals use Box-Muller; the rest are compositions of these.
"""

from __future__ import annotations

import math
import os
from typing import TYPE_CHECKING, Any

import numpy as np

from unigrad.dtype import DType, dtypes, to_dtype
from unigrad.helpers import record
from unigrad.ir.ops import Ops
from unigrad.ir.sint import sint, smax
from unigrad.runtime import jit
from unigrad.runtime import realize as rt

if TYPE_CHECKING:
    from unigrad.tensor import Tensor


@record
class _RNGState:
    seed: int = 0
    counter: int = 0


_rng = _RNGState()
_MANTISSA_BITS = {dtypes.float64: 53, dtypes.float32: 24, dtypes.float16: 11, dtypes.bfloat16: 8}


def next_state(n: int, state: _RNGState | None = None) -> np.ndarray:
    """[offset, seed] of the next draw of n values from `state` (the global generator by default); advances its
    offset by n."""
    st = _rng if state is None else state
    offset = st.counter
    st.counter += n
    return np.array([offset, st.seed], dtype=np.uint64)


def new_state(seed: int = 0) -> _RNGState:
    """The draw state of a torch.Generator (unigrad.Generator): its own seed and counter."""
    return _RNGState(int(seed) & 0xFFFFFFFFFFFFFFFF, 0)


class Generator:
    """torch.Generator: `Generator().manual_seed(0)`, a stream of random numbers of its own (seed and counter), apart
    from the global one. The random tensor ops (rand, randn, randint, randperm, normal, multinomial) draw from it
    with `generator=`, and so do the samplers, random_split and a shuffling DataLoader. Each draw advances its
    counter, so successive epochs differ and a reseed repeats them."""

    def __init__(self, device: Any = "cpu") -> None:
        self.device = device
        self.rng_state = new_state(0)

    def manual_seed(self, seed: int) -> Generator:
        """Restart the stream at `seed`; returns the generator (torch's chaining form)."""
        self.rng_state = new_state(int(seed))
        return self

    def initial_seed(self) -> int:
        return self.rng_state.seed

    def seed(self) -> int:
        """Reseed from the OS's entropy; returns the seed."""
        s = int.from_bytes(os.urandom(8), "little") >> 1
        self.manual_seed(s)
        return s


def _state_of(generator: Any) -> _RNGState:
    """The draw state a random op uses: the global generator's, or `generator`'s own (torch's generator=)."""
    if generator is None:
        return _rng
    st = getattr(generator, "rng_state", None)
    if not isinstance(st, _RNGState):
        raise TypeError(f"generator: expected a unigrad.Generator (torch.Generator), got {type(generator).__name__}")
    return st


def _shape(shape: tuple[Any, ...], op: str = "random") -> tuple[sint, ...]:
    """The shape of a draw: ints or symbolic sizes (the flavor's exception for a negative or non-int size)."""
    from unigrad.tensor import creation_shape

    s = tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else tuple(shape)
    return creation_shape(op, s)


def _fans(shape: tuple[int, ...]) -> tuple[int, int]:
    """(fan_in, fan_out) as torch.nn.init computes them: dims 1 and 0 times the receptive field."""
    receptive = math.prod(shape[2:])
    fan_in = shape[1] * receptive if len(shape) > 1 else shape[0]
    return fan_in, shape[0] * receptive


class RandomMixin:
    """Mixed into Tensor. `Tensor.training` (declared on Tensor) gates dropout, as in tinygrad."""

    __slots__ = ()

    @staticmethod
    def manual_seed(seed: int = 0) -> None:
        """Restart the generator: the same seed gives the same sequence of draws."""
        _rng.seed, _rng.counter = int(seed) & 0xFFFFFFFFFFFFFFFF, 0

    @staticmethod
    def _random_bits(n: int, device: str | None, generator: Any = None) -> Tensor:
        """n uint64 words: THREEFRY(offset + i, seed) for i < n, from the global generator or `generator`."""
        from unigrad.tensor import Tensor

        # the offset and the seed are data (tiny buffers), not constants: every draw of a shape reuses one kernel,
        # and a TinyJit replay writes the next offset into the same buffer (the counter is an input)
        st = _state_of(generator)
        state = Tensor(next_state(n, st), device=device)
        if jit.capturing() is not None:
            jit.note_rng(rt.buffer_of(state.uop), n, st)
        counters = Tensor.arange(n, dtype=dtypes.uint64, device=device) + state[:1]  # (1,) slices: no reshapes
        return counters._alu(Ops.THREEFRY, state[1:].expand(n) if n else counters)

    @staticmethod
    def rand(*shape: Any, dtype: DType | str | None = None, device: str | None = None, **kw: Any) -> Tensor:
        """Uniform in [0, 1): the top mantissa+1 bits of each word, scaled by 2**-(mantissa+1). `generator=`
        draws from a unigrad.Generator's own state (as torch's) instead of the global one."""
        s = _shape(shape)
        dt = to_dtype(dtype) if dtype is not None else dtypes.default_float
        bits = _MANTISSA_BITS.get(dt, 24)  # so that the largest draw rounds below 1 in dt
        full = tuple(smax(d) for d in s)  # symbolic dims: draw for their largest size, keep the leading part
        words = RandomMixin._random_bits(math.prod(full), device, kw.get("generator"))
        work = dtypes.float64 if dt is dtypes.float64 else dtypes.float32
        out = (words >> (64 - bits)).cast(work) * (2.0**-bits)
        t = out.cast(dt).reshape(full)
        if full != s:
            t = t.shrink(tuple((0, d) for d in s))
        return t.requires_grad_(kw["requires_grad"]) if kw.get("requires_grad") else t

    @staticmethod
    def uniform(*shape: Any, low: float = 0.0, high: float = 1.0, dtype: Any = None, **kw: Any) -> Tensor:
        t = RandomMixin.rand(*shape, dtype=dtype, device=kw.get("device"), generator=kw.get("generator"))
        t = t * (high - low) + low
        return t.requires_grad_(kw["requires_grad"]) if kw.get("requires_grad") else t

    @staticmethod
    def randn(*shape: Any, dtype: DType | str | None = None, device: str | None = None, **kw: Any) -> Tensor:
        """Standard normal by Box-Muller: sqrt(-2 ln(1 - u1)) * cos(2 pi u2)."""
        s = _shape(shape)
        u = RandomMixin.rand(2, *s, dtype=dtypes.float32, device=device, generator=kw.get("generator"))
        u1, u2 = u[0], u[1]
        z = ((1 - u1).log() * -2).sqrt() * (u2 * (2 * math.pi)).cos()
        t = z.cast(to_dtype(dtype) if dtype is not None else dtypes.default_float)
        return t.requires_grad_(kw["requires_grad"]) if kw.get("requires_grad") else t

    @staticmethod
    def normal(*shape: Any, mean: float = 0.0, std: float = 1.0, dtype: Any = None, **kw: Any) -> Tensor:
        t = RandomMixin.randn(*shape, dtype=dtype, device=kw.get("device"), generator=kw.get("generator")) * std + mean
        return t.requires_grad_(kw["requires_grad"]) if kw.get("requires_grad") else t

    @staticmethod
    def randint(
        *shape: Any, low: int = 0, high: int = 10, dtype: Any = None, device: str | None = None, generator: Any = None
    ) -> Tensor:
        """Integers uniform in [low, high) from 53-bit uniforms (bias below 2**-53 * (high - low))."""
        if high <= low:
            raise RuntimeError(f"randint: need low < high, got [{low}, {high})")
        u = RandomMixin.rand(*shape, dtype=dtypes.float64, device=device, generator=generator)
        return (u * (high - low)).floor().cast(to_dtype(dtype) if dtype is not None else dtypes.default_int) + low

    @staticmethod
    def kaiming_uniform(*shape: Any, a: float = 0.01, **kw: Any) -> Tensor:
        """torch.nn.init.kaiming_uniform_ (leaky_relu gain): U(-b, b), b = sqrt(6 / ((1 + a^2) fan_in))."""
        bound = math.sqrt(6 / ((1 + a * a) * _fans(_shape(shape))[0]))
        return RandomMixin.uniform(*shape, low=-bound, high=bound, **kw)

    @staticmethod
    def kaiming_normal(*shape: Any, a: float = 0.01, **kw: Any) -> Tensor:
        std = math.sqrt(2 / ((1 + a * a) * _fans(_shape(shape))[0]))
        return RandomMixin.normal(*shape, mean=0.0, std=std, **kw)

    @staticmethod
    def scaled_uniform(*shape: Any, **kw: Any) -> Tensor:
        """U(-1, 1) scaled by 1 / sqrt(numel) (tinygrad's scaled_uniform)."""
        n = math.prod(_shape(shape))
        return RandomMixin.uniform(*shape, low=-1.0, high=1.0, **kw) * (n**-0.5 if n else 1.0)

    @staticmethod
    def glorot_uniform(*shape: Any, **kw: Any) -> Tensor:
        """Xavier uniform: U(-b, b), b = sqrt(6 / (fan_in + fan_out))."""
        fan_in, fan_out = _fans(_shape(shape))
        bound = math.sqrt(6 / (fan_in + fan_out))
        return RandomMixin.uniform(*shape, low=-bound, high=bound, **kw)

    @staticmethod
    def randperm(n: int, device: str | None = None, dtype: Any = None, generator: Any = None) -> Tensor:
        """A random permutation of range(n): the order that sorts n uniforms."""
        order = RandomMixin.rand(n, dtype=dtypes.float64, device=device, generator=generator).argsort()
        return order.cast(to_dtype(dtype)) if dtype is not None else order

    def rand_like(self: Tensor, dtype: Any = None) -> Tensor:
        return RandomMixin.rand(*self.shape, dtype=dtype or self.dtype, device=self.device)

    def randn_like(self: Tensor, dtype: Any = None) -> Tensor:
        return RandomMixin.randn(*self.shape, dtype=dtype or self.dtype, device=self.device)

    def multinomial(self: Tensor, num_samples: int = 1, replacement: bool = False, *, generator: Any = None) -> Tensor:
        """Draw category indices (dtypes.default_int) by the rows' weights, as exponential races: category i arrives
        at E_i / w_i, E_i exponential (-log2 of a uniform in (0, 1]); the first to arrive is a draw by the weights,
        the first num_samples of one race a draw without replacement, and with replacement each sample runs a race
        of its own. Arrivals are ranked by log2(w_i) - log2(E_i), largest first (no overflow for tiny weights); a
        weight of zero (or below, or NaN) never arrives before a positive one. The first arrival is one reduce kernel
        (an order key packed with its position), more come from topk's plans. Torch's errors for the shape and the
        sample count are raised here; its checks of the values (negative, inf or NaN weights, a zero sum) are not
        made (each would be a reduce and a read back per call): a row of zeros gives its first positions."""
        from unigrad.api.movement import _first_k_indices

        if self.ndim not in (1, 2):
            raise RuntimeError("prob_dist must be 1 or 2 dim")
        if num_samples <= 0:
            raise RuntimeError("cannot sample n_sample <= 0 samples")
        work = dtypes.float64 if self.dtype is dtypes.float64 else dtypes.float32  # 16-bit floats: coarse draws
        w = (self.unsqueeze(0) if self.ndim == 1 else self).cast(work)  # [rows, n]
        rows, n = w.shape
        if not replacement and num_samples > n:
            raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
        if n == 0:
            raise RuntimeError("multinomial: cannot sample from a distribution with no categories")
        races = num_samples if replacement else 1
        u = RandomMixin.rand(rows, races, n, dtype=work, device=self.device, generator=generator)
        early = w.log2().unsqueeze(1) - (-(1 - u).log2()).log2()  # [rows, races, n]: -log2(arrival time)
        early = (w > 0).unsqueeze(1).where(early, -math.inf)
        out = _first_k_indices(early, 1 if replacement else num_samples, True).reshape(rows, num_samples)
        out = out.cast(dtypes.default_int)
        return out.squeeze(0) if self.ndim == 1 else out

    def dropout(self: Tensor, p: float = 0.5) -> Tensor:
        """Zero each element with probability p and scale the rest by 1/(1-p), when Tensor.training is set."""
        if not 0 <= p <= 1:
            raise ValueError(f"dropout: p must be in [0, 1], got {p}")
        if not type(self).training or p == 0:
            return self
        if p == 1:
            return self * 0
        keep = RandomMixin.rand(*self.shape, device=self.device) >= p
        return keep.where(self, 0) * (1 / (1 - p))
