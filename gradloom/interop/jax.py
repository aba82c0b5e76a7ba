"""JAX (CPU) conversions through DLPack: `from_jax`, `to_jax` and the dtype/device mappings.

jax is imported when one of these is called. JAX arrays are immutable: an array from
`from_jax` shares the JAX buffer, so treat it as read-only (JAX does not expect its buffers to
change). `to_jax` shares memory when JAX accepts the buffer as is, and copies otherwise.
"""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np

from gradloom.errors import GradloomError
from gradloom.interop.dlpack import from_dlpack
from gradloom.interop.numpy import dtype_from_numpy, dtype_to_numpy
from gradloom.runtime.array.array import array
from gradloom.runtime.device import Device, get_device


def jax_module() -> Any:
    """The jax module, or a clear error when it is not installed."""
    try:
        return importlib.import_module("jax")
    except ImportError as e:
        raise GradloomError("JAX is not installed: pip install jax jaxlib (CPU)") from e


def from_jax(jax_array: Any, dtype: Any = None) -> array:
    """An array over a JAX CPU array's buffer (zero-copy; read it, do not write it)."""
    jax = jax_module()
    if not isinstance(jax_array, jax.Array):
        raise GradloomError(f"from_jax: expected a jax.Array, got {type(jax_array).__name__}")
    return from_dlpack(jax_array, dtype)


def to_jax(a: array) -> Any:
    """A JAX array of `a`'s values (sharing its memory when JAX takes the buffer as is)."""
    jax = jax_module()
    if not isinstance(a, array):
        raise GradloomError(f"to_jax: expected a gradloom array, got {type(a).__name__}")
    try:
        return jax.dlpack.from_dlpack(a)
    except (TypeError, RuntimeError, BufferError, ValueError) as e:
        raise GradloomError(f"to_jax: JAX cannot import this array ({a!r}): {e}") from None


def dtype_from_jax(jax_dtype: Any) -> Any:
    """The gradloom scalar type of a JAX dtype."""
    return dtype_from_numpy(np.dtype(jax_dtype))


def dtype_to_jax(gradloom_dtype: Any) -> Any:
    """The JAX (numpy) dtype of a gradloom type."""
    jax_module()
    jnp = importlib.import_module("jax.numpy")
    return jnp.dtype(dtype_to_numpy(gradloom_dtype))


def device_from_jax(jax_device: Any) -> Device:
    """The gradloom device of a JAX device (its platform must be "cpu")."""
    platform = getattr(jax_device, "platform", str(jax_device))
    return get_device("cpu" if platform == "cpu" else str(platform))


def device_to_jax(device: Any = None) -> Any:
    """The JAX device for a gradloom device (the first JAX CPU device)."""
    get_device(device)
    return jax_module().devices("cpu")[0]
