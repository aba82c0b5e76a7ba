"""Side-by-side checks with warp-lang: the same kernels built by gradloom and by Warp.

Test modules write their kernels inside a factory `make(wp)` that decorates them with the given
module's `wp.kernel` (the framework under test is wpcompat's `wp`, gradloom by default); `warp_module()` gives warp-lang (CPU) or None where it is not installed,
and `both(make)` gives the two sets of kernels.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from wpcompat import wp as under_test


@functools.cache
def warp_module() -> Any:
    """warp-lang, initialised quietly for the CPU, or None when it cannot be imported."""
    try:
        import warp
    except Exception:  # noqa: BLE001 - any import failure means "not available"
        return None
    warp.config.quiet = True
    warp.init()
    return warp


def both(make: Callable[[Any], Any]) -> tuple[Any, Any]:
    """(kernels built with the framework under test, kernels built with warp-lang or None)."""
    w = warp_module()
    return make(under_test), (make(w) if w is not None else None)
