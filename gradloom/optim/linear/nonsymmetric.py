"""The solvers for non-symmetric systems: BiCGSTAB and restarted GMRES (right-preconditioned
Arnoldi with modified Gram-Schmidt; the small least-squares problem solved on the host)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import gradloom as wp

from .operators import LinearOperator, axpby, dot
from .solvers import LinearSolverState, _apply, _update_xr


class BiCGSTAB(LinearSolverState):
    """Stabilised bi-conjugate gradient (general A)."""

    _name = "bicgstab"

    def _nwork(self) -> int:
        return 8

    def _check_preconditioner(self, M: Any) -> None:
        if (M is None) != (self.M is None):
            raise ValueError("bicgstab: the preconditioner's presence must match the solver's "
                             "(it was built with M=%s)" % ("None" if self.M is None else "an operator"))

    def _start(self, A: LinearOperator, b: Any, x: Any, M: Any) -> float:
        r, r0, p, v, *_ = self._work
        self._residual(A, b, x, r)
        wp.copy(r0, r)
        p.zero_()
        v.zero_()
        self._rho = self._alpha = self._omega = 1.0
        return dot(r, r)

    def _cycle(self, A: LinearOperator, b: Any, x: Any, M: Any, atol: float,
               budget: int) -> tuple[float, int]:
        r, r0, p, v, _, t, y, z = self._work
        rho = dot(r0, r)
        if rho == 0.0 or self._omega == 0.0:  # breakdown: restart from the current iterate
            r2 = self._start(A, b, x, M)
            rho = dot(r0, r)
            if rho == 0.0:
                return r2, 1
        beta = (rho / self._rho) * (self._alpha / self._omega)
        axpby(1.0, p, -self._omega, v, p)  # p = r + beta (p - omega v)
        axpby(1.0, r, beta, p, p)
        yy = _apply(M, p, y)
        A.matvec(yy, v, v, 1.0, 0.0)
        d = dot(r0, v)
        alpha = rho / d if d != 0.0 else 0.0
        _update_xr(x, r, yy, v, alpha)  # x += alpha y; r (now s) -= alpha v
        s2 = dot(r, r)
        self._rho, self._alpha = rho, alpha
        if s2 <= atol * atol:
            return s2, 1
        zz = _apply(M, r, z)
        A.matvec(zz, t, t, 1.0, 0.0)
        tt = dot(t, t)
        omega = dot(t, r) / tt if tt != 0.0 else 0.0
        _update_xr(x, r, zz, t, omega)
        self._omega = omega
        return dot(r, r), 1


class GMRES(LinearSolverState):
    """Restarted GMRES (general A); `restart` Krylov vectors per cycle."""

    _name = "gmres"
    _basis: list[Any]
    _m: int

    def _nwork(self) -> int:
        return 3

    def _cycle_length(self) -> int:
        return 1

    def _solve(self, A: LinearOperator, b: Any, x: Any, M: Any) -> Any:
        self.restart, restart = None, self.restart  # GMRES's restart is its cycle, not CG's
        self._m = int(restart or 31)
        try:
            return super()._solve(A, b, x, M)
        finally:
            self.restart = restart

    def _start(self, A: LinearOperator, b: Any, x: Any, M: Any) -> float:
        m = self._m
        if not hasattr(self, "_basis") or len(self._basis) != m + 1 or \
                self._basis[0].shape != b.shape or self._basis[0].dtype != b.dtype:
            self._basis = [wp.zeros_like(b) for _ in range(m + 1)]
        r = self._work[0]
        self._residual(A, b, x, r)
        return dot(r, r)

    def _cycle(self, A: LinearOperator, b: Any, x: Any, M: Any, atol: float,
               budget: int) -> tuple[float, int]:
        """One Arnoldi cycle (up to `restart` steps, stopping when the estimate converges)."""
        r, w, zbuf = self._work
        V = self._basis
        m = min(len(V) - 1, max(budget, 1))
        beta = math.sqrt(dot(r, r))
        axpby(1.0 / beta, r, 0.0, r, V[0])
        H = np.zeros((m + 1, m))
        g = np.zeros(m + 1)
        g[0] = beta
        k = 0
        for j in range(m):
            zz = _apply(M, V[j], zbuf)
            A.matvec(zz, w, w, 1.0, 0.0)
            for i in range(j + 1):
                H[i, j] = dot(w, V[i])
                axpby(1.0, w, -H[i, j], V[i], w)
            H[j + 1, j] = math.sqrt(dot(w, w))
            k = j + 1
            y, res = _least_squares(H[: k + 1, :k], g[: k + 1])
            if H[j + 1, j] == 0.0 or res <= atol:
                break
            axpby(1.0 / H[j + 1, j], w, 0.0, w, V[j + 1])
        # x += M (V y): the combination first, then the preconditioner
        w.zero_()
        for i in range(k):
            axpby(1.0, w, float(y[i]), V[i], w)
        _update_xr_plain(x, _apply(M, w, zbuf))
        return self._start(A, b, x, M), k


def _update_xr_plain(x: Any, d: Any) -> None:
    axpby(1.0, x, 1.0, d, x)


def _least_squares(H: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, float]:
    """min |g - H y| (small, dense): y and the residual norm."""
    y, *_ = np.linalg.lstsq(H, g, rcond=None)
    return y, float(np.linalg.norm(g - H @ y))


__all__ = ["GMRES", "BiCGSTAB", "_update_xr"]
