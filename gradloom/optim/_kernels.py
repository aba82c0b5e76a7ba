"""The update kernels of the optimizers, one specialisation per element type (built on first use)."""

# mypy: ignore-errors
# (kernel source: its annotations are gradloom types, which mypy cannot read)

import functools
from typing import Any

import gradloom as wp

from ..types import ScalarType


@functools.cache
def adam_scalar(param_t: ScalarType, moment_t: ScalarType) -> Any:
    """Adam for scalar parameters; moments (and the arithmetic) in `moment_t` (float32 for
    float16 parameters, as in Warp)."""

    @wp.kernel
    def adam_step(g: wp.array(dtype=param_t), m: wp.array(dtype=moment_t),
                  v: wp.array(dtype=moment_t), lr: moment_t, beta1: moment_t, beta2: moment_t,
                  t: moment_t, eps: moment_t, params: wp.array(dtype=param_t)):
        i = wp.tid()
        gi = moment_t(g[i])
        m[i] = beta1 * m[i] + (1.0 - beta1) * gi
        v[i] = beta2 * v[i] + (1.0 - beta2) * gi * gi
        mhat = m[i] / (1.0 - wp.pow(beta1, t + 1.0))
        vhat = v[i] / (1.0 - wp.pow(beta2, t + 1.0))
        params[i] = params[i] - param_t(lr * mhat / (wp.sqrt(vhat) + eps))

    return adam_step


@functools.cache
def adam_vector(param_t: Any, scalar_t: ScalarType) -> Any:
    """Adam for vector parameters, component by component."""

    @wp.kernel
    def adam_step(g: wp.array(dtype=param_t), m: wp.array(dtype=param_t),
                  v: wp.array(dtype=param_t), lr: scalar_t, beta1: scalar_t, beta2: scalar_t,
                  t: scalar_t, eps: scalar_t, params: wp.array(dtype=param_t)):
        i = wp.tid()
        m[i] = beta1 * m[i] + (1.0 - beta1) * g[i]
        v[i] = beta2 * v[i] + (1.0 - beta2) * wp.cw_mul(g[i], g[i])
        mhat = m[i] / (1.0 - wp.pow(beta1, t + 1.0))
        vhat = v[i] / (1.0 - wp.pow(beta2, t + 1.0))
        params[i] = params[i] - lr * wp.cw_div(mhat, wp.sqrt(vhat) + param_t(eps))

    return adam_step


@functools.cache
def sgd(param_t: Any, scalar_t: ScalarType) -> Any:
    """SGD with momentum, dampening, weight decay and Nesterov momentum (Warp's update rule:
    the momentum buffer starts as the first gradient)."""

    @wp.kernel
    def sgd_step(g: wp.array(dtype=param_t), b: wp.array(dtype=param_t), lr: scalar_t,
                 momentum: scalar_t, dampening: scalar_t, weight_decay: scalar_t,
                 nesterov: int, t: int, params: wp.array(dtype=param_t)):
        i = wp.tid()
        gt = g[i]
        if weight_decay != 0.0:
            gt = gt + weight_decay * params[i]
        if momentum != 0.0:
            bt = b[i]
            if t > 0:
                bt = momentum * bt + (1.0 - dampening) * gt
            else:
                bt = gt
            if nesterov == 1:
                gt = gt + momentum * bt
            else:
                gt = bt
            b[i] = bt
        params[i] = params[i] - lr * gt

    return sgd_step
