"""The two flavors of one Tensor: tinygrad's semantics (the native API) and PyTorch's (the torch facade).

unigrad has one Tensor class. Where tinygrad and PyTorch answer the same call differently, the difference is a
field of `Flavor` below, and the op reads `current()`; nothing else in the package tests which flavor is on.

The flavor is the knob `FLAVOR` (config.py): `tinygrad` by default; `import unigrad.torch` (the facade a PyTorch
program imports as `torch`) switches the process to `torch`; `Context(FLAVOR="torch")` scopes it, and the
environment variable FLAVOR sets the start value.

| difference                        | tinygrad (native)                       | torch (facade)                          |
|-----------------------------------|-----------------------------------------|-----------------------------------------|
| default integer dtype             | int32 (arange, Tensor([1, 2]), indices) | int64                                   |
| integer sum/prod/cumsum dtype     | at least int32 (uint32 for unsigned)    | int64                                   |
| gradients of unmarked tensors     | backward() fills .grad of every leaf it | only tensors with requires_grad=True    |
|                                   | reaches not marked requires_grad=False  | (and a module's parameters)             |
| negative sizes in creation        | ValueError                              | RuntimeError                            |
| a layer's parameters              | undecided: requires_grad None (read as  | requires_grad=True from birth, as       |
|                                   | True) until an optimizer or backward()  | nn.Parameter                            |
|                                   | reaching them turns them on             |                                         |
| which tensor attributes of an     | every float leaf not marked             | only nn.Parameter and register_buffer;  |
| nn.Module are its state           | requires_grad=False (attribute walk)    | other tensors are plain attributes      |
| optimizer.step() outside training | refused (Tensor.training must be set:   | steps (torch has no global train mode)  |
|                                   | Tensor.train(), Context(TRAINING=1))    |                                         |
| reshape to another size, repeat   | ValueError                              | RuntimeError                            |
| with fewer repeats than dims      |                                         |                                         |
| a non-int size (zeros(2.5),       | ValueError                              | TypeError (torch's argument parser)     |
| linspace(0, 1, 2.5))              |                                         |                                         |
| a 0-d int Tensor as a slice bound | TypeError                               | accepted (its value)                    |
| an unknown dtype name (sum(dtype= | AttributeError (no such dtypes member)  | TypeError                               |
| 'floatx'))                        |                                         |                                         |
| held lazy tensors a realize       | fused into it (not computed on their    | computed with it, once: later graphs    |
| passes through                    | own; computed again when realized)      | read their buffers                      |

(The per-field comments below are the reference; README's "Two flavors" section shows examples.) Not a field yet:
tinygrad's lazy tensor reads buffers when realized (later writes show); both flavors keep torch's values-at-making
(tensor.py's _stale_readers), which is also what orders a read before a later write of the same buffer in one
realize (`r.assign(r * n); n.assign(n + 1)` in a loop).
"""

from __future__ import annotations

from unigrad import config
from unigrad.dtype import DType, dtypes
from unigrad.helpers import record


