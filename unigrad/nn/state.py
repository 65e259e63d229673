"""Model state: safetensors files, PyTorch zip checkpoints, and state dicts found by walking attributes.

Files are mapped with mmap, never read whole into Python memory: each tensor's bytes are a numpy view of the
mapping, copied once into a fresh device buffer (the numpy boundary of DESIGN.md invariant 5), after which the
mapping is closed. bfloat16 crosses the boundary as its raw uint16 bits, so loads and saves are bit-exact.

- `safe_load` / `safe_save` / `safe_load_metadata`: the safetensors format (an 8-byte little-endian header
  length, a JSON header of name -> {dtype, shape, data_offsets} plus an optional `__metadata__` map of strings,
  then the tensors' bytes, contiguous, little-endian, row-major).
- `torch_load`: a `torch.save` zip checkpoint without importing torch, through an unpickler that only knows
  tensors, their storages and OrderedDict.
- `get_state_dict` / `get_parameters` / `load_state_dict`: names joined with '.' as PyTorch's state-dict keys.
"""

from __future__ import annotations

import collections
import functools
import json
import mmap
import os
import pickle
import struct
import types
import zipfile
from collections.abc import Callable, Iterator, Iterable, Mapping
from contextlib import contextmanager
from typing import Any, NamedTuple

import numpy as np

from unigrad.dtype import DType, dtypes
from unigrad.runtime import realize as rt
from unigrad.tensor import Tensor, no_grad

PathLike = str | os.PathLike
Source = PathLike | bytes | bytearray | memoryview

# ---------------------------------------------------------------- the host boundary


def _host_dtype(dt: DType, byteorder: str = "<") -> np.dtype:
    """The numpy dtype of `dt`'s bytes in a file: bfloat16 as its uint16 bits, with the file's byte order."""
    fmt = "u2" if dt is dtypes.bfloat16 else dt.fmt
    if fmt is None:
        raise TypeError(f"{dt} has no storage format")
    return np.dtype(fmt).newbyteorder(byteorder) if dt.itemsize > 1 else np.dtype(fmt)


def _from_host(arr: np.ndarray, dt: DType, device: str | None) -> Tensor:
    """A new tensor of dtype `dt` holding `arr` (a possibly strided, read-only view of file bytes, in `dt`'s
    host dtype): one copy, straight into a fresh device buffer (bfloat16 bits go in as they are)."""
    out = Tensor.empty(arr.shape, dtype=dt, device=device)
    if arr.size:
        if dt is dtypes.bool:  # any nonzero byte is True; a kernel must only ever see 0 or 1
            arr = arr.view(np.uint8) != 0
        rt.buffer_of(out.uop).copyin(arr)
    return out


def _to_host(t: Tensor) -> np.ndarray:
    """`t`'s values as a row-major little-endian numpy array; bfloat16 as its exact uint16 bits."""
    arr = t.numpy()
    if t.dtype is dtypes.bfloat16:  # numpy() widens bf16 bits to float32 by a 16-bit shift: shift them back
        arr = (arr.view(np.uint32) >> 16).astype(np.uint16)
    return np.ascontiguousarray(arr.astype(arr.dtype.newbyteorder("<"), copy=False))


@contextmanager
def _mapped(src: Source, who: str) -> Iterator[memoryview | mmap.mmap]:
    """The bytes of a file (mapped read-only) or of a bytes-like object, without copying either."""
    if isinstance(src, (bytes, bytearray, memoryview)):
        yield memoryview(src).cast("B")
        return
    with open(src, "rb") as f:
        if os.fstat(f.fileno()).st_size == 0:
            raise ValueError(f"{who}: {os.fspath(src)!r} is empty")
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    try:
        yield mm
    finally:
        try:
            mm.close()
        except BufferError:  # a view is still alive (an exception's traceback holds one): the GC unmaps it later
            pass


# ---------------------------------------------------------------- safetensors

