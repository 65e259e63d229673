"""ctypes bindings of system libraries a runtime backend drives (OpenCL's ICD loader, ...): loaded on first use, so
importing a binding never fails on a machine without the library; a missing library is a clear error then."""

from __future__ import annotations

import ctypes
import ctypes.util


def load_first(names: tuple[str, ...]) -> ctypes.CDLL | None:
    """The first of `names` the dynamic loader opens (a bare name such as "cuda" is looked up by
    ctypes.util.find_library, a file name such as "libcuda.so.1" is opened as given); None when none is."""
    for name in names:
        path = ctypes.util.find_library(name) if "." not in name else name
        if path is None:
            continue
        try:
            return ctypes.CDLL(path)
        except OSError:
            continue
    return None
