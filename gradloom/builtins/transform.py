"""Rigid-transform builtins (Warp's "Transformations"): construction, composition, application,
and conversion to and from 4x4 matrices.

A transform is stored (p.x, p.y, p.z, q.x, q.y, q.z, q.w): translation p, then rotation q; it
maps a point x to quat_rotate(q, x) + p.
"""

from __future__ import annotations

from typing import Any

from ..ir.nodes import Var
from ..types import MatrixType, ScalarType, VectorType, float32
from .ops import TRANSFORM_PRODUCT
from .quat import (
    Emit,
    as_quat,
    as_vec,
    composite_from_parts,
    dense,
    dtype_arg,
    from_matrix,
    qmul,
    quat_type,
    rot_matrix,
    rotate,
    same_dtype,
    vec3_type,
)
from .registry import builtin
from .values import Composite, Ctx, OutArgs, TupleVal, Value, describe

GROUP = "Transformations"


def transform_type(dt: ScalarType) -> VectorType:
    return VectorType(7, dt, "transform")


def is_transform(v: Any) -> bool:
    return isinstance(v, Composite) and isinstance(v.type, VectorType) and \
        v.type.kind == "transform"


def as_transform(ctx: Ctx, name: str, v: Value) -> Composite:
    if is_transform(v):
        assert isinstance(v, Composite)
        return v
    raise ctx.error(f"wp.{name}() needs a transform, got {describe(v)}")


def transform_part(v: Composite, attr: str) -> Composite | None:
    """`xform.p` / `xform.q` read in a kernel; None when v is not a transform or attr is not one
    of those (the frontend then tries vector components)."""
    if not is_transform(v) or attr not in ("p", "q"):
        return None
    dt = v.type.dtype
    return Composite(vec3_type(dt), v.comps[:3]) if attr == "p" else \
        Composite(quat_type(dt), v.comps[3:])


def with_part(v: Composite, attr: str, part: Composite) -> Composite:
    """v with `xform.p` or `xform.q` replaced by part (for `xform.p = ...` stores)."""
    return Composite(v.type, part.comps + v.comps[3:] if attr == "p" else v.comps[:3] + part.comps)


def _pq(v: Composite) -> tuple[tuple[Var, ...], tuple[Var, ...]]:
    return v.comps[:3], v.comps[3:]


def _mat44(ctx: Ctx, name: str, v: Value) -> Composite:
    if isinstance(v, Composite) and isinstance(v.type, MatrixType) and v.type.shape == (4, 4) \
            and v.type.dtype.is_float:
        return v
    raise ctx.error(f"wp.{name}() needs a float mat44, got {describe(v)}")


# -- construction and parts -----------------------------------------------------------------------

@builtin("transformation", "a transform from translation p and rotation q (not normalized; "
         "the identity when q is left out), or from 0 (zeros), 1 (fill) or 7 scalars, or a copy "
         "of a transform; dtype= sets the scalar type",
         signatures=("(p: Vector3, q: Quat, dtype: Float = None) -> Transform",
                     "(*args: Float, dtype: Float = None) -> Transform"), group=GROUP)
def transformation(ctx: Ctx, *args: Value, p: Value | None = None, q: Value | None = None,
                   dtype: Any = None) -> Value:
    args = _pq_arguments(ctx, args, p, q)
    if len(args) == 2 and any(isinstance(a, Composite) for a in args):
        pv, qv = as_vec(ctx, "transformation", args[0]), as_quat(ctx, "transformation", args[1])
        dt = same_dtype(ctx, "transformation", pv, qv)
        want = dtype_arg(ctx, "transformation", dtype)
        if want is not None and want != dt:
            raise ctx.error(f"wp.transformation(): all values used to initialize this "
                            f"transformation matrix are expected to be of the type `{want}`")
    if len(args) == 1 and is_transform(args[0]):
        src = args[0]
        want = dtype_arg(ctx, "transformation", dtype)
        if want is not None and want != src.type.dtype:  # type: ignore[union-attr]
            raise ctx.error("wp.transformation(): copy constructing a transform requires matching "
                            f"source and target dtypes, got `{src.type.dtype}` and `{want}`")  # type: ignore[union-attr]
    return composite_from_parts(ctx, "transformation", transform_type, args, dtype, (1, 7))


