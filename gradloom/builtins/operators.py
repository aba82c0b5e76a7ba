"""Operator builtins with Warp's names (floordiv, bit_and, lshift, invert, unot, pos, ...) and
cast, which reinterprets a value's bits as another type of the same size."""

from __future__ import annotations

from typing import Any

from ..ir.nodes import Var
from ..types import (
    MatrixType,
    ScalarType,
    StructType,
    VectorType,
    bool_,
    leaves,
    resolve_annotation,
    uint8,
    uint16,
    uint32,
    uint64,
)
from . import ops
from .registry import builtin
from .values import (
    ArrayVal,
    Composite,
    Ctx,
    Literal,
    StructVal,
    Value,
    describe,
    flatten,
    materialize,
    scalar,
    type_of,
)

_INT2 = ("(a: Int, b: Int) -> Int", "(a: IntVector, b: IntVector) -> IntVector")


def _dtype(v: Value) -> Any:
    t = type_of(v)
    return t.dtype if isinstance(t, (VectorType, MatrixType)) else t


def _require_ints(ctx: Ctx, name: str, *vals: Value) -> None:
    for v in vals:
        t = _dtype(v)
        if not (isinstance(t, ScalarType) and t.is_int):
            raise ctx.error(f"wp.{name}() needs integer operands (or integer vectors), got "
                            f"{describe(v)}")


def _make_int_binary(name: str, opname: str, doc: str) -> None:
    def fn(ctx: Ctx, a: Value, b: Value) -> Value:
        _require_ints(ctx, name, a, b)
        if not (isinstance(a, Composite) or isinstance(b, Composite)):
            return ops.scalar_binary(ctx, opname, a, b)
        if not (isinstance(a, Composite) and isinstance(b, Composite)) or a.type != b.type:
            raise ctx.error(f"wp.{name}() operands must have one type, got {describe(a)} and "
                            f"{describe(b)}")
        pairs = zip(a.comps, b.comps, strict=True)
        comps = [ops.scalar_binary(ctx, opname, x, y) for x, y in pairs]
        return Composite(a.type, tuple(scalar(ctx, c) for c in comps))

    builtin(name, doc, differentiable=False, signatures=_INT2, group="Operators")(fn)


for _name, _op, _doc in (
    ("bit_and", "bitand", "bitwise AND (a & b)"),
    ("bit_or", "bitor", "bitwise OR (a | b)"),
    ("bit_xor", "bitxor", "bitwise XOR (a ^ b)"),
    ("lshift", "lshift", "a shifted left by b bits (a << b)"),
    ("rshift", "rshift", "a shifted right by b bits (a >> b; arithmetic for signed types)"),
):
    _make_int_binary(_name, _op, _doc)


@builtin("floordiv", "floor division (a // b): rounds the quotient down, for ints and floats",
         differentiable=False, signatures="(a: Scalar, b: Scalar) -> Scalar", group="Operators")
def floordiv(ctx: Ctx, a: Value, b: Value) -> Value:
    for v in (a, b):
        t = type_of(v)
        if not isinstance(t, ScalarType) or t.kind not in "fiu":
            raise ctx.error(f"wp.floordiv() divides numbers, got {describe(v)}")
    return ops.scalar_binary(ctx, "floordiv", a, b)


@builtin("invert", "bitwise complement (~a)", differentiable=False,
         signatures=("(a: Int) -> Int", "(a: IntVector) -> IntVector"), group="Operators")
def invert(ctx: Ctx, a: Value) -> Value:
    _require_ints(ctx, "invert", a)
    if isinstance(a, Literal):
        return Literal(~int(a.value))
    if isinstance(a, Composite):
        return Composite(a.type, tuple(ctx.op("not", c) for c in a.comps))
    assert isinstance(a, Var)
    return ctx.op("not", a)


@builtin("unot", "logical NOT: True when a is False, zero, or an empty array",
         differentiable=False, group="Operators",
         signatures=("(a: Bool) -> Bool", "(a: Int) -> Bool", "(a: Array) -> Bool"))
def unot(ctx: Ctx, a: Value) -> Value:
    if isinstance(a, ArrayVal):
        empty = ctx.op("eq", a.shape[0], ctx.const(0, a.shape[0].type))
        for extent in a.shape[1:]:
            empty = ctx.op("or", empty, ctx.op("eq", extent, ctx.const(0, extent.type)))
        return empty
    t = type_of(a)
    if not (isinstance(t, ScalarType) and (t.is_int or t == bool_)):
        raise ctx.error(f"wp.unot() needs a bool, an integer or an array, got {describe(a)}")
    return ops.unary(ctx, "not", a)


