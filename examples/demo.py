"""A few tensor programs on the default device (DEVICE=CPU or PYTHON), each next to its numpy reference.

python examples/demo.py            # exits 1 if any result disagrees with numpy
DEVICE=PYTHON python examples/demo.py
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from unigrad import Device, Tensor

_utf = (sys.stdout.encoding or "").lower().replace("-", "").startswith("utf")
OK, BAD = ("✓", "✗") if _utf else ("ok", "MISMATCH")

rng = np.random.default_rng(0)
A = rng.standard_normal((3, 4)).astype(np.float32)
B = rng.standard_normal((4, 2)).astype(np.float32)
X = rng.standard_normal((2, 5)).astype(np.float32)
ROW = np.array([10.0, 20.0, 30.0], dtype=np.float32)
COL = np.array([[1.0], [2.0]], dtype=np.float32)


def softmax(x: Tensor) -> Tensor:
    """softmax over the last axis from primitives: subtract the max (for stability), exp, normalize."""
    e = (x - x.max(axis=-1, keepdim=True)).exp()
    return e / e.sum(axis=-1, keepdim=True)


def softmax_np(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


# (title, program as text, unigrad program, numpy reference)
CASES: list[tuple[str, str, Callable[[], Tensor], Callable[[], np.ndarray]]] = [
    ("matmul", "A @ B", lambda: Tensor(A) @ Tensor(B), lambda: A @ B),
    ("softmax", "exp(x - max) / sum(exp(x - max))", lambda: softmax(Tensor(X)), lambda: softmax_np(X)),
    ("reduction", "A.sum(axis=0)", lambda: Tensor(A).sum(axis=0), lambda: A.sum(axis=0)),
    ("reduction", "A.max()", lambda: Tensor(A).max(), lambda: A.max()),
    ("reduction", "A.mean(axis=1)", lambda: Tensor(A).mean(axis=1), lambda: A.mean(axis=1)),
    ("broadcasting", "col (2,1) * row (3,) + 1", lambda: Tensor(COL) * Tensor(ROW) + 1, lambda: COL * ROW + 1),
    (
        "broadcasting",
        "relu(A - A.mean(axis=0))",
        lambda: (Tensor(A) - Tensor(A).mean(axis=0)).relu(),
        lambda: np.maximum(A - A.mean(axis=0), 0),
    ),
    ("arange", "arange(10)", lambda: Tensor.arange(10), lambda: np.arange(10)),
    ("arange", "arange(2, 3, 0.25) * 2", lambda: Tensor.arange(2, 3, 0.25) * 2, lambda: np.arange(2, 3, 0.25) * 2),
    (
        "arange",
        "arange(12).reshape(3, 4).T",
        lambda: Tensor.arange(12).reshape(3, 4).T,
        lambda: np.arange(12).reshape(3, 4).T,
    ),
]


def _fmt(x: Any) -> str:
    return np.array2string(np.asarray(x), precision=4, suppress_small=True, separator=", ").replace(
        "\n", "\n" + " " * 12
    )


def main() -> int:
    print(f"unigrad demo on device {Device.DEFAULT}\n")
    failures = 0
    for title, text, prog, ref in CASES:
        expected = np.asarray(ref())
        try:
            got = prog().numpy()
            good = got.shape == expected.shape and np.allclose(got, expected, rtol=1e-5, atol=1e-6)
        except Exception as e:  # a crash is a failure too, reported with the others
            got, good = f"{type(e).__name__}: {e}", False
        failures += not good
        print(f"{title:<13} {text}   {OK if good else BAD}")
        print(f"  unigrad   {_fmt(got) if isinstance(got, np.ndarray) else got}")
        print(f"  numpy     {_fmt(expected)}\n")
    print(f"{len(CASES) - failures}/{len(CASES)} agree with numpy")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