def _pq_arguments(ctx: Ctx, args: tuple[Value, ...], p: Value | None, q: Value | None
                  ) -> tuple[Value, ...]:
    """The positional form of `transformation(p=..., q=...)`, `transformation(p)` (q: identity)."""
    if p is not None:
        if args:
            raise ctx.error("wp.transformation(): multiple values for argument 'p'")
        args = (p,)
    if q is not None:
        if len(args) != 1:
            raise ctx.error("wp.transformation(): multiple values for argument 'q'" if args else
                            "wp.transformation(): q needs p")
        args = (args[0], q)
    if len(args) == 1 and isinstance(args[0], Composite) and not is_transform(args[0]):
        pv = as_vec(ctx, "transformation", args[0])
        zero, one = ctx.const(0.0, pv.type.dtype), ctx.const(1.0, pv.type.dtype)
        args = (pv, Composite(quat_type(pv.type.dtype), (zero, zero, zero, one)))
    return args


@builtin("transform_identity", "the identity transform: p = (0, 0, 0), q = (0, 0, 0, 1)",
         differentiable=False, signatures="(dtype: Float = float32) -> Transform", group=GROUP)
def transform_identity(ctx: Ctx, dtype: Any = None) -> Value:
    dt = dtype_arg(ctx, "transform_identity", dtype) or float32
    zero = ctx.const(0.0, dt)
    return Composite(transform_type(dt), (zero,) * 6 + (ctx.const(1.0, dt),))


@builtin("transform_get_translation", "the translation p of a transform",
         signatures="(xform: Transform) -> Vector3", group=GROUP)
def transform_get_translation(ctx: Ctx, xform: Value) -> Value:
    part = transform_part(as_transform(ctx, "transform_get_translation", xform), "p")
    assert part is not None
    return part


@builtin("transform_get_rotation", "the rotation q of a transform (as stored, not normalized)",
         signatures="(xform: Transform) -> Quat", group=GROUP)
def transform_get_rotation(ctx: Ctx, xform: Value) -> Value:
    part = transform_part(as_transform(ctx, "transform_get_rotation", xform), "q")
    assert part is not None
    return part


@builtin("transform_set_translation", "set the translation of the transform variable xform in "
         "place (like `xform.p = p`)", signatures="(xform: Transform, p: Vector3) -> None",
         group=GROUP)
def transform_set_translation(ctx: Ctx, xform: Value, p: Value) -> OutArgs:
    name = "transform_set_translation"
    t, v = as_transform(ctx, name, xform), as_vec(ctx, name, p)
    same_dtype(ctx, name, t, v)
    return OutArgs(None, ((0, with_part(t, "p", v)),))


@builtin("transform_set_rotation", "set the rotation of the transform variable xform in place "
         "(like `xform.q = q`; q is not normalized)",
         signatures="(xform: Transform, q: Quat) -> None", group=GROUP)
def transform_set_rotation(ctx: Ctx, xform: Value, q: Value) -> OutArgs:
    name = "transform_set_rotation"
    t, r = as_transform(ctx, name, xform), as_quat(ctx, name, q)
    same_dtype(ctx, name, t, r)
    return OutArgs(None, ((0, with_part(t, "q", r)),))


# -- application ----------------------------------------------------------------------------------

def _apply(ctx: Ctx, name: str, xform: Value, vec: Value, point: bool) -> Value:
    v = as_vec(ctx, name, vec)
    if isinstance(xform, Composite) and isinstance(xform.type, MatrixType):
        m = _mat44(ctx, name, xform)
        e = Emit(ctx, same_dtype(ctx, name, m, v))
        # mat @ (v, 1) or mat @ (v, 0), first three rows
        rows = [e.dot(m.comps[4 * r:4 * r + 3], v.comps) for r in range(3)]
        if point:
            rows = [e.add(x, m.comps[4 * r + 3]) for r, x in enumerate(rows)]
        return Composite(v.type, tuple(rows))
    if not is_transform(xform):
        raise ctx.error(f"wp.{name}() needs a transform or a mat44, got {describe(xform)}")
    t = as_transform(ctx, name, xform)
    e = Emit(ctx, same_dtype(ctx, name, t, v))
    p, q = _pq(t)
    out = rotate(e, q, v.comps)
    return Composite(v.type, e.vadd(out, p) if point else out)


