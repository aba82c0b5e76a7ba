"""Gradient checking (Warp's `warp.autograd`): `jacobian` (reverse or forward mode), `jacobian_fd`, `gradcheck` and its report; `jvp` and `hvp` (forward_mode.py)."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import autograd_tape
from .errors import GradloomError
from .jacobian_report import (
    REL_FLOOR,
    PairCheck,
    compare_jacobians,
    format_report,
    jacobian_plot,
    plot_to_file,
)
from .kernel import Kernel
from .runtime.array.array import NDArray, array
from .runtime.array.ops import clone, zeros
from .runtime.launch.launch import launch
from .runtime.tape.tape import Tape
from .types import MatrixType, ScalarType, VectorType, float64

__all__ = ["GradcheckError", "PairCheck", "compare_jacobians", "format_report", "gradcheck",
           "gradcheck_hvp", "gradcheck_tape", "hvp", "jacobian", "jacobian_fd", "jacobian_plot",
           "jvp"]

#: (input index, output index) → Jacobian of shape (output components, input components).
Jacobians = dict[tuple[int, int], array]
Mask = Sequence[tuple[int | str, int | str]]
_Runner = Callable[[list[Any], list[Any], bool], list[Any]]



class GradcheckError(GradloomError, AssertionError, ValueError):
    """`gradcheck` failed; the message is the report. (Warp raises ValueError; this is both.)"""


class JacobianArgumentError(GradloomError, ValueError):
    """What was asked cannot be differentiated as given (a mask naming no input or output, a
    kernel without an adjoint): a ValueError, as Warp raises."""


# --------------------------------------------------------------------------------------------
# What is differentiated: a kernel launch or a Python function, run on fresh argument copies


@dataclass
class _Target:
    """A kernel or function, the labels of its arguments, and how to run its forward pass.

    `run(inputs, outputs, record)` runs the forward on the given (fresh) arguments and returns
    the output arrays; `record` says whether a kernel launch goes on the active tape.
    `outputs` are the user's output arrays, or for a Python function those of a first run.
    """

    title: str
    inputs: list[Any]
    outputs: list[Any]
    input_labels: list[str]
    output_labels: list[str]
    run: _Runner
    restore: Callable[[], None] = field(default=lambda: None)


def _target(function: Any, dim: Any, inputs: Sequence[Any] | None,
            outputs: Sequence[Any] | None, launch_kw: dict[str, Any]) -> _Target:
    ins, outs = list(inputs or []), list(outputs or [])
    if isinstance(function, Kernel):
        return _kernel_target(function, dim, ins, outs, launch_kw)
    if not callable(function):
        raise GradloomError(f"function must be a @wp.kernel or a callable, got {function!r}")
    return _function_target(function, ins, outs)


def _kernel_target(kernel: Kernel, dim: Any, inputs: list[Any], outputs: list[Any],
                   launch_kw: dict[str, Any]) -> _Target:
    if dim is None:
        raise GradloomError(f"dim is required when function is a kernel ('{kernel.key}')")
    names = [name for name, _ in kernel.params]
    if len(inputs) + len(outputs) != len(names):
        raise GradloomError(
            f"kernel '{kernel.key}' takes {len(names)} arguments ({', '.join(names)}); got "
            f"{len(inputs)} inputs and {len(outputs)} outputs")

    def run(ins: list[Any], outs: list[Any], record: bool) -> list[Any]:
        launch(kernel, dim, inputs=ins, outputs=outs, record_tape=record, **launch_kw)
        return outs

    return _Target(f"kernel '{kernel.key}'", inputs, outputs, names[: len(inputs)],
                   names[len(inputs):], run)


def _function_target(function: Callable[..., Any], inputs: list[Any],
                     outputs: list[Any]) -> _Target:
    """A Python function called as `function(*inputs)`; it returns its output array(s).

    A function that returns nothing writes the arrays given as `outputs` (e.g. captured ones):
    their values and gradients are put back before every run and at the end.
    """
    name = getattr(function, "__qualname__", None) or repr(function)
    restore = _snapshot(outputs)

    def run(ins: list[Any], outs: list[Any], record: bool) -> list[Any]:
        restore()
        return _returned_arrays(function(*ins), outputs, name)

    try:
        probe = run(*_fresh_args(inputs, []), False)
    finally:
        restore()
    return _Target(f"function '{name}'", inputs, probe, _param_labels(function, len(inputs)),
                   [f"output {j}" for j in range(len(probe))], run, restore)


def _returned_arrays(result: Any, given: list[Any], name: str) -> list[Any]:
    if result is None:
        if not given:
            raise GradloomError(f"function '{name}' returned no arrays and no outputs were given")
        return given
    if isinstance(result, array):
        return [result]
    if isinstance(result, (list, tuple)) and all(isinstance(r, array) for r in result):
        return list(result)
    raise GradloomError(f"function '{name}' must return a gradloom array or a list of arrays, "
                        f"got {type(result).__name__}")


def _param_labels(function: Callable[..., Any], n: int) -> list[str]:
    """The function's positional parameter names (`input k` where there is none)."""
    try:
        params = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):
        params = []
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    names = [p.name for p in params if p.kind in positional]
    return [names[k] if k < len(names) else f"input {k}" for k in range(n)]


