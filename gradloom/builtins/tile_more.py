"""More tile builtins: reshape/squeeze views, astype, dot, axpy, scans, diag_add, tile_from_thread
and tile_atomic_add (Warp 1.19's semantics with one thread per block, as on its CPU)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..errors import CompileValueError
from ..ir.nodes import Var
from ..types import ScalarType, StructType, TileType, bool_, int32, uint32, uint64
from . import memory, ops
from .registry import builtin
from .tile_block import cooperative, each_lane, first_lane, from_first_lane
from .tile_loops import convert, copy_into, each, fold, get, new_tile, read, row_major, write
from .tile_math import element_op
from .tiles import (
    _T,
    _array_arg,
    _element,
    _in_bounds,
    _offsets,
    const_ints,
    dtype_of,
    load_element,
    tile_arg,
)
from .values import (
    Composite,
    Ctx,
    Literal,
    StructVal,
    TileVal,
    Value,
    flatten,
    if_values,
    rebuild,
    scalar,
    zeros_of,
)


def _contiguous(t: TileVal) -> bool:
    return t.strides == row_major(t.type.shape)


@builtin("tile_reshape", "a view of a contiguous tile with a new constant shape (one entry may "
         "be -1: inferred)", group=_T, signatures="(t: Tile, shape: Tuple) -> Tile")
def tile_reshape(ctx: Ctx, t: Any, shape: Any) -> TileVal:
    src = tile_arg(ctx, t, "t")
    dims = list(const_ints(ctx, shape, "shape"))
    if dims.count(-1) > 1 or any(d == 0 or d < -1 for d in dims):
        raise ctx.error(f"wp.tile_reshape(): invalid shape {tuple(dims)}")
    known = 1
    for d in dims:
        known *= d if d != -1 else 1
    if -1 in dims:
        dims[dims.index(-1)] = src.type.count // known
    total = 1
    for d in dims:
        total *= d
    if total != src.type.count:
        raise ctx.error(f"wp.tile_reshape(): a {src.type!r} cannot take shape {tuple(dims)}")
    if not _contiguous(src):
        raise ctx.error("wp.tile_reshape() requires a contiguous tile (not a transposed or "
                        "strided view); copy it with wp.tile_assign first")
    new = TileType(src.type.dtype, tuple(dims))
    return replace(src, type=new, strides=row_major(new.shape))


@builtin("tile_squeeze", "a view of a tile without its dimensions of extent one (or the given "
         "constant axes)", group=_T, signatures="(t: Tile, axis: Any) -> Tile")
def tile_squeeze(ctx: Ctx, t: Any, axis: Any = None) -> TileVal:
    src = tile_arg(ctx, t, "t")
    nd = src.type.ndim
    if axis is None:
        drop = {k for k, d in enumerate(src.type.shape) if d == 1}
    else:
        axes = const_ints(ctx, axis, "axis")
        for a in axes:
            if not -nd <= a < nd:
                raise CompileValueError(f"tile_squeeze() axis {a} is out of bounds for tile with "
                                        f"{nd} dimensions", ctx.loc)
        drop = {a % nd for a in axes}
        if any(src.type.shape[a] != 1 for a in drop):
            raise ctx.error(f"wp.tile_squeeze(): axis {sorted(drop)} of a {src.type!r} is not "
                            "of extent one")
    keep = [k for k in range(nd) if k not in drop] or [nd - 1]
    return replace(src, type=TileType(src.type.dtype, tuple(src.type.shape[k] for k in keep)),
                   strides=tuple(src.strides[k] for k in keep))


@builtin("tile_astype", "a new tile with the elements converted to dtype", group=_T,
         signatures="(t: Tile, dtype: Any) -> Tile")
def tile_astype(ctx: Ctx, t: Any, dtype: Any) -> TileVal:
    src = tile_arg(ctx, t, "t")
    out = new_tile(ctx, TileType(dtype_of(ctx, dtype), src.type.shape))
    copy_into(ctx, out, src)
    return out


@builtin("tile_dot", "the sum of the elementwise products of two tiles of one shape (a tile of "
         "shape (1,))", group=_T, signatures="(a: Tile, b: Tile) -> Tile")
def tile_dot(ctx: Ctx, a: Any, b: Any) -> TileVal:
    x, y = tile_arg(ctx, a, "a"), tile_arg(ctx, b, "b")
    if x.type != y.type:
        raise ctx.error(f"wp.tile_dot(): {x.type!r} and {y.type!r} differ")
    part = getattr(x.type.dtype, "dtype", x.type.dtype)  # vectors: dot; matrices: Frobenius
    out = new_tile(ctx, TileType(part, (1,)))

    def step(i: list[Var], c: list[Var]) -> list[Var]:
        acc = c[0]
        for p, q in zip(flatten(get(ctx, x, i)), flatten(get(ctx, y, i)), strict=True):
            acc = ctx.op("add", acc, ctx.op("mul", p, q))
        return [acc]
    write(ctx, out, [0], fold(ctx, x.type.shape, [ctx.const(0, part)], step)[0])
    return out


@builtin("tile_axpy", "dest += alpha * src, in place", group=_T,
         signatures="(alpha: Scalar, src: Tile, dest: Tile) -> None")
def tile_axpy(ctx: Ctx, alpha: Value, src: Any, dest: Any) -> None:
    s, d = tile_arg(ctx, src, "src"), tile_arg(ctx, dest, "dest")
    if s.type.shape != d.type.shape:
        raise ctx.error(f"wp.tile_axpy(): shapes {s.type.shape} and {d.type.shape} differ")
    part = getattr(d.type.dtype, "dtype", d.type.dtype)
    al = convert(ctx, scalar(ctx, alpha, part), part)

    def one(i: list[Var]) -> None:
        scaled = ops.binary(ctx, "mul", al, convert(ctx, get(ctx, s, i), d.type.dtype))
        write(ctx, d, i, ops.binary(ctx, "add", get(ctx, d, i), scaled))  # type: ignore[arg-type]
    each(ctx, d.type.shape, one)


def _scan(ctx: Ctx, a: Any, combine: str, inclusive: bool) -> TileVal:
    """Prefix results over the row-major sequence of a's elements (same shape)."""
    src = tile_arg(ctx, a, "a")
    out = new_tile(ctx, src.type)
    first = read(ctx, src, [0] * src.type.ndim)
    start = first if combine != "add" else ctx.const(0, src.type.dtype)

    def step(i: list[Var], c: list[Var]) -> list[Var]:
        v = read(ctx, src, i)
        nxt = ctx.op(combine, c[0], v)
        write(ctx, out, i, nxt if inclusive else c[0])
        return [nxt]
    fold(ctx, src.type.shape, [start], step)
    return out


