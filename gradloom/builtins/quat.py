"""Quaternion builtins (Warp's "Quaternion Math"): construction, rotation, conversions, slerp.

Quaternions are stored (x, y, z, w) with w the real part, as in Warp. Every builtin here is a
composition of scalar primitives, so its gradient comes from autodiff; where a formula has a
removable singularity (a norm at zero, slerp between equal rotations) the composition is
arranged so that no NaN or infinity reaches the reverse sweep.
"""

from __future__ import annotations

from typing import Any

from ..ir.nodes import Var
from ..types import MatrixType, ScalarType, VectorType, float32, resolve_annotation
from .construct import cast_scalar
from .ops import QUAT_PRODUCT
from .registry import builtin
from .values import Composite, Ctx, Literal, OutArgs, TupleVal, Value, describe

GROUP = "Quaternion Math"
#: quaternion components where None is an exact zero (sparse products skip those terms)
QComps = tuple[Var | None, ...]


def quat_type(dt: ScalarType) -> VectorType:
    return VectorType(4, dt, "quat")


def vec3_type(dt: ScalarType) -> VectorType:
    return VectorType(3, dt)


# -- argument checks ------------------------------------------------------------------------------

def as_quat(ctx: Ctx, name: str, v: Value) -> Composite:
    if isinstance(v, Composite) and isinstance(v.type, VectorType) and v.type.kind == "quat":
        return v
    raise ctx.error(f"wp.{name}() needs a quaternion, got {describe(v)}")


def as_vec(ctx: Ctx, name: str, v: Value, n: int = 3) -> Composite:
    """A plain float n-vector argument (vec3 by default)."""
    if isinstance(v, Composite) and isinstance(v.type, VectorType) and v.type.kind == "vec" \
            and v.type.length == n and v.type.dtype.is_float:
        return v
    raise ctx.error(f"wp.{name}() needs a float vec{n}, got {describe(v)}")


def same_dtype(ctx: Ctx, name: str, *vals: Composite) -> ScalarType:
    dts = [v.type.dtype for v in vals]
    if any(d != dts[0] for d in dts):
        listed = ", ".join(repr(v.type) for v in vals)
        raise ctx.error(f"wp.{name}() arguments must share one scalar type, got {listed}")
    return dts[0]


def as_float(ctx: Ctx, name: str, v: Value, dt: ScalarType) -> Var:
    """A scalar argument of float type dt (a Python literal adopts dt)."""
    if isinstance(v, Literal) and not isinstance(v.value, bool):
        return ctx.const(float(v.value), dt)
    if isinstance(v, Var) and v.type == dt:
        return v
    raise ctx.error(f"wp.{name}() needs a {dt} scalar here, got {describe(v)}")


def dtype_arg(ctx: Ctx, name: str, dtype: Any) -> ScalarType | None:
    """The `dtype=` keyword of the constructors: a float scalar type, or None when absent."""
    if dtype is None:
        return None
    try:
        t = resolve_annotation(dtype)
    except TypeError:
        t = None
    if not isinstance(t, ScalarType) or not t.is_float:
        raise ctx.error(f"wp.{name}(): dtype must be a float type, got {dtype!r}")
    return t


# -- scalar arithmetic shorthand ------------------------------------------------------------------