@builtin("transform_point", "a point mapped by a transform (quat_rotate(q, point) + p) or by a "
         "4x4 matrix (mat @ (point, 1), first three components)",
         signatures=("(xform: Transform, point: Vector3) -> Vector3",
                     "(mat: Matrix44, point: Vector3) -> Vector3"), group=GROUP)
def transform_point(ctx: Ctx, xform: Value | None = None, point: Value | None = None, *,
                    mat: Value | None = None) -> Value:
    xform, point = _operands(ctx, "transform_point", xform, mat, point, "point")
    return _apply(ctx, "transform_point", xform, point, point=True)


@builtin("transform_vector", "a direction mapped by a transform's rotation (quat_rotate(q, vec)) "
         "or by a 4x4 matrix (mat @ (vec, 0), first three components)",
         signatures=("(xform: Transform, vec: Vector3) -> Vector3",
                     "(mat: Matrix44, vec: Vector3) -> Vector3"), group=GROUP)
def transform_vector(ctx: Ctx, xform: Value | None = None, vec: Value | None = None, *,
                     mat: Value | None = None) -> Value:
    xform, vec = _operands(ctx, "transform_vector", xform, mat, vec, "vec")
    return _apply(ctx, "transform_vector", xform, vec, point=False)


def _operands(ctx: Ctx, name: str, xform: Value | None, mat: Value | None, v: Value | None,
              v_name: str) -> tuple[Value, Value]:
    """The two operands, the first named `xform` or `mat` (the names of Warp's two overloads)."""
    if (xform is None) == (mat is None) or v is None:
        raise ctx.error(f"wp.{name}() takes a transform (xform) or a mat44 (mat), and {v_name}")
    return (xform if xform is not None else mat), v  # type: ignore[return-value]


def multiply_comps(e: Emit, a: Composite, b: Composite) -> tuple[Var, ...]:
    (pa, qa), (pb, qb) = _pq(a), _pq(b)
    return (*e.vadd(pa, rotate(e, qa, pb)), *dense(e, qmul(e, qa, qb)))


@builtin("transform_multiply", "the composition a * b: apply b, then a",
         signatures="(a: Transform, b: Transform) -> Transform", group=GROUP)
def transform_multiply(ctx: Ctx, a: Value, b: Value) -> Value:
    ta, tb = as_transform(ctx, "transform_multiply", a), as_transform(ctx, "transform_multiply", b)
    e = Emit(ctx, same_dtype(ctx, "transform_multiply", ta, tb))
    return Composite(ta.type, multiply_comps(e, ta, tb))


@builtin("transform_inverse", "the inverse of a transform with a unit rotation: "
         "(-quat_rotate(q⁻¹, p), q⁻¹)", signatures="(xform: Transform) -> Transform",
         group=GROUP)
def transform_inverse(ctx: Ctx, xform: Value) -> Value:
    t = as_transform(ctx, "transform_inverse", xform)
    e = Emit(ctx, t.type.dtype)
    p, (x, y, z, w) = _pq(t)
    q_inv = (e.neg(x), e.neg(y), e.neg(z), w)
    p_inv = tuple(e.neg(c) for c in rotate(e, q_inv, p))
    return Composite(t.type, p_inv + q_inv)


# -- 4x4 matrices ---------------------------------------------------------------------------------

def _homogeneous(e: Emit, lin: tuple[Var, ...], p: tuple[Var, ...]) -> Composite:
    """[[lin, p], [0, 0, 0, 1]] from a row-major 3x3 block and a translation."""
    zero = e.c(0.0)
    rows = [(*lin[3 * r:3 * r + 3], p[r]) for r in range(3)]
    comps = (*(c for row in rows for c in row), zero, zero, zero, e.c(1.0))
    return Composite(MatrixType(4, 4, e.dt), comps)