@builtin("tile_scan_inclusive", "inclusive prefix sums of a tile (row-major order)", group=_T,
         signatures="(a: Tile) -> Tile")
def tile_scan_inclusive(ctx: Ctx, a: Any) -> TileVal:
    return _scan(ctx, a, "add", True)


@builtin("tile_scan_exclusive", "exclusive prefix sums of a tile (row-major order)", group=_T,
         signatures="(a: Tile) -> Tile")
def tile_scan_exclusive(ctx: Ctx, a: Any) -> TileVal:
    return _scan(ctx, a, "add", False)


@builtin("tile_scan_max_inclusive", "inclusive prefix maxima of a tile (row-major order)",
         group=_T, signatures="(a: Tile) -> Tile")
def tile_scan_max_inclusive(ctx: Ctx, a: Any) -> TileVal:
    return _scan(ctx, a, "max", True)


@builtin("tile_scan_min_inclusive", "inclusive prefix minima of a tile (row-major order)",
         group=_T, signatures="(a: Tile) -> Tile")
def tile_scan_min_inclusive(ctx: Ctx, a: Any) -> TileVal:
    return _scan(ctx, a, "min", True)


@builtin("tile_diag_add", "a new square tile: a with the 1-D tile d added to its diagonal",
         group=_T, signatures="(a: Tile, d: Tile) -> Tile")
