"""Compile-time values the frontend and builtins pass around: SSA scalars, literals, composites."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from ..errors import KernelTypeError, SourceLoc
from ..hooks import Hook
from ..ir.builder import Builder
from ..ir.nodes import Var
from ..types import (
    ArrayType,
    FixedArrayType,
    IndexedArrayType,
    MatrixType,
    ScalarType,
    StructType,
    TileType,
    VectorType,
    bool_,
    float32,
    int32,
    int64,
    ptr,
)

#: a zero tile of a tile type (builtins/tile_loops.py fills it: tiles build on these values)
ZERO_TILE: Hook[Any] = Hook("zero tiles", "gradloom.builtins.tile_loops")


@dataclass(frozen=True)
class Literal:
    """A Python number not yet given a type: it adopts the type of the operand it meets."""

    value: int | float | bool

    @property
    def default_type(self) -> ScalarType:
        if isinstance(self.value, bool):
            return bool_
        return int32 if isinstance(self.value, int) else float32


@dataclass(frozen=True)
class Composite:
    """A vector/matrix/quat/transform value: its components as SSA scalars, row-major."""

    type: VectorType | MatrixType
    comps: tuple[Var, ...]


@dataclass(frozen=True)
class StructVal:
    type: StructType
    fields: tuple[Value, ...]

    def get(self, name: str) -> Value:
        names = [n for n, _ in self.type.fields]
        return self.fields[names.index(name)]


@dataclass(frozen=True)
class ArrayVal:
    """An array argument: data/grad pointers, shape and byte strides as SSA scalars; for an
    indexed array also one int32 index-array pointer per dimension (null: not indexed)."""

    type: ArrayType | IndexedArrayType
    data: Var
    grad: Var
    shape: tuple[Var, ...]
    strides: tuple[Var, ...]
    indices: tuple[Var, ...] = ()

    @staticmethod
    def from_words(t: ArrayType | IndexedArrayType, words: list[Var]) -> ArrayVal:
        """The value of an array argument from its words in layout order (types.leaves)."""
        n = t.ndim
        return ArrayVal(t, words[0], words[1], tuple(words[2:2 + n]),
                        tuple(words[2 + n:2 + 2 * n]), tuple(words[2 + 2 * n:]))


@dataclass(frozen=True)
class TupleVal:
    items: tuple[Value, ...]


@dataclass(frozen=True)
class ShapeVal(TupleVal):
    """An array's `.shape` in a kernel: one int32 per dimension; as in Warp, constant indices
    past the last dimension (up to 4 dimensions) read 0."""


@dataclass(frozen=True)
class FixedArrayVal:
    """A kernel-local fixed-size array: its elements' values, row-major (builtins/fixedarray.py)."""

    type: FixedArrayType
    items: tuple[Value, ...]


@dataclass(frozen=True)
class TileVal:
    """A tile (builtins/tiles.py): elements in a thread-local buffer `base` (a `local` op at the
    top of the kernel), element (i, j) at `offset + i*strides[0] + j*strides[1]` (in elements;
    views and transposes only change these compile-time numbers). `span` is the buffer's data
    size in bytes, where its adjoint half starts. It flattens to no SSA values: a tile variable
    changed in a branch or loop is copied into one buffer there (frontend/control.py)."""

    type: TileType
    base: Var
    span: int
    offset: int
    strides: tuple[int, ...]
    #: a run-time element offset added to `offset` (a view at a computed index), int64
    dyn: Var | None = None


@dataclass(frozen=True)
class StackVal(TileVal):
    """A tile stack (builtins/tile_stack.py): its elements (this tile, of its capacity) and its
    count (`count`, an int32 tile of shape (1,)). Copies and merges copy both."""

    count: TileVal | None = None


@dataclass(frozen=True)
class OutArgs:
    """What a builtin with output arguments returns (Warp's `svd3(A, U, sigma, V)` style):
    its result value and, per positional argument index, the value that argument's variable
    now holds. The caller must pass plain variable names at those positions."""

    result: Any
    writes: tuple[tuple[int, Any], ...]
    #: an argument that is not a plain name (`wp.randf(states[i])`) gets no write-back, as a
    #: temporary in Warp; otherwise that is an error (svd3's outputs would be lost)
    temporaries_ok: bool = False


Value = Var | Literal | Composite | StructVal | ArrayVal | TupleVal | FixedArrayVal | TileVal
KernelValue = (Var, Literal, Composite, StructVal, ArrayVal, TupleVal, FixedArrayVal, TileVal)


class Ctx:
    """What builtins need: the IR builder and the source location being compiled."""

    def __init__(self, builder: Builder, loc: SourceLoc) -> None:
        self.b = builder
        self.loc = loc

    def error(self, message: str) -> KernelTypeError:
        return KernelTypeError(message, self.loc)

    def op(self, prim: str, *args: Var, attr: Any = None, type: ScalarType | None = None) -> Var:
        return self.b.op(prim, args, self.loc, attr=attr, type=type)

    def const(self, value: Any, t: ScalarType) -> Var:
        return self.b.const(value, t, self.loc)


