"""Forward mode for users: `jvp` and `hvp` of a Python function (or a kernel launch) that
launches kernels.

The function runs once inside a `TangentTape` (runtime/tape/tangent.py): each launch runs its
kernel's tangent kernel, which computes the same values and their tangents
(autodiff/forward.py). `hvp` also records those launches on a `wp.Tape` and runs it backwards
from the loss's tangent: reverse-over-forward, d/dx (∇L(x)·v) = H v, exact through runtime
loops (the tangent kernel is an ordinary kernel: its adjoint keeps loop values on the stack as
any adjoint does). `gradloom.autograd` re-exports both and builds forward-mode Jacobians (one
column per input component) on `tangent_run`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .errors import GradloomError
from .kernel import Kernel
from .runtime.array.array import NDArray, array
from .runtime.launch.launch import launch
from .runtime.tape.tangent import TangentTape
from .runtime.tape.tape import Tape

__all__ = ["hvp", "jvp", "tangent_run"]


def tangent_run(run: Callable[[], list[Any]], seeds: Sequence[tuple[array, Any]]
                ) -> tuple[list[Any], list[NDArray | None]]:
    """Run `run()` (which returns its output arrays) with the tangent of each seeded array set;
    its outputs and each output's tangent (memory of its own: TangentTape.result; None for a
    non-float output)."""
    with TangentTape() as tape:
        for a, values in seeds:
            _check_seed(a, values)
            tape.set_tangent(a, values)
        outputs = run()
    tangents = [tape.result(o) if _float_array(o) else None for o in outputs]
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
    the value `wp.atomic_add` returns and the one `atomic_min`/`atomic_max` return where threads
    may share the element, `@wp.func_grad` functions on inputs with a tangent (a clear error
    names each).
    """
    ins = list(inputs)
    if len(tangents) != len(ins):
        raise GradloomError(f"jvp: {len(tangents)} tangents given for {len(ins)} inputs "
                            "(one per input; None where an input has none)")
    seeds = _seeds(ins, tangents, "jvp")
    run, single = _runner(function, ins, dim, outputs)
    outs, touts = tangent_run(run, seeds)
    result = [array(t, dtype=o.dtype, copy=False) if t is not None else None
              for o, t in zip(outs, touts, strict=True)]
    return (outs[0], result[0]) if single[0] else (outs, result)


def hvp(function: Kernel | Callable[..., Any], inputs: Sequence[Any], v: Sequence[Any],
        dim: Any = None, outputs: Sequence[Any] | None = None,
        weights: Sequence[Any] | None = None) -> list[Any]:
    """Hessian-vector product H·v of a one-element loss `function(*inputs)` (as `jvp` takes the
    function; a kernel's single output is the loss), or with `weights` (one per output, each an
    array or numpy array of its shape) of the loss Σ weights·outputs of a function returning
    several arrays. `v` holds one entry per input (None: zero).
    Returns one float64-free array per input, the input's rows of H·v (None for an input that
    is not a float array): exact, by reverse mode over forward mode (the tangent kernels'
    adjoints). The function runs once on the given arrays; their `.grad` are left as they were.

    Arrays the function makes need no `requires_grad`: every array of a launch gets a gradient
    for the reverse pass. Not yet: copies and fills of arrays inside the function (a clear
    error), and what `jvp` does not support.
    """
    ins = list(inputs)
    if len(v) != len(ins):
        raise GradloomError(f"hvp: {len(v)} directions given for {len(ins)} inputs "
                            "(one per input; None where an input has none)")
    seeds = _seeds(ins, v, "hvp")
    run, _ = _runner(function, ins, dim, outputs)
    tape, tangents = Tape(), TangentTape(gradients=True)
    with tape, tangents:
        for a, values in seeds:
            _check_seed(a, values)
            tangents.set_tangent(a, values)
        outs = run()
        seeds_of = _loss_seeds(outs, weights)
        grads = {tangents.tangent_array(o): array(w, dtype=o.dtype) for o, w in seeds_of}
    tape.backward(grads=grads)
    return [array(tangents.result(a, gradient=True), dtype=a.dtype, copy=False)
            if _float_array(a) else None for a in ins]


def _loss_seeds(outs: list[Any], weights: Sequence[Any] | None) -> list[tuple[array, NDArray]]:
    """(output, the weight of its tangent in the loss) for hvp's reverse pass."""
    if weights is None:
        if len(outs) != 1 or not _float_array(outs[0]) or outs[0].size != 1:
            raise GradloomError("hvp: the function must return one float array of one element "
                                "(the loss), or give weights for its outputs")
        return [(outs[0], np.ones(outs[0].numpy().shape))]
    if len(weights) != len(outs):
        raise GradloomError(f"hvp: {len(weights)} weights for {len(outs)} outputs")
    seeds = []
    for o, w in zip(outs, weights, strict=True):
        if w is None or not _float_array(o):
            continue
        values = np.asarray(w.numpy() if isinstance(w, array) else w, dtype=np.float64)
        seeds.append((o, np.broadcast_to(values, o.numpy().shape).copy()))
    return seeds


def _seeds(ins: list[Any], tangents: Sequence[Any], what: str) -> list[tuple[array, Any]]:
    seeds = [(a, t) for a, t in zip(ins, tangents, strict=True) if t is not None]
    for k, (a, _) in enumerate(seeds):
        if not isinstance(a, array):
            raise GradloomError(f"{what}: input {k} is not an array, so it cannot have a "
                                "tangent (pass None for it)")
    return seeds


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
