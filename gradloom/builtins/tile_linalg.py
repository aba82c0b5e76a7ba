"""Tile linear algebra beyond matmul: Cholesky factorisation and triangular solves (lower, upper,
Cholesky), returning and in place, as IR loops over the tiles (gradients from the scalar rules).

Only the triangle a routine is documented to read is read; the upper variants run the lower
algorithms on transposed views (free: builtins/tiles.py), so there is one algorithm of each.
"""

from __future__ import annotations

from typing import Any

from ..ir.nodes import Var
from ..types import int32, int64
from .registry import builtin
from .tile_loops import copy_into, count_loop, each, new_tile, read, write
from .tiles import _T, tile_arg, tile_transpose
from .values import Ctx, TileVal


def _one(ctx: Ctx, v: int) -> Var:
    return ctx.const(v, int32)


Slot = list[Var | int | None]


def _dot_below(ctx: Ctx, a: TileVal, ra: Slot, b: TileVal, rb: Slot, n: Var) -> Var:
    """Σ_{k < n} a[ra..k] * b[rb..k]: `ra`/`rb` give the index with None where k goes."""
    t = a.type.dtype

    def at(r: Slot, k: Var) -> list[Var | int]:
        return [k if x is None else x for x in r]
    return count_loop(ctx, n, [ctx.const(0, t)], lambda k, c: [ctx.op(
        "add", c[0], ctx.op("mul", read(ctx, a, at(ra, k)), read(ctx, b, at(rb, k))))])[0]


#: rows of the factor whose inner products with the current column one loop computes: they
#: share its loads, and read consecutive words of the factor's transposed copy, so the loop
#: runs in vectors (measured on the 32 x 32 example: one row per loop 3.6 us, 4 rows 2.7 us)
_ROWS = 4


def _factor(ctx: Ctx, a: TileVal, out: TileVal) -> None:
    """out = the lower Cholesky factor of a (reading a's lower triangle; out may be a), the
    strict upper triangle of out zeroed. Column by column (Cholesky–Crout), each inner product
    summed in k order. While it runs the factor lives transposed in the strict upper triangle
    (out[k, i] = L[i, k]): column j's rows below the diagonal go _ROWS at a time (the last
    group moved up to end at the last row: rows it repeats are computed again from the same
    values), and a's lower triangle is read unchanged; a last pass moves the factor down."""
    n = a.type.shape[0]
    t = a.type.dtype

    def column(jv: list[Var]) -> None:
        j = jv[0]
        d = ctx.op("sqrt", ctx.op("sub", read(ctx, a, [j, j]),
                                  _dot_below(ctx, out, [None, j], out, [None, j], j)))
        # the rows below divide by d as one multiplication each, as Warp's CPU factor does
        inv = ctx.op("div", ctx.const(1, t), d)
        below = ctx.op("sub", _one(ctx, n - 1), j)
        if n >= _ROWS:
            grouped = ctx.op("ge", below, _one(ctx, _ROWS))
            groups = ctx.op("select", grouped, ctx.op("shr", ctx.op(
                "add", below, _one(ctx, _ROWS - 1)), _one(ctx, _ROWS.bit_length() - 1)),
                _one(ctx, 0))
            count_loop(ctx, groups, [], lambda g, _: _rows(ctx, a, out, j, inv, ctx.op(
                "min", ctx.op("add", ctx.op("add", j, _one(ctx, 1)),
                              ctx.op("mul", g, _one(ctx, _ROWS))), _one(ctx, n - _ROWS)), _ROWS))
            below = ctx.op("select", grouped, _one(ctx, 0), below)
        count_loop(ctx, below, [], lambda r, _: _rows(
            ctx, a, out, j, inv, ctx.op("add", ctx.op("add", j, _one(ctx, 1)), r), 1))
        write(ctx, out, [j, j], d)
    each(ctx, (n,), column)

    def move_down(jv: list[Var]) -> None:
        j = jv[0]

        def one(ii: Var, _: list[Var]) -> list[Var]:
            i = ctx.op("add", ctx.op("add", j, _one(ctx, 1)), ii)
            write(ctx, out, [i, j], read(ctx, out, [j, i]))
            write(ctx, out, [j, i], ctx.const(0, t))
            return []
        count_loop(ctx, ctx.op("sub", _one(ctx, n - 1), j), [], one)
    each(ctx, (n,), move_down)


