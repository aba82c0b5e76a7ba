"""The rows of an FSAI factor, on the host in float64: a BSR matrix as scalar rows, the adaptive
support search of each factor row, and a row's values on a fixed support (growth-order LDL^T)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

#: a row's outcome: fine, stopped early by the pivot guard, or unusable
OK, TRUNCATED, FAILED, REGULARIZED = 0, 1, 2, 3


def host(arr: Any) -> np.ndarray:
    """A numpy view of a host array's memory (no copy, no read-back), a copy of a device array."""
    if arr.device.backend.host_memory:
        return np.asarray(arr._methods.numpy(arr))
    return np.asarray(arr.numpy())


@dataclass
class ScalarRows:
    """A square matrix as scalar rows: per row a {column: value} map of its stored entries."""

    n: int
    rows: list[dict[int, float]]
    diag: np.ndarray  # the stored diagonal (0 where none is stored)

    @property
    def valid(self) -> np.ndarray:
        """Rows whose diagonal is finite and positive."""
        return np.isfinite(self.diag) & (self.diag > 0.0)


def block_topology(A: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row, column, storage index) of A's active blocks (padded rows: their counted blocks)."""
    off = host(A.offsets)[: A.nrow + 1].astype(np.int64)
    if A.row_counts is None:
        begin, count = off[:-1], np.maximum(np.diff(off), 0)
    else:
        begin, count = off[:-1], host(A.row_counts)[: A.nrow].astype(np.int64)
    rows = np.repeat(np.arange(A.nrow, dtype=np.int64), count)
    first = np.cumsum(count) - count
    idx = begin[rows] + (np.arange(rows.size, dtype=np.int64) - first[rows])
    cols = host(A.columns)[idx].astype(np.int64) if rows.size else idx
    return rows, cols, idx


def scalar_rows(A: Any, values: np.ndarray | None = None) -> ScalarRows:
    """A's scalar entries (blocks expanded; padded rows' unused slots and capacity ignored)."""
    b = A.block_shape[0]
    n = A.nrow * b
    brow, bcol, idx = block_topology(A)
    vals = host(A.values) if values is None else values
    blocks = np.asarray(vals, dtype=np.float64).reshape(-1, b, b)[idx] if idx.size else \
        np.zeros((0, b, b))
    rows: list[dict[int, float]] = [{} for _ in range(n)]
    ii, jj = np.meshgrid(np.arange(b), np.arange(b), indexing="ij")
    r = (brow[:, None, None] * b + ii).reshape(-1)
    c = (bcol[:, None, None] * b + jj).reshape(-1)
    v = blocks.reshape(-1)
    for ri, ci, vi in zip(r.tolist(), c.tolist(), v.tolist()):
        rows[ri][ci] = vi
    diag = np.array([rows[i].get(i, 0.0) for i in range(n)], dtype=np.float64)
    return ScalarRows(n, rows, diag)