def _snapshot(arrays: list[Any]) -> Callable[[], None]:
    """A function that puts back the current values and gradients of `arrays`."""
    saved = [(a, np.array(a.numpy()), a.grad, None if a.grad is None else np.array(a.grad.numpy()))
             for a in arrays if isinstance(a, array)]

    def restore() -> None:
        for a, values, grad, grad_values in saved:
            a.numpy()[...] = values
            a.grad = grad
            if grad is not None and grad_values is not None:
                grad.numpy()[...] = grad_values

    return restore


def _fresh_args(inputs: list[Any], outputs: list[Any]) -> tuple[list[Any], list[Any]]:
    """Copies of the array arguments (same requires_grad); one copy per distinct array."""
    memo: dict[int, array] = {}

    def fresh(v: Any) -> Any:
        if not isinstance(v, array):
            return v
        if id(v) not in memo:
            memo[id(v)] = clone(v)
        return memo[id(v)]

    return [fresh(v) for v in inputs], [fresh(v) for v in outputs]


# --------------------------------------------------------------------------------------------
# Which (input, output) pairs


def _differentiable(v: Any) -> bool:
    """A float (scalar, vector or matrix) array with requires_grad."""
    if not isinstance(v, array) or not v.requires_grad:
        return False
    t = v.dtype.dtype if isinstance(v.dtype, (VectorType, MatrixType)) else v.dtype
    return isinstance(t, ScalarType) and t.is_float


def _components(a: array) -> int:
    """Scalar components: a vec3 array of 4 elements has 12."""
    return int(a.numpy().size)


def _pairs(target: _Target, mask: Mask | None) -> list[tuple[int, int]]:
    if mask is None:
        pairs = [(i, j) for i, x in enumerate(target.inputs) if _differentiable(x)
                 for j, y in enumerate(target.outputs) if _differentiable(y)]
    else:
        pairs = []
        for a, b in mask:
            pair = (_slot(a, target.input_labels, "input"), _slot(b, target.output_labels, "output"))
            _check_masked(target, pair)
            if pair not in pairs:
                pairs.append(pair)
    if not pairs:
        raise GradloomError(
            f"{target.title}: nothing to differentiate; Jacobians need an input and an output "
            "that are float arrays with requires_grad=True")
    return pairs


def _slot(ref: int | str, labels: list[str], kind: str) -> int:
    """The index of an input/output named by index, label, or `input k` / `output k`."""
    if isinstance(ref, str):
        names = {f"{kind} {k}": k for k in range(len(labels))} | {s: k for k, s in enumerate(labels)}
        if ref in names:
            return names[ref]
    elif isinstance(ref, (int, np.integer)) and not isinstance(ref, bool) and 0 <= ref < len(labels):
        return int(ref)
    raise JacobianArgumentError(f"input_output_mask: there is no {kind} {ref!r}; the {kind}s are "
                        f"{', '.join(labels) or 'none'}")


def _check_masked(target: _Target, pair: tuple[int, int]) -> None:
    for k, values, labels in ((pair[0], target.inputs, target.input_labels),
                              (pair[1], target.outputs, target.output_labels)):
        if not _differentiable(values[k]):
            raise GradloomError(
                f"input_output_mask names '{labels[k]}' of {target.title}, which is not a float "
                "array with requires_grad=True")


