"""`gradloom.optim.linear` (Warp's `warp.optim.linear`): Krylov solvers (`cg`, `cr`, `bicgstab`,
`gmres`), linear operators, diagonal, block-Jacobi and FSAI preconditioners, on gradloom kernels."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .fsai import FSAI
from .nonsymmetric import GMRES, BiCGSTAB
from .operators import LinearOperator, aslinearoperator
from .preconditioners import preconditioner
from .solvers import CG, CR, LinearSolverState, _check_restart


def _run(cls: type[LinearSolverState], A: Any, b: Any, x: Any, tol: float | None,
         atol: float | None, maxiter: float | None, M: Any, callback: Callable[..., Any] | None,
         check_every: int, run: bool, restart: int | None = None, **options: Any) -> Any:
    state = cls(A, b, x, tol, atol, maxiter, M, callback, check_every, restart, **options)
    return state() if run else state


def cg(A: Any, b: Any, x: Any, tol: float | None = None, atol: float | None = None,
       maxiter: float | None = 0, M: Any = None, callback: Callable[..., Any] | None = None,
       check_every: int = 10, use_cuda_graph: bool = True, run: bool = True, *,
       restart: int | None = None) -> Any:
    """Conjugate gradient for symmetric positive definite `A`; x holds the guess and the solution.
    Returns (iterations, residual norm, absolute tolerance), or the `CG` functor when not `run`."""
    return _run(CG, A, b, x, tol, atol, maxiter, M, callback, check_every, run,
                _check_restart(restart))


def cr(A: Any, b: Any, x: Any, tol: float | None = None, atol: float | None = None,
       maxiter: float | None = 0, M: Any = None, callback: Callable[..., Any] | None = None,
       check_every: int = 10, use_cuda_graph: bool = True, run: bool = True, *,
       restart: int | None = None) -> Any:
    """Conjugate residual for symmetric `A` (as `cg`)."""
    return _run(CR, A, b, x, tol, atol, maxiter, M, callback, check_every, run,
                _check_restart(restart))


def bicgstab(A: Any, b: Any, x: Any, tol: float | None = None, atol: float | None = None,
             maxiter: float | None = 0, M: Any = None, callback: Callable[..., Any] | None = None,
             check_every: int = 10, use_cuda_graph: bool = True,
             is_left_preconditioner: bool = False, run: bool = True) -> Any:
    """BiCGSTAB for general `A` (as `cg`); the preconditioner is applied on the right."""
    return _run(BiCGSTAB, A, b, x, tol, atol, maxiter, M, callback, check_every, run,
                is_left_preconditioner=is_left_preconditioner)


def gmres(A: Any, b: Any, x: Any, tol: float | None = None, atol: float | None = None,
          restart: int = 31, maxiter: float | None = 0, M: Any = None,
          callback: Callable[..., Any] | None = None, check_every: int = 31,
          use_cuda_graph: bool = True, is_left_preconditioner: bool = False,
          run: bool = True) -> Any:
    """Restarted GMRES for general `A` (as `cg`); `restart` Krylov vectors per cycle."""
    return _run(GMRES, A, b, x, tol, atol, maxiter, M, callback, check_every, run,
                _check_restart(restart), is_left_preconditioner=is_left_preconditioner)


__all__ = ["CG", "CR", "FSAI", "GMRES", "BiCGSTAB", "LinearOperator", "aslinearoperator", "bicgstab", "cg",
           "cr", "gmres", "preconditioner"]
