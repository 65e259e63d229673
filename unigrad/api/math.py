"""MathMixin: see unigrad/api/__init__.py. Methods use only core Tensor methods (self is a Tensor)."""

from __future__ import annotations


class MathMixin:
    """Mixed into Tensor."""

    __slots__ = ()