def tile_diag_add(ctx: Ctx, a: Any, d: Any) -> TileVal:
    m, v = tile_arg(ctx, a, "a"), tile_arg(ctx, d, "d")
    n = m.type.shape[0]
    if m.type.shape != (n, n) or v.type.shape != (n,) or m.type.dtype != v.type.dtype:
        raise ctx.error(f"wp.tile_diag_add(): needs a square tile and a matching 1-D tile, got "
                        f"{m.type!r} and {v.type!r}")
    out = new_tile(ctx, m.type)
    copy_into(ctx, out, m)
    each(ctx, (n,), lambda i: write(ctx, out, [i[0], i[0]], ctx.op(
        "add", read(ctx, out, [i[0], i[0]]), read(ctx, v, i))))
    return out


@builtin("tile_from_thread", "a tile of the given shape filled with thread thread_idx's value "
         "(block_dim is 1: this thread's value, whatever thread_idx is, as on Warp's CPU)",
         group=_T,
         signatures="(shape: Tuple, value: Scalar, thread_idx: Int) -> Tile")
def tile_from_thread(ctx: Ctx, shape: Any, value: Value, thread_idx: Any,
                     storage: str = "register") -> TileVal:
    # one thread per block: whatever thread_idx names, the value is this thread's (as Warp's
    # CPU, checked on warp-lang: thread_idx=3 with block_dim=32 gives each thread its own); in
    # a CPU block (tile_block.py), thread thread_idx's
    v = value if isinstance(value, (Composite, StructVal)) else scalar(ctx, value)
    out = new_tile(ctx, TileType(v.type, const_ints(ctx, shape, "shape")))
    if not cooperative():
        each(ctx, out.type.shape, lambda i: write(ctx, out, i, v))
        return out
    src = ctx.const(thread_idx, int32) if isinstance(thread_idx, int) else \
        scalar(ctx, thread_idx, int32)

    def fill(i: Var, got: list[Any]) -> list[Var]:
        def put() -> list[Var]:
            each(ctx, out.type.shape, lambda k: write(ctx, out, k, got[0]))
            return []
        if_values(ctx, ctx.op("eq", i, got[1]), put, lambda: [])
        return []

    each_lane(ctx, [v, convert(ctx, src, int32)], fill)
    return out


def _no_gradient(ctx: Ctx, v: Var) -> Var:
    """v through its bits: as in Warp, the adjoint of the replaced values is not propagated (an
    atomic's returned value depends on the thread order; its gradient is refused otherwise)."""
    if not v.type.is_float:
        return v
    bits: ScalarType = {32: uint32, 64: uint64}.get(v.type.bits, uint32)
    return ctx.op("bitcast", ctx.op("bitcast", v, type=bits), type=v.type)


@builtin("tile_atomic_add", "atomically add tile t into array a at offset; returns a tile of the "
         "values it replaced (elements outside the array: skipped, 0 returned; no gradient flows "
         "through them, as in Warp)", group=_T,
         signatures="(a: Array, t: Tile, offset: Tuple) -> Tile")
def tile_atomic_add(ctx: Ctx, a: Any, t: Any, offset: Any = None,
                    bounds_check: bool = True) -> TileVal:
    arr, src = _array_arg(ctx, a), tile_arg(ctx, t, "t")
    if src.type.ndim != arr.type.ndim or src.type.dtype != arr.type.dtype:
        raise ctx.error(f"wp.tile_atomic_add(): a {src.type!r} into an array of "
                        f"{arr.type.dtype!r} with {arr.type.ndim} dimension(s)")
    part = getattr(src.type.dtype, "dtype", src.type.dtype)
    if not isinstance(part, StructType) and _narrow(part):
        raise ctx.error(f"tile_atomic_add() only supports tiles with [u]int32, [u]int64, "
                        f"float16, bfloat16, float32 or float64 components, got {part!r}")
    base = _offsets(ctx, offset, src.type.ndim)
    out = new_tile(ctx, src.type)

    def one(i: list[Var]) -> None:
        at = [ctx.op("add", o, k) for o, k in zip(base, i, strict=True)]
        v = get(ctx, src, i)

        def inside() -> list[Var]:
            place = memory.index_array(ctx, arr, list(at))
            assert isinstance(place, memory.Place)
            olds = flatten(_atomic_add(ctx, place, v))
            return [_no_gradient(ctx, o) for o in olds]
        zero = zeros_of(ctx, arr.type.dtype)
        olds = if_values(ctx, first_lane(ctx, _in_bounds(ctx, arr, at)), inside,
                         lambda: flatten(zero))
        write(ctx, out, i, rebuild(zero, iter(olds)))  # type: ignore[arg-type]
    each(ctx, src.type.shape, one)
    from_first_lane(ctx, out)  # once per CPU block (builtins/tile_block.py)
    return out