def ldl_pivots(E: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(L, d) of E = L diag(d) L^T in the given order (d may hold bad pivots: the caller checks)."""
    k = E.shape[0]
    L = np.eye(k)
    d = np.zeros(k)
    for j in range(k):
        w = L[j, :j] * d[:j]
        d[j] = E[j, j] - L[j, :j] @ w
        if j + 1 < k and d[j] != 0.0:
            L[j + 1:, j] = (E[j + 1:, j] - L[j + 1:, :j] @ w) / d[j]
    return L, d


def first_bad_pivot(d: np.ndarray, floor: float) -> int:
    """Index of the first pivot that is not finite or not above `floor` (len(d): none)."""
    bad = np.flatnonzero(~np.isfinite(d) | (d <= floor))
    return int(bad[0]) if bad.size else len(d)


def solve_first(L: np.ndarray, d: np.ndarray) -> np.ndarray:
    """z with L diag(d) L^T z = e_0."""
    k = len(d)
    e = np.zeros(k)
    e[0] = 1.0
    u = np.linalg.solve(L, e) if k > 1 else e
    return np.linalg.solve(L.T, u / d) if k > 1 else u / d


def equilibrated(M: ScalarRows, support: list[int]) -> np.ndarray:
    """The diagonally equilibrated local matrix E[support, support]."""
    s = np.sqrt(M.diag[support])
    k = len(support)
    E = np.empty((k, k))
    for a, ra in enumerate(support):
        row = M.rows[ra]
        E[a] = [row.get(c, 0.0) for c in support]
    return E / s[:, None] / s[None, :]


def factor_row(M: ScalarRows, support: list[int], floor: float,
               regularize: bool) -> tuple[np.ndarray | None, int]:
    """A factor row's values on `support` (growth order, the row itself first) and its outcome.

    Values: z / sqrt(z_0) scaled back by each column's diagonal, z solving E z = e_0 with the
    growth-order LDL^T of the equilibrated local matrix. A pivot at or below `floor` fails the
    row, or (`regularize`, finite pivots) is raised to the floor.
    """
    L, d = ldl_pivots(equilibrated(M, support))
    outcome = OK
    if first_bad_pivot(d, floor) < len(d):
        if not (regularize and np.all(np.isfinite(d))):
            return None, FAILED
        L, d = _refactor_with_floor(equilibrated(M, support), floor)
        outcome = REGULARIZED
    z = solve_first(L, d)
    if not (np.isfinite(z).all() and z[0] > 0.0):
        return None, FAILED
    return z / np.sqrt(z[0]) / np.sqrt(M.diag[support]), outcome


def _refactor_with_floor(E: np.ndarray, floor: float) -> tuple[np.ndarray, np.ndarray]:
    """LDL^T with every pivot raised to at least `floor` as the factorization goes."""
    k = E.shape[0]
    L = np.eye(k)
    d = np.zeros(k)
    for j in range(k):
        w = L[j, :j] * d[:j]
        d[j] = max(E[j, j] - L[j, :j] @ w, floor)
        if j + 1 < k:
            L[j + 1:, j] = (E[j + 1:, j] - L[j + 1:, :j] @ w) / d[j]
    return L, d


@dataclass
class Selection:
    """The search's result for every row: supports in growth order and their values."""

    supports: list[list[int]] = field(default_factory=list)
    values: list[np.ndarray] = field(default_factory=list)
    truncated: int = 0
    lost: int = 0  # rows whose factor lost finite entries or a positive diagonal


def _frontier(M: ScalarRows, row: int, support: list[int], usable: np.ndarray) -> list[int]:
    """Columns left of `row`, outside `support`, with a nonzero in a support row."""
    inside = set(support)
    out: set[int] = set()
    for s in support:
        out.update(c for c, v in M.rows[s].items() if c < row and v != 0.0 and c not in inside)
    return sorted(c for c in out if usable[c])


def _score(M: ScalarRows, c: int, support: list[int], z: np.ndarray) -> float:
    """|E[c, support] . z|: how much column c would lower the row's local energy."""
    row = M.rows[c]
    sc = np.sqrt(M.diag[c])
    e = np.array([row.get(s, 0.0) for s in support]) / sc / np.sqrt(M.diag[support])
    return float(abs(e @ z))


def search_row(M: ScalarRows, row: int, width: int, step: int, tolerance: float, floor: float,
               usable: np.ndarray) -> tuple[list[int], bool]:
    """The row's support (growth order) and whether the pivot guard stopped it."""
    support, z = [row], np.ones(1)
    while len(support) < width:
        frontier = _frontier(M, row, support, usable)
        ranked = sorted(((_score(M, c, support, z), c) for c in frontier), key=lambda t: (-t[0], t[1]))
        chosen = [c for s, c in ranked if s > 0.0][: min(step, width - len(support))]
        if not chosen:
            break
        grown = support + chosen
        L, d = ldl_pivots(equilibrated(M, grown))
        bad = first_bad_pivot(d, floor)
        if bad < len(grown):
            return grown[:bad], True
        old, support = z[0], grown
        z = solve_first(L, d)
        if tolerance > 0.0 and 1.0 - old / z[0] <= tolerance:
            break
    return support, False


def select(M: ScalarRows, width: int, step: int, tolerance: float, floor: float,
           fallback: bool = False) -> Selection:
    """Search every row's support and compute its values. `fallback`: rows with an unusable
    diagonal (or a failed factor) keep a diagonal-only support (value 1, or 1/sqrt(a_ii))."""
    usable = M.valid
    out = Selection()
    for row in range(M.n):
        if not usable[row]:
            support, cut = [row], False
        else:
            support, cut = search_row(M, row, width, step, tolerance, floor, usable)
        vals, _ = factor_row(M, support, floor, False) if usable[row] else (None, FAILED)
        if vals is None:
            out.lost += 1
            if fallback:
                support, vals = [row], np.array([diagonal_fallback(M, row)])
            else:
                vals = np.zeros(len(support))
        out.truncated += int(cut)
        out.supports.append(support)
        out.values.append(vals)
    return out


def diagonal_fallback(M: ScalarRows, row: int) -> float:
    """A failed row's value: its scaled diagonal, or 1 where the diagonal is unusable."""
    a = M.diag[row]
    return float(1.0 / np.sqrt(a)) if np.isfinite(a) and a > 0.0 else 1.0
