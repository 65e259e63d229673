"""unigrad.nn.module: torch.nn.Module's interface over plain attributes, and Parameter (torch's containers
are in unigrad.nn.containers).

A Module keeps its parameters, buffers and submodules as ordinary instance attributes, so the attribute walk
of unigrad.nn.state (get_state_dict / get_parameters / load_state_dict) sees the same tensors under the same
names as `Module.state_dict()`, and those names are PyTorch's (`0.weight` inside a Sequential, `layers.1.bias`).
Layers written tinygrad-style (plain objects holding layers, found by get_parameters) keep working.

What a module owns, and how each tensor is classified:
- a tensor attribute is a *parameter* when it is one (`Parameter(t)`, a layer's weight: marked, see below) or was
  registered with `register_parameter`, and a *buffer* when registered with `register_buffer`.
- any other tensor attribute follows the flavor (flavor.attribute_parameters). tinygrad's: the attribute walk
  finds state, so it is a buffer when, the first time the name was assigned, its requires_grad was False, its
  dtype not float or it was not a leaf (a result computed from tensors that require grad), else a parameter.
  torch's: it is a plain attribute (`self.src_mask = mask`), in neither parameters() nor state_dict().
  The classification sticks to the name: `requires_grad_(False)` freezes a parameter without making it a
  buffer, and assigning a new tensor to the name keeps its kind, as torch.
- a Module attribute is a child; lists, tuples, dicts and plain objects held in attributes are walked as
  nn.state walks them (a list of layers is `layers.0`, `layers.1`, ...), their modules taken as children under
  the dotted name and their tensors classified as above (in the torch flavor only Parameters among them count).
- names starting with `_` are bookkeeping, never state (nn.state skips them too).

`Parameter(t)` returns `t` itself, marked a parameter, with requires_grad set (Tensor is not subclassed);
`isinstance(x, Parameter)` tests the mark (in tinygrad's flavor, also any float leaf whose requires_grad is not
False). A layer marks its own weights with `parameter(t)`, which leaves requires_grad to the flavor
(flavor.parameters_require_grad): torch's parameters require grad from birth; tinygrad's start undecided, reading
`requires_grad` True but tracking nothing until an optimizer turns them on or a `backward()` whose graph reads them
does (so `loss.backward()` before any optimizer exists fills their .grad). `copy.deepcopy(module)` copies every
parameter and buffer into a buffer of its own (keeping ties between them and the parameter marks).

Train mode: each module has a `training` flag. A module whose mode was never set follows the class-wide
`Tensor.training` (tinygrad's switch); after `.train()` / `.eval()` (which set the whole subtree) its own
flag wins, whatever `Tensor.training` says. Unlike torch, a fresh module is therefore in eval mode unless
`Tensor.training` is set: call `model.train()` before training with dropout or batch statistics.
"""

from __future__ import annotations

import copy
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from unigrad import flavor
from unigrad.dtype import DType, dtypes
from unigrad.helpers import RemovableHandle
from unigrad.nn import state as nn_state
from unigrad.tensor import Tensor, no_grad

__all__ = ["Module", "Parameter", "RemovableHandle", "parameter"]


class _ParameterMeta(type):
    def __instancecheck__(cls, obj: object) -> bool:
        """isinstance(t, Parameter): a tensor marked a parameter (Parameter(t), a layer's weight, a tensor under a
        module's parameter name); in tinygrad's flavor also any float leaf that may be trained (the attribute walk's
        test). There is no Parameter type: the mark stands for it."""
        if not isinstance(obj, Tensor):
            return False
        return obj._is_parameter or (flavor.current().attribute_parameters and _trainable(obj))


class Parameter(metaclass=_ParameterMeta):
    """torch.nn.Parameter without a subclass of Tensor: `Parameter(t)` returns `t` itself (an empty tensor for
    None), marked a parameter, with requires_grad set. A module attribute holding it is a parameter (see the module
    docstring)."""

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True) -> Tensor:  # type: ignore[misc]
        t = Tensor.empty(0) if data is None else data
        if not isinstance(t, Tensor):
            raise TypeError(f"Parameter: expected a Tensor, got {type(t).__name__}")
        t.requires_grad_(requires_grad)
        t._mark_parameter()
        return t


def parameter(t: Tensor) -> Tensor:
    """A layer's own parameter: `t` marked one, its requires_grad as the flavor gives a new parameter (torch's: True
    from birth; tinygrad's: undecided until an optimizer or a backward() turns it on). Returns `t`."""
    t._mark_parameter()
    return t