def _narrow(t: Any) -> bool:
    """A scalar type with no atomic addition in Warp (bool, 8/16-bit integers)."""
    return bool(t.kind == "b" or (t.kind in "iu" and t.bits < 32))


def _atomic_add(ctx: Ctx, place: memory.Place, v: Any) -> Any:
    """Atomically add v at place; the old value. A struct adds field by field, and its bool /
    narrow-integer fields are not accumulated (read only), as Warp."""
    if not isinstance(v, StructVal):
        return memory.atomic(ctx, "atomic_add", place, v)
    olds = []
    for (name, _), f in zip(v.type.fields, v.fields, strict=True):
        fp = memory.component_place(ctx, place, name)
        if isinstance(f, Var) and _narrow(f.type):
            olds.append(memory.load(ctx, fp))
        else:
            olds.append(_atomic_add(ctx, fp, f))
    return StructVal(v.type, tuple(olds))


def _spec(t: ScalarType) -> str:
    if t.is_float:
        return "%g"
    return ("%ll" if t.bits == 64 else "%") + ("u" if t.kind == "u" else "d")


def print_tile(ctx: Ctx, t: TileVal, storage: str = "register") -> None:
    """Warp's layout: `[[1 2]\\n [3 4]] = tile(shape=(2,2), storage=register)`, one print op
    per element (the text around an element is chosen by conditions on its index)."""
    if t.type.ndim > 2:
        raise ctx.error(f"wp.print() of a {t.type!r}: 1-D and 2-D tiles only")

    def say(text: str, cond: Var | None = None, *values: Var) -> None:
        c = ctx.const(True, bool_) if cond is None else cond
        ctx.b.effect("print", (c, *values), ctx.loc, attr=text)

    def at(i: Var, k: int) -> Var:
        return ctx.op("eq", i, ctx.const(k, int32))

    rows = t.type.shape[0] if t.type.ndim == 2 else 1
    cols = t.type.shape[-1]
    spec = _spec(t.type.dtype)

    def row(r: Var | None) -> None:
        if r is None:
            say("[")
        else:
            say("[[", at(r, 0))
            say(" [", ctx.op("not", at(r, 0)))

        def element(j: list[Var]) -> None:
            v = read(ctx, t, [j[0]] if r is None else [r, j[0]])
            say(spec + " ", ctx.op("not", at(j[0], cols - 1)), v)
            say(spec, at(j[0], cols - 1), v)
        each(ctx, (cols,), element)
        if r is None:
            say("]")
        else:
            say("]\n", ctx.op("not", at(r, rows - 1)))
            say("]]", at(r, rows - 1))
    if t.type.ndim == 1:
        row(None)
    else:
        each(ctx, (rows,), lambda r: row(r[0]))
    shape = ",".join(str(d) for d in t.type.shape)
    say(f" = tile(shape=({shape}), storage={storage})\n")


@builtin("tile_load_indexed", "a tile gathered from array a: along `axis` element c reads "
         "a[offset + indices[c]], along the other dimensions a[offset + c]; an index outside the "
         "array (a -1 sentinel too) reads zero; gradients add into a at the gathered places",
         group=_T, signatures="(a: Array, indices: Tile, shape: Tuple, offset: Tuple, axis: Int, "
                              "storage: str) -> Tile")  # fmt: skip
