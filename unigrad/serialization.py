"""torch.save / torch.load: any picklable object holding tensors (a state_dict, a checkpoint dict with epochs and
optimizer state) to a file and back.

In: an object and a path or binary file. Out: the same structure, each Tensor rebuilt with its values, dtype, device
and requires_grad (Tensor.__reduce__ stores the values, read at save time). The format is a plain pickle, not
torch's zip archive: unigrad reads its own files back. A path to a PyTorch checkpoint (torch.save's zip) loads
through unigrad.nn.state.torch_load, without torch.

load(weights_only=True), torch's default, unpickles only plain containers and values, numpy arrays and unigrad
tensors, and the classes and functions the program allowed (torch's `add_safe_globals([...])`, or for a block,
`with safe_globals([...]):`; a whole saved model loads once its classes are listed): a file from elsewhere cannot run
other code. weights_only=False unpickles anything (only for trusted files).
"""

from __future__ import annotations

import collections
import contextlib
import io
import os
import pickle
import tempfile
from collections.abc import Callable, Iterator
from typing import IO, Any

from unigrad.tensor import Tensor

__all__ = ["save", "load", "add_safe_globals", "safe_globals", "get_safe_globals", "clear_safe_globals"]

# what weights_only=True lets a file name: (module, name) of the callables a checkpoint's pickle calls
_SAFE = {
    ("collections", "OrderedDict"),
    ("collections", "defaultdict"),
    ("builtins", "set"),
    ("builtins", "frozenset"),
    ("builtins", "complex"),
    ("builtins", "slice"),
    ("builtins", "range"),
    ("numpy", "dtype"),
    ("numpy", "ndarray"),
    ("numpy.core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "_reconstruct"),
    ("numpy.core.multiarray", "scalar"),
    ("numpy.core.numeric", "_frombuffer"),
    ("numpy._core.numeric", "_frombuffer"),
    ("numpy._core.multiarray", "scalar"),
    ("unigrad.tensor", "_rebuild"),
    ("unigrad.dtype", "_interned"),
}
_SAFE_PREFIXES = ("numpy.dtypes",)  # numpy's dtype classes (Float32DType, ...)
SafeGlobal = Callable[..., Any] | type | tuple[Any, str]
_allowed: dict[str, Any] = {}  # what the program allowed: "module.qualname" in a file -> the object it names


def _allowed_name(entry: SafeGlobal) -> tuple[str, Any]:
    """("module.qualname", object) of an add_safe_globals entry: an object, or torch's (object, "module.name")."""
    if isinstance(entry, tuple):
        if len(entry) != 2 or not isinstance(entry[1], str):
            raise TypeError(f"add_safe_globals: expected an object or an (object, 'module.name') pair, got {entry!r}")
        return entry[1], entry[0]
    module, qualname = getattr(entry, "__module__", None), getattr(entry, "__qualname__", None)
    if module is None or qualname is None:
        raise TypeError(f"add_safe_globals: {entry!r} has no module and name to be found by in a file")
    return f"{module}.{qualname}", entry


def add_safe_globals(safe: list[SafeGlobal]) -> None:
    """Let load(weights_only=True) unpickle these classes and functions (torch's): a model saved whole loads once
    its module classes are listed. An entry (obj, "module.name") allows the name a file gives to mean obj."""
    _allowed.update(_allowed_name(entry) for entry in safe)


def get_safe_globals() -> list[Any]:
    """The classes and functions add_safe_globals allowed."""
    return list(_allowed.values())


def clear_safe_globals() -> None:
    """Forget every add_safe_globals entry."""
    _allowed.clear()


@contextlib.contextmanager
def safe_globals(safe: list[SafeGlobal]) -> Iterator[None]:
    """`with safe_globals([...]):` allows these for the loads in the block only (add_safe_globals, undone after)."""
    saved = dict(_allowed)
    add_safe_globals(safe)
    try:
        yield
    finally:
        _allowed.clear()
        _allowed.update(saved)


class _WeightsUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _SAFE or module.startswith(_SAFE_PREFIXES):
            return super().find_class(module, name)
        if f"{module}.{name}" in _allowed:
            return _allowed[f"{module}.{name}"]
        raise pickle.UnpicklingError(
            f"load(weights_only=True): the file calls {module}.{name}, which is neither data (tensors, numbers, "
            f"containers) nor allowed by add_safe_globals / safe_globals; allow it with "
            f"`with torch.serialization.safe_globals([{name}]):` if the class is yours, or pass weights_only=False "
            "only if you trust the file"
        )


def save(obj: Any, f: str | os.PathLike | IO[bytes], pickle_protocol: int = pickle.HIGHEST_PROTOCOL, **_: Any) -> None:
    """Write obj (tensors are stored by value) to the path or binary file f."""
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as out:
            pickle.dump(obj, out, protocol=pickle_protocol)
    else:
        pickle.dump(obj, f, protocol=pickle_protocol)


def load(
    f: str | os.PathLike | IO[bytes],
    map_location: Any = None,
    pickle_module: Any = None,
    *,
    weights_only: bool | None = None,
    mmap: bool | None = None,
    **_: Any,
) -> Any:
    """The object save() wrote to f. map_location (a device name, a torch-style device, or None) moves every tensor
    to that device; weights_only (default True, as torch) refuses anything but data."""
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as src:
            data = src.read()
    else:
        data = f.read()
    if data[:4] == b"PK\x03\x04":  # PyTorch's zip checkpoint: read as data, whatever weights_only says
        return _torch_checkpoint(f, data, map_location)
    if weights_only is False:
        obj = pickle.loads(data)
    else:
        obj = _WeightsUnpickler(io.BytesIO(data)).load()
    return obj if map_location is None or callable(map_location) else _moved(obj, _device_name(map_location))


def _torch_checkpoint(f: Any, data: bytes, map_location: Any) -> Any:
    """A torch.save zip through nn.state.torch_load (which maps a file: a file object's bytes go to a temporary
    one)."""
    from unigrad.nn.state import torch_load

    target = None if map_location is None or callable(map_location) else _device_name(map_location)
    if isinstance(f, (str, os.PathLike)):
        return torch_load(f, target)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "checkpoint.pt")
        with open(path, "wb") as out:
            out.write(data)
        return _map_tensors(torch_load(path, target), Tensor.realize)  # in buffers of their own before the file goes


def _device_name(location: Any) -> str:
    from unigrad.runtime import Device

    name = str(getattr(location, "type", location))
    return Device.canonicalize(name)  # type: ignore[return-value]


def _moved(obj: Any, device: str) -> Any:
    """obj with every tensor in it (through dicts, lists, tuples) on `device`, in a buffer of its own."""
    return _map_tensors(obj, lambda t: (t if t.device == device else t.to(device)).realize())


def _map_tensors(obj: Any, fn: Callable[[Tensor], Tensor]) -> Any:
    """obj with fn applied to every tensor in it (through dicts, lists and plain tuples)."""
    if isinstance(obj, Tensor):
        return fn(obj)
    if isinstance(obj, collections.OrderedDict):
        return collections.OrderedDict((k, _map_tensors(v, fn)) for k, v in obj.items())
    if isinstance(obj, dict):
        return {k: _map_tensors(v, fn) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)) and not hasattr(obj, "_fields"):  # a namedtuple is kept as it is
        return type(obj)(_map_tensors(v, fn) for v in obj)
    return obj
