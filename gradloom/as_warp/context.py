"""`warp._src.context` under the alias: says clearly that Warp's native runtime is not there.

Libraries reach past Warp's public API into `warp._src.context.runtime.core`, the ctypes handle
of Warp's C++ library: newton's `host_transform.py` calls its exported builtins
(`wp_builtin_mul_transformf_transformf(a, b, ctypes.byref(result))`) on ctypes-backed Warp
values. gradloom has no such library, and its vector, matrix and transform values are numpy
arrays, not ctypes structures, so `ctypes.byref(result)` could not take them even if the
functions were provided. Reading `runtime.core` raises an AttributeError that says so.
"""

from __future__ import annotations


class _Runtime:
    """Stands for Warp's `Runtime`: it has no `core`."""

    @property
    def core(self) -> object:
        raise AttributeError(
            "warp._src.context.runtime.core is Warp's native C++ library, called through ctypes "
            "on ctypes-backed Warp values (e.g. newton's host_transform.py calls "
            "wp_builtin_mul_transformf_transformf(a, b, ctypes.byref(result))); gradloom, "
            "standing in for warp (gradloom.as_warp), has no such library, and its vector and "
            "transform values are numpy arrays, which ctypes.byref does not take")


#: Warp's process-wide runtime object
runtime = _Runtime()