@builtin("pos", "unary plus (+x): x unchanged", group="Operators",
         signatures=("(x: Scalar) -> Scalar", "(x: Vector) -> Vector",
                     "(x: Matrix) -> Matrix"))
def pos(ctx: Ctx, x: Value) -> Value:
    t = type_of(x)
    if not isinstance(t, (ScalarType, VectorType, MatrixType)) or t == bool_:
        raise ctx.error(f"wp.pos() needs a number, vector or matrix, got {describe(x)}")
    return ops.unary(ctx, "pos", x)


# -- cast: bit reinterpretation ----------------------------------------------------------------

_UINT = {8: uint8, 16: uint16, 32: uint32, 64: uint64}


@builtin("cast", "the bits of a read as type dtype of the same size (e.g. float32 <-> int32; "
         "vectors, matrices and structs too)", differentiable=False,
         signatures="(a: Any, dtype: Type) -> Any")
def cast(ctx: Ctx, a: Value, dtype: Any) -> Value:
    if hasattr(dtype, "__gl_struct__") or dtype in (float, int, bool):
        dtype = resolve_annotation(dtype)
    if not isinstance(dtype, (ScalarType, VectorType, MatrixType, StructType)) or \
            getattr(dtype, "kind", "") == "p":
        raise ctx.error(f"wp.cast() needs a scalar, vector, matrix or struct type as dtype, got "
                        f"{dtype!r}")
    value = materialize(ctx, a)
    src = type_of(value)
    if not isinstance(src, (ScalarType, VectorType, MatrixType, StructType)):
        raise ctx.error(f"wp.cast() cannot reinterpret {describe(a)}")
    if src.size != dtype.size:
        raise ctx.error(f"wp.cast() needs types of the same size: {src!r} is {src.size} bytes, "
                        f"{dtype!r} is {dtype.size}")
    src_leaves, dst_leaves = leaves(src), leaves(dtype)
    vals = flatten(value)
    same = [(o, t.bits) for o, t in src_leaves] == [(o, t.bits) for o, t in dst_leaves]
    if same and all(t.kind != "b" for _, t in src_leaves + dst_leaves):
        out = [ctx.op("bitcast", v, type=t) for v, (_, t) in zip(vals, dst_leaves, strict=True)]
    else:
        out = _from_bytes(ctx, _to_bytes(ctx, src, vals), dst_leaves)
    return _assemble(dtype, out)


def _to_bytes(ctx: Ctx, t: Any, vals: list[Var]) -> list[Var]:
    """A value's memory image as uint8 scalars (little-endian; padding bytes are zero)."""
    u8 = _UINT[8]
    image = [ctx.const(0, u8)] * t.size
    for (off, st), v in zip(leaves(t), vals, strict=True):
        if st.kind == "b":
            image[off] = ctx.op("cast", v, type=u8)
            continue
        bits = ctx.op("bitcast", v, type=_UINT[st.bits])
        for k in range(st.size):
            shifted = ctx.op("shr", bits, ctx.const(8 * k, bits.type)) if k else bits
            image[off + k] = ctx.op("cast", shifted, type=u8)
    return image


def _from_bytes(ctx: Ctx, image: list[Var], dst: list[tuple[int, ScalarType]]) -> list[Var]:
    out = []
    for off, st in dst:
        if st.kind == "b":
            out.append(ctx.op("ne", image[off], ctx.const(0, image[off].type)))
            continue
        ut = _UINT[st.bits]
        acc = ctx.op("cast", image[off], type=ut)
        for k in range(1, st.size):
            byte = ctx.op("cast", image[off + k], type=ut)
            acc = ctx.op("or", acc, ctx.op("shl", byte, ctx.const(8 * k, ut)))
        out.append(ctx.op("bitcast", acc, type=st))
    return out


def _assemble(t: Any, vals: list[Var]) -> Value:
    if isinstance(t, ScalarType):
        return vals[0]
    if isinstance(t, (VectorType, MatrixType)):
        return Composite(t, tuple(vals))
    fields, at = [], 0
    for _, ft in t.fields:
        n = len(leaves(ft))
        fields.append(_assemble(ft, vals[at:at + n]))
        at += n
    return StructVal(t, tuple(fields))