def type_of(v: Value) -> Any:
    if isinstance(v, Var):
        return v.type
    if isinstance(v, Literal):
        return v.default_type
    if isinstance(v, TupleVal):
        return tuple(type_of(i) for i in v.items)
    return v.type


def materialize(ctx: Ctx, v: Value, t: ScalarType | None = None) -> Value:
    """Give a literal its type (t, or its default); other values pass through."""
    if not isinstance(v, Literal):
        return v
    target = t or v.default_type
    if isinstance(v.value, float) and not target.is_float and t is not None:
        raise ctx.error(f"cannot use float literal {v.value!r} as {target}")
    value = v.value if target.kind != "b" else bool(v.value)
    if target.is_float:
        value = float(value)
    elif target.is_int:
        value = int(value)
    return ctx.const(value, target)


def scalar(ctx: Ctx, v: Value, t: ScalarType | None = None) -> Var:
    """The value as one SSA scalar, or a type error naming what it was."""
    m = materialize(ctx, v, t)
    if not isinstance(m, Var):
        raise ctx.error(f"expected a scalar, got {describe(v)}")
    return m


def describe(v: Any) -> str:
    if isinstance(v, KernelValue):
        t = type_of(v)
        return f"a value of type {t!r}" if not isinstance(t, tuple) else "a tuple"
    return f"{v!r}"


def flatten(v: Value) -> list[Var]:
    """The SSA scalars a value is made of, in a fixed order (for yields and loop carries)."""
    if isinstance(v, Var):
        return [v]
    if isinstance(v, Composite):
        return list(v.comps)
    if isinstance(v, (StructVal, TupleVal, FixedArrayVal)):
        items = v.fields if isinstance(v, StructVal) else v.items
        return [x for item in items for x in flatten(item)]
    if isinstance(v, ArrayVal):
        return [v.data, v.grad, *v.shape, *v.strides, *v.indices]
    if isinstance(v, TileVal):
        return []
    raise TypeError(f"cannot flatten {v!r}")


def rebuild(template: Value, it: Iterator[Var]) -> Value:
    """The inverse of flatten: a value shaped like template made of the next vars from it."""
    if isinstance(template, Var):
        return next(it)
    if isinstance(template, Composite):
        return Composite(template.type, tuple(next(it) for _ in template.comps))
    if isinstance(template, StructVal):
        return StructVal(template.type, tuple(rebuild(f, it) for f in template.fields))
    if isinstance(template, TupleVal):
        return TupleVal(tuple(rebuild(i, it) for i in template.items))
    if isinstance(template, FixedArrayVal):
        return FixedArrayVal(template.type, tuple(rebuild(i, it) for i in template.items))
    if isinstance(template, ArrayVal):
        return ArrayVal.from_words(template.type, [next(it) for _ in flatten(template)])
    if isinstance(template, TileVal):
        return template
    raise TypeError(f"cannot rebuild {template!r}")


def zeros_of(ctx: Ctx, t: Any) -> Value:
    """A zero value of a kernel type (variables defined on one branch only, `S()` fields)."""
    if isinstance(t, ScalarType):
        return ctx.const(False if t.kind == "b" else 0, t)
    if isinstance(t, (VectorType, MatrixType)):
        z = ctx.const(0, t.dtype)
        return Composite(t, (z,) * t.length)
    if isinstance(t, StructType):
        return StructVal(t, tuple(zeros_of(ctx, ft) for _, ft in t.fields))
    if isinstance(t, tuple):
        return TupleVal(tuple(zeros_of(ctx, i) for i in t))
    if isinstance(t, ArrayType):  # an unset array (Warp: a null array): null data and grad
        null, zero = ctx.const(0, ptr), ctx.const(0, int64)
        return ArrayVal(t, null, null, (zero,) * t.ndim, (zero,) * t.ndim)
    if isinstance(t, FixedArrayType):
        element = zeros_of(ctx, t.dtype)
        return FixedArrayVal(t, (element,) * t.count)
    if isinstance(t, TileType):  # a fresh tile buffer: zeroed when the thread starts
        return ZERO_TILE.get()(ctx, t)  # type: ignore[no-any-return]
    raise ctx.error(f"cannot make a zero value of type {t!r}")


def if_values(ctx: Ctx, cond: Var, then: Callable[[], list[Var]],
              orelse: Callable[[], list[Var]]) -> list[Var]:
    """An IR if-region: the values the branch taken computes (each branch returns a list)."""
    blocks = []
    for fn in (then, orelse):
        ctx.b.open_block()
        vals = fn()
        blocks.append(ctx.b.close_block(vals))
    return list(ctx.b.emit_if(cond, blocks[0], blocks[1], ctx.loc))


def while_loop(ctx: Ctx, inits: list[Var], cond: Callable[[list[Var]], Var],
               body: Callable[[list[Var]], list[Var]]) -> list[Var]:
    """An IR while loop over carried values: runs body while cond holds; the final values."""
    params = [ctx.b.new_var(v.type) for v in inits]
    ctx.b.open_block()
    cond_blk = ctx.b.close_block([cond(params)])
    ctx.b.open_block()
    nxt = body(params)
    body_blk = ctx.b.close_block(nxt)
    return list(ctx.b.emit_loop(tuple(inits), tuple(params), cond_blk, body_blk, ctx.loc))