def _limit(n: int, cap: int) -> int:
    return n if cap <= 0 else min(n, cap)


# --------------------------------------------------------------------------------------------
# Finite differences


def _fd_jacobians(target: _Target, pairs: list[tuple[int, int]], eps: float,
                  max_inputs_per_var: int) -> dict[tuple[int, int], NDArray]:
    """Central differences in float64, one column per perturbed input component (columns
    past `max_inputs_per_var` are NaN, as in Warp)."""
    jacs = {(i, j): np.full((_components(target.outputs[j]), _components(target.inputs[i])),
                            np.nan) for i, j in pairs}
    for i in sorted({i for i, _ in pairs}):
        outs = [j for a, j in pairs if a == i]
        for c in range(_limit(_components(target.inputs[i]), max_inputs_per_var)):
            plus, x_plus = _perturbed_run(target, i, c, eps, outs)
            minus, x_minus = _perturbed_run(target, i, c, -eps, outs)
            step = x_plus - x_minus  # the step actually stored (float32 rounds x ± eps)
            if not step > 0:
                raise GradloomError(
                    f"{target.title}: eps={eps} does not change component {c} of input "
                    f"'{target.input_labels[i]}' at its precision; use a larger eps")
            for j in outs:
                jacs[i, j][:, c] = (plus[j] - minus[j]) / step
    return jacs


def _perturbed_run(target: _Target, i: int, c: int, delta: float,
                   outs: list[int]) -> tuple[dict[int, NDArray], float]:
    """Run on fresh copies with component c of input i moved by delta: (outputs, stored x)."""
    ins, fresh_outs = _fresh_args(target.inputs, target.outputs)
    x = ins[i].numpy()
    index = np.unravel_index(c, x.shape)
    x[index] = float(x[index]) + delta
    stored = float(x[index])
    produced = _checked_outputs(target, target.run(ins, fresh_outs, False))
    return {j: np.array(produced[j].numpy(), dtype=np.float64).reshape(-1) for j in outs}, stored


def _checked_outputs(target: _Target, produced: list[Any]) -> list[Any]:
    """The outputs of a run, checked to have the structure of the first one."""
    shapes = [(a.shape, a.dtype) if isinstance(a, array) else None for a in produced]
    expected = [(a.shape, a.dtype) if isinstance(a, array) else None for a in target.outputs]
    if shapes != expected:
        raise GradloomError(f"{target.title} produced outputs {shapes}, expected {expected}")
    return produced


# --------------------------------------------------------------------------------------------
# Reverse mode


def _new_tape() -> Tape:
    return Tape()


def _ad_jacobians(target: _Target, pairs: list[tuple[int, int]],
                  max_outputs_per_var: int) -> dict[tuple[int, int], NDArray]:
    """One backward pass per output component, seeded one-hot; each gives a row (rows past
    `max_outputs_per_var` are NaN, as in Warp)."""
    jacs = {(i, j): np.full((_components(target.outputs[j]), _components(target.inputs[i])),
                            np.nan) for i, j in pairs}
    ins, outs = _fresh_args(target.inputs, target.outputs)
    tape = _new_tape()
    with tape:
        produced = target.run(ins, outs, True)
    produced = _checked_outputs(target, produced)
    _refuse_without_adjoint(tape)
    for j in sorted({j for _, j in pairs}):
        sources = [i for i, b in pairs if b == j]
        seed = zeros(produced[j].shape, dtype=produced[j].dtype)
        values = seed.numpy()
        for r in range(_limit(_components(produced[j]), max_outputs_per_var)):
            values[...] = 0
            values[np.unravel_index(r, values.shape)] = 1
            tape.backward(grads={produced[j]: seed})
            for i in sources:
                jacs[i, j][r, :] = _gradient_row(ins[i])
            tape.zero()
            for i in sources:  # the tape zeroes them too; an input it never saw keeps its grad
                if ins[i].grad is not None:
                    ins[i].grad.zero_()
    return jacs