def _rows(ctx: Ctx, a: TileVal, out: TileVal, j: Var, inv: Var, i0: Var,
          count: int) -> list[Var]:
    """L[i, j] for the rows i0 .. i0 + count - 1 (> j), into the transposed copy out[j, i]:
    (a[i, j] - Σ_{k < j} L[i, k] L[j, k]) * inv (inv = 1 / L[j, j]). The rows' indices are
    int64, so the optimiser sees their words in a row of the copy as consecutive."""
    first = ctx.op("cast", i0, type=int64)
    idx = [first if r == 0 else ctx.op("add", first, ctx.const(r, int64)) for r in range(count)]
    sums = count_loop(ctx, j, [ctx.const(0, a.type.dtype)] * count, lambda k, c: [
        ctx.op("add", c[r], ctx.op("mul", read(ctx, out, [k, i]), read(ctx, out, [k, j])))
        for r, i in enumerate(idx)])
    for i, s in zip(idx, sums, strict=True):
        write(ctx, out, [j, i], ctx.op("mul", ctx.op("sub", read(ctx, a, [i, j]), s), inv))
    return []


def _square(ctx: Ctx, a: Any, name: str) -> TileVal:
    t = tile_arg(ctx, a, name)
    if t.type.ndim != 2 or t.type.shape[0] != t.type.shape[1] or not t.type.dtype.is_float:
        raise ctx.error(f"argument '{name}' must be a square 2-D float tile, got {t.type!r}")
    return t


def _lower_mode(ctx: Ctx, fill_mode: Any) -> bool:
    mode = getattr(fill_mode, "value", fill_mode)
    if mode not in ("lower", "upper"):
        raise ctx.error(f"fill_mode must be the constant 'lower' or 'upper', got {mode!r}")
    return bool(mode == "lower")


def _solve(ctx: Ctx, m: TileVal, y: TileVal, out: TileVal, lower: bool) -> None:
    """out = m^-1 y for a triangular m (reading its lower or upper triangle); y is (n,) or
    (n, k); out may be y."""
    n = m.type.shape[0]
    if y.type.shape[0] != n or y.type.ndim > 2 or y.type.dtype != m.type.dtype:
        raise ctx.error(f"a triangular solve of a {m.type!r} needs a right-hand side of "
                        f"shape ({n},) or ({n}, k) and its dtype, got {y.type!r}")
    cols = 1 if y.type.ndim == 1 else y.type.shape[1]

    def rhs(i: Var | None, c: Var) -> Slot:
        return [i] if y.type.ndim == 1 else [i, c]

    def full(s: Slot) -> list[Var | int]:
        return [x for x in s if x is not None]

    def column(cv: list[Var]) -> None:
        c = cv[0]

        def row(iv: list[Var]) -> None:
            i = iv[0] if lower else ctx.op("sub", _one(ctx, n - 1), iv[0])
            if lower:
                s = _dot_below(ctx, m, [i, None], out, rhs(None, c), i)
            else:  # Σ_{k > i} m[i, k] out[k]: k = n - 1 - kk for kk < n - 1 - i
                def term(kk: Var, acc: list[Var]) -> list[Var]:
                    k = ctx.op("sub", _one(ctx, n - 1), kk)
                    return [ctx.op("add", acc[0], ctx.op("mul", read(ctx, m, [i, k]),
                                                         read(ctx, out, full(rhs(k, c)))))]
                s = count_loop(ctx, iv[0], [ctx.const(0, m.type.dtype)], term)[0]
            # a zero on the diagonal leaves the row's value undivided, as Warp's CPU solves do
            # (not inf or NaN)
            r, diag = ctx.op("sub", read(ctx, y, full(rhs(i, c))), s), read(ctx, m, [i, i])
            zero = ctx.op("eq", diag, ctx.const(0, m.type.dtype))
            v = ctx.op("select", zero, r, ctx.op("div", r, ctx.op("select", zero, ctx.const(
                1, m.type.dtype), diag)))
            write(ctx, out, full(rhs(i, c)), v)
        each(ctx, (n,), row)
    each(ctx, (cols,), column)


