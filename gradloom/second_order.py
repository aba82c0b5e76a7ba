"""The second-order check: Hessian-vector products (`hvp`, reverse over forward mode) against
central differences of reverse-mode gradients, (∇L(x + εv) − ∇L(x − εv)) / 2ε in float64.

`gradloom.autograd.gradcheck_hvp` runs `hvp_check` and prints or raises its report.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .errors import GradloomError
from .forward_mode import hvp
from .kernel import Kernel
from .runtime.array.array import NDArray, array
from .runtime.array.ops import clone
from .runtime.launch.launch import launch
from .runtime.tape.tape import Tape

__all__ = ["hvp_check"]


def hvp_check(function: Kernel | Callable[..., Any], inputs: Sequence[Any],
              v: Sequence[Any] | None = None, *, dim: Any = None,
              outputs: Sequence[Any] | None = None, weights: Sequence[Any] | None = None,
              eps: float = 1e-3, atol: float = 1e-3, rtol: float = 1e-2, seed: int = 0
              ) -> tuple[bool, str]:
    """Whether `hvp(function, inputs, v)` agrees with central differences of reverse-mode
    gradients, and the report (one row per input).

    `function`, `dim`, `outputs`, `weights` as `hvp` takes them: a one-element loss, or
    Σ weights·outputs. `v`: one direction per input (None: a seeded standard normal one for
    every float array input). Passes when |HVP − FD| <= atol + rtol·|FD| for every component
    and no HVP component is NaN. The caller's arrays are not changed.
    """
    ins = list(inputs)
    dirs = _directions(ins, v, seed)
    hv = hvp(function, _copies(ins), [d for d in dirs], dim, _copies(list(outputs or [])),
             weights)
    plus = _gradients(function, ins, dirs, eps, dim, outputs, weights)
    minus = _gradients(function, ins, dirs, -eps, dim, outputs, weights)
    rows, passed = [], True
    for k, d in enumerate(dirs):
        if d is None:
            continue
        fd = (plus[k] - minus[k]) / (2.0 * eps)
        ad = np.asarray(hv[k].numpy(), dtype=np.float64).reshape(-1)
        err = np.abs(ad - fd)
        ok = bool(np.all(err <= atol + rtol * np.abs(fd))) and not np.isnan(ad).any()
        passed &= ok
        rel = float(np.max(err / np.maximum(np.abs(fd), 1e-30))) if err.size else 0.0
        rows.append(f"  input {k}: max |HVP - FD| {float(err.max(initial=0.0)):.3e}, "
                    f"max rel {rel:.3e}  {'ok' if ok else 'FAIL'}")
    report = "\n".join([f"second-order check (HVP vs FD of gradients, eps={eps}, atol={atol}, "
                        f"rtol={rtol})", *rows])
    return passed, report


def _float(a: Any) -> bool:
    return isinstance(a, array) and a.numpy().dtype.kind == "f"


def _directions(ins: list[Any], v: Sequence[Any] | None, seed: int) -> list[NDArray | None]:
    if v is not None:
        if len(v) != len(ins):
            raise GradloomError(f"gradcheck_hvp: {len(v)} directions for {len(ins)} inputs")
        return [None if d is None else
                np.asarray(d.numpy() if isinstance(d, array) else d, dtype=np.float64)
                .reshape(a.numpy().shape) for a, d in zip(ins, v, strict=True)]
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(a.numpy().shape) if _float(a) else None for a in ins]


def _copies(values: list[Any]) -> list[Any]:
    return [clone(a) if isinstance(a, array) else a for a in values]


def _gradients(function: Any, ins: list[Any], dirs: list[NDArray | None], step: float,
               dim: Any, outputs: Sequence[Any] | None, weights: Sequence[Any] | None
               ) -> list[NDArray]:
    """Reverse-mode gradients of the loss at x + step·v, one float64 row per input."""
    moved = []
    for a, d in zip(ins, dirs, strict=True):
        if not isinstance(a, array):
            moved.append(a)
            continue
        c = clone(a, requires_grad=_float(a))
        if d is not None:
            c.numpy()[...] = (a.numpy().astype(np.float64) + step * d).astype(a.numpy().dtype)
        moved.append(c)
    tape = Tape()
    with tape:
        outs = _run(function, moved, dim, outputs)
    if weights is None:
        if len(outs) != 1 or outs[0].size != 1:
            raise GradloomError("gradcheck_hvp: the function must return one one-element "
                                "loss, or give weights for its outputs")
        weights = [np.ones(1)]
    # grads= gives an output made without a gradient one (arrays the function makes in
    # between need requires_grad=True for the gradient to flow through them, as in gradcheck)
    tape.backward(grads={o: np.broadcast_to(np.asarray(
            w.numpy() if isinstance(w, array) else w, np.float64), o.numpy().shape)
            .astype(o.numpy().dtype) for o, w in zip(outs, weights, strict=True)
            if w is not None and _float(o)})
    return [np.zeros(0) if not _float(m) or m.grad is None else
            np.asarray(m.grad.numpy(), dtype=np.float64).reshape(-1) for m in moved]


def _run(function: Any, ins: list[Any], dim: Any, outputs: Sequence[Any] | None
         ) -> list[array]:
    if isinstance(function, Kernel):
        outs = [clone(o, requires_grad=True) if isinstance(o, array) else o
                for o in (outputs or [])]
        for o in outs:
            if isinstance(o, array):
                o.zero_()
        launch(function, dim, inputs=ins, outputs=outs)
        return outs
    result = function(*ins)
    return [result] if isinstance(result, array) else list(result)
