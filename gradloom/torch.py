"""`gradloom.torch`: PyTorch interop (Warp's `warp.torch` names) and the autograd bridge.

    import gradloom.torch as gt
    op = gt.function(kernel, outputs={"y": "x"})   # a differentiable torch op
    y = op(x_tensor, w_tensor)

Importing this module imports torch only when a function is called.
"""

from __future__ import annotations

from gradloom.interop.torch import (
    device_from_torch,
    device_to_torch,
    dtype_from_torch,
    dtype_to_torch,
    from_torch,
    to_torch,
)
from gradloom.interop.torch_bridge import function

__all__ = ["device_from_torch", "device_to_torch", "dtype_from_torch", "dtype_to_torch",
           "from_torch", "function", "to_torch"]