class Emit:
    """Float arithmetic of one dtype, written compactly (every op is a scalar primitive)."""

    def __init__(self, ctx: Ctx, dt: ScalarType) -> None:
        self.ctx, self.dt = ctx, dt

    def c(self, value: float) -> Var:
        return self.ctx.const(float(value), self.dt)

    def op(self, prim: str, *args: Var) -> Var:
        return self.ctx.op(prim, *args)

    def add(self, *xs: Var) -> Var:
        acc = xs[0]
        for x in xs[1:]:
            acc = self.ctx.op("add", acc, x)
        return acc

    def sub(self, a: Var, b: Var) -> Var:
        return self.ctx.op("sub", a, b)

    def mul(self, *xs: Var) -> Var:
        acc = xs[0]
        for x in xs[1:]:
            acc = self.ctx.op("mul", acc, x)
        return acc

    def div(self, a: Var, b: Var) -> Var:
        return self.ctx.op("div", a, b)

    def neg(self, a: Var) -> Var:
        return self.ctx.op("neg", a)

    def select(self, cond: Var, a: Var, b: Var) -> Var:
        return self.ctx.op("select", cond, a, b)

    def dot(self, xs: tuple[Var, ...], ys: tuple[Var, ...]) -> Var:
        return self.add(*(self.mul(x, y) for x, y in zip(xs, ys, strict=True)))

    def cross(self, a: tuple[Var, ...], b: tuple[Var, ...]) -> tuple[Var, Var, Var]:
        def term(i: int, j: int) -> Var:
            return self.sub(self.mul(a[i], b[j]), self.mul(a[j], b[i]))
        return term(1, 2), term(2, 0), term(0, 1)

    def scale(self, v: tuple[Var, ...], s: Var) -> tuple[Var, ...]:
        return tuple(self.mul(x, s) for x in v)

    def vadd(self, *vs: tuple[Var, ...]) -> tuple[Var, ...]:
        return tuple(self.add(*xs) for xs in zip(*vs, strict=True))

    def safe_sqrt(self, x: Var) -> Var:
        """sqrt(x) whose gradient is 0 (not NaN) at x == 0, where sqrt has a kink."""
        pos = self.op("gt", x, self.c(0.0))
        return self.select(pos, self.op("sqrt", self.select(pos, x, self.c(1.0))), self.c(0.0))

    def normalize(self, v: tuple[Var, ...], fallback: tuple[float, ...]) -> tuple[Var, ...]:
        """v / |v|, or the constant fallback where |v| == 0."""
        n2 = self.dot(v, v)
        pos = self.op("gt", n2, self.c(0.0))
        inv = self.div(self.c(1.0), self.op("sqrt", self.select(pos, n2, self.c(1.0))))
        return tuple(self.select(pos, self.mul(x, inv), self.c(f))
                     for x, f in zip(v, fallback, strict=True))


# -- quaternion algebra on components -------------------------------------------------------------

_PRODUCT = (  # Hamilton product a * b, per result component: (sign, index in a, index in b)
    ((1, 3, 0), (1, 0, 3), (1, 1, 2), (-1, 2, 1)),
    ((1, 3, 1), (-1, 0, 2), (1, 1, 3), (1, 2, 0)),
    ((1, 3, 2), (1, 0, 1), (-1, 1, 0), (1, 2, 3)),
    ((1, 3, 3), (-1, 0, 0), (-1, 1, 1), (-1, 2, 2)),
)


def qmul(e: Emit, a: QComps, b: QComps) -> QComps:
    """The Hamilton product, skipping terms with an exact-zero (None) factor."""
    out: list[Var | None] = []
    for terms in _PRODUCT:
        acc: Var | None = None
        for sign, i, j in terms:
            x, y = a[i], b[j]
            if x is None or y is None:
                continue
            t = e.mul(x, y)
            if acc is None:
                acc = t if sign > 0 else e.neg(t)
            else:
                acc = e.add(acc, t) if sign > 0 else e.sub(acc, t)
        out.append(acc)
    return tuple(out)


def dense(e: Emit, q: QComps) -> tuple[Var, ...]:
    return tuple(e.c(0.0) if x is None else x for x in q)


def rotate(e: Emit, q: tuple[Var, ...], v: tuple[Var, ...], inverse: bool = False
           ) -> tuple[Var, ...]:
    """v * (2w² - 1) + 2u (u · v) + 2w (u × v): R(q) v for unit q (its conjugate if inverse),
    summed in Warp's order, so the results agree bit for bit. Warp documents quat_rotate(q, v)
    == quat_to_matrix(q) @ v, so both use this formula."""
    u, w = q[:3], q[3]
    two = e.c(2.0)
    s = e.sub(e.mul(two, w, w), e.c(1.0))
    uv = e.cross(u, v)
    tw = e.mul(two, w)
    tw = e.neg(tw) if inverse else tw
    return e.vadd(e.scale(v, s), e.scale(u, e.mul(two, e.dot(u, v))), e.scale(uv, tw))