@record(frozen=True)
class Flavor:
    name: str
    # dtype of integers made without one: Tensor.arange(10), Tensor([1, 2]), full(s, 4), argmax/argmin, the indices
    # of sort/argsort/topk/cummax/cummin/max_pool, nonzero, one_hot, randint, randperm
    default_int: DType
    # smallest accumulator of an integer (or bool) sum, prod or cumsum: tinygrad keeps int32 (uint32 unsigned),
    # torch widens every integer to int64
    int_acc_signed: DType
    int_acc_unsigned: DType
    # backward() fills .grad of tensors the user never marked (requires_grad None) that its graph reads
    grad_unmarked_leaves: bool
    # a parameter (a layer's weight, a tensor assigned to a module's parameter name) made without requires_grad
    # requires grad from birth, as torch's nn.Parameter; tinygrad's layers leave it None (undecided, read as True)
    # until an optimizer takes it or a backward() reaches it
    parameters_require_grad: bool
    # an nn.Module's float leaf tensor attribute not marked requires_grad=False is a parameter (others buffers), as
    # tinygrad's attribute walk finds state; torch registers only nn.Parameter (and register_buffer): `self.mask = m`
    # is a plain attribute, in neither parameters() nor state_dict()
    attribute_parameters: bool
    # exception type for a negative size in a creation function (zeros(-3), empty, rand, eye, full, ...)
    negative_size_error: type[Exception]
    # an optimizer's step()/schedule_step() refuses to run unless Tensor.training is set (tinygrad's assert: a step
    # taken by mistake in evaluation code); torch has no global train mode to check
    step_needs_training: bool
    # exception type for a shape argument the tensor cannot take: reshape to another element count (reshape([]) of a
    # non-scalar), repeat with fewer repeats than the tensor has dims
    shape_arg_error: type[Exception]
    # exception type for a size that is not an int in a creation function (zeros(2.5), linspace's steps=2.5)
    non_int_size_error: type[Exception]
    # x[a:b] takes 0-d integer Tensors as a and b (their values, read back); tinygrad raises TypeError
    tensor_slice_bounds: bool
    # exception type for a dtype name that names no dtype (sum(dtype='floatx')): tinygrad looks it up as an attribute
    unknown_dtype_error: type[Exception]
    # realizing a tensor also computes the live tensors (held by the program) its graph passes through, so each
    # value is computed once, as torch's eager ops do (a sampling loop's `idx = cat(idx, nxt)` read by every step);
    # tinygrad computes what realize names and fuses the rest into it (computing a held one again if it is realized)
    compute_held_tensors: bool


TINYGRAD = Flavor(
    name="tinygrad",
    default_int=dtypes.int32,
    int_acc_signed=dtypes.int32,
    int_acc_unsigned=dtypes.uint32,
    grad_unmarked_leaves=True,
    parameters_require_grad=False,
    attribute_parameters=True,
    negative_size_error=ValueError,
    step_needs_training=True,
    shape_arg_error=ValueError,
    non_int_size_error=ValueError,
    tensor_slice_bounds=False,
    unknown_dtype_error=AttributeError,
    compute_held_tensors=False,
)
TORCH = Flavor(
    name="torch",
    default_int=dtypes.int64,
    int_acc_signed=dtypes.int64,
    int_acc_unsigned=dtypes.int64,
    grad_unmarked_leaves=False,
    parameters_require_grad=True,
    attribute_parameters=False,
    negative_size_error=RuntimeError,
    step_needs_training=False,
    shape_arg_error=RuntimeError,
    non_int_size_error=TypeError,
    tensor_slice_bounds=True,
    unknown_dtype_error=TypeError,
    compute_held_tensors=True,
)
FLAVORS: dict[str, Flavor] = {f.name: f for f in (TINYGRAD, TORCH)}


def current() -> Flavor:
    """The flavor in effect (the FLAVOR knob)."""
    f = FLAVORS.get(config.FLAVOR.value)
    if f is None:
        raise ValueError(f"FLAVOR={config.FLAVOR.value!r}: expected one of {sorted(FLAVORS)}")
    return f


def set_flavor(name: str) -> None:
    """Switch the process to a flavor ('tinygrad' or 'torch'); `Context(FLAVOR=...)` scopes it instead."""
    if name not in FLAVORS:
        raise ValueError(f"set_flavor: unknown flavor {name!r}; expected one of {sorted(FLAVORS)}")
    config.FLAVOR.value = name


def acc_dtype(dt: DType) -> DType:
    """The dtype a sum/prod/cumsum/cumprod of `dt` gives without dtype=: dt for floats; an integer or bool widened
    to the flavor's accumulator, never narrowed (an int64 sum stays int64)."""
    if dt.is_float:
        return dt
    acc = current().int_acc_unsigned if dt.is_unsigned else current().int_acc_signed
    return dt if dt.kind == acc.kind and dt.itemsize >= acc.itemsize else acc
