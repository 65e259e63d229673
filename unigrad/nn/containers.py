"""unigrad.nn.containers: torch's containers: Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict.

A container keeps its entries as attributes named '0', '1', ... (or by key), so their state-dict names are
PyTorch's (`0.weight` inside a Sequential, `layers.1.bias`)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from unigrad.nn.module import Module
from unigrad.tensor import Tensor

__all__ = ["Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"]


def _module_items(m: Module) -> list[tuple[str, Module]]:
    """A container's entries: its Module attributes, in order."""
    return [(k, v) for k, v in vars(m).items() if not k.startswith("_") and isinstance(v, Module)]


def _reset_items(m: Module, items: Iterable[tuple[str, Any]]) -> None:
    """Replace a container's entries by `items`, in that order (attributes keep insertion order)."""
    items = list(items)
    for k in [k for k, v in vars(m).items() if not k.startswith("_") and isinstance(v, (Module, Tensor))]:
        delattr(m, k)
    for k, v in items:
        setattr(m, k, v)


def _index(who: str, idx: Any, n: int) -> int:
    if not isinstance(idx, int) or isinstance(idx, bool):
        raise TypeError(f"{who} indices must be integers or slices, not {type(idx).__name__}")
    if not -n <= idx < n:
        raise IndexError(f"{who}: index {idx} is out of range for length {n}")
    return idx % n


def _checked_module(who: str, m: Any) -> Module:
    if not isinstance(m, Module):
        raise TypeError(f"{who}: {type(m).__name__} is not a Module subclass")
    return m


class Sequential(Module):
    """Modules applied in order: `Sequential(a, b, c)(x) == c(b(a(x)))`; entries are named '0', '1', ... or by
    the keys of an OrderedDict argument. Indexing (int or slice), len, iteration, append/extend/insert/pop."""

    def __init__(self, *args: Module | Mapping[str, Module]):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], Mapping):
            for name, m in args[0].items():
                self.add_module(name, _checked_module("Sequential", m))
        else:
            for i, m in enumerate(args):
                self.add_module(str(i), _checked_module("Sequential", m))

    def forward(self, x: Any) -> Any:
        for _, m in _module_items(self):
            x = m(x)
        return x

    def __len__(self) -> int:
        return len(_module_items(self))

    def __iter__(self) -> Iterator[Module]:
        return iter([m for _, m in _module_items(self)])

    def __getitem__(self, idx: int | slice) -> Any:
        items = _module_items(self)
        if isinstance(idx, slice):
            return type(self)(OrderedDict(items[idx]))
        return items[_index("Sequential", idx, len(items))][1]

    def __setitem__(self, idx: int, module: Module) -> None:
        items = _module_items(self)
        setattr(self, items[_index("Sequential", idx, len(items))][0], _checked_module("Sequential", module))

    def __delitem__(self, idx: int | slice) -> None:
        items = _module_items(self)
        drop = set(range(len(items))[idx]) if isinstance(idx, slice) else {_index("Sequential", idx, len(items))}
        kept = [m for i, (_, m) in enumerate(items) if i not in drop]
        _reset_items(self, ((str(i), m) for i, m in enumerate(kept)))  # renumbered, as torch

    def append(self, module: Module) -> Sequential:
        self.add_module(str(len(self)), _checked_module("Sequential", module))
        return self

    def extend(self, modules: Iterable[Module]) -> Sequential:
        for m in modules:
            self.append(m)
        return self

    def insert(self, index: int, module: Module) -> Sequential:
        mods = [m for _, m in _module_items(self)]
        if not -len(mods) <= index <= len(mods):
            raise IndexError(f"Sequential.insert: index {index} is out of range for length {len(mods)}")
        mods.insert(index, _checked_module("Sequential", module))
        _reset_items(self, ((str(i), m) for i, m in enumerate(mods)))
        return self

    def pop(self, index: int = -1) -> Module:
        m = self[index]
        del self[index]
        return m