@builtin("tile_cholesky", "the Cholesky factor of a symmetric positive-definite tile: lower L "
         "with L @ L^T = A (fill_mode='lower') or upper U with U^T @ U = A", group=_T,
         signatures="(A: Tile, fill_mode: str) -> Tile")
def tile_cholesky(ctx: Ctx, A: Any, fill_mode: Any = "lower") -> TileVal:
    a = _square(ctx, A, "A")
    out = new_tile(ctx, a.type)
    if _lower_mode(ctx, fill_mode):
        _factor(ctx, a, out)
    else:
        _factor(ctx, tile_transpose(ctx, a), tile_transpose(ctx, out))
    return out


@builtin("tile_cholesky_inplace", "tile_cholesky, overwriting A (the other triangle zeroed)",
         group=_T, signatures="(A: Tile, fill_mode: str) -> None")
def tile_cholesky_inplace(ctx: Ctx, A: Any, fill_mode: Any = "lower") -> None:
    a = _square(ctx, A, "A")
    if _lower_mode(ctx, fill_mode):
        _factor(ctx, a, a)
    else:
        at = tile_transpose(ctx, a)
        _factor(ctx, at, at)


@builtin("tile_lower_solve", "z with L z = y for a lower-triangular L (y: (n,) or (n, k))",
         group=_T, signatures="(L: Tile, y: Tile) -> Tile")
def tile_lower_solve(ctx: Ctx, L: Any, y: Any) -> TileVal:
    m, rhs = _square(ctx, L, "L"), tile_arg(ctx, y, "y")
    out = new_tile(ctx, rhs.type)
    _solve(ctx, m, rhs, out, True)
    return out


@builtin("tile_lower_solve_inplace", "tile_lower_solve, overwriting y with z", group=_T,
         signatures="(L: Tile, y: Tile) -> None")
def tile_lower_solve_inplace(ctx: Ctx, L: Any, y: Any) -> None:
    rhs = tile_arg(ctx, y, "y")
    _solve(ctx, _square(ctx, L, "L"), rhs, rhs, True)


@builtin("tile_upper_solve", "x with U x = z for an upper-triangular U (z: (n,) or (n, k))",
         group=_T, signatures="(U: Tile, z: Tile) -> Tile")
def tile_upper_solve(ctx: Ctx, U: Any, z: Any) -> TileVal:
    m, rhs = _square(ctx, U, "U"), tile_arg(ctx, z, "z")
    out = new_tile(ctx, rhs.type)
    _solve(ctx, m, rhs, out, False)
    return out


@builtin("tile_upper_solve_inplace", "tile_upper_solve, overwriting z with x", group=_T,
         signatures="(U: Tile, z: Tile) -> None")
def tile_upper_solve_inplace(ctx: Ctx, U: Any, z: Any) -> None:
    rhs = tile_arg(ctx, z, "z")
    _solve(ctx, _square(ctx, U, "U"), rhs, rhs, False)


def _cholesky_solve(ctx: Ctx, L: Any, y: Any, out: TileVal | None, fill_mode: Any) -> TileVal:
    m, rhs = _square(ctx, L, "L"), tile_arg(ctx, y, "y")
    res = out if out is not None else new_tile(ctx, rhs.type)
    lo, up = (m, tile_transpose(ctx, m)) if _lower_mode(ctx, fill_mode) else (
        tile_transpose(ctx, m), m)
    if res is not rhs:
        copy_into(ctx, res, rhs)
    _solve(ctx, lo, res, res, True)
    _solve(ctx, up, res, res, False)
    return res


@builtin("tile_cholesky_solve", "x with A x = y, given A's Cholesky factor (lower L, or upper U "
         "with fill_mode='upper')", group=_T,
         signatures="(L: Tile, y: Tile, fill_mode: str) -> Tile")
def tile_cholesky_solve(ctx: Ctx, L: Any, y: Any, fill_mode: Any = "lower") -> TileVal:
    return _cholesky_solve(ctx, L, y, None, fill_mode)


@builtin("tile_cholesky_solve_inplace", "tile_cholesky_solve, overwriting y with x", group=_T,
         signatures="(L: Tile, y: Tile, fill_mode: str) -> None")
def tile_cholesky_solve_inplace(ctx: Ctx, L: Any, y: Any, fill_mode: Any = "lower") -> None:
    _cholesky_solve(ctx, L, y, tile_arg(ctx, y, "y"), fill_mode)
