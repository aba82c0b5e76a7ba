"""`SGD` (Warp's `warp.optim.SGD`): stochastic gradient descent with momentum, dampening, weight
decay and Nesterov momentum, updating gradloom arrays in place (one launch per array)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..runtime.array.array import array
from ..runtime.array.ops import zeros_like
from ..runtime.launch.launch import launch
from ..types.query import scalar_of, type_name
from . import _kernels
from ._common import (
    FLOAT_SCALARS,
    OptimRuntimeError,
    OptimTypeError,
    as_1d,
    check_gradient,
    float_vector,
)


class SGD:
    """`step(grads)`: p -= lr * g, with optional momentum (the buffer starts as the first
    gradient), dampening, weight decay (L2) and Nesterov momentum — Warp's update rule."""

    def __init__(self, params: list[array] | None = None, lr: float = 0.001,
                 momentum: float = 0.0, dampening: float = 0.0, weight_decay: float = 0.0,
                 nesterov: bool = False) -> None:
        self.b: list[Any] = []
        self.set_params(params)
        self.lr = lr
        self.momentum = momentum
        self.dampening = dampening
        self.weight_decay = weight_decay
        self.nesterov = nesterov
        self.t = 0

    def set_params(self, params: list[array] | None) -> None:
        """Set the arrays to optimise; momentum buffers of matching shape and dtype are kept."""
        self.params = params
        if params is None or not isinstance(params, list) or not params:
            return
        if len(self.b) != len(params):
            self.b = [None] * len(params)
        for i, p in enumerate(params):
            old = self.b[i]
            if old is None or old.shape != p.shape or old.dtype != p.dtype:
                self.b[i] = zeros_like(p, requires_grad=False)

    def reset_internal_state(self) -> None:
        """Zero the momentum buffers and the step count."""
        for buf in self.b:
            buf.zero_()
        self.t = 0

    def step(self, grad: Sequence[array]) -> None:
        """One SGD update of every parameter array with the matching gradient array."""
        if self.params is None:
            raise OptimRuntimeError("SGD parameters must be set before calling step(), got None")
        for i, p in enumerate(self.params):
            SGD.step_detail(grad[i], self.b[i], self.lr, self.momentum, self.dampening,
                            self.weight_decay, self.nesterov, self.t, p)
        self.t += 1

    @staticmethod
    def step_detail(g: array, b: array, lr: float, momentum: float, dampening: float,
                    weight_decay: float, nesterov: bool, t: int, params: array) -> None:
        """One SGD update of a single parameter array (`t`: the step index, from 0)."""
        check_gradient("SGD", g, params)
        if params.dtype != b.dtype:
            raise OptimTypeError(f"SGD momentum buffer dtype must match parameter dtype "
                                 f"{type_name(params.dtype)}, got {type_name(b.dtype)}")
        if params.dtype not in FLOAT_SCALARS and not float_vector(params.dtype):
            raise OptimRuntimeError(f"Unsupported dtype for Warp SGD optimizer: {params.dtype}")
        kernel = _kernels.sgd(params.dtype, scalar_of(params.dtype))
        flat = [as_1d(a, "SGD") for a in (g, b, params)]
        launch(kernel, dim=flat[2].shape[0],
               inputs=[flat[0], flat[1], lr, momentum, dampening, weight_decay, int(nesterov),
                       int(t), flat[2]], device=params.device)