class ModuleList(Module):
    """A list of modules (entries '0', '1', ...): indexing, slicing, len, iteration, append/extend/insert/pop,
    +=. It has no forward."""

    def __init__(self, modules: Iterable[Module] | None = None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def _list(self) -> list[Module]:
        return [m for _, m in _module_items(self)]

    def __len__(self) -> int:
        return len(_module_items(self))

    def __iter__(self) -> Iterator[Module]:
        return iter(self._list())

    def __getitem__(self, idx: int | slice) -> Any:
        mods = self._list()
        if isinstance(idx, slice):
            return type(self)(mods[idx])
        return mods[_index("ModuleList", idx, len(mods))]

    def __setitem__(self, idx: int, module: Module) -> None:
        setattr(self, str(_index("ModuleList", idx, len(self))), _checked_module("ModuleList", module))

    def __delitem__(self, idx: int | slice) -> None:
        mods = self._list()
        drop = set(range(len(mods))[idx]) if isinstance(idx, slice) else {_index("ModuleList", idx, len(mods))}
        _reset_items(self, ((str(i), m) for i, m in enumerate(m for j, m in enumerate(mods) if j not in drop)))

    def __iadd__(self, modules: Iterable[Module]) -> ModuleList:
        return self.extend(modules)

    def append(self, module: Module) -> ModuleList:
        self.add_module(str(len(self)), _checked_module("ModuleList", module))
        return self

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        for m in modules:
            self.append(m)
        return self

    def insert(self, index: int, module: Module) -> None:
        mods = self._list()
        mods.insert(index, _checked_module("ModuleList", module))
        _reset_items(self, ((str(i), m) for i, m in enumerate(mods)))

    def pop(self, index: int = -1) -> Module:
        m = self[index]
        del self[index]
        return m


class ModuleDict(Module):
    """An ordered dict of modules, keyed by name (a key must not be an attribute of the class, e.g. 'train')."""

    def __init__(self, modules: Mapping[str, Module] | Iterable[tuple[str, Module]] | None = None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        if key not in self:
            raise KeyError(key)
        return getattr(self, key)

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, _checked_module("ModuleDict", module))

    def __delitem__(self, key: str) -> None:
        if key not in self:
            raise KeyError(key)
        delattr(self, key)

    def __len__(self) -> int:
        return len(_module_items(self))

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and isinstance(vars(self).get(key), Module) and not key.startswith("_")

    def keys(self) -> list[str]:
        return [k for k, _ in _module_items(self)]

    def values(self) -> list[Module]:
        return [m for _, m in _module_items(self)]

    def items(self) -> list[tuple[str, Module]]:
        return _module_items(self)

    def update(self, modules: Mapping[str, Module] | Iterable[tuple[str, Module]]) -> None:
        for k, m in modules.items() if isinstance(modules, Mapping) else modules:
            self[k] = m

    def pop(self, key: str) -> Module:
        m = self[key]
        del self[key]
        return m

    def clear(self) -> None:
        for k in self.keys():
            delattr(self, k)


def _tensor_items(m: Module) -> list[tuple[str, Tensor]]:
    return [(k, v) for k, v in vars(m).items() if not k.startswith("_") and isinstance(v, Tensor)]


class ParameterList(Module):
    """A list of parameters (entries '0', '1', ...): indexing, len, iteration, append/extend."""

    def __init__(self, values: Iterable[Tensor] | None = None):
        super().__init__()
        if values is not None:
            self.extend(values)

    def __len__(self) -> int:
        return len(_tensor_items(self))

    def __iter__(self) -> Iterator[Tensor]:
        return iter([t for _, t in _tensor_items(self)])

    def __getitem__(self, idx: int | slice) -> Any:
        ts = [t for _, t in _tensor_items(self)]
        if isinstance(idx, slice):
            return type(self)(ts[idx])
        return ts[_index("ParameterList", idx, len(ts))]

    def __setitem__(self, idx: int, param: Tensor) -> None:
        self.register_parameter(str(_index("ParameterList", idx, len(self))), param)

    def append(self, param: Tensor) -> ParameterList:
        self.register_parameter(str(len(self)), param)
        return self

    def extend(self, params: Iterable[Tensor]) -> ParameterList:
        for p in params:
            self.append(p)
        return self

    def extra_repr(self) -> str:
        return "\n".join(f"({k}): Parameter containing: [{t.dtype} of size {t.shape}]" for k, t in _tensor_items(self))


class ParameterDict(Module):
    """An ordered dict of parameters, keyed by name."""

    def __init__(self, parameters: Mapping[str, Tensor] | Iterable[tuple[str, Tensor]] | None = None):
        super().__init__()
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key: str) -> Tensor:
        if key not in self:
            raise KeyError(key)
        return getattr(self, key)

    def __setitem__(self, key: str, param: Tensor) -> None:
        self.register_parameter(key, param)

    def __delitem__(self, key: str) -> None:
        if key not in self:
            raise KeyError(key)
        delattr(self, key)

    def __len__(self) -> int:
        return len(_tensor_items(self))

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and isinstance(vars(self).get(key), Tensor) and not key.startswith("_")

    def keys(self) -> list[str]:
        return [k for k, _ in _tensor_items(self)]

    def values(self) -> list[Tensor]:
        return [t for _, t in _tensor_items(self)]

    def items(self) -> list[tuple[str, Tensor]]:
        return _tensor_items(self)

    def update(self, parameters: Mapping[str, Tensor] | Iterable[tuple[str, Tensor]]) -> None:
        for k, p in parameters.items() if isinstance(parameters, Mapping) else parameters:
            self[k] = p

    def extra_repr(self) -> str:
        return "\n".join(f"({k}): Parameter containing: [{t.dtype} of size {t.shape}]" for k, t in _tensor_items(self))