def _trainable(t: Tensor) -> bool:
    """How a tensor met outside a registered name is classified: a parameter unless requires_grad is False, it
    holds no floats, or it is computed from tensors that require grad (not a leaf): an optimizer could never
    train those."""
    return t.requires_grad is not False and t.dtype.is_float and t.is_leaf


def _collect(
    value: Any, name: str, tensors: list[tuple[str, Tensor]], modules: list[tuple[str, Module]], path: set[int]
) -> None:
    """The tensors and modules inside an attribute that is neither (a list, a dict, a plain object), found as
    nn.state's walk finds them: the walk stops at each module (its own members are its business). In the torch
    flavor only Parameters among the tensors are state."""
    if isinstance(value, Tensor):
        if value._is_parameter or flavor.current().attribute_parameters:
            tensors.append((name, value))
        return
    if isinstance(value, Module):
        modules.append((name, value))
        return
    items = None if id(value) in path else nn_state.members(value)
    if items is None:
        return
    path.add(id(value))
    for k, v in items:
        _collect(v, f"{name}.{k}", tensors, modules, path)
    path.discard(id(value))


def _check_name(owner: Module, name: Any, what: str) -> None:
    """torch's rules for a registered name: a non-empty str without '.', not an attribute of another kind."""
    if not isinstance(name, str):
        raise TypeError(f"{what} name should be a string, got {type(name).__name__}")
    if not name or "." in name:
        raise KeyError(f'{what} name can\'t be empty or contain ".", got {name!r}')
    if name.startswith("_"):
        raise KeyError(f"{what} name can't start with '_' (private attributes hold no state here), got {name!r}")
    if hasattr(owner, name) and name not in vars(owner):
        raise KeyError(f"attribute '{name}' already exists")


