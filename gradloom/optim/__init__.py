"""`gradloom.optim` (Warp's `warp.optim`): the `Adam` and `SGD` optimizers, updating arrays in place
with gradloom kernels."""

from __future__ import annotations

from .adam import Adam
from .sgd import SGD

__all__ = ["SGD", "Adam"]