SAFE_DTYPES: dict[str, DType] = {
    "BOOL": dtypes.bool,
    "U8": dtypes.uint8,
    "I8": dtypes.int8,
    "I16": dtypes.int16,
    "U16": dtypes.uint16,
    "I32": dtypes.int32,
    "U32": dtypes.uint32,
    "I64": dtypes.int64,
    "U64": dtypes.uint64,
    "F16": dtypes.float16,
    "BF16": dtypes.bfloat16,
    "F32": dtypes.float32,
    "F64": dtypes.float64,
}
_SAFE_NAMES = {dt: name for name, dt in SAFE_DTYPES.items()}
# dtypes of the format that unigrad has no type for
_SAFE_UNSUPPORTED = {"F8_E4M3", "F8_E5M2", "F8_E8M0", "F6_E2M3", "F6_E3M2", "F4", "C64"}
_MAX_HEADER = 100 << 20  # the limit the reference implementation sets: real headers are a few MB at most


class _Entry(NamedTuple):
    name: str
    dtype: DType
    shape: tuple[int, ...]
    begin: int  # byte range in the data section (after the header)
    end: int


def _reject_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"safe_load: the header names {k!r} twice")
        out[k] = v
    return out


def _is_uint(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x >= 0


def _parse_entry(name: str, info: Any) -> _Entry:
    if not isinstance(info, dict) or set(info) != {"dtype", "shape", "data_offsets"}:
        raise ValueError(f"safe_load: tensor {name!r}: expected {{dtype, shape, data_offsets}}, got {info!r}")
    code, shape, offsets = info["dtype"], info["shape"], info["data_offsets"]
    if code in _SAFE_UNSUPPORTED:
        raise NotImplementedError(f"safe_load: tensor {name!r} has dtype {code}, which unigrad does not support")
    if code not in SAFE_DTYPES:
        raise ValueError(f"safe_load: tensor {name!r} has unknown dtype {code!r}; expected one of {list(SAFE_DTYPES)}")
    if not isinstance(shape, list) or not all(_is_uint(s) for s in shape):
        raise ValueError(f"safe_load: tensor {name!r}: shape must be a list of non-negative ints, got {shape!r}")
    if not isinstance(offsets, list) or len(offsets) != 2 or not all(_is_uint(o) for o in offsets):
        raise ValueError(f"safe_load: tensor {name!r}: data_offsets must be [begin, end], got {offsets!r}")
    dt = SAFE_DTYPES[code]
    numel = 1
    for s in shape:
        numel *= s
    begin, end = offsets
    if end - begin != numel * dt.itemsize:
        raise ValueError(
            f"safe_load: tensor {name!r}: {code}{shape} needs {numel * dt.itemsize} bytes, "
            f"data_offsets {offsets} give {end - begin}"
        )
    return _Entry(name, dt, tuple(shape), begin, end)


def _parse_header(buf: memoryview | mmap.mmap) -> tuple[int, dict[str, str], list[_Entry]]:
    """(start of the data section, metadata, entries in header order), every number checked against the file."""
    total = len(buf)
    if total < 8:
        raise ValueError(f"safe_load: {total} bytes is too short for a safetensors file (8-byte header length)")
    (n,) = struct.unpack_from("<Q", buf, 0)
    if n > _MAX_HEADER or 8 + n > total:
        raise ValueError(f"safe_load: header length {n} does not fit a file of {total} bytes (limit {_MAX_HEADER})")
    try:
        header = json.loads(bytes(buf[8 : 8 + n]).decode("utf-8"), object_pairs_hook=_reject_duplicates)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"safe_load: the header is not valid UTF-8 JSON: {e}") from None
    if not isinstance(header, dict):
        raise ValueError(f"safe_load: the header must be a JSON object, got {type(header).__name__}")
    metadata = header.pop("__metadata__", None) or {}
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise ValueError(f"safe_load: __metadata__ must map strings to strings, got {metadata!r}")
    entries = [_parse_entry(k, v) for k, v in header.items()]
    data_len, pos = total - 8 - n, 0
    for e in sorted(entries, key=lambda e: (e.begin, e.end)):  # the data is entirely indexed: no holes, no overlaps
        if e.begin != pos:
            what = "overlaps the tensor before it" if e.begin < pos else f"leaves a hole at bytes [{pos}, {e.begin})"
            raise ValueError(f"safe_load: tensor {e.name!r} at data_offsets [{e.begin}, {e.end}] {what}")
        pos = e.end
    if pos != data_len:
        raise ValueError(f"safe_load: the tensors cover {pos} bytes of data, the file holds {data_len}")
    return 8 + n, metadata, entries


