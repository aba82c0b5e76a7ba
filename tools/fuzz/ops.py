"""The expression operators the fuzzer draws from: result type, argument types, source template.

Types are one-letter codes: F float scalar, V vec3, M mat33, Q quat (all of the case's float
width), I non-negative int, B bool. Every operator keeps values finite on any input: logs and
square roots take ``x*x + c``, divisions divide by ``y*y + c``, an int cast is bounded (so it is
a valid index after ``% nt``). Templates use ``{0}``, ``{1}``... for the arguments and ``{F}``,
``{V}``, ``{M}``, ``{Q}`` for the case's type names; a ``traced`` template records a kink or an
int cast in the trace array (see render.py) so finite differences can reject a sample whose
kink or cast flips within the step.
"""

from __future__ import annotations

from dataclasses import dataclass

FLOAT_TYPES = ("F", "V", "M", "Q")

# Warp names per float width: scalar, vec3, mat33, quat.
TYPE_NAMES = {
    "float64": {"F": "wp.float64", "V": "wp.vec3d", "M": "wp.mat33d", "Q": "wp.quatd"},
    "float32": {"F": "wp.float32", "V": "wp.vec3f", "M": "wp.mat33f", "Q": "wp.quatf"},
}

# number of float components of a value of each type (array trailing shape)
SHAPES = {"F": (), "V": (3,), "M": (3, 3), "Q": (4,)}


@dataclass(frozen=True)
class Op:
    """One operator: ``ty`` ← template(args of ``args`` types)."""

    name: str
    ty: str
    args: tuple[str, ...]
    tmpl: str
    traced: str | None = None
    weight: float = 1.0


def _ops(ty: str, rows: list[tuple]) -> list[Op]:
    out = []
    for row in rows:
        name, args, tmpl = row[0], row[1], row[2]
        traced = row[3] if len(row) > 3 else None
        weight = row[4] if len(row) > 4 else 1.0
        out.append(Op(name, ty, tuple(args), tmpl, traced, weight))
    return out


_F = _ops("F", [
    ("add", "FF", "({0} + {1})", None, 3.0),
    ("sub", "FF", "({0} - {1})", None, 2.0),
    ("mul", "FF", "({0} * {1})", None, 3.0),
    ("neg", "F", "(-{0})"),
    ("sin", "F", "wp.sin({0})", None, 1.5),
    ("cos", "F", "wp.cos({0})"),
    ("tanh", "F", "wp.tanh({0})"),
    ("expsin", "F", "wp.exp(wp.sin({0}))"),
    ("logsq", "F", "wp.log({0} * {0} + {F}(0.5))"),
    ("sqrtsq", "F", "wp.sqrt({0} * {0} + {F}(0.25))"),
    ("div", "FF", "({0} / ({1} * {1} + {F}(0.5)))"),
    ("atan2", "FF", "wp.atan2({0}, {1} * {1} + {F}(0.5))", None, 0.5),
    ("pow", "F", "wp.pow({0} * {0} + {F}(0.5), {F}(1.5))", None, 0.5),
    ("min", "FF", "wp.min({0}, {1})", "_tmin_{bits}(_tr, {site}, {0}, {1})"),
    ("max", "FF", "wp.max({0}, {1})", "_tmax_{bits}(_tr, {site}, {0}, {1})"),
    ("abs", "F", "wp.abs({0})", "_tabs_{bits}(_tr, {site}, {0})", 0.5),
    ("dot", "VV", "wp.dot({0}, {1})", None, 1.5),
    ("length", "V", "wp.length({0})", None, 0.5),
    ("det", "M", "wp.determinant({0})", None, 0.7),
    ("trace", "M", "wp.trace({0})", None, 0.5),
    ("itof", "I", "{F}({0})", None, 0.7),
    ("where", "BFF", "wp.where({0}, {1}, {2})", None, 0.7),
])

_V = _ops("V", [
    ("vec", "FFF", "{V}({0}, {1}, {2})", None, 1.5),
    ("add", "VV", "({0} + {1})", None, 2.0),
    ("sub", "VV", "({0} - {1})"),
    ("scale", "VF", "({0} * {1})", None, 2.0),
    ("lscale", "FV", "({0} * {1})"),
    ("neg", "V", "(-{0})", None, 0.3),
    ("matvec", "MV", "({0} * {1})", None, 1.5),
    ("cross", "VV", "wp.cross({0}, {1})"),
    ("cwmul", "VV", "wp.cw_mul({0}, {1})", None, 0.5),
    ("qrot", "QV", "wp.quat_rotate({0}, {1})"),
    ("where", "BVV", "wp.where({0}, {1}, {2})", None, 0.3),
])

_M = _ops("M", [
    ("add", "MM", "({0} + {1})"),
    ("sub", "MM", "({0} - {1})", None, 0.5),
    ("matmul", "MM", "({0} * {1})"),
    ("scale", "MF", "({0} * {1})"),
    ("transpose", "M", "wp.transpose({0})"),
    ("outer", "VV", "wp.outer({0}, {1})"),
    ("diag", "V", "wp.diag({0})", None, 0.5),
])

_Q = _ops("Q", [
    ("mul", "QQ", "({0} * {1})", None, 1.5),
    ("add", "QQ", "({0} + {1})"),
    ("scale", "QF", "({0} * {1})"),
    ("quat", "FFFF", "{Q}({0}, {1}, {2}, {3})"),
    ("axis_angle", "VF", "wp.quat_from_axis_angle({0}, {1})"),
    ("inverse", "Q", "wp.quat_inverse({0})", None, 0.5),
])

_I = _ops("I", [
    ("add", "II", "({0} + {1})"),
    ("mod", "I", "({0} % nt)", None, 0.0),  # an index: only made by stmts.mod_nt
    ("mod3", "I", "({0} % 3)", None, 0.0),  # a vector / matrix component (stmts.comp_index)
    ("mod4", "I", "({0} % 4)", None, 0.0),  # a quaternion component
    ("cast", "F", "int(wp.abs(wp.sin({0})) * {F}(3.5))",
     "_ti(_tr, {site}, int(wp.abs(wp.sin({0})) * {F}(3.5)))"),
])

_B = _ops("B", [
    ("lt", "FF", "({0} < {1})", None, 2.0),
    ("gt", "FF", "({0} > {1})", None, 2.0),
    ("ilt", "II", "({0} < {1})", None, 0.5),
    ("and", "BB", "({0} and {1})", None, 0.3),
    ("or", "BB", "({0} or {1})", None, 0.3),
    ("not", "B", "(not {0})", None, 0.2),
])

OPS: dict[tuple[str, str], Op] = {(op.ty, op.name): op for op in _F + _V + _M + _Q + _I + _B}
BY_TYPE: dict[str, list[Op]] = {}
for _op in OPS.values():
    BY_TYPE.setdefault(_op.ty, []).append(_op)
