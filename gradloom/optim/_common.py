"""Argument checks and array plumbing shared by the optimizers."""

from __future__ import annotations

from typing import Any

from ..errors import GradloomError
from ..runtime.array.array import array
from ..types import VectorType, float16, float32, float64
from ..types.query import type_name


class OptimRuntimeError(GradloomError, RuntimeError):
    """An optimizer used before it has parameters, or with unsupported ones (as Warp raises)."""


class OptimTypeError(GradloomError, TypeError):
    """A gradient whose dtype differs from its parameter's."""


class OptimValueError(GradloomError, ValueError):
    """A gradient whose shape differs from its parameter's."""


FLOAT_SCALARS = (float16, float32, float64)


def float_vector(t: Any) -> bool:
    return isinstance(t, VectorType) and t.dtype in (float32, float64)


def check_gradient(kind: str, g: Any, params: array) -> None:
    if not isinstance(g, array):
        raise OptimTypeError(f"{kind} gradient must be a gradloom array, got {type(g).__name__}")
    if params.dtype != g.dtype:
        raise OptimTypeError(f"{kind} gradient dtype must match parameter dtype "
                             f"{type_name(params.dtype)}, got {type_name(g.dtype)}")
    if params.shape != g.shape:
        raise OptimValueError(f"{kind} gradient shape must match parameter shape {params.shape}, "
                              f"got {g.shape}")


def as_1d(a: array, what: str) -> array:
    """The array as the 1-D view the update kernels take (multi-dimensional parameters must be
    contiguous, so the view shares their memory)."""
    if a.ndim == 1:
        return a
    if not a.is_contiguous:
        raise OptimRuntimeError(f"{what}: a multi-dimensional array must be contiguous to be "
                                "updated in place; pass arr.flatten() of a contiguous array")
    return a.flatten()


