"""Forward mode and second derivatives for `gradloom.torch` functions: what the `TANGENTS` and
`VJP_GRADS` hooks of interop/torch_bridge.py call (`torch.func.jvp`, double backward), over
forward_mode.py."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .forward_mode import hvp, jvp
from .interop.torch_bridge import TANGENTS, VJP_GRADS
from .runtime.array.array import NDArray, array

__all__ = ["tangents_of", "vjp_grads"]


def _listed(values: Any) -> list[Any]:
    return list(values) if isinstance(values, (list, tuple)) else [values]


def tangents_of(fn: Callable[..., Any], arrays: Sequence[Any], tangents: Sequence[Any]
                ) -> list[NDArray | None]:
    """The tangents of fn's outputs (numpy; None for a non-float output) given a tangent
    (numpy, or None) per argument."""
    _, touts = jvp(fn, list(arrays), [t if isinstance(a, array) else None
                                      for a, t in zip(arrays, tangents, strict=True)])
    return [None if t is None else t.numpy() for t in _listed(touts)]


def vjp_grads(fn: Callable[..., Any], arrays: Sequence[Any], weights: Sequence[Any],
              u: Sequence[Any]) -> tuple[list[NDArray | None], list[NDArray | None]]:
    """The derivatives of u · (Jᵀ w), the gradient a backward pass gives for output weights w:
    with respect to w, J u (one per output); with respect to the inputs, H u, the Hessian of
    Σ w·outputs along u (one per argument; None where it is not a float array)."""
    ju = tangents_of(fn, arrays, u)
    if all(w is None for w in weights) or all(d is None for d in u):
        return ju, [None] * len(arrays)
    hu = hvp(fn, list(arrays), [d if isinstance(a, array) else None
                                for a, d in zip(arrays, u, strict=True)], weights=list(weights))
    return ju, [None if h is None else h.numpy() for h in hu]


TANGENTS.fill(tangents_of)
VJP_GRADS.fill(vjp_grads)