def rot_matrix(e: Emit, q: tuple[Var, ...]) -> tuple[Var, ...]:
    """The 3x3 matrix (row-major) whose columns are rotate(q, e_c)."""
    x, y, z, w = q
    two, one = e.c(2.0), e.c(1.0)

    def diag(a: Var) -> Var:
        return e.sub(e.mul(two, e.add(e.mul(w, w), e.mul(a, a))), one)

    def off(a: Var, b: Var, c: Var, d: Var, plus: bool) -> Var:
        ab, cd = e.mul(a, b), e.mul(c, d)
        return e.mul(two, e.add(ab, cd) if plus else e.sub(ab, cd))

    return (diag(x), off(x, y, z, w, False), off(x, z, y, w, True),
            off(x, y, z, w, True), diag(y), off(y, z, x, w, False),
            off(x, z, y, w, False), off(y, z, x, w, True), diag(z))


def from_matrix(e: Emit, m: tuple[Var, ...]) -> tuple[Var, ...]:
    """Shepperd's method on a row-major 3x3 block, normalized. The four candidate pivots
    1 ± m00 ± m11 ± m22 sum to 4, so the largest is >= 1 and no branch divides by ~0."""
    m00, m01, m02, m10, m11, m12, m20, m21, m22 = m
    one = e.c(1.0)
    piv = (e.add(one, e.sub(e.sub(m00, m11), m22)), e.add(one, e.sub(e.sub(m11, m00), m22)),
           e.add(one, e.sub(e.sub(m22, m00), m11)), e.add(one, e.add(m00, m11, m22)))
    # which pivot is largest (ties resolve to the later one; both are exact there)
    best = [e.op("ge", piv[k], e.op("max", e.op("max", piv[0], piv[1]),
                                    e.op("max", piv[2], piv[3]))) for k in range(4)]
    t = piv[0]
    for k in range(1, 4):
        t = e.select(best[k], piv[k], t)
    half_s = e.mul(e.c(0.5), e.op("sqrt", t))
    inv = e.div(e.c(0.25), half_s)  # 1 / (2 s) with s = sqrt(t)
    sums = (e.add(m21, m12), e.add(m02, m20), e.add(m10, m01))  # yz, xz, xy
    diffs = (e.sub(m21, m12), e.sub(m02, m20), e.sub(m10, m01))  # for x, y, z against w
    cand = (  # per pivot: (x, y, z, w) with the pivot component = s / 2
        (half_s, e.mul(sums[2], inv), e.mul(sums[1], inv), e.mul(diffs[0], inv)),
        (e.mul(sums[2], inv), half_s, e.mul(sums[0], inv), e.mul(diffs[1], inv)),
        (e.mul(sums[1], inv), e.mul(sums[0], inv), half_s, e.mul(diffs[2], inv)),
        (e.mul(diffs[0], inv), e.mul(diffs[1], inv), e.mul(diffs[2], inv), half_s),
    )
    q = list(cand[0])
    for k in range(1, 4):
        q = [e.select(best[k], cand[k][c], q[c]) for c in range(4)]
    return e.normalize(tuple(q), (0.0, 0.0, 0.0, 1.0))


def axis_quat(e: Emit, axis: int, angle: Var) -> QComps:
    half = e.mul(angle, e.c(0.5))
    comps: list[Var | None] = [None, None, None, e.op("cos", half)]
    comps[axis] = e.op("sin", half)
    return tuple(comps)


def euler_to_quat(e: Emit, ang: tuple[Var, ...], i: int, j: int, k: int) -> tuple[Var, ...]:
    """qk * qj * qi (fixed axes i, j, k in that order); e[i] twice for proper sequences."""
    qi, qj = axis_quat(e, i, ang[i]), axis_quat(e, j, ang[j])
    return dense(e, qmul(e, axis_quat(e, k, ang[k]), qmul(e, qj, qi)))


# -- construction ---------------------------------------------------------------------------------

def _float_dtype(ctx: Ctx, name: str, a: Value) -> ScalarType:
    t = a.type if isinstance(a, (Var, Composite)) else None
    dt = t.dtype if isinstance(t, VectorType) else t
    if not isinstance(dt, ScalarType) or not dt.is_float:
        raise ctx.error(f"wp.{name}() takes float scalars or vectors, got {describe(a)}")
    return dt


#: what Warp's messages call the value a constructor builds
_WORDS = {"quaternion": "quaternion", "transformation": "transform", "quat_rpy": "quaternion",
          "spatial_vector": "vector"}