def safe_load(src: Source, device: str | None = None) -> dict[str, Tensor]:
    """The tensors of a safetensors file (a path, or the file's bytes), in header order, on `device` (default:
    the default device). The file is mapped, not read: each tensor is copied once from the mapping into its
    buffer. Raises ValueError for a malformed file and NotImplementedError for the F8/F6/F4/C64 dtypes."""
    with _mapped(src, "safe_load") as buf:
        start, _, entries = _parse_header(buf)
        out: dict[str, Tensor] = {}
        for e in entries:
            hdt = _host_dtype(e.dtype)
            count = (e.end - e.begin) // hdt.itemsize
            view = np.frombuffer(buf, dtype=hdt, count=count, offset=start + e.begin) if count else np.empty(0, hdt)
            out[e.name] = _from_host(view.reshape(e.shape), e.dtype, device)
            del view  # no view may outlive the mapping
    return out


def safe_load_metadata(src: Source) -> dict[str, str]:
    """The `__metadata__` strings of a safetensors file ({} when it has none); reads only the header."""
    with _mapped(src, "safe_load_metadata") as buf:
        return _parse_header(buf)[1]


def safe_save(tensors: Mapping[str, Tensor], path: PathLike, metadata: Mapping[str, str] | None = None) -> None:
    """Write `tensors` as a safetensors file. Tensors are laid out widest dtype first, then by name (so each
    starts aligned to its itemsize, as the reference writer does); the header is padded with spaces to a
    multiple of 8 bytes. `metadata` is stored as `__metadata__` (strings only)."""
    for k, t in tensors.items():
        if not isinstance(k, str) or k == "__metadata__":
            raise TypeError(f"safe_save: tensor names must be strings other than '__metadata__', got {k!r}")
        if not isinstance(t, Tensor):
            raise TypeError(f"safe_save: {k!r} is a {type(t).__name__}, expected a Tensor")
        if t.dtype not in _SAFE_NAMES:
            raise TypeError(f"safe_save: {k!r} has dtype {t.dtype}, which safetensors cannot store")
    if metadata is not None and not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
        raise TypeError(f"safe_save: metadata must map strings to strings, got {dict(metadata)!r}")
    names = sorted(tensors, key=lambda k: (-tensors[k].dtype.itemsize, k))
    header: dict[str, Any] = {"__metadata__": dict(metadata)} if metadata else {}
    pos = 0
    for k in names:
        t = tensors[k]
        nbytes = t.numel() * t.dtype.itemsize
        header[k] = {"dtype": _SAFE_NAMES[t.dtype], "shape": list(t.shape), "data_offsets": [pos, pos + nbytes]}
        pos += nbytes
    raw = json.dumps(header, separators=(",", ":")).encode("utf-8")
    raw += b" " * (-len(raw) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)))
        f.write(raw)
        for k in names:
            f.write(_to_host(tensors[k]).reshape(-1).view(np.uint8).data)


# ---------------------------------------------------------------- PyTorch zip checkpoints

_TORCH_STORAGES: dict[str, DType] = {
    "FloatStorage": dtypes.float32,
    "HalfStorage": dtypes.float16,
    "BFloat16Storage": dtypes.bfloat16,
    "DoubleStorage": dtypes.float64,
    "LongStorage": dtypes.int64,
    "IntStorage": dtypes.int32,
    "ShortStorage": dtypes.int16,
    "CharStorage": dtypes.int8,
    "ByteStorage": dtypes.uint8,
    "BoolStorage": dtypes.bool,
}
_TORCH_DTYPES: dict[str, DType] = {
    "float32": dtypes.float32,
    "float": dtypes.float32,
    "float16": dtypes.float16,
    "half": dtypes.float16,
    "bfloat16": dtypes.bfloat16,
    "float64": dtypes.float64,
    "double": dtypes.float64,
    "int64": dtypes.int64,
    "long": dtypes.int64,
    "int32": dtypes.int32,
    "int": dtypes.int32,
    "int16": dtypes.int16,
    "short": dtypes.int16,
    "int8": dtypes.int8,
    "uint8": dtypes.uint8,
    "bool": dtypes.bool,
}


class _StorageType(NamedTuple):
    """What the unpickler gives for `torch.FloatStorage` or `torch.float32`: the element dtype."""

    dtype: DType