class Module:
    """Base class of layers and models, with torch.nn.Module's methods. Subclasses define `forward`; calling
    the module runs the forward pre-hooks, `forward` and the forward hooks. See the module docstring for how
    attributes become parameters, buffers and children, and for `training`."""

    def __init__(self) -> None:
        self._training: bool | None = None  # None: follow Tensor.training
        self._param_names: set[str] = set()
        self._buffer_names: set[str] = set()
        self._non_persistent: set[str] = set()
        self._forward_hooks: dict[int, Callable[..., Any]] = {}
        self._forward_pre_hooks: dict[int, Callable[..., Any]] = {}

    # ------------------------------------------------------------ bookkeeping (lazy: a subclass may skip __init__)
    def _names(self, kind: str) -> set[str]:
        return self.__dict__.setdefault(kind, set())

    def _hooks(self, kind: str) -> dict[int, Callable[..., Any]]:
        return self.__dict__.setdefault(kind, {})

    def __setattr__(self, name: str, value: Any) -> None:
        if not name.startswith("_") and not isinstance(getattr(type(self), name, None), property):
            params, buffers = self._names("_param_names"), self._names("_buffer_names")
            if isinstance(value, Tensor):
                if name not in params and name not in buffers:
                    if value._is_parameter:
                        params.add(name)
                    elif flavor.current().attribute_parameters:  # tinygrad: the attribute walk finds state
                        (params if _trainable(value) else buffers).add(name)
                if name in params:
                    value._mark_parameter()
            elif value is not None:  # a module or a plain value: no longer a tensor slot (None keeps it, as torch)
                params.discard(name)
                buffers.discard(name)
                self._names("_non_persistent").discard(name)
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        object.__delattr__(self, name)
        for kind in ("_param_names", "_buffer_names", "_non_persistent"):
            self._names(kind).discard(name)

    @property
    def training(self) -> bool:
        """This module's mode: set by train()/eval(), else the class-wide Tensor.training."""
        own = self.__dict__.get("_training")
        return Tensor.training if own is None else own

    @training.setter
    def training(self, mode: bool) -> None:
        self._training = mode

    def _get_name(self) -> str:
        return type(self).__name__

    # ------------------------------------------------------------ calling
    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f'Module [{self._get_name()}] is missing the required "forward" function')

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        pre, post = self.__dict__.get("_forward_pre_hooks"), self.__dict__.get("_forward_hooks")
        for hook in list(pre.values()) if pre else ():
            result = hook(self, args)
            if result is not None:
                args = result if isinstance(result, tuple) else (result,)
        out = self.forward(*args, **kwargs)
        for hook in list(post.values()) if post else ():
            result = hook(self, args, out)
            if result is not None:
                out = result
        return out

    def register_forward_pre_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """hook(module, args) runs before forward; a non-None result replaces args (a tuple, or one value)."""
        hooks = self._hooks("_forward_pre_hooks")
        handle = RemovableHandle(hooks)
        hooks[handle.id] = hook
        return handle

    def register_forward_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """hook(module, args, output) runs after forward; a non-None result replaces the output."""
        hooks = self._hooks("_forward_hooks")
        handle = RemovableHandle(hooks)
        hooks[handle.id] = hook
        return handle

    # ------------------------------------------------------------ members
    def _members(self) -> tuple[list[tuple[str, Tensor, bool]], list[tuple[str, Module]]]:
        """([(name, tensor, is_buffer)], [(name, child)]) of this module alone, in attribute order."""
        params, buffers = self._names("_param_names"), self._names("_buffer_names")
        tensors: list[tuple[str, Tensor, bool]] = []
        children: list[tuple[str, Module]] = []
        walk = flavor.current().attribute_parameters
        for name, value in nn_state._attributes(self).items():
            if isinstance(value, Tensor):
                if name in buffers or name in params or value._is_parameter:
                    tensors.append((name, value, name in buffers))
                elif walk:
                    tensors.append((name, value, not _trainable(value)))
            elif isinstance(value, Module):
                children.append((name, value))
            else:
                inner: list[tuple[str, Tensor]] = []
                _collect(value, name, inner, children, {id(self)})
                tensors.extend((k, t, not (t._is_parameter or _trainable(t))) for k, t in inner)
        return tensors, children

    def _state_items(self) -> list[tuple[str, Any]]:
        """The attributes nn.state's walk goes into (nn.state.members): all public ones but tensors that are not
        state (the torch flavor's plain tensor attributes: `self.src_mask = mask`), so get_state_dict(module) and
        get_parameters(module) see what state_dict() and parameters() see."""
        state = {id(t) for _, t, _ in self._members()[0]}
        return [(k, v) for k, v in nn_state._attributes(self).items() if not isinstance(v, Tensor) or id(v) in state]

    def named_children(self) -> Iterator[tuple[str, Module]]:
        seen: set[int] = set()
        for name, m in self._members()[1]:
            if id(m) not in seen:
                seen.add(id(m))
                yield name, m

    def children(self) -> Iterator[Module]:
        for _, m in self.named_children():
            yield m

    def named_modules(
        self, memo: set[int] | None = None, prefix: str = "", remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Module]]:
        """This module and every module below it, depth first (each once unless remove_duplicate=False)."""
        memo = set() if memo is None else memo
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, m in self._members()[1]:
            yield from m.named_modules(memo, f"{prefix}.{name}" if prefix else name, remove_duplicate)

    def modules(self) -> Iterator[Module]:
        for _, m in self.named_modules():
            yield m

    def _named_tensors(
        self, buffers: bool, prefix: str, recurse: bool, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Tensor]]:
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse else [(prefix, self)]
        seen: set[int] = set()
        for mprefix, m in modules:
            for name, t, is_buffer in m._members()[0]:
                if is_buffer == buffers and (id(t) not in seen or not remove_duplicate):
                    seen.add(id(t))
                    yield (f"{mprefix}.{name}" if mprefix else name), t

    def named_parameters(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Tensor]]:
        """(name, parameter) pairs, each tensor once (unless remove_duplicate=False), modules in named_modules
        order (torch's)."""
        return self._named_tensors(False, prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, t in self.named_parameters(recurse=recurse):
            yield t

    def named_buffers(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Tensor]]:
        return self._named_tensors(True, prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, t in self.named_buffers(recurse=recurse):
            yield t

    def state_dict(
        self, destination: dict[str, Tensor] | None = None, prefix: str = "", keep_vars: bool = False
    ) -> dict[str, Tensor]:
        """Parameters and persistent buffers by torch's key names: a module's own parameters, then its buffers,
        then each child's (a tensor reached by two names is listed under both). The values are the tensors
        themselves (keep_vars is accepted: there is no separate detached view to give)."""
        out: dict[str, Tensor] = OrderedDict() if destination is None else destination
        self._state_into(out, prefix, set())
        return out

    def _state_into(self, out: dict[str, Tensor], prefix: str, path: set[int]) -> None:
        path.add(id(self))
        tensors, children = self._members()
        skip = self._names("_non_persistent")
        for want_buffer in (False, True):
            for name, t, is_buffer in tensors:
                if is_buffer == want_buffer and name not in skip:
                    out[prefix + name] = t
        for name, m in children:
            if id(m) not in path:  # a cycle ends the walk, as nn.state's
                m._state_into(out, f"{prefix}{name}.", path)
        path.discard(id(self))

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True) -> nn_state.IncompatibleKeys:
        """Copy `state_dict`'s values into this module's tensors (nn.state.load_state_dict): RuntimeError for
        shape mismatches, and for missing or unexpected keys when strict. Returns (missing_keys,
        unexpected_keys)."""
        if not any(m._names("_non_persistent") for m in self.modules()):
            return nn_state.load_state_dict(self, state_dict, strict=strict)  # the walk sees only state (_state_items)
        # non-persistent buffers are not state: load into a mapping of the keys that are (named as this class,
        # so that errors name the module)
        view = type(self._get_name(), (dict,), {})(self.state_dict())
        return nn_state.load_state_dict(view, state_dict, strict=strict)

    def get_submodule(self, target: str) -> Module:
        """The module at a dotted path ('' is this module): `model.get_submodule('encoder.layers.0')`."""
        mod: Any = self
        for part in target.split(".") if target else []:
            if isinstance(mod, (list, tuple)) and part.lstrip("-").isdigit() and -len(mod) <= int(part) < len(mod):
                mod = mod[int(part)]
            elif isinstance(mod, Mapping) and part in mod:
                mod = mod[part]
            elif not part.startswith("_") and hasattr(mod, part):
                mod = getattr(mod, part)
            else:
                raise AttributeError(f"{type(mod).__name__} has no attribute `{part}` (looking up {target!r})")
        if not isinstance(mod, Module):
            raise AttributeError(f"`{target}` is not an nn.Module, it is a {type(mod).__name__}")
        return mod

    def get_parameter(self, target: str) -> Tensor:
        """The parameter at a dotted path: `model.get_parameter('0.weight')`."""
        return self._get_tensor(target, buffer=False)

    def get_buffer(self, target: str) -> Tensor:
        """The buffer at a dotted path: `model.get_buffer('bn.running_mean')`."""
        return self._get_tensor(target, buffer=True)

    def _get_tensor(self, target: str, buffer: bool) -> Tensor:
        path, _, name = target.rpartition(".")
        mod = self.get_submodule(path)
        for k, t, is_buffer in mod._members()[0]:
            if k == name:
                if is_buffer != buffer:
                    raise AttributeError(f"`{name}` is not a {'buffer' if buffer else 'parameter'}")
                return t
        raise AttributeError(f"{mod._get_name()} has no {'buffer' if buffer else 'parameter'} `{name}`")

    def __deepcopy__(self, memo: dict[int, Any]) -> Module:
        """A copy with its own buffers: every parameter and buffer is copied into a new device buffer (keeping its
        requires_grad and its ties: a tensor reached twice is copied once), all in one realize; everything else is
        deep-copied."""
        Tensor.deep_copies([t for m in self.modules() for _, t, _ in m._members()[0]], memo)  # realized together
        new = object.__new__(type(self))
        memo[id(self)] = new
        for k, v in vars(self).items():
            object.__setattr__(new, k, copy.deepcopy(v, memo))
        return new

    # ------------------------------------------------------------ registering
    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """A tensor attribute that is state but not trained (running statistics): in state_dict() unless
        persistent=False, never in parameters(). A tensor with requires_grad None gets False, so that optimizers
        given get_parameters(model) leave it alone."""
        _check_name(self, name, "buffer")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' (Tensor or None)")
        if tensor is not None and tensor._requires_grad is None:
            tensor.requires_grad = False  # also no longer an undecided parameter
        self._names("_param_names").discard(name)
        self._names("_buffer_names").add(name)
        (self._names("_non_persistent").discard if persistent else self._names("_non_persistent").add)(name)
        object.__setattr__(self, name, tensor)

    def register_parameter(self, name: str, param: Tensor | None) -> None:
        """A tensor attribute that is trained, marked a parameter (a requires_grad of None is the flavor's: True in
        torch's, undecided in tinygrad's until an optimizer or a backward() turns it on, as for every layer)."""
        _check_name(self, name, "parameter")
        if param is not None and not isinstance(param, Tensor):
            raise TypeError(f"cannot assign '{type(param).__name__}' object to parameter '{name}' (Tensor or None)")
        self._names("_buffer_names").discard(name)
        self._names("_non_persistent").discard(name)
        self._names("_param_names").add(name)
        if param is not None:
            param._mark_parameter()
        object.__setattr__(self, name, param)

    def add_module(self, name: str, module: Module | None) -> None:
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        _check_name(self, name, "module")
        setattr(self, name, module)

    register_module = add_module

    # ------------------------------------------------------------ modes and gradients
    def train(self, mode: bool = True) -> Module:
        """Set this module and every module below it to training mode (or eval mode, mode=False)."""
        if not isinstance(mode, bool):
            raise ValueError(f"train: training mode is expected to be boolean, got {mode!r}")
        for m in self.modules():
            m._training = mode
        return self

    def eval(self) -> Module:
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        """Turn gradient tracking of every parameter on or off (freezing keeps them parameters)."""
        for p in self.parameters():
            p.requires_grad = requires_grad
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.parameters():
            if p.grad is not None:
                p.grad = None if set_to_none else p.grad.zeros_like()

    def apply(self, fn: Callable[[Module], Any]) -> Module:
        """fn(m) for every module below this one (children first), then for this one."""
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    # ------------------------------------------------------------ devices and dtypes
    def _convert(self, fn: Callable[[Tensor], Tensor]) -> Module:
        """Replace the data of every parameter and buffer by fn(tensor), in place: each tensor keeps its identity
        (optimizers and other holders see the new data), its kind and its requires_grad. Gradients follow."""
        seen: dict[int, Tensor] = {}
        for m in self.modules():
            for _, t, _ in m._members()[0]:
                seen.setdefault(id(t), t)
        pending: list[tuple[Tensor, Tensor]] = []
        with no_grad():
            for t in seen.values():
                new = fn(t)
                if new is not t:
                    pending.append((t, new))
        if pending:
            Tensor.realize(*(new for _, new in pending))
        for t, new in pending:
            t.uop, t.device = new.uop, new.device
            if t.grad is not None:
                t.grad = fn(t.grad)
        return self

    def to(self, *args: Any, device: str | None = None, dtype: DType | None = None) -> Module:
        """Move every parameter and buffer to a device (`to('CPU')`) and/or cast the floating-point ones to a
        float dtype (`to(dtypes.float16)`), in place."""
        for a in args:
            if isinstance(a, DType):
                dtype = a
            elif isinstance(a, str):
                device = a
            else:
                raise TypeError(f"to: expected a device name or a DType, got {a!r}")
        if dtype is not None and not dtype.is_float:
            raise TypeError(f"to: nn.Module.to only accepts floating point dtypes, got {dtype}")
        if device is not None:
            self._convert(lambda t: t.to(device))
        if dtype is not None:
            self._convert(lambda t: t.cast(dtype) if t.dtype.is_float and t.dtype is not dtype else t)
        return self

    def cpu(self) -> Module:
        return self.to("CPU")

    def cuda(self, device: Any = None) -> Module:
        raise RuntimeError(
            f"{self._get_name()}.cuda: unigrad has no CUDA device (unigrad.cuda.is_available() is False); keep the "
            "module on the CPU, or move it with .to(device) where device = 'cuda' if torch.cuda.is_available() else "
            "'cpu'"
        )

    def float(self) -> Module:
        return self.to(dtypes.float32)

    def half(self) -> Module:
        return self.to(dtypes.float16)

    def double(self) -> Module:
        return self.to(dtypes.float64)

    def bfloat16(self) -> Module:
        return self.to(dtypes.bfloat16)

    # ------------------------------------------------------------ printing
    def extra_repr(self) -> str:
        """This module's settings for repr (one line, or several); children are listed by __repr__."""
        return ""

    def __repr__(self) -> str:
        extra = self.extra_repr()
        lines = extra.split("\n") if extra else []
        for name, m in self._members()[1]:
            child = repr(m).replace("\n", "\n  ")
            lines.append(f"({name}): {child}")
        if not lines:
            return f"{self._get_name()}()"
        if len(lines) == 1 and not self._members()[1]:
            return f"{self._get_name()}({lines[0]})"
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"
