"""numpy dtype conversions (Warp's `dtype_from_numpy` / `dtype_to_numpy`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from gradloom.errors import GradloomError
from gradloom.runtime.array.array import resolve_dtype, storage_dtype
from gradloom.runtime.array.foreign import scalar_dtype_of


def dtype_from_numpy(numpy_dtype: Any) -> Any:
    """The gradloom scalar type of a numpy dtype (np.float32 -> wp.float32)."""
    try:
        npdt = np.dtype(numpy_dtype)
    except TypeError as e:
        raise GradloomError(f"{numpy_dtype!r} is not a numpy dtype") from e
    return scalar_dtype_of(npdt, "dtype_from_numpy")


def dtype_to_numpy(gradloom_dtype: Any) -> Any:
    """The numpy scalar type of a gradloom type (vectors and matrices: their component's)."""
    return storage_dtype(resolve_dtype(gradloom_dtype)).type