class _Storage(NamedTuple):
    """One `data/<key>` record: its elements as a read-only numpy view of the mapped checkpoint."""

    dtype: DType
    array: np.ndarray


def _rebuild_tensor(device: str | None, storage: _Storage, offset: int, size: tuple, stride: tuple, *_: Any) -> Tensor:
    """torch._utils._rebuild_tensor_v2 (storage, storage_offset, size, stride, requires_grad, backward_hooks,
    metadata): the view of a storage (offset, size, stride in elements), copied into a new tensor on `device`."""
    if not isinstance(storage, _Storage):
        raise pickle.UnpicklingError(f"torch_load: a tensor's storage is a {type(storage).__name__}")
    if not (isinstance(size, (tuple, list)) and isinstance(stride, (tuple, list))):
        raise pickle.UnpicklingError(f"torch_load: bad tensor view size={size!r} stride={stride!r}")
    size, stride = tuple(size), tuple(stride)
    if not (_is_uint(offset) and all(_is_uint(s) for s in size + stride) and len(size) == len(stride)):
        raise pickle.UnpicklingError(f"torch_load: bad tensor view offset={offset} size={size} stride={stride}")
    data = storage.array
    if 0 not in size:
        last = offset + sum((n - 1) * s for n, s in zip(size, stride))
        if last >= len(data):
            raise pickle.UnpicklingError(
                f"torch_load: a tensor view (offset {offset}, size {size}, stride {stride}) reaches element {last} "
                f"of a storage of {len(data)}"
            )
        view = np.lib.stride_tricks.as_strided(
            data[offset:], shape=size, strides=[s * data.itemsize for s in stride], writeable=False
        )
    else:
        view = np.empty(size, data.dtype)
    return _from_host(view, storage.dtype, device)


def _rebuild_parameter(data: Tensor, requires_grad: bool = False, *_: Any) -> Tensor:
    """torch._utils._rebuild_parameter(_with_state): an nn.Parameter is loaded as its data."""
    return data


def _torch_size(*args: Any) -> tuple:
    return tuple(*args)


_TORCH_GLOBALS: dict[tuple[str, str], Any] = {
    ("collections", "OrderedDict"): collections.OrderedDict,
    ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
    ("torch._utils", "_rebuild_parameter_with_state"): _rebuild_parameter,
    ("torch", "Size"): _torch_size,
}


class _TorchUnpickler(pickle.Unpickler):
    """Unpickles data.pkl knowing only tensors, storages, OrderedDict and torch.Size: any other global (the
    way a pickle runs code) is refused."""

    def __init__(self, file: Any, storages: Callable[[str, DType, Any], _Storage], device: str | None):
        super().__init__(file)
        self._storages, self._device = storages, device

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) == ("torch._utils", "_rebuild_tensor_v2"):
            return functools.partial(_rebuild_tensor, self._device)
        if (module, name) in _TORCH_GLOBALS:
            return _TORCH_GLOBALS[(module, name)]
        if module == "torch" and name in _TORCH_STORAGES:
            return _StorageType(_TORCH_STORAGES[name])
        if module == "torch" and name in _TORCH_DTYPES:
            return _StorageType(_TORCH_DTYPES[name])
        if module == "torch" and name.endswith("Storage"):
            raise NotImplementedError(f"torch_load: {name} is not supported; storages: {sorted(_TORCH_STORAGES)}")
        raise pickle.UnpicklingError(
            f"torch_load: refusing to load global {module}.{name}: only tensors, their storages, OrderedDict and "
            "plain Python containers may appear in a checkpoint"
        )

    def persistent_load(self, pid: Any) -> _Storage:
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            raise pickle.UnpicklingError(f"torch_load: unknown persistent id {pid!r}")
        _, storage_type, key, _location, numel = pid
        if not isinstance(storage_type, _StorageType):
            raise pickle.UnpicklingError(f"torch_load: storage type {storage_type!r} is not a torch storage type")
        return self._storages(str(key), storage_type.dtype, numel)


