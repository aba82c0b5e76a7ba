"""Warp's `FSAI`: the adaptive factorized sparse approximate inverse preconditioner of an SPD BSR
matrix, M = G^T G with G lower triangular (supports searched and values computed on the host in
float64 by fsai_rows.py; applied by two CSR kernels), and its refits on a kept pattern."""

from __future__ import annotations

from typing import Any

import numpy as np

import gradloom as wp

from . import _kernels as K
from .fsai_rows import (
    FAILED,
    REGULARIZED,
    ScalarRows,
    diagonal_fallback,
    factor_row,
    host,
    scalar_rows,
    select,
)
from .operators import LinearOperator, flat

_FLOORS = {"float16": 1.0e-3, "float32": 1.0e-6, "float64": 1.0e-12}


class Factor:
    """G (canonical scalar CSR, columns sorted) and its stored transpose GT for fixed supports
    given in growth order; `write` stores new values in place (same arrays every time)."""

    def __init__(self, n: int, supports: list[list[int]], storage: Any, device: Any) -> None:
        from ...sparse import bsr_zeros

        self.storage, self.supports = storage, supports
        counts = np.array([len(s) for s in supports], dtype=np.int64)
        grow_cols = np.concatenate([np.asarray(s, dtype=np.int64) for s in supports]) if n else \
            np.zeros(0, dtype=np.int64)
        rows = np.repeat(np.arange(n, dtype=np.int64), counts)
        self.order = np.lexsort((grow_cols, rows))  # sorted slot -> growth-order slot
        offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
        cols = grow_cols[self.order].astype(np.int32)
        self.tperm = np.lexsort((rows[self.order], cols))  # GT slot -> G slot
        self.G = self._matrix(bsr_zeros(n, n, storage, device=device), offsets, cols)
        t_offsets = np.concatenate([[0], np.cumsum(np.bincount(cols, minlength=n))]).astype(np.int32)
        self.GT = self._matrix(bsr_zeros(n, n, storage, device=device), t_offsets,
                               rows[self.order][self.tperm].astype(np.int32))
        self.diag_slots = offsets[1:] - 1  # the diagonal is a row's largest column

    @staticmethod
    def _matrix(M: Any, offsets: np.ndarray, cols: np.ndarray) -> Any:
        M.offsets = wp.array(offsets, dtype=int, device=M.device)
        M.columns = wp.array(cols, dtype=int, device=M.device)
        M.values = wp.zeros(len(cols), dtype=M.dtype, device=M.device)
        M.nnz = len(cols)
        return M

    def converted(self, values: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """(values in storage order and type, rows that lost finite entries or a positive
        diagonal in that type)."""
        npt = wp.dtype_to_numpy(self.storage)
        flat_vals = np.concatenate(values) if values else np.zeros(0)
        with np.errstate(over="ignore", under="ignore"):
            sv = flat_vals[self.order].astype(npt)
        bad_entry = ~np.isfinite(sv.astype(np.float64))
        counts: np.ndarray = np.diff(host(self.G.offsets).astype(np.int64))
        rows = np.repeat(np.arange(len(values)), counts)
        bad = np.zeros(len(values), dtype=bool)
        bad[rows[bad_entry]] = True
        if len(values):
            bad |= ~(sv[self.diag_slots].astype(np.float64) > 0.0)
        return sv, bad

    def write(self, sv: np.ndarray) -> None:
        self.G.values.assign(sv)
        self.GT.values.assign(sv[self.tperm])


def _check_options(A: Any, max_row_size: Any, kap_tolerance: float, max_step_size: Any) -> None:
    from ...sparse import BsrMatrix

    if not isinstance(A, BsrMatrix) or A.shape[0] != A.shape[1] or \
            A.block_shape[0] != A.block_shape[1]:
        raise ValueError("FSAI requires a square BSR matrix with square blocks")
    if A.scalar_type not in (wp.float16, wp.float32, wp.float64):
        raise TypeError("FSAI supports float16, float32 and float64 matrices, got "
                        f"{getattr(A.scalar_type, '__name__', A.scalar_type)}")
    for name, value in (("max_row_size", max_row_size), ("max_step_size", max_step_size)):
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 64:
            raise ValueError(f"{name} must be an integer in [1, 64], got {value!r}")
    if not 0.0 <= kap_tolerance < 1.0:
        raise ValueError(f"kap_tolerance must be in [0, 1), got {kap_tolerance!r}")


def _metadata(A: Any) -> tuple[Any, ...]:
    return (A.shape, A.dtype, A.device)


class FSAI(LinearOperator):
    """Adaptive factorized sparse approximate inverse of an SPD BSR matrix: applies G^T G.

    Square blocks are expanded into scalar entries (scalar FSAI). Each factor row grows from its
    diagonal by the frontier entries that most lower its local energy (at most `max_step_size`
    per step), up to `max_row_size` entries, until the relative improvement is at most
    `kap_tolerance`; a local pivot at or below `pivot_floor` truncates the row. `reuse_pattern`
    keeps the supports for `update()` (refits); `defer_pattern` selects them at the first
    successful update. Attributes as Warp's: G, GT, truncated_rows, update_status,
    pattern_ready, pattern_status, source. Not differentiable.
    """

    def __init__(self, A: Any, max_row_size: int = 8, kap_tolerance: float = 1.0e-3,
                 pivot_floor: float | None = None, factor_dtype: Any = None,
                 reuse_pattern: bool = False, max_step_size: int = 1,
                 regularize_refit: bool = False, validate_topology: bool = True,
                 defer_pattern: bool = False) -> None:
        _check_options(A, max_row_size, kap_tolerance, max_step_size)
        st = A.scalar_type
        floor = _FLOORS[st.__name__] if pivot_floor is None else pivot_floor
        if not 0.0 < floor < 1.0:
            raise ValueError(f"pivot_floor must be in (0, 1), got {pivot_floor!r}")
        factor_dtype = st if factor_dtype is None else factor_dtype
        if factor_dtype != st and not (st == wp.float64 and factor_dtype == wp.float32):
            raise ValueError("factor_dtype must be the matrix scalar type, or wp.float32 for a "
                             "float64 matrix")
        if reuse_pattern and A.row_counts is not None:
            raise ValueError("reuse_pattern requires compact BSR storage; compact the matrix with "
                             "bsr_compress(A, prune_numerical_zeros=False)")
        if defer_pattern and not reuse_pattern:
            raise ValueError("defer_pattern requires reuse_pattern")
        self.max_row_size, self.max_step_size = max_row_size, max_step_size
        self.factor_dtype, self.source = factor_dtype, A
        self.options = (max_row_size, max_step_size, float(kap_tolerance), float(floor),
                        bool(regularize_refit), bool(validate_topology))
        self.pattern_ready = self.pattern_status = self.update_status = None
        self.truncated_rows: int | None = None
        self._refit: Any = None
        n = A.shape[0]
        self._tmp = wp.empty(n, dtype=st, device=A.device)
        super().__init__(A.shape, A.dtype, A.device, self._apply)
        if defer_pattern:
            self._refit = DeferredPlan(self, A)
            self.update_status = self._refit.status
            self.pattern_ready, self.pattern_status = self._refit.ready, self._refit.pattern_status
            return
        supports = self._build(A)
        if reuse_pattern:
            self._refit = RefitPlan(self, A, supports)
            self.update_status = self._refit.status

    def _build(self, A: Any) -> list[list[int]]:
        width, step, tol, floor = self.options[:4]
        M = scalar_rows(A)
        invalid = int((~M.valid).sum())
        if invalid:
            raise ValueError(f"FSAI requires finite positive diagonals ({invalid} invalid rows)")
        sel = select(M, width, step, tol, floor)
        self.truncated_rows = sel.truncated
        if sel.lost:
            raise ValueError("FSAI factor lost finite entries or a positive diagonal")
        factor = Factor(M.n, sel.supports, self.factor_dtype, A.device)
        sv, bad = factor.converted(sel.values)
        if bad.any():
            what = "factor_dtype conversion" if self.factor_dtype != A.scalar_type else "FSAI factor"
            raise ValueError(f"{what} lost finite entries or a positive diagonal")
        factor.write(sv)
        self.publish(factor)
        return sel.supports

    def publish(self, factor: Factor) -> None:
        self._factor, self.G, self.GT = factor, factor.G, factor.GT

    def update(self, A: Any = None) -> FSAI:
        """Refit the factor's values on its kept supports for A's new values (None: `source`).
        Rejected input (changed metadata or sparsity, invalid diagonals, failed local
        factorizations) raises ValueError and keeps the previous factor."""
        from ...sparse import BsrMatrix

        if self._refit is None:
            raise ValueError("construct FSAI with reuse_pattern=True before calling update()")
        A = self.source if A is None else A
        if not isinstance(A, BsrMatrix):
            raise ValueError(f"update requires a BSR matrix, got {type(A).__name__}")
        self._refit.update(self, A)
        self.source = A
        return self

    def _apply(self, x: Any, y: Any, z: Any, alpha: float, beta: float) -> None:
        fx, fz = flat(x), flat(z)
        fy = fz if y is None else flat(y)
        if fz.size == 0:
            return
        T, S = self._tmp.dtype, self.G.values.dtype
        kernel = K.csr_mv(S, T)
        G, GT = self.G, self.GT
        if alpha != 0.0:
            wp.launch(kernel, dim=fz.size, device=fz.device,
                      inputs=[G.offsets, G.columns, G.values, fx, self._tmp, self._tmp, T(1.0),
                              T(0.0)])
        wp.launch(kernel, dim=fz.size, device=fz.device,
                  inputs=[GT.offsets, GT.columns, GT.values, self._tmp, fy, fz, T(alpha), T(beta)])


class RefitPlan:
    """What `update()` needs to refit a factor on its supports: the original topology, the
    supports in growth order, and the status counts (update_status)."""

    select = None  # refits never search supports

    def __init__(self, owner: FSAI, A: Any, supports: list[list[int]],
                 status: Any = None) -> None:
        self.supports = supports
        self.meta = _metadata(A)
        self.offsets = host(A.offsets)[: A.nrow + 1].copy()
        self.columns = host(A.columns)[: int(self.offsets[-1])].copy() if A.nrow >= 0 else None
        self.status = wp.zeros(4, dtype=int, device=A.device) if status is None else status
        _, _, _, self.floor, self.regularize, self.validate = owner.options

    def check_metadata(self, A: Any) -> None:
        if _metadata(A) != self.meta or A.row_counts is not None:
            raise ValueError("FSAI update requires a compact matrix of the same shape, dtype, "
                             f"device and storage (built for {self.meta[0]} {self.meta[1]} on "
                             f"{self.meta[2]}, got {A.shape} {A.dtype} on {A.device})")

    def mismatches(self, A: Any) -> int:
        """Rows whose stored block columns differ from the original matrix's."""
        off = host(A.offsets)[: A.nrow + 1]
        if not np.array_equal(off, self.offsets):
            return max(1, int(np.count_nonzero(off != self.offsets)))
        cols = host(A.columns)[: int(off[-1])]
        diff = np.flatnonzero(cols != self.columns)
        return int(np.unique(np.searchsorted(off, diff, side="right")).size)

    def refit_values(self, M: ScalarRows, status: np.ndarray) -> list[np.ndarray]:
        """Each row's values on its support; counts invalid diagonals, failed rows and
        regularized rows into `status`; failed rows keep their diagonal only (scaled)."""
        valid = M.valid
        status[1] = int((~valid).sum())
        out = []
        for row, support in enumerate(self.supports):
            vals, outcome = factor_row(M, support, self.floor, self.regularize) \
                if valid[support].all() else (None, FAILED)
            if vals is None:
                status[2] += int(valid[row])
                vals = np.zeros(len(support))
                vals[0] = diagonal_fallback(M, row)
            status[3] += int(outcome == REGULARIZED)
            out.append(vals)
        return out

    def update(self, owner: FSAI, A: Any) -> None:
        self.check_metadata(A)
        status = np.zeros(4, dtype=np.int64)
        if self.validate:
            status[0] = self.mismatches(A)
        if not status[0]:
            vals = self.refit_values(scalar_rows(A), status)
            sv, bad = owner._factor.converted(vals)
            if bad.any() and self.regularize:
                sv = self._fall_back(owner, vals, bad, status)
            elif bad.any():
                status[2] += int(bad.sum())
            if self.regularize or not status[1:3].any():
                owner._factor.write(sv)
        self.status.assign(status.astype(np.int32))
        if not (self.regularize and not self.validate):
            self.check()

    def _fall_back(self, owner: FSAI, vals: list[np.ndarray], bad: np.ndarray,
                   status: np.ndarray) -> np.ndarray:
        """Rows the storage type cannot hold keep a unit diagonal (counted as failed)."""
        for row in np.flatnonzero(bad):
            vals[row] = np.zeros(len(vals[row]))
            vals[row][0] = 1.0
            status[2] += 1
        return owner._factor.converted(vals)[0]

    def check(self) -> None:
        """Raise for the counts of the last update (the factor was kept if any is nonzero)."""
        s = host(self.status)
        if s[0]:
            raise ValueError(f"FSAI update: the sparsity pattern of the matrix differs from the "
                             f"original one ({int(s[0])} rows differ)")
        if self.regularize:
            return
        if s[1]:
            raise ValueError(f"FSAI update requires finite positive diagonals ({int(s[1])} "
                             "invalid rows)")
        if s[2]:
            raise ValueError(f"FSAI update: {int(s[2])} local factorizations failed (the matrix "
                             "is not SPD on the factor supports, or the factor storage type "
                             "cannot hold the factor)")


class DeferredPlan:
    """`defer_pattern`: the identity until the first successful update selects the supports
    (with the matrix's values then); later updates are refits (a RefitPlan)."""

    def __init__(self, owner: FSAI, A: Any) -> None:
        n = A.shape[0]
        self.meta = _metadata(A)
        self.status = wp.zeros(4, dtype=int, device=A.device)
        self.ready = wp.zeros(1, dtype=int, device=A.device)
        self.pattern_status = wp.zeros(3, dtype=int, device=A.device)
        self.select = select
        self.published = False
        self.topology = RefitPlan(owner, A, [], self.status)
        identity = Factor(n, [[i] for i in range(n)], owner.factor_dtype, A.device)
        identity.write(np.ones(n, dtype=wp.dtype_to_numpy(owner.factor_dtype)))
        owner.publish(identity)

    def update(self, owner: FSAI, A: Any) -> None:
        if self.published:
            self.topology.update(owner, A)
            return
        plan = self.topology
        plan.check_metadata(A)
        status = np.zeros(4, dtype=np.int64)
        if plan.validate:
            status[0] = plan.mismatches(A)
        M = scalar_rows(A)
        status[1] = int((~M.valid).sum())
        if not status[0] and (plan.regularize or not status[1]):
            self._select(owner, A, M, status)
        self.status.assign(status.astype(np.int32))
        if not self.published:
            plan.check()

    def _select(self, owner: FSAI, A: Any, M: ScalarRows, status: np.ndarray) -> None:
        width, step, tol, floor, regularize, _ = owner.options
        sel = select(M, width, step, tol, floor, fallback=regularize)
        factor = Factor(M.n, sel.supports, owner.factor_dtype, A.device)
        sv, bad = factor.converted(sel.values)
        status[2] = sel.lost + int(bad.sum())
        if not regularize and status[2]:
            return
        factor.write(sv)
        owner.publish(factor)
        self.topology.supports = sel.supports
        self.pattern_status.assign(np.array([0, sel.truncated, sel.lost], dtype=np.int32))
        self.ready.fill_(1)
        self.published = True
