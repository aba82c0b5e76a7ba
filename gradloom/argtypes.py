"""The concrete type of a launch argument, for a generic kernel's implicit overload (as Warp)."""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from .errors import GradloomError, LaunchError
from .runtime.array.array import array
from .runtime.array.fabric import FABRIC_CLASSES
from .runtime.array.foreign import foreign_to_array
from .runtime.array.indexed import indexedarray
from .types import (
    ArrayType,
    IndexedArrayType,
    VecValue,
    bool_,
    float32,
    int32,
)
from .types.scalars import scalar_type_of


def launch_arg_type(kernel_key: str, name: str, value: Any, template: Any) -> Any:
    """The type a generic parameter (`Any`, `wp.array(dtype=Any)`) takes from its argument:
    arrays give their dtype and ndim, Python floats float32, ints int32, bools bool, numpy
    scalars, vectors, matrices and struct instances their own type."""
    t = _array_type(value, name)
    if t is None and not isinstance(template, ArrayType):
        t = _value_type(value)
    if t is None:
        want = "an array" if isinstance(template, ArrayType) else "a value with a kernel type"
        raise LaunchError(f"kernel '{kernel_key}': generic argument '{name}' needs {want} to "
                          f"choose its type, got {type(value).__name__}")
    return t


def _array_type(value: Any, name: str) -> ArrayType | IndexedArrayType | None:
    if isinstance(value, (array, indexedarray, *FABRIC_CLASSES)):
        return value.__gl_type__()  # type: ignore[no-any-return]
    if isinstance(value, (VecValue, np.generic)):
        return None
    if isinstance(value, np.ndarray) or hasattr(type(value), "__dlpack__"):
        try:
            return foreign_to_array(value, None, f"argument '{name}'").__gl_type__()  # type: ignore[no-any-return]
        except GradloomError:
            return None
    return None


def _value_type(value: Any) -> Any:
    if isinstance(value, np.generic) or scalar_type_of(value) is not None:
        # before float (numpy's float64 is a Python float too) and int (`wp.bool(x)` is one)
        return scalar_type_of(value)
    if isinstance(value, builtins.bool):
        return bool_
    if isinstance(value, builtins.int):
        return int32
    if isinstance(value, builtins.float):
        return float32
    if isinstance(value, VecValue):
        return value.gl_type
    return getattr(type(value), "__gl_type__", None)
