"""Forward mode for users: `jvp` of a Python function (or a kernel launch) that launches kernels.

The function runs once inside a `TangentTape` (runtime/tangent.py): each launch runs its
kernel's tangent entry, which computes the same values and their tangents (autodiff/forward.py).
`gradloom.autograd` re-exports `jvp` and builds forward-mode Jacobians (one column per input
component) on `tangent_run`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .errors import GradloomError
from .kernel import Kernel
from .runtime.array import NDArray, array
from .runtime.launch import launch
from .runtime.tangent import TangentTape

__all__ = ["jvp", "tangent_run"]


def tangent_run(run: Callable[[], list[Any]], seeds: Sequence[tuple[array, Any]]
                ) -> tuple[list[Any], list[NDArray | None]]:
    """Run `run()` (which returns its output arrays) with the tangent of each seeded array set;
    its outputs and each output's tangent (a copy; None for a non-float output)."""
    with TangentTape() as tape:
        for a, values in seeds:
            _check_seed(a, values)
            tape.set_tangent(a, values)
        outputs = run()
        tangents = [np.array(tape.tangent(o)) if _float_array(o) else None for o in outputs]
    return outputs, tangents


def jvp(function: Kernel | Callable[..., Any], inputs: Sequence[Any],
        tangents: Sequence[Any], dim: Any = None, outputs: Sequence[Any] | None = None
        ) -> tuple[Any, Any]:
    """Forward mode: the outputs of `function(*inputs)` and their tangents (J·v).

    `function` is a Python function that launches kernels and returns its output array(s), as
    `gradcheck` takes, or a `@wp.kernel` launched with `dim` over `inputs` + `outputs` (the
    outputs are then what it returns). `tangents` holds one entry per input: the tangent of an
    array input (an array, a numpy array or a nested list of its shape), or None (zero; for
    scalars too). The function runs once, on the given arrays. Returns `(outputs, tangents)`:
    arrays, a single one where the function returned a single array.

    Each launch runs the kernel's tangent entry (compiled on first use), which computes the
    same values plus tangents; copies (`wp.copy`, `clone`, `assign`, item assignment) carry
    tangents, fills make them zero, other array operations are refused. Not yet: CUDA arrays,
    `wp.atomic_min`/`atomic_max` on float arrays, `@wp.func_grad` functions on inputs with a
    tangent (a clear error names each).
    """
    ins = list(inputs)
    if len(tangents) != len(ins):
        raise GradloomError(f"jvp: {len(tangents)} tangents given for {len(ins)} inputs "
                            "(one per input; None where an input has none)")
    seeds = [(a, t) for a, t in zip(ins, tangents, strict=True) if t is not None]
    for k, (a, _) in enumerate(seeds):
        if not isinstance(a, array):
            raise GradloomError(f"jvp: input {k} is not an array, so it cannot have a tangent "
                                "(pass None for it)")
    run, single = _runner(function, ins, dim, outputs)
    outs, touts = tangent_run(run, seeds)
    result = [array(t, dtype=o.dtype) if t is not None else None
              for o, t in zip(outs, touts, strict=True)]
    return (outs[0], result[0]) if single[0] else (outs, result)


def _runner(function: Any, ins: list[Any], dim: Any, outputs: Sequence[Any] | None
            ) -> tuple[Callable[[], list[Any]], list[bool]]:
    """How to run the function once, and a flag set when it returned a single array."""
    if isinstance(function, Kernel):
        if dim is None:
            raise GradloomError(f"jvp: dim is required when function is a kernel "
                                f"('{function.key}')")
        outs = list(outputs or [])

        def run_kernel() -> list[Any]:
            launch(function, dim, inputs=ins, outputs=outs)
            return outs

        return run_kernel, [False]
    if not callable(function):
        raise GradloomError(f"jvp: function must be a @wp.kernel or a callable, got "
                            f"{function!r}")
    single = [False]

    def run_function() -> list[Any]:
        result = function(*ins)
        if result is None and outputs:
            return list(outputs)
        if isinstance(result, array):
            single[0] = True
            return [result]
        if isinstance(result, (list, tuple)) and result and all(
                isinstance(r, array) for r in result):
            return list(result)
        raise GradloomError(f"jvp: function must return a gradloom array or a list of arrays, "
                            f"got {type(result).__name__}")

    return run_function, single


def _float_array(a: Any) -> bool:
    return isinstance(a, array) and a.numpy().dtype.kind == "f"


def _check_seed(a: array, values: Any) -> None:
    if not _float_array(a):
        raise GradloomError(f"jvp: a tangent was given for an array of {a.dtype!r}; only float "
                            "arrays have tangents")
    shape = np.shape(values.numpy() if isinstance(values, array) else values)
    if shape != a.numpy().shape and shape != a.shape:
        raise GradloomError(f"jvp: tangent of shape {shape} for an array of shape {a.shape} "
                            f"(dtype {a.dtype!r}); they must match")