def _member_bytes(buf: mmap.mmap, zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> memoryview:
    """A stored (uncompressed) zip member as a view of the mapped file; a compressed one is read and inflated."""
    if info.compress_type != zipfile.ZIP_STORED:
        return memoryview(zf.read(info))
    sig, *_, name_len, extra_len = struct.unpack_from("<IHHHHHIIIHH", buf, info.header_offset)
    if sig != 0x04034B50:
        raise ValueError(f"torch_load: bad local zip header for {info.filename!r}")
    start = info.header_offset + 30 + name_len + extra_len
    if start + info.file_size > len(buf):
        raise ValueError(f"torch_load: {info.filename!r} runs past the end of the file")
    return memoryview(buf)[start : start + info.file_size]


def torch_load(path: PathLike, device: str | None = None) -> Any:
    """What a `torch.save` zip checkpoint (.pt/.pth) holds, with each tensor loaded as a Tensor on `device`,
    without importing torch. A state dict comes back as the (Ordered)dict it was; one nested under 'model' or
    'state_dict' stays nested. Storages are views of the mapped file, each tensor (any strides, any offset
    into a shared storage) is copied once. Only tensors, storages of bool/uint8/int8/int16/int32/int64/
    float16/bfloat16/float32/float64, OrderedDict and plain containers are accepted: any other global in the
    pickle raises pickle.UnpicklingError (loading a pickle may not run code)."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"torch_load: expected a path, got {type(path).__name__}")
    with _mapped(path, "torch_load") as buf:
        if buf[:4] != b"PK\x03\x04":
            raise ValueError(
                f"torch_load: {os.fspath(path)!r} is not a zip checkpoint; the legacy torch.save format is not "
                "supported (re-save it with torch >= 1.6)"
            )
        with open(path, "rb") as f, zipfile.ZipFile(f) as zf:
            pkls = [n for n in zf.namelist() if n == "data.pkl" or n.endswith("/data.pkl")]
            if len(pkls) != 1:
                raise ValueError(f"torch_load: expected one data.pkl in the archive, found {pkls}")
            prefix = pkls[0][: -len("data.pkl")]
            names = set(zf.namelist())
            order = zf.read(prefix + "byteorder").decode() if prefix + "byteorder" in names else "little"
            if order not in ("little", "big"):
                raise ValueError(f"torch_load: unknown byteorder {order!r}")
            loaded: dict[str, _Storage] = {}

            def storage(key: str, dt: DType, numel: Any) -> _Storage:
                if key not in loaded:
                    member = f"{prefix}data/{key}"
                    if member not in names:
                        raise ValueError(f"torch_load: storage {key!r} is missing from the archive")
                    raw = _member_bytes(buf, zf, zf.getinfo(member))
                    hdt = _host_dtype(dt, "<" if order == "little" else ">")
                    if not _is_uint(numel) or numel * hdt.itemsize != len(raw):
                        raise ValueError(f"torch_load: storage {key!r} holds {len(raw)} bytes, not {numel} x {dt}")
                    loaded[key] = _Storage(dt, np.frombuffer(raw, dtype=hdt))
                if loaded[key].dtype is not dt:
                    raise ValueError(f"torch_load: storage {key!r} is read as {loaded[key].dtype} and {dt}")
                return loaded[key]

            with zf.open(pkls[0]) as pkl:
                obj = _TorchUnpickler(pkl, storage, device).load()
            loaded.clear()  # drop the views before the mapping closes
    return obj


# ---------------------------------------------------------------- state dicts

# values that never hold model state: walking into them would list a module's or a class's globals
_OPAQUE = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.MethodType, str, bytes)


def _attributes(obj: Any) -> dict[str, Any]:
    """An object's public instance attributes: its __dict__ and its __slots__ (private `_` names skipped)."""
    out = dict(vars(obj)) if hasattr(obj, "__dict__") else {}
    for cls in type(obj).__mro__:
        slots = cls.__dict__.get("__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            if name not in out and hasattr(obj, name):
                out[name] = getattr(obj, name)
    return {k: v for k, v in out.items() if not k.startswith("_")}


def members(obj: Any) -> Iterable[tuple[Any, Any]] | None:
    """The (name, value) pairs the state walk goes into: a namedtuple's fields, a mapping's items, a sequence's
    elements by index, an object's public attributes; None for anything else (values that hold no state)."""
    if isinstance(obj, _OPAQUE):
        return None
    if hasattr(obj, "_asdict") and isinstance(obj, tuple):  # a namedtuple: by field name
        return obj._asdict().items()
    if isinstance(obj, Mapping):
        return obj.items()
    if isinstance(obj, (list, tuple)):
        return enumerate(obj)
    if hasattr(type(obj), "_state_items"):  # an nn.Module: its tensor attributes that are state (the flavor's rule)
        return obj._state_items()
    if hasattr(obj, "__dict__") or hasattr(type(obj), "__slots__"):
        return _attributes(obj).items()
    return None


def _walk(obj: Any, name: str, out: dict[str, Tensor], path: set[int]) -> None:
    if isinstance(obj, Tensor):
        out[name] = obj
        return
    items = None if id(obj) in path else members(obj)  # `path`: objects above this one (a cycle ends the walk)
    if items is None:
        return
    path.add(id(obj))
    for k, v in items:
        _walk(v, f"{name}.{k}" if name else str(k), out, path)
    path.discard(id(obj))


def get_state_dict(obj: Any, prefix: str = "") -> dict[str, Tensor]:
    """Every tensor reachable from `obj` by name: attributes of objects (not `_private` ones), items of dicts,
    elements of lists/tuples (`layers.0.weight`), names joined with '.' and led by `prefix` ('enc' or 'enc.').
    A tensor reached by two names is listed under both (as PyTorch lists tied weights)."""
    out: dict[str, Tensor] = {}
    _walk(obj, prefix.rstrip("."), out, set())
    return out


def get_parameters(obj: Any) -> list[Tensor]:
    """The distinct tensors of get_state_dict(obj), in its order (a tensor reached by two names is listed once).
    Buffers such as running statistics are included: optimizers skip tensors with requires_grad=False."""
    seen: dict[int, Tensor] = {}
    for t in get_state_dict(obj).values():
        seen.setdefault(id(t), t)
    return list(seen.values())


class IncompatibleKeys(NamedTuple):
    """What load_state_dict returns, as PyTorch: the model's keys the state lacked, and the state's extra keys."""

    missing_keys: list[str]
    unexpected_keys: list[str]


def _shape_of(v: Any) -> tuple[int, ...]:
    return v.shape if isinstance(v, Tensor) else tuple(np.shape(v))


def _quoted(keys: list[str]) -> str:
    return ", ".join(f'"{k}"' for k in keys)


def load_state_dict(
    model: Any, state_dict: Mapping[str, Any], strict: bool = True, verbose: bool = False, consume: bool = False
) -> IncompatibleKeys:
    """Copy `state_dict`'s values into the model's tensors (get_state_dict(model) names them): each is cast to the
    model tensor's dtype, moved to its device and assigned into its buffer, all realized together. Nothing is
    written when an error is raised. RuntimeError, as PyTorch, lists missing and unexpected keys (when strict)
    and shape mismatches (always). With `consume`, loaded keys are removed from `state_dict` (freeing memory
    as it goes). Returns the missing and unexpected keys."""
    own = get_state_dict(model)
    missing = [k for k in own if k not in state_dict]
    unexpected = [k for k in state_dict if k not in own]
    errors = []
    if strict and missing:
        errors.append(f"Missing key(s) in state_dict: {_quoted(missing)}.")
    if strict and unexpected:
        errors.append(f"Unexpected key(s) in state_dict: {_quoted(unexpected)}.")
    for k, t in own.items():
        if k in state_dict and _shape_of(state_dict[k]) != t.shape:
            errors.append(
                f"size mismatch for {k}: copying a param with shape {_shape_of(state_dict[k])} from checkpoint, "
                f"the shape in current model is {t.shape}."
            )
    if errors:
        raise RuntimeError(f"Error(s) in loading state_dict for {type(model).__name__}:\n\t" + "\n\t".join(errors))
    written: dict[int, Tensor] = {}  # a tensor reached by two names is written once, from its first name
    with no_grad():
        for k, t in own.items():
            if k not in state_dict or id(t) in written:
                continue
            v = state_dict[k]
            v = v if isinstance(v, Tensor) else Tensor(np.asarray(v), device=t.device)
            if verbose:
                print(f"load_state_dict: {k} {t.shape} {v.dtype} -> {t.dtype} on {t.device}")
            t.assign(v.to(t.device).cast(t.dtype))
            written[id(t)] = t
            if consume:
                del state_dict[k]  # type: ignore[attr-defined]
        if written:
            first, *rest = written.values()
            first.realize(*rest)
    return IncompatibleKeys(missing, unexpected)
