"""Device backends loaded by name: what generic runtime code calls of the CUDA implementation.

Generic code (arrays, copies, launches, the Tape, capture) never imports a CUDA module. It asks
`CUDA.get("launch")`, and the first such call imports the backend's registration module by its
name (`runtime/cuda_backend.py`), which imports the CUDA modules and provides their parts. So the
dependency points from the backend to the generic runtime, a process that never touches a GPU
never loads the CUDA code, and the import graph has no cycle through it (as tinygrad loads
`ops_<device>` and Triton its drivers by name).
"""

from __future__ import annotations

import importlib
from typing import Any


class Backend:
    """The parts of one device kind's implementation, registered by its module on import."""

    def __init__(self, kind: str, module: str) -> None:
        self.kind, self.module = kind, module
        self._parts: dict[str, Any] = {}

    def provide(self, **parts: Any) -> None:
        """Register parts (the backend's registration module calls this once)."""
        self._parts.update(parts)

    def get(self, part: str) -> Any:
        """A part, the backend loaded by name on first use."""
        found = self._parts.get(part)
        if found is None:
            importlib.import_module(self.module)
            found = self._parts[part]
        return found


#: NVIDIA GPUs: runtime/cuda_backend.py registers the parts
CUDA = Backend("cuda", "gradloom.runtime.cuda_backend")
