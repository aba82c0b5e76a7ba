"""Finite-difference gradient harness: checks `wp.Tape` reverse-mode gradients against central FD.

The scalar being differentiated is a weighted sum of a program's outputs, ``L = Σ_o Σ w_o * o``,
with random weights ``w_o`` (fixed per check). The reverse-mode gradient is obtained by running
the program under a ``wp.Tape`` and calling ``tape.backward(grads={o: w_o})``; the reference is
a central difference of ``L`` in float64, computed with forward launches only (no tape).

Every evaluation builds fresh arrays (``requires_grad=True``) from the numpy values, because
kernels may overwrite their inputs. An argument may be both a differentiable input and an output
(``x[i] = f(x[i])``): its gradient is taken with respect to its value *before* the program runs,
and its seed weights its value *after*.

Two entry points:

* ``check_kernel(kernel, dim, args, wrt=[...], outputs=[...])`` for a single launch;
* ``check_program(program, args, wrt=[...])`` for a Python callable ``program(arrays)`` that
  launches several kernels (and array ops such as ``wp.clone``, ``wp.copy``, ``a.assign``) and
  returns the list of output arrays to seed.

Arguments are ``Arr`` values (numpy data + dtype; vec/mat arrays use trailing dimensions) or
plain Python scalars / structs, passed through unchanged. ``Case`` bundles one check for
``pytest.mark.parametrize``.

Semantics followed (Warp >= 1.17): a plain store ``y[i] = v`` consumes ``y.grad[i]`` in the
backward pass, so the harness never asserts anything about an output's ``.grad`` after
``backward``. It does assert that ``backward`` leaves the seed arrays passed in ``grads=``
untouched.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from wpcompat import DEVICE, wp

# Defaults for float64 kernels: eps for the central difference, and the comparison tolerance
# |reverse - fd| <= atol + rtol * |fd|.
EPS = 1e-6
RTOL = 1e-5
ATOL = 1e-7


@dataclass
class Arr:
    """An array argument: its values (numpy, trailing dims for vec/mat dtypes) and its dtype."""

    value: Any
    dtype: Any = None  # None: wp.float64
    requires_grad: bool = True

    def numpy_value(self) -> np.ndarray:
        return np.asarray(self.value, dtype=_np_dtype(self.resolved_dtype()))

    def resolved_dtype(self) -> Any:
        return wp.float64 if self.dtype is None else self.dtype


_INT_TYPES = ((wp.int8, np.int8), (wp.uint8, np.uint8), (wp.int32, np.int32),
              (wp.uint32, np.uint32), (wp.int64, np.int64), (wp.uint64, np.uint64))
_FLOAT32_TYPES = (wp.float32, wp.vec2f, wp.vec3f, wp.vec4f, wp.mat22f, wp.mat33f, wp.mat44f)


def arr(value: Any, dtype: Any = None, requires_grad: bool = True) -> Arr:
    """Shorthand for ``Arr``; integer dtypes never require gradients."""
    if any(dtype is t for t, _ in _INT_TYPES):
        requires_grad = False
    return Arr(value, dtype, requires_grad)


def _np_dtype(dtype: Any) -> Any:
    for t, npt in _INT_TYPES:
        if dtype is t:
            return npt
    if any(dtype is t for t in _FLOAT32_TYPES):
        return np.float32
    return np.float64


def zeros_grad(shape: Any, dtype: Any = None) -> Any:
    """A zero array that takes part in the tape (for temporaries created inside a program)."""
    return wp.zeros(shape, dtype=wp.float64 if dtype is None else dtype, device=DEVICE,
                    requires_grad=True)


def build(args: Sequence[Any], override: dict[int, np.ndarray] | None = None) -> list[Any]:
    """Fresh kernel arguments: a new ``wp.array`` for every ``Arr``, scalars passed through."""
    out = []
    for pos, a in enumerate(args):
        if isinstance(a, Arr):
            value = a.numpy_value() if override is None or pos not in override else override[pos]
            out.append(wp.array(np.array(value, copy=True), dtype=a.resolved_dtype(),
                                device=DEVICE, requires_grad=a.requires_grad))
        else:
            out.append(a)
    return out


def kernel_program(kernel: Any, dim: Any, outputs: Sequence[int]) -> Callable[[list[Any]], list]:
    """The program that launches ``kernel`` once and returns the arguments at ``outputs``."""

    def program(arrays: list[Any]) -> list[Any]:
        wp.launch(kernel, dim=dim, inputs=arrays, device=DEVICE)
        return [arrays[i] for i in outputs]

    program.__name__ = getattr(kernel, "key", getattr(kernel, "__name__", "kernel"))
    return program


def _arg_names(kernel: Any, n: int) -> list[str]:
    try:
        names = list(inspect.signature(kernel.func).parameters)
    except (AttributeError, TypeError, ValueError):
        names = []
    return [names[i] if i < len(names) else f"arg{i}" for i in range(n)]


@dataclass
class GradResult:
    """What one check computed (returned so tests can assert more, e.g. exact values)."""

    reverse: dict[int, np.ndarray]
    fd: dict[int, np.ndarray]
    weights: list[np.ndarray]


def _objective(program: Callable, args: Sequence[Any], weights: Sequence[np.ndarray],
               override: dict[int, np.ndarray]) -> float:
    outs = program(build(args, override))
    return float(sum(np.sum(w * np.asarray(o.numpy(), dtype=np.float64))
                     for w, o in zip(weights, outs)))


def reverse_gradients(program: Callable, args: Sequence[Any], wrt: Sequence[int],
                      weights: Sequence[np.ndarray], *, name: str = "program",
                      check_seed: bool = True) -> dict[int, np.ndarray]:
    """Run ``program`` under a tape, seed its outputs with ``weights``, return the input grads."""
    arrays = build(args)
    tape = wp.Tape()
    with tape:
        outs = program(arrays)
    if len({id(o) for o in outs}) != len(outs):
        raise ValueError(f"{name}: the same array is returned twice as an output")
    seeds = [wp.array(np.array(w, copy=True), dtype=o.dtype, device=DEVICE)
             for w, o in zip(weights, outs)]
    tape.backward(grads=dict(zip(outs, seeds)))
    grads = {}
    for pos in wrt:
        g = arrays[pos].grad
        if g is None:
            raise AssertionError(f"{name}: argument {pos} has no .grad after backward")
        grads[pos] = np.array(g.numpy(), dtype=np.float64, copy=True)
    if check_seed:
        for k, (w, s) in enumerate(zip(weights, seeds)):
            if not np.array_equal(s.numpy(), w):
                raise AssertionError(
                    f"{name}: tape.backward modified the seed array of output {k} "
                    f"(was {w.ravel()[:6]}..., now {s.numpy().ravel()[:6]}...)")
    return grads


def fd_gradients(program: Callable, args: Sequence[Any], wrt: Sequence[int],
                 weights: Sequence[np.ndarray], eps: float = EPS) -> dict[int, np.ndarray]:
    """Central differences of ``Σ w * outputs`` w.r.t. every component of each ``wrt`` arg."""
    grads = {}
    for pos in wrt:
        base = args[pos].numpy_value().astype(np.float64)
        g = np.zeros_like(base)
        for j in range(base.size):
            plus, minus = base.copy(), base.copy()
            plus.flat[j] += eps
            minus.flat[j] -= eps
            fp = _objective(program, args, weights, {pos: plus})
            fm = _objective(program, args, weights, {pos: minus})
            g.flat[j] = (fp - fm) / (2.0 * eps)
        grads[pos] = g
    return grads


def make_weights(program: Callable, args: Sequence[Any], seed: int = 0,
                 weights: Sequence[Any] | None = None) -> list[np.ndarray]:
    """Random weights of magnitude 0.5..1.5, random sign, one per output element component."""
    outs = program(build(args))
    if weights is not None:
        if len(weights) != len(outs):
            raise ValueError(f"{len(weights)} weight arrays for {len(outs)} outputs")
        return [np.broadcast_to(np.asarray(w, dtype=np.float64), o.numpy().shape).copy()
                for w, o in zip(weights, outs)]
    rng = np.random.default_rng(seed)
    result = []
    for o in outs:
        shape = np.asarray(o.numpy()).shape
        result.append(rng.uniform(0.5, 1.5, shape) * rng.choice([-1.0, 1.0], shape))
    return result


def _compare(name: str, arg_names: Sequence[str], reverse: dict[int, np.ndarray],
             fd: dict[int, np.ndarray], rtol: float, atol: float) -> None:
    problems = []
    for pos, g_fd in fd.items():
        g_rev = reverse[pos]
        if g_rev.shape != g_fd.shape:
            problems.append(f"  input '{arg_names[pos]}' (arg {pos}): gradient shape "
                            f"{g_rev.shape}, expected {g_fd.shape}")
            continue
        bad = ~(np.abs(g_rev - g_fd) <= atol + rtol * np.abs(g_fd))
        for idx in list(zip(*np.nonzero(bad)))[:8]:
            idx = tuple(int(i) for i in idx)
            problems.append(f"  input '{arg_names[pos]}' (arg {pos}) index {idx}: "
                            f"reverse {g_rev[idx]:.10g}  fd {g_fd[idx]:.10g}  "
                            f"diff {g_rev[idx] - g_fd[idx]:.3g}")
        if bad.sum() > 8:
            problems.append(f"  ... and {int(bad.sum()) - 8} more mismatches in '{arg_names[pos]}'")
    if problems:
        raise AssertionError(f"{name}: reverse-mode gradient != central finite difference "
                             f"(rtol={rtol}, atol={atol})\n" + "\n".join(problems))


def check_program(program: Callable, args: Sequence[Any], wrt: Sequence[int], *,
                  name: str | None = None, arg_names: Sequence[str] | None = None,
                  eps: float = EPS, rtol: float = RTOL, atol: float = ATOL, seed: int = 0,
                  weights: Sequence[Any] | None = None,
                  expected: dict[int, Any] | None = None) -> GradResult:
    """Check the tape gradient of ``program`` against central finite differences.

    ``expected`` optionally maps an argument position to its exact analytic gradient, which both
    the reverse-mode and the FD gradient must match as well; it needs explicit ``weights``.
    """
    if expected and weights is None:
        raise ValueError("expected= gradients need explicit weights= (the default is random)")
    name = name or getattr(program, "__name__", "program")
    arg_names = list(arg_names) if arg_names else [f"arg{i}" for i in range(len(args))]
    for pos in wrt:
        if not isinstance(args[pos], Arr) or not args[pos].requires_grad:
            raise ValueError(f"{name}: wrt position {pos} is not a differentiable array")
    w = make_weights(program, args, seed, weights)
    rev = reverse_gradients(program, args, wrt, w, name=name)
    fd = fd_gradients(program, args, wrt, w, eps)
    _compare(name, arg_names, rev, fd, rtol, atol)
    for pos, value in (expected or {}).items():
        want = np.broadcast_to(np.asarray(value, dtype=np.float64), rev[pos].shape)
        for label, got in (("reverse", rev[pos]), ("fd", fd[pos])):
            if not np.allclose(got, want, rtol=rtol, atol=atol):
                raise AssertionError(f"{name}: {label} gradient of '{arg_names[pos]}' is "
                                     f"{got.tolist()}, expected exactly {want.tolist()}")
    return GradResult(rev, fd, w)


def check_kernel(kernel: Any, dim: Any, args: Sequence[Any], wrt: Sequence[int],
                 outputs: Sequence[int], **kwargs: Any) -> GradResult:
    """``check_program`` for a single launch of ``kernel`` over ``dim`` threads."""
    program = kernel_program(kernel, dim, outputs)
    kwargs.setdefault("arg_names", _arg_names(kernel, len(args)))
    kwargs.setdefault("name", program.__name__)
    return check_program(program, args, wrt, **kwargs)


@dataclass
class Case:
    """One parametrized check: a kernel launch, or a program (when ``program`` is set)."""

    id: str
    args: Sequence[Any]
    wrt: Sequence[int]
    kernel: Any = None
    dim: Any = None
    outputs: Sequence[int] = ()
    program: Callable | None = None
    expected: dict[int, Any] | None = None
    weights: Sequence[Any] | None = None
    # reason strings: the case fails (xfail) / cannot compile (skip) on warp-lang
    warp_xfail: str | None = None
    warp_skip: str | None = None
    opts: dict[str, Any] = field(default_factory=dict)

    def run(self) -> GradResult:
        common = dict(expected=self.expected, weights=self.weights, **self.opts)
        if self.program is not None:
            return check_program(self.program, self.args, self.wrt, name=self.id, **common)
        return check_kernel(self.kernel, self.dim, self.args, self.wrt, self.outputs,
                            name=f"{self.id} ({self.kernel.key})", **common)