def _refuse_without_adjoint(tape: Tape) -> None:
    """A launch of a kernel compiled without an adjoint would give zero rows silently."""
    for record in getattr(tape, "records", ()):
        kernel = getattr(record, "kernel", None)
        if kernel is not None and getattr(kernel, "enable_backward", None) is False:
            raise JacobianArgumentError(
                f"Kernel must have backward pass enabled to compute Jacobians: kernel "
                f"'{kernel.key}' is built with enable_backward=False (on it or its module)")


def _fwd_jacobians(target: _Target, pairs: list[tuple[int, int]],
                   max_inputs_per_var: int) -> dict[tuple[int, int], NDArray]:
    """Forward mode: one JVP per input component, seeded one-hot; each gives a column."""
    jacs = {(i, j): np.zeros((_components(target.outputs[j]), _components(target.inputs[i])))
            for i, j in pairs}
    for i in sorted({i for i, _ in pairs}):
        outs = [j for a, j in pairs if a == i]
        for c in range(_limit(_components(target.inputs[i]), max_inputs_per_var)):
            ins, fresh_outs = _fresh_args(target.inputs, target.outputs)
            seed = np.zeros(ins[i].numpy().shape)
            seed[np.unravel_index(c, seed.shape)] = 1

            def run(ins: list[Any] = ins, outs: list[Any] = fresh_outs) -> list[Any]:
                return _checked_outputs(target, target.run(ins, outs, True))

            _, tangents = _forward_mode().tangent_run(run, [(ins[i], seed)])
            for j in outs:
                column = tangents[j]
                if column is not None:
                    jacs[i, j][:, c] = np.asarray(column, dtype=np.float64).reshape(-1)
    return jacs


def _forward_mode() -> Any:
    """forward_mode.py, loaded on first use (`import gradloom` does not load forward mode)."""
    from . import forward_mode

    return forward_mode


def jvp(function: Kernel | Callable[..., Any], inputs: Sequence[Any], tangents: Sequence[Any],
        dim: Any = None, outputs: Sequence[Any] | None = None) -> tuple[Any, Any]:
    """Forward mode: the outputs of `function(*inputs)` and their tangents J·v (see
    gradloom/forward_mode.py `jvp`, and docs/autodiff.md)."""
    return _forward_mode().jvp(function, inputs, tangents, dim, outputs)  # type: ignore[no-any-return]


def hvp(function: Kernel | Callable[..., Any], inputs: Sequence[Any], v: Sequence[Any],
        dim: Any = None, outputs: Sequence[Any] | None = None,
        weights: Sequence[Any] | None = None) -> list[Any]:
    """Hessian-vector product H·v of a one-element loss (or of Σ weights·outputs), by reverse
    mode over forward mode (see gradloom/forward_mode.py `hvp`, and docs/autodiff.md)."""
    return _forward_mode().hvp(function, inputs, v, dim, outputs,  # type: ignore[no-any-return]
                               weights)


def gradcheck_hvp(function: Kernel | Callable[..., Any], inputs: Sequence[Any],
                  v: Sequence[Any] | None = None, *, raise_exception: bool = True,
                  show_summary: bool = True, **options: Any) -> bool:
    """The second-order check: `hvp` against central differences of reverse-mode gradients
    (options: dim, outputs, weights, eps, atol, rtol, seed; see second_order.py `hvp_check`).
    Prints the report when `show_summary`; on failure raises `GradcheckError` if
    `raise_exception`, else returns False."""
    from . import second_order

    passed, report = second_order.hvp_check(function, inputs, v, **options)
    if show_summary:
        print(report)
    if not passed and raise_exception:
        raise GradcheckError(report)
    return passed


_MODES = {"rev": "rev", "reverse": "rev", "fwd": "fwd", "forward": "fwd"}


def _mode(mode: str) -> str:
    if mode not in _MODES:
        raise GradloomError(f"mode must be 'reverse' ('rev') or 'forward' ('fwd'), got {mode!r}")
    return _MODES[mode]


def _mode_jacobians(mode: str, target: _Target, pairs: list[tuple[int, int]],
                    max_inputs_per_var: int, max_outputs_per_var: int
                    ) -> dict[tuple[int, int], NDArray]:
    if _mode(mode) == "fwd":
        return _fwd_jacobians(target, pairs, max_inputs_per_var)
    return _ad_jacobians(target, pairs, max_outputs_per_var)


def _gradient_row(a: array) -> NDArray:
    if a.grad is None:
        return np.zeros(_components(a))
    return np.array(a.grad.numpy(), dtype=np.float64).reshape(-1)