def scalar_parts(ctx: Ctx, name: str, args: tuple[Value, ...], dt: ScalarType | None
                 ) -> tuple[ScalarType, list[Var]]:
    """The components of scalars and vectors of one float type; literals adopt that type."""
    found = {_float_dtype(ctx, name, a) for a in args if not isinstance(a, Literal)}
    word = _WORDS.get(name, "value")
    if len(found) > 1:
        listed = ", ".join(sorted(map(str, found)))
        raise ctx.error(f"wp.{name}(): got {listed}; all values given when constructing a "
                        f"{word} must have the same type")
    if dt is not None and found and found != {dt}:
        raise ctx.error(f"wp.{name}(): got {found.pop()}; all values used to initialize this "
                        f"{word} are expected to be of the type `{dt}`")
    dt = dt or (found.pop() if found else float32)
    comps: list[Var] = []
    for a in args:
        if isinstance(a, Composite):
            comps.extend(a.comps)
        else:
            comps.append(as_float(ctx, name, a, dt))
    return dt, comps


def composite_from_parts(ctx: Ctx, name: str, t_of: Any, args: tuple[Value, ...],
                         dtype: Any, lengths: tuple[int, ...]) -> Composite:
    """A quaternion / transform / spatial vector from component values (see the constructors)."""
    dt, comps = scalar_parts(ctx, name, args, dtype_arg(ctx, name, dtype))
    t = t_of(dt)
    if not comps:
        return Composite(t, (ctx.const(0.0, dt),) * t.length)
    if len(comps) not in lengths:
        expected = ", ".join(map(str, (0, *lengths[:-1]))) + f", or {lengths[-1]}"
        raise ctx.error(f"wp.{name}(): incompatible number of values given ({len(comps)}) when "
                        f"constructing a {_WORDS.get(name, 'value')}; expected {expected}")
    return Composite(t, tuple(comps) * (t.length // len(comps)))


@builtin("quaternion", "a quaternion: quaternion(x, y, z, w), quaternion(ijk, real), "
         "quaternion(q) (converts to dtype=), or zeros; dtype= sets the scalar type",
         signatures=("(dtype: Float = float32) -> Quat",
                     "(x: Float, y: Float, z: Float, w: Float, dtype: Float = None) -> Quat",
                     "(ijk: Vector3, real: Float, dtype: Float = None) -> Quat",
                     "(quat: Quat, dtype: Float = None) -> Quat"), group=GROUP)
def quaternion(ctx: Ctx, *args: Value, dtype: Any = None) -> Value:
    if len(args) == 1 and isinstance(args[0], Composite):  # a copy (a cast with dtype=)
        q = args[0]
        if not (isinstance(q.type, VectorType) and q.type.length == 4):
            as_quat(ctx, "quaternion", q)
        dt = dtype_arg(ctx, "quaternion", dtype) or q.type.dtype
        return Composite(quat_type(dt), tuple(cast_scalar(ctx, c, dt) for c in q.comps))
    if len(args) == 2:
        as_vec(ctx, "quaternion", args[0])
    return composite_from_parts(ctx, "quaternion", quat_type, args, dtype, (1, 4))


@builtin("quat_identity", "the identity quaternion (0, 0, 0, 1)", differentiable=False,
         signatures="(dtype: Float = float32) -> Quat", group=GROUP)
def quat_identity(ctx: Ctx, dtype: Any = None) -> Value:
    dt = dtype_arg(ctx, "quat_identity", dtype) or float32
    zero = ctx.const(0.0, dt)
    return Composite(quat_type(dt), (zero, zero, zero, ctx.const(1.0, dt)))


# -- rotations ------------------------------------------------------------------------------------

@builtin("quat_inverse", "the conjugate (-x, -y, -z, w): the inverse of a unit quaternion",
         signatures="(quat: Quat) -> Quat", group=GROUP)
def quat_inverse(ctx: Ctx, quat: Value) -> Value:
    q = as_quat(ctx, "quat_inverse", quat)
    x, y, z, w = q.comps
    return Composite(q.type, (ctx.op("neg", x), ctx.op("neg", y), ctx.op("neg", z), w))


def _quat_vec(ctx: Ctx, name: str, quat: Value, vec: Value) -> tuple[Composite, Composite, Emit]:
    q, v = as_quat(ctx, name, quat), as_vec(ctx, name, vec)
    return q, v, Emit(ctx, same_dtype(ctx, name, q, v))


@builtin("quat_rotate", "vec rotated by the unit quaternion quat (quat_to_matrix(quat) @ vec)",
         signatures="(quat: Quat, vec: Vector3) -> Vector3", group=GROUP)
def quat_rotate(ctx: Ctx, quat: Value, vec: Value) -> Value:
    q, v, e = _quat_vec(ctx, "quat_rotate", quat, vec)
    return Composite(v.type, rotate(e, q.comps, v.comps))


@builtin("quat_rotate_inv", "vec rotated by the inverse of the unit quaternion quat",
         signatures="(quat: Quat, vec: Vector3) -> Vector3", group=GROUP)
def quat_rotate_inv(ctx: Ctx, quat: Value, vec: Value) -> Value:
    q, v, e = _quat_vec(ctx, "quat_rotate_inv", quat, vec)
    return Composite(v.type, rotate(e, q.comps, v.comps, inverse=True))


@builtin("quat_to_matrix", "the 3x3 rotation matrix of a unit quaternion",
         signatures="(quat: Quat) -> Matrix33", group=GROUP)
def quat_to_matrix(ctx: Ctx, quat: Value) -> Value:
    q = as_quat(ctx, "quat_to_matrix", quat)
    e = Emit(ctx, q.type.dtype)
    return Composite(MatrixType(3, 3, q.type.dtype), rot_matrix(e, q.comps))


@builtin("quat_from_matrix", "the unit quaternion of a rotation matrix (3x3, or the top-left "
         "3x3 block of a 4x4); its sign is unspecified",
         signatures=("(mat: Matrix33) -> Quat", "(mat: Matrix44) -> Quat"), group=GROUP)
def quat_from_matrix(ctx: Ctx, mat: Value) -> Value:
    t = mat.type if isinstance(mat, Composite) else None
    if not isinstance(t, MatrixType) or t.shape not in ((3, 3), (4, 4)) or not t.dtype.is_float:
        raise ctx.error(f"wp.quat_from_matrix() needs a float mat33 or mat44, got {describe(mat)}")
    n = t.cols
    block = tuple(mat.comps[r * n + c] for r in range(3) for c in range(3))  # type: ignore[union-attr]
    return Composite(quat_type(t.dtype), from_matrix(Emit(ctx, t.dtype), block))


@builtin("quat_from_axis_angle", "the rotation of angle radians about a unit axis: "
         "(axis sin(angle/2), cos(angle/2))",
         signatures="(axis: Vector3, angle: Float) -> Quat", group=GROUP)
def quat_from_axis_angle(ctx: Ctx, axis: Value, angle: Value) -> Value:
    a = as_vec(ctx, "quat_from_axis_angle", axis)
    e = Emit(ctx, a.type.dtype)
    half = e.mul(as_float(ctx, "quat_from_axis_angle", angle, e.dt), e.c(0.5))
    s = e.op("sin", half)
    return Composite(quat_type(e.dt), (*e.scale(a.comps, s), e.op("cos", half)))


def _axis_angle(e: Emit, q: tuple[Var, ...]) -> tuple[tuple[Var, ...], Var]:
    """Axis and angle in [0, pi] of q or -q (whichever has w >= 0); axis (0, 0, 0) at angle 0,
    as in Warp."""
    flip = e.op("lt", q[3], e.c(0.0))
    v = tuple(e.select(flip, e.neg(c), c) for c in q[:3])
    w = e.select(flip, e.neg(q[3]), q[3])
    s = e.safe_sqrt(e.dot(v, v))
    angle = e.mul(e.c(2.0), e.op("atan2", s, w))
    return e.normalize(v, (0.0, 0.0, 0.0)), angle


@builtin("quat_to_axis_angle", "the rotation axis and angle (radians, in [0, pi]) of quat: "
         "`axis, angle = quat_to_axis_angle(q)` or quat_to_axis_angle(q, axis, angle) "
         "(output arguments)",
         signatures=("(quat: Quat) -> (Vector3, Float)",
                     "(quat: Quat, axis: Vector3, angle: Float) -> None"), group=GROUP)
def quat_to_axis_angle(ctx: Ctx, quat: Value, *outs: Value) -> Value | OutArgs:
    name = "quat_to_axis_angle"
    q = as_quat(ctx, name, quat)
    e = Emit(ctx, q.type.dtype)
    axis_comps, angle = _axis_angle(e, q.comps)
    axis = Composite(vec3_type(e.dt), axis_comps)
    if not outs:
        return TupleVal((axis, angle))
    if len(outs) != 2:
        raise ctx.error(f"wp.{name}() takes a quaternion and optionally two output arguments "
                        f"(axis, angle), got {1 + len(outs)} arguments")
    if not (isinstance(outs[0], Composite) and outs[0].type == axis.type):
        raise ctx.error(f"wp.{name}(): output argument axis must be a {axis.type!r} variable, "
                        f"got {describe(outs[0])}")
    if not (isinstance(outs[1], Var) and outs[1].type == e.dt):
        raise ctx.error(f"wp.{name}(): output argument angle must be a {e.dt} variable, "
                        f"got {describe(outs[1])}")
    return OutArgs(None, ((1, axis), (2, angle)))


# -- Euler angles ---------------------------------------------------------------------------------

@builtin("quat_rpy", "the rotation of roll, pitch, yaw about the fixed x, y, z axes, in that "
         "order (qz * qy * qx)", signatures="(roll: Float, pitch: Float, yaw: Float) -> Quat",
         group=GROUP)
def quat_rpy(ctx: Ctx, roll: Value, pitch: Value, yaw: Value) -> Value:
    dt, comps = scalar_parts(ctx, "quat_rpy", (roll, pitch, yaw), None)
    if len(comps) != 3:
        raise ctx.error("wp.quat_rpy() takes three float angles")
    return Composite(quat_type(dt), euler_to_quat(Emit(ctx, dt), tuple(comps), 0, 1, 2))


@builtin("quat_to_rpy", "(roll, pitch, yaw) of a unit quaternion, the inverse of quat_rpy: "
         "roll and yaw in [-pi, pi], pitch in [-pi/2, pi/2]",
         signatures="(q: Quat) -> Vector3", group=GROUP)
def quat_to_rpy(ctx: Ctx, q: Value) -> Value:
    x, y, z, w = as_quat(ctx, "quat_to_rpy", q).comps
    e = Emit(ctx, w.type)
    two, one = e.c(2.0), e.c(1.0)
    # matrix entries R21, R22, R20, R10, R00 of the rotation
    r21, r22 = e.mul(two, e.add(e.mul(w, x), e.mul(y, z))), \
        e.sub(one, e.mul(two, e.add(e.mul(x, x), e.mul(y, y))))
    sin_pitch = e.mul(two, e.sub(e.mul(w, y), e.mul(z, x)))
    r10, r00 = e.mul(two, e.add(e.mul(w, z), e.mul(x, y))), \
        e.sub(one, e.mul(two, e.add(e.mul(y, y), e.mul(z, z))))
    roll, yaw = e.op("atan2", r21, r22), e.op("atan2", r10, r00)
    # atan2 against cos(pitch) = hypot(R21, R22) instead of asin: finite gradients near +-pi/2
    pitch = e.op("atan2", sin_pitch, e.safe_sqrt(e.add(e.mul(r21, r21), e.mul(r22, r22))))
    return Composite(vec3_type(e.dt), (roll, pitch, yaw))


# -- interpolation and swing-twist ----------------------------------------------------------------

def _slerp_factor(e: Emit, t: Var, s: Var, w: Var, theta: Var) -> Var:
    """sin(t θ) / s with θ = atan2(s, w); for s < 1e-4 w (where the quotient loses accuracy)
    its series (t / w) (1 - u² (2 + t²) / 6), u = s / w (error below u⁴ ~ 1e-16)."""
    small = e.op("lt", s, e.mul(e.c(1e-4), w))
    safe_s = e.select(small, e.c(1.0), s)
    exact = e.div(e.op("sin", e.mul(t, theta)), safe_s)
    safe_w = e.select(small, w, e.c(1.0))
    u = e.div(s, safe_w)
    series = e.mul(e.div(t, safe_w), e.sub(e.c(1.0), e.div(e.mul(u, u, e.add(e.c(2.0),
                                                                               e.mul(t, t))),
                                                         e.c(6.0))))
    return e.select(small, series, exact)


@builtin("quat_slerp", "spherical linear interpolation from a (t = 0) to b (t = 1) along the "
         "shorter arc: a * r^t with r = quat_inverse(a) * b taken as its axis and angle "
         "(Warp's definition; b need not be normalized)",
         signatures="(a: Quat, b: Quat, t: Float) -> Quat", group=GROUP)
def quat_slerp(ctx: Ctx, a: Value, b: Value, t: Value) -> Value:
    qa, qb = as_quat(ctx, "quat_slerp", a), as_quat(ctx, "quat_slerp", b)
    e = Emit(ctx, same_dtype(ctx, "quat_slerp", qa, qb))
    tt = as_float(ctx, "quat_slerp", t, e.dt)
    conj = (e.neg(qa.comps[0]), e.neg(qa.comps[1]), e.neg(qa.comps[2]), qa.comps[3])
    r = dense(e, qmul(e, conj, qb.comps))
    flip = e.op("lt", r[3], e.c(0.0))  # the shorter arc: r or -r, whichever has w >= 0
    v = tuple(e.select(flip, e.neg(c), c) for c in r[:3])
    w = e.select(flip, e.neg(r[3]), r[3])
    s = e.safe_sqrt(e.dot(v, v))
    theta = e.op("atan2", s, w)  # half the rotation angle of r
    k = _slerp_factor(e, tt, s, w, theta)
    step = (*e.scale(v, k), e.op("cos", e.mul(tt, theta)))
    return Composite(qa.type, dense(e, qmul(e, qa.comps, step)))


def _twist_parts(ctx: Ctx, name: str, axis: Value, q: Value) -> tuple[Emit, tuple[Var, ...],
                                                                       Var, Var]:
    """(emit, axis, the projection p = axis · q.xyz, q.w)."""
    ax, qq = as_vec(ctx, name, axis), as_quat(ctx, name, q)
    e = Emit(ctx, same_dtype(ctx, name, ax, qq))
    return e, ax.comps, e.dot(ax.comps, qq.comps[:3]), qq.comps[3]


@builtin("quat_twist", "the twist of q about a unit axis (swing-twist decomposition); the "
         "identity where the twist is undefined",
         signatures="(axis: Vector3, q: Quat) -> Quat", group=GROUP)
def quat_twist(ctx: Ctx, axis: Value, q: Value) -> Value:
    e, ax, p, w = _twist_parts(ctx, "quat_twist", axis, q)
    comps = e.normalize((*e.scale(ax, p), w), (0.0, 0.0, 0.0, 1.0))
    return Composite(quat_type(e.dt), comps)


@builtin("quat_twist_angle", "the unsigned twist angle of q about a unit axis: in [0, pi] "
         "when q.w >= 0, in (pi, 2pi] otherwise",
         signatures="(axis: Vector3, q: Quat) -> Float", group=GROUP)
def quat_twist_angle(ctx: Ctx, axis: Value, q: Value) -> Value:
    e, _, p, w = _twist_parts(ctx, "quat_twist_angle", axis, q)
    return e.mul(e.c(2.0), e.op("atan2", e.op("abs", p), w))


@builtin("quat_twist_angle_signed", "the signed twist angle of q about a unit axis (right-hand "
         "rule): in [-pi, pi] when q.w >= 0, in [-2pi, 2pi] otherwise",
         signatures="(axis: Vector3, q: Quat) -> Float", group=GROUP)
def quat_twist_angle_signed(ctx: Ctx, axis: Value, q: Value) -> Value:
    e, _, p, w = _twist_parts(ctx, "quat_twist_angle_signed", axis, q)
    return e.mul(e.c(2.0), e.op("atan2", p, w))


# -- operators (called from ops.py) ---------------------------------------------------------------

@QUAT_PRODUCT.fill
def hamilton(ctx: Ctx, a: Composite, b: Value) -> Composite:
    """`a * b` for a quaternion a: the Hamilton product with a quaternion b."""
    if not (isinstance(b, Composite) and isinstance(b.type, VectorType) and b.type.kind == "quat"):
        raise ctx.error(f"'*' is not defined between {a.type!r} and {describe(b)} (a quaternion "
                        "multiplies a quaternion or a scalar; use wp.quat_rotate for vectors)")
    if a.type != b.type:
        raise ctx.error(f"'*' operands have different types {a.type!r} and {b.type!r}")
    e = Emit(ctx, a.type.dtype)
    return Composite(a.type, dense(e, qmul(e, a.comps, b.comps)))
