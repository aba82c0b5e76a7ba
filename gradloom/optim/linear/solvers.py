"""The Krylov solvers (Warp's `cg`, `cr`, `bicgstab`, `gmres` and their reusable functors): vector
updates and products run as gradloom kernels; the scalars of the recurrences live on the host."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

import gradloom as wp

from . import _kernels as K
from .operators import LinearOperator, aslinearoperator, axpby, dot, flat

_DEFAULT_TOL = {8: 1.0e-12, 4: 1.0e-6, 2: 1.0e-3}


def _check_restart(restart: Any) -> int | None:
    if restart is None:
        return None
    if isinstance(restart, bool) or not isinstance(restart, (int, np.integer)):
        raise TypeError(f"restart: expected a positive int or None, got {restart!r}")
    if restart <= 0:
        raise ValueError(f"restart: expected a positive int, got {restart}")
    return int(restart)


class LinearSolverState:
    """A solver with its work vectors allocated: call it (optionally with new A, b, x, M)."""

    _name = "solver"
    _cycle_default = 1

    def __init__(self, A: Any, b: Any, x: Any, tol: float | None, atol: float | None,
                 maxiter: float | None, M: Any, callback: Callable[..., Any] | None,
                 check_every: int, restart: int | None = None, **options: Any) -> None:
        self.A = aslinearoperator(A)
        self.M = aslinearoperator(M) if M is not None else None
        self.b, self.x = b, x
        self.tol, self.atol = tol, atol
        self.maxiter, self.callback, self.check_every = maxiter, callback, check_every
        self.restart = restart
        self.options = options
        self._batch = (self.A.batch_offsets, self.A.max_batch_length)
        self._cur_iter_and_condition = wp.zeros(2, dtype=wp.int32, device=b.device)
        self._work = [wp.zeros_like(b) for _ in range(self._nwork())]

    def _nwork(self) -> int:
        return 4

    def _check_compatible(self, A: Any, b: Any, x: Any, M: Any) -> None:
        if b.shape != self.b.shape or x.shape != self.x.shape:
            raise ValueError(f"{self._name}: b and x must have the shapes the solver was built for "
                             f"({self.b.shape}), got {b.shape} and {x.shape}")
        if b.dtype != self.b.dtype or x.dtype != self.x.dtype or \
                wp.types.type_scalar_type(A.dtype) != wp.types.type_scalar_type(self.b.dtype):
            raise ValueError(f"{self._name}: the data types must match the solver's "
                             f"({self.b.dtype})")
        if (A.batch_offsets is not None) != (self._batch[0] is not None) or \
                (A.batch_offsets is not None and A.batch_offsets is not self._batch[0]):
            raise ValueError(f"{self._name}: A's batch_offsets must match the solver's")
        if A.max_batch_length != self._batch[1]:
            raise ValueError(f"{self._name}: A's max_batch_length must match the solver's")

    def __call__(self, A: Any = None, b: Any = None, x: Any = None, M: Any = ...) -> Any:
        A = self.A if A is None else aslinearoperator(A)
        b = self.b if b is None else b
        x = self.x if x is None else x
        M = self.M if M is ... else (aslinearoperator(M) if M is not None else None)
        self._check_compatible(A, b, x, M)
        self._check_preconditioner(M)
        return self._solve(A, b, x, M)

    def _check_preconditioner(self, M: Any) -> None:
        pass

    # ---- the shared outer loop ---------------------------------------------------------------
    def _tolerance(self, b: Any) -> float:
        size = np.dtype(wp.dtype_to_numpy(wp.types.type_scalar_type(b.dtype))).itemsize
        tol, atol = self.tol, self.atol
        if tol is None and atol is None:
            tol = atol = _DEFAULT_TOL.get(size, 1.0e-6)
        elif tol is None:
            tol = atol
        elif atol is None:
            atol = tol
        assert tol is not None and atol is not None
        return max(float(atol), float(tol) * math.sqrt(dot(b, b)))

    def _solve(self, A: LinearOperator, b: Any, x: Any, M: Any) -> Any:
        if A.batch_offsets is not None:
            from .batches import solve_batches

            return solve_batches(A, b, x, M, self._solve_system)
        return self._solve_system(A, b, x, M)

    def _solve_system(self, A: LinearOperator, b: Any, x: Any, M: Any) -> Any:
        if flat(self._work[0]).size != flat(b).size:  # a batch: work vectors of its size
            self._work = [wp.zeros_like(flat(b)) for _ in range(self._nwork())]
        atol = self._tolerance(b)
        maxiter = A.shape[0] if not self.maxiter else self.maxiter
        every = max(1, (self.check_every or 1) // self._cycle_length())
        r2 = self._start(A, b, x, M)
        it = cycles = 0
        reported = -1
        while True:
            if self.callback is not None and self.check_every and cycles % every == 0:
                self.callback(it, math.sqrt(max(r2, 0.0)), atol)
                reported = it
            if r2 <= atol * atol or it >= maxiter or not math.isfinite(r2):
                break
            r2, steps = self._cycle(A, b, x, M, atol, int(math.ceil(maxiter - it)))
            it += steps
            cycles += 1
        if self.callback is not None and self.check_every and reported != it:
            self.callback(it, math.sqrt(max(r2, 0.0)), atol)
        return self._result(it, r2, atol, b)

    def _cycle_length(self) -> int:
        return self.restart or self._cycle_default

    def _result(self, it: int, r2: float, atol: float, b: Any) -> Any:
        if self.check_every:
            return it, math.sqrt(max(r2, 0.0)), atol
        st = wp.types.type_scalar_type(b.dtype)
        self._cur_iter_and_condition.numpy()[:] = (it, 0)
        return (self._cur_iter_and_condition,
                wp.array([r2], dtype=st, device=b.device), wp.array([atol * atol], dtype=st,
                                                                   device=b.device))

    def _residual(self, A: LinearOperator, b: Any, x: Any, r: Any) -> None:
        """r = b - A x."""
        A.matvec(x, b, r, -1.0, 1.0)

    def _start(self, A: LinearOperator, b: Any, x: Any, M: Any) -> float:
        raise NotImplementedError

    def _cycle(self, A: LinearOperator, b: Any, x: Any, M: Any, atol: float,
               budget: int) -> tuple[float, int]:
        """Run iterations (at most `budget`, unless restarted cycles must complete): (|r|^2, count)."""
        raise NotImplementedError


def _apply(M: Any, v: Any, out: Any) -> Any:
    """out = M v (or v itself without a preconditioner)."""
    if M is None:
        return v
    M.matvec(v, out, out, 1.0, 0.0)
    return out


def _update_xr(x: Any, r: Any, p: Any, q: Any, alpha: float) -> None:
    fx = flat(x)
    st = fx.dtype
    wp.launch(K.update_xr(st), dim=fx.size, device=fx.device,
              inputs=[fx, flat(r), flat(p), flat(q), st(alpha)])


class CG(LinearSolverState):
    """Conjugate gradient (symmetric positive definite A), optionally restarted."""

    _name = "cg"

    def _start(self, A: LinearOperator, b: Any, x: Any, M: Any) -> float:
        r, z, p, _ = self._work
        self._residual(A, b, x, r)
        zz = _apply(M, r, z)
        wp.copy(p, zz)
        self._rz = dot(r, zz)
        return dot(r, r)

    def _cycle(self, A: LinearOperator, b: Any, x: Any, M: Any, atol: float,
               budget: int) -> tuple[float, int]:
        r, z, p, q = self._work
        r2 = 0.0
        for _ in range(self.restart or 1):
            A.matvec(p, q, q, 1.0, 0.0)
            pq = dot(p, q)
            alpha = self._rz / pq if pq != 0.0 else 0.0
            _update_xr(x, r, p, q, alpha)
            zz = _apply(M, r, z)
            rz = dot(r, zz)
            r2 = dot(r, r) if M is not None else rz
            beta = rz / self._rz if self._rz != 0.0 else 0.0
            self._rz = rz
            axpby(1.0, zz, beta, p, p)
            if self.restart is None and r2 <= atol * atol:
                break
        if self.restart is not None:
            return self._start(A, b, x, M), self.restart
        return r2, 1


class CR(LinearSolverState):
    """Conjugate residual (symmetric A), optionally restarted."""

    _name = "cr"

    def _nwork(self) -> int:
        return 6

    def _start(self, A: LinearOperator, b: Any, x: Any, M: Any) -> float:
        r, z, p, Az, Ap, _ = self._work
        self._residual(A, b, x, r)
        zz = _apply(M, r, z)
        if zz is not z:
            wp.copy(z, zz)
        A.matvec(z, Az, Az, 1.0, 0.0)
        wp.copy(p, z)
        wp.copy(Ap, Az)
        self._zAz = dot(z, Az)
        return dot(r, r)

    def _cycle(self, A: LinearOperator, b: Any, x: Any, M: Any, atol: float,
               budget: int) -> tuple[float, int]:
        r, z, p, Az, Ap, y = self._work
        r2 = 0.0
        for _ in range(self.restart or 1):
            yy = _apply(M, Ap, y)
            d = dot(Ap, yy)
            alpha = self._zAz / d if d != 0.0 else 0.0
            _update_xr(x, r, p, Ap, alpha)
            axpby(1.0, z, -alpha, yy, z)
            A.matvec(z, Az, Az, 1.0, 0.0)
            zAz = dot(z, Az)
            beta = zAz / self._zAz if self._zAz != 0.0 else 0.0
            self._zAz = zAz
            axpby(1.0, z, beta, p, p)
            axpby(1.0, Az, beta, Ap, Ap)
            r2 = dot(r, r)
            if self.restart is None and r2 <= atol * atol:
                break
        if self.restart is not None:
            return self._start(A, b, x, M), self.restart
        return r2, 1