def tile_load_indexed(ctx: Ctx, a: Any, indices: Any, shape: Any, offset: Any = None,
                      axis: Any = 0, storage: str = "register") -> TileVal:  # fmt: skip
    arr = _array_arg(ctx, a)
    dims = const_ints(ctx, shape, "shape")
    if len(dims) != arr.type.ndim:
        raise ctx.error(f"wp.tile_load_indexed(): a {len(dims)}-D shape for a {arr.type.ndim}-D "
                        "array")  # fmt: skip
    ax = axis.value if isinstance(axis, Literal) else axis
    if not isinstance(ax, int) or not 0 <= ax < len(dims):
        raise ctx.error(f"wp.tile_load_indexed(): axis is a constant in [0, {len(dims)}), got {ax!r}")
    idx = tile_arg(ctx, indices, "indices")
    if idx.type.ndim != 1 or idx.type.shape[0] != dims[ax] or \
            not (isinstance(idx.type.dtype, ScalarType) and idx.type.dtype.is_int):
        raise ctx.error(f"wp.tile_load_indexed(): indices is a 1-D integer tile of {dims[ax]} "
                        f"elements (shape[axis]), got {idx.type!r}")  # fmt: skip
    base = _offsets(ctx, offset, len(dims))
    out = new_tile(ctx, TileType(arr.type.dtype, dims))

    def one(i: list[Var]) -> None:
        gathered = read(ctx, idx, [i[ax]])
        if gathered.type != int32:
            gathered = ctx.op("cast", gathered, type=int32)
        at = [ctx.op("add", o, gathered if k == ax else c)
              for k, (o, c) in enumerate(zip(base, i, strict=True))]  # fmt: skip
        load_element(ctx, arr, at, out, i)
    each(ctx, dims, one)
    return out


def _scatter_args(ctx: Ctx, name: str, a: Any, args: tuple[Any, ...]) -> tuple[TileVal, list[Var], Any, Var]:
    t = tile_arg(ctx, a, "a")
    if len(args) != t.type.ndim + 2:
        raise ctx.error(f"wp.{name}() on a {t.type.ndim}-D tile takes {t.type.ndim} indices, a "
                        "value and has_value")  # fmt: skip
    idx = [convert(ctx, scalar(ctx, v, int32), int32) for v in args[:-2]]
    flag = scalar(ctx, args[-1], bool_)
    if flag.type != bool_:
        flag = ctx.op("ne", flag, ctx.const(0, flag.type))
    return t, idx, args[-2], flag


@builtin("tile_scatter_masked", "write value into tile a at index (i[, j[, k]]) where has_value "
         "(one lane per block on the CPU, so one thread's write); a's gradient there goes to "
         "value", group=_T,
         signatures=("(a: Tile, i: Int, value: Any, has_value: bool) -> None",
                     "(a: Tile, i: Int, j: Int, value: Any, has_value: bool) -> None",
                     "(a: Tile, i: Int, j: Int, k: Int, value: Any, has_value: bool) -> None"))
def tile_scatter_masked(ctx: Ctx, a: Any, *args: Any) -> None:
    t, idx, value, flag = _scatter_args(ctx, "tile_scatter_masked", a, args)
    v = convert(ctx, _element(ctx, value, t.type.dtype), t.type.dtype)  # a literal too

    def one(_: Var, got: list[Any]) -> list[Var]:
        *at, x, want = got

        def put() -> list[Var]:
            write(ctx, t, at, x)
            return []

        if_values(ctx, want, put, lambda: [])
        return []

    each_lane(ctx, [*idx, v, flag], one)  # every thread's write, in lane order


@builtin("tile_scatter_add", "add value into tile a at index (i[, j[, k]]) where has_value; "
         "a's gradient there reaches value", group=_T,
         signatures=("(a: Tile, i: Int, value: Any, has_value: bool, atomic: bool) -> None",
                     "(a: Tile, i: Int, j: Int, value: Any, has_value: bool, atomic: bool) -> None",
                     "(a: Tile, i: Int, j: Int, k: Int, value: Any, has_value: bool, "
                     "atomic: bool) -> None"))  # fmt: skip
def tile_scatter_add(ctx: Ctx, a: Any, *args: Any, atomic: Any = True) -> None:
    t, idx, value, flag = _scatter_args(ctx, "tile_scatter_add", a, args)
    v = convert(ctx, _element(ctx, value, t.type.dtype), t.type.dtype)  # a literal too

    def one(_: Var, got: list[Any]) -> list[Var]:
        *at, x, want = got

        def add() -> list[Var]:
            write(ctx, t, at, element_op(ctx, "add", get(ctx, t, at), x))
            return []

        if_values(ctx, want, add, lambda: [])
        return []

    each_lane(ctx, [*idx, v, flag], one)  # every thread's addition, in lane order
