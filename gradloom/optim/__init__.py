"""`gradloom.optim` (Warp's `warp.optim`): the `Adam` and `SGD` optimizers, updating arrays in place
with gradloom kernels."""

from __future__ import annotations

from .adam import Adam
from .sgd import SGD

__all__ = ["SGD", "Adam"]


def __getattr__(name: str) -> object:
    if name == "linear":  # `wp.optim.linear` (Krylov solvers), imported when used
        import importlib

        return importlib.import_module(".linear", __name__)
    raise AttributeError(f"module 'gradloom.optim' has no attribute '{name}'")
