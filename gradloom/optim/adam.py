"""`Adam` (Warp's `warp.optim.Adam`): Adam updates of gradloom arrays in place, one kernel launch
per parameter array.

Parameters may be float16 (moments kept in float32, as in Warp), float32 or vec3 as in Warp,
and also float64 and other float32/float64 vectors (a superset).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..runtime.array.array import array
from ..runtime.array.ops import zeros
from ..runtime.launch.launch import launch
from ..types import float16, float32
from ..types.query import scalar_of
from . import _kernels
from ._common import FLOAT_SCALARS, OptimRuntimeError, as_1d, check_gradient, float_vector


def _moment_dtype(param_dtype: Any) -> Any:
    if param_dtype == float16:
        return float32  # moments stay in float32, as in Warp
    if param_dtype in FLOAT_SCALARS or float_vector(param_dtype):
        return param_dtype
    raise OptimRuntimeError(f"Unsupported dtype for Warp Adam optimizer: {param_dtype}")


class Adam:
    """Adaptive Moment Estimation: `step(grads)` updates each parameter array in place.

    params: list of arrays (or None, then `set_params` later); lr: step size; betas: decay
    rates of the first and second moment; eps: added to the denominator.
    """

    def __init__(self, params: list[array] | None = None, lr: float = 0.001,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-08) -> None:
        self.m: list[Any] = []
        self.v: list[Any] = []
        self.set_params(params)
        self.lr = lr
        self.beta1, self.beta2 = betas[0], betas[1]
        self.eps = eps
        self.t = 0

    def set_params(self, params: list[array] | None) -> None:
        """Set the arrays to optimise; moment buffers of matching shape and dtype are kept."""
        self.params = params
        if params is None or not isinstance(params, list) or not params:
            return
        if len(self.m) != len(params):
            self.m = [None] * len(params)
        if len(self.v) != len(params):
            self.v = [None] * len(params)
        for i, p in enumerate(params):
            dtype = _moment_dtype(p.dtype)
            for moments in (self.m, self.v):
                old = moments[i]
                if old is None or old.shape != p.shape or old.dtype != dtype:
                    moments[i] = zeros(p.shape, dtype=dtype, device=p.device)

    def reset_internal_state(self) -> None:
        """Zero the moments and the step count."""
        for buf in (*self.m, *self.v):
            buf.zero_()
        self.t = 0

    def step(self, grad: Sequence[array]) -> None:
        """One Adam update of every parameter array with the matching gradient array."""
        if self.params is None:
            raise OptimRuntimeError("Adam parameters must be set before calling step(), got None")
        for i, p in enumerate(self.params):
            Adam.step_detail(grad[i], self.m[i], self.v[i], self.lr, self.beta1, self.beta2,
                             self.t, self.eps, p)
        self.t += 1

    @staticmethod
    def step_detail(g: array, m: array, v: array, lr: float, beta1: float, beta2: float,
                    t: float, eps: float, params: array) -> None:
        """One Adam update of a single parameter array (`t`: the step index, from 0)."""
        check_gradient("Adam", g, params)
        moment = _moment_dtype(params.dtype)
        if float_vector(params.dtype):
            kernel = _kernels.adam_vector(params.dtype, scalar_of(params.dtype))
        else:
            kernel = _kernels.adam_scalar(params.dtype, moment)
        flat = [as_1d(a, "Adam") for a in (g, m, v, params)]
        launch(kernel, dim=flat[3].shape[0], inputs=[flat[0], flat[1], flat[2], lr, beta1, beta2,
                                                     float(t), eps, flat[3]],
               device=params.device)