# --------------------------------------------------------------------------------------------
# Public API


def jacobian(function: Kernel | Callable[..., Any], dim: Any = None,
             inputs: Sequence[Any] | None = None, outputs: Sequence[Any] | None = None,
             input_output_mask: Mask | None = None, device: Any = None, max_blocks: int = 0,
             block_dim: int | None = None, max_outputs_per_var: int = -1,
             plot_jacobians: bool = False, mode: str = "reverse",
             max_inputs_per_var: int = -1) -> Jacobians:
    """Jacobians {(input index, output index): float64 array (out comps, in comps)}.

    `function` is a `@wp.kernel` (launched with `dim`, `inputs`, `outputs`) or a Python function
    called as `function(*inputs)` that returns its output array(s). Only float arrays with
    requires_grad=True take part. The forward runs on copies: the caller's arrays are not
    changed. `mode="reverse"` (Warp's) takes one backward pass per output component (rows past
    `max_outputs_per_var`, when > 0, are left at zero); `mode="forward"` one forward-mode (JVP)
    run per input component (columns past `max_inputs_per_var`, when > 0, are left at zero):
    cheaper where inputs are fewer than outputs.
    """
    target = _target(function, dim, inputs, outputs, _launch_kw(device, max_blocks, block_dim))
    try:
        jacs = _mode_jacobians(mode, target, _pairs(target, input_output_mask),
                               max_inputs_per_var, max_outputs_per_var)
    finally:
        target.restore()
    if plot_jacobians:
        plot_to_file(jacs, target.input_labels, target.output_labels,
                     f"{target.title}: Jacobian (autodiff)")
    return _as_arrays(jacs)


def jacobian_fd(function: Kernel | Callable[..., Any], dim: Any = None,
                inputs: Sequence[Any] | None = None, outputs: Sequence[Any] | None = None,
                input_output_mask: Mask | None = None, device: Any = None, max_blocks: int = 0,
                block_dim: int | None = None, max_inputs_per_var: int = -1, eps: float = 1e-4,
                plot_jacobians: bool = False) -> Jacobians:
    """Central finite-difference Jacobians, in the same layout as `jacobian`.

    Each scalar component of each differentiable input is moved by ±eps on fresh copies of all
    arguments (kernels may overwrite their inputs), the forward runs without a tape, and the
    difference is taken in float64 over the step actually stored. Columns past
    `max_inputs_per_var` (when > 0) are left at zero.
    """
    target = _target(function, dim, inputs, outputs, _launch_kw(device, max_blocks, block_dim))
    try:
        jacs = _fd_jacobians(target, _pairs(target, input_output_mask), eps, max_inputs_per_var)
    finally:
        target.restore()
    if plot_jacobians:
        plot_to_file(jacs, target.input_labels, target.output_labels,
                     f"{target.title}: Jacobian (finite differences)")
    return _as_arrays(jacs)