@builtin("transform_to_matrix", "the 4x4 matrix [[R(q), p], [0, 0, 0, 1]] of a transform",
         signatures="(xform: Transform) -> Matrix44", group=GROUP)
def transform_to_matrix(ctx: Ctx, xform: Value) -> Value:
    t = as_transform(ctx, "transform_to_matrix", xform)
    e = Emit(ctx, t.type.dtype)
    p, q = _pq(t)
    return _homogeneous(e, rot_matrix(e, q), p)


@builtin("transform_from_matrix", "the transform of a 4x4 rigid matrix: p from the last column, "
         "q from the rotation block (sign unspecified)",
         signatures="(mat: Matrix44) -> Transform", group=GROUP)
def transform_from_matrix(ctx: Ctx, mat: Value) -> Value:
    m = _mat44(ctx, "transform_from_matrix", mat)
    e = Emit(ctx, m.type.dtype)
    block = tuple(m.comps[4 * r + c] for r in range(3) for c in range(3))
    p = tuple(m.comps[4 * r + 3] for r in range(3))
    return Composite(transform_type(e.dt), p + from_matrix(e, block))


@builtin("transform_compose", "the 4x4 matrix [[R(rotation) diag(scale), position], "
         "[0, 0, 0, 1]]",
         signatures="(position: Vector3, rotation: Quat, scale: Vector3) -> Matrix44", group=GROUP)
def transform_compose(ctx: Ctx, position: Value, rotation: Value, scale: Value) -> Value:
    name = "transform_compose"
    p, q, s = as_vec(ctx, name, position), as_quat(ctx, name, rotation), as_vec(ctx, name, scale)
    e = Emit(ctx, same_dtype(ctx, name, p, q, s))
    r = rot_matrix(e, q.comps)
    lin = tuple(e.mul(r[3 * row + col], s.comps[col]) for row in range(3) for col in range(3))
    return _homogeneous(e, lin, p.comps)


@builtin("transform_decompose", "(position, rotation, scale) of a 4x4 matrix "
         "[[R diag(scale), position], [0, 0, 0, 1]]; scale is the column norms, negated when the "
         "3x3 block is a reflection", signatures="(m: Matrix44) -> (Vector3, Quat, Vector3)",
         group=GROUP)
def transform_decompose(ctx: Ctx, m: Value) -> Value:
    mm = _mat44(ctx, "transform_decompose", m)
    e = Emit(ctx, mm.type.dtype)
    cols = [tuple(mm.comps[4 * r + c] for r in range(3)) for c in range(3)]
    p = tuple(mm.comps[4 * r + 3] for r in range(3))
    det = e.dot(cols[0], e.cross(cols[1], cols[2]))
    # a reflection has no rotation: flip all three scales (glm's convention), so R stays proper
    sign = e.select(e.op("lt", det, e.c(0.0)), e.c(-1.0), e.c(1.0))
    scale = tuple(e.mul(sign, e.op("sqrt", e.dot(c, c))) for c in cols)
    inv = [e.div(e.c(1.0), s) for s in scale]
    block = tuple(e.mul(cols[c][r], inv[c]) for r in range(3) for c in range(3))
    dt = e.dt
    return TupleVal((Composite(vec3_type(dt), p), Composite(quat_type(dt), from_matrix(e, block)),
                     Composite(vec3_type(dt), scale)))


# -- operators (called from ops.py) ---------------------------------------------------------------

@TRANSFORM_PRODUCT.fill
def multiply_op(ctx: Ctx, a: Composite, b: Value) -> Composite:
    """`a * b` for a transform a: transform_multiply with a transform b."""
    if not is_transform(b):
        raise ctx.error(f"'*' is not defined between {a.type!r} and {describe(b)} (a transform "
                        "multiplies a transform or a scalar; use wp.transform_point for points)")
    assert isinstance(b, Composite)
    if a.type != b.type:
        raise ctx.error(f"'*' operands have different types {a.type!r} and {b.type!r}")
    return Composite(a.type, multiply_comps(Emit(ctx, a.type.dtype), a, b))
