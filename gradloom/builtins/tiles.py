"""Tile builtins: construction, loads and stores between arrays and tiles, views, elements.

Semantics follow Warp 1.19 on the CPU, where a block has one thread (block_dim 1): `wp.tile(x)`
is a tile of shape (1,) and `wp.untile(t)` its element. Tiles live in thread-local buffers
(builtins/tile_loops.py); views (`tile_view`, `tile_transpose`, `tile_broadcast`, indexing a
row) share their tile's buffer, as Warp's views share its storage.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from ..errors import CompileValueError
from ..ir.builder import BLOCK_DIM, DIFFERENTIATED
from ..ir.nodes import Var
from ..types import (
    ArrayType,
    MatrixType,
    ScalarType,
    StructType,
    TileType,
    VectorType,
    float32,
    int32,
    int64,
    resolve_annotation,
)
from . import memory
from .registry import builtin
from .tile_block import each_lane, lane, once_per_block
from .tile_loops import Index, convert, copy_into, each, get, new_tile, row_major, write
from .values import (
    ArrayVal,
    Composite,
    Ctx,
    Literal,
    StackVal,
    StructVal,
    TileVal,
    TupleVal,
    Value,
    describe,
    flatten,
    if_values,
    rebuild,
    scalar,
    type_of,
    zeros_of,
)

_T = "Tile Primitives"


def const_ints(ctx: Ctx, v: Any, what: str) -> tuple[int, ...]:
    """A shape or offset given as constants: an int, or a tuple of them."""
    items = v.items if isinstance(v, TupleVal) else v if isinstance(v, tuple) else (v,)
    out = []
    for i in items:
        i = i.value if isinstance(i, Literal) else i
        if isinstance(i, Var) and i.type.is_int:  # a local bound to a constant (`n = 3`)
            i = ctx.b.constant_value(i)
        if not isinstance(i, int) or isinstance(i, bool):
            raise ctx.error(f"{what} must be compile-time constant integers, got {describe(v)}")
        out.append(i)
    return tuple(out)


def dtype_of(ctx: Ctx, dtype: Any, default: ScalarType = float32) -> Any:
    if dtype is None:
        return default
    try:
        t = resolve_annotation(dtype)
    except TypeError as exc:
        raise ctx.error(f"dtype: {exc}") from None
    if not isinstance(t, (ScalarType, VectorType, MatrixType, StructType)):
        raise ctx.error(f"tiles of {t!r} are not supported here (scalar, vector, matrix and "
                        "struct element types are)")
    return t


def no_struct(ctx: Ctx, t: Any, name: str) -> None:
    """Refuse a Warp struct element type where an operation needs numbers (Warp's rule)."""
    if isinstance(t, StructType):
        raise ctx.error(f"{name}() does not support tiles of Warp struct type {t!r} (it needs "
                        "scalar, vector or matrix elements)")


def tile_arg(ctx: Ctx, v: Any, name: str) -> TileVal:
    if not isinstance(v, TileVal):
        raise ctx.error(f"argument '{name}' must be a tile, got {describe(v)}")
    return v


def _element(ctx: Ctx, v: Value, t: Any) -> Var | Composite | StructVal:
    """A tile element from a kernel value: a scalar (a literal takes t), vector, matrix or
    struct."""
    if isinstance(v, (Composite, StructVal)):
        return v
    return scalar(ctx, v, t if isinstance(t, ScalarType) else None)


def filled(ctx: Ctx, t: TileType, value: Var | Composite) -> TileVal:
    out = new_tile(ctx, t)
    each(ctx, t.shape, lambda i: write(ctx, out, i, value))
    return out


# -- construction -------------------------------------------------------------------------------


@builtin("tile_zeros", "a tile of the given constant shape filled with zeros", group=_T,
         differentiable=False, signatures="(shape: Tuple, dtype: Any) -> Tile")
def tile_zeros(ctx: Ctx, shape: Any, dtype: Any = float, storage: str = "register") -> TileVal:
    t = TileType(dtype_of(ctx, dtype), const_ints(ctx, shape, "shape"))
    return new_tile(ctx, t)  # buffers start zeroed


@builtin("tile_empty", "a tile of the given constant shape whose contents are not set (Warp's "
         "contract: overwrite every element before reading one; gradloom's start zeroed)",
         group=_T, differentiable=False, signatures="(shape: Tuple, dtype: Any) -> Tile")
def tile_empty(ctx: Ctx, shape: Any, dtype: Any = float, storage: str = "register",
               requires_grad: Any = None) -> TileVal:
    return tile_zeros(ctx, shape, dtype, storage)


@builtin("tile_ones", "a tile of the given constant shape filled with ones", group=_T,
         differentiable=False, signatures="(shape: Tuple, dtype: Any) -> Tile")
def tile_ones(ctx: Ctx, shape: Any, dtype: Any = float, storage: str = "register") -> TileVal:
    t = TileType(dtype_of(ctx, dtype), const_ints(ctx, shape, "shape"))
    no_struct(ctx, t.dtype, "tile_ones")
    return filled(ctx, t, ctx.const(1, t.dtype))


@builtin("tile_full", "a tile of the given constant shape filled with value", group=_T,
         signatures="(shape: Tuple, value: Scalar, dtype: Any) -> Tile")
def tile_full(ctx: Ctx, shape: Any, value: Value, dtype: Any = None,
              storage: str = "register") -> TileVal:
    if dtype is None and not isinstance(value, Literal):
        dt = type_of(_element(ctx, value, None))
    else:
        dt = dtype_of(ctx, dtype)
    t = TileType(dt, const_ints(ctx, shape, "shape"))
    return filled(ctx, t, convert(ctx, _element(ctx, value, dt), dt))


@builtin("tile_arange", "a 1-D tile of evenly spaced values: tile_arange(stop), "
         "tile_arange(start, stop) or tile_arange(start, stop, step), constants", group=_T,
         differentiable=False, signatures="(args: Scalar, dtype: Any) -> Tile")
def tile_arange(ctx: Ctx, *args: Any, dtype: Any = None, storage: str = "register") -> TileVal:
    start, stop, step = _arange_bounds(ctx, args)
    dt = dtype_of(ctx, dtype, float32)  # Warp's default, whatever the numbers' types
    if not isinstance(dt, ScalarType) or dt.kind == "b":
        raise ctx.error(f"tile_arange() requires a numeric scalar dtype, got {dt!r}")
    _representable(ctx, dict(zip(("start", "stop", "step"), (start, stop, step), strict=True)),
                   dt)
    n, start, step = _arange_count(ctx, dt, start, stop, step)
    out = new_tile(ctx, TileType(dt, (n,)))

    def fill(i: list[Var]) -> None:
        k = convert(ctx, i[0], dt)
        v = ctx.op("add", ctx.const(start, dt), ctx.op("mul", k, ctx.const(step, dt)))
        write(ctx, out, i, v)
    each(ctx, out.type.shape, fill)
    return out


def _arange_bounds(ctx: Ctx, args: tuple[Any, ...]) -> tuple[Any, Any, Any]:
    """tile_arange's (start, stop, step) from its positional arguments, which must be
    compile-time numbers (a zero step refused)."""
    vals = [a.value if isinstance(a, Literal) else a for a in args]
    vals = [v.item() if hasattr(v, "item") and not isinstance(v, Var) else v for v in vals]
    vals = [ctx.b.constant_value(v) if isinstance(v, Var) else v for v in vals]
    if len(vals) > 3:
        raise ctx.error(f"tile_arange() accepts at most 3 positional arguments, got {len(vals)}")
    if not vals:
        raise ctx.error("tile_arange() needs at least its stop value")
    names = ("stop",) if len(vals) == 1 else ("start", "stop", "step")
    for name, v in zip(names, vals, strict=False):
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            raise ctx.error(f"tile_arange() arguments must be compile time constants, but "
                            f"{name} is not")
    if len(vals) == 3 and vals[2] == 0:
        raise ctx.error("tile_arange() step cannot be zero")
    if len(vals) == 1:
        return 0, vals[0], 1
    return vals[0], vals[1], vals[2] if len(vals) == 3 else 1


def _arange_count(ctx: Ctx, dt: ScalarType, start: Any, stop: Any, step: Any
                  ) -> tuple[int, Any, Any]:
    """(the number of elements, start, step) of tile_arange in type dt: float bounds are
    rounded to the tile's type first and the count taken there, as Warp does; an empty
    range is refused."""
    if dt.is_float:  # bounds in the tile's type, as Warp (0.99999999 is 1.0 in float32)
        f = np.dtype(dt.np_dtype).type
        lo, hi, by = (_rounded(f, v) for v in (start, stop, step))
        with np.errstate(all="ignore"):
            count = float((hi - lo) / by)  # in the tile's type (0.3/0.1: 3)
        start, stop, step = float(lo), float(hi), float(by)
        if not math.isfinite(count):  # the span overflows the type (-3e38 to 3e38 in float32)
            with np.errstate(all="ignore"):
                count = (stop - start) / step
        if count == 0 and (stop - start) / step > 0:  # a quotient below the type's range
            count = 1.0
        if not math.isfinite(count):
            raise ctx.error(f"tile_arange({start}, {stop}, {step}): the range spans more "
                            "elements than can be counted")
        n = max(0, math.ceil(count))
    elif all(isinstance(v, int) for v in (start, stop, step)):
        n = max(0, -(-(int(stop) - int(start)) // int(step)))  # exact for wide integers
    else:
        n = max(0, math.ceil((stop - start) / step))
    if n == 0:
        raise ctx.error(f"tile_arange({start}, {stop}, {step}) needs a non-empty range "
                        "(zero-length)")
    return int(n), start, step


def _rounded(f: Any, v: int | float) -> Any:
    """v in the float type f, rounded once (an int64 bound as C converts it: numpy's own
    conversion of a Python int goes through a double and rounds twice)."""
    if isinstance(v, int) and -2 ** 63 <= v < 2 ** 63:
        return np.int64(v).astype(f)
    if isinstance(v, int) and 0 <= v < 2 ** 64:
        return np.uint64(v).astype(f)
    return f(v)


def _representable(ctx: Ctx, bounds: dict[str, Any], dt: ScalarType) -> None:
    """tile_arange's bounds as the tile's type holds them: integers that fit a 64-bit integer,
    in an integer tile's range and without a fractional part; floats finite in a float tile's
    type (Warp's checks and words)."""
    for name, v in bounds.items():
        where = f"tile_arange() {name}={v!r}"
        if isinstance(v, int) and not -2 ** 63 <= v < 2 ** 64:
            raise ctx.error(f"{where} is too wide to use as an integer bound; write it as a "
                            f"float ({float(v)!r})")
        if dt.is_float:
            with np.errstate(all="ignore"):
                bad = math.isfinite(v) and not np.isfinite(_rounded(np.dtype(dt.np_dtype).type, v))
            if bad:
                raise ctx.error(f"{where} is out of range for {dt!r}")
            continue
        if isinstance(v, float) and not v.is_integer():
            raise ctx.error(f"{where} has a fractional part; {dt!r} tiles need integer bounds")
        info = np.iinfo(dt.np_dtype)
        if not info.min <= v <= info.max:
            raise ctx.error(f"{where} is out of range for {dt!r}")


@builtin("tile", "a tile of shape (block_dim,) from each thread's value (block_dim is 1 on the "
         "CPU unless config.enable_cpu_blocks: a tile of shape (1,)); a vector or matrix value expands to a tile of its scalars, of "
         "shape (length, block_dim) or (rows, cols, block_dim), unless preserve_type",
         group=_T, signatures="(x: Scalar) -> Tile")
def tile(ctx: Ctx, x: Value, preserve_type: Any = False) -> TileVal:
    v = _element(ctx, x, None)
    keep = preserve_type.value if isinstance(preserve_type, Literal) else preserve_type
    if not isinstance(keep, bool):
        raise ctx.error("wp.tile(): preserve_type must be a constant bool")
    t, n = type_of(v), BLOCK_DIM.get()  # one element per thread of the block (tile_block.py)
    if keep or not isinstance(v, Composite) or not isinstance(t, (VectorType, MatrixType)):
        out = new_tile(ctx, TileType(t, (n,)))
        each_lane(ctx, [v], lambda i, got: _put(ctx, out, [i], got[0]))
        return out
    dims = (t.length,) if isinstance(t, VectorType) else (t.rows, t.cols)
    out = new_tile(ctx, TileType(t.dtype, (*dims, n)))

    def expand(i: Var, got: list[Value]) -> list[Var]:
        comps = got[0].comps  # type: ignore[union-attr]
        for k, comp in enumerate(comps):  # row-major
            write(ctx, out, [*map(int, np.unravel_index(k, dims)), i], comp)
        return []

    each_lane(ctx, [v], expand)
    return out


def _put(ctx: Ctx, out: TileVal, idx: Index, value: Value) -> list[Var]:
    write(ctx, out, idx, value)
    return []


@builtin("untile", "this thread's element of a tile of shape (block_dim,) (block_dim 1: its "
         "only element); of a tile of shape (length, block_dim) or (rows, cols, block_dim), "
         "as wp.tile expands them, the vector or matrix", group=_T,
         signatures="(a: Tile) -> Scalar")
def untile(ctx: Ctx, a: Value) -> Var | Composite:
    t = tile_arg(ctx, a, "a")
    shape, dt, n = t.type.shape, t.type.dtype, BLOCK_DIM.get()
    me = lane(ctx)
    if shape == (n,):
        return get(ctx, t, [me])
    if len(shape) in (2, 3) and shape[-1] == n and isinstance(dt, ScalarType):
        dims = shape[:-1]
        comps = tuple(get(ctx, t, [*map(int, np.unravel_index(k, dims)), me])
                      for k in range(math.prod(dims)))
        ct = VectorType(dims[0], dt) if len(dims) == 1 else MatrixType(dims[0], dims[1], dt)
        return Composite(ct, comps)  # type: ignore[arg-type]
    raise ctx.error(f"wp.untile() needs a tile of shape (block_dim,) = ({n},) (or a "
                    f"vector's or matrix's expansion), got {t.type!r}")


@builtin("block_dim", "the number of threads in this thread's block: 1 (as gradloom runs tiles "
         "per thread, on CUDA too), or on the CPU with wp.config.enable_cpu_blocks the launch's "
         "block_dim in a kernel without tiles", group=_T,
         differentiable=False, signatures="() -> Int")
def block_dim(ctx: Ctx) -> Var:
    return ctx.const(BLOCK_DIM.get(), int32)


# -- arrays <-> tiles ---------------------------------------------------------------------------


def _offsets(ctx: Ctx, offset: Any, ndim: int) -> list[Var]:
    if offset is None:
        return [ctx.const(0, int32)] * ndim
    items = list(offset.items) if isinstance(offset, TupleVal) else (
        list(offset) if isinstance(offset, tuple) else [offset])
    if len(items) != ndim:
        raise ctx.error(f"offset has {len(items)} entries for a {ndim}-D array")
    return [convert(ctx, scalar(ctx, Literal(v) if isinstance(v, int) else v, int32), int32)
            for v in items]


def _array_arg(ctx: Ctx, a: Any) -> ArrayVal:
    if not isinstance(a, ArrayVal) or not isinstance(a.type, ArrayType):
        raise ctx.error(f"argument 'a' must be an array, got {describe(a)}")
    if not isinstance(a.type.dtype, (ScalarType, VectorType, MatrixType, StructType)):
        raise ctx.error(f"tiles of {a.type.dtype!r} are not supported here (arrays of scalars, "
                        "vectors, matrices and structs are)")
    return a


def _in_bounds(ctx: Ctx, a: ArrayVal, at: list[Var]) -> Var:
    ok: Var | None = None
    for k, i in zip(at, a.shape, strict=True):
        n = convert(ctx, i, int32)
        c = ctx.op("and", ctx.op("ge", k, ctx.const(0, int32)), ctx.op("lt", k, n))
        ok = c if ok is None else ctx.op("and", ok, c)
    assert ok is not None
    return ok


@builtin("tile_load", "a tile of the given constant shape read from array a at offset (one "
         "entry per dimension); elements outside the array read as zero", group=_T,
         signatures="(a: Array, shape: Tuple, offset: Tuple) -> Tile")
def tile_load(ctx: Ctx, a: Any, shape: Any, offset: Any = None, storage: str = "register",
              bounds_check: bool = True, aligned: bool = False) -> TileVal:
    arr = _array_arg(ctx, a)
    dims = const_ints(ctx, shape, "shape")
    if len(dims) != arr.type.ndim:
        raise ctx.error(f"wp.tile_load(): a {len(dims)}-D shape for a {arr.type.ndim}-D array")
    base = _offsets(ctx, offset, len(dims))
    out = new_tile(ctx, TileType(arr.type.dtype, dims))

    def one(i: list[Var]) -> None:
        load_element(ctx, arr, [ctx.op("add", o, k) for o, k in zip(base, i, strict=True)], out, i)

    def unchecked(i: list[Var]) -> None:
        at: list[Any] = [ctx.op("add", o, k) for o, k in zip(base, i, strict=True)]
        place = memory.index_array(ctx, arr, at)
        assert isinstance(place, memory.Place)
        write(ctx, out, i, memory.load(ctx, place))

    _whole_or_each(ctx, arr, base, dims, unchecked, one)
    return out


def _whole_or_each(ctx: Ctx, arr: ArrayVal, base: list[Var], dims: tuple[int, ...],
                   unchecked: Callable[[list[Var]], None],
                   one: Callable[[list[Var]], None]) -> None:
    """A tile copy between arr at base and a tile of shape dims: `unchecked` for every index
    where the tile lies wholly inside the array (the usual case: no test per element, so LLVM
    unrolls and vectorises the rows), else `one`, which tests each element. Kernels for
    autodiff get only `one`."""
    if DIFFERENTIATED.get():
        each(ctx, dims, one)
        return
    last = [ctx.op("add", o, ctx.const(d - 1, int32)) for o, d in zip(base, dims, strict=True)]
    inside = ctx.op("and", _in_bounds(ctx, arr, base), _in_bounds(ctx, arr, last))

    def fast() -> list[Var]:
        each(ctx, dims, unchecked)
        return []

    def slow() -> list[Var]:
        each(ctx, dims, one)
        return []
    if_values(ctx, inside, fast, slow)


def load_element(ctx: Ctx, arr: ArrayVal, at: list[Var], out: TileVal, i: list[Var]) -> None:
    """out[i] = arr[at], or zero where `at` lies outside the array."""
    def inside() -> list[Var]:
        place = memory.index_array(ctx, arr, list(at))
        assert isinstance(place, memory.Place)
        return flatten(memory.load(ctx, place))
    zero = zeros_of(ctx, arr.type.dtype)
    vs = if_values(ctx, _in_bounds(ctx, arr, at), inside, lambda: flatten(zero))
    write(ctx, out, i, rebuild(zero, iter(vs)))  # type: ignore[arg-type]


@builtin("tile_store", "write tile t into array a at offset (one entry per dimension); "
         "elements outside the array are skipped", group=_T,
         signatures="(a: Array, t: Tile, offset: Tuple) -> None")
def tile_store(ctx: Ctx, a: Any, t: Any, offset: Any = None, bounds_check: bool = True,
               aligned: bool = False) -> None:
    arr = _array_arg(ctx, a)
    src = tile_arg(ctx, t, "t")
    if src.type.ndim != arr.type.ndim:
        raise ctx.error(f"wp.tile_store(): a {src.type!r} into a {arr.type.ndim}-D array")
    if src.type.dtype != arr.type.dtype:
        raise ctx.error(f"wp.tile_store(): the array's dtype {arr.type.dtype!r} and the tile's "
                        f"{src.type.dtype!r} differ")
    base = _offsets(ctx, offset, src.type.ndim)

    def one(i: list[Var]) -> None:
        at = [ctx.op("add", o, k) for o, k in zip(base, i, strict=True)]
        v = get(ctx, src, i)

        def inside() -> list[Var]:
            place = memory.index_array(ctx, arr, list(at))
            assert isinstance(place, memory.Place)
            memory.store(ctx, place, v)
            return []
        if_values(ctx, _in_bounds(ctx, arr, at), inside, lambda: [])

    def unchecked(i: list[Var]) -> None:
        place = memory.index_array(ctx, arr, [ctx.op("add", o, k)
                                              for o, k in zip(base, i, strict=True)])
        assert isinstance(place, memory.Place)
        memory.store(ctx, place, get(ctx, src, i))

    # as tile_load's (the tests per element were a sixth of the 32 x 32 Cholesky example); in
    # a CPU block by its lane 0 (builtins/tile_block.py)
    once_per_block(ctx, lambda: _whole_or_each(ctx, arr, base, src.type.shape, unchecked, one))


# -- views and elements -------------------------------------------------------------------------


@builtin("tile_transpose", "the transpose of a 2-D tile (a view of the same storage)", group=_T,
         signatures="(a: Tile) -> Tile")
def tile_transpose(ctx: Ctx, a: Any) -> TileVal:
    t = tile_arg(ctx, a, "a")
    if t.type.ndim != 2:
        raise ctx.error(f"wp.tile_transpose() needs a 2-D tile, got {t.type!r}")
    m, n = t.type.shape
    return replace(t, type=TileType(t.type.dtype, (n, m)), strides=t.strides[::-1])


@builtin("tile_broadcast", "tile a broadcast to shape (numpy's rules; a view)", group=_T,
         signatures="(a: Tile, shape: Tuple) -> Tile")
def tile_broadcast(ctx: Ctx, a: Any, shape: Any) -> TileVal:
    t = tile_arg(ctx, a, "a")
    dims = const_ints(ctx, shape, "shape")
    if not 1 <= len(dims) <= 4:
        raise CompileValueError(f"tile_broadcast() output must have between one and four "
                                f"dimensions, got {len(dims)}", ctx.loc)
    return broadcast_to(ctx, t, dims)


def broadcast_to(ctx: Ctx, t: TileVal, dims: tuple[int, ...]) -> TileVal:
    if len(dims) < t.type.ndim:
        raise ctx.error(f"cannot broadcast a {t.type!r} to shape {dims}")
    lead = len(dims) - t.type.ndim
    strides = [0] * lead
    for d, have, s in zip(dims[lead:], t.type.shape, t.strides, strict=True):
        if have != d and have != 1:
            raise ctx.error(f"cannot broadcast a {t.type!r} to shape {dims}")
        strides.append(s if have == d else 0)
    return replace(t, type=TileType(t.type.dtype, dims), strides=tuple(strides))


def tile_view(ctx: Ctx, t: Any, offset: Any, shape: Any = None) -> TileVal:
    """wp.tile_view without slices among the offsets (builtins/tile_index.py registers the
    builtin, which also takes slices)."""
    src = tile_arg(ctx, t, "t")
    off = _mixed(ctx, offset)
    nd = src.type.ndim
    if len(off) > nd:
        raise ctx.error(f"offset has {len(off)} entries; a {src.type!r} has {nd} dimensions")
    # the view keeps the last len(shape) dimensions (without a shape: those the offset skips)
    dims = src.type.shape[len(off):] if shape is None else const_ints(ctx, shape, "shape")
    keep = len(dims)
    if not keep or keep > nd or len(off) < nd - keep:
        raise ctx.error(f"a view of shape {dims} at an offset of {len(off)} entries does not "
                        f"fit a {src.type!r}")
    full = off + [0] * (nd - len(off))
    for k, o in enumerate(full):  # constant entries are checked here, run-time ones are not
        last = src.type.shape[k] - (dims[k - (nd - keep)] if k >= nd - keep else 1)
        if isinstance(o, int) and not 0 <= o <= last:
            raise ctx.error(f"tile_view offset {o} along dimension {k} is out of bounds for a "
                            f"view of shape {dims} of a {src.type!r}")
    if any(d > n for d, n in zip(dims, src.type.shape[nd - keep:], strict=True)):
        raise ctx.error(f"a view of shape {dims} is larger than a {src.type!r}")
    return shifted(ctx, replace(src, type=TileType(src.type.dtype, tuple(dims)),
                                strides=src.strides[nd - keep:]), full, src.strides)


def _mixed(ctx: Ctx, v: Any) -> list[int | Var]:
    """Offsets given as constants or run-time integers (one per leading dimension)."""
    items = v.items if isinstance(v, TupleVal) else v if isinstance(v, tuple) else (v,)
    out: list[int | Var] = []
    for i in items:
        i = i.value if isinstance(i, Literal) else i
        if (isinstance(i, int) and not isinstance(i, bool)) or (isinstance(i, Var) and i.type.is_int):
            out.append(i)
        else:
            raise ctx.error(f"tile offsets must be integers or slices, got {describe(i)}")
    return out


def shifted(ctx: Ctx, t: TileVal, off: list[int | Var], strides: tuple[int, ...]) -> TileVal:
    """t moved by off (one entry per stride; constant entries fold into t.offset)."""
    const, dyn = t.offset, t.dyn
    for o, s in zip(off, strides, strict=True):
        if isinstance(o, int):
            const += o * s
        elif s:
            o64 = o if o.type == int64 else ctx.op("cast", o, type=int64)
            term = o64 if s == 1 else ctx.op("mul", o64, ctx.const(s, int64))
            dyn = term if dyn is None else ctx.op("add", dyn, term)
    return replace(t, offset=const, dyn=dyn)


def element_index(ctx: Ctx, t: TileVal, keys: list[Value]) -> Index:
    if len(keys) != t.type.ndim:
        raise ctx.error(f"{t.type!r} takes {t.type.ndim} indices, got {len(keys)}")
    out: list[Var | int] = []
    for k in keys:
        if isinstance(k, Literal) and isinstance(k.value, int):
            out.append(k.value)
        else:
            out.append(scalar(ctx, k))
    return out


@builtin("tile_extract", "the element of tile a at the given indices", group=_T,
         signatures="(a: Tile, i: Int) -> Scalar")
def tile_extract(ctx: Ctx, a: Any, *idx: Value) -> Var | Composite:
    t = tile_arg(ctx, a, "a")
    return get(ctx, t, element_index(ctx, t, list(idx)))


@builtin("tile_assign", "copy tile src into dst at a constant offset", group=_T,
         signatures="(dst: Tile, src: Tile, offset: Tuple) -> None")
def tile_assign(ctx: Ctx, dst: Any, src: Any, offset: Any = None) -> None:
    d, s = tile_arg(ctx, dst, "dst"), tile_arg(ctx, src, "src")
    off = (0,) * d.type.ndim if offset is None else offset
    copy_into(ctx, tile_view(ctx, d, off, s.type.shape), s)


def fresh_like(ctx: Ctx, t: TileVal) -> TileVal:
    """A new zeroed buffer for a tile like t (a stack gets a count of its own too)."""
    out = new_tile(ctx, t.type)
    if isinstance(t, StackVal):
        count = new_tile(ctx, TileType(int32, (1,)))
        return StackVal(out.type, out.base, out.span, out.offset, out.strides, out.dyn, count)
    return out


def copy(ctx: Ctx, t: TileVal) -> TileVal:
    """A packed copy of t in a buffer of its own (a stack's count copied too)."""
    out = fresh_like(ctx, t)
    settle(ctx, t, out)
    return out


def settle(ctx: Ctx, v: TileVal, into: TileVal) -> TileVal:
    """Where a tile variable merges (after an if, around a loop): copy v into `into`."""
    if v.type != into.type:
        raise ctx.error(f"a tile variable is {into.type!r} and {v.type!r} on different paths")
    copy_into(ctx, into, v)
    if isinstance(v, StackVal) and isinstance(into, StackVal):
        assert v.count is not None and into.count is not None
        copy_into(ctx, into.count, v.count)
    return into


def packed(t: TileVal) -> bool:
    return t.offset == 0 and t.strides == row_major(t.type.shape)