def gradcheck(function: Kernel | Callable[..., Any], dim: Any = None,
              inputs: Sequence[Any] | None = None, outputs: Sequence[Any] | None = None, *,
              eps: float = 1e-4, atol: float = 1e-3, rtol: float = 1e-2,
              raise_exception: bool = True, input_output_mask: Mask | None = None,
              device: Any = None, max_blocks: int = 0, block_dim: int | None = None,
              max_inputs_per_var: int = -1, max_outputs_per_var: int = -1,
              plot_relative_error: bool = False, plot_absolute_error: bool = False,
              show_summary: bool = True, modes: Sequence[str] = ("rev",)) -> bool:
    """Compare autodiff Jacobians with central finite differences.

    `modes`: which autodiff to check, "rev" (reverse mode, Warp's gradcheck) and/or "fwd"
    (forward mode: `jacobian(..., mode="forward")`). Passes when no Jacobian entry is NaN and
    |AD - FD| <= atol + rtol * |FD| everywhere, in every mode. Prints a report (one table per
    mode) when `show_summary`; on failure raises `GradcheckError` (an AssertionError and a
    ValueError) carrying the report if `raise_exception`, else returns False.
    """
    if inputs is None:
        raise GradloomError("gradcheck needs the inputs")
    names = [_mode(m) for m in (modes or ())]
    if not names:
        raise GradloomError("gradcheck: modes names no mode; give 'rev' and/or 'fwd'")
    target = _target(function, dim, inputs, outputs, _launch_kw(device, max_blocks, block_dim))
    try:
        pairs = _pairs(target, input_output_mask)
        fd = _fd_jacobians(target, pairs, eps, max_inputs_per_var)
        ads = {m: _mode_jacobians(m, target, pairs, max_inputs_per_var, max_outputs_per_var)
               for m in dict.fromkeys(names)}
    finally:
        target.restore()
    checks, reports = [], []
    for m, ad in ads.items():
        found = compare_jacobians(ad, fd, atol=atol, rtol=rtol,
                                  input_labels=target.input_labels,
                                  output_labels=target.output_labels,
                                  max_inputs_per_var=max_inputs_per_var,
                                  max_outputs_per_var=max_outputs_per_var)
        if plot_absolute_error or plot_relative_error:
            _plot_errors(ad, fd, target, plot_absolute_error, plot_relative_error)
        title = target.title if ads.keys() == {"rev"} else f"{target.title}, {_TITLES[m]}"
        reports.append(format_report(title, found, atol=atol, rtol=rtol, eps=eps))
        checks += found
    return _conclude(checks, "\n".join(reports), raise_exception, show_summary)


_TITLES = {"rev": "reverse mode", "fwd": "forward mode"}


def gradcheck_tape(tape: Tape, *, eps: float = 1e-4, atol: float = 1e-3, rtol: float = 1e-2,
                   raise_exception: bool = True,
                   input_output_masks: Mapping[str, Mask] | None = None,
                   blacklist_kernels: Sequence[Any] | None = None,
                   whitelist_kernels: Sequence[Any] | None = None,
                   max_inputs_per_var: int = -1, max_outputs_per_var: int = -1,
                   plot_relative_error: bool = False, plot_absolute_error: bool = False,
                   show_summary: bool = True, reverse_launches: bool = False,
                   skip_to_launch_index: int = 0) -> bool:
    """`gradcheck` of every kernel launch the tape recorded, each on its own (autograd_tape.py):
    inputs are the arguments before the first array the kernel writes. Kernels are named in
    the lists and `input_output_masks` by key (or passed as kernels)."""
    autograd_tape.no_tape(tape)
    return autograd_tape.check_tape(
        tape, gradcheck, eps=eps, atol=atol, rtol=rtol, raise_exception=raise_exception,
        input_output_masks=input_output_masks, blacklist_kernels=blacklist_kernels,
        whitelist_kernels=whitelist_kernels, max_inputs_per_var=max_inputs_per_var,
        max_outputs_per_var=max_outputs_per_var, plot_relative_error=plot_relative_error,
        plot_absolute_error=plot_absolute_error, show_summary=show_summary,
        reverse_launches=reverse_launches, skip_to_launch_index=skip_to_launch_index,
        error=GradcheckError)


def _launch_kw(device: Any, max_blocks: int, block_dim: int | None) -> dict[str, Any]:
    return {"device": device, "max_blocks": max_blocks, "block_dim": block_dim}


def _as_arrays(jacs: Mapping[tuple[int, int], NDArray]) -> Jacobians:
    return {key: array(jac, dtype=float64) for key, jac in jacs.items()}


def _conclude(checks: list[PairCheck], report: str, raise_exception: bool,
              show_summary: bool) -> bool:
    passed = all(c.passed for c in checks)
    if show_summary:
        print(report)
    if not passed and raise_exception:
        raise GradcheckError(report)
    return passed


def _plot_errors(ad: Mapping[tuple[int, int], NDArray], fd: Mapping[tuple[int, int], NDArray],
                 target: _Target, absolute: bool, relative: bool) -> None:
    abs_err = {k: np.abs(ad[k] - fd[k]) for k in fd}
    labels = (target.input_labels, target.output_labels)
    if absolute:
        plot_to_file(abs_err, *labels, f"{target.title}: Jacobian absolute error")
    if relative:
        rel = {k: e / np.maximum(np.abs(fd[k]), REL_FLOOR) for k, e in abs_err.items()}
        plot_to_file(rel, *labels, f"{target.title}: Jacobian relative error")
