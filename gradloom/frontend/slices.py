"""Vector and matrix slicing in kernels (`v[1:3]`, `m[0, 1:3]`, `m[1:]`, `m[:, 1]`) and
`*`-unpacking into calls (`wp.vec4(*v3, 1.0)`, `wp.vec3i(*a[:3])`), as in Warp.

Slice bounds are compile-time constants; a slice picks a fixed set of components, so reading one
gives a new vector or matrix value and writing one replaces those components. Array slices
(views, whose bounds may be known at run time only) are builtins/arrayview.py's.
"""

from __future__ import annotations

from typing import Any

from ..builtins import memory
from ..builtins.arrayview import RuntimeSlice, is_slice
from ..builtins.values import ArrayVal, Composite, Ctx, Literal, TupleVal, Value, describe, flatten
from ..errors import CompileError, CompileValueError, KernelTypeError
from ..ir.nodes import Var
from ..types import MatrixType, VectorType

Key = Any  # a Literal index, a runtime index (Var) or a Python slice


def has_slice(keys: list[Key]) -> bool:
    return any(is_slice(k) for k in keys)


def slice_key(ctx: Ctx, lower: Value | None, upper: Value | None, step: Value | None) -> Key:
    """The key `lower:upper:step` gives: a Python slice when its bounds are constants (a local
    bound to a constant, `stop = 3`, is one), else a RuntimeSlice (array views take one;
    builtins/arrayview.py)."""
    lower, upper, step = (_known(ctx, v) for v in (lower, upper, step))
    if isinstance(step, Literal) and step.value == 0:
        raise CompileValueError("Slice step cannot be zero", ctx.loc)
    parts: list[int | None] = []
    for v in (lower, upper, step):
        if v is None or (isinstance(v, Literal) and isinstance(v.value, int) and \
                not isinstance(v.value, bool)):
            parts.append(None if v is None else int(v.value))
        elif isinstance(v, Var) and v.type.is_int:
            return RuntimeSlice(lower, upper, step)
        else:
            raise CompileValueError(f"Slice component must be an integer, got {describe(v)}",
                                    ctx.loc)
    return slice(*parts)


def _known(ctx: Ctx, v: Value | None) -> Value | None:
    """An integer Var a `const` op defines, as the Literal it is; anything else unchanged."""
    if isinstance(v, Var) and v.type.is_int:
        known = ctx.b.constant_value(v)
        if isinstance(known, int) and not isinstance(known, bool):
            return Literal(known)
    return v


def constant_keys(ctx: Ctx, keys: list[Key]) -> list[Key]:
    """keys, whose slices must have constant bounds (vectors, matrices, fixed arrays)."""
    if any(isinstance(k, RuntimeSlice) for k in keys):
        raise CompileValueError("Slice component must be a compile-time constant integer",
                                ctx.loc)
    return keys


def _pick(ctx: Ctx, key: Key, n: int, what: str) -> list[int]:
    if isinstance(key, slice):
        return list(range(n))[key]
    if not isinstance(key, Literal):
        raise CompileError(f"an index combined with a slice must be a constant ({what})", ctx.loc)
    k = int(key.value)
    if not -n <= k < n:
        raise CompileError(f"index {k} is out of range for {what} {n}", ctx.loc)
    return [k % n]


def positions(ctx: Ctx, t: VectorType | MatrixType, keys: list[Key]) -> tuple[list[int], Any]:
    """The flat component positions `keys` select, and the type of the selection (None: one
    scalar)."""
    constant_keys(ctx, keys)
    if isinstance(t, VectorType):
        if len(keys) != 1:
            raise CompileError(f"{t!r} takes one index, got {len(keys)}", ctx.loc)
        sel = _pick(ctx, keys[0], t.length, "length")
        result: Any = VectorType(len(sel), t.dtype) if isinstance(keys[0], slice) else None
    else:
        if len(keys) > 2:
            raise CompileError(f"{t!r} takes at most two indices, got {len(keys)}", ctx.loc)
        k0, k1 = [*keys, slice(None)][:2]
        rows, cols = _pick(ctx, k0, t.rows, "rows"), _pick(ctx, k1, t.cols, "columns")
        sel = [r * t.cols + c for r in rows for c in cols]
        sliced = [len(s) for k, s in ((k0, rows), (k1, cols)) if isinstance(k, slice)]
        result = (MatrixType(sliced[0], sliced[1], t.dtype) if len(sliced) == 2
                  else VectorType(sliced[0], t.dtype) if sliced else None)
    if not sel and result is None:
        raise CompileError("this slice selects no components", ctx.loc)
    return sel, result


def read_slice(ctx: Ctx, base: Composite, keys: list[Key]) -> Value:
    sel, result = positions(ctx, base.type, keys)
    if result is None:
        return base.comps[sel[0]]  # type: ignore[no-any-return]
    return Composite(result, tuple(base.comps[p] for p in sel))


def write_slice(ctx: Ctx, base: Composite, keys: list[Key], new: Value) -> Composite:
    """base with the components `keys` select replaced by those of new (already type-checked
    against `read_slice(base, keys)`)."""
    sel, _ = positions(ctx, base.type, keys)
    comps = list(base.comps)
    for p, c in zip(sel, flatten(new), strict=True):
        comps[p] = c
    return Composite(base.type, tuple(comps))


def star_items(ctx: Ctx, value: Any) -> list[Value]:
    """What `*value` passes to a call: a vector's components, a matrix's rows, a tuple's items."""
    if isinstance(value, Composite) and isinstance(value.type, MatrixType):
        t = value.type
        return [Composite(VectorType(t.cols, t.dtype), value.comps[r * t.cols:(r + 1) * t.cols])
                for r in range(t.rows)]
    if isinstance(value, Composite):
        return list(value.comps)
    if isinstance(value, TupleVal):
        return list(value.items)
    raise KernelTypeError("Starred expressions are only supported for vectors, matrices, "
                               f"tuples and slices of 1-D arrays, not {describe(value)}", ctx.loc)


def array_slice_items(ctx: Ctx, arr: ArrayVal, keys: list[Key]) -> list[Value]:
    """`*a[i:j:k]` in a call: the elements of a 1-D array at constant, explicit indices."""
    key = constant_keys(ctx, keys)[0] if len(keys) == 1 else None
    if arr.type.ndim != 1 or not isinstance(key, slice):
        raise CompileError("*-unpacking an array takes a slice of a 1-D array", ctx.loc)
    if key.stop is None:
        raise CompileValueError("*-unpacking an array slice requires explicit upper bound "
                                    "(`*a[:3]`)", ctx.loc)
    start, step = key.start or 0, key.step or 1
    if step < 0:
        raise CompileValueError("*-unpacking an array slice: the step cannot be negative",
                                    ctx.loc)
    if start < 0 or key.stop < 0:
        raise CompileValueError("*-unpacking an array slice: bounds cannot be negative for "
                                    "arrays", ctx.loc)
    out: list[Value] = []
    for k in range(start, key.stop, step):
        place = memory.index_array(ctx, arr, [Literal(k)])
        assert isinstance(place, memory.Place)
        out.append(memory.load(ctx, place))
    return out
